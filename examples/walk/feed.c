/* rvis-walk --depth-feed: the host's depth pre-pass (see feed.h). */
#include "feed.h"

#include "city.h"
#include "drive.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

bool rvw_feed_init(rvw_feed *feed, const rvw_level *level, uint32_t width, uint32_t height, uint32_t view_width,
                   uint32_t view_height)
{
    memset(feed, 0, sizeof *feed);
    size_t objects = level->object_count ? level->object_count : 1;
    view_width = view_width > width ? view_width : width;
    view_height = view_height > height ? view_height : height;
    feed->full = malloc((size_t)view_width * view_height * sizeof *feed->full);
    feed->depth = malloc((size_t)width * height * sizeof *feed->depth);
    feed->include = calloc(objects, 1);
    feed->opaque = calloc(objects, 1);
    if (!feed->full || !feed->depth || !feed->include || !feed->opaque ||
        !rvw_reference_init(&feed->ref, view_width, view_height)) {
        rvw_feed_free(feed);
        return false;
    }
    feed->width = width;
    feed->height = height;
    if (level->city) {
        memset(feed->opaque, 1, level->object_count);
    } else {
        /* A map's opaque surfaces are the ones the reader gave a mesh: drawn, and their
         * shader not translucent. A depth pre-pass draws those only. */
        for (uint32_t m = 0; m < level->mesh_count; m++)
            if (level->meshes[m].object < level->object_count)
                feed->opaque[level->meshes[m].object] = 1;
    }
    return true;
}

void rvw_feed_free(rvw_feed *feed)
{
    rvw_reference_free(&feed->ref);
    free(feed->full);
    free(feed->depth);
    free(feed->include);
    free(feed->opaque);
    memset(feed, 0, sizeof *feed);
}

/* A storey that both this frame's committed slice and the next one's keep. drive.c gives
 * every tower the slice height of tower 0 (the partition gate holds one slice per world),
 * so the same height decides here; a storey is kept when its box reaches below it. */
static bool storey_stays(const rvw_level *level, int32_t part, uint32_t frame)
{
    const rvw_city *city = level->city;
    if (part < 0 || level->groups[part].kind != RVW_GROUP_PART || level->groups[part].deferred || !city->tower_count)
        return false;
    for (uint32_t f = frame; f <= frame + 1; f++) {
        rvw_box committed, pending;
        rvw_city_slice(city, 0, f, &committed, &pending);
        if (level->groups[part].bounds.min[1] > committed.max[1])
            return false;
    }
    return true;
}

bool rvw_feed_keeps(const rvw_feed *feed, const rvw_level *level, uint32_t object, uint32_t frame)
{
    const rvw_object *o = &level->objects[object];
    switch (o->kind) {
    case RVW_OBJ_SURFACE: return feed->opaque[object] != 0;
    case RVW_OBJ_BUILDING:
    case RVW_OBJ_PROP:
    case RVW_OBJ_TERRAIN: return true;
    case RVW_OBJ_PART_ITEM: return level->city && storey_stays(level, o->group, frame);
    default: return false; /* vehicles move; a stand-in comes and goes with its region */
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Each texel keeps the farthest depth (OpenGL: the largest) of the pixels whose centres lie
 * in its footprint. A point sample at the feed's resolution would miss an opening narrower
 * than a texel that the view's own pixels see through; the farthest keeps it. */
static void reduce_farthest(rvw_feed *feed)
{
    uint32_t fw = feed->ref.width, fh = feed->ref.height, w = feed->width, h = feed->height;
    for (uint32_t t = 0; t < w * h; t++)
        feed->depth[t] = 0;
    for (uint32_t y = 0; y < fh; y++) {
        uint32_t ty = (uint32_t)(((uint64_t)y * 2 + 1) * h / (2 * (uint64_t)fh)); /* the texel holding the centre */
        const float *row = feed->full + (size_t)y * fw;
        float *out = feed->depth + (size_t)ty * w;
        for (uint32_t x = 0; x < fw; x++) {
            uint32_t tx = (uint32_t)(((uint64_t)x * 2 + 1) * w / (2 * (uint64_t)fw));
            if (row[x] > out[tx])
                out[tx] = row[x];
        }
    }
}

bool rvw_feed_draw(rvw_feed *feed, const rvw_level *level, const rvw_view *view, const uint8_t *verdict)
{
    double t0 = now_us();
    for (uint32_t i = 0; i < level->object_count; i++)
        feed->include[i] = verdict[i] == RVW_DRAWN && rvw_feed_keeps(feed, level, i, view->frame);
    rvw_depth_convention clip = { false, false };
    if (rvw_reference_depth(&feed->ref, level, view->view_projection, clip, feed->include, feed->full) < 0)
        return false;
    reduce_farthest(feed);
    memcpy(feed->view_projection, view->view_projection, sizeof feed->view_projection);
    feed->frame = view->frame;
    feed->ready = true;
    feed->draw_us = now_us() - t0;
    return true;
}
