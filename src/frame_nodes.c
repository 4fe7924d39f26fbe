/* What nodes carry for the frame: persistent occluders of any shape (a box, a convex solid,
 * a mesh: the last two copied into blocks the world owns) and test boxes (a tighter bound
 * than the sphere for the frustum and occlusion tests), both side tables by node slot
 * (core/node_table.h); and each frame, the node occluders it may use handed to its buffer. */
#include "frame.h"
#include "core/check.h"
#include "frustum.h"
#include "occlusion_shape.h"
#include "partition.h"
#include "scene.h"

#include <string.h>

/* ---- test boxes -------------------------------------------------------------------------- */

static rv_result check_box(const float min[3], const float max[3])
{
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3))
        return RV_ERR_NOT_FINITE;
    if (min[0] > max[0] || min[1] > max[1] || min[2] > max[2])
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rv_node_set_test_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(check_box(min, max));
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f;
    RVI_TRY(rvi_frame_state(world, &f));
    rvi_node_box b = { i, { min[0], min[1], min[2] }, { max[0], max[1], max[2] }, 0.0f, UINT64_MAX };
    rvi_node_box *existing = rvi_node_table_find(&f->test_boxes, sizeof b, i);
    if (existing) {
        *existing = b;
        return RV_OK;
    }
    rvi_node_table_room room;
    RVI_TRY(rvi_node_table_prepare(&world->heap, &f->test_boxes, sizeof b, i, &room));
    rvi_node_table_add(&world->heap, &f->test_boxes, sizeof b, &b, &room);
    world->scene.flags[i] |= RVI_NODE_HAS_TEST_BOX;
    return RV_OK;
}

rv_result rv_node_clear_test_box(rv_world *world, rv_node node)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f = rvi_frame_find(world);
    if (!f)
        return RV_OK;
    rvi_node_table_remove(&f->test_boxes, sizeof(rvi_node_box), i);
    world->scene.flags[i] &= ~(uint32_t)RVI_NODE_HAS_TEST_BOX;
    return RV_OK;
}

/* ---- node occluders --------------------------------------------------------------------- */

void rvi_frame_drop_occluder(rvi_heap *heap, rvi_frame *f, uint32_t node)
{
    rvi_node_occluder *o = rvi_node_table_find(&f->occluders, sizeof *o, node);
    if (!o)
        return;
    f->occluder_items -= o->items;
    f->occluder_vertices -= o->vertices;
    rvi_free(heap, o->block, o->block_size);
    rvi_node_table_remove(&f->occluders, sizeof *o, node);
}

/* Gives node i the occluder o (its block already made in the world's heap, owned from here
 * on whatever happens): replaces an earlier one of any shape. */
static rv_result set_occluder(rv_world *world, uint32_t i, rvi_node_occluder *o)
{
    rvi_heap *heap = &world->heap;
    rvi_frame *f;
    rv_result r = rvi_frame_state(world, &f);
    rvi_node_occluder *old = r == RV_OK ? rvi_node_table_find(&f->occluders, sizeof *o, i) : NULL;
    rvi_node_table_room room;
    if (r == RV_OK && !old)
        r = rvi_node_table_prepare(heap, &f->occluders, sizeof *o, i, &room);
    if (r != RV_OK) {
        rvi_free(heap, o->block, o->block_size);
        return r;
    }
    o->node = i;
    if (old) {
        f->occluder_items -= old->items;
        f->occluder_vertices -= old->vertices;
        rvi_free(heap, old->block, old->block_size);
        *old = *o;
    } else {
        rvi_node_table_add(heap, &f->occluders, sizeof *o, o, &room);
    }
    f->occluder_items += o->items;
    f->occluder_vertices += o->vertices;
    world->scene.flags[i] |= RVI_NODE_OCCLUDER;
    return RV_OK;
}

rv_result rv_node_set_occluder_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(check_box(min, max));
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_node_occluder o;
    memset(&o, 0, sizeof o);
    o.kind = RVI_OCC_BOX;
    memcpy(o.min, min, sizeof o.min);
    memcpy(o.max, max, sizeof o.max);
    o.items = 1;
    return set_occluder(world, i, &o);
}

rv_result rv_node_set_occluder_convex(rv_world *world, rv_node node, const rv_occluder_convex *convex)
{
    if (!world || !convex)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_occ_convex_check(convex));
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    /* The solid is worked out in a scratch block lent for the call. */
    rvi_heap *heap = &world->heap;
    size_t scratch_size = rvi_occ_convex_scratch_size(), size;
    void *scratch = rvi_alloc(heap, scratch_size);
    if (!scratch)
        return RV_ERR_OUT_OF_MEMORY;
    rv_result r = rvi_occ_convex_build(convex, scratch, &size);
    rvi_node_occluder o;
    memset(&o, 0, sizeof o);
    o.block = r == RV_OK ? rvi_alloc(heap, size) : NULL;
    if (r == RV_OK && !o.block)
        r = RV_ERR_OUT_OF_MEMORY;
    if (r != RV_OK) {
        rvi_free(heap, scratch, scratch_size);
        return r;
    }
    rvi_occ_convex_write(scratch, convex->flags, o.block);
    rvi_free(heap, scratch, scratch_size);
    const rvi_occ_convex_data *c = o.block;
    o.kind = RVI_OCC_CONVEX;
    o.block_size = size;
    memcpy(o.min, c->bounds_min, sizeof o.min);
    memcpy(o.max, c->bounds_max, sizeof o.max);
    o.items = 1;
    return set_occluder(world, i, &o);
}

static rv_result set_mesh_solid(rv_world *world, uint32_t i, const rv_occluder_mesh *mesh, uint32_t triangles);
static rv_result set_mesh(rv_world *world, uint32_t i, const rv_occluder_mesh *mesh, uint32_t triangles,
                         uint32_t extra);

rv_result rv_node_set_occluder_mesh(rv_world *world, rv_node node, const rv_occluder_mesh *mesh)
{
    if (!world || !mesh)
        return RV_ERR_INVALID_ARG;
    uint32_t triangles;
    RVI_TRY(rvi_occ_mesh_check(mesh, &triangles));
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    if ((mesh->flags & RV_OCCLUDER_CLOSED) && triangles <= RV_OCCLUSION_MAX_PLANES)
        return set_mesh_solid(world, i, mesh, triangles);
    return set_mesh(world, i, mesh, triangles, 0);
}

/* A closed mesh that is small enough: kept as the convex solid it bounds when it is one. */
static rv_result set_mesh_solid(rv_world *world, uint32_t i, const rv_occluder_mesh *mesh, uint32_t triangles)
{
    rvi_heap *heap = &world->heap;
    size_t scratch_size = rvi_occ_convex_scratch_size(), size;
    void *scratch = rvi_alloc(heap, scratch_size);
    if (!scratch)
        return RV_ERR_OUT_OF_MEMORY;
    if (!rvi_occ_mesh_convex(mesh, triangles, scratch, &size)) {
        rvi_free(heap, scratch, scratch_size);
        return set_mesh(world, i, mesh, triangles, RVI_OCC_NOT_CONVEX); /* the freeze need not look again */
    }
    rvi_node_occluder o;
    memset(&o, 0, sizeof o);
    o.block = rvi_alloc(heap, size);
    if (!o.block) {
        rvi_free(heap, scratch, scratch_size);
        return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_occ_mesh_convex_write(scratch, mesh, triangles, o.block);
    rvi_free(heap, scratch, scratch_size);
    const rvi_occ_convex_data *c = o.block;
    o.kind = RVI_OCC_CONVEX;
    o.block_size = size;
    memcpy(o.min, c->bounds_min, sizeof o.min);
    memcpy(o.max, c->bounds_max, sizeof o.max);
    o.items = 1;
    return set_occluder(world, i, &o);
}

/* A mesh block; extra: internal flags for it. */
static rv_result set_mesh(rv_world *world, uint32_t i, const rv_occluder_mesh *mesh, uint32_t triangles,
                         uint32_t extra)
{
    rvi_node_occluder o;
    memset(&o, 0, sizeof o);
    o.block_size = rvi_occ_mesh_size(mesh->vertex_count, triangles);
    o.block = rvi_alloc(&world->heap, o.block_size);
    if (!o.block)
        return RV_ERR_OUT_OF_MEMORY;
    rvi_occ_mesh_copy(mesh, triangles, true, o.block);
    rvi_occ_mesh_data *m = o.block;
    m->flags |= extra;
    o.kind = RVI_OCC_MESH;
    memcpy(o.min, m->bounds_min, sizeof o.min);
    memcpy(o.max, m->bounds_max, sizeof o.max);
    o.items = triangles;
    o.vertices = mesh->vertex_count;
    return set_occluder(world, i, &o);
}

rv_result rv_node_clear_occluder(rv_world *world, rv_node node)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f = rvi_frame_find(world);
    if (!f)
        return RV_OK;
    rvi_frame_drop_occluder(&world->heap, f, i);
    world->scene.flags[i] &= ~(uint32_t)RVI_NODE_OCCLUDER;
    return RV_OK;
}

rv_result rv_node_clear_occluder_box(rv_world *world, rv_node node) { return rv_node_clear_occluder(world, node); }

/* ---- submitting node occluders ----------------------------------------------------------------------------- */

/* True when an occluder node's own geometry, or a stand-in in its place, is drawn whole
 * this frame: no ancestor (itself included) is flagged hidden or is a partition part the
 * gate hides (padded frustum or slice); the topmost HLOD region above it that does not
 * pass the walk on below it (rvi_hlod_cover_below) is drawn as itself (its stand-in covers
 * the node: the host's contract) rather than drawing nothing there; with none, the node,
 * if a region, is drawn as itself, whole (rvi_hlod_drawn_whole), and the LOD selection
 * the frame is about to make lists no "nothing", not even fading. A region whose place
 * the last frame did not see is judged by the cut it will show at once. An occluder
 * whose geometry is not drawn, or drawn faint, must not hide anything: what is behind it
 * is visible. Groups on the way are gated here (a group gated again in the walk keeps its
 * last decision). */
typedef struct occluder_memo {
    uint32_t gated;      /* the group gated last (or RVI_INDEX_NONE) */
    uint32_t region;     /* the HLOD region above an occluder looked at last (or RVI_INDEX_NONE) */
    rvi_hlod_cover cover; /* what stands for the nodes below it */
} occluder_memo;

static rv_result occluder_drawable(rv_world *world, rvi_frame *f, rvi_partition *gate, uint32_t node,
                                   occluder_memo *memo, bool *out)
{
    const rvi_scene *sc = &world->scene;
    *out = false;
    bool own = true;  /* the node's own geometry drawn whole, as far as HLOD says */
    int cover = -1;   /* the topmost region above that decides: 1 a stand-in, 0 nothing */
    for (uint32_t a = node; a != RVI_INDEX_NONE; a = sc->parent[a]) {
        uint32_t flags = sc->flags[a];
        if (flags & RVI_NODE_HIDDEN)
            return RV_OK;
        if (flags & RVI_NODE_HAS_HLOD) {
            uint32_t mask;
            if (a == node) {
                own = rvi_hlod_drawn_whole(world, &f->hlod_pass, a, rvi_frame_place_unseen_last_frame(f, sc, a, &mask));
            } else {
                /* Occluders are kept in the order they were set: those under one region
                 * mostly follow each other, so the region's answer is kept for the next. */
                if (a != memo->region) {
                    memo->cover = rvi_hlod_cover_below(world, &f->hlod_pass, a,
                                                       rvi_frame_place_unseen_last_frame(f, sc, a, &mask));
                    memo->region = a;
                }
                if (memo->cover != RVI_HLOD_THROUGH)
                    cover = memo->cover == RVI_HLOD_STAND_IN;
            }
        }
        if ((flags & RVI_NODE_PARTITION_PART) && gate) {
            uint32_t group = sc->parent[a];
            if (group != RVI_INDEX_NONE && (sc->flags[group] & RVI_NODE_PARTITION_GROUP)) {
                if (memo->gated != group) {
                    rv_result r = rvi_partition_gate_group(world, gate, group, &f->cam.frustum);
                    if (r != RV_OK && r != RV_ERR_NOT_FOUND)
                        return r;
                    memo->gated = group;
                }
                if (rvi_partition_part_hidden(world, gate, a))
                    return RV_OK;
            }
        }
    }
    /* A region drawn as itself stands in for what is below it, as a coarser level: it
     * covers at least what their occluders cover (the host's contract, rv_node_set_occluder_box). */
    if (cover >= 0) {
        *out = cover == 1;
        return RV_OK;
    }
    if (!own || ((sc->flags[node] & RVI_NODE_HAS_LOD) && !rvi_lod_drawn_whole(world, node, &f->cam.lod_view)))
        return RV_OK;
    *out = true;
    return RV_OK;
}

/* rv_frustum_classify_box(frustum, mn, mx) == RV_OUTSIDE for a finite box with mn <= mx:
 * the same plane sums in the same order, without the checks and the inside test. */
static bool box_outside(const rv_frustum *frustum, const float mn[3], const float mx[3])
{
    for (int i = 0; i < 6; i++) {
        if (!(frustum->plane_mask & (1u << i)))
            continue;
        const float *pl = frustum->planes[i];
        float p[3];
        for (int k = 0; k < 3; k++)
            p[k] = pl[k] >= 0.0f ? mx[k] : mn[k];
        if (rvi_plane_distance(pl, p) < 0.0f)
            return true;
    }
    return false;
}

rv_result rvi_frame_submit_occluders(rv_world *world, rvi_frame *f)
{
    const rvi_scene *sc = &world->scene;
    rvi_partition *gate = f->gate;
    occluder_memo memo = { RVI_INDEX_NONE, RVI_INDEX_NONE, RVI_HLOD_THROUGH };
    /* Room for every persistent occluder at once: a frame that sees more of them than any
     * before must not allocate occluder by occluder (steady frames allocate nothing). */
    uint32_t count = f->occluders.records.count;
    uint64_t items = f->occluder_items, vertices = f->occluder_vertices;
    rv_result reserved = items > UINT32_MAX || vertices > UINT32_MAX
                             ? RV_ERR_CAPACITY
                             : rvi_occlusion_reserve(f->occlusion, count, count, (uint32_t)items, (uint32_t)vertices);
    if (reserved == RV_ERR_OUT_OF_MEMORY)
        return reserved;
    for (uint32_t i = 0; i < count; i++) {
        rvi_node_occluder *o = &RVI_VEC_AT(f->occluders.records, rvi_node_occluder, i);
        /* An occluder whose placement is unknown (its kept matrix is stale, or the node was
         * moved, made or attached after rv_frame_begin's update, so its matrix is an older
         * one or its parent's) hides nothing. The dirty list is empty after the update: the
         * climb is made only in a frame the host edited between begin and cull. */
        if ((sc->flags[o->node] & (RVI_NODE_HIDDEN | RVI_NODE_STALE)) ||
            (sc->dirty_count && rvi_scene_flag_at_or_above(sc, o->node, RVI_NODE_MOVED)))
            continue;
        const float *m = sc->world_matrix[o->node];
        /* Every update that recomputes a matrix bumps the scene's edits: while they stay as
         * they were, the kept world box is the one this matrix gives. */
        if (!o->world_kept || o->world_edits != sc->edits) {
            rvi_box_to_world(m, o->min, o->max, o->world_min, o->world_max);
            bool ok = rvi_finite_n(o->world_min, 3) && rvi_finite_n(o->world_max, 3);
            for (int k = 0; k < 3; k++)
                ok = ok && o->world_min[k] <= o->world_max[k];
            o->world_finite = ok;
            o->world_edits = sc->edits;
            o->world_kept = 1;
        }
        if (o->world_finite && box_outside(&f->cam.frustum, o->world_min, o->world_max))
            continue;
        bool drawable;
        RVI_TRY(occluder_drawable(world, f, gate, o->node, &memo, &drawable));
        if (!drawable)
            continue;
        /* A convex solid's or mesh's block is lent to the buffer until the freeze, which
         * follows at once in rvi_frame_cull. */
        rv_result r = o->kind == RVI_OCC_BOX ? rvi_occlusion_add_occluder(f->occlusion, o->min, o->max, m)
                                             : rvi_occlusion_add_block(f->occlusion, (rvi_occ_kind)o->kind, o->block, m);
        if (r == RV_ERR_OUT_OF_MEMORY)
            return r;
        f->counts.occluders_added += r == RV_OK;
    }
    return RV_OK;
}
