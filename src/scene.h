/* Scene-node hierarchy internals (DESIGN.md §2). Structure of arrays indexed by slot.
 * Other modules read these arrays directly (read-only) during a frame. */
#ifndef RVI_SCENE_H
#define RVI_SCENE_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/pool.h"
#include "core/vec.h"

/* Per-node flag bits (rvi_scene.flags). Modules set their own attachment bits. */
enum {
    RVI_NODE_MOVED          = 1u << 0,  /* own local transform changed since the last update */
    RVI_NODE_HAS_GEOMETRY   = 1u << 1,  /* set_bounds gave a local sphere */
    RVI_NODE_BOUNDS_DIRTY   = 1u << 2,  /* world sphere must be recomputed */
    RVI_NODE_HAS_LOD        = 1u << 8,
    RVI_NODE_HAS_HLOD       = 1u << 9,
    RVI_NODE_OCCLUDER       = 1u << 10, /* persistent occluder box */
    RVI_NODE_HAS_TEST_BOX   = 1u << 11,
    RVI_NODE_PARTITION_GROUP= 1u << 12,
    RVI_NODE_PARTITION_PART = 1u << 13,
    RVI_NODE_PROJECTION     = 1u << 14, /* backed by a journal projection */
    RVI_NODE_TRANSLUCENT    = 1u << 15,
    RVI_NODE_HIDDEN         = 1u << 16, /* never drawn (projection flag hidden) */
};

typedef struct rvi_scene {
    rvi_pool pool;            /* slot allocation, generations, tag */
    /* hierarchy links (RVI_INDEX_NONE = none) */
    uint32_t *parent;
    uint32_t *first_child;
    uint32_t *next_sibling;
    uint32_t *prev_sibling;
    uint32_t *flags;
    /* local transform */
    float (*position)[3];
    float (*rotation)[4];     /* quaternion x, y, z, w */
    float (*scale)[3];
    /* derived */
    float (*world_matrix)[16];/* column-major */
    float (*local_sphere)[4]; /* own geometry, local space: x, y, z, radius */
    float (*world_sphere)[4]; /* world space, encloses own geometry and every descendant's;
                                 radius < 0 = empty subtree */
    uint32_t capacity;
    /* scene.c adds what it needs below (dirty lists, stats, roots, ...) */
} rvi_scene;

rv_result rvi_scene_init(rvi_scene *scene, rvi_heap *heap, uint32_t capacity, uint16_t tag);
void rvi_scene_fini(rvi_scene *scene, rvi_heap *heap);

/* Resolves a public handle to a live slot index (RV_ERR_STALE_HANDLE otherwise). */
static inline rv_result rvi_node_index(const rvi_scene *scene, rv_node node, uint32_t *out_index)
{
    return rvi_pool_resolve(&scene->pool, node.id, out_index);
}
static inline rv_node rvi_node_handle(const rvi_scene *scene, uint32_t index)
{
    rv_node n = { rvi_pool_handle(&scene->pool, index) };
    return n;
}

#endif
