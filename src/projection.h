/* Render scene internals (DESIGN.md §7): the projection table and its incremental indices.
 * The frame reads rows and index arrays directly (read-only) during a frame. */
#ifndef RVI_PROJECTION_H
#define RVI_PROJECTION_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/map.h"
#include "core/vec.h"

/* Internal index ids; the public rv_projection_index is this + 1. */
enum {
    RVI_IX_OUTDOOR_STATIC,
    RVI_IX_DYNAMIC,
    RVI_IX_TRANSLUCENT,
    RVI_IX_SELECTABLE,
    RVI_IX_LIGHT_CANDIDATE,
    RVI_IX_DIRTY,
    RVI_IX_COUNT
};

/* One projection. Array of structures on purpose: a delta touches most fields of one row,
 * and the per-frame hot loops (culling, LOD) read the backing nodes' arrays, not rows. */
typedef struct rvi_projection_row {
    uint64_t key;
    uint64_t node;             /* backing rv_node id; 0 = none */
    rv_projection projection;
    uint32_t incarnation;
    uint32_t generation;
    uint32_t dirty;            /* RV_DIRTY_* */
    uint32_t pos[RVI_IX_COUNT];/* position in each index; RVI_INDEX_NONE when absent */
    uint32_t bucket;           /* cell bucket of a cell static, else RVI_INDEX_NONE */
    uint32_t bucket_pos;
    uint32_t child_next;       /* siblings under the same parent key (equipped children) */
    uint32_t child_prev;
    uint32_t next_free;        /* free-list link while dead */
    bool live;
    bool blocked;              /* equipped child whose node would close a cycle: a root for now */
} rvi_projection_row;

/* The cell statics of one cell (swap-remove with back-indices in the rows). */
typedef struct rvi_cell_bucket {
    uint64_t cell;
    rvi_vec slots;      /* uint32_t */
    uint32_t pending;   /* insertions reserved by the batch being applied */
    uint32_t next_free; /* free-list link while unused (its slots storage is kept) */
    bool in_use;
    bool touched;       /* in the batch's touched list: released at the batch end if empty */
} rvi_cell_bucket;

typedef struct rvi_digest_entry {
    uint64_t key;
    uint32_t slot;
} rvi_digest_entry;

struct rv_render_scene {
    rvi_heap heap;
    rvi_projection_row *rows;
    uint32_t capacity;         /* rows and every index array */
    uint32_t high;             /* slots ever used */
    uint32_t live;
    uint32_t free_head;
    uint32_t *index[RVI_IX_COUNT];
    uint32_t index_count[RVI_IX_COUNT];
    rvi_map key_lookup;        /* key -> slot of the live projection */
    rvi_map cell_lookup;       /* cell -> bucket (in use) */
    rvi_vec buckets;           /* rvi_cell_bucket */
    uint32_t bucket_free;
    uint32_t cells_nonempty;
    uint32_t cell_static_count;
    rvi_vec touched;           /* uint32_t buckets reserved by the batch being applied */
    rvi_map child_lookup;      /* parent key -> first child slot (equipped children) */
    uint32_t equipped_count;
    uint32_t orphaned;         /* live equipped children whose parent key is not live */
    rv_world *world;           /* NULL: standalone */
    rvi_map node_lookup;       /* node slot index -> projection slot (world bound) */
    uint32_t blocked;          /* rows with blocked set */
    uint32_t generation;
    uint64_t last_sequence;
    rv_delta_observer observer;
    void *observer_user;
    bool in_observer;
    rvi_digest_entry *digest_entries; /* 2 * digest_capacity: the sort's two halves */
    uint32_t digest_capacity;
    rv_render_scene_stats stats;
};

/* Binds a scene to a world (what rv_render_scene_create does with desc->world; the frame
 * may call it for a scene made standalone): every live projection gets a node, and the
 * scene registers as the world's RVI_MODULE_PROJECTION (hooks: a destroyed node is
 * forgotten; a destroyed world unbinds). All or nothing. RV_ERR_BAD_STATE when the world
 * already has a render scene, this scene another world, or a visit is running. */
rv_result rvi_render_scene_bind_world(rv_render_scene *scene, rv_world *world);
/* Destroys the scene's nodes and releases the world's module slot. */
void rvi_render_scene_unbind_world(rv_render_scene *scene);

/* The projection slot a node of the bound world backs, or RVI_INDEX_NONE. */
uint32_t rvi_render_scene_slot_of_node(const rv_render_scene *scene, uint32_t node_index);

#endif
