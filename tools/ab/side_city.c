/* One side of the A/B: the benchmark city of bench/bench_frame.c, its nodes created cell by
 * cell (argument "cell", the default) or in the generator's order ("generation").
 * Compiled twice by ab.sh, once against each build; SIDE(x) names this side's entry points. */
#include "bench_frame.c"

#include <time.h>

static rvb_city city_;
static city_scene scene_;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int SIDE(setup)(int argc, char **argv)
{
    bool by_cell = !(argc > 0 && strcmp(argv[0], "generation") == 0);
    uint32_t *order = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    if (!order || !rvb_city_generate(&city_) || !scene_alloc(&scene_))
        return 0;
    for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++)
        order[n] = n;
    if (by_cell) { /* as frame_city orders them: a counting sort by cell */
        uint32_t start[CELLS_PER_SIDE * CELLS_PER_SIDE + 1] = { 0 };
        for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++)
            start[object_cell(&city_.objects[n]) + 1]++;
        for (int c = 0; c < CELLS_PER_SIDE * CELLS_PER_SIDE; c++)
            start[c + 1] += start[c];
        for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++)
            order[start[object_cell(&city_.objects[n])]++] = n;
    }
    bool ok = build_scene(&city_, order, &scene_);
    free(order);
    return ok;
}

double SIDE(frame)(int frame, double time_ms, uint64_t *digest)
{
    float eye[3], vp[16];
    rvb_city_camera(frame % CITY_FRAMES, CITY_FRAMES, eye, vp);
    rv_view view;
    memset(&view, 0, sizeof view);
    view.view_projection = vp;
    view.eye = eye;
    view.viewport_width = 1920;
    view.viewport_height = 1080;
    view.fov_y = 60.0f * 3.14159265f / 180.0f;
    view.time_ms = time_ms;
    rv_frame_view v;
    double t0 = now_ns();
    if (rv_frame(scene_.world, &view, &v) != RV_OK)
        return -1;
    double t = now_ns() - t0;
    *digest = rv_frame_view_digest(&v);
    return t;
}
