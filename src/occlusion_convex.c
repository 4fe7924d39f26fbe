/* Convex occluders in plane form (docs/design.md §4): validation, and the solid's corners
 * and edges worked out once per add (or once per node) from its planes.
 *
 * Each plane's face is a huge square on it clipped by every other plane (Sutherland &
 * Hodgman, the way level compilers build brush windings), each winding edge remembering the
 * plane that cut it. A face left with a winding edge of the first square is unbounded; a
 * set that leaves no face bounds nothing. Every corner lies on its face's plane and on the
 * planes of its two winding edges; its position is then solved from those three planes in
 * a canonical order (by the planes' values, each taken with the sign that makes its normal's
 * first non-zero component positive), so two brushes that share the three planes (a Quake
 * III map stores a shared side as plane i and its flip i ^ 1) share the corner bit for bit.
 * Corners closer than a part in 1e7 of the solid's size are one corner. Edges come from
 * the windings: the two faces whose windings hold the same pair of corners. */
#include "occlusion_shape.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define MAXP RV_OCCLUSION_MAX_PLANES
#define WIND (MAXP + 4)          /* a winding gains at most one point per clip */
#define RECORDS 1024u            /* winding corners of one solid, all faces */
/* Half size of the first square on each plane, in units of the solid's scale: anything it
 * still reaches after clipping is unbounded (or beyond RVI_OCC_MAX_COORD). */
#define SQUARE 4.0
/* Points within this fraction of the scale of a plane count as on it (kept). */
#define ON_PLANE 1e-9
/* Corners within this fraction of the scale are one corner; faces with a winding area below
 * its square are slivers (a bevel through an edge) and bound nothing. */
#define MERGE 1e-7

/* fmin and fmax are library calls here; these are not (and no NaN reaches them). */
static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

typedef struct wpoint {
    double p[3];
    int32_t tag; /* plane that cut the edge starting here; -1 the first square */
} wpoint;

typedef struct corner_rec {
    uint32_t key;       /* the three planes' canonical ranks, packed, smallest first */
    uint16_t face, tag; /* the face, and the plane of the winding edge starting here */
    uint16_t prev;      /* the plane of the winding edge ending here */
    uint16_t vertex;    /* merged corner */
    double p[3];        /* the winding point, then the corner solved from the three planes */
} corner_rec;

typedef struct wedge {
    uint16_t lo, hi;    /* corners, lo < hi */
    uint16_t face, tag; /* the face whose winding has it, the plane that cut it */
    uint32_t at;        /* position in the windings (first appearance orders the edges) */
} wedge;

typedef struct rvi_occ_convex_scratch {
    double plane[MAXP][4]; /* unique planes as given (n, d) */
    double canon[MAXP][4]; /* the same, signed canonically (signed_canonical) */
    double unit[MAXP][4];  /* normalised */
    uint16_t rank[MAXP];   /* canonical order */
    uint32_t planes;
    wpoint wind[2][WIND];
    corner_rec rec[RECORDS];
    uint32_t rec_count;
    uint16_t face_first[MAXP], face_len[MAXP];
    uint32_t order[RECORDS];
    double vert[RVI_OCC_MAX_CORNERS][3];
    uint32_t verts;
    uint8_t edge[RVI_OCC_MAX_POLY_EDGES][4];
    uint32_t edges;
    wedge wedges[RECORDS];
    bool inexact;          /* its corners and edges bound more than its planes (corners_hold) */
} rvi_occ_convex_scratch;

size_t rvi_occ_convex_scratch_size(void) { return sizeof(rvi_occ_convex_scratch); }

rv_result rvi_occ_convex_check(const rv_occluder_convex *convex)
{
    if (!convex || !convex->planes)
        return RV_ERR_INVALID_ARG;
    if (convex->flags & ~(uint32_t)RV_OCCLUDER_EXACT)
        return RV_ERR_INVALID_ARG;
    if (convex->plane_count > RV_OCCLUSION_MAX_PLANES)
        return RV_ERR_CAPACITY;
    if (convex->plane_count < 4)
        return RV_ERR_INVALID_ARG;
    for (uint32_t k = 0; k < convex->plane_count; k++)
        if (!rvi_finite_n(convex->planes[k], 4))
            return RV_ERR_NOT_FINITE;
    for (uint32_t k = 0; k < convex->plane_count; k++) {
        const float *p = convex->planes[k];
        if (p[0] == 0 && p[1] == 0 && p[2] == 0)
            return RV_ERR_INVALID_ARG;
    }
    return RV_OK;
}

/* The plane with the sign that makes its normal's first non-zero component positive. */
static void signed_canonical(const double in[4], double out[4])
{
    double s = in[0] < 0 || (in[0] == 0 && (in[1] < 0 || (in[1] == 0 && in[2] < 0))) ? -1.0 : 1.0;
    for (int i = 0; i < 4; i++)
        out[i] = s * in[i];
}

static int compare_canonical(const double ca[4], const double cb[4])
{
    for (int i = 0; i < 4; i++)
        if (ca[i] != cb[i])
            return ca[i] < cb[i] ? -1 : 1;
    return 0;
}

/* Unique planes (exact duplicates dropped), normalised copies, canonical ranks, and the
 * solid's scale. */
static double load_planes(const rv_occluder_convex *convex, rvi_occ_convex_scratch *s)
{
    double scale = 1;
    s->planes = 0;
    for (uint32_t k = 0; k < convex->plane_count; k++) {
        const float *p = convex->planes[k];
        double pl[4] = { p[0], p[1], p[2], p[3] };
        double len = sqrt(pl[0] * pl[0] + pl[1] * pl[1] + pl[2] * pl[2]);
        double u[4] = { pl[0] / len, pl[1] / len, pl[2] / len, pl[3] / len };
        bool dup = false;
        for (uint32_t j = 0; j < s->planes && !dup; j++)
            dup = memcmp(s->unit[j], u, sizeof u) == 0;
        if (dup)
            continue;
        memcpy(s->plane[s->planes], pl, sizeof pl);
        signed_canonical(pl, s->canon[s->planes]);
        memcpy(s->unit[s->planes], u, sizeof u);
        s->planes++;
        scale = dmax(scale, fabs(u[3]));
    }
    for (uint32_t i = 0; i < s->planes; i++) {
        uint16_t r = 0;
        for (uint32_t j = 0; j < s->planes; j++) {
            int c = compare_canonical(s->canon[j], s->canon[i]);
            r += c < 0 || (c == 0 && j < i);
        }
        s->rank[i] = r;
    }
    return scale;
}

/* ---- windings ------------------------------------------------------------------------------ */

static int square_on(const double u[4], double half, wpoint out[4])
{
    /* Basis of the plane: a (the axis least along n) x n, then n x a. */
    const double *n = u;
    double ax[3] = { 0, 0, 0 };
    int least = fabs(n[0]) <= fabs(n[1]) && fabs(n[0]) <= fabs(n[2]) ? 0 : fabs(n[1]) <= fabs(n[2]) ? 1 : 2;
    ax[least] = 1;
    double a[3] = { ax[1] * n[2] - ax[2] * n[1], ax[2] * n[0] - ax[0] * n[2], ax[0] * n[1] - ax[1] * n[0] };
    double la = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int i = 0; i < 3; i++)
        a[i] /= la;
    double b[3] = { n[1] * a[2] - n[2] * a[1], n[2] * a[0] - n[0] * a[2], n[0] * a[1] - n[1] * a[0] };
    static const double sx[4] = { -1, 1, 1, -1 }, sy[4] = { -1, -1, 1, 1 };
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 3; i++)
            out[k].p[i] = n[i] * u[3] + half * (sx[k] * a[i] + sy[k] * b[i]);
        out[k].tag = -1;
    }
    return 4;
}

/* Keeps the part of the winding with u . p <= d (within eps), tagging new edges with j. */
static int clip_winding(const wpoint *in, int n, const double u[4], int32_t j, double eps, wpoint *out)
{
    int m = 0;
    for (int k = 0; k < n; k++) {
        const wpoint *p = &in[k], *q = &in[(k + 1) % n];
        double dp = u[0] * p->p[0] + u[1] * p->p[1] + u[2] * p->p[2] - u[3];
        double dq = u[0] * q->p[0] + u[1] * q->p[1] + u[2] * q->p[2] - u[3];
        bool pin = dp <= eps, qin = dq <= eps;
        if (pin)
            out[m++] = *p;
        if (pin != qin) {
            double t = dp / (dp - dq);
            wpoint *x = &out[m++];
            for (int i = 0; i < 3; i++)
                x->p[i] = p->p[i] + t * (q->p[i] - p->p[i]);
            x->tag = pin ? j : p->tag;
        }
    }
    return m;
}

static double winding_area(const wpoint *w, int n, const double u[4])
{
    double acc[3] = { 0, 0, 0 };
    for (int k = 0; k < n; k++) {
        const double *a = w[k].p, *b = w[(k + 1) % n].p;
        acc[0] += a[1] * b[2] - a[2] * b[1];
        acc[1] += a[2] * b[0] - a[0] * b[2];
        acc[2] += a[0] * b[1] - a[1] * b[0];
    }
    return 0.5 * fabs(acc[0] * u[0] + acc[1] * u[1] + acc[2] * u[2]);
}

/* A corner from its three planes in canonical order (Cramer's rule); the winding point when
 * they are too nearly parallel to solve. */
static void solve_corner(const rvi_occ_convex_scratch *s, uint16_t f0, uint16_t f1, uint16_t f2, const double hint[3],
                         double out[3])
{
    uint16_t f[3] = { f0, f1, f2 };
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && s->rank[f[j - 1]] > s->rank[f[j]]; j--) {
            uint16_t t = f[j];
            f[j] = f[j - 1];
            f[j - 1] = t;
        }
    double p[3][4];
    for (int i = 0; i < 3; i++)
        memcpy(p[i], s->canon[f[i]], sizeof p[i]);
    double c12[3] = { p[1][1] * p[2][2] - p[1][2] * p[2][1], p[1][2] * p[2][0] - p[1][0] * p[2][2],
                      p[1][0] * p[2][1] - p[1][1] * p[2][0] };
    double c20[3] = { p[2][1] * p[0][2] - p[2][2] * p[0][1], p[2][2] * p[0][0] - p[2][0] * p[0][2],
                      p[2][0] * p[0][1] - p[2][1] * p[0][0] };
    double c01[3] = { p[0][1] * p[1][2] - p[0][2] * p[1][1], p[0][2] * p[1][0] - p[0][0] * p[1][2],
                      p[0][0] * p[1][1] - p[0][1] * p[1][0] };
    double det = p[0][0] * c12[0] + p[0][1] * c12[1] + p[0][2] * c12[2];
    double mag = 1;
    for (int i = 0; i < 3; i++)
        mag *= fabs(p[i][0]) + fabs(p[i][1]) + fabs(p[i][2]);
    if (!(fabs(det) > 1e-6 * mag)) {
        memcpy(out, hint, 3 * sizeof *out);
        return;
    }
    for (int i = 0; i < 3; i++)
        out[i] = (p[0][3] * c12[i] + p[1][3] * c20[i] + p[2][3] * c01[i]) / det;
}

/* Every face's winding as corner records. RV_ERR_INVALID_ARG when unbounded or empty,
 * RV_ERR_CAPACITY when too many corners. */
static rv_result windings(rvi_occ_convex_scratch *s, double scale)
{
    s->rec_count = 0;
    uint32_t faces = 0;
    for (uint32_t i = 0; i < s->planes; i++) {
        int n = square_on(s->unit[i], SQUARE * dmax(scale, RVI_OCC_MAX_COORD), s->wind[0]), cur = 0;
        for (uint32_t j = 0; j < s->planes && n >= 3; j++) {
            if (j == i)
                continue;
            double eps = ON_PLANE * dmax(scale, fabs(s->unit[j][3]));
            n = clip_winding(s->wind[cur], n, s->unit[j], (int32_t)j, eps, s->wind[1 - cur]);
            cur = 1 - cur;
        }
        s->face_first[i] = (uint16_t)s->rec_count;
        s->face_len[i] = 0;
        if (n < 3 || winding_area(s->wind[cur], n, s->unit[i]) <= MERGE * MERGE * scale * scale)
            continue; /* bounds nothing here */
        if (s->rec_count + (uint32_t)n > RECORDS)
            return RV_ERR_CAPACITY;
        for (int k = 0; k < n; k++) {
            const wpoint *w = &s->wind[cur][k], *prev = &s->wind[cur][(k + n - 1) % n];
            if (w->tag < 0 || prev->tag < 0)
                return RV_ERR_INVALID_ARG; /* still on the first square: unbounded */
            corner_rec *r = &s->rec[s->rec_count++];
            r->face = (uint16_t)i;
            r->tag = (uint16_t)w->tag;
            uint16_t ranks[3] = { s->rank[i], s->rank[prev->tag], s->rank[w->tag] };
            for (int a = 1; a < 3; a++)
                for (int b = a; b > 0 && ranks[b - 1] > ranks[b]; b--) {
                    uint16_t t = ranks[b];
                    ranks[b] = ranks[b - 1];
                    ranks[b - 1] = t;
                }
            r->key = ((uint32_t)ranks[0] << 16) | ((uint32_t)ranks[1] << 8) | ranks[2];
            r->prev = (uint16_t)prev->tag;
            memcpy(r->p, w->p, sizeof r->p); /* solved once per key by merge_corners */
        }
        s->face_len[i] = (uint16_t)n;
        faces++;
    }
    return faces >= 4 ? RV_OK : RV_ERR_INVALID_ARG;
}

/* ---- corners and edges ----------------------------------------------------------------------- */

/* Record order: by key, then by position in the windings (deterministic). */
static bool before(const rvi_occ_convex_scratch *s, uint32_t a, uint32_t b)
{
    uint32_t ka = s->rec[a].key, kb = s->rec[b].key;
    return ka != kb ? ka < kb : a < b;
}

/* One corner per cluster of records, taking the position solved from the smallest key. */
static rv_result merge_corners(rvi_occ_convex_scratch *s, double scale)
{
    for (uint32_t i = 0; i < s->rec_count; i++)
        s->order[i] = i;
    /* Insertion sort by key (records are few): deterministic, no allocation. */
    for (uint32_t i = 1; i < s->rec_count; i++) {
        uint32_t k = s->order[i], j = i;
        for (; j > 0 && before(s, k, s->order[j - 1]); j--)
            s->order[j] = s->order[j - 1];
        s->order[j] = k;
    }
    double tol = MERGE * scale;
    s->verts = 0;
    for (uint32_t i = 0; i < s->rec_count; i++) {
        corner_rec *r = &s->rec[s->order[i]];
        /* Records with one key meet at one point: solved once, from the first's hint. */
        if (i > 0 && s->rec[s->order[i - 1]].key == r->key)
            memcpy(r->p, s->rec[s->order[i - 1]].p, sizeof r->p);
        else
            solve_corner(s, r->face, r->prev, r->tag, r->p, r->p);
        uint32_t v = 0;
        for (; v < s->verts; v++) {
            const double *q = s->vert[v];
            if (fabs(q[0] - r->p[0]) <= tol && fabs(q[1] - r->p[1]) <= tol && fabs(q[2] - r->p[2]) <= tol)
                break;
        }
        if (v == s->verts) {
            if (s->verts == RVI_OCC_MAX_CORNERS)
                return RV_ERR_CAPACITY;
            for (int k = 0; k < 3; k++) {
                if (!(fabs(r->p[k]) <= RVI_OCC_MAX_COORD))
                    return RV_ERR_INVALID_ARG;
                s->vert[v][k] = r->p[k];
            }
            s->verts++;
        }
        r->vertex = (uint16_t)v;
    }
    return RV_OK;
}

/* The two faces of one edge from its winding edges (by face, each face once): the two
 * whose windings have it, or the face and the plane that cut it when only one does (the
 * other face was a sliver); of three or more (nearly coincident planes), the two least
 * alike. */
static void edge_faces(const rvi_occ_convex_scratch *s, const wedge *w, uint32_t n, uint8_t out[2])
{
    if (n == 1) {
        out[0] = (uint8_t)w[0].face;
        out[1] = (uint8_t)w[0].tag;
        return;
    }
    double best = INFINITY;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            const double *u = s->unit[w[i].face], *v = s->unit[w[j].face];
            double d = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
            if (d < best) {
                best = d;
                out[0] = (uint8_t)w[i].face;
                out[1] = (uint8_t)w[j].face;
            }
        }
}

static bool wedge_before(const wedge *a, const wedge *b)
{
    if (a->lo != b->lo)
        return a->lo < b->lo;
    if (a->hi != b->hi)
        return a->hi < b->hi;
    return a->face != b->face ? a->face < b->face : a->at < b->at;
}

/* Every winding edge, grouped by its corners (insertion sort: they are few), then one
 * edge per group in order of first appearance. */
static rv_result build_edges(rvi_occ_convex_scratch *s)
{
    uint32_t n = 0;
    for (uint32_t f = 0; f < s->planes; f++)
        for (uint32_t k = 0; k < s->face_len[f]; k++) {
            const corner_rec *r = &s->rec[s->face_first[f] + k];
            uint16_t a = r->vertex, b = s->rec[s->face_first[f] + (k + 1) % s->face_len[f]].vertex;
            if (a == b)
                continue;
            wedge x = { a < b ? a : b, a < b ? b : a, (uint16_t)f, r->tag, s->face_first[f] + k };
            uint32_t j = n++;
            for (; j > 0 && wedge_before(&x, &s->wedges[j - 1]); j--)
                s->wedges[j] = s->wedges[j - 1];
            s->wedges[j] = x;
        }
    s->edges = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i, m = 0, first = UINT32_MAX;
        wedge group[8];
        for (; j < n && s->wedges[j].lo == s->wedges[i].lo && s->wedges[j].hi == s->wedges[i].hi; j++) {
            first = s->wedges[j].at < first ? s->wedges[j].at : first;
            if (m < 8 && (m == 0 || group[m - 1].face != s->wedges[j].face))
                group[m++] = s->wedges[j]; /* a face once: its first winding edge */
        }
        if (s->edges == RVI_OCC_MAX_POLY_EDGES)
            return RV_ERR_CAPACITY;
        /* Insert by first appearance. */
        uint32_t e = s->edges++;
        for (; e > 0 && s->order[e - 1] > first; e--) {
            memcpy(s->edge[e], s->edge[e - 1], sizeof s->edge[e]);
            s->order[e] = s->order[e - 1];
        }
        s->order[e] = first;
        s->edge[e][0] = (uint8_t)s->wedges[i].lo;
        s->edge[e][1] = (uint8_t)s->wedges[i].hi;
        edge_faces(s, group, m, s->edge[e] + 2);
        i = j;
    }
    return s->edges >= 6 ? RV_OK : RV_ERR_INVALID_ARG;
}

/* Box topology (as rvi_occ_box_poly's): corner k has bit a set on the max side of axis a;
 * face 2a is the min side of axis a, 2a + 1 the max side. Edge: corner, corner, face,
 * face. */
static const uint8_t BOX_EDGES[12][4] = {
    { 0, 1, 2, 4 }, { 2, 3, 3, 4 }, { 4, 5, 2, 5 }, { 6, 7, 3, 5 },
    { 0, 2, 0, 4 }, { 1, 3, 1, 4 }, { 4, 6, 0, 5 }, { 5, 7, 1, 5 },
    { 0, 4, 0, 2 }, { 1, 5, 1, 2 }, { 2, 6, 0, 3 }, { 3, 7, 1, 3 },
};

/* Six planes, one facing each way along each axis (a box, the commonest brush): its
 * corners are solved as the general path would (the same three planes, the same canonical
 * order: the same floats) and its topology is the box's, without windings. False when the
 * planes are anything else, or the box is thinner than the general path would keep. */
static bool axial_box(rvi_occ_convex_scratch *s, double scale)
{
    int32_t face[6] = { -1, -1, -1, -1, -1, -1 };
    if (s->planes != 6)
        return false;
    for (uint32_t f = 0; f < 6; f++) {
        const double *u = s->unit[f];
        int axis = u[0] != 0 ? 0 : u[1] != 0 ? 1 : 2, n = (u[0] != 0) + (u[1] != 0) + (u[2] != 0);
        int slot = 2 * axis + (u[axis] > 0);
        if (n != 1 || face[slot] >= 0)
            return false;
        face[slot] = (int32_t)f;
    }
    for (uint32_t k = 0; k < 8; k++) {
        double hint[3] = { 0, 0, 0 };
        solve_corner(s, (uint16_t)face[(k & 1)], (uint16_t)face[2 + ((k >> 1) & 1)], (uint16_t)face[4 + ((k >> 2) & 1)],
                     hint, s->vert[k]);
    }
    for (int a = 0; a < 3; a++)
        if (!(s->vert[7][a] - s->vert[0][a] > MERGE * scale) || !(fabs(s->vert[0][a]) <= RVI_OCC_MAX_COORD) ||
            !(fabs(s->vert[7][a]) <= RVI_OCC_MAX_COORD))
            return false;
    s->verts = 8;
    s->edges = 12;
    for (uint32_t e = 0; e < 12; e++) {
        s->edge[e][0] = BOX_EDGES[e][0];
        s->edge[e][1] = BOX_EDGES[e][1];
        s->edge[e][2] = (uint8_t)face[BOX_EDGES[e][2]];
        s->edge[e][3] = (uint8_t)face[BOX_EDGES[e][3]];
    }
    return true;
}

/* How far p lies outside plane u (normalised) beyond slack, less the rounding of that very
 * sum: > 0 only when p is certainly outside by more than slack. */
static double plane_excess(const double u[4], const double p[3], double slack)
{
    double a = u[0] * p[0], b = u[1] * p[1], c = u[2] * p[2];
    return a + b + c - u[3] - slack - 64 * DBL_EPSILON * (fabs(a) + fabs(b) + fabs(c) + fabs(u[3]));
}

/* Only a solid whose scale (its planes' distance from the local origin) is more than
 * FAR_SCALE times its size is checked (MERGE of the scale then spans more than 1e-5 of the
 * solid); a corner may stand off a plane by OFF_PLANE of the solid's size. */
#define FAR_SCALE 100.0
#define OFF_PLANE 1e-6

/* The box around the corners. */
static void corner_bounds(const rvi_occ_convex_scratch *s, double lo[3], double hi[3])
{
    for (int a = 0; a < 3; a++) {
        lo[a] = INFINITY;
        hi[a] = -INFINITY;
        for (uint32_t v = 0; v < s->verts; v++) {
            lo[a] = dmin(lo[a], s->vert[v][a]);
            hi[a] = dmax(hi[a], s->vert[v][a]);
        }
    }
}

/* Whether the corners and edges bound the planes' solid to within OFF_PLANE of its size:
 * every corner inside every plane, and the two corners of each edge on both of its faces'
 * planes (the freeze draws a silhouette from the edges' planes and its depth from the
 * corners). The tolerances above are fractions of the distance from the local origin, so a
 * solid small next to that distance can lose a short edge to a merge, a sliver face or a
 * corner placed at its winding point (three planes nearly dependent), and its silhouette
 * then reaches past the solid: such a solid is kept, and drawn as nothing. A solid near
 * its origin passes untested (its bevels, rounded to float, would fail the test without
 * losing an edge). */
static bool corners_hold(const rvi_occ_convex_scratch *s, double scale)
{
    double lo[3], hi[3];
    corner_bounds(s, lo, hi);
    double size = dmax(hi[0] - lo[0], dmax(hi[1] - lo[1], hi[2] - lo[2]));
    if (scale <= FAR_SCALE * size)
        return true;
    double slack = OFF_PLANE * size;
    for (uint32_t v = 0; v < s->verts; v++)
        for (uint32_t j = 0; j < s->planes; j++)
            if (plane_excess(s->unit[j], s->vert[v], slack) > 0)
                return false;
    for (uint32_t e = 0; e < s->edges; e++)
        for (int k = 0; k < 2; k++)
            for (int f = 2; f < 4; f++) {
                const double *u = s->unit[s->edge[e][f]], *p = s->vert[s->edge[e][k]];
                double on[4] = { -u[0], -u[1], -u[2], -u[3] }; /* inside the flipped plane too */
                if (plane_excess(on, p, slack) > 0)
                    return false;
            }
    return true;
}

rv_result rvi_occ_convex_build(const rv_occluder_convex *convex, void *scratch, size_t *size)
{
    RVI_TRY(rvi_occ_convex_check(convex));
    rvi_occ_convex_scratch *s = scratch;
    s->inexact = false;
    double scale = load_planes(convex, s);
    if (axial_box(s, scale)) {
        *size = rvi_occ_convex_size(s->planes, s->verts, s->edges);
        return RV_OK;
    }
    RVI_TRY(windings(s, scale));
    RVI_TRY(merge_corners(s, scale));
    if (s->verts < 4)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(build_edges(s));
    s->inexact = !corners_hold(s, scale);
    *size = rvi_occ_convex_size(s->planes, s->verts, s->edges);
    return RV_OK;
}

void rvi_occ_convex_write(const void *scratch, uint32_t flags, void *out)
{
    const rvi_occ_convex_scratch *s = scratch;
    rvi_occ_convex_data *d = out;
    d->plane_count = s->planes;
    d->vertex_count = s->verts;
    d->edge_count = s->edges;
    d->flags = flags | (s->inexact ? RVI_OCC_INEXACT : 0);
    d->triangle_count = d->degenerate_count = 0;
    double *pl = (double *)(void *)(d + 1);
    memcpy(pl, s->plane, sizeof(double) * 4 * s->planes);
    double *vt = pl + 4 * (size_t)s->planes;
    memcpy(vt, s->vert, sizeof(double) * 3 * s->verts);
    memcpy(vt + 3 * (size_t)s->verts, s->edge, 4 * (size_t)s->edges);
    double lo[3], hi[3];
    corner_bounds(s, lo, hi);
    for (int i = 0; i < 3; i++) {
        d->bounds_min[i] = rvi_occ_f_down(lo[i]);
        d->bounds_max[i] = -rvi_occ_f_down(-hi[i]);
    }
}

/* ---- closed convex meshes ---------------------------------------------------------------- */

/* A vertex counts as inside a face's plane, and two faces as one plane, within this
 * fraction of the mesh's scale (rounding of the planes, worked out in double from float
 * corners, is far below it). */
#define MESH_FLAT 1e-12

typedef struct mesh_edge {
    uint32_t key; /* low vertex << 8 | high vertex */
    uint16_t tri;
    uint8_t forward; /* the triangle runs low -> high */
} mesh_edge;

static uint32_t find_root(uint8_t *parent, uint32_t t)
{
    while (parent[t] != t)
        t = parent[t] = parent[parent[t]];
    return t;
}

/* Triangle planes (outward for the winding: n . p <= d inside) and the scale. */
static double mesh_planes(rvi_occ_convex_scratch *s, const uint8_t (*tri)[3], uint32_t nt, double (*pl)[4])
{
    double scale = 0;
    for (uint32_t v = 0; v < s->verts; v++)
        for (int i = 0; i < 3; i++)
            scale = dmax(scale, fabs(s->vert[v][i]));
    for (uint32_t t = 0; t < nt; t++) {
        const double *a = s->vert[tri[t][0]], *b = s->vert[tri[t][1]], *c = s->vert[tri[t][2]];
        double u[3] = { b[0] - a[0], b[1] - a[1], b[2] - a[2] }, w[3] = { c[0] - a[0], c[1] - a[1], c[2] - a[2] };
        pl[t][0] = u[1] * w[2] - u[2] * w[1];
        pl[t][1] = u[2] * w[0] - u[0] * w[2];
        pl[t][2] = u[0] * w[1] - u[1] * w[0];
        pl[t][3] = pl[t][0] * a[0] + pl[t][1] * a[1] + pl[t][2] * a[2];
    }
    return scale + 1e-30;
}

/* Every vertex on or inside every plane, and some clearly inside each (a solid, not a
 * sheet). */
static bool mesh_is_convex(const rvi_occ_convex_scratch *s, const double (*pl)[4], uint32_t nt, double scale)
{
    for (uint32_t t = 0; t < nt; t++) {
        double nm = fabs(pl[t][0]) + fabs(pl[t][1]) + fabs(pl[t][2]), tol = MESH_FLAT * nm * scale, deepest = 0;
        for (uint32_t v = 0; v < s->verts; v++) {
            double h = pl[t][0] * s->vert[v][0] + pl[t][1] * s->vert[v][1] + pl[t][2] * s->vert[v][2] - pl[t][3];
            if (!(h <= tol))
                return false;
            deepest = dmin(deepest, h);
        }
        if (!(deepest < -tol))
            return false;
    }
    return true;
}

/* Two triangles' planes the same (parallel the same way, and u's corners on t's plane)? */
static bool same_plane(const rvi_occ_convex_scratch *s, const double *pt, const double *pu, const uint8_t *tu,
                       double scale)
{
    double nt = fabs(pt[0]) + fabs(pt[1]) + fabs(pt[2]), nu = fabs(pu[0]) + fabs(pu[1]) + fabs(pu[2]);
    double cx = pt[1] * pu[2] - pt[2] * pu[1], cy = pt[2] * pu[0] - pt[0] * pu[2], cz = pt[0] * pu[1] - pt[1] * pu[0];
    if (!(fabs(cx) + fabs(cy) + fabs(cz) <= MESH_FLAT * nt * nu) || !(pt[0] * pu[0] + pt[1] * pu[1] + pt[2] * pu[2] > 0))
        return false;
    for (int k = 0; k < 3; k++) {
        const double *p = s->vert[tu[k]];
        if (!(fabs(pt[0] * p[0] + pt[1] * p[1] + pt[2] * p[2] - pt[3]) <= MESH_FLAT * nt * scale))
            return false;
    }
    return true;
}

/* The mesh's triangles with area, by local vertex numbers (vertices into s->vert); false
 * when they use more than RVI_OCC_MAX_CORNERS vertices. */
static bool mesh_gather(const rv_occluder_mesh *mesh, uint32_t triangles, rvi_occ_convex_scratch *s,
                        uint8_t (*tri)[3], uint32_t *nt)
{
    uint32_t orig[RVI_OCC_MAX_CORNERS];
    bool all = triangles == mesh->index_count / 3; /* none degenerate: no need to look */
    s->verts = 0;
    *nt = 0;
    for (uint32_t t = 0; t < mesh->index_count; t += 3) {
        if (!all && rvi_occ_triangle_degenerate(mesh->positions, mesh->indices + t))
            continue;
        for (int k = 0; k < 3; k++) {
            uint32_t o = mesh->indices[t + k], v = 0;
            while (v < s->verts && orig[v] != o)
                v++;
            if (v == s->verts) {
                if (v == RVI_OCC_MAX_CORNERS)
                    return false;
                orig[v] = o;
                for (int i = 0; i < 3; i++)
                    s->vert[v][i] = mesh->positions[o][i];
                s->verts++;
            }
            tri[*nt][k] = (uint8_t)v;
        }
        (*nt)++;
    }
    return true;
}

/* Pairs every edge with its twin: e[2i] and e[2i + 1] are one edge's two directions, each
 * edge in exactly two triangles, in opposite directions. Directed edges are bucketed by
 * their first vertex, so a twin is found among its end's few edges. */
static bool mesh_pairs(const uint8_t (*tri)[3], uint32_t nt, uint32_t verts, mesh_edge *e)
{
    uint32_t n = 3 * nt;
    if (n % 2)
        return false; /* an edge without a twin */
    uint16_t first[RVI_OCC_MAX_CORNERS + 1], fill[RVI_OCC_MAX_CORNERS];
    uint8_t to[3 * MAXP], used[3 * MAXP];
    uint16_t owner[3 * MAXP];
    memset(first, 0, (verts + 1) * sizeof *first);
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++)
            first[tri[t][k] + 1]++;
    for (uint32_t v = 0; v < verts; v++)
        first[v + 1] = (uint16_t)(first[v + 1] + first[v]);
    memcpy(fill, first, verts * sizeof *fill);
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t slot = fill[tri[t][k]]++;
            to[slot] = tri[t][(k + 1) % 3];
            owner[slot] = (uint16_t)t;
            used[slot] = 0;
        }
    uint32_t m = 0;
    for (uint32_t a = 0; a < verts; a++)
        for (uint32_t i = first[a]; i < first[a + 1]; i++) {
            uint32_t b = to[i], twin = UINT32_MAX;
            if (used[i])
                continue;
            for (uint32_t j = first[b]; j < first[b + 1]; j++) {
                if (to[j] != a)
                    continue;
                if (twin != UINT32_MAX || used[j])
                    return false; /* three or more triangles on one edge */
                twin = j;
            }
            for (uint32_t j = first[a]; j < first[a + 1]; j++)
                if (j != i && to[j] == b)
                    return false; /* the same direction twice: not consistently wound */
            if (twin == UINT32_MAX)
                return false; /* an open edge */
            used[i] = used[twin] = 1;
            uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
            e[m++] = (mesh_edge){ lo << 8 | hi, owner[i], (uint8_t)(a < b) };
            e[m++] = (mesh_edge){ lo << 8 | hi, owner[twin], (uint8_t)(b < a) };
        }
    return m == n;
}

bool rvi_occ_mesh_convex(const rv_occluder_mesh *mesh, uint32_t triangles, void *scratch, size_t *size)
{
    rvi_occ_convex_scratch *s = scratch;
    s->inexact = false;
    if (!(mesh->flags & RV_OCCLUDER_CLOSED) || triangles < 4 || triangles > MAXP)
        return false;
    uint8_t tri[MAXP][3], parent[MAXP], face[MAXP];
    mesh_edge e[3 * MAXP];
    uint32_t nt;
    if (!mesh_gather(mesh, triangles, s, tri, &nt) || !mesh_pairs((const uint8_t (*)[3])tri, nt, s->verts, e))
        return false;
    double pl[MAXP][4], scale = mesh_planes(s, (const uint8_t (*)[3])tri, nt, pl);
    if (!mesh_is_convex(s, (const double (*)[4])pl, nt, scale))
        return false;
    /* Faces: coplanar neighbours joined. */
    for (uint32_t t = 0; t < nt; t++)
        parent[t] = (uint8_t)t;
    for (uint32_t i = 0; i < 3 * nt; i += 2) {
        uint32_t t = e[i].tri, u = e[i + 1].tri;
        if (same_plane(s, pl[t], pl[u], tri[u], scale))
            parent[find_root(parent, u)] = (uint8_t)find_root(parent, t);
    }
    s->planes = 0;
    for (uint32_t t = 0; t < nt; t++)
        if (find_root(parent, t) == t) {
            face[t] = (uint8_t)s->planes;
            memcpy(s->plane[s->planes++], pl[t], sizeof pl[t]);
        }
    s->edges = 0;
    for (uint32_t i = 0; i < 3 * nt; i += 2) {
        uint32_t ft = face[find_root(parent, e[i].tri)], fu = face[find_root(parent, e[i + 1].tri)];
        if (ft == fu)
            continue; /* inside one face */
        uint8_t *ed = s->edge[s->edges++];
        ed[0] = (uint8_t)(e[i].key >> 8);
        ed[1] = (uint8_t)(e[i].key & 0xFFu);
        ed[2] = (uint8_t)ft;
        ed[3] = (uint8_t)fu;
    }
    *size = rvi_occ_convex_size(s->planes, s->verts, s->edges);
    return s->planes >= 4;
}

void rvi_occ_scratch_poly(const void *scratch, rvi_occ_poly *out)
{
    const rvi_occ_convex_scratch *s = scratch;
    out->plane_count = s->planes;
    out->vertex_count = s->verts;
    out->edge_count = s->edges;
    out->planes = (const double (*)[4])s->plane;
    out->vertices = (const double (*)[3])s->vert;
    out->edges = (const uint8_t (*)[4])s->edge;
    out->segment_lines = true;
}

void rvi_occ_mesh_convex_write(const void *scratch, const rv_occluder_mesh *mesh, uint32_t triangles, void *out)
{
    rvi_occ_convex_write(scratch, (mesh->flags & RV_OCCLUDER_EXACT) | RVI_OCC_FROM_MESH, out);
    rvi_occ_convex_data *d = out;
    d->triangle_count = triangles;
    d->degenerate_count = mesh->index_count / 3 - triangles;
}
