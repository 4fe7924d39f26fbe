/* The union test of one texel (docs/occlusion.md, "Fusion"): do some of the pieces whose
 * edges pass near the texel cover all of it together, and what nearness do they guarantee?
 *
 * The boundary of a union of pieces lies on their edges. An edge's stretch near the texel
 * (the texel grown by a margin) is cancelled where another piece of the set covers its other
 * side: an edge with the bit-identical line and the opposite side (a shared edge: every
 * piece that has it computes its line from the same inputs the same way), or the inside of
 * another piece shrunk by a margin (an overlap). If every edge stretch near the texel is
 * cancelled, no boundary of the union crosses it, so the texel is wholly inside or wholly
 * outside the union; it is inside when its centre is inside one of the pieces. A gap of any
 * width leaves an edge stretch that nothing cancels, so a texel over a gap is never covered.
 *
 * Any set that passes is sound, and gives the smallest of its pieces' nearness there. The
 * search starts from all the pieces that could raise the texel (the nearest eight) and
 * prunes: an edge stretch a set leaves uncancelled stays so in every subset keeping its
 * piece, so that piece can be in no covering subset (an extra piece, say one passing by,
 * brings an edge that may lie along a seam between two others, cancelled by neither alone).
 * What is left covers the texel, or nothing does. Then the farthest pieces are dropped
 * while a covering set remains (far pieces behind a seam never drag the value down). What
 * each piece does for each edge stretch is worked out once, when first needed; every set
 * tried is then a union of intervals.
 *
 * The same pieces serve the object tests (rvi_occ_texel_hides_box; docs/occlusion.md,
 * "Finer than a texel"): a texel that fails an object on its depth alone may still hide it
 * over the part of the texel the object's image can meet, by the covering piece's planes,
 * by one piece holding all of that part, or by several together (the search above, on the
 * part's bounding rectangle). */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Pieces considered per texel (the nearest that could raise it), and edge stretches (a
 * mesh vertex where eight triangles meet has sixteen); a texel with more records or
 * stretches, where many outlines converge (far away, where fusion rarely covers anything),
 * is left as it is. */
#define UNION_PIECES 8
#define UNION_RECORDS 16
/* Pieces tried when not every edge is shared. */
#define UNION_OVERLAP_PIECES 4
/* Notes looked at per texel by the partial test of an object. */
#define MAX_PARTLY_LOOKS 64u

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

typedef struct span {
    double lo, hi; /* empty when lo > hi */
} span;

typedef struct texel_union {
    int32_t ix, iy;
    double x0, y0, x1, y1;               /* the rectangle tested: the texel, or part of it */
    uint32_t pieces, records;
    uint32_t piece[UNION_PIECES];        /* pool index, nearest first */
    float value[UNION_PIECES];
    uint32_t owner[UNION_RECORDS];       /* rank of the record's piece */
    const rvi_occ_edge *edge[UNION_RECORDS];
    span stretch[UNION_RECORDS];         /* the edge near the texel, along its line */
    uint32_t whole[UNION_RECORDS];       /* pieces that alone cancel all of the stretch */
    uint32_t known[UNION_RECORDS];       /* pieces whose twin and inside are worked out */
    span twin[UNION_RECORDS][UNION_PIECES], inside[UNION_RECORDS][UNION_PIECES];
    uint32_t centre;                     /* pieces holding the texel's centre */
} texel_union;

/* The parameter range [t0, t1] of segment p0 -> p1 inside the box [x0, x1] x [y0, y1]
 * (Liang & Barsky clipping); false when it misses. */
static bool clip_segment(const double p0[2], const double p1[2], double x0, double x1, double y0, double y1,
                         double *t0, double *t1)
{
    double d[2] = { p1[0] - p0[0], p1[1] - p0[1] };
    double lo[2] = { x0, y0 }, hi[2] = { x1, y1 };
    double a = 0, b = 1;
    for (int i = 0; i < 2; i++) {
        if (d[i] == 0) {
            if (p0[i] < lo[i] || p0[i] > hi[i])
                return false;
            continue;
        }
        double ta = (lo[i] - p0[i]) / d[i], tb = (hi[i] - p0[i]) / d[i];
        if (ta > tb) {
            double s = ta;
            ta = tb;
            tb = s;
        }
        a = dmax(a, ta);
        b = dmin(b, tb);
    }
    *t0 = a;
    *t1 = b;
    return a <= b;
}

static double s_at(const rvi_occ_edge *e, double t)
{
    double x = e->p0[0] + t * (e->p1[0] - e->p0[0]), y = e->p0[1] + t * (e->p1[1] - e->p0[1]);
    return e->line[1] * x - e->line[0] * y;
}

/* The stretch of e strictly inside piece q shrunk by each edge's slack and the margin
 * (Cyrus & Beck), along e's line; empty when none. */
static span inside_piece(const rvi_occ_fusion *fu, const rvi_occ_piece *q, const rvi_occ_edge *e)
{
    span none = { 1, 0 };
    double a = 0, b = 1;
    for (uint32_t k = 0; k < q->edge_count && a <= b; k++) {
        const rvi_occ_edge *g = &fu->edges[q->first_edge + k];
        double m = RVI_OCC_FUSE_MARGIN + g->slack;
        double v0 = g->side * (g->line[0] * e->p0[0] + g->line[1] * e->p0[1] + g->line[2]) - m;
        double v1 = g->side * (g->line[0] * e->p1[0] + g->line[1] * e->p1[1] + g->line[2]) - m;
        if (v0 < 0 && v1 < 0)
            return none;
        if (v0 >= 0 && v1 >= 0)
            continue;
        double t = v0 / (v0 - v1);
        if (v0 < 0)
            a = dmax(a, t);
        else
            b = dmin(b, t);
    }
    if (!(a < b))
        return none;
    double sa = s_at(e, a), sb = s_at(e, b);
    span r = { dmin(sa, sb), dmax(sa, sb) };
    return r;
}

/* True when every point of [lo, hi] lies in one of the (closed) spans. */
static bool spans_cover(span *s, uint32_t n, double lo, double hi)
{
    for (uint32_t i = 1; i < n; i++) { /* insertion sort by start */
        span k = s[i];
        uint32_t j = i;
        for (; j > 0 && s[j - 1].lo > k.lo; j--)
            s[j] = s[j - 1];
        s[j] = k;
    }
    double cur = lo;
    for (uint32_t i = 0;;) {
        double best = -INFINITY;
        for (; i < n && s[i].lo <= cur; i++)
            best = dmax(best, s[i].hi);
        if (best < cur)
            return false;
        if (best >= hi)
            return true;
        cur = best;
    }
}

static bool centre_inside(const rvi_occ_fusion *fu, const rvi_occ_piece *q, double cx, double cy)
{
    for (uint32_t k = 0; k < q->edge_count; k++) {
        const rvi_occ_edge *g = &fu->edges[q->first_edge + k];
        if (!(g->side * (g->line[0] * cx + g->line[1] * cy + g->line[2]) >= 0))
            return false;
    }
    return true;
}

/* ---- gathering ----------------------------------------------------------------------------- */

/* Does a point just inside each of the texel's corners lie in one of the candidates? When
 * one lies in none, no set covers the texel (where many outlines meet far away, or two
 * cross, a corner is usually outside all; skipping a test is never wrong, only a lost
 * fusion at worst). */
static bool corners_inside(const rvi_occ_fusion *fu, const uint32_t *piece, uint32_t m, int32_t ix, int32_t iy)
{
    static const double corner[4][2] = { { 0.02, 0.02 }, { 0.98, 0.02 }, { 0.02, 0.98 }, { 0.98, 0.98 } };
    for (int c = 0; c < 4; c++) {
        uint32_t q = 0;
        while (q < m && !centre_inside(fu, &fu->pieces[piece[q]], ix + corner[c][0], iy + corner[c][1]))
            q++;
        if (q == m)
            return false;
    }
    return true;
}

/* The nearest UNION_PIECES of the candidates, for the search. */
static void gather_pieces(const uint32_t *piece, const float *value, uint32_t m, texel_union *u)
{
    u->pieces = m < UNION_PIECES ? m : UNION_PIECES;
    memcpy(u->piece, piece, u->pieces * sizeof *piece);
    memcpy(u->value, value, u->pieces * sizeof *value);
}

/* The chosen pieces' edge stretches near the rectangle (every edge of theirs passing within
 * its margin of it). False when too many. */
static bool gather_edges(const rv_occlusion *occ, texel_union *u)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    u->records = 0;
    for (uint32_t q = 0; q < u->pieces; q++) {
        const rvi_occ_piece *pc = &fu->pieces[u->piece[q]];
        for (uint32_t k = 0; k < pc->edge_count; k++) {
            const rvi_occ_edge *e = &fu->edges[pc->first_edge + k];
            double m = rvi_occ_edge_margin(e), t0, t1, x0 = u->x0 - m, x1 = u->x1 + m, y0 = u->y0 - m,
                   y1 = u->y1 + m;
            if (dmax(e->p0[0], e->p1[0]) < x0 || dmin(e->p0[0], e->p1[0]) > x1 || dmax(e->p0[1], e->p1[1]) < y0 ||
                dmin(e->p0[1], e->p1[1]) > y1 || !clip_segment(e->p0, e->p1, x0, x1, y0, y1, &t0, &t1))
                continue; /* does not pass near the texel */
            if (u->records == UNION_RECORDS)
                return false;
            uint32_t r = u->records++;
            double sa = s_at(e, t0), sb = s_at(e, t1);
            u->owner[r] = q;
            u->edge[r] = e;
            u->stretch[r].lo = dmin(sa, sb);
            u->stretch[r].hi = dmax(sa, sb);
        }
    }
    return true;
}

/* What piece q does for record r: a twin edge (the same line, the other side) and its
 * inside. */
static void covers_of(const rvi_occ_fusion *fu, texel_union *u, uint32_t r, uint32_t q)
{
    const rvi_occ_edge *e = u->edge[r];
    u->known[r] |= 1u << q;
    span none = { 1, 0 };
    u->twin[r][q] = u->inside[r][q] = none;
    for (uint32_t j = 0; j < u->records; j++) {
        const rvi_occ_edge *f = u->edge[j];
        if (u->owner[j] != q || f->side == e->side || f->line[0] != e->line[0] || f->line[1] != e->line[1] ||
            f->line[2] != e->line[2])
            continue;
        u->twin[r][q].lo = f->s0;
        u->twin[r][q].hi = f->s1;
        if (f->s0 <= u->stretch[r].lo && f->s1 >= u->stretch[r].hi) {
            u->whole[r] |= 1u << q;
            return; /* shared all along the stretch: nothing more to know */
        }
    }
    u->inside[r][q] = inside_piece(fu, &fu->pieces[u->piece[q]], e);
    const span *in = &u->inside[r][q];
    if (in->lo <= u->stretch[r].lo && in->hi >= u->stretch[r].hi)
        u->whole[r] |= 1u << q;
}

/* ---- the search ------------------------------------------------------------------------------ */

/* Marks every record's full twins (another piece's edge on the same line, the other side,
 * all along the stretch) in whole; true when every record has one. */
static bool shared_edges(texel_union *u)
{
    bool all = true;
    for (uint32_t r = 0; r < u->records; r++) {
        const rvi_occ_edge *e = u->edge[r];
        u->whole[r] = 0;
        for (uint32_t j = 0; j < u->records; j++) {
            const rvi_occ_edge *f = u->edge[j];
            if (u->owner[j] != u->owner[r] && f->side != e->side && f->line[0] == e->line[0] &&
                f->line[1] == e->line[1] && f->line[2] == e->line[2] && f->s0 <= u->stretch[r].lo &&
                f->s1 >= u->stretch[r].hi)
                u->whole[r] |= 1u << u->owner[j];
        }
        all &= u->whole[r] != 0;
    }
    return all;
}

/* Is record r's stretch cancelled by the pieces in mask? What a piece does for an edge is
 * worked out when first needed. */
static bool cancelled(const rvi_occ_fusion *fu, texel_union *u, uint32_t r, uint32_t mask)
{
    uint32_t own = u->owner[r];
    if (u->whole[r] & mask)
        return true;
    for (uint32_t todo = mask & ~u->known[r] & ~(1u << own); todo; todo &= todo - 1) {
        covers_of(fu, u, r, rvi_bit_length(todo & (0u - todo)) - 1);
        if (u->whole[r] & mask)
            return true;
    }
    span s[2 * UNION_PIECES];
    uint32_t n = 0;
    for (uint32_t q = 0; q < u->pieces; q++) {
        if (!(mask >> q & 1) || q == own)
            continue;
        if (u->twin[r][q].lo <= u->twin[r][q].hi)
            s[n++] = u->twin[r][q];
        if (u->inside[r][q].lo <= u->inside[r][q].hi)
            s[n++] = u->inside[r][q];
    }
    return n && spans_cover(s, n, u->stretch[r].lo, u->stretch[r].hi);
}

/* The largest subset of mask whose every edge stretch is cancelled within it: a stretch
 * one set leaves uncancelled stays so in every subset keeping its piece (covers only
 * shrink), so all such pieces go at once, until none is left; 0 when fewer than two remain
 * or none holds the texel's centre. */
static uint32_t prune(const rvi_occ_fusion *fu, texel_union *u, uint32_t mask)
{
    for (;;) {
        uint32_t failing = 0;
        for (uint32_t r = 0; r < u->records; r++) {
            uint32_t own = u->owner[r];
            if ((mask & ~failing) >> own & 1 && !cancelled(fu, u, r, mask)) {
                failing |= 1u << own;
                uint32_t left = mask & ~failing;
                if (!(left & (left - 1)))
                    return 0;
            }
        }
        mask &= ~failing;
        if (!(mask & (mask - 1)))
            return 0; /* one piece never covers a texel its edge passes */
        if (!failing)
            return (u->centre & mask) ? mask : 0;
    }
}

/* The largest subset of mask whose every edge stretch is cancelled by one piece of it
 * alone (known twins and containments only: no inside is worked out); 0 as prune. */
static uint32_t prune_whole(const texel_union *u, uint32_t mask)
{
    for (;;) {
        uint32_t failing = 0;
        for (uint32_t r = 0; r < u->records; r++)
            if (mask >> u->owner[r] & 1 && !(u->whole[r] & mask))
                failing |= 1u << u->owner[r];
        mask &= ~failing;
        if (!(mask & (mask - 1)))
            return 0;
        if (!failing)
            return (u->centre & mask) ? mask : 0;
    }
}


/* ---- the shared-edge path --------------------------------------------------------------------- */

/* Records of the fast path: a texel where pieces only meet along shared edges (a mesh's
 * triangles, surfaces that share corners) is settled without clipping or searching. */
#define SHARED_RECORDS 24

typedef struct shared_union {
    uint32_t pieces;
    uint32_t piece[UNION_RECORDS];      /* pool index, nearest first */
    float value[UNION_RECORDS];
    uint32_t records;
    uint32_t owner[SHARED_RECORDS];     /* rank of the record's piece */
    const rvi_occ_edge *edge[SHARED_RECORDS];
    double lo[SHARED_RECORDS], hi[SHARED_RECORDS]; /* along the line: a stretch holding the edge's part near the texel */
} shared_union;

/* The pieces that could raise texel (ix, iy) (value above now), nearest first; false when fewer
 * than two or more than UNION_RECORDS. */
static bool shared_pieces(const rv_occlusion *occ, const uint32_t *piece, uint32_t n, float now, int32_t ix,
                          int32_t iy, shared_union *u)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    if (n > UNION_RECORDS)
        return false;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        float v = rvi_occ_piece_depth(&fu->pieces[piece[i]], ix, iy);
        if (!(v > now))
            continue;
        uint32_t j = m++;
        for (; j > 0 && u->value[j - 1] < v; j--) {
            u->value[j] = u->value[j - 1];
            u->piece[j] = u->piece[j - 1];
        }
        u->value[j] = v;
        u->piece[j] = piece[i];
    }
    u->pieces = m;
    return m >= 2;
}

/* Every edge of the pieces that may pass near the texel: along the line's normal the texel
 * spans half a unit either side of its centre, and as far along it (|a| + |b| = 1), so an
 * edge missing that square, grown by its margin, misses the texel. A superset is safe: an
 * extra record only needs a twin too. False when too many. */
static bool shared_records(const rvi_occ_fusion *fu, int32_t ix, int32_t iy, shared_union *u)
{
    double cx = ix + 0.5, cy = iy + 0.5;
    u->records = 0;
    for (uint32_t q = 0; q < u->pieces; q++) {
        const rvi_occ_piece *pc = &fu->pieces[u->piece[q]];
        for (uint32_t k = 0; k < pc->edge_count; k++) {
            const rvi_occ_edge *e = &fu->edges[pc->first_edge + k];
            double m = 0.5 + rvi_occ_edge_margin(e);
            double d = e->line[0] * cx + e->line[1] * cy + e->line[2];
            double sc = e->line[1] * cx - e->line[0] * cy;
            if (fabs(d) > m || sc + m < e->s0 || sc - m > e->s1)
                continue;
            if (u->records == SHARED_RECORDS)
                return false;
            uint32_t r = u->records++;
            u->owner[r] = q;
            u->edge[r] = e;
            u->lo[r] = dmax(e->s0, sc - m);
            u->hi[r] = dmin(e->s1, sc + m);
        }
    }
    return true;
}

/* Is every record of the first k pieces cancelled by another of them: an edge on the
 * bit-identical line, the other side, all along the record's stretch? */
static bool shared_within(const shared_union *u, uint32_t k)
{
    for (uint32_t r = 0; r < u->records; r++) {
        if (u->owner[r] >= k)
            continue;
        const rvi_occ_edge *e = u->edge[r];
        bool twin = false;
        for (uint32_t j = 0; j < u->records && !twin; j++) {
            const rvi_occ_edge *f = u->edge[j];
            twin = u->owner[j] < k && u->owner[j] != u->owner[r] && f->side != e->side &&
                   f->line[0] == e->line[0] && f->line[1] == e->line[1] && f->line[2] == e->line[2] &&
                   f->s0 <= u->lo[r] && f->s1 >= u->hi[r];
        }
        if (!twin)
            return false;
    }
    return true;
}

/* The shared-edge path: the fewest nearest pieces whose every edge near the texel has a
 * twin among them, and one of which holds the texel's centre, cover it (no boundary of
 * their union crosses it). 1: covered, *value set; 0: not settled here. */
static int shared_value(const rvi_occ_fusion *fu, shared_union *u, int32_t ix, int32_t iy, float *value)
{
    if (!shared_records(fu, ix, iy, u))
        return 0;
    bool centre = false;
    for (uint32_t k = 0; k < u->pieces; k++) {
        centre = centre || centre_inside(fu, &fu->pieces[u->piece[k]], ix + 0.5, iy + 0.5);
        if (k >= 1 && centre && shared_within(u, k + 1)) {
            *value = u->value[k];
            return 1;
        }
    }
    return 0;
}

bool rvi_occ_union_value(rv_occlusion *occ, uint32_t t, const uint32_t *pieces, uint32_t count, float *value)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    texel_union u;
    u.ix = (int32_t)(t % occ->width);
    u.iy = (int32_t)(t / occ->width);
    u.x0 = u.ix;
    u.y0 = u.iy;
    u.x1 = u.ix + 1.0;
    u.y1 = u.iy + 1.0;
    shared_union su;
    if (!shared_pieces(occ, pieces, count, occ->texels[t], u.ix, u.iy, &su) ||
        !corners_inside(fu, su.piece, su.pieces, u.ix, u.iy))
        return false;
    if (shared_value(fu, &su, u.ix, u.iy, value)) {
        occ->stats.fusion_tests++;
        return true;
    }
    gather_pieces(su.piece, su.value, su.pieces, &u);
    u.centre = 0;
    for (uint32_t q = 0; q < u.pieces; q++)
        if (centre_inside(fu, &fu->pieces[u.piece[q]], u.ix + 0.5, u.iy + 0.5))
            u.centre |= 1u << q;
    if (!u.centre || !gather_edges(occ, &u))
        return false;
    occ->stats.fusion_tests++;
    memset(u.known, 0, u.records * sizeof *u.known);
    uint32_t mask = (1u << u.pieces) - 1;
    /* Shared edges first (a mesh's triangles around a vertex): a set where every stretch has
     * a twin all along is settled without working out any inside. Otherwise only the
     * nearest few pieces are tried: where many unrelated outlines meet, overlaps rarely
     * cover anything and each costs a clipping per edge and piece. */
    bool few = !shared_edges(&u) && u.pieces > UNION_OVERLAP_PIECES;
    mask = prune(fu, &u, few ? (1u << UNION_OVERLAP_PIECES) - 1 : mask);
    /* Those few failing, the pieces fused by shared edges alone among all of them (a mesh
     * around a vertex, with a nearer outline passing by). */
    if (!mask && few)
        mask = prune_whole(&u, (1u << u.pieces) - 1);
    if (!mask)
        return false;
    /* Drop the farthest while a covering set remains: the value is its farthest piece's. */
    for (;;) {
        uint32_t less = prune(fu, &u, mask & ~(1u << (rvi_bit_length(mask) - 1)));
        if (!less)
            break;
        mask = less;
    }
    *value = u.value[rvi_bit_length(mask) - 1];
    return true;
}

/* ---- a texel that fails an object on its own depth, for the tests ------------------------- */

/* A piece's float plane (a, b, c) lowered to its minimum over each texel
 * (rvi_occ_plane_texel_min) bounds its nearness from below at a point (x, y) of the buffer
 * once the corner term is taken back out: the coefficients' rounding is at most one float
 * ulp of each term, within the 12-ulp allowance already subtracted. An object's plane,
 * raised to the texel maximum (rvi_occ_box_bound_make), likewise bounds from above. */
static double lower_at(const float *p, double x, double y)
{
    return (double)p[0] * x + (double)p[1] * y + (double)p[2] - dmin(p[0], 0) - dmin(p[1], 0);
}

static double upper_at(const float *p, double x, double y)
{
    return (double)p[0] * x + (double)p[1] * y + (double)p[2] - dmax(p[0], 0) - dmax(p[1], 0);
}

/* The object's nearness is at most U(v) and the piece's at least O(v) at each vertex of the
 * region, O and U affine (or O concave): O > U at every vertex puts the piece strictly
 * nearer everywhere in the region. O: the piece's floor; each plane (a far side: the
 * nearness is at least their maximum, so at least each) or their minimum (an entry side).
 * U: the object's nearest point, or one of its front faces' planes (the object's nearness
 * along a ray is that of the last front face it crosses, at most each one's). */
static bool region_nearer(const rvi_occ_piece *q, const rvi_occ_box_bound *bb, float nearness,
                          const double (*r)[2], uint32_t n)
{
    double o[16];
    uint32_t candidates = q->entry ? (q->plane_count ? 2 : 1) : 1 + q->plane_count;
    for (uint32_t c = 0; c < candidates; c++) {
        for (uint32_t v = 0; v < n; v++) {
            if (c == 0) {
                o[v] = q->floor;
            } else if (q->entry) {
                double m = INFINITY;
                for (uint32_t j = 0; j < q->plane_count; j++)
                    m = dmin(m, lower_at(q->plane[j], r[v][0], r[v][1]));
                o[v] = m;
            } else {
                o[v] = lower_at(q->plane[c - 1], r[v][0], r[v][1]);
            }
        }
        for (uint32_t k = 0; k <= bb->plane_count; k++) {
            bool nearer = true;
            for (uint32_t v = 0; v < n && nearer; v++) {
                double u = k == 0 ? (double)nearness : upper_at(bb->plane[k - 1], r[v][0], r[v][1]);
                nearer = o[v] > u + 1e-12 * (fabs(o[v]) + fabs(u));
            }
            if (nearer)
                return true;
        }
    }
    return false;
}

/* Is every point of the region (n vertices) inside piece q, by more than its lines' error? */
static bool region_inside(const rvi_occ_fusion *fu, const rvi_occ_piece *q, const double (*r)[2], uint32_t n)
{
    for (uint32_t e = 0; e < q->edge_count; e++) {
        const rvi_occ_edge *g = &fu->edges[q->first_edge + e];
        double A = g->side * g->line[0], B = g->side * g->line[1], C = g->side * g->line[2];
        for (uint32_t v = 0; v < n; v++) {
            double x = r[v][0], y = r[v][1];
            double m = RVI_OCC_FUSE_MARGIN + g->slack + 8 * DBL_EPSILON * (fabs(x) + fabs(y) + fabs(C));
            if (!(A * x + B * y + C >= m))
                return false;
        }
    }
    return true;
}

/* The part of texel (x, y) where the box's image may lie: the texel clipped by the image's
 * lines (margin included); n = 0 when none. At most 4 + 8 vertices. A line with every
 * vertex on its inner side (most of them: few pass through one texel) cuts nothing. */
static uint32_t image_in_texel(const rvi_occ_box_bound *bb, int32_t x, int32_t y, double out[16][2])
{
    double poly[2][16][2], d[16];
    poly[0][0][0] = poly[0][3][0] = x;
    poly[0][1][0] = poly[0][2][0] = x + 1.0;
    poly[0][0][1] = poly[0][1][1] = y;
    poly[0][2][1] = poly[0][3][1] = y + 1.0;
    uint32_t n = 4, cur = 0;
    for (uint32_t k = 0; k < bb->edge_count && n; k++) {
        const double *e = bb->image[k];
        const double(*in)[2] = (const double(*)[2])poly[cur];
        bool cuts = false;
        for (uint32_t i = 0; i < n; i++) {
            d[i] = e[0] * in[i][0] + e[1] * in[i][1] + e[2];
            cuts |= !(d[i] >= 0);
        }
        if (!cuts)
            continue;
        double(*o)[2] = poly[cur ^ 1];
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = i + 1 < n ? i + 1 : 0;
            if (d[i] >= 0) {
                o[m][0] = in[i][0];
                o[m][1] = in[i][1];
                m++;
            }
            if ((d[i] >= 0) != (d[j] >= 0)) {
                double t = d[i] / (d[i] - d[j]);
                o[m][0] = in[i][0] + t * (in[j][0] - in[i][0]);
                o[m][1] = in[i][1] + t * (in[j][1] - in[i][1]);
                m++;
            }
        }
        n = m;
        cur ^= 1;
    }
    memcpy(out, poly[cur], n * sizeof poly[cur][0]);
    return n;
}

/* Do the candidates (pool indices) cover the region together? The union test above on the
 * region's bounding rectangle, from a point inside the region: the argument of
 * docs/occlusion.md ("Fusion") holds for any convex part of the screen, not only a whole
 * texel. */
static bool region_union(const rv_occlusion *occ, const uint32_t *cand, uint32_t m, const double (*r)[2], uint32_t n)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    texel_union u;
    u.ix = u.iy = 0;
    u.x0 = u.x1 = r[0][0];
    u.y0 = u.y1 = r[0][1];
    double cx = 0, cy = 0;
    for (uint32_t v = 0; v < n; v++) {
        u.x0 = dmin(u.x0, r[v][0]);
        u.x1 = dmax(u.x1, r[v][0]);
        u.y0 = dmin(u.y0, r[v][1]);
        u.y1 = dmax(u.y1, r[v][1]);
        cx += r[v][0];
        cy += r[v][1];
    }
    cx /= n;
    cy /= n;
    u.pieces = m < UNION_PIECES ? m : UNION_PIECES;
    memcpy(u.piece, cand, u.pieces * sizeof *cand);
    u.centre = 0;
    for (uint32_t q = 0; q < u.pieces; q++)
        if (centre_inside(fu, &fu->pieces[u.piece[q]], cx, cy))
            u.centre |= 1u << q;
    if (!u.centre || !gather_edges(occ, &u))
        return false;
    memset(u.known, 0, u.records * sizeof *u.known);
    shared_edges(&u);
    return prune(fu, &u, (1u << u.pieces) - 1) != 0;
}

/* ---- pixel centres ----------------------------------------------------------------------- */

/* Most pixel centres one texel's part is looked at by (a texel is 5 x 5 pixels for a 1280
 * pixel viewport at width 256, 15 x 15 for 3840); past it the look is skipped, which is
 * never wrong. */
#define MAX_SAMPLES 289

/* The box's largest nearness anywhere in the region (n vertices): its nearest point, or
 * each of its front faces' planes at the region's worst vertex, whichever is least. */
static double box_upper(const rvi_occ_box_bound *bb, float nearness, const double (*r)[2], uint32_t n)
{
    double u = nearness;
    for (uint32_t k = 0; k < bb->plane_count; k++) {
        double m = -INFINITY;
        for (uint32_t v = 0; v < n; v++)
            m = dmax(m, upper_at(bb->plane[k], r[v][0], r[v][1]));
        u = dmin(u, m);
    }
    return u;
}

/* Is the region (4 vertices, a rectangle of texel units) shown nothing of the box: inside
 * the texel (x, y) and strictly behind its own depth, or held by one piece strictly nearer
 * than the box over it (the covering one, or one whose band reaches the texel)? */
static bool region_hidden(const rv_occlusion *occ, const rvi_occ_box_bound *bb, float nearness, int32_t x,
                          int32_t y, const rvi_occ_piece *owner, const double (*r)[2])
{
    const rvi_occ_fusion *fu = &occ->fusion;
    size_t t = (size_t)y * occ->width + (size_t)x;
    bool in_texel = r[0][0] >= x && r[2][0] <= x + 1.0 && r[0][1] >= y && r[2][1] <= y + 1.0;
    if (in_texel) {
        double u = box_upper(bb, nearness, r, 4), value = occ->texels[t];
        if (value > u + 1e-12 * (fabs(value) + fabs(u)))
            return true;
    }
    if (owner && (in_texel || region_inside(fu, owner, r, 4)) && region_nearer(owner, bb, nearness, r, 4))
        return true;
    uint32_t looked = 0;
    for (uint32_t k = fu->head[t]; k && looked < MAX_PARTLY_LOOKS; k = fu->note_next[k - 1], looked++) {
        const rvi_occ_piece *q = &fu->pieces[fu->note_piece[k - 1]];
        if (q->top > bb->far && region_inside(fu, q, r, 4) && region_nearer(q, bb, nearness, r, 4))
            return true;
    }
    return false;
}

/* The square of half sides mx, my around (cx, cy), corners in order around it. */
static void square_at(double cx, double cy, double mx, double my, double sq[4][2])
{
    const double c[4][2] = { { cx - mx, cy - my }, { cx + mx, cy - my }, { cx + mx, cy + my }, { cx - mx, cy + my } };
    memcpy(sq, c, sizeof c);
}

/* Texel (x, y) failed the box on every look at its part (n vertices): true when the box is
 * hidden at each of the viewport's pixel centres the part may show it at (occ->sample_step,
 * rv_view.cull_unsampled). A centre stands for the square RV_UNSAMPLED_MARGIN_PX around it
 * each way (where a rasteriser's snapping may move the edges across it). Each square that
 * meets the part's rectangle and the box's image must be shown nothing of the box
 * (region_hidden); the rectangle around all of them is tried first, as one region. */
static bool samples_hidden(const rv_occlusion *occ, const rvi_occ_box_bound *bb, float nearness, int32_t x,
                           int32_t y, const rvi_occ_piece *owner, const double (*part)[2], uint32_t n)
{
    double sx = occ->sample_step[0], sy = occ->sample_step[1];
    if (!(sx > 0 && sy > 0))
        return false;
    double mx = RV_UNSAMPLED_MARGIN_PX * sx, my = RV_UNSAMPLED_MARGIN_PX * sy;
    double lo[2] = { INFINITY, INFINITY }, hi[2] = { -INFINITY, -INFINITY };
    for (uint32_t v = 0; v < n; v++)
        for (int a = 0; a < 2; a++) {
            lo[a] = dmin(lo[a], part[v][a]);
            hi[a] = dmax(hi[a], part[v][a]);
        }
    /* Centres (i + 0.5) s whose squares can reach the part's rectangle, the range widened
     * by far more than the rounding of the divisions: each is checked exactly below. */
    double i0 = ceil((lo[0] - mx) / sx - 0.5 - 1e-6), i1 = floor((hi[0] + mx) / sx - 0.5 + 1e-6);
    double j0 = ceil((lo[1] - my) / sy - 0.5 - 1e-6), j1 = floor((hi[1] + my) / sy - 0.5 + 1e-6);
    if (!((i1 - i0 + 1) * (j1 - j0 + 1) <= MAX_SAMPLES))
        return false;
    double centre[MAX_SAMPLES][2], all[2][2] = { { INFINITY, INFINITY }, { -INFINITY, -INFINITY } };
    uint32_t m = 0;
    for (double j = j0; j <= j1; j++)
        for (double i = i0; i <= i1; i++) {
            double cx = (i + 0.5) * sx, cy = (j + 0.5) * sy;
            if (cx + mx < lo[0] || cx - mx > hi[0] || cy + my < lo[1] || cy - my > hi[1])
                continue; /* its square misses the part */
            double sq[4][2];
            square_at(cx, cy, mx, my, sq);
            bool outside = false;
            for (uint32_t k = 0; k < bb->edge_count && !outside; k++) {
                const double *e = bb->image[k];
                outside = true;
                for (int v = 0; v < 4 && outside; v++)
                    outside = e[0] * sq[v][0] + e[1] * sq[v][1] + e[2] < 0;
            }
            if (outside)
                continue; /* the box's image does not reach it */
            centre[m][0] = cx;
            centre[m++][1] = cy;
            all[0][0] = dmin(all[0][0], cx - mx);
            all[0][1] = dmin(all[0][1], cy - my);
            all[1][0] = dmax(all[1][0], cx + mx);
            all[1][1] = dmax(all[1][1], cy + my);
        }
    if (m == 0)
        return true; /* no centre can show the box through this texel */
    const double rect[4][2] = { { all[0][0], all[0][1] }, { all[1][0], all[0][1] }, { all[1][0], all[1][1] },
                                { all[0][0], all[1][1] } };
    if (m > 1 && region_hidden(occ, bb, nearness, x, y, owner, rect))
        return true;
    for (uint32_t c = 0; c < m; c++) {
        double sq[4][2];
        square_at(centre[c][0], centre[c][1], mx, my, sq);
        if (!region_hidden(occ, bb, nearness, x, y, owner, (const double(*)[2])sq))
            return false;
    }
    return true;
}

bool rvi_occ_texel_hides_box(const rv_occlusion *occ, rvi_occ_box_bound *bb, float nearness, int32_t x, int32_t y,
                             float bound)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    if (!occ->desc.fine_tests || !fu->owner || !occ->view.perspective)
        return false; /* perspective only: see rvi_occ_texel_hides_box in occlusion.h */
    size_t t = (size_t)y * occ->width + (size_t)x;
    const rvi_occ_piece *o = rvi_occ_owner(fu, t);
    if (!o && !fu->head[t])
        return false; /* nothing drawn there could be nearer than its depth says */
    /* A covering piece nearer over the image's whole rectangle is nearer over every part
     * of it: one look serves every texel the piece covers (a wall hiding a box whole). */
    if (o && !(o->top > bb->far))
        o = NULL; /* nowhere nearer than the box's farthest point */
    const rvi_occ_piece *owner = o;
    if (o && bb->edge_count) {
        if (o != bb->tried) {
            bb->tried = o;
            bb->tried_nearer = region_nearer(o, bb, nearness, (const double(*)[2])bb->rect, 4);
        }
        if (bb->tried_nearer)
            return true;
    }
    double r[16][2];
    uint32_t n = image_in_texel(bb, x, y, r);
    if (!n)
        return true; /* no part of the box is seen through this texel */
    const double(*rc)[2] = (const double(*)[2])r;
    if (o && region_nearer(o, bb, nearness, rc, n))
        return true;
    uint32_t looked = 0, m = 0, cand[UNION_PIECES];
    for (uint32_t k = fu->head[t]; k && looked < MAX_PARTLY_LOOKS; k = fu->note_next[k - 1], looked++) {
        uint32_t i = fu->note_piece[k - 1];
        const rvi_occ_piece *q = &fu->pieces[i];
        if (!(q->top > bb->far) ||
            !(rvi_occ_piece_depth(q, x, y) > bound || region_nearer(q, bb, nearness, rc, n)))
            continue;
        if (region_inside(fu, q, rc, n))
            return true;
        if (m < UNION_PIECES)
            cand[m++] = i;
    }
    if (m >= 2 && region_union(occ, cand, m, rc, n))
        return true;
    return samples_hidden(occ, bb, nearness, x, y, owner, rc, n);
}
