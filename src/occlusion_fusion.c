/* Fusion (docs/occlusion.md, "Fusion"): a texel partly covered by several pieces is
 * covered when their union covers all of it, and then holds the smallest of their
 * nearness there.
 *
 * Each drawn piece notes its band: the texels that may meet it but do not lie wholly
 * inside it (those its inner raster already wrote), row by row from the outline's lines,
 * leaving out texels already nearer than the piece's nearest point (whatever it fused with
 * there would be farther still). A note goes on its texel's list; a texel that already had
 * one becomes dirty for the round. Every few pieces each dirty texel is tested
 * (occlusion_union.c) with all the pieces on its list and raised when some of them cover
 * it together. Nothing is sorted: a note costs a few stores, a round only its dirty
 * texels. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Pool sizes: pieces and edges per flush; notes per texel of the buffer (at least
 * MIN_NOTES). */
#define POOL_PIECES 1024u
#define POOL_EDGES 8192u
#define MIN_NOTES 4096u
/* A texel on more lists than this is not tested (where that many bands meet, nothing
 * would cover it). */
#define MAX_TEXEL_NOTES 64u

static void free_notes(rvi_heap *heap, rvi_occ_fusion *fu)
{
    size_t t = fu->texels, n = fu->note_capacity;
    rvi_free(heap, fu->head, t * sizeof *fu->head);
    rvi_free(heap, fu->mark, t * sizeof *fu->mark);
    rvi_free(heap, fu->dirty, t * sizeof *fu->dirty);
    rvi_free(heap, fu->touched, t * sizeof *fu->touched);
    rvi_free(heap, fu->note_piece, n * sizeof *fu->note_piece);
    rvi_free(heap, fu->note_next, n * sizeof *fu->note_next);
    fu->head = fu->mark = fu->dirty = fu->touched = fu->note_piece = fu->note_next = NULL;
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
    grown.mark = rvi_alloc(heap, texels * sizeof *grown.mark);
    grown.dirty = rvi_alloc(heap, texels * sizeof *grown.dirty);
    grown.touched = rvi_alloc(heap, texels * sizeof *grown.touched);
    grown.note_piece = rvi_alloc(heap, notes * sizeof *grown.note_piece);
    grown.note_next = rvi_alloc(heap, notes * sizeof *grown.note_next);
    grown.texels = (uint32_t)texels;
    grown.note_capacity = (uint32_t)notes;
    if (!grown.head || !grown.mark || !grown.dirty || !grown.touched || !grown.note_piece || !grown.note_next) {
        /* free_notes frees what was made (rvi_free takes NULL) */
        free_notes(heap, &grown);
        return RV_ERR_OUT_OF_MEMORY;
    }
    free_notes(heap, fu);
    memset(grown.head, 0, texels * sizeof *grown.head);
    memset(grown.mark, 0, texels * sizeof *grown.mark);
    fu->head = grown.head;
    fu->mark = grown.mark;
    fu->dirty = grown.dirty;
    fu->touched = grown.touched;
    fu->note_piece = grown.note_piece;
    fu->note_next = grown.note_next;
    fu->texels = grown.texels;
    fu->note_capacity = grown.note_capacity;
    fu->round = 1;
    return RV_OK;
}

static void flush(rvi_occ_fusion *fu)
{
    for (uint32_t i = 0; i < fu->touched_count; i++)
        fu->head[fu->touched[i]] = 0;
    fu->touched_count = fu->note_count = fu->dirty_count = 0;
    fu->piece_count = fu->edge_count = 0;
}

rv_result rvi_occ_fusion_reserve(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels)
{
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
    flush(fu);
    return RV_OK;
}

void rvi_occ_fusion_free(rvi_heap *heap, rvi_occ_fusion *fu)
{
    free_notes(heap, fu);
    rvi_free(heap, fu->pieces, (size_t)fu->piece_capacity * sizeof *fu->pieces);
    rvi_free(heap, fu->edges, (size_t)fu->edge_capacity * sizeof *fu->edges);
    memset(fu, 0, sizeof *fu);
}

/* ---- resolving ------------------------------------------------------------------------------ */

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
    occ->stats.fused_texels++;
}

void rvi_occ_fusion_resolve(rv_occlusion *occ)
{
    rvi_occ_fusion *fu = &occ->fusion;
    for (uint32_t i = 0; i < fu->dirty_count; i++)
        resolve_texel(occ, fu->dirty[i]);
    fu->dirty_count = 0;
    if (++fu->round == 0) { /* marks wrapped: all stale again */
        memset(fu->mark, 0, (size_t)fu->texels * sizeof *fu->mark);
        fu->round = 1;
    }
}

void rvi_occ_fusion_finish(rv_occlusion *occ)
{
    rvi_occ_fusion_resolve(occ);
    flush(&occ->fusion);
}

/* ---- recording ---------------------------------------------------------------------------- */

/* The note lists while one piece is noted, in locals: stores through the lists cannot then
 * be taken for writes to the counts. */
typedef struct noter {
    uint32_t *head, *mark, *note_piece, *note_next, *dirty, *touched;
    uint32_t notes, dirty_count, touched_count, round;
} noter;

/* Notes the piece on the texels [x0, x1] of row iy that it could still raise. */
static RVI_ALWAYS_INLINE void note_span(noter *w, const float *row, uint32_t base, int32_t x0, int32_t x1,
                                        uint32_t piece, float top)
{
    for (int32_t ix = x0; ix <= x1; ix++) {
        if (row[ix] > top)
            continue;
        uint32_t t = base + (uint32_t)ix, h = w->head[t];
        w->note_piece[w->notes] = piece;
        w->note_next[w->notes] = h;
        w->head[t] = ++w->notes;
        if (!h) {
            w->touched[w->touched_count++] = t;
        } else if (w->mark[t] != w->round) {
            w->mark[t] = w->round;
            w->dirty[w->dirty_count++] = t;
        }
    }
}

void rvi_occ_fusion_add(rv_occlusion *occ, const rvi_occ_draft *d)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t ne = d->piece.edge_count, H = occ->height;
    int32_t y0;
    int32_t ny = rvi_occ_band(d, occ->width, H, occ->row_scratch, occ->row_spans, &y0, occ->wide);
    const int32_t *ol = occ->row_spans, *orr = ol + H, *il = ol + 2 * (size_t)H, *ir = ol + 3 * (size_t)H;
    uint64_t count = 0; /* band texels: an exact bound on the notes */
    for (int32_t i = 0; i < ny; i++)
        if (ol[i] <= orr[i])
            count += (uint64_t)(orr[i] - ol[i] + 1);
    if (!count || count > fu->note_capacity || ne > fu->edge_capacity)
        return; /* nothing partly covered, or too large to note: drawn without fusion */
    if (fu->piece_count == fu->piece_capacity || fu->edge_count + ne > fu->edge_capacity ||
        (uint64_t)fu->note_count + count > fu->note_capacity) {
        rvi_occ_fusion_resolve(occ);
        flush(fu);
    }
    uint32_t p = fu->piece_count++, first = fu->edge_count;
    fu->pieces[p] = d->piece;
    fu->pieces[p].first_edge = first;
    memcpy(fu->edges + first, d->edge, ne * sizeof *d->edge);
    fu->edge_count += ne;
    float top = d->piece.top;
    noter w = { fu->head, fu->mark, fu->note_piece, fu->note_next, fu->dirty, fu->touched,
                fu->note_count, fu->dirty_count, fu->touched_count, fu->round };
    for (int32_t i = 0; i < ny; i++) {
        int32_t l = ol[i], r = orr[i];
        if (l > r)
            continue;
        uint32_t iy = (uint32_t)(y0 + i), base = iy * occ->width;
        const float *row = occ->texels + base;
        if (il[i] > ir[i] || ir[i] < l || il[i] > r) {
            note_span(&w, row, base, l, r, p, top);
        } else {
            note_span(&w, row, base, l, il[i] - 1, p, top);
            note_span(&w, row, base, ir[i] + 1, r, p, top);
        }
    }
    fu->note_count = w.notes;
    fu->dirty_count = w.dirty_count;
    fu->touched_count = w.touched_count;
}
