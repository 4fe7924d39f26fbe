/* Occlusion drawing internals (docs/design.md §4): what an occluder is drawn as, and the
 * calls that draw it. A piece is a convex region of the screen with a conservative
 * per-texel nearness; its outline edges, the draft it is prepared in (planes, corners, near
 * cuts), the fusion records of the pieces drawn so far, and the entry points of the inner
 * raster and of fusion.
 *   occlusion_raster.c   inner rasterisation of a piece, a piece's band
 *   occlusion_fusion.c   fusion: edge records per texel
 *   occlusion_union.c    fusion: the union test of one texel
 *
 * Included by occlusion.h (rv_occlusion holds a draft and the fusion state, and the quick
 * point look in occlusion_test.h reads the pieces), so files include occlusion.h (or
 * occlusion_shape.h, occlusion_test.h), not this. The files that prepare and draw pieces
 * (occlusion_view.c, occlusion_prepare.c, occlusion_convex.c, occlusion_mesh.c,
 * occlusion_outline.c, occlusion_freeze.c and the three above) are its readers; the frame
 * and the object tests need only the buffer's side. */
#ifndef RVI_OCCLUSION_DRAW_H
#define RVI_OCCLUSION_DRAW_H

#include "rvis.h"
#include "core/alloc.h"

#include <float.h>
#include <math.h>

#define RVI_OCC_MAX_PLANES 6   /* depth planes of one piece (a box shows at most 3 back faces) */
#define RVI_OCC_MAX_EDGES 64   /* outline edges of one piece */
#define RVI_OCC_TILE 8         /* texels across and down a tile of level 0 (rv_occlusion.tile_lo) */

/* ---- pieces -------------------------------------------------------------------------------- */

/* One edge of a piece's outline in texel coordinates, for the inner raster and for fusion.
 * The line is canonical: |a| + |b| = 1 and the first non-zero of a, b positive, computed
 * from the same inputs the same way for every occluder that shares the edge (two planes of
 * the solids, or the two projected end points), so edges that coincide have bit-identical
 * lines and differ only in side. */
typedef struct rvi_occ_edge {
    double line[3];          /* a, b, c */
    double p0[2], p1[2];     /* end points */
    double s0, s1;           /* extent along the line: s = b x - a y at the ends, s0 <= s1 */
    double slack;            /* bound on the line's error over the buffer, texel units */
    int32_t side;            /* the piece lies where side * (a x + b y + c) >= 0 */
    double margin;           /* rvi_occ_edge_margin, set when the fusion pool keeps the edge */
} rvi_occ_edge;

/* A convex region of the screen with a conservative per-texel nearness: what an occluder
 * (a box or convex solid: its silhouette; a triangle) is drawn as. */
typedef struct rvi_occ_piece {
    uint32_t first_edge, edge_count;  /* in the fusion edge pool, or the drawing scratch */
    float floor;             /* nearness of the farthest point: never below */
    float top;               /* nearness of the nearest point (rounded nearer) */
    uint8_t entry;           /* 1: max(floor, min of planes) (an exact solid's entry side);
                                0: max(floor, max of planes) */
    uint8_t plane_count;
    /* a * ix + (b * iy + c) bounds the surface's nearness anywhere in texel (ix, iy) from
     * below (texel-corner minimum and float error folded in). */
    float plane[RVI_OCC_MAX_PLANES][3];
} rvi_occ_piece;

/* The nearness a piece guarantees in texel (ix, iy). */
static inline float rvi_occ_piece_depth(const rvi_occ_piece *p, int32_t ix, int32_t iy)
{
    float fx = (float)ix, fy = (float)iy, v;
    if (p->entry && p->plane_count) {
        v = FLT_MAX;
        for (uint32_t k = 0; k < p->plane_count; k++) {
            float t = p->plane[k][0] * fx + (p->plane[k][1] * fy + p->plane[k][2]);
            v = t < v ? t : v;
        }
        return v > p->floor ? v : p->floor;
    }
    v = p->floor;
    for (uint32_t k = 0; k < p->plane_count; k++) {
        float t = p->plane[k][0] * fx + (p->plane[k][1] * fy + p->plane[k][2]);
        v = t > v ? t : v;
    }
    return v;
}

/* A lower bound on the piece's nearness at point (x, y) of a texel it covers, for a quick
 * look (float; the exact tests are rvi_occ_texel_hides_box's): its planes' values there
 * with the texel-corner term taken back out. */
static inline float rvi_occ_piece_nearness_at(const rvi_occ_piece *p, float x, float y)
{
    float v = p->entry && p->plane_count ? FLT_MAX : -FLT_MAX;
    for (uint32_t k = 0; k < p->plane_count; k++) {
        const float *q = p->plane[k];
        float t = q[0] * x + q[1] * y + q[2] - (q[0] < 0 ? q[0] : 0) - (q[1] < 0 ? q[1] : 0);
        v = p->entry ? (t < v ? t : v) : (t > v ? t : v);
    }
    return v > p->floor ? v : p->floor;
}

static inline void rvi_occ_edge_extent(rvi_occ_edge *e)
{
    double a = e->line[0], b = e->line[1];
    double s0 = b * e->p0[0] - a * e->p0[1], s1 = b * e->p1[0] - a * e->p1[1];
    e->s0 = s0 < s1 ? s0 : s1;
    e->s1 = s0 < s1 ? s1 : s0;
}

/* A convex polytope has at most 2F - 4 corners and 3F - 6 edges for F faces. */
#define RVI_OCC_MAX_CORNERS (2 * RV_OCCLUSION_MAX_PLANES)
#define RVI_OCC_MAX_POLY_EDGES (3 * RV_OCCLUSION_MAX_PLANES)

/* A world plane n . p + c <= 0 (inside), with pe = its value at the homogeneous eye (> 0:
 * the eye is outside, a front face; < 0: a back face) and pe_mag the size of pe's terms. */
typedef struct rvi_occ_plane {
    double n[3], c, pe, pe_mag;
} rvi_occ_plane;

/* A point of a polytope this frame: clip rows x, y, z, w, near; texel position and
 * nearness when projected. */
typedef struct rvi_occ_point {
    double clip[5];
    double texel[2];
    double nearness;
} rvi_occ_point;

/* A piece being drawn: the piece, its edges, the texel range worth scanning (whole texels,
 * clamped to the buffer; empty when x0 > x1 or y0 > y1), and the work space of a polytope
 * being projected (one per buffer, made by begin: too large for the stack). */
typedef struct rvi_occ_draft {
    rvi_occ_piece piece;
    rvi_occ_edge edge[RVI_OCC_MAX_EDGES];
    int32_t x0, x1, y0, y1;
    double bounds[4];        /* min x, min y, max x, max y of its corners (texels) */
    int32_t inner_y0, inner_rows; /* rows whose inner spans rvi_occ_rasterize left in its spans */
    rvi_occ_plane planes[RV_OCCLUSION_MAX_PLANES];
    rvi_occ_point corners[RVI_OCC_MAX_CORNERS];
    rvi_occ_point cuts[RVI_OCC_MAX_POLY_EDGES];     /* where an edge crosses the near plane */
    uint8_t face_cut[RV_OCCLUSION_MAX_PLANES][2];   /* a face's two crossing edges */
    uint8_t face_cuts[RV_OCCLUSION_MAX_PLANES];
    int8_t in[RV_OCCLUSION_MAX_PLANES];             /* 1: drawn by this face; 0: not; -1: edge-on */
    bool segment_lines;                             /* the polytope's rvi_occ_poly.segment_lines */
} rvi_occ_draft;

typedef enum rvi_occ_prepare {
    RVI_OCC_PREPARED = 0,
    RVI_OCC_SMALL,
    RVI_OCC_OFFSCREEN,
    RVI_OCC_DEGENERATE,
    RVI_OCC_NEAR            /* a solid the near plane cuts in view (rvi_occ_near_cut) */
} rvi_occ_prepare;

/* ---- fusion -------------------------------------------------------------------------------- */

/* Fusion state: drawn pieces with their edges, the pieces' bands (the texels they may
 * partly cover) as a list of notes per texel, and each texel's covering piece. The pools
 * stay until the next begin, for the tests (rvi_occ_texel_hides_box), and grow up to caps;
 * past one, pending texels are resolved and the pools emptied, which only forgoes fusion
 * and the finer tests between pieces drawn before and after (never wrong). */
typedef struct rvi_occ_fusion {
    /* Notes: which pieces' bands hold a texel, as a list per texel (newest first). */
    uint32_t *head;          /* per texel: its newest note + 1, 0 for none since the flush */
    uint32_t *note_piece, *note_next; /* per note: the piece, the texel's next note + 1 */
    uint32_t note_count, note_capacity;
    uint32_t *dirty;         /* this round: texels with a new note and an older one */
    uint32_t *touched;       /* since the flush: texels with notes */
    uint32_t dirty_count, touched_count, texels;
    /* Notes 1 .. round_first were made before this round began: a texel whose newest note
     * is later and has an older one after it is on this round's dirty list already. */
    uint32_t round_first;
    rvi_occ_piece *pieces;
    uint32_t piece_count, piece_capacity;
    rvi_occ_edge *edges;
    uint32_t edge_count, edge_capacity;
    /* Shared edges: the pool's edges chained by their line (a hash of its bits). */
    uint32_t *line_head;     /* per bucket: its newest edge + 1, 0 for none since the flush */
    uint32_t *edge_next;     /* per pool edge: the bucket's next edge + 1 */
    uint32_t *edge_owner;    /* per pool edge: its piece */
    /* Per pool edge: its line times side (negating is exact, so inward . (x, y, 1) is
     * side * (a x + b y + c) bit for bit), apart from the edges so that the union tests'
     * inside checks read 24 bytes an edge. */
    double (*inward)[3];
    /* Counting fused_texels once per texel: a bit per texel, set when fusion raised it this
     * frame (cleared by each begin; 4.5 KiB at width 256, so the seams' and the union tests'
     * stores find it in cache). */
    uint64_t *raised;
    /* Per texel: a piece that wholly covers it (the nearest the inner raster wrote there),
     * as owner_gen << 16 | its pool index; an older generation means none known. Emptying
     * the pools starts a new generation (rvi_occ_owner). */
    uint32_t *owner;
    uint32_t owner_gen;      /* 1 .. 0xFFFF */
} rvi_occ_fusion;

/* The piece that wholly covers texel t, NULL when none is known. */
static inline const rvi_occ_piece *rvi_occ_owner(const rvi_occ_fusion *fu, size_t t)
{
    uint32_t o = fu->owner[t];
    return o >> 16 == fu->owner_gen ? &fu->pieces[o & 0xFFFFu] : NULL;
}

/* ---- drawing (occlusion_raster.c, occlusion_fusion.c, occlusion_freeze.c) ------------------- */

/* Writes the piece's conservative nearness into the texels wholly inside it (max with what
 * is there), and leaves those rows' spans in spans[2 * height ...) for rvi_occ_band
 * (draft->inner_y0, inner_rows). Where it raises a texel, owner (when not NULL) takes id.
 * scratch holds 2 * height doubles, spans 4 * height ints; wide picks the AVX2 build. */
void rvi_occ_rasterize(rvi_occ_draft *draft, float *texels, uint32_t *owner, uint32_t id, uint32_t width,
                       uint32_t height, float *tile_lo, uint32_t tiles_w, double *scratch, int32_t *spans, bool wide);

/* Fusion pools for a buffer of texels texels (begin): RV_OK or RV_ERR_OUT_OF_MEMORY. */
rv_result rvi_occ_fusion_reserve(rvi_heap *heap, rvi_occ_fusion *fu, size_t texels);
void rvi_occ_fusion_free(rvi_heap *heap, rvi_occ_fusion *fu);
/* Stores the draft's piece in the pools before it is drawn, growing them up to their caps
 * (resolving and emptying them beyond); returns the id its inner raster writes as owner
 * (rvi_occ_fusion.owner), or 0 when it cannot be kept. */
uint32_t rvi_occ_fusion_keep(rv_occlusion *occ, const rvi_occ_draft *draft);
/* Keeps a drawn piece (kept: what rvi_occ_fusion_keep returned) for fusion: records it at
 * every texel of its band (the texels that may meet it but are not wholly inside) whose
 * depth it could still raise, and draws the seams it shares with earlier pieces. Its inner
 * spans must still be in the buffer's spans (rvi_occ_rasterize). */
void rvi_occ_fusion_add(rv_occlusion *occ, const rvi_occ_draft *draft, uint32_t kept);
/* The band of a piece just rasterised (its inner spans still in spans), row by row from *y0
 * (i-th row: y0 + i): texels spans[i] .. spans[H + i] may meet it, spans[2H + i] ..
 * spans[3H + i] lie wholly inside it (empty when the first exceeds the second), H the
 * buffer height. Returns the row count (0: none). scratch: 2 * height doubles. */
int32_t rvi_occ_band(const rvi_occ_draft *draft, uint32_t width, uint32_t height, double *scratch, int32_t *spans,
                     int32_t *y0, bool wide);
/* Tests every texel with new records and raises those the pieces cover together. */
void rvi_occ_fusion_resolve(rv_occlusion *occ);
/* Resolves (end of the freeze); the pools stay until the next begin, for the tests. */
void rvi_occ_fusion_finish(rv_occlusion *occ);
/* Edges count as near a texel within this distance (texel units) beyond their line's own
 * error bound, and an overlap cancels an edge only this far inside the other piece. */
#define RVI_OCC_FUSE_MARGIN 1e-7
/* How far from a texel an edge may pass and still count as near it. */
static inline double rvi_occ_edge_margin(const rvi_occ_edge *e)
{
    double mag = fabs(e->p0[0]) + fabs(e->p0[1]) + fabs(e->p1[0]) + fabs(e->p1[1]);
    return RVI_OCC_FUSE_MARGIN + e->slack + 8 * DBL_EPSILON * mag;
}
/* The union test of texel t (occlusion_union.c): true when some of the count pieces
 * (fusion pool indices) whose band holds it cover it together and would raise it; *value
 * receives the nearness they guarantee. */
bool rvi_occ_union_value(rv_occlusion *occ, uint32_t t, const uint32_t *pieces, uint32_t count, float *value);
/* The most pieces the union search takes at once (the nearest that could raise a texel). */
#define RVI_OCC_UNION_PIECES 8
/* The same search for the object tests (occlusion_texel.c): whether some of the pieces
 * cand[0..m) (pool indices; the first RVI_OCC_UNION_PIECES of them) cover together the
 * convex region r (n vertices, texel units), from a point inside it. Reads the buffer only. */
bool rvi_occ_region_union(const rv_occlusion *occ, const uint32_t *cand, uint32_t m, const double (*r)[2], uint32_t n);

#endif
