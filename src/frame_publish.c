/* Publishing a frame: the two alternating arenas a view points into, the stable radix sort
 * of the draw lists, draw items, view validity and the view digest. */
#include "frame.h"
#include "core/check.h"
#include "core/hash.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- arenas and scratch ------------------------------------------------------------------ */

void rvi_frame_arena_free(rvi_heap *heap, rvi_frame_arena *a)
{
    rvi_vec_free(heap, &a->opaque, sizeof(rv_draw_item));
    rvi_vec_free(heap, &a->translucent, sizeof(rv_draw_item));
    rvi_vec_free(heap, &a->resync_requests, sizeof(rv_partition_request));
    rvi_vec_free(heap, &a->resync_parts, sizeof(rv_node));
    rvi_vec_free(heap, &a->page_requests, sizeof(rv_page_request));
    rvi_vec_free(heap, &a->page_evictions, sizeof(rv_page_eviction));
    rvi_vec_free(heap, &a->hlod_loads, sizeof(rv_node));
    rvi_vec_free(heap, &a->culls, sizeof(rv_cull_record));
}

void rvi_walk_scratch_free(rvi_heap *heap, rvi_walk_scratch *s)
{
    rvi_vec_free(heap, &s->stack, sizeof(uint32_t));
    rvi_vec_free(heap, &s->weights, sizeof(float));
    rvi_vec_free(heap, &s->candidates, sizeof(rvi_candidate));
    rvi_vec_free(heap, &s->sort_keys, sizeof(uint32_t));
    rvi_vec_free(heap, &s->sort_order, sizeof(uint32_t));
    rvi_vec_free(heap, &s->hlod_loads, sizeof(rv_hlod_load));
}

rv_result rvi_frame_reserve_sort(rvi_heap *heap, rvi_walk_scratch *s, uint32_t n)
{
    if (n > UINT32_MAX / 2)
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(heap, &s->sort_keys, sizeof(uint32_t), 2 * n));
    return rvi_vec_reserve(heap, &s->sort_order, sizeof(uint32_t), 2 * n);
}

/* Maps a float to a uint32 whose unsigned order is the float's order (NaN last); -0 and
 * +0 are equal depths and get one key, so the sort keeps their order. */
static inline uint32_t depth_key(float f, bool descending)
{
    if (f == 0.0f)
        f = 0.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return descending ? ~u : u;
}

uint32_t rvi_frame_depth_key(float view_depth, bool far_to_near)
{
    return depth_key(view_depth, far_to_near);
}

/* Three passes of 11, 11 and 10 bits; every pass's histogram is counted in one read of
 * the keys before the first pass. */
#define SORT_DIGITS 3
#define SORT_BUCKETS 2048u

uint32_t *rvi_frame_sort_pairs(uint32_t n, uint32_t *keys, uint32_t *order, uint32_t *keys2, uint32_t *order2)
{
    if (n < 2)
        return order;
    static const int shift[SORT_DIGITS] = { 0, 11, 22 };
    uint32_t count[SORT_DIGITS][SORT_BUCKETS];
    memset(count, 0, sizeof count);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = keys[i];
        count[0][k & 2047u]++;
        count[1][(k >> 11) & 2047u]++;
        count[2][k >> 22]++;
    }
    for (int d = 0; d < SORT_DIGITS; d++) {
        uint32_t *c = count[d];
        if (c[(keys[0] >> shift[d]) & 2047u] == n)
            continue; /* every key shares this digit: the pass would not move anything */
        uint32_t sum = 0;
        for (uint32_t b = 0; b < SORT_BUCKETS; b++) {
            uint32_t v = c[b];
            c[b] = sum;
            sum += v;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t dst = c[(keys[i] >> shift[d]) & 2047u]++;
            keys2[dst] = keys[i];
            order2[dst] = order[i];
        }
        uint32_t *t = keys; keys = keys2; keys2 = t;
        t = order; order = order2; order2 = t;
    }
    return order;
}

/* LSD radix sort on (key, index), then the permutation applied in place. */
void rvi_frame_sort(rv_draw_item *items, uint32_t n, bool far_to_near, rvi_walk_scratch *s)
{
    if (n < 2)
        return;
    uint32_t *keys = RVI_VEC_PTR(s->sort_keys, uint32_t), *order = RVI_VEC_PTR(s->sort_order, uint32_t);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = depth_key(items[i].view_depth, far_to_near);
        order[i] = i;
    }
    order = rvi_frame_sort_pairs(n, keys, order, keys + n, order + n);
    /* Apply the permutation in place, cycle by cycle (slot i takes item order[i]): each
     * 96-byte item moves once, with no gather buffer and no copy back. A placed slot is
     * marked by order[i] = i. */
    for (uint32_t i = 0; i < n; i++) {
        if (order[i] == i)
            continue;
        rv_draw_item held = items[i];
        uint32_t j = i;
        for (;;) {
            uint32_t from = order[j];
            order[j] = j;
            if (from == i) {
                items[j] = held;
                break;
            }
            items[j] = items[from];
            j = from;
        }
    }
}

void rvi_frame_emit(const rv_world *world, rv_draw_item *it, uint32_t node, uint32_t level, float fade,
                    float view_depth)
{
    const rvi_scene *sc = &world->scene;
    it->node = rvi_node_handle(sc, node);
    it->key = sc->key[node];
    it->lod_level = level;
    it->fade = fade > 1.0f ? 1.0f : fade;
    it->view_depth = view_depth;
    memcpy(it->world_matrix, sc->world_matrix[node], sizeof it->world_matrix);
}

/* ---- validity and digest ------------------------------------------------------------------ */

bool rv_frame_view_is_valid(const rv_world *world, const rv_frame_view *view)
{
    if (!world || !view)
        return false;
    if (view->arena >= 2)
        return false; /* an extra view: valid until the next rv_cull_view with its list */
    const rvi_frame *f = rvi_frame_find(world);
    if (!f || view->frame_sequence == 0)
        return false;
    const rvi_frame_arena *a = &f->arenas[view->arena];
    /* Reused once a later frame began building in it. */
    return a->generation == view->generation && f->building != (int)view->arena &&
           (view->opaque == NULL || view->opaque == a->opaque.data);
}

static uint64_t digest_list(uint64_t h, const rv_draw_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const rv_draw_item *it = &items[i];
        /* Slot and generation, not the tag: two worlds built alike digest alike. */
        uint64_t words[4] = { it->node.id & 0xFFFFFFFFFFFFull, it->key, it->lod_level, 0 };
        float fade = it->fade;
        memcpy(&words[3], &fade, sizeof fade);
        h = rvi_hash_bytes(h, words, sizeof words);
    }
    return h;
}

uint64_t rv_frame_view_digest(const rv_frame_view *view)
{
    if (!view)
        return 0;
    uint64_t h = rvi_mix64(0x7276697376696577ull ^ view->opaque_count);
    h = digest_list(h, view->opaque, view->opaque_count);
    h = rvi_mix64(h ^ view->translucent_count);
    return digest_list(h, view->translucent, view->translucent_count);
}
