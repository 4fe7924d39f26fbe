/* The render scene: a projection table fed only by deltas, and incremental indices
 * (DESIGN.md §7; seed 004 §3.2-3.5, §4).
 *
 * Each delta costs O(1): one key lookup, and swap-remove with back-indices in the rows for
 * every index it touches (outdoor static, per-cell static, dynamic, translucent,
 * selectable, light candidate, dirty). Nothing scans the table except ClearGeneration and
 * the digest. Storage a batch of deltas needs is reserved before the first of them is
 * applied, so applying never fails half-way on the scene's own memory. */
#include "projection.h"
#include "journal.h"
#include "core/hash.h"
#include "core/pool.h"
#include "core/check.h"
#include "scene.h"
#include "world.h"

#include <float.h>
#include <math.h>

#include <string.h>

#define NONE RVI_INDEX_NONE

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif
#define MAX_PROJECTIONS (1u << 30)

_Static_assert(sizeof(rvi_projection_hot) == 64, "one cache line");

/* ---- channels in the split row ---- */

static void store_transform(rvi_projection_hot *h, const rv_projection_transform *t)
{
    memcpy(h->position, t->position, sizeof h->position);
    memcpy(h->rotation, t->rotation, sizeof h->rotation);
    memcpy(h->scale, t->scale, sizeof h->scale);
    memcpy(h->bounds, t->bounds, sizeof h->bounds);
    h->bounds_space = (uint8_t)t->bounds_space;
}

static void load_transform(const rvi_projection_hot *h, rv_projection_transform *t)
{
    memcpy(t->position, h->position, sizeof t->position);
    memcpy(t->rotation, h->rotation, sizeof t->rotation);
    memcpy(t->scale, h->scale, sizeof t->scale);
    memcpy(t->bounds, h->bounds, sizeof t->bounds);
    t->bounds_space = (rv_bounds_space)h->bounds_space;
}

static void store_bucket(rv_render_scene *s, uint32_t slot, const rv_projection_bucket *b)
{
    s->hot[slot].projection_class = (uint8_t)b->projection_class;
    s->rows[slot].cell = b->cell;
    s->rows[slot].parent_key = b->parent_key;
}

static void load_projection(const rv_render_scene *s, uint32_t slot, rv_projection *p)
{
    const rvi_projection_hot *h = &s->hot[slot];
    const rvi_projection_row *row = &s->rows[slot];
    memset(p, 0, sizeof *p);
    load_transform(h, &p->transform);
    p->appearance.mesh = row->mesh;
    p->appearance.material_variant = row->material_variant;
    p->bucket.projection_class = (rv_projection_class)h->projection_class;
    p->bucket.cell = row->cell;
    p->bucket.parent_key = row->parent_key;
    p->flags = h->flags;
}

/* ---- indices ---- */

static void ix_add(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->index_count[ix]++;
    s->index[ix][p] = slot;
    s->index_pos[ix][slot] = p;
}

static void ix_remove(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->index_pos[ix][slot];
    uint32_t last = s->index[ix][--s->index_count[ix]];
    s->index[ix][p] = last;
    s->index_pos[ix][last] = p;
}

static void mark_dirty(rv_render_scene *s, uint32_t slot, uint32_t bits)
{
    rvi_projection_hot *h = &s->hot[slot];
    if (!h->dirty)
        ix_add(s, RVI_IX_DIRTY, slot);
    h->dirty |= (uint8_t)bits;
}

static const uint32_t flag_bit[3] = { RV_PROJECTION_TRANSLUCENT, RV_PROJECTION_SELECTABLE,
                                      RV_PROJECTION_LIGHT_CANDIDATE };
static const int flag_ix[3] = { RVI_IX_TRANSLUCENT, RVI_IX_SELECTABLE, RVI_IX_LIGHT_CANDIDATE };

/* Moves slot between the flag indices so membership matches new_flags. */
static void set_flag_membership(rv_render_scene *s, uint32_t slot, uint32_t old_flags, uint32_t new_flags)
{
    for (int i = 0; i < 3; i++) {
        bool was = (old_flags & flag_bit[i]) != 0, is = (new_flags & flag_bit[i]) != 0;
        if (was && !is)
            ix_remove(s, flag_ix[i], slot);
        else if (is && !was)
            ix_add(s, flag_ix[i], slot);
    }
}

/* ---- cell buckets ---- */

static rvi_cell_bucket *bucket_at(rv_render_scene *s, uint32_t b)
{
    return &RVI_VEC_AT(s->buckets, rvi_cell_bucket, b);
}

static uint32_t find_bucket(const rv_render_scene *s, uint64_t cell)
{
    uint64_t b;
    return rvi_map_get(&s->cell_lookup, cell, &b) ? (uint32_t)b : NONE;
}

/* A bucket for cell, from the free list or the end of the bucket array. The caller has
 * reserved one more bucket and one more cell lookup entry: this cannot fail. */
static uint32_t make_bucket(rv_render_scene *s, uint64_t cell)
{
    uint32_t b;
    if (s->bucket_free != NONE) {
        b = s->bucket_free;
        s->bucket_free = bucket_at(s, b)->next_free;
    } else {
        b = s->buckets.count++;
        memset(bucket_at(s, b), 0, sizeof(rvi_cell_bucket));
    }
    rvi_cell_bucket *bk = bucket_at(s, b);
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
    rvi_cell_bucket *bk = bucket_at(s, b);
    rvi_map_remove(&s->cell_lookup, bk->cell);
    bk->in_use = false;
    bk->next_free = s->bucket_free;
    s->bucket_free = b;
}

static void bucket_add(rv_render_scene *s, uint32_t slot, uint64_t cell)
{
    uint32_t b = find_bucket(s, cell); /* reserved by the batch: present */
    rvi_cell_bucket *bk = bucket_at(s, b);
    uint32_t p = bk->slots.count++;
    RVI_VEC_AT(bk->slots, uint32_t, p) = slot;
    if (p == 0)
        s->cells_nonempty++;
    s->cell_static_count++;
    s->rows[slot].bucket = b;
    s->rows[slot].bucket_pos = p;
}

static void bucket_remove(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    uint32_t b = row->bucket;
    rvi_cell_bucket *bk = bucket_at(s, b);
    uint32_t last = RVI_VEC_AT(bk->slots, uint32_t, --bk->slots.count);
    RVI_VEC_AT(bk->slots, uint32_t, row->bucket_pos) = last;
    s->rows[last].bucket_pos = row->bucket_pos;
    row->bucket = row->bucket_pos = NONE;
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

static bool key_live(const rv_render_scene *s, uint64_t key)
{
    return rvi_map_get(&s->key_lookup, key, NULL);
}

static uint32_t first_child(const rv_render_scene *s, uint64_t parent_key)
{
    uint64_t c;
    return rvi_map_get(&s->child_lookup, parent_key, &c) ? (uint32_t)c : NONE;
}

static uint32_t count_children(const rv_render_scene *s, uint64_t parent_key)
{
    uint32_t n = 0;
    for (uint32_t c = first_child(s, parent_key); c != NONE; c = s->rows[c].child_next)
        n++;
    return n;
}

static void child_link(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    uint64_t parent = row->parent_key;
    uint32_t head = first_child(s, parent);
    row->child_prev = NONE;
    row->child_next = head;
    if (head != NONE)
        s->rows[head].child_prev = slot;
    rv_result r = rvi_map_put(&s->heap, &s->child_lookup, parent, slot); /* reserved */
    (void)r;
    s->equipped_count++;
    if (!key_live(s, parent))
        s->orphaned++;
}

static void child_unlink(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    uint64_t parent = row->parent_key;
    if (row->child_prev != NONE)
        s->rows[row->child_prev].child_next = row->child_next;
    else if (row->child_next != NONE)
        rvi_map_put(&s->heap, &s->child_lookup, parent, row->child_next); /* overwrite: no growth */
    else
        rvi_map_remove(&s->child_lookup, parent);
    if (row->child_next != NONE)
        s->rows[row->child_next].child_prev = row->child_prev;
    row->child_next = row->child_prev = NONE;
    s->equipped_count--;
    if (!key_live(s, parent))
        s->orphaned--;
}

/* ---- class placement ---- */

static void place(rv_render_scene *s, uint32_t slot)
{
    switch (s->hot[slot].projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: ix_add(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_add(s, slot, s->rows[slot].cell); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_link(s, slot); /* fall through */
    default: ix_add(s, RVI_IX_DYNAMIC, slot); break;
    }
}

static void unplace(rv_render_scene *s, uint32_t slot)
{
    switch (s->hot[slot].projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: ix_remove(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_remove(s, slot); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_unlink(s, slot); /* fall through */
    default: ix_remove(s, RVI_IX_DYNAMIC, slot); break;
    }
}

/* ---- table storage ---- */

enum { LINE = 64 };

static rvi_projection_hot *align_hot(void *block)
{
    return (rvi_projection_hot *)(((uintptr_t)block + LINE - 1) & ~(uintptr_t)(LINE - 1));
}

static size_t hot_block_size(uint32_t capacity)
{
    return (size_t)capacity * sizeof(rvi_projection_hot) + LINE;
}

/* Grows hot lines, rows, every index and back-index array to capacity. All or nothing. */
static rv_result grow_table(rv_render_scene *s, uint32_t capacity)
{
    if (capacity > MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    enum { ARRAYS = 2 * RVI_IX_COUNT };
    void *hot_block = rvi_alloc(&s->heap, hot_block_size(capacity));
    rvi_projection_row *rows = rvi_alloc(&s->heap, (size_t)capacity * sizeof *rows);
    uint32_t *fresh[ARRAYS] = {0}; /* index arrays, then back-index arrays */
    bool ok = rows && hot_block;
    for (int i = 0; ok && i < ARRAYS; i++)
        ok = (fresh[i] = rvi_alloc(&s->heap, (size_t)capacity * sizeof(uint32_t))) != NULL;
    if (!ok) {
        rvi_free(&s->heap, hot_block, hot_block ? hot_block_size(capacity) : 0);
        rvi_free(&s->heap, rows, rows ? (size_t)capacity * sizeof *rows : 0);
        for (int i = 0; i < ARRAYS; i++)
            rvi_free(&s->heap, fresh[i], fresh[i] ? (size_t)capacity * sizeof(uint32_t) : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_projection_hot *hot = align_hot(hot_block);
    if (s->capacity) {
        memcpy(hot, s->hot, (size_t)s->high * sizeof *hot);
        memcpy(rows, s->rows, (size_t)s->high * sizeof *rows);
        for (int i = 0; i < RVI_IX_COUNT; i++) {
            memcpy(fresh[i], s->index[i], (size_t)s->index_count[i] * sizeof(uint32_t));
            memcpy(fresh[RVI_IX_COUNT + i], s->index_pos[i], (size_t)s->high * sizeof(uint32_t));
        }
    }
    rvi_free(&s->heap, s->hot_block, s->capacity ? hot_block_size(s->capacity) : 0);
    rvi_free(&s->heap, s->rows, (size_t)s->capacity * sizeof *rows);
    for (int i = 0; i < RVI_IX_COUNT; i++) {
        rvi_free(&s->heap, s->index[i], (size_t)s->capacity * sizeof(uint32_t));
        rvi_free(&s->heap, s->index_pos[i], (size_t)s->capacity * sizeof(uint32_t));
        s->index[i] = fresh[i];
        s->index_pos[i] = fresh[RVI_IX_COUNT + i];
    }
    s->hot_block = hot_block;
    s->hot = hot;
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

/* ---- backing nodes (world bound) ----
 * Every live projection of a bound scene has a node: equipped children under their parent
 * projection's node while it has one, everything else a root. Node storage for a batch is
 * reserved with the scene's storage (rvi_scene_reserve), so creating one never fails. */

static rvi_scene *nodes_of(rv_render_scene *s)
{
    return &s->world->scene;
}

static void set_blocked(rv_render_scene *s, uint32_t slot, bool blocked)
{
    if (s->rows[slot].blocked != blocked) {
        s->rows[slot].blocked = blocked;
        s->blocked += blocked ? 1u : (uint32_t)-1;
    }
}

static void node_forget(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    rvi_map_remove(&s->node_lookup, row->node & 0xFFFFFFu);
    row->node = 0;
    set_blocked(s, slot, false);
}

/* q^-1 * v * q for a unit quaternion q (x, y, z, w): v rotated by the inverse rotation. */
static void rotate_inverse(const float q[4], const float v[3], float out[3])
{
    float x = -q[0], y = -q[1], z = -q[2], w = q[3];
    /* t = 2 * cross(q.xyz, v); out = v + w * t + cross(q.xyz, t) */
    float tx = 2.0f * (y * v[2] - z * v[1]);
    float ty = 2.0f * (z * v[0] - x * v[2]);
    float tz = 2.0f * (x * v[1] - y * v[0]);
    out[0] = v[0] + w * tx + (y * tz - z * ty);
    out[1] = v[1] + w * ty + (z * tx - x * tz);
    out[2] = v[2] + w * tz + (x * ty - y * tx);
}

/* The projection's bounds as the node's local sphere. World-space bounds (in the frame the
 * transform is expressed in) are mapped back through the inverse of T * R * S; the radius
 * is divided by the largest scale, which the scene multiplies back, padded so rounding
 * never shrinks the sphere. */
static void local_bounds(const rv_projection_transform *t, float out[4])
{
    if (t->bounds_space == RV_BOUNDS_LOCAL) {
        memcpy(out, t->bounds, 16);
        return;
    }
    double n2 = 0.0;
    for (int k = 0; k < 4; k++)
        n2 += (double)t->rotation[k] * t->rotation[k];
    float q[4], d[3], r[3];
    for (int k = 0; k < 4; k++)
        q[k] = (float)(t->rotation[k] / sqrt(n2));
    for (int k = 0; k < 3; k++)
        d[k] = t->bounds[k] - t->position[k];
    rotate_inverse(q, d, r);
    float largest = 0.0f;
    for (int k = 0; k < 3; k++) {
        out[k] = r[k] / t->scale[k];
        float a = fabsf(t->scale[k]);
        largest = a > largest ? a : largest;
    }
    out[3] = t->bounds[3] / largest * (1.0f + 4.0f * FLT_EPSILON);
}

static void node_write_transform(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    rv_node node = { row->node };
    rv_projection_transform transform;
    const rv_projection_transform *t = &transform;
    load_transform(&s->hot[slot], &transform);
    float sphere[4];
    local_bounds(t, sphere);
    /* Validated on append (or replay): these cannot fail. */
    rv_node_set_position(s->world, node, t->position);
    rv_node_set_rotation(s->world, node, t->rotation);
    rv_node_set_scale(s->world, node, t->scale);
    rv_node_set_bounds(s->world, node, sphere, sphere[3]);
}

static void node_write_flags(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    uint32_t *flags = &nodes_of(s)->flags[row->node & 0xFFFFFFu];
    *flags &= ~(uint32_t)(RVI_NODE_HIDDEN | RVI_NODE_TRANSLUCENT);
    *flags |= RVI_NODE_PROJECTION;
    if (s->hot[slot].flags & RV_PROJECTION_HIDDEN)
        *flags |= RVI_NODE_HIDDEN;
    if (s->hot[slot].flags & RV_PROJECTION_TRANSLUCENT)
        *flags |= RVI_NODE_TRANSLUCENT;
}

/* Puts the node where its class says: under the parent projection's node (an equipped
 * child whose parent lives and has a node), else a root. A parent chain that would close a
 * cycle (a host error) leaves the node a root, marked blocked and retried at the end of
 * the batch. */
static void node_reparent(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    rv_node node = { row->node };
    uint64_t parent_slot;
    if (s->hot[slot].projection_class == RV_PROJECTION_EQUIPPED_CHILD &&
        rvi_map_get(&s->key_lookup, row->parent_key, &parent_slot) &&
        s->rows[parent_slot].node) {
        rv_node parent = { s->rows[parent_slot].node };
        rv_result r = rv_node_attach(s->world, parent, node);
        set_blocked(s, slot, r != RV_OK);
        if (r == RV_OK)
            return;
    } else {
        set_blocked(s, slot, false);
    }
    rv_node_detach(s->world, node);
}

/* Retries the blocked children. Attaching only adds ancestry, so one pass reaches the
 * fixpoint. O(projections), and only while a host-made cycle exists. */
static void retry_blocked(rv_render_scene *s)
{
    for (uint32_t slot = 0; s->blocked && slot < s->high; slot++)
        if (s->rows[slot].live && s->rows[slot].blocked)
            node_reparent(s, slot);
}

/* Creates the node of a freshly inserted projection (storage reserved) and adopts the
 * equipped children already waiting for this key. */
static void node_bind(rv_render_scene *s, uint32_t slot)
{
    if (!s->world)
        return;
    rvi_scene *sc = nodes_of(s);
    uint32_t i = rvi_scene_create_reserved(sc, RVI_INDEX_NONE);
    rvi_projection_row *row = &s->rows[slot];
    row->node = rvi_node_handle(sc, i).id;
    rv_result r = rvi_map_put(&s->heap, &s->node_lookup, i, slot); /* reserved */
    (void)r;
    node_write_flags(s, slot);
    node_write_transform(s, slot);
    node_reparent(s, slot);
    for (uint32_t c = first_child(s, row->key); c != NONE; c = s->rows[c].child_next)
        node_reparent(s, c);
}

/* Destroys the node of a projection leaving the scene; its children become roots. */
static void node_drop(rv_render_scene *s, uint32_t slot)
{
    if (!s->world || !s->rows[slot].node)
        return;
    rv_node node = { s->rows[slot].node };
    node_forget(s, slot); /* first: the destroy notification then finds nothing of ours */
    rv_node_destroy_reroot(s->world, node);
}

/* World hooks: the host destroyed a node (forget it), or the world itself (unbind). */
static void on_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    rv_render_scene *s = state;
    (void)world;
    uint64_t slot;
    if (rvi_map_get(&s->node_lookup, node_index, &slot))
        node_forget(s, (uint32_t)slot);
}

static void on_world_destroyed(rv_world *world, void *state)
{
    rv_render_scene *s = state;
    (void)world;
    for (uint32_t slot = 0; slot < s->high; slot++) {
        s->rows[slot].node = 0;
        s->rows[slot].blocked = false;
    }
    s->blocked = 0;
    rvi_map_clear(&s->node_lookup);
    s->world = NULL;
}

rv_result rvi_render_scene_bind_world(rv_render_scene *s, rv_world *world)
{
    if (s->world)
        return s->world == world ? RV_OK : RV_ERR_BAD_STATE;
    if (rvi_world_module(world, RVI_MODULE_PROJECTION))
        return RV_ERR_BAD_STATE;
    if (world->scene.visiting)
        return RV_ERR_BAD_STATE;
    /* Reserve first: binding a scene that already holds projections is all or nothing. */
    RVI_TRY(rvi_scene_reserve(&world->scene, &world->heap, s->live));
    RVI_TRY(rvi_map_reserve(&s->heap, &s->node_lookup, s->capacity));
    rvi_module_hooks hooks = { s, on_world_destroyed, on_node_destroyed };
    RVI_TRY(rvi_world_register_module(world, RVI_MODULE_PROJECTION, &hooks));
    s->world = world;
    for (uint32_t slot = 0; slot < s->high; slot++)
        if (s->rows[slot].live)
            node_bind(s, slot);
    retry_blocked(s);
    return RV_OK;
}

void rvi_render_scene_unbind_world(rv_render_scene *s)
{
    if (!s->world)
        return;
    rv_world *world = s->world;
    for (uint32_t slot = 0; slot < s->high; slot++)
        if (s->rows[slot].live)
            node_drop(s, slot);
    /* world.h has no unregister: clearing the slot is what registering filled in. */
    world->modules[RVI_MODULE_PROJECTION] = (rvi_module_hooks){0};
    s->world = NULL;
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
    store_transform(h, &p->transform);
    row->mesh = p->appearance.mesh;
    row->material_variant = p->appearance.material_variant;
    store_bucket(s, slot, &p->bucket);
    h->flags = (uint8_t)p->flags;
    h->incarnation = d->incarnation;
    row->generation = d->generation;
    h->dirty = 0;
    row->bucket = row->bucket_pos = NONE;
    row->child_next = row->child_prev = NONE;
    row->next_free = NONE;
    row->live = true;
    row->blocked = false;
    s->live++;
    rv_result r = rvi_map_put(&s->heap, &s->key_lookup, d->key, slot); /* reserved */
    (void)r;
    /* Children registered before their parent stop being orphans. */
    s->orphaned -= count_children(s, d->key);
    place(s, slot);
    set_flag_membership(s, slot, 0, h->flags);
    mark_dirty(s, slot, RV_DIRTY_REGISTERED);
    node_bind(s, slot);
}

static void remove_projection(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    rvi_projection_hot *h = &s->hot[slot];
    unplace(s, slot);
    set_flag_membership(s, slot, h->flags, 0);
    if (h->dirty)
        ix_remove(s, RVI_IX_DIRTY, slot);
    h->dirty = 0;
    rvi_map_remove(&s->key_lookup, row->key);
    s->orphaned += count_children(s, row->key);
    node_drop(s, slot);
    set_blocked(s, slot, false);
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
static void apply_one(rv_render_scene *s, const rv_delta *d, bool validate, const lookup_hint *hint,
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
        store_transform(h, &d->projection.transform);
        mark_dirty(s, slot, RV_DIRTY_TRANSFORM);
        node_write_transform(s, slot);
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        s->rows[slot].mesh = d->projection.appearance.mesh;
        s->rows[slot].material_variant = d->projection.appearance.material_variant;
        mark_dirty(s, slot, RV_DIRTY_APPEARANCE);
        break;
    case RV_DELTA_UPDATE_FLAGS:
        set_flag_membership(s, slot, h->flags, d->projection.flags);
        h->flags = (uint8_t)d->projection.flags;
        mark_dirty(s, slot, RV_DIRTY_FLAGS);
        node_write_flags(s, slot);
        break;
    case RV_DELTA_REBUCKET:
        unplace(s, slot);
        store_bucket(s, slot, &d->projection.bucket);
        place(s, slot);
        mark_dirty(s, slot, RV_DIRTY_BUCKET);
        node_reparent(s, slot);
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

/* Ends a batch: buckets it reserved forget their reservations; empty ones are released. */
static void finish_batch(rv_render_scene *s)
{
    if (s->blocked)
        retry_blocked(s);
    for (uint32_t i = 0; i < s->touched.count; i++) {
        uint32_t b = RVI_VEC_AT(s->touched, uint32_t, i);
        rvi_cell_bucket *bk = bucket_at(s, b);
        bk->pending = 0;
        bk->touched = false;
        if (bk->in_use && bk->slots.count == 0)
            release_bucket(s, b);
    }
    s->touched.count = 0;
}

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

/* Reserves one insertion into cell's bucket (made now if the cell has none). The caller
 * reserved the lookup, bucket and touched-list room with reserve_counts. */
static rv_result reserve_cell(rv_render_scene *s, uint64_t cell)
{
    uint32_t b = find_bucket(s, cell);
    if (b == NONE)
        b = make_bucket(s, cell);
    rvi_cell_bucket *bk = bucket_at(s, b);
    if (!bk->touched) {
        bk->touched = true;
        RVI_VEC_AT(s->touched, uint32_t, s->touched.count++) = b;
    }
    bk->pending++;
    return rvi_vec_reserve(&s->heap, &bk->slots, sizeof(uint32_t), bk->slots.count + bk->pending);
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
        rv_result r = reserve_cell(s, d[i].projection.bucket.cell);
        if (r != RV_OK) {
            finish_batch(s);
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
        rv_result r = reserve_cell(s, rvi_journal_entry(j, e)->projection.bucket.cell);
        if (r != RV_OK) {
            finish_batch(s);
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
enum { LOOKUP_AHEAD = 16, ROW_AHEAD = 8 };

/* Mirrors core/map.c's probe start; a mismatch would only cost speed. */
static void prefetch_lookup(const rvi_map *m, uint64_t key)
{
    if (m->capacity) {
        uint32_t i = (uint32_t)(rvi_mix64(key + 0x9E3779B97F4A7C15ull) & (m->capacity - 1));
        PREFETCH(&m->keys[i]);
        PREFETCH(&m->values[i]);
        PREFETCH(&m->used[i]);
    }
}

/* Looks the key up ahead of time (remembering the answer in *hint) and prefetches the hot
 * line and dirty back-index, and what else the delta's kind reads. */
static void prefetch_row(const rv_render_scene *s, const rv_delta *d, lookup_hint *hint)
{
    uint64_t slot;
    hint->key = d->key;
    hint->slot = NONE;
    if (!rvi_map_get(&s->key_lookup, d->key, &slot))
        return;
    hint->slot = (uint32_t)slot;
    PREFETCH(&s->hot[slot]);
    PREFETCH(&s->index_pos[RVI_IX_DIRTY][slot]);
    if (d->kind == RV_DELTA_UPDATE_FLAGS) {
        for (int i = 0; i < 3; i++)
            PREFETCH(&s->index_pos[flag_ix[i]][slot]);
    } else if (d->kind != RV_DELTA_UPDATE_TRANSFORM) {
        const char *row = (const char *)&s->rows[slot];
        PREFETCH(row);
        PREFETCH(row + sizeof *s->rows - 1);
    }
}

/* The lookahead of a run of deltas d[first .. end): hints[k % ROW_AHEAD] holds delta k's
 * early lookup once k >= first + ROW_AHEAD. */
typedef struct lookahead {
    lookup_hint hints[ROW_AHEAD];
    uint32_t first;
} lookahead;

/* True when none of d[from .. i) can have added or removed `key` in the key lookup (only
 * a Register or Unregister of that key, or a ClearGeneration, can: another key's insertion
 * or removal never changes this key's slot). Those deltas were just applied: cheap reads. */
static bool key_untouched(const rv_delta *d, uint32_t from, uint32_t i, uint64_t key)
{
    for (uint32_t k = from; k < i; k++) {
        rv_delta_kind kind = d[k].kind;
        if (kind == RV_DELTA_CLEAR_GENERATION ||
            ((kind == RV_DELTA_REGISTER || kind == RV_DELTA_UNREGISTER) && d[k].key == key))
            return false;
    }
    return true;
}

/* Prefetches for deltas i + LOOKUP_AHEAD and i + ROW_AHEAD, and returns delta i's early
 * lookup in *hint (false when there is none, or it may be outdated). */
static bool prefetch_ahead(const rv_render_scene *s, lookahead *la, const rv_delta *d, uint32_t i, uint32_t end,
                           lookup_hint *hint)
{
    bool has_hint = i >= la->first + ROW_AHEAD;
    if (has_hint) {
        *hint = la->hints[i % ROW_AHEAD]; /* copied: the entry is reused just below */
        has_hint = key_untouched(d, i - ROW_AHEAD, i, hint->key);
    }
    if (i + LOOKUP_AHEAD < end)
        prefetch_lookup(&s->key_lookup, d[i + LOOKUP_AHEAD].key);
    if (i + ROW_AHEAD < end)
        prefetch_row(s, &d[i + ROW_AHEAD], &la->hints[(i + ROW_AHEAD) % ROW_AHEAD]);
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
        lookahead la;
        la.first = j->cursor;
        lookup_hint hint;
        if (!s->observer) {
            /* Nothing can append meanwhile: apply in place. */
            const rv_delta *d = rvi_journal_entry(j, 0);
            for (; r == RV_OK && j->cursor < end; j->cursor++) {
                bool hinted = prefetch_ahead(s, &la, d, j->cursor, end, &hint);
                rv_delta_outcome o;
                apply_one(s, &d[j->cursor], false, hinted ? &hint : NULL, &o, &c);
            }
        }
        while (r == RV_OK && j->cursor < end) {
            /* Re-read every time: the observer may append and move the journal's buffer. */
            bool hinted = prefetch_ahead(s, &la, rvi_journal_entry(j, 0), j->cursor, end, &hint);
            rv_delta d = *rvi_journal_entry(j, j->cursor); /* a copy, for the same reason */
            rv_delta_outcome o;
            apply_one(s, &d, false, hinted ? &hint : NULL, &o, &c);
            /* Taken before the observer runs, so an append never merges into it. */
            j->cursor++;
            notify(s, &d, o);
        }
        finish_batch(s);
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
    lookahead la;
    la.first = 0;
    lookup_hint hint;
    for (uint32_t i = 0; r == RV_OK && i < count; i++) {
        bool hinted = prefetch_ahead(s, &la, deltas, i, count, &hint);
        rv_delta_outcome o;
        apply_one(s, &deltas[i], true, hinted ? &hint : NULL, &o, &c);
        notify(s, &deltas[i], o);
    }
    finish_batch(s);
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
    for (uint32_t i = 0; i < s->index_count[RVI_IX_DIRTY]; i++)
        s->hot[dirty[i]].dirty = 0;
    s->index_count[RVI_IX_DIRTY] = 0;
    s->stats.publishes++;
    return RV_OK;
}

/* ---- lifecycle ---- */

static void free_scene(rv_render_scene *s)
{
    for (int i = 0; i < RVI_IX_COUNT; i++) {
        rvi_free(&s->heap, s->index[i], (size_t)s->capacity * sizeof(uint32_t));
        rvi_free(&s->heap, s->index_pos[i], (size_t)s->capacity * sizeof(uint32_t));
    }
    rvi_free(&s->heap, s->rows, (size_t)s->capacity * sizeof(rvi_projection_row));
    rvi_free(&s->heap, s->hot_block, s->capacity ? hot_block_size(s->capacity) : 0);
    for (uint32_t b = 0; b < s->buckets.count; b++)
        rvi_vec_free(&s->heap, &bucket_at(s, b)->slots, sizeof(uint32_t));
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
    load_projection(s, slot, &out->projection);
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
    uint32_t b = find_bucket(s, cell);
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
    return (uint64_t)m->capacity * (2 * sizeof(uint64_t) + 1);
}

rv_render_scene_memory rv_render_scene_get_memory(const rv_render_scene *s)
{
    rv_render_scene_memory m = {0};
    if (!s)
        return m;
    m.table_bytes = (uint64_t)s->capacity * sizeof(rvi_projection_row) + map_bytes(&s->key_lookup) +
                    (s->capacity ? hot_block_size(s->capacity) : 0);
    for (int i = 0; i < RVI_IX_COUNT; i++)
        m.index_bytes[i + 1] = (uint64_t)s->capacity * 2 * sizeof(uint32_t); /* list + back-indices */
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

/* ---- digest ---- */

/* LSD radix sort of (key, slot) by key, 8 bits a pass; passes over bytes every key shares
 * are skipped. Deterministic, and independent of slot and hash layout (keys are unique). */
static rvi_digest_entry *sort_by_key(rvi_digest_entry *a, rvi_digest_entry *b, uint32_t n)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (uint32_t i = 0; i < n; i++) {
        all_or |= a[i].key;
        all_and &= a[i].key;
    }
    uint64_t varying = all_or ^ all_and;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((varying >> shift) & 0xFF))
            continue;
        uint32_t offset[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            offset[((a[i].key >> shift) & 0xFF) + 1]++;
        for (int k = 0; k < 256; k++)
            offset[k + 1] += offset[k];
        for (uint32_t i = 0; i < n; i++)
            b[offset[(a[i].key >> shift) & 0xFF]++] = a[i];
        rvi_digest_entry *t = a;
        a = b;
        b = t;
    }
    return a;
}

typedef struct digest_state {
    uint64_t h[2];
} digest_state;

static void absorb(digest_state *d, uint64_t w)
{
    d->h[0] = rvi_mix64(d->h[0] ^ w);
    d->h[1] = rvi_mix64((d->h[1] + w) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
}

/* Two floats as one word; -0 counts as +0 (the same placement). */
static uint64_t float_pair(float a, float b)
{
    uint32_t x, y;
    a = a == 0.0f ? 0.0f : a;
    b = b == 0.0f ? 0.0f : b;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return (uint64_t)x | (uint64_t)y << 32;
}

static void absorb_projection(digest_state *d, const rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    const rvi_projection_hot *h = &s->hot[slot];
    absorb(d, row->key);
    absorb(d, (uint64_t)h->incarnation | (uint64_t)row->generation << 32);
    absorb(d, (uint64_t)h->projection_class | (uint64_t)h->flags << 8 | (uint64_t)h->bounds_space << 40);
    absorb(d, row->cell);
    absorb(d, row->parent_key);
    absorb(d, row->mesh);
    absorb(d, row->material_variant);
    absorb(d, float_pair(h->position[0], h->position[1]));
    absorb(d, float_pair(h->position[2], h->rotation[0]));
    absorb(d, float_pair(h->rotation[1], h->rotation[2]));
    absorb(d, float_pair(h->rotation[3], h->scale[0]));
    absorb(d, float_pair(h->scale[1], h->scale[2]));
    absorb(d, float_pair(h->bounds[0], h->bounds[1]));
    absorb(d, float_pair(h->bounds[2], h->bounds[3]));
}

rv_result rv_render_scene_digest(rv_render_scene *s, rv_scene_digest *out)
{
    if (!s || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t n = s->live;
    if (n > s->digest_capacity) {
        uint64_t cap = s->digest_capacity ? s->digest_capacity : 64;
        while (cap < n)
            cap *= 2;
        rvi_digest_entry *e = rvi_alloc(&s->heap, (size_t)cap * 2 * sizeof *e);
        if (!e)
            return RV_ERR_OUT_OF_MEMORY;
        rvi_free(&s->heap, s->digest_entries, (size_t)s->digest_capacity * 2 * sizeof *e);
        s->digest_entries = e;
        s->digest_capacity = (uint32_t)cap;
    }
    uint32_t k = 0;
    for (uint32_t slot = 0; slot < s->high; slot++) {
        if (s->rows[slot].live) {
            s->digest_entries[k].key = s->rows[slot].key;
            s->digest_entries[k].slot = slot;
            k++;
        }
    }
    const rvi_digest_entry *sorted =
        n ? sort_by_key(s->digest_entries, s->digest_entries + s->digest_capacity, n) : s->digest_entries;
    digest_state d = { { 0x243F6A8885A308D3ull, 0x13198A2E03707344ull } };
    absorb(&d, (uint64_t)s->generation << 32 | n);
    for (uint32_t i = 0; i < n; i++)
        absorb_projection(&d, s, sorted[i].slot);
    out->hash[0] = d.h[0];
    out->hash[1] = d.h[1];
    out->projections = n;
    out->generation = s->generation;
    return RV_OK;
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
