/* Hostile cases: streaming grid and page residency (standalone objects). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <string.h>

/* ---- residency ------------------------------------------------------------------------ */

static const rv_page_key KEY_RESIDENT = { 7, 1 }, KEY_LOADING = { 7, 2 }, KEY_QUEUED = { 7, 3 },
                         KEY_UNKNOWN = { 9, 99 };

static uint64_t hash_info(uint64_t h, const rv_residency *r, rv_page_key key)
{
    rv_page_info i;
    rv_result code = rv_residency_page_info(r, key, &i);
    uint64_t f[11] = { (uint64_t)code, (uint64_t)i.state, i.refreshing, i.waiting_retry, 0, i.size_bytes,
                       i.last_wanted_frame, i.last_touched_frame, i.failures, 0, 0 };
    memcpy(&f[4], &i.distance, 4);
    memcpy(&f[9], &i.retry_at_ms, 8);
    return rvi_hash_bytes(h, f, sizeof f);
}

/* Everything the residency getters show (field by field: the structs have padding). */
static uint64_t residency_digest(const void *object)
{
    const rv_residency *r = object;
    rv_residency_stats s = rv_residency_get_stats(r);
    uint64_t f[20] = { s.requested, s.handed_out, s.placed, s.failed, s.retried, s.evicted, s.dropped,
                       s.prefetch_paused, s.pages_resident, s.pages_requested, s.pages_waiting_retry,
                       s.pages_loading, s.bytes_resident, s.budget_bytes, s.over_budget, s.over_budget_bytes,
                       s.frames_over_budget, s.frame, rv_residency_loads_in_flight(r), 0 };
    double wake = -1;
    f[19] = rv_residency_next_wake_ms(r, &wake);
    uint64_t h = rvi_hash_bytes(1, f, sizeof f);
    h = rvi_hash_bytes(h, &wake, sizeof wake);
    rv_alloc_stats a = rv_residency_alloc_stats(r);
    uint64_t held[2] = { a.allocations - a.frees, a.bytes_live };
    h = rvi_hash_bytes(h, held, sizeof held);
    const rv_page_key keys[4] = { KEY_RESIDENT, KEY_LOADING, KEY_QUEUED, KEY_UNKNOWN };
    for (int k = 0; k < 4; k++)
        h = hash_info(h, r, keys[k]);
    return h;
}

typedef struct streaming {
    rvt_alloc alloc;
    rv_residency *res;
} streaming;

/* A residency at frame 1 (t = 100 ms) with one page resident (1000 bytes), one loading
 * and one queued, watched for the whole case. */
static streaming *residency_setup(rvh_ctx *cx)
{
    static streaming s; /* one per case; cases run one at a time */
    memset(&s, 0, sizeof s);
    rv_residency_desc desc = {0};
    desc.allocator = rvt_allocator(&s.alloc);
    desc.page_capacity = 2; /* so requests grow the table */
    RVH_ACCEPT(cx, rv_residency_create(&desc, &s.res));
    RVH_ACCEPT(cx, rv_residency_begin_frame(s.res, 100.0));
    RVH_ACCEPT(cx, rv_residency_request(s.res, KEY_RESIDENT, 1.0f, true));
    RVH_ACCEPT(cx, rv_residency_request(s.res, KEY_LOADING, 2.0f, true));
    RVH_ACCEPT(cx, rv_residency_request(s.res, KEY_QUEUED, 3.0f, false));
    rv_page_request reqs[2];
    uint32_t n = 0;
    RVH_ACCEPT(cx, rv_residency_take_requests(s.res, reqs, 2, &n));
    RVH_CHECK(cx, n == 2);
    RVH_ACCEPT(cx, rv_residency_place(s.res, KEY_RESIDENT, 1000));
    rvh_watch(cx, "the residency", residency_digest, s.res);
    return &s;
}

static void residency_teardown(rvh_ctx *cx, streaming *s)
{
    rvh_unwatch(cx, s->res);
    rv_residency_destroy(s->res);
    RVH_CHECK(cx, s->alloc.live_blocks == 0 && s->alloc.live_bytes == 0);
}

void hostile_rv_residency_create(rvh_ctx *cx)
{
    rv_residency *sentinel = (rv_residency *)(uintptr_t)0x5a5a5a5a, *out = sentinel;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_create(NULL, NULL));
    const struct { float retry, backoff, cap; rv_result code; } bad[] = {
        { NAN, 0, 0, RV_ERR_NOT_FINITE }, { 0, INFINITY, 0, RV_ERR_NOT_FINITE }, { 0, 0, -INFINITY, RV_ERR_NOT_FINITE },
        { -1, 0, 0, RV_ERR_INVALID_ARG }, { 0, 0.5f, 0, RV_ERR_INVALID_ARG }, { 0, 0, -5, RV_ERR_INVALID_ARG },
        { 500, 0, 200, RV_ERR_ORDER }, { 20000, 0, 0, RV_ERR_ORDER },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rvt_alloc st = {0};
        rv_residency_desc desc = {0};
        desc.allocator = rvt_allocator(&st);
        desc.retry_ms = bad[i].retry;
        desc.retry_backoff = bad[i].backoff;
        desc.retry_cap_ms = bad[i].cap;
        RVH_REJECT(cx, bad[i].code, rv_residency_create(&desc, &out));
        RVH_CHECK(cx, out == sentinel && st.calls == 0);
    }
    /* Extreme but valid: every counter at its limit. */
    rv_residency_desc big = {0};
    big.budget_bytes = UINT64_MAX;
    big.drop_after_frames = UINT32_MAX;
    big.retry_ms = 1e30f;
    big.retry_cap_ms = FLT_MAX;
    big.requests_per_frame = UINT32_MAX;
    RVH_ACCEPT(cx, rv_residency_create(&big, &out));
    rv_residency_destroy(out);
}

void hostile_rv_residency_destroy(rvh_ctx *cx)
{
    rv_residency_destroy(NULL);
    streaming *s = residency_setup(cx);
    residency_teardown(cx, s); /* with pages in every state: nothing leaks */
}

void hostile_rv_residency_begin_frame(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_begin_frame(NULL, 200.0));
    const double bad[3] = { NAN, INFINITY, -INFINITY };
    for (int i = 0; i < 3; i++)
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_residency_begin_frame(s->res, bad[i]));
    RVH_REJECT(cx, RV_ERR_ORDER, rv_residency_begin_frame(s->res, 99.0));
    RVH_REJECT(cx, RV_ERR_ORDER, rv_residency_begin_frame(s->res, -1e300));
    RVH_ACCEPT(cx, rv_residency_begin_frame(s->res, 100.0)); /* the same time again is fine */
    RVH_ACCEPT(cx, rv_residency_begin_frame(s->res, 1e300));
    residency_teardown(cx, s);
}

void hostile_rv_residency_request(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_request(NULL, KEY_UNKNOWN, 1.0f, true));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_request(s->res, KEY_UNKNOWN, -1.0f, true));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_request(s->res, KEY_UNKNOWN, -FLT_MAX, false));
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_residency_request(s->res, KEY_UNKNOWN, NAN, true));
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_residency_request(s->res, KEY_UNKNOWN, INFINITY, true));
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_residency_request(s->res, KEY_QUEUED, NAN, false));
    rvh_before(cx);
    rv_result r = rv_residency_request(s->res, KEY_UNKNOWN, -INFINITY, true); /* negative and not finite */
    rvh_after(cx, "request(-inf)", __LINE__, r, r == RV_ERR_INVALID_ARG ? RV_ERR_INVALID_ARG : RV_ERR_NOT_FINITE);
    RVH_ACCEPT(cx, rv_residency_request(s->res, (rv_page_key){ UINT32_MAX, UINT32_MAX }, FLT_MAX, false));
    residency_teardown(cx, s);
    /* Before the first frame. */
    rv_residency *fresh;
    RVH_ACCEPT(cx, rv_residency_create(NULL, &fresh));
    RVH_CHECK(cx, rv_residency_request(fresh, KEY_UNKNOWN, 1.0f, true) == RV_ERR_BAD_STATE);
    RVH_CHECK(cx, rv_residency_get_stats(fresh).pages_requested == 0);
    rv_residency_destroy(fresh);
}

void hostile_rv_residency_take_requests(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    rv_page_request out[4];
    uint32_t n = 0xA5A5A5A5u;
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_requests(NULL, out, 4, &n));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_requests(s->res, out, 4, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_requests(s->res, NULL, 4, &n));
    RVH_CHECK(cx, n == 0xA5A5A5A5u && rvh_is_poisoned(out, sizeof out));
    RVH_ACCEPT(cx, rv_residency_take_requests(s->res, NULL, 0, &n));
    RVH_CHECK(cx, n == 0);
    residency_teardown(cx, s);
}

void hostile_rv_residency_place(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_place(NULL, KEY_LOADING, 10));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_residency_place(s->res, KEY_UNKNOWN, 10));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_residency_place(s->res, KEY_QUEUED, 10));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_residency_place(s->res, KEY_RESIDENT, 10));
    /* 1000 resident bytes + 2^64 - 1 would wrap. */
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_residency_place(s->res, KEY_LOADING, UINT64_MAX));
    RVH_ACCEPT(cx, rv_residency_place(s->res, KEY_LOADING, UINT64_MAX - 1000));
    RVH_CHECK(cx, rv_residency_get_stats(s->res).bytes_resident == UINT64_MAX);
    residency_teardown(cx, s);
}

void hostile_rv_residency_fail(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_fail(NULL, KEY_LOADING));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_residency_fail(s->res, KEY_UNKNOWN));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_residency_fail(s->res, KEY_QUEUED));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_residency_fail(s->res, KEY_RESIDENT));
    residency_teardown(cx, s);
}

void hostile_rv_residency_refresh(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_refresh(NULL, KEY_RESIDENT));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_residency_refresh(s->res, KEY_UNKNOWN));
    residency_teardown(cx, s);
}

void hostile_rv_residency_take_evictions(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    rv_page_eviction out[4];
    uint32_t n = 0xA5A5A5A5u;
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_evictions(NULL, out, 4, &n));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_evictions(s->res, out, 4, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_take_evictions(s->res, NULL, 4, &n));
    RVH_CHECK(cx, n == 0xA5A5A5A5u && rvh_is_poisoned(out, sizeof out));
    /* A zero budget with the only resident page touched this frame: over budget, reported,
     * nothing evicted. */
    RVH_ACCEPT(cx, rv_residency_set_budget(s->res, 0));
    RVH_ACCEPT(cx, rv_residency_take_evictions(s->res, out, 4, &n));
    RVH_CHECK(cx, n == 0 && rv_residency_get_stats(s->res).over_budget);
    residency_teardown(cx, s);
}

void hostile_rv_residency_set_budget(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_set_budget(NULL, 10));
    RVH_ACCEPT(cx, rv_residency_set_budget(s->res, UINT64_MAX));
    RVH_CHECK(cx, rv_residency_get_stats(s->res).budget_bytes == UINT64_MAX);
    residency_teardown(cx, s);
}

void hostile_rv_residency_page_info(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    rv_page_info info;
    rvh_poison(&info, sizeof info);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_page_info(NULL, KEY_RESIDENT, &info));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_residency_page_info(s->res, KEY_RESIDENT, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&info, sizeof info));
    RVH_ACCEPT(cx, rv_residency_page_info(s->res, KEY_UNKNOWN, &info));
    RVH_CHECK(cx, info.state == RV_PAGE_ABSENT && info.size_bytes == 0 && info.failures == 0);
    residency_teardown(cx, s);
}

void hostile_rv_residency_get_stats(rvh_ctx *cx)
{
    rv_residency_stats z = rv_residency_get_stats(NULL);
    RVH_CHECK(cx, z.frame == 0 && z.pages_resident == 0 && z.bytes_resident == 0 && z.budget_bytes == 0);
}

void hostile_rv_residency_next_wake_ms(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    double t = 42.0;
    RVH_CHECK(cx, !rv_residency_next_wake_ms(NULL, &t) && t == 42.0);
    RVH_CHECK(cx, !rv_residency_next_wake_ms(s->res, NULL));
    RVH_ACCEPT(cx, rv_residency_fail(s->res, KEY_LOADING));
    RVH_CHECK(cx, rv_residency_next_wake_ms(s->res, &t) && isfinite(t) && t > 100.0);
    residency_teardown(cx, s);
}

void hostile_rv_residency_loads_in_flight(rvh_ctx *cx)
{
    streaming *s = residency_setup(cx);
    RVH_CHECK(cx, rv_residency_loads_in_flight(NULL) == 0);
    RVH_CHECK(cx, rv_residency_loads_in_flight(s->res) == 1);
    residency_teardown(cx, s);
}

void hostile_rv_residency_alloc_stats(rvh_ctx *cx)
{
    rv_alloc_stats z = rv_residency_alloc_stats(NULL);
    RVH_CHECK(cx, z.allocations == 0 && z.bytes_live == 0);
    streaming *s = residency_setup(cx);
    rv_alloc_stats a = rv_residency_alloc_stats(s->res);
    RVH_CHECK(cx, a.allocations - a.frees == (uint64_t)s->alloc.live_blocks && a.bytes_live == (uint64_t)s->alloc.live_bytes);
    residency_teardown(cx, s);
}

/* ---- grid ----------------------------------------------------------------------------- */

static rv_grid_desc good_grid_desc(rvt_alloc *st)
{
    rv_grid_desc d = {0};
    d.allocator = rvt_allocator(st);
    d.source = 7;
    d.origin[0] = -8.0f;
    d.origin[1] = -8.0f;
    d.cell_size = 4.0f;
    d.count_x = 4;
    d.count_z = 4;
    d.lead = 2.0f;
    return d;
}

static uint64_t grid_digest(const void *object)
{
    const rv_grid *g = object;
    rv_grid_stats st = rv_grid_get_stats(g);
    rv_grid_desc d = rv_grid_get_desc(g);
    uint64_t f[8] = { st.touched_cells, st.requested_cells, st.cells_visited, d.source, d.count_x, d.count_z, 0, 0 };
    memcpy(&f[6], &d.cell_size, 4);
    memcpy(&f[7], &d.lead, 4);
    return rvi_hash_bytes(3, f, sizeof f);
}

void hostile_rv_grid_create(rvh_ctx *cx)
{
    rv_grid *sentinel = (rv_grid *)(uintptr_t)0x5a5a5a5a, *out = sentinel;
    rvt_alloc st = {0};
    rv_grid_desc d = good_grid_desc(&st);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(NULL, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(&d, NULL));
    for (int f = 0; f < 4; f++)
        for (int b = 0; b < RVH_NONFINITE; b++) {
            d = good_grid_desc(&st);
            float *field = f == 0 ? &d.cell_size : f == 1 ? &d.lead : f == 2 ? &d.origin[0] : &d.eye_radius;
            *field = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_create(&d, &out));
        }
    const float bad_cell[3] = { 0.0f, -4.0f, -0.0f };
    for (int i = 0; i < 3; i++) {
        d = good_grid_desc(&st);
        d.cell_size = bad_cell[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(&d, &out));
    }
    d = good_grid_desc(&st);
    d.lead = -1.0f;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(&d, &out));
    d = good_grid_desc(&st);
    d.count_x = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(&d, &out));
    d = good_grid_desc(&st);
    d.count_z = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_create(&d, &out));
    /* A far corner beyond float range. */
    d = good_grid_desc(&st);
    d.cell_size = 1e30f;
    d.count_x = 1u << 29; /* 2^31 cells, corner at 5.4e38 */
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_create(&d, &out));
    d = good_grid_desc(&st);
    d.origin[1] = 3e38f;
    d.cell_size = 1e38f; /* corner 3e38 + 4 * 1e38 */
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_create(&d, &out));
    /* More than 2^32 - 1 cells. */
    d = good_grid_desc(&st);
    d.count_x = 65536;
    d.count_z = 65536;
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_grid_create(&d, &out));
    RVH_CHECK(cx, out == sentinel && st.calls == 0);
    /* The largest grid is only its header: creating it costs nothing per cell. */
    d = good_grid_desc(&st);
    d.count_x = 65535;
    d.count_z = 65535;
    d.cell_size = 1.0f;
    RVH_ACCEPT(cx, rv_grid_create(&d, &out));
    RVH_CHECK(cx, st.live_bytes < 4096);
    rv_grid_destroy(out);
}

void hostile_rv_grid_destroy(rvh_ctx *cx)
{
    rv_grid_destroy(NULL);
    rvt_alloc st = {0};
    rv_grid_desc d = good_grid_desc(&st);
    rv_grid *g;
    RVH_ACCEPT(cx, rv_grid_create(&d, &g));
    rv_grid_destroy(g);
    RVH_CHECK(cx, st.live_blocks == 0);
}

void hostile_rv_grid_get_desc(rvh_ctx *cx)
{
    rv_grid_desc z = rv_grid_get_desc(NULL);
    RVH_CHECK(cx, z.count_x == 0 && z.count_z == 0 && z.cell_size == 0.0f && z.allocator.alloc == NULL);
}

static rv_grid *grid_setup(rvh_ctx *cx, rvt_alloc *st)
{
    rv_grid_desc d = good_grid_desc(st);
    rv_grid *g;
    RVH_ACCEPT(cx, rv_grid_create(&d, &g));
    rvh_watch(cx, "the grid", grid_digest, g);
    return g;
}

static void grid_teardown(rvh_ctx *cx, rv_grid *g)
{
    rvh_unwatch(cx, g);
    rv_grid_destroy(g);
}

void hostile_rv_grid_key_of(rvh_ctx *cx)
{
    rvt_alloc st = {0};
    rv_grid *g = grid_setup(cx, &st);
    rv_page_key k = { 0xA5A5A5A5u, 0xA5A5A5A5u };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_key_of(NULL, 0, 0, &k));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_key_of(g, 0, 0, NULL));
    const uint32_t out_of_range[4][2] = { { 4, 0 }, { 0, 4 }, { UINT32_MAX, 0 }, { 0, UINT32_MAX } };
    for (int i = 0; i < 4; i++)
        RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_key_of(g, out_of_range[i][0], out_of_range[i][1], &k));
    RVH_CHECK(cx, k.source == 0xA5A5A5A5u && k.index == 0xA5A5A5A5u);
    grid_teardown(cx, g);
}

void hostile_rv_grid_cell_of(rvh_ctx *cx)
{
    rvt_alloc st = {0};
    rv_grid *g = grid_setup(cx, &st);
    uint32_t x = 0xA5A5A5A5u, z = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_cell_of(NULL, 0, &x, &z));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_cell_of(g, 16, &x, &z));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_cell_of(g, UINT32_MAX, &x, &z));
    RVH_CHECK(cx, x == 0xA5A5A5A5u && z == 0xA5A5A5A5u);
    grid_teardown(cx, g);
}

void hostile_rv_grid_bounds_of(rvh_ctx *cx)
{
    rvt_alloc st = {0};
    rv_grid *g = grid_setup(cx, &st);
    float lo[2], hi[2];
    rvh_poison(lo, sizeof lo);
    rvh_poison(hi, sizeof hi);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_bounds_of(NULL, 0, 0, lo, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_bounds_of(g, 0, 0, NULL, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_bounds_of(g, 0, 0, lo, NULL));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_bounds_of(g, 4, 0, lo, hi));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_bounds_of(g, 0, UINT32_MAX, lo, hi));
    RVH_CHECK(cx, rvh_is_poisoned(lo, sizeof lo) && rvh_is_poisoned(hi, sizeof hi));
    grid_teardown(cx, g);
}

void hostile_rv_grid_distance_to(rvh_ctx *cx)
{
    rvt_alloc st = {0};
    rv_grid *g = grid_setup(cx, &st);
    float p[3] = { 0, 0, 0 }, d = 42.0f;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_distance_to(NULL, 0, 0, p, &d));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_distance_to(g, 0, 0, NULL, &d));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_distance_to(g, 0, 0, p, NULL));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_grid_distance_to(g, 4, 4, p, &d));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3] = { 0, 0, 0 };
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_distance_to(g, 0, 0, bad, &d));
        }
    RVH_CHECK(cx, d == 42.0f);
    /* Far positions: a distance, never NaN (infinity only if it truly exceeds float). */
    for (int e = 0; e < RVH_EXTREME; e++) {
        float far[3] = { rvh_extreme[e], 0.0f, rvh_extreme[e] };
        RVH_ACCEPT(cx, rv_grid_distance_to(g, 1, 1, far, &d));
        RVH_CHECK(cx, d >= 0.0f && !isnan(d));
    }
    grid_teardown(cx, g);
}

void hostile_rv_grid_update(rvh_ctx *cx)
{
    rvt_alloc st = {0};
    rv_grid *g = grid_setup(cx, &st);
    streaming *s = residency_setup(cx);
    rv_stream_source src = { { 0, 0, 0 }, 3.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_update(NULL, &src, 1, s->res));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_update(g, &src, 1, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_update(g, NULL, 1, s->res));
    rv_stream_source bad = src;
    bad.radius = -1.0f;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_grid_update(g, &bad, 1, s->res));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        for (int k = 0; k < 3; k++) {
            bad = src;
            bad.position[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_update(g, &bad, 1, s->res));
        }
        bad = src;
        bad.radius = rvh_nonfinite[b];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_update(g, &bad, 1, s->res));
    }
    /* A bad source after a good one: nothing of the good one is applied either. */
    rv_stream_source pair[2] = { src, src };
    pair[1].radius = NAN;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_grid_update(g, pair, 2, s->res));
    /* Huge reach is clipped to the grid; a source far away touches nothing. */
    rv_stream_source huge = { { 0, 0, 0 }, 1e30f }, away = { { 1e30f, 0, -1e30f }, 1.0f };
    RVH_ACCEPT(cx, rv_grid_update(g, &huge, 1, s->res));
    RVH_CHECK(cx, rv_grid_get_stats(g).touched_cells == 16);
    RVH_ACCEPT(cx, rv_grid_update(g, &away, 1, s->res));
    RVH_CHECK(cx, rv_grid_get_stats(g).touched_cells == 0 && rv_grid_get_stats(g).cells_visited == 0);
    RVH_ACCEPT(cx, rv_grid_update(g, NULL, 0, s->res));
    residency_teardown(cx, s);
    grid_teardown(cx, g);

    /* Sources whose squares together hold more than 2^24 cells: refused up front. */
    rvt_alloc big_alloc = {0};
    rv_grid_desc d = good_grid_desc(&big_alloc);
    d.count_x = 65535;
    d.count_z = 65535;
    d.cell_size = 1.0f;
    rv_grid *big;
    RVH_ACCEPT(cx, rv_grid_create(&d, &big));
    rv_residency *r;
    RVH_ACCEPT(cx, rv_residency_create(NULL, &r));
    RVH_ACCEPT(cx, rv_residency_begin_frame(r, 0.0));
    rv_stream_source both[2] = { { { 0, 0, 0 }, 1e6f }, { { 1, 0, 1 }, 1e6f } };
    RVH_CHECK(cx, rv_grid_update(big, both, 2, r) == RV_ERR_CAPACITY);
    RVH_CHECK(cx, rv_residency_get_stats(r).pages_requested == 0);
    rv_residency_destroy(r);
    /* No frame begun yet. */
    RVH_ACCEPT(cx, rv_residency_create(NULL, &r));
    RVH_CHECK(cx, rv_grid_update(big, &src, 1, r) == RV_ERR_BAD_STATE);
    rv_residency_destroy(r);
    rv_grid_destroy(big);
}

void hostile_rv_grid_get_stats(rvh_ctx *cx)
{
    rv_grid_stats z = rv_grid_get_stats(NULL);
    RVH_CHECK(cx, z.touched_cells == 0 && z.requested_cells == 0 && z.cells_visited == 0);
}
