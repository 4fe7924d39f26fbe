/* Fusion (docs/occlusion.md, "Fusion"): a texel partly covered by several pieces is
 * covered when their union covers all of it, and then holds the smallest of their
 * nearness there.
 *
 * Each drawn piece records its outline edges at every texel they pass near (and whose
 * depth the piece could still raise). A texel with records from two or more pieces is
 * tested with the pieces sorted by their nearness there, nearest first: the shortest prefix
 * whose union covers the texel gives the value (far pieces behind a seam never drag it
 * down). The union test is exact bookkeeping of boundaries, never sampling:
 *
 *   The boundary of a union of pieces lies on their edges. An edge's stretch inside the
 *   texel (grown by a margin) is cancelled where another piece of the prefix covers its
 *   other side: an edge with the bit-identical line and the opposite side (a shared edge:
 *   fusion computes each line from the same inputs the same way for every piece that has
 *   it), or the inside of another piece shrunk by a margin (an overlap). If every edge
 *   stretch near the texel is cancelled, no boundary of the union crosses it, so the texel
 *   is wholly inside or wholly outside the union; it is inside when its centre is inside
 *   one of the pieces. A gap of any width leaves an edge that nothing cancels, so a texel
 *   over a gap is never covered.
 *
 * Pools have fixed sizes (rvi_occ_fusion); when one fills, pending texels are resolved and
 * the pools emptied, which only forgoes fusion between pieces drawn before and after. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Edges count as near a texel within this distance (texel units) beyond their line's own
 * error bound, and overlaps cancel an edge only this far inside the other piece. */
#define FUSE_MARGIN 1e-7
/* Pieces and edge records one texel test takes (more: the texel is left as it is). */
#define TEXEL_PIECES 16
#define TEXEL_RECORDS 48
/* Pool sizes: pieces and edges per flush; records per texel of the buffer. */
#define POOL_PIECES 1024u
#define POOL_EDGES 8192u
#define MIN_RECORDS 4096u

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

rv_result rvi_occ_fusion_reserve(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels)
{
    if (texels > fu->head_capacity) {
        uint32_t *h = rvi_calloc(heap, texels, sizeof *h);
        if (!h)
            return RV_ERR_OUT_OF_MEMORY;
        rvi_free(heap, fu->head, fu->head_capacity * sizeof *fu->head);
        fu->head = h;
        fu->head_capacity = texels;
    }
    size_t want = texels > MIN_RECORDS ? texels : MIN_RECORDS;
    if (want > fu->record_capacity) {
        rvi_occ_record *r = rvi_alloc(heap, want * sizeof *r);
        uint32_t *t = rvi_alloc(heap, want * sizeof *t), *d = rvi_alloc(heap, want * sizeof *d);
        if (!r || !t || !d) {
            rvi_free(heap, r, r ? want * sizeof *r : 0);
            rvi_free(heap, t, t ? want * sizeof *t : 0);
            rvi_free(heap, d, d ? want * sizeof *d : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        rvi_free(heap, fu->records, (size_t)fu->record_capacity * sizeof *fu->records);
        rvi_free(heap, fu->touched, (size_t)fu->record_capacity * sizeof *fu->touched);
        rvi_free(heap, fu->dirty, (size_t)fu->record_capacity * sizeof *fu->dirty);
        fu->records = r;
        fu->touched = t;
        fu->dirty = d;
        fu->record_capacity = (uint32_t)want;
    }
    if (!fu->pieces) {
        rvi_occ_piece *p = rvi_alloc(heap, POOL_PIECES * sizeof *p);
        rvi_occ_edge *e = rvi_alloc(heap, POOL_EDGES * sizeof *e);
        if (!p || !e) {
            rvi_free(heap, p, p ? POOL_PIECES * sizeof *p : 0);
            rvi_free(heap, e, e ? POOL_EDGES * sizeof *e : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        fu->pieces = p;
        fu->piece_capacity = POOL_PIECES;
        fu->edges = e;
        fu->edge_capacity = POOL_EDGES;
    }
    return RV_OK;
}

void rvi_occ_fusion_free(rvi_heap *heap, rvi_occ_fusion *fu)
{
    rvi_free(heap, fu->head, fu->head_capacity * sizeof *fu->head);
    rvi_free(heap, fu->records, (size_t)fu->record_capacity * sizeof *fu->records);
    rvi_free(heap, fu->touched, (size_t)fu->record_capacity * sizeof *fu->touched);
    rvi_free(heap, fu->dirty, (size_t)fu->record_capacity * sizeof *fu->dirty);
    rvi_free(heap, fu->pieces, (size_t)fu->piece_capacity * sizeof *fu->pieces);
    rvi_free(heap, fu->edges, (size_t)fu->edge_capacity * sizeof *fu->edges);
    memset(fu, 0, sizeof *fu);
}

/* ---- recording ---------------------------------------------------------------------------- */

/* How far from its line an edge may pass and still count as near a texel. */
static double edge_margin(const rvi_occ_edge *e)
{
    double mag = fabs(e->p0[0]) + fabs(e->p0[1]) + fabs(e->p1[0]) + fabs(e->p1[1]);
    return FUSE_MARGIN + e->slack + 8 * DBL_EPSILON * mag;
}

/* Rows of the buffer the edge passes near, and an upper bound on the texels its walk
 * records. */
static uint32_t walk_rows(const rvi_occ_edge *e, double m, int32_t height, int32_t *r0, int32_t *r1)
{
    double ylo = dmin(e->p0[1], e->p1[1]) - m, yhi = dmax(e->p0[1], e->p1[1]) + m;
    double lo = dmax(ceil(ylo) - 1, 0), hi = dmin(floor(yhi), height - 1);
    if (!(lo <= hi))
        return 0;
    *r0 = (int32_t)lo;
    *r1 = (int32_t)hi;
    return (uint32_t)(*r1 - *r0 + 1);
}

static uint32_t walk_bound(const rvi_occ_edge *e, int32_t width, int32_t height)
{
    double m = edge_margin(e);
    int32_t r0, r1;
    uint32_t rows = walk_rows(e, m, height, &r0, &r1);
    if (!rows)
        return 0;
    double dx = fabs(e->p1[0] - e->p0[0]), dy = fabs(e->p1[1] - e->p0[1]);
    double per_row = dmin(width, (dy > 1e-300 ? ceil(dx / dy) : width) + 3 + ceil(2 * m));
    return (uint32_t)dmin((double)rows * per_row, (double)rows * width);
}

static void record(rv_occlusion *occ, uint32_t t, uint32_t piece, uint32_t edge)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t h = fu->head[t], r = fu->record_count++;
    fu->records[r].next = h & ~RVI_OCC_DIRTY;
    fu->records[r].piece = piece;
    fu->records[r].edge = edge;
    if (!h) {
        fu->touched[fu->touched_count++] = t;
    } else if (!(h & RVI_OCC_DIRTY) && fu->records[(h & ~RVI_OCC_DIRTY) - 1].piece != piece) {
        h |= RVI_OCC_DIRTY;
        fu->dirty[fu->dirty_count++] = t;
    }
    fu->head[t] = (r + 1) | (h & RVI_OCC_DIRTY);
}

/* Records the edge at every texel (ix, iy) whose square, grown by the edge's margin, the
 * segment meets, unless the texel already holds something nearer than the piece's nearest
 * point (the piece could not raise it, whatever it fuses with). */
static void walk_edge(rv_occlusion *occ, uint32_t piece, uint32_t edge, float top)
{
    const rvi_occ_edge *e = &occ->fusion.edges[edge];
    int32_t W = (int32_t)occ->width, H = (int32_t)occ->height;
    double m = edge_margin(e);
    int32_t r0, r1;
    if (!walk_rows(e, m, H, &r0, &r1))
        return;
    double x0 = e->p0[0], y0 = e->p0[1], x1 = e->p1[0], y1 = e->p1[1];
    double ylo = dmin(y0, y1), yhi = dmax(y0, y1), xlo = dmin(x0, x1), xhi = dmax(x0, x1);
    double slope = y1 != y0 ? (x1 - x0) / (y1 - y0) : 0;
    const float *texels = occ->texels;
    for (int32_t iy = r0; iy <= r1; iy++) {
        double ya = dmax(iy - m, ylo), yb = dmin(iy + 1 + m, yhi), xa, xb;
        if (y1 == y0 || ya > yb) {
            xa = xlo;
            xb = xhi;
        } else {
            double u = x0 + (ya - y0) * slope, v = x0 + (yb - y0) * slope;
            xa = dmax(dmin(u, v), xlo);
            xb = dmin(dmax(u, v), xhi);
        }
        double c0 = dmax(ceil(xa - m) - 1, 0), c1 = dmin(floor(xb + m), W - 1);
        for (int32_t ix = (int32_t)c0; ix <= (int32_t)c1; ix++) {
            uint32_t t = (uint32_t)iy * (uint32_t)W + (uint32_t)ix;
            if (!(texels[t] > top))
                record(occ, t, piece, edge);
        }
    }
}

static void flush(rv_occlusion *occ)
{
    rvi_occ_fusion *fu = &occ->fusion;
    for (uint32_t i = 0; i < fu->touched_count; i++)
        fu->head[fu->touched[i]] = 0;
    fu->touched_count = fu->record_count = fu->dirty_count = 0;
    fu->piece_count = fu->edge_count = 0;
}

void rvi_occ_fusion_add(rv_occlusion *occ, const rvi_occ_draft *d)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t ne = d->piece.edge_count, bound = 0;
    for (uint32_t k = 0; k < ne; k++)
        bound += walk_bound(&d->edge[k], (int32_t)occ->width, (int32_t)occ->height);
    if (!bound || bound > fu->record_capacity || ne > fu->edge_capacity)
        return; /* touches no texel, or too large to record: drawn without fusion */
    if (fu->piece_count == fu->piece_capacity || fu->edge_count + ne > fu->edge_capacity ||
        fu->record_count + bound > fu->record_capacity) {
        rvi_occ_fusion_resolve(occ);
        flush(occ);
    }
    uint32_t p = fu->piece_count++, first = fu->edge_count;
    fu->pieces[p] = d->piece;
    fu->pieces[p].first_edge = first;
    memcpy(fu->edges + first, d->edge, ne * sizeof *d->edge);
    fu->edge_count += ne;
    for (uint32_t k = 0; k < ne; k++)
        walk_edge(occ, p, first + k, d->piece.top);
}

/* ---- the union test ------------------------------------------------------------------------ */

typedef struct texel_set {
    int32_t ix, iy;
    uint32_t piece_count, record_count;
    uint32_t piece[TEXEL_PIECES];      /* pool index, nearest first */
    float value[TEXEL_PIECES];
    uint32_t rec_piece[TEXEL_RECORDS]; /* rank of the record's piece in piece[] */
    uint32_t rec_edge[TEXEL_RECORDS];
} texel_set;

typedef struct span {
    double lo, hi;
} span;

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

/* The parameter range of segment p0 -> p1 strictly inside a piece shrunk by each edge's
 * slack and the fusion margin (Cyrus & Beck); false when none. */
static bool inside_piece(const rvi_occ_fusion *fu, const rvi_occ_piece *q, const double p0[2], const double p1[2],
                         double *t0, double *t1)
{
    double a = 0, b = 1;
    for (uint32_t k = 0; k < q->edge_count && a <= b; k++) {
        const rvi_occ_edge *g = &fu->edges[q->first_edge + k];
        double m = FUSE_MARGIN + g->slack;
        double v0 = g->side * (g->line[0] * p0[0] + g->line[1] * p0[1] + g->line[2]) - m;
        double v1 = g->side * (g->line[0] * p1[0] + g->line[1] * p1[1] + g->line[2]) - m;
        if (v0 < 0 && v1 < 0)
            return false;
        if (v0 >= 0 && v1 >= 0)
            continue;
        double t = v0 / (v0 - v1);
        if (v0 < 0)
            a = dmax(a, t);
        else
            b = dmin(b, t);
    }
    *t0 = a;
    *t1 = b;
    return a < b;
}

static double s_at(const rvi_occ_edge *e, const double p0[2], const double p1[2], double t)
{
    double x = p0[0] + t * (p1[0] - p0[0]), y = p0[1] + t * (p1[1] - p0[1]);
    return e->line[1] * x - e->line[0] * y;
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

/* Is record r's edge stretch near the texel cancelled by the pieces in mask (bit q: the
 * q-th nearest piece)? */
static bool edge_cancelled(const rvi_occ_fusion *fu, const texel_set *ts, uint32_t r, uint32_t mask)
{
    const rvi_occ_edge *e = &fu->edges[ts->rec_edge[r]];
    double m = edge_margin(e), t0, t1;
    if (!clip_segment(e->p0, e->p1, ts->ix - m, ts->ix + 1 + m, ts->iy - m, ts->iy + 1 + m, &t0, &t1))
        return true; /* does not pass near the texel after all */
    span s[TEXEL_RECORDS + TEXEL_PIECES];
    uint32_t n = 0;
    /* Shared edges: the same line, the other side, in a piece of the prefix. */
    for (uint32_t j = 0; j < ts->record_count; j++) {
        if (!(mask >> ts->rec_piece[j] & 1) || ts->rec_piece[j] == ts->rec_piece[r])
            continue;
        const rvi_occ_edge *f = &fu->edges[ts->rec_edge[j]];
        if (f->side == e->side || f->line[0] != e->line[0] || f->line[1] != e->line[1] || f->line[2] != e->line[2])
            continue;
        if (f->s0 <= e->s0 && f->s1 >= e->s1)
            return true; /* the whole edge is shared */
        s[n].lo = f->s0;
        s[n].hi = f->s1;
        n++;
    }
    double sa = s_at(e, e->p0, e->p1, t0), sb = s_at(e, e->p0, e->p1, t1);
    double lo = dmin(sa, sb), hi = dmax(sa, sb);
    if (n && spans_cover(s, n, lo, hi))
        return true;
    /* Overlaps: the stretch inside another piece of the prefix. */
    for (uint32_t q = 0; q < ts->piece_count; q++) {
        if (!(mask >> q & 1) || q == ts->rec_piece[r])
            continue;
        double u0, u1;
        if (inside_piece(fu, &fu->pieces[ts->piece[q]], e->p0, e->p1, &u0, &u1)) {
            double a = s_at(e, e->p0, e->p1, u0), b = s_at(e, e->p0, e->p1, u1);
            s[n].lo = dmin(a, b);
            s[n].hi = dmax(a, b);
            n++;
        }
    }
    return n && spans_cover(s, n, lo, hi);
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

/* Do the pieces in mask cover all of the texel? When not because an edge stays, *culprit
 * receives its piece (else the piece count). */
static bool set_covers(const rvi_occ_fusion *fu, const texel_set *ts, uint32_t mask, uint32_t *culprit)
{
    *culprit = ts->piece_count;
    for (uint32_t r = 0; r < ts->record_count; r++)
        if ((mask >> ts->rec_piece[r] & 1) && !edge_cancelled(fu, ts, r, mask)) {
            *culprit = ts->rec_piece[r];
            return false;
        }
    for (uint32_t q = 0; q < ts->piece_count; q++)
        if ((mask >> q & 1) && centre_inside(fu, &fu->pieces[ts->piece[q]], ts->ix + 0.5, ts->iy + 0.5))
            return true;
    return false;
}

/* Gathers the texel's records and pieces, pieces sorted by their nearness there (nearest
 * first). False when there are more than one test takes. */
static bool gather(const rv_occlusion *occ, uint32_t t, texel_set *ts)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    ts->ix = (int32_t)(t % occ->width);
    ts->iy = (int32_t)(t / occ->width);
    ts->piece_count = ts->record_count = 0;
    uint32_t raw[TEXEL_RECORDS];
    for (uint32_t h = fu->head[t] & ~RVI_OCC_DIRTY; h; h = fu->records[h - 1].next) {
        const rvi_occ_record *rec = &fu->records[h - 1];
        if (ts->record_count == TEXEL_RECORDS)
            return false;
        uint32_t q = 0;
        while (q < ts->piece_count && ts->piece[q] != rec->piece)
            q++;
        if (q == ts->piece_count) {
            if (q == TEXEL_PIECES)
                return false;
            ts->piece[q] = rec->piece;
            ts->value[q] = rvi_occ_piece_depth(&fu->pieces[rec->piece], ts->ix, ts->iy);
            ts->piece_count++;
        }
        raw[ts->record_count] = q;
        ts->rec_edge[ts->record_count++] = rec->edge;
    }
    /* Sort the pieces by value, descending (ties by pool order), and renumber the records. */
    uint32_t rank[TEXEL_PIECES], order[TEXEL_PIECES];
    for (uint32_t i = 0; i < ts->piece_count; i++) {
        uint32_t j = i;
        for (; j > 0 && ts->value[order[j - 1]] < ts->value[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    uint32_t piece[TEXEL_PIECES];
    float value[TEXEL_PIECES];
    for (uint32_t i = 0; i < ts->piece_count; i++) {
        rank[order[i]] = i;
        piece[i] = ts->piece[order[i]];
        value[i] = ts->value[order[i]];
    }
    memcpy(ts->piece, piece, ts->piece_count * sizeof *piece);
    memcpy(ts->value, value, ts->piece_count * sizeof *value);
    for (uint32_t r = 0; r < ts->record_count; r++)
        ts->rec_piece[r] = rank[raw[r]];
    return true;
}

static void resolve_texel(rv_occlusion *occ, uint32_t t)
{
    texel_set ts;
    if (!gather(occ, t, &ts))
        return;
    float now = occ->texels[t];
    uint32_t worth = 0; /* the longest prefix whose value would raise the texel */
    while (worth < ts.piece_count && ts.value[worth] > now)
        worth++;
    if (worth < 2)
        return; /* one piece alone never covers a texel its edge passes */
    occ->stats.fusion_tests++;
    const rvi_occ_fusion *fu = &occ->fusion;
    /* Any set of pieces whose union covers the texel gives the smallest of their values:
     * try the k nearest for k = 2, 3, ... (the first that passes gives the nearest value),
     * and when a set fails because one piece's edge stays, try it without that piece (the
     * test is conservative, not monotone: an extra piece can bring an edge that none of the
     * others cancels alone, along a seam between two of them). */
    for (uint32_t k = 2; k <= worth; k++) {
        uint32_t mask = (1u << k) - 1, culprit;
        while (mask & (mask - 1)) { /* two or more pieces */
            if (set_covers(fu, &ts, mask, &culprit)) {
                uint32_t last = rvi_bit_length(mask) - 1;
                occ->texels[t] = ts.value[last];
                occ->stats.fused_texels++;
                return;
            }
            if (culprit >= ts.piece_count)
                break;
            mask &= ~(1u << culprit);
        }
    }
}

void rvi_occ_fusion_resolve(rv_occlusion *occ)
{
    rvi_occ_fusion *fu = &occ->fusion;
    for (uint32_t i = 0; i < fu->dirty_count; i++) {
        uint32_t t = fu->dirty[i];
        fu->head[t] &= ~RVI_OCC_DIRTY;
        resolve_texel(occ, t);
    }
    fu->dirty_count = 0;
}

void rvi_occ_fusion_finish(rv_occlusion *occ)
{
    rvi_occ_fusion_resolve(occ);
    flush(occ);
}
