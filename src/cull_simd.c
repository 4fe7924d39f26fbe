/* Runs of leaves for the hierarchy walk (cull.h): leaves created one after another sit in
 * consecutive slots, their spheres side by side, so a run of such siblings is classified in
 * one vector pass — the planes, the size cutoff, what the walk must still do per lane —
 * before the walk takes its nodes in order. Every lane gets exactly the answer visit()
 * would give it: the same float expressions in the same order (no fused multiply-adds in
 * ISO C mode, and none written here), and a lane the pass cannot decide alone (an empty,
 * NaN or infinite sphere) is left to visit(). Plain C for any CPU; AVX2 and AVX-512 where
 * the CPU has them (picked per walk). A kernel computes only what its walk reads: the
 * planes of the mask, the cutoff where there is one, the summary when the walk keeps them. */
#include "cull.h"
#include "frustum.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RUN_X86 1
#include <immintrin.h>
#else
#define RUN_X86 0
#endif

#define NONE RVI_INDEX_NONE

/* What every kernel leaves in *out from the per-lane verdicts of lanes [0, n). */
static void settle_lanes(const int32_t *outside, const int32_t *straddle, const int32_t *cut, const int32_t *plain,
                         const uint32_t *flags, const rvi_walk_policy *p, uint32_t n, rvi_walk_run *out)
{
    const uint32_t test_box = p->test_boxes ? RVI_NODE_HAS_TEST_BOX : 0;
    uint64_t lane = 0, whole = 0, hand = 0;
    uint32_t settled = 0, n_out = 0, n_cut = 0;
    for (uint32_t j = 0; j < n; j++) {
        int32_t geometry = (flags[j] & RVI_NODE_HAS_GEOMETRY) != 0;
        int32_t boxed = straddle[j] & ((flags[j] & test_box) != 0);
        /* Settled: outside by its sphere; or no box to try and then cut or not drawn. */
        int32_t done = plain[j] & !p->record_culls & (outside[j] | ((!boxed) & (cut[j] | !geometry)));
        lane |= (uint64_t)(plain[j] & !done) << j;
        hand |= (uint64_t)(plain[j] & geometry & !outside[j] & !boxed & !cut[j]) << j;
        whole |= (uint64_t)!plain[j] << j;
        settled += (uint32_t)done;
        n_out += (uint32_t)(done & outside[j]);
        n_cut += (uint32_t)(done & !outside[j] & geometry & cut[j]);
    }
    out->n = n;
    out->outside = 0;
    for (uint32_t j = 0; j < n; j++)
        out->outside |= (uint64_t)(outside[j] != 0) << j;
    out->visit_lane = lane;
    out->visit_whole = whole;
    out->hand_out = hand;
    out->settled = settled;
    out->n_outside = n_out;
    out->n_cut = n_cut;
}

/* ---- plain C -------------------------------------------------------------------------------- */

static uint32_t run_length(const rvi_scene *sc, uint32_t i, uint32_t limit, uint32_t special)
{
    uint32_t n = 0;
    while (n < limit && sc->first_child[i + n] == NONE && !(sc->flags[i + n] & special) &&
           (n == 0 || sc->next_sibling[i + n - 1] == i + n))
        n++;
    return n;
}

static void run_portable(const rvi_walk_policy *p, uint32_t in_mask, uint32_t first, uint32_t limit,
                         uint32_t special, rvi_walk_run *out)
{
    const rvi_scene *sc = p->scene;
    uint32_t n = run_length(sc, first, limit, special);
    out->n = n;
    if (n < RVI_WALK_RUN_MIN)
        return;
    const float(*ws)[4] = (const float(*)[4])(sc->world_sphere + first);
    const uint32_t *flags = sc->flags + first;
    int32_t outside[RVI_WALK_RUN_MAX], straddle[RVI_WALK_RUN_MAX], cut[RVI_WALK_RUN_MAX], plain[RVI_WALK_RUN_MAX];
    uint32_t m = 0; /* lanes with a cutoff: slots past cutoff_count have no ladder */
    if (p->cutoff_sq && first < p->cutoff_count)
        m = p->cutoff_count - first < n ? p->cutoff_count - first : n;
    for (uint32_t j = 0; j < n; j++) {
        float x = ws[j][0], y = ws[j][1], z = ws[j][2], r = ws[j][3];
        int32_t out_j = 0, strad = 0;
        for (int q = 0; q < 6; q++) {
            if (!(in_mask & (1u << q)))
                continue;
            const float *pl = p->frustum->planes[q];
            float d = ((pl[0] * x + pl[1] * y) + pl[2] * z) + pl[3];
            out_j |= (d < -r) & (d > -INFINITY);
            strad |= d < r;
        }
        outside[j] = out_j;
        straddle[j] = strad;
        cut[j] = 0;
        if (j < m && (flags[j] & RVI_NODE_HAS_LOD)) {
            float k = p->cutoff_sq[first + j];
            float dx = x - p->eye[0], dy = y - p->eye[1], dz = z - p->eye[2];
            float d2 = dx * dx + dy * dy + dz * dz, r2 = r * r;
            cut[j] = (k > 0.0f) & (r2 < d2 * k) & (d2 <= 3.4e38f);
        }
        plain[j] = (r >= 0.0f) & (fabsf(x) <= FLT_MAX) & (fabsf(y) <= FLT_MAX) & (fabsf(z) <= FLT_MAX);
    }
    settle_lanes(outside, straddle, cut, plain, flags, p, n, out);
    /* The run's summary and the box around it (empty when nobody reads them). */
    rvi_walk_acc acc = { INFINITY, 0.0f, p->summaries != NULL };
    float lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    rvi_walk_box visit = { { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY } };
    bool bound_ok = true;
    for (uint32_t j = 0; j < n; j++) {
        if (!plain[j]) {
            acc.ok = 0;
            bound_ok = false;
            continue;
        }
        if (!p->summaries)
            continue;
        for (int a = 0; a < 3; a++) {
            lo[a] = fminf(lo[a], ws[j][a] - ws[j][3]);
            hi[a] = fmaxf(hi[a], ws[j][a] + ws[j][3]);
        }
        if (!(flags[j] & RVI_NODE_HAS_GEOMETRY))
            continue;
        float k = j < m && (flags[j] & RVI_NODE_HAS_LOD) ? p->cutoff_sq[first + j] : 0.0f;
        if (k > 0.0f) {
            acc.k = fminf(acc.k, k);
            acc.r = fmaxf(acc.r, ws[j][3]);
        } else {
            acc.ok = 0;
            for (int a = 0; a < 3; a++) {
                visit.lo[a] = fminf(visit.lo[a], ws[j][a] - ws[j][3]);
                visit.hi[a] = fmaxf(visit.hi[a], ws[j][a] + ws[j][3]);
            }
        }
    }
    out->acc = acc;
    memcpy(out->lo, lo, sizeof lo);
    memcpy(out->hi, hi, sizeof hi);
    out->visit = visit;
    out->bound_ok = bound_ok;
}

/* The vector kernels' per-block verdicts, gathered as bits across the run. */
typedef struct run_tally {
    uint64_t outside, lane, whole, hand;
    uint32_t n, settled, n_out, n_cut, lod_bad, bound_bad;
} run_tally;

/* Block [k, k + lead) of the run: valid, the lanes in it; the rest, each lane's verdict. */
static inline void tally_block(run_tally *t, uint32_t k, uint32_t lead, uint32_t valid, uint32_t done,
                               uint32_t out, uint32_t plain, uint32_t cut, uint32_t hand)
{
    t->hand |= (uint64_t)(hand & valid) << k;
    done &= valid;
    out &= valid;
    plain &= valid;
    t->outside |= (uint64_t)out << k;
    t->lane |= (uint64_t)(plain & ~done) << k;
    t->whole |= (uint64_t)(valid & ~plain) << k;
    t->settled += (uint32_t)__builtin_popcount(done);
    t->n_out += (uint32_t)__builtin_popcount(done & out);
    t->n_cut += (uint32_t)__builtin_popcount(done & ~out & cut & valid);
    t->bound_bad |= valid & ~plain;
    t->n += lead;
}

static inline void tally_finish(const run_tally *t, float k_min, float r_max, const float lo[3], const float hi[3],
                                const float vlo[3], const float vhi[3], rvi_walk_run *out)
{
    memcpy(out->visit.lo, vlo, 3 * sizeof vlo[0]);
    memcpy(out->visit.hi, vhi, 3 * sizeof vhi[0]);
    out->n = t->n;
    out->outside = t->outside;
    out->visit_lane = t->lane;
    out->visit_whole = t->whole;
    out->hand_out = t->hand;
    out->settled = t->settled;
    out->n_outside = t->n_out;
    out->n_cut = t->n_cut;
    out->acc.k = k_min;
    out->acc.r = r_max;
    out->acc.ok = t->lod_bad == 0;
    memcpy(out->lo, lo, 3 * sizeof lo[0]);
    memcpy(out->hi, hi, 3 * sizeof hi[0]);
    out->bound_ok = t->bound_bad == 0;
}

/* ---- AVX2 ----------------------------------------------------------------------------------- */

#if RUN_X86
#define AVX2 __attribute__((target("avx2,popcnt")))

/* Eight spheres (x, y, z, r each) into four registers of eight components, in slot order. */
AVX2 static inline void load_spheres(const float (*ws)[4], __m256 *x, __m256 *y, __m256 *z, __m256 *r)
{
    __m256 a0 = _mm256_loadu_ps(ws[0]), a1 = _mm256_loadu_ps(ws[2]);
    __m256 a2 = _mm256_loadu_ps(ws[4]), a3 = _mm256_loadu_ps(ws[6]);
    __m256 b0 = _mm256_permute2f128_ps(a0, a2, 0x20), b1 = _mm256_permute2f128_ps(a0, a2, 0x31);
    __m256 b2 = _mm256_permute2f128_ps(a1, a3, 0x20), b3 = _mm256_permute2f128_ps(a1, a3, 0x31);
    __m256 t0 = _mm256_unpacklo_ps(b0, b1), t1 = _mm256_unpackhi_ps(b0, b1);
    __m256 t2 = _mm256_unpacklo_ps(b2, b3), t3 = _mm256_unpackhi_ps(b2, b3);
    *x = _mm256_shuffle_ps(t0, t2, 0x44);
    *y = _mm256_shuffle_ps(t0, t2, 0xEE);
    *z = _mm256_shuffle_ps(t1, t3, 0x44);
    *r = _mm256_shuffle_ps(t1, t3, 0xEE);
}

/* The lanes of block [k, k + 8) that continue the run (a leaf without a special flag,
 * linked from the lane before it), as bits; lanes at or past limit are not. */
AVX2 static inline uint32_t block_links(const rvi_scene *sc, uint32_t first, uint32_t k, uint32_t limit,
                                        uint32_t special, __m256i *flags_out)
{
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i in_range = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(limit - k)), step);
    const int32_t *base = (const int32_t *)sc->first_child + first + k;
    __m256i fc = _mm256_maskload_epi32(base, in_range);
    __m256i fl = _mm256_maskload_epi32((const int32_t *)sc->flags + first + k, in_range);
    __m256i prev;
    if (first + k > 0) {
        prev = _mm256_maskload_epi32((const int32_t *)sc->next_sibling + first + k - 1, in_range);
    } else { /* slot 0 starts the run: lanes 1.. read the links before them */
        int32_t v[8] = { 0 };
        for (uint32_t j = 1; j < 8 && j < limit; j++)
            v[j] = (int32_t)sc->next_sibling[j - 1];
        prev = _mm256_loadu_si256((const __m256i *)v);
    }
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int32_t)(first + k)), step);
    __m256i leaf = _mm256_cmpeq_epi32(fc, _mm256_set1_epi32(-1));
    __m256i plain_flags = _mm256_cmpeq_epi32(_mm256_and_si256(fl, _mm256_set1_epi32((int32_t)special)),
                                             _mm256_setzero_si256());
    __m256i linked = _mm256_cmpeq_epi32(prev, idx);
    if (k == 0)
        linked = _mm256_or_si256(linked, _mm256_setr_epi32(-1, 0, 0, 0, 0, 0, 0, 0));
    __m256i ok = _mm256_and_si256(_mm256_and_si256(leaf, plain_flags), _mm256_and_si256(linked, in_range));
    *flags_out = fl;
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(ok));
}

/* Grows the box lo[0..2], hi[0..2] by the spheres of the lanes in mask. */
AVX2 static inline void grow_box8(__m256 lo[3], __m256 hi[3], __m256 x, __m256 y, __m256 z, __m256 r, __m256 mask)
{
    const __m256 inf = _mm256_set1_ps(INFINITY), ninf = _mm256_set1_ps(-INFINITY);
    const __m256 c[3] = { x, y, z };
    for (int a = 0; a < 3; a++) {
        lo[a] = _mm256_min_ps(lo[a], _mm256_blendv_ps(inf, _mm256_sub_ps(c[a], r), mask));
        hi[a] = _mm256_max_ps(hi[a], _mm256_blendv_ps(ninf, _mm256_add_ps(c[a], r), mask));
    }
}

AVX2 static inline float hmin8(__m256 v)
{
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_min_ss(h, _mm_shuffle_ps(h, h, 1)));
}

AVX2 static inline float hmax8(__m256 v)
{
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}

/* The planes of the mask only, broadcast (a plane the parent's sphere is inside cannot
 * settle or flag a lane); returns how many. */
AVX2 static inline int planes8(const rv_frustum *fr, uint32_t in_mask, __m256 *pa, __m256 *pb, __m256 *pc,
                               __m256 *pw)
{
    int planes = 0;
    for (int q = 0; q < 6; q++) {
        if (!(in_mask & (1u << q)))
            continue;
        pa[planes] = _mm256_set1_ps(fr->planes[q][0]);
        pb[planes] = _mm256_set1_ps(fr->planes[q][1]);
        pc[planes] = _mm256_set1_ps(fr->planes[q][2]);
        pw[planes] = _mm256_set1_ps(fr->planes[q][3]);
        planes++;
    }
    return planes;
}

AVX2 static void run_avx2(const rvi_walk_policy *p, uint32_t in_mask, uint32_t first, uint32_t limit,
                          uint32_t special, rvi_walk_run *out)
{
    const rvi_scene *sc = p->scene;
    __m256 pa[6], pb[6], pc[6], pw[6];
    int planes = planes8(p->frustum, in_mask, pa, pb, pc, pw);
    const bool summarise = p->summaries != NULL;
    const __m256 neg_inf = _mm256_set1_ps(-INFINITY), big = _mm256_set1_ps(FLT_MAX), zero = _mm256_setzero_ps();
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), lim = _mm256_set1_ps(3.4e38f);
    const __m256 ex = _mm256_set1_ps(p->eye[0]), ey = _mm256_set1_ps(p->eye[1]), ez = _mm256_set1_ps(p->eye[2]);
    uint32_t cut_lanes = 0; /* lanes with a cutoff: slots past cutoff_count have no ladder */
    if (p->cutoff_sq && first < p->cutoff_count)
        cut_lanes = p->cutoff_count - first;
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), has_lod = _mm256_set1_epi32(RVI_NODE_HAS_LOD);
    const __m256i geometry_bit = _mm256_set1_epi32(RVI_NODE_HAS_GEOMETRY), zero_i = _mm256_setzero_si256();
    const __m256i box_bit = _mm256_set1_epi32(p->test_boxes ? (int32_t)RVI_NODE_HAS_TEST_BOX : 0);
    const __m256 keep = p->record_culls ? zero : _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    const __m256 inf = _mm256_set1_ps(INFINITY), ninf = _mm256_set1_ps(-INFINITY);
    __m256 lo[3] = { inf, inf, inf }, hi[3] = { ninf, ninf, ninf }, k_min = inf, r_max = zero;
    __m256 vlo[3] = { inf, inf, inf }, vhi[3] = { ninf, ninf, ninf }; /* the visit box */
    run_tally t = { 0 };
    for (uint32_t k = 0; k < limit; k += 8) {
        __m256i fl;
        uint32_t links = block_links(sc, first, k, limit, special, &fl);
        uint32_t lead = (uint32_t)__builtin_ctz(~links); /* lanes continuing the run */
        if (lead == 0)
            break;
        /* Spheres past the run's end are read but not used: keep the reads inside the array. */
        __m256 x, y, z, r;
        if (first + k + 8 <= sc->capacity) {
            load_spheres((const float(*)[4])(sc->world_sphere + first + k), &x, &y, &z, &r);
        } else {
            float tmp[8][4] = { { 0 } };
            memcpy(tmp, sc->world_sphere + first + k, (size_t)lead * sizeof tmp[0]);
            load_spheres((const float(*)[4])tmp, &x, &y, &z, &r);
        }
        __m256 out_v = zero, strad_v = zero, neg_r = _mm256_sub_ps(zero, r);
        for (int q = 0; q < planes; q++) {
            __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(pa[q], x), _mm256_mul_ps(pb[q], y)),
                                                   _mm256_mul_ps(pc[q], z)),
                                     pw[q]);
            out_v = _mm256_or_ps(out_v, _mm256_and_ps(_mm256_cmp_ps(d, neg_r, _CMP_LT_OQ),
                                                      _mm256_cmp_ps(d, neg_inf, _CMP_GT_OQ)));
            strad_v = _mm256_or_ps(strad_v, _mm256_cmp_ps(d, r, _CMP_LT_OQ));
        }
        __m256i with_k = zero_i;
        __m256 kv = zero, cut_v = zero;
        if (cut_lanes > k) {
            with_k = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(cut_lanes - k)), step);
            with_k = _mm256_and_si256(with_k, _mm256_cmpeq_epi32(_mm256_and_si256(fl, has_lod), has_lod));
            kv = _mm256_maskload_ps(p->cutoff_sq + first + k, with_k);
            __m256 dx = _mm256_sub_ps(x, ex), dy = _mm256_sub_ps(y, ey), dz = _mm256_sub_ps(z, ez);
            __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                      _mm256_mul_ps(dz, dz));
            cut_v = _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(kv, zero, _CMP_GT_OQ),
                                                _mm256_cmp_ps(_mm256_mul_ps(r, r), _mm256_mul_ps(d2, kv), _CMP_LT_OQ)),
                                  _mm256_cmp_ps(d2, lim, _CMP_LE_OQ));
            cut_v = _mm256_and_ps(cut_v, _mm256_castsi256_ps(with_k));
        }
        __m256 finite = _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(x, abs_mask), big, _CMP_LE_OQ),
                                      _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(y, abs_mask), big, _CMP_LE_OQ),
                                                    _mm256_cmp_ps(_mm256_and_ps(z, abs_mask), big, _CMP_LE_OQ)));
        __m256 plain = _mm256_and_ps(_mm256_cmp_ps(r, zero, _CMP_GE_OQ), finite);
        __m256 geometry = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_and_si256(fl, geometry_bit), zero_i));
        __m256 boxed = _mm256_and_ps(strad_v,
                                     _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_and_si256(fl, box_bit), zero_i)));
        /* Settled: outside by its sphere; or no box to try and then cut or not drawn. */
        __m256 done = _mm256_and_ps(_mm256_and_ps(plain, keep),
                                    _mm256_or_ps(out_v, _mm256_andnot_ps(boxed, _mm256_or_ps(cut_v,
                                                                 _mm256_andnot_ps(geometry, keep)))));
        uint32_t valid = (1u << lead) - 1u; /* lead <= 8 */
        uint32_t plain_run = (uint32_t)_mm256_movemask_ps(plain) & valid;
        if (summarise) { /* the run's summary and box, over the valid lanes */
            __m256 in_run = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)lead), step));
            __m256 boxed_lane = _mm256_and_ps(in_run, plain);
            grow_box8(lo, hi, x, y, z, r, boxed_lane);
            __m256 resting = _mm256_and_ps(_mm256_castsi256_ps(with_k), _mm256_cmp_ps(kv, zero, _CMP_GT_OQ));
            __m256 counted = _mm256_and_ps(boxed_lane, _mm256_and_ps(geometry, resting));
            k_min = _mm256_min_ps(k_min, _mm256_blendv_ps(inf, kv, counted));
            r_max = _mm256_max_ps(r_max, _mm256_blendv_ps(zero, r, counted));
            grow_box8(vlo, vhi, x, y, z, r, _mm256_and_ps(boxed_lane, _mm256_andnot_ps(resting, geometry)));
            t.lod_bad |= (valid & ~plain_run) |
                         ((uint32_t)_mm256_movemask_ps(_mm256_andnot_ps(resting, geometry)) & plain_run);
        }
        /* Only to hand out: plain geometry, not outside, no box to try, not cut. */
        __m256 hand = _mm256_andnot_ps(_mm256_or_ps(_mm256_or_ps(out_v, boxed), cut_v), _mm256_and_ps(plain, geometry));
        tally_block(&t, k, lead, valid, (uint32_t)_mm256_movemask_ps(done), (uint32_t)_mm256_movemask_ps(out_v),
                    plain_run, (uint32_t)_mm256_movemask_ps(_mm256_and_ps(cut_v, geometry)),
                    (uint32_t)_mm256_movemask_ps(hand));
        if (lead < 8)
            break;
    }
    if (!summarise) { /* nobody reads the summary: leave it empty */
        const float none_lo[3] = { INFINITY, INFINITY, INFINITY }, none_hi[3] = { -INFINITY, -INFINITY, -INFINITY };
        t.lod_bad = 1;
        tally_finish(&t, INFINITY, 0.0f, none_lo, none_hi, none_lo, none_hi, out);
        return;
    }
    const float box_lo[3] = { hmin8(lo[0]), hmin8(lo[1]), hmin8(lo[2]) };
    const float box_hi[3] = { hmax8(hi[0]), hmax8(hi[1]), hmax8(hi[2]) };
    const float visit_lo[3] = { hmin8(vlo[0]), hmin8(vlo[1]), hmin8(vlo[2]) };
    const float visit_hi[3] = { hmax8(vhi[0]), hmax8(vhi[1]), hmax8(vhi[2]) };
    tally_finish(&t, hmin8(k_min), hmax8(r_max), box_lo, box_hi, visit_lo, visit_hi, out);
}

/* ---- AVX-512 ------------------------------------------------------------------------------- */

#define AVX512 __attribute__((target("avx512f,popcnt")))

/* Sixteen spheres into four registers of sixteen components, in slot order. */
AVX512 static inline void load_spheres16(const float (*ws)[4], __m512 *x, __m512 *y, __m512 *z, __m512 *r)
{
    /* a_k holds spheres 4k .. 4k + 3; after the two rounds of unpacks each 128-bit lane
     * holds one component of four spheres, and the permutes put them in slot order. */
    __m512 a0 = _mm512_loadu_ps(ws[0]), a1 = _mm512_loadu_ps(ws[4]);
    __m512 a2 = _mm512_loadu_ps(ws[8]), a3 = _mm512_loadu_ps(ws[12]);
    __m512 t0 = _mm512_unpacklo_ps(a0, a1), t1 = _mm512_unpackhi_ps(a0, a1);
    __m512 t2 = _mm512_unpacklo_ps(a2, a3), t3 = _mm512_unpackhi_ps(a2, a3);
    __m512 xy0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    __m512 xy1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    __m512 zw0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    __m512 zw1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    /* In xy0, 128-bit lane m holds (x of sphere m, of m + 4, of m + 8, of m + 12) for the
     * pair (s, s + 1) interleaved as x_m, x_{m+4}, x_{m+8}, x_{m+12}: a fixed permutation. */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    *x = _mm512_permutexvar_ps(order, xy0);
    *y = _mm512_permutexvar_ps(order, xy1);
    *z = _mm512_permutexvar_ps(order, zw0);
    *r = _mm512_permutexvar_ps(order, zw1);
}

/* The planes of the mask only, broadcast (a plane the parent's sphere is inside cannot
 * settle or flag a lane); returns how many. */
AVX512 static inline int planes16(const rv_frustum *fr, uint32_t in_mask, __m512 *pa, __m512 *pb, __m512 *pc,
                                  __m512 *pw)
{
    int planes = 0;
    for (int q = 0; q < 6; q++) {
        if (!(in_mask & (1u << q)))
            continue;
        pa[planes] = _mm512_set1_ps(fr->planes[q][0]);
        pb[planes] = _mm512_set1_ps(fr->planes[q][1]);
        pc[planes] = _mm512_set1_ps(fr->planes[q][2]);
        pw[planes] = _mm512_set1_ps(fr->planes[q][3]);
        planes++;
    }
    return planes;
}

/* Grows the box lo[0..2], hi[0..2] by the spheres of the lanes in mask. */
AVX512 static inline void grow_box16(__m512 lo[3], __m512 hi[3], __m512 x, __m512 y, __m512 z, __m512 r,
                                     __mmask16 mask)
{
    const __m512 c[3] = { x, y, z };
    for (int a = 0; a < 3; a++) {
        lo[a] = _mm512_mask_min_ps(lo[a], mask, lo[a], _mm512_sub_ps(c[a], r));
        hi[a] = _mm512_mask_max_ps(hi[a], mask, hi[a], _mm512_add_ps(c[a], r));
    }
}

AVX512 static void run_avx512(const rvi_walk_policy *p, uint32_t in_mask, uint32_t first, uint32_t limit,
                              uint32_t special, rvi_walk_run *out)
{
    const rvi_scene *sc = p->scene;
    __m512 pa[6], pb[6], pc[6], pw[6];
    int planes = planes16(p->frustum, in_mask, pa, pb, pc, pw);
    const bool summarise = p->summaries != NULL;
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY), big = _mm512_set1_ps(FLT_MAX), zero = _mm512_setzero_ps();
    const __m512 lim = _mm512_set1_ps(3.4e38f);
    const __m512 ex = _mm512_set1_ps(p->eye[0]), ey = _mm512_set1_ps(p->eye[1]), ez = _mm512_set1_ps(p->eye[2]);
    uint32_t cut_lanes = 0;
    if (p->cutoff_sq && first < p->cutoff_count)
        cut_lanes = p->cutoff_count - first;
    const __m512i step = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i none = _mm512_set1_epi32(-1), special_v = _mm512_set1_epi32((int32_t)special);
    const __m512i has_lod = _mm512_set1_epi32(RVI_NODE_HAS_LOD), geometry_bit = _mm512_set1_epi32(RVI_NODE_HAS_GEOMETRY);
    const __m512i box_bit = _mm512_set1_epi32(p->test_boxes ? (int32_t)RVI_NODE_HAS_TEST_BOX : 0);
    const __mmask16 keep = p->record_culls ? 0 : 0xFFFF;
    const __m512 inf = _mm512_set1_ps(INFINITY), ninf = _mm512_set1_ps(-INFINITY);
    __m512 lo[3] = { inf, inf, inf }, hi[3] = { ninf, ninf, ninf }, k_min = inf, r_max = zero;
    __m512 vlo[3] = { inf, inf, inf }, vhi[3] = { ninf, ninf, ninf }; /* the visit box */
    run_tally t = { 0 };
    for (uint32_t k = 0; k < limit; k += 16) {
        __mmask16 in_range = (__mmask16)(limit - k >= 16 ? 0xFFFF : (1u << (limit - k)) - 1u);
        __m512i fc = _mm512_maskz_loadu_epi32(in_range, sc->first_child + first + k);
        __m512i fl = _mm512_maskz_loadu_epi32(in_range, sc->flags + first + k);
        __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int32_t)(first + k)), step);
        __mmask16 linked;
        if (first + k > 0) {
            __m512i prev = _mm512_maskz_loadu_epi32(in_range, sc->next_sibling + first + k - 1);
            linked = _mm512_cmpeq_epi32_mask(prev, idx);
        } else { /* slot 0 starts the run: lane 0 is linked by definition */
            __m512i prev = _mm512_maskz_loadu_epi32((__mmask16)(in_range & 0xFFFEu), sc->next_sibling + first + k);
            prev = _mm512_alignr_epi32(prev, _mm512_setzero_si512(), 15); /* lane j gets next[j - 1] */
            linked = (__mmask16)(_mm512_cmpeq_epi32_mask(prev, idx) | 1u);
        }
        if (k == 0)
            linked |= 1u;
        __mmask16 ok = (__mmask16)(in_range & linked & _mm512_cmpeq_epi32_mask(fc, none) &
                                   _mm512_testn_epi32_mask(fl, special_v));
        uint32_t lead = (uint32_t)__builtin_ctz(~(uint32_t)ok);
        if (lead == 0)
            break;
        __m512 x, y, z, r;
        if (first + k + 16 <= sc->capacity) {
            load_spheres16((const float(*)[4])(sc->world_sphere + first + k), &x, &y, &z, &r);
        } else {
            float tmp[16][4] = { { 0 } };
            memcpy(tmp, sc->world_sphere + first + k, (size_t)lead * sizeof tmp[0]);
            load_spheres16((const float(*)[4])tmp, &x, &y, &z, &r);
        }
        __m512 neg_r = _mm512_sub_ps(zero, r);
        __mmask16 out_m = 0, strad_m = 0;
        for (int q = 0; q < planes; q++) {
            __m512 d = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(pa[q], x), _mm512_mul_ps(pb[q], y)),
                                                   _mm512_mul_ps(pc[q], z)),
                                     pw[q]);
            out_m |= _mm512_cmp_ps_mask(d, neg_r, _CMP_LT_OQ) & _mm512_cmp_ps_mask(d, neg_inf, _CMP_GT_OQ);
            strad_m |= _mm512_cmp_ps_mask(d, r, _CMP_LT_OQ);
        }
        __mmask16 with_k = 0, cut_m = 0;
        __m512 kv = zero;
        if (cut_lanes > k) {
            with_k = (__mmask16)(_mm512_cmpgt_epi32_mask(_mm512_set1_epi32((int32_t)(cut_lanes - k)), step) &
                                 _mm512_test_epi32_mask(fl, has_lod));
            /* No masked load without a lane to load: one at an address with nothing mapped
             * costs a microcode assist even fully masked. */
            kv = with_k ? _mm512_maskz_loadu_ps(with_k, p->cutoff_sq + first + k) : zero;
            __m512 dx = _mm512_sub_ps(x, ex), dy = _mm512_sub_ps(y, ey), dz = _mm512_sub_ps(z, ez);
            __m512 d2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)),
                                      _mm512_mul_ps(dz, dz));
            cut_m = (__mmask16)(with_k & _mm512_cmp_ps_mask(kv, zero, _CMP_GT_OQ) &
                                _mm512_cmp_ps_mask(_mm512_mul_ps(r, r), _mm512_mul_ps(d2, kv), _CMP_LT_OQ) &
                                _mm512_cmp_ps_mask(d2, lim, _CMP_LE_OQ));
        }
        __mmask16 finite = (__mmask16)(_mm512_cmp_ps_mask(_mm512_abs_ps(x), big, _CMP_LE_OQ) &
                                       _mm512_cmp_ps_mask(_mm512_abs_ps(y), big, _CMP_LE_OQ) &
                                       _mm512_cmp_ps_mask(_mm512_abs_ps(z), big, _CMP_LE_OQ));
        __mmask16 plain = (__mmask16)(_mm512_cmp_ps_mask(r, zero, _CMP_GE_OQ) & finite);
        __mmask16 geometry = _mm512_test_epi32_mask(fl, geometry_bit);
        __mmask16 boxed = (__mmask16)(strad_m & _mm512_test_epi32_mask(fl, box_bit));
        /* Settled: outside by its sphere; or no box to try and then cut or not drawn. */
        __mmask16 done = (__mmask16)(plain & keep & (out_m | (~boxed & (cut_m | ~geometry))));
        uint32_t valid = lead >= 16 ? 0xFFFFu : (1u << lead) - 1u;
        if (summarise) { /* the run's summary and box, over the valid lanes */
            __mmask16 boxed_lane = (__mmask16)(plain & valid);
            grow_box16(lo, hi, x, y, z, r, boxed_lane);
            __mmask16 resting = (__mmask16)(with_k & _mm512_cmp_ps_mask(kv, zero, _CMP_GT_OQ));
            __mmask16 counted = (__mmask16)(boxed_lane & geometry & resting);
            k_min = _mm512_mask_min_ps(k_min, counted, k_min, kv);
            r_max = _mm512_mask_max_ps(r_max, counted, r_max, r);
            grow_box16(vlo, vhi, x, y, z, r, (__mmask16)(boxed_lane & geometry & ~resting));
            t.lod_bad |= (valid & ~(uint32_t)plain) | ((uint32_t)(geometry & ~resting) & plain & valid);
        }
        tally_block(&t, k, lead, valid, done, out_m, plain, cut_m & geometry,
                    plain & geometry & ~(out_m | boxed | cut_m)); /* only to hand out */
        if (lead < 16)
            break;
    }
    if (!summarise) { /* nobody reads the summary: leave it empty */
        const float none_lo[3] = { INFINITY, INFINITY, INFINITY }, none_hi[3] = { -INFINITY, -INFINITY, -INFINITY };
        t.lod_bad = 1;
        tally_finish(&t, INFINITY, 0.0f, none_lo, none_hi, none_lo, none_hi, out);
        return;
    }
    const float box_lo[3] = { _mm512_reduce_min_ps(lo[0]), _mm512_reduce_min_ps(lo[1]), _mm512_reduce_min_ps(lo[2]) };
    const float box_hi[3] = { _mm512_reduce_max_ps(hi[0]), _mm512_reduce_max_ps(hi[1]), _mm512_reduce_max_ps(hi[2]) };
    const float visit_lo[3] = { _mm512_reduce_min_ps(vlo[0]), _mm512_reduce_min_ps(vlo[1]), _mm512_reduce_min_ps(vlo[2]) };
    const float visit_hi[3] = { _mm512_reduce_max_ps(vhi[0]), _mm512_reduce_max_ps(vhi[1]), _mm512_reduce_max_ps(vhi[2]) };
    tally_finish(&t, _mm512_reduce_min_ps(k_min), _mm512_reduce_max_ps(r_max), box_lo, box_hi, visit_lo, visit_hi,
                 out);
}
#endif

void rvi_walk_classify_run(const rvi_walk_policy *p, int vector, uint32_t in_mask, uint32_t first, uint32_t limit,
                           rvi_walk_run *out)
{
    const rvi_scene *sc = p->scene;
    uint32_t special = p->defer_flags | p->hook_flags | p->pad_flags | RVI_NODE_HIDDEN;
    if (limit > sc->capacity - first)
        limit = sc->capacity - first;
    if (limit > RVI_WALK_RUN_MAX)
        limit = RVI_WALK_RUN_MAX;
#if RUN_X86
    if (vector == RVI_SIMD_AVX512) {
        run_avx512(p, in_mask, first, limit, special, out);
        return;
    }
    if (vector == RVI_SIMD_AVX2) {
        run_avx2(p, in_mask, first, limit, special, out);
        return;
    }
#else
    (void)vector;
#endif
    run_portable(p, in_mask, first, limit, special, out);
}
