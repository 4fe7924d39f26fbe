/* Reprojection of the depth feed into the buffer's view (docs/occlusion.md, "The depth
 * feed"), backward: for a block of buffer texels, prove that every ray through it meets the
 * old view's surface no farther than a depth, and store that depth.
 *
 * The proof. Map the buffer's rays into the old view ("new space" -> old texel X, Y and old
 * nearness Q, a projective map: rvi_feed_warp). Pick two old depths Qa >= Qb. On each ray
 * of a block, Pa is its point at old nearness Qa and Pb its point at Qb; the block's rays
 * between the two form a prism in new space whose 8 corners (4 corner rays x 2 depths) span
 * its image, so the old-image rectangle F around the 8 projected corners holds every ray's
 * path from Pa to Pb. If every feed texel in F is proven surface (continuous over F, its
 * depth within [lo, hi] per texel), the surface's nearness is <= Qa everywhere over F
 * (Pa is in front of it or on it) and >= Qb everywhere (Pb is behind it or on it), then
 * along each ray the difference between the ray's old depth and the surface's changes
 * sign between Pa and Pb: the ray meets the surface there, from the side the old camera
 * saw, no farther (in the buffer's view) than Pb. Pb's nearness is affine over the block
 * (a plane seen in perspective), so each texel stores its smallest corner value, rounded
 * farther. The conditions on the corners (in front of both cameras, beyond the buffer
 * view's near plane, Pa before Pb along the ray) are affine over the block, so the corners
 * decide them for every ray. A block that cannot be proven is split, down to
 * RVI_FEED_MIN_BLOCK texels; what is left proves nothing.
 *
 * The warp is derived in occlusion_feed_warp.c; the rays, the block corners, their
 * conditions and the prism's rectangle are in occlusion_feed_warp.h. */
#include "occlusion_feed_warp.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#endif
#if RVI_OCC_X86_WIDE
#include <immintrin.h>
#endif

/* ---- one block ----------------------------------------------------------------------------- */

typedef enum proof {
    PROOF_DONE = 0,
    PROOF_NOTHING, /* nothing provable where the block's rays were looked for */
    PROOF_FAILED
} proof;

#define WARP_ROUNDS 3

/* The old depths [lo, hi] for which the conditions above hold at every ray of the buffer
 * (lo > hi: none known). For one ray each condition holds on an interval of Q; over the
 * buffer each is linear in x, in y and in Q separately, so over the box of the buffer's
 * extent and [lo, hi] its extremes are at the box's corners: the buffer's four corner rays
 * at both ends of the span decide, and blocks whose range lies inside need no check of
 * their own. */
typedef struct warp_span {
    double lo, hi;
} warp_span;

/* Narrows [lo, hi] to the Q with alpha + beta Q > 0. */
static void keep(warp_span *s, double alpha, double beta)
{
    if (beta == 0) {
        if (!(alpha > 0))
            s->lo = 1, s->hi = 0;
        return;
    }
    double q = -alpha / beta;
    if (beta > 0)
        s->lo = q > s->lo ? q : s->lo;
    else
        s->hi = q < s->hi ? q : s->hi;
}

static warp_span global_span(const rvi_feed_warp *wp, double qmax)
{
    warp_span none = { 1, 0 }, s = { qmax * 1e-6, qmax };
    warp_ray r[4];
    const double xs[2] = { 0, wp->dst_w }, ys[2] = { 0, wp->dst_h };
    double b2 = wp->k[2][2], b3 = wp->k[3][2], l2 = wp->near_new[2];
    keep(&s, b2, -b3);
    for (int i = 0; i < 4; i++) {
        ray_at(wp, xs[i & 1], ys[i >> 1], &r[i]);
        if (wp->new_perspective)
            keep(&s, -r[i].a[2], r[i].a[3]);
        keep(&s, r[i].n0 * b2 - l2 * r[i].a[2], l2 * r[i].a[3] - r[i].n0 * b3);
    }
    /* Clear of the edges by far more than the margins the check below demands. */
    double pad = 1e-6 * (fabs(s.lo) + fabs(s.hi));
    s.lo += pad;
    s.hi -= pad;
    const warp_ray *rp[4] = { &r[0], &r[1], &r[2], &r[3] };
    corners c;
    corners_of(rp, &c);
    if (!(qmax > 0) || !(s.lo < s.hi) || !c.usable || !conditions_hold(wp, &c, s.lo) || !conditions_hold(wp, &c, s.hi))
        return none;
    return s;
}

/* Whether splitting a block whose rectangle failed may find anything: some of the level-1
 * texels under the rectangle's corners and centre prove surface (a cheap look; it only
 * decides how much work is spent, never what is proven). All nine are read, without a
 * branch on each: which of them proves surface is data the CPU predicts badly. */
static RVI_ALWAYS_INLINE bool some_surface(const rvi_occ_feed *fd, const int32_t r[4])
{
    size_t w = fd->levels.w[1], off = fd->levels.offset[1];
    const int32_t xs[3] = { r[0], (r[0] + r[2]) / 2, r[2] }, ys[3] = { r[1], (r[1] + r[3]) / 2, r[3] };
    bool any = false;
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            any |= fd->hi[off + (size_t)(ys[j] >> 1) * w + (size_t)(xs[i] >> 1)] < INFINITY;
    return any;
}

/* Tries to prove the block from the range guess (range[0] = Qb <= range[1] = Qa), widening
 * it to what the rectangle holds for up to WARP_ROUNDS rounds. On success range is the
 * final (tightest) range. */
static RVI_ALWAYS_INLINE proof prove_block(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const warp_span *span, corners *c,
                         double range[2])
{
    if (!c->usable)
        return PROOF_NOTHING;
    corner_magnitudes(c);
    double qb = range[0], qa = range[1];
    proof why = PROOF_NOTHING;
    for (int round = 0; round < WARP_ROUNDS; round++) {
        int32_t r[4];
        if (!(qb <= qa))
            return PROOF_FAILED;
        if (!(qb >= span->lo && qa <= span->hi) && (!conditions_hold(wp, c, qa) || !conditions_hold(wp, c, qb)))
            return PROOF_FAILED;
        rect_fit fit = prism_rect(wp, c, qa, qb, r);
        if (fit != RECT_INSIDE)
            return fit == RECT_PARTLY ? PROOF_FAILED : why;
        float lo, hi;
        rvi_feed_query(fd, r[0], r[1], r[2], r[3], &lo, &hi);
        if (!(hi < INFINITY)) /* a texel of the rectangle proves nothing */
            return why == PROOF_FAILED || some_surface(fd, r) ? PROOF_FAILED : PROOF_NOTHING;
        why = PROOF_FAILED;
        if (lo >= qb && hi <= qa) {
            /* [lo, hi] lies inside [qb, qa]: its prism inside this one, its rectangle inside
             * this rectangle, so the same bounds hold over it. */
            range[0] = lo;
            range[1] = hi;
            return PROOF_DONE;
        }
        /* Widen to what was found. The rectangle grows with the range only by the parallax
         * of the two views, often by less than a texel: when its texels stay the same, the
         * query would find the same [lo, hi], now inside the range, and the proof holds. */
        double nqa = qa > hi ? qa : hi, nqb = qb < lo ? qb : lo, pad = 0.125 * (nqa - nqb);
        int32_t wider[4];
        if (nqb >= span->lo && nqa <= span->hi && prism_rect(wp, c, nqa, nqb, wider) == RECT_INSIDE &&
            memcmp(wider, r, sizeof r) == 0) {
            range[0] = lo;
            range[1] = hi;
            return PROOF_DONE;
        }
        /* Else past it, so that a slope is covered in fewer rounds. */
        qa = nqa + pad;
        qb = nqb - pad;
    }
    return PROOF_FAILED;
}

#if RVI_OCC_X86_WIDE
/* store_block's rows eight texels at a time (n >= 8), the last eight ending at the last
 * texel, for the AVX2 and AVX-512 builds: the same sums as the four-lane rows. */
RVI_TARGET_AVX2 static inline void store_rows_eight(float *out, size_t pitch, int32_t n, int32_t m, float base,
                                                    float fgy, const float *step)
{
    for (int32_t j = 0; j < m; j++, out += pitch) {
        __m256 vb = _mm256_set1_ps(base + fgy * (float)j);
        for (int32_t k = 0; k + 8 < n; k += 8)
            _mm256_storeu_ps(out + k, _mm256_add_ps(vb, _mm256_loadu_ps(step + k)));
        _mm256_storeu_ps(out + n - 8, _mm256_add_ps(vb, _mm256_loadu_ps(step + n - 8)));
    }
}
#endif

/* Writes the block's texels [x0, x1) x [y0, y1): the smallest value over each texel of the
 * buffer-view nearness at old nearness Qb (a plane: at the corner its gradient points
 * away from), rounded farther. False when that plane cannot be formed. wide: the caller is
 * an AVX2 or AVX-512 build. */
static RVI_ALWAYS_INLINE bool store_block(const rvi_feed_warp *wp, float *dest, int32_t x0, int32_t y0, int32_t x1,
                                          int32_t y1, double qb, bool wide)
{
    double plane[3];
    if (!level_plane(wp, qb, plane))
        return false;
    double gx = plane[0], gy = plane[1];
    double ox = gx < 0 ? 1.0 : 0.0, oy = gy < 0 ? 1.0 : 0.0;
    int32_t n = x1 - x0, m = y1 - y0;
    /* In float from the block's corner: corner + gy j + gx k (j, k < 64) comes out within a
     * few float roundings of |corner| + |gy| j + |gx| k (of the corner, the slopes, the
     * products, the sums); the margin is 2^-19 of that bound, subtracted once. */
    double corner = gx * ((double)x0 + ox) + gy * ((double)y0 + oy) + plane[2];
    float base = (float)corner - (float)((fabs(corner) + fabs(gx) * n + fabs(gy) * m) * (1.0 / 524288.0) + 1e-30);
    float fgx = (float)gx, fgy = (float)gy;
    /* The column terms gx k, one product per column for all the rows (blocks are at most
     * 64 texels wide). */
    float step[64];
#if defined(__SSE__) || defined(_M_X64)
    /* four columns at a time, up to n rounded up (at most 64) */
    __m128 vgx = _mm_set1_ps(fgx), vk = _mm_setr_ps(0.0f, 1.0f, 2.0f, 3.0f);
    for (int32_t k = 0; k < n; k += 4, vk = _mm_add_ps(vk, _mm_set1_ps(4.0f)))
        _mm_storeu_ps(step + k, _mm_mul_ps(vgx, vk));
#else
    for (int32_t k = 0; k < n; k++)
        step[k] = fgx * (float)k;
#endif
#if RVI_OCC_X86_WIDE
    if (wide && n >= 8) {
        store_rows_eight(dest + (size_t)y0 * wp->dst_w + x0, wp->dst_w, n, m, base, fgy, step);
        return true;
    }
#endif
    (void)wide;
    for (int32_t j = 0; j < m; j++) {
        float row = base + fgy * (float)j;
        float *out = dest + (size_t)(y0 + j) * wp->dst_w + x0;
#if defined(__SSE__) || defined(_M_X64)
        if (n >= 4) {
            /* Four at a time, the last four ending at the last texel: where they overlap
             * the lanes write the same values again. */
            __m128 vb = _mm_set1_ps(row);
            for (int32_t k = 0; k + 4 < n; k += 4)
                _mm_storeu_ps(out + k, _mm_add_ps(vb, _mm_loadu_ps(step + k)));
            _mm_storeu_ps(out + n - 4, _mm_add_ps(vb, _mm_loadu_ps(step + n - 4)));
            continue;
        }
#endif
        for (int32_t k = 0; k < n; k++)
            out[k] = row + step[k];
    }
    return true;
}

/* Marks every texel as proving nothing, before the blocks write what they prove (one
 * plain fill the compiler vectorises, cheaper than clearing each failed block). */
static void clear_all(float *dest, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dest[i] = -FLT_MAX;
}

/* ---- guesses ----------------------------------------------------------------------------- */

typedef enum guess_kind {
    GUESS_FOUND = 0,
    GUESS_SPLIT,   /* none at the centre, but the feed proves surface under a corner */
    GUESS_NONE
} guess_kind;

/* Whether the feed proves surface (its level-1 texel) at old-image point (X, Y). */
static RVI_ALWAYS_INLINE bool surface_at(const rvi_feed_warp *wp, const rvi_occ_feed *fd, double X, double Y, float *lo, float *hi)
{
    if (!(X >= 0 && Y >= 0 && X < (double)wp->src_w && Y < (double)wp->src_h))
        return false;
    size_t at = fd->levels.offset[1] + (size_t)((int32_t)Y >> 1) * fd->levels.w[1] + (size_t)((int32_t)X >> 1);
    *lo = fd->lo[at];
    *hi = fd->hi[at];
    return *hi < INFINITY;
}

/* Whether the feed proves surface (level 1) under four rays' points at old nearness q[0]
 * and q[1]: bit i is set when both of ray i's lie in the image over such texels. A block's
 * first rectangle for the range [q[1], q[0]] bounds exactly its corners' points (prism_rect
 * forms them with the same float products and sums), so when one of them is off the image
 * or not over surface, a round at that range leaves the image or meets a texel that proves
 * nothing, and fails. */
static RVI_ALWAYS_INLINE unsigned rays_on_surface(const rvi_feed_warp *wp, const rvi_occ_feed *fd,
                                                  const warp_ray *const r[4], const float q[2])
{
    const float *hi = fd->hi + fd->levels.offset[1];
    int32_t at[8];
    unsigned on = 15;
#if defined(__SSE2__) || defined(_M_X64)
    __m128 x0 = _mm_loadu_ps(r[0]->line), x1 = _mm_loadu_ps(r[1]->line);
    __m128 y0 = _mm_loadu_ps(r[2]->line), y1 = _mm_loadu_ps(r[3]->line);
    _MM_TRANSPOSE4_PS(x0, x1, y0, y1);
    __m128 zero = _mm_setzero_ps(), sw = _mm_set1_ps((float)wp->src_w), sh = _mm_set1_ps((float)wp->src_h);
    __m128 w1 = _mm_set1_ps((float)fd->levels.w[1]);
    for (int e = 0; e < 2; e++) {
        __m128 vq = _mm_set1_ps(q[e]);
        __m128 X = _mm_add_ps(x0, _mm_mul_ps(x1, vq)), Y = _mm_add_ps(y0, _mm_mul_ps(y1, vq));
        __m128 in = _mm_and_ps(_mm_and_ps(_mm_cmpge_ps(X, zero), _mm_cmpge_ps(Y, zero)),
                               _mm_and_ps(_mm_cmplt_ps(X, sw), _mm_cmplt_ps(Y, sh)));
        on &= (unsigned)_mm_movemask_ps(in);
        /* the level-1 texel's index (exact in float), texel 0 for points off the image */
        __m128i xi = _mm_srai_epi32(_mm_cvttps_epi32(X), 1), yi = _mm_srai_epi32(_mm_cvttps_epi32(Y), 1);
        __m128 i = _mm_add_ps(_mm_mul_ps(_mm_cvtepi32_ps(yi), w1), _mm_cvtepi32_ps(xi));
        _mm_storeu_si128((__m128i *)(void *)(at + 4 * e), _mm_and_si128(_mm_cvttps_epi32(i), _mm_castps_si128(in)));
    }
#else
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 4; i++) {
            const float *l = r[i]->line;
            float X = l[0] + l[1] * q[e], Y = l[2] + l[3] * q[e];
            bool in = X >= 0 && Y >= 0 && X < (float)wp->src_w && Y < (float)wp->src_h;
            on &= ~((unsigned)!in << i);
            at[4 * e + i] = in ? ((int32_t)Y >> 1) * (int32_t)fd->levels.w[1] + ((int32_t)X >> 1) : 0;
        }
#endif
    for (int k = 0; k < 8; k++)
        on &= ~((unsigned)!(hi[at[k]] < INFINITY) << (k & 3));
    return on;
}

/* rays_on_surface for a single ray: bit 0 as that function gives it for a lane. */
static RVI_ALWAYS_INLINE unsigned ray_on_surface(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const warp_ray *r,
                                                 const float q[2])
{
    const float *hi = fd->hi + fd->levels.offset[1], *l = r->line;
    for (int e = 0; e < 2; e++) {
        float X = l[0] + l[1] * q[e], Y = l[2] + l[3] * q[e];
        if (!(X >= 0 && Y >= 0 && X < (float)wp->src_w && Y < (float)wp->src_h))
            return 0;
        if (!(hi[((int32_t)Y >> 1) * (int32_t)fd->levels.w[1] + ((int32_t)X >> 1)] < INFINITY))
            return 0;
    }
    return 1;
}

#if RVI_OCC_X86_WIDE
/* rays_on_surface for eight rays at once (bit i for ray i), in the AVX2 and AVX-512
 * builds: each lane the same float products, sums and comparisons as the four-lane form. */
RVI_TARGET_AVX2 static inline unsigned rays_on_surface_eight(const rvi_feed_warp *wp, const rvi_occ_feed *fd,
                                                             const warp_ray *const r[8], const float q[2])
{
    __m256 a = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(r[0]->line)), _mm_loadu_ps(r[4]->line), 1);
    __m256 b = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(r[1]->line)), _mm_loadu_ps(r[5]->line), 1);
    __m256 c = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(r[2]->line)), _mm_loadu_ps(r[6]->line), 1);
    __m256 d = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(r[3]->line)), _mm_loadu_ps(r[7]->line), 1);
    /* the four-by-four transposition in each half: lane i of x0 is ray i's line[0], ... */
    __m256 ab_lo = _mm256_unpacklo_ps(a, b), ab_hi = _mm256_unpackhi_ps(a, b);
    __m256 cd_lo = _mm256_unpacklo_ps(c, d), cd_hi = _mm256_unpackhi_ps(c, d);
    __m256 x0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(ab_lo), _mm256_castps_pd(cd_lo)));
    __m256 x1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(ab_lo), _mm256_castps_pd(cd_lo)));
    __m256 y0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(ab_hi), _mm256_castps_pd(cd_hi)));
    __m256 y1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(ab_hi), _mm256_castps_pd(cd_hi)));
    __m256 zero = _mm256_setzero_ps(), sw = _mm256_set1_ps((float)wp->src_w), sh = _mm256_set1_ps((float)wp->src_h);
    __m256i w1 = _mm256_set1_epi32((int32_t)fd->levels.w[1]);
    __m256 inf = _mm256_set1_ps(INFINITY);
    const float *hi = fd->hi + fd->levels.offset[1];
    unsigned on = 255;
    for (int e = 0; e < 2; e++) {
        __m256 vq = _mm256_set1_ps(q[e]);
        __m256 X = _mm256_add_ps(x0, _mm256_mul_ps(x1, vq)), Y = _mm256_add_ps(y0, _mm256_mul_ps(y1, vq));
        __m256 in = _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(X, zero, _CMP_GE_OQ), _mm256_cmp_ps(Y, zero, _CMP_GE_OQ)),
                                  _mm256_and_ps(_mm256_cmp_ps(X, sw, _CMP_LT_OQ), _mm256_cmp_ps(Y, sh, _CMP_LT_OQ)));
        /* the level-1 texel's index, texel 0 for points off the image */
        __m256i xi = _mm256_srai_epi32(_mm256_cvttps_epi32(X), 1), yi = _mm256_srai_epi32(_mm256_cvttps_epi32(Y), 1);
        __m256i at = _mm256_and_si256(_mm256_add_epi32(_mm256_mullo_epi32(yi, w1), xi), _mm256_castps_si256(in));
        __m256 h = _mm256_i32gather_ps(hi, at, 4);
        on &= (unsigned)_mm256_movemask_ps(_mm256_and_ps(in, _mm256_cmp_ps(h, inf, _CMP_LT_OQ)));
    }
    return on;
}
#endif

/* A range for the block from the feed itself: follow its centre's old-image position (the
 * corners' average: a guess need not be exact) to the depth the feed holds there (its
 * level-1 texel), a few times, and take that texel's bounds. Without one there, whether a
 * smaller block may still find surface: some corner's position (at depth q0) is over it. A
 * guess only decides where work is spent, never what is proven. */
static RVI_ALWAYS_INLINE guess_kind centre_guess(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const corners *c, double q0, double range[2])
{
    if (!c->usable)
        return GUESS_NONE;
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (int i = 0; i < 4; i++) {
        x0 += 0.25 * c->r[i]->x0;
        x1 += 0.25 * c->r[i]->x1;
        y0 += 0.25 * c->r[i]->y0;
        y1 += 0.25 * c->r[i]->y1;
    }
    double Q = q0;
    float lo, hi;
    for (int it = 0; it < 3; it++) {
        if (!surface_at(wp, fd, x0 + x1 * Q, y0 + y1 * Q, &lo, &hi)) {
            for (int i = 0; i < 4; i++) {
                const warp_ray *r = c->r[i];
                if (surface_at(wp, fd, r->x0 + r->x1 * q0, r->y0 + r->y1 * q0, &lo, &hi))
                    return GUESS_SPLIT;
            }
            return GUESS_NONE;
        }
        range[0] = lo;
        range[1] = hi;
        Q = 0.5 * ((double)lo + hi);
    }
    return GUESS_FOUND;
}

/* Some proven depth of the feed to start the guesses from (the first finite texel of level
 * 2, else of level 1: a level-2 texel is finite only when its whole 4 x 4 patch is proven
 * surface), and a scale for the depths the blocks will use: four times the largest upper
 * bound over that level (the nearest proven surface, with room for the rounds' widening). */
static bool any_depth(const rvi_occ_feed *fd, double *q, double *qmax)
{
    const rvi_feed_levels *lv = &fd->levels;
    for (int l = lv->count > 2 ? 2 : 1; l >= 1; l--) {
        size_t n = (size_t)lv->w[l] * lv->h[l];
        const float *lo = fd->lo + lv->offset[l], *hi = fd->hi + lv->offset[l];
        float top = 0; /* the largest finite upper bound, or 0 */
        size_t i = 0;
#if defined(__SSE__) || defined(_M_X64)
        /* four running maxima: the compiler does not reorder a float maximum on its own */
        __m128 t4 = _mm_setzero_ps(), inf = _mm_set1_ps(INFINITY);
        for (; i + 4 <= n; i += 4) {
            __m128 h = _mm_loadu_ps(hi + i);
            t4 = _mm_max_ps(t4, _mm_and_ps(h, _mm_cmplt_ps(h, inf)));
        }
        float t[4];
        _mm_storeu_ps(t, t4);
        for (int k = 0; k < 4; k++)
            top = t[k] > top ? t[k] : top;
#endif
        for (; i < n; i++) {
            float h = hi[i] < INFINITY ? hi[i] : 0.0f;
            top = h > top ? h : top;
        }
        for (size_t k = 0; k < n; k++)
            if (hi[k] < INFINITY) {
                *q = 0.5 * ((double)lo[k] + hi[k]);
                *qmax = 4.0 * top;
                return true;
            }
    }
    return false;
}

/* ---- the blocks -------------------------------------------------------------------------- */

typedef struct warp_run {
    const rvi_feed_warp *wp;
    const rvi_occ_feed *fd;
    warp_span span;
    float *dest;
    double q0;          /* a start for the feed-driven guesses */
    uint32_t written;
} warp_run;

static RVI_ALWAYS_INLINE bool proven(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double qb,
                                     bool wide)
{
    if (!store_block(run->wp, run->dest, x0, y0, x1, y1, qb, wide))
        return false;
    run->written += (uint32_t)((x1 - x0) * (y1 - y0));
    return true;
}

/* Whether a block of the smallest size given a guess would give up at once: its rays are
 * usable and a corner point of the guess's first rectangle is off the image or over a texel
 * that proves nothing (rays_on_surface), so that it cannot be proven from the guess and is
 * not split. Its callers look, before calling it: a split looks at its nine rays at once. */
static RVI_ALWAYS_INLINE bool gives_up(const warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                                       const warp_ray *const r[4], const double range[2], bool have_guess)
{
    int32_t mb = run->fd->min_block;
    if (!have_guess || x1 - x0 > mb || y1 - y0 > mb || !(range[0] <= range[1]) || !rays_usable(r))
        return false;
    const float q[2] = { (float)range[1], (float)range[0] };
    return rays_on_surface(run->wp, run->fd, r, q) != 15;
}

/* Proves a block from a guess, else from the feed's own guess at its centre, else splits it
 * in four (when something provable was seen). Every texel was marked as proving nothing
 * beforehand; a proof overwrites its block. On success range holds the block's final range
 * (a guess for its neighbours; after a split, that of its last child proven). */
typedef bool (*block_fn)(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, const warp_ray *const r[4],
                         double range[2], bool have_guess);

/* One child of a split, [x0, x1) x [y0, y1) with corner rays r, from the guess its parent
 * was given (tried); on success range takes its final range. A child of the smallest size
 * is skipped when the parent's look (on; bits: its four corners' bits there) finds a corner
 * point of the guess off the image or over a texel that proves nothing: with usable rays
 * it would give up at once (gives_up), and with rays not all usable it proves nothing from
 * a guess and is not split, so the call would return false either way. */
static RVI_ALWAYS_INLINE bool child_block(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                                          const warp_ray *const r[4], const double tried[2], double range[2],
                                          bool have_guess, bool look, unsigned on, unsigned bits, block_fn child,
                                          block_fn leaf)
{
    int32_t mb = run->fd->min_block;
    bool smallest = x1 - x0 <= mb && y1 - y0 <= mb;
    if (look && (on & bits) != bits && smallest)
        return false;
    double rg[2] = { tried[0], tried[1] };
    /* Two direct calls (leaf and child are constants here) rather than one through the
     * pointer chosen per child: an indirect call whose target the CPU must predict. */
    bool done = smallest ? leaf(run, x0, y0, x1, y1, r, rg, have_guess) : child(run, x0, y0, x1, y1, r, rg, have_guess);
    if (!done)
        return false;
    range[0] = rg[0];
    range[1] = rg[1];
    return true;
}

/* child and leaf: the same build for children that may split and for children of the
 * smallest size; smallest_only: this block is one of the latter (its caller checked). */
static RVI_ALWAYS_INLINE bool block(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                                    const warp_ray *const r[4], double range[2], bool have_guess, block_fn child,
                                    block_fn leaf, bool smallest_only, bool wide)
{
    corners c;
    corners_of(r, &c);
    double tried[2] = { range[0], range[1] };
    proof p = PROOF_NOTHING;
    int32_t mb = run->fd->min_block;
    bool smallest = smallest_only || (x1 - x0 <= mb && y1 - y0 <= mb);
    if (have_guess) {
        p = prove_block(run->wp, run->fd, &run->span, &c, range);
        if (p == PROOF_DONE && proven(run, x0, y0, x1, y1, range[0], wide))
            return true;
    }
    /* The feed's own guess only where no neighbour gave one: after a neighbour's guess
     * failed it rarely helps (the rectangle's texels are usually what failed). */
    double own[2];
    guess_kind own_kind = have_guess ? GUESS_NONE : centre_guess(run->wp, run->fd, &c, run->q0, own);
    if (own_kind == GUESS_FOUND) {
        proof q = prove_block(run->wp, run->fd, &run->span, &c, own);
        if (q == PROOF_DONE && proven(run, x0, y0, x1, y1, own[0], wide)) {
            range[0] = own[0];
            range[1] = own[1];
            return true;
        }
        p = q > p ? q : p;
    } else if (own_kind == GUESS_SPLIT) {
        p = PROOF_FAILED;
    }
    if (p == PROOF_NOTHING || smallest)
        return false;
    /* Four children (two where one side is at the smallest size), their corners shared. */
    int32_t xm = x1 - x0 > mb ? (x0 + x1) / 2 : x1, ym = y1 - y0 > mb ? (y0 + y1) / 2 : y1;
    bool split_x = xm < x1, split_y = ym < y1;
    warp_ray mid[5]; /* (xm, y0), (x0, ym), (xm, ym), (x1, ym), (xm, y1) */
    if (split_x) {
        if ((x1 - x0) % 2 == 0) { /* a midpoint: the average is exact */
            ray_mid(run->wp, r[0], r[1], &mid[0]);
            ray_mid(run->wp, r[2], r[3], &mid[4]);
        } else {
            ray_at(run->wp, xm, y0, &mid[0]);
            ray_at(run->wp, xm, y1, &mid[4]);
        }
    }
    if (split_y) {
        if ((y1 - y0) % 2 == 0) {
            ray_mid(run->wp, r[0], r[2], &mid[1]);
            ray_mid(run->wp, r[1], r[3], &mid[3]);
        } else {
            ray_at(run->wp, x0, ym, &mid[1]);
            ray_at(run->wp, x1, ym, &mid[3]);
        }
    }
    if (split_x && split_y) {
        if ((x1 - x0) % 2 == 0 && (y1 - y0) % 2 == 0)
            ray_centre(run->wp, r, &mid[2]);
        else
            ray_at(run->wp, xm, ym, &mid[2]);
    }
    const warp_ray *g[3][3] = { { r[0], &mid[0], r[1] }, { &mid[1], &mid[2], &mid[3] }, { r[2], &mid[4], r[3] } };
    const int32_t xs[3] = { x0, xm, x1 }, ys[3] = { y0, ym, y1 };
    /* Children of the smallest size given up at once (gives_up), their corners being this
     * block's nine rays: each is looked at once here (bit 3 j + i for g[j][i]; rays a
     * one-way split does not form stand in as copies of a corner). */
    bool look = have_guess && tried[0] <= tried[1] && (split_x ? xm - x0 : x1 - x0) <= mb &&
                (split_y ? ym - y0 : y1 - y0) <= mb;
    unsigned on = 0;
    if (look) {
        const float q[2] = { (float)tried[1], (float)tried[0] };
        const warp_ray *nine[9] = { r[0],
                                    split_x ? &mid[0] : r[0],
                                    r[1],
                                    split_y ? &mid[1] : r[0],
                                    split_x && split_y ? &mid[2] : r[0],
                                    split_y ? &mid[3] : r[0],
                                    r[2],
                                    split_x ? &mid[4] : r[0],
                                    r[3] };
#if RVI_OCC_X86_WIDE
        if (wide)
            on = rays_on_surface_eight(run->wp, run->fd, nine, q);
        else
#endif
            on = rays_on_surface(run->wp, run->fd, nine, q) | rays_on_surface(run->wp, run->fd, nine + 4, q) << 4;
        on |= ray_on_surface(run->wp, run->fd, r[3], q) << 8;
    }
    /* Every child starts from the guess this block was given, not from a sibling's result,
     * so that the children's proofs do not wait on one another. The four-way split (the
     * common one) is written out, its children's corner bits constants; a side not split
     * runs from its first corner to its last. */
    bool any = false;
    if (split_x && split_y) {
        const warp_ray *s00[4] = { g[0][0], g[0][1], g[1][0], g[1][1] };
        const warp_ray *s01[4] = { g[0][1], g[0][2], g[1][1], g[1][2] };
        const warp_ray *s10[4] = { g[1][0], g[1][1], g[2][0], g[2][1] };
        const warp_ray *s11[4] = { g[1][1], g[1][2], g[2][1], g[2][2] };
        any |= child_block(run, x0, y0, xm, ym, s00, tried, range, have_guess, look, on, 0x1Bu, child, leaf);
        any |= child_block(run, xm, y0, x1, ym, s01, tried, range, have_guess, look, on, 0x36u, child, leaf);
        any |= child_block(run, x0, ym, xm, y1, s10, tried, range, have_guess, look, on, 0xD8u, child, leaf);
        any |= child_block(run, xm, ym, x1, y1, s11, tried, range, have_guess, look, on, 0x1B0u, child, leaf);
        return any;
    }
    for (int j = 0; j < (split_y ? 2 : 1); j++)
        for (int i = 0; i < (split_x ? 2 : 1); i++) {
            int i1 = split_x ? i + 1 : 2, j1 = split_y ? j + 1 : 2;
            const warp_ray *sub[4] = { g[j][i], g[j][i1], g[j1][i], g[j1][i1] };
            unsigned bits = 1u << (3 * j + i) | 1u << (3 * j + i1) | 1u << (3 * j1 + i) | 1u << (3 * j1 + i1);
            any |= child_block(run, xs[i], ys[j], xs[i1], ys[j1], sub, tried, range, have_guess, look, on, bits, child,
                               leaf);
        }
    return any;
}

/* The blocks' recursion, in a plain build and (where the buffer picks it) AVX2 and AVX-512
 * builds of the same source: the same operations in the same order (no contraction), so
 * the same bits, in fewer instructions. Each has a copy for blocks of the smallest size,
 * which are never split: without the split's code, a call to it saves and restores less. */
#define RVI_FEED_BLOCK_BUILD(name, leaf_name, attributes, wide)                                                      \
    attributes static bool leaf_name(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,                 \
                                     const warp_ray *const r[4], double range[2], bool have_guess);                  \
    attributes static bool name(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,                      \
                                const warp_ray *const r[4], double range[2], bool have_guess)                        \
    {                                                                                                                \
        return block(run, x0, y0, x1, y1, r, range, have_guess, name, leaf_name, false, wide);                       \
    }                                                                                                                \
    attributes static bool leaf_name(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,                 \
                                     const warp_ray *const r[4], double range[2], bool have_guess)                   \
    {                                                                                                                \
        return block(run, x0, y0, x1, y1, r, range, have_guess, name, leaf_name, true, wide);                        \
    }

RVI_FEED_BLOCK_BUILD(block_generic, leaf_generic, , false)
#if RVI_OCC_X86_WIDE
RVI_FEED_BLOCK_BUILD(block_avx2, leaf_avx2, RVI_TARGET_AVX2, true)
#endif

static RVI_ALWAYS_INLINE uint32_t reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch,
                                            block_fn top)
{
    warp_run run = { wp, fd, { 1, 0 }, dest, 0, 0 };
    clear_all(dest, (size_t)wp->dst_w * wp->dst_h);
    double qmax;
    if (!any_depth(fd, &run.q0, &qmax)) {
        return 0;
    }
    run.span = global_span(wp, qmax);
    int32_t bw = fd->block, cols = ((int32_t)wp->dst_w + bw - 1) / bw;
    /* scratch: the last proven range of each block column (NaN: none yet), then two rows
     * of corner rays. */
    double *ranges = scratch;
    warp_ray *edge[2] = { (warp_ray *)(void *)(scratch + 2 * (cols + 1)),
                          (warp_ray *)(void *)(scratch + 2 * (cols + 1)) + (cols + 1) };
    for (int32_t c = 0; c < cols; c++)
        ranges[2 * c] = ranges[2 * c + 1] = NAN;
    for (int32_t c = 0; c <= cols; c++)
        ray_at(wp, c * bw < (int32_t)wp->dst_w ? c * bw : (int32_t)wp->dst_w, 0, &edge[0][c]);
    for (int32_t y0 = 0; y0 < (int32_t)wp->dst_h; y0 += bw) {
        int32_t y1 = y0 + bw < (int32_t)wp->dst_h ? y0 + bw : (int32_t)wp->dst_h;
        for (int32_t c = 0; c <= cols; c++)
            ray_at(wp, c * bw < (int32_t)wp->dst_w ? c * bw : (int32_t)wp->dst_w, y1, &edge[1][c]);
        double left[2] = { NAN, NAN };
        for (int32_t c = 0; c < cols; c++) {
            int32_t x0 = c * bw, x1 = x0 + bw < (int32_t)wp->dst_w ? x0 + bw : (int32_t)wp->dst_w;
            /* The block above first: a guess from the left would wait on the block just
             * before this one. */
            double range[2];
            bool have = true;
            if (ranges[2 * c] == ranges[2 * c]) {
                range[0] = ranges[2 * c];
                range[1] = ranges[2 * c + 1];
            } else if (left[0] == left[0]) {
                range[0] = left[0];
                range[1] = left[1];
            } else {
                have = false;
                range[0] = range[1] = run.q0;
            }
            const warp_ray *cs[4] = { &edge[0][c], &edge[0][c + 1], &edge[1][c], &edge[1][c + 1] };
            if (!gives_up(&run, x0, y0, x1, y1, cs, range, have) && top(&run, x0, y0, x1, y1, cs, range, have)) {
                left[0] = ranges[2 * c] = range[0];
                left[1] = ranges[2 * c + 1] = range[1];
            } else {
                left[0] = left[1] = NAN;
            }
        }
        warp_ray *t = edge[0];
        edge[0] = edge[1];
        edge[1] = t;
    }
    return run.written;
}

size_t rvi_feed_scratch_doubles(uint32_t dst_w)
{
    /* A range per block column and two rows of corner rays, for blocks of one texel. */
    size_t columns = (size_t)dst_w + 2, ray = (sizeof(warp_ray) + sizeof(double) - 1) / sizeof(double);
    return 2 * columns + 2 * columns * ray;
}

static uint32_t reproject_generic(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch)
{
    return reproject(wp, fd, dest, scratch, block_generic);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static uint32_t reproject_avx2(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest,
                                               double *scratch)
{
    return reproject(wp, fd, dest, scratch, block_avx2);
}

/* For AVX-512 CPUs (fd->avx512): no wider arithmetic, but 32 vector registers, so fewer of
 * the recursion's live doubles go through the stack. Nothing is contracted into an FMA (the
 * build's -ffp-contract=off): that would change the bits. */
#define RVI_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
RVI_FEED_BLOCK_BUILD(block_avx512, leaf_avx512, RVI_TARGET_AVX512, true)

RVI_TARGET_AVX512 static uint32_t reproject_avx512(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest,
                                                   double *scratch)
{
    return reproject(wp, fd, dest, scratch, block_avx512);
}
#endif

uint32_t rvi_feed_reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch, bool wide)
{
#if RVI_OCC_X86_WIDE
    if (wide && fd->avx512)
        return reproject_avx512(wp, fd, dest, scratch);
    if (wide)
        return reproject_avx2(wp, fd, dest, scratch);
#endif
    (void)wide;
    return reproject_generic(wp, fd, dest, scratch);
}
