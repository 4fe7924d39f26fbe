/* The depth feed (docs/occlusion.md, "The depth feed"): a host's depth image from an earlier
 * frame, checked, decoded into per-texel bounds on the surface the old view saw, and
 * reprojected (occlusion_feed_warp.c, occlusion_feed_reproject.c) into this frame's
 * buffer, where the freeze combines it with the occluders by max.
 *
 * What the image proves, texel by texel: a sample is the depth at the texel centre, known
 * to within the format's quantum and a few float roundings. Neighbouring samples are one
 * piece of surface only where four in a row and four in a column lie on one plane (nearness
 * is affine across a plane seen in perspective) to within feed_discontinuity of their depth,
 * with every error bound counted against the fit. A texel whose whole 3 x 3 neighbourhood is
 * such a piece is covered by surface over its whole footprint, and that surface lies within
 * the neighbourhood's depth range, widened by the same tolerance. Everything else (sky, bad
 * values, silhouettes, creases, the image's edge) proves nothing. */
#include "occlusion_feed.h"
#include "occlusion_test.h"
#include "core/check.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define FEED_DEFAULT_TRANSLATION 2.0f
#define FEED_DEFAULT_ROTATION 0.5f
#define FEED_DEFAULT_DISCONTINUITY 0.002f
#define FEED_MAX_DISCONTINUITY 0.05f
#define FEED_DEFAULT_MAX_AGE 4u
/* Normalised fields of view and centres further apart than this are another projection. */
#define FEED_PROJECTION_TOLERANCE 0.01

/* ---- desc, lifecycle --------------------------------------------------------------------- */

rv_result rvi_occ_feed_resolve_desc(rv_occlusion_desc *d)
{
    if (!isfinite(d->feed_max_translation) || !isfinite(d->feed_max_rotation) || !isfinite(d->feed_discontinuity))
        return RV_ERR_NOT_FINITE;
    if ((d->feed_max_width == 0) != (d->feed_max_height == 0) || d->feed_max_width > RV_OCCLUSION_MAX_SIZE ||
        d->feed_max_height > RV_OCCLUSION_MAX_SIZE)
        return RV_ERR_INVALID_ARG;
    if (d->feed_max_translation < 0 || d->feed_max_rotation < 0 || d->feed_discontinuity < 0 ||
        d->feed_discontinuity > FEED_MAX_DISCONTINUITY)
        return RV_ERR_INVALID_ARG;
    if (d->feed_max_translation == 0)
        d->feed_max_translation = FEED_DEFAULT_TRANSLATION;
    if (d->feed_max_rotation == 0)
        d->feed_max_rotation = FEED_DEFAULT_ROTATION;
    if (d->feed_discontinuity == 0)
        d->feed_discontinuity = FEED_DEFAULT_DISCONTINUITY;
    if (d->feed_max_age == 0)
        d->feed_max_age = FEED_DEFAULT_MAX_AGE;
    return RV_OK;
}

static void free_feed(rvi_heap *heap, rvi_occ_feed *fd)
{
    rvi_free(heap, fd->rows, RVI_FEED_ROWS * RVI_FEED_STRIDE(fd->cap_w) * sizeof(float));
    rvi_free(heap, fd->lo, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    rvi_free(heap, fd->hi, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    rvi_free(heap, fd->dest, fd->dest_capacity * sizeof(float));
    rvi_free(heap, fd->shadow, fd->shadow_capacity * sizeof(float));
    rvi_free(heap, fd->ranges, fd->range_capacity * sizeof(double));
    rvi_free(heap, fd, sizeof *fd);
}

rv_result rvi_occ_feed_create(rv_occlusion *occ)
{
    const rv_occlusion_desc *d = &occ->desc;
    if (occ->width == 0 || d->feed_max_width == 0)
        return RV_OK;
    rvi_occ_feed *fd = rvi_alloc(occ->heap, sizeof *fd);
    if (!fd)
        return RV_ERR_OUT_OF_MEMORY;
    memset(fd, 0, sizeof *fd);
    fd->avx512 = rvi_feed_cpu_avx512();
    fd->block = RVI_FEED_BLOCK;
    fd->min_block = RVI_FEED_MIN_BLOCK;
    fd->cap_w = d->feed_max_width;
    fd->cap_h = d->feed_max_height;
    fd->cap_texels = (size_t)fd->cap_w * fd->cap_h;
    rvi_feed_levels lv;
    rvi_feed_levels_of(fd->cap_w, fd->cap_h, &lv, &fd->cap_levels_total);
    fd->rows = rvi_alloc(occ->heap, RVI_FEED_ROWS * RVI_FEED_STRIDE(fd->cap_w) * sizeof(float));
    fd->lo = rvi_alloc(occ->heap, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    fd->hi = rvi_alloc(occ->heap, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    if (!fd->rows || !fd->lo || !fd->hi) {
        free_feed(occ->heap, fd);
        return RV_ERR_OUT_OF_MEMORY;
    }
    /* The queries read four texels at a time and ignore those past a rectangle: past the
     * current feed's pyramids they meet these zeroes (or an earlier feed's values). */
    memset(fd->lo, 0, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    memset(fd->hi, 0, (fd->cap_levels_total + RVI_FEED_TAIL) * sizeof(float));
    occ->feed = fd;
    return RV_OK;
}

void rvi_occ_feed_destroy(rv_occlusion *occ)
{
    if (occ->feed)
        free_feed(occ->heap, occ->feed);
    occ->feed = NULL;
}

void rvi_occ_feed_begin(rv_occlusion *occ)
{
    occ->feed_applied = false;
    rvi_occ_feed *fd = occ->feed;
    if (!fd)
        return;
    fd->pending = false;
    fd->shadow_ready = false;
    memset(&fd->stats, 0, sizeof fd->stats);
}

void rvi_occ_feed_set_blocks(rv_occlusion *occ, int32_t block, int32_t min_block)
{
    if (!occ->feed || block < 1 || block > 64 || min_block < 1 || min_block > block)
        return;
    occ->feed->block = block;
    occ->feed->min_block = min_block;
}

rv_occlusion_feed_stats rv_occlusion_get_feed_stats(const rv_occlusion *occ)
{
    rv_occlusion_feed_stats none = {0};
    return occ && occ->feed ? occ->feed->stats : none;
}

/* ---- the input ---------------------------------------------------------------------------- */

static size_t texel_size_of(rv_depth_format f)
{
    return f == RV_DEPTH_UNORM16 ? 2 : 4;
}

/* The argument checks, in the documented order; fills dec on success. */
static rv_result check_feed(const rv_occlusion *occ, const rv_depth_feed *feed, rvi_feed_decode *dec)
{
    if (!feed->texels || !feed->view_projection || feed->width == 0 || feed->height == 0)
        return RV_ERR_INVALID_ARG;
    const rvi_occ_feed *fd = occ->feed;
    if (!fd || feed->width > fd->cap_w || feed->height > fd->cap_h)
        return RV_ERR_CAPACITY;
    if ((unsigned)feed->format >= (unsigned)RV_DEPTH_FORMAT_COUNT_)
        return RV_ERR_INVALID_ARG;
    /* Both sizes are at most RV_OCCLUSION_MAX_SIZE here: a row cannot overflow, the image
     * (pitch times rows) is checked. */
    size_t ts = texel_size_of(feed->format);
    size_t pitch = feed->row_pitch ? feed->row_pitch : (size_t)feed->width * ts;
    if (pitch / ts < feed->width || pitch % ts != 0 || (uintptr_t)feed->texels % ts != 0 ||
        pitch > SIZE_MAX / feed->height)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(feed->view_projection, 16))
        return RV_ERR_NOT_FINITE;
    double vp[16];
    for (int i = 0; i < 16; i++)
        vp[i] = feed->view_projection[i];
    memset(dec, 0, sizeof *dec);
    dec->texel_size = ts;
    if (!rvi_occ_view_init(&dec->view, vp, feed->clip, feed->width, feed->height))
        return RV_ERR_INVALID_ARG;
    const rvi_occ_view *v = &dec->view;
    bool zo = feed->clip.depth_zero_to_one;
    double s_v = zo ? 1.0 : 2.0, s_0 = zo ? 0.0 : -1.0; /* z_ndc = s_v * v + s_0 */
    double W = feed->width, H = feed->height;
    if (v->perspective) {
        /* z = alpha x + beta y + gamma w + delta (rows as linear forms of the point): then
         * z_ndc = alpha x_ndc + beta y_ndc + gamma + delta / w, and 1 / w is affine in the
         * window depth and the texel position. */
        double z[4], coef[3];
        for (int j = 0; j < 4; j++)
            z[j] = v->vp[j * 4 + 2];
        for (int c = 0; c < 3; c++)
            coef[c] = z[0] * v->a_inv[0 * 3 + c] + z[1] * v->a_inv[1 * 3 + c] + z[2] * v->a_inv[2 * 3 + c];
        double alpha = coef[0], beta = coef[1], gamma = coef[2];
        double delta = z[3] - (alpha * v->vp[12] + beta * v->vp[13] + gamma * v->vp[15]);
        double scale = fabs(z[3]) + fabs(alpha * v->vp[12]) + fabs(beta * v->vp[13]) + fabs(gamma * v->vp[15]);
        if (!(fabs(delta) > 1e-9 * scale) || !isfinite(delta))
            return RV_ERR_INVALID_ARG; /* the depth does not vary with distance */
        /* x_ndc = (2 / W) i + (1 / W - 1), y_ndc = -(2 / H) j + (1 - 1 / H). */
        dec->a_v = s_v / delta;
        dec->a_x = -alpha * (2.0 / W) / delta;
        dec->a_y = beta * (2.0 / H) / delta;
        dec->a_0 = (s_0 - alpha * (1.0 / W - 1.0) - beta * (1.0 - 1.0 / H) - gamma) / delta;
        dec->v_c = (float)(zo ? gamma : 0.5 * (gamma + 1.0));
        dec->min_near = 0.0f;
        dec->t_n = 1.0f;
        dec->t_0 = 0.0f;
    } else {
        /* Orthographic: nearness is -sigma z_ndc; the tolerance scales with the distance
         * from the near plane, in NDC depth. */
        dec->a_v = -v->sigma * s_v;
        dec->a_0 = -v->sigma * s_0;
        dec->v_c = 0.0f;
        dec->min_near = -FLT_MAX;
        double zn = feed->clip.reversed_z ? 1.0 : (zo ? 0.0 : -1.0);
        dec->t_n = -1.0f;
        dec->t_0 = (float)(-v->sigma * zn);
    }
    if (!isfinite(dec->a_v) || !isfinite(dec->a_x) || !isfinite(dec->a_y) || !isfinite(dec->a_0) ||
        !(fabs(dec->a_v) < 1e30))
        return RV_ERR_INVALID_ARG;
    dec->quantum = feed->format == RV_DEPTH_FLOAT32 ? 0.0 : feed->format == RV_DEPTH_UNORM16 ? 1.0 / 65535.0
                                                                                              : 1.0 / 16777215.0;
    dec->sky = feed->clip.reversed_z ? 0.0f : 1.0f;
    return RV_OK;
}

/* ---- what the feed may be used for ---------------------------------------------------------- */

typedef enum feed_use {
    FEED_USE = 0,
    FEED_OTHER_PROJECTION,
    FEED_MOVED
} feed_use;

/* Rows x, y and w (perspective, scaled to a unit w row) or x, y and z (orthographic) of a
 * view's matrix: K R with K the projection's own part, R the view's rotation. */
static bool screen_rows(const rvi_occ_view *v, double a[3][3])
{
    const int rows[3] = { 0, 1, v->perspective ? 3 : 2 };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a[i][j] = v->vp[j * 4 + rows[i]];
    double s = 1.0;
    if (v->perspective) {
        s = sqrt(a[2][0] * a[2][0] + a[2][1] * a[2][1] + a[2][2] * a[2][2]);
        if (!(s > 0))
            return false;
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a[i][j] /= s;
    return true;
}

/* Same projection (K K^T alike), then how far the eye moved and the view turned: with one
 * K, a_now^-1 a_old = R_now^T R_old, a rotation whose angle follows from its trace. */
static feed_use compare_views(const rvi_occ_view *old, const rvi_occ_view *now, const rv_occlusion_desc *d)
{
    double ao[3][3], an[3][3];
    if (old->perspective != now->perspective || !screen_rows(old, ao) || !screen_rows(now, an))
        return FEED_OTHER_PROJECTION;
    double gmax = 0, gdiff = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double go = 0, gn = 0;
            for (int k = 0; k < 3; k++) {
                go += ao[i][k] * ao[j][k];
                gn += an[i][k] * an[j][k];
            }
            gmax = fmax(gmax, fabs(gn));
            gdiff = fmax(gdiff, fabs(go - gn));
        }
    if (!(gdiff <= FEED_PROJECTION_TOLERANCE * gmax))
        return FEED_OTHER_PROJECTION;
    /* a_inv of the view is the inverse of the unscaled rows: undo the scale. */
    double sn = 1.0, so = 1.0;
    if (now->perspective) {
        const double *n = now->vp, *o = old->vp;
        sn = sqrt(n[3] * n[3] + n[7] * n[7] + n[11] * n[11]);
        so = sqrt(o[3] * o[3] + o[7] * o[7] + o[11] * o[11]);
    }
    double trace = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            trace += now->a_inv[i * 3 + k] * sn * ao[k][i];
    (void)so;
    double c = 0.5 * (trace - 1.0);
    c = c > 1 ? 1 : c < -1 ? -1 : c;
    double angle = acos(c);
    double moved = 0;
    for (int i = 0; i < 3; i++) {
        double a = now->perspective ? old->eye[i] : old->ref[i], b = now->perspective ? now->eye[i] : now->ref[i];
        moved += (a - b) * (a - b);
    }
    if (!(sqrt(moved) <= d->feed_max_translation) || !(angle <= d->feed_max_rotation))
        return FEED_MOVED;
    return FEED_USE;
}

/* ---- the call ---------------------------------------------------------------------------- */

/* The destination side follows the buffer: it grows only when the buffer has more texels
 * than at any earlier feed. All or nothing: new blocks are taken before the old ones go,
 * so a refused call keeps what was there. (Content need not move: within a frame the
 * buffer's size is fixed, so a feed accepted earlier in the frame never grew it.) */
static rv_result reserve_destination(rv_occlusion *occ, rvi_occ_feed *fd)
{
    size_t need[3] = { (size_t)occ->width * occ->height, occ->texel_capacity,
                       rvi_feed_scratch_doubles(occ->width) };
    size_t *have[3] = { &fd->dest_capacity, &fd->shadow_capacity, &fd->range_capacity };
    void **block[3] = { (void **)&fd->dest, (void **)&fd->shadow, (void **)&fd->ranges };
    const size_t size[3] = { sizeof(float), sizeof(float), sizeof(double) };
    void *fresh[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3; i++) {
        if (need[i] <= *have[i])
            continue;
        fresh[i] = rvi_alloc(occ->heap, need[i] * size[i]);
        if (!fresh[i]) {
            for (int j = 0; j < i; j++)
                rvi_free(occ->heap, fresh[j], need[j] * size[j]);
            return RV_ERR_OUT_OF_MEMORY;
        }
    }
    for (int i = 0; i < 3; i++)
        if (fresh[i]) {
            rvi_free(occ->heap, *block[i], *have[i] * size[i]);
            *block[i] = fresh[i];
            *have[i] = need[i];
        }
    return RV_OK;
}

rv_result rv_occlusion_feed_depth(rv_occlusion *occ, const rv_depth_feed *feed)
{
    if (occ && occ->lent)
        return RV_ERR_BAD_STATE;
    return rvi_occlusion_feed_depth(occ, feed);
}

rv_result rvi_occlusion_feed_depth(rv_occlusion *occ, const rv_depth_feed *feed)
{
    if (!occ || !feed)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (occ->state == RVI_OCC_FROZEN)
        return RV_ERR_FROZEN;
    rvi_feed_decode dec;
    RVI_TRY(check_feed(occ, feed, &dec));
    rvi_occ_feed *fd = occ->feed;
    if (feed->age > occ->desc.feed_max_age) {
        fd->stats.feeds_ignored_age++;
        return RV_OK;
    }
    feed_use use = compare_views(&dec.view, &occ->view, &occ->desc);
    rvi_feed_warp wp;
    if (use == FEED_USE &&
        !rvi_feed_warp_init(&wp, &dec.view, feed->width, feed->height, &occ->view, occ->width, occ->height))
        use = FEED_OTHER_PROJECTION;
    if (use != FEED_USE) {
        if (use == FEED_MOVED)
            fd->stats.feeds_ignored_motion++;
        else
            fd->stats.feeds_ignored_projection++;
        return RV_OK;
    }
    RVI_TRY(reserve_destination(occ, fd));

    rvi_feed_counts counts;
    rvi_feed_build_source(fd, feed, &dec, occ->desc.feed_discontinuity, occ->wide, &counts);
    uint32_t written = rvi_feed_reproject(&wp, fd, fd->dest, fd->ranges, occ->wide);

    rv_occlusion_feed_stats *st = &fd->stats;
    st->feeds_used = 1;
    st->texels_fed = feed->width * feed->height;
    st->texels_invalid = counts.invalid;
    st->texels_sky = counts.sky;
    /* Every valid sample that is not sky and proves no surface: at a discontinuity, or a
     * depth the format does not resolve finely enough (never a sample: counted here too). */
    st->texels_discontinuous = st->texels_fed - counts.invalid - counts.sky - counts.surface;
    st->texels_reprojected = written;
    fd->pending = true;
    return RV_OK;
}

/* ---- the freeze and the tests ------------------------------------------------------------ */

static RVI_ALWAYS_INLINE uint32_t raise_texels(float *texels, const float *dest, size_t n)
{
    uint32_t raised = 0;
    for (size_t i = 0; i < n; i++) {
        float t = texels[i], d = dest[i];
        raised += d > t;
        texels[i] = d > t ? d : t;
    }
    return raised;
}

static uint32_t raise_generic(float *texels, const float *dest, size_t n)
{
    return raise_texels(texels, dest, n);
}

#if RVI_OCC_X86_WIDE
RVI_TARGET_AVX2 static uint32_t raise_avx2(float *texels, const float *dest, size_t n)
{
    return raise_texels(texels, dest, n);
}
#endif

void rvi_occ_feed_apply(rv_occlusion *occ)
{
    occ->feed_applied = false;
    rvi_occ_feed *fd = occ->feed;
    if (!fd || !fd->pending)
        return;
    size_t n0 = (size_t)occ->width * occ->height;
    memcpy(fd->shadow, occ->texels, n0 * sizeof(float));
#if RVI_OCC_X86_WIDE
    fd->stats.texels_raised = occ->wide ? raise_avx2(occ->texels, fd->dest, n0) : raise_generic(occ->texels, fd->dest, n0);
#else
    fd->stats.texels_raised = raise_generic(occ->texels, fd->dest, n0);
#endif
    occ->feed_applied = true;
}

uint32_t rvi_occ_feed_own_covered(const rv_occlusion *occ)
{
    size_t n0 = (size_t)occ->width * occ->height;
    uint32_t covered = 0;
    for (size_t i = 0; i < n0; i++)
        covered += occ->feed->shadow[i] > -FLT_MAX; /* an empty texel holds -FLT_MAX */
    return covered;
}

/* The occluders' own pyramid, built from the level-0 copy the freeze kept, the first time a
 * hidden object needs it. */
static void build_shadow(rv_occlusion *occ, rvi_occ_feed *fd)
{
    fd->shadow_view = *occ;
    fd->shadow_view.texels = fd->shadow;
    fd->shadow_view.feed_applied = false;
    float *t = fd->shadow;
    for (uint32_t l = 0; l + 1 < occ->level_count; l++) {
        const float *src = t + occ->level_offset[l];
        float *dst = t + occ->level_offset[l + 1];
        uint32_t sw = occ->level_w[l], sh = occ->level_h[l], dw = occ->level_w[l + 1], dh = occ->level_h[l + 1];
        for (uint32_t y = 0; y < dh; y++) {
            const float *r0 = src + (size_t)(2 * y) * sw, *r1 = 2 * y + 1 < sh ? r0 + sw : r0;
            for (uint32_t x = 0; x < dw; x++) {
                uint32_t x0 = 2 * x, x1 = 2 * x + 1 < sw ? 2 * x + 1 : 2 * x;
                float a = r0[x0] < r0[x1] ? r0[x0] : r0[x1], b = r1[x0] < r1[x1] ? r1[x0] : r1[x1];
                dst[(size_t)y * dw + x] = a < b ? a : b;
            }
        }
    }
    fd->shadow_ready = true;
}

void rvi_occ_feed_prepare(rv_occlusion *occ)
{
    /* With no texel raised, rvi_occ_feed_hidden_alone never reads the pyramid. */
    if (occ->feed_applied && !occ->feed->shadow_ready && occ->feed->stats.texels_raised > 0)
        build_shadow(occ, occ->feed);
}

/* True when the feed raised no texel of [x0, x1] x [y0, y1] (level 0, inside the buffer):
 * there the buffer holds the occluders' own texels, bit for bit. */
static bool feed_left_alone(const rv_occlusion *occ, int32_t x0, int32_t y0, int32_t x1, int32_t y1)
{
    const rvi_occ_feed *fd = occ->feed;
    if (fd->stats.texels_raised == 0)
        return true;
    size_t bytes = (size_t)(x1 - x0 + 1) * sizeof(float);
    for (int32_t y = y0; y <= y1; y++) {
        size_t at = (size_t)y * occ->width + (size_t)x0;
        if (memcmp(occ->texels + at, fd->shadow + at, bytes) != 0)
            return false;
    }
    return true;
}

bool rvi_occ_feed_hidden_alone(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                               const rvi_occ_footprint *fp, bool box)
{
    /* Every test that answered hidden (the rectangle against the pyramid, the refined test,
     * its points) reads only level-0 texels inside the footprint, and the pieces, which the
     * two views share. Where the feed raised none of those texels the occluders' own view
     * answers what the test did: hidden. Most hidden objects take this way, at the cost of
     * a comparison of their rows instead of the refined test a second time. */
    if (feed_left_alone(occ, fp->x0, fp->y0, fp->x1, fp->y1))
        return true;
    const rv_occlusion *sh = &occ->feed->shadow_view;
    rvi_hz_levels h = rvi_hz_levels_of(sh);
    return rvi_occ_hz_hidden(sh, &h, fp->x0, fp->y0, fp->x1, fp->y1, fp->nearness) ||
           (box && rvi_occ_box_refined_hidden(sh, min, max, matrix, fp));
}

void rvi_occ_feed_add_hidden(rv_occlusion *occ, uint64_t objects)
{
    if (occ->feed)
        occ->feed->stats.objects_hidden_by_feed += objects;
}

void rvi_occ_feed_note_hidden(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                              const rvi_occ_footprint *fp, bool box)
{
    rvi_occ_feed_prepare(occ);
    occ->feed->stats.objects_hidden_by_feed += !rvi_occ_feed_hidden_alone(occ, min, max, matrix, fp, box);
}
