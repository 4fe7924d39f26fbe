/* The render scene: a projection table fed only by deltas (DESIGN.md §7; seed 004
 * §3.2-3.5, §4) — the table, the drain and its reservation, queries and accounting.
 * Beside it: projection_index.c (the incremental indices), projection_nodes.c (backing
 * nodes in a world), projection_digest.c (the deterministic digest).
 *
 * Each delta costs O(1): one key lookup, and for every index it touches an append or a
 * swap-remove with a back-index. Nothing scans the table except ClearGeneration and the
 * digest. Storage a batch of deltas needs is reserved before the first of them is applied,
 * so applying never fails half-way. */
#include "projection.h"
#include "journal.h"
#include "core/hash.h"
#include "core/check.h"
#include "scene.h"
#include "world.h"

#include <string.h>

#define NONE RVI_INDEX_NONE

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif
#define MAX_PROJECTIONS (1u << 30)
/* The drain loop's per-delta steps, inlined into it: as calls, their register saves and
 * argument passing were a tenth of an applied delta's instructions. */
#if defined(__GNUC__) || defined(__clang__)
#define DRAIN_STEP static inline __attribute__((always_inline))
#else
#define DRAIN_STEP static inline
#endif

_Static_assert(sizeof(rvi_projection_hot) == 64, "one cache line");
_Static_assert(sizeof(rvi_placement) == 32, "half a cache line");

/* ---- table storage ---- */

enum { LINE = 64 };

static rvi_projection_hot *align_hot(void *block)
{
    return (rvi_projection_hot *)(((uintptr_t)block + LINE - 1) & ~(uintptr_t)(LINE - 1));
}

/* The hot lines and placements of `capacity` slots, in one block (line-aligned inside). */
static size_t hot_block_size(uint32_t capacity)
{
    return (size_t)capacity * (sizeof(rvi_projection_hot) + sizeof(rvi_placement)) + LINE;
}

/* Grows hot lines, placements, rows and every index array to capacity. All or nothing. */
static rv_result grow_table(rv_render_scene *s, uint32_t capacity)
{
    if (capacity > MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    void *hot_block = rvi_alloc(&s->heap, hot_block_size(capacity));
    rvi_projection_row *rows = rvi_alloc(&s->heap, (size_t)capacity * sizeof *rows);
    uint32_t *fresh[RVI_IX_COUNT] = {0};
    bool ok = rows && hot_block;
    for (int i = 0; ok && i < RVI_IX_COUNT; i++)
        ok = (fresh[i] = rvi_alloc(&s->heap, (size_t)capacity * sizeof(uint32_t))) != NULL;
    if (!ok) {
        rvi_free(&s->heap, hot_block, hot_block ? hot_block_size(capacity) : 0);
        rvi_free(&s->heap, rows, rows ? (size_t)capacity * sizeof *rows : 0);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            rvi_free(&s->heap, fresh[i], fresh[i] ? (size_t)capacity * sizeof(uint32_t) : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_projection_hot *hot = align_hot(hot_block);
    rvi_placement *place = (rvi_placement *)(hot + capacity);
    if (s->capacity) {
        memcpy(hot, s->hot, (size_t)s->high * sizeof *hot);
        memcpy(place, s->place, (size_t)s->high * sizeof *place);
        memcpy(rows, s->rows, (size_t)s->high * sizeof *rows);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            memcpy(fresh[i], s->index[i], (size_t)s->index_count[i] * sizeof(uint32_t));
    }
    rvi_free(&s->heap, s->hot_block, s->capacity ? hot_block_size(s->capacity) : 0);
    rvi_free(&s->heap, s->rows, (size_t)s->capacity * sizeof *rows);
    for (int i = 0; i < RVI_IX_COUNT; i++) {
        rvi_free(&s->heap, s->index[i], (size_t)s->capacity * sizeof(uint32_t));
        s->index[i] = fresh[i];
    }
    s->hot_block = hot_block;
    s->hot = hot;
    s->place = place;
    s->rows = rows;
    s->capacity = capacity;
    return RV_OK;
}

static rv_result reserve_projections(rv_render_scene *s, uint32_t n)
{
    if (n > MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    if (n > s->capacity) {
        uint64_t cap = s->capacity ? s->capacity : 64;
        while (cap < n)
            cap *= 2;
        RVI_TRY(grow_table(s, cap > MAX_PROJECTIONS ? MAX_PROJECTIONS : (uint32_t)cap));
    }
    RVI_TRY(rvi_map_reserve(&s->heap, &s->key_lookup, n));
    if (s->world) {
        RVI_TRY(rvi_map_reserve(&s->heap, &s->node_lookup, n));
        RVI_TRY(rvi_scene_reserve(&s->world->scene, &s->world->heap, n - s->live));
    }
    return RV_OK;
}

static uint32_t take_slot(rv_render_scene *s)
{
    uint32_t slot;
    if (s->free_head != NONE) {
        slot = s->free_head;
        s->free_head = s->rows[slot].next_free;
    } else {
        slot = s->high++;
    }
    return slot;
}

static void release_slot(rv_render_scene *s, uint32_t slot)
{
    s->rows[slot].live = false;
    s->rows[slot].next_free = s->free_head;
    s->free_head = slot;
}

/* ---- projections ---- */

static void insert_projection(rv_render_scene *s, const rv_delta *d)
{
    uint32_t slot = take_slot(s);
    rvi_projection_row *row = &s->rows[slot];
    rvi_projection_hot *h = &s->hot[slot];
    const rv_projection *p = &d->projection;
    row->key = d->key;
    row->node = 0;
    rvi_store_transform(h, &p->transform);
    row->mesh = p->appearance.mesh;
    row->material_variant = p->appearance.material_variant;
    rvi_store_bucket(s, slot, &p->bucket);
    h->flags = (uint8_t)p->flags;
    h->incarnation = d->incarnation;
    row->generation = d->generation;
    h->dirty = 0;
    s->place[slot].bucket = s->place[slot].bucket_pos = NONE;
    row->child_next = row->child_prev = NONE;
    row->next_free = NONE;
    row->live = true;
    row->blocked = false;
    s->live++;
    rv_result r = rvi_map_put(&s->heap, &s->key_lookup, d->key, slot); /* reserved */
    (void)r;
    /* Children registered before their parent stop being orphans. */
    s->orphaned -= rvi_count_children(s, d->key);
    rvi_place(s, slot);
    rvi_set_flag_membership(s, slot, 0, h->flags);
    rvi_mark_dirty(s, slot, RV_DIRTY_REGISTERED);
    if (s->world)
        rvi_node_bind(s, slot);
}

static void remove_projection(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    rvi_projection_hot *h = &s->hot[slot];
    rvi_unplace(s, slot);
    rvi_set_flag_membership(s, slot, h->flags, 0);
    if (h->dirty)
        rvi_ix_remove(s, RVI_IX_DIRTY, slot);
    h->dirty = 0;
    rvi_map_remove(&s->key_lookup, row->key);
    s->orphaned += rvi_count_children(s, row->key);
    if (s->world)
        rvi_node_drop(s, slot);
    if (row->blocked)
        rvi_set_blocked(s, slot, false);
    release_slot(s, slot);
    s->live--;
}

static void clear_all(rv_render_scene *s, rv_apply_counts *c)
{
    for (uint32_t slot = 0; slot < s->high; slot++) {
        if (s->rows[slot].live) {
            remove_projection(s, slot);
            c->cleared++;
        }
    }
}

/* A key's slot as looked up a few deltas early (slot NONE: not live). The caller passes it
 * only when no delta applied since could have added or removed that key. */
typedef struct lookup_hint {
    uint64_t key;
    uint32_t slot;
} lookup_hint;

/* Applies or rejects one delta. Never fails: the batch reserved what it needs. */
DRAIN_STEP void apply_one(rv_render_scene *s, const rv_delta *d, bool validate, const lookup_hint *hint,
                      rv_delta_outcome *out, rv_apply_counts *c)
{
    rv_delta_outcome o = RV_DELTA_APPLIED;
    uint32_t slot = NONE;
    if (validate && rvi_delta_validate(d) != RV_OK) {
        o = RV_DELTA_REJECTED_INVALID;
        goto done;
    }
    if (d->sequence <= s->last_sequence) {
        o = RV_DELTA_REJECTED_SEQUENCE;
        goto done;
    }
    if (d->kind == RV_DELTA_CLEAR_GENERATION) {
        if (d->generation <= s->generation) {
            o = RV_DELTA_REJECTED_OLDER_GENERATION;
        } else {
            clear_all(s, c);
            s->generation = d->generation;
        }
        goto taken;
    }
    if (d->generation != s->generation) {
        o = d->generation < s->generation ? RV_DELTA_REJECTED_OLDER_GENERATION : RV_DELTA_REJECTED_NEWER_GENERATION;
        goto taken;
    }
    uint64_t found;
    if (hint && hint->key == d->key)
        slot = hint->slot; /* looked up ahead; the key neither came nor went since */
    else if (rvi_map_get(&s->key_lookup, d->key, &found))
        slot = (uint32_t)found;
    if (d->kind == RV_DELTA_REGISTER) {
        if (slot != NONE) {
            uint32_t live_incarnation = s->hot[slot].incarnation;
            if (d->incarnation == live_incarnation) {
                o = RV_DELTA_REJECTED_DUPLICATE;
                goto taken;
            }
            if (d->incarnation < live_incarnation) {
                o = RV_DELTA_REJECTED_STALE_INCARNATION;
                goto taken;
            }
        }
        if (slot != NONE) {
            remove_projection(s, slot);
            c->replaced++;
        }
        insert_projection(s, d);
        c->registered++;
        goto taken;
    }
    if (slot == NONE || d->incarnation > s->hot[slot].incarnation) {
        o = RV_DELTA_REJECTED_UNKNOWN_KEY;
        goto taken;
    }
    if (d->incarnation < s->hot[slot].incarnation) {
        o = RV_DELTA_REJECTED_STALE_INCARNATION;
        goto taken;
    }
    rvi_projection_hot *h = &s->hot[slot];
    switch (d->kind) {
    case RV_DELTA_UPDATE_TRANSFORM:
        rvi_store_transform(h, &d->projection.transform);
        rvi_mark_dirty(s, slot, RV_DIRTY_TRANSFORM);
        if (s->world)
            rvi_node_write_transform(s, slot);
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        s->rows[slot].mesh = d->projection.appearance.mesh;
        s->rows[slot].material_variant = d->projection.appearance.material_variant;
        rvi_mark_dirty(s, slot, RV_DIRTY_APPEARANCE);
        break;
    case RV_DELTA_UPDATE_FLAGS:
        rvi_set_flag_membership(s, slot, h->flags, d->projection.flags);
        h->flags = (uint8_t)d->projection.flags;
        rvi_mark_dirty(s, slot, RV_DIRTY_FLAGS);
        if (s->world)
            rvi_node_write_flags(s, slot);
        break;
    case RV_DELTA_REBUCKET:
        rvi_unplace(s, slot);
        rvi_store_bucket(s, slot, &d->projection.bucket);
        rvi_place(s, slot);
        rvi_mark_dirty(s, slot, RV_DIRTY_BUCKET);
        rvi_node_reparent(s, slot);
        break;
    case RV_DELTA_UNREGISTER:
        remove_projection(s, slot);
        c->unregistered++;
        break;
    default:
        break;
    }
taken:
    s->last_sequence = d->sequence;
done:
    c->taken++;
    if (o == RV_DELTA_APPLIED)
        c->applied++;
    else
        c->rejected[o]++;
    *out = o;
}

/* ---- batch reservation ---- */

/* The counts a batch reserves for (upper bounds: a rejected delta leaves its reservation
 * unused). */
typedef struct batch_needs {
    uint32_t registers;
    uint32_t cell_targets;     /* Registers and Rebuckets into class cell static */
    uint32_t equipped_targets; /* ... into class equipped child */
} batch_needs;

/* Reserves the table, lookups and per-batch cell bookkeeping for `needs`. */
static rv_result reserve_counts(rv_render_scene *s, batch_needs needs)
{
    if (needs.registers) {
        if ((uint64_t)s->live + needs.registers > MAX_PROJECTIONS)
            return RV_ERR_CAPACITY;
        RVI_TRY(reserve_projections(s, s->live + needs.registers));
    }
    if (needs.equipped_targets)
        RVI_TRY(rvi_map_reserve(&s->heap, &s->child_lookup, s->child_lookup.count + needs.equipped_targets));
    if (needs.cell_targets) {
        uint32_t n = needs.cell_targets;
        RVI_TRY(rvi_vec_reserve(&s->heap, &s->touched, sizeof(uint32_t), n));
        RVI_TRY(rvi_map_reserve(&s->heap, &s->cell_lookup, s->cell_lookup.count + n));
        RVI_TRY(rvi_vec_reserve(&s->heap, &s->buckets, sizeof(rvi_cell_bucket), s->buckets.count + n));
    }
    return RV_OK;
}

static rv_projection_class target_class(const rv_delta *d)
{
    if (d->kind != RV_DELTA_REGISTER && d->kind != RV_DELTA_REBUCKET)
        return RV_PROJECTION_CLASS_NONE;
    return d->projection.bucket.projection_class;
}

/* Reserves everything applying d[0..n) (an array given whole) may need, a bound world's
 * nodes included, so the batch cannot fail once it starts. */
static rv_result reserve_array(rv_render_scene *s, const rv_delta *d, uint32_t n)
{
    batch_needs needs = {0};
    for (uint32_t i = 0; i < n; i++) {
        needs.registers += d[i].kind == RV_DELTA_REGISTER;
        rv_projection_class c = target_class(&d[i]);
        needs.cell_targets += c == RV_PROJECTION_CELL_STATIC;
        needs.equipped_targets += c == RV_PROJECTION_EQUIPPED_CHILD;
    }
    RVI_TRY(reserve_counts(s, needs));
    for (uint32_t i = 0; needs.cell_targets && i < n; i++) {
        if (target_class(&d[i]) != RV_PROJECTION_CELL_STATIC)
            continue;
        rv_result r = rvi_reserve_cell(s, d[i].projection.bucket.cell);
        if (r != RV_OK) {
            rvi_finish_batch(s);
            return r;
        }
    }
    return RV_OK;
}

/* The same for the journal's entries appended since the batches before (*done: what they
 * counted). The journal counts on append, so a batch needs no pass over its deltas. */
static rv_result reserve_journal(rv_render_scene *s, const rv_journal *j, batch_needs *done)
{
    batch_needs needs = { j->needs.registers - done->registers, j->needs.cell_entries.count - done->cell_targets,
                          j->needs.equipped_targets - done->equipped_targets };
    RVI_TRY(reserve_counts(s, needs));
    for (uint32_t k = done->cell_targets; k < j->needs.cell_entries.count; k++) {
        uint32_t e = RVI_VEC_AT(j->needs.cell_entries, uint32_t, k);
        rv_result r = rvi_reserve_cell(s, rvi_journal_entry(j, e)->projection.bucket.cell);
        if (r != RV_OK) {
            rvi_finish_batch(s);
            return r;
        }
    }
    done->registers = j->needs.registers;
    done->equipped_targets = j->needs.equipped_targets;
    done->cell_targets = j->needs.cell_entries.count;
    return RV_OK;
}

/* ---- apply ---- */

static void notify(rv_render_scene *s, const rv_delta *d, rv_delta_outcome o)
{
    if (!s->observer)
        return;
    s->in_observer = true;
    s->observer(d, o, s->observer_user);
    s->in_observer = false;
}

static void add_counts(rv_apply_counts *total, const rv_apply_counts *c)
{
    total->taken += c->taken;
    total->applied += c->applied;
    for (int i = 0; i < RV_DELTA_OUTCOME_COUNT_; i++)
        total->rejected[i] += c->rejected[i];
    total->registered += c->registered;
    total->replaced += c->replaced;
    total->unregistered += c->unregistered;
    total->cleared += c->cleared;
}

/* Software pipelining over the drain: the key's lookup slot is fetched LOOKUP_AHEAD deltas
 * early and its row ROW_AHEAD deltas early, so a delta rarely waits on memory (a table of
 * 100,000 rows does not fit in cache; see bench journal_apply_1m). Hints only: a lookup made
 * early may be outdated by the time the delta is applied, which costs speed, never
 * correctness. */
enum { LOOKUP_AHEAD = 16, ROW_AHEAD = 8, REMOVAL_AHEAD = 4 };

/* Looks the key up ahead of time (remembering the answer in *hint) and prefetches the hot
 * line and dirty back-index, and what else the delta's kind reads. */
static void prefetch_row(const rv_render_scene *s, const rv_delta *d, uint64_t key_hash, lookup_hint *hint)
{
    uint64_t slot;
    hint->key = d->key;
    hint->slot = NONE;
    if (d->kind == RV_DELTA_REGISTER || d->kind == RV_DELTA_UNREGISTER) {
        /* Both count the key's children (insert_projection, remove_projection). */
        rvi_map_prefetch(&s->child_lookup, d->key);
        if (d->kind == RV_DELTA_REGISTER && d->projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD) {
            /* child_link reads the parent's child list and whether the parent is live. */
            rvi_map_prefetch(&s->child_lookup, d->projection.bucket.parent_key);
            rvi_map_prefetch(&s->key_lookup, d->projection.bucket.parent_key);
        }
    }
    if (!rvi_map_get_hashed(&s->key_lookup, d->key, key_hash, &slot))
        return;
    hint->slot = (uint32_t)slot;
    PREFETCH(&s->hot[slot]);
    PREFETCH(&s->place[slot]); /* every back-index: dirty, flags, class, bucket */
    if (d->kind == RV_DELTA_UPDATE_TRANSFORM || d->kind == RV_DELTA_UPDATE_FLAGS) {
        if (s->world)
            PREFETCH(&s->rows[slot].node); /* the backing node the update is written to */
    } else {
        const char *row = (const char *)&s->rows[slot];
        PREFETCH(row);
        PREFETCH(row + sizeof *s->rows - 1);
    }
}

/* Swap-removes write two lines per index a slot leaves — its position in the index array
 * and the back-index of the index's last member, which moves into it — at places nothing
 * else touches, so unprefetched they were most of an Unregister's cost (and an UpdateFlags
 * clearing a flag pays one). REMOVAL_AHEAD deltas early the slot's hot line and placement
 * (prefetched ROW_AHEAD early) have arrived: read which indices the delta makes it leave
 * and request those lines. An index's tail may still change before the delta applies; a
 * stale guess costs one prefetch. */
static void prefetch_swap_remove(const rv_render_scene *s, int ix, uint32_t pos)
{
    const uint32_t *a = s->index[ix];
    PREFETCH(&a[pos]);
    PREFETCH(&s->place[a[s->index_count[ix] - 1]]);
}

static void prefetch_removal(const rv_render_scene *s, const rv_delta *d, uint32_t slot)
{
    const rvi_projection_hot *h = &s->hot[slot];
    const rvi_placement *pl = &s->place[slot];
    uint32_t leaving = h->flags; /* flag bits whose index the slot leaves */
    if (d->kind == RV_DELTA_UPDATE_FLAGS) {
        leaving &= ~d->projection.flags;
    } else { /* Unregister: the class index (or cell bucket, child list) and dirty too */
        switch (h->projection_class) {
        case RV_PROJECTION_OUTDOOR_STATIC: prefetch_swap_remove(s, RVI_IX_OUTDOOR_STATIC, pl->pos[RVI_IX_OUTDOOR_STATIC]); break;
        case RV_PROJECTION_CELL_STATIC: {
            const rvi_cell_bucket *bk = &RVI_VEC_AT(s->buckets, rvi_cell_bucket, pl->bucket);
            const uint32_t *slots = bk->slots.data;
            PREFETCH(&slots[pl->bucket_pos]);
            PREFETCH(&s->place[slots[bk->slots.count - 1]]);
            break;
        }
        case RV_PROJECTION_EQUIPPED_CHILD: {
            const rvi_projection_row *row = &s->rows[slot];
            if (row->child_prev != NONE)
                PREFETCH(&s->rows[row->child_prev].child_next);
            if (row->child_next != NONE)
                PREFETCH(&s->rows[row->child_next].child_prev);
            prefetch_swap_remove(s, RVI_IX_DYNAMIC, pl->pos[RVI_IX_DYNAMIC]);
            break;
        }
        default: prefetch_swap_remove(s, RVI_IX_DYNAMIC, pl->pos[RVI_IX_DYNAMIC]); break;
        }
        if (h->dirty)
            prefetch_swap_remove(s, RVI_IX_DIRTY, pl->pos[RVI_IX_DIRTY]);
    }
    if (leaving & RV_PROJECTION_TRANSLUCENT)
        prefetch_swap_remove(s, RVI_IX_TRANSLUCENT, pl->pos[RVI_IX_TRANSLUCENT]);
    if (leaving & RV_PROJECTION_SELECTABLE)
        prefetch_swap_remove(s, RVI_IX_SELECTABLE, pl->pos[RVI_IX_SELECTABLE]);
    if (leaving & RV_PROJECTION_LIGHT_CANDIDATE)
        prefetch_swap_remove(s, RVI_IX_LIGHT_CANDIDATE, pl->pos[RVI_IX_LIGHT_CANDIDATE]);
}

/* The lookahead of a run of deltas d[first .. end): hints[k % ROW_AHEAD] holds delta k's
 * early lookup once k >= first + ROW_AHEAD, while valid[k % ROW_AHEAD]. */
typedef struct lookahead {
    lookup_hint hints[ROW_AHEAD];
    bool valid[ROW_AHEAD];
    uint64_t key_hash[LOOKUP_AHEAD]; /* [k % LOOKUP_AHEAD]: delta k's key hashed for its prefetch */
    uint32_t first;
} lookahead;

/* Called after each delta is applied: forgets the early lookups it may have outdated. Only
 * a Register or Unregister of a key, or a ClearGeneration, adds or removes a key (another
 * key's insertion or removal never changes this key's slot), so an UpdateX costs nothing
 * here and a structural edge a pass over the ROW_AHEAD pending hints. */
static void lookahead_note(lookahead *la, const rv_delta *d)
{
    if (d->kind == RV_DELTA_CLEAR_GENERATION) {
        memset(la->valid, 0, sizeof la->valid);
    } else if (d->kind == RV_DELTA_REGISTER || d->kind == RV_DELTA_UNREGISTER) {
        for (int k = 0; k < ROW_AHEAD; k++)
            if (la->hints[k].key == d->key)
                la->valid[k] = false;
    }
}

/* Prefetches for deltas i + LOOKUP_AHEAD, i + ROW_AHEAD and i + REMOVAL_AHEAD, and returns
 * delta i's early
 * lookup in *hint (false when there is none, or it may be outdated). */
DRAIN_STEP bool prefetch_ahead(const rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t i, uint32_t end,
                               lookup_hint *hint)
{
    bool has_hint = i >= la->first + ROW_AHEAD && la->valid[i % ROW_AHEAD];
    if (has_hint)
        *hint = la->hints[i % ROW_AHEAD]; /* copied: the entry is reused just below */
    if (i + LOOKUP_AHEAD < end) {
        uint64_t h = rvi_map_hash(d[i + LOOKUP_AHEAD].key);
        la->key_hash[(i + LOOKUP_AHEAD) % LOOKUP_AHEAD] = h; /* kept for the lookup ROW_AHEAD early */
        rvi_map_prefetch_hashed(&s->key_lookup, h);
    }
    uint32_t r = i + REMOVAL_AHEAD;
    if (r < end && r >= la->first + ROW_AHEAD &&
        (d[r].kind == RV_DELTA_UNREGISTER || d[r].kind == RV_DELTA_UPDATE_FLAGS) && la->valid[r % ROW_AHEAD] &&
        la->hints[r % ROW_AHEAD].slot != NONE)
        prefetch_removal(s, &d[r], la->hints[r % ROW_AHEAD].slot);
    if (i + ROW_AHEAD < end) {
        uint32_t k = i + ROW_AHEAD;
        uint64_t h = k >= la->first + LOOKUP_AHEAD ? la->key_hash[k % LOOKUP_AHEAD] : rvi_map_hash(d[k].key);
        prefetch_row(s, &d[k], h, &la->hints[k % ROW_AHEAD]);
        la->valid[(i + ROW_AHEAD) % ROW_AHEAD] = true;
    }
    return has_hint;
}

rv_result rv_render_scene_apply(rv_render_scene *s, rv_journal *j, rv_apply_counts *out_counts)
{
    if (!s || !j)
        return RV_ERR_INVALID_ARG;
    if (s->in_observer || (s->world && s->world->scene.visiting))
        return RV_ERR_BAD_STATE;
    RVI_TRY(rvi_journal_check_thread(j));
    RVI_TRY(rvi_journal_begin_drain(j));
    rv_apply_counts c = {0};
    rv_result r = RV_OK;
    batch_needs reserved = {0}; /* what earlier batches of this drain reserved for */
    /* Batches: what is pending now, then whatever the observer appended meanwhile. */
    while (r == RV_OK && j->cursor < j->deltas.count) {
        uint32_t end = j->deltas.count;
        r = reserve_journal(s, j, &reserved);
        lookahead la = { .first = j->cursor };
        lookup_hint hint;
        if (!s->observer) {
            /* Nothing can append meanwhile: apply in place. */
            const rv_delta *d = rvi_journal_entry(j, 0);
            for (; r == RV_OK && j->cursor < end; j->cursor++) {
                bool hinted = prefetch_ahead(s, &la, d, j->cursor, end, &hint);
                rv_delta_outcome o;
                apply_one(s, &d[j->cursor], false, hinted ? &hint : NULL, &o, &c);
                lookahead_note(&la, &d[j->cursor]);
            }
        }
        while (r == RV_OK && j->cursor < end) {
            /* Re-read every time: the observer may append and move the journal's buffer. */
            bool hinted = prefetch_ahead(s, &la, rvi_journal_entry(j, 0), j->cursor, end, &hint);
            rv_delta d = *rvi_journal_entry(j, j->cursor); /* a copy, for the same reason */
            rv_delta_outcome o;
            apply_one(s, &d, false, hinted ? &hint : NULL, &o, &c);
            lookahead_note(&la, &d);
            /* Taken before the observer runs, so an append never merges into it. */
            j->cursor++;
            notify(s, &d, o);
        }
        rvi_finish_batch(s);
    }
    if (r == RV_OK)
        rvi_journal_end_drain(j);
    else
        rvi_journal_abort_drain(j);
    add_counts(&s->stats.totals, &c);
    if (out_counts)
        *out_counts = c;
    return r;
}

rv_result rv_render_scene_apply_deltas(rv_render_scene *s, const rv_delta *deltas, uint32_t count,
                                       rv_apply_counts *out_counts)
{
    if (!s || (!deltas && count))
        return RV_ERR_INVALID_ARG;
    if (s->in_observer || (s->world && s->world->scene.visiting))
        return RV_ERR_BAD_STATE;
    rv_apply_counts c = {0};
    rv_result r = count ? reserve_array(s, deltas, count) : RV_OK;
    lookahead la = { .first = 0 };
    lookup_hint hint;
    for (uint32_t i = 0; r == RV_OK && i < count; i++) {
        bool hinted = prefetch_ahead(s, &la, deltas, i, count, &hint);
        rv_delta_outcome o;
        apply_one(s, &deltas[i], true, hinted ? &hint : NULL, &o, &c);
        lookahead_note(&la, &deltas[i]);
        notify(s, &deltas[i], o);
    }
    rvi_finish_batch(s);
    add_counts(&s->stats.totals, &c);
    if (out_counts)
        *out_counts = c;
    return r;
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
    for (uint32_t i = 0; i < n; i++) {
        if (i + ROW_AHEAD < n) /* scattered hot lines: fetch a few ahead */
            PREFETCH(&s->hot[dirty[i + ROW_AHEAD]]);
        s->hot[dirty[i]].dirty = 0;
    }
    s->index_count[RVI_IX_DIRTY] = 0;
    s->stats.publishes++;
    return RV_OK;
}

/* ---- lifecycle ---- */

static void free_scene(rv_render_scene *s)
{
    for (int i = 0; i < RVI_IX_COUNT; i++)
        rvi_free(&s->heap, s->index[i], (size_t)s->capacity * sizeof(uint32_t));
    rvi_free(&s->heap, s->rows, (size_t)s->capacity * sizeof(rvi_projection_row));
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
}

rv_result rv_render_scene_create(const rv_render_scene_desc *desc, rv_render_scene **out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_render_scene_desc d = desc ? *desc : (rv_render_scene_desc){0};
    if (d.initial_capacity == 0)
        d.initial_capacity = 1024;
    if (d.initial_capacity > MAX_PROJECTIONS)
        return RV_ERR_INVALID_ARG;
    rvi_heap heap;
    rvi_heap_init(&heap, &d.allocator);
    rv_render_scene *s = rvi_alloc(&heap, sizeof *s);
    if (!s)
        return RV_ERR_OUT_OF_MEMORY;
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
        free_scene(s);
        return r;
    }
    *out = s;
    return RV_OK;
}

void rv_render_scene_destroy(rv_render_scene *s)
{
    if (!s)
        return;
    rvi_render_scene_unbind_world(s);
    free_scene(s);
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
    out->generation = row->generation;
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
    uint64_t index_each = (uint64_t)s->capacity * 2 * sizeof(uint32_t);
    m.table_bytes = (uint64_t)s->capacity * sizeof(rvi_projection_row) + map_bytes(&s->key_lookup) +
                    (s->capacity ? hot_block_size(s->capacity) : 0) - (uint64_t)s->capacity * RVI_IX_COUNT * sizeof(uint32_t);
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
