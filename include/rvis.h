/*
 * rvis — rendering visibility for engines that draw for themselves.
 *
 * One flat C API. rvis answers, once per frame, what to draw, at which level of detail
 * and which pages to load next. It never draws, never owns GPU memory, never loads files.
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
    RV_ERR_OUT_OF_MEMORY, /* the allocator returned NULL; state is as before the call */
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

/* Host allocator. Every field may be NULL: a desc with no alloc/free uses libc. alloc
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
 * d < -radius), RV_INSIDE when d >= radius for every valid plane. A NaN/Inf centre, a NaN
 * or negative radius, or a NULL frustum/centre answers RV_INTERSECTING (draw). A frustum
 * with plane_mask 0 (e.g. from a zero matrix) answers RV_INSIDE for every valid sphere. */
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
 * |w|), i.e. a fraction of a float step of its coordinates) may go either way. A
 * plane_mask of 0 keeps everything.
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
 * Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_STALE_HANDLE (either handle),
 * RV_ERR_CYCLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child);

/* Makes node a root, appended to the root list (its local transform becomes its world
 * transform at the next update). A root stays where it is. Never allocates.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE. */
RV_API rv_result rv_node_detach(rv_world *world, rv_node node);

/* Local transform setters; each marks the node moved. The local matrix is
 * translate(position) * rotate(quaternion) * scale(scale). position: float[3], world units
 * of the parent's space; scale: float[3] factors (negative mirrors; a zero component is
 * allowed and collapses the node); rotation: quaternion float[4] (x, y, z, w), normalised
 * by rvis; axis: float[3], any nonzero length, radians counter-clockwise about it.
 * Never allocate. Errors: RV_ERR_INVALID_ARG (world or array NULL, a zero quaternion or
 * axis), RV_ERR_NOT_FINITE (a NaN/Inf component), RV_ERR_STALE_HANDLE; the node is
 * unchanged on every error. */
RV_API rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3]);
RV_API rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3]);
RV_API rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4]);
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
 * Errors: RV_ERR_INVALID_ARG (world NULL; or a zero quaternion written in place),
 * RV_ERR_NOT_FINITE (a transform written in place was not finite, or a world matrix
 * overflowed): every other node is updated; the offending nodes keep their previous world
 * matrices and their descendants are placed under those. RV_ERR_BAD_STATE (inside a visit). */
RV_API rv_result rv_update_world(rv_world *world);

/* World matrix (column-major float[16]) as of the last rv_update_world.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_world_matrix(const rv_world *world, rv_node node, float out[16]);

/* World bounds as of the last rv_update_world: float[4] = centre x, y, z, radius (world
 * units). radius < 0 when neither the node nor any descendant has geometry (the centre is
 * then the node's world position). See rv_update_world for how tight it is.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_world_bounds(const rv_world *world, rv_node node, float out_sphere[4]);

/* The node's parent (RV_NODE_NONE for a root), first child and next sibling (RV_NODE_NONE
 * after the last), for host walks. Roots are siblings of each other: a root's next sibling
 * is the next root (see rv_world_first_root). Children keep the order they were attached in.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_parent(const rv_world *world, rv_node node, rv_node *out_parent);
RV_API rv_result rv_node_first_child(const rv_world *world, rv_node node, rv_node *out_child);
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

/* Configuration of an occlusion buffer (standalone, or the world's main-view buffer inside
 * rv_world_desc). Zero selects each default. */
typedef struct rv_occlusion_desc {
    rv_allocator allocator;   /* standalone buffers only; a world uses its own allocator */
    uint32_t width;           /* texels; 0 = occlusion off (tests answer visible). 256 recommended */
    float min_occluder_texels;/* occluders whose screen bounds are smaller than this many texels
                                 in either direction are skipped. 0 = default 2; negative = keep all */
    uint32_t max_occluders;   /* cap on occluders rasterised per frame, largest on screen first;
                                 0 = no cap */
} rv_occlusion_desc;

/* ==== end section: occlusion ========================================================== */



/* ==== section: lod ==================================================================== */

/* LOD and HLOD configuration (standalone selectors, or inside rv_world_desc). */
typedef struct rv_lod_desc {
    float hysteresis;          /* fraction of each threshold angle; 0 = default 0.10; negative = none */
    float crossfade_ms;        /* fade duration on a level change; 0 = default 250; negative = no fade */
    float max_screen_space_error; /* HLOD refine limit in pixels; 0 = default 16 */
    float bias;                /* multiplier on the apparent angle; 0 = default 1 */
    uint32_t finest_level;     /* levels finer than this are replaced by it; 0 = no limit */
    float ortho_reference_fov_y; /* radians; orthographic angle = projected diameter / view
                                    height * this; 0 = default 60 degrees */
} rv_lod_desc;

/* ==== end section: lod ================================================================ */



/* ==== section: partition ============================================================== */

/* Partition-gate host wiring and configuration (inside rv_world_desc). All optional. */
typedef struct rv_partition_desc {
    /* Asks the host to resync the leaves of these parts (node ids of parts, one group per
     * call). The array is borrowed for the call. NULL: requests are only listed in the
     * frame result. */
    void (*request_reprocess)(const rv_node *parts, uint32_t count, void *user);
    /* True while the host's update is running; resync requests are held meanwhile. */
    bool (*is_update_in_progress)(void *user);
    void *user;
    float frustum_margin;          /* world units, >= 0; default 0 */
    float lazy_activation_timeout_ms; /* 0 = default 2000 */
    float lazy_activation_backoff;    /* multiplier per unanswered request; 0 = default 2 */
    float lazy_activation_cap_ms;     /* 0 = default 60000 */
} rv_partition_desc;

/* ==== end section: partition ========================================================== */



/* ==== section: grid and residency ===================================================== */

/* Page residency configuration (standalone, or the world's residency inside rv_world_desc). */
typedef struct rv_residency_desc {
    rv_allocator allocator;       /* standalone only; a world uses its own allocator */
    uint64_t budget_bytes;        /* 0 = default 256 MiB */
    uint32_t drop_after_frames;   /* an unrequested queued page is dropped after this many frames; 0 = 30 */
    float retry_ms;               /* first retry after a failed load; 0 = default 100 */
    float retry_backoff;          /* multiplier per consecutive failure; 0 = default 2 */
    float retry_cap_ms;           /* 0 = default 10000 */
    uint32_t requests_per_frame;  /* requests rv_frame_end hands out; 0 = default 64 */
} rv_residency_desc;

/* ==== end section: grid and residency ================================================= */



/* ==== section: journal and projection ================================================= */
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

/* ==== end section: world and frame ==================================================== */

#ifdef __cplusplus
}
#endif

#endif /* RVIS_H */
