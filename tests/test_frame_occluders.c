/* Occluders of every shape in a world (suite frame): convex and mesh occluders added per
 * frame and carried by nodes hide what is behind them, fuse with their neighbours, follow
 * their node's matrix, are replaced and cleared whatever their shape, free their copies
 * with the node; steady frames allocate nothing; allocation failures leave the world as
 * it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "support/rvt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct camera {
    float view[16];
    float projection[16];
    rv_view v;
} camera;

/* A camera at (x, 1.7, 0) looking down -z (OpenGL perspective, 1280 x 720). */
static void camera_at(camera *c, float x, double time_ms)
{
    float v[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -x, -1.7f, 0, 1 };
    memcpy(c->view, v, sizeof v);
    float n = 0.1f, fa = 1000.0f, t = 1.0f / tanf(0.6f), aspect = 16.0f / 9.0f;
    float p[16] = { t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (fa + n) / (n - fa), -1, 0, 0, 2 * fa * n / (n - fa), 0 };
    memcpy(c->projection, p, sizeof p);
    memset(&c->v, 0, sizeof c->v);
    c->v.view = c->view;
    c->v.projection = c->projection;
    c->v.viewport_width = 1280;
    c->v.viewport_height = 720;
    c->v.time_ms = time_ms;
}

static rv_world *world_new(const rv_allocator *allocator, uint32_t occlusion_width)
{
    rv_world_desc d = { 0 };
    if (allocator)
        d.allocator = *allocator;
    d.occlusion.width = occlusion_width;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    return w;
}

static rv_node object_at(rv_world *w, float x, float y, float z, float r)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
    float p[3] = { x, y, z }, c[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, n, c, r), RV_OK);
    return n;
}

static bool view_draws(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n))
            return true;
    return false;
}

/* A wall 8 m wide and 6 m high, 0.5 m thick, centred on x, its front at z = 0 (local). */
static uint32_t wall_planes(float x, float planes[6][4])
{
    const float p[6][4] = { { -1, 0, 0, 4 - x }, { 1, 0, 0, 4 + x }, { 0, -1, 0, 0 },
                            { 0, 1, 0, 6 },      { 0, 0, -1, 0.5f }, { 0, 0, 1, 0 } };
    memcpy(planes, p, sizeof p);
    return 6;
}

/* The same wall as a closed mesh (8 corners, 12 triangles wound counter-clockwise seen from
 * outside). */
static const uint32_t CUBE_INDICES[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                           2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };

static void wall_corners(float x0, float x1, float pos[8][3])
{
    const float lo[3] = { x0, 0, -0.5f }, hi[3] = { x1, 6, 0 };
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 3; i++)
            pos[k][i] = (k >> i) & 1 ? hi[i] : lo[i];
}

/* A node placed at (0, 0, -10) carrying nothing yet. */
static rv_node wall_node(rv_world *w)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
    float p[3] = { 0, 0, -10 };
    assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
    return n;
}

static void test_node_convex_and_mesh_occluders_hide_what_is_behind(void **state)
{
    (void)state;
    for (int shape = 0; shape < 3; shape++) {
        rv_world *w = world_new(NULL, 256);
        rv_node wall = wall_node(w);
        float planes[6][4], pos[8][3];
        wall_planes(0, planes);
        wall_corners(-4, 4, pos);
        rv_occluder_convex c = { (const float (*)[4])planes, 6, shape == 1 ? RV_OCCLUDER_EXACT : 0 };
        rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36, RV_OCCLUDER_CLOSED };
        assert_int_equal(shape == 2 ? rv_node_set_occluder_mesh(w, wall, &m) : rv_node_set_occluder_convex(w, wall, &c),
                         RV_OK);
        /* The host's arrays may change at once: the world keeps its own copy. */
        memset(planes, 0, sizeof planes);
        memset(pos, 0, sizeof pos);
        rv_node behind = object_at(w, 0, 2, -20, 0.5f), beside = object_at(w, 9, 2, -20, 0.5f);
        rv_node front = object_at(w, 0, 2, -5, 0.5f);
        camera cam;
        camera_at(&cam, 0, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        assert_false(view_draws(&v, behind));
        assert_true(view_draws(&v, beside));
        assert_true(view_draws(&v, front));
        assert_int_equal(v.counts.occluders_added, 1);
        assert_int_equal(v.counts.occluders_rasterised, 1);
        /* The node's matrix moves the occluder: moved aside, it hides nothing there. */
        float aside[3] = { 30, 0, -10 };
        assert_int_equal(rv_node_set_position(w, wall, aside), RV_OK);
        camera_at(&cam, 0, 16);
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        assert_true(view_draws(&v, behind));
        assert_int_equal(v.counts.occluders_added, 0); /* outside the frustum: not submitted */
        rv_world_destroy(w);
    }
}

/* A node that mirrors (a negative scale) reverses the world winding of its closed mesh; the
 * mesh still keeps its far side, so what stands inside the wall is drawn. The mesh's
 * triangles share no corners, so it is drawn triangle by triangle, not as a convex solid. */
static void test_a_mirrored_node_keeps_its_closed_mesh_s_far_side(void **state)
{
    (void)state;
    float corners[8][3], pos[36][3];
    uint32_t idx[36];
    wall_corners(-4, 4, corners);
    for (uint32_t i = 0; i < 36; i++) {
        memcpy(pos[i], corners[CUBE_INDICES[i]], sizeof pos[i]);
        idx[i] = i;
    }
    rv_occluder_mesh m = { (const float (*)[3])pos, 36, idx, 36, RV_OCCLUDER_CLOSED };
    for (int mirror = 0; mirror < 2; mirror++) {
        rv_world *w = world_new(NULL, 256);
        rv_node wall = wall_node(w);
        const float scale[3] = { mirror ? -1.0f : 1.0f, 1, 1 }; /* the wall is symmetric in x */
        assert_int_equal(rv_node_set_scale(w, wall, scale), RV_OK);
        assert_int_equal(rv_node_set_occluder_mesh(w, wall, &m), RV_OK);
        rv_node inside = object_at(w, 0, 2, -10.25f, 0.1f), behind = object_at(w, 0, 2, -20, 0.5f);
        camera cam;
        camera_at(&cam, 0, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        assert_true(view_draws(&v, inside));
        assert_false(view_draws(&v, behind));
        rv_world_destroy(w);
    }
}

static void test_clearing_or_replacing_an_occluder_of_any_shape(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_allocator a = rvt_allocator(&st);
    rv_world *w = world_new(&a, 256);
    rv_node wall = wall_node(w);
    rv_node behind = object_at(w, 0, 2, -20, 0.5f);
    camera cam;
    camera_at(&cam, 0, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    int64_t bare = st.live_bytes;
    float planes[6][4], pos[8][3], lo[3] = { -4, 0, -0.5f }, hi[3] = { 4, 6, 0 };
    wall_planes(0, planes);
    wall_corners(-4, 4, pos);
    rv_occluder_convex c = { (const float (*)[4])planes, 6, 0 };
    rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36, RV_OCCLUDER_CLOSED };
    /* box -> convex -> mesh -> box: each replaces the last; the node hides all along. */
    for (int step = 0; step < 4; step++) {
        rv_result r = step == 1   ? rv_node_set_occluder_convex(w, wall, &c)
                      : step == 2 ? rv_node_set_occluder_mesh(w, wall, &m)
                                  : rv_node_set_occluder_box(w, wall, lo, hi);
        assert_int_equal(r, RV_OK);
        camera_at(&cam, 0, 16.0 * (step + 1));
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        assert_false(view_draws(&v, behind));
        assert_int_equal(v.counts.occluders_added, 1);
    }
    /* Cleared whatever its shape: hides nothing, and the copy is gone. */
    assert_int_equal(rv_node_set_occluder_mesh(w, wall, &m), RV_OK);
    assert_true(st.live_bytes > bare);
    assert_int_equal(rv_node_clear_occluder(w, wall), RV_OK);
    assert_int_equal(rv_node_clear_occluder(w, wall), RV_OK); /* none: nothing to do */
    camera_at(&cam, 0, 100);
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    /* The box call clears any shape too; a destroyed node frees its copy. */
    assert_int_equal(rv_node_set_occluder_convex(w, wall, &c), RV_OK);
    assert_int_equal(rv_node_clear_occluder_box(w, wall), RV_OK);
    camera_at(&cam, 0, 116);
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    assert_int_equal(rv_node_set_occluder_mesh(w, wall, &m), RV_OK);
    assert_int_equal(rv_node_destroy_subtree(w, wall), RV_OK);
    camera_at(&cam, 0, 132);
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    rv_world_destroy(w);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.live_bytes, 0);
}

/* Two brushes sharing a face and a mesh wall of many triangles, per frame: what lies
 * behind the shared face and behind the mesh's inner edges is hidden (fusion in a frame). */
static void test_per_frame_shapes_fuse_in_a_frame(void **state)
{
    (void)state;
    rv_world *w = world_new(NULL, 256);
    /* Objects behind x = 0 (the shared face), behind a vertex of the mesh's inner edges at
     * x = 20 (the mesh 30 m ahead), and where nothing is. */
    rv_node seam = object_at(w, 0, 2, -25, 0.15f), mesh_seam = object_at(w, 20, 2, -45, 0.2f);
    rv_node gap_far = object_at(w, 40, 2, -45, 0.3f);
    float left[6][4], right[6][4];
    wall_planes(-4, left);
    wall_planes(4, right);
    /* A 8 x 6 m mesh wall split into a 4 x 3 grid of quads (24 triangles), centred on x = 20. */
    float grid[20][3];
    uint32_t idx[72], n = 0;
    for (int y = 0; y <= 3; y++)
        for (int x = 0; x <= 4; x++) {
            grid[y * 5 + x][0] = 16 + 2.0f * (float)x;
            grid[y * 5 + x][1] = 2.0f * (float)y;
            grid[y * 5 + x][2] = 0;
        }
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++) {
            uint32_t a = (uint32_t)(y * 5 + x), c = a + 5;
            uint32_t t[6] = { a, a + 1, c + 1, a, c + 1, c };
            memcpy(idx + n, t, sizeof t);
            n += 6;
        }
    float wall_m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -10, 1 };
    float mesh_m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -30, 1 };
    camera cam;
    for (int f = 0; f < 8; f++) {
        /* The eye slides across: the shared face is seen edge-on at x = 0, and obliquely.
         * The object behind the mesh stays on the sight line through its vertex at
         * (20, 2, -30), half as far again. */
        float ex = (float)f * 0.7f, at[3] = { ex + (20 - ex) * 1.5f, 1.7f + 0.3f * 1.5f, -45 };
        assert_int_equal(rv_node_set_position(w, mesh_seam, at), RV_OK);
        camera_at(&cam, ex, 16.0 * f);
        assert_int_equal(rv_frame_begin(w, &cam.v), RV_OK);
        rv_occluder_convex l = { (const float (*)[4])left, 6, 0 }, r = { (const float (*)[4])right, 6, 0 };
        rv_occluder_mesh mesh = { (const float (*)[3])grid, 20, idx, n, 0 };
        assert_int_equal(rv_frame_add_convex(w, &l, wall_m), RV_OK);
        assert_int_equal(rv_frame_add_convex(w, &r, wall_m), RV_OK);
        assert_int_equal(rv_frame_add_mesh(w, &mesh, mesh_m), RV_OK);
        assert_int_equal(rv_frame_cull(w), RV_OK);
        rv_frame_view v;
        assert_int_equal(rv_frame_end(w, &v), RV_OK);
        assert_int_equal(v.counts.occluders_added, 3);
        assert_false(view_draws(&v, seam));
        assert_false(view_draws(&v, mesh_seam));
        assert_true(view_draws(&v, gap_far));
        rv_occlusion_stats st = rv_occlusion_get_stats(rv_world_occlusion(w));
        assert_true(st.fused_texels > 0);
        assert_int_equal(st.triangles_submitted, 24);
    }
    rv_world_destroy(w);
}

/* Convex and mesh occluder nodes all around: once a walk has grown the frame's storage,
 * walking it again allocates nothing. */
static void test_steady_frames_with_shapes_allocate_nothing(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_allocator a = rvt_allocator(&st);
    rv_world *w = world_new(&a, 128);
    float pos[8][3], planes[6][4];
    for (int i = 0; i < 40; i++) {
        rv_node n = wall_node(w);
        float p[3] = { i == 0 ? 0.0f : -60 + 3.0f * (float)i, 0, i == 0 ? 20.0f : -25.0f };
        assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
        wall_planes(0, planes);
        wall_corners(-1, 1, pos);
        rv_occluder_convex c = { (const float (*)[4])planes, 6, (uint32_t)(i % 4 == 1 ? RV_OCCLUDER_EXACT : 0) };
        rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36,
                               RV_OCCLUDER_CLOSED | (i % 4 == 3 ? RV_OCCLUDER_EXACT : 0) };
        assert_int_equal(i % 2 ? rv_node_set_occluder_mesh(w, n, &m) : rv_node_set_occluder_convex(w, n, &c), RV_OK);
    }
    for (int i = 0; i < 200; i++)
        (void)object_at(w, (float)(i % 40) - 20, 1, -30 - (float)(i / 40), 0.4f);
    camera cam;
    rv_frame_view v;
    /* Looking back first: one occluder in view. */
    float v_back[16] = { -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0, 0, -1.7f, 0, 1 };
    camera_at(&cam, 0, 0);
    memcpy(cam.view, v_back, sizeof v_back);
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_int_equal(v.counts.occluders_added, 1);
    /* A first walk grows the storage; the same walk again allocates nothing. */
    uint64_t before = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            before = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
        for (int f = 1; f < 60; f++) {
            camera_at(&cam, 10.0f * sinf((float)f * 0.1f), 16.0 * (f + 60 * pass));
            assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
            if (f == 1)
                assert_true(v.counts.occluders_added > 15);
        }
    }
    assert_int_equal(rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations, before);
    rv_world_destroy(w);
    assert_int_equal(st.live_blocks, 0);
}

/* A node carrying a dense mesh (a wall of 64 x 64 quads): drawn by its outline in the
 * world's buffer, it hides what is behind it and not what is beside it, and steady frames
 * allocate nothing. */
static void test_a_node_s_dense_mesh_is_drawn_by_its_outline(void **state)
{
    (void)state;
    enum { N = 64 };
    rvt_alloc st = { 0 };
    rv_allocator a = rvt_allocator(&st);
    rv_world *w = world_new(&a, 256);
    rv_node wall = wall_node(w);
    float (*pos)[3] = malloc(sizeof(float[3]) * (N + 1) * (N + 1));
    uint32_t *idx = malloc(sizeof(uint32_t) * 6 * N * N), k = 0;
    for (int y = 0; y <= N; y++)
        for (int x = 0; x <= N; x++) {
            pos[y * (N + 1) + x][0] = -4 + 8.0f * (float)x / N;
            pos[y * (N + 1) + x][1] = 6.0f * (float)y / N;
            pos[y * (N + 1) + x][2] = 0;
        }
    for (uint32_t y = 0; y < N; y++)
        for (uint32_t x = 0; x < N; x++) {
            uint32_t q = y * (N + 1) + x, t[6] = { q, q + 1, q + N + 2, q, q + N + 2, q + N + 1 };
            memcpy(idx + k, t, sizeof t);
            k += 6;
        }
    rv_occluder_mesh m = { (const float (*)[3])pos, (N + 1) * (N + 1), idx, 6 * N * N, 0 };
    assert_int_equal(rv_node_set_occluder_mesh(w, wall, &m), RV_OK);
    free(pos);
    free(idx);
    rv_node behind = object_at(w, 0, 2, -20, 0.5f), beside = object_at(w, 9, 2, -20, 0.5f);
    camera cam;
    rv_frame_view v;
    uint64_t before = 0;
    for (int f = 0; f < 20; f++) {
        if (f == 10)
            before = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
        camera_at(&cam, 0.05f * (float)(f % 10), 16.0 * f);
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        assert_false(view_draws(&v, behind));
        assert_true(view_draws(&v, beside));
        assert_int_equal(rv_occlusion_get_stats(rv_world_occlusion(w)).meshes_outlined, 1);
    }
    assert_int_equal(rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations, before);
    rv_world_destroy(w);
    assert_int_equal(st.live_blocks, 0);
}

/* ---- allocation failures ---------------------------------------------------------------- */

typedef struct sweep_world {
    rv_world *world;
    rv_node node;
} sweep_world;

static void *sweep_setup(const rv_allocator *allocator)
{
    sweep_world *s = calloc(1, sizeof *s);
    s->world = world_new(allocator, 128);
    s->node = wall_node(s->world);
    return s;
}

static void *sweep_setup_drawn(const rv_allocator *allocator)
{
    sweep_world *s = sweep_setup(allocator);
    camera cam;
    camera_at(&cam, 0, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(s->world, &cam.v, &v), RV_OK);
    return s;
}

static rv_result sweep_convex(void *o)
{
    sweep_world *s = o;
    float planes[6][4];
    wall_planes(0, planes);
    rv_occluder_convex c = { (const float (*)[4])planes, 6, 0 };
    return rv_node_set_occluder_convex(s->world, s->node, &c);
}

static rv_result sweep_mesh(void *o)
{
    sweep_world *s = o;
    float pos[8][3];
    wall_corners(-4, 4, pos);
    rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36, RV_OCCLUDER_CLOSED };
    return rv_node_set_occluder_mesh(s->world, s->node, &m);
}

/* A frame with both shapes on nodes and per frame, the first to need the buffer's room. */
static void *sweep_setup_shapes(const rv_allocator *allocator)
{
    sweep_world *s = sweep_setup_drawn(allocator);
    assert_int_equal(sweep_convex(s), RV_OK);
    rv_node other = wall_node(s->world);
    float pos[8][3];
    wall_corners(5, 9, pos);
    rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36, RV_OCCLUDER_CLOSED };
    assert_int_equal(rv_node_set_occluder_mesh(s->world, other, &m), RV_OK);
    return s;
}

static rv_result sweep_frame(void *o)
{
    sweep_world *s = o;
    camera cam;
    camera_at(&cam, 0, 16);
    rv_result r = rv_frame_begin(s->world, &cam.v);
    if (r != RV_OK)
        return r;
    float planes[6][4];
    wall_planes(-12, planes);
    rv_occluder_convex c = { (const float (*)[4])planes, 6, 0 };
    float wm[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -10, 1 };
    r = rv_frame_add_convex(s->world, &c, wm);
    if (r == RV_OK)
        r = rv_frame_cull(s->world);
    rv_frame_view v;
    if (r == RV_OK)
        r = rv_frame_end(s->world, &v);
    if (r != RV_OK)
        rv_frame_abort(s->world);
    return r;
}

static uint64_t sweep_fingerprint(void *o)
{
    sweep_world *s = o;
    return rv_world_scene_stats(s->world).nodes;
}

static void sweep_free(void *o)
{
    sweep_world *s = o;
    rv_world_destroy(s->world);
    free(s);
}

/* What the host asks of the world's buffer between rv_frame_begin and the cull (a debug
 * overlay, an early test, a clock callback) is refused and freezes nothing: the frame keeps
 * every occluder, persistent and per-frame, and culls as a frame nobody asked. */
static uint32_t clock_peeks;
static rv_world *clock_world;
static uint64_t peeking_clock(void *user)
{
    (void)user;
    rv_occlusion *occ = rv_world_occlusion(clock_world);
    if (occ) {
        bool visible = false;
        const float mn[3] = { -1, 0, -30 }, mx[3] = { 1, 2, -29 };
        rv_result r = rv_occlusion_test_box(occ, mn, mx, NULL, &visible);
        clock_peeks += r == RV_ERR_BAD_STATE && visible;
    }
    return 0;
}

static void open_frame_scene(rv_world *w, rv_node *crate, rv_node *behind_door)
{
    rv_node wall;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
    const float wmin[3] = { -20, -1, -21 }, wmax[3] = { 20, 12, -20 };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    *crate = object_at(w, 0, 1.5f, -25, 0.87f);      /* behind the persistent wall */
    *behind_door = object_at(w, 0, 1.5f, -12, 0.5f); /* behind the per-frame door only */
}

static void test_the_buffer_is_held_while_the_frame_is_open(void **state)
{
    (void)state;
    for (int peek = 0; peek < 2; peek++) {
        rv_world *w = world_new(NULL, 256);
        rv_node crate, behind;
        open_frame_scene(w, &crate, &behind);
        camera c;
        camera_at(&c, 0, 0);
        rv_frame_view fv;
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        camera_at(&c, 0, 16);
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        rv_occlusion *occ = rv_world_occlusion(w);
        assert_non_null(occ);
        if (peek) {
            bool visible = false;
            const float mn[3] = { -1, 0, -30 }, mx[3] = { 1, 2, -29 }, ctr[3] = { 0, 1, -30 };
            assert_int_equal(rv_occlusion_test_box(occ, mn, mx, NULL, &visible), RV_ERR_BAD_STATE);
            assert_true(visible);
            visible = false;
            assert_int_equal(rv_occlusion_test_sphere(occ, ctr, 1, NULL, &visible), RV_ERR_BAD_STATE);
            assert_true(visible);
            float bx0[1] = { -1 }, by0[1] = { 0 }, bz0[1] = { -30 }, bx1[1] = { 1 }, by1[1] = { 2 }, bz1[1] = { -29 };
            rv_occlusion_boxes boxes = { { bx0, by0, bz0 }, { bx1, by1, bz1 }, NULL };
            uint8_t out = 0;
            assert_int_equal(rv_occlusion_test_boxes(occ, &boxes, 0, 1, &out), RV_ERR_BAD_STATE);
            assert_int_equal(out, 1);
            assert_int_equal(rv_occlusion_freeze(occ), RV_ERR_BAD_STATE);
            uint32_t iw = 0, ih = 0;
            assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &iw, &ih), RV_OK); /* size only */
            uint8_t *pixels = malloc((size_t)iw * ih);
            assert_non_null(pixels);
            assert_int_equal(rv_occlusion_debug_image(occ, 0, pixels, (size_t)iw * ih, NULL, NULL), RV_ERR_BAD_STATE);
            free(pixels);
            float dn = -1, df = -1;
            assert_int_equal(rv_occlusion_debug_depth_range(occ, &dn, &df), RV_ERR_BAD_STATE);
            assert_true(dn == -1 && df == -1);
        }
        const float dmin[3] = { -5, 0, -10 }, dmax[3] = { 5, 5, -9.8f };
        assert_int_equal(rv_frame_add_occluder(w, dmin, dmax, NULL), RV_OK);
        assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &fv), RV_OK);
        assert_int_equal(fv.counts.occluders_added, 2);
        assert_false(view_draws(&fv, crate));
        assert_false(view_draws(&fv, behind));
        /* After the frame the host's tests are answered again. */
        bool visible = true;
        const float mn[3] = { -1, 0, -30 }, mx[3] = { 1, 2, -29 };
        assert_int_equal(rv_occlusion_test_box(occ, mn, mx, NULL, &visible), RV_OK);
        assert_false(visible);
        rv_world_destroy(w);
    }

    /* A clock callback inside rv_frame that tests the buffer is refused at the times it
     * runs before the cull, and the frame keeps its occluders. */
    rv_world_desc d = { 0 };
    d.occlusion.width = 256;
    d.clock_ns = peeking_clock;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    clock_world = w;
    rv_node crate, behind;
    open_frame_scene(w, &crate, &behind);
    camera c;
    rv_frame_view fv;
    for (int i = 0; i < 3; i++) {
        camera_at(&c, 0, 16.0 * i);
        clock_peeks = 0;
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        assert_int_equal(fv.counts.occluders_added, 1);
        assert_false(view_draws(&fv, crate));
        if (i > 0)
            assert_true(clock_peeks > 0);
    }
    rv_world_destroy(w);
}

/* An occluder node made, moved or attached between rv_frame_begin and rv_frame_cull has a
 * world matrix that is not where the host put it (its parent's, or an older one): it hides
 * nothing in that frame, and from the next frame it hides where it stands. Control: the
 * same wall placed before the frame hides the crate. */
static void test_an_occluder_placed_after_the_frame_began_hides_nothing_yet(void **state)
{
    (void)state;
    const float wmin[3] = { -20, -1, -21 }, wmax[3] = { 20, 12, -20 };
    const float aside[3] = { 80, 0, 0 }, home[3] = { 0, 0, 0 };
    for (int mode = 0; mode < 5; mode++) {
        rv_world *w = world_new(NULL, 256);
        rv_node crate = object_at(w, 0, 1.5f, -25, 0.87f);
        rv_node hinge, wall;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &hinge), RV_OK);
        camera c;
        camera_at(&c, 0, 0);
        rv_frame_view fv;
        if (mode >= 2) { /* placed in front of the crate before the frame */
            assert_int_equal(rv_node_create(w, hinge, &wall), RV_OK);
            assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
        }
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        assert_int_equal(view_draws(&fv, crate), mode < 2);
        camera_at(&c, 0, 16);
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        switch (mode) {
        case 0: /* made aside (its matrix is its parent's until the update) */
        case 1: /* made under the hinge, and the hinge swung aside */
            assert_int_equal(rv_node_create(w, mode ? hinge : RV_NODE_NONE, &wall), RV_OK);
            assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
            assert_int_equal(rv_node_set_position(w, mode ? hinge : wall, aside), RV_OK);
            break;
        case 2: /* moved aside itself */
            assert_int_equal(rv_node_set_position(w, wall, aside), RV_OK);
            break;
        case 3: /* its parent moved aside */
            assert_int_equal(rv_node_set_position(w, hinge, aside), RV_OK);
            break;
        case 4: /* attached to a parent standing aside */ {
            rv_node other;
            assert_int_equal(rv_node_create(w, RV_NODE_NONE, &other), RV_OK);
            assert_int_equal(rv_node_set_position(w, other, aside), RV_OK);
            assert_int_equal(rv_node_attach(w, other, wall), RV_OK);
            break;
        }
        }
        assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &fv), RV_OK);
        assert_int_equal(fv.counts.occluders_added, 0);
        assert_true(view_draws(&fv, crate));
        /* The next frame places it aside: the crate stays in view. */
        camera_at(&c, 0, 32);
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        assert_true(view_draws(&fv, crate));
        /* Brought back before a frame begins, it hides the crate again. */
        assert_int_equal(rv_node_set_position(w, hinge, home), RV_OK);
        if (mode == 4)
            assert_int_equal(rv_node_attach(w, hinge, wall), RV_OK);
        else
            assert_int_equal(rv_node_set_position(w, wall, home), RV_OK);
        camera_at(&c, 0, 48);
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        assert_int_equal(fv.counts.occluders_added, 1);
        assert_false(view_draws(&fv, crate));
        rv_world_destroy(w);
    }
}

static const rv_draw_item *item_of(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n))
            return &v->opaque[i];
    return NULL;
}

/* A wall node with geometry, an occluder box and a LOD ladder {0.5} comes nearer, a crate
 * far behind it. Held at "nothing" by hysteresis (its angle past 0.5 but not past 0.55),
 * on the first frame of its fade in (listed nowhere) and while it fades in (drawn faint),
 * the wall hides nothing; drawn whole, it hides the crate. */
static void test_an_occluder_its_lod_draws_faint_or_not_at_all_hides_nothing(void **state)
{
    (void)state;
    rv_world *w = world_new(NULL, 256);
    rv_node crate = object_at(w, 0, 1.7f, -80, 0.5f);
    rv_node wall = object_at(w, 0, 1.7f, -25, 4.3f);
    const float wmin[3] = { -3, -3, -0.1f }, wmax[3] = { 3, 3, 0.1f }, t[1] = { 0.5f };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    rv_lod_ladder ladder;
    assert_int_equal(rv_lod_ladder_make(t, 1, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, wall, &ladder), RV_OK);
    const float distance[] = { 25, 16.6f, 16.6f, 16.0f };
    camera c;
    rv_frame_view v;
    double time = 0;
    for (int f = 0; f < 4; f++, time += 16) { /* angles 0.35, then 0.52-0.54: held at "nothing" */
        const float at[3] = { 0, 1.7f, -distance[f] };
        assert_int_equal(rv_node_set_position(w, wall, at), RV_OK);
        camera_at(&c, 0, time);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_false(view_draws(&v, wall));
        assert_true(view_draws(&v, crate));
        assert_int_equal(v.counts.occluders_added, 0);
    }
    const float near[3] = { 0, 1.7f, -15 }; /* angle 0.58: it fades in */
    assert_int_equal(rv_node_set_position(w, wall, near), RV_OK);
    int faint = 0, whole = 0;
    for (int f = 0; f < 40; f++, time += 16) {
        camera_at(&c, 0, time);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        const rv_draw_item *it = item_of(&v, wall);
        if (it && it->fade >= 1.0f) {
            whole++;
            assert_false(view_draws(&v, crate));
        } else {
            faint++;
            assert_true(view_draws(&v, crate));
            assert_int_equal(v.counts.occluders_added, 0);
        }
    }
    assert_true(faint >= 10); /* 250 ms of fade in 16 ms frames, and its first frame */
    assert_true(whole >= 10);
    rv_world_destroy(w);
}

/* A wall that is an HLOD region hides only while drawn as itself, whole: not while it is
 * not resident (never drawn), nor while it and the top region above it are not resident
 * (once resident, the top passing through to it, it hides the crate); nor, standing in for
 * a child, while it crossfades to that child or once refined into it. */
static void test_an_occluder_hlod_does_not_draw_whole_hides_nothing(void **state)
{
    (void)state;
    const float wmin[3] = { -3, -3, -0.1f }, wmax[3] = { 3, 3, 0.1f };
    for (int variant = 0; variant < 3; variant++) {
        rv_world *w = world_new(NULL, 256);
        rv_node crate = object_at(w, 0, 1.7f, -80, 0.5f);
        rv_node top = RV_NODE_NONE;
        if (variant == 2) {
            top = object_at(w, 0, 1.7f, -15, 5.0f);
            assert_int_equal(rv_node_set_hlod_region(w, top, 1.0f), RV_OK);
        }
        rv_node wall;
        assert_int_equal(rv_node_create(w, top, &wall), RV_OK);
        const float at[3] = { 0, variant == 2 ? 0.0f : 1.7f, variant == 2 ? 0.0f : -15 }, o[3] = { 0, 0, 0 };
        assert_int_equal(rv_node_set_position(w, wall, at), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, wall, o, 4.3f), RV_OK);
        assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
        assert_int_equal(rv_node_set_hlod_region(w, wall, variant == 1 ? 0.01f : 0.0f), RV_OK);
        camera c;
        camera_at(&c, 0, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* wall (variant 2: top) not resident */
        assert_false(view_draws(&v, wall));
        assert_true(view_draws(&v, crate));
        assert_int_equal(v.counts.occluders_added, 0);
        assert_int_equal(rv_node_set_hlod_resident(w, wall, true), RV_OK);
        camera_at(&c, 0, 16);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        if (variant == 2) { /* the top passes through to the wall, resident under it */
            assert_true(view_draws(&v, wall));
            assert_false(view_draws(&v, crate));
            assert_int_equal(rv_node_set_hlod_resident(w, top, true), RV_OK);
            camera_at(&c, 0, 32);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* resident, it stays refined */
        }
        if (variant != 1) {
            assert_true(view_draws(&v, wall));
            assert_false(view_draws(&v, crate));
            rv_world_destroy(w);
            continue;
        }
        /* Variant 1: the wall region stands in for a child (a leaf region, no occluder of
         * its own); error 0.01 at 15 m is under 16 px, so the wall is drawn as itself and
         * its occluder hides the crate. Given a larger error it refines into the child,
         * crossfading: from then on the wall is not drawn whole, and hides nothing. */
        assert_false(view_draws(&v, crate));
        rv_node inner;
        assert_int_equal(rv_node_create(w, wall, &inner), RV_OK);
        const float small[3] = { -1, 0, 0 };
        assert_int_equal(rv_node_set_position(w, inner, small), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, inner, o, 0.5f), RV_OK);
        assert_int_equal(rv_node_set_hlod_region(w, inner, 0.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, inner, true), RV_OK);
        camera_at(&c, 0, 32);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_true(view_draws(&v, wall));
        assert_false(view_draws(&v, inner));
        assert_false(view_draws(&v, crate));
        assert_int_equal(rv_node_set_hlod_region(w, wall, 2.0f), RV_OK);
        int fading = 0, refined = 0;
        for (int f = 0; f < 40; f++) {
            camera_at(&c, 0, 48 + 16.0 * f);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            const rv_draw_item *it = item_of(&v, wall);
            if (f == 0) { /* the fade's first frame: the wall still whole */
                assert_float_equal(it->fade, 1.0f, 0);
                assert_false(view_draws(&v, crate));
                continue;
            }
            fading += it != NULL;
            refined += it == NULL;
            assert_true(view_draws(&v, crate));
            assert_int_equal(v.counts.occluders_added, 0);
        }
        assert_true(fading >= 10);
        assert_true(refined >= 10);
        rv_world_destroy(w);
    }
}

/* The host's allocator, which the frame's first begin calls after it has opened the
 * buffer (the LOD state is made then), is such a callback too; and an allocation that
 * fails after the cull's freeze leaves the frame open (to abort) with its buffer frozen:
 * occluders and feeds are refused there, not lost. */
static uint32_t alloc_peeks;
static int alloc_failing;
static rv_world *alloc_world;
static void *peeking_alloc(size_t size, void *user)
{
    (void)user;
    if (alloc_world && rv_world_occlusion(alloc_world))
        (void)peeking_clock(NULL), alloc_peeks += clock_peeks, clock_peeks = 0;
    return alloc_failing ? NULL : malloc(size);
}
static void *peeking_realloc(void *p, size_t old_size, size_t size, void *user)
{
    (void)old_size;
    (void)user;
    return alloc_failing ? NULL : realloc(p, size);
}
static void peeking_free(void *p, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(p);
}

static void test_the_buffer_is_held_from_the_allocator_and_after_a_failed_cull(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.occlusion.width = 256;
    d.node_capacity = 16;
    d.allocator = (rv_allocator){ peeking_alloc, peeking_realloc, peeking_free, NULL };
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    rv_node crate, behind;
    open_frame_scene(w, &crate, &behind);
    camera c;
    rv_frame_view fv;
    clock_world = alloc_world = w;
    alloc_peeks = clock_peeks = 0;
    for (int i = 0; i < 4; i++) {
        /* New nodes each frame make the frame allocate (the first makes its LOD state). */
        for (int k = 0; k < 200 * i; k++)
            (void)object_at(w, (float)(k % 40) - 20, 1, -3, 0.05f);
        camera_at(&c, 0, 16.0 * i);
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        assert_int_equal(fv.counts.occluders_added, 1);
        assert_false(view_draws(&fv, crate));
    }
    alloc_world = NULL;
    assert_true(alloc_peeks > 0); /* the allocator did test the buffer while it was held */
    /* A cull that runs out of memory after its freeze (3,000 new nodes: the walk's scratch
     * grows): the frame stays open, and refuses occluders and feeds. */
    for (int k = 0; k < 3000; k++)
        (void)object_at(w, (float)(k % 40) - 20, 1, -3, 0.05f);
    camera_at(&c, 0, 100);
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    const float dmin[3] = { -5, 0, -10 }, dmax[3] = { 5, 5, -9.8f };
    assert_int_equal(rv_frame_add_occluder(w, dmin, dmax, NULL), RV_OK);
    alloc_failing = 1;
    assert_int_equal(rv_frame_cull(w), RV_ERR_OUT_OF_MEMORY);
    alloc_failing = 0;
    assert_int_equal(rv_frame_add_occluder(w, dmin, dmax, NULL), RV_ERR_BAD_STATE);
    float depth[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
    rv_depth_feed feed = { 0 };
    feed.width = feed.height = 2;
    feed.format = RV_DEPTH_FLOAT32;
    feed.texels = depth;
    feed.view_projection = c.projection;
    feed.age = 1;
    assert_int_equal(rv_frame_feed_depth(w, &feed), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_abort(w), RV_OK);
    camera_at(&c, 0, 116);
    assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
    assert_false(view_draws(&fv, crate));
    rv_world_destroy(w);
}

static void test_allocation_failures_leave_the_world_as_it_was(void **state)
{
    (void)state;
    rvt_sweep convex = { "rv_node_set_occluder_convex", sweep_setup_drawn, sweep_convex, sweep_fingerprint, sweep_free };
    rvt_sweep mesh = { "rv_node_set_occluder_mesh", sweep_setup_drawn, sweep_mesh, sweep_fingerprint, sweep_free };
    rvt_sweep frame = { "rv_frame with shapes", sweep_setup_shapes, sweep_frame, sweep_fingerprint, sweep_free };
    assert_true(rvt_run_sweep(&convex) >= 3); /* scratch, block, slot array / vector */
    assert_true(rvt_run_sweep(&mesh) >= 2);
    assert_true(rvt_run_sweep(&frame) >= 1);
}

/* A node's mesh whose triangles come interleaved (two walls' halves in turn, as a mesh
 * optimised for a vertex cache may hold them): the node's copy brings each wall's halves
 * together, so each wall is drawn as one piece, and both hide what is behind them. The same
 * mesh declared per frame keeps the host's order: four pieces. */
static void test_a_node_mesh_in_any_triangle_order_is_drawn_in_whole_polygons(void **state)
{
    (void)state;
    /* Two 4 x 6 walls in the plane z = 0 (local), 2 m apart. */
    static const float pos[8][3] = { { -5, 0, 0 }, { -1, 0, 0 }, { -1, 6, 0 }, { -5, 6, 0 },
                                     { 1, 0, 0 },  { 5, 0, 0 },  { 5, 6, 0 },  { 1, 6, 0 } };
    static const uint32_t idx[12] = { 0, 1, 2, 4, 5, 6, 0, 2, 3, 4, 6, 7 };
    rv_occluder_mesh m = { pos, 8, idx, 12, 0 };
    for (int per_frame = 0; per_frame < 2; per_frame++) {
        rv_world *w = world_new(NULL, 256);
        rv_node wall = wall_node(w);
        if (!per_frame)
            assert_int_equal(rv_node_set_occluder_mesh(w, wall, &m), RV_OK);
        rv_node left = object_at(w, -3, 3, -20, 0.5f), right = object_at(w, 3, 3, -20, 0.5f);
        rv_node between = object_at(w, 0, 3, -20, 0.3f);
        camera cam;
        camera_at(&cam, 0, 0);
        rv_frame_view v;
        if (per_frame) {
            const float at[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -10, 1 };
            assert_int_equal(rv_frame_begin(w, &cam.v), RV_OK);
            assert_int_equal(rv_frame_add_mesh(w, &m, at), RV_OK);
            assert_int_equal(rv_frame_cull(w), RV_OK);
            assert_int_equal(rv_frame_end(w, &v), RV_OK);
        } else {
            assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        }
        assert_false(view_draws(&v, left));
        assert_false(view_draws(&v, right));
        assert_true(view_draws(&v, between));
        rv_occlusion_stats st = rv_occlusion_get_stats(rv_world_occlusion(w));
        assert_int_equal(st.triangles_rasterized, 4);
        assert_int_equal(st.pieces, per_frame ? 4 : 2);
        rv_world_destroy(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_convex_and_mesh_occluders_hide_what_is_behind),
        cmocka_unit_test(test_a_mirrored_node_keeps_its_closed_mesh_s_far_side),
        cmocka_unit_test(test_clearing_or_replacing_an_occluder_of_any_shape),
        cmocka_unit_test(test_per_frame_shapes_fuse_in_a_frame),
        cmocka_unit_test(test_steady_frames_with_shapes_allocate_nothing),
        cmocka_unit_test(test_a_node_s_dense_mesh_is_drawn_by_its_outline),
        cmocka_unit_test(test_the_buffer_is_held_while_the_frame_is_open),
        cmocka_unit_test(test_an_occluder_placed_after_the_frame_began_hides_nothing_yet),
        cmocka_unit_test(test_an_occluder_its_lod_draws_faint_or_not_at_all_hides_nothing),
        cmocka_unit_test(test_an_occluder_hlod_does_not_draw_whole_hides_nothing),
        cmocka_unit_test(test_the_buffer_is_held_from_the_allocator_and_after_a_failed_cull),
        cmocka_unit_test(test_allocation_failures_leave_the_world_as_it_was),
        cmocka_unit_test(test_a_node_mesh_in_any_triangle_order_is_drawn_in_whole_polygons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
