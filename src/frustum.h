/* Internal interface of the frustum module (frustum.c, frustum_simd.c). */
#ifndef RVI_FRUSTUM_H
#define RVI_FRUSTUM_H

#include "rvis.h"

/* The six plane bits of rv_frustum.plane_mask. */
#define RVI_FRUSTUM_ALL_PLANES 0x3Fu

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

#endif
