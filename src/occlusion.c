/* The occlusion buffer object (DESIGN.md §4): lifecycle, the frame (begin, add, freeze),
 * the max-depth pyramid, stats and debug images. The occluder side lives in
 * occlusion_raster.c, the object tests in occlusion_test.c. */
#include "occlusion.h"
#include "core/check.h"

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
    *out = d;
    return RV_OK;
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

void rv_occlusion_destroy(rv_occlusion *occ)
{
    if (!occ)
        return;
    rvi_heap *heap = occ->heap;
    rvi_heap own = occ->own_heap;
    bool owned = heap == &occ->own_heap;
    if (owned)
        heap = &own; /* the struct is about to go */
    rvi_free(heap, occ->texels, occ->texel_capacity * sizeof(float));
    rvi_free(heap, occ->row_scratch, occ->row_capacity * sizeof(double));
    rvi_vec_free(heap, &occ->occluders, sizeof(rvi_occluder));
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
    if (occ->width == 0)
        return RV_OK;
    /* Drop the previous frame first: whatever fails below, a stale view never culls. */
    occ->state = RVI_OCC_NO_VIEW;
    occ->occluders.count = 0;
    memset(&occ->stats, 0, sizeof occ->stats);
    if (!rvi_finite_n(view_projection, 16) || !isfinite(aspect))
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
    if (occ->stats.occluders_submitted == UINT32_MAX)
        return RV_ERR_CAPACITY;

    rvi_occluder prepared;
    rvi_occ_prepare r = rvi_occ_prepare_box(&occ->view, min, max, matrix, occ->desc.min_occluder_texels, &prepared);
    if (r == RVI_OCC_PREPARED) {
        uint32_t n = occ->occluders.count + 1;
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->occluders, sizeof(rvi_occluder), n));
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->order, sizeof(uint64_t), n));
        prepared.order = occ->occluders.count;
        RVI_VEC_AT(occ->occluders, rvi_occluder, occ->occluders.count++) = prepared;
    }
    occ->stats.occluders_submitted++;
    switch (r) {
    case RVI_OCC_PREPARED: break;
    case RVI_OCC_SMALL: occ->stats.skipped_small++; break;
    case RVI_OCC_OFFSCREEN: occ->stats.skipped_offscreen++; break;
    case RVI_OCC_DEGENERATE: occ->stats.skipped_degenerate++; break;
    }
    if (r != RVI_OCC_PREPARED)
        occ->stats.occluders_skipped++;
    return RV_OK;
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

/* True when every texel the occluder's screen bounds touch already holds something
 * strictly nearer than its nearest point: drawing it would change nothing. */
static bool occluder_hidden(const rv_occlusion *occ, const rvi_occluder *o)
{
    const float m = 1.0f / 1024; /* bounds are already rounded outward */
    float x0 = o->bounds[0] - m, y0 = o->bounds[1] - m, x1 = o->bounds[2] + m, y1 = o->bounds[3] + m;
    float fw = (float)occ->width, fh = (float)occ->height;
    int32_t ix0 = x0 > 0 ? (int32_t)x0 : 0, iy0 = y0 > 0 ? (int32_t)y0 : 0;
    int32_t ix1 = x1 < fw ? (int32_t)x1 : (int32_t)occ->width - 1;
    int32_t iy1 = y1 < fh ? (int32_t)y1 : (int32_t)occ->height - 1;
    if (ix0 > ix1 || iy0 > iy1)
        return false;
    return rvi_occ_flat_hidden(occ, ix0, iy0, ix1, iy1, o->near_nearness);
}

static void build_pyramid(rv_occlusion *occ)
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

rv_result rv_occlusion_freeze(rv_occlusion *occ)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0 || occ->state != RVI_OCC_OPEN)
        return RV_OK;
    size_t n0 = (size_t)occ->width * occ->height;
    for (size_t i = 0; i < n0; i++)
        occ->texels[i] = EMPTY_TEXEL;
    uint32_t count = occ->occluders.count;
    rvi_occluder *list = RVI_VEC_PTR(occ->occluders, rvi_occluder);
    uint64_t *keys = RVI_VEC_PTR(occ->order, uint64_t); /* capacity reserved by add */
    uint32_t selected = count, cap = occ->desc.max_occluders;
    if (cap && count > cap) {
        /* Largest on screen first, submission order among equals. */
        for (uint32_t i = 0; i < count; i++)
            keys[i] = ((uint64_t)float_order(list[i].area) << 32) | (uint32_t)(UINT32_MAX - i);
        sort_desc(keys, count);
        for (uint32_t i = 0; i < cap; i++)
            keys[i] = UINT32_MAX - (uint32_t)keys[i];
        selected = cap;
        occ->stats.skipped_cap = count - cap;
        occ->stats.occluders_skipped += count - cap;
    } else {
        for (uint32_t i = 0; i < count; i++)
            keys[i] = i;
    }
    /* Nearest first, so that occluders wholly behind nearer ones are recognised and
     * skipped: they could not change the buffer (it keeps the larger nearness). */
    for (uint32_t i = 0; i < selected; i++) {
        uint32_t idx = (uint32_t)keys[i];
        keys[i] = ((uint64_t)float_order(list[idx].near_nearness) << 32) | (uint32_t)(UINT32_MAX - idx);
    }
    sort_desc(keys, selected);
    for (uint32_t i = 0; i < selected; i++) {
        rvi_occluder *o = &list[UINT32_MAX - (uint32_t)keys[i]];
        if (occluder_hidden(occ, o)) {
            occ->stats.occluders_hidden++;
        } else if (rvi_occ_finish(&occ->view, o)) {
            rvi_occ_rasterize(o, occ->texels, occ->width, occ->row_scratch);
            occ->stats.occluders_rasterized++;
        } else {
            occ->stats.skipped_small++;
            occ->stats.occluders_skipped++;
        }
    }
    uint32_t covered = 0;
    for (size_t i = 0; i < n0; i++)
        covered += occ->texels[i] > EMPTY_TEXEL;
    occ->stats.texels_covered = covered;
    build_pyramid(occ);
    occ->state = RVI_OCC_FROZEN;
    return RV_OK;
}

/* ---- debug ----------------------------------------------------------------------------- */

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
