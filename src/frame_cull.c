/* The cull stage of a frame (docs/design.md §8): persistent occluders rasterised (only those
 * whose geometry may be drawn), one hierarchical walk (frustum with plane masks, partition
 * gate, group occlusion, HLOD), batched object occlusion tests, LOD selection. */
#include "frame.h"
#include "core/check.h"
#include "frustum.h"
#include "occlusion.h"
#include "partition.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- cull ------------------------------------------------------------------------------ */

/* World AABB of a local box under an affine matrix (Arvo 1990). */
static void box_to_world(const float m[16], const float mn[3], const float mx[3], float out_min[3], float out_max[3])
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

/* The world box of a node's test box, widened by the float rounding of the transform so
 * that it encloses the exact image: a frustum cull by it must stay conservative. */
static void test_box_world(const float m[16], const float mn[3], const float mx[3], float out_min[3],
                           float out_max[3])
{
    box_to_world(m, mn, mx, out_min, out_max);
    for (int r = 0; r < 3; r++) {
        float mag = fabsf(m[12 + r]);
        for (int c = 0; c < 3; c++)
            mag += fabsf(m[c * 4 + r]) * (fabsf(mn[c]) > fabsf(mx[c]) ? fabsf(mn[c]) : fabsf(mx[c]));
        float pad = mag * 1e-6f + 1e-30f;
        out_min[r] -= pad;
        out_max[r] += pad;
    }
}

/* True when node i has a test box and that box lies wholly outside the frustum: a tighter
 * frustum test than the sphere for walls and floors (the box encloses the node's geometry
 * and its subtree's, rv_node_set_test_box). */
static bool test_box_outside(const rvi_frame *f, const rvi_scene *sc, uint32_t i)
{
    uint32_t at = rvi_node_slots_get(&f->test_box_of, i);
    if (at == UINT32_MAX)
        return false;
    /* An unbounded sphere: the node, or one below it, has an unknown placement (its matrix
     * is stale, RVI_NODE_STALE) and the box under this matrix says nothing about it. */
    if (!(sc->world_sphere[i][3] < INFINITY))
        return false;
    const rvi_node_box *b = &RVI_VEC_AT(f->test_boxes, rvi_node_box, at);
    float wmin[3], wmax[3];
    test_box_world(sc->world_matrix[i], b->min, b->max, wmin, wmax);
    return rv_frustum_classify_box(&f->cam.frustum, wmin, wmax) == RV_OUTSIDE;
}

/* True when an occluder node's own geometry may be drawn this frame: no ancestor (itself
 * included) is flagged hidden or is a partition part the gate hides (padded frustum or
 * slice), and its LOD level is not "nothing". An occluder whose geometry is not
 * drawn must not hide anything: what is behind it is visible. Groups on the way are gated
 * here (a group gated again in the walk keeps its last decision). */
static rv_result occluder_drawable(rv_world *world, rvi_frame *f, rvi_partition *gate, uint32_t node,
                                   uint32_t *last_gated, bool *out)
{
    const rvi_scene *sc = &world->scene;
    *out = false;
    for (uint32_t a = node; a != RVI_INDEX_NONE; a = sc->parent[a]) {
        uint32_t flags = sc->flags[a];
        if (flags & RVI_NODE_HIDDEN)
            return RV_OK;
        if ((flags & RVI_NODE_PARTITION_PART) && gate) {
            uint32_t group = sc->parent[a];
            if (group != RVI_INDEX_NONE && (sc->flags[group] & RVI_NODE_PARTITION_GROUP)) {
                if (*last_gated != group) {
                    rv_result r = rvi_partition_gate_group(world, gate, group, &f->cam.frustum);
                    if (r != RV_OK && r != RV_ERR_NOT_FOUND)
                        return r;
                    *last_gated = group;
                }
                if (rvi_partition_part_hidden(world, gate, a))
                    return RV_OK;
            }
        }
    }
    if (sc->flags[node] & RVI_NODE_HAS_LOD) {
        rv_lod_ladder ladder;
        uint32_t level = 0;
        rv_node h = rvi_node_handle(sc, node);
        if (rv_node_get_lod_ladder(world, h, &ladder) == RV_OK &&
            rv_lod_for_node(world, h, &f->cam.lod_view, &ladder, &level) == RV_OK && level >= ladder.count)
            return RV_OK;
    }
    *out = true;
    return RV_OK;
}

/* Submits every persistent occluder (of any shape) whose world box meets the frustum. An
 * occluder the buffer refuses (a matrix gone non-finite) is skipped, which only draws more;
 * running out of memory is reported. */
static rv_result rasterise_occluder_nodes(rv_world *world, rvi_frame *f)
{
    const rvi_scene *sc = &world->scene;
    rvi_partition *gate = rvi_partition_find(world);
    uint32_t last_gated = RVI_INDEX_NONE;
    /* Room for every persistent occluder at once: a frame that sees more of them than any
     * before must not allocate occluder by occluder (steady frames allocate nothing). */
    uint64_t items = f->occluder_items, vertices = f->occluder_vertices;
    rv_result reserved = items > UINT32_MAX || vertices > UINT32_MAX
                             ? RV_ERR_CAPACITY
                             : rvi_occlusion_reserve(f->occlusion, f->occluders.count, f->occluders.count,
                                                     (uint32_t)items, (uint32_t)vertices);
    if (reserved == RV_ERR_OUT_OF_MEMORY)
        return reserved;
    for (uint32_t i = 0; i < f->occluders.count; i++) {
        const rvi_node_occluder *o = &RVI_VEC_AT(f->occluders, rvi_node_occluder, i);
        /* An occluder whose placement is unknown (its kept matrix is stale) hides nothing. */
        if (sc->flags[o->node] & (RVI_NODE_HIDDEN | RVI_NODE_STALE))
            continue;
        const float *m = sc->world_matrix[o->node];
        float wmin[3], wmax[3];
        box_to_world(m, o->min, o->max, wmin, wmax);
        if (rv_frustum_classify_box(&f->cam.frustum, wmin, wmax) == RV_OUTSIDE)
            continue;
        bool drawable;
        RVI_TRY(occluder_drawable(world, f, gate, o->node, &last_gated, &drawable));
        if (!drawable)
            continue;
        /* A convex solid's or mesh's block is lent to the buffer until the freeze, which
         * follows at once in rvi_frame_cull. */
        rv_result r = o->kind == RVI_OCC_BOX ? rv_occlusion_add_occluder(f->occlusion, o->min, o->max, m)
                                             : rvi_occlusion_add_block(f->occlusion, (rvi_occ_kind)o->kind, o->block, m);
        if (r == RV_ERR_OUT_OF_MEMORY)
            return r;
        f->counts.occluders_added += r == RV_OK;
    }
    return RV_OK;
}

/* Volume of a local box under m (|det| of the linear part times the box volume). */
static float box_world_volume(const float m[16], const float mn[3], const float mx[3])
{
    float det = m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) +
                m[8] * (m[1] * m[6] - m[5] * m[2]);
    return fabsf(det) * (mx[0] - mn[0]) * (mx[1] - mn[1]) * (mx[2] - mn[2]);
}

/* Occlusion verdict for node i: its test box or its sphere, whichever is smaller. sphere
 * is the world sphere to test (subtree for groups, own geometry for objects). */
static bool node_visible(rvi_frame *f, const rvi_scene *sc, uint32_t i, const float sphere[4])
{
    /* Unbounded (an unknown placement, RVI_NODE_STALE, at or below the node, or an
     * overflow): it covers the whole view and nothing can hide it; the test box under a
     * stale matrix must not be trusted either. */
    if (!(sphere[3] < INFINITY))
        return true;
    uint32_t at = rvi_node_slots_get(&f->test_box_of, i);
    if (at != UINT32_MAX) {
        const rvi_node_box *b = &RVI_VEC_AT(f->test_boxes, rvi_node_box, at);
        const float *m = sc->world_matrix[i];
        float sphere_volume = 4.18879f * sphere[3] * sphere[3] * sphere[3];
        if (box_world_volume(m, b->min, b->max) <= sphere_volume)
            return rvi_occlusion_box_visible(f->occlusion, b->min, b->max, m);
    }
    return rvi_occlusion_sphere_visible(f->occlusion, sphere, sphere[3], NULL);
}

/* With desc.record_culls, notes why node's subtree was not drawn. */
static rv_result record_cull(rv_world *world, rvi_frame *f, uint32_t node, rv_cull_reason reason)
{
    if (!world->desc.record_culls)
        return RV_OK;
    rv_cull_record rec = { rvi_node_handle(&world->scene, node), reason };
    return rvi_vec_push(&world->heap, &f->arenas[f->building].culls, sizeof rec, &rec);
}

/* Records every child of node (an HLOD region standing in for them). */
static rv_result record_children(rv_world *world, rvi_frame *f, uint32_t node, rv_cull_reason reason)
{
    if (!world->desc.record_culls)
        return RV_OK;
    const rvi_scene *sc = &world->scene;
    for (uint32_t c = sc->first_child[node]; c != RVI_INDEX_NONE; c = sc->next_sibling[c])
        RVI_TRY(record_cull(world, f, c, reason));
    return RV_OK;
}

typedef struct walk_entry {
    uint32_t node;
    uint32_t mask;
    float weight;
} walk_entry;

/* Pushes every child: room for child_count entries is made once, then they are written in
 * place (a longer sibling list than the count would still be pushed, one by one). */
static rv_result push_children(rv_world *world, rvi_vec *stack, uint32_t node, uint32_t mask, float weight)
{
    const rvi_scene *sc = &world->scene;
    uint32_t n = sc->aux[node].child_count, k = 0;
    walk_entry *top = NULL;
    if (n)
        RVI_TRY(rvi_vec_extend(&world->heap, stack, sizeof *top, n, (void **)&top));
    for (uint32_t c = sc->first_child[node]; c != RVI_INDEX_NONE; c = sc->next_sibling[c]) {
        walk_entry e = { c, mask, weight };
        if (k < n)
            top[k++] = e;
        else
            RVI_TRY(rvi_vec_push(&world->heap, stack, sizeof e, &e));
    }
    stack->count -= n - k;
    return RV_OK;
}

/* The hierarchical walk: frustum, partition, group occlusion, HLOD. Fills candidates. */
static rv_result walk(rv_world *world, rvi_frame *f, rvi_partition *gate, walk_timer *occlusion_timer,
                      walk_timer *partition_timer, walk_timer *lod_timer)
{
    rvi_scene *sc = &world->scene;
    rvi_heap *heap = &world->heap;
    rvi_vec *stack = &f->scratch.stack;
    rvi_vec *cands = &f->scratch.candidates;
    stack->count = 0;
    cands->count = 0;
    const rv_frustum *fr = &f->cam.frustum;
    float margin = gate ? rvi_partition_margin(gate) : 0.0f;
    bool timed = world->desc.clock_ns != NULL;
    bool occlusion = f->occlusion != NULL;

    for (uint32_t r = sc->first_root; r != RVI_INDEX_NONE; r = sc->next_sibling[r]) {
        walk_entry e = { r, fr->plane_mask, 1.0f };
        RVI_TRY(rvi_vec_push(heap, stack, sizeof e, &e));
    }
    while (stack->count) {
        walk_entry e = RVI_VEC_AT(*stack, walk_entry, --stack->count);
        uint32_t i = e.node;
        uint32_t flags = sc->flags[i];
        f->counts.nodes_visited++;
        if (flags & RVI_NODE_HIDDEN) {
            RVI_TRY(record_cull(world, f, i, RV_CULL_HIDDEN));
            continue;
        }
        const float *ws = sc->world_sphere[i];
        if (ws[3] < 0)
            continue;
        bool group = (flags & RVI_NODE_PARTITION_GROUP) && gate;
        uint32_t mask = e.mask;
        if (mask) {
            f->counts.frustum_tested++;
            /* A partition group is gated when its sphere meets the frustum padded by the
             * margin, so parts near the edge are gated (and preloaded). */
            float radius = group ? ws[3] + margin : ws[3];
            bool outside = rv_frustum_classify_sphere_masked(fr, ws, radius, &mask) == RV_OUTSIDE;
            /* A sphere that straddles a plane: the test box may still lie outside (a
             * partition group keeps its padded sphere alone). */
            if (!outside && mask && !group)
                outside = test_box_outside(f, sc, i);
            if (outside) {
                f->counts.frustum_culled++;
                if (flags & RVI_NODE_HAS_HLOD) {
                    uint64_t t0 = walk_timer_start(world, lod_timer, timed);
                    (void)rvi_hlod_decide(world, &f->hlod_pass, i, true);
                    walk_timer_stop(world, lod_timer, t0);
                }
                RVI_TRY(record_cull(world, f, i, RV_CULL_FRUSTUM));
                continue;
            }
        }
        if ((flags & RVI_NODE_PARTITION_PART) && gate && rvi_partition_part_hidden(world, gate, i)) {
            f->counts.partition_culled++;
            RVI_TRY(record_cull(world, f, i, RV_CULL_PARTITION));
            continue;
        }
        bool has_children = sc->first_child[i] != RVI_INDEX_NONE;
        bool tested = false;
        if (occlusion && has_children) {
            uint64_t t0 = walk_timer_start(world, occlusion_timer, timed);
            f->counts.occlusion_tested++;
            bool visible = node_visible(f, sc, i, ws);
            walk_timer_stop(world, occlusion_timer, t0);
            if (!visible) {
                f->counts.occlusion_culled++;
                if (group)
                    RVI_TRY(rvi_partition_hide_group(world, gate, i));
                RVI_TRY(record_cull(world, f, i, RV_CULL_OCCLUSION));
                continue;
            }
            tested = true;
        }
        if (group) {
            uint64_t t0 = walk_timer_start(world, partition_timer, timed);
            rv_result r = rvi_partition_gate_group(world, gate, i, fr);
            walk_timer_stop(world, partition_timer, t0);
            if (r != RV_OK && r != RV_ERR_NOT_FOUND)
                return r;
        }
        if (flags & RVI_NODE_HAS_HLOD) {
            uint64_t t0 = walk_timer_start(world, lod_timer, timed);
            rvi_hlod_decision d = rvi_hlod_decide(world, &f->hlod_pass, i, false);
            walk_timer_stop(world, lod_timer, t0);
            if (d.is_region) {
                if (d.wants_load) {
                    rv_node h = rvi_node_handle(sc, i);
                    RVI_TRY(rvi_vec_push(heap, &f->arenas[f->building].hlod_loads, sizeof h, &h));
                }
                if (d.draw_self && (flags & RVI_NODE_HAS_GEOMETRY)) {
                    rvi_candidate c = { i, e.weight * d.self_weight, 0 };
                    if (c.weight > 0)
                        RVI_TRY(rvi_vec_push(heap, cands, sizeof c, &c));
                    f->counts.hlod_drawn++;
                }
                float w = e.weight * (d.draw_self ? 1.0f - d.self_weight : 1.0f);
                if (d.refine) {
                    f->counts.hlod_refined++;
                    if (w > 0)
                        RVI_TRY(push_children(world, stack, i, mask, w));
                }
                if (!d.refine || w <= 0)
                    RVI_TRY(record_children(world, f, i, RV_CULL_HLOD_REPLACED));
                if (!d.draw_self && !d.refine && (flags & RVI_NODE_HAS_GEOMETRY))
                    RVI_TRY(record_cull(world, f, i, RV_CULL_HLOD_REPLACED)); /* not resident, nothing below */
                continue;
            }
        }
        if (flags & RVI_NODE_HAS_GEOMETRY) {
            rvi_candidate c = { i, e.weight, tested };
            RVI_TRY(rvi_vec_push(heap, cands, sizeof c, &c));
        }
        RVI_TRY(push_children(world, stack, i, mask, e.weight));
    }
    return RV_OK;
}

/* Batch occlusion tests of the candidates not tested in the walk; compacts candidates. */
static rv_result occlusion_pass(rv_world *world, rvi_frame *f)
{
    if (!f->occlusion)
        return RV_OK;
    rvi_scene *sc = &world->scene;
    rvi_vec *cands = &f->scratch.candidates;
    uint32_t kept = 0;
    for (uint32_t k = 0; k < cands->count; k++) {
        rvi_candidate c = RVI_VEC_AT(*cands, rvi_candidate, k);
        if (!c.tested) {
            /* A leaf's world sphere encloses exactly its own geometry (and the walk has
             * just read it); a node with children needs its own geometry's sphere. */
            float g[4];
            const float *sphere = sc->world_sphere[c.node];
            if (sc->first_child[c.node] != RVI_INDEX_NONE) {
                rvi_scene_geometry_sphere(sc, c.node, g);
                sphere = g;
            }
            f->counts.occlusion_tested++;
            if (!node_visible(f, sc, c.node, sphere)) {
                f->counts.occlusion_culled++;
                RVI_TRY(record_cull(world, f, c.node, RV_CULL_OCCLUSION));
                continue;
            }
        }
        RVI_VEC_AT(*cands, rvi_candidate, kept++) = c;
    }
    cands->count = kept;
    return RV_OK;
}

/* LOD selection and emission into the building arena's lists. */
static rv_result lod_pass(rv_world *world, rvi_frame *f)
{
    rvi_scene *sc = &world->scene;
    rvi_frame_arena *a = &f->arenas[f->building];
    rvi_vec *cands = &f->scratch.candidates;
    for (uint32_t k = 0; k < cands->count; k++) {
        rvi_candidate c = RVI_VEC_AT(*cands, rvi_candidate, k);
        rvi_vec *list = (sc->flags[c.node] & RVI_NODE_TRANSLUCENT) ? &a->translucent : &a->opaque;
        if (sc->flags[c.node] & RVI_NODE_HAS_LOD) {
            rv_lod_selection sel;
            RVI_TRY(rvi_lod_select_index(world, c.node, &f->cam.lod_view, &sel));
            bool any = false;
            /* The level past the ladder means "draw nothing". Level 0 never is, so the
             * ladder (a handle round trip) is looked up only for coarser levels, once. */
            uint32_t ladder_count = UINT32_MAX;
            bool looked_up = false;
            for (uint32_t s = 0; s < sel.count; s++) {
                if (sel.weights[s] <= 0)
                    continue;
                if (sel.levels[s] > 0 && !looked_up) {
                    rv_lod_ladder ladder;
                    if (rv_node_get_lod_ladder(world, rvi_node_handle(sc, c.node), &ladder) == RV_OK)
                        ladder_count = ladder.count;
                    looked_up = true;
                }
                if (sel.levels[s] >= ladder_count)
                    continue;
                RVI_TRY(rvi_frame_emit(world, list, c.node, sel.levels[s], c.weight * sel.weights[s], &f->cam));
                any = true;
            }
            if (!any && !(sc->world_sphere[c.node][3] < INFINITY)) {
                /* Unbounded (its placement is unknown, RVI_NODE_STALE): its target level
                 * (the finest allowed) may still be fading in from "nothing" with no
                 * weight yet. It is drawn at that level now: LOD must not drop it. */
                uint32_t level = sel.levels[0];
                if (level > 0 && !looked_up) {
                    rv_lod_ladder ladder;
                    if (rv_node_get_lod_ladder(world, rvi_node_handle(sc, c.node), &ladder) == RV_OK)
                        ladder_count = ladder.count;
                }
                if (level < ladder_count) {
                    RVI_TRY(rvi_frame_emit(world, list, c.node, level, c.weight, &f->cam));
                    any = true;
                }
            }
            if (!any) {
                f->counts.lod_culled++;
                RVI_TRY(record_cull(world, f, c.node, RV_CULL_LOD_NOTHING));
            }
        } else {
            RVI_TRY(rvi_frame_emit(world, list, c.node, 0, c.weight, &f->cam));
        }
    }
    return RV_OK;
}

rv_result rvi_frame_cull(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if (!f || f->state != RVI_FRAME_BEGUN)
        return RV_ERR_BAD_STATE;
    bool timed = world->desc.clock_ns != NULL;
    uint64_t t0 = rvi_clock_now(world);
    if (f->occlusion) {
        RVI_TRY(rasterise_occluder_nodes(world, f));
        RVI_TRY(rv_occlusion_freeze(f->occlusion));
    }
    uint64_t t1 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_OCCLUSION, t0, t1);

    walk_timer occlusion_timer = { 0 }, partition_timer = { 0 }, lod_timer = { 0 };
    rv_result walked = walk(world, f, rvi_partition_find(world), &occlusion_timer, &partition_timer, &lod_timer);
    uint64_t t2 = rvi_clock_now(world);
    if (timed) {
        /* The estimates of what ran inside the walk are scaled down should they exceed the
         * walk itself, so the stages never add up to more than the frame took. */
        double occlusion_us = walk_timer_estimate(&occlusion_timer);
        double partition_us = walk_timer_estimate(&partition_timer);
        double lod_us = walk_timer_estimate(&lod_timer);
        double span_us = t2 >= t1 ? (double)(t2 - t1) / 1000.0 : 0.0;
        double inside = occlusion_us + partition_us + lod_us;
        double scale = inside > span_us ? span_us / inside : 1.0;
        f->stage_us[RV_STAGE_OCCLUSION] += occlusion_us * scale;
        f->stage_us[RV_STAGE_PARTITION] += partition_us * scale;
        f->stage_us[RV_STAGE_LOD] += lod_us * scale;
        f->stage_us[RV_STAGE_FRUSTUM] += inside > span_us ? 0.0 : span_us - inside;
    }
    RVI_TRY(walked);
    RVI_TRY(occlusion_pass(world, f));
    uint64_t t3 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_OCCLUSION, t2, t3);
    RVI_TRY(lod_pass(world, f));
    if (timed)
        rvi_stage_add(f, RV_STAGE_LOD, t3, rvi_clock_now(world));
    if (f->occlusion) {
        rv_occlusion_stats os = rv_occlusion_get_stats(f->occlusion);
        f->counts.occluders_rasterised = os.occluders_rasterized;
    }
    f->state = RVI_FRAME_CULLED;
    return RV_OK;
}

