/* One side of the A/B: the benchmark city of bench/bench_frame.c, its nodes created cell by
 * cell (argument "cell", the default) or in the generator's order ("generation").
 * Compiled twice by ab.sh, once against each build; SIDE(x) names this side's entry points. */
#include "bench_frame.c"
#include "side.h"

static rvb_city city_;
static city_scene scene_;

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
    rv_view view;
    city_view(frame % CITY_FRAMES, time_ms, eye, vp, &view);
    return timed_frame(scene_.world, &view, false, digest);
}
