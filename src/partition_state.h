/* Partition gate state shared by partition.c (structure, host reports, queries) and
 * partition_gate.c (gating, the end of a frame). Not for other modules: they use partition.h. */
#ifndef RVI_PARTITION_STATE_H
#define RVI_PARTITION_STATE_H

#include "partition.h"
#include "core/map.h"
#include "core/vec.h"

enum { LEAF_COMMITTED = 1u, LEAF_LADDER_COMPLETE = 2u };
/* How a group's decision of frame `stamp` was made. */
enum { GROUP_GATED = 1, GROUP_HIDDEN_BY_TEST, GROUP_HIDDEN_BY_HOST };

/* A part's frame state: one byte per part in rvi_partition.part_state, parallel to parts,
 * so every pass of a frame reads and writes a dense array (8 KiB for 8192 parts) and
 * touches a part's record only when its leaves or activation timing matter. */
enum {
    PART_VISIBLE = 1u << 0,         /* the latest decision: the frustum_visible flag */
    PART_GATED = 1u << 1,           /* decided this frame, listed in gated_now until judged */
    PART_ACTIVE = 1u << 2,          /* not deferred, or its activation was answered */
    PART_SEEN = 1u << 3,            /* visible at some finished frame (else never seen) */
    PART_SHOWN = 1u << 4,           /* visible at the last finished frame, listed in visible_last */
    PART_WAIT_REENTRY = 1u << 5,    /* a resync waits ... */
    PART_WAIT_ACTIVATION = 1u << 6, /* ... an activation request waits: listed in pending */
    PART_WAITING = PART_WAIT_REENTRY | PART_WAIT_ACTIVATION,
};

typedef struct rvi_partition_leaf {
    uint64_t id;
    uint64_t view_version; /* version of the last commit */
    uint32_t state;        /* LEAF_* bits; 0 = not committed */
} rvi_partition_leaf;

/* A part's record: what the frame reads only on a transition. */
typedef struct rvi_partition_part {
    uint32_t node;
    uint32_t leaf_count;
    rvi_partition_leaf *leaves;
    double expiry_ms;      /* deferred and asked: when to ask again */
    double interval_ms;    /* deferred: how long the next ask waits for an answer */
    uint32_t asks;         /* activation requests delivered, unanswered */
    bool deferred;
} rvi_partition_part;

/* 16 bytes: the gate's walk reads every group's record every frame. */
typedef struct rvi_partition_group {
    uint32_t node;
    uint8_t kind;            /* GROUP_* of frame `stamp` */
    bool todo;               /* scratch of gate_groups */
    uint8_t cull_plane;      /* the frustum plane its sphere last lay wholly outside of */
    uint64_t stamp;          /* frame of the latest decision (0 = never decided) */
} rvi_partition_group;

struct rvi_partition {
    /* desc.partition, resolved */
    void (*request_reprocess)(const rv_node *parts, uint32_t count, void *user);
    bool (*is_update_in_progress)(void *user);
    void *user;
    float margin;
    double timeout_ms, backoff, cap_ms;

    rvi_vec groups;        /* rvi_partition_group */
    rvi_vec parts;         /* rvi_partition_part */
    rvi_vec part_state;    /* uint8_t PART_* bits, parallel to parts */
    /* Node index -> record, dense so the per-frame walk never hashes: part_of_node[i] and
     * group_of_node[i] (= part_of_node + node_span) hold an index into parts / groups or
     * RVI_INDEX_NONE. Grown by make_group / set_part to the scene's capacity; a node index
     * at or past node_span names no record. One block of 2 * node_span entries. */
    uint32_t *part_of_node;
    uint32_t *group_of_node;
    uint32_t node_span;
    rvi_map leaf_of_id;    /* leaf id -> part node index << 32 | position in its leaves */
    /* Frame storage, each reserved to hold every part. */
    rvi_vec pending;       /* uint32_t part node indices whose request waits, oldest first */
    rvi_vec gated_now;     /* uint32_t part indices first gated this frame */
    rvi_vec visible_last;  /* uint32_t part indices visible at the last end of frame */
    rvi_vec sort_keys;     /* uint64_t: group node << 32 | position in pending */
    rvi_vec out_parts;     /* rv_node */
    rvi_vec out_requests;  /* rv_partition_request */

    uint64_t view_version;
    bool has_slice;
    float slice_min[3], slice_max[3];
    uint64_t frame;        /* frames begun; stamps compare against it */
    uint64_t parts_made;   /* part records created */
    uint64_t structure;    /* group and part records made or removed */
    uint64_t nested_gated; /* the last frame a group nested in a part was gated */
    /* The nodes flagged RVI_NODE_PARTITION_PATH (uint32_t indices), and scene.links_changed
     * and structure when they were marked; paths_unlisted: the list had no room, so the
     * marks are taken back from every slot. */
    rvi_vec path_nodes;
    uint64_t path_links, path_structure;
    bool paths_marked, paths_unlisted;
    uint64_t begin_links, begin_parts; /* scene.links_changed and parts_made at the frame's
                                          begin: while both are unchanged no part can have
                                          appeared under a group gated since */
    double wake_at_ms;     /* earliest expiry of a visible asked part this frame; INFINITY = none */
    bool in_frame;
    bool world_frame;      /* the open frame is the world's (rv_frame_begin .. end): the
                              walk gates it, and the host's gate calls are refused */
    bool in_callback;      /* request_reprocess is running */
    rv_partition_counts counts;
};

/* ---- lookups --------------------------------------------------------------------------- */

static inline rvi_partition_part *part_at(const rvi_partition *p, uint32_t node)
{
    if (node >= p->node_span || p->part_of_node[node] == RVI_INDEX_NONE)
        return NULL;
    return &RVI_VEC_AT(p->parts, rvi_partition_part, p->part_of_node[node]);
}

/* The index (into parts and part_state) of a node known to be a part (listed in a frame
 * list, or flagged as a part): no checks, for the per-frame loops. */
static inline uint32_t part_index(const rvi_partition *p, uint32_t node)
{
    return p->part_of_node[node];
}

static inline uint8_t *part_state(const rvi_partition *p, uint32_t index)
{
    return &RVI_VEC_AT(p->part_state, uint8_t, index);
}

static inline rvi_partition_part *part_record(const rvi_partition *p, uint32_t index)
{
    return &RVI_VEC_AT(p->parts, rvi_partition_part, index);
}

static inline rvi_partition_group *group_at(const rvi_partition *p, uint32_t node)
{
    if (node >= p->node_span || p->group_of_node[node] == RVI_INDEX_NONE)
        return NULL;
    return &RVI_VEC_AT(p->groups, rvi_partition_group, p->group_of_node[node]);
}

static inline bool is_gated_part(const rvi_scene *s, uint32_t node)
{
    uint32_t parent = s->parent[node];
    return (s->flags[node] & RVI_NODE_PARTITION_PART) && parent != RVI_INDEX_NONE &&
           (s->flags[parent] & RVI_NODE_PARTITION_GROUP);
}

/* The frustum_visible flag of the part at index: the gate's latest decision. The end of a
 * frame settles every part's flag; within a frame a group culled as a whole does not touch
 * its parts, so its decision is read here. */
static inline bool part_flag_visible(const rvi_partition *p, const rvi_scene *s, uint32_t index)
{
    bool visible = (*part_state(p, index) & PART_VISIBLE) != 0;
    uint32_t node = part_record(p, index)->node;
    if (!visible || !p->in_frame || !is_gated_part(s, node))
        return visible;
    const rvi_partition_group *g = group_at(p, s->parent[node]);
    return !(g->stamp == p->frame && g->kind != GROUP_GATED);
}

/* Every leaf committed for the current view version: a deferred part's activation is answered. */
static inline bool part_answered(const rvi_partition *p, const rvi_partition_part *part)
{
    for (uint32_t i = 0; i < part->leaf_count; i++) {
        const rvi_partition_leaf *l = &part->leaves[i];
        if (!(l->state & LEAF_COMMITTED) || l->view_version != p->view_version)
            return false;
    }
    return true;
}

/* ... and with a complete LOD ladder: a re-entry needs no resync. */
static inline bool part_satisfied(const rvi_partition *p, const rvi_partition_part *part)
{
    const uint32_t both = LEAF_COMMITTED | LEAF_LADDER_COMPLETE;
    for (uint32_t i = 0; i < part->leaf_count; i++) {
        const rvi_partition_leaf *l = &part->leaves[i];
        if ((l->state & both) != both || l->view_version != p->view_version)
            return false;
    }
    return true;
}

#endif
