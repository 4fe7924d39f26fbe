/* The view of an occlusion frame (docs/design.md §4) and the screen-space geometry every
 * occluder shape shares: projecting points, the nearness along a plane as an affine
 * function of the screen, and the screen lines of outline edges.
 *
 * Everything an occluder contributes is computed in double from the host's float inputs,
 * then rounded toward "farther" and "smaller" when it becomes float, so float error can
 * only lose culls, never invent one. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* A point is safely in front of the eye when its clip w exceeds this fraction of |x| + |y|:
 * its texel position is then below about 1e12 buffer widths, and 1 / w keeps full
 * precision. */
#define W_FRACTION 1e-12
/* Texel coordinates beyond this carry less precision (1e12 x 2^-52, about 2e-4 texels) than
 * the margins below assume: such a point makes its occluder unusable. */
#define TEXEL_LIMIT 1e12
/* Added where a bound must stay strictly positive for x = y = 0 (and cannot matter
 * otherwise: it is below any double that is not itself subnormal). */
#define TINY 1e-300
/* A plane pair places an outline edge's screen line only when the plane through the eye
 * that they span is well defined: its normal at least this fraction of the terms that make
 * it (the eye is not on or next to the edge's line). */
#define PENCIL_CONDITION 1e-6
/* The occluders' clip plane w = n' (perspective, near plane parallel to the image) lies
 * beyond the near plane w = n by at least this fraction of n, and n' is rounded up to
 * CLIP_GRID_BITS significant bits: the conventions' float matrices place n within a few
 * float roundings of each other, so they almost always give the same n', and the margin
 * covers those roundings and a near row off parallel by up to CLIP_PARALLEL over the whole
 * screen. */
#define CLIP_MARGIN (1.0 / 1024.0)
#define CLIP_GRID_BITS 8
#define CLIP_PARALLEL 1e-6
/* An outline line whose error bound over the buffer exceeds this many texels is not used:
 * the inner raster's shrink margin would no longer cover it. */
#define LINE_SLACK_MAX 1e-5

static double dmin(double a, double b) { return a < b ? a : b; }

float rvi_occ_f_down(double x)
{
    float f = (float)x;
    if ((double)f > x) {
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        if (f > 0)
            bits--;
        else if (f < 0)
            bits++;
        else
            bits = 0x80000001u; /* -FLT_TRUE_MIN */
        memcpy(&f, &bits, sizeof f);
    }
    return f;
}

static double m_at(const double m[16], int row, int col) { return m[col * 4 + row]; }

/* Inverse of a 3x3 matrix given by rows; false when singular or too ill-conditioned to trust. */
static bool invert3(const double r[3][3], double inv[3][3])
{
    double c00 = r[1][1] * r[2][2] - r[1][2] * r[2][1];
    double c01 = r[1][2] * r[2][0] - r[1][0] * r[2][2];
    double c02 = r[1][0] * r[2][1] - r[1][1] * r[2][0];
    double det = r[0][0] * c00 + r[0][1] * c01 + r[0][2] * c02;
    double scale = 0;
    for (int i = 0; i < 3; i++)
        scale = fmax(scale, fabs(r[i][0]) + fabs(r[i][1]) + fabs(r[i][2]));
    if (!(fabs(det) > 1e-12 * scale * scale * scale) || !isfinite(det))
        return false;
    double id = 1.0 / det;
    inv[0][0] = c00 * id;
    inv[1][0] = c01 * id;
    inv[2][0] = c02 * id;
    inv[0][1] = (r[0][2] * r[2][1] - r[0][1] * r[2][2]) * id;
    inv[1][1] = (r[0][0] * r[2][2] - r[0][2] * r[2][0]) * id;
    inv[2][1] = (r[0][1] * r[2][0] - r[0][0] * r[2][1]) * id;
    inv[0][2] = (r[0][1] * r[1][2] - r[0][2] * r[1][1]) * id;
    inv[1][2] = (r[0][2] * r[1][0] - r[0][0] * r[1][2]) * id;
    inv[2][2] = (r[0][0] * r[1][1] - r[0][1] * r[1][0]) * id;
    /* Residual check: the plane functions below inherit the inverse's error. */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double acc = 0, mag = 0;
            for (int k = 0; k < 3; k++) {
                acc += r[i][k] * inv[k][j];
                mag += fabs(r[i][k] * inv[k][j]);
            }
            if (!(fabs(acc - (i == j)) <= 1e-10 * (mag + 1)))
                return false;
        }
    return true;
}

/* The eye (perspective) or the direction toward the viewer (orthographic), and the
 * reference point of the float object tests. */
static bool locate_eye(rvi_occ_view *v, rv_clip clip, const double ainv[3][3])
{
    if (v->perspective) {
        /* The eye: x = y = w = 0. */
        double rhs[3] = { -m_at(v->vp, 0, 3), -m_at(v->vp, 1, 3), -m_at(v->vp, 3, 3) };
        for (int i = 0; i < 3; i++)
            v->eye[i] = ainv[i][0] * rhs[0] + ainv[i][1] * rhs[1] + ainv[i][2] * rhs[2];
        v->eye[3] = 1;
    } else {
        /* Toward the viewer: against growing depth sigma * z. */
        for (int i = 0; i < 3; i++)
            v->eye[i] = -v->sigma * ainv[i][2];
        v->eye[3] = 0;
    }
    for (int i = 0; i < 4; i++)
        if (!isfinite(v->eye[i]))
            return false;
    /* Reference point of the float object tests: the eye (perspective) or the centre of
     * the view volume's near face (orthographic), so float error scales with distance. */
    double ref[3];
    if (v->perspective) {
        for (int i = 0; i < 3; i++)
            ref[i] = v->eye[i];
    } else {
        /* x = y = 0, near(p) = 0: solve with the a rows (z chosen on the near plane). */
        double zn = clip.reversed_z ? 1.0 : (clip.depth_zero_to_one ? 0.0 : -1.0);
        double rhs[3] = { -m_at(v->vp, 0, 3), -m_at(v->vp, 1, 3), zn - m_at(v->vp, 2, 3) };
        for (int i = 0; i < 3; i++)
            ref[i] = ainv[i][0] * rhs[0] + ainv[i][1] * rhs[1] + ainv[i][2] * rhs[2];
    }
    for (int i = 0; i < 3; i++) {
        v->ref[i] = (float)ref[i];
        if (!isfinite(v->ref[i]))
            return false;
    }
    return true;
}

/* The occluders' clip plane (clip_row). The host's near plane comes from row z, which each
 * depth convention rounds its own way; clipping occluders there would let a convention
 * move a clipped occluder's outline by a rounding and, rarely, change a verdict. When the
 * near plane is parallel to the image (near = lambda w + kappa up to CLIP_PARALLEL, as in
 * every projection but an oblique one), occluders are clipped at w = n' instead, n' just
 * beyond n on a coarse grid: row w is the same under every convention. A point on screen
 * with w >= n' is beyond the near plane: near(p) = lambda (w - n) + r . (p - eye) with
 * |r . (p - eye)| <= CLIP_PARALLEL lambda w / cos(angle to the axis), which the margin
 * covers for any field of view under about 179.9 degrees (checked at the screen's
 * corners). Otherwise (oblique, orthographic) occluders are clipped at the near plane. */
static void clip_plane(rvi_occ_view *v)
{
    memcpy(v->clip_row, v->near_row, sizeof v->clip_row);
    if (!v->perspective)
        return;
    double w[4], ww = 0, nw = 0;
    for (int j = 0; j < 4; j++)
        w[j] = m_at(v->vp, 3, j);
    for (int j = 0; j < 3; j++) {
        ww += w[j] * w[j];
        nw += v->near_row[j] * w[j];
    }
    if (!(ww > 0) || !(nw > 0))
        return;
    double lambda = nw / ww, resid = 0, wl = sqrt(ww);
    for (int j = 0; j < 3; j++)
        resid += fabs(v->near_row[j] - lambda * w[j]);
    /* 1 / cos of the widest angle on screen: the corner rays A^-1 (+-1, +-1, 1). */
    double slant = 0;
    for (int c = 0; c < 4; c++) {
        double x = c & 1 ? 1 : -1, y = c & 2 ? 1 : -1, d2 = 0;
        for (int i = 0; i < 3; i++) {
            double di = v->a_inv[i * 3 + 0] * x + v->a_inv[i * 3 + 1] * y + v->a_inv[i * 3 + 2];
            d2 += di * di;
        }
        slant = fmax(slant, sqrt(d2) * wl); /* |d| |w| / (w . d), w . d = 1 */
    }
    if (!(resid <= CLIP_PARALLEL * lambda * wl) || !(slant * CLIP_PARALLEL <= 0.25 * CLIP_MARGIN))
        return; /* oblique or too wide */
    double at_eye = v->near_row[3], w_eye = w[3];
    for (int j = 0; j < 3; j++) {
        at_eye += v->near_row[j] * v->eye[j];
        w_eye += w[j] * v->eye[j];
    }
    double n = w_eye - at_eye / lambda; /* the near plane's w */
    if (!(n > 0) || !isfinite(n))
        return;
    int e;
    (void)frexp(n * (1 + CLIP_MARGIN), &e);
    double grid = ldexp(1.0, e - CLIP_GRID_BITS), np = ceil(n * (1 + CLIP_MARGIN) / grid) * grid;
    for (int j = 0; j < 3; j++)
        v->clip_row[j] = w[j];
    v->clip_row[3] = w[3] - np;
}

/* The float rows of the object tests and their error bounds. */
static bool test_rows(rvi_occ_view *v, uint32_t width, uint32_t height)
{
    /* Test rows: texel x = W/2 (x + w), texel y = H/2 (w - y) (row 0 at the top), near,
     * and q = w (perspective) or nearness -sigma z (orthographic). */
    double rowd[4][4];
    for (int j = 0; j < 4; j++) {
        double x = m_at(v->vp, 0, j), y = m_at(v->vp, 1, j), z = m_at(v->vp, 2, j), w = m_at(v->vp, 3, j);
        rowd[0][j] = 0.5 * width * (x + w);
        rowd[1][j] = 0.5 * height * (w - y);
        rowd[2][j] = v->near_row[j];
        rowd[3][j] = v->perspective ? w : -v->sigma * z;
    }
    /* Float error of a corner value: ~8 roundings of terms bounded by |row| * D, plus the
     * rounding of the rows and of (p - ref). 16 eps leaves a factor two to spare. */
    const double gamma = 16 * RVI_OCC_F_EPS;
    for (int r = 0; r < 4; r++) {
        double c = rowd[r][3], mx = 0;
        for (int j = 0; j < 3; j++) {
            v->rows[r][j] = (float)rowd[r][j];
            c += rowd[r][j] * (double)v->ref[j];
            mx = fmax(mx, fabs(rowd[r][j]));
        }
        v->rows[r][3] = (float)c;
        for (int j = 0; j < 4; j++)
            v->cols[j][r] = v->rows[r][j];
        v->err_mul[r] = (float)(gamma * mx * 1.0001);
        v->err_add[r] = (float)(gamma * fabs(c) * 1.0001 + 1e-30);
        if (!isfinite(v->rows[r][0]) || !isfinite(v->rows[r][1]) || !isfinite(v->rows[r][2]) ||
            !isfinite(v->rows[r][3]) || !isfinite(v->err_mul[r]))
            return false;
    }
    /* Screen rectangle margin in texels. Perspective: tx = X / w with both X and w off by
     * their bounds; for the corners that matter |tx| <= W + 2, so the error is at most
     * (errX + (W + 2) errW) / w. Orthographic: errX directly (nearness factor 1 there). */
    double big = fmax(width, height) + 2.0;
    if (v->perspective) {
        v->rect_mul = (float)((fmax(v->err_mul[0], v->err_mul[1]) + big * v->err_mul[3]) * 1.001);
        v->rect_add = (float)((fmax(v->err_add[0], v->err_add[1]) + big * v->err_add[3]) * 1.001);
    } else {
        v->rect_mul = (float)(fmax(v->err_mul[0], v->err_mul[1]) * 1.001);
        v->rect_add = (float)(fmax(v->err_add[0], v->err_add[1]) * 1.001);
    }
    return true;
}

/* The box around the near plane's part in view: its four corners, each where the near plane
 * meets two side planes (w = +-x, w = +-y), widened by a part in 1e6 of their size and
 * place. Infinite when a corner cannot be solved for, or lies at w <= 0 (an oblique near
 * plane, a mirror's or portal's, that does not cut all four edges of the view in front of
 * the eye: its part in view then reaches out to the far plane): every solid reaching
 * behind the near plane then counts as cut by it. */
static void near_box(rvi_occ_view *v)
{
    for (int a = 0; a < 3; a++) {
        v->near_lo[a] = INFINITY;
        v->near_hi[a] = -INFINITY;
    }
    for (int corner = 0; corner < 4; corner++) {
        double sx = corner & 1 ? 1.0 : -1.0, sy = corner & 2 ? 1.0 : -1.0, r[3][3], inv[3][3], d[3];
        for (int j = 0; j < 4; j++) {
            double side_x = m_at(v->vp, 3, j) - sx * m_at(v->vp, 0, j);
            double side_y = m_at(v->vp, 3, j) - sy * m_at(v->vp, 1, j);
            if (j < 3) {
                r[0][j] = v->near_row[j];
                r[1][j] = side_x;
                r[2][j] = side_y;
            } else {
                d[0] = v->near_row[3];
                d[1] = side_x;
                d[2] = side_y;
            }
        }
        double p[3];
        bool placed = invert3((const double(*)[3])r, inv);
        for (int a = 0; a < 3 && placed; a++)
            p[a] = -(inv[a][0] * d[0] + inv[a][1] * d[1] + inv[a][2] * d[2]);
        if (!placed || !(m_at(v->vp, 3, 0) * p[0] + m_at(v->vp, 3, 1) * p[1] + m_at(v->vp, 3, 2) * p[2] +
                             m_at(v->vp, 3, 3) >
                         0)) {
            for (int a = 0; a < 3; a++) {
                v->near_lo[a] = -INFINITY;
                v->near_hi[a] = INFINITY;
            }
            return;
        }
        for (int a = 0; a < 3; a++) {
            v->near_lo[a] = fmin(v->near_lo[a], p[a]);
            v->near_hi[a] = fmax(v->near_hi[a], p[a]);
        }
    }
    double size = 0;
    for (int a = 0; a < 3; a++)
        size = fmax(size, v->near_hi[a] - v->near_lo[a]);
    for (int a = 0; a < 3; a++) {
        double pad = 1e-6 * (size + fabs(v->near_lo[a]) + fabs(v->near_hi[a])) + 1e-30;
        v->near_lo[a] -= pad;
        v->near_hi[a] += pad;
    }
}

bool rvi_occ_near_cut(const rvi_occ_view *v, const double lo[3], const double hi[3])
{
    for (int a = 0; a < 3; a++)
        if (!(lo[a] <= v->near_hi[a] && hi[a] >= v->near_lo[a]))
            return false;
    return true;
}

bool rvi_occ_view_init(rvi_occ_view *v, const double view_projection[16], rv_clip clip, uint32_t width,
                       uint32_t height)
{
    memset(v, 0, sizeof *v);
    for (int i = 0; i < 16; i++)
        v->vp[i] = view_projection[i];
    v->perspective = !(view_projection[3] == 0 && view_projection[7] == 0 && view_projection[11] == 0);
    if (!v->perspective) {
        double w = v->vp[15];
        if (!(w > 0))
            return false; /* every point has w <= 0: nothing is in view */
        for (int i = 0; i < 16; i++)
            v->vp[i] /= w;
    }
    v->sigma = clip.reversed_z ? -1.0 : 1.0;
    v->texels_w = width;
    v->texels_h = height;

    /* Near plane in clip space: GL z >= -w, zero-to-one z >= 0, reversed z <= w. */
    double nclip[4] = { 0, 0, 1, 1 };
    if (clip.reversed_z) {
        nclip[2] = -1;
        nclip[3] = 1;
    } else if (clip.depth_zero_to_one) {
        nclip[3] = 0;
    }
    for (int j = 0; j < 4; j++) {
        double acc = 0;
        for (int i = 0; i < 4; i++)
            acc += nclip[i] * m_at(v->vp, i, j);
        v->near_row[j] = acc;
    }

    /* a = rows x, y and w (perspective) or z (orthographic), xyz parts. */
    int third = v->perspective ? 3 : 2;
    double a[3][3], ainv[3][3];
    const int rows[3] = { 0, 1, third };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a[i][j] = m_at(v->vp, rows[i], j);
    if (!invert3((const double(*)[3])a, ainv))
        return false;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            v->a_inv[i * 3 + j] = ainv[i][j];
    if (!locate_eye(v, clip, (const double (*)[3])ainv))
        return false;
    clip_plane(v);
    near_box(v);
    return test_rows(v, width, height);
}

bool rvi_occ_project(const rvi_occ_view *v, const double clip[4], double texel[2], double *nearness)
{
    double x = clip[0], y = clip[1], w = clip[3];
    if (!(w > W_FRACTION * (fabs(x) + fabs(y) + TINY)))
        return false;
    double iw = 1.0 / w;
    texel[0] = 0.5 * v->texels_w * (x * iw + 1.0);
    texel[1] = 0.5 * v->texels_h * (1.0 - y * iw);
    *nearness = v->perspective ? iw : -v->sigma * clip[2];
    return fabs(texel[0]) < TEXEL_LIMIT && fabs(texel[1]) < TEXEL_LIMIT;
}

/* ---- planes ---------------------------------------------------------------------------------- */

void rvi_occ_plane_eye(const rvi_occ_view *v, rvi_occ_plane *f)
{
    double en = f->n[0] * v->eye[0] + f->n[1] * v->eye[1] + f->n[2] * v->eye[2];
    f->pe = en + f->c * v->eye[3];
    f->pe_mag = fabs(f->n[0] * v->eye[0]) + fabs(f->n[1] * v->eye[1]) + fabs(f->n[2] * v->eye[2]) +
                fabs(f->c * v->eye[3]);
}

void rvi_occ_plane_nearness(const rvi_occ_view *v, const rvi_occ_plane *f, double *a, double *b, double *cc,
                            double *mag, double *slack)
{
    const double *ainv = v->a_inv, *n = f->n;
    double g[3], gmag = 0;
    for (int j = 0; j < 3; j++) {
        double t0 = n[0] * ainv[0 * 3 + j], t1 = n[1] * ainv[1 * 3 + j], t2 = n[2] * ainv[2 * 3 + j];
        g[j] = t0 + t1 + t2;
        gmag += fabs(t0) + fabs(t1) + fabs(t2);
    }
    double hx, hy, hz; /* nearness = hx x + hy y + hz in NDC */
    if (v->perspective) {
        /* Ray through NDC (x, y): eye + t d(x, y) with d = A^-1 (x, y, 1), w = t. The plane
         * is met at t = -pe / (n . d), so 1 / w = (g . (x, y, 1)) / -pe: affine. */
        double k = -1.0 / f->pe;
        hx = g[0] * k;
        hy = g[1] * k;
        hz = g[2] * k;
        *slack = 1e-9 * gmag * fabs(k);
    } else {
        /* Ray through (x, y): A^-1 (x - x0, y - y0, z - z0) meets the plane where
         * g . (x - x0, y - y0, z - z0) + c = 0; nearness = -sigma z: affine. */
        double x0 = m_at(v->vp, 0, 3), y0 = m_at(v->vp, 1, 3), z0 = m_at(v->vp, 2, 3);
        double k = v->sigma / g[2];
        hx = k * g[0];
        hy = k * g[1];
        hz = -v->sigma * z0 + k * (f->c - g[0] * x0 - g[1] * y0);
        *slack = 1e-9 * (fabs(k) * (gmag + fabs(f->c) + fabs(g[0] * x0) + fabs(g[1] * y0)) + fabs(z0));
    }
    /* To texel coordinates: x = 2 tx / W - 1, y = 1 - 2 ty / H. */
    double W = v->texels_w, H = v->texels_h;
    *a = hx * 2.0 / W;
    *b = -hy * 2.0 / H;
    *cc = hz - hx + hy;
    *mag = fabs(*a) * (W + 1) + fabs(*b) * (H + 1) + fabs(*cc);
}

bool rvi_occ_plane_texel_min(const rvi_occ_view *v, const rvi_occ_plane *f, float out[3])
{
    if (!(fabs(f->pe) > RVI_OCC_PLANE_CLEAR * f->pe_mag))
        return false;
    double a, b, cc, mag, slack;
    rvi_occ_plane_nearness(v, f, &a, &b, &cc, &mag, &slack);
    /* The texel's minimum (the corner given by the gradient's signs), then the float
     * evaluation error of a * ix + (b * iy + c) with rounded coefficients subtracted. */
    cc += dmin(a, 0) + dmin(b, 0);
    cc -= 12 * RVI_OCC_F_EPS * mag + slack * 4;
    if (!(fabs(a) < 1e30 && fabs(b) < 1e30 && fabs(cc) < 1e30))
        return false; /* also catches NaN */
    out[0] = (float)a;
    out[1] = (float)b;
    out[2] = rvi_occ_f_down(cc);
    return true;
}

/* ---- screen lines -------------------------------------------------------------------------- */

/* Scales (a, b, c) to |a| + |b| = 1 with the first non-zero of a, b positive; returns the
 * factor the side flips by (+1 or -1), 0 when a and b are both zero. The same inputs up to
 * sign give the same bits: negation and division are exact under it. */
static int canonical(double *a, double *b, double *c)
{
    double s = fabs(*a) + fabs(*b);
    if (!(s > 0) || !(s < INFINITY))
        return 0;
    *a /= s;
    *b /= s;
    *c /= s;
    if (*a < 0 || (*a == 0 && *b < 0)) {
        *a = -*a;
        *b = -*b;
        *c = -*c;
        return -1;
    }
    return 1;
}

bool rvi_occ_pencil_line(const rvi_occ_view *v, const rvi_occ_plane *in, const rvi_occ_plane *out, rvi_occ_edge *e)
{
    /* The plane pe_out * in - pe_in * out contains the eye and the edge's line; negating
     * either plane, or swapping them, negates it exactly, so two solids that share the
     * edge's planes (up to orientation) find the same line. */
    const double eps = 2.0 * DBL_EPSILON;
    double n[3], nmag = 0, terms = 0;
    for (int i = 0; i < 3; i++) {
        n[i] = out->pe * in->n[i] - in->pe * out->n[i];
        nmag += fabs(n[i]);
        terms += (fabs(out->pe) + 4 * eps * out->pe_mag) * fabs(in->n[i]) +
                 (fabs(in->pe) + 4 * eps * in->pe_mag) * fabs(out->n[i]);
    }
    if (!(nmag > PENCIL_CONDITION * terms))
        return false;
    double rel = 8 * eps * terms / nmag + 4 * eps; /* relative error of n */
    double g[3], gmag[3];
    for (int j = 0; j < 3; j++) {
        double t0 = n[0] * v->a_inv[j], t1 = n[1] * v->a_inv[3 + j], t2 = n[2] * v->a_inv[6 + j];
        g[j] = t0 + t1 + t2;
        gmag[j] = fabs(t0) + fabs(t1) + fabs(t2);
    }
    /* The line's value at NDC (x, y), |x|, |y| <= 2 over the buffer: perspective
     * g . (x, y, 1) (the plane's value along the ray, over t > 0); orthographic the plane's
     * value at the point, g0 (x - x0) + g1 (y - y0) + cp (g2 is zero: the plane contains the
     * view direction). */
    double W = v->texels_w, H = v->texels_h, c0, err;
    if (v->perspective) {
        c0 = g[2];
        err = (rel + 3 * eps) * (2 * gmag[0] + 2 * gmag[1] + gmag[2]);
    } else {
        double x0 = m_at(v->vp, 0, 3), y0 = m_at(v->vp, 1, 3), z0 = m_at(v->vp, 2, 3);
        double cp = out->pe * in->c - in->pe * out->c;
        double cterms = (fabs(out->pe) + 4 * eps * out->pe_mag) * fabs(in->c) +
                        (fabs(in->pe) + 4 * eps * in->pe_mag) * fabs(out->c);
        c0 = cp - g[0] * x0 - g[1] * y0;
        err = (rel + 3 * eps) * (gmag[0] * (2 + fabs(x0)) + gmag[1] * (2 + fabs(y0)) + gmag[2] * (2 + fabs(z0))) +
              8 * eps * cterms;
    }
    double a = g[0] * 2.0 / W, b = -g[1] * 2.0 / H, c = c0 - g[0] + g[1];
    double scale = fabs(a) + fabs(b);
    int flip = canonical(&a, &b, &c);
    if (!flip)
        return false;
    e->line[0] = a;
    e->line[1] = b;
    e->line[2] = c;
    e->slack = err / scale + 4 * eps * (W + H + fabs(c)) + 1e-12;
    e->side = (in->pe > 0 ? 1 : -1) * flip;
    return e->slack < LINE_SLACK_MAX && isfinite(c);
}

bool rvi_occ_segment_line(const double p0[2], const double p1[2], rvi_occ_edge *e)
{
    const double *p = p0, *q = p1;
    if (p1[0] < p0[0] || (p1[0] == p0[0] && p1[1] < p0[1])) {
        p = p1;
        q = p0;
    }
    double a = p[1] - q[1], b = q[0] - p[0];
    double c = -(a * p[0] + b * p[1]);
    double mag = fabs(p[0]) + fabs(p[1]) + fabs(q[0]) + fabs(q[1]);
    if (!canonical(&a, &b, &c))
        return false;
    e->line[0] = a;
    e->line[1] = b;
    e->line[2] = c;
    /* a, b, c from two roundings of differences and products of the end points. */
    e->slack = 8 * DBL_EPSILON * mag + 1e-12;
    memcpy(e->p0, p0, sizeof e->p0);
    memcpy(e->p1, p1, sizeof e->p1);
    double s0 = b * p0[0] - a * p0[1], s1 = b * p1[0] - a * p1[1];
    e->s0 = s0 < s1 ? s0 : s1;
    e->s1 = s0 < s1 ? s1 : s0;
    return true;
}
