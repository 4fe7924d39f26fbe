/* Streaming grid (docs/design.md §6): internal entry points for the world. */
#ifndef RVI_GRID_H
#define RVI_GRID_H

#include "rvis.h"
#include "core/alloc.h"

/* Creates a grid whose single allocation goes through heap (a world's), ignoring
 * desc->allocator. heap must outlive it. Errors as rv_grid_create. */
rv_result rvi_grid_create_in(rvi_heap *heap, const rv_grid_desc *desc, rv_grid **out);

/* The most cells one rv_grid_update may examine (all sources together; RV_ERR_CAPACITY
 * beyond). Each may become a page record: past this a frame would spend seconds and
 * gigabytes (a radius of 1e30 over a 60000 x 60000 grid ran 20 s before running out of
 * memory), so it is refused at once. */
#define RVI_GRID_MAX_VISIT (1u << 24)

/* True when n sources (their radii; positions do not matter) plus an eye source of
 * eye_radius (negative: none) can never make rv_grid_update examine more than
 * RVI_GRID_MAX_VISIT cells, wherever they stand: each source's square counted whole,
 * clipped only by the grid's size. A world checks it when the sources change, so that its
 * frames never fail on them. */
bool rvi_grid_sources_fit(const rv_grid *grid, const rv_stream_source *sources, uint32_t n, float eye_radius);

/* The checks of rv_world_add_grid, made before anything is allocated: the desc as
 * rv_grid_create checks it, and RV_ERR_CAPACITY when the world's n sources and the eye
 * source would not fit (rvi_grid_sources_fit). *out_eye_radius receives the eye source's
 * radius the world keeps for the grid (negative: none). */
rv_result rvi_grid_check_for_world(const rv_grid_desc *desc, const rv_stream_source *sources, uint32_t n,
                                   float *out_eye_radius);

#endif
