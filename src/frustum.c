/* Frustum planes from a view-projection matrix, sphere and box classification
 * (docs/design.md §1–§2). The batch sphere cull lives in frustum_simd.c. */
#include "frustum.h"

#include "core/check.h"

#include <math.h>

/* The sphere test here must round exactly as rv_cull_spheres does (frustum_simd.c), so a
 * host build that fuses multiply-adds (GNU mode with FMA targets) must not fuse them. */
#include "core/no_contract.h"

enum { PLANE_LEFT, PLANE_RIGHT, PLANE_BOTTOM, PLANE_TOP, PLANE_NEAR, PLANE_FAR };

/* A plane whose normal is this small next to the rows it was made from is cancellation
 * noise, not a direction: the far plane of an infinite projection computes as
 * (0, 0, 0, 2n) plus rounding. Float matrices carry ~1e-7 relative noise, so 1e-6 keeps
 * every real plane (a depth range up to ~1e6 : 1) and drops the noise. */
#define RVI_PLANE_RELATIVE_EPS 1e-6
/* Against the largest row of the whole matrix: a plane built from rows that are
 * themselves noise (1e-7 of the matrix) is dropped too. */
#define RVI_PLANE_GLOBAL_EPS 1e-7

static double row_xyz_length(const double row[4])
{
    return sqrt(row[0] * row[0] + row[1] * row[1] + row[2] * row[2]);
}

/* plane = a * row_a + b * row_b (a, b in {-1, 0, 1}), normalised into out when it is not
 * degenerate. Double precision so the difference of two nearly equal rows (the near and
 * far planes of a long depth range) keeps every bit the float matrix has. */
static bool make_plane(const double rows[4][4], int row_a, double a, int row_b, double b,
                       double global_ref, float out[4])
{
    double p[4];
    for (int k = 0; k < 4; k++)
        p[k] = a * rows[row_a][k] + b * rows[row_b][k];
    double ref = fmax(fabs(a) * row_xyz_length(rows[row_a]), fabs(b) * row_xyz_length(rows[row_b]));
    double len = row_xyz_length(p);
    if (!(len > 0.0) || len <= RVI_PLANE_RELATIVE_EPS * ref || len <= RVI_PLANE_GLOBAL_EPS * global_ref)
        return false;
    float q[4];
    for (int k = 0; k < 4; k++)
        q[k] = (float)(p[k] / len);
    if (!rvi_finite_n(q, 4))
        return false; /* d / |n| beyond float range: a plane at "infinity", dropped */
    for (int k = 0; k < 4; k++)
        out[k] = q[k];
    return true;
}

static rv_result frustum_from_rows(const double rows[4][4], rv_clip clip, rv_frustum *out);

rv_result rv_frustum_from_view_projection(const float view_projection[16], rv_clip clip, rv_frustum *out)
{
    if (view_projection == NULL || out == NULL)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(view_projection, 16))
        return RV_ERR_NOT_FINITE;
    /* Column-major: row i of M is (m[i], m[4 + i], m[8 + i], m[12 + i]); rows 0..3 are
     * clip x, y, z, w as linear forms of the world point (Gribb & Hartmann 2001). */
    double rows[4][4];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            rows[i][k] = (double)view_projection[k * 4 + i];
    return frustum_from_rows((const double(*)[4])rows, clip, out);
}

rv_result rvi_frustum_from_view_projection_d(const double view_projection[16], rv_clip clip, rv_frustum *out)
{
    double rows[4][4];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) {
            rows[i][k] = view_projection[k * 4 + i];
            if (!isfinite(rows[i][k]))
                return RV_ERR_NOT_FINITE;
        }
    return frustum_from_rows((const double(*)[4])rows, clip, out);
}

static rv_result frustum_from_rows(const double rows[4][4], rv_clip clip, rv_frustum *out)
{
    double global_ref = 0.0;
    for (int i = 0; i < 4; i++)
        global_ref = fmax(global_ref, row_xyz_length(rows[i]));

    rv_frustum f = {0};
    uint32_t mask = 0;
    /* x and y: -w <= x <= w whatever the depth convention. */
    mask |= (uint32_t)make_plane(rows, 3, 1.0, 0, 1.0, global_ref, f.planes[PLANE_LEFT]) << PLANE_LEFT;
    mask |= (uint32_t)make_plane(rows, 3, 1.0, 0, -1.0, global_ref, f.planes[PLANE_RIGHT]) << PLANE_RIGHT;
    mask |= (uint32_t)make_plane(rows, 3, 1.0, 1, 1.0, global_ref, f.planes[PLANE_BOTTOM]) << PLANE_BOTTOM;
    mask |= (uint32_t)make_plane(rows, 3, 1.0, 1, -1.0, global_ref, f.planes[PLANE_TOP]) << PLANE_TOP;

    /* Depth: the volume is lo * w <= z <= w, lo = -1 (OpenGL) or 0 (zero-to-one). The
     * "z >= lo * w" side holds the near plane unless depth is reversed. */
    bool low_ok, high_ok;
    float low_plane[4] = {0}, high_plane[4] = {0};
    if (clip.depth_zero_to_one)
        low_ok = make_plane(rows, 2, 1.0, 2, 0.0, global_ref, low_plane);   /* z >= 0 */
    else
        low_ok = make_plane(rows, 3, 1.0, 2, 1.0, global_ref, low_plane);   /* z >= -w */
    high_ok = make_plane(rows, 3, 1.0, 2, -1.0, global_ref, high_plane);    /* z <= w */
    const float *near_plane = clip.reversed_z ? high_plane : low_plane;
    const float *far_plane = clip.reversed_z ? low_plane : high_plane;
    bool near_ok = clip.reversed_z ? high_ok : low_ok;
    bool far_ok = clip.reversed_z ? low_ok : high_ok;
    for (int k = 0; k < 4; k++) {
        f.planes[PLANE_NEAR][k] = near_plane[k];
        f.planes[PLANE_FAR][k] = far_plane[k];
    }
    mask |= (uint32_t)near_ok << PLANE_NEAR;
    mask |= (uint32_t)far_ok << PLANE_FAR;

    f.plane_mask = mask;
    /* The w row of an affine (orthographic) view-projection has no xyz part. */
    f.orthographic = row_xyz_length(rows[3]) <= RVI_PLANE_GLOBAL_EPS * global_ref && rows[3][3] != 0.0;
    f.infinite_far = !far_ok && near_ok;
    *out = f;
    return RV_OK;
}

rv_containment rv_frustum_classify_sphere_masked(const rv_frustum *frustum, const float center[3],
                                                 float radius, uint32_t *mask)
{
    if (frustum == NULL || center == NULL || mask == NULL)
        return RV_INTERSECTING;
    uint32_t in_mask = *mask & frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    /* A NaN anywhere, or a negative radius, cannot be placed: draw it and keep testing. */
    if (!(radius >= 0.0f) || !rvi_finite_n(center, 3))
        return RV_INTERSECTING;
    float reach, t = radius + rvi_point_slack(center, &reach);
    bool placed = reach <= RVI_PLANE_REACH;
    uint32_t out_mask = in_mask;
    for (int i = 0; i < 6; i++) {
        if (!(in_mask & (1u << i)))
            continue;
        const float *pl = frustum->planes[i];
        float d = rvi_plane_distance(pl, center);
        /* The same sums as rv_cull_spheres: outside exactly where it culls. */
        if (placed && d + (t + rvi_plane_slack(pl[3])) < 0.0f)
            return RV_OUTSIDE;
        if (d >= radius)
            out_mask &= ~(1u << i);
    }
    *mask = out_mask;
    return out_mask == 0 ? RV_INSIDE : RV_INTERSECTING;
}

void rvi_frustum_widen(rv_frustum *f)
{
    for (int i = 0; i < 6; i++)
        if (f->plane_mask & (1u << i))
            f->planes[i][3] += rvi_plane_slack(f->planes[i][3]);
}

rv_containment rv_frustum_classify_sphere(const rv_frustum *frustum, const float center[3], float radius)
{
    if (frustum == NULL)
        return RV_INTERSECTING;
    uint32_t mask = frustum->plane_mask;
    return rv_frustum_classify_sphere_masked(frustum, center, radius, &mask);
}

rv_containment rv_frustum_classify_box(const rv_frustum *frustum, const float min[3], const float max[3])
{
    if (frustum == NULL || min == NULL || max == NULL)
        return RV_INTERSECTING;
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3))
        return RV_INTERSECTING;
    for (int k = 0; k < 3; k++)
        if (!(min[k] <= max[k]))
            return RV_INTERSECTING; /* an inverted box: nothing to place, draw it */
    bool inside = true;
    for (int i = 0; i < 6; i++) {
        if (!(frustum->plane_mask & (1u << i)))
            continue;
        const float *pl = frustum->planes[i];
        /* Farthest vertex along the normal (p) and nearest (n). */
        float p[3], n[3];
        for (int k = 0; k < 3; k++) {
            p[k] = pl[k] >= 0.0f ? max[k] : min[k];
            n[k] = pl[k] >= 0.0f ? min[k] : max[k];
        }
        float reach, t = rvi_point_slack(p, &reach);
        if (reach <= RVI_PLANE_REACH && rvi_plane_distance(pl, p) + (t + rvi_plane_slack(pl[3])) < 0.0f)
            return RV_OUTSIDE;
        if (!(rvi_plane_distance(pl, n) >= 0.0f))
            inside = false;
    }
    return inside ? RV_INSIDE : RV_INTERSECTING;
}

bool rvi_oriented_box_outside(const rv_frustum *f, const float m[16], const float mn[3], const float mx[3])
{
    /* The box's centre and half axes in world space, in double. */
    double c[3], h[3][3];
    for (int r = 0; r < 3; r++) {
        c[r] = m[12 + r];
        for (int k = 0; k < 3; k++) {
            c[r] += (double)m[k * 4 + r] * (0.5 * ((double)mn[k] + mx[k]));
            h[k][r] = (double)m[k * 4 + r] * (0.5 * ((double)mx[k] - mn[k]));
        }
    }
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *pl = f->planes[i];
        double s = pl[3], reach = 0, mag = fabs(pl[3]);
        for (int k = 0; k < 3; k++) {
            s += pl[k] * c[k];
            mag += fabs(pl[k] * c[k]);
            reach += fabs(pl[0] * h[k][0] + pl[1] * h[k][1] + pl[2] * h[k][2]);
        }
        /* The farthest point along the inward normal is s + reach from the plane. The
         * margin is far above the rounding of these sums and of the float matrix's own
         * products, as the world box's widening was. */
        if (s + reach < -1e-6 * (mag + reach) - 1e-30)
            return true;
    }
    return false;
}
