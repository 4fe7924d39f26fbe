/* Occluder side of the occlusion buffer (docs/design.md §4): deriving the view, projecting and
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

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Largest float not above x (|x| < FLT_MAX). */
static float f_down(double x)
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

/* Silhouette loop of a box seen from each eye region (generated by enumerating the box
 * edges between a front and a back face). Vertex k: bit 0 = x max, bit 1 = y max, bit 2 =
 * z max. Region per axis: 0 = the min face is front, 1 = neither (between the slabs),
 * 2 = the max face is front; index sx + 3 sy + 9 sz. Entry: count, then the loop. The
 * winding is fixed at run time. Any loop of box vertices is safe even if a face was
 * classified wrongly: the intersection of its edges' inner half-planes lies inside the
 * convex hull of its vertices (a point strictly left of every edge has winding >= 1). */
static const uint8_t silhouette[27][7] = {
    { 6, 1, 3, 2, 6, 4, 5 }, { 6, 0, 2, 3, 1, 5, 4 }, { 6, 0, 2, 3, 7, 5, 4 },
    { 6, 0, 1, 3, 2, 6, 4 }, { 4, 0, 1, 3, 2, 0, 0 }, { 6, 0, 1, 5, 7, 3, 2 },
    { 6, 0, 1, 3, 7, 6, 4 }, { 6, 0, 1, 3, 7, 6, 2 }, { 6, 0, 1, 5, 7, 6, 2 },
    { 6, 0, 1, 5, 4, 6, 2 }, { 4, 0, 1, 5, 4, 0, 0 }, { 6, 0, 1, 3, 7, 5, 4 },
    { 4, 0, 2, 6, 4, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0 }, { 4, 1, 3, 7, 5, 0, 0 },
    { 6, 0, 2, 3, 7, 6, 4 }, { 4, 2, 3, 7, 6, 0, 0 }, { 6, 1, 3, 2, 6, 7, 5 },
    { 6, 0, 1, 5, 7, 6, 2 }, { 6, 0, 1, 5, 7, 6, 4 }, { 6, 0, 1, 3, 7, 6, 4 },
    { 6, 0, 2, 6, 7, 5, 4 }, { 4, 4, 5, 7, 6, 0, 0 }, { 6, 1, 3, 7, 6, 4, 5 },
    { 6, 0, 2, 3, 7, 5, 4 }, { 6, 2, 3, 7, 5, 4, 6 }, { 6, 1, 3, 2, 6, 4, 5 },
};

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

/* A face of the box: outward plane n . p + c = 0, and pe = the plane at the homogeneous
 * eye (> 0: front face, < 0: back face; ~0: edge-on), pe_mag the size of its terms. */
typedef struct box_face {
    double n[3], c, pe, pe_mag;
} box_face;

/* Nearness along a face's plane as an affine function of texel coordinates (tx, ty):
 * a * tx + b * ty + cc. mag is the size of its terms over the buffer and slack bounds the
 * error of deriving it; both are charged by the callers. */
static void face_nearness(const rvi_occ_view *v, const box_face *f, double *a, double *b, double *cc, double *mag,
                          double *slack)
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

/* Adds the nearness function of a back face, if it is seen clearly enough to bound. */
static void add_back_face(const rvi_occ_view *v, const box_face *f, rvi_occluder *o)
{
    if (!(f->pe < -1e-7 * f->pe_mag))
        return; /* front face, or too close to edge-on to classify */
    double a, b, cc, mag, slack;
    face_nearness(v, f, &a, &b, &cc, &mag, &slack);
    /* The texel's minimum (the corner given by the gradient's signs), then the float
     * evaluation error of a * ix + (b * iy + c) with rounded coefficients subtracted. */
    cc += dmin(a, 0) + dmin(b, 0);
    cc -= 12 * F_EPS * mag + slack * 4;
    if (!(fabs(a) < 1e30 && fabs(b) < 1e30 && fabs(cc) < 1e30))
        return; /* also catches NaN */
    float *pl = o->plane[o->plane_count++];
    pl[0] = (float)a;
    pl[1] = (float)b;
    pl[2] = f_down(cc);
}

/* Coverage bounds from a loop of texel-space points (either winding). Returns false when
 * no whole texel can be inside. */
static bool set_edges(rvi_occluder *o, const double (*pts)[2], int n, double coord_mag, double W, double sx0,
                      double sx1, double sy0, double sy1)
{
    double area2 = 0;
    for (int i = 0; i < n; i++) {
        const double *p0 = pts[i], *p1 = pts[i + 1 < n ? i + 1 : 0];
        area2 += p0[0] * p1[1] - p0[1] * p1[0];
    }
    if (!(area2 != 0))
        return false;
    double orient = area2 > 0 ? 1.0 : -1.0;
    /* Shrink margin: rounding of the vertices and of the per-row bounds, with room. */
    double margin = 1e-4 + 1e-12 * coord_mag;
    o->edge_count = 0;
    for (int i = 0; i < n; i++) {
        const double *p0 = pts[i], *p1 = pts[i + 1 < n ? i + 1 : 0];
        /* Inward normal of a counter-clockwise edge: (-dy, dx). */
        double A = -(p1[1] - p0[1]) * orient, B = (p1[0] - p0[0]) * orient;
        if (A == 0 && B == 0)
            continue;
        double C = -(A * p0[0] + B * p0[1]);
        /* Texel (ix, iy) wholly inside: A ix + B iy + Cm >= 0 (its worst corner, shrunk). */
        double Cm = C + dmin(A, 0) + dmin(B, 0) - margin * (fabs(A) + fabs(B));
        if (fabs(A) <= 1e-6 * fabs(B)) {
            /* Nearly horizontal: a row constraint, charged with the worst column. */
            double bound = -(Cm + dmin(0, A * W)) / B;
            if (B > 0)
                sy0 = dmax(sy0, ceil(bound));
            else
                sy1 = dmin(sy1, floor(bound));
            continue;
        }
        o->edge_p[o->edge_count] = -Cm / A;
        o->edge_q[o->edge_count] = -B / A;
        o->edge_left[o->edge_count] = A > 0;
        o->edge_count++;
    }
    if (!(sx0 <= sx1 && sy0 <= sy1))
        return false;
    o->x0 = (int32_t)sx0;
    o->x1 = (int32_t)sx1;
    o->y0 = (int32_t)sy0;
    o->y1 = (int32_t)sy1;
    return true;
}

/* Faces of a box given by its origin corner and edge vectors: face 2a is the min end of
 * axis a, 2a + 1 the max end. Outward normals come from the edge directions dir (NULL: the
 * edge vectors themselves; a flat box passes its matrix's axes), so a mirroring matrix
 * works too. False when the directions span no volume (no normal). */
static bool box_faces(const rvi_occ_view *v, const double org[3], const double e[3][3], const double (*dir)[3],
                      bool axis_aligned, box_face face[6])
{
    if (!dir)
        dir = e;
    for (int a = 0; a < 3; a++) {
        const double *u = dir[(a + 1) % 3], *w = dir[(a + 2) % 3];
        double n[3];
        if (axis_aligned) {
            n[0] = a == 0;
            n[1] = a == 1;
            n[2] = a == 2;
        } else {
            n[0] = u[1] * w[2] - u[2] * w[1];
            n[1] = u[2] * w[0] - u[0] * w[2];
            n[2] = u[0] * w[1] - u[1] * w[0];
            double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (!(len > 0 && len < INFINITY))
                return false;
            double s = (n[0] * dir[a][0] + n[1] * dir[a][1] + n[2] * dir[a][2] < 0 ? -1.0 : 1.0) / len;
            for (int i = 0; i < 3; i++)
                n[i] *= s;
        }
        double pm[3] = { org[0] + e[a][0], org[1] + e[a][1], org[2] + e[a][2] };
        double en = n[0] * v->eye[0] + n[1] * v->eye[1] + n[2] * v->eye[2];
        double en_mag = fabs(n[0] * v->eye[0]) + fabs(n[1] * v->eye[1]) + fabs(n[2] * v->eye[2]);
        box_face *fmin = &face[2 * a], *fmax = &face[2 * a + 1];
        for (int i = 0; i < 3; i++) {
            fmin->n[i] = -n[i];
            fmax->n[i] = n[i];
        }
        fmin->c = n[0] * org[0] + n[1] * org[1] + n[2] * org[2];
        fmax->c = -(n[0] * pm[0] + n[1] * pm[1] + n[2] * pm[2]);
        fmin->pe = -en + fmin->c * v->eye[3];
        fmax->pe = en + fmax->c * v->eye[3];
        fmin->pe_mag = en_mag + fabs(fmin->c * v->eye[3]);
        fmax->pe_mag = en_mag + fabs(fmax->c * v->eye[3]);
    }
    return true;
}

/* Whole texels only: ix >= min x and ix + 1 <= max x, within the buffer. */
static void texel_range(const rvi_occ_view *v, const float bounds[4], double r[4])
{
    r[0] = ceil(dmax(bounds[0], 0));
    r[1] = floor(dmin(bounds[2], v->texels_w)) - 1;
    r[2] = ceil(dmax(bounds[1], 0));
    r[3] = floor(dmin(bounds[3], v->texels_h)) - 1;
}

rvi_occ_prepare rvi_occ_prepare_box(const rvi_occ_view *v, const float min[3], const float max[3],
                                    const float *matrix, float min_texels, rvi_occluder *o)
{
    /* The box as an origin and three edge vectors in world space (double, exact enough). */
    double org[3], e[3][3];
    double ext[3] = { (double)max[0] - min[0], (double)max[1] - min[1], (double)max[2] - min[2] };
    if (matrix) {
        for (int i = 0; i < 3; i++) {
            org[i] = (double)matrix[i] * min[0] + (double)matrix[4 + i] * min[1] + (double)matrix[8 + i] * min[2] +
                     (double)matrix[12 + i];
            for (int a = 0; a < 3; a++)
                e[a][i] = (double)matrix[a * 4 + i] * ext[a];
        }
    } else {
        for (int i = 0; i < 3; i++) {
            org[i] = min[i];
            for (int a = 0; a < 3; a++)
                e[a][i] = a == i ? ext[a] : 0.0;
        }
    }
    /* Beyond RVI_OCC_MAX_COORD world units float inputs keep too few bits for the silhouette
     * and the far depth to be bounded safely (a fuzzed 1e30-unit box was rasterised with a
     * wrong silhouette): such an occluder is skipped, which only ever draws more. */
    for (int i = 0; i < 3; i++) {
        double reach = fabs(org[i]) + fabs(e[0][i]) + fabs(e[1][i]) + fabs(e[2][i]);
        if (!(reach <= RVI_OCC_MAX_COORD))
            return RVI_OCC_DEGENERATE;
    }
    /* Clip coordinates (x, y, z, w) and near values of the 8 corners, by adding the edges'
     * images; rows of corner[][] (structure of arrays). */
    double corner[5][8];
    bool clipped = false;
    for (int r = 0; r < 5; r++) {
        const double rr[4] = { r < 4 ? m_at(v->vp, r, 0) : v->near_row[0], r < 4 ? m_at(v->vp, r, 1) : v->near_row[1],
                               r < 4 ? m_at(v->vp, r, 2) : v->near_row[2], r < 4 ? m_at(v->vp, r, 3) : v->near_row[3] };
        double a0 = rr[0] * org[0] + rr[1] * org[1] + rr[2] * org[2] + rr[3];
        double d0 = rr[0] * e[0][0] + rr[1] * e[0][1] + rr[2] * e[0][2];
        double d1 = rr[0] * e[1][0] + rr[1] * e[1][1] + rr[2] * e[1][2];
        double d2 = rr[0] * e[2][0] + rr[1] * e[2][1] + rr[2] * e[2][2];
        double a1 = a0 + d0, a2 = a0 + d1, a3 = a1 + d1;
        double *c = corner[r];
        c[0] = a0;
        c[1] = a1;
        c[2] = a2;
        c[3] = a3;
        c[4] = a0 + d2;
        c[5] = a1 + d2;
        c[6] = a2 + d2;
        c[7] = a3 + d2;
    }
    for (int k = 0; k < 8; k++)
        clipped |= corner[4][k] < 0;

    double W = v->texels_w, H = v->texels_h;
    double pts[24][2];
    double minx = INFINITY, maxx = -INFINITY, miny = INFINITY, maxy = -INFINITY;
    double far_near = INFINITY, coord_mag = 0;
    double src[5][20]; /* rows x, y, z, w, near of the vertices to project */
    int nsrc = 8;
    if (!clipped) {
        memcpy(src[0], corner[0], sizeof corner[0]);
        memcpy(src[1], corner[1], sizeof corner[1]);
        memcpy(src[2], corner[2], sizeof corner[2]);
        memcpy(src[3], corner[3], sizeof corner[3]);
    } else {
        /* Near-plane clipping: corners in front, plus the crossings of the box edges. */
        int m = 0;
        for (int k = 0; k < 8; k++)
            if (corner[4][k] >= 0) {
                for (int r = 0; r < 5; r++)
                    src[r][m] = corner[r][k];
                m++;
            }
        if (m == 0)
            return RVI_OCC_OFFSCREEN;
        for (int k = 0; k < 8; k++)
            for (int axis = 1; axis <= 4; axis <<= 1) {
                if (k & axis)
                    continue;
                int kb = k | axis;
                double na = corner[4][k], nb = corner[4][kb];
                if ((na >= 0) == (nb >= 0))
                    continue;
                double t = na / (na - nb);
                for (int r = 0; r < 5; r++)
                    src[r][m] = corner[r][k] + t * (corner[r][kb] - corner[r][k]);
                m++;
            }
        nsrc = m;
    }
    /* Project. Every vertex must be safely in front of the eye (true beyond the near plane
     * of any sane projection; a matrix that breaks it makes the occluder unusable). Split
     * into simple loops so that they vectorise. */
    double iw[20], tx[20], ty[20], nearness[20];
    int32_t sane = 1;
    for (int i = 0; i < nsrc; i++) {
        double x = src[0][i], y = src[1][i], w = src[3][i];
        sane &= w > 1e-12 * (fabs(x) + fabs(y) + 1e-300);
        iw[i] = 1.0 / w;
        tx[i] = 0.5 * W * (x * iw[i] + 1.0);
        ty[i] = 0.5 * H * (1.0 - y * iw[i]);
        sane &= (fabs(tx[i]) < 1e12) & (fabs(ty[i]) < 1e12);
        nearness[i] = v->perspective ? iw[i] : -v->sigma * src[2][i];
    }
    for (int i = 0; i < nsrc; i++) {
        minx = dmin(minx, tx[i]);
        maxx = dmax(maxx, tx[i]);
        miny = dmin(miny, ty[i]);
        maxy = dmax(maxy, ty[i]);
        far_near = dmin(far_near, nearness[i]);
        pts[i][0] = tx[i];
        pts[i][1] = ty[i];
    }
    coord_mag = dmax(fabs(minx), fabs(maxx)) + dmax(fabs(miny), fabs(maxy));
    if (!sane)
        return RVI_OCC_DEGENERATE;
    if (maxx <= 0 || minx >= W || maxy <= 0 || miny >= H)
        return RVI_OCC_OFFSCREEN;
    double cx0 = dmax(minx, 0), cx1 = dmin(maxx, W), cy0 = dmax(miny, 0), cy1 = dmin(maxy, H);
    if (cx1 - cx0 < min_texels || cy1 - cy0 < min_texels)
        return RVI_OCC_SMALL;
    if (!(fabs(far_near) < 1e30))
        return RVI_OCC_DEGENERATE;

    memset(o, 0, offsetof(rvi_occluder, edge_p));
    /* Bounds rounded outward (they bound the texel range scanned), the farthest point
     * rounded farther. */
    o->bounds[0] = f_down(minx);
    o->bounds[1] = f_down(miny);
    o->bounds[2] = -f_down(-maxx);
    o->bounds[3] = -f_down(-maxy);
    o->far_nearness = f_down(far_near - fabs(far_near) * 1e-9 - 1e-300);
    double range[4];
    texel_range(v, o->bounds, range);
    if (!(range[0] <= range[1] && range[2] <= range[3]))
        return RVI_OCC_SMALL;
    if (!clipped) {
        memcpy(o->org, org, sizeof org);
        memcpy(o->edge, e, sizeof e);
        memcpy(o->pts, pts, sizeof o->pts);
        o->has_matrix = matrix != NULL;
        return RVI_OCC_PREPARED;
    }
    /* Clipped: finish now from the hull of the clipped polygon's projection. */
    box_face face[6];
    if (!box_faces(v, org, (const double (*)[3])e, NULL, matrix == NULL, face))
        return RVI_OCC_SMALL;
    double hull[24][2];
    int hn = convex_hull(pts, nsrc, hull);
    if (hn < 3 || !set_edges(o, (const double (*)[2])hull, hn, coord_mag, W, range[0], range[1], range[2], range[3]))
        return RVI_OCC_SMALL;
    for (int f = 0; f < 6; f++)
        add_back_face(v, &face[f], o);
    o->finished = true;
    return RVI_OCC_PREPARED;
}

bool rvi_occ_finish(const rvi_occ_view *v, rvi_occluder *o)
{
    if (o->finished)
        return true;
    box_face face[6];
    if (!box_faces(v, o->org, (const double (*)[3])o->edge, NULL, !o->has_matrix, face))
        return false;
    int code = 0, mul = 1;
    for (int a = 0; a < 3; a++, mul *= 3)
        code += mul * (face[2 * a].pe > 0 ? 0 : face[2 * a + 1].pe > 0 ? 2 : 1);
    const uint8_t *loop = silhouette[code];
    double ring[6][2], coord_mag = 0;
    for (int i = 0; i < loop[0]; i++) {
        ring[i][0] = o->pts[loop[1 + i]][0];
        ring[i][1] = o->pts[loop[1 + i]][1];
        coord_mag = dmax(coord_mag, fabs(ring[i][0]) + fabs(ring[i][1]));
    }
    double range[4];
    texel_range(v, o->bounds, range);
    if (loop[0] < 3 ||
        !set_edges(o, (const double (*)[2])ring, loop[0], coord_mag, v->texels_w, range[0], range[1], range[2], range[3]))
        return false;
    o->plane_count = 0;
    for (int f = 0; f < 6; f++)
        add_back_face(v, &face[f], o);
    o->finished = true;
    return true;
}

/* ---- front faces (the refined object test) ---------------------------------------------- */

/* Texel-space lines that bound the image of a box whose corners are all in front of the
 * eye: the hull of its projected corners, each edge widened outward by margin. */
static void box_image_edges(const rvi_occ_view *v, const double org[3], const double e[3][3], rvi_occ_box_bound *out)
{
    out->edge_count = 0;
    double pts[8][2], hull[17][2], coord_mag = 0; /* the monotone chain writes up to 2n */
    double W = v->texels_w, H = v->texels_h;
    for (int k = 0; k < 8; k++) {
        double p[3];
        for (int i = 0; i < 3; i++)
            p[i] = org[i] + ((k & 1) ? e[0][i] : 0) + ((k & 2) ? e[1][i] : 0) + ((k & 4) ? e[2][i] : 0);
        double c[4];
        for (int r = 0; r < 4; r++)
            c[r] = m_at(v->vp, r, 0) * p[0] + m_at(v->vp, r, 1) * p[1] + m_at(v->vp, r, 2) * p[2] + m_at(v->vp, r, 3);
        if (!(c[3] > 1e-9 * (fabs(c[0]) + fabs(c[1]) + 1e-300)))
            return; /* not safely in front of the eye: no edges, the whole rectangle counts */
        pts[k][0] = 0.5 * W * (c[0] / c[3] + 1.0);
        pts[k][1] = 0.5 * H * (1.0 - c[1] / c[3]);
        if (!(fabs(pts[k][0]) < 1e9 && fabs(pts[k][1]) < 1e9))
            return;
        coord_mag = dmax(coord_mag, fabs(pts[k][0]) + fabs(pts[k][1]));
    }
    int n = convex_hull(pts, 8, hull);
    if (n < 3)
        return;
    double area2 = 0;
    for (int i = 0; i < n; i++)
        area2 += hull[i][0] * hull[i + 1 < n ? i + 1 : 0][1] - hull[i][1] * hull[i + 1 < n ? i + 1 : 0][0];
    if (!(area2 != 0))
        return;
    double orient = area2 > 0 ? 1.0 : -1.0;
    /* Projection and hull arithmetic in double: far below a thousandth of a texel. */
    double margin = 1e-3 + 1e-9 * coord_mag;
    for (int i = 0; i < n; i++) {
        const double *p0 = hull[i], *p1 = hull[i + 1 < n ? i + 1 : 0];
        double A = -(p1[1] - p0[1]) * orient, B = (p1[0] - p0[0]) * orient;
        if (A == 0 && B == 0)
            continue;
        double C = -(A * p0[0] + B * p0[1]);
        double *ed = out->edge[out->edge_count++];
        ed[0] = A;
        ed[1] = B;
        /* The texel's corner farthest inside, then the margin. */
        ed[2] = C + dmax(A, 0) + dmax(B, 0) + margin * (fabs(A) + fabs(B));
    }
}

void rvi_occ_box_bound_make(const rvi_occ_view *v, const float min[3], const float max[3], const float *matrix,
                            rvi_occ_box_bound *out)
{
    out->plane_count = 0;
    out->edge_count = 0;
    float (*plane)[3] = out->plane;
    double org[3], e[3][3], dir[3][3];
    double ext[3] = { (double)max[0] - min[0], (double)max[1] - min[1], (double)max[2] - min[2] };
    for (int i = 0; i < 3; i++) {
        if (matrix) {
            org[i] = (double)matrix[i] * min[0] + (double)matrix[4 + i] * min[1] + (double)matrix[8 + i] * min[2] +
                     (double)matrix[12 + i];
            for (int a = 0; a < 3; a++) {
                dir[a][i] = matrix[a * 4 + i];
                e[a][i] = dir[a][i] * ext[a];
            }
        } else {
            org[i] = min[i];
            for (int a = 0; a < 3; a++)
                e[a][i] = dir[a][i] = a == i ? ext[a] : 0.0;
        }
    }
    for (int i = 0; i < 3; i++) {
        double reach = fabs(org[i]) + fabs(e[0][i]) + fabs(e[1][i]) + fabs(e[2][i]);
        if (!(reach <= RVI_OCC_MAX_COORD))
            return;
    }
    box_face face[6];
    if (!box_faces(v, org, (const double (*)[3])e, (const double (*)[3])dir, matrix == NULL, face))
        return; /* a matrix that flattens space: no face to trust */
    if (v->perspective)
        box_image_edges(v, org, (const double (*)[3])e, out);
    uint32_t n = 0;
    for (int k = 0; k < 6; k++) {
        const box_face *f = &face[k];
        if (!(f->pe > 1e-7 * f->pe_mag))
            continue; /* back face or nearly edge-on: leaving it out only raises the bound */
        double a, b, cc, mag, slack;
        face_nearness(v, f, &a, &b, &cc, &mag, &slack);
        /* The texel's maximum, then the evaluation error of a * ix + (b * iy + c) added. */
        cc += dmax(a, 0) + dmax(b, 0);
        cc += 12 * F_EPS * mag + slack * 4;
        if (!(fabs(a) < 1e30 && fabs(b) < 1e30 && fabs(cc) < 1e30))
            continue;
        plane[n][0] = (float)a;
        plane[n][1] = (float)b;
        plane[n][2] = -f_down(-cc);
        n++;
    }
    out->plane_count = n;
}

/* ---- rasterisation ---------------------------------------------------------------------- */

/* Fills rows 0 .. ny - 1 of the occluder (texel columns xl[i] .. xr[i] of row y0 + i):
 * texel = max(texel, max(floor, max_k a_k ix + b_k iy + c_k)) over NP planes. (Skipping
 * rows already nearer than the occluder was measured: the check cost more than it saved.) */
#define SPAN_FILL(NP)                                                                          \
    for (int32_t j = 0; j < n; j++) {                                                          \
        float fx = (float)(x_lo + j), val = floor_v;                                           \
        for (int k = 0; k < (NP); k++) {                                                       \
            float t = a[k] * fx + rc[k];                                                       \
            val = t > val ? t : val;                                                           \
        }                                                                                      \
        span[j] = val > span[j] ? val : span[j];                                               \
    }

static RVI_ALWAYS_INLINE void fill_rows(const rvi_occluder *o, float *texels, uint32_t width, const int32_t *xl,
                                        const int32_t *xr, int32_t ny)
{
    uint32_t np = o->plane_count;
    float a[RVI_OCC_MAX_PLANES], b[RVI_OCC_MAX_PLANES], c[RVI_OCC_MAX_PLANES];
    /* Pad to 2, 4 or 6 planes by repeating the first: max is idempotent. */
    uint32_t padded = np <= 2 ? 2 : np <= 4 ? 4 : 6;
    for (uint32_t k = 0; k < padded; k++) {
        uint32_t s = k < np ? k : 0;
        a[k] = np ? o->plane[s][0] : 0;
        b[k] = np ? o->plane[s][1] : 0;
        c[k] = np ? o->plane[s][2] : -FLT_MAX;
    }
    const float floor_v = o->far_nearness;
    for (int32_t i = 0; i < ny; i++) {
        int32_t x_lo = xl[i], n = xr[i] - x_lo + 1;
        if (n <= 0)
            continue;
        int32_t iy = o->y0 + i;
        float *span = texels + (size_t)iy * width + x_lo;
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

static void fill_rows_generic(const rvi_occluder *o, float *texels, uint32_t width, const int32_t *xl,
                              const int32_t *xr, int32_t ny)
{
    fill_rows(o, texels, width, xl, xr, ny);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void fill_rows_avx2(const rvi_occluder *o, float *texels, uint32_t width, const int32_t *xl,
                                           const int32_t *xr, int32_t ny)
{
    fill_rows(o, texels, width, xl, xr, ny);
}
#endif

void rvi_occ_rasterize(const rvi_occluder *o, float *texels, uint32_t width, double *scratch, int32_t *spans,
                       bool wide)
{
    int32_t ny = o->y1 - o->y0 + 1;
    double *lb = scratch, *rb = scratch + ny;
    double fx0 = o->x0, fx1 = o->x1;
    for (int32_t i = 0; i < ny; i++) {
        lb[i] = fx0;
        rb[i] = fx1;
    }
    /* Per edge over all rows (vectorises): left edges raise lb, right edges lower rb. */
    for (uint32_t e = 0; e < o->edge_count; e++) {
        double p = o->edge_p[e] + o->edge_q[e] * o->y0, q = o->edge_q[e];
        if (o->edge_left[e]) {
            for (int32_t i = 0; i < ny; i++) {
                double bnd = p + q * i;
                lb[i] = bnd > lb[i] ? bnd : lb[i];
            }
        } else {
            for (int32_t i = 0; i < ny; i++) {
                double bnd = p + q * i;
                rb[i] = bnd < rb[i] ? bnd : rb[i];
            }
        }
    }
    /* Clamp, then ceil / floor by truncating a positive value (bounds are in [-1, 8193]
     * after the clamp; the added 16384 rounds far below the shrink margin). */
    int32_t *xl = spans, *xr = spans + ny;
    for (int32_t i = 0; i < ny; i++) {
        double l = lb[i] < fx1 + 1 ? lb[i] : fx1 + 1, r = rb[i] > fx0 - 1 ? rb[i] : fx0 - 1;
        int32_t il = 16384 - (int32_t)(16384.0 - l), ir = (int32_t)(r + 16384.0) - 16384;
        xl[i] = il;
        xr[i] = ir;
    }
#if RVI_OCC_X86_WIDE
    if (wide) {
        fill_rows_avx2(o, texels, width, xl, xr, ny);
        return;
    }
#endif
    (void)wide;
    fill_rows_generic(o, texels, width, xl, xr, ny);
}
