/* rvis/frustum.h — Frustum planes, sphere and box classification, batch sphere culling.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_FRUSTUM_H
#define RVIS_FRUSTUM_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Classification of a bounding volume against a frustum. */
typedef enum rv_containment {
    RV_OUTSIDE = 0,      /* wholly outside at least one plane: cull */
    RV_INTERSECTING = 1, /* crosses at least one plane: draw */
    RV_INSIDE = 2        /* wholly inside every plane: draw, and children need no test */
} rv_containment;

/* Six world-space planes, each (a, b, c, d) with unit normal (a, b, c) pointing into the
 * frustum: a point p is inside a plane when a*px + b*py + c*pz + d >= 0. Order: left,
 * right, bottom, top, near, far. plane_mask bit i is set when plane i is valid; a degenerate
 * plane (e.g. the far plane of an infinite projection) is dropped from the mask, never
 * normalised to NaN. */
typedef struct rv_frustum {
    float planes[6][4];
    uint32_t plane_mask;
    bool orthographic; /* recognised from the matrix (w row = 0 0 0 1) */
    bool infinite_far; /* recognised from the matrix; the far plane is dropped. A finite
                          far plane beyond about 10^6 times the near distance cannot be
                          told from infinite in float and is dropped too (nothing beyond it
                          is culled) */
} rv_frustum;


/* Extracts the six planes of a view-projection matrix (column-major float[16], clip =
 * M * world point) under the given depth convention (Gribb & Hartmann 2001, generalised to
 * 0..1 and reversed depth). Planes are normalised to unit normals pointing inward. An
 * infinite far plane or any other degenerate plane is dropped from plane_mask.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (a NaN/Inf element); *out unchanged. */
RV_API rv_result rv_frustum_from_view_projection(const float view_projection[16], rv_clip clip, rv_frustum *out);

/* Classifies a world-space sphere (centre float[3], radius >= 0, world units). Conservative:
 * RV_OUTSIDE only when the sphere lies wholly outside one valid plane by more than the
 * float rounding of its plane distance (the test of rv_cull_spheres, below: exactly the
 * spheres it culls), so a sphere that meets the exact frustum is never outside, however far
 * from the origin; RV_INSIDE when d >= radius for every valid plane. A NaN/Inf centre, a NaN or negative radius, or a NULL frustum/centre answers
 * RV_INTERSECTING (draw). A frustum with plane_mask 0 (e.g. from a zero matrix) answers
 * RV_INSIDE for every valid sphere. */
RV_API rv_containment rv_frustum_classify_sphere(const rv_frustum *frustum, const float center[3], float radius);

/* As rv_frustum_classify_sphere, testing only the planes whose bits are set in *mask, and
 * clearing from *mask each plane the sphere is wholly inside of, so children of a node need
 * not test it again (plane masking, Assarsson & Möller 2000). Start with frustum->plane_mask.
 * Bits not in frustum->plane_mask are cleared from *mask. *mask is left unchanged when the
 * answer is RV_OUTSIDE or the input is invalid (answered RV_INTERSECTING as above; a NULL
 * mask also answers RV_INTERSECTING). RV_INSIDE exactly when *mask becomes 0. */
RV_API rv_containment rv_frustum_classify_sphere_masked(const rv_frustum *frustum, const float center[3],
                                                        float radius, uint32_t *mask);

/* Classifies an axis-aligned world box (min float[3] <= max float[3], world units) with the
 * nearest/farthest-vertex test (Greene 1994; Haines & Wallace). Conservative as above: the
 * farthest vertex along a plane's normal is outside only by more than the same rounding
 * slack (a radius 0 sphere there), so a box that meets the exact frustum is never outside;
 * a NaN/Inf corner, min > max on an axis, or a NULL argument answers RV_INTERSECTING. */
RV_API rv_containment rv_frustum_classify_box(const rv_frustum *frustum, const float min[3], const float max[3]);

/* Culls instance spheres against a frustum, compacting the kept ones in place: the first
 * *out_kept spheres (and payload items) are then the spheres that meet the frustum, in
 * their original order (stable); what lies beyond them is unspecified. The batch form of
 * rv_frustum_classify_sphere for instanced draws (docs/design.md §2).
 *
 * spheres: count * 4 floats, each sphere x, y, z, radius (world units), 4-byte aligned.
 * payload: NULL, or count items of payload_stride bytes each (e.g. a float[16] matrix per
 *   instance, stride 64), moved with their spheres; it must not overlap spheres.
 * out_kept: receives the number kept.
 *
 * The test, exactly, in every code path, in float with separate multiplies and adds (never
 * fused): per sphere m = (|x| + |y|) + |z| and t = radius + 4.76837158203125e-7f * m; for
 * each plane in frustum->plane_mask, d = ((a*x + b*y) + c*z) + w and
 * s = 4.76837158203125e-7f * |w| + 0x1p-124f; the sphere is culled when radius >= 0,
 * m <= 1e18 and d + (t + s) < 0 for some plane. The factor is 8 units of float rounding
 * (8 * 2^-24): the rounding of d, and of the planes to float, stays below 5 of them times
 * (|x| + |y| + |z| + |w|) (the normals are unit length); the last term, 4 FLT_MIN, covers
 * rounding below the normal range, which is absolute (subnormal coordinates, and FTZ/DAZ
 * modes that flush them to zero). So a sphere that meets the exact frustum is never
 * culled, even a metre from an eye 1e6 units from the origin, where d is off by several
 * centimetres; the price is spheres within that slack of a plane, outside it, kept. A sphere with a NaN anywhere, a negative radius or |x| + |y| + |z| beyond 1e18
 * is kept (drawn). A plane_mask of 0 keeps everything.
 * Runs the widest path the CPU offers (AVX-512F, AVX2, SSE2 or scalar, chosen per call
 * from the CPU's feature bits); every path keeps exactly the same spheres.
 *
 * Ranges: the call touches only [spheres, spheres + 4 * count) and the payload items of
 * that range, so a job system may split an array into ranges and cull each on its own
 * thread (spheres + 4 * begin, end - begin, payload + begin * stride); each range is
 * compacted within itself, and the host draws or joins the kept prefixes.
 *
 * Errors (nothing is written, *out_kept untouched): RV_ERR_INVALID_ARG (frustum or
 * out_kept NULL; spheres NULL with count > 0; payload with payload_stride 0 or
 * count * payload_stride beyond SIZE_MAX; plane_mask bits above bit 5),
 * RV_ERR_NOT_FINITE (a plane in plane_mask holds a NaN or an infinity).
 * count 0 is RV_OK with *out_kept = 0 (spheres may then be NULL). No allocation;
 * thread-safe on disjoint arrays. */
RV_API rv_result rv_cull_spheres(const rv_frustum *frustum, float *spheres, uint32_t count, void *payload,
                                 size_t payload_stride, uint32_t *out_kept);

/* rv_cull_spheres on structure-of-arrays spheres: x, y, z and radius are count floats
 * each (world units), four distinct non-overlapping arrays, all compacted together with
 * the optional payload. The hot-loop form: each vector load is 4 to 16 spheres of one
 * component, with no transpose. Same test, order, ranges and thread rules as
 * rv_cull_spheres; the payload must not overlap the four arrays. Errors as rv_cull_spheres
 * (RV_ERR_INVALID_ARG also when any of x, y, z, radius is NULL, or two of them overlap,
 * with count > 0). */
RV_API rv_result rv_cull_spheres_soa(const rv_frustum *frustum, float *x, float *y, float *z, float *radius,
                                     uint32_t count, void *payload, size_t payload_stride,
                                     uint32_t *out_kept);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_FRUSTUM_H */
