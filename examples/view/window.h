/* rvis-view in a window (GLFW): fly through the scene, toggle stages, freeze culling. */
#ifndef RVV_WINDOW_H
#define RVV_WINDOW_H

#include "app.h"

/* Opens a window with a GL 3.3 core context and runs until it is closed (or --frames frames
 * were drawn). Returns the exit code: 0, 1 (the GPU judge found a false cull), 2, or 3 (no
 * window or context: GLFW missing at build time, no display). */
int rvv_window_run(const rvv_options *opt, rvw_level *level, const rvw_city *city);

#endif
