/* Page residency (docs/design.md §6): which pages are queued, loading, resident; in which
 * order they load and in which order they go.
 *
 * Every page the service knows has one record (a pooled array, found through a hash map
 * from its 64-bit key). A record carries two independent things: whether the page is
 * resident, and its load (none, queued, loading, waiting out a failed load's backoff), so a
 * resident page can be reloaded in place while the old copy stays in use. The orders live
 * in intrusive structures over record indices, so no operation walks the whole table:
 *  - queue: binary heap of queued loads, best first (wanted this frame, touched, nearest);
 *  - retry: binary heap of failed loads by due time;
 *  - lru / in_use: resident pages, least recently wanted first / touched this frame (never
 *    evicted; spliced back onto lru in O(1) when the next frame begins);
 *  - want: queued non-resident pages by the frame they were last wanted, so stale ones are
 *    dropped from the head;
 *  - tombs: pages evicted this frame, forgotten when the next begins.
 * Record storage, the heaps and the key map are reserved before any call that could create
 * a record, so after warm-up nothing allocates. The table and its structures are in
 * page_table.c; this file is the policy. */
#include "residency.h"
#include "page_table.h"
#include "core/check.h"
#include "core/map.h"
#include "core/vec.h"

#include <math.h>
#include <string.h>

#define DEFAULT_BUDGET (256ull << 20)
/* Queue order: wanted in a later frame first, then touched in that frame, then nearest,
 * then key. Wanting only ever raises a page within this order, so a re-request sifts up. */
static rvi_rank queue_rank(const rv_residency *r, uint32_t i)
{
    const rvi_page *p = rvi_page_at(r, i);
    uint32_t dist_bits;
    memcpy(&dist_bits, &p->distance, sizeof dist_bits); /* >= +0: bits order as values */
    uint64_t not_touched = p->touched_frame != p->wanted_frame;
    return (rvi_rank){ UINT64_MAX - p->wanted_frame, not_touched << 32 | dist_bits, p->key, i };
}

/* Orders doubles as unsigned integers (sign-magnitude to offset binary). */
static uint64_t time_bits(double t)
{
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return (u >> 63) ? ~u : u | (1ull << 63);
}

static void queue_push(rv_residency *r, uint32_t i)
{
    rvi_rank e = queue_rank(r, i);
    rvi_page_at(r, i)->load = RVI_LOAD_QUEUED;
    rvi_rank_heap_push(r, &r->queue, &e);
}

static void want_list_touch(rv_residency *r, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    if (p->in_list == RVI_IN_WANT)
        rvi_page_list_remove(r, &r->want, RVI_LINK_WANT, i);
    p->in_list = RVI_IN_WANT;
    p->queue_frame = r->frame;
    rvi_page_list_push_tail(r, &r->want, RVI_LINK_WANT, i);
}

static void want_list_leave(rv_residency *r, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    if (p->in_list == RVI_IN_WANT)
        rvi_page_list_remove(r, &r->want, RVI_LINK_WANT, i);
    else if (p->in_list == RVI_IN_TOMBS)
        rvi_page_list_remove(r, &r->tombs, RVI_LINK_WANT, i);
    p->in_list = RVI_IN_NONE;
}

static void want(rv_residency *r, uint32_t i, float distance, bool touched)
{
    rvi_page *p = rvi_page_at(r, i);
    bool resident = p->flags & RVI_PAGE_FLAG_RESIDENT;
    distance += 0.0f; /* -0 becomes +0 so its bits order */
    if (p->wanted_frame != r->frame) {
        p->wanted_frame = r->frame;
        p->distance = distance;
        if (resident)
            r->wanted_resident_bytes += p->size_bytes;
    } else if (distance < p->distance) {
        p->distance = distance;
    }
    bool newly_touched = touched && p->touched_frame != r->frame;
    if (touched)
        p->touched_frame = r->frame;
    if (p->in_list == RVI_IN_TOMBS)
        want_list_leave(r, i); /* evicted earlier this frame and wanted again: load it anew */

    if (resident) {
        if (newly_touched) {
            rvi_page_list_remove(r, &r->lru, RVI_LINK_LRU, i);
            rvi_page_list_push_tail(r, &r->in_use, RVI_LINK_LRU, i);
        } else if (p->touched_frame != r->frame) {
            rvi_page_list_remove(r, &r->lru, RVI_LINK_LRU, i); /* most recently wanted */
            rvi_page_list_push_tail(r, &r->lru, RVI_LINK_LRU, i);
        }
    }
    switch (p->load) {
    case RVI_LOAD_NONE:
        if (!resident) {
            queue_push(r, i);
            want_list_touch(r, i);
            r->frame_stats.requested++;
        }
        break;
    case RVI_LOAD_QUEUED: {
        rvi_rank e = queue_rank(r, i);
        rvi_rank_heap_place(r, RVI_VEC_PTR(r->queue, rvi_rank), p->heap_pos, &e);
        rvi_rank_heap_sift_up(r, &r->queue, p->heap_pos);
        if (!resident)
            want_list_touch(r, i);
        break;
    }
    case RVI_LOAD_WAITING:
        if (!resident)
            want_list_touch(r, i);
        break;
    default: /* loading: the host has it; only the stamps above change */
        break;
    }
}

/* ---- the budget ------------------------------------------------------------------------ */

/* Loads are counted against the budget from the moment they are handed out, at the size
 * they are expected to have, so the evictions that make room for them can be taken before
 * they land. Each reservation is capped so that the sum over every load in flight (at most
 * 2^32 pages) cannot overflow. */
#define RESERVE_CAP ((uint64_t)UINT32_MAX)

static uint64_t add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The size a page never placed is assumed to have: the larger of the desc's estimate and the
 * largest page placed so far. It never shrinks: a page no larger than one already seen is
 * never underestimated, so what was evicted for it is enough. */
static uint64_t page_estimate(const rv_residency *r)
{
    uint64_t declared = r->desc.page_bytes_estimate;
    return declared > r->largest_placed ? declared : r->largest_placed;
}

/* Before anything was placed and without an estimate in the desc, a load's size is unknown. */
static bool size_known(const rv_residency *r)
{
    return r->placed_any || r->desc.page_bytes_estimate > 0;
}

/* What placing page p is expected to add to the resident bytes: its estimate, or for a
 * refresh what the estimate exceeds the copy it replaces. */
static uint64_t load_reservation(const rv_residency *r, const rvi_page *p)
{
    uint64_t est = page_estimate(r);
    uint64_t add = (p->flags & RVI_PAGE_FLAG_RESIDENT) ? (est > p->size_bytes ? est - p->size_bytes : 0) : est;
    return add < RESERVE_CAP ? add : RESERVE_CAP;
}

/* A prefetch (a page not touched this frame) starts only when it fits beside the pages wanted
 * this frame and every load in flight: the pages it may displace are those nobody wants now.
 * A prefetched page that evicted a page wanted now would itself be evicted and loaded again
 * (thrash). Without a known size nothing can be promised, so no prefetch starts. */
static bool prefetch_fits(const rv_residency *r, uint64_t reservation)
{
    if (!size_known(r))
        return false;
    uint64_t committed = add_saturating(r->wanted_resident_bytes, r->bytes_loading);
    return committed <= r->budget && reservation <= r->budget - committed;
}

/* Counts the frame once as over budget whenever resident bytes pass the budget in it. */
static void note_budget(rv_residency *r)
{
    if (r->bytes_resident > r->budget && r->last_over_frame != r->frame) {
        r->last_over_frame = r->frame;
        r->frames_over_budget++;
    }
}

/* ---- creation ------------------------------------------------------------------------- */

static rv_result resolve_desc(const rv_residency_desc *in, rv_residency_desc *out)
{
    rv_residency_desc d = in ? *in : (rv_residency_desc){0};
    if (!isfinite(d.retry_ms) || !isfinite(d.retry_backoff) || !isfinite(d.retry_cap_ms))
        return RV_ERR_NOT_FINITE;
    if (d.retry_ms < 0 || d.retry_cap_ms < 0 || (d.retry_backoff != 0 && d.retry_backoff < 1))
        return RV_ERR_INVALID_ARG;
    if (d.budget_bytes == 0)
        d.budget_bytes = DEFAULT_BUDGET;
    if (d.drop_after_frames == 0)
        d.drop_after_frames = 30;
    if (d.retry_ms == 0)
        d.retry_ms = 100;
    if (d.retry_backoff == 0)
        d.retry_backoff = 2;
    if (d.retry_cap_ms == 0)
        d.retry_cap_ms = 10000;
    if (d.retry_cap_ms < d.retry_ms)
        return RV_ERR_ORDER;
    if (d.page_capacity > UINT32_MAX - 1) /* records are indexed below UINT32_MAX */
        return RV_ERR_CAPACITY;
    if (d.requests_per_frame == 0)
        d.requests_per_frame = 64;
    if (d.page_capacity == 0)
        d.page_capacity = 1024;
    *out = d;
    return RV_OK;
}

rv_result rvi_residency_check_desc(const rv_residency_desc *desc)
{
    rv_residency_desc resolved;
    return resolve_desc(desc, &resolved);
}

static void release_storage(rv_residency *r)
{
    rvi_vec_free(r->heap, &r->pages, sizeof(rvi_page));
    rvi_vec_free(r->heap, &r->queue, sizeof(rvi_rank));
    rvi_vec_free(r->heap, &r->retry, sizeof(rvi_rank));
    rvi_map_free(r->heap, &r->index);
}

static rv_result create(rvi_heap *external, const rv_residency_desc *desc, rv_residency **out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_residency_desc d;
    RVI_TRY(resolve_desc(desc, &d));
    rvi_heap own;
    rvi_heap_init(&own, &d.allocator);
    rvi_heap *heap = external ? external : &own;
    rv_residency *r = rvi_alloc(heap, sizeof *r);
    if (!r)
        return RV_ERR_OUT_OF_MEMORY;
    memset(r, 0, sizeof *r);
    r->own_heap = own;
    r->heap = external ? external : &r->own_heap;
    r->desc = d;
    r->budget = d.budget_bytes;
    r->free_head = RVI_PAGE_NIL;
    r->lru = r->in_use = r->want = r->tombs = RVI_PAGE_LIST_EMPTY;
    rv_result res = rvi_residency_reserve(r, d.page_capacity);
    if (res != RV_OK) {
        release_storage(r);
        rvi_heap h = *r->heap;
        rvi_free(external ? external : &h, r, sizeof *r);
        return res;
    }
    *out = r;
    return RV_OK;
}

rv_result rvi_residency_create_in(rvi_heap *heap, const rv_residency_desc *desc, rv_residency **out)
{
    return create(heap, desc, out);
}

rv_result rv_residency_create(const rv_residency_desc *desc, rv_residency **out)
{
    return create(NULL, desc, out);
}

void rv_residency_destroy(rv_residency *r)
{
    if (!r)
        return;
    release_storage(r);
    if (r->heap == &r->own_heap) {
        rvi_heap h = r->own_heap;
        rvi_free(&h, r, sizeof *r);
    } else {
        rvi_free(r->heap, r, sizeof *r);
    }
}

uint32_t rvi_residency_evictable(const rv_residency *r)
{
    return r->lru.count;
}

rv_residency_desc rvi_residency_desc(const rv_residency *r)
{
    return r->desc;
}

/* ---- frame ------------------------------------------------------------------------------- */

static void drop(rv_residency *r, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    want_list_leave(r, i);
    if (p->load == RVI_LOAD_QUEUED)
        rvi_rank_heap_remove(r, &r->queue, p->heap_pos);
    else if (p->load == RVI_LOAD_WAITING)
        rvi_rank_heap_remove(r, &r->retry, p->heap_pos);
    r->frame_stats.dropped++;
    rvi_page_free(r, i); /* the want list holds only non-resident pages */
}

rv_result rvi_residency_check_begin(const rv_residency *r, double now_ms)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(now_ms))
        return RV_ERR_NOT_FINITE;
    if (r->time_set && now_ms < r->now_ms)
        return RV_ERR_ORDER;
    return RV_OK;
}

rv_result rv_residency_begin_frame(rv_residency *r, double now_ms)
{
    RVI_TRY(rvi_residency_check_begin(r, now_ms));
    r->frame++;
    r->now_ms = now_ms;
    r->time_set = true;
    memset(&r->frame_stats, 0, sizeof r->frame_stats);
    r->wanted_resident_bytes = 0;
    /* Last frame's in-use pages were its most recently wanted. */
    rvi_page_list_splice_tail(r, &r->lru, &r->in_use, RVI_LINK_LRU);
    while (r->tombs.count) {
        uint32_t i = r->tombs.head;
        want_list_leave(r, i);
        rvi_page_free(r, i);
    }
    /* The want list is ordered by queue_frame, so stale pages sit at its head. */
    while (r->want.count) {
        uint32_t i = r->want.head;
        if (r->frame - rvi_page_at(r, i)->queue_frame <= r->desc.drop_after_frames)
            break;
        drop(r, i);
    }
    while (r->retry.count) {
        uint32_t i = RVI_VEC_AT(r->retry, rvi_rank, 0).page;
        if (rvi_page_at(r, i)->retry_at_ms > now_ms)
            break;
        rvi_rank_heap_remove(r, &r->retry, 0);
        queue_push(r, i);
        r->frame_stats.retried++;
    }
    note_budget(r); /* a frame that starts over budget counts as one */
    return RV_OK;
}

rv_result rv_residency_request(rv_residency *r, rv_page_key key, float distance, bool in_use)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(distance))
        return RV_ERR_NOT_FINITE;
    if (distance < 0)
        return RV_ERR_INVALID_ARG;
    if (r->frame == 0)
        return RV_ERR_BAD_STATE; /* "this frame" means nothing before the first one */
    uint64_t k = rvi_page_key_bits(key);
    uint32_t i;
    if (!rvi_page_find(r, k, &i)) {
        RVI_TRY(rvi_residency_reserve(r, 1));
        i = rvi_page_new(r, k);
    }
    want(r, i, distance, in_use);
    return RV_OK;
}

bool rvi_residency_frame_begun(const rv_residency *r)
{
    return r->frame > 0;
}

uint64_t rvi_residency_next_serial(rv_residency *r)
{
    return ++r->serial;
}

void rvi_residency_want_cell(rv_residency *r, rv_page_key key, float distance, bool touched, uint64_t serial,
                             bool *new_request, bool *new_touch)
{
    uint64_t k = rvi_page_key_bits(key);
    uint32_t i;
    if (!rvi_page_find(r, k, &i))
        i = rvi_page_new(r, k);
    rvi_page *p = rvi_page_at(r, i);
    *new_request = p->serial != serial;
    if (*new_request) {
        p->serial = serial;
        p->flags &= (uint8_t)~RVI_PAGE_FLAG_SERIAL_TOUCHED;
    }
    *new_touch = touched && !(p->flags & RVI_PAGE_FLAG_SERIAL_TOUCHED);
    if (touched)
        p->flags |= RVI_PAGE_FLAG_SERIAL_TOUCHED;
    /* Overlapping sources: a cell already wanted by this update changes only if this
     * source is nearer or touches it first. */
    if (!*new_request && !*new_touch && !(distance < p->distance))
        return;
    want(r, i, distance, touched);
}

rv_result rv_residency_take_requests(rv_residency *r, rv_page_request *out, uint32_t max, uint32_t *out_count)
{
    if (!r || !out_count || (!out && max > 0))
        return RV_ERR_INVALID_ARG;
    uint32_t n = 0;
    while (n < max && r->queue.count) {
        uint32_t i = RVI_VEC_AT(r->queue, rvi_rank, 0).page;
        rvi_page *p = rvi_page_at(r, i);
        bool in_use = p->touched_frame == r->frame && p->wanted_frame == r->frame;
        bool resident = p->flags & RVI_PAGE_FLAG_RESIDENT;
        uint64_t reservation = load_reservation(r, p);
        /* Pages in use load whatever the budget says (drawing needs them); a refresh that adds
         * nothing never displaces anything. */
        bool adds = !resident || reservation > 0;
        if (!in_use && adds && !prefetch_fits(r, reservation)) {
            r->frame_stats.prefetch_paused = true;
            break; /* everything after it in the queue is prefetch too */
        }
        rvi_rank_heap_remove(r, &r->queue, 0);
        want_list_leave(r, i);
        p->load = RVI_LOAD_LOADING;
        p->reserved_bytes = reservation;
        r->bytes_loading += reservation;
        r->loading++;
        out[n].key = rvi_page_key_of_bits(p->key);
        out[n].distance = p->distance;
        out[n].flags = (in_use ? RV_PAGE_REQUEST_IN_USE : 0u) | (resident ? RV_PAGE_REQUEST_REFRESH : 0u);
        n++;
    }
    r->frame_stats.handed_out += n;
    *out_count = n;
    return RV_OK;
}

static rv_result find_loading(rv_residency *r, rv_page_key key, uint32_t *out)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    if (!rvi_page_find(r, rvi_page_key_bits(key), out))
        return RV_ERR_NOT_FOUND;
    return rvi_page_at(r, *out)->load == RVI_LOAD_LOADING ? RV_OK : RV_ERR_BAD_STATE;
}

rv_result rv_residency_place(rv_residency *r, rv_page_key key, uint64_t size_bytes)
{
    uint32_t i;
    RVI_TRY(find_loading(r, key, &i));
    rvi_page *p = rvi_page_at(r, i);
    bool resident = p->flags & RVI_PAGE_FLAG_RESIDENT;
    uint64_t base = r->bytes_resident - (resident ? p->size_bytes : 0);
    if (size_bytes > UINT64_MAX - base)
        return RV_ERR_CAPACITY;
    bool wanted_now = p->wanted_frame == r->frame;
    if (resident) {
        if (wanted_now)
            r->wanted_resident_bytes -= p->size_bytes;
    } else {
        p->flags |= RVI_PAGE_FLAG_RESIDENT;
        r->pages_resident++;
        if (p->touched_frame == r->frame)
            rvi_page_list_push_tail(r, &r->in_use, RVI_LINK_LRU, i);
        else
            rvi_page_list_push_tail(r, &r->lru, RVI_LINK_LRU, i); /* placing counts as wanted */
    }
    if (wanted_now)
        r->wanted_resident_bytes += size_bytes;
    r->bytes_resident = base + size_bytes;
    p->size_bytes = size_bytes;
    p->failures = 0;
    r->bytes_loading -= p->reserved_bytes;
    p->reserved_bytes = 0;
    if (size_bytes > r->largest_placed)
        r->largest_placed = size_bytes; /* later loads are assumed at least this large */
    r->placed_any = true;
    r->loading--;
    r->frame_stats.placed++;
    note_budget(r);
    if (p->flags & RVI_PAGE_FLAG_REFRESH_AGAIN) {
        p->flags &= (uint8_t)~RVI_PAGE_FLAG_REFRESH_AGAIN; /* data changed during the load: again */
        queue_push(r, i);
    } else {
        p->load = RVI_LOAD_NONE;
    }
    return RV_OK;
}

rv_result rv_residency_fail(rv_residency *r, rv_page_key key)
{
    uint32_t i;
    RVI_TRY(find_loading(r, key, &i));
    rvi_page *p = rvi_page_at(r, i);
    bool resident = p->flags & RVI_PAGE_FLAG_RESIDENT;
    r->loading--;
    r->bytes_loading -= p->reserved_bytes;
    p->reserved_bytes = 0;
    if (p->failures < UINT32_MAX)
        p->failures++;
    double delay = r->desc.retry_ms * pow(r->desc.retry_backoff, (double)p->failures - 1);
    if (!(delay <= r->desc.retry_cap_ms))
        delay = r->desc.retry_cap_ms;
    p->retry_at_ms = r->now_ms + delay;
    p->flags &= (uint8_t)~RVI_PAGE_FLAG_REFRESH_AGAIN; /* the retry loads the new data anyway */
    p->load = RVI_LOAD_WAITING;
    rvi_rank e = { time_bits(p->retry_at_ms), 0, p->key, i };
    rvi_rank_heap_push(r, &r->retry, &e);
    if (!resident)
        want_list_touch(r, i); /* dropped like any queued page if nobody wants it again */
    r->frame_stats.failed++;
    return RV_OK;
}

rv_result rv_residency_refresh(rv_residency *r, rv_page_key key)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    if (!rvi_page_find(r, rvi_page_key_bits(key), &i) || rvi_page_at(r, i)->in_list == RVI_IN_TOMBS)
        return RV_ERR_NOT_FOUND;
    rvi_page *p = rvi_page_at(r, i);
    if (p->load == RVI_LOAD_LOADING) {
        p->flags |= RVI_PAGE_FLAG_REFRESH_AGAIN;
    } else if (p->load == RVI_LOAD_NONE) { /* a known page with no load is resident */
        queue_push(r, i);
        r->frame_stats.requested++;
    }
    return RV_OK; /* queued or waiting: its load has not started and will read the new data */
}

static void evict(rv_residency *r, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    rvi_page_list_remove(r, &r->lru, RVI_LINK_LRU, i);
    p->flags &= (uint8_t)~RVI_PAGE_FLAG_RESIDENT;
    r->pages_resident--;
    r->bytes_resident -= p->size_bytes;
    if (p->wanted_frame == r->frame)
        r->wanted_resident_bytes -= p->size_bytes;
    r->frame_stats.evicted++;
    /* A queued or waiting refresh was for the copy that is leaving. A load in flight stays:
     * placing it makes the page resident again. */
    if (p->load == RVI_LOAD_QUEUED)
        rvi_rank_heap_remove(r, &r->queue, p->heap_pos);
    else if (p->load == RVI_LOAD_WAITING)
        rvi_rank_heap_remove(r, &r->retry, p->heap_pos);
    if (p->load == RVI_LOAD_LOADING) {
        /* The reload now lands as a new page: it adds its whole size, not just the growth. */
        uint64_t whole = load_reservation(r, p);
        r->bytes_loading += whole - p->reserved_bytes;
        p->reserved_bytes = whole;
        p->size_bytes = 0;
        return;
    }
    p->load = RVI_LOAD_NONE;
    p->flags &= (uint8_t)~RVI_PAGE_FLAG_REFRESH_AGAIN;
    p->in_list = RVI_IN_TOMBS;
    rvi_page_list_push_tail(r, &r->tombs, RVI_LINK_WANT, i);
}

rv_result rv_residency_take_evictions(rv_residency *r, rv_page_eviction *out, uint32_t max, uint32_t *out_count)
{
    if (!r || !out_count || (!out && max > 0))
        return RV_ERR_INVALID_ARG;
    uint32_t n = 0;
    /* Room for the loads in flight too: their pages are evicted for before they land, so
     * placing them keeps the budget. Pages touched this frame are not in the list: when only
     * they are left the budget gives way (over_budget), it is not thrashed. */
    while (add_saturating(r->bytes_resident, r->bytes_loading) > r->budget && n < max && r->lru.count) {
        uint32_t i = r->lru.head;
        rvi_page *p = rvi_page_at(r, i);
        out[n].key = rvi_page_key_of_bits(p->key);
        out[n].size_bytes = p->size_bytes;
        evict(r, i);
        n++;
    }
    note_budget(r);
    *out_count = n;
    return RV_OK;
}

rv_result rv_residency_set_budget(rv_residency *r, uint64_t budget_bytes)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    r->budget = budget_bytes;
    note_budget(r);
    return RV_OK;
}

/* ---- queries ----------------------------------------------------------------------------- */

rv_result rv_residency_page_info(const rv_residency *r, rv_page_key key, rv_page_info *out)
{
    if (!r || !out)
        return RV_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    uint32_t i;
    if (!rvi_page_find(r, rvi_page_key_bits(key), &i))
        return RV_OK;
    const rvi_page *p = rvi_page_at(r, i);
    bool resident = p->flags & RVI_PAGE_FLAG_RESIDENT;
    if (resident)
        out->state = RV_PAGE_RESIDENT;
    else if (p->in_list == RVI_IN_TOMBS)
        out->state = RV_PAGE_EVICTED;
    else if (p->load == RVI_LOAD_LOADING)
        out->state = RV_PAGE_LOADING;
    else
        out->state = RV_PAGE_REQUESTED;
    out->refreshing = resident && p->load != RVI_LOAD_NONE;
    out->waiting_retry = p->load == RVI_LOAD_WAITING;
    out->distance = p->distance;
    out->size_bytes = (resident || p->in_list == RVI_IN_TOMBS) ? p->size_bytes : 0;
    out->last_wanted_frame = p->wanted_frame;
    out->last_touched_frame = p->touched_frame;
    out->failures = p->failures;
    out->retry_at_ms = p->load == RVI_LOAD_WAITING ? p->retry_at_ms : 0;
    return RV_OK;
}

rv_residency_stats rv_residency_get_stats(const rv_residency *r)
{
    rv_residency_stats s = {0};
    if (!r)
        return s;
    s = r->frame_stats;
    s.pages_resident = r->pages_resident;
    s.pages_requested = r->queue.count + r->retry.count;
    s.pages_waiting_retry = r->retry.count;
    s.pages_loading = r->loading;
    s.bytes_resident = r->bytes_resident;
    s.budget_bytes = r->budget;
    s.over_budget = r->bytes_resident > r->budget;
    s.over_budget_bytes = s.over_budget ? r->bytes_resident - r->budget : 0;
    s.frames_over_budget = r->frames_over_budget;
    s.frame = r->frame;
    s.bytes_loading = r->bytes_loading;
    s.page_bytes_estimate = size_known(r) ? page_estimate(r) : 0;
    return s;
}

bool rv_residency_next_wake_ms(const rv_residency *r, double *out_ms)
{
    if (!r || !out_ms || r->retry.count == 0)
        return false;
    *out_ms = rvi_page_at(r, RVI_VEC_AT(r->retry, rvi_rank, 0).page)->retry_at_ms;
    return true;
}

uint32_t rv_residency_loads_in_flight(const rv_residency *r)
{
    return r ? r->loading : 0;
}

rv_alloc_stats rv_residency_alloc_stats(const rv_residency *r)
{
    rv_alloc_stats none = {0};
    return r ? r->heap->stats : none;
}
