/* rv_view.cull_unsampled (docs/frame.md, "What each object goes through"): a candidate whose
 * box's image, grown by RV_UNSAMPLED_MARGIN_PX, holds no pixel centre of the viewport
 * covers no sample of a one-sample-per-pixel target. Used by the main view's object pass
 * (frame_cull.c) and by extra views (frame_views.c). */
#include "frame.h"
#include "scene.h"

#include <math.h>

#define NONE RVI_INDEX_NONE

/* Twice the signed area of o, a, b: positive when they turn counter-clockwise. */
static inline double hull_turn(const double *o, const double *a, const double *b)
{
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* The convex hull of n points (n <= 8), counter-clockwise, without collinear points
 * (Andrew's monotone chain); returns its vertex count (1 or 2 for a point or a segment). */
static int hull_of(double (*pt)[2], int n, double (*hull)[2])
{
    for (int a = 1; a < n; a++) /* insertion sort by x, then y */
        for (int b = a;
             b > 0 && (pt[b][0] < pt[b - 1][0] || (pt[b][0] == pt[b - 1][0] && pt[b][1] < pt[b - 1][1])); b--) {
            double t0 = pt[b][0], t1 = pt[b][1];
            pt[b][0] = pt[b - 1][0];
            pt[b][1] = pt[b - 1][1];
            pt[b - 1][0] = t0;
            pt[b - 1][1] = t1;
        }
    int k = 0;
    for (int a = 0; a < n; a++) { /* lower chain */
        while (k >= 2 && hull_turn(hull[k - 2], hull[k - 1], pt[a]) <= 0)
            k--;
        hull[k][0] = pt[a][0];
        hull[k++][1] = pt[a][1];
    }
    for (int a = n - 2, lower = k + 1; a >= 0; a--) { /* upper chain */
        while (k >= lower && hull_turn(hull[k - 2], hull[k - 1], pt[a]) <= 0)
            k--;
        hull[k][0] = pt[a][0];
        hull[k++][1] = pt[a][1];
    }
    k--; /* the first point closed the chain */
    return k < 1 ? 1 : k;
}

/* Most boxes this is asked about do show a pixel centre; one near the middle of the image
 * usually says so before the hull is made. True when the centre nearest the corners'
 * average, inside the rows and columns of centres [row0, row1] x [col0, col1], lies in the
 * image of one of the box's faces (each face's corners pt[] in the order of their bits,
 * split in two triangles; every point of the image lies in some face's). Such a centre
 * lies inside the hull up to the orientation sums' rounding, far less than the margin the
 * row walk grows the hull by, so the walk would find it too: the answer is the same. */
static bool centre_near_middle_seen(double (*pt)[2], double row0, double row1, double col0, double col1)
{
    static const int face[6][4] = { { 0, 2, 6, 4 }, { 1, 3, 7, 5 }, { 0, 1, 5, 4 },
                                    { 2, 3, 7, 6 }, { 0, 1, 3, 2 }, { 4, 5, 7, 6 } };
    double cx = 0, cy = 0;
    for (int k = 0; k < 8; k++) {
        cx += pt[k][0];
        cy += pt[k][1];
    }
    double col = floor(cx / 8), row = floor(cy / 8);
    if (!(col >= col0 && col <= col1 && row >= row0 && row <= row1))
        return false;
    const double q[2] = { col + 0.5, row + 0.5 };
    for (int f = 0; f < 6; f++)
        for (int t = 0; t < 2; t++) {
            const double *a = pt[face[f][0]], *b = pt[face[f][t + 1]], *c = pt[face[f][t + 2]];
            double d0 = hull_turn(a, b, q), d1 = hull_turn(b, c, q), d2 = hull_turn(c, a, q);
            bool in = (d0 >= 0 && d1 >= 0 && d2 >= 0) || (d0 <= 0 && d1 <= 0 && d2 <= 0);
            if (in && (d0 != 0 || d1 != 0 || d2 != 0))
                return true;
        }
    return false;
}

/* The world box min..max under m (NULL: identity) projected by cam's view-projection (in
 * double, so an eye far from the origin keeps its pixels): true when its image, grown by
 * the margin and clipped to the viewport, holds no pixel centre (i + 0.5, j + 0.5). Every
 * corner must lie in front of the eye (w > 0): the box's image is then the convex hull of
 * the corners' images, and its geometry's image lies inside the box's. First the hull's
 * bounding rectangle, then, row of centres by row, the hull itself: each edge's half-plane
 * moved outward by the margin along its normal (a superset of the hull grown by the
 * margin) cut by the row's line. */
static bool box_unsampled(const rvi_frame_camera *cam, const float min[3], const float max[3], const float *m)
{
    const double *vp = cam->view_projection_d;
    double w_px = cam->viewport_width, h_px = cam->viewport_height, margin = RV_UNSAMPLED_MARGIN_PX;
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, pt[8][2];
    for (int k = 0; k < 8; k++) {
        double l[3] = { k & 1 ? max[0] : min[0], k & 2 ? max[1] : min[1], k & 4 ? max[2] : min[2] }, p[3];
        for (int r = 0; r < 3; r++)
            p[r] = m ? (double)m[r] * l[0] + (double)m[4 + r] * l[1] + (double)m[8 + r] * l[2] + m[12 + r] : l[r];
        double c[4];
        for (int r = 0; r < 4; r++)
            c[r] = vp[r] * p[0] + vp[4 + r] * p[1] + vp[8 + r] * p[2] + vp[12 + r];
        if (!(c[3] > 0))
            return false;
        /* Rows top-down or bottom-up: centres map to centres, so either is the same. */
        double x = (0.5 + 0.5 * c[0] / c[3]) * w_px, y = (0.5 + 0.5 * c[1] / c[3]) * h_px;
        pt[k][0] = x;
        pt[k][1] = y;
        x0 = x < x0 ? x : x0;
        x1 = x > x1 ? x : x1;
        y0 = y < y0 ? y : y0;
        y1 = y > y1 ? y : y1;
    }
    if (!(x0 <= x1 && y0 <= y1 && x1 - x0 < 1e9 && y1 - y0 < 1e9)) /* NaN, or nearly behind the eye */
        return false;
    x0 = fmax(x0 - margin, 0.0);
    y0 = fmax(y0 - margin, 0.0);
    x1 = fmin(x1 + margin, w_px);
    y1 = fmin(y1 + margin, h_px);
    double row0 = ceil(y0 - 0.5), row1 = floor(y1 - 0.5), col0 = ceil(x0 - 0.5), col1 = floor(x1 - 0.5);
    if (!(row1 >= row0 && col1 >= col0))
        return true;
    if (row1 - row0 >= 2 * RV_UNSAMPLED_MAX_PX)
        return false;
    if (centre_near_middle_seen(pt, row0, row1, col0, col1))
        return false;
    double hull[17][2];
    int n = hull_of(pt, 8, hull);
    for (double row = row0; row <= row1; row++) {
        double y = row + 0.5, lo = x0, hi = x1;
        for (int e = 0; e < n && lo <= hi && n > 1; e++) {
            const double *a = hull[e], *b = hull[(e + 1) % n];
            /* Inside (counter-clockwise): nx * x + ny * y >= c, with the inward normal. */
            double nx = -(b[1] - a[1]), ny = b[0] - a[0], len = sqrt(nx * nx + ny * ny);
            double c = nx * a[0] + ny * a[1] - margin * len, rest = c - ny * y;
            if (nx > 0)
                lo = fmax(lo, rest / nx);
            else if (nx < 0)
                hi = fmin(hi, rest / nx);
            else if (rest > 0)
                hi = lo - 1; /* the row lies outside this horizontal edge */
        }
        if (ceil(lo - 0.5) <= floor(hi - 0.5))
            return false;
    }
    return true;
}

bool rvi_frame_unsampled(const rvi_frame_camera *cam, const rvi_frame *f, const rvi_scene *sc, uint32_t i)
{
    float s[4];
    rvi_frame_own_sphere(sc, i, s);
    if (!(s[3] >= 0 && s[3] < INFINITY))
        return false;
    /* A filter on cost, not a verdict: the sphere's image diameter, about. */
    float across = 2.0f * s[3] * cam->pixels_per_unit;
    if (!cam->orthographic) {
        float depth = (s[0] - cam->eye[0]) * cam->forward[0] + (s[1] - cam->eye[1]) * cam->forward[1] +
                      (s[2] - cam->eye[2]) * cam->forward[2];
        if (!(depth > s[3]))
            return false;
        across /= depth - s[3];
    }
    if (!(across <= (float)RV_UNSAMPLED_MAX_PX))
        return false;
    /* No frame state yet (an extra view before the first frame): no test box either. */
    const rvi_node_box *b = f ? rvi_node_table_find(&f->test_boxes, sizeof *b, i) : NULL;
    if (b)
        return box_unsampled(cam, b->min, b->max, sc->world_matrix[i]);
    float mn[3] = { s[0] - s[3], s[1] - s[3], s[2] - s[3] }, mx[3] = { s[0] + s[3], s[1] + s[3], s[2] + s[3] };
    return box_unsampled(cam, mn, mx, NULL);
}
