/* Box tests of the walk (cull.h): a node's test box against the frustum (a sphere that
 * straddles a plane is culled when its box lies wholly outside), and a summary's box (a
 * block or group is passed over when every sphere inside its box is outside a plane). */
#include "cull.h"
#include "frustum.h"
#include "core/check.h"

#include <math.h>

/* ---- test boxes ------------------------------------------------------------------------ */

void rvi_box_to_world(const float m[16], const float mn[3], const float mx[3], float out_min[3], float out_max[3])
{
    for (int r = 0; r < 3; r++) {
        float lo = m[12 + r], hi = m[12 + r];
        for (int c = 0; c < 3; c++) {
            float a = m[c * 4 + r] * mn[c], b = m[c * 4 + r] * mx[c];
            lo += a < b ? a : b;
            hi += a < b ? b : a;
        }
        out_min[r] = lo;
        out_max[r] = hi;
    }
}

bool rvi_walk_test_box_outside(const rvi_walk_policy *p, uint32_t i)
{
    const rvi_node_box *b = rvi_node_table_find(p->test_boxes, sizeof *b, i);
    if (!b)
        return false;
    const rvi_scene *sc = p->scene;
    /* An unbounded sphere: the node, or one below it, has an unknown placement (its matrix
     * is stale, RVI_NODE_STALE) and the box under this matrix says nothing about it. */
    if (!(sc->world_sphere[i][3] < INFINITY))
        return false;
    const float *m = sc->world_matrix[i];
    float wmin[3], wmax[3];
    rvi_box_to_world(m, b->min, b->max, wmin, wmax);
    /* Widened by the float rounding of the transform, so that it encloses the exact image:
     * a cull by it must stay conservative. */
    for (int r = 0; r < 3; r++) {
        float mag = fabsf(m[12 + r]);
        for (int c = 0; c < 3; c++)
            mag += fabsf(m[c * 4 + r]) * (fabsf(b->min[c]) > fabsf(b->max[c]) ? fabsf(b->min[c]) : fabsf(b->max[c]));
        float pad = mag * 1e-6f + 1e-30f;
        wmin[r] -= pad;
        wmax[r] += pad;
    }
    if (rv_frustum_classify_box(p->frustum, wmin, wmax) == RV_OUTSIDE)
        return true;
    /* A rotated box is smaller than its world box: test it as the oriented box it is. Under
     * a matrix that keeps the axes (each column one non-zero term) the two are the same box. */
    bool rotated = false;
    for (int c = 0; c < 3; c++)
        rotated |= (m[c * 4] != 0) + (m[c * 4 + 1] != 0) + (m[c * 4 + 2] != 0) > 1;
    return rotated && rvi_oriented_box_outside(p->frustum, m, b->min, b->max);
}

/* ---- summaries' boxes ------------------------------------------------------------------ */

/* True when every sphere inside the box lo..hi lies outside plane q by the walk's float
 * test. A sphere of radius rho inside the box has its centre rho inside on each axis, so
 * its distance from the plane is at most the box's farthest point's less
 * rho * (|a| + |b| + |c|); that must stay below -rho by more than rvi_plane_distance's float
 * sum can be off (a relative 1e-5 of its terms, the box's float bounds widened by their
 * rounding). In double; a box reaching 1e30 settles nothing (rvi_outside_plane keeps a
 * sphere whose float distance overflows). */
static bool box_outside_plane(const float q[4], const float lo[3], const float hi[3])
{
    double c[3], h[3], rho = INFINITY;
    for (int a = 0; a < 3; a++) {
        double mag = fmax(fabs((double)lo[a]), fabs((double)hi[a])), pad = 1e-6 * mag;
        if (!(mag < 1e30))
            return false;
        double l = (double)lo[a] - pad, u = (double)hi[a] + pad;
        c[a] = 0.5 * (l + u);
        h[a] = 0.5 * (u - l);
        rho = fmin(rho, h[a]); /* no sphere inside the box is larger */
    }
    double n1 = fabs(q[0]) + fabs(q[1]) + fabs(q[2]);
    double far = q[0] * c[0] + q[1] * c[1] + q[2] * c[2] + q[3] + fabs(q[0]) * h[0] + fabs(q[1]) * h[1] +
                 fabs(q[2]) * h[2];
    double terms = fabs(q[0]) * (fabs(c[0]) + h[0]) + fabs(q[1]) * (fabs(c[1]) + h[1]) +
                   fabs(q[2]) * (fabs(c[2]) + h[2]) + fabs(q[3]);
    return far + 1e-5 * terms + rho * fmax(0.0, 1.0 - n1) < 0.0;
}

/* A long row of leaves (a group of a flat list, reaching across the field) has a sphere far
 * larger than its box, and passes the far plane or a side plane that its sphere crosses.
 * A float estimate of the box's farthest point picks the planes worth the exact test. */
bool rvi_walk_box_outside(const rv_frustum *frustum, const float lo[3], const float hi[3], uint32_t in_mask)
{
    float c[3], h[3];
    for (int a = 0; a < 3; a++) {
        c[a] = 0.5f * lo[a] + 0.5f * hi[a];
        h[a] = 0.5f * hi[a] - 0.5f * lo[a];
    }
    for (int i = 0; i < 6; i++) {
        const float *q = frustum->planes[i];
        if (!(in_mask & (1u << i)) ||
            !(q[0] * c[0] + q[1] * c[1] + q[2] * c[2] + q[3] + fabsf(q[0]) * h[0] + fabsf(q[1]) * h[1] +
                  fabsf(q[2]) * h[2] < 0.0f))
            continue;
        if (box_outside_plane(q, lo, hi))
            return true;
    }
    return false;
}
