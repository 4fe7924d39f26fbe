/* Mesh occluders (docs/design.md §4): indexed triangles, copied at add (only those with
 * area) into storage the buffer reuses frame to frame, or borrowed from a node; per frame
 * every vertex is projected once and each triangle becomes a piece, or a few consecutive
 * coplanar triangles that share edges and make a convex polygon on screen (a quad's two
 * halves, a face's fan, a vertex where the outline goes on straight included) become one:
 * the edges between them need no fusion then.
 *
 * Which triangles draw: an open mesh's every triangle not seen edge-on (a surface hides
 * from both sides, at its own depth); a closed mesh's back-facing triangles (its far side:
 * every ray through the solid's image leaves it through one) or, declared exact, all of
 * them (the solid's surface is real: the front ones give its entry side). A triangle's edges take their screen lines from
 * their two projected end points (rvi_occ_segment_line, in canonical order) and a
 * near-clipped edge is cut at a canonical point (rvi_occ_cut), so triangles sharing an
 * edge, in one mesh or two, see it on the same line bit for bit and fuse without a seam. */
#include "occlusion_shape.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The nearest point's nearness is rounded nearer, the farthest's farther, by this fraction:
 * one part in 1e9 covers the few roundings of 1/w many times over. */
#define NEARNESS_ROUNDING 1e-9
#define TINY 1e-300
/* Footprint rectangles grow by this many texels beyond the projected corners (double
 * rounding of the projection is far below it). */
#define FOOTPRINT_MARGIN 1e-6
/* A run: at most this many triangles (one depth plane each)... */
#define RUN_MAX RVI_OCC_MAX_PLANES
/* ...each within this fraction of its extent from the first one's plane (the bound is the
 * smallest of their planes, so this keeps it tight, not safe: any run would be)... */
#define RUN_COPLANAR 1e-4
/* ...and turning the same way at every corner of their outline by at least this fraction
 * of the product of the two edges' lengths (strictly convex, with room for rounding), or
 * going on straight to within it at a corner the triangle does not add. Bent inward by
 * rounding there, the outline's half-planes (each on the side its winding puts inside:
 * add_outline_edge) bound a region inside the triangles: the piece is that region, and
 * its depth bound holds over all of the triangles. */
#define RUN_CONVEX 1e-9

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* ---- adding ------------------------------------------------------------------------------- */

/* Zero area in local space: repeated corners, or collinear ones (the cross product of two
 * float differences, in double, is exactly zero). */
bool rvi_occ_triangle_degenerate(const float (*pos)[3], const uint32_t *idx)
{
    if (idx[0] == idx[1] || idx[1] == idx[2] || idx[0] == idx[2])
        return true;
    const float *a = pos[idx[0]], *b = pos[idx[1]], *c = pos[idx[2]];
    double u[3], v[3];
    for (int i = 0; i < 3; i++) {
        u[i] = (double)b[i] - a[i];
        v[i] = (double)c[i] - a[i];
    }
    double n0 = u[1] * v[2] - u[2] * v[1], n1 = u[2] * v[0] - u[0] * v[2], n2 = u[0] * v[1] - u[1] * v[0];
    return n0 == 0 && n1 == 0 && n2 == 0;
}

rv_result rvi_occ_mesh_check(const rv_occluder_mesh *mesh, uint32_t *triangles)
{
    if (!mesh || !mesh->positions || !mesh->indices)
        return RV_ERR_INVALID_ARG;
    if (mesh->flags & ~(uint32_t)(RV_OCCLUDER_EXACT | RV_OCCLUDER_CLOSED))
        return RV_ERR_INVALID_ARG;
    if ((mesh->flags & RV_OCCLUDER_EXACT) && !(mesh->flags & RV_OCCLUDER_CLOSED))
        return RV_ERR_INVALID_ARG;
    if (mesh->vertex_count > RV_OCCLUSION_MAX_MESH_VERTICES || mesh->index_count / 3 > RV_OCCLUSION_MAX_MESH_TRIANGLES)
        return RV_ERR_CAPACITY;
    if (mesh->vertex_count == 0 || mesh->index_count == 0 || mesh->index_count % 3)
        return RV_ERR_INVALID_ARG;
    for (uint32_t i = 0; i < mesh->index_count; i++)
        if (mesh->indices[i] >= mesh->vertex_count)
            return RV_ERR_INVALID_ARG;
    for (uint32_t v = 0; v < mesh->vertex_count; v++)
        if (!rvi_finite_n(mesh->positions[v], 3))
            return RV_ERR_NOT_FINITE;
    uint32_t n = 0;
    for (uint32_t t = 0; t < mesh->index_count; t += 3)
        n += !rvi_occ_triangle_degenerate(mesh->positions, mesh->indices + t);
    *triangles = n;
    return RV_OK;
}

/* ---- outlines of runs ------------------------------------------------------------------ */

/* The first outline edge (v[*at], v[*at + 1]) that triangle tri shares, and tri's third
 * corner: false when it shares none, or that corner is on the outline already. */
static bool outline_edge(const uint32_t *v, uint32_t n, const uint32_t tri[3], uint32_t *at, uint32_t *third)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = v[i], b = v[(i + 1) % n];
        int ha = -1, hb = -1;
        for (int k = 0; k < 3; k++) {
            ha = tri[k] == a ? k : ha;
            hb = tri[k] == b ? k : hb;
        }
        if (ha < 0 || hb < 0)
            continue;
        uint32_t c = tri[3 - ha - hb];
        for (uint32_t j = 0; j < n; j++)
            if (v[j] == c)
                return false;
        *at = i;
        *third = c;
        return true;
    }
    return false;
}

/* Puts c into the outline after v[at]. */
static void outline_insert(uint32_t *v, uint32_t *n, uint32_t at, uint32_t c)
{
    memmove(&v[at + 2], &v[at + 1], (*n - at - 1) * sizeof *v);
    v[at + 1] = c;
    (*n)++;
}

/* ---- the order of a copy: coplanar neighbours next to each other ----------------------- */

/* Triangles looked at ahead of a run for one that joins it: a mesh optimised for a
 * vertex cache, or a level's surface, keeps a polygon's triangles near one another. */
#define ORDER_WINDOW 32u

/* The outline of a run being gathered in the copy, in the mesh's own space (the same test
 * as on screen, rvi_occ_mesh_run: convex, or straight at a corner the triangle does not
 * add; a projection keeps a polygon in front of the eye convex). */
typedef struct order_run {
    uint32_t v[RUN_MAX + 2];
    uint32_t n;
    double normal[3], c, mag; /* the first triangle's plane and |normal|_1 */
} order_run;

static double order_turn(const float (*pos)[3], const order_run *o, uint32_t p, uint32_t q, uint32_t r,
                         double *scale)
{
    double u[3], w[3];
    for (int i = 0; i < 3; i++) {
        u[i] = (double)pos[q][i] - pos[p][i];
        w[i] = (double)pos[r][i] - pos[q][i];
    }
    double x[3] = { u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0] };
    *scale = (fabs(u[0]) + fabs(u[1]) + fabs(u[2])) * (fabs(w[0]) + fabs(w[1]) + fabs(w[2])) * o->mag;
    return x[0] * o->normal[0] + x[1] * o->normal[1] + x[2] * o->normal[2];
}

static bool order_straight_ok(const float (*pos)[3], const order_run *o, uint32_t p, uint32_t q, uint32_t r)
{
    double scale, t = order_turn(pos, o, p, q, r, &scale), dot = 0;
    for (int i = 0; i < 3; i++)
        dot += ((double)pos[q][i] - pos[p][i]) * ((double)pos[r][i] - pos[q][i]);
    return t > RUN_CONVEX * scale || (t >= -RUN_CONVEX * scale && dot > 0);
}

/* Joins triangle tri to the run where it shares an outline edge and keeps the outline
 * convex in the run's plane; false (nothing changed) otherwise. */
static bool order_join(const float (*pos)[3], order_run *o, const uint32_t tri[3])
{
    for (int k = 0; k < 3; k++) {
        const float *w = pos[tri[k]];
        double d = o->normal[0] * w[0] + o->normal[1] * w[1] + o->normal[2] * w[2] + o->c;
        double ext = fabs((double)w[0] - pos[o->v[0]][0]) + fabs((double)w[1] - pos[o->v[0]][1]) +
                     fabs((double)w[2] - pos[o->v[0]][2]);
        if (!(fabs(d) <= RUN_COPLANAR * o->mag * ext))
            return false;
    }
    uint32_t i, c;
    if (!outline_edge(o->v, o->n, tri, &i, &c))
        return false;
    uint32_t a = o->v[i], b = o->v[(i + 1) % o->n], prev = o->v[(i + o->n - 1) % o->n], next = o->v[(i + 2) % o->n];
    double scale, mid = order_turn(pos, o, a, c, b, &scale);
    if (!(mid > RUN_CONVEX * scale) || !order_straight_ok(pos, o, prev, a, c) || !order_straight_ok(pos, o, c, b, next))
        return false;
    outline_insert(o->v, &o->n, i, c);
    return true;
}

/* Reorders the n triangles of idx so that each run the freeze can merge lies in
 * consecutive triangles: after a run's triangles come those (among the next ORDER_WINDOW)
 * that join it, as long as they do. Only the order changes: the same triangles, each with
 * its corners in the same order. */
static void order_runs(const float (*pos)[3], uint32_t *idx, uint32_t n)
{
    for (uint32_t t = 0; t < n;) {
        order_run o;
        const uint32_t *first = idx + 3 * (size_t)t;
        double u[3], w[3];
        for (int i = 0; i < 3; i++) {
            u[i] = (double)pos[first[1]][i] - pos[first[0]][i];
            w[i] = (double)pos[first[2]][i] - pos[first[0]][i];
        }
        o.normal[0] = u[1] * w[2] - u[2] * w[1];
        o.normal[1] = u[2] * w[0] - u[0] * w[2];
        o.normal[2] = u[0] * w[1] - u[1] * w[0];
        o.mag = fabs(o.normal[0]) + fabs(o.normal[1]) + fabs(o.normal[2]);
        o.c = -(o.normal[0] * pos[first[0]][0] + o.normal[1] * pos[first[0]][1] + o.normal[2] * pos[first[0]][2]);
        memcpy(o.v, first, 3 * sizeof *first);
        o.n = 3;
        uint32_t run = 1;
        while (run < RUN_MAX && t + run < n) {
            uint32_t end = n - (t + run) < ORDER_WINDOW ? n : t + run + ORDER_WINDOW, j = t + run;
            while (j < end && !order_join(pos, &o, idx + 3 * (size_t)j))
                j++;
            if (j == end)
                break;
            uint32_t *at = idx + 3 * (size_t)(t + run), *from = idx + 3 * (size_t)j, keep[3];
            memcpy(keep, from, sizeof keep); /* moved to the run's end, the rest keep their order */
            memmove(at + 3, at, (size_t)(j - (t + run)) * 3 * sizeof *at);
            memcpy(at, keep, sizeof keep);
            run++;
        }
        t += run;
    }
}

void rvi_occ_mesh_copy(const rv_occluder_mesh *mesh, uint32_t triangles, bool order, void *out)
{
    rvi_occ_mesh_data *d = out;
    d->vertex_count = mesh->vertex_count;
    d->triangle_count = triangles;
    d->degenerate_count = mesh->index_count / 3 - triangles;
    d->flags = mesh->flags;
    float (*pos)[3] = (float (*)[3])(void *)(d + 1);
    memcpy(pos, mesh->positions, (size_t)mesh->vertex_count * sizeof *pos);
    uint32_t *idx = (uint32_t *)(void *)(pos + mesh->vertex_count), n = 0;
    if (triangles == mesh->index_count / 3) { /* nothing to leave out (the usual case) */
        memcpy(idx, mesh->indices, (size_t)mesh->index_count * sizeof *idx);
        n = triangles;
    }
    for (uint32_t t = 0; t < mesh->index_count && n < triangles; t += 3)
        if (!rvi_occ_triangle_degenerate(mesh->positions, mesh->indices + t)) {
            memcpy(idx + 3 * (size_t)n, mesh->indices + t, 3 * sizeof *idx);
            n++;
        }
    if (order)
        order_runs((const float (*)[3])pos, idx, n);
    for (int i = 0; i < 3; i++) {
        d->bounds_min[i] = FLT_MAX;
        d->bounds_max[i] = -FLT_MAX;
    }
    /* Bounds of the vertices the triangles use (the footprint of the whole mesh); when
     * there are no more vertices than corners of triangles (any mesh that shares them),
     * of every vertex: a bound all the same, found in fewer steps. */
    bool all = mesh->vertex_count <= 3 * n;
    uint32_t count = all ? mesh->vertex_count : 3 * n;
    for (uint32_t k = 0; k < count; k++) {
        const float *c = pos[all ? k : idx[k]];
        for (int i = 0; i < 3; i++) {
            d->bounds_min[i] = c[i] < d->bounds_min[i] ? c[i] : d->bounds_min[i];
            d->bounds_max[i] = c[i] > d->bounds_max[i] ? c[i] : d->bounds_max[i];
        }
    }
    if (n == 0)
        for (int i = 0; i < 3; i++)
            d->bounds_min[i] = d->bounds_max[i] = 0;
}

/* RVI_OCC_INPUT_MIRRORED when matrix's linear part has a negative determinant (NULL:
 * identity). Worked out in double from the float entries, whose rounding errs by under 5e-15
 * of the product of the columns' lengths: a sign it could flip belongs to a matrix that
 * flattens the solid to within float precision of its size, where its near and far sides
 * are one surface to the precision of its own corners. */
static uint8_t matrix_handedness(const float *m)
{
    if (!m)
        return 0;
    double c[3][3];
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            c[j][i] = m[4 * j + i];
    double det = c[0][0] * (c[1][1] * c[2][2] - c[1][2] * c[2][1]) - c[1][0] * (c[0][1] * c[2][2] - c[0][2] * c[2][1]) +
                 c[2][0] * (c[0][1] * c[1][2] - c[0][2] * c[1][1]);
    return det < 0 ? RVI_OCC_INPUT_MIRRORED : 0;
}

static rv_result push_mesh(rv_occlusion *occ, const rvi_occ_mesh_data *block, const rv_occluder_mesh *mesh,
                           uint32_t triangles, const float *matrix)
{
    rvi_occ_input in;
    memset(&in, 0, sizeof in);
    in.kind = RVI_OCC_MESH;
    void *data = NULL;
    uint32_t vertices = block ? block->vertex_count : mesh->vertex_count;
    size_t size = block ? 0 : rvi_occ_mesh_size(mesh->vertex_count, triangles);
    RVI_TRY(rvi_occ_outline_reserve(occ, triangles, vertices));
    RVI_TRY(rvi_occ_push(occ, &in, matrix, triangles, vertices, block, size, &data));
    if (!block) {
        rvi_occ_mesh_copy(mesh, triangles, false, data);
        block = data;
    }
    rvi_occ_input *last = &RVI_VEC_AT(occ->inputs, rvi_occ_input, occ->inputs.count - 1);
    last->flags = (uint8_t)(block->flags & (RV_OCCLUDER_EXACT | RV_OCCLUDER_CLOSED)) | matrix_handedness(matrix);
    memcpy(last->min, block->bounds_min, sizeof last->min);
    memcpy(last->max, block->bounds_max, sizeof last->max);
    occ->stats.triangles_submitted += block->triangle_count + block->degenerate_count;
    occ->stats.triangles_degenerate += block->degenerate_count;
    return RV_OK;
}

rv_result rv_occlusion_add_mesh(rv_occlusion *occ, const rv_occluder_mesh *mesh, const float matrix[16])
{
    if (occ && occ->lent)
        return RV_ERR_BAD_STATE;
    return rvi_occlusion_add_mesh(occ, mesh, matrix);
}

rv_result rvi_occlusion_add_mesh(rv_occlusion *occ, const rv_occluder_mesh *mesh, const float matrix[16])
{
    if (!occ || !mesh)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    RVI_TRY(rvi_occ_add_checks(occ, matrix));
    uint32_t triangles;
    RVI_TRY(rvi_occ_mesh_check(mesh, &triangles));
    /* Small and closed: maybe a convex solid, found out at the freeze if it is not hidden
     * as a whole, in scratch made now (the freeze never allocates). */
    bool made = (mesh->flags & RV_OCCLUDER_CLOSED) && triangles <= RV_OCCLUSION_MAX_PLANES && !occ->convex_scratch;
    if (made && !(occ->convex_scratch = rvi_alloc(occ->heap, rvi_occ_convex_scratch_size())))
        return RV_ERR_OUT_OF_MEMORY;
    rv_result r = push_mesh(occ, NULL, mesh, triangles, matrix);
    if (r != RV_OK && made) { /* a refused call keeps no memory */
        rvi_free(occ->heap, occ->convex_scratch, rvi_occ_convex_scratch_size());
        occ->convex_scratch = NULL;
    }
    return r;
}

rv_result rvi_occlusion_add_block(rv_occlusion *occ, rvi_occ_kind kind, const void *block, const float matrix[16])
{
    if (occ->width == 0)
        return RV_OK;
    RVI_TRY(rvi_occ_add_checks(occ, matrix));
    if (kind == RVI_OCC_MESH) {
        /* A node's closed mesh small enough to be a convex solid was made one when set. */
        const rvi_occ_mesh_data *m = block;
        return push_mesh(occ, m, NULL, m->triangle_count, matrix);
    }
    const rvi_occ_convex_data *c = block;
    rvi_occ_input in;
    memset(&in, 0, sizeof in);
    in.kind = RVI_OCC_CONVEX;
    in.flags = (uint8_t)(c->flags & RV_OCCLUDER_EXACT);
    memcpy(in.min, c->bounds_min, sizeof in.min);
    memcpy(in.max, c->bounds_max, sizeof in.max);
    RVI_TRY(rvi_occ_push(occ, &in, matrix, 1, 0, block, 0, NULL));
    occ->stats.triangles_submitted += c->triangle_count + c->degenerate_count;
    occ->stats.triangles_degenerate += c->degenerate_count;
    return RV_OK;
}

/* ---- per frame -------------------------------------------------------------------------- */

void rvi_occ_mesh_project(const rv_occlusion *occ, const rvi_occ_input *in, rvi_occ_vertex *out)
{
    const rvi_occ_view *v = &occ->view;
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, in);
    const float (*pos)[3] = rvi_occ_mesh_positions(mesh);
    const float *m = rvi_occ_input_matrix(occ, in);
    for (uint32_t k = 0; k < mesh->vertex_count; k++) {
        const float *p = pos[k];
        rvi_occ_vertex *o = &out[k];
        for (int i = 0; i < 3; i++)
            o->world[i] = m ? (double)m[i] * p[0] + (double)m[4 + i] * p[1] + (double)m[8 + i] * p[2] + (double)m[12 + i]
                            : (double)p[i];
        for (int r = 0; r < 5; r++) {
            double rr[4];
            for (int j = 0; j < 4; j++)
                rr[j] = r < 4 ? v->vp[j * 4 + r] : v->clip_row[j];
            o->clip[r] = rr[0] * o->world[0] + rr[1] * o->world[1] + rr[2] * o->world[2] + rr[3];
        }
        o->nearness = NAN;
        o->texel[0] = o->texel[1] = NAN;
        if (o->clip[4] >= 0 && !rvi_occ_project(v, o->clip, o->texel, &o->nearness))
            o->nearness = NAN; /* not safely in front of the eye: its triangles are degenerate */
    }
}

/* The triangle's world plane (outward for a closed mesh's winding) at the eye. False when
 * it has no area in world space (a flattening matrix) or a corner reaches beyond
 * RVI_OCC_MAX_COORD. */
bool rvi_occ_triangle_plane(const rvi_occ_view *v, const rvi_occ_vertex *a, const rvi_occ_vertex *b,
                            const rvi_occ_vertex *c, rvi_occ_plane *pl)
{
    double u[3], w[3];
    for (int i = 0; i < 3; i++) {
        if (!(fabs(a->world[i]) <= RVI_OCC_MAX_COORD && fabs(b->world[i]) <= RVI_OCC_MAX_COORD &&
              fabs(c->world[i]) <= RVI_OCC_MAX_COORD))
            return false;
        u[i] = b->world[i] - a->world[i];
        w[i] = c->world[i] - a->world[i];
    }
    pl->n[0] = u[1] * w[2] - u[2] * w[1];
    pl->n[1] = u[2] * w[0] - u[0] * w[2];
    pl->n[2] = u[0] * w[1] - u[1] * w[0];
    if (pl->n[0] == 0 && pl->n[1] == 0 && pl->n[2] == 0)
        return false;
    pl->c = -(pl->n[0] * a->world[0] + pl->n[1] * a->world[1] + pl->n[2] * a->world[2]);
    rvi_occ_plane_eye(v, pl);
    return true;
}

/* Is the triangle drawn this frame (not edge-on; for a closed mesh's far side, facing
 * away)? The plane's side is the world winding's, which a mirroring matrix reverses. An
 * exact closed mesh is its surface, like an open mesh: every triangle draws at its own
 * depth, the front ones nearest (the back ones behind them are then skipped as hidden), and
 * where the near plane cuts the front away the back ones still cover. */
static bool drawn_side(const rvi_occ_input *in, const rvi_occ_plane *pl)
{
    double tol = RVI_OCC_EDGE_ON * pl->pe_mag;
    bool front = pl->pe > tol, back = pl->pe < -tol;
    if ((in->flags & RV_OCCLUDER_CLOSED) && !(in->flags & RV_OCCLUDER_EXACT))
        return (in->flags & RVI_OCC_INPUT_MIRRORED) ? front : back;
    return front || back;
}

bool rvi_occ_triangle_footprint(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vert,
                                uint32_t t, rvi_occ_footprint *fp, bool *degen)
{
    const uint32_t *idx = rvi_occ_mesh_indices(rvi_occ_input_mesh(occ, in)) + 3 * (size_t)t;
    const rvi_occ_vertex *p[3] = { &vert[idx[0]], &vert[idx[1]], &vert[idx[2]] };
    rvi_occ_plane pl;
    *degen = !rvi_occ_triangle_plane(&occ->view, p[0], p[1], p[2], &pl);
    if (*degen || !drawn_side(in, &pl))
        return false;
    int behind = 0;
    double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY, near = -INFINITY;
    for (int k = 0; k < 3; k++) {
        if (p[k]->clip[4] < 0) {
            behind++;
            continue;
        }
        if (!(p[k]->nearness == p[k]->nearness)) {
            *degen = true;
            return false;
        }
        minx = dmin(minx, p[k]->texel[0]);
        maxx = dmax(maxx, p[k]->texel[0]);
        miny = dmin(miny, p[k]->texel[1]);
        maxy = dmax(maxy, p[k]->texel[1]);
        near = dmax(near, p[k]->nearness);
    }
    fp->on = behind == 3 ? RVI_OCC_AWAY : 0;
    if (behind)
        return true; /* crosses the near plane: among the nearest, always drawn */
    double W = occ->width, H = occ->height, m = FOOTPRINT_MARGIN + 1e-12 * (fabs(minx) + fabs(maxx) + fabs(miny) + fabs(maxy));
    minx -= m;
    miny -= m;
    maxx += m;
    maxy += m;
    if (maxx < 0 || minx > W || maxy < 0 || miny > H) {
        fp->on = RVI_OCC_AWAY;
        return true;
    }
    fp->x0 = (int32_t)floor(dmax(minx, 0));
    fp->y0 = (int32_t)floor(dmax(miny, 0));
    fp->x1 = (int32_t)floor(dmin(maxx, W - 1));
    fp->y1 = (int32_t)floor(dmin(maxy, H - 1));
    fp->nearness = -rvi_occ_f_down(-(near + fabs(near) * NEARNESS_ROUNDING + TINY));
    fp->on = RVI_OCC_ON;
    return true;
}

/* ---- a triangle as a piece ---------------------------------------------------------------- */

typedef struct poly_point {
    double clip[5];
    double texel[2];
    double nearness;
} poly_point;

/* The triangle's part beyond the near plane (Sutherland & Hodgman, one plane): up to four
 * points, cut points canonical. False when a point cannot be projected. */
static bool clip_triangle(const rvi_occ_view *v, const rvi_occ_vertex *const p[3], poly_point out[4], int *n)
{
    *n = 0;
    for (int k = 0; k < 3; k++) {
        const rvi_occ_vertex *a = p[k], *b = p[(k + 1) % 3];
        bool ka = a->clip[4] >= 0, kb = b->clip[4] >= 0;
        if (ka) {
            poly_point *o = &out[(*n)++];
            memcpy(o->clip, a->clip, sizeof o->clip);
            memcpy(o->texel, a->texel, sizeof o->texel);
            o->nearness = a->nearness;
            if (!(o->nearness == o->nearness))
                return false;
        }
        if (ka != kb) {
            poly_point *o = &out[(*n)++];
            rvi_occ_cut(a->clip, b->clip, o->clip);
            if (!rvi_occ_project(v, o->clip, o->texel, &o->nearness))
                return false;
        }
    }
    return *n >= 3;
}

/* Appends the outline edge a -> b of the draft's piece, facing the piece's centroid
 * (cx, cy). A segment without length (a cut point on a corner) adds nothing. False when the
 * piece is too thin there to tell the sides apart: seen edge-on, it covers nothing. */
static bool add_outline_edge(rvi_occ_draft *d, const double a[2], const double b[2], double cx, double cy,
                             double orient)
{
    rvi_occ_piece *pc = &d->piece;
    rvi_occ_edge *e = &d->edge[pc->edge_count];
    if (!rvi_occ_segment_line(a, b, e))
        return true;
    double side = e->line[0] * cx + e->line[1] * cy + e->line[2];
    if (!(fabs(side) > 4 * e->slack))
        return false;
    /* A run's outline turns orient's way: its inside lies that way of each edge from a to b.
     * A centre on the other side (a strip thinner than a corner's bend) draws nothing. */
    double left = e->line[1] * (b[0] - a[0]) - e->line[0] * (b[1] - a[1]);
    if (orient != 0 && !((left * orient > 0) == (side > 0)))
        return false;
    e->side = side > 0 ? 1 : -1;
    pc->edge_count++;
    return true;
}

rvi_occ_prepare rvi_occ_prepare_triangle(const rv_occlusion *occ, const rvi_occ_input *in,
                                         const rvi_occ_vertex *vert, uint32_t t, rvi_occ_draft *d)
{
    const rvi_occ_view *v = &occ->view;
    const uint32_t *idx = rvi_occ_mesh_indices(rvi_occ_input_mesh(occ, in)) + 3 * (size_t)t;
    const rvi_occ_vertex *p[3] = { &vert[idx[0]], &vert[idx[1]], &vert[idx[2]] };
    rvi_occ_piece *pc = &d->piece;
    memset(pc, 0, sizeof *pc);
    d->x0 = d->y0 = 0;
    d->x1 = d->y1 = -1;
    rvi_occ_plane pl;
    if (!rvi_occ_triangle_plane(v, p[0], p[1], p[2], &pl))
        return RVI_OCC_DEGENERATE;
    poly_point q[4];
    int n;
    if (!clip_triangle(v, p, q, &n))
        return p[0]->clip[4] < 0 && p[1]->clip[4] < 0 && p[2]->clip[4] < 0 ? RVI_OCC_OFFSCREEN : RVI_OCC_DEGENERATE;
    double cx = 0, cy = 0, far = INFINITY, near = -INFINITY;
    double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
    for (int k = 0; k < n; k++) {
        cx += q[k].texel[0] / n;
        cy += q[k].texel[1] / n;
        far = dmin(far, q[k].nearness);
        near = dmax(near, q[k].nearness);
        minx = dmin(minx, q[k].texel[0]);
        maxx = dmax(maxx, q[k].texel[0]);
        miny = dmin(miny, q[k].texel[1]);
        maxy = dmax(maxy, q[k].texel[1]);
    }
    if (maxx <= 0 || minx >= v->texels_w || maxy <= 0 || miny >= v->texels_h)
        return RVI_OCC_OFFSCREEN;
    /* Edges, each on the side of the polygon's centroid; a polygon too thin to tell is
     * seen edge-on and covers nothing. */
    for (int k = 0; k < n; k++)
        if (!add_outline_edge(d, q[k].texel, q[(k + 1) % n].texel, cx, cy, 0))
            return RVI_OCC_SMALL;
    if (pc->edge_count < 3)
        return RVI_OCC_SMALL;
    pc->floor = rvi_occ_f_down(far - fabs(far) * NEARNESS_ROUNDING - TINY);
    pc->top = -rvi_occ_f_down(-(near + fabs(near) * NEARNESS_ROUNDING + TINY));
    /* The surface's own plane bounds its nearness in every texel; seen too nearly edge-on to
     * bound, the floor alone does. */
    if (rvi_occ_plane_texel_min(v, &pl, pc->plane[0]))
        pc->plane_count = 1;
    d->bounds[0] = minx;
    d->bounds[1] = miny;
    d->bounds[2] = maxx;
    d->bounds[3] = maxy;
    d->x0 = (int32_t)ceil(dmax(minx, 0));
    d->x1 = (int32_t)floor(dmin(maxx, v->texels_w)) - 1;
    d->y0 = (int32_t)ceil(dmax(miny, 0));
    d->y1 = (int32_t)floor(dmin(maxy, v->texels_h)) - 1;
    return RVI_OCC_PREPARED;
}

/* ---- runs: coplanar neighbours as one piece --------------------------------------------- */

typedef struct run_outline {
    uint32_t v[RUN_MAX + 2]; /* vertex indices, in order around */
    uint32_t n;
    double orient; /* +1 or -1: the way the outline turns on screen */
} run_outline;

/* Turns p -> q -> r the outline's way, clearly? */
static bool turns(const rvi_occ_vertex *vert, uint32_t p, uint32_t q, uint32_t r, double orient)
{
    const double *a = vert[p].texel, *b = vert[q].texel, *c = vert[r].texel;
    double ux = b[0] - a[0], uy = b[1] - a[1], wx = c[0] - b[0], wy = c[1] - b[1];
    double cr = (ux * wy - uy * wx) * orient;
    return cr > RUN_CONVEX * (fabs(ux) + fabs(uy)) * (fabs(wx) + fabs(wy));
}

/* Turns p -> q -> r the outline's way, or goes on straight to within rounding (q on the
 * line from p to r: a corner of a neighbouring surface that the level put on this one's
 * edge, so that the two share it)? */
static bool turns_or_straight(const rvi_occ_vertex *vert, uint32_t p, uint32_t q, uint32_t r, double orient)
{
    const double *a = vert[p].texel, *b = vert[q].texel, *c = vert[r].texel;
    double ux = b[0] - a[0], uy = b[1] - a[1], wx = c[0] - b[0], wy = c[1] - b[1];
    double cr = (ux * wy - uy * wx) * orient, tol = RUN_CONVEX * (fabs(ux) + fabs(uy)) * (fabs(wx) + fabs(wy));
    return cr > tol || (cr >= -tol && ux * wx + uy * wy > 0);
}

/* Adds the triangle's third vertex where it shares an outline edge; with check, only when
 * the vertex lies clearly beyond that edge and the outline stays convex, or straight at the
 * edge's ends. */
static bool run_insert(const rvi_occ_vertex *vert, run_outline *o, const uint32_t idx[3], bool check)
{
    uint32_t i, c;
    if (!outline_edge(o->v, o->n, idx, &i, &c))
        return false;
    uint32_t a = o->v[i], b = o->v[(i + 1) % o->n], prev = o->v[(i + o->n - 1) % o->n], next = o->v[(i + 2) % o->n];
    if (check && !(turns_or_straight(vert, prev, a, c, o->orient) && turns(vert, a, c, b, o->orient) &&
                   turns_or_straight(vert, c, b, next, o->orient)))
        return false;
    outline_insert(o->v, &o->n, i, c);
    return true;
}

static void run_start(const rvi_occ_vertex *vert, const uint32_t idx[3], run_outline *o)
{
    memcpy(o->v, idx, 3 * sizeof *idx);
    o->n = 3;
    const double *a = vert[idx[0]].texel, *b = vert[idx[1]].texel, *c = vert[idx[2]].texel;
    o->orient = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]) < 0 ? -1.0 : 1.0;
}

/* Is w within RUN_COPLANAR of its extent from the plane? */
static bool near_plane(const rvi_occ_plane *pl, const double a[3], const double w[3])
{
    double s = pl->n[0] * w[0] + pl->n[1] * w[1] + pl->n[2] * w[2] + pl->c;
    double nm = fabs(pl->n[0]) + fabs(pl->n[1]) + fabs(pl->n[2]);
    double ext = fabs(w[0] - a[0]) + fabs(w[1] - a[1]) + fabs(w[2] - a[2]);
    return fabs(s) <= RUN_COPLANAR * nm * ext;
}

uint32_t rvi_occ_mesh_run(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vert, uint32_t t,
                          uint32_t limit, rvi_occ_footprint *fp)
{
    const uint32_t *idx = rvi_occ_mesh_indices(rvi_occ_input_mesh(occ, in));
    const uint32_t *first = idx + 3 * (size_t)t;
    rvi_occ_plane pl;
    if (!rvi_occ_triangle_plane(&occ->view, &vert[first[0]], &vert[first[1]], &vert[first[2]], &pl))
        return 1;
    run_outline o;
    run_start(vert, first, &o);
    uint32_t run = 1;
    for (; run < limit && run < RUN_MAX; run++) {
        const uint32_t *tri = idx + 3 * ((size_t)t + run);
        bool degen = false;
        rvi_occ_footprint f;
        if (!rvi_occ_triangle_footprint(occ, in, vert, t + run, &f, &degen) || f.on != RVI_OCC_ON)
            break; /* not drawn, or crossing the near plane */
        bool flat = true;
        for (int k = 0; k < 3; k++)
            flat = flat && near_plane(&pl, vert[first[0]].world, vert[tri[k]].world);
        if (!flat || !run_insert(vert, &o, tri, true))
            break;
        fp->x0 = f.x0 < fp->x0 ? f.x0 : fp->x0;
        fp->y0 = f.y0 < fp->y0 ? f.y0 : fp->y0;
        fp->x1 = f.x1 > fp->x1 ? f.x1 : fp->x1;
        fp->y1 = f.y1 > fp->y1 ? f.y1 : fp->y1;
        fp->nearness = f.nearness > fp->nearness ? f.nearness : fp->nearness;
    }
    return run;
}

/* Triangles [t, t + run) (unclipped, coplanar, their outline convex: rvi_occ_mesh_run) as
 * one piece: the outline's edges, the smallest of their planes (entry form: any of them
 * bounds its own triangle's nearness from below, so the smallest bounds the union's). */
static rvi_occ_prepare prepare_run(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vert,
                                   uint32_t t, uint32_t run, rvi_occ_draft *d)
{
    const rvi_occ_view *v = &occ->view;
    const uint32_t *idx = rvi_occ_mesh_indices(rvi_occ_input_mesh(occ, in));
    rvi_occ_piece *pc = &d->piece;
    memset(pc, 0, sizeof *pc);
    d->x0 = d->y0 = 0;
    d->x1 = d->y1 = -1;
    run_outline o;
    run_start(vert, idx + 3 * (size_t)t, &o);
    for (uint32_t k = 1; k < run; k++)
        if (!run_insert(vert, &o, idx + 3 * ((size_t)t + k), false))
            return RVI_OCC_DEGENERATE; /* cannot happen: the run was built this way */
    double cx = 0, cy = 0, far = INFINITY, near = -INFINITY;
    double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
    for (uint32_t k = 0; k < o.n; k++) {
        const rvi_occ_vertex *p = &vert[o.v[k]];
        cx += p->texel[0] / o.n;
        cy += p->texel[1] / o.n;
        far = dmin(far, p->nearness);
        near = dmax(near, p->nearness);
        minx = dmin(minx, p->texel[0]);
        maxx = dmax(maxx, p->texel[0]);
        miny = dmin(miny, p->texel[1]);
        maxy = dmax(maxy, p->texel[1]);
    }
    for (uint32_t k = 0; k < o.n; k++)
        if (!add_outline_edge(d, vert[o.v[k]].texel, vert[o.v[(k + 1) % o.n]].texel, cx, cy, o.orient))
            return RVI_OCC_SMALL;
    if (pc->edge_count < 3)
        return RVI_OCC_SMALL;
    pc->floor = rvi_occ_f_down(far - fabs(far) * NEARNESS_ROUNDING - TINY);
    pc->top = -rvi_occ_f_down(-(near + fabs(near) * NEARNESS_ROUNDING + TINY));
    pc->entry = 1;
    for (uint32_t k = 0; k < run; k++) {
        const uint32_t *tri = idx + 3 * ((size_t)t + k);
        rvi_occ_plane pl;
        float *out = pc->plane[pc->plane_count];
        if (!rvi_occ_triangle_plane(v, &vert[tri[0]], &vert[tri[1]], &vert[tri[2]], &pl) ||
            !rvi_occ_plane_texel_min(v, &pl, out)) {
            pc->plane_count = 0; /* one triangle unbounded: the floor alone bounds them all */
            break;
        }
        bool dup = false;
        for (uint32_t j = 0; j < pc->plane_count && !dup; j++)
            dup = memcmp(pc->plane[j], out, sizeof pc->plane[j]) == 0;
        pc->plane_count += !dup;
    }
    d->bounds[0] = minx;
    d->bounds[1] = miny;
    d->bounds[2] = maxx;
    d->bounds[3] = maxy;
    d->x0 = (int32_t)ceil(dmax(minx, 0));
    d->x1 = (int32_t)floor(dmin(maxx, v->texels_w)) - 1;
    d->y0 = (int32_t)ceil(dmax(miny, 0));
    d->y1 = (int32_t)floor(dmin(maxy, v->texels_h)) - 1;
    return RVI_OCC_PREPARED;
}

rvi_occ_prepare rvi_occ_prepare_run(const rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *vert,
                                    uint32_t t, uint32_t run, rvi_occ_draft *d)
{
    return run > 1 ? prepare_run(occ, in, vert, t, run, d) : rvi_occ_prepare_triangle(occ, in, vert, t, d);
}
