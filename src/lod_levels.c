/* The stateless level functions of apparent-size LOD (docs/design.md §5): one sphere
 * (rv_lod_for_sphere) and many at once (rv_lod_select_spheres). Ladders, selectors and the
 * world's LOD state are in lod.c. */
#include "lod.h"
#include "core/check.h"
#include "core/clones.h"
#include "core/inline.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- scalar levels ------------------------------------------------------------------- */

rv_result rv_lod_for_sphere(const float center[3], float radius, const float eye[3],
                            const rv_lod_ladder *ladder, uint32_t *out_level)
{
    if (!eye || !out_level)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_lod_check_sphere(center, radius));
    if (!rvi_finite_n(eye, 3))
        return RV_ERR_NOT_FINITE;
    RVI_TRY(rvi_lod_check_ladder(ladder));
    rv_lod_view view = { .eye = { eye[0], eye[1], eye[2] } };
    rv_lod_desc config;
    rvi_lod_resolve_desc(NULL, &config);
    *out_level = rvi_lod_level_for_angle(rvi_lod_biased_angle(center, radius, &view, &config), ladder, 1.0);
    return RV_OK;
}

/* ---- batch levels -------------------------------------------------------------------- */

/* Below this, d^2 * k (k the smallest constant) has lost bits to float underflow: such a
 * sphere is decided in double. */
#define RVI_LOD_SQUARES_MIN 0x1p-100f
/* A constant sin^2(t / 2) above this (t above ~2.9 rad): there sin^2 is so flat that the
 * threshold's REACH margin moves it less than the float roundings of r^2 and d^2 * k
 * (about 6e-7 of them), so spheres near such a threshold are decided in double. */
#define RVI_LOD_STEEP_K 0.98f
/* ...those whose r^2 comes within this fraction of d^2 * k of the smallest such constant
 * (or above it: nearer, larger, or holding the eye). */
#define RVI_LOD_STEEP_BAND (1.0f - 1e-5f)

/* Perspective kernel for a compile-time threshold count (the switch below instantiates it):
 * level = number of thresholds not reached = sum of (r^2 < d^2 * k_i). A NaN makes every
 * comparison false, so a NaN sphere answers the finest level allowed. */
static RVI_ALWAYS_INLINE void batch_perspective(const float *restrict cx, const float *restrict cy,
                                                const float *restrict cz, const float *restrict rad,
                                                uint32_t n, const float *restrict k, uint32_t nk,
                                                uint32_t finest, const float eye[3],
                                                uint8_t *restrict out, uint32_t *restrict bad)
{
    const float ex = eye[0], ey = eye[1], ez = eye[2];
    uint32_t suspect = 0;
    for (uint32_t j = 0; j < n; j++) {
        float dx = cx[j] - ex, dy = cy[j] - ey, dz = cz[j] - ez, r = rad[j];
        float d2 = dx * dx + dy * dy + dz * dz;
        float r2 = r * r;
        uint32_t level = 0;
        for (uint32_t i = 0; i < nk; i++)
            level += r2 < d2 * k[i];
        level = level < finest ? finest : level;
        out[j] = (uint8_t)level;
        /* Cheap screen: a NaN or infinity makes d^2 + r^2 non-finite (so may a finite
         * coordinate beyond ~1e19), and distances below ~1e-15 of the smallest threshold's
         * scale square into too few bits: the caller re-checks exactly when this fires. */
        suspect |= !(d2 + r2 <= FLT_MAX) | !(d2 * k[nk - 1] >= RVI_LOD_SQUARES_MIN) | (r < 0.0f);
    }
    *bad |= suspect;
}

/* Orthographic kernel: the angle is linear in the radius, so level = sum of (r * s < t_i). */
static RVI_ALWAYS_INLINE void batch_orthographic(const float *restrict cx, const float *restrict cy,
                                                 const float *restrict cz, const float *restrict rad,
                                                 uint32_t n, const float *restrict t, uint32_t nk,
                                                 uint32_t finest, float s, uint8_t *restrict out,
                                                 uint32_t *restrict bad)
{
    uint32_t suspect = 0;
    for (uint32_t j = 0; j < n; j++) {
        float r = rad[j];
        float angle = r * s;
        uint32_t level = 0;
        for (uint32_t i = 0; i < nk; i++)
            level += angle < t[i];
        level = level < finest ? finest : level;
        out[j] = (uint8_t)level;
        float probe = (cx[j] - cx[j]) + (cy[j] - cy[j]) + (cz[j] - cz[j]) + (r - r);
        suspect |= (probe != 0.0f) | (r < 0.0f);
    }
    *bad |= suspect;
}

#define LOD_KERNEL_CASES(CALL) \
    CALL(1) CALL(2) CALL(3) CALL(4) CALL(5) CALL(6) CALL(7) CALL(8)

/* One batch call's inputs, resolved. */
typedef struct batch_job {
    const float *cx, *cy, *cz, *radius;
    uint32_t count, thresholds, finest;
    bool orthographic;
    float ortho_scale;                      /* orthographic: angle * bias = radius * this */
    float eye[3];
    float constants[RV_LOD_MAX_THRESHOLDS]; /* sin^2 per threshold, or scaled thresholds */
    uint8_t *out;
} batch_job;

/* Writes every level; returns nonzero when some input may be bad (re-checked exactly). The
 * kernels spill registers with SSE2 (16 spheres per iteration): RVI_CLONES. */
RVI_CLONES
static uint32_t batch_levels(const batch_job *job)
{
    uint32_t suspect = 0;
    if (job->orthographic) {
#define ORTHO_CASE(NK) case NK: batch_orthographic(job->cx, job->cy, job->cz, job->radius, job->count, \
            job->constants, NK, job->finest, job->ortho_scale, job->out, &suspect); break;
        switch (job->thresholds) { LOD_KERNEL_CASES(ORTHO_CASE) default: break; }
#undef ORTHO_CASE
    } else {
#define PERSP_CASE(NK) case NK: batch_perspective(job->cx, job->cy, job->cz, job->radius, job->count, \
            job->constants, NK, job->finest, job->eye, job->out, &suspect); break;
        switch (job->thresholds) { LOD_KERNEL_CASES(PERSP_CASE) default: break; }
#undef PERSP_CASE
    }
    return suspect;
}

rv_result rv_lod_select_spheres(const rv_lod_ladder *ladder, const rv_lod_desc *desc,
                                const rv_lod_view *view, const float *center_x,
                                const float *center_y, const float *center_z,
                                const float *radius, uint32_t count, uint8_t *out_levels)
{
    RVI_TRY(rvi_lod_check_ladder(ladder));
    rv_lod_desc config;
    RVI_TRY(rvi_lod_resolve_desc(desc, &config));
    RVI_TRY(rvi_lod_check_view(view));
    if (count == 0)
        return RV_OK;
    if (!center_x || !center_y || !center_z || !radius || !out_levels)
        return RV_ERR_INVALID_ARG;
    batch_job job;
    memset(&job, 0, sizeof job);
    job.cx = center_x;
    job.cy = center_y;
    job.cz = center_z;
    job.radius = radius;
    job.count = count;
    job.thresholds = ladder->count;
    job.finest = rvi_lod_finest_allowed(config.finest_level, ladder->count);
    job.orthographic = view->orthographic;
    job.out = out_levels;
    if (view->orthographic) {
        /* angle * bias >= t  <=>  r * (2 * fov_ref * bias / height) >= t */
        job.ortho_scale = (float)(2.0 * config.ortho_reference_fov_y * config.bias / view->ortho_height);
        for (uint32_t i = 0; i < ladder->count; i++)
            job.constants[i] = (float)(ladder->thresholds[i] * RVI_LOD_REACH);
    } else {
        /* angle * bias >= t  <=>  2 asin(r / d) >= t / bias  <=>  r^2 >= d^2 sin^2(t / (2 bias))
         * for t / bias < pi; from pi on only an eye inside (r >= d) reaches it: k = 1. */
        memcpy(job.eye, view->eye, sizeof job.eye);
        for (uint32_t i = 0; i < ladder->count; i++) {
            double half = ladder->thresholds[i] * RVI_LOD_REACH / (2.0 * config.bias);
            double s = half >= RVI_LOD_PI / 2 ? 1.0 : sin(half);
            job.constants[i] = (float)(s * s);
        }
    }
    /* The constants fall with the level: the steep ones, if any, come first. */
    float steep = 0.0f;
    for (uint32_t i = 0; !view->orthographic && i < ladder->count && job.constants[i] > RVI_LOD_STEEP_K; i++)
        steep = job.constants[i] * RVI_LOD_STEEP_BAND;
    /* A constant below the squares' floor (t / bias below ~1.8e-15 rad) has too few bits, or
     * none: every sphere is decided in double. */
    bool tiny = !view->orthographic && ladder->count > 0 && !(job.constants[ladder->count - 1] >= RVI_LOD_SQUARES_MIN);
    if (!batch_levels(&job) && steep == 0.0f && !tiny)
        return RV_OK;
    /* Rare: tell a bad input from a huge finite one exactly, and decide in double a huge one
     * (a distance beyond ~1e19 overflows the kernel's float d^2, which would answer "too
     * small to draw" for a sphere that fills the view), a tiny one, and one near a steep
     * threshold. */
    rv_result result = RV_OK;
    for (uint32_t j = 0; j < count; j++) {
        float sphere[3] = { center_x[j], center_y[j], center_z[j] };
        rv_result r = rvi_lod_check_sphere(sphere, radius[j]);
        if (r != RV_OK) { /* a NaN/Inf is reported over a negative radius */
            out_levels[j] = (uint8_t)job.finest; /* whatever the kernel made of it */
            result = result == RV_ERR_NOT_FINITE ? result : r;
            continue;
        }
        if (view->orthographic)
            continue; /* its kernel squares nothing */
        float dx = sphere[0] - view->eye[0], dy = sphere[1] - view->eye[1], dz = sphere[2] - view->eye[2];
        float d2 = dx * dx + dy * dy + dz * dz, r2 = radius[j] * radius[j];
        /* near the kernel's screens: its answer may be wrong */
        if (tiny || !(d2 + r2 <= 0.25f * FLT_MAX) ||
            !(d2 * job.constants[ladder->count - 1] >= 2.0f * RVI_LOD_SQUARES_MIN) ||
            (steep > 0.0f && r2 >= d2 * steep))
            out_levels[j] = (uint8_t)rvi_lod_clamp_finest(
                rvi_lod_level_for_angle(rvi_lod_biased_angle(sphere, radius[j], view, &config), ladder, 1.0),
                config.finest_level, ladder->count);
    }
    return result;
}
