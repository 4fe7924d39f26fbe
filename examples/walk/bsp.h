/* rvis-walk: a Quake III IBSP version 46 reader that treats the file as hostile
 * (docs/walk.md says what is read). Every offset, length, count and index is checked
 * against the file and the lump it points into; a bad file is an error message, never a
 * crash or a read out of bounds. Output is converted from Quake's Z-up to Y-up:
 * (x, y, z) -> (x, z, -y), a rotation, so handedness and winding are kept. */
#ifndef RVW_BSP_H
#define RVW_BSP_H

#include "level.h"
#include "pvs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A spawn point or an item from the entity lump, Y-up. */
typedef struct rvw_bsp_point {
    float origin[3];
    float yaw;          /* radians about +Y; 0 faces +X (Quake yaw 0 = +X, 90 = +Y) */
    bool has_yaw;       /* the entity carried "angle" or "angles" */
    bool spawn;         /* a spawn point (else an item) */
} rvw_bsp_point;

/* A model-0 brush that blocks a player (solid or player clip), for the camera path: the
 * convex set dot(n, p) <= d of every plane. Empty brushes are left out. */
typedef struct rvw_bsp_brush {
    uint32_t first_plane, plane_count;  /* into rvw_bsp_map.planes (4 floats: n, d) */
    uint32_t contents;                  /* the brush's content flags */
    rvw_box bounds;                     /* exact; +-4e6 for an unbounded plane set */
} rvw_bsp_brush;

/* Figures about the map, for the report. */
typedef struct rvw_bsp_stats {
    uint32_t surfaces;          /* model-0 surfaces */
    uint32_t patches;           /* of which drawn curved patches */
    uint32_t skipped_nodraw_sky;/* model-0 surfaces skipped for SURF_NODRAW / SURF_SKY */
    uint32_t skipped_empty;     /* flares and surfaces with no triangles */
    uint32_t fogged;            /* drawn surfaces with a valid fog index */
    uint32_t brushes;           /* model-0 brushes */
    uint32_t solid_brushes;     /* with CONTENTS_SOLID */
    uint32_t clip_brushes;      /* player clip, not solid: they block the path only */
    uint32_t empty_brushes;     /* solid or clip brushes without a volume (left out) */
    uint32_t unbounded_brushes; /* solid or clip plane sets that are not closed */
    uint32_t spawns, items;
} rvw_bsp_stats;

/* What a map gives beyond the level: points and solids for the camera path. */
typedef struct rvw_bsp_map {
    rvw_bsp_point *points;      /* spawns first (entity order), then items (entity order) */
    uint32_t point_count;
    rvw_bsp_brush *brushes;     /* model-0 brushes that block a player */
    uint32_t brush_count;
    float *planes;              /* 4 floats per plane, Y-up */
    uint32_t plane_count, plane_capacity;
    rvw_bsp_stats stats;
    rvw_bsp_pvs pvs;
    rvw_box extent;             /* the bounds of the bounded brushes: a sealed map's playable
                                   space lies inside; min > max when there are none */
} rvw_bsp_map;

/* Reads a map from bytes[0, size) into *level (objects = drawable model-0 surfaces with
 * patches tessellated at 8 steps per 3x3 sub-patch; occluder candidates = every solid
 * model-0 brush with a volume, and every opaque drawn surface as a mesh; the occluders the
 * walk declares chosen among them by rvw_level_choose_occluders) and *map (points and the
 * brushes that block a player). name (copied) names the level. On failure returns false
 * with a one-line reason in err (errlen bytes) and leaves *level and *map empty. */
bool rvw_bsp_read(const uint8_t *bytes, size_t size, const char *name, rvw_level *level,
                  rvw_bsp_map *map, char *err, size_t errlen);

void rvw_bsp_map_free(rvw_bsp_map *map);

/* Quake flag bits used by the reader. */
enum {
    RVW_SURF_SKY = 0x4,
    RVW_SURF_NODRAW = 0x80,
    RVW_CONTENTS_SOLID = 0x1,
    RVW_CONTENTS_PLAYERCLIP = 0x10000,
    RVW_CONTENTS_TRANSLUCENT = 0x20000000,
};

/* Patch tessellation: steps per 3x3 sub-patch, so 2 * 8 * 8 triangles each. */
#define RVW_PATCH_STEPS 8

#endif
