/* Occlusion buffer (docs/design.md §4): the worked example's wall, decals, width 0,
 * freezing, depth conventions, orthographic views, the near plane, hostile input, and a property
 * test against a slow, obviously-correct reference (rays to sample points of each object's
 * surface against exact ray-box intersection of the occluders). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "occlusion_test.h"
#include "support/occlusion_ref.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool crate_visible(rv_occlusion *occ, float x, float y, float z)
{
    float mn[3] = { x - 0.5f, y - 0.5f, z - 0.5f }, mx[3] = { x + 0.5f, y + 0.5f, z + 0.5f };
    return box_visible(occ, mn, mx, NULL);
}


/* ---- random scenes --------------------------------------------------------------------- */

#define MAX_OCC 8

typedef struct scene {
    camera cam;
    float vp[16];
    ref_view rv;
    ref_box occ[MAX_OCC];
    int n_occ;
    double fwd[3];
} scene;

static void random_scene(uint64_t *s, scene *sc)
{
    camera *c = &sc->cam;
    double dir[3];
    random_camera(s, c, dir);
    camera_matrix(c, sc->vp);
    ref_view_init(&sc->rv, sc->vp, c->clip);
    memcpy(sc->fwd, dir, sizeof dir);
    double up[3] = { 0, 1, 0 }, side[3], top[3];
    cross3(dir, up, side);
    normalize3(side);
    cross3(side, dir, top);
    sc->n_occ = 1 + (int)(rvt_next(s) % 6);
    for (int k = 0; k < sc->n_occ; k++) {
        bool crossing = rvt_uniform(s, 0, 1) < 0.1f;
        double d = crossing ? rvt_uniform(s, -1, 2) : rvt_uniform(s, 2, 30);
        double spread = c->ortho_height > 0 ? c->ortho_height / 2 : d * tan(c->fov_y / 2);
        double a = rvt_uniform(s, -1, 1) * spread, b = rvt_uniform(s, -1, 1) * spread;
        double centre[3], h[3];
        for (int i = 0; i < 3; i++) {
            centre[i] = c->eye[i] + d * dir[i] + a * side[i] + b * top[i];
            h[i] = rvt_uniform(s, 0.1f, crossing ? 8.0f : 6.0f);
        }
        if (rvt_uniform(s, 0, 1) < 0.1f)
            h[rvt_next(s) % 3] = 0; /* a flat occluder: a wall quad */
        place_box(s, &sc->occ[k], centre, h, rvt_uniform(s, 0, 1) < 0.4f);
    }
}

/* An object somewhere behind, beside or around one of the occluders. */
static void random_object(uint64_t *s, const scene *sc, ref_box *obj, bool allow_matrix)
{
    const ref_box *o = &sc->occ[rvt_next(s) % (uint64_t)sc->n_occ];
    place_object_near(s, o, &sc->cam, sc->fwd, obj, allow_matrix);
}

static rv_occlusion *scene_occlusion(const scene *sc, uint32_t width)
{
    rv_occlusion *occ = make_occlusion(width);
    assert_int_equal(rv_occlusion_begin(occ, sc->vp, sc->cam.clip, (float)sc->cam.aspect), RV_OK);
    for (int k = 0; k < sc->n_occ; k++) {
        const ref_box *b = &sc->occ[k];
        assert_int_equal(rv_occlusion_add_occluder(occ, b->min, b->max, b->has_matrix ? b->matrix : NULL), RV_OK);
    }
    return occ;
}

/* ---- the property test ----------------------------------------------------------------- */

static void test_never_culls_what_the_reference_sees(void **state)
{
    (void)state;
    const int trials = RVT_HEAVY(100000, 3000), per_scene = 100, grid = RVT_HEAVY(6, 4);
    static const uint32_t widths[4] = { 64, 128, 256, 512 };
    uint64_t seed = 0x0CC1u, hidden = 0, culled_hidden = 0, culled = 0, false_culls = 0, near_cross = 0, near_culled = 0;
    uint8_t vis[100];
    for (int t = 0; t < trials; t += per_scene) {
        scene sc;
        random_scene(&seed, &sc);
        rvt_fine_tests = (uint32_t)(t / per_scene) & 1; /* every other scene tests finer than a texel */
        /* one in four fuses nothing, finer or not */
        rvt_fusion = (uint32_t)(t / per_scene) % 8 >= 6 ? RV_FUSION_OFF : RV_FUSION_AUTO;
        rv_occlusion *occ = scene_occlusion(&sc, widths[rvt_next(&seed) % 4]);
        rvt_fine_tests = 0;
        rvt_fusion = RV_FUSION_AUTO;
        ref_box obj[100];
        float mn[3][100], mx[3][100];
        for (int i = 0; i < per_scene; i++) {
            random_object(&seed, &sc, &obj[i], i % 2); /* world boxes feed the batch below too */
            for (int a = 0; a < 3; a++) {
                mn[a][i] = obj[i].min[a];
                mx[a][i] = obj[i].max[a];
            }
        }
        for (int i = 0; i < per_scene; i++) {
            bool lib = box_visible(occ, obj[i].min, obj[i].max, obj[i].has_matrix ? obj[i].matrix : NULL);
            vis[i] = lib;
            bool crosses = ref_crosses_near(&sc.rv, &obj[i]);
            near_cross += crosses;
            bool seen = ref_object_seen(&sc.rv, sc.occ, sc.n_occ, &obj[i], &seed, grid);
            if (!seen && !ref_object_seen(&sc.rv, NULL, 0, &obj[i], &seed, grid))
                continue; /* outside the view volume: frustum culling's business, not counted */
            culled += !lib;
            hidden += !seen;
            culled_hidden += !seen && !lib;
            near_culled += crosses && !lib;
            if (seen && !lib) {
                false_culls++;
                fprintf(stderr, "false cull: trial %d object %d%s\n", t, i, crosses ? " (reaches before the near plane)" : "");
            }
        }
        /* The batch answers world boxes exactly as the single test does. */
        uint8_t batch[100];
        rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
        assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, per_scene, batch), RV_OK);
        for (int i = 0; i < per_scene; i++)
            if (!obj[i].has_matrix)
                assert_int_equal(batch[i], vis[i]);
        rv_occlusion_destroy(occ);
    }
    double efficiency = hidden ? (double)culled_hidden / (double)hidden : 0;
    printf("occlusion property: %d objects, %llu near-crossing (%llu of them culled), %llu in view and hidden by the "
           "reference, %llu in view and culled, "
           "cull_efficiency %.3f, false culls %llu\n",
           trials, (unsigned long long)near_cross, (unsigned long long)near_culled, (unsigned long long)hidden,
           (unsigned long long)culled, efficiency,
           (unsigned long long)false_culls);
    assert_int_equal(false_culls, 0);
    assert_true(hidden > (uint64_t)trials / 10);
    assert_true(efficiency >= 0.60);
}

/* NULL = identity: a box under an identity matrix gets its world box's verdict, one at a
 * time and in a batch, also far from the origin, where the oriented box's corners round
 * otherwise than the world box's. */
static void test_an_identity_matrix_is_no_matrix(void **state)
{
    (void)state;
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    static const float signed_zeros[16] = { 1, -0.0f, 0, 0, -0.0f, 1, -0.0f, 0, 0, -0.0f, 1, 0, -0.0f, 0, -0.0f, 1 };
    enum { N = 200 };
    static float mn[3][N], mx[3][N], identities[N * 16], centre[3][N], radius[N];
    for (int i = 0; i < N; i++)
        memcpy(identities + 16 * i, i % 2 ? signed_zeros : identity, sizeof identity);
    uint64_t seed = 0x1D3u, tested = 0, hidden = 0;
    for (int sc = 0; sc < 24; sc++) {
        double off = sc % 2 ? pow(10.0, rvt_uniform(&seed, 4, 6)) : 0;
        double eye[3], dir[3] = { rvt_uniform(&seed, -1, 1), rvt_uniform(&seed, -0.3f, 0.3f), rvt_uniform(&seed, -1, 1) };
        normalize3(dir);
        for (int a = 0; a < 3; a++)
            eye[a] = off * rvt_uniform(&seed, -1, 1);
        camera c = look(eye[0], eye[1], eye[2], eye[0] + dir[0], eye[1] + dir[1], eye[2] + dir[2]);
        c.clip = ref_conventions[sc % 4];
        rv_occlusion *occ = make_occlusion(sc % 3 == 0 ? 64 : 256);
        begin_camera(occ, &c);
        double up[3] = { 0, 1, 0 }, side[3], top[3];
        cross3(dir, up, side);
        normalize3(side);
        cross3(side, dir, top);
        double centres[6][3], halves[6];
        int n_occ = 1 + (int)(rvt_next(&seed) % 6);
        for (int k = 0; k < n_occ; k++) {
            double d = rvt_uniform(&seed, 2, 30), spread = d * tan(c.fov_y / 2);
            double a = rvt_uniform(&seed, -0.8f, 0.8f) * spread, b = rvt_uniform(&seed, -0.8f, 0.8f) * spread;
            halves[k] = spread * rvt_uniform(&seed, 0.05f, 0.5f);
            float lo[3], hi[3];
            for (int i = 0; i < 3; i++) {
                centres[k][i] = eye[i] + d * dir[i] + a * side[i] + b * top[i];
                lo[i] = (float)(centres[k][i] - halves[k]);
                hi[i] = (float)(centres[k][i] + halves[k]);
            }
            assert_int_equal(rv_occlusion_add_occluder(occ, lo, hi, NULL), RV_OK);
        }
        /* Objects behind and around the occluders, from a ten-thousandth of their distance
         * across to a twentieth. */
        for (int j = 0; j < N; j++) {
            int k = (int)(rvt_next(&seed) % (uint64_t)n_occ);
            double p[3], d2 = 0;
            for (int i = 0; i < 3; i++) {
                p[i] = centres[k][i] + halves[k] * rvt_uniform(&seed, -1.3f, 1.3f);
                d2 += (p[i] - eye[i]) * (p[i] - eye[i]);
            }
            double d = sqrt(d2), back = d * pow(10.0, rvt_uniform(&seed, -3, 0));
            double h = (d + back) * pow(10.0, rvt_uniform(&seed, -4, -1.3f));
            for (int i = 0; i < 3; i++) {
                double q = p[i] + (p[i] - eye[i]) / d * back;
                mn[i][j] = (float)(q - h * rvt_uniform(&seed, 0.2f, 1));
                mx[i][j] = (float)(q + h * rvt_uniform(&seed, 0.2f, 1));
            }
        }
        uint8_t world[N], under_identity[N];
        rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
        assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, N, world), RV_OK);
        boxes.matrices = identities;
        assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, N, under_identity), RV_OK);
        for (int j = 0; j < N; j++) {
            float lo[3] = { mn[0][j], mn[1][j], mn[2][j] }, hi[3] = { mx[0][j], mx[1][j], mx[2][j] };
            assert_int_equal(under_identity[j], world[j]);
            assert_int_equal(box_visible(occ, lo, hi, identity), world[j]);
            assert_int_equal(box_visible(occ, lo, hi, signed_zeros), world[j]);
            assert_int_equal(box_visible(occ, lo, hi, NULL), world[j]);
            hidden += !world[j];
            float half = 0;
            for (int i = 0; i < 3; i++) {
                centre[i][j] = 0.5f * (mn[i][j] + mx[i][j]);
                half = fmaxf(half, 0.5f * (mx[i][j] - mn[i][j]));
            }
            radius[j] = half;
        }
        /* Spheres too. */
        uint8_t sphere_world[N], sphere_identity[N];
        rv_occlusion_spheres spheres = { { centre[0], centre[1], centre[2] }, radius, NULL };
        assert_int_equal(rv_occlusion_test_spheres(occ, &spheres, 0, N, sphere_world), RV_OK);
        spheres.matrices = identities;
        assert_int_equal(rv_occlusion_test_spheres(occ, &spheres, 0, N, sphere_identity), RV_OK);
        for (int j = 0; j < N; j++) {
            float at[3] = { centre[0][j], centre[1][j], centre[2][j] };
            bool with_null, with_identity;
            assert_int_equal(rv_occlusion_test_sphere(occ, at, radius[j], NULL, &with_null), RV_OK);
            assert_int_equal(rv_occlusion_test_sphere(occ, at, radius[j], identities + 16 * j, &with_identity), RV_OK);
            assert_int_equal(with_identity, with_null);
            assert_int_equal(sphere_identity[j], sphere_world[j]);
            assert_int_equal(sphere_world[j], with_null);
        }
        tested += N;
        rv_occlusion_destroy(occ);
    }
    assert_true(hidden > tested / 10);
}

/* ---- the worked example's wall -------------------------------------------------------- */

static const float WALL_MIN[3] = { -6, 0, -0.5f }, WALL_MAX[3] = { 6, 8, 0.5f };

static rv_occlusion *wall_scene(camera *c, ref_view *rv, ref_box *wall)
{
    *c = look(0, 1.7, 20, 0, 1.7, 0);
    float vp[16];
    camera_matrix(c, vp);
    ref_view_init(rv, vp, c->clip);
    memset(wall, 0, sizeof *wall);
    memcpy(wall->min, WALL_MIN, sizeof WALL_MIN);
    memcpy(wall->max, WALL_MAX, sizeof WALL_MAX);
    ref_box_init(wall);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    return occ;
}

/* The crate's verdict, checked against the reference first so the expectation is sound. */
static void expect_crate(rv_occlusion *occ, const ref_view *rv, const ref_box *wall, float x, float y, float z,
                         bool expect_visible)
{
    ref_box crate = { .min = { x - 0.5f, y - 0.5f, z - 0.5f }, .max = { x + 0.5f, y + 0.5f, z + 0.5f } };
    ref_box_init(&crate);
    uint64_t seed = 7;
    assert_int_equal(ref_object_seen(rv, wall, 1, &crate, &seed, 8), expect_visible);
    assert_int_equal(crate_visible(occ, x, y, z), expect_visible);
    float c[3] = { x, y, z };
    bool sv = false;
    assert_int_equal(rv_occlusion_test_sphere(occ, c, 0.5f, NULL, &sv), RV_OK);
    if (expect_visible)
        assert_true(sv); /* a sphere inside a visible crate's box may still be hidden: only this way */
}

static void test_wall_hides_crates_behind_it_and_draws_the_rest(void **state)
{
    (void)state;
    camera c;
    ref_view rv;
    ref_box wall;
    rv_occlusion *occ = wall_scene(&c, &rv, &wall);
    for (float x = -3; x <= 3; x += 1.5f)
        for (float y = 0.5f; y <= 3.5f; y += 1.5f)
            expect_crate(occ, &rv, &wall, x, y, -3, false);
    expect_crate(occ, &rv, &wall, 12, 0.5f, -3, true);  /* beside */
    expect_crate(occ, &rv, &wall, 0, 12, -3, true);     /* above */
    expect_crate(occ, &rv, &wall, 7.1f, 0.5f, -3, true); /* straddling the wall's edge */
    expect_crate(occ, &rv, &wall, 0, 0.5f, 3, true);    /* in front */
    /* A sphere wholly behind is culled too. */
    float centre[3] = { 0, 2, -3 };
    bool v = true;
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, 0.5f, NULL, &v), RV_OK);
    assert_false(v);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.occluders_submitted, 1);
    assert_int_equal(st.occluders_rasterized, 1);
    assert_true(st.texels_covered > 100);
    assert_true(st.culled >= 9 && st.tests > st.culled);
    rv_occlusion_destroy(occ);
}

/* Spheres are tested as their world boxes, through the same tests as boxes: every sphere
 * the batch hides is hidden singly too, and a sphere is hidden only where the reference
 * sees no point of its box; spheres wholly behind the wall are hidden. */
static void test_spheres_are_tested_as_their_world_boxes(void **state)
{
    (void)state;
    camera c;
    ref_view rv;
    ref_box wall;
    rv_occlusion *occ = wall_scene(&c, &rv, &wall);
    enum { N = 400 };
    float x[N], y[N], z[N], r[N];
    uint8_t batch[N];
    uint64_t seed = 41;
    for (int i = 0; i < N; i++) {
        x[i] = rvt_uniform(&seed, -9, 9);
        y[i] = rvt_uniform(&seed, -1, 9);
        z[i] = rvt_uniform(&seed, -8, 2);
        r[i] = rvt_uniform(&seed, 0, 1.5f);
    }
    rv_occlusion_spheres sp = { { x, y, z }, r, NULL };
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, N, batch), RV_OK);
    int hidden = 0;
    for (int i = 0; i < N; i++) {
        float centre[3] = { x[i], y[i], z[i] };
        bool single = true;
        assert_int_equal(rv_occlusion_test_sphere(occ, centre, r[i], NULL, &single), RV_OK);
        assert_int_equal(single, batch[i] != 0);
        if (batch[i])
            continue;
        hidden++;
        ref_box box = { .min = { x[i] - r[i], y[i] - r[i], z[i] - r[i] }, .max = { x[i] + r[i], y[i] + r[i], z[i] + r[i] } };
        ref_box_init(&box);
        uint64_t s2 = 9;
        assert_false(ref_object_seen(&rv, &wall, 1, &box, &s2, 8));
    }
    assert_true(hidden > 20);
    rv_occlusion_destroy(occ);
}

/* A buffer with nothing drawn (its one occluder behind the eye) hides nothing and answers
 * every test at once, still checking the items and counting the tests. */
static void test_a_buffer_with_nothing_drawn_answers_every_test_visible(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    float bmin[3] = { -5, 0, 30 }, bmax[3] = { 5, 5, 31 }; /* behind the eye */
    assert_int_equal(rv_occlusion_add_occluder(occ, bmin, bmax, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    float mnx[4] = { -1, NAN, 2, -1 }, mny[4] = { 1, 1, 1, 1 }, mnz[4] = { -4, -4, -4, -4 };
    float mxx[4] = { 1, 1, 3, 1 }, mxy[4] = { 2, 2, 2, 2 }, mxz[4] = { -3, -3, -3, -3 };
    uint8_t out[4] = { 7, 7, 7, 7 };
    rv_occlusion_boxes bx = { { mnx, mny, mnz }, { mxx, mxy, mxz }, NULL };
    assert_int_equal(rv_occlusion_test_boxes(occ, &bx, 0, 4, out), RV_ERR_NOT_FINITE);
    assert_true(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 1);
    float rad[4] = { 0.5f, 0.5f, -1, 0.5f };
    rv_occlusion_spheres sp = { { mxx, mny, mnz }, rad, NULL };
    memset(out, 7, sizeof out);
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, 4, out), RV_ERR_INVALID_ARG);
    assert_true(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 1);
    assert_true(crate_visible(occ, 0, 1, -3));
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.pieces, 0);
    assert_int_equal(st.tests, 9);
    assert_int_equal(st.culled, 0);
    /* The same buffer with a wall in front hides again. */
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(occ, 0, 1, -3));
    rv_occlusion_destroy(occ);
}

static void test_decal_on_the_front_face_is_never_culled(void **state)
{
    (void)state;
    camera c;
    ref_view rv;
    ref_box wall;
    rv_occlusion *occ = wall_scene(&c, &rv, &wall);
    float dmin[3] = { -2, 2, 0.5f }, dmax[3] = { 2, 5, 0.5f };
    assert_true(box_visible(occ, dmin, dmax, NULL));
    float tiny_min[3] = { -0.01f, 4, 0.5f }, tiny_max[3] = { 0.01f, 4.01f, 0.5f };
    assert_true(box_visible(occ, tiny_min, tiny_max, NULL));
    rv_occlusion_destroy(occ);

    /* A floor on its own slab, and a crate standing on it, seen from above. */
    occ = make_occlusion(256);
    camera top = look(0, 5, 15, 0, 0, 0);
    begin_camera(occ, &top);
    float smin[3] = { -20, -1, -20 }, smax[3] = { 20, 0, 20 };
    assert_int_equal(rv_occlusion_add_occluder(occ, smin, smax, NULL), RV_OK);
    float fmin[3] = { -10, 0, -10 }, fmax[3] = { 10, 0, 10 }, cmin[3] = { -1, 0, -1 }, cmax[3] = { 1, 1, 1 };
    assert_true(box_visible(occ, fmin, fmax, NULL));
    assert_true(box_visible(occ, cmin, cmax, NULL));
    float under_min[3] = { -0.5f, -2.5f, -0.5f }, under_max[3] = { 0.5f, -2, 0.5f };
    assert_false(box_visible(occ, under_min, under_max, NULL)); /* beneath the slab: hidden */
    rv_occlusion_destroy(occ);

    /* Random boxes, cameras and decals on every face: never culled by their own box. */
    uint64_t seed = 0xDECA1;
    for (int t = 0; t < RVT_HEAVY(20000, 1500); t++) {
        scene sc;
        random_scene(&seed, &sc);
        sc.n_occ = 1;
        rv_occlusion *o = scene_occlusion(&sc, 256);
        const ref_box *b = &sc.occ[0];
        int face = (int)(rvt_next(&seed) % 6), axis = face / 2;
        float dmn[3], dmx[3];
        for (int i = 0; i < 3; i++) {
            float lo = b->min[i], hi = b->max[i];
            float u0 = rvt_uniform(&seed, 0, 1), u1 = rvt_uniform(&seed, 0, 1);
            dmn[i] = lo + (hi - lo) * fminf(u0, u1);
            dmx[i] = lo + (hi - lo) * fmaxf(u0, u1);
        }
        dmn[axis] = dmx[axis] = face & 1 ? b->max[axis] : b->min[axis];
        bool v = false;
        assert_int_equal(rv_occlusion_test_box(o, dmn, dmx, b->has_matrix ? b->matrix : NULL, &v), RV_OK);
        assert_true(v);
        rv_occlusion_destroy(o);
    }
}

/* A face slanting away behind two walls: a near wall hides its near end, a far wall the
 * rest. Its nearest point is nearer than the far wall, so only a texel-by-texel bound
 * (the face's own plane, and only the texels its image meets) can cull it; without the near
 * wall its near end shows in front of the far wall and it is drawn. Single and batch tests,
 * with a matrix and without, agree. */
static void test_slanted_face_behind_two_walls_is_culled_texel_by_texel(void **state)
{
    (void)state;
    camera c = look(0, 0, 0, 0, 0, -1);
    float near_min[3] = { -20, -20, -5 }, near_max[3] = { -0.5f, 20, -4 };
    float far_min[3] = { -100, -100, -31 }, far_max[3] = { 100, 100, -30 };
    /* From (-6, 0, -10) to (2, 0, -200): local x along it, local z across (flat), y up. */
    double dx = 8, dz = -190, len = sqrt(dx * dx + dz * dz);
    float co = (float)(dx / len), si = (float)(-dz / len);
    float m[16] = { co, 0, -si, 0, 0, 1, 0, 0, si, 0, co, 0, -6, 0, -10, 1 };
    float fmn[3] = { 0, -1, 0 }, fmx[3] = { (float)len, 1, 0 };
    for (int with_near = 0; with_near < 2; with_near++) {
        rv_occlusion *occ = make_occlusion(256);
        begin_camera(occ, &c);
        if (with_near)
            assert_int_equal(rv_occlusion_add_occluder(occ, near_min, near_max, NULL), RV_OK);
        assert_int_equal(rv_occlusion_add_occluder(occ, far_min, far_max, NULL), RV_OK);
        bool single = box_visible(occ, fmn, fmx, m);
        assert_int_equal(single, !with_near);
        /* the batch with matrices answers the same */
        float *mins[3] = { &fmn[0], &fmn[1], &fmn[2] }, *maxs[3] = { &fmx[0], &fmx[1], &fmx[2] };
        rv_occlusion_boxes boxes = { { mins[0], mins[1], mins[2] }, { maxs[0], maxs[1], maxs[2] }, m };
        uint8_t out = 7;
        assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, 1, &out), RV_OK);
        assert_int_equal(out, single);
        rv_occlusion_destroy(occ);
    }
    /* World boxes: random flat and solid boxes in the two-wall scene, single and batch agree
     * (the batch kernel runs the same refinement), and none in front of the walls is culled. */
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, near_min, near_max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, far_min, far_max, NULL), RV_OK);
    enum { N = 203 };
    static float bmn[3][N], bmx[3][N];
    uint64_t seed = 0x51A7;
    for (int i = 0; i < N; i++)
        for (int a = 0; a < 3; a++) {
            float lo = rvt_uniform(&seed, a == 2 ? -80 : -20, a == 2 ? -0.5f : 20);
            float ext = (rvt_next(&seed) % 3 == 0) ? 0 : rvt_uniform(&seed, 0, a == 2 ? 60 : 10);
            bmn[a][i] = lo;
            bmx[a][i] = fminf(lo + ext, a == 2 ? -0.5f : 30);
        }
    uint8_t batch[N];
    rv_occlusion_boxes wb = { { bmn[0], bmn[1], bmn[2] }, { bmx[0], bmx[1], bmx[2] }, NULL };
    assert_int_equal(rv_occlusion_test_boxes(occ, &wb, 0, N, batch), RV_OK);
    int culled = 0;
    for (int i = 0; i < N; i++) {
        float mn[3] = { bmn[0][i], bmn[1][i], bmn[2][i] }, mx[3] = { bmx[0][i], bmx[1][i], bmx[2][i] };
        bool v = box_visible(occ, mn, mx, NULL);
        assert_int_equal(batch[i], v);
        culled += !v;
        /* its centre in front of the near wall and inside the view: seen */
        float cx = (mn[0] + mx[0]) / 2, cy = (mn[1] + mx[1]) / 2, cz = (mn[2] + mx[2]) / 2;
        if (cz > -4 && fabsf(cx) < -cz && fabsf(cy) < -0.5f * cz)
            assert_true(v);
    }
    assert_true(culled > 0);
    rv_occlusion_destroy(occ);
}

/* ---- width 0, freezing, state ---------------------------------------------------------- */

static void test_width_zero_turns_every_call_into_a_visible_no_op(void **state)
{
    (void)state;
    rv_occlusion *occ = make_occlusion(0);
    float nan_m[16];
    for (int i = 0; i < 16; i++)
        nan_m[i] = NAN;
    assert_int_equal(rv_occlusion_begin(occ, nan_m, (rv_clip){ 0 }, 1.0f), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    assert_true(crate_visible(occ, 0, 1, -3));
    bool v = false;
    float centre[3] = { 0, 1, -3 };
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, 0.5f, NULL, &v), RV_OK);
    assert_true(v);
    float x[2] = { 0, 1 }, r[2] = { 1, 1 };
    uint8_t out[2] = { 0, 0 };
    rv_occlusion_spheres sp = { { x, x, x }, r, NULL };
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, 2, out), RV_OK);
    assert_true(out[0] == 1 && out[1] == 1);
    rv_occlusion_boxes bx = { { x, x, x }, { r, r, r }, NULL };
    out[0] = out[1] = 0;
    assert_int_equal(rv_occlusion_test_boxes(occ, &bx, 0, 2, out), RV_OK);
    assert_true(out[0] == 1 && out[1] == 1);
    uint32_t w = 9, h = 9;
    assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &w, &h), RV_OK);
    assert_true(w == 0 && h == 0);
    assert_int_equal(rv_occlusion_level_count(occ), 0);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_true(st.tests == 0 && st.culled == 0 && st.occluders_submitted == 0);
    assert_int_equal(rv_occlusion_alloc_stats(occ).allocations, 1); /* the object itself */
    rv_occlusion_destroy(occ);
}

static void test_first_test_freezes_and_next_begin_resets(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *occ = make_occlusion(256);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_ERR_BAD_STATE);
    assert_true(crate_visible(occ, 0, 1, -3)); /* no view yet: visible */
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(occ, 0, 1, -3));
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_ERR_FROZEN);
    assert_int_equal(rv_occlusion_get_stats(occ).occluders_submitted, 1);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK); /* harmless twice */
    /* Next frame: no occluder, so nothing is hidden; adding works again. */
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_get_stats(occ).occluders_submitted, 0);
    assert_true(crate_visible(occ, 0, 1, -3));
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(occ, 0, 1, -3));
    /* A failed begin drops the frame: nothing culls until a good begin. */
    float bad[16] = { 0 };
    assert_int_equal(rv_occlusion_begin(occ, bad, c.clip, 16.0f / 9.0f), RV_ERR_INVALID_ARG);
    assert_true(crate_visible(occ, 0, 1, -3));
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_ERR_BAD_STATE);
    uint32_t w, h;
    assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &w, &h), RV_ERR_BAD_STATE);
    /* So does a NULL matrix, frozen frame or not. */
    for (int frozen = 0; frozen < 2; frozen++) {
        begin_camera(occ, &c);
        assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
        if (frozen)
            assert_false(crate_visible(occ, 0, 1, -3));
        assert_int_equal(rv_occlusion_begin(occ, NULL, c.clip, 16.0f / 9.0f), RV_ERR_INVALID_ARG);
        assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_ERR_BAD_STATE);
        assert_true(crate_visible(occ, 0, 1, -3));
        assert_int_equal(rv_occlusion_get_stats(occ).occluders_submitted, 0);
    }
    rv_occlusion_destroy(occ);
}

/* ---- conventions, orthographic ---------------------------------------------------------- */

static void test_every_depth_convention_gives_the_same_verdicts(void **state)
{
    (void)state;
    uint64_t seed = 0xC0DE;
    int culled = 0, total = 0;
    for (int t = 0; t < RVT_HEAVY(200, 30); t++) {
        scene sc;
        random_scene(&seed, &sc);
        ref_box obj[64];
        for (int i = 0; i < 64; i++)
            random_object(&seed, &sc, &obj[i], true);
        uint8_t first[64];
        /* 4 conventions with a far plane, then GL and reversed zero-to-one with an infinite one. */
        for (int variant = 0; variant < 6; variant++) {
            scene v = sc;
            v.cam.clip = ref_conventions[variant < 4 ? variant : variant == 4 ? 0 : 3];
            v.cam.zfar = variant < 4 ? 5000 : 0;
            camera_matrix(&v.cam, v.vp);
            rvt_fine_tests = (uint32_t)t & 1; /* every other scene tests finer than a texel */
            rv_occlusion *occ = scene_occlusion(&v, 256);
            rvt_fine_tests = 0;
            for (int i = 0; i < 64; i++) {
                bool vis = box_visible(occ, obj[i].min, obj[i].max, obj[i].has_matrix ? obj[i].matrix : NULL);
                if (variant == 0) {
                    first[i] = vis;
                    culled += !vis;
                    total++;
                } else {
                    assert_int_equal(vis, first[i]);
                }
            }
            rv_occlusion_destroy(occ);
        }
    }
    assert_true(culled > total / 20); /* the scenes do hide things */
}

static void test_orthographic_views_agree_with_the_reference(void **state)
{
    (void)state;
    uint64_t seed = 0x0127, hidden = 0, culled_hidden = 0;
    for (int t = 0; t < RVT_HEAVY(300, 30); t++) {
        scene sc;
        random_scene(&seed, &sc);
        sc.cam.ortho_height = rvt_uniform(&seed, 5, 40);
        camera_matrix(&sc.cam, sc.vp);
        ref_view_init(&sc.rv, sc.vp, sc.cam.clip);
        rv_occlusion *occ = scene_occlusion(&sc, 128 << (t % 3));
        for (int i = 0; i < 50; i++) {
            ref_box obj;
            random_object(&seed, &sc, &obj, true);
            bool lib = box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL);
            if (ref_crosses_near(&sc.rv, &obj)) {
                assert_true(lib);
                continue;
            }
            bool seen = ref_object_seen(&sc.rv, sc.occ, sc.n_occ, &obj, &seed, 5);
            if (seen)
                assert_true(lib);
            else if (!ref_object_seen(&sc.rv, NULL, 0, &obj, &seed, 5))
                continue; /* outside the view volume */
            /* The rate counts what the occluders wholly beyond the near plane hide (one the
             * near plane cuts in view hides nothing: its inside shows there). */
            ref_box beyond[8];
            int n_beyond = 0;
            for (int k = 0; k < sc.n_occ; k++)
                if (!ref_crosses_near(&sc.rv, &sc.occ[k]))
                    beyond[n_beyond++] = sc.occ[k];
            bool hidden_beyond = !ref_object_seen(&sc.rv, beyond, n_beyond, &obj, &seed, 5);
            hidden += hidden_beyond;
            culled_hidden += hidden_beyond && !lib;
        }
        rv_occlusion_destroy(occ);
    }
    assert_true(hidden > 50);
    /* 65 % before solids cut by the near plane were left undrawn (they also covered texels
     * at the edges of the others); 61 % over the 300 scenes now, 58 % over the light 30. */
    assert_true(culled_hidden * 20 >= hidden * 11);
}

/* ---- the near plane ------------------------------------------------------------------- */

/* An object reaching before the near plane is judged by its part in view: a floor that
 * runs from behind the camera to beyond a wall, below the view where it is nearest, is
 * hidden by the wall in every depth convention, by the single test (world box and under a
 * matrix) and the batch alike; without the wall it is drawn. A box holding the corners of
 * the view's near rectangle (the camera inside it) is never hidden, even where every one
 * of its faces the camera sees lies behind the wall. */
static void test_objects_reaching_before_the_near_plane_are_judged_by_their_part_in_view(void **state)
{
    (void)state;
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    for (int k = 0; k < 4; k++) {
        camera c = look(0, 0, 0, 0, 0, -1); /* 60 degrees vertical: y = -1.7 enters the view 2.94 ahead */
        c.clip = ref_conventions[k];
        float vp[16];
        camera_matrix(&c, vp);
        ref_view rv;
        ref_view_init(&rv, vp, c.clip);
        uint64_t seed = 11;
        ref_box wall = { .min = { -100, -100, -2.6f }, .max = { 100, 100, -2.5f } };
        ref_box floor = { .min = { -5, -1.8f, -50 }, .max = { 5, -1.7f, 5 } };
        ref_box around = { .min = { -100, -100, -50 }, .max = { 100, 100, 5 } };
        ref_box_init(&wall);
        ref_box_init(&floor);
        ref_box_init(&around);
        assert_true(ref_crosses_near(&rv, &floor));
        assert_false(ref_object_seen(&rv, &wall, 1, &floor, &seed, 6));
        assert_true(ref_object_seen(&rv, NULL, 0, &floor, &seed, 6));
        assert_true(ref_object_seen(&rv, &wall, 1, &around, &seed, 6));
        for (int with_wall = 0; with_wall < 2; with_wall++) {
            rv_occlusion *occ = make_occlusion(256);
            begin_camera(occ, &c);
            if (with_wall)
                assert_int_equal(rv_occlusion_add_occluder(occ, wall.min, wall.max, NULL), RV_OK);
            assert_true(box_visible(occ, floor.min, floor.max, NULL) == !with_wall);
            assert_true(box_visible(occ, floor.min, floor.max, identity) == !with_wall);
            float mn[3][2], mx[3][2];
            for (int a = 0; a < 3; a++) {
                mn[a][0] = floor.min[a];
                mx[a][0] = floor.max[a];
                mn[a][1] = around.min[a];
                mx[a][1] = around.max[a];
            }
            uint8_t batch[2];
            rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
            assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, 2, batch), RV_OK);
            assert_int_equal(batch[0], !with_wall);
            assert_int_equal(batch[1], 1);
            assert_true(box_visible(occ, around.min, around.max, NULL));
            assert_true(box_visible(occ, around.min, around.max, identity));
            rv_occlusion_destroy(occ);
        }
    }
}

static void test_near_plane_occluders_are_clipped_and_near_objects_drawn(void **state)
{
    (void)state;
    camera c = look(0, 0, 0, 0, 0, -1);
    c.znear = 0.5;
    float vp[16];
    camera_matrix(&c, vp);
    ref_view rv;
    ref_view_init(&rv, vp, c.clip);
    uint64_t seed = 3;

    /* A wall the near plane cuts across the whole view: the GPU clips its near face away and
     * culls its back faces (the camera has walked into it), so it hides nothing; the same
     * wall a little farther, wholly beyond the near plane, hides what is straight behind. */
    ref_box wall = { .min = { -5, -5, -0.7f }, .max = { 5, 5, -0.3f } };
    ref_box_init(&wall);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, wall.min, wall.max, NULL), RV_OK);
    ref_box behind = { .min = { -0.5f, -0.5f, -10 }, .max = { 0.5f, 0.5f, -9 } };
    ref_box inside = { .min = { -0.2f, -0.2f, -0.65f }, .max = { 0.2f, 0.2f, -0.6f } };
    ref_box_init(&behind);
    ref_box_init(&inside);
    assert_true(box_visible(occ, behind.min, behind.max, NULL));
    assert_true(box_visible(occ, inside.min, inside.max, NULL));
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.occluders_rasterized, 0);
    assert_int_equal(st.skipped_near, 1);
    assert_int_equal(st.occluders_skipped, 1);
    rv_occlusion_destroy(occ);
    ref_box farther = { .min = { -5, -5, -0.9f }, .max = { 5, 5, -0.55f } };
    ref_box_init(&farther);
    occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, farther.min, farther.max, NULL), RV_OK);
    assert_false(ref_object_seen(&rv, &farther, 1, &behind, &seed, 6));
    assert_false(box_visible(occ, behind.min, behind.max, NULL));
    assert_int_equal(rv_occlusion_get_stats(occ).skipped_near, 0);
    rv_occlusion_destroy(occ);

    /* A wall wholly in front of the near plane is never drawn: it hides nothing. */
    ref_box ghost = { .min = { -5, -5, -0.4f }, .max = { 5, 5, -0.2f } };
    occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, ghost.min, ghost.max, NULL), RV_OK);
    assert_true(box_visible(occ, behind.min, behind.max, NULL));
    st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.skipped_offscreen, 1);
    assert_int_equal(st.occluders_rasterized, 0);
    rv_occlusion_destroy(occ);

    /* The camera inside a box (a pillar a third-person camera has entered): from inside, a
     * GPU culls every face of it, so it hides nothing, inside or beyond. */
    ref_box room = { .min = { -5, -5, -5 }, .max = { 5, 5, 5 } };
    ref_box_init(&room);
    occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, room.min, room.max, NULL), RV_OK);
    ref_box in_room = { .min = { -0.5f, -0.5f, -3 }, .max = { 0.5f, 0.5f, -2 } };
    ref_box outside = { .min = { -0.5f, -0.5f, -9 }, .max = { 0.5f, 0.5f, -8 } };
    ref_box_init(&in_room);
    ref_box_init(&outside);
    assert_true(box_visible(occ, in_room.min, in_room.max, NULL));
    assert_true(box_visible(occ, outside.min, outside.max, NULL));
    assert_int_equal(rv_occlusion_get_stats(occ).skipped_near, 1);
    rv_occlusion_destroy(occ);

    /* An object crossing the near plane is visible, even one passing through an occluder
     * that hides what lies behind it. */
    occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, farther.min, farther.max, NULL), RV_OK);
    assert_false(box_visible(occ, behind.min, behind.max, NULL));
    float pole_min[3] = { -0.1f, -0.1f, -20 }, pole_max[3] = { 0.1f, 0.1f, 1 };
    assert_true(box_visible(occ, pole_min, pole_max, NULL));
    float grazing_min[3] = { -0.1f, -0.1f, -0.6f }, grazing_max[3] = { 0.1f, 0.1f, -0.45f };
    assert_true(box_visible(occ, grazing_min, grazing_max, NULL));
    float centre[3] = { 0, 0, -0.5f };
    bool v = false;
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, 0.2f, NULL, &v), RV_OK);
    assert_true(v);
    rv_occlusion_destroy(occ);
}

/* ---- hostile input --------------------------------------------------------------------- */

static void test_hostile_input_gets_a_code_or_a_visible_answer(void **state)
{
    (void)state;
    camera c;
    ref_view rv;
    ref_box wall;
    rv_occlusion *occ = wall_scene(&c, &rv, &wall);
    float ok_min[3] = { -1, 1, -4 }, ok_max[3] = { 1, 2, -3 };
    float nan_v[3] = { NAN, 0, 0 }, inf_v[3] = { 0, INFINITY, 0 }, huge_min[3] = { -1e30f, -1e30f, -1e30f };
    float huge_max[3] = { 1e30f, 1e30f, 1e30f }, far_min[3] = { 0, 1, -3e37f }, far_max[3] = { 1, 2, -2e37f };
    float m_nan[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, NAN, 1 };
    float m_proj[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0 };
    float m_zero[16] = { 0 };
    m_zero[15] = 1;
    float m_huge[16] = { 1e30f, 0, 0, 0, 0, 1e30f, 0, 0, 0, 0, 1e30f, 0, 0, 0, 0, 1 };
    bool v;
    /* Adds: a code, nothing added. */
    assert_int_equal(rv_occlusion_add_occluder(occ, nan_v, ok_max, NULL), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_min, inf_v, NULL), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_max, ok_min, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_min, ok_max, m_nan), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_min, ok_max, m_proj), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_add_occluder(NULL, ok_min, ok_max, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_add_occluder(occ, NULL, ok_max, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_get_stats(occ).occluders_submitted, 1);
    /* Enormous, flattening and behind-the-camera occluders are accepted and never hurt. */
    assert_int_equal(rv_occlusion_add_occluder(occ, huge_min, huge_max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_min, ok_max, m_zero), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, ok_min, ok_max, m_huge), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, far_min, far_max, NULL), RV_OK);
    /* Tests: a code and visible, or a conservative visible. */
    v = false;
    assert_int_equal(rv_occlusion_test_box(occ, nan_v, ok_max, NULL, &v), RV_ERR_NOT_FINITE);
    assert_true(v);
    v = false;
    assert_int_equal(rv_occlusion_test_box(occ, ok_max, ok_min, NULL, &v), RV_ERR_INVALID_ARG);
    assert_true(v);
    v = false;
    assert_int_equal(rv_occlusion_test_box(occ, ok_min, ok_max, m_proj, &v), RV_ERR_INVALID_ARG);
    assert_true(v);
    v = false;
    assert_int_equal(rv_occlusion_test_box(occ, ok_min, ok_max, m_nan, &v), RV_ERR_NOT_FINITE);
    assert_true(v);
    assert_int_equal(rv_occlusion_test_box(occ, ok_min, ok_max, NULL, NULL), RV_ERR_INVALID_ARG);
    float centre[3] = { 0, 1, -3 };
    v = false;
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, -1, NULL, &v), RV_ERR_INVALID_ARG);
    assert_true(v);
    v = false;
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, NAN, NULL, &v), RV_ERR_NOT_FINITE);
    assert_true(v);
    v = false;
    assert_int_equal(rv_occlusion_test_sphere(occ, inf_v, 1, NULL, &v), RV_ERR_NOT_FINITE);
    assert_true(v);
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, 0, NULL, &v), RV_OK); /* a point: fine */
    assert_false(v);
    assert_true(box_visible(occ, huge_min, huge_max, NULL));
    assert_true(box_visible(occ, ok_min, ok_max, m_huge));
    (void)box_visible(occ, far_min, far_max, NULL); /* any answer, no crash */
    (void)box_visible(occ, ok_min, ok_max, m_zero);
    /* The wall still works after all that. */
    assert_false(crate_visible(occ, 0, 1, -3));
    /* Batches: bad items answered 1, the first bad item's code returned, others answered. */
    float mnx[4] = { -1, NAN, 2, -1 }, mny[4] = { 1, 1, 1, 1 }, mnz[4] = { -4, -4, -4, -4 };
    float mxx[4] = { 1, 1, 1, 1 }, mxy[4] = { 2, 2, 2, 2 }, mxz[4] = { -3, -3, -3, -3 };
    uint8_t out[4] = { 7, 7, 7, 7 };
    rv_occlusion_boxes bx = { { mnx, mny, mnz }, { mxx, mxy, mxz }, NULL };
    assert_int_equal(rv_occlusion_test_boxes(occ, &bx, 0, 4, out), RV_ERR_NOT_FINITE);
    assert_true(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 0);
    float rad[4] = { 0.5f, -1, INFINITY, 0.5f };
    rv_occlusion_spheres sp = { { mnx, mny, mnz }, rad, NULL };
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, 4, out), RV_ERR_NOT_FINITE);
    assert_true(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 0);
    assert_int_equal(rv_occlusion_test_boxes(occ, &bx, 2, UINT32_MAX, out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_test_boxes(occ, NULL, 0, 1, out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_test_boxes(occ, &bx, 0, 1, NULL), RV_ERR_INVALID_ARG);
    /* Begin: bad views are refused. */
    float vp[16];
    camera_matrix(&c, vp);
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, 0), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, -1), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, NAN), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, 1e-6f), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_begin(occ, NULL, c.clip, 1), RV_ERR_INVALID_ARG);
    vp[5] = INFINITY;
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, 1), RV_ERR_NOT_FINITE);
    float ortho_negative_w[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1 };
    assert_int_equal(rv_occlusion_begin(occ, ortho_negative_w, c.clip, 1), RV_ERR_INVALID_ARG);
    /* Creation. */
    rv_occlusion_desc bad = { .width = RV_OCCLUSION_MAX_SIZE + 1 };
    rv_occlusion *other = NULL;
    assert_int_equal(rv_occlusion_create(&bad, &other), RV_ERR_INVALID_ARG);
    bad.width = 16;
    bad.min_occluder_texels = NAN;
    assert_int_equal(rv_occlusion_create(&bad, &other), RV_ERR_NOT_FINITE);
    assert_null(other);
    assert_int_equal(rv_occlusion_create(NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_create(NULL, &other), RV_OK); /* width 0: off */
    assert_true(crate_visible(other, 0, 0, 0));
    rv_occlusion_destroy(other);
    rv_occlusion_destroy(NULL);
    rv_occlusion_destroy(occ);
}

/* ---- isolation, allocation ------------------------------------------------------------- */

static void test_two_buffers_never_interfere(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *a = make_occlusion(256), *b = make_occlusion(128);
    begin_camera(a, &c);
    camera side = look(20, 1.7, 0, 0, 1.7, 0);
    begin_camera(b, &side);
    assert_int_equal(rv_occlusion_add_occluder(a, WALL_MIN, WALL_MAX, NULL), RV_OK);
    /* b has no occluder: the crate behind a's wall stays visible in b, hidden in a. */
    assert_true(crate_visible(b, 0, 1, -3));
    assert_false(crate_visible(a, 0, 1, -3));
    assert_int_equal(rv_occlusion_add_occluder(b, WALL_MIN, WALL_MAX, NULL), RV_ERR_FROZEN);
    assert_int_equal(rv_occlusion_get_stats(b).occluders_submitted, 0);
    assert_int_equal(rv_occlusion_get_stats(a).occluders_submitted, 1);
    rv_occlusion_destroy(a);
    rv_occlusion_destroy(b);
}

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_occlusion_desc desc = { .allocator = rvt_allocator(&st), .width = 256 };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    uint64_t seed = 11;
    scene sc;
    random_scene(&seed, &sc);
    rv_alloc_stats warm = { 0 };
    for (int frame = 0; frame < 6; frame++) {
        if (frame == 2)
            warm = rv_occlusion_alloc_stats(occ);
        assert_int_equal(rv_occlusion_begin(occ, sc.vp, sc.cam.clip, (float)sc.cam.aspect), RV_OK);
        for (int k = 0; k < sc.n_occ; k++)
            assert_int_equal(rv_occlusion_add_occluder(occ, sc.occ[k].min, sc.occ[k].max,
                                                       sc.occ[k].has_matrix ? sc.occ[k].matrix : NULL),
                             RV_OK);
        ref_box obj;
        random_object(&seed, &sc, &obj, true);
        (void)box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL);
    }
    rv_alloc_stats now = rv_occlusion_alloc_stats(occ);
    assert_int_equal(now.allocations, warm.allocations);
    assert_int_equal(now.reallocations, warm.reallocations);
    assert_true(now.allocations > 1);
    rv_occlusion_destroy(occ);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.live_bytes, 0);
}

typedef struct sweep_box {
    rv_allocator allocator;
    rv_occlusion *occ;
} sweep_box;

static void *sweep_setup_empty(const rv_allocator *a)
{
    sweep_box *s = calloc(1, sizeof *s);
    s->allocator = *a;
    return s;
}

static rv_result sweep_create(void *o)
{
    sweep_box *s = o;
    rv_occlusion_desc desc = { .allocator = s->allocator, .width = 64 };
    return rv_occlusion_create(&desc, &s->occ);
}

static void *sweep_setup_created(const rv_allocator *a)
{
    sweep_box *s = sweep_setup_empty(a);
    assert_int_equal(sweep_create(s), RV_OK);
    return s;
}

static rv_result sweep_begin(void *o)
{
    sweep_box *s = o;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    float vp[16];
    camera_matrix(&c, vp);
    return rv_occlusion_begin(s->occ, vp, c.clip, (float)c.aspect);
}

static void *sweep_setup_begun(const rv_allocator *a)
{
    sweep_box *s = sweep_setup_created(a);
    assert_int_equal(sweep_begin(s), RV_OK);
    return s;
}

static rv_result sweep_add(void *o)
{
    sweep_box *s = o;
    float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    return rv_occlusion_add_occluder(s->occ, WALL_MIN, WALL_MAX, m);
}

static uint64_t sweep_fingerprint(void *o)
{
    sweep_box *s = o;
    if (!s->occ)
        return 0;
    rv_occlusion_stats st = rv_occlusion_get_stats(s->occ);
    return 1 + st.occluders_submitted * 1000 + rv_occlusion_level_count(s->occ) * 7 + st.tests;
}

static void sweep_teardown(void *o)
{
    sweep_box *s = o;
    rv_occlusion_destroy(s->occ);
    free(s);
}

static void test_allocation_failures_leave_the_buffer_as_it_was(void **state)
{
    (void)state;
    rvt_sweep create = { "create", sweep_setup_empty, sweep_create, sweep_fingerprint, sweep_teardown };
    rvt_sweep begin = { "begin", sweep_setup_created, sweep_begin, sweep_fingerprint, sweep_teardown };
    rvt_sweep add = { "add", sweep_setup_begun, sweep_add, sweep_fingerprint, sweep_teardown };
    assert_int_equal(rvt_run_sweep(&create), 1);
    assert_true(rvt_run_sweep(&begin) >= 2);
    assert_true(rvt_run_sweep(&add) >= 4);
}

/* ---- options, debug, spheres, pyramid -------------------------------------------------- */

static void test_occluder_cap_keeps_the_largest_on_screen(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion_desc desc = { .width = 256, .max_occluders = 1 };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    float small_min[3] = { -20, 0, -0.5f }, small_max[3] = { -18, 2, 0.5f };
    for (int frame = 0; frame < 2; frame++) {
        begin_camera(occ, &c);
        /* The small one first: submission order must not matter, size must. */
        assert_int_equal(rv_occlusion_add_occluder(occ, small_min, small_max, NULL), RV_OK);
        assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
        assert_false(crate_visible(occ, 0, 1, -3));
        assert_true(crate_visible(occ, -23.75f, 0.85f, -5)); /* behind the small one: its occluder was capped */
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        assert_int_equal(st.skipped_cap, 1);
        assert_int_equal(st.occluders_rasterized, 1);
        assert_int_equal(st.occluders_submitted, 2);
    }
    /* Without a cap the small one hides its crate too. */
    rv_occlusion *all = make_occlusion(256);
    begin_camera(all, &c);
    assert_int_equal(rv_occlusion_add_occluder(all, small_min, small_max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(all, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(all, -23.75f, 0.85f, -5));
    rv_occlusion_destroy(all);
    rv_occlusion_destroy(occ);
}

/* A box with one zero extent is a quad (a billboard wall, a fence panel): it is drawn and
 * hides what is behind it, never what lies on it. The same quad made by a zero scale in the
 * matrix is not drawn (counted skipped_small, as the header says), nor is a box flattened
 * to a line: safe, they hide nothing. */
static void test_flat_occluders_are_quads_that_hide(void **state)
{
    (void)state;
    camera c = look(0, 0, 0, 0, 0, -1);
    float crate_min[3] = { -0.5f, -0.5f, -20 }, crate_max[3] = { 0.5f, 0.5f, -19 };
    float quad_min[3] = { -5, -5, -10 }, quad_max[3] = { 5, 5, -10 };
    float box_min[3] = { -5, -5, -1 }, box_max[3] = { 5, 5, 1 };
    float flatten_z[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, -10, 1 };
    float to_line[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -10, 1 };
    for (int way = 0; way < 3; way++) {
        rv_occlusion *occ = make_occlusion(128);
        begin_camera(occ, &c);
        if (way == 0)
            assert_int_equal(rv_occlusion_add_occluder(occ, quad_min, quad_max, NULL), RV_OK);
        else
            assert_int_equal(rv_occlusion_add_occluder(occ, box_min, box_max, way == 1 ? flatten_z : to_line), RV_OK);
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        if (way == 0) {
            assert_int_equal(st.occluders_rasterized, 1);
            assert_int_equal(st.skipped_small, 0);
            assert_true(st.texels_covered > 0);
            assert_false(box_visible(occ, crate_min, crate_max, NULL));
            /* what lies on the quad is not hidden by it */
            float on_min[3] = { -0.5f, -0.5f, -10.5f }, on_max[3] = { 0.5f, 0.5f, -10 };
            assert_true(box_visible(occ, on_min, on_max, NULL));
        } else {
            assert_int_equal(st.occluders_rasterized, 0);
            assert_int_equal(st.skipped_small, 1);
            assert_int_equal(st.texels_covered, 0);
            assert_true(box_visible(occ, crate_min, crate_max, NULL));
        }
        rv_occlusion_destroy(occ);
    }
}

static void test_occluders_smaller_than_the_minimum_are_skipped(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    /* A post 0.1 m wide at 20 m is about 0.25 texels at width 64: skipped by default. */
    float post_min[3] = { -0.05f, 0, -0.05f }, post_max[3] = { 0.05f, 8, 0.05f };
    rv_occlusion *occ = make_occlusion(64);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, post_min, post_max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.skipped_small, 1);
    assert_int_equal(st.occluders_skipped, 1);
    assert_int_equal(st.texels_covered, 0);
    rv_occlusion_destroy(occ);
    /* A wide wall passes the size test with a large minimum only if it is large enough. */
    rv_occlusion_desc desc = { .width = 256, .min_occluder_texels = 200 };
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_true(crate_visible(occ, 0, 1, -3));
    assert_int_equal(rv_occlusion_get_stats(occ).skipped_small, 1);
    rv_occlusion_destroy(occ);
    desc.min_occluder_texels = -1; /* keep everything */
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(occ, 0, 1, -3));
    rv_occlusion_destroy(occ);
}

static void test_debug_images_show_nearer_brighter_at_every_level(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    float near_min[3] = { -8, 0, 5 }, near_max[3] = { -2, 6, 6 };
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, near_min, near_max, NULL), RV_OK);
    uint32_t levels = rv_occlusion_level_count(occ);
    assert_int_equal(levels, 9); /* 256 x 144 down to 1 x 1 */
    uint32_t w, h;
    assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &w, &h), RV_OK);
    assert_true(w == 256 && h == 144);
    uint8_t *img0 = malloc(w * h), *img1 = malloc(w * h);
    assert_int_equal(rv_occlusion_debug_image(occ, 0, img0, 10, &w, &h), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_debug_image(occ, levels, img0, w * h, &w, &h), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_debug_image(occ, 0, img0, (size_t)w * h, &w, &h), RV_OK);
    /* The nearer box's texels are brighter than the wall's; off-occluder texels are 0. */
    uint8_t near_px = 0, wall_px = 255;
    bool saw_empty = false;
    for (uint32_t i = 0; i < w * h; i++)
        saw_empty |= img0[i] == 0;
    near_px = img0[72 * 256 + 80];  /* left of centre, low: the near box */
    wall_px = img0[72 * 256 + 150]; /* right of centre: the wall */
    assert_true(saw_empty);
    assert_true(wall_px >= 32 && near_px > wall_px);
    /* Each pyramid texel shows the farthest (darkest) of the texels it covers. */
    for (uint32_t l = 1; l < levels; l++) {
        uint32_t pw, ph, cw, chh;
        assert_int_equal(rv_occlusion_debug_image(occ, l - 1, img0, 256 * 144, &cw, &chh), RV_OK);
        assert_int_equal(rv_occlusion_debug_image(occ, l, img1, 256 * 144, &pw, &ph), RV_OK);
        assert_true(pw == (cw + 1) / 2 && ph == (chh + 1) / 2);
        for (uint32_t y = 0; y < ph; y++)
            for (uint32_t x = 0; x < pw; x++) {
                uint8_t m = 255;
                for (uint32_t dy = 0; dy < 2; dy++)
                    for (uint32_t dx = 0; dx < 2; dx++) {
                        uint32_t cx = 2 * x + dx < cw ? 2 * x + dx : cw - 1, cy = 2 * y + dy < chh ? 2 * y + dy : chh - 1;
                        uint8_t px = img0[cy * cw + cx];
                        m = px < m ? px : m;
                    }
                assert_true(abs((int)img1[y * pw + x] - (int)m) <= 1);
            }
    }
    free(img0);
    free(img1);
    rv_occlusion_destroy(occ);
}

/* The range a picture states is the one the grey scale spans: the nearest covered texel is
 * 255, the farthest 32, and both are the occluders' far sides as seen from the eye. */
static void test_debug_depth_range_is_the_image_scale(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *occ = make_occlusion(256);
    float lo = -1, hi = -1;
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_debug_depth_range(occ, &lo, &hi), RV_OK);
    assert_true(lo == 0 && hi == 0); /* nothing covered */
    begin_camera(occ, &c);
    float near_min[3] = { -8, 0, 5 }, near_max[3] = { -2, 6, 6 };
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, near_min, near_max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_debug_depth_range(occ, &lo, &hi), RV_OK);
    /* the near box's back faces lie 14..15 from the eye, the wall's 20.5 */
    assert_true(lo >= 14.0f - 1e-3f && lo <= 15.0f + 1e-2f);
    assert_true(hi >= 20.5f - 1e-3f && hi <= 20.5f + 1e-2f);
    uint8_t *img = malloc(256 * 144);
    uint32_t w, h;
    assert_int_equal(rv_occlusion_debug_image(occ, 0, img, 256 * 144, &w, &h), RV_OK);
    uint8_t darkest = 255, brightest = 0;
    for (uint32_t i = 0; i < w * h; i++)
        if (img[i]) {
            darkest = img[i] < darkest ? img[i] : darkest;
            brightest = img[i] > brightest ? img[i] : brightest;
        }
    assert_int_equal(darkest, 32);
    assert_int_equal(brightest, 255);
    free(img);
    rv_occlusion_destroy(occ);
}

static void test_sphere_radius_scales_with_the_largest_axis(void **state)
{
    (void)state;
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    float centre[3] = { 0, 0, 0 }, unit = 1;
    float lift[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 3, -3, 1 };         /* at (0, 3, -3) */
    float tall[16] = { 1, 0, 0, 0, 0, 8, 0, 0, 0, 0, 1, 0, 0, 3, -3, 1 };         /* y scaled by 8 */
    float squashed[16] = { 0.5f, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0, 0.5f, 0, 0, 3, -3, 1 };
    bool v;
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, unit, lift, &v), RV_OK);
    assert_false(v);
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, unit, tall, &v), RV_OK);
    assert_true(v); /* radius 8 reaches above the wall */
    assert_int_equal(rv_occlusion_test_sphere(occ, centre, unit, squashed, &v), RV_OK);
    assert_false(v);
    float cx[1] = { 0 }, cy[1] = { 0 }, cz[1] = { 0 }, r[1] = { 1 };
    uint8_t out = 0;
    rv_occlusion_spheres sp = { { cx, cy, cz }, r, tall };
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, 1, &out), RV_OK);
    assert_int_equal(out, 1);
    sp.matrices = lift;
    assert_int_equal(rv_occlusion_test_spheres(occ, &sp, 0, 1, &out), RV_OK);
    assert_int_equal(out, 0);
    rv_occlusion_destroy(occ);
}

static void test_pyramid_answers_exactly_like_level_zero(void **state)
{
    (void)state;
    uint64_t seed = 0x9E;
    enum { N = 200 };
    static float mn[3][N], mx[3][N];
    uint8_t fast[N], flat[N];
    uint64_t culled = 0;
    for (int t = 0; t < RVT_HEAVY(300, 40); t++) {
        scene sc;
        random_scene(&seed, &sc);
        rv_occlusion *occ = scene_occlusion(&sc, 64u << (t % 4));
        for (int i = 0; i < N; i++) {
            ref_box obj;
            random_object(&seed, &sc, &obj, false);
            float grow = i % 4 == 0 ? rvt_uniform(&seed, 0, 10) : 0; /* some large ones */
            for (int a = 0; a < 3; a++) {
                mn[a][i] = obj.min[a] - grow;
                mx[a][i] = obj.max[a] + grow;
            }
        }
        rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
        assert_int_equal(rvi_occlusion_test_world_boxes(occ, &boxes, 0, N, fast, true), RV_OK);
        assert_int_equal(rvi_occlusion_test_world_boxes(occ, &boxes, 0, N, flat, false), RV_OK);
        assert_memory_equal(fast, flat, N);
        for (int i = 0; i < N; i++)
            culled += !fast[i];
        /* Ranges answer the same items the same way. */
        uint8_t part[N];
        memset(part, 9, sizeof part);
        assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 13, 101, part), RV_OK);
        assert_memory_equal(part + 13, fast + 13, 101);
        assert_int_equal(part[12], 9);
        assert_int_equal(part[114], 9);
        rv_occlusion_destroy(occ);
    }
    assert_true(culled > 0);
}

static void test_world_entry_points_count_in_the_borrowed_heap(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_allocator a = rvt_allocator(&st);
    rvi_heap heap;
    rvi_heap_init(&heap, &a);
    rv_occlusion_desc desc = { .width = 128 };
    rv_occlusion *occ = NULL;
    assert_int_equal(rvi_occlusion_create_in(NULL, &desc, &occ), RV_ERR_INVALID_ARG);
    assert_int_equal(rvi_occlusion_create_in(&heap, &desc, &occ), RV_OK);
    assert_false(rvi_occlusion_active(occ));
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    begin_camera(occ, &c);
    assert_true(rvi_occlusion_active(occ));
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    float bmin[3] = { -1, 1, -4 }, bmax[3] = { 1, 2, -3 }, centre[3] = { 0, 1.5f, -3.5f };
    assert_false(rvi_occlusion_box_visible(occ, bmin, bmax, NULL));
    assert_false(rvi_occlusion_sphere_visible(occ, centre, 0.5f, NULL));
    assert_true(rvi_occlusion_sphere_visible(occ, centre, 20, NULL));
    assert_true(heap.stats.allocations >= 4);
    assert_int_equal(rv_occlusion_get_stats(occ).tests, 3);
    assert_int_equal(rv_occlusion_get_stats(occ).culled, 2);
    rv_occlusion_destroy(occ);
    assert_int_equal(heap.stats.bytes_live, 0);
    assert_int_equal(st.live_blocks, 0);
}

/* The freeze's tile bounds stay below every texel of their tile, and its hidden test from
 * the bounds answers as the per-texel one does, in both builds, on buffers whose sides are
 * not multiples of the tile. */
static void test_tile_bounds_hold_and_answer_as_texels_do(void **state)
{
    (void)state;
    uint64_t seed = 0x711E5;
    for (int t = 0; t < RVT_HEAVY(120, 20); t++) {
        scene sc;
        random_scene(&seed, &sc);
        uint32_t width = (60u << (t % 4)) + (uint32_t)(t % 7);
        rv_occlusion *occ = scene_occlusion(&sc, width);
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        uint32_t w = occ->width, h = occ->height;
        assert_int_equal(occ->tiles_w, (w + RVI_OCC_TILE - 1) / RVI_OCC_TILE);
        assert_int_equal(occ->tiles_h, (h + RVI_OCC_TILE - 1) / RVI_OCC_TILE);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++)
                assert_true(occ->tile_lo[(y / RVI_OCC_TILE) * occ->tiles_w + x / RVI_OCC_TILE] <=
                            occ->texels[(size_t)y * w + x]);
        bool had = occ->wide;
        for (int i = 0; i < 400; i++) {
            int32_t xa = (int32_t)(rvt_next(&seed) % w), xb = (int32_t)(rvt_next(&seed) % w);
            int32_t ya = (int32_t)(rvt_next(&seed) % h), yb = (int32_t)(rvt_next(&seed) % h);
            if (i % 2) { /* small rectangles, as most items' */
                xb = xa + (int32_t)(rvt_next(&seed) % 12);
                yb = ya + (int32_t)(rvt_next(&seed) % 12);
                xb = xb < (int32_t)w ? xb : (int32_t)w - 1;
                yb = yb < (int32_t)h ? yb : (int32_t)h - 1;
            }
            int32_t x0 = xa < xb ? xa : xb, x1 = xa < xb ? xb : xa, y0 = ya < yb ? ya : yb, y1 = ya < yb ? yb : ya;
            /* A texel's own value (the answer turns on it), a neighbour of it, or the empty value. */
            float v = occ->texels[(size_t)(y0 + (y1 - y0) / 2) * w + (uint32_t)(x0 + (x1 - x0) / 2)];
            if (i % 3 == 1)
                v = nextafterf(v, -FLT_MAX);
            else if (i % 5 == 2)
                v = -FLT_MAX;
            bool want = rvi_occ_flat_hidden(occ, x0, y0, x1, y1, v);
            occ->wide = (i & 4) ? had : false;
            assert_int_equal(rvi_occ_tiles_hidden(occ, x0, y0, x1, y1, v), want);
            occ->wide = had;
        }
        for (uint32_t y = 0; y < h; y++) /* the scans' refreshed bounds too */
            for (uint32_t x = 0; x < w; x++)
                assert_true(occ->tile_lo[(y / RVI_OCC_TILE) * occ->tiles_w + x / RVI_OCC_TILE] <=
                            occ->texels[(size_t)y * w + x]);
        rv_occlusion_destroy(occ);
    }
}

/* The portable build of the hot loops and the AVX2 one give the same buffers and answers,
 * and the batch kernel's AVX-512VL build the same answers as its AVX2 one (on a machine
 * without AVX2 or AVX-512VL the buffers run the same build and this is trivially true). */
static void test_portable_and_wide_kernels_agree_exactly(void **state)
{
    (void)state;
    uint64_t seed = 0x51D;
    enum { N = 77 };
    float mn[3][N], mx[3][N];
    uint8_t out_a[N], out_b[N], out_c[N];
    for (int t = 0; t < RVT_HEAVY(200, 30); t++) {
        scene sc;
        random_scene(&seed, &sc);
        uint32_t width = 64u << (t % 4);
        rv_occlusion *a = scene_occlusion(&sc, width);
        rv_occlusion_desc desc = { .width = width };
        rv_occlusion *b = NULL;
        assert_int_equal(rv_occlusion_create(&desc, &b), RV_OK);
        b->wide = false;
        rv_occlusion *c = scene_occlusion(&sc, width);
        c->wide_vl = false;
        assert_int_equal(rv_occlusion_begin(b, sc.vp, sc.cam.clip, (float)sc.cam.aspect), RV_OK);
        for (int k = 0; k < sc.n_occ; k++)
            assert_int_equal(rv_occlusion_add_occluder(b, sc.occ[k].min, sc.occ[k].max,
                                                       sc.occ[k].has_matrix ? sc.occ[k].matrix : NULL),
                             RV_OK);
        assert_int_equal(rv_occlusion_freeze(a), RV_OK);
        assert_int_equal(rv_occlusion_freeze(b), RV_OK);
        assert_int_equal(rv_occlusion_freeze(c), RV_OK);
        size_t texels = a->level_offset[a->level_count - 1] + 1;
        assert_memory_equal(a->texels, b->texels, texels * sizeof(float));
        for (int i = 0; i < N; i++) {
            ref_box obj;
            random_object(&seed, &sc, &obj, false);
            for (int k = 0; k < 3; k++) {
                mn[k][i] = obj.min[k];
                mx[k][i] = obj.max[k];
            }
        }
        rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
        assert_int_equal(rv_occlusion_test_boxes(a, &boxes, 0, N, out_a), RV_OK);
        assert_int_equal(rv_occlusion_test_boxes(b, &boxes, 0, N, out_b), RV_OK);
        assert_int_equal(rv_occlusion_test_boxes(c, &boxes, 0, N, out_c), RV_OK);
        assert_memory_equal(out_a, out_b, N);
        assert_memory_equal(out_a, out_c, N);
        rv_occlusion_stats sa = rv_occlusion_get_stats(a), sb = rv_occlusion_get_stats(b),
                           sc_ = rv_occlusion_get_stats(c);
        assert_memory_equal(&sa, &sb, sizeof sa);
        assert_memory_equal(&sa, &sc_, sizeof sa);
        rv_occlusion_destroy(a);
        rv_occlusion_destroy(b);
        rv_occlusion_destroy(c);
    }
}

/* A random double for an edge coefficient: ordinary, tiny, zero or large, either sign. */
static double edge_coefficient(uint64_t *seed)
{
    double sign = rvt_next(seed) & 1 ? -1.0 : 1.0, u = (double)(rvt_next(seed) >> 11) / 9007199254740992.0;
    switch (rvt_next(seed) % 6) {
    case 0: return 0.0;
    case 1: return sign * u * 1e-12;
    case 2: return sign * u * 1e6;
    case 3: return sign * ldexp(1.0, (int)(rvt_next(seed) % 40) - 20); /* a power of two */
    default: return sign * u;
    }
}

/* The refined box test walks, on each row, only the run rvi_occ_box_row_run finds: it must
 * be exactly the texels every edge's own test keeps (A x + B y + C >= 0, evaluated as it
 * is written), never fewer (a texel skipped is a texel whose depth is never looked at)
 * and never more. Random edges, with roots in and around the row and at half-texel and
 * whole-texel positions, where rounding decides; an edge whose values could overflow,
 * from which nothing may be proven; and empty runs at the ends of the int32 range. */
static void test_the_refined_rows_keep_what_each_edge_keeps(void **state)
{
    (void)state;
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
    skip(); /* excess precision: the sums below may round apart from the library's */
#endif
    uint64_t seed = 0x5EED0;
    uint32_t empty = 0, partial = 0, whole = 0;
    for (int t = 0; t < RVT_HEAVY(400000, 40000); t++) {
        rvi_occ_box_bound bb;
        memset(&bb, 0, sizeof bb);
        bb.edge_count = (uint32_t)(rvt_next(&seed) % 9);
        int32_t x0 = (int32_t)(rvt_next(&seed) % 300) - 20, x1 = x0 + (int32_t)(rvt_next(&seed) % 80) - 3;
        int32_t y = (int32_t)(rvt_next(&seed) % 300) - 20;
        for (uint32_t k = 0; k < bb.edge_count; k++) {
            double A = edge_coefficient(&seed), B = edge_coefficient(&seed);
            /* The root on this row: a texel, half-way, or anywhere near the run. */
            double root = x0 - 4 + (double)(rvt_next(&seed) % (uint64_t)(x1 - x0 + 9 > 1 ? x1 - x0 + 9 : 1));
            root += (rvt_next(&seed) % 3) * 0.5 + (rvt_next(&seed) & 1 ? ldexp(1.0, -50) : 0.0);
            bb.edge[k][0] = A;
            bb.edge[k][1] = B;
            bb.edge[k][2] = -(A * root + B * y) + (rvt_next(&seed) % 4 == 0 ? edge_coefficient(&seed) * 1e-9 : 0.0);
        }
        int32_t lo, hi;
        assert_true(rvi_occ_box_row_run(&bb, y, x0, x1, &lo, &hi));
        for (int32_t x = x0; x <= x1; x++) {
            bool meets = true;
            for (uint32_t k = 0; k < bb.edge_count; k++)
                meets = meets && bb.edge[k][0] * x + bb.edge[k][1] * y + bb.edge[k][2] >= 0;
            if (meets != (x >= lo && x <= hi))
                fail_msg("trial %d, row %d, texel %d of [%d, %d]: edges say %d, run [%d, %d]", t, y, x, x0, x1,
                         meets, lo, hi);
        }
        if (lo > hi)
            empty++;
        else if (lo == x0 && hi == x1)
            whole++;
        else
            partial++;
    }
    /* The trials reach every case, so the comparison above was made where it matters. */
    assert_true(empty > 1000 && partial > 1000 && whole > 1000);

    /* Values past the overflow guard: nothing is proven from the row (the refined test then
     * answers visible), and the run given is the whole range. */
    rvi_occ_box_bound bb;
    memset(&bb, 0, sizeof bb);
    bb.edge_count = 2;
    bb.edge[0][0] = 1.0, bb.edge[0][1] = 0.0, bb.edge[0][2] = -10.0;       /* x >= 10 */
    bb.edge[1][0] = 1e300, bb.edge[1][1] = 1e300, bb.edge[1][2] = -1e308; /* cannot be ordered */
    int32_t lo, hi;
    assert_false(rvi_occ_box_row_run(&bb, 3, 0, 40, &lo, &hi));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 40);
    /* Runs ending at the int32 limits: empty, with no arithmetic past them. */
    bb.edge_count = 1;
    bb.edge[0][0] = 0.0, bb.edge[0][1] = 0.0, bb.edge[0][2] = -1.0; /* no texel */
    assert_true(rvi_occ_box_row_run(&bb, 0, INT32_MIN, INT32_MIN + 5, &lo, &hi));
    assert_true(lo > hi);
    bb.edge[0][0] = 1.0, bb.edge[0][2] = -1e12; /* x >= 1e12: none of the range */
    assert_true(rvi_occ_box_row_run(&bb, 0, INT32_MAX - 5, INT32_MAX, &lo, &hi));
    assert_true(lo > hi);
    bb.edge[0][0] = -1.0, bb.edge[0][2] = -1e12; /* x <= -1e12: none of the range */
    assert_true(rvi_occ_box_row_run(&bb, 0, INT32_MIN, INT32_MIN + 5, &lo, &hi));
    assert_true(lo > hi);
    bb.edge[0][2] = (double)INT32_MIN + 2; /* x <= INT32_MIN + 2 */
    assert_true(rvi_occ_box_row_run(&bb, 0, INT32_MIN, INT32_MIN + 5, &lo, &hi));
    assert_int_equal(lo, INT32_MIN);
    assert_int_equal(hi, INT32_MIN + 2);
}

/* Filling the eight lanes at once (rvi_occ_lanes_set_all: a transposition in the wide
 * build) sets the same bits as setting them one by one, lanes past n repeating the last,
 * NULL matrices as the identity. Each box's three floats end a heap block of their own, so
 * a read past them fails under AddressSanitizer. */
static void test_the_lanes_filled_at_once_match_one_by_one(void **state)
{
    (void)state;
    rv_occlusion_desc desc = { .width = 64 };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    uint64_t seed = 0x1A9E5;
    uint32_t differ_from_last = 0;
    for (int t = 0; t < RVT_HEAVY(20000, 2000); t++) {
        uint32_t n = 1 + (uint32_t)(rvt_next(&seed) % 8);
        float *mn[8], *mx[8], mats[8][16];
        const float *cmn[8], *cmx[8], *m[8];
        for (uint32_t j = 0; j < n; j++) {
            mn[j] = malloc(3 * sizeof(float));
            mx[j] = malloc(3 * sizeof(float));
            assert_non_null(mn[j]);
            assert_non_null(mx[j]);
            for (int a = 0; a < 3; a++) {
                mn[j][a] = (float)(int64_t)(rvt_next(&seed) % 2001) - 1000.0f;
                mx[j][a] = mn[j][a] + (float)(rvt_next(&seed) % 100) * 0.25f;
            }
            for (int e = 0; e < 16; e++)
                mats[j][e] = (float)(int64_t)(rvt_next(&seed) % 201) * 0.01f - 1.0f;
            cmn[j] = mn[j];
            cmx[j] = mx[j];
            m[j] = rvt_next(&seed) % 3 == 0 ? NULL : mats[j];
        }
        for (int wide = 0; wide < 2; wide++) {
            bool had = occ->wide;
            occ->wide = wide ? had : false;
            rvi_occ_lanes at_once, one_by_one;
            memset(&at_once, 0xA5, sizeof at_once);
            memset(&one_by_one, 0x5A, sizeof one_by_one);
            rvi_occ_lanes_set_all(occ, &at_once, n, cmn, cmx, m);
            for (uint32_t j = 0; j < 8; j++) {
                uint32_t s = j < n ? j : n - 1;
                rvi_occ_lanes_set(&one_by_one, j, cmn[s], cmx[s], m[s]);
            }
            assert_memory_equal(&at_once, &one_by_one, sizeof at_once);
            occ->wide = had;
        }
        differ_from_last += n > 1 && memcmp(mn[0], mn[n - 1], 3 * sizeof(float)) != 0;
        for (uint32_t j = 0; j < n; j++) {
            free(mn[j]);
            free(mx[j]);
        }
    }
    assert_true(differ_from_last > 100); /* the lanes held different boxes */
    rv_occlusion_destroy(occ);
}

/* The eight-lane look and footprint, in each of the three ways they are used
 * (rvi_occ_box_look_batch; rvi_occ_lanes_look_footprint; rvi_occ_lanes_look, then
 * rvi_occ_lanes_footprint for the lanes not seen), give every box exactly what the
 * one-at-a-time look gives it: boxes under matrices and in world space, orthographic and
 * perspective views, boxes reaching before the near plane, lanes that are not finite, every
 * batch size, the portable and the wide kernel. */
static void test_the_batched_look_answers_as_the_single_one(void **state)
{
    (void)state;
    uint64_t seed = 0xB0C5;
    uint32_t looked_on = 0, seen = 0, slow = 0;
    for (int t = 0; t < RVT_HEAVY(2000, 200); t++) {
        scene sc;
        random_scene(&seed, &sc);
        rvt_fine_tests = (uint32_t)t & 1;
        rv_occlusion *occ = scene_occlusion(&sc, 64u << (t % 4));
        rvt_fine_tests = 0;
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        for (int wide = 0; wide < 2; wide++) {
            bool had = occ->wide;
            occ->wide = wide ? had : false;
            ref_box obj[8];
            const float *mn[8], *mx[8], *m[8];
            uint32_t n = 1 + (uint32_t)(rvt_next(&seed) % 8);
            for (uint32_t j = 0; j < n; j++) {
                random_object(&seed, &sc, &obj[j], true);
                uint64_t odd = rvt_next(&seed) % 16;
                if (odd == 0)
                    obj[j].min[rvt_next(&seed) % 3] = NAN;
                else if (odd == 1)
                    obj[j].max[rvt_next(&seed) % 3] = INFINITY;
                else if (odd == 2)
                    obj[j].max[rvt_next(&seed) % 3] = 3e38f;
                mn[j] = obj[j].min;
                mx[j] = obj[j].max;
                m[j] = obj[j].has_matrix ? obj[j].matrix : NULL;
            }
            rvi_occ_footprint batch[8], fused[8];
            rvi_occ_box_look_batch(occ, n, mn, mx, m, batch);
            /* the frame's other way: looks and footprints in one pass */
            rvi_occ_lanes lanes;
            for (uint32_t j = 0; j < 8; j++)
                rvi_occ_lanes_set(&lanes, j, mn[j < n ? j : n - 1], mx[j < n ? j : n - 1], m[j < n ? j : n - 1]);
            uint32_t seen_bits = rvi_occ_lanes_look_footprint(occ, &lanes, n, fused);
            for (uint32_t j = 0; j < n; j++)
                if ((seen_bits >> j) & 1u)
                    fused[j].on = 0;
            /* and its third: the looks alone, then the footprints of the lanes not seen */
            rvi_occ_footprint split[8];
            uint32_t looked = rvi_occ_lanes_look(occ, &lanes, n);
            assert_int_equal(looked, seen_bits);
            rvi_occ_lanes_footprint(occ, &lanes, ~looked & ((1u << n) - 1), split);
            for (uint32_t j = 0; j < n; j++)
                if ((looked >> j) & 1u)
                    split[j].on = 0;
            for (uint32_t j = 0; j < n; j++) {
                rvi_occ_footprint one;
                int32_t on = rvi_occ_box_look(occ, mn[j], mx[j], m[j], &one);
                assert_int_equal(batch[j].on, on);
                assert_int_equal(fused[j].on, on);
                assert_int_equal(split[j].on, on);
                if (on == RVI_OCC_ON) {
                    assert_memory_equal(&fused[j], &batch[j], sizeof fused[j]);
                    assert_memory_equal(&split[j], &batch[j], sizeof split[j]);
                }
                if (on == RVI_OCC_ON) {
                    looked_on++;
                    assert_int_equal(batch[j].x0, one.x0);
                    assert_int_equal(batch[j].y0, one.y0);
                    assert_int_equal(batch[j].x1, one.x1);
                    assert_int_equal(batch[j].y1, one.y1);
                    assert_true(batch[j].nearness == one.nearness);
                } else {
                    rvi_occ_footprint plain;
                    if (on == 0 && rvi_occ_footprint_box(occ, mn[j], mx[j], m[j], &plain) == RVI_OCC_ON)
                        seen++; /* answered by the look at its centre */
                    slow += !(isfinite(mn[j][0]) && isfinite(mx[j][0]) && isfinite(mn[j][1]) &&
                              isfinite(mx[j][1]) && isfinite(mn[j][2]) && isfinite(mx[j][2]));
                }
            }
            occ->wide = had;
        }
        rv_occlusion_destroy(occ);
    }
    /* Each kind of answer came up, so the comparisons above meant something. */
    assert_true(looked_on > 100);
    assert_true(seen > 100);
    assert_true(slow > 10);
}

static void test_world_buffer_is_created_once_with_the_world_allocator(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_world_desc desc = { .allocator = rvt_allocator(&st) };
    desc.occlusion.width = 128;
    rv_world *world = NULL;
    assert_int_equal(rv_world_create(&desc, &world), RV_OK);
    uint64_t before = rv_world_alloc_stats(world).allocations;
    rv_occlusion *occ = NULL, *again = NULL;
    assert_int_equal(rvi_occlusion_of_world(world, &occ), RV_OK);
    assert_int_equal(rvi_occlusion_of_world(world, &again), RV_OK);
    assert_ptr_equal(occ, again);
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    begin_camera(occ, &c);
    assert_int_equal(rv_occlusion_add_occluder(occ, WALL_MIN, WALL_MAX, NULL), RV_OK);
    assert_false(crate_visible(occ, 0, 1, -3));
    assert_true(rv_world_alloc_stats(world).allocations > before + 3); /* counted in the world */
    assert_int_equal(rvi_occlusion_of_world(NULL, &occ), RV_ERR_INVALID_ARG);
    rv_world_destroy(world);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.live_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wall_hides_crates_behind_it_and_draws_the_rest),
        cmocka_unit_test(test_spheres_are_tested_as_their_world_boxes),
        cmocka_unit_test(test_a_buffer_with_nothing_drawn_answers_every_test_visible),
        cmocka_unit_test(test_decal_on_the_front_face_is_never_culled),
        cmocka_unit_test(test_slanted_face_behind_two_walls_is_culled_texel_by_texel),
        cmocka_unit_test(test_width_zero_turns_every_call_into_a_visible_no_op),
        cmocka_unit_test(test_first_test_freezes_and_next_begin_resets),
        cmocka_unit_test(test_every_depth_convention_gives_the_same_verdicts),
        cmocka_unit_test(test_orthographic_views_agree_with_the_reference),
        cmocka_unit_test(test_near_plane_occluders_are_clipped_and_near_objects_drawn),
        cmocka_unit_test(test_objects_reaching_before_the_near_plane_are_judged_by_their_part_in_view),
        cmocka_unit_test(test_hostile_input_gets_a_code_or_a_visible_answer),
        cmocka_unit_test(test_two_buffers_never_interfere),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_allocation_failures_leave_the_buffer_as_it_was),
        cmocka_unit_test(test_occluder_cap_keeps_the_largest_on_screen),
        cmocka_unit_test(test_occluders_smaller_than_the_minimum_are_skipped),
        cmocka_unit_test(test_flat_occluders_are_quads_that_hide),
        cmocka_unit_test(test_debug_images_show_nearer_brighter_at_every_level),
        cmocka_unit_test(test_debug_depth_range_is_the_image_scale),
        cmocka_unit_test(test_sphere_radius_scales_with_the_largest_axis),
        cmocka_unit_test(test_pyramid_answers_exactly_like_level_zero),
        cmocka_unit_test(test_world_entry_points_count_in_the_borrowed_heap),
        cmocka_unit_test(test_world_buffer_is_created_once_with_the_world_allocator),
        cmocka_unit_test(test_portable_and_wide_kernels_agree_exactly),
        cmocka_unit_test(test_tile_bounds_hold_and_answer_as_texels_do),
        cmocka_unit_test(test_the_lanes_filled_at_once_match_one_by_one),
        cmocka_unit_test(test_the_batched_look_answers_as_the_single_one),
        cmocka_unit_test(test_the_refined_rows_keep_what_each_edge_keeps),
        cmocka_unit_test(test_never_culls_what_the_reference_sees),
        cmocka_unit_test(test_an_identity_matrix_is_no_matrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
