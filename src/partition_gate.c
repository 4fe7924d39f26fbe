/* Partition gating (DESIGN.md §3), part 2: the frame. Per-part frustum and slice culling of
 * partition groups, the targeted resync of parts that re-enter, lazy activation of deferred
 * parts, and the tick demand an on-demand render loop reads.
 *
 * Decisions are made in two steps. Gating a group (begin, or the walk reaching it) only
 * sets each part's hidden flag for this frame, so anything below a part sees this frame's
 * cull at once and a later decision in the same frame (occlusion, a revealed group) simply
 * overrides an earlier one. Transitions (first sight, re-entry, expiry) are judged once, at
 * the end of the frame, against the previous frame's outcome; readiness is read from the
 * leaf reports there and again at the flush, never inferred from a callback having fired. */
#include "partition_state.h"
#include "core/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- gating ---------------------------------------------------------------------------- */

/* Sphere (world x, y, z, r) against the frustum padded by the margin. A sphere with no
 * radius (empty subtree) or a NaN passes: every culling decision errs toward drawing. */
static bool passes_frustum(const rvi_partition *p, const float sphere[4], const rv_frustum *f)
{
    if (!(sphere[3] >= 0.0f))
        return true;
    return rv_frustum_classify_sphere(f, sphere, sphere[3] + p->margin) != RV_OUTSIDE;
}

/* Sphere against the committed slice box: exact distance from the centre to the box. */
static bool passes_slice(const rvi_partition *p, const float sphere[4])
{
    if (!p->has_slice || !(sphere[3] >= 0.0f))
        return true;
    double d2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double c = sphere[k], e = 0.0;
        if (c < p->slice_min[k])
            e = p->slice_min[k] - c;
        else if (c > p->slice_max[k])
            e = c - p->slice_max[k];
        d2 += e * e;
    }
    double r = sphere[3];
    return d2 <= r * r;
}

/* True when the sphere lies wholly inside the committed slice (or there is none). */
static bool inside_slice(const rvi_partition *p, const float sphere[4])
{
    if (!p->has_slice)
        return true;
    for (int k = 0; k < 3; k++)
        if (!(sphere[k] - sphere[3] >= p->slice_min[k] && sphere[k] + sphere[3] <= p->slice_max[k]))
            return false;
    return true;
}

/* The padded sphere test of rv_frustum_classify_sphere_masked, inlined for the per-part
 * loop: the same float expression per plane; a NaN compares false and keeps the part. */
static inline bool outside_planes(const rv_frustum *f, const float c[3], float radius, uint32_t mask)
{
    for (int i = 0; i < 6; i++) {
        const float *pl = f->planes[i];
        if ((mask & (1u << i)) && ((pl[0] * c[0] + pl[1] * c[1]) + pl[2] * c[2]) + pl[3] < -radius)
            return true;
    }
    return false;
}

/* Tests one part against the planes in mask (padded by the margin) and, unless in_slice,
 * against the slice. Skipping a test can only keep a part visible: conservative. */
static void gate_part(const rvi_scene *s, rvi_partition *p, rvi_partition_part *part, const rv_frustum *f,
                      uint32_t mask, bool in_slice)
{
    const float *sphere = s->world_sphere[part->node];
    bool visible = true;
    if (sphere[3] >= 0.0f) {
        visible = !outside_planes(f, sphere, sphere[3] + p->margin, mask & f->plane_mask);
        if (visible && !in_slice)
            visible = passes_slice(p, sphere);
    }
    part->visible = visible;
    if (part->stamp != p->frame) /* first decision this frame: the end judges it */
        RVI_VEC_AT(p->gated_now, uint32_t, p->gated_now.count++) = part->node; /* reserved: one per part */
    part->stamp = p->frame;
    p->counts.parts_tested++;
}

/* Gates a group's parts. The group's world sphere encloses every part's, so a plane it lies
 * wholly inside of (padded) needs no test for its parts, and a group wholly inside the
 * slice needs no slice test below it (plane masking, Assarsson & Möller 2000). */
static void gate_children(const rvi_scene *s, rvi_partition *p, const rvi_partition_group *g,
                          const rv_frustum *f, bool only_ungated)
{
    uint32_t mask = f->plane_mask;
    bool in_slice = !p->has_slice, masked = false;
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c]) {
        if (!(s->flags[c] & RVI_NODE_PARTITION_PART))
            continue;
        rvi_partition_part *part = part_at(p, c);
        if (only_ungated && part->stamp == p->frame)
            continue;
        const float *gs = s->world_sphere[g->node];
        if (!masked && gs[3] >= 0.0f) {
            /* Only the mask is used: the caller decided the group is visible. On OUTSIDE the
             * mask is left whole and the parts are tested in full. */
            (void)rv_frustum_classify_sphere_masked(f, gs, gs[3] + p->margin, &mask);
            in_slice = inside_slice(p, gs);
        }
        masked = true;
        gate_part(s, p, part, f, mask, in_slice);
    }
}

static void gate_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, const rv_frustum *f)
{
    g->stamp = p->frame;
    g->kind = GROUP_GATED;
    gate_children(&world->scene, p, g, f, false);
}

/* A group culled as a whole leaves its parts' records alone (a hidden group costs nothing
 * per part): their flags read false through part_flag_visible, and the end of the frame
 * judges every part not gated this frame hidden. Only a group gated earlier in the same
 * frame has flags to take back. */
static void hide_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, uint8_t kind)
{
    const rvi_scene *s = &world->scene;
    bool was_gated = g->stamp == p->frame && g->kind == GROUP_GATED;
    g->stamp = p->frame;
    g->kind = kind;
    if (!was_gated)
        return;
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c])
        if (s->flags[c] & RVI_NODE_PARTITION_PART)
            part_at(p, c)->visible = false;
}

/* The nearest gated part at or above node, or RVI_INDEX_NONE. */
static uint32_t enclosing_part(const rvi_scene *s, uint32_t node)
{
    for (uint32_t n = node; n != RVI_INDEX_NONE; n = s->parent[n])
        if (is_gated_part(s, n))
            return n;
    return RVI_INDEX_NONE;
}

/* The gate's own walk: gates each group still to decide (not decided this frame, or, with
 * retest, hidden by this test) that is visible, hides the others. A group nested in a part
 * waits for the part's group, so passes repeat until every group is decided (as many passes
 * as groups are nested deep, plus one). */
static void gate_groups(rv_world *world, rvi_partition *p, const rv_frustum *f, bool retest)
{
    const rvi_scene *s = &world->scene;
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    uint32_t todo = 0;
    for (uint32_t i = 0; i < p->groups.count; i++) {
        rvi_partition_group *g = &groups[i];
        g->todo = g->stamp != p->frame || (retest && g->kind == GROUP_HIDDEN_BY_TEST);
        todo += g->todo;
        /* Parts added to (or attached under) a group after it was gated this frame. */
        if (retest && g->stamp == p->frame && g->kind == GROUP_GATED)
            gate_children(s, p, g, f, true);
    }
    while (todo) {
        uint32_t decided = 0;
        for (uint32_t i = 0; i < p->groups.count; i++) {
            rvi_partition_group *g = &groups[i];
            if (!g->todo)
                continue;
            bool above_visible = true;
            uint32_t part = enclosing_part(s, g->node);
            if (part != RVI_INDEX_NONE) {
                if (group_at(p, s->parent[part])->todo)
                    continue; /* its part is decided first */
                const rvi_partition_part *pp = part_at(p, part);
                above_visible = pp->stamp == p->frame && pp->visible;
            }
            const float *sphere = s->world_sphere[g->node];
            /* A retest of a group whose own sphere failed and has not moved keeps its answer. */
            bool unmoved = g->stamp == p->frame && g->sphere_failed &&
                           memcmp(g->tested_sphere, sphere, sizeof g->tested_sphere) == 0;
            bool sphere_passes = above_visible && !unmoved && passes_frustum(p, sphere, f);
            if (above_visible && sphere_passes) {
                gate_record(world, p, g, f);
            } else {
                g->sphere_failed = above_visible;
                memcpy(g->tested_sphere, sphere, sizeof g->tested_sphere);
                hide_record(world, p, g, GROUP_HIDDEN_BY_TEST);
            }
            g->todo = false;
            decided++;
        }
        if (!decided)
            break; /* unreachable in a tree: the outermost waiting group is always ready */
        todo -= decided;
    }
}

rv_result rvi_partition_frame_begin(rv_world *world, rvi_partition *p, const rv_frustum *gate_all)
{
    if (p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    p->frame++;
    p->in_frame = true;
    memset(&p->counts, 0, sizeof p->counts);
    if (gate_all)
        gate_groups(world, p, gate_all, false);
    return RV_OK;
}

static rv_result group_call(rvi_partition *p, uint32_t group_index, rvi_partition_group **g)
{
    if (!p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    *g = group_at(p, group_index);
    return *g ? RV_OK : RV_ERR_NOT_FOUND;
}

rv_result rvi_partition_gate_group(rv_world *world, rvi_partition *p, uint32_t group_index,
                                   const rv_frustum *frustum)
{
    rvi_partition_group *g;
    RVI_TRY(group_call(p, group_index, &g));
    gate_record(world, p, g, frustum);
    return RV_OK;
}

rv_result rvi_partition_hide_group(rv_world *world, rvi_partition *p, uint32_t group_index)
{
    rvi_partition_group *g;
    RVI_TRY(group_call(p, group_index, &g));
    hide_record(world, p, g, GROUP_HIDDEN_BY_HOST);
    return RV_OK;
}

bool rvi_partition_part_hidden(const rv_world *world, const rvi_partition *p, uint32_t node_index)
{
    if (!is_gated_part(&world->scene, node_index))
        return false;
    const rvi_partition_part *part = part_at(p, node_index);
    return part && !part_flag_visible(p, &world->scene, part);
}

/* ---- end of frame ---------------------------------------------------------------------- */

static void wait_for(rvi_partition *p, rvi_partition_part *part, uint8_t why)
{
    if (!part->waiting)
        RVI_VEC_AT(p->pending, uint32_t, p->pending.count++) = part->node; /* reserved: one per part */
    part->waiting |= why;
}

static void judge_part(rvi_partition *p, rvi_partition_part *part, double now_ms)
{
    part->judged = p->frame;
    if (part->stamp != p->frame || !part->visible) {
        /* Culled as a whole, hidden, or never reached. A never-seen part stays never
         * seen; a waiting request is dropped: its re-entry will ask again. */
        part->visible = false;
        if (part->seen == SEEN_VISIBLE)
            part->seen = SEEN_HIDDEN;
        part->waiting = 0;
        return;
    }
    RVI_VEC_AT(p->visible_next, uint32_t, p->visible_next.count++) = part->node; /* reserved */
    bool reentry = part->seen == SEEN_HIDDEN;
    part->seen = SEEN_VISIBLE;
    p->counts.parts_visible++;
    p->counts.parts_reentered += reentry;
    if (!part->active) {
        if (part_answered(p, part))
            part->active = true;
        else if (part->asks == 0 || now_ms >= part->expiry_ms)
            wait_for(p, part, WAIT_ACTIVATION);
    }
    if (reentry && !part_satisfied(p, part))
        wait_for(p, part, WAIT_REENTRY);
    if (!part->active && part->asks && !part->waiting && part->expiry_ms < p->wake_at_ms)
        p->wake_at_ms = part->expiry_ms;
}

/* Judges against the previous frame's outcome, and polls readiness of, exactly the parts
 * that can have changed: those visible at the last end and those gated this frame. A part
 * in neither was hidden (or unseen) then and is now: nothing to do, so a frame costs the
 * visible parts, not all of them. Collects the earliest expiry of the visible asked parts
 * that do not wait. */
static void judge_parts(rvi_partition *p, double now_ms)
{
    p->wake_at_ms = INFINITY;
    p->visible_next.count = 0;
    const rvi_vec *lists[2] = { &p->visible_last, &p->gated_now };
    for (int l = 0; l < 2; l++) {
        const uint32_t *nodes = RVI_VEC_PTR(*lists[l], uint32_t);
        for (uint32_t i = 0; i < lists[l]->count; i++) {
            rvi_partition_part *part = part_at(p, nodes[i]);
            if (part->judged != p->frame)
                judge_part(p, part, now_ms);
        }
    }
    rvi_vec swap = p->visible_last;
    p->visible_last = p->visible_next;
    p->visible_next = swap;
    p->gated_now.count = 0;
    /* Keep the waiting list in order without the parts that stopped waiting. */
    uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->pending.count; i++)
        if (part_at(p, w[i])->waiting)
            w[kept++] = w[i];
    p->pending.count = kept;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Re-reads readiness, then writes one request per group (in group node order, parts in
 * the order they began to wait) into the out arrays and empties the waiting list. */
static void build_requests(rv_world *world, rvi_partition *p, double now_ms)
{
    const rvi_scene *s = &world->scene;
    uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
    uint64_t *keys = RVI_VEC_PTR(p->sort_keys, uint64_t);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->pending.count; i++) {
        rvi_partition_part *part = part_at(p, w[i]);
        if ((part->waiting & WAIT_ACTIVATION) && part_answered(p, part)) {
            part->active = true;
            part->waiting &= (uint8_t)~WAIT_ACTIVATION;
        }
        if ((part->waiting & WAIT_REENTRY) && part_satisfied(p, part))
            part->waiting &= (uint8_t)~WAIT_REENTRY;
        if (part->waiting && is_gated_part(s, w[i]))
            keys[n++] = (uint64_t)s->parent[w[i]] << 32 | i;
        part->waiting = 0;
    }
    qsort(keys, n, sizeof *keys, compare_u64);
    rv_node *out_parts = RVI_VEC_PTR(p->out_parts, rv_node);
    rv_partition_request *out_requests = RVI_VEC_PTR(p->out_requests, rv_partition_request);
    uint32_t requests = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t group = (uint32_t)(keys[k] >> 32);
        uint32_t node = w[(uint32_t)keys[k]];
        if (k == 0 || group != (uint32_t)(keys[k - 1] >> 32))
            out_requests[requests++] = (rv_partition_request){ rvi_node_handle(s, group), &out_parts[k], 0 };
        out_requests[requests - 1].part_count++;
        out_parts[k] = rvi_node_handle(s, node);
        rvi_partition_part *part = part_at(p, node);
        if (!part->active) {
            /* Each unanswered request lengthens the wait: timeout x backoff^asks, capped. */
            part->expiry_ms = now_ms + part->interval_ms;
            part->interval_ms = part->interval_ms * p->backoff < p->cap_ms ? part->interval_ms * p->backoff
                                                                          : p->cap_ms;
            part->asks++;
            p->counts.activations_requested++;
            if (part->expiry_ms < p->wake_at_ms)
                p->wake_at_ms = part->expiry_ms;
        }
    }
    p->out_parts.count = n;
    p->out_requests.count = requests;
    p->counts.parts_requested = n;
    p->pending.count = 0;
}

static rv_tick_demand tick_demand(const rvi_partition *p)
{
    rv_tick_demand t = { RV_TICK_IDLE, 0.0 };
    /* Every waiting part is visible this frame (hidden ones stopped waiting). Only
     * request_reprocess can serve it without the host; held requests otherwise wait for
     * the host to look at its own results. */
    if (p->pending.count && p->request_reprocess)
        t.mode = RV_TICK_CONTINUOUS;
    else if (isfinite(p->wake_at_ms)) {
        t.mode = RV_TICK_WAKE_AT;
        t.wake_at_ms = p->wake_at_ms;
    }
    return t;
}

rv_result rvi_partition_frame_end(rv_world *world, rvi_partition *p, const rv_frustum *regate,
                                  double now_ms, rv_partition_result *out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    if (!p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    if (!isfinite(now_ms))
        return RV_ERR_NOT_FINITE;
    if (regate)
        gate_groups(world, p, regate, true);
    for (uint32_t i = 0; i < p->groups.count; i++) {
        const rvi_partition_group *g = &RVI_VEC_AT(p->groups, rvi_partition_group, i);
        if (g->stamp == p->frame && g->kind == GROUP_GATED)
            p->counts.groups_gated++;
        else
            p->counts.groups_hidden++;
    }
    judge_parts(p, now_ms);
    p->out_parts.count = 0;
    p->out_requests.count = 0;
    if (p->pending.count) {
        bool busy = p->is_update_in_progress && p->is_update_in_progress(p->user);
        if (busy)
            p->counts.parts_held = p->pending.count;
        else
            build_requests(world, p, now_ms);
    }
    p->in_frame = false;
    if (p->request_reprocess && p->out_requests.count) {
        /* Every state change is done: the callback may report leaves (or destroy nodes,
         * which never touches the out arrays) without disturbing the flush. */
        p->in_callback = true;
        for (uint32_t i = 0; i < p->out_requests.count; i++) {
            const rv_partition_request *r = &RVI_VEC_AT(p->out_requests, rv_partition_request, i);
            p->request_reprocess(r->parts, r->part_count, p->user);
        }
        p->in_callback = false;
    }
    out->requests = RVI_VEC_PTR(p->out_requests, rv_partition_request);
    out->request_count = p->out_requests.count;
    out->tick = tick_demand(p);
    out->counts = p->counts;
    return RV_OK;
}

/* ---- public frame API: thin layers over the hooks -------------------------------------- */

rv_result rv_partition_begin_frame(rv_world *world, const rv_frustum *frustum)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p;
    RVI_TRY(rvi_partition_state(world, &p));
    return rvi_partition_frame_begin(world, p, frustum);
}

static rv_result group_entry(rv_world *world, rv_node group, uint32_t *index, rvi_partition **p)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_node_index(&world->scene, group, index));
    *p = rvi_partition_find(world);
    return *p ? RV_OK : RV_ERR_BAD_STATE; /* no gate: no frame was begun */
}

rv_result rv_partition_gate_group(rv_world *world, rv_node group, const rv_frustum *frustum)
{
    if (!frustum)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(group_entry(world, group, &index, &p));
    return rvi_partition_gate_group(world, p, index, frustum);
}

rv_result rv_partition_group_hidden(rv_world *world, rv_node group)
{
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(group_entry(world, group, &index, &p));
    return rvi_partition_hide_group(world, p, index);
}

rv_result rv_partition_end_frame(rv_world *world, const rv_frustum *frustum, double now_ms,
                                 rv_partition_result *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p = rvi_partition_find(world);
    if (!p)
        return RV_ERR_BAD_STATE;
    return rvi_partition_frame_end(world, p, frustum, now_ms, out);
}
