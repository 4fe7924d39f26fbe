/* Hostile cases: the frame and the world's joins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"

#include <float.h>
#include <string.h>

/* A camera at (0, 0, 30) looking down -z over the fixture (OpenGL depth, 90 degrees). */
static const float VIEW[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -30, 1 };
static const float PROJ[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };

static rv_view good_view(double time_ms)
{
    rv_view v;
    memset(&v, 0, sizeof v);
    v.view = VIEW;
    v.projection = PROJ;
    v.viewport_width = 640;
    v.viewport_height = 480;
    v.time_ms = time_ms;
    return v;
}

/* One whole frame that must succeed. */
static rv_frame_view frame_ok(rvh_ctx *cx, rv_world *w, double t)
{
    rv_view v = good_view(t);
    rv_frame_view out;
    RVH_ACCEPT(cx, rv_frame(w, &v, &out));
    return out;
}

void hostile_rv_frame_begin(rvh_ctx *cx)
{
    (void)frame_ok(cx, cx->a, 10.0);
    rv_view v = good_view(20.0);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(NULL, &v));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(cx->a, NULL));
    rv_view bad = v;
    bad.viewport_width = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(cx->a, &bad));
    bad = v;
    bad.viewport_height = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(cx->a, &bad));
    bad = v;
    bad.view = bad.projection = NULL; /* neither form */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(cx->a, &bad));
    float vp[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, 29.8f, 30 };
    bad.view_projection = vp; /* and no eye */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_begin(cx->a, &bad));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        float m[16];
        memcpy(m, VIEW, sizeof m);
        m[13] = rvh_nonfinite[b];
        bad = v;
        bad.view = m;
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_frame_begin(cx->a, &bad));
        float p[16];
        memcpy(p, PROJ, sizeof p);
        p[0] = rvh_nonfinite[b];
        bad = v;
        bad.projection = p;
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_frame_begin(cx->a, &bad));
        float eye[3] = { 0, 0, 30 };
        eye[1] = rvh_nonfinite[b];
        bad = v;
        bad.view = bad.projection = NULL;
        bad.view_projection = vp;
        bad.eye = eye;
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_frame_begin(cx->a, &bad));
        bad = v;
        bad.time_ms = rvh_nonfinite[b];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_frame_begin(cx->a, &bad));
        bad = v;
        bad.fov_y = rvh_nonfinite[b];
        rvh_before(cx);
        rv_result r = rv_frame_begin(cx->a, &bad);
        rvh_after(cx, "begin with a NaN/Inf fov_y", __LINE__, r, r == RV_ERR_INVALID_ARG ? r : RV_ERR_NOT_FINITE);
    }
    bad = v;
    bad.time_ms = 5.0; /* before the last frame's 10 */
    RVH_REJECT(cx, RV_ERR_ORDER, rv_frame_begin(cx->a, &bad));
    /* None of the refusals opened a frame: a good begin works, a second one is refused. */
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_begin(cx->a, &v));
    RVH_ACCEPT(cx, rv_frame_abort(cx->a));
}

void hostile_rv_frame_add_occluder(rvh_ctx *cx)
{
    /* A world with occlusion on (the fixture's is off: there it is a no-op). */
    rv_world_desc d = {0};
    d.occlusion.width = 64;
    rv_world *w;
    RVH_ACCEPT(cx, rv_world_create(&d, &w));
    float lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 };
    RVH_CHECK(cx, rv_frame_add_occluder(w, lo, hi, NULL) == RV_ERR_BAD_STATE); /* no frame */
    rv_view v = good_view(0.0);
    RVH_ACCEPT(cx, rv_frame_begin(w, &v));
    RVH_CHECK(cx, rv_frame_add_occluder(NULL, lo, hi, NULL) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_frame_add_occluder(w, NULL, hi, NULL) == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, rv_frame_add_occluder(w, lo, NULL, NULL) == RV_ERR_INVALID_ARG);
    float inv[3] = { 2, -1, -1 };
    RVH_CHECK(cx, rv_frame_add_occluder(w, inv, hi, NULL) == RV_ERR_INVALID_ARG);
    float projective[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
    RVH_CHECK(cx, rv_frame_add_occluder(w, lo, hi, projective) == RV_ERR_INVALID_ARG);
    for (int b = 0; b < RVH_NONFINITE; b++) {
        float bad[3] = { -1, -1, -1 };
        bad[2] = rvh_nonfinite[b];
        RVH_CHECK(cx, rv_frame_add_occluder(w, bad, hi, NULL) == RV_ERR_NOT_FINITE);
    }
    RVH_CHECK(cx, rv_occlusion_get_stats(rv_world_occlusion(w)).occluders_submitted == 0);
    RVH_ACCEPT(cx, rv_frame_cull(w));
    RVH_CHECK(cx, rv_frame_add_occluder(w, lo, hi, NULL) == RV_ERR_BAD_STATE); /* after cull */
    RVH_ACCEPT(cx, rv_frame_abort(w));
    rv_world_destroy(w);
}

void hostile_rv_frame_feed_depth(rvh_ctx *cx)
{
    /* The fixture's world has occlusion off: there a feed is a no-op once its arguments
     * pass. A world with occlusion and a feed capacity for the rest. */
    float depth[8 * 8], vp[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.01f, -1, 0, 0, -0.201f, 0 };
    for (int i = 0; i < 64; i++)
        depth[i] = 0.95f;
    rv_depth_feed feed = { depth, 8, 8, 0, RV_DEPTH_FLOAT32, false, vp, { false, false }, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_feed_depth(NULL, &feed));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_feed_depth(cx->a, &feed)); /* no frame */
    rv_view v = good_view(0.0);
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_feed_depth(cx->a, NULL));
    feed.age = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_feed_depth(cx->a, &feed));
    feed.age = 1;
    RVH_ACCEPT(cx, rv_frame_feed_depth(cx->a, &feed));
    RVH_ACCEPT(cx, rv_frame_abort(cx->a));

    rv_world_desc d = {0};
    d.occlusion.width = 64;
    d.occlusion.feed_max_width = 8;
    d.occlusion.feed_max_height = 8;
    rv_world *w;
    RVH_ACCEPT(cx, rv_world_create(&d, &w));
    RVH_CHECK(cx, rv_frame_feed_depth(w, &feed) == RV_ERR_BAD_STATE);
    RVH_ACCEPT(cx, rv_frame_begin(w, &v));
    feed.width = 9;
    RVH_CHECK(cx, rv_frame_feed_depth(w, &feed) == RV_ERR_CAPACITY);
    feed.width = 8;
    for (int b = 0; b < RVH_NONFINITE; b++) {
        float bad[16];
        memcpy(bad, vp, sizeof bad);
        bad[10] = rvh_nonfinite[b];
        feed.view_projection = bad;
        RVH_CHECK(cx, rv_frame_feed_depth(w, &feed) == RV_ERR_NOT_FINITE);
    }
    feed.view_projection = vp;
    RVH_CHECK(cx, rv_occlusion_get_feed_stats(rv_world_occlusion(w)).feeds_used == 0);
    RVH_ACCEPT(cx, rv_frame_feed_depth(w, &feed));
    RVH_ACCEPT(cx, rv_frame_cull(w));
    RVH_CHECK(cx, rv_frame_feed_depth(w, &feed) == RV_ERR_BAD_STATE); /* after cull */
    RVH_ACCEPT(cx, rv_frame_abort(w));
    rv_world_destroy(w);
}

/* A unit cube as planes (n . p <= d) and as a closed mesh, for the shape cases. */
static const float CUBE_PLANES[6][4] = { { -1, 0, 0, 1 }, { 1, 0, 0, 1 }, { 0, -1, 0, 1 },
                                         { 0, 1, 0, 1 },  { 0, 0, -1, 1 }, { 0, 0, 1, 1 } };
static const float CUBE_POS[8][3] = { { -1, -1, -1 }, { 1, -1, -1 }, { -1, 1, -1 }, { 1, 1, -1 },
                                      { -1, -1, 1 },  { 1, -1, 1 },  { -1, 1, 1 },  { 1, 1, 1 } };
static const uint32_t CUBE_IDX[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                       2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };

static rv_occluder_convex cube_convex(void)
{
    rv_occluder_convex c = { CUBE_PLANES, 6, 0 };
    return c;
}

static rv_occluder_mesh cube_mesh(void)
{
    rv_occluder_mesh m = { CUBE_POS, 8, CUBE_IDX, 36, RV_OCCLUDER_CLOSED };
    return m;
}

/* Refusals every convex taker shares; take(convex) returns the call's code. */
static void bad_convexes(rvh_ctx *cx, rv_result (*take)(rvh_ctx *, const rv_occluder_convex *))
{
    RVH_CHECK(cx, take(cx, NULL) == RV_ERR_INVALID_ARG);
    rv_occluder_convex c = cube_convex(), bad = c;
    bad.planes = NULL;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad = c;
    bad.plane_count = 3;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad.plane_count = RV_OCCLUSION_MAX_PLANES + 1;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_CAPACITY);
    bad = c;
    bad.flags = 1u << 5;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    float q[6][4];
    memcpy(q, CUBE_PLANES, sizeof q);
    q[5][3] = -2; /* z <= -2 and z >= -1: empty */
    bad.planes = (const float (*)[4])q;
    bad.flags = 0;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad.plane_count = 5; /* open toward +z */
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    for (int b = 0; b < RVH_NONFINITE; b++) {
        memcpy(q, CUBE_PLANES, sizeof q);
        q[1][b % 4] = rvh_nonfinite[b];
        rv_occluder_convex nf = { (const float (*)[4])q, 6, 0 };
        RVH_CHECK(cx, take(cx, &nf) == RV_ERR_NOT_FINITE);
    }
}

/* The same for meshes. */
static void bad_meshes(rvh_ctx *cx, rv_result (*take)(rvh_ctx *, const rv_occluder_mesh *))
{
    RVH_CHECK(cx, take(cx, NULL) == RV_ERR_INVALID_ARG);
    rv_occluder_mesh m = cube_mesh(), bad = m;
    bad.positions = NULL;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad = m;
    bad.indices = NULL;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad = m;
    bad.index_count = 35;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad = m;
    bad.vertex_count = 7; /* index 7 out of range */
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    bad = m;
    bad.vertex_count = RV_OCCLUSION_MAX_MESH_VERTICES + 1;
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_CAPACITY);
    bad = m;
    bad.flags = RV_OCCLUDER_EXACT; /* exact needs closed */
    RVH_CHECK(cx, take(cx, &bad) == RV_ERR_INVALID_ARG);
    for (int b = 0; b < RVH_NONFINITE; b++) {
        float pos[8][3];
        memcpy(pos, CUBE_POS, sizeof pos);
        pos[3][b % 3] = rvh_nonfinite[b];
        rv_occluder_mesh nf = { (const float (*)[3])pos, 8, CUBE_IDX, 36, 0 };
        RVH_CHECK(cx, take(cx, &nf) == RV_ERR_NOT_FINITE);
    }
}

static rv_world *frame_world;

static rv_result frame_convex(rvh_ctx *cx, const rv_occluder_convex *c)
{
    (void)cx;
    return rv_frame_add_convex(frame_world, c, NULL);
}

static rv_result frame_mesh(rvh_ctx *cx, const rv_occluder_mesh *m)
{
    (void)cx;
    return rv_frame_add_mesh(frame_world, m, NULL);
}

/* A world with occlusion on (the fixture's is off: there the adds are no-ops). */
static void frame_shape_case(rvh_ctx *cx, bool mesh)
{
    rv_world_desc d = {0};
    d.occlusion.width = 64;
    RVH_ACCEPT(cx, rv_world_create(&d, &frame_world));
    rv_occluder_convex c = cube_convex();
    rv_occluder_mesh m = cube_mesh();
    float projective[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 1 };
    RVH_CHECK(cx, (mesh ? rv_frame_add_mesh(frame_world, &m, NULL) : rv_frame_add_convex(frame_world, &c, NULL)) ==
                      RV_ERR_BAD_STATE); /* no frame */
    rv_view v = good_view(0.0);
    RVH_ACCEPT(cx, rv_frame_begin(frame_world, &v));
    RVH_CHECK(cx, (mesh ? rv_frame_add_mesh(NULL, &m, NULL) : rv_frame_add_convex(NULL, &c, NULL)) ==
                      RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, (mesh ? rv_frame_add_mesh(frame_world, &m, projective)
                        : rv_frame_add_convex(frame_world, &c, projective)) == RV_ERR_INVALID_ARG);
    if (mesh)
        bad_meshes(cx, frame_mesh);
    else
        bad_convexes(cx, frame_convex);
    RVH_CHECK(cx, rv_occlusion_get_stats(rv_world_occlusion(frame_world)).occluders_submitted == 0);
    RVH_ACCEPT(cx, mesh ? rv_frame_add_mesh(frame_world, &m, NULL) : rv_frame_add_convex(frame_world, &c, NULL));
    RVH_ACCEPT(cx, rv_frame_cull(frame_world));
    RVH_CHECK(cx, (mesh ? rv_frame_add_mesh(frame_world, &m, NULL) : rv_frame_add_convex(frame_world, &c, NULL)) ==
                      RV_ERR_BAD_STATE); /* after cull */
    RVH_ACCEPT(cx, rv_frame_abort(frame_world));
    rv_world_destroy(frame_world);
}

void hostile_rv_frame_add_convex(rvh_ctx *cx) { frame_shape_case(cx, false); }
void hostile_rv_frame_add_mesh(rvh_ctx *cx) { frame_shape_case(cx, true); }

void hostile_rv_frame_cull(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_cull(NULL));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_cull(cx->a)); /* no frame */
    rv_view v = good_view(0.0);
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_ACCEPT(cx, rv_frame_cull(cx->a));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_cull(cx->a)); /* twice */
    RVH_ACCEPT(cx, rv_frame_abort(cx->a));
}

void hostile_rv_frame_end(rvh_ctx *cx)
{
    rv_frame_view out;
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_end(NULL, &out));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_end(cx->a, &out)); /* no frame */
    rv_view v = good_view(0.0);
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_frame_end(cx->a, &out)); /* not culled */
    RVH_ACCEPT(cx, rv_frame_cull(cx->a));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_end(cx->a, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
    RVH_ACCEPT(cx, rv_frame_end(cx->a, &out));
    RVH_CHECK(cx, out.frame_sequence == 1 && out.opaque_count == 3);
}

void hostile_rv_frame_abort(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame_abort(NULL));
    RVH_REJECT(cx, RV_OK, rv_frame_abort(cx->a)); /* no frame open: nothing to do */
    rv_frame_view first = frame_ok(cx, cx->a, 0.0);
    rv_view v = good_view(1.0);
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_ACCEPT(cx, rv_frame_abort(cx->a));
    RVH_CHECK(cx, rv_frame_view_is_valid(cx->a, &first)); /* the published view survives */
}

void hostile_rv_frame(rvh_ctx *cx)
{
    /* On a world that never drew a frame: a refused call must not even create the
     * world's frame state (the fingerprint compares the memory held). */
    rv_frame_view out;
    rvh_poison(&out, sizeof out);
    rv_view v = good_view(1.0), bad = v;
    bad.viewport_width = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame(NULL, &v, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame(cx->a, NULL, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame(cx->a, &bad, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_frame(cx->a, &v, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
    /* The failed calls left no frame open. */
    RVH_ACCEPT(cx, rv_frame(cx->a, &v, &out));
}

void hostile_rv_frame_view_is_valid(rvh_ctx *cx)
{
    rv_frame_view a1 = frame_ok(cx, cx->a, 0.0);
    rv_frame_view b1 = frame_ok(cx, cx->b, 0.0);
    RVH_CHECK(cx, !rv_frame_view_is_valid(NULL, &a1));
    RVH_CHECK(cx, !rv_frame_view_is_valid(cx->a, NULL));
    RVH_CHECK(cx, rv_frame_view_is_valid(cx->a, &a1) && !rv_frame_view_is_valid(cx->a, &b1));
    rv_frame_view forged = a1;
    forged.generation += 1;
    RVH_CHECK(cx, !rv_frame_view_is_valid(cx->a, &forged));
    forged = a1;
    forged.arena = 7;
    RVH_CHECK(cx, !rv_frame_view_is_valid(cx->a, &forged));
    rv_frame_view a2 = frame_ok(cx, cx->a, 1.0);
    RVH_CHECK(cx, rv_frame_view_is_valid(cx->a, &a1) && rv_frame_view_is_valid(cx->a, &a2));
    (void)frame_ok(cx, cx->a, 2.0); /* reuses a1's arena */
    RVH_CHECK(cx, !rv_frame_view_is_valid(cx->a, &a1) && rv_frame_view_is_valid(cx->a, &a2));
}

void hostile_rv_frame_view_digest(rvh_ctx *cx)
{
    RVH_CHECK(cx, rv_frame_view_digest(NULL) == 0);
    /* Twin worlds (same content, other tags and addresses) digest alike. */
    rv_frame_view a = frame_ok(cx, cx->a, 0.0), b = frame_ok(cx, cx->b, 0.0);
    RVH_CHECK(cx, a.opaque_count == 3 && rv_frame_view_digest(&a) == rv_frame_view_digest(&b));
    /* Hiding one of the three drawn nodes changes the digest. */
    float c[3] = { 0, 0, 0 };
    RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, cx->na.leaf, c, -1.0f));
    rv_frame_view a2 = frame_ok(cx, cx->a, 1.0);
    RVH_CHECK(cx, a2.opaque_count == 2 && rv_frame_view_digest(&a2) != rv_frame_view_digest(&b));
}

typedef rv_result (*box_setter)(rv_world *, rv_node, const float *, const float *);
typedef rv_result (*box_clearer)(rv_world *, rv_node);

static void box_setter_case(rvh_ctx *cx, box_setter set)
{
    float lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(NULL, cx->na.mid, lo, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(cx->a, cx->na.mid, NULL, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(cx->a, cx->na.mid, lo, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, set(cx->a, RV_NODE_NONE, lo, hi));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, set(cx->a, cx->bad[i], lo, hi));
    for (int k = 0; k < 3; k++) {
        float inv[3] = { -1, -1, -1 };
        inv[k] = 2;
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(cx->a, cx->na.mid, inv, hi));
    }
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3] = { 1, 1, 1 };
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, set(cx->a, cx->na.mid, lo, bad));
        }
}

static void box_clearer_case(rvh_ctx *cx, box_clearer clear)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, clear(NULL, cx->na.mid));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, clear(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, clear(cx->a, cx->bad[i]));
    RVH_REJECT(cx, RV_OK, clear(cx->a, cx->na.twig)); /* it had none: nothing to do */
}

void hostile_rv_node_set_occluder_box(rvh_ctx *cx) { box_setter_case(cx, rv_node_set_occluder_box); }
void hostile_rv_node_clear_occluder_box(rvh_ctx *cx) { box_clearer_case(cx, rv_node_clear_occluder_box); }
static rv_result node_convex(rvh_ctx *cx, const rv_occluder_convex *c)
{
    rvh_before(cx);
    rv_result r = rv_node_set_occluder_convex(cx->a, cx->na.mid, c);
    rvh_after(cx, "rv_node_set_occluder_convex", __LINE__, r, r == RV_OK ? RV_ERR_INVALID_ARG : r);
    return r;
}

static rv_result node_mesh(rvh_ctx *cx, const rv_occluder_mesh *m)
{
    rvh_before(cx);
    rv_result r = rv_node_set_occluder_mesh(cx->a, cx->na.mid, m);
    rvh_after(cx, "rv_node_set_occluder_mesh", __LINE__, r, r == RV_OK ? RV_ERR_INVALID_ARG : r);
    return r;
}

void hostile_rv_node_set_occluder_convex(rvh_ctx *cx)
{
    rv_occluder_convex c = cube_convex();
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_occluder_convex(NULL, cx->na.mid, &c));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_occluder_convex(cx->a, RV_NODE_NONE, &c));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_occluder_convex(cx->a, cx->bad[i], &c));
    bad_convexes(cx, node_convex); /* each refusal checked to change nothing */
    /* Accepted, then replaced by a box and cleared: the world keeps no copy after. */
    RVH_ACCEPT(cx, rv_node_set_occluder_convex(cx->a, cx->na.mid, &c));
    float lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 };
    RVH_ACCEPT(cx, rv_node_set_occluder_box(cx->a, cx->na.mid, lo, hi));
    RVH_ACCEPT(cx, rv_node_clear_occluder(cx->a, cx->na.mid));
}

void hostile_rv_node_set_occluder_mesh(rvh_ctx *cx)
{
    rv_occluder_mesh m = cube_mesh();
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_occluder_mesh(NULL, cx->na.mid, &m));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_occluder_mesh(cx->a, RV_NODE_NONE, &m));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_occluder_mesh(cx->a, cx->bad[i], &m));
    bad_meshes(cx, node_mesh);
    RVH_ACCEPT(cx, rv_node_set_occluder_mesh(cx->a, cx->na.mid, &m));
    rv_occluder_convex c = cube_convex();
    RVH_ACCEPT(cx, rv_node_set_occluder_convex(cx->a, cx->na.mid, &c)); /* replaces the mesh */
    RVH_ACCEPT(cx, rv_node_clear_occluder(cx->a, cx->na.mid));
}

void hostile_rv_node_clear_occluder(rvh_ctx *cx) { box_clearer_case(cx, rv_node_clear_occluder); }
void hostile_rv_node_set_test_box(rvh_ctx *cx) { box_setter_case(cx, rv_node_set_test_box); }
void hostile_rv_node_clear_test_box(rvh_ctx *cx) { box_clearer_case(cx, rv_node_clear_test_box); }

void hostile_rv_world_journal(rvh_ctx *cx)
{
    rv_journal *j = (rv_journal *)(uintptr_t)0x5a5a5a5a;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_journal(NULL, &j));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_journal(cx->a, NULL));
    RVH_CHECK(cx, j == (rv_journal *)(uintptr_t)0x5a5a5a5a);
    RVH_ACCEPT(cx, rv_world_journal(cx->a, &j));
    rv_journal *again;
    RVH_ACCEPT(cx, rv_world_journal(cx->a, &again));
    RVH_CHECK(cx, j == again); /* one journal per world */
}

void hostile_rv_world_render_scene(rvh_ctx *cx)
{
    rv_render_scene *s = (rv_render_scene *)(uintptr_t)0x5a5a5a5a;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_render_scene(NULL, &s));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_render_scene(cx->a, NULL));
    RVH_CHECK(cx, s == (rv_render_scene *)(uintptr_t)0x5a5a5a5a);
}

void hostile_rv_world_add_grid(rvh_ctx *cx)
{
    /* On a world that never drew a frame: a refused desc must not create the world's
     * frame state or residency (the fingerprint compares the memory held). */
    rv_grid_desc d;
    memset(&d, 0, sizeof d);
    d.cell_size = 4.0f;
    d.count_x = d.count_z = 4;
    rv_grid *g = (rv_grid *)(uintptr_t)0x5a5a5a5a;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_add_grid(NULL, &d, &g));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_add_grid(cx->a, NULL, &g));
    rv_grid_desc bad = d;
    bad.cell_size = 0.0f;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_add_grid(cx->a, &bad, &g));
    bad = d;
    bad.count_x = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_add_grid(cx->a, &bad, &g));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        bad = d;
        bad.origin[0] = rvh_nonfinite[b];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_world_add_grid(cx->a, &bad, &g));
    }
    bad = d;
    bad.count_x = bad.count_z = 65536;
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_world_add_grid(cx->a, &bad, &g));
    RVH_CHECK(cx, g == (rv_grid *)(uintptr_t)0x5a5a5a5a && rv_world_residency(cx->a) == NULL);
    /* A second grid of a source the world has would ask for the first one's pages. */
    d.source = 7;
    RVH_ACCEPT(cx, rv_world_add_grid(cx->a, &d, &g));
    rv_grid *first = g;
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_world_add_grid(cx->a, &d, &g));
    RVH_CHECK(cx, g == first);
    d.source = 8;
    RVH_ACCEPT(cx, rv_world_add_grid(cx->a, &d, &g));
    RVH_CHECK(cx, g != first);
}

void hostile_rv_world_set_stream_sources(rvh_ctx *cx)
{
    rv_stream_source s = { { 0, 0, 0 }, 4.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_stream_sources(NULL, &s, 1));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_stream_sources(cx->a, NULL, 1));
    rv_stream_source bad = s;
    bad.radius = -1.0f;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_stream_sources(cx->a, &bad, 1));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        bad = s;
        bad.position[2] = rvh_nonfinite[b];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_world_set_stream_sources(cx->a, &bad, 1));
        bad = s;
        bad.radius = rvh_nonfinite[b];
        rvh_before(cx);
        rv_result r = rv_world_set_stream_sources(cx->a, &bad, 1);
        rvh_after(cx, "a non-finite radius", __LINE__, r, r == RV_ERR_INVALID_ARG ? r : RV_ERR_NOT_FINITE);
    }
    RVH_ACCEPT(cx, rv_world_set_stream_sources(cx->a, NULL, 0));
}

void hostile_rv_world_residency(rvh_ctx *cx)
{
    RVH_CHECK(cx, rv_world_residency(NULL) == NULL);
    RVH_CHECK(cx, rv_world_residency(cx->a) == NULL); /* no grid yet */
}

void hostile_rv_world_occlusion(rvh_ctx *cx)
{
    RVH_CHECK(cx, rv_world_occlusion(NULL) == NULL);
    (void)frame_ok(cx, cx->a, 0.0);
    RVH_CHECK(cx, rv_world_occlusion(cx->a) == NULL); /* occlusion off */
}

void hostile_rv_world_set_occlusion(rvh_ctx *cx)
{
    rv_occlusion_desc d;
    memset(&d, 0, sizeof d);
    d.width = 64;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(NULL, &d));
    /* Every float of the desc non-finite, and every field out of range: the codes of
     * rv_world_create, nothing changed. */
    for (int b = 0; b < RVH_NONFINITE; b++) {
        for (int field = 0; field < 4; field++) {
            rv_occlusion_desc bad = d;
            float *f[4] = { &bad.min_occluder_texels, &bad.feed_max_translation, &bad.feed_max_rotation,
                            &bad.feed_discontinuity };
            *f[field] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_world_set_occlusion(cx->a, &bad));
        }
    }
    const uint32_t huge[] = { RV_OCCLUSION_MAX_SIZE + 1, UINT32_MAX };
    for (size_t i = 0; i < 2; i++) {
        rv_occlusion_desc bad = d;
        bad.width = huge[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &bad));
        bad = d;
        bad.fine_tests = huge[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &bad));
        bad = d;
        bad.fusion = huge[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &bad));
        bad = d;
        bad.feed_max_width = huge[i];
        bad.feed_max_height = 16;
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &bad));
        bad = d;
        bad.feed_max_height = huge[i]; /* and no width */
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &bad));
    }
    for (int e = 0; e < RVH_EXTREME; e++) {
        /* Negative or beyond 0.05: refused; any other finite value is a desc. */
        rv_occlusion_desc odd = d;
        odd.feed_discontinuity = rvh_extreme[e];
        if (rvh_extreme[e] < 0 || rvh_extreme[e] > 0.05f)
            RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &odd));
        else
            RVH_ACCEPT(cx, rv_world_set_occlusion(cx->a, &odd));
        odd = d;
        odd.feed_max_translation = odd.feed_max_rotation = rvh_extreme[e];
        if (rvh_extreme[e] < 0)
            RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_set_occlusion(cx->a, &odd));
        else
            RVH_ACCEPT(cx, rv_world_set_occlusion(cx->a, &odd));
        odd = d;
        odd.min_occluder_texels = rvh_extreme[e]; /* negative: keep every occluder */
        RVH_ACCEPT(cx, rv_world_set_occlusion(cx->a, &odd));
        (void)frame_ok(cx, cx->a, 10.0 * e);
    }
    RVH_CHECK(cx, rv_world_occlusion(cx->a) != NULL);
    /* Inside the frame's window. */
    rv_view v = good_view(100.0);
    RVH_ACCEPT(cx, rv_frame_begin(cx->a, &v));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_world_set_occlusion(cx->a, NULL));
    RVH_ACCEPT(cx, rv_frame_cull(cx->a));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_world_set_occlusion(cx->a, &d));
    RVH_ACCEPT(cx, rv_frame_abort(cx->a));
    /* NULL: occlusion off. */
    RVH_ACCEPT(cx, rv_world_set_occlusion(cx->a, NULL));
    RVH_CHECK(cx, rv_world_occlusion(cx->a) == NULL);
    (void)frame_ok(cx, cx->a, 110.0);
}

void hostile_rv_view_list_create(rvh_ctx *cx)
{
    rv_view_list *l = (rv_view_list *)(uintptr_t)0x5a5a5a5a;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_view_list_create(NULL, &l));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_view_list_create(cx->a, NULL));
    RVH_CHECK(cx, l == (rv_view_list *)(uintptr_t)0x5a5a5a5a);
}

void hostile_rv_view_list_destroy(rvh_ctx *cx)
{
    rv_view_list_destroy(NULL);
    rv_view_list *l;
    RVH_ACCEPT(cx, rv_view_list_create(cx->a, &l));
    rv_view v = good_view(0.0);
    rv_frame_view out;
    RVH_ACCEPT(cx, rv_cull_view(cx->a, &v, l, &out));
    rv_view_list_destroy(l);
}

void hostile_rv_cull_view(rvh_ctx *cx)
{
    rv_view_list *la, *lb;
    RVH_ACCEPT(cx, rv_view_list_create(cx->a, &la));
    RVH_ACCEPT(cx, rv_view_list_create(cx->b, &lb));
    rv_view v = good_view(0.0), bad = v;
    rv_frame_view out;
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(NULL, &v, la, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, NULL, la, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, &v, NULL, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, &v, la, NULL));
    bad.viewport_height = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, &bad, la, &out));
    float m[16];
    memcpy(m, VIEW, sizeof m);
    m[0] = NAN;
    bad = v;
    bad.view = m;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_cull_view(cx->a, &bad, la, &out));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_cull_view(cx->a, &v, lb, &out)); /* another world's list */
    /* A LOD camera is checked as a view: NaN, zero viewport, no matrices. */
    rv_view ref = bad; /* the NaN view */
    bad = v;
    bad.lod_camera = &ref;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_cull_view(cx->a, &bad, la, &out));
    ref = v;
    ref.viewport_width = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, &bad, la, &out));
    ref = v;
    ref.view = ref.projection = NULL;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_cull_view(cx->a, &bad, la, &out));
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
    ref = v;
    ref.lod_camera = &ref; /* a LOD camera's own lod_camera is ignored */
    RVH_ACCEPT(cx, rv_cull_view(cx->a, &bad, la, &out));
    RVH_CHECK(cx, out.opaque_count == 3);
    RVH_ACCEPT(cx, rv_cull_view(cx->a, &v, la, &out));
    RVH_CHECK(cx, out.opaque_count == 3);
    rv_view_list_destroy(la);
    rv_view_list_destroy(lb);
}
