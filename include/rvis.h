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
 * RV_OUTSIDE only when the sphere lies wholly outside one valid plane. A NaN input answers
 * RV_INTERSECTING (draw). */
RV_API rv_containment rv_frustum_classify_sphere(const rv_frustum *frustum, const float center[3], float radius);

/* As rv_frustum_classify_sphere, testing only the planes whose bits are set in *mask, and
 * clearing from *mask each plane the sphere is wholly inside of, so children of a node need
 * not test it again (plane masking, Assarsson & Möller 2000). Start with frustum->plane_mask. */
RV_API rv_containment rv_frustum_classify_sphere_masked(const rv_frustum *frustum, const float center[3],
                                                        float radius, uint32_t *mask);

/* Classifies an axis-aligned world box (min float[3] <= max float[3]) with the
 * nearest/farthest-vertex test. Conservative as above. */
RV_API rv_containment rv_frustum_classify_box(const rv_frustum *frustum, const float min[3], const float max[3]);

/* ==== end section: frustum ============================================================ */



/* ==== section: scene ================================================================== */

/* Node hierarchy (DESIGN.md §2). A node has a local transform (position, rotation
 * quaternion, scale), a world matrix derived from it and its ancestors', an optional
 * geometry bounding sphere in local space, and world bounds: one sphere enclosing its own
 * geometry and every descendant's. Nodes are created in a world and named by rv_node
 * handles; every function rejects a stale or foreign handle with RV_ERR_STALE_HANDLE and
 * changes nothing. */

/* Per-world scene counters. */
typedef struct rv_scene_stats {
    uint32_t nodes;                  /* live nodes */
    uint32_t matrices_recomputed;    /* world matrices recomputed by the last rv_update_world */
    uint32_t bounds_recomputed;      /* world spheres recomputed by the last rv_update_world */
} rv_scene_stats;

/* Creates a node under parent (RV_NODE_NONE: a root) with identity transform and no
 * geometry. Errors: RV_ERR_INVALID_ARG (world or out NULL), RV_ERR_STALE_HANDLE (parent),
 * RV_ERR_CAPACITY (2^24 slots in use), RV_ERR_OUT_OF_MEMORY. *out untouched on error. */
RV_API rv_result rv_node_create(rv_world *world, rv_node parent, rv_node *out);

/* Destroys node and its whole subtree; every handle into it goes stale. Iterative: any
 * depth works. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_destroy_subtree(rv_world *world, rv_node node);

/* Destroys node only; its children become roots, keeping their local transforms (so their
 * world placement changes unless the node was identity). Errors as rv_node_destroy_subtree. */
RV_API rv_result rv_node_destroy_reroot(rv_world *world, rv_node node);

/* Makes child a child of parent, moving it from wherever it was. Refused with RV_ERR_CYCLE
 * when parent is child or a descendant of it (the tree is left unchanged). The child keeps
 * its local transform. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE, RV_ERR_CYCLE. */
RV_API rv_result rv_node_attach(rv_world *world, rv_node parent, rv_node child);

/* Makes node a root (its local transform becomes its world transform at the next update).
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_detach(rv_world *world, rv_node node);

/* Local transform setters; each marks the node moved. position and scale: float[3] (world
 * units, factors); rotation: quaternion float[4] (x, y, z, w), normalised by rvis (a zero
 * quaternion is RV_ERR_INVALID_ARG); axis: float[3], any nonzero length; radians.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_NOT_FINITE (NaN/Inf, node unchanged),
 * RV_ERR_STALE_HANDLE. A zero scale component is allowed (it collapses the node). */
RV_API rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3]);
RV_API rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3]);
RV_API rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4]);
RV_API rv_result rv_node_set_rotation_axis_angle(rv_world *world, rv_node node, const float axis[3], float radians);

/* Reads the local transform into any non-NULL outputs (float[3], float[4], float[3]). */
RV_API rv_result rv_node_get_transform(const rv_world *world, rv_node node, float position[3],
                                       float quaternion[4], float scale[3]);

/* Pointers to the node's local position (float[3]), rotation (float[4], x y z w) and scale
 * (float[3]) for allocation-free writes (animation). Any output may be NULL. After writing,
 * call rv_node_mark_moved. The pointers stay valid until the next call that creates a node
 * in this world (storage may grow) or destroys this node; re-fetch them after either.
 * Values written must be finite (rv_update_world re-checks moved nodes and reports
 * RV_ERR_NOT_FINITE without using them). */
RV_API rv_result rv_node_transform_ptrs(rv_world *world, rv_node node, float **position,
                                        float **quaternion, float **scale);

/* Marks node moved after in-place writes. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_mark_moved(rv_world *world, rv_node node);

/* Declares the node's own geometry bounds as a sphere in local space (centre float[3],
 * radius in local units, >= 0). radius < 0 clears it (the node has no geometry of its own).
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_set_bounds(rv_world *world, rv_node node, const float center[3], float radius);

/* Recomputes world matrices and world bounds of what moved since the last call: moved
 * nodes and their descendants, then each affected ancestor's sphere once. Iterative (no
 * recursion; any depth). Errors: RV_ERR_INVALID_ARG (world NULL), RV_ERR_NOT_FINITE (a
 * transform written in place was not finite: those nodes keep their previous matrices). */
RV_API rv_result rv_update_world(rv_world *world);

/* World matrix (column-major float[16]) as of the last rv_update_world. */
RV_API rv_result rv_node_world_matrix(const rv_world *world, rv_node node, float out[16]);

/* World bounds as of the last rv_update_world: float[4] = centre x, y, z, radius (world
 * units); radius < 0 when neither the node nor any descendant has geometry. Scale is
 * honoured (radius times the largest axis scale of the world matrix). */
RV_API rv_result rv_node_world_bounds(const rv_world *world, rv_node node, float out_sphere[4]);

/* The node's parent (RV_NODE_NONE for a root), first child and next sibling, for host walks.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_parent(const rv_world *world, rv_node node, rv_node *out_parent);
RV_API rv_result rv_node_first_child(const rv_world *world, rv_node node, rv_node *out_child);
RV_API rv_result rv_node_next_sibling(const rv_world *world, rv_node node, rv_node *out_sibling);

/* True when node names a live node of this world. */
RV_API bool rv_node_is_valid(const rv_world *world, rv_node node);

/* Scene counters (zeroes for a NULL world). */
RV_API rv_scene_stats rv_world_scene_stats(const rv_world *world);

/* ==== end section: scene ============================================================== */



/* ==== section: cull =================================================================== */
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
 * a projection that is not invertible or maps the view to negative w), RV_ERR_NOT_FINITE,
 * RV_ERR_OUT_OF_MEMORY. On any error the buffer drops the frame: adds are refused with
 * RV_ERR_BAD_STATE and tests answer visible until the next successful begin (a stale view
 * can never cull). */
RV_API rv_result rv_occlusion_begin(rv_occlusion *occlusion, const float view_projection[16], rv_clip clip,
                                    float aspect);

/* Declares an occluder box for this frame: local min/max corners (float[3], world units
 * before the matrix; min <= max; a zero extent makes a flat occluder such as a wall quad)
 * and a column-major local-to-world matrix (float[16]; NULL = identity; any invertible or
 * flattening affine matrix). Declare the solid you may be hidden by, never a larger box:
 * an occluder bigger than its solid hides things the camera can see.
 * The box is recorded; the freeze projects and draws the frame's occluders nearest first,
 * and one found wholly behind nearer ones is not drawn (drawing it could change nothing).
 * Small (min_occluder_texels), off-screen and behind-the-camera occluders are counted as
 * skipped at the freeze, not refused.
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
 * Errors (with *out_visible = true): RV_ERR_INVALID_ARG (NULL, min > max),
 * RV_ERR_NOT_FINITE. out_visible must not be NULL. */
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
