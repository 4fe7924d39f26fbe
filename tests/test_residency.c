/* Page residency (docs/design.md §6): states, load order, eviction under a budget,
 * retries, drops, refreshes, a randomized soak against a host-side model, allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "support/rvt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rv_page_key K(uint32_t index) { return (rv_page_key){ 1, index }; }

/* A residency whose pages are declared to be at least 1 byte: prefetch is not held back for
 * an unknown page size, and the largest placed size soon takes over as the estimate. */
static rv_residency *make(uint64_t budget, uint32_t drop_after)
{
    rv_residency_desc d = {0};
    d.budget_bytes = budget;
    d.drop_after_frames = drop_after;
    d.page_bytes_estimate = 1;
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(&d, &r), RV_OK);
    assert_non_null(r);
    return r;
}

static void frame(rv_residency *r, double now_ms)
{
    assert_int_equal(rv_residency_begin_frame(r, now_ms), RV_OK);
}

static void want(rv_residency *r, uint32_t index, float distance, bool in_use)
{
    assert_int_equal(rv_residency_request(r, K(index), distance, in_use), RV_OK);
}

static uint32_t take(rv_residency *r, rv_page_request *out, uint32_t max)
{
    uint32_t n = 12345;
    assert_int_equal(rv_residency_take_requests(r, out, max, &n), RV_OK);
    return n;
}

static uint32_t evict(rv_residency *r, rv_page_eviction *out, uint32_t max)
{
    uint32_t n = 12345;
    assert_int_equal(rv_residency_take_evictions(r, out, max, &n), RV_OK);
    return n;
}

static rv_page_info info_of(const rv_residency *r, rv_page_key key)
{
    rv_page_info info;
    assert_int_equal(rv_residency_page_info(r, key, &info), RV_OK);
    return info;
}

/* Requests, takes and places pages [first, first + n) with size bytes each (touched). */
static void load_pages(rv_residency *r, uint32_t first, uint32_t n, uint64_t size, bool in_use)
{
    for (uint32_t i = 0; i < n; i++)
        want(r, first + i, (float)i, in_use);
    rv_page_request req[64];
    uint32_t got = take(r, req, 64);
    assert_int_equal(got, n);
    for (uint32_t i = 0; i < got; i++)
        assert_int_equal(rv_residency_place(r, req[i].key, size), RV_OK);
}

/* ---- creation and states ------------------------------------------------------------------ */

static void test_create_applies_defaults_and_refuses_bad_desc(void **state)
{
    (void)state;
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(NULL, &r), RV_OK);
    /* Before the first frame, wants have no frame to belong to. */
    assert_int_equal(rv_residency_request(r, K(1), 0, true), RV_ERR_BAD_STATE);
    rv_grid_desc gd = { .cell_size = 1, .count_x = 4, .count_z = 4 };
    rv_grid *g = NULL;
    assert_int_equal(rv_grid_create(&gd, &g), RV_OK);
    rv_stream_source src = { { 1, 0, 1 }, 1 };
    assert_int_equal(rv_grid_update(g, &src, 1, r), RV_ERR_BAD_STATE);
    assert_int_equal(rv_grid_get_stats(g).requested_cells, 0);
    rv_grid_destroy(g);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.pages_requested, 0);
    assert_int_equal(s.budget_bytes, 256ull << 20);
    assert_int_equal(s.frame, 0);
    assert_int_equal(s.pages_resident, 0);
    assert_false(s.over_budget);
    rv_residency_destroy(r);
    rv_residency_destroy(NULL);

    rv_residency *sentinel = (rv_residency *)(uintptr_t)0x99;
    struct { rv_residency_desc d; rv_result expect; } cases[] = {
        { { .retry_ms = -1 }, RV_ERR_INVALID_ARG },
        { { .retry_cap_ms = -5 }, RV_ERR_INVALID_ARG },
        { { .retry_backoff = 0.5f }, RV_ERR_INVALID_ARG },
        { { .retry_ms = NAN }, RV_ERR_NOT_FINITE },
        { { .retry_backoff = INFINITY }, RV_ERR_NOT_FINITE },
        { { .retry_cap_ms = NAN }, RV_ERR_NOT_FINITE },
        { { .retry_ms = 500, .retry_cap_ms = 200 }, RV_ERR_ORDER },
        { { .retry_ms = 20000 }, RV_ERR_ORDER }, /* above the default cap */
        { { .page_capacity = UINT32_MAX }, RV_ERR_CAPACITY },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = sentinel;
        assert_int_equal(rv_residency_create(&cases[i].d, &r), cases[i].expect);
        assert_ptr_equal(r, sentinel);
        /* A world refuses the same desc at once, not at its first grid. */
        rv_world_desc wd = { 0 };
        wd.residency = cases[i].d;
        rv_world *w = (rv_world *)(uintptr_t)0x77;
        assert_int_equal(rv_world_create(&wd, &w), cases[i].expect);
        assert_ptr_equal(w, (rv_world *)(uintptr_t)0x77);
    }
    assert_int_equal(rv_residency_create(NULL, NULL), RV_ERR_INVALID_ARG);
    rv_residency_desc one = { .retry_backoff = 1 }; /* constant retry delay is allowed */
    assert_int_equal(rv_residency_create(&one, &r), RV_OK);
    rv_residency_destroy(r);
}

static void test_page_moves_absent_requested_loading_resident_evicted_absent(void **state)
{
    (void)state;
    rv_residency *r = make(100, 0);
    frame(r, 0);
    assert_int_equal(info_of(r, K(7)).state, RV_PAGE_ABSENT);
    want(r, 7, 3, true);
    assert_int_equal(info_of(r, K(7)).state, RV_PAGE_REQUESTED);
    rv_page_request req[4];
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(req[0].key.index, 7);
    assert_float_equal(req[0].distance, 3, 0);
    assert_int_equal(req[0].flags, RV_PAGE_REQUEST_IN_USE);
    assert_int_equal(info_of(r, K(7)).state, RV_PAGE_LOADING);
    assert_int_equal(rv_residency_loads_in_flight(r), 1);
    assert_int_equal(take(r, req, 4), 0); /* handed out once */
    assert_int_equal(rv_residency_place(r, K(7), 80), RV_OK);
    rv_page_info info = info_of(r, K(7));
    assert_int_equal(info.state, RV_PAGE_RESIDENT);
    assert_int_equal(info.size_bytes, 80);
    assert_int_equal(rv_residency_loads_in_flight(r), 0);
    /* Resident pages are not requested again. */
    frame(r, 16);
    want(r, 7, 1, true);
    assert_int_equal(take(r, req, 4), 0);
    /* Next frame nobody touches it; a smaller budget evicts it. */
    frame(r, 32);
    assert_int_equal(rv_residency_set_budget(r, 50), RV_OK);
    rv_page_eviction ev[4];
    assert_int_equal(evict(r, ev, 4), 1);
    assert_int_equal(ev[0].key.index, 7);
    assert_int_equal(ev[0].size_bytes, 80);
    info = info_of(r, K(7));
    assert_int_equal(info.state, RV_PAGE_EVICTED);
    assert_int_equal(info.size_bytes, 80);
    assert_int_equal(rv_residency_refresh(r, K(7)), RV_ERR_NOT_FOUND); /* nothing to reload */
    frame(r, 48);
    assert_int_equal(info_of(r, K(7)).state, RV_PAGE_ABSENT);
    assert_int_equal(rv_residency_get_stats(r).bytes_resident, 0);
    rv_residency_destroy(r);
}

static void test_evicted_page_wanted_again_in_the_same_frame_loads_anew(void **state)
{
    (void)state;
    rv_residency *r = make(100, 0);
    frame(r, 0);
    load_pages(r, 0, 1, 60, false);
    frame(r, 1);
    assert_int_equal(rv_residency_set_budget(r, 10), RV_OK);
    rv_page_eviction ev[2];
    assert_int_equal(evict(r, ev, 2), 1);
    want(r, 0, 2, false);
    assert_int_equal(info_of(r, K(0)).state, RV_PAGE_REQUESTED);
    frame(r, 2); /* the tombstone does not outlive its frame, the request does */
    assert_int_equal(info_of(r, K(0)).state, RV_PAGE_REQUESTED);
    assert_int_equal(rv_residency_set_budget(r, 100), RV_OK); /* room for it again */
    rv_page_request req[2];
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(req[0].flags, 0);
    rv_residency_destroy(r);
}

/* ---- load order ----------------------------------------------------------------------- */

static void test_requests_come_nearest_first_with_ties_by_source_then_index(void **state)
{
    (void)state;
    rv_residency *r = make(0, 0);
    frame(r, 0);
    uint64_t seed = 11;
    enum { N = 300 };
    for (uint32_t i = 0; i < N; i++) {
        float d = (float)(rvt_next(&seed) % 20); /* many ties */
        rv_page_key key = { (uint32_t)(rvt_next(&seed) % 3), i };
        assert_int_equal(rv_residency_request(r, key, d, true), RV_OK);
    }
    rv_page_request req[N];
    uint32_t n = 0;
    for (uint32_t got; (got = take(r, req + n, 7)) > 0;) /* in small batches */
        n += got;
    assert_int_equal(n, N);
    for (uint32_t i = 1; i < n; i++) {
        const rv_page_request *a = &req[i - 1], *b = &req[i];
        bool ordered = a->distance < b->distance ||
                       (a->distance == b->distance &&
                        (a->key.source < b->key.source || (a->key.source == b->key.source && a->key.index < b->key.index)));
        assert_true(ordered);
    }
    /* Requesting again in one frame keeps the smallest distance. */
    frame(r, 1);
    want(r, 1000, 9, false);
    want(r, 1001, 5, false);
    want(r, 1000, 2, false);
    want(r, 1000, 7, false);
    assert_int_equal(take(r, req, 1), 1);
    assert_int_equal(req[0].key.index, 1000);
    assert_float_equal(req[0].distance, 2, 0);
    rv_residency_destroy(r);
}

static void test_in_use_before_prefetch_and_this_frame_before_older(void **state)
{
    (void)state;
    rv_residency *r = make(0, 0);
    frame(r, 0);
    want(r, 1, 0.5f, false); /* frame 1, prefetch, very near */
    frame(r, 1);
    want(r, 2, 9, false);    /* this frame, prefetch */
    want(r, 3, 20, true);    /* this frame, in use, far (a source with a larger radius) */
    want(r, 4, 1, false);    /* this frame, prefetch, near */
    rv_page_request req[8];
    assert_int_equal(take(r, req, 8), 4);
    assert_int_equal(req[0].key.index, 3);
    assert_int_equal(req[0].flags, RV_PAGE_REQUEST_IN_USE);
    assert_int_equal(req[1].key.index, 4);
    assert_int_equal(req[2].key.index, 2);
    assert_int_equal(req[3].key.index, 1); /* an older request goes last, however near */
    /* A stale request is raised when it is wanted again. */
    frame(r, 2);
    want(r, 10, 1, false);
    frame(r, 3);
    want(r, 11, 1, false);
    want(r, 10, 5, true);
    assert_int_equal(take(r, req, 8), 2);
    assert_int_equal(req[0].key.index, 10);
    assert_int_equal(req[1].key.index, 11);
    rv_residency_destroy(r);
}

/* Older requests: the most recently requested first, however near an older one is; those
 * of one earlier frame as that frame ordered them (touched then first, then nearest). */
static void test_older_requests_go_most_recent_first(void **state)
{
    (void)state;
    rv_residency *r = make(0, 0);
    frame(r, 0);
    want(r, 1, 1, false);  /* frame 0, prefetch, nearest of all */
    frame(r, 1);
    want(r, 2, 30, false); /* frame 1, prefetch, far */
    want(r, 3, 10, false); /* frame 1, prefetch, nearer */
    want(r, 4, 50, true);  /* frame 1, in use, farthest */
    frame(r, 2);
    want(r, 5, 40, false); /* frame 2, prefetch */
    frame(r, 3);           /* nothing requested now: every queued page is an older request */
    rv_page_request req[8];
    assert_int_equal(take(r, req, 8), 5);
    const uint32_t expect[5] = { 5, 4, 3, 2, 1 };
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(req[i].key.index, expect[i]);
    rv_residency_destroy(r);
}

/* ---- eviction ------------------------------------------------------------------------- */

static void test_lru_evicts_least_recently_wanted_first(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 0);
    for (uint32_t i = 0; i < 5; i++) { /* page i wanted (and placed) in frame i + 1 */
        frame(r, i);
        load_pages(r, i, 1, 100, true);
    }
    frame(r, 10);
    want(r, 1, 3, false); /* a lead-ring request refreshes page 1's recency */
    assert_int_equal(rv_residency_set_budget(r, 250), RV_OK);
    rv_page_eviction ev[8];
    assert_int_equal(evict(r, ev, 8), 3);
    assert_int_equal(ev[0].key.index, 0);
    assert_int_equal(ev[1].key.index, 2);
    assert_int_equal(ev[2].key.index, 3);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.bytes_resident, 200);
    assert_int_equal(s.pages_resident, 2);
    assert_int_equal(s.evicted, 3);
    assert_false(s.over_budget);
    /* max bounds each call; calling again continues in order. */
    assert_int_equal(rv_residency_set_budget(r, 0), RV_OK);
    assert_int_equal(evict(r, ev, 1), 1);
    assert_int_equal(ev[0].key.index, 4);
    assert_true(rv_residency_get_stats(r).over_budget); /* says what is resident now */
    assert_int_equal(evict(r, ev, 1), 1);
    assert_int_equal(ev[0].key.index, 1);
    assert_false(rv_residency_get_stats(r).over_budget);
    assert_int_equal(evict(r, ev, 1), 0);
    assert_int_equal(evict(r, NULL, 0), 0);
    rv_residency_destroy(r);
}

static void test_never_evicts_a_page_touched_this_frame(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 0);
    frame(r, 0);
    load_pages(r, 0, 4, 100, true);
    frame(r, 16);
    want(r, 0, 0, true);
    want(r, 2, 0, true);
    want(r, 3, 1, false);
    assert_int_equal(rv_residency_set_budget(r, 0), RV_OK);
    rv_page_eviction ev[8];
    assert_int_equal(evict(r, ev, 8), 2);
    assert_int_equal(ev[0].key.index, 1);
    assert_int_equal(ev[1].key.index, 3); /* requested but not touched: may go */
    assert_int_equal(info_of(r, K(0)).state, RV_PAGE_RESIDENT);
    assert_int_equal(info_of(r, K(2)).state, RV_PAGE_RESIDENT);
    /* Placed during a frame in which it was touched: protected too. */
    want(r, 9, 0, true);
    rv_page_request req[2];
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(rv_residency_place(r, K(9), 5), RV_OK);
    assert_int_equal(evict(r, ev, 8), 0);
    /* Next frame, untouched, all of them go. */
    frame(r, 32);
    assert_int_equal(evict(r, ev, 8), 3);
    assert_int_equal(rv_residency_get_stats(r).pages_resident, 0);
    rv_residency_destroy(r);
}

static void test_over_budget_is_reported_not_thrashed(void **state)
{
    (void)state;
    rv_residency *r = make(250, 0);
    frame(r, 0);
    load_pages(r, 0, 3, 100, true);
    rv_page_eviction ev[8];
    assert_int_equal(evict(r, ev, 8), 0);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_true(s.over_budget);
    assert_int_equal(s.over_budget_bytes, 50);
    assert_int_equal(s.frames_over_budget, 1);
    assert_int_equal(evict(r, ev, 8), 0); /* asked again in the frame: still one frame */
    assert_int_equal(rv_residency_get_stats(r).frames_over_budget, 1);
    for (int f = 1; f <= 5; f++) { /* still all in use: no page leaves, no page reloads */
        frame(r, f * 16.0);
        for (uint32_t i = 0; i < 3; i++)
            want(r, i, 0, true);
        rv_page_request req[4];
        assert_int_equal(take(r, req, 4), 0);
        assert_int_equal(evict(r, ev, 8), 0);
        assert_true(rv_residency_get_stats(r).over_budget);
    }
    assert_int_equal(rv_residency_get_stats(r).frames_over_budget, 6);
    /* One page stops being used: it goes and the flag clears. */
    frame(r, 100);
    want(r, 0, 0, true);
    want(r, 1, 0, true);
    assert_int_equal(evict(r, ev, 8), 1);
    assert_int_equal(ev[0].key.index, 2);
    s = rv_residency_get_stats(r);
    assert_false(s.over_budget);
    assert_int_equal(s.over_budget_bytes, 0);
    assert_int_equal(s.bytes_resident, 200);
    rv_residency_destroy(r);
}

static void test_prefetch_pauses_over_budget_and_resumes(void **state)
{
    (void)state;
    rv_residency *r = make(100, 0);
    frame(r, 0);
    load_pages(r, 0, 2, 60, true); /* 120 > 100, both in use */
    rv_page_eviction ev[4];
    assert_int_equal(evict(r, ev, 4), 0);
    assert_true(rv_residency_get_stats(r).over_budget);

    frame(r, 16);
    want(r, 0, 0, true);
    want(r, 1, 0, true);
    want(r, 5, 1, false); /* lead ring: prefetch */
    want(r, 6, 2, true);  /* needed now: loads even over budget */
    rv_page_request req[4];
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(req[0].key.index, 6);
    assert_true(rv_residency_get_stats(r).prefetch_paused);
    assert_int_equal(info_of(r, K(5)).state, RV_PAGE_REQUESTED);
    assert_int_equal(rv_residency_place(r, K(6), 10), RV_OK);

    frame(r, 32); /* the sources moved on: pages 0 and 1 are no longer used */
    want(r, 5, 1, false);
    want(r, 6, 0, true);
    assert_true(rv_residency_get_stats(r).over_budget); /* 130 bytes resident, for now */
    /* Pages nobody wants can make room: the prefetch starts (expected at 60 bytes, the
     * largest page so far) and the evictions that come with it make that room. */
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(req[0].key.index, 5);
    assert_false(rv_residency_get_stats(r).prefetch_paused);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 60);
    assert_int_equal(evict(r, ev, 4), 2); /* 130 + 60 -> 10 + 60 bytes */
    assert_int_equal(ev[0].key.index, 0);
    assert_int_equal(ev[1].key.index, 1);
    assert_false(rv_residency_get_stats(r).over_budget);
    assert_int_equal(rv_residency_place(r, K(5), 60), RV_OK);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.bytes_resident, 70);
    assert_int_equal(s.bytes_loading, 0);
    assert_false(s.over_budget);
    rv_residency_destroy(r);
}

static void test_prefetch_held_back_when_wanted_pages_would_not_fit(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 0);
    frame(r, 0);
    load_pages(r, 0, 9, 100, true); /* 900 of 1000 bytes wanted now */
    frame(r, 16);
    for (uint32_t i = 0; i < 9; i++)
        want(r, i, 0, true);
    for (uint32_t i = 20; i < 23; i++)
        want(r, i, (float)i, false);
    rv_page_request req[8];
    assert_int_equal(take(r, req, 8), 1); /* room for one more page of the mean size */
    assert_int_equal(req[0].key.index, 20);
    assert_true(rv_residency_get_stats(r).prefetch_paused);
    assert_false(rv_residency_get_stats(r).over_budget);
    /* Pages resident but not wanted do not hold prefetch back: they can be evicted. */
    frame(r, 32);
    want(r, 0, 0, true);
    want(r, 21, 21, false);
    want(r, 22, 22, false);
    assert_int_equal(take(r, req, 8), 2);
    rv_residency_destroy(r);
}

/* ---- the budget at every placement -------------------------------------------------------- */

enum { BH_SIDE = 64 };

/* A host on the standalone API that answers every load at once, in the documented order:
 * requests, then the evictions that come with them, then placements. It keeps its own
 * record of what is resident and checks the budget after every placement. */
typedef struct budget_host {
    rv_residency *r;
    rv_grid *grid;
    bool resident[BH_SIDE * BH_SIDE];
    uint64_t page_bytes;      /* size of every page placed */
    uint64_t peak;            /* largest bytes_resident seen after a placement */
    uint32_t requests, prefetches, evictions; /* of the last frame */
    uint32_t over_placements; /* placements after which resident bytes passed the budget */
    double now;
} budget_host;

static void budget_host_init(budget_host *h, const rv_residency_desc *desc, float lead, uint64_t page_bytes)
{
    memset(h, 0, sizeof *h);
    assert_int_equal(rv_residency_create(desc, &h->r), RV_OK);
    rv_grid_desc gd = { .source = 1, .cell_size = 10, .count_x = BH_SIDE, .count_z = BH_SIDE, .lead = lead };
    assert_int_equal(rv_grid_create(&gd, &h->grid), RV_OK);
    h->page_bytes = page_bytes;
}

static void budget_host_destroy(budget_host *h)
{
    rv_grid_destroy(h->grid);
    rv_residency_destroy(h->r);
}

/* After a placement: resident bytes within the budget, or past it with every resident page in
 * use this frame, and over_budget saying so at that moment. */
static void budget_check(budget_host *h)
{
    rv_residency_stats st = rv_residency_get_stats(h->r);
    if (st.bytes_resident > h->peak)
        h->peak = st.bytes_resident;
    assert_int_equal(st.over_budget, st.bytes_resident > st.budget_bytes);
    if (!st.over_budget)
        return;
    assert_int_equal(st.over_budget_bytes, st.bytes_resident - st.budget_bytes);
    for (uint32_t i = 0; i < BH_SIDE * BH_SIDE; i++)
        if (h->resident[i])
            assert_int_equal(info_of(h->r, (rv_page_key){ 1, i }).last_touched_frame, st.frame);
    h->over_placements++;
}

static void budget_frame(budget_host *h, float x, float z, float radius)
{
    h->now += 16;
    frame(h->r, h->now);
    rv_stream_source src = { { x, 0, z }, radius };
    assert_int_equal(rv_grid_update(h->grid, &src, 1, h->r), RV_OK);
    rv_page_request req[64];
    h->requests = take(h->r, req, 64);
    h->prefetches = 0;
    for (uint32_t i = 0; i < h->requests; i++)
        h->prefetches += !(req[i].flags & RV_PAGE_REQUEST_IN_USE);
    h->evictions = 0;
    rv_page_eviction ev[64];
    uint32_t n;
    do {
        n = evict(h->r, ev, 64);
        for (uint32_t i = 0; i < n; i++) {
            assert_true(h->resident[ev[i].key.index]);
            assert_int_equal(ev[i].size_bytes, h->page_bytes);
            h->resident[ev[i].key.index] = false;
        }
        h->evictions += n;
    } while (n == 64);
    for (uint32_t i = 0; i < h->requests; i++) {
        assert_int_equal(rv_residency_place(h->r, req[i].key, h->page_bytes), RV_OK);
        h->resident[req[i].key.index] = true;
        budget_check(h);
    }
}

static void test_evictions_making_room_come_with_the_requests_after_a_teleport(void **state)
{
    (void)state;
    /* 13 pages in use around each place (radius 15 over 10-unit cells), 29 wanted with the
     * lead ring; the budget holds 20. */
    rv_residency_desc d = { .budget_bytes = 20 * 1000 };
    budget_host h;
    budget_host_init(&h, &d, 10, 1000);
    for (int f = 0; f < 45; f++) {
        float at = f >= 15 && f < 30 ? 505.0f : 105.0f; /* there, away, and back */
        budget_frame(&h, at, at, 15);
        if (f == 15 || f == 30) {
            /* The frame the source arrives: loads and the evictions that make room for them
             * come together, before any of the loads lands. */
            assert_int_equal(h.requests, 20);
            assert_int_equal(h.prefetches, 7);
            assert_int_equal(h.evictions, 20);
        }
    }
    assert_int_equal(h.over_placements, 0);
    assert_true(h.peak <= d.budget_bytes);
    assert_int_equal(h.peak, d.budget_bytes); /* prefetch filled the budget, no more */
    budget_host_destroy(&h);
}

static void test_cold_start_prefetch_never_passes_the_budget(void **state)
{
    (void)state;
    /* One page in use (radius 4 in the middle of a 10-unit cell), about fifty in the lead
     * ring, room for eight. */
    const uint64_t budget = 8 * 1000;

    /* No estimate: the first frame loads only the page in use; the size it is placed with
     * is the estimate from then on. */
    rv_residency_desc learn = { .budget_bytes = budget };
    budget_host h;
    budget_host_init(&h, &learn, 40, 1000);
    assert_int_equal(rv_residency_get_stats(h.r).page_bytes_estimate, 0);
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.requests, 1);
    assert_int_equal(h.prefetches, 0);
    assert_true(rv_residency_get_stats(h.r).prefetch_paused);
    assert_int_equal(rv_residency_get_stats(h.r).page_bytes_estimate, 1000);
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.prefetches, 7);
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.requests, 0);
    assert_true(rv_residency_get_stats(h.r).prefetch_paused);
    assert_int_equal(rv_residency_get_stats(h.r).bytes_resident, budget);
    assert_int_equal(h.over_placements, 0);
    budget_host_destroy(&h);

    /* The desc's estimate: prefetch from the first frame, as much as fits. */
    rv_residency_desc declared = { .budget_bytes = budget, .page_bytes_estimate = 1000 };
    budget_host_init(&h, &declared, 40, 1000);
    assert_int_equal(rv_residency_get_stats(h.r).page_bytes_estimate, 1000);
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.requests, 8);
    assert_int_equal(h.prefetches, 7);
    assert_int_equal(rv_residency_get_stats(h.r).bytes_resident, budget);
    assert_int_equal(h.over_placements, 0);
    budget_host_destroy(&h);

    /* An estimate larger than the pages stays the floor: fewer pages, never more. */
    rv_residency_desc generous = { .budget_bytes = budget, .page_bytes_estimate = 2000 };
    budget_host_init(&h, &generous, 40, 1000);
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.requests, 4);
    assert_int_equal(rv_residency_get_stats(h.r).page_bytes_estimate, 2000);
    assert_int_equal(h.over_placements, 0);
    budget_host_destroy(&h);
}

static void test_budget_smaller_than_one_source_needs_is_passed_only_by_pages_in_use(void **state)
{
    (void)state;
    rv_residency_desc d = { .budget_bytes = 5 * 1000 };
    budget_host h;
    budget_host_init(&h, &d, 10, 1000);
    for (int f = 0; f < 3; f++) /* elsewhere first: one page in use, the budget filled */
        budget_frame(&h, 305, 305, 4);
    assert_int_equal(rv_residency_get_stats(h.r).bytes_resident, 5000);
    assert_int_equal(h.over_placements, 0);

    /* 13 pages in use: all load, nothing else does, and everything else goes first. */
    budget_frame(&h, 105, 105, 15);
    assert_int_equal(h.requests, 13);
    assert_int_equal(h.prefetches, 0);
    assert_int_equal(h.evictions, 5);
    assert_true(h.over_placements > 0);
    rv_residency_stats st = rv_residency_get_stats(h.r);
    assert_true(st.over_budget);
    assert_int_equal(st.over_budget_bytes, 8000);
    assert_true(st.prefetch_paused);
    uint64_t frames_over = st.frames_over_budget;
    /* Staying there: no page leaves and none reloads (no thrash); the frame counts. */
    budget_frame(&h, 105, 105, 15);
    assert_int_equal(h.requests, 0);
    assert_int_equal(h.evictions, 0);
    st = rv_residency_get_stats(h.r);
    assert_true(st.over_budget);
    assert_int_equal(st.frames_over_budget, frames_over + 1);
    /* The need shrinks to one page: the same frame's evictions bring the budget back. */
    budget_frame(&h, 105, 105, 4);
    assert_int_equal(h.requests, 0);
    assert_int_equal(h.evictions, 8);
    st = rv_residency_get_stats(h.r);
    assert_false(st.over_budget);
    assert_int_equal(st.bytes_resident, 5000);
    budget_host_destroy(&h);
}

static void test_loads_reserve_the_largest_page_placed_and_refreshes_their_growth(void **state)
{
    (void)state;
    rv_residency_desc d = { .budget_bytes = 1000 };
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(&d, &r), RV_OK);
    frame(r, 0);
    want(r, 0, 0, true);
    rv_page_request req[4];
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 0); /* no size known yet */
    assert_int_equal(rv_residency_place(r, K(0), 300), RV_OK);
    assert_int_equal(rv_residency_get_stats(r).page_bytes_estimate, 300);
    want(r, 1, 0, true);
    want(r, 2, 0, true);
    assert_int_equal(take(r, req, 4), 2);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 600);
    assert_int_equal(rv_residency_place(r, K(1), 200), RV_OK); /* smaller: the estimate stays */
    rv_residency_stats st = rv_residency_get_stats(r);
    assert_int_equal(st.bytes_loading, 300);
    assert_int_equal(st.page_bytes_estimate, 300);
    assert_int_equal(rv_residency_place(r, K(2), 300), RV_OK);
    /* A refresh holds room only for what the estimate exceeds the copy it replaces. */
    assert_int_equal(rv_residency_refresh(r, K(1)), RV_OK);
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 100);
    assert_int_equal(rv_residency_place(r, K(1), 250), RV_OK);
    st = rv_residency_get_stats(r);
    assert_int_equal(st.bytes_loading, 0);
    assert_int_equal(st.bytes_resident, 850);
    /* A prefetch that does not fit beside the pages wanted now waits... */
    want(r, 3, 5, false);
    assert_int_equal(take(r, req, 4), 0);
    assert_true(rv_residency_get_stats(r).prefetch_paused);
    /* ...and starts once they are not wanted; the evictions that come with it make its room. */
    frame(r, 16);
    want(r, 3, 5, false);
    assert_int_equal(take(r, req, 4), 1);
    rv_page_eviction ev[4];
    assert_int_equal(evict(r, ev, 4), 1); /* 850 + 300 expected -> 550 + 300 */
    assert_int_equal(ev[0].key.index, 0);
    /* The page turns out larger than any before: the budget gives way at once and says so;
     * later loads are expected at the new size, and the next evictions restore the budget. */
    assert_int_equal(rv_residency_place(r, K(3), 500), RV_OK);
    st = rv_residency_get_stats(r);
    assert_true(st.over_budget);
    assert_int_equal(st.over_budget_bytes, 50);
    assert_int_equal(st.page_bytes_estimate, 500);
    assert_int_equal(evict(r, ev, 4), 1);
    assert_int_equal(ev[0].key.index, 1);
    assert_false(rv_residency_get_stats(r).over_budget);
    /* A reload in flight whose old copy is evicted lands as a whole page: its room grows. */
    assert_int_equal(rv_residency_refresh(r, K(2)), RV_OK);
    frame(r, 32);
    want(r, 2, 0, false);
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(req[0].flags, RV_PAGE_REQUEST_REFRESH);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 200);
    assert_int_equal(rv_residency_set_budget(r, 0), RV_OK);
    assert_int_equal(evict(r, ev, 4), 2);
    st = rv_residency_get_stats(r);
    assert_int_equal(st.bytes_resident, 0);
    assert_int_equal(st.bytes_loading, 500);
    assert_int_equal(rv_residency_place(r, K(2), 300), RV_OK);
    st = rv_residency_get_stats(r);
    assert_int_equal(st.bytes_loading, 0);
    assert_int_equal(st.bytes_resident, 300);
    rv_residency_destroy(r);

    /* An absurd estimate cannot overflow the room held: each load counts at most 2^32 - 1. */
    rv_residency_desc huge = { .budget_bytes = UINT64_MAX, .page_bytes_estimate = UINT64_MAX };
    assert_int_equal(rv_residency_create(&huge, &r), RV_OK);
    frame(r, 0);
    for (uint32_t i = 0; i < 3; i++)
        want(r, i, (float)i, false);
    assert_int_equal(take(r, req, 4), 3);
    st = rv_residency_get_stats(r);
    assert_int_equal(st.page_bytes_estimate, UINT64_MAX);
    assert_int_equal(st.bytes_loading, 3 * (uint64_t)UINT32_MAX);
    assert_int_equal(rv_residency_place(r, K(0), 10), RV_OK);
    assert_int_equal(rv_residency_get_stats(r).bytes_loading, 2 * (uint64_t)UINT32_MAX);
    rv_residency_destroy(r);
}

/* ---- retries, drops, refreshes ----------------------------------------------------------- */

static void test_failed_load_retries_after_doubling_backoff_up_to_cap(void **state)
{
    (void)state;
    rv_residency_desc d = { .retry_ms = 100, .retry_backoff = 2, .retry_cap_ms = 350, .drop_after_frames = 1000 };
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(&d, &r), RV_OK);
    double wake = -1;
    assert_false(rv_residency_next_wake_ms(r, &wake));
    frame(r, 1000);
    want(r, 1, 0, true);
    rv_page_request req[2];
    double expect_delay[] = { 100, 200, 350, 350 };
    double now = 1000;
    for (int attempt = 0; attempt < 4; attempt++) {
        assert_int_equal(take(r, req, 2), 1);
        assert_int_equal(rv_residency_fail(r, K(1)), RV_OK);
        rv_page_info info = info_of(r, K(1));
        assert_int_equal(info.state, RV_PAGE_REQUESTED);
        assert_true(info.waiting_retry);
        assert_int_equal(info.failures, attempt + 1);
        assert_float_equal(info.retry_at_ms, now + expect_delay[attempt], 1e-9);
        assert_true(rv_residency_next_wake_ms(r, &wake));
        assert_float_equal(wake, now + expect_delay[attempt], 1e-9);
        assert_int_equal(rv_residency_loads_in_flight(r), 0);
        /* Just before the time: still waiting, even though it is wanted. */
        frame(r, wake - 0.5);
        want(r, 1, 0, true);
        assert_int_equal(take(r, req, 2), 0);
        assert_int_equal(rv_residency_get_stats(r).pages_waiting_retry, 1);
        frame(r, wake);
        assert_int_equal(rv_residency_get_stats(r).retried, 1);
        want(r, 1, 0, true);
        now = wake;
    }
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(rv_residency_place(r, K(1), 10), RV_OK);
    assert_int_equal(info_of(r, K(1)).failures, 0); /* a success resets the backoff */
    assert_false(rv_residency_next_wake_ms(r, &wake));
    rv_residency_destroy(r);
}

static void test_stale_request_is_dropped_not_loaded_late(void **state)
{
    (void)state;
    rv_residency *r = make(0, 3);
    frame(r, 0);
    want(r, 1, 0, false);
    want(r, 2, 0, false);
    for (int f = 1; f <= 3; f++) { /* three frames unrequested: still queued */
        frame(r, f);
        assert_int_equal(info_of(r, K(1)).state, RV_PAGE_REQUESTED);
        if (f == 3)
            want(r, 2, 0, false); /* page 2 is wanted again: its clock restarts */
    }
    frame(r, 4);
    assert_int_equal(info_of(r, K(1)).state, RV_PAGE_ABSENT);
    assert_int_equal(info_of(r, K(2)).state, RV_PAGE_REQUESTED);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.dropped, 1);
    assert_int_equal(s.pages_requested, 1);
    rv_page_request req[4];
    assert_int_equal(take(r, req, 4), 1);
    assert_int_equal(req[0].key.index, 2);
    /* A page the host is loading is never dropped. */
    for (int f = 5; f < 20; f++)
        frame(r, f);
    assert_int_equal(info_of(r, K(2)).state, RV_PAGE_LOADING);
    assert_int_equal(rv_residency_place(r, K(2), 1), RV_OK);
    rv_residency_destroy(r);
}

static void test_unwanted_failed_page_is_dropped_not_retried_forever(void **state)
{
    (void)state;
    rv_residency_desc d = { .retry_ms = 10, .drop_after_frames = 2 };
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(&d, &r), RV_OK);
    frame(r, 0);
    want(r, 4, 0, true);
    rv_page_request req[2];
    assert_int_equal(take(r, req, 2), 1);
    frame(r, 16);
    assert_int_equal(rv_residency_fail(r, K(4)), RV_OK);
    frame(r, 32); /* retry due, re-queued; nobody wants it */
    frame(r, 48);
    frame(r, 64);
    assert_int_equal(info_of(r, K(4)).state, RV_PAGE_ABSENT);
    double wake;
    assert_false(rv_residency_next_wake_ms(r, &wake));
    assert_int_equal(rv_residency_get_stats(r).pages_requested, 0);
    rv_residency_destroy(r);
}

static void test_refresh_keeps_old_page_until_new_one_lands(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 2);
    frame(r, 0);
    load_pages(r, 0, 1, 100, true);
    assert_int_equal(rv_residency_refresh(r, K(0)), RV_OK);
    rv_page_info info = info_of(r, K(0));
    assert_int_equal(info.state, RV_PAGE_RESIDENT);
    assert_true(info.refreshing);
    for (int f = 1; f <= 5; f++)
        frame(r, f); /* a refresh is not dropped for being unwanted */
    rv_page_request req[2];
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(req[0].flags & RV_PAGE_REQUEST_REFRESH, RV_PAGE_REQUEST_REFRESH);
    info = info_of(r, K(0));
    assert_int_equal(info.state, RV_PAGE_RESIDENT); /* the old page is still there */
    assert_int_equal(info.size_bytes, 100);
    assert_int_equal(rv_residency_get_stats(r).bytes_resident, 100);
    assert_int_equal(rv_residency_loads_in_flight(r), 1);
    /* The reload fails: the old page stays, and the retry comes. */
    assert_int_equal(rv_residency_fail(r, K(0)), RV_OK);
    info = info_of(r, K(0));
    assert_int_equal(info.state, RV_PAGE_RESIDENT);
    assert_true(info.refreshing && info.waiting_retry);
    frame(r, 1000);
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(rv_residency_place(r, K(0), 140), RV_OK);
    info = info_of(r, K(0));
    assert_false(info.refreshing);
    assert_int_equal(info.size_bytes, 140);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.bytes_resident, 140);
    assert_int_equal(s.pages_resident, 1);
    /* Refreshing a page queued or unknown. */
    want(r, 9, 0, false);
    assert_int_equal(rv_residency_refresh(r, K(9)), RV_OK); /* it will load the new data */
    assert_int_equal(rv_residency_get_stats(r).pages_requested, 1);
    assert_int_equal(rv_residency_refresh(r, K(77)), RV_ERR_NOT_FOUND);
    rv_residency_destroy(r);
}

static void test_refresh_during_load_reloads_and_eviction_cancels_queued_refresh(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 0);
    frame(r, 0);
    want(r, 0, 0, true);
    rv_page_request req[2];
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(rv_residency_refresh(r, K(0)), RV_OK); /* data changed mid-load */
    assert_int_equal(rv_residency_place(r, K(0), 100), RV_OK);
    assert_true(info_of(r, K(0)).refreshing);
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(req[0].flags, RV_PAGE_REQUEST_IN_USE | RV_PAGE_REQUEST_REFRESH);
    assert_int_equal(rv_residency_place(r, K(0), 100), RV_OK);
    assert_false(info_of(r, K(0)).refreshing);

    /* A queued refresh of a page that is evicted is cancelled with it. */
    assert_int_equal(rv_residency_refresh(r, K(0)), RV_OK);
    frame(r, 1);
    assert_int_equal(rv_residency_set_budget(r, 0), RV_OK);
    rv_page_eviction ev[2];
    assert_int_equal(evict(r, ev, 2), 1);
    assert_int_equal(rv_residency_get_stats(r).pages_requested, 0);
    assert_int_equal(take(r, req, 2), 0);

    /* A refresh in flight when its page is evicted lands as a new page. */
    assert_int_equal(rv_residency_set_budget(r, 1000), RV_OK);
    frame(r, 2);
    load_pages(r, 5, 1, 50, false);
    assert_int_equal(rv_residency_refresh(r, K(5)), RV_OK);
    assert_int_equal(take(r, req, 2), 1);
    assert_int_equal(rv_residency_set_budget(r, 0), RV_OK);
    assert_int_equal(evict(r, ev, 2), 1);
    assert_int_equal(info_of(r, K(5)).state, RV_PAGE_LOADING);
    assert_int_equal(rv_residency_place(r, K(5), 60), RV_OK);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.pages_resident, 1);
    assert_int_equal(s.bytes_resident, 60);
    rv_residency_destroy(r);
}

/* ---- grids, stats, arguments -------------------------------------------------------------- */

static void test_two_grids_share_one_residency_without_collisions(void **state)
{
    (void)state;
    rv_grid_desc da = { .source = 7, .cell_size = 10, .count_x = 8, .count_z = 8, .lead = 0 };
    rv_grid_desc db = { .source = 9, .cell_size = 10, .count_x = 8, .count_z = 8, .lead = 5 };
    rv_grid *a = NULL, *b = NULL;
    assert_int_equal(rv_grid_create(&da, &a), RV_OK);
    assert_int_equal(rv_grid_create(&db, &b), RV_OK);
    rv_residency *r = make(0, 0);
    frame(r, 0);
    rv_stream_source s = { { 45, 0, 45 }, 4 };
    assert_int_equal(rv_grid_update(a, &s, 1, r), RV_OK);
    assert_int_equal(rv_grid_update(b, &s, 1, r), RV_OK);
    rv_grid_stats sa = rv_grid_get_stats(a), sb = rv_grid_get_stats(b);
    assert_int_equal(sa.requested_cells, 1);
    assert_int_equal(sb.requested_cells, 9);
    assert_int_equal(rv_residency_get_stats(r).pages_requested, 10); /* same indices, two sources */
    rv_page_request req[16];
    assert_int_equal(take(r, req, 16), 10);
    assert_int_equal(req[0].key.source, 7); /* tie at distance 0: source 7 first */
    assert_int_equal(req[0].key.index, 4 * 8 + 4);
    assert_int_equal(req[1].key.source, 9);
    assert_int_equal(req[1].key.index, 4 * 8 + 4);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(rv_residency_place(r, req[i].key, 10), RV_OK);
    assert_int_equal(info_of(r, (rv_page_key){ 7, 36 }).state, RV_PAGE_RESIDENT);
    assert_int_equal(info_of(r, (rv_page_key){ 9, 36 }).state, RV_PAGE_RESIDENT);
    assert_int_equal(info_of(r, (rv_page_key){ 7, 35 }).state, RV_PAGE_ABSENT);
    assert_int_equal(info_of(r, (rv_page_key){ 9, 35 }).state, RV_PAGE_RESIDENT);
    /* Eviction of one grid's pages leaves the other's. */
    frame(r, 16);
    assert_int_equal(rv_grid_update(a, &s, 1, r), RV_OK);
    assert_int_equal(rv_residency_set_budget(r, 10), RV_OK);
    rv_page_eviction ev[16];
    assert_int_equal(evict(r, ev, 16), 9);
    for (uint32_t i = 0; i < 9; i++)
        assert_int_equal(ev[i].key.source, 9);
    assert_int_equal(info_of(r, (rv_page_key){ 7, 36 }).state, RV_PAGE_RESIDENT);
    rv_residency_destroy(r);
    rv_grid_destroy(a);
    rv_grid_destroy(b);
}

static void test_frame_diff_and_totals(void **state)
{
    (void)state;
    rv_residency *r = make(250, 1);
    frame(r, 0);
    want(r, 0, 0, true);
    want(r, 1, 1, true);
    want(r, 2, 2, false);
    want(r, 3, 3, false);
    rv_page_request req[8];
    assert_int_equal(take(r, req, 3), 3);
    assert_int_equal(rv_residency_place(r, K(0), 100), RV_OK);
    assert_int_equal(rv_residency_place(r, K(1), 100), RV_OK);
    assert_int_equal(rv_residency_fail(r, K(2)), RV_OK);
    rv_residency_stats s = rv_residency_get_stats(r);
    assert_int_equal(s.frame, 1);
    assert_int_equal(s.requested, 4);
    assert_int_equal(s.handed_out, 3);
    assert_int_equal(s.placed, 2);
    assert_int_equal(s.failed, 1);
    assert_int_equal(s.pages_resident, 2);
    assert_int_equal(s.bytes_resident, 200);
    assert_int_equal(s.pages_requested, 2); /* 3 queued, 2 waiting */
    assert_int_equal(s.pages_waiting_retry, 1);
    assert_int_equal(s.pages_loading, 0);
    frame(r, 16);
    want(r, 1, 0, true);
    assert_int_equal(rv_residency_set_budget(r, 150), RV_OK);
    rv_page_eviction ev[4];
    assert_int_equal(evict(r, ev, 4), 1);
    s = rv_residency_get_stats(r);
    assert_int_equal(s.requested, 0); /* per-frame counters restart */
    assert_int_equal(s.placed, 0);
    assert_int_equal(s.evicted, 1);
    assert_int_equal(s.pages_resident, 1);
    frame(r, 32); /* page 3 (queued) and page 2 (waiting its retry): unwanted for 2 frames */
    s = rv_residency_get_stats(r);
    assert_int_equal(s.dropped, 2);
    assert_int_equal(s.pages_requested, 0);
    assert_int_equal(s.pages_waiting_retry, 0);
    frame(r, 200);
    s = rv_residency_get_stats(r);
    assert_int_equal(s.dropped, 0);
    assert_int_equal(s.retried, 0); /* the dropped page's retry never fires */
    assert_int_equal(s.frame, 4);
    rv_residency_stats none = rv_residency_get_stats(NULL);
    assert_int_equal(none.frame, 0);
    rv_residency_destroy(r);
}

static void test_bad_arguments_are_refused_for_every_function(void **state)
{
    (void)state;
    rv_residency *r = make(1000, 0);
    frame(r, 100);
    load_pages(r, 0, 1, 10, true);
    want(r, 1, 1, false);
    rv_residency_stats before = rv_residency_get_stats(r);

    assert_int_equal(rv_residency_begin_frame(NULL, 0), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_begin_frame(r, NAN), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_residency_begin_frame(r, INFINITY), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_residency_begin_frame(r, 99.9), RV_ERR_ORDER); /* time went back */

    assert_int_equal(rv_residency_request(NULL, K(5), 0, true), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_request(r, K(5), -1, true), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_request(r, K(5), NAN, true), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_residency_request(r, K(5), INFINITY, true), RV_ERR_NOT_FINITE);
    assert_int_equal(info_of(r, K(5)).state, RV_PAGE_ABSENT);

    rv_page_request req[2];
    uint32_t n = 77;
    assert_int_equal(rv_residency_take_requests(NULL, req, 2, &n), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_take_requests(r, NULL, 2, &n), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_take_requests(r, req, 2, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(n, 77);
    assert_int_equal(rv_residency_take_requests(r, NULL, 0, &n), RV_OK);
    assert_int_equal(n, 0);

    assert_int_equal(rv_residency_place(NULL, K(0), 1), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_place(r, K(42), 1), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_residency_place(r, K(0), 1), RV_ERR_BAD_STATE); /* resident, not loading */
    assert_int_equal(rv_residency_place(r, K(1), 1), RV_ERR_BAD_STATE); /* queued, not loading */
    assert_int_equal(rv_residency_fail(NULL, K(0)), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_fail(r, K(42)), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_residency_fail(r, K(0)), RV_ERR_BAD_STATE);
    assert_int_equal(rv_residency_fail(r, K(1)), RV_ERR_BAD_STATE);
    assert_int_equal(rv_residency_refresh(NULL, K(0)), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_refresh(r, K(42)), RV_ERR_NOT_FOUND);

    rv_page_eviction ev[2];
    assert_int_equal(rv_residency_take_evictions(NULL, ev, 2, &n), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_take_evictions(r, NULL, 2, &n), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_take_evictions(r, ev, 2, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_set_budget(NULL, 5), RV_ERR_INVALID_ARG);
    rv_page_info info;
    assert_int_equal(rv_residency_page_info(NULL, K(0), &info), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_residency_page_info(r, K(0), NULL), RV_ERR_INVALID_ARG);
    double wake = 3;
    assert_false(rv_residency_next_wake_ms(NULL, &wake));
    assert_false(rv_residency_next_wake_ms(r, NULL));
    assert_float_equal(wake, 3, 0);
    assert_int_equal(rv_residency_loads_in_flight(NULL), 0);
    assert_int_equal(rv_residency_alloc_stats(NULL).allocations, 0);

    rv_residency_stats after = rv_residency_get_stats(r);
    assert_int_equal(after.frame, before.frame);
    assert_int_equal(after.requested, before.requested);
    assert_int_equal(after.handed_out, before.handed_out);
    assert_int_equal(after.placed, before.placed);
    assert_int_equal(after.failed, before.failed);
    assert_int_equal(after.pages_requested, before.pages_requested);
    assert_int_equal(after.pages_resident, before.pages_resident);
    assert_int_equal(after.bytes_resident, before.bytes_resident);
    assert_int_equal(after.budget_bytes, before.budget_bytes);
    assert_int_equal(info_of(r, K(0)).state, RV_PAGE_RESIDENT);
    assert_int_equal(info_of(r, K(1)).state, RV_PAGE_REQUESTED);

    /* Resident bytes cannot pass 2^64 - 1. */
    want(r, 2, 0, true);
    assert_int_equal(take(r, req, 2), 2);
    assert_int_equal(rv_residency_place(r, K(2), UINT64_MAX - 15), RV_OK); /* + 10 of page 0 */
    assert_int_equal(rv_residency_place(r, K(1), 100), RV_ERR_CAPACITY);
    assert_int_equal(info_of(r, K(1)).state, RV_PAGE_LOADING);
    assert_int_equal(rv_residency_place(r, K(1), 5), RV_OK);
    assert_int_equal(rv_residency_get_stats(r).bytes_resident, UINT64_MAX);
    rv_residency_destroy(r);
}

/* ---- randomized soak -------------------------------------------------------------------- */

enum { SOAK_A = 48, SOAK_B = 24, SOAK_PAGES = SOAK_A * SOAK_A + SOAK_B * SOAK_B, SOAK_SOURCES = 3 };

typedef struct soak_page {
    bool resident, in_flight, ever_requested;
    uint64_t size, due_frame, fail_frame;
    uint64_t reserved; /* in flight: the room the budget holds for it, as documented */
} soak_page;

typedef struct soak {
    rv_grid *grid[2];
    rv_residency *r;
    soak_page pages[SOAK_PAGES];
    uint32_t in_flight[SOAK_PAGES];
    uint32_t n_in_flight;
    rv_stream_source src[SOAK_SOURCES];
    float vel[SOAK_SOURCES][2];
    uint32_t n_src, n_active; /* sources moving / given to this frame's updates */
    uint64_t frame;
    double now;
    uint64_t seed;
    uint32_t drop_after;
    uint64_t evictions, placements, failures, over_frames, drops, prefetch_takes;
    uint64_t over_in_use, over_larger, over_late; /* placements that passed the budget, by cause */
    bool no_room; /* this frame's evictions could not make room for every load in flight */
} soak;

static uint32_t soak_slot(rv_page_key key)
{
    assert_true(key.source == 1 || key.source == 2);
    uint32_t limit = key.source == 1 ? SOAK_A * SOAK_A : SOAK_B * SOAK_B;
    assert_true(key.index < limit);
    return key.source == 1 ? key.index : SOAK_A * SOAK_A + key.index;
}

static rv_page_key soak_key(uint32_t slot)
{
    return slot < SOAK_A * SOAK_A ? (rv_page_key){ 1, slot } : (rv_page_key){ 2, slot - SOAK_A * SOAK_A };
}

static bool soak_touched_now(const soak *s, rv_page_key key)
{
    const rv_grid *g = s->grid[key.source - 1];
    uint32_t x, z;
    assert_int_equal(rv_grid_cell_of(g, key.index, &x, &z), RV_OK);
    for (uint32_t i = 0; i < s->n_active; i++) {
        float d;
        assert_int_equal(rv_grid_distance_to(g, x, z, s->src[i].position, &d), RV_OK);
        if (d <= s->src[i].radius)
            return true;
    }
    return false;
}

static void soak_move_sources(soak *s)
{
    if (rvt_next(&s->seed) % 97 == 0)
        s->n_src = (uint32_t)(rvt_next(&s->seed) % (SOAK_SOURCES + 1));
    for (uint32_t i = 0; i < SOAK_SOURCES; i++) {
        rv_stream_source *src = &s->src[i];
        if (rvt_next(&s->seed) % 200 == 0) { /* teleport */
            src->position[0] = rvt_uniform(&s->seed, -30, 270);
            src->position[2] = rvt_uniform(&s->seed, -30, 270);
        }
        if (rvt_next(&s->seed) % 50 == 0) {
            s->vel[i][0] = rvt_uniform(&s->seed, -3, 3);
            s->vel[i][1] = rvt_uniform(&s->seed, -3, 3);
            src->radius = rvt_uniform(&s->seed, 0, 30);
        }
        src->position[0] += s->vel[i][0];
        src->position[2] += s->vel[i][1];
        for (int a = 0; a < 3; a += 2)
            if (src->position[a] < -40 || src->position[a] > 280)
                s->vel[i][a / 2] = -s->vel[i][a / 2];
    }
}

/* rank of a handed-out request, as documented: wanted later, touched, nearer, key. */
static bool soak_rank_le(const soak *s, const rv_page_request *a, const rv_page_request *b)
{
    rv_page_info ia = info_of(s->r, a->key), ib = info_of(s->r, b->key);
    if (ia.last_wanted_frame != ib.last_wanted_frame)
        return ia.last_wanted_frame > ib.last_wanted_frame;
    bool ta = ia.last_touched_frame == ia.last_wanted_frame, tb = ib.last_touched_frame == ib.last_wanted_frame;
    if (ta != tb)
        return ta;
    if (ia.distance != ib.distance)
        return ia.distance < ib.distance;
    if (a->key.source != b->key.source)
        return a->key.source < b->key.source;
    return a->key.index < b->key.index;
}

static void soak_take_requests(soak *s, bool answer_all)
{
    rv_page_request req[48];
    uint32_t max = answer_all ? 48 : (uint32_t)(rvt_next(&s->seed) % 40);
    uint64_t estimate = rv_residency_get_stats(s->r).page_bytes_estimate; /* no placement in between */
    uint32_t n = take(s->r, req, max);
    bool prefetched = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = soak_slot(req[i].key);
        soak_page *p = &s->pages[slot];
        assert_false(p->in_flight); /* never handed out twice */
        bool refresh = req[i].flags & RV_PAGE_REQUEST_REFRESH;
        assert_int_equal(refresh, p->resident);
        prefetched |= !refresh && !(req[i].flags & RV_PAGE_REQUEST_IN_USE);
        if (i > 0)
            assert_true(soak_rank_le(s, &req[i - 1], &req[i]));
        p->in_flight = true;
        p->ever_requested = true;
        p->reserved = refresh ? (estimate > p->size ? estimate - p->size : 0) : estimate;
        p->due_frame = s->frame + (answer_all ? 0 : rvt_next(&s->seed) % 5);
        s->in_flight[s->n_in_flight++] = slot;
    }
    if (prefetched) {
        /* Prefetch only starts when it fits beside the pages wanted now and every load in
         * flight (at the sizes expected): the pages it displaces are ones nobody wants. */
        uint64_t wanted = 0;
        for (uint32_t slot = 0; slot < SOAK_PAGES; slot++)
            if (s->pages[slot].resident && info_of(s->r, soak_key(slot)).last_wanted_frame == s->frame)
                wanted += s->pages[slot].size;
        rv_residency_stats st = rv_residency_get_stats(s->r);
        assert_true(wanted + st.bytes_loading <= st.budget_bytes);
        s->prefetch_takes++;
    }
}

/* Every resident page of the model is touched this frame. */
static bool soak_all_resident_touched(const soak *s)
{
    for (uint32_t slot = 0; slot < SOAK_PAGES; slot++)
        if (s->pages[slot].resident && info_of(s->r, soak_key(slot)).last_touched_frame != s->frame)
            return false;
    return true;
}

static void soak_answer_loads(soak *s, bool no_failures)
{
    for (uint32_t i = 0; i < s->n_in_flight;) {
        uint32_t slot = s->in_flight[i];
        soak_page *p = &s->pages[slot];
        if (p->due_frame > s->frame) {
            i++;
            continue;
        }
        if (!no_failures && rvt_next(&s->seed) % 100 < 15) {
            uint64_t loading = rv_residency_get_stats(s->r).bytes_loading;
            assert_int_equal(rv_residency_fail(s->r, soak_key(slot)), RV_OK);
            assert_int_equal(rv_residency_get_stats(s->r).bytes_loading, loading - p->reserved);
            p->fail_frame = s->frame;
            s->failures++;
        } else {
            uint64_t size = 1024 + rvt_next(&s->seed) % (15 * 1024);
            rv_residency_stats before = rv_residency_get_stats(s->r);
            assert_int_equal(rv_residency_place(s->r, soak_key(slot), size), RV_OK);
            rv_residency_stats st = rv_residency_get_stats(s->r);
            assert_int_equal(st.bytes_loading, before.bytes_loading - p->reserved);
            uint64_t old_size = p->resident ? p->size : 0;
            assert_int_equal(st.bytes_resident, before.bytes_resident - old_size + size);
            p->resident = true;
            p->size = size;
            s->placements++;
            if (st.bytes_resident > st.budget_bytes) {
                /* Past the budget only when the loads of pages in use could not all be made
                 * room for this frame, or the page is larger than the room held for it. */
                assert_true(st.over_budget);
                if (size > old_size + p->reserved)
                    s->over_larger++;
                else if (soak_all_resident_touched(s))
                    s->over_in_use++;
                else {
                    assert_true(s->no_room);
                    s->over_late++;
                }
            }
        }
        p->in_flight = false;
        s->in_flight[i] = s->in_flight[--s->n_in_flight];
    }
}

static void soak_take_evictions(soak *s)
{
    rv_page_eviction ev[16];
    for (;;) {
        uint32_t max = 1 + (uint32_t)(rvt_next(&s->seed) % 16);
        uint32_t n = evict(s->r, ev, max);
        for (uint32_t i = 0; i < n; i++) {
            soak_page *p = &s->pages[soak_slot(ev[i].key)];
            assert_true(p->resident);
            assert_int_equal(ev[i].size_bytes, p->size);
            assert_false(soak_touched_now(s, ev[i].key)); /* never evicted and touched in a frame */
            if (p->in_flight) /* a reload in flight now lands as a whole new page */
                p->reserved = rv_residency_get_stats(s->r).page_bytes_estimate;
            p->resident = false;
            s->evictions++;
        }
        if (n < max)
            break;
    }
    /* The evictions make room for every load in flight, unless only pages in use are left. */
    rv_residency_stats st = rv_residency_get_stats(s->r);
    s->no_room = st.bytes_resident + st.bytes_loading > st.budget_bytes;
    if (s->no_room)
        assert_true(soak_all_resident_touched(s));
}

static void soak_check(soak *s)
{
    rv_residency_stats st = rv_residency_get_stats(s->r);
    uint64_t bytes = 0;
    uint32_t resident = 0;
    for (uint32_t slot = 0; slot < SOAK_PAGES; slot++) {
        const soak_page *p = &s->pages[slot];
        rv_page_info info = info_of(s->r, soak_key(slot));
        if (p->resident) {
            resident++;
            bytes += p->size;
            assert_int_equal(info.state, RV_PAGE_RESIDENT);
            assert_int_equal(info.size_bytes, p->size);
            if (p->in_flight)
                assert_true(info.refreshing);
        } else if (p->in_flight) {
            assert_int_equal(info.state, RV_PAGE_LOADING);
        } else if (info.state == RV_PAGE_REQUESTED) {
            /* still wanted: requested (or failed) within the drop window */
            uint64_t since = info.last_wanted_frame > p->fail_frame ? info.last_wanted_frame : p->fail_frame;
            assert_true(s->frame - since <= s->drop_after);
        } else {
            assert_true(info.state == RV_PAGE_ABSENT || info.state == RV_PAGE_EVICTED);
        }
    }
    assert_int_equal(st.pages_resident, resident);
    assert_int_equal(st.bytes_resident, bytes);
    assert_int_equal(st.over_budget, st.bytes_resident > st.budget_bytes);
    assert_int_equal(st.pages_loading, s->n_in_flight);
    uint64_t reserved = 0;
    for (uint32_t i = 0; i < s->n_in_flight; i++)
        reserved += s->pages[s->in_flight[i]].reserved;
    assert_int_equal(st.bytes_loading, reserved);
    assert_int_equal(rv_residency_loads_in_flight(s->r), s->n_in_flight);
    s->over_frames += st.over_budget;
    s->drops += st.dropped;
}

static void soak_frame(soak *s, bool quiet)
{
    s->frame++;
    s->now += 10 + (double)(rvt_next(&s->seed) % 20);
    assert_int_equal(rv_residency_begin_frame(s->r, s->now), RV_OK);
    s->drops += rv_residency_get_stats(s->r).dropped;
    if (!quiet)
        soak_move_sources(s);
    s->n_active = quiet ? 0 : s->n_src;
    assert_int_equal(rv_grid_update(s->grid[0], s->src, s->n_active, s->r), RV_OK);
    assert_int_equal(rv_grid_update(s->grid[1], s->src, s->n_active, s->r), RV_OK);
    if (!quiet && rvt_next(&s->seed) % 300 == 0)
        assert_int_equal(rv_residency_set_budget(s->r, (256 + rvt_next(&s->seed) % 1792) * 1024), RV_OK);
    /* The documented host loop: requests, then the evictions that make room for them, then
     * placements as loads land (this frame or up to four frames later). */
    soak_take_requests(s, quiet);
    soak_take_evictions(s);
    soak_answer_loads(s, quiet);
    if (!quiet && rvt_next(&s->seed) % 50 == 0) { /* the host's data changed */
        uint32_t slot = (uint32_t)(rvt_next(&s->seed) % SOAK_PAGES);
        rv_result expect = s->pages[slot].resident || s->pages[slot].in_flight ? RV_OK : RV_ERR_NOT_FOUND;
        rv_page_info info = info_of(s->r, soak_key(slot));
        if (info.state == RV_PAGE_REQUESTED)
            expect = RV_OK;
        assert_int_equal(rv_residency_refresh(s->r, soak_key(slot)), expect);
    }
    soak_check(s);
}

static void test_randomized_soak_keeps_invariants(void **state)
{
    (void)state;
    soak *s = calloc(1, sizeof *s);
    s->seed = 2024;
    s->drop_after = 8;
    rv_residency_desc d = { .budget_bytes = 1 << 20, .drop_after_frames = s->drop_after, .retry_ms = 30,
                            .retry_backoff = 2, .retry_cap_ms = 400, .page_capacity = 16 };
    assert_int_equal(rv_residency_create(&d, &s->r), RV_OK);
    rv_grid_desc ga = { .source = 1, .cell_size = 5, .count_x = SOAK_A, .count_z = SOAK_A, .lead = 5 };
    rv_grid_desc gb = { .source = 2, .origin = { -20, -20 }, .cell_size = 10, .count_x = SOAK_B, .count_z = SOAK_B };
    assert_int_equal(rv_grid_create(&ga, &s->grid[0]), RV_OK);
    assert_int_equal(rv_grid_create(&gb, &s->grid[1]), RV_OK);
    s->n_src = SOAK_SOURCES;
    for (uint32_t i = 0; i < SOAK_SOURCES; i++) {
        s->src[i] = (rv_stream_source){ { 40.0f + 60 * i, 0, 120 }, 12 };
        s->vel[i][0] = 1.5f;
        s->vel[i][1] = -1.0f + i;
    }
    int frames = RVT_HEAVY(10000, 1500);
    for (int f = 0; f < frames; f++)
        soak_frame(s, false);
    /* Everything requested is eventually placed or dropped: with no sources and a host that
     * answers every load at once, the queue and the loads drain completely. */
    for (uint32_t f = 0; f < s->drop_after + 10; f++)
        soak_frame(s, true);
    rv_residency_stats st = rv_residency_get_stats(s->r);
    assert_int_equal(st.pages_requested, 0);
    assert_int_equal(st.pages_loading, 0);
    for (uint32_t slot = 0; slot < SOAK_PAGES; slot++) {
        rv_page_state ps = info_of(s->r, soak_key(slot)).state;
        assert_true(ps == RV_PAGE_RESIDENT || ps == RV_PAGE_ABSENT || ps == RV_PAGE_EVICTED);
    }
    printf("soak: %llu placements passed the budget: %llu with every page in use, %llu larger than the room held, %llu late\n",
           (unsigned long long)(s->over_in_use + s->over_larger + s->over_late), (unsigned long long)s->over_in_use,
           (unsigned long long)s->over_larger, (unsigned long long)s->over_late);
    /* The soak exercised what it claims to. */
    assert_true(s->placements > 1000);
    assert_true(s->failures > 100);
    assert_true(s->evictions > 100);
    assert_true(s->over_frames > 0);
    assert_true(s->drops > 0);
    rv_grid_destroy(s->grid[0]);
    rv_grid_destroy(s->grid[1]);
    rv_residency_destroy(s->r);
    free(s);
}

/* ---- allocation ------------------------------------------------------------------------- */

/* The benchmark's walk: 16 sources circling their own centres over cells 20..44. */
static void walk_sources(rv_stream_source *src, int f, float cell)
{
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            float cx = 20 + 8 * i, cz = 20 + 8 * j, a = (float)f * 0.5f / 6.0f + (float)(i + 4 * j);
            src[j * 4 + i] = (rv_stream_source){ { (cx + 6 * cosf(a)) * cell, 0, (cz + 6 * sinf(a)) * cell }, 8 * cell };
        }
}

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    rv_residency_desc d = { .budget_bytes = 2600ull * 16384 }; /* lead pages get evicted */
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(&d, &r), RV_OK);
    rv_grid_desc gd = { .source = 1, .cell_size = 2, .count_x = 4096, .count_z = 4096, .lead = 4 };
    rv_grid *g = NULL;
    assert_int_equal(rv_grid_create(&gd, &g), RV_OK);
    rv_stream_source src[16];
    rv_page_request req[256];
    rv_page_eviction ev[256];
    rv_alloc_stats warm = {0};
    uint64_t evicted = 0, placed = 0;
    int warmup = 160, frames = warmup + RVT_HEAVY(600, 200);
    for (int f = 0; f < frames; f++) {
        if (f == warmup)
            warm = rv_residency_alloc_stats(r);
        frame(r, f * 16.0);
        walk_sources(src, f, 2);
        assert_int_equal(rv_grid_update(g, src, 16, r), RV_OK);
        uint32_t n;
        do {
            n = take(r, req, 256);
            for (uint32_t i = 0; i < n; i++)
                assert_int_equal(rv_residency_place(r, req[i].key, 16384), RV_OK);
            placed += f >= warmup ? n : 0;
        } while (n == 256);
        do {
            n = evict(r, ev, 256);
            evicted += f >= warmup ? n : 0;
        } while (n == 256);
    }
    rv_alloc_stats after = rv_residency_alloc_stats(r);
    assert_int_equal(after.allocations, warm.allocations);
    assert_int_equal(after.reallocations, warm.reallocations);
    assert_int_equal(after.frees, warm.frees);
    assert_true(placed > 0);  /* the window really loaded */
    assert_true(evicted > 0); /* and really evicted */
    rv_grid_destroy(g);
    rv_residency_destroy(r);
}

typedef struct res_env {
    rv_residency *r;
    rv_allocator allocator;
} res_env;

static void *request_setup(const rv_allocator *a)
{
    res_env *e = calloc(1, sizeof *e);
    rv_residency_desc d = { .allocator = *a, .page_capacity = 1 };
    assert_int_equal(rv_residency_create(&d, &e->r), RV_OK);
    assert_int_equal(rv_residency_begin_frame(e->r, 0), RV_OK);
    for (uint32_t i = 0; i < 8; i++) /* fills the first block of records */
        assert_int_equal(rv_residency_request(e->r, K(i), 1, true), RV_OK);
    return e;
}

static rv_result request_call(void *obj)
{
    res_env *e = obj;
    return rv_residency_request(e->r, K(8), 0, false);
}

static uint64_t request_fingerprint(void *obj)
{
    res_env *e = obj;
    rv_residency_stats s = rv_residency_get_stats(e->r);
    uint64_t h = s.pages_requested * 31 + s.requested;
    for (uint32_t i = 0; i < 10; i++)
        h = h * 131 + info_of(e->r, K(i)).state;
    return h;
}

static void res_teardown(void *obj)
{
    res_env *e = obj;
    rv_residency_destroy(e->r);
    free(e);
}

static void *create_setup(const rv_allocator *a)
{
    res_env *e = calloc(1, sizeof *e);
    e->allocator = *a;
    return e;
}

static rv_result create_call(void *obj)
{
    res_env *e = obj;
    rv_residency_desc d = { .allocator = e->allocator, .page_capacity = 100 };
    return rv_residency_create(&d, &e->r);
}

static uint64_t create_fingerprint(void *obj)
{
    res_env *e = obj;
    return (uint64_t)(uintptr_t)e->r;
}

static void test_allocating_calls_survive_every_allocation_failure(void **state)
{
    (void)state;
    rvt_sweep create = { "residency_create", create_setup, create_call, create_fingerprint, res_teardown };
    assert_true(rvt_run_sweep(&create) >= 4); /* the object, records, heaps, map */
    rvt_sweep request = { "residency_request", request_setup, request_call, request_fingerprint, res_teardown };
    assert_true(rvt_run_sweep(&request) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_applies_defaults_and_refuses_bad_desc),
        cmocka_unit_test(test_page_moves_absent_requested_loading_resident_evicted_absent),
        cmocka_unit_test(test_evicted_page_wanted_again_in_the_same_frame_loads_anew),
        cmocka_unit_test(test_requests_come_nearest_first_with_ties_by_source_then_index),
        cmocka_unit_test(test_in_use_before_prefetch_and_this_frame_before_older),
        cmocka_unit_test(test_older_requests_go_most_recent_first),
        cmocka_unit_test(test_lru_evicts_least_recently_wanted_first),
        cmocka_unit_test(test_never_evicts_a_page_touched_this_frame),
        cmocka_unit_test(test_over_budget_is_reported_not_thrashed),
        cmocka_unit_test(test_prefetch_pauses_over_budget_and_resumes),
        cmocka_unit_test(test_prefetch_held_back_when_wanted_pages_would_not_fit),
        cmocka_unit_test(test_evictions_making_room_come_with_the_requests_after_a_teleport),
        cmocka_unit_test(test_cold_start_prefetch_never_passes_the_budget),
        cmocka_unit_test(test_budget_smaller_than_one_source_needs_is_passed_only_by_pages_in_use),
        cmocka_unit_test(test_loads_reserve_the_largest_page_placed_and_refreshes_their_growth),
        cmocka_unit_test(test_failed_load_retries_after_doubling_backoff_up_to_cap),
        cmocka_unit_test(test_stale_request_is_dropped_not_loaded_late),
        cmocka_unit_test(test_unwanted_failed_page_is_dropped_not_retried_forever),
        cmocka_unit_test(test_refresh_keeps_old_page_until_new_one_lands),
        cmocka_unit_test(test_refresh_during_load_reloads_and_eviction_cancels_queued_refresh),
        cmocka_unit_test(test_two_grids_share_one_residency_without_collisions),
        cmocka_unit_test(test_frame_diff_and_totals),
        cmocka_unit_test(test_bad_arguments_are_refused_for_every_function),
        cmocka_unit_test(test_randomized_soak_keeps_invariants),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_allocating_calls_survive_every_allocation_failure),
    };
    return cmocka_run_group_tests_name("residency", tests, NULL, NULL);
}
