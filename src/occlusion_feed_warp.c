/* The depth feed's warp (docs/occlusion.md, "The depth feed"): the projective map from the
 * buffer's texels and nearness ("new space") to the feed's old view, derived once per feed
 * from the two views (rvi_feed_warp_init, declared in occlusion_feed.h). The rays and block
 * corners built on it are in occlusion_feed_warp.h; the reprojection that uses them, with
 * the proof it rests on, is in occlusion_feed_reproject.c. */
#include "occlusion_feed.h"

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
    if (!invert4((const double(*)[4])n, ninv))
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
    const double b0 = wp->k[0][2], b1 = wp->k[1][2], b2 = wp->k[2][2], b3 = wp->k[3][2];
    const double ray_b[4][2] = { { b2, b0 }, { b0, b3 }, { b2, b1 }, { b1, b3 } };
    memcpy(wp->ray_b, ray_b, sizeof ray_b);
    wp->new_perspective = new_view->perspective;
    wp->src_w = src_w;
    wp->src_h = src_h;
    wp->dst_w = dst_w;
    wp->dst_h = dst_h;
    return true;
}
