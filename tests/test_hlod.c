/* HLOD (suite lod): screen-space error, the cut and its residency rule, frustum culling,
 * crossfade of cut changes, the load list, a fly-through property test over random region
 * trees against a slow reference, allocation failure and allocation-free steady selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "lod.h"
#include "support/rvt.h"
#include "support/rvt_scene.h"

#include <cglm/cglm.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265358979f

/* ---- helpers ------------------------------------------------------------------------- */

/* A node at the origin whose own geometry is the world sphere (x, y, z, r). */
static rv_node make_region(rv_world *w, rv_node parent, float x, float y, float z, float r,
                           float error, bool resident)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, parent, &n), RV_OK);
    float c[3] = { x, y, z };
    assert_int_equal(rv_node_set_bounds(w, n, c, r), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, n, error), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, n, resident), RV_OK);
    return n;
}

/* A 90-degree, 1000 px high perspective view at eye. */
static rv_lod_view view_at(float x, float y, float z)
{
    rv_lod_view v = { .eye = { x, y, z }, .fov_y = PI_F / 2, .viewport_height_px = 1000.0f };
    return v;
}

/* The frustum of an OpenGL camera at eye looking at target (fov 90 degrees, 16:9). */
static const rv_hlod_draw *find_draw(const rv_hlod_result *r, rv_node n)
{
    for (uint32_t i = 0; i < r->draw_count; i++)
        if (rv_node_equal(r->draws[i].region, n))
            return &r->draws[i];
    return NULL;
}

static float weight_of(const rv_hlod_result *r, rv_node n)
{
    const rv_hlod_draw *d = find_draw(r, n);
    return d ? d->weight : 0.0f;
}

static bool in_loads(const rv_hlod_result *r, rv_node n)
{
    for (uint32_t i = 0; i < r->load_count; i++)
        if (rv_node_equal(r->loads[i].region, n))
            return true;
    return false;
}

/* ---- screen-space error -------------------------------------------------------------- */

static void test_screen_space_error_matches_hand_computed_value(void **state)
{
    (void)state;
    rv_world *w = rvt_world_lod(NULL);
    /* Sphere radius 10 centred 110 m ahead: 100 m to its surface. fov 90: tan 45 = 1.
     * SSE = 2 * 1000 / (2 * 100 * 1) = 10 px. */
    rv_node r = make_region(w, RV_NODE_NONE, 0, 0, -110, 10, 2.0f, true);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view v = view_at(0, 0, 0);
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(w, r, &v, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(out.draws[0].screen_space_error, 10.0f, 1e-4);
    assert_float_equal(out.draws[0].weight, 1.0f, 0);
    /* fov 60 degrees, 720 px, 45 m from the surface along a diagonal: by hand,
     * 2 * 720 / (2 * 45 * tan 30) = 27.7128 px. */
    v = (rv_lod_view){ .eye = { 0, 0, 0 }, .fov_y = PI_F / 3, .viewport_height_px = 720 };
    float s = 55.0f / sqrtf(3.0f);
    rv_node d = make_region(w, RV_NODE_NONE, s, s, -s, 10, 2.0f, true);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_hlod_select(w, d, &v, NULL, 0, &out), RV_OK);
    assert_float_equal(out.draws[0].screen_space_error, 27.7128f, 1e-3);
    /* Orthographic: error * viewport / view height = 2 * 1000 / 50 = 40 px at any distance. */
    rv_lod_view o = { .eye = { 0, 0, 0 }, .viewport_height_px = 1000, .orthographic = true, .ortho_height = 50 };
    assert_int_equal(rv_hlod_select(w, r, &o, NULL, 0, &out), RV_OK);
    assert_float_equal(out.draws[0].screen_space_error, 40.0f, 1e-4);
    /* Eye inside: infinite. */
    rv_lod_view in = view_at(0, 0, -105);
    assert_int_equal(rv_hlod_select(w, r, &in, NULL, 0, &out), RV_OK);
    assert_true(isinf(out.draws[0].screen_space_error));
    rv_world_destroy(w);
}

/* ---- the cut ------------------------------------------------------------------------- */

typedef struct family {
    rv_world *w;
    rv_node parent, a, b;
} family;

/* A parent (error 4) over two children (error 0.5) at z = -100, every region resident. */
static family make_family(const rv_lod_desc *lod)
{
    family f;
    f.w = rvt_world_lod(lod);
    f.parent = make_region(f.w, RV_NODE_NONE, 0, 0, -100, 20, 4.0f, true);
    f.a = make_region(f.w, f.parent, -10, 0, -100, 9, 0.5f, true);
    f.b = make_region(f.w, f.parent, 10, 0, -100, 9, 0.5f, true);
    assert_int_equal(rv_update_world(f.w), RV_OK);
    return f;
}

static void test_region_refines_only_when_every_child_is_resident(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    rv_hlod_result out;
    /* Far: SSE = 4 * 500 / 880 = 2.3 px: the parent draws itself, nothing to load. */
    rv_lod_view far = view_at(0, 0, 1000);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.parent) != NULL);
    assert_int_equal(out.load_count, 0);
    /* Near: SSE = 4 * 500 / 30 = 66 px: refined. */
    rv_lod_view near = view_at(0, 0, -50);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 2);
    assert_float_equal(weight_of(&out, f.a), 1.0f, 0);
    assert_float_equal(weight_of(&out, f.b), 1.0f, 0);
    /* One child not resident: the parent is drawn itself (no hole) and asks for its children. */
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.b, false), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(weight_of(&out, f.parent), 1.0f, 0);
    assert_int_equal(out.load_count, 1);
    assert_true(rv_node_equal(out.loads[0].region, f.parent));
    assert_float_equal(out.loads[0].screen_space_error, 4.0f * 500.0f / 30.0f, 1e-3);
    assert_float_equal(out.loads[0].distance, 30.0f, 1e-4);
    /* Loaded: refined again. */
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.b, true), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 2);
    assert_int_equal(out.load_count, 0);
    /* A leaf never refines, however large its error. */
    rv_lod_view inside = view_at(10, 0, -100);
    assert_int_equal(rv_hlod_select(f.w, f.b, &inside, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_int_equal(out.load_count, 0);
    /* The limit is configurable: 100 px keeps the parent. */
    rv_lod_desc lax = { .crossfade_ms = -1, .max_screen_space_error = 100 };
    assert_int_equal(rv_lod_set_desc(f.w, &lax), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.parent) != NULL);
    rv_world_destroy(f.w);
}

/* A child region whose data has not arrived may have no bounds yet: not resident, it holds
 * its parent as itself and is asked for, as one with bounds is. Resident with empty bounds
 * it draws nothing, and the parent refines without waiting for it. */
static void test_a_child_without_bounds_is_waited_for_until_resident(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    rv_world *w = rvt_world_lod(&nofade);
    rv_node parent = make_region(w, RV_NODE_NONE, 0, 0, -100, 20, 10.0f, true);
    rv_node a, b;
    assert_int_equal(rv_node_create(w, parent, &a), RV_OK); /* no bounds: its tile is loading */
    assert_int_equal(rv_node_set_hlod_region(w, a, 1.0f), RV_OK);
    b = make_region(w, parent, 10, 0, -100, 10, 1.0f, true);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view near = view_at(0, 0, -50); /* 30 m from the parent's surface: 167 px */
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(w, parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(weight_of(&out, parent), 1.0f, 0);
    assert_int_equal(out.load_count, 1);
    assert_true(rv_node_equal(out.loads[0].region, parent));
    /* The frame agrees: the parent's geometry is listed, the loaded child's is not. */
    mat4 view, proj;
    glm_lookat((vec3){ 0, 0, -50 }, (vec3){ 0, 0, -100 }, (vec3){ 0, 1, 0 }, view);
    glm_perspective(PI_F / 2, 1.0f, 0.1f, 1000.0f, proj);
    rv_view fv = { .view = (const float *)view, .projection = (const float *)proj, .viewport_width = 1000,
                   .viewport_height = 1000 };
    rv_frame_view fo;
    assert_int_equal(rv_frame(w, &fv, &fo), RV_OK);
    bool parent_listed = false, b_listed = false;
    for (uint32_t i = 0; i < fo.opaque_count; i++) {
        parent_listed = parent_listed || rv_node_equal(fo.opaque[i].node, parent);
        b_listed = b_listed || rv_node_equal(fo.opaque[i].node, b);
    }
    assert_true(parent_listed);
    assert_false(b_listed);
    assert_int_equal(fo.hlod_load_request_count, 1);
    /* Loaded, still without bounds (the tile is empty): refined into the other child. */
    assert_int_equal(rv_node_set_hlod_resident(w, a, true), RV_OK);
    assert_int_equal(rv_hlod_select(w, parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(weight_of(&out, b), 1.0f, 0);
    assert_int_equal(out.load_count, 0);
    rv_world_destroy(w);
}

static void test_eye_inside_region_refines(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    /* Error 0 would never refine from outside; inside, the error is infinite. */
    assert_int_equal(rv_node_set_hlod_region(f.w, f.parent, 0.0f), RV_OK);
    rv_hlod_result out;
    rv_lod_view outside = view_at(0, 0, -50);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &outside, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    rv_lod_view inside = view_at(0, 15, -100);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &inside, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 2);
    assert_true(find_draw(&out, f.parent) == NULL);
    rv_world_destroy(f.w);
}

/* rv_hlod_children: what a load request for a region asks the host to load, its nearest
 * region descendants through plain nodes, in walk order; loading exactly those lets the
 * region refine. */
static void test_a_regions_children_are_its_nearest_region_descendants(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    rv_world *w = rvt_world_lod(&nofade);
    rv_node top = make_region(w, RV_NODE_NONE, 0, 0, -100, 40, 8.0f, true);
    rv_node plain = rvt_node(w, top);
    rv_node a = make_region(w, plain, -20, 0, -100, 9, 0.5f, false);
    rv_node b = make_region(w, plain, -5, 0, -100, 9, 0.5f, false);
    rv_node c = make_region(w, top, 5, 0, -100, 9, 0.5f, false);
    rv_node d = make_region(w, c, 5, 0, -100, 4, 0.1f, false); /* c's child, not top's */
    rv_node e = make_region(w, rvt_node(w, rvt_node(w, top)), 20, 0, -100, 9, 0.5f, false);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_node out[8];
    uint32_t n = 0;
    assert_int_equal(rv_hlod_children(w, top, out, 8, &n), RV_OK);
    assert_int_equal(n, 4);
    const rv_node want[4] = { a, b, c, e };
    for (int k = 0; k < 4; k++)
        assert_true(rv_node_equal(out[k], want[k]));
    /* Too small an array: the first ones and the count. */
    rv_node two[2];
    assert_int_equal(rv_hlod_children(w, top, two, 2, &n), RV_ERR_CAPACITY);
    assert_int_equal(n, 4);
    assert_true(rv_node_equal(two[0], a) && rv_node_equal(two[1], b));
    assert_int_equal(rv_hlod_children(w, c, out, 8, &n), RV_OK);
    assert_true(n == 1 && rv_node_equal(out[0], d));
    assert_int_equal(rv_hlod_children(w, e, out, 8, &n), RV_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rv_hlod_children(w, plain, out, 8, &n), RV_ERR_NOT_FOUND);
    /* Near, the top region wants to refine and asks for its children; loaded, it refines. */
    rv_lod_view near = view_at(0, 0, -40);
    rv_hlod_result res;
    assert_int_equal(rv_hlod_select(w, top, &near, NULL, 0, &res), RV_OK);
    assert_true(res.load_count >= 1 && rv_node_equal(res.loads[0].region, top));
    assert_true(find_draw(&res, top) != NULL);
    assert_int_equal(rv_hlod_children(w, res.loads[0].region, out, 8, &n), RV_OK);
    for (uint32_t k = 0; k < n; k++)
        assert_int_equal(rv_node_set_hlod_resident(w, out[k], true), RV_OK);
    assert_int_equal(rv_hlod_select(w, top, &near, NULL, 0, &res), RV_OK);
    assert_null(find_draw(&res, top));
    assert_non_null(find_draw(&res, a));
    assert_non_null(find_draw(&res, b));
    assert_non_null(find_draw(&res, e));
    rv_world_destroy(w);
}

static void test_non_resident_region_is_never_drawn_and_passes_through(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.parent, false), RV_OK);
    rv_hlod_result out;
    rv_lod_view far = view_at(0, 0, 1000);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 0, &out), RV_OK);
    assert_true(find_draw(&out, f.parent) == NULL);
    assert_int_equal(out.draw_count, 2); /* what is resident below is drawn */
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.a, false), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.b) != NULL);
    assert_true(in_loads(&out, f.parent));
    rv_world_destroy(f.w);
}

/* A fresh streaming world, nothing resident: T (the eye inside it) over C (far, small
 * error) over G. Loading T's children brings C, which is then drawn as itself: C is not
 * listed as long as T asks for it, so the host is not asked for G. Listed where nothing
 * above can ask for it (the walk's top), or where it wants to refine. */
static void test_a_missing_region_is_asked_for_by_the_region_above(void **state)
{
    (void)state;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node t = make_region(w, RV_NODE_NONE, 0, 0, 0, 1000, 100, false);
    rv_node c = make_region(w, t, 0, 0, -900, 50, 0.1f, false);
    rv_node g = make_region(w, c, 0, 0, -900, 25, 0.01f, false);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view v = view_at(0, 0, 900);
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(w, t, &v, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    assert_int_equal(out.load_count, 1);
    assert_true(in_loads(&out, t));
    /* Walked from C, nothing above it is in the walk: C asks for its children. */
    assert_int_equal(rv_hlod_select(w, c, &v, NULL, 0, &out), RV_OK);
    assert_int_equal(out.load_count, 1);
    assert_true(in_loads(&out, c));
    /* T's children loaded: C is drawn, nothing is asked. */
    assert_int_equal(rv_node_set_hlod_resident(w, c, true), RV_OK);
    assert_int_equal(rv_hlod_select(w, t, &v, NULL, 0, &out), RV_OK);
    assert_true(find_draw(&out, c) != NULL);
    assert_int_equal(out.load_count, 0);
    /* Near enough for C to want to refine: missing, it asks for its children beside T. */
    assert_int_equal(rv_node_set_hlod_resident(w, c, false), RV_OK);
    rv_lod_view near = view_at(0, 0, -890); /* inside C: its error is infinite */
    assert_int_equal(rv_hlod_select(w, t, &near, NULL, 0, &out), RV_OK);
    assert_true(in_loads(&out, t));
    assert_true(in_loads(&out, c));
    assert_false(in_loads(&out, g)); /* a leaf: nothing to load below it */
    rv_world_destroy(w);
}

/* A hidden node (RV_NODE_FLAG_HIDDEN) is drawn in no view, nor is anything under it: the
 * HLOD cut skips it with its subtree, neither drawn nor loaded, as rv_frame does. */
static void test_hidden_regions_are_neither_drawn_nor_loaded(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    rv_hlod_result out;
    rv_lod_view near = view_at(0, 0, -50);
    assert_int_equal(rv_node_set_flags(f.w, f.b, RV_NODE_FLAG_HIDDEN), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_true(find_draw(&out, f.a) != NULL);
    assert_true(find_draw(&out, f.b) == NULL);
    /* Hidden and missing below a region that wants to refine, it is not listed either. */
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.b, false), RV_OK);
    rv_node g = make_region(f.w, f.b, 10, 0, -100, 4, 0.1f, false);
    assert_int_equal(rv_update_world(f.w), RV_OK);
    rv_lod_view inside_b = view_at(10, 0, -100);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &inside_b, NULL, 0, &out), RV_OK);
    assert_false(in_loads(&out, f.b));
    assert_true(find_draw(&out, g) == NULL);
    /* The parent hidden: nothing at all, from it or from a root under it. */
    assert_int_equal(rv_node_set_flags(f.w, f.b, 0), RV_OK);
    assert_int_equal(rv_node_set_flags(f.w, f.parent, RV_NODE_FLAG_HIDDEN), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    assert_int_equal(out.load_count, 0);
    assert_int_equal(rv_hlod_select(f.w, f.a, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    assert_int_equal(out.load_count, 0);
    rv_world_destroy(f.w);
}

static void test_frustum_culled_regions_are_not_refined(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    /* Eye 5 m in front of the parent's surface, looking away from it: a huge SSE, culled. */
    float eye[3] = { 0, 0, -75 }, ahead[3] = { 0, 0, 100 };
    rv_frustum fr = rvt_frustum(eye, ahead, PI_F / 2, 5000.0f);
    rv_lod_view v = view_at(eye[0], eye[1], eye[2]);
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, &fr, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    assert_int_equal(out.load_count, 0);
    assert_int_equal(out.regions_visited, 1);
    assert_int_equal(out.regions_culled, 1);
    /* The same with a child missing: still nothing to load for a culled region. */
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.a, false), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, &fr, 0, &out), RV_OK);
    assert_int_equal(out.load_count, 0);
    /* Control: without a frustum the parent wants to refine. */
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, 0, &out), RV_OK);
    assert_true(in_loads(&out, f.parent));
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.a, true), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 2);
    /* Turning toward it: visible, refined; one child culled on its own is skipped. */
    float toward[3] = { 0, 0, -100 };
    rv_frustum fr2 = rvt_frustum(eye, toward, PI_F / 2, 5000.0f);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, &fr2, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 2);
    assert_int_equal(out.regions_culled, 0);
    /* Inside the parent and child b, looking along +x: a lies wholly behind the camera.
     * The parent refines (infinite SSE); a is culled on its own, b is drawn. */
    float side_eye[3] = { 10, 0, -95 }, side[3] = { 100, 0, -95 };
    rv_frustum fr3 = rvt_frustum(side_eye, side, PI_F / 2, 5000.0f);
    rv_lod_view sv = view_at(side_eye[0], side_eye[1], side_eye[2]);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &sv, &fr3, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.b) != NULL);
    assert_int_equal(out.regions_visited, 3);
    assert_int_equal(out.regions_culled, 1);
    /* Behind the camera entirely: nothing. */
    float back_eye[3] = { 40, 0, -100 }, away[3] = { 80, 0, -100 };
    rv_frustum fr4 = rvt_frustum(back_eye, away, PI_F / 2, 5000.0f);
    rv_lod_view bv = view_at(back_eye[0], back_eye[1], back_eye[2]);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bv, &fr4, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    rv_world_destroy(f.w);
}

static void test_load_list_orders_by_error_then_distance(void **state)
{
    (void)state;
    rv_world *w = rvt_world_lod(NULL);
    rv_node root;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &root), RV_OK);
    /* A: error 2 at 100 m; B: error 4 at 200 m (same SSE, farther); C: error 1 at 100 m
     * (smaller SSE); D: the eye is inside it (infinite SSE). Each has a missing child. */
    struct { float z, error; } spec[4] = { { -110, 2 }, { -210, 4 }, { -110, 1 }, { 0, 1 } };
    float xs[4] = { 0, 0, 50, 0 };
    rv_node regions[4];
    for (int i = 0; i < 4; i++) {
        float z = spec[i].z;
        float x = i == 1 ? 0.0f : xs[i];
        if (i == 2)
            z = -(float)sqrt(110.0 * 110.0 - 50.0 * 50.0); /* also 110 from the eye */
        regions[i] = make_region(w, root, x, 0, z, 10, spec[i].error, true);
        make_region(w, regions[i], x, 0, z, 5, 0.1f, false);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view v = view_at(0, 0, 0);
    rv_lod_desc low = { .max_screen_space_error = 1 };
    assert_int_equal(rv_lod_set_desc(w, &low), RV_OK);
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(w, root, &v, NULL, 0, &out), RV_OK);
    assert_int_equal(out.load_count, 4);
    assert_true(rv_node_equal(out.loads[0].region, regions[3]));
    assert_true(rv_node_equal(out.loads[1].region, regions[0]));
    assert_true(rv_node_equal(out.loads[2].region, regions[1]));
    assert_true(rv_node_equal(out.loads[3].region, regions[2]));
    assert_float_equal(out.loads[1].screen_space_error, out.loads[2].screen_space_error, 1e-4);
    assert_true(out.loads[1].distance < out.loads[2].distance);
    assert_float_equal(out.loads[0].distance, 0.0f, 0);
    /* Every region drawn (its children are missing), each at full weight. */
    assert_int_equal(out.draw_count, 4);
    rv_world_destroy(w);
}

/* ---- crossfade ----------------------------------------------------------------------- */

static void test_cut_change_crossfades_parent_and_children(void **state)
{
    (void)state;
    family f = make_family(NULL); /* 250 ms */
    rv_hlod_result out;
    rv_lod_view far = view_at(0, 0, 1000), near = view_at(0, 0, -50);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 16, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 1.0f, 0);
    assert_int_equal(out.regions_fading, 0);
    assert_false(rvi_lod_fading(f.w));
    /* The cut changes: the children enter at weight 0, then 0.2, 0.4, ... */
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 16, &out), RV_OK);
    assert_int_equal(out.draw_count, 3);
    assert_float_equal(weight_of(&out, f.parent), 1.0f, 0);
    assert_float_equal(weight_of(&out, f.a), 0.0f, 0);
    assert_int_equal(out.regions_fading, 1);
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 50, &out), RV_OK);
        assert_float_equal(weight_of(&out, f.parent), 1.0f - 0.2f * (float)k, 1e-6);
        assert_float_equal(weight_of(&out, f.a), 0.2f * (float)k, 1e-6);
        assert_float_equal(weight_of(&out, f.b), 0.2f * (float)k, 1e-6);
    }
    /* Turning back at 0.6 refined. The call's 50 ms passed before it (the fade still ran
     * toward the children: 0.2), then it reverses: the parent climbs back, no jump. */
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 50, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 0.2f, 1e-6);
    assert_float_equal(weight_of(&out, f.a), 0.8f, 1e-6);
    assert_int_equal(out.regions_fading, 1);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 50, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 0.4f, 1e-6);
    assert_float_equal(weight_of(&out, f.b), 0.6f, 1e-6);
    /* Forward again, to the end. */
    const float expect[4] = { 0.6f, 0.4f, 0.2f, 0.0f };
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 50, &out), RV_OK);
        assert_float_equal(weight_of(&out, f.parent), expect[k], 1e-6);
        assert_float_equal(weight_of(&out, f.a) + weight_of(&out, f.parent), 1.0f, 1e-6);
    }
    assert_true(find_draw(&out, f.parent) == NULL);
    assert_int_equal(out.draw_count, 2);
    assert_int_equal(out.regions_fading, 0);
    /* Coarsening fades back in; a child turning non-resident mid-fade ends it at once. */
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 50, &out), RV_OK);
    assert_int_equal(out.regions_fading, 1);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 50, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 0.2f, 1e-6);
    assert_float_equal(weight_of(&out, f.a), 0.8f, 1e-6);
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.a, false), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 10, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(weight_of(&out, f.parent), 1.0f, 0);
    rv_world_destroy(f.w);
}

/* A hidden child region (flagged, or under a flagged plain node) is neither drawn nor
 * loaded: its parent refines into the other children as if it were not there, asks for
 * nothing, and rv_hlod_children leaves it out. Shown again while not resident, it holds
 * the parent as itself and is asked for. */
static void test_a_hidden_child_region_neither_holds_its_parent_nor_is_loaded(void **state)
{
    (void)state;
    for (int under_plain = 0; under_plain < 2; under_plain++) {
        rv_world *w = rvt_world_lod(NULL);
        rv_node p = make_region(w, RV_NODE_NONE, 0, 0, -100, 40, 8.0f, true);
        rv_node a = make_region(w, p, -10, 0, -100, 15, 0.1f, true);
        rv_node holder = p;
        if (under_plain)
            assert_int_equal(rv_node_create(w, p, &holder), RV_OK);
        rv_node b = make_region(w, holder, 10, 0, -100, 15, 0.1f, false);
        rv_node flagged = under_plain ? holder : b;
        assert_int_equal(rv_node_set_flags(w, flagged, RV_NODE_FLAG_HIDDEN), RV_OK);
        assert_int_equal(rv_update_world(w), RV_OK);
        rv_lod_view near = view_at(0, 0, -40);
        rv_hlod_result out;
        for (int k = 0; k < 4; k++)
            assert_int_equal(rv_hlod_select(w, p, &near, NULL, 250, &out), RV_OK);
        assert_null(find_draw(&out, p));
        assert_float_equal(weight_of(&out, a), 1.0f, 0);
        assert_null(find_draw(&out, b));
        assert_int_equal(out.load_count, 0);
        rv_node children[4];
        uint32_t n = 0;
        assert_int_equal(rv_hlod_children(w, p, children, 4, &n), RV_OK);
        assert_int_equal(n, 1);
        assert_true(rv_node_equal(children[0], a));
        /* Shown again, not resident: p is drawn as itself at once and asks for it. */
        assert_int_equal(rv_node_set_flags(w, flagged, 0), RV_OK);
        assert_int_equal(rv_update_world(w), RV_OK);
        assert_int_equal(rv_hlod_select(w, p, &near, NULL, 16, &out), RV_OK);
        assert_float_equal(weight_of(&out, p), 1.0f, 0);
        assert_true(in_loads(&out, p));
        assert_int_equal(rv_hlod_children(w, p, children, 4, &n), RV_OK);
        assert_int_equal(n, 2);
        rv_world_destroy(w);
    }
}

/* A region whose cut collapses at once while in view comes back as itself and fades down
 * again: no stale refinement reappears without a fade. One that left the view shows the
 * cut it wants when it comes back, whole: nobody saw it change, so nothing fades. */
/* A region nobody has seen yet (the world's first frame, or one made while the camera looks
 * at its place) shows the cut it wants whole; the next change of that cut fades. Both for
 * rv_hlod_select and through rv_frame. */
static void test_a_new_regions_first_cut_is_shown_whole(void **state)
{
    (void)state;
    family f = make_family(NULL); /* the default crossfade */
    rv_lod_view near = view_at(0, 0, -50);
    rv_hlod_result out;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 16, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 0.0f, 0);
    assert_float_equal(weight_of(&out, f.a), 1.0f, 0);
    assert_float_equal(weight_of(&out, f.b), 1.0f, 0);
    assert_int_equal(out.regions_fading, 0);
    /* Seen now: going far, the parent fades back in. */
    rv_lod_view far = view_at(0, 0, 1000);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 16, &out), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &far, NULL, 50, &out), RV_OK);
    assert_true(weight_of(&out, f.parent) > 0.0f && weight_of(&out, f.parent) < 1.0f);
    assert_int_equal(out.regions_fading, 1);
    rv_world_destroy(f.w);

    /* rv_frame: the first frame, and a region made in view later. */
    family g = make_family(NULL);
    mat4 view, proj;
    glm_lookat((vec3){ 0, 0, -50 }, (vec3){ 0, 0, -100 }, (vec3){ 0, 1, 0 }, view);
    glm_perspective(PI_F / 2, 1.0f, 0.1f, 1000.0f, proj);
    rv_view fv = { .view = (const float *)view, .projection = (const float *)proj, .viewport_width = 1000,
                   .viewport_height = 1000, .time_ms = 1000.0 };
    rv_frame_view fo;
    for (int frame = 0; frame < 3; frame++, fv.time_ms += 16.0) {
        if (frame == 2) { /* a second family appears beside the first */
            rv_node p2 = make_region(g.w, RV_NODE_NONE, 5, 0, -100, 20, 4.0f, true);
            (void)make_region(g.w, p2, 0, 0, -100, 9, 0.5f, true);
            (void)make_region(g.w, p2, 10, 0, -100, 9, 0.5f, true);
        }
        assert_int_equal(rv_frame(g.w, &fv, &fo), RV_OK);
        assert_int_equal(fo.opaque_count, frame < 2 ? 2u : 4u);
        for (uint32_t i = 0; i < fo.opaque_count; i++) {
            assert_false(rv_node_equal(fo.opaque[i].node, g.parent));
            assert_float_equal(fo.opaque[i].fade, 1.0f, 0);
        }
    }
    rv_world_destroy(g.w);
}

static void test_returning_regions_restart_as_themselves(void **state)
{
    (void)state;
    rv_world *w = rvt_world_lod(NULL);
    rv_node p = make_region(w, RV_NODE_NONE, 0, 0, -100, 40, 8.0f, true);
    rv_node c = make_region(w, p, -10, 0, -100, 20, 4.0f, true);
    rv_node sibling = make_region(w, p, 20, 0, -100, 15, 4.0f, true);
    rv_node g = make_region(w, c, -10, 0, -100, 8, 0.1f, true);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view near = view_at(-10, 0, -70);
    rv_hlod_result out;
    for (int k = 0; k < 8; k++)
        assert_int_equal(rv_hlod_select(w, p, &near, NULL, 250, &out), RV_OK);
    assert_float_equal(weight_of(&out, g), 1.0f, 0); /* p and c both refined */
    assert_int_equal(out.regions_fading, 0);

    /* The sibling is evicted: p is drawn fully at once. Reloaded: p refines again with a
     * fade, and c enters as itself (weight rising with p's fade), not refined. */
    assert_int_equal(rv_node_set_hlod_resident(w, sibling, false), RV_OK);
    assert_int_equal(rv_hlod_select(w, p, &near, NULL, 16, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_int_equal(rv_node_set_hlod_resident(w, sibling, true), RV_OK);
    assert_int_equal(rv_hlod_select(w, p, &near, NULL, 16, &out), RV_OK);
    assert_int_equal(rv_hlod_select(w, p, &near, NULL, 50, &out), RV_OK);
    /* c also wants to refine, so it fades too, from itself: p 0.8, c 0.2 * 0.8, g 0.2 * 0.2
     * (a stale, refined c would have put all of 0.2 on g). */
    assert_float_equal(weight_of(&out, p), 0.8f, 1e-6);
    assert_float_equal(weight_of(&out, c), 0.16f, 1e-6);
    assert_float_equal(weight_of(&out, g), 0.04f, 1e-6);

    /* Settle, then look away (p culled) and back: p and c come back refined, whole. */
    for (int k = 0; k < 8; k++)
        assert_int_equal(rv_hlod_select(w, p, &near, NULL, 250, &out), RV_OK);
    assert_float_equal(weight_of(&out, g), 1.0f, 0);
    /* p's world bounds reach z = -60: from z = -50 the eye is outside them. */
    float eye[3] = { -10, 0, -50 }, away[3] = { -10, 0, 100 }, toward[3] = { -10, 0, -100 };
    rv_frustum f_away = rvt_frustum(eye, away, PI_F / 2, 5000.0f), f_toward = rvt_frustum(eye, toward, PI_F / 2, 5000.0f);
    near.eye[2] = -50;
    assert_int_equal(rv_hlod_select(w, p, &near, &f_away, 16, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    assert_int_equal(out.regions_culled, 1);
    assert_int_equal(rv_hlod_select(w, p, &near, &f_toward, 16, &out), RV_OK);
    assert_null(find_draw(&out, p));
    assert_null(find_draw(&out, c));
    assert_float_equal(weight_of(&out, g), 1.0f, 0);
    assert_int_equal(out.regions_fading, 0);
    assert_int_equal(rv_hlod_select(w, p, &near, &f_toward, 50, &out), RV_OK);
    assert_float_equal(weight_of(&out, g), 1.0f, 0);

    /* Away again; meanwhile the eye goes far (p's error falls below the limit): back in
     * view p shows itself whole, with nothing of c or g fading out. */
    assert_int_equal(rv_hlod_select(w, p, &near, &f_away, 16, &out), RV_OK);
    assert_int_equal(out.draw_count, 0);
    rv_lod_view far = view_at(-10, 0, 4000);
    rv_frustum f_far = rvt_frustum(far.eye, toward, PI_F / 2, 10000.0f);
    assert_int_equal(rv_hlod_select(w, p, &far, &f_far, 16, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_float_equal(weight_of(&out, p), 1.0f, 0);
    assert_int_equal(out.regions_fading, 0);
    rv_world_destroy(w);
}

/* ---- fly-through property test ------------------------------------------------------- */

enum { MAX_TREE = 2000 };

typedef struct region_tree {
    rv_world *w;
    uint32_t count;
    rv_node node[MAX_TREE];
    int parent[MAX_TREE];          /* index of the nearest region ancestor, -1 for the top */
    bool region[MAX_TREE];         /* false: a plain node between regions */
    bool resident[MAX_TREE];
    bool leaf[MAX_TREE];           /* a region without region descendants */
    float error[MAX_TREE];
    float sphere[MAX_TREE][4];     /* own geometry (world space) */
    int requested_at[MAX_TREE];    /* frame its children were asked for, -1 none */
} region_tree;

static region_tree tree;

/* Builds a random quadtree of regions over a square: each region has 0 or 2..4 children
 * (random quadrants), errors shrinking by a random factor, sometimes a plain node between
 * a region and its children. */
static void build_tree(uint64_t *seed, uint32_t max_nodes)
{
    memset(&tree, 0, sizeof tree);
    tree.w = rvt_world_lod(NULL);
    typedef struct { int index; float cx, cz, half; int depth; } pending;
    static pending queue[MAX_TREE];
    int head = 0, tail = 0;
    rv_node root;
    assert_int_equal(rv_node_create(tree.w, RV_NODE_NONE, &root), RV_OK);
    tree.node[0] = root;
    tree.region[0] = true;
    tree.parent[0] = -1;
    tree.count = 1;
    tree.error[0] = 64.0f;
    queue[tail++] = (pending){ 0, 0, 0, 512, 0 };
    while (head < tail) {
        pending p = queue[head++];
        uint32_t i = (uint32_t)p.index;
        float c[3] = { p.cx, rvt_uniform(seed, 0, 10), p.cz };
        float r = p.half * 1.5f;
        assert_int_equal(rv_node_set_bounds(tree.w, tree.node[i], c, r), RV_OK);
        assert_int_equal(rv_node_set_hlod_region(tree.w, tree.node[i], tree.error[i]), RV_OK);
        tree.sphere[i][0] = c[0];
        tree.sphere[i][1] = c[1];
        tree.sphere[i][2] = c[2];
        tree.sphere[i][3] = r;
        tree.resident[i] = i == 0 || rvt_next(seed) % 2;
        assert_int_equal(rv_node_set_hlod_resident(tree.w, tree.node[i], tree.resident[i]), RV_OK);
        tree.requested_at[i] = -1;
        uint32_t kids = (p.depth < 2 || (p.depth < 6 && rvt_next(seed) % 6 != 0)) ? 2 + (uint32_t)(rvt_next(seed) % 3) : 0;
        if (tree.count + 2 * kids > max_nodes)
            kids = 0;
        tree.leaf[i] = kids == 0;
        rv_node under = tree.node[i];
        if (kids && rvt_next(seed) % 4 == 0) {
            /* A plain node between the region and its children (not a region). */
            uint32_t plain = tree.count++;
            assert_int_equal(rv_node_create(tree.w, under, &tree.node[plain]), RV_OK);
            tree.region[plain] = false;
            tree.parent[plain] = (int)i;
            under = tree.node[plain];
        }
        uint32_t quadrants = 0;
        for (uint32_t k = 0; k < kids; k++) {
            uint32_t q;
            do
                q = (uint32_t)(rvt_next(seed) % 4);
            while (quadrants & (1u << q));
            quadrants |= 1u << q;
            uint32_t j = tree.count++;
            assert_int_equal(rv_node_create(tree.w, under, &tree.node[j]), RV_OK);
            tree.region[j] = true;
            tree.parent[j] = (int)i;
            tree.error[j] = tree.error[i] * rvt_uniform(seed, 0.3f, 0.7f);
            float h = p.half / 2;
            queue[tail++] = (pending){ (int)j, p.cx + (q & 1 ? h : -h), p.cz + (q & 2 ? h : -h), h, p.depth + 1 };
        }
    }
    assert_int_equal(rv_update_world(tree.w), RV_OK);
}

static int tree_index_of(rv_node n)
{
    for (uint32_t i = 0; i < tree.count; i++)
        if (rv_node_equal(tree.node[i], n))
            return (int)i;
    return -1;
}

/* The slow reference for a settled cut: recursive, straight from the definition. */
static void reference_cut(int i, const rv_lod_view *v, const rv_frustum *f, float max_sse, bool *drawn)
{
    float wb[4];
    assert_int_equal(rv_node_world_bounds(tree.w, tree.node[i], wb), RV_OK);
    if (rv_frustum_classify_sphere(f, wb, wb[3]) == RV_OUTSIDE)
        return;
    double dx = wb[0] - v->eye[0], dy = wb[1] - v->eye[1], dz = wb[2] - v->eye[2];
    double d = sqrt(dx * dx + dy * dy + dz * dz) - wb[3];
    double sse = d <= 0 ? INFINITY : tree.error[i] * v->viewport_height_px / (2 * d * tan(v->fov_y / 2));
    bool children_resident = true, any = false;
    for (uint32_t j = 0; j < tree.count; j++)
        if (tree.region[j] && tree.parent[j] == i) {
            any = true;
            children_resident = children_resident && tree.resident[j];
        }
    if (any && sse > max_sse && children_resident) {
        for (uint32_t j = 0; j < tree.count; j++)
            if (tree.region[j] && tree.parent[j] == i)
                reference_cut((int)j, v, f, max_sse, drawn);
    } else {
        drawn[i] = true;
    }
}

static void check_no_hole(const rv_hlod_result *out, const rv_frustum *f, float *weight)
{
    memset(weight, 0, sizeof(float) * tree.count);
    for (uint32_t k = 0; k < out->draw_count; k++) {
        int i = tree_index_of(out->draws[k].region);
        assert_true(i >= 0 && tree.region[i]);
        assert_true(tree.resident[i]);           /* never a region that is not loaded */
        assert_true(weight[i] == 0.0f);          /* listed once */
        assert_true(out->draws[k].weight >= 0.0f && out->draws[k].weight <= 1.0f);
        weight[i] = out->draws[k].weight;
        if (weight[i] == 0.0f)
            weight[i] = -0.0f;
    }
    /* Every visible leaf is covered: the weights on its path up to the top sum to 1. */
    for (uint32_t i = 0; i < tree.count; i++) {
        if (!tree.region[i] || !tree.leaf[i])
            continue;
        float wb[4];
        assert_int_equal(rv_node_world_bounds(tree.w, tree.node[i], wb), RV_OK);
        if (rv_frustum_classify_sphere(f, wb, wb[3]) == RV_OUTSIDE)
            continue;
        float sum = 0.0f;
        for (int j = (int)i; j >= 0; j = tree.parent[j])
            sum += weight[j] > 0.0f ? weight[j] : 0.0f;
        if (fabsf(sum - 1.0f) > 1e-4f)
            fail_msg("leaf %u: weights on its path sum to %g", i, (double)sum);
    }
    /* The load list is sorted: larger SSE first, then nearer. */
    for (uint32_t k = 1; k < out->load_count; k++) {
        const rv_hlod_load *a = &out->loads[k - 1], *b = &out->loads[k];
        assert_true(a->screen_space_error > b->screen_space_error ||
                    (a->screen_space_error == b->screen_space_error && a->distance <= b->distance));
    }
}

static void test_flythrough_never_leaves_a_hole(void **state)
{
    (void)state;
    uint64_t seed = 2024;
    int trees = RVT_HEAVY(20, 6);
    int frames = RVT_HEAVY(800, 400);
    static float weight[MAX_TREE];
    static bool drawn[MAX_TREE];
    int refined_frames = 0, loads_seen = 0, fades_seen = 0, deep_settled = 0, settled = 0;
    for (int t = 0; t < trees; t++) {
        build_tree(&seed, RVT_HEAVY(MAX_TREE, 800));
        float max_sse = 16.0f;
        for (int frame = 0; frame < frames; frame++) {
            /* A low pass over the square, turning, with uneven frame times. */
            float a = (float)frame / (float)frames * 2.0f * PI_F;
            float eye[3] = { 450.0f * cosf(a), 2.0f + 20.0f * (0.5f + 0.5f * sinf(3 * a)), 300.0f * sinf(2 * a) };
            float look[3] = { eye[0] - 100.0f * sinf(a), eye[1] - 10.0f, eye[2] + 100.0f * cosf(a) };
            rv_frustum f = rvt_frustum(eye, look, PI_F / 2, 5000.0f);
            rv_lod_view v = view_at(eye[0], eye[1], eye[2]);
            float dt = (float)(rvt_next(&seed) % 40);
            rv_hlod_result out;
            assert_int_equal(rv_hlod_select(tree.w, tree.node[0], &v, &f, dt, &out), RV_OK);
            check_no_hole(&out, &f, weight);
            refined_frames += weight[0] <= 0.0f;
            loads_seen += out.load_count > 0;
            fades_seen += out.regions_fading > 0;
            /* The host: answers requests a few frames later, evicts now and then. */
            for (uint32_t k = 0; k < out.load_count; k++) {
                int i = tree_index_of(out.loads[k].region);
                assert_true(i >= 0);
                if (tree.requested_at[i] < 0)
                    tree.requested_at[i] = frame;
            }
            for (uint32_t i = 0; i < tree.count; i++) {
                if (tree.requested_at[i] >= 0 && frame - tree.requested_at[i] >= 1 + (int)(rvt_next(&seed) % 4)) {
                    for (uint32_t j = 0; j < tree.count; j++)
                        if (tree.region[j] && tree.parent[j] == (int)i && !tree.resident[j]) {
                            tree.resident[j] = true;
                            assert_int_equal(rv_node_set_hlod_resident(tree.w, tree.node[j], true), RV_OK);
                        }
                    tree.requested_at[i] = -1;
                }
            }
            if (tree.count > 1 && rvt_next(&seed) % 8 == 0) {
                uint32_t victim = 1 + (uint32_t)(rvt_next(&seed) % (tree.count - 1));
                if (tree.region[victim]) {
                    tree.resident[victim] = false;
                    assert_int_equal(rv_node_set_hlod_resident(tree.w, tree.node[victim], false), RV_OK);
                }
            }
            /* Now and then, stop and let the fades settle: the cut equals the reference. */
            if (frame % 50 == 49) {
                /* One fade per tree level at most, each done in one 250 ms step. */
                int settle = 0;
                do
                    assert_int_equal(rv_hlod_select(tree.w, tree.node[0], &v, &f, 250, &out), RV_OK);
                while (out.regions_fading > 0 && ++settle < 10);
                assert_int_equal(out.regions_fading, 0);
                check_no_hole(&out, &f, weight);
                memset(drawn, 0, sizeof drawn);
                reference_cut(0, &v, &f, max_sse, drawn);
                settled++;
                deep_settled += out.draw_count >= 8;
                for (uint32_t i = 0; i < tree.count; i++) {
                    bool ours = weight[i] > 0.0f;
                    if (ours != drawn[i])
                        fail_msg("tree %d frame %d region %u: drawn %d, reference %d", t, frame, i, ours, drawn[i]);
                    if (ours)
                        assert_float_equal(weight[i], 1.0f, 0);
                }
            }
        }
        rv_world_destroy(tree.w);
    }
    /* The scenario really exercised refinement, loading and fading. */
    assert_true(refined_frames > 0);
    assert_true(loads_seen > 0);
    assert_true(fades_seen > 0);
    /* ... with cuts several regions deep, compared with the reference. */
    assert_true(deep_settled * 2 > settled);
}

/* ---- errors, destruction, allocation ------------------------------------------------- */

static void test_hlod_refuses_bad_input_and_changes_nothing(void **state)
{
    (void)state;
    family f = make_family(NULL);
    rv_hlod_result out;
    memset(&out, 0, sizeof out);
    rv_lod_view v = view_at(0, 0, -50);
    rv_lod_view bad = v;
    bad.eye[2] = NAN;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bad, NULL, 0, &out), RV_ERR_NOT_FINITE);
    bad = v;
    bad.fov_y = 0;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bad, NULL, 0, &out), RV_ERR_INVALID_ARG);
    bad.fov_y = PI_F;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bad, NULL, 0, &out), RV_ERR_INVALID_ARG);
    bad = v;
    bad.viewport_height_px = 0;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bad, NULL, 0, &out), RV_ERR_INVALID_ARG);
    bad = v;
    bad.orthographic = true;
    assert_int_equal(rv_hlod_select(f.w, f.parent, &bad, NULL, 0, &out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, -1, &out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, INFINITY, &out), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_hlod_select(f.w, f.parent, NULL, NULL, 0, &out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_hlod_select(NULL, f.parent, &v, NULL, 0, &out), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_hlod_select(f.w, RV_NODE_NONE, &v, NULL, 0, &out), RV_ERR_STALE_HANDLE);
    assert_int_equal(out.draw_count, 0);
    /* Nothing changed: the first valid call is the regions' first decision, so it shows
     * the cut they want whole (one a refused call had made would fade from the parent). */
    assert_int_equal(rv_hlod_select(f.w, f.parent, &v, NULL, 50, &out), RV_OK);
    assert_float_equal(weight_of(&out, f.parent), 0.0f, 0);
    assert_float_equal(weight_of(&out, f.a), 1.0f, 0);
    assert_int_equal(out.regions_fading, 0);
    /* Region setters. */
    assert_int_equal(rv_node_set_hlod_region(f.w, f.a, -1), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_node_set_hlod_region(f.w, f.a, NAN), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_node_set_hlod_region(NULL, f.a, 1), RV_ERR_INVALID_ARG);
    rv_node plain;
    assert_int_equal(rv_node_create(f.w, RV_NODE_NONE, &plain), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(f.w, plain, true), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_node_clear_hlod_region(f.w, plain), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_node_destroy_subtree(f.w, plain), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(f.w, plain, 1), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_node_set_hlod_resident(f.w, plain, true), RV_ERR_STALE_HANDLE);
    rv_world_destroy(f.w);
}

static void test_destroyed_or_cleared_region_is_forgotten(void **state)
{
    (void)state;
    rv_lod_desc nofade = { .crossfade_ms = -1 };
    family f = make_family(&nofade);
    rv_hlod_result out;
    rv_lod_view near = view_at(0, 0, -50);
    assert_int_equal(rv_node_set_hlod_resident(f.w, f.b, false), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1); /* b missing: parent drawn */
    /* b destroyed: the parent's only child is a, resident: it refines. */
    assert_int_equal(rv_node_destroy_subtree(f.w, f.b), RV_OK);
    assert_int_equal(rv_update_world(f.w), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.a) != NULL);
    /* a cleared: the parent is a leaf again. */
    assert_int_equal(rv_node_clear_hlod_region(f.w, f.a), RV_OK);
    assert_int_equal(rv_hlod_select(f.w, f.parent, &near, NULL, 0, &out), RV_OK);
    assert_int_equal(out.draw_count, 1);
    assert_true(find_draw(&out, f.parent) != NULL);
    /* A new node in b's slot is not a region. */
    rv_node fresh;
    assert_int_equal(rv_node_create(f.w, RV_NODE_NONE, &fresh), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(f.w, fresh, true), RV_ERR_NOT_FOUND);
    rv_world_destroy(f.w);
}

static void test_steady_hlod_select_allocates_nothing(void **state)
{
    (void)state;
    uint64_t seed = 99;
    build_tree(&seed, 400);
    for (uint32_t i = 0; i < tree.count; i++)
        if (tree.region[i])
            assert_int_equal(rv_node_set_hlod_resident(tree.w, tree.node[i], true), RV_OK);
    rv_hlod_result out;
    rv_lod_view v = view_at(0, 50, 0);
    assert_int_equal(rv_hlod_select(tree.w, tree.node[0], &v, NULL, 16, &out), RV_OK); /* warm-up */
    rv_alloc_stats before = rv_world_alloc_stats(tree.w);
    uint32_t most = 0;
    for (int frame = 0; frame < 300; frame++) {
        v.eye[0] = -500.0f + 3.3f * (float)frame;
        v.eye[1] = 5.0f;
        assert_int_equal(rv_hlod_select(tree.w, tree.node[0], &v, NULL, 16, &out), RV_OK);
        most = out.draw_count > most ? out.draw_count : most;
    }
    rv_alloc_stats after = rv_world_alloc_stats(tree.w);
    assert_true(most > 4);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.reallocations, before.reallocations);
    rv_world_destroy(tree.w);
}

typedef struct hlod_case {
    rv_world *w;
    rv_node nodes[200];
    uint32_t count;
    rv_hlod_result before;   /* the result lent out before the call under test */
} hlod_case;
static hlod_case hc;

static void add_nodes(uint32_t from, uint32_t to, bool regions)
{
    for (uint32_t i = from; i < to; i++) {
        rv_node parent = i ? hc.nodes[(i - 1) / 3] : RV_NODE_NONE;
        assert_int_equal(rv_node_create(hc.w, parent, &hc.nodes[i]), RV_OK);
        float c[3] = { (float)i, 0, -(float)i };
        assert_int_equal(rv_node_set_bounds(hc.w, hc.nodes[i], c, 1.0f + 50.0f / (float)(i + 1)), RV_OK);
        if (regions) {
            assert_int_equal(rv_node_set_hlod_region(hc.w, hc.nodes[i], 10.0f / (float)(i + 1)), RV_OK);
            assert_int_equal(rv_node_set_hlod_resident(hc.w, hc.nodes[i], i % 7 != 3), RV_OK);
        }
    }
    hc.count = to;
    assert_int_equal(rv_update_world(hc.w), RV_OK);
}

static rv_lod_view sweep_view(void)
{
    return view_at(0, 0, 5);
}

static void *hlod_setup(const rv_allocator *a, bool regions, bool selected)
{
    memset(&hc, 0, sizeof hc);
    rv_world_desc desc = {0};
    desc.allocator = *a;
    assert_int_equal(rv_world_create(&desc, &hc.w), RV_OK);
    add_nodes(0, 100, regions);
    if (selected) {
        /* A first selection lends out a result; then the tree doubles, so the next
         * selection must grow every block. */
        rv_lod_view v = sweep_view();
        assert_int_equal(rv_hlod_select(hc.w, hc.nodes[0], &v, NULL, 10, &hc.before), RV_OK);
        assert_true(hc.before.draw_count > 0);
        add_nodes(100, 200, regions);
    }
    return &hc;
}
static void *setup_plain(const rv_allocator *a) { return hlod_setup(a, false, false); }
/* 8 regions exist among 151 nodes: the 9th, on slot 150, grows the records and the slot map. */
static void *setup_some_regions(const rv_allocator *a)
{
    hlod_setup(a, false, false);
    add_nodes(100, 151, false);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(rv_node_set_hlod_region(hc.w, hc.nodes[i], 1.0f), RV_OK);
    return &hc;
}
static rv_result call_set_last_region(void *o)
{
    hlod_case *c = o;
    return rv_node_set_hlod_region(c->w, c->nodes[150], 1.0f);
}
static void *setup_regions(const rv_allocator *a) { return hlod_setup(a, true, false); }
static void *setup_selected(const rv_allocator *a) { return hlod_setup(a, true, true); }

static rv_result call_select(void *o)
{
    hlod_case *c = o;
    rv_hlod_result out;
    rv_lod_view v = sweep_view();
    return rv_hlod_select(c->w, c->nodes[0], &v, NULL, 10, &out);
}
static rv_result call_set_region(void *o)
{
    hlod_case *c = o;
    return rv_node_set_hlod_region(c->w, c->nodes[99], 1.0f);
}

/* Memory held, which nodes are regions (resident re-set to its own value: no change), and
 * the previously lent result, which must still be readable and the same. */
static uint64_t hlod_fingerprint(void *o)
{
    hlod_case *c = o;
    uint64_t h = rv_world_alloc_stats(c->w).bytes_live;
    for (uint32_t i = 0; i < c->count; i++)
        h = h * 31 + (uint64_t)rv_node_set_hlod_resident(c->w, c->nodes[i], i % 7 != 3);
    for (uint32_t i = 0; i < c->before.draw_count; i++)
        h = h * 31 + c->before.draws[i].region.id + (uint64_t)(c->before.draws[i].weight * 1e6f);
    for (uint32_t i = 0; i < c->before.load_count; i++)
        h = h * 31 + c->before.loads[i].region.id;
    return h;
}
static void hlod_teardown(void *o)
{
    hlod_case *c = o;
    rv_world_destroy(c->w);
    c->w = NULL;
}

static void test_hlod_calls_survive_every_allocation_failure(void **state)
{
    (void)state;
    rvt_sweep first_region = { "rv_node_set_hlod_region (first)", setup_plain, call_set_region,
                               hlod_fingerprint, hlod_teardown };
    assert_int_equal(rvt_run_sweep(&first_region), 3); /* state, slot map, region records */
    rvt_sweep grow_region = { "rv_node_set_hlod_region (grow)", setup_some_regions, call_set_last_region,
                              hlod_fingerprint, hlod_teardown };
    assert_int_equal(rvt_run_sweep(&grow_region), 2);
    rvt_sweep first_select = { "rv_hlod_select (first)", setup_regions, call_select,
                               hlod_fingerprint, hlod_teardown };
    assert_int_equal(rvt_run_sweep(&first_select), 3); /* stack, draws, loads */
    rvt_sweep grow_select = { "rv_hlod_select (grow)", setup_selected, call_select,
                              hlod_fingerprint, hlod_teardown };
    assert_int_equal(rvt_run_sweep(&grow_select), 3);
    rvt_sweep fresh_select = { "rv_hlod_select (no regions yet)", setup_plain, call_select,
                               hlod_fingerprint, hlod_teardown };
    assert_int_equal(rvt_run_sweep(&fresh_select), 4); /* state too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_screen_space_error_matches_hand_computed_value),
        cmocka_unit_test(test_region_refines_only_when_every_child_is_resident),
        cmocka_unit_test(test_a_child_without_bounds_is_waited_for_until_resident),
        cmocka_unit_test(test_eye_inside_region_refines),
        cmocka_unit_test(test_a_regions_children_are_its_nearest_region_descendants),
        cmocka_unit_test(test_non_resident_region_is_never_drawn_and_passes_through),
        cmocka_unit_test(test_a_missing_region_is_asked_for_by_the_region_above),
        cmocka_unit_test(test_hidden_regions_are_neither_drawn_nor_loaded),
        cmocka_unit_test(test_frustum_culled_regions_are_not_refined),
        cmocka_unit_test(test_load_list_orders_by_error_then_distance),
        cmocka_unit_test(test_cut_change_crossfades_parent_and_children),
        cmocka_unit_test(test_a_new_regions_first_cut_is_shown_whole),
        cmocka_unit_test(test_returning_regions_restart_as_themselves),
        cmocka_unit_test(test_a_hidden_child_region_neither_holds_its_parent_nor_is_loaded),
        cmocka_unit_test(test_flythrough_never_leaves_a_hole),
        cmocka_unit_test(test_hlod_refuses_bad_input_and_changes_nothing),
        cmocka_unit_test(test_destroyed_or_cleared_region_is_forgotten),
        cmocka_unit_test(test_steady_hlod_select_allocates_nothing),
        cmocka_unit_test(test_hlod_calls_survive_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
