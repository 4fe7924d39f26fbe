/* Frustum benchmarks: cull_spheres_1m. */
#include "bench_util.h"

#include "rvis.h"
#include "frustum.h"

#include <cglm/cglm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SPHERES = 1000000 };

/* The naive loop a host would write: each sphere against each plane with an early exit,
 * kept spheres compacted in place (the same job rv_cull_spheres does). */
__attribute__((noinline)) static uint32_t baseline_cull(const rv_frustum *f, float *spheres, uint32_t count)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        const float *s = spheres + 4 * (size_t)i;
        bool outside = false;
        for (int p = 0; p < 6; p++) {
            const float *pl = f->planes[p];
            if (pl[0] * s[0] + pl[1] * s[1] + pl[2] * s[2] + pl[3] < -s[3]) {
                outside = true;
                break;
            }
        }
        if (!outside) {
            memmove(spheres + 4 * (size_t)kept, s, 4 * sizeof(float));
            kept++;
        }
    }
    return kept;
}

typedef struct sphere_set {
    float *aos, *aos_backup;
    float *x, *y, *z, *r;
    float *soa_backup; /* x, y, z, r one after another */
} sphere_set;

static void restore_soa(sphere_set *s)
{
    memcpy(s->x, s->soa_backup, sizeof(float) * SPHERES);
    memcpy(s->y, s->soa_backup + SPHERES, sizeof(float) * SPHERES);
    memcpy(s->z, s->soa_backup + 2 * (size_t)SPHERES, sizeof(float) * SPHERES);
    memcpy(s->r, s->soa_backup + 3 * (size_t)SPHERES, sizeof(float) * SPHERES);
}

/* Median ns/sphere of the SoA cull on one level; inputs restored outside the timing. */
static double time_soa(rvb_ctx *ctx, sphere_set *s, const rv_frustum *f, rvi_simd_level level, uint32_t *kept)
{
    double t[64];
    int reps = ctx->reps < 64 ? ctx->reps : 64;
    for (int k = 0; k < reps; k++) {
        restore_soa(s);
        uint64_t t0 = rvb_now_ns();
        rv_result res = rvi_cull_spheres_soa_level(level, f, s->x, s->y, s->z, s->r, SPHERES, NULL, 0, kept);
        uint64_t t1 = rvb_now_ns();
        if (res != RV_OK)
            return -1.0;
        t[k] = (double)(t1 - t0) / SPHERES;
    }
    return rvb_median(t, reps);
}

static double time_aos(rvb_ctx *ctx, sphere_set *s, const rv_frustum *f, bool baseline, uint32_t *kept)
{
    double t[64];
    int reps = ctx->reps < 64 ? ctx->reps : 64;
    for (int k = 0; k < reps; k++) {
        memcpy(s->aos, s->aos_backup, sizeof(float) * 4 * SPHERES);
        uint64_t t0 = rvb_now_ns();
        rv_result res = RV_OK;
        if (baseline)
            *kept = baseline_cull(f, s->aos, SPHERES);
        else
            res = rv_cull_spheres(f, s->aos, SPHERES, NULL, 0, kept);
        uint64_t t1 = rvb_now_ns();
        if (res != RV_OK)
            return -1.0;
        t[k] = (double)(t1 - t0) / SPHERES;
    }
    return rvb_median(t, reps);
}

static int cull_spheres_1m(rvb_ctx *ctx)
{
    const char *name = "cull_spheres_1m";
    if (!rvb_begin_case(ctx, name))
        return 0;
    sphere_set s = {0};
    s.aos = malloc(sizeof(float) * 4 * SPHERES);
    s.aos_backup = malloc(sizeof(float) * 4 * SPHERES);
    s.soa_backup = malloc(sizeof(float) * 4 * SPHERES);
    s.x = malloc(sizeof(float) * SPHERES);
    s.y = malloc(sizeof(float) * SPHERES);
    s.z = malloc(sizeof(float) * SPHERES);
    s.r = malloc(sizeof(float) * SPHERES);
    int status = 1;
    if (!s.aos || !s.aos_backup || !s.soa_backup || !s.x || !s.y || !s.z || !s.r) {
        fprintf(stderr, "%s: out of memory\n", name);
        goto done;
    }
    /* Centres uniform in a 1000 m cube around the camera, radii 0.5-5 m, random order. */
    rvb_rng rng = {0xC011u};
    for (uint32_t i = 0; i < SPHERES; i++) {
        float *q = s.aos_backup + 4 * (size_t)i;
        q[0] = rvb_uniform(&rng, -500.0f, 500.0f);
        q[1] = rvb_uniform(&rng, -500.0f, 500.0f);
        q[2] = rvb_uniform(&rng, -500.0f, 500.0f);
        q[3] = rvb_uniform(&rng, 0.5f, 5.0f);
        for (int a = 0; a < 4; a++)
            s.soa_backup[(size_t)a * SPHERES + i] = q[a];
    }
    /* 60° perspective at the centre looking down +Z (16:9, near 0.1 m, far 1000 m). */
    mat4 proj, view, vp;
    glm_perspective(glm_rad(60.0f), 16.0f / 9.0f, 0.1f, 1000.0f, proj);
    glm_lookat((vec3){0, 0, 0}, (vec3){0, 0, 1}, (vec3){0, 1, 0}, view);
    glm_mat4_mul(proj, view, vp);
    float view_projection[16];
    memcpy(view_projection, vp, sizeof view_projection);
    rv_frustum f;
    if (rv_frustum_from_view_projection(view_projection, (rv_clip){0}, &f) != RV_OK) {
        fprintf(stderr, "%s: frustum extraction failed\n", name);
        goto done;
    }

    rvi_simd_level best = rvi_simd_best_level();
    uint32_t kept_base = 0, kept_soa = 0, kept_aos = 0;
    double base = time_aos(ctx, &s, &f, true, &kept_base);
    double ours = time_soa(ctx, &s, &f, best, &kept_soa);
    double aos = time_aos(ctx, &s, &f, false, &kept_aos);
    double level_ns[RVI_SIMD_LEVEL_COUNT];
    for (int l = 0; l < RVI_SIMD_LEVEL_COUNT; l++) {
        uint32_t kept_l = 0;
        level_ns[l] = l <= (int)best ? time_soa(ctx, &s, &f, (rvi_simd_level)l, &kept_l) : -1.0;
        if (l <= (int)best && kept_l != kept_soa) {
            fprintf(stderr, "%s: level %s kept %u, level %s %u\n", name, rvi_simd_level_name((rvi_simd_level)l),
                    kept_l, rvi_simd_level_name(best), kept_soa);
            goto done;
        }
    }
    /* rvis keeps what the naive test keeps and, beyond it, only spheres within float
     * rounding of a plane (its slack), a few in a million here. */
    if (ours < 0 || aos < 0 || kept_aos != kept_soa || kept_soa < kept_base || kept_soa > kept_base + SPHERES / 10000) {
        fprintf(stderr, "%s: cull failed or disagrees with the baseline (%u %u %u)\n", name, kept_soa,
                kept_aos, kept_base);
        goto done;
    }
    char extra[512];
    char levels[256] = "";
    for (int l = 0; l < RVI_SIMD_LEVEL_COUNT; l++) {
        char one[64];
        if (level_ns[l] >= 0)
            snprintf(one, sizeof one, ", \"soa_%s_ns\": %.4g", rvi_simd_level_name((rvi_simd_level)l), level_ns[l]);
        else
            snprintf(one, sizeof one, ", \"soa_%s_ns\": null", rvi_simd_level_name((rvi_simd_level)l));
        strncat(levels, one, sizeof levels - strlen(levels) - 1);
    }
    snprintf(extra, sizeof extra,
             ", \"layout\": \"soa\", \"simd_level\": \"%s\", \"aos_ns\": %.4g, \"aos_speedup\": %.4g%s, "
             "\"kept\": %u, \"baseline_kept\": %u, \"target_ns\": 1.0, \"target_speedup\": 6",
             rvi_simd_level_name(best), aos, base / aos, levels, kept_soa, kept_base);
    rvb_report(ctx, name, "ns/sphere", ours, base, extra);
    status = 0;
done:
    free(s.aos);
    free(s.aos_backup);
    free(s.soa_backup);
    free(s.x);
    free(s.y);
    free(s.z);
    free(s.r);
    return status;
}

int rvb_frustum(rvb_ctx *ctx); /* called by the generated registry */

int rvb_frustum(rvb_ctx *ctx)
{
    return cull_spheres_1m(ctx);
}
