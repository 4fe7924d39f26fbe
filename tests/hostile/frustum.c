/* Hostile cases: frustum extraction, classification, batch sphere culling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "hostile_table.h"

#include <float.h>
#include <string.h>

/* A perspective view-projection (OpenGL depth), eye at the origin looking down -z,
 * 90 degree field of view, near 0.5, far 100. */
static void perspective(float m[16])
{
    float n = 0.5f, f = 100.0f;
    memset(m, 0, 64);
    m[0] = 1.0f;
    m[5] = 1.0f;
    m[10] = -(f + n) / (f - n);
    m[11] = -1.0f;
    m[14] = -2.0f * f * n / (f - n);
}

static rv_frustum good_frustum(void)
{
    float m[16];
    perspective(m);
    rv_frustum f;
    assert_int_equal(rv_frustum_from_view_projection(m, (rv_clip){0}, &f), RV_OK);
    assert_int_equal(f.plane_mask, 0x3F);
    return f;
}

/* Every plane the mask keeps is finite with a unit normal: nothing NaN reaches a test. */
static int planes_sane(const rv_frustum *f)
{
    if (f->plane_mask & ~0x3Fu)
        return 0;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *p = f->planes[i];
        for (int k = 0; k < 4; k++)
            if (!isfinite(p[k]))
                return 0;
        float len = sqrtf(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        if (fabsf(len - 1.0f) > 1e-4f)
            return 0;
    }
    return 1;
}

void hostile_rv_frustum_from_view_projection(rvh_ctx *cx)
{
    float m[16];
    rv_frustum out;
    perspective(m);
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frustum_from_view_projection(NULL, (rv_clip){0}, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frustum_from_view_projection(m, (rv_clip){0}, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
    /* A NaN or an infinity in any element: refused, *out untouched, in every convention. */
    for (int e = 0; e < 16; e++)
        for (int v = 0; v < RVH_NONFINITE; v++)
            for (int c = 0; c < 4; c++) {
                perspective(m);
                m[e] = rvh_nonfinite[v];
                rv_clip clip = { (c & 1) != 0, (c & 2) != 0 };
                RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_frustum_from_view_projection(m, clip, &out));
                RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
            }
    /* Finite extremes: accepted, and every plane kept is finite and unit (a degenerate or
     * overflowing plane is dropped, never normalised to NaN). */
    for (int v = 0; v < RVH_EXTREME; v++) {
        for (int e = 0; e < 16; e++) {
            perspective(m);
            m[e] = rvh_extreme[v];
            RVH_ACCEPT(cx, rv_frustum_from_view_projection(m, (rv_clip){0}, &out));
            RVH_CHECK(cx, planes_sane(&out));
        }
        for (int e = 0; e < 16; e++)
            m[e] = rvh_extreme[v]; /* every element the same extreme */
        RVH_ACCEPT(cx, rv_frustum_from_view_projection(m, (rv_clip){ true, true }, &out));
        RVH_CHECK(cx, planes_sane(&out));
    }
    memset(m, 0, sizeof m); /* the zero matrix: no plane at all */
    RVH_ACCEPT(cx, rv_frustum_from_view_projection(m, (rv_clip){0}, &out));
    RVH_CHECK(cx, out.plane_mask == 0);
}

/* Hostile spheres every classifier must answer "draw" (never RV_OUTSIDE) for, against a
 * frustum that would cull a sane sphere placed at the same spot. */
static void hostile_spheres(rvh_ctx *cx, rv_containment (*classify)(const rv_frustum *, const float *, float))
{
    rv_frustum f = good_frustum();
    float behind[3] = { 0, 0, 50 }; /* behind the eye: a sane sphere here is culled */
    RVH_CHECK(cx, classify(&f, behind, 1.0f) == RV_OUTSIDE);
    RVH_CHECK(cx, classify(NULL, behind, 1.0f) == RV_INTERSECTING);
    RVH_CHECK(cx, classify(&f, NULL, 1.0f) == RV_INTERSECTING);
    for (int v = 0; v < RVH_NONFINITE; v++) {
        RVH_CHECK(cx, classify(&f, behind, rvh_nonfinite[v]) == RV_INTERSECTING);
        for (int k = 0; k < 3; k++) {
            float c[3];
            memcpy(c, behind, sizeof c);
            c[k] = rvh_nonfinite[v];
            RVH_CHECK(cx, classify(&f, c, 1.0f) == RV_INTERSECTING);
        }
    }
    const float negative[] = { -1.0f, -1e30f, -FLT_MAX, -1e-45f };
    for (size_t i = 0; i < 4; i++)
        RVH_CHECK(cx, classify(&f, behind, negative[i]) == RV_INTERSECTING);
    /* A huge sphere reaches into the frustum from anywhere. */
    RVH_CHECK(cx, classify(&f, behind, 1e30f) != RV_OUTSIDE);
    RVH_CHECK(cx, classify(&f, behind, FLT_MAX) != RV_OUTSIDE);
    /* A frustum with NaN planes (a host's hand-built struct) culls nothing. */
    rv_frustum bad = f;
    for (int i = 0; i < 6; i++)
        bad.planes[i][3] = NAN;
    RVH_CHECK(cx, classify(&bad, behind, 1.0f) != RV_OUTSIDE);
    /* Mask bits above the six planes are ignored, never read as planes. */
    bad = f;
    bad.plane_mask = UINT32_MAX;
    RVH_CHECK(cx, classify(&bad, behind, 1.0f) == RV_OUTSIDE);
    float ahead[3] = { 0, 0, -10 };
    RVH_CHECK(cx, classify(&bad, ahead, 1.0f) == RV_INSIDE);
}

static rv_containment unmasked(const rv_frustum *f, const float *c, float r)
{
    return rv_frustum_classify_sphere(f, c, r);
}

static rv_containment masked_full(const rv_frustum *f, const float *c, float r)
{
    uint32_t mask = f ? f->plane_mask : 0x3F;
    return rv_frustum_classify_sphere_masked(f, c, r, &mask);
}

void hostile_rv_frustum_classify_sphere(rvh_ctx *cx)
{
    hostile_spheres(cx, unmasked);
}

void hostile_rv_frustum_classify_sphere_masked(rvh_ctx *cx)
{
    hostile_spheres(cx, masked_full);
    rv_frustum f = good_frustum();
    float c[3] = { 0, 0, -10 };
    RVH_CHECK(cx, rv_frustum_classify_sphere_masked(&f, c, 1.0f, NULL) == RV_INTERSECTING);
    /* Bad input leaves *mask as it was. */
    uint32_t mask = 0x15;
    float nan_c[3] = { NAN, 0, 0 };
    RVH_CHECK(cx, rv_frustum_classify_sphere_masked(&f, nan_c, 1.0f, &mask) == RV_INTERSECTING && mask == 0x15);
    RVH_CHECK(cx, rv_frustum_classify_sphere_masked(&f, c, -1.0f, &mask) == RV_INTERSECTING && mask == 0x15);
    RVH_CHECK(cx, rv_frustum_classify_sphere_masked(NULL, c, 1.0f, &mask) == RV_INTERSECTING && mask == 0x15);
    /* Garbage bits in *mask are cleared, never used to index planes. */
    mask = UINT32_MAX;
    RVH_CHECK(cx, rv_frustum_classify_sphere_masked(&f, c, 1.0f, &mask) == RV_INSIDE && mask == 0);
}

void hostile_rv_frustum_classify_box(rvh_ctx *cx)
{
    rv_frustum f = good_frustum();
    float lo[3] = { -1, -1, 49 }, hi[3] = { 1, 1, 51 }; /* behind the eye */
    RVH_CHECK(cx, rv_frustum_classify_box(&f, lo, hi) == RV_OUTSIDE);
    RVH_CHECK(cx, rv_frustum_classify_box(NULL, lo, hi) == RV_INTERSECTING);
    RVH_CHECK(cx, rv_frustum_classify_box(&f, NULL, hi) == RV_INTERSECTING);
    RVH_CHECK(cx, rv_frustum_classify_box(&f, lo, NULL) == RV_INTERSECTING);
    for (int v = 0; v < RVH_NONFINITE; v++)
        for (int k = 0; k < 3; k++) {
            float a[3], b[3];
            memcpy(a, lo, sizeof a);
            memcpy(b, hi, sizeof b);
            a[k] = rvh_nonfinite[v];
            RVH_CHECK(cx, rv_frustum_classify_box(&f, a, hi) == RV_INTERSECTING);
            b[k] = rvh_nonfinite[v];
            RVH_CHECK(cx, rv_frustum_classify_box(&f, lo, b) == RV_INTERSECTING);
        }
    /* Inverted on any axis: nothing to place, draw it. */
    for (int k = 0; k < 3; k++) {
        float a[3], b[3];
        memcpy(a, lo, sizeof a);
        memcpy(b, hi, sizeof b);
        a[k] = hi[k] + 1.0f;
        RVH_CHECK(cx, rv_frustum_classify_box(&f, a, b) == RV_INTERSECTING);
    }
    /* A box spanning the finite range contains the frustum's apex: never culled. */
    float huge_lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, huge_hi[3] = { FLT_MAX, FLT_MAX, FLT_MAX };
    RVH_CHECK(cx, rv_frustum_classify_box(&f, huge_lo, huge_hi) != RV_OUTSIDE);
    float big_lo[3] = { -1e30f, -1e30f, -1e30f }, big_hi[3] = { 1e30f, 1e30f, 1e30f };
    RVH_CHECK(cx, rv_frustum_classify_box(&f, big_lo, big_hi) != RV_OUTSIDE);
    rv_frustum bad = f;
    for (int i = 0; i < 6; i++)
        bad.planes[i][3] = NAN;
    RVH_CHECK(cx, rv_frustum_classify_box(&bad, lo, hi) != RV_OUTSIDE);
    bad = f;
    bad.plane_mask = UINT32_MAX;
    RVH_CHECK(cx, rv_frustum_classify_box(&bad, lo, hi) == RV_OUTSIDE);
}

/* A digest of a float array (for "the spheres are untouched"). */
static int same_bytes(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

enum { CULL_N = 8 };

static void fill_spheres(float s[CULL_N * 4])
{
    for (int i = 0; i < CULL_N; i++) {
        s[i * 4 + 0] = (float)(i - 4);
        s[i * 4 + 1] = 0.0f;
        s[i * 4 + 2] = (i & 1) ? -10.0f : 50.0f; /* odd ahead, even behind */
        s[i * 4 + 3] = 1.0f;
    }
}

void hostile_rv_cull_spheres(rvh_ctx *cx)
{
    rv_frustum f = good_frustum();
    float s[CULL_N * 4], orig[CULL_N * 4];
    float payload[CULL_N][16];
    uint32_t kept = 0xA5A5A5A5u;
    fill_spheres(s);
    memcpy(orig, s, sizeof s);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(NULL, s, CULL_N, NULL, 0, &kept));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(&f, s, CULL_N, NULL, 0, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(&f, NULL, CULL_N, NULL, 0, &kept));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(&f, s, CULL_N, payload, 0, &kept));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(&f, s, CULL_N, payload, SIZE_MAX / 2, &kept));
    rv_frustum bad = f;
    bad.plane_mask = 0x40;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres(&bad, s, CULL_N, NULL, 0, &kept));
    for (int v = 0; v < RVH_NONFINITE; v++)
        for (int i = 0; i < 6; i++)
            for (int k = 0; k < 4; k++) {
                bad = f;
                bad.planes[i][k] = rvh_nonfinite[v];
                RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_cull_spheres(&bad, s, CULL_N, NULL, 0, &kept));
            }
    /* A NaN in a plane the mask leaves out is never read. */
    bad = f;
    bad.plane_mask = 0x1F;
    bad.planes[5][0] = NAN;
    RVH_CHECK(cx, same_bytes(s, orig, sizeof s) && kept == 0xA5A5A5A5u); /* refusals wrote nothing */
    RVH_ACCEPT(cx, rv_cull_spheres(&bad, s, CULL_N, NULL, 0, &kept));
    RVH_CHECK(cx, kept == CULL_N / 2);

    /* count 0 with no arrays: RV_OK, nothing kept. */
    RVH_ACCEPT(cx, rv_cull_spheres(&f, NULL, 0, NULL, 0, &kept));
    RVH_CHECK(cx, kept == 0);
    /* Hostile spheres are kept (drawn): NaN anywhere, infinite or negative radius, huge
     * radius; sane spheres behind the eye are culled around them. A sphere with an
     * infinite coordinate lies outside some plane or across all of them: either answer is
     * sound (it cannot be on screen), so only the sane spheres are checked for it. */
    for (int v = 0; v < RVH_NONFINITE; v++)
        for (int k = 0; k < 4; k++) {
            fill_spheres(s);
            s[0 * 4 + k] = rvh_nonfinite[v]; /* sphere 0 lies behind the eye */
            float hostile[4];
            memcpy(hostile, s, sizeof hostile);
            RVH_ACCEPT(cx, rv_cull_spheres(&f, s, CULL_N, NULL, 0, &kept));
            if (isnan(rvh_nonfinite[v]) || k == 3)
                RVH_CHECK(cx, kept == CULL_N / 2 + 1 && same_bytes(s, hostile, sizeof hostile));
            else
                RVH_CHECK(cx, kept == CULL_N / 2 || (kept == CULL_N / 2 + 1 && same_bytes(s, hostile, sizeof hostile)));
            RVH_CHECK(cx, s[(kept - 1) * 4 + 0] == 3.0f); /* the last sane sphere ahead is kept */
        }
    const float odd_radius[] = { -1.0f, -FLT_MAX, 1e30f, FLT_MAX };
    for (size_t i = 0; i < 4; i++) {
        fill_spheres(s);
        s[3] = odd_radius[i];
        RVH_ACCEPT(cx, rv_cull_spheres(&f, s, CULL_N, NULL, 0, &kept));
        RVH_CHECK(cx, kept == CULL_N / 2 + 1 && s[3] == odd_radius[i]);
    }
}

void hostile_rv_cull_spheres_soa(rvh_ctx *cx)
{
    rv_frustum f = good_frustum();
    float x[CULL_N], y[CULL_N], z[CULL_N], r[CULL_N];
    float payload[CULL_N][4];
    uint32_t kept = 0xA5A5A5A5u;
    for (int i = 0; i < CULL_N; i++) {
        x[i] = (float)(i - 4);
        y[i] = 0.0f;
        z[i] = (i & 1) ? -10.0f : 50.0f;
        r[i] = 1.0f;
    }
    float *arrays[4] = { x, y, z, r };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(NULL, x, y, z, r, CULL_N, NULL, 0, &kept));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(&f, x, y, z, r, CULL_N, NULL, 0, NULL));
    for (int a = 0; a < 4; a++) {
        float *p[4] = { x, y, z, r };
        p[a] = NULL;
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(&f, p[0], p[1], p[2], p[3], CULL_N, NULL, 0, &kept));
    }
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(&f, x, y, z, r, CULL_N, payload, 0, &kept));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(&f, x, y, z, r, CULL_N, payload, SIZE_MAX / 4, &kept));
    rv_frustum bad = f;
    bad.plane_mask = 0x80000000u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_spheres_soa(&bad, x, y, z, r, CULL_N, NULL, 0, &kept));
    for (int v = 0; v < RVH_NONFINITE; v++) {
        bad = f;
        bad.planes[4][3] = rvh_nonfinite[v];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_cull_spheres_soa(&bad, x, y, z, r, CULL_N, NULL, 0, &kept));
    }
    RVH_CHECK(cx, kept == 0xA5A5A5A5u && x[0] == -4.0f && z[0] == 50.0f);
    RVH_ACCEPT(cx, rv_cull_spheres_soa(&f, NULL, NULL, NULL, NULL, 0, NULL, 0, &kept));
    RVH_CHECK(cx, kept == 0);
    /* NaN in any component of sphere 0 (behind the eye): kept. */
    for (int v = 0; v < RVH_NONFINITE; v++)
        for (int a = 0; a < 4; a++) {
            for (int i = 0; i < CULL_N; i++) {
                x[i] = (float)(i - 4);
                y[i] = 0.0f;
                z[i] = (i & 1) ? -10.0f : 50.0f;
                r[i] = 1.0f;
            }
            arrays[a][0] = rvh_nonfinite[v];
            RVH_ACCEPT(cx, rv_cull_spheres_soa(&f, x, y, z, r, CULL_N, NULL, 0, &kept));
            if (isnan(rvh_nonfinite[v]) || a == 3)
                RVH_CHECK(cx, kept == CULL_N / 2 + 1);
            else
                RVH_CHECK(cx, kept == CULL_N / 2 || kept == CULL_N / 2 + 1);
            RVH_CHECK(cx, x[kept - 1] == 3.0f && z[kept - 1] == -10.0f);
        }
}
