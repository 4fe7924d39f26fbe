/* Object tests of the occlusion buffer (docs/design.md §4).
 *
 * A test projects the object's 8 corners with float rows prepared per frame (relative to
 * the eye, so float error scales with distance, and that error is bounded and charged
 * against culling), takes the touched texel rectangle and the object's nearest point, and
 * asks the max-depth pyramid whether every touched texel is strictly nearer (hierarchical
 * Z, Greene, Kass & Miller 1993): the level where the rectangle spans at most 2 x 2 texels
 * answers at once, and only texels that fail there are refined.
 *
 * This file holds the lookups and the one-at-a-time paths (boxes with matrices, spheres,
 * single tests; the frame's eight at a time are in occlusion_lanes.c); world-space boxes
 * in batches go through occlusion_batch.c, whose kernel also answers single world-box
 * tests so that both agree exactly. A box's image beyond
 * its rectangle (front faces, outline, the part in view of one reaching before the near
 * plane) is worked out in occlusion_box_image.c. */
#include "occlusion_test.h"

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

/* Refines the texels of level k that failed: descends only into failing texels. */
bool rvi_occ_hz_refine(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v, uint32_t k)
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

/* rvi_occ_hz_hidden for one test, reading the level it needs straight from the buffer
 * (building the whole level table costs more than the lookup). */
static bool hz_hidden_once(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    uint32_t k = rvi_occ_hz_level(x0, y0, x1, y1, occ->level_count - 1);
    return rvi_occ_hz_look(occ, occ->texels + occ->level_offset[k], occ->level_w[k], k, x0, y0, x1, y1, v);
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
 * Anything but RVI_OCC_ON must be answered visible without a lookup: 0 when its
 * projection is degenerate or not finite, RVI_OCC_AWAY when it is wholly off screen. A
 * box reaching before the near plane is projected by its part in view
 * (rvi_occ_part_in_view, occlusion_box_image.c). */
static int32_t project_box(const rv_occlusion *occ, const float b[4], const float d0[4], const float d1[4],
                           const float d2[4], float dist, occ_footprint *fp)
{
    const rvi_occ_view *v = &occ->view;
    /* Per row: its minimum and maximum over the corners, and for texel x and y (divided
     * by w in perspective) theirs. Corner k is b + d0 (bit 0) + d1 (bit 1) + d2 (bit 2),
     * added in that order whichever way they are computed, so every path gives the same
     * floats. Any NaN answers visible. */
    float mn[4], mx[4];
#if defined(__SSE2__)
    const __m128 m0 = _mm_castsi128_ps(_mm_set_epi32(-1, 0, -1, 0)), m1 = _mm_castsi128_ps(_mm_set_epi32(-1, -1, 0, 0));
    __m128 lo[4], hi[4], bad = _mm_setzero_ps();
    for (int r = 0; r < 4; r++) {
        __m128 a = _mm_add_ps(_mm_set1_ps(b[r]), _mm_and_ps(m0, _mm_set1_ps(d0[r])));
        a = _mm_add_ps(a, _mm_and_ps(m1, _mm_set1_ps(d1[r])));
        lo[r] = a;
        hi[r] = _mm_add_ps(a, _mm_set1_ps(d2[r]));
        bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpunord_ps(lo[r], lo[r]), _mm_cmpunord_ps(hi[r], hi[r])));
    }
    fp->on = 0;
    if (_mm_movemask_ps(bad))
        return 0;
    if (v->perspective) {
        const __m128 one = _mm_set1_ps(1.0f);
        __m128 il = _mm_div_ps(one, lo[3]), ih = _mm_div_ps(one, hi[3]);
        for (int r = 0; r < 2; r++) {
            lo[r] = _mm_mul_ps(lo[r], il);
            hi[r] = _mm_mul_ps(hi[r], ih);
        }
    }
    for (int r = 0; r < 4; r++) {
        __m128 n = _mm_min_ps(lo[r], hi[r]), x = _mm_max_ps(lo[r], hi[r]);
        n = _mm_min_ps(n, _mm_movehl_ps(n, n));
        x = _mm_max_ps(x, _mm_movehl_ps(x, x));
        mn[r] = _mm_cvtss_f32(_mm_min_ss(n, _mm_shuffle_ps(n, n, 1)));
        mx[r] = _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps(x, x, 1)));
    }
#else
    float c[4][8];
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 8; k++) {
            float a = b[r] + ((k & 1) ? d0[r] : 0.0f);
            a = a + ((k & 2) ? d1[r] : 0.0f);
            c[r][k] = (k & 4) ? a + d2[r] : a;
        }
    fp->on = 0;
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 8; k++)
            if (c[r][k] != c[r][k])
                return 0;
    if (v->perspective)
        for (int k = 0; k < 8; k++) {
            float inv = 1.0f / c[3][k];
            c[0][k] *= inv;
            c[1][k] *= inv;
        }
    for (int r = 0; r < 4; r++) {
        mn[r] = mx[r] = c[r][0];
        for (int k = 1; k < 8; k++) {
            mn[r] = c[r][k] < mn[r] ? c[r][k] : mn[r];
            mx[r] = c[r][k] > mx[r] ? c[r][k] : mx[r];
        }
    }
#endif
    if (!(mn[2] > v->err_mul[2] * dist + v->err_add[2]))
    {   /* reaches before the near plane: its part in view */
        float r[4], near_part;
        int32_t part = rvi_occ_part_in_view(occ, b, d0, d1, d2, dist, r, &near_part);
        if (part != RVI_OCC_ON)
            return part == RVI_OCC_AWAY ? (fp->on = RVI_OCC_AWAY) : 0;
        return clamp_rect((float)occ->width, (float)occ->height, r[0], r[1], r[2], r[3], near_part, fp);
    }
    float margin, nearness;
    if (v->perspective) {
        float wc = mn[3] - (v->err_mul[3] * dist + v->err_add[3]);
        if (!(wc > 0))
            return 0;
        nearness = (1.0f / wc) * (1.0f + 4 * F_EPS);
        margin = (v->rect_mul * dist + v->rect_add) * nearness + 1e-3f;
    } else {
        nearness = mx[3] + (v->err_mul[3] * dist + v->err_add[3]);
        margin = v->rect_mul * dist + v->rect_add + 1e-3f;
    }
    return clamp_rect((float)occ->width, (float)occ->height, mn[0] - margin, mn[1] - margin, mx[0] + margin,
                      mx[1] + margin, nearness, fp);
}

/* A local box under an affine matrix (column-major); NULL = world space. With look, the
 * box's centre is looked at first (rvi_occ_seen_at, anywhere on the buffer), from the same
 * terms: seen there, the box is answered visible (0) before its footprint is made. The
 * centre is base + (e0 + e1 + e2) / 2 in float, a point of the box up to rounding; the look
 * only ever answers visible, so rounding costs a cull at worst. */
static RVI_ALWAYS_INLINE int32_t footprint_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                               const float *m, occ_footprint *fp, bool look)
{
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const rvi_occ_view *v = &occ->view;
    if (!m)
        m = identity;
    /* The base corner (min) relative to ref and the three edges, in world space; dist adds
     * up every term's magnitude. Lane i is world axis i (lane 3 is zero: the matrix is
     * affine); the rows then come out per lane r. Every path adds in the same order. */
    float s[3] = { max[0] - min[0], max[1] - min[1], max[2] - min[2] };
    float b[4], d[3][4], dist;
#if defined(__SSE2__)
    const __m128 sign = _mm_set1_ps(-0.0f);
    __m128 c0 = _mm_loadu_ps(m), c1 = _mm_loadu_ps(m + 4), c2 = _mm_loadu_ps(m + 8), c3 = _mm_loadu_ps(m + 12);
    __m128 t0 = _mm_mul_ps(c0, _mm_set1_ps(min[0])), t1 = _mm_mul_ps(c1, _mm_set1_ps(min[1]));
    __m128 t2 = _mm_mul_ps(c2, _mm_set1_ps(min[2]));
    __m128 t3 = _mm_sub_ps(c3, _mm_setr_ps(v->ref[0], v->ref[1], v->ref[2], 1.0f));
    __m128 base = _mm_add_ps(_mm_add_ps(_mm_add_ps(t0, t1), t2), t3);
    __m128 e0 = _mm_mul_ps(c0, _mm_set1_ps(s[0])), e1 = _mm_mul_ps(c1, _mm_set1_ps(s[1]));
    __m128 e2 = _mm_mul_ps(c2, _mm_set1_ps(s[2]));
    __m128 mag = _mm_add_ps(_mm_add_ps(_mm_andnot_ps(sign, t0), _mm_andnot_ps(sign, t1)), _mm_andnot_ps(sign, t2));
    mag = _mm_add_ps(mag, _mm_andnot_ps(sign, t3));
    mag = _mm_add_ps(_mm_add_ps(mag, _mm_andnot_ps(sign, e0)), _mm_andnot_ps(sign, e1));
    mag = _mm_add_ps(mag, _mm_andnot_ps(sign, e2));
    float lane[4];
    _mm_storeu_ps(lane, mag);
    dist = (lane[0] + lane[1]) + lane[2];
    const __m128 r0 = _mm_loadu_ps(v->cols[0]), r1 = _mm_loadu_ps(v->cols[1]), r2 = _mm_loadu_ps(v->cols[2]);
#define RVI_ROWS(V, EXTRA)                                                                                  \
    _mm_add_ps(_mm_add_ps(_mm_add_ps(_mm_mul_ps(r0, _mm_shuffle_ps(V, V, 0x00)),                           \
                                     _mm_mul_ps(r1, _mm_shuffle_ps(V, V, 0x55))),                          \
                          _mm_mul_ps(r2, _mm_shuffle_ps(V, V, 0xAA))),                                     \
               EXTRA)
    if (look) {
        __m128 c = _mm_add_ps(base, _mm_mul_ps(_mm_set1_ps(0.5f), _mm_add_ps(_mm_add_ps(e0, e1), e2)));
        float q[4];
        _mm_storeu_ps(q, RVI_ROWS(c, _mm_loadu_ps(v->cols[3])));
        if (rvi_occ_seen_at(occ, q[0], q[1], q[3], 0.0f, 0.0f, (float)occ->width, (float)occ->height))
            return fp->on = 0;
    }
    _mm_storeu_ps(b, RVI_ROWS(base, _mm_loadu_ps(v->cols[3])));
    _mm_storeu_ps(d[0], RVI_ROWS(e0, _mm_setzero_ps()));
    _mm_storeu_ps(d[1], RVI_ROWS(e1, _mm_setzero_ps()));
    _mm_storeu_ps(d[2], RVI_ROWS(e2, _mm_setzero_ps()));
#undef RVI_ROWS
#else
    float base[3], e[3][3], lane[3];
    for (int i = 0; i < 3; i++) {
        float t0 = m[i] * min[0], t1 = m[4 + i] * min[1], t2 = m[8 + i] * min[2], t3 = m[12 + i] - v->ref[i];
        base[i] = ((t0 + t1) + t2) + t3;
        for (int a = 0; a < 3; a++)
            e[a][i] = m[a * 4 + i] * s[a];
        lane[i] = ((((fabsf(t0) + fabsf(t1)) + fabsf(t2)) + fabsf(t3)) + fabsf(e[0][i]) + fabsf(e[1][i])) +
                  fabsf(e[2][i]);
    }
    dist = (lane[0] + lane[1]) + lane[2];
    if (look) {
        float c[3], q[4];
        for (int i = 0; i < 3; i++)
            c[i] = base[i] + 0.5f * ((e[0][i] + e[1][i]) + e[2][i]);
        for (int r = 0; r < 4; r++) {
            const float *row = v->rows[r];
            q[r] = ((row[0] * c[0] + row[1] * c[1]) + row[2] * c[2]) + row[3];
        }
        if (rvi_occ_seen_at(occ, q[0], q[1], q[3], 0.0f, 0.0f, (float)occ->width, (float)occ->height))
            return fp->on = 0;
    }
    for (int r = 0; r < 4; r++) {
        const float *row = v->rows[r];
        b[r] = (((row[0] * base[0] + row[1] * base[1]) + row[2] * base[2]) + row[3]);
        for (int a = 0; a < 3; a++)
            d[a][r] = ((row[0] * e[a][0] + row[1] * e[a][1]) + row[2] * e[a][2]) + 0.0f;
    }
#endif
    return project_box(occ, b, d[0], d[1], d[2], dist, fp);
}

int32_t rvi_occ_footprint_box(const rv_occlusion *occ, const float min[3], const float max[3], const float *m,
                              occ_footprint *fp)
{
    return footprint_box(occ, min, max, m, fp, false);
}

int32_t rvi_occ_box_look(const rv_occlusion *occ, const float min[3], const float max[3], const float *m,
                         occ_footprint *fp)
{
    return footprint_box(occ, min, max, m, fp, true);
}

/* A sphere, through its world-space bounding box. */
/* A sphere's world box (centre under m when given, +- the radius times m's largest axis
 * scale, rounded up, plus the centre's own rounding; corners rounded outward): what every
 * sphere test tests. False when it does not fit in float (the sphere is then visible). */
static bool sphere_world_box(const float center[3], float radius, const float *m, float mn[3], float mx[3])
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
    for (int i = 0; i < 3; i++) { /* outward rounding of the box's own corners */
        mn[i] = c[i] - r;
        mx[i] = c[i] + r;
        mn[i] -= fabsf(mn[i]) * (2 * F_EPS);
        mx[i] += fabsf(mx[i]) * (2 * F_EPS);
    }
    return rvi_finite_n(mn, 3) && rvi_finite_n(mx, 3);
}

/* ---- the refined box test --------------------------------------------------------------- */

/* A cheap early answer for the refined test, which most boxes reaching it (the visible
 * ones) fail: a point of the box seen (rvi_occ_point_seen) in the texel it projects to
 * means the box is at least as near as that point there, so that texel does not hide it
 * and the refined test would fail. The centre is looked at first, then the eight corners:
 * a box that reaches the refined test with its centre hidden is mostly one that a wall
 * hides in part, and one of its corners is nearly always seen beyond the wall's outline
 * (on the crate field, 99.6 % of those reaching the bound). Saying so without building
 * the bound saves most of its cost. Only ever answers "not hidden" (the safe side), so
 * float error here costs precision at worst, never a wrong cull. */
static bool a_point_sees_the_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                 const float *matrix, const rvi_occ_footprint *fp)
{
    float x0 = (float)fp->x0, y0 = (float)fp->y0, x1 = (float)fp->x1 + 1.0f, y1 = (float)fp->y1 + 1.0f;
    /* With the pixel grid known a corner seen may lie where no pixel centre shows it (a
     * sliver beyond an outline, between two rows of centres): only the centre is looked at. */
    int corners = occ->sample_step[0] > 0 ? 0 : 8;
    for (int k = -1; k < corners; k++) {
        float p[3];
        for (int i = 0; i < 3; i++)
            p[i] = k < 0 ? 0.5f * min[i] + 0.5f * max[i] : (k >> i) & 1 ? max[i] : min[i];
        if (matrix) {
            float w[3];
            for (int i = 0; i < 3; i++)
                w[i] = matrix[i] * p[0] + matrix[4 + i] * p[1] + matrix[8 + i] * p[2] + matrix[12 + i];
            memcpy(p, w, sizeof p);
        }
        if (rvi_occ_point_seen(occ, p, x0, y0, x1, y1))
            return true;
    }
    return false;
}

/* Edge k of the box's image at texel (x, y), as every test of the texel reads it: row is
 * B * y, formed once per row. */
static RVI_ALWAYS_INLINE bool edge_meets(const double e[3], double row, int64_t x)
{
    return e[0] * (double)x + row + e[2] >= 0;
}

/* The texels of row y in [x0, x1] on the inner side of every edge of the box's image, as
 * [*lo, *hi] (empty when *lo > *hi). Along a row an edge's value A x + (B y) + C, rounded
 * as edge_meets rounds it, never falls as x grows when A > 0 and never rises when A < 0
 * (each rounding is monotone), so each edge keeps a run of the row: its end is found by
 * evaluating the edge near its root, and the texels kept are the runs' intersection, the
 * same texels a test of each would keep. Where double arithmetic is evaluated in double
 * (FLT_EVAL_METHOD 0) these are the sums the per-texel test formed before; with excess
 * precision the run is still exactly where edge_meets holds, and the margin folded into
 * the edges (1e-3 texel) is far wider than the difference. False, with the whole range,
 * when an edge's values could overflow and break that order (never for an image within
 * 1e9 texels): the row then proves nothing. */
bool rvi_occ_box_row_run(const rvi_occ_box_bound *bb, int32_t y, int32_t x0, int32_t x1, int32_t *lo, int32_t *hi)
{
    *lo = x0;
    *hi = x1;
    int64_t a = x0, b = x1; /* the run so far; one past either end marks it empty */
    double reach = fabs((double)x0) > fabs((double)x1) ? fabs((double)x0) : fabs((double)x1);
    for (uint32_t k = 0; k < bb->edge_count && a <= b; k++) {
        const double *e = bb->edge[k];
        double row = e[1] * y;
        if (!(fabs(e[0]) * reach + fabs(row) + fabs(e[2]) < 1e300))
            return false;
        if (e[0] == 0) {
            if (!edge_meets(e, row, a))
                b = a - 1;
            continue;
        }
        /* Start at the root (a guess: the walk below decides), inside [a, b]. */
        double r = -(row + e[2]) / e[0];
        int64_t s = r <= (double)a ? a : r >= (double)b ? b : (int64_t)r;
        if (e[0] > 0) { /* kept: [first x that meets, b] */
            if (edge_meets(e, row, s)) {
                while (s > a && edge_meets(e, row, s - 1))
                    s--;
            } else {
                while (s < b && !edge_meets(e, row, s))
                    s++;
                if (!edge_meets(e, row, s))
                    s = b + 1;
            }
            a = s;
        } else { /* kept: [a, last x that meets] */
            if (edge_meets(e, row, s)) {
                while (s < b && edge_meets(e, row, s + 1))
                    s++;
            } else {
                while (s > a && !edge_meets(e, row, s))
                    s--;
                if (!edge_meets(e, row, s))
                    s = a - 1;
            }
            b = s;
        }
    }
    if (a > b) {
        *lo = 1;
        *hi = 0;
    } else {
        *lo = (int32_t)a;
        *hi = (int32_t)b;
    }
    return true;
}

bool rvi_occ_box_refined_hidden(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                                const rvi_occ_footprint *fp)
{
    if (a_point_sees_the_box(occ, min, max, matrix, fp))
        return false;
    rvi_occ_box_bound bb;
    rvi_occ_box_bound_make(&occ->view, min, max, matrix, &bb);
    uint32_t n = bb.plane_count;
    if (n == 0 && bb.edge_count == 0)
        return false; /* the rectangle test already said all it can */
    bool any = false; /* a box whose image meets no texel of the buffer is off screen:
                         the frustum's business, answered visible like any off-screen box */
    int32_t x0 = fp->x0 > bb.ix0 ? fp->x0 : bb.ix0, x1 = fp->x1 < bb.ix1 ? fp->x1 : bb.ix1;
    int32_t y0 = fp->y0 > bb.iy0 ? fp->y0 : bb.iy0, y1 = fp->y1 < bb.iy1 ? fp->y1 : bb.iy1;
    for (int32_t y = y0; y <= y1; y++) {
        int32_t lo, hi;
        if (!rvi_occ_box_row_run(&bb, y, x0, x1, &lo, &hi))
            return false; /* an edge that cannot be evaluated safely: nothing is proven */
        if (lo > hi)
            continue; /* no part of the box is seen through this row */
        any = true;
        const float *row = occ->texels + (size_t)y * occ->width;
        float fy = (float)y, rc[RVI_OCC_MAX_PLANES];
        for (uint32_t k = 0; k < n; k++)
            rc[k] = bb.plane[k][1] * fy + bb.plane[k][2];
        for (int32_t x = lo; x <= hi; x++) {
            /* The bound below never exceeds the box's nearest nearness: a texel nearer than
             * that hides its part of the box whatever the bound. */
            if (row[x] > fp->nearness)
                continue;
            float fx = (float)x, bound = fp->nearness;
            for (uint32_t k = 0; k < n; k++) {
                float t = bb.plane[k][0] * fx + rc[k];
                bound = t < bound ? t : bound;
            }
            if (!(row[x] > bound) && !rvi_occ_texel_hides_box(occ, &bb, fp->nearness, x, y, bound))
                return false;
        }
    }
    return any;
}

/* The whole box test: the rectangle against the pyramid, then the refined test. */
static bool box_hidden(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                       const occ_footprint *fp)
{
    return hz_hidden_once(occ, fp->x0, fp->y0, fp->x1, fp->y1, fp->nearness) ||
           rvi_occ_box_refined_hidden(occ, min, max, matrix, fp);
}

/* ---- entry points ---------------------------------------------------------------------- */

bool rvi_occ_ready(rv_occlusion *occ)
{
    if (occ->width == 0 || occ->state == RVI_OCC_NO_VIEW)
        return false;
    if (occ->state == RVI_OCC_OPEN)
        rv_occlusion_freeze(occ);
    return true;
}

/* An identity matrix is no matrix: the box is its world box, and NULL's test (the world
 * box's, usually tighter than the oriented box's) gives the same verdict for both forms. */
static const float *unless_identity(const float *m)
{
    if (!m)
        return NULL;
    for (int i = 0; i < 16; i++)
        if (m[i] != (i % 5 == 0 ? 1.0f : 0.0f)) /* -0 is 0 */
            return m;
    return NULL;
}

static int32_t box_footprint(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                             occ_footprint *fp)
{
    return matrix ? rvi_occ_footprint_box(occ, min, max, matrix, fp) : rvi_occ_footprint_world_box(occ, min, max, fp);
}

bool rvi_occlusion_box_visible(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix)
{
    if (!rvi_occ_ready(occ))
        return true;
    occ->stats.tests++;
    if (rvi_occ_nothing_drawn(occ))
        return true;
    occ_footprint fp;
    int32_t on = box_footprint(occ, min, max, matrix, &fp);
    if (on != RVI_OCC_ON || !box_hidden(occ, min, max, matrix, &fp))
        return true;
    occ->stats.culled++;
    if (occ->feed_applied)
        rvi_occ_feed_note_hidden(occ, min, max, matrix, &fp, true);
    return false;
}

bool rvi_occlusion_sphere_visible(rv_occlusion *occ, const float center[3], float radius, const float *matrix)
{
    float mn[3], mx[3];
    if (!(radius >= 0) || !sphere_world_box(center, radius, matrix, mn, mx)) {
        if (rvi_occ_ready(occ))
            occ->stats.tests++;
        return true;
    }
    return rvi_occlusion_box_visible(occ, mn, mx, NULL);
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
    if (occ->held)
        return RV_ERR_BAD_STATE;
    RVI_TRY(rvi_occ_check_box(min, max, matrix));
    *out_visible = rvi_occlusion_box_visible(occ, min, max, unless_identity(matrix));
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
    if (occ->held)
        return RV_ERR_BAD_STATE;
    if (!rvi_finite_n(center, 3) || !isfinite(radius) || (matrix && !rvi_finite_n(matrix, 16)))
        return RV_ERR_NOT_FINITE;
    if (radius < 0 || (matrix && !rvi_occ_affine_ok(matrix)))
        return RV_ERR_INVALID_ARG;
    *out_visible = rvi_occlusion_sphere_visible(occ, center, radius, unless_identity(matrix));
    return RV_OK;
}

rv_result rvi_occ_batch_prologue(rv_occlusion *occ, uint32_t first, uint32_t count, uint8_t *out, bool *active)
{
    if (!occ || !out || count > UINT32_MAX - first)
        return RV_ERR_INVALID_ARG;
    if (occ->held) {
        memset(out + first, 1, count);
        return RV_ERR_BAD_STATE;
    }
    *active = rvi_occ_ready(occ);
    if (!*active)
        memset(out + first, 1, count);
    return RV_OK;
}

rv_result rvi_occ_boxes_unhidden(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first, uint32_t count,
                                 uint8_t *out_visible)
{
    rv_result first_error = RV_OK;
    for (uint32_t i = first; i < first + count && first_error == RV_OK; i++) {
        float lo[3] = { boxes->min[0][i], boxes->min[1][i], boxes->min[2][i] };
        float hi[3] = { boxes->max[0][i], boxes->max[1][i], boxes->max[2][i] };
        first_error = rvi_occ_check_box(lo, hi, boxes->matrices ? boxes->matrices + (size_t)16 * i : NULL);
    }
    memset(out_visible + first, 1, count);
    occ->stats.tests += count;
    return first_error;
}

/* Boxes with matrices one at a time; world boxes go to the batch kernel (occlusion_batch.c). */
rv_result rv_occlusion_test_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first, uint32_t count,
                                  uint8_t *out_visible)
{
    if (!boxes || !boxes->matrices)
        return rvi_occlusion_test_world_boxes(occ, boxes, first, count, out_visible, true);
    if (!boxes->min[0] || !boxes->min[1] || !boxes->min[2] || !boxes->max[0] || !boxes->max[1] || !boxes->max[2])
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(rvi_occ_batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    if (rvi_occ_nothing_drawn(occ))
        return rvi_occ_boxes_unhidden(occ, boxes, first, count, out_visible);
    rv_result first_error = RV_OK;
    uint64_t culled = 0;
    for (uint32_t i = first; i < first + count; i++) {
        float lo[3] = { boxes->min[0][i], boxes->min[1][i], boxes->min[2][i] };
        float hi[3] = { boxes->max[0][i], boxes->max[1][i], boxes->max[2][i] };
        const float *m = unless_identity(boxes->matrices + (size_t)16 * i);
        rv_result e = rvi_occ_check_box(lo, hi, m);
        occ_footprint fp;
        bool hidden = e == RV_OK && box_footprint(occ, lo, hi, m, &fp) == RVI_OCC_ON && box_hidden(occ, lo, hi, m, &fp);
        if (hidden && occ->feed_applied)
            rvi_occ_feed_note_hidden(occ, lo, hi, m, &fp, true);
        out_visible[i] = !hidden;
        culled += hidden;
        if (e != RV_OK && first_error == RV_OK)
            first_error = e;
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return first_error;
}

/* Spheres go through their world boxes to the batch box kernel, a chunk at a time. */
enum { SPHERE_CHUNK = 64 };

rv_result rv_occlusion_test_spheres(rv_occlusion *occ, const rv_occlusion_spheres *spheres, uint32_t first,
                                    uint32_t count, uint8_t *out_visible)
{
    if (!spheres || !spheres->center[0] || !spheres->center[1] || !spheres->center[2] || !spheres->radius)
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(rvi_occ_batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    rv_result first_error = RV_OK;
    float lo[3][SPHERE_CHUNK], hi[3][SPHERE_CHUNK];
    uint32_t at[SPHERE_CHUNK];
    uint8_t seen[SPHERE_CHUNK];
    rv_occlusion_boxes chunk = { { lo[0], lo[1], lo[2] }, { hi[0], hi[1], hi[2] }, NULL };
    uint32_t n = 0, untested = 0;
    bool unhidden = rvi_occ_nothing_drawn(occ); /* only the checks are left to make */
    for (uint32_t i = first; i < first + count; i++) {
        float c[3] = { spheres->center[0][i], spheres->center[1][i], spheres->center[2][i] };
        float radius = spheres->radius[i];
        const float *m = unless_identity(spheres->matrices ? spheres->matrices + (size_t)16 * i : NULL);
        rv_result e = RV_OK;
        if (!rvi_finite_n(c, 3) || !isfinite(radius) || (m && !rvi_finite_n(m, 16)))
            e = RV_ERR_NOT_FINITE;
        else if (radius < 0 || (m && !rvi_occ_affine_ok(m)))
            e = RV_ERR_INVALID_ARG;
        float mn[3], mx[3];
        out_visible[i] = 1;
        if (e != RV_OK || unhidden || !sphere_world_box(c, radius, m, mn, mx)) {
            untested++;
            if (e != RV_OK && first_error == RV_OK)
                first_error = e;
            continue;
        }
        for (int a = 0; a < 3; a++) {
            lo[a][n] = mn[a];
            hi[a][n] = mx[a];
        }
        at[n++] = i;
        if (n == SPHERE_CHUNK || i + 1 == first + count) {
            (void)rvi_occlusion_test_world_boxes(occ, &chunk, 0, n, seen, true); /* finite boxes: no item error */
            for (uint32_t j = 0; j < n; j++)
                out_visible[at[j]] = seen[j];
            n = 0;
        }
    }
    if (n) /* the last items were untested ones */
        (void)rvi_occlusion_test_world_boxes(occ, &chunk, 0, n, seen, true);
    for (uint32_t j = 0; j < n; j++)
        out_visible[at[j]] = seen[j];
    occ->stats.tests += untested;
    return first_error;
}
