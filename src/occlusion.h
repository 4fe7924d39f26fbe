/* Occlusion buffer internals (docs/design.md §4): the view a frame is built for, the
 * occluders as declared, the buffer itself, and the entry points frame.c uses on the
 * world's main-view buffer. Two headers build on this one, by concern:
 *   occlusion_shape.h    occluders into pieces: convex and mesh blocks, polytopes, meshes'
 *                        triangles and runs, dense meshes by their outline
 *   occlusion_test.h     object tests: point looks, the pyramid lookups, footprints, the
 *                        eight-lane kernels, the refined box test
 * What a piece is and how it is drawn (pieces, drafts, fusion, the inner raster) is in
 * occlusion_draw.h, which this header includes.
 *   occlusion.c          lifecycle, begin, add_occluder, reserve, stats, debug images
 *   occlusion_freeze.c   the freeze: items, order, hidden skip, drawing, pyramid
 *   occlusion_view.c     the view, plane nearness, screen lines of planes and segments
 *   occlusion_prepare.c  a convex polytope (box or convex solid) as a piece
 *   occlusion_convex.c   convex occluders: validation, corners and edges from planes
 *   occlusion_mesh.c     mesh occluders: validation, copies, triangles as pieces
 *   occlusion_outline.c  dense meshes drawn by their outline
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
    bool fuse;               /* this frame's occluders are fused (decided by the freeze) */
    uint32_t fusion_idle;    /* fused freezes in a row in which fusion did not pay */
    uint32_t fusion_wait;    /* freezes since fusion paused */
    rvi_occ_outline outline;
    rvi_occ_view view;
    rv_occlusion_stats stats;
    bool wide, wide_vl;      /* the CPU runs the 8-lane (AVX2) test kernel; and AVX-512VL */
    /* The depth feed (occlusion_feed.c): NULL without a feed capacity. feed_applied is set
     * by the freeze when a feed was merged into this frame's buffer. */
    struct rvi_occ_feed *feed;
    bool feed_applied;
    /* A world's buffer between rv_frame_begin and its cull's freeze: the frame is still
     * adding occluders, so the public calls that would freeze it (tests, freeze, debug
     * read-outs) answer RV_ERR_BAD_STATE instead. */
    bool held;
    /* A world's main buffer (rv_world_occlusion): the world alone begins it, adds to it,
     * feeds and destroys it, through the rvi_ calls; the public ones refuse the host. */
    bool lent;
    /* The spacing of the viewport's pixel centres in texel units, x and y, when desc.fine_tests
     * is 2 and the frame says the host samples each pixel once, at its centre
     * (rv_view.cull_unsampled); 0 when not known (rvi_occ_set_samples, after each begin). */
    double sample_step[2];
};

/* The frame's pixel grid for the finer tests (rvi_occ_texel_hides_box) of a buffer whose
 * desc.fine_tests is 2: viewport_w x viewport_h pixels, each sampled once at its centre;
 * 0 x 0 forgets it. Call after begin. */
void rvi_occ_set_samples(rv_occlusion *occ, uint32_t viewport_w, uint32_t viewport_h);

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

/* Makes occ, a buffer borrowing its heap (rvi_occlusion_create_in), a new buffer for desc in
 * place: its storage is freed and what desc needs at creation (the feed's source side) is
 * made, so the pointer stays valid and it holds no frame until its next begin (tests
 * answer visible, stats zero). RV_ERR_INVALID_ARG, RV_ERR_NOT_FINITE (a bad desc, as
 * rv_occlusion_create), RV_ERR_OUT_OF_MEMORY: occ is unchanged on error. */
rv_result rvi_occlusion_replace(rv_occlusion *occ, const rv_occlusion_desc *desc);

/* rv_occlusion_add_occluder, _add_convex, _add_mesh, _feed_depth and _destroy for the world
 * that owns a lent buffer (the public calls refuse or ignore a lent one). */
rv_result rvi_occlusion_add_occluder(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16]);
rv_result rvi_occlusion_add_convex(rv_occlusion *occ, const rv_occluder_convex *convex, const float matrix[16]);
rv_result rvi_occlusion_add_mesh(rv_occlusion *occ, const rv_occluder_mesh *mesh, const float matrix[16]);
rv_result rvi_occlusion_feed_depth(rv_occlusion *occ, const rv_depth_feed *feed);
void rvi_occlusion_destroy(rv_occlusion *occ);

/* True when two valid descs make the same buffer (defaults applied; the allocator is not
 * compared; any two of width 0 are alike: off). */
bool rvi_occlusion_desc_equal(const rv_occlusion_desc *a, const rv_occlusion_desc *b);

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

/* Bits needed to write x: 0 for 0, else the position of its highest set bit plus one. */
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

/* The checks rvi_occlusion_begin_d makes of its view, for a buffer of that width, changing
 * nothing: RV_OK exactly when they pass (it may still fail for memory). */
rv_result rvi_occlusion_check_view(uint32_t width, const double view_projection[16], rv_clip clip, float aspect);

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