/* Shared by the occlusion suites: cameras built in double and handed over as float like a
 * host would, and the slow, obviously-correct reference the library is checked against:
 * a point is seen when it lies in the view volume and the segment from the near plane to
 * it, along its sight line, crosses no occluder's surface (every box, convex solid and
 * mesh triangle drawn, both sides, exactly). Include after <setjmp.h>, <stdarg.h>,
 * <stddef.h> and <cmocka.h>. */
#ifndef RVT_OCCLUSION_REF_H
#define RVT_OCCLUSION_REF_H

#include "rvis.h"

#include <stdbool.h>
#include <stdint.h>

#define PI 3.14159265358979323846

/* ---- cameras ----------------------------------------------------------------------------- */

typedef struct camera {
    double eye[3], target[3], up[3];
    double fov_y, aspect, znear, zfar; /* zfar <= 0: infinite */
    double ortho_height;               /* > 0: orthographic with this view height */
    rv_clip clip;
    double shift[2];                   /* image shift in texels of a buffer of width shift_w (0: none) */
    double shift_w, shift_h;
} camera;

void normalize3(double v[3]);
void cross3(const double a[3], const double b[3], double out[3]);
/* Column-major view-projection of a right-handed look-at camera (looking down -z in view
 * space) under any depth convention; rows x, y, w never depend on the convention. */
void camera_matrix(const camera *c, float out[16]);
/* 60 degrees, 16:9, near 0.1, far 1000, OpenGL depth, y up. */
camera look(double ex, double ey, double ez, double tx, double ty, double tz);
/* The four depth conventions: OpenGL, zero-to-one, and each reversed. */
extern const rv_clip ref_conventions[4];
/* A random camera for the property tests: eye in [-20, 20] x [0, 10] x [-20, 20] looking
 * along dir (a random unit vector, mostly level), any convention, a finite or infinite far
 * plane, sometimes orthographic. */
void random_camera(uint64_t *s, camera *c, double dir[3]);
/* make_occlusion's rv_occlusion_desc.fine_tests and .fusion (0 unless a test sets them). */
extern uint32_t rvt_fine_tests;
extern rv_fusion rvt_fusion;
rv_occlusion *make_occlusion(uint32_t width);
void begin_camera(rv_occlusion *occ, const camera *c);
bool box_visible(rv_occlusion *occ, const float mn[3], const float mx[3], const float *m);

/* ---- the reference --------------------------------------------------------------------- */

enum { REF_BOX = 0, REF_CONVEX, REF_MESH };
#define REF_MAX_PLANES 32

/* An occluder or an object for the reference. Boxes (kind REF_BOX, the default of a zeroed
 * struct) use min/max; convex solids their planes (outward normals, n . p <= d inside);
 * meshes borrow positions and indices (the test owns them). min/max bound every kind
 * locally. The same shape is handed to the library by ref_add. */
typedef struct ref_box {
    float min[3], max[3];
    float matrix[16];
    bool has_matrix;
    double inv[12]; /* world -> local, rows of a 3x4 affine map */
    int kind;
    uint32_t flags;  /* the library's RV_OCCLUDER_* flags (the reference ignores them) */
    uint32_t plane_count;
    float planes[REF_MAX_PLANES][4];
    uint32_t vertex_count, index_count;
    const float (*positions)[3];
    const uint32_t *indices;
    double centre[3], radius; /* world bounding sphere (ref_box_init) */
} ref_box;

/* Fills inv and the bounding sphere: call after min, max (bounds of any kind), matrix and
 * has_matrix are set. */
void ref_box_init(ref_box *b);
void ref_local_to_world(const ref_box *b, const double l[3], double w[3]);
/* Is the segment q -> p (world) crossed by the shape's surface at a parameter t in [0, 1)?
 * A renderer drawing every triangle of the shape would then show the shape, not p. */
bool ref_blocks(const ref_box *b, const double q[3], const double p[3]);

typedef struct ref_view {
    double vp[16], inv[16];
    rv_clip clip;
} ref_view;

void invert4(const double m[16], double inv[16]);
void ref_view_init(ref_view *v, const float vp[16], rv_clip clip);
/* Is world point p seen by the camera past every occluder? In the view volume (the host's
 * float matrix, in double), and no occluder surface between the near plane and p on the
 * ray through p. */
bool ref_point_seen(const ref_view *v, const ref_box *occ, int n_occ, const double p[3]);
/* Does the reference see any of the object (a box)? Samples the 8 corners, points along
 * the 12 edges and jittered grids on the 6 faces, and for a box reaching before the near
 * plane a jittered grid of the near plane just beyond it (its cross-section there, which
 * the camera sees where the rest is clipped away). */
bool ref_object_seen(const ref_view *v, const ref_box *occ, int n_occ, const ref_box *obj, uint64_t *seed, int grid);

void random_rotation(uint64_t *s, double r[3][3]);
/* A box of half sizes h around local origin, placed at centre: an AABB, or (with_matrix)
 * rotated and scaled by a matrix. */
void place_box(uint64_t *s, ref_box *b, const double centre[3], const double h[3], bool with_matrix);

/* An object somewhere behind, beside or around occluder o as the camera sees it (along fwd
 * for an orthographic camera, from the eye otherwise): up to 15 of its sizes behind it,
 * sometimes flat, with a matrix sometimes when allow_matrix. */
void place_object_near(uint64_t *s, const ref_box *o, const camera *cam, const double fwd[3], ref_box *obj,
                       bool allow_matrix);
/* The segment q -> p (world) against a box's surface (kind REF_BOX, every face drawn from
 * both sides): its entry and exit parameters, false when it misses. */
bool ref_box_slab(const ref_box *b, const double q[3], const double p[3], double *ta, double *tb);

/* True when some corner of the object (a box) is not strictly beyond the view's near
 * plane (or is behind the eye). */
bool ref_crosses_near(const ref_view *v, const ref_box *obj);

/* The surface of the box min..max as a closed mesh: each face n x n quads (1 <= n <=
 * REF_LATTICE_MAX), corners shared along the box's edges, wound counter-clockwise seen from
 * outside. pos holds 6 n^2 + 2 vertices at most, idx 36 n^2 indices; returns the vertex
 * count and sets *index_count. */
#define REF_LATTICE_MAX 10
uint32_t ref_lattice_box(const float min[3], const float max[3], int n, float (*pos)[3], uint32_t *idx,
                         uint32_t *index_count);

#endif
