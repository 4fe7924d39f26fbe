/* rvis/partition.h — Partition gating: per-part frustum and slice culling, resync, lazy activation.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_PARTITION_H
#define RVIS_PARTITION_H

#include "core.h"
#include "frustum.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Partition gating (docs/design.md §3). For big models split into parts: a building into storeys
 * and wings, a plant into units. A *partition group* is a node whose direct children that
 * were given leaves (rv_partition_set_part) are its *parts*; each part owns *leaves*, the
 * host's loadable items named by 64-bit host ids. Every frame each part of a visible group
 * is tested against the frustum padded by frustum_margin and against the host's committed
 * slice (a section box); a part outside either is hidden for the frame (its subtree is not
 * drawn) and its frustum_visible flag reads false, so the host's loader can skip it.
 * A hidden part misses the host's updates, so when it re-enters the gate asks the host to
 * resync exactly its leaves (coalesced per group, held while the host is busy) unless every
 * leaf is already committed for the current view version with a complete LOD ladder.
 * Deferred parts are activated on first sight through the same request, asked again at a
 * backed-off expiry until the host answers by committing every leaf.
 * The gate lives in the world and is created on the first rv_partition_* call that needs
 * it. desc.partition is validated by rv_world_create, which refuses an invalid one with its
 * code (RV_ERR_NOT_FINITE, RV_ERR_INVALID_ARG or RV_ERR_ORDER); "the desc's code" below can
 * therefore not happen for a world that exists, and is listed for completeness.
 * All times are host milliseconds from any monotonic clock (doubles). The pattern comes
 * from the partition gate of a web BIM viewer (docs/partition.md). */

/* Partition-gate host wiring and configuration (inside rv_world_desc). All optional. */
typedef struct rv_partition_desc {
    /* Asks the host to resync the leaves of these parts (node ids of parts, one group per
     * call). The array is borrowed for the call. NULL: requests are only listed in the
     * frame result. The callback may call rv_partition_leaf_committed / leaf_dropped /
     * set_view_version / set_committed_slice and read-only queries; any other rv_partition_*
     * call made from inside it returns RV_ERR_BAD_STATE. */
    void (*request_reprocess)(const rv_node *parts, uint32_t count, void *user);
    /* True while the host's update is running; resync requests are held meanwhile. Polled
     * once per rv_partition_end_frame that has requests to flush. NULL = never busy. */
    bool (*is_update_in_progress)(void *user);
    void *user;
    float frustum_margin;          /* world units, >= 0; default 0 (0 is the default, so
                                      a zero margin needs no sentinel) */
    float lazy_activation_timeout_ms; /* > 0; 0 = default 2000 */
    float lazy_activation_backoff;    /* >= 1, multiplier per unanswered request; 0 = default 2 */
    float lazy_activation_cap_ms;     /* >= timeout; 0 = default 60000 */
} rv_partition_desc;

/* What an on-demand render loop must do after this frame (the frame result reuses it). */
typedef enum rv_tick_mode {
    RV_TICK_IDLE = 0,   /* nothing waits: sleep until the host's own next event */
    RV_TICK_WAKE_AT,    /* sleep, but run a frame at wake_at_ms at the latest */
    RV_TICK_CONTINUOUS  /* keep running frames: work waits that only a frame can serve */
} rv_tick_mode;

typedef struct rv_tick_demand {
    rv_tick_mode mode;
    double wake_at_ms;  /* host milliseconds; meaningful only for RV_TICK_WAKE_AT */
} rv_tick_demand;

/* One coalesced resync request: every part of one group whose leaves must be resynced.
 * parts points into the gate's storage (see rv_partition_result). */
typedef struct rv_partition_request {
    rv_node group;
    const rv_node *parts;
    uint32_t part_count;
} rv_partition_request;

/* Counters of one frame of the gate. */
typedef struct rv_partition_counts {
    uint32_t groups_gated;          /* groups whose parts were tested */
    uint32_t groups_hidden;         /* groups culled as a whole (reported, tested out or not reached) */
    uint32_t parts_tested;          /* part tests against the padded frustum and the slice */
    uint32_t parts_visible;         /* parts visible at the end of the frame */
    uint32_t parts_reentered;       /* parts that went from hidden to visible */
    uint32_t activations_requested; /* deferred parts asked for (first time or again at expiry) */
    uint32_t parts_requested;       /* parts listed in this frame's requests */
    uint32_t parts_held;            /* parts whose request waits because the host is busy */
} rv_partition_counts;

/* What rv_partition_end_frame hands back. requests (request_count entries, each with its
 * parts) are borrowed: valid until the next rv_partition_end_frame, rv_partition_set_part,
 * rv_partition_make_group or rv_partition_remove on this world, or its destruction. They
 * list every request flushed this frame, whether or not request_reprocess is wired. */
typedef struct rv_partition_result {
    const rv_partition_request *requests;
    uint32_t request_count;
    rv_tick_demand tick;
    rv_partition_counts counts;
} rv_partition_result;

/* Makes node a partition group: its direct children given leaves with rv_partition_set_part
 * are its parts. Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE,
 * RV_ERR_DUPLICATE (already a group), RV_ERR_BAD_STATE (inside request_reprocess),
 * RV_ERR_OUT_OF_MEMORY, the desc's code (see the preamble). */
RV_API rv_result rv_partition_make_group(rv_world *world, rv_node node);

/* Makes part a partition part with these leaves (count host ids, 64-bit, any value but
 * unique across every part of the world; copied, leaves may be NULL when count is 0) or
 * replaces its leaves. A leaf kept across a replacement keeps its committed state. The part
 * is gated whenever its parent is a partition group (the hierarchy is read every frame, so
 * the order of make_group, set_part and attach does not matter). deferred: the part is not
 * active until first needed; its first visibility requests its activation. Calling again
 * with deferred = false activates it; turning an active part deferred makes it wait for
 * activation again. A new part starts never seen. A part with no leaves never needs a
 * resync. Give the part node bounds (rv_node_set_bounds, e.g. from the model's index)
 * so it can be culled before its leaves load: a part whose world bounds are empty counts
 * as visible while its group is in view (a group culled whole, by the sphere of its bounded
 * parts, hides it too; a group with nothing placed below it cannot be culled, so such a part
 * counts as visible unless a hidden part encloses its group, in rv_frame as in the gate's
 * own walk; rv_frame also leaves it culled under a node flagged RV_NODE_FLAG_HIDDEN, as it
 * does every group there). Errors: RV_ERR_INVALID_ARG (world NULL, leaves NULL with count > 0),
 * RV_ERR_STALE_HANDLE, RV_ERR_DUPLICATE (a leaf twice, or a leaf of another part),
 * RV_ERR_BAD_STATE (inside request_reprocess), RV_ERR_OUT_OF_MEMORY, the desc's code; on
 * any error the world's state is unchanged (it may keep capacity it reserved before failing,
 * reused by later calls). */
RV_API rv_result rv_partition_set_part(rv_world *world, rv_node part, const uint64_t *leaves,
                                       uint32_t count, bool deferred);

/* The node stops being a partition group and a part (whichever it was); its leaves are
 * forgotten, a request waiting for it is dropped. Destroying a node does this by itself.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (neither a group nor a
 * part), RV_ERR_BAD_STATE (inside request_reprocess). */
RV_API rv_result rv_partition_remove(rv_world *world, rv_node node);

/* Sets the current view version: the host's counter of what its loader's output is
 * current for (bumped on its own view changes). Leaves count as committed only for the
 * version they were committed for. rvis never changes it, a resync included.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_OUT_OF_MEMORY (first use), the desc's code. */
RV_API rv_result rv_partition_set_view_version(rv_world *world, uint64_t view_version);

/* The current view version (0 until set; 0 for a NULL world). */
RV_API uint64_t rv_partition_view_version(const rv_world *world);

/* Reports that the host's loader committed a leaf for view_version; ladder_complete: every
 * LOD level of the leaf is in place. Readiness is read from these reports every frame, so a
 * report may come at any time (inside request_reprocess too). Errors: RV_ERR_INVALID_ARG
 * (world NULL), RV_ERR_NOT_FOUND (no part has this leaf). */
RV_API rv_result rv_partition_leaf_committed(rv_world *world, uint64_t leaf, uint64_t view_version,
                                             bool ladder_complete);

/* Reports that the host dropped (unloaded) a leaf: it is no longer committed.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND. */
RV_API rv_result rv_partition_leaf_dropped(rv_world *world, uint64_t leaf);

/* Sets the committed slice: a world-space axis-aligned box (min float[3] <= max float[3],
 * world units; use +-FLT_MAX for an open side). Parts whose world bounds miss it are hidden
 * from the next gate on. The slice a user is still editing is the host's business: pass
 * only the committed one. Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (NaN/Inf),
 * RV_ERR_ORDER (a min above its max), RV_ERR_OUT_OF_MEMORY (first use), the desc's code;
 * the previous slice is kept on error. */
RV_API rv_result rv_partition_set_committed_slice(rv_world *world, const float min[3], const float max[3]);

/* Removes the committed slice: every part passes the slice test. Errors: RV_ERR_INVALID_ARG. */
RV_API rv_result rv_partition_clear_committed_slice(rv_world *world);

/* Starts a gate frame. With a frustum: gates every visible partition group itself (a group
 * is visible when its world bounds meet the frustum padded by frustum_margin and the nearest
 * part above it, if any, is visible), outer groups before the groups nested in their parts.
 * With frustum NULL: the host walks its own scene and calls rv_partition_gate_group for
 * each group it reaches (and rv_partition_group_hidden for a group it culls). Either way,
 * call it before the LOD pass so LOD groups nested in parts see this frame's cull, and
 * after rv_update_world (bounds are read as of the last update). Like rv_cull_spheres, the
 * tests allow for the planes' float rounding, which far from the origin keeps parts a
 * little outside (about 1.5e-6 of the distance from the origin: 1.5 units at 1e6), as
 * rv_frame's walk does.
 * Errors: RV_ERR_INVALID_ARG (world NULL, plane_mask bits above bit 5), RV_ERR_NOT_FINITE
 * (a plane of the mask not finite), RV_ERR_BAD_STATE (a frame already begun, or inside
 * request_reprocess), RV_ERR_OUT_OF_MEMORY (first use), the desc's code. */
RV_API rv_result rv_partition_begin_frame(rv_world *world, const rv_frustum *frustum);

/* Gates one group this frame: each of its parts is tested against frustum (padded by
 * frustum_margin) and the committed slice, and its frustum_visible flag set. For hosts
 * walking their own scene: call it when the walk reaches a group it did not cull, before
 * descending into the parts (skip a part whose rv_partition_part_frustum_visible is false).
 * Within a frame the last gate or group_hidden call of a group decides; re-entries are
 * judged at rv_partition_end_frame against the previous frame's outcome.
 * Errors: RV_ERR_INVALID_ARG (world or frustum NULL, plane_mask bits above bit 5),
 * RV_ERR_NOT_FINITE (a plane of the mask), RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (not a
 * group), RV_ERR_BAD_STATE (outside begin/end, inside request_reprocess, or between
 * rv_frame_begin and rv_frame_end or rv_frame_abort, whose walk gates the groups itself). */
RV_API rv_result rv_partition_gate_group(rv_world *world, rv_node group, const rv_frustum *frustum);

/* Reports a group culled as a whole this frame (by the host's frustum walk or occlusion):
 * all its parts are hidden, and so are the groups nested in them (also those gated earlier
 * this frame), so they re-enter when it comes back. Errors as gate_group. */
RV_API rv_result rv_partition_group_hidden(rv_world *world, rv_node group);

/* Ends the gate frame at now_ms (host milliseconds, finite). With a frustum, first gates
 * what was revealed since begin: groups that were not gated this frame, or that the gate's
 * own test hid, and now pass it (groups reported hidden stay hidden), and parts added to or
 * attached under a group already gated this frame. Groups neither
 * gated nor reported this frame count as culled as a whole. Then judges every part against
 * the previous frame (first sight, re-entry, activation expiry), polls readiness from the
 * leaf reports, and, unless is_update_in_progress answers true, flushes the waiting resyncs:
 * one request per group (request_reprocess is called for each if wired) and all of them in
 * *out. *out also gets the tick demand: RV_TICK_CONTINUOUS while a visible part's resync
 * waits (held: the host's update is in progress) and request_reprocess is wired; else
 * RV_TICK_WAKE_AT the earliest activation expiry of a visible deferred part whose request
 * was flushed and is unanswered; else RV_TICK_IDLE. Without request_reprocess, held requests
 * give no tick (a part whose expiry passed while the host was busy is held with them): the
 * host runs a frame when its update finishes, and reads them then. Allocates nothing.
 * Errors: RV_ERR_INVALID_ARG (world or out NULL, the frustum's plane_mask bits above bit 5),
 * RV_ERR_NOT_FINITE (now_ms, a plane of the mask), RV_ERR_BAD_STATE (no frame begun, inside
 * request_reprocess, or inside the world's frame, which rv_frame_end or rv_frame_abort
 * ends); on error the frame stays open and *out is untouched. */
RV_API rv_result rv_partition_end_frame(rv_world *world, const rv_frustum *frustum, double now_ms,
                                        rv_partition_result *out);

/* Whether node is a partition group (false for NULL, stale or foreign handles). */
RV_API bool rv_partition_is_group(const rv_world *world, rv_node node);

/* What the gate knows of one part (for host tools, debugging and tests). */
typedef struct rv_partition_part_info {
    rv_node group;                /* its parent group; RV_NODE_NONE while the parent is not a group */
    uint32_t leaf_count;
    uint32_t leaves_committed;    /* committed for the current view version */
    uint32_t leaves_complete;     /* of those, with a complete LOD ladder */
    bool deferred;
    bool active;                  /* not deferred, or its activation was answered */
    bool ever_visible;            /* false while the part has never been seen */
    bool frustum_visible;         /* as rv_partition_part_frustum_visible */
    bool resync_waiting;          /* its request waits (the host was busy at the last flush) */
    uint32_t activation_requests; /* activation requests delivered while it was not active */
    double activation_expiry_ms;  /* when the next one is due; 0 when none is */
} rv_partition_part_info;

/* Fills *out for a part. Errors: RV_ERR_INVALID_ARG (world or out NULL),
 * RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (not a part). */
RV_API rv_result rv_partition_part_get_info(const rv_world *world, rv_node part, rv_partition_part_info *out);

/* The part's frustum_visible flag: true when the gate's latest decision (this frame's, or
 * the last frame's before its group is gated) found it inside the padded frustum and the
 * committed slice in a visible group. False before its first gate. The host's loader reads
 * it to skip the part's loaders. Errors: RV_ERR_INVALID_ARG (world or out NULL),
 * RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (not a part). */
RV_API rv_result rv_partition_part_frustum_visible(const rv_world *world, rv_node part, bool *out_visible);

/* True when node, or any node above it, is a gated part whose frustum_visible flag is
 * false: the node's subtree is culled by the gate (what a LOD pass below a part reads).
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_partition_node_hidden(const rv_world *world, rv_node node, bool *out_hidden);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_PARTITION_H */
