/* The frame: the only module that knows every other (docs/design.md, "The frame").
 *   frame.c          begin and end: the stages in order, and the public calls
 *   frame_cull.c     the cull stage: the main view's walk hooks, the object passes
 *                    (occlusion, LOD, emit)
 *   frame_walk.c     the main view's walk over the host's workers: work items, their record
 *                    streams, rounds, and the job system's parallel-for with its checks
 *   frame_publish.c  arenas, sort, view validity and digest
 *   frame_nodes.c    what nodes carry for the frame (occluders of any shape, test boxes), and
 *                    the node occluders submitted to each frame's buffer
 *   frame_state.c    the frame state and the world-owned modules, created and destroyed together
 *   frame_views.c    extra views (rv_cull_view) */
#ifndef RVI_FRAME_H
#define RVI_FRAME_H

#include "rvis.h"
#include "world.h"
#include "core/node_table.h"
#include "core/vec.h"
#include "lod.h"
#include "cull.h"
#include "occlusion_shape.h"
#include "occlusion_test.h"

typedef enum rvi_frame_state {
    RVI_FRAME_IDLE = 0,  /* no frame open */
    RVI_FRAME_BEGUN,     /* rv_frame_begin done: occluders may be added */
    RVI_FRAME_CULLED,    /* rv_frame_cull done: only rv_frame_end or abort */
    RVI_FRAME_FAILED     /* rv_frame_cull entered and failed: only abort */
} rvi_frame_phase;

/* Everything one published view points into. */
typedef struct rvi_frame_arena {
    rvi_vec opaque;          /* rv_draw_item */
    rvi_vec translucent;     /* rv_draw_item */
    rvi_vec resync_requests; /* rv_partition_request (parts point into resync_parts) */
    rvi_vec resync_parts;    /* rv_node */
    rvi_vec page_requests;   /* rv_page_request */
    rvi_vec page_evictions;  /* rv_page_eviction */
    rvi_vec hlod_loads;      /* rv_node */
    rvi_vec culls;           /* rv_cull_record (desc.record_culls) */
    uint64_t generation;     /* bumped each time the arena is (re)built */
} rvi_frame_arena;

/* A node's persistent occluder, local space: a box, or a convex solid's or mesh's block
 * (rvi_occ_convex_data or rvi_occ_mesh_data, owned in the world's heap). */
typedef struct rvi_node_occluder {
    uint32_t node;
    uint32_t kind;           /* rvi_occ_kind */
    float min[3], max[3];    /* the box, or the shape's bounds (the frustum test) */
    void *block;             /* NULL for a box */
    size_t block_size;
    uint32_t items;          /* what the occlusion buffer orders: 1, or a mesh's triangles */
    uint32_t vertices;       /* a mesh's vertices */
    /* The world box of min, max under the node's matrix as of scene edits world_edits
     * (world_kept 0: none yet; world_finite 0: a bound not finite, never culled). */
    float world_min[3], world_max[3];
    uint64_t world_edits;
    uint8_t world_kept, world_finite;
} rvi_node_occluder;

/* A walk candidate: a node whose own geometry passed frustum and partition. */
typedef struct rvi_candidate {
    uint32_t node;
    float weight;            /* HLOD crossfade weight inherited from above (1 otherwise) */
    uint32_t tested;         /* already occlusion-tested inline (group nodes) */
} rvi_candidate;

/* A candidate's LOD outcome in the object passes: up to two levels with their fades. */
typedef struct rvi_object_lod {
    uint32_t level[2];
    float fade[2];
    uint32_t n;              /* draw items it emits */
    uint16_t lod_nothing;    /* its level meant "nothing" */
    uint16_t forget;         /* its cutoff dropped: summaries over it are stale */
    float depth;             /* its items' view_depth: set by the emit pass, which sorts by it */
} rvi_object_lod;

/* One registered streaming grid. */
typedef struct rvi_frame_grid {
    rv_grid *grid;
    float eye_radius;        /* < 0: no eye source */
} rvi_frame_grid;

/* Per-view scratch reused every frame (main view and each extra view list). */
typedef struct rvi_walk_scratch {
    rvi_vec stack;           /* uint32_t: the walk's levels (node | mask << 24) */
    rvi_vec weights;         /* float: the levels' weights */
    rvi_vec candidates;      /* rvi_candidate */
    rvi_vec sort_keys;       /* uint32_t, 2n */
    rvi_vec sort_order;      /* uint32_t, 2n */
    rvi_vec hlod_loads;      /* rv_hlod_load: the walk's load requests, sorted into the arena's */
} rvi_walk_scratch;

/* One entry of a walk record stream: what the walk decided, in walk order. */
typedef struct rvi_walk_record {
    uint32_t node;           /* the slot; RVI_REC_SUB: an item; RVI_REC_DEFER: the first node */
    uint32_t kind;           /* RVI_REC_* | detail << 8 (a cull's reason; a deferral's mask;
                                a load's RVI_LOAD_BELOW) */
    float weight;            /* a candidate's or a deferral's weight; RVI_REC_LOAD: the
                                deciding region's screen-space error */
    uint32_t count;          /* RVI_REC_DEFER: as rvi_walk_item.count; RVI_REC_LOAD: the
                                bits of its distance (float) */
} rvi_walk_record;

enum {
    RVI_REC_CANDIDATE = 0,   /* a candidate */
    RVI_REC_TESTED,          /* a candidate occlusion-tested in the walk already */
    RVI_REC_CULL,            /* a pruned subtree top (desc.record_culls), reason in the detail */
    RVI_REC_LOAD,            /* an HLOD region whose children to load, or with RVI_LOAD_BELOW
                                in the detail, a region whose loads rvi_hlod_list_loads names */
    RVI_REC_SUB,             /* the stream of item node, in place */
    RVI_REC_DEFER            /* work handed back (becomes an item, and this record its RVI_REC_SUB) */
};

/* An RVI_REC_LOAD's detail: the decision had loads_below (the regions to load are listed at
 * gathering, serially, into a vector that grows: a worker's record budget is fixed). */
#define RVI_LOAD_BELOW 1u

/* A unit of the main view's walk: count siblings from first with their subtrees (UINT32_MAX:
 * to the end of the list), or, with count 0, the node first alone (taken up on the calling
 * thread: partition groups), its children then being items of their own. */
typedef struct rvi_walk_item {
    uint32_t first, count;
    uint32_t mask;
    float weight;
    uint32_t worker;         /* whose records hold its stream; UINT32_MAX until walked */
    uint32_t begin, end;     /* its stream: the worker's records [begin, end) */
    uint32_t defers;         /* RVI_REC_DEFER records in its stream */
    bool whole;              /* a chunk of a long list: walked as one job, never taken up */
} rvi_walk_item;

/* Stage timing (frame.c, frame_cull.c, frame_walk.c). */
static inline uint64_t rvi_clock_now(const rv_world *world)
{
    return world->desc.clock_ns ? world->desc.clock_ns(world->desc.clock_user) : 0;
}

/* Times calls made once per node inside the walk without a clock read around each: every
 * RVI_WALK_SAMPLE-th call is timed and the stage is charged the sampled mean times the
 * calls (two clock reads per visible group cost as much as the test itself). */
#define RVI_WALK_SAMPLE 8u

typedef struct walk_timer {
    uint32_t calls, samples;
    double sampled_us;
} walk_timer;

static inline uint64_t walk_timer_start(const rv_world *world, walk_timer *t, bool timed)
{
    return timed && (t->calls++ % RVI_WALK_SAMPLE) == 0 ? rvi_clock_now(world) + 1 : 0;
}

static inline void walk_timer_stop(const rv_world *world, walk_timer *t, uint64_t started)
{
    if (!started)
        return;
    uint64_t t1 = rvi_clock_now(world) + 1;
    t->samples++;
    if (t1 >= started)
        t->sampled_us += (double)(t1 - started) / 1000.0;
}

static inline double walk_timer_estimate(const walk_timer *t)
{
    return t->samples ? t->sampled_us * ((double)t->calls / (double)t->samples) : 0.0;
}

/* One worker's share of a frame: written only by the thread running as that worker (the
 * job system's contract), gathered on the calling thread afterwards. */
typedef struct rvi_frame_worker {
    struct rv_world *world;
    struct rvi_frame *frame;
    const rvi_walk_policy *policy;  /* of the walk running on it */
    bool serial;             /* running on the calling thread outside a job: may gate
                                partition groups and read the clock */
    rvi_vec records;         /* rvi_walk_record: the streams of the items it walked */
    uint32_t budget;         /* records it may still write in the current item */
    uint32_t defers;         /* RVI_REC_DEFER records written in the current item */
    bool stack_full;         /* a level found no room on its stack */
    bool yielded;            /* an item ran out of record room */
    rvi_vec stack, weights;  /* its walk stack */
    rvi_vec acc;             /* rvi_walk_acc: the stack's summaries being gathered */
    rvi_walk_counts walk;
    rv_frame_counts counts;  /* the hooks' counts (partition, occlusion, HLOD, LOD) */
    rvi_hlod_pass hlod;      /* the frame's pass, its fading count this worker's */
    double fade_end_ms;      /* LOD: latest end of a crossfade started or running */
    uint64_t occlusion_tests, occlusion_culled;
    uint64_t feed_hidden;    /* tests hidden only thanks to the depth feed */
    uint64_t groups_hidden;  /* subtrees the occlusion test hid */
    uint64_t items_run;      /* parallel-for items it ran in the current call */
    atomic_bool busy;        /* a range runs as this worker now (two at once break the
                                contract: the second is refused, not run) */
    rv_result error;
    walk_timer occlusion_timer, partition_timer, lod_timer;
    char pad[64];            /* keeps workers' hot fields off each other's lines */
} rvi_frame_worker;

/* The camera of a frame, resolved. */
typedef struct rvi_frame_camera {
    float view_projection[16];
    double view_projection_d[16]; /* the same in double: the view + projection form's exact
                                     product, else the host's float matrix */
    float eye[3];
    float forward[3];        /* unit view direction (world) */
    rv_frustum frustum;      /* what the frame culls with: published_frustum's planes moved
                                out by their share of the rounding slack (rvi_frustum_widen) */
    rv_frustum published_frustum; /* the view's planes, as rv_frame_view.frustum gives them */
    rv_clip clip;
    uint32_t viewport_width, viewport_height;
    float fov_y;
    float ortho_height;      /* world units (orthographic only) */
    bool orthographic;
    double time_ms;
    rv_lod_view lod_view;
    bool cull_unsampled;     /* rv_view.cull_unsampled */
    bool lod_from_camera;    /* lod_view is rv_view.lod_camera's: an extra view holds the
                                level the nodes' selectors hold where its hysteresis allows */
    float pixels_per_unit;   /* a sphere's image radius in pixels is about radius times this
                                over its depth (perspective), or times this (orthographic) */
} rvi_frame_camera;

typedef struct rvi_frame {
    rvi_frame_phase state;
    rvi_frame_arena arenas[2];
    int building;            /* arena being built, -1 none */
    int lent;                /* arena of the last published view, -1 none */
    uint64_t sequence;       /* published frames */
    bool have_time;
    double last_time_ms;
    rvi_frame_camera cam;
    rv_frame_counts counts;
    double stage_us[RV_STAGE_COUNT];

    rv_occlusion *occlusion; /* main-view buffer (NULL when width 0) */
    /* The buffer while rv_world_set_occlusion has turned occlusion off: kept, emptied to
     * width 0, so a pointer rv_world_occlusion gave the host stays valid; turned on again,
     * it is rebuilt in place and becomes the main-view buffer once more. */
    rv_occlusion *occlusion_idle;
    /* Node boxes by slot (a plain array, not a hash map: the occlusion pass looks a test
     * box up for every candidate). */
    rvi_node_table occluders;  /* rvi_node_occluder: persistent occluder nodes */
    uint64_t occluder_items, occluder_vertices; /* sums over occluders (the frame's reserve) */
    rvi_node_table test_boxes; /* rvi_node_box */

    rv_journal *journal;     /* created on first rv_world_journal */
    rv_render_scene *render_scene;

    rv_residency *residency; /* created with the first grid */
    rvi_vec grids;           /* rvi_frame_grid */
    rvi_vec sources;         /* rv_stream_source: host sources + the eye, rebuilt per frame */
    uint32_t host_source_count;

    rvi_hlod_pass hlod_pass;
    /* The partition gate whose frame this frame opened at its begin, NULL when there was
     * none then (a gate made during the frame joins at the next one). */
    struct rvi_partition *gate;
    rvi_walk_scratch scratch;

    /* The main view's walk (frame_walk.c) and the object passes (frame_cull.c). */
    rv_job_system jobs;      /* resolved: parallel_for NULL runs every item here */
    uint32_t worker_count;   /* jobs.max_workers, and one more slot for the calling thread's own work */
    rvi_frame_worker *workers;
    rvi_vec items;           /* rvi_walk_item */
    rvi_vec tasks;           /* uint32_t: a round's items walked as jobs */
    rvi_vec item_stack;      /* uint32_t pairs: the stream gathering's position */
    rvi_vec chunk_spans;     /* uint32_t x4: a long span cut (first, count, its first cut, cuts) */
    rvi_vec chunk_cuts;      /* uint32_t x2: (first sibling, count) of each chunk */
    uint64_t chunk_links;    /* the scene's links_changed the cuts were made at */
    uint32_t records_hint;   /* most records the jobs of one walk wrote: every worker gets
                                room for twice as many (a round's room on top of its share) */
    uint32_t stack_hint;     /* deepest walk stack a worker needed */
    rvi_vec object_state;    /* uint8_t per candidate: the object passes' verdicts */
    rvi_vec selections;      /* rvi_object_lod per candidate */
    rvi_vec chunk_counts;    /* uint32_t per chunk and list: items each chunk emits */
    rvi_vec item_marks;      /* uint8_t per item of the running parallel-for: set by the range
                                that ran it (the coverage check, frame_walk.c) */
    /* What the walk keeps about subtrees and blocks of leaves between frames, and the
     * scene's change counters its version was last bumped at. */
    rvi_walk_summaries summaries;
    uint64_t summary_links, summary_edits;
    /* Per slot, for nodes with children: 1 + the sequence of the frame whose occlusion test
     * found the subtree visible, 0 when the last test hid it or none ran (frame_cull.c). */
    rvi_vec group_seen;
    /* Per slot, for nodes with children: 1 + the sequence of the last frame whose occlusion
     * test hid the subtree. */
    rvi_vec group_hidden;
    /* The sequence at the last change of the occlusion desc (0 before any): the subtree
     * tests' phases count frames from there, as a world made with that desc counts them
     * from its first frame. */
    uint64_t group_phase_base;
    /* What the last published frame's walk left unseen: its frustum, and whether its
     * occlusion test hid some subtree (frame_cull.c, lod_job); culled_*: the same of the
     * frame culled last, published or not. */
    rv_frustum walked_frustum, culled_frustum;
    bool walked_hid_groups, culled_hid_groups;
    const rvi_hz_levels *hz; /* the frozen buffer's pyramid during the object passes */
    bool occlusion_empty;    /* the frozen buffer hides nothing (rvi_occ_nothing_drawn): no
                                object or subtree is tested against it */
    rvi_hz_levels hz_levels;
} rvi_frame;

/* A parallel pass: items [begin, end) of its count, on worker w. */
typedef void (*rvi_frame_job)(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end);

/* Runs fn over [0, count) on the world's job system (inline on worker 0 without one).
 * RV_ERR_INVARIANT when the job system broke its contract (a worker out of range, items
 * missed or repeated: see rv_job_system); each pass also checks its own outputs.
 * RV_ERR_OUT_OF_MEMORY when the coverage marks could not grow to count. */
rv_result rvi_frame_parallel(rv_world *world, rvi_frame *f, rvi_frame_job fn, void *context, uint32_t count,
                             uint32_t grain);
/* The first error a worker met in the last pass (RV_OK: none). */
rv_result rvi_frame_workers_error(const rvi_frame *f);
/* The main view's walk (frame_walk.c): items on the workers with jobs_policy, work for the
 * calling thread with serial_policy; gathers candidates into scratch.candidates, cull
 * records and HLOD loads into the building arena. */
rv_result rvi_frame_walk(rv_world *world, rvi_frame *f, const rvi_walk_policy *jobs_policy,
                         const rvi_walk_policy *serial_policy);

/* Per-frame state of the walk and the object passes (frame_walk.c), before the walk: each
 * worker's counts zeroed and this frame's HLOD pass copied in, the walk's summaries sized
 * for every slot (a new version when the scene changed since the last frame), group_seen
 * sized for every slot. RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_frame_walk_begin(rv_world *world, rvi_frame *f);
/* Charges the walk's span [t0, t1] (clock ns) to its stages: the sampled estimates of what
 * the calling thread timed inside it (scaled down should they exceed the span), the rest
 * to the frustum. */
void rvi_frame_charge_walk(rvi_frame *f, uint64_t t0, uint64_t t1);
/* Adds the workers' counts into the frame's, the occlusion buffer's stats and the LOD
 * fade end, after the object passes. */
void rvi_frame_workers_end(rv_world *world, rvi_frame *f);

/* Frees the walk's summaries' arrays (a zero capacity frees nothing). */
void rvi_frame_free_summaries(rvi_heap *heap, rvi_walk_summaries *s);

/* The world's frame state, created on first use. */
rv_result rvi_frame_state(rv_world *world, rvi_frame **out);
/* Fills counts' opaque, translucent, lod_histogram and crossfades from the two lists. */
void rvi_frame_count_drawn(const rvi_vec *opaque, const rvi_vec *translucent, rv_frame_counts *counts);
/* rv_frame_cull's work (frame_cull.c); rv_frame_cull in frame.c guards it against re-entry. */
rv_result rvi_frame_cull(rv_world *world);
static inline rvi_frame *rvi_frame_find(const rv_world *world)
{
    return (rvi_frame *)rvi_world_module(world, RVI_MODULE_FRAME);
}

/* Adds the counters of the objects the frame owns (occlusion, residency, journal, render
 * scene) to *sum. */
void rvi_frame_add_alloc_stats(const rv_world *world, rv_alloc_stats *sum);

/* Resolves and validates an rv_view. */
rv_result rvi_frame_resolve_view(const rv_world *world, const rv_view *view, rvi_frame_camera *out);

/* Sorts n items by view_depth (ascending, or descending when far_to_near), stably, using
 * the scratch vectors (reserved by the caller for n). */
void rvi_frame_sort(rv_draw_item *items, uint32_t n, bool far_to_near, rvi_walk_scratch *scratch);
/* The sort key of a view depth: its unsigned order is the depth's (descending when
 * far_to_near; NaN last). */
uint32_t rvi_frame_depth_key(float view_depth, bool far_to_near);
/* Sorts n values (order) by their keys, stably (LSD radix, three passes of 11, 11 and 10 bits: O(n)), with
 * keys2 and order2 (n entries each, apart from the first two) for the passes. Returns the
 * sorted values: order or order2. */
uint32_t *rvi_frame_sort_pairs(uint32_t n, uint32_t *keys, uint32_t *order, uint32_t *keys2, uint32_t *order2);
/* Reserves sort scratch for n items. */
rv_result rvi_frame_reserve_sort(rvi_heap *heap, rvi_walk_scratch *scratch, uint32_t n);
void rvi_walk_scratch_free(rvi_heap *heap, rvi_walk_scratch *scratch);
void rvi_frame_arena_free(rvi_heap *heap, rvi_frame_arena *arena);

/* Removes node's occluder, freeing its block (no-op when it has none). Never allocates. */
void rvi_frame_drop_occluder(rvi_heap *heap, rvi_frame *f, uint32_t node);
/* Submits every persistent occluder (of any shape) whose world box meets the frustum and
 * whose geometry may be drawn this frame (frame_nodes.c). An occluder the buffer refuses (a
 * matrix gone non-finite) is skipped, which only draws more; running out of memory is
 * reported. */
rv_result rvi_frame_submit_occluders(rv_world *world, rvi_frame *f);
/* Was node's whole place out of sight on the last published frame: its subtree's sphere
 * outside that frame's frustum, or it in a subtree of its present ancestors that frame's
 * occlusion test hid? *mask: the planes of that frustum the sphere is not wholly inside
 * (frame_cull.c). */
bool rvi_frame_place_unseen_last_frame(const rvi_frame *f, const rvi_scene *sc, uint32_t node, uint32_t *mask);
/* The LOD pass's rule for a node resting at "nothing": was its place, or its own geometry
 * or test box, out of the last published frame's sight? Then it shows its level at once
 * (frame_cull.c). */
bool rvi_frame_unseen_last_frame(const rvi_frame *f, const rvi_scene *sc, uint32_t node);

/* rv_view.cull_unsampled's test of node i in the view of cam (frame_unsampled.c): true when the
 * image of its test box (f's table; f NULL: none), else of the box around its geometry's
 * world sphere, grown by RV_UNSAMPLED_MARGIN_PX, holds no pixel centre of cam's viewport. False for a
 * node whose sphere's image is larger than RV_UNSAMPLED_MAX_PX, is unbounded, or reaches
 * behind the eye. */
bool rvi_frame_unsampled(const rvi_frame_camera *cam, const rvi_frame *f, const rvi_scene *sc, uint32_t i);

/* The object passes (frame_cull.c, frame_emit.c) work on chunks of this many candidates. */
#define RVI_OBJECT_CHUNK 256u

/* What the occlusion pass decided for a candidate (rvi_frame.object_state). */
enum { RVI_OBJECT_UNSET = 0, RVI_OBJECT_VISIBLE, RVI_OBJECT_HIDDEN, RVI_OBJECT_NOTHING, RVI_OBJECT_UNSAMPLED };

/* The object passes' view of the frame's candidates and their per-candidate outputs. */
typedef struct rvi_object_pass {
    rv_world *world;
    rvi_frame *f;
    const rvi_candidate *cands;
    uint32_t count, chunks;
    uint8_t *state;          /* RVI_OBJECT_* per candidate */
    rvi_object_lod *lod;
    uint32_t *chunk_counts;  /* per chunk: opaque items, translucent items; then their offsets */
} rvi_object_pass;

/* The visible candidates' draw items into the building arena's lists, in draw order: each
 * chunk writes its keys at the places the chunks before it end, each list is sorted
 * (stable: equal depths keep walk order), then the items are written in sorted order
 * (frame_emit.c). Adds the sort's time to *sort_ns. */
rv_result rvi_frame_emit_pass(rv_world *world, rvi_frame *f, rvi_object_pass *p, uint64_t *sort_ns);

/* Node i's own geometry as a world sphere (radius < 0 when it has none): a leaf's world
 * sphere is its geometry's; a node with children has one around its whole subtree, whose
 * centre may lie far from its own mesh (a pane with a child far behind it), and so has a
 * leaf that lost its children since the last update (detached or destroyed: its sphere
 * still holds them until the update, and every node that becomes a leaf is marked so). */
static inline void rvi_frame_own_sphere(const rvi_scene *sc, uint32_t node, float out[4])
{
    if (sc->first_child[node] == RVI_INDEX_NONE && !(sc->flags[node] & RVI_NODE_LOST_CHILD))
        memcpy(out, sc->world_sphere[node], 4 * sizeof *out);
    else
        rvi_scene_geometry_sphere(sc, node, out);
}

/* Where a draw item of node i stands for sorting (rv_draw_item.view_depth): the depth along
 * the view's forward axis of its own geometry's centre, so a parent sorts by its own mesh. */
static inline float rvi_frame_item_depth(const rvi_frame_camera *cam, const rvi_scene *sc, uint32_t node)
{
    float s[4];
    rvi_frame_own_sphere(sc, node, s);
    return (s[0] - cam->eye[0]) * cam->forward[0] + (s[1] - cam->eye[1]) * cam->forward[1] +
           (s[2] - cam->eye[2]) * cam->forward[2];
}

/* Writes the draw item of node i (world matrix copied) at *item; view_depth is
 * rvi_frame_item_depth's for the node. */
void rvi_frame_emit(const rv_world *world, rv_draw_item *item, uint32_t node, uint32_t level, float fade,
                    float view_depth);

static inline void rvi_stage_add(rvi_frame *f, rv_frame_stage stage, uint64_t t0, uint64_t t1)
{
    if (t1 >= t0)
        f->stage_us[stage] += (double)(t1 - t0) / 1000.0;
}


#endif
