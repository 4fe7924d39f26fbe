/* Render scene internals (docs/design.md §7): the projection table and its incremental indices.
 * The frame reads rows and index arrays directly (read-only) during a frame. */
#ifndef RVI_PROJECTION_H
#define RVI_PROJECTION_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/map.h"
#include "core/pool.h"
#include "core/vec.h"

#include <string.h>

/* Internal index ids; the public rv_projection_index is this + 1. */
enum {
    RVI_IX_OUTDOOR_STATIC,
    RVI_IX_DYNAMIC,
    RVI_IX_TRANSLUCENT,
    RVI_IX_SELECTABLE,
    RVI_IX_LIGHT_CANDIDATE,
    RVI_IX_DIRTY,
    RVI_IX_COUNT
};

/* What an update of a projection reads and writes, in one 64-byte line: the identity
 * check (incarnation), the dirty bits, and the transform channel. A delta applied to a
 * table of 100,000 projections is a cache miss per line it touches, so the common update
 * (a transform) touches this line only, and the flags channel this line plus the cold
 * row's index positions. */
typedef struct rvi_projection_hot {
    float position[3];
    float rotation[4];
    float scale[3];
    float bounds[4];
    uint32_t incarnation;
    uint8_t dirty;            /* RV_DIRTY_* */
    uint8_t flags;            /* RV_PROJECTION_* */
    uint8_t projection_class;
    uint8_t bounds_space;
} rvi_projection_hot;

/* The rest of a projection, and its index bookkeeping: one 64-byte line, line-aligned (a
 * Register or Unregister reads or writes one line of it, not two). A live projection's
 * generation is the scene's (a delta of any other is rejected, and a ClearGeneration drops
 * every projection), so a row does not keep one. */
typedef struct rvi_projection_row {
    uint64_t key;
    uint64_t node;             /* backing rv_node id; 0 = none */
    uint64_t mesh;
    uint64_t material_variant;
    uint64_t cell;
    uint64_t parent_key;
    uint32_t child_next;       /* siblings under the same parent key (equipped children) */
    uint32_t child_prev;
    uint32_t next_free;        /* free-list link while dead */
    bool live;
    bool blocked;              /* equipped child whose node would close a cycle: a root for now */
} rvi_projection_row;

/* Where a slot sits in every index and in its cell bucket: the back-indices a swap-remove
 * needs. One 32-byte record per slot (two to a cache line, line-aligned), so a delta that
 * moves a projection in or out of several indices at once (UpdateFlags, Register,
 * Unregister) touches one line of back-indices rather than one per index, and marking a
 * projection dirty touches that same line. */
typedef struct rvi_placement {
    uint32_t pos[RVI_IX_COUNT]; /* position in index ix, meaningful while a member */
    uint32_t bucket;            /* cell bucket of a cell static, else RVI_INDEX_NONE */
    uint32_t bucket_pos;        /* position in that bucket */
} rvi_placement;

/* The cell statics of one cell (swap-remove with back-indices in the placements). */
typedef struct rvi_cell_bucket {
    uint64_t cell;
    rvi_vec slots;      /* uint32_t */
    uint32_t pending;   /* insertions reserved by the batch being applied */
    uint32_t next_free; /* free-list link while unused (its slots storage is kept) */
    bool in_use;
    bool touched;       /* in the batch's touched list: released at the batch end if empty */
} rvi_cell_bucket;

typedef struct rvi_digest_entry {
    uint64_t key;
    uint32_t slot;
} rvi_digest_entry;

struct rv_render_scene {
    rvi_heap heap;
    rvi_projection_hot *hot;   /* 64-byte aligned inside hot_block */
    rvi_projection_row *rows;  /* inside hot_block too, after the hot lines */
    rvi_placement *place;      /* inside hot_block too, after the rows */
    void *hot_block;
    uint32_t capacity;         /* hot, rows and every index array */
    uint32_t high;             /* slots ever used */
    uint32_t live;
    uint32_t free_head;
    uint32_t *index[RVI_IX_COUNT];
    uint32_t index_count[RVI_IX_COUNT];
    rvi_map key_lookup;        /* key -> rvi_lookup_value of the live projection */
    rvi_map cell_lookup;       /* cell -> bucket (in use) */
    rvi_vec buckets;           /* rvi_cell_bucket */
    uint32_t bucket_free;
    uint32_t cells_nonempty;
    uint32_t cell_static_count;
    rvi_vec touched;           /* uint32_t buckets reserved by the batch being applied */
    rvi_map child_lookup;      /* parent key -> first child slot | child count << 32 (equipped
                                  children) */
    uint32_t equipped_count;
    uint32_t orphaned;         /* live equipped children whose parent key is not live */
    rv_world *world;           /* NULL: standalone */
    rvi_map node_lookup;       /* node slot index -> projection slot (world bound) */
    uint32_t blocked;          /* rows with blocked set */
    uint32_t generation;
    uint64_t last_sequence;
    rv_delta_observer observer;
    void *observer_user;
    bool in_observer;
    rvi_digest_entry *digest_entries; /* 2 * digest_capacity: the sort's two halves */
    uint32_t digest_capacity;
    rv_render_scene_stats stats;
};

/* Slots a scene holds at most. */
#define RVI_MAX_PROJECTIONS (1u << 30)

/* Makes room for n live projections: table, key lookup and, in a world, node storage. All
 * or nothing (RV_ERR_OUT_OF_MEMORY, RV_ERR_CAPACITY). */
rv_result rvi_reserve_projections(rv_render_scene *scene, uint32_t n);
/* rvi_reserve_projections' capacity checks, changing nothing: RV_ERR_CAPACITY exactly when
 * it would answer that for n projections. */
rv_result rvi_check_projections(const rv_render_scene *scene, uint64_t n);

/* The checks rv_render_scene_apply makes before it drains, its capacity for what the
 * journal holds included, changing nothing: a drain that passes them fails only for memory
 * (before it applies a delta, unless a delta observer appended to the journal while it
 * drained). */
rv_result rvi_render_scene_check_apply(const rv_render_scene *scene, const rv_journal *journal);

/* ---- channels in the split row (projection.c and its helpers) ---- */

static inline void rvi_store_transform(rvi_projection_hot *h, const rv_projection_transform *t)
{
    memcpy(h->position, t->position, sizeof h->position);
    memcpy(h->rotation, t->rotation, sizeof h->rotation);
    memcpy(h->scale, t->scale, sizeof h->scale);
    memcpy(h->bounds, t->bounds, sizeof h->bounds);
    h->bounds_space = (uint8_t)t->bounds_space;
}

static inline void rvi_load_transform(const rvi_projection_hot *h, rv_projection_transform *t)
{
    memcpy(t->position, h->position, sizeof t->position);
    memcpy(t->rotation, h->rotation, sizeof t->rotation);
    memcpy(t->scale, h->scale, sizeof t->scale);
    memcpy(t->bounds, h->bounds, sizeof t->bounds);
    t->bounds_space = (rv_bounds_space)h->bounds_space;
}

static inline void rvi_store_bucket(rv_render_scene *s, uint32_t slot, const rv_projection_bucket *b)
{
    s->hot[slot].projection_class = (uint8_t)b->projection_class;
    s->rows[slot].cell = b->cell;
    s->rows[slot].parent_key = b->parent_key;
}

/* A key lookup's value for slot (its class and parent key stored): the slot in the low 32
 * bits; in the high 32, for an equipped child, the low bits of its parent key's hash (else
 * 0). They are a hint only: the drain looks a key up eight deltas ahead, and for an
 * Unregister of an equipped child requests then the lines of the parent's child-lookup and
 * key-lookup entries its unlink will probe (finding the parent key would need the row, not
 * yet arrived; measured, those two probes waited on memory for most of an equipped
 * Unregister's time). A map's probe starts at hash & (capacity - 1) and a capacity is at most
 * 2^32, so 32 bits suffice; a hint of 0 only means no prefetch. */
static inline uint64_t rvi_lookup_value(const rv_render_scene *s, uint32_t slot)
{
    uint64_t parent_hint = 0;
    if (s->hot[slot].projection_class == RV_PROJECTION_EQUIPPED_CHILD)
        parent_hint = (uint32_t)rvi_map_hash(s->rows[slot].parent_key);
    return parent_hint << 32 | slot;
}

static inline void rvi_load_projection(const rv_render_scene *s, uint32_t slot, rv_projection *p)
{
    const rvi_projection_hot *h = &s->hot[slot];
    const rvi_projection_row *row = &s->rows[slot];
    memset(p, 0, sizeof *p);
    rvi_load_transform(h, &p->transform);
    p->appearance.mesh = row->mesh;
    p->appearance.material_variant = row->material_variant;
    p->bucket.projection_class = (rv_projection_class)h->projection_class;
    p->bucket.cell = row->cell;
    p->bucket.parent_key = row->parent_key;
    p->flags = h->flags;
}

static inline rvi_cell_bucket *rvi_bucket_at(rv_render_scene *s, uint32_t b)
{
    return &RVI_VEC_AT(s->buckets, rvi_cell_bucket, b);
}

/* ---- incremental indices (projection_index.c): O(1) per change, swap-remove with
 * back-indices ---- */

/* Inline (every delta marks dirty; Register, Unregister and UpdateFlags move a slot in or
 * out of several indices): calls into another file were a tenth of an apply's instructions. */
static inline void rvi_ix_add(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->index_count[ix]++;
    s->index[ix][p] = slot;
    s->place[slot].pos[ix] = p;
}

static inline void rvi_ix_remove(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->place[slot].pos[ix];
    uint32_t last = s->index[ix][--s->index_count[ix]];
    s->index[ix][p] = last;
    s->place[last].pos[ix] = p;
}

/* Which indices a projection is in follows its flags, and flags are data: a branch per flag
 * was mispredicted about half the time (callgrind's branch simulation: the largest single
 * source of a Register's or Unregister's mispredictions). These forms take the condition as
 * 0 or 1 and do the same work either way, writing, when it is 0, only where nothing reads:
 * one entry past an index's members (index arrays hold capacity + 1 entries, zeroed when
 * made) or the placement past the last slot (place[capacity]). */
static inline void rvi_ix_add_if(rv_render_scene *s, int ix, uint32_t slot, uint32_t cond)
{
    uint32_t p = s->index_count[ix];
    s->index[ix][p] = slot;
    uint32_t *pos = &s->place[slot].pos[ix];
    uint32_t keep = cond - 1; /* all ones when cond is 0 */
    *pos = (p & ~keep) | (*pos & keep);
    s->index_count[ix] = p + cond;
}

/* slot must be a member of ix exactly when cond is 1. */
static inline void rvi_ix_remove_if(rv_render_scene *s, int ix, uint32_t slot, uint32_t cond)
{
    uint32_t n = s->index_count[ix] - cond; /* cond: the last member's position */
    uint32_t take = 0u - cond;             /* all ones when cond is 1 */
    uint32_t spare = s->capacity;
    uint32_t p = (s->place[slot].pos[ix] & take) | (spare & ~take);
    uint32_t last = (s->index[ix][n] & take) | (spare & ~take);
    s->index[ix][p] = last;
    s->place[last].pos[ix] = p;
    s->index_count[ix] = n;
}

/* Adds bits (RV_DIRTY_*) to the slot's dirty mask, entering the dirty index on the first. */
static inline void rvi_mark_dirty(rv_render_scene *s, uint32_t slot, uint32_t bits)
{
    rvi_projection_hot *h = &s->hot[slot];
    if (!h->dirty)
        rvi_ix_add(s, RVI_IX_DIRTY, slot);
    h->dirty |= (uint8_t)bits;
}

/* Moves slot between the flag indices so membership matches new_flags (only the bits that
 * change cost anything). An UpdateFlags branches on its bits: measured, the branch-free
 * forms below cost it more in instructions (≈ 40 an update) than they saved in
 * mispredictions (journal_steady_100k_1pct, half of whose deltas are UpdateFlags, 49–50
 * against 52–56 µs a frame). */
static inline void rvi_set_flag_membership(rv_render_scene *s, uint32_t slot, uint32_t old_flags, uint32_t new_flags)
{
    uint32_t changed = old_flags ^ new_flags;
    if (!(changed & (RV_PROJECTION_TRANSLUCENT | RV_PROJECTION_SELECTABLE | RV_PROJECTION_LIGHT_CANDIDATE)))
        return;
    const uint32_t bit[3] = { RV_PROJECTION_TRANSLUCENT, RV_PROJECTION_SELECTABLE, RV_PROJECTION_LIGHT_CANDIDATE };
    const int ix[3] = { RVI_IX_TRANSLUCENT, RVI_IX_SELECTABLE, RVI_IX_LIGHT_CANDIDATE };
    for (int i = 0; i < 3; i++) {
        if (!(changed & bit[i]))
            continue;
        if (new_flags & bit[i])
            rvi_ix_add(s, ix[i], slot);
        else
            rvi_ix_remove(s, ix[i], slot);
    }
}

/* The flag indices a fresh slot enters, and those a leaving slot leaves (Register and
 * Unregister: three flags at once, where the branch-free forms paid). */
static inline void rvi_enter_flag_indices(rv_render_scene *s, uint32_t slot, uint32_t flags)
{
    rvi_ix_add_if(s, RVI_IX_TRANSLUCENT, slot, (flags / RV_PROJECTION_TRANSLUCENT) & 1);
    rvi_ix_add_if(s, RVI_IX_SELECTABLE, slot, (flags / RV_PROJECTION_SELECTABLE) & 1);
    rvi_ix_add_if(s, RVI_IX_LIGHT_CANDIDATE, slot, (flags / RV_PROJECTION_LIGHT_CANDIDATE) & 1);
}

static inline void rvi_leave_flag_indices(rv_render_scene *s, uint32_t slot, uint32_t flags)
{
    rvi_ix_remove_if(s, RVI_IX_TRANSLUCENT, slot, (flags / RV_PROJECTION_TRANSLUCENT) & 1);
    rvi_ix_remove_if(s, RVI_IX_SELECTABLE, slot, (flags / RV_PROJECTION_SELECTABLE) & 1);
    rvi_ix_remove_if(s, RVI_IX_LIGHT_CANDIDATE, slot, (flags / RV_PROJECTION_LIGHT_CANDIDATE) & 1);
}

/* Enters / leaves the class index, cell bucket and parent's child list its class says. */
void rvi_place(rv_render_scene *scene, uint32_t slot);
void rvi_unplace(rv_render_scene *scene, uint32_t slot);
/* The bucket of a cell, or RVI_INDEX_NONE. */
uint32_t rvi_find_bucket(const rv_render_scene *scene, uint64_t cell);
/* Equipped children waiting on or hanging from a parent key (intrusive list via rows;
 * child_lookup holds first child slot | count << 32). */
static inline uint32_t rvi_first_child(const rv_render_scene *s, uint64_t parent_key)
{
    uint64_t c;
    return rvi_map_get(&s->child_lookup, parent_key, &c) ? (uint32_t)c : RVI_INDEX_NONE;
}

static inline uint32_t rvi_count_children_hashed(const rv_render_scene *s, uint64_t parent_key, uint64_t hash)
{
    uint64_t c;
    return rvi_map_get_hashed(&s->child_lookup, parent_key, hash, &c) ? (uint32_t)(c >> 32) : 0;
}

static inline uint32_t rvi_count_children(const rv_render_scene *s, uint64_t parent_key)
{
    return rvi_count_children_hashed(s, parent_key, rvi_map_hash(parent_key));
}
/* Reserves one insertion into cell's bucket for the batch being prepared, making the
 * bucket (and lookup room for it) when the cell has none; the caller reserved touched-list
 * room. rvi_finish_batch ends the batch. RV_ERR_OUT_OF_MEMORY changes nothing the batch end
 * does not undo. */
rv_result rvi_reserve_cell(rv_render_scene *scene, uint64_t cell);
void rvi_finish_batch(rv_render_scene *scene);

/* ---- backing nodes (projection_nodes.c); each does nothing on a standalone scene ---- */

/* Creates the node of a freshly inserted projection (storage reserved by the batch) and
 * adopts the equipped children already waiting for its key. */
void rvi_node_bind(rv_render_scene *scene, uint32_t slot);
/* Destroys the node of a projection leaving the scene; its children become roots. */
void rvi_node_drop(rv_render_scene *scene, uint32_t slot);
void rvi_node_write_transform(rv_render_scene *scene, uint32_t slot);
void rvi_node_write_flags(rv_render_scene *scene, uint32_t slot);
/* Puts the node under its parent projection's node, or makes it a root. */
void rvi_node_reparent(rv_render_scene *scene, uint32_t slot);
void rvi_set_blocked(rv_render_scene *scene, uint32_t slot, bool blocked);
/* Retries the equipped children whose node would have closed a cycle. */
void rvi_retry_blocked(rv_render_scene *scene);

/* rv_render_scene_create for an owner that reports the scene's allocations with its own,
 * as rvi_journal_create_spent: a creation that fails writes its heap's counters to *spent
 * (NULL: not wanted). */
rv_result rvi_render_scene_create_spent(const rv_render_scene_desc *desc, rv_render_scene **out,
                                        rv_alloc_stats *spent);

/* Binds a scene to a world (what rv_render_scene_create does with desc->world; the frame
 * may call it for a scene made standalone): every live projection gets a node, and the
 * scene registers as the world's RVI_MODULE_PROJECTION (hooks: a destroyed node is
 * forgotten; a destroyed world unbinds). All or nothing. RV_ERR_BAD_STATE when the world
 * already has a render scene, this scene another world, or a visit is running. */
rv_result rvi_render_scene_bind_world(rv_render_scene *scene, rv_world *world);
/* Destroys the scene's nodes and releases the world's module slot. */
void rvi_render_scene_unbind_world(rv_render_scene *scene);

/* True while the render scene bound to world is running its delta observer (a drain is
 * half done: frame calls are refused meanwhile). */
bool rvi_world_projection_draining(const rv_world *world);

/* The projection slot a node of the bound world backs, or RVI_INDEX_NONE. */
uint32_t rvi_render_scene_slot_of_node(const rv_render_scene *scene, uint32_t node_index);

#endif
