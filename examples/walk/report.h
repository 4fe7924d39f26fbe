/* rvis-walk: what a run measured, the JSON report (--json) and the human summary. */
#ifndef RVW_REPORT_H
#define RVW_REPORT_H

#include "bsp.h"
#include "drive.h"
#include "path.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Totals of a city counter over the run; joined is false while no frame reported it. */
typedef struct rvw_total {
    int64_t sum;
    bool joined;
} rvw_total;

#define RVW_NAMED_OCCLUDERS 8

/* A declared occluder in front of a falsely culled object's visible pixels. */
typedef struct rvw_named_occluder {
    uint32_t index;                /* its object (a surface or a building) */
    uint32_t pixels;               /* the object's visible pixels it lies in front of */
    rvw_box box;                   /* its bounds */
    const char *kind;              /* "surface" or "building" */
} rvw_named_occluder;

/* What --verify found about one false cull, so a person can tell a culling bug (visible
 * pixels no occluder lies in front of) from a level seen through a face nothing draws
 * (every visible pixel behind a declared occluder). */
typedef struct rvw_false_cull {
    uint32_t frame, object;
    uint32_t pixels;               /* its pixels in the oracle's picture */
    const char *culled_by;         /* "the frustum", "occlusion", "the PVS (--pvs)" */
    float eye[3];
    uint32_t covered;              /* of pixels, those behind the declared occluders together */
    const char *occluder_kind;     /* "occluder" (maps) or "building" (city), for the message */
    uint32_t occluder_count;       /* named below, most pixels first (at most RVW_NAMED_OCCLUDERS) */
    uint32_t occluders_in_front;   /* all occluders in front of some of its pixels */
    rvw_named_occluder occluders[RVW_NAMED_OCCLUDERS];
} rvw_false_cull;

/* The depth feed over a run (--depth-feed): sums of rvw_feed_result over frames. */
typedef struct rvw_feed_totals {
    bool on;
    uint32_t width, height;
    uint64_t handed, used, ignored_motion, ignored_projection, ignored_age;
    uint64_t cuts;                 /* frames the camera path jumped to with a feed handed over */
    uint64_t cuts_used;            /* of those, frames whose feed rvis did not ignore */
    uint64_t texels_fed, texels_invalid, texels_sky, texels_discontinuous;
    uint64_t texels_reprojected, texels_raised, hidden_by_feed;
    double *used_us;               /* per used feed: rvis's feed stage (microseconds) */
    double *draw_us;               /* per frame: the walk's own depth image (host work) */
    uint32_t draws;
} rvw_feed_totals;

typedef struct rvw_run {
    char scene[64];
    bool is_city;
    uint32_t workers;              /* the host's job system handed to rvis: its workers (0: none) */
    uint32_t objects, occluders, triangles;
    uint32_t occluder_triangles;   /* maps: the occluder meshes' triangles */
    uint32_t oriented_boxes;       /* maps: objects tested by an oriented box (rvw_level_orient_boxes) */
    uint32_t frames;               /* frames run */
    uint32_t frame_capacity;
    bool verified;
    uint32_t verify_width, verify_height, verify_every;
    uint32_t verified_frames;
    uint64_t false_culls;
    int64_t first_false_frame, first_false_object; /* -1 = none */
    rvw_false_cull first_false;    /* valid when first_false_frame >= 0 */
    uint64_t drawn_sum, frustum_visible_sum;
    uint64_t truly_visible_sum, drawn_verified_sum; /* over verified frames */
    /* bounds, over verified frames: objects a pixel-exact culler with exactly rvis's
     * occluders would draw; objects in the compiler's PVS and rvis's frustum (maps); and
     * truly visible objects either of them would hide (0 unless the bound is wrong) */
    uint64_t ideal_occluder_sum, ideal_occluder_misses;
    uint64_t ideal_box_sum;        /* the same culler testing each object's box, not its triangles */
    uint64_t drawn_unsampled_sum;  /* drawn objects whose box covers no pixel centre of the oracle */
    uint64_t pvs_frustum_sum, pvs_misses;
    bool has_pvs;                  /* a map with a valid PVS */
    bool pvs_stage;                /* --pvs: the host skipped objects outside the PVS */
    double *frame_us;              /* per frame */
    double *stage_us[RVW_STAGE_COUNT];
    bool stage_joined[RVW_STAGE_COUNT];
    double *oracle_us;             /* per verified frame */
    uint64_t allocations_at_warmup; /* the world's counter after frame 10 */
    uint64_t allocations_last;
    rvw_total occlusion_culled, unsampled_culled, partition_hidden, hlod_refined, journal_deltas;
    rvw_total pages_requested, pages_evicted;
    uint64_t lod_mask;
    bool lod_joined;
    const char *stages;            /* rvw_drive_stages() */
    /* maps only */
    bool has_map;
    rvw_bsp_stats map;
    rvw_path_stats path;
    rvw_candidate_counts candidates;
    rvw_feed_totals feed;
} rvw_run;

/* Sizes the per-frame arrays for frames frames. False when memory ran out. */
bool rvw_run_init(rvw_run *run, uint32_t frames);
/* Records one frame's rvis result (and, when verified, the oracle's figures). */
void rvw_run_record(rvw_run *run, uint32_t frame, const rvw_frame_result *r, double frame_us);
void rvw_run_record_verified(rvw_run *run, uint32_t truly_visible, uint32_t drawn,
                             double oracle_us);
/* Records one frame's depth feed (cut: the camera jumped to this frame) and the time the
 * walk took to draw the next one (draw_us < 0: none drawn). */
void rvw_run_record_feed(rvw_run *run, const rvw_feed_result *f, bool cut, double stage_us, double draw_us);
void rvw_run_record_bounds(rvw_run *run, uint32_t ideal_occluder_drawn, uint32_t ideal_box_drawn,
                           uint32_t ideal_misses, uint32_t pvs_frustum, uint32_t pvs_misses, uint32_t drawn_unsampled);
void rvw_run_free(rvw_run *run);

/* The report as one JSON object (docs/walk.md lists the keys; null where a stage is not
 * joined). */
void rvw_report_json(FILE *out, const rvw_run *run);
/* A few lines for people. */
void rvw_report_human(FILE *out, const rvw_run *run);

/* Writes s as a JSON string literal. */
void rvw_json_string(FILE *out, const char *s);

/* Percentile p (0..100, nearest rank) of n values (copied, not reordered). -1 if n = 0. */
double rvw_percentile(const double *values, uint32_t n, double p);

#endif
