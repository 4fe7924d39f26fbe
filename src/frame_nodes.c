/* Boxes attached to nodes: occluder boxes (persistent occluders the frame rasterises) and
 * test boxes (a tighter bound than the sphere for the frustum and occlusion tests). */
#include "frame.h"
#include "core/check.h"
#include "scene.h"

#include <string.h>

/* ---- node boxes -------------------------------------------------------------------------- */

static rv_result set_box(rv_world *world, rv_node node, const float min[3], const float max[3], bool occluder)
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3))
        return RV_ERR_NOT_FINITE;
    if (min[0] > max[0] || min[1] > max[1] || min[2] > max[2])
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f;
    RVI_TRY(rvi_frame_state(world, &f));
    rvi_node_table *boxes = occluder ? &f->occluders : &f->test_boxes;
    rvi_node_box b = { i, { min[0], min[1], min[2] }, { max[0], max[1], max[2] } };
    rvi_node_box *existing = rvi_node_table_find(boxes, sizeof b, i);
    if (existing) {
        *existing = b;
        return RV_OK;
    }
    rvi_node_table_room room;
    RVI_TRY(rvi_node_table_prepare(&world->heap, boxes, sizeof b, i, &room));
    rvi_node_table_add(&world->heap, boxes, sizeof b, &b, &room);
    world->scene.flags[i] |= occluder ? RVI_NODE_OCCLUDER : RVI_NODE_HAS_TEST_BOX;
    return RV_OK;
}

static rv_result clear_box(rv_world *world, rv_node node, bool occluder)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t i;
    RVI_TRY(rvi_node_index(&world->scene, node, &i));
    rvi_frame *f = rvi_frame_find(world);
    if (!f)
        return RV_OK;
    rvi_node_table_remove(occluder ? &f->occluders : &f->test_boxes, sizeof(rvi_node_box), i);
    world->scene.flags[i] &= ~(uint32_t)(occluder ? RVI_NODE_OCCLUDER : RVI_NODE_HAS_TEST_BOX);
    return RV_OK;
}

rv_result rv_node_set_occluder_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    return set_box(world, node, min, max, true);
}
rv_result rv_node_clear_occluder_box(rv_world *world, rv_node node) { return clear_box(world, node, true); }
rv_result rv_node_set_test_box(rv_world *world, rv_node node, const float min[3], const float max[3])
{
    return set_box(world, node, min, max, false);
}
rv_result rv_node_clear_test_box(rv_world *world, rv_node node) { return clear_box(world, node, false); }
