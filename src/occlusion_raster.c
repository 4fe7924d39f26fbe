/* Inner rasterisation of a piece (docs/design.md §4): the texels wholly inside its outline,
 * shrunk by a margin that covers every rounding, take the piece's conservative nearness
 * (max with what they hold). Coverage is inner conservative rasterisation (Hasselgren,
 * Akenine-Möller & Ohlsson 2005, the underestimating variant): a texel partly covered is
 * never written here; fusion (occlusion_fusion.c) decides those where pieces meet.
 *
 * Per texel the value is max(floor, max over planes) for a far side, or max(floor, min
 * over planes) for an exact solid's entry side, each plane already lowered to its minimum
 * over the texel (rvi_occ_plane_texel_min): never nearer than the surface anywhere in the
 * texel. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Texels count as wholly inside only this far (texel units) inside every outline line,
 * beyond the line's own error bound: the rounding of the per-row bounds, with room. */
#define SHRINK 1e-4

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Row bounds of a piece: in row iy a whole texel needs ix >= ceil(p + q * iy) (left edges)
 * or ix <= floor(p + q * iy) (right edges); nearly horizontal edges bound the rows. */
typedef struct row_bounds {
    uint32_t count;
    double p[RVI_OCC_MAX_EDGES], q[RVI_OCC_MAX_EDGES];
    int8_t left[RVI_OCC_MAX_EDGES];
    int32_t x0, x1, y0, y1;
} row_bounds;

/* Row bounds of the texels wholly inside the piece (inner: each line's worst corner of the
 * texel, shrunk) or of those that may meet it (outer: the best corner, grown by the edge's
 * fusion margin). False when there is none. */
static bool make_rows(const rvi_occ_draft *d, double W, double H, bool outer, row_bounds *rb)
{
    double sx0 = d->x0, sx1 = d->x1, sy0 = d->y0, sy1 = d->y1;
    if (outer) {
        /* Texels meeting the corners' bounds, grown by the largest margin. */
        double m = 0;
        for (uint32_t k = 0; k < d->piece.edge_count; k++)
            m = dmax(m, rvi_occ_edge_margin(&d->edge[k]));
        sx0 = dmax(floor(d->bounds[0] - m), 0);
        sy0 = dmax(floor(d->bounds[1] - m), 0);
        sx1 = dmin(floor(d->bounds[2] + m), W - 1);
        sy1 = dmin(floor(d->bounds[3] + m), H - 1);
    }
    rb->count = 0;
    for (uint32_t k = 0; k < d->piece.edge_count; k++) {
        const rvi_occ_edge *e = &d->edge[k];
        double A = e->side * e->line[0], B = e->side * e->line[1], C = e->side * e->line[2];
        /* Texel (ix, iy) wholly inside: A ix + B iy + Cm >= 0 at its worst corner, shrunk;
         * meeting: at its best corner, grown (|A| + |B| = 1). */
        double Cm = outer ? C + dmax(A, 0) + dmax(B, 0) + rvi_occ_edge_margin(e)
                          : C + dmin(A, 0) + dmin(B, 0) - (SHRINK + e->slack);
        if (fabs(A) <= 1e-6 * fabs(B)) {
            /* Nearly horizontal: a row constraint, charged with the worst (inner) or best
             * (outer) column. */
            double bound = -(Cm + (outer ? dmax(0, A * W) : dmin(0, A * W))) / B;
            if (B > 0)
                sy0 = dmax(sy0, ceil(bound));
            else
                sy1 = dmin(sy1, floor(bound));
            continue;
        }
        rb->p[rb->count] = -Cm / A;
        rb->q[rb->count] = -B / A;
        rb->left[rb->count] = A > 0;
        rb->count++;
    }
    if (!(sx0 <= sx1 && sy0 <= sy1))
        return false;
    rb->x0 = (int32_t)sx0;
    rb->x1 = (int32_t)sx1;
    rb->y0 = (int32_t)sy0;
    rb->y1 = (int32_t)sy1;
    return true;
}

/* The texel span of each row: xl[i] .. xr[i] for row y0 + i (scratch: 2 * rows doubles).
 * Returns the row count. */
static RVI_ALWAYS_INLINE int32_t spans_of(const row_bounds *rb, double *scratch, int32_t *xl, int32_t *xr)
{
    int32_t ny = rb->y1 - rb->y0 + 1;
    double *lb = scratch, *rbnd = scratch + ny;
    double fx0 = rb->x0, fx1 = rb->x1;
    for (int32_t i = 0; i < ny; i++) {
        lb[i] = fx0;
        rbnd[i] = fx1;
    }
    /* Per edge over all rows (vectorises): left edges raise lb, right edges lower rb. */
    for (uint32_t e = 0; e < rb->count; e++) {
        double p = rb->p[e] + rb->q[e] * rb->y0, q = rb->q[e];
        if (rb->left[e]) {
            for (int32_t i = 0; i < ny; i++) {
                double bnd = p + q * i;
                lb[i] = bnd > lb[i] ? bnd : lb[i];
            }
        } else {
            for (int32_t i = 0; i < ny; i++) {
                double bnd = p + q * i;
                rbnd[i] = bnd < rbnd[i] ? bnd : rbnd[i];
            }
        }
    }
    /* Clamp, then ceil / floor by truncating a positive value (bounds are in [-1, 8193]
     * after the clamp; the added 16384 rounds far below the shrink margin, and only ever
     * widens an outer span). */
    for (int32_t i = 0; i < ny; i++) {
        double l = lb[i] < fx1 + 1 ? lb[i] : fx1 + 1, r = rbnd[i] > fx0 - 1 ? rbnd[i] : fx0 - 1;
        xl[i] = 16384 - (int32_t)(16384.0 - l);
        xr[i] = (int32_t)(r + 16384.0) - 16384;
    }
    return ny;
}

static int32_t spans_generic(const row_bounds *rb, double *scratch, int32_t *xl, int32_t *xr)
{
    return spans_of(rb, scratch, xl, xr);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static int32_t spans_avx2(const row_bounds *rb, double *scratch, int32_t *xl, int32_t *xr)
{
    return spans_of(rb, scratch, xl, xr);
}
#endif

static int32_t row_spans(const row_bounds *rb, double *scratch, int32_t *xl, int32_t *xr, bool wide)
{
#if RVI_OCC_X86_WIDE
    if (wide)
        return spans_avx2(rb, scratch, xl, xr);
#endif
    (void)wide;
    return spans_generic(rb, scratch, xl, xr);
}

/* Fills rows 0 .. ny - 1 of the occluder (texel columns xl[i] .. xr[i] of row y0 + i):
 * texel = max(texel, max(floor, max_k a_k ix + b_k iy + c_k)) over NP planes. (Skipping
 * rows already nearer than the occluder was measured: the check cost more than it saved.) */
#define SPAN_FILL(NP)                                                                          \
    for (int32_t j = 0; j < n; j++) {                                                          \
        float fx = (float)(x_lo + j), val = floor_v;                                           \
        for (int k = 0; k < (NP); k++) {                                                       \
            float t = a[k] * fx + rc[k];                                                       \
            val = t > val ? t : val;                                                           \
        }                                                                                      \
        SPAN_STORE                                                                             \
    }

/* The store: max with what the texel holds; with owners, the raised texels take the id. */
#define SPAN_STORE                                                                             \
    if (own) {                                                                                 \
        bool up = val > span[j];                                                               \
        own[j] = up ? id : own[j];                                                             \
        span[j] = up ? val : span[j];                                                          \
    } else {                                                                                   \
        span[j] = val > span[j] ? val : span[j];                                               \
    }

/* The same for an entry side: texel = max(texel, max(floor, min_k ...)). */
#define SPAN_FILL_MIN(NP)                                                                      \
    for (int32_t j = 0; j < n; j++) {                                                          \
        float fx = (float)(x_lo + j), val = FLT_MAX;                                           \
        for (int k = 0; k < (NP); k++) {                                                       \
            float t = a[k] * fx + rc[k];                                                       \
            val = t < val ? t : val;                                                           \
        }                                                                                      \
        val = val > floor_v ? val : floor_v;                                                   \
        SPAN_STORE                                                                             \
    }

static RVI_ALWAYS_INLINE void fill_rows(const rvi_occ_piece *o, int32_t y0, float *texels, uint32_t *owner,
                                        uint32_t id, uint32_t width, const int32_t *xl, const int32_t *xr,
                                        int32_t ny)
{
    uint32_t np = o->plane_count;
    bool entry = o->entry && np > 0;
    float a[RVI_OCC_MAX_PLANES], b[RVI_OCC_MAX_PLANES], c[RVI_OCC_MAX_PLANES];
    /* Pad to 2, 4 or 6 planes by repeating the first: max is idempotent. */
    uint32_t padded = np <= 2 ? 2 : np <= 4 ? 4 : 6;
    for (uint32_t k = 0; k < padded; k++) {
        uint32_t s = k < np ? k : 0;
        a[k] = np ? o->plane[s][0] : 0;
        b[k] = np ? o->plane[s][1] : 0;
        c[k] = np ? o->plane[s][2] : -FLT_MAX;
    }
    const float floor_v = o->floor;
    for (int32_t i = 0; i < ny; i++) {
        int32_t x_lo = xl[i], n = xr[i] - x_lo + 1;
        if (n <= 0)
            continue;
        int32_t iy = y0 + i;
        float *span = texels + (size_t)iy * width + x_lo;
        uint32_t *own = owner ? owner + (size_t)iy * width + x_lo : NULL;
        float fy = (float)iy, rc[RVI_OCC_MAX_PLANES];
        for (uint32_t k = 0; k < padded; k++)
            rc[k] = b[k] * fy + c[k];
        if (entry) {
            if (padded == 2) {
                SPAN_FILL_MIN(2)
            } else if (padded == 4) {
                SPAN_FILL_MIN(4)
            } else {
                SPAN_FILL_MIN(6)
            }
        } else if (padded == 2) {
            SPAN_FILL(2)
        } else if (padded == 4) {
            SPAN_FILL(4)
        } else {
            SPAN_FILL(6)
        }
    }
}

static void fill_rows_generic(const rvi_occ_piece *o, int32_t y0, float *texels, uint32_t *owner, uint32_t id,
                              uint32_t width, const int32_t *xl, const int32_t *xr, int32_t ny)
{
    fill_rows(o, y0, texels, owner, id, width, xl, xr, ny);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void fill_rows_avx2(const rvi_occ_piece *o, int32_t y0, float *texels, uint32_t *owner,
                                           uint32_t id, uint32_t width, const int32_t *xl, const int32_t *xr,
                                           int32_t ny)
{
    fill_rows(o, y0, texels, owner, id, width, xl, xr, ny);
}
#endif

/* Raises the bound of every tile the spans cover whole (texel columns xl[i] .. xr[i] of
 * rows y0 + i, i < ny): the fill left each of its texels at least the piece's value there,
 * which is never below the piece's floor. */
static void raise_tile_bounds(const rvi_occ_piece *o, int32_t y0, const int32_t *xl, const int32_t *xr, int32_t ny,
                              uint32_t width, uint32_t height, float *tile_lo, uint32_t tiles_w)
{
    const float floor_v = o->floor;
    /* The first row of tiles that starts at or after y0 and the rows of tiles that end
     * within the spans (the bottom row of the buffer ends a row of tiles too). */
    int32_t ty = (y0 + RVI_OCC_TILE - 1) / RVI_OCC_TILE;
    for (;; ty++) {
        int32_t first = ty * RVI_OCC_TILE - y0, last = (ty + 1) * RVI_OCC_TILE - 1;
        last = (last < (int32_t)height - 1 ? last : (int32_t)height - 1) - y0;
        if (last >= ny || first > last)
            break;
        int32_t cl = INT32_MIN, cr = INT32_MAX;
        for (int32_t i = first; i <= last; i++) {
            cl = xl[i] > cl ? xl[i] : cl;
            cr = xr[i] < cr ? xr[i] : cr;
        }
        /* Tiles wholly within [cl, cr] (the last tile of a row may be narrower). */
        int32_t t0 = (cl + RVI_OCC_TILE - 1) / RVI_OCC_TILE, t1 = (cr + 1) / RVI_OCC_TILE - 1;
        if (cr == (int32_t)width - 1)
            t1 = (int32_t)tiles_w - 1;
        float *lo = tile_lo + (size_t)ty * tiles_w;
        for (int32_t t = t0; t <= t1; t++)
            lo[t] = floor_v > lo[t] ? floor_v : lo[t];
    }
}

void rvi_occ_rasterize(rvi_occ_draft *d, float *texels, uint32_t *owner, uint32_t id, uint32_t width,
                       uint32_t height, float *tile_lo, uint32_t tiles_w, double *scratch, int32_t *spans, bool wide)
{
    row_bounds rb;
    d->inner_y0 = 0;
    d->inner_rows = 0;
    if (!make_rows(d, (double)width, (double)height, false, &rb))
        return;
    /* The inner spans stay in spans[2H ..) for the band (rvi_occ_band). */
    int32_t *xl = spans + 2 * (size_t)height, *xr = spans + 3 * (size_t)height;
    int32_t ny = row_spans(&rb, scratch, xl, xr, wide);
    d->inner_y0 = rb.y0;
    d->inner_rows = ny;
    if (!id)
        owner = NULL; /* a piece not kept leaves the owners as they are (each still covers) */
#if RVI_OCC_X86_WIDE
    if (wide)
        fill_rows_avx2(&d->piece, rb.y0, texels, owner, id, width, xl, xr, ny);
    else
#endif
        fill_rows_generic(&d->piece, rb.y0, texels, owner, id, width, xl, xr, ny);
    raise_tile_bounds(&d->piece, rb.y0, xl, xr, ny, width, height, tile_lo, tiles_w);
}

int32_t rvi_occ_band(const rvi_occ_draft *d, uint32_t width, uint32_t height, double *scratch, int32_t *spans,
                     int32_t *y0, bool wide)
{
    row_bounds ob;
    if (!make_rows(d, (double)width, (double)height, true, &ob))
        return 0;
    int32_t *il = spans + 2 * (size_t)height, *ir = spans + 3 * (size_t)height;
    int32_t ny = row_spans(&ob, scratch, spans, spans + height, wide);
    *y0 = ob.y0;
    /* Move the inner spans (rows from inner_y0, within the outer rows: whole texels lie
     * within the corners' bounds) onto the outer rows; empty elsewhere. */
    int32_t lo = d->inner_y0 - ob.y0, n = d->inner_rows;
    if (n && (lo < 0 || lo + n > ny))
        n = 0; /* cannot happen; without inner spans the band is the whole outer span */
    if (n && lo > 0) {
        memmove(il + lo, il, (size_t)n * sizeof *il);
        memmove(ir + lo, ir, (size_t)n * sizeof *ir);
    }
    for (int32_t i = 0; i < ny; i++)
        if (i < lo || i >= lo + n) {
            il[i] = 1;
            ir[i] = 0;
        }
    return ny;
}
