/* Fusion (docs/occlusion.md, "Fusion"): a texel partly covered by several pieces is
 * covered when their union covers all of it, and then holds the smallest of their
 * nearness there.
 *
 * Each drawn piece notes its band: the texels that may meet it but do not lie wholly
 * inside it (those its inner raster already wrote), row by row from the outline's lines,
 * leaving out texels already nearer than the piece's nearest point (whatever it fused with
 * there would be farther still). The notes are (texel, piece) pairs appended in drawing
 * order. Every few pieces the new pairs are sorted by texel and merged into the earlier
 * ones; a texel with new pairs and two or more pieces in all is tested (occlusion_union.c)
 * and raised when some of them cover it together. Appending keeps the drawing loop's
 * memory traffic sequential; a texel's pieces end up side by side for its test. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Pool sizes: pieces and edges per flush; pairs per texel of the buffer. */
#define POOL_PIECES 1024u
#define POOL_EDGES 8192u
#define MIN_PAIRS 4096u

rv_result rvi_occ_fusion_reserve(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels)
{
    size_t want = texels > MIN_PAIRS ? texels : MIN_PAIRS;
    if (want > UINT32_MAX)
        return RV_ERR_CAPACITY;
    if (want > fu->pair_capacity) {
        uint64_t *a = rvi_alloc(heap, want * sizeof *a), *b = rvi_alloc(heap, want * sizeof *b);
        uint64_t *c = rvi_alloc(heap, want * sizeof *c);
        if (!a || !b || !c) {
            rvi_free(heap, a, a ? want * sizeof *a : 0);
            rvi_free(heap, b, b ? want * sizeof *b : 0);
            rvi_free(heap, c, c ? want * sizeof *c : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        size_t old = fu->pair_capacity;
        rvi_free(heap, fu->fresh, old * sizeof *fu->fresh);
        rvi_free(heap, fu->sorted, old * sizeof *fu->sorted);
        rvi_free(heap, fu->spare, old * sizeof *fu->spare);
        fu->fresh = a;
        fu->sorted = b;
        fu->spare = c;
        fu->pair_capacity = (uint32_t)want;
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
    fu->fresh_count = fu->sorted_count = fu->piece_count = fu->edge_count = 0;
    return RV_OK;
}

void rvi_occ_fusion_free(rvi_heap *heap, rvi_occ_fusion *fu)
{
    size_t n = fu->pair_capacity;
    rvi_free(heap, fu->fresh, n * sizeof *fu->fresh);
    rvi_free(heap, fu->sorted, n * sizeof *fu->sorted);
    rvi_free(heap, fu->spare, n * sizeof *fu->spare);
    rvi_free(heap, fu->pieces, (size_t)fu->piece_capacity * sizeof *fu->pieces);
    rvi_free(heap, fu->edges, (size_t)fu->edge_capacity * sizeof *fu->edges);
    memset(fu, 0, sizeof *fu);
}

/* ---- resolving ------------------------------------------------------------------------------ */

/* Sorts pairs by texel (the high word), stably, with an LSD radix sort over the bytes a
 * texel index of this buffer can have. tmp holds n pairs; the result is in *pairs or
 * *tmp, swapped so that *pairs holds it. */
static void sort_pairs(uint64_t **pairs, uint64_t **tmp, uint32_t n, uint32_t texels)
{
    int bytes = texels <= (1u << 8) ? 1 : texels <= (1u << 16) ? 2 : texels <= (1u << 24) ? 3 : 4;
    for (int byte = 0; byte < bytes; byte++) {
        uint32_t count[257];
        memset(count, 0, sizeof count);
        int shift = 32 + 8 * byte;
        const uint64_t *src = *pairs;
        uint64_t *dst = *tmp;
        for (uint32_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0xFFu) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (uint32_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xFFu]++] = src[i];
        *tmp = *pairs;
        *pairs = dst;
    }
}

static void resolve_texel(rv_occlusion *occ, uint32_t t, const uint64_t *run, uint32_t n)
{
    uint32_t pieces[64];
    if (n > 64)
        return; /* where that many bands meet, nothing is tested */
    for (uint32_t i = 0; i < n; i++)
        pieces[i] = (uint32_t)run[i];
    float value;
    if (!rvi_occ_union_value(occ, t, pieces, n, &value))
        return;
    occ->texels[t] = value;
    occ->stats.fused_texels++;
}

void rvi_occ_fusion_resolve(rv_occlusion *occ)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t nf = fu->fresh_count, ns = fu->sorted_count;
    if (!nf)
        return;
    uint32_t texels = occ->width * occ->height;
    uint64_t *fresh = fu->fresh, *spare = fu->spare;
    sort_pairs(&fresh, &spare, nf, texels);
    /* Merge into the sorted pairs (earlier rounds first among equal texels), testing each
     * texel the round touched that two or more pieces share. */
    const uint64_t *old = fu->sorted;
    uint64_t *out = spare;
    uint32_t i = 0, j = 0, n = 0;
    while (j < nf) {
        uint64_t t = fresh[j] >> 32;
        while (i < ns && (old[i] >> 32) < t)
            out[n++] = old[i++];
        uint32_t start = n;
        while (i < ns && (old[i] >> 32) == t)
            out[n++] = old[i++];
        while (j < nf && (fresh[j] >> 32) == t)
            out[n++] = fresh[j++];
        if (n - start >= 2)
            resolve_texel(occ, (uint32_t)t, out + start, n - start);
    }
    while (i < ns)
        out[n++] = old[i++];
    /* out became the sorted pairs; the two other arrays are free again. */
    fu->spare = fu->sorted;
    fu->sorted = out;
    fu->fresh = fresh == out ? spare : fresh;
    fu->sorted_count = n;
    fu->fresh_count = 0;
}

static void flush(rvi_occ_fusion *fu)
{
    fu->fresh_count = fu->sorted_count = fu->piece_count = fu->edge_count = 0;
}

void rvi_occ_fusion_finish(rv_occlusion *occ)
{
    rvi_occ_fusion_resolve(occ);
    flush(&occ->fusion);
}

/* ---- recording ---------------------------------------------------------------------------- */

/* Notes the piece on the texels [x0, x1] of row iy that it could still raise. */
static uint32_t note_span(rv_occlusion *occ, uint64_t *out, int32_t iy, int32_t x0, int32_t x1, uint32_t piece,
                          float top)
{
    const float *row = occ->texels + (size_t)iy * occ->width;
    uint64_t base = (uint64_t)((uint32_t)iy * occ->width) << 32;
    uint32_t n = 0;
    for (int32_t ix = x0; ix <= x1; ix++) {
        out[n] = (base + ((uint64_t)(uint32_t)ix << 32)) | piece;
        n += !(row[ix] > top);
    }
    return n;
}

void rvi_occ_fusion_add(rv_occlusion *occ, const rvi_occ_draft *d)
{
    rvi_occ_fusion *fu = &occ->fusion;
    uint32_t ne = d->piece.edge_count, H = occ->height;
    int32_t y0;
    int32_t ny = rvi_occ_band(d, occ->width, H, occ->row_scratch, occ->row_spans, &y0, occ->wide);
    const int32_t *ol = occ->row_spans, *orr = ol + H, *il = ol + 2 * (size_t)H, *ir = ol + 3 * (size_t)H;
    uint64_t count = 0; /* band texels: an exact bound on the pairs */
    for (int32_t i = 0; i < ny; i++)
        if (ol[i] <= orr[i])
            count += (uint64_t)(orr[i] - ol[i] + 1);
    if (!count || count > fu->pair_capacity || ne > fu->edge_capacity)
        return; /* nothing partly covered, or too large to note: drawn without fusion */
    if (fu->piece_count == fu->piece_capacity || fu->edge_count + ne > fu->edge_capacity ||
        (uint64_t)fu->fresh_count + fu->sorted_count + count > fu->pair_capacity) {
        rvi_occ_fusion_resolve(occ);
        flush(fu);
    }
    uint32_t p = fu->piece_count++, first = fu->edge_count;
    fu->pieces[p] = d->piece;
    fu->pieces[p].first_edge = first;
    memcpy(fu->edges + first, d->edge, ne * sizeof *d->edge);
    fu->edge_count += ne;
    float top = d->piece.top;
    uint64_t *out = fu->fresh;
    uint32_t n = fu->fresh_count;
    for (int32_t i = 0; i < ny; i++) {
        int32_t l = ol[i], r = orr[i];
        if (l > r)
            continue;
        if (il[i] > ir[i] || ir[i] < l || il[i] > r) {
            n += note_span(occ, out + n, y0 + i, l, r, p, top);
        } else {
            n += note_span(occ, out + n, y0 + i, l, il[i] - 1, p, top);
            n += note_span(occ, out + n, y0 + i, ir[i] + 1, r, p, top);
        }
    }
    fu->fresh_count = n;
}
