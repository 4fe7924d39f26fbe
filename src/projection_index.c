/* The render scene's incremental indices (docs/design.md §7): class indices, per-cell buckets,
 * flag indices, the dirty index and equipped-children lists. Every change is O(1):
 * append, or swap-remove with a back-index (the slot's rvi_placement). */
#include "projection.h"
#include "core/check.h"

#define NONE RVI_INDEX_NONE

/* ---- cell buckets ---- */

uint32_t rvi_find_bucket(const rv_render_scene *s, uint64_t cell)
{
    uint64_t b;
    return rvi_map_get(&s->cell_lookup, cell, &b) ? (uint32_t)b : NONE;
}

/* A bucket for cell, from the free list or the end of the bucket array. The caller has
 * reserved one more bucket and one more cell lookup entry (rvi_reserve_cell): this cannot
 * fail. */
static uint32_t make_bucket(rv_render_scene *s, uint64_t cell)
{
    uint32_t b;
    if (s->bucket_free != NONE) {
        b = s->bucket_free;
        s->bucket_free = rvi_bucket_at(s, b)->next_free;
    } else {
        b = s->buckets.count++;
        memset(rvi_bucket_at(s, b), 0, sizeof(rvi_cell_bucket));
    }
    rvi_cell_bucket *bk = rvi_bucket_at(s, b);
    bk->cell = cell;
    bk->in_use = true;
    bk->pending = 0;
    bk->touched = false;
    bk->slots.count = 0;
    rv_result r = rvi_map_put(&s->heap, &s->cell_lookup, cell, b);
    (void)r;
    return b;
}

/* Returns an empty bucket to the free list; it keeps its storage for the next cell. */
static void release_bucket(rv_render_scene *s, uint32_t b)
{
    rvi_cell_bucket *bk = rvi_bucket_at(s, b);
    rvi_map_remove(&s->cell_lookup, bk->cell);
    bk->in_use = false;
    bk->next_free = s->bucket_free;
    s->bucket_free = b;
}

static void bucket_add(rv_render_scene *s, uint32_t slot, uint64_t cell)
{
    uint32_t b = rvi_find_bucket(s, cell); /* reserved by the batch: present */
    rvi_cell_bucket *bk = rvi_bucket_at(s, b);
    uint32_t p = bk->slots.count++;
    RVI_VEC_AT(bk->slots, uint32_t, p) = slot;
    if (p == 0)
        s->cells_nonempty++;
    s->cell_static_count++;
    s->place[slot].bucket = b;
    s->place[slot].bucket_pos = p;
}

static void bucket_remove(rv_render_scene *s, uint32_t slot)
{
    rvi_placement *pl = &s->place[slot];
    uint32_t b = pl->bucket;
    rvi_cell_bucket *bk = rvi_bucket_at(s, b);
    uint32_t last = RVI_VEC_AT(bk->slots, uint32_t, --bk->slots.count);
    RVI_VEC_AT(bk->slots, uint32_t, pl->bucket_pos) = last;
    s->place[last].bucket_pos = pl->bucket_pos;
    pl->bucket = pl->bucket_pos = NONE;
    s->cell_static_count--;
    if (bk->slots.count == 0) {
        s->cells_nonempty--;
        /* A bucket the batch reserved stays until the batch ends: a later delta of the
         * batch may still insert into it. */
        if (!bk->touched)
            release_bucket(s, b);
    }
}

/* ---- equipped children (parent key -> intrusive list of child slots) ---- */

/* child_lookup values: the first child's slot in the low 32 bits, the number of children in
 * the high 32, so counting a key's children (every Register and Unregister does, for the
 * orphan count) is one lookup rather than a walk over the children's rows. The parent key is
 * hashed once for the child lookup and the key lookup (every map hashes a key alike). */
static uint64_t child_entry(uint32_t first, uint32_t count)
{
    return (uint64_t)count << 32 | first;
}

static void child_link(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    uint64_t parent = row->parent_key;
    uint64_t hash = rvi_map_hash(parent);
    uint64_t *entry = rvi_map_value_hashed(&s->child_lookup, parent, hash);
    row->child_prev = NONE;
    if (entry) {
        uint32_t head = (uint32_t)*entry;
        row->child_next = head;
        s->rows[head].child_prev = slot;
        *entry = child_entry(slot, (uint32_t)(*entry >> 32) + 1);
    } else {
        row->child_next = NONE;
        rvi_map_insert_absent_hashed(&s->child_lookup, parent, hash, child_entry(slot, 1)); /* reserved */
    }
    s->equipped_count++;
    s->orphaned += !rvi_map_get_hashed(&s->key_lookup, parent, hash, NULL);
}

static void child_unlink(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    uint64_t parent = row->parent_key;
    uint64_t hash = rvi_map_hash(parent);
    uint64_t *entry = rvi_map_value_hashed(&s->child_lookup, parent, hash); /* present: slot is a child */
    uint32_t count = (uint32_t)(*entry >> 32) - 1;
    uint32_t prev = row->child_prev, next = row->child_next;
    if (count == 0) {
        rvi_map_remove_hashed(&s->child_lookup, parent, hash);
    } else {
        uint32_t first = prev != NONE ? (uint32_t)*entry : next;
        *entry = child_entry(first, count);
    }
    /* Whether a neighbour exists is data (a branch on it was mispredicted about half the
     * time): a missing one's link is written to this row instead, which is reset next. */
    s->rows[prev != NONE ? prev : slot].child_next = next;
    s->rows[next != NONE ? next : slot].child_prev = prev;
    row->child_next = row->child_prev = NONE;
    s->equipped_count--;
    s->orphaned -= !rvi_map_get_hashed(&s->key_lookup, parent, hash, NULL);
}

/* ---- class placement ---- */

void rvi_place(rv_render_scene *s, uint32_t slot)
{
    switch (s->hot[slot].projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: rvi_ix_add(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_add(s, slot, s->rows[slot].cell); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_link(s, slot); /* fall through */
    default: rvi_ix_add(s, RVI_IX_DYNAMIC, slot); break;
    }
}

void rvi_unplace(rv_render_scene *s, uint32_t slot)
{
    switch (s->hot[slot].projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: rvi_ix_remove(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_remove(s, slot); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_unlink(s, slot); /* fall through */
    default: rvi_ix_remove(s, RVI_IX_DYNAMIC, slot); break;
    }
}

/* Ends a batch: buckets it reserved forget their reservations; empty ones are released. */
void rvi_finish_batch(rv_render_scene *s)
{
    if (s->blocked)
        rvi_retry_blocked(s);
    for (uint32_t i = 0; i < s->touched.count; i++) {
        uint32_t b = RVI_VEC_AT(s->touched, uint32_t, i);
        rvi_cell_bucket *bk = rvi_bucket_at(s, b);
        bk->pending = 0;
        bk->touched = false;
        if (bk->in_use && bk->slots.count == 0)
            release_bucket(s, b);
    }
    s->touched.count = 0;
}

/* Reserves one insertion into cell's bucket (made now if the cell has none). The caller
 * reserved the lookup, bucket and touched-list room with reserve_counts. */
rv_result rvi_reserve_cell(rv_render_scene *s, uint64_t cell)
{
    uint32_t b = rvi_find_bucket(s, cell);
    if (b == NONE) {
        RVI_TRY(rvi_map_reserve(&s->heap, &s->cell_lookup, s->cell_lookup.count + 1));
        if (s->bucket_free == NONE)
            RVI_TRY(rvi_vec_reserve(&s->heap, &s->buckets, sizeof(rvi_cell_bucket), s->buckets.count + 1));
        b = make_bucket(s, cell);
    }
    rvi_cell_bucket *bk = rvi_bucket_at(s, b);
    if (!bk->touched) {
        bk->touched = true;
        RVI_VEC_AT(s->touched, uint32_t, s->touched.count++) = b;
    }
    bk->pending++;
    uint32_t need = bk->slots.count + bk->pending;
    return need <= bk->slots.capacity ? RV_OK : rvi_vec_reserve(&s->heap, &bk->slots, sizeof(uint32_t), need);
}

