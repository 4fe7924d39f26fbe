/* One side of the A/B: an OpenArena map walked as rvis-walk walks it (the level, its
 * occluders and its camera path, through the walk's own drive), without --verify.
 * Arguments: the map (as rvis-walk --map takes it), then optionally the fine tests (0-2).
 * Compiled twice by ab.sh, once against each build, with the walk's drive compiled for each
 * side too; SIDE(x) names this side's entry points. The level is read once per side by the
 * walk's parts (which do not call rvis). The digest is the frame's per-object verdicts. */
#include "drive.h"
#include "level.h"
#include "map_load.h"
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static rvw_level level_;
static rvw_drive *drive_;

int SIDE(setup)(int argc, char **argv)
{
    char err[512];
    if (argc < 1) {
        fprintf(stderr, "ab: map: the map's name is missing (e.g. oa_dm4)\n");
        return 0;
    }
    if (!ab_map_load(argv[0], &level_))
        return 0;
    rvw_drive_options opt = { .occlusion_width = 256, .fine_tests = argc > 1 ? (uint32_t)atoi(argv[1]) : 1,
                              .cull_unsampled = true };
    if (!rvw_drive_create(&level_, &opt, &drive_, err, sizeof err)) {
        fprintf(stderr, "ab: %s: %s\n", argv[0], err);
        return 0;
    }
    return 1;
}

/* One frame of the walk's drive (rvis's calls and the drive's own reading of the cull
 * records, which both sides share), this thread's CPU time in nanoseconds. The path is
 * walked round and round. */
double SIDE(frame)(int frame, double time_ms, uint64_t *digest)
{
    char err[512];
    rvw_view view;
    rvw_view_make(&level_, (uint32_t)frame % level_.frame_count, 1280, 720, &view);
    view.frame = (uint32_t)frame; /* the clock goes on when the path starts again */
    view.time_ms = time_ms;
    rvw_frame_result r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    bool ok = rvw_drive_frame(drive_, &level_, &view, &r, err, sizeof err);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    if (!ok) {
        fprintf(stderr, "ab: %s\n", err);
        return -1;
    }
    uint64_t h = 1469598103934665603u;
    for (uint32_t i = 0; i < level_.object_count; i++)
        h = (h ^ r.verdict[i]) * 1099511628211u;
    *digest = h;
    return (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
}
