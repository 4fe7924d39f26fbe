/* Fusion (docs/occlusion.md, "Fusion"): a texel partly covered by several pieces is
 * covered when their union covers all of it, and then holds the smallest of their
 * nearness there.
 *
 * Each drawn piece notes its band: the texels that may meet it but do not lie wholly
 * inside it (those its inner raster already wrote), row by row from the outline's lines,
 * leaving out texels already as near as the piece's own bound there (whatever it fused
 * with there would be no nearer). A note goes on its texel's list; a texel that already had
 * one becomes dirty for the round. Every few pieces each dirty texel is tested
 * (occlusion_union.c) with all the pieces on its list and raised when some of them cover
 * it together. Nothing is sorted: a note costs a few stores, a round only its dirty
 * texels.
 *
 * Before its band is noted, each of the piece's edges is looked up by its line among the
 * edges drawn since the flush; along each shared edge (the same line, the other side) the
 * seam is drawn at once (draw_seam), so most seam texels are raised before any test. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* First pool sizes: pieces and edges; notes per texel of the buffer (at least
 * MIN_NOTES). */
#define POOL_PIECES 1024u
#define POOL_EDGES 8192u
#define MIN_NOTES 4096u
/* Caps on growing the pools (the pieces are kept for the tests): beyond them the pools are
 * emptied and refilled, as before growing. */
#define MAX_POOL_PIECES (1u << 16) /* a pool index takes 16 bits of an owner */
#define MAX_POOL_EDGES (1u << 19)
#define MAX_NOTES_PER_TEXEL 32u
/* A texel on more lists than this is not tested (where that many bands meet, nothing
 * would cover it). */
#define MAX_TEXEL_NOTES 64u
/* Buckets of the shared-edge table (a power of two), and the edges looked at per lookup
 * (a dense grid mesh puts hundreds of edges on one line; missing a twin only loses a
 * seam). */
#define LINE_BUCKETS 4096u
#define LINE_LOOKS 32u
/* A texel lies wholly inside an edge's half-plane only this far inside (as the inner
 * raster's shrink, occlusion_raster.c), beyond the line's own error bound. */
#define SHRINK 1e-4

/* Words of the raised bits of a buffer of texels texels. */
static size_t raised_words(size_t texels) { return (texels + 63) / 64; }

static void free_notes(rvi_heap *heap, rvi_occ_fusion *fu)
{
    size_t t = fu->texels, n = fu->note_capacity;
    rvi_free(heap, fu->head, t * sizeof *fu->head);
    rvi_free(heap, fu->dirty, t * sizeof *fu->dirty);
    rvi_free(heap, fu->touched, t * sizeof *fu->touched);
    rvi_free(heap, fu->raised, raised_words(t) * sizeof *fu->raised);
    rvi_free(heap, fu->owner, t * sizeof *fu->owner);
    rvi_free(heap, fu->note_piece, n * sizeof *fu->note_piece);
    rvi_free(heap, fu->note_next, n * sizeof *fu->note_next);
    fu->head = fu->dirty = fu->touched = fu->note_piece = fu->note_next = fu->owner = NULL;
    fu->raised = NULL;
    fu->texels = fu->note_capacity = 0;
}

/* Lists for a buffer of texels texels: all or nothing. */
static rv_result reserve_notes(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels)
{
    size_t notes = texels > MIN_NOTES ? texels : MIN_NOTES;
    if (notes >= UINT32_MAX)
        return RV_ERR_CAPACITY;
    if (texels <= fu->texels)
        return RV_OK;
    rvi_occ_fusion grown;
    memset(&grown, 0, sizeof grown);
    grown.head = rvi_alloc(heap, texels * sizeof *grown.head);
    grown.dirty = rvi_alloc(heap, texels * sizeof *grown.dirty);
    grown.touched = rvi_alloc(heap, texels * sizeof *grown.touched);
    grown.raised = rvi_alloc(heap, raised_words(texels) * sizeof *grown.raised);
    grown.owner = rvi_alloc(heap, texels * sizeof *grown.owner);
    grown.note_piece = rvi_alloc(heap, notes * sizeof *grown.note_piece);
    grown.note_next = rvi_alloc(heap, notes * sizeof *grown.note_next);
    grown.texels = (uint32_t)texels;
    grown.note_capacity = (uint32_t)notes;
    if (!grown.head || !grown.dirty || !grown.touched || !grown.raised || !grown.owner ||
        !grown.note_piece || !grown.note_next) {
        /* free_notes frees what was made (rvi_free takes NULL) */
        free_notes(heap, &grown);
        return RV_ERR_OUT_OF_MEMORY;
    }
    free_notes(heap, fu);
    memset(grown.head, 0, texels * sizeof *grown.head);
    memset(grown.raised, 0, raised_words(texels) * sizeof *grown.raised);
    memset(grown.owner, 0, texels * sizeof *grown.owner);
    fu->head = grown.head;
    fu->dirty = grown.dirty;
    fu->touched = grown.touched;
    fu->raised = grown.raised;
    fu->owner = grown.owner;
    fu->owner_gen = 1;
    fu->note_piece = grown.note_piece;
    fu->note_next = grown.note_next;
    fu->texels = grown.texels;
    fu->note_capacity = grown.note_capacity;
    return RV_OK;
}

static uint32_t line_bucket(const double line[3])
{
    uint64_t h = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 3; i++) {
        uint64_t b;
        memcpy(&b, &line[i], sizeof b);
        h = (h ^ b) * 0xff51afd7ed558ccdu;
        h ^= h >> 33;
    }
    return (uint32_t)h & (LINE_BUCKETS - 1);
}

static void flush(rvi_occ_fusion *fu)
{
    for (uint32_t i = 0; i < fu->touched_count; i++)
        fu->head[fu->touched[i]] = 0;
    if (fu->line_head)
        for (uint32_t i = 0; i < fu->edge_count; i++)
            fu->line_head[line_bucket(fu->edges[i].line)] = 0;
    fu->touched_count = fu->note_count = fu->dirty_count = fu->round_first = 0;
    if (fu->piece_count && ++fu->owner_gen > 0xFFFFu) { /* its pieces are gone */
        memset(fu->owner, 0, (size_t)fu->texels * sizeof *fu->owner);
        fu->owner_gen = 1;
    }
    fu->piece_count = fu->edge_count = 0;
}

rv_result rvi_occ_fusion_reserve(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels)
{
    /* The last frame's pools are emptied while its lists still fit them (a larger buffer
     * replaces the lists below). */
    if (fu->head)
        flush(fu);
    RVI_TRY(reserve_notes(heap, fu, texels));
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
    if (!fu->line_head) {
        uint32_t *h = rvi_alloc(heap, LINE_BUCKETS * sizeof *h);
        uint32_t *nx = rvi_alloc(heap, POOL_EDGES * sizeof *nx);
        uint32_t *ow = rvi_alloc(heap, POOL_EDGES * sizeof *ow);
        double(*in)[3] = rvi_alloc(heap, POOL_EDGES * sizeof *in);
        if (!h || !nx || !ow || !in) {
            rvi_free(heap, h, h ? LINE_BUCKETS * sizeof *h : 0);
            rvi_free(heap, nx, nx ? POOL_EDGES * sizeof *nx : 0);
            rvi_free(heap, ow, ow ? POOL_EDGES * sizeof *ow : 0);
            rvi_free(heap, in, in ? POOL_EDGES * sizeof *in : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        memset(h, 0, LINE_BUCKETS * sizeof *h);
        fu->line_head = h;
        fu->edge_next = nx;
        fu->edge_owner = ow;
        fu->inward = in;
    }
    if (fu->raised)
        memset(fu->raised, 0, raised_words(fu->texels) * sizeof *fu->raised);
    return RV_OK;
}

void rvi_occ_fusion_free(rvi_heap *heap, rvi_occ_fusion *fu)
{
    free_notes(heap, fu);
    rvi_free(heap, fu->pieces, (size_t)fu->piece_capacity * sizeof *fu->pieces);
    rvi_free(heap, fu->edges, (size_t)fu->edge_capacity * sizeof *fu->edges);
    rvi_free(heap, fu->line_head, fu->line_head ? LINE_BUCKETS * sizeof *fu->line_head : 0);
    rvi_free(heap, fu->edge_next, fu->edge_next ? (size_t)fu->edge_capacity * sizeof *fu->edge_next : 0);
    rvi_free(heap, fu->edge_owner, fu->edge_owner ? (size_t)fu->edge_capacity * sizeof *fu->edge_owner : 0);
    rvi_free(heap, fu->inward, fu->inward ? (size_t)fu->edge_capacity * sizeof *fu->inward : 0);
    memset(fu, 0, sizeof *fu);
}

/* ---- resolving ------------------------------------------------------------------------------ */

/* Texel t was raised by fusion: counted once a frame however many times it is raised. */
static void count_raised(rv_occlusion *occ, uint32_t t)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint64_t bit = (uint64_t)1 << (t & 63);
    if (!(fu->raised[t >> 6] & bit)) {
        fu->raised[t >> 6] |= bit;
        occ->stats.fused_texels++;
    }
}

static void resolve_texel(rv_occlusion *occ, uint32_t t)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    uint32_t pieces[MAX_TEXEL_NOTES], n = 0;
    for (uint32_t k = fu->head[t]; k; k = fu->note_next[k - 1]) {
        if (n == MAX_TEXEL_NOTES)
            return; /* where that many bands meet, nothing is tested */
        pieces[n++] = fu->note_piece[k - 1];
    }
    float value;
    if (!rvi_occ_union_value(occ, t, pieces, n, &value))
        return;
    occ->texels[t] = value;
    count_raised(occ, t);
}

void rvi_occ_fusion_resolve(rv_occlusion *occ)
{
    rvi_occ_fusion *fu = &occ->fusion;
    for (uint32_t i = 0; i < fu->dirty_count; i++)
        resolve_texel(occ, fu->dirty[i]);
    fu->dirty_count = 0;
    fu->round_first = fu->note_count;
}

void rvi_occ_fusion_finish(rv_occlusion *occ)
{
    rvi_occ_fusion_resolve(occ); /* the pools stay until the next begin, for the tests */
}


/* ---- shared edges --------------------------------------------------------------------------- */

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Does texel (x, y) lie wholly inside the half-plane of every edge of the piece but the
 * pool edge skip (shrunk by each line's error bound)? */
static bool inside_but(const rvi_occ_fusion *fu, const rvi_occ_piece *pc, uint32_t skip, double x, double y)
{
    for (uint32_t k = 0; k < pc->edge_count; k++) {
        uint32_t i = pc->first_edge + k;
        const rvi_occ_edge *g = &fu->edges[i];
        double A = g->side * g->line[0], B = g->side * g->line[1], C = g->side * g->line[2];
        if (i != skip && !(A * x + B * y + C + dmin(A, 0) + dmin(B, 0) >= SHRINK + g->slack))
            return false;
    }
    return true;
}

/* inside_but's terms for one piece, computed once per seam: the same values, summed in
 * the same order, so each texel gets inside_but's answer bit for bit. */
#define SEAM_EDGES 16

typedef struct seam_side {
    uint32_t n;
    double a[SEAM_EDGES], b[SEAM_EDGES], c[SEAM_EDGES], da[SEAM_EDGES], db[SEAM_EDGES], bound[SEAM_EDGES];
} seam_side;

static bool same_point(const double p[2], const double q[2]) { return p[0] == q[0] && p[1] == q[1]; }

/* Twin edges: the bit-identical line, the other side. */
static bool twins(const rvi_occ_edge *e, const rvi_occ_edge *g)
{
    return e->side != g->side && e->line[0] == g->line[0] && e->line[1] == g->line[1] && e->line[2] == g->line[2];
}

/* The end point edges e and g share (bit for bit), or NULL. */
static const double *shared_end(const rvi_occ_edge *e, const rvi_occ_edge *g)
{
    if (same_point(e->p0, g->p0) || same_point(e->p0, g->p1))
        return e->p0;
    if (same_point(e->p1, g->p0) || same_point(e->p1, g->p1))
        return e->p1;
    return NULL;
}

/* Does the seam's path go on through edge g of one piece: g leaves the seam edge e at an
 * end point P, and the other piece, whose seam edge f also ends at P, has g's twin (the
 * same line, the other side) between the same two end points? Both outlines then run
 * along the path e, g, straight through P (two convex pieces on opposite sides of a path
 * can share its two edges only where it goes on straight). */
static bool path_goes_on(const rvi_occ_fusion *fu, const rvi_occ_edge *e, const rvi_occ_edge *g,
                         const rvi_occ_piece *other, const rvi_occ_edge *f)
{
    const double *at = shared_end(e, g);
    if (!at || !(same_point(f->p0, at) || same_point(f->p1, at)))
        return false;
    for (uint32_t k = 0; k < other->edge_count; k++) {
        const rvi_occ_edge *h = &fu->edges[other->first_edge + k];
        if (twins(h, g) &&
            ((same_point(h->p0, g->p0) && same_point(h->p1, g->p1)) ||
             (same_point(h->p0, g->p1) && same_point(h->p1, g->p0))))
            return true;
    }
    return false;
}

/* False when the piece has more edges than the table holds (use inside_but). Besides the
 * seam's own edge, an edge that carries the seam's path on through an end point both
 * outlines hold is left out: see draw_seam. */
static bool seam_side_make(const rvi_occ_fusion *fu, const rvi_occ_piece *pc, uint32_t skip,
                           const rvi_occ_piece *other, uint32_t other_skip, seam_side *s)
{
    s->n = 0;
    for (uint32_t k = 0; k < pc->edge_count; k++) {
        uint32_t i = pc->first_edge + k;
        if (i == skip || path_goes_on(fu, &fu->edges[skip], &fu->edges[i], other, &fu->edges[other_skip]))
            continue;
        if (s->n == SEAM_EDGES)
            return false;
        const rvi_occ_edge *g = &fu->edges[i];
        double A = g->side * g->line[0], B = g->side * g->line[1], C = g->side * g->line[2];
        s->a[s->n] = A;
        s->b[s->n] = B;
        s->c[s->n] = C;
        s->da[s->n] = dmin(A, 0);
        s->db[s->n] = dmin(B, 0);
        s->bound[s->n] = SHRINK + g->slack;
        s->n++;
    }
    return true;
}

static bool seam_inside(const seam_side *s, double x, double y)
{
    for (uint32_t k = 0; k < s->n; k++)
        if (!(s->a[k] * x + s->b[k] * y + s->c[k] + s->da[k] + s->db[k] >= s->bound[k]))
            return false;
    return true;
}

/* Pieces a and b meet along edges ea and eb (the bit-identical line, opposite sides). A
 * texel inside every other edge's half-plane of a and of b lies in their union: its part on
 * a's side of the line is inside all of a's half-planes, its part on b's side inside all
 * of b's. It takes the smaller of their nearness there. The texels tried are those along
 * the stretch both edges share (any texel would be safe to try). Where both outlines go on
 * straight through an end point of the seam, the pieces share the next edge too, between
 * the same two end points, on a line a rounding away from this one: it is left out of both
 * checks, as the seam itself is (the texel's points on either side of the path lie in that
 * side's piece; docs/occlusion.md, "A vertex on the shared path"). */
static void draw_seam(rv_occlusion *occ, uint32_t a, uint32_t ea, uint32_t b, uint32_t eb)
{
    rvi_occ_fusion *fu = &occ->fusion;
    const rvi_occ_edge *e = &fu->edges[ea], *f = &fu->edges[eb];
    const rvi_occ_piece *pa = &fu->pieces[a], *pb = &fu->pieces[b];
    double lo = dmax(e->s0, f->s0), hi = dmin(e->s1, f->s1);
    if (!(lo < hi))
        return;
    double la = e->line[0], lb = e->line[1], lc = e->line[2], n2 = la * la + lb * lb, m = 1e-3;
    double x0 = (lb * lo - la * lc) / n2, y0 = (-la * lo - lb * lc) / n2;
    double x1 = (lb * hi - la * lc) / n2, y1 = (-la * hi - lb * lc) / n2;
    double ylo = dmin(y0, y1), yhi = dmax(y0, y1), W = occ->width, H = occ->height;
    /* Clamped before any conversion: the stretch may lie far off screen (texel coordinates
     * reach 1e12), beyond what an int32_t holds. */
    if (!(ylo - m <= H - 1 && yhi + m >= 0))
        return;
    int32_t r0 = (int32_t)floor(dmax(ylo - m, 0)), r1 = (int32_t)floor(dmin(yhi + m, H - 1));
    float top = pa->top < pb->top ? pa->top : pb->top;
    seam_side sa, sb;
    bool tables = seam_side_make(fu, pa, ea, pb, eb, &sa) && seam_side_make(fu, pb, eb, pa, ea, &sb);
    for (int32_t iy = r0; iy <= r1; iy++) {
        double ya = dmax(iy - m, ylo), yb = dmin(iy + 1 + m, yhi), xa, xb;
        if (yhi - ylo > 1e-9) {
            double k = (x1 - x0) / (y1 - y0);
            xa = x0 + (ya - y0) * k;
            xb = x0 + (yb - y0) * k;
        } else {
            xa = x0;
            xb = x1;
        }
        double xl = dmin(xa, xb) - m, xr = dmax(xa, xb) + m;
        if (!(xl <= W - 1 && xr >= 0))
            continue;
        int32_t c0 = (int32_t)floor(dmax(xl, 0)), c1 = (int32_t)floor(dmin(xr, W - 1));
        float *row = occ->texels + (size_t)iy * occ->width;
        for (int32_t ix = c0; ix <= c1; ix++) {
            if (row[ix] >= top)
                continue; /* (no bound of either piece is nearer than its top) */
            if (tables ? !seam_inside(&sa, ix, iy) || !seam_inside(&sb, ix, iy)
                       : !inside_but(fu, pa, ea, ix, iy) || !inside_but(fu, pb, eb, ix, iy))
                continue; /* part of the texel may lie outside the two pieces */
            float va = rvi_occ_piece_depth(pa, ix, iy), vb = rvi_occ_piece_depth(pb, ix, iy), v = va < vb ? va : vb;
            if (v > row[ix]) {
                row[ix] = v;
                count_raised(occ, (uint32_t)iy * occ->width + (uint32_t)ix);
            }
        }
    }
}

/* Enters piece p's edges in the table of lines, drawing the seam along each edge that an
 * earlier piece shares (the same line, the other side). */
static void share_edges(rv_occlusion *occ, uint32_t p)
{
    rvi_occ_fusion *fu = &occ->fusion;
    const rvi_occ_piece *pc = &fu->pieces[p];
    for (uint32_t k = 0; k < pc->edge_count; k++) {
        uint32_t i = pc->first_edge + k;
        const rvi_occ_edge *e = &fu->edges[i];
        uint32_t bucket = line_bucket(e->line);
        uint32_t looks = 0;
        for (uint32_t j = fu->line_head[bucket]; j && looks < LINE_LOOKS; j = fu->edge_next[j - 1], looks++) {
            const rvi_occ_edge *g = &fu->edges[j - 1];
            if (twins(g, e) && fu->edge_owner[j - 1] != p)
                draw_seam(occ, p, i, fu->edge_owner[j - 1], j - 1);
        }
        fu->edge_owner[i] = p;
        fu->edge_next[i] = fu->line_head[bucket];
        fu->line_head[bucket] = i + 1;
    }
}

/* ---- growing -------------------------------------------------------------------------------- */

/* Moves *p (n elements of size) into a block of m elements; false (nothing changed) when the
 * allocation fails or its size does not fit a size_t (a 32-bit target). */
static bool regrow(rvi_heap *heap, void **p, uint64_t n, uint64_t m, size_t size)
{
    if (m > SIZE_MAX / size)
        return false;
    void *q = rvi_alloc(heap, (size_t)m * size);
    if (!q)
        return false;
    if (*p) {
        memcpy(q, *p, (size_t)n * size);
        rvi_free(heap, *p, (size_t)n * size);
    }
    *p = q;
    return true;
}

/* Grows the pools so pieces more pieces with ne edges and notes more notes fit, up to the
 * caps: the pieces stay for the whole frame, so the tests can look at what partly covers a
 * texel (rvi_occ_partly_hidden). False at a cap or when an allocation fails: the caller
 * resolves and empties the pools instead, which only forgoes fusion and partial tests
 * between pieces drawn before and after. */
static bool grow_pools(rvi_heap *heap, rvi_occ_fusion *fu, uint32_t pieces, uint32_t ne, uint64_t notes)
{
    if (fu->piece_count + pieces > fu->piece_capacity) {
        uint32_t m = fu->piece_capacity * 2;
        if (m > MAX_POOL_PIECES || !regrow(heap, (void **)&fu->pieces, fu->piece_capacity, m, sizeof *fu->pieces))
            return false;
        fu->piece_capacity = m;
    }
    if (fu->edge_count + ne > fu->edge_capacity) {
        uint32_t n = fu->edge_capacity, m = n * 2;
        if (m > MAX_POOL_EDGES)
            return false;
        uint32_t *nx = NULL, *ow = NULL;
        double(*in)[3] = NULL;
        if (!regrow(heap, (void **)&nx, 0, m, sizeof *nx) || !regrow(heap, (void **)&ow, 0, m, sizeof *ow) ||
            !regrow(heap, (void **)&in, 0, m, sizeof *in)) {
            rvi_free(heap, nx, nx ? m * sizeof *nx : 0);
            rvi_free(heap, ow, ow ? m * sizeof *ow : 0);
            return false;
        }
        if (!regrow(heap, (void **)&fu->edges, n, m, sizeof *fu->edges)) {
            rvi_free(heap, nx, m * sizeof *nx);
            rvi_free(heap, ow, m * sizeof *ow);
            rvi_free(heap, in, m * sizeof *in);
            return false;
        }
        memcpy(nx, fu->edge_next, n * sizeof *nx);
        memcpy(ow, fu->edge_owner, n * sizeof *ow);
        memcpy(in, fu->inward, n * sizeof *in);
        rvi_free(heap, fu->edge_next, n * sizeof *nx);
        rvi_free(heap, fu->edge_owner, n * sizeof *ow);
        rvi_free(heap, fu->inward, n * sizeof *in);
        fu->edge_next = nx;
        fu->edge_owner = ow;
        fu->inward = in;
        fu->edge_capacity = m;
    }
    if ((uint64_t)fu->note_count + notes > fu->note_capacity) {
        uint64_t m = (uint64_t)fu->note_capacity * 2;
        while (m < (uint64_t)fu->note_count + notes)
            m *= 2;
        if (m > (uint64_t)fu->texels * MAX_NOTES_PER_TEXEL || m >= UINT32_MAX)
            return false;
        uint32_t *np = NULL;
        if (!regrow(heap, (void **)&np, 0, m, sizeof *np))
            return false;
        if (!regrow(heap, (void **)&fu->note_next, fu->note_capacity, m, sizeof *np)) {
            rvi_free(heap, np, (size_t)m * sizeof *np);
            return false;
        }
        memcpy(np, fu->note_piece, fu->note_capacity * sizeof *np);
        rvi_free(heap, fu->note_piece, fu->note_capacity * sizeof *np);
        fu->note_piece = np;
        fu->note_capacity = (uint32_t)m;
    }
    return true;
}

/* ---- recording ---------------------------------------------------------------------------- */

/* The note lists while one piece is noted, in locals: stores through the lists cannot then
 * be taken for writes to the counts. */
typedef struct noter {
    uint32_t *head, *note_piece, *note_next, *dirty, *touched;
    uint32_t notes, dirty_count, touched_count, round_first;
} noter;

/* Notes the piece on the texels [x0, x1] of row iy that it could still raise. */
static RVI_ALWAYS_INLINE void note_span(noter *w, const float *row, uint32_t base, int32_t x0, int32_t x1,
                                        uint32_t piece, const rvi_occ_piece *pc, int32_t iy)
{
    for (int32_t ix = x0; ix <= x1; ix++) {
        /* Below the piece's floor the texel is farther than anything the piece holds: no
         * plane needs evaluating to know the piece could raise it. */
        if (row[ix] > pc->top || (!(row[ix] < pc->floor) && row[ix] >= rvi_occ_piece_depth(pc, ix, iy)))
            continue;
        uint32_t t = base + (uint32_t)ix, h = w->head[t];
        w->note_piece[w->notes] = piece;
        w->note_next[w->notes] = h;
        w->head[t] = ++w->notes;
        if (!h) {
            w->touched[w->touched_count++] = t;
        } else if (h <= w->round_first || !w->note_next[h - 1]) {
            /* h is from an earlier round, or was the texel's first note: not listed yet */
            w->dirty[w->dirty_count++] = t;
        }
    }
}

/* Stores the draft's piece and edges in the pools (index p at fu->pieces[p]). */
static uint32_t store(rvi_occ_fusion *fu, const rvi_occ_draft *d)
{
    uint32_t ne = d->piece.edge_count, p = fu->piece_count++, first = fu->edge_count;
    fu->pieces[p] = d->piece;
    fu->pieces[p].first_edge = first;
    memcpy(fu->edges + first, d->edge, ne * sizeof *d->edge);
    for (uint32_t k = 0; k < ne; k++) {
        rvi_occ_edge *e = &fu->edges[first + k];
        for (int i = 0; i < 3; i++)
            fu->inward[first + k][i] = e->side * e->line[i];
        e->margin = rvi_occ_edge_margin(e);
    }
    fu->edge_count += ne;
    return p;
}

uint32_t rvi_occ_fusion_keep(rv_occlusion *occ, const rvi_occ_draft *d)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t ne = d->piece.edge_count;
    if (!fu->pieces || !fu->inward || ne > fu->edge_capacity)
        return 0;
    if ((fu->piece_count == fu->piece_capacity || fu->edge_count + ne > fu->edge_capacity) &&
        !grow_pools(occ->heap, fu, 1, ne, 0)) {
        rvi_occ_fusion_resolve(occ);
        flush(fu);
    }
    return fu->owner_gen << 16 | store(fu, d);
}

void rvi_occ_fusion_add(rv_occlusion *occ, const rvi_occ_draft *d, uint32_t kept)
{
    rvi_occ_fusion *fu = &occ->fusion;
    if (!kept)
        return;
    uint32_t p = kept & 0xFFFFu, H = occ->height;
    int32_t y0;
    int32_t ny = rvi_occ_band(d, occ->width, H, occ->row_scratch, occ->row_spans, &y0, occ->wide);
    const int32_t *ol = occ->row_spans, *orr = ol + H, *il = ol + 2 * (size_t)H, *ir = ol + 3 * (size_t)H;
    uint64_t count = 0; /* band texels: an exact bound on the notes */
    for (int32_t i = 0; i < ny; i++)
        if (ol[i] <= orr[i])
            count += (uint64_t)(orr[i] - ol[i] + 1);
    if (!count || count > (uint64_t)fu->texels * MAX_NOTES_PER_TEXEL)
        return; /* nothing partly covered, or too large to note: drawn without fusion */
    if ((uint64_t)fu->note_count + count > fu->note_capacity && !grow_pools(occ->heap, fu, 0, 0, count)) {
        /* Emptied, the pools keep this piece alone (its owner marks are gone with the rest). */
        rvi_occ_fusion_resolve(occ);
        flush(fu);
        if (count > fu->note_capacity)
            return;
        p = store(fu, d);
    }
    share_edges(occ, p);
    const rvi_occ_piece *pc = &fu->pieces[p];
    noter w = { fu->head, fu->note_piece, fu->note_next, fu->dirty, fu->touched,
                fu->note_count, fu->dirty_count, fu->touched_count, fu->round_first };
    for (int32_t i = 0; i < ny; i++) {
        int32_t l = ol[i], r = orr[i];
        if (l > r)
            continue;
        uint32_t iy = (uint32_t)(y0 + i), base = iy * occ->width;
        const float *row = occ->texels + base;
        if (il[i] > ir[i] || ir[i] < l || il[i] > r) {
            note_span(&w, row, base, l, r, p, pc, (int32_t)iy);
        } else {
            note_span(&w, row, base, l, il[i] - 1, p, pc, (int32_t)iy);
            note_span(&w, row, base, ir[i] + 1, r, p, pc, (int32_t)iy);
        }
    }
    fu->note_count = w.notes;
    fu->dirty_count = w.dirty_count;
    fu->touched_count = w.touched_count;
}
