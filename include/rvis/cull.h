/* rvis/cull.h — Hierarchical frustum culling (rv_visit_visible) and spatial grouping.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_CULL_H
#define RVIS_CULL_H

#include "core.h"
#include "frustum.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Hierarchical frustum culling and spatial grouping (docs/design.md §2). The walk reads world
 * bounds as of the last rv_update_world: update first, then cull. */

/* What one hierarchical walk did. */
typedef struct rv_cull_counts {
    uint32_t visited; /* nodes the walk reached (tested, pruned, or enumerated inside) */
    uint32_t pruned;  /* subtrees rejected whole: world sphere outside a plane, or no
                         geometry anywhere in it (counted once, at the subtree's top) */
    uint32_t tested;  /* sphere-against-frustum classifications made (planes a sphere was
                         wholly inside are not tested again below it; a subtree inside
                         every plane needs none) */
    uint32_t visible; /* nodes handed out (calls made to the callback) */
} rv_cull_counts;

/* Called by rv_visit_visible for each visible node that has geometry. world_matrix
 * (column-major float[16]) points into the world and is valid during the call. Return
 * true to continue, false to stop the walk. The callback may read the world and use the
 * transform and bounds setters; calls that change the hierarchy or update it (create,
 * destroy, attach, detach, rv_group_spatially, rv_update_world, a nested visit) or its
 * flags (rv_node_set_flags) return RV_ERR_BAD_STATE while it runs. */
typedef bool (*rv_visit_fn)(rv_node node, const float world_matrix[16], void *user);

/* Walks the hierarchy under root (RV_NODE_NONE: every root, in root order) depth-first,
 * parents before children, children in attach order, and calls callback for each node
 * that has geometry (rv_node_set_bounds) and is visible. It does not draw: the order of
 * drawing stays the host's. A subtree whose world sphere is outside the frustum is skipped
 * in one test; once a sphere is wholly inside a plane, that plane is not tested again
 * below it (plane masking, Assarsson & Möller 2000). A node with children is handed out
 * only when its own geometry sphere (not just its subtree's) meets the frustum.
 * A node flagged hidden (RV_NODE_FLAG_HIDDEN, or a hidden projection) is skipped with its
 * whole subtree. Conservative: any other node is never skipped when its own geometry's
 * world sphere, or its world bounds, meets the frustum (up to float rounding at tangency).
 * Spheres only: a node's test box (rv_node_set_test_box) is for the frame's views (rv_frame,
 * rv_cull_view).
 * Iterative (any depth); never allocates; O(visited nodes).
 * counts: optional (NULL), filled on return, also when the callback stopped the walk.
 * Returns RV_OK whether or not the callback stopped the walk.
 * Errors: RV_ERR_INVALID_ARG (world, frustum or callback NULL), RV_ERR_STALE_HANDLE (root),
 * RV_ERR_BAD_STATE (called from inside a visit callback), RV_ERR_INVALID_ARG
 * (frustum->plane_mask has bits above bit 5, as rv_cull_spheres refuses), RV_ERR_NOT_FINITE
 * (a plane in frustum->plane_mask holds a NaN or an infinity); nothing is visited. */
RV_API rv_result rv_visit_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                                  rv_visit_fn callback, void *user, rv_cull_counts *counts);

/* As rv_visit_visible, writing the visible nodes in walk order into out_nodes (capacity
 * entries, caller-owned). *out_count receives the number of visible nodes, which may
 * exceed capacity: then the first capacity are written and RV_ERR_CAPACITY is returned
 * (grow the array to *out_count and call again). out_nodes may be NULL when capacity is 0
 * (a count-only walk: *out_count is set, and the call returns RV_ERR_CAPACITY when
 * anything is visible, as for any array too small). Errors: RV_ERR_INVALID_ARG (world, frustum or out_count NULL, or
 * out_nodes NULL with capacity > 0), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE,
 * RV_ERR_INVALID_ARG (plane_mask bits above bit 5), RV_ERR_NOT_FINITE (nothing written),
 * RV_ERR_CAPACITY. */
RV_API rv_result rv_collect_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                                    rv_node *out_nodes, uint32_t capacity, uint32_t *out_count,
                                    rv_cull_counts *counts);

/* Inserts intermediate group nodes between parent and a flat list of its children so they
 * cull hierarchically: a binary bounding-volume hierarchy built top-down by median split
 * of the children's world-sphere centres along the axis of largest spread, until a group
 * holds at most leaf_size children (a level with 20,000 loose pieces then costs O(log n)
 * tests where it is out of view, not 20,000).
 * parent RV_NODE_NONE groups roots: the children are roots and the two top groups become
 * roots (after the other roots).
 * children: count distinct handles, each a direct child of parent (a root when parent is
 * RV_NODE_NONE); NULL selects every current child of parent, or every root (count is then
 * ignored). Groups are identity nodes without
 * geometry, so no child's world matrix changes; the children keep their relative order
 * within a group, and the new groups come after the parent's other children (walks and
 * visits then reach the grouped ones last). leaf_size: 0 = default 32; otherwise >= 2. Nothing happens when there are
 * at most leaf_size children. *out_groups (optional) receives the number of groups created (untouched on error).
 * Call rv_update_world before: the split reads the children's world spheres as of the last
 * update. The groups' world spheres are computed by the call itself, so the result culls
 * at once; the parent's own sphere is made exact again at the next update. The groups are
 * ordinary nodes the host then owns: they stay when their children die, and grouping the
 * same parent again (children NULL) groups the old groups with the rest rather than
 * replacing them. A host that regroups a churning list destroys the old groups first
 * (rv_node_destroy_reroot each: their children go back to being roots, then attach them
 * to parent), or it keeps every empty group it ever made.
 * Cost O(count log count); allocates a scratch array (freed before return) and node
 * storage. Errors: RV_ERR_INVALID_ARG (world NULL, a child that is not a direct child of
 * parent, a repeated child, leaf_size 1),
 * RV_ERR_STALE_HANDLE (parent other than RV_NODE_NONE, or a child), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY,
 * RV_ERR_BAD_STATE (inside a visit, or a child to group is a journal projection's node,
 * which its render scene places: pass the host's own children instead). On every error the
 * world is unchanged. */
RV_API rv_result rv_group_spatially(rv_world *world, rv_node parent, const rv_node *children,
                                    uint32_t count, uint32_t leaf_size, uint32_t *out_groups);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_CULL_H */
