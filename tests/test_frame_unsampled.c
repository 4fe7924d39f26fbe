/* rv_view.cull_unsampled (suite frame): an object culled as unsampled has no pixel centre
 * of the viewport inside its box's image, judged by a slow reference that casts the ray of
 * every pixel centre against the box (or the sphere of an object without one); the margin
 * keeps a box whose image ends just short of a centre; a box reaching behind the eye is
 * kept; the main view and rv_cull_view agree; records and counts name the reason; off by
 * default. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "support/occlusion_ref.h"
#include "support/rvt.h"
#include "support/rvt_scene.h"

#include <cglm/cglm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A camera given by its eye, its axes and its field of view, from which both rvis's matrices and the
 * reference's rays are made. */
typedef struct lens {
    double eye[3], right[3], up[3], forward[3];
    double tan_half, aspect; /* perspective */
    double half_h;           /* orthographic: half the view's height in world units */
    bool ortho;
    uint32_t width, height;
    float view[16], projection[16];
} lens;

static void camera_make(lens *c, const double eye[3], double yaw, double pitch, bool ortho, uint32_t w, uint32_t h,
                        double fov_or_half_h)
{
    memset(c, 0, sizeof *c);
    memcpy(c->eye, eye, sizeof c->eye);
    double f[3] = { cos(pitch) * sin(yaw), sin(pitch), -cos(pitch) * cos(yaw) };
    double r[3] = { cos(yaw), 0, sin(yaw) };
    double u[3] = { r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2], r[0] * f[1] - r[1] * f[0] };
    memcpy(c->forward, f, sizeof f);
    memcpy(c->right, r, sizeof r);
    memcpy(c->up, u, sizeof u);
    c->ortho = ortho;
    c->width = w;
    c->height = h;
    c->aspect = (double)w / h;
    /* View: rows are right, up, -forward; translation -R eye. */
    float v[16] = { 0 };
    for (int k = 0; k < 3; k++) {
        v[k * 4 + 0] = (float)r[k];
        v[k * 4 + 1] = (float)u[k];
        v[k * 4 + 2] = (float)-f[k];
    }
    v[12] = (float)-(r[0] * eye[0] + r[1] * eye[1] + r[2] * eye[2]);
    v[13] = (float)-(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]);
    v[14] = (float)(f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2]);
    v[15] = 1;
    memcpy(c->view, v, sizeof v);
    mat4 p;
    if (ortho) {
        c->half_h = fov_or_half_h;
        float hh = (float)fov_or_half_h, hw = (float)(fov_or_half_h * c->aspect);
        glm_ortho(-hw, hw, -hh, hh, -500.0f, 500.0f, p);
    } else {
        c->tan_half = tan(0.5 * fov_or_half_h);
        glm_perspective((float)fov_or_half_h, (float)c->aspect, 0.05f, 5000.0f, p);
    }
    memcpy(c->projection, p, sizeof p);
}

static rv_view view_of(const lens *c, bool cull_unsampled, double time_ms)
{
    rv_view v = { 0 };
    v.view = c->view;
    v.projection = c->projection;
    v.viewport_width = c->width;
    v.viewport_height = c->height;
    v.time_ms = time_ms;
    v.cull_unsampled = cull_unsampled;
    return v;
}

/* The ray of pixel centre (i + 0.5, j + 0.5), rows top-down: origin and direction. */
static void pixel_ray(const lens *c, uint32_t i, uint32_t j, double o[3], double d[3])
{
    double x = (i + 0.5) / c->width * 2.0 - 1.0, y = 1.0 - (j + 0.5) / c->height * 2.0;
    for (int k = 0; k < 3; k++) {
        if (c->ortho) {
            o[k] = c->eye[k] + c->right[k] * x * c->half_h * c->aspect + c->up[k] * y * c->half_h;
            d[k] = c->forward[k];
        } else {
            o[k] = c->eye[k];
            d[k] = c->forward[k] + c->right[k] * x * c->tan_half * c->aspect + c->up[k] * y * c->tan_half;
        }
    }
}

/* A ray meets the box min..max under the affine m (the reference's slab test, in double):
 * perspective rays start at the eye (t > 0); orthographic ones run both ways. */
static bool ray_meets_box(const double o[3], const double d[3], const float m[16], const float mn[3],
                          const float mx[3], bool both_ways)
{
    ref_box b = { 0 };
    memcpy(b.min, mn, sizeof b.min);
    memcpy(b.max, mx, sizeof b.max);
    memcpy(b.matrix, m, sizeof b.matrix);
    b.has_matrix = true;
    ref_box_init(&b);
    double q[3], p[3], ta, tb, far = 1e7;
    for (int k = 0; k < 3; k++) {
        q[k] = both_ways ? o[k] - far * d[k] : o[k];
        p[k] = o[k] + far * d[k];
    }
    return ref_box_slab(&b, q, p, &ta, &tb) && tb >= 0 && ta <= 1;
}

static bool ray_meets_sphere(const double o[3], const double d[3], const float s[4], bool both_ways)
{
    double q[3] = { s[0] - o[0], s[1] - o[1], s[2] - o[2] };
    double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], t = (q[0] * d[0] + q[1] * d[1] + q[2] * d[2]) / dd;
    if (!both_ways && t < 0)
        t = 0;
    double e[3] = { o[0] + t * d[0] - s[0], o[1] + t * d[1] - s[1], o[2] + t * d[2] - s[2] };
    return e[0] * e[0] + e[1] * e[1] + e[2] * e[2] <= (double)s[3] * s[3];
}

typedef struct object {
    rv_node node;
    bool has_box;
    float mn[3], mx[3];
} object;

/* Pixel centres of c whose ray meets the object's box, or its world sphere without one. */
static uint32_t centres_hit(const rv_world *w, const lens *c, const object *ob)
{
    float m[16], s[4];
    assert_int_equal(rv_node_world_matrix(w, ob->node, m), RV_OK);
    assert_int_equal(rv_node_world_bounds(w, ob->node, s), RV_OK);
    uint32_t hits = 0;
    for (uint32_t j = 0; j < c->height; j++)
        for (uint32_t i = 0; i < c->width; i++) {
            double o[3], d[3];
            pixel_ray(c, i, j, o, d);
            hits += ob->has_box ? ray_meets_box(o, d, m, ob->mn, ob->mx, c->ortho) : ray_meets_sphere(o, d, s, c->ortho);
        }
    return hits;
}

static rv_world *world_new(bool record)
{
    rv_world_desc d = { 0 };
    d.record_culls = record;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    return w;
}

static float log_uniform(uint64_t *s, float a, float b)
{
    return expf(rvt_uniform(s, logf(a), logf(b)));
}

/* Random objects in and around a random lens's view: small and large, flat boxes (one
 * axis without thickness), slivers, rotated and scaled, some with only a sphere. */
static void scatter(rv_world *w, const lens *c, uint64_t *seed, object *obs, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        object *ob = &obs[k];
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &ob->node), RV_OK);
        double depth = log_uniform(seed, 0.2f, 400.0f), x = rvt_uniform(seed, -1.3f, 1.3f),
               y = rvt_uniform(seed, -1.3f, 1.3f);
        float p[3];
        for (int a = 0; a < 3; a++) {
            double sx = c->ortho ? c->half_h * c->aspect : depth * c->tan_half * c->aspect;
            double sy = c->ortho ? c->half_h : depth * c->tan_half;
            p[a] = (float)(c->eye[a] + c->forward[a] * depth + c->right[a] * x * sx + c->up[a] * y * sy);
        }
        float q[4] = { rvt_uniform(seed, -1, 1), rvt_uniform(seed, -1, 1), rvt_uniform(seed, -1, 1),
                       rvt_uniform(seed, -1, 1) };
        float ql = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        if (!(ql > 1e-3f))
            q[3] = ql = 1;
        for (int a = 0; a < 4; a++)
            q[a] /= ql;
        float scale[3] = { rvt_uniform(seed, 0.3f, 2), rvt_uniform(seed, 0.3f, 2), rvt_uniform(seed, 0.3f, 2) };
        assert_int_equal(rv_node_set_position(w, ob->node, p), RV_OK);
        if (rvt_next(seed) % 3)
            assert_int_equal(rv_node_set_rotation(w, ob->node, q), RV_OK);
        if (rvt_next(seed) % 2)
            assert_int_equal(rv_node_set_scale(w, ob->node, scale), RV_OK);
        float half[3], off[3], r2 = 0;
        for (int a = 0; a < 3; a++) {
            half[a] = log_uniform(seed, 0.002f, 2.0f);
            off[a] = rvt_uniform(seed, -0.5f, 0.5f) * half[a];
        }
        uint32_t shape = (uint32_t)(rvt_next(seed) % 4);
        if (shape == 1)
            half[rvt_next(seed) % 3] = 0; /* flat */
        if (shape == 2)
            half[rvt_next(seed) % 3] *= 40; /* a sliver */
        for (int a = 0; a < 3; a++) {
            ob->mn[a] = off[a] - half[a];
            ob->mx[a] = off[a] + half[a];
            r2 += half[a] * half[a];
        }
        assert_int_equal(rv_node_set_bounds(w, ob->node, off, sqrtf(r2) * 1.0001f + 1e-6f), RV_OK);
        ob->has_box = rvt_next(seed) % 5 != 0;
        if (ob->has_box)
            assert_int_equal(rv_node_set_test_box(w, ob->node, ob->mn, ob->mx), RV_OK);
    }
}

static bool drawn(const rv_frame_view *v, rv_node n)
{
    for (uint32_t k = 0; k < v->opaque_count; k++)
        if (v->opaque[k].node.id == n.id)
            return true;
    return false;
}

static void test_unsampled_objects_cover_no_pixel_centre(void **state)
{
    (void)state;
    uint64_t seed = 0x5EEDu;
    uint32_t scenes = RVT_HEAVY(240, 40), n = 120;
    uint64_t culled = 0, checked_drawn = 0, big_kept = 0;
    object *obs = calloc(n, sizeof *obs);
    assert_non_null(obs);
    for (uint32_t sc = 0; sc < scenes; sc++) {
        rv_world *w = world_new(true);
        lens c;
        double eye[3] = { rvt_uniform(&seed, -50, 50), rvt_uniform(&seed, -5, 5), rvt_uniform(&seed, -50, 50) };
        bool ortho = sc % 4 == 3;
        uint32_t width = 16 + (uint32_t)(rvt_next(&seed) % 112), height = 12 + (uint32_t)(rvt_next(&seed) % 84);
        camera_make(&c, eye, rvt_uniform(&seed, -3.1f, 3.1f), rvt_uniform(&seed, -1.2f, 1.2f), ortho, width, height,
                    ortho ? rvt_uniform(&seed, 2, 60) : rvt_uniform(&seed, 0.3f, 2.2f));
        scatter(w, &c, &seed, obs, n);
        rv_view v = view_of(&c, true, 0.0);
        rv_frame_view fv;
        assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
        uint32_t records = 0;
        for (uint32_t k = 0; k < fv.cull_count; k++) {
            if (fv.culls[k].reason != RV_CULL_UNSAMPLED)
                continue;
            records++;
            const object *ob = NULL;
            for (uint32_t q = 0; q < n && !ob; q++)
                ob = obs[q].node.id == fv.culls[k].node.id ? &obs[q] : NULL;
            assert_non_null(ob);
            assert_false(drawn(&fv, ob->node));
            if (centres_hit(w, &c, ob) != 0)
                fail_msg("scene %u: node %llu culled as unsampled covers pixel centres", sc,
                         (unsigned long long)ob->node.id);
        }
        assert_int_equal(records, fv.counts.unsampled_culled);
        culled += records;
        /* Off: what was culled as unsampled is drawn, nothing else changes. */
        rv_frame_view off;
        v = view_of(&c, false, 1.0);
        assert_int_equal(rv_frame(w, &v, &off), RV_OK);
        assert_int_equal(off.counts.unsampled_culled, 0);
        assert_int_equal(off.opaque_count, fv.opaque_count + fv.counts.unsampled_culled);
        /* An object drawn with the flag on whose rays meet it: spot-check a few. */
        for (uint32_t k = 0; k < fv.opaque_count && k < 4; k++)
            for (uint32_t q = 0; q < n; q++)
                if (obs[q].node.id == fv.opaque[k].node.id) {
                    checked_drawn++;
                    big_kept += centres_hit(w, &c, &obs[q]) > 0;
                }
        /* rv_cull_view: what the flag takes out of its list covers no pixel centre either. */
        rv_view_list *list_on = NULL, *list_off = NULL;
        assert_int_equal(rv_view_list_create(w, &list_on), RV_OK);
        assert_int_equal(rv_view_list_create(w, &list_off), RV_OK);
        rv_frame_view extra_on, extra_off;
        v = view_of(&c, true, 2.0);
        assert_int_equal(rv_cull_view(w, &v, list_on, &extra_on), RV_OK);
        v = view_of(&c, false, 2.0);
        assert_int_equal(rv_cull_view(w, &v, list_off, &extra_off), RV_OK);
        assert_int_equal(extra_off.opaque_count, extra_on.opaque_count + extra_on.counts.unsampled_culled);
        for (uint32_t q = 0; q < n; q++)
            if (drawn(&extra_off, obs[q].node) && !drawn(&extra_on, obs[q].node))
                assert_int_equal(centres_hit(w, &c, &obs[q]), 0);
        rv_view_list_destroy(list_off);
        rv_view_list *list = list_on;
        rv_view_list_destroy(list);
        rv_world_destroy(w);
    }
    free(obs);
    /* The test has teeth: a good share of these scenes' objects are culled, and some drawn
     * ones really are sampled. */
    assert_true(culled > (uint64_t)scenes * n / 10);
    assert_true(big_kept > 0 && checked_drawn > 0);
    print_message("unsampled: %llu culled over %u scenes of %u objects\n", (unsigned long long)culled, scenes, n);
}

/* An orthographic view with one world unit per pixel: pixel centres sit at x = i + 0.5 - W/2. */
static void one_box(rv_world *w, rv_node *n, float x0, float x1, float y0, float y1)
{
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, n), RV_OK);
    float c[3] = { 0, 0, 0 }, mn[3] = { x0, y0, -0.5f }, mx[3] = { x1, y1, 0.5f };
    float r = sqrtf(fmaxf(x0 * x0, x1 * x1) + fmaxf(y0 * y0, y1 * y1) + 0.25f);
    assert_int_equal(rv_node_set_bounds(w, *n, c, r), RV_OK);
    assert_int_equal(rv_node_set_test_box(w, *n, mn, mx), RV_OK);
}

static void test_margin_and_the_eye(void **state)
{
    (void)state;
    rv_world *w = world_new(true);
    lens c;
    double eye[3] = { 0, 0, 10 };
    camera_make(&c, eye, 0, 0, true, 64, 64, 32); /* x, y in [-32, 32]: centres at k + 0.5 */
    rv_node inside, near_edge, straddles, column;
    one_box(w, &inside, 3.58f, 4.42f, 3.58f, 4.42f);    /* 0.08 from centres 3.5 and 4.5 */
    one_box(w, &near_edge, 3.58f, 4.47f, 3.3f, 4.7f);   /* 0.03 short of x = 4.5: the margin keeps it */
    one_box(w, &straddles, 3.45f, 3.6f, 3.3f, 4.7f);    /* holds (3.5, 3.5) */
    one_box(w, &column, 3.58f, 4.42f, -10.0f, 10.0f);   /* tall, but between two columns of centres */
    /* Diagonal slivers along x - y = 0.5, midway between two diagonals of centres (0.354
     * pixel from each): their rectangles hold centres, their images do not unless they
     * reach within the margin of one. */
    rv_node thin, wide;
    float q45[4] = { 0, 0, 0.38268343f, 0.92387953f }, at[3] = { 0.5f, 0, 0 }, o[3] = { 0, 0, 0 };
    float thin_mn[3] = { -5, -0.2f, -0.5f }, thin_mx[3] = { 5, 0.2f, 0.5f };
    float wide_mn[3] = { -5, -0.3f, -0.5f }, wide_mx[3] = { 5, 0.3f, 0.5f };
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &thin), RV_OK);
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wide), RV_OK);
    rv_node pair[2] = { thin, wide };
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rv_node_set_position(w, pair[k], at), RV_OK);
        assert_int_equal(rv_node_set_rotation(w, pair[k], q45), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, pair[k], o, 5.1f), RV_OK);
    }
    assert_int_equal(rv_node_set_test_box(w, thin, thin_mn, thin_mx), RV_OK);
    assert_int_equal(rv_node_set_test_box(w, wide, wide_mn, wide_mx), RV_OK);
    rv_view v = view_of(&c, true, 0.0);
    rv_frame_view fv;
    assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
    assert_false(drawn(&fv, thin));
    assert_true(drawn(&fv, wide));
    assert_false(drawn(&fv, inside));
    assert_true(drawn(&fv, near_edge));
    assert_true(drawn(&fv, straddles));
    assert_false(drawn(&fv, column));
    assert_int_equal(fv.counts.unsampled_culled, 3);
    rv_world_destroy(w);

    /* Perspective: a far, small object whose test box reaches behind the eye is drawn (its
     * box's image is not the hull of its corners' images); the same object with a box
     * around its geometry alone is culled. */
    w = world_new(false);
    double eye2[3] = { 0, 0, 0 };
    camera_make(&c, eye2, 0, 0, false, 64, 36, 1.0);
    rv_node behind, far;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &behind), RV_OK);
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &far), RV_OK);
    float origin[3] = { 0, 0, 0 }, far_pos[3] = { 0.3f, 0.3f, -900 };
    float mn[3] = { -0.01f, -0.01f, -0.01f }, mx[3] = { 0.01f, 0.01f, 0.01f }, long_mx[3] = { 0.01f, 0.01f, 901.0f };
    assert_int_equal(rv_node_set_position(w, behind, far_pos), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, behind, origin, 0.02f), RV_OK);
    assert_int_equal(rv_node_set_test_box(w, behind, mn, long_mx), RV_OK);
    assert_int_equal(rv_node_set_position(w, far, far_pos), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, far, origin, 0.02f), RV_OK);
    assert_int_equal(rv_node_set_test_box(w, far, mn, mx), RV_OK);
    v = view_of(&c, true, 0.0);
    assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
    assert_true(drawn(&fv, behind));
    assert_false(drawn(&fv, far));
    assert_int_equal(fv.counts.unsampled_culled, 1);
    /* Off by default. */
    v = view_of(&c, false, 1.0);
    assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
    assert_true(drawn(&fv, far));
    rv_world_destroy(w);
}

/* A left-handed camera (Direct3D's: identity view looking down +Z, depth 0..1) in the view
 * + projection form gives what the same matrix gives in the view_projection form: the
 * same culls, and the opaque list front to back with positive depths. */
static void test_left_handed_view(void **state)
{
    (void)state;
    rv_world *w = world_new(false);
    uint64_t seed = 99;
    for (int k = 0; k < 400; k++) {
        rv_node n;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
        float z = rvt_uniform(&seed, 5, 55), p[3] = { rvt_uniform(&seed, -0.4f, 0.4f) * z, rvt_uniform(&seed, -0.2f, 0.2f) * z, z };
        float o[3] = { 0, 0, 0 }, mn[3] = { -0.01f, -0.01f, -0.01f }, mx[3] = { 0.01f, 0.01f, 0.01f };
        assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, n, o, 0.02f), RV_OK);
        assert_int_equal(rv_node_set_test_box(w, n, mn, mx), RV_OK);
    }
    float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 }, eye[3] = { 0, 0, 0 };
    float cot = 1.0f / tanf(0.5f), aspect = 16.0f / 9.0f, nz = 0.1f, fz = 1000.0f;
    float lh[16] = { cot / aspect, 0, 0, 0, 0, cot, 0, 0, 0, 0, fz / (fz - nz), 1, 0, 0, -nz * fz / (fz - nz), 0 };
    rv_view v = { 0 };
    v.view = view;
    v.projection = lh;
    v.clip.depth_zero_to_one = true;
    v.viewport_width = 640;
    v.viewport_height = 360;
    v.cull_unsampled = true;
    rv_frame_view a, b;
    assert_int_equal(rv_frame(w, &v, &a), RV_OK);
    uint32_t culled = a.counts.unsampled_culled, drawn_count = a.opaque_count;
    assert_true(culled > 100);
    assert_true(a.opaque_count > 0 && a.opaque[0].view_depth > 0);
    for (uint32_t k = 1; k < a.opaque_count; k++)
        assert_true(a.opaque[k].view_depth >= a.opaque[k - 1].view_depth);
    v.view = v.projection = NULL;
    v.view_projection = lh; /* identity view: the product is the projection */
    v.eye = eye;
    v.time_ms = 1;
    assert_int_equal(rv_frame(w, &v, &b), RV_OK);
    assert_int_equal(b.counts.unsampled_culled, culled);
    assert_int_equal(b.opaque_count, drawn_count);
    rv_world_destroy(w);
}

/* An extra view culls unsampled objects from the world's first moment: before any frame
 * (no frame state yet) as after one. */
static void test_extra_view_culls_unsampled_before_the_first_frame(void **state)
{
    (void)state;
    rv_world *w = world_new(false);
    lens c;
    double eye[3] = { 0, 0, 0 };
    camera_make(&c, eye, 0, 0, false, 64, 48, 1.0);
    uint64_t seed = 0xF1257;
    for (int i = 0; i < 100; i++) /* specks 1 mm across, 20 to 60 m ahead */
        rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -5, 5), rvt_uniform(&seed, -3, 3),
                   rvt_uniform(&seed, -60, -20), 0.0005f);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    rv_frame_view before, after, main_view;
    assert_int_equal(rv_update_world(w), RV_OK); /* extra views use the last update's bounds */
    rv_view v = view_of(&c, true, 0.0);
    assert_int_equal(rv_cull_view(w, &v, list, &before), RV_OK);
    uint32_t culled_before = before.counts.unsampled_culled, drawn_before = before.opaque_count;
    assert_int_equal(rv_frame(w, &v, &main_view), RV_OK);
    assert_int_equal(rv_cull_view(w, &v, list, &after), RV_OK);
    assert_true(culled_before > 50);
    assert_int_equal(culled_before, after.counts.unsampled_culled);
    assert_int_equal(drawn_before, after.opaque_count);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsampled_objects_cover_no_pixel_centre),
        cmocka_unit_test(test_margin_and_the_eye),
        cmocka_unit_test(test_left_handed_view),
        cmocka_unit_test(test_extra_view_culls_unsampled_before_the_first_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
