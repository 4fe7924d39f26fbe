#include "world.h"
#include "core/check.h"
#include "frame.h"
#include "lod.h"
#include "occlusion.h"
#include "partition.h"
#include "residency.h"

#include <string.h>

/* rv_world_desc.group_retest_frames when zero (CHC++ retests visible nodes on a similar
 * interval). */
#define DEFAULT_GROUP_RETEST_FRAMES 4u

static rv_result resolve_desc(const rv_world_desc *in, rv_world_desc *out)
{
    rv_world_desc d = in ? *in : (rv_world_desc){0};
    if (d.node_capacity == 0)
        d.node_capacity = 1024;
    if (d.node_capacity > RVI_POOL_MAX_SLOTS)
        return RV_ERR_INVALID_ARG;
    if (d.jobs.max_workers > RV_MAX_WORKERS)
        return RV_ERR_INVALID_ARG;
    if (d.jobs.max_workers == 0)
        d.jobs.max_workers = 1;
    if (d.group_retest_frames > RV_MAX_GROUP_RETEST_FRAMES)
        return RV_ERR_INVALID_ARG;
    if (d.group_retest_frames == 0)
        d.group_retest_frames = DEFAULT_GROUP_RETEST_FRAMES;
    /* Every module desc is checked here, so a bad one is refused at creation rather than
     * at the module's first use. */
    rv_lod_desc lod;
    RVI_TRY(rvi_lod_resolve_desc(&d.lod, &lod));
    RVI_TRY(rvi_occlusion_check_desc(&d.occlusion));
    RVI_TRY(rvi_residency_check_desc(&d.residency));
    RVI_TRY(rvi_partition_check_desc(&d.partition));
    *out = d;
    return RV_OK;
}

rv_result rv_world_create(const rv_world_desc *desc, rv_world **out_world)
{
    if (!out_world)
        return RV_ERR_INVALID_ARG;
    rv_world_desc resolved;
    RVI_TRY(resolve_desc(desc, &resolved));
    rvi_heap heap;
    rvi_heap_init(&heap, &resolved.allocator);
    uint16_t tag;
    if (!rvi_pool_tag_claim(&tag))
        return RV_ERR_CAPACITY;
    rv_world *world = rvi_alloc(&heap, sizeof *world);
    if (!world) {
        rvi_pool_tag_release(tag);
        return RV_ERR_OUT_OF_MEMORY;
    }
    memset(world, 0, sizeof *world);
    world->heap = heap;
    world->desc = resolved;
    world->tag = tag;
    rv_result r = rvi_scene_init(&world->scene, &world->heap, resolved.node_capacity, world->tag);
    if (r != RV_OK) {
        rvi_heap h = world->heap;
        rvi_free(&h, world, sizeof *world);
        rvi_pool_tag_release(tag);
        return r;
    }
    *out_world = world;
    return RV_OK;
}

void rv_world_destroy(rv_world *world)
{
    if (!world)
        return;
    for (int i = RVI_MODULE_COUNT - 1; i >= 0; i--) {
        rvi_module_hooks *m = &world->modules[i];
        if (m->state && m->destroy)
            m->destroy(world, m->state);
        m->state = NULL;
    }
    rvi_scene_fini(&world->scene, &world->heap);
    uint16_t tag = world->tag;
    rvi_heap heap = world->heap;
    rvi_free(&heap, world, sizeof *world);
    rvi_pool_tag_release(tag);
}

rv_alloc_stats rv_world_alloc_stats(const rv_world *world)
{
    rv_alloc_stats sum = {0};
    if (!world)
        return sum;
    sum = world->heap.stats;
    /* Objects the frame owns keep heaps of their own (same allocator): add theirs. */
    rvi_frame_add_alloc_stats(world, &sum);
    return sum;
}

rv_result rvi_world_register_module(rv_world *world, rvi_module_id id, const rvi_module_hooks *hooks)
{
    if (world->modules[id].state)
        return RV_ERR_BAD_STATE;
    world->modules[id] = *hooks;
    return RV_OK;
}

void rvi_world_notify_node_destroyed(rv_world *world, uint32_t node_index)
{
    for (int i = 0; i < RVI_MODULE_COUNT; i++) {
        rvi_module_hooks *m = &world->modules[i];
        if (m->state && m->node_destroyed)
            m->node_destroyed(world, m->state, node_index);
    }
}
