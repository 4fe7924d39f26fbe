/* A convex polytope (a box, or a convex occluder's solid) as a piece for this frame: its
 * corners and planes in world space, near-plane clipping, projection and screen bounds,
 * the silhouette, and the per-texel depth planes (docs/design.md §4).
 *
 * The silhouette is the outline between the faces the piece is drawn by and the others:
 * back faces for the far side (a ray leaves a convex solid through the first back-face
 * plane it crosses, so its exit nearness is the largest of their nearness along it, and a
 * texel may store max over back faces of each plane's minimum over the texel), front faces
 * for an exact solid's entry side (a ray enters through the last front-face plane it
 * crosses: the smallest of their nearness). Faces seen within RVI_OCC_EDGE_ON of edge-on
 * belong to neither set: their slivers are left out, which only shrinks the piece.
 *
 * Every outline edge's screen line comes from the two face planes that meet there
 * (rvi_occ_pencil_line), so two solids sharing a face, or only part of an edge, place that
 * edge on the same line bit for bit and fusion can cancel it exactly. A corner is
 * transformed by the matrix directly (never as an origin plus edge vectors): two boxes
 * under one matrix that share a corner share its projection bit for bit. */
#include "occlusion_shape.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The farthest point's nearness is rounded farther by this fraction: one part in 1e9
 * covers the few roundings of 1/w (or of a clip row) many times over. */
#define NEARNESS_ROUNDING 1e-9
/* Keeps the rounded-farther floor below a nearness of exactly zero. */
#define TINY 1e-300

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Box topology: corner k has bit 0 = x max, bit 1 = y max, bit 2 = z max; face 2a is the
 * min side of axis a, 2a + 1 its max side. Edge: corner, corner, face, face. */
static const uint8_t BOX_EDGES[12][4] = {
    { 0, 1, 2, 4 }, { 2, 3, 3, 4 }, { 4, 5, 2, 5 }, { 6, 7, 3, 5 },
    { 0, 2, 0, 4 }, { 1, 3, 1, 4 }, { 4, 6, 0, 5 }, { 5, 7, 1, 5 },
    { 0, 4, 0, 2 }, { 1, 5, 1, 2 }, { 2, 6, 0, 3 }, { 3, 7, 1, 3 },
};

void rvi_occ_box_poly(const float min[3], const float max[3], double planes[6][4], double vertices[8][3],
                      rvi_occ_poly *out)
{
    for (int a = 0; a < 3; a++) {
        for (int i = 0; i < 3; i++)
            planes[2 * a][i] = planes[2 * a + 1][i] = 0;
        planes[2 * a][a] = -1;
        planes[2 * a][3] = -(double)min[a];
        planes[2 * a + 1][a] = 1;
        planes[2 * a + 1][3] = max[a];
    }
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 3; i++)
            vertices[k][i] = (k >> i) & 1 ? max[i] : min[i];
    out->plane_count = 6;
    out->vertex_count = 8;
    out->edge_count = 12;
    out->planes = (const double (*)[4])planes;
    out->vertices = (const double (*)[3])vertices;
    out->edges = BOX_EDGES;
}

/* ---- world space ------------------------------------------------------------------------------ */

/* World planes from local ones (n . q <= d) under p = L q + t: n_w = sign(det L) cof(L) n,
 * c_w = -n_w . t - |det L| d (no division, and a plane given negated comes out negated
 * bit for bit). False when the matrix flattens space. */
static bool world_planes(const rvi_occ_view *v, const rvi_occ_poly *poly, const float *m, rvi_occ_plane *out)
{
    double L[3][3], t[3] = { 0, 0, 0 }, cof[3][3], det = 1;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            L[r][c] = m ? (double)m[c * 4 + r] : (double)(r == c);
    if (m) {
        for (int r = 0; r < 3; r++)
            t[r] = m[12 + r];
        /* Cofactor column c = cross product of the other two columns. */
        for (int c = 0; c < 3; c++) {
            int c1 = (c + 1) % 3, c2 = (c + 2) % 3;
            cof[0][c] = L[1][c1] * L[2][c2] - L[2][c1] * L[1][c2];
            cof[1][c] = L[2][c1] * L[0][c2] - L[0][c1] * L[2][c2];
            cof[2][c] = L[0][c1] * L[1][c2] - L[1][c1] * L[0][c2];
        }
        det = L[0][0] * cof[0][0] + L[1][0] * cof[1][0] + L[2][0] * cof[2][0];
        double scale = 0;
        for (int c = 0; c < 3; c++)
            scale = dmax(scale, fabs(L[0][c]) + fabs(L[1][c]) + fabs(L[2][c]));
        if (!(fabs(det) > 1e-30 * scale * scale * scale) || !isfinite(det))
            return false;
    } else {
        memcpy(cof, L, sizeof cof);
    }
    double sgn = det < 0 ? -1.0 : 1.0, adet = fabs(det);
    for (uint32_t f = 0; f < poly->plane_count; f++) {
        const double *pl = poly->planes[f];
        rvi_occ_plane *w = &out[f];
        for (int r = 0; r < 3; r++)
            w->n[r] = sgn * (cof[r][0] * pl[0] + cof[r][1] * pl[1] + cof[r][2] * pl[2]);
        w->c = -(w->n[0] * t[0] + w->n[1] * t[1] + w->n[2] * t[2]) - adet * pl[3];
        if (!isfinite(w->n[0] + w->n[1] + w->n[2] + w->c))
            return false;
        rvi_occ_plane_eye(v, w);
    }
    return true;
}

/* Corners in world space and in clip space (rows x, y, z, w, near). False when one lies
 * beyond RVI_OCC_MAX_COORD (float inputs there keep too few bits for the silhouette and the
 * far depth to be bounded safely: a fuzzed 1e30-unit box was rasterised with a wrong
 * silhouette). *clipped: a corner lies before the near plane; *away: all do. */
static bool transform_corners(const rvi_occ_view *v, const rvi_occ_poly *poly, const float *m, rvi_occ_point *out,
                              bool *clipped, bool *away, double lo[3], double hi[3])
{
    for (int i = 0; i < 3; i++) {
        lo[i] = INFINITY;
        hi[i] = -INFINITY;
    }
    double rows[5][4];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 4; j++)
            rows[r][j] = v->vp[j * 4 + r];
    memcpy(rows[4], v->clip_row, sizeof rows[4]);
    *clipped = false;
    *away = true;
    for (uint32_t k = 0; k < poly->vertex_count; k++) {
        const double *l = poly->vertices[k];
        double w[3];
        for (int i = 0; i < 3; i++) {
            w[i] = m ? (double)m[i] * l[0] + (double)m[4 + i] * l[1] + (double)m[8 + i] * l[2] + (double)m[12 + i]
                     : l[i];
            if (!(fabs(w[i]) <= RVI_OCC_MAX_COORD))
                return false;
            lo[i] = fmin(lo[i], w[i]);
            hi[i] = fmax(hi[i], w[i]);
        }
        double *c = out[k].clip;
        for (int r = 0; r < 5; r++)
            c[r] = rows[r][0] * w[0] + rows[r][1] * w[1] + rows[r][2] * w[2] + rows[r][3];
        bool behind = c[4] < 0;
        *clipped |= behind;
        *away &= behind;
    }
    return true;
}

void rvi_occ_cut(const double a_clip[5], const double b_clip[5], double out[5])
{
    const double *a = a_clip, *b = b_clip;
    for (int r = 0; r < 5; r++) {
        if (a[r] != b[r]) {
            if (b[r] < a[r]) {
                a = b_clip;
                b = a_clip;
            }
            break;
        }
    }
    double na = a[4], nb = b[4];
    double t = na / (na - nb);
    for (int r = 0; r < 5; r++)
        out[r] = a[r] + t * (b[r] - a[r]);
}

/* ---- classification, clipping, projection ---------------------------------------------------- */

/* in[f]: 1 when face f draws the piece (back faces, or front faces for an exact solid), 0
 * when not, -1 edge-on. Returns how many faces draw it. */
static uint32_t classify(const rvi_occ_poly *poly, const rvi_occ_plane *planes, bool entry, int8_t *in)
{
    uint32_t n = 0;
    for (uint32_t f = 0; f < poly->plane_count; f++) {
        double pe = planes[f].pe, tol = RVI_OCC_EDGE_ON * planes[f].pe_mag;
        bool front = pe > tol, back = pe < -tol;
        in[f] = (int8_t)(front || back ? ((entry ? front : back) ? 1 : 0) : -1);
        n += in[f] == 1;
    }
    return n;
}

/* The entry side is granted when the solid lies wholly beyond the near plane and every
 * face is clearly front or back, with at most RVI_OCC_MAX_PLANES front faces (all of them
 * are needed: the entry is the smallest of their nearness). */
static bool entry_allowed(const rvi_occ_poly *poly, const rvi_occ_plane *planes, bool clipped)
{
    if (clipped)
        return false;
    int8_t in[RV_OCCLUSION_MAX_PLANES];
    classify(poly, planes, true, in);
    uint32_t fronts = 0;
    for (uint32_t e = 0; e < poly->edge_count; e++)
        for (int s = 2; s < 4; s++)
            if (in[poly->edges[e][s]] < 0)
                return false;
    for (uint32_t f = 0; f < poly->plane_count; f++)
        fronts += in[f] == 1;
    return fronts <= RVI_OCC_MAX_PLANES;
}

/* Cuts every edge crossing the near plane and lists, per face, its crossing edges. False
 * when a face's boundary crosses more than twice (a face numerically folded). */
static bool near_cuts(const rvi_occ_poly *poly, rvi_occ_draft *d)
{
    memset(d->face_cuts, 0, poly->plane_count);
    for (uint32_t e = 0; e < poly->edge_count; e++) {
        const uint8_t *ed = poly->edges[e];
        const rvi_occ_point *a = &d->corners[ed[0]], *b = &d->corners[ed[1]];
        if ((a->clip[4] < 0) == (b->clip[4] < 0))
            continue;
        rvi_occ_cut(a->clip, b->clip, d->cuts[e].clip);
        for (int s = 2; s < 4; s++) {
            uint8_t f = ed[s];
            if (d->face_cuts[f] >= 2)
                return false;
            d->face_cut[f][d->face_cuts[f]++] = (uint8_t)e;
        }
    }
    return true;
}

typedef struct screen_bounds {
    double minx, maxx, miny, maxy, far_near, near_near;
} screen_bounds;

static bool project_point(const rvi_occ_view *v, rvi_occ_point *p, screen_bounds *b)
{
    double c4[4] = { p->clip[0], p->clip[1], p->clip[2], p->clip[3] };
    if (!rvi_occ_project(v, c4, p->texel, &p->nearness))
        return false;
    b->minx = dmin(b->minx, p->texel[0]);
    b->maxx = dmax(b->maxx, p->texel[0]);
    b->miny = dmin(b->miny, p->texel[1]);
    b->maxy = dmax(b->maxy, p->texel[1]);
    b->far_near = dmin(b->far_near, p->nearness);
    b->near_near = dmax(b->near_near, p->nearness);
    return true;
}

/* Projects the corners beyond the near plane and the cut points. False when a point is not
 * safely in front of the eye (a matrix that breaks every sane projection). */
static bool project_all(const rvi_occ_view *v, const rvi_occ_poly *poly, rvi_occ_draft *d, bool clipped,
                        screen_bounds *b)
{
    b->minx = b->miny = b->far_near = INFINITY;
    b->maxx = b->maxy = b->near_near = -INFINITY;
    for (uint32_t k = 0; k < poly->vertex_count; k++)
        if (d->corners[k].clip[4] >= 0 && !project_point(v, &d->corners[k], b))
            return false;
    if (clipped)
        for (uint32_t e = 0; e < poly->edge_count; e++) {
            const uint8_t *ed = poly->edges[e];
            if ((d->corners[ed[0]].clip[4] < 0) != (d->corners[ed[1]].clip[4] < 0) &&
                !project_point(v, &d->cuts[e], b))
                return false;
        }
    return true;
}

/* Whole texels only: ix >= min x and ix + 1 <= max x, within the buffer. */
static void texel_range(const rvi_occ_view *v, const screen_bounds *b, rvi_occ_draft *d)
{
    d->bounds[0] = b->minx;
    d->bounds[1] = b->miny;
    d->bounds[2] = b->maxx;
    d->bounds[3] = b->maxy;
    d->x0 = (int32_t)ceil(dmax(b->minx, 0));
    d->x1 = (int32_t)floor(dmin(b->maxx, v->texels_w)) - 1;
    d->y0 = (int32_t)ceil(dmax(b->miny, 0));
    d->y1 = (int32_t)floor(dmin(b->maxy, v->texels_h)) - 1;
}

/* ---- silhouette and depth ------------------------------------------------------------------- */

static bool push_edge(const rvi_occ_view *v, rvi_occ_draft *d, const rvi_occ_plane *in, const rvi_occ_plane *out,
                      const double p0[2], const double p1[2])
{
    rvi_occ_piece *pc = &d->piece;
    if (pc->edge_count >= RVI_OCC_MAX_EDGES)
        return false;
    rvi_occ_edge *e = &d->edge[pc->edge_count];
    if (d->segment_lines) {
        if (!rvi_occ_segment_line(p0, p1, e))
            return true; /* a cut point on a corner: no length */
        pc->edge_count++;
        return true;
    }
    if (!rvi_occ_pencil_line(v, in, out, e))
        return false;
    memcpy(e->p0, p0, sizeof e->p0);
    memcpy(e->p1, p1, sizeof e->p1);
    rvi_occ_edge_extent(e);
    pc->edge_count++;
    return true;
}

/* Segment lines take their side from the outline's centre (the outline of a convex solid
 * is convex); false when an edge passes too near it to tell (a sliver). */
static bool segment_sides(rvi_occ_draft *d)
{
    rvi_occ_piece *pc = &d->piece;
    double cx = 0, cy = 0;
    for (uint32_t k = 0; k < pc->edge_count; k++) {
        cx += d->edge[k].p0[0] + d->edge[k].p1[0];
        cy += d->edge[k].p0[1] + d->edge[k].p1[1];
    }
    cx /= 2.0 * pc->edge_count;
    cy /= 2.0 * pc->edge_count;
    for (uint32_t k = 0; k < pc->edge_count; k++) {
        rvi_occ_edge *e = &d->edge[k];
        double s = e->line[0] * cx + e->line[1] * cy + e->line[2];
        if (!(fabs(s) > 4 * e->slack))
            return false;
        e->side = s > 0 ? 1 : -1;
    }
    return true;
}

/* The outline: every edge between a face that draws the piece and one that does not (its
 * part beyond the near plane), and where a drawing face crosses the near plane, the cut
 * between its two crossing points. False when a line cannot be placed safely. */
static bool outline(const rvi_occ_view *v, const rvi_occ_poly *poly, rvi_occ_draft *d, bool clipped)
{
    d->piece.edge_count = 0;
    for (uint32_t e = 0; e < poly->edge_count; e++) {
        const uint8_t *ed = poly->edges[e];
        uint8_t f0 = ed[2], f1 = ed[3];
        if ((d->in[f0] == 1) == (d->in[f1] == 1))
            continue;
        uint8_t fi = d->in[f0] == 1 ? f0 : f1, fo = fi == f0 ? f1 : f0;
        const rvi_occ_point *a = &d->corners[ed[0]], *b = &d->corners[ed[1]];
        bool ka = a->clip[4] >= 0, kb = b->clip[4] >= 0;
        if (!ka && !kb)
            continue;
        const double *p0 = ka ? a->texel : d->cuts[e].texel, *p1 = kb ? b->texel : d->cuts[e].texel;
        if (!push_edge(v, d, &d->planes[fi], &d->planes[fo], p0, p1))
            return false;
    }
    if (!clipped)
        return true;
    /* The near plane as a face (the solid keeps near(p) >= 0): the eye is before it, so it
     * faces the eye and never draws the piece. */
    rvi_occ_plane nf = { { -v->clip_row[0], -v->clip_row[1], -v->clip_row[2] }, -v->clip_row[3], 0, 0 };
    rvi_occ_plane_eye(v, &nf);
    for (uint32_t f = 0; f < poly->plane_count; f++) {
        if (d->in[f] != 1 || d->face_cuts[f] == 0)
            continue;
        if (d->face_cuts[f] != 2)
            return false;
        const rvi_occ_point *a = &d->cuts[d->face_cut[f][0]], *b = &d->cuts[d->face_cut[f][1]];
        if (!push_edge(v, d, &d->planes[f], &nf, a->texel, b->texel))
            return false;
    }
    return true;
}

/* True for faces that have edges (a redundant plane, a brush's bevel through an edge, has
 * none and bounds nothing on its own). */
static void referenced(const rvi_occ_poly *poly, bool *used)
{
    memset(used, 0, poly->plane_count * sizeof *used);
    for (uint32_t e = 0; e < poly->edge_count; e++) {
        used[poly->edges[e][2]] = true;
        used[poly->edges[e][3]] = true;
    }
}

/* Depth planes: every drawing face's for the entry side (false if one cannot be bounded),
 * or up to RVI_OCC_MAX_PLANES back faces for the far side, the most squarely seen first
 * (leaving one out only lowers the maximum: always safe). */
static bool depth_planes(const rvi_occ_view *v, const rvi_occ_poly *poly, rvi_occ_draft *d, bool entry)
{
    rvi_occ_piece *pc = &d->piece;
    bool used[RV_OCCLUSION_MAX_PLANES];
    referenced(poly, used);
    pc->entry = entry;
    pc->plane_count = 0;
    uint8_t pick[RV_OCCLUSION_MAX_PLANES];
    double key[RV_OCCLUSION_MAX_PLANES];
    uint32_t n = 0;
    for (uint32_t f = 0; f < poly->plane_count; f++) {
        if (!used[f] || d->in[f] != 1)
            continue;
        /* insertion by squareness, |pe| / pe_mag, descending */
        double k = fabs(d->planes[f].pe) / (d->planes[f].pe_mag + TINY);
        uint32_t j = n++;
        for (; j > 0 && key[j - 1] < k; j--) {
            key[j] = key[j - 1];
            pick[j] = pick[j - 1];
        }
        key[j] = k;
        pick[j] = (uint8_t)f;
    }
    if (entry && n > RVI_OCC_MAX_PLANES)
        return false;
    for (uint32_t i = 0; i < n && pc->plane_count < RVI_OCC_MAX_PLANES; i++) {
        if (rvi_occ_plane_texel_min(v, &d->planes[pick[i]], pc->plane[pc->plane_count]))
            pc->plane_count++;
        else if (entry)
            return false;
    }
    return true;
}

rvi_occ_prepare rvi_occ_prepare_poly(const rvi_occ_view *v, const rvi_occ_poly *poly, const float *matrix,
                                     bool exact, float min_texels, rvi_occ_draft *d)
{
    rvi_occ_piece *pc = &d->piece;
    memset(pc, 0, sizeof *pc);
    d->x0 = d->y0 = 0;
    d->x1 = d->y1 = -1;
    d->segment_lines = poly->segment_lines;
    bool clipped, away;
    double lo[3], hi[3];
    if (!transform_corners(v, poly, matrix, d->corners, &clipped, &away, lo, hi))
        return RVI_OCC_DEGENERATE;
    if (away)
        return RVI_OCC_OFFSCREEN;
    /* A solid wholly beyond the near plane shows its near faces wherever it lies on screen;
     * one the near plane cuts in view shows its inside there (or all around, with the eye
     * in it): it hides nothing this frame. */
    if (clipped && rvi_occ_near_cut(v, lo, hi))
        return RVI_OCC_NEAR;
    if (!world_planes(v, poly, matrix, d->planes))
        return RVI_OCC_SMALL; /* a flattening matrix: no face to trust, nothing drawn */
    if (clipped && !near_cuts(poly, d))
        return RVI_OCC_DEGENERATE;
    screen_bounds b;
    if (!project_all(v, poly, d, clipped, &b))
        return RVI_OCC_DEGENERATE;
    double W = v->texels_w, H = v->texels_h;
    if (b.maxx <= 0 || b.minx >= W || b.maxy <= 0 || b.miny >= H)
        return RVI_OCC_OFFSCREEN;
    if (dmin(b.maxx, W) - dmax(b.minx, 0) < min_texels || dmin(b.maxy, H) - dmax(b.miny, 0) < min_texels)
        return RVI_OCC_SMALL;
    if (!(fabs(b.far_near) < 1e30 && fabs(b.near_near) < 1e30))
        return RVI_OCC_DEGENERATE;
    pc->floor = rvi_occ_f_down(b.far_near - fabs(b.far_near) * NEARNESS_ROUNDING - TINY);
    pc->top = -rvi_occ_f_down(-(b.near_near + fabs(b.near_near) * NEARNESS_ROUNDING + TINY));
    /* The entry side when asked and allowed; the far side otherwise, or when the entry
     * side's planes cannot all be bounded. */
    for (int entry = exact && entry_allowed(poly, d->planes, clipped); entry >= 0; entry--) {
        if (classify(poly, d->planes, entry, d->in) == 0)
            continue;
        if (!outline(v, poly, d, clipped))
            return RVI_OCC_DEGENERATE;
        if (d->segment_lines && pc->edge_count >= 3 && !segment_sides(d))
            return RVI_OCC_SMALL;
        if (depth_planes(v, poly, d, entry))
            break;
    }
    if (pc->edge_count < 3)
        return RVI_OCC_SMALL; /* seen edge-on: nothing to cover */
    texel_range(v, &b, d);
    return RVI_OCC_PREPARED;
}
