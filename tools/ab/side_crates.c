/* One side of the A/B: the crate field of bench/bench_crates.c (its world, its camera).
 * Compiled twice by ab.sh, once against each build; SIDE(x) names this side's entry points.
 * Arguments: N (crates), grouped (0/1), workers (0: no job system; else a pthread pool). */
#include "bench_crates.c"
#include "side.h"

static crate_field field_;
static crate_world world_;
static bool wall_;

int SIDE(setup)(int argc, char **argv)
{
    uint32_t n = argc > 0 ? (uint32_t)atoi(argv[0]) : 100000;
    bool grouped = argc > 1 && atoi(argv[1]) != 0;
    int workers = argc > 2 ? atoi(argv[2]) : 0;
    if (!field_make(&field_, n))
        return 0;
    if (workers > 0) {
        rvb_jobs *pool = rvb_jobs_create((uint32_t)workers);
        if (!pool)
            return 0;
        rv_job_system js = rvb_jobs_system(pool);
        wall_ = true;
        return world_make(&field_, grouped, &js, false, &world_);
    }
    return world_make(&field_, grouped, NULL, false, &world_);
}

double SIDE(frame)(int frame, double time_ms, uint64_t *digest)
{
    crate_camera c;
    rv_view view;
    camera_of(&field_, frame % CRATE_FRAMES, &c);
    crate_view(&c, time_ms, &view);
    return timed_frame(world_.world, &view, wall_, digest);
}
