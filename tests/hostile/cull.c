/* Hostile cases: hierarchical culling and spatial grouping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"

#include <string.h>

static rv_frustum box_frustum(float half)
{
    /* Orthographic, +-half in x and y, z in -1000..1000 (OpenGL depth). */
    float m[16] = { 1 / half, 0, 0, 0, 0, 1 / half, 0, 0, 0, 0, -0.001f, 0, 0, 0, 0, 1 };
    rv_frustum f;
    assert_int_equal(rv_frustum_from_view_projection(m, (rv_clip){0}, &f), RV_OK);
    return f;
}

typedef struct visit_log {
    rvh_ctx *cx;
    uint32_t calls;
    rv_result nested[4];
} visit_log;

static bool count_visit(rv_node node, const float world_matrix[16], void *user)
{
    (void)node;
    (void)world_matrix;
    ((visit_log *)user)->calls++;
    return true;
}

/* From inside a visit, structural calls are refused. */
static bool meddle(rv_node node, const float world_matrix[16], void *user)
{
    visit_log *log = user;
    (void)world_matrix;
    rv_frustum f = box_frustum(100);
    rv_node n;
    log->nested[0] = rv_visit_visible(log->cx->a, RV_NODE_NONE, &f, count_visit, log, NULL);
    log->nested[1] = rv_node_create(log->cx->a, node, &n);
    log->nested[2] = rv_node_destroy_subtree(log->cx->a, node);
    log->nested[3] = rv_update_world(log->cx->a);
    log->calls++;
    return false; /* once is enough */
}

void hostile_rv_visit_visible(rvh_ctx *cx)
{
    rv_frustum f = box_frustum(100);
    visit_log log = { cx, 0, { 0 } };
    rv_cull_counts counts;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_visit_visible(NULL, RV_NODE_NONE, &f, count_visit, &log, &counts));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_visit_visible(cx->a, RV_NODE_NONE, NULL, count_visit, &log, &counts));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_visit_visible(cx->a, RV_NODE_NONE, &f, NULL, &log, &counts));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_visit_visible(cx->a, cx->bad[i], &f, count_visit, &log, &counts));
    RVH_CHECK(cx, log.calls == 0);
    /* Structural calls from the callback: refused, the world unchanged. */
    rvh_before(cx);
    rv_result r = rv_visit_visible(cx->a, RV_NODE_NONE, &f, meddle, &log, NULL);
    rvh_after(cx, "visit with a meddling callback", __LINE__, r, RV_OK);
    for (int i = 0; i < 4; i++)
        RVH_CHECK(cx, log.nested[i] == RV_ERR_BAD_STATE);
    /* A NaN or an infinity in a plane the mask uses is refused before anything is visited;
     * one in a plane the mask leaves out is never read. */
    rv_frustum all = box_frustum(1e6f), bad = f;
    uint32_t expected = 0;
    log.calls = 0;
    RVH_ACCEPT(cx, rv_visit_visible(cx->a, RV_NODE_NONE, &all, count_visit, &log, NULL));
    expected = log.calls;
    RVH_CHECK(cx, expected == 3); /* root, mid and leaf have geometry */
    const float poison[2] = { NAN, -INFINITY };
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 2; k++) {
            bad = f;
            bad.planes[i][(i + k) % 4] = poison[k];
            log.calls = 0;
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_visit_visible(cx->a, RV_NODE_NONE, &bad, count_visit, &log, NULL));
            RVH_CHECK(cx, log.calls == 0);
            bad.plane_mask &= ~(1u << i);
            RVH_ACCEPT(cx, rv_visit_visible(cx->a, RV_NODE_NONE, &bad, count_visit, &log, NULL));
            RVH_CHECK(cx, log.calls == expected);
        }
    /* Mask bits above the six planes name no plane: refused, as rv_cull_spheres does. */
    bad = f;
    bad.plane_mask = UINT32_MAX;
    log.calls = 0;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_visit_visible(cx->a, RV_NODE_NONE, &bad, count_visit, &log, NULL));
    RVH_CHECK(cx, log.calls == 0);
}

void hostile_rv_collect_visible(rvh_ctx *cx)
{
    rv_frustum f = box_frustum(100);
    rv_node out[8];
    uint32_t count = 0xA5A5A5A5u;
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_collect_visible(NULL, RV_NODE_NONE, &f, out, 8, &count, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_collect_visible(cx->a, RV_NODE_NONE, NULL, out, 8, &count, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_collect_visible(cx->a, RV_NODE_NONE, &f, out, 8, NULL, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_collect_visible(cx->a, RV_NODE_NONE, &f, NULL, 8, &count, NULL));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_collect_visible(cx->a, cx->bad[i], &f, out, 8, &count, NULL));
    rv_frustum bad = f;
    bad.planes[2][1] = NAN;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_collect_visible(cx->a, RV_NODE_NONE, &bad, out, 8, &count, NULL));
    bad = f;
    bad.plane_mask |= 1u << 6;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_collect_visible(cx->a, RV_NODE_NONE, &bad, out, 8, &count, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(out, sizeof out) && count == 0xA5A5A5A5u);
    /* Too small an array: the first entries, the full count, RV_ERR_CAPACITY. */
    RVH_CHECK(cx, rv_collect_visible(cx->a, RV_NODE_NONE, &f, out, 1, &count, NULL) == RV_ERR_CAPACITY);
    RVH_CHECK(cx, count == 3 && rv_node_equal(out[0], cx->na.root) && rvh_is_poisoned(&out[1], sizeof out[1]));
    RVH_CHECK(cx, rv_collect_visible(cx->a, RV_NODE_NONE, &f, NULL, 0, &count, NULL) == RV_ERR_CAPACITY);
    RVH_CHECK(cx, count == 3); /* a count-only walk */
}

void hostile_rv_group_spatially(rvh_ctx *cx)
{
    rvh_nodes *n = &cx->na;
    rv_node kids[3];
    uint32_t groups = 0xA5A5A5A5u;
    /* Give root enough children to group. */
    for (int i = 0; i < 3; i++)
        RVH_ACCEPT(cx, rv_node_create(cx->a, n->root, &kids[i]));
    rv_node list[3] = { n->mid, n->twig, kids[0] };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_group_spatially(NULL, n->root, list, 3, 2, &groups));
    /* RV_NODE_NONE groups roots: the root's children are not roots */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_group_spatially(cx->a, RV_NODE_NONE, list, 3, 2, &groups));
    for (int i = 0; i < RVH_BAD_HANDLES; i++) {
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_group_spatially(cx->a, cx->bad[i], list, 3, 2, &groups));
        rv_node with_bad[3] = { n->mid, cx->bad[i], kids[0] };
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_group_spatially(cx->a, n->root, with_bad, 3, 2, &groups));
    }
    rv_node not_child[3] = { n->mid, n->leaf, kids[0] };   /* leaf is a grandchild */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_group_spatially(cx->a, n->root, not_child, 3, 2, &groups));
    rv_node repeated[3] = { n->mid, kids[0], n->mid };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_group_spatially(cx->a, n->root, repeated, 3, 2, &groups));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_group_spatially(cx->a, n->root, list, 3, 1, &groups));
    RVH_CHECK(cx, groups == 0xA5A5A5A5u);
    /* NULL children: every child; a huge leaf size does nothing. */
    RVH_ACCEPT(cx, rv_group_spatially(cx->a, n->root, NULL, 0, UINT32_MAX, &groups));
    RVH_CHECK(cx, groups == 0);
}
