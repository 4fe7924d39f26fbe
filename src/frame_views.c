/* Extra views (shadows, reflections): frustum and LOD only, each into a list of its own. */
#include "frame.h"
#include "core/check.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- extra views --------------------------------------------------------------------------- */

struct rv_view_list {
    rv_world *world;
    rvi_vec opaque, translucent;
    rvi_walk_scratch scratch;
    uint64_t generation;
};

rv_result rv_view_list_create(rv_world *world, rv_view_list **out_list)
{
    if (!world || !out_list)
        return RV_ERR_INVALID_ARG;
    rv_view_list *l = rvi_calloc(&world->heap, 1, sizeof *l);
    if (!l)
        return RV_ERR_OUT_OF_MEMORY;
    l->world = world;
    *out_list = l;
    return RV_OK;
}

void rv_view_list_destroy(rv_view_list *l)
{
    if (!l)
        return;
    rvi_heap *heap = &l->world->heap;
    rvi_vec_free(heap, &l->opaque, sizeof(rv_draw_item));
    rvi_vec_free(heap, &l->translucent, sizeof(rv_draw_item));
    rvi_walk_scratch_free(heap, &l->scratch);
    rvi_free(heap, l, sizeof *l);
}

typedef struct extra_entry {
    uint32_t node;
    uint32_t mask;
    float weight;
} extra_entry;

rv_result rv_cull_view(rv_world *world, const rv_view *view, rv_view_list *list, rv_frame_view *out)
{
    if (!world || !list || !out)
        return RV_ERR_INVALID_ARG;
    if (list->world != world)
        return RV_ERR_BAD_STATE;
    rvi_frame_camera cam;
    RVI_TRY(rvi_frame_resolve_view(world, view, &cam));
    rvi_hlod_pass pass;
    RVI_TRY(rvi_hlod_begin_pass(world, &cam.lod_view, 0.0f, &pass));
    pass.crossfade_ms = -1.0f; /* no fading state in extra views */

    rvi_scene *sc = &world->scene;
    rvi_heap *heap = &world->heap;
    list->opaque.count = list->translucent.count = 0;
    list->generation++;
    rvi_vec *stack = &list->scratch.stack;
    stack->count = 0;
    rv_frame_counts counts;
    memset(&counts, 0, sizeof counts);
    for (uint32_t r = sc->first_root; r != RVI_INDEX_NONE; r = sc->next_sibling[r]) {
        extra_entry e = { r, cam.frustum.plane_mask, 1.0f };
        RVI_TRY(rvi_vec_push(heap, stack, sizeof e, &e));
    }
    while (stack->count) {
        extra_entry e = RVI_VEC_AT(*stack, extra_entry, --stack->count);
        uint32_t i = e.node, flags = sc->flags[i], mask = e.mask;
        counts.nodes_visited++;
        const float *ws = sc->world_sphere[i];
        if ((flags & RVI_NODE_HIDDEN) || ws[3] < 0)
            continue;
        if (mask) {
            counts.frustum_tested++;
            if (rv_frustum_classify_sphere_masked(&cam.frustum, ws, ws[3], &mask) == RV_OUTSIDE) {
                counts.frustum_culled++;
                continue;
            }
        }
        bool descend = true, draw = (flags & RVI_NODE_HAS_GEOMETRY) != 0;
        if (flags & RVI_NODE_HAS_HLOD) {
            rvi_hlod_decision d = rvi_hlod_peek(world, &pass, i);
            if (d.is_region) {
                draw = draw && d.draw_self;
                descend = d.refine;
                if (d.refine)
                    counts.hlod_refined++;
                if (d.draw_self)
                    counts.hlod_drawn++;
            }
        }
        if (draw) {
            rvi_vec *dst = (flags & RVI_NODE_TRANSLUCENT) ? &list->translucent : &list->opaque;
            uint32_t level = 0;
            bool nothing = false;
            if (flags & RVI_NODE_HAS_LOD) {
                rv_lod_ladder ladder;
                RVI_TRY(rv_node_get_lod_ladder(world, rvi_node_handle(sc, i), &ladder));
                RVI_TRY(rv_lod_for_node(world, rvi_node_handle(sc, i), &cam.lod_view, &ladder, &level));
                nothing = level >= ladder.count; /* past the ladder: draw nothing */
                if (nothing)
                    counts.lod_culled++;
            }
            if (!nothing)
                RVI_TRY(rvi_frame_emit(world, dst, i, level, 1.0f, &cam));
        }
        if (descend)
            for (uint32_t c = sc->first_child[i]; c != RVI_INDEX_NONE; c = sc->next_sibling[c]) {
                extra_entry ce = { c, mask, 1.0f };
                RVI_TRY(rvi_vec_push(heap, stack, sizeof ce, &ce));
            }
    }
    uint32_t n = list->opaque.count > list->translucent.count ? list->opaque.count : list->translucent.count;
    RVI_TRY(rvi_frame_reserve_sort(heap, &list->scratch, n));
    rvi_frame_sort(RVI_VEC_PTR(list->opaque, rv_draw_item), list->opaque.count, false, &list->scratch);
    rvi_frame_sort(RVI_VEC_PTR(list->translucent, rv_draw_item), list->translucent.count, true, &list->scratch);
    rvi_frame_count_drawn(&list->opaque, &list->translucent, &counts);
    rv_frame_view v;
    memset(&v, 0, sizeof v);
    v.arena = 2; /* not a world arena */
    v.generation = list->generation;
    v.frame_sequence = list->generation;
    v.opaque = RVI_VEC_PTR(list->opaque, rv_draw_item);
    v.opaque_count = list->opaque.count;
    v.translucent = RVI_VEC_PTR(list->translucent, rv_draw_item);
    v.translucent_count = list->translucent.count;
    v.counts = counts;
    for (int s = 0; s < RV_STAGE_COUNT; s++)
        v.stage_us[s] = -1.0;
    *out = v;
    return RV_OK;
}
