/* Streaming grid and residency benchmark.
 *
 * grid_update_4096: 16 sources (radius 8 cells, lead 2 cells), each circling its own centre
 * (4 x 4 centres evenly spread over cells 20..44 in x and z) on a 6-cell circle at 0.5 cell
 * per frame, for 1,000 frames, with the host loop every frame: take requests, place each at
 * 16 KiB, take evictions; budget 64 MiB. `ours` runs it on a 4096 x 4096 grid, `baseline` on
 * a 64 x 64 grid over the same cells, in the same run: both see identical work, so the ratio
 * shows whether the update's cost depends on the grid's size (it must not: 0.8..1.25).
 * Extra fields: µs per grid update alone, and the residency's ns per request handed out,
 * per place, and per eviction (from a separate drain of 65,536 resident pages, since the
 * walk itself stays within its budget). */
#include "bench_util.h"
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define WALK_FRAMES 1000
#define WALK_SOURCES 16
#define CELL 4.0f /* world units per cell */
#define PAGE_BYTES (16u * 1024u)
#define BATCH 256

typedef struct walk_result {
    double frame_ns;    /* whole frames (update + host loop), total */
    double update_ns;   /* rv_grid_update alone, total */
    double request_ns;  /* rv_residency_take_requests, total */
    double place_ns;    /* rv_residency_place, total */
    uint64_t requests, places, evictions, cells_visited;
} walk_result;

static void walk_sources(rv_stream_source *src, int frame)
{
    const float two_pi = 6.2831853f;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            int k = j * 4 + i;
            float cx = 20.5f + 8.0f * i, cz = 20.5f + 8.0f * j;
            float angle = (float)frame * (0.5f / 6.0f) + two_pi * (float)k / WALK_SOURCES;
            src[k].position[0] = (cx + 6.0f * cosf(angle)) * CELL;
            src[k].position[1] = 0.0f;
            src[k].position[2] = (cz + 6.0f * sinf(angle)) * CELL;
            src[k].radius = 8.0f * CELL;
        }
}

/* One measured walk on a count x count grid; grid and residency are made outside the
 * timed region. Returns false on an rvis error. */
static bool run_walk(uint32_t count, walk_result *out)
{
    rv_residency_desc rd = { .budget_bytes = 64ull << 20 };
    rv_grid_desc gd = { .source = 1, .cell_size = CELL, .count_x = count, .count_z = count, .lead = 2.0f * CELL };
    rv_residency *res = NULL;
    rv_grid *grid = NULL;
    if (rv_residency_create(&rd, &res) != RV_OK || rv_grid_create(&gd, &grid) != RV_OK) {
        rv_residency_destroy(res);
        return false;
    }
    static rv_page_request requests[BATCH];
    static rv_page_eviction evictions[BATCH];
    rv_stream_source src[WALK_SOURCES];
    walk_result w = {0};
    bool ok = true;
    for (int f = 0; f < WALK_FRAMES && ok; f++) {
        walk_sources(src, f);
        uint64_t t0 = rvb_now_ns();
        ok &= rv_residency_begin_frame(res, f * (1000.0 / 60.0)) == RV_OK;
        uint64_t t1 = rvb_now_ns();
        ok &= rv_grid_update(grid, src, WALK_SOURCES, res) == RV_OK;
        uint64_t t2 = rvb_now_ns();
        w.update_ns += (double)(t2 - t1);
        uint32_t n;
        do {
            uint64_t a = rvb_now_ns();
            ok &= rv_residency_take_requests(res, requests, BATCH, &n) == RV_OK;
            uint64_t b = rvb_now_ns();
            for (uint32_t i = 0; i < n; i++)
                ok &= rv_residency_place(res, requests[i].key, PAGE_BYTES) == RV_OK;
            uint64_t c = rvb_now_ns();
            w.request_ns += (double)(b - a);
            w.place_ns += (double)(c - b);
            w.requests += n;
            w.places += n;
        } while (ok && n == BATCH);
        do {
            ok &= rv_residency_take_evictions(res, evictions, BATCH, &n) == RV_OK;
            w.evictions += n;
        } while (ok && n == BATCH);
        w.frame_ns += (double)(rvb_now_ns() - t0);
        w.cells_visited += rv_grid_get_stats(grid).cells_visited;
    }
    rv_grid_destroy(grid);
    rv_residency_destroy(res);
    *out = w;
    return ok;
}

/* ns per eviction: 65,536 resident, unused pages drained by a budget of zero. */
static bool run_evict_drain(double *ns_per_evict)
{
    enum { PAGES = 65536 };
    /* The page size is given up front: prefetch (pages not in use) is handed out only once
     * a size is known. */
    rv_residency_desc rd = { .budget_bytes = UINT64_MAX, .page_capacity = PAGES, .page_bytes_estimate = PAGE_BYTES };
    rv_residency *res = NULL;
    if (rv_residency_create(&rd, &res) != RV_OK)
        return false;
    static rv_page_request requests[BATCH];
    static rv_page_eviction evictions[BATCH];
    bool ok = rv_residency_begin_frame(res, 0) == RV_OK;
    for (uint32_t i = 0; i < PAGES && ok; i++)
        ok &= rv_residency_request(res, (rv_page_key){ 1, i * 7919u }, (float)(i % 97), false) == RV_OK;
    uint32_t n;
    do {
        ok &= rv_residency_take_requests(res, requests, BATCH, &n) == RV_OK;
        for (uint32_t i = 0; i < n; i++)
            ok &= rv_residency_place(res, requests[i].key, PAGE_BYTES) == RV_OK;
    } while (ok && n == BATCH);
    ok &= rv_residency_begin_frame(res, 16) == RV_OK;
    ok &= rv_residency_set_budget(res, 0) == RV_OK;
    uint64_t evicted = 0, t0 = rvb_now_ns();
    do {
        ok &= rv_residency_take_evictions(res, evictions, BATCH, &n) == RV_OK;
        evicted += n;
    } while (ok && n == BATCH);
    uint64_t t1 = rvb_now_ns();
    rv_residency_destroy(res);
    *ns_per_evict = (double)(t1 - t0) / (double)(evicted ? evicted : 1);
    return ok && evicted == PAGES;
}

int rvb_grid(rvb_ctx *ctx); /* called by the generated registry */

int rvb_grid(rvb_ctx *ctx)
{
    const char *name = "grid_update_4096";
    if (!rvb_begin_case(ctx, name))
        return 0;
    int reps = ctx->reps;
    double *ours = calloc((size_t)reps, sizeof *ours), *base = calloc((size_t)reps, sizeof *base);
    double *update = calloc((size_t)reps, sizeof *update), *request = calloc((size_t)reps, sizeof *request);
    double *place = calloc((size_t)reps, sizeof *place), *evict = calloc((size_t)reps, sizeof *evict);
    if (!ours || !base || !update || !request || !place || !evict) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        return 1;
    }
    walk_result big = {0}, small = {0};
    int failed = 0;
    for (int r = 0; r < reps && !failed; r++) {
        /* Alternate the two grids so drift in machine load hits both alike. */
        if (!run_walk(4096, &big) || !run_walk(64, &small) || !run_evict_drain(&evict[r])) {
            failed = 1;
            break;
        }
        if (big.requests != small.requests || big.cells_visited != small.cells_visited ||
            big.evictions != small.evictions) {
            fprintf(stderr, "rvis-bench: %s: the two grids did different work\n", name);
            failed = 1;
            break;
        }
        ours[r] = big.frame_ns / WALK_FRAMES / 1000.0;
        base[r] = small.frame_ns / WALK_FRAMES / 1000.0;
        update[r] = big.update_ns / WALK_FRAMES / 1000.0;
        request[r] = big.request_ns / (double)(big.requests ? big.requests : 1);
        place[r] = big.place_ns / (double)(big.places ? big.places : 1);
    }
    if (!failed) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 ", \"us_per_update\": %.4g, \"ns_per_request\": %.4g, \"ns_per_place\": %.4g, "
                 "\"ns_per_evict\": %.4g, \"requests_per_walk\": %llu, \"evictions_per_walk\": %llu, "
                 "\"cells_visited_per_update\": %.4g",
                 rvb_median(update, reps), rvb_median(request, reps), rvb_median(place, reps),
                 rvb_median(evict, reps), (unsigned long long)big.requests, (unsigned long long)big.evictions,
                 (double)big.cells_visited / WALK_FRAMES);
        rvb_report(ctx, name, "us/update", rvb_median(ours, reps), rvb_median(base, reps), extra);
    } else {
        fprintf(stderr, "rvis-bench: %s failed\n", name);
    }
    free(ours);
    free(base);
    free(update);
    free(request);
    free(place);
    free(evict);
    return failed;
}
