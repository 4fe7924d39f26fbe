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

/* ---- one block --------------------------------------------------------------------------- */

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

/* Relative slack on every double computed here (products of a 4 x 4 inverse and a few
 * dot products), far above their rounding. */
#define WARP_REL 1e-9

/* The old-image rectangle of the prism between old nearness qa (Pa) and qb (Pb) over the
 * block [x0, x1] x [y0, y1] (texel edges), as inclusive feed texels; false when a corner
 * condition fails or the rectangle leaves the image. */
static bool prism_rect(const rvi_feed_warp *wp, const double pa[3], const double pb[3], double x0, double y0,
                       double x1, double y1, int32_t rect[4])
{
    const double cx[4] = { x0, x1, x0, x1 }, cy[4] = { y0, y0, y1, y1 };
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int c = 0; c < 4; c++) {
        double qa = pa[0] * cx[c] + pa[1] * cy[c] + pa[2], qb = pb[0] * cx[c] + pb[1] * cy[c] + pb[2];
        double mag = fabs(qa) + fabs(qb);
        /* Pa before Pb along the ray (nearer in the buffer's view), both in front of its eye. */
        if (!(qa - qb >= -WARP_REL * mag) || (wp->new_perspective && !(qb > WARP_REL * mag)))
            return false;
        for (int s = 0; s < 2; s++) {
            double v[4] = { cx[c], cy[c], s ? qb : qa, 1.0 };
            double h[4], hm = 0, nr = 0, nm = 0;
            for (int i = 0; i < 4; i++) {
                h[i] = wp->k[i][0] * v[0] + wp->k[i][1] * v[1] + wp->k[i][2] * v[2] + wp->k[i][3];
                hm += fabs(wp->k[3][i] * v[i]);
                nr += wp->near_new[i] * v[i];
                nm += fabs(wp->near_new[i] * v[i]);
            }
            /* In front of the old camera, and beyond the buffer view's near plane. */
            if (!(h[3] > WARP_REL * hm) || !(nr >= WARP_REL * nm))
                return false;
            double X = h[0] / h[3], Y = h[1] / h[3];
            xmin = X < xmin ? X : xmin;
            xmax = X > xmax ? X : xmax;
            ymin = Y < ymin ? Y : ymin;
            ymax = Y > ymax ? Y : ymax;
        }
    }
    double mx = 1e-6 + WARP_REL * (fabs(xmin) + fabs(xmax)), my = 1e-6 + WARP_REL * (fabs(ymin) + fabs(ymax));
    xmin -= mx;
    ymin -= my;
    xmax += mx;
    ymax += my;
    if (!(xmin >= 0 && ymin >= 0 && xmax < (double)wp->src_w && ymax < (double)wp->src_h))
        return false;
    rect[0] = (int32_t)xmin;
    rect[1] = (int32_t)ymin;
    rect[2] = (int32_t)xmax;
    rect[3] = (int32_t)ymax;
    return true;
}

#define WARP_ROUNDS 3

/* Tries to prove the block from the range guess (range[0] = Qb <= range[1] = Qa), widening
 * it to what the rectangle holds for up to WARP_ROUNDS rounds. On success range is the
 * final (tightest) range and plane the buffer-view nearness of its Pb. */
static bool prove_block(const rvi_feed_warp *wp, const rvi_occ_feed *fd, double x0, double y0, double x1, double y1,
                        double range[2], double plane[3])
{
    double qb = range[0], qa = range[1];
    for (int round = 0; round < WARP_ROUNDS; round++) {
        double pa[3], pb[3];
        int32_t r[4];
        if (!level_plane(wp, qa, pa) || !level_plane(wp, qb, pb) || !prism_rect(wp, pa, pb, x0, y0, x1, y1, r))
            return false;
        float lo, hi;
        rvi_feed_query(fd, r[0], r[1], r[2], r[3], &lo, &hi);
        if (!(hi < INFINITY) || !(lo > -INFINITY))
            return false; /* a texel of F proves nothing */
        if (lo >= qb && hi <= qa) {
            /* The range [lo, hi] lies inside [qb, qa]: its prism lies inside this one, its
             * rectangle inside this rectangle, so the same bounds hold over it. */
            range[0] = lo;
            range[1] = hi;
            return level_plane(wp, lo, plane);
        }
        /* Widen past what was found, so that a slope is covered in fewer rounds. */
        double nqa = qa > hi ? qa : hi, nqb = qb < lo ? qb : lo, pad = 0.125 * (nqa - nqb);
        qa = nqa + pad;
        qb = nqb - pad;
    }
    return false;
}

/* Writes the block's texels: the smallest value of the plane over each texel (at the
 * corner its gradient points away from), rounded farther. */
static void store_block(float *dest, uint32_t dst_w, int32_t x0, int32_t y0, int32_t x1, int32_t y1,
                        const double plane[3])
{
    double gx = plane[0], gy = plane[1];
    double ox = gx < 0 ? 1.0 : 0.0, oy = gy < 0 ? 1.0 : 0.0;
    for (int32_t y = y0; y < y1; y++) {
        double row = gy * ((double)y + oy) + plane[2];
        float *out = dest + (size_t)y * dst_w;
        for (int32_t x = x0; x < x1; x++) {
            double v = gx * ((double)x + ox) + row;
            /* 2^-20 of the value is far above the double's rounding here, and above the
             * float conversion's: the stored value is never nearer than the proof. */
            out[x] = (float)(v - fabs(v) * (1.0 / 1048576.0) - 1e-30);
        }
    }
}

/* ---- guesses ----------------------------------------------------------------------------- */

/* A range for a ray from the feed itself: follow the ray's old-image position to the depth
 * the feed holds there, twice, and take that texel's bounds. */
static bool centre_guess(const rvi_feed_warp *wp, const rvi_occ_feed *fd, double x, double y, double q0,
                         double range[2])
{
    double Q = q0;
    for (int it = 0; it < 3; it++) {
        double p[3];
        if (!level_plane(wp, Q, p))
            return false;
        double q = p[0] * x + p[1] * y + p[2];
        double h[4];
        for (int i = 0; i < 4; i++)
            h[i] = wp->k[i][0] * x + wp->k[i][1] * y + wp->k[i][2] * q + wp->k[i][3];
        if (!(h[3] > 0) || (wp->new_perspective && !(q > 0)))
            return false;
        double X = h[0] / h[3], Y = h[1] / h[3];
        if (!(X >= 0 && Y >= 0 && X < (double)wp->src_w && Y < (double)wp->src_h))
            return false;
        size_t at = (size_t)(int32_t)Y * wp->src_w + (size_t)(int32_t)X;
        float lo = fd->lo[at], hi = fd->hi[at];
        if (!(hi < INFINITY))
            return false;
        range[0] = lo;
        range[1] = hi;
        Q = 0.5 * ((double)lo + hi);
    }
    return true;
}

/* Some proven depth of the feed to start the guesses from: the first finite texel of level
 * 2, 1 or 0 (a level-2 texel is finite only when its whole 4 x 4 patch is proven surface,
 * so that start is a good one). */
static bool any_depth(const rvi_occ_feed *fd, double *q)
{
    const rvi_feed_levels *lv = &fd->levels;
    for (int l = lv->count > 2 ? 2 : (int)lv->count - 1; l >= 0; l--) {
        size_t n = (size_t)lv->w[l] * lv->h[l], o = lv->offset[l];
        for (size_t i = 0; i < n; i++)
            if (fd->hi[o + i] < INFINITY) {
                *q = 0.5 * ((double)fd->lo[o + i] + fd->hi[o + i]);
                return true;
            }
    }
    return false;
}

/* ---- the blocks -------------------------------------------------------------------------- */

typedef struct warp_run {
    const rvi_feed_warp *wp;
    const rvi_occ_feed *fd;
    float *dest;
    double q0;          /* a start for the feed-driven guesses */
    uint32_t written;
} warp_run;

/* Proves a block from a guess, else from the feed's own guess at its centre, else splits
 * it in four. On success range holds the block's final range (a guess for neighbours). */
static bool block(warp_run *run, int32_t x0, int32_t y0, int32_t x1, int32_t y1, double range[2], bool have_guess)
{
    double plane[3], tried[2] = { range[0], range[1] };
    if (have_guess && prove_block(run->wp, run->fd, x0, y0, x1, y1, range, plane)) {
        store_block(run->dest, run->wp->dst_w, x0, y0, x1, y1, plane);
        run->written += (uint32_t)((x1 - x0) * (y1 - y0));
        return true;
    }
    double own[2];
    if (centre_guess(run->wp, run->fd, 0.5 * (x0 + x1), 0.5 * (y0 + y1), have_guess ? 0.5 * (tried[0] + tried[1]) : run->q0,
                     own) &&
        !(have_guess && own[0] == tried[0] && own[1] == tried[1]) &&
        prove_block(run->wp, run->fd, x0, y0, x1, y1, own, plane)) {
        store_block(run->dest, run->wp->dst_w, x0, y0, x1, y1, plane);
        run->written += (uint32_t)((x1 - x0) * (y1 - y0));
        range[0] = own[0];
        range[1] = own[1];
        return true;
    }
    if (x1 - x0 <= RVI_FEED_MIN_BLOCK && y1 - y0 <= RVI_FEED_MIN_BLOCK)
        return false;
    int32_t xm = x1 - x0 > RVI_FEED_MIN_BLOCK ? (x0 + x1) / 2 : x1, ym = y1 - y0 > RVI_FEED_MIN_BLOCK ? (y0 + y1) / 2 : y1;
    const int32_t xs[3] = { x0, xm, x1 }, ys[3] = { y0, ym, y1 };
    bool any = false;
    double guess[2] = { tried[0], tried[1] };
    bool have = have_guess;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            if (xs[i] == xs[i + 1] || ys[j] == ys[j + 1])
                continue;
            double sub[2] = { guess[0], guess[1] };
            if (block(run, xs[i], ys[j], xs[i + 1], ys[j + 1], sub, have)) {
                guess[0] = sub[0];
                guess[1] = sub[1];
                have = any = true;
            }
        }
    if (any) {
        range[0] = guess[0];
        range[1] = guess[1];
    }
    return any;
}

uint32_t rvi_feed_reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *ranges)
{
    size_t n = (size_t)wp->dst_w * wp->dst_h;
    for (size_t i = 0; i < n; i++)
        dest[i] = -FLT_MAX;
    warp_run run = { wp, fd, dest, 0, 0 };
    if (!any_depth(fd, &run.q0))
        return 0;
    int32_t bw = RVI_FEED_BLOCK, cols = (int32_t)((wp->dst_w + RVI_FEED_BLOCK - 1) / RVI_FEED_BLOCK);
    /* ranges: the last proven range of each block column (NaN: none yet). */
    for (int32_t c = 0; c < cols; c++)
        ranges[2 * c] = ranges[2 * c + 1] = NAN;
    for (int32_t y0 = 0; y0 < (int32_t)wp->dst_h; y0 += bw) {
        int32_t y1 = y0 + bw < (int32_t)wp->dst_h ? y0 + bw : (int32_t)wp->dst_h;
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
            if (block(&run, x0, y0, x1, y1, range, have)) {
                left[0] = ranges[2 * c] = range[0];
                left[1] = ranges[2 * c + 1] = range[1];
            } else {
                left[0] = left[1] = NAN;
            }
        }
    }
    return run.written;
}
