/* Boxes attached to nodes: occluder boxes (persistent occluders the frame rasterises) and
 * test boxes (a tighter bound than the sphere for the frustum and occlusion tests). */
#include "frame.h"
#include "core/check.h"
#include "scene.h"

#include <string.h>

/* ---- node boxes -------------------------------------------------------------------------- */

/* Drops a node's box attachment (swap-remove, fixing the moved box's slot). Never
 * allocates. */
void rvi_frame_drop_box(rvi_node_slots *of, rvi_vec *boxes, uint32_t node)
{
    uint32_t at = rvi_node_slots_get(of, node);
    if (at == UINT32_MAX)
        return;
    of->record[node] = UINT32_MAX;
    uint32_t last = boxes->count - 1;
    if (at != last) {
        rvi_node_box moved = RVI_VEC_AT(*boxes, rvi_node_box, last);
        RVI_VEC_AT(*boxes, rvi_node_box, at) = moved;
        of->record[moved.node] = at;
    }
    boxes->count = last;
}

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
    rvi_node_slots *of = occluder ? &f->occluder_of : &f->test_box_of;
    rvi_vec *boxes = occluder ? &f->occluders : &f->test_boxes;
    rvi_node_box b = { i, { min[0], min[1], min[2] }, { max[0], max[1], max[2] } };
    uint32_t at = rvi_node_slots_get(of, i);
    if (at != UINT32_MAX) {
        RVI_VEC_AT(*boxes, rvi_node_box, at) = b;
        return RV_OK;
    }
    /* Make room in both before changing either, so a failure leaves nothing half-made. */
    uint32_t *block, capacity;
    RVI_TRY(rvi_node_slots_prepare(&world->heap, of, i, &block, &capacity));
    rv_result r = rvi_vec_reserve(&world->heap, boxes, sizeof b, boxes->count + 1);
    if (r != RV_OK) {
        if (block != of->record)
            rvi_free(&world->heap, block, (size_t)capacity * sizeof *block);
        return r;
    }
    rvi_node_slots_commit(&world->heap, of, block, capacity);
    of->record[i] = boxes->count;
    RVI_VEC_AT(*boxes, rvi_node_box, boxes->count) = b;
    boxes->count++;
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
    rvi_frame_drop_box(occluder ? &f->occluder_of : &f->test_box_of, occluder ? &f->occluders : &f->test_boxes, i);
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
