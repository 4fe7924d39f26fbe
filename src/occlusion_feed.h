/* Depth feed internals (docs/occlusion.md, "The depth feed"): the decoded source image as
 * two pyramids of surface depth bounds, and the reprojection into the buffer's view.
 *
 * Depths are NEARNESS throughout, as in the buffer (1 / w in perspective, -depth in
 * orthographic views; larger = nearer), in the OLD view for the source side and in the
 * buffer's view for the destination. A source texel that is not part of a provable piece
 * of surface holds lo = -INFINITY and hi = +INFINITY, so every bound test over it fails
 * without a flag of its own. */
#ifndef RVI_OCCLUSION_FEED_H
#define RVI_OCCLUSION_FEED_H

#include "occlusion.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#define RVI_FEED_MAX_LEVELS 15u

/* The source image's pyramids: level 0 is the feed's texel grid (sizes only: not stored);
 * each next level halves both sizes rounding up (a missing child repeats its sibling), down
 * to 1 x 1. Level 1 is stored first (offset 0). */
typedef struct rvi_feed_levels {
    uint32_t count;
    uint32_t w[RVI_FEED_MAX_LEVELS], h[RVI_FEED_MAX_LEVELS];
    size_t offset[RVI_FEED_MAX_LEVELS];
} rvi_feed_levels;

/* Everything the reprojection needs, derived per feed in double.
 * "New space" is the buffer's texel x, texel y (row 0 at the top) and nearness q; a point
 * (x, y, q) maps to the old view by h = k * (x, y, q, 1): old texel X = h0 / h3, Y = h1 / h3
 * (the feed's texel grid, row 0 holding NDC y = +1), old nearness Q = h2 / h3, and h3 > 0
 * exactly when the point is in front of the old camera (for points in front of the new
 * one). Both maps are projective, so lines stay lines and planes stay planes. */
typedef struct rvi_feed_warp {
    double k[4][4];
    double near_new[4];    /* near_new . (x, y, q, 1) >= 0: beyond the buffer view's near plane */
    /* With b = k's third column, the pairs a ray's old-image lines multiply:
     * (b2, b0), (b0, b3), (b2, b1), (b1, b3) (occlusion_feed_warp.h, ray_finish). */
    double ray_b[4][2];
    bool new_perspective;  /* the buffer's view: q > 0 in front of its eye */
    uint32_t src_w, src_h; /* the feed's texels */
    uint32_t dst_w, dst_h; /* the buffer's texels */
} rvi_feed_warp;

/* How one feed's values become old-view nearness: n = a_v * v + a_x * column + a_y * row +
 * a_0 for window depth v at the texel centre (row 0 holding NDC y = +1). It is evaluated in
 * float as a_v * (v - v_c) + (a_x * column + c_row), c_row = a_y * row + a_0 + a_v * v_c:
 * with v_c the window depth toward infinity, the large terms that cancel far away (a_v * v
 * against a_0 with standard depth) cancel exactly in v - v_c instead. */
typedef struct rvi_feed_decode {
    rvi_occ_view view;     /* the old view (texel grid = the feed's) */
    double a_v, a_x, a_y, a_0;
    double quantum;        /* window-depth step of the format */
    float v_c;             /* window depth toward infinity (0 for orthographic views) */
    float sky;             /* the clear value: the far end of the depth range */
    float min_near;        /* samples must be nearer than this (perspective: in front, > 0) */
    /* Tolerance of the plane fit and the slack of the bounds: tau * (t_n * n + t_0). */
    float t_n, t_0;
    size_t texel_size;
} rvi_feed_decode;

/* What building the source side counted. */
typedef struct rvi_feed_counts {
    uint32_t invalid, sky, samples, surface;
} rvi_feed_counts;

struct rvi_occ_feed {
    uint32_t cap_w, cap_h;  /* desc.feed_max_width / height */
    size_t cap_texels, cap_levels_total;
    /* Source side, sized at creation for the largest feed. */
    float *rows;            /* RVI_FEED_ROWS rows of RVI_FEED_STRIDE(cap_w) floats: the source pass's rings */
    float *lo, *hi;         /* pyramids of the surface bounds from level 1 up, rvi_feed_levels
                               layout, RVI_FEED_TAIL floats of padding after them */
    rvi_feed_levels levels; /* of the current feed */
    /* Destination side, grown with the buffer (only when it has more texels than before). */
    float *dest;            /* the feed's nearness per buffer texel, -FLT_MAX where nothing */
    size_t dest_capacity;
    float *shadow;          /* the occluders' own buffer and pyramid (for objects_hidden_by_feed) */
    size_t shadow_capacity;
    double *ranges;         /* reprojection scratch: a range per block column */
    size_t range_capacity;
    rv_occlusion shadow_view; /* the buffer's fields with texels = shadow, built on first need */
    int32_t block, min_block; /* reprojection block sizes (RVI_FEED_BLOCK, RVI_FEED_MIN_BLOCK) */
    bool avx512;            /* with the buffer's wide flag: the source pass's 16-lane build */
    bool pending;           /* dest holds a feed for this frame */
    bool shadow_ready;
    rv_occlusion_feed_stats stats;
};

/* A stored level (1 or above) at which [x0, x1] x [y0, y1] touches at most eight texels
 * along each axis: with d the longer span less one, d < 7 * 2^k is enough (a span of d + 1
 * texels meets at most floor(d / 2^k) + 2 cells of 2^k), and one level finer is taken when
 * the rectangle's own alignment allows it. */
static inline uint32_t rvi_feed_level_for(const rvi_occ_feed *fd, int32_t x0, int32_t y0, int32_t x1, int32_t y1)
{
    int32_t d = x1 - x0 > y1 - y0 ? x1 - x0 : y1 - y0;
    uint32_t k = rvi_bit_length((uint32_t)d / 7u), top = fd->levels.count - 1;
    if (k > 1 && (x1 >> (k - 1)) - (x0 >> (k - 1)) <= 7 && (y1 >> (k - 1)) - (y0 >> (k - 1)) <= 7)
        k--;
    k = k < 1 ? 1 : k;
    return k < top ? k : top;
}

/* Min (lo) and max (hi) of the surface bounds over the feed texels [x0, x1] x [y0, y1]
 * (inclusive, inside the image), read at rvi_feed_level_for: every texel there that the
 * rectangle touches, at most 8 x 8. The texels cover the rectangle and at most one texel of
 * that level beyond it on each side, so both answers err wide. */
static inline void rvi_feed_query(const rvi_occ_feed *fd, int32_t x0, int32_t y0, int32_t x1, int32_t y1, float *out_lo,
                                  float *out_hi)
{
    uint32_t k = rvi_feed_level_for(fd, x0, y0, x1, y1);
    size_t lw = fd->levels.w[k], off = fd->levels.offset[k];
    int32_t ax = x0 >> k, cx = x1 >> k, ay = y0 >> k, cy = y1 >> k;
#if defined(__SSE2__) || defined(_M_X64)
    /* Four-wide reads per row (the arrays are padded, so a read stays inside them, and they
     * hold no NaN): one at the first texel and, past four, one ending at the last (the two
     * overlap, which changes neither extreme); with fewer than four the lanes past the
     * last are set to the identity of the reduction. */
    int32_t n = cx - ax + 1, bx = n > 4 ? cx - 3 : ax;
    const float *pl = fd->lo + off + (size_t)ay * lw, *ph = fd->hi + off + (size_t)ay * lw;
    __m128 lo = _mm_min_ps(_mm_loadu_ps(pl + ax), _mm_loadu_ps(pl + bx));
    __m128 hi = _mm_max_ps(_mm_loadu_ps(ph + ax), _mm_loadu_ps(ph + bx));
    for (int32_t y = ay + 1; y <= cy; y++) {
        pl += lw;
        ph += lw;
        lo = _mm_min_ps(lo, _mm_min_ps(_mm_loadu_ps(pl + ax), _mm_loadu_ps(pl + bx)));
        hi = _mm_max_ps(hi, _mm_max_ps(_mm_loadu_ps(ph + ax), _mm_loadu_ps(ph + bx)));
    }
    __m128 keep = _mm_castsi128_ps(_mm_cmplt_epi32(_mm_setr_epi32(0, 1, 2, 3), _mm_set1_epi32(n)));
    lo = _mm_or_ps(_mm_and_ps(keep, lo), _mm_andnot_ps(keep, _mm_set1_ps(INFINITY)));
    hi = _mm_or_ps(_mm_and_ps(keep, hi), _mm_andnot_ps(keep, _mm_set1_ps(-INFINITY)));
    lo = _mm_min_ps(lo, _mm_shuffle_ps(lo, lo, _MM_SHUFFLE(1, 0, 3, 2)));
    hi = _mm_max_ps(hi, _mm_shuffle_ps(hi, hi, _MM_SHUFFLE(1, 0, 3, 2)));
    lo = _mm_min_ps(lo, _mm_shuffle_ps(lo, lo, _MM_SHUFFLE(2, 3, 0, 1)));
    hi = _mm_max_ps(hi, _mm_shuffle_ps(hi, hi, _MM_SHUFFLE(2, 3, 0, 1)));
    *out_lo = _mm_cvtss_f32(lo);
    *out_hi = _mm_cvtss_f32(hi);
#else
    float lo = INFINITY, hi = -INFINITY;
    for (int32_t y = ay; y <= cy; y++)
        for (int32_t x = ax; x <= cx; x++) {
            size_t at = off + (size_t)y * lw + (size_t)x;
            lo = fd->lo[at] < lo ? fd->lo[at] : lo;
            hi = fd->hi[at] > hi ? fd->hi[at] : hi;
        }
    *out_lo = lo;
    *out_hi = hi;
#endif
}

/* Padding after the pyramids (floats), for the query's four-wide reads. */
#define RVI_FEED_TAIL 4

/* Rows of scratch the source pass keeps in flight, each padded on both sides. */
#define RVI_FEED_ROWS 15
#define RVI_FEED_PAD 8
#define RVI_FEED_STRIDE(cap_w) ((size_t)(cap_w) + 2 * RVI_FEED_PAD)

/* The levels of a w x h image and the texels of all of them. */
void rvi_feed_levels_of(uint32_t w, uint32_t h, rvi_feed_levels *lv, size_t *total);

/* True when this CPU runs the source pass's AVX-512 build. */
bool rvi_feed_cpu_avx512(void);

/* Builds the source side of a checked feed: fd->levels set for its size; lo and hi
 * filled. tau: desc.feed_discontinuity; wide: the AVX2 build (AVX-512 where fd->avx512). */
void rvi_feed_build_source(rvi_occ_feed *fd, const rv_depth_feed *feed, const rvi_feed_decode *dec, float tau,
                           bool wide, rvi_feed_counts *out);

/* Derives the warp from the feed's view and the buffer's; false when the two views cannot
 * be related (a singular combination). */
bool rvi_feed_warp_init(rvi_feed_warp *wp, const rvi_occ_view *old_view, uint32_t src_w, uint32_t src_h,
                        const rvi_occ_view *new_view, uint32_t dst_w, uint32_t dst_h);

/* Reprojects the feed's pyramids into dest (dst_w x dst_h, every texel written: the proven
 * nearness, rounded farther, or -FLT_MAX), in blocks of fd->block texels a side, each
 * split down to fd->min_block when it cannot be proven. scratch holds
 * rvi_feed_scratch_doubles(dst_w) doubles (enough for any block size); wide: the AVX2
 * build, AVX-512 where fd->avx512 (the same result). Returns the number of texels given a
 * depth. */
uint32_t rvi_feed_reproject(const rvi_feed_warp *wp, const rvi_occ_feed *fd, float *dest, double *scratch, bool wide);
size_t rvi_feed_scratch_doubles(uint32_t dst_w);

/* The reprojection's block sizes: blocks of RVI_FEED_BLOCK texels a side are tried first;
 * a block that cannot be proven is split down to RVI_FEED_MIN_BLOCK. */
#define RVI_FEED_BLOCK 20
#define RVI_FEED_MIN_BLOCK 5

/* Sets the block sizes (1..64, min_block <= block; the defaults above), for the
 * benchmark's baseline that proves every texel on its own (1, 1). No-op without a feed. */
void rvi_occ_feed_set_blocks(rv_occlusion *occ, int32_t block, int32_t min_block);

#endif
