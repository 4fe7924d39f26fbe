/* rvis-view: the OpenGL 3.3 core side. The level's triangles live in one vertex buffer in
 * object order (each object a contiguous run), so a draw item is one glDrawArrays and a set
 * of objects is one glMultiDrawArrays over merged runs. Nothing here calls rvis: the draw
 * list and the verdicts come from the walk's driver (drive.h).
 *
 * Three programs share one vertex shader (world position -> clip with the frame's
 * view-projection, the same float matrix the walk's oracle uses):
 *  - surface: flat shading from screen-space derivatives (the level has no normals),
 *    per-object tint, fog, and a screen-door dither for LOD / HLOD crossfades;
 *  - flat: one colour (outlines, the frozen frustum);
 *  - depth: no colour output; the GPU judge draws the whole scene's depth and its
 *    occlusion queries with this one program, so both passes compute identical depths. */
#ifndef RVV_RENDER_H
#define RVV_RENDER_H

#include "drive.h"
#include "level.h"
#include "view.h"

#include <epoxy/gl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How surfaces are coloured. */
typedef enum rvv_colouring {
    RVV_COLOUR_SHADED = 0,  /* by kind and orientation, lit */
    RVV_COLOUR_LOD,         /* by the LOD level rvis chose (HLOD stand-ins cyan) */
    RVV_COLOUR_VERDICT,     /* drawn objects grey-green; then every culled object filled in
                               red (occlusion) or blue (frustum) behind a strict depth test:
                               any red or blue on screen is a culled object that is visible */
    RVV_COLOUR_COUNT
} rvv_colouring;

extern const char *const rvv_colouring_names[RVV_COLOUR_COUNT];

typedef struct rvv_renderer {
    GLuint vao, vbo;
    GLuint surface_program, flat_program, depth_program;
    struct {
        GLint view_projection, colour, eye, sky, fog, fade, fade_coarse, tone, alpha;
    } surface;
    struct {
        GLint view_projection, colour;
    } flat;
    GLint depth_view_projection;
    GLuint lines_vao, lines_vbo;      /* the frozen frustum */
    uint32_t object_count;
    const rvw_level *level;
    GLint *run_first;                 /* scratch for merged runs (glMultiDrawArrays) */
    GLsizei *run_count;
    uint8_t *coarse;                  /* per object: its finest level drawn this frame */
    uint64_t *order;                  /* scratch: sort keys for the object order */
    uint32_t order_capacity;
    float sky[3];
    float fog_per_unit;               /* fog density: 1 / distance */
} rvv_renderer;

/* Uploads level's triangles and builds the programs (a current GL 3.3 core context is
 * needed). False with a one-line reason in err. */
bool rvv_renderer_init(rvv_renderer *r, const rvw_level *level, char *err, size_t errlen);
void rvv_renderer_free(rvv_renderer *r);

/* Uploads object's triangles again (a mover: the city's vehicles). */
void rvv_renderer_update_object(rvv_renderer *r, uint32_t object);

/* What to draw in a frame, and how. */
typedef struct rvv_scene_pass {
    const rvw_view *camera;           /* where the picture is taken from */
    const rvw_draw *draws;            /* rvis's draw list (or a frozen copy) */
    uint32_t draw_count;
    const uint8_t *verdict;           /* per object (rvw_verdict), for the verdict colouring */
    rvv_colouring colouring;
    bool scene_order;                 /* draw in object order instead of rvis's front to back */
    bool draw_frustum_culled;         /* also submit what the frustum culled (frustum "off");
                                         occlusion "off" rebuilds rvis's world without it */
} rvv_scene_pass;

/* Clears the bound framebuffer (viewport width x height) and draws the pass. Returns the
 * number of draw calls issued. */
uint32_t rvv_render_scene(rvv_renderer *r, const rvv_scene_pass *pass, uint32_t width, uint32_t height);

/* Draws every object whose verdict is culled (frustum or occlusion, each when asked) as
 * line outlines of its triangles, through walls (no depth test), from camera. */
void rvv_render_outlines(rvv_renderer *r, const rvw_view *camera, const uint8_t *verdict,
                         bool frustum, bool occlusion);

/* Draws the frustum of view (the frozen culling view) as lines from camera, out to
 * `reach` world units. */
void rvv_render_frustum(rvv_renderer *r, const rvw_view *camera, const rvw_view *frozen, float reach);

/* Draws into the bound framebuffer's depth (colour writes off) every object with
 * include[i] != 0, with the depth program, as merged runs. Depth test LESS, depth writes on. */
void rvv_render_depth(rvv_renderer *r, const rvw_view *view, const uint8_t *include);

/* Draws object with the depth program under the current GL state (the judge sets depth
 * function and masks around it). */
void rvv_render_object_depth(rvv_renderer *r, uint32_t object);

/* Compiles and links a program from two sources; 0 with a reason in err on failure. */
GLuint rvv_program(const char *vertex, const char *fragment, char *err, size_t errlen);

#endif
