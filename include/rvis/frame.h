/* rvis/frame.h — The world and rv_frame: every stage in one call, borrowed frame views.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_FRAME_H
#define RVIS_FRAME_H

#include "core.h"
#include "frustum.h"
#include "scene.h"
#include "cull.h"
#include "occlusion.h"
#include "lod.h"
#include "partition.h"
#include "streaming.h"
#include "journal.h"

#ifdef __cplusplus
extern "C" {
#endif
/* ---- the host's job system --------------------------------------------------------------- */

/* The most workers a job system may declare (rv_job_system.max_workers). */
#define RV_MAX_WORKERS 64

/* One job of a parallel-for: items [begin, end) of the call's count (begin < end <= count),
 * run on worker (0 <= worker < rv_job_system.max_workers). context is rvis's. */
typedef void (*rv_job_fn)(void *context, uint32_t worker, uint32_t begin, uint32_t end);

/* The host's parallel-for, through which a frame spreads its work over the host's threads
 * (any fork-join pool: Unity's jobs, Unreal's task graph, Filament's JobSystem, enkiTS).
 *
 * parallel_for(user, job, context, count, grain) must call job(context, worker, begin, end)
 * on non-empty ranges that together cover [0, count) exactly once, and return only when
 * every one of those calls has returned, their writes visible to the calling thread (a
 * join through a lock, a condition variable or an acquire/release atomic gives that).
 * grain (>= 1) is the range size rvis suggests; any other split is allowed: ranges may be
 * larger or smaller, run in any order, on any threads, all on the calling thread. worker
 * names the thread running a range: ranges that may run at the same time must get
 * different workers, each below max_workers (a worker may run many ranges one after the
 * other; the calling thread may run ranges as any worker). count is at least 1.
 *
 * rvis calls parallel_for only from inside a frame call (rv_frame, rv_frame_cull), on the
 * thread that made it, never from inside a job, and a job calls back into nothing but
 * rvis's own code (no host callback runs inside a job: not the allocator, the clock nor a
 * partition callback). The frame view is the same, to the last bit, whatever the worker
 * count, the split or the order of the ranges (rv_frame_view_digest checks the lists, keys,
 * levels and fades; the matrices and depths are copied and computed alike from the same
 * transforms), and a steady frame allocates nothing with workers either: per-worker
 * scratch is the world's, indexed by worker and grown with the scene like the rest of the
 * frame's scratch.
 *
 * A job system that breaks this contract (a worker index at or above max_workers, ranges
 * that miss or repeat items, an empty range or one beyond count, even beside ranges that
 * cover every item once, a range run as a worker that is running another at that moment)
 * is detected, never followed out of bounds: the frame call answers RV_ERR_INVARIANT and
 * its frame must be aborted (rv_frame aborts it). Two ranges that share a worker without
 * overlapping in time break nothing, and are not reported.
 *
 * Zero (parallel_for NULL): every stage runs on the calling thread, exactly as with a job
 * system that runs every range there. */
typedef struct rv_job_system {
    void (*parallel_for)(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain);
    void *user;            /* passed to parallel_for */
    uint32_t max_workers;  /* the most workers that may run ranges at the same time, 1 ..
                              RV_MAX_WORKERS; 0 = 1. Per-worker scratch is kept for each */
} rv_job_system;

/* Everything a world is made from. rv_world_desc desc = {0}; is valid. */
typedef struct rv_world_desc {
    rv_allocator allocator;        /* every allocation of the world and its modules */
    uint32_t node_capacity;        /* initial node slots; 0 = default 1024, at most 2^24
                                      (RV_ERR_INVALID_ARG above). Grows as needed, to 2^24 */
    rv_occlusion_desc occlusion;   /* main-view occlusion buffer; width 0 = off. Each frame
                                      it is width x round(width * viewport height / viewport width)
                                      texels, the height held within 1..RV_OCCLUSION_MAX_SIZE
                                      (a viewport taller or wider than that gets texels
                                      that are not square, never an error). Change it
                                      between frames with rv_world_set_occlusion */
    rv_lod_desc lod;
    rv_partition_desc partition;
    rv_residency_desc residency;
    /* Optional monotonic clock in nanoseconds for per-stage frame times; NULL = no times. */
    uint64_t (*clock_ns)(void *user);
    void *clock_user;
    /* true: every frame view also lists why each pruned subtree was not drawn
     * (rv_frame_view.culls), for verification tools; costs a little per pruned subtree,
     * and a frame that prunes more subtrees than any before grows the list once. */
    bool record_culls;
    /* The host's parallel-for (see rv_job_system); zero = everything on the calling thread. */
    rv_job_system jobs;
    /* Frames between occlusion tests of a subtree (a node with children) that its last test
     * found visible; in between the walk enters it as if the test had passed (the node's
     * own geometry is drawn untested, as then) and the nodes below are tested one by one,
     * so a skipped test never hides anything (temporal coherence, as in CHC++:
     * Mattausch, Bittner, Wimmer, "CHC++: Coherent Hierarchical Culling Revisited", 2008).
     * A subtree the last test hid is tested every frame. Each subtree has its own phase, so
     * the tests spread over the frames. 0 = default 4; 1 = every subtree every frame;
     * at most RV_MAX_GROUP_RETEST_FRAMES, else RV_ERR_INVALID_ARG. */
    uint32_t group_retest_frames;
} rv_world_desc;

#define RV_MAX_GROUP_RETEST_FRAMES 64u

/* Creates a world. desc may be NULL (all defaults). *out_world receives the world, owned by
 * the caller until rv_world_destroy. The module descs are checked as their own create calls
 * check them. Errors: RV_ERR_INVALID_ARG (out_world NULL, a desc field out of range),
 * RV_ERR_NOT_FINITE, RV_ERR_ORDER and RV_ERR_CAPACITY (as rv_residency_create; also when
 * 65,535 worlds are alive in the process, each holding one of the handle tags of
 * include/rvis/scene.h), RV_ERR_OUT_OF_MEMORY; *out_world untouched on error. */
RV_API rv_result rv_world_create(const rv_world_desc *desc, rv_world **out_world);

/* Destroys a world and everything it owns; every handle and borrowed view of it becomes
 * invalid, and its extra views' lists stop culling (the host still destroys them). NULL is
 * ignored; a world destroyed twice is undefined behaviour, as free is. */
RV_API void rv_world_destroy(rv_world *world);

/* The world's allocation counters (every module's allocations included). */
RV_API rv_alloc_stats rv_world_alloc_stats(const rv_world *world);


/* ---- the frame (docs/design.md §8) -------------------------------------------------------- */

/* The camera of one frame. Give either view + projection (both float[16], column-major), or
 * view_projection (float[16]) + eye (float[3]) with view and projection NULL. All pointers
 * are read during the call only. */
typedef struct rv_view {
    const float *view;            /* world -> view matrix: affine (last row 0 0 0 1 to
                                     within 1e-5, as a float inverse of the camera's
                                     matrix leaves it; else RV_ERR_INVALID_ARG); rigid
                                     (a rotation, mirrored or not, and a translation), or
                                     scaled too (a view in other units than the world's,
                                     with its projection to match: the same camera).
                                     The eye is taken from it: -R^T t in float when its
                                     3 x 3 part R is orthonormal to 1e-4, else -A^-1 t in
                                     double; LOD, view depths and streaming measure from
                                     that eye, the frustum and occlusion use P * V in
                                     double. Far from the origin a host's own reference
                                     eye may differ from it by the view's rounding */
    const float *projection;      /* view -> clip matrix */
    const float *view_projection; /* world -> clip; used when view/projection are NULL */
    const float *eye;             /* world position, required with view_projection */
    rv_clip clip;                 /* the projection's depth convention */
    uint32_t viewport_width;      /* pixels, > 0 */
    uint32_t viewport_height;     /* pixels, > 0 */
    float fov_y;                  /* vertical field of view, radians, in [0, pi) (NaN or
                                     infinite: RV_ERR_NOT_FINITE; else outside:
                                     RV_ERR_INVALID_ARG); 0 = read from the projection
                                     (perspective), or 60 degrees for ortho */
    double time_ms;               /* host time in milliseconds; must not go backwards;
                                     within +-2^53 (about 285,000 years, where a double
                                     still counts every millisecond; else
                                     RV_ERR_INVALID_ARG) */
    /* Small-feature culling made exact (Real-Time Rendering's "detail culling" with a
     * threshold of no sample at all). true: the host rasterises this view with one sample
     * per pixel at the pixel's centre (no MSAA; with temporal jitter, give this frame's
     * jittered projection) into a target of viewport_width x viewport_height pixels. A
     * candidate whose box's image, grown by RV_UNSAMPLED_MARGIN_PX, holds no pixel centre
     * of the viewport then covers no sample whatever the fill rule, and is culled as
     * unsampled (RV_CULL_UNSAMPLED, counts.unsampled_culled). The box is the node's
     * occlusion test box when it has one, else the box around its geometry's world
     * sphere. Only candidates whose sphere's image spans at most about RV_UNSAMPLED_MAX_PX
     * pixels (read from the matrices, not fov_y) are looked at, and never one whose box
     * reaches behind the eye. The main view and rv_cull_view's views alike (a shadow map's
     * texels are its pixels). With rv_occlusion_desc.fine_tests 2, the main view's
     * occlusion tests then also judge a texel at the pixel centres in it (docs/occlusion.md,
     * "At pixel centres"). It hides nothing that draws a pixel of this view; an
     * object's effects beyond its own pixels (a shadow it casts, a light it carries) are
     * the host's to keep. false = off (default). */
    bool cull_unsampled;
    /* The camera LOD and HLOD are chosen for. NULL (default): this view's own. Else that
     * view's (its eye, lens and viewport height; its time_ms, cull_unsampled and lod_camera
     * are ignored): give a shadow view the main view, so each caster casts at the level
     * the camera sees it at, not one picked from the light's side (an orthographic shadow
     * view would otherwise drop small casters as too small to see). An extra view with a
     * lod_camera lists each node at the level the node's LOD state holds from its latest
     * selection in rv_frame, as long as that camera's hysteresis would keep it there (the
     * selector's rule: a fade the latest frame ran keeps its two levels whatever the camera
     * wants), else at the level its apparent size picks; it touches no state and
     * lists one level whole. So with the main view as lod_camera, a caster casts at the
     * level the main view draws; while a crossfade runs there, at the heavier of its two
     * levels (the outgoing one until half way), and at the drawn one when the other is
     * "nothing", so a caster fading in or out casts while it is seen (not on a fade in's
     * first frame, which draws it with weight 0, and lists nothing). Culled between
     * rv_frame_begin and rv_frame_cull, it judges from the selection that frame's LOD pass
     * is about to make (the state's next step), so it lists what the main view of the same
     * frame draws. Not for a node no frame has selected yet. Read during the call
     * only; checked as a view (RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE). */
    const struct rv_view *lod_camera;
} rv_view;

/* Margin, in pixels, around a box's image when rv_view.cull_unsampled looks for a pixel
 * centre in it (at least this far in every direction: each edge of the image moves out by
 * it). A rasteriser snapping vertices to its subpixel grid moves an edge by at most 1/32
 * pixel at the coarsest grid Vulkan allows (1/16 pixel; Direct3D's is 1/256); the margin
 * is twice that, the other half for the float rounding of the host's transforms. */
#define RV_UNSAMPLED_MARGIN_PX 0.0625
/* Candidates whose world sphere's image spans more pixels than this are not tested for
 * rv_view.cull_unsampled (a filter on cost; they are drawn as without it). */
#define RV_UNSAMPLED_MAX_PX 64.0

/* Stages of a frame, for per-stage times (rv_frame_view.stage_us). */
typedef enum rv_frame_stage {
    RV_STAGE_TRANSFORMS = 0, /* rv_update_world */
    RV_STAGE_JOURNAL,        /* draining the journal into the render scene */
    RV_STAGE_FRUSTUM,        /* the hierarchical walk (less what is timed below; with a job
                                system, the group tests and HLOD decisions made on workers) */
    RV_STAGE_PARTITION,      /* partition gating and flushing */
    RV_STAGE_OCCLUSION,      /* occluder rasterisation, group tests, the objects' test pass
                                (with rv_view.cull_unsampled, its test too) */
    RV_STAGE_LOD,            /* HLOD decisions, the LOD pass, writing the draw items */
    RV_STAGE_STREAMING,      /* grid updates and residency */
    RV_STAGE_PUBLISH,        /* sorting the draw lists and publishing the frame view */
    RV_STAGE_FEED,           /* rv_frame_feed_depth: decoding and reprojecting the depth feed
                                (its merge into the buffer at the cull counts in occlusion) */
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
    uint32_t occlusion_tested;   /* occlusion tests (groups and objects); 0 in a frame whose
                                    buffer can hide nothing (no occluder drawn, no feed) */
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
    uint32_t unsampled_culled;   /* objects whose box's image holds no pixel centre
                                    (rv_view.cull_unsampled) */
} rv_frame_counts;

/* One thing to draw. During a LOD crossfade a node appears twice (two levels) with fade
 * weights summing to 1, from the fade's second frame: on its first the incoming level's
 * weight is 0 (rv_lod_selection), so the node is listed once, at the outgoing level,
 * with fade 1. During an HLOD crossfade a region and its children are listed, their
 * fades summing to 1 along every path from a top region down to a leaf. A region that also
 * crossfades its LOD levels is listed twice with fades summing to its HLOD weight (each is
 * the product of the two weights, so it may move faster than either). A fade to or from the level past
 * the ladder ("nothing") lists the node once, at its drawn level, with the weight that
 * level has (below 1): the other side draws nothing. Draw such an item blended or
 * dithered by fade, as the two items of any crossfade. */
typedef struct rv_draw_item {
    rv_node node;
    uint64_t key;             /* the host's key of the node (rv_node_set_key; 0 until set), or
                                 a projection-backed node's journal source key */
    uint32_t lod_level;       /* 0 = finest; 0 for nodes without a ladder */
    float fade;               /* weight in (0, 1]; 1 when not fading */
    float view_depth;         /* distance along the view direction of the centre of the
                                 node's own geometry (its rv_node_set_bounds sphere in the
                                 world, not the sphere around its children too) */
    float world_matrix[16];   /* column-major, as of this frame's transform update */
} rv_draw_item;

/* Why a subtree was not drawn (rv_frame_view.culls, with desc.record_culls). */
typedef enum rv_cull_reason {
    RV_CULL_FRUSTUM = 1,      /* its world sphere is outside the frustum (a node with children:
                                 its own geometry's sphere; its children are walked) */
    RV_CULL_OCCLUSION,        /* hidden by occluders (a group prunes its whole subtree) */
    RV_CULL_PARTITION,        /* a part hidden by the partition gate (padded frustum or committed
                                 slice). An inactive deferred part is not culled: its first
                                 sight requests its activation, and it is drawn like any part */
    RV_CULL_LOD_NOTHING,      /* its LOD level is past the ladder: draw nothing (node only) */
    RV_CULL_HLOD_REPLACED,    /* a child of an HLOD region drawn as itself: the region stands in */
    RV_CULL_HIDDEN,           /* flagged hidden (RV_NODE_FLAG_HIDDEN, or a hidden projection) */
    RV_CULL_UNSAMPLED         /* its box's image holds no pixel centre (rv_view.cull_unsampled;
                                 node only) */
} rv_cull_reason;

/* One pruned subtree: node and everything below it were not drawn, for reason. */
typedef struct rv_cull_record {
    rv_node node;
    rv_cull_reason reason;
} rv_cull_record;

/* The borrowed product of one frame: valid until the world builds the next-but-one frame
 * (two arenas alternate), until rv_world_destroy, or until rv_frame_abort reuses its arena —
 * rv_frame_view_is_valid tells. An extra view (rv_cull_view, arena 2) lives in its list
 * instead, until the next rv_cull_view with that list succeeds (one that fails leaves it as
 * it was); rv_frame_view_is_valid answers false for it. Every pointer points into the
 * world's arenas: never free, never keep past validity. */
typedef struct rv_frame_view {
    uint64_t generation;      /* of the arena this view lives in; for an extra view
                                 (rv_cull_view), the list's culls so far, 1 for its first
                                 (a call that failed is not counted) */
    uint64_t frame_sequence;  /* 1 for the first published frame; for an extra view, as
                                 generation */
    uint32_t arena;           /* which of the world's two arenas (0 or 1); 2 for an extra
                                 view, which lives in its rv_view_list */
    const rv_draw_item *opaque;        /* front to back (view_depth ascending) */
    uint32_t opaque_count;
    const rv_draw_item *translucent;   /* far to near, stable for equal depths */
    uint32_t translucent_count;
    const rv_partition_request *resync_requests; /* flushed this frame */
    uint32_t resync_request_count;
    const rv_page_request *page_requests;       /* loads to start, nearest first */
    uint32_t page_request_count;
    const rv_page_eviction *page_evictions;     /* pages to free, before placing this view's
                                                   requests: they make room for them */
    uint32_t page_eviction_count;
    const rv_node *hlod_load_requests; /* regions whose children should load next, most urgent
                                          first as rv_hlod_select orders its loads (largest
                                          screen-space error of the region that wants to
                                          refine, then nearest, then lowest node id), each
                                          once, whatever the job system (rv_hlod_children
                                          names the children) */
    uint32_t hlod_load_request_count;
    const rv_cull_record *culls;       /* with desc.record_culls: every pruned subtree top */
    uint32_t cull_count;
    rv_tick_demand tick;               /* what an on-demand loop must do next */
    rv_frame_counts counts;
    double stage_us[RV_STAGE_COUNT];   /* microseconds per stage; -1 without desc.clock_ns */
    rv_frustum frustum;                /* the frustum this view was culled with (extracted from
                                          the view-projection in double): cull what rvis does
                                          not hold by the same planes, e.g. instance batches
                                          with rv_cull_spheres */
} rv_frame_view;

/* Frame calls (rv_frame_begin, rv_frame_add_occluder, rv_frame_add_convex,
 * rv_frame_add_mesh, rv_frame_feed_depth, rv_frame_cull, rv_frame_end, rv_frame_abort,
 * rv_frame) run host code: the partition callbacks (request_reprocess,
 * is_update_in_progress), the clock and the allocator. A frame call made from such a
 * callback is refused with RV_ERR_BAD_STATE and changes nothing; the frame call that ran
 * the callback goes on. So is
 * a frame call from the delta observer of a render scene bound to the world while the host
 * drains it (rv_render_scene_apply outside a frame): its view would show half a tick.
 * The host's parallel_for (rv_job_system) is host code too: while it runs, a frame call is
 * refused with RV_ERR_BAD_STATE, and so are the structural calls a visit refuses
 * (rv_node_create, rv_node_destroy_subtree, rv_node_destroy_reroot, rv_node_attach,
 * rv_node_detach, rv_update_world, rv_group_spatially, registering projections); it should
 * run the jobs it was given and nothing else of rvis's.
 * Other calls on the world from such a callback are not checked and must not be made:
 * creating, moving or destroying nodes changes what the running call is walking,
 * rv_world_destroy frees the memory it is using, and rv_partition_begin_frame,
 * rv_residency_begin_frame or rv_lod_advance from the clock or the allocator during
 * rv_frame_begin would change states the begin has already checked. */

/* Starts a frame: validates the view, opens the occlusion buffer for the view, drains the
 * world's journal into its render scene, updates world transforms (rv_update_world) and
 * begins the residency's frame. The arena this frame is built in is the one the last
 * published view does not live in, so that view stays valid while this one is built.
 * A transform that cannot be composed (a bad in-place write, a product overflowing float)
 * does not stop the frame: the node keeps its previous matrix and counts.transform_errors
 * says so in the frame where it happens. From that frame until a transform of the node
 * composes again, the node and its subtree are counted in counts.transform_stale in every
 * frame and are not culled by frustum, occlusion or LOD (their world bounds are unbounded,
 * see rv_update_world; an occluder node among them hides nothing; a laddered one is drawn
 * whole at its finest allowed level, without a fade in, and fades from there once placed
 * again); the hidden flag,
 * inactive deferred partition parts and HLOD regions standing in for children that are not
 * resident still apply. The view-projection of the view + projection form is multiplied
 * in double, and the frustum and the occlusion buffer both use that product (a camera far
 * from the origin keeps its far plane, and an occluder centimetres from it its outline);
 * the view_projection form is used as given, so a host passing it should build it in
 * double and take the float rounding of an eye far from the origin into account.
 * Errors (the world is unchanged unless noted): RV_ERR_INVALID_ARG (NULL, zero viewport,
 * neither matrix form given, a fov_y outside [0, pi), a time_ms beyond +-2^53, a view
 * matrix that is not affine,
 * a view whose forward axis has no length in float (a view matrix scaled by 1e-30, say) or
 * whose 3 x 3 part is singular, or, with occlusion on, a projection the occlusion
 * buffer cannot place (rv_occlusion_begin's errors: a field of view near pi, an aspect of
 * 1e-6; without occlusion such a view is culled by its frustum alone)), RV_ERR_NOT_FINITE
 * (a matrix, eye or time is NaN/Inf, or projection times view overflows float; a finite
 * view far out, a translation of 1e30 say, is taken and culled as given),
 * RV_ERR_BAD_STATE (a frame is already open: end or abort it; a partition frame the host
 * opened with rv_partition_begin_frame is still open; called from a callback a frame call
 * is running or from a node visit (rv_visit_visible); or another render scene is draining
 * the world's journal), RV_ERR_CAPACITY (the journal's deltas would take the world past
 * its 2^24 nodes or its render scene past 2^30 projections: they stay in the journal),
 * RV_ERR_ORDER (time_ms went backwards, from the last frame's or from the
 * world's residency clock, which the host may have moved with rv_residency_begin_frame),
 * RV_ERR_INVARIANT (the journal could not be drained: most often it is owned by
 * another thread, the one that appends to it; the frame drains it from the calling thread,
 * so claim it back first, see rv_journal_claim_thread), RV_ERR_OUT_OF_MEMORY (storage made
 * before the failure stays; the main view's occlusion buffer may have been opened for the
 * new view or dropped, and then answers visible until the next frame; nothing else
 * changes). Every check that can refuse is made before anything changes, so no other
 * refusal drains the journal, updates a transform, moves the LOD or residency clock or
 * touches the published frame's buffer. */
RV_API rv_result rv_frame_begin(rv_world *world, const rv_view *view);

/* Adds an occluder for this frame only: a local box (min <= max, float[3] each) under matrix
 * (float[16], column-major, affine; NULL = identity), between rv_frame_begin and
 * rv_frame_cull. With occlusion off (desc.occlusion.width 0) a call in that window does
 * nothing and returns RV_OK (only NULL and the frame's state are checked: outside the
 * window it is RV_ERR_BAD_STATE either way).
 * Declare only what really hides (docs/design.md §4). Errors: RV_ERR_INVALID_ARG (inverted box,
 * non-affine matrix), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no frame open, after the cull, a
 * failed one included, or from a callback a frame call is running). */
RV_API rv_result rv_frame_add_occluder(rv_world *world, const float min[3], const float max[3],
                                       const float matrix[16]);
/* Adds a convex occluder (rv_occluder_convex: planes with outward normals, copied) or a mesh
 * occluder (rv_occluder_mesh: indexed triangles, copied) under matrix for this frame only;
 * as rv_frame_add_occluder, and as rv_occlusion_add_convex / rv_occlusion_add_mesh for what
 * they mean and the errors of the shape (RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE,
 * RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY), besides RV_ERR_BAD_STATE. With occlusion off, a
 * no-op returning RV_OK in the frame's window (nothing is checked but NULL and the state). */
RV_API rv_result rv_frame_add_convex(rv_world *world, const rv_occluder_convex *convex, const float matrix[16]);
/* The mesh form of rv_frame_add_convex: rv_occluder_mesh's triangles, copied, under matrix
 * for this frame only; meaning and errors as rv_occlusion_add_mesh, besides
 * RV_ERR_BAD_STATE. */
RV_API rv_result rv_frame_add_mesh(rv_world *world, const rv_occluder_mesh *mesh, const float matrix[16]);

/* ---- the depth feed of the main view -------------------------------------------------------- */

/* Hands the world's main-view occlusion buffer a depth image from an earlier frame
 * (rv_occlusion_feed_depth, whose header states what the image must hold and how it is
 * read): between rv_frame_begin and rv_frame_cull, the camera of this frame being the one
 * rv_frame_begin was given. feed->age counts frames before this one (1 = the previous
 * frame's depth, as a read-back arrives); the world's buffer is sized by
 * rv_world_desc.occlusion (feed_max_width and feed_max_height: 0 refuses every feed with
 * RV_ERR_CAPACITY). A feed the buffer ignores (a camera jump, another projection, too old)
 * returns RV_OK and is counted in rv_occlusion_get_feed_stats(rv_world_occlusion(world)).
 * The call's time is reported as stage_us[RV_STAGE_FEED]. With occlusion off
 * (desc.occlusion.width 0), a no-op returning RV_OK in the frame's window once world, feed
 * and age pass the checks below (the feed's other fields are not read; outside the window:
 * RV_ERR_BAD_STATE). Errors (nothing changes): those of
 * rv_occlusion_feed_depth, and RV_ERR_INVALID_ARG (world or feed NULL, age 0: this frame's
 * depth cannot exist before its own cull), RV_ERR_BAD_STATE (no frame open, after the cull,
 * a failed one included, or from a callback a frame call is running). */
RV_API rv_result rv_frame_feed_depth(rv_world *world, const rv_depth_feed *feed);

/* Culls: rasterises the persistent occluder nodes inside the frustum, then walks the
 * hierarchy once — frustum (plane masks inherited), partition gate (a partition group is
 * gated when the walk reaches it), occlusion (group nodes prune their subtree), HLOD (a
 * region drawn as itself stops the walk) — then, for each object the walk reached, selects
 * its LOD level (hysteresis, crossfade), tests against the occluders those that draw
 * something, and lists the visible ones. An object whose level means "nothing" is not
 * occlusion-tested (counted in lod_culled, not occlusion_culled), and an object the
 * occlusion test hid keeps its level up with the view (revealed, it shows the level it
 * should); an object resting at "nothing" that stays there is dropped by the walk without
 * a selection. Objects the walk did not reach (outside the frustum, under a group node the
 * occlusion test hid, under a hidden node or part, below an HLOD region drawn as itself)
 * are not selected meanwhile and keep their last level. When reached again, one resting
 * at "nothing" shows at once, whole, the level it should when the place where it is now
 * was out of sight on the last published frame: its sphere, own geometry or test box
 * outside that frame's frustum, or one of its present ancestors hidden by that frame's
 * occlusion test (an object that came near there unseen, or that moved or was attached
 * into such a place). Otherwise (that place was in view, the object too small to leave
 * "nothing" or unreached for another reason; an object at "nothing" is never
 * occlusion-tested itself, so a wall in front of it alone leaves its place in view) it fades
 * in from nothing: its first frame lists nothing. One at a drawn level crossfades from it.
 * Edits the host makes between rv_frame_begin and the cull: transforms are those
 * rv_frame_begin's update made (a node moved or attached elsewhere since is culled and
 * listed where it stood then; a node made since has no bounds yet and is not listed), and an occluder node made,
 * moved or attached since, or under a node that was, hides nothing in this frame; hidden
 * flags, occluders set, replaced or cleared, bounds cleared (a radius < 0) and destroyed
 * nodes take effect. A host that calls rv_update_world in that window places everything
 * where it now is, for the cull as for the next frame. With a job
 * system (rv_world_desc.jobs) the walk, the occlusion tests, LOD and the draw lists run on
 * the host's workers; the result is the same. Errors: RV_ERR_INVALID_ARG, RV_ERR_BAD_STATE
 * (no frame begun, already culled, a failed cull included, or from a callback a frame call
 * is running; nothing changes), RV_ERR_OUT_OF_MEMORY (the frame stays open for
 * rv_frame_abort alone: the cull changed it before it failed, so a second rv_frame_cull,
 * rv_frame_end, the adds and the feed answer RV_ERR_BAD_STATE and change nothing; abort
 * it, then begin the frame again), RV_ERR_INVARIANT (the job system broke its contract: see
 * rv_job_system; as RV_ERR_OUT_OF_MEMORY, abort the frame). */
RV_API rv_result rv_frame_cull(rv_world *world);

/* Ends the frame: flushes partition resyncs (request_reprocess is called here), updates the
 * streaming grids (the eye is a source of each grid unless its eye_radius is negative, plus
 * rv_world_set_stream_sources), hands out up to desc.residency.requests_per_frame page
 * requests and every eviction (room for those requests included: a host that frees the
 * evictions and then places the requests keeps the residency's budget), combines tick
 * demand, sorts and publishes *out — a borrowed
 * view valid until the frame after next (see rv_frame_view). The view lists what the cull
 * decided: a node the host destroys after rv_frame_cull is still listed, by its now-stale
 * handle (node calls on it answer RV_ERR_STALE_HANDLE); destroy before the cull, or skip it.
 * Errors: RV_ERR_INVALID_ARG, RV_ERR_BAD_STATE (not culled, a cull that failed included,
 * or from a callback a frame call is running), RV_ERR_OUT_OF_MEMORY (room for the view's lists could not be made: it is made
 * before the partition gate and the residency hand anything out, so no resync, page request
 * or eviction is lost; the frame stays open: call rv_frame_end again, or rv_frame_abort),
 * RV_ERR_INVARIANT (deltas were left in the journal at publication: the view is still
 * published and counted). */
RV_API rv_result rv_frame_end(rv_world *world, rv_frame_view *out);

/* Abandons an open frame: nothing is published and its arena is recycled (any view that
 * lived in it was already invalid). The last published view stays valid. What
 * rv_frame_begin did stays done: the journal drained into the render scene, world
 * transforms updated, the LOD and residency clocks advanced to the view's time_ms (so
 * the next frame's time_ms may not be earlier: RV_ERR_ORDER), the partition gate's frame
 * closed (its parts' decisions stand; the resyncs and activations they call for are not
 * flushed: request_reprocess is not called and they wait, as for a busy host, to be listed
 * by the next frame that ends, unless the part leaves the view first: an on-demand loop
 * should run that frame, the abort gives it no tick demand); so does what an
 * aborted cull noted about its subtrees' occlusion tests
 * (rv_world_desc.group_retest_frames: a test it made counts as made, so the next frame's
 * counts may differ from a frame that never aborted; a skipped test never hides anything),
 * and the LOD selections it made (each node's level and crossfade as that cull left them:
 * the next frame continues from there, so its levels and fades, and its view, may differ
 * from a frame after one that was never culled). An HLOD crossfade advances by the time
 * since the last frame when a cull decides its region: a region the aborted cull did not
 * reach loses that frame's step (its fade ends one step later; the weights along each path
 * still sum to 1).
 * RV_OK also when no frame is open. Errors: RV_ERR_INVALID_ARG (world NULL),
 * RV_ERR_BAD_STATE (called from a callback a frame call is running, e.g. request_reprocess:
 * see rv_frame_begin). */
RV_API rv_result rv_frame_abort(rv_world *world);

/* rv_frame_begin, rv_frame_cull and rv_frame_end in one call; on an error the frame it
 * began is aborted and *out is untouched (a frame the host had open already is refused by
 * rv_frame_begin's RV_ERR_BAD_STATE and stays open), except rv_frame_end's RV_ERR_INVARIANT (deltas left in the
 * journal at publication), where the view is published in *out as rv_frame_end says.
 * Errors: those of the three. */
RV_API rv_result rv_frame(rv_world *world, const rv_view *view, rv_frame_view *out);

/* True while view (published by this world's rv_frame_end) may be read: its arena has not
 * been reused since. False for NULL, for another world's view, and for views from
 * rv_cull_view (those stay valid until the next rv_cull_view with their list succeeds; not
 * tracked).
 * A call on the world (it reads the world's arenas, which rv_frame_begin changes): make it
 * on the thread that runs the world's frames. A thread that only reads views (a render
 * thread drawing frame N - 1 while frame N is built) learns from that thread how long a
 * view lasts, as above, rather than asking here. */
RV_API bool rv_frame_view_is_valid(const rv_world *world, const rv_frame_view *view);

/* A 64-bit digest of what the view says to draw (node handles' slot and generation, item
 * keys: the host's rv_node_set_key keys and projection keys, LOD levels, fade weights, list
 * order; not the world matrices nor view depths), for parity checks between runs and
 * between worlds: independent of world tags and addresses. 0 for NULL. */
RV_API uint64_t rv_frame_view_digest(const rv_frame_view *view);

/* Makes node a persistent occluder: a local box (min <= max) under the node's world matrix,
 * rasterised every frame it meets the frustum and the node's own geometry is drawn whole:
 * not in a frame where the node was made, moved or attached after rv_frame_begin (see
 * rv_frame_cull), nor while it or a node above it is hidden or a part the partition gate
 * hides, while its LOD selection lists "nothing" or fades to or from it (held there by
 * hysteresis too), while it is an HLOD region not drawn as itself whole (not resident,
 * refined into its children, crossfading with them), or below a region under which nothing
 * is drawn (not resident, nothing resident below it). What is not drawn, or drawn faint,
 * hides nothing. A region drawn as itself stands in for the nodes below it as a coarser
 * LOD level does for a node: their occluders still hide, so, as an occluder lies within
 * every LOD level of its node, a stand-in must cover at least what the occluders below it
 * cover; while it crossfades with them (weights summing to 1 there, as two LOD levels'
 * do) their occluders hide too, its own does not (rvis-walk's city makes each block of a district's stand-in as tall as the
 * tallest thing on it). A node carries one occluder of any shape:
 * this replaces an earlier box, convex solid or mesh. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE, RV_ERR_OUT_OF_MEMORY; the node keeps its old
 * occluder on error. */
RV_API rv_result rv_node_set_occluder_box(rv_world *world, rv_node node, const float min[3], const float max[3]);
/* Makes node a persistent convex occluder (see rv_occluder_convex), or a persistent mesh
 * occluder (see rv_occluder_mesh), local to the node, under its world matrix; replaces an
 * earlier occluder of any shape. The planes, or positions and indices, are copied into a
 * block the world keeps until the occluder is replaced or cleared or the node destroyed:
 * the host's arrays may change as soon as the call returns. The solid's corners and edges
 * are worked out here, once (so is whether a small closed mesh bounds a convex solid, then
 * kept as that solid): frames only transform them. A frame draws the occluder when
 * its local bounds meet the frustum, without copying it. Errors: as
 * rv_occlusion_add_convex / rv_occlusion_add_mesh for the shape (RV_ERR_INVALID_ARG,
 * RV_ERR_NOT_FINITE, RV_ERR_CAPACITY), RV_ERR_STALE_HANDLE, RV_ERR_OUT_OF_MEMORY; the node
 * keeps its old occluder on error. */
RV_API rv_result rv_node_set_occluder_convex(rv_world *world, rv_node node, const rv_occluder_convex *convex);
/* The mesh form of rv_node_set_occluder_convex: rv_occluder_mesh's positions and indices,
 * copied into the world; errors as rv_occlusion_add_mesh, RV_ERR_STALE_HANDLE,
 * RV_ERR_OUT_OF_MEMORY; the node keeps its old occluder on error. */
RV_API rv_result rv_node_set_occluder_mesh(rv_world *world, rv_node node, const rv_occluder_mesh *mesh);
/* Removes the node's occluder, whatever its shape (RV_OK when it had none); its copy is
 * freed. Errors: RV_ERR_INVALID_ARG, RV_ERR_STALE_HANDLE. */
RV_API rv_result rv_node_clear_occluder(rv_world *world, rv_node node);
/* The same as rv_node_clear_occluder (kept for hosts written when occluders were boxes): it
 * removes an occluder of any shape. */
RV_API rv_result rv_node_clear_occluder_box(rv_world *world, rv_node node);

/* Gives node a local test box besides its bounding sphere (walls and floors are badly
 * served by spheres). Occlusion tests use whichever of the two has the smaller world
 * volume; the frustum test, when the sphere straddles a plane, also tries the box, and the
 * node is culled when either lies wholly outside. Under a rotated world matrix the box is
 * tested as the oriented box it is, not through a world box around it, so a box in the
 * frame of a slanted surface (its normal and one edge) can be much tighter than the
 * world-aligned box of the same geometry. The box must enclose the node's geometry
 * (and, for a group node, its subtree's): rvis trusts it and cannot check it, so a box
 * that does not (a leaf's box kept after children were attached to it, a group's box that
 * did not grow with its members) culls what lies outside it. Set it again, or clear it,
 * when the subtree changes: rv_node_create and rv_node_attach do not touch it. The frame's
 * main view and extra views (rv_cull_view) use it; rv_visit_visible and rv_collect_visible
 * test spheres only.
 * Errors as rv_node_set_occluder_box. */
RV_API rv_result rv_node_set_test_box(rv_world *world, rv_node node, const float min[3], const float max[3]);
/* Removes the node's test box. Errors as rv_node_clear_occluder. */
RV_API rv_result rv_node_clear_test_box(rv_world *world, rv_node node);

/* The world's journal and render scene (created on first call, bound to the world: every
 * live projection is backed by a node). The host appends to the journal; rv_frame_begin
 * drains it. Owned by the world: never destroy them. The first call (this or
 * rv_world_render_scene) makes the calling thread the journal's owner
 * (rv_journal_claim_thread): from then on rv_frame_begin on another thread answers
 * RV_ERR_INVARIANT, pending deltas or not, until that thread claims the journal. Make the
 * first call on the thread that runs the frames. Errors: RV_ERR_INVALID_ARG,
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
 * RV_ERR_CAPACITY (that reach), RV_ERR_DUPLICATE (a grid of the world already has
 * desc->source: pages are told apart by their source), RV_ERR_OUT_OF_MEMORY; nothing
 * changes on error. */
RV_API rv_result rv_world_add_grid(rv_world *world, const rv_grid_desc *desc, rv_grid **out_grid);

/* Sets extra stream sources (copied) used with the eye for every grid from the next
 * rv_frame_end; count 0 clears them. Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE (a
 * position or radius), RV_ERR_CAPACITY (with them, a registered grid's update could examine
 * more than 2^24 cells: see rv_world_add_grid), RV_ERR_OUT_OF_MEMORY; nothing changes on
 * error. */
RV_API rv_result rv_world_set_stream_sources(rv_world *world, const rv_stream_source *sources, uint32_t count);

/* The world's residency (NULL before the first rv_world_add_grid): the host answers the
 * frame view's page requests with rv_residency_place / rv_residency_fail on it. Owned by
 * the world, like its grids: never destroy it (rv_world_destroy does). */
RV_API rv_residency *rv_world_residency(rv_world *world);

/* The main view's occlusion buffer, for stats and debug images (NULL when occlusion is off,
 * and until the first rv_frame_begin with occlusion on: in a world made without occlusion
 * and switched on by rv_world_set_occlusion, until the next frame). Borrowed; owned by the world: the pointer stays valid until
 * rv_world_destroy, across rv_world_set_occlusion too, which rebuilds the same object.
 * From rv_frame_end (or rv_frame) until the next rv_frame_begin it holds that frame's
 * occluders, frozen: the host may test what rvis does not hold against it
 * (rv_occlusion_test_box, _sphere, _boxes, _spheres: an instance batch's clusters,
 * particles). A box with a matrix gets the frame's own test
 * of a node's test box; a sphere is tested through its world box with the finer look at
 * texels the frame keeps for test boxes, so the host may hide a sphere that the frame,
 * testing a node without a test box, draws (never the reverse). From rv_frame_begin until
 * its cull freezes the buffer the frame is still adding occluders: the calls that would
 * freeze it (the tests, rv_occlusion_freeze, rv_occlusion_debug_image with pixels,
 * rv_occlusion_debug_depth_range) answer RV_ERR_BAD_STATE and change nothing (tests answer
 * visible), also from a host callback the frame calls (the allocator, clock_ns). After
 * rv_frame_abort, a cull that failed or a begin that failed for memory, it holds that
 * frame's view and whatever occluders it took, not the published frame's (tests then err
 * toward drawing); a begin refused for any other reason leaves it as it was. The world
 * alone changes it: rv_occlusion_begin, the _add_ calls and rv_occlusion_feed_depth on it
 * answer RV_ERR_BAD_STATE before any other check of their arguments (whatever the width)
 * and change nothing (add through rv_frame_add_* and rv_frame_feed_depth), and
 * rv_occlusion_destroy ignores it. */
RV_API rv_occlusion *rv_world_occlusion(rv_world *world);

/* Changes the main view's occlusion buffer (rv_world_desc.occlusion) without rebuilding the
 * world, as an engine's quality setting does: occlusion off (width 0) or on, another width,
 * fine_tests, fusion, feed capacity or any other field. desc is checked as rv_world_create
 * checks it (NULL: the zero desc, occlusion off; its allocator is ignored, the world's
 * serves) and takes effect at the next rv_frame_begin. A desc that makes the same buffer as
 * the one in force (defaults applied; any two of width 0 are alike) changes nothing.
 * Otherwise:
 *  - The buffer is rebuilt in place: the pointer rv_world_occlusion gave stays valid. Its
 *    storage is freed here (what the new desc needs at creation, the feed's source side, is
 *    made here) and grown by the next rv_frame_begin for the new size, so that frame
 *    allocates as a world's first frame does and the steady frames after it allocate
 *    nothing (where the new desc draws more than the old, the frame after it also grows
 *    the other arena's lists, as any frame that draws more than before does). Until that
 *    begin it holds no frame: tests answer visible, rv_occlusion_debug_image and
 *    rv_occlusion_debug_depth_range answer RV_ERR_BAD_STATE, rv_occlusion_level_count 0.
 *    With width 0, rv_world_occlusion answers NULL, and a pointer the host kept is a buffer
 *    of width 0 (its storage freed, tests visible; still the world's, so the calls that
 *    change a buffer answer RV_ERR_BAD_STATE, see rv_world_occlusion); switched on again,
 *    rv_world_occlusion answers that same pointer.
 *  - The depth feed: nothing of a feed is kept from frame to frame. An image read back
 *    before the change may be fed after it (its size is the host's render target's, not
 *    the buffer's): rv_frame_feed_depth takes it when it fits the new feed_max_width and
 *    feed_max_height, and refuses it with RV_ERR_CAPACITY otherwise, as every feed when the
 *    new desc has no feed capacity (with occlusion off, its no-op RV_OK).
 *  - Stats: published views keep their counts; rv_occlusion_get_stats and
 *    rv_occlusion_get_feed_stats of the buffer are zero until the next frame fills them;
 *    rv_world_alloc_stats goes on counting (the freed storage leaves bytes_live).
 *  - Temporal coherence (rv_world_desc.group_retest_frames): the verdicts of the old buffer
 *    (or of none) are forgotten, so the next frame tests every subtree against the new
 *    buffer: nothing the old one hid stays hidden without a new test, and nothing is
 *    skipped on the old one's word (a skipped test never hides anything in any case). The
 *    tests' phases count frames from the change, so from the next frame on the world culls
 *    as a world created with desc does, given the same scene (its nodes made in the same
 *    order) and the same views: the same lists, but where LOD levels and crossfades, HLOD
 *    fades or the partition gate carry history of their own.
 * Out of memory in the first frame after the change is that frame's RV_ERR_OUT_OF_MEMORY,
 * as rv_frame_begin and rv_frame_cull say (the buffer answers visible until a frame opens
 * it; the desc stays in force and the next frame grows the buffer again).
 * Errors (nothing changes: the buffer in force, its pointer and what it holds stay):
 * RV_ERR_INVALID_ARG (world NULL; a desc field out of range, as rv_occlusion_create says),
 * RV_ERR_NOT_FINITE (as rv_occlusion_create), RV_ERR_BAD_STATE (a frame is open, from
 * rv_frame_begin to rv_frame_end or rv_frame_abort, a failed cull included; or called from
 * a callback a frame call or this call is running: the allocator, clock_ns, the partition
 * callbacks, the job system's parallel_for; from a node visit (rv_visit_visible); from the
 * delta observer of the world's render scene while it drains), RV_ERR_OUT_OF_MEMORY. A
 * call on the world: not while another thread tests its buffer. */
RV_API rv_result rv_world_set_occlusion(rv_world *world, const rv_occlusion_desc *desc);

/* An extra view's own output list (shadow, reflection). Opaque. */
typedef struct rv_view_list rv_view_list;

/* Creates an extra view's list: two arenas, allocated with the world's allocator, used in
 * turn: each rv_cull_view with the list builds in the one its last view does not live in,
 * so a cull that fails leaves the last view valid and unchanged. Owned by the caller until
 * rv_view_list_destroy, before or after rv_world_destroy: a list whose world is destroyed
 * keeps its memory (and its last view) until then, and rv_cull_view refuses it. Errors:
 * RV_ERR_INVALID_ARG, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_view_list_create(rv_world *world, rv_view_list **out_list);
/* Destroys a list (NULL ignored), before or after its world. Views it lent become
 * invalid. While its world lives this is a call on the world (the list's memory goes back
 * through the world's heap and counters): make it on the world's thread. */
RV_API void rv_view_list_destroy(rv_view_list *list);

/* Culls an extra view by frustum (spheres, and test boxes as the main view tests them) and
 * LOD only, and with view->cull_unsampled the unsampled test (no occlusion, no partition
 * gate, no
 * hysteresis or crossfade state touched; HLOD regions refine by screen-space error and
 * residency without fading) into list, and fills *out: opaque and translucent lists,
 * counts and the frustum, and generation, frame_sequence and arena as rv_frame_view says
 * for an extra view; the other fields are empty. Uses the transforms of the last rv_update_world.
 * Valid until the next rv_cull_view with this list succeeds; on any error *out and the
 * list's last view are unchanged (its other arena may have grown). Errors:
 * RV_ERR_INVALID_ARG (as rv_frame_begin's view checks, a time_ms beyond +-2^53 included),
 * RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (a list of another world, or of a destroyed one),
 * RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_cull_view(rv_world *world, const rv_view *view, rv_view_list *list, rv_frame_view *out);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_FRAME_H */
