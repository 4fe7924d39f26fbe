/* The buffer's side of the depth feed (occlusion_feed*.c; the feed's internals are in
 * occlusion_feed.h): the calls the buffer makes at creation, destruction, begin and freeze,
 * and the tests' reports of what they hide. Included by occlusion.h at its end, after the
 * buffer's types. */
#ifndef RVI_OCCLUSION_FEED_HOOKS_H
#define RVI_OCCLUSION_FEED_HOOKS_H

/* Checks and resolves the feed fields of a desc (defaults applied). */
rv_result rvi_occ_feed_resolve_desc(rv_occlusion_desc *desc);
/* Allocates the feed's source side (desc.feed_max_width x feed_max_height); no-op without
 * a capacity. RV_OK or RV_ERR_OUT_OF_MEMORY (nothing kept). */
rv_result rvi_occ_feed_create(rv_occlusion *occ);
void rvi_occ_feed_destroy(rv_occlusion *occ);
/* A new frame: forgets the previous frame's feed and its counters. */
void rvi_occ_feed_begin(rv_occlusion *occ);
/* At the freeze, after the occluders are drawn into level 0 and before the pyramid is
 * built: keeps a copy of the occluders' level 0 and raises each texel to the feed's depth
 * where that is nearer (max of the two nearness proofs). Sets occ->feed_applied. */
void rvi_occ_feed_apply(rv_occlusion *occ);
/* After a feed was applied: the texels of level 0 the occluders alone cover (the copy). */
uint32_t rvi_occ_feed_own_covered(const rv_occlusion *occ);
/* A test answered hidden (fp as the test used it): counts it when this frame's occluders
 * alone would not hide it. Boxes with box = true (min, max, matrix as tested; the refined
 * test runs too), spheres through their rectangle (min, max, matrix unused). */
void rvi_occ_feed_note_hidden(rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                              const rvi_occ_footprint *fp, bool box);
/* The same split for tests running on several threads at once (the frame's workers):
 * rvi_occ_feed_prepare once after the freeze on the calling thread (builds the occluders'
 * own pyramid when a feed was applied); then rvi_occ_feed_hidden_alone, read-only, says
 * whether the occluders alone hide a test answered hidden; rvi_occ_feed_add_hidden adds
 * the workers' counts of those they did not. */
void rvi_occ_feed_prepare(rv_occlusion *occ);
bool rvi_occ_feed_hidden_alone(const rv_occlusion *occ, const float min[3], const float max[3], const float *matrix,
                               const rvi_occ_footprint *fp, bool box);
void rvi_occ_feed_add_hidden(rv_occlusion *occ, uint64_t objects);

#endif
