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
 * RVI_FEED_MIN_BLOCK texels; what is left proves nothing. */
#include "occlusion_feed.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

/* ---- the warp ---------------------------------------------------------------------------- */

/* Rows (texel x, texel y, nearness, homogeneous weight) of a view as linear forms of the
 * homogeneous world point, row-major 4 x 4: a point's (x, y, q) is rows 0..2 over row 3. */
static void view_rows(const rvi_occ_view *v, uint32_t w, uint32_t h, double r[4][4])
{
    for (int j = 0; j < 4; j++) {
        double x = v->vp[j * 4 + 0], y = v->vp[j * 4 + 1], z = v->vp[j * 4 + 2], wr = v->vp[j * 4 + 3];
        r[0][j] = 0.5 * w * (x + wr);
        r[1][j] = 0.5 * h * (wr - y);
        if (v->perspective) {
            r[2][j] = j == 3 ? 1.0 : 0.0; /* nearness = 1 / w */
            r[3][j] = wr;
        } else {
            r[2][j] = -v->sigma * z;       /* nearness = -depth; w = 1 (the matrix is scaled so) */
            r[3][j] = wr;
        }
    }
}

/* Inverse of a 4 x 4 (row-major) by Gauss-Jordan with partial pivoting; false when singular
 * or too ill-conditioned to trust (checked by the residual). */
static bool invert4(const double m[4][4], double inv[4][4])
{
    double a[4][8];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++)
            a[r][c] = c < 4 ? m[r][c] : (double)(c - 4 == r);
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(a[r][c]) > fabs(a[p][c]))
                p = r;
        if (!(fabs(a[p][c]) > 0))
            return false;
        for (int k = 0; k < 8; k++) {
            double t = a[c][k];
            a[c][k] = a[p][k];
            a[p][k] = t;
        }
        double d = a[c][c];
        for (int k = 0; k < 8; k++)
            a[c][k] /= d;
        for (int r = 0; r < 4; r++)
            if (r != c) {
                double f = a[r][c];
                for (int k = 0; k < 8; k++)
                    a[r][k] -= f * a[c][k];
            }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            inv[r][c] = a[r][c + 4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0, mag = 0;
            for (int k = 0; k < 4; k++) {
                acc += m[i][k] * inv[k][j];
                mag += fabs(m[i][k] * inv[k][j]);
            }
            if (!(fabs(acc - (i == j)) <= 1e-10 * (mag + 1)))
                return false;
        }
    return true;
}

bool rvi_feed_warp_init(rvi_feed_warp *wp, const rvi_occ_view *old_view, uint32_t src_w, uint32_t src_h,
                        const rvi_occ_view *new_view, uint32_t dst_w, uint32_t dst_h)
{
    double o[4][4], n[4][4], ninv[4][4];
    view_rows(old_view, src_w, src_h, o);
    view_rows(new_view, dst_w, dst_h, n);
    if (!invert4(n, ninv))
        return false;
    memset(wp, 0, sizeof *wp);
    /* new space (x, y, q, 1) = n * P / (row 3 of n) P: ninv * (x, y, q, 1) is P over the
     * buffer view's w, positive in front of it, so signs below are the world's. */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += o[i][k] * ninv[k][j];
            wp->k[i][j] = acc;
        }
    for (int j = 0; j < 4; j++) {
        double acc = 0;
        for (int k = 0; k < 4; k++)
            acc += new_view->near_row[k] * ninv[k][j];
        wp->near_new[j] = acc;
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (!isfinite(wp->k[i][j]) || !isfinite(wp->near_new[j]))
                return false;
    wp->new_perspective = new_view->perspective;
    wp->src_w = src_w;
    wp->src_h = src_h;
    wp->dst_w = dst_w;
    wp->dst_h = dst_h;
    return true;
}

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

static RVI_ALWAYS_INLINE void ray_finish(const rvi_feed_warp *wp, warp_ray *r)
{
    const double(*k)[4] = wp->k;
    double b0 = k[0][2], b1 = k[1][2], b2 = k[2][2], b3 = k[3][2];
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

/* ---- one block ----------------------------------------------------------------------------- */

typedef enum proof {
    PROOF_DONE = 0,
    PROOF_NOTHING, /* nothing provable where the block's rays were looked for */
    PROOF_FAILED
} proof;

/* A block's four corner rays: (x0, y0), (x1, y0), (x0, y1), (x1, y1). */
typedef struct corners {
    const warp_ray *r[4];
#if defined(__SSE__) || defined(_M_X64)
    __m128 x0, x1, y0, y1; /* the rays' lines a corner per lane (x0 + x1 Q, y0 + y1 Q) */
#endif
    float mag0, mag1; /* the largest m0 and m1: for the rectangle's margin */
    bool usable;      /* every corner has d > 0 */
} corners;

static RVI_ALWAYS_INLINE void corners_of(const warp_ray *const r[4], corners *c)
{
    c->usable = true;
    for (int i = 0; i < 4; i++) {
        c->r[i] = r[i];
        c->usable &= r[i]->d > 0;
    }
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
    double mag0 = 0, mag1 = 0;
    for (int i = 0; i < 4; i++) {
        mag0 = c->r[i]->m0 > mag0 ? c->r[i]->m0 : mag0;
        mag1 = c->r[i]->m1 > mag1 ? c->r[i]->m1 : mag1;
    }
    c->mag0 = (float)mag0;
    c->mag1 = (float)mag1;
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

#define WARP_ROUNDS 3

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
 * decides how much work is spent, never what is proven). */
static RVI_ALWAYS_INLINE bool some_surface(const rvi_occ_feed *fd, const int32_t r[4])
{
    size_t w = fd->levels.w[1], off = fd->levels.offset[1];
    const int32_t xs[3] = { r[0], (r[0] + r[2]) / 2, r[2] }, ys[3] = { r[1], (r[1] + r[3]) / 2, r[3] };
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            if (fd->hi[off + (size_t)(ys[j] >> 1) * w + (size_t)(xs[i] >> 1)] < INFINITY)
                return true;
    return false;
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

/* Writes the block's texels [x0, x1) x [y0, y1): the smallest value over each texel of the
 * buffer-view nearness at old nearness Qb (a plane: at the corner its gradient points
 * away from), rounded farther. False when that plane cannot be formed. */
static RVI_ALWAYS_INLINE bool store_block(const rvi_feed_warp *wp, float *dest, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double qb)
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
    for (int32_t k = 0; k < n; k++)
        step[k] = fgx * (float)k;
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

/* Whether the feed proves surface (level 1) under each of the block's corner points at
 * old nearness qa and qb. prism_rect bounds exactly these points (the same float products
 * and sums) for the range [qb, qa], so when one is outside the image or not over surface,
 * a round at that range leaves the image or meets a texel that proves nothing, and fails. */
static RVI_ALWAYS_INLINE bool corners_on_surface(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const corners *c, double qb,
                               double qa)
{
    const float q[2] = { (float)qa, (float)qb };
    const float *hi = fd->hi + fd->levels.offset[1];
    int32_t at[8];
#if defined(__SSE2__) || defined(_M_X64)
    /* A corner per lane; the same float products and sums as prism_rect's. */
    __m128 x0 = c->x0, x1 = c->x1, y0 = c->y0, y1 = c->y1;
    __m128 zero = _mm_setzero_ps(), sw = _mm_set1_ps((float)wp->src_w), sh = _mm_set1_ps((float)wp->src_h);
    __m128 w1 = _mm_set1_ps((float)fd->levels.w[1]);
    for (int e = 0; e < 2; e++) {
        __m128 vq = _mm_set1_ps(q[e]);
        __m128 X = _mm_add_ps(x0, _mm_mul_ps(x1, vq)), Y = _mm_add_ps(y0, _mm_mul_ps(y1, vq));
        __m128 in = _mm_and_ps(_mm_and_ps(_mm_cmpge_ps(X, zero), _mm_cmpge_ps(Y, zero)),
                               _mm_and_ps(_mm_cmplt_ps(X, sw), _mm_cmplt_ps(Y, sh)));
        if (_mm_movemask_ps(in) != 15)
            return false;
        /* the level-1 texel's index, exact in float (below 2^24) */
        __m128i xi = _mm_srai_epi32(_mm_cvttps_epi32(X), 1), yi = _mm_srai_epi32(_mm_cvttps_epi32(Y), 1);
        __m128 i = _mm_add_ps(_mm_mul_ps(_mm_cvtepi32_ps(yi), w1), _mm_cvtepi32_ps(xi));
        _mm_storeu_si128((__m128i *)(void *)(at + 4 * e), _mm_cvttps_epi32(i));
    }
#else
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 4; i++) {
            const float *l = c->r[i]->line;
            float X = l[0] + l[1] * q[e], Y = l[2] + l[3] * q[e];
            if (!(X >= 0 && Y >= 0 && X < (float)wp->src_w && Y < (float)wp->src_h))
                return false;
            at[4 * e + i] = ((int32_t)Y >> 1) * (int32_t)fd->levels.w[1] + ((int32_t)X >> 1);
        }
#endif
    bool all = true;
    for (int k = 0; k < 8; k++)
        all &= hi[at[k]] < INFINITY;
    return all;
}

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

static RVI_ALWAYS_INLINE bool proven(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double qb)
{
    if (!store_block(run->wp, run->dest, x0, y0, x1, y1, qb))
        return false;
    run->written += (uint32_t)((x1 - x0) * (y1 - y0));
    return true;
}

/* Proves a block from a guess, else from the feed's own guess at its centre, else splits it
 * in four (when something provable was seen). Every texel was marked as proving nothing
 * beforehand; a proof overwrites its block. On success range holds the block's final range
 * (a guess for its neighbours; after a split, that of its last child proven). */
typedef bool (*block_fn)(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, const warp_ray *const r[4],
                         double range[2], bool have_guess);

static RVI_ALWAYS_INLINE bool block(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                                    const warp_ray *const r[4], double range[2], bool have_guess, block_fn child)
{
    corners c;
    corners_of(r, &c);
    double tried[2] = { range[0], range[1] };
    proof p = PROOF_NOTHING;
    int32_t mb = run->fd->min_block;
    bool smallest = x1 - x0 <= mb && y1 - y0 <= mb;
    if (have_guess && smallest && c.usable && range[0] <= range[1] &&
        !corners_on_surface(run->wp, run->fd, &c, range[0], range[1]))
        return false; /* the guess's first rectangle meets a texel that proves nothing */
    if (have_guess) {
        p = prove_block(run->wp, run->fd, &run->span, &c, range);
        if (p == PROOF_DONE && proven(run, x0, y0, x1, y1, range[0]))
            return true;
    }
    /* The feed's own guess only where no neighbour gave one: after a neighbour's guess
     * failed it rarely helps (the rectangle's texels are usually what failed). */
    double own[2];
    guess_kind own_kind = have_guess ? GUESS_NONE : centre_guess(run->wp, run->fd, &c, run->q0, own);
    if (own_kind == GUESS_FOUND) {
        proof q = prove_block(run->wp, run->fd, &run->span, &c, own);
        if (q == PROOF_DONE && proven(run, x0, y0, x1, y1, own[0])) {
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
    /* Every child starts from the guess this block was given, not from a sibling's result,
     * so that the children's proofs do not wait on one another. */
    bool any = false;
    for (int j = 0; j < (split_y ? 2 : 1); j++)
        for (int i = 0; i < (split_x ? 2 : 1); i++) {
            /* A side not split runs from its first corner to its last. */
            int i1 = split_x ? i + 1 : 2, j1 = split_y ? j + 1 : 2;
            const warp_ray *sub[4] = { g[j][i], g[j][i1], g[j1][i], g[j1][i1] };
            double rg[2] = { tried[0], tried[1] };
            if (child(run, xs[i], ys[j], xs[i1], ys[j1], sub, rg, have_guess)) {
                range[0] = rg[0];
                range[1] = rg[1];
                any = true;
            }
        }
    return any;
}

/* The blocks' recursion, in a plain build and (where the buffer picks it) an AVX2 build of
 * the same source: the same operations in the same order (no contraction), so the same
 * bits, in fewer instructions. */
static bool block_generic(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, const warp_ray *const r[4],
                          double range[2], bool have_guess)
{
    return block(run, x0, y0, x1, y1, r, range, have_guess, block_generic);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static bool block_avx2(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                                       const warp_ray *const r[4], double range[2], bool have_guess)
{
    return block(run, x0, y0, x1, y1, r, range, have_guess, block_avx2);
}
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
            if (top(&run, x0, y0, x1, y1, cs, range, have)) {
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
#endif

uint32_t rvi_feed_reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch, bool wide)
{
#if RVI_OCC_X86_WIDE
    if (wide)
        return reproject_avx2(wp, fd, dest, scratch);
#endif
    (void)wide;
    return reproject_generic(wp, fd, dest, scratch);
}
