/* rvis-walk: a map's occluders as rvis nodes (part of the drive: drive.c calls it). */
#ifndef RVW_DRIVE_OCCLUDERS_H
#define RVW_DRIVE_OCCLUDERS_H

#include "level.h"
#include "rvis.h"

#include <stdbool.h>
#include <stddef.h>

/* Declares the occluders rvw_level_choose_occluders chose, each on a node of its own
 * without geometry (under one root), so rvis submits only those whose
 * bounds meet the frustum: the brushes as exact convex solids (a texel keeps the brush's
 * entry side, the drawn face the eye sees), the surfaces' occluder triangles as open meshes
 * (their own depth, seen from both sides). False with a one-line reason in err when rvis
 * refused one. */
bool rvw_drive_map_occluders(rv_world *world, const rvw_level *level, char *err, size_t errlen);

#endif
