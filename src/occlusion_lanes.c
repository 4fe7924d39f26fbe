/* The object tests eight at a time (docs/frame.md, "What each object goes through"): the
 * look at each box's centre and its footprint, made for eight boxes in one kernel written
 * as plain C over the lanes for the compiler to vectorise (an AVX2 build is picked at run
 * time, as for the batch kernel). The same operations in the same order as the
 * one-at-a-time test in occlusion_test.c (footprint_box, project_box, clamp_rect,
 * rvi_occ_seen_at), so the same answers bit for bit; a lane that is not finite or reaches
 * before the near plane goes through rvi_occ_footprint_box itself. Used by the frame's
 * object pass (frame_cull.c) and the freeze's occluder footprints (occlusion_batch.c). */
#include "occlusion_test.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if RVI_OCC_X86_WIDE
#include <immintrin.h>
#endif

#define F_EPS (1.0f / 16777216.0f)

/* The eight-lane look and footprint must round exactly as the one-at-a-time test: no
 * multiply-add fused, whatever the host's build flags. */
#include "core/no_contract.h"

/* ---- the look and the footprint, eight boxes at a time ---------------------------------- */

/* The loops inside a lane unroll completely, so that the loop over the lanes vectorises. */
#if defined(__GNUC__) || defined(__clang__)
#define LANE_UNROLL _Pragma("GCC unroll 8")
#else
#define LANE_UNROLL
#endif

void rvi_occ_lanes_set(rvi_occ_lanes *l, uint32_t j, const float min[3], const float max[3], const float *m)
{
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    if (!m)
        m = identity;
    for (int col = 0; col < 4; col++)
        for (int i = 0; i < 3; i++)
            l->m[3 * col + i][j] = m[4 * col + i];
    for (int i = 0; i < 3; i++) {
        l->lo[i][j] = min[i];
        l->hi[i][j] = max[i];
    }
}

#if RVI_OCC_X86_WIDE
/* Eight rows of eight floats (row j: lane j's, from load(j)), transposed: store(k, v) gets v
 * holding element i of each row, for i = 0, 1, 2, 4, 5, 6 (k = 0 .. 5). */
#define TRANSPOSE8(load, store)                                                                         \
    do {                                                                                                \
        __m256 r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3);                                  \
        __m256 r4 = load(4), r5 = load(5), r6 = load(6), r7 = load(7);                                  \
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);                        \
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);                        \
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);                        \
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);                        \
        __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));                                 \
        __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));                                 \
        __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));                                 \
        __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));                                 \
        __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));                                 \
        __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));                                 \
        store(0, _mm256_permute2f128_ps(u0, u4, 0x20));                                                 \
        store(1, _mm256_permute2f128_ps(u1, u5, 0x20));                                                 \
        store(2, _mm256_permute2f128_ps(u2, u6, 0x20));                                                 \
        store(3, _mm256_permute2f128_ps(u0, u4, 0x31));                                                 \
        store(4, _mm256_permute2f128_ps(u1, u5, 0x31));                                                 \
        store(5, _mm256_permute2f128_ps(u2, u6, 0x31));                                                 \
    } while (0)

/* rvi_occ_lanes_set_all by transposition: elements 0, 1, 2 and 4, 5, 6 of eight floats are
 * two of a matrix's columns, or a box's min and max. The boxes' three floats are loaded
 * under a mask: nothing past them is read. */
RVI_TARGET_AVX2 static void set_all_avx2(rvi_occ_lanes *l, const float *const min[8], const float *const max[8],
                                         const float *const m[8])
{
    const __m128i three = _mm_set_epi32(0, -1, -1, -1);
#define LOAD_COLUMNS01(j) _mm256_loadu_ps(m[j])
#define LOAD_COLUMNS23(j) _mm256_loadu_ps(m[j] + 8)
#define LOAD_BOX(j)                                                                                       \
    _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_maskload_ps(min[j], three)), _mm_maskload_ps(max[j], three), 1)
#define STORE_COLUMNS01(k, v) _mm256_storeu_ps(l->m[k], v)     /* m[0..2], then m[4..6] */
#define STORE_COLUMNS23(k, v) _mm256_storeu_ps(l->m[6 + k], v) /* m[8..10], then m[12..14] */
#define STORE_BOX(k, v) _mm256_storeu_ps(k < 3 ? l->lo[k] : l->hi[k - 3], v)
    TRANSPOSE8(LOAD_COLUMNS01, STORE_COLUMNS01);
    TRANSPOSE8(LOAD_COLUMNS23, STORE_COLUMNS23);
    TRANSPOSE8(LOAD_BOX, STORE_BOX);
#undef LOAD_COLUMNS01
#undef LOAD_COLUMNS23
#undef LOAD_BOX
#undef STORE_COLUMNS01
#undef STORE_COLUMNS23
#undef STORE_BOX
}
#undef TRANSPOSE8
#endif

void rvi_occ_lanes_set_all(const rv_occlusion *occ, rvi_occ_lanes *l, uint32_t n, const float *const min[],
                           const float *const max[], const float *const m[])
{
    static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float *lo[8], *hi[8], *mat[8];
    for (uint32_t j = 0; j < 8; j++) { /* lanes past n repeat the last */
        uint32_t s = j < n ? j : n - 1;
        lo[j] = min[s];
        hi[j] = max[s];
        mat[j] = m[s] ? m[s] : identity;
    }
#if RVI_OCC_X86_WIDE
    if (occ->wide) {
        set_all_avx2(l, lo, hi, mat);
        return;
    }
#endif
    (void)occ;
    for (uint32_t j = 0; j < 8; j++)
        rvi_occ_lanes_set(l, j, lo[j], hi[j], mat[j]);
}

/* Lane tj of to := lane fj of from. */
static void lanes_move(rvi_occ_lanes *to, uint32_t tj, const rvi_occ_lanes *from, uint32_t fj)
{
    for (int i = 0; i < 12; i++)
        to->m[i][tj] = from->m[i][fj];
    for (int i = 0; i < 3; i++) {
        to->lo[i][tj] = from->lo[i][fj];
        to->hi[i][tj] = from->hi[i][fj];
    }
}

/* Lane j's box and matrix as given (the matrix's last row never counts), for
 * footprint_box. */
static void lane_box(const rvi_occ_lanes *l, uint32_t j, float lo[3], float hi[3], float m[16])
{
    static const float last_row[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
    memcpy(m, last_row, sizeof last_row);
    for (int i = 0; i < 3; i++) {
        lo[i] = l->lo[i][j];
        hi[i] = l->hi[i][j];
        for (int col = 0; col < 4; col++)
            m[4 * col + i] = l->m[3 * col + i][j];
    }
}

/* Lane j's base corner relative to the view's ref and its three edges in world space, as
 * footprint_box makes them (lane i of its vectors is axis i here). */
static RVI_ALWAYS_INLINE void lane_terms(const rvi_occ_view *v, const rvi_occ_lanes *in, int j, float base[3],
                                         float e[3][3], float *dist)
{
    float lo[3] = { in->lo[0][j], in->lo[1][j], in->lo[2][j] };
    float s[3] = { in->hi[0][j] - lo[0], in->hi[1][j] - lo[1], in->hi[2][j] - lo[2] };
    float mag[3];
    LANE_UNROLL
    for (int i = 0; i < 3; i++) {
        float t0 = in->m[i][j] * lo[0], t1 = in->m[3 + i][j] * lo[1], t2 = in->m[6 + i][j] * lo[2];
        float t3 = in->m[9 + i][j] - v->ref[i];
        base[i] = ((t0 + t1) + t2) + t3;
        LANE_UNROLL
        for (int a = 0; a < 3; a++)
            e[a][i] = in->m[3 * a + i][j] * s[a];
        mag[i] = (((((fabsf(t0) + fabsf(t1)) + fabsf(t2)) + fabsf(t3)) + fabsf(e[0][i])) + fabsf(e[1][i])) +
                 fabsf(e[2][i]);
    }
    *dist = (mag[0] + mag[1]) + mag[2];
}

/* What the look at lane j's centre needs: its texel position and nearness, and whether it
 * lies on the buffer (rvi_occ_seen_at's placing, the same floats). */
typedef struct look_result {
    float tx[8], ty[8], nearness[8];
    int32_t on[8];
} look_result;

static RVI_ALWAYS_INLINE void look_lane(const rv_occlusion *occ, const rvi_occ_lanes *in, look_result *out, int j,
                                        const bool persp)
{
    const rvi_occ_view *v = &occ->view;
    const float(*C)[4] = v->cols;
    float base[3], e[3][3], dist, c[3];
    lane_terms(v, in, j, base, e, &dist);
    LANE_UNROLL
    for (int i = 0; i < 3; i++)
        c[i] = base[i] + 0.5f * ((e[0][i] + e[1][i]) + e[2][i]);
    float q[4];
    LANE_UNROLL
    for (int r = 0; r < 4; r++)
        q[r] = ((C[0][r] * c[0] + C[1][r] * c[1]) + C[2][r] * c[2]) + C[3][r];
    float tx = q[0], ty = q[1], n = q[3];
    int32_t on = 1;
    if (persp) {
        on = q[3] > 0;
        tx = q[0] / q[3];
        ty = q[1] / q[3];
        n = 1.0f / q[3];
    }
    out->tx[j] = tx;
    out->ty[j] = ty;
    out->nearness[j] = n;
    out->on[j] = on & (tx >= 0) & (tx < (float)occ->width) & (ty >= 0) & (ty < (float)occ->height);
}

/* Lane j's footprint (project_box and clamp_rect), and slow when the lane must go through
 * footprint_box instead: something not finite, or a box reaching before the near plane.
 * Wherever slow is 0, the same floats as footprint_box, but for the sign of a zero row
 * extreme (the extremes are taken in another order): that never reaches a result, since
 * the margin (>= 1e-3) and the error terms (> 0) are added to every extreme used. A lane
 * that answers 0 still gets a rectangle, never read; its bounds are clamped at 0 first so
 * that the conversions stay defined. */
typedef struct foot_result {
    int32_t x0[8], y0[8], x1[8], y1[8];
    float nearness[8];
    int32_t on[8], slow[8];
} foot_result;

static RVI_ALWAYS_INLINE void foot_lane(const rv_occlusion *occ, const rvi_occ_lanes *in, foot_result *out, int j,
                                        const bool persp)
{
    const rvi_occ_view *v = &occ->view;
    const float(*C)[4] = v->cols;
    const float fw = (float)occ->width, fh = (float)occ->height;
    float base[3], e[3][3], dist;
    lane_terms(v, in, j, base, e, &dist);
    float b[4], d[3][4];
    LANE_UNROLL
    for (int r = 0; r < 4; r++) {
        b[r] = ((C[0][r] * base[0] + C[1][r] * base[1]) + C[2][r] * base[2]) + C[3][r];
        LANE_UNROLL
        for (int a = 0; a < 3; a++)
            d[a][r] = ((C[0][r] * e[a][0] + C[1][r] * e[a][1]) + C[2][r] * e[a][2]) + 0.0f;
    }
    /* Corner k = b + d0 (bit 0) + d1 (bit 1) + d2 (bit 2), the missing terms added as
     * zeros; rows 0 and 1 divided by row 3 in perspective. */
    float k[4][8];
    int32_t bad = 0;
    LANE_UNROLL
    for (int r = 0; r < 4; r++) {
        float k0 = (b[r] + 0.0f) + 0.0f, k1 = (b[r] + d[0][r]) + 0.0f, k2 = (b[r] + 0.0f) + d[1][r],
              k3 = (b[r] + d[0][r]) + d[1][r];
        k[r][0] = k0;
        k[r][1] = k1;
        k[r][2] = k2;
        k[r][3] = k3;
        k[r][4] = k0 + d[2][r];
        k[r][5] = k1 + d[2][r];
        k[r][6] = k2 + d[2][r];
        k[r][7] = k3 + d[2][r];
        LANE_UNROLL
        for (int n = 0; n < 8; n++)
            bad |= k[r][n] != k[r][n];
    }
    if (persp) {
        LANE_UNROLL
        for (int n = 0; n < 8; n++) {
            float inv = 1.0f / k[3][n];
            k[0][n] = k[0][n] * inv;
            k[1][n] = k[1][n] * inv;
            bad |= (k[0][n] != k[0][n]) | (k[1][n] != k[1][n]);
        }
    }
    float mn[4], mx[4];
    LANE_UNROLL
    for (int r = 0; r < 4; r++) {
        mn[r] = mx[r] = k[r][0];
        LANE_UNROLL
        for (int n = 1; n < 8; n++) {
            mn[r] = k[r][n] < mn[r] ? k[r][n] : mn[r];
            mx[r] = k[r][n] > mx[r] ? k[r][n] : mx[r];
        }
        bad |= !(mn[r] >= -FLT_MAX) | !(mx[r] <= FLT_MAX);
    }
    bad |= !(dist <= FLT_MAX) | !(mn[2] > v->err_mul[2] * dist + v->err_add[2]);
    float nearness, margin;
    int32_t ok = 1;
    if (persp) {
        float wc = mn[3] - (v->err_mul[3] * dist + v->err_add[3]);
        ok = wc > 0;
        nearness = (1.0f / wc) * (1.0f + 4 * F_EPS);
        margin = (v->rect_mul * dist + v->rect_add) * nearness + 1e-3f;
    } else {
        nearness = mx[3] + (v->err_mul[3] * dist + v->err_add[3]);
        margin = v->rect_mul * dist + v->rect_add + 1e-3f;
    }
    float xmin = mn[0] - margin, ymin = mn[1] - margin, xmax = mx[0] + margin, ymax = mx[1] + margin;
    ok &= (xmin <= xmax) & (ymin <= ymax);
    out->on[j] = rvi_occ_lane_rect(fw, fh, xmin, ymin, xmax, ymax, nearness, ok, &out->x0[j], &out->y0[j],
                                   &out->x1[j], &out->y1[j]);
    out->nearness[j] = nearness;
    out->slow[j] = bad;
}

/* The results are written through restrict pointers: their stores cannot alias the
 * inputs, so the loops over the lanes vectorise. */
#define LANE_KERNELS(SUFFIX, TARGET)                                                                             \
    TARGET static void look_##SUFFIX(const rv_occlusion *occ, const rvi_occ_lanes *in, look_result *restrict out) \
    {                                                                                                            \
        if (occ->view.perspective)                                                                               \
            for (int j = 0; j < 8; j++)                                                                          \
                look_lane(occ, in, out, j, true);                                                                \
        else                                                                                                     \
            for (int j = 0; j < 8; j++)                                                                          \
                look_lane(occ, in, out, j, false);                                                               \
    }                                                                                                            \
    TARGET static void foot_##SUFFIX(const rv_occlusion *occ, const rvi_occ_lanes *in, foot_result *restrict out) \
    {                                                                                                            \
        if (occ->view.perspective)                                                                               \
            for (int j = 0; j < 8; j++)                                                                          \
                foot_lane(occ, in, out, j, true);                                                                \
        else                                                                                                     \
            for (int j = 0; j < 8; j++)                                                                          \
                foot_lane(occ, in, out, j, false);                                                               \
    }

#define LANE_BOTH(SUFFIX, TARGET)                                                                                \
    TARGET static void both_##SUFFIX(const rv_occlusion *occ, const rvi_occ_lanes *in, look_result *restrict lo,  \
                                     foot_result *restrict fo)                                                   \
    {                                                                                                            \
        if (occ->view.perspective)                                                                               \
            for (int j = 0; j < 8; j++) {                                                                        \
                look_lane(occ, in, lo, j, true);                                                                 \
                foot_lane(occ, in, fo, j, true);                                                                 \
            }                                                                                                    \
        else                                                                                                     \
            for (int j = 0; j < 8; j++) {                                                                        \
                look_lane(occ, in, lo, j, false);                                                                \
                foot_lane(occ, in, fo, j, false);                                                                \
            }                                                                                                    \
    }
LANE_BOTH(generic, )
#if RVI_OCC_X86_WIDE
LANE_BOTH(avx2, RVI_TARGET_AVX2)
#endif
#undef LANE_BOTH

LANE_KERNELS(generic, )
#if RVI_OCC_X86_WIDE
LANE_KERNELS(avx2, RVI_TARGET_AVX2)
#endif
#undef LANE_KERNELS

/* Lane j's footprint from the kernel's results, or through footprint_box where the lane is
 * slow. */
static void lane_answer(const rv_occlusion *occ, const rvi_occ_lanes *l, const foot_result *r, uint32_t j,
                        rvi_occ_footprint *fp)
{
    if (r->slow[j]) {
        float lo[3], hi[3], m[16];
        lane_box(l, j, lo, hi, m);
        rvi_occ_footprint_box(occ, lo, hi, m, fp);
        return;
    }
    fp->x0 = r->x0[j];
    fp->y0 = r->y0[j];
    fp->x1 = r->x1[j];
    fp->y1 = r->y1[j];
    fp->nearness = r->nearness[j];
    fp->on = r->on[j];
}

uint32_t rvi_occ_lanes_look(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t n)
{
    look_result r;
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        look_avx2(occ, l, &r);
    else
#endif
        look_generic(occ, l, &r);
    uint32_t seen = 0;
    for (uint32_t j = 0; j < n; j++)
        if (r.on[j] && rvi_occ_seen_texel(occ, r.tx[j], r.ty[j], r.nearness[j]))
            seen |= 1u << j;
    return seen;
}

void rvi_occ_lanes_footprint(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t need, rvi_occ_footprint fp[])
{
    foot_result r;
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        foot_avx2(occ, l, &r);
    else
#endif
        foot_generic(occ, l, &r);
    for (uint32_t j = 0; j < 8; j++) {
        if (!((need >> j) & 1u))
            continue;
        lane_answer(occ, l, &r, j, &fp[j]);
    }
}

/* Both of the above at once, in one pass over the lanes: the looks' bits, and fp[j] for
 * the lanes not seen. */
uint32_t rvi_occ_lanes_look_footprint(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t n,
                                      rvi_occ_footprint fp[])
{
    look_result r;
    foot_result f;
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        both_avx2(occ, l, &r, &f);
    else
#endif
        both_generic(occ, l, &r, &f);
    uint32_t seen = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (r.on[j] && rvi_occ_seen_texel(occ, r.tx[j], r.ty[j], r.nearness[j])) {
            seen |= 1u << j;
            continue;
        }
        lane_answer(occ, l, &f, j, &fp[j]);
    }
    return seen;
}

void rvi_occ_box_look_batch(const rv_occlusion *occ, uint32_t n, const float *const min[], const float *const max[],
                            const float *const m[], rvi_occ_footprint fp[])
{
    if (n == 0)
        return;
    rvi_occ_lanes all, rest;
    uint32_t at[8], left = 0;
    rvi_occ_lanes_set_all(occ, &all, n, min, max, m);
    uint32_t seen = rvi_occ_lanes_look(occ, &all, n);
    for (uint32_t j = 0; j < n; j++) {
        if ((seen >> j) & 1u) {
            fp[j].on = 0;
        } else {
            lanes_move(&rest, left, &all, j);
            at[left++] = j;
        }
    }
    if (left == 0)
        return;
    for (uint32_t j = left; j < 8; j++)
        lanes_move(&rest, j, &rest, left - 1);
    rvi_occ_footprint out[8];
    rvi_occ_lanes_footprint(occ, &rest, (1u << left) - 1, out);
    for (uint32_t j = 0; j < left; j++)
        fp[at[j]] = out[j];
}
