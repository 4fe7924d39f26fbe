/* Applying deltas to a render scene (docs/design.md §7): the drain of a journal
 * (rv_render_scene_apply), the replay of a recorded array (rv_render_scene_apply_deltas),
 * the rules each delta meets (sequence, generation, incarnation), and the reservation that
 * lets a batch never fail half-way: storage a batch needs is reserved before its first
 * delta is applied. The table itself and the queries are in projection.c. */
#include "projection.h"
#include "journal.h"
#include "core/check.h"
#include "core/hash.h"
#include "core/prefetch.h"
#include "scene.h"
#include "world.h"

#include <string.h>

#define NONE RVI_INDEX_NONE
#define PREFETCH RVI_PREFETCH
#define PREFETCH_WRITE RVI_PREFETCH_WRITE

/* The drain loop's per-delta steps, inlined into it: as calls, their register saves and
 * argument passing were a tenth of an applied delta's instructions. */
#if defined(__GNUC__) || defined(__clang__)
#define DRAIN_STEP static inline __attribute__((always_inline))
#define EXPECTED(condition) __builtin_expect(!!(condition), 1)
#else
#define DRAIN_STEP static inline
#define EXPECTED(condition) (condition)
#endif

/* ---- slots and projections ---- */

static uint32_t take_slot(rv_render_scene *s)
{
    uint32_t slot;
    if (s->free_head != NONE) {
        slot = s->free_head;
        s->free_head = s->rows[slot].next_free;
    } else {
        slot = s->high++;
    }
    /* The next Register takes the slot after this one (or one an Unregister frees in
     * between, whose lines that Unregister fetched): request its hot line, placement and
     * row now, for writing. Unfetched, a Register waited on those three lines. */
    uint32_t next = s->free_head != NONE ? s->free_head : s->high;
    if (next < s->capacity) {
        PREFETCH_WRITE(&s->hot[next]);
        PREFETCH_WRITE(&s->place[next]);
        PREFETCH_WRITE(&s->rows[next]);
    }
    return slot;
}

static void release_slot(rv_render_scene *s, uint32_t slot)
{
    s->rows[slot].live = false;
    s->rows[slot].next_free = s->free_head;
    s->free_head = slot;
}

/* key_hash: rvi_map_hash(d->key) (every map hashes a key alike). */
static void insert_projection(rv_render_scene *s, const rv_delta *d, uint64_t key_hash)
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
    h->dirty = 0;
    s->place[slot].bucket = s->place[slot].bucket_pos = NONE;
    row->child_next = row->child_prev = NONE;
    row->next_free = NONE;
    row->live = true;
    row->blocked = false;
    s->live++;
    /* Reserved; the key was not live. */
    rvi_map_insert_absent_hashed(&s->key_lookup, d->key, key_hash, rvi_lookup_value(s, slot));
    /* Children registered before their parent stop being orphans. */
    s->orphaned -= rvi_count_children_hashed(s, d->key, key_hash);
    rvi_place(s, slot);
    rvi_enter_flag_indices(s, slot, h->flags);
    rvi_mark_dirty(s, slot, RV_DIRTY_REGISTERED);
    if (s->world)
        rvi_node_bind(s, slot);
}

/* key_hash: rvi_map_hash of the slot's key. */
static void remove_projection(rv_render_scene *s, uint32_t slot, uint64_t key_hash)
{
    rvi_projection_row *row = &s->rows[slot];
    rvi_projection_hot *h = &s->hot[slot];
    rvi_unplace(s, slot);
    rvi_leave_flag_indices(s, slot, h->flags);
    rvi_ix_remove_if(s, RVI_IX_DIRTY, slot, h->dirty != 0);
    h->dirty = 0;
    rvi_map_remove_hashed(&s->key_lookup, row->key, key_hash);
    s->orphaned += rvi_count_children_hashed(s, row->key, key_hash);
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
            remove_projection(s, slot, rvi_map_hash(s->rows[slot].key));
            c->cleared++;
        }
    }
}

/* The drain's edge stamps (see the pipeline below): EDGE_STAMPS entries chosen by a key's
 * hash. */
enum { EDGE_STAMPS = 16 };

static inline uint32_t edge_entry(uint64_t key_hash)
{
    return (uint32_t)(key_hash >> 60); /* the high bits: the low ones pick the lookup slot */
}
_Static_assert(EDGE_STAMPS == 16, "edge_entry takes four bits");

/* A slot argument meaning "not looked up yet" (slots are below RVI_MAX_PROJECTIONS). */
#define SLOT_UNKNOWN (RVI_INDEX_NONE - 1)

/* Applies or rejects one delta. Never fails: the batch reserved what it needs. slot: the
 * key's slot looked up earlier (NONE: not live) while still current, else SLOT_UNKNOWN;
 * key_hash: rvi_map_hash(d->key); edge, stamp: the drain's edge stamps and the stamp an
 * applied edge writes there. */
DRAIN_STEP void apply_one(rv_render_scene *s, const rv_delta *d, bool validate, uint32_t slot, uint64_t key_hash,
                          uint32_t *edge, uint32_t stamp, rv_delta_outcome *out, rv_apply_counts *c)
{
    rv_delta_outcome o = RV_DELTA_APPLIED;
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
            for (int e = 0; e < EDGE_STAMPS; e++)
                edge[e] = stamp;
        }
        goto taken;
    }
    if (d->generation != s->generation) {
        o = d->generation < s->generation ? RV_DELTA_REJECTED_OLDER_GENERATION : RV_DELTA_REJECTED_NEWER_GENERATION;
        goto taken;
    }
    if (slot == SLOT_UNKNOWN) {
        uint64_t found;
        slot = rvi_map_get_hashed(&s->key_lookup, d->key, key_hash, &found) ? (uint32_t)found : NONE;
    }
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
            remove_projection(s, slot, key_hash);
            c->replaced++;
        }
        insert_projection(s, d, key_hash);
        edge[edge_entry(key_hash)] = stamp;
        c->registered++;
        goto taken;
    }
    if (slot == NONE || d->incarnation != s->hot[slot].incarnation) {
        o = slot == NONE || d->incarnation > s->hot[slot].incarnation ? RV_DELTA_REJECTED_UNKNOWN_KEY
                                                                       : RV_DELTA_REJECTED_STALE_INCARNATION;
        goto taken;
    }
    rvi_projection_hot *h = &s->hot[slot];
    /* Tests in order of frequency, not a switch: a switch's jump table is one indirect
     * branch on a kind that follows no pattern, and the tests measured faster (paired:
     * apply -0.6 to -0.9 ns a delta in journal_apply_1m's mix, and faster in the steady
     * frame's too). EXPECTED also keeps GCC from turning the tests back into a jump table
     * (its if-to-switch conversion). */
    rv_delta_kind kind = d->kind;
    if (EXPECTED(kind == RV_DELTA_UPDATE_TRANSFORM)) {
        rvi_store_transform(h, &d->projection.transform);
        rvi_mark_dirty(s, slot, RV_DIRTY_TRANSFORM);
        if (s->world)
            rvi_node_write_transform(s, slot);
    } else if (kind == RV_DELTA_UNREGISTER) {
        remove_projection(s, slot, key_hash);
        edge[edge_entry(key_hash)] = stamp;
        c->unregistered++;
    } else if (kind == RV_DELTA_UPDATE_FLAGS) {
        rvi_set_flag_membership(s, slot, h->flags, d->projection.flags);
        h->flags = (uint8_t)d->projection.flags;
        rvi_mark_dirty(s, slot, RV_DIRTY_FLAGS);
        if (s->world)
            rvi_node_write_flags(s, slot);
    } else if (kind == RV_DELTA_UPDATE_APPEARANCE) {
        s->rows[slot].mesh = d->projection.appearance.mesh;
        s->rows[slot].material_variant = d->projection.appearance.material_variant;
        rvi_mark_dirty(s, slot, RV_DIRTY_APPEARANCE);
    } else if (kind == RV_DELTA_REBUCKET) {
        rvi_unplace(s, slot);
        rvi_store_bucket(s, slot, &d->projection.bucket);
        *rvi_map_value_hashed(&s->key_lookup, d->key, key_hash) = rvi_lookup_value(s, slot); /* the parent hint */
        rvi_place(s, slot);
        rvi_mark_dirty(s, slot, RV_DIRTY_BUCKET);
        rvi_node_reparent(s, slot);
    }
taken:
    s->last_sequence = d->sequence;
done:
    c->rejected[o]++; /* [RV_DELTA_APPLIED] too, until settle_counts */
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
/* The entries the child lookup is reserved for with equipped more targets: twice its
 * entries (see reserve_counts), a bound that stays far below 2^32. */
static uint32_t child_lookup_entries(const rv_render_scene *s, uint64_t equipped)
{
    uint64_t n = (uint64_t)s->child_lookup.count + equipped;
    uint64_t sparse = 2 * n <= RVI_MAX_PROJECTIONS ? 2 * n : n;
    return sparse > UINT32_MAX ? UINT32_MAX : (uint32_t)sparse;
}

static rv_result reserve_counts(rv_render_scene *s, batch_needs needs)
{
    if (needs.registers) {
        if ((uint64_t)s->live + needs.registers > RVI_MAX_PROJECTIONS)
            return RV_ERR_CAPACITY;
        RVI_TRY(rvi_reserve_projections(s, s->live + needs.registers));
    }
    /* The child lookup is probed for the key of every Register and Unregister, and is
     * mostly missed (most keys have no children). A miss under linear probing scans to the
     * end of its run, about (1 + 1 / (1 - load)^2) / 2 entries (Knuth, TAOCP vol. 3, 6.4):
     * 8.5 at the map's load bound of 3/4, 1.8 at 3/8. So this map is reserved for twice its
     * entries. */
    if (needs.equipped_targets)
        RVI_TRY(rvi_map_reserve(&s->heap, &s->child_lookup, child_lookup_entries(s, needs.equipped_targets)));
    /* The cell lookup and the bucket array grow in rvi_reserve_cell, by the cells that are
     * new: most targets go to cells that have a bucket, and a lookup sized for every target
     * (once 32,768 entries for 1,024 cells) spread the cells over lines the cache lost. */
    if (needs.cell_targets)
        RVI_TRY(rvi_vec_reserve(&s->heap, &s->touched, sizeof(uint32_t), needs.cell_targets));
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

/* The drain counts every outcome in rejected[], applied ones too (one increment a delta, no
 * branch on the outcome); this moves those to applied and sums taken. */
static void settle_counts(rv_apply_counts *c)
{
    c->applied = c->rejected[RV_DELTA_APPLIED];
    c->rejected[RV_DELTA_APPLIED] = 0;
    c->taken = c->applied;
    for (int i = 0; i < RV_DELTA_OUTCOME_COUNT_; i++)
        c->taken += c->rejected[i];
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

/* Software pipelining over a drain of deltas d[first .. end). At step i (just before delta
 * i is applied):
 * - delta i + LOOKUP_AHEAD's key is hashed and the line its lookup probes is prefetched;
 * - delta i + ROW_AHEAD's key is looked up (that line has arrived by now) and the lines its
 *   kind reads are prefetched: the hot line, and the placement and row where needed;
 * - for delta i + REMOVAL_AHEAD, an Unregister or a flag-clearing UpdateFlags, the lines its
 *   swap-removes will write are prefetched (its hot line and placement have arrived).
 * A table of 100,000 projections does not fit in cache (bench journal_apply_1m); this way
 * a delta rarely waits on memory. An early lookup stays valid until a Register or
 * Unregister of its key, or a ClearGeneration, applies (another key's insertion or removal
 * never moves this key's slot). Each such edge, once applied, stamps its step into one of
 * EDGE_STAMPS entries chosen by the key's hash (a ClearGeneration into all of them), and a
 * lookup made before the latest stamp of its entry is not used (two keys sharing an entry
 * only cost a repeated lookup): O(1) per delta, and never a wrong slot. apply_one stamps on
 * the paths that know the edge applied: a rejected edge moves no slot, and a second test of
 * the kind after the apply was one more branch on data. */
enum { LOOKUP_AHEAD = 16, ROW_AHEAD = 8, REMOVAL_AHEAD = 4, HASH_RING = 32 };
_Static_assert(HASH_RING > LOOKUP_AHEAD && LOOKUP_AHEAD > ROW_AHEAD && ROW_AHEAD > REMOVAL_AHEAD,
               "a ring entry is rewritten only after its delta was applied");

typedef struct lookup_hint {
    uint32_t slot; /* NONE: the key was not live */
    uint32_t step; /* made before delta `step` was applied */
} lookup_hint;

typedef struct lookahead {
    uint64_t key_hash[HASH_RING];   /* [k % HASH_RING]: delta k's key hashed, steps k - LOOKUP_AHEAD .. k */
    lookup_hint hint[LOOKUP_AHEAD]; /* [k % LOOKUP_AHEAD]: delta k's early lookup, steps k - ROW_AHEAD .. k */
    uint32_t edge[EDGE_STAMPS];     /* 1 + the step of the latest applied Register or Unregister of a
                                       key stamped here, or of the latest applied ClearGeneration,
                                       which stamps every entry (0: none) */
} lookahead;


/* Looks d's key up (key_hash: its hash, its line prefetched earlier) and prefetches the hot
 * line and placement, and what else the delta's kind reads. Returns the slot, or NONE. */
DRAIN_STEP uint32_t prefetch_row(const rv_render_scene *s, const rv_delta *d, uint64_t key_hash)
{
    if (d->kind == RV_DELTA_REGISTER || d->kind == RV_DELTA_UNREGISTER) {
        /* Both count the key's children (insert_projection, remove_projection). */
        rvi_map_prefetch_hashed(&s->child_lookup, key_hash);
        if (d->kind == RV_DELTA_REGISTER && d->projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD) {
            /* child_link reads the parent's child list and whether the parent is live. */
            uint64_t parent_hash = rvi_map_hash(d->projection.bucket.parent_key);
            rvi_map_prefetch_hashed(&s->child_lookup, parent_hash);
            rvi_map_prefetch_hashed(&s->key_lookup, parent_hash);
        }
    }
    uint64_t found;
    if (!rvi_map_get_hashed(&s->key_lookup, d->key, key_hash, &found))
        return NONE;
    uint32_t slot = (uint32_t)found;
    if (d->kind == RV_DELTA_UNREGISTER && (found >> 32)) {
        /* An equipped child: child_unlink probes its parent's entries (see rvi_lookup_value). */
        rvi_map_prefetch_hashed(&s->child_lookup, found >> 32);
        rvi_map_prefetch_hashed(&s->key_lookup, found >> 32);
    }
    PREFETCH(&s->hot[slot]);
    PREFETCH(&s->place[slot]); /* every back-index: dirty, flags, class, bucket */
    /* The row (one line): an appearance update writes it, an edge reads and writes it, and
     * in a world a transform or flags update reads its backing node's id there. */
    if (s->world || (d->kind != RV_DELTA_UPDATE_TRANSFORM && d->kind != RV_DELTA_UPDATE_FLAGS))
        PREFETCH(&s->rows[slot]);
    return slot;
}

/* Swap-removes write two lines per index a slot leaves — its position in the index array
 * and the back-index of the index's last member, which moves into it — at places nothing
 * else touches, so unprefetched they were most of an Unregister's cost (and an UpdateFlags
 * clearing a flag pays one). Read which indices the delta makes the slot leave and request
 * those lines. An index's tail may still change before the delta applies; a stale guess
 * costs one prefetch. slot must be live now (its index positions are read). */
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
        uint32_t c = h->projection_class;
        if (c == RV_PROJECTION_CELL_STATIC) {
            const rvi_cell_bucket *bk = &RVI_VEC_AT(s->buckets, rvi_cell_bucket, pl->bucket);
            const uint32_t *slots = bk->slots.data;
            PREFETCH(&slots[pl->bucket_pos]);
            PREFETCH(&s->place[slots[bk->slots.count - 1]]);
        } else {
            int ix = c == RV_PROJECTION_OUTDOOR_STATIC ? RVI_IX_OUTDOOR_STATIC : RVI_IX_DYNAMIC;
            prefetch_swap_remove(s, ix, pl->pos[ix]);
            if (c == RV_PROJECTION_EQUIPPED_CHILD) {
                /* child_unlink writes the siblings' links (this row's own when one is
                 * missing). */
                const rvi_projection_row *row = &s->rows[slot];
                uint32_t prev = row->child_prev, next = row->child_next;
                PREFETCH(&s->rows[prev != NONE ? prev : slot].child_next);
                PREFETCH(&s->rows[next != NONE ? next : slot].child_prev);
            }
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

/* Delta k's early lookup while still current (see above), else SLOT_UNKNOWN. */
DRAIN_STEP uint32_t hinted_slot(const lookahead *la, uint32_t k)
{
    const lookup_hint *h = &la->hint[k % LOOKUP_AHEAD];
    uint32_t stamp = la->edge[edge_entry(la->key_hash[k % HASH_RING])];
    return stamp <= h->step ? h->slot : SLOT_UNKNOWN;
}

DRAIN_STEP void stage_hash(const rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t k)
{
    uint64_t h = rvi_map_hash(d[k].key);
    la->key_hash[k % HASH_RING] = h;
    rvi_map_prefetch_hashed(&s->key_lookup, h);
}

DRAIN_STEP void stage_lookup(const rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t k, uint32_t step)
{
    lookup_hint *h = &la->hint[k % LOOKUP_AHEAD];
    h->step = step;
    h->slot = prefetch_row(s, &d[k], la->key_hash[k % HASH_RING]);
}

/* REMOVAL_AHEAD deltas early, when the slot's hot line and placement (fetched ROW_AHEAD
 * early) have arrived: the lines an Unregister's or UpdateFlags' swap-removes write. Only
 * those kinds read the hot line this early: for the others the read could stall on a line
 * still in flight (measured: deciding here whether an update needs its placement cost more
 * than it saved). */
DRAIN_STEP void stage_removal(const rv_render_scene *s, const lookahead *la, const rv_delta *d, uint32_t k)
{
    if (d[k].kind != RV_DELTA_UNREGISTER && d[k].kind != RV_DELTA_UPDATE_FLAGS)
        return;
    uint32_t slot = hinted_slot(la, k);
    if (slot != NONE && slot != SLOT_UNKNOWN)
        prefetch_removal(s, &d[k], slot);
}

/* Starts the pipeline over d[first .. end): the stages no earlier step ran. */
static void drain_start(const rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t first, uint32_t end)
{
    memset(la, 0, sizeof *la);
    for (uint32_t k = first; k < end && k - first < LOOKUP_AHEAD; k++)
        stage_hash(s, la, d, k);
    for (uint32_t k = first; k < end && k - first < ROW_AHEAD; k++)
        stage_lookup(s, la, d, k, first);
}

/* Step i of the drain over d[first .. end): the stages ahead, then delta i applied.
 * steady: the caller knows end - i > LOOKUP_AHEAD (no stage reaches past the end), so the
 * steady loop tests nothing. */
DRAIN_STEP void drain_step(rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t i, uint32_t end,
                           bool steady, bool validate, rv_delta_outcome *o, rv_apply_counts *c)
{
    if (steady || end - i > LOOKUP_AHEAD)
        stage_hash(s, la, d, i + LOOKUP_AHEAD);
    if (steady || end - i > REMOVAL_AHEAD)
        stage_removal(s, la, d, i + REMOVAL_AHEAD);
    if (steady || end - i > ROW_AHEAD)
        stage_lookup(s, la, d, i + ROW_AHEAD, i);
    uint64_t key_hash = la->key_hash[i % HASH_RING];
    apply_one(s, &d[i], validate, hinted_slot(la, i), key_hash, la->edge, i + 1, o, c);
}

rv_result rvi_render_scene_check_apply(const rv_render_scene *s, const rv_journal *j)
{
    if (!s || !j)
        return RV_ERR_INVALID_ARG;
    if (s->in_observer || (s->world && s->world->scene.visiting))
        return RV_ERR_BAD_STATE;
    RVI_TRY(rvi_journal_check_thread(j));
    RVI_TRY(rvi_journal_check_drain(j));
    /* What reserve_counts would refuse for the deltas waiting (an observer may append more
     * as they drain: those are checked as they come). */
    if (j->needs.registers)
        RVI_TRY(rvi_check_projections(s, (uint64_t)s->live + j->needs.registers));
    if (j->needs.equipped_targets &&
        !rvi_map_can_reserve(&s->child_lookup, child_lookup_entries(s, j->needs.equipped_targets)))
        return RV_ERR_CAPACITY;
    return RV_OK;
}

rv_result rv_render_scene_apply(rv_render_scene *s, rv_journal *j, rv_apply_counts *out_counts)
{
    RVI_TRY(rvi_render_scene_check_apply(s, j));
    RVI_TRY(rvi_journal_begin_drain(j));
    rv_apply_counts c = {0};
    rv_result r = RV_OK;
    batch_needs reserved = {0}; /* what earlier batches of this drain reserved for */
    /* Batches: what is pending now, then whatever the observer appended meanwhile. */
    while (r == RV_OK && j->cursor < j->deltas.count) {
        uint32_t end = j->deltas.count;
        r = reserve_journal(s, j, &reserved);
        if (r != RV_OK) {
            rvi_finish_batch(s);
            break;
        }
        lookahead la;
        rv_delta_outcome o;
        drain_start(s, &la, rvi_journal_entry(j, 0), j->cursor, end);
        uint32_t i = j->cursor;
        if (!s->observer) {
            /* Nothing can append meanwhile: apply in place. */
            const rv_delta *d = rvi_journal_entry(j, 0);
            for (; end - i > LOOKUP_AHEAD; i++)
                drain_step(s, &la, d, i, end, true, false, &o, &c);
            for (; i < end; i++)
                drain_step(s, &la, d, i, end, false, false, &o, &c);
            j->cursor = end;
        }
        for (; i < end; i++) {
            /* Re-read every time: the observer may append and move the journal's buffer. */
            rv_delta d = *rvi_journal_entry(j, i); /* a copy, for the same reason */
            drain_step(s, &la, rvi_journal_entry(j, 0), i, end, false, false, &o, &c);
            /* Taken before the observer runs, so an append never merges into it. */
            j->cursor = i + 1;
            notify(s, &d, o);
        }
        rvi_finish_batch(s);
    }
    if (r == RV_OK)
        rvi_journal_end_drain(j);
    else
        rvi_journal_abort_drain(j);
    settle_counts(&c);
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
    if (r == RV_OK && count) {
        lookahead la;
        drain_start(s, &la, deltas, 0, count);
        for (uint32_t i = 0; i < count; i++) {
            rv_delta_outcome o;
            drain_step(s, &la, deltas, i, count, false, true, &o, &c);
            notify(s, &deltas[i], o);
        }
    }
    rvi_finish_batch(s);
    settle_counts(&c);
    add_counts(&s->stats.totals, &c);
    if (out_counts)
        *out_counts = c;
    return r;
}

