/* Partition gating (docs/design.md §3), part 2: the frame. Per-part frustum and slice culling of
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
#include "core/sort.h"
#include "frustum.h"

#include <math.h>
#include <string.h>

/* ---- gating ---------------------------------------------------------------------------- */

/* The gate tests the scene's padded node spheres with frustum.h's rvi_plane_distance and
 * rvi_outside_plane against a widened frustum (the frame's own, or a host's widened at the
 * public calls below), as the frame's walk tests them: it keeps every part whose sphere
 * meets the exact frustum. */

/* The radius of a group's sphere padded by the margin, NaN when the sphere cannot be placed
 * (no radius, or a centre that is not finite: x - x is 0 for a finite x, NaN otherwise), so
 * that every comparison with it is false and the group passes, inside of nothing: every
 * culling decision errs toward drawing. */
static inline float padded_radius(const rvi_partition *p, const float sphere[4])
{
    float not_finite = (sphere[0] - sphere[0]) + (sphere[1] - sphere[1]) + (sphere[2] - sphere[2]);
    return sphere[3] >= 0.0f ? sphere[3] + p->margin + not_finite : NAN;
}

/* True when the group's sphere lies wholly outside the plane that culled it last time, which
 * from one frame to the next usually culls it again (plane coherency, Assarsson & Möller
 * 2000): a group that stays out of view costs one plane. */
static inline bool still_culled(const rvi_partition *p, const rvi_partition_group *g, const float sphere[4],
                                const rv_frustum *f)
{
    uint32_t k = g->cull_plane;
    return (f->plane_mask >> k & 1u) && rvi_outside_plane(rvi_plane_distance(f->planes[k], sphere), padded_radius(p, sphere));
}

/* A group's sphere against the frustum padded by the margin: false when it lies wholly
 * outside a plane of the mask (still_culled first, then all six planes at once, without a
 * branch per plane); otherwise *inside gets the mask's planes it lies wholly inside of. The
 * comparisons of rv_frustum_classify_sphere_masked. */
static bool group_meets_frustum(const rvi_partition *p, rvi_partition_group *g, const float sphere[4],
                                const rv_frustum *f, uint32_t *inside)
{
    *inside = 0;
    if (still_culled(p, g, sphere, f))
        return false;
    float radius = padded_radius(p, sphere);
    uint32_t out = 0, in = 0;
    for (int i = 0; i < 6; i++) {
        float d = rvi_plane_distance(f->planes[i], sphere);
        out |= (uint32_t)rvi_outside_plane(d, radius) << i;
        in |= (uint32_t)(d >= radius) << i;
    }
    uint32_t mask = f->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    out &= mask;
    if (out) {
        uint8_t k = 0;
        while (!(out >> k & 1u))
            k++;
        g->cull_plane = k;
        return false;
    }
    *inside = in & mask;
    return true;
}

/* What a visible group leaves its parts to test. Every part's sphere lies inside the
 * group's, so a plane the group lies wholly inside of (padded) needs no test below it
 * (plane masking, Assarsson & Möller 2000), and neither does an axis of the slice whose
 * range holds the group's extent on it: every part's centre is inside the range there and
 * adds nothing to its distance from the slice. The planes and axes left are listed densely
 * for the parts' loop. */
typedef struct group_view {
    float planes[6][4];
    uint32_t plane_count;
    uint32_t axis_count;
    uint8_t axes[3];
    double slice_min[3], slice_max[3]; /* of axes[j], widened once for every part */
} group_view;

/* inside: the planes the group's sphere lies wholly inside of (group_meets_frustum). */
static void view_group(const rvi_partition *p, const float sphere[4], const rv_frustum *f, uint32_t inside,
                       group_view *v)
{
    uint32_t left = f->plane_mask & RVI_FRUSTUM_ALL_PLANES & ~inside;
    v->plane_count = 0;
    for (int i = 0; i < 6; i++)
        if (left & (1u << i))
            memcpy(v->planes[v->plane_count++], f->planes[i], sizeof v->planes[0]);
    v->axis_count = 0;
    for (uint8_t k = 0; k < 3 && p->has_slice; k++) {
        bool held = sphere[3] >= 0.0f && sphere[k] - sphere[3] >= p->slice_min[k] &&
                    sphere[k] + sphere[3] <= p->slice_max[k];
        if (!held) {
            v->axes[v->axis_count] = k;
            v->slice_min[v->axis_count] = p->slice_min[k];
            v->slice_max[v->axis_count++] = p->slice_max[k];
        }
    }
}

/* For a group the caller decided is visible (a host's walk, a re-gate): the planes are left
 * whole when the gate's own test would find it outside. */
static void view_visible_group(const rvi_partition *p, rvi_partition_group *g, const float sphere[4],
                               const rv_frustum *f, group_view *v)
{
    uint32_t inside;
    if (!group_meets_frustum(p, g, sphere, f, &inside))
        inside = 0;
    view_group(p, sphere, f, inside, v);
}

/* Squared distance from the centre to the slice box on the view's axes (the axes left out
 * add zero), in double: the exact distance of the slice test. At most one side of an axis
 * can exceed; a NaN centre adds nothing, so its part is kept. */
static double slice_distance2(const group_view *v, const float sphere[4])
{
    double d2 = 0.0;
    for (uint32_t j = 0; j < v->axis_count; j++) {
        double c = sphere[v->axes[j]], e = 0.0;
        if (c < v->slice_min[j])
            e = v->slice_min[j] - c;
        else if (c > v->slice_max[j])
            e = c - v->slice_max[j];
        d2 += e * e;
    }
    return d2;
}

/* slice_distance2 without a branch: a side's excess max(x, 0) is (|x| + x) / 2, the same
 * number for a finite centre (2x / 2 = x, -x + x = 0); a centre that is not finite makes a
 * NaN here and takes the exact form. */
static inline double slice_distance2_fast(const group_view *v, const float sphere[4])
{
    double d2 = 0.0;
    for (uint32_t j = 0; j < v->axis_count; j++) {
        double c = sphere[v->axes[j]], below = v->slice_min[j] - c, above = c - v->slice_max[j];
        double e = ((fabs(below) + below) + (fabs(above) + above)) * 0.5;
        d2 += e * e;
    }
    return d2 == d2 ? d2 : slice_distance2(v, sphere);
}

/* One part against its group's view: the planes left (padded by the margin) and the
 * slice's axes left, both tested without a branch on their outcome. A part with no radius
 * or a NaN passes. */
static inline bool part_passes(const group_view *v, float margin, const float sphere[4])
{
    if (!(sphere[3] >= 0.0f))
        return true;
    float radius = sphere[3] + margin;
    bool outside = false;
    for (uint32_t i = 0; i < v->plane_count; i++)
        outside |= rvi_outside_plane(rvi_plane_distance(v->planes[i], sphere), radius);
    double r = sphere[3];
    return !outside & (slice_distance2_fast(v, sphere) <= r * r);
}

/* Gates a group's parts against its view (with only_ungated, just the parts not gated yet
 * this frame), writing only their state bytes. The children are read from the hierarchy,
 * the source of truth: a part may be attached, detached or destroyed at any time, so no
 * list of a group's parts is kept. */
static void gate_parts(const rvi_scene *s, rvi_partition *p, uint32_t group, const group_view *v,
                       bool only_ungated)
{
    /* Locals: the byte stores could otherwise alias every field of p, of the scene and of
     * the view. */
    const group_view view = *v;
    const float margin = p->margin;
    const uint32_t *part_of_node = p->part_of_node, *next_sibling = s->next_sibling;
    const uint32_t node_span = p->node_span;
    const float(*world_sphere)[4] = (const float(*)[4])s->world_sphere;
    uint8_t *states = RVI_VEC_PTR(p->part_state, uint8_t);
    uint32_t *gated_now = RVI_VEC_PTR(p->gated_now, uint32_t);
    uint32_t gated = p->gated_now.count, tested = 0;
    for (uint32_t c = s->first_child[group]; c != RVI_INDEX_NONE; c = next_sibling[c]) {
        /* The node's record, not its flag, says it is a part: one array read, not two. */
        uint32_t index = c < node_span ? part_of_node[c] : RVI_INDEX_NONE;
        if (index == RVI_INDEX_NONE)
            continue;
        uint8_t *state = &states[index];
        bool first = !(*state & PART_GATED);
        if (only_ungated && !first)
            continue;
        bool visible = part_passes(&view, margin, world_sphere[c]);
        *state = (uint8_t)((*state & ~PART_VISIBLE) | PART_GATED | (visible ? PART_VISIBLE : 0u));
        if (first) /* the end judges each part once, from the list of the frame's first decisions */
            gated_now[gated++] = index; /* reserved: one per part */
        tested++;
    }
    p->gated_now.count = gated;
    p->counts.parts_tested += tested;
}

/* The end's re-gate of a group gated earlier this frame: gates the parts added to (or
 * attached under) it since. The view is worked out only when there is one. */
static void gate_late_parts(const rvi_scene *s, rvi_partition *p, rvi_partition_group *g, const rv_frustum *f)
{
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c]) {
        if ((s->flags[c] & RVI_NODE_PARTITION_PART) && !(*part_state(p, part_index(p, c)) & PART_GATED)) {
            group_view view;
            view_visible_group(p, g, s->world_sphere[g->node], f, &view);
            gate_parts(s, p, g->node, &view, true);
            return;
        }
    }
}

/* The nearest gated part at or above node, or RVI_INDEX_NONE. A root group (the common
 * case) costs one read of its parent. */
static uint32_t enclosing_part(const rvi_scene *s, uint32_t node)
{
    for (uint32_t n = node, up = s->parent[n]; up != RVI_INDEX_NONE; n = up, up = s->parent[n])
        if ((s->flags[n] & RVI_NODE_PARTITION_PART) && (s->flags[up] & RVI_NODE_PARTITION_GROUP))
            return n;
    return RVI_INDEX_NONE;
}

/* Gates a group: with its view when the gate's walk has just tested it, else (a host's
 * walk) working the view out. */
static void gate_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, const rv_frustum *f,
                        const group_view *given)
{
    const rvi_scene *s = &world->scene;
    g->stamp = p->frame;
    g->kind = GROUP_GATED;
    if (enclosing_part(s, g->node) != RVI_INDEX_NONE)
        p->nested_gated = p->frame; /* a host hiding an outer group must look for it */
    if (s->first_child[g->node] == RVI_INDEX_NONE)
        return;
    group_view own;
    if (!given)
        view_visible_group(p, g, s->world_sphere[g->node], f, &own);
    gate_parts(s, p, g->node, given ? given : &own, false);
}

/* Flags RVI_NODE_PARTITION_PATH on the nodes above each group up to the part it is nested
 * in, or up to the root for a group in no part (the frame's walk pads them, so it reaches a
 * group within the margin through plain nodes as the gate's own walk does), when the
 * hierarchy or the groups and parts changed since the last marking. It cannot fail: it
 * runs after the frame has drained the journal (see below for a list with no room). Paths
 * that meet share the rest up to the part or the root (no gated part lies between), so a
 * climb stops at the first node already flagged and each node is listed once. */
static void mark_paths(rv_world *world, rvi_partition *p)
{
    rvi_scene *s = &world->scene;
    if (p->paths_marked && p->path_links == s->links_changed && p->path_structure == p->structure)
        return;
    const rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    uint32_t need = 0; /* an upper bound: at most one entry per slot */
    for (uint32_t i = 0; i < p->groups.count && need < s->capacity; i++) {
        uint32_t part = enclosing_part(s, groups[i].node); /* NONE: the climb ends at the root */
        if (part != groups[i].node) /* else a part itself, padded */
            for (uint32_t n = s->parent[groups[i].node]; n != part && need < s->capacity; n = s->parent[n])
                need++;
    }
    /* The marks are taken back by the list of nodes given them, or, when the list had no
     * room (the allocator failed), from every slot: the frame must not fail here, after it
     * has drained the journal. */
    uint32_t *nodes = RVI_VEC_PTR(p->path_nodes, uint32_t);
    if (p->paths_unlisted) {
        for (uint32_t n = 0; n < s->capacity; n++)
            s->flags[n] &= ~(uint32_t)RVI_NODE_PARTITION_PATH;
    } else {
        for (uint32_t k = 0; k < p->path_nodes.count; k++)
            if (nodes[k] < s->capacity)
                s->flags[nodes[k]] &= ~(uint32_t)RVI_NODE_PARTITION_PATH;
    }
    p->path_nodes.count = 0;
    p->paths_unlisted = rvi_vec_reserve(&world->heap, &p->path_nodes, sizeof(uint32_t), need) != RV_OK;
    nodes = RVI_VEC_PTR(p->path_nodes, uint32_t);
    uint32_t count = 0;
    for (uint32_t i = 0; i < p->groups.count; i++) {
        uint32_t part = enclosing_part(s, groups[i].node);
        if (part != groups[i].node)
            for (uint32_t n = s->parent[groups[i].node]; n != part; n = s->parent[n]) {
                if (s->flags[n] & RVI_NODE_PARTITION_PATH)
                    break;
                s->flags[n] |= RVI_NODE_PARTITION_PATH;
                if (!p->paths_unlisted)
                    nodes[count++] = n;
            }
    }
    p->path_nodes.count = count;
    p->path_links = s->links_changed;
    p->path_structure = p->structure;
    p->paths_marked = true;
}

/* Takes back the visible flags of a group gated earlier this frame. */
static void take_back(const rvi_scene *s, rvi_partition *p, rvi_partition_group *g, uint8_t kind)
{
    g->kind = kind;
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c])
        if (s->flags[c] & RVI_NODE_PARTITION_PART)
            *part_state(p, part_index(p, c)) &= (uint8_t)~PART_VISIBLE;
}

/* A group culled as a whole leaves its parts' records alone (a hidden group costs nothing
 * per part): their flags read false through part_flag_visible, and the end of the frame
 * judges every part not gated this frame hidden. Only a group gated earlier in the same
 * frame has flags to take back, and so have the groups nested in its parts that were gated
 * this frame: a host's walk may gate inner groups before its test hides the outer one
 * (gated or not), and each is hidden with it, as a nested group in a hidden part is culled
 * as a whole. The gate's own walk and the world's decide an outer group before any group
 * nested in it, so they have nothing nested to take back unless the group was gated. */
static void hide_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, uint8_t kind)
{
    const rvi_scene *s = &world->scene;
    bool was_gated = g->stamp == p->frame && g->kind == GROUP_GATED;
    g->stamp = p->frame;
    g->kind = kind;
    if (was_gated)
        take_back(s, p, g, kind);
    bool host = kind == GROUP_HIDDEN_BY_HOST && !p->world_frame;
    if (!(was_gated || host) || p->nested_gated != p->frame)
        return;
    /* Nested groups, outermost first pass by pass (as deep as groups are nested). */
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = 0; i < p->groups.count; i++) {
            rvi_partition_group *h = &groups[i];
            if (h->stamp != p->frame || h->kind != GROUP_GATED)
                continue;
            uint32_t part = enclosing_part(s, h->node);
            if (part != RVI_INDEX_NONE && !part_flag_visible(p, s, part_index(p, part))) {
                take_back(s, p, h, kind);
                changed = true;
            }
        }
    }
}

/* Decides one group of the gate's walk: hidden when its sphere misses the padded frustum
 * (whatever holds it), else gated when the part it is nested in, if any, is visible. The
 * sphere comes first: most groups are out of view, and they are then decided without
 * looking up their nesting. False when the group must wait for the group of the part it is
 * nested in to be decided first: on the first pass every nested group waits, since the
 * other groups' todo flags are not all known yet. */
static bool decide_group(rv_world *world, rvi_partition *p, rvi_partition_group *g, const rv_frustum *f,
                         bool first_pass)
{
    const rvi_scene *s = &world->scene;
    const float *sphere = s->world_sphere[g->node];
    uint32_t inside;
    bool visible = group_meets_frustum(p, g, sphere, f, &inside);
    uint32_t part = visible ? enclosing_part(s, g->node) : RVI_INDEX_NONE;
    if (part != RVI_INDEX_NONE) {
        if (first_pass || group_at(p, s->parent[part])->todo)
            return false;
        uint8_t state = *part_state(p, part_index(p, part));
        visible = (state & (PART_GATED | PART_VISIBLE)) == (PART_GATED | PART_VISIBLE);
    }
    if (visible) {
        group_view view;
        view_group(p, sphere, f, inside, &view);
        gate_record(world, p, g, f, &view);
    } else {
        hide_record(world, p, g, GROUP_HIDDEN_BY_TEST);
    }
    g->todo = false;
    return true;
}

/* Decides the groups still marked todo that the first pass left waiting (waiting of them),
 * pass after pass, the outermost first (as many passes as groups are nested deep). */
static void decide_waiting(rv_world *world, rvi_partition *p, const rv_frustum *f, uint32_t waiting)
{
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    while (waiting) {
        uint32_t decided = 0;
        for (uint32_t i = 0; i < p->groups.count; i++)
            if (groups[i].todo)
                decided += decide_group(world, p, &groups[i], f, false);
        if (!decided)
            break; /* unreachable in a tree: the outermost waiting group is always ready */
        waiting -= decided;
    }
}

/* The gate's own walk: gates each group still to decide that is visible, hides the others.
 * At begin that is every group; at the end (retest) the groups not decided this frame and
 * those this test hid that are not still out (the end's frustum or their spheres may differ
 * from begin's). The first pass decides all
 * but the visible nested groups; those wait for the group of the part they are nested in,
 * so further passes repeat until every group is decided (as many as groups are nested
 * deep). */
static void gate_groups(rv_world *world, rvi_partition *p, const rv_frustum *f, bool retest)
{
    const rvi_scene *s = &world->scene;
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    uint32_t waiting = 0;
    /* A gated group can hold an ungated part only when a part was made or a node linked
     * since begin: otherwise its children need no second look. */
    bool late_parts = s->links_changed != p->begin_links || p->parts_made != p->begin_parts;
    for (uint32_t i = 0; i < p->groups.count; i++) {
        rvi_partition_group *g = &groups[i];
        if (g->stamp != p->frame) {
            g->todo = true;
        } else if (!retest || g->kind == GROUP_HIDDEN_BY_HOST) {
            g->todo = false;
        } else if (g->kind == GROUP_GATED) {
            g->todo = false;
            if (late_parts)
                gate_late_parts(s, p, g, f);
        } else { /* hidden by this test: decided again unless it is still out */
            g->todo = !still_culled(p, g, s->world_sphere[g->node], f);
        }
        if (g->todo && !decide_group(world, p, g, f, true))
            waiting++;
    }
    decide_waiting(world, p, f, waiting);
}

void rvi_partition_gate_unplaced(rv_world *world, rvi_partition *p, const rv_frustum *f)
{
    const rvi_scene *s = &world->scene;
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    uint32_t waiting = 0;
    /* Every todo flag is set before any nested group is decided (decide_group reads the
     * flag of the group of the part it is nested in). A hidden one (it or a node above it
     * flagged hidden) stays culled, as the walk prunes its placed neighbours. */
    for (uint32_t i = 0; i < p->groups.count; i++) {
        rvi_partition_group *g = &groups[i];
        g->todo = g->stamp != p->frame && s->world_sphere[g->node][3] < 0.0f && !rvi_scene_flag_at_or_above(s, g->node, RVI_NODE_HIDDEN);
        if (g->todo && !decide_group(world, p, g, f, true))
            waiting++;
    }
    decide_waiting(world, p, f, waiting);
}

rv_result rvi_partition_check_begin(const rvi_partition *p)
{
    return p->in_frame || p->in_callback ? RV_ERR_BAD_STATE : RV_OK;
}

rv_result rvi_partition_frame_begin(rv_world *world, rvi_partition *p, const rv_frustum *gate_all,
                                    bool world_frame)
{
    RVI_TRY(rvi_partition_check_begin(p));
    if (world_frame)
        mark_paths(world, p);
    p->frame++;
    p->in_frame = true;
    p->world_frame = world_frame;
    p->begin_links = world->scene.links_changed;
    p->begin_parts = p->parts_made;
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
    gate_record(world, p, g, frustum, NULL);
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
    return part_at(p, node_index) && !part_flag_visible(p, &world->scene, part_index(p, node_index));
}

/* ---- end of frame ---------------------------------------------------------------------- */

static void wait_for(rvi_partition *p, uint32_t node, uint8_t *state, uint8_t why)
{
    if (!(*state & PART_WAITING))
        RVI_VEC_AT(p->pending, uint32_t, p->pending.count++) = node; /* reserved: one per part */
    *state |= why;
}

/* A part this frame did not show (culled as a whole, tested out, or never reached). A
 * never-seen part stays never seen; a waiting request is dropped: its re-entry will ask
 * again. */
static inline uint8_t judged_hidden(uint8_t state)
{
    return (uint8_t)(state & ~(PART_VISIBLE | PART_GATED | PART_SHOWN | PART_WAITING));
}

/* A part this frame shows that is not active or re-enters (seen before, hidden at the last
 * end): its activation and its resync, which read the record. */
static void judge_transition(rvi_partition *p, uint32_t index, uint8_t *state, bool reentry, double now_ms)
{
    rvi_partition_part *part = part_record(p, index);
    uint32_t node = part->node;
    if (!(*state & PART_ACTIVE)) {
        if (part_answered(p, part))
            *state |= PART_ACTIVE;
        else if (part->asks == 0 || now_ms >= part->expiry_ms)
            wait_for(p, node, state, PART_WAIT_ACTIVATION);
    }
    if (reentry && !part_satisfied(p, part))
        wait_for(p, node, state, PART_WAIT_REENTRY);
    if (!(*state & (PART_ACTIVE | PART_WAITING)) && part->asks && part->expiry_ms < p->wake_at_ms)
        p->wake_at_ms = part->expiry_ms;
}

/* Judges against the previous frame's outcome, and polls readiness of, exactly the parts
 * that can have changed: those visible at the last end and those gated this frame. A part
 * in neither was hidden (or unseen) then and is now: nothing to do, so a frame costs the
 * visible parts, not all of them. The parts gated this frame are judged from gated_now
 * (each listed once), the others visible at the last end are hidden now; the new visible
 * list is written over the old one once it has been read. Only a part that is not active
 * or re-enters reads its record. Collects the earliest expiry of the visible asked parts
 * that do not wait. */
static void judge_parts(rvi_partition *p, double now_ms)
{
    uint8_t *states = RVI_VEC_PTR(p->part_state, uint8_t);
    p->wake_at_ms = INFINITY;
    uint32_t *visible = RVI_VEC_PTR(p->visible_last, uint32_t);
    const uint32_t last_count = p->visible_last.count;
    for (uint32_t i = 0; i < last_count; i++) {
        uint8_t *state = &states[visible[i]];
        if (!(*state & PART_GATED))
            *state = judged_hidden(*state);
    }
    const uint32_t *gated = RVI_VEC_PTR(p->gated_now, uint32_t);
    const uint32_t gated_count = p->gated_now.count;
    uint32_t shown = 0, reentered = 0;
    for (uint32_t i = 0; i < gated_count; i++) {
        uint8_t *state = &states[gated[i]];
        uint8_t was = *state;
        if (!(was & PART_VISIBLE)) {
            *state = judged_hidden(was);
            continue;
        }
        bool reentry = (was & (PART_SEEN | PART_SHOWN)) == PART_SEEN;
        reentered += reentry;
        *state = (uint8_t)((was & ~PART_GATED) | PART_SEEN | PART_SHOWN);
        visible[shown++] = gated[i]; /* reserved: one per part; the old list was read above */
        if (!(was & PART_ACTIVE) || reentry)
            judge_transition(p, gated[i], state, reentry, now_ms);
    }
    p->visible_last.count = shown;
    p->counts.parts_visible = shown;
    p->counts.parts_reentered = reentered;
    p->gated_now.count = 0;
    /* Keep the waiting list in order without the parts that stopped waiting. */
    uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->pending.count; i++)
        if (states[part_index(p, w[i])] & PART_WAITING)
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
        uint32_t index = part_index(p, w[i]);
        const rvi_partition_part *part = part_record(p, index);
        uint8_t *state = part_state(p, index);
        if ((*state & PART_WAIT_ACTIVATION) && part_answered(p, part))
            *state = (uint8_t)((*state & ~PART_WAIT_ACTIVATION) | PART_ACTIVE);
        if ((*state & PART_WAIT_REENTRY) && part_satisfied(p, part))
            *state &= (uint8_t)~PART_WAIT_REENTRY;
        if ((*state & PART_WAITING) && is_gated_part(s, w[i]))
            keys[n++] = (uint64_t)s->parent[w[i]] << 32 | i;
        *state &= (uint8_t)~PART_WAITING;
    }
    rvi_sort(keys, n, sizeof *keys, compare_u64);
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
        uint32_t index = part_index(p, node);
        rvi_partition_part *part = part_record(p, index);
        if (!(*part_state(p, index) & PART_ACTIVE)) {
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
                                  double now_ms, bool hold, rv_partition_result *out)
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
        bool busy = hold || (p->is_update_in_progress && p->is_update_in_progress(p->user));
        if (busy)
            p->counts.parts_held = p->pending.count;
        else
            build_requests(world, p, now_ms);
    }
    p->in_frame = false;
    p->world_frame = false;
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

void rvi_partition_request_bounds(const rvi_partition *p, uint32_t *parts, uint32_t *requests)
{
    *parts = p->out_parts.capacity;
    *requests = p->out_requests.capacity;
}

/* ---- public frame API: thin layers over the hooks -------------------------------------- */

/* A host's frustum, widened as the world's frame widens its own (rvi_frustum_widen): the
 * node spheres the gate tests are padded for the rest of the rounding slack, so the gate
 * keeps every part that meets the exact frustum, as rv_frustum_classify_sphere does,
 * however far from the origin. NULL stays NULL. */
static const rv_frustum *widened(const rv_frustum *frustum, rv_frustum *copy)
{
    if (!frustum)
        return NULL;
    *copy = *frustum;
    rvi_frustum_widen(copy);
    return copy;
}

rv_result rv_partition_begin_frame(rv_world *world, const rv_frustum *frustum)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    if (frustum)
        RVI_TRY(rvi_frustum_check(frustum));
    rvi_partition *p;
    RVI_TRY(rvi_partition_state(world, &p));
    rv_frustum copy;
    return rvi_partition_frame_begin(world, p, widened(frustum, &copy), false);
}

static rv_result group_entry(rv_world *world, rv_node group, uint32_t *index, rvi_partition **p)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_node_index(&world->scene, group, index));
    *p = rvi_partition_find(world);
    /* No gate: no frame was begun. The world's frame gates its groups itself. */
    return *p && !(*p)->world_frame ? RV_OK : RV_ERR_BAD_STATE;
}

rv_result rv_partition_gate_group(rv_world *world, rv_node group, const rv_frustum *frustum)
{
    if (!frustum)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(group_entry(world, group, &index, &p));
    RVI_TRY(rvi_frustum_check(frustum));
    rv_frustum copy;
    return rvi_partition_gate_group(world, p, index, widened(frustum, &copy));
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
    if (!p || p->world_frame) /* the world's frame ends its own gate frame */
        return RV_ERR_BAD_STATE;
    if (frustum)
        RVI_TRY(rvi_frustum_check(frustum));
    rv_frustum copy;
    return rvi_partition_frame_end(world, p, widened(frustum, &copy), now_ms, false, out);
}
