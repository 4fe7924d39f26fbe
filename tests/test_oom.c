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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_and_scene_calls_survive_every_allocation_failure),
        cmocka_unit_test(test_residency_calls_survive_every_allocation_failure),
        cmocka_unit_test(test_world_joins_survive_every_allocation_failure),
        cmocka_unit_test(test_a_frame_out_of_memory_loses_no_page_request_or_eviction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
