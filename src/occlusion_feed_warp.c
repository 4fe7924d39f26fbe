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
static bool level_plane(const rvi_feed_warp *wp, double Q, double p[3])
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

static void ray_finish(const rvi_feed_warp *wp, warp_ray *r)
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

static void ray_at(const rvi_feed_warp *wp, double x, double y, warp_ray *r)
{
    const double(*k)[4] = wp->k;
    for (int i = 0; i < 4; i++)
        r->a[i] = k[i][0] * x + k[i][1] * y + k[i][3];
    r->n0 = wp->near_new[0] * x + wp->near_new[1] * y + wp->near_new[3];
    ray_finish(wp, r);
}

/* The average of two or four rays: the ray through the average of their points. */
static void ray_mid(const rvi_feed_warp *wp, const warp_ray *p, const warp_ray *q, const warp_ray *s,
                    const warp_ray *t, warp_ray *out)
{
    double f = s ? 0.25 : 0.5;
    for (int i = 0; i < 4; i++)
        out->a[i] = f * (p->a[i] + q->a[i] + (s ? s->a[i] + t->a[i] : 0.0));
    out->n0 = f * (p->n0 + q->n0 + (s ? s->n0 + t->n0 : 0.0));
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
    float mag0, mag1; /* the largest m0 and m1: for the rectangle's margin */
    bool usable;      /* every corner has d > 0 */
} corners;

static void corners_of(const warp_ray *const r[4], corners *c)
{
    double mag0 = 0, mag1 = 0;
    c->usable = true;
    for (int i = 0; i < 4; i++) {
        c->r[i] = r[i];
        mag0 = r[i]->m0 > mag0 ? r[i]->m0 : mag0;
        mag1 = r[i]->m1 > mag1 ? r[i]->m1 : mag1;
        c->usable &= r[i]->d > 0;
    }
    c->mag0 = (float)mag0;
    c->mag1 = (float)mag1;
}

/* The corners' conditions at old nearness Q: b2 - Q b3 > 0 (with d > 0: in front of the old
 * camera, q increasing in Q), q > 0 in a perspective buffer view (Q a3 - a2 > 0), and the
 * point beyond the buffer view's near plane (l . (x, y, q, 1) >= 0, times b2 - Q b3 > 0:
 * n0 (b2 - Q b3) + l2 (Q a3 - a2) >= 0). Each is affine over the block for a fixed Q, so the
 * corners decide it for every ray; each must clear a relative margin far above its rounding. */
static bool conditions_hold(const rvi_feed_warp *wp, const corners *c, double Q)
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

/* The old-image rectangle of the prism between old nearness qa (Pa) and qb (Pb): the
 * bounds of the 8 corner points, as inclusive feed texels; false when it leaves the image
 * (the old view did not see it). In float: each point x0 + x1 Q is off by a few float
 * roundings of |x0| + |x1 Q| (of the inputs, the product and the sum), and the margin takes
 * 2^-19 of the largest such bound, plus a thousandth of a texel. */
static bool prism_rect(const rvi_feed_warp *wp, const corners *c, double qa, double qb, int32_t r[4])
{
    float fa = (float)qa, fb = (float)qb, b[4]; /* x_lo, y_lo, x_hi, y_hi */
#if defined(__SSE__) || defined(_M_X64)
    /* The corners' lines as the columns of a 4 x 4 (x0, x1, y0, y1 per lane). */
    __m128 r0 = _mm_loadu_ps(c->r[0]->line), r1 = _mm_loadu_ps(c->r[1]->line);
    __m128 r2 = _mm_loadu_ps(c->r[2]->line), r3 = _mm_loadu_ps(c->r[3]->line);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
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
    float x_lo = b[0] - m, y_lo = b[1] - m, x_hi = b[2] + m, y_hi = b[3] + m;
    if (!(x_lo >= 0 && y_lo >= 0 && x_hi < (float)wp->src_w && y_hi < (float)wp->src_h))
        return false;
    r[0] = (int32_t)x_lo;
    r[1] = (int32_t)y_lo;
    r[2] = (int32_t)x_hi;
    r[3] = (int32_t)y_hi;
    return true;
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
static bool some_surface(const rvi_occ_feed *fd, const int32_t r[4])
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
static proof prove_block(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const warp_span *span, const corners *c,
                         double range[2])
{
    if (!c->usable)
        return PROOF_NOTHING;
    double qb = range[0], qa = range[1];
    proof why = PROOF_NOTHING;
    for (int round = 0; round < WARP_ROUNDS; round++) {
        int32_t r[4];
        if (!(qb <= qa))
            return PROOF_FAILED;
        if (!(qb >= span->lo && qa <= span->hi) && (!conditions_hold(wp, c, qa) || !conditions_hold(wp, c, qb)))
            return PROOF_FAILED;
        if (!prism_rect(wp, c, qa, qb, r))
            return why;
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
        /* Widen past what was found, so that a slope is covered in fewer rounds. */
        double nqa = qa > hi ? qa : hi, nqb = qb < lo ? qb : lo, pad = 0.125 * (nqa - nqb);
        qa = nqa + pad;
        qb = nqb - pad;
    }
    return PROOF_FAILED;
}

/* Writes the block's texels [x0, x1) x [y0, y1): the smallest value over each texel of the
 * buffer-view nearness at old nearness Qb (a plane: at the corner its gradient points
 * away from), rounded farther. False when that plane cannot be formed. */
static bool store_block(const rvi_feed_warp *wp, float *dest, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double qb)
{
    double plane[3];
    if (!level_plane(wp, qb, plane))
        return false;
    double gx = plane[0], gy = plane[1];
    double ox = gx < 0 ? 1.0 : 0.0, oy = gy < 0 ? 1.0 : 0.0;
    float fgx = (float)gx;
    int32_t n = x1 - x0;
    for (int32_t y = y0; y < y1; y++) {
        /* In float from the row's start: row + gx k (k < 64) comes out within a few float
         * roundings of |row| + |gx| k (of row, gx, the product, the sums); the margin is
         * 2^-19 of that bound, subtracted once from the row's start. */
        double row = gx * ((double)x0 + ox) + gy * ((double)y + oy) + plane[2];
        float base = (float)row - (float)((fabs(row) + fabs(gx) * n) * (1.0 / 524288.0) + 1e-30);
        float *out = dest + (size_t)y * wp->dst_w + x0;
        int32_t k = 0;
#if defined(__SSE__) || defined(_M_X64)
        __m128 vb = _mm_set1_ps(base), vg = _mm_set1_ps(fgx), vk = _mm_setr_ps(0, 1, 2, 3), four = _mm_set1_ps(4);
        for (; k + 4 <= n; k += 4) {
            _mm_storeu_ps(out + k, _mm_add_ps(vb, _mm_mul_ps(vg, vk)));
            vk = _mm_add_ps(vk, four);
        }
#endif
        for (; k < n; k++)
            out[k] = base + fgx * (float)k;
    }
    return true;
}

/* Marks the block's texels as proving nothing. */
static void clear_block(float *dest, uint32_t dst_w, int32_t x0, int32_t y0, int32_t x1, int32_t y1)
{
    for (int32_t y = y0; y < y1; y++) {
        float *out = dest + (size_t)y * dst_w + x0;
        int32_t k = 0, n = x1 - x0;
#if defined(__SSE__) || defined(_M_X64)
        for (; k + 4 <= n; k += 4)
            _mm_storeu_ps(out + k, _mm_set1_ps(-FLT_MAX));
#endif
        for (; k < n; k++)
            out[k] = -FLT_MAX;
    }
}

/* ---- guesses ----------------------------------------------------------------------------- */

/* A range for the block from the feed itself: follow its centre's old-image position (the
 * corners' average: a guess need not be exact) to the depth the feed holds there (its
 * level-1 texel), a few times, and take that texel's bounds. */
static bool centre_guess(const rvi_feed_warp *wp, const rvi_occ_feed *fd, const corners *c, double q0, double range[2])
{
    if (!c->usable)
        return false;
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (int i = 0; i < 4; i++) {
        x0 += 0.25 * c->r[i]->x0;
        x1 += 0.25 * c->r[i]->x1;
        y0 += 0.25 * c->r[i]->y0;
        y1 += 0.25 * c->r[i]->y1;
    }
    double Q = q0;
    for (int it = 0; it < 3; it++) {
        double X = x0 + x1 * Q, Y = y0 + y1 * Q;
        if (!(X >= 0 && Y >= 0 && X < (double)wp->src_w && Y < (double)wp->src_h))
            return false;
        size_t at = fd->levels.offset[1] + (size_t)((int32_t)Y >> 1) * fd->levels.w[1] + (size_t)((int32_t)X >> 1);
        float lo = fd->lo[at], hi = fd->hi[at];
        if (!(hi < INFINITY))
            return false;
        range[0] = lo;
        range[1] = hi;
        Q = 0.5 * ((double)lo + hi);
    }
    return true;
}

/* Some proven depth of the feed to start the guesses from (the first finite texel of level
 * 2, else of level 1: a level-2 texel is finite only when its whole 8 x 8 patch is proven
 * surface), and a scale for the depths the blocks will use: four times the largest upper
 * bound over that level (the nearest proven surface, with room for the rounds' widening). */
static bool any_depth(const rvi_occ_feed *fd, double *q, double *qmax)
{
    const rvi_feed_levels *lv = &fd->levels;
    bool found = false;
    *qmax = 0;
    for (int l = lv->count > 2 ? 2 : 1; l >= 1 && !found; l--) {
        size_t n = (size_t)lv->w[l] * lv->h[l], o = lv->offset[l];
        for (size_t i = 0; i < n; i++)
            if (fd->hi[o + i] < INFINITY) {
                if (!found)
                    *q = 0.5 * ((double)fd->lo[o + i] + fd->hi[o + i]);
                found = true;
                *qmax = fd->hi[o + i] > *qmax ? fd->hi[o + i] : *qmax;
            }
    }
    *qmax *= 4;
    return found;
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

static bool proven(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double qb)
{
    if (!store_block(run->wp, run->dest, x0, y0, x1, y1, qb))
        return false;
    run->written += (uint32_t)((x1 - x0) * (y1 - y0));
    return true;
}

/* Proves a block from a guess, else from the feed's own guess at its centre, else splits it
 * in four (when something provable was seen). On success range holds the block's final
 * range (a guess for its neighbours). */
static bool block(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, const warp_ray *const r[4],
                  double range[2], bool have_guess)
{
    corners c;
    corners_of(r, &c);
    double tried[2] = { range[0], range[1] };
    proof p = PROOF_NOTHING;
    if (have_guess) {
        p = prove_block(run->wp, run->fd, &run->span, &c, range);
        if (p == PROOF_DONE && proven(run, x0, y0, x1, y1, range[0]))
            return true;
    }
    /* The feed's own guess only where no neighbour gave one: after a neighbour's guess
     * failed it rarely helps (the rectangle's texels are usually what failed). */
    double own[2];
    if (!have_guess && centre_guess(run->wp, run->fd, &c, run->q0, own)) {
        proof q = prove_block(run->wp, run->fd, &run->span, &c, own);
        if (q == PROOF_DONE && proven(run, x0, y0, x1, y1, own[0])) {
            range[0] = own[0];
            range[1] = own[1];
            return true;
        }
        p = q > p ? q : p;
    }
    int32_t mb = run->fd->min_block;
    if (p == PROOF_NOTHING || (x1 - x0 <= mb && y1 - y0 <= mb)) {
        clear_block(run->dest, run->wp->dst_w, x0, y0, x1, y1); /* every texel is written once */
        return false;
    }
    /* Four children (two where one side is at the smallest size), their corners shared. */
    int32_t xm = x1 - x0 > mb ? (x0 + x1) / 2 : x1, ym = y1 - y0 > mb ? (y0 + y1) / 2 : y1;
    bool split_x = xm < x1, split_y = ym < y1;
    warp_ray mid[5]; /* (xm, y0), (x0, ym), (xm, ym), (x1, ym), (xm, y1) */
    if (split_x) {
        if ((x1 - x0) % 2 == 0) { /* a midpoint: the average is exact */
            ray_mid(run->wp, r[0], r[1], NULL, NULL, &mid[0]);
            ray_mid(run->wp, r[2], r[3], NULL, NULL, &mid[4]);
        } else {
            ray_at(run->wp, xm, y0, &mid[0]);
            ray_at(run->wp, xm, y1, &mid[4]);
        }
    }
    if (split_y) {
        if ((y1 - y0) % 2 == 0) {
            ray_mid(run->wp, r[0], r[2], NULL, NULL, &mid[1]);
            ray_mid(run->wp, r[1], r[3], NULL, NULL, &mid[3]);
        } else {
            ray_at(run->wp, x0, ym, &mid[1]);
            ray_at(run->wp, x1, ym, &mid[3]);
        }
    }
    if (split_x && split_y) {
        if ((x1 - x0) % 2 == 0 && (y1 - y0) % 2 == 0)
            ray_mid(run->wp, r[0], r[1], r[2], r[3], &mid[2]);
        else
            ray_at(run->wp, xm, ym, &mid[2]);
    }
    const warp_ray *g[3][3] = { { r[0], &mid[0], r[1] }, { &mid[1], &mid[2], &mid[3] }, { r[2], &mid[4], r[3] } };
    const int32_t xs[3] = { x0, xm, x1 }, ys[3] = { y0, ym, y1 };
    bool any = false, have = have_guess;
    double guess[2] = { tried[0], tried[1] };
    for (int j = 0; j < (split_y ? 2 : 1); j++)
        for (int i = 0; i < (split_x ? 2 : 1); i++) {
            /* A side not split runs from its first corner to its last. */
            int i1 = split_x ? i + 1 : 2, j1 = split_y ? j + 1 : 2;
            const warp_ray *sub[4] = { g[j][i], g[j][i1], g[j1][i], g[j1][i1] };
            double rg[2] = { guess[0], guess[1] };
            if (block(run, xs[i], ys[j], xs[i1], ys[j1], sub, rg, have)) {
                guess[0] = rg[0];
                guess[1] = rg[1];
                have = any = true;
            }
        }
    if (any) {
        range[0] = guess[0];
        range[1] = guess[1];
    }
    return any;
}

static RVI_ALWAYS_INLINE uint32_t reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch)
{
    warp_run run = { wp, fd, { 1, 0 }, dest, 0, 0 };
    double qmax;
    if (!any_depth(fd, &run.q0, &qmax)) {
        clear_block(dest, wp->dst_w, 0, 0, (int32_t)wp->dst_w, (int32_t)wp->dst_h);
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
            double range[2];
            bool have = true;
            if (left[0] == left[0]) {
                range[0] = left[0];
                range[1] = left[1];
            } else if (ranges[2 * c] == ranges[2 * c]) {
                range[0] = ranges[2 * c];
                range[1] = ranges[2 * c + 1];
            } else {
                have = false;
                range[0] = range[1] = run.q0;
            }
            const warp_ray *cs[4] = { &edge[0][c], &edge[0][c + 1], &edge[1][c], &edge[1][c + 1] };
            if (block(&run, x0, y0, x1, y1, cs, range, have)) {
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

uint32_t rvi_feed_reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch)
{
    return reproject(wp, fd, dest, scratch);
}
