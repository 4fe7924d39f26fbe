/* The depth feed's source side (docs/occlusion.md, "The depth feed"): from the host's image
 * to bounds on the surface the old view saw, and their pyramids.
 *
 * One pass over the rows, each row's work a few loops the compiler vectorises (an AVX2 build
 * of the same source is picked at run time, as for the buffer), the rows in flight kept in
 * small ring buffers so that nothing but the pyramids leaves the first-level cache:
 *  1. decode: window depth -> nearness n (NaN: no sample). A sample counts only when the
 *     format and the arithmetic know its nearness to within tau / 8 of its depth D (1 / w
 *     in perspective; the distance from the near plane in orthographic views);
 *  2. plane: a sample whose second differences along its row and its column stay within
 *     tau / 2 of its depth lies on one plane with its four neighbours (the true second
 *     differences, errors included, are then within tau); it keeps b = n, any other texel
 *     b = +inf;
 *  3. a texel proves surface between the extremes of b over its 3 x 3 neighbourhood widened
 *     by tau of the largest depth there (which also covers every sample's error), and
 *     nothing unless all nine samples lie on their neighbours' planes. The pyramids start
 *     at 2 x 2 texels: each texel of the first stored level takes the extremes of b over the
 *     4 x 4 samples its four texels' neighbourhoods span, widened by tau of the largest
 *     depth among them (no smaller than any of the four's own slack), so it bounds the four
 *     texels' bounds and is finite only when all four prove surface;
 *  4. pyramids above it: minimum of lo and maximum of hi.
 * Two neighbouring samples are then joined only when four in a row lie on one plane, and a
 * texel's whole footprint (half-way to each neighbour, corners included) lies between
 * joined samples. */
#include "occlusion_feed.h"
#include "core/prefetch.h"

#include <float.h>
#include <math.h>
#include <string.h>

void rvi_feed_levels_of(uint32_t w, uint32_t h, rvi_feed_levels *lv, size_t *total)
{
    /* Level 0 (the texel grid) is not stored: the first stored level is level 1 (a single
     * texel's level 1 is that texel again), the others halve it down to 1 x 1. */
    size_t t = 0;
    lv->w[0] = w;
    lv->h[0] = h;
    lv->offset[0] = 0;
    lv->count = 1;
    do {
        w = (w + 1) / 2;
        h = (h + 1) / 2;
        lv->w[lv->count] = w;
        lv->h[lv->count] = h;
        lv->offset[lv->count] = t;
        t += (size_t)w * h;
        lv->count++;
    } while (w > 1 || h > 1);
    *total = t;
}

/* The depth the tolerances scale with, t_n * n + t_0: in perspective (t_n = 1, t_0 = 0, both
 * constants here) n itself, without the addition of zero the compiler must otherwise keep
 * (it differs only in the sign of a zero, which no comparison below sees). */
static RVI_ALWAYS_INLINE float tolerance_depth(float n, float t_n, float t_0)
{
    return t_0 == 0.0f ? t_n * n : t_n * n + t_0;
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

static RVI_ALWAYS_INLINE uint32_t decode_row(const float *restrict v, uint32_t w, const decode_row_k *k, bool has_x,
                                             float t_n, float t_0, float *restrict near, rvi_feed_counts *c)
{
    const decode_row_k q = *k;
    uint32_t in_range = 0, sky = 0, samples = 0;
    for (uint32_t i = 0; i < w; i++) {
        float x = v[i], d = x - q.v_c;
        bool in = (x >= 0.0f) & (x <= 1.0f); /* false for NaN */
        bool is_sky = x == q.sky;
        float n = q.a_v * d + (has_x ? q.a_x * (float)(int32_t)i + q.c_row : q.c_row);
        bool precise = q.k8_row + q.c8_e * fabsf(d) <= q.tau * tolerance_depth(n, t_n, t_0);
        bool sample = in & !is_sky & (n > q.min_near) & precise;
        near[i] = sample ? n : NAN;
        in_range += in;
        sky += is_sky; /* the clear value (0 or 1) is in range */
        samples += sample;
    }
    c->invalid += w - in_range;
    c->sky += sky;
    c->samples += samples;
    return samples;
}

/* ---- 2: samples on their neighbours' planes --------------------------------------------- */

/* mid[-1] and mid[w] are padding (NaN): the row's end texels are never on a plane. */
static RVI_ALWAYS_INLINE void plane_row(const float *restrict up, const float *restrict mid,
                                        const float *restrict down, uint32_t w, float half_tau, float t_n, float t_0,
                                        float *restrict b)
{
    const float *left = mid - 1, *right = mid + 1;
    for (uint32_t i = 0; i < w; i++) {
        float c = mid[i];
        float dx = fabsf(left[i] - 2.0f * c + right[i]), dy = fabsf(up[i] - 2.0f * c + down[i]);
        float tol = half_tau * tolerance_depth(c, t_n, t_0);
        bool ok = (dx <= tol) & (dy <= tol); /* each false for NaN (a missing neighbour) */
        b[i] = ok ? c : INFINITY;
    }
}

/* ---- 3: neighbourhoods, and the first stored level ---------------------------------------- */

/* Four rows of b (a..d: rows 2y - 1 .. 2y + 2) down their columns: the extremes of all four
 * (for level-1 row y), and the maxima of the first three and of the last three (the 3 x 3
 * neighbourhoods of rows 2y and 2y + 1, to count the texels that prove surface). b holds no
 * NaN: +inf marks a sample off its neighbours' planes. */
static RVI_ALWAYS_INLINE void columns4(const float *restrict a, const float *restrict b, const float *restrict c,
                                       const float *restrict d, uint32_t w, float *restrict vmin,
                                       float *restrict vmax, float *restrict m3a, float *restrict m3b)
{
    for (uint32_t i = 0; i < w; i++) {
        float bc_max = b[i] > c[i] ? b[i] : c[i], bc_min = b[i] < c[i] ? b[i] : c[i];
        float top = a[i] > bc_max ? a[i] : bc_max, bottom = bc_max > d[i] ? bc_max : d[i];
        float lo = a[i] < bc_min ? a[i] : bc_min;
        m3a[i] = top;
        m3b[i] = bottom;
        vmax[i] = top > d[i] ? top : d[i];
        vmin[i] = lo < d[i] ? lo : d[i];
    }
}

/* Texels of two rows whose 3 x 3 neighbourhood is all on planes: m3a and m3b hold the
 * column maxima of each one's three rows, [-1] and [w] are padding (+inf). */
static RVI_ALWAYS_INLINE uint32_t count_surface(const float *restrict m3a, const float *restrict m3b, uint32_t w)
{
    const float *la = m3a - 1, *ra = m3a + 1, *lb = m3b - 1, *rb = m3b + 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < w; i++) {
        float ha = la[i] > m3a[i] ? la[i] : m3a[i], hb = lb[i] > m3b[i] ? lb[i] : m3b[i];
        ha = ha > ra[i] ? ha : ra[i];
        hb = hb > rb[i] ? hb : rb[i];
        n += (uint32_t)(ha < INFINITY) + (uint32_t)(hb < INFINITY);
    }
    return n;
}

/* Level-1 row from the column extremes of its four rows: texel x spans columns 2x - 1 ..
 * 2x + 2 (vmin and vmax are padded with +inf on both sides, at least two past w). pmin and
 * pmax are scratch for the column pairs. Perspective (t_n > 0): the nearest depth gives the
 * largest slack; orthographic: the lower bound's distance from the near plane. */
static RVI_ALWAYS_INLINE void level1_row(const float *restrict vmin, const float *restrict vmax, uint32_t w1,
                                         float tau, float t_n, float t_0, float *restrict pmin,
                                         float *restrict pmax, float *restrict lo, float *restrict hi)
{
    /* size_t indices: the compiler then knows that 2x and x + 1 do not wrap */
    const float *a = vmin - 1, *b = vmax - 1;
    for (size_t x = 0; x <= w1; x++) { /* columns 2x - 1 and 2x */
        pmin[x] = a[2 * x] < a[2 * x + 1] ? a[2 * x] : a[2 * x + 1];
        pmax[x] = b[2 * x] > b[2 * x + 1] ? b[2 * x] : b[2 * x + 1];
    }
    for (size_t x = 0; x < w1; x++) {
        float l = pmin[x] < pmin[x + 1] ? pmin[x] : pmin[x + 1];
        float h = pmax[x] > pmax[x + 1] ? pmax[x] : pmax[x + 1];
        /* Not surface (h = +inf): lo = -inf and hi = +inf by arithmetic rather than by a
         * select of computed values, which keeps the loop vectorised. l is then capped to
         * stay finite (l = +inf would make inf - inf), a no-op for surface, where l <= h. */
        l = l < FLT_MAX ? l : FLT_MAX;
        float kill = h < INFINITY ? 0.0f : INFINITY;
        float slack = tau * (t_n > 0 ? h : t_0 - l);
        lo[x] = (l - slack) - kill;
        hi[x] = (h + slack) + kill;
    }
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
    for (uint32_t l = 2; l + 1 < fd->levels.count; l++)
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

/* How many rows ahead the decode asks for the image's lines (1, 2 and 4 rows do about
 * alike on an image not in cache; docs/history/occlusion.md). */
enum { PREFETCH_ROWS = 2 };

/* Row j of the image into its ring slot; returns its samples. */
static RVI_ALWAYS_INLINE uint32_t decode_into(source_args *sa, decode_row_k *k, uint32_t j, bool has_x, float t_n,
                                          float t_0, float *near, float *convert)
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
    /* The lines of the row PREFETCH_ROWS ahead asked for now (at the first row, those of
     * every row up to it): a GPU read-back's image comes from memory (the copy's DMA leaves
     * nothing in the CPU's caches), and its misses then overlap the decode of the rows
     * before. Only a hint: nothing read changes. */
    size_t row_bytes = (size_t)w * dec->texel_size;
    for (uint32_t a = j == 0 ? 1 : j + PREFETCH_ROWS; a <= j + PREFETCH_ROWS && a < h; a++) {
        const char *ahead = (const char *)feed->texels + (size_t)(feed->rows_bottom_up ? h - 1 - a : a) * pitch;
        size_t b = 0;
        for (; b + 256 <= row_bytes; b += 256) { /* four lines a step: a loop step costs as much as a hint */
            RVI_PREFETCH(ahead + b);
            RVI_PREFETCH(ahead + b + 64);
            RVI_PREFETCH(ahead + b + 128);
            RVI_PREFETCH(ahead + b + 192);
        }
        for (; b < row_bytes; b += 64)
            RVI_PREFETCH(ahead + b);
        RVI_PREFETCH(ahead + row_bytes - 1); /* the last line when the row starts mid-line */
    }
    const float *v = row_depths(src, feed->format, w, convert);
    uint32_t samples = decode_row(v, w, k, has_x, t_n, t_0, near, &sa->counts);
    k->k8_row = k_base;
    return samples;
}

/* The scratch rows (RVI_FEED_ROWS of them, each padded by RVI_FEED_PAD on both sides). */
enum {
    ROW_NEAR = 0,    /* 3: decoded nearness, one row ahead of the plane test */
    ROW_B = 3,       /* 4: b of the rows a level-1 row spans */
    ROW_VMIN = 7, ROW_VMAX, ROW_M3A, ROW_M3B, ROW_PMIN, ROW_PMAX,
    ROW_NONE,        /* +inf: b of the rows outside the image */
    ROW_CONVERT,     /* a unorm row converted to window depths */
};

/* b of image row r (outside the image: the +inf row). */
static RVI_ALWAYS_INLINE const float *b_row(float *const b[4], const float *none, int64_t r, uint32_t h)
{
    return r < 0 || r >= (int64_t)h ? none : b[r % 4];
}

/* Level-1 row y from b of rows 2y - 1 .. 2y + 2; counts the texels of rows 2y and 2y + 1
 * that prove surface. empty[r % 4]: row r has no sample (its b is all +inf), and then
 * nothing it spans can prove surface (sky above the horizon, say). */
static RVI_ALWAYS_INLINE uint32_t first_level_row(rvi_occ_feed *fd, float *const rows[RVI_FEED_ROWS],
                                                  const bool empty[4], uint32_t y, uint32_t w, uint32_t h, float tau,
                                                  float t_n, float t_0)
{
    float *const b[4] = { rows[ROW_B], rows[ROW_B + 1], rows[ROW_B + 2], rows[ROW_B + 3] };
    int64_t r = 2 * (int64_t)y;
    const rvi_feed_levels *lv = &fd->levels;
    size_t o = lv->offset[1] + (size_t)y * lv->w[1];
    bool none = true;
    for (int64_t k = r - 1; k <= r + 2; k++)
        none &= k < 0 || k >= (int64_t)h || empty[k % 4];
    if (none) {
        for (uint32_t x = 0; x < lv->w[1]; x++) {
            fd->lo[o + x] = -INFINITY;
            fd->hi[o + x] = INFINITY;
        }
        return 0;
    }
    columns4(b_row(b, rows[ROW_NONE], r - 1, h), b_row(b, rows[ROW_NONE], r, h), b_row(b, rows[ROW_NONE], r + 1, h),
             b_row(b, rows[ROW_NONE], r + 2, h), w, rows[ROW_VMIN], rows[ROW_VMAX], rows[ROW_M3A], rows[ROW_M3B]);
    /* Past the last row its maxima are those of rows beyond the image: +inf, none counted. */
    uint32_t surface = count_surface(rows[ROW_M3A], r + 1 < (int64_t)h ? rows[ROW_M3B] : rows[ROW_NONE], w);
    level1_row(rows[ROW_VMIN], rows[ROW_VMAX], lv->w[1], tau, t_n, t_0, rows[ROW_PMIN], rows[ROW_PMAX], fd->lo + o,
               fd->hi + o);
    return surface;
}

/* Rows flow through two rings: nearness (decoded one row ahead of the plane test) and b
 * (the four rows a level-1 row spans). Level-1 row y is written once b of row 2y + 2 exists;
 * level 2 as its two rows are. t_n, t_0 and has_x are constants at each call, so every case
 * gets its own loops. */
static RVI_ALWAYS_INLINE void build_rows(source_args *sa, bool has_x, float t_n, float t_0)
{
    rvi_occ_feed *fd = sa->fd;
    uint32_t w = sa->feed->width, h = sa->feed->height;
    const float tau = sa->tau;
    /* The padding lets the neighbour reads at either end go without a special case (and
     * without a scalar tail in the loops). */
    size_t stride = RVI_FEED_STRIDE(fd->cap_w);
    float *rows[RVI_FEED_ROWS];
    for (int i = 0; i < RVI_FEED_ROWS; i++)
        rows[i] = fd->rows + RVI_FEED_PAD + (size_t)i * stride;
    for (int i = 0; i < 3; i++)
        rows[ROW_NEAR + i][-1] = rows[ROW_NEAR + i][w] = NAN;
    for (int i = ROW_VMIN; i <= ROW_NONE; i++)
        for (int k = 1; k <= RVI_FEED_PAD; k++)
            rows[i][-k] = rows[i][w - 1 + k] = INFINITY;
    for (uint32_t i = 0; i < w; i++)
        rows[ROW_NONE][i] = INFINITY;
    decode_row_k k;
    decode_constants(sa->dec, tau, w, &k);
    uint32_t surface = 0, next = 0; /* next: the level-1 row to write */
    uint32_t samples[3] = { 0, 0, 0 }; /* of the rows in the nearness ring */
    bool empty[4] = { true, true, true, true }; /* of the rows in the b ring */
    const rvi_feed_levels *lv = &fd->levels;
    for (uint32_t j = 0; j <= h; j++) {
        /* Decode row j; the plane test of row j - 1 (rows 0 and h - 1 prove nothing). */
        if (j < h)
            samples[j % 3] = decode_into(sa, &k, j, has_x, t_n, t_0, rows[ROW_NEAR + j % 3], rows[ROW_CONVERT]);
        if (j == 0)
            continue;
        uint32_t p = j - 1;
        float *b = rows[ROW_B + p % 4];
        empty[p % 4] = p == 0 || p + 1 >= h || samples[p % 3] == 0;
        if (empty[p % 4]) {
            for (uint32_t i = 0; i < w; i++)
                b[i] = INFINITY;
        } else {
            plane_row(rows[ROW_NEAR + (p - 1) % 3], rows[ROW_NEAR + p % 3], rows[ROW_NEAR + j % 3], w, 0.5f * tau,
                      t_n, t_0, b);
        }
        for (; next < lv->h[1] && 2 * next + 2 <= p; next++) {
            surface += first_level_row(fd, rows, empty, next, w, h, tau, t_n, t_0);
            if (lv->count > 2 && next % 2 == 1)
                level_row(fd, 1, next / 2);
        }
    }
    for (; next < lv->h[1]; next++) { /* the last rows: b beyond the image is +inf */
        surface += first_level_row(fd, rows, empty, next, w, h, tau, t_n, t_0);
        if (lv->count > 2 && (next % 2 == 1 || next + 1 == lv->h[1]))
            level_row(fd, 1, next / 2);
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
