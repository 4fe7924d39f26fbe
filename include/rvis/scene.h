/* rvis/scene.h — The node hierarchy: transforms, world matrices, world bounds.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_SCENE_H
#define RVIS_SCENE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Node hierarchy (docs/design.md §2). A node has a local transform (position, rotation
 * quaternion, scale), a world matrix derived from it and its ancestors', an optional
 * geometry bounding sphere in local space, and world bounds: one sphere enclosing its own
 * geometry and every descendant's. Nodes are created in a world and named by rv_node
 * handles; every function rejects a stale or foreign handle (one of another world) with
 * RV_ERR_STALE_HANDLE and changes nothing. A foreign handle is told by the world's 16-bit
 * tag: no two live worlds share one, and a world takes a destroyed world's tag only after
 * at least 65,534 other tags were handed out between them (a handle kept past its world's
 * destruction is then no longer refused by that world; docs/reliability.md). A world is
 * used from one thread at a time.
 *
 * Changes (setters, attach, set_bounds, create, destroy) take effect in world matrices and
 * world bounds at the next rv_update_world; until then the getters answer as of the last
 * update. While an rv_visit_visible callback runs, calls that change the hierarchy
 * (create, destroy, attach, detach, group, update) return RV_ERR_BAD_STATE. */

/* Per-world scene counters. */
typedef struct rv_scene_stats {
    uint32_t nodes;                  /* live nodes */
    uint32_t matrices_recomputed;    /* world matrices recomputed by the last rv_update_world */
    uint32_t bounds_recomputed;      /* world spheres recomputed by the last rv_update_world
                                        (each node at most once per update) */
    uint32_t transform_stale;        /* nodes whose world placement is unknown: their transform,
                                        or an ancestor's, could not be composed (see
                                        rv_update_world); not culled until it composes again */
} rv_scene_stats;

/* Creates a node under parent (RV_NODE_NONE: a root), appended after its last sibling,
 * with identity transform and no geometry. It counts as moved. Until the next update its
 * world matrix is its parent's and its world bounds are empty.
 * May grow node storage (which invalidates pointers from rv_node_transform_ptrs).
 * Errors: RV_ERR_INVALID_ARG (world or out NULL), RV_ERR_STALE_HANDLE (parent),
 * RV_ERR_CAPACITY (2^24 slots in use), RV_ERR_OUT_OF_MEMORY, RV_ERR_BAD_STATE (inside a
 * visit callback, or parent is a journal projection's node: see rv_node_attach). *out and
 * the world are untouched on error. A test box on parent
 * (rv_node_set_test_box) must enclose the new node's geometry too: it does not grow. */
RV_API rv_result rv_node_create(rv_world *world, rv_node parent, rv_node *out);

/* Destroys node and its whole subtree; every handle into it goes stale. O(subtree size),
 * iterative: any depth works. Never allocates. The parent's world sphere still encloses
 * the gone subtree until rv_update_world recomputes it exactly: once it has seen as many
 * child changes as it has children, or when its own bounds are set (docs/scene.md, "Grow
 * at once, shrink lazily"); never smaller than its contents. Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_destroy_subtree(rv_world *world, rv_node node);

/* Destroys node only; its children become roots (appended to the root list in their
 * order), keeping their local transforms, so their world placement changes unless the node
 * was identity under an identity chain. O(children). Errors as rv_node_destroy_subtree,
 * and RV_ERR_BAD_STATE when a child is a journal projection's node (an equipped child,
 * which its render scene places: rerooted it would keep its transform relative to the
 * body; nothing changes). */
RV_API rv_result rv_node_destroy_reroot(rv_world *world, rv_node node);

/* Makes child the last child of parent, moving it from wherever it was (another parent or
 * the root list). Refused with RV_ERR_CYCLE when parent is child or a descendant of it: the
 * tree is left unchanged. The child keeps its local transform (its world placement follows
 * the new parent at the next update; until then the culls find it where it stands, the new
 * parent's and its ancestors' world spheres grown to hold it). Attaching to the current
 * parent does nothing. Costs
 * O(depth of parent) for the cycle check; never allocates.
 * parent must be a live node: RV_NODE_NONE is refused (use rv_node_detach to make a root).
 * A test box on parent or above it (rv_node_set_test_box) must enclose child's subtree
 * too: it does not grow, and what lies outside it is culled with it.
 * A journal projection's node takes only its render scene's nodes under it (its equipped
 * children): when the projection leaves, a host node there would become a root holding its
 * offset from the body as its world placement. Keep such a node a root and move it with
 * the projection, or register it as an equipped child projection.
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE (either handle, or parent
 * RV_NODE_NONE), RV_ERR_BAD_STATE (during a visit, see above, or child or parent is a
 * journal projection's node, which its render scene places), RV_ERR_CYCLE; where several
 * apply, the first of them in this order is answered. */
RV_API rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child);

/* Makes node a root, appended to the root list (its local transform becomes its world
 * transform at the next update). A root stays where it is. Never allocates.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (as rv_node_attach). */
RV_API rv_result rv_node_detach(rv_world *world, rv_node node);

/* Local transform setters; each marks the node moved. The local matrix is
 * translate(position) * rotate(quaternion) * scale(scale). position: float[3], world units
 * of the parent's space; scale: float[3] factors (negative mirrors; a zero component is
 * allowed and collapses the node); rotation: quaternion float[4] (x, y, z, w), normalised
 * by rvis; axis: float[3], any nonzero length, radians counter-clockwise about it. A
 * quaternion or axis with no normal component (each zero or subnormal) is refused as zero,
 * so the verdict does not depend on whether the host flushes subnormals to zero (DAZ).
 * Never allocate. Errors: RV_ERR_INVALID_ARG (world or array NULL, a zero quaternion or
 * axis), RV_ERR_NOT_FINITE (a NaN/Inf component), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (a
 * node backed by a journal projection, which takes its transform from its projection); the
 * node is unchanged on every error. */
RV_API rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3]);
/* Sets the local scale (float[3] factors); errors as rv_node_set_position. */
RV_API rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3]);
/* Sets the local rotation (quaternion float[4], x y z w, normalised by rvis); errors as
 * rv_node_set_position, plus RV_ERR_INVALID_ARG for a zero quaternion. */
RV_API rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4]);
/* Sets the local rotation from an axis (float[3], nonzero) and an angle in radians; errors
 * as rv_node_set_position. */
RV_API rv_result rv_node_set_rotation_axis_angle(rv_world *world, rv_node node, const float axis[3], float radians);

/* Sets the local transform from a host's matrix: column-major float[16], affine (row 3 is
 * 0 0 0 1), any invertible or singular linear part, shear and mirrors included, e.g. an
 * engine's own transform or a matrix from a file. The node's world matrix is then
 * parent world * matrix in float (a root's is the matrix, bit for bit, its bottom row
 * stored as 0 0 0 1 even when given with -0), and its bounds are
 * scaled by an upper bound of the matrix's largest stretch (exact up to rounding for a
 * rotation times a scale). Marks the node moved; the node holds
 * the matrix until rv_node_set_rotation, rv_node_set_rotation_axis_angle or
 * rv_node_set_scale makes it a position, rotation and scale again (rv_node_set_position
 * only replaces the matrix's translation). rv_node_get_transform then reads the translation
 * and a rotation and scale decomposed from the matrix (signed scales, x negative for a
 * mirror), exact up to rounding when the columns are orthogonal, a column longer than
 * FLT_MAX read as FLT_MAX; a setter that returns the node to a decomposed transform loses
 * any shear. The matrix is copied. The first call
 * in a world allocates 36 bytes per node slot for every node's matrix (grown with the
 * world); no later call allocates.
 * Errors: RV_ERR_INVALID_ARG (world or matrix NULL, row 3 not 0 0 0 1), RV_ERR_NOT_FINITE
 * (a NaN/Inf element, row 3's included: it is reported over a wrong row 3),
 * RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (a node backed by a journal
 * projection, which takes its transform from its projection), RV_ERR_OUT_OF_MEMORY (the
 * first call in a world); the node is unchanged on every error. */
RV_API rv_result rv_node_set_local_matrix(rv_world *world, rv_node node, const float matrix[16]);
/* The node's local matrix (column-major float[16], row 3 = 0 0 0 1) as the next
 * rv_update_world composes it: the host's matrix, or translate * rotate * scale.
 * Errors: RV_ERR_INVALID_ARG (world or out NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_get_local_matrix(const rv_world *world, rv_node node, float out[16]);

/* Reads the local transform into any non-NULL outputs (float[3], float[4], float[3]); for a
 * node holding a matrix (rv_node_set_local_matrix), its translation and decomposition.
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_get_transform(const rv_world *world, rv_node node, float position[3],
                                       float quaternion[4], float scale[3]);

/* Pointers to the node's local position (float[3]), rotation (float[4], x y z w) and scale
 * (float[3]) for allocation-free writes (animation). Any output may be NULL. A node holding
 * a matrix (rv_node_set_local_matrix) gives only its position, the matrix's translation:
 * asking it for rotation or scale is RV_ERR_BAD_STATE, nothing written (writes through
 * pointers fetched before it took the matrix are ignored, by rv_node_get_transform too,
 * and a setter that makes it a rotation and scale again starts from the matrix's). After
 * writing,
 * call rv_node_mark_moved: the node cannot see the write. The pointers are owned by the
 * world and stay valid until the next call that may create nodes in this world
 * (rv_node_create, rv_group_spatially, and every call that drains a journal holding
 * registrations into the world: rv_frame, rv_frame_begin, rv_render_scene_apply; storage
 * may grow) or destroys this node; re-fetch them after any of those (per frame, after
 * rv_frame_begin, is the safe habit). A rotation written here need not be normalised (rv_update_world
 * divides by its length). Values must be finite and the quaternion nonzero: otherwise
 * rv_update_world reports it and the node keeps its previous world matrix.
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (above,
 * or a node backed by a journal projection). */
RV_API rv_result rv_node_transform_ptrs(rv_world *world, rv_node node, float **position,
                                        float **quaternion, float **scale);

/* Marks node moved after in-place writes. Never allocates.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_mark_moved(rv_world *world, rv_node node);

/* Declares the node's own geometry bounds as a sphere in local space (centre float[3],
 * radius in local units, >= 0), e.g. the mesh's measured bounds. radius < 0 clears it (the
 * node has no geometry of its own and only groups others). Takes effect at the next update.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (NaN/Inf, node unchanged),
 * RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (a node backed by a journal projection, whose
 * bounds are its projection's). */
RV_API rv_result rv_node_set_bounds(rv_world *world, rv_node node, const float center[3], float radius);

/* Node flags (rv_node_set_flags). */
enum {
    RV_NODE_FLAG_HIDDEN = 1u << 0,      /* not drawn, nor is anything under it, in every view
                                           (rv_frame, rv_cull_view, rv_visit_visible,
                                           rv_collect_visible, rv_hlod_select: neither drawn
                                           nor loaded); an occluder on it or under it hides
                                           nothing */
    RV_NODE_FLAG_TRANSLUCENT = 1u << 1  /* listed with the frame's translucent items (far to
                                           near) instead of the opaque ones */
};

/* Replaces the node's flags (RV_NODE_FLAG_*); they take effect at the next frame or walk,
 * without an update. A node backed by a journal projection takes them from its projection
 * (RV_PROJECTION_HIDDEN, RV_PROJECTION_TRANSLUCENT) and refuses this call. Never allocates.
 * Errors: RV_ERR_INVALID_ARG (world NULL, an unknown bit), RV_ERR_STALE_HANDLE,
 * RV_ERR_BAD_STATE (a projection-backed node; inside a visit callback or the host's
 * parallel_for); the node is unchanged on error. */
RV_API rv_result rv_node_set_flags(rv_world *world, rv_node node, uint32_t flags);
/* Reads the node's flags (a projection-backed node's, as its projection set them; an
 * equipped child not under its parent's node reads hidden, see rv_render_scene_create).
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_get_flags(const rv_world *world, rv_node node, uint32_t *out_flags);

/* Sets the host's key of the node, any 64-bit value (an entity id, an index, a pointer cast
 * to uintptr_t): rv_frame and rv_cull_view hand it back in each rv_draw_item of the node,
 * so the host finds its object without a map from handles. 0 until set, and again once the
 * slot is reused by a new node. A projection-backed node's key is its journal source key
 * and refuses this call. Never allocates. Errors: RV_ERR_INVALID_ARG (world NULL),
 * RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (a projection-backed node); nothing changes on
 * error. */
RV_API rv_result rv_node_set_key(rv_world *world, rv_node node, uint64_t key);
/* Reads the node's key (a projection-backed node's journal source key).
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_get_key(const rv_world *world, rv_node node, uint64_t *out_key);

/* Recomputes world matrices and world bounds of what changed since the last call: moved
 * nodes and their descendants (matrices and exact spheres), then each affected ancestor's
 * sphere once. Unchanged nodes are not touched: with nothing changed the call is O(1).
 * Iterative (no recursion; any depth) and never allocates.
 * Bounds policy: a node's world sphere encloses its own geometry sphere (centre transformed,
 * radius times an upper bound of the world matrix's largest axis scale) and every child's
 * world sphere, merged pairwise with the exact smallest sphere enclosing two spheres. An
 * ancestor grows at once to enclose a changed child and is recomputed exactly when its own
 * bounds changed or as many child changes (a child lost counts as one) accumulated as it
 * has children: a sphere may be larger than minimal, never smaller (culling stays
 * conservative), and losing one of many children does not merge all the others.
 * Errors: RV_ERR_INVALID_ARG (world NULL; or a zero quaternion written in place, one
 * without a normal component counting as zero, as for rv_node_set_rotation),
 * RV_ERR_NOT_FINITE (a transform written in place was not finite, or a world matrix
 * overflowed): every other node is updated; the offending nodes keep their previous world
 * matrices and their descendants are placed under those. RV_ERR_BAD_STATE (inside a visit).
 * Such a node and its whole subtree have an unknown world placement: they stay marked
 * (rv_world_scene_stats().transform_stale counts them, in every later update too) and
 * their world bounds are unbounded (radius +inf for a node with geometry, and so for every
 * ancestor), so no culling stage (frustum walks, occlusion, LOD) drops them and the host
 * draws them with the kept matrices. The error itself is returned only by the update that
 * met the bad transform. The mark clears, for the node and the descendants it placed, at
 * the first update that composes the node again (a fixed write, a parent scale that no
 * longer overflows); its ancestors' spheres are then recomputed exactly. */
RV_API rv_result rv_update_world(rv_world *world);

/* World matrix (column-major float[16]) as of the last rv_update_world.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_world_matrix(const rv_world *world, rv_node node, float out[16]);

/* World bounds as of the last rv_update_world: float[4] = centre x, y, z, radius (world
 * units). It always encloses the node's own geometry sphere and every child's world bounds;
 * it may be larger than minimal (see rv_update_world). radius < 0 means nothing in the
 * subtree has geometry (the centre is then the node's world position); an ancestor of
 * geometry that was removed or moved away may keep a larger sphere until it is next
 * recomputed exactly.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_world_bounds(const rv_world *world, rv_node node, float out_sphere[4]);

/* The node's parent (RV_NODE_NONE for a root), first child and next sibling (RV_NODE_NONE
 * after the last), for host walks. Roots are siblings of each other: a root's next sibling
 * is the next root (see rv_world_first_root). Children keep the order they were attached in.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_parent(const rv_world *world, rv_node node, rv_node *out_parent);
/* The node's first child (RV_NODE_NONE when it has none); errors as rv_node_parent. */
RV_API rv_result rv_node_first_child(const rv_world *world, rv_node node, rv_node *out_child);
/* The node's next sibling (RV_NODE_NONE after the last); errors as rv_node_parent. */
RV_API rv_result rv_node_next_sibling(const rv_world *world, rv_node node, rv_node *out_sibling);

/* The world's first root (RV_NODE_NONE when it has no nodes); follow rv_node_next_sibling
 * for the others. Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_world_first_root(const rv_world *world, rv_node *out_root);

/* True when node names a live node of this world (false for NULL world, none, stale or
 * foreign handles). */
RV_API bool rv_node_is_valid(const rv_world *world, rv_node node);

/* Scene counters (zeroes for a NULL world). */
RV_API rv_scene_stats rv_world_scene_stats(const rv_world *world);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_SCENE_H */
