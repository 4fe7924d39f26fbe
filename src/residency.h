/* Page residency (docs/design.md §6): internal entry points for the grid and the world. */
#ifndef RVI_RESIDENCY_H
#define RVI_RESIDENCY_H

#include "rvis.h"
#include "core/alloc.h"

/* Creates a residency whose allocations go through heap (a world's), ignoring
 * desc->allocator. heap must outlive it. Errors as rv_residency_create. */
rv_result rvi_residency_create_in(rvi_heap *heap, const rv_residency_desc *desc, rv_residency **out);

/* Makes room so that new_pages pages never seen before can be wanted without allocating.
 * RV_ERR_CAPACITY past 2^32 - 1 pages; RV_ERR_OUT_OF_MEMORY leaves everything observable
 * as it was. */
rv_result rvi_residency_reserve(rv_residency *residency, uint64_t new_pages);

/* True when new_pages unknown pages fit the reserved room without allocating. */
bool rvi_residency_has_room(const rv_residency *residency, uint64_t new_pages);

/* True when the residency has a record of key (any state but absent). */
bool rvi_residency_knows(const rv_residency *residency, rv_page_key key);

/* True once rv_residency_begin_frame has been called: wants need a frame to belong to. */
bool rvi_residency_frame_begun(const rv_residency *residency);

/* The checks of rv_residency_begin_frame, changing nothing: RV_OK exactly when it would
 * succeed (it cannot fail otherwise). */
rv_result rvi_residency_check_begin(const rv_residency *residency, double now_ms);

/* A fresh serial for one rv_grid_update: pages wanted twice under one serial count once. */
uint64_t rvi_residency_next_serial(rv_residency *residency);

/* Wants key (as rv_residency_request) on behalf of the update with this serial. Never
 * allocates: the caller reserved room for every page it may create. *new_request is set
 * when this is the page's first want under serial, *new_touch its first touch. */
void rvi_residency_want_cell(rv_residency *residency, rv_page_key key, float distance, bool touched,
                             uint64_t serial, bool *new_request, bool *new_touch);

/* At most how many pages rv_residency_take_evictions can hand out now: the resident pages
 * not in use this frame (it evicts only those). */
uint32_t rvi_residency_evictable(const rv_residency *residency);

/* The resolved desc (defaults applied). */
rv_residency_desc rvi_residency_desc(const rv_residency *residency);

/* Validates a desc as creation would (defaults applied), creating nothing. */
rv_result rvi_residency_check_desc(const rv_residency_desc *desc);

#endif
