/* rvis-walk --depth-feed: the depth image a host's depth pre-pass would leave after a frame,
 * to be read back and handed to rvis one frame late. It is drawn by the oracle's rasteriser
 * (reference.c) at the view's resolution, as a pre-pass is, and reduced to the feed's by
 * keeping the farthest depth of the pixels whose centres fall in each texel (as a
 * hierarchical-Z level is built, docs/occlusion.md "The host's side"), from the objects rvis told the walk to draw that
 * frame, keeping only what stays where it was drawn: a map's opaque surfaces; the city's
 * buildings, ground tiles and props, and the storeys of its towers that this frame's and the
 * next frame's committed slices both keep (no vehicles, no HLOD stand-ins, no deferred
 * storeys). Nothing here calls rvis (drive.c hands the image over). */
#ifndef RVW_FEED_H
#define RVW_FEED_H

#include "level.h"
#include "reference.h"
#include "view.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rvw_feed {
    rvw_reference ref;          /* the oracle's rasteriser at the view's resolution */
    float *full;                /* its window depths (OpenGL), row 0 at the bottom */
    float *depth;               /* width x height window depths (OpenGL), row 0 at the bottom:
                                   the farthest of full's pixels in each texel */
    uint8_t *include;           /* per object: in the last image */
    uint8_t *opaque;            /* per object: a map surface with an opaque shader (it has a
                                   mesh among the occluder candidates); 1 for the city */
    uint32_t width, height;
    float view_projection[16];  /* the matrix the last image was drawn with */
    uint32_t frame;             /* the frame it shows */
    bool ready;                 /* an image has been drawn */
    double draw_us;             /* the last image's drawing time (the walk's, not rvis's) */
} rvw_feed;

/* Sizes the feed for level at width x height texels, drawn at view_width x view_height
 * pixels (at least the feed's size). False when memory ran out. */
bool rvw_feed_init(rvw_feed *feed, const rvw_level *level, uint32_t width, uint32_t height, uint32_t view_width,
                   uint32_t view_height);
void rvw_feed_free(rvw_feed *feed);

/* Whether object, drawn at frame, belongs in that frame's depth image: geometry that is
 * still where it was drawn one frame later (see the top of this file). */
bool rvw_feed_keeps(const rvw_feed *feed, const rvw_level *level, uint32_t object, uint32_t frame);

/* Draws the depth image of view's frame from the objects whose verdict is RVW_DRAWN and
 * that rvw_feed_keeps. False when memory ran out. */
bool rvw_feed_draw(rvw_feed *feed, const rvw_level *level, const rvw_view *view, const uint8_t *verdict);

#endif
