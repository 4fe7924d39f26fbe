/*
 * rvis — rendering visibility for engines that draw for themselves.
 *
 * One flat C API. rvis answers, once per frame, what to draw, at which level of detail
 * and which pages to load next. It never draws, never owns GPU memory, never loads files.
 *
 * "DESIGN.md §N" below names a section of the project's design contract, which is kept
 * beside the repository, not in it; docs/architecture.md and the module guides in docs/
 * say the same for users (§1 API conventions, §2 scene, §3 partition, §4 occlusion, §5 LOD, §6
 * streaming, §7 journal, §8 frame, §9 defaults).
 *
 * Conventions (DESIGN.md §1):
 *  - Every fallible call returns rv_result (RV_OK = 0). Bad input gets a specific code and
 *    leaves the object unchanged. Nothing aborts or prints on host input.
 *  - Matrices are column-major float[16] (cglm's mat4 layout); quaternions are (x, y, z, w).
 *  - Units: world units (metres by convention), radians, milliseconds, pixels.
 *  - A *_desc zeroed with {0} selects the documented default of every field.
 *  - Handles wrap 64 bits: slot index, generation, per-world tag; the zero handle is "none".
 *  - A world (and every standalone module object) is used from one thread at a time.
 *
 * Licence: MIT (see LICENSE).
 */
#ifndef RVIS_H
#define RVIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(_WIN32) && defined(RV_SHARED)
#  if defined(RV_BUILDING_LIBRARY)
#    define RV_API __declspec(dllexport)
#  else
#    define RV_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define RV_API __attribute__((visibility("default")))
#else
#  define RV_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define RV_VERSION_MAJOR 0
#define RV_VERSION_MINOR 1
#define RV_VERSION_PATCH 0

/* ======================================================================================
 * core: results, allocator, handles, clip conventions
 * ====================================================================================== */

/* Result of every fallible call. RV_OK is 0; every failure leaves the object unchanged. */
typedef enum rv_result {
    RV_OK = 0,
    RV_ERR_INVALID_ARG,   /* a NULL where one is not allowed, a size <= 0, min > max, ... */
    RV_ERR_NOT_FINITE,    /* a NaN or an infinity where a finite number is required */
    RV_ERR_STALE_HANDLE,  /* a handle whose object is gone, or that belongs to another world */
    RV_ERR_CYCLE,         /* attach would make a node its own ancestor */
    RV_ERR_OUT_OF_MEMORY, /* the allocator returned NULL; state is as before the call
                             (storage a call reserved before the failure may stay reserved,
                             so memory figures can be larger: see each call) */
    RV_ERR_CAPACITY,      /* a fixed limit (handle index space, 32-bit counts) is reached */
    RV_ERR_FROZEN,        /* the object no longer accepts this call (e.g. occluders after the first test) */
    RV_ERR_INVARIANT,     /* rvis detected a broken invariant (e.g. deltas left at publication) */
    RV_ERR_NOT_FOUND,     /* a key or id that is valid in form but unknown */
    RV_ERR_DUPLICATE,     /* the thing already exists (e.g. a Register of a live key+incarnation) */
    RV_ERR_ORDER,         /* thresholds or sequences not in the required order */
    RV_ERR_BAD_STATE,     /* the call is not allowed in the object's current state */
    RV_RESULT_COUNT_
} rv_result;

/* The enum's name as a static string ("RV_OK", "RV_ERR_CYCLE", ...); "RV_ERR_UNKNOWN" for
 * values outside the enum. Never NULL; the string is static and must not be freed. */
RV_API const char *rv_result_string(rv_result result);

/* Host allocator. Every field may be NULL: alloc and free go together, and when either is
 * NULL rvis uses libc's malloc/realloc/free for both (a lone alloc is never called). alloc
 * returns memory aligned for any C type (like malloc) or NULL on failure; realloc may be
 * NULL, in which case rvis uses alloc + copy + free. free(NULL) must be harmless.
 * rvis never calls these from more than one thread for one world at a time. */
typedef struct rv_allocator {
    void *(*alloc)(size_t size, void *user);
    void *(*realloc)(void *ptr, size_t old_size, size_t new_size, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} rv_allocator;

/* Allocation counters of one world or standalone module object, monotonic since creation.
 * A steady frame leaves allocations and reallocations unchanged. */
typedef struct rv_alloc_stats {
    uint64_t allocations;   /* successful alloc calls (realloc of NULL counts here) */
    uint64_t reallocations; /* successful realloc calls of a live block */
    uint64_t frees;         /* free calls of a live block */
    uint64_t failures;      /* alloc/realloc calls that returned NULL */
    uint64_t bytes_live;    /* bytes currently held */
    uint64_t bytes_peak;    /* largest bytes_live seen */
} rv_alloc_stats;

/* Clip-space depth convention of a projection matrix. {0} is OpenGL: NDC depth in -1..1,
 * near maps to -1. depth_zero_to_one: Direct3D / Vulkan / Metal / WebGPU (0..1).
 * reversed_z: near maps to the far end (1), far to 0 (or -1 with OpenGL depth).
 * An infinite far plane and an orthographic projection are recognised from the matrix. */
typedef struct rv_clip {
    bool depth_zero_to_one;
    bool reversed_z;
} rv_clip;

/* A world: the node hierarchy and every module the frame joins. Opaque. */
typedef struct rv_world rv_world;

/* Handle of a scene node. id 0 is "none". Layout (not a promise to hosts): bits 0..23 slot
 * index, 24..47 generation, 48..63 the owning world's tag. Compare with rv_node_equal or by id. */
typedef struct rv_node {
    uint64_t id;
} rv_node;

#define RV_NODE_NONE ((rv_node){0})

/* True when a and b name the same node (or both are none). */
static inline bool rv_node_equal(rv_node a, rv_node b) { return a.id == b.id; }

/* ==== section: frustum ================================================================ */

/* Classification of a bounding volume against a frustum. */
typedef enum rv_containment {
    RV_OUTSIDE = 0,      /* wholly outside at least one plane: cull */
    RV_INTERSECTING = 1, /* crosses at least one plane: draw */
    RV_INSIDE = 2        /* wholly inside every plane: draw, and children need no test */
} rv_containment;

/* Six world-space planes, each (a, b, c, d) with unit normal (a, b, c) pointing into the
 * frustum: a point p is inside a plane when a*px + b*py + c*pz + d >= 0. Order: left,
 * right, bottom, top, near, far. plane_mask bit i is set when plane i is valid; a degenerate
 * plane (e.g. the far plane of an infinite projection) is dropped from the mask, never
 * normalised to NaN. */
typedef struct rv_frustum {
    float planes[6][4];
    uint32_t plane_mask;
    bool orthographic; /* recognised from the matrix (w row = 0 0 0 1) */
    bool infinite_far; /* recognised from the matrix; the far plane is dropped */
} rv_frustum;


/* Extracts the six planes of a view-projection matrix (column-major float[16], clip =
 * M * world point) under the given depth convention (Gribb & Hartmann 2001, generalised to
 * 0..1 and reversed depth). Planes are normalised to unit normals pointing inward. An
 * infinite far plane or any other degenerate plane is dropped from plane_mask.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (a NaN/Inf element); *out unchanged. */
RV_API rv_result rv_frustum_from_view_projection(const float view_projection[16], rv_clip clip, rv_frustum *out);

/* Classifies a world-space sphere (centre float[3], radius >= 0, world units). Conservative:
 * RV_OUTSIDE only when the sphere lies wholly outside one valid plane (plane distance
 * d < -radius, d in float as rv_cull_spheres computes it; a d that overflows to -infinity,
 * for a centre near FLT_MAX, is not outside), RV_INSIDE when d >= radius for every valid
 * plane. A NaN/Inf centre, a NaN or negative radius, or a NULL frustum/centre answers
 * RV_INTERSECTING (draw). A frustum with plane_mask 0 (e.g. from a zero matrix) answers
 * RV_INSIDE for every valid sphere. */
RV_API rv_containment rv_frustum_classify_sphere(const rv_frustum *frustum, const float center[3], float radius);

/* As rv_frustum_classify_sphere, testing only the planes whose bits are set in *mask, and
 * clearing from *mask each plane the sphere is wholly inside of, so children of a node need
 * not test it again (plane masking, Assarsson & Möller 2000). Start with frustum->plane_mask.
 * Bits not in frustum->plane_mask are cleared from *mask. *mask is left unchanged when the
 * answer is RV_OUTSIDE or the input is invalid (answered RV_INTERSECTING as above; a NULL
 * mask also answers RV_INTERSECTING). RV_INSIDE exactly when *mask becomes 0. */
RV_API rv_containment rv_frustum_classify_sphere_masked(const rv_frustum *frustum, const float center[3],
                                                        float radius, uint32_t *mask);

/* Classifies an axis-aligned world box (min float[3] <= max float[3], world units) with the
 * nearest/farthest-vertex test (Greene 1994; Haines & Wallace). Conservative as above: a
 * NaN/Inf corner, min > max on an axis, or a NULL argument answers RV_INTERSECTING. */
RV_API rv_containment rv_frustum_classify_box(const rv_frustum *frustum, const float min[3], const float max[3]);

/* Culls instance spheres against a frustum, compacting the kept ones in place: the first
 * *out_kept spheres (and payload items) are then the spheres that meet the frustum, in
 * their original order (stable); what lies beyond them is unspecified. The batch form of
 * rv_frustum_classify_sphere for instanced draws (DESIGN.md §2).
 *
 * spheres: count * 4 floats, each sphere x, y, z, radius (world units), 4-byte aligned.
 * payload: NULL, or count items of payload_stride bytes each (e.g. a float[16] matrix per
 *   instance, stride 64), moved with their spheres; it must not overlap spheres.
 * out_kept: receives the number kept.
 *
 * The test, exactly, in every code path: for each plane in frustum->plane_mask,
 * d = ((a*x + b*y) + c*z) + w in float with separate multiplies and adds; the sphere is
 * culled when radius >= 0 and d < -radius for some plane. So a sphere with a NaN anywhere
 * or a negative radius is kept (drawn). Against exact arithmetic, only a sphere within
 * float rounding of tangency (|d + radius| below about 2.5e-7 * (|a*x| + |b*y| + |c*z| +
 * |w|), i.e. a fraction of a float step of its coordinates) may go either way. A sphere
 * whose |a*x| + |b*y| + |c*z| + |w| exceeds FLT_MAX (a centre near 1e38) may get
 * d = -infinity and be culled whatever its true distance: keep coordinates well inside
 * the float range (rv_frustum_classify_sphere keeps such a sphere). A plane_mask of 0
 * keeps everything.
 * Runs the widest path the CPU offers (AVX-512F, AVX2, SSE2 or scalar, chosen per call
 * from the CPU's feature bits); every path keeps exactly the same spheres.
 *
 * Ranges: the call touches only [spheres, spheres + 4 * count) and the payload items of
 * that range, so a job system may split an array into ranges and cull each on its own
 * thread (spheres + 4 * begin, end - begin, payload + begin * stride); each range is
 * compacted within itself, and the host draws or joins the kept prefixes.
 *
 * Errors (nothing is written, *out_kept untouched): RV_ERR_INVALID_ARG (frustum or
 * out_kept NULL; spheres NULL with count > 0; payload with payload_stride 0 or
 * count * payload_stride beyond SIZE_MAX; plane_mask bits above bit 5),
 * RV_ERR_NOT_FINITE (a plane in plane_mask holds a NaN or an infinity).
 * count 0 is RV_OK with *out_kept = 0 (spheres may then be NULL). No allocation;
 * thread-safe on disjoint arrays. */
RV_API rv_result rv_cull_spheres(const rv_frustum *frustum, float *spheres, uint32_t count, void *payload,
                                 size_t payload_stride, uint32_t *out_kept);

/* rv_cull_spheres on structure-of-arrays spheres: x, y, z and radius are count floats
 * each (world units), four distinct non-overlapping arrays, all compacted together with
 * the optional payload. The hot-loop form: each vector load is 4 to 16 spheres of one
 * component, with no transpose. Same test, order, ranges and thread rules as
 * rv_cull_spheres. Errors as rv_cull_spheres (RV_ERR_INVALID_ARG when any of x, y, z,
 * radius is NULL with count > 0). */
RV_API rv_result rv_cull_spheres_soa(const rv_frustum *frustum, float *x, float *y, float *z, float *radius,
                                     uint32_t count, void *payload, size_t payload_stride,
                                     uint32_t *out_kept);

/* ==== end section: frustum ============================================================ */



/* ==== section: scene ================================================================== */

/* Node hierarchy (DESIGN.md §2). A node has a local transform (position, rotation
 * quaternion, scale), a world matrix derived from it and its ancestors', an optional
 * geometry bounding sphere in local space, and world bounds: one sphere enclosing its own
 * geometry and every descendant's. Nodes are created in a world and named by rv_node
 * handles; every function rejects a stale or foreign handle (one of another world) with
 * RV_ERR_STALE_HANDLE and changes nothing. A world is used from one thread at a time.
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
 * visit callback). *out and the world are untouched on error. */
RV_API rv_result rv_node_create(rv_world *world, rv_node parent, rv_node *out);

/* Destroys node and its whole subtree; every handle into it goes stale. O(subtree size),
 * iterative: any depth works. Never allocates. The parent's bounds shrink at the next
 * update. Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_destroy_subtree(rv_world *world, rv_node node);

/* Destroys node only; its children become roots (appended to the root list in their
 * order), keeping their local transforms, so their world placement changes unless the node
 * was identity under an identity chain. O(children). Errors as rv_node_destroy_subtree. */
RV_API rv_result rv_node_destroy_reroot(rv_world *world, rv_node node);

/* Makes child the last child of parent, moving it from wherever it was (another parent or
 * the root list). Refused with RV_ERR_CYCLE when parent is child or a descendant of it: the
 * tree is left unchanged. The child keeps its local transform (its world placement follows
 * the new parent at the next update). Attaching to the current parent does nothing. Costs
 * O(depth of parent) for the cycle check; never allocates.
 * parent must be a live node: RV_NODE_NONE is refused (use rv_node_detach to make a root).
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE (either handle, or parent
 * RV_NODE_NONE), RV_ERR_CYCLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child);

/* Makes node a root, appended to the root list (its local transform becomes its world
 * transform at the next update). A root stays where it is. Never allocates.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_detach(rv_world *world, rv_node node);

/* Local transform setters; each marks the node moved. The local matrix is
 * translate(position) * rotate(quaternion) * scale(scale). position: float[3], world units
 * of the parent's space; scale: float[3] factors (negative mirrors; a zero component is
 * allowed and collapses the node); rotation: quaternion float[4] (x, y, z, w), normalised
 * by rvis; axis: float[3], any nonzero length, radians counter-clockwise about it. A
 * quaternion or axis with no normal component (each zero or subnormal) is refused as zero,
 * so the verdict does not depend on whether the host flushes subnormals to zero (DAZ).
 * Never allocate. Errors: RV_ERR_INVALID_ARG (world or array NULL, a zero quaternion or
 * axis), RV_ERR_NOT_FINITE (a NaN/Inf component), RV_ERR_STALE_HANDLE; the node is
 * unchanged on every error. */
RV_API rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3]);
/* Sets the local scale (float[3] factors); errors as rv_node_set_position. */
RV_API rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3]);
/* Sets the local rotation (quaternion float[4], x y z w, normalised by rvis); errors as
 * rv_node_set_position, plus RV_ERR_INVALID_ARG for a zero quaternion. */
RV_API rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4]);
/* Sets the local rotation from an axis (float[3], nonzero) and an angle in radians; errors
 * as rv_node_set_position. */
RV_API rv_result rv_node_set_rotation_axis_angle(rv_world *world, rv_node node, const float axis[3], float radians);

/* Reads the local transform into any non-NULL outputs (float[3], float[4], float[3]).
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_get_transform(const rv_world *world, rv_node node, float position[3],
                                       float quaternion[4], float scale[3]);

/* Pointers to the node's local position (float[3]), rotation (float[4], x y z w) and scale
 * (float[3]) for allocation-free writes (animation). Any output may be NULL. After writing,
 * call rv_node_mark_moved: the node cannot see the write. The pointers are owned by the
 * world and stay valid until the next call that creates nodes in this world
 * (rv_node_create, rv_group_spatially: storage may grow) or destroys this node; re-fetch
 * them after either. A rotation written here need not be normalised (rv_update_world
 * divides by its length). Values must be finite and the quaternion nonzero: otherwise
 * rv_update_world reports it and the node keeps its previous world matrix.
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_transform_ptrs(rv_world *world, rv_node node, float **position,
                                        float **quaternion, float **scale);

/* Marks node moved after in-place writes. Never allocates.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_mark_moved(rv_world *world, rv_node node);

/* Declares the node's own geometry bounds as a sphere in local space (centre float[3],
 * radius in local units, >= 0), e.g. the mesh's measured bounds. radius < 0 clears it (the
 * node has no geometry of its own and only groups others). Takes effect at the next update.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (NaN/Inf, node unchanged),
 * RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_set_bounds(rv_world *world, rv_node node, const float center[3], float radius);

/* Recomputes world matrices and world bounds of what changed since the last call: moved
 * nodes and their descendants (matrices and exact spheres), then each affected ancestor's
 * sphere once. Unchanged nodes are not touched: with nothing changed the call is O(1).
 * Iterative (no recursion; any depth) and never allocates.
 * Bounds policy: a node's world sphere encloses its own geometry sphere (centre transformed,
 * radius times an upper bound of the world matrix's largest axis scale) and every child's
 * world sphere, merged pairwise with the exact smallest sphere enclosing two spheres. An
 * ancestor grows at once to enclose a changed child and is recomputed exactly when its own
 * bounds changed, it lost a child, or as many child changes accumulated as it has
 * children: a sphere may be larger than minimal, never smaller (culling stays conservative).
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

/* ==== end section: scene ============================================================== */



/* ==== section: cull =================================================================== */

/* Hierarchical frustum culling and spatial grouping (DESIGN.md §2). The walk reads world
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
 * destroy, attach, detach, rv_group_spatially, rv_update_world, a nested visit) return
 * RV_ERR_BAD_STATE while it runs. */
typedef bool (*rv_visit_fn)(rv_node node, const float world_matrix[16], void *user);

/* Walks the hierarchy under root (RV_NODE_NONE: every root, in root order) depth-first,
 * parents before children, children in attach order, and calls callback for each node
 * that has geometry (rv_node_set_bounds) and is visible. It does not draw: the order of
 * drawing stays the host's. A subtree whose world sphere is outside the frustum is skipped
 * in one test; once a sphere is wholly inside a plane, that plane is not tested again
 * below it (plane masking, Assarsson & Möller 2000). A node with children is handed out
 * only when its own geometry sphere (not just its subtree's) meets the frustum.
 * Conservative: a node is never skipped when its own geometry's world sphere, or its world
 * bounds, meets the frustum (up to float rounding at tangency).
 * Iterative (any depth); never allocates; O(visited nodes).
 * counts: optional (NULL), filled on return, also when the callback stopped the walk.
 * Returns RV_OK whether or not the callback stopped the walk.
 * Errors: RV_ERR_INVALID_ARG (world, frustum or callback NULL), RV_ERR_STALE_HANDLE (root),
 * RV_ERR_BAD_STATE (called from inside a visit callback). */
RV_API rv_result rv_visit_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                                  rv_visit_fn callback, void *user, rv_cull_counts *counts);

/* As rv_visit_visible, writing the visible nodes in walk order into out_nodes (capacity
 * entries, caller-owned). *out_count receives the number of visible nodes, which may
 * exceed capacity: then the first capacity are written and RV_ERR_CAPACITY is returned
 * (grow the array to *out_count and call again). out_nodes may be NULL when capacity is 0
 * (a count-only walk). Errors: RV_ERR_INVALID_ARG (world, frustum or out_count NULL, or
 * out_nodes NULL with capacity > 0), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE, RV_ERR_CAPACITY. */
RV_API rv_result rv_collect_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                                    rv_node *out_nodes, uint32_t capacity, uint32_t *out_count,
                                    rv_cull_counts *counts);

/* Inserts intermediate group nodes between parent and a flat list of its children so they
 * cull hierarchically: a binary bounding-volume hierarchy built top-down by median split
 * of the children's world-sphere centres along the axis of largest spread, until a group
 * holds at most leaf_size children (a level with 20,000 loose pieces then costs O(log n)
 * tests where it is out of view, not 20,000).
 * children: count distinct handles, each a direct child of parent; NULL selects every
 * current child of parent (count is then ignored). Groups are identity nodes without
 * geometry, so no child's world matrix changes; the children keep their relative order
 * within a group. leaf_size: 0 = default 8; otherwise >= 2. Nothing happens when there are
 * at most leaf_size children. *out_groups (optional) receives the number of groups created.
 * Call rv_update_world before: the split reads the children's world spheres as of the last
 * update. The groups' world spheres are computed by the call itself, so the result culls
 * at once; the parent's own sphere is made exact again at the next update.
 * Cost O(count log count); allocates a scratch array (freed before return) and node
 * storage. Errors: RV_ERR_INVALID_ARG (world NULL, a child that is not a direct child of
 * parent, a repeated child, leaf_size 1),
 * RV_ERR_STALE_HANDLE (parent or a child), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY,
 * RV_ERR_BAD_STATE (inside a visit). On every error the world is unchanged. */
RV_API rv_result rv_group_spatially(rv_world *world, rv_node parent, const rv_node *children,
                                    uint32_t count, uint32_t leaf_size, uint32_t *out_groups);

/* ==== end section: cull =============================================================== */



/* ==== section: occlusion ============================================================== */

/* CPU occluder depth buffer with a hierarchical-Z pyramid (DESIGN.md §4).
 *
 * The host declares the few big things a view is really hidden by (walls, buildings,
 * slabs of ground) as boxes; rvis rasterises them into a small buffer of per-texel
 * occluder depths and tests objects against it, with no frame of latency and no GPU
 * read-back. Per frame: rv_occlusion_begin, any number of rv_occlusion_add_occluder, then
 * tests. The first test (or rv_occlusion_freeze) freezes the buffer; later adds are
 * refused with RV_ERR_FROZEN until the next begin.
 *
 * Every rule errs toward drawing (a wrong cull is a hole in the world):
 *  - a texel stores the occluder's FAR side: a depth never nearer than the occluder's back
 *    faces anywhere in the texel (plane-exact per texel, from the box's back faces);
 *  - a texel counts as covered only when it lies wholly inside the occluder's silhouette
 *    (the projected convex hull, shrunk so a partly covered texel is never counted);
 *  - an object is hidden only when every texel its screen bounds touch holds a strictly
 *    nearer depth than the object's nearest point;
 *  - an occluder crossing the near plane is clipped against it; an object crossing the near
 *    plane, or whose projection is degenerate, is visible;
 *  - depths are compared as linear view depth (clip w for perspective, NDC z for
 *    orthographic), so OpenGL, zero-to-one, reversed-Z and infinite-far projections give
 *    the same answers;
 *  - floating-point error is bounded and charged against culling, never for it.
 * A max-depth pyramid answers a large object in at most four texel reads and refines only
 * where the coarse answer is "maybe visible" (hierarchical Z, Greene, Kass & Miller 1993).
 * Coverage is inner conservative rasterisation (Hasselgren, Akenine-Möller & Ohlsson 2005,
 * the underestimating variant); box silhouettes come from the eye's region relative to the
 * box's slabs (Schmalstieg & Tobler 1999). Guide: docs/occlusion.md.
 *
 * Threads: one buffer is used from one thread at a time (tests update the stats). Two
 * buffers share nothing and may be used on two threads. */

typedef struct rv_occlusion rv_occlusion;

/* Configuration of an occlusion buffer (standalone, or the world's main-view buffer inside
 * rv_world_desc). Zero selects each default. */
typedef struct rv_occlusion_desc {
    rv_allocator allocator;   /* standalone buffers only; a world uses its own allocator */
    uint32_t width;           /* texels; 0 = occlusion off (tests answer visible). 256 recommended.
                                 At most RV_OCCLUSION_MAX_SIZE */
    float min_occluder_texels;/* occluders whose screen bounds are smaller than this many texels
                                 in either direction are skipped. 0 = default 2; negative = keep all */
    uint32_t max_occluders;   /* cap on occluders rasterised per frame, largest on screen first;
                                 0 = no cap */
} rv_occlusion_desc;

/* Largest buffer width and height in texels. */
#define RV_OCCLUSION_MAX_SIZE 8192u
/* Most pyramid levels a buffer can have (level 0 is the buffer itself). */
#define RV_OCCLUSION_MAX_LEVELS 14u

/* Per-frame counters, reset by rv_occlusion_begin. */
typedef struct rv_occlusion_stats {
    uint32_t occluders_submitted;  /* add_occluder calls accepted this frame */
    uint32_t occluders_rasterized; /* occluders drawn into the buffer */
    uint32_t occluders_hidden;     /* found wholly behind nearer occluders at the freeze: not
                                      drawn, since drawing them could not change the buffer */
    uint32_t occluders_skipped;    /* not drawn for any other reason (sum of the four below) */
    uint32_t skipped_small;        /* screen bounds under min_occluder_texels, or no whole texel inside */
    uint32_t skipped_offscreen;    /* wholly outside the view or behind the near plane */
    uint32_t skipped_cap;          /* beyond max_occluders (the smallest on screen go first) */
    uint32_t skipped_degenerate;   /* projection too ill-conditioned to bound safely */
    uint32_t texels_covered;       /* buffer texels holding an occluder depth after the freeze */
    uint64_t tests;                /* objects tested (batch items included) */
    uint64_t culled;               /* of those, answered hidden */
} rv_occlusion_stats;

/* Boxes for rv_occlusion_test_boxes, as structure of arrays: min[0][i], min[1][i],
 * min[2][i] is the local minimum corner of box i, max likewise. matrices is NULL (boxes are
 * in world space) or points to 16 floats per box (column-major local-to-world, box i at
 * matrices + 16 * i). All arrays are indexed by the same item index. */
typedef struct rv_occlusion_boxes {
    const float *min[3];
    const float *max[3];
    const float *matrices;
} rv_occlusion_boxes;

/* Spheres for rv_occlusion_test_spheres, as structure of arrays: centre (center[0..2][i],
 * local units) and radius[i] (local units, >= 0). matrices as in rv_occlusion_boxes; the
 * radius is scaled by the matrix's largest axis scale. */
typedef struct rv_occlusion_spheres {
    const float *center[3];
    const float *radius;
    const float *matrices;
} rv_occlusion_spheres;

/* Creates a standalone occlusion buffer. desc may be NULL (width 0: off). The buffer
 * itself is allocated by the first rv_occlusion_begin (its height follows the aspect).
 * *out receives the object, owned by the caller until rv_occlusion_destroy.
 * Errors: RV_ERR_INVALID_ARG (out NULL, width > RV_OCCLUSION_MAX_SIZE), RV_ERR_NOT_FINITE
 * (min_occluder_texels NaN/Inf), RV_ERR_OUT_OF_MEMORY; *out untouched on error. */
RV_API rv_result rv_occlusion_create(const rv_occlusion_desc *desc, rv_occlusion **out);

/* Destroys a buffer and everything it holds. NULL is ignored. */
RV_API void rv_occlusion_destroy(rv_occlusion *occlusion);

/* Starts a frame: sets the view and forgets the previous frame's occluders and stats.
 * view_projection: column-major float[16], clip = M * world point, perspective or
 * orthographic (recognised from the matrix), any depth convention (clip; an infinite far
 * plane works). aspect: viewport width / height (> 0); the buffer is width x
 * round(width / aspect) texels, row 0 at the top of the screen.
 * The buffer grows (allocates) only when the aspect asks for more rows than ever before;
 * steady frames allocate nothing.
 * With width 0 this is a no-op returning RV_OK (only NULL pointers are refused).
 * Errors: RV_ERR_INVALID_ARG (NULL, aspect <= 0, a height outside 1..RV_OCCLUSION_MAX_SIZE,
 * a matrix whose screen rows do not locate the eye: the x, y and w rows of a perspective,
 * the x, y and z rows of an orthographic one, not invertible; an orthographic one with
 * w <= 0), RV_ERR_NOT_FINITE,
 * RV_ERR_OUT_OF_MEMORY. On any error the buffer drops the frame: adds are refused with
 * RV_ERR_BAD_STATE and tests answer visible until the next successful begin (a stale view
 * can never cull). A perspective matrix is otherwise taken as it is: one with a singular
 * depth row (its near plane through the eye) or one that puts the scene at negative w
 * (nothing passes its clip tests, so every occluder is off-screen) is accepted and errs
 * toward drawing. */
RV_API rv_result rv_occlusion_begin(rv_occlusion *occlusion, const float view_projection[16], rv_clip clip,
                                    float aspect);

/* Declares an occluder box for this frame: local min/max corners (float[3], world units
 * before the matrix; min <= max; a zero extent makes a flat occluder, a quad, which hides
 * what is behind it and never what lies on it; a box flattened by a zero scale in its
 * matrix instead is not rasterised and counts as skipped_small, so give a quad its zero
 * extent in the box)
 * and a column-major local-to-world matrix (float[16]; NULL = identity; any invertible or
 * flattening affine matrix). Declare the solid you may be hidden by, never a larger box:
 * an occluder bigger than its solid hides things the camera can see.
 * The box is recorded; the freeze projects and draws the frame's occluders nearest first,
 * and one found wholly behind nearer ones is not drawn (drawing it could change nothing).
 * Small (min_occluder_texels), off-screen and behind-the-camera occluders are counted as
 * skipped at the freeze, not refused; so is one reaching beyond 1e7 world units from the
 * origin (float precision no longer bounds its silhouette safely: skipped_degenerate).
 * Width 0: no-op, RV_OK. Allocates only while the frame holds more occluders than any
 * frame before. Errors: RV_ERR_INVALID_ARG (NULL, min > max, a matrix whose last row is
 * not 0 0 0 1), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no successful begin this frame),
 * RV_ERR_FROZEN (a test or freeze already happened this frame), RV_ERR_OUT_OF_MEMORY.
 * On error nothing is added. */
RV_API rv_result rv_occlusion_add_occluder(rv_occlusion *occlusion, const float min[3], const float max[3],
                                           const float matrix[16]);

/* Rasterises this frame's occluders (the largest on screen first when max_occluders caps
 * them; ties in submission order) and builds the pyramid. Called implicitly by the first
 * test; calling it twice is harmless. After it, tests only read the buffer.
 * Width 0 or no begin yet: no-op, RV_OK. Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_occlusion_freeze(rv_occlusion *occlusion);

/* Tests a box: local min/max (float[3]) and matrix (float[16], NULL = identity).
 * *out_visible is false only when the box is certainly hidden by this frame's occluders
 * (rules in the preamble); it is true for anything outside the view (frustum culling is the
 * host's or rv_frustum's job). Freezes the buffer. Width 0 or no view: true, RV_OK.
 * Errors (with *out_visible = true): RV_ERR_INVALID_ARG (NULL, min > max, a matrix whose
 * last row is not 0 0 0 1), RV_ERR_NOT_FINITE. out_visible must not be NULL. */
RV_API rv_result rv_occlusion_test_box(rv_occlusion *occlusion, const float min[3], const float max[3],
                                       const float matrix[16], bool *out_visible);

/* Tests a sphere: local centre (float[3]), radius (local units, >= 0; scaled by the
 * matrix's largest axis scale), matrix (float[16], NULL = identity). Tested through its
 * world-space bounding box, so never tighter than that box. As rv_occlusion_test_box;
 * a negative radius is RV_ERR_INVALID_ARG. */
RV_API rv_result rv_occlusion_test_sphere(rv_occlusion *occlusion, const float center[3], float radius,
                                          const float matrix[16], bool *out_visible);

/* Batch box test, the hot loop: items first .. first + count - 1 of boxes (see
 * rv_occlusion_boxes), writing out_visible[i] = 1 (draw) or 0 (hidden) for each, at the
 * same index (the array must hold first + count bytes). Ranges let a job system split a
 * batch, but one buffer is used from one thread at a time. An invalid item (non-finite,
 * min > max) is answered 1 and the call returns the code of the first one (RV_ERR_NOT_FINITE
 * or RV_ERR_INVALID_ARG) after answering every item. Width 0 or no view: all 1, RV_OK.
 * Errors: RV_ERR_INVALID_ARG (NULL arrays or out_visible, first + count overflowing). */
RV_API rv_result rv_occlusion_test_boxes(rv_occlusion *occlusion, const rv_occlusion_boxes *boxes,
                                         uint32_t first, uint32_t count, uint8_t *out_visible);

/* Batch sphere test; as rv_occlusion_test_boxes with rv_occlusion_spheres (a negative
 * radius is an invalid item). */
RV_API rv_result rv_occlusion_test_spheres(rv_occlusion *occlusion, const rv_occlusion_spheres *spheres,
                                           uint32_t first, uint32_t count, uint8_t *out_visible);

/* This frame's counters (zeroes for NULL). */
RV_API rv_occlusion_stats rv_occlusion_get_stats(const rv_occlusion *occlusion);

/* Allocation counters of a standalone buffer, monotonic since creation (zeroes for NULL;
 * a world's buffer counts in rv_world_alloc_stats). */
RV_API rv_alloc_stats rv_occlusion_alloc_stats(const rv_occlusion *occlusion);

/* Number of pyramid levels of the current frame (level 0 is the buffer, each next level
 * halves both sizes rounding up, down to 1 x 1); 0 when width is 0 or before a begin. */
RV_API uint32_t rv_occlusion_level_count(const rv_occlusion *occlusion);

/* Debug read-out: level (0 = the buffer) as an 8-bit grey image, row 0 at the top of the
 * screen, width * height bytes written to pixels (row-major, no padding). Nearer =
 * brighter: covered texels span 32..255 linearly in view depth over the frame's covered
 * range (the same scale at every level); 0 means no occluder. Each pyramid texel shows the
 * farthest depth of the texels it covers. out_width / out_height (either may be NULL)
 * receive the level's size; pixels may be NULL to ask only the size. Freezes the buffer.
 * Width 0: sizes 0, RV_OK. Errors: RV_ERR_INVALID_ARG (NULL occlusion, level >= count,
 * pixels_size < width * height), RV_ERR_BAD_STATE (no successful begin this frame). */
RV_API rv_result rv_occlusion_debug_image(rv_occlusion *occlusion, uint32_t level, uint8_t *pixels,
                                          size_t pixels_size, uint32_t *out_width, uint32_t *out_height);

/* ==== end section: occlusion ========================================================== */



/* ==== section: lod ==================================================================== */

/* Apparent-size LOD and HLOD (DESIGN.md §5). A level is picked from the angle an object's
 * bounding sphere subtends at the eye, in radians — 2·asin(r/d) for radius r at distance d
 * from its centre — never from its distance alone: distance thresholds make a cathedral and
 * a doorknob switch at the same range, angles get both right with one ladder.
 *
 * Level numbers: 0 is the finest. A ladder of n thresholds answers 0..n; n means "smaller
 * than the last threshold" (draw the coarsest, an impostor, or nothing: the host decides;
 * rv_frame draws nothing for it and records RV_CULL_LOD_NOTHING — give the ladder one more
 * threshold for an impostor level).
 * An angle reaches a threshold when angle * bias >= threshold; angles within two parts in
 * a million below a threshold also count as reaching it (float rounding errs toward detail).
 * An eye inside the sphere (distance <= radius) reaches every threshold: level 0. */

/* Thresholds a ladder holds at most (so a ladder is a plain value: no allocation). */
#define RV_LOD_MAX_THRESHOLDS 8

/* LOD and HLOD configuration (standalone selectors, or inside rv_world_desc). */
typedef struct rv_lod_desc {
    float hysteresis;          /* fraction of each threshold angle; 0 = default 0.10; negative = none */
    float crossfade_ms;        /* fade duration on a level change; 0 = default 250; negative = no fade */
    float max_screen_space_error; /* HLOD refine limit in pixels; 0 = default 16 */
    float bias;                /* multiplier on the apparent angle; 0 = default 1 */
    uint32_t finest_level;     /* levels finer than this are replaced by it; 0 = no limit. On
                                  a ladder of n thresholds a value past n - 1 acts as n - 1
                                  (the coarsest drawn level): it never hides an object */
    float ortho_reference_fov_y; /* radians; orthographic angle = projected diameter / view
                                    height * this; 0 = default 60 degrees */
} rv_lod_desc;
/* Valid ranges (anything else is RV_ERR_INVALID_ARG, NaN/Inf RV_ERR_NOT_FINITE): hysteresis
 * < 1; max_screen_space_error >= 0; bias >= 0; ortho_reference_fov_y in [0, pi). */

/* Thresholds of one object's levels, in radians, strictly descending, positive and finite.
 * A plain value (copy it freely); make it with rv_lod_ladder_make, which validates it. Every
 * call that takes a ladder checks it again (cheap) and answers a hand-filled one that breaks
 * the rules like rv_lod_ladder_make would. Entries from count on are zero. */
typedef struct rv_lod_ladder {
    uint32_t count;                              /* 1..RV_LOD_MAX_THRESHOLDS */
    float thresholds[RV_LOD_MAX_THRESHOLDS];     /* radians, strictly descending */
} rv_lod_ladder;

/* How one view sees apparent size. Only the fields a call uses are checked:
 * LOD (perspective) uses eye; LOD (orthographic) uses ortho_height; HLOD also uses fov_y
 * (perspective) and viewport_height_px, and eye for distances in both projections. */
typedef struct rv_lod_view {
    float eye[3];             /* world units */
    float fov_y;              /* radians in (0, pi): vertical field of view (perspective HLOD) */
    float viewport_height_px; /* pixels, > 0 (HLOD) */
    float ortho_height;       /* world units, > 0: full height of an orthographic view volume */
    bool orthographic;        /* apparent angle = 2r / ortho_height * reference fov (see desc) */
} rv_lod_view;

/* What a stateful selection answers: at most two levels whose weights sum to 1. levels[0]
 * is the level fading in (or the only level); levels[1] the level fading out. When count is
 * 1, levels[1] == levels[0] and weights are {1, 0}. A fade's first selection reports the
 * incoming level with weight 0 (the host may skip drawing a zero weight). */
typedef struct rv_lod_selection {
    uint32_t levels[2];
    float weights[2];
    uint32_t count;           /* 1 or 2 */
} rv_lod_selection;

/* Selection state of one object for hosts that keep their own objects (no nodes): zero it
 * ({0}) for a fresh object, then pass it to rv_lod_selector_update every frame. Fields are
 * rvis's; read the result from rv_lod_selection instead. */
typedef struct rv_lod_selector {
    uint32_t level;           /* current (target) level */
    uint32_t from_level;      /* level fading out; == level when no fade runs */
    float fade_ms;            /* milliseconds into the running fade */
    uint32_t flags;           /* internal: started, fading */
} rv_lod_selector;

/* Makes a ladder from count thresholds (radians, float[count]). count must be
 * 1..RV_LOD_MAX_THRESHOLDS; thresholds strictly descending (finest level's first), positive
 * and finite. A threshold of pi or more is reached only from inside the sphere, unless a
 * bias > 1 magnifies angles. Suggested start: {0.2, 0.06, 0.015} (seed ladder).
 * Errors (*out unchanged; checked in this order): RV_ERR_INVALID_ARG (thresholds or out
 * NULL, count 0), RV_ERR_CAPACITY (count > RV_LOD_MAX_THRESHOLDS), RV_ERR_NOT_FINITE (a
 * NaN/Inf), RV_ERR_INVALID_ARG (a threshold <= 0), RV_ERR_ORDER (two thresholds equal or
 * ascending). */
RV_API rv_result rv_lod_ladder_make(const float *thresholds, uint32_t count, rv_lod_ladder *out);

/* The level of a sphere (centre float[3], radius >= 0, world units) seen from eye
 * (float[3]) in a perspective view, with bias 1 and no finest-level limit: the first level
 * whose threshold the apparent angle 2·asin(radius / distance) reaches, ladder->count when
 * it reaches none, 0 when the eye is inside the sphere. Computed in double precision.
 * Errors (*out_level unchanged): RV_ERR_INVALID_ARG (NULL, radius < 0, bad ladder),
 * RV_ERR_NOT_FINITE, RV_ERR_ORDER / RV_ERR_CAPACITY (a hand-filled ladder). */
RV_API rv_result rv_lod_for_sphere(const float center[3], float radius, const float eye[3],
                                   const rv_lod_ladder *ladder, uint32_t *out_level);

/* Batch form, the hot loop: levels of count spheres given as structure of arrays
 * (center_x/y/z and radius: float[count] each, world units) into out_levels (uint8_t[count]).
 * desc supplies bias, finest_level and ortho_reference_fov_y (NULL = defaults; its other
 * fields are ignored); view supplies eye or, when orthographic, ortho_height. No asin per
 * sphere: "angle*bias >= t" is tested as r^2 >= d^2 * sin^2(t / (2*bias)) against constants
 * computed once per call (for t / bias < pi; larger thresholds are reached only inside).
 * Agrees with rv_lod_for_sphere except within ~2e-6 relative of a threshold. To split the
 * work across threads, offset the pointers and count (no shared state is written).
 * Errors: RV_ERR_INVALID_ARG (a NULL array with count > 0, view NULL, bad ladder or desc,
 * a radius < 0, ortho_height <= 0), RV_ERR_NOT_FINITE (a NaN/Inf input), RV_ERR_ORDER /
 * RV_ERR_CAPACITY (a hand-filled ladder). On a per-sphere
 * error every level is still written; a sphere with a NaN answers the finest level allowed,
 * and the error is reported after the loop. count 0 is RV_OK. */
RV_API rv_result rv_lod_select_spheres(const rv_lod_ladder *ladder, const rv_lod_desc *desc,
                                       const rv_lod_view *view, const float *center_x,
                                       const float *center_y, const float *center_z,
                                       const float *radius, uint32_t count, uint8_t *out_levels);

/* Stateful selection for one object without nodes: hysteresis and crossfade as described
 * at rv_node_lod_select, with time advanced by dt_ms (milliseconds since the previous update
 * of this selector, >= 0) instead of a world clock. The sphere and view as in
 * rv_lod_select_spheres; desc as rv_lod_desc (NULL = defaults). The first update of a zeroed
 * selector picks the level without hysteresis and without a fade.
 * Errors (selector and *out unchanged): RV_ERR_INVALID_ARG (NULL, radius < 0, dt_ms < 0,
 * bad ladder/desc/view), RV_ERR_NOT_FINITE, RV_ERR_ORDER / RV_ERR_CAPACITY (a hand-filled
 * ladder). */
RV_API rv_result rv_lod_selector_update(rv_lod_selector *selector, const rv_lod_ladder *ladder,
                                        const rv_lod_desc *desc, const rv_lod_view *view,
                                        const float center[3], float radius, float dt_ms,
                                        rv_lod_selection *out);

/* Replaces the world's LOD configuration (bias, finest level, hysteresis, crossfade, HLOD
 * limit, orthographic reference): the runtime quality setting. desc is resolved like
 * rv_world_desc.lod (zero fields select defaults; desc NULL restores every default, as a
 * zeroed desc would). Running fades keep their progress in
 * milliseconds. Errors (nothing changed): RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE,
 * RV_ERR_OUT_OF_MEMORY (the world's LOD state is created on first use). */
RV_API rv_result rv_lod_set_desc(rv_world *world, const rv_lod_desc *desc);

/* The world's resolved LOD configuration (defaults applied; hysteresis and crossfade_ms
 * negative when off). Errors: RV_ERR_INVALID_ARG (NULL, or the world desc's lod fields
 * are out of range). */
RV_API rv_result rv_lod_get_desc(const rv_world *world, rv_lod_desc *out);

/* Stateless node form: the level of node's world bounds (rv_node_world_bounds: encloses
 * its geometry and its descendants', scale honoured) seen through view, with the world's
 * bias, finest level and orthographic reference. As of the last rv_update_world.
 * Errors (*out_level unchanged): RV_ERR_INVALID_ARG (NULL, bad ladder or view),
 * RV_ERR_NOT_FINITE (view), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (the node's subtree has
 * no geometry: its world bounds are empty). */
RV_API rv_result rv_lod_for_node(const rv_world *world, rv_node node, const rv_lod_view *view,
                                 const rv_lod_ladder *ladder, uint32_t *out_level);

/* Gives node a ladder for stateful selection (copied; NULL removes it). Setting a ladder
 * resets the node's selection: its next selection starts without hysteresis or fade.
 * Errors (nothing changed): RV_ERR_INVALID_ARG (world NULL, bad ladder), RV_ERR_NOT_FINITE,
 * RV_ERR_ORDER, RV_ERR_CAPACITY (ladder), RV_ERR_STALE_HANDLE, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_node_set_lod_ladder(rv_world *world, rv_node node, const rv_lod_ladder *ladder);

/* Copies node's ladder into *out. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE,
 * RV_ERR_NOT_FOUND (no ladder). */
RV_API rv_result rv_node_get_lod_ladder(const rv_world *world, rv_node node, rv_lod_ladder *out);

/* Advances the world's LOD clock by dt_ms (milliseconds, >= 0, finite): the time running
 * crossfades of nodes move by, whether or not the nodes are selected meanwhile. Time comes
 * only from the host, never from a clock, so offline stepping works. Call once per frame
 * (rv_frame does it for you). Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE,
 * RV_ERR_OUT_OF_MEMORY (first use creates the world's LOD state). */
RV_API rv_result rv_lod_advance(rv_world *world, float dt_ms);

/* Stateful selection of a node with a ladder: the level from its world bounds as
 * rv_lod_for_node, with per-node hysteresis and crossfade.
 * Hysteresis h: from the current level L, a finer level is taken only when the angle reaches
 * its threshold * (1 + h), a coarser one only when the angle falls below the threshold *
 * (1 - h) that separates it; inside that band the level stays, so a camera hovering at a
 * boundary does not flicker. Crossfade: on a change the selection lists the new and the old
 * level, the new one's weight rising linearly from 0 to 1 over crossfade_ms of LOD clock
 * (rv_lod_advance); once that much time accumulated the old level is gone. A fade
 * retargeted mid-way keeps the level with the larger current weight as the one fading out
 * and continues from that weight (turning back to the outgoing level reverses the fade).
 * Allocates nothing. Errors (state and *out unchanged): RV_ERR_INVALID_ARG (NULL, bad view),
 * RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (no ladder), RV_ERR_BAD_STATE
 * (empty world bounds). */
RV_API rv_result rv_node_lod_select(rv_world *world, rv_node node, const rv_lod_view *view,
                                    rv_lod_selection *out);

/* HLOD (hierarchical LOD). A region is a node with a geometric error (world units: how far
 * its own simplified geometry strays from the full detail) and a resident flag the host
 * sets when the region's geometry is loaded. A region's children are its nearest region
 * descendants (plain nodes between them are transparent); a region without region
 * descendants is a leaf and never refines. Screen-space error in pixels (Cesium 3D Tiles):
 *   perspective:  error * viewport_height_px / (2 * distance * tan(fov_y / 2)),
 *   orthographic: error * viewport_height_px / ortho_height,
 * distance measured from the eye to the surface of the region's world bounds; an eye
 * inside them makes the error infinite. */

/* Makes node an HLOD region with geometric_error (world units, >= 0) or updates its error.
 * A new region is not resident. Errors (nothing changed): RV_ERR_INVALID_ARG (world NULL,
 * error < 0), RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_node_set_hlod_region(rv_world *world, rv_node node, float geometric_error);

/* Makes node a plain node again. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE,
 * RV_ERR_NOT_FOUND (not a region). */
RV_API rv_result rv_node_clear_hlod_region(rv_world *world, rv_node node);

/* Says whether the region's geometry is loaded (drawable). A parent refines only into
 * resident children; a non-resident region is never drawn. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (not a region). */
RV_API rv_result rv_node_set_hlod_resident(rv_world *world, rv_node node, bool resident);

/* One region of the cut. weight in [0, 1]: along any path from a top region down to a
 * leaf, the weights of the drawn regions sum to 1 (a crossfade draws parent and children
 * at once). screen_space_error in pixels (+infinity with the eye inside). */
typedef struct rv_hlod_draw {
    rv_node region;
    float weight;
    float screen_space_error;
} rv_hlod_draw;

/* A region that wants to refine but has a child that is not resident: load its children.
 * distance: world units from the eye to its bounds' surface (0 inside). */
typedef struct rv_hlod_load {
    rv_node region;
    float screen_space_error;
    float distance;
} rv_hlod_load;

/* The answer of rv_hlod_select. Arrays are borrowed from the world: valid until the next
 * rv_hlod_select on it or rv_world_destroy; do not free. */
typedef struct rv_hlod_result {
    const rv_hlod_draw *draws;   /* draw_count entries, in walk order (depth first) */
    uint32_t draw_count;
    const rv_hlod_load *loads;   /* load_count entries: largest screen-space error first, then
                                    nearest, then lowest node id */
    uint32_t load_count;
    uint32_t regions_visited;    /* regions the walk decided (culled ones included) */
    uint32_t regions_culled;     /* regions outside the frustum: neither drawn nor refined */
    uint32_t regions_fading;     /* regions whose parent/children crossfade is running */
} rv_hlod_result;

/* Selects the HLOD cut under root (any node; regions below it are found through plain
 * nodes) for one view, advancing crossfades by dt_ms (milliseconds since the previous call
 * for this part of the tree, >= 0). Walks from root: a subtree whose world bounds frustum
 * rejects is skipped (frustum NULL: no culling), and a culled region is neither drawn nor
 * refined (it restarts unrefined when it comes back). A visible resident region refines
 * into its children while its screen-space error exceeds max_screen_space_error AND every
 * child is resident; otherwise it draws itself — never a hole while children load — and,
 * when it wanted to refine, it is listed in loads. A non-resident region is never drawn:
 * the walk passes through it to whatever below is resident. When the cut changes, parent
 * and children crossfade over crossfade_ms (linear; a reversal continues from the current
 * weights; as with LOD, a change made in a call lists the incoming regions with weight 0
 * and dt_ms of the next calls moves them); a child turning non-resident ends its parent's
 * fade at once. Several levels may fade at once; the weights along a path still sum to 1.
 * Reads world bounds as of the last rv_update_world. Steady calls allocate nothing
 * (storage grows to the world's node and region counts once).
 * Errors (state unchanged): RV_ERR_INVALID_ARG (NULL, bad view, dt_ms < 0),
 * RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE (root), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_hlod_select(rv_world *world, rv_node root, const rv_lod_view *view,
                                const rv_frustum *frustum, float dt_ms, rv_hlod_result *out);

/* ==== end section: lod ================================================================ */



/* ==== section: partition ============================================================== */

/* Partition gating (DESIGN.md §3). For big models split into parts: a building into storeys
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
 * from a web BIM viewer's partition gate (seed 000 of DESIGN.md). */

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
 * as visible. Errors: RV_ERR_INVALID_ARG (world NULL, leaves NULL with count > 0),
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
 * after rv_update_world (bounds are read as of the last update).
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_BAD_STATE (a frame already begun, or
 * inside request_reprocess), RV_ERR_OUT_OF_MEMORY (first use), the desc's code. */
RV_API rv_result rv_partition_begin_frame(rv_world *world, const rv_frustum *frustum);

/* Gates one group this frame: each of its parts is tested against frustum (padded by
 * frustum_margin) and the committed slice, and its frustum_visible flag set. For hosts
 * walking their own scene: call it when the walk reaches a group it did not cull, before
 * descending into the parts (skip a part whose rv_partition_part_frustum_visible is false).
 * Within a frame the last gate or group_hidden call of a group decides; re-entries are
 * judged at rv_partition_end_frame against the previous frame's outcome.
 * Errors: RV_ERR_INVALID_ARG (world or frustum NULL), RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND
 * (not a group), RV_ERR_BAD_STATE (outside begin/end, or inside request_reprocess). */
RV_API rv_result rv_partition_gate_group(rv_world *world, rv_node group, const rv_frustum *frustum);

/* Reports a group culled as a whole this frame (by the host's frustum walk or occlusion):
 * all its parts are hidden, so they re-enter when it comes back. Errors as gate_group. */
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
 * waits and request_reprocess is wired; else RV_TICK_WAKE_AT the earliest activation expiry
 * of a visible deferred part; else RV_TICK_IDLE. Without request_reprocess a host that reads
 * the requests wakes itself. Allocates nothing. Errors: RV_ERR_INVALID_ARG (world or out
 * NULL), RV_ERR_NOT_FINITE (now_ms), RV_ERR_BAD_STATE (no frame begun, or inside
 * request_reprocess); on error the frame stays open and *out is untouched. */
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

/* ==== end section: partition ========================================================== */



/* ==== section: grid and residency ===================================================== */

/* Streaming (DESIGN.md §6): a regular grid of pages over the XZ plane (rv_grid) and the
 * service that decides which pages are resident (rv_residency). Terrain heights, terrain
 * weights, anything that is a grid of blobs. This is not world or entity streaming: rvis
 * never loads anything; the host pulls load work, loads, and answers.
 *
 * The host loop, once per frame:
 *   rv_residency_begin_frame(res, now_ms);            explicit frame boundary, host time
 *   rv_grid_update(grid, sources, n, res);            per grid: touch and request cells
 *   rv_residency_take_requests(res, reqs, max, &n);   nearest first; start those loads
 *   rv_residency_place(res, key, bytes) / _fail(res, key)   as loads finish (any frame)
 *   rv_residency_take_evictions(res, evs, max, &n);   free those pages' memory
 * Both objects are used from one thread at a time. */

/* A page: which source (the registrant's integer, never interpreted) and which page of it
 * (for a grid, z * count_x + x). Keys of different sources never collide. */
typedef struct rv_page_key {
    uint32_t source;
    uint32_t index;
} rv_page_key;

/* State of one page. A page being reloaded in place (rv_residency_refresh) stays
 * RV_PAGE_RESIDENT; rv_page_info.refreshing says so. */
typedef enum rv_page_state {
    RV_PAGE_ABSENT = 0,  /* unknown to the residency: never requested, dropped, or forgotten */
    RV_PAGE_REQUESTED,   /* queued for loading (or waiting out a failed load's backoff) */
    RV_PAGE_LOADING,     /* handed to the host by rv_residency_take_requests, not yet answered */
    RV_PAGE_RESIDENT,    /* placed; its bytes count against the budget */
    RV_PAGE_EVICTED      /* evicted this frame (the host was told); absent from the next frame */
} rv_page_state;

/* Page residency configuration (standalone, or the world's residency inside rv_world_desc). */
typedef struct rv_residency_desc {
    rv_allocator allocator;       /* standalone only; a world uses its own allocator */
    uint64_t budget_bytes;        /* 0 = default 256 MiB */
    uint32_t drop_after_frames;   /* an unrequested queued page is dropped after this many frames; 0 = 30 */
    float retry_ms;               /* first retry after a failed load; 0 = default 100 */
    float retry_backoff;          /* multiplier per consecutive failure; 0 = default 2 */
    float retry_cap_ms;           /* 0 = default 10000 */
    uint32_t requests_per_frame;  /* requests rv_frame_end hands out; 0 = default 64 */
    uint32_t page_capacity;       /* page records reserved at creation (more are added as
                                     needed); 0 = default 1024 */
} rv_residency_desc;

/* A load the host should start (rv_residency_take_requests). */
typedef struct rv_page_request {
    rv_page_key key;
    float distance;  /* world units from the nearest source that wanted it (its priority) */
    uint32_t flags;  /* RV_PAGE_REQUEST_* */
} rv_page_request;

#define RV_PAGE_REQUEST_IN_USE 1u  /* touched this frame (needed now, not prefetch) */
#define RV_PAGE_REQUEST_REFRESH 2u /* the page is resident: reload it in place (rv_residency_refresh) */

/* A page the host must free (rv_residency_take_evictions). */
typedef struct rv_page_eviction {
    rv_page_key key;
    uint64_t size_bytes; /* as given to rv_residency_place */
} rv_page_eviction;

/* What the residency knows of one page (rv_residency_page_info). */
typedef struct rv_page_info {
    rv_page_state state;
    bool refreshing;            /* resident and a reload in place is queued or loading */
    bool waiting_retry;         /* RV_PAGE_REQUESTED after a failure, until retry_at_ms */
    float distance;             /* priority of its latest request (world units) */
    uint64_t size_bytes;        /* resident (or just evicted) size; 0 otherwise */
    uint64_t last_wanted_frame; /* last frame it was requested or touched (0 = never) */
    uint64_t last_touched_frame;/* last frame it was touched (0 = never) */
    uint32_t failures;          /* consecutive failed loads (reset when placed) */
    double retry_at_ms;         /* host time of the next retry when waiting_retry */
} rv_page_info;

/* Residency counters. The first group covers the current frame (since the last
 * rv_residency_begin_frame); the second is the state now. */
typedef struct rv_residency_stats {
    uint32_t requested;          /* pages that entered the load queue this frame */
    uint32_t handed_out;         /* requests given to the host this frame */
    uint32_t placed;             /* pages placed this frame (refreshes included) */
    uint32_t failed;             /* loads failed this frame */
    uint32_t retried;            /* failed pages whose backoff ended this frame (re-queued) */
    uint32_t evicted;            /* pages evicted this frame */
    uint32_t dropped;            /* queued pages dropped this frame (no longer wanted) */
    bool prefetch_paused;        /* take_requests held prefetch back this frame (budget) */
    uint32_t pages_resident;
    uint32_t pages_requested;    /* queued, or waiting out a retry backoff (refreshes included) */
    uint32_t pages_waiting_retry;
    uint32_t pages_loading;      /* loads in flight: handed out, not yet placed or failed */
    uint64_t bytes_resident;
    uint64_t budget_bytes;
    bool over_budget;            /* the last rv_residency_take_evictions could not reach the
                                    budget: every resident page was touched this frame */
    uint64_t over_budget_bytes;  /* bytes_resident - budget_bytes when over_budget, else 0 */
    uint64_t frames_over_budget; /* frames that ended over budget, since creation */
    uint64_t frame;              /* frames begun since creation */
} rv_residency_stats;

/* The page residency service. Opaque. */
typedef struct rv_residency rv_residency;

/* Creates a residency service. desc may be NULL (all defaults); *out receives it, owned by
 * the caller until rv_residency_destroy. No frame has begun: call rv_residency_begin_frame
 * before the first request.
 * Errors: RV_ERR_INVALID_ARG (out NULL; retry_ms or retry_cap_ms negative; retry_backoff
 * below 1), RV_ERR_NOT_FINITE (a NaN/Inf retry setting), RV_ERR_ORDER (retry_cap_ms below
 * retry_ms after defaults), RV_ERR_OUT_OF_MEMORY. *out untouched on error. */
RV_API rv_result rv_residency_create(const rv_residency_desc *desc, rv_residency **out);

/* Destroys the service; every page is forgotten (the host still owns what it loaded).
 * NULL is ignored. */
RV_API void rv_residency_destroy(rv_residency *residency);

/* Starts a frame at host time now_ms (milliseconds, any origin, never decreasing). Pages
 * touched last frame stop being protected from eviction; queued pages not requested for
 * more than drop_after_frames frames are dropped (not loaded late); failed pages whose
 * backoff ended by now_ms go back to the queue; the per-frame counters restart; pages
 * evicted last frame become RV_PAGE_ABSENT. Cost: proportional to the pages it changes.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE, RV_ERR_ORDER (now_ms earlier than
 * the previous frame's). */
RV_API rv_result rv_residency_begin_frame(rv_residency *residency, double now_ms);

/* Requests a page for this frame with priority distance (world units, >= 0; smaller loads
 * first). in_use also touches it: it is used now, so it is not evicted this frame and its
 * load is not prefetch. Requesting again in one frame keeps the smallest distance.
 * rv_grid_update does the same for each cell; hosts call this for pages outside any grid.
 * Errors: RV_ERR_INVALID_ARG (NULL, distance < 0), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no
 * frame begun yet), RV_ERR_OUT_OF_MEMORY (the first request of a page may allocate; nothing
 * changes on failure). */
RV_API rv_result rv_residency_request(rv_residency *residency, rv_page_key key, float distance, bool in_use);

/* Hands out up to max queued loads into out (rv_page_request[max]), in order: pages touched
 * this frame, then other pages requested this frame, then older requests; within each,
 * smallest distance first, ties by source then index (deterministic). Each becomes
 * RV_PAGE_LOADING until placed or failed. Prefetch (a page not touched this frame) is not
 * started while over budget, nor when the pages wanted this frame plus the loads in flight
 * (at the mean resident page size) would not fit the budget; it stays queued. *out_count
 * receives how many were written (fewer than max when the queue is empty or held back).
 * Binary heap: O(log n) per page. Errors: RV_ERR_INVALID_ARG (residency or out_count NULL,
 * out NULL with max > 0). */
RV_API rv_result rv_residency_take_requests(rv_residency *residency, rv_page_request *out, uint32_t max,
                                            uint32_t *out_count);

/* The host finished loading a page: it is resident with size_bytes (its GPU/CPU footprint,
 * counted against the budget; 0 is allowed). For a refresh, the new size replaces the old
 * and the page keeps its place in the eviction order. Placing may exceed the budget until
 * the next rv_residency_take_evictions. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (unknown page), RV_ERR_BAD_STATE (the page is not RV_PAGE_LOADING),
 * RV_ERR_CAPACITY (resident bytes would pass 2^64 - 1). */
RV_API rv_result rv_residency_place(rv_residency *residency, rv_page_key key, uint64_t size_bytes);

/* The host could not load a page. It is retried after retry_ms, multiplied by
 * retry_backoff for each further consecutive failure, capped at retry_cap_ms (host time);
 * meanwhile it is RV_PAGE_REQUESTED with waiting_retry set, and dropped like any queued page
 * if nobody requests it. A failed refresh keeps the old page resident. Errors:
 * RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND, RV_ERR_BAD_STATE (not RV_PAGE_LOADING). */
RV_API rv_result rv_residency_fail(rv_residency *residency, rv_page_key key);

/* Asks for a resident page to be reloaded in place (its source data changed). The old page
 * stays resident, and is drawn, until the new one is placed; the request is flagged
 * RV_PAGE_REQUEST_REFRESH and is never dropped as stale. A page queued but not yet loading
 * needs nothing (it will load the new data); a page loading now is queued again once it is
 * placed. Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND (the page is absent or evicted). */
RV_API rv_result rv_residency_refresh(rv_residency *residency, rv_page_key key);

/* Evicts least-recently-wanted resident pages (placing counts as wanted) until the
 * resident bytes fit the budget, writing up to max of them into out (rv_page_eviction[max]);
 * the host frees them. A page touched this frame is never evicted: when only such pages
 * remain and the budget is still exceeded, the service reports over budget (stats) instead
 * of thrashing, and prefetch pauses. Call it after the frame's updates; call again while it
 * fills out entirely. An evicted page's queued refresh is cancelled. Intrusive LRU list:
 * O(1) per page. Errors: RV_ERR_INVALID_ARG (residency or out_count NULL, out NULL with
 * max > 0). */
RV_API rv_result rv_residency_take_evictions(rv_residency *residency, rv_page_eviction *out, uint32_t max,
                                             uint32_t *out_count);

/* Changes the byte budget (0 is a real budget of zero bytes here, unlike the desc). Nothing
 * is evicted until the next rv_residency_take_evictions. Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_residency_set_budget(rv_residency *residency, uint64_t budget_bytes);

/* What the residency knows of key; an unknown page is RV_PAGE_ABSENT with zero fields.
 * Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_residency_page_info(const rv_residency *residency, rv_page_key key, rv_page_info *out);

/* Counters (zeroes for NULL). */
RV_API rv_residency_stats rv_residency_get_stats(const rv_residency *residency);

/* Host time (ms) at which the earliest failed load becomes due for retry, for tick demand
 * (a host may sleep until then). False (and *out_ms untouched) when no retry is waiting or
 * an argument is NULL. */
RV_API bool rv_residency_next_wake_ms(const rv_residency *residency, double *out_ms);

/* Loads in flight (handed out, not answered); nonzero means the host should keep ticking.
 * 0 for NULL. */
RV_API uint32_t rv_residency_loads_in_flight(const rv_residency *residency);

/* The service's allocation counters (zeroes for NULL). Steady frames leave them unchanged. */
RV_API rv_alloc_stats rv_residency_alloc_stats(const rv_residency *residency);

/* Everything a grid is made from. Unlike most descs, cell_size and both counts are
 * required (zero is refused): a grid has no sensible default size. */
typedef struct rv_grid_desc {
    rv_allocator allocator; /* standalone only; a world uses its own allocator */
    uint32_t source;        /* the page source of every cell (any value; never interpreted) */
    float origin[2];        /* world X and Z of the corner of cell (0, 0); cells grow toward +X, +Z */
    float cell_size;        /* world units, > 0, finite */
    uint32_t count_x;       /* cells along X, > 0 */
    uint32_t count_z;       /* cells along Z, > 0; count_x * count_z <= 2^32 - 1 */
    float lead;             /* world units >= 0: how far beyond a source's radius cells are
                               requested (prefetched) without being touched */
    float eye_radius;       /* world units: radius of the eye source rv_frame gives this grid
                               when it is registered with a world; 0 = default 4 cells;
                               negative = no eye source. A standalone grid only stores it */
} rv_grid_desc;

/* A place that wants pages: cells within radius of it are touched (in use), cells within
 * radius + the grid's lead are requested. */
typedef struct rv_stream_source {
    float position[3]; /* world XYZ; Y is ignored */
    float radius;      /* world units, >= 0 */
} rv_stream_source;

/* What the last rv_grid_update did. */
typedef struct rv_grid_stats {
    uint32_t touched_cells;   /* distinct cells within some source's radius */
    uint32_t requested_cells; /* distinct cells within some source's radius + lead (touched included) */
    uint64_t cells_visited;   /* cells examined: those in the sources' squares clipped to the
                                 grid; never depends on the grid's size */
} rv_grid_stats;

/* A grid of pages. Opaque. */
typedef struct rv_grid rv_grid;

/* Creates a grid. *out receives it, owned by the caller until rv_grid_destroy; creation is
 * its only allocation. Errors: RV_ERR_INVALID_ARG (desc or out NULL, cell_size <= 0, a count
 * of 0, lead < 0), RV_ERR_NOT_FINITE (a NaN/Inf field, or a far corner that overflows
 * float), RV_ERR_CAPACITY (count_x * count_z above 2^32 - 1), RV_ERR_OUT_OF_MEMORY. Nothing is
 * made on error. */
RV_API rv_result rv_grid_create(const rv_grid_desc *desc, rv_grid **out);

/* Destroys a grid (its pages in a residency are untouched). NULL is ignored. */
RV_API void rv_grid_destroy(rv_grid *grid);

/* The grid's desc with defaults applied (eye_radius resolved); zeroes for NULL. */
RV_API rv_grid_desc rv_grid_get_desc(const rv_grid *grid);

/* The page of cell (x, z): {source, z * count_x + x}. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (x >= count_x or z >= count_z: no wrap). */
RV_API rv_result rv_grid_key_of(const rv_grid *grid, uint32_t x, uint32_t z, rv_page_key *out);

/* The cell of a page index. Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FOUND (index >=
 * count_x * count_z). */
RV_API rv_result rv_grid_cell_of(const rv_grid *grid, uint32_t index, uint32_t *out_x, uint32_t *out_z);

/* Where cell (x, z) is in world XZ: out_min = origin + (x, z) * cell_size, out_max one cell
 * further (float[2] each, X then Z). Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND. */
RV_API rv_result rv_grid_bounds_of(const rv_grid *grid, uint32_t x, uint32_t z, float out_min[2], float out_max[2]);

/* The shortest XZ distance (world units) from position (float[3], Y ignored) to cell
 * (x, z)'s rectangle; 0 inside or on its edge. Measured to the cell, never to its centre:
 * a radius measured to centres would move the load boundary as a player strafes along a
 * cell. Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FOUND (cell out of range),
 * RV_ERR_NOT_FINITE (position). */
RV_API rv_result rv_grid_distance_to(const rv_grid *grid, uint32_t x, uint32_t z, const float position[3],
                                     float *out_distance);

/* Tells residency what this frame's sources want of this grid. For each source, the cells
 * of its square (position +- radius + lead, clipped to the grid) are examined: a cell whose
 * distance (rv_grid_distance_to) is <= radius is touched, <= radius + lead requested (with
 * the distance as priority; a cell wanted by several sources counts once and keeps the
 * smallest distance). A source whose reach misses the grid touches nothing. Cost: the cells
 * in those squares, never the grid's size. n may be 0 (sources may then be NULL).
 * Errors: RV_ERR_INVALID_ARG (grid or residency NULL, sources NULL with n > 0, a radius
 * < 0), RV_ERR_NOT_FINITE (a position or radius), RV_ERR_CAPACITY (the squares hold more
 * than 2^24 = 16,777,216 cells together: each could become a page record), RV_ERR_BAD_STATE (no rv_residency_begin_frame yet), RV_ERR_OUT_OF_MEMORY (page
 * records for new cells are reserved first: on any error nothing changes). */
RV_API rv_result rv_grid_update(rv_grid *grid, const rv_stream_source *sources, uint32_t n,
                                rv_residency *residency);

/* Counters of the last rv_grid_update (zeroes for NULL or before the first). */
RV_API rv_grid_stats rv_grid_get_stats(const rv_grid *grid);

/* ==== end section: grid and residency ================================================= */



/* ==== section: journal and projection ================================================= */

/* Render-projection delta journal and the render scene it feeds (DESIGN.md §7).
 *
 * The host's world stays the authority; rvis keeps a derived, disposable *render
 * projection* of it. The host's update thread appends deltas to an rv_journal; at the
 * update-to-render boundary rv_render_scene_apply drains the journal fully into an
 * rv_render_scene, which keeps a projection table and incremental indices (outdoor static,
 * per-cell static, dynamic, translucent, selectable, light candidate, dirty).
 *
 * Identity: a projection is named by the host's 64-bit source key and an owner
 * incarnation (a larger incarnation is newer). Every delta also carries the scene
 * generation it was made for; a ClearGeneration delta moves the scene to a newer
 * generation and drops every projection. Sequence numbers are assigned by the journal on
 * append (1, 2, 3, ...) and checked by the scene (a repeated or backwards sequence is
 * rejected), which is what makes replaying a recorded journal or merging streams safe.
 * The design follows the acdream render-scene plan (seed 004, slices F/G). docs/journal.md
 * is the host's guide. */

/* Kind of a delta. Structural edges (Register, Rebucket, Unregister, ClearGeneration) keep
 * their exact order and never coalesce; the three updates each change one channel. */
typedef enum rv_delta_kind {
    RV_DELTA_NONE = 0,
    RV_DELTA_REGISTER,          /* a full projection: every channel */
    RV_DELTA_UPDATE_TRANSFORM,  /* channel transform: rv_projection_transform */
    RV_DELTA_UPDATE_APPEARANCE, /* channel appearance: rv_projection_appearance */
    RV_DELTA_UPDATE_FLAGS,      /* channel flags: RV_PROJECTION_* bits */
    RV_DELTA_REBUCKET,          /* channel bucket: rv_projection_bucket (class, cell, parent) */
    RV_DELTA_UNREGISTER,        /* no payload */
    RV_DELTA_CLEAR_GENERATION,  /* no payload; generation is the new scene generation */
    RV_DELTA_KIND_COUNT_
} rv_delta_kind;

/* Spatial class of a projection; it decides which class index holds it. */
typedef enum rv_projection_class {
    RV_PROJECTION_CLASS_NONE = 0,    /* invalid in a delta */
    RV_PROJECTION_OUTDOOR_STATIC,    /* static outdoors: the outdoor-static index */
    RV_PROJECTION_CELL_STATIC,       /* static inside a cell: that cell's bucket */
    RV_PROJECTION_DYNAMIC,           /* moving root (live object, animated static): the dynamic index */
    RV_PROJECTION_EQUIPPED_CHILD,    /* attached to its parent projection: the dynamic index */
    RV_PROJECTION_CLASS_COUNT_
} rv_projection_class;

/* Projection flag bits (channel flags). Other bits are RV_ERR_INVALID_ARG. */
enum {
    RV_PROJECTION_HIDDEN = 1u << 0,          /* never drawn (its node gets the hidden flag) */
    RV_PROJECTION_TRANSLUCENT = 1u << 1,     /* the translucent index; drawn far to near */
    RV_PROJECTION_SELECTABLE = 1u << 2,      /* the selectable index (picking) */
    RV_PROJECTION_LIGHT_CANDIDATE = 1u << 3, /* the light-candidate index */
    RV_PROJECTION_FLAGS_ALL = 0xFu
};

/* Space of a projection's bounding sphere. */
typedef enum rv_bounds_space {
    RV_BOUNDS_LOCAL = 0, /* in the projection's own space: transformed by its transform */
    RV_BOUNDS_WORLD = 1  /* in the frame the transform is expressed in (the world, or the
                            parent projection's space for an equipped child) */
} rv_bounds_space;

/* Channel transform. position (world units), rotation quaternion (x, y, z, w; any nonzero
 * length, rvis normalises it where it builds a matrix), scale (factors; zero allowed with
 * local bounds) — the same decomposition as a scene node. The frame is the world, except
 * for an equipped child: its transform is relative to its parent projection (the
 * attachment transform), so it moves with the parent. bounds: sphere centre x, y, z and
 * radius >= 0 in bounds_space. With RV_BOUNDS_WORLD every scale component must be a normal
 * (nonzero, not subnormal) number and the sphere mapped back into local space (centre through the inverse transform,
 * radius divided by the smallest |scale|, so that the local sphere holds the whole preimage
 * of the host's sphere whatever the parent does) must fit in floats: a radius of 1000
 * under a scale of 1e-36 on any axis, say, is RV_ERR_INVALID_ARG. Under a non-uniform scale the
 * node's sphere is therefore looser than the host's by largest / smallest scale. Every
 * number must be finite. A rotation with no normal component (each zero or subnormal) is
 * refused as zero, a negative subnormal radius as negative: the checks read the numbers'
 * bits, so the verdict is the same whether or not the host flushes subnormals to zero
 * (DAZ/FTZ), and an append raises no floating-point exception. */
typedef struct rv_projection_transform {
    float position[3];
    float rotation[4];
    float scale[3];
    float bounds[4];
    rv_bounds_space bounds_space;
} rv_projection_transform;

/* Channel appearance: the host's 64-bit ids, never interpreted by rvis. */
typedef struct rv_projection_appearance {
    uint64_t mesh;             /* mesh set / setup id */
    uint64_t material_variant; /* palette, texture replacement or material variant id */
} rv_projection_appearance;

/* Channel bucket: where a projection lives spatially. cell: the host's spatial bucket id
 * (a cell, a landblock), kept for every class and indexed for RV_PROJECTION_CELL_STATIC.
 * parent_key: the source key of the parent projection for RV_PROJECTION_EQUIPPED_CHILD
 * (never the child's own key); it must be 0 for every other class. */
typedef struct rv_projection_bucket {
    rv_projection_class projection_class;
    uint64_t cell;
    uint64_t parent_key;
} rv_projection_bucket;

/* A full projection: every channel (the payload of a Register). */
typedef struct rv_projection {
    rv_projection_transform transform;
    rv_projection_appearance appearance;
    rv_projection_bucket bucket;
    uint32_t flags; /* RV_PROJECTION_* bits */
} rv_projection;

/* One delta as the journal stores it and a recording holds it. Only the channel the kind
 * names is meaningful in projection; the journal stores every other field as zero, so two
 * recordings of the same appends compare equal byte for byte. For ClearGeneration, key and
 * incarnation are 0 and generation is the generation the scene moves to. */
typedef struct rv_delta {
    uint64_t sequence;     /* assigned by the journal on append: 1, 2, 3, ... */
    uint64_t key;          /* the projection's source key */
    uint32_t generation;   /* scene generation the delta was made for */
    uint32_t incarnation;  /* exact owner incarnation */
    rv_delta_kind kind;
    rv_projection projection;
} rv_delta;

/* ---- journal ---- */

/* A delta journal: an ordered buffer of deltas with coalescing. Opaque; standalone (its own
 * allocator). Owned by one thread: see rv_journal_claim_thread. */
typedef struct rv_journal rv_journal;

typedef struct rv_journal_desc {
    rv_allocator allocator;
    uint32_t initial_capacity; /* deltas held before the buffer grows; 0 = default 1024 */
    bool keep_every_update;    /* true: never coalesce (every update keeps its own entry) */
    uint32_t coalescing_keys;  /* keys a tick remembers for coalescing (a direct-mapped table,
                                  rounded up to a power of two, <= 2^24, 34 bytes a key,
                                  allocated at creation: 4096 take 136 KiB, 2^24 take
                                  544 MiB); 0 = default 4096. A key pushed out by another
                                  just gets a new entry. */
} rv_journal_desc;

/* Journal counters since creation. */
typedef struct rv_journal_stats {
    uint64_t appended;      /* deltas accepted by an append call (coalesced ones included) */
    uint64_t coalesced;     /* updates merged into an earlier entry of the same channel */
    uint64_t drained;       /* entries handed to a scene */
    uint64_t ticks;         /* completed drains */
    uint64_t next_sequence; /* the sequence the next entry gets */
    uint32_t pending;       /* entries not yet drained */
} rv_journal_stats;

/* Memory held by a journal, in bytes (capacity, not use). */
typedef struct rv_journal_memory {
    uint64_t buffer_bytes;     /* the delta buffer, and the list of its cell-static targets a
                                  drain reserves for (4 bytes each) */
    uint64_t coalescing_bytes; /* the per-tick (key -> entry) table coalescing uses, and its
                                  tags */
    uint64_t total_bytes;      /* both plus the journal object */
} rv_journal_memory;

/* Creates a journal owned by the calling thread. desc may be NULL (defaults).
 * *out receives it, owned by the caller until rv_journal_destroy.
 * Errors: RV_ERR_INVALID_ARG (out NULL, coalescing_keys above 2^24), RV_ERR_OUT_OF_MEMORY;
 * *out untouched on error. */
RV_API rv_result rv_journal_create(const rv_journal_desc *desc, rv_journal **out);

/* Destroys a journal (NULL is ignored). Must not be called while a scene drains it. */
RV_API void rv_journal_destroy(rv_journal *journal);

/* Makes the calling thread the journal's owner (e.g. after handing the journal to the
 * update thread). Thread rule, exactly: every append and every drain (rv_render_scene_apply)
 * compares the calling thread with the owner recorded at creation or by the last
 * rv_journal_claim_thread and returns RV_ERR_INVARIANT, changing nothing, when they differ.
 * The check is always on: with GCC or Clang it compares the address of a thread-local object
 * (distinct among live threads, as a pthread_t is; no call), on Windows GetCurrentThreadId,
 * elsewhere pthread_self. Read-only calls
 * (rv_journal_pending, stats, memory) are not checked. claim_thread itself is not checked:
 * the host must ensure no other thread uses the journal meanwhile.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_BAD_STATE (a drain is running). */
RV_API rv_result rv_journal_claim_thread(rv_journal *journal);

/* Appends a Register of a full projection for (key, incarnation) made for scene
 * generation. *out_sequence (may be NULL) receives the entry's sequence.
 * Errors (journal unchanged): RV_ERR_INVALID_ARG (NULL journal or projection, a class,
 * flag, bounds space or parent key out of range, a zero quaternion, a negative radius, a
 * zero scale with world bounds), RV_ERR_NOT_FINITE, RV_ERR_INVARIANT (another thread),
 * RV_ERR_CAPACITY (2^32 - 1 entries pending), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_journal_register(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                     const rv_projection *projection, uint64_t *out_sequence);

/* Appends an update of one channel of (key, incarnation). When the current tick already
 * holds an undrained update of the same channel for the same key, incarnation and
 * generation, with no structural edge of that key (and no ClearGeneration) after it, the
 * new payload replaces that entry's (which keeps its place and sequence; *out_sequence
 * receives it) and stats.coalesced counts it — applying the tick gives the same scene as
 * applying every update in order. Merging is best effort: the journal remembers the latest
 * update of up to desc.coalescing_keys keys a tick (more keys simply get more entries).
 * Errors as rv_journal_register (NULL payload: RV_ERR_INVALID_ARG). */
RV_API rv_result rv_journal_update_transform(rv_journal *journal, uint32_t generation, uint64_t key,
                                             uint32_t incarnation, const rv_projection_transform *transform,
                                             uint64_t *out_sequence);
/* Appends an UpdateAppearance of (key, incarnation): mesh and material variant ids.
 * Coalescing, sequence and errors as rv_journal_update_transform. */
RV_API rv_result rv_journal_update_appearance(rv_journal *journal, uint32_t generation, uint64_t key,
                                              uint32_t incarnation, const rv_projection_appearance *appearance,
                                              uint64_t *out_sequence);
/* Appends an UpdateFlags of (key, incarnation): RV_PROJECTION_* bits. Coalescing, sequence
 * and errors as rv_journal_update_transform. */
RV_API rv_result rv_journal_update_flags(rv_journal *journal, uint32_t generation, uint64_t key,
                                         uint32_t incarnation, uint32_t flags, uint64_t *out_sequence);

/* Appends a Rebucket (a structural edge): the projection moves to another class, cell or
 * parent without being recreated. Errors as rv_journal_register. */
RV_API rv_result rv_journal_rebucket(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                     const rv_projection_bucket *bucket, uint64_t *out_sequence);

/* Appends an Unregister of (key, incarnation); it never removes another incarnation.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_INVARIANT, RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_journal_unregister(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                       uint64_t *out_sequence);

/* Appends a ClearGeneration: the scene drops every projection and moves to new_generation
 * (which must be newer than the scene's when it is applied). Errors as rv_journal_unregister. */
RV_API rv_result rv_journal_clear_generation(rv_journal *journal, uint32_t new_generation, uint64_t *out_sequence);

/* Appends a delta given whole (delta->sequence is ignored: the journal assigns it; fields
 * outside the kind's channel are ignored and stored as zero). The same rules and errors as
 * the kind's own function; an unknown kind is RV_ERR_INVALID_ARG. delta may be an entry of
 * this journal's rv_journal_pending (it is copied before the buffer can move). */
RV_API rv_result rv_journal_append(rv_journal *journal, const rv_delta *delta, uint64_t *out_sequence);

/* The undrained entries in sequence order, *out_count of them (out_count may be NULL when
 * only the pointer is wanted). Borrowed: valid until the next append or drain. Copy them to
 * record the journal; replay with rv_render_scene_apply_deltas. NULL journal: NULL, 0. */
RV_API const rv_delta *rv_journal_pending(const rv_journal *journal, uint32_t *out_count);

/* Counters (zeroes for NULL). */
RV_API rv_journal_stats rv_journal_get_stats(const rv_journal *journal);
/* Bytes held (zeroes for NULL). */
RV_API rv_journal_memory rv_journal_get_memory(const rv_journal *journal);
/* Allocation counters of the journal's allocator use (zeroes for NULL). */
RV_API rv_alloc_stats rv_journal_alloc_stats(const rv_journal *journal);

/* ---- render scene ---- */

/* The projection table and its indices. Opaque; standalone (its own allocator), or bound
 * to a world, where every live projection is backed by a scene node. That node belongs to
 * the scene: if the host destroys it anyway, the projection lives on in the table (its
 * updates still apply) but is never drawn again until it is registered anew. */
typedef struct rv_render_scene rv_render_scene;

/* What happened to one delta during a drain or replay. */
typedef enum rv_delta_outcome {
    RV_DELTA_APPLIED = 0,
    RV_DELTA_REJECTED_SEQUENCE,          /* sequence not above the last one the scene took */
    RV_DELTA_REJECTED_OLDER_GENERATION,  /* generation below the scene's (a ClearGeneration
                                            not above it counts here too) */
    RV_DELTA_REJECTED_NEWER_GENERATION,  /* generation above the scene's (no ClearGeneration yet) */
    RV_DELTA_REJECTED_STALE_INCARNATION, /* the key lives under a newer incarnation */
    RV_DELTA_REJECTED_UNKNOWN_KEY,       /* no live projection with this key and incarnation */
    RV_DELTA_REJECTED_DUPLICATE,         /* Register of the live (key, incarnation) */
    RV_DELTA_REJECTED_INVALID,           /* malformed (replayed arrays only; appends validate) */
    RV_DELTA_OUTCOME_COUNT_
} rv_delta_outcome;

/* Called by the scene after each delta it takes, in sequence order, with a copy of the
 * delta (valid for the call) and its outcome. It may append to the journal being drained:
 * those deltas get later sequences and are drained by the same apply. It may read the
 * scene, but apply, apply_deltas and publish answer RV_ERR_BAD_STATE from inside it. One
 * lag: a node left a root because its equipped parents looped (a host error) is attached
 * when the batch in which the loop breaks ends, not at the breaking delta. */
typedef void (*rv_delta_observer)(const rv_delta *delta, rv_delta_outcome outcome, void *user);

typedef struct rv_render_scene_desc {
    rv_allocator allocator;      /* the scene's own memory (node memory is the world's) */
    uint32_t initial_capacity;   /* projections before the table grows; 0 = default 1024 */
    uint32_t initial_generation; /* the scene's generation before any ClearGeneration; 0 = 0 */
    rv_world *world;             /* NULL: standalone. Else live projections get nodes there */
    rv_delta_observer observer;  /* may be NULL */
    void *observer_user;
} rv_render_scene_desc;

/* Delta counts of one apply (or, in rv_render_scene_stats, since creation). */
typedef struct rv_apply_counts {
    uint64_t taken;        /* deltas read (each lands in exactly one outcome) */
    uint64_t applied;      /* outcome RV_DELTA_APPLIED */
    uint64_t rejected[RV_DELTA_OUTCOME_COUNT_]; /* per outcome; [RV_DELTA_APPLIED] stays 0 */
    uint64_t registered;   /* projections registered (replacements included) */
    uint64_t replaced;     /* Registers of a new incarnation that replaced a live older one */
    uint64_t unregistered; /* projections removed by Unregister */
    uint64_t cleared;      /* projections dropped by ClearGeneration */
} rv_apply_counts;

/* Render-scene counters. */
typedef struct rv_render_scene_stats {
    rv_apply_counts totals;  /* every apply and apply_deltas since creation */
    uint64_t publishes;      /* successful rv_render_scene_publish calls */
    uint64_t carry_over;     /* publications refused because deltas were left in the journal */
    uint64_t last_sequence;  /* highest sequence of a delta taken and checked against the scene
                                (0: none); a RV_DELTA_REJECTED_INVALID delta (replay only) and
                                one refused for its sequence leave it as it was */
    uint32_t generation;     /* current scene generation */
    uint32_t orphaned_children; /* live equipped children whose parent key is not live */
} rv_render_scene_stats;

/* Indices a host can iterate (rv_render_scene_index). Per-cell statics: rv_render_scene_cell. */
typedef enum rv_projection_index {
    RV_INDEX_NONE = 0,
    RV_INDEX_OUTDOOR_STATIC,  /* class outdoor static */
    RV_INDEX_DYNAMIC,         /* classes dynamic and equipped child */
    RV_INDEX_TRANSLUCENT,     /* flag translucent (hidden ones included) */
    RV_INDEX_SELECTABLE,      /* flag selectable */
    RV_INDEX_LIGHT_CANDIDATE, /* flag light candidate */
    RV_INDEX_DIRTY,           /* registered or changed since the last publish */
    RV_INDEX_COUNT_
} rv_projection_index;

/* Dirty bits of a projection since the last publish (rv_projection_record.dirty). */
enum {
    RV_DIRTY_REGISTERED = 1u << 0,
    RV_DIRTY_TRANSFORM = 1u << 1,
    RV_DIRTY_APPEARANCE = 1u << 2,
    RV_DIRTY_FLAGS = 1u << 3,
    RV_DIRTY_BUCKET = 1u << 4
};

/* A borrowed list of projection slots. Valid until the next apply, apply_deltas or
 * publish on the scene; order is unspecified (swap-remove). */
typedef struct rv_slot_list {
    const uint32_t *slots;
    uint32_t count;
} rv_slot_list;

/* One projection as the scene holds it. */
typedef struct rv_projection_record {
    uint64_t key;
    uint32_t incarnation;
    uint32_t generation;
    rv_projection projection;
    rv_node node;      /* backing node; RV_NODE_NONE when standalone or the node was destroyed */
    uint32_t dirty;    /* RV_DIRTY_* bits since the last publish */
} rv_projection_record;

/* Projection counts, one per index. */
typedef struct rv_projection_counts {
    uint32_t projections;     /* live */
    uint32_t outdoor_static;
    uint32_t cell_static;     /* over every cell */
    uint32_t cells;           /* cells with at least one cell static */
    uint32_t dynamic;         /* dynamic roots and equipped children */
    uint32_t equipped;        /* equipped children (a subset of dynamic) */
    uint32_t translucent;
    uint32_t selectable;
    uint32_t light_candidate;
    uint32_t dirty;
} rv_projection_counts;

/* Memory held by a render scene, in bytes (capacity, not use). */
typedef struct rv_render_scene_memory {
    uint64_t table_bytes;   /* projection rows and the key lookup */
    uint64_t index_bytes[RV_INDEX_COUNT_]; /* per index ([RV_INDEX_NONE] stays 0) */
    uint64_t cell_bytes;    /* per-cell buckets and the cell lookup */
    uint64_t link_bytes;    /* parent -> children and node -> projection lookups */
    uint64_t digest_bytes;  /* the reusable digest buffer */
    uint64_t total_bytes;   /* all of the above plus the scene object */
} rv_render_scene_memory;

/* Deterministic digest of every live projection (key, incarnation, generation, every
 * channel) in ascending key order, plus the scene generation and count: the same for any
 * insertion order, slot layout or hash layout. 128 bits. */
typedef struct rv_scene_digest {
    uint64_t hash[2];
    uint32_t projections;
    uint32_t generation;
} rv_scene_digest;

/* Creates a render scene. desc may be NULL (defaults, standalone). With desc->world, every
 * live projection gets a node in that world (class equipped child: under its parent's node
 * while the parent lives; otherwise a root), flagged projection, hidden and translucent to
 * match; at most one render scene binds a world. The world must outlive the scene or be
 * destroyed first (the scene then forgets its nodes). *out is owned by the caller.
 * Errors: RV_ERR_INVALID_ARG (out NULL, initial_capacity above 2^30), RV_ERR_BAD_STATE
 * (the world already has a render scene), RV_ERR_OUT_OF_MEMORY; *out untouched on error. */
RV_API rv_result rv_render_scene_create(const rv_render_scene_desc *desc, rv_render_scene **out);

/* Destroys a scene (NULL is ignored) and the nodes it made in a world that still lives. */
RV_API void rv_render_scene_destroy(rv_render_scene *scene);

/* Drains journal fully into the scene, in sequence order: each delta is applied or rejected
 * and counted by outcome (*out_counts, may be NULL, receives this call's counts). Deltas the
 * observer appends are drained by this same call. Afterwards the journal is empty and its
 * tick ends. Everything a batch needs (table, indices, cells, a bound world's nodes) is
 * reserved before its first delta is applied: an RV_ERR_OUT_OF_MEMORY for the deltas
 * pending at the call leaves scene and journal unchanged (projections, indices, counts,
 * stats; storage reserved before the failure stays reserved, so
 * rv_render_scene_get_memory may report more). Deltas the observer appended
 * form later batches; a failure there stops after the last whole batch — the scene is
 * consistent, the journal keeps the rest in order, and calling apply again resumes. The
 * journal's buffer keeps the entries taken until the drain ends, so it holds everything
 * pending at the call plus everything the observer appends during it.
 * Cost: O(deltas) (ClearGeneration: O(projections)); nothing when the journal is empty.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_BAD_STATE (called from the observer or during
 * a node visit of the bound world, or the journal is being drained), RV_ERR_INVARIANT (the
 * calling thread does not own the journal), RV_ERR_CAPACITY (2^30 projections),
 * RV_ERR_OUT_OF_MEMORY. Rejected deltas are not errors. */
RV_API rv_result rv_render_scene_apply(rv_render_scene *scene, rv_journal *journal, rv_apply_counts *out_counts);

/* Applies an array of recorded deltas (a replay, or merged streams) with their own
 * sequences: the scene checks them like a drain (repeated or backwards sequences are
 * rejected), validates each payload (RV_DELTA_REJECTED_INVALID) and calls the observer.
 * deltas: count elements, borrowed for the call. All or nothing on RV_ERR_OUT_OF_MEMORY (as
 * for rv_render_scene_apply, storage reserved before the failure stays reserved).
 * Errors: RV_ERR_INVALID_ARG (NULL scene, or NULL deltas with count > 0), RV_ERR_BAD_STATE
 * (from the observer or during a node visit), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_render_scene_apply_deltas(rv_render_scene *scene, const rv_delta *deltas, uint32_t count,
                                              rv_apply_counts *out_counts);

/* Publishes the scene for a frame: checks that journal (may be NULL) holds no undrained
 * delta and clears the dirty index. Deltas left over are an invariant failure: the call
 * returns RV_ERR_INVARIANT, stats.carry_over counts it, and the dirty index is kept.
 * Costs O(dirty projections); allocates nothing.
 * Errors: RV_ERR_INVALID_ARG (scene NULL), RV_ERR_BAD_STATE (from the observer), RV_ERR_INVARIANT. */
RV_API rv_result rv_render_scene_publish(rv_render_scene *scene, const rv_journal *journal);

/* The slot of the live projection with this key. A slot names the projection until the
 * next apply; identity is (key, incarnation). Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND. */
RV_API rv_result rv_render_scene_find(const rv_render_scene *scene, uint64_t key, uint32_t *out_slot);

/* Copies the projection in slot into *out. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (slot not live). */
RV_API rv_result rv_render_scene_read(const rv_render_scene *scene, uint32_t slot, rv_projection_record *out);

/* One past the highest slot ever used: every live slot is below it (for full scans). */
RV_API uint32_t rv_render_scene_slot_limit(const rv_render_scene *scene);

/* The slots of one index (borrowed, see rv_slot_list). Errors: RV_ERR_INVALID_ARG (NULL,
 * which out of range). */
RV_API rv_result rv_render_scene_index(const rv_render_scene *scene, rv_projection_index which, rv_slot_list *out);

/* The slots of the cell statics in one cell (borrowed; an unknown cell is an empty list).
 * Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_render_scene_cell(const rv_render_scene *scene, uint64_t cell, rv_slot_list *out);

/* Counts per index (zeroes for NULL). O(1). */
RV_API rv_projection_counts rv_render_scene_counts(const rv_render_scene *scene);

/* Digest of the scene (see rv_scene_digest). Sorts keys in a buffer the scene keeps and
 * reuses: it allocates only when the scene holds more projections than ever digested
 * before. O(n). Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_OUT_OF_MEMORY (*out unchanged). */
RV_API rv_result rv_render_scene_digest(rv_render_scene *scene, rv_scene_digest *out);

/* The projection key (and slot, either output may be NULL) a node backs. Errors:
 * RV_ERR_INVALID_ARG (scene NULL), RV_ERR_NOT_FOUND (not a node of this scene's projections). */
RV_API rv_result rv_render_scene_node_key(const rv_render_scene *scene, rv_node node, uint64_t *out_key,
                                          uint32_t *out_slot);

/* Counters, memory and allocation counters (zeroes for NULL). */
RV_API rv_render_scene_stats rv_render_scene_get_stats(const rv_render_scene *scene);
/* Bytes held in the table, each index and the digest buffer (zeroes for NULL). */
RV_API rv_render_scene_memory rv_render_scene_get_memory(const rv_render_scene *scene);
/* The render scene's allocation counters (zeroes for NULL). */
RV_API rv_alloc_stats rv_render_scene_alloc_stats(const rv_render_scene *scene);

/* ==== end section: journal and projection ============================================= */



/* ==== section: world and frame ======================================================== */

/* Everything a world is made from. rv_world_desc desc = {0}; is valid. */
typedef struct rv_world_desc {
    rv_allocator allocator;        /* every allocation of the world and its modules */
    uint32_t node_capacity;        /* initial node slots; 0 = default 1024. Grows as needed */
    rv_occlusion_desc occlusion;   /* main-view occlusion buffer; width 0 = off */
    rv_lod_desc lod;
    rv_partition_desc partition;
    rv_residency_desc residency;
    /* Optional monotonic clock in nanoseconds for per-stage frame times; NULL = no times. */
    uint64_t (*clock_ns)(void *user);
    void *clock_user;
    /* true: every frame view also lists why each pruned subtree was not drawn
     * (rv_frame_view.culls), for verification tools; costs a little per pruned subtree. */
    bool record_culls;
} rv_world_desc;

/* Creates a world. desc may be NULL (all defaults). *out_world receives the world, owned by
 * the caller until rv_world_destroy. Errors: RV_ERR_INVALID_ARG (out_world NULL, a desc
 * field out of range), RV_ERR_NOT_FINITE, RV_ERR_OUT_OF_MEMORY; *out_world untouched on error. */
RV_API rv_result rv_world_create(const rv_world_desc *desc, rv_world **out_world);

/* Destroys a world and everything it owns; every handle and borrowed view of it becomes
 * invalid. NULL is ignored. */
RV_API void rv_world_destroy(rv_world *world);

/* The world's allocation counters (every module's allocations included). */
RV_API rv_alloc_stats rv_world_alloc_stats(const rv_world *world);


/* ---- the frame (DESIGN.md §8) -------------------------------------------------------- */

/* The camera of one frame. Give either view + projection (both float[16], column-major), or
 * view_projection (float[16]) + eye (float[3]) with view and projection NULL. All pointers
 * are read during the call only. */
typedef struct rv_view {
    const float *view;            /* world -> view matrix */
    const float *projection;      /* view -> clip matrix */
    const float *view_projection; /* world -> clip; used when view/projection are NULL */
    const float *eye;             /* world position, required with view_projection */
    rv_clip clip;                 /* the projection's depth convention */
    uint32_t viewport_width;      /* pixels, > 0 */
    uint32_t viewport_height;     /* pixels, > 0 */
    float fov_y;                  /* vertical field of view, radians; 0 = read from the
                                     projection (perspective), or 60 degrees for ortho */
    double time_ms;               /* host time in milliseconds; must not go backwards */
} rv_view;

/* Stages of a frame, for per-stage times (rv_frame_view.stage_us). */
typedef enum rv_frame_stage {
    RV_STAGE_TRANSFORMS = 0, /* rv_update_world */
    RV_STAGE_JOURNAL,        /* draining the journal into the render scene */
    RV_STAGE_FRUSTUM,        /* the hierarchical walk (less what is timed below) */
    RV_STAGE_PARTITION,      /* partition gating and flushing */
    RV_STAGE_OCCLUSION,      /* occluder rasterisation and occlusion tests */
    RV_STAGE_LOD,            /* LOD and HLOD selection */
    RV_STAGE_STREAMING,      /* grid updates and residency */
    RV_STAGE_PUBLISH,        /* sorting and publishing the frame view */
    RV_STAGE_COUNT
} rv_frame_stage;

/* Levels counted by the LOD histogram; a level >= RV_LOD_HISTOGRAM_BINS - 1 counts in the last bin. */
#define RV_LOD_HISTOGRAM_BINS 9

/* Counters of one frame. */
typedef struct rv_frame_counts {
    uint32_t nodes_visited;      /* nodes the walk reached */
    uint32_t frustum_tested;     /* sphere tests against the frustum */
    uint32_t frustum_culled;     /* subtrees the frustum rejected */
    uint32_t partition_culled;   /* part subtrees hidden by the partition gate */
    uint32_t occlusion_tested;   /* occlusion tests (groups and objects) */
    uint32_t occlusion_culled;   /* groups and objects hidden by occluders */
    uint32_t occluders_added;    /* occluders submitted (per-frame and persistent nodes) */
    uint32_t occluders_rasterised;
    uint32_t lod_culled;         /* objects whose level means "nothing" (the ladder's count) */
    uint32_t lod_histogram[RV_LOD_HISTOGRAM_BINS]; /* drawn items per LOD level */
    uint32_t hlod_refined;       /* regions refined into their children */
    uint32_t hlod_drawn;         /* regions drawn as themselves */
    uint32_t crossfades;         /* items drawn with a weight below 1 */
    uint32_t journal_applied;    /* deltas applied this frame */
    uint32_t journal_rejected;   /* deltas rejected this frame (every reason) */
    uint32_t pages_requested;    /* page requests handed out in this view */
    uint32_t pages_evicted;      /* evictions handed out in this view */
    uint32_t opaque;             /* items in the opaque list */
    uint32_t translucent;        /* items in the translucent list */
    uint32_t transform_errors;   /* 1 when rv_update_world refused an in-place transform write
                                    (NaN/Inf, zero quaternion): those nodes kept their previous
                                    matrices; the host should fix the writes */
    uint32_t transform_stale;    /* nodes whose world placement is unknown after this frame's
                                    update (rv_scene_stats.transform_stale): a transform of
                                    theirs or an ancestor's could not be composed, in this
                                    frame or an earlier one; frustum, occlusion and LOD
                                    draw them (and they occlude nothing) until then */
} rv_frame_counts;

/* One thing to draw. During a LOD or HLOD crossfade a node appears twice (two levels, or a
 * region and its children) with fade weights summing to 1. */
typedef struct rv_draw_item {
    rv_node node;
    uint64_t projection_key;  /* the journal source key of a projection-backed node; 0 otherwise
                                 (a projection registered with key 0 cannot be told from a
                                 plain node here: give projections nonzero keys) */
    uint32_t lod_level;       /* 0 = finest; 0 for nodes without a ladder */
    float fade;               /* weight in (0, 1]; 1 when not fading */
    float view_depth;         /* distance of the world-sphere centre along the view direction */
    float world_matrix[16];   /* column-major, as of this frame's transform update */
} rv_draw_item;

/* Why a subtree was not drawn (rv_frame_view.culls, with desc.record_culls). */
typedef enum rv_cull_reason {
    RV_CULL_FRUSTUM = 1,      /* its world sphere is outside the frustum */
    RV_CULL_OCCLUSION,        /* hidden by occluders (a group prunes its whole subtree) */
    RV_CULL_PARTITION,        /* a part hidden by the partition gate (padded frustum or committed
                                 slice). An inactive deferred part is not culled: its first
                                 sight requests its activation, and it is drawn like any part */
    RV_CULL_LOD_NOTHING,      /* its LOD level is past the ladder: draw nothing (node only) */
    RV_CULL_HLOD_REPLACED,    /* a child of an HLOD region drawn as itself: the region stands in */
    RV_CULL_HIDDEN            /* flagged hidden (a hidden projection) */
} rv_cull_reason;

/* One pruned subtree: node and everything below it were not drawn, for reason. */
typedef struct rv_cull_record {
    rv_node node;
    rv_cull_reason reason;
} rv_cull_record;

/* The borrowed product of one frame: valid until the world builds the next-but-one frame
 * (two arenas alternate), until rv_world_destroy, or until rv_frame_abort reuses its arena —
 * rv_frame_view_is_valid tells. Every pointer points into the world's arenas: never free,
 * never keep past validity. */
typedef struct rv_frame_view {
    uint64_t generation;      /* of the arena this view lives in */
    uint64_t frame_sequence;  /* 1 for the first published frame */
    uint32_t arena;           /* which arena (0 or 1) */
    const rv_draw_item *opaque;        /* front to back (view_depth ascending) */
    uint32_t opaque_count;
    const rv_draw_item *translucent;   /* far to near, stable for equal depths */
    uint32_t translucent_count;
    const rv_partition_request *resync_requests; /* flushed this frame */
    uint32_t resync_request_count;
    const rv_page_request *page_requests;       /* loads to start, nearest first */
    uint32_t page_request_count;
    const rv_page_eviction *page_evictions;     /* pages to free */
    uint32_t page_eviction_count;
    const rv_node *hlod_load_requests; /* regions whose children should load next, most urgent first */
    uint32_t hlod_load_request_count;
    const rv_cull_record *culls;       /* with desc.record_culls: every pruned subtree top */
    uint32_t cull_count;
    rv_tick_demand tick;               /* what an on-demand loop must do next */
    rv_frame_counts counts;
    double stage_us[RV_STAGE_COUNT];   /* microseconds per stage; -1 without desc.clock_ns */
} rv_frame_view;

/* Frame calls (rv_frame_begin, rv_frame_add_occluder, rv_frame_cull, rv_frame_end,
 * rv_frame_abort, rv_frame) run host code: a render scene's delta observer while the journal
 * is drained, the partition callbacks (request_reprocess, is_update_in_progress), the clock
 * and the allocator. A frame call made from such a callback is refused with
 * RV_ERR_BAD_STATE and changes nothing; the frame call that ran the callback goes on. So is
 * a frame call from the delta observer of a render scene bound to the world while the host
 * drains it (rv_render_scene_apply outside a frame): its view would show half a tick. */

/* Starts a frame: validates the view, drains the world's journal into its render scene,
 * updates world transforms (rv_update_world), opens the occlusion buffer for the view and
 * the residency's frame. The arena this frame is built in is the one the last published
 * view does not live in, so that view stays valid while this one is built.
 * A transform that cannot be composed (a bad in-place write, a product overflowing float)
 * does not stop the frame: the node keeps its previous matrix and counts.transform_errors
 * says so in the frame where it happens. From that frame until a transform of the node
 * composes again, the node and its subtree are counted in counts.transform_stale in every
 * frame and are not culled by frustum, occlusion or LOD (their world bounds are unbounded,
 * see rv_update_world; an occluder node among them hides nothing); the hidden flag,
 * inactive deferred partition parts and HLOD regions standing in for children that are not
 * resident still apply. The view-projection of the view + projection form is multiplied
 * in double, and the frustum and the occlusion buffer both use that product (a camera far
 * from the origin keeps its far plane, and an occluder centimetres from it its outline);
 * the view_projection form is used as given, so a host passing it should build it in
 * double and take the float rounding of an eye far from the origin into account.
 * Errors (the world is unchanged unless noted): RV_ERR_INVALID_ARG (NULL, zero viewport,
 * neither matrix form given, a view whose forward axis has no length in float (a view
 * matrix scaled by 1e-30, say), or, with occlusion on, a viewport so wide or tall that the
 * buffer's height would leave 1..RV_OCCLUSION_MAX_SIZE), RV_ERR_NOT_FINITE (a matrix, eye
 * or time is NaN/Inf, or projection times view overflows float),
 * RV_ERR_BAD_STATE (a frame is already open: end or abort it; or called from a callback a
 * frame call is running), RV_ERR_ORDER (time_ms went
 * backwards), RV_ERR_INVARIANT (the journal could not be drained), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_frame_begin(rv_world *world, const rv_view *view);

/* Adds an occluder for this frame only: a local box (min <= max, float[3] each) under matrix
 * (float[16], column-major, affine; NULL = identity), between rv_frame_begin and
 * rv_frame_cull. A no-op returning RV_OK when occlusion is off (desc.occlusion.width 0).
 * Declare only what really hides (DESIGN.md §4). Errors: RV_ERR_INVALID_ARG (inverted box,
 * non-affine matrix), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no frame open, after cull, or from a
 * callback a frame call is running). */
RV_API rv_result rv_frame_add_occluder(rv_world *world, const float min[3], const float max[3],
                                       const float matrix[16]);

/* Culls: rasterises the persistent occluder nodes inside the frustum, then walks the
 * hierarchy once — frustum (plane masks inherited), partition gate (a partition group is
 * gated when the walk reaches it), occlusion (group nodes prune their subtree; objects are
 * tested in a batch after the walk), HLOD (a region drawn as itself stops the walk) — and
 * selects LOD levels (hysteresis, crossfade) for what survives. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_BAD_STATE (no frame begun, already culled, or from a callback a frame call is
 * running), RV_ERR_OUT_OF_MEMORY (the frame stays open; abort it). */
RV_API rv_result rv_frame_cull(rv_world *world);

/* Ends the frame: flushes partition resyncs (request_reprocess is called here), updates the
 * streaming grids (the eye is a source of each grid unless its eye_radius is negative, plus
 * rv_world_set_stream_sources), hands out up to desc.residency.requests_per_frame page
 * requests and every eviction, combines tick demand, sorts and publishes *out — a borrowed
 * view valid until the frame after next (see rv_frame_view). The view lists what the cull
 * decided: a node the host destroys after rv_frame_cull is still listed, by its now-stale
 * handle (node calls on it answer RV_ERR_STALE_HANDLE); destroy before the cull, or skip it.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_BAD_STATE (not culled, or from a callback a frame call
 * is running), RV_ERR_INVARIANT (deltas were left in the journal at publication: the view is
 * still published and counted). */
RV_API rv_result rv_frame_end(rv_world *world, rv_frame_view *out);

/* Abandons an open frame: nothing is published and its arena is recycled (any view that
 * lived in it was already invalid). The last published view stays valid. RV_OK also when no
 * frame is open. Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_BAD_STATE (called from a
 * callback a frame call is running, e.g. request_reprocess: see rv_frame_begin). */
RV_API rv_result rv_frame_abort(rv_world *world);

/* rv_frame_begin, rv_frame_cull and rv_frame_end in one call; on an error the frame is
 * aborted and *out is untouched. Errors: those of the three. */
RV_API rv_result rv_frame(rv_world *world, const rv_view *view, rv_frame_view *out);

/* True while view (published by this world's rv_frame_end) may be read: its arena has not
 * been reused since. False for NULL, for another world's view, and for views from
 * rv_cull_view (those stay valid until the next rv_cull_view with their list; not tracked). */
RV_API bool rv_frame_view_is_valid(const rv_world *world, const rv_frame_view *view);

/* A 64-bit digest of what the view says to draw (node handles' slot and generation,
 * projection keys, LOD levels, fade weights, list order), for parity checks between runs
 * and between worlds: independent of world tags and addresses. 0 for NULL. */
RV_API uint64_t rv_frame_view_digest(const rv_frame_view *view);

/* Makes node a persistent occluder: a local box (min <= max) under the node's world matrix,
 * rasterised every frame it meets the frustum. Replaces an earlier box. Errors:
 * RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_node_set_occluder_box(rv_world *world, rv_node node, const float min[3], const float max[3]);
/* Removes the node's occluder box (RV_OK when it had none). Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_clear_occluder_box(rv_world *world, rv_node node);

/* Gives node a local test box besides its bounding sphere (walls and floors are badly
 * served by spheres). Occlusion tests use whichever of the two has the smaller world
 * volume; the frustum test, when the sphere straddles a plane, also tries the box, and the
 * node is culled when either lies wholly outside. The box must enclose the node's geometry
 * (and, for a group node, its subtree's). Errors as rv_node_set_occluder_box. */
RV_API rv_result rv_node_set_test_box(rv_world *world, rv_node node, const float min[3], const float max[3]);
/* Removes the node's test box. Errors as rv_node_clear_occluder_box. */
RV_API rv_result rv_node_clear_test_box(rv_world *world, rv_node node);

/* The world's journal and render scene (created on first call, bound to the world: every
 * live projection is backed by a node). The host appends to the journal; rv_frame_begin
 * drains it. Owned by the world: never destroy them. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_BAD_STATE (a render scene the host created is bound to the world: at most one
 * render scene binds a world), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_world_journal(rv_world *world, rv_journal **out_journal);
/* The world's render scene (created with its journal on first call; owned by the world).
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_BAD_STATE (as rv_world_journal), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_world_render_scene(rv_world *world, rv_render_scene **out_scene);

/* Registers a streaming grid with the world (desc as rv_grid_create; desc->allocator is
 * ignored: the world's is used). The world's residency (configured by desc.residency) serves
 * every grid; the grid lives until the world is destroyed. *out_grid (may be NULL) is
 * borrowed for queries. Each frame updates every grid with the eye source and the
 * rv_world_set_stream_sources sources; a grid whose update could ever examine more than
 * rv_grid_update's 2^24 cells with them is refused with RV_ERR_CAPACITY rather than
 * failing every frame. The check counts each square (the eye_radius or a source's radius,
 * plus lead) whole, wherever the sources stand, as floor(2 * reach / cell_size) + 3 cells
 * per axis (one more than the worst case, for rounding) clipped by the grid's counts: a
 * reach just under the bound may be refused. Errors: those of rv_grid_create,
 * RV_ERR_CAPACITY (that reach), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_world_add_grid(rv_world *world, const rv_grid_desc *desc, rv_grid **out_grid);

/* Sets extra stream sources (copied) used with the eye for every grid from the next
 * rv_frame_end; count 0 clears them. Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE (a
 * position or radius), RV_ERR_CAPACITY (with them, a registered grid's update could examine
 * more than 2^24 cells: see rv_world_add_grid), RV_ERR_OUT_OF_MEMORY; nothing changes on
 * error. */
RV_API rv_result rv_world_set_stream_sources(rv_world *world, const rv_stream_source *sources, uint32_t count);

/* The world's residency (NULL before the first rv_world_add_grid): the host answers the
 * frame view's page requests with rv_residency_place / rv_residency_fail on it. */
RV_API rv_residency *rv_world_residency(rv_world *world);

/* The main view's occlusion buffer, for stats and debug images (NULL when occlusion is off
 * or before the first frame). Borrowed; owned by the world. */
RV_API rv_occlusion *rv_world_occlusion(rv_world *world);

/* An extra view's own output list (shadow, reflection). Opaque. */
typedef struct rv_view_list rv_view_list;

/* Creates an extra view's list: one arena, reused by each rv_cull_view with it; owned by the
 * caller (rv_view_list_destroy), and by the world's lifetime. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_view_list_create(rv_world *world, rv_view_list **out_list);
/* Destroys a list (NULL ignored). Views it lent become invalid. */
RV_API void rv_view_list_destroy(rv_view_list *list);

/* Culls an extra view by frustum and LOD only (no occlusion, no partition gate, no
 * hysteresis or crossfade state touched; HLOD regions refine by screen-space error and
 * residency without fading) into list, and fills *out: opaque and translucent lists and
 * counts; the other fields are empty. Uses the transforms of the last rv_update_world.
 * Valid until the next rv_cull_view with this list. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (list of another world), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_cull_view(rv_world *world, const rv_view *view, rv_view_list *list, rv_frame_view *out);

/* ==== end section: world and frame ==================================================== */

#ifdef __cplusplus
}
#endif

#endif /* RVIS_H */
