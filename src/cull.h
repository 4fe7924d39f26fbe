/* Internal interface of the hierarchical frustum walk (cull.c) and spatial grouping
 * (group.c), for modules that walk the hierarchy by slot index (frame.c). */
#ifndef RVI_CULL_H
#define RVI_CULL_H

#include "rvis.h"
#include "scene.h"

/* Called for each visible node with geometry (slot index). Return false to stop. */
typedef bool (*rvi_visit_index_fn)(rvi_scene *scene, uint32_t index, void *user);

/* The walk behind rv_visit_visible, by slot index: root RVI_INDEX_NONE walks every root.
 * Uses scene->work as its stack and sets scene->visiting for its duration; the caller has
 * checked that no other walk is running. counts may be NULL. */
void rvi_cull_walk(rvi_scene *scene, uint32_t root, const rv_frustum *frustum,
                   rvi_visit_index_fn fn, void *user, rv_cull_counts *counts);

#endif
