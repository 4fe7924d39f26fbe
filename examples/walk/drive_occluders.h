/* rvis-walk: a map's occluders as rvis nodes (part of the drive: drive.c calls it). */
#ifndef RVW_DRIVE_OCCLUDERS_H
#define RVW_DRIVE_OCCLUDERS_H

#include "level.h"
#include "rvis.h"

#include <stdbool.h>
#include <stddef.h>

/* Declares the surfaces rvw_level_choose_occluders chose as open mesh occluders (each
 * texel keeps the surface's own depth, seen from both sides), each on a node of its own
 * without geometry (under one root), so rvis submits only those whose bounds meet the
 * frustum. False with a one-line reason in err when rvis refused one. */
bool rvw_drive_map_occluders(rv_world *world, const rvw_level *level, char *err, size_t errlen);

#endif
