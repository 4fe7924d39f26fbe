/* rvis-walk: the view of one frame (camera matrices), shared by drive.c, the oracle and
 * the reports. OpenGL clip convention (depth -1..1), column-major matrices. */
#ifndef RVW_VIEW_H
#define RVW_VIEW_H

#include "level.h"

#include <stdint.h>

typedef struct rvw_view {
    uint32_t frame;
    float eye[3];
    float forward[3];
    float view[16];             /* world -> eye; looks down -Z, +Y up */
    float projection[16];       /* OpenGL perspective */
    float view_projection[16];  /* projection * view */
    uint32_t width, height;     /* viewport, pixels */
    float fov_y;                /* radians */
    float near_plane, far_plane;
    double time_ms;             /* frame / 60 s */
} rvw_view;

/* The view of frame f of level's path for a width x height viewport. */
void rvw_view_make(const rvw_level *level, uint32_t frame, uint32_t width, uint32_t height,
                   rvw_view *out);

/* The view of any camera (a free-flying one, say) for a width x height viewport, with
 * level's projection; frame and time_ms as rvw_view_make would set them for frame. */
void rvw_view_from_camera(const rvw_level *level, const rvw_camera *camera, uint32_t frame,
                          uint32_t width, uint32_t height, rvw_view *out);

/* out = a * b (column-major 4x4). out may not alias a or b. */
void rvw_mat4_mul(const float a[16], const float b[16], float out[16]);

#endif
