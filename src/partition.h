/* Partition gate internals (docs/design.md §3) and the hooks rv_frame's walk calls.
 *
 * How the frame drives the gate, in one walk:
 *   p = rvi_partition_find(world);            NULL: no partition call was ever made, skip all
 *   rvi_partition_frame_begin(world, p, NULL) before the walk (the walk gates by itself)
 *   walk: at a node flagged RVI_NODE_PARTITION_GROUP whose world sphere passes the frustum
 *         padded by rvi_partition_margin(p) (and is not occluded):
 *             rvi_partition_gate_group(world, p, index, frustum)     then descend
 *         at a group node the walk culls as a whole (optional: groups the walk never
 *         reaches count as culled at the end anyway):
 *             rvi_partition_hide_group(world, p, index)
 *         at a node flagged RVI_NODE_PARTITION_PART: skip its subtree when
 *             rvi_partition_part_hidden(world, p, index)
 *         a group revealed later in the same walk (HLOD refinement) is gated when reached.
 *   rvi_partition_gate_unplaced(world, p, frustum)   groups the walk skipped as empty
 *   rvi_partition_frame_end(world, p, NULL, now_ms, false, &result)   flush, tick demand
 * The public rv_partition_begin_frame / gate_group / group_hidden / end_frame are thin
 * layers over these; passing a frustum to begin/end makes the gate walk the groups itself.
 */
#ifndef RVI_PARTITION_H
#define RVI_PARTITION_H

#include "rvis.h"
#include "world.h"

typedef struct rvi_partition rvi_partition;

/* The world's gate, created on first use (desc.partition is validated then; an invalid
 * desc returns its code every time and creates nothing). */
rv_result rvi_partition_state(rv_world *world, rvi_partition **out);

/* The world's gate or NULL when it was never created. */
static inline rvi_partition *rvi_partition_find(const rv_world *world)
{
    return (rvi_partition *)rvi_world_module(world, RVI_MODULE_PARTITION);
}

/* The resolved frustum margin (world units): the walk should gate a group whose sphere
 * passes the frustum padded by it, so parts near the edge are gated (and preloaded). */
float rvi_partition_margin(const rvi_partition *gate);

/* rvi_partition_frame_begin's check, changing nothing: RV_OK exactly when it would succeed
 * (it cannot fail otherwise). */
rv_result rvi_partition_check_begin(const rvi_partition *gate);

/* Starts a frame. gate_all: gate every visible group now (the standalone begin_frame);
 * NULL when the caller's walk gates groups as it reaches them. world_frame: the world's
 * frame opens it, so the host's gate calls (rv_partition_gate_group, group_hidden,
 * end_frame) are refused until it ends. RV_ERR_BAD_STATE when a frame is already open or
 * a request callback is running. */
rv_result rvi_partition_frame_begin(rv_world *world, rvi_partition *gate, const rv_frustum *gate_all,
                                    bool world_frame);

/* Gates one group (its node index): tests each part against the padded frustum and the
 * committed slice and sets the part's hidden flag for this frame. RV_ERR_NOT_FOUND when the
 * node is not a group, RV_ERR_BAD_STATE outside a frame. */
rv_result rvi_partition_gate_group(rv_world *world, rvi_partition *gate, uint32_t group_index,
                                   const rv_frustum *frustum);

/* A group culled as a whole this frame: every part hidden. Errors as gate_group. */
rv_result rvi_partition_hide_group(rv_world *world, rvi_partition *gate, uint32_t group_index);

/* True when the node is a part of a group (flagged RVI_NODE_PARTITION_PART, its parent
 * flagged RVI_NODE_PARTITION_GROUP) hidden by the gate's latest decision; false for any
 * other node. The walk skips the subtree of such a node. */
bool rvi_partition_part_hidden(const rv_world *world, const rvi_partition *gate, uint32_t node_index);

/* For a walk that skips subtrees with nothing placed in them (rv_frame's), before the end:
 * gates the groups it left whose world sphere is empty and that are not hidden (at or
 * below an RVI_NODE_HIDDEN node), as the gate's own walk does (such a sphere cannot be
 * culled, and parts with empty bounds count as visible); one nested in a part follows that
 * part's decision. Never allocates. */
void rvi_partition_gate_unplaced(rv_world *world, rvi_partition *gate, const rv_frustum *frustum);

/* Ends the frame at now_ms. regate: re-gate the groups revealed since begin against this
 * frustum (standalone end_frame); NULL: groups not gated this frame are culled. hold: the
 * frame is abandoned (rv_frame_abort): the parts' decisions stand, but the requests stay
 * waiting for the next end, none is handed out and request_reprocess is not called. Never
 * allocates. The result's requests are borrowed as documented for rv_partition_result. */
rv_result rvi_partition_frame_end(rv_world *world, rvi_partition *gate, const rv_frustum *regate,
                                  double now_ms, bool hold, rv_partition_result *out);

/* At most how many parts and requests rvi_partition_frame_end can hand out (the room its
 * own result arrays keep). */
void rvi_partition_request_bounds(const rvi_partition *gate, uint32_t *parts, uint32_t *requests);

/* Validates a desc as creation would (defaults applied), creating nothing. */
rv_result rvi_partition_check_desc(const rv_partition_desc *desc);

#endif
