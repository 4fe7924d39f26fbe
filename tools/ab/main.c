/* In-process A/B of two rvis builds: each side builds the same world against its own copy of
 * the library (the old one's symbols renamed by ab.sh), and the frames alternate side by
 * side, the order swapped every frame, so both see the same machine, caches and drift.
 * Prints each side's mean per frame after a warm-up and the ratio new / old; the views'
 * digests must agree frame by frame unless the change is meant to alter results. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int new_setup(int argc, char **argv);
double new_frame(int frame, double time_ms, uint64_t *digest);
int old_setup(int argc, char **argv);
double old_frame(int frame, double time_ms, uint64_t *digest);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FRAMES [scene arguments]\n", argv[0]);
        return 2;
    }
    int frames = atoi(argv[1]), warm = frames / 4;
    if (frames < 8 || !new_setup(argc - 2, argv + 2) || !old_setup(argc - 2, argv + 2)) {
        fprintf(stderr, "ab: setup failed\n");
        return 1;
    }
    double t_new = 0, t_old = 0;
    int differ = 0, timed = 0;
    /* per-frame new / old, for a median that one preempted frame does not move */
    double *ratio = malloc(sizeof *ratio * (size_t)frames);
    if (!ratio)
        return 1;
    for (int f = 0; f < frames; f++) {
        uint64_t d_new = 0, d_old = 0;
        double a, b, time_ms = f * (1000.0 / 60.0);
        if (f & 1) {
            a = new_frame(f, time_ms, &d_new);
            b = old_frame(f, time_ms, &d_old);
        } else {
            b = old_frame(f, time_ms, &d_old);
            a = new_frame(f, time_ms, &d_new);
        }
        if (a < 0 || b < 0) {
            fprintf(stderr, "ab: rv_frame failed at frame %d\n", f);
            return 1;
        }
        if (f >= warm) {
            t_new += a;
            t_old += b;
            if (a > 0 && b > 0) /* a scene may time 0 where a frame has nothing to time */
                ratio[timed++] = a / b;
        }
        differ += d_new != d_old;
    }
    int n = frames - warm;
    qsort(ratio, (size_t)timed, sizeof *ratio, by_value);
    printf("new %.1f us  old %.1f us  new/old %.3f  median of frames %.3f  frames %d  digests differ in %d\n",
           t_new / n / 1e3, t_old / n / 1e3, t_new / t_old, timed ? ratio[timed / 2] : 0.0, n, differ);
    free(ratio);
    return differ != 0;
}
