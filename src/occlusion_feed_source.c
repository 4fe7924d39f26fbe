/* The depth feed's source side (docs/occlusion.md, "The depth feed"): from the host's image
 * to per-texel bounds on the surface the old view saw, and their pyramids.
 *
 * One pass over the rows, each row's work a few loops the compiler vectorises (an AVX2 build
 * of the same source is picked at run time, as for the buffer), the rows in flight kept in
 * small ring buffers so that nothing but the result leaves the first-level cache:
 *  1. decode: window depth -> nearness n (NaN: no sample). A sample counts only when the
 *     format and the arithmetic know its nearness to within tau / 8 of its depth D (1 / w
 *     in perspective; the distance from the near plane in orthographic views);
 *  2. plane: a sample whose second differences along its row and its column stay within
 *     tau / 2 of its depth lies on one plane with its four neighbours (the true second
 *     differences, errors included, are then within tau); it gives a = b = n, any other
 *     texel a = -inf, b = +inf;
 *  3. 3 x 3: a texel's surface bounds are the minimum of a and the maximum of b over its
 *     neighbourhood, widened by tau of the largest depth there (which also covers every
 *     sample's error): -inf / +inf unless all nine samples lie on their neighbours' planes;
 *  4. pyramids: minimum of lo and maximum of hi; the first level is reduced as its rows
 *     complete, the others afterwards.
 * Two neighbouring samples are then joined only when four in a row lie on one plane, and a
 * texel's whole footprint (half-way to each neighbour, corners included) lies between
 * joined samples. */
#include "occlusion_feed.h"

#include <float.h>
#include <math.h>
#include <string.h>

void rvi_feed_levels_of(uint32_t w, uint32_t h, rvi_feed_levels *lv, size_t *total)
{
    size_t t = 0;
    lv->count = 0;
    for (;;) {
        lv->w[lv->count] = w;
        lv->h[lv->count] = h;
        lv->offset[lv->count] = t;
        t += (size_t)w * h;
        lv->count++;
        if (w == 1 && h == 1)
            break;
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    *total = t;
}

/* ---- 1: decode ------------------------------------------------------------------------------ */

/* A row of the image as window depths (unorm values divide exactly, so the clear value
 * decodes to exactly 0 or 1; NaN stays NaN). */
static RVI_ALWAYS_INLINE const float *row_depths(const uint8_t *restrict src, rv_depth_format f, uint32_t w,
                                                 float *restrict out)
{
    if (f == RV_DEPTH_FLOAT32)
        return (const float *)(const void *)src;
    if (f == RV_DEPTH_UNORM16) {
        const uint16_t *p = (const uint16_t *)(const void *)src;
        for (uint32_t i = 0; i < w; i++)
            out[i] = (float)p[i] / 65535.0f;
    } else if (f == RV_DEPTH_UNORM24) {
        const uint32_t *p = (const uint32_t *)(const void *)src;
        for (uint32_t i = 0; i < w; i++)
            out[i] = (float)(int32_t)(p[i] & 0xFFFFFFu) / 16777215.0f;
    } else {
        const uint32_t *p = (const uint32_t *)(const void *)src;
        for (uint32_t i = 0; i < w; i++)
            out[i] = (float)(int32_t)(p[i] >> 8) / 16777215.0f;
    }
    return out;
}

/* Per-row constants: nearness a_v * (v - v_c) + (a_x * column + c_row); its error is at most
 * k_row + c_e * |v - v_c|; depth for the tolerances D = t_n * n + t_0 (t_n and t_0 and
 * whether a_x is 0 are passed as constants, so each view's case compiles to its own loop). */
typedef struct decode_row_k {
    float a_v, a_x, c_row, v_c, k8_row, c8_e, tau, sky, min_near;
} decode_row_k;

static RVI_ALWAYS_INLINE void decode_row(const float *restrict v, uint32_t w, const decode_row_k *k, bool has_x,
                                         float t_n, float t_0, float *restrict near, rvi_feed_counts *c)
{
    const decode_row_k q = *k;
    /* Counted per row, invalid values in the low 16 bits and sky above (a row has at most
     * RV_OCCLUSION_MAX_SIZE texels). */
    uint32_t packed = 0, samples = 0;
    for (uint32_t i = 0; i < w; i++) {
        float x = v[i], d = x - q.v_c;
        bool in = (x >= 0.0f) & (x <= 1.0f); /* false for NaN */
        bool is_sky = x == q.sky;
        float n = q.a_v * d + (has_x ? q.a_x * (float)(int32_t)i + q.c_row : q.c_row);
        bool precise = q.k8_row + q.c8_e * fabsf(d) <= q.tau * (t_n * n + t_0);
        bool sample = in & !is_sky & (n > q.min_near) & precise;
        near[i] = sample ? n : NAN;
        packed += in ? (is_sky ? 65536u : 0u) : 1u;
        samples += sample;
    }
    c->invalid += packed & 0xFFFFu;
    c->sky += packed >> 16;
    c->samples += samples;
}

/* ---- 2: samples on their neighbours' planes --------------------------------------------- */

/* mid[-1] and mid[w] are padding (NaN): the row's end texels are never on a plane. */
static RVI_ALWAYS_INLINE void plane_row(const float *restrict up, const float *restrict mid,
                                        const float *restrict down, uint32_t w, float half_tau, float t_n, float t_0,
                                        float *restrict a, float *restrict b)
{
    const float *left = mid - 1, *right = mid + 1;
    for (uint32_t i = 0; i < w; i++) {
        float c = mid[i];
        float dx = fabsf(left[i] - 2.0f * c + right[i]), dy = fabsf(up[i] - 2.0f * c + down[i]);
        float tol = half_tau * (t_n * c + t_0);
        bool ok = (dx <= tol) & (dy <= tol); /* each false for NaN (a missing neighbour) */
        /* A minimum against +-inf (a NaN sample is never ok), so that it stays a vector
         * select rather than a branch. */
        float cap = ok ? INFINITY : -INFINITY;
        a[i] = c < cap ? c : cap;
        b[i] = c > -cap ? c : -cap;
    }
}

/* a[-1], a[w] (-inf) and b[-1], b[w] (+inf) are padding. */
static RVI_ALWAYS_INLINE void row_min_max(const float *restrict a, const float *restrict b, uint32_t w,
                                          float *restrict lo, float *restrict hi)
{
    const float *al = a - 1, *ar = a + 1, *bl = b - 1, *br = b + 1;
    for (uint32_t i = 0; i < w; i++) {
        float l = al[i] < a[i] ? al[i] : a[i], h = bl[i] > b[i] ? bl[i] : b[i];
        lo[i] = l < ar[i] ? l : ar[i];
        hi[i] = h > br[i] ? h : br[i];
    }
}

/* ---- 3: 3 x 3 bounds ------------------------------------------------------------------------ */

/* Perspective: the nearest depth gives the largest slack; orthographic (t_n < 0): the
 * lower bound's distance from the near plane. Infinite inputs stay infinite. */
static RVI_ALWAYS_INLINE uint32_t column_bounds(const float *restrict lu, const float *restrict lm,
                                                const float *restrict ld, const float *restrict hu,
                                                const float *restrict hm, const float *restrict hd, uint32_t w,
                                                float tau, float t_n, float t_0, float *restrict lo,
                                                float *restrict hi)
{
    uint32_t surface = 0;
    for (uint32_t i = 0; i < w; i++) {
        float l = lu[i] < lm[i] ? lu[i] : lm[i], h = hu[i] > hm[i] ? hu[i] : hm[i];
        l = l < ld[i] ? l : ld[i];
        h = h > hd[i] ? h : hd[i];
        float slack = tau * (t_n > 0 ? h : t_0 - l);
        lo[i] = l - slack;
        hi[i] = h + slack;
        surface += h < INFINITY;
    }
    return surface;
}

/* ---- 4: pyramids ---------------------------------------------------------------------------- */

/* One row of a level from two rows of the level below (r1 = r0 when the second is missing):
 * minimum of lo, maximum of hi. */
static RVI_ALWAYS_INLINE void reduce_row(const float *restrict l0, const float *restrict l1, const float *restrict h0,
                                         const float *restrict h1, uint32_t sw, uint32_t dw, float *restrict ol,
                                         float *restrict oh)
{
    uint32_t pairs = sw / 2;
    for (uint32_t x = 0; x < pairs; x++) {
        float a = l0[2 * x] < l0[2 * x + 1] ? l0[2 * x] : l0[2 * x + 1];
        float b = l1[2 * x] < l1[2 * x + 1] ? l1[2 * x] : l1[2 * x + 1];
        float c = h0[2 * x] > h0[2 * x + 1] ? h0[2 * x] : h0[2 * x + 1];
        float d = h1[2 * x] > h1[2 * x + 1] ? h1[2 * x] : h1[2 * x + 1];
        ol[x] = a < b ? a : b;
        oh[x] = c > d ? c : d;
    }
    if (pairs < dw) { /* an odd width: the last texel pairs with itself */
        uint32_t s = sw - 1;
        ol[pairs] = l0[s] < l1[s] ? l0[s] : l1[s];
        oh[pairs] = h0[s] > h1[s] ? h0[s] : h1[s];
    }
}

/* Row y of level l + 1 from rows 2y and 2y + 1 of level l. */
static RVI_ALWAYS_INLINE void level_row(rvi_occ_feed *fd, uint32_t l, uint32_t y)
{
    const rvi_feed_levels *lv = &fd->levels;
    uint32_t sw = lv->w[l], dw = lv->w[l + 1];
    size_t r0 = lv->offset[l] + (size_t)(2 * y) * sw, r1 = 2 * y + 1 < lv->h[l] ? r0 + sw : r0;
    size_t o = lv->offset[l + 1] + (size_t)y * dw;
    reduce_row(fd->lo + r0, fd->lo + r1, fd->hi + r0, fd->hi + r1, sw, dw, fd->lo + o, fd->hi + o);
}

static RVI_ALWAYS_INLINE void upper_levels(rvi_occ_feed *fd)
{
    for (uint32_t l = 1; l + 1 < fd->levels.count; l++)
        for (uint32_t y = 0; y < fd->levels.h[l + 1]; y++)
            level_row(fd, l, y);
}

/* ---- the pipeline ---------------------------------------------------------------------------- */

typedef struct source_args {
    rvi_occ_feed *fd;
    const rv_depth_feed *feed;
    const rvi_feed_decode *dec;
    float tau;
    rvi_feed_counts counts;
} source_args;

static void decode_constants(const rvi_feed_decode *dec, float tau, uint32_t w, decode_row_k *k)
{
    /* Error bound: the format's step and 2 float ulps of the value (what the GPU's depth
     * may be off by: v <= |v_c| + |v - v_c|), then this decode's own roundings (4 ulps of
     * each term, counted twice). The test wants 8 times the bound. */
    const double g = 1.0 / 4194304.0, r = 1.0 / 2097152.0, av = fabs(dec->a_v);
    memset(k, 0, sizeof *k);
    k->a_v = (float)dec->a_v;
    k->a_x = (float)dec->a_x;
    k->v_c = dec->v_c;
    k->c8_e = (float)(8 * av * (g + r));
    k->k8_row = (float)(8 * (av * (dec->quantum + g * fabs(dec->v_c)) + r * fabs(dec->a_x) * w));
    k->tau = tau;
    k->sky = dec->sky;
    k->min_near = dec->min_near;
}

/* Row j of the image into its ring slot. */
static RVI_ALWAYS_INLINE void decode_into(source_args *sa, decode_row_k *k, uint32_t j, bool has_x, float t_n,
                                          float t_0, float *near)
{
    const rv_depth_feed *feed = sa->feed;
    const rvi_feed_decode *dec = sa->dec;
    uint32_t w = feed->width, h = feed->height;
    size_t pitch = feed->row_pitch ? feed->row_pitch : (size_t)w * dec->texel_size;
    const uint8_t *src = (const uint8_t *)feed->texels + (size_t)(feed->rows_bottom_up ? h - 1 - j : j) * pitch;
    double c_row = dec->a_y * j + dec->a_0 + dec->a_v * (double)dec->v_c;
    k->c_row = (float)c_row;
    float k_base = k->k8_row;
    k->k8_row += (float)(8 * fabs(c_row) / 2097152.0);
    const float *v = row_depths(src, feed->format, w, sa->fd->rows + 11 * RVI_FEED_STRIDE(sa->fd->cap_w));
    decode_row(v, w, k, has_x, t_n, t_0, near, &sa->counts);
    k->k8_row = k_base;
}

/* Rows flow through three rings: nearness (decoded one row ahead of the plane test), and the
 * rows' three-texel minima of a and maxima of b (one row ahead of the column pass). Row j's
 * final bounds are written when row j + 1's extrema exist; level 1 as its two rows are.
 * t_n, t_0 and has_x are constants at each call, so every case gets its own loops. */
static RVI_ALWAYS_INLINE void build_rows(source_args *sa, bool has_x, float t_n, float t_0)
{
    rvi_occ_feed *fd = sa->fd;
    uint32_t w = sa->feed->width, h = sa->feed->height;
    const float tau = sa->tau;
    /* Every ring row has RVI_FEED_PAD floats of padding on each side, so that the
     * neighbour reads at either end need no special case (and no loop a scalar tail). */
    size_t stride = RVI_FEED_STRIDE(fd->cap_w);
    float *base = fd->rows + RVI_FEED_PAD;
    float *near[3], *rmin[3], *rmax[3], *a = base + 9 * stride, *b = base + 10 * stride;
    for (int i = 0; i < 3; i++) {
        near[i] = base + (size_t)i * stride;
        rmin[i] = base + (size_t)(3 + i) * stride;
        rmax[i] = base + (size_t)(6 + i) * stride;
        near[i][-1] = near[i][w] = NAN;
    }
    a[-1] = a[w] = -INFINITY;
    b[-1] = b[w] = INFINITY;
    decode_row_k k;
    decode_constants(sa->dec, tau, w, &k);
    uint32_t surface = 0;
    for (uint32_t j = 0; j <= h + 1; j++) {
        /* Decode row j; the plane test of row j - 1 (rows 0 and h - 1 prove nothing). */
        if (j < h)
            decode_into(sa, &k, j, has_x, t_n, t_0, near[j % 3]);
        if (j >= 1 && j <= h) {
            uint32_t p = j - 1;
            if (p == 0 || p + 1 >= h) {
                for (uint32_t i = 0; i < w; i++) {
                    rmin[p % 3][i] = -INFINITY;
                    rmax[p % 3][i] = INFINITY;
                }
            } else {
                plane_row(near[(p - 1) % 3], near[p % 3], near[j % 3], w, 0.5f * tau, t_n, t_0, a, b);
                row_min_max(a, b, w, rmin[p % 3], rmax[p % 3]);
            }
        }
        /* Final bounds of row j - 2 (needs extrema of rows j - 3 .. j - 1). */
        if (j >= 2) {
            uint32_t r = j - 2;
            float *lo = fd->lo + (size_t)r * w, *hi = fd->hi + (size_t)r * w;
            if (r == 0 || r + 1 >= h) {
                for (uint32_t i = 0; i < w; i++) {
                    lo[i] = -INFINITY;
                    hi[i] = INFINITY;
                }
            } else {
                surface += column_bounds(rmin[(r - 1) % 3], rmin[r % 3], rmin[(r + 1) % 3], rmax[(r - 1) % 3],
                                         rmax[r % 3], rmax[(r + 1) % 3], w, tau, t_n, t_0, lo, hi);
            }
            if (fd->levels.count > 1 && (r % 2 == 1 || r + 1 == h))
                level_row(fd, 0, r / 2);
        }
    }
    sa->counts.surface = surface;
    upper_levels(fd);
}

static RVI_ALWAYS_INLINE void build(source_args *sa)
{
    bool has_x = sa->dec->a_x != 0;
    if (sa->dec->t_n > 0) {
        if (has_x)
            build_rows(sa, true, 1.0f, 0.0f);
        else
            build_rows(sa, false, 1.0f, 0.0f);
    } else {
        build_rows(sa, false, -1.0f, sa->dec->t_0);
    }
}

static void build_generic(source_args *sa)
{
    build(sa);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void build_avx2(source_args *sa)
{
    build(sa);
}

/* Sixteen lanes where the CPU has them: the passes are plain float arithmetic, so the
 * wider build gives the same bits in fewer instructions. */
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) static void build_avx512(source_args *sa)
{
    build(sa);
}
#endif

bool rvi_feed_cpu_avx512(void)
{
#if RVI_OCC_X86_WIDE
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

void rvi_feed_build_source(rvi_occ_feed *fd, const rv_depth_feed *feed, const rvi_feed_decode *dec, float tau,
                           bool wide, rvi_feed_counts *out)
{
    size_t total;
    rvi_feed_levels_of(feed->width, feed->height, &fd->levels, &total);
    source_args sa = { fd, feed, dec, tau, { 0, 0, 0, 0 } };
#if RVI_OCC_X86_WIDE
    if (wide && fd->avx512)
        build_avx512(&sa);
    else if (wide)
        build_avx2(&sa);
    else
#endif
        build_generic(&sa);
    (void)wide;
    *out = sa.counts;
}
