/* rvis-walk: the camera path through a Quake III map, along which the camera stands only
 * where a player can. It visits the spawn points (entity order) and then the items, at a
 * player's eye (26 units above the origin of Quake III's player box: 15 units each side
 * horizontally, 24 below and 32 above the origin), moving at 320 units per second at 60
 * frames per second and facing the direction of travel; at each spawn it stands for
 * RVW_PATH_STAND_FRAMES frames facing the spawn's own yaw.
 *
 * The box never enters a brush that blocks a player (solid or player clip, model 0): each
 * brush is grown by the box (a Minkowski sum, as Quake III's collision does), and the box's
 * origin must stay out of every grown brush. A point whose box is in a solid is moved to the
 * nearest free place within RVW_PATH_SEARCH_UP units up and RVW_PATH_SEARCH_SIDE sideways,
 * or dropped from the path; a spawn is lifted 9 units as Quake III spawns a player, and every
 * point then settles on the floor below it (within RVW_PATH_MAX_DROP units). A leg whose
 * straight line would take the box into a brush is walked through one waypoint above or
 * beside its middle when that is free, else replaced by a cut. With a valid PVS the eye must
 * also stay in a leaf of the map (cluster >= 0), never in the void outside it. */
#ifndef RVW_PATH_H
#define RVW_PATH_H

#include "bsp.h"
#include "level.h"

/* Quake III's player box about the origin, Y-up (bg_public.h: mins -15 -15 -24, maxs 15 15
 * 32; DEFAULT_VIEWHEIGHT 26). */
#define RVW_PLAYER_HALF_WIDTH 15.0f
#define RVW_PLAYER_BELOW 24.0f
#define RVW_PLAYER_ABOVE 32.0f
#define RVW_PATH_EYE_HEIGHT 26.0f
#define RVW_PATH_SPAWN_LIFT 9.0f          /* Quake III spawns a player 9 units above the spot */

#define RVW_PATH_SPEED (320.0f / 60.0f)   /* units per frame */
#define RVW_PATH_STAND_FRAMES 20          /* a third of a second at each spawn */
#define RVW_PATH_MAX_PITCH 0.6f           /* radians (about 34 degrees) */
#define RVW_PATH_MAX_FRAMES 200000u       /* a hostile map cannot ask for an endless walk */
#define RVW_PATH_SEARCH_UP 40.0f          /* how far a point is lifted out of a solid */
#define RVW_PATH_SEARCH_SIDE 32.0f        /* and moved sideways */
#define RVW_PATH_MAX_DROP 256.0f          /* a point settles on a floor at most this far down */
/* The box may touch a brush (a player stands against walls and on floors): it is blocked
 * only when it goes deeper than this into one, and settling leaves this much air. */
#define RVW_PATH_TOLERANCE 0.0625f
#define RVW_PATH_SKIN 0.125f
/* The most work a path may take, in tests: every brush a sweep looks at counts 1, a brush
 * whose bounds meet the swept box counts its sides besides, and every BSP node the eye's
 * lookups visit counts 1. Without it a small hostile map keeps the tools pathing for hours:
 * brushes may share one run of sides (the reader's side-pair cap lets some 466,000 through)
 * and every point in a solid tries some 1,049 places against every brush near it. The 50
 * OpenArena maps need at most 52.7 million (czest3ctf), a fifth of this budget. */
#define RVW_PATH_WORK_BUDGET (256ull * 1024 * 1024)

typedef struct rvw_path_stats {
    uint32_t points;    /* spawn and item points in the map */
    uint32_t moved;     /* of which their box was in a solid and was moved out */
    uint32_t dropped;   /* of which no free place was near: left out of the path */
    float max_move;     /* the longest move out of a solid (units) */
    uint32_t legs;      /* legs walked in a straight line */
    uint32_t detours;   /* legs walked through a waypoint above or beside the straight line */
    uint32_t jumps;     /* legs replaced by a cut */
    uint64_t work;      /* tests spent (RVW_PATH_WORK_BUDGET) */
} rvw_path_stats;

typedef enum rvw_path_result {
    RVW_PATH_BUILT = 0,
    RVW_PATH_NO_MEMORY,     /* the path is partial */
    RVW_PATH_OVER_BUDGET,   /* the map needs more than RVW_PATH_WORK_BUDGET: the path is partial */
} rvw_path_result;

/* The player box about its origin, Y-up. */
extern const float rvw_player_box_min[3], rvw_player_box_max[3];

/* True when the player box at origin (Y-up) goes deeper than RVW_PATH_TOLERANCE into a
 * brush of map. */
bool rvw_path_box_blocked(const rvw_bsp_map *map, const float origin[3]);

/* The fraction of the way from -> to that the player box moves before it first goes deeper
 * than RVW_PATH_TOLERANCE into a brush: 1 when the whole way is free, 0 when it starts in
 * one. */
double rvw_path_sweep(const rvw_bsp_map *map, const float from[3], const float to[3]);

/* Where a player stands for the map point p (spawn or item): origin[] gets the box's origin.
 * *moved gets how far it had to move out of a solid (0 when the box was free). False when
 * no free place lies near. */
bool rvw_path_place(const rvw_bsp_map *map, const rvw_bsp_point *p, float origin[3], float *moved);

/* Appends the path to level->path. With no point a player can stand at, the camera turns
 * once in place at the centre of the level's bounds. A map whose path needs more than
 * RVW_PATH_WORK_BUDGET is given up (RVW_PATH_OVER_BUDGET), so that a small hostile file
 * cannot keep the tools pathing for hours. */
rvw_path_result rvw_path_build(rvw_level *level, const rvw_bsp_map *map, rvw_path_stats *stats);

/* rvw_path_build with a budget of its own (same units). stats->work exceeds budget by at
 * most one brush's test (1 + its sides) or one walk down the BSP tree. */
rvw_path_result rvw_path_build_within(rvw_level *level, const rvw_bsp_map *map, uint64_t budget,
                                      rvw_path_stats *stats);

#endif
