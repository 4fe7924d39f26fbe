/* Convex brushes from their planes (see brush.h). Each side's face is found the way q3map
 * finds it: a huge square on the side's plane, clipped by every other side. The corners of
 * all faces bound the brush; their volume says whether it holds anything; a corner that
 * stays out near the huge square says the plane set is not closed. */
#include "brush.h"

#include <math.h>
#include <string.h>

/* Half the side of the starting square: beyond anything a checked map holds (coordinates
 * within +-1e6), so a corner still out near it means no side closed the brush there. */
#define BASE_EXTENT 8.0e6
#define UNBOUNDED_EXTENT 4.0e6
/* A point within this distance of a plane counts as on it (doubles; q3map uses 0.1 in
 * floats). */
#define ON_EPSILON 1e-4
/* A face with less area than this (square units) is an edge or a corner, not a face. */
#define MIN_FACE_AREA 1e-4
#define MIN_VOLUME 1e-4

enum { MAX_WINDING = RVW_BRUSH_MAX_SIDES + 4 };

typedef struct winding {
    int count;
    double p[MAX_WINDING][3];
} winding;

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static void plane_of(const float *plane, double n[3], double *d)
{
    n[0] = plane[0];
    n[1] = plane[1];
    n[2] = plane[2];
    *d = plane[3];
}

/* A square of half-side BASE_EXTENT on the plane, counter-clockwise seen from outside. */
static bool base_winding(const double n[3], double d, winding *w)
{
    double len = sqrt(dot3(n, n));
    if (!(len > 0.5) || !isfinite(d))
        return false;
    int major = 0;
    for (int k = 1; k < 3; k++)
        if (fabs(n[k]) > fabs(n[major]))
            major = k;
    double up[3] = { 0, 0, 0 };
    up[major == 1 ? 0 : 1] = 1; /* any axis that is not the normal's major one */
    double along = dot3(up, n) / (len * len);
    for (int k = 0; k < 3; k++)
        up[k] -= n[k] * along;
    double ul = sqrt(dot3(up, up));
    for (int k = 0; k < 3; k++)
        up[k] /= ul;
    double unit[3] = { n[0] / len, n[1] / len, n[2] / len }, right[3], org[3];
    cross3(up, unit, right);
    for (int k = 0; k < 3; k++)
        org[k] = unit[k] * (d / len);
    static const double corner[4][2] = { { -1, 1 }, { 1, 1 }, { 1, -1 }, { -1, -1 } };
    w->count = 4;
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 3; k++)
            w->p[c][k] = org[k] + right[k] * corner[c][0] * BASE_EXTENT + up[k] * corner[c][1] * BASE_EXTENT;
    return true;
}

/* Keeps the part of w with dot(n, p) - d <= ON_EPSILON (Sutherland–Hodgman). */
static void clip_winding(winding *w, const double n[3], double d)
{
    double dist[MAX_WINDING];
    bool any_out = false;
    for (int i = 0; i < w->count; i++) {
        dist[i] = dot3(n, w->p[i]) - d;
        any_out |= dist[i] > ON_EPSILON;
    }
    if (!any_out)
        return;
    winding out;
    out.count = 0;
    for (int i = 0; i < w->count && out.count < MAX_WINDING; i++) {
        int j = (i + 1) % w->count;
        bool in_i = dist[i] <= ON_EPSILON, in_j = dist[j] <= ON_EPSILON;
        if (in_i)
            memcpy(out.p[out.count++], w->p[i], sizeof out.p[0]);
        if (in_i != in_j && out.count < MAX_WINDING &&
            fabs(dist[i]) > ON_EPSILON && fabs(dist[j]) > ON_EPSILON) {
            double t = dist[i] / (dist[i] - dist[j]);
            for (int k = 0; k < 3; k++)
                out.p[out.count][k] = w->p[i][k] + (w->p[j][k] - w->p[i][k]) * t;
            out.count++;
        }
    }
    *w = out;
}

static double winding_area(const winding *w, double normal_times_area[3])
{
    double s[3] = { 0, 0, 0 };
    for (int i = 1; i + 1 < w->count; i++) {
        double a[3], b[3], c[3];
        for (int k = 0; k < 3; k++) {
            a[k] = w->p[i][k] - w->p[0][k];
            b[k] = w->p[i + 1][k] - w->p[0][k];
        }
        cross3(a, b, c);
        for (int k = 0; k < 3; k++)
            s[k] += c[k];
    }
    if (normal_times_area)
        memcpy(normal_times_area, s, sizeof s);
    return 0.5 * sqrt(dot3(s, s));
}

/* Side i's face: its plane's square clipped by every other side. False when the plane is
 * unusable (a normal far from unit length). */
static bool face_of(const float *planes, uint32_t count, uint32_t i, winding *w)
{
    double n[3], d;
    plane_of(planes + (size_t)i * 4, n, &d);
    if (!base_winding(n, d, w))
        return false;
    for (uint32_t j = 0; j < count && w->count > 0; j++) {
        if (j == i)
            continue;
        double m[3], e;
        plane_of(planes + (size_t)j * 4, m, &e);
        clip_winding(w, m, e);
    }
    return true;
}

rvw_brush_shape rvw_brush_shape_of(const float *planes, uint32_t count, rvw_box *bounds)
{
    rvw_box_empty(bounds);
    if (count == 0 || count > RVW_BRUSH_MAX_SIDES)
        return RVW_BRUSH_UNBOUNDED;
    for (uint32_t i = 0; i < count * 4; i++)
        if (!isfinite(planes[i]))
            return RVW_BRUSH_UNBOUNDED;
    /* The volume, as the sum of cones from a point on the brush to each face: the first
     * face's first corner serves (any point of a convex solid's surface does). */
    double apex[3] = { 0, 0, 0 }, volume = 0;
    bool have_apex = false, unbounded = false;
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    winding w;
    for (uint32_t i = 0; i < count; i++) {
        if (!face_of(planes, count, i, &w))
            return RVW_BRUSH_UNBOUNDED;
        double na[3];
        if (w.count < 3 || winding_area(&w, na) < MIN_FACE_AREA)
            continue;
        for (int v = 0; v < w.count; v++)
            for (int k = 0; k < 3; k++) {
                unbounded |= fabs(w.p[v][k]) > UNBOUNDED_EXTENT;
                lo[k] = fmin(lo[k], w.p[v][k]);
                hi[k] = fmax(hi[k], w.p[v][k]);
            }
        if (!have_apex) {
            memcpy(apex, w.p[0], sizeof apex);
            have_apex = true;
        }
        /* cone volume = |n·area| * height / 3, with height the apex's depth below the face */
        double n[3], d;
        plane_of(planes + (size_t)i * 4, n, &d);
        double len = sqrt(dot3(n, n));
        volume += (d - dot3(n, apex)) / len * 0.5 * sqrt(dot3(na, na)) / 3.0;
    }
    if (unbounded)
        return RVW_BRUSH_UNBOUNDED;
    if (!have_apex || !(volume > MIN_VOLUME))
        return RVW_BRUSH_EMPTY;
    for (int k = 0; k < 3; k++) {
        /* round outwards, so the float box still holds every corner */
        float a = (float)lo[k], b = (float)hi[k];
        bounds->min[k] = (double)a > lo[k] ? nextafterf(a, -INFINITY) : a;
        bounds->max[k] = (double)b < hi[k] ? nextafterf(b, INFINITY) : b;
    }
    return RVW_BRUSH_SOLID;
}

uint32_t rvw_brush_triangles(const float *planes, uint32_t count, float *out, uint32_t max_triangles)
{
    rvw_box bounds;
    if (rvw_brush_shape_of(planes, count, &bounds) != RVW_BRUSH_SOLID)
        return 0;
    uint32_t n = 0;
    winding w;
    for (uint32_t i = 0; i < count; i++) {
        if (!face_of(planes, count, i, &w) || w.count < 3 || winding_area(&w, NULL) < MIN_FACE_AREA)
            continue;
        for (int v = 1; v + 1 < w.count; v++, n++) {
            if (n >= max_triangles)
                continue;
            const double *c[3] = { w.p[0], w.p[v], w.p[v + 1] };
            for (int k = 0; k < 3; k++)
                for (int a = 0; a < 3; a++)
                    out[(size_t)n * 9 + k * 3 + a] = (float)c[k][a];
        }
    }
    return n;
}
