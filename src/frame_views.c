/* Extra views (shadows, reflections): frustum and LOD only, each into a list of its own. */
#include "frame.h"
#include "core/check.h"
#include "frustum.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- extra views --------------------------------------------------------------------------- */

struct rv_view_list {
    rv_world *world;           /* NULL once its world is destroyed */
    rv_allocator allocator;    /* the world's (resolved): frees a list that outlived it */
    rv_view_list *prev, *next; /* the world's lists (view_lists) */
    /* Two arenas: a cull builds in the one its last view does not use, so a cull that fails
     * (out of memory) leaves that view as it was. */
    rvi_vec opaque[2], translucent[2];
    uint32_t shown;            /* the arena of the last view */
    rvi_walk_scratch scratch;
    uint64_t generation;
};

/* The world's lists (module RVI_MODULE_VIEW_LISTS, made with the first list): when the
 * world is destroyed they learn it, so each is then refused by rv_cull_view and freed
 * through its own copy of the allocator, in whatever order the host tears down. */
typedef struct view_lists {
    rv_view_list *first;
} view_lists;

static void view_lists_destroy(rv_world *world, void *state)
{
    view_lists *vl = state;
    for (rv_view_list *l = vl->first, *next; l; l = next) {
        next = l->next;
        l->world = NULL;
        l->prev = l->next = NULL;
    }
    rvi_free(&world->heap, vl, sizeof *vl);
}

rv_result rv_view_list_create(rv_world *world, rv_view_list **out_list)
{
    if (!world || !out_list)
        return RV_ERR_INVALID_ARG;
    view_lists *vl = rvi_world_module(world, RVI_MODULE_VIEW_LISTS);
    bool fresh = !vl;
    if (fresh && !(vl = rvi_calloc(&world->heap, 1, sizeof *vl)))
        return RV_ERR_OUT_OF_MEMORY;
    rv_view_list *l = rvi_calloc(&world->heap, 1, sizeof *l);
    if (!l) {
        if (fresh)
            rvi_free(&world->heap, vl, sizeof *vl);
        return RV_ERR_OUT_OF_MEMORY;
    }
    if (fresh) {
        rvi_module_hooks hooks = { vl, view_lists_destroy, NULL };
        rvi_world_register_module(world, RVI_MODULE_VIEW_LISTS, &hooks);
    }
    l->world = world;
    l->allocator = world->heap.allocator;
    l->next = vl->first;
    if (vl->first)
        vl->first->prev = l;
    vl->first = l;
    *out_list = l;
    return RV_OK;
}

void rv_view_list_destroy(rv_view_list *l)
{
    if (!l)
        return;
    /* While the world lives its heap frees the list (and counts it); after, the allocator. */
    rvi_heap orphan;
    rvi_heap *heap = &orphan;
    if (l->world) {
        view_lists *vl = rvi_world_module(l->world, RVI_MODULE_VIEW_LISTS);
        if (l->prev)
            l->prev->next = l->next;
        else
            vl->first = l->next;
        if (l->next)
            l->next->prev = l->prev;
        heap = &l->world->heap;
    } else {
        rvi_heap_init(&orphan, &l->allocator);
    }
    for (int a = 0; a < 2; a++) {
        rvi_vec_free(heap, &l->opaque[a], sizeof(rv_draw_item));
        rvi_vec_free(heap, &l->translucent[a], sizeof(rv_draw_item));
    }
    rvi_walk_scratch_free(heap, &l->scratch);
    rvi_free(heap, l, sizeof *l);
}

/* The extra view's side of the walk: its camera and HLOD pass, and where it draws. */
typedef struct extra_walk {
    rv_world *world;
    rvi_vec *opaque, *translucent; /* the list's arena being built */
    const rvi_frame_camera *cam;
    const rvi_hlod_pass *pass;
    rv_frame_counts counts;
    rv_result error;
} extra_walk;

/* LOD by apparent size without state (with lod_camera, held at the node's selected level
 * where that camera's hysteresis allows), then the draw item. */
static bool extra_draw(extra_walk *x, uint32_t i)
{
    const rvi_scene *sc = &x->world->scene;
    uint32_t level = 0;
    if (sc->flags[i] & RVI_NODE_HAS_LOD) {
        uint32_t count;
        /* Culled before its frame's LOD pass, a held level looks ahead to that pass, which
         * snaps a node resting at "nothing" whose place the last frame did not see. */
        const rvi_frame *fr = x->cam->lod_from_camera && rvi_lod_frame_pass_due(x->world) ? rvi_frame_find(x->world) : NULL;
        bool unseen = fr && rvi_frame_unseen_last_frame(fr, sc, i);
        rv_result r = rvi_lod_level_of(x->world, i, &x->cam->lod_view, x->cam->lod_from_camera, unseen, &level, &count);
        if (r != RV_OK) {
            x->error = r;
            return false;
        }
        if (level >= count) { /* past the ladder: draw nothing */
            x->counts.lod_culled++;
            return true;
        }
    }
    const rvi_frame *f = rvi_frame_find(x->world);
    if (x->cam->cull_unsampled && rvi_frame_unsampled(x->cam, f, sc, i)) {
        x->counts.unsampled_culled++;
        return true;
    }
    rvi_vec *dst = (sc->flags[i] & RVI_NODE_TRANSLUCENT) ? x->translucent : x->opaque;
    rv_draw_item *it;
    rv_result r = rvi_vec_extend(&x->world->heap, dst, sizeof *it, 1, (void **)&it);
    if (r != RV_OK) {
        x->error = r;
        return false;
    }
    rvi_frame_emit(x->world, it, i, level, 1.0f, rvi_frame_item_depth(x->cam, sc, i));
    return true;
}

static bool extra_visible(void *user, uint32_t i, float weight)
{
    (void)weight;
    return extra_draw(user, i);
}

/* HLOD regions refine by screen-space error and residency, without fading. */
static rvi_walk_action extra_node(void *user, uint32_t i, uint32_t flags, float *weight)
{
    (void)weight;
    extra_walk *x = user;
    bool draw = (flags & RVI_NODE_HAS_GEOMETRY) != 0, descend = true;
    rvi_hlod_decision d = rvi_hlod_peek(x->world, x->pass, i);
    if (d.is_region) {
        draw = draw && d.draw_self;
        descend = d.refine;
        x->counts.hlod_refined += d.refine;
        x->counts.hlod_drawn += d.draw_self;
    }
    draw = draw && rvi_walk_own_geometry_in_view(&x->world->scene, &x->cam->frustum, i,
                                                  x->cam->frustum.plane_mask & RVI_FRUSTUM_ALL_PLANES);
    if (draw && !extra_draw(x, i))
        return RVI_WALK_STOP;
    return descend ? RVI_WALK_DESCEND : RVI_WALK_SKIP;
}

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
    pass.own_geometry = true;

    rvi_scene *sc = &world->scene;
    rvi_heap *heap = &world->heap;
    rvi_walk_policy p = { 0 };
    p.scene = sc;
    p.frustum = &cam.frustum;
    p.node = extra_node;
    p.visible = extra_visible;
    p.hook_flags = RVI_NODE_HAS_HLOD;
    p.hidden_prunes = true;
    p.own_geometry = true;
    /* The nodes' test boxes, where the world keeps any: a sphere straddling a plane is
     * culled when its box lies wholly outside, as in the main view. */
    const rvi_frame *boxes = rvi_frame_find(world);
    p.test_boxes = boxes ? &boxes->test_boxes : NULL;
    extra_walk x;
    rvi_walk_counts c;
    const uint32_t build = 1 - list->shown;
    rvi_vec *opaque = &list->opaque[build], *translucent = &list->translucent[build];
    for (;;) {
        /* The walk changes nothing: a stack found too shallow is deepened and the walk
         * starts over (its depth is kept for the next view). */
        memset(&x, 0, sizeof x);
        memset(&c, 0, sizeof c);
        x.world = world;
        x.opaque = opaque;
        x.translucent = translucent;
        x.cam = &cam;
        x.pass = &pass;
        opaque->count = translucent->count = 0;
        uint32_t depth = list->scratch.stack.capacity > 64 ? list->scratch.stack.capacity : 64;
        RVI_TRY(rvi_vec_reserve(heap, &list->scratch.stack, sizeof(uint32_t), depth));
        rvi_walk_stack stack = { RVI_VEC_PTR(list->scratch.stack, uint32_t), NULL, NULL, list->scratch.stack.capacity,
                                 false };
        rvi_walk_siblings(&p, &x, &stack, sc->first_root, UINT32_MAX, cam.frustum.plane_mask, 1.0f, NULL, &c);
        RVI_TRY(x.error);
        if (!stack.overflowed)
            break;
        RVI_TRY(rvi_vec_reserve(heap, &list->scratch.stack, sizeof(uint32_t), 2 * list->scratch.stack.capacity));
    }
    rv_frame_counts counts = x.counts;
    counts.nodes_visited = c.visited;
    counts.frustum_tested = c.tested;
    counts.frustum_culled = c.outside;
    uint32_t n = opaque->count > translucent->count ? opaque->count : translucent->count;
    RVI_TRY(rvi_frame_reserve_sort(heap, &list->scratch, n));
    rvi_frame_sort(RVI_VEC_PTR(*opaque, rv_draw_item), opaque->count, false, &list->scratch);
    rvi_frame_sort(RVI_VEC_PTR(*translucent, rv_draw_item), translucent->count, true, &list->scratch);
    rvi_frame_count_drawn(opaque, translucent, &counts);
    list->shown = build;
    rv_frame_view v;
    memset(&v, 0, sizeof v);
    v.arena = 2; /* not a world arena */
    v.generation = ++list->generation; /* culls that succeeded: a failed one is not counted */
    v.frame_sequence = list->generation;
    v.opaque = RVI_VEC_PTR(*opaque, rv_draw_item);
    v.opaque_count = opaque->count;
    v.translucent = RVI_VEC_PTR(*translucent, rv_draw_item);
    v.translucent_count = translucent->count;
    v.counts = counts;
    for (int s = 0; s < RV_STAGE_COUNT; s++)
        v.stage_us[s] = -1.0;
    v.frustum = cam.published_frustum;
    *out = v;
    return RV_OK;
}
