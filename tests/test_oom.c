/* Allocation-failure sweeps the module suites do not run (suite hostile).
 *
 * An audit of every landed module's tests against its allocating calls found these
 * scenarios unswept (partition, residency, and the world's joins of the frame module); each runs through rvt_run_sweep (fail the k-th allocation for every
 * k: RV_ERR_OUT_OF_MEMORY, an unchanged fingerprint, no leak). Calls documented as never
 * allocating are swept too and must count zero allocations, so a future allocation there
 * is noticed. The fingerprints digest everything the public getters show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "core/hash.h"
#include "support/rvt.h"
#include "support/rvt_jobs.h"
#include "support/rvt_scene.h"

#include <stdlib.h>
#include <string.h>

/* Every sweep call is one public call: a failure must leave everything as it was. */

/* ---- a partitioned world ---------------------------------------------------------------- */

enum { PARTS = 6 };

typedef struct part_world {
    rv_world *world;
    rv_node root, parts[PARTS], spare[9];
} part_world;

/* Everything public about the world: nodes, transforms, bounds, partition state. */
static uint64_t world_fingerprint(void *obj)
{
    part_world *p = obj;
    rv_world *w = p->world;
    /* Logical state only: a call may keep capacity it reserved before the allocation that
     * failed (rv_partition_set_part keeps its grown tables); leaks are caught at teardown. */
    uint64_t version = rv_partition_view_version(w);
    uint64_t h = rvi_hash_bytes(5, &version, sizeof version);
    rv_node n;
    assert_int_equal(rv_world_first_root(w, &n), RV_OK);
    while (n.id) {
        float m[16], b[4];
        assert_int_equal(rv_node_world_matrix(w, n, m), RV_OK);
        assert_int_equal(rv_node_world_bounds(w, n, b), RV_OK);
        h = rvi_hash_bytes(h, &n.id, 8);
        h = rvi_hash_bytes(h, m, sizeof m);
        h = rvi_hash_bytes(h, b, sizeof b);
        rv_partition_part_info info;
        uint64_t f[6] = { rv_partition_is_group(w, n), (uint64_t)rv_partition_part_get_info(w, n, &info) };
        if (f[1] == RV_OK) {
            f[2] = info.leaf_count;
            f[3] = info.leaves_committed;
            f[4] = (uint64_t)info.deferred | (uint64_t)info.active << 1 | (uint64_t)info.ever_visible << 2 |
                   (uint64_t)info.frustum_visible << 3;
            f[5] = info.group.id;
        }
        h = rvi_hash_bytes(h, f, sizeof f);
        rv_node next;
        assert_int_equal(rv_node_first_child(w, n, &next), RV_OK);
        while (!next.id && n.id) {
            assert_int_equal(rv_node_next_sibling(w, n, &next), RV_OK);
            if (!next.id)
                assert_int_equal(rv_node_parent(w, n, &n), RV_OK);
        }
        n = next;
    }
    return h;
}

static part_world *make_world(const rv_allocator *a, bool with_gate)
{
    part_world *p = calloc(1, sizeof *p);
    assert_non_null(p);
    rv_world_desc d = {0};
    d.allocator = *a;
    d.node_capacity = 4;
    assert_int_equal(rv_world_create(&d, &p->world), RV_OK);
    assert_int_equal(rv_node_create(p->world, RV_NODE_NONE, &p->root), RV_OK);
    float c[3] = { 0, 0, 0 };
    for (int i = 0; i < PARTS; i++) {
        assert_int_equal(rv_node_create(p->world, p->root, &p->parts[i]), RV_OK);
        float pos[3] = { (float)i * 3.0f, 0, 0 };
        assert_int_equal(rv_node_set_position(p->world, p->parts[i], pos), RV_OK);
        assert_int_equal(rv_node_set_bounds(p->world, p->parts[i], c, 1.0f), RV_OK);
    }
    for (int i = 0; i < 9; i++) /* 16 nodes: node storage (4, doubling) is exactly full */
        assert_int_equal(rv_node_create(p->world, RV_NODE_NONE, &p->spare[i]), RV_OK);
    if (with_gate) {
        assert_int_equal(rv_partition_make_group(p->world, p->root), RV_OK);
        for (int i = 0; i < PARTS; i++) {
            uint64_t leaves[2] = { 100 + 2 * (uint64_t)i, 101 + 2 * (uint64_t)i };
            assert_int_equal(rv_partition_set_part(p->world, p->parts[i], leaves, 2, i % 2 == 1), RV_OK);
        }
    }
    assert_int_equal(rv_update_world(p->world), RV_OK);
    return p;
}

static void *setup_plain(const rv_allocator *a) { return make_world(a, false); }
#define RVI_TRY_TEST(expr) do { rv_result r_ = (expr); if (r_ != RV_OK) return r_; } while (0)
static void *setup_gated(const rv_allocator *a) { return make_world(a, true); }

static void teardown_world(void *obj)
{
    part_world *p = obj;
    rv_world_destroy(p->world);
    free(p);
}

static rv_result call_slice_first_use(void *obj)
{
    part_world *p = obj;
    float lo[3] = { -1, -1, -1 }, hi[3] = { 5, 1, 1 };
    return rv_partition_set_committed_slice(p->world, lo, hi);
}

static rv_result call_make_group(void *obj)
{
    part_world *p = obj;
    return rv_partition_make_group(p->world, p->spare[0]);
}

static rv_result call_part_with_many_leaves(void *obj)
{
    /* Replace a part's leaves with a long list: the leaf map grows. */
    part_world *p = obj;
    uint64_t leaves[200];
    for (int k = 0; k < 200; k++)
        leaves[k] = 1000 + (uint64_t)k;
    return rv_partition_set_part(p->world, p->parts[2], leaves, 200, false);
}

static rv_result call_end_frame(void *obj)
{
    /* Documented to allocate nothing. */
    part_world *p = obj;
    rv_partition_result res;
    return rv_partition_end_frame(p->world, NULL, 10.0, &res);
}

static void *setup_gated_in_frame(const rv_allocator *a)
{
    part_world *p = make_world(a, true);
    assert_int_equal(rv_partition_begin_frame(p->world, NULL), RV_OK);
    assert_int_equal(rv_partition_gate_group(p->world, p->root, &(rv_frustum){ .plane_mask = 0 }), RV_OK);
    return p;
}

static rv_result call_destroy_group(void *obj)
{
    /* Destroying partition parts and the group: module hooks free, never allocate. */
    part_world *p = obj;
    return rv_node_destroy_subtree(p->world, p->root);
}

static rv_result call_create_under_part(void *obj)
{
    /* Node storage is full (16 of 16): this create grows it with modules attached. */
    part_world *p = obj;
    rv_node n;
    return rv_node_create(p->world, p->parts[1], &n);
}

static void test_partition_and_scene_calls_survive_every_allocation_failure(void **state)
{
    (void)state;
    const struct { rvt_sweep sweep; int must_allocate; } sweeps[] = {
        { { "set_committed_slice (first use)", setup_plain, call_slice_first_use, world_fingerprint, teardown_world }, 1 },
        { { "make_group (gate exists)", setup_gated, call_make_group, world_fingerprint, teardown_world }, -1 },
        { { "set_part, 200 leaves", setup_gated, call_part_with_many_leaves, world_fingerprint, teardown_world }, 1 },
        { { "end_frame", setup_gated_in_frame, call_end_frame, world_fingerprint, teardown_world }, 0 },
        { { "create under a part, growing", setup_gated, call_create_under_part, world_fingerprint, teardown_world }, 1 },
        { { "destroy a partition group", setup_gated, call_destroy_group, world_fingerprint, teardown_world }, 0 },
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
        uint64_t n = rvt_run_sweep(&sweeps[i].sweep);
        print_message("%s: %llu allocation(s) swept\n", sweeps[i].sweep.name, (unsigned long long)n);
        if (sweeps[i].must_allocate == 1 && n == 0)
            fail_msg("%s: expected to allocate (the sweep would prove nothing)", sweeps[i].sweep.name);
        if (sweeps[i].must_allocate == 0 && n != 0)
            fail_msg("%s: documented not to allocate, allocated %llu times", sweeps[i].sweep.name,
                     (unsigned long long)n);
    }
}

/* ---- residency ------------------------------------------------------------------------- */

typedef struct res_env {
    rv_residency *r;
} res_env;

static rv_page_key key(uint32_t i)
{
    rv_page_key k = { 3, i };
    return k;
}

static uint64_t res_fingerprint(void *obj)
{
    res_env *e = obj;
    rv_residency_stats s = rv_residency_get_stats(e->r);
    uint64_t f[10] = { s.pages_resident, s.pages_requested, s.pages_loading, s.pages_waiting_retry,
                       s.bytes_resident, s.requested, s.handed_out, s.placed, s.failed, s.frame };
    uint64_t h = rvi_hash_bytes(9, f, sizeof f);
    for (uint32_t i = 0; i < 40; i++) {
        rv_page_info info;
        assert_int_equal(rv_residency_page_info(e->r, key(i), &info), RV_OK);
        uint64_t g[4] = { info.state, info.refreshing, info.size_bytes, info.failures };
        h = rvi_hash_bytes(h, g, sizeof g);
    }
    return h;
}

/* 32 pages, as many as the records reserved: 0..11 resident (1 KiB each), 12..17 loading,
 * 18..31 queued; frame 1. Pages 0..17 are in use (handed out whatever the budget), 18..31
 * prefetch. */
static void *res_setup(const rv_allocator *a)
{
    res_env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    rv_residency_desc d = {0};
    d.allocator = *a;
    d.page_capacity = 32;
    d.budget_bytes = 8 * 1024;
    assert_int_equal(rv_residency_create(&d, &e->r), RV_OK);
    assert_int_equal(rv_residency_begin_frame(e->r, 0.0), RV_OK);
    for (uint32_t i = 0; i < 32; i++)
        assert_int_equal(rv_residency_request(e->r, key(i), (float)i, i < 18), RV_OK);
    rv_page_request reqs[18];
    uint32_t n;
    assert_int_equal(rv_residency_take_requests(e->r, reqs, 18, &n), RV_OK);
    assert_int_equal(n, 18);
    for (uint32_t i = 0; i < 12; i++)
        assert_int_equal(rv_residency_place(e->r, key(i), 1024), RV_OK);
    return e;
}

static void res_teardown(void *obj)
{
    res_env *e = obj;
    rv_residency_destroy(e->r);
    free(e);
}

static rv_result call_refresh(void *obj)
{
    res_env *e = obj;
    return rv_residency_refresh(e->r, key(3));
}

static rv_result call_place(void *obj)
{
    res_env *e = obj;
    return rv_residency_place(e->r, key(12), 2048);
}

static rv_result call_fail(void *obj)
{
    res_env *e = obj;
    return rv_residency_fail(e->r, key(13));
}

static rv_result call_begin_frame(void *obj)
{
    /* The next frame: protections end, stale queued pages drop. */
    res_env *e = obj;
    return rv_residency_begin_frame(e->r, 500.0);
}

static rv_result call_take_requests(void *obj)
{
    res_env *e = obj;
    rv_page_request reqs[8];
    uint32_t n;
    return rv_residency_take_requests(e->r, reqs, 8, &n);
}

static rv_result call_take_evictions(void *obj)
{
    res_env *e = obj;
    rv_page_eviction ev[8];
    uint32_t n;
    return rv_residency_take_evictions(e->r, ev, 8, &n);
}

static rv_result call_request_new(void *obj)
{
    /* A new page beyond the records reserved (setup fills them). */
    res_env *e = obj;
    return rv_residency_request(e->r, key(39), 9.0f, false);
}

static void test_residency_calls_survive_every_allocation_failure(void **state)
{
    (void)state;
    /* Only a request may allocate (the header lists RV_ERR_OUT_OF_MEMORY for it alone): the
     * others must allocate nothing, and a new page past the reserved records must, or its
     * sweep would prove nothing. */
    const struct { rvt_sweep sweep; bool allocates; } sweeps[] = {
        { { "refresh", res_setup, call_refresh, res_fingerprint, res_teardown }, false },
        { { "place", res_setup, call_place, res_fingerprint, res_teardown }, false },
        { { "fail", res_setup, call_fail, res_fingerprint, res_teardown }, false },
        { { "begin_frame", res_setup, call_begin_frame, res_fingerprint, res_teardown }, false },
        { { "take_requests", res_setup, call_take_requests, res_fingerprint, res_teardown }, false },
        { { "take_evictions", res_setup, call_take_evictions, res_fingerprint, res_teardown }, false },
        { { "request of a new page", res_setup, call_request_new, res_fingerprint, res_teardown }, true },
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
        uint64_t n = rvt_run_sweep(&sweeps[i].sweep); /* each failure must be clean */
        print_message("residency %s: %llu allocation(s) swept\n", sweeps[i].sweep.name, (unsigned long long)n);
        if (sweeps[i].allocates)
            assert_true(n > 0);
        else
            assert_int_equal(n, 0);
    }
}

/* ---- the world's joins (frame module) ---------------------------------------------------- */

typedef struct join_world {
    rv_world *world;
    rv_view_list *list;
} join_world;

/* A world with three nodes with geometry and one frame run (the frame state exists). */
static void *join_setup(const rv_allocator *a)
{
    join_world *j = calloc(1, sizeof *j);
    assert_non_null(j);
    rv_world_desc d = {0};
    d.allocator = *a;
    assert_int_equal(rv_world_create(&d, &j->world), RV_OK);
    float c[3] = { 0, 0, 0 };
    for (int i = 0; i < 3; i++) {
        rv_node n;
        assert_int_equal(rv_node_create(j->world, RV_NODE_NONE, &n), RV_OK);
        float p[3] = { (float)i * 2.0f, 0, 0 };
        assert_int_equal(rv_node_set_position(j->world, n, p), RV_OK);
        assert_int_equal(rv_node_set_bounds(j->world, n, c, 1.0f), RV_OK);
    }
    /* Updated: a frame whose begin succeeded keeps its transform update (and journal
     * drain) when a later stage runs out of memory and the frame is aborted, so a pending
     * update would show as a change. */
    assert_int_equal(rv_update_world(j->world), RV_OK);
    return j;
}

static void join_teardown(void *obj)
{
    join_world *j = obj;
    rv_view_list_destroy(j->list);
    rv_world_destroy(j->world);
    free(j);
}

/* What the world shows: its nodes, whether it has a residency, journal or render scene
 * (asked without creating them is not possible, so only the residency is read). */
static uint64_t join_fingerprint(void *obj)
{
    join_world *j = obj;
    part_world view = { .world = j->world };
    uint64_t h = world_fingerprint(&view);
    uint64_t f[2] = { rv_world_residency(j->world) != NULL, j->list != NULL };
    return rvi_hash_bytes(h, f, sizeof f);
}

static rv_result call_add_grid(void *obj)
{
    join_world *j = obj;
    rv_grid_desc g = {0};
    g.cell_size = 4.0f;
    g.count_x = g.count_z = 8;
    return rv_world_add_grid(j->world, &g, NULL);
}

static rv_result call_stream_sources(void *obj)
{
    join_world *j = obj;
    rv_stream_source s[3] = { { { 0, 0, 0 }, 4 }, { { 8, 0, 0 }, 4 }, { { 0, 0, 8 }, 4 } };
    return rv_world_set_stream_sources(j->world, s, 3);
}

static rv_result call_view_list_create(void *obj)
{
    join_world *j = obj;
    rv_view_list *l = NULL;
    rv_result r = rv_view_list_create(j->world, &l);
    if (r == RV_OK)
        j->list = l;
    return r;
}

static const float JOIN_VIEW[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -20, 1 };
static const float JOIN_PROJ[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };

/* A 64 x 64 view through JOIN_PROJ with this view matrix, at time_ms. */
static rv_view join_view(const float *view_matrix, double time_ms)
{
    rv_view v;
    memset(&v, 0, sizeof v);
    v.view = view_matrix;
    v.projection = JOIN_PROJ;
    v.viewport_width = 64;
    v.viewport_height = 64;
    v.time_ms = time_ms;
    return v;
}

static void *join_setup_with_list(const rv_allocator *a)
{
    join_world *j = join_setup(a);
    assert_int_equal(rv_view_list_create(j->world, &j->list), RV_OK);
    return j;
}

static rv_result call_cull_view(void *obj)
{
    /* The list's first use grows its arena. */
    join_world *j = obj;
    rv_view v = join_view(JOIN_VIEW, 0.0);
    rv_frame_view out;
    return rv_cull_view(j->world, &v, j->list, &out);
}

static rv_result call_first_frame(void *obj)
{
    join_world *j = obj;
    rv_view v = join_view(JOIN_VIEW, 0.0);
    rv_frame_view out;
    return rv_frame(j->world, &v, &out);
}

/* An extra view that fails for memory leaves the list's last view as it was, item for item
 * (read after each failure: ASan reports it if the failure freed its block), and does not
 * count as a cull of its list: the next view that succeeds has the next generation. */
static void test_cull_view_failed_for_memory_changes_nothing(void **state)
{
    (void)state;
    rvt_alloc a = { 0 };
    rv_world_desc d = { .allocator = rvt_allocator(&a) };
    rv_world *w;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    const float centre[3] = { 0, 0, 0 };
    for (int i = 0; i < 4; i++) {
        rv_node n;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
        assert_int_equal(rv_node_set_position(w, n, (float[3]){ (float)i - 2, 0, -5 }), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, n, centre, 0.3f), RV_OK);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    rv_view v = join_view(JOIN_VIEW, 0.0);
    rv_frame_view first, next;
    assert_int_equal(rv_cull_view(w, &v, list, &first), RV_OK);
    assert_int_equal(first.generation, 1);
    assert_int_equal(first.opaque_count, 4);
    rv_draw_item kept[4];
    memcpy(kept, first.opaque, sizeof kept);
    /* more than the list holds: the next cull grows it */
    for (int i = 0; i < 2000; i++) {
        rv_node n;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
        assert_int_equal(rv_node_set_position(w, n, (float[3]){ (float)(i % 40) - 20, 0, -10 - (float)(i / 40) }), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, n, centre, 0.3f), RV_OK);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    uint32_t failures = 0;
    for (uint64_t k = 1;; k++) {
        a.fail_at = a.calls + k;
        rv_result r = rv_cull_view(w, &v, list, &next);
        a.fail_at = 0;
        if (r == RV_OK)
            break;
        assert_int_equal(r, RV_ERR_OUT_OF_MEMORY);
        assert_int_equal(first.opaque_count, 4);
        assert_memory_equal(first.opaque, kept, sizeof kept);
        failures++;
    }
    assert_true(failures >= 1);
    assert_true(next.opaque_count > 4);
    assert_int_equal(next.generation, 2);
    assert_int_equal(next.frame_sequence, 2);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

static void test_world_joins_survive_every_allocation_failure(void **state)
{
    (void)state;
    const rvt_sweep sweeps[] = {
        { "rv_world_add_grid (first: makes the residency)", join_setup, call_add_grid, join_fingerprint, join_teardown },
        { "rv_world_set_stream_sources", join_setup, call_stream_sources, join_fingerprint, join_teardown },
        { "rv_view_list_create", join_setup, call_view_list_create, join_fingerprint, join_teardown },
        { "rv_cull_view (first use of a list)", join_setup_with_list, call_cull_view, join_fingerprint, join_teardown },
        { "rv_frame (first frame)", join_setup, call_first_frame, join_fingerprint, join_teardown },
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
        uint64_t n = rvt_run_sweep(&sweeps[i]);
        print_message("%s: %llu allocation(s) swept\n", sweeps[i].name, (unsigned long long)n);
        assert_true(n >= 1); /* each really allocates */
    }
}

/* ---- a frame's streaming under allocation failure --------------------------------------- */

/* The host's side of streaming: every page handed out is loaded and placed at once, every
 * eviction freed. A page the frame takes from the residency and does not publish would stay
 * loading (or stay in the host's memory) for ever. */
typedef struct stream_host {
    rvt_alloc alloc;
    rv_world *world;
    bool held[1024];      /* by the grid's page index */
    uint32_t held_count;
    uint32_t evictions;   /* announced so far */
} stream_host;

static void stream_host_init(stream_host *h)
{
    memset(h, 0, sizeof *h);
    rv_world_desc d = {0};
    d.allocator = rvt_allocator(&h->alloc);
    d.residency.budget_bytes = 120 * 1000;  /* room for 120 pages of 1,000 bytes */
    d.residency.page_bytes_estimate = 1000;
    d.residency.requests_per_frame = 256;
    assert_int_equal(rv_world_create(&d, &h->world), RV_OK);
    rv_grid_desc g = {0};
    g.cell_size = 4.0f;
    g.count_x = g.count_z = 32;
    g.lead = 4.0f;
    g.eye_radius = 20.0f;
    assert_int_equal(rv_world_add_grid(h->world, &g, NULL), RV_OK);
}

/* One frame with the eye at (x, 1, z): RV_OK (and the host answers it) or an allocation
 * failure (the frame aborted). */
static rv_result stream_host_frame(stream_host *h, float x, float z, double time_ms)
{
    float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -x, -1, -z, 1 };
    rv_view v = join_view(view, time_ms);
    rv_frame_view out;
    rv_result r = rv_frame(h->world, &v, &out);
    if (r != RV_OK)
        return r;
    rv_residency *res = rv_world_residency(h->world);
    for (uint32_t i = 0; i < out.page_eviction_count; i++) {
        uint32_t page = (uint32_t)out.page_evictions[i].key.index;
        assert_true(page < 1024 && h->held[page]);
        h->held[page] = false;
        h->held_count--;
        h->evictions++;
    }
    for (uint32_t i = 0; i < out.page_request_count; i++) {
        uint32_t page = (uint32_t)out.page_requests[i].key.index;
        assert_true(page < 1024);
        assert_int_equal(rv_residency_place(res, out.page_requests[i].key, 1000), RV_OK);
        if (!h->held[page]) {
            h->held[page] = true;
            h->held_count++;
        }
    }
    return RV_OK;
}

/* The eye walks along x, then jumps: the jump evicts more pages at once than any frame
 * before (so its list grows) and requests as many new ones. */
static const float STREAM_X[] = { 24, 28, 32, 36, 100, 104, 104, 104, 104, 104 };
enum { STREAM_FRAMES = sizeof STREAM_X / sizeof STREAM_X[0], STREAM_JUMP = 4 };

static void test_a_frame_out_of_memory_loses_no_page_request_or_eviction(void **state)
{
    (void)state;
    /* How many allocations the jump's frame makes when none fails. */
    stream_host h;
    stream_host_init(&h);
    uint64_t made = 0;
    uint32_t evicted_at_jump = 0;
    for (int f = 0; f < STREAM_FRAMES; f++) {
        uint64_t calls = h.alloc.calls;
        uint32_t evictions = h.evictions;
        assert_int_equal(stream_host_frame(&h, STREAM_X[f], 64, 16.0 * f), RV_OK);
        if (f == STREAM_JUMP) {
            made = h.alloc.calls - calls;
            evicted_at_jump = h.evictions - evictions;
        }
    }
    assert_true(evicted_at_jump > 64); /* more than the frame's first room for evictions */
    rv_residency_stats st;
    rv_world_destroy(h.world);
    assert_true(made >= 1); /* the jump's frame really allocates */
    /* Each of them failing: the frame fails, the host keeps walking, and in the end every
     * page loading was handed out (and so placed) and every page evicted was announced. */
    for (uint64_t k = 1; k <= made; k++) {
        stream_host_init(&h);
        for (int f = 0; f < STREAM_FRAMES; f++) {
            if (f == STREAM_JUMP)
                h.alloc.fail_at = h.alloc.calls + k;
            rv_result r = stream_host_frame(&h, STREAM_X[f], 64, 16.0 * f);
            h.alloc.fail_at = 0;
            assert_true(r == RV_OK || (f == STREAM_JUMP && r == RV_ERR_OUT_OF_MEMORY));
        }
        rv_residency *res = rv_world_residency(h.world);
        st = rv_residency_get_stats(res);
        assert_int_equal(rv_residency_loads_in_flight(res), 0);
        assert_int_equal(st.pages_resident, h.held_count);
        rv_world_destroy(h.world);
        assert_true(h.alloc.live_blocks == 0);
    }
    print_message("the jump's frame (%u evictions): %llu allocation(s) swept\n", evicted_at_jump,
                  (unsigned long long)made);
}

/* ---- a cull that fails ------------------------------------------------------------------- */

/* A world whose frame lists something of every kind a cull builds: draw items, cull records
 * (crates behind the eye), an HLOD load request (a region near the eye with a child not
 * resident), partition resyncs, and objects the persistent occluder nodes hide. */
typedef struct cull_world {
    rvt_alloc alloc;
    rvt_host host;
    rv_world *world;
} cull_world;

static const float CULL_EYE[3] = { 0, 1.7f, 0 }, CULL_AHEAD[3] = { 0, 1.7f, -10 };

static void cull_world_init(cull_world *c, uint32_t occlusion_width, bool jobs)
{
    memset(c, 0, sizeof *c);
    rv_world_desc d = {0};
    d.allocator = rvt_allocator(&c->alloc);
    d.record_culls = true;
    d.occlusion.width = occlusion_width;
    d.occlusion.feed_max_width = d.occlusion.feed_max_height = occlusion_width ? 16 : 0;
    if (jobs) {
        c->host.order = RVT_HOST_SINGLES;
        c->host.max_workers = 3;
        c->host.seed = 9;
        d.jobs = rvt_host_jobs(&c->host);
    }
    assert_int_equal(rv_world_create(&d, &c->world), RV_OK);
    rv_world *w = c->world;
    rv_node region = rvt_object(w, RV_NODE_NONE, 3, 0, -8, 3);
    assert_int_equal(rv_node_set_hlod_region(w, region, 2), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    rv_node kid = rvt_object(w, region, 0, 0, 0, 1);
    assert_int_equal(rv_node_set_hlod_region(w, kid, 0.1f), RV_OK);
    for (int i = 0; i < 40; i++) {
        (void)rvt_object(w, RV_NODE_NONE, (float)i - 20, 0.5f, 20, 0.5f);        /* behind */
        (void)rvt_object(w, RV_NODE_NONE, (float)i - 20, 0.5f, -12 - (float)(i % 5), 0.4f); /* ahead */
    }
    /* Rows of crates under group nodes, enough for the walk and the object passes to be
     * handed to the job system in several ranges. */
    for (int g = 0; g < 6; g++) {
        rv_node row = rvt_node(w, RV_NODE_NONE);
        for (int i = 0; i < 100; i++)
            (void)rvt_object(w, row, (float)(i % 25) - 12, 0.3f + (float)(i / 25), -14 - 3 * (float)g, 0.2f);
    }
    for (int i = 0; i < 4; i++) {
        rv_node wall = rvt_node(w, RV_NODE_NONE);
        const float mn[3] = { -16.0f + 8 * (float)i, 0, -10.2f }, mx[3] = { -11.0f + 8 * (float)i, 4, -10 };
        assert_int_equal(rv_node_set_occluder_box(w, wall, mn, mx), RV_OK);
    }
    rv_node group = rvt_node(w, RV_NODE_NONE);
    assert_int_equal(rv_partition_make_group(w, group), RV_OK);
    for (int p = 0; p < 3; p++) {
        rv_node part = rvt_object(w, group, -6.0f + 6 * (float)p, 1, -25, 2);
        uint64_t leaves[2] = { 10u * (uint64_t)p + 1, 10u * (uint64_t)p + 2 };
        assert_int_equal(rv_partition_set_part(w, part, leaves, 2, p == 2), RV_OK);
        (void)rvt_object(w, part, 0, 0, 0, 0.5f);
    }
}

static void cull_world_fini(cull_world *c)
{
    rv_world_destroy(c->world);
    rvt_host_free(&c->host);
    assert_int_equal(c->alloc.live_blocks, 0);
    assert_int_equal(c->alloc.live_bytes, 0);
}

static rv_view cull_view(rvt_camera *cam, int frame)
{
    rvt_camera_make(cam, CULL_EYE, CULL_AHEAD, 1.2f, 16.0 * frame);
    return cam->v;
}

/* A node of a cull_world by its slot and generation: the handle's top bits name the world. */
static uint64_t hash_node(uint64_t h, rv_node n)
{
    uint64_t bits = n.id & ((1ull << 48) - 1);
    return rvi_hash_bytes(h, &bits, sizeof bits);
}

/* What a frame's view says, node by node: what to draw, the cull records, the HLOD loads,
 * the resyncs, the page requests, the tick demand and the counts but occlusion_tested (an
 * aborted cull's group tests count as made: rv_frame_abort says the next frame's counts
 * may differ by them). */
static uint64_t cull_view_digest(const rv_frame_view *v)
{
    uint64_t h = rv_frame_view_digest(v);
    for (uint32_t i = 0; i < v->cull_count; i++) {
        h = hash_node(h, v->culls[i].node);
        h = rvi_hash_bytes(h, &v->culls[i].reason, sizeof v->culls[i].reason);
    }
    for (uint32_t i = 0; i < v->hlod_load_request_count; i++)
        h = hash_node(h, v->hlod_load_requests[i]);
    for (uint32_t i = 0; i < v->resync_request_count; i++) {
        h = hash_node(h, v->resync_requests[i].group);
        for (uint32_t k = 0; k < v->resync_requests[i].part_count; k++)
            h = hash_node(h, v->resync_requests[i].parts[k]);
    }
    for (uint32_t i = 0; i < v->page_request_count; i++)
        h = rvi_hash_bytes(h, &v->page_requests[i].key, sizeof v->page_requests[i].key);
    uint64_t tick[2] = { (uint64_t)v->tick.mode, 0 };
    memcpy(&tick[1], &v->tick.wake_at_ms, sizeof tick[1]);
    h = rvi_hash_bytes(h, tick, sizeof tick);
    rv_frame_counts counts = v->counts;
    counts.occlusion_tested = 0;
    return rvi_hash_bytes(h, &counts, sizeof counts);
}

/* Every frame call but rv_frame_abort refuses a frame whose cull failed, changing nothing:
 * the adds and the feed (they would join a buffer the cull has filled or frozen), a second
 * cull (it would list the walk's records, loads and culls again) and the end (nothing was
 * culled). */
static void expect_only_abort_after_failed_cull(rv_world *w, const rvt_camera *cam)
{
    const float mn[3] = { -1, 0, -3 }, mx[3] = { 1, 1, -2.9f };
    assert_int_equal(rv_frame_add_occluder(w, mn, mx, NULL), RV_ERR_BAD_STATE);
    static const float planes[6][4] = { { 1, 0, 0, 1 }, { -1, 0, 0, 1 }, { 0, 1, 0, 1 },
                                        { 0, -1, 0, 1 }, { 0, 0, 1, 1 }, { 0, 0, -1, 1 } };
    rv_occluder_convex convex = { planes, 6, 0 };
    assert_int_equal(rv_frame_add_convex(w, &convex, NULL), RV_ERR_BAD_STATE);
    static const float pos[4][3] = { { 0, 0, -3 }, { 1, 0, -3 }, { 0, 1, -3 }, { 1, 1, -3 } };
    static const uint32_t idx[6] = { 0, 1, 2, 2, 1, 3 };
    rv_occluder_mesh mesh = { pos, 4, idx, 6, 0 };
    assert_int_equal(rv_frame_add_mesh(w, &mesh, NULL), RV_ERR_BAD_STATE);
    static float texels[16 * 9];
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int row = 0; row < 4; row++) {
            double acc = 0;
            for (int q = 0; q < 4; q++)
                acc += (double)cam->projection[q * 4 + row] * cam->view[col * 4 + q];
            vp[col * 4 + row] = (float)acc;
        }
    rv_depth_feed feed = {0};
    feed.texels = texels;
    feed.width = 16;
    feed.height = 9;
    feed.format = RV_DEPTH_FLOAT32;
    feed.view_projection = vp;
    feed.age = 1;
    assert_int_equal(rv_frame_feed_depth(w, &feed), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_cull(w), RV_ERR_BAD_STATE);
    rv_frame_view junk, copy;
    memset(&junk, 0xab, sizeof junk);
    copy = junk;
    assert_int_equal(rv_frame_end(w, &junk), RV_ERR_BAD_STATE);
    assert_memory_equal(&junk, &copy, sizeof junk);
    assert_int_equal(rv_frame_begin(w, &cam->v), RV_ERR_BAD_STATE);
}

enum { CULL_FRAMES = 3 };

/* The reference: the same world, its frames never failing. */
static void cull_reference(uint32_t occlusion_width, bool jobs, uint64_t out[CULL_FRAMES])
{
    cull_world c;
    cull_world_init(&c, occlusion_width, jobs);
    for (int f = 0; f < CULL_FRAMES; f++) {
        rvt_camera cam;
        rv_view v = cull_view(&cam, f);
        rv_frame_view fv;
        assert_int_equal(rv_frame(c.world, &v, &fv), RV_OK);
        out[f] = cull_view_digest(&fv);
    }
    if (jobs)
        assert_true(c.host.calls > 0); /* the frames did run on the job system */
    cull_world_fini(&c);
}

/* The first frame fails at its k-th allocation (split: of its cull; one_call: of rv_frame),
 * the host aborts it (rv_frame aborts by itself) and makes it again: from there every frame
 * is the reference's. Returns false when the k-th allocation is past the call's last. */
static bool cull_fails_at(uint32_t occlusion_width, bool jobs, bool one_call, uint64_t k,
                          const uint64_t ref[CULL_FRAMES])
{
    cull_world c;
    cull_world_init(&c, occlusion_width, jobs);
    rv_world *w = c.world;
    rvt_camera cam;
    rv_view v = cull_view(&cam, 0);
    rv_frame_view fv;
    rv_result r;
    if (one_call) {
        c.alloc.fail_at = c.alloc.calls + k;
        r = rv_frame(w, &v, &fv);
    } else {
        assert_int_equal(rv_frame_begin(w, &v), RV_OK);
        c.alloc.fail_at = c.alloc.calls + k;
        r = rv_frame_cull(w);
    }
    c.alloc.fail_at = 0;
    if (c.alloc.failed == 0) {
        assert_int_equal(r, RV_OK);
        if (!one_call)
            assert_int_equal(rv_frame_abort(w), RV_OK);
        cull_world_fini(&c);
        return false;
    }
    if (r != RV_ERR_OUT_OF_MEMORY)
        fail_msg("occlusion %u, jobs %d, %s: allocation %llu failing answered %s", occlusion_width, jobs,
                 one_call ? "rv_frame" : "rv_frame_cull", (unsigned long long)k, rv_result_string(r));
    if (!one_call) {
        expect_only_abort_after_failed_cull(w, &cam);
        assert_int_equal(rv_frame_abort(w), RV_OK);
    }
    /* The frame is closed: nothing but a new frame is accepted. */
    const float mn[3] = { -1, 0, -3 }, mx[3] = { 1, 1, -2.9f };
    assert_int_equal(rv_frame_add_occluder(w, mn, mx, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_cull(w), RV_ERR_BAD_STATE);
    for (int f = 0; f < CULL_FRAMES; f++) {
        v = cull_view(&cam, f);
        assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
        if (cull_view_digest(&fv) != ref[f])
            fail_msg("occlusion %u, jobs %d, %s failing at allocation %llu: frame %d (%u drawn, %u cull "
                     "records, %u HLOD loads) is not the reference's",
                     occlusion_width, jobs, one_call ? "rv_frame" : "rv_frame_cull", (unsigned long long)k, f,
                     fv.opaque_count, fv.cull_count, fv.hlod_load_request_count);
    }
    cull_world_fini(&c);
    return true;
}

static void test_a_failed_cull_leaves_the_frame_to_abort_alone(void **state)
{
    (void)state;
    for (int config = 0; config < 4; config++) {
        uint32_t width = config & 1 ? 64 : 0;
        bool jobs = config & 2;
        uint64_t ref[CULL_FRAMES];
        cull_reference(width, jobs, ref);
        for (int one_call = 0; one_call < 2; one_call++) {
            uint64_t k = 1;
            while (cull_fails_at(width, jobs, one_call, k, ref))
                k++;
            print_message("occlusion %u, jobs %d, %s: %llu allocation(s) swept\n", width, jobs,
                          one_call ? "rv_frame" : "rv_frame_cull", (unsigned long long)(k - 1));
            assert_true(k > 2); /* the call really allocates */
        }
    }
}

/* ---- allocation counters ------------------------------------------------------------------ */

/* rv_world_alloc_stats counts every allocator call the world made, a failure inside
 * rv_world_journal included: the journal and render scene it makes keep heaps of their
 * own, and one that fails to be made takes its heap with it. */
static void test_world_counts_every_failure_of_its_journal(void **state)
{
    (void)state;
    uint64_t k = 1;
    for (;; k++) {
        rvt_alloc a = {0};
        rv_world_desc d = {0};
        d.allocator = rvt_allocator(&a);
        d.node_capacity = 1;
        rv_world *w;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        a.fail_at = a.calls + k;
        rv_journal *j;
        rv_result r = rv_world_journal(w, &j);
        a.fail_at = 0;
        rv_alloc_stats st = rv_world_alloc_stats(w);
        if (st.failures != a.failed)
            fail_msg("rv_world_journal failing its allocation %llu: %llu failure(s) counted, the allocator "
                     "returned NULL %llu time(s)", (unsigned long long)k, (unsigned long long)st.failures,
                     (unsigned long long)a.failed);
        assert_int_equal(st.allocations + st.reallocations, a.calls - a.failed);
        assert_int_equal(st.bytes_live, a.live_bytes);
        rv_world_destroy(w);
        assert_int_equal(a.live_blocks, 0);
        if (a.failed == 0) {
            assert_int_equal(r, RV_OK);
            break;
        }
        assert_int_equal(r, RV_ERR_OUT_OF_MEMORY);
    }
    print_message("rv_world_journal: %llu allocation(s) swept\n", (unsigned long long)(k - 1));
    assert_true(k > 3); /* frame state, journal, render scene */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_and_scene_calls_survive_every_allocation_failure),
        cmocka_unit_test(test_residency_calls_survive_every_allocation_failure),
        cmocka_unit_test(test_cull_view_failed_for_memory_changes_nothing),
        cmocka_unit_test(test_world_joins_survive_every_allocation_failure),
        cmocka_unit_test(test_a_frame_out_of_memory_loses_no_page_request_or_eviction),
        cmocka_unit_test(test_a_failed_cull_leaves_the_frame_to_abort_alone),
        cmocka_unit_test(test_world_counts_every_failure_of_its_journal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
