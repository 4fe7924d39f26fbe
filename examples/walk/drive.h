/* rvis-walk: the one file that calls rvis. It turns a level into rvis nodes once, and per
 * frame hands rvis the view and reads back, per object, what rvis decided. When rv_frame
 * lands, this file is the only one that changes: the rest of rvis-walk (reader, city,
 * oracle, reports) sees only the verdicts and counters below. */
#ifndef RVW_DRIVE_H
#define RVW_DRIVE_H

#include "level.h"
#include "view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rv_job_system;

/* What rvis decided for one object this frame. */
typedef enum rvw_verdict {
    RVW_DRAWN = 0,             /* in the draw list */
    RVW_CULLED_FRUSTUM,        /* culled by the frustum (itself or a group above it) */
    RVW_CULLED_OCCLUSION,      /* culled by the occlusion buffer (itself or a group above) */
    RVW_EXCLUDED,              /* removed on purpose: outside the committed slice, inactive
                                  deferred part, LOD "nothing", below an HLOD region drawn as
                                  itself, or an HLOD stand-in whose region is refined. The
                                  oracle leaves it out of its scene. */
    RVW_CULLED_PVS,            /* drawn by rvis, then skipped by the host's PVS stage
                                  (rvis-walk --pvs): a cull the oracle checks */
    RVW_CULLED_UNSAMPLED,      /* its box's image holds no pixel centre (rv_view.cull_unsampled):
                                  a cull the oracle checks */
    RVW_VERDICT_COUNT
} rvw_verdict;

/* Frame stages, in the order of rv_frame (the JSON report's stage_us keys). */
typedef enum rvw_stage {
    RVW_STAGE_TRANSFORMS, RVW_STAGE_JOURNAL, RVW_STAGE_FRUSTUM, RVW_STAGE_PARTITION,
    RVW_STAGE_OCCLUSION, RVW_STAGE_LOD, RVW_STAGE_STREAMING, RVW_STAGE_PUBLISH, RVW_STAGE_FEED,
    RVW_STAGE_COUNT
} rvw_stage;

extern const char *const rvw_stage_names[RVW_STAGE_COUNT];

/* What rvis did with this frame's depth feed (rv_occlusion_feed_stats; all 0 when none was
 * handed over). */
typedef struct rvw_feed_result {
    bool handed;                   /* a depth image was handed to rvis this frame */
    bool used;                     /* rvis reprojected it (not ignored) */
    uint32_t ignored_motion;       /* ignored: the camera moved or turned too far since */
    uint32_t ignored_projection, ignored_age;
    uint32_t texels_fed, texels_invalid, texels_sky, texels_discontinuous;
    uint32_t texels_reprojected;   /* buffer texels the feed proved a depth for */
    uint32_t texels_raised;        /* of those, nearer than the occluders' */
    uint64_t hidden_by_feed;       /* tests answered hidden that the occluders alone would not */
} rvw_feed_result;

/* Per-frame figures from rvis. A counter or time is negative when the stage that would
 * produce it is not joined (the report writes null for it). */
typedef struct rvw_frame_result {
    const uint8_t *verdict;        /* per object (rvw_verdict); borrowed until the next frame */
    uint32_t drawn;                /* objects drawn */
    uint32_t frustum_visible;      /* objects that passed the frustum (drawn, occluded or
                                      unsampled) */
    uint32_t excluded;
    double stage_us[RVW_STAGE_COUNT];
    int64_t occlusion_culled;      /* objects culled by occlusion this frame */
    int64_t unsampled_culled;      /* objects culled as unsampled this frame */
    int64_t partition_hidden;      /* parts hidden by the partition gate this frame */
    int64_t lod_levels_mask;       /* bit l set: some object drew at LOD level l this frame */
    int64_t hlod_refined;          /* HLOD regions refined into their children this frame */
    int64_t journal_deltas;        /* deltas drained this frame */
    int64_t pages_requested;
    int64_t pages_evicted;
    uint64_t allocations;          /* the world's allocations + reallocations after this frame */
    double frame_us;               /* rvis's frame calls alone (begin, the depth feed, cull, end:
                                      what rv_frame does), microseconds */
    uint32_t unexplained;          /* objects neither drawn nor in a cull record (a bug) */
    rvw_feed_result feed;
} rvw_frame_result;

/* How the walk configures rvis. */
/* What rvis-walk and rvis-view cull with unless told otherwise: finer-than-a-texel tests
 * and the cull of objects no pixel centre can show (the walk's oracle and the GPU sample
 * each pixel once, at its centre). */
#define RVW_DEFAULT_FINE_TESTS 1u
#define RVW_DEFAULT_CULL_UNSAMPLED true

typedef struct rvw_drive_options {
    uint32_t occlusion_width;      /* occlusion buffer width in texels; 0 = occlusion off */
    uint32_t fine_tests;           /* rv_occlusion_desc.fine_tests */
    bool cull_unsampled;           /* rv_view.cull_unsampled */
    uint32_t feed_width, feed_height; /* the largest depth feed; 0 = none accepted */
    float feed_max_translation;    /* world units the eye may move between a feed and its use;
                                      0 = rvis's default */
    const struct rv_job_system *jobs; /* the host's job system (rv_world_desc.jobs); NULL: none */
} rvw_drive_options;

typedef struct rvw_drive rvw_drive;


/* Builds the rvis world for level (nodes, bounds, occluders, ...). False with a one-line
 * reason in err when rvis refuses the scene or memory ran out. */
bool rvw_drive_create(const rvw_level *level, const rvw_drive_options *opt, rvw_drive **out,
                      char *err, size_t errlen);

/* Runs one frame. level holds this frame's geometry (movers already moved). */
bool rvw_drive_frame(rvw_drive *drive, const rvw_level *level, const rvw_view *view,
                     rvw_frame_result *out, char *err, size_t errlen);

/* A depth image from an earlier frame, as a host reads its depth pre-pass back. */
typedef struct rvw_depth_image {
    const float *depth;            /* window depths (OpenGL: 0.5 z/w + 0.5), 1 where nothing */
    uint32_t width, height;
    bool rows_bottom_up;           /* row 0 holds NDC y = -1 */
    const float *view_projection;  /* float[16], the matrix it was drawn with (OpenGL clip) */
    uint32_t age;                  /* frames since it was drawn (1: the previous frame) */
} rvw_depth_image;

/* Hands image to rvis in the next rvw_drive_frame, between rv_frame_begin and the cull
 * (image and its pointers are read during that call). NULL: none. */
void rvw_drive_set_feed(rvw_drive *drive, const rvw_depth_image *image);

/* The rvis stages the walk drives: every stage for the city; for a map, the ones it uses. */
const char *rvw_drive_stages(bool city);

/* The last frame's occlusion buffer (level 0) as an 8-bit grey image, top row first;
 * borrowed until the next call. depth_range receives the view depths 255 and 32 stand for
 * (both 0 when nothing is covered). False when occlusion is off or the buffer has no image. */
bool rvw_drive_occlusion_image(rvw_drive *drive, const uint8_t **pixels, uint32_t *width,
                               uint32_t *height, float depth_range[2]);

/* One draw of the last frame, in rvis's order: the opaque list front to back, then the
 * translucent list far to near. During a LOD or HLOD crossfade an object appears twice (two
 * levels, or a district's stand-in and its children) with fades summing to 1. */
typedef struct rvw_draw {
    uint32_t object;               /* level object index */
    uint32_t lod_level;            /* 0 = finest; 0 for objects without a ladder */
    float fade;                    /* (0, 1]; 1 when not fading */
    bool translucent;              /* from the translucent list */
} rvw_draw;

/* What a renderer reads of the last frame besides the verdicts (rvis-view). */
typedef struct rvw_draw_list {
    const rvw_draw *draws;         /* borrowed until the next rvw_drive_frame */
    uint32_t count;
    uint32_t occluders_added;      /* occluders submitted this frame */
    uint32_t occluders_rasterised; /* of which rasterised into the occlusion buffer */
} rvw_draw_list;

/* The last rvw_drive_frame's draw list. False when no frame ran yet or memory ran out. */
bool rvw_drive_draw_list(rvw_drive *drive, rvw_draw_list *out);

void rvw_drive_destroy(rvw_drive *drive);

#endif
