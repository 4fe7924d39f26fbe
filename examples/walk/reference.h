/* rvis-walk: the truth oracle. A plain, deliberately simple rasteriser that draws every
 * included object's triangles (both sides) into an id + depth buffer and counts, per
 * object, the pixels it wins. An object with at least one pixel is truly visible. It does
 * not use rvis and shares no code with it, so it can judge rvis's culling. */
#ifndef RVW_REFERENCE_H
#define RVW_REFERENCE_H

#include "level.h"

#include <stdbool.h>
#include <stdint.h>

/* Depth convention of the projection (same meaning as rvis's rv_clip; kept separate so the
 * oracle does not depend on the library it checks). */
typedef struct rvw_depth_convention {
    bool depth_zero_to_one;
    bool reversed_z;
} rvw_depth_convention;

typedef struct rvw_reference {
    uint32_t width, height;        /* pixels */
    float *inv_w;                  /* per pixel: 1/w of the nearest fragment; 0 = empty */
    uint32_t *ids;                 /* per pixel: object index + 1; 0 = empty */
    uint32_t *pixels;              /* per object: pixels won in the last render */
    uint32_t object_capacity;
    uint64_t triangles_drawn;      /* triangles that reached the rasteriser, last render */
    double *occluder_inv_w;        /* per pixel: 1/w of the nearest occluder (ideal occluder
                                      count; allocated on its first call); 0 = none */
    uint32_t *cover_stamp;         /* per pixel: the rvw_reference_cover call that counted it */
    uint32_t cover_calls;
    float *depth_target;           /* during rvw_reference_depth: the image it writes */
    bool depth_zero_to_one;        /* during rvw_reference_depth: its window-depth convention */
} rvw_reference;

bool rvw_reference_init(rvw_reference *ref, uint32_t width, uint32_t height);
void rvw_reference_free(rvw_reference *ref);

/* Renders every object i of level with include[i] != 0 (include NULL: every object) under
 * view_projection (column-major float[16], clip = M * (x, y, z, 1)). Triangles are clipped
 * against the near and far planes in clip space; a pixel is covered when its centre lies
 * inside or on the edge of a projected triangle (no fill rule: ties count); the nearest
 * fragment by 1/w wins (the first drawn on an exact tie). Fills ref->pixels[0 .. objects)
 * and returns how many objects won at least one pixel, or -1 when memory ran out. */
int64_t rvw_reference_render(rvw_reference *ref, const rvw_level *level,
                             const float view_projection[16], rvw_depth_convention clip,
                             const uint8_t *include);

/* Renders the included objects (include as above) as a GPU's depth-only pre-pass would,
 * at ref's resolution: the same clipping and pixel-centre coverage as the render, both
 * sides, the nearest fragment (by 1/w, in doubles) writing its window depth at the pixel
 * centre, rounded once to float: 0.5 z/w + 0.5 with OpenGL depth, z/w with zero-to-one.
 * Pixels nothing covers hold the clear value (1, or 0 with reversed-Z). depth holds width x
 * height floats, row 0 at NDC y = -1 (bottom-up, as glReadPixels reads it). Uses the
 * occluder buffer (the ideal bound's, so not between that and rvw_reference_covered_by_
 * ideal). Returns the pixels covered, or -1 when memory ran out. */
int64_t rvw_reference_depth(rvw_reference *ref, const rvw_level *level, const float view_projection[16],
                            rvw_depth_convention clip, const uint8_t *include, float *depth);

/* False when box lies wholly outside one clip plane (left, right, bottom, top, near, far)
 * under view_projection: the oracle's own frustum test (a box meeting no plane's outside
 * wholly may still miss the view near a corner, so this keeps a little more than exact). */
bool rvw_reference_box_in_view(const rvw_box *box, const float view_projection[16], rvw_depth_convention clip);

/* The ideal-occluder bound: what a perfect, pixel-exact occlusion culler would draw with
 * exactly these occluder boxes. Draws every box (both sides, the same clipping and pixel-
 * centre coverage as the render, exact 1/w in doubles) into an occluder depth buffer, then
 * counts the objects (include as above) with at least one covered pixel of their own
 * triangles that no occluder fragment lies in front of (objects are not depth-tested
 * against each other; an occluder nearer only by float rounding does not hide). With boxes,
 * each object's bounds (the box rvis tests) is drawn instead of its triangles: what a
 * pixel-exact test of those boxes would draw. visible, when not NULL, gets 1 / 0 per
 * object. Returns the count, or -1 when memory ran out. */
int64_t rvw_reference_ideal_occluders(rvw_reference *ref, const rvw_level *level,
                                      const float view_projection[16], rvw_depth_convention clip,
                                      const uint8_t *include, const rvw_box *occluders,
                                      uint32_t occluder_count, bool boxes, uint8_t *visible);

/* The same bound with occluders of any shape, in three steps: clear the occluder buffer
 * (false when memory ran out), draw occluder triangles into it (9 floats each, world space,
 * both sides; call once per occluder, or with all at once), then count what a pixel-exact
 * culler would draw past them (include, boxes and visible as above; -1 without a clear). */
bool rvw_reference_occluders_clear(rvw_reference *ref);
void rvw_reference_occluders_draw(rvw_reference *ref, const float view_projection[16], rvw_depth_convention clip,
                                  const float *triangles, uint32_t triangle_count);
int64_t rvw_reference_ideal_count(rvw_reference *ref, const rvw_level *level, const float view_projection[16],
                                  rvw_depth_convention clip, const uint8_t *include, bool boxes, uint8_t *visible);

/* How many pixels of object (0-based) in the last rvw_reference_render lie behind the
 * given triangles (9 floats each, world space): pixels where one of them is drawn nearer
 * than the object's own fragment by more than rounding (the ideal bound's rule). With an
 * occluder's triangles, the pixels of the object that occluder hides. -1 when memory ran
 * out. */
int64_t rvw_reference_cover(rvw_reference *ref, const float view_projection[16], rvw_depth_convention clip,
                            uint32_t object, const float *triangles, uint32_t triangle_count);

/* How many pixels of object in the last render lie behind the occluders drawn since the
 * last clear (or the last rvw_reference_ideal_occluders call), all together. */
uint32_t rvw_reference_covered_by_ideal(const rvw_reference *ref, uint32_t object);

#endif
