/* The page table: records, their key map, and the intrusive lists and heaps that order them
 * (see page_table.h). Policy lives in residency.c. */
#include "page_table.h"
#include "residency.h"
#include "core/check.h"

#include <string.h>

/* ---- intrusive lists ------------------------------------------------------------------ */

void rvi_page_list_push_tail(rv_residency *r, rvi_list *l, int fam, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    p->link[fam][0] = l->tail;
    p->link[fam][1] = RVI_PAGE_NIL;
    if (l->tail != RVI_PAGE_NIL)
        rvi_page_at(r, l->tail)->link[fam][1] = i;
    else
        l->head = i;
    l->tail = i;
    l->count++;
}

void rvi_page_list_remove(rv_residency *r, rvi_list *l, int fam, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    uint32_t prev = p->link[fam][0], next = p->link[fam][1];
    if (prev != RVI_PAGE_NIL)
        rvi_page_at(r, prev)->link[fam][1] = next;
    else
        l->head = next;
    if (next != RVI_PAGE_NIL)
        rvi_page_at(r, next)->link[fam][0] = prev;
    else
        l->tail = prev;
    l->count--;
}

/* Appends all of src to dst in O(1); src becomes empty. */
void rvi_page_list_splice_tail(rv_residency *r, rvi_list *dst, rvi_list *src, int fam)
{
    if (src->count == 0)
        return;
    if (dst->count == 0) {
        *dst = *src;
    } else {
        rvi_page_at(r, dst->tail)->link[fam][1] = src->head;
        rvi_page_at(r, src->head)->link[fam][0] = dst->tail;
        dst->tail = src->tail;
        dst->count += src->count;
    }
    *src = RVI_PAGE_LIST_EMPTY;
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

void rvi_rank_heap_place(rv_residency *r, rvi_rank *h, uint32_t pos, const rvi_rank *e)
{
    h[pos] = *e;
    rvi_page_at(r, e->page)->heap_pos = pos;
}

void rvi_rank_heap_sift_up(rv_residency *r, rvi_vec *v, uint32_t pos)
{
    rvi_rank *h = RVI_VEC_PTR(*v, rvi_rank);
    rvi_rank e = h[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!rank_less(&e, &h[parent]))
            break;
        rvi_rank_heap_place(r, h, pos, &h[parent]);
        pos = parent;
    }
    rvi_rank_heap_place(r, h, pos, &e);
}

static void rvi_rank_heap_sift_down(rv_residency *r, rvi_vec *v, uint32_t pos)
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
        rvi_rank_heap_place(r, h, pos, &h[c]);
        pos = c;
    }
    rvi_rank_heap_place(r, h, pos, &e);
}

/* Capacity is reserved ahead (>= pages.capacity), so this never allocates. */
void rvi_rank_heap_push(rv_residency *r, rvi_vec *v, const rvi_rank *e)
{
    uint32_t pos = v->count++;
    rvi_rank_heap_place(r, RVI_VEC_PTR(*v, rvi_rank), pos, e);
    rvi_rank_heap_sift_up(r, v, pos);
}

void rvi_rank_heap_remove(rv_residency *r, rvi_vec *v, uint32_t pos)
{
    rvi_rank *h = RVI_VEC_PTR(*v, rvi_rank);
    uint32_t last = --v->count;
    if (pos == last)
        return;
    rvi_rank_heap_place(r, h, pos, &h[last]);
    rvi_rank_heap_sift_down(r, v, pos);
    rvi_rank_heap_sift_up(r, v, pos);
}

/* ---- records ----------------------------------------------------------------------------- */

bool rvi_page_find(const rv_residency *r, uint64_t key, uint32_t *out)
{
    uint64_t v;
    if (!rvi_map_get(&r->index, key, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Room was reserved by rvi_residency_reserve: neither the array nor the map grows here. */
uint32_t rvi_page_new(rv_residency *r, uint64_t key)
{
    uint32_t i;
    if (r->free_head != RVI_PAGE_NIL) {
        i = r->free_head;
        r->free_head = rvi_page_at(r, i)->link[RVI_LINK_LRU][1];
        r->free_count--;
    } else {
        i = r->pages.count++;
    }
    rvi_page *p = rvi_page_at(r, i);
    memset(p, 0, sizeof *p);
    p->key = key;
    p->heap_pos = RVI_PAGE_NIL;
    rv_result ok = rvi_map_put(r->heap, &r->index, key, i);
    (void)ok; /* cannot fail: capacity reserved */
    return i;
}

void rvi_page_free(rv_residency *r, uint32_t i)
{
    rvi_page *p = rvi_page_at(r, i);
    rvi_map_remove(&r->index, p->key);
    p->flags = RVI_PAGE_FLAG_FREE;
    p->link[RVI_LINK_LRU][1] = r->free_head;
    r->free_head = i;
    r->free_count++;
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

bool rvi_residency_has_room(const rv_residency *r, uint64_t new_pages)
{
    uint64_t live = (uint64_t)r->pages.count - r->free_count;
    uint64_t total = live + new_pages;
    uint64_t slots = (uint64_t)r->free_count + (r->pages.capacity - r->pages.count);
    /* The map keeps its load at most 3/4 (map.c). */
    return total <= UINT32_MAX - 1 && new_pages <= slots && total <= r->queue.capacity &&
           total <= r->retry.capacity && total + total / 3 + 1 <= r->index.capacity;
}

bool rvi_residency_knows(const rv_residency *r, rv_page_key key)
{
    return rvi_map_get(&r->index, rvi_page_key_bits(key), NULL);
}
