/* Hierarchical frustum culling over the node hierarchy (docs/design.md §2).
 *
 * Depth-first, pre-order, children in their attach order, with an explicit stack (the
 * scene's per-slot scratch array, so any depth works and nothing is allocated). A node's
 * world sphere encloses its whole subtree, so a sphere outside one plane prunes the
 * subtree in one test; a sphere wholly inside a plane clears that plane from the mask its
 * children inherit (plane masking, Assarsson & Möller 2000), and a subtree inside every
 * plane is enumerated with no test at all. */
#include "cull.h"
#include "world.h"
#include "frustum.h"
#include "core/check.h"

#define NONE RVI_INDEX_NONE
#define INDEX_BITS 0x00FFFFFFu /* slot indices are < 2^24 (RVI_POOL_MAX_SLOTS) */

static inline uint32_t pack(uint32_t index, uint32_t mask) { return index | (mask << 24); }

/* Where visible nodes go: the host's callback, an array of handles, or (inside rvis) an
 * index visitor. One walk serves all three; the branch on kind is perfectly predicted. */
typedef enum sink_kind { SINK_INDEX, SINK_HOST, SINK_ARRAY } sink_kind;

typedef struct sink {
    sink_kind kind;
    rvi_visit_index_fn index_fn;
    rv_visit_fn host_fn;
    void *user;
    rv_node *out;
    uint32_t capacity, count;
} sink;

/* Hands node i (its handle and world matrix given) out to a receiver of the given kind;
 * false when the receiver stops the walk. With a constant kind (emit_subtree_as) the switch
 * folds away. */
static inline __attribute__((always_inline)) bool emit_as(rvi_scene *s, uint32_t i, rv_node handle,
                                                          const float *matrix, sink *k, sink_kind kind)
{
    switch (kind) {
    case SINK_ARRAY:
        if (k->count < k->capacity)
            k->out[k->count] = handle;
        k->count++;
        return true;
    case SINK_HOST:
        k->count++;
        return k->host_fn(handle, matrix, k->user);
    case SINK_INDEX:
        break;
    }
    k->count++;
    return k->index_fn(s, i, k->user);
}

static inline bool emit(rvi_scene *s, uint32_t i, sink *k)
{
    return emit_as(s, i, rvi_node_handle(s, i), s->world_matrix[i], k, k->kind);
}

static inline bool drawable(uint32_t flags)
{
    return (flags & (RVI_NODE_HAS_GEOMETRY | RVI_NODE_HIDDEN)) == RVI_NODE_HAS_GEOMETRY;
}

/* Hands out every drawable node of the subtree of r (all inside the frustum). False when
 * the receiver stopped the walk. Follows the links; no stack. Most visible nodes of a
 * frame come out here, so the receiver's kind is a constant (one copy per kind, chosen once
 * per subtree) and the arrays are read through locals: a receiver cannot create or destroy
 * nodes during a walk (s->visiting), so they do not move. */
static inline __attribute__((always_inline)) bool emit_subtree_as(rvi_scene *s, uint32_t r, sink *k,
                                                                  uint32_t *visited, sink_kind kind)
{
    const uint32_t *first_child = s->first_child, *next_sibling = s->next_sibling, *parent = s->parent;
    const uint32_t *flags = s->flags, *generation = s->pool.generation;
    const uint16_t tag = s->pool.tag;
    float(*world_matrix)[16] = s->world_matrix;
    uint32_t n = r, seen = 0;
    bool go = true;
    for (;;) {
        seen++;
        if (drawable(flags[n]) && !emit_as(s, n, rvi_node_handle_of(tag, generation, n), world_matrix[n], k, kind)) {
            go = false;
            break;
        }
        if (first_child[n] != NONE) {
            n = first_child[n];
            continue;
        }
        while (n != r && next_sibling[n] == NONE)
            n = parent[n];
        if (n == r)
            break;
        n = next_sibling[n];
    }
    *visited += seen;
    return go;
}

static bool emit_subtree(rvi_scene *s, uint32_t r, sink *k, uint32_t *visited)
{
    switch (k->kind) {
    case SINK_HOST: return emit_subtree_as(s, r, k, visited, SINK_HOST);
    case SINK_ARRAY: return emit_subtree_as(s, r, k, visited, SINK_ARRAY);
    case SINK_INDEX: break;
    }
    return emit_subtree_as(s, r, k, visited, SINK_INDEX);
}

/* Pushes the siblings from `from` to `last` so `from` pops first. */
static uint32_t push_siblings(rvi_scene *s, uint32_t from, uint32_t last, uint32_t mask, uint32_t top)
{
    for (uint32_t c = last;; c = s->prev_sibling[c]) {
        s->work[top++] = pack(c, mask);
        if (c == from)
            return top;
    }
}

/* Pushes the children of a node (first = its first child, or the first root) so the first
 * pops first. */
static uint32_t push_children(rvi_scene *s, uint32_t first, uint32_t mask, uint32_t top)
{
    return first == NONE ? top : push_siblings(s, first, s->prev_sibling[first], mask, top); /* prev of the first: the last */
}

static void walk(rvi_scene *s, uint32_t root, const rv_frustum *frustum, sink *k, rv_cull_counts *counts)
{
    rv_cull_counts c = {0};
    uint32_t all = frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    uint32_t top = 0;
    s->visiting = true;
    if (root == NONE)
        top = push_children(s, s->first_root, all, 0);
    else
        s->work[top++] = pack(root, all);
    while (top > 0) {
        uint32_t e = s->work[--top];
        uint32_t i = e & INDEX_BITS, mask = e >> 24;
        const float *ws = s->world_sphere[i];
        if (ws[3] < 0.0f) {
            /* nothing in this subtree has geometry: nothing to hand out */
            c.visited++;
            c.pruned++;
            continue;
        }
        if (mask) {
            c.tested++;
            if (rvi_classify_sphere_masked(frustum, ws, ws[3], &mask) == RV_OUTSIDE) {
                c.visited++;
                c.pruned++;
                continue;
            }
        }
        if (mask == 0) {
            if (!emit_subtree(s, i, k, &c.visited))
                break;
            continue;
        }
        c.visited++;
        if (drawable(s->flags[i])) {
            bool show = true;
            if (s->first_child[i] != NONE) {
                /* the subtree's sphere met the frustum; the node's own geometry may not */
                float g[4];
                uint32_t own_mask = mask;
                rvi_scene_geometry_sphere(s, i, g);
                c.tested++;
                show = rvi_classify_sphere_masked(frustum, g, g[3], &own_mask) != RV_OUTSIDE;
            }
            if (show && !emit(s, i, k))
                break;
        }
        /* Children without children of their own are tested and handed out here, in attach
         * order, without a trip through the stack (what a popped leaf would do, in the same
         * order and with the same counts). At the first child that has children, it and the
         * siblings after it are pushed, so the walk stays pre-order. */
        uint32_t first = s->first_child[i], ch = first;
        bool go = true;
        while (ch != NONE && s->first_child[ch] == NONE) {
            const float *cs = s->world_sphere[ch];
            uint32_t cmask = mask;
            c.visited++;
            if (cs[3] < 0.0f || (c.tested++, rvi_classify_sphere_masked(frustum, cs, cs[3], &cmask) == RV_OUTSIDE)) {
                c.pruned++;
            } else if (drawable(s->flags[ch]) && !emit(s, ch, k)) {
                go = false;
                break;
            }
            ch = s->next_sibling[ch];
        }
        if (!go)
            break;
        if (ch != NONE)
            top = push_siblings(s, ch, s->prev_sibling[first], mask, top);
    }
    s->visiting = false;
    c.visible = k->count;
    if (counts)
        *counts = c;
}

void rvi_cull_walk(rvi_scene *s, uint32_t root, const rv_frustum *frustum,
                   rvi_visit_index_fn fn, void *user, rv_cull_counts *counts)
{
    sink k = { .kind = SINK_INDEX, .index_fn = fn, .user = user };
    walk(s, root, frustum, &k, counts);
}

/* ---- public -------------------------------------------------------------------------- */

static rv_result begin_walk(rv_world *world, rv_node root, const rv_frustum *frustum, uint32_t *out_root)
{
    if (!world || !frustum)
        return RV_ERR_INVALID_ARG;
    if (world->scene.visiting)
        return RV_ERR_BAD_STATE;
    *out_root = NONE;
    if (root.id != 0)
        RVI_TRY(rvi_node_index(&world->scene, root, out_root));
    return RV_OK;
}

rv_result rv_visit_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                           rv_visit_fn callback, void *user, rv_cull_counts *counts)
{
    uint32_t r;
    if (!callback)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(begin_walk(world, root, frustum, &r));
    sink k = { .kind = SINK_HOST, .host_fn = callback, .user = user };
    walk(&world->scene, r, frustum, &k, counts);
    return RV_OK;
}

rv_result rv_collect_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                             rv_node *out_nodes, uint32_t capacity, uint32_t *out_count,
                             rv_cull_counts *counts)
{
    uint32_t r;
    if (!out_count || (!out_nodes && capacity > 0))
        return RV_ERR_INVALID_ARG;
    RVI_TRY(begin_walk(world, root, frustum, &r));
    sink k = { .kind = SINK_ARRAY, .out = out_nodes, .capacity = capacity };
    walk(&world->scene, r, frustum, &k, counts);
    *out_count = k.count;
    return k.count > capacity ? RV_ERR_CAPACITY : RV_OK;
}
