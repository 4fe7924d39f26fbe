/* Internal interface of the frustum module (frustum.c, frustum_simd.c). */
#ifndef RVI_FRUSTUM_H
#define RVI_FRUSTUM_H

#include "rvis.h"
#include "core/check.h"

#include <math.h>
#include <stdbool.h>

/* The six plane bits of rv_frustum.plane_mask. */
#define RVI_FRUSTUM_ALL_PLANES 0x3Fu

/* Signed distance of a point from a plane: the float expression every sphere test of rvis
 * uses (frustum_simd.c repeats it lane for lane; partition gating uses it too). */
static inline float rvi_plane_distance(const float plane[4], const float p[3])
{
    return ((plane[0] * p[0] + plane[1] * p[1]) + plane[2] * p[2]) + plane[3];
}

/* The rounding of rvi_plane_distance at a point p against the exact distance of p from the
 * exact plane of the frustum's matrix is below 5 units of float rounding (2^-24) of
 * (|p.x| + |p.y| + |p.z| + |w|): four products and three sums, and the plane's own rounding
 * to float (its normal is unit length, so |a|, |b|, |c| <= 1). The calls hosts make with a
 * frustum (rv_cull_spheres, rv_frustum_classify_*) add this slack, 8 units, to what must
 * lie outside, so nothing that meets the exact frustum is called outside however far from
 * the origin; the frame's walk tests its nodes' spheres, padded when they are made
 * (scene_update.c), as they are. */
#define RVI_PLANE_SLACK 4.76837158203125e-7f /* 8 * 2^-24 */
/* Points whose |x| + |y| + |z| passes this are never called outside by those calls: their
 * distances come near the float range's end. */
#define RVI_PLANE_REACH 1e18f
/* Below the normal range rounding is absolute: a product of subnormals is off by up to
 * 2^-150, and flushed to zero (FTZ/DAZ, which engines set) by up to FLT_MIN each. Four
 * FLT_MIN cover the three products and the constant. */
#define RVI_PLANE_FLOOR 0x1p-124f /* 4 * FLT_MIN */

/* A plane's own part of the slack, from its constant w, in the order every path computes
 * it: RVI_PLANE_SLACK * |w| + RVI_PLANE_FLOOR. */
static inline float rvi_plane_slack(float w)
{
    return RVI_PLANE_SLACK * fabsf(w) + RVI_PLANE_FLOOR;
}

/* RVI_PLANE_SLACK times |p.x| + |p.y| + |p.z|, the point's part of the slack, in the order
 * every path of rv_cull_spheres computes it. */
static inline float rvi_point_slack(const float p[3], float *out_reach)
{
    float m = (fabsf(p[0]) + fabsf(p[1])) + fabsf(p[2]);
    *out_reach = m;
    return RVI_PLANE_SLACK * m;
}

/* True when a sphere at plane distance d (rvi_plane_distance) with this radius lies wholly
 * outside the plane. A distance of -infinity is not outside: the terms were finite and
 * their sum left the float range, so the true distance is unknown (a centre near 1e38
 * against a tilted plane). */
static inline bool rvi_outside_plane(float d, float radius)
{
    return (d < -radius) & (d > -INFINITY);
}

/* True when every plane in f's plane_mask is finite: the walks that take a host's frustum
 * refuse one that is not (RV_ERR_NOT_FINITE), where a per-object test would only draw. */
static inline bool rvi_frustum_planes_finite(const rv_frustum *f)
{
    for (int i = 0; i < 6; i++)
        if ((f->plane_mask & (1u << i)) && !rvi_finite_n(f->planes[i], 4))
            return false;
    return true;
}

/* A host's frustum as the walks take it (rv_visit_visible, rv_hlod_select, the partition
 * gate): mask bits above the six planes are RV_ERR_INVALID_ARG, as in rv_cull_spheres (no
 * such plane), a plane of the mask that is not finite RV_ERR_NOT_FINITE. f not NULL. */
static inline rv_result rvi_frustum_check(const rv_frustum *f)
{
    if (f->plane_mask & ~RVI_FRUSTUM_ALL_PLANES)
        return RV_ERR_INVALID_ARG;
    return rvi_frustum_planes_finite(f) ? RV_OK : RV_ERR_NOT_FINITE;
}

/* Moves each valid plane of f outward by rvi_plane_slack(w), its constant's share of the
 * rounding slack: the frame's walks test node spheres padded for the rest (scene_update.c:
 * 4 FLT_EPSILON of |x| + |y| + |z| + r) against these planes, so a node that meets the
 * exact frustum is never culled however far from the origin. */
void rvi_frustum_widen(rv_frustum *f);

/* The walks' sphere test per node, for pointers known valid: rv_frustum_classify_sphere_masked
 * without RVI_PLANE_SLACK, for spheres padded when they were made. */
static inline rv_containment rvi_classify_sphere_masked(const rv_frustum *frustum, const float center[3],
                                                        float radius, uint32_t *mask)
{
    uint32_t in_mask = *mask & frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    /* A NaN anywhere, or a negative radius, cannot be placed: draw it and keep testing. */
    if (!(radius >= 0.0f) || !rvi_finite_n(center, 3))
        return RV_INTERSECTING;
    uint32_t out_mask = in_mask;
    for (int i = 0; i < 6; i++) {
        if (!(in_mask & (1u << i)))
            continue;
        float d = rvi_plane_distance(frustum->planes[i], center);
        if (rvi_outside_plane(d, radius))
            return RV_OUTSIDE;
        if (d >= radius)
            out_mask &= ~(1u << i);
    }
    *mask = out_mask;
    return out_mask == 0 ? RV_INSIDE : RV_INTERSECTING;
}

/* Code paths of rv_cull_spheres. Every level computes the same float arithmetic, so each
 * keeps exactly the spheres the scalar level keeps (tests force every level the CPU has). */
typedef enum rvi_simd_level {
    RVI_SIMD_SCALAR = 0,
    RVI_SIMD_SSE2 = 1,   /* 4 lanes; x86 only */
    RVI_SIMD_AVX2 = 2,   /* 8 lanes, permute-table compaction */
    RVI_SIMD_AVX512 = 3, /* 16 lanes, compress compaction (AVX-512F) */
    RVI_SIMD_LEVEL_COUNT
} rvi_simd_level;

/* The best level this CPU (and OS) runs, asked of the CPU on each call (no cached state). */
rvi_simd_level rvi_simd_best_level(void);

/* "scalar", "sse2", "avx2", "avx512"; "unknown" outside the enum. */
const char *rvi_simd_level_name(rvi_simd_level level);

/* rv_cull_spheres / rv_cull_spheres_soa on a forced level. Same arguments, checks and
 * results; RV_ERR_INVALID_ARG as well when the CPU cannot run the level. */
rv_result rvi_cull_spheres_level(rvi_simd_level level, const rv_frustum *frustum, float *spheres,
                                 uint32_t count, void *payload, size_t payload_stride,
                                 uint32_t *out_kept);
rv_result rvi_cull_spheres_soa_level(rvi_simd_level level, const rv_frustum *frustum, float *x,
                                     float *y, float *z, float *radius, uint32_t count,
                                     void *payload, size_t payload_stride, uint32_t *out_kept);

/* rv_frustum_from_view_projection for a view-projection held in double (column-major):
 * the frame multiplies projection by view in double, because in float the far plane of a
 * camera a million units from the origin cancels away (row w minus row z). Errors:
 * RV_ERR_NOT_FINITE, and those of the float form. */
rv_result rvi_frustum_from_view_projection_d(const double view_projection[16], rv_clip clip, rv_frustum *out);

/* A local box (mn, mx) under the affine matrix m (column-major) against the frustum's
 * planes as the oriented box it is: true when it lies wholly outside one plane (centre
 * distance plus the half axes' reach along the plane's normal, in double, with a relative
 * margin for rounding). Conservative: NaN anywhere answers false. */
bool rvi_oriented_box_outside(const rv_frustum *frustum, const float m[16], const float mn[3], const float mx[3]);

#endif
