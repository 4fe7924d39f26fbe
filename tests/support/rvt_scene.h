/* Scene fixtures every suite builds from: worlds, nodes, objects (a node with a position
 * and a sphere), cameras and frusta. Each asserts that the calls it makes succeed.
 * Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef RVT_SCENE_H
#define RVT_SCENE_H

#include "rvis.h"

/* A world from desc (NULL: every default). */
rv_world *rvt_world(const rv_world_desc *desc);
/* A world with this LOD configuration (NULL: the defaults). */
rv_world *rvt_world_lod(const rv_lod_desc *lod);
/* A world with a main-view occlusion buffer this wide (0: none). */
rv_world *rvt_world_occlusion(uint32_t width);

/* A node under parent (RV_NODE_NONE: a root), identity, without geometry. */
rv_node rvt_node(rv_world *w, rv_node parent);
void rvt_set_position(rv_world *w, rv_node n, float x, float y, float z);
/* The node's own geometry: a local sphere at its origin. */
void rvt_set_sphere(rv_world *w, rv_node n, float radius);
/* A node at (x, y, z) under parent whose geometry is a sphere of radius at its origin;
 * radius < 0: without geometry. */
rv_node rvt_object(rv_world *w, rv_node parent, float x, float y, float z, float radius);

/* A right-handed view (column-major) at eye looking at target, +Y up (+Z when looking
 * straight up or down), and an OpenGL perspective projection. */
void rvt_look_at(const float eye[3], const float target[3], float view[16]);
void rvt_perspective(float fov_y, float aspect, float near, float far, float projection[16]);

/* A frame's camera: at eye looking at target, fov_y radians, 16:9, near 0.1, far 1000,
 * 1280 x 720, at time_ms. v points into the struct (do not copy it apart). */
typedef struct rvt_camera {
    float view[16];
    float projection[16];
    rv_view v;
} rvt_camera;
void rvt_camera_make(rvt_camera *c, const float eye[3], const float target[3], float fov_y, double time_ms);

/* The frustum of an OpenGL camera at eye looking at target: fov_y radians, 16:9, near 0.1. */
rv_frustum rvt_frustum(const float eye[3], const float target[3], float fov_y, float far);

#endif
