/*
 * rvis — rendering visibility for engines that draw for themselves.
 *
 * One flat C API. rvis answers, once per frame, what to draw, at which level of detail
 * and which pages to load next. It never draws, never owns GPU memory, never loads files.
 *
 * "DESIGN.md §N" below names a section of the project's design contract, which is kept
 * beside the repository, not in it; docs/architecture.md and the module guides in docs/
 * say the same for users (§1 API conventions, §2 scene, §3 partition, §4 occlusion, §5 LOD, §6
 * streaming, §7 journal, §8 frame, §9 defaults).
 *
 * Conventions (DESIGN.md §1):
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
