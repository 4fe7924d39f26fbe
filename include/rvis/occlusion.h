/* rvis/occlusion.h — The CPU occluder depth buffer and its hierarchical-Z pyramid.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_OCCLUSION_H
#define RVIS_OCCLUSION_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* CPU occluder depth buffer with a hierarchical-Z pyramid (docs/design.md §4).
 *
 * The host declares the big things a view is really hidden by (walls, buildings, slabs of
 * ground, a level's solid brushes and surfaces) as boxes, convex solids or triangle
 * meshes; rvis rasterises them into a small buffer of per-texel occluder depths and tests
 * objects against it, with no frame of latency and no GPU read-back. Per frame:
 * rv_occlusion_begin, any number of rv_occlusion_add_occluder / _add_convex / _add_mesh,
 * then tests. The first test (or rv_occlusion_freeze) freezes the buffer; later adds are
 * refused with RV_ERR_FROZEN until the next begin. A single test refused for its arguments
 * changes nothing, the freeze included; a batch freezes the buffer once its arrays are
 * accepted, whatever its items hold.
 *
 * Occluders fuse (desc.fusion): a texel counts as covered when the occluders
 * cover all of it together, so the faces of a mesh, two boxes sharing a face or two
 * brushes overlapping leave no seam, while a gap of any width between them stays open
 * (docs/occlusion.md, "Fusion").
 *
 * Every rule errs toward drawing (a wrong cull is a hole in the world):
 *  - a texel stores a depth never nearer than the occluders there: a box's FAR side, a
 *    convex solid's or closed mesh's far side unless the host declares it exact
 *    (RV_OCCLUDER_EXACT: then its entry side), an open mesh's own surface;
 *  - a texel counts as covered only when occluders cover all of it (each occluder's
 *    outline shrunk so a partly covered texel is never counted alone; where two meet, the
 *    texel is covered only if no outline crosses it that another occluder does not
 *    cover);
 *  - an object is hidden only when every texel its screen bounds touch holds a strictly
 *    nearer depth than the object's nearest point;
 *  - an occluder crossing the near plane is clipped against it, and a solid one (a box, a
 *    convex solid, a closed mesh) that the near plane may cut where the view shows it, or
 *    that holds the eye, hides nothing that frame: a GPU clips its near faces there and
 *    culls its back faces, so its inside shows (skipped_near); an object reaching before
 *    the near plane is judged by its part in view (its box clipped to the near plane and
 *    the view's sides: a floor running from behind the camera to behind a wall is hidden;
 *    a box holding part of the near plane in view never is), and an orthographic one, or
 *    one whose projection is degenerate, is visible;
 *  - depths are compared as linear view depth (clip w for perspective, NDC z for
 *    orthographic), and occluders are clipped at a plane every convention shares (just
 *    beyond the near plane, when it is parallel to the image), so OpenGL, zero-to-one,
 *    reversed-Z and infinite-far projections give the same answers;
 *  - floating-point error is bounded and charged against culling, never for it.
 * A max-depth pyramid answers a large object in at most four texel reads and refines only
 * where the coarse answer is "maybe visible" (hierarchical Z, Greene, Kass & Miller 1993).
 * Coverage is inner conservative rasterisation (Hasselgren, Akenine-Möller & Ohlsson 2005,
 * the underestimating variant); silhouettes of boxes and convex solids are the outlines
 * between their back-facing and other faces, found from the eye's side of each face plane
 * (the idea of Schmalstieg & Tobler 1999 for boxes). Guide: docs/occlusion.md.
 *
 * Threads: one buffer is used from one thread at a time (tests update the stats). Two
 * buffers share nothing and may be used on two threads. */

typedef struct rv_occlusion rv_occlusion;

/* When the freeze fuses occluders (rv_occlusion_desc.fusion; docs/occlusion.md, "Fusion").
 * Fusion never hides more than the occluders cover together, and without it a texel is
 * covered only where one occluder covers it whole, so a seam between touching occluders (a
 * wall of several brushes, a level's surfaces, a mesh drawn triangle by triangle) stays open
 * and hides nothing. It costs most where occluders seldom meet (on the benchmark city, whose
 * occluders are separate building boxes, about 29 % of the raster's instructions, for about
 * 1.5 texels raised a frame). */
typedef enum rv_fusion {
    /* Fused, and paused while it pays nothing. Fusion pays in a freeze when it raised at
     * least one texel for every RV_FUSION_PAY_WIDTH texels of the buffer's width (4 at width
     * 256: a seam a few texels long); a freeze drawing fewer than two pieces says nothing.
     * After RV_FUSION_IDLE_FRAMES fused freezes in a row that did not pay, the freezes skip
     * fusion, but for RV_FUSION_PROBE_RUN in a row once every RV_FUSION_PROBE_FRAMES (the
     * last of each period); the first of those probes that pays resumes fusion for every
     * freeze. The schedule counts freezes: for a buffer serving one view a frame (a world's
     * main view), frames. A seam that comes into view while fusion is paused stays open
     * (hides nothing) for at most RV_FUSION_PROBE_FRAMES - RV_FUSION_PROBE_RUN freezes if
     * it pays, and on every freeze but the probes if it does not. A buffer serving up to
     * RV_FUSION_PROBE_RUN views a frame probes each of them; one serving more may leave a
     * view unprobed (use RV_FUSION_ALWAYS there, or a buffer per view). With fine_tests
     * (1 or 2) it fuses every freeze, as RV_FUSION_ALWAYS: the finer tests read fusion's
     * notes of what partly covers each texel, a gain the texels raised do not measure (on
     * rvis-walk's city, fine_tests 1 drew 515 objects a frame with fusion paused against
     * 435). The default. */
    RV_FUSION_AUTO = 0,
    RV_FUSION_ALWAYS = 1, /* fused every freeze */
    RV_FUSION_OFF = 2     /* never fused */
} rv_fusion;

#define RV_FUSION_IDLE_FRAMES 8u
#define RV_FUSION_PROBE_FRAMES 16u
#define RV_FUSION_PROBE_RUN 2u
#define RV_FUSION_PAY_WIDTH 64u

/* Configuration of an occlusion buffer (standalone, or the world's main-view buffer inside
 * rv_world_desc). Zero selects each default. */
typedef struct rv_occlusion_desc {
    rv_allocator allocator;   /* standalone buffers only; a world uses its own allocator */
    uint32_t width;           /* texels; 0 = occlusion off (tests answer visible). 256 recommended.
                                 At most RV_OCCLUSION_MAX_SIZE. Memory: about 30 bytes a texel
                                 (the buffer, its pyramid, per-texel fusion lists) plus about
                                 1 MB of pools that grow with the occluders drawn: 2.3 MB at
                                 256 x 144 with one occluder, 19 MB at 1024 x 576; the first dense mesh
                                 (rv_occluder_mesh) adds 12 bytes a texel, and for the largest
                                 one about 40 bytes a triangle and 24 a vertex at a few
                                 thousand triangles, more per triangle as it grows (a flat
                                 grid of 1,048,352 triangles at width 512: about 240 MB) */
    float min_occluder_texels;/* occluders whose screen bounds are smaller than this many texels
                                 in either direction are skipped. 0 = default 2; negative = keep all */
    uint32_t max_occluders;   /* cap on occluders rasterised per frame, largest on screen first;
                                 0 = no cap */

    /* Depth feed (rv_occlusion_feed_depth): an earlier frame's GPU depth, reprojected. */
    uint32_t feed_max_width;  /* largest feed accepted, texels per row; 0 (with feed_max_height 0)
                                 = no feed: every feed is refused with RV_ERR_CAPACITY. Both or
                                 neither; at most RV_OCCLUSION_MAX_SIZE. The feed's storage
                                 (about 3 bytes a texel) is allocated with the buffer */
    uint32_t feed_max_height; /* largest feed accepted, rows */
    float feed_max_translation; /* world units the eye may have moved since the feed was drawn;
                                   farther: the feed is ignored that frame (counted). 0 = default 2 */
    float feed_max_rotation;  /* radians the view may have turned since; 0 = default 0.5 */
    float feed_discontinuity; /* relative depth tolerance: neighbouring samples are one surface only
                                 when they lie on a common plane to within this fraction of their
                                 depth (and a sample counts only where the format resolves an
                                 eighth of it). 0 = default 0.002; at most 0.05 */
    uint32_t feed_max_age;    /* frames; an older feed is ignored (counted). 0 = default 4 */

    uint32_t fine_tests;      /* 1: a texel that fails an object on its depth alone may still hide
                                 it, by the depth planes of the occluder covering it or by the
                                 occluders partly covering it, over the part of the texel the
                                 object's image meets (perspective views; docs/occlusion.md,
                                 "Finer than a texel"): more objects culled for more test time.
                                 2: as 1, and in a world's main view that says the host
                                 samples each pixel once, at its centre (rv_view.cull_unsampled,
                                 perspective), a texel still failing is judged at the pixel
                                 centres in it ("At pixel centres"): fewer objects drawn again,
                                 for much more test time. Only that view knows the pixel
                                 grid: a standalone buffer tests with 2 as with 1.
                                 0 = off (default); other values RV_ERR_INVALID_ARG */
    uint32_t fusion;          /* RV_FUSION_AUTO (0, default), _ALWAYS or _OFF (see rv_fusion);
                                 other values RV_ERR_INVALID_ARG. A frame without fusion also
                                 takes from fine_tests what it learns from occluders partly
                                 covering a texel (rules 2 and 3 of "Finer than a texel";
                                 fine_tests' pieces are still kept) */
} rv_occlusion_desc;

/* Largest buffer width and height in texels. */
#define RV_OCCLUSION_MAX_SIZE 8192u
/* Most pyramid levels a buffer can have (level 0 is the buffer itself). */
#define RV_OCCLUSION_MAX_LEVELS 14u

/* Per-frame counters, reset by rv_occlusion_begin. An occluder is one add call (a mesh is
 * one occluder); occluders_submitted = occluders_rasterized + occluders_hidden +
 * occluders_skipped, and for triangles triangles_submitted = triangles_rasterized +
 * triangles_hidden + triangles_skipped + triangles_degenerate. */
typedef struct rv_occlusion_stats {
    uint32_t occluders_submitted;  /* add calls accepted this frame (boxes, convex solids, meshes) */
    uint32_t occluders_rasterized; /* occluders drawn into the buffer (a mesh: any of its triangles) */
    uint32_t occluders_hidden;     /* found wholly behind nearer occluders at the freeze: not
                                      drawn, since drawing them could not change the buffer
                                      (a mesh: every triangle it would have drawn) */
    uint32_t occluders_skipped;    /* not drawn for any other reason (sum of the five below) */
    uint32_t skipped_small;        /* screen bounds under min_occluder_texels, or nothing to draw */
    uint32_t skipped_offscreen;    /* wholly outside the view or behind the near plane */
    uint32_t skipped_cap;          /* beyond max_occluders (the smallest on screen go first) */
    uint32_t skipped_degenerate;   /* projection too ill-conditioned to bound safely */
    uint32_t skipped_near;         /* solids (boxes, convex solids, closed meshes) the near plane
                                      cuts where the view shows it, or that hold the eye: their
                                      inside would show there (a GPU culls back faces), so they
                                      hide nothing that frame */
    uint32_t texels_covered;       /* buffer texels holding a depth of this frame's occluders
                                      after the freeze (the depth feed's own texels are in
                                      rv_occlusion_feed_stats: texels_reprojected) */
    uint64_t tests;                /* objects tested (batch items included) */
    uint64_t culled;               /* of those, answered hidden */
    uint32_t triangles_submitted;  /* triangles of the meshes accepted this frame */
    uint32_t triangles_rasterized; /* drawn (all of a closed mesh drawn as its convex solid) */
    uint32_t triangles_hidden;     /* wholly behind nearer occluders at the freeze (all of a
                                      mesh found hidden as a whole) */
    uint32_t triangles_skipped;    /* facing away (closed meshes), off screen, in a small
                                      mesh, beyond max_occluders, or (a dense mesh drawn by
                                      its outline) repeating another's corners */
    uint32_t triangles_degenerate; /* zero area, or a projection too ill-conditioned to bound */
    uint32_t pieces;               /* convex pieces drawn: a box or convex solid is one, a
                                      triangle one, and so is a run of coplanar triangles
                                      merged into one convex polygon */
    uint32_t fusion_tests;         /* texels where two or more pieces met and were tested
                                      together */
    uint32_t fused_texels;         /* texels whose depth fusion raised (covered only by
                                      several occluders together, or nearer that way),
                                      each counted once however often it was raised */
    uint32_t fusion_paused;        /* set by the freeze: 1 when this frame's occluders were not
                                      fused (RV_FUSION_OFF, or RV_FUSION_AUTO between probes),
                                      else 0; 0 before the freeze */
    uint32_t meshes_outlined;      /* dense meshes drawn by their outline (docs/occlusion.md,
                                      "Dense meshes"), not piece by piece */
} rv_occlusion_stats;

/* Boxes for rv_occlusion_test_boxes, as structure of arrays: min[0][i], min[1][i],
 * min[2][i] is the local minimum corner of box i, max likewise. matrices is NULL (boxes are
 * in world space) or points to 16 floats per box (column-major local-to-world, box i at
 * matrices + 16 * i). All arrays are indexed by the same item index. */
typedef struct rv_occlusion_boxes {
    const float *min[3];
    const float *max[3];
    const float *matrices;
} rv_occlusion_boxes;

/* Spheres for rv_occlusion_test_spheres, as structure of arrays: centre (center[0..2][i],
 * local units) and radius[i] (local units, >= 0). matrices as in rv_occlusion_boxes; the
 * radius is scaled by the matrix's largest axis scale. */
typedef struct rv_occlusion_spheres {
    const float *center[3];
    const float *radius;
    const float *matrices;
} rv_occlusion_spheres;

/* Creates a standalone occlusion buffer. desc may be NULL (width 0: off). The buffer
 * itself is allocated by the first rv_occlusion_begin (its height follows the aspect).
 * *out receives the object, owned by the caller until rv_occlusion_destroy.
 * Errors: RV_ERR_INVALID_ARG (out NULL, width > RV_OCCLUSION_MAX_SIZE, fine_tests > 2,
 * fusion not an rv_fusion, feed_max_width and feed_max_height not both 0 or both set, either above
 * RV_OCCLUSION_MAX_SIZE, feed_max_translation, feed_max_rotation or feed_discontinuity
 * negative, feed_discontinuity above 0.05), RV_ERR_NOT_FINITE (min_occluder_texels,
 * feed_max_translation, feed_max_rotation or feed_discontinuity NaN/Inf),
 * RV_ERR_OUT_OF_MEMORY; *out untouched on error. */
RV_API rv_result rv_occlusion_create(const rv_occlusion_desc *desc, rv_occlusion **out);

/* Destroys a buffer and everything it holds. NULL is ignored, and so is a world's buffer
 * (rv_world_occlusion): the world owns it. */
RV_API void rv_occlusion_destroy(rv_occlusion *occlusion);

/* Starts a frame: sets the view and forgets the previous frame's occluders and stats.
 * view_projection: column-major float[16], clip = M * world point, perspective or
 * orthographic (recognised from the matrix), any depth convention (clip; an infinite far
 * plane works). aspect: viewport width / height (> 0); the buffer is width x
 * round(width / aspect) texels, row 0 at clip-space y = +w (the top of the screen in GL's
 * and D3D's conventions; the bottom of a y-down framebuffer drawn with a y-flipped
 * projection, as Vulkan's often is).
 * The buffer grows (allocates) only when the aspect asks for more rows than ever before;
 * steady frames allocate nothing.
 * With width 0 this is a no-op returning RV_OK (only a NULL buffer or matrix is refused).
 * Errors: RV_ERR_INVALID_ARG (NULL, aspect <= 0, a height outside 1..RV_OCCLUSION_MAX_SIZE,
 * a matrix whose screen rows do not locate the eye: the x, y and w rows of a perspective,
 * the x, y and z rows of an orthographic one, not invertible; an orthographic one with
 * w <= 0), RV_ERR_NOT_FINITE,
 * RV_ERR_OUT_OF_MEMORY; RV_ERR_BAD_STATE on a world's buffer (rv_world_occlusion: the world
 * alone begins it), which changes nothing. On any other error the buffer drops the frame: adds are refused with
 * RV_ERR_BAD_STATE and tests answer visible until the next successful begin (a stale view
 * can never cull). A perspective matrix is otherwise taken as it is: one with a singular
 * depth row (its near plane through the eye) or one that puts the scene at negative w
 * (nothing passes its clip tests, so every occluder is off-screen) is accepted and errs
 * toward drawing. */
RV_API rv_result rv_occlusion_begin(rv_occlusion *occlusion, const float view_projection[16], rv_clip clip,
                                    float aspect);

/* Declares an occluder box for this frame: local min/max corners (float[3], world units
 * before the matrix; min <= max; a zero extent makes a flat occluder, a quad, which hides
 * what is behind it and never what lies on it; a box flattened by a zero scale in its
 * matrix instead is not rasterised and counts as skipped_small, so give a quad its zero
 * extent in the box)
 * and a column-major local-to-world matrix (float[16]; NULL = identity; any invertible or
 * flattening affine matrix). Declare the solid you may be hidden by, never a larger box:
 * an occluder bigger than its solid hides things the camera can see.
 * The box is recorded; the freeze projects and draws the frame's occluders nearest first,
 * and one found wholly behind nearer ones is not drawn (drawing it could change nothing).
 * Small (min_occluder_texels), off-screen and behind-the-camera occluders are counted as
 * skipped at the freeze, not refused; so is one reaching beyond 1e7 world units from the
 * origin (float precision no longer bounds its silhouette safely: skipped_degenerate).
 * Width 0: no-op, RV_OK. Allocates only while the frame holds more occluders than any
 * frame before. Errors: RV_ERR_INVALID_ARG (NULL, min > max, a matrix whose last row is
 * not 0 0 0 1), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no successful begin this frame, or a
 * world's buffer: rv_world_occlusion), RV_ERR_FROZEN (a test or freeze already happened this frame), RV_ERR_OUT_OF_MEMORY.
 * On error nothing is added. */
RV_API rv_result rv_occlusion_add_occluder(rv_occlusion *occlusion, const float min[3], const float max[3],
                                           const float matrix[16]);

/* How a convex solid or mesh occluder is meant (rv_occluder_convex.flags,
 * rv_occluder_mesh.flags; 0 = the defaults). */
typedef enum rv_occluder_flag {
    /* The shape is the solid itself, exactly (a level brush, a closed mesh modelled as the
     * wall it stands for), not a bound around something smaller: a texel may keep the
     * solid's ENTRY side, its nearest surface, so what lies on the back of a wall is hidden
     * by the wall's front. Without it a convex solid or closed mesh keeps its far side, like
     * a box. A mesh takes it only with RV_OCCLUDER_CLOSED (an open mesh already keeps its
     * surfaces' own depth). */
    RV_OCCLUDER_EXACT = 1u << 0,
    /* Mesh only: the triangles close a solid, wound counter-clockwise seen from outside
     * (the right-hand normal (v1 - v0) x (v2 - v0) points out). Without it a mesh is a set
     * of opaque surfaces, each seen from both sides. */
    RV_OCCLUDER_CLOSED = 1u << 1
} rv_occluder_flag;

/* Most planes of a convex occluder. */
#define RV_OCCLUSION_MAX_PLANES 64u
/* Most vertices, and most triangles, of one mesh occluder. */
#define RV_OCCLUSION_MAX_MESH_VERTICES (1u << 20)
#define RV_OCCLUSION_MAX_MESH_TRIANGLES (1u << 20)

/* A convex solid in plane form, the way level formats hold a brush (a Quake III brush's
 * sides are exactly this): plane k is (a, b, c, d) = planes[k][0..3], outward normal
 * (a, b, c) (any length but zero), and the solid is every local point p with
 * a p.x + b p.y + c p.z <= d for every k (the opposite of rv_frustum's planes, whose
 * normals point inward with a point inside where a x + b y + c z + d >= 0: the frustum's
 * plane (a, b, c, d) bounds the same half-space as this form's (-a, -b, -c, d)). Redundant planes (a brush's bevels) are
 * allowed; the solid must be bounded, non-empty, have volume (a flat or nearly flat
 * solid, thinner than about 1e-7 of its size or of its planes' distance from the local
 * origin, whichever is larger, is refused: declare a quad as a box with a zero extent, or
 * as a mesh; a wall 1 cm thick written 1e6 units from its origin, which float rounds to no
 * thickness at all, is refused, the same wall written about its centre and placed by the
 * matrix is not) and reach no further than 1e7
 * local units from the origin.
 * Corners closer than about 1e-7 of the planes' distance from the local origin are taken
 * as one; a solid more than 100 times smaller than that distance whose corners and edges,
 * so rounded, stand off its planes by more than 1e-6 of its own size (it may be a sliver
 * of a few millimetres written kilometres from its origin) is accepted and drawn as
 * nothing (skipped_degenerate); one whose rounded corners still lie on its planes is drawn.
 * Write a brush's planes about its own centre and place it with the matrix to keep it
 * drawn. */
typedef struct rv_occluder_convex {
    const float (*planes)[4];
    uint32_t plane_count; /* 4 .. RV_OCCLUSION_MAX_PLANES */
    uint32_t flags;       /* 0 or RV_OCCLUDER_EXACT */
} rv_occluder_convex;

/* Indexed triangles: triangle t is positions[indices[3t]], [3t + 1], [3t + 2] (local
 * units). Open (flags without RV_OCCLUDER_CLOSED): opaque surfaces seen from both sides,
 * each texel keeping the surface's own depth. Closed: a solid (winding in
 * RV_OCCLUDER_CLOSED); a texel keeps the far side (the back-facing triangles' depth) or,
 * with RV_OCCLUDER_EXACT, the entry side (the front-facing ones'). Triangles of one mesh,
 * and of several occluders, that share an edge (the same two vertex positions, bit for
 * bit, whatever their indices) fuse exactly where a texel meets at most 32 of their
 * outlines (not in a frame without fusion, desc.fusion). A dense mesh (at least 32 triangles, the screen
 * part of its bounds holding at least 4,096 texels and fewer than 16 a triangle) is drawn
 * at once by its outline instead (docs/occlusion.md, "Dense meshes"): its triangles joined through edges shared by two
 * triangles on opposite sides on screen form parts, and a texel wholly inside a part,
 * with no edge of the part's outline through it, keeps the farthest of the part's depths
 * there; such edges leave no seam, texels on an outline (a border, a hole, a silhouette
 * fold) hide nothing by that part, triangles the near plane cuts are drawn as pieces, and
 * it fuses with no other occluder. Zero-area triangles (repeated indices, collinear corners) are
 * skipped and counted in triangles_degenerate. Triangles that share an edge (here, and for
 * the closed solid below, by vertex index: a mesh that repeats a corner under another index,
 * as render meshes do for normals, is drawn triangle by triangle, its seams still fused by
 * position), lie in one plane and make a convex polygon on screen (a vertex on one of its sides included) are
 * drawn as one piece, up to six of them when consecutive (list a face's triangles
 * together, as a fan or strip); a node's copy (rv_node_set_occluder_mesh) brings such
 * neighbours together once, when they lie within 32 triangles of one another (a
 * cache-optimised list). A closed mesh of at most
 * RV_OCCLUSION_MAX_PLANES triangles that bounds a convex solid (every edge in exactly two
 * triangles, in opposite directions; every vertex on or inside every triangle's plane) is
 * drawn as that solid, in one piece, like a convex occluder with the same flags. The
 * winding is read in the mesh's local space: under a matrix that mirrors (a negative
 * determinant, a node scaled by -1 on one axis) the mesh keeps the same side. The
 * winding of a closed mesh is the host's to get right: wound the other way, its faces
 * facing the camera are taken for its far side, and it keeps its near side, as if
 * RV_OCCLUDER_EXACT (safe for a real solid, nothing inside it being visible; not for a
 * bound around something smaller). Cost follows the pieces drawn, about a microsecond a
 * piece where seams meet; a dense mesh costs about 0.1 microsecond a triangle (a
 * 32,768-triangle wall filling a 256-wide view: 3-4 ms). An occluder mesh of a few hundred
 * large faces is still far cheaper than a render mesh: every triangle is projected, and
 * there is no size below which one is left out. */
typedef struct rv_occluder_mesh {
    const float (*positions)[3];
    uint32_t vertex_count; /* 1 .. RV_OCCLUSION_MAX_MESH_VERTICES */
    const uint32_t *indices;
    uint32_t index_count;  /* a multiple of 3, 3 .. 3 * RV_OCCLUSION_MAX_MESH_TRIANGLES */
    uint32_t flags;        /* RV_OCCLUDER_CLOSED, RV_OCCLUDER_EXACT (closed meshes) */
} rv_occluder_mesh;

/* Declares a convex occluder for this frame: the solid of convex (see rv_occluder_convex)
 * under matrix (column-major local-to-world float[16]; NULL = identity; affine and
 * invertible: a flattening matrix leaves it undrawn, counted skipped_small). The planes are
 * copied (with the solid's corners and edges, worked out here) into storage the buffer
 * reuses frame to frame: the host's array may change as soon as the call returns, and
 * steady frames allocate nothing. Depth: the far side, or the entry side with
 * RV_OCCLUDER_EXACT (an exact solid that crosses the near plane keeps its far side).
 * Drawn nearest first with the other occluders; skipped like a box when small, off screen,
 * or wholly behind nearer occluders. Six axis-aligned planes (a box brush) take a short
 * path; a level's static brushes are best set on nodes (rv_node_set_occluder_convex),
 * where this work is done once. Width 0: no-op, RV_OK (nothing is checked but NULL).
 * Errors (nothing added): RV_ERR_INVALID_ARG (NULL occlusion, convex or planes; fewer than
 * 4 planes; a zero normal; unknown flags; planes bounding nothing, an unbounded region, or
 * a solid reaching beyond 1e7 local units; a matrix whose last row is not 0 0 0 1),
 * RV_ERR_CAPACITY (more than RV_OCCLUSION_MAX_PLANES planes, or more occluders in the
 * frame than 32-bit counts hold), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (no successful begin
 * this frame, or a world's buffer), RV_ERR_FROZEN, RV_ERR_OUT_OF_MEMORY. Cost: O(planes^2 x corners) here,
 * once per call. */
RV_API rv_result rv_occlusion_add_convex(rv_occlusion *occlusion, const rv_occluder_convex *convex,
                                         const float matrix[16]);

/* Declares a mesh occluder for this frame: the triangles of mesh (see rv_occluder_mesh)
 * under matrix (as rv_occlusion_add_convex). Positions and indices are copied (only the
 * triangles that have area) into storage the buffer reuses frame to frame: the host's arrays
 * may change as soon as the call returns; steady frames allocate nothing. At the freeze
 * the mesh is first one item: when its bounds' screen rectangle is already strictly nearer
 * everywhere, it is hidden as a whole and none of its triangles is projected. Otherwise
 * each triangle (or run of coplanar ones) is drawn nearest first among all occluders and
 * skipped when wholly behind nearer ones; max_occluders counts triangles (when it caps a
 * frame, every triangle is ranked, without the whole-mesh step); min_occluder_texels
 * applies to the whole mesh's screen bounds (small meshes never occlude, but a mesh's
 * small triangles do).
 * Width 0: no-op, RV_OK. Errors (nothing added): RV_ERR_INVALID_ARG (NULL occlusion, mesh,
 * positions or indices; no vertex, no triangle, an index count not a multiple of 3, an
 * index out of range, unknown flags, EXACT without CLOSED, a matrix whose last row is not
 * 0 0 0 1), RV_ERR_CAPACITY (more than RV_OCCLUSION_MAX_MESH_VERTICES vertices or
 * RV_OCCLUSION_MAX_MESH_TRIANGLES triangles, or more triangles in the frame than 32-bit
 * counts hold), RV_ERR_NOT_FINITE (a position or the matrix), RV_ERR_BAD_STATE (no
 * successful begin this frame, or a world's buffer), RV_ERR_FROZEN, RV_ERR_OUT_OF_MEMORY. A mesh whose every triangle is degenerate is
 * accepted, counted, and draws nothing. */
RV_API rv_result rv_occlusion_add_mesh(rv_occlusion *occlusion, const rv_occluder_mesh *mesh, const float matrix[16]);

/* Rasterises this frame's occluders (the largest on screen first when max_occluders caps
 * them; ties in submission order) and builds the pyramid. Called implicitly by the first
 * test; calling it twice is harmless. After it, tests only read the buffer.
 * Width 0 or no begin yet: no-op, RV_OK. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_BAD_STATE (a world's buffer while its frame is open, before the cull: see
 * rv_world_occlusion; nothing changes). */
RV_API rv_result rv_occlusion_freeze(rv_occlusion *occlusion);

/* Tests a box: local min/max (float[3]) and matrix (float[16], NULL = identity).
 * *out_visible is false only when the box is certainly hidden by this frame's occluders
 * (rules in the preamble); it is true for anything whose screen rectangle lies beyond one
 * of the view's four sides (frustum culling is the host's or rv_frustum's job; a box beyond
 * a corner whose rectangle still meets the view may be answered hidden: it cannot be seen). Beyond the far plane, where a GPU draws
 * nothing, the occluders decide as anywhere else. Freezes the buffer. Width 0 or no view: true, RV_OK.
 * Errors (with *out_visible = true): RV_ERR_INVALID_ARG (NULL, min > max, a matrix whose
 * last row is not 0 0 0 1), RV_ERR_NOT_FINITE, RV_ERR_BAD_STATE (a world's buffer while its
 * frame is open, before the cull: see rv_world_occlusion). out_visible must not be NULL. */
RV_API rv_result rv_occlusion_test_box(rv_occlusion *occlusion, const float min[3], const float max[3],
                                       const float matrix[16], bool *out_visible);

/* Tests a sphere: local centre (float[3]), radius (local units, >= 0; scaled by the
 * matrix's largest axis scale), matrix (float[16], NULL = identity). Tested through its
 * world-space bounding box, so never tighter than that box. As rv_occlusion_test_box;
 * a negative radius is RV_ERR_INVALID_ARG. */
RV_API rv_result rv_occlusion_test_sphere(rv_occlusion *occlusion, const float center[3], float radius,
                                          const float matrix[16], bool *out_visible);

/* Batch box test, the hot loop: items first .. first + count - 1 of boxes (see
 * rv_occlusion_boxes), writing out_visible[i] = 1 (draw) or 0 (hidden) for each, at the
 * same index (the array must hold first + count bytes). Ranges let a job system split a
 * batch, but one buffer is used from one thread at a time. An invalid item (non-finite,
 * min > max, a matrix whose last row is not 0 0 0 1) is answered 1 and the call returns the code of the first one (RV_ERR_NOT_FINITE
 * or RV_ERR_INVALID_ARG) after answering every item. Width 0 or no view: all 1, RV_OK.
 * Errors: RV_ERR_INVALID_ARG (NULL arrays or out_visible, first + count overflowing),
 * RV_ERR_BAD_STATE (a world's buffer while its frame is open, before the cull: see
 * rv_world_occlusion; every item answered 1). */
RV_API rv_result rv_occlusion_test_boxes(rv_occlusion *occlusion, const rv_occlusion_boxes *boxes,
                                         uint32_t first, uint32_t count, uint8_t *out_visible);

/* Batch sphere test; as rv_occlusion_test_boxes with rv_occlusion_spheres (a negative
 * radius is an invalid item). */
RV_API rv_result rv_occlusion_test_spheres(rv_occlusion *occlusion, const rv_occlusion_spheres *spheres,
                                           uint32_t first, uint32_t count, uint8_t *out_visible);

/* This frame's counters (zeroes for NULL). */
RV_API rv_occlusion_stats rv_occlusion_get_stats(const rv_occlusion *occlusion);

/* Allocation counters of a standalone buffer, monotonic since creation (zeroes for NULL;
 * a world's buffer counts in rv_world_alloc_stats). */
RV_API rv_alloc_stats rv_occlusion_alloc_stats(const rv_occlusion *occlusion);

/* Number of pyramid levels of the current frame (level 0 is the buffer, each next level
 * halves both sizes rounding up, down to 1 x 1); 0 when width is 0 or before a begin. */
RV_API uint32_t rv_occlusion_level_count(const rv_occlusion *occlusion);

/* Debug read-out: level (0 = the buffer) as an 8-bit grey image, row 0 at clip-space
 * y = +w (see rv_occlusion_begin: flip it to show it over a y-down framebuffer whose
 * projection flips y), width * height bytes written to pixels (row-major, no padding).
 * Nearer = brighter: covered texels span 32..255 linearly in view depth over the frame's covered
 * range (the same scale at every level); 0 means no occluder. Each pyramid texel shows the
 * farthest depth of the texels it covers. out_width / out_height (either may be NULL)
 * receive the level's size; pixels may be NULL to ask only the size. With pixels it freezes
 * the buffer (a call for the size alone does not).
 * Width 0: sizes 0, RV_OK. Errors: RV_ERR_INVALID_ARG (NULL occlusion, level >= count,
 * pixels_size < width * height), RV_ERR_BAD_STATE (no successful begin this frame; with
 * pixels, a world's buffer while its frame is open, before the cull: see
 * rv_world_occlusion). */
RV_API rv_result rv_occlusion_debug_image(rv_occlusion *occlusion, uint32_t level, uint8_t *pixels,
                                          size_t pixels_size, uint32_t *out_width, uint32_t *out_height);

/* The depths the debug image's grey scale spans this frame, so a picture of it can state
 * them: *out_near (shown as 255) and *out_far (shown as 32) are the nearest and farthest
 * covered texel of level 0, as clip w for a perspective view (view depth, world units for a
 * rigid view matrix) or NDC z for an orthographic one. Both 0 when no texel is covered or
 * width is 0. Either output may be NULL. Freezes the buffer.
 * Errors: RV_ERR_INVALID_ARG (NULL occlusion), RV_ERR_BAD_STATE (no successful begin this
 * frame, or a world's buffer while its frame is open, before the cull: see
 * rv_world_occlusion); the outputs are untouched on error. */
RV_API rv_result rv_occlusion_debug_depth_range(rv_occlusion *occlusion, float *out_near, float *out_far);

/* ---- the depth feed: an earlier frame's GPU depth, reprojected ---------------------------
 *
 * A host that already renders a depth pre-pass and reads it back (one or more frames late)
 * can hand it to the buffer. rvis reprojects it into this frame's view conservatively and
 * combines it with this frame's occluders texel by texel (each proves "hidden beyond this
 * depth"; the buffer keeps the nearer proof). Nothing visible is ever hidden by it, under
 * the host's side of the contract below. Guide: docs/occlusion.md, "The depth feed".
 *
 * How the image is read: every texel is the depth at its centre (a single-sample image, as
 * a GPU's rasteriser writes it), trusted to the format's step and 2 float ulps of what the
 * feed's matrix gives for the true surface point (far from the origin, render
 * camera-relative: a GPU multiplying world positions of 1e5 by the whole matrix in float
 * writes depths far off that, yet locally planar, which the feed cannot tell). Neighbouring
 * samples are taken as one piece of surface only where four samples in a row and in a
 * column lie on a common plane to within feed_discontinuity of their depth (a silhouette, a
 * crease, a step is never bridged), and only samples the format resolves to an eighth of
 * that count; a texel is used only when its own 3 x 3 neighbourhood is such a piece, its
 * surface then bounded by the neighbourhood's depth range widened by the tolerance. The
 * clear value (the far end of the depth range: 1, or 0 with reversed-Z) is sky and hides
 * nothing; so do NaN and values outside 0..1 (counted); so does anything the old view did
 * not see. A buffer texel gets a depth from the feed only where every ray through it is
 * proven to cross such a piece of surface, from the side the old camera saw, no farther
 * than that depth.
 *
 * The host's side of the contract: the depth must hold only geometry that is still there,
 * where it was drawn (the static world: not moved, hidden, destroyed or unloaded since), and
 * is opaque where it was written. An object that moved would be hidden by its own old depth,
 * and a wall hidden or destroyed since (a node flagged hidden, a destructible wall, an
 * unloaded page) still hides through it what is behind it: rvis cannot tell, it only sees
 * depths, not who wrote them. In a frame where static geometry goes away, do not feed. Leave out of the pre-pass whatever moves (vehicles, characters, doors that
 * open) and whatever has holes finer than a feed texel (alpha-tested foliage, fences): what
 * lies between two samples is unknown, and rvis takes a gap narrower than a texel between
 * two samples on one plane as closed, as the GPU's own raster of that image would show it.
 * That holds for an opening in the static world too: a window no sample of the old image
 * looked through hides what is behind it for as long as the feed is used, even as the
 * camera comes near enough to see through it. A feed smaller than the view: draw the
 * pre-pass at the view's resolution and give each feed texel the farthest depth of the
 * pixels in it (the largest; the smallest with reversed-Z), as a hierarchical-Z level is
 * built, never one pixel of each block or their average: an opening the view's own pixels
 * see through, narrower than a feed texel (a crack where two surfaces fail to meet), then
 * reaches the feed as a far texel, which breaks the plane and proves nothing. */

/* Texel formats of a depth image, as a read-back gives them. Values are window depth in
 * 0..1 (near maps to 0, or to 1 with reversed-Z). */
typedef enum rv_depth_format {
    RV_DEPTH_FLOAT32 = 0,  /* float per texel (D32_FLOAT) */
    RV_DEPTH_UNORM16,      /* uint16_t per texel, depth = v / 65535 (D16_UNORM) */
    RV_DEPTH_UNORM24,      /* uint32_t per texel, depth in bits 0..23 (v & 0xFFFFFF) / 16777215,
                              bits 24..31 ignored (Direct3D's D24_UNORM_S8_UINT, Vulkan's
                              X8_D24_UNORM_PACK32 and D24_UNORM_S8_UINT read back as uint32) */
    RV_DEPTH_UNORM24_HIGH, /* uint32_t per texel, depth in bits 8..31 (v >> 8) / 16777215, bits
                              0..7 (stencil) ignored (OpenGL's GL_UNSIGNED_INT_24_8) */
    RV_DEPTH_FORMAT_COUNT_
} rv_depth_format;

/* One depth image from an earlier frame. All pointers are read during the call only. */
typedef struct rv_depth_feed {
    const void *texels;      /* width x height texels of format, rows row_pitch bytes apart; aligned
                                to the texel size (4 bytes, or 2 for unorm16) */
    uint32_t width, height;  /* texels, 1..desc.feed_max_width and 1..desc.feed_max_height */
    size_t row_pitch;        /* bytes from one row to the next (a read-back's padded pitch); 0 =
                                width times the texel size. A multiple of the texel size */
    rv_depth_format format;
    bool rows_bottom_up;     /* false: row 0 holds NDC y = +1 (Direct3D, Metal, WebGPU); true: row 0
                                holds NDC y = -1 (OpenGL's glReadPixels; Vulkan, whose NDC y
                                points down). Column 0 is NDC x = -1 either way */
    const float *view_projection; /* float[16], column-major, the matrix the image was rendered
                                     with (perspective or orthographic, any invertible one).
                                     In float, a camera far from the origin with a tiny near
                                     plane can round its depth row onto its w row: with
                                     standard depth, once the near distance is below about
                                     1e-8 of the eye's distance from the origin (near 1e-4 at
                                     1e4 units out, 1e-3 at 1e5) such a feed is refused (a
                                     little above, the rows still apart by a rounding or two,
                                     it is taken and proves nothing), though rv_frame,
                                     multiplying view and projection in double, takes that
                                     camera. Reversed-Z zero-to-one depth keeps the rows apart */
    rv_clip clip;            /* its depth convention */
    uint32_t age;            /* frames since it was rendered: 1 = the previous frame. 0 = this
                                frame's own view (a pre-pass drawn before the tests) */
} rv_depth_feed;

/* Per-frame counters of the feed, reset by rv_occlusion_begin. */
typedef struct rv_occlusion_feed_stats {
    uint32_t feeds_used;              /* feeds reprojected this frame (0 or 1; a second feed in a
                                         frame replaces the first) */
    uint32_t feeds_ignored_motion;    /* ignored: the eye moved or the view turned beyond
                                         feed_max_translation / feed_max_rotation since the feed */
    uint32_t feeds_ignored_projection;/* ignored: another projection (perspective against orthographic,
                                         or a field of view or centre more than about 1 % apart) */
    uint32_t feeds_ignored_age;       /* ignored: older than feed_max_age */
    uint32_t texels_fed;              /* texels of the feed used (width x height) */
    uint32_t texels_invalid;          /* NaN or outside 0..1: treated as nothing */
    uint32_t texels_sky;              /* the clear value: nothing drawn there */
    uint32_t texels_discontinuous;    /* valid depth samples that prove no surface: at a
                                         discontinuity (a silhouette, crease or the image's edge
                                         within two texels), or a depth the format does not
                                         resolve finely enough; fed = invalid + sky +
                                         discontinuous + the samples that prove surface */
    uint32_t texels_reprojected;      /* buffer texels the feed proved a depth for */
    uint32_t texels_raised;           /* of those, texels where the feed's depth is nearer than the
                                         occluders' (counted at the freeze) */
    uint64_t objects_hidden_by_feed;  /* tests answered hidden that this frame's occluders alone
                                         would have answered visible */
} rv_occlusion_feed_stats;

/* Hands the buffer a depth image from an earlier frame, to be reprojected into this frame's
 * view and combined with this frame's occluders at the freeze. Call it after
 * rv_occlusion_begin and before the freeze (the first test); a second call in a frame
 * replaces the first (one refused or ignored leaves it). The image is decoded and reprojected during the call; nothing of
 * feed is kept. With desc.width 0: no-op, RV_OK (only a NULL buffer or feed is refused; the
 * feed's fields are not read).
 * The feed is IGNORED for the frame (RV_OK, counted in rv_occlusion_feed_stats, the buffer
 * as if no feed came) when it is older than feed_max_age, when its projection differs from
 * this frame's (perspective against orthographic, or, the views' rotations taken out, their
 * screen rows' Gram matrices K K^T more than 1 % of their largest entry apart: a field of
 * view about 0.5 % wider, or, at a 60 degree field of view, a centre moved about 1.5 % of
 * the image's width; the tolerance is relative to the largest entry, so a wider view lets
 * the centre move less (about 0.5 % at 120 degrees) and a narrower one more (over 19 % at
 * 10 degrees and below); a sub-pixel jitter passes), or when the eye moved more than
 * feed_max_translation or the view turned more than feed_max_rotation since it was drawn.
 * An orthographic view's "eye" is the centre of its view volume's near face, which a
 * jitter moves by the jitter's size in world units: where half a pixel is wider than
 * feed_max_translation, raise it, or the jittered frames lose their feed.
 * Allocates only when the buffer has more rows than at any earlier feed (a steady frame
 * allocates nothing): the source side is sized at creation by feed_max_width x
 * feed_max_height.
 * Errors (nothing changes, a feed accepted earlier in the frame stays): RV_ERR_INVALID_ARG
 * (occlusion or feed NULL, texels or view_projection NULL, width or height 0, a format
 * outside the enum, row_pitch smaller than a row or not a multiple of the texel size or so
 * large that the image's size overflows, texels not aligned to the texel size, a matrix that is not invertible or whose depth does
 * not vary with distance), RV_ERR_NOT_FINITE (the matrix), RV_ERR_CAPACITY (width or height
 * above desc.feed_max_width / feed_max_height, or a buffer created without a feed
 * capacity), RV_ERR_BAD_STATE (no successful begin this frame, or a world's buffer: feed it
 * with rv_frame_feed_depth), RV_ERR_FROZEN (after the freeze), RV_ERR_OUT_OF_MEMORY. Texel values are never errors: NaN and values outside 0..1
 * hide nothing and are counted. */
RV_API rv_result rv_occlusion_feed_depth(rv_occlusion *occlusion, const rv_depth_feed *feed);

/* This frame's feed counters (zeroes for NULL). */
RV_API rv_occlusion_feed_stats rv_occlusion_get_feed_stats(const rv_occlusion *occlusion);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_OCCLUSION_H */
