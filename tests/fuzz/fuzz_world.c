/* Fuzz target: random API call sequences on a world.
 *
 * The input is a program: each op byte picks a call (create, destroy either way, attach,
 * detach, every setter (a host's local matrix among them), in-place writes through
 * rv_node_transform_ptrs, mark_moved,
 * update, a frustum walk, rv_group_spatially, LOD ladders and selection, an armed
 * allocation failure, a structure check), and the following bytes pick
 * its handles (live, destroyed, forged, from a second world, none) and its numbers (small
 * values, extremes, NaN, infinities, raw bit patterns).
 *
 * A shadow model of the hierarchy (liveness, parent, child order, root order) predicts the
 * exact rv_result of every structural call and the code of every setter; a mismatch
 * aborts. After every update:
 *  - conservative bounds: every node's world sphere encloses its own geometry (its local
 *    sphere under its world matrix, radius times the matrix's largest singular value) and
 *    every child's world sphere, checked in double precision (culling must never lose
 *    geometry);
 *  - while every update so far succeeded, every world matrix equals its parent's times
 *    its local translate * rotate * scale (or the host's matrix), checked in double
 *    precision;
 *  - a frustum walk (rv_visit_visible, rv_collect_visible: the same list) and a whole
 *    rv_frame hand out every node whose own geometry sphere robustly meets a random
 *    frustum (no false cull); a frame's view lists only live nodes, front to back.
 * An armed allocation failure must give RV_ERR_OUT_OF_MEMORY and leave the world exactly
 * as it was (digest of everything the getters show), and no call that never allocates may
 * report it. The second world must never change.
 *
 * Bytes after the marker "JOBS" are a second program (fuzz_world_jobs.c): frames through a
 * job system the input gives, compared with the same frames without one, with persistent
 * and per-frame occluders of every shape and a depth feed. */
#define _GNU_SOURCE /* memmem */
#include "rvis.h"
#include "fuzz_support.h"
#include "fuzz_world.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_HANDLES 1024
#define NOPS 20
#define FZ_MAX_LIVE 300

#define FZ_ASSERT(cond, ...)                                                               \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_world: %s:%d: ", __FILE__, __LINE__);                    \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* ---- shadow model -------------------------------------------------------------------- */

typedef struct fz_node {
    rv_node h;
    int alive;
    int parent; /* shadow index, -1 = root */
    int first, last, next, prev; /* children list and sibling links (shadow indices) */
    int has_geometry;
    float local_sphere[4]; /* as last set (rvis has no getter for it) */
    int has_ladder;        /* a LOD ladder may make the frame draw nothing for it */
    uint32_t flags;        /* RV_NODE_FLAG_* as last set */
    uint64_t key;          /* rv_node_set_key's, as last set */
    int has_matrix;        /* holds rv_node_set_local_matrix's matrix */
    float linear[9];       /* its linear part, column-major (the translation is the position) */
} fz_node;

typedef struct fz {
    rv_world *w, *other;
    fz_alloc alloc;
    fz_node nodes[FZ_MAX_HANDLES];
    int count, live;
    int first_root, last_root;
    rv_node foreign[3];
    int clean; /* every update so far returned RV_OK */
    int matrices; /* a node of this world took a matrix: its storage is there */
    double time_ms;
} fz;

static int find(const fz *f, rv_node h)
{
    if (!h.id)
        return -1;
    for (int i = 0; i < f->count; i++)
        if (f->nodes[i].h.id == h.id)
            return f->nodes[i].alive ? i : -1;
    return -1;
}

static int *head_of(fz *f, int parent)
{
    return parent < 0 ? &f->first_root : &f->nodes[parent].first;
}

static int *tail_of(fz *f, int parent)
{
    return parent < 0 ? &f->last_root : &f->nodes[parent].last;
}

static void unlink_node(fz *f, int i)
{
    fz_node *n = &f->nodes[i];
    if (n->prev >= 0)
        f->nodes[n->prev].next = n->next;
    else
        *head_of(f, n->parent) = n->next;
    if (n->next >= 0)
        f->nodes[n->next].prev = n->prev;
    else
        *tail_of(f, n->parent) = n->prev;
    n->next = n->prev = -1;
}

static void link_last(fz *f, int parent, int i)
{
    fz_node *n = &f->nodes[i];
    n->parent = parent;
    n->next = -1;
    n->prev = *tail_of(f, parent);
    if (n->prev >= 0)
        f->nodes[n->prev].next = i;
    else
        *head_of(f, parent) = i;
    *tail_of(f, parent) = i;
}

static void kill_subtree(fz *f, int i)
{
    /* Iterative: the children lists shrink as nodes die. */
    for (;;) {
        int n = i;
        while (f->nodes[n].first >= 0)
            n = f->nodes[n].first;
        unlink_node(f, n);
        f->nodes[n].alive = 0;
        f->live--;
        if (n == i)
            return;
    }
}

/* ---- picking handles and checking results --------------------------------------------- */

static rv_node pick(fz *f, fz_input *in)
{
    uint8_t b = u8(in);
    if (b < 0xE0 && f->count)
        return f->nodes[b % f->count].h;
    uint64_t some = f->count ? f->nodes[b % f->count].h.id : 0;
    switch (b & 7) {
    case 0: return RV_NODE_NONE;
    case 1: return f->foreign[b % 3];
    case 2: return (rv_node){ (some & ~0xFFFFFFull) | 0xFFFFFFull };        /* index past capacity */
    case 3: return (rv_node){ some & ~(0xFFFFFFull << 24) };                /* generation 0 */
    case 4: return (rv_node){ some + (1ull << 24) };                        /* next generation */
    case 5: return (rv_node){ UINT64_MAX };
    case 6: return (rv_node){ some ^ (1ull << 48) };                        /* another tag */
    default: return (rv_node){ (uint64_t)b << 40 | 1ull << 24 };
    }
}

static void expect(rv_result got, rv_result want, const char *call)
{
    FZ_ASSERT(got == want, "%s returned %s, the shadow model expects %s", call,
              rv_result_string(got), rv_result_string(want));
}

/* Digest of everything the getters show (for "a failed call changed nothing"). */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t digest(const rv_world *w)
{
    uint64_t h = 0xCBF29CE484222325ull;
    rv_scene_stats st = rv_world_scene_stats(w);
    h = mix(h, &st.nodes, sizeof st.nodes);
    rv_node n;
    expect(rv_world_first_root(w, &n), RV_OK, "rv_world_first_root");
    while (n.id) {
        float p[3], q[4], s[3], m[16], b[4];
        rv_node parent, next;
        expect(rv_node_get_transform(w, n, p, q, s), RV_OK, "rv_node_get_transform");
        expect(rv_node_world_matrix(w, n, m), RV_OK, "rv_node_world_matrix");
        expect(rv_node_world_bounds(w, n, b), RV_OK, "rv_node_world_bounds");
        expect(rv_node_parent(w, n, &parent), RV_OK, "rv_node_parent");
        h = mix(h, &n, sizeof n);
        h = mix(h, &parent, sizeof parent);
        h = mix(h, p, sizeof p);
        h = mix(h, q, sizeof q);
        h = mix(h, s, sizeof s);
        h = mix(h, m, sizeof m);
        h = mix(h, b, sizeof b);
        uint32_t flags;
        uint64_t key;
        expect(rv_node_get_flags(w, n, &flags), RV_OK, "rv_node_get_flags");
        expect(rv_node_get_key(w, n, &key), RV_OK, "rv_node_get_key");
        h = mix(h, &flags, sizeof flags);
        h = mix(h, &key, sizeof key);
        float local[16];
        expect(rv_node_get_local_matrix(w, n, local), RV_OK, "rv_node_get_local_matrix");
        h = mix(h, local, sizeof local);
        expect(rv_node_first_child(w, n, &next), RV_OK, "rv_node_first_child");
        while (!next.id && n.id) {
            expect(rv_node_next_sibling(w, n, &next), RV_OK, "rv_node_next_sibling");
            if (!next.id)
                expect(rv_node_parent(w, n, &n), RV_OK, "rv_node_parent");
        }
        n = next;
    }
    return h;
}

/* The links the API reports equal the shadow's, for every live node and the root list. */
static void check_structure(fz *f)
{
    FZ_ASSERT(rv_world_scene_stats(f->w).nodes == (uint32_t)f->live, "node count %u, shadow %d",
              rv_world_scene_stats(f->w).nodes, f->live);
    rv_node r;
    expect(rv_world_first_root(f->w, &r), RV_OK, "rv_world_first_root");
    FZ_ASSERT(r.id == (f->first_root >= 0 ? f->nodes[f->first_root].h.id : 0), "first root differs");
    for (int i = 0; i < f->count; i++) {
        fz_node *n = &f->nodes[i];
        FZ_ASSERT(rv_node_is_valid(f->w, n->h) == (n->alive != 0), "liveness of node %d differs", i);
        if (!n->alive)
            continue;
        rv_node p, c, s;
        expect(rv_node_parent(f->w, n->h, &p), RV_OK, "rv_node_parent");
        expect(rv_node_first_child(f->w, n->h, &c), RV_OK, "rv_node_first_child");
        expect(rv_node_next_sibling(f->w, n->h, &s), RV_OK, "rv_node_next_sibling");
        FZ_ASSERT(p.id == (n->parent >= 0 ? f->nodes[n->parent].h.id : 0), "parent of %d differs", i);
        FZ_ASSERT(c.id == (n->first >= 0 ? f->nodes[n->first].h.id : 0), "first child of %d differs", i);
        FZ_ASSERT(s.id == (n->next >= 0 ? f->nodes[n->next].h.id : 0), "next sibling of %d differs", i);
    }
}

static void check_after_update(fz *f, rv_result r)
{
    for (int i = 0; i < f->count; i++) {
        fz_node *n = &f->nodes[i];
        if (!n->alive)
            continue;
        float m[16], s[4], p[3], q[4], sc[3];
        expect(rv_node_world_matrix(f->w, n->h, m), RV_OK, "rv_node_world_matrix");
        expect(rv_node_world_bounds(f->w, n->h, s), RV_OK, "rv_node_world_bounds");
        expect(rv_node_get_transform(f->w, n->h, p, q, sc), RV_OK, "rv_node_get_transform");
        FZ_ASSERT(finite_n(m, 16), "node %d has a non-finite world matrix", i);
        FZ_ASSERT(!isnan(s[3]), "node %d has a NaN world radius", i);

        /* Conservative bounds: own geometry and every child inside the world sphere. */
        if (s[3] == INFINITY)
            continue;
        double R = s[3];
        if (n->has_geometry) {
            const float *l = n->local_sphere;
            double g[3];
            for (int k = 0; k < 3; k++)
                g[k] = (double)m[k] * l[0] + (double)m[4 + k] * l[1] + (double)m[8 + k] * l[2] + m[12 + k];
            double gr = l[3] * sigma_max(m);
            FZ_ASSERT(R >= 0, "node %d has geometry but an empty world sphere", i);
            double slack = 1e-5 * (R + fabs(s[0]) + fabs(s[1]) + fabs(s[2]) + fabs(g[0]) + fabs(g[1]) +
                                   fabs(g[2]) + gr);
            FZ_ASSERT(dist3(s, g) + gr <= R + slack,
                      "node %d's sphere (%g %g %g r %g) does not enclose its geometry (%g %g %g r %g)",
                      i, s[0], s[1], s[2], s[3], g[0], g[1], g[2], gr);
        }
        for (int c = n->first; c >= 0; c = f->nodes[c].next) {
            float cs[4];
            expect(rv_node_world_bounds(f->w, f->nodes[c].h, cs), RV_OK, "rv_node_world_bounds");
            if (cs[3] < 0)
                continue;
            FZ_ASSERT(R >= 0, "node %d has an empty sphere but child %d has geometry", i, c);
            FZ_ASSERT(cs[3] != INFINITY, "child %d is infinite, its parent %d is not", c, i);
            double cc[3] = { cs[0], cs[1], cs[2] };
            double slack = 1e-5 * (R + fabs(s[0]) + fabs(s[1]) + fabs(s[2]) + fabs(cc[0]) + fabs(cc[1]) +
                                   fabs(cc[2]) + cs[3]);
            FZ_ASSERT(dist3(s, cc) + cs[3] <= R + slack,
                      "node %d's sphere (%g %g %g r %g) does not enclose child %d's (%g %g %g r %g)",
                      i, s[0], s[1], s[2], s[3], c, cs[0], cs[1], cs[2], cs[3]);
        }
    }
    if (r != RV_OK)
        f->clean = 0;
    if (!f->clean)
        return;
    /* Matrices: parent's stored matrix times the local transform. */
    for (int i = 0; i < f->count; i++) {
        fz_node *n = &f->nodes[i];
        if (!n->alive)
            continue;
        float m[16], pm[16], p[3], q[4], sc[3];
        expect(rv_node_world_matrix(f->w, n->h, m), RV_OK, "rv_node_world_matrix");
        expect(rv_node_get_transform(f->w, n->h, p, q, sc), RV_OK, "rv_node_get_transform");
        double l[16], want[16], parent[16];
        local_matrix(p, q, sc, l);
        if (n->has_matrix)
            for (int c = 0; c < 3; c++)
                for (int row = 0; row < 3; row++)
                    l[c * 4 + row] = n->linear[c * 3 + row];
        if (n->parent >= 0) {
            expect(rv_node_world_matrix(f->w, f->nodes[n->parent].h, pm), RV_OK, "rv_node_world_matrix");
            for (int k = 0; k < 16; k++)
                parent[k] = pm[k];
        } else {
            memset(parent, 0, sizeof parent);
            parent[0] = parent[5] = parent[10] = parent[15] = 1;
        }
        for (int c = 0; c < 4; c++)
            for (int row = 0; row < 4; row++) {
                double acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += parent[k * 4 + row] * l[c * 4 + k];
                want[c * 4 + row] = acc;
            }
        double tol = 1e-5 * (4 * max_abs(parent, 16) * max_abs(l, 16) + max_abs(want, 16)) + 1e-30;
        for (int k = 0; k < 16; k++)
            FZ_ASSERT(fabs(m[k] - want[k]) <= tol, "node %d world matrix element %d is %g, expected %g", i,
                      k, (double)m[k], want[k]);
    }
}

/* ---- culling and grouping ----------------------------------------------------------- */

typedef struct fz_visit {
    rv_node seen[FZ_MAX_HANDLES];
    uint32_t count;
} fz_visit;

static bool record_visit(rv_node node, const float world_matrix[16], void *user)
{
    fz_visit *v = user;
    (void)world_matrix;
    if (v->count < FZ_MAX_HANDLES)
        v->seen[v->count] = node;
    v->count++;
    return true;
}

/* True when node i or an ancestor is flagged hidden: nothing under it is drawn or visited. */
static int hidden_in_model(const fz *f, int i)
{
    for (; i >= 0; i = f->nodes[i].parent)
        if (f->nodes[i].flags & RV_NODE_FLAG_HIDDEN)
            return 1;
    return 0;
}

/* Visits and collects with a random frustum; every node whose own geometry sphere (in
 * double, radius times the largest singular value) robustly meets the frustum must be
 * handed out, and both forms must agree. */
static void check_visit(fz *f, fz_input *in)
{
    float vp[16], eye[3];
    decode_view(in, vp, eye);
    rv_frustum fr;
    expect(rv_frustum_from_view_projection(vp, (rv_clip){0}, &fr), RV_OK, "rv_frustum_from_view_projection");
    static fz_visit v;
    v.count = 0;
    expect(rv_visit_visible(f->w, RV_NODE_NONE, &fr, record_visit, &v, NULL), RV_OK, "rv_visit_visible");
    static rv_node collected[FZ_MAX_HANDLES];
    uint32_t count = 0;
    rv_result r = rv_collect_visible(f->w, RV_NODE_NONE, &fr, collected, FZ_MAX_HANDLES, &count, NULL);
    expect(r, RV_OK, "rv_collect_visible");
    FZ_ASSERT(count == v.count && memcmp(collected, v.seen, count * sizeof *collected) == 0,
              "rv_collect_visible and rv_visit_visible disagree");
    for (uint32_t k = 0; k < v.count && k < FZ_MAX_HANDLES; k++) {
        int i = find(f, v.seen[k]);
        FZ_ASSERT(i < 0 || !hidden_in_model(f, i), "the walk handed out node %d under a hidden node", i);
    }
    for (int i = 0; i < f->count; i++) {
        fz_node *n = &f->nodes[i];
        if (!n->alive || !n->has_geometry || hidden_in_model(f, i))
            continue;
        float m[16];
        expect(rv_node_world_matrix(f->w, n->h, m), RV_OK, "rv_node_world_matrix");
        const float *l = n->local_sphere;
        double g[3];
        for (int k = 0; k < 3; k++)
            g[k] = (double)m[k] * l[0] + (double)m[4 + k] * l[1] + (double)m[8 + k] * l[2] + m[12 + k];
        double gr = l[3] * sigma_max(m);
        if (!isfinite(g[0] + g[1] + g[2] + gr))
            continue;
        int meets = 1;
        for (int p = 0; p < 6 && meets; p++) {
            if (!(fr.plane_mask & (1u << p)))
                continue;
            const float *pl = fr.planes[p];
            double d = pl[0] * g[0] + pl[1] * g[1] + pl[2] * g[2] + pl[3];
            double tol = 1e-4 * (fabs(g[0]) + fabs(g[1]) + fabs(g[2]) + fabs(pl[3]) + gr) + 1e-6;
            if (d < -gr + tol)
                meets = 0; /* outside, or too close to call */
        }
        if (!meets)
            continue;
        int found = 0;
        for (uint32_t k = 0; k < v.count && k < FZ_MAX_HANDLES && !found; k++)
            found = v.seen[k].id == n->h.id;
        FZ_ASSERT(found, "node %d's geometry (%g %g %g r %g) meets the frustum but the walk skipped it", i, g[0],
                  g[1], g[2], gr);
    }
}

/* Rebuilds the shadow's links from the API after rv_group_spatially added group nodes. */
static void resync_links(fz *f)
{
    for (int i = 0; i < f->count; i++)
        f->nodes[i].first = f->nodes[i].last = f->nodes[i].next = f->nodes[i].prev = -1;
    f->first_root = f->last_root = -1;
    rv_node n;
    expect(rv_world_first_root(f->w, &n), RV_OK, "rv_world_first_root");
    while (n.id) {
        int i = find(f, n);
        if (i < 0) { /* a new group node */
            FZ_ASSERT(f->count < FZ_MAX_HANDLES, "handle table full");
            i = f->count++;
            f->nodes[i] = (fz_node){ .h = n, .alive = 1, .parent = -1, .first = -1, .last = -1, .next = -1, .prev = -1,
                           .local_sphere = { 0, 0, 0, -1 } };
            f->live++;
        }
        rv_node p;
        expect(rv_node_parent(f->w, n, &p), RV_OK, "rv_node_parent");
        link_last(f, p.id ? find(f, p) : -1, i);
        rv_node next;
        expect(rv_node_first_child(f->w, n, &next), RV_OK, "rv_node_first_child");
        while (!next.id && n.id) {
            expect(rv_node_next_sibling(f->w, n, &next), RV_OK, "rv_node_next_sibling");
            if (!next.id)
                expect(rv_node_parent(f->w, n, &n), RV_OK, "rv_node_parent");
        }
        n = next;
    }
}

static void group(fz *f, fz_input *in, int armed)
{
    rv_node parent = pick(f, in);
    uint32_t leaf = u8(in) % 6;
    int p = find(f, parent);
    /* RV_NODE_NONE groups the roots */
    rv_result want = p < 0 && parent.id ? RV_ERR_STALE_HANDLE : leaf == 1 ? RV_ERR_INVALID_ARG : RV_OK;
    if (f->live > FZ_MAX_LIVE - 64)
        return;
    uint64_t before = digest(f->w);
    uint32_t live_before = (uint32_t)f->live, groups = 0;
    rv_result got = rv_group_spatially(f->w, parent, NULL, 0, leaf, &groups);
    if (p < 0 && leaf == 1 && got == RV_ERR_INVALID_ARG)
        want = got; /* two faults: either code */
    if (armed && got == RV_ERR_OUT_OF_MEMORY && want == RV_OK) {
        FZ_ASSERT(digest(f->w) == before, "a grouping that ran out of memory changed the world");
        return;
    }
    expect(got, want, "rv_group_spatially");
    if (got != RV_OK) {
        FZ_ASSERT(digest(f->w) == before, "a refused grouping changed the world");
        return;
    }
    resync_links(f);
    FZ_ASSERT((uint32_t)f->live == live_before + groups, "%u groups made, %u nodes appeared", groups,
              (uint32_t)f->live - live_before);
    check_structure(f);
}

static void lod(fz *f, fz_input *in, int armed)
{
    rv_node h = pick(f, in);
    float t[3] = { f32(in), f32(in), f32(in) };
    rv_lod_ladder ladder;
    rv_result made = rv_lod_ladder_make(t, 1 + u8(in) % 3, &ladder);
    if (made != RV_OK)
        return;
    int i = find(f, h);
    rv_result set = rv_node_set_lod_ladder(f->w, h, &ladder);
    if (armed && set == RV_ERR_OUT_OF_MEMORY && i >= 0)
        return; /* the LOD state is made on first use */
    expect(set, i >= 0 ? RV_OK : RV_ERR_STALE_HANDLE, "rv_node_set_lod_ladder");
    if (i >= 0)
        f->nodes[i].has_ladder = 1;
    rv_lod_view view = { { f32(in), f32(in), f32(in) }, 1.0f, 720.0f, 10.0f, false };
    rv_result adv = rv_lod_advance(f->w, 16.0f);
    if (armed && adv == RV_ERR_OUT_OF_MEMORY)
        return;
    expect(adv, RV_OK, "rv_lod_advance");
    rv_lod_selection sel;
    rv_result r = rv_node_lod_select(f->w, h, &view, &sel);
    FZ_ASSERT(r == RV_OK || r == RV_ERR_STALE_HANDLE || r == RV_ERR_NOT_FINITE || r == RV_ERR_BAD_STATE,
              "rv_node_lod_select returned %s", rv_result_string(r));
    if (r == RV_OK) {
        FZ_ASSERT(sel.count >= 1 && sel.count <= 2 && sel.levels[0] <= ladder.count && sel.levels[1] <= ladder.count,
                  "a selection out of range");
        FZ_ASSERT(fabsf(sel.weights[0] + sel.weights[1] - 1.0f) < 1e-4f, "selection weights do not sum to 1");
    }
}

/* A whole rv_frame with a random camera: the view lists only live nodes, opaque items
 * front to back with weights in (0, 1]; every node with geometry and no LOD ladder whose
 * own geometry sphere robustly meets the frustum is drawn (no false cull). */
static void frame(fz *f, fz_input *in, int armed)
{
    float vp[16], eye[3];
    decode_view(in, vp, eye);
    rv_view v;
    memset(&v, 0, sizeof v);
    v.view_projection = vp;
    v.eye = eye;
    v.viewport_width = 640;
    v.viewport_height = 480;
    f->time_ms += 16.0;
    v.time_ms = f->time_ms;
    /* Update first (rv_frame's own update then has nothing to do), so the oracles know
     * whether it failed. */
    rv_result u = rv_update_world(f->w);
    FZ_ASSERT(u == RV_OK || u == RV_ERR_NOT_FINITE || u == RV_ERR_INVALID_ARG, "rv_update_world returned %s",
              rv_result_string(u));
    check_after_update(f, u);
    rv_frame_view out;
    rv_result r = rv_frame(f->w, &v, &out);
    if (armed && r == RV_ERR_OUT_OF_MEMORY)
        return;
    FZ_ASSERT(r == RV_OK, "rv_frame returned %s", rv_result_string(r));
    FZ_ASSERT(rv_frame_view_is_valid(f->w, &out), "a fresh view is not valid");
    for (uint32_t k = 0; k < out.opaque_count; k++) {
        const rv_draw_item *it = &out.opaque[k];
        FZ_ASSERT(find(f, it->node) >= 0, "the view draws a node that is not live");
        FZ_ASSERT(it->fade > 0.0f && it->fade <= 1.0f, "a fade weight outside (0, 1]");
        FZ_ASSERT(k == 0 || !(it->view_depth < out.opaque[k - 1].view_depth), "opaque items are not front to back");
    }
    /* Each item carries its node's key, sits in the list its flags say, and is not under a
     * hidden node. */
    for (int list = 0; list < 2; list++) {
        const rv_draw_item *items = list ? out.translucent : out.opaque;
        uint32_t count = list ? out.translucent_count : out.opaque_count;
        for (uint32_t k = 0; k < count; k++) {
            int i = find(f, items[k].node);
            FZ_ASSERT(i >= 0, "the view draws a node that is not live");
            FZ_ASSERT(items[k].key == f->nodes[i].key, "node %d drawn with key %llu, set %llu", i,
                      (unsigned long long)items[k].key, (unsigned long long)f->nodes[i].key);
            FZ_ASSERT(!(f->nodes[i].flags & RV_NODE_FLAG_TRANSLUCENT) == !list, "node %d in the wrong list", i);
            FZ_ASSERT(!hidden_in_model(f, i), "node %d drawn under a hidden node", i);
        }
    }
    rv_frustum fr;
    expect(rv_frustum_from_view_projection(vp, (rv_clip){0}, &fr), RV_OK, "rv_frustum_from_view_projection");
    for (int i = 0; i < f->count; i++) {
        fz_node *n = &f->nodes[i];
        if (!n->alive || !n->has_geometry || n->has_ladder || hidden_in_model(f, i))
            continue;
        float m[16];
        expect(rv_node_world_matrix(f->w, n->h, m), RV_OK, "rv_node_world_matrix");
        const float *l = n->local_sphere;
        double g[3];
        for (int k = 0; k < 3; k++)
            g[k] = (double)m[k] * l[0] + (double)m[4 + k] * l[1] + (double)m[8 + k] * l[2] + m[12 + k];
        double gr = l[3] * sigma_max(m);
        if (!isfinite(g[0] + g[1] + g[2] + gr))
            continue;
        int meets = 1;
        for (int p = 0; p < 6 && meets; p++) {
            if (!(fr.plane_mask & (1u << p)))
                continue;
            const float *pl = fr.planes[p];
            double d = pl[0] * g[0] + pl[1] * g[1] + pl[2] * g[2] + pl[3];
            if (d < -gr + 1e-4 * (fabs(g[0]) + fabs(g[1]) + fabs(g[2]) + fabs(pl[3]) + gr) + 1e-6)
                meets = 0;
        }
        if (!meets)
            continue;
        int drawn = 0;
        for (uint32_t k = 0; k < out.opaque_count && !drawn; k++)
            drawn = out.opaque[k].node.id == n->h.id;
        for (uint32_t k = 0; k < out.translucent_count && !drawn; k++)
            drawn = out.translucent[k].node.id == n->h.id;
        FZ_ASSERT(drawn, "node %d meets the frustum but rv_frame did not draw it", i);
    }
}

/* Sets a node's flags (any bits: unknown ones are refused) or its key, and reads both back. */
static void flags_or_key(fz *f, fz_input *in, rv_node h)
{
    int i = find(f, h);
    uint8_t how = u8(in);
    if (how & 1) {
        uint32_t flags = (uint32_t)(how >> 2) & 3u;
        if (how & 2) { /* any bits, unknown ones among them */
            uint32_t bits = u8(in);
            flags = bits << (u8(in) % 25);
        }
        rv_result want = i < 0 ? RV_ERR_STALE_HANDLE
                         : flags & ~(uint32_t)(RV_NODE_FLAG_HIDDEN | RV_NODE_FLAG_TRANSLUCENT)
                             ? RV_ERR_INVALID_ARG
                             : RV_OK;
        expect(rv_node_set_flags(f->w, h, flags), want, "rv_node_set_flags");
        if (want == RV_OK)
            f->nodes[i].flags = flags;
    } else {
        uint64_t key = 0;
        for (int b = 0; b < 8; b++)
            key = key << 8 | u8(in);
        expect(rv_node_set_key(f->w, h, key), i < 0 ? RV_ERR_STALE_HANDLE : RV_OK, "rv_node_set_key");
        if (i >= 0)
            f->nodes[i].key = key;
    }
    if (i >= 0) {
        uint32_t flags;
        uint64_t key;
        expect(rv_node_get_flags(f->w, h, &flags), RV_OK, "rv_node_get_flags");
        expect(rv_node_get_key(f->w, h, &key), RV_OK, "rv_node_get_key");
        FZ_ASSERT(flags == f->nodes[i].flags && key == f->nodes[i].key, "node %d's flags or key read back wrong", i);
    }
}

/* rv_node_set_local_matrix with a matrix from the input (any elements: NaN, infinities, a
 * projective row, shear, singular), checked against the header's codes; read back with
 * rv_node_get_local_matrix. A world's first matrix allocates, so an armed failure may
 * refuse it, changing nothing. */
static void local_matrix_op(fz *f, fz_input *in, rv_node h, int armed)
{
    int i = find(f, h);
    uint8_t how = u8(in);
    float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    for (int k = 0; k < 16; k++)
        if (k % 4 != 3 || (how & 1)) /* the bottom row stays 0 0 0 1 unless the input says */
            m[k] = f32(in);
    rv_result want = i < 0 ? RV_ERR_STALE_HANDLE
                   : !finite_n(m, 16) ? RV_ERR_NOT_FINITE
                   : m[3] != 0.0f || m[7] != 0.0f || m[11] != 0.0f || m[15] != 1.0f ? RV_ERR_INVALID_ARG
                   : RV_OK;
    uint64_t before = digest(f->w);
    rv_result got = rv_node_set_local_matrix(f->w, h, m);
    if (armed && want == RV_OK && !f->matrices && got == RV_ERR_OUT_OF_MEMORY) {
        FZ_ASSERT(digest(f->w) == before, "a matrix that ran out of memory changed the world");
        return;
    }
    expect(got, want, "rv_node_set_local_matrix");
    if (got != RV_OK) {
        FZ_ASSERT(digest(f->w) == before, "a refused matrix changed the world");
        return;
    }
    f->matrices = 1;
    f->nodes[i].has_matrix = 1;
    for (int c = 0; c < 3; c++)
        for (int row = 0; row < 3; row++)
            f->nodes[i].linear[c * 3 + row] = m[c * 4 + row];
    float back[16];
    expect(rv_node_get_local_matrix(f->w, h, back), RV_OK, "rv_node_get_local_matrix");
    for (int k = 0; k < 16; k++) /* ==: a -0 in the bottom row reads back as 0 */
        FZ_ASSERT(back[k] == m[k], "node %d's local matrix element %d reads back %g, set %g", i, k, back[k], m[k]);
    float p[3];
    expect(rv_node_get_transform(f->w, h, p, NULL, NULL), RV_OK, "rv_node_get_transform");
    FZ_ASSERT(memcmp(p, &m[12], sizeof p) == 0, "node %d's position is not its matrix's translation", i);
}

/* ---- the program --------------------------------------------------------------------- */

static int fz_create(fz *f, rv_node parent_h, int armed)
{
    int parent = find(f, parent_h);
    rv_result want = (parent_h.id == 0 || parent >= 0) ? RV_OK : RV_ERR_STALE_HANDLE;
    uint64_t before = armed ? digest(f->w) : 0;
    rv_node out = { 0x1234 };
    rv_result got = rv_node_create(f->w, parent_h, &out);
    if (armed && got == RV_ERR_OUT_OF_MEMORY && want == RV_OK) {
        FZ_ASSERT(out.id == 0x1234, "a failed create wrote its output");
        FZ_ASSERT(digest(f->w) == before, "a create that ran out of memory changed the world");
        return -1;
    }
    expect(got, want, "rv_node_create");
    if (got != RV_OK)
        return -1;
    FZ_ASSERT(f->count < FZ_MAX_HANDLES, "handle table full");
    int i = f->count++;
    f->nodes[i] = (fz_node){ .h = out, .alive = 1, .parent = -1, .first = -1, .last = -1, .next = -1, .prev = -1,
                           .local_sphere = { 0, 0, 0, -1 } };
    f->live++;
    link_last(f, parent, i);
    return i;
}

static void run(fz *f, fz_input *in)
{
    int ops = 0;
    while (in->n && ops++ < 4000) {
        uint8_t op = u8(in);
        int armed = 0;
        if (op % NOPS == 13) { /* arm an allocation failure for the next op */
            f->alloc.calls = 0;
            f->alloc.fail_at = 1 + u8(in) % 8;
            armed = 1;
            op = u8(in);
        }
        switch (op % NOPS) {
        case 0:
            if (f->live < FZ_MAX_LIVE)
                fz_create(f, pick(f, in), armed);
            break;
        case 15: {
            rv_node parent = pick(f, in);
            int many = u8(in) % 48;
            for (int k = 0; k < many && f->live < FZ_MAX_LIVE; k++)
                if (fz_create(f, parent, armed) < 0)
                    break;
            break;
        }
        case 1:
        case 2: {
            rv_node h = pick(f, in);
            int i = find(f, h);
            rv_result want = i >= 0 ? RV_OK : RV_ERR_STALE_HANDLE;
            if (op % NOPS == 1) {
                expect(rv_node_destroy_subtree(f->w, h), want, "rv_node_destroy_subtree");
                if (i >= 0)
                    kill_subtree(f, i);
            } else {
                expect(rv_node_destroy_reroot(f->w, h), want, "rv_node_destroy_reroot");
                if (i >= 0) {
                    while (f->nodes[i].first >= 0) {
                        int c = f->nodes[i].first;
                        unlink_node(f, c);
                        link_last(f, -1, c);
                    }
                    unlink_node(f, i);
                    f->nodes[i].alive = 0;
                    f->live--;
                }
            }
            break;
        }
        case 3: {
            rv_node ph = pick(f, in), ch = pick(f, in);
            int p = find(f, ph), c = find(f, ch);
            rv_result want = RV_OK;
            if (p < 0 || c < 0) {
                want = RV_ERR_STALE_HANDLE;
            } else {
                for (int a = p; a >= 0; a = f->nodes[a].parent)
                    if (a == c)
                        want = RV_ERR_CYCLE;
            }
            expect(rv_node_attach(f->w, ph, ch), want, "rv_node_attach");
            if (want == RV_OK && f->nodes[c].parent != p) {
                unlink_node(f, c);
                link_last(f, p, c);
            }
            break;
        }
        case 4: {
            rv_node h = pick(f, in);
            int i = find(f, h);
            expect(rv_node_detach(f->w, h), i >= 0 ? RV_OK : RV_ERR_STALE_HANDLE, "rv_node_detach");
            if (i >= 0 && f->nodes[i].parent >= 0) {
                unlink_node(f, i);
                link_last(f, -1, i);
            }
            break;
        }
        case 5:
        case 6: {
            rv_node h = pick(f, in);
            float v[3] = { f32(in), f32(in), f32(in) };
            int i = find(f, h);
            rv_result want = i < 0 ? RV_ERR_STALE_HANDLE : !finite_n(v, 3) ? RV_ERR_NOT_FINITE : RV_OK;
            if (op % NOPS == 5)
                expect(rv_node_set_position(f->w, h, v), want, "rv_node_set_position");
            else
                expect(rv_node_set_scale(f->w, h, v), want, "rv_node_set_scale");
            if (want == RV_OK && op % NOPS == 6)
                f->nodes[i].has_matrix = 0;
            if (want == RV_OK) {
                float p[3], s[3];
                expect(rv_node_get_transform(f->w, h, p, NULL, s), RV_OK, "rv_node_get_transform");
                FZ_ASSERT(memcmp(op % NOPS == 5 ? p : s, v, sizeof v) == 0, "a setter did not store its value");
            }
            break;
        }
        case 7: {
            rv_node h = pick(f, in);
            float q[4] = { f32(in), f32(in), f32(in), f32(in) };
            int i = find(f, h);
            int zero = no_normal(q, 4); /* zeros and subnormals only: zero under DAZ, refused */
            rv_result want = i < 0 ? RV_ERR_STALE_HANDLE
                           : !finite_n(q, 4) ? RV_ERR_NOT_FINITE
                           : zero ? RV_ERR_INVALID_ARG : RV_OK;
            expect(rv_node_set_rotation(f->w, h, q), want, "rv_node_set_rotation");
            if (want == RV_OK)
                f->nodes[i].has_matrix = 0;
            break;
        }
        case 8: {
            rv_node h = pick(f, in);
            float axis[3] = { f32(in), f32(in), f32(in) }, angle = f32(in);
            int i = find(f, h);
            int zero = no_normal(axis, 3);
            rv_result want = i < 0 ? RV_ERR_STALE_HANDLE
                           : !finite_n(axis, 3) || !isfinite(angle) ? RV_ERR_NOT_FINITE
                           : zero ? RV_ERR_INVALID_ARG : RV_OK;
            expect(rv_node_set_rotation_axis_angle(f->w, h, axis, angle), want, "rv_node_set_rotation_axis_angle");
            if (want == RV_OK)
                f->nodes[i].has_matrix = 0;
            break;
        }
        case 9: {
            rv_node h = pick(f, in);
            float c[3] = { f32(in), f32(in), f32(in) }, r = f32(in);
            int i = find(f, h);
            rv_result want = i < 0 ? RV_ERR_STALE_HANDLE
                           : !finite_n(c, 3) || !isfinite(r) ? RV_ERR_NOT_FINITE : RV_OK;
            expect(rv_node_set_bounds(f->w, h, c, r), want, "rv_node_set_bounds");
            if (want == RV_OK) {
                f->nodes[i].has_geometry = r >= 0;
                memcpy(f->nodes[i].local_sphere, c, sizeof c);
                f->nodes[i].local_sphere[3] = r;
            }
            break;
        }
        case 10: { /* an in-place write, then mark_moved */
            rv_node h = pick(f, in);
            uint8_t which = u8(in);
            float v = f32(in);
            int i = find(f, h);
            float *p = NULL, *q = NULL, *s = NULL;
            int matrix = i >= 0 && f->nodes[i].has_matrix;
            expect(rv_node_transform_ptrs(f->w, h, &p, &q, &s), i < 0 ? RV_ERR_STALE_HANDLE : matrix ? RV_ERR_BAD_STATE : RV_OK,
                   "rv_node_transform_ptrs");
            if (i < 0 || matrix) {
                FZ_ASSERT(!p && !q && !s, "a refused transform_ptrs wrote its outputs");
                if (!matrix)
                    break;
                expect(rv_node_transform_ptrs(f->w, h, &p, NULL, NULL), RV_OK, "rv_node_transform_ptrs");
                which = (uint8_t)(which / 3 * 3); /* the position is all a matrix node hands out */
            }
            float *target = which % 3 == 0 ? p : which % 3 == 1 ? q : s;
            target[(which / 3) % (which % 3 == 1 ? 4 : 3)] = v;
            expect(rv_node_mark_moved(f->w, h), RV_OK, "rv_node_mark_moved");
            break;
        }
        case 11: {
            rv_node h = pick(f, in);
            expect(rv_node_mark_moved(f->w, h), find(f, h) >= 0 ? RV_OK : RV_ERR_STALE_HANDLE,
                   "rv_node_mark_moved");
            break;
        }
        case 12: {
            rv_result r = rv_update_world(f->w);
            FZ_ASSERT(r == RV_OK || r == RV_ERR_NOT_FINITE || r == RV_ERR_INVALID_ARG,
                      "rv_update_world returned %s", rv_result_string(r));
            check_after_update(f, r);
            break;
        }
        case 14:
            check_structure(f);
            break;
        case 16: {
            rv_result r = rv_update_world(f->w);
            FZ_ASSERT(r == RV_OK || r == RV_ERR_NOT_FINITE || r == RV_ERR_INVALID_ARG,
                      "rv_update_world returned %s", rv_result_string(r));
            check_after_update(f, r);
            check_visit(f, in);
            break;
        }
        case 17:
            group(f, in, armed);
            break;
        case 18:
            lod(f, in, armed);
            break;
        case 19:
            frame(f, in, armed);
            break;
        default: /* 13 after 13: a getter with a hostile handle, then its flags or key */
        {
            rv_node h = pick(f, in);
            float m[16];
            expect(rv_node_world_matrix(f->w, h, m), find(f, h) >= 0 ? RV_OK : RV_ERR_STALE_HANDLE,
                   "rv_node_world_matrix");
            if (u8(in) >= 0xA0)
                local_matrix_op(f, in, h, armed);
            else
                flags_or_key(f, in, h);
            break;
        }
        }
        f->alloc.fail_at = 0;
    }
}

void fzj_run(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz f; /* large; reset for every input */
    memset(&f, 0, sizeof f);
    f.first_root = f.last_root = -1;
    f.clean = 1;
    rv_world_desc desc = {0};
    desc.allocator = (rv_allocator){ fz_do_alloc, fz_do_realloc, fz_do_free, &f.alloc };
    desc.node_capacity = 2; /* so creation grows storage early and often */
    expect(rv_world_create(&desc, &f.w), RV_OK, "rv_world_create");
    expect(rv_world_create(NULL, &f.other), RV_OK, "rv_world_create");
    for (int k = 0; k < 3; k++)
        expect(rv_node_create(f.other, k ? f.foreign[0] : RV_NODE_NONE, &f.foreign[k]), RV_OK, "rv_node_create");
    expect(rv_update_world(f.other), RV_OK, "rv_update_world");
    uint64_t other_before = digest(f.other);

    /* Bytes after the marker "JOBS" are the job-system section's (fuzz_world_jobs.c); the
     * program before it runs as it did before that section existed. */
    const uint8_t *mark = size >= 4 ? memmem(data, size, "JOBS", 4) : NULL;
    fz_input in = { data, mark ? (size_t)(mark - data) : size };
    run(&f, &in);
    check_structure(&f);
    FZ_ASSERT(digest(f.other) == other_before, "calls on one world changed another");
    rv_world_destroy(f.w);
    rv_world_destroy(f.other);
    FZ_ASSERT(f.alloc.live == 0, "destroying the world left %lld blocks", (long long)f.alloc.live);
    if (mark)
        fzj_run(mark + 4, size - (size_t)(mark - data) - 4);
    return 0;
}
