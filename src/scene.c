/* Scene-node hierarchy: storage, links, create/destroy/attach, setters and getters
 * (docs/design.md §2). rv_update_world and the bounds math live in scene_update.c. */
#include "scene.h"
#include "core/prefetch.h"
#include "world.h"
#include "core/check.h"

#include <float.h>
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

/* Allocates local_linear at the scene's capacity the first time a node takes a matrix;
 * scene_grow carries it from then on. Nothing changes on failure. */
static rv_result enable_local_linear(rvi_scene *s, rvi_heap *heap)
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

/* Common entry check: world present, handle live, no visit running when structural. */
static rv_result resolve(const rv_world *world, rv_node node, uint32_t *out)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    return rvi_node_index(&world->scene, node, out);
}

/* A projection-backed node takes its transform and bounds from its projection: the host's
 * setters are refused (the render scene writes them with projection_writes set). */
static rv_result host_may_move(const rvi_scene *s, uint32_t i)
{
    return (s->flags[i] & RVI_NODE_PROJECTION) && !s->projection_writes ? RV_ERR_BAD_STATE : RV_OK;
}

rv_result rv_node_create(rv_world *world, rv_node parent, rv_node *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t p = NONE;
    if (parent.id != 0)
        RVI_TRY(rvi_node_index(s, parent, &p));
    RVI_TRY(rvi_scene_reserve(s, &world->heap, 1));
    uint32_t i = rvi_scene_create_reserved(s, p);
    *out = rvi_node_handle(s, i);
    return RV_OK;
}

rv_result rv_node_destroy_subtree(rv_world *world, rv_node node)
{
    uint32_t r;
    RVI_TRY(resolve(world, node, &r));
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
    RVI_TRY(resolve(world, node, &i));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    /* A projection's node under it (an equipped child) would keep its transform relative
     * to the body as a root's: its render scene places it, so the host may not move it. */
    for (uint32_t c = s->first_child[i]; c != NONE; c = s->next_sibling[c])
        RVI_TRY(host_may_move(s, c));
    while (s->first_child[i] != NONE)
        rvi_scene_relink(s, NONE, s->first_child[i], false);
    unlink_node(s, i);
    free_slot(world, i);
    return RV_OK;
}

rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child)
{
    uint32_t p, c;
    RVI_TRY(resolve(world, parent, &p));
    RVI_TRY(resolve(world, child, &c));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    RVI_TRY(host_may_move(s, c)); /* a projection's node: its render scene places it */
    /* Refuse a cycle now: parent must not be child or one of its descendants. */
    for (uint32_t a = p; a != NONE; a = s->parent[a])
        if (a == c)
            return RV_ERR_CYCLE;
    if (s->parent[c] == p)
        return RV_OK;
    rvi_scene_relink(s, p, c, false);
    return RV_OK;
}

rv_result rv_node_detach(rv_world *world, rv_node node)
{
    uint32_t i;
    RVI_TRY(resolve(world, node, &i));
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    RVI_TRY(host_may_move(s, i));
    if (s->parent[i] == NONE)
        return RV_OK;
    rvi_scene_relink(s, NONE, i, false);
    return RV_OK;
}

/* ---- public: transform --------------------------------------------------------------- */

rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3])
{
    uint32_t i;
    if (!position)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(position, 3))
        return RV_ERR_NOT_FINITE;
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    memcpy(s->position[i], position, 12);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

static void decompose_linear(const float a[9], float q[4], float scale[3]);

/* A setter returns a node holding a matrix to a rotation and scale: the matrix's own, read
 * again from it (the slots may hold what the host wrote through pointers fetched before the
 * node took the matrix, which are ignored while it holds one), before the setter changes
 * its part. */
static void leave_matrix(rvi_scene *s, uint32_t i)
{
    if (!(s->flags[i] & RVI_NODE_LOCAL_MATRIX))
        return;
    decompose_linear(s->local_linear[i], s->rotation[i], s->scale[i]);
    s->flags[i] &= ~(uint32_t)RVI_NODE_LOCAL_MATRIX;
}

rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3])
{
    uint32_t i;
    if (!scale)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(scale, 3))
        return RV_ERR_NOT_FINITE;
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->scale[i], scale, 12);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

/* Normalises q (finite, with a normal component, so n2 > 0) into out, in double precision
 * so tiny quaternions survive. */
static void normalise_quat(const float q[4], float out[4])
{
    double n2 = (double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3];
    double inv = 1.0 / sqrt(n2);
    for (int k = 0; k < 4; k++)
        out[k] = (float)(q[k] * inv);
}

rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4])
{
    uint32_t i;
    if (!quaternion)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(quaternion, 4))
        return RV_ERR_NOT_FINITE;
    if (rvi_negligible_n(quaternion, 4))
        return RV_ERR_INVALID_ARG;
    float q[4];
    normalise_quat(quaternion, q);
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->rotation[i], q, 16);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_set_rotation_axis_angle(rv_world *world, rv_node node, const float axis[3], float radians)
{
    uint32_t i;
    if (!axis)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(axis, 3) || !isfinite(radians))
        return RV_ERR_NOT_FINITE;
    if (rvi_negligible_n(axis, 3))
        return RV_ERR_INVALID_ARG;
    double len = sqrt((double)axis[0] * axis[0] + (double)axis[1] * axis[1] + (double)axis[2] * axis[2]); /* > 0 */
    double half = 0.5 * (double)radians, k = sin(half) / len;
    float q[4] = { (float)(axis[0] * k), (float)(axis[1] * k), (float)(axis[2] * k), (float)cos(half) };
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->rotation[i], q, 16);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

/* A rotation (quaternion x, y, z, w, unit) and signed scales whose product is the linear
 * part a (column-major 3 x 3): exact up to rounding when a's columns are orthogonal; under
 * shear the columns' directions are taken as they are and the quaternion normalised, an
 * approximation (the node's transform stays the matrix itself). A zero column takes its
 * direction from the other two; with fewer than two nonzero columns the rotation is the
 * identity. */
static void decompose_linear(const float a[9], float q[4], float scale[3])
{
    double e[3][3], len[3];
    int nonzero = 0;
    for (int c = 0; c < 3; c++) {
        len[c] = sqrt((double)a[c * 3] * a[c * 3] + (double)a[c * 3 + 1] * a[c * 3 + 1] +
                      (double)a[c * 3 + 2] * a[c * 3 + 2]);
        for (int r = 0; r < 3; r++)
            e[c][r] = len[c] > 0.0 ? a[c * 3 + r] / len[c] : 0.0;
        nonzero += len[c] > 0.0;
    }
    double det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) - e[1][0] * (e[0][1] * e[2][2] - e[0][2] * e[2][1]) +
                 e[2][0] * (e[0][1] * e[1][2] - e[0][2] * e[1][1]);
    if (det < 0.0) { /* a mirror: the x axis takes the sign, as a negative x scale would */
        len[0] = -len[0];
        for (int r = 0; r < 3; r++)
            e[0][r] = -e[0][r];
    }
    if (nonzero == 2) {
        int k = len[0] == 0.0 ? 0 : len[1] == 0.0 ? 1 : 2, u = (k + 1) % 3, v = (k + 2) % 3;
        double x[3] = { e[u][1] * e[v][2] - e[u][2] * e[v][1], e[u][2] * e[v][0] - e[u][0] * e[v][2],
                        e[u][0] * e[v][1] - e[u][1] * e[v][0] };
        double n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        nonzero = n > 0.0 ? 3 : 0;
        for (int r = 0; r < 3; r++)
            e[k][r] = n > 0.0 ? x[r] / n : 0.0;
    }
    double w = 1.0, x = 0.0, y = 0.0, z = 0.0;
    if (nonzero == 3) { /* Shepperd's method on m[row][col] = e[col][row] */
        double m00 = e[0][0], m11 = e[1][1], m22 = e[2][2], t = m00 + m11 + m22;
        if (t > 0.0) {
            double k = 2.0 * sqrt(t + 1.0);
            w = 0.25 * k, x = (e[1][2] - e[2][1]) / k, y = (e[2][0] - e[0][2]) / k, z = (e[0][1] - e[1][0]) / k;
        } else if (m00 > m11 && m00 > m22) {
            double k = 2.0 * sqrt(1.0 + m00 - m11 - m22);
            w = (e[1][2] - e[2][1]) / k, x = 0.25 * k, y = (e[1][0] + e[0][1]) / k, z = (e[2][0] + e[0][2]) / k;
        } else if (m11 > m22) {
            double k = 2.0 * sqrt(1.0 + m11 - m00 - m22);
            w = (e[2][0] - e[0][2]) / k, x = (e[1][0] + e[0][1]) / k, y = 0.25 * k, z = (e[2][1] + e[1][2]) / k;
        } else {
            double k = 2.0 * sqrt(1.0 + m22 - m00 - m11);
            w = (e[0][1] - e[1][0]) / k, x = (e[2][0] + e[0][2]) / k, y = (e[2][1] + e[1][2]) / k, z = 0.25 * k;
        }
        double n = sqrt(w * w + x * x + y * y + z * z);
        if (n > 0.0 && isfinite(n))
            w /= n, x /= n, y /= n, z /= n;
        else
            w = 1.0, x = y = z = 0.0;
    }
    q[0] = (float)x, q[1] = (float)y, q[2] = (float)z, q[3] = (float)w;
    for (int c = 0; c < 3; c++) /* a column longer than FLT_MAX reads as FLT_MAX: the scale
                                   setters' own range, so a rotation set later composes */
        scale[c] = (float)(len[c] > FLT_MAX ? FLT_MAX : len[c] < -FLT_MAX ? -FLT_MAX : len[c]);
}

rv_result rv_node_set_local_matrix(rv_world *world, rv_node node, const float matrix[16])
{
    uint32_t i;
    if (!matrix)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(matrix, 16))
        return RV_ERR_NOT_FINITE;
    if (matrix[3] != 0.0f || matrix[7] != 0.0f || matrix[11] != 0.0f || matrix[15] != 1.0f)
        return RV_ERR_INVALID_ARG; /* not affine */
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    RVI_TRY(enable_local_linear(s, &world->heap));
    float *a = s->local_linear[i];
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            a[c * 3 + r] = matrix[c * 4 + r];
    memcpy(s->position[i], &matrix[12], 12);
    decompose_linear(a, s->rotation[i], s->scale[i]);
    s->flags[i] |= RVI_NODE_LOCAL_MATRIX;
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_get_local_matrix(const rv_world *world, rv_node node, float out[16])
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    float l[12];
    rvi_scene_local_affine(&world->scene, i, l);
    for (int c = 0; c < 4; c++) {
        memcpy(&out[c * 4], &l[c * 3], 12);
        out[c * 4 + 3] = c == 3 ? 1.0f : 0.0f;
    }
    return RV_OK;
}

rv_result rv_node_get_transform(const rv_world *world, rv_node node, float position[3],
                                float quaternion[4], float scale[3])
{
    uint32_t i;
    RVI_TRY(resolve(world, node, &i));
    const rvi_scene *s = &world->scene;
    float q[4], sc[3];
    memcpy(q, s->rotation[i], 16);
    memcpy(sc, s->scale[i], 12);
    if (s->flags[i] & RVI_NODE_LOCAL_MATRIX) /* the matrix's, whatever the slots hold */
        decompose_linear(s->local_linear[i], q, sc);
    if (position)
        memcpy(position, s->position[i], 12);
    if (quaternion)
        memcpy(quaternion, q, 16);
    if (scale)
        memcpy(scale, sc, 12);
    return RV_OK;
}

rv_result rv_node_transform_ptrs(rv_world *world, rv_node node, float **position,
                                 float **quaternion, float **scale)
{
    uint32_t i;
    RVI_TRY(resolve(world, node, &i));
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
    if ((quaternion || scale) && (s->flags[i] & RVI_NODE_LOCAL_MATRIX))
        return RV_ERR_BAD_STATE; /* the node's rotation and scale are its matrix's */
    if (position)
        *position = s->position[i];
    if (quaternion)
        *quaternion = s->rotation[i];
    if (scale)
        *scale = s->scale[i];
    return RV_OK;
}

rv_result rv_node_mark_moved(rv_world *world, rv_node node)
{
    uint32_t i;
    RVI_TRY(resolve(world, node, &i));
    rvi_scene_mark(&world->scene, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_set_bounds(rv_world *world, rv_node node, const float center[3], float radius)
{
    uint32_t i;
    if (!center)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    if (!rvi_finite_n(center, 3) || !isfinite(radius))
        return RV_ERR_NOT_FINITE;
    rvi_scene *s = &world->scene;
    RVI_TRY(host_may_move(s, i));
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
    RVI_TRY(resolve(world, node, &i));
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
    RVI_TRY(resolve(world, node, &i));
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
    RVI_TRY(resolve(world, node, &i));
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
    RVI_TRY(resolve(world, node, &i));
    *out_key = world->scene.key[i];
    return RV_OK;
}

/* ---- public: queries ----------------------------------------------------------------- */

rv_result rv_node_world_matrix(const rv_world *world, rv_node node, float out[16])
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    memcpy(out, world->scene.world_matrix[i], 64);
    return RV_OK;
}

rv_result rv_node_world_bounds(const rv_world *world, rv_node node, float out_sphere[4])
{
    uint32_t i;
    if (!out_sphere)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
    memcpy(out_sphere, world->scene.world_sphere[i], 16);
    return RV_OK;
}

static rv_result link_query(const rv_world *world, rv_node node, const uint32_t *links, rv_node *out)
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(resolve(world, node, &i));
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
