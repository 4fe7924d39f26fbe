/* What both sides of the A/B share: one timed frame. Included after the bench file. */
#include <time.h>

/* rv_frame on world, timed (wall time when workers run it, else this thread's CPU time);
 * the view's digest in *digest. Nanoseconds, or -1 when the frame fails. */
static double timed_frame(rv_world *world, const rv_view *view, bool wall, uint64_t *digest)
{
    struct timespec t0, t1;
    clockid_t clock = wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    rv_frame_view v;
    clock_gettime(clock, &t0);
    rv_result r = rv_frame(world, view, &v);
    clock_gettime(clock, &t1);
    if (r != RV_OK)
        return -1;
    *digest = rv_frame_view_digest(&v);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
}
