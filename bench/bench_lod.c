/* LOD benchmarks.
 * lod_select_1m: one million spheres through rv_lod_select_spheres (SoA, squared quantities
 * against per-threshold constants), against a scalar loop that computes the distance with
 * cglm and the angle with asinf per sphere, in the same run. Unit: ns per sphere. */
#include "bench_util.h"
#include "rvis.h"

#include <cglm/cglm.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SPHERES 1000000u

/* The obvious way: one distance (cglm), one asin per sphere, then walk the thresholds. */
static void baseline_levels(const rv_lod_ladder *ladder, const float eye_in[3], const float *x,
                            const float *y, const float *z, const float *r, uint32_t n, uint8_t *out)
{
    vec3 eye = { eye_in[0], eye_in[1], eye_in[2] };
    for (uint32_t j = 0; j < n; j++) {
        vec3 c = { x[j], y[j], z[j] };
        float d = glm_vec3_distance(c, eye);
        float angle = d <= r[j] ? INFINITY : 2.0f * asinf(r[j] / d);
        uint32_t level = 0;
        while (level < ladder->count && angle < ladder->thresholds[level])
            level++;
        out[j] = (uint8_t)level;
    }
}

int rvb_lod(rvb_ctx *ctx);
int rvb_lod(rvb_ctx *ctx)
{
    if (!rvb_begin_case(ctx, "lod_select_1m"))
        return 0;
    float *x = malloc(SPHERES * sizeof *x), *y = malloc(SPHERES * sizeof *y);
    float *z = malloc(SPHERES * sizeof *z), *r = malloc(SPHERES * sizeof *r);
    uint8_t *ours = malloc(SPHERES), *theirs = malloc(SPHERES);
    if (!x || !y || !z || !r || !ours || !theirs) {
        fprintf(stderr, "lod_select_1m: out of memory\n");
        free(x); free(y); free(z); free(r); free(ours); free(theirs);
        return 1;
    }
    /* A city-sized field: objects 0.1..20 m across within 1 km of the eye. */
    rvb_rng rng = { 0x10d5e1ec7ull };
    for (uint32_t j = 0; j < SPHERES; j++) {
        x[j] = rvb_uniform(&rng, -1000.0f, 1000.0f);
        y[j] = rvb_uniform(&rng, 0.0f, 60.0f);
        z[j] = rvb_uniform(&rng, -1000.0f, 1000.0f);
        r[j] = rvb_uniform(&rng, 0.05f, 10.0f);
    }
    const float thresholds[4] = { 0.2f, 0.06f, 0.015f, 0.004f };
    rv_lod_ladder ladder;
    rv_lod_view view = { .eye = { 3.0f, 1.7f, -5.0f } };
    if (rv_lod_ladder_make(thresholds, 4, &ladder) != RV_OK) {
        fprintf(stderr, "lod_select_1m: ladder refused\n");
        return 1;
    }

    int reps = ctx->reps;
    double t_ours[32], t_base[32];
    if (reps > 32)
        reps = 32;
    int status = 0;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t t0 = rvb_now_ns();
        rv_result res = rv_lod_select_spheres(&ladder, NULL, &view, x, y, z, r, SPHERES, ours);
        uint64_t t1 = rvb_now_ns();
        baseline_levels(&ladder, view.eye, x, y, z, r, SPHERES, theirs);
        uint64_t t2 = rvb_now_ns();
        if (res != RV_OK) {
            fprintf(stderr, "lod_select_1m: %s\n", rv_result_string(res));
            status = 1;
        }
        t_ours[rep] = (double)(t1 - t0) / SPHERES;
        t_base[rep] = (double)(t2 - t1) / SPHERES;
    }
    /* The answers agree except where float rounding straddles a threshold. */
    uint32_t differ = 0, histogram[5] = { 0 };
    for (uint32_t j = 0; j < SPHERES; j++) {
        differ += ours[j] != theirs[j];
        histogram[ours[j] < 5 ? ours[j] : 4]++;
    }
    char extra[200];
    snprintf(extra, sizeof extra,
             ", \"spheres\": %u, \"thresholds\": 4, \"levels\": [%u, %u, %u, %u, %u], \"differ_from_baseline\": %u",
             SPHERES, histogram[0], histogram[1], histogram[2], histogram[3], histogram[4], differ);
    rvb_report(ctx, "lod_select_1m", "ns/sphere", rvb_median(t_ours, reps), rvb_median(t_base, reps), extra);
    if (differ > SPHERES / 10000) {
        fprintf(stderr, "lod_select_1m: %u answers differ from the baseline\n", differ);
        status = 1;
    }
    free(x); free(y); free(z); free(r); free(ours); free(theirs);
    return status;
}
