/* The cull stage of a frame (docs/design.md §8): persistent occluders submitted
 * (frame_nodes.c), the main view's walk (frame_walk.c; its hooks are here:
 * partition gate, group occlusion, HLOD, candidates), then the object passes over the
 * candidates: LOD selection, occlusion tests, then the draw items (frame_emit.c). Each pass is a
 * parallel-for over chunks of candidates whose outputs land at places fixed by their index,
 * so the result does not depend on which worker ran what. */
#include "frame.h"
#include "core/check.h"
#include "core/prefetch.h"
#include "frustum.h"
#include "occlusion_test.h"
#include "partition.h"
#include "scene.h"

#include <math.h>
#include <string.h>

#define NONE RVI_INDEX_NONE
/* Candidates per job of an object pass. */
/* The most records one visit writes besides its HLOD children's culls: a load, a
 * candidate, a cull, a deferral. */
#define VISIT_RECORDS 4u
#define F_EPS (1.0f / 16777216.0f)

/* ---- occlusion tests ------------------------------------------------------------------------ */

/* The buffer's own tests, read-only (workers test at once; the frame adds the tests to the
 * buffer's stats afterwards): a box under a matrix, or a sphere through its world box
 * rounded outward, as rvi_occlusion_box_visible and rvi_occlusion_sphere_visible, each
 * after a first look at its centre (rvi_occ_box_look). The object pass makes the looks
 * and footprints of eight at a time (rvi_occ_lanes_look_footprint, or rvi_occ_lanes_look
 * then rvi_occ_lanes_footprint: the same answers). */

/* Up to eight tests waiting to be settled: lane j tests min[j]..max[j] under m[j] (NULL:
 * world space), the node's test box (box[j]) or the world box around its sphere (kept in
 * sphere_box[j]); settle_lanes copies the boxes into lanes for the vectorised kernels. */
typedef struct test_lanes {
    rvi_occ_lanes lanes;
    const float *min[8], *max[8], *m[8];
    float sphere_box[8][6];
    bool box[8];
    uint32_t k[8]; /* the object pass's candidate of each lane */
    uint32_t n;
} test_lanes;

/* Volume of a local box under m (|det| of the linear part times the box volume). */
static float box_world_volume(const float m[16], const float mn[3], const float mx[3])
{
    float det = m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) +
                m[8] * (m[1] * m[6] - m[5] * m[2]);
    return fabsf(det) * (mx[0] - mn[0]) * (mx[1] - mn[1]) * (mx[2] - mn[2]);
}

/* What tests node i, in lane j: its test box or its sphere, whichever is smaller. sphere
 * is the world sphere to test (subtree for groups, own geometry for objects). False when
 * nothing can hide the node: its sphere is unbounded (an unknown placement,
 * RVI_NODE_STALE, at or below the node, or an overflow: it covers the whole view, and the
 * test box under a stale matrix must not be trusted either) or not a number. */
static bool lane_of(const rvi_frame *f, const rvi_scene *sc, uint32_t i, const float sphere[4], test_lanes *t,
                    uint32_t j)
{
    if (!(sphere[3] < INFINITY))
        return false;
    rvi_node_box *b = rvi_node_table_find(&f->test_boxes, sizeof *b, i);
    if (b) {
        const float *m = sc->world_matrix[i];
        float sphere_volume = 4.18879f * sphere[3] * sphere[3] * sphere[3];
        /* Kept between frames while no matrix changes: a node is tested at most once a
         * pass, so no two workers write the same record. */
        if (b->volume_edits != sc->edits) {
            b->world_volume = box_world_volume(m, b->min, b->max);
            b->volume_edits = sc->edits;
        }
        if (b->world_volume <= sphere_volume) {
            t->min[j] = b->min;
            t->max[j] = b->max;
            t->m[j] = m;
            t->box[j] = true;
            return true;
        }
    }
    float r = sphere[3];
    if (!(r >= 0))
        return false;
    float *mn = t->sphere_box[j], *mx = mn + 3;
    for (int a = 0; a < 3; a++) {
        mn[a] = sphere[a] - r;
        mx[a] = sphere[a] + r;
        mn[a] -= fabsf(mn[a]) * (2 * F_EPS);
        mx[a] += fabsf(mx[a]) * (2 * F_EPS);
    }
    t->min[j] = mn;
    t->max[j] = mx;
    t->m[j] = NULL;
    t->box[j] = false;
    return true;
}

/* The verdict on lane j once its look and footprint are made: the pyramid, then for a
 * test box the refined test. */
static bool lane_hidden(const rvi_frame *f, const test_lanes *t, uint32_t j, const rvi_occ_footprint *fp,
                        uint64_t *feed_hidden)
{
    const rv_occlusion *occ = f->occlusion;
    if (fp->on != RVI_OCC_ON)
        return false;
    bool box = t->box[j];
    bool hidden = rvi_occ_hz_hidden(occ, f->hz, fp->x0, fp->y0, fp->x1, fp->y1, fp->nearness) ||
                  (box && rvi_occ_box_refined_hidden(occ, t->min[j], t->max[j], t->m[j], fp));
    if (hidden && occ->feed_applied)
        *feed_hidden += !rvi_occ_feed_hidden_alone(occ, box ? t->min[j] : NULL, box ? t->max[j] : NULL,
                                                   box ? t->m[j] : NULL, fp, box);
    return hidden;
}

/* Whether this frame tests anything against its buffer: there is one, and it can hide
 * something (a frame whose occluders all fall outside the view, or that has none, tests
 * nothing and walks as without occlusion). */
static inline bool occlusion_tests(const rvi_frame *f)
{
    return f->occlusion && !f->occlusion_empty;
}

/* Occlusion verdict for node i, on its own (the walk's groups and subtrees). */
static bool node_hidden(const rvi_frame *f, const rvi_scene *sc, uint32_t i, const float sphere[4],
                        uint64_t *feed_hidden)
{
    test_lanes t;
    if (!lane_of(f, sc, i, sphere, &t, 0))
        return false;
    rvi_occ_footprint fp;
    rvi_occ_box_look(f->occlusion, t.min[0], t.max[0], t.m[0], &fp);
    return lane_hidden(f, &t, 0, &fp, feed_hidden);
}

/* ---- the main view's walk hooks --------------------------------------------------------------- */

static inline void put(rvi_frame_worker *w, uint32_t node, uint32_t kind, float weight, uint32_t count)
{
    rvi_walk_record r = { node, kind, weight, count };
    RVI_VEC_AT(w->records, rvi_walk_record, w->records.count++) = r;
    w->budget--;
}

bool rvi_frame_place_unseen_last_frame(const rvi_frame *f, const rvi_scene *sc, uint32_t node, uint32_t *mask)
{
    const rv_frustum *last = &f->walked_frustum;
    *mask = last->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    if (f->sequence == 0)
        return false; /* no frame published yet */
    if (f->walked_hid_groups) {
        const uint32_t *hidden = RVI_VEC_PTR(f->group_hidden, uint32_t), last_frame = (uint32_t)f->sequence;
        for (uint32_t a = node; a != RVI_INDEX_NONE; a = sc->parent[a])
            if (a < f->group_hidden.count && hidden[a] == last_frame)
                return true;
    }
    const float *ws = sc->world_sphere[node];
    return rvi_classify_sphere_masked(last, ws, ws[3], mask) == RV_OUTSIDE;
}

static void main_culled(void *user, uint32_t node, rv_cull_reason reason)
{
    rvi_frame_worker *w = user;
    if (reason == RV_CULL_FRUSTUM && (w->world->scene.flags[node] & RVI_NODE_HAS_HLOD)) {
        uint64_t t0 = walk_timer_start(w->world, &w->lod_timer, w->serial && w->world->desc.clock_ns);
        (void)rvi_hlod_decide(w->world, &w->hlod, node, true, false);
        walk_timer_stop(w->world, &w->lod_timer, t0);
    }
    if (w->world->desc.record_culls)
        put(w, node, RVI_REC_CULL | (uint32_t)reason << 8, 0.0f, 0);
}

static bool main_visible(void *user, uint32_t node, float weight)
{
    put(user, node, RVI_REC_CANDIDATE, weight, 0);
    return true;
}

static uint32_t main_visible_run(void *user, uint32_t first, uint64_t lanes, float weight)
{
    uint32_t n = 0;
    for (; lanes; lanes &= lanes - 1, n++)
        put(user, first + (uint32_t)__builtin_ctzll(lanes), RVI_REC_CANDIDATE, weight, 0);
    return n;
}

static void main_defer(void *user, uint32_t first, uint32_t count, uint32_t mask, float weight)
{
    rvi_frame_worker *w = user;
    put(w, first, RVI_REC_DEFER | mask << 8, weight, count);
    w->defers++;
}

/* rvi_walk_own_geometry_in_view for the main view's hooks (the walk's policy own_geometry
 * covers the nodes handed out without one): a node left out is named RV_CULL_FRUSTUM when
 * culls are recorded. */
static bool own_geometry_seen(rvi_frame_worker *w, uint32_t i)
{
    const rv_frustum *f = &w->frame->cam.frustum;
    if (rvi_walk_own_geometry_in_view(&w->world->scene, f, i, f->plane_mask & RVI_FRUSTUM_ALL_PLANES))
        return true;
    if (w->world->desc.record_culls)
        put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_FRUSTUM << 8, 0.0f, 0);
    return false;
}

/* A candidate from the hook, past the size cutoff as the walk's own candidates are. */
static void hook_candidate(rvi_frame_worker *w, uint32_t i, uint32_t flags, float weight, bool tested)
{
    const rvi_scene *sc = &w->world->scene;
    if ((flags & RVI_NODE_HAS_LOD) && w->policy->cutoff_sq && rvi_walk_cut(w->policy, i, sc->world_sphere[i])) {
        w->walk.cut++;
        if (w->world->desc.record_culls)
            put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_LOD_NOTHING << 8, 0.0f, 0);
        return;
    }
    put(w, i, tested ? RVI_REC_TESTED : RVI_REC_CANDIDATE, weight, 0);
}

/* An HLOD region the walk reached: drawn as itself, refined into its children, or both
 * while the cut crossfades. */
static rvi_walk_action hook_region(rvi_frame_worker *w, uint32_t i, uint32_t flags, const rvi_hlod_decision *d,
                                   float *weight)
{
    rv_world *world = w->world;
    bool record = world->desc.record_culls;
    if (d->wants_load) { /* with the region's urgency, by which the frame orders its loads */
        uint32_t distance;
        memcpy(&distance, &d->distance, sizeof distance);
        put(w, i, RVI_REC_LOAD | (d->loads_below ? RVI_LOAD_BELOW << 8 : 0u), d->screen_space_error, distance);
    }
    if (d->draw_self && (flags & RVI_NODE_HAS_GEOMETRY)) {
        float self = *weight * d->self_weight;
        if (self > 0 && own_geometry_seen(w, i))
            hook_candidate(w, i, flags, self, false);
        w->counts.hlod_drawn++;
    }
    float below = *weight * (d->draw_self ? 1.0f - d->self_weight : 1.0f);
    if (d->refine)
        w->counts.hlod_refined++;
    if ((!d->refine || below <= 0) && record) {
        const rvi_scene *sc = &world->scene;
        for (uint32_t c = sc->first_child[i]; c != NONE; c = sc->next_sibling[c])
            put(w, c, RVI_REC_CULL | (uint32_t)RV_CULL_HLOD_REPLACED << 8, 0.0f, 0);
    }
    if (!d->draw_self && !d->refine && (flags & RVI_NODE_HAS_GEOMETRY) && record)
        put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_HLOD_REPLACED << 8, 0.0f, 0); /* not resident, nothing below */
    if (!d->refine || below <= 0)
        return RVI_WALK_SKIP;
    *weight = below;
    return RVI_WALK_DESCEND;
}

/* Temporal coherence for subtree tests (rv_world_desc.group_retest_frames): a subtree the
 * last test found visible is tested again on the frames of its own phase, at least every
 * n frames; in between the walk enters it as if the test had passed (the node's own
 * geometry untested, as then). Skipping a test only ever draws more: the objects below are
 * still tested one by one. The phases count from the last change of the occlusion desc
 * (rv_world_set_occlusion), which also forgets every verdict. */
static bool group_test_skipped(const rv_world *world, const rvi_frame *f, uint32_t i)
{
    uint32_t n = world->desc.group_retest_frames;
    uint32_t seen = RVI_VEC_AT(f->group_seen, uint32_t, i);
    uint32_t now = (uint32_t)f->sequence + 1u; /* this frame's rv_frame_view.frame_sequence */
    uint32_t phase = now - (uint32_t)f->group_phase_base;
    return n > 1 && seen != 0 && now - seen < n && (phase + i * 2654435761u) % n != 0;
}

/* A partition part or group passed the walk's frustum test padded by the gate's margin (so
 * that the groups in it are gated as the gate's own walk would): is it in the view itself? */
static bool part_in_view(const rvi_frame_worker *w, const rvi_scene *sc, uint32_t i, uint32_t flags)
{
    const rvi_walk_policy *p = w->policy;
    const float *ws = sc->world_sphere[i];
    uint32_t mask = RVI_FRUSTUM_ALL_PLANES;
    if (rvi_classify_sphere_masked(p->frustum, ws, ws[3], &mask) == RV_OUTSIDE)
        return false;
    return !(mask && p->test_boxes && (flags & RVI_NODE_HAS_TEST_BOX) && rvi_walk_test_box_outside(p, i));
}

/* A node of the main view that passed the frustum and needs more than that: partition
 * parts and groups, group occlusion, HLOD regions. */
static rvi_walk_action main_node(void *user, uint32_t i, uint32_t flags, float *weight)
{
    rvi_frame_worker *w = user;
    rv_world *world = w->world;
    rvi_frame *f = w->frame;
    const rvi_scene *sc = &world->scene;
    rvi_partition *gate = f->gate;
    bool timed = w->serial && world->desc.clock_ns;
    if ((flags & RVI_NODE_PARTITION_PART) && gate && rvi_partition_part_hidden(world, gate, i)) {
        w->counts.partition_culled++;
        if (world->desc.record_culls)
            put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_PARTITION << 8, 0.0f, 0);
        return RVI_WALK_SKIP;
    }
    /* A part or group within the margin but out of view is walked on only for the groups
     * in it (the node itself, when it is one, and those nested in it; its other nodes meet
     * the frustum's own test), and not drawn. */
    bool out_of_view = (flags & (RVI_NODE_PARTITION_PART | RVI_NODE_PARTITION_GROUP)) && gate &&
                       !part_in_view(w, sc, i, flags);
    if (out_of_view && world->desc.record_culls && (flags & RVI_NODE_HAS_GEOMETRY))
        put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_FRUSTUM << 8, 0.0f, 0);
    bool group = (flags & RVI_NODE_PARTITION_GROUP) && gate;
    bool tested = false, subtree_test = !out_of_view && occlusion_tests(f) && sc->first_child[i] != NONE;
    if (subtree_test && group_test_skipped(world, f, i)) {
        /* As when the test passes: the node's own geometry is not tested on its own either,
         * so what is drawn does not change between the frames that test and those that skip. */
        tested = true;
    } else if (subtree_test) {
        uint64_t t0 = walk_timer_start(world, &w->occlusion_timer, timed);
        w->counts.occlusion_tested++;
        bool hidden = node_hidden(f, sc, i, sc->world_sphere[i], &w->feed_hidden);
        walk_timer_stop(world, &w->occlusion_timer, t0);
        uint32_t *seen = RVI_VEC_PTR(f->group_seen, uint32_t), now = (uint32_t)f->sequence + 1u;
        seen[i] = hidden ? 0 : now;
        if (hidden) {
            RVI_VEC_AT(f->group_hidden, uint32_t, i) = now;
            w->groups_hidden++;
            w->counts.occlusion_culled++;
            if (group) {
                rv_result r = rvi_partition_hide_group(world, gate, i);
                if (r != RV_OK)
                    w->error = r;
            }
            if (world->desc.record_culls)
                put(w, i, RVI_REC_CULL | (uint32_t)RV_CULL_OCCLUSION << 8, 0.0f, 0);
            return RVI_WALK_SKIP;
        }
        tested = true;
    }
    if (group) {
        uint64_t t0 = walk_timer_start(world, &w->partition_timer, timed);
        rv_result r = rvi_partition_gate_group(world, gate, i, &f->cam.frustum);
        walk_timer_stop(world, &w->partition_timer, t0);
        if (r != RV_OK && r != RV_ERR_NOT_FOUND)
            w->error = r;
    }
    if (out_of_view)
        return sc->first_child[i] != NONE ? RVI_WALK_DESCEND : RVI_WALK_SKIP;
    if (flags & RVI_NODE_HAS_HLOD) {
        uint64_t t0 = walk_timer_start(world, &w->lod_timer, timed);
        uint32_t mask;
        rvi_hlod_decision d = rvi_hlod_decide(world, &w->hlod, i, false, rvi_frame_place_unseen_last_frame(f, sc, i, &mask));
        walk_timer_stop(world, &w->lod_timer, t0);
        if (d.is_region)
            return hook_region(w, i, flags, &d, weight);
    }
    if ((flags & RVI_NODE_HAS_GEOMETRY) && own_geometry_seen(w, i))
        hook_candidate(w, i, flags, *weight, tested);
    return RVI_WALK_DESCEND;
}

/* The main view's policies: on the calling thread (everything) and on workers (partition
 * groups handed back to the calling thread). */
static void main_policies(rv_world *world, rvi_frame *f, rvi_walk_policy *jobs, rvi_walk_policy *serial)
{
    rvi_partition *gate = f->gate;
    rvi_walk_policy p = { 0 };
    p.scene = &world->scene;
    p.frustum = &f->cam.frustum;
    p.node = main_node;
    p.visible = main_visible;
    p.visible_run = main_visible_run;
    p.culled = main_culled;
    p.defer = main_defer;
    p.hook_flags = RVI_NODE_HAS_HLOD | (gate ? RVI_NODE_PARTITION_PART | RVI_NODE_PARTITION_GROUP : 0);
    p.hook_parents = occlusion_tests(f);
    p.node_cost = VISIT_RECORDS;
    p.children_cost = world->desc.record_culls ? RVI_NODE_HAS_HLOD : 0;
    p.culled_flags = RVI_NODE_HAS_HLOD;
    p.record_culls = world->desc.record_culls;
    p.hidden_prunes = true;
    p.own_geometry = true;
    /* Groups and parts within the gate's margin are walked (parts out of view not drawn),
     * so every group the gate would see is gated: the nested ones too. */
    p.pad_flags = gate ? RVI_NODE_PARTITION_GROUP | RVI_NODE_PARTITION_PART | RVI_NODE_PARTITION_PATH : 0;
    p.pad = gate ? rvi_partition_margin(gate) : 0.0f;
    p.test_boxes = &f->test_boxes;
    /* The cutoff is the perspective LOD's (an orthographic view's angle does not fall
     * with distance). */
    if (!f->cam.orthographic) {
        p.cutoff_sq = rvi_lod_cutoff(world, &p.cutoff_count);
        memcpy(p.eye, f->cam.lod_view.eye, sizeof p.eye);
    }
    /* Summaries drop subtrees without a record of why each piece was not drawn. */
    if (!world->desc.record_culls)
        p.summaries = &f->summaries;
    *serial = p;
    /* On workers partition groups go back to the calling thread (the gate is not for
     * workers); without a job system every item runs on the calling thread anyway. */
    if (f->jobs.parallel_for && gate)
        p.defer_flags = RVI_NODE_PARTITION_GROUP;
    *jobs = p;
}

/* ---- the object passes -------------------------------------------------------------------- */

/* Each candidate's LOD is selected first, then only what draws something is tested against
 * the occluders, then drawn: a candidate at "nothing" costs no occlusion test, and a
 * hidden node's level keeps up with the view (revealed, it shows the level it should). */

typedef rvi_object_lod object_lod;

/* How far ahead the object passes fetch what a candidate's work reads. The LOD pass, the
 * first to read a candidate, fetches its world sphere, flags, cutoff and the slot's entry
 * in the LOD record map first, then (half as far ahead, the entry being there by then)
 * the record; the occlusion pass the slot's entry in the test box map, then the box record
 * and the world matrix (the place pass fetches its own: frame_emit.c). Where the candidates lie scattered over the scene's arrays (nodes not
 * created in walk order), each would otherwise wait on those lines from memory. The
 * helpers are always inline: GCC drops a call to a function that does nothing but
 * prefetch. */
#define PREFETCH_MAP 32u
#define PREFETCH_RECORD 16u

static RVI_ALWAYS_INLINE void prefetch_lod(const rvi_object_pass *p, const rvi_scene *sc, const rvi_node_table *records,
                                           size_t record_bytes, const float *cutoff, uint32_t slots, uint32_t k,
                                           uint32_t last)
{
    if (k + PREFETCH_MAP < last) {
        uint32_t node = p->cands[k + PREFETCH_MAP].node;
        RVI_PREFETCH(sc->world_sphere[node]);
        RVI_PREFETCH(&sc->flags[node]);
        if (node < slots) {
            RVI_PREFETCH(&records->record_of[node]);
            RVI_PREFETCH(&cutoff[node]);
        }
    }
    if (records && k + PREFETCH_RECORD < last) {
        const char *rec = rvi_node_table_find(records, record_bytes, p->cands[k + PREFETCH_RECORD].node);
        if (rec) {
            RVI_PREFETCH(rec);
            RVI_PREFETCH(rec + record_bytes - 1);
        }
    }
}

/* A node resting at "nothing" that the walk reaches: was the place where it is now out of
 * sight on the last published frame (its sphere, own geometry or test box outside that
 * frame's frustum, or in a subtree of its present ancestors that frame's occlusion test
 * hid)? Then it shows the level it should at once, as an object the occlusion test hid on
 * its own does: nobody saw that place stay empty. One in view but too small to leave
 * "nothing" was dropped by the walk for its size: it fades in. */
bool rvi_frame_unseen_last_frame(const rvi_frame *f, const rvi_scene *sc, uint32_t node)
{
    uint32_t mask;
    if (rvi_frame_place_unseen_last_frame(f, sc, node, &mask))
        return true;
    const rv_frustum *last = &f->walked_frustum;
    if (mask && (sc->flags[node] & RVI_NODE_HAS_TEST_BOX)) {
        rvi_walk_policy box = { 0 };
        box.scene = sc;
        box.frustum = last;
        box.test_boxes = &f->test_boxes;
        if (rvi_walk_test_box_outside(&box, node))
            return true;
    }
    return !rvi_walk_own_geometry_in_view(sc, last, node, last->plane_mask & RVI_FRUSTUM_ALL_PLANES);
}

static void lod_job(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end)
{
    rvi_object_pass *p = context;
    rv_world *world = p->world;
    const rvi_scene *sc = &world->scene;
    uint32_t last = end * RVI_OBJECT_CHUNK < p->count ? end * RVI_OBJECT_CHUNK : p->count;
    /* Selection writes cutoffs in place; it adds no record, so the array stays where it is. */
    uint32_t count;
    const float *cutoff = rvi_lod_cutoff(world, &count);
    size_t record_bytes;
    const rvi_node_table *records = rvi_lod_records(world, &record_bytes);
    for (uint32_t k = begin * RVI_OBJECT_CHUNK; k < last; k++) {
        prefetch_lod(p, sc, records, record_bytes, cutoff, count, k, last);
        rvi_candidate c = p->cands[k];
        /* Written field by field where it lives: built on the stack and copied out, its
         * narrow fields' stores could not forward to the copy's wide loads, a stall per
         * candidate. */
        object_lod *o = &p->lod[k];
        o->level[0] = o->level[1] = 0;
        o->fade[0] = o->fade[1] = 0.0f;
        o->forget = 0;
        uint32_t n = 0;
        if (sc->flags[c.node] & RVI_NODE_HAS_LOD) {
            rv_lod_selection sel;
            uint32_t nothing = 0;
            bool resting = c.node < count && cutoff[c.node] > 0.0f;
            bool snap = resting && rvi_frame_unseen_last_frame(p->f, sc, c.node);
            rv_result r = rvi_lod_select_node(world, c.node, &p->f->cam.lod_view, &sel, &nothing, &w->fade_end_ms, snap);
            o->forget = resting && !(cutoff[c.node] > 0.0f);
            if (r != RV_OK) {
                w->error = r;
                sel.count = 0;
            }
            /* The level past the ladder means "draw nothing". */
            for (uint32_t s = 0; s < sel.count; s++)
                if (sel.weights[s] > 0 && sel.levels[s] < nothing) {
                    o->level[n] = sel.levels[s];
                    o->fade[n++] = c.weight * sel.weights[s];
                }
            w->counts.lod_culled += n == 0;
            o->lod_nothing = n == 0;
        } else {
            o->fade[0] = c.weight;
            n = 1;
            o->lod_nothing = 0;
        }
        o->n = n;
    }
}

static RVI_ALWAYS_INLINE void prefetch_test(const rvi_object_pass *p, const rvi_scene *sc, uint32_t k, uint32_t last)
{
    const rvi_node_table *boxes = &p->f->test_boxes;
    if (k + PREFETCH_MAP < last) {
        uint32_t node = p->cands[k + PREFETCH_MAP].node;
        RVI_PREFETCH(sc->world_sphere[node]);
        if (node < boxes->capacity)
            RVI_PREFETCH(&boxes->record_of[node]);
    }
    if (k + PREFETCH_RECORD < last) {
        uint32_t node = p->cands[k + PREFETCH_RECORD].node;
        const char *box = rvi_node_table_find(boxes, sizeof(rvi_node_box), node);
        if (box) {
            RVI_PREFETCH(box);
            RVI_PREFETCH(box + sizeof(rvi_node_box) - 1);
            RVI_PREFETCH(sc->world_matrix[node]);
        }
    }
}

static void visible_item(const rvi_object_pass *p, uint32_t k, uint32_t counts[2])
{
    const rvi_scene *sc = &p->world->scene;
    p->state[k] = RVI_OBJECT_VISIBLE;
    counts[(sc->flags[p->cands[k].node] & RVI_NODE_TRANSLUCENT) != 0] += p->lod[k].n;
}

/* The verdicts of the lanes in t: the looks at their centres, then, where one is not seen,
 * the footprints and the lookups. counts: the chunk's visible items (opaque, translucent).
 * *fused: make the footprints in the same pass as the looks (cheaper when most lanes need
 * them) rather than after them (when few do); set for the next lanes from how many these
 * needed. Either way the same answers. */
static void settle_lanes(const rvi_object_pass *p, rvi_frame_worker *w, test_lanes *t, bool *fused, uint32_t counts[2])
{
    if (t->n == 0)
        return;
    const rv_occlusion *occ = p->f->occlusion;
    rvi_occ_lanes_set_all(occ, &t->lanes, t->n, t->min, t->max, t->m);
    rvi_occ_footprint fp[8];
    uint32_t seen, all = (1u << t->n) - 1;
    if (*fused) {
        seen = rvi_occ_lanes_look_footprint(occ, &t->lanes, t->n, fp);
    } else {
        seen = rvi_occ_lanes_look(occ, &t->lanes, t->n);
        if (seen != all)
            rvi_occ_lanes_footprint(occ, &t->lanes, ~seen & all, fp);
    }
    uint32_t needed = 0;
    for (uint32_t j = 0; j < t->n; j++) {
        uint32_t k = t->k[j];
        if ((seen >> j) & 1u) {
            visible_item(p, k, counts);
            continue;
        }
        needed++;
        bool hidden = lane_hidden(p->f, t, j, &fp[j], &w->feed_hidden);
        w->counts.occlusion_culled += hidden;
        if (hidden)
            p->state[k] = RVI_OBJECT_HIDDEN;
        else
            visible_item(p, k, counts);
    }
    *fused = needed > 1;
    t->n = 0;
}

static void occlusion_job(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end)
{
    rvi_object_pass *p = context;
    const rvi_scene *sc = &p->world->scene;
    bool tests = occlusion_tests(p->f);
    test_lanes t;
    t.n = 0;
    bool fused = true;
    for (uint32_t chunk = begin; chunk < end; chunk++) {
        uint32_t counts[2] = { 0, 0 };
        uint32_t last = (chunk + 1) * RVI_OBJECT_CHUNK < p->count ? (chunk + 1) * RVI_OBJECT_CHUNK : p->count;
        for (uint32_t k = chunk * RVI_OBJECT_CHUNK; k < last; k++) {
            if (tests)
                prefetch_test(p, sc, k, last);
            rvi_candidate c = p->cands[k];
            const object_lod *o = &p->lod[k];
            if (o->n == 0) {
                p->state[k] = RVI_OBJECT_NOTHING;
                continue;
            }
            if (p->f->cam.cull_unsampled && rvi_frame_unsampled(&p->f->cam, p->f, sc, c.node)) {
                p->state[k] = RVI_OBJECT_UNSAMPLED;
                w->counts.unsampled_culled++;
                continue;
            }
            if (tests && !c.tested) {
                /* A leaf's world sphere encloses exactly its own geometry; a node with
                 * children needs its own geometry's sphere. */
                float g[4];
                const float *sphere = sc->world_sphere[c.node];
                if (sc->first_child[c.node] != NONE) {
                    rvi_scene_geometry_sphere(sc, c.node, g);
                    sphere = g;
                }
                w->counts.occlusion_tested++;
                if (!RVI_OCC_LANES) {
                    bool hidden = node_hidden(p->f, sc, c.node, sphere, &w->feed_hidden);
                    w->counts.occlusion_culled += hidden;
                    if (hidden) {
                        p->state[k] = RVI_OBJECT_HIDDEN;
                        continue;
                    }
                } else if (lane_of(p->f, sc, c.node, sphere, &t, t.n)) {
                    t.k[t.n++] = k;
                    if (t.n == 8)
                        settle_lanes(p, w, &t, &fused, counts);
                    continue;
                }
            }
            visible_item(p, k, counts);
        }
        settle_lanes(p, w, &t, &fused, counts);
        p->chunk_counts[2 * chunk] = counts[0];
        p->chunk_counts[2 * chunk + 1] = counts[1];
    }
}

/* LOD selection (hysteresis, crossfade) of every candidate. A node that stops resting at
 * "nothing" makes the walk's summaries over it stale: they are cleared. */
static rv_result lod_pass(rv_world *world, rvi_frame *f, rvi_object_pass *p)
{
    rvi_lod_note_frame_selection(world);
    RVI_TRY(rvi_frame_parallel(world, f, lod_job, p, p->chunks, 1));
    RVI_TRY(rvi_frame_workers_error(f));
    for (uint32_t k = 0; k < p->count; k++)
        if (p->lod[k].forget)
            rvi_walk_forget(&f->summaries, &world->scene, p->cands[k].node);
    return RV_OK;
}

/* Occlusion tests of the candidates that draw something and that the walk did not test
 * (groups it did), with each chunk's item counts. Hidden ones, and those at "nothing",
 * are recorded in candidate order after the walk's records. */
static rv_result occlusion_pass(rv_world *world, rvi_frame *f, rvi_object_pass *p)
{
    if (p->count) /* no candidates: the scratch may never have been allocated (NULL) */
        memset(p->state, RVI_OBJECT_UNSET, p->count);
    RVI_TRY(rvi_frame_parallel(world, f, occlusion_job, p, p->chunks, 1));
    RVI_TRY(rvi_frame_workers_error(f));
    for (uint32_t k = 0; k < p->count; k++) {
        if (p->state[k] == RVI_OBJECT_UNSET)
            return RV_ERR_INVARIANT; /* the job system skipped it */
        if (p->state[k] != RVI_OBJECT_VISIBLE && world->desc.record_culls) {
            rv_cull_reason why = p->state[k] == RVI_OBJECT_HIDDEN      ? RV_CULL_OCCLUSION
                                 : p->state[k] == RVI_OBJECT_UNSAMPLED ? RV_CULL_UNSAMPLED
                                                                   : RV_CULL_LOD_NOTHING;
            rv_cull_record rec = { rvi_node_handle(&world->scene, p->cands[k].node), why };
            RVI_TRY(rvi_vec_push(&world->heap, &f->arenas[f->building].culls, sizeof rec, &rec));
        }
    }
    return RV_OK;
}


/* ---- the stage ---------------------------------------------------------------------------- */

/* Scratch of the object passes for n candidates. */
static rv_result object_scratch(rv_world *world, rvi_frame *f, rvi_object_pass *p)
{
    rvi_heap *heap = &world->heap;
    uint32_t n = f->scratch.candidates.count, chunks = (n + RVI_OBJECT_CHUNK - 1) / RVI_OBJECT_CHUNK;
    RVI_TRY(rvi_vec_reserve(heap, &f->object_state, 1, n));
    RVI_TRY(rvi_vec_reserve(heap, &f->selections, sizeof(object_lod), n));
    RVI_TRY(rvi_vec_reserve(heap, &f->chunk_counts, sizeof(uint32_t), 4 * chunks));
    p->world = world;
    p->f = f;
    p->cands = RVI_VEC_PTR(f->scratch.candidates, rvi_candidate);
    p->count = n;
    p->chunks = chunks;
    p->state = f->object_state.data;
    p->lod = f->selections.data;
    p->chunk_counts = f->chunk_counts.data;
    return RV_OK;
}

rv_result rvi_frame_cull(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if (!f || f->state != RVI_FRAME_BEGUN)
        return RV_ERR_BAD_STATE;
    /* From here the cull changes the frame (the node occluders join the buffer, the walk
     * fills the arena and notes its tests): one that fails cannot be resumed, retried or
     * joined by more occluders, so until it succeeds the frame is open for abort alone. */
    f->state = RVI_FRAME_FAILED;
    bool timed = world->desc.clock_ns != NULL;
    uint64_t t0 = rvi_clock_now(world);
    if (f->occlusion) {
        RVI_TRY(rvi_frame_submit_occluders(world, f));
        f->occlusion->held = false;
        RVI_TRY(rv_occlusion_freeze(f->occlusion));
        rvi_occ_feed_prepare(f->occlusion); /* before the workers read it */
        f->hz_levels = rvi_hz_levels_of(f->occlusion);
        f->hz = &f->hz_levels;
        f->occlusion_empty = rvi_occ_nothing_drawn(f->occlusion);
    }
    uint64_t t1 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_OCCLUSION, t0, t1);

    RVI_TRY(rvi_frame_walk_begin(world, f));
    rvi_walk_policy jobs_policy, serial_policy;
    main_policies(world, f, &jobs_policy, &serial_policy);
    rv_result walked = rvi_frame_walk(world, f, &jobs_policy, &serial_policy);
    uint64_t t2 = rvi_clock_now(world);
    if (timed)
        rvi_frame_charge_walk(f, t1, t2);
    RVI_TRY(walked);

    rvi_object_pass pass;
    RVI_TRY(object_scratch(world, f, &pass));
    RVI_TRY(lod_pass(world, f, &pass));
    uint64_t t3 = rvi_clock_now(world);
    RVI_TRY(occlusion_pass(world, f, &pass));
    uint64_t t4 = rvi_clock_now(world);
    uint64_t sort_ns = 0;
    RVI_TRY(rvi_frame_emit_pass(world, f, &pass, &sort_ns));
    if (timed) {
        uint64_t t5 = rvi_clock_now(world);
        rvi_stage_add(f, RV_STAGE_LOD, t2, t3);
        rvi_stage_add(f, RV_STAGE_OCCLUSION, t3, t4);
        rvi_stage_add(f, RV_STAGE_LOD, t4, t5 >= sort_ns ? t5 - sort_ns : t4);
        f->stage_us[RV_STAGE_PUBLISH] += (double)sort_ns / 1000.0;
    }
    rvi_frame_workers_end(world, f);
    f->culled_frustum = f->cam.frustum;
    f->culled_hid_groups = false;
    for (uint32_t k = 0; k < f->worker_count; k++)
        f->culled_hid_groups |= f->workers[k].groups_hidden != 0;
    if (f->occlusion) {
        rv_occlusion_stats os = rv_occlusion_get_stats(f->occlusion);
        f->counts.occluders_rasterised = os.occluders_rasterized;
    }
    f->state = RVI_FRAME_CULLED;
    return RV_OK;
}
