/* Partition gating (docs/design.md §3): one test per behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "core/hash.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixtures ---------------------------------------------------------------------------- */

enum { MAX_PARTS = 8, MAX_CALLS = 64, MAX_LISTED = 256 };

/* The host side: records every request_reprocess call, answers is_update_in_progress. */
typedef struct host {
    uint32_t calls;
    uint32_t call_counts[MAX_CALLS];
    rv_node listed[MAX_LISTED]; /* parts of every call, in order */
    uint32_t listed_count;
    bool busy;
    uint32_t busy_polls;
    rv_world *world;            /* for callbacks that call back into rvis */
    rv_result reentrant_result; /* what a structural call from inside the callback returned */
    bool try_reentrant;
    bool commit_in_callback;    /* answer activation from inside the callback */
    uint64_t commit_version;
} host;

static void on_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    host *h = user;
    if (h->calls < MAX_CALLS)
        h->call_counts[h->calls] = count;
    h->calls++;
    for (uint32_t i = 0; i < count && h->listed_count < MAX_LISTED; i++)
        h->listed[h->listed_count++] = parts[i];
    if (h->try_reentrant) {
        rv_partition_result r;
        h->reentrant_result = rv_partition_begin_frame(h->world, NULL);
        assert_int_equal(rv_partition_end_frame(h->world, NULL, 0.0, &r), RV_ERR_BAD_STATE);
        assert_int_equal(rv_partition_make_group(h->world, parts[0]), RV_ERR_BAD_STATE);
    }
}

static bool on_busy(void *user)
{
    host *h = user;
    h->busy_polls++;
    return h->busy;
}

/* One group at the origin with parts along +x at 30 m pitch (radius 1): part k is seen by
 * box_frustum(30 k, 10) alone. */
typedef struct scene {
    rv_world *world;
    host h;
    rv_node group;
    rv_node parts[MAX_PARTS];
    uint32_t part_count;
} scene;

static rv_frustum box_frustum_xyz(float cx, float hx, float h)
{
    rv_frustum f;
    memset(&f, 0, sizeof f);
    const float planes[6][4] = {
        { 1, 0, 0, -(cx - hx) }, { -1, 0, 0, cx + hx }, { 0, 1, 0, h },
        { 0, -1, 0, h },         { 0, 0, 1, h },        { 0, 0, -1, h },
    };
    memcpy(f.planes, planes, sizeof planes);
    f.plane_mask = 0x3f;
    return f;
}

/* An axis-aligned box frustum: x in [cx - half, cx + half], y and z in [-half, half]. */
static rv_frustum box_frustum(float cx, float half)
{
    return box_frustum_xyz(cx, half, half);
}

static rv_node new_node(rv_world *w, rv_node parent, float x, float radius)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, parent, &n), RV_OK);
    const float pos[3] = { x, 0, 0 }, zero[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_position(w, n, pos), RV_OK);
    if (radius >= 0)
        assert_int_equal(rv_node_set_bounds(w, n, zero, radius), RV_OK);
    return n;
}

static void scene_init_desc(scene *s, rv_world_desc desc, uint32_t parts, bool wire, bool deferred)
{
    memset(s, 0, sizeof *s);
    if (wire)
        desc.partition.request_reprocess = on_reprocess;
    desc.partition.is_update_in_progress = on_busy;
    desc.partition.user = &s->h;
    assert_int_equal(rv_world_create(&desc, &s->world), RV_OK);
    s->h.world = s->world;
    s->group = new_node(s->world, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_partition_make_group(s->world, s->group), RV_OK);
    s->part_count = parts;
    for (uint32_t k = 0; k < parts; k++) {
        s->parts[k] = new_node(s->world, s->group, 30.0f * (float)k, 1.0f);
        uint64_t leaves[3] = { 100 * k + 1, 100 * k + 2, 100 * k + 3 };
        assert_int_equal(rv_partition_set_part(s->world, s->parts[k], leaves, 3, deferred), RV_OK);
    }
    assert_int_equal(rv_update_world(s->world), RV_OK);
}

static void scene_init(scene *s, uint32_t parts, bool wire)
{
    rv_world_desc desc = {0};
    scene_init_desc(s, desc, parts, wire, false);
}

static void scene_fini(scene *s)
{
    rv_world_destroy(s->world);
}

/* One standalone frame: begin and end with the same frustum. */
static rv_partition_result frame_at(scene *s, const rv_frustum *f, double now_ms)
{
    rv_partition_result r;
    memset(&r, 0xAB, sizeof r);
    assert_int_equal(rv_partition_begin_frame(s->world, f), RV_OK);
    assert_int_equal(rv_partition_end_frame(s->world, f, now_ms, &r), RV_OK);
    return r;
}

static rv_partition_result frame_x(scene *s, float cx, float half, double now_ms)
{
    rv_frustum f = box_frustum(cx, half);
    return frame_at(s, &f, now_ms);
}

static bool visible(scene *s, rv_node part)
{
    bool v = false;
    assert_int_equal(rv_partition_part_frustum_visible(s->world, part, &v), RV_OK);
    return v;
}

static bool hidden_node(rv_world *w, rv_node n)
{
    bool h = false;
    assert_int_equal(rv_partition_node_hidden(w, n, &h), RV_OK);
    return h;
}

static void commit_part(scene *s, uint32_t k, uint64_t version, bool ladder)
{
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(rv_partition_leaf_committed(s->world, 100 * k + i, version, ladder), RV_OK);
}

static rv_partition_part_info info_of(rv_world *w, rv_node part)
{
    rv_partition_part_info i;
    assert_int_equal(rv_partition_part_get_info(w, part, &i), RV_OK);
    return i;
}

/* ---- culling ------------------------------------------------------------------------------ */

static void test_part_outside_padded_frustum_is_hidden_and_flagged(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 3, true);
    rv_node below = new_node(s.world, s.parts[1], 0, 0.5f); /* something under part 1 */
    assert_int_equal(rv_update_world(s.world), RV_OK);

    rv_partition_result r = frame_x(&s, 0, 10, 0);
    assert_true(visible(&s, s.parts[0]));
    assert_false(visible(&s, s.parts[1]));
    assert_false(visible(&s, s.parts[2]));
    assert_true(hidden_node(s.world, below));
    assert_false(hidden_node(s.world, s.parts[0]));
    assert_false(hidden_node(s.world, s.group));
    assert_int_equal(r.counts.groups_gated, 1);
    assert_int_equal(r.counts.parts_tested, 3);
    assert_int_equal(r.counts.parts_visible, 1);
    assert_int_equal(r.request_count, 0);

    r = frame_x(&s, 30, 10, 1);
    assert_false(visible(&s, s.parts[0]));
    assert_true(visible(&s, s.parts[1]));
    assert_false(hidden_node(s.world, below));
    scene_fini(&s);
}

static void test_margin_keeps_part_just_outside_plain_frustum_visible(void **state)
{
    (void)state;
    /* Part 1 sits at x = 30, radius 1: its nearest point is 9 m past the frustum's right
     * plane at x = 20 (cx 10, half 10). */
    const float margins[3] = { 0.0f, 8.5f, 9.5f };
    const bool expect[3] = { false, false, true };
    for (int m = 0; m < 3; m++) {
        rv_world_desc desc = {0};
        desc.partition.frustum_margin = margins[m];
        scene s;
        scene_init_desc(&s, desc, 2, true, false);
        frame_x(&s, 10, 10, 0);
        assert_true(visible(&s, s.parts[0]));
        assert_int_equal(visible(&s, s.parts[1]), expect[m]);
        scene_fini(&s);
    }
}

static void test_part_outside_committed_slice_hidden_inside_visible_no_slice_all_pass(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 3, true); /* parts at x = 0, 30, 60, radius 1 */
    /* Part 1 (x = 30, radius 1) just reaches into a slice ending at x = 29.05 and just
     * misses one ending at x = 28.95. */
    const float lo[3] = { -5, -5, -5 }, hi[3] = { 29.05f, 5, 5 }, short_hi[3] = { 28.95f, 5, 5 };
    assert_int_equal(rv_partition_set_committed_slice(s.world, lo, short_hi), RV_OK);
    frame_x(&s, 30, 40, 0);
    assert_true(visible(&s, s.parts[0]));
    assert_false(visible(&s, s.parts[1]));
    assert_int_equal(rv_partition_set_committed_slice(s.world, lo, hi), RV_OK);
    frame_x(&s, 30, 40, 0);
    assert_true(visible(&s, s.parts[0]));
    assert_true(visible(&s, s.parts[1]));
    assert_false(visible(&s, s.parts[2]));

    const float lo2[3] = { 40, -5, -5 }, hi2[3] = { 70, 5, 5 };
    assert_int_equal(rv_partition_set_committed_slice(s.world, lo2, hi2), RV_OK);
    frame_x(&s, 30, 40, 1);
    assert_false(visible(&s, s.parts[0]));
    assert_false(visible(&s, s.parts[1]));
    assert_true(visible(&s, s.parts[2]));

    assert_int_equal(rv_partition_clear_committed_slice(s.world), RV_OK);
    frame_x(&s, 30, 40, 2);
    for (int k = 0; k < 3; k++)
        assert_true(visible(&s, s.parts[k]));
    /* A part inside the slice but outside the frustum stays hidden: both tests apply. */
    assert_int_equal(rv_partition_set_committed_slice(s.world, lo, hi), RV_OK);
    frame_x(&s, 60, 10, 3);
    for (int k = 0; k < 3; k++)
        assert_false(visible(&s, s.parts[k]));
    scene_fini(&s);
}

static void test_part_with_empty_bounds_counts_as_visible(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    rv_node bare = new_node(s.world, s.group, 500, -1); /* no bounds anywhere below it */
    assert_int_equal(rv_partition_set_part(s.world, bare, NULL, 0, false), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    frame_x(&s, 0, 10, 0);
    assert_true(visible(&s, bare));
    scene_fini(&s);
}

/* ---- re-entry ------------------------------------------------------------------------------- */

static void test_first_visibility_is_not_a_reentry(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    /* Hidden from the start (never seen), then seen: no request. */
    rv_partition_result r = frame_x(&s, 500, 10, 0);
    assert_false(info_of(s.world, s.parts[0]).ever_visible);
    r = frame_x(&s, 0, 10, 1);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.counts.parts_reentered, 0);
    assert_true(info_of(s.world, s.parts[0]).ever_visible);
    assert_int_equal(s.h.calls, 0);
    scene_fini(&s);
}

static void test_reentry_requests_exactly_that_part(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 3, true);
    frame_x(&s, 0, 10, 0);                         /* part 0 first seen */
    frame_x(&s, 30, 10, 1);                        /* part 1 first seen, part 0 hidden */
    rv_partition_result r = frame_x(&s, 0, 10, 2); /* part 0 re-enters */
    assert_int_equal(r.counts.parts_reentered, 1);
    assert_int_equal(r.request_count, 1);
    assert_true(rv_node_equal(r.requests[0].group, s.group));
    assert_int_equal(r.requests[0].part_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[0]));
    assert_int_equal(s.h.calls, 1);
    assert_int_equal(s.h.call_counts[0], 1);
    assert_true(rv_node_equal(s.h.listed[0], s.parts[0]));
    /* Staying visible asks nothing more. */
    r = frame_x(&s, 0, 10, 3);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(s.h.calls, 1);
    scene_fini(&s);
}

static void test_reentries_on_consecutive_frames_coalesce_into_one_request(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    frame_x(&s, 15, 25, 0);   /* both seen */
    frame_x(&s, 500, 10, 1);  /* both hidden */
    s.h.busy = true;
    rv_partition_result r = frame_x(&s, 0, 10, 2);  /* part 0 re-enters, held */
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.counts.parts_held, 1);
    s.h.busy = false;
    r = frame_x(&s, 15, 25, 3); /* part 1 re-enters the next frame; both flushed together */
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 2);
    assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[0]));
    assert_true(rv_node_equal(r.requests[0].parts[1], s.parts[1]));
    assert_int_equal(s.h.calls, 1);
    assert_int_equal(s.h.call_counts[0], 2);
    scene_fini(&s);
}

static void test_requests_held_while_host_busy_and_flushed_the_frame_it_is_not(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    frame_x(&s, 0, 10, 0);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    for (int i = 0; i < 3; i++) {
        rv_partition_result r = frame_x(&s, 0, 10, 2 + i);
        assert_int_equal(r.request_count, 0);
        assert_int_equal(r.counts.parts_held, 1);
        assert_true(info_of(s.world, s.parts[0]).resync_waiting);
    }
    assert_int_equal(s.h.calls, 0);
    assert_int_equal(s.h.busy_polls, 3);
    s.h.busy = false;
    rv_partition_result r = frame_x(&s, 0, 10, 5);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(s.h.calls, 1);
    assert_false(info_of(s.world, s.parts[0]).resync_waiting);
    r = frame_x(&s, 0, 10, 6);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(s.h.calls, 1);
    /* Nothing to flush: the host is not even asked whether it is busy. */
    assert_int_equal(s.h.busy_polls, 4);
    scene_fini(&s);
}

static void test_held_request_dropped_when_part_hides_again(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    frame_x(&s, 0, 10, 0);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    frame_x(&s, 0, 10, 2);
    rv_partition_result r = frame_x(&s, 500, 10, 3); /* hides again before the flush */
    assert_int_equal(r.counts.parts_held, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    s.h.busy = false;
    r = frame_x(&s, 500, 10, 4);
    assert_int_equal(r.request_count, 0);
    r = frame_x(&s, 0, 10, 5); /* its next re-entry asks again */
    assert_int_equal(r.request_count, 1);
    scene_fini(&s);
}

static void test_no_request_when_all_leaves_committed_with_complete_ladder(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    assert_int_equal(rv_partition_set_view_version(s.world, 5), RV_OK);
    frame_x(&s, 0, 10, 0);
    commit_part(&s, 0, 5, true);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true; /* nothing to hold: no tick either */
    rv_partition_result r = frame_x(&s, 0, 10, 2);
    assert_int_equal(r.counts.parts_reentered, 1);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.counts.parts_held, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    assert_int_equal(s.h.calls, 0);
    scene_fini(&s);
}

static void test_request_when_a_leaf_ladder_is_incomplete_or_its_version_old(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        scene s;
        scene_init(&s, 1, true);
        assert_int_equal(rv_partition_set_view_version(s.world, 5), RV_OK);
        frame_x(&s, 0, 10, 0);
        commit_part(&s, 0, 5, true);
        if (variant == 0)
            assert_int_equal(rv_partition_leaf_committed(s.world, 2, 5, false), RV_OK);
        else if (variant == 1)
            assert_int_equal(rv_partition_leaf_committed(s.world, 2, 4, true), RV_OK);
        else
            assert_int_equal(rv_partition_leaf_dropped(s.world, 2), RV_OK);
        frame_x(&s, 500, 10, 1);
        rv_partition_result r = frame_x(&s, 0, 10, 2);
        assert_int_equal(r.request_count, 1);
        assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[0]));
        scene_fini(&s);
    }
    /* The current version moving on makes every earlier commit stale too. */
    scene s;
    scene_init(&s, 1, true);
    assert_int_equal(rv_partition_set_view_version(s.world, 5), RV_OK);
    frame_x(&s, 0, 10, 0);
    commit_part(&s, 0, 5, true);
    frame_x(&s, 500, 10, 1);
    assert_int_equal(rv_partition_set_view_version(s.world, 6), RV_OK);
    rv_partition_result r = frame_x(&s, 0, 10, 2);
    assert_int_equal(r.request_count, 1);
    scene_fini(&s);
}

static void test_readiness_is_rechecked_at_the_flush(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    frame_x(&s, 0, 10, 0);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    frame_x(&s, 0, 10, 2); /* held */
    commit_part(&s, 0, 0, true); /* the host caught up on its own meanwhile */
    s.h.busy = false;
    rv_partition_result r = frame_x(&s, 0, 10, 3);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(s.h.calls, 0);
    scene_fini(&s);
}

static void test_view_version_unchanged_by_every_resync(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 100;
    scene s;
    scene_init_desc(&s, desc, 3, true, false);
    rv_node deferred = new_node(s.world, s.group, 0, 1);
    const uint64_t dl[2] = { 9001, 9002 };
    assert_int_equal(rv_partition_set_part(s.world, deferred, dl, 2, true), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_partition_set_view_version(s.world, 41), RV_OK);
    commit_part(&s, 1, 41, false);
    uint32_t total = 0;
    for (int f = 0; f < 12; f++) {
        rv_partition_result r = frame_x(&s, (float)(30 * (f % 3)), 10, 50.0 * f);
        total += r.counts.parts_requested;
        assert_int_equal(rv_partition_view_version(s.world), 41);
        /* the commits made for version 41 still count as current */
        assert_int_equal(info_of(s.world, s.parts[1]).leaves_committed, 3);
    }
    assert_true(total >= 8); /* re-entries and activations really were requested */
    scene_fini(&s);
}

static void test_group_culled_as_a_whole_hides_its_parts_which_reenter(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    rv_frustum f = box_frustum(15, 25);
    rv_partition_result r = frame_at(&s, &f, 0);
    assert_true(visible(&s, s.parts[0]) && visible(&s, s.parts[1]));
    /* The host's walk (or its occlusion test) culls the group as a whole. */
    assert_int_equal(rv_partition_begin_frame(s.world, NULL), RV_OK);
    assert_int_equal(rv_partition_group_hidden(s.world, s.group), RV_OK);
    assert_false(visible(&s, s.parts[0]));
    assert_int_equal(rv_partition_end_frame(s.world, NULL, 1, &r), RV_OK);
    assert_int_equal(r.counts.groups_hidden, 1);
    assert_int_equal(r.counts.groups_gated, 0);
    /* A reported-hidden group stays hidden even when the end re-gates with a frustum. */
    assert_int_equal(rv_partition_begin_frame(s.world, &f), RV_OK);
    assert_int_equal(rv_partition_group_hidden(s.world, s.group), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &f, 2, &r), RV_OK);
    assert_false(visible(&s, s.parts[1]));
    assert_int_equal(r.request_count, 0);
    /* Back in view: both parts re-enter. */
    r = frame_at(&s, &f, 3);
    assert_int_equal(r.counts.parts_reentered, 2);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 2);
    /* A group the host's walk never reaches counts as culled as a whole. */
    assert_int_equal(rv_partition_begin_frame(s.world, NULL), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, NULL, 4, &r), RV_OK);
    assert_false(visible(&s, s.parts[0]));
    assert_int_equal(r.counts.groups_hidden, 1);
    scene_fini(&s);
}

static void test_requests_are_one_per_group(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    rv_node g2 = new_node(s.world, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_partition_make_group(s.world, g2), RV_OK);
    rv_node q = new_node(s.world, g2, 0, 1);
    const uint64_t ql[1] = { 777 };
    assert_int_equal(rv_partition_set_part(s.world, q, ql, 1, false), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    frame_x(&s, 15, 25, 0);
    frame_x(&s, 500, 10, 1);
    rv_partition_result r = frame_x(&s, 15, 25, 2);
    assert_int_equal(r.request_count, 2);
    assert_int_equal(s.h.calls, 2);
    uint32_t parts_total = 0;
    for (uint32_t i = 0; i < r.request_count; i++) {
        parts_total += r.requests[i].part_count;
        bool first = rv_node_equal(r.requests[i].group, s.group);
        assert_true(first || rv_node_equal(r.requests[i].group, g2));
        assert_int_equal(r.requests[i].part_count, first ? 2 : 1);
        if (!first)
            assert_true(rv_node_equal(r.requests[i].parts[0], q));
    }
    assert_int_equal(parts_total, 3);
    scene_fini(&s);
}

static void test_requests_listed_in_result_without_callback(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, false);
    frame_x(&s, 0, 10, 0);
    frame_x(&s, 500, 10, 1);
    rv_partition_result r = frame_x(&s, 0, 10, 2);
    assert_int_equal(r.request_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[0]));
    assert_int_equal(s.h.calls, 0);
    scene_fini(&s);
}

/* ---- deferred activation -------------------------------------------------------------------- */

static void test_deferred_activation_requested_once_then_at_each_expiry_with_backoff_and_cap(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 100;
    desc.partition.lazy_activation_backoff = 2;
    desc.partition.lazy_activation_cap_ms = 500;
    scene s;
    scene_init_desc(&s, desc, 1, true, true);
    /* Hidden: a deferred part out of view is never asked for. */
    rv_partition_result r = frame_x(&s, 500, 10, 0);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    /* First sight at t = 1000 is its activation. */
    r = frame_x(&s, 0, 10, 1000);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.counts.activations_requested, 1);
    assert_int_equal(r.counts.parts_reentered, 0);
    assert_int_equal(s.h.calls, 1);
    /* Expiries: 1000 + 100, then +200, +400, +500 (cap), +500. */
    const double expiries[5] = { 1100, 1300, 1700, 2200, 2700 };
    double t = 1000;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r.tick.mode, RV_TICK_WAKE_AT);
        assert_true(r.tick.wake_at_ms == expiries[i]);
        assert_true(info_of(s.world, s.parts[0]).activation_expiry_ms == expiries[i]);
        /* Frames between asks (the host's own events) ask nothing. */
        for (double u = t + 1; u < expiries[i]; u += (expiries[i] - t) / 3) {
            r = frame_x(&s, 0, 10, u);
            assert_int_equal(r.request_count, 0);
        }
        r = frame_x(&s, 0, 10, expiries[i] - 0.5);
        assert_int_equal(r.request_count, 0);
        assert_int_equal(s.h.calls, (uint32_t)i + 1);
        r = frame_x(&s, 0, 10, expiries[i]);
        assert_int_equal(r.request_count, 1);
        assert_int_equal(r.counts.activations_requested, 1);
        assert_int_equal(s.h.calls, (uint32_t)i + 2);
        t = expiries[i];
    }
    assert_int_equal(info_of(s.world, s.parts[0]).activation_requests, 6);
    scene_fini(&s);
}

static void test_deferred_activation_never_asked_again_once_answered(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 100;
    scene s;
    scene_init_desc(&s, desc, 1, true, true);
    assert_int_equal(rv_partition_set_view_version(s.world, 3), RV_OK);
    rv_partition_result r = frame_x(&s, 0, 10, 0);
    assert_int_equal(r.request_count, 1);
    assert_false(info_of(s.world, s.parts[0]).active);
    /* Answered: every leaf committed for the current view version (ladders may be partial). */
    commit_part(&s, 0, 3, false);
    for (int f = 1; f < 20; f++) {
        s.h.busy = (f % 2) == 1; /* nothing is even held for it */
        r = frame_x(&s, 0, 10, 100.0 * f);
        assert_int_equal(r.request_count, 0);
        assert_int_equal(r.counts.parts_held, 0);
        assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    }
    s.h.busy = false;
    assert_true(info_of(s.world, s.parts[0]).active);
    assert_int_equal(s.h.calls, 1);
    /* Its later re-entries are ordinary resyncs, not activations. */
    frame_x(&s, 500, 10, 5000);
    r = frame_x(&s, 0, 10, 5001);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.counts.activations_requested, 0);
    scene_fini(&s);
}

static void test_deferred_part_answered_before_first_sight_is_not_asked(void **state)
{
    (void)state;
    scene s;
    rv_world_desc desc = {0};
    scene_init_desc(&s, desc, 1, true, true);
    commit_part(&s, 0, 0, false);
    rv_partition_result r = frame_x(&s, 0, 10, 0);
    assert_int_equal(r.request_count, 0);
    assert_true(info_of(s.world, s.parts[0]).active);
    scene_fini(&s);
}

static void test_deferred_activation_answered_while_held_is_not_sent(void **state)
{
    (void)state;
    scene s;
    rv_world_desc desc = {0};
    scene_init_desc(&s, desc, 1, true, true);
    s.h.busy = true;
    rv_partition_result r = frame_x(&s, 0, 10, 0);
    assert_int_equal(r.counts.parts_held, 1);
    commit_part(&s, 0, 0, false); /* the host activated it on its own */
    s.h.busy = false;
    r = frame_x(&s, 0, 10, 1);
    assert_int_equal(r.request_count, 0);
    assert_true(info_of(s.world, s.parts[0]).active);
    assert_int_equal(s.h.calls, 0);
    scene_fini(&s);
}

static void test_callback_that_never_answers_does_not_stop_later_requests(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 100;
    scene s;
    scene_init_desc(&s, desc, 2, true, false);
    rv_node d = new_node(s.world, s.group, 0, 1);
    const uint64_t dl[1] = { 5000 };
    assert_int_equal(rv_partition_set_part(s.world, d, dl, 1, true), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    /* The callback records and never commits anything. */
    uint32_t asks = 0, resyncs = 0;
    double t = 0;
    for (int cycle = 0; cycle < 4; cycle++) {
        rv_partition_result r = frame_x(&s, 0, 10, t);
        asks += r.counts.activations_requested;
        r = frame_x(&s, 30, 10, t + 1); /* part 0 and the deferred part hide, part 1 shows */
        r = frame_x(&s, 0, 10, t + 2);  /* part 0 re-enters */
        resyncs += r.counts.parts_reentered;
        asks += r.counts.activations_requested;
        t += 1000;
    }
    assert_int_equal(resyncs, 8); /* part 0 and the deferred part re-enter once per cycle */
    assert_true(asks >= 4);
    assert_true(s.h.calls >= 8);
    assert_false(info_of(s.world, d).active);
    scene_fini(&s);
}

/* ---- tick demand ----------------------------------------------------------------------------- */

static void test_tick_demand_in_each_state(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 250;
    scene s;
    scene_init_desc(&s, desc, 2, true, false);
    /* IDLE: nothing waits. */
    rv_partition_result r = frame_x(&s, 0, 10, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    /* CONTINUOUS: a visible resync waits (host busy) and request_reprocess is wired. */
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    r = frame_x(&s, 0, 10, 2);
    assert_int_equal(r.tick.mode, RV_TICK_CONTINUOUS);
    s.h.busy = false;
    r = frame_x(&s, 0, 10, 3);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    /* WAKE_AT: a deferred part's activation was asked; one wake at its expiry. */
    rv_node d = new_node(s.world, s.group, 0, 1);
    const uint64_t dl[1] = { 5000 };
    assert_int_equal(rv_partition_set_part(s.world, d, dl, 1, true), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    r = frame_x(&s, 0, 10, 10);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.tick.mode, RV_TICK_WAKE_AT);
    assert_true(r.tick.wake_at_ms == 260);
    /* CONTINUOUS wins over WAKE_AT while a resync waits. */
    frame_x(&s, 30, 10, 11);
    s.h.busy = true;
    r = frame_x(&s, 0, 10, 12);
    assert_int_equal(r.tick.mode, RV_TICK_CONTINUOUS);
    /* A deferred part out of view needs no wake at all. */
    s.h.busy = false;
    r = frame_x(&s, 500, 10, 13);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    scene_fini(&s);
}

static void test_tick_demand_idle_not_continuous_without_request_reprocess(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, false);
    frame_x(&s, 0, 10, 0);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    rv_partition_result r = frame_x(&s, 0, 10, 2);
    assert_int_equal(r.counts.parts_held, 1);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    s.h.busy = false;
    r = frame_x(&s, 0, 10, 3);
    assert_int_equal(r.request_count, 1); /* listed for the host to serve */
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    scene_fini(&s);
}

/* ---- frame order ------------------------------------------------------------------------------ */

static void test_lod_group_nested_in_a_part_sees_this_frames_cull(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    /* A LOD group below part 1 (the LOD pass would ask whether its subtree is culled). */
    rv_node lod = new_node(s.world, s.parts[1], 0.5f, 0.5f);
    rv_node level = new_node(s.world, lod, 0, 0.25f);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    frame_x(&s, 30, 10, 0);
    assert_false(hidden_node(s.world, level));

    /* Frame 2: the camera turns away. Right after begin, before any LOD work or the end,
     * the LOD group already reads this frame's cull. */
    rv_frustum away = box_frustum(0, 10);
    rv_partition_result r;
    assert_int_equal(rv_partition_begin_frame(s.world, &away), RV_OK);
    assert_true(hidden_node(s.world, lod));
    assert_true(hidden_node(s.world, level));
    assert_false(visible(&s, s.parts[1]));
    assert_int_equal(rv_partition_end_frame(s.world, &away, 1, &r), RV_OK);

    /* Frame 3, with the host's own walk: gate_group before descending shows it again. */
    rv_frustum back = box_frustum(30, 10);
    assert_int_equal(rv_partition_begin_frame(s.world, NULL), RV_OK);
    assert_true(hidden_node(s.world, level)); /* not gated yet this frame: the last decision */
    assert_int_equal(rv_partition_gate_group(s.world, s.group, &back), RV_OK);
    assert_false(hidden_node(s.world, level));
    assert_true(hidden_node(s.world, s.parts[0]));
    assert_int_equal(rv_partition_end_frame(s.world, NULL, 2, &r), RV_OK);
    assert_int_equal(r.counts.parts_reentered, 1);
    assert_int_equal(r.request_count, 1);
    scene_fini(&s);
}

static void test_end_regates_groups_revealed_after_begin(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    /* Group 2 sits out of view at begin. */
    rv_node g2 = new_node(s.world, RV_NODE_NONE, 300, -1);
    assert_int_equal(rv_partition_make_group(s.world, g2), RV_OK);
    rv_node q = new_node(s.world, g2, 0, 1);
    const uint64_t ql[1] = { 700 };
    assert_int_equal(rv_partition_set_part(s.world, q, ql, 1, false), RV_OK);
    /* Group 3 (occluded, say) the host reports hidden after begin. */
    rv_node g3 = new_node(s.world, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_partition_make_group(s.world, g3), RV_OK);
    rv_node o = new_node(s.world, g3, 0, 1);
    const uint64_t ol[1] = { 800 };
    assert_int_equal(rv_partition_set_part(s.world, o, ol, 1, false), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);

    rv_frustum f = box_frustum(0, 10);
    rv_partition_result r;
    assert_int_equal(rv_partition_begin_frame(s.world, &f), RV_OK);
    assert_false(visible(&s, q));
    assert_true(visible(&s, o));
    assert_int_equal(rv_partition_group_hidden(s.world, g3), RV_OK);
    /* The LOD pass reveals group 2 (moves it into view) and loads group 4 with a deferred
     * part that did not exist at begin. */
    const float here[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_position(s.world, g2, here), RV_OK);
    rv_node g4 = new_node(s.world, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_partition_make_group(s.world, g4), RV_OK);
    rv_node d = new_node(s.world, g4, 0, 1);
    const uint64_t dl[1] = { 900 };
    assert_int_equal(rv_partition_set_part(s.world, d, dl, 1, true), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &f, 0, &r), RV_OK);
    assert_true(visible(&s, q));
    assert_true(visible(&s, d));
    assert_false(visible(&s, o)); /* reported hidden: not re-gated */
    assert_int_equal(r.counts.groups_gated, 3);
    assert_int_equal(r.counts.groups_hidden, 1);
    /* The revealed deferred part's activation goes out in this very frame. */
    assert_int_equal(r.request_count, 1);
    assert_true(rv_node_equal(r.requests[0].group, g4));
    assert_true(rv_node_equal(r.requests[0].parts[0], d));
    assert_int_equal(r.counts.activations_requested, 1);
    scene_fini(&s);
}

/* The end keeps the begin's answer for a group its own sphere failed only while neither the
 * sphere nor the frustum changed: a different frustum at the end re-tests it. */
static void test_end_with_another_frustum_retests_groups_begin_tested_out(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    rv_frustum away = box_frustum(300, 10), here = box_frustum(0, 10);
    rv_partition_result r;
    assert_int_equal(rv_partition_begin_frame(s.world, &away), RV_OK);
    assert_false(visible(&s, s.parts[0]));
    assert_int_equal(rv_partition_end_frame(s.world, &here, 0, &r), RV_OK);
    assert_true(visible(&s, s.parts[0]));
    assert_int_equal(r.counts.groups_gated, 1);
    assert_int_equal(r.counts.parts_visible, 1);
    /* The same frustum at both ends: the group stays hidden, none of its parts is tested. */
    assert_int_equal(rv_partition_begin_frame(s.world, &away), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &away, 16, &r), RV_OK);
    assert_false(visible(&s, s.parts[0]));
    assert_int_equal(r.counts.groups_hidden, 1);
    assert_int_equal(r.counts.parts_tested, 0);
    scene_fini(&s);
}

/* A node already under a gated group that becomes a part after begin (no link changes in
 * between: only the part is new) is gated by the end's re-gate too. */
static void test_end_gates_a_child_made_a_part_after_begin(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    rv_frustum f = box_frustum(0, 10);
    rv_partition_result r;
    rv_node child = new_node(s.world, s.group, 2, 1);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_partition_begin_frame(s.world, &f), RV_OK);
    const uint64_t leaves[1] = { 4646 };
    assert_int_equal(rv_partition_set_part(s.world, child, leaves, 1, true), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &f, 0, &r), RV_OK);
    assert_true(visible(&s, child));
    assert_int_equal(r.request_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], child));
    scene_fini(&s);
}

static void test_end_gates_parts_added_to_a_group_gated_at_begin(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    rv_frustum f = box_frustum(0, 10);
    rv_partition_result r;
    assert_int_equal(rv_partition_begin_frame(s.world, &f), RV_OK);
    /* The LOD pass loads a new part into the group already gated by begin. */
    rv_node late = new_node(s.world, s.group, 2, 1);
    rv_node far = new_node(s.world, s.group, 200, 1);
    const uint64_t ll[1] = { 4242 }, fl[1] = { 4343 };
    assert_int_equal(rv_partition_set_part(s.world, late, ll, 1, true), RV_OK);
    assert_int_equal(rv_partition_set_part(s.world, far, fl, 1, true), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &f, 0, &r), RV_OK);
    assert_true(visible(&s, late));
    assert_false(visible(&s, far));
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], late));
    /* A part attached under the gated group after begin, and a gated part destroyed before
     * the end: the end gates the first and forgets the second. */
    rv_node loose = new_node(s.world, RV_NODE_NONE, 1, 1);
    const uint64_t lol[1] = { 4545 };
    assert_int_equal(rv_partition_set_part(s.world, loose, lol, 1, false), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    frame_at(&s, &f, 0.5);
    assert_int_equal(rv_partition_begin_frame(s.world, &f), RV_OK);
    assert_true(visible(&s, late));
    assert_int_equal(rv_node_attach(s.world, s.group, loose), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_node_destroy_subtree(s.world, late), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &f, 0.75, &r), RV_OK);
    assert_true(visible(&s, loose));
    assert_int_equal(r.counts.parts_visible, 2); /* part 0 and the attached one */
    /* With the host's own walk (no frustum at the end) an ungated part waits for the next gate. */
    rv_node later = new_node(s.world, s.group, 3, 1);
    const uint64_t ml[1] = { 4444 };
    assert_int_equal(rv_partition_begin_frame(s.world, NULL), RV_OK);
    assert_int_equal(rv_partition_gate_group(s.world, s.group, &f), RV_OK);
    assert_int_equal(rv_partition_set_part(s.world, later, ml, 1, false), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, NULL, 1, &r), RV_OK);
    assert_false(visible(&s, later));
    assert_false(info_of(s.world, later).ever_visible);
    frame_at(&s, &f, 2);
    assert_true(visible(&s, later));
    scene_fini(&s);
}

static void test_undeferring_a_waiting_part_drops_its_activation(void **state)
{
    (void)state;
    scene s;
    rv_world_desc desc = {0};
    scene_init_desc(&s, desc, 2, true, true);
    s.h.busy = true;
    rv_partition_result r = frame_x(&s, 15, 25, 0); /* both activations held */
    assert_int_equal(r.counts.parts_held, 2);
    const uint64_t l0[3] = { 1, 2, 3 };
    assert_int_equal(rv_partition_set_part(s.world, s.parts[0], l0, 3, false), RV_OK);
    assert_false(info_of(s.world, s.parts[0]).resync_waiting);
    for (int f = 1; f < 6; f++) {
        r = frame_x(&s, 15, 25, f);
        assert_int_equal(r.counts.parts_held, 1);
    }
    s.h.busy = false;
    r = frame_x(&s, 15, 25, 6);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[1]));
    scene_fini(&s);
}

/* A group (outer) whose part p1 holds a group (inner) with one part q, updated; the inner
 * group and its part made first so the gate cannot rely on creation order. */
static rv_world *nested_world(rv_node *outer, rv_node *p1, rv_node *q)
{
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    *outer = new_node(w, RV_NODE_NONE, 0, -1);
    *p1 = new_node(w, *outer, 0, -1);
    rv_node inner = new_node(w, *p1, 0, -1);
    *q = new_node(w, inner, 0, 1);
    const uint64_t l1[1] = { 1 }, l2[1] = { 2 };
    assert_int_equal(rv_partition_make_group(w, inner), RV_OK);
    assert_int_equal(rv_partition_set_part(w, *q, l2, 1, false), RV_OK);
    assert_int_equal(rv_partition_make_group(w, *outer), RV_OK);
    assert_int_equal(rv_partition_set_part(w, *p1, l1, 1, false), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    return w;
}

static void test_nested_group_under_hidden_part_is_hidden(void **state)
{
    (void)state;
    rv_node outer, p1, q;
    rv_world *w = nested_world(&outer, &p1, &q);
    rv_frustum f = box_frustum(0, 10);
    rv_partition_result r;
    assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
    assert_int_equal(rv_partition_end_frame(w, &f, 0, &r), RV_OK);
    bool v;
    assert_int_equal(rv_partition_part_frustum_visible(w, q, &v), RV_OK);
    assert_true(v);
    assert_int_equal(r.counts.groups_gated, 2);
    /* A slice that misses part 1 hides it, and the group nested in it as a whole. */
    const float lo[3] = { 50, 50, 50 }, hi[3] = { 60, 60, 60 };
    assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK);
    assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
    assert_int_equal(rv_partition_end_frame(w, &f, 1, &r), RV_OK);
    assert_int_equal(rv_partition_part_frustum_visible(w, p1, &v), RV_OK);
    assert_false(v);
    assert_int_equal(rv_partition_part_frustum_visible(w, q, &v), RV_OK);
    assert_false(v);
    assert_int_equal(r.counts.groups_gated, 1);
    assert_int_equal(r.counts.groups_hidden, 1);
    rv_world_destroy(w);
}

/* The host reports the outer group hidden (its occlusion test) after the inner one was
 * gated: by the gate's walk at begin (run 0), or by the host's own walk, which gates the
 * inner group and never the outer (run 1). The group nested in its part is hidden with it,
 * and both parts re-enter, asking for their resync, when it comes back. */
static void test_nested_group_is_hidden_with_the_group_a_host_hides(void **state)
{
    (void)state;
    for (int run = 0; run < 2; run++) {
        rv_node outer, p1, q, inner;
        rv_world *w = nested_world(&outer, &p1, &q);
        assert_int_equal(rv_node_parent(w, q, &inner), RV_OK);
        rv_frustum f = box_frustum(0, 10);
        const rv_frustum *gate_all = run == 0 ? &f : NULL;
        rv_partition_result r;
        bool v, hidden;
        assert_int_equal(rv_partition_begin_frame(w, gate_all), RV_OK);
        if (run == 1) {
            assert_int_equal(rv_partition_gate_group(w, outer, &f), RV_OK);
            assert_int_equal(rv_partition_gate_group(w, inner, &f), RV_OK);
        }
        assert_int_equal(rv_partition_end_frame(w, gate_all, 0, &r), RV_OK);
        assert_int_equal(rv_partition_begin_frame(w, gate_all), RV_OK);
        if (run == 1)
            assert_int_equal(rv_partition_gate_group(w, inner, &f), RV_OK);
        assert_int_equal(rv_partition_group_hidden(w, outer), RV_OK);
        assert_int_equal(rv_partition_part_frustum_visible(w, q, &v), RV_OK);
        assert_false(v); /* within the frame too */
        assert_int_equal(rv_partition_end_frame(w, gate_all, 16, &r), RV_OK);
        assert_int_equal(rv_partition_part_frustum_visible(w, p1, &v), RV_OK);
        assert_false(v);
        assert_int_equal(rv_partition_part_frustum_visible(w, q, &v), RV_OK);
        assert_false(v);
        assert_int_equal(rv_partition_node_hidden(w, q, &hidden), RV_OK);
        assert_true(hidden);
        assert_int_equal(r.counts.groups_hidden, 2);
        assert_int_equal(rv_partition_begin_frame(w, gate_all), RV_OK);
        if (run == 1) {
            assert_int_equal(rv_partition_gate_group(w, outer, &f), RV_OK);
            assert_int_equal(rv_partition_gate_group(w, inner, &f), RV_OK);
        }
        assert_int_equal(rv_partition_end_frame(w, gate_all, 32, &r), RV_OK);
        assert_int_equal(rv_partition_part_frustum_visible(w, q, &v), RV_OK);
        assert_true(v);
        assert_int_equal(r.counts.parts_reentered, 2);
        uint32_t asked = 0;
        for (uint32_t i = 0; i < r.request_count; i++)
            for (uint32_t k = 0; k < r.requests[i].part_count; k++)
                asked |= (rv_node_equal(r.requests[i].parts[k], p1) ? 1u : 0u) |
                         (rv_node_equal(r.requests[i].parts[k], q) ? 2u : 0u);
        assert_int_equal(asked, 3u);
        rv_world_destroy(w);
    }
}

/* ---- structure ------------------------------------------------------------------------------ */

static void test_destroyed_part_and_group_are_forgotten(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    frame_x(&s, 15, 25, 0);
    frame_x(&s, 500, 10, 1);
    s.h.busy = true;
    frame_x(&s, 15, 25, 2); /* both held */
    assert_int_equal(rv_node_destroy_subtree(s.world, s.parts[0]), RV_OK);
    s.h.busy = false;
    rv_partition_result r = frame_x(&s, 15, 25, 3);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], s.parts[1]));
    /* Its leaves are free for another part; its handle is stale. */
    rv_node again = new_node(s.world, s.group, 0, 1);
    const uint64_t old_leaves[3] = { 1, 2, 3 };
    assert_int_equal(rv_partition_set_part(s.world, again, old_leaves, 3, false), RV_OK);
    bool v;
    assert_int_equal(rv_partition_part_frustum_visible(s.world, s.parts[0], &v), RV_ERR_STALE_HANDLE);
    /* A destroyed group stops gating; re-rooted parts are no longer gated. */
    assert_int_equal(rv_node_destroy_reroot(s.world, s.group), RV_OK);
    assert_false(rv_partition_is_group(s.world, s.group));
    assert_true(rv_node_equal(info_of(s.world, s.parts[1]).group, RV_NODE_NONE));
    r = frame_x(&s, 15, 25, 4);
    assert_int_equal(r.counts.groups_gated, 0);
    assert_false(hidden_node(s.world, s.parts[1]));
    scene_fini(&s);
}

/* Removing a part moves the last part's record into its place: the moved part keeps its
 * place in the frame's lists, whether removed mid-frame (both gated and visible at the last
 * end) or between frames, and is judged as before. */
static void test_removing_a_part_keeps_the_others_judged(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 4, true);
    rv_partition_result r = frame_x(&s, 45, 50, 0); /* x -5 .. 95: all four */
    assert_int_equal(r.counts.parts_visible, 4);
    r = frame_x(&s, 500, 10, 1);
    assert_int_equal(r.counts.parts_visible, 0);
    r = frame_x(&s, 45, 50, 2);
    assert_int_equal(r.counts.parts_reentered, 4);
    /* Mid-frame: part 0 goes after every part was gated; the last part's record moves. */
    rv_frustum all = box_frustum(45, 50);
    assert_int_equal(rv_partition_begin_frame(s.world, &all), RV_OK);
    assert_int_equal(rv_partition_remove(s.world, s.parts[0]), RV_OK);
    assert_int_equal(rv_partition_end_frame(s.world, &all, 3, &r), RV_OK);
    assert_int_equal(r.counts.parts_visible, 3);
    assert_int_equal(r.counts.parts_reentered, 0);
    for (uint32_t k = 1; k < 4; k++)
        assert_true(visible(&s, s.parts[k]));
    /* Out of view and back: exactly the three re-enter, in one request. */
    r = frame_x(&s, 500, 10, 4);
    assert_int_equal(r.counts.parts_visible, 0);
    r = frame_x(&s, 45, 50, 5);
    assert_int_equal(r.counts.parts_reentered, 3);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 3);
    bool listed[4] = { false };
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t k = 1; k < 4; k++)
            listed[k] |= rv_node_equal(r.requests[0].parts[i], s.parts[k]);
    assert_true(listed[1] && listed[2] && listed[3]);
    /* Between frames: part 1 goes while visible at the last end; the others stay steady. */
    assert_int_equal(rv_partition_remove(s.world, s.parts[1]), RV_OK);
    r = frame_x(&s, 45, 50, 6);
    assert_int_equal(r.counts.parts_visible, 2);
    assert_int_equal(r.counts.parts_reentered, 0);
    assert_int_equal(r.request_count, 0);
    /* And hidden once more, the two left re-enter. */
    frame_x(&s, 500, 10, 7);
    r = frame_x(&s, 45, 50, 8);
    assert_int_equal(r.counts.parts_reentered, 2);
    assert_int_equal(r.requests[0].part_count, 2);
    scene_fini(&s);
}

static void test_remove_forgets_roles(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    assert_int_equal(rv_partition_remove(s.world, s.parts[0]), RV_OK);
    assert_int_equal(rv_partition_part_get_info(s.world, s.parts[0], &(rv_partition_part_info){0}),
                     RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_leaf_committed(s.world, 1, 0, true), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_leaf_committed(s.world, 101, 0, true), RV_OK);
    assert_int_equal(rv_partition_remove(s.world, s.parts[0]), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_remove(s.world, s.group), RV_OK);
    assert_false(rv_partition_is_group(s.world, s.group));
    rv_partition_result r = frame_x(&s, 30, 10, 0);
    assert_int_equal(r.counts.groups_gated, 0);
    scene_fini(&s);
}

static void test_leaf_state_survives_set_part_replacement(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 1, true);
    commit_part(&s, 0, 0, true);
    const uint64_t grown[4] = { 3, 1, 2, 4 };
    assert_int_equal(rv_partition_set_part(s.world, s.parts[0], grown, 4, false), RV_OK);
    rv_partition_part_info i = info_of(s.world, s.parts[0]);
    assert_int_equal(i.leaf_count, 4);
    assert_int_equal(i.leaves_complete, 3);
    /* A duplicate in the new list is refused and the old list kept. */
    const uint64_t dup[3] = { 1, 9, 1 };
    assert_int_equal(rv_partition_set_part(s.world, s.parts[0], dup, 3, false), RV_ERR_DUPLICATE);
    i = info_of(s.world, s.parts[0]);
    assert_int_equal(i.leaf_count, 4);
    assert_int_equal(i.leaves_complete, 3);
    assert_int_equal(rv_partition_leaf_committed(s.world, 4, 0, true), RV_OK);
    assert_int_equal(rv_partition_leaf_committed(s.world, 9, 0, true), RV_ERR_NOT_FOUND);
    /* On a world without a gate yet, a refused first part keeps nothing (not the gate). */
    rv_world *fresh;
    assert_int_equal(rv_world_create(NULL, &fresh), RV_OK);
    rv_node lone;
    assert_int_equal(rv_node_create(fresh, RV_NODE_NONE, &lone), RV_OK);
    rv_alloc_stats before = rv_world_alloc_stats(fresh);
    assert_int_equal(rv_partition_set_part(fresh, lone, dup, 3, false), RV_ERR_DUPLICATE);
    rv_alloc_stats after = rv_world_alloc_stats(fresh);
    assert_int_equal(after.bytes_live, before.bytes_live);
    assert_int_equal(after.allocations - after.frees, before.allocations - before.frees);
    assert_int_equal(rv_partition_set_part(fresh, lone, grown, 4, false), RV_OK);
    assert_true(rv_world_alloc_stats(fresh).bytes_live > before.bytes_live);
    rv_world_destroy(fresh);
    /* Toggling deferred: an active part turned deferred waits for activation again. */
    assert_int_equal(rv_partition_set_part(s.world, s.parts[0], grown, 4, true), RV_OK);
    assert_false(info_of(s.world, s.parts[0]).active);
    assert_int_equal(rv_partition_set_part(s.world, s.parts[0], grown, 4, false), RV_OK);
    assert_true(info_of(s.world, s.parts[0]).active);
    scene_fini(&s);
}

static void test_bad_input_rejected_with_codes(void **state)
{
    (void)state;
    scene s;
    scene_init(&s, 2, true);
    rv_world *w = s.world;
    rv_frustum f = box_frustum(0, 10);
    rv_partition_result r;
    bool v;
    const uint64_t leaves[2] = { 1, 2 };

    assert_int_equal(rv_partition_make_group(NULL, s.group), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_make_group(w, s.group), RV_ERR_DUPLICATE);
    assert_int_equal(rv_partition_set_part(w, s.parts[0], NULL, 2, false), RV_ERR_INVALID_ARG);
    /* A leaf of another part. */
    assert_int_equal(rv_partition_set_part(w, s.parts[1], leaves, 2, false), RV_ERR_DUPLICATE);
    assert_int_equal(info_of(w, s.parts[1]).leaf_count, 3);
    /* Stale and foreign handles. */
    rv_node gone = new_node(w, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_node_destroy_subtree(w, gone), RV_OK);
    assert_int_equal(rv_partition_make_group(w, gone), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_set_part(w, gone, NULL, 0, false), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_part_frustum_visible(w, gone, &v), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_node_hidden(w, gone, &v), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_remove(w, gone), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_make_group(w, RV_NODE_NONE), RV_ERR_STALE_HANDLE);
    rv_world *other;
    assert_int_equal(rv_world_create(NULL, &other), RV_OK);
    rv_node foreign = new_node(other, RV_NODE_NONE, 0, -1);
    assert_int_equal(rv_partition_set_part(w, foreign, NULL, 0, false), RV_ERR_STALE_HANDLE);
    assert_false(rv_partition_is_group(w, foreign));
    rv_world_destroy(other);
    /* Unknown part, leaf and group. */
    assert_int_equal(rv_partition_part_frustum_visible(w, s.group, &v), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_part_frustum_visible(w, s.parts[0], NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_leaf_committed(w, 424242, 0, true), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_leaf_dropped(w, 424242), RV_ERR_NOT_FOUND);
    /* Slices: NaN, infinity and inverted boxes are refused; the old slice stays. */
    const float lo[3] = { -100, -100, -100 }, hi[3] = { 5, 100, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, lo, hi), RV_OK);
    const float nan3[3] = { NAN, 0, 0 }, inf3[3] = { INFINITY, 0, 0 }, inv_hi[3] = { -200, 100, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, nan3, hi), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_set_committed_slice(w, lo, inf3), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_set_committed_slice(w, lo, inv_hi), RV_ERR_ORDER);
    assert_int_equal(rv_partition_set_committed_slice(w, NULL, hi), RV_ERR_INVALID_ARG);
    frame_x(&s, 15, 25, 0);
    assert_true(visible(&s, s.parts[0]));
    assert_false(visible(&s, s.parts[1])); /* still cut by the committed slice */
    /* Frame order. */
    assert_int_equal(rv_partition_end_frame(w, &f, 0, &r), RV_ERR_BAD_STATE);
    assert_int_equal(rv_partition_gate_group(w, s.group, &f), RV_ERR_BAD_STATE);
    assert_int_equal(rv_partition_group_hidden(w, s.group), RV_ERR_BAD_STATE);
    assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
    assert_int_equal(rv_partition_begin_frame(w, &f), RV_ERR_BAD_STATE);
    assert_int_equal(rv_partition_gate_group(w, s.parts[0], &f), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_partition_gate_group(w, s.group, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_gate_group(w, gone, &f), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_partition_end_frame(w, &f, NAN, &r), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_end_frame(w, &f, INFINITY, &r), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_end_frame(w, &f, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_end_frame(w, &f, 1, &r), RV_OK); /* the frame stayed open */
    /* Structural calls from inside request_reprocess are refused; reports are allowed. */
    frame_x(&s, 500, 10, 2);
    s.h.try_reentrant = true;
    r = frame_x(&s, 15, 25, 3);
    assert_int_equal(s.h.calls, 1);
    assert_int_equal(s.h.reentrant_result, RV_ERR_BAD_STATE);
    scene_fini(&s);

    /* An invalid desc is refused when the world is made, with the gate's code. */
    struct { float margin, timeout, backoff, cap; rv_result expect; } bad[] = {
        { -1, 0, 0, 0, RV_ERR_INVALID_ARG }, { NAN, 0, 0, 0, RV_ERR_NOT_FINITE },
        { INFINITY, 0, 0, 0, RV_ERR_NOT_FINITE }, { 0, -5, 0, 0, RV_ERR_INVALID_ARG },
        { 0, 0, 0.5f, 0, RV_ERR_INVALID_ARG }, { 0, 0, NAN, 0, RV_ERR_NOT_FINITE },
        { 0, 1000, 0, 500, RV_ERR_ORDER }, { 0, 0, 0, -1, RV_ERR_INVALID_ARG },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rv_world_desc desc = {0};
        desc.partition.frustum_margin = bad[i].margin;
        desc.partition.lazy_activation_timeout_ms = bad[i].timeout;
        desc.partition.lazy_activation_backoff = bad[i].backoff;
        desc.partition.lazy_activation_cap_ms = bad[i].cap;
        rv_world *bw = NULL;
        assert_int_equal(rv_world_create(&desc, &bw), bad[i].expect);
        assert_null(bw);
    }
    /* A long timeout with the default cap is not an ordering error. */
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 90000;
    rv_world *lw;
    assert_int_equal(rv_world_create(&desc, &lw), RV_OK);
    assert_int_equal(rv_partition_set_view_version(lw, 1), RV_OK);
    rv_world_destroy(lw);
}

/* An axis-aligned box [lo, hi] as a frustum. */
static rv_frustum aabb_frustum(const float lo[3], const float hi[3])
{
    rv_frustum f;
    memset(&f, 0, sizeof f);
    for (int a = 0; a < 3; a++) {
        f.planes[2 * a][a] = 1;
        f.planes[2 * a][3] = -lo[a];
        f.planes[2 * a + 1][a] = -1;
        f.planes[2 * a + 1][3] = hi[a];
    }
    f.plane_mask = 0x3f;
    return f;
}

/* docs/partition.md, "Worked example", row by row. */
static void test_worked_example_of_the_guide(void **state)
{
    (void)state;
    host h;
    memset(&h, 0, sizeof h);
    rv_world_desc desc = {0};
    desc.partition.request_reprocess = on_reprocess;
    desc.partition.is_update_in_progress = on_busy;
    desc.partition.user = &h;
    desc.partition.frustum_margin = 2.0f;
    rv_world *w;
    assert_int_equal(rv_world_create(&desc, &w), RV_OK);
    rv_node building, ground, upper;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &building), RV_OK);
    assert_int_equal(rv_node_create(w, building, &ground), RV_OK);
    assert_int_equal(rv_node_create(w, building, &upper), RV_OK);
    const float ground_c[3] = { 0, 2, 0 }, upper_c[3] = { 0, 8, 0 };
    assert_int_equal(rv_node_set_bounds(w, ground, ground_c, 5.0f), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, upper, upper_c, 4.0f), RV_OK);
    const uint64_t ground_leaves[] = { 1001, 1002, 1003 }, upper_leaves[] = { 2001, 2002 };
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    assert_int_equal(rv_partition_set_part(w, ground, ground_leaves, 3, false), RV_OK);
    assert_int_equal(rv_partition_set_part(w, upper, upper_leaves, 2, true), RV_OK);
    assert_int_equal(rv_partition_set_view_version(w, 1), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);

    const float lo[3] = { -50, -50, -50 }, low_hi[3] = { 50, 1.0f, 50 }, hi[3] = { 50, 50, 50 };
    const float away_lo[3] = { 500, 500, 500 }, away_hi[3] = { 600, 600, 600 };
    rv_frustum sees_ground = aabb_frustum(lo, low_hi); /* margin 2: upper (y >= 4) stays out */
    rv_frustum sees_both = aabb_frustum(lo, hi), away = aabb_frustum(away_lo, away_hi);
    rv_partition_result r;
#define FRAME(f, t) do { \
        assert_int_equal(rv_partition_begin_frame(w, &(f)), RV_OK); \
        assert_int_equal(rv_partition_end_frame(w, &(f), (t), &r), RV_OK); } while (0)
    bool v;
    FRAME(sees_ground, 0);
    assert_int_equal(rv_partition_part_frustum_visible(w, upper, &v), RV_OK);
    assert_false(v);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    FRAME(sees_both, 500);
    assert_int_equal(r.request_count, 1);
    assert_true(rv_node_equal(r.requests[0].parts[0], upper));
    assert_int_equal(r.tick.mode, RV_TICK_WAKE_AT);
    assert_true(r.tick.wake_at_ms == 2500);
    const float slice_lo[3] = { -100, -100, -100 }, slice_hi[3] = { 100, 3.5f, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, slice_lo, slice_hi), RV_OK);
    FRAME(sees_both, 900);
    assert_int_equal(rv_partition_part_frustum_visible(w, upper, &v), RV_OK);
    assert_false(v);
    FRAME(sees_both, 2500);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    FRAME(sees_both, 3000);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.tick.mode, RV_TICK_WAKE_AT);
    assert_true(r.tick.wake_at_ms == 7000);
    assert_int_equal(rv_partition_leaf_committed(w, 2001, 1, false), RV_OK);
    assert_int_equal(rv_partition_leaf_committed(w, 2002, 1, false), RV_OK);
    FRAME(sees_both, 3401);
    assert_int_equal(r.request_count, 0);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    FRAME(away, 7990);
    h.busy = true;
    FRAME(sees_both, 8000);
    assert_int_equal(r.counts.parts_held, 2);
    assert_int_equal(r.tick.mode, RV_TICK_CONTINUOUS);
    h.busy = false;
    FRAME(sees_both, 8016);
    assert_int_equal(r.request_count, 1);
    assert_int_equal(r.requests[0].part_count, 2);
    assert_int_equal(r.tick.mode, RV_TICK_IDLE);
    assert_int_equal(h.calls, 3);
    assert_int_equal(rv_partition_view_version(w), 1);
#undef FRAME
    rv_world_destroy(w);
}

/* ---- allocation ------------------------------------------------------------------------------ */

typedef struct sweep_obj {
    rv_world *world;
    rv_node nodes[4]; /* 0: group, 1, 2: parts (2 already set up), 3: spare */
} sweep_obj;

static void *sweep_setup(const rv_allocator *allocator, bool with_gate)
{
    sweep_obj *o = calloc(1, sizeof *o); /* the test's own memory, outside the counted allocator */
    assert_non_null(o);
    rv_world_desc desc = {0};
    desc.allocator = *allocator;
    assert_int_equal(rv_world_create(&desc, &o->world), RV_OK);
    o->nodes[0] = new_node(o->world, RV_NODE_NONE, 0, -1);
    for (int i = 1; i < 4; i++)
        o->nodes[i] = new_node(o->world, o->nodes[0], 30.0f * (float)i, 1);
    if (with_gate) {
        assert_int_equal(rv_partition_make_group(o->world, o->nodes[0]), RV_OK);
        const uint64_t l[2] = { 21, 22 };
        assert_int_equal(rv_partition_set_part(o->world, o->nodes[2], l, 2, false), RV_OK);
        assert_int_equal(rv_partition_leaf_committed(o->world, 21, 0, true), RV_OK);
    }
    return o;
}
static void *setup_empty(const rv_allocator *a) { return sweep_setup(a, false); }
static void *setup_gated(const rv_allocator *a) { return sweep_setup(a, true); }

static uint64_t sweep_fingerprint(void *obj)
{
    sweep_obj *o = obj;
    uint64_t h = rv_partition_view_version(o->world);
    for (int i = 0; i < 4; i++) {
        h = rvi_mix64(h ^ (uint64_t)rv_partition_is_group(o->world, o->nodes[i]));
        rv_partition_part_info info;
        rv_result r = rv_partition_part_get_info(o->world, o->nodes[i], &info);
        h = rvi_mix64(h ^ (uint64_t)r);
        if (r == RV_OK)
            h = rvi_mix64(h ^ info.leaf_count ^ (uint64_t)info.leaves_complete << 20 ^
                          (uint64_t)info.deferred << 40 ^ (uint64_t)info.active << 41);
    }
    return h;
}

static void sweep_teardown(void *obj)
{
    rv_world_destroy(((sweep_obj *)obj)->world);
    free(obj);
}

static rv_result call_make_group_first_use(void *obj)
{
    return rv_partition_make_group(((sweep_obj *)obj)->world, ((sweep_obj *)obj)->nodes[0]);
}

static rv_result call_set_part_first_use(void *obj)
{
    const uint64_t l[3] = { 1, 2, 3 };
    return rv_partition_set_part(((sweep_obj *)obj)->world, ((sweep_obj *)obj)->nodes[1], l, 3, true);
}

static rv_result call_set_part_new(void *obj)
{
    uint64_t l[40];
    for (int i = 0; i < 40; i++)
        l[i] = 1000 + (uint64_t)i;
    return rv_partition_set_part(((sweep_obj *)obj)->world, ((sweep_obj *)obj)->nodes[1], l, 40, false);
}

static rv_result call_set_part_replace(void *obj)
{
    uint64_t l[30];
    for (int i = 0; i < 30; i++)
        l[i] = 20 + (uint64_t)i; /* keeps 21 and 22 */
    return rv_partition_set_part(((sweep_obj *)obj)->world, ((sweep_obj *)obj)->nodes[2], l, 30, false);
}

static rv_result call_view_version_first_use(void *obj)
{
    return rv_partition_set_view_version(((sweep_obj *)obj)->world, 7);
}

static rv_result call_begin_first_use(void *obj)
{
    sweep_obj *o = obj;
    rv_frustum f = box_frustum(0, 10);
    rv_result r = rv_partition_begin_frame(o->world, &f);
    if (r != RV_OK)
        return r;
    rv_partition_result res;
    return rv_partition_end_frame(o->world, &f, 0, &res);
}

static void test_allocation_failures_leave_the_gate_unchanged(void **state)
{
    (void)state;
    const rvt_sweep sweeps[] = {
        { "make_group (first use)", setup_empty, call_make_group_first_use, sweep_fingerprint, sweep_teardown },
        { "set_part (first use)", setup_empty, call_set_part_first_use, sweep_fingerprint, sweep_teardown },
        { "set_part (new part)", setup_gated, call_set_part_new, sweep_fingerprint, sweep_teardown },
        { "set_part (replace leaves)", setup_gated, call_set_part_replace, sweep_fingerprint, sweep_teardown },
        { "set_view_version (first use)", setup_empty, call_view_version_first_use, sweep_fingerprint, sweep_teardown },
        { "begin_frame (first use)", setup_empty, call_begin_first_use, sweep_fingerprint, sweep_teardown },
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
        uint64_t n = rvt_run_sweep(&sweeps[i]);
        assert_true(n >= 1); /* each scenario really allocates */
    }
}

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.partition.lazy_activation_timeout_ms = 50;
    scene s;
    scene_init_desc(&s, desc, 6, true, false);
    rv_node d = new_node(s.world, s.group, 60, 1);
    const uint64_t dl[2] = { 9001, 9002 };
    assert_int_equal(rv_partition_set_part(s.world, d, dl, 2, true), RV_OK);
    const float lo[3] = { -1000, -1000, -1000 }, hi[3] = { 1000, 1000, 1000 };
    assert_int_equal(rv_partition_set_committed_slice(s.world, lo, hi), RV_OK);
    assert_int_equal(rv_update_world(s.world), RV_OK);
    frame_x(&s, 0, 10, 0); /* warm-up */
    rv_alloc_stats before = rv_world_alloc_stats(s.world);
    uint32_t requested = 0, reentered = 0;
    for (int f = 1; f < 300; f++) {
        s.h.busy = (f % 7) == 0;
        rv_partition_result r = frame_x(&s, (float)(f % 6) * 30.0f, 20, 10.0 * f);
        requested += r.counts.parts_requested;
        reentered += r.counts.parts_reentered;
        if (f % 50 == 0)
            commit_part(&s, (uint32_t)(f / 50) % 6, 0, true);
    }
    rv_alloc_stats after = rv_world_alloc_stats(s.world);
    assert_true(requested > 50 && reentered > 50); /* the frames did real work */
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.reallocations, before.reallocations);
    assert_int_equal(after.frees, before.frees);
    scene_fini(&s);
}

/* ---- property: the gate never hides what a slow reference sees --------------------------------- */

/* A host's frustum is checked as rv_visit_visible checks it: a plane of the mask that is
 * not finite, or mask bits above the six planes, is refused and changes nothing. */
static void test_gate_refuses_a_bad_frustum_and_changes_nothing(void **state)
{
    (void)state;
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node g = new_node(w, RV_NODE_NONE, 0, -1), part = new_node(w, g, 0, 1);
    assert_int_equal(rv_partition_make_group(w, g), RV_OK);
    assert_int_equal(rv_partition_set_part(w, part, NULL, 0, false), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_frustum good = box_frustum_xyz(0, 10, 10), nan_plane = good, extra_bit = good;
    nan_plane.planes[3][2] = NAN;
    extra_bit.plane_mask |= 1u << 6;
    rv_partition_result r;
    memset(&r, 0x5a, sizeof r);
    assert_int_equal(rv_partition_begin_frame(w, &nan_plane), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_begin_frame(w, &extra_bit), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_end_frame(w, NULL, 0, &r), RV_ERR_BAD_STATE); /* none begun */
    assert_int_equal(rv_partition_begin_frame(w, NULL), RV_OK);
    assert_int_equal(rv_partition_gate_group(w, g, &nan_plane), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_gate_group(w, g, &extra_bit), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_partition_end_frame(w, &nan_plane, 0, &r), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_partition_end_frame(w, &extra_bit, 0, &r), RV_ERR_INVALID_ARG);
    assert_int_equal(r.request_count, 0x5a5a5a5au); /* *out untouched */
    assert_int_equal(rv_partition_gate_group(w, g, &good), RV_OK); /* the frame is still open */
    assert_int_equal(rv_partition_end_frame(w, &good, 0, &r), RV_OK);
    bool v;
    assert_int_equal(rv_partition_part_frustum_visible(w, part, &v), RV_OK);
    assert_true(v);
    rv_world_destroy(w);
}

/* Far from the origin (1e5 to 4e6 units), a part whose world bounds (rv_node_world_bounds)
 * meet the exact frustum of a host's view (its planes in double from the float matrix) by a
 * hair is frustum-visible after the gate's own walk, given the frustum
 * rv_frustum_from_view_projection makes or the one rv_frame publishes, as after rv_frame:
 * the gate allows for the planes' rounding there as the frame's walk does. */
static void test_gate_keeps_a_part_tangent_to_the_frustum_far_from_the_origin(void **state)
{
    (void)state;
    uint64_t seed = 0xFA4;
    uint32_t tangent = 0;
    for (int trial = 0; trial < RVT_HEAVY(3000, 600); trial++) {
        float scale = powf(10.0f, rvt_uniform(&seed, 5.0f, 6.6f));
        float eye[3] = { rvt_uniform(&seed, -1, 1) * scale, rvt_uniform(&seed, -100, 100),
                         rvt_uniform(&seed, -1, 1) * scale };
        float yaw = rvt_uniform(&seed, -3.1f, 3.1f), c = cosf(yaw), sn = sinf(yaw);
        /* View: yaw about y, then the eye moved to the origin; projection: GL, fovy 60. */
        float view[16] = { c, 0, sn, 0, 0, 1, 0, 0, -sn, 0, c, 0, 0, 0, 0, 1 };
        for (int r = 0; r < 3; r++)
            view[12 + r] = -(view[r] * eye[0] + view[4 + r] * eye[1] + view[8 + r] * eye[2]);
        const float proj[16] = { 0.974279f, 0, 0, 0, 0, 1.732051f, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
        float vp[16];
        double plane[6][4];
        for (int col = 0; col < 4; col++)
            for (int r = 0; r < 4; r++) {
                double a = 0;
                for (int k = 0; k < 4; k++)
                    a += (double)proj[k * 4 + r] * view[col * 4 + k];
                vp[col * 4 + r] = (float)a;
            }
        for (int k = 0; k < 4; k++) {
            double x = (double)vp[k * 4 + 0], y = (double)vp[k * 4 + 1], z = (double)vp[k * 4 + 2],
                   w = (double)vp[k * 4 + 3];
            double q[6] = { w + x, w - x, w + y, w - y, w + z, w - z };
            for (int i = 0; i < 6; i++)
                plane[i][k] = q[i];
        }
        for (int i = 0; i < 6; i++) {
            double n = sqrt(plane[i][0] * plane[i][0] + plane[i][1] * plane[i][1] + plane[i][2] * plane[i][2]);
            for (int k = 0; k < 4; k++)
                plane[i][k] /= n;
        }
        /* A part of radius r whose centre lies r - hair outside one of the four side planes,
         * some way in front of the eye. */
        int side = (int)(rvt_next(&seed) % 4);
        double fwd[3] = { -sn, 0, -c }, dist = rvt_uniform(&seed, 20, 400);
        double at[3] = { eye[0] + fwd[0] * dist, eye[1] + fwd[1] * dist, eye[2] + fwd[2] * dist };
        double on = plane[side][0] * at[0] + plane[side][1] * at[1] + plane[side][2] * at[2] + plane[side][3];
        float r = rvt_uniform(&seed, 0.5f, 5.0f), hair = rvt_uniform(&seed, -1.5f, 0.1f);
        double push = on + (double)r - (double)hair; /* move the point to distance hair - r */
        double centre[3];
        for (int a = 0; a < 3; a++)
            centre[a] = at[a] - plane[side][a] * push;
        rv_world *w;
        assert_int_equal(rv_world_create(NULL, &w), RV_OK);
        float gpos[3] = { (float)centre[0], (float)centre[1], (float)centre[2] };
        rv_node g = RV_NODE_NONE, part = RV_NODE_NONE;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &g), RV_OK);
        assert_int_equal(rv_node_set_position(w, g, gpos), RV_OK);
        assert_int_equal(rv_node_create(w, g, &part), RV_OK);
        const float zero[3] = { 0, 0, 0 };
        assert_int_equal(rv_node_set_bounds(w, part, zero, r), RV_OK);
        assert_int_equal(rv_partition_make_group(w, g), RV_OK);
        assert_int_equal(rv_partition_set_part(w, part, NULL, 0, false), RV_OK);
        assert_int_equal(rv_update_world(w), RV_OK);
        rv_frustum f;
        if (trial % 2) {
            assert_int_equal(rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &f), RV_OK);
        } else { /* the frustum a world's frame culls by and publishes */
            rv_world *fw;
            assert_int_equal(rv_world_create(NULL, &fw), RV_OK);
            rv_view v;
            memset(&v, 0, sizeof v);
            v.view = view;
            v.projection = proj;
            v.viewport_width = 1280;
            v.viewport_height = 720;
            rv_frame_view out;
            assert_int_equal(rv_frame(fw, &v, &out), RV_OK);
            f = out.frustum;
            rv_world_destroy(fw);
        }
        rv_partition_result res;
        assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
        assert_int_equal(rv_partition_end_frame(w, &f, 0, &res), RV_OK);
        /* The world bounds against every exact plane. */
        float wb[4];
        assert_int_equal(rv_node_world_bounds(w, part, wb), RV_OK);
        bool meets = true;
        for (int i = 0; i < 6; i++)
            if (plane[i][0] * wb[0] + plane[i][1] * wb[1] + plane[i][2] * wb[2] + plane[i][3] < -(double)wb[3])
                meets = false;
        bool visible;
        assert_int_equal(rv_partition_part_frustum_visible(w, part, &visible), RV_OK);
        if (meets) {
            assert_true(visible);
            tangent++;
        }
        rv_world_destroy(w);
    }
    assert_true(tangent > RVT_HEAVY(300, 60)); /* a fair share of the parts meet it */
}

/* Reference: a part must be visible when some point of its sphere lies inside the frustum
 * padded by the margin (every plane's distance >= -margin) and inside the slice box. Points
 * are sampled (centre, axis extremes, random interior); the gate may keep more (it is
 * conservative), and it must hide a part that is far outside either. */
static void test_gate_never_hides_a_part_the_reference_sees(void **state)
{
    (void)state;
    uint64_t seed = 0x5EED6;
    const int worlds = RVT_HEAVY(200, 40);
    for (int wi = 0; wi < worlds; wi++) {
        rv_world_desc desc = {0};
        desc.partition.frustum_margin = rvt_uniform(&seed, 0, 3);
        rv_world *w;
        assert_int_equal(rv_world_create(&desc, &w), RV_OK);
        rv_node g = new_node(w, RV_NODE_NONE, 0, -1);
        assert_int_equal(rv_partition_make_group(w, g), RV_OK);
        enum { N = 24 };
        rv_node parts[N];
        float spheres[N][4];
        for (int k = 0; k < N; k++) {
            spheres[k][0] = rvt_uniform(&seed, -30, 30);
            spheres[k][1] = rvt_uniform(&seed, -30, 30);
            spheres[k][2] = rvt_uniform(&seed, -30, 30);
            spheres[k][3] = rvt_uniform(&seed, 0, 6);
            assert_int_equal(rv_node_create(w, g, &parts[k]), RV_OK);
            assert_int_equal(rv_node_set_bounds(w, parts[k], spheres[k], spheres[k][3]), RV_OK);
            assert_int_equal(rv_partition_set_part(w, parts[k], NULL, 0, false), RV_OK);
        }
        assert_int_equal(rv_update_world(w), RV_OK);
        float sl_lo[3], sl_hi[3];
        bool sliced = (wi % 2) == 0;
        for (int a = 0; a < 3; a++) {
            float x = rvt_uniform(&seed, -25, 25), y = rvt_uniform(&seed, -25, 25);
            sl_lo[a] = x < y ? x : y;
            sl_hi[a] = x < y ? y : x;
        }
        if (sliced)
            assert_int_equal(rv_partition_set_committed_slice(w, sl_lo, sl_hi), RV_OK);
        rv_frustum f = box_frustum_xyz(rvt_uniform(&seed, -20, 20), rvt_uniform(&seed, 2, 15),
                                       rvt_uniform(&seed, 2, 15));
        rv_partition_result r;
        assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
        assert_int_equal(rv_partition_end_frame(w, &f, 0, &r), RV_OK);
        float m = desc.partition.frustum_margin;
        for (int k = 0; k < N; k++) {
            bool v;
            assert_int_equal(rv_partition_part_frustum_visible(w, parts[k], &v), RV_OK);
            /* Sample points of the sphere. */
            bool seen = false;
            for (int t = 0; t < 64 && !seen; t++) {
                float p[3];
                if (t == 0) {
                    memcpy(p, spheres[k], sizeof p);
                } else if (t <= 6) {
                    memcpy(p, spheres[k], sizeof p);
                    p[(t - 1) / 2] += ((t - 1) % 2 ? -1.0f : 1.0f) * spheres[k][3] * 0.999f;
                } else {
                    float d[3], len2;
                    do {
                        for (int a = 0; a < 3; a++)
                            d[a] = rvt_uniform(&seed, -1, 1);
                        len2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    } while (len2 > 1.0f);
                    for (int a = 0; a < 3; a++)
                        p[a] = spheres[k][a] + d[a] * spheres[k][3] * 0.999f;
                }
                bool in_frustum = true;
                for (int pl = 0; pl < 6; pl++) {
                    const float *q = f.planes[pl];
                    if (q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3] < -m)
                        in_frustum = false;
                }
                bool in_slice = true;
                if (sliced)
                    for (int a = 0; a < 3; a++)
                        if (p[a] < sl_lo[a] || p[a] > sl_hi[a])
                            in_slice = false;
                seen = in_frustum && in_slice;
            }
            if (seen)
                assert_true(v);
            /* Far outside the padded frustum (by more than the radius plus a metre): hidden. */
            for (int pl = 0; pl < 6; pl++) {
                const float *q = f.planes[pl];
                float dist = q[0] * spheres[k][0] + q[1] * spheres[k][1] + q[2] * spheres[k][2] + q[3];
                if (dist < -(spheres[k][3] + m + 1.0f))
                    assert_false(v);
            }
        }
        rv_world_destroy(w);
    }
}

/* ---- property: exact agreement with a flat reference over random walks -------------------- */

/* The gate's shortcuts (a group tested once for all its parts, plane masking, the slice test
 * skipped under a group wholly inside it, judging only the parts that can have changed) must
 * decide exactly what a flat loop decides part by part: a part is visible when its group is
 * (the group's sphere meets the padded frustum and the part it is nested in, if any, is
 * visible) and its own sphere meets the padded frustum and the slice; a re-entering part
 * that is not satisfied is requested. Random nested worlds, moving groups, random convex
 * frusta (some planes dropped), the slice set and cleared, the gate walking by itself (with
 * and without the end's re-gate) or the host walking. */
enum { FLAT_GROUPS = 10, FLAT_PER_GROUP = 5, FLAT_PARTS = FLAT_GROUPS * FLAT_PER_GROUP };

typedef struct flat_world {
    rv_world *world;
    rv_node groups[FLAT_GROUPS];
    int enclosing[FLAT_GROUPS]; /* part index the group is nested in, or -1 */
    rv_node parts[FLAT_PARTS];  /* group g's parts at g * FLAT_PER_GROUP + k */
    bool satisfied[FLAT_PARTS];
    uint8_t seen[FLAT_PARTS];   /* 0 never, 1 visible, 2 hidden */
    bool group_visible[FLAT_GROUPS];
    bool part_visible[FLAT_PARTS];
    float margin;
    bool sliced;
    float slice_lo[3], slice_hi[3];
} flat_world;

static void flat_build(flat_world *fw, uint64_t *seed)
{
    memset(fw, 0, sizeof *fw);
    rv_world_desc desc = {0};
    fw->margin = rvt_uniform(seed, 0, 4);
    desc.partition.frustum_margin = fw->margin;
    assert_int_equal(rv_world_create(&desc, &fw->world), RV_OK);
    rv_world *w = fw->world;
    for (int g = 0; g < FLAT_GROUPS; g++) {
        fw->enclosing[g] = -1;
        rv_node parent = RV_NODE_NONE;
        if (g >= 3 && rvt_next(seed) % 2) {
            fw->enclosing[g] = (int)(rvt_next(seed) % (uint64_t)(g * FLAT_PER_GROUP));
            parent = fw->parts[fw->enclosing[g]];
            if (rvt_next(seed) % 3 == 0) /* not directly under the part */
                assert_int_equal(rv_node_create(w, parent, &parent), RV_OK);
        }
        assert_int_equal(rv_node_create(w, parent, &fw->groups[g]), RV_OK);
        const float at[3] = { rvt_uniform(seed, -60, 60), rvt_uniform(seed, -20, 20),
                              rvt_uniform(seed, -60, 60) };
        assert_int_equal(rv_node_set_position(w, fw->groups[g], at), RV_OK);
        assert_int_equal(rv_partition_make_group(w, fw->groups[g]), RV_OK);
        for (int k = 0; k < FLAT_PER_GROUP; k++) {
            int i = g * FLAT_PER_GROUP + k;
            assert_int_equal(rv_node_create(w, fw->groups[g], &fw->parts[i]), RV_OK);
            if (rvt_next(seed) % 10) { /* one part in ten has no bounds: always visible */
                const float c[3] = { rvt_uniform(seed, -12, 12), rvt_uniform(seed, -12, 12),
                                     rvt_uniform(seed, -12, 12) };
                assert_int_equal(rv_node_set_bounds(w, fw->parts[i], c, rvt_uniform(seed, 0, 5)), RV_OK);
            }
            const uint64_t leaves[2] = { 1000u + 2u * (uint64_t)i, 1001u + 2u * (uint64_t)i };
            assert_int_equal(rv_partition_set_part(w, fw->parts[i], leaves, 2, false), RV_OK);
            fw->satisfied[i] = rvt_next(seed) % 3 == 0;
            for (int l = 0; fw->satisfied[i] && l < 2; l++)
                assert_int_equal(rv_partition_leaf_committed(w, leaves[l], 0, true), RV_OK);
        }
    }
}

/* A random convex region: six planes at random orientations around a random point; now and
 * then some planes are dropped from the mask. */
static rv_frustum flat_frustum(uint64_t *seed)
{
    rv_frustum f;
    memset(&f, 0, sizeof f);
    const float q[3] = { rvt_uniform(seed, -50, 50), rvt_uniform(seed, -20, 20), rvt_uniform(seed, -50, 50) };
    for (int i = 0; i < 6; i++) {
        float n[3], len2;
        do {
            for (int a = 0; a < 3; a++)
                n[a] = rvt_uniform(seed, -1, 1);
            len2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
        } while (len2 < 0.05f || len2 > 1.0f);
        float len = sqrtf(len2), h = rvt_uniform(seed, 3, 50);
        for (int a = 0; a < 3; a++)
            f.planes[i][a] = n[a] / len;
        f.planes[i][3] = h - (f.planes[i][0] * q[0] + f.planes[i][1] * q[1] + f.planes[i][2] * q[2]);
    }
    f.plane_mask = rvt_next(seed) % 6 == 0 ? (uint32_t)(rvt_next(seed) & 0x3f) : 0x3fu;
    return f;
}

static bool flat_sphere_passes(const flat_world *fw, const rv_frustum *f, rv_node node, bool slice)
{
    float s[4];
    assert_int_equal(rv_node_world_bounds(fw->world, node, s), RV_OK);
    if (!(s[3] >= 0.0f))
        return true;
    if (rv_frustum_classify_sphere(f, s, s[3] + fw->margin) == RV_OUTSIDE)
        return false;
    if (!slice || !fw->sliced)
        return true;
    double d2 = 0.0;
    for (int a = 0; a < 3; a++) {
        double c = s[a], e = 0.0;
        if (c < fw->slice_lo[a])
            e = fw->slice_lo[a] - c;
        else if (c > fw->slice_hi[a])
            e = c - fw->slice_hi[a];
        d2 += e * e;
    }
    return d2 <= (double)s[3] * s[3];
}

/* The flat decision of every group and part (groups nest only in parts of earlier groups). */
static void flat_decide(flat_world *fw, const rv_frustum *f)
{
    for (int g = 0; g < FLAT_GROUPS; g++) {
        int e = fw->enclosing[g];
        bool above = e < 0 || fw->part_visible[e];
        fw->group_visible[g] = above && flat_sphere_passes(fw, f, fw->groups[g], false);
        for (int k = 0; k < FLAT_PER_GROUP; k++) {
            int i = g * FLAT_PER_GROUP + k;
            fw->part_visible[i] = fw->group_visible[g] && flat_sphere_passes(fw, f, fw->parts[i], true);
        }
    }
}

static int flat_part_index(const flat_world *fw, rv_node n)
{
    for (int i = 0; i < FLAT_PARTS; i++)
        if (fw->parts[i].id == n.id)
            return i;
    return -1;
}

static void test_gate_decides_exactly_what_a_flat_loop_decides(void **state)
{
    (void)state;
    uint64_t seed = 0xF1A7;
    const int worlds = RVT_HEAVY(300, 40), frames = 40;
    uint64_t visible_total = 0, hidden_total = 0, requested_total = 0;
    for (int wi = 0; wi < worlds; wi++) {
        flat_world fw;
        flat_build(&fw, &seed);
        rv_world *w = fw.world;
        for (int fi = 0; fi < frames; fi++) {
            if (rvt_next(&seed) % 4 == 0) {
                int g = (int)(rvt_next(&seed) % FLAT_GROUPS);
                const float at[3] = { rvt_uniform(&seed, -60, 60), rvt_uniform(&seed, -20, 20),
                                      rvt_uniform(&seed, -60, 60) };
                assert_int_equal(rv_node_set_position(w, fw.groups[g], at), RV_OK);
            }
            if (rvt_next(&seed) % 5 == 0) {
                fw.sliced = !fw.sliced;
                for (int a = 0; a < 3; a++) {
                    float x = rvt_uniform(&seed, -60, 60), y = rvt_uniform(&seed, -60, 60);
                    fw.slice_lo[a] = x < y ? x : y;
                    fw.slice_hi[a] = x < y ? y : x;
                }
                if (fw.sliced)
                    assert_int_equal(rv_partition_set_committed_slice(w, fw.slice_lo, fw.slice_hi), RV_OK);
                else
                    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
            }
            assert_int_equal(rv_update_world(w), RV_OK);
            rv_frustum f = flat_frustum(&seed);
            flat_decide(&fw, &f);
            rv_partition_result r;
            int mode = (int)(rvt_next(&seed) % 3);
            if (mode < 2) { /* the gate walks; mode 0 re-gates at the end as well */
                assert_int_equal(rv_partition_begin_frame(w, &f), RV_OK);
                assert_int_equal(rv_partition_end_frame(w, mode == 0 ? &f : NULL, 16.0 * fi, &r), RV_OK);
            } else { /* the host walks: outer groups first, gating the visible ones */
                assert_int_equal(rv_partition_begin_frame(w, NULL), RV_OK);
                for (int g = 0; g < FLAT_GROUPS; g++)
                    if (fw.group_visible[g])
                        assert_int_equal(rv_partition_gate_group(w, fw.groups[g], &f), RV_OK);
                    else if (rvt_next(&seed) % 2)
                        assert_int_equal(rv_partition_group_hidden(w, fw.groups[g]), RV_OK);
                assert_int_equal(rv_partition_end_frame(w, NULL, 16.0 * fi, &r), RV_OK);
            }
            bool requested[FLAT_PARTS] = {0};
            for (uint32_t q = 0; q < r.request_count; q++)
                for (uint32_t k = 0; k < r.requests[q].part_count; k++) {
                    int i = flat_part_index(&fw, r.requests[q].parts[k]);
                    assert_true(i >= 0);
                    assert_false(requested[i]);
                    requested[i] = true;
                    assert_int_equal(r.requests[q].group.id, fw.groups[i / FLAT_PER_GROUP].id);
                }
            uint32_t visible_count = 0, reentered = 0;
            for (int i = 0; i < FLAT_PARTS; i++) {
                bool v;
                assert_int_equal(rv_partition_part_frustum_visible(w, fw.parts[i], &v), RV_OK);
                assert_int_equal(v, fw.part_visible[i]);
                bool reentry = fw.part_visible[i] && fw.seen[i] == 2;
                assert_int_equal(requested[i], reentry && !fw.satisfied[i]);
                visible_count += fw.part_visible[i];
                reentered += reentry;
                requested_total += requested[i];
                if (fw.part_visible[i])
                    fw.seen[i] = 1;
                else if (fw.seen[i] == 1)
                    fw.seen[i] = 2;
            }
            assert_int_equal(r.counts.parts_visible, visible_count);
            assert_int_equal(r.counts.parts_reentered, reentered);
            visible_total += visible_count;
            hidden_total += FLAT_PARTS - visible_count;
        }
        rv_world_destroy(w);
    }
    /* The walks saw both outcomes and asked for resyncs. */
    assert_true(visible_total > 100 && hidden_total > 100 && requested_total > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_part_outside_padded_frustum_is_hidden_and_flagged),
        cmocka_unit_test(test_margin_keeps_part_just_outside_plain_frustum_visible),
        cmocka_unit_test(test_part_outside_committed_slice_hidden_inside_visible_no_slice_all_pass),
        cmocka_unit_test(test_part_with_empty_bounds_counts_as_visible),
        cmocka_unit_test(test_first_visibility_is_not_a_reentry),
        cmocka_unit_test(test_reentry_requests_exactly_that_part),
        cmocka_unit_test(test_reentries_on_consecutive_frames_coalesce_into_one_request),
        cmocka_unit_test(test_requests_held_while_host_busy_and_flushed_the_frame_it_is_not),
        cmocka_unit_test(test_held_request_dropped_when_part_hides_again),
        cmocka_unit_test(test_no_request_when_all_leaves_committed_with_complete_ladder),
        cmocka_unit_test(test_request_when_a_leaf_ladder_is_incomplete_or_its_version_old),
        cmocka_unit_test(test_readiness_is_rechecked_at_the_flush),
        cmocka_unit_test(test_view_version_unchanged_by_every_resync),
        cmocka_unit_test(test_group_culled_as_a_whole_hides_its_parts_which_reenter),
        cmocka_unit_test(test_requests_are_one_per_group),
        cmocka_unit_test(test_requests_listed_in_result_without_callback),
        cmocka_unit_test(test_deferred_activation_requested_once_then_at_each_expiry_with_backoff_and_cap),
        cmocka_unit_test(test_deferred_activation_never_asked_again_once_answered),
        cmocka_unit_test(test_deferred_part_answered_before_first_sight_is_not_asked),
        cmocka_unit_test(test_deferred_activation_answered_while_held_is_not_sent),
        cmocka_unit_test(test_callback_that_never_answers_does_not_stop_later_requests),
        cmocka_unit_test(test_tick_demand_in_each_state),
        cmocka_unit_test(test_tick_demand_idle_not_continuous_without_request_reprocess),
        cmocka_unit_test(test_lod_group_nested_in_a_part_sees_this_frames_cull),
        cmocka_unit_test(test_end_regates_groups_revealed_after_begin),
        cmocka_unit_test(test_end_gates_parts_added_to_a_group_gated_at_begin),
        cmocka_unit_test(test_end_gates_a_child_made_a_part_after_begin),
        cmocka_unit_test(test_end_with_another_frustum_retests_groups_begin_tested_out),
        cmocka_unit_test(test_undeferring_a_waiting_part_drops_its_activation),
        cmocka_unit_test(test_nested_group_under_hidden_part_is_hidden),
        cmocka_unit_test(test_nested_group_is_hidden_with_the_group_a_host_hides),
        cmocka_unit_test(test_destroyed_part_and_group_are_forgotten),
        cmocka_unit_test(test_removing_a_part_keeps_the_others_judged),
        cmocka_unit_test(test_remove_forgets_roles),
        cmocka_unit_test(test_leaf_state_survives_set_part_replacement),
        cmocka_unit_test(test_bad_input_rejected_with_codes),
        cmocka_unit_test(test_worked_example_of_the_guide),
        cmocka_unit_test(test_allocation_failures_leave_the_gate_unchanged),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_gate_refuses_a_bad_frustum_and_changes_nothing),
        cmocka_unit_test(test_gate_keeps_a_part_tangent_to_the_frustum_far_from_the_origin),
        cmocka_unit_test(test_gate_never_hides_a_part_the_reference_sees),
        cmocka_unit_test(test_gate_decides_exactly_what_a_flat_loop_decides),
    };
    return cmocka_run_group_tests_name("partition", tests, NULL, NULL);
}
