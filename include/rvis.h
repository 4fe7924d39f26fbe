/*
 * rvis — rendering visibility for engines that draw for themselves.
 *
 * One flat C API. rvis answers, once per frame, what to draw, at which level of detail
 * and which pages to load next. It never draws, never owns GPU memory, never loads files.
 *
 * This header includes one header per module; a user of one module alone (the occlusion
 * buffer, the journal, grid and residency, the LOD selector) may include just that one:
 *   rvis/core.h       results, allocator hooks, clip conventions, node handles, version
 *   rvis/frustum.h    frustum planes, sphere/box classification, rv_cull_spheres
 *   rvis/scene.h      the node hierarchy: transforms, world matrices, world bounds
 *   rvis/cull.h       hierarchical frustum culling (rv_visit_visible), rv_group_spatially
 *   rvis/occlusion.h  the CPU occluder depth buffer and its hierarchical-Z pyramid
 *   rvis/lod.h        apparent-size LOD, hysteresis, crossfade, HLOD
 *   rvis/partition.h  partition gating of big partitioned models
 *   rvis/streaming.h  the streaming grid over XZ and page residency
 *   rvis/journal.h    the render-projection delta journal and the render scene
 *   rvis/frame.h      the world and rv_frame, extra views
 *
 * "docs/design.md §N" names a section of the design contract in docs/design.md (§1 API
 * conventions, §2 scene, §3 partition, §4 occlusion, §5 LOD, §6 streaming, §7 journal,
 * §8 frame, §9 defaults); docs/architecture.md and the module guides say the same for users.
 *
 * Conventions (docs/design.md §1):
 *  - Every fallible call returns rv_result (RV_OK = 0). Bad input gets a specific code and
 *    leaves the object unchanged. Nothing aborts or prints on host input.
 *  - Matrices are column-major float[16] (cglm's mat4 layout); quaternions are (x, y, z, w).
 *  - Units: world units (metres by convention), radians, milliseconds, pixels.
 *  - A *_desc zeroed with {0} selects the documented default of every field.
 *  - Handles wrap 64 bits: slot index, generation, per-world tag; the zero handle is "none".
 *  - A world (and every standalone module object) is used from one thread at a time.
 *
 * Licence: MIT (see LICENSE).
 */
#ifndef RVIS_H
#define RVIS_H

#include "rvis/core.h"
#include "rvis/frustum.h"
#include "rvis/scene.h"
#include "rvis/cull.h"
#include "rvis/occlusion.h"
#include "rvis/lod.h"
#include "rvis/partition.h"
#include "rvis/streaming.h"
#include "rvis/journal.h"
#include "rvis/frame.h"

#endif /* RVIS_H */
