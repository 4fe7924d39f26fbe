/* Object tests of the occlusion buffer (docs/occlusion.md, "Finer than a texel"): the quick
 * point looks, the pyramid lookups, boxes' footprints through the float test, the
 * eight-lane look and footprint kernels, and the refined box test with its per-texel
 * bounds.
 *   occlusion_test.c     single tests, footprints, the refined test
 *   occlusion_batch.c    rv_occlusion_test_boxes' batch kernel
 *   occlusion_lanes.c    the eight-lane look and footprint
 *   occlusion_box_image.c  the part in view of a box reaching before the near plane
 *   occlusion_texel.c, occlusion_union.c  a texel's pieces against a box
 * Included by those files, the freeze (its footprints and hidden test), the frame's
 * object passes and the tests and benchmark of the object tests. */
#ifndef RVI_OCCLUSION_TEST_H
#define RVI_OCCLUSION_TEST_H

#include "occlusion.h"

/* ---- point looks ------------------------------------------------------------------------- */

/* The quick look below gives up (calls the point not seen) past this many pieces partly
 * covering its texel, and counts a point within this distance (texel units) of a piece as
 * held by it. */
#define RVI_OCC_POINT_LOOKS 16u
#define RVI_OCC_POINT_SLACK 1e-3

/* rvi_occ_seen_at's look once the point is placed: (tx, ty) inside the buffer (texel
 * units), nearness its depth there. */
static inline bool rvi_occ_seen_texel(const rv_occlusion *occ, float tx, float ty, float nearness)
{
    const rvi_occ_view *v = &occ->view;
    size_t t = (size_t)(int32_t)ty * occ->width + (size_t)(int32_t)tx;
    /* With the pixel grid known, a point level with what is drawn there (a corner it shares
     * with a hider) is no sign that the box is seen: the sampled look decides. */
    float tie = occ->sample_step[0] > 0 ? nearness * (1.0f - 1e-4f) : nearness;
    if (!(occ->texels[t] <= tie))
        return false;
    /* The texel's pieces may still hide the point where they are (rvi_occ_texel_hides_box):
     * the one that wholly covers it, by its planes, or one that partly covers it and holds
     * the point. The look is in float: it may only call a point seen that the exact tests
     * would hide (a lost cull), never the other way. */
    const rvi_occ_fusion *fu = &occ->fusion;
    if (!occ->desc.fine_tests || !fu->owner || !v->perspective)
        return true;
    const rvi_occ_piece *own = rvi_occ_owner(fu, t);
    uint32_t looked = 0;
    if (own && rvi_occ_piece_nearness_at(own, tx, ty) > tie)
        return false;
    for (uint32_t k = fu->head[t]; k; k = fu->note_next[k - 1]) {
        const rvi_occ_piece *q = &fu->pieces[fu->note_piece[k - 1]];
        if (++looked > RVI_OCC_POINT_LOOKS)
            return false;
        if (rvi_occ_piece_nearness_at(q, tx, ty) <= tie)
            continue;
        bool holds = true;
        for (uint32_t e = 0; e < q->edge_count && holds; e++) {
            const rvi_occ_edge *g = &fu->edges[q->first_edge + e];
            holds = g->side * (g->line[0] * tx + g->line[1] * ty + g->line[2]) >= -RVI_OCC_POINT_SLACK;
        }
        if (holds)
            return false;
    }
    return true;
}

/* rvi_occ_point_seen's look for a point already through the view's test rows: xb, yb and qb
 * are its texel x, texel y and q rows (before the perspective divide). */
static inline bool rvi_occ_seen_at(const rv_occlusion *occ, float xb, float yb, float qb, float x0, float y0,
                                   float x1, float y1)
{
    const rvi_occ_view *v = &occ->view;
    float tx = xb, ty = yb, nearness = qb;
    if (v->perspective) {
        if (!(qb > 0))
            return false;
        tx = xb / qb;
        ty = yb / qb;
        nearness = 1.0f / qb;
    }
    if (!(tx >= x0 && tx < x1 && ty >= y0 && ty < y1))
        return false;
    return rvi_occ_seen_texel(occ, tx, ty, nearness);
}

/* A cheap look for tests that mostly answer "visible": true when world point p projects
 * inside [x0, x1) x [y0, y1) (texel units), the level-0 texel there holds nothing nearer
 * than p, and no piece drawn there is nearer at p. A point of an object seen there means
 * not every texel the object touches hides it, so the object is not hidden. False (no answer) when p is behind the eye or
 * outside the window. Only ever answers "seen" (the safe side): float error costs
 * precision at worst, never a wrong cull. */
static inline bool rvi_occ_point_seen(const rv_occlusion *occ, const float p[3], float x0, float y0, float x1,
                                      float y1)
{
    const rvi_occ_view *v = &occ->view;
    float o[3] = { p[0] - v->ref[0], p[1] - v->ref[1], p[2] - v->ref[2] };
    const float(*r)[4] = v->rows;
    float xb = r[0][0] * o[0] + r[0][1] * o[1] + r[0][2] * o[2] + r[0][3];
    float yb = r[1][0] * o[0] + r[1][1] * o[1] + r[1][2] * o[2] + r[1][3];
    float qb = r[3][0] * o[0] + r[3][1] * o[1] + r[3][2] * o[2] + r[3][3];
    return rvi_occ_seen_at(occ, xb, yb, qb, x0, y0, x1, y1);
}

/* ---- object tests (occlusion_test.c, occlusion_batch.c) ---------------------------------- */

/* Refines a lookup whose texels at level k failed (descends only into failing texels). */
bool rvi_occ_hz_refine(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v, uint32_t k);

/* The pyramid as the lookups need it, copied once per batch into a local (so that the
 * output byte stores cannot make the compiler reload it). */
typedef struct rvi_hz_levels {
    const float *level[RV_OCCLUSION_MAX_LEVELS];
    size_t width[RV_OCCLUSION_MAX_LEVELS];
    int32_t offset32[16], width32[16]; /* the same as indices, for the AVX2 lookups */
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

/* The finest level (at most top) where both spans of [x0, x1] x [y0, y1] touch at most two
 * texels: a span of d texel steps does at level k whenever d <= 2^k. */
static inline uint32_t rvi_occ_hz_level(int32_t x0, int32_t y0, int32_t x1, int32_t y1, uint32_t top)
{
    int32_t dx = x1 - x0 - 1, dy = y1 - y0 - 1;
    uint32_t k = rvi_bit_length((uint32_t)(dx > 0 ? dx : 0) | (uint32_t)(dy > 0 ? dy : 0));
    return k < top ? k : top;
}

/* rvi_occ_hz_hidden's look at level k (lv, lw texels a row): the four texels the rectangle
 * meets there, then the refinement where they fail. */
static inline bool rvi_occ_hz_look(const rv_occlusion *occ, const float *lv, size_t lw, uint32_t k, int32_t x0,
                                   int32_t y0, int32_t x1, int32_t y1, float v)
{
    const float *r0 = lv + (size_t)(y0 >> k) * lw, *r1 = lv + (size_t)(y1 >> k) * lw;
    int32_t ax = x0 >> k, bx = x1 >> k;
    float m0 = r0[ax] < r0[bx] ? r0[ax] : r0[bx], m1 = r1[ax] < r1[bx] ? r1[ax] : r1[bx];
    if ((m0 < m1 ? m0 : m1) > v)
        return true;
    return k > 0 && rvi_occ_hz_refine(occ, x0, y0, x1, y1, v, k);
}

/* True when every texel of [x0, x1] x [y0, y1] (level 0, inclusive) is strictly nearer
 * than v: at most four reads at the level where the rectangle spans 2 x 2 texels. */
static inline bool rvi_occ_hz_hidden(const rv_occlusion *occ, const rvi_hz_levels *h, int32_t x0, int32_t y0, int32_t x1,
                                     int32_t y1, float v)
{
    uint32_t k = rvi_occ_hz_level(x0, y0, x1, y1, h->top);
    return rvi_occ_hz_look(occ, h->level[k], h->width[k], k, x0, y0, x1, y1, v);
}

/* A box (matrix NULL = world space) through the float test: rect and nearest nearness;
 * returns RVI_OCC_ON, RVI_OCC_AWAY or 0 (as rvi_occ_footprint.on). */
int32_t rvi_occ_footprint_box(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                              rvi_occ_footprint *fp);
/* rvi_occ_footprint_box after a first look at the box's centre: 0 (visible) when the
 * centre is seen (rvi_occ_point_seen anywhere on the buffer), else the footprint's answer.
 * The look reuses the footprint's terms, so it costs little beside it. */
int32_t rvi_occ_box_look(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                         rvi_occ_footprint *fp);
/* clamp_rect for the vectorised kernels, branch-free: the rectangle (already widened by its
 * margin) clamped to the buffer (fw x fh texels) into x0..y1, and the lane's answer:
 * RVI_OCC_ON, RVI_OCC_AWAY (off screen) or 0 (ok false, or nearness not finite). The
 * bounds are clamped at 0 before converting, which also turns NaN into 0, so the
 * conversions stay defined for every lane. */
static RVI_ALWAYS_INLINE int32_t rvi_occ_lane_rect(float fw, float fh, float xmin, float ymin, float xmax, float ymax,
                                                   float nearness, int32_t ok, int32_t *x0, int32_t *y0, int32_t *x1,
                                                   int32_t *y1)
{
    ok &= (nearness < FLT_MAX) & (nearness > -FLT_MAX);
    int32_t seen = (xmax >= 0) & (xmin <= fw) & (ymax >= 0) & (ymin <= fh);
    xmin = xmin > 0 ? xmin : 0;
    ymin = ymin > 0 ? ymin : 0;
    xmax = xmax > 0 ? xmax : 0;
    ymax = ymax > 0 ? ymax : 0;
    *x0 = (int32_t)(xmin < fw - 1 ? xmin : fw - 1);
    *y0 = (int32_t)(ymin < fh - 1 ? ymin : fh - 1);
    *x1 = (int32_t)(xmax < fw - 1 ? xmax : fw - 1);
    *y1 = (int32_t)(ymax < fh - 1 ? ymax : fh - 1);
    return ok * (2 - seen);
}

/* Whether the frame and the freeze use the eight-lane look and footprint below. Their
 * expressions round exactly as the one-at-a-time test's only where float arithmetic is
 * evaluated in float (FLT_EVAL_METHOD 0; x87 code keeps excess precision): elsewhere
 * every box goes through the one-at-a-time test. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define RVI_OCC_LANES 1
#else
#define RVI_OCC_LANES 0
#endif

/* Eight boxes for the vectorised look and footprint: lane j is the box lo..hi (columns
 * [.][j]) under the affine matrix whose first three rows are m[3c + i][j] (element 4c + i of
 * the column-major matrix). Lanes past the ones asked about must still hold some box (their
 * answers are dropped). */
typedef struct rvi_occ_lanes {
    float m[12][8];
    float lo[3][8], hi[3][8];
} rvi_occ_lanes;

/* Lane j := the box min..max under m (NULL = world space). */
void rvi_occ_lanes_set(rvi_occ_lanes *l, uint32_t j, const float min[3], const float max[3], const float *m);
/* Lanes 0..7 := boxes 0..n - 1 as rvi_occ_lanes_set makes each (1 <= n <= 8; the rest repeat the last). */
void rvi_occ_lanes_set_all(const rv_occlusion *occ, rvi_occ_lanes *l, uint32_t n, const float *const min[],
                           const float *const max[], const float *const m[]);
/* The look at the centres of lanes 0 .. n - 1 (n <= 8): bit j set when lane j's centre is
 * seen, where rvi_occ_box_look answers 0 (visible) before making the footprint. */
uint32_t rvi_occ_lanes_look(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t n);
/* fp[j] for the lanes whose bit is set in need (lanes 0 .. 7): exactly
 * rvi_occ_footprint_box's answer for each; the others' fp untouched. Lanes that are not
 * finite or reach before the near plane go through it one by one. */
void rvi_occ_lanes_footprint(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t need, rvi_occ_footprint fp[]);
/* Both at once, in one pass over the lanes: the looks' bits, and fp[j] for the lanes not seen. */
uint32_t rvi_occ_lanes_look_footprint(const rv_occlusion *occ, const rvi_occ_lanes *l, uint32_t n,
                                      rvi_occ_footprint fp[]);
/* rvi_occ_box_look for n boxes at once (1 <= n <= 8; box j is min[j]..max[j] under m[j],
 * NULL = world space), through the two above: fp[j] is exactly what rvi_occ_box_look gives
 * box j (fp[j].on its result). */
void rvi_occ_box_look_batch(const rv_occlusion *occ, uint32_t n, const float *const min[], const float *const max[],
                            const float *const m[], rvi_occ_footprint fp[]);
/* The footprint of the part in view of a box reaching before the near plane, from its
 * test rows (project_box's b, d0..d2 and dist; perspective only): RVI_OCC_ON with rect
 * (x0, y0, x1, y1, texel units, rounded outward, not yet clamped to the buffer) and the
 * part's nearest nearness, RVI_OCC_AWAY when no part is in view, 0 when there is no answer
 * (the part reaches the near plane, or cannot be bounded): visible. occlusion_box_image.c. */
int32_t rvi_occ_part_in_view(const rv_occlusion *occ, const float b[4], const float d0[4], const float d1[4],
                             const float d2[4], float dist, float rect[4], float *nearness);
/* A world box through lane 0 of the batch kernel: exactly the batch's answer. */
int32_t rvi_occ_footprint_world_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                    rvi_occ_footprint *fp);
/* False when tests must answer visible (width 0, no view); freezes an open buffer. */
bool rvi_occ_ready(rv_occlusion *occ);

/* True when the frozen buffer can hide nothing: no piece drawn (so no texel partly covered
 * for the finer tests either), no texel covered and no depth feed. */
static inline bool rvi_occ_nothing_drawn(const rv_occlusion *occ)
{
    return occ->state == RVI_OCC_FROZEN && occ->stats.pieces == 0 && occ->stats.texels_covered == 0 &&
           !occ->feed_applied;
}

/* A batch of boxes against a buffer that hides nothing (rvi_occ_nothing_drawn): every item
 * answered 1, counted as tested, and only checked (the code of the first invalid one, as
 * the batch test returns it). */
rv_result rvi_occ_boxes_unhidden(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first, uint32_t count,
                                 uint8_t *out_visible);
/* Common checks of the batch tests; *active false: out[first .. first + count) set to 1. */
rv_result rvi_occ_batch_prologue(rv_occlusion *occ, uint32_t first, uint32_t count, uint8_t *out, bool *active);

/* 1 when this CPU runs the AVX2 builds of the hot loops, 2 when it also runs AVX-512VL
 * (the batch kernel's build with 32 vector registers), else 0. */
uint32_t rvi_occ_cpu_wide(void);

/* Footprints of count declared occluders through the float object test (8 lanes at a
 * time for those without a matrix): the freeze's sort keys and hidden test. */
void rvi_occ_footprints(const rv_occlusion *occ, const rvi_occ_input *in, uint32_t count, const float *matrices,
                        rvi_occ_footprint *out);

/* ---- the refined object test (occlusion_test.c, occlusion_texel.c, occlusion_union.c) ----- */

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
    /* The same lines without the corner: a point (x, y) in texel units may lie in the image
     * only when A * x + B * y + C >= 0 for every k (margin folded in). */
    double image[8][3];
    /* The texels the image's bounding rectangle (margin included) meets, inclusive: no
     * other texel meets the image. Unbounded when there are no edges. */
    int32_t ix0, iy0, ix1, iy1;
    /* That rectangle's corners (texel units; valid when edge_count > 0), and a nearness
     * never above the box's anywhere (its farthest corner's, rounded farther; 0 when not
     * known): a piece no nearer than it anywhere cannot be nearer than the box. */
    double rect[4][2];
    double far;
    /* The last piece the whole rectangle was tried against (rvi_occ_texel_hides_box), and
     * whether it was nearer over all of it. */
    const void *tried;
    bool tried_nearer;
} rvi_occ_box_bound;
/* The bounds above for a box (matrix NULL = identity; inputs valid); both counts 0 when
 * nothing could be bounded safely. */
void rvi_occ_box_bound_make(const rvi_occ_view *view, const float min[3], const float max[3], const float *matrix,
                            rvi_occ_box_bound *out);
/* Texel (x, y) does not hide the box of bb on its own (its nearness is not above bound, the
 * box's largest there): true when it hides the box anyway, looking at the part of the texel
 * the box's image may meet: the piece that wholly covers the texel is strictly nearer there
 * by its planes, or one of the pieces that partly cover it holds all of that part and is
 * strictly nearer there. nearness: the box's nearest point. Reads the buffer only (the
 * tests run on workers at once); remembers in bb the last covering piece it tried over the
 * image's whole rectangle. Perspective views only (false otherwise): an orthographic view's depth
 * comes from the projection's z row, whose bits differ between depth conventions, and
 * these comparisons are far closer than a texel's; in perspective every quantity comes
 * from rows x, y and w, so every convention gives the same verdicts. */
bool rvi_occ_texel_hides_box(const rv_occlusion *occ, rvi_occ_box_bound *bb, float nearness, int32_t x, int32_t y,
                             float bound);
/* A box whose rectangle test found a texel not nearer than its nearest point: true when
 * every texel of fp's rectangle is still strictly nearer than the box's per-texel bound
 * (rvi_occ_box_bound_make, capped by fp->nearness); texels the box's image cannot meet
 * are skipped. */
bool rvi_occ_box_refined_hidden(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                                const rvi_occ_footprint *fp);
/* The texels of row y in [x0, x1] that may meet bb's image (every edge's test holds) form
 * one run, [*lo, *hi] (empty when *lo > *hi); false when an edge cannot be evaluated safely. */
bool rvi_occ_box_row_run(const rvi_occ_box_bound *bb, int32_t y, int32_t x0, int32_t x1, int32_t *lo, int32_t *hi);

#endif
