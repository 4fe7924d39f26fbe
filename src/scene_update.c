/* rv_update_world and the bounds math (DESIGN.md §2).
 *
 * An update runs in four passes, none recursive and none allocating (every scratch array
 * has one entry per node slot and grows with the scene):
 *  1. Ancestor walk: for every listed node, find whether a strict ancestor moved too
 *     ("covered"). Walks stop at a node already seen, so each node is walked once.
 *  2. Every moved node that is not covered roots a subtree whose world matrices and exact
 *     world spheres are recomputed, matrices on the way down and spheres on the way up of a
 *     link-following walk (no stack).
 *  3. Those subtree roots and every node whose own bounds changed (set_bounds, lost a
 *     child) are "starts"; each start's ancestors count how many changed children they wait
 *     for.
 *  4. Starts climb: a finished node folds its sphere into its parent, and a parent whose
 *     last changed child has arrived is finished exactly once.
 *
 * Parent-bounds policy (why a 1 % update is not a full recompute): a finished parent grows
 * by merging each changed child's sphere at once (O(1) per child, always enclosing), and is
 * recomputed exactly from all its children only when its own geometry changed, it lost a
 * child, or as many child changes have accumulated as it has children, so exact
 * recomputes cost O(1) amortised per change and a grown sphere does not stay loose for
 * long. A loose sphere is larger than minimal, never smaller: culling stays conservative. */
#include "scene.h"
#include "world.h"

#include <float.h>
#include <string.h>

#define NONE RVI_INDEX_NONE

/* True when all n values are finite: x - x is 0 for finite x and NaN otherwise. */
static inline bool all_finite(const float *v, int n)
{
    float acc = 0.0f;
    for (int k = 0; k < n; k++)
        acc += v[k] - v[k];
    return acc == 0.0f;
}

/* Rounding slack for a sphere at centre c with radius r: a few ulps of its magnitude. */
static inline float slack(const float c[3], float r)
{
    return 4.0f * FLT_EPSILON * (fabsf(c[0]) + fabsf(c[1]) + fabsf(c[2]) + r);
}

void rvi_sphere_merge(const float a[4], const float b[4], float out[4])
{
    if (b[3] < 0.0f) {
        memmove(out, a, 16);
        return;
    }
    if (a[3] < 0.0f) {
        memmove(out, b, 16);
        return;
    }
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    float d = sqrtf(dx * dx + dy * dy + dz * dz);
    if (d + b[3] <= a[3]) {
        memmove(out, a, 16);
        return;
    }
    if (d + a[3] <= b[3]) {
        memmove(out, b, 16);
        return;
    }
    /* Neither holds the other, so d > |ra - rb| >= 0: the enclosing sphere touches both
     * far sides, its centre on the line between the centres. */
    float r = 0.5f * (d + a[3] + b[3]);
    float t = (r - a[3]) / d;
    float c[3] = { a[0] + dx * t, a[1] + dy * t, a[2] + dz * t };
    r += slack(c, r);
    if (!isfinite(r) || !all_finite(c, 3)) {
        /* Overflow: fall back to a sphere that encloses everything (never culled). */
        out[0] = out[1] = out[2] = 0.0f;
        out[3] = INFINITY;
        return;
    }
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
    out[3] = r;
}

void rvi_scene_geometry_sphere(const rvi_scene *s, uint32_t i, float out[4])
{
    const float *m = s->world_matrix[i];
    if (!(s->flags[i] & RVI_NODE_HAS_GEOMETRY)) {
        out[0] = m[12];
        out[1] = m[13];
        out[2] = m[14];
        out[3] = -1.0f;
        return;
    }
    const float *l = s->local_sphere[i];
    float c[3];
    for (int k = 0; k < 3; k++)
        c[k] = m[k] * l[0] + m[4 + k] * l[1] + m[8 + k] * l[2] + m[12 + k];
    float r = l[3] * s->world_scale[i];
    r += slack(c, r);
    memcpy(out, c, 12);
    out[3] = isfinite(r) ? r : INFINITY;
}

void rvi_scene_exact_bounds(rvi_scene *s, uint32_t i)
{
    float acc[4];
    rvi_scene_geometry_sphere(s, i, acc);
    for (uint32_t c = s->first_child[i]; c != NONE; c = s->next_sibling[c])
        rvi_sphere_merge(acc, s->world_sphere[c], acc);
    memcpy(s->world_sphere[i], acc, 16);
}

typedef struct update_counts {
    uint32_t matrices, bounds;
    int not_finite, zero_quat;
} update_counts;

/* World matrix of node i from its local transform and its parent's matrix (T * R * S,
 * column-major). False, with nothing written, when the local transform is not finite, its
 * quaternion is zero, or the product overflows: the node then keeps its previous matrix. */
static bool compose(rvi_scene *s, uint32_t i, update_counts *uc)
{
    const float *t = s->position[i], *q = s->rotation[i], *sc = s->scale[i];
    float n2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    if (!all_finite(t, 3) || !all_finite(sc, 3) || !isfinite(n2)) {
        uc->not_finite = 1;
        return false;
    }
    if (!(n2 > 0.0f)) {
        uc->zero_quat = 1;
        return false;
    }
    /* Dividing by |q|^2 makes an unnormalised quaternion (written in place) a rotation. */
    float k = 2.0f / n2;
    float x = q[0], y = q[1], z = q[2], w = q[3];
    float xx = x * x * k, yy = y * y * k, zz = z * z * k;
    float xy = x * y * k, xz = x * z * k, yz = y * z * k;
    float wx = w * x * k, wy = w * y * k, wz = w * z * k;
    float l[12] = {
        (1.0f - yy - zz) * sc[0], (xy + wz) * sc[0], (xz - wy) * sc[0],
        (xy - wz) * sc[1], (1.0f - xx - zz) * sc[1], (yz + wx) * sc[1],
        (xz + wy) * sc[2], (yz - wx) * sc[2], (1.0f - xx - yy) * sc[2],
        t[0], t[1], t[2],
    };
    float m[16];
    float parent_scale = 1.0f;
    uint32_t p = s->parent[i];
    if (p == NONE) {
        for (int c = 0; c < 4; c++) {
            m[c * 4 + 0] = l[c * 3 + 0];
            m[c * 4 + 1] = l[c * 3 + 1];
            m[c * 4 + 2] = l[c * 3 + 2];
        }
    } else {
        const float *pm = s->world_matrix[p];
        parent_scale = s->world_scale[p];
        for (int c = 0; c < 4; c++) {
            const float *lc = &l[c * 3];
            for (int r = 0; r < 3; r++)
                m[c * 4 + r] = pm[r] * lc[0] + pm[4 + r] * lc[1] + pm[8 + r] * lc[2];
        }
        m[12] += pm[12];
        m[13] += pm[13];
        m[14] += pm[14];
    }
    m[3] = m[7] = m[11] = 0.0f;
    m[15] = 1.0f;
    if (!all_finite(m, 16)) {
        uc->not_finite = 1;
        return false;
    }
    /* Stretch bound: the smaller of (parent's bound x largest |scale|), which is exact
     * without shear, and the Frobenius norm, which bounds the spectral norm under shear
     * (a non-uniform scale rotated beneath another). */
    float ms = fmaxf(fabsf(sc[0]), fmaxf(fabsf(sc[1]), fabsf(sc[2])));
    float frob2 = 0.0f;
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            frob2 += m[c * 4 + r] * m[c * 4 + r];
    float bound = fminf(parent_scale * ms, sqrtf(frob2));
    memcpy(s->world_matrix[i], m, sizeof m);
    s->world_scale[i] = isfinite(bound) ? bound : INFINITY;
    return true;
}

/* Pass 2: recomputes the subtree of r: matrices top-down on entering a node, exact spheres
 * bottom-up on leaving it (a node's sphere is complete when it is left and is then merged
 * into its parent's). Follows the links, so any depth works without a stack. */
static void recompute_subtree(rvi_scene *s, uint32_t r, update_counts *uc)
{
    uint32_t n = r;
    for (;;) {
        /* enter n */
        compose(s, n, uc);
        rvi_scene_geometry_sphere(s, n, s->world_sphere[n]);
        s->flags[n] &= ~(uint32_t)(RVI_NODE_MOVED | RVI_NODE_BOUNDS_DIRTY);
        s->loose[n] = 0;
        uc->matrices++;
        uc->bounds++;
        if (s->first_child[n] != NONE) {
            n = s->first_child[n];
            continue;
        }
        /* leave n and every ancestor whose last child n is */
        for (;;) {
            if (n == r)
                return;
            uint32_t p = s->parent[n];
            rvi_sphere_merge(s->world_sphere[p], s->world_sphere[n], s->world_sphere[p]);
            if (s->next_sibling[n] != NONE) {
                n = s->next_sibling[n];
                break;
            }
            n = p;
        }
    }
}

/* Pass 4: node n is finished; fold it into its ancestors while each one has received its
 * last changed child. */
static void climb(rvi_scene *s, uint32_t n, update_counts *uc)
{
    for (;;) {
        uint32_t f = s->flags[n];
        if (!(f & RVI_NODE_START)) {
            /* An ancestor or a node whose own bounds changed: finished exactly once. */
            if ((f & RVI_NODE_BOUNDS_DIRTY) || s->loose[n] >= s->child_count[n]) {
                rvi_scene_exact_bounds(s, n);
                s->loose[n] = 0;
            }
            uc->bounds++;
        }
        s->flags[n] = f & ~(uint32_t)(RVI_NODE_START | RVI_NODE_ENTERED | RVI_NODE_BOUNDS_DIRTY);
        uint32_t p = s->parent[n];
        if (p == NONE)
            return;
        if (!rvi_sphere_contains(s->world_sphere[p], s->world_sphere[n]))
            rvi_sphere_merge(s->world_sphere[p], s->world_sphere[n], s->world_sphere[p]);
        s->loose[p]++;
        if (--s->pending[p] > 0)
            return;
        n = p;
    }
}

/* Pass 3: enters a start and each ancestor not yet entered, counting at each ancestor the
 * changed children it must wait for. */
static void enter_chain(rvi_scene *s, uint32_t d)
{
    if (s->flags[d] & RVI_NODE_ENTERED)
        return;
    s->flags[d] |= RVI_NODE_ENTERED;
    s->pending[d] = 0;
    for (uint32_t y = d;;) {
        uint32_t x = s->parent[y];
        if (x == NONE)
            return;
        if (s->flags[x] & RVI_NODE_ENTERED) {
            s->pending[x]++;
            return;
        }
        s->flags[x] |= RVI_NODE_ENTERED;
        s->pending[x] = 1;
        y = x;
    }
}

static bool is_start(uint32_t f)
{
    /* A recomputed subtree root, or a node whose own bounds changed under no moved node. */
    return (f & RVI_NODE_START) || ((f & RVI_NODE_BOUNDS_DIRTY) && !(f & RVI_NODE_COVERED));
}

rv_result rv_update_world(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t *flags = s->flags;
    update_counts uc = {0};

    /* Pass 1: covered or not. Entries of destroyed nodes carry no MOVED/BOUNDS_DIRTY. */
    uint32_t visited = 0;
    for (uint32_t k = 0; k < s->dirty_count; k++) {
        uint32_t d = s->dirty[k];
        flags[d] &= ~(uint32_t)RVI_NODE_LISTED;
        if (!(flags[d] & (RVI_NODE_MOVED | RVI_NODE_BOUNDS_DIRTY)) || (flags[d] & RVI_NODE_VISITED))
            continue;
        uint32_t first = visited, x = d;
        do {
            flags[x] |= RVI_NODE_VISITED;
            s->work[visited++] = x;
            x = s->parent[x];
        } while (x != NONE && !(flags[x] & (RVI_NODE_VISITED | RVI_NODE_MOVED)));
        if (x != NONE && (flags[x] & (RVI_NODE_MOVED | RVI_NODE_COVERED)))
            for (uint32_t j = first; j < visited; j++)
                flags[s->work[j]] |= RVI_NODE_COVERED;
    }

    /* Pass 2: recompute each topmost moved subtree. */
    for (uint32_t k = 0; k < s->dirty_count; k++) {
        uint32_t d = s->dirty[k];
        if ((flags[d] & RVI_NODE_MOVED) && !(flags[d] & RVI_NODE_COVERED)) {
            recompute_subtree(s, d, &uc);
            flags[d] |= RVI_NODE_START;
        }
    }

    /* Pass 3 and 4: count what each ancestor waits for, then climb from every start that
     * waits for nothing (the others are finished by their last changed child). */
    for (uint32_t k = 0; k < s->dirty_count; k++) {
        uint32_t d = s->dirty[k];
        if (is_start(flags[d]))
            enter_chain(s, d);
    }
    for (uint32_t k = 0; k < s->dirty_count; k++) {
        uint32_t d = s->dirty[k];
        if ((flags[d] & RVI_NODE_ENTERED) && s->pending[d] == 0 && is_start(flags[d]))
            climb(s, d, &uc);
    }

    for (uint32_t j = 0; j < visited; j++)
        flags[s->work[j]] &= ~(uint32_t)(RVI_NODE_VISITED | RVI_NODE_COVERED);
    s->dirty_count = 0;
    s->matrices_recomputed = uc.matrices;
    s->bounds_recomputed = uc.bounds;
    if (uc.not_finite)
        return RV_ERR_NOT_FINITE;
    return uc.zero_quat ? RV_ERR_INVALID_ARG : RV_OK;
}
