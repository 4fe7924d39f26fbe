/* Occlusion buffer internals (docs/design.md §4): the view a frame is built for, the prepared
 * occluders, and the entry points frame.c uses on the world's main-view buffer.
 *
 * Depth is stored as NEARNESS, larger = nearer: 1 / w for perspective views (w = clip w,
 * the linear view depth) and -depth for orthographic ones (depth = NDC z, growing away
 * from the viewer). Along a back-face plane nearness is an affine function of the screen
 * position in both cases, which is what makes the per-texel far side exact and cheap. */
#ifndef RVI_OCCLUSION_H
#define RVI_OCCLUSION_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/check.h"
#include "core/vec.h"

#include <string.h>

/* The hot loops are plain C written for the compiler to vectorise; on x86 with GCC or
 * Clang an AVX2 build of the same source is also compiled and picked at run time
 * (rv_occlusion.wide). Both give identical results: same operations in the same order, and
 * ISO C mode forbids contracting them into fused multiply-adds. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define RVI_OCC_X86_WIDE 1
#define RVI_ALWAYS_INLINE inline __attribute__((always_inline))
#define RVI_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define RVI_OCC_X86_WIDE 0
#define RVI_ALWAYS_INLINE inline
#endif

#define RVI_OCC_MAX_HULL 16   /* a near-clipped box projects to at most 12 hull vertices */
#define RVI_OCC_MAX_PLANES 6
#define RVI_OCC_MAX_COORD 1e7 /* world units: occluders reaching further are skipped */

/* The view of one frame, derived once by rv_occlusion_begin. */
typedef struct rvi_occ_view {
    bool perspective;
    double sigma;          /* orthographic: +1 when NDC z grows with depth, -1 reversed */
    double vp[16];         /* column-major, as given (orthographic: scaled so w = 1) */
    double a_inv[9];       /* inverse of the xyz parts of rows x, y and w (perspective) or z
                              (orthographic), row-major: maps (x, y, w) or (x, y, z) back */
    double near_row[4];    /* near(p) = near_row . (p, 1) >= 0 in front of the near plane */
    double eye[4];         /* homogeneous eye (w > 0), or the direction toward the viewer (w = 0) */
    double texels_w, texels_h;
    /* Object tests, in floats: four rows (texel x, texel y, near, q), each xyz + the value
     * at ref, applied to (p - ref). q is w (perspective) or nearness (orthographic). The
     * err_* pairs bound the float error of a row at distance D (L1) from ref:
     * |error| <= err_mul * D + err_add. */
    float ref[3];
    float rows[4][4];
    float err_mul[4], err_add[4];
    float rect_mul, rect_add;  /* texel margin of the screen rectangle: (rect_mul * D + rect_add) * nearness */
} rvi_occ_view;

/* One occluder being drawn at the freeze (in double precision, only for occluders not
 * already hidden by nearer ones): rvi_occ_prepare_box projects it (corners, screen bounds,
 * farthest point), rvi_occ_finish derives its coverage edges and back-face planes.
 * Texel (ix, iy) covers [ix, ix + 1] x [iy, iy + 1] in texel coordinates. */
typedef struct rvi_occluder {
    float far_nearness;    /* nearness of the occluder's farthest point: a floor for every texel */
    float bounds[4];       /* screen bounds in texels: min x, min y, max x, max y (unclamped) */
    bool finished;         /* edges and planes below are set */
    int32_t x0, x1, y0, y1;/* texel range worth scanning (clamped to the buffer) */
    uint32_t edge_count;
    uint32_t plane_count;
    /* Coverage, one bound per hull edge: in row iy, a whole texel needs
     * ix >= ceil(p + q * iy) (left edges) or ix <= floor(p + q * iy) (right edges). */
    double edge_p[RVI_OCC_MAX_HULL], edge_q[RVI_OCC_MAX_HULL];
    int8_t edge_left[RVI_OCC_MAX_HULL];
    /* Back-face nearness per texel: a * ix + b * iy + c is at most the plane's nearness
     * anywhere in texel (ix, iy) (texel-corner minimum and float error already folded in). */
    float plane[RVI_OCC_MAX_PLANES][3];
    /* Kept from the projection for rvi_occ_finish (unclipped boxes). */
    double org[3], edge[3][3];  /* world origin corner and edge vectors */
    double pts[8][2];           /* projected corners, texel coordinates */
    bool has_matrix;
} rvi_occluder;

/* An occluder as declared: the box, and its matrix's index in rv_occlusion.matrices
 * (-1: identity). */
typedef struct rvi_occ_input {
    float min[3], max[3];
    int32_t matrix;
} rvi_occ_input;

/* A box seen through the float object test: the touched texel rectangle (inclusive,
 * clamped to the buffer) and the nearness of its nearest point, rounded nearer. */
typedef struct rvi_occ_footprint {
    int32_t x0, y0, x1, y1;
    float nearness;
    int32_t on;  /* RVI_OCC_ON: usable; RVI_OCC_AWAY: wholly off screen (beyond the near
                    plane); 0: crosses the near plane, degenerate or not finite */
} rvi_occ_footprint;

#define RVI_OCC_ON 1
#define RVI_OCC_AWAY 2

typedef enum rvi_occ_state {
    RVI_OCC_NO_VIEW = 0, /* no successful begin this frame: adds refused, tests visible */
    RVI_OCC_OPEN,        /* accepting occluders */
    RVI_OCC_FROZEN       /* rasterised; tests read the pyramid */
} rvi_occ_state;

struct rv_occlusion {
    rvi_heap own_heap;
    rvi_heap *heap;          /* own_heap, or a world's heap (rvi_occlusion_create_in) */
    rv_occlusion_desc desc;  /* resolved: defaults applied */
    rvi_occ_state state;
    uint32_t width, height;
    uint32_t level_count;
    uint32_t level_w[RV_OCCLUSION_MAX_LEVELS], level_h[RV_OCCLUSION_MAX_LEVELS];
    size_t level_offset[RV_OCCLUSION_MAX_LEVELS];
    float *texels;           /* every level, level 0 first; nearness, -FLT_MAX = empty */
    size_t texel_capacity;
    double *row_scratch;     /* 2 * height doubles for the rasteriser's row bounds */
    size_t row_capacity;
    int32_t *row_spans;      /* 2 * height ints: the rows' texel spans */
    size_t span_capacity;
    rvi_vec inputs;          /* rvi_occ_input: this frame's occluders, as declared */
    rvi_vec matrices;        /* float[16] of the occluders that came with a matrix */
    rvi_vec footprints;      /* rvi_occ_footprint per occluder (freeze scratch) */
    rvi_vec order;           /* uint64_t per occluder (freeze scratch: sort keys) */
    rvi_occ_view view;
    rv_occlusion_stats stats;
    bool wide;               /* the CPU runs the 8-lane (AVX2) test kernel */
    /* The depth feed (occlusion_feed.c): NULL without a feed capacity. feed_applied is set
     * by the freeze when a feed was merged into this frame's buffer. */
    struct rvi_occ_feed *feed;
    bool feed_applied;
};

static inline bool rvi_occ_affine_ok(const float *m)
{
    return m[3] == 0 && m[7] == 0 && m[11] == 0 && m[15] == 1;
}

/* The checks of one box argument: RV_ERR_NOT_FINITE, RV_ERR_INVALID_ARG or RV_OK. */
static inline rv_result rvi_occ_check_box(const float min[3], const float max[3], const float *matrix)
{
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3) || (matrix && !rvi_finite_n(matrix, 16)))
        return RV_ERR_NOT_FINITE;
    if (min[0] > max[0] || min[1] > max[1] || min[2] > max[2] || (matrix && !rvi_occ_affine_ok(matrix)))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

/* True when every level-0 texel of [x0, x1] x [y0, y1] (inclusive, inside the buffer)
 * holds a nearness strictly above v. */
bool rvi_occ_flat_hidden(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v);

/* Creates a buffer whose allocations go through heap (borrowed; it must outlive the
 * buffer), so a world's counters stay true. Same checks as rv_occlusion_create. */
rv_result rvi_occlusion_create_in(rvi_heap *heap, const rv_occlusion_desc *desc, rv_occlusion **out);

/* The world's main-view buffer, created on first use from world->desc.occlusion with the
 * world's heap (registered as RVI_MODULE_OCCLUSION; rv_world_destroy frees it). Width 0
 * gives a buffer whose calls are all no-ops. Errors: RV_ERR_INVALID_ARG,
 * RV_ERR_NOT_FINITE (a bad desc), RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_occlusion_of_world(rv_world *world, rv_occlusion **out);

/* True when the buffer has width > 0 and a view this frame (tests can cull). */
static inline bool rvi_occlusion_active(const rv_occlusion *occ)
{
    return occ && occ->width > 0 && occ->state != RVI_OCC_NO_VIEW;
}

/* Fast tests for frame.c's walk: no argument checks (bounds a world validated already);
 * non-finite values still answer visible. Freeze the buffer first (rv_occlusion_freeze).
 * True = draw. matrix may be NULL (identity). Counted in the stats. */
bool rvi_occlusion_box_visible(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix);
bool rvi_occlusion_sphere_visible(rv_occlusion *occ, const float center[3], float radius, const float *matrix);

/* rv_occlusion_test_boxes for world-space boxes (boxes->matrices ignored), answered with
 * the pyramid (use_pyramid) or texel by texel from level 0 alone: the benchmark's
 * baseline, otherwise identical. Counted in the stats. */
rv_result rvi_occlusion_test_world_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first,
                                         uint32_t count, uint8_t *out_visible, bool use_pyramid);

/* ---- object tests (occlusion_test.c, occlusion_batch.c) ---------------------------------- */

static inline uint32_t rvi_bit_length(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return x ? 32u - (uint32_t)__builtin_clz(x) : 0u;
#else
    uint32_t n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
#endif
}

/* Refines a lookup whose texels at level k failed (descends only into failing texels). */
bool rvi_occ_hz_refine(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v, uint32_t k);

/* The pyramid as the lookups need it, copied once per batch into a local (so that the
 * output byte stores cannot make the compiler reload it). */
typedef struct rvi_hz_levels {
    const float *level[RV_OCCLUSION_MAX_LEVELS];
    size_t width[RV_OCCLUSION_MAX_LEVELS];
    int32_t offset32[16], width32[16]; /* the same as indices, for the AVX2 gathers */
    uint32_t top;
} rvi_hz_levels;

static inline rvi_hz_levels rvi_hz_levels_of(const rv_occlusion *occ)
{
    rvi_hz_levels h;
    memset(h.offset32, 0, sizeof h.offset32);
    memset(h.width32, 0, sizeof h.width32);
    for (uint32_t l = 0; l < occ->level_count; l++) {
        h.level[l] = occ->texels + occ->level_offset[l];
        h.width[l] = occ->level_w[l];
        h.offset32[l] = (int32_t)occ->level_offset[l]; /* < 2^31: at most 4/3 of 8192^2 */
        h.width32[l] = (int32_t)occ->level_w[l];
    }
    h.top = occ->level_count - 1;
    return h;
}

/* True when every texel of [x0, x1] x [y0, y1] (level 0, inclusive) is strictly nearer
 * than v: at most four reads at the level where the rectangle spans 2 x 2 texels. */
static inline bool rvi_occ_hz_hidden(const rv_occlusion *occ, const rvi_hz_levels *h, int32_t x0, int32_t y0, int32_t x1,
                             int32_t y1, float v)
{
    /* The finest level where both spans touch at most two texels: a span of d texel steps
     * does at level k whenever d <= 2^k. */
    int32_t dx = x1 - x0 - 1, dy = y1 - y0 - 1;
    uint32_t k = rvi_bit_length((uint32_t)(dx > 0 ? dx : 0) | (uint32_t)(dy > 0 ? dy : 0));
    k = k < h->top ? k : h->top;
    const float *lv = h->level[k];
    size_t lw = h->width[k];
    const float *r0 = lv + (size_t)(y0 >> k) * lw, *r1 = lv + (size_t)(y1 >> k) * lw;
    int32_t ax = x0 >> k, bx = x1 >> k;
    float m0 = r0[ax] < r0[bx] ? r0[ax] : r0[bx], m1 = r1[ax] < r1[bx] ? r1[ax] : r1[bx];
    if ((m0 < m1 ? m0 : m1) > v)
        return true;
    return k > 0 && rvi_occ_hz_refine(occ, x0, y0, x1, y1, v, k);
}

/* A box (matrix NULL = world space) through the float test: rect and nearest nearness;
 * returns RVI_OCC_ON, RVI_OCC_AWAY or 0 (as rvi_occ_footprint.on). */
int32_t rvi_occ_footprint_box(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                              rvi_occ_footprint *fp);
/* A world box through lane 0 of the batch kernel: exactly the batch's answer. */
int32_t rvi_occ_footprint_world_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                    rvi_occ_footprint *fp);
/* False when tests must answer visible (width 0, no view); freezes an open buffer. */
bool rvi_occ_ready(rv_occlusion *occ);
/* Common checks of the batch tests; *active false: out[first .. first + count) set to 1. */
rv_result rvi_occ_batch_prologue(rv_occlusion *occ, uint32_t first, uint32_t count, uint8_t *out, bool *active);

/* True when this CPU runs the AVX2 build of the batch test kernel (x86 with AVX2). */
bool rvi_occ_cpu_wide(void);

/* Footprints of count declared occluders through the float object test (8 lanes at a
 * time for those without a matrix): the freeze's sort keys and hidden test. */
void rvi_occ_footprints(const rv_occlusion *occ, const rvi_occ_input *in, uint32_t count, const float *matrices,
                        rvi_occ_footprint *out);

/* Raster side (occlusion_raster.c). */
/* Derives the view from a view-projection (the host's float matrix, or the double product
 * rv_frame forms from the host's view and projection); false when it is unusable (not
 * invertible, w <= 0). */
bool rvi_occ_view_init(rvi_occ_view *view, const double view_projection[16], rv_clip clip, uint32_t width,
                       uint32_t height);

/* rv_occlusion_begin with the view-projection in double: rv_frame's view + projection form
 * passes its double product, so the buffer sees the eye where the host's matrices put it
 * (rounded to float, a view-projection moves an eye 1e5 units out by millimetres, enough
 * to shift the outline of an occluder a few centimetres from the eye by degrees). occ
 * non-NULL; otherwise as rv_occlusion_begin. */
rv_result rvi_occlusion_begin_d(rv_occlusion *occ, const double view_projection[16], rv_clip clip, float aspect);

typedef enum rvi_occ_prepare {
    RVI_OCC_PREPARED = 0,
    RVI_OCC_SMALL,
    RVI_OCC_OFFSCREEN,
    RVI_OCC_DEGENERATE
} rvi_occ_prepare;
/* Projects one occluder box (matrix NULL = identity; inputs valid) and bounds it on
 * screen; a box crossing the near plane is clipped and finished at once. */
rvi_occ_prepare rvi_occ_prepare_box(const rvi_occ_view *view, const float min[3], const float max[3],
                                    const float *matrix, float min_texels, rvi_occluder *out);
/* Derives coverage edges and back-face planes; false when no whole texel is covered. */
bool rvi_occ_finish(const rvi_occ_view *view, rvi_occluder *occ);
/* Writes the occluder's conservative nearness into level 0 (max with what is there).
 * scratch holds 2 * height doubles, spans 2 * height ints; wide picks the AVX2 build. */
void rvi_occ_rasterize(const rvi_occluder *occ, float *texels, uint32_t width, double *scratch, int32_t *spans,
                       bool wide);

/* The refined object test. A ray meets a convex box first where it crosses the last of
 * the box's front-face planes, so in any texel the box is no nearer than the smallest of
 * its front-face planes' nearness maxima over that texel; and (perspective) the box's image
 * lies inside the hull of its projected corners. */
typedef struct rvi_occ_box_bound {
    /* plane[k] = (a, b, c): the box's nearness <= a * ix + (b * iy + c) anywhere in texel
     * (ix, iy) for front face k (texel-corner maximum and float error folded in); faces
     * seen nearly edge-on are left out, which only raises the bound. */
    uint32_t plane_count;
    float plane[RVI_OCC_MAX_PLANES][3];
    /* edge[k] = (A, B, C): texel (ix, iy) may meet the box's image only when
     * A * ix + B * iy + C >= 0 for every k (corner and margin folded in). 0 edges: any. */
    uint32_t edge_count;
    double edge[8][3];
} rvi_occ_box_bound;
/* The bounds above for a box (matrix NULL = identity; inputs valid); both counts 0 when
 * nothing could be bounded safely. */
void rvi_occ_box_bound_make(const rvi_occ_view *view, const float min[3], const float max[3], const float *matrix,
                            rvi_occ_box_bound *out);
/* A box whose rectangle test found a texel not nearer than its nearest point: true when
 * every texel of fp's rectangle is still strictly nearer than the box's per-texel bound
 * (rvi_occ_box_bound_make, capped by fp->nearness); texels the box's image cannot meet
 * are skipped. */
bool rvi_occ_box_refined_hidden(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                                const rvi_occ_footprint *fp);

/* Reserves room for occluders more add_occluder calls this frame, with_matrix of them with
 * a matrix, so that a frame with more occluders than any before allocates once, up front
 * (the frame reserves its persistent occluders: steady frames then allocate nothing).
 * RV_OK (also when occlusion is off), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_occlusion_reserve(rv_occlusion *occ, uint32_t occluders, uint32_t with_matrix);

/* Validates a desc as creation would (defaults applied), creating nothing. */
rv_result rvi_occlusion_check_desc(const rv_occlusion_desc *desc);

/* ---- the depth feed (occlusion_feed*.c, internals in occlusion_feed.h) --------------------
 * The buffer calls these at creation, destruction, begin and freeze; the tests report the
 * objects they hide so that those hidden by the feed alone are counted. */

typedef struct rvi_occ_feed rvi_occ_feed;

/* Checks and resolves the feed fields of a desc (defaults applied). */
rv_result rvi_occ_feed_resolve_desc(rv_occlusion_desc *desc);
/* Allocates the feed's source side (desc.feed_max_width x feed_max_height); no-op without
 * a capacity. RV_OK or RV_ERR_OUT_OF_MEMORY (nothing kept). */
rv_result rvi_occ_feed_create(rv_occlusion *occ);
void rvi_occ_feed_destroy(rv_occlusion *occ);
/* A new frame: forgets the previous frame's feed and its counters. */
void rvi_occ_feed_begin(rv_occlusion *occ);
/* At the freeze, after the occluders are drawn into level 0 and before the pyramid is
 * built: keeps a copy of the occluders' level 0 and raises each texel to the feed's depth
 * where that is nearer (max of the two nearness proofs). Sets occ->feed_applied. */
void rvi_occ_feed_apply(rv_occlusion *occ);
/* A test answered hidden (fp as the test used it): counts it when this frame's occluders
 * alone would not hide it. Boxes with box = true (min, max, matrix as tested; the refined
 * test runs too), spheres through their rectangle (min, max, matrix unused). */
void rvi_occ_feed_note_hidden(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                              const rvi_occ_footprint *fp, bool box);
/* The same split for tests running on several threads at once (the frame's workers):
 * rvi_occ_feed_prepare once after the freeze on the calling thread (builds the occluders'
 * own pyramid when a feed was applied); then rvi_occ_feed_hidden_alone, read-only, says
 * whether the occluders alone hide a test answered hidden; rvi_occ_feed_add_hidden adds
 * the workers' counts of those they did not. */
void rvi_occ_feed_prepare(rv_occlusion *occ);
bool rvi_occ_feed_hidden_alone(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                               const rvi_occ_footprint *fp, bool box);
void rvi_occ_feed_add_hidden(rv_occlusion *occ, uint64_t objects);

#endif
