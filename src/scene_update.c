/* rv_update_world and the bounds math (docs/design.md §2).
 *
 * An update makes three passes, none recursive and none allocating (every scratch array
 * has one entry per node slot and grows with the scene):
 *  1. One sweep of the dirty list (nodes marked moved or bounds-dirty). A moved node walks
 *     its strict ancestors to learn whether one of them moved too ("covered"); walks stop at
 *     a node already walked, so each node is walked once. An uncovered moved node roots a
 *     subtree whose world matrices and exact world spheres are recomputed at once (matrices
 *     on the way down, spheres on the way up of a link-following walk, no stack), and its
 *     sphere is folded into its parent, which becomes a climb start.
 *  2. Climb starts (those parents, and nodes whose own bounds changed under no moved node:
 *     set_bounds; or that lost a child) and their ancestors count the changed children they
 *     wait for.
 *  3. Starts climb: a finished node folds its sphere into its parent, and a parent whose
 *     last changed child has arrived is finished exactly once.
 * The moved nodes themselves are touched in pass 1 only (their cache lines are fetched
 * ahead): in a large scene a moved node's cost is its cache misses.
 *
 * Parent-bounds policy (why a 1 % update is not a full recompute): a finished parent grows
 * by merging each changed child's sphere at once (O(1) per child, always enclosing), and is
 * recomputed exactly from all its children only when its own geometry changed or as many
 * child changes (a lost child counts as one) have accumulated as it has children, so exact
 * recomputes cost O(1) amortised per change and a grown sphere does not stay loose for
 * long. A loose sphere is larger than minimal, never smaller: culling stays conservative. */
#include "core/check.h"
#include "scene.h"
#include "core/prefetch.h"
#include "core/round_up.h"
#include "world.h"

#include <float.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define NONE RVI_INDEX_NONE

/* True when all n values are finite, read from their bits (an exponent of all ones is an
 * infinity or a NaN). Independent integer tests: the float form this replaced (x - x summed)
 * was one dependent add per value. */
static inline bool all_finite(const float *v, int n)
{
    uint32_t not_finite = 0;
    for (int k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, &v[k], sizeof bits);
        not_finite |= (bits & RVI_FLOAT_EXPONENT_BITS) == RVI_FLOAT_EXPONENT_BITS;
    }
    return !not_finite;
}

/* all_finite for a 4 x 4 matrix (16 floats that may all be read), a column per vector. */
static inline bool matrix_finite(const float m[16])
{
#if defined(__SSE2__)
    const __m128i exponent = _mm_set1_epi32((int)RVI_FLOAT_EXPONENT_BITS);
    __m128i ones = _mm_setzero_si128();
    for (int c = 0; c < 4; c++) {
        __m128i e = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)&m[c * 4]), exponent);
        ones = _mm_or_si128(ones, _mm_cmpeq_epi32(e, exponent));
    }
    return _mm_movemask_epi8(ones) == 0;
#else
    return all_finite(m, 16);
#endif
}

/* Rounding slack for a sphere at centre c with radius r: a few ulps of its magnitude. */
static inline float slack(const float c[3], float r)
{
    return 4.0f * FLT_EPSILON * (fabsf(c[0]) + fabsf(c[1]) + fabsf(c[2]) + r) + FLT_MIN; /* + FLT_MIN: denormal rounding is absolute */
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
    /* Whether one sphere holds the other is decided in double, with a margin for the
     * double's own rounding. In float, a distance below one step of the radii vanished
     * (d + rb == ra) and a sphere was kept that missed the other by that distance (a
     * parent 1e20 from the origin and two children 1000 apart). */
    double ddx = (double)b[0] - a[0], ddy = (double)b[1] - a[1], ddz = (double)b[2] - a[2];
    double dd = sqrt(ddx * ddx + ddy * ddy + ddz * ddz); /* no float under/overflow */
    double margin = dd > 0.0 ? 4.0 * DBL_EPSILON * (dd + (double)a[3] + b[3]) : 0.0; /* concentric: exact */
    if (dd + b[3] + margin <= a[3]) {
        memmove(out, a, 16);
        return;
    }
    if (dd + a[3] + margin <= b[3]) {
        memmove(out, b, 16);
        return;
    }
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    float d = (float)dd;
    if (!(d > 0.0f)) {
        /* Concentric as floats: the larger sphere, padded (the slack covers what the
         * margin let through). */
        const float *big = a[3] >= b[3] ? a : b;
        float r = big[3] + slack(big, big[3]);
        memmove(out, big, 12);
        out[3] = isfinite(r) ? r : INFINITY;
        return;
    }
    /* Neither holds the other (to within the margin, which the slack below covers), so
     * d >= |ra - rb| nearly: the enclosing sphere touches both far sides, its centre on
     * the line between the centres. */
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
    /* The centre in double: in float, terms of 1e6 that cancel to a centre near 0 lose
     * ulp(1e6) = 0.06 each, far beyond a slack relative to the result. The double sum's own error is bounded by its terms' magnitude. */
    /* Four rows, not three, so the compiler pairs them in double vectors (row 3 is not
     * used): the same operations in the same order per row, so the same bits. */
    double centre[4], terms[4];
    for (int k = 0; k < 4; k++) {
        double t0 = (double)m[k] * l[0], t1 = (double)m[4 + k] * l[1], t2 = (double)m[8 + k] * l[2];
        centre[k] = t0 + t1 + t2 + m[12 + k];
        terms[k] = fabs(t0) + fabs(t1) + fabs(t2) + fabs((double)m[12 + k]);
    }
    float c[3] = { (float)centre[0], (float)centre[1], (float)centre[2] };
    double mag = terms[0] + terms[1] + terms[2];
    float r = rvi_float_up((double)l[3] * s->aux[i].world_scale + mag * 8.0 * DBL_EPSILON);
    r += slack(c, r);
    memcpy(out, c, 12);
    out[3] = isfinite(r) ? r : INFINITY;
    if (s->flags[i] & RVI_NODE_STALE) {
        /* Placement unknown: unbounded, so every stage that reads the sphere draws it. The
         * centre stays a finite point (the kept matrix's) for depth sorting. */
        if (!all_finite(out, 3))
            memcpy(out, &m[12], 12);
        out[3] = INFINITY;
    }
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
    int recovered; /* a stale node composed again (its ancestors' spheres must shrink) */
} update_counts;

/* Sets or clears node i's RVI_NODE_STALE mark, keeping the scene's count. */
static inline void set_stale(rvi_scene *s, uint32_t i, bool stale, update_counts *uc)
{
    uint32_t f = s->flags[i];
    if (!(f & RVI_NODE_STALE) == !stale)
        return;
    if (stale) {
        s->flags[i] = f | RVI_NODE_STALE;
        s->stale_count++;
    } else {
        s->flags[i] = f & ~(uint32_t)RVI_NODE_STALE;
        s->stale_count--;
        uc->recovered = 1;
    }
}

/* World matrix of node i from its local transform and its parent's matrix (T * R * S,
 * column-major). False, with nothing written, when the local transform is not finite, its
 * quaternion is zero, or the product overflows: the node then keeps its previous matrix. */
/* The linear part (columns 0-2) and translation (column 3) of a rotation from quaternion q
 * (finite, with a normal component; need not be unit) and scales sc, times translation t:
 * T * R * S as 12 floats, column-major. */
static inline void trs_affine(const float t[3], const float q[4], const float sc[3], float l[12])
{
    /* The rotation in double: float squares of a tiny quaternion's components underflow
     * (some to 0, some to imprecise denormals), which left |q|^2 too small and the
     * "rotation" a stretch the scale bound below did not know of — a sphere smaller than its
     * geometry. Squares of floats never underflow in double. */
    double x = q[0], y = q[1], z = q[2], w = q[3];
    double n2 = x * x + y * y + z * z + w * w;
    /* Dividing by |q|^2 makes an unnormalised quaternion (written in place) a rotation. */
    double k = 2.0 / n2;
    double xx = x * x * k, yy = y * y * k, zz = z * z * k;
    double xy = x * y * k, xz = x * z * k, yz = y * z * k;
    double wx = w * x * k, wy = w * y * k, wz = w * z * k;
    float m[12] = {
        (float)((1.0 - yy - zz) * sc[0]), (float)((xy + wz) * sc[0]), (float)((xz - wy) * sc[0]),
        (float)((xy - wz) * sc[1]), (float)((1.0 - xx - zz) * sc[1]), (float)((yz + wx) * sc[1]),
        (float)((xz + wy) * sc[2]), (float)((yz - wx) * sc[2]), (float)((1.0 - xx - yy) * sc[2]),
        t[0], t[1], t[2],
    };
    memcpy(l, m, sizeof m);
}

void rvi_scene_local_affine(const rvi_scene *s, uint32_t i, float out[12])
{
    if (s->flags[i] & RVI_NODE_LOCAL_MATRIX) {
        memcpy(out, s->local_linear[i], 36);
        memcpy(&out[9], s->position[i], 12);
    } else if (rvi_negligible_n(s->rotation[i], 4)) { /* written in place; the update refuses it */
        const float unit[4] = { 0, 0, 0, 1 };
        trs_affine(s->position[i], unit, s->scale[i], out);
    } else {
        trs_affine(s->position[i], s->rotation[i], s->scale[i], out);
    }
}

/* An upper bound of the spectral norm (largest stretch) of the column-major 3 x 3 matrix a:
 * the square root of the largest absolute row sum of a^T a (Gershgorin's bound on its
 * largest eigenvalue), in double. Equal to the largest column length, up to rounding, when
 * the columns are orthogonal (a rotation times a scale), so a host's rigid matrix is not
 * taken for a stretch; any shear only raises it. */
static double stretch_bound(const float a[9])
{
    double g[3][3];
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3; d++)
            g[c][d] = (double)a[c * 3] * a[d * 3] + (double)a[c * 3 + 1] * a[d * 3 + 1] + (double)a[c * 3 + 2] * a[d * 3 + 2];
    double most = 0.0;
    for (int c = 0; c < 3; c++) {
        double row = fabs(g[c][0]) + fabs(g[c][1]) + fabs(g[c][2]);
        most = row > most ? row : most;
    }
    /* The sums' relative rounding (a few DBL_EPSILON) is far inside the caller's float padding. */
    return sqrt(most) * (1.0 + 8.0 * DBL_EPSILON);
}

/* World matrix of node i from its local transform and its parent's matrix (T * R * S, or
 * the host's local matrix; column-major). False, with nothing written, when the local
 * transform is not finite, its quaternion is zero, or the product overflows: the node then
 * keeps its previous matrix. */
static bool compose(rvi_scene *s, uint32_t i, update_counts *uc)
{
    const float *t = s->position[i], *q = s->rotation[i], *sc = s->scale[i];
    float l[12];
    double ms; /* the local matrix's largest stretch (an upper bound) */
    if (s->flags[i] & RVI_NODE_LOCAL_MATRIX) {
        /* The linear part was checked finite when set; only the position is written in place. */
        if (!all_finite(t, 3)) {
            uc->not_finite = 1;
            return false;
        }
        memcpy(l, s->local_linear[i], 36);
        memcpy(&l[9], t, 12);
        ms = stretch_bound(l);
    } else {
        if (!all_finite(t, 3) || !all_finite(sc, 3) || !all_finite(q, 4)) {
            uc->not_finite = 1;
            return false;
        }
        /* A quaternion without a normal component is zero (as the setters refuse it): under
         * DAZ its subnormals read as zero, so any other verdict would depend on the host's
         * mode. With a normal component, |q|^2 > 0. */
        if (rvi_negligible_n(q, 4)) {
            uc->zero_quat = 1;
            return false;
        }
        trs_affine(t, q, sc, l);
        ms = fabs((double)sc[0]); /* finite; exact for a rotation times a scale */
        double ms1 = fabs((double)sc[1]), ms2 = fabs((double)sc[2]);
        ms = ms1 > ms ? ms1 : ms;
        ms = ms2 > ms ? ms2 : ms;
    }
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
        parent_scale = s->aux[p].world_scale;
        /* Each column is one 4-wide multiply-add (row 3 is set below): the same operations
         * in the same order as three scalar rows, so the same bits. */
#if defined(__SSE2__)
        __m128 p0 = _mm_loadu_ps(pm), p1 = _mm_loadu_ps(pm + 4), p2 = _mm_loadu_ps(pm + 8);
        for (int c = 0; c < 4; c++) {
            const float *lc = &l[c * 3];
            __m128 v = _mm_add_ps(_mm_add_ps(_mm_mul_ps(p0, _mm_set1_ps(lc[0])), _mm_mul_ps(p1, _mm_set1_ps(lc[1]))),
                                  _mm_mul_ps(p2, _mm_set1_ps(lc[2])));
            _mm_storeu_ps(&m[c * 4], c == 3 ? _mm_add_ps(v, _mm_loadu_ps(pm + 12)) : v);
        }
#else
        for (int c = 0; c < 4; c++) {
            const float *lc = &l[c * 3];
            for (int r = 0; r < 3; r++)
                m[c * 4 + r] = pm[r] * lc[0] + pm[4 + r] * lc[1] + pm[8 + r] * lc[2];
        }
        for (int r = 0; r < 3; r++)
            m[12 + r] += pm[12 + r];
#endif
    }
    m[3] = m[7] = m[11] = 0.0f;
    m[15] = 1.0f;
    if (!matrix_finite(m)) {
        uc->not_finite = 1;
        return false;
    }
    /* Stretch bound: the smaller of (parent's bound x the local stretch ms), which is exact
     * for a rotation times a scale without shear, and the Frobenius norm, which bounds the
     * spectral norm under shear (a non-uniform scale rotated beneath another). */
    /* In double, rounded up into float: float squares and products underflow for tiny
     * matrices (entries below ~1e-19), which made the bound 0 and a sphere smaller than
     * its geometry. */
    double frob2 = 0.0;
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            frob2 += (double)m[c * 4 + r] * m[c * 4 + r];
    /* parent x |scale| bounds the exact product; the float matrices differ from it by
     * rounding: relative (a few ulps per entry) and, where an entry falls into the
     * denormals, absolute (half the smallest denormal each, a 43 % error at 1e-45). The
     * local matrix's absolute error is scaled by the parent (a scale of 1e-45 rounded up
     * under a parent scale of 1e30 stretches 1.4e-15 as 2e-15), the world matrix's is not;
     * both are added so the bound holds for the matrices as stored. The Frobenius norm is
     * computed from the stored matrix itself. */
    double rounding = 16.0 * (double)FLT_EPSILON;
    double product = (double)parent_scale * (ms + 2.0 * (double)FLT_TRUE_MIN) * (1.0 + rounding) +
                     16.0 * (double)FLT_TRUE_MIN;
    double root = sqrt(frob2);
    double exact = product < root ? product : root; /* product is NaN for an unbounded parent x 0: root */
    float bound = rvi_float_up(exact);
    memcpy(s->world_matrix[i], m, sizeof m);
    s->aux[i].world_scale = isfinite(bound) ? bound : INFINITY;
    return true;
}

/* Recomputes the subtree of r: matrices top-down on entering a node, exact spheres
 * bottom-up on leaving it (a node's sphere is complete when it is left and is then merged
 * into its parent's). Follows the links, so any depth works without a stack.
 * A node that cannot be composed, or whose parent's placement is unknown, is marked stale
 * (RVI_NODE_STALE: its sphere becomes unbounded); one that composes under a placed parent
 * loses the mark. Top-down, so a whole subtree below a failed node is marked with it. */
static void recompute_subtree(rvi_scene *s, uint32_t r, update_counts *uc)
{
    uint32_t n = r;
    for (;;) {
        /* enter n */
        bool placed = compose(s, n, uc);
        uint32_t parent = s->parent[n];
        placed = placed && (parent == NONE || !(s->flags[parent] & RVI_NODE_STALE));
        set_stale(s, n, !placed, uc);
        if (s->flags[n] & RVI_NODE_UNPLACED) /* placed under the parent that took it */
            s->flags[n] &= ~(uint32_t)(RVI_NODE_UNPLACED | RVI_NODE_HIDDEN);
        rvi_scene_geometry_sphere(s, n, s->world_sphere[n]);
        s->flags[n] &= ~(uint32_t)(RVI_NODE_MOVED | RVI_NODE_BOUNDS_DIRTY | RVI_NODE_LOST_CHILD);
        s->aux[n].loose = 0;
        uc->matrices++;
        uc->bounds++;
        if (s->aux[n].child_count) { /* (aux is in cache: compose used it) */
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

/* Grows parent p's sphere at once to hold child n's (never shrinks it: see the policy). */
static inline void fold_into_parent(rvi_scene *s, uint32_t n, uint32_t p)
{
    if (!rvi_sphere_contains(s->world_sphere[p], s->world_sphere[n]))
        rvi_sphere_merge(s->world_sphere[p], s->world_sphere[n], s->world_sphere[p]);
    s->aux[p].loose++;
}

/* Enters a climb start and each ancestor not yet entered, counting at each ancestor the
 * changed children it must wait for. */
static void enter_chain(rvi_scene *s, uint32_t d)
{
    if (s->flags[d] & RVI_NODE_ENTERED)
        return;
    s->flags[d] |= RVI_NODE_ENTERED;
    s->aux[d].pending = 0;
    for (uint32_t y = d;;) {
        uint32_t x = s->parent[y];
        if (x == NONE)
            return;
        if (s->flags[x] & RVI_NODE_ENTERED) {
            s->aux[x].pending++;
            return;
        }
        s->flags[x] |= RVI_NODE_ENTERED;
        s->aux[x].pending = 1;
        y = x;
    }
}

/* Node n has every changed child folded in: finish it (exactly or as grown) and fold it
 * into its parent, climbing while each parent has received its last changed child. */
static void climb(rvi_scene *s, uint32_t n, update_counts *uc)
{
    for (;;) {
        uint32_t f = s->flags[n];
        rvi_node_aux *a = &s->aux[n];
        if ((f & RVI_NODE_BOUNDS_DIRTY) || a->loose >= a->child_count) {
            rvi_scene_exact_bounds(s, n);
            a->loose = 0;
        }
        uc->bounds++;
        s->flags[n] = f & ~(uint32_t)(RVI_NODE_MARK | RVI_NODE_ENTERED | RVI_NODE_BOUNDS_DIRTY | RVI_NODE_LOST_CHILD);
        uint32_t p = s->parent[n];
        if (p == NONE)
            return;
        fold_into_parent(s, n, p);
        if (--s->aux[p].pending > 0)
            return;
        n = p;
    }
}

/* The dirty list is in marking order, scattered over the node arrays: ask for a node's
 * cache lines a few entries ahead so their misses overlap (a moved node touches ~10 lines).
 * The lines the update writes are asked for with write intent where the CPU has it
 * (RVI_PREFETCH_OWNED): with read prefetches instead, the sweep of moved nodes took 1.6x as
 * long (update_world_1m_1pct; a prefetch distance of 32/16 or 8/4 changed nothing). */
enum { PREFETCH_LINKS = 16, PREFETCH_DATA = 8 };

static inline void prefetch_ahead(const rvi_scene *s, const uint32_t *list, uint32_t k, uint32_t count)
{
    const bool own = s->prefetchw;
    if (k + PREFETCH_LINKS < count) {
        uint32_t e = list[k + PREFETCH_LINKS];
        RVI_PREFETCH_OWNED(own, &s->flags[e]);
        RVI_PREFETCH(&s->parent[e]);
    }
    if (k + PREFETCH_DATA < count) {
        uint32_t e = list[k + PREFETCH_DATA];
        RVI_PREFETCH(s->position[e]);
        RVI_PREFETCH(s->rotation[e]);
        RVI_PREFETCH(s->scale[e]);
        RVI_PREFETCH(s->local_sphere[e]);
        RVI_PREFETCH_OWNED(own, s->world_matrix[e]);
        RVI_PREFETCH_OWNED(own, s->world_sphere[e]);
        RVI_PREFETCH_OWNED(own, &s->aux[e]);
        uint32_t p = s->parent[e];
        if (p != NONE) {
            RVI_PREFETCH(s->world_matrix[p]);
            RVI_PREFETCH_OWNED(own, s->world_sphere[p]);
            RVI_PREFETCH_OWNED(own, &s->aux[p]);
            RVI_PREFETCH_OWNED(own, &s->flags[p]);
        }
    }
}

/* Sorts the dirty list by slot index (LSD radix sort, 11-bit digits, scratch: work).
 * Walking a scattered list in index order turns random misses into nearly sequential
 * reads (siblings created together share lines and pages), and makes the result
 * independent of the order in which the host marked nodes. */
enum { SORT_MIN = 256, DIGIT_BITS = 11, DIGITS = 1 << DIGIT_BITS };

static void sort_dirty(rvi_scene *s)
{
    uint32_t n = s->dirty_count, *a = s->dirty, *b = s->work;
    uint32_t counts[DIGITS];
    for (int shift = 0; shift < 24; shift += DIGIT_BITS) {
        memset(counts, 0, sizeof counts);
        for (uint32_t k = 0; k < n; k++)
            counts[(a[k] >> shift) & (DIGITS - 1)]++;
        uint32_t sum = 0;
        for (uint32_t d = 0; d < DIGITS; d++) {
            uint32_t c = counts[d];
            counts[d] = sum;
            sum += c;
        }
        for (uint32_t k = 0; k < n; k++)
            b[counts[(a[k] >> shift) & (DIGITS - 1)]++] = a[k];
        uint32_t *t = a;
        a = b;
        b = t;
    }
    if (a != s->dirty)
        memcpy(s->dirty, a, (size_t)n * sizeof *a);
}

rv_result rv_update_world(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    if (s->dirty_count >= SORT_MIN)
        sort_dirty(s);
    uint32_t *flags = s->flags, *dirty = s->dirty;
    const uint32_t count = s->dirty_count;
    update_counts uc = {0};

    /* Pass 1, one sweep of the dirty list. A moved node walks its strict ancestors to learn
     * whether one moved too (covered: its subtree recomputes it). An uncovered one has its
     * subtree recomputed here and folded into its parent, which becomes a climb start. The
     * list is compacted in place into the climb starts (at most one per entry read). */
    uint32_t visited = 0, starts = 0;
    for (uint32_t k = 0; k < count; k++) {
        prefetch_ahead(s, dirty, k, count);
        uint32_t d = dirty[k];
        uint32_t f = flags[d];
        flags[d] = f & ~(uint32_t)RVI_NODE_LISTED;
        if (!(f & RVI_NODE_MOVED)) {
            if (f & (RVI_NODE_BOUNDS_DIRTY | RVI_NODE_LOST_CHILD))
                dirty[starts++] = d; /* unless a moved ancestor's recompute clears it */
            continue;                /* destroyed since it was listed, or already recomputed */
        }
        uint32_t first = visited, x = s->parent[d];
        while (x != NONE && !(flags[x] & (RVI_NODE_VISITED | RVI_NODE_MOVED))) {
            flags[x] |= RVI_NODE_VISITED;
            s->work[visited++] = x;
            x = s->parent[x];
        }
        if (x != NONE && (flags[x] & (RVI_NODE_MOVED | RVI_NODE_COVERED))) {
            for (uint32_t j = first; j < visited; j++)
                flags[s->work[j]] |= RVI_NODE_COVERED;
            continue; /* stays MOVED until its ancestor's recompute clears it */
        }
        uc.recovered = 0;
        recompute_subtree(s, d, &uc);
        uint32_t p = s->parent[d];
        if (uc.recovered)
            rvi_scene_force_exact_ancestors(s, p); /* their infinite spheres shrink now */
        if (p != NONE) {
            fold_into_parent(s, d, p);
            if (!(flags[p] & RVI_NODE_MARK)) {
                flags[p] |= RVI_NODE_MARK;
                dirty[starts++] = p;
            }
        }
    }
    for (uint32_t j = 0; j < visited; j++)
        flags[s->work[j]] &= ~(uint32_t)(RVI_NODE_VISITED | RVI_NODE_COVERED);

    /* Pass 2: each start and its ancestors count the changed children they wait for. A
     * bounds-dirty entry that a recompute covered has lost the flag and is no start. */
    for (uint32_t j = 0; j < starts; j++) {
        uint32_t e = dirty[j];
        if (flags[e] & (RVI_NODE_MARK | RVI_NODE_BOUNDS_DIRTY | RVI_NODE_LOST_CHILD))
            enter_chain(s, e);
    }
    /* Pass 3: climb from every start that waits for nothing; the others are finished by
     * their last changed child. Each entered node is finished exactly once. */
    for (uint32_t j = 0; j < starts; j++) {
        uint32_t e = dirty[j];
        if ((flags[e] & RVI_NODE_ENTERED) && s->aux[e].pending == 0)
            climb(s, e, &uc);
    }

    s->dirty_count = 0;
    s->matrices_recomputed = uc.matrices;
    s->bounds_recomputed = uc.bounds;
    s->edits += uc.matrices + uc.bounds > 0;
    if (uc.not_finite)
        return RV_ERR_NOT_FINITE;
    return uc.zero_quat ? RV_ERR_INVALID_ARG : RV_OK;
}
