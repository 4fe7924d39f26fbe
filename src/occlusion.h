/* Occlusion buffer internals (docs/design.md §4): the view a frame is built for, the
 * occluders as declared (boxes, convex solids, meshes), the buffer itself, the object
 * tests, the calls that make occluders into pieces, and the entry points frame.c uses on
 * the world's main-view buffer. What a piece is and how it is drawn (pieces, drafts,
 * fusion, the inner raster) is in occlusion_draw.h, which this header includes.
 *   occlusion.c          lifecycle, begin, add_occluder, reserve, stats, debug images
 *   occlusion_freeze.c   the freeze: items, order, hidden skip, drawing, pyramid
 *   occlusion_view.c     the view, plane nearness, screen lines of planes and segments
 *   occlusion_prepare.c  a convex polytope (box or convex solid) as a piece
 *   occlusion_convex.c   convex occluders: validation, corners and edges from planes
 *   occlusion_mesh.c     mesh occluders: validation, copies, triangles as pieces
 *   occlusion_tiles.c    the freeze's per-tile lower bounds and its hidden-item test
 *   occlusion_feed_hooks.h  the buffer's calls into the depth feed (included at the end)
 *   occlusion_test.c, occlusion_batch.c, occlusion_lanes.c, occlusion_texel.c  object tests
 *
 * Included by every occlusion*.c (the feed's through occlusion_feed.h), by the frame files
 * (frame.h, frame.c, frame_cull.c, frame_nodes.c, frame_state.c), world.c, and the
 * occlusion tests and benchmark.
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
#include "core/inline.h"
#include "core/vec.h"
#include "occlusion_draw.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The hot loops are plain C written for the compiler to vectorise; on x86 with GCC or
 * Clang an AVX2 build of the same source is also compiled and picked at run time
 * (rv_occlusion.wide). Both give identical results: the same operations in the same order,
 * none fused into a multiply-add (the build passes -ffp-contract=off; occlusion_batch.c and
 * occlusion_lanes.c, whose paths must agree bit for bit, also say so themselves through
 * core/no_contract.h). */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define RVI_OCC_X86_WIDE 1
#define RVI_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define RVI_OCC_X86_WIDE 0
#endif

#define RVI_OCC_MAX_COORD 1e7  /* world units: occluders reaching further are skipped */
#define RVI_OCC_F_EPS (1.0 / 16777216.0) /* float unit roundoff, 2^-24 */

/* The view of one frame, derived once by rv_occlusion_begin. */
typedef struct rvi_occ_view {
    bool perspective;
    double sigma;          /* orthographic: +1 when NDC z grows with depth, -1 reversed */
    double vp[16];         /* column-major, as given (orthographic: scaled so w = 1) */
    double a_inv[9];       /* inverse of the xyz parts of rows x, y and w (perspective) or z
                              (orthographic), row-major: maps (x, y, w) or (x, y, z) back */
    double near_row[4];    /* near(p) = near_row . (p, 1) >= 0 in front of the near plane */
    double clip_row[4];    /* occluders are clipped to clip_row . (p, 1) >= 0: on screen, never
                              nearer than the near plane, and the same under every convention
                              when the near plane is parallel to the image (rvi_occ_view_init) */
    double eye[4];         /* homogeneous eye (w > 0), or the direction toward the viewer (w = 0) */
    double near_lo[3], near_hi[3]; /* box around the near plane's part in view (the rectangle
                              the GPU clips at), widened by its rounding; +-infinity when it
                              cannot be placed */
    double texels_w, texels_h;
    /* Object tests, in floats: four rows (texel x, texel y, near, q), each xyz + the value
     * at ref, applied to (p - ref). q is w (perspective) or nearness (orthographic). The
     * err_* pairs bound the float error of a row at distance D (L1) from ref:
     * |error| <= err_mul * D + err_add. */
    float ref[3];
    float rows[4][4];
    float cols[4][4];          /* rows transposed: cols[j][r] = rows[r][j] */
    float err_mul[4], err_add[4];
    float rect_mul, rect_add;  /* texel margin of the screen rectangle: (rect_mul * D + rect_add) * nearness */
} rvi_occ_view;

/* True when a solid inside the world box lo..hi may meet the near plane's part in view:
 * where the GPU clips the solid's near faces there, its inside shows (from inside, its back
 * faces are culled), so its far side hides nothing that frame. */
bool rvi_occ_near_cut(const rvi_occ_view *v, const double lo[3], const double hi[3]);

/* Largest float not above x (|x| < FLT_MAX). */
float rvi_occ_f_down(double x);

/* ---- occluders as declared --------------------------------------------------------------- */

typedef enum rvi_occ_kind { RVI_OCC_BOX = 0, RVI_OCC_CONVEX, RVI_OCC_MESH } rvi_occ_kind;

/* An occluder as declared: the box (or a convex solid's or mesh's local bounds), its
 * matrix's index in rv_occlusion.matrices (-1: identity), and for the other shapes their
 * entry in rv_occlusion.shapes. */
typedef struct rvi_occ_input {
    float min[3], max[3];
    int32_t matrix;
    uint8_t kind;            /* rvi_occ_kind */
    uint8_t flags;           /* RV_OCCLUDER_* */
    uint32_t shape;
} rvi_occ_input;

/* A convex solid, as built by rvi_occ_convex_build: its planes as given (n . p <= d, in
 * double), its corners (each the intersection of three planes, computed from them in a
 * canonical order, so solids sharing planes share corners bit for bit) and its edges
 * (corner, corner, face, face). A box's is implied by its min and max. Laid out as one
 * block: this header, then planes, corners and edges (uint8_t[4] each). */
typedef struct rvi_occ_convex_data {
    uint32_t plane_count, vertex_count, edge_count, flags;
    float bounds_min[3], bounds_max[3];
    uint32_t triangle_count, degenerate_count; /* a closed convex mesh's (RVI_OCC_FROM_MESH) */
} rvi_occ_convex_data;

/* Internal flag of a convex block made from a closed convex mesh: its outline edges take
 * their screen lines from their end points, like the mesh's triangles would. */
#define RVI_OCC_FROM_MESH (1u << 8)
/* Internal flag of a node's mesh block: a closed mesh found not to bound a convex solid
 * when set (the freeze does not look again). */
#define RVI_OCC_NOT_CONVEX (1u << 9)
/* Internal flag of a mesh input (rvi_occ_input.flags, beside RV_OCCLUDER_*): its matrix
 * mirrors (a negative determinant reverses the world winding of the host's triangles, so a
 * closed mesh's far side is then its front-facing triangles). */
#define RVI_OCC_INPUT_MIRRORED (1u << 6)

/* A mesh, as copied by rv_occlusion_add_mesh or a node: only triangles with area. Laid
 * out as one block: this header, positions (float[3]), indices (uint32_t[3] each). */
typedef struct rvi_occ_mesh_data {
    uint32_t vertex_count, triangle_count, degenerate_count, flags;
    float bounds_min[3], bounds_max[3];
} rvi_occ_mesh_data;

static inline const double (*rvi_occ_convex_planes(const rvi_occ_convex_data *c))[4]
{
    return (const double (*)[4])(const void *)(c + 1);
}
static inline const double (*rvi_occ_convex_vertices(const rvi_occ_convex_data *c))[3]
{
    return (const double (*)[3])(const void *)((const double *)(const void *)(c + 1) + 4 * (size_t)c->plane_count);
}
static inline const uint8_t (*rvi_occ_convex_edges(const rvi_occ_convex_data *c))[4]
{
    return (const uint8_t (*)[4])(const void *)((const double *)(const void *)(c + 1) + 4 * (size_t)c->plane_count +
                                                3 * (size_t)c->vertex_count);
}
/* Bytes of a convex block with these counts. */
static inline size_t rvi_occ_convex_size(uint32_t planes, uint32_t vertices, uint32_t edges)
{
    return sizeof(rvi_occ_convex_data) + sizeof(double) * (4 * (size_t)planes + 3 * (size_t)vertices) + 4 * (size_t)edges;
}
static inline const float (*rvi_occ_mesh_positions(const rvi_occ_mesh_data *m))[3]
{
    return (const float (*)[3])(const void *)(m + 1);
}
static inline const uint32_t *rvi_occ_mesh_indices(const rvi_occ_mesh_data *m)
{
    return (const uint32_t *)(const void *)((const float *)(const void *)(m + 1) + 3 * (size_t)m->vertex_count);
}
static inline size_t rvi_occ_mesh_size(uint32_t vertices, uint32_t triangles)
{
    return sizeof(rvi_occ_mesh_data) + sizeof(float) * 3 * (size_t)vertices + sizeof(uint32_t) * 3 * (size_t)triangles;
}

/* A shape's block: borrowed (a node's, valid through the freeze) or in shape_data. */
typedef struct rvi_occ_shape {
    const void *borrowed;
    size_t offset;           /* bytes into shape_data when not borrowed */
    uint32_t vertex_base;    /* mesh: first of its slots in rv_occlusion.vertices */
} rvi_occ_shape;

/* ---- the buffer -------------------------------------------------------------------------- */

/* A box seen through the float object test: the touched texel rectangle (inclusive,
 * clamped to the buffer) and the nearness of its nearest point, rounded nearer. */
typedef struct rvi_occ_footprint {
    int32_t x0, y0, x1, y1;
    float nearness;
    int32_t on;  /* RVI_OCC_ON: usable (for a box reaching before the near plane, its
                    part in view); RVI_OCC_AWAY: wholly off screen (no part in view); 0:
                    no answer (degenerate, not finite, too near the eye to bound) */
} rvi_occ_footprint;

#define RVI_OCC_ON 1
#define RVI_OCC_AWAY 2

typedef enum rvi_occ_state {
    RVI_OCC_NO_VIEW = 0, /* no successful begin this frame: adds refused, tests visible */
    RVI_OCC_OPEN,        /* accepting occluders */
    RVI_OCC_FROZEN       /* rasterised; tests read the pyramid */
} rvi_occ_state;

/* Meshes of at least this many triangles may be drawn by their outline. */
#define RVI_OCC_OUTLINE_MIN_TRIANGLES 32u

/* Scratch of the outline path, sized by rvi_occ_outline_reserve for the largest mesh and
 * the buffer's texels; the freeze only uses it. mode: 0 automatic, 1 every mesh it can
 * take, 2 never (tests compare the two paths). */
typedef struct rvi_occ_outline {
    uint32_t *weld;           /* open addressing: vertex index + 1, 0 empty */
    uint32_t *id;             /* per vertex: the first vertex with the same position */
    uint32_t vertex_capacity; /* vertices id holds; weld holds twice that, rounded up */
    uint32_t *start;          /* vertex_capacity + 1: where each vertex's edge list starts */
    /* Per triangle, one block (edge is its start): */
    uint32_t *edge;           /* 3 per triangle: edges listed at their lower welded end */
    uint32_t *edge_triangle;  /* 3 per triangle: each record's triangle << 2 | its edge */
    uint32_t *parent, *head, *next; /* connected parts: union-find, then lists */
    int8_t *side;             /* +1 or -1 its winding on screen, 0 not drawn, or
                                 RVI_OCC_OUTLINE_LEFT */
    uint8_t *inner;           /* bit i: edge i (corner i to i + 1) is interior */
    uint32_t triangle_capacity;
    uint32_t *state;          /* per texel: generation << 2 | centre inside (2) | on the outline (1) */
    float *value;             /* per texel: the farthest bound of the triangles touching it */
    uint32_t *touched;        /* texels given a value this mesh */
    size_t texel_capacity;
    uint32_t generation;
    uint32_t mode;
} rvi_occ_outline;

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
    int32_t *row_spans;      /* 4 * height ints: the rows' texel spans (outer and inner) */
    size_t span_capacity;
    /* Per tile of RVI_OCC_TILE x RVI_OCC_TILE level-0 texels (row-major, tiles_w a row): a
     * lower bound on its texels' nearness, kept by the freeze (occlusion_tiles.c). */
    float *tile_lo;
    size_t tile_capacity;
    uint32_t tiles_w, tiles_h;
    rvi_vec inputs;          /* rvi_occ_input: this frame's occluders, as declared */
    rvi_vec matrices;        /* float[16] of the occluders that came with a matrix */
    rvi_vec shapes;          /* rvi_occ_shape: convex solids and meshes */
    rvi_vec shape_data;      /* uint64_t words: copied convex and mesh blocks */
    uint32_t item_count;     /* what the freeze orders: boxes, convex solids, triangles */
    uint32_t vertex_count;   /* mesh vertices this frame (slots in vertices) */
    rvi_vec items;           /* rvi_occ_item per item (freeze scratch) */
    rvi_vec footprints;      /* rvi_occ_footprint per item (freeze scratch) */
    rvi_vec order;           /* uint64_t per item, twice (freeze scratch: sort keys) */
    rvi_vec vertices;        /* rvi_occ_vertex per mesh vertex (freeze scratch) */
    rvi_vec tallies;         /* rvi_occ_tally per occluder (freeze scratch) */
    void *convex_scratch;    /* rvi_occ_convex_scratch, made by the first add_convex */
    rvi_occ_draft *draft;    /* one piece being drawn (made by begin) */
    rvi_occ_fusion fusion;
    rvi_occ_outline outline;
    rvi_occ_view view;
    rv_occlusion_stats stats;
    bool wide, wide_vl;      /* the CPU runs the 8-lane (AVX2) test kernel; and AVX-512VL */
    /* The depth feed (occlusion_feed.c): NULL without a feed capacity. feed_applied is set
     * by the freeze when a feed was merged into this frame's buffer. */
    struct rvi_occ_feed *feed;
    bool feed_applied;
    /* The spacing of the viewport's pixel centres in texel units, x and y, when desc.fine_tests
     * is 2 and the frame says the host samples each pixel once, at its centre
     * (rv_view.cull_unsampled); 0 when not known (rvi_occ_set_samples, after each begin). */
    double sample_step[2];
};

/* The frame's pixel grid for the finer tests (rvi_occ_texel_hides_box) of a buffer whose
 * desc.fine_tests is 2: viewport_w x viewport_h pixels, each sampled once at its centre;
 * 0 x 0 forgets it. Call after begin. */
void rvi_occ_set_samples(rv_occlusion *occ, uint32_t viewport_w, uint32_t viewport_h);

/* What the freeze orders: a box or convex solid (triangle UINT32_MAX) or one triangle of a
 * mesh, by its occluder's index in inputs. */
/* One thing the freeze draws: a box or convex solid (triangle RVI_OCC_NO_TRIANGLE), a whole
 * mesh not opened yet (RVI_OCC_WHOLE_MESH), or run triangles of a mesh from triangle on,
 * drawn as one piece. */
typedef struct rvi_occ_item {
    uint32_t input;
    uint32_t triangle;
    uint32_t run;
} rvi_occ_item;

#define RVI_OCC_NO_TRIANGLE UINT32_MAX
#define RVI_OCC_WHOLE_MESH (UINT32_MAX - 1)

/* A mesh vertex projected for this frame (world position, clip rows x, y, z, w and near,
 * texel position and nearness when in front of the near plane). */
typedef struct rvi_occ_vertex {
    double world[3];
    double clip[5];
    double texel[2];
    double nearness;
} rvi_occ_vertex;

/* Per occluder at the freeze (mesh accounting): triangles drawn and found hidden, and why
 * others were not drawn. */
typedef struct rvi_occ_tally {
    uint32_t drawn, hidden;
    uint8_t capped, offscreen, degenerate, near; /* near: a closed mesh the near plane cuts in view */
} rvi_occ_tally;

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

/* True when every level-0 texel of [x0, x1] x [y0, y1] (inclusive, inside the buffer)
 * holds a nearness strictly above v. */
bool rvi_occ_flat_hidden(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v);

/* The freeze's tile bounds (occlusion_tiles.c): per tile of RVI_OCC_TILE x RVI_OCC_TILE
 * texels of level 0 (tiles_w x tiles_h of them), a lower bound on its texels' nearness,
 * true from rvi_occ_tiles_clear (with the texels' clear) to the depth feed: in between
 * texels only rise. */
void rvi_occ_tiles_clear(rv_occlusion *occ);
/* rvi_occ_flat_hidden's answer during the freeze, from the tile bounds where they suffice;
 * the tiles it scans get their exact minimum as bound. */
bool rvi_occ_tiles_hidden(rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v);

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

/* ---- the view (occlusion_view.c) ------------------------------------------------------------ */

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

/* Fills pe and pe_mag of a plane for the view. */
void rvi_occ_plane_eye(const rvi_occ_view *view, rvi_occ_plane *plane);
/* Faces whose eye value is within this fraction of its terms are edge-on (neither front
 * nor back): the value's own rounding is a few units of 1e-16 of its terms, so beyond this
 * its sign is certain; edge-on faces' slivers are left out of a piece. */
#define RVI_OCC_EDGE_ON 1e-12
/* A plane's nearness is bounded per texel (rvi_occ_plane_texel_min) only when its eye value
 * is at least this fraction of its terms: the bound's slack assumes the eye value is known
 * to a part in 1e9. */
#define RVI_OCC_PLANE_CLEAR 1e-7
/* Nearness along a plane (not through the eye) as an affine function of texel
 * coordinates: a * tx + b * ty + cc; mag bounds its terms over the buffer and slack the
 * error of deriving it. */
void rvi_occ_plane_nearness(const rvi_occ_view *view, const rvi_occ_plane *plane, double *a, double *b, double *cc,
                            double *mag, double *slack);
/* The lower bound of a plane's nearness over each texel as float (a, b, c), for
 * a * ix + (b * iy + c); false when it cannot be bounded (seen within RVI_OCC_PLANE_CLEAR of
 * edge-on, or values out of range): then leave the plane out where a maximum is taken, or
 * give up where a minimum is. */
bool rvi_occ_plane_texel_min(const rvi_occ_view *view, const rvi_occ_plane *plane, float out[3]);
/* The screen line of the plane through the eye and the line where planes in and out meet,
 * for an outline edge whose piece lies on in's side: canonical line and side into e,
 * slack its error bound. False when the eye lies too near that line to place it. */
bool rvi_occ_pencil_line(const rvi_occ_view *view, const rvi_occ_plane *in, const rvi_occ_plane *out,
                         rvi_occ_edge *e);
/* The canonical line through two texel points (the same line whichever comes first) and
 * their extent; side is left to the caller. False when the points coincide. */
bool rvi_occ_segment_line(const double p0[2], const double p1[2], rvi_occ_edge *e);
/* Projects clip coordinates (x, y, z, w) to texel coordinates and nearness; false when the
 * point is not safely in front of the eye or projects absurdly far (see the constants). */
bool rvi_occ_project(const rvi_occ_view *view, const double clip[4], double texel[2], double *nearness);

/* ---- pieces (occlusion_prepare.c, occlusion_mesh.c) ------------------------------------------- */

/* A convex polytope in local space: planes (n . p <= d), corners and edges (corner,
 * corner, face, face). */
typedef struct rvi_occ_poly {
    uint32_t plane_count, vertex_count, edge_count;
    bool segment_lines; /* outline lines from end points (a mesh's), not from plane pairs */
    const double (*planes)[4];
    const double (*vertices)[3];
    const uint8_t (*edges)[4];
} rvi_occ_poly;

/* Where the segment between two points (clip rows x, y, z, w, near) crosses the near plane,
 * computed from the end points in a canonical order (by their clip rows), so every piece
 * sharing the segment cuts it at the same point bit for bit. */
void rvi_occ_cut(const double a[5], const double b[5], double out[5]);
/* The polytope of a box (static topology; planes and corners into the caller's arrays). */
void rvi_occ_box_poly(const float min[3], const float max[3], double planes[6][4], double vertices[8][3],
                      rvi_occ_poly *out);
/* Projects a polytope under matrix (NULL = identity) for the view: its silhouette (the
 * outline between the faces it is drawn by and the others, near-clipped), bounds and depth
 * planes into out. exact asks for the entry side (granted only when unclipped and bounded by
 * at most RVI_OCC_MAX_PLANES front faces). */
rvi_occ_prepare rvi_occ_prepare_poly(const rvi_occ_view *view, const rvi_occ_poly *poly, const float *matrix,
                                     bool exact, float min_texels, rvi_occ_draft *out);

/* Convex occluders (occlusion_convex.c): checks a convex as rv_occlusion_add_convex does
 * (RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE, RV_ERR_CAPACITY), then works out its solid into
 * scratch (rvi_occ_convex_scratch_size() bytes) and the size of its block into *size (also
 * RV_ERR_INVALID_ARG: unbounded, empty or flat, or beyond RVI_OCC_MAX_COORD;
 * RV_ERR_CAPACITY: too many corners). rvi_occ_convex_write then writes the block. */
rv_result rvi_occ_convex_check(const rv_occluder_convex *convex);
size_t rvi_occ_convex_scratch_size(void);
rv_result rvi_occ_convex_build(const rv_occluder_convex *convex, void *scratch, size_t *size);
void rvi_occ_convex_write(const void *scratch, uint32_t flags, void *out);
/* A closed mesh (of triangles with area, at most RV_OCCLUSION_MAX_PLANES) that bounds a
 * convex solid: every edge shared by exactly two triangles in opposite directions, every
 * vertex on or inside every triangle's plane. Fills scratch as rvi_occ_convex_build does
 * (one face per set of coplanar neighbours, the mesh's own vertices and edges) and its
 * block's size into *size; false when the mesh is not such a solid (then it stays a mesh).
 * rvi_occ_mesh_convex_write writes the block. */
bool rvi_occ_mesh_convex(const rv_occluder_mesh *mesh, uint32_t triangles, void *scratch, size_t *size);
void rvi_occ_mesh_convex_write(const void *scratch, const rv_occluder_mesh *mesh, uint32_t triangles, void *out);
/* The solid rvi_occ_mesh_convex left in scratch, as a polytope (valid while scratch is). */
void rvi_occ_scratch_poly(const void *scratch, rvi_occ_poly *out);
/* Zero area in local space: repeated corners, or collinear ones. */
bool rvi_occ_triangle_degenerate(const float (*positions)[3], const uint32_t *indices);

/* Mesh occluders (occlusion_mesh.c). Checks a mesh; *triangles receives how many have area. */
rv_result rvi_occ_mesh_check(const rv_occluder_mesh *mesh, uint32_t *triangles);
/* Copies a checked mesh's triangles with area into out (rvi_occ_mesh_size bytes); with
 * order (a node's mesh, copied once), coplanar neighbours that make one convex polygon are
 * brought next to each other, so the freeze draws them as one piece. */
void rvi_occ_mesh_copy(const rv_occluder_mesh *mesh, uint32_t triangles, bool order, void *out);
/* Adds a shape block (convex or mesh) this frame without copying it: block must stay
 * unchanged until the freeze (a node's occluder, between rasterise_occluder_nodes and the
 * freeze in rv_frame_cull). matrix is copied. Errors: RV_ERR_INVALID_ARG (matrix not affine),
 * RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE, RV_ERR_FROZEN, RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY;
 * width 0: RV_OK. */
rv_result rvi_occlusion_add_block(rv_occlusion *occ, rvi_occ_kind kind, const void *block, const float matrix[16]);

/* The mesh of input in, and its matrix (NULL = identity). */
const rvi_occ_mesh_data *rvi_occ_input_mesh(const rv_occlusion *occ, const rvi_occ_input *in);
const rvi_occ_convex_data *rvi_occ_input_convex(const rv_occlusion *occ, const rvi_occ_input *in);
static inline const float *rvi_occ_input_matrix(const rv_occlusion *occ, const rvi_occ_input *in)
{
    return in->matrix >= 0 ? (const float *)occ->matrices.data + (size_t)16 * (uint32_t)in->matrix : NULL;
}
/* Projects every vertex of a mesh occluder into vertices[shape.vertex_base ...]. */
void rvi_occ_mesh_project(const rv_occlusion *occ, const rvi_occ_input *in, rvi_occ_vertex *vertices);
/* The triangle's world plane (outward for a closed mesh's winding) with its value at the eye;
 * false when it has no area in world space or a corner reaches beyond RVI_OCC_MAX_COORD. */
bool rvi_occ_triangle_plane(const rvi_occ_view *v, const rvi_occ_vertex *a, const rvi_occ_vertex *b,
                            const rvi_occ_vertex *c, rvi_occ_plane *pl);

/* ---- dense meshes by their outline (occlusion_outline.c) ---------------------------------- */


/* Grows the scratch for a mesh of that many triangles and vertices in this frame's buffer
 * (a no-op for smaller meshes than the path takes). RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_occ_outline_reserve(rv_occlusion *occ, uint32_t triangles, uint32_t vertices);
void rvi_occ_outline_free(rv_occlusion *occ);
/* Draws a projected mesh by its outline; false (nothing done, nothing counted) when the
 * path does not take it: too few triangles or too large on screen for it to pay, or no
 * scratch. A triangle with a vertex before the near plane or not projected is left to the
 * pieces: outline.side[t] is RVI_OCC_OUTLINE_LEFT, and it is not counted. */
bool rvi_occ_outline_draw(rv_occlusion *occ, uint32_t input, const rvi_occ_vertex *vertices);
#define RVI_OCC_OUTLINE_LEFT 2
/* The footprint of triangle t of a projected mesh, or false when it is not drawn this
 * frame (facing away from what the mesh keeps, edge-on or degenerate: *degenerate tells). */
bool rvi_occ_triangle_footprint(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vertices,
                                uint32_t t, rvi_occ_footprint *fp, bool *degenerate);
/* Triangle t of a projected mesh as a piece (near-clipped). */
rvi_occ_prepare rvi_occ_prepare_triangle(const rv_occlusion *occ, const rvi_occ_input *in,
                                         const rvi_occ_vertex *vertices, uint32_t t, rvi_occ_draft *out);
/* How many triangles from t on (at most limit) make one piece: consecutive ones beyond the
 * near plane, drawn, coplanar, each sharing an edge with the outline so far, which stays
 * strictly convex on screen; 1 when t stands alone. fp (t's footprint, drawn and beyond
 * the near plane) grows to the run's. */
uint32_t rvi_occ_mesh_run(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vertices, uint32_t t,
                          uint32_t limit, rvi_occ_footprint *fp);
/* Triangles [t, t + run) as one piece (run 1: rvi_occ_prepare_triangle). */
rvi_occ_prepare rvi_occ_prepare_run(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vertices,
                                    uint32_t t, uint32_t run, rvi_occ_draft *out);

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

/* ---- adding occluders (occlusion.c) ------------------------------------------------------ */

/* Reserves room for occluders more occluders this frame (with_matrix of them with a
 * matrix), items more items (a box or convex one, a mesh one per triangle) and vertices
 * more mesh vertices, so that a frame with more occluders than any before allocates once,
 * up front (the frame reserves its persistent occluders: steady frames then allocate
 * nothing). RV_OK (also when occlusion is off), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_occlusion_reserve(rv_occlusion *occ, uint32_t occluders, uint32_t with_matrix, uint32_t items,
                                uint32_t vertices);

/* Appends an occluder (input's kind, flags, bounds or box) with its matrix (copied; NULL =
 * identity), items items and vertices mesh vertices: all reserved first, nothing added on
 * error (RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY). A convex or mesh block is borrowed, or
 * (borrowed NULL) data_size bytes are set aside in the frame's shape storage and *out_data
 * points at them for the caller to fill before anything else is added. */
rv_result rvi_occ_push(rv_occlusion *occ, const rvi_occ_input *input, const float *matrix, uint32_t items,
                       uint32_t vertices, const void *borrowed, size_t data_size, void **out_data);
/* The state and matrix checks of every add: RV_ERR_BAD_STATE, RV_ERR_FROZEN,
 * RV_ERR_NOT_FINITE, RV_ERR_INVALID_ARG or RV_OK. */
rv_result rvi_occ_add_checks(rv_occlusion *occ, const float *matrix);

/* Validates a desc as creation would (defaults applied), creating nothing. */
rv_result rvi_occlusion_check_desc(const rv_occlusion_desc *desc);

/* ---- the depth feed (occlusion_feed*.c): the buffer's hooks in occlusion_feed_hooks.h,
 * the feed's internals in occlusion_feed.h -------------------------------------------------- */

typedef struct rvi_occ_feed rvi_occ_feed;

#include "occlusion_feed_hooks.h"

#endif
