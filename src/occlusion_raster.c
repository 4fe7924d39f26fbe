/* Occluder side of the occlusion buffer (DESIGN.md §4): deriving the view, projecting and
 * near-clipping occluder boxes, and writing their conservative far side into the buffer.
 *
 * Everything an occluder contributes is computed in double from the host's float inputs,
 * then rounded toward "farther" and "smaller" when it becomes float, so float error can
 * only lose culls, never invent one.
 *
 * The per-texel far side: a ray leaves a convex box through the first back-face plane it
 * crosses, so its exit nearness is the largest of the back-face planes' nearness along it.
 * Along one plane nearness is affine in the screen position (perspective: 1/w, the planar
 * case of perspective-correct interpolation; orthographic: -depth), so its minimum over a
 * texel is at one corner, known from the signs of the gradient. The texel then stores
 * max over back faces of (that plane's minimum over the texel): never nearer than the
 * box's far side anywhere in the texel, and exact on flat regions of one back face. */
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define F_EPS (1.0 / 16777216.0) /* float unit roundoff, 2^-24 */

/* Largest float not above x (x finite). */
static float f_down(double x)
{
    float f = (float)x;
    if ((double)f > x)
        f = nextafterf(f, -INFINITY);
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

bool rvi_occ_view_init(rvi_occ_view *v, const float view_projection[16], rv_clip clip, uint32_t width,
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
    if (!invert3(a, ainv))
        return false;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            v->a_inv[i * 3 + j] = ainv[i][j];
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
    const double gamma = 16 * F_EPS;
    for (int r = 0; r < 4; r++) {
        double c = rowd[r][3], mx = 0;
        for (int j = 0; j < 3; j++) {
            v->rows[r][j] = (float)rowd[r][j];
            c += rowd[r][j] * (double)v->ref[j];
            mx = fmax(mx, fabs(rowd[r][j]));
        }
        v->rows[r][3] = (float)c;
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

/* ---- occluder preparation --------------------------------------------------------------- */

typedef struct clip_vertex {
    double p[3];   /* world */
    double c[4];   /* clip x, y, z, w */
    double nearv;  /* near plane function */
} clip_vertex;

static void project_world(const rvi_occ_view *v, const double p[3], clip_vertex *out)
{
    for (int i = 0; i < 3; i++)
        out->p[i] = p[i];
    for (int r = 0; r < 4; r++)
        out->c[r] = m_at(v->vp, r, 0) * p[0] + m_at(v->vp, r, 1) * p[1] + m_at(v->vp, r, 2) * p[2] +
                    m_at(v->vp, r, 3);
    out->nearv = v->near_row[0] * p[0] + v->near_row[1] * p[1] + v->near_row[2] * p[2] + v->near_row[3];
}

static double cross_z(const double o[2], const double a[2], const double b[2])
{
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* Andrew's monotone chain; returns the hull (counter-clockwise in texel coordinates) in
 * hull, its vertex count as the result (< 3: degenerate). n <= 20. */
static int convex_hull(double pts[][2], int n, double hull[][2])
{
    for (int i = 1; i < n; i++) { /* insertion sort by x, then y */
        double px = pts[i][0], py = pts[i][1];
        int j = i - 1;
        while (j >= 0 && (pts[j][0] > px || (pts[j][0] == px && pts[j][1] > py))) {
            pts[j + 1][0] = pts[j][0];
            pts[j + 1][1] = pts[j][1];
            j--;
        }
        pts[j + 1][0] = px;
        pts[j + 1][1] = py;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross_z(hull[k - 2], hull[k - 1], pts[i]) <= 0)
            k--;
        hull[k][0] = pts[i][0];
        hull[k][1] = pts[i][1];
        k++;
    }
    for (int i = n - 2, t = k + 1; i >= 0; i--) {
        while (k >= t && cross_z(hull[k - 2], hull[k - 1], pts[i]) <= 0)
            k--;
        hull[k][0] = pts[i][0];
        hull[k][1] = pts[i][1];
        k++;
    }
    return k - 1; /* the last point repeats the first */
}

/* Adds the nearness function of the back face with outward plane (n, c) in world space, if
 * it is a back face seen clearly enough to bound. */
static void add_back_face(const rvi_occ_view *v, const double n[3], double c, rvi_occluder *o)
{
    const double *ainv = v->a_inv;
    double hx, hy, hz, slack;       /* nearness = hx x + hy y + hz in NDC, error bound slack */
    if (v->perspective) {
        /* Ray through NDC (x, y): eye + t d(x, y) with d = A^-1 (x, y, 1), w = t. The plane
         * is met at t = -pi(eye) / (n . d), so 1 / w = (n . d) / -pi(eye): affine. */
        double pe = n[0] * v->eye[0] + n[1] * v->eye[1] + n[2] * v->eye[2] + c;
        double pe_mag = fabs(n[0] * v->eye[0]) + fabs(n[1] * v->eye[1]) + fabs(n[2] * v->eye[2]) + fabs(c);
        if (!(pe < -1e-7 * pe_mag))
            return; /* front face, or too close to edge-on to classify */
        double g[3], gmag = 0;
        for (int j = 0; j < 3; j++) {
            g[j] = n[0] * ainv[0 * 3 + j] + n[1] * ainv[1 * 3 + j] + n[2] * ainv[2 * 3 + j];
            gmag += fabs(n[0] * ainv[0 * 3 + j]) + fabs(n[1] * ainv[1 * 3 + j]) + fabs(n[2] * ainv[2 * 3 + j]);
        }
        hx = g[0] / -pe;
        hy = g[1] / -pe;
        hz = g[2] / -pe;
        slack = 1e-9 * gmag / -pe;
    } else {
        /* Ray through (x, y): A^-1 (x - x0, y - y0, z - z0) meets the plane where
         * g . (x - x0, y - y0, z - z0) + c = 0, g = A^-T n; nearness = -sigma z: affine. */
        double g[3], gmag = 0;
        for (int j = 0; j < 3; j++) {
            g[j] = n[0] * ainv[0 * 3 + j] + n[1] * ainv[1 * 3 + j] + n[2] * ainv[2 * 3 + j];
            gmag += fabs(n[0] * ainv[0 * 3 + j]) + fabs(n[1] * ainv[1 * 3 + j]) + fabs(n[2] * ainv[2 * 3 + j]);
        }
        /* Back face: the normal points along growing depth, i.e. sigma * g2 > 0. */
        if (!(v->sigma * g[2] > 1e-7 * gmag))
            return;
        double x0 = m_at(v->vp, 0, 3), y0 = m_at(v->vp, 1, 3), z0 = m_at(v->vp, 2, 3);
        /* z = z0 - (g0 (x - x0) + g1 (y - y0) + c) / g2 */
        double k = v->sigma / g[2]; /* nearness = -sigma z = -sigma z0 + k (g0 x + g1 y + c - g0 x0 - g1 y0) */
        hx = k * g[0];
        hy = k * g[1];
        hz = -v->sigma * z0 + k * (c - g[0] * x0 - g[1] * y0);
        slack = 1e-9 * (fabs(k) * (gmag + fabs(c) + fabs(g[0] * x0) + fabs(g[1] * y0)) + fabs(z0));
    }
    /* To texel coordinates: x = 2 tx / W - 1, y = 1 - 2 ty / H; then the texel's minimum
     * (corner by gradient sign), then float evaluation error (a*ix + (b*iy + c), with the
     * coefficients rounded) subtracted. */
    double W = v->texels_w, H = v->texels_h;
    double a = hx * 2.0 / W, b = -hy * 2.0 / H, cc = hz - hx + hy;
    double mag = fabs(a) * (W + 1) + fabs(b) * (H + 1) + fabs(cc);
    cc += fmin(a, 0) + fmin(b, 0);
    cc -= 12 * F_EPS * mag + slack * 4;
    if (!isfinite(a) || !isfinite(b) || !isfinite(cc) || fabs(a) > 1e30 || fabs(b) > 1e30 || fabs(cc) > 1e30)
        return;
    float *pl = o->plane[o->plane_count++];
    pl[0] = (float)a;
    pl[1] = (float)b;
    pl[2] = f_down(cc);
}

static double nearness_of(const rvi_occ_view *v, const clip_vertex *cv)
{
    return v->perspective ? 1.0 / cv->c[3] : -v->sigma * cv->c[2];
}

rvi_occ_prepare rvi_occ_prepare_box(const rvi_occ_view *v, const float min[3], const float max[3],
                                    const float *matrix, float min_texels, rvi_occluder *o)
{
    /* World corners: bit 0 = x max, bit 1 = y max, bit 2 = z max. */
    clip_vertex corner[8];
    for (int k = 0; k < 8; k++) {
        double l[3] = { (k & 1) ? max[0] : min[0], (k & 2) ? max[1] : min[1], (k & 4) ? max[2] : min[2] };
        double p[3];
        if (matrix) {
            for (int i = 0; i < 3; i++)
                p[i] = (double)matrix[i] * l[0] + (double)matrix[4 + i] * l[1] + (double)matrix[8 + i] * l[2] +
                       (double)matrix[12 + i];
        } else {
            p[0] = l[0];
            p[1] = l[1];
            p[2] = l[2];
        }
        project_world(v, p, &corner[k]);
    }

    /* Clip against the near plane: keep corners in front, add edge crossings. */
    clip_vertex poly[20];
    int n = 0, behind = 0;
    for (int k = 0; k < 8; k++) {
        if (corner[k].nearv >= 0)
            poly[n++] = corner[k];
        else
            behind++;
    }
    if (behind == 8)
        return RVI_OCC_OFFSCREEN;
    if (behind) {
        for (int k = 0; k < 8; k++)
            for (int axis = 1; axis <= 4; axis <<= 1) {
                if (k & axis)
                    continue;
                const clip_vertex *a = &corner[k], *b = &corner[k | axis];
                if ((a->nearv >= 0) == (b->nearv >= 0))
                    continue;
                double t = a->nearv / (a->nearv - b->nearv);
                double p[3];
                for (int i = 0; i < 3; i++)
                    p[i] = a->p[i] + t * (b->p[i] - a->p[i]);
                project_world(v, p, &poly[n]);
                n++;
            }
    }

    /* Project. A vertex must be safely in front of the eye; otherwise the box is too close
     * to the eye plane to bound (a near plane at w ~ 0). */
    double pts[20][2];
    double W = v->texels_w, H = v->texels_h;
    double minx = INFINITY, maxx = -INFINITY, miny = INFINITY, maxy = -INFINITY;
    double far_near = INFINITY, coord_mag = 0;
    for (int i = 0; i < n; i++) {
        double w = poly[i].c[3];
        if (!(w > 1e-12 * (fabs(poly[i].c[0]) + fabs(poly[i].c[1]) + 1e-30)))
            return RVI_OCC_DEGENERATE;
        double tx = 0.5 * W * (poly[i].c[0] / w + 1.0);
        double ty = 0.5 * H * (1.0 - poly[i].c[1] / w);
        if (!isfinite(tx) || !isfinite(ty) || fabs(tx) > 1e12 || fabs(ty) > 1e12)
            return RVI_OCC_DEGENERATE;
        pts[i][0] = tx;
        pts[i][1] = ty;
        minx = fmin(minx, tx);
        maxx = fmax(maxx, tx);
        miny = fmin(miny, ty);
        maxy = fmax(maxy, ty);
        coord_mag = fmax(coord_mag, fabs(tx) + fabs(ty));
        far_near = fmin(far_near, nearness_of(v, &poly[i]));
    }
    if (maxx <= 0 || minx >= W || maxy <= 0 || miny >= H)
        return RVI_OCC_OFFSCREEN;
    double cx0 = fmax(minx, 0), cx1 = fmin(maxx, W), cy0 = fmax(miny, 0), cy1 = fmin(maxy, H);
    if (cx1 - cx0 < min_texels || cy1 - cy0 < min_texels)
        return RVI_OCC_SMALL;

    memset(o, 0, sizeof *o);
    o->area = (float)((cx1 - cx0) * (cy1 - cy0));
    /* Whole texels only: ix >= minx and ix + 1 <= maxx. */
    double sx0 = ceil(cx0), sx1 = floor(cx1) - 1, sy0 = ceil(cy0), sy1 = floor(cy1) - 1;

    double hull[24][2];
    int hn = convex_hull(pts, n, hull);
    if (hn < 3)
        return RVI_OCC_SMALL;
    double margin = 1e-4 + 1e-12 * coord_mag;
    for (int i = 0; i < hn; i++) {
        const double *p0 = hull[i], *p1 = hull[(i + 1) % hn];
        double dx = p1[0] - p0[0], dy = p1[1] - p0[1];
        double len = sqrt(dx * dx + dy * dy);
        if (!(len > 0))
            continue;
        /* Inward normal of a counter-clockwise edge: (-dy, dx). */
        double A = -dy / len, B = dx / len;
        double C = -(A * p0[0] + B * p0[1]);
        double Cm = C + fmin(A, 0) + fmin(B, 0) - margin; /* texel (ix, iy): A ix + B iy + Cm >= 0 */
        if (A == 0) {
            double bound = -Cm / B;
            if (B > 0)
                sy0 = fmax(sy0, ceil(bound));
            else
                sy1 = fmin(sy1, floor(bound));
            continue;
        }
        o->edge_p[o->edge_count] = -Cm / A;
        o->edge_q[o->edge_count] = -B / A;
        o->edge_left[o->edge_count] = A > 0;
        o->edge_count++;
    }
    if (sx0 > sx1 || sy0 > sy1)
        return RVI_OCC_SMALL;
    o->x0 = (int32_t)sx0;
    o->x1 = (int32_t)sx1;
    o->y0 = (int32_t)sy0;
    o->y1 = (int32_t)sy1;

    /* The far side: the farthest vertex bounds every texel; back faces refine it. */
    o->far_nearness = f_down(far_near - fabs(far_near) * 1e-9 - 1e-30);
    double e[3][3];
    for (int i = 0; i < 3; i++) {
        e[0][i] = corner[1].p[i] - corner[0].p[i];
        e[1][i] = corner[2].p[i] - corner[0].p[i];
        e[2][i] = corner[4].p[i] - corner[0].p[i];
    }
    for (int axis = 0; axis < 3; axis++) {
        const double *u = e[(axis + 1) % 3], *w = e[(axis + 2) % 3];
        double nrm[3] = { u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0] };
        double len = sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
        if (!(len > 0) || !isfinite(len))
            continue;
        for (int i = 0; i < 3; i++)
            nrm[i] /= len;
        if (nrm[0] * e[axis][0] + nrm[1] * e[axis][1] + nrm[2] * e[axis][2] < 0)
            for (int i = 0; i < 3; i++)
                nrm[i] = -nrm[i];
        /* Face at the max end (outward +nrm, through corner (1 << axis)) and at the min
         * end (outward -nrm, through corner 0). */
        const double *pmax = corner[1 << axis].p, *pmin = corner[0].p;
        double cmax = -(nrm[0] * pmax[0] + nrm[1] * pmax[1] + nrm[2] * pmax[2]);
        double neg[3] = { -nrm[0], -nrm[1], -nrm[2] };
        double cmin = nrm[0] * pmin[0] + nrm[1] * pmin[1] + nrm[2] * pmin[2];
        add_back_face(v, nrm, cmax, o);
        add_back_face(v, neg, cmin, o);
    }
    return RVI_OCC_PREPARED;
}

/* ---- rasterisation ---------------------------------------------------------------------- */

/* One row span: row[ix] = max(row[ix], max(floor, max_k a_k ix + r_k)), NP planes. */
#define SPAN_FILL(NP)                                                                          \
    for (int32_t ix = xl; ix <= xr; ix++) {                                                    \
        float fx = (float)ix, val = floor_v;                                                   \
        for (int k = 0; k < (NP); k++) {                                                       \
            float t = a[k] * fx + rc[k];                                                       \
            val = t > val ? t : val;                                                           \
        }                                                                                      \
        row[ix] = val > row[ix] ? val : row[ix];                                               \
    }

void rvi_occ_rasterize(const rvi_occluder *o, float *texels, uint32_t width, uint32_t height)
{
    (void)height;
    uint32_t np = o->plane_count;
    float a[RVI_OCC_MAX_PLANES], b[RVI_OCC_MAX_PLANES], c[RVI_OCC_MAX_PLANES];
    /* Pad to 2, 4 or 6 planes by repeating the first: max is idempotent. */
    uint32_t padded = np <= 2 ? 2 : np <= 4 ? 4 : 6;
    for (uint32_t k = 0; k < padded; k++) {
        uint32_t s = np ? (k < np ? k : 0) : 0;
        a[k] = np ? o->plane[s][0] : 0;
        b[k] = np ? o->plane[s][1] : 0;
        c[k] = np ? o->plane[s][2] : -FLT_MAX;
    }
    const float floor_v = o->far_nearness;
    for (int32_t iy = o->y0; iy <= o->y1; iy++) {
        double l = o->x0, r = o->x1;
        for (uint32_t e = 0; e < o->edge_count; e++) {
            double bound = o->edge_p[e] + o->edge_q[e] * iy;
            if (o->edge_left[e]) {
                if (bound > l)
                    l = bound;
            } else if (bound < r) {
                r = bound;
            }
        }
        l = ceil(l);
        r = floor(r);
        if (!(l <= r))
            continue;
        int32_t xl = (int32_t)l, xr = (int32_t)r;
        float *row = texels + (size_t)iy * width;
        float fy = (float)iy, rc[RVI_OCC_MAX_PLANES];
        for (uint32_t k = 0; k < padded; k++)
            rc[k] = b[k] * fy + c[k];
        if (padded == 2) {
            SPAN_FILL(2)
        } else if (padded == 4) {
            SPAN_FILL(4)
        } else {
            SPAN_FILL(6)
        }
    }
}
