/* Scene-node hierarchy: storage, links, create/destroy/attach, bounds, flags and keys, the
 * getters (docs/design.md §2). The transform setters live in scene_transform.c,
 * rv_update_world and the bounds math in scene_update.c. */
#include "scene.h"
#include "core/prefetch.h"
#include "world.h"
#include "core/check.h"

#include <string.h>

#define NONE RVI_INDEX_NONE

/* ---- storage ------------------------------------------------------------------------- */

typedef struct scene_array {
    void **ptr;
    size_t elem;
    int fill;   /* the byte slots never used are filled with: 0xFF for links (NONE), else 0 */
} scene_array;

/* Every per-node array, in one place so growth and teardown cannot disagree. Each array
 * starts on a cache line (a world matrix is then one line, not two). */
static int scene_arrays(rvi_scene *s, scene_array out[])
{
    int n = 0;
    out[n++] = (scene_array){ (void **)&s->parent, 4, 0xFF };
    out[n++] = (scene_array){ (void **)&s->first_child, 4, 0xFF };
    out[n++] = (scene_array){ (void **)&s->next_sibling, 4, 0xFF };
    out[n++] = (scene_array){ (void **)&s->prev_sibling, 4, 0xFF };
    out[n++] = (scene_array){ (void **)&s->flags, 4, 0 };
    out[n++] = (scene_array){ (void **)&s->position, 12, 0 };
    out[n++] = (scene_array){ (void **)&s->rotation, 16, 0 };
    out[n++] = (scene_array){ (void **)&s->scale, 12, 0 };
    out[n++] = (scene_array){ (void **)&s->world_matrix, 64, 0 };
    out[n++] = (scene_array){ (void **)&s->local_sphere, 16, 0 };
    out[n++] = (scene_array){ (void **)&s->world_sphere, 16, 0 };
    out[n++] = (scene_array){ (void **)&s->key, 8, 0 };
    out[n++] = (scene_array){ (void **)&s->aux, sizeof(rvi_node_aux), 0 };
    out[n++] = (scene_array){ (void **)&s->dirty, 4, 0 };
    out[n++] = (scene_array){ (void **)&s->work, 4, 0 };
    if (s->local_linear) /* last: only once a node took a matrix (enable_local_linear) */
        out[n++] = (scene_array){ (void **)&s->local_linear, sizeof s->local_linear[0], 0 };
    return n;
}
enum { LINE = 64 };

static size_t block_size(uint32_t capacity, size_t elem)
{
    return (size_t)capacity * elem + LINE;
}

static void *line_aligned(void *block)
{
    return (void *)(((uintptr_t)block + LINE - 1) & ~(uintptr_t)(LINE - 1));
}

/* Grows every per-node array to capacity. All-or-nothing: on failure nothing changes. */
static rv_result scene_grow(rvi_scene *s, rvi_heap *heap, uint32_t capacity)
{
    scene_array arrays[RVI_SCENE_ARRAYS];
    int n = scene_arrays(s, arrays);
    void *fresh[RVI_SCENE_ARRAYS];
    for (int i = 0; i < n; i++) {
        fresh[i] = rvi_alloc(heap, block_size(capacity, arrays[i].elem));
        if (!fresh[i]) {
            for (int j = 0; j < i; j++)
                rvi_free(heap, fresh[j], block_size(capacity, arrays[j].elem));
            return RV_ERR_OUT_OF_MEMORY;
        }
    }
    rvi_pool grown = s->pool;
    /* The pool grows last so a pool failure can still roll back the arrays. */
    rv_result r = rvi_pool_reserve(heap, &grown, capacity);
    if (r != RV_OK) {
        for (int j = 0; j < n; j++)
            rvi_free(heap, fresh[j], block_size(capacity, arrays[j].elem));
        return r;
    }
    for (int i = 0; i < n; i++) {
        void *aligned = line_aligned(fresh[i]);
        if (s->capacity) {
            memcpy(aligned, *arrays[i].ptr, (size_t)s->capacity * arrays[i].elem);
            rvi_free(heap, s->blocks[i], block_size(s->capacity, arrays[i].elem));
        }
        /* Slots never used hold defined values: the walk may look one run ahead at a
         * slot's links before knowing it is a sibling (links NONE, everything else 0). */
        memset((char *)aligned + (size_t)s->capacity * arrays[i].elem, arrays[i].fill,
               (size_t)(capacity - s->capacity) * arrays[i].elem);
        s->blocks[i] = fresh[i];
        *arrays[i].ptr = aligned;
    }
    s->pool = grown;
    s->capacity = capacity;
    return RV_OK;
}

rv_result rvi_scene_init(rvi_scene *scene, rvi_heap *heap, uint32_t capacity, uint16_t tag)
{
    memset(scene, 0, sizeof *scene);
    rvi_pool_init(&scene->pool, tag);
    scene->first_root = NONE;
    scene->prefetchw = rvi_cpu_has_prefetchw();
    rv_result r = scene_grow(scene, heap, capacity ? capacity : 1);
    if (r != RV_OK)
        rvi_scene_fini(scene, heap);
    return r;
}

void rvi_scene_fini(rvi_scene *s, rvi_heap *heap)
{
    scene_array arrays[RVI_SCENE_ARRAYS];
    int n = scene_arrays(s, arrays);
    for (int i = 0; i < n && s->capacity; i++)
        rvi_free(heap, s->blocks[i], block_size(s->capacity, arrays[i].elem));
    rvi_pool_free(heap, &s->pool);
    memset(s, 0, sizeof *s);
    s->first_root = NONE;
}

rv_result rvi_scene_enable_local_linear(rvi_scene *s, rvi_heap *heap)
{
    if (s->local_linear)
        return RV_OK;
    size_t elem = sizeof s->local_linear[0];
    void *block = rvi_alloc(heap, block_size(s->capacity, elem));
    if (!block)
        return RV_ERR_OUT_OF_MEMORY;
    memset(line_aligned(block), 0, (size_t)s->capacity * elem);
    s->blocks[RVI_SCENE_ARRAYS - 1] = block;
    s->local_linear = line_aligned(block);
    return RV_OK;
}

/* Slots extra more nodes need beyond the free ones (0: room enough); *out_need the capacity
 * that takes. */
static uint64_t slots_short(const rvi_scene *s, uint32_t extra, uint64_t *out_need)
{
    /* Free slots: never-used ones plus the free list (walked only as far as needed). */
    uint64_t room = s->pool.capacity - s->pool.used;
    for (uint32_t i = s->pool.free_head; room < extra && i != NONE; i = s->pool.next_free[i])
        room++;
    uint64_t short_by = room >= extra ? 0 : extra - room;
    *out_need = (uint64_t)s->capacity + short_by;
    return short_by;
}

rv_result rvi_scene_check_reserve(const rvi_scene *s, uint32_t extra)
{
    uint64_t need;
    return slots_short(s, extra, &need) && need > RVI_POOL_MAX_SLOTS ? RV_ERR_CAPACITY : RV_OK;
}

rv_result rvi_scene_reserve(rvi_scene *s, rvi_heap *heap, uint32_t extra)
{
    uint64_t need;
    if (!slots_short(s, extra, &need))
        return RV_OK;
    if (need > RVI_POOL_MAX_SLOTS)
        return RV_ERR_CAPACITY;
    uint64_t cap = s->capacity ? s->capacity : 1;
    while (cap < need)
        cap *= 2;
    if (cap > RVI_POOL_MAX_SLOTS)
        cap = RVI_POOL_MAX_SLOTS;
    return scene_grow(s, heap, (uint32_t)cap);
}

/* ---- links --------------------------------------------------------------------------- */

/* The head of the sibling list node i belongs to (a parent's first_child or first_root). */
static uint32_t *list_head(rvi_scene *s, uint32_t parent)
{
    return parent == NONE ? &s->first_root : &s->first_child[parent];
}

static void link_last(rvi_scene *s, uint32_t parent, uint32_t i)
{
    s->links_changed++;
    uint32_t *head = list_head(s, parent);
    s->parent[i] = parent;
    s->next_sibling[i] = NONE;
    if (*head == NONE) {
        *head = i;
        s->prev_sibling[i] = i;
    } else {
        uint32_t last = s->prev_sibling[*head];
        s->next_sibling[last] = i;
        s->prev_sibling[i] = last;
        s->prev_sibling[*head] = i;
    }
    if (parent != NONE)
        s->aux[parent].child_count++;
}

static void unlink_node(rvi_scene *s, uint32_t i)
{
    s->links_changed++;
    uint32_t parent = s->parent[i];
    uint32_t *head = list_head(s, parent);
    uint32_t next = s->next_sibling[i], prev = s->prev_sibling[i];
    if (*head == i) {
        *head = next;
        if (next != NONE)
            s->prev_sibling[next] = prev; /* the last sibling */
    } else {
        s->next_sibling[prev] = next;
        if (next != NONE)
            s->prev_sibling[next] = prev;
        else
            s->prev_sibling[*head] = prev; /* i was the last */
    }
    if (parent != NONE) {
        s->aux[parent].child_count--;
        /* A parent that lost a child still encloses the rest: the loss is one loose change
         * (recomputed exactly once as many changes as children accumulated), so losing one
         * of a million children does not merge the other million spheres. A child whose
         * sphere was unbounded (a node of unknown placement below it) had made every
         * ancestor's unbounded too: they all are recomputed exactly. */
        s->aux[parent].loose++;
        rvi_scene_mark(s, parent, RVI_NODE_LOST_CHILD);
        if (!(s->world_sphere[i][3] < INFINITY))
            rvi_scene_force_exact_ancestors(s, parent);
    }
    s->parent[i] = NONE;
    s->next_sibling[i] = NONE;
    s->prev_sibling[i] = i;
}

void rvi_scene_relink(rvi_scene *s, uint32_t parent, uint32_t child, bool keep_world)
{
    unlink_node(s, child);
    link_last(s, parent, child);
    if (!keep_world)
        rvi_scene_mark(s, child, RVI_NODE_MOVED);
}

static const float IDENTITY[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };

uint32_t rvi_scene_create_reserved(rvi_scene *s, uint32_t parent)
{
    uint32_t i, never_used = s->pool.used;
    uint64_t handle;
    rvi_pool_acquire(&s->pool, &i, &handle); /* cannot fail: the caller reserved */
    /* A reused slot may still sit in the dirty list: keep that bit so it is not listed twice.
     * A never-used slot's flags are uninitialised memory. */
    s->flags[i] = i < never_used ? (s->flags[i] & RVI_NODE_LISTED) : 0;
    s->first_child[i] = NONE;
    s->key[i] = 0;
    s->aux[i].child_count = 0;
    s->aux[i].loose = 0;
    memset(s->position[i], 0, sizeof s->position[i]);
    s->rotation[i][0] = s->rotation[i][1] = s->rotation[i][2] = 0.0f;
    s->rotation[i][3] = 1.0f;
    s->scale[i][0] = s->scale[i][1] = s->scale[i][2] = 1.0f;
    /* Until the next update an identity node sits exactly where its parent is. */
    memcpy(s->world_matrix[i], parent == NONE ? IDENTITY : s->world_matrix[parent], 64);
    s->aux[i].world_scale = parent == NONE ? 1.0f : s->aux[parent].world_scale;
    s->local_sphere[i][0] = s->local_sphere[i][1] = s->local_sphere[i][2] = 0.0f;
    s->local_sphere[i][3] = -1.0f;
    memcpy(s->world_sphere[i], &s->world_matrix[i][12], 12);
    s->world_sphere[i][3] = -1.0f;
    /* ... so under a parent whose placement is unknown, its placement is unknown too (a
     * group rv_group_spatially inserts keeps this until its owner composes again). */
    if (parent != NONE && (s->flags[parent] & RVI_NODE_STALE)) {
        s->flags[i] |= RVI_NODE_STALE;
        s->stale_count++;
    }
    link_last(s, parent, i);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return i;
}

/* Frees one slot whose children are already gone or moved away. */
static void free_slot(rv_world *world, uint32_t i)
{
    rvi_scene *s = &world->scene;
    /* Modules drop their per-node state while the node is still readable. */
    rvi_world_notify_node_destroyed(world, i);
    rvi_pool_release(&s->pool, i);
    s->links_changed++;
    s->stale_count -= (s->flags[i] & RVI_NODE_STALE) != 0;
    s->flags[i] &= RVI_NODE_LISTED;
    s->parent[i] = s->first_child[i] = s->next_sibling[i] = NONE;
    s->prev_sibling[i] = i;
    s->aux[i].child_count = 0;
}

/* ---- public: lifetime and links ------------------------------------------------------ */


rv_result rv_node_create(rv_world *world, rv_node parent, rv_node *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t p = NONE;
    if (parent.id != 0) {
        RVI_TRY(rvi_node_index(s, parent, &p));
        RVI_TRY(rvi_scene_host_may_move(s, p)); /* a projection's node: see rv_node_attach */
    }
    RVI_TRY(rvi_scene_reserve(s, &world->heap, 1));
    uint32_t i = rvi_scene_create_reserved(s, p);
    *out = rvi_node_handle(s, i);
    return RV_OK;
}

rv_result rv_node_destroy_subtree(rv_world *world, rv_node node)
{
    uint32_t r;
    RVI_TRY(rvi_world_node(world, node, &r));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    unlink_node(s, r);
    /* Post-order walk over the links, no stack: a node is freed after all its children. */
    uint32_t n = r;
    while (s->first_child[n] != NONE)
        n = s->first_child[n];
    for (;;) {
        if (n == r) {
            free_slot(world, n);
            break;
        }
        uint32_t next = s->next_sibling[n], up = s->parent[n];
        free_slot(world, n);
        if (next != NONE) {
            n = next;
            while (s->first_child[n] != NONE)
                n = s->first_child[n];
        } else {
            n = up; /* every child of up is gone */
        }
    }
    return RV_OK;
}

rv_result rv_node_destroy_reroot(rv_world *world, rv_node node)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    /* A projection's node under it (an equipped child) would keep its transform relative
     * to the body as a root's: its render scene places it, so the host may not move it. */
    for (uint32_t c = s->first_child[i]; c != NONE; c = s->next_sibling[c])
        RVI_TRY(rvi_scene_host_may_move(s, c));
    while (s->first_child[i] != NONE)
        rvi_scene_relink(s, NONE, s->first_child[i], false);
    unlink_node(s, i);
    free_slot(world, i);
    return RV_OK;
}

rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child)
{
    uint32_t p, c;
    RVI_TRY(rvi_world_node(world, parent, &p));
    RVI_TRY(rvi_world_node(world, child, &c));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    /* A projection's node: its render scene places it, and takes nothing of the host's
     * under it (when the projection goes, a host node there would be left a root holding
     * its offset from the body as a world placement). */
    RVI_TRY(rvi_scene_host_may_move(s, c));
    RVI_TRY(rvi_scene_host_may_move(s, p));
    /* Refuse a cycle now: parent must not be child or one of its descendants. */
    for (uint32_t a = p; a != NONE; a = s->parent[a])
        if (a == c)
            return RV_ERR_CYCLE;
    if (s->parent[c] == p)
        return RV_OK;
    rvi_scene_relink(s, p, c, false);
    /* Until the next update the child keeps the world placement that update gave it (a
     * frame begun before the attach culls it there), but a walk follows the new links: the
     * new ancestors' spheres grow to hold it, or a walk through them would pass over it.
     * The update recomputes them. */
    for (uint32_t a = p; a != NONE; a = s->parent[a])
        rvi_sphere_merge(s->world_sphere[a], s->world_sphere[c], s->world_sphere[a]);
    return RV_OK;
}

rv_result rv_node_detach(rv_world *world, rv_node node)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    if (s->parent[i] == NONE)
        return RV_OK;
    rvi_scene_relink(s, NONE, i, false);
    return RV_OK;
}

rv_result rv_node_set_bounds(rv_world *world, rv_node node, const float center[3], float radius)
{
    uint32_t i;
    if (!center)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    if (!rvi_finite_n(center, 3) || !isfinite(radius))
        return RV_ERR_NOT_FINITE;
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    memcpy(s->local_sphere[i], center, 12);
    if (radius < 0.0f) {
        s->local_sphere[i][3] = -1.0f;
        s->flags[i] &= ~(uint32_t)RVI_NODE_HAS_GEOMETRY;
    } else {
        s->local_sphere[i][3] = radius;
        s->flags[i] |= RVI_NODE_HAS_GEOMETRY;
    }
    rvi_scene_mark(s, i, RVI_NODE_BOUNDS_DIRTY);
    s->edits++;
    return RV_OK;
}

/* The node flags the host may set, as scene flags. */
static const struct {
    uint32_t public_bit, scene_bit;
} NODE_FLAGS[] = {
    { RV_NODE_FLAG_HIDDEN, RVI_NODE_HIDDEN },
    { RV_NODE_FLAG_TRANSLUCENT, RVI_NODE_TRANSLUCENT },
};

rv_result rv_node_set_flags(rv_world *world, rv_node node, uint32_t flags)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    rvi_scene *s = &world->scene;
    uint32_t known = 0, bits = 0;
    for (size_t k = 0; k < sizeof NODE_FLAGS / sizeof NODE_FLAGS[0]; k++) {
        known |= NODE_FLAGS[k].public_bit;
        if (flags & NODE_FLAGS[k].public_bit)
            bits |= NODE_FLAGS[k].scene_bit;
    }
    if (flags & ~known)
        return RV_ERR_INVALID_ARG;
    /* A projection's flags are its journal's to set; the walks read flags while a visit
     * callback or the host's parallel_for runs. */
    if ((s->flags[i] & RVI_NODE_PROJECTION) || s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t kept = s->flags[i] & ~(uint32_t)(RVI_NODE_HIDDEN | RVI_NODE_TRANSLUCENT);
    if ((kept | bits) != s->flags[i]) {
        s->flags[i] = kept | bits;
        s->edits++; /* what the frame keeps about subtrees reads these flags */
    }
    return RV_OK;
}

rv_result rv_node_get_flags(const rv_world *world, rv_node node, uint32_t *out_flags)
{
    uint32_t i;
    if (!out_flags)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    uint32_t flags = 0;
    for (size_t k = 0; k < sizeof NODE_FLAGS / sizeof NODE_FLAGS[0]; k++)
        if (world->scene.flags[i] & NODE_FLAGS[k].scene_bit)
            flags |= NODE_FLAGS[k].public_bit;
    *out_flags = flags;
    return RV_OK;
}

rv_result rv_node_set_key(rv_world *world, rv_node node, uint64_t key)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    if (world->scene.flags[i] & RVI_NODE_PROJECTION)
        return RV_ERR_BAD_STATE;
    world->scene.key[i] = key;
    return RV_OK;
}

rv_result rv_node_get_key(const rv_world *world, rv_node node, uint64_t *out_key)
{
    uint32_t i;
    if (!out_key)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    *out_key = world->scene.key[i];
    return RV_OK;
}

/* ---- public: queries ----------------------------------------------------------------- */

rv_result rv_node_world_matrix(const rv_world *world, rv_node node, float out[16])
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    memcpy(out, world->scene.world_matrix[i], 64);
    return RV_OK;
}

rv_result rv_node_world_bounds(const rv_world *world, rv_node node, float out_sphere[4])
{
    uint32_t i;
    if (!out_sphere)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    memcpy(out_sphere, world->scene.world_sphere[i], 16);
    return RV_OK;
}

static rv_result link_query(const rv_world *world, rv_node node, const uint32_t *links, rv_node *out)
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    uint32_t j = links[i];
    *out = j == NONE ? RV_NODE_NONE : rvi_node_handle(&world->scene, j);
    return RV_OK;
}

rv_result rv_node_parent(const rv_world *world, rv_node node, rv_node *out_parent)
{
    return link_query(world, node, world ? world->scene.parent : NULL, out_parent);
}

rv_result rv_node_first_child(const rv_world *world, rv_node node, rv_node *out_child)
{
    return link_query(world, node, world ? world->scene.first_child : NULL, out_child);
}

rv_result rv_node_next_sibling(const rv_world *world, rv_node node, rv_node *out_sibling)
{
    return link_query(world, node, world ? world->scene.next_sibling : NULL, out_sibling);
}

rv_result rv_world_first_root(const rv_world *world, rv_node *out_root)
{
    if (!world || !out_root)
        return RV_ERR_INVALID_ARG;
    uint32_t r = world->scene.first_root;
    *out_root = r == NONE ? RV_NODE_NONE : rvi_node_handle(&world->scene, r);
    return RV_OK;
}

bool rv_node_is_valid(const rv_world *world, rv_node node)
{
    uint32_t i;
    return world && rvi_node_index(&world->scene, node, &i) == RV_OK;
}

rv_scene_stats rv_world_scene_stats(const rv_world *world)
{
    rv_scene_stats st = {0};
    if (!world)
        return st;
    st.nodes = world->scene.pool.live;
    st.matrices_recomputed = world->scene.matrices_recomputed;
    st.bounds_recomputed = world->scene.bounds_recomputed;
    st.transform_stale = world->scene.stale_count;
    return st;
}
