/* HLOD (docs/design.md §5): regions with a geometric error and a resident flag, the cut by
 * screen-space error, its crossfade, and the list of regions whose children to load.
 *
 * Crossfade model: each region has a self weight s in [0, 1] (1 = drawn as itself, 0 =
 * fully refined). A region draws with inherited * s and passes inherited * (1 - s) to its
 * children, so along any path from a top region to the deepest region visited (whose s is
 * 1) the drawn weights telescope to exactly 1: s0 + (1 - s0)(s1 + (1 - s1)(...)). Each s
 * moves linearly toward its target at 1 / crossfade_ms, independently, and the sum stays 1
 * however fades overlap or reverse. */
#include "frustum.h"
#include "lod.h"
#include "core/check.h"
#include "core/node_table.h"
#include "core/sort.h"
#include "core/vec.h"

#include <math.h>
#include <string.h>

/* A self weight this close to 0 or 1 is taken as 0 or 1 (a millionth of a fade). */
#define FADE_SNAP 1e-6f

typedef struct hlod_region {
    uint32_t node_index;    /* first: the node table's key */
    float geometric_error;  /* world units */
    float self_weight;      /* s, see above */
    bool resident;
    bool refining;          /* target of s: false = 1, true = 0 */
    bool returning;         /* out of sight since its latest decision (culled, or a parent
                               that came back), or never decided: the next one shows its
                               cut whole */
} hlod_region;

typedef struct hlod_walk_entry {
    uint32_t node_index;
    uint32_t plane_mask;    /* planes the node's ancestors were not wholly inside of */
    float weight;           /* inherited weight */
} hlod_walk_entry;

typedef struct hlod_state {
    rvi_node_table regions; /* hlod_region per region node */
    rvi_vec stack;          /* hlod_walk_entry, rv_hlod_select's walk */
    rvi_vec draws;          /* rv_hlod_draw, lent out by rv_hlod_select */
    rvi_vec loads;          /* rv_hlod_load, lent out by rv_hlod_select */
} hlod_state;

static void hlod_state_destroy(rv_world *world, void *state)
{
    hlod_state *st = state;
    rvi_node_table_free(&world->heap, &st->regions, sizeof(hlod_region));
    rvi_vec_free(&world->heap, &st->stack, sizeof(hlod_walk_entry));
    rvi_vec_free(&world->heap, &st->draws, sizeof(rv_hlod_draw));
    rvi_vec_free(&world->heap, &st->loads, sizeof(rv_hlod_load));
    rvi_free(&world->heap, st, sizeof *st);
}

static void remove_region(rv_world *world, hlod_state *st, uint32_t node_index)
{
    if (rvi_node_table_remove(&st->regions, sizeof(hlod_region), node_index)) {
        world->scene.flags[node_index] &= ~(uint32_t)RVI_NODE_HAS_HLOD;
        world->scene.edits++;
    }
}

static void hlod_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    remove_region(world, state, node_index);
}

static hlod_region *region_of(hlod_state *st, uint32_t node_index)
{
    return st ? rvi_node_table_find(&st->regions, sizeof(hlod_region), node_index) : NULL;
}

/* A fresh, unregistered state (registered once nothing can fail any more). */
static hlod_state *hlod_state_new(rv_world *world)
{
    hlod_state *st = rvi_alloc(&world->heap, sizeof *st);
    if (st)
        memset(st, 0, sizeof *st);
    return st;
}

static void hlod_state_register(rv_world *world, hlod_state *st)
{
    rvi_module_hooks hooks = { st, hlod_state_destroy, hlod_node_destroyed };
    rvi_world_register_module(world, RVI_MODULE_HLOD, &hooks);
}

rv_result rv_node_set_hlod_region(rv_world *world, rv_node node, float geometric_error)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    if (!isfinite(geometric_error))
        return RV_ERR_NOT_FINITE;
    if (geometric_error < 0.0f)
        return RV_ERR_INVALID_ARG;
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    hlod_region *existing = region_of(st, index);
    if (existing) {
        existing->geometric_error = geometric_error;
        return RV_OK;
    }
    bool created = false;
    if (!st) {
        st = hlod_state_new(world);
        if (!st)
            return RV_ERR_OUT_OF_MEMORY;
        created = true;
    }
    rvi_node_table_room room;
    rv_result r = rvi_node_table_prepare(&world->heap, &st->regions, sizeof(hlod_region), index, &room);
    if (r != RV_OK) {
        if (created)
            hlod_state_destroy(world, st);
        return r;
    }
    /* Never decided, so never seen: its first decision shows the cut it wants whole. */
    hlod_region region = { index, geometric_error, 1.0f, false, false, true };
    rvi_node_table_add(&world->heap, &st->regions, sizeof region, &region, &room);
    world->scene.flags[index] |= RVI_NODE_HAS_HLOD;
    world->scene.edits++;
    if (created)
        hlod_state_register(world, st);
    return RV_OK;
}

rv_result rv_node_clear_hlod_region(rv_world *world, rv_node node)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    if (!region_of(st, index))
        return RV_ERR_NOT_FOUND;
    remove_region(world, st, index);
    return RV_OK;
}

rv_result rv_node_set_hlod_resident(rv_world *world, rv_node node, bool resident)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    hlod_region *region = region_of(rvi_world_module(world, RVI_MODULE_HLOD), index);
    if (!region)
        return RV_ERR_NOT_FOUND;
    region->resident = resident;
    return RV_OK;
}

/* ---- the decision of one region ------------------------------------------------------ */

rv_result rvi_hlod_begin_pass(const rv_world *world, const rv_lod_view *view, float dt_ms,
                              rvi_hlod_pass *pass)
{
    if (!view)
        return RV_ERR_INVALID_ARG;
    float numbers[6] = { view->eye[0], view->eye[1], view->eye[2], view->viewport_height_px, dt_ms,
                         view->orthographic ? view->ortho_height : view->fov_y };
    if (!rvi_finite_n(numbers, 6))
        return RV_ERR_NOT_FINITE;
    if (!(view->viewport_height_px > 0.0f) || dt_ms < 0.0f)
        return RV_ERR_INVALID_ARG;
    if (view->orthographic ? !(view->ortho_height > 0.0f)
                           : !(view->fov_y > 0.0f && view->fov_y < 3.14159265f))
        return RV_ERR_INVALID_ARG;
    rv_lod_desc config;
    RVI_TRY(rvi_lod_world_desc(world, &config));
    rvi_hlod_pass p;
    memset(&p, 0, sizeof p);
    p.view = *view;
    p.root = RVI_INDEX_NONE;
    p.dt_ms = dt_ms;
    p.max_screen_space_error = config.max_screen_space_error;
    p.crossfade_ms = config.crossfade_ms;
    if (view->orthographic)
        p.pixels_at_unit = (double)view->viewport_height_px / view->ortho_height;
    else
        p.pixels_at_unit = (double)view->viewport_height_px / (2.0 * tan(0.5 * (double)view->fov_y));
    *pass = p;
    return RV_OK;
}

/* Next node of a preorder walk of top's subtree (top excluded), not descending below node
 * when descend is false. RVI_INDEX_NONE at the end. No stack: parent links climb back. */
static uint32_t scan_next(const rvi_scene *sc, uint32_t top, uint32_t node, bool descend)
{
    if (descend && sc->first_child[node] != RVI_INDEX_NONE)
        return sc->first_child[node];
    while (node != top) {
        if (sc->next_sibling[node] != RVI_INDEX_NONE)
            return sc->next_sibling[node];
        node = sc->parent[node];
    }
    return RVI_INDEX_NONE;
}

/* How many resident regions without geometry of their own, one under the other, a scan
 * looks through (see scan_children). A chain deeper than this counts as not ready: the
 * region above it draws itself, which leaves no hole, and each scan stays O(1) levels. */
#define PASS_THROUGH_DEPTH 8u

typedef struct child_scan {
    bool any;       /* at least one child region with geometry, or not resident yet */
    bool resident;  /* every such child is resident */
    bool ready;     /* every such child is resident and, passed through, stands on ready
                       children itself: refining leaves no hole */
    bool loadable;  /* some region's children to load would bring ready closer: top's, when a
                       child of its own is not resident, or those of a region passed through
                       below it (false: none known, e.g. only a chain too deep to look into) */
} child_scan;

/* Where a scan lists the regions whose children to load (scan_children with a sink). */
typedef struct load_sink {
    rvi_heap *heap;
    rvi_vec *loads;        /* rv_hlod_load */
    rv_hlod_load request;  /* the urgency every entry gets: the deciding region's */
    rv_result result;      /* the first failure to grow loads */
} load_sink;

static void sink_push(const rvi_scene *sc, load_sink *sink, uint32_t node)
{
    sink->request.region = rvi_node_handle(sc, node);
    if (sink->result == RV_OK)
        sink->result = rvi_vec_push(sink->heap, sink->loads, sizeof(rv_hlod_load), &sink->request);
}

/* In the frame's lists a resident region without geometry of its own is passed through
 * (rvi_hlod_decide), so it stands in for nothing: what stands in its place are its own
 * children. */
static bool passed_through(const rvi_scene *sc, const hlod_region *region, bool own_geometry, uint32_t node)
{
    return own_geometry && region->resident && !(sc->flags[node] & RVI_NODE_HAS_GEOMETRY);
}

/* Looks at the nearest region descendants of top; with reset, puts each back to "drawn as
 * itself", and marks it returning when top came back from out of sight (so it shows its
 * own cut whole too). A resident child with empty bounds covers nothing and is ignored; one
 * that is not resident may have empty bounds only because its data has not arrived, so it
 * counts (and holds top as itself) until it is. A hidden node (on it or a plain node
 * between) is neither drawn nor loaded: it and what is under it are passed over.
 * With own_geometry (the frame's lists), a child passed through is ready only when its own
 * children are, looked at the same way through up to depth such children in a row; reset
 * reaches through it to them too (they are what appears in its place). With a sink, every
 * region met whose children to load (top, and those passed through below it) is listed
 * once: the scan reaches each region by one path only. */
static child_scan scan_children(const rv_world *world, hlod_state *st, uint32_t top, bool own_geometry,
                                uint32_t depth, bool reset, bool returning, load_sink *sink)
{
    const rvi_scene *sc = &world->scene;
    child_scan scan = { false, true, true, false };
    if (sc->first_child[top] == RVI_INDEX_NONE)
        return scan;
    uint32_t node = sc->first_child[top];
    while (node != RVI_INDEX_NONE) {
        if (sc->flags[node] & RVI_NODE_HIDDEN) {
            node = scan_next(sc, top, node, false);
            continue;
        }
        hlod_region *child = region_of(st, node);
        if (child && (sc->world_sphere[node][3] >= 0.0f || !child->resident)) {
            scan.any = true;
            if (!child->resident) {
                if (sink && scan.resident) /* its first child missing: top is listed once */
                    sink_push(sc, sink, top);
                scan.resident = scan.ready = false;
                scan.loadable = true;
            } else if (passed_through(sc, child, own_geometry, node)) {
                if (depth == 0) {
                    scan.ready = false; /* too deep to look: top stands in, nothing to load */
                } else {
                    child_scan below = scan_children(world, st, node, own_geometry, depth - 1, reset, returning,
                                                     sink);
                    scan.ready = scan.ready && below.ready;
                    scan.loadable = scan.loadable || below.loadable;
                }
            }
            if (reset) {
                child->self_weight = 1.0f;
                child->refining = false;
                child->returning = returning;
            }
        }
        node = scan_next(sc, top, node, child == NULL);
    }
    return scan;
}

rv_result rv_hlod_children(const rv_world *world, rv_node region, rv_node *out_children, uint32_t capacity,
                           uint32_t *out_count)
{
    if (!world || !out_count || (!out_children && capacity > 0))
        return RV_ERR_INVALID_ARG;
    uint32_t top;
    RVI_TRY(rvi_node_index(&world->scene, region, &top));
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    if (!region_of(st, top))
        return RV_ERR_NOT_FOUND;
    const rvi_scene *sc = &world->scene;
    uint32_t n = 0;
    for (uint32_t node = sc->first_child[top]; node != RVI_INDEX_NONE;) {
        if (sc->flags[node] & RVI_NODE_HIDDEN) { /* neither drawn nor loaded */
            node = scan_next(sc, top, node, false);
            continue;
        }
        bool is_region = region_of(st, node) != NULL;
        if (is_region) {
            if (n < capacity)
                out_children[n] = rvi_node_handle(sc, node);
            n++;
        }
        node = scan_next(sc, top, node, !is_region);
    }
    *out_count = n;
    return n > capacity ? RV_ERR_CAPACITY : RV_OK;
}

/* How many plain nodes region_above climbs through before it answers false. */
#define ABOVE_CLIMB 64u

/* True when a region above node, within the walk (up to and including its top), lists
 * its children whenever one of them is not resident: it asks for node itself. A region
 * more than ABOVE_CLIMB nodes above counts as none (node then asks for its children
 * itself, as before it could be asked for), so the climb costs O(1). */
static bool region_above(const rvi_scene *sc, const rvi_hlod_pass *pass, uint32_t node)
{
    if (node == pass->root)
        return false;
    uint32_t steps = 0;
    for (uint32_t a = sc->parent[node]; a != RVI_INDEX_NONE && steps < ABOVE_CLIMB; a = sc->parent[a], steps++) {
        if (sc->flags[a] & RVI_NODE_HAS_HLOD)
            return true;
        if (a == pass->root)
            break;
    }
    return false;
}

rvi_hlod_decision rvi_hlod_decide(rv_world *world, rvi_hlod_pass *pass, uint32_t node_index,
                                  bool culled, bool unseen)
{
    rvi_hlod_decision d;
    memset(&d, 0, sizeof d);
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    hlod_region *region = region_of(st, node_index);
    if (!region)
        return d;
    d.is_region = true;
    const float *sphere = world->scene.world_sphere[node_index];
    if (culled || sphere[3] < 0.0f) {
        /* Not refined; when it comes back it shows the cut it wants then, whole. */
        region->self_weight = 1.0f;
        region->refining = false;
        region->returning = true;
        return d;
    }
    /* Back from out of sight: nobody saw its cut change, so no crossfade shows it changing. */
    bool snap = region->returning || unseen;
    region->returning = false;
    const rv_lod_view *view = &pass->view;
    double dx = (double)sphere[0] - view->eye[0];
    double dy = (double)sphere[1] - view->eye[1];
    double dz = (double)sphere[2] - view->eye[2];
    double distance = sqrt(dx * dx + dy * dy + dz * dz) - sphere[3];
    double sse;
    if (!view->orthographic && distance <= 0.0)
        sse = INFINITY;
    else if (view->orthographic)
        sse = region->geometric_error * pass->pixels_at_unit;
    else
        sse = region->geometric_error * pass->pixels_at_unit / distance;
    d.distance = distance > 0.0 ? (float)distance : 0.0f;
    d.screen_space_error = (float)sse;

    float s = region->self_weight;
    bool settled_self = !region->refining && s >= 1.0f;
    /* The dt of this pass is time that passed before it: advance the running fade first. */
    if (pass->crossfade_ms > 0.0f) {
        float step = pass->dt_ms / pass->crossfade_ms;
        s = region->refining ? fmaxf(0.0f, s - step) : fminf(1.0f, s + step);
        /* Steps of dt / crossfade accumulate rounding: land exactly on the ends. */
        if (s < FADE_SNAP)
            s = 0.0f;
        else if (s > 1.0f - FADE_SNAP)
            s = 1.0f;
    }
    /* Drawn as itself, a region without geometry of its own would leave a hole where its
     * children are: in the frame it is passed through like one that is not loaded, and
     * more: being resident, all of its subtree is what stands there, plain nodes and
     * regions alike, whether it has region children or not. */
    bool own = !pass->own_geometry || (world->scene.flags[node_index] & RVI_NODE_HAS_GEOMETRY);
    bool drawable = region->resident && own;
    bool pass_through = region->resident && !own;
    /* Only a region that can stand in looks through its passed-through children: one that
     * cannot passes through to them, and they decide for themselves. */
    child_scan children = scan_children(world, st, node_index, pass->own_geometry,
                                        drawable ? PASS_THROUGH_DEPTH : 0, false, false, NULL);
    bool want_refine = children.any && sse > pass->max_screen_space_error;
    bool refining;
    if (!drawable) {
        /* It cannot be drawn: pass through to whatever below is resident. */
        refining = children.any || pass_through;
        s = refining ? 0.0f : 1.0f;
        /* With a child missing, something must be loaded for its place: its children when
         * it wants to refine, or is or would be resident without geometry of its own (only
         * they can stand there), or nothing above can ask for it; else itself, which the
         * region above asks for (it lists its own children: this one is missing), and
         * which, loaded, is drawn as itself. */
        d.wants_load = children.any && !children.resident &&
                       (want_refine || region->resident || !own || !region_above(&world->scene, pass, node_index));
    } else if (!children.any || !children.ready) {
        /* Never a hole: with a child missing, or one passed through that would leave a hole,
         * the region is drawn fully, at once. The children to load may be those of regions
         * passed through below it (loading its own, resident already, would change nothing):
         * rvi_hlod_list_loads names them all. */
        refining = false;
        s = 1.0f;
        d.wants_load = want_refine && children.loadable;
        d.loads_below = d.wants_load && pass->own_geometry;
    } else {
        refining = want_refine;
    }
    if (refining && settled_self && drawable) /* children start as themselves */
        scan_children(world, st, node_index, pass->own_geometry, PASS_THROUGH_DEPTH, true, snap, NULL);
    if ((pass->crossfade_ms < 0.0f || snap) && drawable && children.any && children.ready)
        s = refining ? 0.0f : 1.0f;
    region->refining = refining;
    region->self_weight = s;
    d.self_weight = s;
    d.draw_self = drawable && s > 0.0f;
    d.refine = (children.any || pass_through) && (refining || s < 1.0f);
    if (drawable && children.any && (refining ? s > 0.0f : s < 1.0f))
        pass->fading++;
    return d;
}

rv_result rvi_hlod_list_loads(rv_world *world, uint32_t node_index, float screen_space_error, float distance,
                              rvi_vec *loads)
{
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    if (!region_of(st, node_index))
        return RV_ERR_INVARIANT;
    load_sink sink = { &world->heap, loads, { { 0 }, screen_space_error, distance }, RV_OK };
    (void)scan_children(world, st, node_index, true, PASS_THROUGH_DEPTH, false, false, &sink);
    return sink.result;
}

/* ---- rv_hlod_select ------------------------------------------------------------------ */

int rvi_hlod_compare_loads(const void *a, const void *b)
{
    const rv_hlod_load *x = a, *y = b;
    if (x->screen_space_error != y->screen_space_error)
        return x->screen_space_error > y->screen_space_error ? -1 : 1;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    return (x->region.id > y->region.id) - (x->region.id < y->region.id);
}

/* A new block for at least need elements when vec holds fewer (geometric growth; the old
 * contents are not needed: the walk starts empty), else *block = NULL. */
static rv_result fresh_block(rvi_heap *heap, const rvi_vec *vec, size_t elem, uint32_t need,
                             void **block, uint32_t *capacity)
{
    *block = NULL;
    *capacity = 0;
    if (need <= vec->capacity)
        return RV_OK;
    uint64_t cap = vec->capacity ? vec->capacity : 8;
    while (cap < need)
        cap *= 2;
    *block = rvi_alloc(heap, (size_t)cap * elem);
    if (!*block)
        return RV_ERR_OUT_OF_MEMORY;
    *capacity = (uint32_t)cap;
    return RV_OK;
}

/* Pushes node's children (walk order: first child popped first). Capacity is reserved. */
static void push_children(const rvi_scene *sc, rvi_vec *stack, uint32_t node, uint32_t mask, float weight)
{
    uint32_t first = stack->count;
    for (uint32_t c = sc->first_child[node]; c != RVI_INDEX_NONE; c = sc->next_sibling[c]) {
        hlod_walk_entry e = { c, mask, weight };
        RVI_VEC_AT(*stack, hlod_walk_entry, stack->count++) = e;
    }
    /* Reverse so the first child is on top. */
    hlod_walk_entry *v = RVI_VEC_PTR(*stack, hlod_walk_entry);
    for (uint32_t i = first, j = stack->count; i + 1 < j; i++, j--) {
        hlod_walk_entry t = v[i];
        v[i] = v[j - 1];
        v[j - 1] = t;
    }
}

rv_result rv_hlod_select(rv_world *world, rv_node root, const rv_lod_view *view,
                         const rv_frustum *frustum, float dt_ms, rv_hlod_result *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t root_index;
    RVI_TRY(rvi_node_index(&world->scene, root, &root_index));
    rvi_hlod_pass pass;
    RVI_TRY(rvi_hlod_begin_pass(world, view, dt_ms, &pass));
    pass.root = root_index;
    if (frustum)
        RVI_TRY(rvi_frustum_check(frustum));

    /* Get every block first (the walk pushes each node at most once and lists each region
     * at most once), as fresh blocks adopted only when all were obtained: a failure changes
     * nothing (the previous result stays valid) and the walk cannot fail. */
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    bool created = false;
    if (!st) {
        st = hlod_state_new(world);
        if (!st)
            return RV_ERR_OUT_OF_MEMORY;
        created = true;
    }
    rvi_heap *heap = &world->heap;
    struct { rvi_vec *vec; size_t elem; uint32_t need; void *block; uint32_t capacity; } grow[3] = {
        { &st->stack, sizeof(hlod_walk_entry), world->scene.pool.live + 1, NULL, 0 },
        { &st->draws, sizeof(rv_hlod_draw), st->regions.records.count + 1, NULL, 0 },
        { &st->loads, sizeof(rv_hlod_load), st->regions.records.count + 1, NULL, 0 },
    };
    rv_result r = RV_OK;
    for (int i = 0; i < 3 && r == RV_OK; i++)
        r = fresh_block(heap, grow[i].vec, grow[i].elem, grow[i].need, &grow[i].block, &grow[i].capacity);
    if (r != RV_OK) {
        for (int i = 0; i < 3; i++)
            rvi_free(heap, grow[i].block, (size_t)grow[i].capacity * grow[i].elem);
        if (created)
            hlod_state_destroy(world, st);
        return r;
    }
    for (int i = 0; i < 3; i++)
        if (grow[i].block) {
            rvi_free(heap, grow[i].vec->data, (size_t)grow[i].vec->capacity * grow[i].elem);
            grow[i].vec->data = grow[i].block;
            grow[i].vec->capacity = grow[i].capacity;
            grow[i].vec->count = 0;
        }
    if (created)
        hlod_state_register(world, st);

    const rvi_scene *sc = &world->scene;
    st->stack.count = st->draws.count = st->loads.count = 0;
    rv_hlod_result result;
    memset(&result, 0, sizeof result);
    hlod_walk_entry top = { root_index, frustum ? frustum->plane_mask : 0u, 1.0f };
    /* A root under a hidden node: its whole subtree is hidden. */
    if (!rvi_scene_flag_at_or_above(sc, sc->parent[root_index], RVI_NODE_HIDDEN))
        RVI_VEC_AT(st->stack, hlod_walk_entry, st->stack.count++) = top;
    while (st->stack.count) {
        hlod_walk_entry e = RVI_VEC_AT(st->stack, hlod_walk_entry, --st->stack.count);
        const float *sphere = sc->world_sphere[e.node_index];
        if (sphere[3] < 0.0f || (sc->flags[e.node_index] & RVI_NODE_HIDDEN))
            continue; /* nothing with geometry below, or hidden with all below it */
        bool culled = false;
        if (frustum && e.plane_mask)
            culled = rv_frustum_classify_sphere_masked(frustum, sphere, sphere[3], &e.plane_mask) == RV_OUTSIDE;
        if (!(sc->flags[e.node_index] & RVI_NODE_HAS_HLOD)) {
            if (!culled)
                push_children(sc, &st->stack, e.node_index, e.plane_mask, e.weight);
            continue;
        }
        rvi_hlod_decision d = rvi_hlod_decide(world, &pass, e.node_index, culled, false);
        result.regions_visited++;
        if (culled) {
            result.regions_culled++;
            continue;
        }
        rv_node handle = rvi_node_handle(sc, e.node_index);
        if (d.draw_self) {
            rv_hlod_draw draw = { handle, e.weight * d.self_weight, d.screen_space_error };
            RVI_VEC_AT(st->draws, rv_hlod_draw, st->draws.count++) = draw;
        }
        if (d.wants_load) {
            rv_hlod_load load = { handle, d.screen_space_error, d.distance };
            RVI_VEC_AT(st->loads, rv_hlod_load, st->loads.count++) = load;
        }
        if (d.refine)
            push_children(sc, &st->stack, e.node_index, e.plane_mask, e.weight * (1.0f - d.self_weight));
    }
    if (st->loads.count > 1)
        rvi_sort(st->loads.data, st->loads.count, sizeof(rv_hlod_load), rvi_hlod_compare_loads);
    result.draws = RVI_VEC_PTR(st->draws, rv_hlod_draw);
    result.draw_count = st->draws.count;
    result.loads = RVI_VEC_PTR(st->loads, rv_hlod_load);
    result.load_count = st->loads.count;
    result.regions_fading = pass.fading;
    *out = result;
    return RV_OK;
}

/* ---- a stateless decision, for extra views ---------------------------------------------- */

bool rvi_hlod_drawn_whole(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index, bool unseen)
{
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    const hlod_region *region = region_of(st, node_index);
    if (!region)
        return true;
    if (world->scene.world_sphere[node_index][3] < 0.0f)
        return false;
    if (region->returning || unseen) { /* its decision shows the cut it wants whole */
        rvi_hlod_decision d = rvi_hlod_peek(world, pass, node_index);
        return d.draw_self && !d.refine;
    }
    bool own = !pass->own_geometry || (world->scene.flags[node_index] & RVI_NODE_HAS_GEOMETRY);
    return region->resident && own && !region->refining && region->self_weight >= 1.0f;
}

rvi_hlod_cover rvi_hlod_cover_below(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index,
                                    bool unseen)
{
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    const hlod_region *region = region_of(st, node_index);
    if (!region)
        return RVI_HLOD_THROUGH;
    if (world->scene.world_sphere[node_index][3] < 0.0f)
        return RVI_HLOD_NOTHING; /* nothing with geometry below: the walk passes it over */
    if (region->returning || unseen) {
        rvi_hlod_decision d = rvi_hlod_peek(world, pass, node_index);
        return d.draw_self && !d.refine ? RVI_HLOD_STAND_IN : d.refine ? RVI_HLOD_THROUGH : RVI_HLOD_NOTHING;
    }
    bool own = !pass->own_geometry || (world->scene.flags[node_index] & RVI_NODE_HAS_GEOMETRY);
    bool drawable = region->resident && own;
    child_scan children = scan_children(world, st, node_index, pass->own_geometry,
                                        drawable ? PASS_THROUGH_DEPTH : 0, false, false, NULL);
    if (!drawable) /* passed through, as rvi_hlod_decide does */
        return children.any || region->resident ? RVI_HLOD_THROUGH : RVI_HLOD_NOTHING;
    /* Settled as itself, or a child missing or not ready (drawn as itself at once): the
     * stand-in. */
    if ((!region->refining && region->self_weight >= 1.0f) || !children.any || !children.ready)
        return RVI_HLOD_STAND_IN;
    return RVI_HLOD_THROUGH; /* refined, or crossfading with its children */
}

rvi_hlod_decision rvi_hlod_peek(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index)
{
    rvi_hlod_decision d;
    memset(&d, 0, sizeof d);
    hlod_state *st = rvi_world_module(world, RVI_MODULE_HLOD);
    hlod_region *region = region_of(st, node_index);
    const float *sphere = world->scene.world_sphere[node_index];
    if (!region || sphere[3] < 0.0f) {
        d.is_region = region != NULL;
        return d;
    }
    d.is_region = true;
    const rv_lod_view *view = &pass->view;
    double dx = (double)sphere[0] - view->eye[0];
    double dy = (double)sphere[1] - view->eye[1];
    double dz = (double)sphere[2] - view->eye[2];
    double distance = sqrt(dx * dx + dy * dy + dz * dz) - sphere[3];
    double sse = view->orthographic ? region->geometric_error * pass->pixels_at_unit
                 : distance <= 0.0   ? INFINITY
                                     : region->geometric_error * pass->pixels_at_unit / distance;
    d.distance = distance > 0.0 ? (float)distance : 0.0f;
    d.screen_space_error = (float)sse;
    /* As rvi_hlod_decide: a region that is not resident, or has no geometry of its own to
     * draw in the view's lists, cannot stand in for its children; a resident one without
     * geometry passes its whole subtree through. */
    bool own = !pass->own_geometry || (world->scene.flags[node_index] & RVI_NODE_HAS_GEOMETRY);
    bool drawable = region->resident && own;
    child_scan children = scan_children(world, st, node_index, pass->own_geometry,
                                        drawable ? PASS_THROUGH_DEPTH : 0, false, false, NULL);
    if (!drawable)
        d.refine = children.any || region->resident; /* whatever below is resident stands in */
    else
        d.refine = children.any && children.ready && sse > pass->max_screen_space_error;
    d.draw_self = drawable && !d.refine;
    d.self_weight = d.draw_self ? 1.0f : 0.0f;
    return d;
}
