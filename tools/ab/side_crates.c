/* One side of the A/B: the crate field of bench/bench_crates.c (its world, its camera).
 * Compiled twice by ab.sh, once against each build; SIDE(x) names this side's entry points.
 * Arguments: N (crates), grouped (0/1), workers (0: no job system; else a pthread pool). */
#include "bench_crates.c"

#include <time.h>

static crate_field field_;
static crate_world world_;
static bool wall_;

static double now_ns(void)
{
    struct timespec t;
    /* With workers the frame runs on other threads too: wall time; else this thread's CPU time. */
    clock_gettime(wall_ ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

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
    camera_of(&field_, frame % CRATE_FRAMES, &c);
    rv_view view;
    memset(&view, 0, sizeof view);
    view.view = c.view;
    view.projection = c.projection;
    view.viewport_width = 1920;
    view.viewport_height = 1080;
    view.time_ms = time_ms;
    rv_frame_view v;
    double t0 = now_ns();
    if (rv_frame(world_.world, &view, &v) != RV_OK)
        return -1;
    double t = now_ns() - t0;
    *digest = rv_frame_view_digest(&v);
    return t;
}
