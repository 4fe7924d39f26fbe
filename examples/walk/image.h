/* rvis-walk: pictures, drawn with cairo. Each PNG is the picture itself above a footer that
 * lets a reader use it without the source: the map's name, the frame number, what the
 * picture shows, a key of every colour in it, and a scale (a distance bar on the map, an
 * angle bar on the views, the depth range on the occlusion buffer). A build without cairo
 * has rvw_have_images() false and every writer fails with a message. */
#ifndef RVW_IMAGE_H
#define RVW_IMAGE_H

#include "level.h"
#include "reference.h"
#include "view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when this build writes pictures (cairo). */
bool rvw_have_images(void);

/* Top-down picture (+X right, +Z down: north up when looking down from +Y) of every
 * object's footprint, largest first so small things show on top, coloured by verdict:
 * drawn and truly visible, drawn but hidden (no pixel in the oracle), culled by the
 * frustum, culled by occlusion, skipped by the host's PVS, left out on purpose, and false
 * culls (drawn bigger, last). Ground tiles are drawn faintly and only when drawn, HLOD
 * stand-ins only when drawn. The camera is a white dot, its frustum's sides yellow.
 * verdict: per object (rvw_verdict); visible_pixels: the oracle's per-object pixel counts,
 * or NULL when the frame was not verified (drawn objects are then one colour). */
bool rvw_image_top_down(const char *path, const rvw_level *level, const rvw_view *view,
                        const uint8_t *verdict, const uint32_t *visible_pixels, char *err,
                        size_t errlen);

/* The oracle's last id buffer as seen from view, each object a stable colour. */
bool rvw_image_reference(const char *path, const rvw_level *level, const rvw_view *view,
                         const rvw_reference *ref, char *err, size_t errlen);

/* rvis's occlusion buffer as rv_occlusion_debug_image draws it (8-bit grey, top row first,
 * width x height texels: 0 = no occluder, 255 = depth_near, 32 = depth_far, linear in view
 * depth between), enlarged to a readable size, with its depth range stated. */
bool rvw_image_occlusion(const char *path, const rvw_level *level, const rvw_view *view,
                         const uint8_t *gray, uint32_t width, uint32_t height, float depth_near,
                         float depth_far, char *err, size_t errlen);

#endif
