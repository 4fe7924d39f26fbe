/* The render scene: a projection table fed only by deltas (docs/design.md §7) — table storage, publication, lifecycle, queries and accounting. Beside it:
 * projection_apply.c (applying deltas: the drain), projection_index.c (the incremental
 * indices), projection_nodes.c (backing nodes in a world), projection_digest.c (the
 * deterministic digest).
 *
 * Each delta costs O(1): one key lookup, and for every index it touches an append or a
 * swap-remove with a back-index. Nothing scans the table except ClearGeneration and the
 * digest. */
#include "projection.h"
#include "journal.h"
#include "core/check.h"
#include "core/prefetch.h"
#include "world.h"

#include <string.h>

#define NONE RVI_INDEX_NONE

_Static_assert(sizeof(rvi_projection_hot) == 64, "one cache line");
_Static_assert(sizeof(rvi_placement) == 32, "half a cache line");
_Static_assert(sizeof(rvi_projection_row) == 64, "one cache line");

/* ---- table storage ---- */

enum { LINE = 64 };

static rvi_projection_hot *align_hot(void *block)
{
    return (rvi_projection_hot *)(((uintptr_t)block + LINE - 1) & ~(uintptr_t)(LINE - 1));
}

/* The hot lines, rows and placements of `capacity` slots, in one block (line-aligned
 * inside), with one spare placement after them (place[capacity]: see rvi_ix_remove_if). */
static size_t hot_block_size(uint32_t capacity)
{
    return (size_t)capacity * (sizeof(rvi_projection_hot) + sizeof(rvi_projection_row) + sizeof(rvi_placement)) +
           sizeof(rvi_placement) + LINE;
}

/* Bytes of an index array: capacity entries and a spare one past them (rvi_ix_add_if). */
static size_t index_bytes(uint32_t capacity)
{
    return ((size_t)capacity + 1) * sizeof(uint32_t);
}

/* Grows hot lines, rows, placements and every index array to capacity. All or nothing. */
static rv_result grow_table(rv_render_scene *s, uint32_t capacity)
{
    if (capacity > RVI_MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    void *hot_block = rvi_alloc(&s->heap, hot_block_size(capacity));
    uint32_t *fresh[RVI_IX_COUNT] = {0};
    bool ok = hot_block != NULL;
    for (int i = 0; ok && i < RVI_IX_COUNT; i++)
        ok = (fresh[i] = rvi_calloc(&s->heap, (size_t)capacity + 1, sizeof(uint32_t))) != NULL;
    if (!ok) {
        rvi_free(&s->heap, hot_block, hot_block ? hot_block_size(capacity) : 0);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            rvi_free(&s->heap, fresh[i], fresh[i] ? index_bytes(capacity) : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_projection_hot *hot = align_hot(hot_block);
    rvi_projection_row *rows = (rvi_projection_row *)(hot + capacity);
    rvi_placement *place = (rvi_placement *)(rows + capacity);
    if (s->capacity) {
        memcpy(hot, s->hot, (size_t)s->high * sizeof *hot);
        memcpy(place, s->place, (size_t)s->high * sizeof *place);
        memcpy(rows, s->rows, (size_t)s->high * sizeof *rows);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            memcpy(fresh[i], s->index[i], (size_t)s->index_count[i] * sizeof(uint32_t));
    }
    rvi_free(&s->heap, s->hot_block, s->capacity ? hot_block_size(s->capacity) : 0);
    for (int i = 0; i < RVI_IX_COUNT; i++) {
        rvi_free(&s->heap, s->index[i], s->capacity ? index_bytes(s->capacity) : 0);
        s->index[i] = fresh[i];
    }
    s->hot_block = hot_block;
    s->hot = hot;
    s->place = place;
    s->rows = rows;
    s->capacity = capacity;
    return RV_OK;
}

rv_result rvi_check_projections(const rv_render_scene *s, uint64_t n)
{
    if (n > RVI_MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    if (s->world && n > s->live)
        return rvi_scene_check_reserve(&s->world->scene, (uint32_t)(n - s->live));
    return RV_OK;
}

rv_result rvi_reserve_projections(rv_render_scene *s, uint32_t n)
{
    if (n > RVI_MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    if (n > s->capacity) {
        uint64_t cap = s->capacity ? s->capacity : 64;
        while (cap < n)
            cap *= 2;
        RVI_TRY(grow_table(s, cap > RVI_MAX_PROJECTIONS ? RVI_MAX_PROJECTIONS : (uint32_t)cap));
    }
    RVI_TRY(rvi_map_reserve(&s->heap, &s->key_lookup, n));
    if (s->world) {
        RVI_TRY(rvi_map_reserve(&s->heap, &s->node_lookup, n));
        RVI_TRY(rvi_scene_reserve(&s->world->scene, &s->world->heap, n - s->live));
    }
    return RV_OK;
}

rv_result rv_render_scene_publish(rv_render_scene *s, const rv_journal *j)
{
    if (!s)
        return RV_ERR_INVALID_ARG;
    if (s->in_observer)
        return RV_ERR_BAD_STATE;
    if (j && (j->draining || j->deltas.count)) {
        s->stats.carry_over++;
        return RV_ERR_INVARIANT;
    }
    uint32_t *dirty = s->index[RVI_IX_DIRTY];
    uint32_t n = s->index_count[RVI_IX_DIRTY];
    enum { AHEAD = 8 };
    for (uint32_t i = 0; i < n; i++) {
        if (i + AHEAD < n) /* scattered hot lines: fetch a few ahead */
            RVI_PREFETCH(&s->hot[dirty[i + AHEAD]]);
        s->hot[dirty[i]].dirty = 0;
    }
    s->index_count[RVI_IX_DIRTY] = 0;
    s->stats.publishes++;
    return RV_OK;
}

/* ---- lifecycle ---- */

static void free_scene(rv_render_scene *s, rv_alloc_stats *spent)
{
    for (int i = 0; i < RVI_IX_COUNT; i++)
        rvi_free(&s->heap, s->index[i], s->capacity ? index_bytes(s->capacity) : 0);
    rvi_free(&s->heap, s->hot_block, s->capacity ? hot_block_size(s->capacity) : 0);
    for (uint32_t b = 0; b < s->buckets.count; b++)
        rvi_vec_free(&s->heap, &rvi_bucket_at(s, b)->slots, sizeof(uint32_t));
    rvi_vec_free(&s->heap, &s->buckets, sizeof(rvi_cell_bucket));
    rvi_vec_free(&s->heap, &s->touched, sizeof(uint32_t));
    rvi_map_free(&s->heap, &s->key_lookup);
    rvi_map_free(&s->heap, &s->cell_lookup);
    rvi_map_free(&s->heap, &s->child_lookup);
    rvi_map_free(&s->heap, &s->node_lookup);
    rvi_free(&s->heap, s->digest_entries, (size_t)s->digest_capacity * 2 * sizeof(rvi_digest_entry));
    rvi_heap heap = s->heap;
    rvi_free(&heap, s, sizeof *s);
    if (spent)
        *spent = heap.stats;
}

rv_result rvi_render_scene_create_spent(const rv_render_scene_desc *desc, rv_render_scene **out,
                                        rv_alloc_stats *spent)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_render_scene_desc d = desc ? *desc : (rv_render_scene_desc){0};
    if (d.initial_capacity == 0)
        d.initial_capacity = 1024;
    if (d.initial_capacity > RVI_MAX_PROJECTIONS)
        return RV_ERR_INVALID_ARG;
    rvi_heap heap;
    rvi_heap_init(&heap, &d.allocator);
    rv_render_scene *s = rvi_alloc(&heap, sizeof *s);
    if (!s) {
        if (spent)
            *spent = heap.stats;
        return RV_ERR_OUT_OF_MEMORY;
    }
    memset(s, 0, sizeof *s);
    s->heap = heap;
    s->free_head = NONE;
    s->bucket_free = NONE;
    s->generation = d.initial_generation;
    s->stats.generation = d.initial_generation;
    s->observer = d.observer;
    s->observer_user = d.observer_user;
    rv_result r = grow_table(s, d.initial_capacity);
    if (r == RV_OK)
        r = rvi_map_reserve(&s->heap, &s->key_lookup, d.initial_capacity);
    if (r == RV_OK && d.world)
        r = rvi_render_scene_bind_world(s, d.world);
    if (r != RV_OK) {
        free_scene(s, spent);
        return r;
    }
    *out = s;
    return RV_OK;
}

rv_result rv_render_scene_create(const rv_render_scene_desc *desc, rv_render_scene **out)
{
    return rvi_render_scene_create_spent(desc, out, NULL);
}

void rv_render_scene_destroy(rv_render_scene *s)
{
    if (!s)
        return;
    rvi_render_scene_unbind_world(s);
    free_scene(s, NULL);
}

/* ---- queries ---- */

rv_result rv_render_scene_find(const rv_render_scene *s, uint64_t key, uint32_t *out_slot)
{
    if (!s || !out_slot)
        return RV_ERR_INVALID_ARG;
    uint64_t slot;
    if (!rvi_map_get(&s->key_lookup, key, &slot))
        return RV_ERR_NOT_FOUND;
    *out_slot = (uint32_t)slot;
    return RV_OK;
}

rv_result rv_render_scene_read(const rv_render_scene *s, uint32_t slot, rv_projection_record *out)
{
    if (!s || !out)
        return RV_ERR_INVALID_ARG;
    if (slot >= s->high || !s->rows[slot].live)
        return RV_ERR_NOT_FOUND;
    const rvi_projection_row *row = &s->rows[slot];
    out->key = row->key;
    out->incarnation = s->hot[slot].incarnation;
    out->generation = s->generation;
    rvi_load_projection(s, slot, &out->projection);
    out->node.id = row->node;
    out->dirty = s->hot[slot].dirty;
    return RV_OK;
}

uint32_t rv_render_scene_slot_limit(const rv_render_scene *s)
{
    return s ? s->high : 0;
}

rv_result rv_render_scene_index(const rv_render_scene *s, rv_projection_index which, rv_slot_list *out)
{
    if (!s || !out || which <= RV_INDEX_NONE || which >= RV_INDEX_COUNT_)
        return RV_ERR_INVALID_ARG;
    int ix = (int)which - 1;
    out->slots = s->index[ix];
    out->count = s->index_count[ix];
    return RV_OK;
}

rv_result rv_render_scene_cell(const rv_render_scene *s, uint64_t cell, rv_slot_list *out)
{
    if (!s || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t b = rvi_find_bucket(s, cell);
    if (b == NONE) {
        out->slots = NULL;
        out->count = 0;
        return RV_OK;
    }
    const rvi_cell_bucket *bk = &RVI_VEC_AT(s->buckets, rvi_cell_bucket, b);
    out->slots = bk->slots.count ? RVI_VEC_PTR(bk->slots, uint32_t) : NULL;
    out->count = bk->slots.count;
    return RV_OK;
}

rv_projection_counts rv_render_scene_counts(const rv_render_scene *s)
{
    rv_projection_counts c = {0};
    if (!s)
        return c;
    c.projections = s->live;
    c.outdoor_static = s->index_count[RVI_IX_OUTDOOR_STATIC];
    c.cell_static = s->cell_static_count;
    c.cells = s->cells_nonempty;
    c.dynamic = s->index_count[RVI_IX_DYNAMIC];
    c.equipped = s->equipped_count;
    c.translucent = s->index_count[RVI_IX_TRANSLUCENT];
    c.selectable = s->index_count[RVI_IX_SELECTABLE];
    c.light_candidate = s->index_count[RVI_IX_LIGHT_CANDIDATE];
    c.dirty = s->index_count[RVI_IX_DIRTY];
    return c;
}

rv_render_scene_stats rv_render_scene_get_stats(const rv_render_scene *s)
{
    rv_render_scene_stats none = {0};
    if (!s)
        return none;
    rv_render_scene_stats st = s->stats;
    st.last_sequence = s->last_sequence;
    st.generation = s->generation;
    st.orphaned_children = s->orphaned;
    return st;
}

static uint64_t map_bytes(const rvi_map *m)
{
    return rvi_map_bytes(m);
}

rv_render_scene_memory rv_render_scene_get_memory(const rv_render_scene *s)
{
    rv_render_scene_memory m = {0};
    if (!s)
        return m;
    /* Each index: its list and its column of the placements; the table: rows, hot lines,
     * the key lookup and the placements' bucket columns. */
    uint64_t index_each = (s->capacity ? index_bytes(s->capacity) : 0) + (uint64_t)s->capacity * sizeof(uint32_t);
    m.table_bytes = map_bytes(&s->key_lookup) + (s->capacity ? hot_block_size(s->capacity) : 0) -
                    (uint64_t)s->capacity * RVI_IX_COUNT * sizeof(uint32_t);
    for (int i = 0; i < RVI_IX_COUNT; i++)
        m.index_bytes[i + 1] = index_each;
    m.cell_bytes = (uint64_t)s->buckets.capacity * sizeof(rvi_cell_bucket) + map_bytes(&s->cell_lookup) +
                   (uint64_t)s->touched.capacity * sizeof(uint32_t);
    for (uint32_t b = 0; b < s->buckets.count; b++)
        m.cell_bytes += (uint64_t)RVI_VEC_AT(s->buckets, rvi_cell_bucket, b).slots.capacity * sizeof(uint32_t);
    m.link_bytes = map_bytes(&s->child_lookup) + map_bytes(&s->node_lookup);
    m.digest_bytes = (uint64_t)s->digest_capacity * 2 * sizeof(rvi_digest_entry);
    m.total_bytes = sizeof *s + m.table_bytes + m.cell_bytes + m.link_bytes + m.digest_bytes;
    for (int i = 0; i < RV_INDEX_COUNT_; i++)
        m.total_bytes += m.index_bytes[i];
    return m;
}

rv_alloc_stats rv_render_scene_alloc_stats(const rv_render_scene *s)
{
    rv_alloc_stats none = {0};
    return s ? s->heap.stats : none;
}

uint32_t rvi_render_scene_slot_of_node(const rv_render_scene *s, uint32_t node_index)
{
    uint64_t slot;
    if (!s->world || !rvi_map_get(&s->node_lookup, node_index, &slot))
        return NONE;
    return (uint32_t)slot;
}

rv_result rv_render_scene_node_key(const rv_render_scene *s, rv_node node, uint64_t *out_key, uint32_t *out_slot)
{
    if (!s)
        return RV_ERR_INVALID_ARG;
    uint32_t slot = rvi_render_scene_slot_of_node(s, (uint32_t)(node.id & 0xFFFFFFu));
    if (slot == NONE || s->rows[slot].node != node.id)
        return RV_ERR_NOT_FOUND;
    if (out_key)
        *out_key = s->rows[slot].key;
    if (out_slot)
        *out_slot = slot;
    return RV_OK;
}
