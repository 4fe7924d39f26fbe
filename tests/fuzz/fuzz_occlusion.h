/* What fuzz_occlusion.c and its depth-feed section (fuzz_occlusion_feed.c) share: the
 * sizes, the decoded view, the reference's occluders and the double-precision 4x4 algebra. */
#ifndef RVIS_FUZZ_OCCLUSION_H
#define RVIS_FUZZ_OCCLUSION_H

#include "rvis.h"
#include "fuzz_support.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_ASSERT(cond, ...)                                                               \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_occlusion: %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

enum { MAX_OCCLUDERS = 8, MAX_OBJECTS = 8, SAMPLES_PER_AXIS = 9, MAX_PLANES = 10, MAX_VERTS = 8, MAX_TRIS = 12 };
/* A grid mesh: up to 10 x 10 quads (dense on a small buffer: drawn by its outline), plus a
 * repeated seam column. */
enum { MAX_GRID = 10, MAX_GRID_VERTS = (MAX_GRID + 1) * (MAX_GRID + 2), MAX_MESH_TRIS = 2 * MAX_GRID * MAX_GRID };
enum { SHAPE_BOX = 0, SHAPE_CONVEX, SHAPE_CLOSED_MESH, SHAPE_OPEN_MESH, SHAPE_GRID_MESH };

/* ---- small double-precision linear algebra (column-major 4x4) ------------------------ */

static inline void mat_mul(const double a[16], const double b[16], double out[16])
{
    double r[16];
    for (int c = 0; c < 4; c++)
        for (int row = 0; row < 4; row++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += a[k * 4 + row] * b[c * 4 + k];
            r[c * 4 + row] = s;
        }
    memcpy(out, r, sizeof r);
}

static inline void mat_apply(const double m[16], const double p[4], double out[4])
{
    for (int row = 0; row < 4; row++)
        out[row] = m[row] * p[0] + m[4 + row] * p[1] + m[8 + row] * p[2] + m[12 + row] * p[3];
}

/* General 4x4 inverse (cofactors); false when singular. */
static inline int mat_inverse(const double m[16], double inv[16])
{
    double a[16];
    a[0] = m[5] * m[10] * m[15] - m[5] * m[11] * m[14] - m[9] * m[6] * m[15] + m[9] * m[7] * m[14] + m[13] * m[6] * m[11] - m[13] * m[7] * m[10];
    a[4] = -m[4] * m[10] * m[15] + m[4] * m[11] * m[14] + m[8] * m[6] * m[15] - m[8] * m[7] * m[14] - m[12] * m[6] * m[11] + m[12] * m[7] * m[10];
    a[8] = m[4] * m[9] * m[15] - m[4] * m[11] * m[13] - m[8] * m[5] * m[15] + m[8] * m[7] * m[13] + m[12] * m[5] * m[11] - m[12] * m[7] * m[9];
    a[12] = -m[4] * m[9] * m[14] + m[4] * m[10] * m[13] + m[8] * m[5] * m[14] - m[8] * m[6] * m[13] - m[12] * m[5] * m[10] + m[12] * m[6] * m[9];
    a[1] = -m[1] * m[10] * m[15] + m[1] * m[11] * m[14] + m[9] * m[2] * m[15] - m[9] * m[3] * m[14] - m[13] * m[2] * m[11] + m[13] * m[3] * m[10];
    a[5] = m[0] * m[10] * m[15] - m[0] * m[11] * m[14] - m[8] * m[2] * m[15] + m[8] * m[3] * m[14] + m[12] * m[2] * m[11] - m[12] * m[3] * m[10];
    a[9] = -m[0] * m[9] * m[15] + m[0] * m[11] * m[13] + m[8] * m[1] * m[15] - m[8] * m[3] * m[13] - m[12] * m[1] * m[11] + m[12] * m[3] * m[9];
    a[13] = m[0] * m[9] * m[14] - m[0] * m[10] * m[13] - m[8] * m[1] * m[14] + m[8] * m[2] * m[13] + m[12] * m[1] * m[10] - m[12] * m[2] * m[9];
    a[2] = m[1] * m[6] * m[15] - m[1] * m[7] * m[14] - m[5] * m[2] * m[15] + m[5] * m[3] * m[14] + m[13] * m[2] * m[7] - m[13] * m[3] * m[6];
    a[6] = -m[0] * m[6] * m[15] + m[0] * m[7] * m[14] + m[4] * m[2] * m[15] - m[4] * m[3] * m[14] - m[12] * m[2] * m[7] + m[12] * m[3] * m[6];
    a[10] = m[0] * m[5] * m[15] - m[0] * m[7] * m[13] - m[4] * m[1] * m[15] + m[4] * m[3] * m[13] + m[12] * m[1] * m[7] - m[12] * m[3] * m[5];
    a[14] = -m[0] * m[5] * m[14] + m[0] * m[6] * m[13] + m[4] * m[1] * m[14] - m[4] * m[2] * m[13] - m[12] * m[1] * m[6] + m[12] * m[2] * m[5];
    a[3] = -m[1] * m[6] * m[11] + m[1] * m[7] * m[10] + m[5] * m[2] * m[11] - m[5] * m[3] * m[10] - m[9] * m[2] * m[7] + m[9] * m[3] * m[6];
    a[7] = m[0] * m[6] * m[11] - m[0] * m[7] * m[10] - m[4] * m[2] * m[11] + m[4] * m[3] * m[10] + m[8] * m[2] * m[7] - m[8] * m[3] * m[6];
    a[11] = -m[0] * m[5] * m[11] + m[0] * m[7] * m[9] + m[4] * m[1] * m[11] - m[4] * m[3] * m[9] - m[8] * m[1] * m[7] + m[8] * m[3] * m[5];
    a[15] = m[0] * m[5] * m[10] - m[0] * m[6] * m[9] - m[4] * m[1] * m[10] + m[4] * m[2] * m[9] + m[8] * m[1] * m[6] - m[8] * m[2] * m[5];
    double det = m[0] * a[0] + m[1] * a[4] + m[2] * a[8] + m[3] * a[12];
    if (!(fabs(det) > 1e-12))
        return 0;
    for (int i = 0; i < 16; i++)
        inv[i] = a[i] / det;
    return 1;
}

typedef struct fz_view {
    double vp[16], inv_vp[16];
    float vpf[16];
    rv_clip clip;
    float aspect;
    int ortho, infinite;
    double near_ndc, far_ndc; /* NDC depth of the near and far planes */
} fz_view;

typedef struct fz_box {
    int kind;
    double min[3], max[3];
    double m[16], inv[16];
    int invertible;
    uint32_t plane_count; /* convex: local planes, n . p <= d */
    double planes[MAX_PLANES][4];
    uint32_t tri_count;   /* meshes: world triangles */
    double tri[MAX_MESH_TRIS][3][3];
} fz_box;

/* The depth-feed section (fuzz_occlusion_feed.c). */
#include "fuzz_feed.h"

typedef struct fzo_feed {
    fzf_image image;
    rv_result result;   /* of rv_occlusion_feed_depth */
    int reference;      /* the feed was used and its plane is in the reference (a quad) */
    int unknown;        /* the feed was used and its texels are noise: no reference this frame */
} fzo_feed;

void fzo_feed_frame(fz_input *in, rv_occlusion *occ, const rv_occlusion_desc *desc, const fz_view *v,
                    fzo_feed *out, fz_box *quad);
void fzo_feed_check(rv_occlusion *occ, const rv_occlusion_desc *desc, fzo_feed *feed);

#endif
