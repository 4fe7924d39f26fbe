/* rvis/streaming.h — The streaming grid over XZ and page residency under a byte budget.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_STREAMING_H
#define RVIS_STREAMING_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Streaming (docs/design.md §6): a regular grid of pages over the XZ plane (rv_grid) and the
 * service that decides which pages are resident (rv_residency). Terrain heights, terrain
 * weights, anything that is a grid of blobs. This is not world or entity streaming: rvis
 * never loads anything; the host pulls load work, loads, and answers.
 *
 * The host loop, once per frame:
 *   rv_residency_begin_frame(res, now_ms);            explicit frame boundary, host time
 *   rv_grid_update(grid, sources, n, res);            per grid: touch and request cells
 *   rv_residency_take_requests(res, reqs, max, &n);   nearest first; start those loads
 *   rv_residency_take_evictions(res, evs, max, &n);   free those pages: they make room for
 *                                                     the loads just handed out
 *   rv_residency_place(res, key, bytes) / _fail(res, key)   as loads finish (any frame)
 * The budget: take_evictions keeps resident bytes plus the expected size of every load in
 * flight within budget_bytes, evicting only pages not touched this frame, so placing what
 * was handed out keeps the budget. Only loads of pages touched this frame (needed now) are
 * handed out when nothing else is left to evict; resident bytes then pass the budget as
 * they land, and rv_residency_stats.over_budget says so.
 * Both objects are used from one thread at a time. */

/* A page: which source (the registrant's integer, never interpreted) and which page of it
 * (for a grid, z * count_x + x). Keys of different sources never collide. */
typedef struct rv_page_key {
    uint32_t source;
    uint32_t index;
} rv_page_key;

/* State of one page. A page being reloaded in place (rv_residency_refresh) stays
 * RV_PAGE_RESIDENT; rv_page_info.refreshing says so. */
typedef enum rv_page_state {
    RV_PAGE_ABSENT = 0,  /* unknown to the residency: never requested, dropped, or forgotten */
    RV_PAGE_REQUESTED,   /* queued for loading (or waiting out a failed load's backoff) */
    RV_PAGE_LOADING,     /* handed to the host by rv_residency_take_requests, not yet answered */
    RV_PAGE_RESIDENT,    /* placed; its bytes count against the budget */
    RV_PAGE_EVICTED      /* evicted this frame (the host was told); absent from the next frame.
                            A page evicted with a reload in flight is RV_PAGE_LOADING instead */
} rv_page_state;

/* Page residency configuration (standalone, or the world's residency inside rv_world_desc). */
typedef struct rv_residency_desc {
    rv_allocator allocator;       /* standalone only; a world uses its own allocator */
    uint64_t budget_bytes;        /* 0 = default 256 MiB */
    uint32_t drop_after_frames;   /* an unrequested queued page is dropped after this many frames; 0 = 30 */
    float retry_ms;               /* first retry after a failed load; 0 = default 100 */
    float retry_backoff;          /* multiplier per consecutive failure; 0 = default 2 */
    float retry_cap_ms;           /* 0 = default 10000 */
    uint32_t requests_per_frame;  /* requests rv_frame_end hands out; 0 = default 64 */
    uint32_t page_capacity;       /* page records reserved at creation (more are added as
                                     needed); 0 = default 1024 */
    uint64_t page_bytes_estimate; /* bytes a page is assumed to take until it is placed (loads
                                     are counted against the budget from the moment they are
                                     handed out); the largest size placed so far counts
                                     instead when it is larger. 0 = default: the largest size
                                     placed so far, and before any page is placed no prefetch
                                     starts (only pages in use load). Set it to the size of
                                     your largest page to prefetch from the first frame */
} rv_residency_desc;

/* A load the host should start (rv_residency_take_requests). */
typedef struct rv_page_request {
    rv_page_key key;
    float distance;  /* world units from the nearest source that wanted it (its priority) */
    uint32_t flags;  /* RV_PAGE_REQUEST_* */
} rv_page_request;

#define RV_PAGE_REQUEST_IN_USE 1u  /* touched this frame (needed now, not prefetch) */
#define RV_PAGE_REQUEST_REFRESH 2u /* the page is resident: reload it in place (rv_residency_refresh) */

/* A page the host must free (rv_residency_take_evictions). */
typedef struct rv_page_eviction {
    rv_page_key key;
    uint64_t size_bytes; /* as given to rv_residency_place */
} rv_page_eviction;

/* What the residency knows of one page (rv_residency_page_info). */
typedef struct rv_page_info {
    rv_page_state state;
    bool refreshing;            /* resident and a reload in place is queued or loading */
    bool waiting_retry;         /* after a failure, until retry_at_ms: RV_PAGE_REQUESTED, or
                                   RV_PAGE_RESIDENT with refreshing when a refresh failed */
    float distance;             /* priority of its latest request (world units) */
    uint64_t size_bytes;        /* resident (or just evicted) size; 0 otherwise */
    uint64_t last_wanted_frame; /* last frame it was requested or touched (0 = never) */
    uint64_t last_touched_frame;/* last frame it was touched (0 = never) */
    uint32_t failures;          /* consecutive failed loads (reset when placed) */
    double retry_at_ms;         /* host time of the next retry when waiting_retry */
} rv_page_info;

/* Residency counters. The first group covers the current frame (since the last
 * rv_residency_begin_frame); the second is the state now. */
typedef struct rv_residency_stats {
    uint32_t requested;          /* pages that entered the load queue this frame */
    uint32_t handed_out;         /* requests given to the host this frame */
    uint32_t placed;             /* pages placed this frame (refreshes included) */
    uint32_t failed;             /* loads failed this frame */
    uint32_t retried;            /* failed pages whose backoff ended this frame (re-queued) */
    uint32_t evicted;            /* pages evicted this frame */
    uint32_t dropped;            /* queued pages dropped this frame (no longer wanted) */
    bool prefetch_paused;        /* take_requests held prefetch back this frame (budget) */
    uint32_t pages_resident;
    uint32_t pages_requested;    /* queued, or waiting out a retry backoff (refreshes included) */
    uint32_t pages_waiting_retry;
    uint32_t pages_loading;      /* loads in flight: handed out, not yet placed or failed */
    uint64_t bytes_resident;
    uint64_t budget_bytes;
    bool over_budget;            /* bytes_resident > budget_bytes now. Only three things do
                                    that: loads of pages in use handed out when nothing else
                                    was left to evict (while they land, in this frame or a
                                    later one), a page placed larger than its estimate, or a
                                    budget lowered since the last take_evictions */
    uint64_t over_budget_bytes;  /* bytes_resident - budget_bytes when over_budget, else 0 */
    uint64_t frames_over_budget; /* frames in which bytes_resident passed the budget at some
                                    point (a frame that starts over it counts), since creation */
    uint64_t frame;              /* frames begun since creation */
    uint64_t bytes_loading;      /* what the loads in flight are expected to add when placed
                                    (room the budget holds for them; a load counts at most
                                    2^32 - 1 bytes) */
    uint64_t page_bytes_estimate;/* the size a page never placed is assumed to have now
                                    (desc estimate or largest placed, whichever is larger);
                                    0 while unknown, and while every page placed took 0
                                    bytes (prefetch then counts each load as 0 bytes) */
} rv_residency_stats;

/* The page residency service. Opaque. */
typedef struct rv_residency rv_residency;

/* Creates a residency service. desc may be NULL (all defaults); *out receives it, owned by
 * the caller until rv_residency_destroy. No frame has begun: call rv_residency_begin_frame
 * before the first request.
 * Errors: RV_ERR_INVALID_ARG (out NULL; retry_ms or retry_cap_ms negative; retry_backoff
 * below 1), RV_ERR_NOT_FINITE (a NaN/Inf retry setting), RV_ERR_ORDER (retry_cap_ms below
 * retry_ms after defaults), RV_ERR_CAPACITY (page_capacity above 2^32 - 2),
 * RV_ERR_OUT_OF_MEMORY (page_capacity's records among others). *out untouched on error. */
RV_API rv_result rv_residency_create(const rv_residency_desc *desc, rv_residency **out);

/* Destroys the service; every page is forgotten (the host still owns what it loaded).
 * NULL is ignored. */
RV_API void rv_residency_destroy(rv_residency *residency);

/* Starts a frame at host time now_ms (milliseconds, any origin, never decreasing). Pages
 * touched last frame stop being protected from eviction; queued pages not requested for
 * more than drop_after_frames frames are dropped (not loaded late; for a failed page the
 * frames count from its failure); failed pages whose
 * backoff ended by now_ms go back to the queue; the per-frame counters restart; pages
 * evicted last frame become RV_PAGE_ABSENT. Cost: proportional to the pages it changes.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE, RV_ERR_ORDER (now_ms earlier than
 * the previous frame's). */
RV_API rv_result rv_residency_begin_frame(rv_residency *residency, double now_ms);

/* Requests a page for this frame with priority distance (world units, >= 0; smaller loads
 * first). in_use also touches it: it is used now, so it is not evicted this frame and its
 * load is not prefetch. Requesting again in one frame keeps the smallest distance.
 * rv_grid_update does the same for each cell; hosts call this for pages outside any grid.
 * Errors: RV_ERR_INVALID_ARG (NULL, distance < 0), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no
 * frame begun yet), RV_ERR_OUT_OF_MEMORY (the first request of a page may allocate; nothing
 * changes on failure). */
RV_API rv_result rv_residency_request(rv_residency *residency, rv_page_key key, float distance, bool in_use);

/* Hands out up to max queued loads into out (rv_page_request[max]), in order: pages touched
 * this frame, then other pages requested this frame, each smallest distance first, then
 * older requests, the most recently requested first (one earlier frame's in the same order:
 * touched then, then nearest); ties by source then index (deterministic). Each becomes
 * RV_PAGE_LOADING until placed or failed, and counts against the budget at its expected size
 * (page_bytes_estimate; a refresh only by what that exceeds the copy it replaces) until then:
 * call rv_residency_take_evictions next to make room for them. Pages touched this frame are
 * always handed out. Prefetch (a page not touched this frame) starts only when it fits the
 * budget beside the pages wanted this frame and every load in flight, and never before a
 * page size is known (see page_bytes_estimate); otherwise it stays queued and
 * prefetch_paused is set. A refresh not touched this frame is prefetch too, measured by
 * what it adds (its estimate beyond the copy it replaces): one that adds nothing fits even
 * when the budget is already passed. *out_count receives how many were written (fewer than max when the
 * queue is empty or held back). Binary heap: O(log n) per page. Errors: RV_ERR_INVALID_ARG
 * (residency or out_count NULL, out NULL with max > 0). */
RV_API rv_result rv_residency_take_requests(rv_residency *residency, rv_page_request *out, uint32_t max,
                                            uint32_t *out_count);

/* The host finished loading a page: it is resident with size_bytes (its GPU/CPU footprint,
 * counted against the budget; 0 is allowed) in place of the room held for its load. For a
 * refresh, the new size replaces the old and the page keeps its place in the eviction
 * order. A page larger than any placed before raises the estimate for later loads (and may
 * pass the budget now: over_budget says so). Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (unknown page), RV_ERR_BAD_STATE (no load of the page is in flight: it
 * is neither RV_PAGE_LOADING nor a resident page whose refresh was handed out),
 * RV_ERR_CAPACITY (resident bytes would pass 2^64 - 1). */
RV_API rv_result rv_residency_place(rv_residency *residency, rv_page_key key, uint64_t size_bytes);

/* The host could not load a page. It is retried after retry_ms, multiplied by
 * retry_backoff for each further consecutive failure, capped at retry_cap_ms (host time);
 * meanwhile it is RV_PAGE_REQUESTED with waiting_retry set, and dropped like any queued page
 * if nobody requests it. A failed refresh keeps the old page resident (RV_PAGE_RESIDENT,
 * refreshing and waiting_retry set; counted in pages_waiting_retry) and retries alike. Errors:
 * RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND, RV_ERR_BAD_STATE (no load of the page in flight, as
 * for rv_residency_place). */
RV_API rv_result rv_residency_fail(rv_residency *residency, rv_page_key key);

/* Asks for a resident page to be reloaded in place (its source data changed). The old page
 * stays resident, and is drawn, until the new one is placed; the request is flagged
 * RV_PAGE_REQUEST_REFRESH and is never dropped as stale. A page queued but not yet loading
 * needs nothing (it will load the new data); a page loading now is queued again once it is
 * placed. A page whose reload is loading can still be evicted (rv_residency_take_evictions):
 * the host frees the old copy and the page is RV_PAGE_LOADING; the reload, once placed,
 * makes it resident again. Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND (the page is absent
 * or evicted). */
RV_API rv_result rv_residency_refresh(rv_residency *residency, rv_page_key key);

/* Evicts least-recently-wanted resident pages (placing counts as wanted) until the
 * resident bytes plus the room held for loads in flight fit the budget, writing up to max
 * of them into out (rv_page_eviction[max]); the host frees them before it places the loads
 * they make room for. A page touched this frame is never evicted: when only such pages
 * remain, the loads of pages in use take the budget past its limit rather than thrash
 * (over_budget once they land). Call it after the frame's updates and after
 * rv_residency_take_requests; call again while it fills out entirely. An evicted page's
 * queued refresh is cancelled; one already handed out stays in flight: the page goes from
 * resident to RV_PAGE_LOADING (not RV_PAGE_EVICTED), the host frees the old copy now and
 * places or fails the reload when it lands, which counts its whole size as a new page.
 * Intrusive LRU list: O(1) per page. Errors: RV_ERR_INVALID_ARG (residency or out_count
 * NULL, out NULL with max > 0). */
RV_API rv_result rv_residency_take_evictions(rv_residency *residency, rv_page_eviction *out, uint32_t max,
                                             uint32_t *out_count);

/* Changes the byte budget (0 is a real budget of zero bytes here, unlike the desc). Nothing
 * is evicted until the next rv_residency_take_evictions (until then a lowered budget may
 * show over_budget). Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_residency_set_budget(rv_residency *residency, uint64_t budget_bytes);

/* What the residency knows of key; an unknown page is RV_PAGE_ABSENT with zero fields.
 * Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_residency_page_info(const rv_residency *residency, rv_page_key key, rv_page_info *out);

/* Counters (zeroes for NULL). */
RV_API rv_residency_stats rv_residency_get_stats(const rv_residency *residency);

/* Host time (ms) at which the earliest failed load becomes due for retry, for tick demand
 * (a host may sleep until then). False (and *out_ms untouched) when no retry is waiting or
 * an argument is NULL. */
RV_API bool rv_residency_next_wake_ms(const rv_residency *residency, double *out_ms);

/* Loads in flight (handed out, not answered); nonzero means the host should keep ticking.
 * 0 for NULL. */
RV_API uint32_t rv_residency_loads_in_flight(const rv_residency *residency);

/* The service's allocation counters (zeroes for NULL). Steady frames leave them unchanged.
 * A world's residency (rv_world_residency) allocates through the world's heap: for it
 * this returns the world's counters, as rv_world_alloc_stats does, not its own share. */
RV_API rv_alloc_stats rv_residency_alloc_stats(const rv_residency *residency);

/* Everything a grid is made from. Unlike most descs, cell_size and both counts are
 * required (zero is refused): a grid has no sensible default size. */
typedef struct rv_grid_desc {
    rv_allocator allocator; /* standalone only; a world uses its own allocator */
    uint32_t source;        /* the page source of every cell (any value; never interpreted) */
    float origin[2];        /* world X and Z of the corner of cell (0, 0); cells grow toward +X, +Z */
    float cell_size;        /* world units, > 0, finite */
    uint32_t count_x;       /* cells along X, > 0 */
    uint32_t count_z;       /* cells along Z, > 0; count_x * count_z <= 2^32 - 1 */
    float lead;             /* world units >= 0: how far beyond a source's radius cells are
                               requested (prefetched) without being touched */
    float eye_radius;       /* world units: radius of the eye source rv_frame gives this grid
                               when it is registered with a world; 0 = default 4 cells;
                               negative = no eye source. A standalone grid only stores it */
} rv_grid_desc;

/* A place that wants pages: cells within radius of it are touched (in use), cells within
 * radius + the grid's lead are requested. */
typedef struct rv_stream_source {
    float position[3]; /* world XYZ; Y is ignored */
    float radius;      /* world units, >= 0 */
} rv_stream_source;

/* What the last rv_grid_update did. */
typedef struct rv_grid_stats {
    uint32_t touched_cells;   /* distinct cells within some source's radius */
    uint32_t requested_cells; /* distinct cells within some source's radius + lead (touched included) */
    uint64_t cells_visited;   /* cells examined: those in the sources' squares clipped to the
                                 grid; never depends on the grid's size */
} rv_grid_stats;

/* A grid of pages. Opaque. */
typedef struct rv_grid rv_grid;

/* Creates a grid. *out receives it, owned by the caller until rv_grid_destroy; creation is
 * its only allocation. Errors: RV_ERR_INVALID_ARG (desc or out NULL, cell_size <= 0, a count
 * of 0, lead < 0, or cells narrower than float's spacing at the grid's largest coordinate:
 * neighbouring cells would share their bounds), RV_ERR_NOT_FINITE (a NaN/Inf field, or a far
 * corner that overflows float), RV_ERR_CAPACITY (count_x * count_z above 2^32 - 1),
 * RV_ERR_OUT_OF_MEMORY. Nothing is made on error. */
RV_API rv_result rv_grid_create(const rv_grid_desc *desc, rv_grid **out);

/* Destroys a grid (its pages in a residency are untouched). NULL is ignored. */
RV_API void rv_grid_destroy(rv_grid *grid);

/* The grid's desc with defaults applied (eye_radius resolved); zeroes for NULL. */
RV_API rv_grid_desc rv_grid_get_desc(const rv_grid *grid);

/* The page of cell (x, z): {source, z * count_x + x}. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (x >= count_x or z >= count_z: no wrap). */
RV_API rv_result rv_grid_key_of(const rv_grid *grid, uint32_t x, uint32_t z, rv_page_key *out);

/* The cell of a page index. Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FOUND (index >=
 * count_x * count_z). */
RV_API rv_result rv_grid_cell_of(const rv_grid *grid, uint32_t index, uint32_t *out_x, uint32_t *out_z);

/* Where cell (x, z) is in world XZ: out_min = origin + (x, z) * cell_size, out_max one cell
 * further (float[2] each, X then Z). Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND. */
RV_API rv_result rv_grid_bounds_of(const rv_grid *grid, uint32_t x, uint32_t z, float out_min[2], float out_max[2]);

/* The shortest XZ distance (world units) from position (float[3], Y ignored) to cell
 * (x, z)'s rectangle; 0 inside or on its edge. Measured to the cell, never to its centre:
 * a radius measured to centres would move the load boundary as a player strafes along a
 * cell. Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FOUND (cell out of range),
 * RV_ERR_NOT_FINITE (position). */
RV_API rv_result rv_grid_distance_to(const rv_grid *grid, uint32_t x, uint32_t z, const float position[3],
                                     float *out_distance);

/* Tells residency what this frame's sources want of this grid. For each source, the cells
 * of its square (position +- radius + lead, clipped to the grid) are examined: a cell whose
 * distance (the float rv_grid_distance_to returns) is <= radius is touched, <= radius + lead
 * (summed in float) requested (with the distance as priority; a cell wanted by several
 * sources counts once and keeps the smallest distance). A source whose reach misses the
 * grid touches nothing. Cost: the cells in those squares, never the grid's size. n may be 0
 * (sources may then be NULL).
 * Errors: RV_ERR_INVALID_ARG (grid or residency NULL, sources NULL with n > 0, a radius
 * < 0), RV_ERR_NOT_FINITE (a position or radius), RV_ERR_CAPACITY (the squares hold more
 * than 2^24 = 16,777,216 cells together: each could become a page record), RV_ERR_BAD_STATE (no rv_residency_begin_frame yet), RV_ERR_OUT_OF_MEMORY (page
 * records for new cells are reserved first: on any error nothing changes). */
RV_API rv_result rv_grid_update(rv_grid *grid, const rv_stream_source *sources, uint32_t n,
                                rv_residency *residency);

/* Counters of the last rv_grid_update (zeroes for NULL or before the first). */
RV_API rv_grid_stats rv_grid_get_stats(const rv_grid *grid);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_STREAMING_H */
