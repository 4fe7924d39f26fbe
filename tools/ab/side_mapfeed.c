/* One side of the A/B: an OpenArena map walked as `rvis-walk --map M --depth-feed` walks it
 * (the level, its occluders, its camera path, a 320 x 180 depth image drawn after each frame
 * and handed over in the next), timing only the feed stage (rv_frame_feed_depth, the frame's
 * own stage clock). Arguments: the map (as rvis-walk --map takes it), then optionally `cold`:
 * the image's cache lines flushed before it is handed over, as a GPU read-back's are (its DMA
 * writes bypass the CPU's caches), where the walk hands over an image it has just drawn, still
 * in cache. Each side draws its own
 * images from its own verdicts with the walk's rasteriser (feed.c, which does not call rvis;
 * not timed). Frames without a used feed (the first, cuts) time 0 on both sides. The digest
 * is the frame's per-object verdicts and the feed's counters. */
#include "drive.h"
#include "feed.h"
#include "level.h"
#include "map_load.h"
#include "view.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rvw_level level_;
static rvw_drive *drive_;
static rvw_feed feed_;
static bool cold_;

int SIDE(setup)(int argc, char **argv)
{
    char err[512];
    if (argc < 1) {
        fprintf(stderr, "ab: mapfeed: the map's name is missing (e.g. oa_dm5)\n");
        return 0;
    }
    if (!ab_map_load(argv[0], &level_))
        return 0;
    cold_ = argc > 1 && strcmp(argv[1], "cold") == 0;
    /* rvis-walk's options for --map M --depth-feed */
    rvw_drive_options opt = { .occlusion_width = 256, .fine_tests = 1, .cull_unsampled = true,
                              .feed_width = 320, .feed_height = 180, .feed_max_translation = 32.0f };
    if (!rvw_drive_create(&level_, &opt, &drive_, err, sizeof err) || !rvw_feed_init(&feed_, &level_, 320, 180, 1280, 720)) {
        fprintf(stderr, "ab: %s: %s\n", argv[0], err);
        return 0;
    }
    return 1;
}

double SIDE(frame)(int frame, double time_ms, uint64_t *digest)
{
    char err[512];
    rvw_view view;
    uint32_t f = (uint32_t)frame % level_.frame_count;
    rvw_view_make(&level_, f, 1280, 720, &view);
    view.frame = (uint32_t)frame;
    view.time_ms = time_ms;
    if (feed_.ready && f != 0) { /* not across the path's restart (a jump) */
        rvw_depth_image img = { feed_.depth, feed_.width, feed_.height, true, feed_.view_projection,
                                (uint32_t)frame - feed_.frame };
        rvw_drive_set_feed(drive_, &img);
#if defined(__x86_64__) || defined(__i386__)
        if (cold_) {
            const char *p = (const char *)feed_.depth;
            for (size_t b = 0; b < (size_t)feed_.width * feed_.height * sizeof(float); b += 64)
                _mm_clflush(p + b);
            _mm_mfence();
        }
#endif
    }
    rvw_frame_result r;
    if (!rvw_drive_frame(drive_, &level_, &view, &r, err, sizeof err)) {
        fprintf(stderr, "ab: %s\n", err);
        return -1;
    }
    double us = r.feed.used ? r.stage_us[RVW_STAGE_FEED] : 0;
    uint64_t h = 1469598103934665603u;
    for (uint32_t i = 0; i < level_.object_count; i++)
        h = (h ^ r.verdict[i]) * 1099511628211u;
    h = (h ^ r.feed.texels_reprojected) * 1099511628211u;
    h = (h ^ r.feed.hidden_by_feed) * 1099511628211u;
    *digest = h;
    if (!rvw_feed_draw(&feed_, &level_, &view, r.verdict)) {
        fprintf(stderr, "ab: out of memory drawing the depth feed\n");
        return -1;
    }
    return us * 1e3;
}
