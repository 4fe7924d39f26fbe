/* The world: the node hierarchy plus every module's state (docs/design.md §0, §8).
 * Only the frame (frame*.c) knows every module; modules reach their own state through the world and
 * create it lazily on first use (registering a finaliser), so no module needs another
 * module's code to link. */
#ifndef RVI_WORLD_H
#define RVI_WORLD_H

#include "rvis.h"
#include "core/alloc.h"
#include "scene.h"

typedef enum rvi_module_id {
    RVI_MODULE_OCCLUSION,
    RVI_MODULE_LOD,
    RVI_MODULE_HLOD,
    RVI_MODULE_PARTITION,
    RVI_MODULE_RESIDENCY,
    RVI_MODULE_JOURNAL,
    RVI_MODULE_PROJECTION,
    RVI_MODULE_FRAME,
    RVI_MODULE_VIEW_LISTS,
    RVI_MODULE_COUNT
} rvi_module_id;

typedef struct rvi_module_hooks {
    void *state;                                               /* owned by the module */
    void (*destroy)(rv_world *world, void *state);             /* called by rv_world_destroy */
    void (*node_destroyed)(rv_world *world, void *state, uint32_t node_index); /* may be NULL */
} rvi_module_hooks;

struct rv_world {
    rvi_heap heap;
    rv_world_desc desc;   /* resolved copy: defaults applied */
    uint16_t tag;         /* per-world handle tag */
    rvi_scene scene;
    rvi_module_hooks modules[RVI_MODULE_COUNT];
    bool in_frame_call;   /* an rv_frame_* call (frame.c) or rv_world_set_occlusion is running:
                             a host callback it makes may not start another */
};

/* Registers a module's state (first use). RV_ERR_BAD_STATE when already registered. */
rv_result rvi_world_register_module(rv_world *world, rvi_module_id id, const rvi_module_hooks *hooks);
/* The module's state or NULL when it has not been created yet. */
/* The slot of a live node of world: RV_ERR_INVALID_ARG (world NULL), else as
 * rvi_node_index. The entry check of the scene's calls. */
static inline rv_result rvi_world_node(const rv_world *world, rv_node node, uint32_t *out)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    return rvi_node_index(&world->scene, node, out);
}

static inline void *rvi_world_module(const rv_world *world, rvi_module_id id)
{
    return world->modules[id].state;
}
/* Called by the scene for every node index it frees (before the slot is reused). */
void rvi_world_notify_node_destroyed(rv_world *world, uint32_t node_index);

#endif
