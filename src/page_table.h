/* The page table of the residency (docs/design.md §6): one record per known page, looked up by
 * key through a hash map, and the intrusive structures over record indices that order them
 * (binary heaps of ranks, doubly linked lists). Internal to residency.c and page_table.c. */
#ifndef RVI_PAGE_TABLE_H
#define RVI_PAGE_TABLE_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/map.h"
#include "core/vec.h"

#define RVI_PAGE_NIL UINT32_MAX

enum { RVI_LOAD_NONE, RVI_LOAD_QUEUED, RVI_LOAD_LOADING, RVI_LOAD_WAITING };
enum { RVI_IN_NONE, RVI_IN_WANT, RVI_IN_TOMBS };                 /* which list the want links serve */
enum { RVI_LINK_LRU, RVI_LINK_WANT };
enum { RVI_PAGE_FLAG_RESIDENT = 1, RVI_PAGE_FLAG_REFRESH_AGAIN = 2, RVI_PAGE_FLAG_SERIAL_TOUCHED = 4, RVI_PAGE_FLAG_FREE = 8 };

typedef struct rvi_page {
    uint64_t key;
    uint64_t size_bytes;
    uint64_t wanted_frame;  /* last frame requested or touched */
    uint64_t touched_frame; /* last frame touched; a resident page is in in_use iff == frame */
    uint64_t queue_frame;   /* drop clock: last want, or (re)entry into the queue */
    uint64_t serial;        /* last grid update that counted it */
    uint64_t reserved_bytes;/* while loading: what placing it is expected to add (budget room held) */
    double retry_at_ms;
    float distance;
    uint32_t failures;
    uint32_t heap_pos;      /* position in queue (RVI_LOAD_QUEUED) or retry (RVI_LOAD_WAITING) */
    uint32_t link[2][2];    /* [RVI_LINK_LRU | RVI_LINK_WANT][prev, next]; free list uses lru next */
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
    rvi_vec queue, retry;   /* rvi_rank heaps; capacity >= live pages */
    rvi_list lru, in_use, want, tombs;
    uint64_t frame, serial;
    double now_ms;
    bool time_set;
    uint64_t bytes_resident, wanted_resident_bytes;
    uint64_t bytes_loading;   /* sum of reserved_bytes over loads in flight */
    uint64_t largest_placed;  /* the largest size ever placed; with the desc's estimate, the
                                 size a page never placed is assumed to have */
    bool placed_any;
    uint32_t pages_resident, loading;
    uint64_t frames_over_budget, last_over_frame;
    rv_residency_stats frame_stats; /* per-frame counters only */
};

static inline rvi_page *rvi_page_at(const rv_residency *r, uint32_t i)
{
    return &RVI_VEC_PTR(r->pages, rvi_page)[i];
}

static inline uint64_t rvi_page_key_bits(rv_page_key key) { return (uint64_t)key.source << 32 | key.index; }
static inline rv_page_key rvi_page_key_of_bits(uint64_t k) { return (rv_page_key){ (uint32_t)(k >> 32), (uint32_t)k }; }

#define RVI_PAGE_LIST_EMPTY ((rvi_list){ RVI_PAGE_NIL, RVI_PAGE_NIL, 0 })

/* Intrusive lists through link[fam] of the records. O(1) each. */
void rvi_page_list_push_tail(rv_residency *r, rvi_list *l, int fam, uint32_t i);
void rvi_page_list_remove(rv_residency *r, rvi_list *l, int fam, uint32_t i);
/* Appends all of src to dst; src becomes empty. */
void rvi_page_list_splice_tail(rv_residency *r, rvi_list *dst, rvi_list *src, int fam);

/* Binary heaps of rvi_rank (smallest first) keeping each record's heap_pos current.
 * Capacity must be reserved ahead: they never allocate. O(log n) each. */
void rvi_rank_heap_place(rv_residency *r, rvi_rank *h, uint32_t pos, const rvi_rank *e);
void rvi_rank_heap_sift_up(rv_residency *r, rvi_vec *v, uint32_t pos);
void rvi_rank_heap_push(rv_residency *r, rvi_vec *v, const rvi_rank *e);
void rvi_rank_heap_remove(rv_residency *r, rvi_vec *v, uint32_t pos);

/* Records: find by key; make one (room reserved by rvi_residency_reserve: never allocates);
 * free one (removed from the key map, onto the free list). */
bool rvi_page_find(const rv_residency *r, uint64_t key, uint32_t *out);
uint32_t rvi_page_new(rv_residency *r, uint64_t key);
void rvi_page_free(rv_residency *r, uint32_t i);

#endif
