/* The freeze's tile bounds (docs/design.md §4): per tile of 8 x 8 level-0 texels, a lower
 * bound on the nearness its texels hold. During a freeze texels only rise (the inner raster
 * and fusion write the max; nothing lowers a texel between the clear and the pyramid), so a
 * bound once true stays true however stale it gets. The inner raster raises to its piece's
 * floor the bound of each tile it covers whole (occlusion_raster.c); the freeze's "is this
 * item already hidden" test reads the bounds of the tiles under the item and scans a tile's
 * texels only where its bound alone cannot answer, making the bound the tile's exact
 * minimum as it scans. The answer is always the per-texel one (rvi_occ_flat_hidden's).
 * (Masked Occlusion Culling keeps a per-tile farthest depth to the same end: Hasselgren,
 * Andersson & Akenine-Möller 2016.) */
#include "occlusion.h"

#include <float.h>
#if RVI_OCC_X86_WIDE
#include <immintrin.h>
#endif

void rvi_occ_tiles_clear(rv_occlusion *occ)
{
    size_t n = (size_t)occ->tiles_w * occ->tiles_h;
    for (size_t i = 0; i < n; i++)
        occ->tile_lo[i] = -FLT_MAX; /* the cleared texels' value: exact */
}

/* Tile (tx, ty) against the texels [x0, x1] x [y0, y1] of it: its exact minimum becomes its
 * bound; true when every texel of the part is strictly nearer than v. */
static bool tile_part_generic(rv_occlusion *occ, int32_t tx, int32_t ty, int32_t x0, int32_t y0, int32_t x1,
                              int32_t y1, float v)
{
    const uint32_t w = occ->width;
    int32_t bx0 = tx * RVI_OCC_TILE, by0 = ty * RVI_OCC_TILE;
    int32_t bx1 = bx0 + RVI_OCC_TILE - 1 < (int32_t)w - 1 ? bx0 + RVI_OCC_TILE - 1 : (int32_t)w - 1;
    int32_t by1 = by0 + RVI_OCC_TILE - 1 < (int32_t)occ->height - 1 ? by0 + RVI_OCC_TILE - 1 : (int32_t)occ->height - 1;
    float tile_min = FLT_MAX;
    bool hidden = true;
    for (int32_t y = by0; y <= by1; y++) {
        const float *row = occ->texels + (size_t)y * w;
        bool in_rows = y >= y0 && y <= y1;
        for (int32_t x = bx0; x <= bx1; x++) {
            float t = row[x];
            tile_min = t < tile_min ? t : tile_min;
            hidden = hidden && !(in_rows && x >= x0 && x <= x1 && !(t > v));
        }
    }
    occ->tile_lo[(size_t)ty * occ->tiles_w + (uint32_t)tx] = tile_min;
    return hidden;
}

#if RVI_OCC_X86_WIDE
/* The same with a row of the tile per 8-lane load (lanes past the buffer's edge masked). */
RVI_TARGET_AVX2 static bool tile_part_avx2(rv_occlusion *occ, int32_t tx, int32_t ty, int32_t x0, int32_t y0,
                                           int32_t x1, int32_t y1, float v)
{
    const uint32_t w = occ->width;
    int32_t bx0 = tx * RVI_OCC_TILE, by0 = ty * RVI_OCC_TILE;
    int32_t by1 = by0 + RVI_OCC_TILE - 1 < (int32_t)occ->height - 1 ? by0 + RVI_OCC_TILE - 1 : (int32_t)occ->height - 1;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i in_buffer = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)w - bx0), lane);
    __m256i in_part = _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(x0 - bx0 - 1)),
                                       _mm256_cmpgt_epi32(_mm256_set1_epi32(x1 - bx0 + 1), lane));
    const __m256 far = _mm256_set1_ps(FLT_MAX);
    __m256 tile_min = far, part_min = far;
    const float *row = occ->texels + (size_t)by0 * w + (uint32_t)bx0;
    for (int32_t y = by0; y <= by1; y++, row += w) {
        __m256 t = _mm256_blendv_ps(far, _mm256_maskload_ps(row, in_buffer), _mm256_castsi256_ps(in_buffer));
        tile_min = _mm256_min_ps(tile_min, t);
        if (y >= y0 && y <= y1)
            part_min = _mm256_min_ps(part_min, _mm256_blendv_ps(far, t, _mm256_castsi256_ps(in_part)));
    }
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(tile_min), _mm256_extractf128_ps(tile_min, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_shuffle_ps(h, h, 1));
    occ->tile_lo[(size_t)ty * occ->tiles_w + (uint32_t)tx] = _mm_cvtss_f32(h);
    /* Lanes outside the part hold FLT_MAX, above any v a texel (finite) can be above. */
    __m256 above = _mm256_cmp_ps(part_min, _mm256_set1_ps(v), _CMP_GT_OQ);
    return _mm256_movemask_ps(above) == 0xFF;
}
#endif

bool rvi_occ_tiles_hidden(rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float v)
{
    const uint32_t tw = occ->tiles_w, tx0 = (uint32_t)x0 / RVI_OCC_TILE, tx1 = (uint32_t)x1 / RVI_OCC_TILE;
    const uint32_t ty0 = (uint32_t)y0 / RVI_OCC_TILE, ty1 = (uint32_t)y1 / RVI_OCC_TILE;
    for (uint32_t ty = ty0; ty <= ty1; ty++) {
        const float *lo = occ->tile_lo + (size_t)ty * tw;
        for (uint32_t tx = tx0; tx <= tx1; tx++) {
            if (lo[tx] > v)
                continue;
#if RVI_OCC_X86_WIDE
            bool hidden = occ->wide ? tile_part_avx2(occ, (int32_t)tx, (int32_t)ty, x0, y0, x1, y1, v)
                                    : tile_part_generic(occ, (int32_t)tx, (int32_t)ty, x0, y0, x1, y1, v);
#else
            bool hidden = tile_part_generic(occ, (int32_t)tx, (int32_t)ty, x0, y0, x1, y1, v);
#endif
            if (!hidden)
                return false;
        }
    }
    return true;
}
