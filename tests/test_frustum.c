#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "frustum.h"
#include "support/rvt.h"

#include <math.h>
#include <string.h>

/* ---- matrices (column-major, clip = M * p), built here so the tests do not trust cglm ---- */

static void mat_identity(float m[16])
{
    memset(m, 0, 16 * sizeof(float));
    m[0] = m[5] = m[10] = m[15] = 1.0f;
}

/* out = a * b */
static void mat_mul(const float a[16], const float b[16], float out[16])
{
    float r[16];
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 4; i++) {
            double s = 0.0;
            for (int k = 0; k < 4; k++)
                s += (double)a[k * 4 + i] * (double)b[c * 4 + k];
            r[c * 4 + i] = (float)s;
        }
    memcpy(out, r, sizeof r);
}

/* Right-handed view looking down -Z; depth mapped per clip. far <= 0: infinite. */
static void mat_perspective(float fov_y, float aspect, float n, float f, rv_clip clip, float m[16])
{
    memset(m, 0, 16 * sizeof(float));
    float t = 1.0f / tanf(fov_y * 0.5f);
    m[0] = t / aspect;
    m[5] = t;
    m[11] = -1.0f;
    /* clip z = A * zv + B, w = -zv: choose A, B so zv = -n maps to z_near, zv = -f to z_far. */
    double zn = clip.reversed_z ? 1.0 : (clip.depth_zero_to_one ? 0.0 : -1.0);
    double zf = clip.reversed_z ? (clip.depth_zero_to_one ? 0.0 : -1.0) : 1.0;
    double A, B;
    if (f > 0.0f) {
        /* (A * -n + B) / n = zn, (A * -f + B) / f = zf */
        A = (zn * n - zf * f) / (f - n);
        B = n * (zn + A);
    } else {
        /* f -> infinity: A -> -zf, B = n * (zn + A) */
        A = -zf;
        B = n * (zn + A);
    }
    m[10] = (float)A;
    m[14] = (float)B;
}

static void mat_ortho(float l, float r, float b, float t, float n, float f, rv_clip clip, float m[16])
{
    mat_identity(m);
    m[0] = 2.0f / (r - l);
    m[5] = 2.0f / (t - b);
    m[12] = -(r + l) / (r - l);
    m[13] = -(t + b) / (t - b);
    double zn = clip.reversed_z ? 1.0 : (clip.depth_zero_to_one ? 0.0 : -1.0);
    double zf = clip.reversed_z ? (clip.depth_zero_to_one ? 0.0 : -1.0) : 1.0;
    /* z = A * zv + B with zv = -n -> zn, zv = -f -> zf */
    double A = (zf - zn) / (-(double)f + n);
    double B = zn + A * n;
    m[10] = (float)A;
    m[14] = (float)B;
}

/* A view matrix: camera at eye, rotated by yaw about Y and pitch about X. */
static void mat_view(const float eye[3], float yaw, float pitch, float m[16])
{
    float ry[16], rx[16], tr[16], rot[16];
    mat_identity(ry);
    mat_identity(rx);
    mat_identity(tr);
    /* inverse rotation = transpose */
    ry[0] = cosf(yaw); ry[8] = -sinf(yaw); ry[2] = sinf(yaw); ry[10] = cosf(yaw);
    rx[5] = cosf(pitch); rx[9] = sinf(pitch); rx[6] = -sinf(pitch); rx[10] = cosf(pitch);
    tr[12] = -eye[0]; tr[13] = -eye[1]; tr[14] = -eye[2];
    mat_mul(rx, ry, rot);
    mat_mul(rot, tr, m);
}

/* Brute force: is p inside the clip volume of m under clip? Computed in double. Returns
 * the smallest margin (how far inside, in clip units normalised by w-ish scale) via *margin. */
static bool clip_inside(const float m[16], rv_clip clip, const float p[3], double *margin)
{
    double c[4];
    for (int i = 0; i < 4; i++)
        c[i] = m[i] * (double)p[0] + m[4 + i] * (double)p[1] + m[8 + i] * (double)p[2] + m[12 + i];
    double lo = clip.depth_zero_to_one ? 0.0 : -1.0;
    double g[6] = {c[3] + c[0], c[3] - c[0], c[3] + c[1], c[3] - c[1], c[2] - lo * c[3], c[3] - c[2]};
    double mn = g[0];
    for (int i = 1; i < 6; i++)
        mn = fmin(mn, g[i]);
    *margin = mn;
    return mn >= 0.0;
}

static bool planes_inside(const rv_frustum *f, const float p[3], double *margin)
{
    double mn = INFINITY;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *pl = f->planes[i];
        double d = pl[0] * (double)p[0] + pl[1] * (double)p[1] + pl[2] * (double)p[2] + pl[3];
        mn = fmin(mn, d);
    }
    *margin = mn;
    return mn >= 0.0;
}

static void assert_frustum_sane(const rv_frustum *f)
{
    assert_int_equal(f->plane_mask & ~RVI_FRUSTUM_ALL_PLANES, 0);
    for (int i = 0; i < 6; i++) {
        for (int k = 0; k < 4; k++)
            assert_true(isfinite(f->planes[i][k]));
        if (f->plane_mask & (1u << i)) {
            const float *pl = f->planes[i];
            float len = sqrtf(pl[0] * pl[0] + pl[1] * pl[1] + pl[2] * pl[2]);
            assert_true(fabsf(len - 1.0f) < 1e-5f);
        }
    }
}

static const rv_clip clips[4] = {
    {false, false}, {true, false}, {false, true}, {true, true},
};

/* Random points around the camera; every point whose clip-space test is clear of the
 * boundary by a tolerance must get the same answer from the planes. */
static void check_against_clip_test(const float vp[16], rv_clip clip, const rv_frustum *f,
                                    const float eye[3], float far_extent, float near_extent,
                                    uint64_t *seed, int points)
{
    int inside = 0, outside = 0;
    for (int k = 0; k < points; k++) {
        /* Half the points near the camera so the near plane is exercised as hard as the rest. */
        float extent = (k & 1) ? near_extent : far_extent;
        float p[3];
        for (int a = 0; a < 3; a++)
            p[a] = eye[a] + rvt_uniform(seed, -extent, extent);
        double cm, pm;
        bool ci = clip_inside(vp, clip, p, &cm);
        bool pi = planes_inside(f, p, &pm);
        /* Near a plane (in world distance) either answer is acceptable. */
        if (fabs(pm) < 1e-3 * extent)
            continue;
        if (ci != pi) {
            print_error("mismatch clip %d/%d point (%g %g %g) clip margin %g plane margin %g\n",
                        clip.depth_zero_to_one, clip.reversed_z, p[0], p[1], p[2], cm, pm);
        }
        assert_int_equal(ci, pi);
        inside += ci;
        outside += !ci;
    }
    assert_true(inside > 0);
    assert_true(outside > 0);
}

static void test_perspective_planes_match_clip_test_in_every_convention(void **state)
{
    (void)state;
    uint64_t seed = 7;
    for (int ci = 0; ci < 4; ci++) {
        for (int cam = 0; cam < RVT_HEAVY(40, 8); cam++) {
            float eye[3] = {rvt_uniform(&seed, -100, 100), rvt_uniform(&seed, -100, 100),
                            rvt_uniform(&seed, -100, 100)};
            float view[16], proj[16], vp[16];
            mat_view(eye, rvt_uniform(&seed, -3.1f, 3.1f), rvt_uniform(&seed, -1.5f, 1.5f), view);
            float fov = rvt_uniform(&seed, 0.3f, 2.0f);
            mat_perspective(fov, rvt_uniform(&seed, 0.5f, 2.5f), 0.5f, 50.0f, clips[ci], proj);
            mat_mul(proj, view, vp);
            rv_frustum f;
            assert_int_equal(rv_frustum_from_view_projection(vp, clips[ci], &f), RV_OK);
            assert_frustum_sane(&f);
            assert_int_equal(f.plane_mask, RVI_FRUSTUM_ALL_PLANES);
            assert_false(f.orthographic);
            assert_false(f.infinite_far);
            check_against_clip_test(vp, clips[ci], &f, eye, 60.0f, 1.5f, &seed, RVT_HEAVY(4000, 1000));
        }
    }
}

static void test_infinite_far_is_recognised_and_dropped(void **state)
{
    (void)state;
    uint64_t seed = 11;
    for (int ci = 0; ci < 4; ci++) {
        for (int cam = 0; cam < RVT_HEAVY(40, 8); cam++) {
            float eye[3] = {rvt_uniform(&seed, -1000, 1000), rvt_uniform(&seed, -10, 10),
                            rvt_uniform(&seed, -1000, 1000)};
            float view[16], proj[16], vp[16];
            mat_view(eye, rvt_uniform(&seed, -3.1f, 3.1f), rvt_uniform(&seed, -1.5f, 1.5f), view);
            mat_perspective(1.0f, 1.5f, 0.1f, 0.0f, clips[ci], proj);
            mat_mul(proj, view, vp);
            rv_frustum f;
            assert_int_equal(rv_frustum_from_view_projection(vp, clips[ci], &f), RV_OK);
            assert_frustum_sane(&f);
            assert_true(f.infinite_far);
            assert_false(f.orthographic);
            assert_int_equal(f.plane_mask, RVI_FRUSTUM_ALL_PLANES & ~(1u << 5));
            check_against_clip_test(vp, clips[ci], &f, eye, 500.0f, 0.3f, &seed, RVT_HEAVY(4000, 1000));
        }
    }
}

/* Rounding noise of a float view-projection must not turn the missing far plane of an
 * infinite projection into a plane of random direction. */
static void test_noisy_infinite_far_is_still_dropped(void **state)
{
    (void)state;
    uint64_t seed = 29;
    for (int ci = 0; ci < 4; ci++) {
        for (int cam = 0; cam < RVT_HEAVY(200, 50); cam++) {
            float eye[3] = {rvt_uniform(&seed, -1000, 1000), rvt_uniform(&seed, -10, 10),
                            rvt_uniform(&seed, -1000, 1000)};
            float view[16], proj[16], vp[16];
            mat_view(eye, rvt_uniform(&seed, -3.1f, 3.1f), rvt_uniform(&seed, -1.5f, 1.5f), view);
            mat_perspective(1.0f, 1.5f, 0.1f, 0.0f, clips[ci], proj);
            mat_mul(proj, view, vp);
            for (int i = 0; i < 16; i++) /* a few ulps of noise, as a float product has */
                vp[i] = nextafterf(vp[i], (rvt_next(&seed) & 1) ? INFINITY : -INFINITY);
            rv_frustum f;
            assert_int_equal(rv_frustum_from_view_projection(vp, clips[ci], &f), RV_OK);
            assert_frustum_sane(&f);
            assert_true(f.infinite_far);
            assert_int_equal(f.plane_mask, RVI_FRUSTUM_ALL_PLANES & ~(1u << 5));
        }
    }
}

static void test_orthographic_is_recognised_and_matches_clip_test(void **state)
{
    (void)state;
    uint64_t seed = 13;
    for (int ci = 0; ci < 4; ci++) {
        for (int cam = 0; cam < RVT_HEAVY(40, 8); cam++) {
            float eye[3] = {rvt_uniform(&seed, -100, 100), rvt_uniform(&seed, -100, 100),
                            rvt_uniform(&seed, -100, 100)};
            float view[16], proj[16], vp[16];
            mat_view(eye, rvt_uniform(&seed, -3.1f, 3.1f), rvt_uniform(&seed, -1.5f, 1.5f), view);
            mat_ortho(-20, 30, -10, 25, 1.0f, 40.0f, clips[ci], proj);
            mat_mul(proj, view, vp);
            rv_frustum f;
            assert_int_equal(rv_frustum_from_view_projection(vp, clips[ci], &f), RV_OK);
            assert_frustum_sane(&f);
            assert_true(f.orthographic);
            assert_false(f.infinite_far);
            assert_int_equal(f.plane_mask, RVI_FRUSTUM_ALL_PLANES);
            check_against_clip_test(vp, clips[ci], &f, eye, 50.0f, 3.0f, &seed, RVT_HEAVY(4000, 1000));
        }
    }
}

static void test_degenerate_matrices_never_give_nan_planes(void **state)
{
    (void)state;
    float zero[16] = {0};
    rv_frustum f;
    memset(&f, 0xFF, sizeof f);
    assert_int_equal(rv_frustum_from_view_projection(zero, clips[0], &f), RV_OK);
    assert_frustum_sane(&f);
    assert_int_equal(f.plane_mask, 0);
    /* Rank-deficient: x and y rows equal, z row zero. */
    float flat[16] = {1, 1, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(rv_frustum_from_view_projection(flat, clips[1], &f), RV_OK);
    assert_frustum_sane(&f);
    /* Garbage matrices with wild magnitudes. */
    uint64_t seed = 17;
    for (int k = 0; k < RVT_HEAVY(200000, 20000); k++) {
        float m[16];
        for (int i = 0; i < 16; i++) {
            uint64_t r = rvt_next(&seed);
            float mag = ldexpf(1.0f, (int)(r % 200) - 100);
            m[i] = (r >> 8) % 4 == 0 ? 0.0f : mag * rvt_uniform(&seed, -1, 1);
        }
        assert_int_equal(rv_frustum_from_view_projection(m, clips[k & 3], &f), RV_OK);
        assert_frustum_sane(&f);
    }
}

static void test_bad_matrix_arguments_leave_output_unchanged(void **state)
{
    (void)state;
    float m[16];
    mat_identity(m);
    rv_frustum f, before;
    memset(&f, 0x5A, sizeof f);
    before = f;
    assert_int_equal(rv_frustum_from_view_projection(NULL, clips[0], &f), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_frustum_from_view_projection(m, clips[0], NULL), RV_ERR_INVALID_ARG);
    m[7] = NAN;
    assert_int_equal(rv_frustum_from_view_projection(m, clips[0], &f), RV_ERR_NOT_FINITE);
    m[7] = INFINITY;
    assert_int_equal(rv_frustum_from_view_projection(m, clips[0], &f), RV_ERR_NOT_FINITE);
    assert_memory_equal(&f, &before, sizeof f);
}

/* ---- classification ---- */

static void standard_frustum(rv_frustum *f, float vp[16])
{
    float eye[3] = {0, 0, 0}, view[16], proj[16];
    mat_view(eye, 0.0f, 0.0f, view);
    mat_perspective(1.0472f, 1.0f, 1.0f, 100.0f, clips[0], proj);
    mat_mul(proj, view, vp);
    assert_int_equal(rv_frustum_from_view_projection(vp, clips[0], f), RV_OK);
}

/* Brute force over planes in double: outside when wholly outside one plane, inside when
 * wholly inside every plane. */
static rv_containment reference_sphere(const rv_frustum *f, const float c[3], float r, double *slack)
{
    bool inside = true;
    double s = INFINITY;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *pl = f->planes[i];
        double d = pl[0] * (double)c[0] + pl[1] * (double)c[1] + pl[2] * (double)c[2] + pl[3];
        s = fmin(s, fmin(fabs(d + r), fabs(d - r)));
        if (d < -r) {
            *slack = fabs(d + r);
            return RV_OUTSIDE;
        }
        if (d < r)
            inside = false;
    }
    *slack = s;
    return inside ? RV_INSIDE : RV_INTERSECTING;
}

static void test_sphere_classification_matches_reference(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    uint64_t seed = 19;
    int counts[3] = {0};
    for (int k = 0; k < RVT_HEAVY(200000, 20000); k++) {
        float c[3] = {rvt_uniform(&seed, -120, 120), rvt_uniform(&seed, -120, 120), rvt_uniform(&seed, -120, 120)};
        float r = rvt_uniform(&seed, 0, 20);
        double slack;
        rv_containment want = reference_sphere(&f, c, r, &slack);
        rv_containment got = rv_frustum_classify_sphere(&f, c, r);
        if (slack < 1e-4 * (r + 1.0f))
            continue;
        assert_int_equal(got, want);
        counts[got]++;
    }
    assert_true(counts[RV_OUTSIDE] > 0 && counts[RV_INSIDE] > 0 && counts[RV_INTERSECTING] > 0);
}

static void test_masked_classification_inherits_planes(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    /* A big parent sphere straddling only the far plane (z = -100), well inside the sides. */
    float parent[3] = {0, 0, -95};
    uint32_t mask = f.plane_mask;
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, parent, 8.0f, &mask), RV_INTERSECTING);
    assert_int_equal(mask, 1u << 5);
    /* Children inside the parent test only the far plane. */
    float child_in[3] = {0, 0, -92};
    uint32_t m2 = mask;
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, child_in, 1.0f, &m2), RV_INSIDE);
    assert_int_equal(m2, 0);
    float child_out[3] = {0, 0, -102};
    m2 = mask;
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, child_out, 1.0f, &m2), RV_OUTSIDE);
    /* A plane cleared from the mask is not tested: a point far left is "inside" for a mask
     * holding only the far plane. */
    float left[3] = {-500, 0, -50};
    m2 = 1u << 5;
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, left, 1.0f, &m2), RV_INSIDE);
    /* Bits outside plane_mask are ignored. */
    rv_frustum g = f;
    g.plane_mask &= ~1u;
    m2 = RVI_FRUSTUM_ALL_PLANES | 0xFF00u;
    assert_int_equal(rv_frustum_classify_sphere_masked(&g, left, 1.0f, &m2), RV_INSIDE);
    assert_int_equal(m2, 0);
}

static void test_nan_and_bad_spheres_classify_as_intersecting(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    float far_out[3] = {0, 0, 500};
    assert_int_equal(rv_frustum_classify_sphere(&f, far_out, 1.0f), RV_OUTSIDE);
    assert_int_equal(rv_frustum_classify_sphere(&f, far_out, NAN), RV_INTERSECTING);
    assert_int_equal(rv_frustum_classify_sphere(&f, far_out, -1.0f), RV_INTERSECTING);
    float nan_c[3] = {0, NAN, 500};
    assert_int_equal(rv_frustum_classify_sphere(&f, nan_c, 1.0f), RV_INTERSECTING);
    uint32_t mask = f.plane_mask;
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, nan_c, 1.0f, &mask), RV_INTERSECTING);
    assert_int_equal(mask, f.plane_mask);
    assert_int_equal(rv_frustum_classify_sphere(NULL, far_out, 1.0f), RV_INTERSECTING);
    assert_int_equal(rv_frustum_classify_sphere(&f, NULL, 1.0f), RV_INTERSECTING);
    assert_int_equal(rv_frustum_classify_sphere_masked(&f, far_out, 1.0f, NULL), RV_INTERSECTING);
    /* A plane distance whose float sum overflows is no proof of outside: the exact distance
     * of this centre is -2.01e38, inside the radius 2.1e38. */
    rv_frustum tilted = { .plane_mask = 1 };
    tilted.planes[0][0] = tilted.planes[0][1] = -0.6f;
    tilted.planes[0][2] = (float)sqrt(1.0 - 0.72);
    float huge[3] = { 3e38f, 3e38f, 3e38f };
    assert_int_equal(rv_frustum_classify_sphere(&tilted, huge, 2.1e38f), RV_INTERSECTING);
    float bmin[3] = {0, 0, 400}, bmax[3] = {1, 1, NAN};
    assert_int_equal(rv_frustum_classify_box(&f, bmin, bmax), RV_INTERSECTING);
    float inv_min[3] = {5, 5, 405}, inv_max[3] = {1, 1, 401};
    assert_int_equal(rv_frustum_classify_box(&f, inv_min, inv_max), RV_INTERSECTING);
    assert_int_equal(rv_frustum_classify_box(NULL, bmin, bmin), RV_INTERSECTING);
}

/* Box reference: sample the 8 corners; outside when all corners are outside one plane,
 * inside when all corners are inside all planes. */
static rv_containment reference_box(const rv_frustum *f, const float mn[3], const float mx[3], double *slack)
{
    bool inside = true;
    double s = INFINITY;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *pl = f->planes[i];
        double lo = INFINITY, hi = -INFINITY;
        for (int c = 0; c < 8; c++) {
            double p[3] = {(c & 1) ? mx[0] : mn[0], (c & 2) ? mx[1] : mn[1], (c & 4) ? mx[2] : mn[2]};
            double d = pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] + pl[3];
            lo = fmin(lo, d);
            hi = fmax(hi, d);
        }
        s = fmin(s, fmin(fabs(lo), fabs(hi)));
        if (hi < 0) {
            *slack = fabs(hi);
            return RV_OUTSIDE;
        }
        if (lo < 0)
            inside = false;
    }
    *slack = s;
    return inside ? RV_INSIDE : RV_INTERSECTING;
}

static void test_box_classification_matches_reference(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    uint64_t seed = 23;
    int counts[3] = {0};
    for (int k = 0; k < RVT_HEAVY(200000, 20000); k++) {
        float mn[3], mx[3];
        for (int a = 0; a < 3; a++) {
            mn[a] = rvt_uniform(&seed, -120, 120);
            mx[a] = mn[a] + rvt_uniform(&seed, 0, 20);
        }
        double slack;
        rv_containment want = reference_box(&f, mn, mx, &slack);
        if (slack < 1e-3)
            continue;
        assert_int_equal(rv_frustum_classify_box(&f, mn, mx), want);
        counts[want]++;
    }
    assert_true(counts[RV_OUTSIDE] > 0 && counts[RV_INSIDE] > 0 && counts[RV_INTERSECTING] > 0);
}

/* ---- rv_cull_spheres ---- */

/* Reference for one sphere against the valid planes, in double: 1 keep, 0 cull, -1 either
 * (within float rounding of tangency, or within 1e-5 r of it). */
static int reference_keep(const rv_frustum *f, const float s[4])
{
    if (isnan(s[0]) || isnan(s[1]) || isnan(s[2]) || isnan(s[3]) || s[3] < 0.0f)
        return 1;
    int verdict = 1;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *pl = f->planes[i];
        double t[4] = {pl[0] * (double)s[0], pl[1] * (double)s[1], pl[2] * (double)s[2], pl[3]};
        double d = t[0] + t[1] + t[2] + t[3];
        double band = 1e-5 * s[3] + 1e-6 * (fabs(t[0]) + fabs(t[1]) + fabs(t[2]) + fabs(t[3]));
        if (d + s[3] < -band)
            return 0;
        if (fabs(d + s[3]) <= band)
            verdict = -1;
    }
    return verdict;
}

typedef struct cull_case {
    rv_frustum frustum;
    uint32_t count;
    float *spheres;   /* original, AoS */
    int *verdict;     /* reference per sphere */
} cull_case;

static void random_camera_frustum(uint64_t *seed, int kind, rv_frustum *f, float eye[3])
{
    float view[16], proj[16], vp[16];
    for (int a = 0; a < 3; a++)
        eye[a] = rvt_uniform(seed, -200, 200);
    mat_view(eye, rvt_uniform(seed, -3.1f, 3.1f), rvt_uniform(seed, -1.5f, 1.5f), view);
    rv_clip clip = clips[kind & 3];
    if (kind < 4)
        mat_perspective(rvt_uniform(seed, 0.4f, 1.8f), rvt_uniform(seed, 0.5f, 2.0f), 0.5f, 150.0f, clip, proj);
    else if (kind < 8)
        mat_perspective(1.0f, 1.7f, 0.1f, 0.0f, clip, proj);
    else
        mat_ortho(-40, 40, -30, 30, 1.0f, 120.0f, clip, proj);
    mat_mul(proj, view, vp);
    assert_int_equal(rv_frustum_from_view_projection(vp, clip, f), RV_OK);
}

/* Spheres around the camera; a share placed exactly tangent to a plane (the band where
 * paths could disagree if their arithmetic differed) and a few hostile ones. */
static void make_cull_case(uint64_t *seed, int kind, uint32_t count, cull_case *c)
{
    float eye[3];
    random_camera_frustum(seed, kind, &c->frustum, eye);
    c->count = count;
    c->spheres = test_malloc(sizeof(float) * 4 * (count ? count : 1));
    c->verdict = test_malloc(sizeof(int) * (count ? count : 1));
    for (uint32_t i = 0; i < count; i++) {
        float *s = c->spheres + 4 * (size_t)i;
        for (int a = 0; a < 3; a++)
            s[a] = eye[a] + rvt_uniform(seed, -160, 160);
        s[3] = rvt_uniform(seed, 0, 10);
        uint64_t pick = rvt_next(seed) % 100;
        if (pick < 10) {
            int p = (int)(rvt_next(seed) % 6);
            if (c->frustum.plane_mask & (1u << p)) {
                const float *pl = c->frustum.planes[p];
                float d = pl[0] * s[0] + pl[1] * s[1] + pl[2] * s[2] + pl[3];
                for (int a = 0; a < 3; a++) /* centre at distance -r from plane p */
                    s[a] -= (d + s[3]) * pl[a];
            }
        } else if (pick == 10) {
            s[rvt_next(seed) % 4] = NAN;
        } else if (pick == 11) {
            s[3] = -1.0f;
        } else if (pick == 12) {
            s[3] = 0.0f;
        }
        c->verdict[i] = reference_keep(&c->frustum, s);
    }
}

static void free_cull_case(cull_case *c)
{
    test_free(c->spheres);
    test_free(c->verdict);
}

static bool same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Checks one result: ids ascending (stable), every sphere intact and with its own id,
 * every must-keep present, no must-cull present. */
static void check_cull_result(const cull_case *c, const float *x, const float *y, const float *z,
                              const float *r, size_t step, const uint32_t *ids, uint32_t kept)
{
    uint32_t next = 0;
    for (uint32_t j = 0; j < kept; j++) {
        uint32_t id = ids[j];
        assert_true(id < c->count);
        assert_true(j == 0 || id > ids[j - 1]);
        for (; next < id; next++)
            assert_int_not_equal(c->verdict[next], 1); /* skipped a must-keep sphere */
        next = id + 1;
        assert_int_not_equal(c->verdict[id], 0);
        const float *o = c->spheres + 4 * (size_t)id;
        assert_true(same_float(x[j * step], o[0]) && same_float(y[j * step], o[1]) &&
                    same_float(z[j * step], o[2]) && same_float(r[j * step], o[3]));
    }
    for (; next < c->count; next++)
        assert_int_not_equal(c->verdict[next], 1);
}

/* Runs the AoS and SoA forms on a level with an id payload; returns the kept ids (AoS). */
static uint32_t run_level(const cull_case *c, rvi_simd_level level, uint32_t *ids_out)
{
    uint32_t n = c->count;
    size_t cap = n ? n : 1;
    float *aos = test_malloc(sizeof(float) * 4 * cap);
    float *sx = test_malloc(sizeof(float) * cap), *sy = test_malloc(sizeof(float) * cap);
    float *sz = test_malloc(sizeof(float) * cap), *sr = test_malloc(sizeof(float) * cap);
    uint32_t *ids = test_malloc(sizeof(uint32_t) * cap);
    uint32_t *ids2 = test_malloc(sizeof(uint32_t) * cap);
    memcpy(aos, c->spheres, sizeof(float) * 4 * n);
    for (uint32_t i = 0; i < n; i++) {
        sx[i] = c->spheres[4 * i];
        sy[i] = c->spheres[4 * i + 1];
        sz[i] = c->spheres[4 * i + 2];
        sr[i] = c->spheres[4 * i + 3];
        ids[i] = ids2[i] = i;
    }
    uint32_t kept_aos = 0xDEADu, kept_soa = 0xBEEFu;
    assert_int_equal(rvi_cull_spheres_level(level, &c->frustum, aos, n, ids, sizeof(uint32_t), &kept_aos), RV_OK);
    assert_int_equal(rvi_cull_spheres_soa_level(level, &c->frustum, sx, sy, sz, sr, n, ids2, sizeof(uint32_t),
                                                &kept_soa), RV_OK);
    check_cull_result(c, aos, aos + 1, aos + 2, aos + 3, 4, ids, kept_aos);
    check_cull_result(c, sx, sy, sz, sr, 1, ids2, kept_soa);
    assert_int_equal(kept_aos, kept_soa);
    assert_memory_equal(ids, ids2, sizeof(uint32_t) * kept_aos);
    memcpy(ids_out, ids, sizeof(uint32_t) * kept_aos);
    test_free(aos);
    test_free(sx);
    test_free(sy);
    test_free(sz);
    test_free(sr);
    test_free(ids);
    test_free(ids2);
    return kept_aos;
}

static void test_cull_spheres_keeps_brute_force_set_on_every_level(void **state)
{
    (void)state;
    rvi_simd_level best = rvi_simd_best_level();
    print_message("cull_spheres levels tested: scalar .. %s\n", rvi_simd_level_name(best));
    uint64_t seed = 31;
    int rounds = RVT_HEAVY(240, 48);
    uint64_t kept_total = 0, culled_total = 0;
    for (int round = 0; round < rounds; round++) {
        /* Sizes around every vector width and its tails, and some large ones. */
        uint32_t count = round % 4 == 3 ? (uint32_t)(rvt_next(&seed) % RVT_HEAVY(20000, 3000))
                                        : (uint32_t)(rvt_next(&seed) % 70);
        cull_case c;
        make_cull_case(&seed, round % 12, count, &c);
        uint32_t *ref_ids = test_malloc(sizeof(uint32_t) * (count ? count : 1));
        uint32_t *ids = test_malloc(sizeof(uint32_t) * (count ? count : 1));
        uint32_t ref_kept = run_level(&c, RVI_SIMD_SCALAR, ref_ids);
        for (int level = RVI_SIMD_SSE2; level <= (int)best; level++) {
            uint32_t kept = run_level(&c, (rvi_simd_level)level, ids);
            /* Same arithmetic: exactly the scalar set, tangent spheres included. */
            assert_int_equal(kept, ref_kept);
            assert_memory_equal(ids, ref_ids, sizeof(uint32_t) * kept);
        }
        /* rv_frustum_classify_sphere rounds the same way: OUTSIDE exactly for the culled. */
        for (uint32_t i = 0, j = 0; i < count; i++) {
            const float *q = c.spheres + 4 * (size_t)i;
            bool kept_here = j < ref_kept && ref_ids[j] == i;
            j += kept_here;
            assert_int_equal(rv_frustum_classify_sphere(&c.frustum, q, q[3]) != RV_OUTSIDE, kept_here);
        }
        kept_total += ref_kept;
        culled_total += count - ref_kept;
        /* The public entry point is one of the levels. */
        float *copy = test_malloc(sizeof(float) * 4 * (count ? count : 1));
        memcpy(copy, c.spheres, sizeof(float) * 4 * count);
        uint32_t kept_public = 0;
        assert_int_equal(rv_cull_spheres(&c.frustum, copy, count, NULL, 0, &kept_public), RV_OK);
        assert_int_equal(kept_public, ref_kept);
        for (uint32_t j = 0; j < kept_public; j++)
            assert_memory_equal(copy + 4 * (size_t)j, c.spheres + 4 * (size_t)ref_ids[j], 4 * sizeof(float));
        test_free(copy);
        test_free(ref_ids);
        test_free(ids);
        free_cull_case(&c);
    }
    assert_true(kept_total > 1000 && culled_total > 1000);
}

/* A float[16] per instance (and an odd 3-byte stride) travels with its sphere. */
static void test_cull_spheres_moves_payload_with_its_sphere(void **state)
{
    (void)state;
    uint64_t seed = 37;
    rvi_simd_level best = rvi_simd_best_level();
    for (int round = 0; round < 20; round++) {
        cull_case c;
        uint32_t n = 1 + (uint32_t)(rvt_next(&seed) % 300);
        make_cull_case(&seed, round % 12, n, &c);
        for (int level = 0; level <= (int)best; level++) {
            float *spheres = test_malloc(sizeof(float) * 4 * n);
            float *x = test_malloc(sizeof(float) * n), *y = test_malloc(sizeof(float) * n);
            float *z = test_malloc(sizeof(float) * n), *r = test_malloc(sizeof(float) * n);
            float *mats = test_malloc(sizeof(float) * 16 * n);
            uint8_t *odd = test_malloc(3 * (size_t)n);
            memcpy(spheres, c.spheres, sizeof(float) * 4 * n);
            for (uint32_t i = 0; i < n; i++) {
                x[i] = c.spheres[4 * i];
                y[i] = c.spheres[4 * i + 1];
                z[i] = c.spheres[4 * i + 2];
                r[i] = c.spheres[4 * i + 3];
                for (int k = 0; k < 16; k++)
                    mats[16 * i + k] = (float)i * 16.0f + (float)k;
                odd[3 * i] = (uint8_t)i;
                odd[3 * i + 1] = (uint8_t)(i >> 8);
                odd[3 * i + 2] = 0xA5;
            }
            uint32_t kept = 0, kept_soa = 0;
            assert_int_equal(rvi_cull_spheres_level((rvi_simd_level)level, &c.frustum, spheres, n, mats,
                                                    16 * sizeof(float), &kept), RV_OK);
            assert_int_equal(rvi_cull_spheres_soa_level((rvi_simd_level)level, &c.frustum, x, y, z, r, n, odd, 3,
                                                        &kept_soa), RV_OK);
            assert_int_equal(kept, kept_soa);
            for (uint32_t j = 0; j < kept; j++) {
                uint32_t id = (uint32_t)(mats[16 * j] / 16.0f);
                for (int k = 0; k < 16; k++)
                    assert_true(mats[16 * j + k] == (float)id * 16.0f + (float)k);
                assert_memory_equal(spheres + 4 * (size_t)j, c.spheres + 4 * (size_t)id, 4 * sizeof(float));
                uint32_t id2 = odd[3 * j] | ((uint32_t)odd[3 * j + 1] << 8);
                assert_int_equal(odd[3 * j + 2], 0xA5);
                assert_int_equal(id2, id);
                assert_true(same_float(x[j], c.spheres[4 * id]) && same_float(r[j], c.spheres[4 * id + 3]));
            }
            test_free(spheres);
            test_free(x);
            test_free(y);
            test_free(z);
            test_free(r);
            test_free(mats);
            test_free(odd);
        }
        free_cull_case(&c);
    }
}

static void test_cull_spheres_keeps_nan_and_negative_radius(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    /* 40 spheres far behind the camera (all outside), some made hostile. */
    enum { N = 40 };
    rvi_simd_level best = rvi_simd_best_level();
    for (int level = 0; level <= (int)best; level++) {
        float s[N][4];
        uint32_t ids[N];
        for (int i = 0; i < N; i++) {
            s[i][0] = (float)i;
            s[i][1] = 0.0f;
            s[i][2] = 500.0f;
            s[i][3] = 1.0f;
            ids[i] = (uint32_t)i;
        }
        s[3][0] = NAN;
        s[9][1] = NAN;
        s[17][2] = NAN;
        s[20][3] = NAN;
        s[33][3] = -2.0f;
        s[34][3] = -INFINITY;
        s[35][3] = INFINITY; /* an infinite sphere meets everything */
        uint32_t kept = 0;
        assert_int_equal(rvi_cull_spheres_level((rvi_simd_level)level, &f, &s[0][0], N, ids, sizeof ids[0], &kept),
                         RV_OK);
        assert_int_equal(kept, 7);
        const uint32_t want[7] = {3, 9, 17, 20, 33, 34, 35};
        assert_memory_equal(ids, want, sizeof want);
    }
}

static void test_cull_spheres_with_no_planes_keeps_everything(void **state)
{
    (void)state;
    rv_frustum f;
    float zero[16] = {0};
    assert_int_equal(rv_frustum_from_view_projection(zero, clips[0], &f), RV_OK);
    assert_int_equal(f.plane_mask, 0);
    float x[21], y[21], z[21], r[21];
    for (int i = 0; i < 21; i++) {
        x[i] = (float)i * 1000.0f;
        y[i] = -(float)i;
        z[i] = 1e30f;
        r[i] = 0.0f;
    }
    for (int level = 0; level <= (int)rvi_simd_best_level(); level++) {
        uint32_t kept = 0;
        assert_int_equal(rvi_cull_spheres_soa_level((rvi_simd_level)level, &f, x, y, z, r, 21, NULL, 0, &kept), RV_OK);
        assert_int_equal(kept, 21);
        assert_true(x[20] == 20000.0f);
    }
}

/* A host job system culls ranges independently; joining the kept prefixes gives the
 * whole-array answer. */
static void test_cull_spheres_ranges_join_to_whole_result(void **state)
{
    (void)state;
    uint64_t seed = 41;
    cull_case c;
    const uint32_t n = 5000;
    make_cull_case(&seed, 0, n, &c);
    float *whole = test_malloc(sizeof(float) * 4 * n);
    float *parts = test_malloc(sizeof(float) * 4 * n);
    memcpy(whole, c.spheres, sizeof(float) * 4 * n);
    memcpy(parts, c.spheres, sizeof(float) * 4 * n);
    uint32_t kept_whole = 0;
    assert_int_equal(rv_cull_spheres(&c.frustum, whole, n, NULL, 0, &kept_whole), RV_OK);
    uint32_t joined = 0;
    for (uint32_t begin = 0; begin < n;) {
        uint32_t len = 1 + (uint32_t)(rvt_next(&seed) % 700);
        if (len > n - begin)
            len = n - begin;
        uint32_t kept = 0;
        assert_int_equal(rv_cull_spheres(&c.frustum, parts + 4 * (size_t)begin, len, NULL, 0, &kept), RV_OK);
        memmove(parts + 4 * (size_t)joined, parts + 4 * (size_t)begin, sizeof(float) * 4 * kept);
        joined += kept;
        begin += len;
    }
    assert_int_equal(joined, kept_whole);
    assert_memory_equal(parts, whole, sizeof(float) * 4 * joined);
    assert_true(kept_whole > 0 && kept_whole < n);
    test_free(whole);
    test_free(parts);
    free_cull_case(&c);
}

static void test_cull_spheres_rejects_bad_arguments_unchanged(void **state)
{
    (void)state;
    rv_frustum f;
    float vp[16];
    standard_frustum(&f, vp);
    float s[8] = {0, 0, 500, 1, 0, 0, -50, 1}, before[8];
    memcpy(before, s, sizeof s);
    float x[2] = {0, 0}, y[2] = {0, 0}, z[2] = {500, -50}, r[2] = {1, 1};
    uint32_t pay[2] = {0, 1};
    uint32_t kept = 77;
    assert_int_equal(rv_cull_spheres(NULL, s, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres(&f, s, 2, NULL, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres(&f, NULL, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres(&f, s, 2, pay, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres(&f, s, 2, pay, SIZE_MAX / 2 + 1, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres_soa(&f, x, NULL, z, r, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres_soa(&f, x, y, z, NULL, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres_soa(NULL, x, y, z, r, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    /* Arrays that share floats (the same array twice, or one running into another). */
    float four[4] = {0, 0, 500, -50}, xy[4] = {0, 0, 0, 0}, zr[4] = {500, -50, 1, 1};
    assert_int_equal(rv_cull_spheres_soa(&f, x, x, z, r, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres_soa(&f, x, y, four, four + 1, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_cull_spheres_soa(&f, four + 1, y, z, four, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(kept, 77);
    /* Adjacent arrays in one block are fine: the same answer as separate ones. */
    assert_int_equal(rv_cull_spheres_soa(&f, xy, xy + 2, zr, zr + 2, 2, NULL, 0, &kept), RV_OK);
    assert_int_equal(kept, 1);
    assert_true(zr[0] == -50.0f);
    kept = 77;
    rv_frustum bad = f;
    bad.plane_mask |= 1u << 6;
    assert_int_equal(rv_cull_spheres(&bad, s, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    bad = f;
    bad.planes[2][1] = NAN;
    assert_int_equal(rv_cull_spheres(&bad, s, 2, NULL, 0, &kept), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_cull_spheres_soa(&bad, x, y, z, r, 2, NULL, 0, &kept), RV_ERR_NOT_FINITE);
    /* A NaN in a plane that is not in the mask is never read. */
    bad.plane_mask &= ~(1u << 2);
    assert_int_equal(rv_cull_spheres(&bad, s, 2, pay, sizeof pay[0], &kept), RV_OK);
    assert_int_equal(kept, 1);
    assert_int_equal(pay[0], 1);
    memcpy(s, before, sizeof s);
    pay[0] = 0;
    kept = 77;
    assert_int_equal(rvi_cull_spheres_level(RVI_SIMD_LEVEL_COUNT, &f, s, 2, NULL, 0, &kept), RV_ERR_INVALID_ARG);
    assert_int_equal(rvi_cull_spheres_soa_level((rvi_simd_level)-1, &f, x, y, z, r, 2, NULL, 0, &kept),
                     RV_ERR_INVALID_ARG);
    assert_int_equal(kept, 77);
    assert_memory_equal(s, before, sizeof s);
    assert_true(z[0] == 500.0f && z[1] == -50.0f);
    /* count 0: fine, even with NULL arrays. */
    assert_int_equal(rv_cull_spheres(&f, NULL, 0, NULL, 0, &kept), RV_OK);
    assert_int_equal(kept, 0);
    kept = 5;
    assert_int_equal(rv_cull_spheres_soa(&f, NULL, NULL, NULL, NULL, 0, NULL, 0, &kept), RV_OK);
    assert_int_equal(kept, 0);
    /* Then the real call works. */
    assert_int_equal(rv_cull_spheres_soa(&f, x, y, z, r, 2, pay, sizeof pay[0], &kept), RV_OK);
    assert_int_equal(kept, 1);
    assert_true(z[0] == -50.0f);
    assert_int_equal(pay[0], 1);
}

/* Far from the origin a plane distance in float is off by a good part of a float step of
 * the coordinates (1e5 units: about a centimetre, several pixels for a sphere near the
 * eye). Every call a host makes with a frustum adds that rounding to what must lie
 * outside: a sphere, or the cube around it, that meets a plane's half-space in exact
 * arithmetic is never culled or called outside, on any SIMD level. Planes as the frame
 * publishes them (unit normals through an eye at 1e3 .. 1e6), centres within 20 units of
 * the eye, radii the smallest float reaching the plane. */
static void test_a_sphere_meeting_the_exact_plane_is_never_culled_far_from_the_origin(void **state)
{
    (void)state;
    enum { N = 4096 };
    static float spheres[N * 4], copy[N * 4];
    uint64_t seed = 77;
    uint32_t bare_culls = 0, checked = 0;
    for (int round = 0; round < RVT_HEAVY(200, 24); round++) {
        double offset = pow(10.0, 3.0 + (round % 4)); /* 1e3 .. 1e6 */
        float eye[3];
        for (int a = 0; a < 3; a++)
            eye[a] = (float)(offset * rvt_uniform(&seed, -1, 1));
        double n[3], len = 0;
        for (int a = 0; a < 3; a++) {
            n[a] = rvt_uniform(&seed, -1, 1);
            len += n[a] * n[a];
        }
        rv_frustum f = { .plane_mask = 1 };
        for (int a = 0; a < 3; a++)
            f.planes[0][a] = (float)(n[a] / sqrt(len));
        f.planes[0][3] = (float)-((double)f.planes[0][0] * eye[0] + (double)f.planes[0][1] * eye[1] +
                                  (double)f.planes[0][2] * eye[2]);
        const float *pl = f.planes[0];
        for (int i = 0; i < N; i++) {
            float c[3];
            for (int a = 0; a < 3; a++)
                c[a] = eye[a] + rvt_uniform(&seed, -20, 20);
            long double d = (long double)pl[0] * c[0] + (long double)pl[1] * c[1] + (long double)pl[2] * c[2] +
                            (long double)pl[3];
            float r = d < 0 ? (float)-d : 0.0f;
            if ((long double)r < -d)
                r = nextafterf(r, INFINITY); /* the smallest float that reaches the plane */
            float *sp = spheres + 4 * i;
            sp[0] = c[0];
            sp[1] = c[1];
            sp[2] = c[2];
            sp[3] = r;
            bare_culls += rvi_plane_distance(pl, c) < -r; /* the test without the slack */
            if (rv_frustum_classify_sphere(&f, c, r) == RV_OUTSIDE)
                fail_msg("classify_sphere: centre (%g %g %g), radius %g reaches the plane", c[0], c[1], c[2], r);
            float mn[3] = { c[0] - r, c[1] - r, c[2] - r }, mx[3] = { c[0] + r, c[1] + r, c[2] + r };
            if (rv_frustum_classify_box(&f, mn, mx) == RV_OUTSIDE)
                fail_msg("classify_box: the cube around centre (%g %g %g), radius %g reaches the plane", c[0], c[1],
                         c[2], r);
        }
        for (int level = 0; level <= (int)rvi_simd_best_level(); level++) {
            memcpy(copy, spheres, sizeof spheres);
            uint32_t kept = 0;
            assert_int_equal(rvi_cull_spheres_level((rvi_simd_level)level, &f, copy, N, NULL, 0, &kept), RV_OK);
            if (kept != N)
                fail_msg("level %s culled %u of %u spheres that reach the plane (offset %g)",
                         rvi_simd_level_name((rvi_simd_level)level), N - kept, N, offset);
        }
        checked += N;
    }
    /* The case is real: without the slack the same float sums cull some of them. */
    assert_true(bare_culls > checked / 100);

    /* Below the normal range rounding is absolute: points with subnormal coordinates just
     * inside a plane through the origin (a rotated orthographic view) stay inside. */
    rv_frustum g = { .plane_mask = 1 };
    const float n[3] = { 0.48f, 0.6f, -0.64f };
    memcpy(g.planes[0], n, sizeof n);
    const float unit = 0x1p-149f;
    uint32_t inside = 0, bare = 0;
    for (int X = -6; X <= 6; X++)
        for (int Y = -6; Y <= 6; Y++)
            for (int Z = -6; Z <= 6; Z++) {
                float c[3] = { X * unit, Y * unit, Z * unit }, sp[4] = { c[0], c[1], c[2], 0.0f };
                long double d = (long double)n[0] * X + (long double)n[1] * Y + (long double)n[2] * Z;
                if (!(d >= 0))
                    continue;
                inside++;
                bare += rvi_plane_distance(g.planes[0], c) < 0.0f;
                uint32_t kept = 0;
                assert_int_equal(rv_cull_spheres(&g, sp, 1, NULL, 0, &kept), RV_OK);
                assert_int_equal(kept, 1);
                assert_int_not_equal(rv_frustum_classify_sphere(&g, c, 0.0f), RV_OUTSIDE);
                assert_int_not_equal(rv_frustum_classify_box(&g, c, c), RV_OUTSIDE);
            }
    assert_true(inside > 1000 && bare > 0);
}

static void test_simd_level_names(void **state)
{
    (void)state;
    assert_string_equal(rvi_simd_level_name(RVI_SIMD_SCALAR), "scalar");
    assert_string_equal(rvi_simd_level_name(RVI_SIMD_AVX512), "avx512");
    assert_string_equal(rvi_simd_level_name(RVI_SIMD_LEVEL_COUNT), "unknown");
    assert_true(rvi_simd_best_level() < RVI_SIMD_LEVEL_COUNT);
#if defined(__x86_64__)
    assert_true(rvi_simd_best_level() >= RVI_SIMD_SSE2); /* SSE2 is in every x86-64 CPU */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perspective_planes_match_clip_test_in_every_convention),
        cmocka_unit_test(test_infinite_far_is_recognised_and_dropped),
        cmocka_unit_test(test_noisy_infinite_far_is_still_dropped),
        cmocka_unit_test(test_orthographic_is_recognised_and_matches_clip_test),
        cmocka_unit_test(test_degenerate_matrices_never_give_nan_planes),
        cmocka_unit_test(test_bad_matrix_arguments_leave_output_unchanged),
        cmocka_unit_test(test_sphere_classification_matches_reference),
        cmocka_unit_test(test_masked_classification_inherits_planes),
        cmocka_unit_test(test_nan_and_bad_spheres_classify_as_intersecting),
        cmocka_unit_test(test_box_classification_matches_reference),
        cmocka_unit_test(test_cull_spheres_keeps_brute_force_set_on_every_level),
        cmocka_unit_test(test_cull_spheres_moves_payload_with_its_sphere),
        cmocka_unit_test(test_cull_spheres_keeps_nan_and_negative_radius),
        cmocka_unit_test(test_cull_spheres_with_no_planes_keeps_everything),
        cmocka_unit_test(test_cull_spheres_ranges_join_to_whole_result),
        cmocka_unit_test(test_cull_spheres_rejects_bad_arguments_unchanged),
        cmocka_unit_test(test_a_sphere_meeting_the_exact_plane_is_never_culled_far_from_the_origin),
        cmocka_unit_test(test_simd_level_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
