/* Scene-node hierarchy internals (docs/design.md §2). Structure of arrays indexed by slot.
 * Other modules read these arrays directly (read-only) during a frame.
 *
 * Links: a node's children form a list first_child -> next_sibling -> ...; prev_sibling is
 * circular (the first child's prev_sibling is the last child) so appending is O(1). Roots
 * form the same kind of list starting at first_root (their parent is RVI_INDEX_NONE).
 *
 * Bounds invariant (the one culling relies on): every node's world_sphere encloses its own
 * geometry's world sphere and every child's world_sphere, as of the last rv_update_world.
 * It may be larger than minimal (parents grow at once and shrink lazily, see
 * scene_update.c), never smaller. A node whose world placement is unknown
 * (RVI_NODE_STALE) has an infinite radius when it has geometry, and so has every ancestor:
 * culling code that reads spheres draws it without a flag test of its own. */
#ifndef RVI_SCENE_H
#define RVI_SCENE_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/pool.h"
#include "core/vec.h"

#include <math.h>

/* Per-node flag bits (rvi_scene.flags). Modules set their own attachment bits. */
enum {
    RVI_NODE_MOVED          = 1u << 0,  /* own local transform changed since the last update */
    RVI_NODE_HAS_GEOMETRY   = 1u << 1,  /* set_bounds gave a local sphere */
    RVI_NODE_BOUNDS_DIRTY   = 1u << 2,  /* world sphere must be recomputed exactly */
    /* scene-internal bits (3..7) */
    RVI_NODE_LISTED         = 1u << 3,  /* slot is in scene.dirty; survives destroy so a
                                           reused slot is never listed twice */
    RVI_NODE_VISITED        = 1u << 4,  /* update: ancestor walk has seen this node */
    RVI_NODE_COVERED        = 1u << 5,  /* update: a strict ancestor moved */
    RVI_NODE_ENTERED        = 1u << 6,  /* update: waits for / feeds the bounds climb */
    RVI_NODE_MARK           = 1u << 7,  /* update: a changed child was folded in (the node
                                           starts a climb); rv_group_spatially: "seen" */
    RVI_NODE_HAS_LOD        = 1u << 8,
    RVI_NODE_HAS_HLOD       = 1u << 9,
    RVI_NODE_OCCLUDER       = 1u << 10, /* persistent occluder box */
    RVI_NODE_HAS_TEST_BOX   = 1u << 11,
    RVI_NODE_PARTITION_GROUP= 1u << 12,
    RVI_NODE_PARTITION_PART = 1u << 13,
    RVI_NODE_PROJECTION     = 1u << 14, /* backed by a journal projection */
    RVI_NODE_TRANSLUCENT    = 1u << 15, /* RV_NODE_FLAG_TRANSLUCENT, or the projection's */
    RVI_NODE_HIDDEN         = 1u << 16, /* RV_NODE_FLAG_HIDDEN, or the projection's */
    RVI_NODE_STALE          = 1u << 17, /* world placement unknown: the node's transform, or
                                           an ancestor's, could not be composed at its last
                                           update (it keeps its previous matrix); its world
                                           sphere is unbounded (radius +inf) until it composes
                                           again, so no culling stage can drop it */
    RVI_NODE_LOCAL_MATRIX   = 1u << 18, /* the local transform is a host's matrix: its linear
                                           part in local_linear, its translation in position
                                           (rv_node_set_local_matrix) */
    RVI_NODE_LOST_CHILD     = 1u << 19, /* update: lost a child since the last update (a
                                           climb start; its sphere still encloses the rest,
                                           and the loss counts as one loose change) */
    RVI_NODE_PARTITION_PATH = 1u << 20, /* above a partition group, up to the part it is
                                           nested in or the root: the frame's walk pads it
                                           as it pads groups and parts (partition_gate.c) */
    RVI_NODE_UNPLACED       = 1u << 21, /* an equipped child's node a parent took since the
                                           last update: hidden (with RVI_NODE_HIDDEN) until
                                           the update places it, as its world matrix is still
                                           the one it had without a parent */
};

/* Scene-only per-node fields touched together by an update (packed: a moved node's update
 * touches one line for all four instead of four lines). */
typedef struct rvi_node_aux {
    float world_scale;    /* upper bound on the world matrix's stretch of a length */
    uint32_t child_count;
    uint32_t loose;       /* child sphere changes since this node's last exact recompute */
    uint32_t pending;     /* update only: changed children the node still waits for */
} rvi_node_aux;

#define RVI_SCENE_ARRAYS 16 /* per-node arrays at most (scene.c lists them; the last,
                               local_linear, only once a node took a matrix) */

typedef struct rvi_scene {
    rvi_pool pool;            /* slot allocation, generations, tag */
    /* hierarchy links (RVI_INDEX_NONE = none) */
    uint32_t *parent;
    uint32_t *first_child;
    uint32_t *next_sibling;
    uint32_t *prev_sibling;   /* circular: the first sibling's is the last sibling */
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
    uint64_t *key;            /* the host's key (rv_node_set_key), or a projection's source
                                 key; 0 when none */
    float (*local_linear)[9]; /* column-major 3 x 3 linear part of a node's local matrix, read
                                 only where RVI_NODE_LOCAL_MATRIX is set; NULL until the first
                                 rv_node_set_local_matrix (a world that never uses it pays
                                 nothing), then grown with the other arrays */
    uint32_t capacity;
    /* scene.c's additions */
    rvi_node_aux *aux;        /* per node, one cache line shared by four fields */
    uint32_t *dirty;          /* slots marked moved / bounds-dirty since the last update
                                 (each at most once: RVI_NODE_LISTED); capacity entries */
    uint32_t dirty_count;
    uint32_t *work;           /* scratch, capacity entries: update's ancestor walk, cull stack */
    uint32_t first_root;
    uint64_t links_changed; /* bumped by every link or unlink of a node (a module can tell that
                               no node was attached, detached, created or destroyed) */
    uint64_t edits;         /* bumped by every change of a node's flags and by every update that
                               recomputed a matrix or a sphere: what the frame's walk keeps
                               about a subtree is trusted only while this and links_changed
                               stay as they were */
    void *blocks[RVI_SCENE_ARRAYS]; /* the allocations behind the line-aligned arrays */
    uint32_t stale_count;     /* live nodes flagged RVI_NODE_STALE */
    uint32_t matrices_recomputed; /* by the last update */
    uint32_t bounds_recomputed;
    bool visiting;            /* a visit callback is running: structural calls are refused */
    bool projection_writes;   /* the render scene is writing a projection-backed node's
                                 transform and bounds (the host's setters are refused) */
    bool prefetchw;           /* the CPU has PREFETCHW (rvi_cpu_has_prefetchw, asked at init) */
} rvi_scene;

rv_result rvi_scene_init(rvi_scene *scene, rvi_heap *heap, uint32_t capacity, uint16_t tag);
void rvi_scene_fini(rvi_scene *scene, rvi_heap *heap);

/* Grows storage so that `extra` more nodes can be created without allocating.
 * All-or-nothing: RV_ERR_OUT_OF_MEMORY / RV_ERR_CAPACITY leave the scene as it was. */
rv_result rvi_scene_reserve(rvi_scene *scene, rvi_heap *heap, uint32_t extra);
/* rvi_scene_reserve's capacity check, changing nothing: RV_ERR_CAPACITY exactly when it
 * would answer that. */
rv_result rvi_scene_check_reserve(const rvi_scene *scene, uint32_t extra);

/* Creates a node under parent_index (RVI_INDEX_NONE: a root). Storage must have room
 * (rvi_scene_reserve). The node is identity, has no geometry, and is marked moved. */
uint32_t rvi_scene_create_reserved(rvi_scene *scene, uint32_t parent_index);

/* Moves child under parent (RVI_INDEX_NONE: makes it a root) without cycle checks; marks
 * the child moved unless keep_world (the caller guarantees the world matrix is unchanged)
 * and the old parent bounds-dirty. Never allocates. */
void rvi_scene_relink(rvi_scene *scene, uint32_t parent, uint32_t child, bool keep_world);

/* Adds the node to the dirty list with these flag bits (RVI_NODE_MOVED and/or
 * RVI_NODE_BOUNDS_DIRTY). Never allocates: the list has one entry per slot. */
static inline void rvi_scene_mark(rvi_scene *s, uint32_t i, uint32_t bits)
{
    if (!(s->flags[i] & RVI_NODE_LISTED)) {
        s->flags[i] |= RVI_NODE_LISTED;
        s->dirty[s->dirty_count++] = i;
    }
    s->flags[i] |= bits;
}

/* Loose-count value that makes the next climb through a node recompute its sphere exactly
 * (aux.loose >= child_count): set on the ancestors of a subtree that stopped being
 * unbounded, so their infinite spheres do not linger. Far from wrapping under loose++. */
#define RVI_LOOSE_FORCE_EXACT 0x40000000u

/* A projection-backed node takes its transform and bounds from its projection: the host's
 * setters are refused (the render scene writes them with projection_writes set). */
static inline rv_result rvi_scene_host_may_move(const rvi_scene *s, uint32_t i)
{
    return (s->flags[i] & RVI_NODE_PROJECTION) && !s->projection_writes ? RV_ERR_BAD_STATE : RV_OK;
}

/* Allocates local_linear at the scene's capacity the first time a node takes a matrix;
 * the scene's growth carries it from then on. Nothing changes on failure. */
rv_result rvi_scene_enable_local_linear(rvi_scene *s, rvi_heap *heap);

/* True when node or a node above it carries one of the flag bits. */
static inline bool rvi_scene_flag_at_or_above(const rvi_scene *s, uint32_t node, uint32_t flag)
{
    for (uint32_t a = node; a != RVI_INDEX_NONE; a = s->parent[a])
        if (s->flags[a] & flag)
            return true;
    return false;
}

static inline void rvi_scene_force_exact_ancestors(rvi_scene *s, uint32_t p)
{
    for (; p != RVI_INDEX_NONE; p = s->parent[p])
        s->aux[p].loose = RVI_LOOSE_FORCE_EXACT;
}

/* Node i's local matrix as 12 floats, column-major (linear part, then translation): the
 * host's matrix (RVI_NODE_LOCAL_MATRIX) or T * R * S, computed as rv_update_world does. */
void rvi_scene_local_affine(const rvi_scene *scene, uint32_t i, float out[12]);

/* The node's own geometry as a world sphere (radius < 0 when it has none; +inf when its
 * world placement is unknown, RVI_NODE_STALE). */
void rvi_scene_geometry_sphere(const rvi_scene *scene, uint32_t i, float out[4]);

/* Recomputes node i's world sphere from its own geometry and its children's current world
 * spheres (pairwise exact merges). */
void rvi_scene_exact_bounds(rvi_scene *scene, uint32_t i);

/* The smallest sphere enclosing spheres a and b (each x, y, z, radius; radius < 0 = empty).
 * Exact for two spheres (radius (d + ra + rb) / 2 when neither holds the other), padded
 * by a few ulps so rounding never leaves either input outside. out may alias a or b. */
void rvi_sphere_merge(const float a[4], const float b[4], float out[4]);

/* True when sphere a encloses sphere b (an empty b is enclosed by anything). */
static inline bool rvi_sphere_contains(const float a[4], const float b[4])
{
    if (b[3] < 0.0f)
        return true;
    if (a[3] < 0.0f)
        return false;
    /* Double: squared float distances past ~1.8e19 overflow to infinity in float, and
     * inf <= inf would claim that a far sphere is enclosed (a wrong cull). */
    double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1], dz = (double)b[2] - a[2];
    double room = (double)a[3] - b[3];
    return room >= 0.0 && dx * dx + dy * dy + dz * dz <= room * room;
}

/* Resolves a public handle to a live slot index (RV_ERR_STALE_HANDLE otherwise). */
static inline rv_result rvi_node_index(const rvi_scene *scene, rv_node node, uint32_t *out_index)
{
    return rvi_pool_resolve(&scene->pool, node.id, out_index);
}
/* The live handle of a slot: rvi_pool_handle inlined for the culling walk, which makes one
 * per visible node (layout of core/pool.h: tag << 48 | generation << 24 | index; a test
 * pins the two to each other). */
static inline rv_node rvi_node_handle_of(uint16_t tag, const uint32_t *generation, uint32_t index)
{
    rv_node n = { ((uint64_t)tag << 48) | ((uint64_t)(generation[index] & RVI_POOL_MAX_GENERATION) << 24) | index };
    return n;
}

/* rvi_node_handle_of with the scene's pool (a walk that hands out many nodes keeps the tag
 * and the generation array in locals: they do not change while it runs). */
static inline rv_node rvi_node_handle(const rvi_scene *scene, uint32_t index)
{
    return rvi_node_handle_of(scene->pool.tag, scene->pool.generation, index);
}

#endif
