/* The map scenes' shared setup (side_map.c, side_mapfeed.c): a map read as rvis-walk
 * --map reads it, and its camera path built. Included by each side file, so each side of
 * an A/B has its own copy, as it has its own level. */
#ifndef RVIS_AB_MAP_LOAD_H
#define RVIS_AB_MAP_LOAD_H

#include "bsp.h"
#include "level.h"
#include "path.h"
#include "pk3.h"

#include <stdio.h>
#include <stdlib.h>

/* Reads map name into level and builds its camera path; false (after a message on
 * stderr) when the map cannot be read or walked. */
static bool ab_map_load(const char *name, rvw_level *level)
{
    char err[512];
    rvw_map_source src;
    uint8_t *bytes = NULL;
    size_t size = 0;
    bool pak_missing;
    rvw_bsp_map map;
    if (!rvw_map_source_parse(name, &src, err, sizeof err) ||
        !rvw_map_source_read(&src, &bytes, &size, &pak_missing, err, sizeof err) ||
        !rvw_bsp_read(bytes, size, src.name, level, &map, err, sizeof err)) {
        fprintf(stderr, "ab: %s: %s\n", name, err);
        free(bytes);
        return false;
    }
    free(bytes);
    rvw_path_stats stats;
    bool ok = rvw_path_build(level, &map, &stats);
    rvw_bsp_map_free(&map);
    if (!ok)
        fprintf(stderr, "ab: %s: the camera path\n", name);
    return ok;
}

#endif
