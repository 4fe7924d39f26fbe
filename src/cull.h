/* The hierarchy walk (cull.c; its run kernels in cull_simd.c, its box tests in cull_box.c),
 * one for every caller: rv_visit_visible and rv_collect_visible, the frame's main view
 * (frame_walk.c, on the host's workers too) and extra views (frame_views.c). What differs between them is passed as data: an
 * rvi_walk_policy says which tests run and which nodes go to the caller's hooks. Spatial
 * grouping (group.c) shares this header.
 *
 * Order: depth first, parents before children, children in attach order (pre-order). A
 * node's world sphere encloses its subtree, so a sphere outside one plane prunes the subtree
 * in one test; a sphere wholly inside a plane clears that plane from the mask its children
 * inherit (plane masking, Assarsson & Moller 2000): a subtree inside every plane is walked
 * with no test at all. */
#ifndef RVI_CULL_H
#define RVI_CULL_H

#include <stdatomic.h>
#include <stdint.h>

#include "rvis.h"
#include "scene.h"
#include "core/node_table.h"

/* What a node hook tells the walk. */
typedef enum rvi_walk_action {
    RVI_WALK_SKIP = 0,  /* nothing below this node */
    RVI_WALK_DESCEND,   /* walk its children, with the node's mask and the weight the hook left */
    RVI_WALK_STOP,      /* end the walk here */
    RVI_WALK_YIELD      /* (walk calls only) the budget ran out: what was not walked went to defer */
} rvi_walk_action;

/* What the walk keeps about a subtree for later frames (rvi_walk_summaries): the smallest
 * LOD cutoff of the geometry in it and its largest world radius, enough to drop it whole
 * when every piece of it would stay at "nothing" (rvi_walk_cut) from where the eye is. */
typedef struct rvi_walk_summary {
    float k;          /* smallest cutoff (+inf: no geometry) */
    float r;          /* largest radius */
    uint32_t version; /* valid while it equals rvi_walk_summaries.version */
} rvi_walk_summary;

/* Leaf slots per block, a power of two, and blocks per group (a second level, so a long
 * list of leaves far from the view is passed over a group at a time). 16 leaves measured
 * best on the crate field (32 and 64 read more leaves near the view). */
#define RVI_WALK_BLOCK_SHIFT 4u
#define RVI_WALK_BLOCK (1u << RVI_WALK_BLOCK_SHIFT)
#define RVI_WALK_GROUP_SHIFT 8u
#define RVI_WALK_GROUP (1u << RVI_WALK_GROUP_SHIFT)

/* The same for an aligned block of RVI_WALK_BLOCK leaf slots walked as one run (siblings
 * linked in slot order), or a group of such blocks each linked to the next: a sphere and a
 * box around them. One the frustum misses (by its sphere, or by its box: a row of leaves is
 * long and thin), or whose pieces all stay at "nothing" from the eye (by its box), is passed
 * over unread. */
typedef struct rvi_walk_block {
    float sphere[4];
    float lo[3], hi[3];
    float k, r;
    uint32_t lod_ok;  /* k and r hold (every geometry leaf rests at "nothing") */
    uint32_t after;   /* the sibling after its last leaf (RVI_INDEX_NONE: none) */
} rvi_walk_block;

/* A box, lo > hi on an axis when empty. */
typedef struct rvi_walk_box {
    float lo[3], hi[3];
} rvi_walk_box;

/* Summaries of a walk that may drop what they describe: valid only while nothing they read
 * changed (the owner bumps version when the scene's links, flags or bounds changed; a
 * summary of a node whose LOD cutoff drops is cleared by rvi_walk_forget). Written by the
 * walk that walked the subtree or block whole, within one call. */
typedef struct rvi_walk_summaries {
    rvi_walk_summary *node;   /* per slot */
    rvi_walk_block *block;    /* per RVI_WALK_BLOCK slots */
    rvi_walk_block *group;    /* per RVI_WALK_GROUP slots */
    /* Each block's and group's summary is valid while its version here equals version.
     * Apart from the summaries: a level whose leaves are not rows of slots (a grouped
     * hierarchy's) asks at every aligned slot and keeps none, and a dense array answers
     * from a few lines where the summaries would cost a miss each. */
    uint32_t *block_version;
    uint32_t *group_version;
    uint32_t capacity;        /* slots covered (a multiple of RVI_WALK_GROUP) */
    uint32_t version;         /* current, >= 1 */
    /* Per block and per group, valid with its summary: the box around the spheres of the
     * leaves that keep lod_ok at 0 (geometry not resting at "nothing": drawn, fading, or
     * never selected), lo > hi when there are none. A group whose such leaves all lie
     * outside the frustum, and whose other leaves are all cut, is passed over too. */
    rvi_walk_box *block_visit;
    rvi_walk_box *group_visit;
    /* Per group, what the walk saw of it (RVI_WALK_GROUP_* bits), settled after the walk by
     * rvi_walk_settle_groups: a group's blocks may be walked by several jobs at once (its
     * slots split between chunks of a long list, or shared by the children of different
     * parents), so no job writes a group's summary; each marks what it saw, atomically. */
    _Atomic(uint8_t) *group_marks;
} rvi_walk_summaries;

#define RVI_WALK_GROUP_STALE 1u /* a block of it changed: its summary no longer holds */
#define RVI_WALK_GROUP_ENDED 2u /* the walk kept or passed over its last block: try to keep it */

/* After every job of a walk has returned: drops the summaries of the groups marked stale,
 * and keeps those of the groups marked ended whose blocks are all kept and linked in slot
 * order. What the walk leaves is the same whichever jobs ran first. */
void rvi_walk_settle_groups(rvi_walk_summaries *s);

/* Clears the summaries a change of node's LOD state makes wrong: its block's and those of
 * node and every ancestor. */
void rvi_walk_forget(rvi_walk_summaries *s, const rvi_scene *scene, uint32_t node);

/* A summary being gathered for one level of the walk. */
typedef struct rvi_walk_acc {
    float k, r;
    uint32_t ok;
} rvi_walk_acc;

/* What one walk did (added to, never reset, by the walk calls). */
typedef struct rvi_walk_counts {
    uint32_t visited; /* nodes reached (a deferred node is not: it is reached where it is taken up) */
    uint32_t tested;  /* sphere classifications (own-geometry tests included) */
    uint32_t outside; /* subtrees the frustum rejected (sphere or test box) */
    uint32_t empty;   /* subtrees without geometry anywhere (world radius < 0) */
    uint32_t visible; /* nodes handed to the visible hook */
    uint32_t cut;     /* nodes not handed out because of the size cutoff */
    uint32_t summarised; /* subtrees and blocks dropped whole by their summaries */
    uint32_t summarised_visit; /* of those, groups with leaves not at rest ("nothing"), dropped
                                  because those lie outside the frustum and the rest are cut */
} rvi_walk_counts;

typedef struct rvi_walk_policy {
    const rvi_scene *scene;
    const rv_frustum *frustum;
    /* Hooks; user is the walk call's own (the frame passes a worker's context). */
    /* A node with one of hook_flags (or with children, when hook_parents) that passed the
     * frustum is the hook's: it decides everything else about the node (whether it is drawn,
     * whether to descend, with which weight). */
    rvi_walk_action (*node)(void *user, uint32_t node, uint32_t flags, float *weight);
    /* Any other node with geometry that passed every test: false stops the walk. */
    bool (*visible)(void *user, uint32_t node, float weight);
    /* Optional, the same for the lanes of a run (bit j: node first + j), in lane order, when
     * they are all the run leaves to take up: returns how many it handed out (fewer than
     * the bits set: the last one handed out stopped the walk). NULL: visible per node. */
    uint32_t (*visible_run)(void *user, uint32_t first, uint64_t lanes, float weight);
    /* A pruned subtree top (record_culls), or a frustum-pruned node with one of culled_flags. */
    void (*culled)(void *user, uint32_t node, rv_cull_reason reason);
    /* Work handed back, to be walked later with this mask and weight: count 0 is a node with
     * one of defer_flags, untested and uncounted (to be taken up alone, then its children);
     * count >= 1 is count siblings from first with their subtrees (UINT32_MAX: to the end of
     * the list): the children of a node the stack has no room for, or, when the budget runs
     * out, every level's rest, deepest first (so pre-order is kept by the order of the calls). */
    void (*defer)(void *user, uint32_t first, uint32_t count, uint32_t mask, float weight);
    uint32_t hook_flags;
    bool hook_parents;
    /* Budget: with a budget given to the walk call, a visit needs node_cost units (plus the
     * node's child count when it has one of children_cost's flags), and the defer calls of
     * a yield one each. The hooks take what they use from the caller's budget (the same
     * counter). */
    uint32_t node_cost;
    uint32_t children_cost;
    uint32_t culled_flags;
    uint32_t defer_flags;
    bool record_culls;
    bool hidden_prunes;    /* RVI_NODE_HIDDEN prunes the subtree (else the node is only not handed out) */
    bool own_geometry;     /* a node with children is handed out only when its own geometry's
                              sphere meets the frustum too */
    /* Nodes with one of pad_flags are tested with their radius + pad and never by test box
     * (partition groups: parts near the edge are gated too). */
    uint32_t pad_flags;
    float pad;
    /* Test boxes (rvi_node_box records, local space): a sphere straddling a plane is culled
     * when the node's test box lies wholly outside. NULL: spheres only. */
    const rvi_node_table *test_boxes;
    /* The size cutoff, for the main view's LOD: a node flagged RVI_NODE_HAS_LOD with
     * cutoff_sq[node] > 0 (node < cutoff_count) is not handed out when its world sphere
     * satisfies r^2 < d^2 * cutoff_sq[node], d its centre's distance from eye. NULL: none. */
    const float *cutoff_sq;
    uint32_t cutoff_count;
    float eye[3];
    /* Summaries to drop subtrees and blocks by (and to keep up to date): NULL, none. */
    rvi_walk_summaries *summaries;
} rvi_walk_policy;

/* The walk's stack: one entry per level below the walk's start (node | mask << 24 of the
 * level's current sibling) and, when weights is not NULL, the weight the level inherited.
 * A level that does not fit is deferred (policy.defer) or, without a defer hook, makes the
 * walk answer RVI_WALK_STOP with *overflow set. */
typedef struct rvi_walk_stack {
    uint32_t *entries;
    float *weights;
    rvi_walk_acc *acc;  /* with summaries: each level's gathering summary */
    uint32_t capacity;
    bool overflowed;   /* set when a level found no room */
} rvi_walk_stack;

/* Walks count siblings from first (count UINT32_MAX: to the end of its sibling list), each
 * with its subtree, entering with mask and weight. budget: NULL, or units left (see
 * node_cost; read before each visit, decreased by the hooks). RVI_WALK_STOP when a hook
 * stopped it (or the stack overflowed without a defer hook), RVI_WALK_YIELD when the budget
 * ran out (the rest went to defer), else RVI_WALK_DESCEND. */
rvi_walk_action rvi_walk_siblings(const rvi_walk_policy *p, void *user, rvi_walk_stack *stack, uint32_t first,
                                  uint32_t count, uint32_t mask, float weight, const uint32_t *budget,
                                  rvi_walk_counts *counts);

/* For node i, reached by a walk (its subtree's sphere meets f, straddling the planes of
 * mask): true when its own geometry's sphere meets f too; always for a leaf (its sphere is
 * its geometry's) or an empty mask. A node with children is drawn only then, in every view. */
bool rvi_walk_own_geometry_in_view(const rvi_scene *sc, const rv_frustum *f, uint32_t i, uint32_t mask);

/* One node without its subtree (a deferred node, the frame's serial top): the tests and
 * hooks rvi_walk_siblings runs on it. RVI_WALK_DESCEND: its children are to be walked with
 * *mask and *weight, as the caller arranges. */
rvi_walk_action rvi_walk_node(const rvi_walk_policy *p, void *user, uint32_t node, uint32_t *mask, float *weight,
                              rvi_walk_counts *counts);

/* A run of leaves (cull_simd.c): consecutive slots, linked in order, without children or a
 * flag that needs the full visit, classified in one pass. */
#define RVI_WALK_RUN_MAX 64u
#define RVI_WALK_RUN_MIN 8u

typedef struct rvi_walk_run {
    uint32_t n;            /* lanes in the run (the rest of *out is set only from RUN_MIN on) */
    rvi_walk_acc acc;      /* the run's summary (ok: every geometry lane rests at "nothing") */
    float lo[3], hi[3];    /* box around the lanes' spheres */
    rvi_walk_box visit;    /* box around the spheres of the geometry lanes not resting at
                              "nothing" (those that make acc.ok 0); empty when none */
    bool bound_ok;         /* every lane's sphere is finite */
    uint64_t outside;      /* bit j: lane j's sphere is outside a plane of the mask */
    uint64_t visit_lane;   /* lanes the walk must still take up (visit_lane: a box to try,
                              a node to draw, a record to write) */
    uint64_t visit_whole;  /* lanes only visit() can decide (an empty, NaN or infinite sphere) */
    uint64_t hand_out;     /* lanes of visit_lane that are only to be handed out (visible:
                              geometry, no plane or box left to try, not cut) */
    uint32_t settled;      /* lanes in neither: outside, cut, or not drawn; counted here */
    uint32_t n_outside, n_cut;
} rvi_walk_run;

/* The run starting at slot first (a leaf of the level being walked), at most limit lanes,
 * entered with the plane mask in_mask. vector: the code path, an rvi_simd_level the CPU
 * runs (AVX-512 and AVX2 have kernels of their own; any other level runs plain C). */
void rvi_walk_classify_run(const rvi_walk_policy *p, int vector, uint32_t in_mask, uint32_t first, uint32_t limit,
                           rvi_walk_run *out);

/* World AABB of a local box under an affine matrix (Arvo 1990). */
void rvi_box_to_world(const float m[16], const float mn[3], const float mx[3], float out_min[3], float out_max[3]);

/* True when the node's test box (policy.test_boxes) lies wholly outside the frustum. */
bool rvi_walk_test_box_outside(const rvi_walk_policy *p, uint32_t node);

/* True when every sphere inside the box lo..hi (a summary's box, around its leaves'
 * spheres) is outside a plane of in_mask by rvi_outside_plane's float test: the summary is
 * then passed over as its sphere would be (cull_box.c). */
bool rvi_walk_box_outside(const rv_frustum *frustum, const float lo[3], const float hi[3], uint32_t in_mask);

/* True when the size cutoff drops the node (see rvi_walk_policy.cutoff_sq). */
static inline bool rvi_walk_cut(const rvi_walk_policy *p, uint32_t node, const float *sphere)
{
    if (node >= p->cutoff_count)
        return false;
    float k = p->cutoff_sq[node];
    if (!(k > 0.0f))
        return false;
    float dx = sphere[0] - p->eye[0], dy = sphere[1] - p->eye[1], dz = sphere[2] - p->eye[2];
    float d2 = dx * dx + dy * dy + dz * dz, r2 = sphere[3] * sphere[3];
    /* A d^2 that left the float range says nothing about the angle. */
    return r2 < d2 * k && d2 <= 3.4e38f;
}

/* A node's test box, local space; first: its slot. The frame's occlusion tests keep the
 * volume of its world image (the frame's box_world_volume) with the scene's edits it was
 * made at: no matrix changes while those stay as they were. volume_edits is UINT64_MAX
 * while none is kept. */
typedef struct rvi_node_box {
    uint32_t node;
    float min[3];
    float max[3];
    float world_volume;
    uint64_t volume_edits;
} rvi_node_box;

#endif
