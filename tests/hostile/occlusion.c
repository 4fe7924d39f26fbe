/* Hostile cases: the standalone occlusion buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <string.h>

/* Perspective, OpenGL depth, eye at the origin looking down -z, 90 degrees, near 0.5. */
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

static uint64_t occlusion_digest(const void *object)
{
    const rv_occlusion *o = object;
    rv_occlusion_stats s = rv_occlusion_get_stats(o);
    rv_alloc_stats a = rv_occlusion_alloc_stats(o);
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(o);
    uint64_t f[30] = { s.occluders_submitted, s.occluders_rasterized, s.occluders_skipped, s.skipped_small,
                       s.skipped_offscreen, s.skipped_cap, s.skipped_degenerate, s.texels_covered, s.tests,
                       s.culled, a.allocations - a.frees, a.bytes_live, rv_occlusion_level_count(o),
                       s.occluders_hidden, s.triangles_submitted, s.triangles_rasterized, s.triangles_hidden,
                       s.triangles_skipped, s.triangles_degenerate, s.pieces, s.fusion_tests, s.fused_texels,
                       fs.feeds_used, fs.feeds_ignored_motion + fs.feeds_ignored_projection,
                       fs.feeds_ignored_age, fs.texels_fed, fs.texels_reprojected, fs.texels_invalid,
                       fs.objects_hidden_by_feed, s.meshes_outlined };
    return rvi_hash_bytes(11, f, sizeof f);
}

typedef struct ofix {
    rvt_alloc alloc;
    rv_occlusion *o;
} ofix;

/* A 64-texel buffer with a frame begun and one wall occluder added (not frozen). */
static ofix *setup(rvh_ctx *cx, bool begin)
{
    static ofix f;
    memset(&f, 0, sizeof f);
    rv_occlusion_desc d = {0};
    d.allocator = rvt_allocator(&f.alloc);
    d.width = 64;
    RVH_ACCEPT(cx, rv_occlusion_create(&d, &f.o));
    if (begin) {
        float m[16];
        perspective(m);
        RVH_ACCEPT(cx, rv_occlusion_begin(f.o, m, (rv_clip){0}, 1.0f));
        float lo[3] = { -5, -5, -10 }, hi[3] = { 5, 5, -9 };
        RVH_ACCEPT(cx, rv_occlusion_add_occluder(f.o, lo, hi, NULL));
    }
    rvh_watch(cx, "the occlusion buffer", occlusion_digest, f.o);
    return &f;
}

static void teardown(rvh_ctx *cx, ofix *f)
{
    rvh_unwatch(cx, f->o);
    rv_occlusion_destroy(f->o);
    RVH_CHECK(cx, f->alloc.live_blocks == 0 && f->alloc.live_bytes == 0);
}

void hostile_rv_occlusion_create(rvh_ctx *cx)
{
    rv_occlusion *sentinel = (rv_occlusion *)(uintptr_t)0x5a5a5a5a, *out = sentinel;
    rvt_alloc st = {0};
    rv_occlusion_desc d = {0};
    d.allocator = rvt_allocator(&st);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_create(&d, NULL));
    d.width = RV_OCCLUSION_MAX_SIZE + 1;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_create(&d, &out));
    d.width = UINT32_MAX;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_create(&d, &out));
    d.width = 64;
    for (int b = 0; b < RVH_NONFINITE; b++) {
        d.min_occluder_texels = rvh_nonfinite[b];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_create(&d, &out));
    }
    RVH_CHECK(cx, out == sentinel && st.calls == 0);
}

void hostile_rv_occlusion_destroy(rvh_ctx *cx)
{
    rv_occlusion_destroy(NULL);
    ofix *f = setup(cx, true);
    teardown(cx, f);
}

void hostile_rv_occlusion_begin(rvh_ctx *cx)
{
    ofix *f = setup(cx, false);
    float m[16];
    perspective(m);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_begin(NULL, m, (rv_clip){0}, 1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_begin(f->o, NULL, (rv_clip){0}, 1.0f));
    const float bad_aspect[4] = { 0.0f, -1.0f, 1e30f, 1e-30f }; /* zero, negative, 0 rows, too many rows */
    for (int i = 0; i < 4; i++)
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_begin(f->o, m, (rv_clip){0}, bad_aspect[i]));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        if (rvh_nonfinite[b] != -INFINITY)
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_begin(f->o, m, (rv_clip){0}, rvh_nonfinite[b]));
        for (int e = 0; e < 16; e += 5) {
            float bad[16];
            memcpy(bad, m, sizeof bad);
            bad[e] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_begin(f->o, bad, (rv_clip){0}, 1.0f));
        }
    }
    float zero[16] = {0};
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_begin(f->o, zero, (rv_clip){0}, 1.0f));
    /* A refused begin drops the frame: adds are refused, tests answer visible. */
    float lo[3] = { -5, -5, -10 }, hi[3] = { 5, 5, -9 }, far_lo[3] = { -1, -1, -50 }, far_hi[3] = { 1, 1, -49 };
    RVH_ACCEPT(cx, rv_occlusion_begin(f->o, m, (rv_clip){0}, 1.0f));
    RVH_ACCEPT(cx, rv_occlusion_add_occluder(f->o, lo, hi, NULL));
    bool visible = true;
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, far_lo, far_hi, NULL, &visible));
    RVH_CHECK(cx, !visible); /* the wall hides it */
    rvh_unwatch(cx, f->o);
    RVH_CHECK(cx, rv_occlusion_begin(f->o, m, (rv_clip){0}, -1.0f) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_add_occluder(f->o, lo, hi, NULL) == RV_ERR_BAD_STATE);
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, far_lo, far_hi, NULL, &visible));
    RVH_CHECK(cx, visible); /* a stale view never culls */
    rv_occlusion_destroy(f->o);
}

void hostile_rv_occlusion_add_occluder(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    float lo[3] = { -1, -1, -20 }, hi[3] = { 1, 1, -19 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_occluder(NULL, lo, hi, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_occluder(f->o, NULL, hi, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_occluder(f->o, lo, NULL, NULL));
    for (int k = 0; k < 3; k++) {
        float bad[3];
        memcpy(bad, lo, sizeof bad);
        bad[k] = hi[k] + 1.0f;
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_occluder(f->o, bad, hi, NULL));
    }
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3];
            memcpy(bad, lo, sizeof bad);
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_occluder(f->o, bad, hi, NULL));
            float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
            m[12 + k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_occluder(f->o, lo, hi, m));
        }
    float projective[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 }; /* last row not 0 0 0 1 */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_occluder(f->o, lo, hi, projective));
    bool v;
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, lo, hi, NULL, &v)); /* freezes */
    RVH_REJECT(cx, RV_ERR_FROZEN, rv_occlusion_add_occluder(f->o, lo, hi, NULL));
    teardown(cx, f);
    /* No begin yet. */
    f = setup(cx, false);
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_add_occluder(f->o, lo, hi, NULL));
    teardown(cx, f);
}

/* A unit cube's planes (outward normals, n . p <= d) at depth 20..21. */
static void cube_planes(float p[6][4])
{
    static const float cube[6][4] = { { -1, 0, 0, 1 }, { 1, 0, 0, 1 }, { 0, -1, 0, 1 },
                                      { 0, 1, 0, 1 }, { 0, 0, -1, 21 }, { 0, 0, 1, -20 } };
    memcpy(p, cube, sizeof cube);
}

void hostile_rv_occlusion_add_convex(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    float p[6][4];
    cube_planes(p);
    rv_occluder_convex c = { (const float (*)[4])p, 6, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(NULL, &c, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, NULL, NULL));
    rv_occluder_convex bad = c;
    bad.planes = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &bad, NULL));
    bad = c;
    bad.plane_count = 3; /* three planes bound nothing */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &bad, NULL));
    bad.plane_count = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &bad, NULL));
    bad.plane_count = RV_OCCLUSION_MAX_PLANES + 1; /* refused before the array is read */
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_add_convex(f->o, &bad, NULL));
    bad.plane_count = UINT32_MAX;
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_add_convex(f->o, &bad, NULL));
    bad = c;
    bad.flags = 1u << 7;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &bad, NULL));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 4; k++) {
            float q[6][4];
            cube_planes(q);
            q[2][k] = rvh_nonfinite[b];
            rv_occluder_convex nf = { (const float (*)[4])q, 6, 0 };
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_convex(f->o, &nf, NULL));
            float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
            m[4 * k + 1] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_convex(f->o, &c, m));
        }
    /* A zero normal; a set open toward +z (unbounded); x <= -1 and x >= 1 (empty); a slab of
     * no thickness (flat). */
    float q[6][4];
    cube_planes(q);
    q[3][0] = q[3][1] = q[3][2] = 0;
    rv_occluder_convex odd = { (const float (*)[4])q, 6, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &odd, NULL));
    cube_planes(q);
    odd.plane_count = 5; /* the +z cap left out */
    memcpy(q[4], q[5], sizeof q[4]);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &odd, NULL));
    cube_planes(q);
    q[1][3] = -2; /* x <= -2 with x >= -1 */
    odd.plane_count = 6;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &odd, NULL));
    cube_planes(q);
    q[1][3] = -1; /* x <= -1 with x >= -1: no volume */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &odd, NULL));
    cube_planes(q);
    q[0][3] = 2e7f; /* reaches beyond 1e7 local units */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &odd, NULL));
    float projective[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_convex(f->o, &c, projective));
    RVH_ACCEPT(cx, rv_occlusion_add_convex(f->o, &c, NULL));
    bool v;
    float lo[3] = { -0.5f, -0.5f, -40 }, hi[3] = { 0.5f, 0.5f, -39 };
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, lo, hi, NULL, &v)); /* freezes */
    RVH_REJECT(cx, RV_ERR_FROZEN, rv_occlusion_add_convex(f->o, &c, NULL));
    teardown(cx, f);
    f = setup(cx, false);
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_add_convex(f->o, &c, NULL));
    teardown(cx, f);
}

void hostile_rv_occlusion_add_mesh(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    float pos[4][3] = { { -1, -1, -20 }, { 1, -1, -20 }, { 1, 1, -20 }, { -1, 1, -20 } };
    uint32_t idx[6] = { 0, 1, 2, 0, 2, 3 };
    rv_occluder_mesh m = { (const float (*)[3])pos, 4, idx, 6, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(NULL, &m, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, NULL, NULL));
    rv_occluder_mesh bad = m;
    bad.positions = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.indices = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.vertex_count = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.index_count = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad.index_count = 5;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.vertex_count = 3; /* index 3 out of range */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.vertex_count = RV_OCCLUSION_MAX_MESH_VERTICES + 1; /* refused before the arrays are read */
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.index_count = 3 * (RV_OCCLUSION_MAX_MESH_TRIANGLES + 1);
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad.index_count = UINT32_MAX;
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad = m;
    bad.flags = 1u << 9;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    bad.flags = RV_OCCLUDER_EXACT; /* exact needs closed */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &bad, NULL));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float q[4][3];
            memcpy(q, pos, sizeof q);
            q[3][k] = rvh_nonfinite[b];
            rv_occluder_mesh nf = { (const float (*)[3])q, 4, idx, 6, 0 };
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_mesh(f->o, &nf, NULL));
            float mx[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
            mx[12 + k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_add_mesh(f->o, &m, mx));
        }
    float projective[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_add_mesh(f->o, &m, projective));
    /* Degenerate triangles are accepted and counted, not refused. */
    uint32_t degenerate[6] = { 0, 0, 1, 0, 1, 2 };
    rv_occluder_mesh some = { (const float (*)[3])pos, 4, degenerate, 6, 0 };
    rvh_unwatch(cx, f->o);
    RVH_CHECK(cx, rv_occlusion_add_mesh(f->o, &some, NULL) == RV_OK);
    rv_occlusion_stats st = rv_occlusion_get_stats(f->o);
    RVH_CHECK(cx, st.triangles_submitted == 2 && st.triangles_degenerate == 1);
    rvh_watch(cx, "the occlusion buffer", occlusion_digest, f->o);
    bool v;
    float lo[3] = { -0.2f, -0.2f, -40 }, hi[3] = { 0.2f, 0.2f, -39 };
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, lo, hi, NULL, &v)); /* freezes */
    RVH_REJECT(cx, RV_ERR_FROZEN, rv_occlusion_add_mesh(f->o, &m, NULL));
    teardown(cx, f);
    f = setup(cx, false);
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_add_mesh(f->o, &m, NULL));
    teardown(cx, f);
}

void hostile_rv_occlusion_freeze(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_freeze(NULL));
    ofix *f = setup(cx, false);
    RVH_REJECT(cx, RV_OK, rv_occlusion_freeze(f->o)); /* no begin yet: a no-op */
    teardown(cx, f);
}

void hostile_rv_occlusion_test_box(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    bool v;
    float lo[3] = { -1, -1, -50 }, hi[3] = { 1, 1, -49 };
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, lo, hi, NULL, &v));
    RVH_CHECK(cx, !v); /* hidden: the refusals below must answer visible */
    rv_result codes[32];
    int n = 0;
    v = false;
    codes[n++] = rv_occlusion_test_box(NULL, lo, hi, NULL, &v);
    RVH_CHECK(cx, v);
    v = false;
    codes[n++] = rv_occlusion_test_box(f->o, NULL, hi, NULL, &v);
    RVH_CHECK(cx, v);
    RVH_CHECK(cx, rv_occlusion_test_box(f->o, lo, hi, NULL, NULL) == RV_ERR_INVALID_ARG);
    float inv[3] = { 2, -1, -50 };
    v = false;
    codes[n++] = rv_occlusion_test_box(f->o, inv, hi, NULL, &v);
    RVH_CHECK(cx, v);
    for (int i = 0; i < n; i++)
        RVH_CHECK(cx, codes[i] == RV_ERR_INVALID_ARG);
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3];
            memcpy(bad, lo, sizeof bad);
            bad[k] = rvh_nonfinite[b];
            v = false;
            RVH_CHECK(cx, rv_occlusion_test_box(f->o, bad, hi, NULL, &v) == RV_ERR_NOT_FINITE && v);
            float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
            m[k] = rvh_nonfinite[b];
            v = false;
            RVH_CHECK(cx, rv_occlusion_test_box(f->o, lo, hi, m, &v) == RV_ERR_NOT_FINITE && v);
        }
    /* A box spanning the float range crosses the near plane: visible. */
    float huge_lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, huge_hi[3] = { FLT_MAX, FLT_MAX, FLT_MAX };
    RVH_ACCEPT(cx, rv_occlusion_test_box(f->o, huge_lo, huge_hi, NULL, &v));
    RVH_CHECK(cx, v);
    teardown(cx, f);
}

void hostile_rv_occlusion_test_sphere(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    bool v;
    float c[3] = { 0, 0, -50 };
    RVH_ACCEPT(cx, rv_occlusion_test_sphere(f->o, c, 1.0f, NULL, &v));
    RVH_CHECK(cx, !v);
    v = false;
    RVH_CHECK(cx, rv_occlusion_test_sphere(f->o, c, -1.0f, NULL, &v) == RV_ERR_INVALID_ARG && v);
    v = false;
    RVH_CHECK(cx, rv_occlusion_test_sphere(f->o, NULL, 1.0f, NULL, &v) == RV_ERR_INVALID_ARG && v);
    RVH_CHECK(cx, rv_occlusion_test_sphere(f->o, c, 1.0f, NULL, NULL) == RV_ERR_INVALID_ARG);
    for (int b = 0; b < RVH_NONFINITE; b++) {
        v = false;
        rv_result r = rv_occlusion_test_sphere(f->o, c, rvh_nonfinite[b], NULL, &v);
        RVH_CHECK(cx, (r == RV_ERR_NOT_FINITE || (rvh_nonfinite[b] == -INFINITY && r == RV_ERR_INVALID_ARG)) && v);
        for (int k = 0; k < 3; k++) {
            float bad[3];
            memcpy(bad, c, sizeof bad);
            bad[k] = rvh_nonfinite[b];
            v = false;
            RVH_CHECK(cx, rv_occlusion_test_sphere(f->o, bad, 1.0f, NULL, &v) == RV_ERR_NOT_FINITE && v);
        }
    }
    RVH_ACCEPT(cx, rv_occlusion_test_sphere(f->o, c, FLT_MAX, NULL, &v));
    RVH_CHECK(cx, v);
    teardown(cx, f);
}

void hostile_rv_occlusion_test_boxes(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    float x0[3] = { -1, NAN, -1 }, x1[3] = { 1, 1, -2 }, y0[3] = { -1, -1, -1 }, y1[3] = { 1, 1, 1 };
    float z0[3] = { -50, -50, -50 }, z1[3] = { -49, -49, -49 };
    rv_occlusion_boxes b = { { x0, y0, z0 }, { x1, y1, z1 }, NULL };
    uint8_t out[3] = { 7, 7, 7 };
    RVH_CHECK(cx, rv_occlusion_test_boxes(NULL, &b, 0, 3, out) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_boxes(f->o, NULL, 0, 3, out) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_boxes(f->o, &b, 0, 3, NULL) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_boxes(f->o, &b, UINT32_MAX, 2, out) == RV_ERR_INVALID_ARG);
    rv_occlusion_boxes holey = b;
    holey.max[1] = NULL;
    RVH_CHECK(cx, rv_occlusion_test_boxes(f->o, &holey, 0, 3, out) == RV_ERR_INVALID_ARG);
    /* Item 1 has a NaN, item 2 is inverted: both answered 1, the first one's code returned;
     * item 0 is hidden behind the wall. */
    RVH_CHECK(cx, rv_occlusion_test_boxes(f->o, &b, 0, 3, out) == RV_ERR_NOT_FINITE);
    RVH_CHECK(cx, out[0] == 0 && out[1] == 1 && out[2] == 1);
    RVH_ACCEPT(cx, rv_occlusion_test_boxes(f->o, &b, 0, 0, out));
    teardown(cx, f);
}

void hostile_rv_occlusion_test_spheres(rvh_ctx *cx)
{
    ofix *f = setup(cx, true);
    float x[3] = { 0, 0, NAN }, y[3] = { 0, 0, 0 }, z[3] = { -50, -50, -50 }, r[3] = { 1, -1, 1 };
    rv_occlusion_spheres s = { { x, y, z }, r, NULL };
    uint8_t out[3] = { 7, 7, 7 };
    RVH_CHECK(cx, rv_occlusion_test_spheres(NULL, &s, 0, 3, out) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_spheres(f->o, NULL, 0, 3, out) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_spheres(f->o, &s, 0, 3, NULL) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_spheres(f->o, &s, 2, UINT32_MAX, out) == RV_ERR_INVALID_ARG);
    rv_occlusion_spheres holey = s;
    holey.radius = NULL;
    RVH_CHECK(cx, rv_occlusion_test_spheres(f->o, &holey, 0, 3, out) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_occlusion_test_spheres(f->o, &s, 0, 3, out) == RV_ERR_INVALID_ARG); /* item 1 first */
    RVH_CHECK(cx, out[0] == 0 && out[1] == 1 && out[2] == 1);
    teardown(cx, f);
}

void hostile_rv_occlusion_get_stats(rvh_ctx *cx)
{
    rv_occlusion_stats s = rv_occlusion_get_stats(NULL);
    RVH_CHECK(cx, s.tests == 0 && s.culled == 0 && s.occluders_submitted == 0);
}

void hostile_rv_occlusion_alloc_stats(rvh_ctx *cx)
{
    rv_alloc_stats a = rv_occlusion_alloc_stats(NULL);
    RVH_CHECK(cx, a.allocations == 0 && a.bytes_live == 0);
}

void hostile_rv_occlusion_level_count(rvh_ctx *cx)
{
    RVH_CHECK(cx, rv_occlusion_level_count(NULL) == 0);
    ofix *f = setup(cx, false);
    RVH_CHECK(cx, rv_occlusion_level_count(f->o) == 0); /* before a begin */
    teardown(cx, f);
}

void hostile_rv_occlusion_debug_image(rvh_ctx *cx)
{
    ofix *f = setup(cx, false);
    uint8_t px[64 * 64];
    uint32_t w = 7, h = 7;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_debug_image(NULL, 0, px, sizeof px, &w, &h));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_debug_image(f->o, 0, px, sizeof px, &w, &h)); /* no begin */
    teardown(cx, f);
    f = setup(cx, true);
    uint32_t levels = 0;
    RVH_ACCEPT(cx, rv_occlusion_freeze(f->o));
    levels = rv_occlusion_level_count(f->o);
    RVH_CHECK(cx, levels >= 1 && levels <= RV_OCCLUSION_MAX_LEVELS);
    rvh_poison(px, sizeof px);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_debug_image(f->o, levels, px, sizeof px, &w, &h));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_debug_image(f->o, UINT32_MAX, px, sizeof px, &w, &h));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_debug_image(f->o, 0, px, 64 * 64 - 1, &w, &h));
    RVH_CHECK(cx, rvh_is_poisoned(px, sizeof px) && w == 7 && h == 7);
    RVH_ACCEPT(cx, rv_occlusion_debug_image(f->o, 0, NULL, 0, &w, &h)); /* size only */
    RVH_CHECK(cx, w == 64 && h == 64);
    teardown(cx, f);
}

void hostile_rv_occlusion_debug_depth_range(rvh_ctx *cx)
{
    ofix *f = setup(cx, false);
    float lo = 7, hi = 7;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_debug_depth_range(NULL, &lo, &hi));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_debug_depth_range(f->o, &lo, &hi)); /* no begin */
    RVH_CHECK(cx, lo == 7 && hi == 7);
    teardown(cx, f);
    f = setup(cx, true);
    RVH_ACCEPT(cx, rv_occlusion_freeze(f->o));
    RVH_ACCEPT(cx, rv_occlusion_debug_depth_range(f->o, NULL, NULL)); /* outputs optional */
    RVH_ACCEPT(cx, rv_occlusion_debug_depth_range(f->o, &lo, NULL));
    RVH_ACCEPT(cx, rv_occlusion_debug_depth_range(f->o, &lo, &hi));
    /* the fixture's one occluder spans view depths 9..10: its far side is stored */
    RVH_CHECK(cx, isfinite(lo) && isfinite(hi) && 9 <= lo && lo <= hi && hi <= 10.5f);
    teardown(cx, f);
}

/* ---- the depth feed ----------------------------------------------------------------------- */

/* A 64-texel buffer taking feeds up to 16 x 16, begun with the fixture's view, and a 16 x 16
 * float feed of a surface at window depth 0.9 drawn with the same matrix. */
typedef struct feed_fix {
    ofix base;
    float depth[16 * 16];
    float vp[16];
    rv_depth_feed feed;
} feed_fix;

static feed_fix *feed_setup(rvh_ctx *cx, bool begin)
{
    static feed_fix f;
    memset(&f, 0, sizeof f);
    rv_occlusion_desc d = {0};
    d.allocator = rvt_allocator(&f.base.alloc);
    d.width = 64;
    d.feed_max_width = 16;
    d.feed_max_height = 16;
    RVH_ACCEPT(cx, rv_occlusion_create(&d, &f.base.o));
    perspective(f.vp);
    for (int i = 0; i < 16 * 16; i++)
        f.depth[i] = 0.9f;
    f.feed.texels = f.depth;
    f.feed.width = 16;
    f.feed.height = 16;
    f.feed.view_projection = f.vp;
    f.feed.age = 1;
    if (begin)
        RVH_ACCEPT(cx, rv_occlusion_begin(f.base.o, f.vp, (rv_clip){0}, 1.0f));
    rvh_watch(cx, "the occlusion buffer", occlusion_digest, f.base.o);
    return &f;
}

void hostile_rv_occlusion_feed_depth(rvh_ctx *cx)
{
    feed_fix *f = feed_setup(cx, false);
    rv_occlusion *o = f->base.o;
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_occlusion_feed_depth(o, &f->feed)); /* no begin yet */
    teardown(cx, &f->base);
    f = feed_setup(cx, true);
    o = f->base.o;
    RVH_ACCEPT(cx, rv_occlusion_feed_depth(o, &f->feed));
    RVH_CHECK(cx, rv_occlusion_get_feed_stats(o).feeds_used == 1);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(NULL, &f->feed));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, NULL));
    rv_depth_feed g = f->feed;
    g.texels = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    g = f->feed;
    g.view_projection = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    const uint32_t sizes[3] = { 0, 17, UINT32_MAX };
    const rv_result size_codes[3] = { RV_ERR_INVALID_ARG, RV_ERR_CAPACITY, RV_ERR_CAPACITY };
    for (int k = 0; k < 3; k++) {
        g = f->feed;
        g.width = sizes[k];
        RVH_REJECT(cx, size_codes[k], rv_occlusion_feed_depth(o, &g));
        g = f->feed;
        g.height = sizes[k];
        RVH_REJECT(cx, size_codes[k], rv_occlusion_feed_depth(o, &g));
    }
    const int bad_formats[3] = { RV_DEPTH_FORMAT_COUNT_, -1, 1000 };
    for (int k = 0; k < 3; k++) {
        g = f->feed;
        g.format = (rv_depth_format)bad_formats[k];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    }
    const size_t bad_pitch[3] = { 15 * 4, 16 * 4 + 1, SIZE_MAX - 3 };
    for (int k = 0; k < 3; k++) {
        g = f->feed;
        g.row_pitch = bad_pitch[k];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    }
    g = f->feed;
    g.texels = (const uint8_t *)f->depth + 1; /* misaligned */
    g.width = 8;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    float m[16];
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int e = 0; e < 16; e += 5) {
            memcpy(m, f->vp, sizeof m);
            m[e] = rvh_nonfinite[b];
            g = f->feed;
            g.view_projection = m;
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_occlusion_feed_depth(o, &g));
        }
    memset(m, 0, sizeof m);
    g = f->feed;
    g.view_projection = m;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_occlusion_feed_depth(o, &g));
    /* Texel values are never errors: NaN, infinities and huge values hide nothing. */
    for (int i = 0; i < 16 * 16; i++)
        f->depth[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -1e30f;
    rvh_unwatch(cx, o);
    RVH_ACCEPT(cx, rv_occlusion_feed_depth(o, &f->feed));
    RVH_CHECK(cx, rv_occlusion_get_feed_stats(o).texels_invalid == 16 * 16);
    RVH_CHECK(cx, rv_occlusion_get_feed_stats(o).texels_reprojected == 0);
    rvh_watch(cx, "the occlusion buffer", occlusion_digest, o);
    RVH_ACCEPT(cx, rv_occlusion_freeze(o));
    RVH_REJECT(cx, RV_ERR_FROZEN, rv_occlusion_feed_depth(o, &f->feed));
    teardown(cx, &f->base);
    /* A buffer made without a feed capacity refuses every feed. */
    ofix *plain = setup(cx, true);
    feed_fix *shape = feed_setup(cx, false);
    rv_depth_feed h = shape->feed;
    teardown(cx, &shape->base);
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_occlusion_feed_depth(plain->o, &h));
    teardown(cx, plain);
}

void hostile_rv_occlusion_get_feed_stats(rvh_ctx *cx)
{
    rv_occlusion_feed_stats s = rv_occlusion_get_feed_stats(NULL);
    RVH_CHECK(cx, s.feeds_used == 0 && s.texels_fed == 0 && s.objects_hidden_by_feed == 0);
    ofix *f = setup(cx, true); /* no feed capacity */
    s = rv_occlusion_get_feed_stats(f->o);
    RVH_CHECK(cx, s.feeds_used == 0 && s.texels_reprojected == 0);
    teardown(cx, f);
}
