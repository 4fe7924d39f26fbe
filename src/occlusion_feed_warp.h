/* The reprojection's geometry on the warp (occlusion_feed_warp.c derives the warp; the
 * proof it serves is at the top of occlusion_feed_reproject.c): a ray of the buffer view as
 * the old view sees it, a block's four corner rays, the conditions a depth must meet at
 * them, and the old-image rectangle of the prism between two depths.
 *
 * Included by occlusion_feed_reproject.c alone. Everything here is static and always
 * inline: the block recursion there must inline it, in its plain and its AVX2 build. */
#ifndef RVI_OCCLUSION_FEED_WARP_H
#define RVI_OCCLUSION_FEED_WARP_H

#include "occlusion_feed.h"

#include <math.h>
#include <stddef.h>
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h> /* the corners' four-lane floats */
#endif
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h> /* the rays' pairs of doubles */
#endif

/* ---- rays ------------------------------------------------------------------------------ */

/* The buffer-view nearness q = p[0] x + p[1] y + p[2] of the points at old nearness Q (the
 * plane (k2 - Q k3) . (x, y, q, 1) = 0); false when that plane holds whole rays. */
static RVI_ALWAYS_INLINE bool level_plane(const rvi_feed_warp *wp, double Q, double p[3])
{
    double r0 = wp->k[2][0] - Q * wp->k[3][0], r1 = wp->k[2][1] - Q * wp->k[3][1];
    double r2 = wp->k[2][2] - Q * wp->k[3][2], r3 = wp->k[2][3] - Q * wp->k[3][3];
    double scale = fabs(r0) * wp->dst_w + fabs(r1) * wp->dst_h + fabs(r3);
    if (!(fabs(r2) > 1e-12 * scale) || !isfinite(r2))
        return false;
    p[0] = -r0 / r2;
    p[1] = -r1 / r2;
    p[2] = -r3 / r2;
    return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

/* One ray of the buffer view (a block corner), as the old view sees it. Its point at buffer
 * nearness q is h = a + q b in the old view (a = k (x, y, 0, 1), b = k's third column);
 * at old nearness Q = h2 / h3 that is q = (Q a3 - a2) / (b2 - Q b3), with
 * h3 = d / (b2 - Q b3) and dq / dQ = d / (b2 - Q b3)^2 for d = a3 b2 - a2 b3. So with d > 0
 * and b2 - Q b3 > 0 the point is in front of the old camera and larger Q is nearer on both
 * views; and its old-image position is (x0 + x1 Q, y0 + y1 Q): along a line the old view's
 * 1 / w and x / w are both affine in the line parameter over w, so X is affine in Q.
 * Everything here is a ratio of quantities affine in (x, y): a (and the near plane's n0)
 * are kept so that a block's edge midpoints and centre are exact averages of its corners. */
typedef struct warp_ray {
    float line[4];            /* x0, x1, y0, y1 in float, for the rectangle */
    double x0, x1, y0, y1;    /* the old-image position, when d > 0 */
    double d;
    double m0, m1;            /* |x0| + |y0| and |x1| + |y1|, for the rectangle's margin */
    double a[4], n0;          /* affine in (x, y) */
} warp_ray;

/* ray_finish stores x0 and x1, y0 and y1, m0 and m1 in pairs. */
_Static_assert(offsetof(warp_ray, x1) == offsetof(warp_ray, x0) + sizeof(double) &&
                   offsetof(warp_ray, y1) == offsetof(warp_ray, y0) + sizeof(double) &&
                   offsetof(warp_ray, m1) == offsetof(warp_ray, m0) + sizeof(double),
               "warp_ray's pairs are adjacent");

static RVI_ALWAYS_INLINE void ray_finish(const rvi_feed_warp *wp, warp_ray *r)
{
    const double(*k)[4] = wp->k;
    double b2 = k[2][2], b3 = k[3][2];
    const double *a = r->a;
    r->d = a[3] * b2 - a[2] * b3;
    /* d must clear its own rounding by far; otherwise the ray counts as not moving away
     * from the old eye, which only loses proofs. */
    if (!(r->d > 1e-9 * (fabs(a[3] * b2) + fabs(a[2] * b3)))) {
        r->d = 0;
        r->x0 = r->x1 = r->y0 = r->y1 = r->m0 = r->m1 = 0;
        r->line[0] = r->line[1] = r->line[2] = r->line[3] = 0;
        return;
    }
    double inv = 1.0 / r->d;
#if defined(__SSE2__) || defined(_M_X64)
    /* (x0, x1) and (y0, y1) two lanes at a time, each lane the same products, difference
     * and scaling as the scalar form below. */
    __m128d a01 = _mm_loadu_pd(a), a23 = _mm_loadu_pd(a + 2), vinv = _mm_set1_pd(inv);
    __m128d x = _mm_mul_pd(_mm_sub_pd(_mm_mul_pd(_mm_shuffle_pd(a01, a23, 2), _mm_loadu_pd(wp->ray_b[0])),
                                      _mm_mul_pd(_mm_shuffle_pd(a23, a01, 0), _mm_loadu_pd(wp->ray_b[1]))),
                           vinv);
    __m128d y = _mm_mul_pd(_mm_sub_pd(_mm_mul_pd(_mm_unpackhi_pd(a01, a23), _mm_loadu_pd(wp->ray_b[2])),
                                      _mm_mul_pd(_mm_shuffle_pd(a23, a01, 2), _mm_loadu_pd(wp->ray_b[3]))),
                           vinv);
    __m128d sign = _mm_set1_pd(-0.0);
    _mm_storeu_pd(&r->x0, x);
    _mm_storeu_pd(&r->y0, y);
    _mm_storeu_pd(&r->m0, _mm_add_pd(_mm_andnot_pd(sign, x), _mm_andnot_pd(sign, y)));
    _mm_storeu_ps(r->line, _mm_movelh_ps(_mm_cvtpd_ps(x), _mm_cvtpd_ps(y)));
#else
    double b0 = k[0][2], b1 = k[1][2];
    r->x0 = (a[0] * b2 - a[2] * b0) * inv;
    r->x1 = (a[3] * b0 - a[0] * b3) * inv;
    r->y0 = (a[1] * b2 - a[2] * b1) * inv;
    r->y1 = (a[3] * b1 - a[1] * b3) * inv;
    r->m0 = fabs(r->x0) + fabs(r->y0);
    r->m1 = fabs(r->x1) + fabs(r->y1);
    r->line[0] = (float)r->x0;
    r->line[1] = (float)r->x1;
    r->line[2] = (float)r->y0;
    r->line[3] = (float)r->y1;
#endif
}

static RVI_ALWAYS_INLINE void ray_at(const rvi_feed_warp *wp, double x, double y, warp_ray *r)
{
    const double(*k)[4] = wp->k;
    for (int i = 0; i < 4; i++)
        r->a[i] = k[i][0] * x + k[i][1] * y + k[i][3];
    r->n0 = wp->near_new[0] * x + wp->near_new[1] * y + wp->near_new[3];
    ray_finish(wp, r);
}

/* The average of two rays, or of a block's four corners: the ray through the average of
 * their points. */
static RVI_ALWAYS_INLINE void ray_mid(const rvi_feed_warp *wp, const warp_ray *p, const warp_ray *q, warp_ray *out)
{
    for (int i = 0; i < 4; i++)
        out->a[i] = 0.5 * (p->a[i] + q->a[i]);
    out->n0 = 0.5 * (p->n0 + q->n0);
    ray_finish(wp, out);
}

static RVI_ALWAYS_INLINE void ray_centre(const rvi_feed_warp *wp, const warp_ray *const r[4], warp_ray *out)
{
    for (int i = 0; i < 4; i++)
        out->a[i] = 0.25 * (r[0]->a[i] + r[1]->a[i] + (r[2]->a[i] + r[3]->a[i]));
    out->n0 = 0.25 * (r[0]->n0 + r[1]->n0 + (r[2]->n0 + r[3]->n0));
    ray_finish(wp, out);
}

/* ---- a block's corners --------------------------------------------------------------------- */

/* A block's four corner rays: (x0, y0), (x1, y0), (x0, y1), (x1, y1). */
typedef struct corners {
    const warp_ray *r[4];
#if defined(__SSE__) || defined(_M_X64)
    __m128 x0, x1, y0, y1; /* the rays' lines a corner per lane (x0 + x1 Q, y0 + y1 Q) */
#endif
    float mag0, mag1; /* the largest m0 and m1: for the rectangle's margin */
    bool usable;      /* every corner has d > 0 */
} corners;

/* Whether every one of a block's corner rays moves away from the old eye. */
static RVI_ALWAYS_INLINE bool rays_usable(const warp_ray *const r[4])
{
    return r[0]->d > 0 && r[1]->d > 0 && r[2]->d > 0 && r[3]->d > 0;
}

static RVI_ALWAYS_INLINE void corners_of(const warp_ray *const r[4], corners *c)
{
    c->usable = rays_usable(r);
    for (int i = 0; i < 4; i++)
        c->r[i] = r[i];
#if defined(__SSE__) || defined(_M_X64)
    c->x0 = _mm_loadu_ps(r[0]->line);
    c->x1 = _mm_loadu_ps(r[1]->line);
    c->y0 = _mm_loadu_ps(r[2]->line);
    c->y1 = _mm_loadu_ps(r[3]->line);
    _MM_TRANSPOSE4_PS(c->x0, c->x1, c->y0, c->y1);
#endif
    c->mag0 = c->mag1 = 0;
}

/* The corners' magnitudes, for prism_rect's margin (once a block forms rectangles). */
static RVI_ALWAYS_INLINE void corner_magnitudes(corners *c)
{
#if defined(__SSE2__) || defined(_M_X64)
    /* (m0, m1) a pair per ray; maxpd(a, b) is a > b ? a : b in each lane, as below. */
    __m128d mag = _mm_setzero_pd();
    for (int i = 0; i < 4; i++)
        mag = _mm_max_pd(_mm_loadu_pd(&c->r[i]->m0), mag);
    c->mag0 = (float)_mm_cvtsd_f64(mag);
    c->mag1 = (float)_mm_cvtsd_f64(_mm_unpackhi_pd(mag, mag));
#else
    double mag0 = 0, mag1 = 0;
    for (int i = 0; i < 4; i++) {
        mag0 = c->r[i]->m0 > mag0 ? c->r[i]->m0 : mag0;
        mag1 = c->r[i]->m1 > mag1 ? c->r[i]->m1 : mag1;
    }
    c->mag0 = (float)mag0;
    c->mag1 = (float)mag1;
#endif
}

/* The corners' conditions at old nearness Q: b2 - Q b3 > 0 (with d > 0: in front of the old
 * camera, q increasing in Q), q > 0 in a perspective buffer view (Q a3 - a2 > 0), and the
 * point beyond the buffer view's near plane (l . (x, y, q, 1) >= 0, times b2 - Q b3 > 0:
 * n0 (b2 - Q b3) + l2 (Q a3 - a2) >= 0). Each is affine over the block for a fixed Q, so the
 * corners decide it for every ray; each must clear a relative margin far above its rounding. */
static RVI_ALWAYS_INLINE bool conditions_hold(const rvi_feed_warp *wp, const corners *c, double Q)
{
    double b2 = wp->k[2][2], b3 = wp->k[3][2], l2 = wp->near_new[2];
    double den = b2 - Q * b3;
    if (!(den > 1e-9 * (fabs(b2) + fabs(Q * b3))))
        return false;
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        const warp_ray *r = c->r[i];
        double qn = Q * r->a[3] - r->a[2], qm = fabs(Q * r->a[3]) + fabs(r->a[2]);
        double nr = r->n0 * den + l2 * qn, nm = fabs(r->n0 * den) + fabs(l2) * qm;
        ok &= (!wp->new_perspective || qn > 1e-9 * qm) & (nr >= 1e-9 * nm);
    }
    return ok;
}

typedef enum rect_fit {
    RECT_INSIDE = 0,
    RECT_PARTLY,  /* it meets the image but leaves it: a smaller block may fit */
    RECT_OUTSIDE  /* (or not a number) */
} rect_fit;

/* The old-image rectangle of the prism between old nearness qa (Pa) and qb (Pb): the
 * bounds of the 8 corner points, as inclusive feed texels, when it lies inside the image (the
 * old view did not see beyond it). In float: each point x0 + x1 Q is off by a few float
 * roundings of |x0| + |x1 Q| (of the inputs, the product and the sum), and the margin takes
 * 2^-19 of the largest such bound, plus a thousandth of a texel. */
static RVI_ALWAYS_INLINE rect_fit prism_rect(const rvi_feed_warp *wp, const corners *c, double qa, double qb, int32_t r[4])
{
    float fa = (float)qa, fb = (float)qb, b[4]; /* x_lo, y_lo, x_hi, y_hi */
#if defined(__SSE__) || defined(_M_X64)
    __m128 r0 = c->x0, r1 = c->x1, r2 = c->y0, r3 = c->y1;
    __m128 va = _mm_set1_ps(fa), vb = _mm_set1_ps(fb);
    __m128 xa = _mm_add_ps(r0, _mm_mul_ps(r1, va)), xb = _mm_add_ps(r0, _mm_mul_ps(r1, vb));
    __m128 ya = _mm_add_ps(r2, _mm_mul_ps(r3, va)), yb = _mm_add_ps(r2, _mm_mul_ps(r3, vb));
    /* Lows as they are, highs negated: one minimum reduction for all four bounds. */
    __m128 sign = _mm_set1_ps(-0.0f);
    __m128 lx = _mm_min_ps(xa, xb), ly = _mm_min_ps(ya, yb);
    __m128 hx = _mm_xor_ps(_mm_max_ps(xa, xb), sign), hy = _mm_xor_ps(_mm_max_ps(ya, yb), sign);
    _MM_TRANSPOSE4_PS(lx, ly, hx, hy);
    _mm_storeu_ps(b, _mm_min_ps(_mm_min_ps(lx, ly), _mm_min_ps(hx, hy)));
    b[2] = -b[2];
    b[3] = -b[3];
#else
    b[0] = b[1] = INFINITY;
    b[2] = b[3] = -INFINITY;
    for (int i = 0; i < 4; i++) {
        const float *l = c->r[i]->line;
        float xa = l[0] + l[1] * fa, xb = l[0] + l[1] * fb, ya = l[2] + l[3] * fa, yb = l[2] + l[3] * fb;
        float lx = xa < xb ? xa : xb, hx = xa > xb ? xa : xb, ly = ya < yb ? ya : yb, hy = ya > yb ? ya : yb;
        b[0] = lx < b[0] ? lx : b[0];
        b[1] = ly < b[1] ? ly : b[1];
        b[2] = hx > b[2] ? hx : b[2];
        b[3] = hy > b[3] ? hy : b[3];
    }
#endif
    float m = 1e-3f + (c->mag0 + c->mag1 * (fabsf(fa) + fabsf(fb))) * (1.0f / 524288.0f);
    float x_lo = b[0] - m, y_lo = b[1] - m, x_hi = b[2] + m, y_hi = b[3] + m, sw = (float)wp->src_w,
          sh = (float)wp->src_h;
    if (!(x_lo >= 0 && y_lo >= 0 && x_hi < sw && y_hi < sh))
        return x_hi >= 0 && y_hi >= 0 && x_lo < sw && y_lo < sh ? RECT_PARTLY : RECT_OUTSIDE;
    r[0] = (int32_t)x_lo;
    r[1] = (int32_t)y_lo;
    r[2] = (int32_t)x_hi;
    r[3] = (int32_t)y_hi;
    return RECT_INSIDE;
}

#endif
