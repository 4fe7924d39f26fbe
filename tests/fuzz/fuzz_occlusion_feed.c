/* fuzz_occlusion's depth-feed section: each frame, a depth image decoded from the input
 * (fuzz_feed.h) is handed to the buffer before the freeze.
 *
 * Checked: the call returns RV_OK or a code the image's defects document, and a refusal
 * changes no counter; an accepted call is used or ignored exactly once, an image older than
 * feed_max_age is ignored for its age; a used image counts its texels, invalid texels and
 * sky exactly as decoded; after the freeze the buffer counts stay within the buffer, a
 * feed is refused as frozen, and nothing is hidden by a feed that was not used.
 *
 * The reference: a used image whose texels are a plane inside (0, 1) is the planar surface
 * its four corners unproject to, through the feed's own matrix and depth convention. It
 * joins the frame's occluders as a quad of two triangles, so a culled object with a point
 * whose sight line misses the quad and every occluder is a hole in the world (the image's
 * spoilt texels only hide less, so the quad is a superset of what may hide). A used image of
 * noise leaves the frame without a reference: only the counts are checked. */
#include "fuzz_occlusion.h"

/* The quad of a plane image, in world space; false when its corners do not unproject to
 * finite points in front of the feed's camera. */
static int plane_quad(const fzf_image *im, fz_box *quad)
{
    double m[16], inv[16];
    for (int k = 0; k < 16; k++)
        m[k] = im->vp[k];
    if (!mat_inverse(m, inv))
        return 0;
    static const double corner[4][2] = { { -1, -1 }, { 1, -1 }, { 1, 1 }, { -1, 1 } };
    double world[4][3];
    double sign = 0;
    for (int c = 0; c < 4; c++) {
        double x = corner[c][0], y = corner[c][1], d = im->d0 + im->gx * x + im->gy * y;
        double z = im->feed.clip.depth_zero_to_one ? d : 2 * d - 1;
        double h[4] = { x, y, z, 1 }, w[4];
        mat_apply(inv, h, w);
        if (!isfinite(w[3]) || fabs(w[3]) < 1e-300)
            return 0;
        if (c == 0)
            sign = w[3];
        else if ((w[3] > 0) != (sign > 0))
            return 0; /* the quad crosses the plane at infinity */
        for (int i = 0; i < 3; i++) {
            world[c][i] = w[i] / w[3];
            if (!isfinite(world[c][i]))
                return 0;
        }
    }
    memset(quad, 0, sizeof *quad);
    quad->kind = SHAPE_OPEN_MESH;
    quad->tri_count = 2;
    static const int tri[2][3] = { { 0, 1, 2 }, { 0, 2, 3 } };
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 3; k++)
            memcpy(quad->tri[t][k], world[tri[t][k]], sizeof quad->tri[t][k]);
    return 1;
}

void fzo_feed_frame(fz_input *in, rv_occlusion *occ, const rv_occlusion_desc *desc, const fz_view *v,
                    fzo_feed *out, fz_box *quad)
{
    memset(out, 0, sizeof *out);
    fzf_image *im = &out->image;
    fzf_decode(in, im, desc->feed_max_width, desc->feed_max_height, v->vp, v->clip);
    rv_occlusion_feed_stats before = rv_occlusion_get_feed_stats(occ);
    rv_result r = rv_occlusion_feed_depth(occ, &im->feed);
    out->result = r;
    FZ_ASSERT(fzf_result_ok(im, r), "a feed (%ux%u, format %d, pitch %zu, expect %#x) returned %s", im->feed.width,
              im->feed.height, (int)im->feed.format, im->feed.row_pitch, im->expect, rv_result_string(r));
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    if (r != RV_OK) {
        FZ_ASSERT(memcmp(&fs, &before, sizeof fs) == 0, "a refused feed changed the feed counters");
        return;
    }
    uint32_t outcomes = fs.feeds_used + fs.feeds_ignored_age + fs.feeds_ignored_motion + fs.feeds_ignored_projection;
    FZ_ASSERT(outcomes == 1, "an accepted feed was used or ignored %u times", outcomes);
    uint32_t max_age = desc->feed_max_age ? desc->feed_max_age : 4;
    if (im->feed.age > max_age)
        FZ_ASSERT(fs.feeds_ignored_age == 1, "a feed of age %u (at most %u) was not ignored for its age",
                  im->feed.age, max_age);
    if (!fs.feeds_used) {
        FZ_ASSERT(fs.texels_fed == 0 && fs.texels_reprojected == 0, "an ignored feed counted texels");
        return;
    }
    FZ_ASSERT(fs.texels_fed == im->feed.width * im->feed.height, "texels_fed %u for a %ux%u feed", fs.texels_fed,
              im->feed.width, im->feed.height);
    FZ_ASSERT(fs.texels_invalid == im->invalid && fs.texels_sky == im->sky,
              "the feed counted %u invalid and %u sky texels, the image holds %u and %u", fs.texels_invalid,
              fs.texels_sky, im->invalid, im->sky);
    FZ_ASSERT((uint64_t)fs.texels_invalid + fs.texels_sky + fs.texels_discontinuous <= fs.texels_fed,
              "more texels left out (%u invalid, %u sky, %u discontinuous) than fed (%u)", fs.texels_invalid,
              fs.texels_sky, fs.texels_discontinuous, fs.texels_fed);
    if (im->plane && plane_quad(im, quad))
        out->reference = 1;
    else
        out->unknown = 1;
}

void fzo_feed_check(rv_occlusion *occ, const rv_occlusion_desc *desc, fzo_feed *feed)
{
    (void)desc;
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    uint32_t bw = 0, bh = 0;
    FZ_ASSERT(rv_occlusion_debug_image(occ, 0, NULL, 0, &bw, &bh) == RV_OK, "the buffer's size");
    uint64_t texels = (uint64_t)bw * bh;
    FZ_ASSERT(fs.texels_reprojected <= texels && fs.texels_raised <= fs.texels_reprojected,
              "feed counts outside the buffer (%u reprojected, %u raised, %llu texels)", fs.texels_reprojected,
              fs.texels_raised, (unsigned long long)texels);
    FZ_ASSERT(st.texels_covered <= texels, "%u texels covered of %llu", st.texels_covered, (unsigned long long)texels);
    FZ_ASSERT(fs.objects_hidden_by_feed <= st.culled, "%llu hidden by the feed, %llu culled",
              (unsigned long long)fs.objects_hidden_by_feed, (unsigned long long)st.culled);
    if (!fs.feeds_used)
        FZ_ASSERT(fs.texels_raised == 0 && fs.objects_hidden_by_feed == 0, "a feed not used hid something");
    /* The buffer is frozen: a feed now is refused and changes nothing. */
    rv_result r = rv_occlusion_feed_depth(occ, &feed->image.feed);
    FZ_ASSERT(r == RV_ERR_FROZEN, "a feed after the freeze returned %s", rv_result_string(r));
    rv_occlusion_feed_stats again = rv_occlusion_get_feed_stats(occ);
    FZ_ASSERT(memcmp(&again, &fs, sizeof fs) == 0, "a feed after the freeze changed the counters");
}
