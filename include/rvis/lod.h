/* rvis/lod.h — Apparent-size LOD, hysteresis, crossfade, and HLOD by screen-space error.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_LOD_H
#define RVIS_LOD_H

#include "core.h"
#include "frustum.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Apparent-size LOD and HLOD (docs/design.md §5). A level is picked from the angle an object's
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
 * the rules like rv_lod_ladder_make would. rv_lod_ladder_make zeroes the entries from count
 * on; every call ignores them. */
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
 * incoming level with weight 0 (the host may skip drawing a zero weight). Between two
 * selections a level's weight moves by at most dt / crossfade_ms, even when the level
 * changes again mid-fade (see rv_node_lod_select), so a two-way dither or blend never pops.
 * That holds while crossfade_ms stays the same: a desc whose crossfade_ms is shorter than
 * the time a fade has run gives the incoming level its whole weight at once (as if that
 * fade had just ended), and a turn back starts from there. */
typedef struct rv_lod_selection {
    uint32_t levels[2];
    float weights[2];
    uint32_t count;           /* 1 or 2 */
} rv_lod_selection;

/* Selection state of one object for hosts that keep their own objects (no nodes): zero it
 * ({0}) for a fresh object, then pass it to rv_lod_selector_update every frame. Fields are
 * rvis's; read the result from rv_lod_selection instead. */
typedef struct rv_lod_selector {
    uint32_t level;           /* level shown, fading in while a fade runs */
    uint32_t from_level;      /* level fading out; == level when no fade runs */
    float fade_ms;            /* milliseconds into the running fade */
    uint32_t flags;           /* internal: started, fading */
} rv_lod_selector;

/* Makes a ladder from count thresholds (radians, float[count]). count must be
 * 1..RV_LOD_MAX_THRESHOLDS; thresholds strictly descending (finest level's first), positive
 * and finite. A threshold of pi or more is reached only from inside the sphere, unless a
 * bias > 1 magnifies angles. Suggested start: {0.2, 0.06, 0.015}.
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
 * desc supplies bias, finest_level and ortho_reference_fov_y (NULL = defaults; the whole
 * desc is checked as rv_lod_set_desc checks it, its other fields unused); view supplies eye
 * or, when orthographic, ortho_height. No asin per
 * sphere: "angle*bias >= t" is tested as r^2 >= d^2 * sin^2(t / (2*bias)) against constants
 * computed once per call (for t / bias < pi; larger thresholds are reached only inside).
 * Agrees with rv_lod_for_sphere except within ~2e-6 relative of a threshold: the few
 * spheres float cannot settle that closely are decided in double (beyond ~1e19 units, so
 * near the eye that their squares underflow, or near a threshold t / bias above ~2.9 rad,
 * where sin^2 is flat; every sphere when a threshold t / bias is below ~1.8e-15 rad). To
 * split the
 * work across threads, offset the pointers and count (no shared state is written).
 * Errors: RV_ERR_INVALID_ARG (a NULL array with count > 0, view NULL, bad ladder or desc,
 * a radius < 0, ortho_height <= 0), RV_ERR_NOT_FINITE (a NaN/Inf input), RV_ERR_ORDER /
 * RV_ERR_CAPACITY (a hand-filled ladder). On a per-sphere
 * error every level is still written; a sphere with a NaN or an infinity, or a negative
 * radius, answers the finest level allowed, and the error is reported after the loop
 * (RV_ERR_NOT_FINITE when the spheres have both kinds). count 0 is RV_OK. */
RV_API rv_result rv_lod_select_spheres(const rv_lod_ladder *ladder, const rv_lod_desc *desc,
                                       const rv_lod_view *view, const float *center_x,
                                       const float *center_y, const float *center_z,
                                       const float *radius, uint32_t count, uint8_t *out_levels);

/* Stateful selection for one object without nodes: hysteresis and crossfade as described
 * at rv_node_lod_select, with time advanced by dt_ms (milliseconds since the previous update
 * of this selector, >= 0) instead of a world clock. The sphere and view as in
 * rv_lod_select_spheres; desc as rv_lod_desc (NULL = defaults). The first update of a zeroed
 * selector picks the level without hysteresis and without a fade; so does an update whose
 * ladder lacks a level the selector shows (the host gave the object another ladder: the
 * selection starts over, as a node's does on rv_node_set_lod_ladder), so every level
 * answered exists on the ladder passed (0 .. ladder->count, the count being "nothing").
 * Errors (selector and *out unchanged): RV_ERR_INVALID_ARG (NULL, radius < 0, dt_ms < 0,
 * bad ladder/desc/view, a selector no update can have left: unknown flag bits, a fade time
 * NaN, infinite or negative, a level beyond RV_LOD_MAX_THRESHOLDS), RV_ERR_NOT_FINITE,
 * RV_ERR_ORDER / RV_ERR_CAPACITY (a hand-filled ladder). */
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
 * RV_ERR_NOT_FINITE (view, or a ladder's threshold), RV_ERR_ORDER / RV_ERR_CAPACITY (a
 * hand-filled ladder), RV_ERR_STALE_HANDLE, RV_ERR_BAD_STATE (the node's subtree has no
 * geometry: its world bounds are empty). */
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
 * (rv_lod_advance); once that much time accumulated the old level is gone. No level's
 * weight ever moves by more than dt / crossfade_ms in one selection, retargets included
 * (one exception: a node whose world bounds are unbounded, its placement unknown, snaps to
 * its finest allowed level at weight 1, since a fade in would draw it faint):
 * turning back to the outgoing level reverses the fade from the weights it has; a third
 * level waits until the lighter of the two fading levels has faded out (at most
 * crossfade_ms / 2; the heavier one takes its weight), then fades in from the heavier.
 * When one of the two is "nothing" (ladder->count) and the third is not, the drawn one is
 * kept however light (what is drawn never fades toward nothing while a level is wanted),
 * so the third waits up to crossfade_ms.
 * Allocates nothing. Errors (state and *out unchanged): RV_ERR_INVALID_ARG (NULL, bad view),
 * RV_ERR_NOT_FINITE, RV_ERR_STALE_HANDLE, RV_ERR_NOT_FOUND (no ladder), RV_ERR_BAD_STATE
 * (empty world bounds). */
RV_API rv_result rv_node_lod_select(rv_world *world, rv_node node, const rv_lod_view *view,
                                    rv_lod_selection *out);

/* HLOD (hierarchical LOD). A region is a node with a geometric error (world units: how far
 * its own simplified geometry strays from the full detail) and a resident flag the host
 * sets when the region's geometry is loaded. A region's children are its nearest region
 * descendants (plain nodes between them are transparent); a region without region
 * descendants is a leaf and never refines. A child that is resident with empty world
 * bounds draws nothing and is left out of the cut; one that is not resident counts whatever
 * its bounds (they may be empty only because its data has not arrived). Screen-space error in pixels (Cesium 3D Tiles):
 *   perspective:  error * viewport_height_px / (2 * distance * tan(fov_y / 2)),
 *   orthographic: error * viewport_height_px / ortho_height,
 * distance measured from the eye to the surface of the region's world bounds; in
 * perspective an eye inside them makes the error infinite (an orthographic error does not
 * depend on distance). */

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

/* The region's children, the regions a load request for it asks the host to load: its
 * nearest region descendants (plain nodes between are looked through), in walk order
 * (depth first, children in attach order), resident or not, with bounds or not; hidden ones
 * (RV_NODE_FLAG_HIDDEN on them or a node between: neither drawn nor loaded) left out, as
 * the cut leaves them out (it refines a region while every other child is resident). Writes the
 * first capacity of them to out_children and their number to *out_count; more than
 * capacity is RV_ERR_CAPACITY (the first capacity written: grow the array to *out_count
 * and call again). out_children may be NULL when capacity is 0 (a count). O(the subtree
 * down to those regions); never allocates. Errors (nothing written): RV_ERR_INVALID_ARG
 * (world or out_count NULL, out_children NULL with capacity > 0), RV_ERR_STALE_HANDLE,
 * RV_ERR_NOT_FOUND (not a region). */
RV_API rv_result rv_hlod_children(const rv_world *world, rv_node region, rv_node *out_children, uint32_t capacity,
                                  uint32_t *out_count);

/* One region of the cut. weight in [0, 1]: along any path from a top region down to a
 * leaf, the weights of the drawn regions sum to 1 (a crossfade draws parent and children
 * at once). screen_space_error in pixels (+infinity with the eye inside, in perspective). */
typedef struct rv_hlod_draw {
    rv_node region;
    float weight;
    float screen_space_error;
} rv_hlod_draw;

/* A region that wants to refine but has a child that is not resident: load its children.
 * Also one that cannot be drawn (not resident; in rv_frame, resident without geometry of
 * its own) with a child not resident, when it is resident, or in rv_frame has no
 * geometry of its own (bounds) even before it loads, or no region above it in the walk
 * (within 64 nodes up) asks for it; else the region above lists its own children, this
 * one among them, and once loaded it is drawn as itself (so a world where nothing is
 * resident yet is loaded from the top, as deep as the errors need, not whole).
 * In rv_frame, a region that wants to refine but has children without geometry of their
 * own standing on children that are not resident (see rv_hlod_select) asks, in the same
 * frame, for every region whose children it waits for: itself when a child of its own is
 * not resident, and each region without geometry passed through below it (through up to 8
 * in a row) whose own children are not, each named once, with the asking region's
 * screen-space error and distance. A region without geometry whose children are all
 * resident is not named, nor is the asking region when its own children all are. So one
 * round of loads brings in all it waits for (unless what arrives holds more regions
 * without geometry of their own, whose children are asked for on the next frame).
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

/* Selects the HLOD cut under root (any live node, not RV_NODE_NONE: a world's roots are
 * walked one call each; regions below it are found through plain nodes) for one view, advancing crossfades by dt_ms (milliseconds since the previous call
 * for this part of the tree, >= 0). The regions' fades are the world's own: rv_frame
 * advances them too (by its views' time_ms), so a tree is driven by one or the other;
 * calling both in a frame makes its fades run faster. Walks from root: a subtree whose world bounds frustum
 * rejects is skipped (frustum NULL: no culling), and a culled region is neither drawn nor
 * refined; when it comes back it shows the cut it wants then whole, with no crossfade
 * (nobody saw it change), and so do the regions below it it refines into; so does a
 * region's first decision (a region just made, the world's first frame). A region the
 * walk did not reach (below a plain node or region the frustum rejected) keeps its state
 * here; rv_frame, which remembers its last frame's view, also shows whole the cut of a
 * region whose place was out of that view (outside the frustum, or under a group the
 * occlusion test hid). A visible resident region refines
 * into its children while its screen-space error exceeds max_screen_space_error AND every
 * child is resident; otherwise it draws itself — never a hole while children load — and,
 * when it wanted to refine, it is listed in loads. In rv_frame, whose lists pass a
 * resident region without geometry of its own through (it draws nothing), such a child is
 * taken as resident only when its own children are (looked at the same way, through up to
 * 8 such regions in a row; a deeper chain counts as not resident: the region above draws
 * itself, and asks for nothing there); rv_hlod_select, where the host draws every region
 * by its own means, takes it as it is. A non-resident region is never drawn:
 * the walk passes through it to whatever below is resident (which regions it lists in
 * loads: rv_hlod_load). When the cut changes, parent
 * and children crossfade over crossfade_ms (linear; a reversal continues from the current
 * weights; as with LOD, a change made in a call lists the incoming regions with weight 0
 * and dt_ms of the next calls moves them); a child turning non-resident ends its parent's
 * fade at once. Several levels may fade at once; the weights along a path still sum to 1.
 * Reads world bounds as of the last rv_update_world. Steady calls allocate nothing
 * (storage grows to the world's node and region counts once).
 * Errors (state unchanged; in this order): RV_ERR_INVALID_ARG (world or out NULL),
 * RV_ERR_STALE_HANDLE (root, RV_NODE_NONE included), RV_ERR_NOT_FINITE (a NaN/Inf in view
 * or dt_ms), RV_ERR_INVALID_ARG (bad view, dt_ms < 0; frustum's plane_mask with bits above
 * bit 5), RV_ERR_NOT_FINITE (a NaN/Inf in a plane of frustum's plane_mask),
 * RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_hlod_select(rv_world *world, rv_node root, const rv_lod_view *view,
                                const rv_frustum *frustum, float dt_ms, rv_hlod_result *out);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_LOD_H */
