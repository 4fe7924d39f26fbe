/* Page residency (DESIGN.md §6): which pages are queued, loading, resident; in which
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
 * Heap and record storage is reserved before any call that could create a record, and the
 * heaps are kept as large as the record array, so after warm-up nothing allocates. */
#include "residency.h"
#include "core/check.h"
#include "core/map.h"
#include "core/vec.h"

#include <math.h>
#include <string.h>

#define NIL UINT32_MAX
#define DEFAULT_BUDGET (256ull << 20)

enum { LOAD_NONE, LOAD_QUEUED, LOAD_LOADING, LOAD_WAITING };
enum { IN_NONE, IN_WANT, IN_TOMBS };                 /* which list the want links serve */
enum { LINK_LRU, LINK_WANT };
enum { FLAG_RESIDENT = 1, FLAG_REFRESH_AGAIN = 2, FLAG_SERIAL_TOUCHED = 4, FLAG_FREE = 8 };

typedef struct rvi_page {
    uint64_t key;
    uint64_t size_bytes;
    uint64_t wanted_frame;  /* last frame requested or touched */
    uint64_t touched_frame; /* last frame touched; a resident page is in in_use iff == frame */
    uint64_t queue_frame;   /* drop clock: last want, or (re)entry into the queue */
    uint64_t serial;        /* last grid update that counted it */
    double retry_at_ms;
    float distance;
    uint32_t failures;
    uint32_t heap_pos;      /* position in queue (LOAD_QUEUED) or retry (LOAD_WAITING) */
    uint32_t link[2][2];    /* [LINK_LRU | LINK_WANT][prev, next]; free list uses lru next */
    uint8_t load;
    uint8_t in_list;        /* IN_* for the want links */
    uint8_t flags;
} rvi_page;

typedef struct rvi_rank {
    uint64_t a, b, key; /* compared lexicographically, smallest first */
    uint32_t page;
} rvi_rank;

typedef struct rvi_list {
    uint32_t head, tail, count;
} rvi_list;

struct rv_residency {
    rvi_heap own_heap;
    rvi_heap *heap;
    rv_residency_desc desc; /* resolved */
    uint64_t budget;
    rvi_vec pages;          /* rvi_page */
    uint32_t free_head, free_count;
    rvi_map index;          /* key -> page index */
    rvi_vec queue, retry;   /* rvi_rank heaps; capacity >= pages.capacity */
    rvi_list lru, in_use, want, tombs;
    uint64_t frame, serial;
    double now_ms;
    bool time_set;
    uint64_t bytes_resident, wanted_resident_bytes, last_placed_size;
    uint32_t pages_resident, loading, loading_new; /* loading_new: loads of non-resident pages */
    bool over_budget;
    uint64_t frames_over_budget, last_over_frame;
    rv_residency_stats frame_stats; /* per-frame counters only */
};

static inline rvi_page *page_at(const rv_residency *r, uint32_t i)
{
    return &RVI_VEC_PTR(r->pages, rvi_page)[i];
}

static inline uint64_t key_bits(rv_page_key key) { return (uint64_t)key.source << 32 | key.index; }
static inline rv_page_key key_of_bits(uint64_t k) { return (rv_page_key){ (uint32_t)(k >> 32), (uint32_t)k }; }

/* ---- intrusive lists ------------------------------------------------------------------ */

static const rvi_list LIST_EMPTY = { NIL, NIL, 0 };

static void list_push_tail(rv_residency *r, rvi_list *l, int fam, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    p->link[fam][0] = l->tail;
    p->link[fam][1] = NIL;
    if (l->tail != NIL)
        page_at(r, l->tail)->link[fam][1] = i;
    else
        l->head = i;
    l->tail = i;
    l->count++;
}

static void list_remove(rv_residency *r, rvi_list *l, int fam, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    uint32_t prev = p->link[fam][0], next = p->link[fam][1];
    if (prev != NIL)
        page_at(r, prev)->link[fam][1] = next;
    else
        l->head = next;
    if (next != NIL)
        page_at(r, next)->link[fam][0] = prev;
    else
        l->tail = prev;
    l->count--;
}

/* Appends all of src to dst in O(1); src becomes empty. */
static void list_splice_tail(rv_residency *r, rvi_list *dst, rvi_list *src, int fam)
{
    if (src->count == 0)
        return;
    if (dst->count == 0) {
        *dst = *src;
    } else {
        page_at(r, dst->tail)->link[fam][1] = src->head;
        page_at(r, src->head)->link[fam][0] = dst->tail;
        dst->tail = src->tail;
        dst->count += src->count;
    }
    *src = LIST_EMPTY;
}

/* ---- heaps ------------------------------------------------------------------------------- */

static inline bool rank_less(const rvi_rank *x, const rvi_rank *y)
{
    if (x->a != y->a)
        return x->a < y->a;
    if (x->b != y->b)
        return x->b < y->b;
    return x->key < y->key;
}

static void heap_place(rv_residency *r, rvi_rank *h, uint32_t pos, const rvi_rank *e)
{
    h[pos] = *e;
    page_at(r, e->page)->heap_pos = pos;
}

static void heap_sift_up(rv_residency *r, rvi_vec *v, uint32_t pos)
{
    rvi_rank *h = RVI_VEC_PTR(*v, rvi_rank);
    rvi_rank e = h[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!rank_less(&e, &h[parent]))
            break;
        heap_place(r, h, pos, &h[parent]);
        pos = parent;
    }
    heap_place(r, h, pos, &e);
}

static void heap_sift_down(rv_residency *r, rvi_vec *v, uint32_t pos)
{
    rvi_rank *h = RVI_VEC_PTR(*v, rvi_rank);
    uint32_t n = v->count;
    rvi_rank e = h[pos];
    for (;;) {
        uint32_t c = 2 * pos + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rank_less(&h[c + 1], &h[c]))
            c++;
        if (!rank_less(&h[c], &e))
            break;
        heap_place(r, h, pos, &h[c]);
        pos = c;
    }
    heap_place(r, h, pos, &e);
}

/* Capacity is reserved ahead (>= pages.capacity), so this never allocates. */
static void heap_push(rv_residency *r, rvi_vec *v, const rvi_rank *e)
{
    uint32_t pos = v->count++;
    heap_place(r, RVI_VEC_PTR(*v, rvi_rank), pos, e);
    heap_sift_up(r, v, pos);
}

static void heap_remove(rv_residency *r, rvi_vec *v, uint32_t pos)
{
    rvi_rank *h = RVI_VEC_PTR(*v, rvi_rank);
    uint32_t last = --v->count;
    if (pos == last)
        return;
    heap_place(r, h, pos, &h[last]);
    heap_sift_down(r, v, pos);
    heap_sift_up(r, v, pos);
}

/* Queue order: wanted in a later frame first, then touched in that frame, then nearest,
 * then key. Wanting only ever raises a page within this order, so a re-request sifts up. */
static rvi_rank queue_rank(const rv_residency *r, uint32_t i)
{
    const rvi_page *p = page_at(r, i);
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
    page_at(r, i)->load = LOAD_QUEUED;
    heap_push(r, &r->queue, &e);
}

/* ---- records ----------------------------------------------------------------------------- */

static bool find_page(const rv_residency *r, uint64_t key, uint32_t *out)
{
    uint64_t v;
    if (!rvi_map_get(&r->index, key, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Room was reserved by rvi_residency_reserve: neither the array nor the map grows here. */
static uint32_t page_new(rv_residency *r, uint64_t key)
{
    uint32_t i;
    if (r->free_head != NIL) {
        i = r->free_head;
        r->free_head = page_at(r, i)->link[LINK_LRU][1];
        r->free_count--;
    } else {
        i = r->pages.count++;
    }
    rvi_page *p = page_at(r, i);
    memset(p, 0, sizeof *p);
    p->key = key;
    p->heap_pos = NIL;
    rv_result ok = rvi_map_put(r->heap, &r->index, key, i);
    (void)ok; /* cannot fail: capacity reserved */
    return i;
}

static void page_free(rv_residency *r, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    rvi_map_remove(&r->index, p->key);
    p->flags = FLAG_FREE;
    p->link[LINK_LRU][1] = r->free_head;
    r->free_head = i;
    r->free_count++;
}

static void want_list_touch(rv_residency *r, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    if (p->in_list == IN_WANT)
        list_remove(r, &r->want, LINK_WANT, i);
    p->in_list = IN_WANT;
    p->queue_frame = r->frame;
    list_push_tail(r, &r->want, LINK_WANT, i);
}

static void want_list_leave(rv_residency *r, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    if (p->in_list == IN_WANT)
        list_remove(r, &r->want, LINK_WANT, i);
    else if (p->in_list == IN_TOMBS)
        list_remove(r, &r->tombs, LINK_WANT, i);
    p->in_list = IN_NONE;
}

static void want(rv_residency *r, uint32_t i, float distance, bool touched)
{
    rvi_page *p = page_at(r, i);
    bool resident = p->flags & FLAG_RESIDENT;
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
    if (p->in_list == IN_TOMBS)
        want_list_leave(r, i); /* evicted earlier this frame and wanted again: load it anew */

    if (resident) {
        if (newly_touched) {
            list_remove(r, &r->lru, LINK_LRU, i);
            list_push_tail(r, &r->in_use, LINK_LRU, i);
        } else if (p->touched_frame != r->frame) {
            list_remove(r, &r->lru, LINK_LRU, i); /* most recently wanted */
            list_push_tail(r, &r->lru, LINK_LRU, i);
        }
    }
    switch (p->load) {
    case LOAD_NONE:
        if (!resident) {
            queue_push(r, i);
            want_list_touch(r, i);
            r->frame_stats.requested++;
        }
        break;
    case LOAD_QUEUED: {
        rvi_rank e = queue_rank(r, i);
        heap_place(r, RVI_VEC_PTR(r->queue, rvi_rank), p->heap_pos, &e);
        heap_sift_up(r, &r->queue, p->heap_pos);
        if (!resident)
            want_list_touch(r, i);
        break;
    }
    case LOAD_WAITING:
        if (!resident)
            want_list_touch(r, i);
        break;
    default: /* loading: the host has it; only the stamps above change */
        break;
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
    if (d.requests_per_frame == 0)
        d.requests_per_frame = 64;
    if (d.page_capacity == 0)
        d.page_capacity = 1024;
    *out = d;
    return RV_OK;
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
    r->free_head = NIL;
    r->lru = r->in_use = r->want = r->tombs = LIST_EMPTY;
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

rv_result rvi_residency_reserve(rv_residency *r, uint64_t new_pages)
{
    uint64_t live = (uint64_t)r->pages.count - r->free_count;
    if (live + new_pages > UINT32_MAX - 1)
        return RV_ERR_CAPACITY;
    uint64_t slots = new_pages > r->free_count ? (uint64_t)r->pages.count + new_pages - r->free_count : r->pages.count;
    uint32_t total = (uint32_t)(live + new_pages);
    RVI_TRY(rvi_vec_reserve(r->heap, &r->pages, sizeof(rvi_page), (uint32_t)slots));
    /* Every page is in at most one heap: sizing both for every live page means moving
     * pages between them (retries, drops, refreshes) never allocates. */
    RVI_TRY(rvi_vec_reserve(r->heap, &r->queue, sizeof(rvi_rank), total));
    RVI_TRY(rvi_vec_reserve(r->heap, &r->retry, sizeof(rvi_rank), total));
    return rvi_map_reserve(r->heap, &r->index, total);
}

rv_residency_desc rvi_residency_desc(const rv_residency *r)
{
    return r->desc;
}

/* ---- frame ------------------------------------------------------------------------------- */

static void drop(rv_residency *r, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    want_list_leave(r, i);
    if (p->load == LOAD_QUEUED)
        heap_remove(r, &r->queue, p->heap_pos);
    else if (p->load == LOAD_WAITING)
        heap_remove(r, &r->retry, p->heap_pos);
    r->frame_stats.dropped++;
    page_free(r, i); /* the want list holds only non-resident pages */
}

rv_result rv_residency_begin_frame(rv_residency *r, double now_ms)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(now_ms))
        return RV_ERR_NOT_FINITE;
    if (r->time_set && now_ms < r->now_ms)
        return RV_ERR_ORDER;
    r->frame++;
    r->now_ms = now_ms;
    r->time_set = true;
    memset(&r->frame_stats, 0, sizeof r->frame_stats);
    r->wanted_resident_bytes = 0;
    /* Last frame's in-use pages were its most recently wanted. */
    list_splice_tail(r, &r->lru, &r->in_use, LINK_LRU);
    while (r->tombs.count) {
        uint32_t i = r->tombs.head;
        want_list_leave(r, i);
        page_free(r, i);
    }
    /* The want list is ordered by queue_frame, so stale pages sit at its head. */
    while (r->want.count) {
        uint32_t i = r->want.head;
        if (r->frame - page_at(r, i)->queue_frame <= r->desc.drop_after_frames)
            break;
        drop(r, i);
    }
    while (r->retry.count) {
        uint32_t i = RVI_VEC_AT(r->retry, rvi_rank, 0).page;
        if (page_at(r, i)->retry_at_ms > now_ms)
            break;
        heap_remove(r, &r->retry, 0);
        queue_push(r, i);
        r->frame_stats.retried++;
    }
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
    uint64_t k = key_bits(key);
    uint32_t i;
    if (!find_page(r, k, &i)) {
        RVI_TRY(rvi_residency_reserve(r, 1));
        i = page_new(r, k);
    }
    want(r, i, distance, in_use);
    return RV_OK;
}

uint64_t rvi_residency_next_serial(rv_residency *r)
{
    return ++r->serial;
}

void rvi_residency_want_cell(rv_residency *r, rv_page_key key, float distance, bool touched, uint64_t serial,
                             bool *new_request, bool *new_touch)
{
    uint64_t k = key_bits(key);
    uint32_t i;
    if (!find_page(r, k, &i))
        i = page_new(r, k);
    rvi_page *p = page_at(r, i);
    *new_request = p->serial != serial;
    if (*new_request) {
        p->serial = serial;
        p->flags &= (uint8_t)~FLAG_SERIAL_TOUCHED;
    }
    *new_touch = touched && !(p->flags & FLAG_SERIAL_TOUCHED);
    if (touched)
        p->flags |= FLAG_SERIAL_TOUCHED;
    want(r, i, distance, touched);
}

/* A prefetch starts only when the pages wanted this frame plus the loads in flight, at the
 * mean resident page size, still fit: otherwise it would evict a page wanted now, be
 * evicted itself, and load again (thrash). */
static bool prefetch_admitted(const rv_residency *r)
{
    if (r->over_budget)
        return false;
    if (r->wanted_resident_bytes > r->budget)
        return false;
    uint64_t mean = r->pages_resident ? r->bytes_resident / r->pages_resident : r->last_placed_size;
    uint64_t room = r->budget - r->wanted_resident_bytes;
    return mean == 0 || (uint64_t)r->loading_new + 1 <= room / mean;
}

rv_result rv_residency_take_requests(rv_residency *r, rv_page_request *out, uint32_t max, uint32_t *out_count)
{
    if (!r || !out_count || (!out && max > 0))
        return RV_ERR_INVALID_ARG;
    uint32_t n = 0;
    while (n < max && r->queue.count) {
        uint32_t i = RVI_VEC_AT(r->queue, rvi_rank, 0).page;
        rvi_page *p = page_at(r, i);
        bool in_use = p->touched_frame == r->frame && p->wanted_frame == r->frame;
        bool resident = p->flags & FLAG_RESIDENT;
        if (!in_use && !resident && !prefetch_admitted(r)) {
            r->frame_stats.prefetch_paused = true;
            break; /* everything after it in the queue is prefetch too */
        }
        heap_remove(r, &r->queue, 0);
        want_list_leave(r, i);
        p->load = LOAD_LOADING;
        r->loading++;
        if (!resident)
            r->loading_new++;
        out[n].key = key_of_bits(p->key);
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
    if (!find_page(r, key_bits(key), out))
        return RV_ERR_NOT_FOUND;
    return page_at(r, *out)->load == LOAD_LOADING ? RV_OK : RV_ERR_BAD_STATE;
}

rv_result rv_residency_place(rv_residency *r, rv_page_key key, uint64_t size_bytes)
{
    uint32_t i;
    RVI_TRY(find_loading(r, key, &i));
    rvi_page *p = page_at(r, i);
    bool resident = p->flags & FLAG_RESIDENT;
    uint64_t base = r->bytes_resident - (resident ? p->size_bytes : 0);
    if (size_bytes > UINT64_MAX - base)
        return RV_ERR_CAPACITY;
    bool wanted_now = p->wanted_frame == r->frame;
    if (resident) {
        if (wanted_now)
            r->wanted_resident_bytes -= p->size_bytes;
    } else {
        p->flags |= FLAG_RESIDENT;
        r->pages_resident++;
        r->loading_new--;
        if (p->touched_frame == r->frame)
            list_push_tail(r, &r->in_use, LINK_LRU, i);
        else
            list_push_tail(r, &r->lru, LINK_LRU, i); /* placing counts as wanted */
    }
    if (wanted_now)
        r->wanted_resident_bytes += size_bytes;
    r->bytes_resident = base + size_bytes;
    p->size_bytes = size_bytes;
    p->failures = 0;
    r->last_placed_size = size_bytes;
    r->loading--;
    r->frame_stats.placed++;
    if (p->flags & FLAG_REFRESH_AGAIN) {
        p->flags &= (uint8_t)~FLAG_REFRESH_AGAIN; /* data changed during the load: again */
        queue_push(r, i);
    } else {
        p->load = LOAD_NONE;
    }
    return RV_OK;
}

rv_result rv_residency_fail(rv_residency *r, rv_page_key key)
{
    uint32_t i;
    RVI_TRY(find_loading(r, key, &i));
    rvi_page *p = page_at(r, i);
    bool resident = p->flags & FLAG_RESIDENT;
    r->loading--;
    if (!resident)
        r->loading_new--;
    if (p->failures < UINT32_MAX)
        p->failures++;
    double delay = r->desc.retry_ms * pow(r->desc.retry_backoff, (double)p->failures - 1);
    if (!(delay <= r->desc.retry_cap_ms))
        delay = r->desc.retry_cap_ms;
    p->retry_at_ms = r->now_ms + delay;
    p->flags &= (uint8_t)~FLAG_REFRESH_AGAIN; /* the retry loads the new data anyway */
    p->load = LOAD_WAITING;
    rvi_rank e = { time_bits(p->retry_at_ms), 0, p->key, i };
    heap_push(r, &r->retry, &e);
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
    if (!find_page(r, key_bits(key), &i) || page_at(r, i)->in_list == IN_TOMBS)
        return RV_ERR_NOT_FOUND;
    rvi_page *p = page_at(r, i);
    if (p->load == LOAD_LOADING) {
        p->flags |= FLAG_REFRESH_AGAIN;
    } else if (p->load == LOAD_NONE) { /* a known page with no load is resident */
        queue_push(r, i);
        r->frame_stats.requested++;
    }
    return RV_OK; /* queued or waiting: its load has not started and will read the new data */
}

static void evict(rv_residency *r, uint32_t i)
{
    rvi_page *p = page_at(r, i);
    list_remove(r, &r->lru, LINK_LRU, i);
    p->flags &= (uint8_t)~FLAG_RESIDENT;
    r->pages_resident--;
    r->bytes_resident -= p->size_bytes;
    if (p->wanted_frame == r->frame)
        r->wanted_resident_bytes -= p->size_bytes;
    r->frame_stats.evicted++;
    /* A queued or waiting refresh was for the copy that is leaving. A load in flight stays:
     * placing it makes the page resident again. */
    if (p->load == LOAD_QUEUED)
        heap_remove(r, &r->queue, p->heap_pos);
    else if (p->load == LOAD_WAITING)
        heap_remove(r, &r->retry, p->heap_pos);
    if (p->load == LOAD_LOADING) {
        r->loading_new++;
        p->size_bytes = 0;
        return;
    }
    p->load = LOAD_NONE;
    p->flags &= (uint8_t)~FLAG_REFRESH_AGAIN;
    p->in_list = IN_TOMBS;
    list_push_tail(r, &r->tombs, LINK_WANT, i);
}

rv_result rv_residency_take_evictions(rv_residency *r, rv_page_eviction *out, uint32_t max, uint32_t *out_count)
{
    if (!r || !out_count || (!out && max > 0))
        return RV_ERR_INVALID_ARG;
    uint32_t n = 0;
    while (r->bytes_resident > r->budget && n < max && r->lru.count) {
        uint32_t i = r->lru.head;
        rvi_page *p = page_at(r, i);
        out[n].key = key_of_bits(p->key);
        out[n].size_bytes = p->size_bytes;
        evict(r, i);
        n++;
    }
    /* Only pages touched this frame are left and they do not fit: say so, do not thrash. */
    r->over_budget = r->bytes_resident > r->budget && r->lru.count == 0;
    if (r->over_budget && r->last_over_frame != r->frame) {
        r->last_over_frame = r->frame;
        r->frames_over_budget++;
    }
    *out_count = n;
    return RV_OK;
}

rv_result rv_residency_set_budget(rv_residency *r, uint64_t budget_bytes)
{
    if (!r)
        return RV_ERR_INVALID_ARG;
    r->budget = budget_bytes;
    return RV_OK;
}

/* ---- queries ----------------------------------------------------------------------------- */

rv_result rv_residency_page_info(const rv_residency *r, rv_page_key key, rv_page_info *out)
{
    if (!r || !out)
        return RV_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    uint32_t i;
    if (!find_page(r, key_bits(key), &i))
        return RV_OK;
    const rvi_page *p = page_at(r, i);
    bool resident = p->flags & FLAG_RESIDENT;
    if (resident)
        out->state = RV_PAGE_RESIDENT;
    else if (p->in_list == IN_TOMBS)
        out->state = RV_PAGE_EVICTED;
    else if (p->load == LOAD_LOADING)
        out->state = RV_PAGE_LOADING;
    else
        out->state = RV_PAGE_REQUESTED;
    out->refreshing = resident && p->load != LOAD_NONE;
    out->waiting_retry = p->load == LOAD_WAITING;
    out->distance = p->distance;
    out->size_bytes = (resident || p->in_list == IN_TOMBS) ? p->size_bytes : 0;
    out->last_wanted_frame = p->wanted_frame;
    out->last_touched_frame = p->touched_frame;
    out->failures = p->failures;
    out->retry_at_ms = p->load == LOAD_WAITING ? p->retry_at_ms : 0;
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
    s.over_budget = r->over_budget;
    s.over_budget_bytes = r->over_budget ? r->bytes_resident - r->budget : 0;
    s.frames_over_budget = r->frames_over_budget;
    s.frame = r->frame;
    return s;
}

bool rv_residency_next_wake_ms(const rv_residency *r, double *out_ms)
{
    if (!r || !out_ms || r->retry.count == 0)
        return false;
    *out_ms = page_at(r, RVI_VEC_AT(r->retry, rvi_rank, 0).page)->retry_at_ms;
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
