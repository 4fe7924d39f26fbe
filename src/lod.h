/* Internal interface of the LOD module (lod.c: apparent-size levels, hysteresis, crossfade;
 * hlod.c: HLOD cut by screen-space error). docs/design.md §5, §8.
 *
 * For the frame (frame.c), per frame:
 *   rvi_lod_advance(world, dt)                         once, before the walk
 *   rvi_hlod_begin_pass(world, &view, dt, &pass)       once, before the walk
 *   during the walk, for a node with RVI_NODE_HAS_HLOD:
 *     d = rvi_hlod_decide(world, &pass, index, culled) draw it itself with weight
 *         inherited * d.self_weight when d.draw_self; walk below it (children inherit
 *         inherited * (1 - d.self_weight)) only when d.refine; collect d.wants_load
 *         (with d.loads_below, after the walk: rvi_hlod_list_loads).
 *   for a visible node with RVI_NODE_HAS_LOD:
 *     rvi_lod_select_index(world, index, &view, &selection)
 *   rvi_lod_fading(world) || pass.fading > 0 after the walk: a crossfade is running
 *   (tick demand CONTINUOUS). */
#ifndef RVI_LOD_H
#define RVI_LOD_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/node_table.h"
#include "world.h"

#include <math.h>

/* Angles within this fraction below a threshold count as reaching it (errs toward detail). */
#define RVI_LOD_REACH (1.0 - 2e-6)
#define RVI_LOD_PI 3.14159265358979323846

/* The squared distance of center from a perspective view's eye, in double. */
static inline double rvi_lod_distance_sq(const float center[3], const rv_lod_view *view)
{
    double dx = (double)center[0] - view->eye[0];
    double dy = (double)center[1] - view->eye[1];
    double dz = (double)center[2] - view->eye[2];
    return dx * dx + dy * dy + dz * dz;
}

/* The apparent angle times bias, radians, in double precision; +inf with the eye inside a
 * perspective view's sphere. Orthographic: projected diameter / view height * reference fov. */
static inline double rvi_lod_biased_angle(const float center[3], float radius, const rv_lod_view *view,
                                          const rv_lod_desc *config)
{
    if (view->orthographic)
        return 2.0 * (double)radius / (double)view->ortho_height *
               (double)config->ortho_reference_fov_y * (double)config->bias;
    double d = sqrt(rvi_lod_distance_sq(center, view));
    if (d <= radius)
        return INFINITY;
    return 2.0 * asin((double)radius / d) * (double)config->bias;
}

/* The first level whose threshold * factor the angle reaches (count when none): the number
 * of thresholds not reached, since they descend. */
static inline uint32_t rvi_lod_level_for_angle(double angle, const rv_lod_ladder *ladder, double factor)
{
    uint32_t level = 0;
    for (uint32_t i = 0; i < ladder->count; i++)
        level += angle < (double)ladder->thresholds[i] * factor * RVI_LOD_REACH;
    return level;
}

/* The finest level a desc allows on a ladder of count thresholds (count >= 1): finest_level,
 * but never past the coarsest drawn level (count - 1). A quality setting coarsens what is
 * drawn; it never turns a drawn object into "nothing" (count), which would hide every object
 * whose ladder is shorter than the setting. */
static inline uint32_t rvi_lod_finest_allowed(uint32_t finest, uint32_t count)
{
    return finest < count ? finest : (count ? count - 1 : 0);
}

static inline uint32_t rvi_lod_clamp_finest(uint32_t level, uint32_t finest, uint32_t count)
{
    uint32_t limit = rvi_lod_finest_allowed(finest, count);
    return level < limit ? limit : level;
}

/* A sphere's centre and radius: RV_ERR_INVALID_ARG (NULL, radius < 0), RV_ERR_NOT_FINITE. */
rv_result rvi_lod_check_sphere(const float center[3], float radius);

/* Resolves a desc: defaults applied, ranges checked. Idempotent (a resolved desc resolves to
 * itself: hysteresis and crossfade stay negative when off). */
rv_result rvi_lod_resolve_desc(const rv_lod_desc *in, rv_lod_desc *out);
/* The world's resolved LOD configuration (module state if created, else the world desc). */
rv_result rvi_lod_world_desc(const rv_world *world, rv_lod_desc *out);
/* Validates a ladder (rules of rv_lod_ladder_make). */
rv_result rvi_lod_check_ladder(const rv_lod_ladder *ladder);
/* Validates the view fields LOD uses (eye, or ortho_height when orthographic). */
rv_result rvi_lod_check_view(const rv_lod_view *view);

/* Makes the world's LOD state if it has none yet (RV_ERR_OUT_OF_MEMORY), so that
 * rvi_lod_advance with a finite dt_ms >= 0 cannot fail after it. */
rv_result rvi_lod_reserve(rv_world *world);
/* Advances the LOD clock (see rv_lod_advance). */
rv_result rvi_lod_advance(rv_world *world, float dt_ms);
/* rv_node_lod_select for a live slot index (the frame has resolved the handle). */
rv_result rvi_lod_select_index(rv_world *world, uint32_t node_index, const rv_lod_view *view,
                               rv_lod_selection *out);
/* The same touching nothing but the node's own record (workers may select distinct nodes at
 * once): *out_count receives the ladder's count (the "nothing" level) and *fade_end_ms is
 * raised to the LOD clock at which a crossfade this selection shows ends; hand the largest
 * to rvi_lod_note_fade_end afterwards. Keeps the node's cutoff (rvi_lod_cutoff) current.
 * snap: the node goes straight to the level it targets, ending any fade (the frame's choice
 * for a node nobody saw since its last selection). */
rv_result rvi_lod_select_node(rv_world *world, uint32_t node_index, const rv_lod_view *view, rv_lod_selection *out,
                              uint32_t *out_count, double *fade_end_ms, bool snap);
void rvi_lod_note_fade_end(rv_world *world, double fade_end_ms);
/* rv_lod_for_node for a live slot index and its own ladder: the level without hysteresis
 * or state, and the ladder's count; with held, the level the node's selector holds from its
 * latest selection instead, where the view's hysteresis allows it (it lies between the
 * candidates a selector would move to). Reads the record only. RV_ERR_NOT_FOUND (no
 * ladder), RV_ERR_BAD_STATE (no geometry), errors of the view. */
rv_result rvi_lod_level_of(const rv_world *world, uint32_t node_index, const rv_lod_view *view, bool held,
                           bool unseen, uint32_t *out_level, uint32_t *out_count);
/* True between a frame's begin (the LOD clock advanced) and its LOD pass: rvi_lod_level_of
 * then looks ahead to the selection that pass is about to make; unseen (the frame's rule
 * for a node resting at "nothing" whose place the last frame did not see) makes it snap. */
bool rvi_lod_frame_pass_due(const rv_world *world);
/* For an occluder on the node: true when the selection the frame is about to make for it
 * with this view (the LOD clock already advanced) lists only drawn levels, whole or
 * crossfading between two of them; false when it lists "nothing", or a level fading in or
 * out from "nothing" (drawn faint). True for a node without a ladder or without geometry
 * (LOD does not apply), false for a view the selection would refuse. Reads the record only. */
bool rvi_lod_drawn_whole(const rv_world *world, uint32_t node_index, const rv_lod_view *view);
/* The frame's LOD pass is about to select at the current clock: rvi_lod_level_of's held
 * levels then count a fade as the latest frame's when the node was selected at this clock
 * (until the next frame's pass, extra views culled after rv_frame_begin included). */
void rvi_lod_note_frame_selection(rv_world *world);
/* Per slot (*out_count of them; NULL before any ladder): 0, or, while the node's selector
 * rests at "nothing" (started, no fade), a k in (0, 1] such that a perspective view where
 * the node's world sphere has r^2 < d^2 k (d: distance of its centre from the eye) would
 * leave it there, drawing nothing: the frame's walk drops it without selecting. Valid
 * between frames; written by selections. */
const float *rvi_lod_cutoff(const rv_world *world, uint32_t *out_count);
/* The table of LOD records (NULL before any ladder) and the size of one record, for a pass
 * that fetches ahead what rvi_lod_select_node will read. Valid between frames. */
const rvi_node_table *rvi_lod_records(const rv_world *world, size_t *out_record_bytes);
/* True while some node's crossfade may still be running at the current LOD clock. */
bool rvi_lod_fading(const rv_world *world);

/* One HLOD pass (one view, one frame). */
typedef struct rvi_hlod_pass {
    rv_lod_view view;
    float dt_ms;
    float max_screen_space_error;
    float crossfade_ms;          /* < 0: cuts change at once */
    double pixels_at_unit;       /* SSE = error * pixels_at_unit / distance (perspective) or
                                    error * pixels_at_unit (orthographic) */
    uint32_t fading;             /* regions with a crossfade running, counted by decide */
    bool own_geometry;           /* a region draws itself through its own geometry (the frame's
                                    lists): one without (no rv_node_set_bounds) is passed
                                    through like a region that is not resident */
    uint32_t root;               /* the walk's top node (RVI_INDEX_NONE: the whole world): a
                                    region above it is not in the walk's loads */
} rvi_hlod_pass;

/* What one region does this frame. */
typedef struct rvi_hlod_decision {
    bool draw_self;              /* draw the region's own geometry, weight inherited * self_weight */
    bool refine;                 /* walk below it; children inherit inherited * (1 - self_weight) */
    bool wants_load;             /* it wants to refine but a child is not resident (or, with
                                    own_geometry, not ready): the region's children to load */
    bool loads_below;            /* with wants_load (own_geometry, the region drawn as itself):
                                    the regions whose children to load are its own and those
                                    of the regions passed through below it whose children are
                                    missing; rvi_hlod_list_loads names them */
    bool is_region;              /* false: node_index is not a region (nothing decided) */
    float self_weight;           /* in [0, 1] */
    float screen_space_error;    /* pixels (+inf inside) */
    float distance;              /* eye to bounds surface, world units (0 inside) */
} rvi_hlod_decision;

/* The order of load requests, most urgent first, for rvi_sort over rv_hlod_load: largest
 * screen-space error, then nearest, then lowest node id (a total order over distinct
 * regions: the same list whatever order they were found in). */
int rvi_hlod_compare_loads(const void *a, const void *b);

/* For a region whose decision in an own_geometry pass had loads_below, with nothing changed
 * since: pushes onto loads (rv_hlod_load, each with screen_space_error and distance, the
 * region's urgency) every region whose children to load so that it can refine: itself when
 * a child region of its own is not resident, and each resident region without geometry of
 * its own passed through below it (through up to 8 in a row, as the decision looked) whose
 * own child is not. Each once: a scan reaches a region by one path. Grows loads (on the
 * world's heap) when it is full; RV_ERR_OUT_OF_MEMORY, RV_ERR_INVARIANT (not a region). */
rv_result rvi_hlod_list_loads(rv_world *world, uint32_t node_index, float screen_space_error, float distance,
                              rvi_vec *loads);

/* Checks the view and dt and resolves the world's configuration into *pass. */
rv_result rvi_hlod_begin_pass(const rv_world *world, const rv_lod_view *view, float dt_ms,
                              rvi_hlod_pass *pass);
/* Decides one region (node_index must be live; culled: the walk's frustum rejected it) and
 * advances its crossfade by pass->dt_ms. unseen: the caller knows the region's place was
 * out of sight in its latest pass (rv_frame: outside the last frame's frustum, or under a
 * group its occlusion test hid); such a region, like one culled in its latest decision,
 * shows the cut it wants whole, with no crossfade. Call once per region per pass, parents
 * before children. Allocates nothing. */
rvi_hlod_decision rvi_hlod_decide(rv_world *world, rvi_hlod_pass *pass, uint32_t node_index,
                                  bool culled, bool unseen);

/* For an occluder, what the region's decision in pass will draw, from its state before the
 * frame decides it. A decision from such a state only starts a crossfade, whose first frame
 * still draws the same; a region back from out of sight (culled in its latest decision, or
 * unseen: the caller knows its place was out of sight) shows the cut it wants whole:
 * rvi_hlod_peek's. rvi_hlod_drawn_whole: its own geometry is drawn whole (resident, with
 * geometry of its own, drawn as itself with no fade running); true for a node that is not
 * a region. rvi_hlod_cover_below: what stands for the nodes below it. */
typedef enum rvi_hlod_cover {
    RVI_HLOD_NOTHING,  /* nothing is drawn below it (not resident, nothing resident below) */
    RVI_HLOD_THROUGH,  /* the walk goes on below it at full weight (refined, passed through, or
                          crossfading: its stand-in and its children, drawn together), or it
                          is not a region */
    RVI_HLOD_STAND_IN  /* it is drawn as itself, whole, in their place */
} rvi_hlod_cover;
bool rvi_hlod_drawn_whole(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index, bool unseen);
rvi_hlod_cover rvi_hlod_cover_below(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index,
                                    bool unseen);

/* The decision rvi_hlod_decide would take with no crossfade, changing nothing (extra
 * views): refine while the error exceeds the limit and every child is resident. */
rvi_hlod_decision rvi_hlod_peek(const rv_world *world, const rvi_hlod_pass *pass, uint32_t node_index);

#endif
