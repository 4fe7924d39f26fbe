/* Object tests of the occlusion buffer (DESIGN.md §4).
 *
 * A test projects the object's 8 corners with float rows prepared per frame (relative to
 * the eye, so float error scales with distance, and that error is bounded and charged
 * against culling), takes the touched texel rectangle and the object's nearest point, and
 * asks the max-depth pyramid whether every touched texel is strictly nearer (hierarchical
 * Z, Greene, Kass & Miller 1993): the level where the rectangle spans at most 2 x 2 texels
 * answers at once, and only texels that fail there are refined.
 *
 * World-space boxes in batches go through an 8-lane structure-of-arrays kernel written as
 * plain C loops for the compiler to vectorise; on x86 an AVX2 build of the same source is
 * chosen at run time. Both give identical answers (same operations, same order). */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if RVI_OCC_X86_WIDE
#include <immintrin.h>
#endif

#define F_EPS (1.0f / 16777216.0f)

/* ---- the pyramid lookups --------------------------------------------------------------- */

static inline uint32_t bit_length(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return x ? 32u - (uint32_t)__builtin_clz(x) : 0u;
#else
    uint32_t n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
#endif
}

/* Refines the texels of level k that failed: descends only into failing texels. */
static bool hz_refine(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v, uint32_t k)
{
    const float *lv = occ->texels + occ->level_offset[k];
    uint32_t lw = occ->level_w[k];
    struct { int32_t level, x, y; } stack[64]; /* <= 4 + 3 per level */
    int sp = 0;
    for (int32_t y = y0 >> k; y <= (y1 >> k); y++)
        for (int32_t x = x0 >> k; x <= (x1 >> k); x++)
            if (!(lv[(size_t)y * lw + (uint32_t)x] > v)) {
                stack[sp].level = (int32_t)k;
                stack[sp].x = x;
                stack[sp].y = y;
                sp++;
            }
    while (sp > 0) {
        sp--;
        int32_t l = stack[sp].level - 1, px = stack[sp].x, py = stack[sp].y;
        const float *cl = occ->texels + occ->level_offset[l];
        uint32_t cw = occ->level_w[l];
        int32_t cx0 = 2 * px > (x0 >> l) ? 2 * px : (x0 >> l);
        int32_t cx1 = 2 * px + 1 < (x1 >> l) ? 2 * px + 1 : (x1 >> l);
        int32_t cy0 = 2 * py > (y0 >> l) ? 2 * py : (y0 >> l);
        int32_t cy1 = 2 * py + 1 < (y1 >> l) ? 2 * py + 1 : (y1 >> l);
        for (int32_t y = cy0; y <= cy1; y++)
            for (int32_t x = cx0; x <= cx1; x++)
                if (!(cl[(size_t)y * cw + (uint32_t)x] > v)) {
                    if (l == 0)
                        return false;
                    stack[sp].level = l;
                    stack[sp].x = x;
                    stack[sp].y = y;
                    sp++;
                }
    }
    return true;
}

/* The pyramid as the lookups need it, copied once per batch into a local (so that the
 * output byte stores cannot make the compiler reload it). */
typedef struct hz_levels {
    const float *level[RV_OCCLUSION_MAX_LEVELS];
    size_t width[RV_OCCLUSION_MAX_LEVELS];
    int32_t offset32[16], width32[16]; /* the same as indices, for the AVX2 gathers */
    uint32_t top;
} hz_levels;

static inline hz_levels hz_levels_of(const rv_occlusion *occ)
{
    hz_levels h;
    memset(h.offset32, 0, sizeof h.offset32);
    memset(h.width32, 0, sizeof h.width32);
    for (uint32_t l = 0; l < occ->level_count; l++) {
        h.level[l] = occ->texels + occ->level_offset[l];
        h.width[l] = occ->level_w[l];
        h.offset32[l] = (int32_t)occ->level_offset[l]; /* < 2^31: at most 4/3 of 8192^2 */
        h.width32[l] = (int32_t)occ->level_w[l];
    }
    h.top = occ->level_count - 1;
    return h;
}

/* True when every texel of [x0, x1] x [y0, y1] (level 0, inclusive) is strictly nearer
 * than v: at most four reads at the level where the rectangle spans 2 x 2 texels. */
static inline bool hz_hidden(const rv_occlusion *occ, const hz_levels *h, int32_t x0, int32_t y0, int32_t x1,
                             int32_t y1, float v)
{
    /* The finest level where both spans touch at most two texels: a span of d texel steps
     * does at level k whenever d <= 2^k. */
    int32_t dx = x1 - x0 - 1, dy = y1 - y0 - 1;
    uint32_t k = bit_length((uint32_t)(dx > 0 ? dx : 0) | (uint32_t)(dy > 0 ? dy : 0));
    k = k < h->top ? k : h->top;
    const float *lv = h->level[k];
    size_t lw = h->width[k];
    const float *r0 = lv + (size_t)(y0 >> k) * lw, *r1 = lv + (size_t)(y1 >> k) * lw;
    int32_t ax = x0 >> k, bx = x1 >> k;
    float m0 = r0[ax] < r0[bx] ? r0[ax] : r0[bx], m1 = r1[ax] < r1[bx] ? r1[ax] : r1[bx];
    if ((m0 < m1 ? m0 : m1) > v)
        return true;
    return k > 0 && hz_refine(occ, x0, y0, x1, y1, v, k);
}

static bool hz_hidden_once(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    hz_levels h = hz_levels_of(occ);
    return hz_hidden(occ, &h, x0, y0, x1, y1, v);
}

/* Smallest of n floats (n >= 1): SSE2 with an overlapping tail load. */
static inline float span_min(const float *p, int32_t n)
{
    float r = FLT_MAX;
    int32_t i = 0;
#if defined(__SSE2__)
    if (n >= 4) {
        __m128 m = _mm_loadu_ps(p);
        for (i = 4; i + 4 <= n; i += 4)
            m = _mm_min_ps(m, _mm_loadu_ps(p + i));
        m = _mm_min_ps(m, _mm_loadu_ps(p + n - 4));
        m = _mm_min_ps(m, _mm_movehl_ps(m, m));
        m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
        return _mm_cvtss_f32(m);
    }
#endif
    for (; i < n; i++)
        r = p[i] < r ? p[i] : r;
    return r;
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static float span_min_avx2(const float *p, int32_t n)
{
    if (n < 8)
        return span_min(p, n);
    __m256 m = _mm256_loadu_ps(p);
    for (int32_t i = 8; i + 8 <= n; i += 8)
        m = _mm256_min_ps(m, _mm256_loadu_ps(p + i));
    m = _mm256_min_ps(m, _mm256_loadu_ps(p + n - 8));
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}
#endif

/* Level 0 alone: the row minimum over the span must be strictly nearer than v. */
bool rvi_occ_flat_hidden(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    int32_t n = x1 - x0 + 1;
    for (int32_t y = y0; y <= y1; y++) {
        const float *row = occ->texels + (size_t)y * occ->width + x0;
#if RVI_OCC_X86_WIDE
        float m = occ->wide ? span_min_avx2(row, n) : span_min(row, n);
#else
        float m = span_min(row, n);
#endif
        if (!(m > v))
            return false;
    }
    return true;
}

/* ---- one object at a time (boxes with matrices, spheres, single tests) ------------------ */

typedef rvi_occ_footprint occ_footprint;

/* Clamps a texel-space rectangle (already widened by its margin) to the buffer: RVI_OCC_ON,
 * RVI_OCC_AWAY (off screen) or 0 (not finite). Both bounds floor (a texel is touched when
 * the closed rectangle meets it). */
static inline int32_t clamp_rect(float fw, float fh, float xmin, float ymin, float xmax, float ymax, float nearness,
                                 occ_footprint *fp)
{
    fp->on = 0;
    if (!(nearness < FLT_MAX && nearness > -FLT_MAX && xmin <= xmax && ymin <= ymax))
        return 0;
    if (!(xmax >= 0 && xmin <= fw && ymax >= 0 && ymin <= fh))
        return fp->on = RVI_OCC_AWAY;
    xmin = xmin > 0 ? xmin : 0;
    ymin = ymin > 0 ? ymin : 0;
    fp->x0 = (int32_t)(xmin < fw - 1 ? xmin : fw - 1);
    fp->y0 = (int32_t)(ymin < fh - 1 ? ymin : fh - 1);
    fp->x1 = (int32_t)(xmax < fw - 1 ? xmax : fw - 1);
    fp->y1 = (int32_t)(ymax < fh - 1 ? ymax : fh - 1);
    fp->nearness = nearness;
    return fp->on = RVI_OCC_ON;
}

/* Projects a box given, per test row r (texel x, texel y, near, q), the value at the base
 * corner b[r] and the change along the three edges d0/d1/d2[r]; dist bounds the L1
 * distance of any corner (and of the terms that computed it) from the view's ref.
 * Anything but RVI_OCC_ON must be answered visible without a lookup: 0 when it crosses
 * the near plane or its projection is degenerate or not finite, RVI_OCC_AWAY when it is
 * wholly off screen. */
static int32_t project_box(const rv_occlusion *occ, const float b[4], const float d0[4], const float d1[4],
                        const float d2[4], float dist, occ_footprint *fp)
{
    const rvi_occ_view *v = &occ->view;
    float c[4][8];
    for (int r = 0; r < 4; r++) {
        float lo0 = b[r], lo1 = b[r] + d0[r], lo2 = b[r] + d1[r], lo3 = lo1 + d1[r];
        c[r][0] = lo0;
        c[r][1] = lo1;
        c[r][2] = lo2;
        c[r][3] = lo3;
        c[r][4] = lo0 + d2[r];
        c[r][5] = lo1 + d2[r];
        c[r][6] = lo2 + d2[r];
        c[r][7] = lo3 + d2[r];
    }
    float nmin = c[2][0], qmin = c[3][0], qmax = c[3][0];
    for (int k = 1; k < 8; k++) {
        nmin = c[2][k] < nmin ? c[2][k] : nmin;
        qmin = c[3][k] < qmin ? c[3][k] : qmin;
        qmax = c[3][k] > qmax ? c[3][k] : qmax;
    }
    fp->on = 0;
    if (!(nmin > v->err_mul[2] * dist + v->err_add[2]))
        return 0; /* crosses (or lies before) the near plane, or NaN */
    float xmin, xmax, ymin, ymax, margin, nearness;
    if (v->perspective) {
        float wc = qmin - (v->err_mul[3] * dist + v->err_add[3]);
        if (!(wc > 0))
            return 0;
        nearness = (1.0f / wc) * (1.0f + 4 * F_EPS);
        float inv = 1.0f / c[3][0];
        xmin = xmax = c[0][0] * inv;
        ymin = ymax = c[1][0] * inv;
        for (int k = 1; k < 8; k++) {
            inv = 1.0f / c[3][k];
            float x = c[0][k] * inv, y = c[1][k] * inv;
            xmin = x < xmin ? x : xmin;
            xmax = x > xmax ? x : xmax;
            ymin = y < ymin ? y : ymin;
            ymax = y > ymax ? y : ymax;
        }
        margin = (v->rect_mul * dist + v->rect_add) * nearness + 1e-3f;
    } else {
        nearness = qmax + (v->err_mul[3] * dist + v->err_add[3]);
        xmin = xmax = c[0][0];
        ymin = ymax = c[1][0];
        for (int k = 1; k < 8; k++) {
            xmin = c[0][k] < xmin ? c[0][k] : xmin;
            xmax = c[0][k] > xmax ? c[0][k] : xmax;
            ymin = c[1][k] < ymin ? c[1][k] : ymin;
            ymax = c[1][k] > ymax ? c[1][k] : ymax;
        }
        margin = v->rect_mul * dist + v->rect_add + 1e-3f;
    }
    return clamp_rect((float)occ->width, (float)occ->height, xmin - margin, ymin - margin, xmax + margin,
                      ymax + margin, nearness, fp);
}

/* A local box under an affine matrix (column-major); NULL = world space. */
static int32_t footprint_box(const rv_occlusion *occ, const float min[3], const float max[3], const float *m,
                          occ_footprint *fp)
{
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const rvi_occ_view *v = &occ->view;
    if (!m)
        m = identity;
    float base[3], e[3][3], dist = 0;
    float s[3] = { max[0] - min[0], max[1] - min[1], max[2] - min[2] };
    for (int i = 0; i < 3; i++) {
        float t0 = m[i] * min[0], t1 = m[4 + i] * min[1], t2 = m[8 + i] * min[2], t3 = m[12 + i] - v->ref[i];
        base[i] = t0 + t1 + t2 + t3;
        dist += fabsf(t0) + fabsf(t1) + fabsf(t2) + fabsf(t3);
        for (int a = 0; a < 3; a++) {
            e[a][i] = m[a * 4 + i] * s[a];
            dist += fabsf(e[a][i]);
        }
    }
    float b[4], d0[4], d1[4], d2[4];
    for (int r = 0; r < 4; r++) {
        const float *row = v->rows[r];
        b[r] = row[0] * base[0] + row[1] * base[1] + row[2] * base[2] + row[3];
        d0[r] = row[0] * e[0][0] + row[1] * e[0][1] + row[2] * e[0][2];
        d1[r] = row[0] * e[1][0] + row[1] * e[1][1] + row[2] * e[1][2];
        d2[r] = row[0] * e[2][0] + row[1] * e[2][1] + row[2] * e[2][2];
    }
    return project_box(occ, b, d0, d1, d2, dist, fp);
}

/* A sphere, through its world-space bounding box. */
static int32_t footprint_sphere(const rv_occlusion *occ, const float center[3], float radius, const float *m,
                             occ_footprint *fp)
{
    float c[3], r = radius;
    if (m) {
        float mag = 0, s2 = 0;
        for (int i = 0; i < 3; i++) {
            float t0 = m[i] * center[0], t1 = m[4 + i] * center[1], t2 = m[8 + i] * center[2];
            c[i] = t0 + t1 + t2 + m[12 + i];
            mag += fabsf(t0) + fabsf(t1) + fabsf(t2) + fabsf(m[12 + i]);
        }
        for (int a = 0; a < 3; a++) {
            float l2 = m[a * 4] * m[a * 4] + m[a * 4 + 1] * m[a * 4 + 1] + m[a * 4 + 2] * m[a * 4 + 2];
            s2 = l2 > s2 ? l2 : s2;
        }
        /* Largest axis scale, rounded up, plus the centre's own rounding. */
        r = radius * sqrtf(s2) * (1.0f + 1e-6f) + mag * (8 * F_EPS);
    } else {
        memcpy(c, center, sizeof c);
    }
    float mn[3], mx[3];
    for (int i = 0; i < 3; i++) { /* outward rounding of the box's own corners */
        mn[i] = c[i] - r;
        mx[i] = c[i] + r;
        mn[i] -= fabsf(mn[i]) * (2 * F_EPS);
        mx[i] += fabsf(mx[i]) * (2 * F_EPS);
    }
    return footprint_box(occ, mn, mx, NULL, fp);
}

/* ---- eight world boxes at a time ------------------------------------------------------- */

typedef struct occ_block {
    int32_t x0[8], y0[8], x1[8], y1[8];
    float nearness[8];
    int32_t on[8];  /* as rvi_occ_footprint.on */
    int32_t bad[8]; /* 0 valid, 1 not finite, 2 min > max */
} occ_block;

/* The world-box test of project_box, for lane j of an occ_block: branch-free so that the
 * loop over eight lanes vectorises (keep it so: check with -fopt-info-vec). The near and
 * (orthographic) depth and screen extents are separable over the corners: a row's minimum
 * is b + the sum of min(d_i, 0). Single world-box tests run the same code on one lane, so
 * they answer exactly as the batch does. */
typedef struct kernel_consts {
    float r[16], ref0, ref1, ref2, en_m, en_a, eq_m, eq_a, rect_m, rect_a, fw, fh;
} kernel_consts;

static RVI_ALWAYS_INLINE kernel_consts kernel_setup(const rvi_occ_view *v, float fw, float fh)
{
    kernel_consts k;
    memcpy(k.r, v->rows, sizeof k.r);
    k.ref0 = v->ref[0];
    k.ref1 = v->ref[1];
    k.ref2 = v->ref[2];
    k.en_m = v->err_mul[2];
    k.en_a = v->err_add[2];
    k.eq_m = v->err_mul[3];
    k.eq_a = v->err_add[3];
    k.rect_m = v->rect_mul;
    k.rect_a = v->rect_add;
    k.fw = fw;
    k.fh = fh;
    return k;
}

static RVI_ALWAYS_INLINE void kernel_lane(const kernel_consts kc, float lx, float ly, float lz, float hx, float hy,
                                          float hz, occ_block *restrict out, int j, const bool persp)
{
    const float *r = kc.r;
    const float ref0 = kc.ref0, ref1 = kc.ref1, ref2 = kc.ref2, fw = kc.fw, fh = kc.fh;
    const float en_m = kc.en_m, en_a = kc.en_a, eq_m = kc.eq_m, eq_a = kc.eq_a;
    const float rect_m = kc.rect_m, rect_a = kc.rect_a;
    int32_t fin = (fabsf(lx) <= FLT_MAX) & (fabsf(ly) <= FLT_MAX) & (fabsf(lz) <= FLT_MAX) &
                  (fabsf(hx) <= FLT_MAX) & (fabsf(hy) <= FLT_MAX) & (fabsf(hz) <= FLT_MAX);
    int32_t ord = (lx <= hx) & (ly <= hy) & (lz <= hz);
    out->bad[j] = (1 - fin) + 2 * fin * (1 - ord); /* 0, 1 not finite, 2 disordered */
    float ox = lx - ref0, oy = ly - ref1, oz = lz - ref2;
    float sx = hx - lx, sy = hy - ly, sz = hz - lz;
    float dist = fabsf(ox) + fabsf(oy) + fabsf(oz) + fabsf(sx) + fabsf(sy) + fabsf(sz);
    /* rows: 0 texel x, 1 texel y, 2 near, 3 w or nearness; r[4 * row + column] */
    float xb = r[0] * ox + r[1] * oy + r[2] * oz + r[3], xd0 = r[0] * sx, xd1 = r[1] * sy, xd2 = r[2] * sz;
    float yb = r[4] * ox + r[5] * oy + r[6] * oz + r[7], yd0 = r[4] * sx, yd1 = r[5] * sy, yd2 = r[6] * sz;
    float nb = r[8] * ox + r[9] * oy + r[10] * oz + r[11], nd0 = r[8] * sx, nd1 = r[9] * sy, nd2 = r[10] * sz;
    float qb = r[12] * ox + r[13] * oy + r[14] * oz + r[15], qd0 = r[12] * sx, qd1 = r[13] * sy,
          qd2 = r[14] * sz;
    float nmin = nb + (nd0 < 0 ? nd0 : 0) + (nd1 < 0 ? nd1 : 0) + (nd2 < 0 ? nd2 : 0);
    int32_t ok = fin & ord & (nmin > en_m * dist + en_a);
    float xmin, xmax, ymin, ymax, nearness, margin;
    if (persp) {
        float qmin = qb + (qd0 < 0 ? qd0 : 0) + (qd1 < 0 ? qd1 : 0) + (qd2 < 0 ? qd2 : 0);
        float wc = qmin - (eq_m * dist + eq_a);
        ok &= wc > 0;
        nearness = (1.0f / wc) * (1.0f + 4 * F_EPS); /* lanes with wc <= 0 are off */
        float x1 = xb + xd0, x2 = xb + xd1, x3 = x1 + xd1;
        float y1 = yb + yd0, y2 = yb + yd1, y3 = y1 + yd1;
        float w1 = qb + qd0, w2 = qb + qd1, w3 = w1 + qd1;
        /* Corner by corner into running bounds: fewer live values than a min tree. */
        float inv = 1.0f / qb, px = xb * inv, py = yb * inv;
        xmin = xmax = px;
        ymin = ymax = py;
#define RVI_CORNER(X, Y, W)                                                                    \
    inv = 1.0f / (W);                                                                          \
    px = (X) * inv;                                                                            \
    py = (Y) * inv;                                                                            \
    xmin = px < xmin ? px : xmin;                                                              \
    xmax = px > xmax ? px : xmax;                                                              \
    ymin = py < ymin ? py : ymin;                                                              \
    ymax = py > ymax ? py : ymax;
        RVI_CORNER(x1, y1, w1)
        RVI_CORNER(x2, y2, w2)
        RVI_CORNER(x3, y3, w3)
        RVI_CORNER(xb + xd2, yb + yd2, qb + qd2)
        RVI_CORNER(x1 + xd2, y1 + yd2, w1 + qd2)
        RVI_CORNER(x2 + xd2, y2 + yd2, w2 + qd2)
        RVI_CORNER(x3 + xd2, y3 + yd2, w3 + qd2)
#undef RVI_CORNER
        margin = (rect_m * dist + rect_a) * nearness + 1e-3f;
    } else {
        nearness = qb + (qd0 > 0 ? qd0 : 0) + (qd1 > 0 ? qd1 : 0) + (qd2 > 0 ? qd2 : 0) + (eq_m * dist + eq_a);
        xmin = xb + (xd0 < 0 ? xd0 : 0) + (xd1 < 0 ? xd1 : 0) + (xd2 < 0 ? xd2 : 0);
        xmax = xb + (xd0 > 0 ? xd0 : 0) + (xd1 > 0 ? xd1 : 0) + (xd2 > 0 ? xd2 : 0);
        ymin = yb + (yd0 < 0 ? yd0 : 0) + (yd1 < 0 ? yd1 : 0) + (yd2 < 0 ? yd2 : 0);
        ymax = yb + (yd0 > 0 ? yd0 : 0) + (yd1 > 0 ? yd1 : 0) + (yd2 > 0 ? yd2 : 0);
        margin = rect_m * dist + rect_a + 1e-3f;
    }
    xmin -= margin;
    ymin -= margin;
    xmax += margin;
    ymax += margin;
    ok &= (nearness < FLT_MAX) & (nearness > -FLT_MAX);
    int32_t seen = (xmax >= 0) & (xmin <= fw) & (ymax >= 0) & (ymin <= fh);
    /* Clamp (this also turns NaN into 0) before converting. */
    xmin = xmin > 0 ? xmin : 0;
    ymin = ymin > 0 ? ymin : 0;
    xmax = xmax > 0 ? xmax : 0;
    ymax = ymax > 0 ? ymax : 0;
    out->x0[j] = (int32_t)(xmin < fw - 1 ? xmin : fw - 1);
    out->y0[j] = (int32_t)(ymin < fh - 1 ? ymin : fh - 1);
    out->x1[j] = (int32_t)(xmax < fw - 1 ? xmax : fw - 1);
    out->y1[j] = (int32_t)(ymax < fh - 1 ? ymax : fh - 1);
    out->nearness[j] = nearness;
    out->on[j] = ok * (2 - seen); /* RVI_OCC_ON, RVI_OCC_AWAY or 0, branch-free */
}

static RVI_ALWAYS_INLINE void block_kernel(const rvi_occ_view *v, float fw, float fh, const float *const mn[3],
                                           const float *const mx[3], uint32_t i0, occ_block *restrict out,
                                           const bool persp)
{
    const float *restrict ax = mn[0] + i0, *restrict ay = mn[1] + i0, *restrict az = mn[2] + i0;
    const float *restrict bx = mx[0] + i0, *restrict by = mx[1] + i0, *restrict bz = mx[2] + i0;
    const kernel_consts kc = kernel_setup(v, fw, fh);
    occ_block blk; /* built locally, then copied: the stores cannot alias the inputs */
    for (int j = 0; j < 8; j++)
        kernel_lane(kc, ax[j], ay[j], az[j], bx[j], by[j], bz[j], &blk, j, persp);
    *out = blk;
}

typedef void (*block_fn)(const rvi_occ_view *, float, float, const float *const[3], const float *const[3], uint32_t,
                         occ_block *);

static void block_persp(const rvi_occ_view *v, float fw, float fh, const float *const mn[3],
                        const float *const mx[3], uint32_t i0, occ_block *out)
{
    block_kernel(v, fw, fh, mn, mx, i0, out, true);
}

static void block_ortho(const rvi_occ_view *v, float fw, float fh, const float *const mn[3],
                        const float *const mx[3], uint32_t i0, occ_block *out)
{
    block_kernel(v, fw, fh, mn, mx, i0, out, false);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void block_persp_avx2(const rvi_occ_view *v, float fw, float fh,
                                                             const float *const mn[3], const float *const mx[3],
                                                             uint32_t i0, occ_block *out)
{
    block_kernel(v, fw, fh, mn, mx, i0, out, true);
}

RVI_TARGET_AVX2 static void block_ortho_avx2(const rvi_occ_view *v, float fw, float fh,
                                                             const float *const mn[3], const float *const mx[3],
                                                             uint32_t i0, occ_block *out)
{
    block_kernel(v, fw, fh, mn, mx, i0, out, false);
}
#endif

#if RVI_OCC_X86_WIDE
/* hz_hidden for the eight lanes of a block at once (AVX2 gathers); lanes whose coarse
 * answer is "maybe visible" at a level above 0 are refined one by one. Returns the
 * visibility bits (bit j set: lane j visible). Identical answers to hz_hidden. */
RVI_TARGET_AVX2 static uint32_t block_lookup_avx2(const rv_occlusion *occ, const hz_levels *h,
                                                  const occ_block *blk)
{
    __m256i x0 = _mm256_loadu_si256((const __m256i *)blk->x0), x1 = _mm256_loadu_si256((const __m256i *)blk->x1);
    __m256i y0 = _mm256_loadu_si256((const __m256i *)blk->y0), y1 = _mm256_loadu_si256((const __m256i *)blk->y1);
    __m256 v = _mm256_loadu_ps(blk->nearness);
    __m256i on = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)blk->on), _mm256_set1_epi32(RVI_OCC_ON));
    /* k = bit length of (max(dx - 1, 0) | max(dy - 1, 0)), as in hz_hidden: the exponent
     * of its float value (exact below 2^24). */
    __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
    __m256i span = _mm256_or_si256(_mm256_max_epi32(_mm256_sub_epi32(_mm256_sub_epi32(x1, x0), one), zero),
                                   _mm256_max_epi32(_mm256_sub_epi32(_mm256_sub_epi32(y1, y0), one), zero));
    __m256i e = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(span)), 23);
    __m256i k = _mm256_max_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(126)), _mm256_setzero_si256());
    k = _mm256_min_epi32(k, _mm256_set1_epi32((int32_t)h->top));
    __m256i ax = _mm256_srav_epi32(x0, k), bx = _mm256_srav_epi32(x1, k);
    __m256i ay = _mm256_srav_epi32(y0, k), by = _mm256_srav_epi32(y1, k);
    __m256i off = _mm256_i32gather_epi32(h->offset32, k, 4), lw = _mm256_i32gather_epi32(h->width32, k, 4);
    __m256i i00 = _mm256_add_epi32(_mm256_add_epi32(off, _mm256_mullo_epi32(ay, lw)), ax);
    __m256i dx = _mm256_sub_epi32(bx, ax), dyw = _mm256_mullo_epi32(_mm256_sub_epi32(by, ay), lw);
    __m256i i01 = _mm256_add_epi32(i00, dx), i10 = _mm256_add_epi32(i00, dyw), i11 = _mm256_add_epi32(i10, dx);
    const float *t = occ->texels;
    __m256 m = _mm256_min_ps(_mm256_min_ps(_mm256_i32gather_ps(t, i00, 4), _mm256_i32gather_ps(t, i01, 4)),
                             _mm256_min_ps(_mm256_i32gather_ps(t, i10, 4), _mm256_i32gather_ps(t, i11, 4)));
    __m256 hid = _mm256_and_ps(_mm256_cmp_ps(m, v, _CMP_GT_OQ), _mm256_castsi256_ps(on));
    uint32_t hidden = (uint32_t)_mm256_movemask_ps(hid);
    __m256 refine = _mm256_andnot_ps(hid, _mm256_castsi256_ps(_mm256_andnot_si256(
                                              _mm256_cmpeq_epi32(k, _mm256_setzero_si256()), on)));
    uint32_t todo = (uint32_t)_mm256_movemask_ps(refine);
    if (todo) {
        int32_t ks[8];
        _mm256_storeu_si256((__m256i *)ks, k);
        for (uint32_t j = 0; j < 8; j++)
            if ((todo >> j) & 1u && hz_refine(occ, blk->x0[j], blk->y0[j], blk->x1[j], blk->y1[j], blk->nearness[j],
                                              (uint32_t)ks[j]))
                hidden |= 1u << j;
    }
    return ~hidden & 0xFFu;
}
#endif

bool rvi_occ_cpu_wide(void)
{
#if RVI_OCC_X86_WIDE
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

static block_fn pick_kernel(const rv_occlusion *occ)
{
    bool persp = occ->view.perspective;
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        return persp ? block_persp_avx2 : block_ortho_avx2;
#endif
    return persp ? block_persp : block_ortho;
}

void rvi_occ_footprints(const rv_occlusion *occ, const rvi_occ_input *in, uint32_t count, const float *matrices,
                        rvi_occ_footprint *out)
{
    block_fn kernel = pick_kernel(occ);
    float fw = (float)occ->width, fh = (float)occ->height;
    float pad[6][8];
    const float *pmn[3] = { pad[0], pad[1], pad[2] }, *pmx[3] = { pad[3], pad[4], pad[5] };
    uint32_t idx[8], n = 0;
    occ_block blk;
    for (uint32_t i = 0; i <= count; i++) {
        if (i < count && in[i].matrix >= 0) {
            footprint_box(occ, in[i].min, in[i].max, matrices + (size_t)16 * (uint32_t)in[i].matrix, &out[i]);
            continue;
        }
        if (i < count) {
            for (int a = 0; a < 3; a++) {
                pad[a][n] = in[i].min[a];
                pad[3 + a][n] = in[i].max[a];
            }
            idx[n++] = i;
        }
        if (n == 8 || (i == count && n > 0)) {
            for (uint32_t j = n; j < 8; j++)
                for (int a = 0; a < 6; a++)
                    pad[a][j] = pad[a][n - 1];
            kernel(&occ->view, fw, fh, pmn, pmx, 0, &blk);
            for (uint32_t j = 0; j < n; j++) {
                rvi_occ_footprint *f = &out[idx[j]];
                f->x0 = blk.x0[j];
                f->y0 = blk.y0[j];
                f->x1 = blk.x1[j];
                f->y1 = blk.y1[j];
                f->nearness = blk.nearness[j];
                f->on = blk.on[j];
            }
            n = 0;
        }
    }
}

/* ---- entry points ---------------------------------------------------------------------- */

static inline bool ready_for_tests(rv_occlusion *occ)
{
    if (occ->width == 0 || occ->state == RVI_OCC_NO_VIEW)
        return false;
    if (occ->state == RVI_OCC_OPEN)
        rv_occlusion_freeze(occ);
    return true;
}

/* One world box through lane 0 of the batch kernel (identical answers to the batch). */
static int32_t footprint_world_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                   occ_footprint *fp)
{
    occ_block blk;
    float fw = (float)occ->width, fh = (float)occ->height;
    const kernel_consts kc = kernel_setup(&occ->view, fw, fh);
    if (occ->view.perspective)
        kernel_lane(kc, min[0], min[1], min[2], max[0], max[1], max[2], &blk, 0, true);
    else
        kernel_lane(kc, min[0], min[1], min[2], max[0], max[1], max[2], &blk, 0, false);
    fp->x0 = blk.x0[0];
    fp->y0 = blk.y0[0];
    fp->x1 = blk.x1[0];
    fp->y1 = blk.y1[0];
    fp->nearness = blk.nearness[0];
    return fp->on = blk.on[0];
}

bool rvi_occlusion_box_visible(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix)
{
    if (!ready_for_tests(occ))
        return true;
    occ->stats.tests++;
    occ_footprint fp;
    int32_t on = matrix ? footprint_box(occ, min, max, matrix, &fp) : footprint_world_box(occ, min, max, &fp);
    if (on != RVI_OCC_ON || !hz_hidden_once(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness))
        return true;
    occ->stats.culled++;
    return false;
}

bool rvi_occlusion_sphere_visible(rv_occlusion *occ, const float center[3], float radius, const float *matrix)
{
    if (!ready_for_tests(occ))
        return true;
    occ->stats.tests++;
    occ_footprint fp;
    if (!(radius >= 0) || footprint_sphere(occ, center, radius, matrix, &fp) != RVI_OCC_ON ||
        !hz_hidden_once(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness))
        return true;
    occ->stats.culled++;
    return false;
}

rv_result rv_occlusion_test_box(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16],
                                bool *out_visible)
{
    if (!out_visible)
        return RV_ERR_INVALID_ARG;
    *out_visible = true;
    if (!occ || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    RVI_TRY(rvi_occ_check_box(min, max, matrix));
    *out_visible = rvi_occlusion_box_visible(occ, min, max, matrix);
    return RV_OK;
}

rv_result rv_occlusion_test_sphere(rv_occlusion *occ, const float center[3], float radius, const float matrix[16],
                                   bool *out_visible)
{
    if (!out_visible)
        return RV_ERR_INVALID_ARG;
    *out_visible = true;
    if (!occ || !center)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    if (!rvi_finite_n(center, 3) || !isfinite(radius) || (matrix && !rvi_finite_n(matrix, 16)))
        return RV_ERR_NOT_FINITE;
    if (radius < 0 || (matrix && !rvi_occ_affine_ok(matrix)))
        return RV_ERR_INVALID_ARG;
    *out_visible = rvi_occlusion_sphere_visible(occ, center, radius, matrix);
    return RV_OK;
}

static rv_result batch_prologue(rv_occlusion *occ, uint32_t first, uint32_t count, uint8_t *out, bool *active)
{
    if (!occ || !out || count > UINT32_MAX - first)
        return RV_ERR_INVALID_ARG;
    *active = ready_for_tests(occ);
    if (!*active)
        memset(out + first, 1, count);
    return RV_OK;
}

static rv_result item_code(int32_t bad)
{
    return bad == 0 ? RV_OK : bad == 1 ? RV_ERR_NOT_FINITE : RV_ERR_INVALID_ARG;
}

rv_result rvi_occlusion_test_world_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first,
                                         uint32_t count, uint8_t *out_visible, bool use_pyramid)
{
    if (!boxes || !boxes->min[0] || !boxes->min[1] || !boxes->min[2] || !boxes->max[0] || !boxes->max[1] ||
        !boxes->max[2])
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    const rvi_occ_view *v = &occ->view;
    block_fn kernel = pick_kernel(occ);
    float fw = (float)occ->width, fh = (float)occ->height;
    int32_t first_bad = 0;
    uint64_t culled = 0;
    occ_block blk;
    const hz_levels levels = hz_levels_of(occ);
    uint32_t end = first + count;
    for (uint32_t i = first; i < end; i += 8) {
        uint32_t n = end - i < 8 ? end - i : 8;
        if (n == 8) {
            kernel(v, fw, fh, boxes->min, boxes->max, i, &blk);
        } else {
            /* The tail: pad the lanes with copies of the last box. */
            float pad[6][8];
            for (int a = 0; a < 3; a++)
                for (uint32_t j = 0; j < 8; j++) {
                    uint32_t s = i + (j < n ? j : n - 1);
                    pad[a][j] = boxes->min[a][s];
                    pad[3 + a][j] = boxes->max[a][s];
                }
            const float *pmn[3] = { pad[0], pad[1], pad[2] }, *pmx[3] = { pad[3], pad[4], pad[5] };
            kernel(v, fw, fh, pmn, pmx, 0, &blk);
        }
        uint8_t visible[8];
        int32_t any_bad = 0;
#if RVI_OCC_X86_WIDE
        if (occ->wide && use_pyramid) {
            uint32_t bits = block_lookup_avx2(occ, &levels, &blk);
            for (uint32_t j = 0; j < n; j++) {
                visible[j] = (uint8_t)((bits >> j) & 1u);
                culled += visible[j] ^ 1u;
                any_bad |= blk.bad[j];
            }
        } else
#endif
        for (uint32_t j = 0; j < n; j++) {
            bool hidden = false;
            if (blk.on[j] == RVI_OCC_ON)
                hidden = use_pyramid ? hz_hidden(occ, &levels, blk.x0[j], blk.y0[j], blk.x1[j], blk.y1[j],
                                                 blk.nearness[j])
                                     : rvi_occ_flat_hidden(occ, blk.x0[j], blk.y0[j], blk.x1[j], blk.y1[j],
                                                           blk.nearness[j]);
            visible[j] = !hidden;
            culled += hidden;
            any_bad |= blk.bad[j];
        }
        if (n == 8)
            memcpy(out_visible + i, visible, 8);
        else
            memcpy(out_visible + i, visible, n);
        if (any_bad && !first_bad)
            for (uint32_t j = 0; j < n && !first_bad; j++)
                first_bad = blk.bad[j];
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return item_code(first_bad);
}

rv_result rv_occlusion_test_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first, uint32_t count,
                                  uint8_t *out_visible)
{
    if (!boxes || !boxes->matrices)
        return rvi_occlusion_test_world_boxes(occ, boxes, first, count, out_visible, true);
    if (!boxes->min[0] || !boxes->min[1] || !boxes->min[2] || !boxes->max[0] || !boxes->max[1] || !boxes->max[2])
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    rv_result first_error = RV_OK;
    uint64_t culled = 0;
    for (uint32_t i = first; i < first + count; i++) {
        float lo[3] = { boxes->min[0][i], boxes->min[1][i], boxes->min[2][i] };
        float hi[3] = { boxes->max[0][i], boxes->max[1][i], boxes->max[2][i] };
        const float *m = boxes->matrices + (size_t)16 * i;
        rv_result e = rvi_occ_check_box(lo, hi, m);
        occ_footprint fp;
        bool hidden = e == RV_OK && footprint_box(occ, lo, hi, m, &fp) == RVI_OCC_ON &&
                      hz_hidden_once(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness);
        out_visible[i] = !hidden;
        culled += hidden;
        if (e != RV_OK && first_error == RV_OK)
            first_error = e;
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return first_error;
}

rv_result rv_occlusion_test_spheres(rv_occlusion *occ, const rv_occlusion_spheres *spheres, uint32_t first,
                                    uint32_t count, uint8_t *out_visible)
{
    if (!spheres || !spheres->center[0] || !spheres->center[1] || !spheres->center[2] || !spheres->radius)
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    rv_result first_error = RV_OK;
    uint64_t culled = 0;
    for (uint32_t i = first; i < first + count; i++) {
        float c[3] = { spheres->center[0][i], spheres->center[1][i], spheres->center[2][i] };
        float radius = spheres->radius[i];
        const float *m = spheres->matrices ? spheres->matrices + (size_t)16 * i : NULL;
        rv_result e = RV_OK;
        if (!rvi_finite_n(c, 3) || !isfinite(radius) || (m && !rvi_finite_n(m, 16)))
            e = RV_ERR_NOT_FINITE;
        else if (radius < 0 || (m && !rvi_occ_affine_ok(m)))
            e = RV_ERR_INVALID_ARG;
        occ_footprint fp;
        bool hidden = e == RV_OK && footprint_sphere(occ, c, radius, m, &fp) == RVI_OCC_ON &&
                      hz_hidden_once(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness);
        out_visible[i] = !hidden;
        culled += hidden;
        if (e != RV_OK && first_error == RV_OK)
            first_error = e;
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return first_error;
}
