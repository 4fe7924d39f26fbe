/* The freeze (docs/design.md §4): every item (a box, a convex solid, a mesh triangle)
 * through the float object test for its screen rectangle and nearest point, the cap
 * (largest on screen first), then nearest first: an item wholly behind what is already
 * drawn is skipped (drawing it could not change the buffer: a texel keeps the larger
 * nearness, and whatever it fused with would be farther still), the rest are projected in
 * double, drawn (inner raster) and kept for fusion, whose texels are resolved every few
 * pieces so that later items see fused seams; then the pyramid. The freeze never
 * allocates: add and begin reserved everything. */
#include "occlusion_shape.h"
#include "occlusion_test.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define EMPTY_TEXEL (-FLT_MAX)
/* Fused texels are resolved after this many drawn pieces (and at the end). */
#define ROUND 16u
/* Below this many items a Shell sort beats the radix sort's histograms. */
#define RADIX_MIN 256u

/* Sorts keys in descending order (Shell sort, Ciura's gaps: no allocation, and the keys
 * are unique, so the order is deterministic). */
static void sort_desc(uint64_t *keys, uint32_t n)
{
    static const uint32_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        uint32_t gap = gaps[g];
        for (uint32_t i = gap; i < n; i++) {
            uint64_t k = keys[i];
            uint32_t j = i;
            for (; j >= gap && keys[j - gap] < k; j -= gap)
                keys[j] = keys[j - gap];
            keys[j] = k;
        }
    }
}

/* A float's bits, mapped so that unsigned order is numeric order. */
static uint32_t float_order(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

/* Sorts keys in descending order with an LSD radix sort over the bytes from first_byte up
 * (the key's high word first from 4; all bytes from 0), stable: keys already in index
 * order keep it among equals, so the result matches sort_desc. tmp holds n keys. */
static void radix_desc(uint64_t *keys, uint64_t *tmp, uint32_t n, int first_byte)
{
    uint64_t *src = keys, *dst = tmp;
    for (int byte = first_byte; byte < 8; byte++) {
        uint32_t count[257];
        memset(count, 0, sizeof count);
        int shift = 8 * byte;
        for (uint32_t i = 0; i < n; i++)
            count[255 - ((src[i] >> shift) & 0xFFu) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (uint32_t i = 0; i < n; i++)
            dst[count[255 - ((src[i] >> shift) & 0xFFu)]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys)
        memcpy(keys, src, (size_t)n * sizeof *keys);
}

static void sort_keys(uint64_t *keys, uint64_t *tmp, uint32_t n, bool index_order)
{
    if (n < RADIX_MIN)
        sort_desc(keys, n);
    else
        radix_desc(keys, tmp, n, index_order ? 4 : 0);
}

/* Builds every pyramid level and returns how many level-0 texels hold a depth (counted in
 * the same pass over level 0). */
static RVI_ALWAYS_INLINE uint32_t pyramid_levels(rv_occlusion *occ)
{
    uint32_t covered = 0;
    for (uint32_t l = 0; l + 1 < occ->level_count; l++) {
        const float *src = occ->texels + occ->level_offset[l];
        float *dst = occ->texels + occ->level_offset[l + 1];
        uint32_t sw = occ->level_w[l], sh = occ->level_h[l];
        uint32_t dw = occ->level_w[l + 1], dh = occ->level_h[l + 1];
        for (uint32_t y = 0; y < dh; y++) {
            const float *r0 = src + (size_t)(2 * y) * sw;
            const float *r1 = 2 * y + 1 < sh ? r0 + sw : r0; /* a missing child repeats its sibling */
            float *out = dst + (size_t)y * dw;
            uint32_t pairs = sw / 2;
            for (uint32_t x = 0; x < pairs; x++) {
                float a = r0[2 * x] < r0[2 * x + 1] ? r0[2 * x] : r0[2 * x + 1];
                float b = r1[2 * x] < r1[2 * x + 1] ? r1[2 * x] : r1[2 * x + 1];
                out[x] = a < b ? a : b;
            }
            if (pairs < dw) {
                float a = r0[sw - 1], b = r1[sw - 1];
                out[pairs] = a < b ? a : b;
            }
            if (l == 0) {
                uint32_t c = 0;
                for (uint32_t x = 0; x < sw; x++)
                    c += r0[x] > EMPTY_TEXEL;
                if (r1 != r0)
                    for (uint32_t x = 0; x < sw; x++)
                        c += r1[x] > EMPTY_TEXEL;
                covered += c;
            }
        }
    }
    if (occ->level_count == 1)
        covered = (uint32_t)(occ->texels[0] > EMPTY_TEXEL);
    return covered;
}

static uint32_t build_pyramid_generic(rv_occlusion *occ)
{
    return pyramid_levels(occ);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static uint32_t build_pyramid_avx2(rv_occlusion *occ)
{
    return pyramid_levels(occ);
}
#endif

/* The pyramid, and the count of covered texels. */
static uint32_t build_pyramid(rv_occlusion *occ)
{
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        return build_pyramid_avx2(occ);
#endif
    return build_pyramid_generic(occ);
}

static RVI_ALWAYS_INLINE void fill_empty(float *texels, size_t n)
{
    for (size_t i = 0; i < n; i++)
        texels[i] = EMPTY_TEXEL;
}

static void clear_generic(float *texels, size_t n)
{
    fill_empty(texels, n);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void clear_avx2(float *texels, size_t n)
{
    fill_empty(texels, n);
}
#endif

static void clear_level0(rv_occlusion *occ)
{
    size_t n0 = (size_t)occ->width * occ->height;
#if RVI_OCC_X86_WIDE
    if (occ->wide) {
        clear_avx2(occ->texels, n0);
        return;
    }
#endif
    clear_generic(occ->texels, n0);
}

static void count_skip(rv_occlusion_stats *st, rvi_occ_prepare r)
{
    st->occluders_skipped++;
    if (r == RVI_OCC_OFFSCREEN)
        st->skipped_offscreen++;
    else if (r == RVI_OCC_DEGENERATE)
        st->skipped_degenerate++;
    else if (r == RVI_OCC_NEAR)
        st->skipped_near++;
    else
        st->skipped_small++;
}


/* ---- items ---------------------------------------------------------------------------------- */

/* The triangles of a closed convex mesh drawn as its solid (0 for any other occluder):
 * counted together, whatever becomes of the solid. */
static uint32_t solid_triangles(const rv_occlusion *occ, uint32_t input)
{
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, input);
    return in->kind == RVI_OCC_CONVEX ? rvi_occ_input_convex(occ, in)->triangle_count : 0;
}

/* Screen bounds of a projected mesh; false when a vertex lies before the near plane (such a
 * mesh is near, never small). */
static bool mesh_bounds(const rvi_occ_vertex *v, uint32_t n, double b[4])
{
    b[0] = b[1] = INFINITY;
    b[2] = b[3] = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].clip[4] < 0)
            return false;
        b[0] = fmin(b[0], v[i].texel[0]);
        b[1] = fmin(b[1], v[i].texel[1]);
        b[2] = fmax(b[2], v[i].texel[0]);
        b[3] = fmax(b[3], v[i].texel[1]);
    }
    return true;
}

/* Projects a mesh and checks its screen size; false (its triangles counted skipped) when it
 * is smaller than min_occluder_texels. */
static bool project_mesh(rv_occlusion *occ, uint32_t input, const rvi_occ_vertex **out)
{
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, input);
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, in);
    const rvi_occ_shape *shape = &RVI_VEC_AT(occ->shapes, rvi_occ_shape, in->shape);
    rvi_occ_vertex *vert = RVI_VEC_PTR(occ->vertices, rvi_occ_vertex) + shape->vertex_base;
    rvi_occ_mesh_project(occ, in, vert);
    *out = vert;
    double b[4];
    float minimum = occ->desc.min_occluder_texels;
    if (mesh_bounds(vert, mesh->vertex_count, b) &&
        (fmin(b[2], occ->width) - fmax(b[0], 0) < minimum || fmin(b[3], occ->height) - fmax(b[1], 0) < minimum)) {
        occ->stats.triangles_skipped += mesh->triangle_count;
        return false;
    }
    return true;
}

/* Writes item n for triangles [t, t + run) of a mesh, its footprint the union of theirs
 * (fp[n] holds the first's); the stats of the triangles a run skips are counted. Returns
 * the triangles consumed (at least one). */
static uint32_t mesh_item(rv_occlusion *occ, uint32_t input, const rvi_occ_vertex *vert, uint32_t t, bool merge,
                          rvi_occ_item *items, rvi_occ_footprint *fp, uint32_t *n)
{
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, input);
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, in);
    rvi_occ_tally *tally = &RVI_VEC_AT(occ->tallies, rvi_occ_tally, input);
    rvi_occ_footprint *f = &fp[*n];
    bool degenerate = false;
    if (!rvi_occ_triangle_footprint(occ, in, vert, t, f, &degenerate)) {
        occ->stats.triangles_degenerate += degenerate;
        occ->stats.triangles_skipped += !degenerate;
        tally->degenerate |= degenerate;
        return 1;
    }
    if (f->on == RVI_OCC_AWAY) {
        tally->offscreen = 1;
        occ->stats.triangles_skipped++;
        return 1;
    }
    uint32_t run = 1;
    if (merge && f->on == RVI_OCC_ON)
        run = rvi_occ_mesh_run(occ, in, vert, t, mesh->triangle_count - t, f);
    items[*n].input = input;
    items[*n].triangle = t;
    items[*n].run = run;
    (*n)++;
    return run;
}

/* A mesh's triangles as items (each through its own footprint, coplanar neighbours as one
 * when merge), appended from n on; a mesh smaller than min_occluder_texels draws none. */
static uint32_t projected_items(rv_occlusion *occ, uint32_t input, const rvi_occ_vertex *vert, bool merge,
                                rvi_occ_item *items, rvi_occ_footprint *fp, uint32_t n)
{
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, &RVI_VEC_AT(occ->inputs, rvi_occ_input, input));
    for (uint32_t t = 0; t < mesh->triangle_count;)
        t += mesh_item(occ, input, vert, t, merge, items, fp, &n);
    return n;
}

static uint32_t mesh_items(rv_occlusion *occ, uint32_t input, bool merge, rvi_occ_item *items,
                           rvi_occ_footprint *fp, uint32_t n)
{
    const rvi_occ_vertex *vert;
    if (!project_mesh(occ, input, &vert))
        return n;
    return projected_items(occ, input, vert, merge, items, fp, n);
}

/* A closed mesh keeps its far side (its back-facing triangles, or its convex solid's):
 * true when the near plane may cut it where the view shows (rvi_occ_near_cut), judged by
 * its bounds, so that it is not drawn this frame. An open mesh is a surface: clipped, it
 * hides only where it lies beyond the near plane, as the GPU draws it. */
static bool closed_mesh_cut(const rv_occlusion *occ, const rvi_occ_input *in)
{
    if (!(in->flags & RV_OCCLUDER_CLOSED))
        return false;
    const float *m = rvi_occ_input_matrix(occ, in);
    const rvi_occ_view *v = &occ->view;
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    bool behind = false;
    for (int k = 0; k < 8; k++) {
        double l[3] = { k & 1 ? in->max[0] : in->min[0], k & 2 ? in->max[1] : in->min[1],
                        k & 4 ? in->max[2] : in->min[2] }, w[3];
        for (int i = 0; i < 3; i++) {
            w[i] = m ? (double)m[i] * l[0] + (double)m[4 + i] * l[1] + (double)m[8 + i] * l[2] + (double)m[12 + i]
                     : l[i];
            lo[i] = fmin(lo[i], w[i]);
            hi[i] = fmax(hi[i], w[i]);
        }
        behind |= v->near_row[0] * w[0] + v->near_row[1] * w[1] + v->near_row[2] * w[2] + v->near_row[3] <= 0;
    }
    return behind && rvi_occ_near_cut(v, lo, hi);
}

/* Every input's footprint (through its box, or its local bounds), then the items: a box or
 * convex solid is one; a mesh is one whole-mesh item (lazy: its triangles become items
 * only if it is not found hidden as a whole), or, when the cap may apply, its triangles. */
static uint32_t build_items(rv_occlusion *occ, bool lazy)
{
    uint32_t count = occ->inputs.count;
    const rvi_occ_input *in = RVI_VEC_PTR(occ->inputs, rvi_occ_input);
    rvi_occ_item *items = RVI_VEC_PTR(occ->items, rvi_occ_item);
    rvi_occ_footprint *fp = RVI_VEC_PTR(occ->footprints, rvi_occ_footprint);
    rvi_occ_footprint *whole = fp + occ->item_count + count; /* capacities reserved by add */
    rvi_occ_footprints(occ, in, count, occ->matrices.data, whole);
    memset(occ->tallies.data, 0, (size_t)count * sizeof(rvi_occ_tally));
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        /* A mesh without a triangle to draw (every one degenerate) has nothing to draw
         * wherever it is: count_meshes counts it skipped_small. */
        if (in[i].kind == RVI_OCC_MESH && rvi_occ_input_mesh(occ, &in[i])->triangle_count == 0)
            continue;
        if (whole[i].on == RVI_OCC_AWAY) {
            if (in[i].kind != RVI_OCC_MESH) {
                count_skip(&occ->stats, RVI_OCC_OFFSCREEN);
                occ->stats.triangles_skipped += solid_triangles(occ, i);
            } else {
                RVI_VEC_AT(occ->tallies, rvi_occ_tally, i).offscreen = 1;
                occ->stats.triangles_skipped += rvi_occ_input_mesh(occ, &in[i])->triangle_count;
            }
            continue;
        }
        if (in[i].kind == RVI_OCC_MESH && closed_mesh_cut(occ, &in[i])) {
            RVI_VEC_AT(occ->tallies, rvi_occ_tally, i).near = 1;
            occ->stats.triangles_skipped += rvi_occ_input_mesh(occ, &in[i])->triangle_count;
            continue;
        }
        if (in[i].kind == RVI_OCC_MESH && !lazy) {
            n = mesh_items(occ, i, false, items, fp, n);
            continue;
        }
        if (in[i].kind == RVI_OCC_MESH && rvi_occ_input_mesh(occ, &in[i])->triangle_count == 0)
            continue; /* every triangle degenerate (counted by add) */
        items[n].input = i;
        items[n].triangle = in[i].kind == RVI_OCC_MESH ? RVI_OCC_WHOLE_MESH : RVI_OCC_NO_TRIANGLE;
        items[n].run = 1;
        fp[n++] = whole[i];
    }
    return n;
}

/* Keys for the order: nearest first (near-plane crossers, on == 0, are the nearest of
 * all), and before that the cap: the largest on screen first. */
static uint32_t order_items(rv_occlusion *occ, uint32_t n)
{
    if (!n)
        return 0; /* every triangle degenerate: the order may have no storage */
    const rvi_occ_footprint *fp = RVI_VEC_PTR(occ->footprints, rvi_occ_footprint);
    const rvi_occ_item *items = RVI_VEC_PTR(occ->items, rvi_occ_item);
    uint64_t *keys = RVI_VEC_PTR(occ->order, uint64_t), *tmp = keys + occ->item_count;
    bool index_order = true;
    uint32_t cap = occ->desc.max_occluders;
    if (cap && n > cap) {
        for (uint32_t i = 0; i < n; i++) {
            float area = fp[i].on ? (float)(fp[i].x1 - fp[i].x0 + 1) * (float)(fp[i].y1 - fp[i].y0 + 1) : FLT_MAX;
            keys[i] = ((uint64_t)float_order(area) << 32) | (uint32_t)(UINT32_MAX - i);
        }
        /* Largest on screen first, submission order among equals. */
        sort_keys(keys, tmp, n, true);
        for (uint32_t k = cap; k < n; k++) {
            uint32_t i = UINT32_MAX - (uint32_t)keys[k];
            if (items[i].triangle == RVI_OCC_NO_TRIANGLE) {
                occ->stats.skipped_cap++;
                occ->stats.occluders_skipped++;
                occ->stats.triangles_skipped += solid_triangles(occ, items[i].input);
            } else {
                occ->stats.triangles_skipped++;
                RVI_VEC_AT(occ->tallies, rvi_occ_tally, items[i].input).capped = 1;
            }
        }
        n = cap;
        index_order = false;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = index_order ? k : UINT32_MAX - (uint32_t)keys[k];
        float near = fp[i].on ? fp[i].nearness : FLT_MAX;
        keys[k] = ((uint64_t)float_order(near) << 32) | (uint32_t)(UINT32_MAX - i);
    }
    sort_keys(keys, tmp, n, index_order);
    return n;
}

/* ---- drawing -------------------------------------------------------------------------------- */

/* Draws the prepared piece in the draft and keeps it for fusion and the finer tests (a
 * frame with neither keeps nothing). */
static void draw_piece(rv_occlusion *occ)
{
    rvi_occ_draft *d = occ->draft;
    occ->stats.pieces++;
    uint32_t kept = !occ->fuse && !occ->desc.fine_tests ? 0 : rvi_occ_fusion_keep(occ, d);
    rvi_occ_rasterize(d, occ->texels, occ->fusion.owner, occ->desc.fine_tests ? kept : 0, occ->width, occ->height,
                      occ->tile_lo, occ->tiles_w, occ->row_scratch, occ->row_spans, occ->wide);
    if (occ->fuse)
        rvi_occ_fusion_add(occ, d, kept);
}

/* Projects, draws and keeps for fusion one item; the stats say what became of it. */
static void draw_item(rv_occlusion *occ, const rvi_occ_item *item)
{
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, item->input);
    const float *m = rvi_occ_input_matrix(occ, in);
    rvi_occ_draft *d = occ->draft;
    rvi_occ_prepare r;
    if (in->kind == RVI_OCC_MESH) {
        const rvi_occ_shape *shape = &RVI_VEC_AT(occ->shapes, rvi_occ_shape, in->shape);
        const rvi_occ_vertex *vert = RVI_VEC_PTR(occ->vertices, rvi_occ_vertex) + shape->vertex_base;
        r = rvi_occ_prepare_run(occ, in, vert, item->triangle, item->run, d);
        rvi_occ_tally *tally = &RVI_VEC_AT(occ->tallies, rvi_occ_tally, item->input);
        if (r != RVI_OCC_PREPARED) {
            bool degenerate = r == RVI_OCC_DEGENERATE;
            occ->stats.triangles_degenerate += degenerate ? item->run : 0;
            occ->stats.triangles_skipped += degenerate ? 0 : item->run;
            tally->degenerate |= degenerate;
            tally->offscreen |= r == RVI_OCC_OFFSCREEN;
            return;
        }
        occ->stats.triangles_rasterized += item->run;
        tally->drawn += item->run;
    } else {
        double planes[6][4], corners[8][3];
        rvi_occ_poly poly;
        bool exact = false;
        uint32_t triangles = 0;
        if (in->kind == RVI_OCC_BOX) {
            rvi_occ_box_poly(in->min, in->max, planes, corners, &poly);
            poly.segment_lines = false;
        } else {
            const rvi_occ_convex_data *c = rvi_occ_input_convex(occ, in);
            if (c->flags & RVI_OCC_INEXACT) {
                count_skip(&occ->stats, RVI_OCC_DEGENERATE);
                return;
            }
            poly.plane_count = c->plane_count;
            poly.vertex_count = c->vertex_count;
            poly.edge_count = c->edge_count;
            poly.planes = rvi_occ_convex_planes(c);
            poly.vertices = rvi_occ_convex_vertices(c);
            poly.edges = rvi_occ_convex_edges(c);
            poly.segment_lines = (c->flags & RVI_OCC_FROM_MESH) != 0;
            exact = (c->flags & RV_OCCLUDER_EXACT) != 0;
            triangles = c->triangle_count;
        }
        r = rvi_occ_prepare_poly(&occ->view, &poly, m, exact, occ->desc.min_occluder_texels, d);
        if (r != RVI_OCC_PREPARED) {
            count_skip(&occ->stats, r);
            occ->stats.triangles_skipped += triangles;
            return;
        }
        occ->stats.occluders_rasterized++;
        occ->stats.triangles_rasterized += triangles;
    }
    draw_piece(occ);
}

static void hidden_item(rv_occlusion *occ, const rvi_occ_item *item)
{
    if (item->triangle == RVI_OCC_NO_TRIANGLE) {
        occ->stats.occluders_hidden++;
        occ->stats.triangles_hidden += solid_triangles(occ, item->input);
        return;
    }
    uint32_t n = item->run;
    if (item->triangle == RVI_OCC_WHOLE_MESH) /* every triangle, whichever way it faces */
        n = rvi_occ_input_mesh(occ, &RVI_VEC_AT(occ->inputs, rvi_occ_input, item->input))->triangle_count;
    occ->stats.triangles_hidden += n;
    RVI_VEC_AT(occ->tallies, rvi_occ_tally, item->input).hidden += n;
}

/* ---- the order with meshes opened on the way --------------------------------------------- */

/* A max-heap of order keys (the larger the key, the sooner: nearest first). */
static void heap_push(uint64_t *heap, uint32_t *size, uint64_t key)
{
    uint32_t i = (*size)++;
    while (i > 0 && heap[(i - 1) / 2] < key) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = key;
}

static uint64_t heap_pop(uint64_t *heap, uint32_t *size)
{
    uint64_t top = heap[0], last = heap[--(*size)];
    uint32_t i = 0, n = *size;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap[c + 1] > heap[c])
            c++;
        if (heap[c] <= last)
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (n)
        heap[i] = last;
    return top;
}

static uint64_t order_key(const rvi_occ_footprint *f, uint32_t item)
{
    float near = f->on ? f->nearness : FLT_MAX;
    return ((uint64_t)float_order(near) << 32) | (uint32_t)(UINT32_MAX - item);
}

/* A small closed mesh that bounds a convex solid is drawn as that solid, in one piece, at
 * once (its nearness is the order's now); true when it was one (drawn or not). */
static bool mesh_solid(rv_occlusion *occ, uint32_t input)
{
    const rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, input);
    const rvi_occ_mesh_data *mesh = rvi_occ_input_mesh(occ, in);
    if (!occ->convex_scratch || !(mesh->flags & RV_OCCLUDER_CLOSED) || (mesh->flags & RVI_OCC_NOT_CONVEX) ||
        mesh->triangle_count > RV_OCCLUSION_MAX_PLANES)
        return false;
    rv_occluder_mesh view = { rvi_occ_mesh_positions(mesh), mesh->vertex_count, rvi_occ_mesh_indices(mesh),
                              3 * mesh->triangle_count, mesh->flags & (RV_OCCLUDER_CLOSED | RV_OCCLUDER_EXACT) };
    size_t size;
    if (!rvi_occ_mesh_convex(&view, mesh->triangle_count, occ->convex_scratch, &size))
        return false;
    rvi_occ_poly poly;
    rvi_occ_scratch_poly(occ->convex_scratch, &poly);
    rvi_occ_tally *tally = &RVI_VEC_AT(occ->tallies, rvi_occ_tally, input);
    rvi_occ_prepare r = rvi_occ_prepare_poly(&occ->view, &poly, rvi_occ_input_matrix(occ, in),
                                             (mesh->flags & RV_OCCLUDER_EXACT) != 0, occ->desc.min_occluder_texels,
                                             occ->draft);
    if (r != RVI_OCC_PREPARED) {
        occ->stats.triangles_skipped += mesh->triangle_count;
        tally->offscreen |= r == RVI_OCC_OFFSCREEN;
        tally->degenerate |= r == RVI_OCC_DEGENERATE;
        tally->near |= r == RVI_OCC_NEAR;
        return true;
    }
    occ->stats.triangles_rasterized += mesh->triangle_count;
    tally->drawn += mesh->triangle_count;
    draw_piece(occ);
    return true;
}

/* A whole-mesh item not found hidden: a convex solid drawn at once, a dense mesh drawn at
 * once by its outline (occlusion_outline.c), or its triangles (coplanar neighbours merged)
 * join the order through the heap, each at its own nearness. */
static void open_mesh(rv_occlusion *occ, const rvi_occ_item *whole, uint32_t *next, uint64_t *heap, uint32_t *size)
{
    if (mesh_solid(occ, whole->input))
        return;
    const rvi_occ_vertex *vert;
    if (!project_mesh(occ, whole->input, &vert))
        return;
    rvi_occ_item *items = RVI_VEC_PTR(occ->items, rvi_occ_item);
    rvi_occ_footprint *fp = RVI_VEC_PTR(occ->footprints, rvi_occ_footprint);
    uint32_t first = *next;
    if (rvi_occ_outline_draw(occ, whole->input, vert)) {
        /* What the outline left (triangles the near plane cuts) is drawn as pieces. */
        const int8_t *side = occ->outline.side;
        uint32_t nt = rvi_occ_input_mesh(occ, &RVI_VEC_AT(occ->inputs, rvi_occ_input, whole->input))->triangle_count;
        for (uint32_t t = 0; t < nt; t++)
            if (side[t] == RVI_OCC_OUTLINE_LEFT)
                mesh_item(occ, whole->input, vert, t, false, items, fp, next);
    } else {
        *next = projected_items(occ, whole->input, vert, true, items, fp, first);
    }
    for (uint32_t i = first; i < *next; i++)
        heap_push(heap, size, order_key(&fp[i], i));
}

/* A mesh counts as drawn when any triangle was, hidden when every triangle it would have
 * drawn was hidden, skipped otherwise (capped, off screen, or nothing to draw). */
static void count_meshes(rv_occlusion *occ)
{
    const rvi_occ_input *in = RVI_VEC_PTR(occ->inputs, rvi_occ_input);
    const rvi_occ_tally *tally = RVI_VEC_PTR(occ->tallies, rvi_occ_tally);
    for (uint32_t i = 0; i < occ->inputs.count; i++) {
        if (in[i].kind != RVI_OCC_MESH)
            continue;
        const rvi_occ_tally *t = &tally[i];
        if (t->drawn) {
            occ->stats.occluders_rasterized++;
        } else if (t->hidden) {
            occ->stats.occluders_hidden++;
        } else if (t->capped) {
            occ->stats.occluders_skipped++;
            occ->stats.skipped_cap++;
        } else {
            count_skip(&occ->stats, t->near        ? RVI_OCC_NEAR
                                    : t->offscreen ? RVI_OCC_OFFSCREEN
                                    : t->degenerate ? RVI_OCC_DEGENERATE
                                                    : RVI_OCC_SMALL);
        }
    }
}

/* Does this freeze fuse (rv_fusion)? RV_FUSION_AUTO pauses after RV_FUSION_IDLE_FRAMES
 * fused freezes that did not pay, and then probes the last RV_FUSION_PROBE_RUN freezes of
 * every RV_FUSION_PROBE_FRAMES; never with fine_tests, which read fusion's notes of what
 * partly covers each texel (texels raised do not measure what they hide with them). */
static bool fusion_this_frame(rv_occlusion *occ)
{
    if (occ->desc.fusion != RV_FUSION_AUTO)
        return occ->desc.fusion == RV_FUSION_ALWAYS;
    if (occ->desc.fine_tests || occ->fusion_idle < RV_FUSION_IDLE_FRAMES)
        return true;
    return ++occ->fusion_wait % RV_FUSION_PROBE_FRAMES >= RV_FUSION_PROBE_FRAMES - RV_FUSION_PROBE_RUN;
}

/* After a fused freeze of RV_FUSION_AUTO: did fusion pay (raise a texel for every
 * RV_FUSION_PAY_WIDTH of the width)? One that drew fewer than two pieces says nothing. */
static void judge_fusion(rv_occlusion *occ)
{
    if (occ->desc.fusion != RV_FUSION_AUTO || occ->desc.fine_tests || !occ->fuse || occ->stats.pieces < 2)
        return;
    if ((uint64_t)occ->stats.fused_texels * RV_FUSION_PAY_WIDTH < occ->width) {
        if (occ->fusion_idle < RV_FUSION_IDLE_FRAMES)
            occ->fusion_idle++;
    } else {
        occ->fusion_idle = occ->fusion_wait = 0;
    }
}

rv_result rv_occlusion_freeze(rv_occlusion *occ)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->held)
        return RV_ERR_BAD_STATE;
    if (occ->width == 0 || occ->state != RVI_OCC_OPEN)
        return RV_OK;
    clear_level0(occ);
    rvi_occ_tiles_clear(occ);
    occ->fuse = fusion_this_frame(occ);
    occ->stats.fusion_paused = !occ->fuse;
    /* Meshes open lazily unless the cap may apply (it ranks every triangle). */
    uint32_t cap = occ->desc.max_occluders;
    bool lazy = cap == 0 || occ->item_count <= cap;
    /* No occluder: nothing to order (the vectors may have no storage yet). */
    uint32_t n = occ->inputs.count ? order_items(occ, build_items(occ, lazy)) : 0;
    /* Without occluders keys may be NULL: no offset is taken from it then. */
    uint64_t *keys = RVI_VEC_PTR(occ->order, uint64_t), *heap = n ? keys + occ->item_count : keys;
    const rvi_occ_item *items = RVI_VEC_PTR(occ->items, rvi_occ_item);
    const rvi_occ_footprint *fp = RVI_VEC_PTR(occ->footprints, rvi_occ_footprint);
    uint32_t next = n, size = 0, round_end = ROUND;
    for (uint32_t k = 0; k < n || size;) {
        uint64_t key = size && (k == n || heap[0] > keys[k]) ? heap_pop(heap, &size) : keys[k++];
        uint32_t i = UINT32_MAX - (uint32_t)key;
        const rvi_occ_footprint *f = &fp[i];
        if (f->on == RVI_OCC_ON && rvi_occ_tiles_hidden(occ, f->x0, f->y0, f->x1, f->y1, f->nearness)) {
            hidden_item(occ, &items[i]);
            continue;
        }
        if (items[i].triangle == RVI_OCC_WHOLE_MESH)
            open_mesh(occ, &items[i], &next, heap, &size);
        else
            draw_item(occ, &items[i]);
        if (occ->stats.pieces >= round_end && occ->fuse) {
            rvi_occ_fusion_resolve(occ);
            round_end = occ->stats.pieces + ROUND;
        }
    }
    rvi_occ_fusion_finish(occ);
    count_meshes(occ);
    rvi_occ_feed_apply(occ); /* the depth feed joins by max before the pyramid */
    uint32_t covered = build_pyramid(occ);
    occ->stats.texels_covered = occ->feed_applied ? rvi_occ_feed_own_covered(occ) : covered;
    judge_fusion(occ);
    occ->state = RVI_OCC_FROZEN;
    return RV_OK;
}
