/* One side of the A/B: bench/bench_occlusion.c's city case on a standalone buffer
 * (occlusion_city_256 / _512). Arguments: the buffer width (default 256) and which part is
 * timed, "tests" (rv_occlusion_test_boxes over the frustum-visible objects, the default) or
 * "raster" (begin, the visible buildings added, freeze). The digest hashes every answer.
 * Compiled twice by ab.sh, once against each build; SIDE(x) names this side's entry points. */
#include "bench_util.h"
#include "rvis.h"
#include "side.h"

#include <stdlib.h>
#include <string.h>

/* The six planes of the OpenGL-clip matrix (Gribb & Hartmann) and a plain "wholly outside
 * one plane" box test, as the bench's host does before adding or testing. */
typedef struct planes6 { float p[6][4]; } planes6;

static void planes_of(const float vp[16], planes6 *out)
{
    for (int p = 0; p < 6; p++)
        for (int j = 0; j < 4; j++) {
            float w = vp[j * 4 + 3], a = vp[j * 4 + p / 2];
            out->p[p][j] = p % 2 ? w - a : w + a;
        }
}

static bool box_in_frustum(const planes6 *pl, const rvb_box *b)
{
    for (int p = 0; p < 6; p++) {
        const float *q = pl->p[p];
        float x = q[0] >= 0 ? b->max[0] : b->min[0];
        float y = q[1] >= 0 ? b->max[1] : b->min[1];
        float z = q[2] >= 0 ? b->max[2] : b->min[2];
        if (q[0] * x + q[1] * y + q[2] * z + q[3] < 0)
            return false;
    }
    return true;
}

#define CITY_FRAMES 600

static rvb_city city_;
static rv_occlusion *occ_;
static bool time_raster_;
static float *rows_[6];
static uint8_t *visible_;

int SIDE(setup)(int argc, char **argv)
{
    uint32_t width = argc > 0 ? (uint32_t)atoi(argv[0]) : 256;
    time_raster_ = argc > 1 && strcmp(argv[1], "raster") == 0;
    rv_occlusion_desc desc = { .width = width };
    if (!rvb_city_generate(&city_) || rv_occlusion_create(&desc, &occ_) != RV_OK)
        return 0;
    for (int k = 0; k < 6; k++)
        if (!(rows_[k] = malloc(sizeof(float) * RVB_CITY_OBJECTS)))
            return 0;
    return (visible_ = malloc(RVB_CITY_OBJECTS)) != NULL;
}

static double elapsed_ns(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) * 1e9 + (double)(t1->tv_nsec - t0->tv_nsec);
}

double SIDE(frame)(int frame, double time_ms, uint64_t *digest)
{
    (void)time_ms;
    float eye[3], vp[16];
    rvb_city_camera(frame % CITY_FRAMES, CITY_FRAMES, eye, vp);
    planes6 pl;
    planes_of(vp, &pl);
    uint32_t n = 0;
    for (uint32_t i = 0; i < RVB_CITY_OBJECTS; i++) { /* the host's frustum pass, untimed */
        const rvb_box *b = &city_.objects[i];
        if (!box_in_frustum(&pl, b))
            continue;
        for (int a = 0; a < 3; a++) {
            rows_[a][n] = b->min[a];
            rows_[3 + a][n] = b->max[a];
        }
        n++;
    }
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    rv_clip gl = { 0 };
    if (rv_occlusion_begin(occ_, vp, gl, 16.0f / 9.0f) != RV_OK)
        return -1;
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++)
        if (box_in_frustum(&pl, &city_.buildings[i]))
            rv_occlusion_add_occluder(occ_, city_.buildings[i].min, city_.buildings[i].max, NULL);
    if (rv_occlusion_freeze(occ_) != RV_OK)
        return -1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    rv_occlusion_boxes boxes = { { rows_[0], rows_[1], rows_[2] }, { rows_[3], rows_[4], rows_[5] }, NULL };
    if (rv_occlusion_test_boxes(occ_, &boxes, 0, n, visible_) != RV_OK)
        return -1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t2);
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ visible_[i]) * 1099511628211ull;
    *digest = h;
    return time_raster_ ? elapsed_ns(&t0, &t1) : elapsed_ns(&t1, &t2);
}
