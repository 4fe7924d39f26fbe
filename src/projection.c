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
#define MAX_PROJECTIONS (1u << 30)

/* ---- indices ---- */

static void ix_add(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->index_count[ix]++;
    s->index[ix][p] = slot;
    s->rows[slot].pos[ix] = p;
}

static void ix_remove(rv_render_scene *s, int ix, uint32_t slot)
{
    uint32_t p = s->rows[slot].pos[ix];
    uint32_t last = s->index[ix][--s->index_count[ix]];
    s->index[ix][p] = last;
    s->rows[last].pos[ix] = p;
    s->rows[slot].pos[ix] = NONE;
}

static void mark_dirty(rv_render_scene *s, uint32_t slot, uint32_t bits)
{
    rvi_projection_row *row = &s->rows[slot];
    if (!row->dirty)
        ix_add(s, RVI_IX_DIRTY, slot);
    row->dirty |= bits;
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
    uint64_t parent = row->projection.bucket.parent_key;
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
    uint64_t parent = row->projection.bucket.parent_key;
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
    const rv_projection_bucket *b = &s->rows[slot].projection.bucket;
    switch (b->projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: ix_add(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_add(s, slot, b->cell); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_link(s, slot); /* fall through */
    default: ix_add(s, RVI_IX_DYNAMIC, slot); break;
    }
}

static void unplace(rv_render_scene *s, uint32_t slot)
{
    switch (s->rows[slot].projection.bucket.projection_class) {
    case RV_PROJECTION_OUTDOOR_STATIC: ix_remove(s, RVI_IX_OUTDOOR_STATIC, slot); break;
    case RV_PROJECTION_CELL_STATIC: bucket_remove(s, slot); break;
    case RV_PROJECTION_EQUIPPED_CHILD: child_unlink(s, slot); /* fall through */
    default: ix_remove(s, RVI_IX_DYNAMIC, slot); break;
    }
}

/* ---- table storage ---- */

/* Grows rows and every index array to capacity. All or nothing. */
static rv_result grow_table(rv_render_scene *s, uint32_t capacity)
{
    if (capacity > MAX_PROJECTIONS)
        return RV_ERR_CAPACITY;
    rvi_projection_row *rows = rvi_alloc(&s->heap, (size_t)capacity * sizeof *rows);
    uint32_t *index[RVI_IX_COUNT] = {0};
    bool ok = rows != NULL;
    for (int i = 0; ok && i < RVI_IX_COUNT; i++)
        ok = (index[i] = rvi_alloc(&s->heap, (size_t)capacity * sizeof(uint32_t))) != NULL;
    if (!ok) {
        rvi_free(&s->heap, rows, rows ? (size_t)capacity * sizeof *rows : 0);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            rvi_free(&s->heap, index[i], index[i] ? (size_t)capacity * sizeof(uint32_t) : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    if (s->capacity) {
        memcpy(rows, s->rows, (size_t)s->high * sizeof *rows);
        for (int i = 0; i < RVI_IX_COUNT; i++)
            memcpy(index[i], s->index[i], (size_t)s->index_count[i] * sizeof(uint32_t));
    }
    rvi_free(&s->heap, s->rows, (size_t)s->capacity * sizeof *rows);
    for (int i = 0; i < RVI_IX_COUNT; i++) {
        rvi_free(&s->heap, s->index[i], (size_t)s->capacity * sizeof(uint32_t));
        s->index[i] = index[i];
    }
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
    const rv_projection_transform *t = &row->projection.transform;
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
    if (row->projection.flags & RV_PROJECTION_HIDDEN)
        *flags |= RVI_NODE_HIDDEN;
    if (row->projection.flags & RV_PROJECTION_TRANSLUCENT)
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
    if (row->projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD &&
        rvi_map_get(&s->key_lookup, row->projection.bucket.parent_key, &parent_slot) &&
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
    row->key = d->key;
    row->node = 0;
    row->projection = d->projection;
    row->incarnation = d->incarnation;
    row->generation = d->generation;
    row->dirty = 0;
    for (int i = 0; i < RVI_IX_COUNT; i++)
        row->pos[i] = NONE;
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
    set_flag_membership(s, slot, 0, row->projection.flags);
    mark_dirty(s, slot, RV_DIRTY_REGISTERED);
    node_bind(s, slot);
}

static void remove_projection(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    unplace(s, slot);
    set_flag_membership(s, slot, row->projection.flags, 0);
    if (row->dirty)
        ix_remove(s, RVI_IX_DIRTY, slot);
    row->dirty = 0;
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

/* Applies or rejects one delta. Never fails: the batch reserved what it needs. */
static void apply_one(rv_render_scene *s, const rv_delta *d, bool validate, rv_delta_outcome *out,
                      rv_apply_counts *c)
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
    if (rvi_map_get(&s->key_lookup, d->key, &found))
        slot = (uint32_t)found;
    if (d->kind == RV_DELTA_REGISTER) {
        if (slot != NONE) {
            uint32_t live_incarnation = s->rows[slot].incarnation;
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
    if (slot == NONE || d->incarnation > s->rows[slot].incarnation) {
        o = RV_DELTA_REJECTED_UNKNOWN_KEY;
        goto taken;
    }
    if (d->incarnation < s->rows[slot].incarnation) {
        o = RV_DELTA_REJECTED_STALE_INCARNATION;
        goto taken;
    }
    rvi_projection_row *row = &s->rows[slot];
    switch (d->kind) {
    case RV_DELTA_UPDATE_TRANSFORM:
        row->projection.transform = d->projection.transform;
        mark_dirty(s, slot, RV_DIRTY_TRANSFORM);
        node_write_transform(s, slot);
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        row->projection.appearance = d->projection.appearance;
        mark_dirty(s, slot, RV_DIRTY_APPEARANCE);
        break;
    case RV_DELTA_UPDATE_FLAGS:
        set_flag_membership(s, slot, row->projection.flags, d->projection.flags);
        row->projection.flags = d->projection.flags;
        mark_dirty(s, slot, RV_DIRTY_FLAGS);
        node_write_flags(s, slot);
        break;
    case RV_DELTA_REBUCKET:
        unplace(s, slot);
        row->projection.bucket = d->projection.bucket;
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

static rv_projection_class target_class(const rv_delta *d)
{
    if (d->kind != RV_DELTA_REGISTER && d->kind != RV_DELTA_REBUCKET)
        return RV_PROJECTION_CLASS_NONE;
    return d->projection.bucket.projection_class;
}

static rv_result reserve_cells(rv_render_scene *s, const rv_delta *d, uint32_t n, uint32_t cell_targets)
{
    RVI_TRY(rvi_vec_reserve(&s->heap, &s->touched, sizeof(uint32_t), cell_targets));
    RVI_TRY(rvi_map_reserve(&s->heap, &s->cell_lookup, s->cell_lookup.count + cell_targets));
    RVI_TRY(rvi_vec_reserve(&s->heap, &s->buckets, sizeof(rvi_cell_bucket), s->buckets.count + cell_targets));
    for (uint32_t i = 0; i < n; i++) {
        if (target_class(&d[i]) != RV_PROJECTION_CELL_STATIC)
            continue;
        uint64_t cell = d[i].projection.bucket.cell;
        uint32_t b = find_bucket(s, cell);
        if (b == NONE)
            b = make_bucket(s, cell);
        rvi_cell_bucket *bk = bucket_at(s, b);
        if (!bk->touched) {
            bk->touched = true;
            RVI_VEC_AT(s->touched, uint32_t, s->touched.count++) = b;
        }
        bk->pending++;
        rv_result r = rvi_vec_reserve(&s->heap, &bk->slots, sizeof(uint32_t), bk->slots.count + bk->pending);
        if (r != RV_OK) {
            finish_batch(s);
            return r;
        }
    }
    return RV_OK;
}

/* Reserves everything applying d[0..n) may need (a bound world's nodes included), so the
 * batch cannot fail once it starts. Counts are upper bounds: a
 * rejected delta simply leaves its reservation unused. */
static rv_result reserve_batch(rv_render_scene *s, const rv_delta *d, uint32_t n)
{
    uint32_t registers = 0, cell_targets = 0, equipped_targets = 0;
    for (uint32_t i = 0; i < n; i++) {
        registers += d[i].kind == RV_DELTA_REGISTER;
        rv_projection_class c = target_class(&d[i]);
        cell_targets += c == RV_PROJECTION_CELL_STATIC;
        equipped_targets += c == RV_PROJECTION_EQUIPPED_CHILD;
    }
    if (registers) {
        if ((uint64_t)s->live + registers > MAX_PROJECTIONS)
            return RV_ERR_CAPACITY;
        RVI_TRY(reserve_projections(s, s->live + registers));
    }
    if (equipped_targets)
        RVI_TRY(rvi_map_reserve(&s->heap, &s->child_lookup, s->child_lookup.count + equipped_targets));
    if (cell_targets)
        RVI_TRY(reserve_cells(s, d, n, cell_targets));
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
    /* Batches: what is pending now, then whatever the observer appended meanwhile. */
    while (r == RV_OK && j->cursor < j->deltas.count) {
        uint32_t end = j->deltas.count;
        r = reserve_batch(s, rvi_journal_entry(j, j->cursor), end - j->cursor);
        while (r == RV_OK && j->cursor < end) {
            /* A copy: the observer may append and move the journal's buffer. */
            rv_delta d = *rvi_journal_entry(j, j->cursor);
            rv_delta_outcome o;
            apply_one(s, &d, false, &o, &c);
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
    rv_result r = count ? reserve_batch(s, deltas, count) : RV_OK;
    for (uint32_t i = 0; r == RV_OK && i < count; i++) {
        rv_delta_outcome o;
        apply_one(s, &deltas[i], true, &o, &c);
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
    for (uint32_t i = 0; i < s->index_count[RVI_IX_DIRTY]; i++) {
        s->rows[dirty[i]].dirty = 0;
        s->rows[dirty[i]].pos[RVI_IX_DIRTY] = NONE;
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
    out->incarnation = row->incarnation;
    out->generation = row->generation;
    out->projection = row->projection;
    out->node.id = row->node;
    out->dirty = row->dirty;
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
    m.table_bytes = (uint64_t)s->capacity * sizeof(rvi_projection_row) + map_bytes(&s->key_lookup);
    for (int i = 0; i < RVI_IX_COUNT; i++)
        m.index_bytes[i + 1] = (uint64_t)s->capacity * sizeof(uint32_t);
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

static void absorb_row(digest_state *d, const rvi_projection_row *row)
{
    const rv_projection *p = &row->projection;
    const rv_projection_transform *t = &p->transform;
    absorb(d, row->key);
    absorb(d, (uint64_t)row->incarnation | (uint64_t)row->generation << 32);
    absorb(d, (uint64_t)p->bucket.projection_class | (uint64_t)p->flags << 8 | (uint64_t)t->bounds_space << 40);
    absorb(d, p->bucket.cell);
    absorb(d, p->bucket.parent_key);
    absorb(d, p->appearance.mesh);
    absorb(d, p->appearance.material_variant);
    absorb(d, float_pair(t->position[0], t->position[1]));
    absorb(d, float_pair(t->position[2], t->rotation[0]));
    absorb(d, float_pair(t->rotation[1], t->rotation[2]));
    absorb(d, float_pair(t->rotation[3], t->scale[0]));
    absorb(d, float_pair(t->scale[1], t->scale[2]));
    absorb(d, float_pair(t->bounds[0], t->bounds[1]));
    absorb(d, float_pair(t->bounds[2], t->bounds[3]));
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
        absorb_row(&d, &s->rows[sorted[i].slot]);
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
