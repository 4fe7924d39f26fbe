#include "judge.h"

#include <stdlib.h>
#include <string.h>

/* Mesa's llvmpipe (22.3) was seen to miscount a query when the driver flushed its binned
 * scene on its own in the middle of a long run of queries: in a run of 1036 queries on
 * oa_dm4 an object outside the frustum read 572,913 samples, and 0 when asked alone; the
 * same objects at the same frames every run, whatever the thread count. Flushing at our own
 * pace, every FLUSH_EVERY queries (256 already sufficed), made every such case go away. */
#define FLUSH_EVERY 64u

bool rvv_judge_init(rvv_judge *j, uint32_t width, uint32_t height, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->pools[0].target = GL_ANY_SAMPLES_PASSED;
    j->pools[1].target = GL_SAMPLES_PASSED;
    return rvv_target_create(&j->target, width, height, false, err, errlen);
}

bool rvv_judge_resize(rvv_judge *j, uint32_t width, uint32_t height, char *err, size_t errlen)
{
    if (j->target.width == width && j->target.height == height)
        return true;
    rvv_target_free(&j->target);
    return rvv_target_create(&j->target, width, height, false, err, errlen);
}

void rvv_judge_free(rvv_judge *j)
{
    rvv_target_free(&j->target);
    for (int p = 0; p < 2; p++) {
        if (j->pools[p].count)
            glDeleteQueries((GLsizei)j->pools[p].count, j->pools[p].queries);
        free(j->pools[p].queries);
    }
    memset(j, 0, sizeof *j);
}

void rvv_judge_depth(rvv_judge *j, rvv_renderer *r, const rvw_view *view, const uint8_t *include)
{
    glBindFramebuffer(GL_FRAMEBUFFER, j->target.framebuffer);
    glViewport(0, 0, (GLsizei)j->target.width, (GLsizei)j->target.height);
    glDepthMask(GL_TRUE);
    glClearDepth(1.0);
    glClear(GL_DEPTH_BUFFER_BIT);
    rvv_render_depth(r, view, include);
}

bool rvv_judge_query(rvv_judge *j, rvv_renderer *r, const uint32_t *objects, uint32_t count, GLenum target,
                     GLenum depth_func, uint32_t *results)
{
    rvv_query_pool *pool = &j->pools[target == GL_SAMPLES_PASSED];
    if (count > pool->count) {
        GLuint *fresh = realloc(pool->queries, (size_t)count * sizeof *fresh);
        if (!fresh)
            return false;
        pool->queries = fresh;
        glGenQueries((GLsizei)(count - pool->count), pool->queries + pool->count);
        pool->count = count;
    }
    glBindFramebuffer(GL_FRAMEBUFFER, j->target.framebuffer);
    glViewport(0, 0, (GLsizei)j->target.width, (GLsizei)j->target.height);
    glUseProgram(r->depth_program);
    glBindVertexArray(r->vao);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(depth_func);
    glDepthMask(GL_FALSE);
    glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_FALSE);
    for (uint32_t k = 0; k < count; k++) {
        glBeginQuery(target, pool->queries[k]);
        rvv_render_object_depth(r, objects[k]);
        glEndQuery(target);
        if (k % FLUSH_EVERY == FLUSH_EVERY - 1)
            glFlush();
    }
    for (uint32_t k = 0; k < count; k++) {
        GLuint v = 0;
        glGetQueryObjectuiv(pool->queries[k], GL_QUERY_RESULT, &v);
        results[k] = v;
    }
    glDepthMask(GL_TRUE);
    glDepthFunc(GL_LESS);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glBindVertexArray(0);
    return true;
}
