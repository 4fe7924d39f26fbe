/* A texel that fails an object on its depth alone (docs/occlusion.md, "Finer than a texel"):
 * it may still hide the object over the part of the texel the object's image can meet, by
 * the covering piece's planes, by one piece holding all of that part, or by several together
 * (the union search of occlusion_union.c, on the part's bounding rectangle), and, with
 * rv_view.cull_unsampled, at each pixel centre the part may show the object at. */
#include "occlusion_test.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Notes looked at per texel by the partial test of an object. */
#define MAX_PARTLY_LOOKS 64u

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* A piece's float plane (a, b, c) lowered to its minimum over each texel
 * (rvi_occ_plane_texel_min) bounds its nearness from below at a point (x, y) of the buffer
 * once the corner term is taken back out: the coefficients' rounding is at most one float
 * ulp of each term, within the 12-ulp allowance already subtracted. An object's plane,
 * raised to the texel maximum (rvi_occ_box_bound_make), likewise bounds from above. */
static double lower_at(const float *p, double x, double y)
{
    return (double)p[0] * x + (double)p[1] * y + (double)p[2] - dmin(p[0], 0) - dmin(p[1], 0);
}

static double upper_at(const float *p, double x, double y)
{
    return (double)p[0] * x + (double)p[1] * y + (double)p[2] - dmax(p[0], 0) - dmax(p[1], 0);
}

/* The object's nearness is at most U(v) and the piece's at least O(v) at each vertex of the
 * region, O and U affine (or O concave): O > U at every vertex puts the piece strictly
 * nearer everywhere in the region. O: the piece's floor; each plane (a far side: the
 * nearness is at least their maximum, so at least each) or their minimum (an entry side).
 * U: the object's nearest point, or one of its front faces' planes (the object's nearness
 * along a ray is that of the last front face it crosses, at most each one's). */
static bool region_nearer(const rvi_occ_piece *q, const rvi_occ_box_bound *bb, float nearness,
                          const double (*r)[2], uint32_t n)
{
    double o[16];
    uint32_t candidates = q->entry ? (q->plane_count ? 2 : 1) : 1 + q->plane_count;
    for (uint32_t c = 0; c < candidates; c++) {
        for (uint32_t v = 0; v < n; v++) {
            if (c == 0) {
                o[v] = q->floor;
            } else if (q->entry) {
                double m = INFINITY;
                for (uint32_t j = 0; j < q->plane_count; j++)
                    m = dmin(m, lower_at(q->plane[j], r[v][0], r[v][1]));
                o[v] = m;
            } else {
                o[v] = lower_at(q->plane[c - 1], r[v][0], r[v][1]);
            }
        }
        for (uint32_t k = 0; k <= bb->plane_count; k++) {
            bool nearer = true;
            for (uint32_t v = 0; v < n && nearer; v++) {
                double u = k == 0 ? (double)nearness : upper_at(bb->plane[k - 1], r[v][0], r[v][1]);
                nearer = o[v] > u + 1e-12 * (fabs(o[v]) + fabs(u));
            }
            if (nearer)
                return true;
        }
    }
    return false;
}

/* Is every point of the region (n vertices) inside piece q, by more than its lines' error? */
static bool region_inside(const rvi_occ_fusion *fu, const rvi_occ_piece *q, const double (*r)[2], uint32_t n)
{
    for (uint32_t e = 0; e < q->edge_count; e++) {
        const rvi_occ_edge *g = &fu->edges[q->first_edge + e];
        double A = g->side * g->line[0], B = g->side * g->line[1], C = g->side * g->line[2];
        for (uint32_t v = 0; v < n; v++) {
            double x = r[v][0], y = r[v][1];
            double m = RVI_OCC_FUSE_MARGIN + g->slack + 8 * DBL_EPSILON * (fabs(x) + fabs(y) + fabs(C));
            if (!(A * x + B * y + C >= m))
                return false;
        }
    }
    return true;
}

/* The part of texel (x, y) where the box's image may lie: the texel clipped by the image's
 * lines (margin included); n = 0 when none. At most 4 + 8 vertices. A line with every
 * vertex on its inner side (most of them: few pass through one texel) cuts nothing. */
static uint32_t image_in_texel(const rvi_occ_box_bound *bb, int32_t x, int32_t y, double out[16][2])
{
    double poly[2][16][2], d[16];
    poly[0][0][0] = poly[0][3][0] = x;
    poly[0][1][0] = poly[0][2][0] = x + 1.0;
    poly[0][0][1] = poly[0][1][1] = y;
    poly[0][2][1] = poly[0][3][1] = y + 1.0;
    uint32_t n = 4, cur = 0;
    for (uint32_t k = 0; k < bb->edge_count && n; k++) {
        const double *e = bb->image[k];
        const double(*in)[2] = (const double(*)[2])poly[cur];
        bool cuts = false;
        for (uint32_t i = 0; i < n; i++) {
            d[i] = e[0] * in[i][0] + e[1] * in[i][1] + e[2];
            cuts |= !(d[i] >= 0);
        }
        if (!cuts)
            continue;
        double(*o)[2] = poly[cur ^ 1];
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t j = i + 1 < n ? i + 1 : 0;
            if (d[i] >= 0) {
                o[m][0] = in[i][0];
                o[m][1] = in[i][1];
                m++;
            }
            if ((d[i] >= 0) != (d[j] >= 0)) {
                double t = d[i] / (d[i] - d[j]);
                o[m][0] = in[i][0] + t * (in[j][0] - in[i][0]);
                o[m][1] = in[i][1] + t * (in[j][1] - in[i][1]);
                m++;
            }
        }
        n = m;
        cur ^= 1;
    }
    memcpy(out, poly[cur], n * sizeof poly[cur][0]);
    return n;
}

/* ---- pixel centres ----------------------------------------------------------------------- */

/* Most pixel centres one texel's part is looked at by (a texel is 5 x 5 pixels for a 1280
 * pixel viewport at width 256, 15 x 15 for 3840); past it the look is skipped, which is
 * never wrong. */
#define MAX_SAMPLES 289

/* The box's largest nearness anywhere in the region (n vertices): its nearest point, or
 * each of its front faces' planes at the region's worst vertex, whichever is least. */
static double box_upper(const rvi_occ_box_bound *bb, float nearness, const double (*r)[2], uint32_t n)
{
    double u = nearness;
    for (uint32_t k = 0; k < bb->plane_count; k++) {
        double m = -INFINITY;
        for (uint32_t v = 0; v < n; v++)
            m = dmax(m, upper_at(bb->plane[k], r[v][0], r[v][1]));
        u = dmin(u, m);
    }
    return u;
}

/* Is the region (4 vertices, a rectangle of texel units) shown nothing of the box: inside
 * the texel (x, y) and strictly behind its own depth, or held by one piece strictly nearer
 * than the box over it (the covering one, or one whose band reaches the texel)? */
static bool region_hidden(const rv_occlusion *occ, const rvi_occ_box_bound *bb, float nearness, int32_t x,
                          int32_t y, const rvi_occ_piece *owner, const double (*r)[2])
{
    const rvi_occ_fusion *fu = &occ->fusion;
    size_t t = (size_t)y * occ->width + (size_t)x;
    bool in_texel = r[0][0] >= x && r[2][0] <= x + 1.0 && r[0][1] >= y && r[2][1] <= y + 1.0;
    if (in_texel) {
        double u = box_upper(bb, nearness, r, 4), value = occ->texels[t];
        if (value > u + 1e-12 * (fabs(value) + fabs(u)))
            return true;
    }
    if (owner && (in_texel || region_inside(fu, owner, r, 4)) && region_nearer(owner, bb, nearness, r, 4))
        return true;
    uint32_t looked = 0;
    for (uint32_t k = fu->head[t]; k && looked < MAX_PARTLY_LOOKS; k = fu->note_next[k - 1], looked++) {
        const rvi_occ_piece *q = &fu->pieces[fu->note_piece[k - 1]];
        if (q->top > bb->far && region_inside(fu, q, r, 4) && region_nearer(q, bb, nearness, r, 4))
            return true;
    }
    return false;
}

/* The square of half sides mx, my around (cx, cy), corners in order around it. */
static void square_at(double cx, double cy, double mx, double my, double sq[4][2])
{
    const double c[4][2] = { { cx - mx, cy - my }, { cx + mx, cy - my }, { cx + mx, cy + my }, { cx - mx, cy + my } };
    memcpy(sq, c, sizeof c);
}

/* Texel (x, y) failed the box on every look at its part (n vertices): true when the box is
 * hidden at each of the viewport's pixel centres the part may show it at (occ->sample_step,
 * rv_view.cull_unsampled). A centre stands for the square RV_UNSAMPLED_MARGIN_PX around it
 * each way (where a rasteriser's snapping may move the edges across it). Each square that
 * meets the part's rectangle and the box's image must be shown nothing of the box
 * (region_hidden); the rectangle around all of them is tried first, as one region. */
static bool samples_hidden(const rv_occlusion *occ, const rvi_occ_box_bound *bb, float nearness, int32_t x,
                           int32_t y, const rvi_occ_piece *owner, const double (*part)[2], uint32_t n)
{
    double sx = occ->sample_step[0], sy = occ->sample_step[1];
    if (!(sx > 0 && sy > 0))
        return false;
    double mx = RV_UNSAMPLED_MARGIN_PX * sx, my = RV_UNSAMPLED_MARGIN_PX * sy;
    double lo[2] = { INFINITY, INFINITY }, hi[2] = { -INFINITY, -INFINITY };
    for (uint32_t v = 0; v < n; v++)
        for (int a = 0; a < 2; a++) {
            lo[a] = dmin(lo[a], part[v][a]);
            hi[a] = dmax(hi[a], part[v][a]);
        }
    /* Centres (i + 0.5) s whose squares can reach the part's rectangle, the range widened
     * by far more than the rounding of the divisions: each is checked exactly below. */
    double i0 = ceil((lo[0] - mx) / sx - 0.5 - 1e-6), i1 = floor((hi[0] + mx) / sx - 0.5 + 1e-6);
    double j0 = ceil((lo[1] - my) / sy - 0.5 - 1e-6), j1 = floor((hi[1] + my) / sy - 0.5 + 1e-6);
    if (!((i1 - i0 + 1) * (j1 - j0 + 1) <= MAX_SAMPLES))
        return false;
    double centre[MAX_SAMPLES][2], all[2][2] = { { INFINITY, INFINITY }, { -INFINITY, -INFINITY } };
    uint32_t m = 0;
    for (double j = j0; j <= j1; j++)
        for (double i = i0; i <= i1; i++) {
            double cx = (i + 0.5) * sx, cy = (j + 0.5) * sy;
            if (cx + mx < lo[0] || cx - mx > hi[0] || cy + my < lo[1] || cy - my > hi[1])
                continue; /* its square misses the part */
            double sq[4][2];
            square_at(cx, cy, mx, my, sq);
            bool outside = false;
            for (uint32_t k = 0; k < bb->edge_count && !outside; k++) {
                const double *e = bb->image[k];
                outside = true;
                for (int v = 0; v < 4 && outside; v++)
                    outside = e[0] * sq[v][0] + e[1] * sq[v][1] + e[2] < 0;
            }
            if (outside)
                continue; /* the box's image does not reach it */
            centre[m][0] = cx;
            centre[m++][1] = cy;
            all[0][0] = dmin(all[0][0], cx - mx);
            all[0][1] = dmin(all[0][1], cy - my);
            all[1][0] = dmax(all[1][0], cx + mx);
            all[1][1] = dmax(all[1][1], cy + my);
        }
    if (m == 0)
        return true; /* no centre can show the box through this texel */
    const double rect[4][2] = { { all[0][0], all[0][1] }, { all[1][0], all[0][1] }, { all[1][0], all[1][1] },
                                { all[0][0], all[1][1] } };
    if (m > 1 && region_hidden(occ, bb, nearness, x, y, owner, rect))
        return true;
    for (uint32_t c = 0; c < m; c++) {
        double sq[4][2];
        square_at(centre[c][0], centre[c][1], mx, my, sq);
        if (!region_hidden(occ, bb, nearness, x, y, owner, (const double(*)[2])sq))
            return false;
    }
    return true;
}

bool rvi_occ_texel_hides_box(const rv_occlusion *occ, rvi_occ_box_bound *bb, float nearness, int32_t x, int32_t y,
                             float bound)
{
    const rvi_occ_fusion *fu = &occ->fusion;
    if (!occ->desc.fine_tests || !fu->owner || !occ->view.perspective)
        return false; /* perspective only: see rvi_occ_texel_hides_box in occlusion.h */
    size_t t = (size_t)y * occ->width + (size_t)x;
    const rvi_occ_piece *o = rvi_occ_owner(fu, t);
    if (!o && !fu->head[t])
        return false; /* nothing drawn there could be nearer than its depth says */
    /* A covering piece nearer over the image's whole rectangle is nearer over every part
     * of it: one look serves every texel the piece covers (a wall hiding a box whole). */
    if (o && !(o->top > bb->far))
        o = NULL; /* nowhere nearer than the box's farthest point */
    const rvi_occ_piece *owner = o;
    if (o && bb->edge_count) {
        if (o != bb->tried) {
            bb->tried = o;
            bb->tried_nearer = region_nearer(o, bb, nearness, (const double(*)[2])bb->rect, 4);
        }
        if (bb->tried_nearer)
            return true;
    }
    double r[16][2];
    uint32_t n = image_in_texel(bb, x, y, r);
    if (!n)
        return true; /* no part of the box is seen through this texel */
    const double(*rc)[2] = (const double(*)[2])r;
    if (o && region_nearer(o, bb, nearness, rc, n))
        return true;
    uint32_t looked = 0, m = 0, cand[RVI_OCC_UNION_PIECES];
    for (uint32_t k = fu->head[t]; k && looked < MAX_PARTLY_LOOKS; k = fu->note_next[k - 1], looked++) {
        uint32_t i = fu->note_piece[k - 1];
        const rvi_occ_piece *q = &fu->pieces[i];
        if (!(q->top > bb->far) ||
            !(rvi_occ_piece_depth(q, x, y) > bound || region_nearer(q, bb, nearness, rc, n)))
            continue;
        if (region_inside(fu, q, rc, n))
            return true;
        if (m < RVI_OCC_UNION_PIECES)
            cand[m++] = i;
    }
    if (m >= 2 && rvi_occ_region_union(occ, cand, m, rc, n))
        return true;
    return samples_hidden(occ, bb, nearness, x, y, owner, rc, n);
}
