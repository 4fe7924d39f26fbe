/* Streaming grid (DESIGN.md §6): internal entry points for the world. */
#ifndef RVI_GRID_H
#define RVI_GRID_H

#include "rvis.h"
#include "core/alloc.h"

/* Creates a grid whose single allocation goes through heap (a world's), ignoring
 * desc->allocator. heap must outlive it. Errors as rv_grid_create. */
rv_result rvi_grid_create_in(rvi_heap *heap, const rv_grid_desc *desc, rv_grid **out);

#endif
