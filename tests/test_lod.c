/* Apparent-size LOD (suite lod): ladders, levels at and around thresholds, the batch form,
 * bias, finest level, orthographic views, the node form, hysteresis, crossfade, world LOD
 * state, allocation failure and allocation-free steady selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "lod.h"
#include "support/rvt.h"
#include "support/rvt_scene.h"

#include <math.h>
#include <string.h>

#define PI_D 3.14159265358979323846

static const float SEED_LADDER[3] = { 0.2f, 0.06f, 0.015f };

/* ---- helpers ------------------------------------------------------------------------- */

static rv_lod_ladder seed_ladder(void)
{
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(SEED_LADDER, 3, &l), RV_OK);
    return l;
}

/* Radius of a sphere whose centre is `distance` away that subtends `angle` radians. */
static float radius_for_angle(double angle, double distance)
{
    return (float)(distance * sin(angle / 2.0));
}

/* Distance at which a sphere of `radius` subtends `angle`. */
static float distance_for_angle(double angle, double radius)
{
    return (float)(radius / sin(angle / 2.0));
}

static uint32_t scalar_level(const float c[3], float r, const float eye[3], const rv_lod_ladder *l)
{
    uint32_t level = 999;
    assert_int_equal(rv_lod_for_sphere(c, r, eye, l, &level), RV_OK);
    return level;
}

static uint32_t batch_level(const float c[3], float r, const rv_lod_view *view,
                            const rv_lod_desc *desc, const rv_lod_ladder *l)
{
    uint8_t level = 99;
    assert_int_equal(rv_lod_select_spheres(l, desc, view, &c[0], &c[1], &c[2], &r, 1, &level), RV_OK);
    return level;
}

/* ---- ladders ------------------------------------------------------------------------- */

static void test_ladder_make_keeps_strictly_descending_thresholds(void **state)
{
    (void)state;
    rv_lod_ladder l;
    memset(&l, 0xAB, sizeof l);
    assert_int_equal(rv_lod_ladder_make(SEED_LADDER, 3, &l), RV_OK);
    assert_int_equal(l.count, 3);
    for (int i = 0; i < 3; i++)
        assert_true(l.thresholds[i] == SEED_LADDER[i]);
    for (int i = 3; i < RV_LOD_MAX_THRESHOLDS; i++)
        assert_true(l.thresholds[i] == 0.0f);
    float eight[8] = { 4, 3, 2, 1, 0.5f, 0.25f, 0.125f, 0.0625f };
    assert_int_equal(rv_lod_ladder_make(eight, 8, &l), RV_OK);
    assert_int_equal(l.count, 8);
}

static void test_ladder_make_refuses_unsorted_equal_negative_nan_empty(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder(), before = l;
    const float unsorted[3] = { 0.06f, 0.2f, 0.015f };
    const float equal[3] = { 0.2f, 0.06f, 0.06f };
    const float negative[3] = { 0.2f, -0.06f, -0.1f };
    const float zero[2] = { 0.2f, 0.0f };
    const float nan[3] = { 0.2f, NAN, 0.015f };
    const float inf[2] = { INFINITY, 0.1f };
    const float nine[9] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
    assert_int_equal(rv_lod_ladder_make(unsorted, 3, &l), RV_ERR_ORDER);
    assert_int_equal(rv_lod_ladder_make(equal, 3, &l), RV_ERR_ORDER);
    assert_int_equal(rv_lod_ladder_make(negative, 3, &l), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_ladder_make(zero, 2, &l), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_ladder_make(nan, 3, &l), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_ladder_make(inf, 2, &l), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_ladder_make(SEED_LADDER, 0, &l), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_ladder_make(nine, 9, &l), RV_ERR_CAPACITY);
    assert_int_equal(rv_lod_ladder_make(NULL, 3, &l), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_ladder_make(SEED_LADDER, 3, NULL), RV_ERR_INVALID_ARG);
    assert_memory_equal(&l, &before, sizeof l); /* nothing created */

    /* A hand-filled ladder breaking the rules is refused where it is used. */
    rv_lod_ladder hand = { 2, { 0.06f, 0.2f } };
    float c[3] = { 0, 0, 10 }, eye[3] = { 0, 0, 0 };
    uint32_t level = 77;
    assert_int_equal(rv_lod_for_sphere(c, 1, eye, &hand, &level), RV_ERR_ORDER);
    rv_lod_ladder none = {0};
    assert_int_equal(rv_lod_for_sphere(c, 1, eye, &none, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(level, 77);
}

/* ---- levels -------------------------------------------------------------------------- */

/* Each threshold, reached by 1e-4 relative, reached exactly, and missed by 1e-4 relative,
 * through the scalar and the batch forms, from an eye off the origin. */
static void test_level_at_each_threshold_and_one_part_in_ten_thousand_around_it(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_view view = { .eye = { 3.0f, -2.0f, 7.0f } };
    const double distances[3] = { 4.0, 37.5, 900.0 };
    for (int di = 0; di < 3; di++) {
        float c[3] = { view.eye[0], view.eye[1], view.eye[2] + (float)distances[di] };
        for (uint32_t i = 0; i < 3; i++) {
            double t = l.thresholds[i];
            struct { double angle; uint32_t level; } cases[3] = {
                { t * (1.0 + 1e-4), i }, { t, i }, { t * (1.0 - 1e-4), i + 1 } };
            for (int k = 0; k < 3; k++) {
                float r = radius_for_angle(cases[k].angle, distances[di]);
                assert_int_equal(scalar_level(c, r, view.eye, &l), cases[k].level);
                assert_int_equal(batch_level(c, r, &view, NULL, &l), cases[k].level);
            }
        }
        /* Far below the last threshold: count; far above the first: 0. */
        assert_int_equal(scalar_level(c, radius_for_angle(0.001, distances[di]), view.eye, &l), 3);
        assert_int_equal(scalar_level(c, radius_for_angle(1.0, distances[di]), view.eye, &l), 0);
    }
}

/* A selector's first selection (no hysteresis) is the scalar level exactly, even one float
 * step either side of a threshold: the stateful and the scalar forms must never disagree on
 * the same sphere. Radii are stepped ulp by ulp across each threshold (and across it times
 * the hysteresis factors), from eyes near and far. */
static void test_first_selection_equals_scalar_level_at_every_float_step_across_thresholds(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    const double factors[3] = { 1.0, 1.1, 0.9 };
    const double distances[4] = { 0.75, 4.0, 37.5, 9000.0 };
    uint32_t changes = 0, checked = 0;
    for (int di = 0; di < 4; di++) {
        rv_lod_view view = { .eye = { 3.0f, -2.0f, 7.0f } };
        float c[3] = { view.eye[0] + 0.25f, view.eye[1], view.eye[2] + (float)distances[di] };
        double dx = (double)c[0] - view.eye[0], dz = (double)c[2] - view.eye[2];
        double d = sqrt(dx * dx + dz * dz);
        for (uint32_t i = 0; i < 3; i++)
            for (int f = 0; f < 3; f++) {
                /* 256 float steps below to 256 above (about 1.5e-5 relative each way) */
                float r = radius_for_angle(l.thresholds[i] * factors[f], d);
                for (int k = 0; k < 256; k++)
                    r = nextafterf(r, 0.0f);
                uint32_t last = scalar_level(c, r, view.eye, &l);
                for (int k = 0; k < 512; k++, r = nextafterf(r, INFINITY)) {
                    rv_lod_selector s = { 0 };
                    rv_lod_selection sel;
                    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, r, 0, &sel), RV_OK);
                    uint32_t level = scalar_level(c, r, view.eye, &l);
                    assert_int_equal(sel.levels[0], level);
                    changes += level != last;
                    last = level;
                    checked++;
                }
            }
    }
    assert_int_equal(checked, 4 * 3 * 3 * 512);
    assert_int_equal(changes, 4 * 3); /* each threshold crossed once, at each distance */
}

static void test_eye_inside_sphere_is_level_zero(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_view view = { .eye = { 1, 2, 3 } };
    float c[3] = { 1.5f, 2, 3 };
    assert_int_equal(scalar_level(c, 2.0f, view.eye, &l), 0);     /* inside */
    assert_int_equal(batch_level(c, 2.0f, &view, NULL, &l), 0);
    assert_int_equal(scalar_level(c, 0.5f, view.eye, &l), 0);     /* on the surface */
    assert_int_equal(batch_level(c, 0.5f, &view, NULL, &l), 0);
    assert_int_equal(scalar_level(view.eye, 0.0f, view.eye, &l), 0); /* a point at the eye */
    assert_int_equal(batch_level(view.eye, 0.0f, &view, NULL, &l), 0);
    /* A threshold beyond pi is reached only from inside. */
    const float big[2] = { 3.5f, 0.1f };
    rv_lod_ladder b;
    assert_int_equal(rv_lod_ladder_make(big, 2, &b), RV_OK);
    assert_int_equal(scalar_level(c, 2.0f, view.eye, &b), 0);
    assert_int_equal(batch_level(c, 2.0f, &view, NULL, &b), 0);
    assert_int_equal(scalar_level(c, 0.49f, view.eye, &b), 1);
    assert_int_equal(batch_level(c, 0.49f, &view, NULL, &b), 1);
}

/* The batch form agrees with the scalar one on random spheres away from thresholds, and
 * with a reference computed here with asin, for every ladder length (every kernel). */
static void test_batch_matches_scalar_and_asin_reference(void **state)
{
    (void)state;
    uint64_t seed = 42;
    enum { N = 4099 };
    static float x[N], y[N], z[N], r[N];
    static uint8_t out[N];
    for (uint32_t count = 1; count <= RV_LOD_MAX_THRESHOLDS; count++) {
        float t[RV_LOD_MAX_THRESHOLDS];
        for (uint32_t i = 0; i < count; i++)
            t[i] = 0.8f / (float)pow(2.2, i);
        rv_lod_ladder l;
        assert_int_equal(rv_lod_ladder_make(t, count, &l), RV_OK);
        rv_lod_view view = { .eye = { rvt_uniform(&seed, -10, 10), 1.7f, rvt_uniform(&seed, -10, 10) } };
        for (int j = 0; j < N; j++) {
            x[j] = rvt_uniform(&seed, -300, 300);
            y[j] = rvt_uniform(&seed, -20, 50);
            z[j] = rvt_uniform(&seed, -300, 300);
            r[j] = rvt_uniform(&seed, 0, 8);
        }
        /* An offset start and an odd count exercise the vector loops' remainders. */
        assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x + 3, y + 3, z + 3, r + 3, N - 3, out + 3), RV_OK);
        int compared = 0;
        for (int j = 3; j < N; j++) {
            float c[3] = { x[j], y[j], z[j] };
            double dx = x[j] - view.eye[0], dy = y[j] - view.eye[1], dz = z[j] - view.eye[2];
            double d = sqrt(dx * dx + dy * dy + dz * dz);
            double angle = d <= r[j] ? INFINITY : 2 * asin(r[j] / d);
            bool near = false;
            uint32_t reference = 0;
            for (uint32_t i = 0; i < count; i++) {
                near = near || fabs(angle / t[i] - 1.0) < 1e-5;
                reference += angle < t[i];
            }
            if (near)
                continue;
            compared++;
            assert_int_equal(out[j], reference);
            assert_int_equal(scalar_level(c, r[j], view.eye, &l), reference);
        }
        assert_true(compared > N - 100);
    }
}

/* Spheres so far away that the batch kernel's float d^2 overflows (distance beyond ~1e19)
 * still get the level of the angle they subtend: a sphere of radius 1e19 at 1e20 fills 0.2
 * radians, the finest level here. The kernel answered "too small to draw" (the level past
 * the last threshold) until such spheres were decided in double. */
static void test_batch_decides_spheres_beyond_float_range_in_double(void **state)
{
    (void)state;
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(t, 3, &l), RV_OK);
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    const float d[] = { 2e19f, 1e20f, 1e21f, 1e22f, 3e37f }, ratio[] = { 0.11f, 0.05f, 0.02f, 0.001f };
    enum { N = 5 * 4 + 3 };
    float x[N], y[N], z[N], r[N];
    uint8_t out[N];
    int n = 0;
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 4; k++, n++) {
            x[n] = 0.6f * d[i];
            y[n] = 0.0f;
            z[n] = -0.8f * d[i];
            r[n] = ratio[k] * d[i];
        }
    for (; n < N; n++) { /* ordinary spheres in the same call keep their kernel answers */
        x[n] = 0.0f;
        y[n] = 0.0f;
        z[n] = -100.0f * (float)n;
        r[n] = 3.0f;
    }
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, N, out), RV_OK);
    for (int j = 0; j < N; j++) {
        double dist = hypot(hypot((double)x[j], (double)y[j]), (double)z[j]);
        double angle = 2 * asin(r[j] / dist);
        uint32_t reference = 0;
        for (int i = 0; i < 3; i++)
            reference += angle < t[i];
        assert_int_equal(out[j], reference);
    }
    assert_int_equal(out[0], 0); /* 0.22 rad: the finest level, not nothing */
}

/* The other ends of the float range: a huge sphere after a NaN one in the same call is
 * still decided in double; coordinates near 1e-22, whose float squares lose their bits,
 * and a threshold just below pi, where sin^2 is flat, answer as rv_lod_for_sphere. */
static void test_batch_decides_tiny_spheres_steep_thresholds_and_spheres_after_a_nan_in_double(void **state)
{
    (void)state;
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(t, 3, &l), RV_OK);
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    float x[2] = { NAN, 3e19f }, y[2] = { 0, 0 }, z[2] = { 0, 0 }, r[2] = { 1, 1e19f };
    uint8_t out[2] = { 99, 99 };
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 2, out), RV_ERR_NOT_FINITE);
    assert_int_equal(out[0], 0); /* a NaN answers the finest level */
    assert_int_equal(out[1], 0); /* 0.68 rad, not "nothing" */

    float tx = 1e-22f, ty = 0, tz = 0, tr = 5e-24f; /* 0.1 rad: level 1 */
    uint8_t tiny = 99;
    uint32_t single = 99;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, &tx, &ty, &tz, &tr, 1, &tiny), RV_OK);
    assert_int_equal(rv_lod_for_sphere((float[3]){ tx, ty, tz }, tr, view.eye, &l, &single), RV_OK);
    assert_int_equal(single, 1);
    assert_int_equal(tiny, single);

    /* Thresholds so small that sin^2(t / 2) is subnormal in float: every sphere in double
     * (at angle / threshold 1.000008 the float constants answered the next level). */
    const float minute[4] = { 0x1.9227d8p-72f, 0x1.51ea06p-72f, 0x1.fa0f44p-74f, 0x1.2a6712p-74f };
    rv_lod_ladder fine;
    assert_int_equal(rv_lod_ladder_make(minute, 4, &fine), RV_OK);
    rv_lod_view far_eye = { .eye = { 0x1.77357p+2f, 0x1.28366ep+5f, 0x1.a3821p+3f } };
    float mx = -0x1.75b77ap+28f, my = -0x1.d13f2p+25f, mz = -0x1.6d2ecep+28f, mr = 0x1.03d2c2p-45f;
    uint8_t minute_level = 99;
    assert_int_equal(rv_lod_select_spheres(&fine, NULL, &far_eye, &mx, &my, &mz, &mr, 1, &minute_level), RV_OK);
    assert_int_equal(rv_lod_for_sphere((float[3]){ mx, my, mz }, mr, far_eye.eye, &fine, &single), RV_OK);
    assert_int_equal(single, 2);
    assert_int_equal(minute_level, single);

    const float near_pi[1] = { 3.1415f };
    rv_lod_ladder steep;
    assert_int_equal(rv_lod_ladder_make(near_pi, 1, &steep), RV_OK);
    const float cx[2] = { 0x1.3a7842p+5f, 0x1.dd883ep+2f }, cy[2] = { -0x1.06e4dep+5f, -0x1.eb1676p+2f },
                cz[2] = { -0x1.cd44e2p+3f, 0x1.c7ba06p+2f }, cr[2] = { 0x1.a9cbep+5f, 0x1.9b5deep+3f };
    uint8_t levels[2] = { 99, 99 };
    assert_int_equal(rv_lod_select_spheres(&steep, NULL, &view, cx, cy, cz, cr, 2, levels), RV_OK);
    for (int j = 0; j < 2; j++) {
        /* the first holds the eye, the second subtends 3e-5 more than the threshold */
        assert_int_equal(rv_lod_for_sphere((float[3]){ cx[j], cy[j], cz[j] }, cr[j], view.eye, &steep, &single), RV_OK);
        assert_int_equal(single, 0);
        assert_int_equal(levels[j], 0);
    }
}

static void test_bias_multiplies_the_angle(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    float c[3] = { 0, 0, -50 };
    /* Half the second threshold: level 2 at bias 1, level 1 at bias 2 (zoomed 2x). */
    float r = radius_for_angle(0.03 * (1 + 1e-4), 50);
    rv_lod_desc one = {0}, two = { .bias = 2.0f }, half = { .bias = 0.5f };
    assert_int_equal(batch_level(c, r, &view, &one, &l), 2);
    assert_int_equal(batch_level(c, r, &view, &two, &l), 1);
    assert_int_equal(batch_level(c, radius_for_angle(0.2 * 1.01, 50), &view, &half, &l), 1);
    /* Stateful selection uses the bias too (its first selection has no hysteresis). */
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    assert_int_equal(rv_lod_selector_update(&s, &l, &two, &view, c, r, 0, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 1);
    /* A large bias pushes every threshold past pi / bias: still exact. */
    rv_lod_desc huge = { .bias = 40.0f };
    assert_int_equal(batch_level(c, radius_for_angle(0.2 / 40 * 1.001, 50), &view, &huge, &l), 0);
    assert_int_equal(batch_level(c, radius_for_angle(0.2 / 40 * 0.999, 50), &view, &huge, &l), 1);
    /* The world's bias, changed at runtime, reaches the node form. */
    rv_world *w = rvt_world_lod(NULL);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, -50, r);
    assert_int_equal(rv_update_world(w), RV_OK);
    uint32_t level;
    assert_int_equal(rv_lod_for_node(w, n, &view, &l, &level), RV_OK);
    assert_int_equal(level, 2);
    assert_int_equal(rv_lod_set_desc(w, &two), RV_OK);
    assert_int_equal(rv_lod_for_node(w, n, &view, &l, &level), RV_OK);
    assert_int_equal(level, 1);
    rv_world_destroy(w);
}

static void test_finest_level_replaces_finer_levels(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    float c[3] = { 0, 0, 5 };
    rv_lod_desc limit = { .finest_level = 2 }, beyond = { .finest_level = 9 };
    assert_int_equal(batch_level(c, 3.0f, &view, &limit, &l), 2);              /* inside: 0 -> 2 */
    assert_int_equal(batch_level(c, radius_for_angle(0.1, 5), &view, &limit, &l), 2); /* 1 -> 2 */
    assert_int_equal(batch_level(c, radius_for_angle(0.001, 5), &view, &limit, &l), 3); /* coarser stays */
    /* Past the ladder: the coarsest drawn level (2), never "nothing" (3), which would hide
     * every object of a shorter ladder; a sphere too small for any level stays at 3. */
    assert_int_equal(batch_level(c, 3.0f, &view, &beyond, &l), 2);
    assert_int_equal(batch_level(c, radius_for_angle(0.001, 5), &view, &beyond, &l), 3);
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    assert_int_equal(rv_lod_selector_update(&s, &l, &limit, &view, c, 3.0f, 0, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
}

static void test_orthographic_angle_is_diameter_over_view_height_times_reference_fov(void **state)
{
    (void)state;
    /* r = 1, view height 10: diameter / height = 0.2; times 60 degrees = 0.2094 rad. */
    const float t[3] = { 0.25f, 0.2094395f * 1.0001f, 0.2094395f * 0.9999f };
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(t, 3, &l), RV_OK);
    rv_lod_view view = { .eye = { 0, 0, 0 }, .orthographic = true, .ortho_height = 10.0f };
    float near[3] = { 0, 0, -3 }, far[3] = { 0, 0, -3000 }, inside[3] = { 0, 0, 0 };
    assert_int_equal(batch_level(near, 1.0f, &view, NULL, &l), 2);
    assert_int_equal(batch_level(far, 1.0f, &view, NULL, &l), 2);   /* distance does not matter */
    assert_int_equal(batch_level(inside, 1.0f, &view, NULL, &l), 2); /* nor does "inside" */
    /* A reference fov of 90 degrees: 0.2 * pi / 2 = 0.314 reaches every threshold. */
    rv_lod_desc wide = { .ortho_reference_fov_y = (float)(PI_D / 2) };
    assert_int_equal(batch_level(far, 1.0f, &view, &wide, &l), 0);
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, far, 1.0f, 0, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    /* A bad orthographic view is refused. */
    view.ortho_height = 0.0f;
    uint8_t out;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, near, near + 1, near + 2, t, 1, &out),
                     RV_ERR_INVALID_ARG);
    view.ortho_height = NAN;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, near, near + 1, near + 2, t, 1, &out),
                     RV_ERR_NOT_FINITE);
}

static void test_batch_reports_nan_infinity_and_negative_radius(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    float x[4] = { 0, 1, 2, 3 }, y[4] = { 0, 0, 0, 0 }, z[4] = { 10, 10, 10, 10 }, r[4] = { 1, 1, 1, 1 };
    uint8_t out[4];
    y[2] = NAN;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_ERR_NOT_FINITE);
    assert_int_equal(out[2], 0); /* a NaN errs toward detail */
    y[2] = 0;
    z[1] = INFINITY;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_ERR_NOT_FINITE);
    assert_int_equal(out[1], 0); /* so does an infinity */
    /* and in an orthographic view, whatever the radius says (0.01 would answer "nothing") */
    rv_lod_view ortho = { .orthographic = true, .ortho_height = 100 };
    float ox[2] = { NAN, INFINITY }, oy[2] = { 0, 0 }, oz[2] = { -10, -10 }, orad[2] = { 0.01f, 0.01f };
    uint8_t oout[2] = { 99, 99 };
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &ortho, ox, oy, oz, orad, 2, oout), RV_ERR_NOT_FINITE);
    assert_int_equal(oout[0], 0);
    assert_int_equal(oout[1], 0);
    z[1] = 10;
    r[3] = -1;
    z[3] = 1000; /* far: as its radius, 1, it would draw nothing */
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_ERR_INVALID_ARG);
    assert_int_equal(out[3], 0); /* a negative radius errs toward detail too */
    z[1] = INFINITY; /* both kinds in one call: the non-finite one is reported */
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_ERR_NOT_FINITE);
    assert_int_equal(out[3], 0);
    z[1] = 10;
    z[3] = 10;
    r[3] = 1;
    /* Huge but finite coordinates are not an error (the cheap screen is re-checked). */
    x[0] = 3e19f;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_OK);
    assert_int_equal(out[0], 3);
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 0, NULL), RV_OK);
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, NULL, y, z, r, 4, out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_select_spheres(&l, NULL, NULL, x, y, z, r, 4, out), RV_ERR_INVALID_ARG);
    view.eye[1] = NAN;
    assert_int_equal(rv_lod_select_spheres(&l, NULL, &view, x, y, z, r, 4, out), RV_ERR_NOT_FINITE);
    view.eye[1] = 0;
    rv_lod_desc bad = { .bias = -1 };
    assert_int_equal(rv_lod_select_spheres(&l, &bad, &view, x, y, z, r, 4, out), RV_ERR_INVALID_ARG);
    /* Scalar form. */
    float c[3] = { 0, 0, 10 }, nanc[3] = { NAN, 0, 10 };
    uint32_t level = 77;
    assert_int_equal(rv_lod_for_sphere(nanc, 1, view.eye, &l, &level), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_for_sphere(c, -1, view.eye, &l, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_for_sphere(c, INFINITY, view.eye, &l, &level), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_for_sphere(c, 1, NULL, &l, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_for_sphere(c, 1, view.eye, NULL, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(level, 77);
}

static void test_desc_resolves_defaults_and_refuses_out_of_range(void **state)
{
    (void)state;
    rv_lod_desc d;
    assert_int_equal(rvi_lod_resolve_desc(NULL, &d), RV_OK);
    assert_true(d.hysteresis == 0.10f && d.crossfade_ms == 250.0f && d.max_screen_space_error == 16.0f);
    assert_true(d.bias == 1.0f && d.finest_level == 0);
    assert_true(fabs(d.ortho_reference_fov_y - PI_D / 3) < 1e-6);
    rv_lod_desc again;
    assert_int_equal(rvi_lod_resolve_desc(&d, &again), RV_OK);
    assert_memory_equal(&d, &again, sizeof d); /* idempotent */
    rv_lod_desc off = { .hysteresis = -1, .crossfade_ms = -5 };
    assert_int_equal(rvi_lod_resolve_desc(&off, &d), RV_OK);
    assert_true(d.hysteresis < 0 && d.crossfade_ms < 0);
    rv_lod_desc bad[] = { { .hysteresis = 1.0f }, { .max_screen_space_error = -1 }, { .bias = -2 },
                          { .ortho_reference_fov_y = -0.1f }, { .ortho_reference_fov_y = 3.2f } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(rvi_lod_resolve_desc(&bad[i], &d), RV_ERR_INVALID_ARG);
    rv_lod_desc nan = { .crossfade_ms = NAN };
    assert_int_equal(rvi_lod_resolve_desc(&nan, &d), RV_ERR_NOT_FINITE);

    rv_world *w = rvt_world_lod(NULL);
    assert_int_equal(rv_lod_get_desc(w, &d), RV_OK);
    assert_true(d.crossfade_ms == 250.0f);
    rv_lod_desc fast = { .crossfade_ms = 100 };
    assert_int_equal(rv_lod_set_desc(w, &fast), RV_OK);
    assert_int_equal(rv_lod_get_desc(w, &d), RV_OK);
    assert_true(d.crossfade_ms == 100.0f && d.hysteresis == 0.10f);
    assert_int_equal(rv_lod_set_desc(w, &bad[0]), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_get_desc(w, &d), RV_OK);
    assert_true(d.crossfade_ms == 100.0f);
    assert_int_equal(rv_lod_set_desc(NULL, &fast), RV_ERR_INVALID_ARG);
    rv_world_destroy(w);
}

/* A node's selection caches its candidate levels over a band of eye distances; it must
 * answer what a host's selector (which recomputes them every step) answers, bit for bit:
 * eyes that sweep slowly across every threshold and its hysteresis bounds, jumps, radius
 * changes (scale), a desc change, orthographic steps between perspective ones. */
static void test_node_selection_matches_a_host_selector_step_by_step(void **state)
{
    (void)state;
    enum { NODES = 24 };
    uint64_t seed = 0xB4AD5EEDull;
    const float ladders[3][4] = { { 0.2f, 0.06f, 0.015f, 0 }, { 0.5f, 0.1f, 0, 0 }, { 3.5f, 1.2f, 0.3f, 0.01f } };
    const uint32_t counts[3] = { 3, 2, 4 };
    for (int round = 0; round < RVT_HEAVY(40, 8); round++) {
        rv_lod_desc desc = { .hysteresis = round % 3 == 0 ? 0.25f : (round % 3 == 1 ? -1.0f : 0.0f),
                             .crossfade_ms = round % 4 == 0 ? -1.0f : rvt_uniform(&seed, 30, 400),
                             .bias = round % 5 == 0 ? 2.0f : 1.0f,
                             .finest_level = (uint32_t)(round % 2) };
        rv_world *w = rvt_world_lod(&desc);
        rv_node nodes[NODES];
        rv_lod_ladder lad[NODES];
        rv_lod_selector host[NODES];
        memset(host, 0, sizeof host);
        for (int i = 0; i < NODES; i++) {
            nodes[i] = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -40, 40), rvt_uniform(&seed, -5, 5),
                                  rvt_uniform(&seed, -40, 40), rvt_uniform(&seed, 0.2f, 3.0f));
            assert_int_equal(rv_lod_ladder_make(ladders[i % 3], counts[i % 3], &lad[i]), RV_OK);
            assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], &lad[i]), RV_OK);
        }
        assert_int_equal(rv_update_world(w), RV_OK);
        rv_lod_desc now;
        assert_int_equal(rv_lod_get_desc(w, &now), RV_OK);
        float eye[3] = { 0, 0, 0 }, vel[3] = { 0, 0, 0 };
        uint32_t compared = 0;
        for (int step = 0; step < 300; step++) {
            if (step % 60 == 0)
                for (int a = 0; a < 3; a++)
                    vel[a] = rvt_uniform(&seed, -0.6f, 0.6f);
            for (int a = 0; a < 3; a++)
                eye[a] += vel[a];
            if (step % 97 == 96) /* a jump */
                for (int a = 0; a < 3; a++)
                    eye[a] = rvt_uniform(&seed, -200, 200);
            if (step == 150) { /* a radius change */
                float scale[3] = { 1.5f, 1, 1 };
                assert_int_equal(rv_node_set_scale(w, nodes[3], scale), RV_OK);
                assert_int_equal(rv_update_world(w), RV_OK);
            }
            if (step == 200) { /* a desc change */
                rv_lod_desc other = desc;
                other.hysteresis = 0.05f;
                assert_int_equal(rv_lod_set_desc(w, &other), RV_OK);
                assert_int_equal(rv_lod_get_desc(w, &now), RV_OK);
            }
            float dt = step % 7 == 0 ? 0.0f : 16.0f;
            assert_int_equal(rv_lod_advance(w, dt), RV_OK);
            rv_lod_view view = { .eye = { eye[0], eye[1], eye[2] } };
            if (step % 41 == 40) {
                view.orthographic = true;
                view.ortho_height = rvt_uniform(&seed, 5, 200);
            }
            for (int i = 0; i < NODES; i++) {
                float sphere[4];
                assert_int_equal(rv_node_world_bounds(w, nodes[i], sphere), RV_OK);
                rv_lod_selection a, b;
                assert_int_equal(rv_node_lod_select(w, nodes[i], &view, &a), RV_OK);
                assert_int_equal(rv_lod_selector_update(&host[i], &lad[i], &now, &view, sphere, sphere[3], dt, &b),
                                 RV_OK);
                assert_int_equal(a.count, b.count);
                assert_int_equal(a.levels[0], b.levels[0]);
                assert_int_equal(a.levels[1], b.levels[1]);
                assert_memory_equal(a.weights, b.weights, sizeof a.weights);
                compared++;
            }
        }
        assert_int_equal(compared, 300u * NODES);
        rv_world_destroy(w);
    }
    /* A threshold crossed beyond the float range of a squared distance (r = 1 and a
     * threshold of 1e-19 rad: D about 2e19): the band must stop short of it. */
    rv_lod_desc plain = { .hysteresis = -1.0f, .crossfade_ms = -1.0f };
    rv_world *w = rvt_world_lod(&plain);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, 0, 1.0f);
    const float tiny = 1e-19f;
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(&tiny, 1, &l), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, n, &l), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    const float eyes[3] = { 10.0f, 1e20f, 5.0f };
    const uint32_t levels[3] = { 0, 1, 0 };
    for (int k = 0; k < 3; k++) {
        assert_int_equal(rv_lod_advance(w, 16.0f), RV_OK);
        rv_lod_view view = { .eye = { eyes[k], 0, 0 } };
        rv_lod_selection sel;
        assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
        assert_int_equal(sel.levels[0], levels[k]);
    }
    rv_world_destroy(w);
}

/* ---- node form ----------------------------------------------------------------------- */

static void test_node_form_uses_world_bounds_and_scale_counts(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_world *w = rvt_world_lod(NULL);
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    /* Radius 1 at 50 m: 0.04 rad, level 2. */
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, -50, 1.0f);
    assert_int_equal(rv_update_world(w), RV_OK);
    uint32_t level = 99;
    assert_int_equal(rv_lod_for_node(w, n, &view, &l, &level), RV_OK);
    assert_int_equal(level, 2);
    /* Stretching one axis by 2 doubles the world radius: 0.08 rad, level 1. */
    float scale[3] = { 1, 1, 2 };
    assert_int_equal(rv_node_set_scale(w, n, scale), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_lod_for_node(w, n, &view, &l, &level), RV_OK);
    assert_int_equal(level, 1);
    /* A large child enlarges the parent's world bounds too. */
    rv_node child;
    assert_int_equal(rv_node_create(w, n, &child), RV_OK);
    float c[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_bounds(w, child, c, 10.0f), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_lod_for_node(w, n, &view, &l, &level), RV_OK);
    assert_int_equal(level, 0);
    /* Errors. */
    rv_node empty;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &empty), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    level = 99;
    assert_int_equal(rv_lod_for_node(w, empty, &view, &l, &level), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_destroy_subtree(w, empty), RV_OK);
    assert_int_equal(rv_lod_for_node(w, empty, &view, &l, &level), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_lod_for_node(w, n, NULL, &l, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_for_node(NULL, n, &view, &l, &level), RV_ERR_INVALID_ARG);
    assert_int_equal(level, 99);
    rv_world_destroy(w);
}

/* ---- hysteresis ---------------------------------------------------------------------- */

/* Places the eye so the sphere (radius 1 at the origin) subtends `angle`. */
static void eye_at_angle(rv_lod_view *view, double angle)
{
    view->eye[0] = view->eye[1] = 0.0f;
    view->eye[2] = distance_for_angle(angle, 1.0);
}

static void test_hysteresis_oscillation_of_one_percent_never_changes_level(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    float c[3] = { 0, 0, 0 };
    for (uint32_t i = 0; i < 3; i++) {
        double t = l.thresholds[i];
        for (int start_above = 0; start_above < 2; start_above++) {
            rv_lod_selector s = {0};
            rv_lod_selection sel;
            rv_lod_view view = {0};
            uint32_t first = 99;
            for (int frame = 0; frame < 400; frame++) {
                double wobble = ((frame + start_above) % 2 ? 1.01 : 0.99);
                if (frame % 7 == 3)
                    wobble = 1.0 + 0.01 * sin(frame * 0.37); /* anywhere in the +-1 % band */
                eye_at_angle(&view, t * wobble);
                assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1.0f, 16.0f, &sel), RV_OK);
                if (frame == 0)
                    first = sel.levels[0];
                assert_int_equal(sel.count, 1);
                assert_int_equal(sel.levels[0], first);
            }
            assert_int_equal(first, start_above ? i : i + 1);
        }
    }
}

static void test_hysteresis_crossing_the_band_changes_level(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    float c[3] = { 0, 0, 0 };
    double t = l.thresholds[1];
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    rv_lod_view view = {0};
    eye_at_angle(&view, t * 0.95); /* level 2 */
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    eye_at_angle(&view, t * 1.099); /* inside the band (default 10 %): stays */
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    eye_at_angle(&view, t * 1.101); /* across it: finer */
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 1);
    eye_at_angle(&view, t * 0.901); /* back inside the band: stays */
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 1);
    eye_at_angle(&view, t * 0.899); /* below it: coarser */
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    /* A jump across several thresholds lands on the level the band allows at once. */
    eye_at_angle(&view, 1.0);
    assert_int_equal(rv_lod_selector_update(&s, &l, &nofade, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 0);

    /* Negative hysteresis: none, the plain thresholds switch. */
    rv_lod_desc none = { .hysteresis = -1, .crossfade_ms = -1 };
    rv_lod_selector p = {0};
    eye_at_angle(&view, t * 0.999);
    assert_int_equal(rv_lod_selector_update(&p, &l, &none, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    eye_at_angle(&view, t * 1.001);
    assert_int_equal(rv_lod_selector_update(&p, &l, &none, &view, c, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 1);
}

/* ---- crossfade ----------------------------------------------------------------------- */

static void assert_selection(const rv_lod_selection *sel, uint32_t count, uint32_t in, uint32_t out_level,
                             float w_in)
{
    assert_int_equal(sel->count, count);
    assert_int_equal(sel->levels[0], in);
    assert_int_equal(sel->levels[1], out_level);
    assert_float_equal(sel->weights[0], w_in, 1e-6);
    assert_float_equal(sel->weights[0] + sel->weights[1], 1.0f, 1e-6);
}

static void test_crossfade_weights_sum_to_one_and_finish_after_crossfade_ms(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    float c[3] = { 0, 0, 0 };
    rv_lod_view view = {0};
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    eye_at_angle(&view, 0.03); /* level 2 */
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1, 0, &sel), RV_OK);
    assert_selection(&sel, 1, 2, 2, 1.0f);
    eye_at_angle(&view, 0.1); /* level 1: the fade starts at weight 0 */
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1, 30, &sel), RV_OK);
    assert_selection(&sel, 2, 1, 2, 0.0f);
    /* Uneven steps: 0.2, 0.6, 0.996 of 250 ms, then exactly 250: done. */
    const float steps[4] = { 50, 100, 99, 1 };
    const float expect[4] = { 0.2f, 0.6f, 0.996f, 1.0f };
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1, steps[k], &sel), RV_OK);
        if (k < 3)
            assert_selection(&sel, 2, 1, 2, expect[k]);
        else
            assert_selection(&sel, 1, 1, 1, 1.0f);
    }
    /* With a 100 ms fade, ten steps of 10 ms: nine report two levels, the tenth one. */
    rv_lod_desc fast = { .crossfade_ms = 100 };
    eye_at_angle(&view, 0.03);
    assert_int_equal(rv_lod_selector_update(&s, &l, &fast, &view, c, 1, 10, &sel), RV_OK);
    assert_selection(&sel, 2, 2, 1, 0.0f);
    for (int k = 1; k <= 10; k++) {
        assert_int_equal(rv_lod_selector_update(&s, &l, &fast, &view, c, 1, 10, &sel), RV_OK);
        if (k < 10)
            assert_selection(&sel, 2, 2, 1, 0.1f * (float)k);
        else
            assert_selection(&sel, 1, 2, 2, 1.0f);
    }
    /* Negative crossfade: the level switches at once. */
    rv_lod_desc none = { .crossfade_ms = -1 };
    eye_at_angle(&view, 0.1);
    assert_int_equal(rv_lod_selector_update(&s, &l, &none, &view, c, 1, 10, &sel), RV_OK);
    assert_selection(&sel, 1, 1, 1, 1.0f);
    /* Bad input leaves the selector alone. */
    rv_lod_selector before = s;
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1, -1, &sel), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, 1, NAN, &sel), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_selector_update(&s, &l, NULL, &view, c, -1, 1, &sel), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_selector_update(NULL, &l, NULL, &view, c, 1, 1, &sel), RV_ERR_INVALID_ARG);
    assert_memory_equal(&s, &before, sizeof s);
}

/* Weight of each level 0..4 in a selection (a level absent has weight 0). */
static void weights_by_level(const rv_lod_selection *sel, float out[5])
{
    memset(out, 0, 5 * sizeof *out);
    out[sel->levels[0]] += sel->weights[0];
    if (sel->count == 2)
        out[sel->levels[1]] += sel->weights[1];
}

/* The weight of the levels of a selection other than `last` (nothing, in the frame). */
static float drawn_weight(const rv_lod_selection *sel, uint32_t last)
{
    float w = sel->levels[0] != last ? sel->weights[0] : 0.0f;
    if (sel->count == 2 && sel->levels[1] != last)
        w += sel->weights[1];
    return w;
}

/* One selector update at dt_ms toward `angle`; asserts that no level's weight moved by more
 * than dt_ms / crossfade_ms (plus rounding) and that the weights sum to 1. */
static void step_checked(rv_lod_selector *s, const rv_lod_ladder *l, const rv_lod_desc *desc, double angle,
                         float dt_ms, float crossfade_ms, rv_lod_selection *sel)
{
    rv_lod_view view = {0};
    float c[3] = { 0, 0, 0 }, before[5], after[5];
    rv_lod_selection prev = *sel;
    weights_by_level(&prev, before);
    eye_at_angle(&view, angle);
    assert_int_equal(rv_lod_selector_update(s, l, desc, &view, c, 1, dt_ms, sel), RV_OK);
    weights_by_level(sel, after);
    assert_float_equal(sel->weights[0] + sel->weights[1], 1.0f, 1e-6);
    for (int k = 0; k < 5; k++)
        assert_true(fabsf(after[k] - before[k]) <= dt_ms / crossfade_ms + 1e-5f);
}

static void test_crossfade_retarget_to_a_third_level_never_jumps(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    const double angle_of[4] = { 1.0, 0.1, 0.03, 0.001 }; /* levels 0, 1, 2, 3 */
    rv_lod_selection sel;

    /* Fading 2 -> 1 with 1 at 0.64 and 2 at 0.36 when level 0 is wanted: the two settle
     * first (2 leaves at the fade's rate, 1 takes its weight), then 0 fades in from 1. */
    rv_lod_selector s = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&s, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&s, &l, NULL, angle_of[1], 0, 250, &sel);
    step_checked(&s, &l, NULL, angle_of[1], 160, 250, &sel); /* sets the stage: one step of 0.64 */
    assert_selection(&sel, 2, 1, 2, 0.64f);
    for (int k = 1; k <= 5; k++) {
        step_checked(&s, &l, NULL, angle_of[0], 16, 250, &sel);
        assert_selection(&sel, 2, 1, 2, 0.64f + 0.064f * (float)k);
    }
    step_checked(&s, &l, NULL, angle_of[0], 16, 250, &sel); /* 2 is gone: 0 enters */
    assert_selection(&sel, 2, 0, 1, 0.0f);
    for (int k = 1; k < 16; k++) {
        step_checked(&s, &l, NULL, angle_of[0], 16, 250, &sel);
        assert_selection(&sel, 2, 0, 1, 0.064f * (float)k);
    }
    step_checked(&s, &l, NULL, angle_of[0], 16, 250, &sel);
    assert_selection(&sel, 1, 0, 0, 1.0f);

    /* Fading 2 -> 1, 20 % in, when 0 is wanted: 2 is heavier and comes back, keeping 0.8;
     * 1 leaves from 0.2, then 0 fades in from 2. */
    rv_lod_selector u = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&u, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&u, &l, NULL, angle_of[1], 0, 250, &sel);
    step_checked(&u, &l, NULL, angle_of[1], 50, 250, &sel);
    step_checked(&u, &l, NULL, angle_of[0], 0, 250, &sel);
    assert_selection(&sel, 2, 2, 1, 0.8f);
    step_checked(&u, &l, NULL, angle_of[0], 25, 250, &sel);
    assert_selection(&sel, 2, 2, 1, 0.9f);
    step_checked(&u, &l, NULL, angle_of[3], 25, 250, &sel); /* another level meanwhile: still settling */
    step_checked(&u, &l, NULL, angle_of[0], 0, 250, &sel);
    assert_selection(&sel, 2, 0, 2, 0.0f);
    step_checked(&u, &l, NULL, angle_of[0], 125, 250, &sel);
    assert_selection(&sel, 2, 0, 2, 0.5f);

    /* Fading 2 -> nothing (3) with nothing at 0.64 when level 0 is wanted: nothing is the
     * heavier one, but settling toward it would leave the object undrawn while it should be
     * drawn. 2 turns back from 0.36 instead, then 0 fades in from 2. */
    rv_lod_selector x = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&x, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&x, &l, NULL, angle_of[3], 0, 250, &sel);
    step_checked(&x, &l, NULL, angle_of[3], 160, 250, &sel);
    assert_selection(&sel, 2, 3, 2, 0.64f);
    step_checked(&x, &l, NULL, angle_of[0], 16, 250, &sel); /* it turns, then the step's time passes */
    assert_selection(&sel, 2, 2, 3, 0.424f);
    for (int k = 1; k <= 8; k++) {
        step_checked(&x, &l, NULL, angle_of[0], 16, 250, &sel);
        assert_selection(&sel, 2, 2, 3, 0.424f + 0.064f * (float)k);
    }
    step_checked(&x, &l, NULL, angle_of[0], 16, 250, &sel); /* nothing is gone: 0 enters */
    assert_selection(&sel, 2, 0, 2, 0.0f);
    /* Fading nothing (3) -> 2, 40 % in, when level 0 is wanted: 2 keeps fading in, then 0
     * from 2 (settling would have sent 2 back out, nothing being the heavier). */
    rv_lod_selector y = {0};
    sel = (rv_lod_selection){ { 3, 3 }, { 1, 0 }, 1 };
    step_checked(&y, &l, NULL, angle_of[3], 0, 250, &sel);
    step_checked(&y, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&y, &l, NULL, angle_of[2], 100, 250, &sel);
    assert_selection(&sel, 2, 2, 3, 0.4f);
    step_checked(&y, &l, NULL, angle_of[0], 50, 250, &sel);
    assert_selection(&sel, 2, 2, 3, 0.6f);
    step_checked(&y, &l, NULL, angle_of[0], 100, 250, &sel);
    assert_selection(&sel, 2, 0, 2, 0.0f);
    /* Wanted nothing while fading 2 -> 1: the usual settling (1 is heavier at 0.64). */
    rv_lod_selector z = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&z, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&z, &l, NULL, angle_of[1], 0, 250, &sel);
    step_checked(&z, &l, NULL, angle_of[1], 160, 250, &sel);
    step_checked(&z, &l, NULL, angle_of[3], 16, 250, &sel);
    assert_selection(&sel, 2, 1, 2, 0.704f);

    /* A fade that has not moved yet (its level still at weight 0) is simply redirected. */
    rv_lod_selector v = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&v, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&v, &l, NULL, angle_of[1], 10, 250, &sel);
    assert_selection(&sel, 2, 1, 2, 0.0f);
    step_checked(&v, &l, NULL, angle_of[0], 0, 250, &sel);
    assert_selection(&sel, 2, 0, 2, 0.0f);

    /* Fading 2 -> 1, 30 % in, back to 2: a reversal, 2 returns from 0.7. */
    rv_lod_selector w = {0};
    sel = (rv_lod_selection){ { 2, 2 }, { 1, 0 }, 1 };
    step_checked(&w, &l, NULL, angle_of[2], 0, 250, &sel);
    step_checked(&w, &l, NULL, angle_of[1], 0, 250, &sel);
    step_checked(&w, &l, NULL, angle_of[1], 75, 250, &sel);
    step_checked(&w, &l, NULL, angle_of[2], 0, 250, &sel);
    assert_selection(&sel, 2, 2, 1, 0.7f);
    step_checked(&w, &l, NULL, angle_of[2], 75, 250, &sel);
    assert_selection(&sel, 1, 2, 2, 1.0f);
}

static void test_crossfade_random_targets_never_move_a_weight_faster_than_the_fade(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    const double angle_of[4] = { 1.0, 0.1, 0.03, 0.001 };
    const float fades[2] = { 250, 100 };
    for (int run = 0; run < 2; run++) {
        rv_lod_desc desc = { .crossfade_ms = fades[run] };
        uint64_t seed = 7 + (uint64_t)run;
        rv_lod_selector s = {0};
        rv_lod_selection sel = { { 0, 0 }, { 1, 0 }, 1 };
        uint32_t wanted = 2;
        double held_ms = 0; /* how long the wanted level has not changed */
        uint64_t settled = 0, changes = 0;
        for (int frame = 0; frame < 100000; frame++) {
            if (rvt_next(&seed) % 8 == 0) {
                uint32_t next = (uint32_t)(rvt_next(&seed) % 4);
                changes += next != wanted;
                held_ms = next != wanted ? 0 : held_ms;
                wanted = next;
            }
            float dt = (float)(rvt_next(&seed) % 41); /* 0..40 ms, zero steps included */
            if (frame == 0) {
                rv_lod_view view = {0};
                float c[3] = { 0, 0, 0 };
                eye_at_angle(&view, angle_of[wanted]);
                assert_int_equal(rv_lod_selector_update(&s, &l, &desc, &view, c, 1, dt, &sel), RV_OK);
                continue;
            }
            float drawn_before = drawn_weight(&sel, 3);
            step_checked(&s, &l, &desc, angle_of[wanted], dt, fades[run], &sel);
            held_ms += dt;
            assert_true(sel.count == 1 || sel.levels[0] != sel.levels[1]);
            /* While a drawn level is wanted, what is drawn never fades toward nothing. */
            if (wanted != 3)
                assert_true(drawn_weight(&sel, 3) >= drawn_before - 1e-5f);
            /* And it gets there: settling takes at most a fade (half a fade between two
             * drawn levels) and the fade one more, each ending on a frame boundary (up to
             * one step late). */
            if (held_ms >= 2.0 * fades[run] + 2 * 40) {
                assert_int_equal(sel.count, 1);
                assert_int_equal(sel.levels[0], wanted);
                settled++;
            }
        }
        assert_true(changes > 5000); /* the targets really moved */
        assert_true(settled > 1000);  /* and were reached */
    }
}

/* ---- nodes: world LOD state ---------------------------------------------------------- */

static void test_node_selection_fades_on_the_world_clock(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_world *w = rvt_world_lod(NULL);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, 0, 1.0f);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view view = {0};
    rv_lod_selection sel;
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_node_set_lod_ladder(w, n, &l), RV_OK);
    rv_lod_ladder got;
    assert_int_equal(rv_node_get_lod_ladder(w, n, &got), RV_OK);
    assert_memory_equal(&got, &l, sizeof l);
    eye_at_angle(&view, 0.03);
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    assert_selection(&sel, 1, 2, 2, 1.0f);
    assert_false(rvi_lod_fading(w));
    eye_at_angle(&view, 0.1);
    assert_int_equal(rv_lod_advance(w, 16), RV_OK);
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    assert_selection(&sel, 2, 1, 2, 0.0f);
    assert_true(rvi_lod_fading(w));
    /* The clock runs whether or not the node is selected: 100 + 100 ms unseen. */
    assert_int_equal(rv_lod_advance(w, 100), RV_OK);
    assert_int_equal(rv_lod_advance(w, 100), RV_OK);
    assert_true(rvi_lod_fading(w));
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    assert_selection(&sel, 2, 1, 2, 0.8f);
    assert_int_equal(rv_lod_advance(w, 50), RV_OK);
    assert_false(rvi_lod_fading(w));
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    assert_selection(&sel, 1, 1, 1, 1.0f);
    /* Hysteresis holds for nodes too. */
    for (int frame = 0; frame < 100; frame++) {
        eye_at_angle(&view, 0.06 * (frame % 2 ? 1.01 : 0.99));
        assert_int_equal(rv_lod_advance(w, 16), RV_OK);
        assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
        assert_selection(&sel, 1, 1, 1, 1.0f);
    }
    /* Setting a ladder again resets the selection (no fade on the next one). */
    assert_int_equal(rv_node_set_lod_ladder(w, n, &l), RV_OK);
    eye_at_angle(&view, 0.001);
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    assert_selection(&sel, 1, 3, 3, 1.0f);
    /* Errors. */
    assert_int_equal(rv_lod_advance(w, -1), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_lod_advance(w, INFINITY), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_lod_advance(NULL, 1), RV_ERR_INVALID_ARG);
    view.eye[0] = NAN;
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_ERR_NOT_FINITE);
    rv_lod_ladder bad = l;
    bad.thresholds[2] = 0.5f;
    assert_int_equal(rv_node_set_lod_ladder(w, n, &bad), RV_ERR_ORDER);
    assert_int_equal(rv_node_get_lod_ladder(w, n, &got), RV_OK);
    assert_memory_equal(&got, &l, sizeof l);
    /* NULL removes. */
    assert_int_equal(rv_node_set_lod_ladder(w, n, NULL), RV_OK);
    assert_int_equal(rv_node_get_lod_ladder(w, n, &got), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_node_set_lod_ladder(w, n, NULL), RV_OK);
    rv_world_destroy(w);
}

static void test_destroyed_node_drops_its_lod_state(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    const float other_t[2] = { 0.5f, 0.1f };
    rv_lod_ladder other;
    assert_int_equal(rv_lod_ladder_make(other_t, 2, &other), RV_OK);
    rv_world *w = rvt_world_lod(NULL);
    rv_node a = rvt_object(w, RV_NODE_NONE, 0, 0, 0, 1), b = rvt_object(w, RV_NODE_NONE, 5, 0, 0, 1), c = rvt_object(w, RV_NODE_NONE, 9, 0, 0, 1);
    assert_int_equal(rv_node_set_lod_ladder(w, a, &l), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, b, &other), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, c, &l), RV_OK);
    assert_int_equal(rv_node_destroy_subtree(w, a), RV_OK);
    rv_lod_ladder got;
    assert_int_equal(rv_node_get_lod_ladder(w, a, &got), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_node_get_lod_ladder(w, b, &got), RV_OK);
    assert_memory_equal(&got, &other, sizeof other);
    assert_int_equal(rv_node_get_lod_ladder(w, c, &got), RV_OK);
    assert_memory_equal(&got, &l, sizeof l);
    /* A new node in the freed slot starts without a ladder. */
    rv_node fresh = rvt_object(w, RV_NODE_NONE, 0, 0, 0, 1);
    assert_int_equal(rv_node_get_lod_ladder(w, fresh, &got), RV_ERR_NOT_FOUND);
    rv_world_destroy(w);
}

static void test_steady_node_selection_allocates_nothing(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    rv_world *w = rvt_world_lod(NULL);
    enum { N = 300 };
    rv_node nodes[N];
    for (int i = 0; i < N; i++) {
        nodes[i] = rvt_object(w, RV_NODE_NONE, (float)(i % 20) * 4.0f, 0, (float)(i / 20) * -4.0f, 1.0f);
        assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], &l), RV_OK);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view view = { .eye = { 0, 2, 10 } };
    rv_alloc_stats before = rv_world_alloc_stats(w);
    int fades = 0;
    for (int frame = 0; frame < 200; frame++) {
        view.eye[2] = 10.0f - (float)frame * 0.5f; /* walk through the field */
        assert_int_equal(rv_lod_advance(w, 16.6f), RV_OK);
        for (int i = 0; i < N; i++) {
            rv_lod_selection sel;
            assert_int_equal(rv_node_lod_select(w, nodes[i], &view, &sel), RV_OK);
            fades += sel.count == 2;
        }
    }
    rv_alloc_stats after = rv_world_alloc_stats(w);
    assert_true(fades > 0);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.reallocations, before.reallocations);
    rv_world_destroy(w);
}

/* A fade toward nothing whose crossfade the host shortens below the time it has run, the
 * object then wanted again: the drawn level turns back from the whole weight of nothing,
 * listed with a weight from the first selection on, and the state stays one every later
 * update accepts (a negative fade time was left before: refused ever after, and the node
 * listed at weight 0 for five frames). */
static void test_crossfade_shortened_mid_fade_turns_back_with_weight(void **state)
{
    (void)state;
    rv_lod_ladder l = seed_ladder();
    float c[3] = { 0, 0, 0 };
    rv_lod_view view = {0};
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    rv_lod_desc slow = { .crossfade_ms = 250 }, fast = { .crossfade_ms = 100 };
    eye_at_angle(&view, 0.03); /* level 2 */
    assert_int_equal(rv_lod_selector_update(&s, &l, &slow, &view, c, 1, 16, &sel), RV_OK);
    eye_at_angle(&view, 0.005); /* nothing */
    for (int k = 0; k < 13; k++)
        assert_int_equal(rv_lod_selector_update(&s, &l, &slow, &view, c, 1, 16, &sel), RV_OK);
    assert_selection(&sel, 2, 3, 2, 192.0f / 250.0f);
    eye_at_angle(&view, 0.1); /* level 1 wanted: level 2, drawn, turns back */
    assert_int_equal(rv_lod_selector_update(&s, &l, &fast, &view, c, 1, 16, &sel), RV_OK);
    assert_selection(&sel, 2, 2, 3, 0.16f);
    assert_true(s.fade_ms >= 0.0f && s.fade_ms <= 100.0f);
    for (int k = 0; k < 3; k++) {
        float before = sel.weights[0];
        assert_int_equal(rv_lod_selector_update(&s, &l, &fast, &view, c, 1, 16, &sel), RV_OK);
        assert_int_equal(sel.levels[0], 2);
        assert_true(sel.weights[0] > before);
    }

    /* A node of a world, its desc changed by rv_lod_set_desc: listed at every selection. */
    rv_world *w = rvt_world_lod(NULL);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, 0, 1.0f);
    assert_int_equal(rv_node_set_lod_ladder(w, n, &l), RV_OK);
    assert_int_equal(rv_lod_set_desc(w, &slow), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    eye_at_angle(&view, 0.03);
    assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    eye_at_angle(&view, 0.005);
    for (int k = 0; k < 13; k++) {
        assert_int_equal(rv_lod_advance(w, 16), RV_OK);
        assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
    }
    assert_int_equal(sel.count, 2);
    assert_int_equal(sel.levels[1], 2);
    assert_int_equal(rv_lod_set_desc(w, &fast), RV_OK);
    eye_at_angle(&view, 0.1);
    for (int k = 0; k < 8; k++) {
        assert_int_equal(rv_lod_advance(w, 16), RV_OK);
        assert_int_equal(rv_node_lod_select(w, n, &view, &sel), RV_OK);
        assert_true(sel.levels[0] != l.count || sel.count == 2);
        float drawn = 0;
        for (uint32_t i = 0; i < sel.count; i++)
            drawn += sel.levels[i] != l.count ? sel.weights[i] : 0.0f;
        assert_true(drawn > 0.0f);
    }
    rv_world_destroy(w);
}

/* ---- allocation failure -------------------------------------------------------------- */

typedef struct ladder_case {
    rv_world *world;
    rv_node nodes[200];
    uint32_t count;
    uint32_t target;
} ladder_case;

static ladder_case the_case;

static void *ladder_setup_n(const rv_allocator *a, uint32_t existing, uint32_t nodes)
{
    rv_world_desc desc = {0};
    desc.allocator = *a;
    ladder_case *c = &the_case;
    memset(c, 0, sizeof *c);
    assert_int_equal(rv_world_create(&desc, &c->world), RV_OK);
    rv_lod_ladder l = seed_ladder();
    for (uint32_t i = 0; i < nodes; i++) {
        c->nodes[i] = rvt_object(c->world, RV_NODE_NONE, (float)i, 0, 0, 1);
        if (i < existing)
            assert_int_equal(rv_node_set_lod_ladder(c->world, c->nodes[i], &l), RV_OK);
    }
    c->count = nodes;
    c->target = nodes - 1;
    return c;
}
static void *setup_first_ladder(const rv_allocator *a) { return ladder_setup_n(a, 0, 3); }
/* 8 ladders exist; the 9th grows the record storage, and slot 150 grows the slot map. */
static void *setup_growing_ladder(const rv_allocator *a) { return ladder_setup_n(a, 8, 151); }

static rv_result call_set_ladder(void *o)
{
    ladder_case *c = o;
    rv_lod_ladder l = seed_ladder();
    return rv_node_set_lod_ladder(c->world, c->nodes[c->target], &l);
}
static rv_result call_advance(void *o)
{
    ladder_case *c = o;
    return rv_lod_advance(c->world, 5);
}
static rv_result call_set_desc(void *o)
{
    ladder_case *c = o;
    rv_lod_desc d = { .bias = 2 };
    return rv_lod_set_desc(c->world, &d);
}

static uint64_t ladder_fingerprint(void *o)
{
    ladder_case *c = o;
    uint64_t h = rv_world_alloc_stats(c->world).bytes_live;
    for (uint32_t i = 0; i < c->count; i++) {
        rv_lod_ladder got;
        h = h * 31 + (uint64_t)rv_node_get_lod_ladder(c->world, c->nodes[i], &got);
    }
    rv_lod_desc d;
    rv_lod_get_desc(c->world, &d);
    return h * 31 + (uint64_t)(d.bias * 1000);
}
static void ladder_teardown(void *o)
{
    ladder_case *c = o;
    rv_world_destroy(c->world);
    c->world = NULL;
}

static void test_lod_calls_survive_every_allocation_failure(void **state)
{
    (void)state;
    rvt_sweep first = { "rv_node_set_lod_ladder (first)", setup_first_ladder, call_set_ladder,
                        ladder_fingerprint, ladder_teardown };
    assert_true(rvt_run_sweep(&first) >= 3);
    rvt_sweep grow = { "rv_node_set_lod_ladder (grow)", setup_growing_ladder, call_set_ladder,
                       ladder_fingerprint, ladder_teardown };
    assert_int_equal(rvt_run_sweep(&grow), 2);
    rvt_sweep adv = { "rv_lod_advance (first)", setup_first_ladder, call_advance,
                      ladder_fingerprint, ladder_teardown };
    assert_int_equal(rvt_run_sweep(&adv), 1);
    rvt_sweep desc = { "rv_lod_set_desc (first)", setup_first_ladder, call_set_desc,
                       ladder_fingerprint, ladder_teardown };
    assert_int_equal(rvt_run_sweep(&desc), 1);
}

/* A host that gives an object another ladder between updates gets only levels that ladder
 * has: the selection starts over (no fade from a level that does not exist), while a
 * selector whose levels the new ladder has keeps fading as before; a selector no update can
 * have left is refused and left as it was. */
static void test_selector_answers_only_levels_of_the_ladder_it_is_given(void **state)
{
    (void)state;
    const float four[4] = { 0.4f, 0.2f, 0.1f, 0.05f }, one[1] = { 0.4f };
    rv_lod_ladder l4, l1;
    assert_int_equal(rv_lod_ladder_make(four, 4, &l4), RV_OK);
    assert_int_equal(rv_lod_ladder_make(one, 1, &l1), RV_OK);
    rv_lod_view view = { .eye = { 0, 0, 0 } };
    rv_lod_desc fade = { .crossfade_ms = 100.0f };
    const float near[3] = { 0, 0, -4 }, mid[3] = { 0, 0, -12 };
    rv_lod_selector s = {0};
    rv_lod_selection sel;
    /* 2 asin(1 / 12) = 0.167: level 2 of four (0.4, 0.2 not reached; 0.1 reached). */
    assert_int_equal(rv_lod_selector_update(&s, &l4, &fade, &view, mid, 1.0f, 0, &sel), RV_OK);
    assert_int_equal(sel.levels[0], 2);
    /* Coming near starts a fade toward 0. */
    assert_int_equal(rv_lod_selector_update(&s, &l4, &fade, &view, near, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.count, 2);
    /* The same object now on one threshold: 0.167 < 0.4, "nothing" (1), nothing else. */
    for (int f = 0; f < 10; f++) {
        assert_int_equal(rv_lod_selector_update(&s, &l1, &fade, &view, mid, 1.0f, 16, &sel), RV_OK);
        for (uint32_t k = 0; k < sel.count; k++)
            assert_true(sel.levels[k] <= l1.count);
        assert_int_equal(sel.count, 1);
        assert_int_equal(sel.levels[0], 1);
    }
    /* Back to four: level 1 of the short ladder exists there too, so it fades on from it. */
    assert_int_equal(rv_lod_selector_update(&s, &l4, &fade, &view, mid, 1.0f, 16, &sel), RV_OK);
    assert_int_equal(sel.count, 2);
    assert_true(sel.levels[0] == 2 && sel.levels[1] == 1);
    /* States no update leaves: refused, nothing written. */
    const rv_lod_selector bad[4] = { { 2, 2, 0.0f, 0x80u | 1u }, { 2, 1, NAN, 3u }, { 1000000, 1000000, 0.0f, 1u },
                                     { 2, 1, 5.0f, 2u } };
    for (int i = 0; i < 4; i++) {
        rv_lod_selector b = bad[i];
        rv_lod_selection before = { { 7, 7 }, { 0.5f, 0.5f }, 2 }, got = before;
        assert_int_equal(rv_lod_selector_update(&b, &l4, &fade, &view, mid, 1.0f, 16, &got), RV_ERR_INVALID_ARG);
        assert_memory_equal(&b, &bad[i], sizeof b);
        assert_memory_equal(&got, &before, sizeof got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ladder_make_keeps_strictly_descending_thresholds),
        cmocka_unit_test(test_ladder_make_refuses_unsorted_equal_negative_nan_empty),
        cmocka_unit_test(test_level_at_each_threshold_and_one_part_in_ten_thousand_around_it),
        cmocka_unit_test(test_first_selection_equals_scalar_level_at_every_float_step_across_thresholds),
        cmocka_unit_test(test_eye_inside_sphere_is_level_zero),
        cmocka_unit_test(test_batch_decides_tiny_spheres_steep_thresholds_and_spheres_after_a_nan_in_double),
        cmocka_unit_test(test_batch_matches_scalar_and_asin_reference),
        cmocka_unit_test(test_batch_decides_spheres_beyond_float_range_in_double),
        cmocka_unit_test(test_bias_multiplies_the_angle),
        cmocka_unit_test(test_finest_level_replaces_finer_levels),
        cmocka_unit_test(test_orthographic_angle_is_diameter_over_view_height_times_reference_fov),
        cmocka_unit_test(test_batch_reports_nan_infinity_and_negative_radius),
        cmocka_unit_test(test_desc_resolves_defaults_and_refuses_out_of_range),
        cmocka_unit_test(test_node_form_uses_world_bounds_and_scale_counts),
        cmocka_unit_test(test_hysteresis_oscillation_of_one_percent_never_changes_level),
        cmocka_unit_test(test_hysteresis_crossing_the_band_changes_level),
        cmocka_unit_test(test_crossfade_weights_sum_to_one_and_finish_after_crossfade_ms),
        cmocka_unit_test(test_crossfade_retarget_to_a_third_level_never_jumps),
        cmocka_unit_test(test_crossfade_random_targets_never_move_a_weight_faster_than_the_fade),
        cmocka_unit_test(test_node_selection_fades_on_the_world_clock),
        cmocka_unit_test(test_node_selection_matches_a_host_selector_step_by_step),
        cmocka_unit_test(test_destroyed_node_drops_its_lod_state),
        cmocka_unit_test(test_selector_answers_only_levels_of_the_ladder_it_is_given),
        cmocka_unit_test(test_crossfade_shortened_mid_fade_turns_back_with_weight),
        cmocka_unit_test(test_steady_node_selection_allocates_nothing),
        cmocka_unit_test(test_lod_calls_survive_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
