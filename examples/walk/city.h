/* rvis-walk: the embedded city. One deterministic procedural scene (metres, Y up) that
 * gives every stage of rvis something to do:
 *  - 16 x 16 blocks of 60 m with 20 m streets, 4 x 4 blocks to a district (16 districts);
 *  - per block four lots: a building (a box, also an occluder) with façade and rooftop props,
 *    plus street props along the block's pavements (lamps, benches, bins, trees);
 *  - a few glass towers built as partition groups: storeys are parts (floor slab, columns,
 *    furniture), the top storey is deferred, and a section slice sweeps up and down;
 *  - vehicles driving the streets (to be fed through the journal);
 *  - a terrain of 16 m ground tiles, one per page of a streaming grid;
 *  - LOD ladders on props, an HLOD stand-in per district (each block as one box as tall as
 *    the tallest thing on it, so it hides no less than the district it replaces);
 *  - a camera driving the streets.
 * Data only: this file never calls rvis (drive.c does). */
#ifndef RVW_CITY_H
#define RVW_CITY_H

#include "level.h"

#define RVW_CITY_BLOCKS 16          /* blocks per side */
#define RVW_CITY_DISTRICT_BLOCKS 4  /* blocks per side of a district (an HLOD region) */
/* A district's stand-in: one box (12 triangles) per block. */
#define RVW_CITY_STAND_IN_TRIANGLES (12 * RVW_CITY_DISTRICT_BLOCKS * RVW_CITY_DISTRICT_BLOCKS)
#define RVW_CITY_PITCH 80.0f        /* metres from one street centre line to the next */
#define RVW_CITY_HALF 640.0f        /* the city spans [-640, 640] in x and z */
#define RVW_CITY_TOWERS 8
#define RVW_CITY_FRAMES 3600        /* the default walk: a minute at 60 frames per second */
#define RVW_CITY_EYE_HEIGHT 1.7f
#define RVW_CITY_SPEED (20.0f / 60.0f) /* metres per frame (72 km/h) */

typedef struct rvw_city_vehicle {
    uint32_t object;     /* its object in the level */
    uint8_t axis;        /* 0: drives along x, 2: along z */
    float lane;          /* its fixed coordinate on the other horizontal axis */
    float direction;     /* +1 or -1 along the axis */
    float speed;         /* metres per second */
    float phase;         /* metres along the street at frame 0 */
    float half[3];       /* half extents of its box, world axes */
} rvw_city_vehicle;

typedef struct rvw_city_tower {
    int32_t group;       /* its RVW_GROUP_PARTITION group; the parts are that group's children */
    rvw_box bounds;      /* the whole tower */
} rvw_city_tower;

/* The terrain's streaming grid: pages over XZ, one ground tile object per page. */
typedef struct rvw_city_terrain {
    float origin[2];     /* x, z of cell (0, 0)'s low corner */
    float cell;          /* metres */
    uint32_t count_x, count_z;
    uint32_t first_object; /* tile (x, z) is object first_object + z * count_x + x */
    uint32_t page_bytes;   /* nominal bytes of one page (a 65 x 65 height grid of floats) */
} rvw_city_terrain;

typedef struct rvw_city {
    rvw_city_vehicle *vehicles;
    uint32_t vehicle_count;
    rvw_city_tower towers[RVW_CITY_TOWERS];
    uint32_t tower_count;
    rvw_city_terrain terrain;
} rvw_city;

/* Builds the city into *level (objects, groups, occluders, ladders, the camera path of
 * RVW_CITY_FRAMES frames) and its dynamic parts into *city; level->city points at city.
 * False when memory ran out (both are freed then). */
bool rvw_city_generate(rvw_city *city, rvw_level *level);

/* Moves every vehicle to where it is at frame (rewrites its triangles and bounds). */
void rvw_city_animate(const rvw_city *city, rvw_level *level, uint32_t frame);

/* Centre of vehicle v's box at frame (world metres). */
void rvw_city_vehicle_position(const rvw_city *city, uint32_t v, uint32_t frame, float out[3]);

/* Tower t's section slice at frame: committed is what the host has committed (parts
 * outside it are hidden), pending is where the user is dragging it (half a second ahead;
 * it must not count). Both are world boxes. */
void rvw_city_slice(const rvw_city *city, uint32_t t, uint32_t frame, rvw_box *committed,
                    rvw_box *pending);

void rvw_city_free(rvw_city *city);

#endif
