/* rvis-walk: convex brushes given as plane sets (a Quake III brush: the intersection of the
 * half-spaces dot(n, p) <= d of its sides, normals pointing out). Their shape (empty,
 * unbounded or a solid with exact bounds), their surface as triangles, and the Minkowski
 * expansion of a brush by a box, with which the camera path keeps a player's box out of
 * solids. Plain geometry in doubles: no file format here (bsp.c reads the planes). */
#ifndef RVW_BRUSH_H
#define RVW_BRUSH_H

#include "level.h"

#include <stdbool.h>
#include <stdint.h>

/* More sides than this is refused by the reader (q3map writes at most 65 in the 50
 * OpenArena maps): the shape costs sides^2 clips, and a hostile file must not buy more. */
#define RVW_BRUSH_MAX_SIDES 256

typedef enum rvw_brush_shape {
    RVW_BRUSH_SOLID = 0,    /* closed, with a volume: bounds are exact */
    RVW_BRUSH_EMPTY,        /* no volume (contradictory or flat planes): holds nothing */
    RVW_BRUSH_UNBOUNDED,    /* not closed (some direction has no side): bounds are not finite */
} rvw_brush_shape;

/* The shape of the brush whose count planes (4 floats each: unit normal, d) are given,
 * 1 <= count <= RVW_BRUSH_MAX_SIDES (more or fewer: RVW_BRUSH_UNBOUNDED). For a solid,
 * *bounds gets the box of its corners (each side's face clipped by every other side). */
rvw_brush_shape rvw_brush_shape_of(const float *planes, uint32_t count, rvw_box *bounds);

/* The brush's surface as triangles (fans over each side's face; sides that touch the solid
 * only along an edge or at a corner, such as bevels, give none), 9 floats each, into
 * out[0 .. 9 * max_triangles). Returns how many triangles the surface has (possibly more
 * than max_triangles, of which only the first max_triangles are written); 0 when the brush
 * is not RVW_BRUSH_SOLID. At most count * (RVW_BRUSH_MAX_SIDES + 2) triangles. */
uint32_t rvw_brush_triangles(const float *planes, uint32_t count, float *out, uint32_t max_triangles);

/* The distance of a brush side's plane in the Minkowski sum of the brush and a box
 * [box_min, box_max] placed at a point: the box at p meets the side's half-space
 * dot(n, x) <= plane[3] exactly when dot(n, p) <= the returned distance. It grows by the
 * box's reach against the normal (Quake III's collision offsets its planes the same way;
 * the axial and edge bevel planes q3map adds to every brush keep the expanded set exact,
 * and without them the set only grows, never misses). */
static inline double rvw_brush_expanded_distance(const float plane[4], const float box_min[3],
                                                 const float box_max[3])
{
    /* the box corner that reaches furthest against the normal: min over the box of n·b */
    double reach = 0;
    for (int k = 0; k < 3; k++)
        reach += plane[k] * (double)(plane[k] > 0 ? box_min[k] : box_max[k]);
    return (double)plane[3] - reach;
}

#endif
