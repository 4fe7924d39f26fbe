/* A box's image, for the object tests of occlusion_test.c: the depth planes of its front
 * faces and the outline of its projected corners (rvi_occ_box_bound_make, the refined
 * test's bound), and, for a box reaching before the near plane, the rectangle and nearest
 * depth of its part in view (rvi_occ_part_in_view; docs/occlusion.md, "Objects reaching
 * before the near plane"). */
#include "occlusion_test.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- front faces (the refined object test) ---------------------------------------------- */

static double dmax(double a, double b) { return a > b ? a : b; }
static double m_at(const double m[16], int row, int col) { return m[col * 4 + row]; }

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

/* A face of the box: outward plane n . p + c = 0 and its eye value (rvi_occ_plane). */
typedef rvi_occ_plane box_face;

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

/* Texel-space lines that bound the image of a box whose corners are all in front of the
 * eye: the hull of its projected corners, each edge widened outward by margin. */
static void box_image_edges(const rvi_occ_view *v, const double org[3], const double e[3][3], rvi_occ_box_bound *out)
{
    out->edge_count = 0;
    double pts[8][2], hull[17][2], coord_mag = 0, far = 0; /* the monotone chain writes up to 2n */
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
        far = k == 0 || 1.0 / c[3] < far ? 1.0 / c[3] : far;
        pts[k][0] = 0.5 * W * (c[0] / c[3] + 1.0);
        pts[k][1] = 0.5 * H * (1.0 - c[1] / c[3]);
        if (!(fabs(pts[k][0]) < 1e9 && fabs(pts[k][1]) < 1e9))
            return;
        coord_mag = dmax(coord_mag, fabs(pts[k][0]) + fabs(pts[k][1]));
    }
    out->far = far * (1 - 1e-9);
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
    double lo[2] = { hull[0][0], hull[0][1] }, hi[2] = { hull[0][0], hull[0][1] };
    for (int i = 1; i < n; i++)
        for (int a = 0; a < 2; a++) {
            lo[a] = hull[i][a] < lo[a] ? hull[i][a] : lo[a];
            hi[a] = hull[i][a] > hi[a] ? hull[i][a] : hi[a];
        }
    /* Texel i spans [i, i + 1]: it meets [lo, hi] (grown by the margin) only from
     * floor(lo) to floor(hi); the coordinates are below 1e9, inside int32. */
    out->ix0 = (int32_t)floor(lo[0] - margin);
    out->iy0 = (int32_t)floor(lo[1] - margin);
    out->ix1 = (int32_t)floor(hi[0] + margin);
    out->iy1 = (int32_t)floor(hi[1] + margin);
    /* Clamped to the buffer: the planes' error bounds hold there (and no texel lies beyond). */
    double rx[2] = { fmin(fmax(lo[0] - margin, 0), W), fmin(fmax(hi[0] + margin, 0), W) };
    double ry[2] = { fmin(fmax(lo[1] - margin, 0), H), fmin(fmax(hi[1] + margin, 0), H) };
    for (int k = 0; k < 4; k++) {
        out->rect[k][0] = rx[(k ^ (k >> 1)) & 1];
        out->rect[k][1] = ry[k >> 1];
    }
    for (int i = 0; i < n; i++) {
        const double *p0 = hull[i], *p1 = hull[i + 1 < n ? i + 1 : 0];
        double A = -(p1[1] - p0[1]) * orient, B = (p1[0] - p0[0]) * orient;
        if (A == 0 && B == 0)
            continue;
        double C = -(A * p0[0] + B * p0[1]);
        double *im = out->image[out->edge_count];
        double *ed = out->edge[out->edge_count++];
        ed[0] = im[0] = A;
        ed[1] = im[1] = B;
        im[2] = C + margin * (fabs(A) + fabs(B));
        /* The texel's corner farthest inside, then the margin. */
        ed[2] = im[2] + dmax(A, 0) + dmax(B, 0);
    }
}

void rvi_occ_box_bound_make(const rvi_occ_view *v, const float min[3], const float max[3], const float *matrix,
                            rvi_occ_box_bound *out)
{
    out->plane_count = 0;
    out->edge_count = 0;
    out->ix0 = out->iy0 = INT32_MIN;
    out->ix1 = out->iy1 = INT32_MAX;
    out->tried = NULL;
    out->tried_nearer = false;
    out->far = 0;
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
        rvi_occ_plane_nearness(v, f, &a, &b, &cc, &mag, &slack);
        /* The texel's maximum, then the evaluation error of a * ix + (b * iy + c) added. */
        cc += dmax(a, 0) + dmax(b, 0);
        cc += 12 * RVI_OCC_F_EPS * mag + slack * 4;
        if (!(fabs(a) < 1e30 && fabs(b) < 1e30 && fabs(cc) < 1e30))
            continue;
        plane[n][0] = (float)a;
        plane[n][1] = (float)b;
        plane[n][2] = -rvi_occ_f_down(-cc);
        n++;
    }
    out->plane_count = n;
}

/* ---- the part in view of a box reaching before the near plane ---------------------------- */

/* Most points a clipped face may hold: four, and one more per clipping plane. */
#define CLIP_POINTS (4 + 5)

/* One Sutherland-Hodgman step: the part of polygon in (n points of the four test rows)
 * where h . (row values, 1) >= 0, into out; returns its point count, or -1 when rounding
 * would make more than CLIP_POINTS (a convex face never does). */
static int clip_polygon(const double (*in)[4], int n, const double h[5], double (*out)[4])
{
    int m = 0;
    double hv[CLIP_POINTS];
    for (int i = 0; i < n; i++)
        hv[i] = h[0] * in[i][0] + h[1] * in[i][1] + h[2] * in[i][2] + h[3] * in[i][3] + h[4];
    for (int i = 0; i < n; i++) {
        int j = i + 1 < n ? i + 1 : 0;
        const double *a = in[i], *b = in[j];
        double ha = hv[i], hb = hv[j];
        if (m + ((ha >= 0) + ((ha >= 0) != (hb >= 0))) > CLIP_POINTS)
            return -1;
        if (ha >= 0)
            memcpy(out[m++], a, sizeof out[0]);
        if ((ha >= 0) != (hb >= 0)) {
            double t = ha / (ha - hb);
            for (int r = 0; r < 4; r++)
                out[m][r] = a[r] + t * (b[r] - a[r]);
            m++;
        }
    }
    return m;
}

/* The footprint of a box that reaches before the near plane (perspective only). The
 * camera sees only its part in front of the near plane and inside the view, so that part
 * is projected: each face clipped, in the four test rows (affine in the point, so
 * clipping there is clipping in space), to the near plane and the buffer's four sides,
 * each half-space widened by the rows' error bound so the clipped part holds the exact
 * one. Its rectangle and nearest nearness then come from the clipped points, as
 * project_box's from the corners. 0 (visible, nothing to test) when the part in view
 * reaches the near plane, where no occluder can be nearer (they are drawn only beyond
 * it), or cannot be bounded; RVI_OCC_AWAY when no part is in view. */
int32_t rvi_occ_part_in_view(const rv_occlusion *occ, const float b[4], const float d0[4], const float d1[4],
                             const float d2[4], float dist, float rect[4], float *nearness_out)
{
    const rvi_occ_view *v = &occ->view;
    if (!v->perspective)
        return 0;
    /* The part's corners below are complete only when the side planes meet (at the eye)
     * behind the near plane; a matrix whose rounding puts its near plane behind its own
     * eye gets no answer. */
    double at_eye = v->near_row[3] * v->eye[3], at_mag = fabs(at_eye);
    for (int j = 0; j < 3; j++) {
        at_eye += v->near_row[j] * v->eye[j];
        at_mag += fabs(v->near_row[j] * v->eye[j]);
    }
    if (!(at_eye < -1e-6 * at_mag))
        return 0;
    static const int faces[6][4] = { { 0, 2, 6, 4 }, { 1, 5, 7, 3 }, { 0, 4, 5, 1 },
                                     { 2, 3, 7, 6 }, { 0, 1, 3, 2 }, { 4, 6, 7, 5 } };
    double W = occ->width, H = occ->height, err[4], corner[8][4];
    for (int r = 0; r < 4; r++)
        err[r] = (double)v->err_mul[r] * dist + v->err_add[r];
    for (int k = 0; k < 8; k++)
        for (int r = 0; r < 4; r++)
            corner[k][r] = (double)b[r] + ((k & 1) ? d0[r] : 0.0) + ((k & 2) ? d1[r] : 0.0) + ((k & 4) ? d2[r] : 0.0);
    /* First the common case, cheaply: a box edge crossing the near plane inside the view
     * puts the part in view on the near plane (visible). Answering visible is always safe,
     * so this look needs no error bounds. */
    for (int k = 0; k < 8; k++)
        for (int a = 1; a < 8; a <<= 1) {
            if (k & a)
                continue;
            const double *p = corner[k], *q = corner[k | a];
            if ((p[2] > 0) == (q[2] > 0))
                continue;
            double t = p[2] / (p[2] - q[2]), x = p[0] + t * (q[0] - p[0]), y = p[1] + t * (q[1] - p[1]);
            double w = p[3] + t * (q[3] - p[3]);
            if (x >= 0 && x <= W * w && y >= 0 && y <= H * w)
                return 0;
        }
    /* near >= 0, x >= 0, x <= W q, y >= 0, y <= H q, each loosened by its error */
    const double half[5][5] = { { 0, 0, 1, 0, err[2] },
                                { 1, 0, 0, 0, err[0] },
                                { -1, 0, 0, W, err[0] + W * err[3] },
                                { 0, 1, 0, 0, err[1] },
                                { 0, -1, 0, H, err[1] + H * err[3] } };
    /* Which corners each half-space keeps: a face all of whose corners one keeps needs no
     * clipping by it, and one that keeps none of them drops the face. */
    uint32_t kept[5] = { 0, 0, 0, 0, 0 };
    for (int h = 0; h < 5; h++)
        for (int k = 0; k < 8; k++) {
            const double *c = corner[k];
            kept[h] |= (uint32_t)(half[h][0] * c[0] + half[h][1] * c[1] + half[h][2] * c[2] + half[h][3] * c[3] +
                                      half[h][4] >= 0)
                       << k;
        }
    double xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY, nearness = 0;
    bool any = false;
    for (int f = 0; f < 6; f++) {
        uint32_t mask = 1u << faces[f][0] | 1u << faces[f][1] | 1u << faces[f][2] | 1u << faces[f][3];
        bool dropped = false;
        for (int h = 0; h < 5 && !dropped; h++)
            dropped = (kept[h] & mask) == 0;
        if (dropped)
            continue;
        double poly[2][CLIP_POINTS][4];
        int n = 4, cur = 0;
        for (int i = 0; i < 4; i++)
            memcpy(poly[0][i], corner[faces[f][i]], sizeof poly[0][i]);
        for (int h = 0; h < 5 && n > 0; h++) {
            if ((kept[h] & mask) == mask)
                continue;
            n = clip_polygon((const double (*)[4])poly[cur], n, half[h], poly[cur ^ 1]);
            if (n < 0)
                return 0;
            cur ^= 1;
        }
        for (int i = 0; i < n; i++) {
            const double *p = poly[cur][i];
            if (p[2] <= 2 * err[2])
                return 0; /* its part in view reaches the near plane: nothing is nearer there */
            double q = p[3] - err[3];
            if (!(q > 1e-30 && p[3] < 1e30))
                return 0; /* at the eye, or not finite */
            double iq = 1.0 / q, mx = (err[0] + (W + 2) * err[3]) * iq, my = (err[1] + (H + 2) * err[3]) * iq;
            double tx = p[0] / p[3], ty = p[1] / p[3];
            xmin = tx - mx < xmin ? tx - mx : xmin;
            xmax = tx + mx > xmax ? tx + mx : xmax;
            ymin = ty - my < ymin ? ty - my : ymin;
            ymax = ty + my > ymax ? ty + my : ymax;
            nearness = iq > nearness ? iq : nearness;
            any = true;
        }
    }
    /* The only points of the part in view that lie on no face: the corners of the view's
     * near rectangle, where three clipping planes meet, when they are inside a box with
     * volume (a flat box's part in view is its clipped face). One inside means the part in
     * view reaches the near plane. Each is solved for in the box's edge coordinates s
     * (corner = b + s0 d0 + s1 d1 + s2 d2); a box too thin to solve for with certainty
     * gets no answer. */
    bool flat = false;
    for (int a = 0; a < 3 && !flat; a++) {
        const float *d = a == 0 ? d0 : a == 1 ? d1 : d2;
        flat = d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 0;
    }
    for (int k = 0; k < 4 && !flat; k++) {
        double xt = (k & 1) ? W : 0, yt = (k & 2) ? H : 0, A[3][3], rhs[3], norm[3] = { 0, 0, 0 };
        for (int a = 0; a < 3; a++) {
            const float *d = a == 0 ? d0 : a == 1 ? d1 : d2;
            A[0][a] = d[2];
            A[1][a] = d[0] - xt * d[3];
            A[2][a] = d[1] - yt * d[3];
            norm[a] = sqrt(A[0][a] * A[0][a] + A[1][a] * A[1][a] + A[2][a] * A[2][a]);
        }
        rhs[0] = -(double)b[2];
        rhs[1] = -((double)b[0] - xt * b[3]);
        rhs[2] = -((double)b[1] - yt * b[3]);
        double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                     A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
        if (!(fabs(det) >= 1e-6 * norm[0] * norm[1] * norm[2] && fabs(det) > 0))
            return 0;
        double sv[3];
        for (int a = 0; a < 3; a++) {
            double M[3][3];
            memcpy(M, A, sizeof M);
            for (int r = 0; r < 3; r++)
                M[r][a] = rhs[r];
            sv[a] = (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
                     M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0])) / det;
        }
        /* Widened: a corner counted inside that is not only loses a cull. */
        if (sv[0] >= -1e-4 && sv[0] <= 1 + 1e-4 && sv[1] >= -1e-4 && sv[1] <= 1 + 1e-4 && sv[2] >= -1e-4 &&
            sv[2] <= 1 + 1e-4)
            return 0; /* the part in view holds a point of the near plane: nothing is nearer there */
    }
    if (!any)
        return RVI_OCC_AWAY;
    if (!(nearness < 1e30))
        return 0;
    /* 1e-3 texel and 1e-9 relative for the clipping's own double rounding, then outward to floats */
    double m = 1e-3;
    rect[0] = rvi_occ_f_down(xmin - m - 1e-9 * fabs(xmin));
    rect[1] = rvi_occ_f_down(ymin - m - 1e-9 * fabs(ymin));
    rect[2] = -rvi_occ_f_down(-(xmax + m + 1e-9 * fabs(xmax)));
    rect[3] = -rvi_occ_f_down(-(ymax + m + 1e-9 * fabs(ymax)));
    *nearness_out = -rvi_occ_f_down(-nearness * (1 + 1e-9));
    return RVI_OCC_ON;
}
