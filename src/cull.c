/* The hierarchy walk (docs/design.md §2), shared by every caller (cull.h), and its public
 * forms rv_visit_visible and rv_collect_visible.
 *
 * Depth first, pre-order, children in their attach order, with an explicit stack of one
 * entry per level (the sibling the level is at), so any depth works. Leaves, the bulk of a
 * scene, are taken in a tight loop along their sibling list without a trip through the
 * stack. */
#include "cull.h"
#include "world.h"
#include "frustum.h"
#include "core/check.h"


#include <math.h>

#define NONE RVI_INDEX_NONE
#define INDEX_BITS 0x00FFFFFFu /* slot indices are < 2^24 (RVI_POOL_MAX_SLOTS) */

static inline uint32_t pack(uint32_t index, uint32_t mask) { return index | (mask << 24); }

/* ---- test boxes ------------------------------------------------------------------------ */

void rvi_box_to_world(const float m[16], const float mn[3], const float mx[3], float out_min[3], float out_max[3])
{
    for (int r = 0; r < 3; r++) {
        float lo = m[12 + r], hi = m[12 + r];
        for (int c = 0; c < 3; c++) {
            float a = m[c * 4 + r] * mn[c], b = m[c * 4 + r] * mx[c];
            lo += a < b ? a : b;
            hi += a < b ? b : a;
        }
        out_min[r] = lo;
        out_max[r] = hi;
    }
}

bool rvi_walk_test_box_outside(const rvi_walk_policy *p, uint32_t i)
{
    const rvi_node_box *b = rvi_node_table_find(p->test_boxes, sizeof *b, i);
    if (!b)
        return false;
    const rvi_scene *sc = p->scene;
    /* An unbounded sphere: the node, or one below it, has an unknown placement (its matrix
     * is stale, RVI_NODE_STALE) and the box under this matrix says nothing about it. */
    if (!(sc->world_sphere[i][3] < INFINITY))
        return false;
    const float *m = sc->world_matrix[i];
    float wmin[3], wmax[3];
    rvi_box_to_world(m, b->min, b->max, wmin, wmax);
    /* Widened by the float rounding of the transform, so that it encloses the exact image:
     * a cull by it must stay conservative. */
    for (int r = 0; r < 3; r++) {
        float mag = fabsf(m[12 + r]);
        for (int c = 0; c < 3; c++)
            mag += fabsf(m[c * 4 + r]) * (fabsf(b->min[c]) > fabsf(b->max[c]) ? fabsf(b->min[c]) : fabsf(b->max[c]));
        float pad = mag * 1e-6f + 1e-30f;
        wmin[r] -= pad;
        wmax[r] += pad;
    }
    return rv_frustum_classify_box(p->frustum, wmin, wmax) == RV_OUTSIDE;
}

/* ---- one node ------------------------------------------------------------------------------ */

/* Everything the walk decides about node i, entered with *mask and *weight: the policy's
 * tests, then the hooks. On RVI_WALK_DESCEND *mask and *weight are what its children get. */
static inline __attribute__((always_inline)) rvi_walk_action visit(const rvi_walk_policy *p, void *user, uint32_t i,
                                                                   uint32_t *mask, float *weight, rvi_walk_counts *c)
{
    const rvi_scene *sc = p->scene;
    uint32_t flags = sc->flags[i];
    if (flags & p->defer_flags) {
        p->defer(user, i, 0, *mask, *weight);
        return RVI_WALK_SKIP;
    }
    c->visited++;
    if (p->hidden_prunes && (flags & RVI_NODE_HIDDEN)) {
        if (p->record_culls)
            p->culled(user, i, RV_CULL_HIDDEN);
        return RVI_WALK_SKIP;
    }
    const float *ws = sc->world_sphere[i];
    if (ws[3] < 0.0f) {
        c->empty++;
        return RVI_WALK_SKIP;
    }
    if (*mask) {
        c->tested++;
        bool padded = (flags & p->pad_flags) != 0;
        bool outside = rvi_classify_sphere_masked(p->frustum, ws, padded ? ws[3] + p->pad : ws[3], mask) == RV_OUTSIDE;
        /* A sphere straddling a plane: its test box may still lie outside. */
        if (!outside && *mask && p->test_boxes && (flags & RVI_NODE_HAS_TEST_BOX) && !padded)
            outside = rvi_walk_test_box_outside(p, i);
        if (outside) {
            c->outside++;
            if (p->record_culls || (flags & p->culled_flags))
                p->culled(user, i, RV_CULL_FRUSTUM);
            return RVI_WALK_SKIP;
        }
    }
    if ((flags & p->hook_flags) || (p->hook_parents && sc->first_child[i] != NONE))
        return p->node(user, i, flags, weight);
    if ((flags & (RVI_NODE_HAS_GEOMETRY | RVI_NODE_HIDDEN)) != RVI_NODE_HAS_GEOMETRY)
        return RVI_WALK_DESCEND;
    if (p->own_geometry && *mask && sc->first_child[i] != NONE) {
        /* the subtree's sphere met the frustum; the node's own geometry may not */
        float g[4];
        uint32_t own_mask = *mask;
        rvi_scene_geometry_sphere(sc, i, g);
        c->tested++;
        if (rvi_classify_sphere_masked(p->frustum, g, g[3], &own_mask) == RV_OUTSIDE)
            return RVI_WALK_DESCEND;
    }
    if ((flags & RVI_NODE_HAS_LOD) && p->cutoff_sq && rvi_walk_cut(p, i, ws)) {
        c->cut++;
        if (p->record_culls)
            p->culled(user, i, RV_CULL_LOD_NOTHING);
        return RVI_WALK_DESCEND;
    }
    c->visible++;
    return p->visible(user, i, *weight) ? RVI_WALK_DESCEND : RVI_WALK_STOP;
}

rvi_walk_action rvi_walk_node(const rvi_walk_policy *p, void *user, uint32_t node, uint32_t *mask, float *weight,
                              rvi_walk_counts *counts)
{
    return visit(p, user, node, mask, weight, counts);
}

/* ---- subtrees ------------------------------------------------------------------------------ */

/* True when node i's sphere straddles a plane of mask (it is not outside one). */
static bool straddles(const rvi_walk_policy *p, uint32_t i, uint32_t mask)
{
    uint32_t m = mask;
    const float *ws = p->scene->world_sphere[i];
    return rvi_classify_sphere_masked(p->frustum, ws, ws[3], &m) == RV_INTERSECTING;
}

/* visit() for a leaf (its mask and weight are its own: a leaf passes none on). */
static rvi_walk_action visit_leaf(const rvi_walk_policy *p, void *user, uint32_t i, uint32_t mask, float weight,
                                  rvi_walk_counts *c)
{
    return visit(p, user, i, &mask, &weight, c);
}

/* visit() for a lane of a run, its sphere's verdict given (outside; else the box is tried
 * when the sphere straddles a plane, which only the box test asks again). */
static inline rvi_walk_action visit_lane(const rvi_walk_policy *p, void *user, uint32_t i, uint32_t in_mask,
                                         bool outside, float weight, rvi_walk_counts *c)
{
    uint32_t flags = p->scene->flags[i];
    c->visited++;
    if (in_mask) {
        c->tested++;
        if (!outside && p->test_boxes && (flags & RVI_NODE_HAS_TEST_BOX) && straddles(p, i, in_mask))
            outside = rvi_walk_test_box_outside(p, i);
        if (outside) {
            c->outside++;
            if (p->record_culls || (flags & p->culled_flags))
                p->culled(user, i, RV_CULL_FRUSTUM);
            return RVI_WALK_SKIP;
        }
    }
    if ((flags & (RVI_NODE_HAS_GEOMETRY | RVI_NODE_HIDDEN)) != RVI_NODE_HAS_GEOMETRY)
        return RVI_WALK_DESCEND;
    if ((flags & RVI_NODE_HAS_LOD) && p->cutoff_sq && rvi_walk_cut(p, i, p->scene->world_sphere[i])) {
        c->cut++;
        if (p->record_culls)
            p->culled(user, i, RV_CULL_LOD_NOTHING);
        return RVI_WALK_DESCEND;
    }
    c->visible++;
    return p->visible(user, i, weight) ? RVI_WALK_DESCEND : RVI_WALK_STOP;
}

rvi_walk_action rvi_walk_siblings(const rvi_walk_policy *p, void *user, rvi_walk_stack *stack, uint32_t first,
                                  uint32_t count, uint32_t mask, float weight, const uint32_t *budget,
                                  rvi_walk_counts *counts)
{
    const rvi_scene *sc = p->scene;
    const uint32_t *first_child = sc->first_child, *next_sibling = sc->next_sibling;
    rvi_walk_counts c = *counts;
    rvi_walk_action result = RVI_WALK_DESCEND;
    const int vector = (int)rvi_simd_best_level();
    /* Level 0 is the span [first, count); the stack holds the levels below it. */
    uint32_t at0 = first, left0 = count, depth = 0;
    for (;;) {
        uint32_t i, level_mask;
        float level_weight;
        if (depth == 0) {
            if (at0 == NONE || left0 == 0)
                break;
            i = at0;
            level_mask = mask;
            level_weight = weight;
        } else {
            uint32_t e = stack->entries[depth - 1];
            i = e & INDEX_BITS;
            level_mask = e >> 24;
            level_weight = stack->weights ? stack->weights[depth - 1] : 1.0f;
        }
        /* Leaves along this level, in a loop of their own: no stack traffic per node. */
        while (first_child[i] == NONE) {
            rvi_walk_run run;
            uint32_t in_mask = level_mask & p->frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
            rvi_walk_classify_run(p, vector, in_mask, i, depth == 0 && left0 < RVI_WALK_RUN_MAX ? left0 : RVI_WALK_RUN_MAX,
                         &run);
            uint32_t n = run.n;
            if (n >= RVI_WALK_RUN_MIN && (!budget || *budget >= p->node_cost * n + depth + 2)) {
                /* The pass settled most lanes; the rest are taken up in order. The budget
                 * holds for every lane at once, so no lane yields. */
                c.visited += run.settled;
                c.tested += in_mask ? run.settled : 0;
                c.outside += run.n_outside;
                c.cut += run.n_cut;
                for (uint64_t left = run.visit_lane | run.visit_whole; left; left &= left - 1) {
                    uint32_t j = (uint32_t)__builtin_ctzll(left);
                    rvi_walk_action a;
                    if ((run.visit_whole >> j) & 1)
                        a = visit_leaf(p, user, i + j, level_mask, level_weight, &c);
                    else
                        a = visit_lane(p, user, i + j, in_mask, (run.outside >> j) & 1, level_weight, &c);
                    if (a == RVI_WALK_STOP) {
                        if (depth == 0)
                            left0 -= j + 1;
                        result = RVI_WALK_STOP;
                        goto done;
                    }
                }
                if (depth == 0)
                    left0 -= n;
                i = next_sibling[i + n - 1];
                if (depth == 0 && left0 == 0)
                    i = NONE;
                if (i == NONE)
                    break;
                continue;
            }
            if (budget && *budget < p->node_cost + depth + 2)
                goto yield;
            uint32_t m = level_mask;
            float w = level_weight;
            if (visit(p, user, i, &m, &w, &c) == RVI_WALK_STOP) {
                result = RVI_WALK_STOP;
                goto done;
            }
            i = next_sibling[i];
            if (depth == 0 && --left0 == 0)
                i = NONE;
            if (i == NONE)
                break;
        }
        if (i == NONE) {
            if (depth == 0)
                break;
            depth--;
            continue;
        }
        if (budget && *budget < p->node_cost + depth + 2 +
                                    (p->children_cost && (sc->flags[i] & p->children_cost) ? sc->aux[i].child_count : 0))
            goto yield;
        /* A node with children: visit it, move this level past it, then enter its children
         * (so the level resumes at the next sibling once they are done). */
        uint32_t m = level_mask;
        float w = level_weight;
        rvi_walk_action a = visit(p, user, i, &m, &w, &c);
        if (a == RVI_WALK_STOP) {
            result = RVI_WALK_STOP;
            break;
        }
        uint32_t next = next_sibling[i];
        if (depth == 0) {
            at0 = --left0 == 0 ? NONE : next;
        } else if (next == NONE) {
            depth--;
        } else {
            stack->entries[depth - 1] = pack(next, level_mask);
        }
        if (a != RVI_WALK_DESCEND)
            continue;
        if (depth == stack->capacity || (w != 1.0f && !stack->weights)) {
            stack->overflowed = true;
            if (!p->defer) {
                result = RVI_WALK_STOP;
                break;
            }
            p->defer(user, first_child[i], UINT32_MAX, m, w);
            continue;
        }
        stack->entries[depth] = pack(first_child[i], m);
        if (stack->weights)
            stack->weights[depth] = w;
        depth++;
        continue;
    yield:
        /* Every level's rest, deepest first: this level from i (not yet visited), then each
         * level above from the sibling it resumes at, then level 0's span. */
        p->defer(user, i, depth == 0 ? left0 : UINT32_MAX, level_mask, level_weight);
        if (depth > 0) {
            for (uint32_t d = depth - 1; d-- > 0;) {
                uint32_t e = stack->entries[d];
                p->defer(user, e & INDEX_BITS, UINT32_MAX, e >> 24, stack->weights ? stack->weights[d] : 1.0f);
            }
            if (at0 != NONE && left0 > 0)
                p->defer(user, at0, left0, mask, weight);
        }
        result = RVI_WALK_YIELD;
        break;
    }
done:
    *counts = c;
    return result;
}

/* ---- public -------------------------------------------------------------------------- */

/* Where rv_visit_visible and rv_collect_visible hand visible nodes. */
typedef struct public_sink {
    rv_world *world;
    rv_visit_fn host_fn;
    void *user;
    rv_node *out;
    uint32_t capacity, count;
} public_sink;

static bool to_host(void *user, uint32_t i, float weight)
{
    (void)weight;
    public_sink *k = user;
    const rvi_scene *s = &k->world->scene;
    return k->host_fn(rvi_node_handle(s, i), s->world_matrix[i], k->user);
}

static bool to_array(void *user, uint32_t i, float weight)
{
    (void)weight;
    public_sink *k = user;
    if (k->count < k->capacity)
        k->out[k->count] = rvi_node_handle(&k->world->scene, i);
    k->count++;
    return true;
}

static rv_result public_walk(rv_world *world, rv_node root, const rv_frustum *frustum,
                             bool (*visible)(void *, uint32_t, float), public_sink *k, rv_cull_counts *counts)
{
    if (!world || !frustum)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t r = NONE;
    if (root.id != 0)
        RVI_TRY(rvi_node_index(s, root, &r));
    rvi_walk_policy p = { 0 };
    p.scene = s;
    p.frustum = frustum;
    p.visible = visible;
    p.own_geometry = true;
    /* The scene's scratch holds one entry per slot: deeper than any hierarchy can be. */
    rvi_walk_stack stack = { s->work, NULL, s->capacity, false };
    rvi_walk_counts c = { 0 };
    uint32_t mask = frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    s->visiting = true;
    if (r == NONE)
        rvi_walk_siblings(&p, k, &stack, s->first_root, UINT32_MAX, mask, 1.0f, NULL, &c);
    else
        rvi_walk_siblings(&p, k, &stack, r, 1, mask, 1.0f, NULL, &c);
    s->visiting = false;
    if (counts) {
        rv_cull_counts out = { c.visited, c.outside + c.empty, c.tested, c.visible };
        *counts = out;
    }
    return RV_OK;
}

rv_result rv_visit_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                           rv_visit_fn callback, void *user, rv_cull_counts *counts)
{
    if (!callback)
        return RV_ERR_INVALID_ARG;
    public_sink k = { world, callback, user, NULL, 0, 0 };
    return public_walk(world, root, frustum, to_host, &k, counts);
}

rv_result rv_collect_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                             rv_node *out_nodes, uint32_t capacity, uint32_t *out_count,
                             rv_cull_counts *counts)
{
    if (!out_count || (!out_nodes && capacity > 0))
        return RV_ERR_INVALID_ARG;
    public_sink k = { world, NULL, NULL, out_nodes, capacity, 0 };
    RVI_TRY(public_walk(world, root, frustum, to_array, &k, counts));
    *out_count = k.count;
    return k.count > capacity ? RV_ERR_CAPACITY : RV_OK;
}
