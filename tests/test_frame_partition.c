/* The partition gate inside rv_frame (suite frame): groups with nothing placed below them
 * are gated as the gate's own walk gates them, and an aborted frame keeps the resyncs and
 * activations it called for until the next frame that ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* A camera at the origin looking down -z (OpenGL perspective, 16:9). */
typedef struct camera {
    float view[16], projection[16];
    rv_view v;
} camera;

static void camera_make(camera *c)
{
    const float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float proj[16] = { 0.5625f, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
    memcpy(c->view, view, sizeof view);
    memcpy(c->projection, proj, sizeof proj);
    memset(&c->v, 0, sizeof c->v);
    c->v.view = c->view;
    c->v.projection = c->projection;
    c->v.viewport_width = 1920;
    c->v.viewport_height = 1080;
}

static rv_node node_at(rv_world *w, rv_node parent, float x, float y, float z)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, parent, &n), RV_OK);
    float p[3] = { x, y, z };
    assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
    return n;
}

static void bounds(rv_world *w, rv_node n, float r)
{
    const float c[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_bounds(w, n, c, r), RV_OK);
}

/* The scene of one case: a deferred part with no bounds in a group with nothing else
 * placed, the group at the top level or nested in a bounded part of an outer group, that
 * outer part in view or behind the camera. */
typedef enum layout { TOP_LEVEL, NESTED_IN_VIEW, NESTED_BEHIND } layout;

static rv_node unplaced_part_scene(rv_world *w, layout l)
{
    rv_node inner_group;
    if (l == TOP_LEVEL) {
        inner_group = node_at(w, RV_NODE_NONE, 0, 0, -10);
    } else {
        rv_node outer = node_at(w, RV_NODE_NONE, 0, 0, l == NESTED_IN_VIEW ? -10.0f : 10.0f);
        assert_int_equal(rv_partition_make_group(w, outer), RV_OK);
        rv_node outer_part = node_at(w, outer, 0, 0, 0);
        bounds(w, outer_part, 2);
        uint64_t leaf = 1;
        assert_int_equal(rv_partition_set_part(w, outer_part, &leaf, 1, false), RV_OK);
        inner_group = node_at(w, outer_part, 0, 0, 0);
    }
    assert_int_equal(rv_partition_make_group(w, inner_group), RV_OK);
    rv_node part = node_at(w, inner_group, 0, 0, 0);
    uint64_t leaf = 2;
    assert_int_equal(rv_partition_set_part(w, part, &leaf, 1, true), RV_OK);
    return part;
}

/* rv_frame's walk skips a subtree with nothing placed in it, and once left a group there
 * ungated: its deferred part was never seen, never asked for, so it never loaded. It must
 * decide such a group as the gate's own walk does (the reference here): an unplaced part
 * in view is visible and asks for its activation; one whose enclosing part is behind the
 * camera stays hidden. */
static void test_frame_gates_groups_with_nothing_placed_as_the_gate_does(void **state)
{
    (void)state;
    for (int l = TOP_LEVEL; l <= NESTED_BEHIND; l++) {
        rv_world *framed = NULL, *gated = NULL;
        assert_int_equal(rv_world_create(NULL, &framed), RV_OK);
        assert_int_equal(rv_world_create(NULL, &gated), RV_OK);
        rv_node part_f = unplaced_part_scene(framed, (layout)l), part_g = unplaced_part_scene(gated, (layout)l);
        camera c;
        camera_make(&c);
        rv_frame_view v;
        assert_int_equal(rv_frame(framed, &c.v, &v), RV_OK);
        rv_frustum f;
        assert_int_equal(rv_frustum_from_view_projection(c.projection, (rv_clip){ 0 }, &f), RV_OK);
        rv_partition_result res;
        assert_int_equal(rv_update_world(gated), RV_OK);
        assert_int_equal(rv_partition_begin_frame(gated, &f), RV_OK);
        assert_int_equal(rv_partition_end_frame(gated, &f, 0, &res), RV_OK);

        bool expected = l != NESTED_BEHIND;
        rv_partition_part_info info_f, info_g;
        assert_int_equal(rv_partition_part_get_info(framed, part_f, &info_f), RV_OK);
        assert_int_equal(rv_partition_part_get_info(gated, part_g, &info_g), RV_OK);
        assert_int_equal(info_g.frustum_visible, expected); /* the reference as documented */
        assert_int_equal(info_f.frustum_visible, info_g.frustum_visible);
        assert_int_equal(info_f.activation_requests, info_g.activation_requests);
        assert_int_equal(info_f.activation_requests, expected ? 1 : 0);
        assert_int_equal(v.resync_request_count, res.request_count);
        if (expected) {
            assert_int_equal(v.resync_request_count, 1);
            assert_int_equal(v.resync_requests[0].part_count, 1);
            assert_true(v.resync_requests[0].parts[0].id == part_f.id);
        }
        rv_world_destroy(framed);
        rv_world_destroy(gated);
    }
}

static bool drawn(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n))
            return true;
    return false;
}

/* Group k of the gated-groups scene at x = 4k - 6 in front of the camera: a low part
 * inside the committed slice (y <= 2) and a high part above it, both bounded. */
static void slice_group(rv_world *w, rv_node group, uint64_t first_leaf, rv_node parts[2])
{
    assert_int_equal(rv_partition_make_group(w, group), RV_OK);
    for (int k = 0; k < 2; k++) {
        parts[k] = node_at(w, group, 0, k ? 5.0f : 0.5f, 0);
        bounds(w, parts[k], 0.5f);
        uint64_t leaf = first_leaf + (uint64_t)k;
        assert_int_equal(rv_partition_set_part(w, parts[k], &leaf, 1, false), RV_OK);
    }
}

/* Every group in groups[] gates by the slice: its low part drawn, its high part culled. */
static void expect_sliced(rv_world *w, camera *c, rv_node (*parts)[2], const bool *gated, uint32_t count)
{
    c->v.time_ms += 16;
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c->v, &v), RV_OK);
    uint32_t culled = 0;
    for (uint32_t g = 0; g < count; g++) {
        assert_true(drawn(&v, parts[g][0]));
        assert_int_equal(drawn(&v, parts[g][1]), !gated[g]);
        culled += gated[g];
    }
    assert_int_equal(v.counts.partition_culled, culled);
}

/* The gate keeps its groups in an array indexed through a per-node table. A group removed
 * from the middle has the last one moved into its place, and the table grows (its old
 * entries copied) when a group or part is made on a node past it: every group still gates
 * as before, and the one removed stops gating its parts. */
static void test_groups_gate_after_a_group_leaves_and_the_gate_s_table_grows(void **state)
{
    (void)state;
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    const float lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, hi[3] = { FLT_MAX, 2, FLT_MAX };
    assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK);
    rv_node groups[4], parts[4][2];
    bool gated[4] = { true, true, true, true };
    for (uint32_t g = 0; g < 3; g++) {
        groups[g] = node_at(w, RV_NODE_NONE, 4.0f * (float)g - 6, -1, -12);
        slice_group(w, groups[g], 10 * (uint64_t)g + 1, parts[g]);
    }
    camera c;
    camera_make(&c);
    expect_sliced(w, &c, parts, gated, 3);

    assert_int_equal(rv_partition_remove(w, groups[0]), RV_OK); /* the last group takes its place */
    assert_false(rv_partition_is_group(w, groups[0]));
    assert_true(rv_partition_is_group(w, groups[2]));
    gated[0] = false; /* its parts' parent is no group now: not gated */
    expect_sliced(w, &c, parts, gated, 3);

    /* Enough nodes that the scene's capacity passes the gate's table, then a group on the
     * newest: the table grows with the old groups' and parts' entries kept. */
    rv_node filler = node_at(w, RV_NODE_NONE, 0, -100, 0);
    for (int k = 0; k < 5000; k++)
        (void)node_at(w, filler, 0, 0, 0);
    groups[3] = node_at(w, RV_NODE_NONE, 6, -1, -12);
    slice_group(w, groups[3], 41, parts[3]);
    expect_sliced(w, &c, parts, gated, 4);
    rv_partition_part_info info;
    assert_int_equal(rv_partition_part_get_info(w, parts[2][1], &info), RV_OK);
    assert_true(rv_node_equal(info.group, groups[2]));
    assert_false(info.frustum_visible);
    assert_int_equal(rv_partition_part_get_info(w, parts[0][1], &info), RV_OK);
    assert_true(rv_node_equal(info.group, RV_NODE_NONE));
    rv_world_destroy(w);
}

static uint32_t reprocess_calls, reprocessed_parts;

static void count_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    (void)parts;
    (void)user;
    reprocess_calls++;
    reprocessed_parts += count;
}

/* A part re-enters (or is seen for the first time, deferred) in a frame the host aborts
 * after its cull: nothing of that frame is published, so its request must wait for the next
 * frame that ends, listed there and handed to request_reprocess there, not during the
 * abort. Before, the abort flushed it to no one and the part then counted as satisfied. */
static void test_abort_keeps_partition_requests_for_the_next_frame(void **state)
{
    (void)state;
    for (int wired = 0; wired < 2; wired++)
        for (int deferred = 0; deferred < 2; deferred++) {
            rv_world_desc d = { 0 };
            if (wired)
                d.partition.request_reprocess = count_reprocess;
            rv_world *w = NULL;
            assert_int_equal(rv_world_create(&d, &w), RV_OK);
            rv_node group = node_at(w, RV_NODE_NONE, 0, 0, -10);
            assert_int_equal(rv_partition_make_group(w, group), RV_OK);
            rv_node part = node_at(w, group, 0, 5, 0);
            bounds(w, part, 1);
            uint64_t leaf = 1;
            assert_int_equal(rv_partition_set_part(w, part, &leaf, 1, deferred != 0), RV_OK);
            camera c;
            camera_make(&c);
            rv_frame_view v;
            const float lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, hi[3] = { FLT_MAX, 2, FLT_MAX };
            if (!deferred) {
                assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* seen: not a re-entry */
                assert_int_equal(v.resync_request_count, 0);
                assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK); /* out of the slice */
                c.v.time_ms += 16;
                assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
                assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK); /* back in view */
            }
            reprocess_calls = reprocessed_parts = 0;
            c.v.time_ms += 16;
            assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
            assert_int_equal(rv_frame_cull(w), RV_OK);
            assert_int_equal(rv_frame_abort(w), RV_OK);
            assert_int_equal(reprocess_calls, 0);
            rv_partition_part_info info;
            assert_int_equal(rv_partition_part_get_info(w, part, &info), RV_OK);
            assert_int_equal(info.activation_requests, 0);
            assert_true(info.resync_waiting);

            c.v.time_ms += 16;
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_int_equal(v.resync_request_count, 1);
            assert_int_equal(v.resync_requests[0].part_count, 1);
            assert_true(v.resync_requests[0].parts[0].id == part.id);
            assert_int_equal(reprocess_calls, wired ? 1 : 0);
            assert_int_equal(reprocessed_parts, wired ? 1 : 0);
            assert_int_equal(rv_partition_part_get_info(w, part, &info), RV_OK);
            assert_int_equal(info.activation_requests, deferred ? 1 : 0);
            assert_false(info.resync_waiting);
            /* Asked once: the frames after list nothing more. */
            c.v.time_ms += 16;
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_int_equal(v.resync_request_count, 0);
            rv_world_destroy(w);
        }
}

/* A request kept by an abort is dropped, as a busy host's is, when the part leaves the view
 * before the next frame ends: its next re-entry asks again. */
static void test_request_kept_by_an_abort_drops_when_the_part_leaves(void **state)
{
    (void)state;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node group = node_at(w, RV_NODE_NONE, 0, 0, -10);
    assert_int_equal(rv_partition_make_group(w, group), RV_OK);
    rv_node part = node_at(w, group, 0, 5, 0);
    bounds(w, part, 1);
    uint64_t leaf = 1;
    assert_int_equal(rv_partition_set_part(w, part, &leaf, 1, false), RV_OK);
    camera c;
    camera_make(&c);
    rv_frame_view v;
    const float lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, hi[3] = { FLT_MAX, 2, FLT_MAX };
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK);
    c.v.time_ms += 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    c.v.time_ms += 16;
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_int_equal(rv_frame_cull(w), RV_OK);
    assert_int_equal(rv_frame_abort(w), RV_OK); /* the re-entry waits */
    assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK);
    c.v.time_ms += 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* out again: dropped */
    assert_int_equal(v.resync_request_count, 0);
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    c.v.time_ms += 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* in again: asked again */
    assert_int_equal(v.resync_request_count, 1);
    rv_world_destroy(w);
}

/* ---- the frame's walk against the gate's own walk --------------------------------------- */

static uint64_t rng_state;

static float uniform(float a, float b)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return a + (b - a) * (float)(rng_state >> 40) / 16777216.0f;
}

static uint32_t below(uint32_t n)
{
    return (uint32_t)uniform(0.0f, (float)n) % n;
}

enum { MAX_PARTS = 256, MAX_LOG = 4096 };

typedef struct request_log {
    uint64_t ids[MAX_LOG];
    uint32_t count;
} request_log;

static void log_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    request_log *log = user;
    for (uint32_t i = 0; i < count && log->count < MAX_LOG; i++)
        log->ids[log->count++] = parts[i].id & 0xFFFFFFFFFFFFull; /* without the world's tag */
}

/* Twelve groups about the view, a third of them under one or two plain nodes, one to five
 * parts each (a fifth without bounds, some deferred), a third of the parts holding a group
 * of their own (directly or through a plain node) with parts of their own (a quarter
 * without bounds). The same seed builds the same scene in any world. */
static uint32_t random_partitions(rv_world *w, uint64_t seed, rv_node parts[MAX_PARTS])
{
    rng_state = seed;
    uint32_t n = 0;
    uint64_t leaf = 1;
    for (int gi = 0; gi < 12; gi++) {
        rv_node above = RV_NODE_NONE;
        for (uint32_t k = below(3) == 0 ? 1 + below(2) : 0; k > 0; k--)
            above = node_at(w, above, uniform(-10, 10), 0, uniform(-10, 10));
        rv_node g = node_at(w, above, uniform(-40, 40), uniform(-3, 3), uniform(-60, 10));
        assert_int_equal(rv_partition_make_group(w, g), RV_OK);
        uint32_t count = 1 + below(5);
        for (uint32_t p = 0; p < count; p++) {
            rv_node part = node_at(w, g, uniform(-6, 6), uniform(-2, 2), uniform(-6, 6));
            if (below(5))
                bounds(w, part, uniform(0.2f, 3));
            uint64_t leaves[2] = { leaf, leaf + 1 };
            leaf += 2;
            assert_int_equal(rv_partition_set_part(w, part, leaves, below(3), below(3) == 0), RV_OK);
            parts[n++] = part;
            if (below(3) == 0) {
                rv_node holder = below(2) ? node_at(w, part, uniform(-2, 2), 0, uniform(-2, 2)) : part;
                rv_node inner = node_at(w, holder, uniform(-3, 3), uniform(-1, 1), uniform(-3, 3));
                assert_int_equal(rv_partition_make_group(w, inner), RV_OK);
                uint32_t inner_count = 1 + below(3);
                for (uint32_t q = 0; q < inner_count; q++) {
                    rv_node ip = node_at(w, inner, uniform(-2, 2), 0, uniform(-2, 2));
                    if (below(4))
                        bounds(w, ip, uniform(0.1f, 1.5f));
                    uint64_t l = leaf++;
                    assert_int_equal(rv_partition_set_part(w, ip, &l, 1, below(2) != 0), RV_OK);
                    parts[n++] = ip;
                }
            }
            for (int k = 0; k < 2; k++) {
                rv_node c = node_at(w, part, uniform(-3, 3), 0, uniform(-3, 3));
                bounds(w, c, 0.3f);
            }
        }
    }
    return n;
}

/* The frame walks a group within frustum_margin to gate it, and draws nothing of it out of
 * view: a group with geometry of its own and no part, 1.4 units beyond the right side of the
 * view with a margin of 5, is not listed; the same group in view is. */
static void test_a_group_within_the_margin_out_of_view_is_not_drawn(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.partition.frustum_margin = 5.0f;
    rv_world *w;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    /* At z = -10 the view's right side is x = 10 / 0.5625 = 17.78; radius 1. */
    rv_node out = node_at(w, RV_NODE_NONE, 17.78f + 2.4f, 0, -10), in = node_at(w, RV_NODE_NONE, 0, 0, -10);
    bounds(w, out, 1);
    bounds(w, in, 1);
    assert_int_equal(rv_partition_make_group(w, out), RV_OK);
    assert_int_equal(rv_partition_make_group(w, in), RV_OK);
    camera c;
    camera_make(&c);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(rv_frustum_classify_sphere(&v.frustum, (float[3]){ 17.78f + 2.4f, 0, -10 }, 1), RV_OUTSIDE);
    assert_false(drawn(&v, out));
    assert_true(drawn(&v, in));
    rv_world_destroy(w);
}

/* A hidden node (RV_NODE_FLAG_HIDDEN) prunes its subtree from the frame's walk: a group
 * with nothing placed below it stays culled there, as its placed neighbours do, and its
 * deferred part asks for nothing. */
static void test_an_unplaced_group_under_a_hidden_node_stays_culled(void **state)
{
    (void)state;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node parent = node_at(w, RV_NODE_NONE, 0, 0, -10);
    rv_node placed_group = node_at(w, parent, -2, 0, 0), empty_group = node_at(w, parent, 2, 0, 0);
    assert_int_equal(rv_partition_make_group(w, placed_group), RV_OK);
    assert_int_equal(rv_partition_make_group(w, empty_group), RV_OK);
    rv_node placed = node_at(w, placed_group, 0, 0, 0), unplaced = node_at(w, empty_group, 0, 0, 0);
    bounds(w, placed, 1);
    uint64_t a = 1, b = 2;
    assert_int_equal(rv_partition_set_part(w, placed, &a, 1, true), RV_OK);
    assert_int_equal(rv_partition_set_part(w, unplaced, &b, 1, true), RV_OK);
    camera c;
    camera_make(&c);
    rv_frame_view v;
    for (int hidden = 1; hidden >= 0; hidden--) {
        assert_int_equal(rv_node_set_flags(w, parent, hidden ? RV_NODE_FLAG_HIDDEN : 0), RV_OK);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        c.v.time_ms += 16;
        rv_partition_part_info pi, ui;
        assert_int_equal(rv_partition_part_get_info(w, placed, &pi), RV_OK);
        assert_int_equal(rv_partition_part_get_info(w, unplaced, &ui), RV_OK);
        assert_int_equal(pi.frustum_visible, !hidden);
        assert_int_equal(ui.frustum_visible, !hidden);
        assert_int_equal(ui.activation_requests, hidden ? 0 : 1);
        assert_int_equal(v.resync_request_count, hidden ? 0 : 2);
    }
    rv_world_destroy(w);
}

/* rv_frame gates the partitions inside its walk; rv_partition_begin_frame and
 * rv_partition_end_frame walk the groups themselves, by the frustum alone (the reference:
 * what the guide says the frame's walk does). Random nested scenes, a camera that turns, a
 * committed slice for a third of the frames: every part's decision, every frame's requests
 * and the parts handed to request_reprocess, in order, must agree. */
static void test_frame_gates_as_the_gate_s_own_walk_in_random_scenes(void **state)
{
    (void)state;
    const float proj[16] = { 0.5625f, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
    uint32_t compared = 0, visible = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        request_log logs[2];
        memset(logs, 0, sizeof logs);
        rv_world *w[2];
        rv_node parts[2][MAX_PARTS];
        uint32_t count[2];
        for (int k = 0; k < 2; k++) {
            rv_world_desc d = { 0 };
            d.partition.frustum_margin = seed % 3 == 0 ? 0.0f : 2.0f;
            d.partition.request_reprocess = log_reprocess;
            d.partition.user = &logs[k];
            assert_int_equal(rv_world_create(&d, &w[k]), RV_OK);
            count[k] = random_partitions(w[k], seed * 1000, parts[k]);
        }
        assert_int_equal(count[0], count[1]);
        for (int f = 0; f < 30; f++) {
            float yaw = 0.9f * sinf((float)f * 0.3f + (float)seed), fx = sinf(yaw), fz = -cosf(yaw);
            float ex = 0, ey = 1, ez = 5;
            float view[16] = { -fz, 0, -fx, 0, 0, 1, 0, 0, fx, 0, -fz, 0, -(-fz * ex + fx * ez), -ey,
                               -(-fx * ex - fz * ez), 1 };
            const float lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, hi[3] = { FLT_MAX, 0.5f, FLT_MAX };
            for (int k = 0; k < 2; k++) {
                if (f == 10)
                    assert_int_equal(rv_partition_set_committed_slice(w[k], lo, hi), RV_OK);
                if (f == 20)
                    assert_int_equal(rv_partition_clear_committed_slice(w[k]), RV_OK);
            }
            rv_view v;
            memset(&v, 0, sizeof v);
            v.view = view;
            v.projection = proj;
            v.viewport_width = 800;
            v.viewport_height = 450;
            v.time_ms = 100.0 * f;
            rv_frame_view fv;
            assert_int_equal(rv_frame(w[0], &v, &fv), RV_OK);
            /* The gate's walk gets the frustum the frame culled with. */
            rv_partition_result pr;
            assert_int_equal(rv_update_world(w[1]), RV_OK);
            assert_int_equal(rv_partition_begin_frame(w[1], &fv.frustum), RV_OK);
            assert_int_equal(rv_partition_end_frame(w[1], &fv.frustum, v.time_ms, &pr), RV_OK);
            assert_int_equal(fv.resync_request_count, pr.request_count);
            for (uint32_t i = 0; i < count[0]; i++) {
                bool a, b;
                assert_int_equal(rv_partition_part_frustum_visible(w[0], parts[0][i], &a), RV_OK);
                assert_int_equal(rv_partition_part_frustum_visible(w[1], parts[1][i], &b), RV_OK);
                assert_int_equal(a, b);
                compared++;
                visible += a;
            }
        }
        assert_int_equal(logs[0].count, logs[1].count);
        assert_memory_equal(logs[0].ids, logs[1].ids, logs[0].count * sizeof logs[0].ids[0]);
        rv_world_destroy(w[0]);
        rv_world_destroy(w[1]);
    }
    assert_true(visible > compared / 10 && visible < compared - compared / 10); /* both kinds met */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_gates_groups_with_nothing_placed_as_the_gate_does),
        cmocka_unit_test(test_abort_keeps_partition_requests_for_the_next_frame),
        cmocka_unit_test(test_request_kept_by_an_abort_drops_when_the_part_leaves),
        cmocka_unit_test(test_frame_gates_as_the_gate_s_own_walk_in_random_scenes),
        cmocka_unit_test(test_an_unplaced_group_under_a_hidden_node_stays_culled),
        cmocka_unit_test(test_a_group_within_the_margin_out_of_view_is_not_drawn),
        cmocka_unit_test(test_groups_gate_after_a_group_leaves_and_the_gate_s_table_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
