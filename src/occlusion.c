/* The occlusion buffer object (docs/design.md §4): lifecycle, the frame (begin, add, freeze),
 * the max-depth pyramid, stats and debug images. The occluder side lives in
 * occlusion_raster.c, the object tests in occlusion_test.c. */
#include "occlusion.h"
#include "core/check.h"
#include "world.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY_TEXEL (-FLT_MAX)

/* ---- lifecycle ------------------------------------------------------------------------- */

static rv_result resolve_desc(const rv_occlusion_desc *in, rv_occlusion_desc *out)
{
    rv_occlusion_desc d = in ? *in : (rv_occlusion_desc){0};
    if (d.width > RV_OCCLUSION_MAX_SIZE)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(d.min_occluder_texels))
        return RV_ERR_NOT_FINITE;
    if (d.min_occluder_texels == 0)
        d.min_occluder_texels = 2;
    else if (d.min_occluder_texels < 0)
        d.min_occluder_texels = 0;
    RVI_TRY(rvi_occ_feed_resolve_desc(&d));
    *out = d;
    return RV_OK;
}

rv_result rvi_occlusion_check_desc(const rv_occlusion_desc *desc)
{
    rv_occlusion_desc resolved;
    return resolve_desc(desc, &resolved);
}

static rv_result create_with(rvi_heap *borrowed, const rv_occlusion_desc *desc, rv_occlusion **out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_occlusion_desc resolved;
    RVI_TRY(resolve_desc(desc, &resolved));
    rvi_heap local;
    rvi_heap *heap = borrowed;
    if (!heap) {
        rvi_heap_init(&local, &resolved.allocator);
        heap = &local;
    }
    rv_occlusion *occ = rvi_alloc(heap, sizeof *occ);
    if (!occ)
        return RV_ERR_OUT_OF_MEMORY;
    memset(occ, 0, sizeof *occ);
    if (borrowed) {
        occ->heap = borrowed;
    } else {
        occ->own_heap = local;
        occ->heap = &occ->own_heap;
    }
    occ->desc = resolved;
    occ->width = resolved.width;
    occ->wide = rvi_occ_cpu_wide();
    rv_result fed = rvi_occ_feed_create(occ);
    if (fed != RV_OK) {
        rvi_free(borrowed ? borrowed : &local, occ, sizeof *occ); /* not through the heap inside occ */
        return fed;
    }
    *out = occ;
    return RV_OK;
}

rv_result rv_occlusion_create(const rv_occlusion_desc *desc, rv_occlusion **out)
{
    return create_with(NULL, desc, out);
}

rv_result rvi_occlusion_create_in(rvi_heap *heap, const rv_occlusion_desc *desc, rv_occlusion **out)
{
    if (!heap)
        return RV_ERR_INVALID_ARG;
    return create_with(heap, desc, out);
}

static void destroy_world_buffer(rv_world *world, void *state)
{
    (void)world;
    rv_occlusion_destroy(state);
}

rv_result rvi_occlusion_of_world(rv_world *world, rv_occlusion **out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rv_occlusion *occ = rvi_world_module(world, RVI_MODULE_OCCLUSION);
    if (!occ) {
        RVI_TRY(rvi_occlusion_create_in(&world->heap, &world->desc.occlusion, &occ));
        rvi_module_hooks hooks = { occ, destroy_world_buffer, NULL };
        rv_result r = rvi_world_register_module(world, RVI_MODULE_OCCLUSION, &hooks);
        if (r != RV_OK) {
            rv_occlusion_destroy(occ);
            return r;
        }
    }
    *out = occ;
    return RV_OK;
}

void rv_occlusion_destroy(rv_occlusion *occ)
{
    if (!occ)
        return;
    rvi_heap *heap = occ->heap;
    rvi_heap own = occ->own_heap;
    bool owned = heap == &occ->own_heap;
    if (owned)
        heap = &own; /* the struct is about to go */
    occ->heap = heap;
    rvi_occ_feed_destroy(occ);
    rvi_free(heap, occ->texels, occ->texel_capacity * sizeof(float));
    rvi_free(heap, occ->row_scratch, occ->row_capacity * sizeof(double));
    rvi_free(heap, occ->row_spans, occ->span_capacity * sizeof(int32_t));
    rvi_vec_free(heap, &occ->inputs, sizeof(rvi_occ_input));
    rvi_vec_free(heap, &occ->matrices, 16 * sizeof(float));
    rvi_vec_free(heap, &occ->footprints, sizeof(rvi_occ_footprint));
    rvi_vec_free(heap, &occ->order, sizeof(uint64_t));
    rvi_free(heap, occ, sizeof *occ);
}

rv_alloc_stats rv_occlusion_alloc_stats(const rv_occlusion *occ)
{
    rv_alloc_stats none = {0};
    return occ ? occ->heap->stats : none;
}

rv_occlusion_stats rv_occlusion_get_stats(const rv_occlusion *occ)
{
    rv_occlusion_stats none = {0};
    return occ ? occ->stats : none;
}

uint32_t rv_occlusion_level_count(const rv_occlusion *occ)
{
    return rvi_occlusion_active(occ) ? occ->level_count : 0;
}

/* ---- the frame ------------------------------------------------------------------------- */

rv_result rv_occlusion_begin(rv_occlusion *occ, const float view_projection[16], rv_clip clip, float aspect)
{
    if (!occ || !view_projection)
        return RV_ERR_INVALID_ARG;
    double vp[16];
    for (int i = 0; i < 16; i++)
        vp[i] = view_projection[i];
    return rvi_occlusion_begin_d(occ, vp, clip, aspect);
}

rv_result rvi_occlusion_begin_d(rv_occlusion *occ, const double view_projection[16], rv_clip clip, float aspect)
{
    if (occ->width == 0)
        return RV_OK;
    /* Drop the previous frame first: whatever fails below, a stale view never culls. */
    occ->state = RVI_OCC_NO_VIEW;
    occ->inputs.count = 0;
    occ->matrices.count = 0;
    memset(&occ->stats, 0, sizeof occ->stats);
    rvi_occ_feed_begin(occ);
    bool finite = isfinite(aspect);
    for (int i = 0; i < 16; i++)
        finite &= isfinite(view_projection[i]) != 0;
    if (!finite)
        return RV_ERR_NOT_FINITE;
    if (!(aspect > 0))
        return RV_ERR_INVALID_ARG;
    double h = floor((double)occ->width / aspect + 0.5);
    if (!(h >= 1 && h <= RV_OCCLUSION_MAX_SIZE))
        return RV_ERR_INVALID_ARG;
    uint32_t height = (uint32_t)h;

    uint32_t levels = 0, lw = occ->width, lh = height;
    uint32_t level_w[RV_OCCLUSION_MAX_LEVELS], level_h[RV_OCCLUSION_MAX_LEVELS];
    size_t level_offset[RV_OCCLUSION_MAX_LEVELS], total = 0;
    for (;;) {
        level_w[levels] = lw;
        level_h[levels] = lh;
        level_offset[levels] = total;
        total += (size_t)lw * lh;
        levels++;
        if (lw == 1 && lh == 1)
            break;
        lw = (lw + 1) / 2;
        lh = (lh + 1) / 2;
    }

    rvi_occ_view view;
    if (!rvi_occ_view_init(&view, view_projection, clip, occ->width, height))
        return RV_ERR_INVALID_ARG;
    if (total > occ->texel_capacity) {
        float *t = rvi_realloc(occ->heap, occ->texels, occ->texel_capacity * sizeof(float), total * sizeof(float));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->texels = t;
        occ->texel_capacity = total;
    }
    if (2 * (size_t)height > occ->row_capacity) {
        size_t rows = 2 * (size_t)height;
        double *t = rvi_realloc(occ->heap, occ->row_scratch, occ->row_capacity * sizeof(double), rows * sizeof(double));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->row_scratch = t;
        occ->row_capacity = rows;
    }
    if (2 * (size_t)height > occ->span_capacity) {
        size_t rows = 2 * (size_t)height;
        int32_t *t = rvi_realloc(occ->heap, occ->row_spans, occ->span_capacity * sizeof(int32_t), rows * sizeof(int32_t));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->row_spans = t;
        occ->span_capacity = rows;
    }
    occ->height = height;
    occ->level_count = levels;
    memcpy(occ->level_w, level_w, sizeof(uint32_t) * levels);
    memcpy(occ->level_h, level_h, sizeof(uint32_t) * levels);
    memcpy(occ->level_offset, level_offset, sizeof(size_t) * levels);
    occ->view = view;
    occ->state = RVI_OCC_OPEN;
    return RV_OK;
}

rv_result rv_occlusion_add_occluder(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16])
{
    if (!occ || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (occ->state == RVI_OCC_FROZEN)
        return RV_ERR_FROZEN;
    RVI_TRY(rvi_occ_check_box(min, max, matrix));
    uint32_t n = occ->inputs.count + 1;
    if (n == 0 || (matrix && occ->matrices.count >= INT32_MAX))
        return RV_ERR_CAPACITY;
    /* Everything the freeze needs is reserved here, so that the freeze never allocates. */
    if (n > occ->inputs.capacity || n > occ->footprints.capacity || n > occ->order.capacity) {
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->inputs, sizeof(rvi_occ_input), n));
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->footprints, sizeof(rvi_occ_footprint), n));
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->order, sizeof(uint64_t), n));
    }
    if (matrix)
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->matrices, 16 * sizeof(float), occ->matrices.count + 1));
    rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, occ->inputs.count++);
    memcpy(in->min, min, sizeof in->min);
    memcpy(in->max, max, sizeof in->max);
    in->matrix = -1;
    if (matrix) {
        in->matrix = (int32_t)occ->matrices.count;
        memcpy((float *)occ->matrices.data + (size_t)16 * occ->matrices.count++, matrix, 16 * sizeof(float));
    }
    occ->stats.occluders_submitted++;
    return RV_OK;
}

rv_result rvi_occlusion_reserve(rv_occlusion *occ, uint32_t occluders, uint32_t with_matrix)
{
    if (occ->width == 0)
        return RV_OK;
    uint64_t n = (uint64_t)occ->inputs.count + occluders, m = (uint64_t)occ->matrices.count + with_matrix;
    if (n > UINT32_MAX || m > INT32_MAX)
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->inputs, sizeof(rvi_occ_input), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->footprints, sizeof(rvi_occ_footprint), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->order, sizeof(uint64_t), (uint32_t)n));
    return rvi_vec_reserve(occ->heap, &occ->matrices, 16 * sizeof(float), (uint32_t)m);
}

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

static RVI_ALWAYS_INLINE void pyramid_levels(rv_occlusion *occ)
{
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
        }
    }
}

static void build_pyramid_generic(rv_occlusion *occ)
{
    pyramid_levels(occ);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static void build_pyramid_avx2(rv_occlusion *occ)
{
    pyramid_levels(occ);
}
#endif

static void build_pyramid(rv_occlusion *occ)
{
#if RVI_OCC_X86_WIDE
    if (occ->wide) {
        build_pyramid_avx2(occ);
        return;
    }
#endif
    build_pyramid_generic(occ);
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

static RVI_ALWAYS_INLINE uint32_t count_covered(const float *texels, size_t n)
{
    uint32_t covered = 0;
    for (size_t i = 0; i < n; i++)
        covered += texels[i] > EMPTY_TEXEL;
    return covered;
}

static uint32_t count_generic(const float *texels, size_t n)
{
    return count_covered(texels, n);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static uint32_t count_avx2(const float *texels, size_t n)
{
    return count_covered(texels, n);
}
#endif

static uint32_t texels_covered(const rv_occlusion *occ)
{
    size_t n0 = (size_t)occ->width * occ->height;
#if RVI_OCC_X86_WIDE
    if (occ->wide)
        return count_avx2(occ->texels, n0);
#endif
    return count_generic(occ->texels, n0);
}

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
    else
        st->skipped_small++;
}

/* Draws one occluder in double precision (projection, silhouette, back faces, spans). */
static void draw_occluder(rv_occlusion *occ, const rvi_occ_input *in)
{
    rvi_occluder o;
    const float *m = in->matrix >= 0 ? (const float *)occ->matrices.data + (size_t)16 * (uint32_t)in->matrix : NULL;
    rvi_occ_prepare r = rvi_occ_prepare_box(&occ->view, in->min, in->max, m, occ->desc.min_occluder_texels, &o);
    if (r == RVI_OCC_PREPARED && !rvi_occ_finish(&occ->view, &o))
        r = RVI_OCC_SMALL;
    if (r != RVI_OCC_PREPARED) {
        count_skip(&occ->stats, r);
        return;
    }
    rvi_occ_rasterize(&o, occ->texels, occ->width, occ->row_scratch, occ->row_spans, occ->wide);
    occ->stats.occluders_rasterized++;
}

rv_result rv_occlusion_freeze(rv_occlusion *occ)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0 || occ->state != RVI_OCC_OPEN)
        return RV_OK;
    clear_level0(occ);
    uint32_t count = occ->inputs.count;
    const rvi_occ_input *in = RVI_VEC_PTR(occ->inputs, rvi_occ_input);
    rvi_occ_footprint *fp = RVI_VEC_PTR(occ->footprints, rvi_occ_footprint);
    uint64_t *keys = RVI_VEC_PTR(occ->order, uint64_t); /* capacities reserved by add */
    /* Every occluder through the float object test first (8 at a time): its screen
     * rectangle and nearest point are the sort keys and the hidden test below. */
    rvi_occ_footprints(occ, in, count, occ->matrices.data, fp);
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (fp[i].on == RVI_OCC_AWAY) {
            count_skip(&occ->stats, RVI_OCC_OFFSCREEN);
            continue;
        }
        /* Near-plane crossers (on == 0) are the nearest of all and are always drawn. */
        float area = fp[i].on ? (float)(fp[i].x1 - fp[i].x0 + 1) * (float)(fp[i].y1 - fp[i].y0 + 1) : FLT_MAX;
        keys[n++] = ((uint64_t)float_order(area) << 32) | (uint32_t)(UINT32_MAX - i);
    }
    uint32_t cap = occ->desc.max_occluders;
    if (cap && n > cap) {
        /* Largest on screen first, submission order among equals. */
        sort_desc(keys, n);
        occ->stats.skipped_cap = n - cap;
        occ->stats.occluders_skipped += n - cap;
        n = cap;
    }
    /* Nearest first, so that occluders wholly behind nearer ones are recognised and
     * skipped: they could not change the buffer (a texel keeps the larger nearness). */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = UINT32_MAX - (uint32_t)keys[k];
        float near = fp[i].on ? fp[i].nearness : FLT_MAX;
        keys[k] = ((uint64_t)float_order(near) << 32) | (uint32_t)(UINT32_MAX - i);
    }
    sort_desc(keys, n);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = UINT32_MAX - (uint32_t)keys[k];
        const rvi_occ_footprint *f = &fp[i];
        if (f->on == RVI_OCC_ON && rvi_occ_flat_hidden(occ, f->x0, f->y0, f->x1, f->y1, f->nearness))
            occ->stats.occluders_hidden++;
        else
            draw_occluder(occ, &in[i]);
    }
    occ->stats.texels_covered = texels_covered(occ);
    rvi_occ_feed_apply(occ); /* the depth feed, combined by max before the pyramid */
    build_pyramid(occ);
    occ->state = RVI_OCC_FROZEN;
    return RV_OK;
}

/* ---- debug ----------------------------------------------------------------------------- */

/* The debug images' grey scale: the nearest and farthest covered depth of level 0 (clip w
 * for a perspective view, NDC z for an orthographic one). False when nothing is covered. */
static bool debug_depth_range(const rv_occlusion *occ, double *nearest, double *farthest)
{
    bool persp = occ->view.perspective;
    double dmin = INFINITY, dmax = -INFINITY;
    size_t n0 = (size_t)occ->width * occ->height;
    for (size_t i = 0; i < n0; i++) {
        float t = occ->texels[i];
        if (t > EMPTY_TEXEL) {
            double d = persp ? 1.0 / t : -(double)t;
            dmin = fmin(dmin, d);
            dmax = fmax(dmax, d);
        }
    }
    *nearest = dmin;
    *farthest = dmax;
    return dmin <= dmax;
}

rv_result rv_occlusion_debug_depth_range(rv_occlusion *occ, float *out_near, float *out_far)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    double nearest = 0, farthest = 0;
    if (occ->width != 0) {
        if (occ->state == RVI_OCC_NO_VIEW)
            return RV_ERR_BAD_STATE;
        rv_occlusion_freeze(occ);
        if (!debug_depth_range(occ, &nearest, &farthest))
            nearest = farthest = 0;
    }
    if (out_near)
        *out_near = (float)nearest;
    if (out_far)
        *out_far = (float)farthest;
    return RV_OK;
}

rv_result rv_occlusion_debug_image(rv_occlusion *occ, uint32_t level, uint8_t *pixels, size_t pixels_size,
                                   uint32_t *out_width, uint32_t *out_height)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0) {
        if (out_width)
            *out_width = 0;
        if (out_height)
            *out_height = 0;
        return RV_OK;
    }
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (level >= occ->level_count)
        return RV_ERR_INVALID_ARG;
    uint32_t w = occ->level_w[level], h = occ->level_h[level];
    if (pixels && pixels_size < (size_t)w * h)
        return RV_ERR_INVALID_ARG;
    if (out_width)
        *out_width = w;
    if (out_height)
        *out_height = h;
    if (!pixels)
        return RV_OK;
    rv_occlusion_freeze(occ);
    /* Scale: linear view depth over the covered texels of level 0 (w, or NDC depth). */
    bool persp = occ->view.perspective;
    double dmin, dmax;
    debug_depth_range(occ, &dmin, &dmax);
    const float *src = occ->texels + occ->level_offset[level];
    for (size_t i = 0; i < (size_t)w * h; i++) {
        float t = src[i];
        if (!(t > EMPTY_TEXEL)) {
            pixels[i] = 0;
            continue;
        }
        double d = persp ? 1.0 / t : -(double)t;
        double u = dmax > dmin ? (dmax - d) / (dmax - dmin) : 1.0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        pixels[i] = (uint8_t)(32.0 + 223.0 * u + 0.5);
    }
    return RV_OK;
}
