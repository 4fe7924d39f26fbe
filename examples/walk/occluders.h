/* rvis-walk: the occluders rvis gets, as triangles the oracle can draw. --verify needs them
 * twice: for the ideal-occluder bound (what a pixel-exact culler with exactly these
 * occluders would draw) and to name the occluders in front of a falsely culled object. A
 * map's set is its chosen surfaces (rvw_level_choose_occluders), made once; the city's is
 * its buildings' boxes, made per frame from those rvis got. */
#ifndef RVW_OCCLUDERS_H
#define RVW_OCCLUDERS_H

#include "level.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rvw_occluder_ref {
    uint32_t first_triangle, triangle_count; /* into rvw_occluder_set.triangles */
    rvw_box bounds;                          /* of its triangles */
    uint32_t index;                          /* its object (a surface or a building) */
    const char *kind;                        /* "surface" or "building" */
} rvw_occluder_ref;

typedef struct rvw_occluder_set {
    rvw_occluder_ref *items;
    uint32_t count, capacity;
    float *triangles;                        /* 9 floats per triangle, world space */
    uint32_t triangle_count, triangle_capacity;
} rvw_occluder_set;

/* Empties the set (keeps its storage). */
void rvw_occluders_clear(rvw_occluder_set *set);

/* Adds a box's 12 triangles; false when memory ran out. */
bool rvw_occluders_add_box(rvw_occluder_set *set, const rvw_box *box, uint32_t index, const char *kind);

/* Fills the set with a map's chosen occluders: each RVW_MESH_OCCLUDER mesh's triangles
 * (its object's, to the bit). False when memory ran out. */
bool rvw_occluders_of_map(const rvw_level *level, rvw_occluder_set *set);

void rvw_occluders_free(rvw_occluder_set *set);

#endif
