/* rvis-walk: the JSON-lines dumps, so any other tool can check rvis's verdicts on its own.
 *   --dump-scene FILE       {"format": "rvis-scene-1", "up": "y", "objects": N}, then one
 *                           {"id": i, "triangles": [[x, y, z], ...]} per object (three
 *                           vertices per triangle, world space, as rvis used them)
 *   --dump-visibility FILE  one line per frame: {"frame", "eye", "view_projection" (16 floats,
 *                           column-major), "clip": {"depth_zero_to_one", "reversed_z"},
 *                           "drawn": [ids], "excluded": [ids]}; when objects moved since the
 *                           scene dump (the city's vehicles) also "moved": [{"id",
 *                           "triangles"}] with their geometry for that frame. */
#ifndef RVW_DUMP_H
#define RVW_DUMP_H

#include "level.h"
#include "view.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void rvw_dump_scene(FILE *out, const rvw_level *level);

/* verdict: per object (rvw_verdict). On a verified frame, visible and ideal_box (per
 * object, 1 = yes) are the oracle's truly visible objects and those the ideal bound drawing
 * each object's box keeps; both NULL otherwise. */
void rvw_dump_visibility(FILE *out, const rvw_level *level, const rvw_view *view,
                         const uint8_t *verdict, const uint8_t *visible, const uint8_t *ideal_box);

#endif
