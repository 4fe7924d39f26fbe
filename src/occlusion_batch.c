/* Batch object tests of the occlusion buffer (docs/design.md §4): world-space boxes eight at a
 * time through a structure-of-arrays kernel written as plain C loops for the compiler to
 * vectorise (keep kernel_lane branch-free; check with -fopt-info-vec), and on x86 an AVX2
 * build of the same source plus an AVX2 pyramid lookup with gathers, chosen at run time.
 * Every path gives the same answers as rv_occlusion_test_box: the single world-box test
 * runs lane 0 of this very kernel. Also projects the freeze's occluders for its sort and
 * hidden test. */
#include "occlusion_test.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if RVI_OCC_X86_WIDE
#include <immintrin.h>
#endif

#define F_EPS (1.0f / 16777216.0f)

/* The batch kernel must round exactly as the single test: no multiply-add fused, whatever
 * the host's build flags. */
#include "core/no_contract.h"

typedef rvi_occ_footprint occ_footprint;

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

static RVI_ALWAYS_INLINE void kernel_lane(const kernel_consts *kc, float lx, float ly, float lz, float hx, float hy,
                                          float hz, occ_block *restrict out, int j, const bool persp)
{
    const float *r = kc->r;
    const float ref0 = kc->ref0, ref1 = kc->ref1, ref2 = kc->ref2, fw = kc->fw, fh = kc->fh;
    const float en_m = kc->en_m, en_a = kc->en_a, eq_m = kc->eq_m, eq_a = kc->eq_a;
    const float rect_m = kc->rect_m, rect_a = kc->rect_a;
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
    out->on[j] = rvi_occ_lane_rect(fw, fh, xmin, ymin, xmax, ymax, nearness, ok, &out->x0[j], &out->y0[j],
                                   &out->x1[j], &out->y1[j]);
    out->nearness[j] = nearness;
}

/* Eight boxes: ax[j] .. bz[j] are box j's minimum and maximum corners. The pointers are
 * restrict parameters of each (not inlined) block function, so the loop vectorises with
 * whole-row loads and no alias check; a local copy of the rows would be written in halves
 * and read back whole, a load no store can forward. */
#define BLOCK_PARAMS                                                                           \
    const kernel_consts *restrict kc, const float *restrict ax, const float *restrict ay,    \
        const float *restrict az, const float *restrict bx, const float *restrict by,        \
        const float *restrict bz, occ_block *restrict out
#define BLOCK_LANES(PERSP)                                                                     \
    for (int j = 0; j < 8; j++)                                                                \
        kernel_lane(kc, ax[j], ay[j], az[j], bx[j], by[j], bz[j], out, j, PERSP);

typedef void (*block_fn)(const kernel_consts *, const float *, const float *, const float *, const float *,
                         const float *, const float *, occ_block *);

static void block_persp(BLOCK_PARAMS) { BLOCK_LANES(true) }
static void block_ortho(BLOCK_PARAMS) { BLOCK_LANES(false) }
#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void block_persp_avx2(BLOCK_PARAMS) { BLOCK_LANES(true) }
RVI_TARGET_AVX2 static void block_ortho_avx2(BLOCK_PARAMS) { BLOCK_LANES(false) }
/* The same eight lanes where AVX-512VL runs: its 32 vector registers hold the kernel's
 * constants and temporaries that AVX2's 16 spill to the stack. Still 256 bits wide, the
 * same operations in the same order (no multiply-add fused: core/no_contract.h). */
#define TARGET_AVX512VL __attribute__((target("avx2,avx512f,avx512vl")))
TARGET_AVX512VL static void block_persp_avx512vl(BLOCK_PARAMS) { BLOCK_LANES(true) }
TARGET_AVX512VL static void block_ortho_avx512vl(BLOCK_PARAMS) { BLOCK_LANES(false) }
#endif

/* Boxes i0 .. i0 + 7 of the rows mn, mx through the kernel. */
static void run_block(block_fn kernel, const kernel_consts *kc, const float *const mn[3], const float *const mx[3],
                      uint32_t i0, occ_block *out)
{
    kernel(kc, mn[0] + i0, mn[1] + i0, mn[2] + i0, mx[0] + i0, mx[1] + i0, mx[2] + i0, out);
}

#if RVI_OCC_X86_WIDE
/* hz_hidden for the eight lanes of a block at once (AVX2 gathers); lanes whose coarse
 * answer is "maybe visible" at a level above 0 are refined one by one. Returns the
 * visibility bits (bit j set: lane j visible). Identical answers to hz_hidden. */
RVI_TARGET_AVX2 static uint32_t block_lookup_avx2(const rv_occlusion *occ, const rvi_hz_levels *h,
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
    /* The level's offset and width from the 16-entry tables by two in-register permutes
     * each (k <= top < 16), not gathers. */
    __m256i upper = _mm256_cmpgt_epi32(k, _mm256_set1_epi32(7));
    __m256i off = _mm256_blendv_epi8(
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)h->offset32), k),
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(h->offset32 + 8)), k), upper);
    __m256i lw = _mm256_blendv_epi8(
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)h->width32), k),
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(h->width32 + 8)), k), upper);
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
            if ((todo >> j) & 1u && rvi_occ_hz_refine(occ, blk->x0[j], blk->y0[j], blk->x1[j], blk->y1[j], blk->nearness[j],
                                              (uint32_t)ks[j]))
                hidden |= 1u << j;
    }
    return ~hidden & 0xFFu;
}

/* Bit j of *on: lane j is usable (RVI_OCC_ON); of *near: lane j is valid but unplaced (its
 * box reaches before the near plane); of *bad: lane j's box is not finite or disordered. */
RVI_TARGET_AVX2 static void lane_masks_avx2(const occ_block *blk, uint32_t *on, uint32_t *near, uint32_t *bad)
{
    __m256i o = _mm256_loadu_si256((const __m256i *)blk->on), b = _mm256_loadu_si256((const __m256i *)blk->bad);
    __m256i zero = _mm256_setzero_si256();
    __m256i good = _mm256_cmpeq_epi32(b, zero);
    *on = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(o, _mm256_set1_epi32(RVI_OCC_ON))));
    *near = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpeq_epi32(o, zero), good)));
    *bad = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(good)) & 0xFFu;
}

/* Eight bits as eight bytes of 0 or 1 (byte j = bit j); returns how many are set. The
 * multiplication puts bit j of the low seven at bit 8j with no two partial products
 * overlapping (so nothing carries), bit 7 is placed by a shift, and the bytes are summed
 * into the top one by a second multiplication (at most 8: no carry either). */
static uint32_t bytes_of_bits(uint32_t bits, uint8_t out[8])
{
    uint64_t spread = (((uint64_t)(bits & 0x7Fu) * 0x0002040810204081ull) & 0x0101010101010101ull) |
                      (uint64_t)(bits >> 7 & 1u) << 56;
    for (int j = 0; j < 8; j++)
        out[j] = (uint8_t)(spread >> (8 * j));
    return (uint32_t)((spread * 0x0101010101010101ull) >> 56);
}
#endif

uint32_t rvi_occ_cpu_wide(void)
{
#if RVI_OCC_X86_WIDE
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") ? 2 : 1;
#else
    return 0;
#endif
}

static block_fn pick_kernel(const rv_occlusion *occ)
{
    bool persp = occ->view.perspective;
#if RVI_OCC_X86_WIDE
    if (occ->wide && occ->wide_vl)
        return persp ? block_persp_avx512vl : block_ortho_avx512vl;
    if (occ->wide)
        return persp ? block_persp_avx2 : block_ortho_avx2;
#endif
    return persp ? block_persp : block_ortho;
}

/* Lanes the kernel could not place because their box reaches before the near plane get
 * the footprint of their part in view (project_box's, through rvi_occ_footprint_box), so a
 * world box is answered the same by the single test, the batch and under an identity
 * matrix. */
static void place_lane(const rv_occlusion *occ, const float *const mn[3], const float *const mx[3], uint32_t i0,
                       uint32_t j, occ_block *blk)
{
    float lo[3] = { mn[0][i0 + j], mn[1][i0 + j], mn[2][i0 + j] };
    float hi[3] = { mx[0][i0 + j], mx[1][i0 + j], mx[2][i0 + j] };
    rvi_occ_footprint fp;
    int32_t on = rvi_occ_footprint_box(occ, lo, hi, NULL, &fp);
    if (on != RVI_OCC_ON) {
        blk->on[j] = on; /* the lane keeps the kernel's safe rectangle */
        return;
    }
    blk->x0[j] = fp.x0;
    blk->y0[j] = fp.y0;
    blk->x1[j] = fp.x1;
    blk->y1[j] = fp.y1;
    blk->nearness[j] = fp.nearness;
    blk->on[j] = fp.on;
}

static void place_near_lanes(const rv_occlusion *occ, const float *const mn[3], const float *const mx[3], uint32_t i0,
                             uint32_t n, occ_block *blk)
{
    for (uint32_t j = 0; j < n; j++)
        if (blk->on[j] == 0 && !blk->bad[j])
            place_lane(occ, mn, mx, i0, j, blk);
}

void rvi_occ_footprints(const rv_occlusion *occ, const rvi_occ_input *in, uint32_t count, const float *matrices,
                        rvi_occ_footprint *out)
{
    /* Boxes under matrices eight at a time through the frame's lanes (the same answers as
     * rvi_occ_footprint_box). */
    rvi_occ_lanes lanes;
    const float *lo[8], *hi[8], *ms[8];
    uint32_t idx[8], n = 0;
    for (uint32_t i = 0; i <= count; i++) {
        if (i < count && in[i].matrix >= 0) {
            const float *m = matrices + (size_t)16 * (uint32_t)in[i].matrix;
            if (!RVI_OCC_LANES) {
                rvi_occ_footprint_box(occ, in[i].min, in[i].max, m, &out[i]);
                continue;
            }
            lo[n] = in[i].min;
            hi[n] = in[i].max;
            ms[n] = m;
            idx[n++] = i;
        }
        if (n == 8 || (i == count && n > 0)) {
            rvi_occ_footprint fp[8];
            rvi_occ_lanes_set_all(occ, &lanes, n, lo, hi, ms);
            rvi_occ_lanes_footprint(occ, &lanes, (1u << n) - 1, fp);
            for (uint32_t j = 0; j < n; j++)
                out[idx[j]] = fp[j];
            n = 0;
        }
    }
    /* World boxes through the batch kernel, eight at a time. */
    block_fn kernel = pick_kernel(occ);
    const kernel_consts kc = kernel_setup(&occ->view, (float)occ->width, (float)occ->height);
    float pad[6][8];
    const float *pmn[3] = { pad[0], pad[1], pad[2] }, *pmx[3] = { pad[3], pad[4], pad[5] };
    occ_block blk;
    n = 0;
    for (uint32_t i = 0; i <= count; i++) {
        if (i < count && in[i].matrix >= 0)
            continue;
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
            run_block(kernel, &kc, pmn, pmx, 0, &blk);
            place_near_lanes(occ, pmn, pmx, 0, n, &blk);
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

/* One world box through lane 0 of the batch kernel (identical answers to the batch). */
int32_t rvi_occ_footprint_world_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                    occ_footprint *fp)
{
    occ_block blk;
    const kernel_consts kc = kernel_setup(&occ->view, (float)occ->width, (float)occ->height);
    if (occ->view.perspective)
        kernel_lane(&kc, min[0], min[1], min[2], max[0], max[1], max[2], &blk, 0, true);
    else
        kernel_lane(&kc, min[0], min[1], min[2], max[0], max[1], max[2], &blk, 0, false);
    const float *pmn[3] = { &min[0], &min[1], &min[2] }, *pmx[3] = { &max[0], &max[1], &max[2] };
    place_near_lanes(occ, pmn, pmx, 0, 1, &blk);
    fp->x0 = blk.x0[0];
    fp->y0 = blk.y0[0];
    fp->x1 = blk.x1[0];
    fp->y1 = blk.y1[0];
    fp->nearness = blk.nearness[0];
    return fp->on = blk.on[0];
}

static rv_result item_code(int32_t bad)
{
    return bad == 0 ? RV_OK : bad == 1 ? RV_ERR_NOT_FINITE : RV_ERR_INVALID_ARG;
}

/* Lane j of a block (box i of the batch) through the refined test, when its rectangle
 * test failed. */
static bool refined_hidden(const rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t i, const occ_block *blk,
                           uint32_t j)
{
    float mn[3] = { boxes->min[0][i], boxes->min[1][i], boxes->min[2][i] };
    float mx[3] = { boxes->max[0][i], boxes->max[1][i], boxes->max[2][i] };
    if (blk->bad[j])
        return false;
    rvi_occ_footprint fp = { blk->x0[j], blk->y0[j], blk->x1[j], blk->y1[j], blk->nearness[j], blk->on[j] };
    return rvi_occ_box_refined_hidden(occ, mn, mx, NULL, &fp);
}

rv_result rvi_occlusion_test_world_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first,
                                         uint32_t count, uint8_t *out_visible, bool use_pyramid)
{
    if (!boxes || !boxes->min[0] || !boxes->min[1] || !boxes->min[2] || !boxes->max[0] || !boxes->max[1] ||
        !boxes->max[2])
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(rvi_occ_batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    if (rvi_occ_nothing_drawn(occ))
        return rvi_occ_boxes_unhidden(occ, boxes, first, count, out_visible);
    block_fn kernel = pick_kernel(occ);
    const kernel_consts kc = kernel_setup(&occ->view, (float)occ->width, (float)occ->height);
    int32_t first_bad = 0;
    uint64_t culled = 0;
    occ_block blk;
    const rvi_hz_levels levels = rvi_hz_levels_of(occ);
    float pad[6][8];
    const float *pmn[3] = { pad[0], pad[1], pad[2] }, *pmx[3] = { pad[3], pad[4], pad[5] };
    uint32_t end = first + count;
    for (uint32_t i = first; i < end; i += 8) {
        uint32_t n = end - i < 8 ? end - i : 8, i0 = i, lanes = (1u << n) - 1, bad = 0;
        const float *const *lo = boxes->min, *const *hi = boxes->max;
        if (n < 8) {
            /* The tail: pad the lanes with copies of the last box. */
            for (int a = 0; a < 3; a++)
                for (uint32_t j = 0; j < 8; j++) {
                    uint32_t s = i + (j < n ? j : n - 1);
                    pad[a][j] = boxes->min[a][s];
                    pad[3 + a][j] = boxes->max[a][s];
                }
            lo = pmn;
            hi = pmx;
            i0 = 0;
        }
        run_block(kernel, &kc, lo, hi, i0, &blk);
        uint8_t visible[8];
#if RVI_OCC_X86_WIDE
        if (occ->wide && use_pyramid) {
            uint32_t on, near;
            lane_masks_avx2(&blk, &on, &near, &bad);
            if (near & lanes) {
                for (uint32_t m = near & lanes; m; m &= m - 1)
                    place_lane(occ, lo, hi, i0, (uint32_t)__builtin_ctz(m), &blk);
                lane_masks_avx2(&blk, &on, &near, &bad);
            }
            uint32_t seen = block_lookup_avx2(occ, &levels, &blk) & lanes;
            for (uint32_t m = seen & on; m; m &= m - 1) {
                uint32_t j = (uint32_t)__builtin_ctz(m);
                if (refined_hidden(occ, boxes, i + j, &blk, j))
                    seen &= ~(1u << j);
            }
            culled += n - bytes_of_bits(seen, visible);
        } else
#endif
        {
            place_near_lanes(occ, lo, hi, i0, n, &blk);
            for (uint32_t j = 0; j < n; j++) {
                bool hidden = false;
                if (blk.on[j] == RVI_OCC_ON)
                    hidden = use_pyramid ? rvi_occ_hz_hidden(occ, &levels, blk.x0[j], blk.y0[j], blk.x1[j],
                                                             blk.y1[j], blk.nearness[j])
                                         : rvi_occ_flat_hidden(occ, blk.x0[j], blk.y0[j], blk.x1[j], blk.y1[j],
                                                               blk.nearness[j]);
                if (blk.on[j] == RVI_OCC_ON && !hidden)
                    hidden = refined_hidden(occ, boxes, i + j, &blk, j);
                visible[j] = !hidden;
                culled += hidden;
                bad |= (uint32_t)(blk.bad[j] != 0) << j;
            }
        }
        if (occ->feed_applied)
            for (uint32_t j = 0; j < n; j++)
                if (!visible[j]) {
                    float mn[3] = { boxes->min[0][i + j], boxes->min[1][i + j], boxes->min[2][i + j] };
                    float mx[3] = { boxes->max[0][i + j], boxes->max[1][i + j], boxes->max[2][i + j] };
                    rvi_occ_footprint fp = { blk.x0[j], blk.y0[j], blk.x1[j], blk.y1[j], blk.nearness[j], blk.on[j] };
                    rvi_occ_feed_note_hidden(occ, mn, mx, NULL, &fp, true);
                }
        if (n == 8)
            memcpy(out_visible + i, visible, 8);
        else
            memcpy(out_visible + i, visible, n);
        if (bad & lanes && !first_bad)
            first_bad = blk.bad[__builtin_ctz(bad & lanes)];
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return item_code(first_bad);
}
