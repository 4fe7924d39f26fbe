/* rvis-walk: the camera path through a Quake III map. It visits the spawn points (entity
 * order) and then the items, at a player's eye height (origin + 26 units), moving at
 * 320 units per second at 60 frames per second and facing the direction of travel. At each
 * spawn the camera stands for RVW_PATH_STAND_FRAMES frames facing the spawn's own yaw.
 * A leg is walked in a straight line when the segment between the two eyes passes through
 * no solid model-0 brush; otherwise the camera jumps (a cut) to the next point. */
#ifndef RVW_PATH_H
#define RVW_PATH_H

#include "bsp.h"
#include "level.h"

#define RVW_PATH_EYE_HEIGHT 26.0f
#define RVW_PATH_SPEED (320.0f / 60.0f)   /* units per frame */
#define RVW_PATH_STAND_FRAMES 20          /* a third of a second at each spawn */
#define RVW_PATH_MAX_PITCH 0.6f           /* radians (about 34 degrees) */
#define RVW_PATH_MAX_FRAMES 200000u       /* a hostile map cannot ask for an endless walk */

typedef struct rvw_path_stats {
    uint32_t legs;      /* straight legs walked */
    uint32_t jumps;     /* legs replaced by a cut */
} rvw_path_stats;

/* True when the segment a -> b passes through the interior of any brush of map (the
 * brushes shrunk by 1 unit, so grazing a face is not a hit). */
bool rvw_path_segment_blocked(const rvw_bsp_map *map, const float a[3], const float b[3]);

/* Appends the path to level->path. With no points at all the camera turns once in place at
 * the centre of the level's bounds. False when memory ran out. */
bool rvw_path_build(rvw_level *level, const rvw_bsp_map *map, rvw_path_stats *stats);

#endif
