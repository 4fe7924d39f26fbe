/* rvis-view: the GPU as a second judge of rvis's culling. For one frame it draws the depth
 * of the whole scene (every object the frame did not leave out on purpose, none culled),
 * then draws chosen objects again, each inside its own occlusion query, with depth writes
 * off and a chosen depth function. With GL_ANY_SAMPLES_PASSED and GL_LEQUAL an object
 * passes when at least one sample of it is as near as the nearest surface there: it is
 * visible, so rvis must not have culled it. Both passes use the same program, so an object
 * meets its own depth exactly. */
#ifndef RVV_JUDGE_H
#define RVV_JUDGE_H

#include "headless.h"
#include "render.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A query object keeps the target it was first begun with, so each target has its own. */
typedef struct rvv_query_pool {
    GLenum target;
    GLuint *queries;
    uint32_t count;             /* query objects made so far */
} rvv_query_pool;

typedef struct rvv_judge {
    rvv_target target;          /* depth only, the viewport's size */
    rvv_query_pool pools[2];    /* GL_ANY_SAMPLES_PASSED, GL_SAMPLES_PASSED */
} rvv_judge;

bool rvv_judge_init(rvv_judge *j, uint32_t width, uint32_t height, char *err, size_t errlen);
/* Resizes the depth target (a window resized). */
bool rvv_judge_resize(rvv_judge *j, uint32_t width, uint32_t height, char *err, size_t errlen);
void rvv_judge_free(rvv_judge *j);

/* Clears the judge's depth target and draws the depth of every object with include[i]. */
void rvv_judge_depth(rvv_judge *j, rvv_renderer *r, const rvw_view *view, const uint8_t *include);

/* One query per object of objects[0, count) against the depth drawn by rvv_judge_depth:
 * target GL_ANY_SAMPLES_PASSED or GL_SAMPLES_PASSED, depth function depth_func, depth and
 * colour writes off. results[k] gets the query's result for objects[k]. False when query
 * objects could not be made (memory). */
bool rvv_judge_query(rvv_judge *j, rvv_renderer *r, const uint32_t *objects, uint32_t count, GLenum target,
                     GLenum depth_func, uint32_t *results);

#endif
