/* The frame product (seed 004, G0): two alternating arenas, stable radix sorting, view
 * validity and digests; node box attachments; the world-owned journal, render scene,
 * grids and residency; extra views (frustum and LOD only). */
#include "frame.h"
#include "core/check.h"
#include "core/hash.h"
#include "grid.h"
#include "residency.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- arenas and scratch ------------------------------------------------------------------ */

void rvi_frame_arena_free(rvi_heap *heap, rvi_frame_arena *a)
{
    rvi_vec_free(heap, &a->opaque, sizeof(rv_draw_item));
    rvi_vec_free(heap, &a->translucent, sizeof(rv_draw_item));
    rvi_vec_free(heap, &a->resync_requests, sizeof(rv_partition_request));
    rvi_vec_free(heap, &a->resync_parts, sizeof(rv_node));
    rvi_vec_free(heap, &a->page_requests, sizeof(rv_page_request));
    rvi_vec_free(heap, &a->page_evictions, sizeof(rv_page_eviction));
    rvi_vec_free(heap, &a->hlod_loads, sizeof(rv_node));
    rvi_vec_free(heap, &a->culls, sizeof(rv_cull_record));
}

void rvi_walk_scratch_free(rvi_heap *heap, rvi_walk_scratch *s)
{
    rvi_vec_free(heap, &s->stack, 3 * sizeof(uint32_t));
    rvi_vec_free(heap, &s->candidates, sizeof(rvi_candidate));
    rvi_vec_free(heap, &s->sort_keys, sizeof(uint32_t));
    rvi_vec_free(heap, &s->sort_order, sizeof(uint32_t));
}

rv_result rvi_frame_reserve_sort(rvi_heap *heap, rvi_walk_scratch *s, uint32_t n)
{
    if (n > UINT32_MAX / 2)
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(heap, &s->sort_keys, sizeof(uint32_t), 2 * n));
    return rvi_vec_reserve(heap, &s->sort_order, sizeof(uint32_t), 2 * n);
}

/* Maps a float to a uint32 whose unsigned order is the float's order (NaN last). */
static inline uint32_t depth_key(float f, bool descending)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return descending ? ~u : u;
}

/* LSD radix sort on (key, index): four stable 8-bit passes, then the permutation applied
 * in place. O(n), stable, so equal depths keep walk order in both directions. */
void rvi_frame_sort(rv_draw_item *items, uint32_t n, bool far_to_near, rvi_walk_scratch *s)
{
    if (n < 2)
        return;
    uint32_t *keys = RVI_VEC_PTR(s->sort_keys, uint32_t), *keys2 = keys + n;
    uint32_t *order = RVI_VEC_PTR(s->sort_order, uint32_t), *order2 = order + n;
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = depth_key(items[i].view_depth, far_to_near);
        order[i] = i;
    }
    for (int shift = 0; shift < 32; shift += 8) {
        uint32_t count[256] = { 0 };
        for (uint32_t i = 0; i < n; i++)
            count[(keys[i] >> shift) & 255]++;
        if (count[(keys[0] >> shift) & 255] == n)
            continue; /* every key shares this byte: the pass would not move anything */
        uint32_t sum = 0;
        for (int b = 0; b < 256; b++) {
            uint32_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t dst = count[(keys[i] >> shift) & 255]++;
            keys2[dst] = keys[i];
            order2[dst] = order[i];
        }
        uint32_t *t = keys; keys = keys2; keys2 = t;
        t = order; order = order2; order2 = t;
    }
    /* Apply the permutation in place, cycle by cycle (slot i takes item order[i]): each
     * 96-byte item moves once, with no gather buffer and no copy back. A placed slot is
     * marked by order[i] = i. */
    for (uint32_t i = 0; i < n; i++) {
        if (order[i] == i)
            continue;
        rv_draw_item held = items[i];
        uint32_t j = i;
        for (;;) {
            uint32_t from = order[j];
            order[j] = j;
            if (from == i) {
                items[j] = held;
                break;
            }
            items[j] = items[from];
            j = from;
        }
    }
}

rv_result rvi_frame_emit(rv_world *world, rvi_vec *list, uint32_t node, uint32_t level, float fade,
                         const rvi_frame_camera *cam)
{
    const rvi_scene *sc = &world->scene;
    rv_draw_item *it;
    RVI_TRY(rvi_vec_extend(&world->heap, list, sizeof *it, 1, (void **)&it));
    it->node = rvi_node_handle(sc, node);
    it->projection_key = 0;
    if (sc->flags[node] & RVI_NODE_PROJECTION) {
        rvi_frame *f = rvi_frame_find(world);
        uint64_t key;
        if (f && f->render_scene && rv_render_scene_node_key(f->render_scene, it->node, &key, NULL) == RV_OK)
            it->projection_key = key;
    }
    it->lod_level = level;
    it->fade = fade > 1.0f ? 1.0f : fade;
    const float *ws = sc->world_sphere[node];
    it->view_depth = (ws[0] - cam->eye[0]) * cam->forward[0] + (ws[1] - cam->eye[1]) * cam->forward[1] +
                     (ws[2] - cam->eye[2]) * cam->forward[2];
    memcpy(it->world_matrix, sc->world_matrix[node], sizeof it->world_matrix);
    return RV_OK;
}

/* ---- validity and digest ------------------------------------------------------------------ */

bool rv_frame_view_is_valid(const rv_world *world, const rv_frame_view *view)
{
    if (!world || !view)
        return false;
    if (view->arena >= 2)
        return false; /* an extra view: valid until the next rv_cull_view with its list */
    const rvi_frame *f = rvi_frame_find(world);
    if (!f || view->frame_sequence == 0)
        return false;
    const rvi_frame_arena *a = &f->arenas[view->arena];
    /* Reused once a later frame began building in it. */
    return a->generation == view->generation && f->building != (int)view->arena &&
           (view->opaque == NULL || view->opaque == a->opaque.data);
}

static uint64_t digest_list(uint64_t h, const rv_draw_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const rv_draw_item *it = &items[i];
        /* Slot and generation, not the tag: two worlds built alike digest alike. */
        uint64_t words[4] = { it->node.id & 0xFFFFFFFFFFFFull, it->projection_key, it->lod_level, 0 };
        float fade = it->fade;
        memcpy(&words[3], &fade, sizeof fade);
        h = rvi_hash_bytes(h, words, sizeof words);
    }
    return h;
}

uint64_t rv_frame_view_digest(const rv_frame_view *view)
{
    if (!view)
        return 0;
    uint64_t h = rvi_mix64(0x7276697376696577ull ^ view->opaque_count);
    h = digest_list(h, view->opaque, view->opaque_count);
    h = rvi_mix64(h ^ view->translucent_count);
    return digest_list(h, view->translucent, view->translucent_count);
}

/* ---- node boxes -------------------------------------------------------------------------- */

static rv_result set_box(rv_world *world, rv_node node, const float min[3], const float max[3], bool occluder)
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3))
        return RV_ERR_NOT_FINITE;
    if (min[0] > max[0] || min[1] > max[1] || min[2] > max[2])
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f;
    RVI_TRY(rvi_frame_state(world, &f));
    rvi_node_slots *of = occluder ? &f->occluder_of : &f->test_box_of;
    rvi_vec *boxes = occluder ? &f->occluders : &f->test_boxes;
    rvi_node_box b = { i, { min[0], min[1], min[2] }, { max[0], max[1], max[2] } };
    uint32_t at = rvi_node_slots_get(of, i);
    if (at != UINT32_MAX) {
        RVI_VEC_AT(*boxes, rvi_node_box, at) = b;
        return RV_OK;
    }
    /* Make room in both before changing either, so a failure leaves nothing half-made. */
    uint32_t *block, capacity;
    RVI_TRY(rvi_node_slots_prepare(&world->heap, of, i, &block, &capacity));
    rv_result r = rvi_vec_reserve(&world->heap, boxes, sizeof b, boxes->count + 1);
    if (r != RV_OK) {
        if (block != of->record)
            rvi_free(&world->heap, block, (size_t)capacity * sizeof *block);
        return r;
    }
    rvi_node_slots_commit(&world->heap, of, block, capacity);
    of->record[i] = boxes->count;
    RVI_VEC_AT(*boxes, rvi_node_box, boxes->count) = b;
    boxes->count++;
    world->scene.flags[i] |= occluder ? RVI_NODE_OCCLUDER : RVI_NODE_HAS_TEST_BOX;
    return RV_OK;
}

static rv_result clear_box(rv_world *world, rv_node node, bool occluder)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f = rvi_frame_find(world);
    if (!f)
        return RV_OK;
    rvi_frame_drop_box(occluder ? &f->occluder_of : &f->test_box_of, occluder ? &f->occluders : &f->test_boxes, i);
    world->scene.flags[i] &= ~(uint32_t)(occluder ? RVI_NODE_OCCLUDER : RVI_NODE_HAS_TEST_BOX);
    return RV_OK;
}

rv_result rv_node_set_occluder_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    return set_box(world, node, min, max, true);
}
rv_result rv_node_clear_occluder_box(rv_world *world, rv_node node) { return clear_box(world, node, true); }
rv_result rv_node_set_test_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    return set_box(world, node, min, max, false);
}
rv_result rv_node_clear_test_box(rv_world *world, rv_node node) { return clear_box(world, node, false); }

/* ---- world-owned modules ------------------------------------------------------------------- */

rv_result rv_world_journal(rv_world *world, rv_journal **out_journal)
{
    if (!world || !out_journal)
        return RV_ERR_INVALID_ARG;
    rv_render_scene *scene;
    RVI_TRY(rv_world_render_scene(world, &scene));
    *out_journal = rvi_frame_find(world)->journal;
    return RV_OK;
}

rv_result rv_world_render_scene(rv_world *world, rv_render_scene **out_scene)
{
    if (!world || !out_scene)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f;
    RVI_TRY(rvi_frame_state(world, &f));
    if (!f->journal) {
        rv_journal_desc jd;
        memset(&jd, 0, sizeof jd);
        jd.allocator = world->heap.allocator;
        rv_journal *j;
        RVI_TRY(rv_journal_create(&jd, &j));
        rv_render_scene_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.allocator = world->heap.allocator;
        sd.world = world;
        rv_render_scene *s;
        rv_result r = rv_render_scene_create(&sd, &s);
        if (r != RV_OK) {
            rv_journal_destroy(j);
            return r;
        }
        f->journal = j;
        f->render_scene = s;
    }
    *out_scene = f->render_scene;
    return RV_OK;
}

rv_result rv_world_add_grid(rv_world *world, const rv_grid_desc *desc, rv_grid **out_grid)
{
    if (!world || !desc)
        return RV_ERR_INVALID_ARG;
    /* The grid first: it validates the desc, so a refused desc leaves no frame state. */
    rv_grid *grid;
    RVI_TRY(rvi_grid_create_in(&world->heap, desc, &grid));
    rv_grid_desc resolved = rv_grid_get_desc(grid);
    float eye = resolved.eye_radius < 0 ? -1.0f : resolved.eye_radius;
    /* Every frame updates the grid with the host's sources and the eye: refuse now what
     * would make every frame fail (the host could not shrink a world's grid afterwards). */
    const rvi_frame *known = rvi_frame_find(world);
    if (!rvi_grid_sources_fit(grid, known ? RVI_VEC_PTR(known->sources, rv_stream_source) : NULL,
                              known ? known->host_source_count : 0, eye)) {
        rv_grid_destroy(grid);
        return RV_ERR_CAPACITY;
    }
    rvi_frame *f;
    rv_result r = rvi_frame_state(world, &f);
    if (r != RV_OK) {
        rv_grid_destroy(grid);
        return r;
    }
    bool made_residency = false;
    if (!f->residency) {
        r = rvi_residency_create_in(&world->heap, &world->desc.residency, &f->residency);
        made_residency = r == RV_OK;
    }
    if (r == RV_OK)
        r = rvi_vec_reserve(&world->heap, &f->grids, sizeof(rvi_frame_grid), f->grids.count + 1);
    if (r != RV_OK) {
        rv_grid_destroy(grid);
        if (made_residency) {
            rv_residency_destroy(f->residency);
            f->residency = NULL;
        }
        return r;
    }
    rvi_frame_grid g = { grid, eye };
    RVI_TRY(rvi_vec_push(&world->heap, &f->grids, sizeof g, &g));
    if (out_grid)
        *out_grid = grid;
    return RV_OK;
}

rv_result rv_world_set_stream_sources(rv_world *world, const rv_stream_source *sources, uint32_t count)
{
    if (!world || (count && !sources) || count > UINT32_MAX - 1)
        return RV_ERR_INVALID_ARG;
    for (uint32_t i = 0; i < count; i++) {
        if (!rvi_finite_n(sources[i].position, 3) || !isfinite(sources[i].radius))
            return RV_ERR_NOT_FINITE;
        if (sources[i].radius < 0)
            return RV_ERR_INVALID_ARG;
    }
    rvi_frame *f = rvi_frame_find(world);
    for (uint32_t g = 0; f && g < f->grids.count; g++) {
        const rvi_frame_grid *fg = &RVI_VEC_AT(f->grids, rvi_frame_grid, g);
        if (!rvi_grid_sources_fit(fg->grid, sources, count, fg->eye_radius))
            return RV_ERR_CAPACITY; /* every frame would fail on them (see rv_world_add_grid) */
    }
    RVI_TRY(rvi_frame_state(world, &f));
    /* One spare slot for the eye source, so frames never grow this vector. */
    RVI_TRY(rvi_vec_reserve(&world->heap, &f->sources, sizeof *sources, count + 1));
    if (count)
        memcpy(f->sources.data, sources, (size_t)count * sizeof *sources);
    f->sources.count = f->host_source_count = count;
    return RV_OK;
}

rv_residency *rv_world_residency(rv_world *world)
{
    rvi_frame *f = world ? rvi_frame_find(world) : NULL;
    return f ? f->residency : NULL;
}

rv_occlusion *rv_world_occlusion(rv_world *world)
{
    rvi_frame *f = world ? rvi_frame_find(world) : NULL;
    return f ? f->occlusion : NULL;
}

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
