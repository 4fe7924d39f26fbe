/* rvis-walk: pictures (libpng). A top-down map of the scene with the camera, its frustum
 * and every object coloured by its verdict, the oracle's id buffer, and any 8-bit grey
 * image (the occlusion buffer, once the frame exposes it). A build without libpng has
 * rvw_have_png() false and every writer fails with a message. */
#ifndef RVW_IMAGE_H
#define RVW_IMAGE_H

#include "level.h"
#include "reference.h"
#include "view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when this build writes PNG files (libpng). */
bool rvw_have_png(void);

/* Writes an RGB image (rgb: width * height * 3 bytes, top row first). */
bool rvw_png_write_rgb(const char *path, uint32_t width, uint32_t height, const uint8_t *rgb,
                       char *err, size_t errlen);
/* Writes an 8-bit grey image (top row first). */
bool rvw_png_write_gray(const char *path, uint32_t width, uint32_t height, const uint8_t *gray,
                        char *err, size_t errlen);

/* Top-down picture (X right, +Z down: north up when looking down from +Y) of every
 * object's footprint, largest first so small things show on top: drawn and truly visible
 * = green, drawn but hidden = dark green, culled by the frustum = grey, culled by occlusion
 * = red, left out on purpose = blue, a false cull = magenta (drawn bigger, last). Ground
 * tiles are drawn faintly and only when drawn, HLOD stand-ins only when drawn. The camera
 * is white, its frustum's sides yellow. verdict: per object (rvw_verdict); visible_pixels:
 * the oracle's per-object pixel counts, or NULL when the frame was not verified. */
bool rvw_image_top_down(const char *path, const rvw_level *level, const rvw_view *view,
                        const uint8_t *verdict, const uint32_t *visible_pixels, char *err,
                        size_t errlen);

/* The oracle's last id buffer, each object a stable colour, depth shaded. */
bool rvw_image_reference(const char *path, const rvw_reference *ref, char *err, size_t errlen);

#endif
