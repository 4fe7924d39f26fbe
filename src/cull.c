/* The hierarchy walk (docs/design.md §2), shared by every caller (cull.h); its public forms
 * rv_visit_visible and rv_collect_visible are in cull_public.c.
 *
 * Depth first, pre-order, children in their attach order, with an explicit stack of one
 * entry per level (the sibling the level is at), so any depth works. Leaves, the bulk of a
 * scene, are taken in a tight loop along their sibling list without a trip through the
 * stack. */
#include "cull.h"
#include "frustum.h"
#include "core/inline.h"
#include "core/prefetch.h"

#include <math.h>
#include <string.h>

#define NONE RVI_INDEX_NONE
#define INDEX_BITS 0x00FFFFFFu /* slot indices are < 2^24 (RVI_POOL_MAX_SLOTS) */

static inline uint32_t pack(uint32_t index, uint32_t mask) { return index | (mask << 24); }

/* ---- summaries --------------------------------------------------------------------------- */

static inline void acc_reset(rvi_walk_acc *a)
{
    a->k = INFINITY;
    a->r = 0.0f;
    a->ok = 1;
}

static inline void acc_fold(rvi_walk_acc *a, float k, float r, uint32_t ok)
{
    a->ok &= ok;
    if (ok) {
        a->k = k < a->k ? k : a->k;
        a->r = r > a->r ? r : a->r;
    }
}

/* Flags that keep a node out of any summary: the walk must always reach such a node. */
static inline uint32_t summary_special(const rvi_walk_policy *p)
{
    return p->hook_flags | p->defer_flags | p->pad_flags | RVI_NODE_HIDDEN;
}

/* A node's own part in the summary of the subtree it is in: nothing without geometry; its
 * cutoff and radius when it rests at "nothing"; otherwise the subtree cannot be dropped. */
static inline void fold_own(const rvi_walk_policy *p, uint32_t i, rvi_walk_acc *a)
{
    uint32_t flags = p->scene->flags[i];
    if (flags & summary_special(p)) {
        a->ok = 0;
        return;
    }
    if (!(flags & RVI_NODE_HAS_GEOMETRY))
        return;
    float k = (flags & RVI_NODE_HAS_LOD) && p->cutoff_sq && i < p->cutoff_count ? p->cutoff_sq[i] : 0.0f;
    acc_fold(a, k, p->scene->world_sphere[i][3], k > 0.0f);
}

/* A node with children the walk did not enter: its summary, if it has a valid one. */
static inline void fold_kept(const rvi_walk_policy *p, uint32_t i, rvi_walk_acc *a)
{
    const rvi_walk_summary *s = &p->summaries->node[i];
    if (i < p->summaries->capacity && s->version == p->summaries->version)
        acc_fold(a, s->k, s->r, 1);
    else
        a->ok = 0;
}

/* True when every piece of geometry within sphere, none larger than r and none with a
 * cutoff below k, would stay at "nothing" from the eye: each piece's centre lies at least
 * gap = |centre - eye| - radius from the eye (less a few ulps of the distance for its
 * rounding), and r^2 < gap^2 k gives r_i^2 < d_i^2 k_i for each. */
static bool all_cut(const rvi_walk_policy *p, const float sphere[4], float k, float r)
{
    if (!p->cutoff_sq || !(k > 0.0f))
        return false;
    float dx = sphere[0] - p->eye[0], dy = sphere[1] - p->eye[1], dz = sphere[2] - p->eye[2];
    float d2 = dx * dx + dy * dy + dz * dz;
    if (!(d2 <= 3.4e38f))
        return false;
    float d = sqrtf(d2);
    float gap = (d - sphere[3]) - d * 4e-7f;
    return gap > 0.0f && r * r < gap * gap * k;
}

/* The same for every piece within the box lo..hi (around the pieces' spheres, so around
 * their centres): each centre is at least as far from the eye, on each axis, as the box is,
 * and the rounded squares and sums keep that order, so the box's rounded distance squared
 * is at most any centre's, with no margin. A centre's distance squared must also stay in
 * the float range (rvi_walk_cut): the box's farthest corner bounds it. */
static bool all_cut_box(const rvi_walk_policy *p, const float lo[3], const float hi[3], float k, float r)
{
    if (!p->cutoff_sq || !(k > 0.0f))
        return false;
    float near[3], far[3];
    for (int a = 0; a < 3; a++) {
        float below = lo[a] - p->eye[a], above = p->eye[a] - hi[a];
        near[a] = below > 0.0f ? below : above > 0.0f ? above : 0.0f;
        float to_lo = fabsf(lo[a] - p->eye[a]), to_hi = fabsf(hi[a] - p->eye[a]);
        far[a] = to_lo > to_hi ? to_lo : to_hi;
    }
    float g2 = near[0] * near[0] + near[1] * near[1] + near[2] * near[2];
    float f2 = far[0] * far[0] + far[1] * far[1] + far[2] * far[2];
    return f2 <= 3.4e38f && r * r < g2 * k;
}

void rvi_walk_forget(rvi_walk_summaries *s, const rvi_scene *scene, uint32_t node)
{
    if (node < s->capacity) {
        s->block_version[node >> RVI_WALK_BLOCK_SHIFT] = 0;
        s->group_version[node >> RVI_WALK_GROUP_SHIFT] = 0;
    }
    for (uint32_t a = node; a != NONE && a < s->capacity; a = scene->parent[a])
        s->node[a].version = 0;
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
    if (p->summaries && sc->first_child[i] != NONE && i < p->summaries->capacity) {
        /* Every piece of the subtree rests at "nothing" and stays there from here. */
        const rvi_walk_summary *s = &p->summaries->node[i];
        if (s->version == p->summaries->version && all_cut(p, ws, s->k, s->r)) {
            c->summarised++;
            return RVI_WALK_SKIP;
        }
    }
    if ((flags & p->hook_flags) || (p->hook_parents && sc->first_child[i] != NONE))
        return p->node(user, i, flags, weight);
    if ((flags & (RVI_NODE_HAS_GEOMETRY | RVI_NODE_HIDDEN)) != RVI_NODE_HAS_GEOMETRY)
        return RVI_WALK_DESCEND;
    if (p->own_geometry && *mask && sc->first_child[i] != NONE) {
        c->tested++;
        if (!rvi_walk_own_geometry_in_view(sc, p->frustum, i, *mask)) {
            if (p->record_culls)
                p->culled(user, i, RV_CULL_FRUSTUM);
            return RVI_WALK_DESCEND;
        }
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

bool rvi_walk_own_geometry_in_view(const rvi_scene *sc, const rv_frustum *f, uint32_t i, uint32_t mask)
{
    if (sc->first_child[i] == NONE || !mask)
        return true;
    float g[4];
    rvi_scene_geometry_sphere(sc, i, g);
    return rvi_classify_sphere_masked(f, g, g[3], &mask) != RV_OUTSIDE;
}

rvi_walk_action rvi_walk_node(const rvi_walk_policy *p, void *user, uint32_t node, uint32_t *mask, float *weight,
                              rvi_walk_counts *counts)
{
    return visit(p, user, node, mask, weight, counts);
}

/* True when node i's sphere straddles a plane of mask (it is not outside one). */
static bool straddles(const rvi_walk_policy *p, uint32_t i, uint32_t mask)
{
    uint32_t m = mask;
    const float *ws = p->scene->world_sphere[i];
    return rvi_classify_sphere_masked(p->frustum, ws, ws[3], &m) == RV_INTERSECTING;
}

/* visit() for a leaf (its mask and weight are its own: a leaf passes none on). Inline in
 * the walk's loops: a leaf of a scattered level costs about a hundred instructions, a call
 * a fifth of that. */
static RVI_ALWAYS_INLINE rvi_walk_action visit_leaf(const rvi_walk_policy *p, void *user, uint32_t i,
                                                    uint32_t mask, float weight, rvi_walk_counts *c)
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

/* ---- subtrees ------------------------------------------------------------------------------ */

/* One walk call's state. Level 0 is the span [first, count) the call was given; the stack
 * holds the levels below it, each at the sibling it resumes at. */
typedef struct walk {
    const rvi_walk_policy *p;
    void *user;
    rvi_walk_stack *stack;
    const uint32_t *budget;
    rvi_walk_counts c;
    int vector;
    uint32_t at0, left0, depth, mask0;
    float weight0;
    rvi_walk_acc acc0;
} walk;

#define EXHAUSTED 0x80000000u /* a level whose last sibling's subtree is being walked */

static inline rvi_walk_acc *level_acc(walk *w)
{
    return w->depth == 0 ? &w->acc0 : &w->stack->acc[w->depth - 1];
}

/* Leaves the current level (depth > 0): with summaries, the node whose children it held
 * gets its summary, and that is folded into the level above. */
static void pop_level(walk *w)
{
    const rvi_walk_policy *p = w->p;
    if (p->summaries) {
        rvi_walk_acc a = w->stack->acc[w->depth - 1];
        uint32_t e = w->stack->entries[w->depth - 1] & ~EXHAUSTED;
        uint32_t parent = p->scene->parent[e & INDEX_BITS];
        fold_own(p, parent, &a);
        if (parent < p->summaries->capacity) {
            rvi_walk_summary *s = &p->summaries->node[parent];
            s->k = a.k;
            s->r = a.r;
            s->version = a.ok ? p->summaries->version : 0;
        }
        w->depth--;
        acc_fold(level_acc(w), a.k, a.r, a.ok);
        return;
    }
    w->depth--;
}

/* Hands every level's rest to defer, deepest first: this level from i (not yet visited),
 * then each level above from the sibling it resumes at, then level 0's span. */
static void yield_rest(walk *w, uint32_t i, uint32_t level_mask, float level_weight)
{
    const rvi_walk_policy *p = w->p;
    p->defer(w->user, i, w->depth == 0 ? w->left0 : UINT32_MAX, level_mask, level_weight);
    if (w->depth == 0)
        return;
    for (uint32_t d = w->depth - 1; d-- > 0;) {
        uint32_t e = w->stack->entries[d];
        if (!(e & EXHAUSTED))
            p->defer(w->user, e & INDEX_BITS, UINT32_MAX, (e >> 24) & 0x3Fu, w->stack->weights ? w->stack->weights[d] : 1.0f);
    }
    if (w->at0 != NONE && w->left0 > 0)
        p->defer(w->user, w->at0, w->left0, w->mask0, w->weight0);
}

/* A sphere around a box, rounded out: the box's half-diagonal, and the float error of the
 * box itself. */
static void sphere_of_box(const float lo[3], const float hi[3], float out[4])
{
    float half[3];
    for (int a = 0; a < 3; a++) {
        out[a] = 0.5f * lo[a] + 0.5f * hi[a];
        half[a] = 0.5f * hi[a] - 0.5f * lo[a];
    }
    float mag = fabsf(out[0]) + fabsf(out[1]) + fabsf(out[2]);
    float radius = sqrtf(half[0] * half[0] + half[1] * half[1] + half[2] * half[2]);
    out[3] = radius * (1.0f + 1e-5f) + mag * 1e-6f;
}

/* A summary without lod_ok (some of its geometry is drawn, fading or was never selected) may
 * still be passed over: when the box around those leaves lies outside a plane of the
 * frustum, and every other leaf with geometry (each resting at "nothing", within the whole
 * box, no larger than r, no cutoff below k) is cut. */
static bool visit_outside_rest_cut(const rvi_walk_policy *p, const rvi_walk_block *b, const rvi_walk_box *visit,
                                   uint32_t in_mask)
{
    if (b->lod_ok || !(visit->lo[0] <= visit->hi[0]) || !rvi_walk_box_outside(p->frustum, visit->lo, visit->hi, in_mask))
        return false;
    return !(b->k < INFINITY) || all_cut_box(p, b->lo, b->hi, b->k, b->r); /* none rests: nothing to cut */
}

/* How the summary b (of size slots from i, aligned to size) lets the walk pass it over:
 * the frustum misses it (SUMMARY_PASSES), or every piece of it stays at "nothing"
 * (SUMMARY_PASSES_VISIT when only the box around its drawn leaves is outside); or not
 * (SUMMARY_WALKED). Reads nothing but the summaries: the look-ahead asks it too. */
enum { SUMMARY_WALKED, SUMMARY_PASSES, SUMMARY_PASSES_VISIT };
static inline int summary_verdict(const rvi_walk_policy *p, const rvi_walk_block *b, uint32_t i, uint32_t size,
                                  uint32_t in_mask)
{
    const rvi_walk_summaries *s = p->summaries;
    if (i + size > s->capacity)
        return SUMMARY_WALKED;
    uint32_t version = size == RVI_WALK_GROUP ? s->group_version[i >> RVI_WALK_GROUP_SHIFT]
                                              : s->block_version[i >> RVI_WALK_BLOCK_SHIFT];
    if (version != s->version)
        return SUMMARY_WALKED;
    uint32_t m = in_mask;
    /* A group's row of leaves can be far longer than wide: its box is tried too (a block's
     * sphere is tight enough that the box seldom pays for its test). */
    bool outside = m && (rvi_classify_sphere_masked(p->frustum, b->sphere, b->sphere[3], &m) == RV_OUTSIDE ||
                         (size == RVI_WALK_GROUP && rvi_walk_box_outside(p->frustum, b->lo, b->hi, m)));
    if (outside || (b->lod_ok && all_cut_box(p, b->lo, b->hi, b->k, b->r)))
        return SUMMARY_PASSES;
    if (size == RVI_WALK_GROUP && visit_outside_rest_cut(p, b, &s->group_visit[i >> RVI_WALK_GROUP_SHIFT], m))
        return SUMMARY_PASSES_VISIT;
    return SUMMARY_WALKED;
}

/* True when the summary b (of size slots from i), whose verdict is given, lets the walk
 * pass it over, the level having that many slots left. Folded in if so. */
static inline bool skip_summary(walk *w, const rvi_walk_block *b, uint32_t size, int verdict)
{
    if (verdict == SUMMARY_WALKED || (w->depth == 0 && w->left0 < size))
        return false;
    w->c.summarised_visit += verdict == SUMMARY_PASSES_VISIT;
    acc_fold(level_acc(w), b->k, b->r, b->lod_ok);
    w->c.summarised++;
    if (w->depth == 0)
        w->left0 -= size;
    return true;
}

/* What a job saw of the group holding slot i (RVI_WALK_GROUP_* bits), for
 * rvi_walk_settle_groups. */
static inline void mark_group(const walk *w, uint32_t i, uint8_t bits)
{
    atomic_fetch_or_explicit(&w->p->summaries->group_marks[i >> RVI_WALK_GROUP_SHIFT], bits, memory_order_relaxed);
}

/* A group whose blocks are all kept, each linked to the next, gets their summary; tried
 * after a walk that passed the group's last block. */
static void keep_group(rvi_walk_summaries *s, uint32_t base)
{
    uint32_t *version = &s->group_version[base >> RVI_WALK_GROUP_SHIFT];
    if (*version == s->version || base + RVI_WALK_GROUP > s->capacity)
        return;
    const rvi_walk_block *b = &s->block[base >> RVI_WALK_BLOCK_SHIFT];
    const uint32_t *block_version = &s->block_version[base >> RVI_WALK_BLOCK_SHIFT];
    const rvi_walk_box *bv = &s->block_visit[base >> RVI_WALK_BLOCK_SHIFT];
    rvi_walk_block sum = { { 0 }, { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY },
                           INFINITY, 0.0f, 1, b[RVI_WALK_GROUP / RVI_WALK_BLOCK - 1].after };
    rvi_walk_box visit = { { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY } };
    for (uint32_t j = 0; j < RVI_WALK_GROUP / RVI_WALK_BLOCK; j++) {
        if (block_version[j] != s->version ||
            (j + 1 < RVI_WALK_GROUP / RVI_WALK_BLOCK && b[j].after != base + (j + 1) * RVI_WALK_BLOCK))
            return;
        for (int a = 0; a < 3; a++) { /* finite: a kept block's box is */
            sum.lo[a] = b[j].lo[a] < sum.lo[a] ? b[j].lo[a] : sum.lo[a];
            sum.hi[a] = b[j].hi[a] > sum.hi[a] ? b[j].hi[a] : sum.hi[a];
            visit.lo[a] = bv[j].lo[a] < visit.lo[a] ? bv[j].lo[a] : visit.lo[a];
            visit.hi[a] = bv[j].hi[a] > visit.hi[a] ? bv[j].hi[a] : visit.hi[a];
        }
        /* k and r over every block's resting leaves: with lod_ok they bound them all, without
         * it the leaves outside the visit box. */
        sum.lod_ok &= b[j].lod_ok;
        sum.k = b[j].k < sum.k ? b[j].k : sum.k;
        sum.r = b[j].r > sum.r ? b[j].r : sum.r;
    }
    sphere_of_box(sum.lo, sum.hi, sum.sphere);
    if (isfinite(sum.sphere[3])) {
        s->group[base >> RVI_WALK_GROUP_SHIFT] = sum;
        s->group_visit[base >> RVI_WALK_GROUP_SHIFT] = visit;
        *version = s->version;
    }
}

/* Asks for the lines the walk of block j reads: its leaves' links, flags, spheres and
 * cutoffs, and the summary it keeps. */
static void fetch_block(const rvi_walk_policy *p, uint32_t j)
{
    const rvi_scene *sc = p->scene;
    if (j + RVI_WALK_BLOCK > sc->capacity || j + RVI_WALK_BLOCK > p->summaries->capacity)
        return;
    RVI_PREFETCH(sc->first_child + j);
    RVI_PREFETCH(sc->next_sibling + j);
    RVI_PREFETCH(sc->parent + j);
    RVI_PREFETCH(sc->flags + j);
    for (uint32_t k = 0; k < RVI_WALK_BLOCK; k += 4)
        RVI_PREFETCH(sc->world_sphere + j + k);
    if (p->cutoff_sq && j < p->cutoff_count)
        RVI_PREFETCH(p->cutoff_sq + j);
    RVI_PREFETCH(&p->summaries->block_visit[j >> RVI_WALK_BLOCK_SHIFT]);
}

/* The walk reaches the blocks it does not pass over in no order a prefetcher follows, and
 * each of a block's arrays holds it in a line of its own: while block i (aligned) is
 * walked, the lines of the next block are asked for, when the level goes on into it and
 * its summaries (its group's, at a group's start, then its own) would not pass it over.
 * Only a block of this walk's own level and range is looked at: another job may be keeping
 * the summary of a block past them. */
static void fetch_next(const walk *w, uint32_t i, uint32_t in_mask)
{
    const rvi_walk_policy *p = w->p;
    const rvi_walk_summaries *s = p->summaries;
    uint32_t next = i + RVI_WALK_BLOCK;
    if (next + RVI_WALK_BLOCK > s->capacity || next + RVI_WALK_BLOCK > p->scene->capacity ||
        p->scene->next_sibling[next - 1] != next || (w->depth == 0 && w->left0 <= RVI_WALK_BLOCK))
        return;
    if (!(next & (RVI_WALK_GROUP - 1)) && next + RVI_WALK_GROUP <= s->capacity &&
        summary_verdict(p, &s->group[next >> RVI_WALK_GROUP_SHIFT], next, RVI_WALK_GROUP, in_mask) != SUMMARY_WALKED)
        return;
    if (summary_verdict(p, &s->block[next >> RVI_WALK_BLOCK_SHIFT], next, RVI_WALK_BLOCK, in_mask) == SUMMARY_WALKED)
        fetch_block(p, next);
}

/* A parent's children lie wherever they were created: a grouped hierarchy's leaves are a few
 * short rows of slots each. Before its children are walked, each one's lines are asked
 * for along the sibling links, so the misses overlap instead of coming one leaf at a time.
 * It stops at a row of RVI_WALK_RUN_MIN siblings in consecutive slots: a long list of
 * such rows is walked in runs, which look ahead a block at a time themselves. */
#define FETCH_CHILDREN 32u
static void fetch_children(const rvi_walk_policy *p, uint32_t first)
{
    const rvi_scene *sc = p->scene;
    uint32_t c = first, row = 0;
    for (uint32_t k = 0; k < FETCH_CHILDREN && c != NONE; k++) {
        uint32_t next = sc->next_sibling[c];
        RVI_PREFETCH(sc->flags + c);
        RVI_PREFETCH(sc->first_child + c);
        RVI_PREFETCH(sc->world_sphere + c);
        if (p->cutoff_sq && c < p->cutoff_count)
            RVI_PREFETCH(p->cutoff_sq + c);
        row = next == c + 1 ? row + 1 : 0;
        if (row == RVI_WALK_RUN_MIN)
            return;
        c = next;
    }
}

/* The aligned group or block from *at, if its summary lets the walk pass it over: *at moved
 * past it. Its leaves are the siblings from *at on, as when it was kept: no link changed
 * since. */
static bool skip_block(walk *w, uint32_t *at, uint32_t in_mask)
{
    const rvi_walk_policy *p = w->p;
    const rvi_walk_summaries *s = p->summaries;
    uint32_t i = *at;
    if (i & (RVI_WALK_BLOCK - 1))
        return false;
    const rvi_walk_block *b = &s->group[i >> RVI_WALK_GROUP_SHIFT];
    if ((i & (RVI_WALK_GROUP - 1)) ||
        !skip_summary(w, b, RVI_WALK_GROUP, summary_verdict(p, b, i, RVI_WALK_GROUP, in_mask))) {
        b = &s->block[i >> RVI_WALK_BLOCK_SHIFT];
        if (!skip_summary(w, b, RVI_WALK_BLOCK, summary_verdict(p, b, i, RVI_WALK_BLOCK, in_mask)))
            return false;
        if (((i >> RVI_WALK_BLOCK_SHIFT) & (RVI_WALK_GROUP / RVI_WALK_BLOCK - 1)) == RVI_WALK_GROUP / RVI_WALK_BLOCK - 1)
            mark_group(w, i, RVI_WALK_GROUP_ENDED);
    }
    *at = w->depth == 0 && w->left0 == 0 ? NONE : b->after;
    return true;
}

/* Keeps the summary of a block walked whole as one run. */
static void keep_block(walk *w, uint32_t i, const rvi_walk_run *run)
{
    rvi_walk_summaries *s = w->p->summaries;
    rvi_walk_block *b = &s->block[i >> RVI_WALK_BLOCK_SHIFT];
    rvi_walk_block kept;
    memset(&kept, 0, sizeof kept); /* compared whole below */
    sphere_of_box(run->lo, run->hi, kept.sphere);
    memcpy(kept.lo, run->lo, sizeof kept.lo);
    memcpy(kept.hi, run->hi, sizeof kept.hi);
    kept.k = run->acc.k;
    kept.r = run->acc.r;
    kept.lod_ok = run->acc.ok;
    kept.after = w->p->scene->next_sibling[i + RVI_WALK_BLOCK - 1];
    uint32_t *version = &s->block_version[i >> RVI_WALK_BLOCK_SHIFT];
    uint32_t kept_version = run->bound_ok && isfinite(kept.sphere[3]) ? s->version : 0;
    /* A block kept as it was leaves its group's summary standing; any other is gathered
     * again at the group's end. */
    rvi_walk_box *visit = &s->block_visit[i >> RVI_WALK_BLOCK_SHIFT];
    uint8_t bits = 0;
    if (*version != kept_version || memcmp(b, &kept, sizeof kept) != 0 ||
        memcmp(visit, &run->visit, sizeof *visit) != 0) {
        *b = kept;
        *visit = run->visit;
        *version = kept_version;
        bits |= RVI_WALK_GROUP_STALE;
    }
    if (((i >> RVI_WALK_BLOCK_SHIFT) & (RVI_WALK_GROUP / RVI_WALK_BLOCK - 1)) == RVI_WALK_GROUP / RVI_WALK_BLOCK - 1)
        bits |= RVI_WALK_GROUP_ENDED;
    if (bits)
        mark_group(w, i, bits);
}

void rvi_walk_settle_groups(rvi_walk_summaries *s)
{
    uint32_t groups = s->capacity / RVI_WALK_GROUP;
    for (uint32_t g = 0; g < groups; g++) {
        uint8_t bits = atomic_load_explicit(&s->group_marks[g], memory_order_relaxed);
        if (!bits)
            continue;
        atomic_store_explicit(&s->group_marks[g], 0, memory_order_relaxed);
        if (bits & RVI_WALK_GROUP_STALE)
            s->group_version[g] = 0;
        if (bits & RVI_WALK_GROUP_ENDED)
            keep_group(s, g << RVI_WALK_GROUP_SHIFT);
    }
}

/* A run of leaves from i: the pass settles most lanes, the rest are taken up in order.
 * false when there is no run here (too short, or no budget for all of it). */
static bool take_run(walk *w, uint32_t *at, uint32_t level_mask, float level_weight, rvi_walk_action *result)
{
    const rvi_walk_policy *p = w->p;
    const rvi_scene *sc = p->scene;
    uint32_t i = *at;
    /* Most leaves in runs have their neighbours for siblings: a look at one link first
     * (the leaves of a scattered level leave here), then before the pass, which costs
     * its setup. */
    if (sc->next_sibling[i] != i + 1)
        return false;
    uint32_t in_mask = level_mask & p->frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    uint32_t limit = w->depth == 0 && w->left0 < RVI_WALK_RUN_MAX ? w->left0 : RVI_WALK_RUN_MAX;
    /* With summaries a run stops at the end of the block it starts in, so a block walked
     * whole can be kept. */
    uint32_t to_block_end = RVI_WALK_BLOCK - (i & (RVI_WALK_BLOCK - 1));
    if (p->summaries && limit > to_block_end)
        limit = to_block_end;
    if (limit < RVI_WALK_RUN_MIN || i + RVI_WALK_RUN_MIN > sc->capacity ||
        sc->parent[i + RVI_WALK_RUN_MIN - 1] != sc->parent[i])
        return false;
    if (p->summaries && !(i & (RVI_WALK_BLOCK - 1)))
        fetch_next(w, i, in_mask);
    rvi_walk_run run;
    rvi_walk_classify_run(p, w->vector, in_mask, i, limit, &run);
    uint32_t n = run.n;
    if (n < RVI_WALK_RUN_MIN || (w->budget && *w->budget < p->node_cost * n + w->depth + 2))
        return false;
    w->c.visited += run.settled;
    w->c.tested += in_mask ? run.settled : 0;
    w->c.outside += run.n_outside;
    w->c.cut += run.n_cut;
    /* The budget holds for every lane at once, so no lane yields. */
    uint64_t lanes = run.visit_lane | run.visit_whole;
    if (p->visible_run && lanes && lanes == run.hand_out) { /* all to hand out: at once */
        uint32_t want = (uint32_t)__builtin_popcountll(lanes);
        uint32_t n_out = p->visible_run(w->user, i, lanes, level_weight);
        w->c.visited += n_out;
        w->c.tested += in_mask ? n_out : 0;
        w->c.visible += n_out;
        if (n_out < want) {
            *result = RVI_WALK_STOP;
            return true;
        }
        lanes = 0;
    }
    for (uint64_t left = lanes; left; left &= left - 1) {
        uint32_t j = (uint32_t)__builtin_ctzll(left);
        rvi_walk_action a;
        if ((run.visit_whole >> j) & 1)
            a = visit_leaf(p, w->user, i + j, level_mask, level_weight, &w->c);
        else
            a = visit_lane(p, w->user, i + j, in_mask, (run.outside >> j) & 1, level_weight, &w->c);
        if (a == RVI_WALK_STOP) {
            *result = RVI_WALK_STOP;
            return true;
        }
    }
    if (p->summaries) {
        acc_fold(level_acc(w), run.acc.k, run.acc.r, run.acc.ok);
        if ((i & (RVI_WALK_BLOCK - 1)) == 0 && n == RVI_WALK_BLOCK)
            keep_block(w, i, &run);
    }
    if (w->depth == 0)
        w->left0 -= n;
    *at = w->depth == 0 && w->left0 == 0 ? NONE : p->scene->next_sibling[i + n - 1];
    return true;
}

/* The leaves along the current level from *at, until a node with children (left in *at)
 * or the level's end (*at NONE). RVI_WALK_DESCEND, or STOP, or YIELD (the rest deferred). */
static rvi_walk_action take_leaves(walk *w, uint32_t *at, uint32_t level_mask, float level_weight)
{
    const rvi_walk_policy *p = w->p;
    const rvi_scene *sc = p->scene;
    uint32_t i = *at, in_mask = level_mask & p->frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    while (i != NONE) {
        /* Blocks first: a block passed over is not read at all, its first slot included. */
        if (p->summaries && skip_block(w, &i, in_mask))
            continue;
        if (sc->first_child[i] != NONE)
            break;
        rvi_walk_action result = RVI_WALK_DESCEND;
        if (take_run(w, &i, level_mask, level_weight, &result)) {
            if (result == RVI_WALK_STOP)
                return result;
            continue;
        }
        if (w->budget && *w->budget < p->node_cost + w->depth + 2) {
            yield_rest(w, i, level_mask, level_weight);
            return RVI_WALK_YIELD;
        }
        if (p->summaries)
            fold_own(p, i, level_acc(w));
        if (visit_leaf(p, w->user, i, level_mask, level_weight, &w->c) == RVI_WALK_STOP)
            return RVI_WALK_STOP;
        i = sc->next_sibling[i];
        if (w->depth == 0 && --w->left0 == 0)
            i = NONE;
    }
    *at = i;
    return RVI_WALK_DESCEND;
}

/* A node with children: visit it, move the level past it, then enter its children (the
 * level resumes at the next sibling once they are done). */
static rvi_walk_action take_parent(walk *w, uint32_t i, uint32_t level_mask, float level_weight)
{
    const rvi_walk_policy *p = w->p;
    const rvi_scene *sc = p->scene;
    if (w->budget && *w->budget < p->node_cost + w->depth + 2 +
                                      (sc->flags[i] & p->children_cost ? sc->aux[i].child_count : 0)) {
        yield_rest(w, i, level_mask, level_weight);
        return RVI_WALK_YIELD;
    }
    uint32_t m = level_mask;
    float wt = level_weight;
    rvi_walk_action a = visit(p, w->user, i, &m, &wt, &w->c);
    if (a == RVI_WALK_STOP)
        return a;
    uint32_t next = sc->next_sibling[i];
    if (w->depth == 0) {
        w->at0 = --w->left0 == 0 ? NONE : next;
    } else if (next != NONE) {
        w->stack->entries[w->depth - 1] = pack(next, level_mask);
    } else if (p->summaries) {
        w->stack->entries[w->depth - 1] = pack(i, level_mask) | EXHAUSTED; /* pops after the children */
    } else {
        w->depth--;
    }
    if (a != RVI_WALK_DESCEND) {
        if (p->summaries)
            fold_kept(p, i, level_acc(w));
        return RVI_WALK_DESCEND;
    }
    if (w->depth == w->stack->capacity || (wt != 1.0f && !w->stack->weights)) {
        w->stack->overflowed = true;
        if (!p->defer)
            return RVI_WALK_STOP;
        p->defer(w->user, sc->first_child[i], UINT32_MAX, m, wt);
        if (p->summaries)
            level_acc(w)->ok = 0;
        return RVI_WALK_DESCEND;
    }
    fetch_children(p, sc->first_child[i]);
    w->stack->entries[w->depth] = pack(sc->first_child[i], m);
    if (w->stack->weights)
        w->stack->weights[w->depth] = wt;
    if (p->summaries)
        acc_reset(&w->stack->acc[w->depth]);
    w->depth++;
    return RVI_WALK_DESCEND;
}

rvi_walk_action rvi_walk_siblings(const rvi_walk_policy *p, void *user, rvi_walk_stack *stack, uint32_t first,
                                  uint32_t count, uint32_t mask, float weight, const uint32_t *budget,
                                  rvi_walk_counts *counts)
{
    walk w = { p, user, stack, budget, *counts, (int)rvi_simd_best_level(), first, count, 0, mask, weight,
               { INFINITY, 0.0f, 1 } };
    if (p->summaries && !stack->acc)
        return RVI_WALK_STOP; /* summaries need a stack that gathers them */
    rvi_walk_action result = RVI_WALK_DESCEND;
    while (result == RVI_WALK_DESCEND) {
        uint32_t i, level_mask;
        float level_weight;
        if (w.depth == 0) {
            if (w.at0 == NONE || w.left0 == 0)
                break;
            i = w.at0;
            level_mask = w.mask0;
            level_weight = w.weight0;
        } else {
            uint32_t e = stack->entries[w.depth - 1];
            if (e & EXHAUSTED) {
                pop_level(&w);
                continue;
            }
            i = e & INDEX_BITS;
            level_mask = (e >> 24) & 0x3Fu;
            level_weight = stack->weights ? stack->weights[w.depth - 1] : 1.0f;
        }
        result = take_leaves(&w, &i, level_mask, level_weight);
        if (result != RVI_WALK_DESCEND)
            break;
        if (i == NONE) {
            if (w.depth == 0)
                break;
            pop_level(&w);
            continue;
        }
        result = take_parent(&w, i, level_mask, level_weight);
    }
    *counts = w.c;
    return result;
}
