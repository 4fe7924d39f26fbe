/* rv_cull_spheres: in-place compaction of the instance spheres that meet a frustum, in a
 * scalar path and SSE2 / AVX2 / AVX-512 paths picked at run time (docs/design.md §2).
 *
 * Every path computes, per sphere, m = (|x| + |y|) + |z| and t = r + RVI_PLANE_SLACK * m,
 * and per valid plane d = ((a*x + b*y) + c*z) + w with separate float multiplies and adds
 * (never fused), and culls the sphere when r >= 0, m <= RVI_PLANE_REACH and
 * d + (t + s) < 0 for some plane, s = rvi_plane_slack(w) (with t, the bound on the
 * rounding: a sphere that meets the exact frustum is never culled). The comparisons
 * are ordered, so a NaN anywhere keeps the sphere.
 * Identical arithmetic lane for lane is what makes every level keep exactly the same set:
 * the SIMD functions carry target attributes so the library builds with default flags,
 * and the C11 (ISO) mode the library is built in keeps the compiler from contracting the
 * scalar expression into a fused multiply-add. */
#include "frustum.h"

#include "core/check.h"

#include <math.h>
#include <string.h>

/* Keep a * b + c two roundings in every path: GCC in GNU mode would fuse it inside the
 * AVX-512 functions (their target implies FMA) and the levels would then disagree. */
#include "core/no_contract.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RVI_CULL_X86 1
#include <immintrin.h>
#else
#define RVI_CULL_X86 0
#endif

/* The valid planes of a frustum, split by component for broadcasting. */
typedef struct cull_planes {
    uint32_t count;
    float a[6], b[6], c[6], w[6];
    float s[6]; /* rvi_plane_slack(w) */
} cull_planes;

/* Where payload items go: count items of stride bytes; NULL base when there is none. */
typedef struct cull_payload {
    uint8_t *base;
    size_t stride;
} cull_payload;

static inline void payload_move(const cull_payload *payload, uint32_t dst, uint32_t src)
{
    if (dst != src) /* dst < src: the two items never overlap */
        memcpy(payload->base + (size_t)dst * payload->stride,
               payload->base + (size_t)src * payload->stride, payload->stride);
}

/* Moves the payload of every kept item of a group (keep bit j = item first + j) down to
 * dst onwards; returns the next dst. */
static inline uint32_t payload_compact_group(const cull_payload *payload, uint32_t keep, uint32_t first,
                                             uint32_t dst)
{
    while (keep != 0) {
        uint32_t j = (uint32_t)__builtin_ctz(keep);
        payload_move(payload, dst++, first + j);
        keep &= keep - 1;
    }
    return dst;
}

/* The reference test, shared by the scalar path and every SIMD tail. All six slots are
 * evaluated (unused ones never cull), so the loop unrolls and nothing branches. */
static inline bool sphere_culled(const cull_planes *planes, float x, float y, float z, float r)
{
    float m = (fabsf(x) + fabsf(y)) + fabsf(z);
    float t = r + RVI_PLANE_SLACK * m;
    bool culled = false;
    for (int k = 0; k < 6; k++) {
        float d = ((planes->a[k] * x + planes->b[k] * y) + planes->c[k] * z) + planes->w[k];
        culled |= d + (t + planes->s[k]) < 0.0f;
    }
    return culled && r >= 0.0f && m <= RVI_PLANE_REACH;
}

/* The scalar path over [first, count), compacting to kept onwards; also finishes every
 * SIMD path on its last (< one vector) spheres. Not inlined, so it is always compiled for
 * the baseline target, never inside a SIMD function's wider instruction set. Each sphere
 * is written at kept whatever the verdict and kept advances by it: no branch to mispredict
 * on a random mix (kept <= i, so nothing unread is overwritten). */
__attribute__((noinline)) static uint32_t cull_soa_tail(const cull_planes *planes, float *x, float *y,
                                                        float *z, float *r, uint32_t first, uint32_t count,
                                                        uint32_t kept, const cull_payload *payload)
{
    for (uint32_t i = first; i < count; i++) {
        float sx = x[i], sy = y[i], sz = z[i], sr = r[i];
        uint32_t keep = !sphere_culled(planes, sx, sy, sz, sr);
        x[kept] = sx;
        y[kept] = sy;
        z[kept] = sz;
        r[kept] = sr;
        if (keep && payload->base != NULL)
            payload_move(payload, kept, i);
        kept += keep;
    }
    return kept;
}

__attribute__((noinline)) static uint32_t cull_aos_tail(const cull_planes *planes, float *spheres,
                                                        uint32_t first, uint32_t count, uint32_t kept,
                                                        const cull_payload *payload)
{
    for (uint32_t i = first; i < count; i++) {
        float s[4];
        memcpy(s, spheres + 4 * (size_t)i, sizeof s);
        uint32_t keep = !sphere_culled(planes, s[0], s[1], s[2], s[3]);
        memcpy(spheres + 4 * (size_t)kept, s, sizeof s);
        if (keep && payload->base != NULL)
            payload_move(payload, kept, i);
        kept += keep;
    }
    return kept;
}

#if RVI_CULL_X86

/* ---- SSE2: 4 lanes ----------------------------------------------------------------------- */

typedef struct planes_sse2 {
    __m128 a[6], b[6], c[6], w[6], s[6];
} planes_sse2;

__attribute__((target("sse2"))) static inline void broadcast_sse2(const cull_planes *planes, planes_sse2 *out)
{
    for (int k = 0; k < 6; k++) {
        out->a[k] = _mm_set1_ps(planes->a[k]);
        out->b[k] = _mm_set1_ps(planes->b[k]);
        out->c[k] = _mm_set1_ps(planes->c[k]);
        out->w[k] = _mm_set1_ps(planes->w[k]);
        out->s[k] = _mm_set1_ps(planes->s[k]);
    }
}

/* Keep bits (bit j = lane j) of four spheres. All six planes are evaluated: the unused
 * ones are (0, 0, 0, +inf), which never cull, so no lane branches on the plane count. */
__attribute__((target("sse2"))) static inline uint32_t keep_sse2(const planes_sse2 *p, __m128 x, __m128 y,
                                                                __m128 z, __m128 r)
{
    __m128 sign = _mm_set1_ps(-0.0f), zero = _mm_setzero_ps();
    __m128 m = _mm_add_ps(_mm_add_ps(_mm_andnot_ps(sign, x), _mm_andnot_ps(sign, y)), _mm_andnot_ps(sign, z));
    __m128 t = _mm_add_ps(r, _mm_mul_ps(_mm_set1_ps(RVI_PLANE_SLACK), m));
    __m128 culled = _mm_setzero_ps();
    for (int k = 0; k < 6; k++) {
        __m128 d = _mm_add_ps(_mm_mul_ps(p->a[k], x), _mm_mul_ps(p->b[k], y));
        d = _mm_add_ps(_mm_add_ps(d, _mm_mul_ps(p->c[k], z)), p->w[k]);
        d = _mm_add_ps(d, _mm_add_ps(t, p->s[k]));
        culled = _mm_or_ps(culled, _mm_cmplt_ps(d, zero)); /* ordered: NaN never culls */
    }
    culled = _mm_and_ps(culled, _mm_cmpge_ps(r, zero));
    culled = _mm_and_ps(culled, _mm_cmple_ps(m, _mm_set1_ps(RVI_PLANE_REACH)));
    return ~(uint32_t)_mm_movemask_ps(culled) & 0xFu;
}

__attribute__((target("sse2"), always_inline)) static inline uint32_t cull_soa_sse2_body(
        const cull_planes *planes, float *x, float *y, float *z, float *r, uint32_t count,
        const cull_payload *payload, bool with_payload)
{
    planes_sse2 p;
    broadcast_sse2(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 4; i += 4) {
        __m128 vx = _mm_loadu_ps(x + i), vy = _mm_loadu_ps(y + i);
        __m128 vz = _mm_loadu_ps(z + i), vr = _mm_loadu_ps(r + i);
        uint32_t keep = keep_sse2(&p, vx, vy, vz, vr);
        if (with_payload)
            payload_compact_group(payload, keep, i, kept);
        /* SSE2 has no variable shuffle: write every lane at kept and advance by its bit.
         * kept <= i + j, so a write never lands on a lane not yet read. */
        float lx[4], ly[4], lz[4], lr[4];
        _mm_storeu_ps(lx, vx);
        _mm_storeu_ps(ly, vy);
        _mm_storeu_ps(lz, vz);
        _mm_storeu_ps(lr, vr);
        for (int j = 0; j < 4; j++) {
            x[kept] = lx[j];
            y[kept] = ly[j];
            z[kept] = lz[j];
            r[kept] = lr[j];
            kept += (keep >> j) & 1u;
        }
    }
    return cull_soa_tail(planes, x, y, z, r, i, count, kept, payload);
}

/* Each path is instantiated twice: without a payload nothing in the loop calls out, so
 * the plane constants stay in registers. */
__attribute__((target("sse2"))) static uint32_t cull_soa_sse2(const cull_planes *planes, float *x,
        float *y, float *z, float *r, uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_soa_sse2_body(planes, x, y, z, r, count, payload, true)
                                 : cull_soa_sse2_body(planes, x, y, z, r, count, payload, false);
}

__attribute__((target("sse2"), always_inline)) static inline uint32_t cull_aos_sse2_body(
        const cull_planes *planes, float *spheres, uint32_t count, const cull_payload *payload,
        bool with_payload)
{
    planes_sse2 p;
    broadcast_sse2(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 4; i += 4) {
        const float *s = spheres + 4 * (size_t)i;
        __m128 s0 = _mm_loadu_ps(s), s1 = _mm_loadu_ps(s + 4);
        __m128 s2 = _mm_loadu_ps(s + 8), s3 = _mm_loadu_ps(s + 12);
        __m128 t0 = _mm_unpacklo_ps(s0, s1); /* x0 x1 y0 y1 */
        __m128 t1 = _mm_unpacklo_ps(s2, s3); /* x2 x3 y2 y3 */
        __m128 t2 = _mm_unpackhi_ps(s0, s1); /* z0 z1 r0 r1 */
        __m128 t3 = _mm_unpackhi_ps(s2, s3); /* z2 z3 r2 r3 */
        uint32_t keep = keep_sse2(&p, _mm_movelh_ps(t0, t1), _mm_movehl_ps(t1, t0),
                                  _mm_movelh_ps(t2, t3), _mm_movehl_ps(t3, t2));
        if (with_payload)
            payload_compact_group(payload, keep, i, kept);
        _mm_storeu_ps(spheres + 4 * (size_t)kept, s0);
        kept += keep & 1u;
        _mm_storeu_ps(spheres + 4 * (size_t)kept, s1);
        kept += (keep >> 1) & 1u;
        _mm_storeu_ps(spheres + 4 * (size_t)kept, s2);
        kept += (keep >> 2) & 1u;
        _mm_storeu_ps(spheres + 4 * (size_t)kept, s3);
        kept += (keep >> 3) & 1u;
    }
    return cull_aos_tail(planes, spheres, i, count, kept, payload);
}

__attribute__((target("sse2"))) static uint32_t cull_aos_sse2(const cull_planes *planes, float *spheres,
        uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_aos_sse2_body(planes, spheres, count, payload, true)
                                 : cull_aos_sse2_body(planes, spheres, count, payload, false);
}

/* ---- AVX2: 8 lanes ----------------------------------------------------------------------- */

/* For each 8-bit keep mask, the lanes to gather, in order, one byte each (unused bytes 0):
 * a left-pack through vpermps. */
static const uint64_t compact_lut[256] = {
    0x0000000000000000ull, 0x0000000000000000ull, 0x0000000000000001ull, 0x0000000000000100ull,
    0x0000000000000002ull, 0x0000000000000200ull, 0x0000000000000201ull, 0x0000000000020100ull,
    0x0000000000000003ull, 0x0000000000000300ull, 0x0000000000000301ull, 0x0000000000030100ull,
    0x0000000000000302ull, 0x0000000000030200ull, 0x0000000000030201ull, 0x0000000003020100ull,
    0x0000000000000004ull, 0x0000000000000400ull, 0x0000000000000401ull, 0x0000000000040100ull,
    0x0000000000000402ull, 0x0000000000040200ull, 0x0000000000040201ull, 0x0000000004020100ull,
    0x0000000000000403ull, 0x0000000000040300ull, 0x0000000000040301ull, 0x0000000004030100ull,
    0x0000000000040302ull, 0x0000000004030200ull, 0x0000000004030201ull, 0x0000000403020100ull,
    0x0000000000000005ull, 0x0000000000000500ull, 0x0000000000000501ull, 0x0000000000050100ull,
    0x0000000000000502ull, 0x0000000000050200ull, 0x0000000000050201ull, 0x0000000005020100ull,
    0x0000000000000503ull, 0x0000000000050300ull, 0x0000000000050301ull, 0x0000000005030100ull,
    0x0000000000050302ull, 0x0000000005030200ull, 0x0000000005030201ull, 0x0000000503020100ull,
    0x0000000000000504ull, 0x0000000000050400ull, 0x0000000000050401ull, 0x0000000005040100ull,
    0x0000000000050402ull, 0x0000000005040200ull, 0x0000000005040201ull, 0x0000000504020100ull,
    0x0000000000050403ull, 0x0000000005040300ull, 0x0000000005040301ull, 0x0000000504030100ull,
    0x0000000005040302ull, 0x0000000504030200ull, 0x0000000504030201ull, 0x0000050403020100ull,
    0x0000000000000006ull, 0x0000000000000600ull, 0x0000000000000601ull, 0x0000000000060100ull,
    0x0000000000000602ull, 0x0000000000060200ull, 0x0000000000060201ull, 0x0000000006020100ull,
    0x0000000000000603ull, 0x0000000000060300ull, 0x0000000000060301ull, 0x0000000006030100ull,
    0x0000000000060302ull, 0x0000000006030200ull, 0x0000000006030201ull, 0x0000000603020100ull,
    0x0000000000000604ull, 0x0000000000060400ull, 0x0000000000060401ull, 0x0000000006040100ull,
    0x0000000000060402ull, 0x0000000006040200ull, 0x0000000006040201ull, 0x0000000604020100ull,
    0x0000000000060403ull, 0x0000000006040300ull, 0x0000000006040301ull, 0x0000000604030100ull,
    0x0000000006040302ull, 0x0000000604030200ull, 0x0000000604030201ull, 0x0000060403020100ull,
    0x0000000000000605ull, 0x0000000000060500ull, 0x0000000000060501ull, 0x0000000006050100ull,
    0x0000000000060502ull, 0x0000000006050200ull, 0x0000000006050201ull, 0x0000000605020100ull,
    0x0000000000060503ull, 0x0000000006050300ull, 0x0000000006050301ull, 0x0000000605030100ull,
    0x0000000006050302ull, 0x0000000605030200ull, 0x0000000605030201ull, 0x0000060503020100ull,
    0x0000000000060504ull, 0x0000000006050400ull, 0x0000000006050401ull, 0x0000000605040100ull,
    0x0000000006050402ull, 0x0000000605040200ull, 0x0000000605040201ull, 0x0000060504020100ull,
    0x0000000006050403ull, 0x0000000605040300ull, 0x0000000605040301ull, 0x0000060504030100ull,
    0x0000000605040302ull, 0x0000060504030200ull, 0x0000060504030201ull, 0x0006050403020100ull,
    0x0000000000000007ull, 0x0000000000000700ull, 0x0000000000000701ull, 0x0000000000070100ull,
    0x0000000000000702ull, 0x0000000000070200ull, 0x0000000000070201ull, 0x0000000007020100ull,
    0x0000000000000703ull, 0x0000000000070300ull, 0x0000000000070301ull, 0x0000000007030100ull,
    0x0000000000070302ull, 0x0000000007030200ull, 0x0000000007030201ull, 0x0000000703020100ull,
    0x0000000000000704ull, 0x0000000000070400ull, 0x0000000000070401ull, 0x0000000007040100ull,
    0x0000000000070402ull, 0x0000000007040200ull, 0x0000000007040201ull, 0x0000000704020100ull,
    0x0000000000070403ull, 0x0000000007040300ull, 0x0000000007040301ull, 0x0000000704030100ull,
    0x0000000007040302ull, 0x0000000704030200ull, 0x0000000704030201ull, 0x0000070403020100ull,
    0x0000000000000705ull, 0x0000000000070500ull, 0x0000000000070501ull, 0x0000000007050100ull,
    0x0000000000070502ull, 0x0000000007050200ull, 0x0000000007050201ull, 0x0000000705020100ull,
    0x0000000000070503ull, 0x0000000007050300ull, 0x0000000007050301ull, 0x0000000705030100ull,
    0x0000000007050302ull, 0x0000000705030200ull, 0x0000000705030201ull, 0x0000070503020100ull,
    0x0000000000070504ull, 0x0000000007050400ull, 0x0000000007050401ull, 0x0000000705040100ull,
    0x0000000007050402ull, 0x0000000705040200ull, 0x0000000705040201ull, 0x0000070504020100ull,
    0x0000000007050403ull, 0x0000000705040300ull, 0x0000000705040301ull, 0x0000070504030100ull,
    0x0000000705040302ull, 0x0000070504030200ull, 0x0000070504030201ull, 0x0007050403020100ull,
    0x0000000000000706ull, 0x0000000000070600ull, 0x0000000000070601ull, 0x0000000007060100ull,
    0x0000000000070602ull, 0x0000000007060200ull, 0x0000000007060201ull, 0x0000000706020100ull,
    0x0000000000070603ull, 0x0000000007060300ull, 0x0000000007060301ull, 0x0000000706030100ull,
    0x0000000007060302ull, 0x0000000706030200ull, 0x0000000706030201ull, 0x0000070603020100ull,
    0x0000000000070604ull, 0x0000000007060400ull, 0x0000000007060401ull, 0x0000000706040100ull,
    0x0000000007060402ull, 0x0000000706040200ull, 0x0000000706040201ull, 0x0000070604020100ull,
    0x0000000007060403ull, 0x0000000706040300ull, 0x0000000706040301ull, 0x0000070604030100ull,
    0x0000000706040302ull, 0x0000070604030200ull, 0x0000070604030201ull, 0x0007060403020100ull,
    0x0000000000070605ull, 0x0000000007060500ull, 0x0000000007060501ull, 0x0000000706050100ull,
    0x0000000007060502ull, 0x0000000706050200ull, 0x0000000706050201ull, 0x0000070605020100ull,
    0x0000000007060503ull, 0x0000000706050300ull, 0x0000000706050301ull, 0x0000070605030100ull,
    0x0000000706050302ull, 0x0000070605030200ull, 0x0000070605030201ull, 0x0007060503020100ull,
    0x0000000007060504ull, 0x0000000706050400ull, 0x0000000706050401ull, 0x0000070605040100ull,
    0x0000000706050402ull, 0x0000070605040200ull, 0x0000070605040201ull, 0x0007060504020100ull,
    0x0000000706050403ull, 0x0000070605040300ull, 0x0000070605040301ull, 0x0007060504030100ull,
    0x0000070605040302ull, 0x0007060504030200ull, 0x0007060504030201ull, 0x0706050403020100ull,
};

typedef struct planes_avx2 {
    __m256 a[6], b[6], c[6], w[6], s[6];
} planes_avx2;

__attribute__((target("avx2"))) static inline void broadcast_avx2(const cull_planes *planes, planes_avx2 *out)
{
    for (int k = 0; k < 6; k++) {
        out->a[k] = _mm256_set1_ps(planes->a[k]);
        out->b[k] = _mm256_set1_ps(planes->b[k]);
        out->c[k] = _mm256_set1_ps(planes->c[k]);
        out->w[k] = _mm256_set1_ps(planes->w[k]);
        out->s[k] = _mm256_set1_ps(planes->s[k]);
    }
}

__attribute__((target("avx2"))) static inline uint32_t keep_avx2(const planes_avx2 *p, __m256 x, __m256 y,
                                                                __m256 z, __m256 r)
{
    __m256 sign = _mm256_set1_ps(-0.0f), zero = _mm256_setzero_ps();
    __m256 m = _mm256_add_ps(_mm256_add_ps(_mm256_andnot_ps(sign, x), _mm256_andnot_ps(sign, y)),
                             _mm256_andnot_ps(sign, z));
    __m256 t = _mm256_add_ps(r, _mm256_mul_ps(_mm256_set1_ps(RVI_PLANE_SLACK), m));
    __m256 culled = _mm256_setzero_ps();
    for (int k = 0; k < 6; k++) {
        __m256 d = _mm256_add_ps(_mm256_mul_ps(p->a[k], x), _mm256_mul_ps(p->b[k], y));
        d = _mm256_add_ps(_mm256_add_ps(d, _mm256_mul_ps(p->c[k], z)), p->w[k]);
        d = _mm256_add_ps(d, _mm256_add_ps(t, p->s[k]));
        culled = _mm256_or_ps(culled, _mm256_cmp_ps(d, zero, _CMP_LT_OQ));
    }
    culled = _mm256_and_ps(culled, _mm256_cmp_ps(r, zero, _CMP_GE_OQ));
    culled = _mm256_and_ps(culled, _mm256_cmp_ps(m, _mm256_set1_ps(RVI_PLANE_REACH), _CMP_LE_OQ));
    return ~(uint32_t)_mm256_movemask_ps(culled) & 0xFFu;
}

__attribute__((target("avx2"))) static inline __m256 left_pack_avx2(__m256 v, __m256i lanes)
{
    return _mm256_permutevar8x32_ps(v, lanes);
}

__attribute__((target("avx2,popcnt"), always_inline)) static inline uint32_t cull_soa_avx2_body(
        const cull_planes *planes, float *x, float *y, float *z, float *r, uint32_t count,
        const cull_payload *payload, bool with_payload)
{
    planes_avx2 p;
    broadcast_avx2(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 8; i += 8) {
        __m256 vx = _mm256_loadu_ps(x + i), vy = _mm256_loadu_ps(y + i);
        __m256 vz = _mm256_loadu_ps(z + i), vr = _mm256_loadu_ps(r + i);
        uint32_t keep = keep_avx2(&p, vx, vy, vz, vr);
        if (with_payload)
            payload_compact_group(payload, keep, i, kept);
        /* Full-width stores at kept <= i: the lanes past the kept ones land on slots
         * already read (below i + 8) and are overwritten later or lie past the result. */
        __m256i lanes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&compact_lut[keep]));
        _mm256_storeu_ps(x + kept, left_pack_avx2(vx, lanes));
        _mm256_storeu_ps(y + kept, left_pack_avx2(vy, lanes));
        _mm256_storeu_ps(z + kept, left_pack_avx2(vz, lanes));
        _mm256_storeu_ps(r + kept, left_pack_avx2(vr, lanes));
        kept += (uint32_t)__builtin_popcount(keep);
    }
    return cull_soa_tail(planes, x, y, z, r, i, count, kept, payload);
}

__attribute__((target("avx2,popcnt"))) static uint32_t cull_soa_avx2(const cull_planes *planes,
        float *x, float *y, float *z, float *r, uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_soa_avx2_body(planes, x, y, z, r, count, payload, true)
                                 : cull_soa_avx2_body(planes, x, y, z, r, count, payload, false);
}

__attribute__((target("avx2"), always_inline)) static inline uint32_t cull_aos_avx2_body(
        const cull_planes *planes, float *spheres, uint32_t count, const cull_payload *payload,
        bool with_payload)
{
    planes_avx2 p;
    broadcast_avx2(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 8; i += 8) {
        const float *s = spheres + 4 * (size_t)i;
        __m256 a = _mm256_loadu_ps(s), b = _mm256_loadu_ps(s + 8);       /* s0|s1, s2|s3 */
        __m256 c = _mm256_loadu_ps(s + 16), d = _mm256_loadu_ps(s + 24); /* s4|s5, s6|s7 */
        __m256 t0 = _mm256_unpacklo_ps(a, b); /* x0 x2 y0 y2 | x1 x3 y1 y3 */
        __m256 t1 = _mm256_unpacklo_ps(c, d); /* x4 x6 y4 y6 | x5 x7 y5 y7 */
        __m256 t2 = _mm256_unpackhi_ps(a, b);
        __m256 t3 = _mm256_unpackhi_ps(c, d);
        /* Lane 4h + q holds sphere 2q + h. */
        uint32_t keep = keep_avx2(&p, _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)),
                                  _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2)));
        __m128 sphere[8] = {
            _mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1),
            _mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1),
            _mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1),
            _mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1),
        };
        for (uint32_t j = 0; j < 8; j++) {
            uint32_t bit = (keep >> (4 * (j & 1) + (j >> 1))) & 1u;
            _mm_storeu_ps(spheres + 4 * (size_t)kept, sphere[j]);
            if (bit && with_payload)
                payload_move(payload, kept, i + j);
            kept += bit;
        }
    }
    return cull_aos_tail(planes, spheres, i, count, kept, payload);
}

__attribute__((target("avx2"))) static uint32_t cull_aos_avx2(const cull_planes *planes, float *spheres,
        uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_aos_avx2_body(planes, spheres, count, payload, true)
                                 : cull_aos_avx2_body(planes, spheres, count, payload, false);
}

/* ---- AVX-512F: 16 lanes ------------------------------------------------------------------ */

typedef struct planes_avx512 {
    __m512 a[6], b[6], c[6], w[6], s[6];
} planes_avx512;

__attribute__((target("avx512f"))) static inline void broadcast_avx512(const cull_planes *planes,
                                                                      planes_avx512 *out)
{
    for (int k = 0; k < 6; k++) {
        out->a[k] = _mm512_set1_ps(planes->a[k]);
        out->b[k] = _mm512_set1_ps(planes->b[k]);
        out->c[k] = _mm512_set1_ps(planes->c[k]);
        out->w[k] = _mm512_set1_ps(planes->w[k]);
        out->s[k] = _mm512_set1_ps(planes->s[k]);
    }
}

__attribute__((target("avx512f"))) static inline uint32_t keep_avx512(const planes_avx512 *p, __m512 x,
                                                                     __m512 y, __m512 z, __m512 r)
{
    /* AVX-512F has no float and-not: clear the sign bits as integers, as fabsf does. */
    __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
    __m512 ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), magnitude));
    __m512 ay = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(y), magnitude));
    __m512 az = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(z), magnitude));
    __m512 m = _mm512_add_ps(_mm512_add_ps(ax, ay), az), zero = _mm512_setzero_ps();
    __m512 t = _mm512_add_ps(r, _mm512_mul_ps(_mm512_set1_ps(RVI_PLANE_SLACK), m));
    __mmask16 culled = 0;
    for (int k = 0; k < 6; k++) {
        __m512 d = _mm512_add_ps(_mm512_mul_ps(p->a[k], x), _mm512_mul_ps(p->b[k], y));
        d = _mm512_add_ps(_mm512_add_ps(d, _mm512_mul_ps(p->c[k], z)), p->w[k]);
        d = _mm512_add_ps(d, _mm512_add_ps(t, p->s[k]));
        culled |= _mm512_cmp_ps_mask(d, zero, _CMP_LT_OQ);
    }
    culled &= _mm512_cmp_ps_mask(r, zero, _CMP_GE_OQ);
    culled &= _mm512_cmp_ps_mask(m, _mm512_set1_ps(RVI_PLANE_REACH), _CMP_LE_OQ);
    return ~(uint32_t)culled & 0xFFFFu;
}

__attribute__((target("avx512f,popcnt"), always_inline)) static inline uint32_t cull_soa_avx512_body(
        const cull_planes *planes, float *x, float *y, float *z, float *r, uint32_t count,
        const cull_payload *payload, bool with_payload)
{
    planes_avx512 p;
    broadcast_avx512(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 16; i += 16) {
        __m512 vx = _mm512_loadu_ps(x + i), vy = _mm512_loadu_ps(y + i);
        __m512 vz = _mm512_loadu_ps(z + i), vr = _mm512_loadu_ps(r + i);
        uint32_t keep = keep_avx512(&p, vx, vy, vz, vr);
        if (with_payload)
            payload_compact_group(payload, keep, i, kept);
        /* Compress in a register and store the full vector (compress-to-memory is slow on
         * some cores); the spare lanes land on slots already read, as in the AVX2 path. */
        __mmask16 k = (__mmask16)keep;
        _mm512_storeu_ps(x + kept, _mm512_maskz_compress_ps(k, vx));
        _mm512_storeu_ps(y + kept, _mm512_maskz_compress_ps(k, vy));
        _mm512_storeu_ps(z + kept, _mm512_maskz_compress_ps(k, vz));
        _mm512_storeu_ps(r + kept, _mm512_maskz_compress_ps(k, vr));
        kept += (uint32_t)__builtin_popcount(keep);
    }
    return cull_soa_tail(planes, x, y, z, r, i, count, kept, payload);
}

__attribute__((target("avx512f,popcnt"))) static uint32_t cull_soa_avx512(const cull_planes *planes,
        float *x, float *y, float *z, float *r, uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_soa_avx512_body(planes, x, y, z, r, count, payload, true)
                                 : cull_soa_avx512_body(planes, x, y, z, r, count, payload, false);
}

__attribute__((target("avx512f,popcnt"), always_inline)) static inline uint32_t cull_aos_avx512_body(
        const cull_planes *planes, float *spheres, uint32_t count, const cull_payload *payload,
        bool with_payload)
{
    planes_avx512 p;
    broadcast_avx512(planes, &p);
    uint32_t kept = 0, i = 0;
    for (; count - i >= 16; i += 16) {
        float *s = spheres + 4 * (size_t)i;
        __m512 v[4] = {_mm512_loadu_ps(s), _mm512_loadu_ps(s + 16), _mm512_loadu_ps(s + 32),
                       _mm512_loadu_ps(s + 48)}; /* spheres 4q .. 4q + 3 in v[q] */
        __m512 t0 = _mm512_unpacklo_ps(v[0], v[1]);
        __m512 t1 = _mm512_unpacklo_ps(v[2], v[3]);
        __m512 t2 = _mm512_unpackhi_ps(v[0], v[1]);
        __m512 t3 = _mm512_unpackhi_ps(v[2], v[3]);
        /* Lane 4l + q holds sphere 4q + l. */
        uint32_t keep = keep_avx512(&p, _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)),
                                    _mm512_shuffle_ps(t2, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(t2, t3, _MM_SHUFFLE(3, 2, 3, 2)));
        for (uint32_t q = 0; q < 4; q++) {
            uint32_t bits = (keep >> q) & 0x1111u; /* bit 4l: sphere 4q + l kept */
            if (with_payload) {
                uint32_t dst = kept;
                for (uint32_t b = bits; b != 0; b &= b - 1)
                    payload_move(payload, dst++, i + 4 * q + ((uint32_t)__builtin_ctz(b) >> 2));
            }
            __mmask16 lanes = (__mmask16)(bits * 0xFu); /* bit 4l -> lanes 4l .. 4l + 3 */
            _mm512_storeu_ps(spheres + 4 * (size_t)kept, _mm512_maskz_compress_ps(lanes, v[q]));
            kept += (uint32_t)__builtin_popcount(bits);
        }
    }
    return cull_aos_tail(planes, spheres, i, count, kept, payload);
}

__attribute__((target("avx512f,popcnt"))) static uint32_t cull_aos_avx512(const cull_planes *planes,
        float *spheres, uint32_t count, const cull_payload *payload)
{
    return payload->base != NULL ? cull_aos_avx512_body(planes, spheres, count, payload, true)
                                 : cull_aos_avx512_body(planes, spheres, count, payload, false);
}

#endif /* RVI_CULL_X86 */

/* ---- dispatch ---------------------------------------------------------------------------- */

rvi_simd_level rvi_simd_best_level(void)
{
#if RVI_CULL_X86
    /* libgcc/compiler-rt check the OS enables the vector state (XGETBV) as well. */
    bool popcnt = __builtin_cpu_supports("popcnt");
    if (popcnt && __builtin_cpu_supports("avx512f"))
        return RVI_SIMD_AVX512;
    if (popcnt && __builtin_cpu_supports("avx2"))
        return RVI_SIMD_AVX2;
    if (__builtin_cpu_supports("sse2"))
        return RVI_SIMD_SSE2;
#endif
    return RVI_SIMD_SCALAR;
}

const char *rvi_simd_level_name(rvi_simd_level level)
{
    switch (level) {
    case RVI_SIMD_SCALAR: return "scalar";
    case RVI_SIMD_SSE2: return "sse2";
    case RVI_SIMD_AVX2: return "avx2";
    case RVI_SIMD_AVX512: return "avx512";
    default: return "unknown";
    }
}

/* Checks the arguments every form shares and gathers the valid planes; unused plane slots
 * get (0, 0, 0, +inf), which no sphere is behind. */
static rv_result cull_prepare(rvi_simd_level level, const rv_frustum *frustum, uint32_t count,
                              void *payload, size_t payload_stride, const uint32_t *out_kept,
                              cull_planes *planes, cull_payload *moved)
{
    if (frustum == NULL || out_kept == NULL)
        return RV_ERR_INVALID_ARG;
    if ((unsigned)level >= RVI_SIMD_LEVEL_COUNT || level > rvi_simd_best_level())
        return RV_ERR_INVALID_ARG;
    if (frustum->plane_mask & ~RVI_FRUSTUM_ALL_PLANES)
        return RV_ERR_INVALID_ARG;
    if (payload != NULL && (payload_stride == 0 || (count > 0 && payload_stride > SIZE_MAX / count)))
        return RV_ERR_INVALID_ARG;
#if SIZE_MAX / 16 < UINT32_MAX
    if ((size_t)count > SIZE_MAX / (4 * sizeof(float)))
        return RV_ERR_INVALID_ARG; /* 32-bit hosts: 4 * count floats must be addressable */
#endif
    if (!rvi_frustum_planes_finite(frustum))
        return RV_ERR_NOT_FINITE;
    uint32_t n = 0;
    for (int i = 0; i < 6; i++) {
        if (!(frustum->plane_mask & (1u << i)))
            continue;
        const float *pl = frustum->planes[i];
        planes->a[n] = pl[0];
        planes->b[n] = pl[1];
        planes->c[n] = pl[2];
        planes->w[n] = pl[3];
        planes->s[n] = rvi_plane_slack(pl[3]);
        n++;
    }
    planes->count = n;
    for (uint32_t i = n; i < 6; i++) {
        planes->a[i] = planes->b[i] = planes->c[i] = planes->s[i] = 0.0f;
        planes->w[i] = INFINITY;
    }
    moved->base = payload;
    moved->stride = payload != NULL ? payload_stride : 0;
    return RV_OK;
}

rv_result rvi_cull_spheres_level(rvi_simd_level level, const rv_frustum *frustum, float *spheres,
                                 uint32_t count, void *payload, size_t payload_stride, uint32_t *out_kept)
{
    cull_planes planes;
    cull_payload moved;
    RVI_TRY(cull_prepare(level, frustum, count, payload, payload_stride, out_kept, &planes, &moved));
    if (count > 0 && spheres == NULL)
        return RV_ERR_INVALID_ARG;
    uint32_t kept;
    switch (level) {
#if RVI_CULL_X86
    case RVI_SIMD_AVX512: kept = cull_aos_avx512(&planes, spheres, count, &moved); break;
    case RVI_SIMD_AVX2: kept = cull_aos_avx2(&planes, spheres, count, &moved); break;
    case RVI_SIMD_SSE2: kept = cull_aos_sse2(&planes, spheres, count, &moved); break;
#endif
    default: kept = cull_aos_tail(&planes, spheres, 0, count, 0, &moved); break;
    }
    *out_kept = kept;
    return RV_OK;
}

/* Whether two of the four component arrays share a float: compacting one would then write
 * over another's values. */
static bool soa_overlap(float *const arrays[4], uint32_t count)
{
    size_t bytes = (size_t)count * sizeof(float);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            uintptr_t a = (uintptr_t)arrays[i], b = (uintptr_t)arrays[j];
            if ((a <= b ? b - a : a - b) < bytes)
                return true;
        }
    return false;
}

rv_result rvi_cull_spheres_soa_level(rvi_simd_level level, const rv_frustum *frustum, float *x,
                                     float *y, float *z, float *radius, uint32_t count,
                                     void *payload, size_t payload_stride, uint32_t *out_kept)
{
    cull_planes planes;
    cull_payload moved;
    RVI_TRY(cull_prepare(level, frustum, count, payload, payload_stride, out_kept, &planes, &moved));
    if (count > 0 && (x == NULL || y == NULL || z == NULL || radius == NULL))
        return RV_ERR_INVALID_ARG;
    if (count > 0 && soa_overlap((float *const[4]){ x, y, z, radius }, count))
        return RV_ERR_INVALID_ARG;
    uint32_t kept;
    switch (level) {
#if RVI_CULL_X86
    case RVI_SIMD_AVX512: kept = cull_soa_avx512(&planes, x, y, z, radius, count, &moved); break;
    case RVI_SIMD_AVX2: kept = cull_soa_avx2(&planes, x, y, z, radius, count, &moved); break;
    case RVI_SIMD_SSE2: kept = cull_soa_sse2(&planes, x, y, z, radius, count, &moved); break;
#endif
    default: kept = cull_soa_tail(&planes, x, y, z, radius, 0, count, 0, &moved); break;
    }
    *out_kept = kept;
    return RV_OK;
}

rv_result rv_cull_spheres(const rv_frustum *frustum, float *spheres, uint32_t count, void *payload,
                          size_t payload_stride, uint32_t *out_kept)
{
    return rvi_cull_spheres_level(rvi_simd_best_level(), frustum, spheres, count, payload,
                                  payload_stride, out_kept);
}

rv_result rv_cull_spheres_soa(const rv_frustum *frustum, float *x, float *y, float *z, float *radius,
                              uint32_t count, void *payload, size_t payload_stride, uint32_t *out_kept)
{
    return rvi_cull_spheres_soa_level(rvi_simd_best_level(), frustum, x, y, z, radius, count, payload,
                                      payload_stride, out_kept);
}
