/* Occluders into pieces (docs/occlusion.md): the blocks convex solids and meshes are kept
 * in, polytopes, the checks and copies of convex and mesh occluders, meshes' triangles and
 * runs of them as pieces, and dense meshes drawn by their outline.
 *   occlusion_prepare.c  a convex polytope (box or convex solid) as a piece
 *   occlusion_convex.c   convex occluders: validation, corners and edges from planes
 *   occlusion_mesh.c     mesh occluders: validation, copies, triangles as pieces
 *   occlusion_outline.c  dense meshes drawn by their outline
 * Included by the files that add, check, prepare or draw occluders (occlusion.c,
 * occlusion_freeze.c and the four above), the frame's occluder nodes and the tests that
 * look at shapes. */
#ifndef RVI_OCCLUSION_SHAPE_H
#define RVI_OCCLUSION_SHAPE_H

#include "occlusion.h"

/* ---- convex and mesh blocks ------------------------------------------------------------- */

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
/* Internal flag of a convex block whose corners and edges, as rounded, bound more than its
 * planes (a solid thin next to its distance from the local origin): drawn as nothing
 * (skipped_degenerate). */
#define RVI_OCC_INEXACT (1u << 10)
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

#endif
