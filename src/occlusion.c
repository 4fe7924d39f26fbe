/* The occlusion buffer object (DESIGN.md §4): lifecycle, the frame (begin, add, freeze),
 * the max-depth pyramid, object tests, stats and debug images. The occluder side lives in
 * occlusion_raster.c.
 *
 * An object test projects the object's 8 corners with float rows prepared per frame
 * (relative to the eye, so float error scales with distance), bounds that error, takes the
 * screen rectangle and the nearest point, and asks the pyramid whether every touched texel
 * is strictly nearer (hierarchical Z, Greene, Kass & Miller 1993). */
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
    occ->height = height;
    occ->level_count = levels;
    memcpy(occ->level_w, level_w, sizeof(uint32_t) * levels);
    memcpy(occ->level_h, level_h, sizeof(uint32_t) * levels);
    memcpy(occ->level_offset, level_offset, sizeof(size_t) * levels);
    occ->view = view;
    occ->state = RVI_OCC_OPEN;
    return RV_OK;
}

static bool affine_matrix_ok(const float *m)
{
    return m[3] == 0 && m[7] == 0 && m[11] == 0 && m[15] == 1;
}

static rv_result check_box(const float min[3], const float max[3], const float *matrix)
{
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3) || (matrix && !rvi_finite_n(matrix, 16)))
        return RV_ERR_NOT_FINITE;
    if (min[0] > max[0] || min[1] > max[1] || min[2] > max[2] || (matrix && !affine_matrix_ok(matrix)))
        return RV_ERR_INVALID_ARG;
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
    RVI_TRY(check_box(min, max, matrix));
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

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
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
    const rvi_occluder *list = RVI_VEC_PTR(occ->occluders, rvi_occluder);
    uint32_t cap = occ->desc.max_occluders;
    if (cap && count > cap) {
        /* Largest on screen first, submission order among equals: key = area bits (a
         * non-negative float orders like its bits) above the inverted index. */
        uint64_t *keys = RVI_VEC_PTR(occ->order, uint64_t); /* capacity reserved by add */
        for (uint32_t i = 0; i < count; i++) {
            uint32_t bits;
            memcpy(&bits, &list[i].area, sizeof bits);
            keys[i] = ((uint64_t)bits << 32) | (uint32_t)(UINT32_MAX - i);
        }
        qsort(keys, count, sizeof(uint64_t), cmp_u64_desc);
        for (uint32_t i = 0; i < cap; i++)
            rvi_occ_rasterize(&list[UINT32_MAX - (uint32_t)keys[i]], occ->texels, occ->width, occ->height);
        occ->stats.skipped_cap = count - cap;
        occ->stats.occluders_skipped += count - cap;
        occ->stats.occluders_rasterized = cap;
    } else {
        for (uint32_t i = 0; i < count; i++)
            rvi_occ_rasterize(&list[i], occ->texels, occ->width, occ->height);
        occ->stats.occluders_rasterized = count;
    }
    uint32_t covered = 0;
    for (size_t i = 0; i < n0; i++)
        covered += occ->texels[i] > EMPTY_TEXEL;
    occ->stats.texels_covered = covered;
    build_pyramid(occ);
    occ->state = RVI_OCC_FROZEN;
    return RV_OK;
}

/* ---- object tests ---------------------------------------------------------------------- */

static inline uint32_t bit_length(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return x ? 32u - (uint32_t)__builtin_clz(x) : 0u;
#else
    uint32_t n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
#endif
}

/* True when every texel of [x0, x1] x [y0, y1] (level 0, inclusive) is strictly nearer
 * than v. Starts at the level where the rectangle spans at most 2 x 2 texels and descends
 * only into texels that fail there. */
static bool hz_hidden(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    uint32_t k = bit_length((uint32_t)(x1 - x0) | (uint32_t)(y1 - y0));
    if (k >= occ->level_count)
        k = occ->level_count - 1;
    const float *lv = occ->texels + occ->level_offset[k];
    uint32_t lw = occ->level_w[k];
    int32_t ax = x0 >> k, bx = x1 >> k, ay = y0 >> k, by = y1 >> k;
    struct { int32_t level, x, y; } stack[64];
    int sp = 0;
    for (int32_t y = ay; y <= by; y++)
        for (int32_t x = ax; x <= bx; x++)
            if (!(lv[(size_t)y * lw + (uint32_t)x] > v)) {
                if (k == 0)
                    return false;
                stack[sp].level = (int32_t)k;
                stack[sp].x = x;
                stack[sp].y = y;
                sp++;
            }
    while (sp > 0) {
        sp--;
        int32_t l = stack[sp].level - 1, px = stack[sp].x, py = stack[sp].y;
        const float *cl = occ->texels + occ->level_offset[l];
        uint32_t cw = occ->level_w[l];
        int32_t cx0 = 2 * px > (x0 >> l) ? 2 * px : (x0 >> l);
        int32_t cx1 = 2 * px + 1 < (x1 >> l) ? 2 * px + 1 : (x1 >> l);
        int32_t cy0 = 2 * py > (y0 >> l) ? 2 * py : (y0 >> l);
        int32_t cy1 = 2 * py + 1 < (y1 >> l) ? 2 * py + 1 : (y1 >> l);
        for (int32_t y = cy0; y <= cy1; y++)
            for (int32_t x = cx0; x <= cx1; x++)
                if (!(cl[(size_t)y * cw + (uint32_t)x] > v)) {
                    if (l == 0)
                        return false;
                    stack[sp].level = l;
                    stack[sp].x = x;
                    stack[sp].y = y;
                    sp++;
                }
    }
    return true;
}

static bool flat_hidden(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    for (int32_t y = y0; y <= y1; y++) {
        const float *row = occ->texels + (size_t)y * occ->width;
        for (int32_t x = x0; x <= x1; x++)
            if (!(row[x] > v))
                return false;
    }
    return true;
}

/* A projected object: touched texel rectangle and nearest nearness. */
typedef struct occ_footprint {
    int32_t x0, y0, x1, y1;
    float nearness;
} occ_footprint;

/* Projects a box given, per test row r (texel x, texel y, near, q), the value at the
 * base corner b[r] and the change along the three edges d0/d1/d2[r]; dist bounds the L1
 * distance of any corner (and of the terms that computed it) from the view's ref.
 * False when the object must be answered visible without a lookup: it crosses the near
 * plane, its projection is degenerate or not finite, or it is wholly off screen. */
static inline bool project_box(const rv_occlusion *occ, const float b[4], const float d0[4], const float d1[4],
                               const float d2[4], float dist, occ_footprint *fp)
{
    const rvi_occ_view *v = &occ->view;
    float c[4][8];
    for (int r = 0; r < 4; r++) {
        float lo0 = b[r], lo1 = b[r] + d0[r], lo2 = b[r] + d1[r], lo3 = lo1 + d1[r];
        c[r][0] = lo0;
        c[r][1] = lo1;
        c[r][2] = lo2;
        c[r][3] = lo3;
        c[r][4] = lo0 + d2[r];
        c[r][5] = lo1 + d2[r];
        c[r][6] = lo2 + d2[r];
        c[r][7] = lo3 + d2[r];
    }
    float nmin = c[2][0], qmin = c[3][0], qmax = c[3][0];
    for (int k = 1; k < 8; k++) {
        nmin = c[2][k] < nmin ? c[2][k] : nmin;
        qmin = c[3][k] < qmin ? c[3][k] : qmin;
        qmax = c[3][k] > qmax ? c[3][k] : qmax;
    }
    if (!(nmin > v->err_mul[2] * dist + v->err_add[2]))
        return false; /* crosses (or lies before) the near plane, or NaN */
    float xmin, xmax, ymin, ymax, margin;
    if (v->perspective) {
        float wc = qmin - (v->err_mul[3] * dist + v->err_add[3]);
        if (!(wc > 0))
            return false;
        fp->nearness = (1.0f / wc) * (1.0f + 4.0f / 16777216.0f);
        float inv = 1.0f / c[3][0];
        xmin = xmax = c[0][0] * inv;
        ymin = ymax = c[1][0] * inv;
        for (int k = 1; k < 8; k++) {
            inv = 1.0f / c[3][k];
            float x = c[0][k] * inv, y = c[1][k] * inv;
            xmin = x < xmin ? x : xmin;
            xmax = x > xmax ? x : xmax;
            ymin = y < ymin ? y : ymin;
            ymax = y > ymax ? y : ymax;
        }
        margin = (v->rect_mul * dist + v->rect_add) * fp->nearness + 1e-3f;
    } else {
        fp->nearness = qmax + (v->err_mul[3] * dist + v->err_add[3]);
        xmin = xmax = c[0][0];
        ymin = ymax = c[1][0];
        for (int k = 1; k < 8; k++) {
            xmin = c[0][k] < xmin ? c[0][k] : xmin;
            xmax = c[0][k] > xmax ? c[0][k] : xmax;
            ymin = c[1][k] < ymin ? c[1][k] : ymin;
            ymax = c[1][k] > ymax ? c[1][k] : ymax;
        }
        margin = v->rect_mul * dist + v->rect_add + 1e-3f;
    }
    float fw = (float)occ->width, fh = (float)occ->height;
    xmin -= margin;
    xmax += margin;
    ymin -= margin;
    ymax += margin;
    if (!(xmax >= 0 && xmin <= fw && ymax >= 0 && ymin <= fh && fp->nearness < FLT_MAX &&
          fp->nearness > -FLT_MAX))
        return false; /* off screen (the frustum's business), or NaN */
    fp->x0 = xmin > 0 ? (int32_t)xmin : 0;
    fp->y0 = ymin > 0 ? (int32_t)ymin : 0;
    fp->x1 = xmax < fw ? (int32_t)xmax : (int32_t)occ->width - 1;
    fp->y1 = ymax < fh ? (int32_t)ymax : (int32_t)occ->height - 1;
    if (fp->x0 > (int32_t)occ->width - 1)
        fp->x0 = (int32_t)occ->width - 1;
    if (fp->y0 > (int32_t)occ->height - 1)
        fp->y0 = (int32_t)occ->height - 1;
    return true;
}

/* A world-space axis-aligned box. */
static inline bool footprint_world_box(const rv_occlusion *occ, const float min[3], const float max[3],
                                       occ_footprint *fp)
{
    const rvi_occ_view *v = &occ->view;
    float bx = min[0] - v->ref[0], by = min[1] - v->ref[1], bz = min[2] - v->ref[2];
    float sx = max[0] - min[0], sy = max[1] - min[1], sz = max[2] - min[2];
    float dist = fabsf(bx) + fabsf(by) + fabsf(bz) + fabsf(sx) + fabsf(sy) + fabsf(sz);
    float b[4], d0[4], d1[4], d2[4];
    for (int r = 0; r < 4; r++) {
        const float *row = v->rows[r];
        b[r] = row[0] * bx + row[1] * by + row[2] * bz + row[3];
        d0[r] = row[0] * sx;
        d1[r] = row[1] * sy;
        d2[r] = row[2] * sz;
    }
    return project_box(occ, b, d0, d1, d2, dist, fp);
}

/* A local box under an affine matrix (column-major). */
static inline bool footprint_box(const rv_occlusion *occ, const float min[3], const float max[3], const float *m,
                                 occ_footprint *fp)
{
    if (!m)
        return footprint_world_box(occ, min, max, fp);
    const rvi_occ_view *v = &occ->view;
    float base[3], e[3][3], dist = 0;
    float s[3] = { max[0] - min[0], max[1] - min[1], max[2] - min[2] };
    for (int i = 0; i < 3; i++) {
        float t0 = m[i] * min[0], t1 = m[4 + i] * min[1], t2 = m[8 + i] * min[2], t3 = m[12 + i] - v->ref[i];
        base[i] = t0 + t1 + t2 + t3;
        dist += fabsf(t0) + fabsf(t1) + fabsf(t2) + fabsf(t3);
        for (int a = 0; a < 3; a++) {
            e[a][i] = m[a * 4 + i] * s[a];
            dist += fabsf(e[a][i]);
        }
    }
    float b[4], d0[4], d1[4], d2[4];
    for (int r = 0; r < 4; r++) {
        const float *row = v->rows[r];
        b[r] = row[0] * base[0] + row[1] * base[1] + row[2] * base[2] + row[3];
        d0[r] = row[0] * e[0][0] + row[1] * e[0][1] + row[2] * e[0][2];
        d1[r] = row[0] * e[1][0] + row[1] * e[1][1] + row[2] * e[1][2];
        d2[r] = row[0] * e[2][0] + row[1] * e[2][1] + row[2] * e[2][2];
    }
    return project_box(occ, b, d0, d1, d2, dist, fp);
}

/* A sphere through its world-space bounding box. */
static inline bool footprint_sphere(const rv_occlusion *occ, const float center[3], float radius, const float *m,
                                    occ_footprint *fp)
{
    float c[3], mag = 0, r = radius;
    if (m) {
        for (int i = 0; i < 3; i++) {
            float t0 = m[i] * center[0], t1 = m[4 + i] * center[1], t2 = m[8 + i] * center[2];
            c[i] = t0 + t1 + t2 + m[12 + i];
            mag += fabsf(t0) + fabsf(t1) + fabsf(t2);
        }
        float s2 = 0;
        for (int a = 0; a < 3; a++) {
            float l2 = m[a * 4] * m[a * 4] + m[a * 4 + 1] * m[a * 4 + 1] + m[a * 4 + 2] * m[a * 4 + 2];
            s2 = l2 > s2 ? l2 : s2;
        }
        r = radius * sqrtf(s2) * (1.0f + 1e-6f);
        /* The centre's own rounding, charged to the radius. */
        r += mag * (8.0f / 16777216.0f);
    } else {
        c[0] = center[0];
        c[1] = center[1];
        c[2] = center[2];
    }
    float mn[3] = { c[0] - r, c[1] - r, c[2] - r }, mx[3] = { c[0] + r, c[1] + r, c[2] + r };
    /* Outward rounding of the box corners themselves. */
    for (int i = 0; i < 3; i++) {
        mn[i] -= fabsf(mn[i]) * (2.0f / 16777216.0f);
        mx[i] += fabsf(mx[i]) * (2.0f / 16777216.0f);
    }
    return footprint_world_box(occ, mn, mx, fp);
}

static inline bool ready_for_tests(rv_occlusion *occ)
{
    if (occ->width == 0 || occ->state == RVI_OCC_NO_VIEW)
        return false;
    if (occ->state == RVI_OCC_OPEN)
        rv_occlusion_freeze(occ);
    return true;
}

bool rvi_occlusion_box_visible(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix)
{
    if (!ready_for_tests(occ))
        return true;
    occ->stats.tests++;
    occ_footprint fp;
    if (!footprint_box(occ, min, max, matrix, &fp) || !hz_hidden(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness))
        return true;
    occ->stats.culled++;
    return false;
}

bool rvi_occlusion_sphere_visible(rv_occlusion *occ, const float center[3], float radius, const float *matrix)
{
    if (!ready_for_tests(occ))
        return true;
    occ->stats.tests++;
    occ_footprint fp;
    if (!(radius >= 0) || !footprint_sphere(occ, center, radius, matrix, &fp) ||
        !hz_hidden(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness))
        return true;
    occ->stats.culled++;
    return false;
}

bool rvi_occlusion_box_visible_flat(rv_occlusion *occ, const float min[3], const float max[3])
{
    if (!ready_for_tests(occ))
        return true;
    occ_footprint fp;
    return !footprint_world_box(occ, min, max, &fp) || !flat_hidden(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness);
}

rv_result rv_occlusion_test_box(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16],
                                bool *out_visible)
{
    if (!out_visible)
        return RV_ERR_INVALID_ARG;
    *out_visible = true;
    if (!occ || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    RVI_TRY(check_box(min, max, matrix));
    *out_visible = rvi_occlusion_box_visible(occ, min, max, matrix);
    return RV_OK;
}

rv_result rv_occlusion_test_sphere(rv_occlusion *occ, const float center[3], float radius, const float matrix[16],
                                   bool *out_visible)
{
    if (!out_visible)
        return RV_ERR_INVALID_ARG;
    *out_visible = true;
    if (!occ || !center)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    if (!rvi_finite_n(center, 3) || !isfinite(radius) || (matrix && !rvi_finite_n(matrix, 16)))
        return RV_ERR_NOT_FINITE;
    if (radius < 0 || (matrix && !affine_matrix_ok(matrix)))
        return RV_ERR_INVALID_ARG;
    *out_visible = rvi_occlusion_sphere_visible(occ, center, radius, matrix);
    return RV_OK;
}

/* Item checks of the batch tests: 0 when valid, else the item's error code. */
static inline rv_result item_error(const float *v, int n, const float *lo, const float *hi, const float *m)
{
    bool finite = true, ordered = true;
    for (int i = 0; i < n; i++)
        finite &= fabsf(v[i]) <= FLT_MAX;
    for (int i = 0; i < 3 && lo; i++)
        ordered &= lo[i] <= hi[i];
    if (m) {
        for (int i = 0; i < 16; i++)
            finite &= fabsf(m[i]) <= FLT_MAX;
        ordered &= affine_matrix_ok(m);
    }
    if (!finite)
        return RV_ERR_NOT_FINITE;
    return ordered ? RV_OK : RV_ERR_INVALID_ARG;
}

static rv_result batch_prologue(rv_occlusion *occ, uint32_t first, uint32_t count, uint8_t *out, bool *active)
{
    if (!occ || !out || count > UINT32_MAX - first)
        return RV_ERR_INVALID_ARG;
    *active = ready_for_tests(occ);
    if (!*active)
        memset(out + first, 1, count);
    return RV_OK;
}

rv_result rv_occlusion_test_boxes(rv_occlusion *occ, const rv_occlusion_boxes *boxes, uint32_t first, uint32_t count,
                                  uint8_t *out_visible)
{
    if (!boxes || !boxes->min[0] || !boxes->min[1] || !boxes->min[2] || !boxes->max[0] || !boxes->max[1] ||
        !boxes->max[2])
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    rv_result first_error = RV_OK;
    uint64_t culled = 0;
    const float *const *mn = boxes->min, *const *mx = boxes->max;
    for (uint32_t i = first; i < first + count; i++) {
        float lo[3] = { mn[0][i], mn[1][i], mn[2][i] }, hi[3] = { mx[0][i], mx[1][i], mx[2][i] };
        const float *m = boxes->matrices ? boxes->matrices + (size_t)16 * i : NULL;
        float both[6] = { lo[0], lo[1], lo[2], hi[0], hi[1], hi[2] };
        rv_result e = item_error(both, 6, lo, hi, m);
        occ_footprint fp;
        bool hidden = e == RV_OK && footprint_box(occ, lo, hi, m, &fp) &&
                      hz_hidden(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness);
        out_visible[i] = !hidden;
        culled += hidden;
        if (e != RV_OK && first_error == RV_OK)
            first_error = e;
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return first_error;
}

rv_result rv_occlusion_test_spheres(rv_occlusion *occ, const rv_occlusion_spheres *spheres, uint32_t first,
                                    uint32_t count, uint8_t *out_visible)
{
    if (!spheres || !spheres->center[0] || !spheres->center[1] || !spheres->center[2] || !spheres->radius)
        return RV_ERR_INVALID_ARG;
    bool active;
    RVI_TRY(batch_prologue(occ, first, count, out_visible, &active));
    if (!active)
        return RV_OK;
    rv_result first_error = RV_OK;
    uint64_t culled = 0;
    for (uint32_t i = first; i < first + count; i++) {
        float v[4] = { spheres->center[0][i], spheres->center[1][i], spheres->center[2][i], spheres->radius[i] };
        const float *m = spheres->matrices ? spheres->matrices + (size_t)16 * i : NULL;
        rv_result e = item_error(v, 4, NULL, NULL, m);
        if (e == RV_OK && !(v[3] >= 0))
            e = RV_ERR_INVALID_ARG;
        occ_footprint fp;
        bool hidden = e == RV_OK && footprint_sphere(occ, v, v[3], m, &fp) &&
                      hz_hidden(occ, fp.x0, fp.y0, fp.x1, fp.y1, fp.nearness);
        out_visible[i] = !hidden;
        culled += hidden;
        if (e != RV_OK && first_error == RV_OK)
            first_error = e;
    }
    occ->stats.tests += count;
    occ->stats.culled += culled;
    return first_error;
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
