/* A dense mesh drawn by its outline (docs/occlusion.md, "Dense meshes"). A mesh whose
 * triangles are small on screen is not drawn piece by piece, where every triangle's edges
 * would meet at texels that only fusion can settle: its triangles are drawn together, and
 * only the texels the outline of their union passes through are left out.
 *
 * S is the set of triangles the mesh draws this frame: every triangle of an open mesh seen
 * not edge-on; a closed mesh's back faces, or with RV_OCCLUDER_EXACT its front faces (the
 * side is the world plane's, as the piece path reads it). An edge is INTERIOR when exactly
 * two triangles of S hold it (its end points the same positions, bit for bit) and they lie
 * on opposite sides of it on screen. The boundary of U, the union of S's images, lies on
 * the other edges: a point inside an interior edge has a neighbourhood covered by its two
 * triangles, and around a vertex whose every edge is interior the triangles form closed
 * fans whose angles turn one way, so they cover a disc around it. A texel that no other
 * edge touches and whose centre lies inside a triangle of S therefore lies wholly inside
 * U (a path from its centre to an uncovered point of it would cross the boundary inside
 * the texel). Each of its points lies in a triangle of S that touches the texel, so the
 * smallest of those triangles' bounds there (each the larger of its plane's minimum over
 * the texel and its nearest vertex's nearness, rounded farther) is never nearer than the
 * mesh anywhere in the texel.
 *
 * Margins: the projected vertices are the mesh's screen geometry, as for pieces; every
 * test below errs by more than its own rounding toward "touches" for the outline and for
 * the triangles a texel's bound takes, and toward "outside" for the centre. */
#include "occlusion_shape.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* A mesh pays for this path when its screen bounds hold fewer texels than this per
 * triangle; larger triangles are drawn as pieces, whose seams fuse with other occluders. */
#define AREA_PER_TRIANGLE 16.0
/* Nor does a mesh this small on screen (texels of its bounds' screen part): the ring of
 * texels its outline leaves out, which pieces would fuse with their neighbours, would be
 * most of it. */
#define MIN_AREA 4096.0
/* Triangles wider or taller than this many texels bound a texel by their plane too. */
#define PLANE_EXTENT 4.0
#define NEARNESS_ROUNDING 1e-9
#define TINY 1e-300

/* A texel is written when its centre, or this point of it, lies inside a triangle of the
 * part: any point of the texel in the part's union would do, and a second one, off the
 * dyadic lines a mesh on a regular grid puts through texel centres, keeps such a grid's
 * seams from leaving texels unwritten. */
#define WITNESS_X 0.6713
#define WITNESS_Y 0.5631
#define STATE_OUTLINE 1u
#define STATE_CENTRE 2u

static uint32_t round_pow2(uint64_t n)
{
    uint32_t p = 16;
    while (p < n)
        p <<= 1;
    return p;
}

static uint32_t weld_slots(uint32_t vertices) { return round_pow2(2 * (uint64_t)vertices); }

/* The per-triangle arrays, one block: edge and edge_triangle (three each), parent, head,
 * next (one each), then side and inner (a byte each). */
static size_t triangle_bytes(uint32_t n) { return (size_t)n * (3 * 4 + 3 * 4 + 3 * 4 + 2); }

static void carve(rvi_occ_outline *o, void *block)
{
    size_t n = o->triangle_capacity;
    uint32_t *w = block;
    o->edge = w;
    o->edge_triangle = w + 3 * n;
    o->parent = w + 6 * n;
    o->head = w + 7 * n;
    o->next = w + 8 * n;
    o->side = (int8_t *)(void *)(w + 9 * n);
    o->inner = (uint8_t *)(void *)(w + 9 * n) + n;
}

void rvi_occ_outline_free(rv_occlusion *occ)
{
    rvi_occ_outline *o = &occ->outline;
    rvi_heap *heap = occ->heap;
    if (o->vertex_capacity) {
        rvi_free(heap, o->weld, (size_t)weld_slots(o->vertex_capacity) * sizeof *o->weld);
        rvi_free(heap, o->id, (size_t)o->vertex_capacity * sizeof *o->id);
        rvi_free(heap, o->start, ((size_t)o->vertex_capacity + 1) * sizeof *o->start);
    }
    if (o->triangle_capacity)
        rvi_free(heap, o->edge, triangle_bytes(o->triangle_capacity));
    rvi_free(heap, o->state, o->texel_capacity * sizeof *o->state);
    rvi_free(heap, o->value, o->texel_capacity * sizeof *o->value);
    rvi_free(heap, o->touched, o->texel_capacity * sizeof *o->touched);
    uint32_t mode = o->mode;
    memset(o, 0, sizeof *o);
    o->mode = mode;
}

rv_result rvi_occ_outline_reserve(rv_occlusion *occ, uint32_t triangles, uint32_t vertices)
{
    rvi_occ_outline *o = &occ->outline;
    if (o->mode == 2 || (triangles < RVI_OCC_OUTLINE_MIN_TRIANGLES && o->mode != 1))
        return RV_OK;
    rvi_heap *heap = occ->heap;
    size_t texels = (size_t)occ->width * occ->height;
    if (vertices > o->vertex_capacity) {
        size_t nw = (size_t)weld_slots(vertices) * sizeof(uint32_t), ni = (size_t)vertices * sizeof(uint32_t);
        size_t ns = ((size_t)vertices + 1) * sizeof(uint32_t);
        uint32_t *w = rvi_alloc(heap, nw), *id = rvi_alloc(heap, ni), *st = rvi_alloc(heap, ns);
        if (!w || !id || !st) {
            rvi_free(heap, w, w ? nw : 0);
            rvi_free(heap, id, id ? ni : 0);
            rvi_free(heap, st, st ? ns : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        if (o->vertex_capacity) {
            rvi_free(heap, o->weld, (size_t)weld_slots(o->vertex_capacity) * sizeof *o->weld);
            rvi_free(heap, o->id, (size_t)o->vertex_capacity * sizeof *o->id);
            rvi_free(heap, o->start, ((size_t)o->vertex_capacity + 1) * sizeof *o->start);
        }
        o->weld = w;
        o->id = id;
        o->start = st;
        o->vertex_capacity = vertices;
    }
    if (triangles > o->triangle_capacity) {
        void *block = rvi_alloc(heap, triangle_bytes(triangles));
        if (!block)
            return RV_ERR_OUT_OF_MEMORY;
        if (o->triangle_capacity)
            rvi_free(heap, o->edge, triangle_bytes(o->triangle_capacity));
        o->triangle_capacity = triangles;
        carve(o, block);
    }
    if (texels > o->texel_capacity) {
        uint32_t *st = rvi_alloc(heap, texels * sizeof *st);
        float *v = rvi_alloc(heap, texels * sizeof *v);
        uint32_t *t = rvi_alloc(heap, texels * sizeof *t);
        if (!st || !v || !t) {
            rvi_free(heap, st, st ? texels * sizeof *st : 0);
            rvi_free(heap, v, v ? texels * sizeof *v : 0);
            rvi_free(heap, t, t ? texels * sizeof *t : 0);
            return RV_ERR_OUT_OF_MEMORY;
        }
        rvi_free(heap, o->state, o->texel_capacity * sizeof *o->state);
        rvi_free(heap, o->value, o->texel_capacity * sizeof *o->value);
        rvi_free(heap, o->touched, o->texel_capacity * sizeof *o->touched);
        memset(st, 0, texels * sizeof *st);
        o->state = st;
        o->value = v;
        o->touched = t;
        o->texel_capacity = texels;
        o->generation = 0;
    }
    return RV_OK;
}

/* ---- welding and edges ------------------------------------------------------------------ */

static uint32_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)h;
}

/* id[k]: the first vertex with vertex k's position, bit for bit. */
static void weld(rvi_occ_outline *o, const float (*pos)[3], uint32_t n)
{
    uint32_t slots = weld_slots(n), mask = slots - 1;
    memset(o->weld, 0, (size_t)slots * sizeof *o->weld);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t b[3];
        memcpy(b, pos[k], sizeof b);
        uint32_t h = mix(((uint64_t)b[0] << 32 | b[1]) ^ ((uint64_t)b[2] * 0x9e3779b97f4a7c15ull)) & mask;
        for (;; h = (h + 1) & mask) {
            uint32_t at = o->weld[h];
            if (!at) {
                o->weld[h] = k + 1;
                o->id[k] = k;
                break;
            }
            if (memcmp(pos[at - 1], pos[k], sizeof pos[k]) == 0) {
                o->id[k] = at - 1;
                break;
            }
        }
    }
}

/* An edge record at its lower welded end: the higher end, and in the top bit whether the
 * triangle lies to the left of lower -> higher on screen. */
#define EDGE_LEFT 0x80000000u

static uint32_t edge_record(uint32_t a, uint32_t b, int left, uint32_t *lower)
{
    *lower = a < b ? a : b;
    int side = a < b ? left : -left;
    return (a < b ? b : a) | (side > 0 ? EDGE_LEFT : 0);
}

/* Sorts a vertex's list by the records' higher end (the owners move with them): insertion
 * for short lists, heapsort for long ones (a fan around one vertex), so an edge's records
 * are consecutive. */
static uint32_t record_end(uint32_t r) { return r & ~EDGE_LEFT; }

static void sift(uint32_t *list, uint32_t *owner, uint32_t at, uint32_t n)
{
    for (;;) {
        uint32_t c = 2 * at + 1;
        if (c >= n)
            return;
        if (c + 1 < n && record_end(list[c + 1]) > record_end(list[c]))
            c++;
        if (record_end(list[c]) <= record_end(list[at]))
            return;
        uint32_t t = list[c], u = owner[c];
        list[c] = list[at], owner[c] = owner[at];
        list[at] = t, owner[at] = u;
        at = c;
    }
}

static void sort_list(uint32_t *list, uint32_t *owner, uint32_t n)
{
    if (n <= 32) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t r = list[i], w = owner[i], j = i;
            for (; j > 0 && record_end(list[j - 1]) > record_end(r); j--) {
                list[j] = list[j - 1];
                owner[j] = owner[j - 1];
            }
            list[j] = r;
            owner[j] = w;
        }
        return;
    }
    for (uint32_t i = n / 2; i-- > 0;)
        sift(list, owner, i, n);
    for (uint32_t end = n; end-- > 1;) {
        uint32_t t = list[0], u = owner[0];
        list[0] = list[end], owner[0] = owner[end];
        list[end] = t, owner[end] = u;
        sift(list, owner, 0, end);
    }
}

/* Triangle t's welded corners, sorted. */
static void corners_of(const rvi_occ_outline *o, const uint32_t *idx, uint32_t t, uint32_t c[3])
{
    const uint32_t *tri = idx + 3 * (size_t)t;
    uint32_t a = o->id[tri[0]], b = o->id[tri[1]], d = o->id[tri[2]], x;
    if (a > b)
        x = a, a = b, b = x;
    if (b > d)
        x = b, b = d, d = x;
    if (a > b)
        x = a, a = b, b = x;
    c[0] = a, c[1] = b, c[2] = d;
}

/* Does triangle t have the welded corners of one entered before it (the table, slots a
 * power of two, holds triangle + 1, 0 empty)? If not, it is entered. */
static bool repeated(rvi_occ_outline *o, const uint32_t *idx, uint32_t t, uint32_t slots)
{
    uint32_t c[3], d[3];
    corners_of(o, idx, t, c);
    uint32_t mask = slots - 1;
    for (uint32_t h = mix(((uint64_t)c[0] << 40) ^ ((uint64_t)c[1] << 20) ^ c[2]) & mask;; h = (h + 1) & mask) {
        uint32_t at = o->edge[h];
        if (!at) {
            o->edge[h] = t + 1;
            return false;
        }
        corners_of(o, idx, at - 1, d);
        if (c[0] == d[0] && c[1] == d[1] && c[2] == d[2])
            return true;
    }
}

/* Union-find over triangles (path halving). */
static uint32_t find(uint32_t *parent, uint32_t t)
{
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

/* ---- the outline's texels ----------------------------------------------------------------- */

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }

/* A vertex beyond the near plane, projected: a triangle of three is drawn here; one with
 * another is left to the pieces, which clip it. */
static bool valid(const rvi_occ_vertex *v) { return v->clip[4] >= 0 && v->nearness == v->nearness; }

/* Marks every texel the segment p -> q comes within m of (closed texels). */
static void mark_segment(rv_occlusion *occ, const double p[2], const double q[2], uint32_t gen)
{
    rvi_occ_outline *o = &occ->outline;
    double x0 = p[0], y0 = p[1], x1 = q[0], y1 = q[1];
    if (y0 > y1) {
        double t = x0;
        x0 = x1;
        x1 = t;
        t = y0;
        y0 = y1;
        y1 = t;
    }
    double W = occ->width, H = occ->height;
    double m = 1e-6 + 1e-12 * (fabs(x0) + fabs(y0) + fabs(x1) + fabs(y1));
    double xl = dmin(x0, x1), xh = dmax(x0, x1), dx = x1 - x0, dy = y1 - y0;
    if (y1 + m < 0 || y0 - m > H || xh + m < 0 || xl - m > W)
        return;
    int32_t r0 = (int32_t)floor(dmax(y0 - m, 0)), r1 = (int32_t)floor(dmin(y1 + m, H - 1));
    bool level = !(fabs(dx) < 1e6 * dy); /* too flat to interpolate: its whole x extent */
    for (int32_t r = r0; r <= r1; r++) {
        double lo = xl, hi = xh;
        if (!level) {
            double ya = dmax(r - m, y0), yb = dmin(r + 1 + m, y1);
            double xa = x0 + (ya - y0) * dx / dy, xb = x0 + (yb - y0) * dx / dy;
            lo = dmax(dmin(xa, xb), xl);
            hi = dmin(dmax(xa, xb), xh);
        }
        lo -= m;
        hi += m;
        if (hi < 0 || lo > W)
            continue;
        int32_t c0 = (int32_t)floor(dmax(lo, 0)), c1 = (int32_t)floor(dmin(hi, W - 1));
        uint32_t *row = o->state + (size_t)r * occ->width;
        for (int32_t c = c0; c <= c1; c++)
            row[c] = gen << 2 | STATE_OUTLINE;
    }
}

/* ---- the triangles' texels ---------------------------------------------------------------- */

/* One triangle's bound into every texel it comes within its margin of; its centre flag
 * where the texel's centre lies inside it by more than the margin. */
static void draw_triangle(rv_occlusion *occ, const rvi_occ_vertex *const v[3], int side, const float plane[3],
                          bool has_plane, float floor_value, uint32_t gen, uint32_t *touched)
{
    rvi_occ_outline *o = &occ->outline;
    double A[3], B[3], C[3], marg[3];
    double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
    for (int i = 0; i < 3; i++) {
        const double *p = v[i]->texel, *q = v[(i + 1) % 3]->texel;
        double dx = q[0] - p[0], dy = q[1] - p[1];
        /* Inside: A x + B y + C >= 0. */
        A[i] = -side * dy;
        B[i] = side * dx;
        C[i] = side * (dy * p[0] - dx * p[1]);
        double reach = 1e-6 + 1e-12 * (fabs(p[0]) + fabs(p[1]) + fabs(q[0]) + fabs(q[1]) + occ->width + occ->height);
        marg[i] = (fabs(A[i]) + fabs(B[i])) * reach;
        minx = dmin(minx, p[0]);
        maxx = dmax(maxx, p[0]);
        miny = dmin(miny, p[1]);
        maxy = dmax(maxy, p[1]);
    }
    double m = 1e-6 + 1e-12 * (fabs(minx) + fabs(maxx) + fabs(miny) + fabs(maxy));
    double W = occ->width, H = occ->height;
    if (maxx + m < 0 || minx - m > W || maxy + m < 0 || miny - m > H)
        return;
    int32_t x0 = (int32_t)floor(dmax(minx - m, 0)), x1 = (int32_t)floor(dmin(maxx + m, W - 1));
    int32_t y0 = (int32_t)floor(dmax(miny - m, 0)), y1 = (int32_t)floor(dmin(maxy + m, H - 1));
    for (int32_t y = y0; y <= y1; y++) {
        /* The row's span: where each edge's test can pass, widened by a texel (the test
         * below decides; the span only keeps a long thin triangle from costing its
         * bounding box). */
        double lo = x0, hi = x1;
        for (int i = 0; i < 3 && x1 - x0 > 4; i++) {
            double r = -marg[i] - C[i] - B[i] * (y + (B[i] > 0));
            if (A[i] > 0)
                lo = dmax(lo, r / A[i] - 2);
            else if (A[i] < 0)
                hi = dmin(hi, r / A[i] + 1);
        }
        if (!(lo <= hi))
            continue;
        int32_t xa = (int32_t)lo, xb = (int32_t)hi;
        uint32_t *row = o->state + (size_t)y * occ->width;
        for (int32_t x = xa; x <= xb; x++) {
            uint32_t s = row[x];
            bool mine = (s >> 2) == gen;
            if (mine && (s & STATE_OUTLINE))
                continue;
            bool touches = true, centre = true, witness = true;
            for (int i = 0; i < 3 && touches; i++) {
                /* The texel's corner farthest inside; its centre, and a second point off
                 * the lines a grid through texel centres or corners would put there. */
                double cx = x + (A[i] > 0), cy = y + (B[i] > 0);
                touches = A[i] * cx + B[i] * cy + C[i] >= -marg[i];
                centre = centre && A[i] * (x + 0.5) + B[i] * (y + 0.5) + C[i] >= marg[i];
                witness = witness && A[i] * (x + WITNESS_X) + B[i] * (y + WITNESS_Y) + C[i] >= marg[i];
            }
            centre = centre || witness;
            if (!touches)
                continue;
            float value = floor_value;
            if (has_plane) {
                float p = plane[0] * (float)x + (plane[1] * (float)y + plane[2]);
                value = p > value ? p : value;
            }
            size_t t = (size_t)y * occ->width + (size_t)x;
            if (!mine) {
                o->value[t] = value;
                o->touched[(*touched)++] = (uint32_t)t;
                row[x] = gen << 2 | (centre ? STATE_CENTRE : 0);
            } else {
                o->value[t] = value < o->value[t] ? value : o->value[t];
                row[x] = s | (centre ? STATE_CENTRE : 0);
            }
        }
    }
}

/* ---- the mesh ----------------------------------------------------------------------------- */

/* Which triangles S holds: +1 or -1 (the winding on screen), 0 not drawn; the stats and
 * tally of the others are counted. */
static int8_t triangle_side(rv_occlusion *occ, const rvi_occ_input *in, const rvi_occ_vertex *const v[3],
                            rvi_occ_plane *pl, rvi_occ_tally *tally)
{
    if (!rvi_occ_triangle_plane(&occ->view, v[0], v[1], v[2], pl)) {
        occ->stats.triangles_degenerate++;
        tally->degenerate = 1;
        return 0;
    }
    double tol = RVI_OCC_EDGE_ON * pl->pe_mag;
    bool front = pl->pe > tol, back = pl->pe < -tol, mirrored = (in->flags & RVI_OCC_INPUT_MIRRORED) != 0;
    bool drawn = front || back;
    if (in->flags & RV_OCCLUDER_CLOSED)
        drawn = (in->flags & RV_OCCLUDER_EXACT) ? (mirrored ? back : front) : (mirrored ? front : back);
    double ux = v[1]->texel[0] - v[0]->texel[0], uy = v[1]->texel[1] - v[0]->texel[1];
    double wx = v[2]->texel[0] - v[0]->texel[0], wy = v[2]->texel[1] - v[0]->texel[1];
    double a = ux * wy, b = uy * wx, orient = a - b;
    /* Seen too nearly edge-on on screen to tell its sides: not drawn (its edges become
     * outline for its neighbours). */
    if (!drawn || !(fabs(orient) > 1e-9 * (fabs(a) + fabs(b)))) {
        occ->stats.triangles_skipped++;
        return 0;
    }
    return orient > 0 ? 1 : -1;
}

/* One connected part, its triangles listed from first through next: its outline (the
 * edges of its triangles that are not interior) marked, every triangle's bound into the
 * texels it touches, then the texels wholly inside written. */
static void draw_part(rv_occlusion *occ, const uint32_t *idx, const rvi_occ_vertex *vert, uint32_t first)
{
    rvi_occ_outline *o = &occ->outline;
    if (++o->generation >= (1u << 30)) {
        memset(o->state, 0, o->texel_capacity * sizeof *o->state);
        o->generation = 1;
    }
    uint32_t gen = o->generation;
    for (uint32_t t = first; t != UINT32_MAX; t = o->next[t]) {
        const uint32_t *tri = idx + 3 * (size_t)t;
        for (uint32_t i = 0; i < 3; i++)
            if (!(o->inner[t] & (1u << i)))
                mark_segment(occ, vert[tri[i]].texel, vert[tri[(i + 1) % 3]].texel, gen);
    }
    uint32_t count = 0;
    for (uint32_t t = first; t != UINT32_MAX; t = o->next[t]) {
        const uint32_t *tri = idx + 3 * (size_t)t;
        const rvi_occ_vertex *v[3] = { &vert[tri[0]], &vert[tri[1]], &vert[tri[2]] };
        /* A triangle a few texels across bounds the texels it touches by its nearest
         * vertex alone: its plane's minimum over a whole texel is rarely much nearer, and
         * the plane costs as much as the rest of the triangle's work. */
        float plane[3];
        bool has_plane = false;
        double ex = dmax(v[0]->texel[0], dmax(v[1]->texel[0], v[2]->texel[0])) -
                    dmin(v[0]->texel[0], dmin(v[1]->texel[0], v[2]->texel[0]));
        double ey = dmax(v[0]->texel[1], dmax(v[1]->texel[1], v[2]->texel[1])) -
                    dmin(v[0]->texel[1], dmin(v[1]->texel[1], v[2]->texel[1]));
        if (!(ex <= PLANE_EXTENT && ey <= PLANE_EXTENT)) {
            rvi_occ_plane pl;
            rvi_occ_triangle_plane(&occ->view, v[0], v[1], v[2], &pl);
            has_plane = rvi_occ_plane_texel_min(&occ->view, &pl, plane);
        }
        double far = dmin(v[0]->nearness, dmin(v[1]->nearness, v[2]->nearness));
        float floor_value = rvi_occ_f_down(far - fabs(far) * NEARNESS_ROUNDING - TINY);
        draw_triangle(occ, v, o->side[t], plane, has_plane, floor_value, gen, &count);
    }
    float *texels = occ->texels;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t t = o->touched[k];
        uint32_t s = o->state[t];
        if ((s & STATE_OUTLINE) || !(s & STATE_CENTRE))
            continue;
        if (o->value[t] > texels[t])
            texels[t] = o->value[t];
    }
}

bool rvi_occ_outline_draw(rv_occlusion *occ, uint32_t input, const rvi_occ_vertex *vert)
{
    rvi_occ_outline *o = &occ->outline;
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, input);
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, in);
    uint32_t nt = mesh->triangle_count, nv = mesh->vertex_count;
    if (o->mode == 2 || nt > o->triangle_capacity || nv > o->vertex_capacity ||
        (size_t)occ->width * occ->height > o->texel_capacity || (nt < RVI_OCC_OUTLINE_MIN_TRIANGLES && o->mode != 1))
        return false;
    /* Density from the valid vertices' screen bounds, clipped to the buffer. */
    double box[4] = { INFINITY, INFINITY, -INFINITY, -INFINITY };
    for (uint32_t k = 0; k < nv; k++) {
        if (!valid(&vert[k]))
            continue;
        box[0] = dmin(box[0], vert[k].texel[0]);
        box[1] = dmin(box[1], vert[k].texel[1]);
        box[2] = dmax(box[2], vert[k].texel[0]);
        box[3] = dmax(box[3], vert[k].texel[1]);
    }
    double area = (dmin(box[2], occ->width) - dmax(box[0], 0)) * (dmin(box[3], occ->height) - dmax(box[1], 0));
    if (o->mode != 1 && !(area < AREA_PER_TRIANGLE * nt && area >= MIN_AREA))
        return false;

    occ->stats.meshes_outlined++;
    const float (*pos)[3] = rvi_occ_mesh_positions(mesh);
    const uint32_t *idx = rvi_occ_mesh_indices(mesh);
    rvi_occ_tally *tally = &RVI_VEC_AT(occ->tallies, rvi_occ_tally, input);
    weld(o, pos, nv);

    /* S, and its edges listed at their lower welded end (a counting sort). The edge array
     * is free until the listing: it first holds a table of S's triangles by their welded
     * corners, so a triangle repeating another (a double-sided surface listed twice, one
     * wound each way) is drawn once and its edges stay interior. */
    uint32_t drawn = 0, slots = 1, repeats = 0;
    while (2 * (uint64_t)slots <= 3 * (uint64_t)nt)
        slots *= 2;
    memset(o->edge, 0, (size_t)slots * sizeof *o->edge);
    memset(o->start, 0, ((size_t)nv + 1) * sizeof *o->start);
    for (uint32_t t = 0; t < nt; t++) {
        const uint32_t *tri = idx + 3 * (size_t)t;
        const rvi_occ_vertex *v[3] = { &vert[tri[0]], &vert[tri[1]], &vert[tri[2]] };
        if (!valid(v[0]) || !valid(v[1]) || !valid(v[2])) {
            o->side[t] = RVI_OCC_OUTLINE_LEFT;
            continue;
        }
        rvi_occ_plane pl;
        int8_t side = triangle_side(occ, in, v, &pl, tally);
        o->side[t] = side;
        if (!side)
            continue;
        if (repeated(o, idx, t, slots)) {
            o->side[t] = 0;
            repeats++;
            continue;
        }
        drawn++;
        for (int i = 0; i < 3; i++) {
            uint32_t a = o->id[tri[i]], b = o->id[tri[(i + 1) % 3]];
            o->start[(a < b ? a : b) + 1]++;
        }
    }
    occ->stats.triangles_rasterized += drawn;
    occ->stats.triangles_skipped += repeats;
    tally->drawn += drawn;
    if (!drawn)
        return true; /* the caller still draws what was left to the pieces */
    for (uint32_t k = 0; k < nv; k++)
        o->start[k + 1] += o->start[k];
    for (uint32_t t = 0; t < nt; t++) {
        o->parent[t] = t;
        o->inner[t] = 0;
        if (o->side[t] != 1 && o->side[t] != -1)
            continue;
        const uint32_t *tri = idx + 3 * (size_t)t;
        for (uint32_t i = 0; i < 3; i++) {
            uint32_t lower, r = edge_record(o->id[tri[i]], o->id[tri[(i + 1) % 3]], o->side[t], &lower);
            o->edge_triangle[o->start[lower]] = t << 2 | i;
            o->edge[o->start[lower]++] = r; /* start[lower] ends at the next list's start */
        }
    }

    /* Interior edges (exactly two records, one on each side) join their two triangles
     * into one connected part. */
    for (uint32_t a = 0, first = 0; a < nv; first = o->start[a++]) {
        uint32_t *list = o->edge + first, *owner = o->edge_triangle + first;
        uint32_t n = o->start[a] - first;
        sort_list(list, owner, n);
        for (uint32_t k = 0, j; k < n; k = j) {
            uint32_t end = record_end(list[k]), left = 0;
            for (j = k; j < n && record_end(list[j]) == end; j++)
                left += (list[j] & EDGE_LEFT) != 0;
            if (j - k != 2 || left != 1)
                continue;
            uint32_t t0 = owner[k] >> 2, t1 = owner[k + 1] >> 2;
            o->inner[t0] |= (uint8_t)(1u << (owner[k] & 3));
            o->inner[t1] |= (uint8_t)(1u << (owner[k + 1] & 3));
            uint32_t r0 = find(o->parent, t0), r1 = find(o->parent, t1);
            if (r0 != r1)
                o->parent[r0 < r1 ? r1 : r0] = r0 < r1 ? r0 : r1;
        }
    }

    /* Each connected part on its own: its outline, its triangles' bounds, its texels. A
     * part lying behind another on screen (a valley behind a crest) then leaves the nearer
     * part's texels to that part's depth. */
    for (uint32_t t = 0; t < nt; t++)
        o->head[t] = UINT32_MAX;
    for (uint32_t t = nt; t-- > 0;) {
        if (o->side[t] != 1 && o->side[t] != -1)
            continue;
        uint32_t r = find(o->parent, t);
        o->next[t] = o->head[r];
        o->head[r] = t;
    }
    for (uint32_t root = 0; root < nt; root++)
        if (o->head[root] != UINT32_MAX)
            draw_part(occ, idx, vert, o->head[root]);
    return true;
}
