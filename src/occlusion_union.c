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
 * The same search serves the object tests on any convex region of the screen
 * (rvi_occ_region_union, used by occlusion_texel.c). */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Pieces considered per texel (the nearest that could raise it), and edge stretches (a
 * mesh vertex where eight triangles meet has sixteen); a texel with more records or
 * stretches, where many outlines converge (far away, where fusion rarely covers anything),
 * is left as it is. */
#define UNION_PIECES RVI_OCC_UNION_PIECES
#define UNION_RECORDS 16
/* Pieces tried when not every edge is shared. */
#define UNION_OVERLAP_PIECES 4

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
        const double *in = fu->inward[q->first_edge + k];
        double m = RVI_OCC_FUSE_MARGIN + g->slack;
        double v0 = in[0] * e->p0[0] + in[1] * e->p0[1] + in[2] - m;
        double v1 = in[0] * e->p1[0] + in[1] * e->p1[1] + in[2] - m;
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
    const double *in = fu->inward[q->first_edge];
    for (uint32_t k = 0; k < q->edge_count; k++, in += 3)
        if (!(in[0] * cx + in[1] * cy + in[2] >= 0))
            return false;
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
            double m = e->margin, t0, t1, x0 = u->x0 - m, x1 = u->x1 + m, y0 = u->y0 - m,
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
            double m = 0.5 + e->margin;
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

/* ---- a region, for the object tests ---------------------------------------------------------- */

/* The union test above on the region's bounding rectangle, from a point inside the region:
 * the argument of docs/occlusion.md ("Fusion") holds for any convex part of the screen, not
 * only a whole texel. */
bool rvi_occ_region_union(const rv_occlusion *occ, const uint32_t *cand, uint32_t m, const double (*r)[2], uint32_t n)
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
