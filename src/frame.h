/* The frame: the only module that knows every other (docs/design.md, "The frame").
 *   frame.c          begin and end: the stages in order, and the public calls
 *   frame_cull.c     the cull walk and its passes (occluders, walk, occlusion, LOD)
 *   frame_publish.c  arenas, sort, emit, view validity and digest
 *   frame_nodes.c    what nodes carry for the frame (occluders of any shape, test boxes)
 *   frame_state.c    the frame state and the world-owned modules, created and destroyed together
 *   frame_views.c    extra views (rv_cull_view) */
#ifndef RVI_FRAME_H
#define RVI_FRAME_H

#include "rvis.h"
#include "world.h"
#include "core/vec.h"
#include "lod.h"

typedef enum rvi_frame_state {
    RVI_FRAME_IDLE = 0,  /* no frame open */
    RVI_FRAME_BEGUN,     /* rv_frame_begin done: occluders may be added */
    RVI_FRAME_CULLED     /* rv_frame_cull done: only rv_frame_end or abort */
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

/* A node box attachment (a test box), local space. */
typedef struct rvi_node_box {
    uint32_t node;
    float min[3];
    float max[3];
} rvi_node_box;

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
} rvi_node_occluder;

/* A walk candidate: a node whose own geometry passed frustum and partition. */
typedef struct rvi_candidate {
    uint32_t node;
    float weight;            /* HLOD crossfade weight inherited from above (1 otherwise) */
    uint32_t tested;         /* already occlusion-tested inline (group nodes) */
} rvi_candidate;

/* One registered streaming grid. */
typedef struct rvi_frame_grid {
    rv_grid *grid;
    float eye_radius;        /* < 0: no eye source */
} rvi_frame_grid;

/* Per-view scratch reused every frame (main view and each extra view list). */
typedef struct rvi_walk_scratch {
    rvi_vec stack;           /* uint32_t node, uint32_t mask, float weight: 3 words per entry */
    rvi_vec candidates;      /* rvi_candidate */
    rvi_vec sort_keys;       /* uint32_t, 2n */
    rvi_vec sort_order;      /* uint32_t, 2n */
} rvi_walk_scratch;

/* The camera of a frame, resolved. */
typedef struct rvi_frame_camera {
    float view_projection[16];
    double view_projection_d[16]; /* the same in double: the view + projection form's exact
                                     product, else the host's float matrix */
    float eye[3];
    float forward[3];        /* unit view direction (world) */
    rv_frustum frustum;
    rv_clip clip;
    uint32_t viewport_width, viewport_height;
    float fov_y;
    float ortho_height;      /* world units (orthographic only) */
    bool orthographic;
    double time_ms;
    rv_lod_view lod_view;
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
    /* Node slot -> box index (UINT32_MAX none): a plain array, not a hash map, because
     * the occlusion pass looks a test box up for every candidate. */
    rvi_node_slots occluder_of;
    rvi_vec occluders;       /* rvi_node_occluder: persistent occluder nodes */
    uint64_t occluder_items, occluder_vertices; /* sums over occluders (the frame's reserve) */
    rvi_node_slots test_box_of;
    rvi_vec test_boxes;      /* rvi_node_box */

    rv_journal *journal;     /* created on first rv_world_journal */
    rv_render_scene *render_scene;

    rv_residency *residency; /* created with the first grid */
    rvi_vec grids;           /* rvi_frame_grid */
    rvi_vec sources;         /* rv_stream_source: host sources + the eye, rebuilt per frame */
    uint32_t host_source_count;

    rvi_hlod_pass hlod_pass;
    rvi_walk_scratch scratch;
    rvi_vec occ_spheres;     /* float x4 per candidate tested in batch */
    rvi_vec occ_visible;     /* uint8_t */
} rvi_frame;

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
/* Reserves sort scratch for n items. */
rv_result rvi_frame_reserve_sort(rvi_heap *heap, rvi_walk_scratch *scratch, uint32_t n);
void rvi_walk_scratch_free(rvi_heap *heap, rvi_walk_scratch *scratch);
void rvi_frame_arena_free(rvi_heap *heap, rvi_frame_arena *arena);

/* Removes node's entry from a box attachment (no-op when it has none). Never allocates. */
void rvi_frame_drop_box(rvi_node_slots *of, rvi_vec *boxes, uint32_t node);
/* Removes node's occluder, freeing its block (no-op when it has none). Never allocates. */
void rvi_frame_drop_occluder(rvi_heap *heap, rvi_frame *f, uint32_t node);

/* Appends a draw item for node i (world matrix copied) into list. */
rv_result rvi_frame_emit(rv_world *world, rvi_vec *list, uint32_t node, uint32_t level, float fade,
                         const rvi_frame_camera *cam);

/* Stage timing (shared by frame.c and frame_cull.c). */
static inline uint64_t rvi_clock_now(const rv_world *world)
{
    return world->desc.clock_ns ? world->desc.clock_ns(world->desc.clock_user) : 0;
}

static inline void rvi_stage_add(rvi_frame *f, rv_frame_stage stage, uint64_t t0, uint64_t t1)
{
    if (t1 >= t0)
        f->stage_us[stage] += (double)(t1 - t0) / 1000.0;
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

#endif
