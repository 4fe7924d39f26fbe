/* rvis-view: what one frame does, shared by the headless run and the window: ask rvis
 * (through the walk's driver) what to draw, draw it, let the GPU judge the culls, compare
 * with the walk's oracle, and keep the run's figures. */
#ifndef RVV_APP_H
#define RVV_APP_H

#include "city.h"
#include "drive.h"
#include "judge.h"
#include "level.h"
#include "overlay.h"
#include "reference.h"
#include "render.h"
#include "view.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RVV_SABOTAGE_NONE (-1)
#define RVV_SABOTAGE_AUTO (-2)

typedef struct rvv_options {
    const char *map;              /* NULL: the embedded city */
    bool headless;
    uint32_t frames;              /* 0: the whole path (headless) */
    uint32_t start;               /* headless: the first path frame */
    bool gpu_verify;
    const char *screenshot_dir;
    uint32_t every;               /* screenshot every Nth frame */
    const char *json;
    int64_t sabotage;             /* object index, RVV_SABOTAGE_NONE or RVV_SABOTAGE_AUTO */
    uint32_t width, height;       /* viewport (rvis culls for it) */
    uint32_t occlusion_width;     /* rvis's occlusion buffer width; 0 = off */
    uint32_t fine_tests;          /* rv_occlusion_desc.fine_tests */
    bool cull_unsampled;          /* rv_view.cull_unsampled */
    bool oracle;                  /* compare the GPU's visibility with the walk's oracle */
    rvv_colouring colouring;
    int64_t freeze_at;            /* headless: freeze culling at this frame; -1 = never */
    bool quiet;
    bool overlay;
} rvv_options;

/* One false cull or disagreement line at most this many times per run. */
#define RVV_MAX_LINES 20

/* Where the GPU and the walk's oracle disagree about an object's visibility, by cause. */
typedef struct rvv_oracle_stats {
    uint32_t frames;
    uint64_t compared;            /* object-frames compared (every object not left out) */
    uint64_t visible_both, hidden_both;
    uint64_t oracle_only_raster;  /* oracle saw pixels, GL rasterised no sample of it at all */
    uint64_t oracle_only_depth;   /* GL rasterised samples, but something was nearer in GL */
    uint64_t gpu_only_tie;        /* GPU visible only through equal depth with another object:
                                     against the scene's depth without it, LEQUAL passes, LESS not */
    uint64_t gpu_only_strict;     /* GPU visible with a strictly nearest sample */
    uint32_t max[4];              /* per cause above, in order: the most oracle pixels (oracle
                                     only) or GPU samples (GPU only) of one object-frame */
    uint64_t oracle_false_culls;  /* rvis culled, the oracle sees it (rvis-walk's false cull) */
    uint64_t gpu_false_culls;     /* rvis culled, the GPU sees it (this frame set) */
    uint32_t lines[4];            /* lines printed per cause, in the order above */
} rvv_oracle_stats;

typedef struct rvv_app {
    const rvv_options *opt;
    rvw_level *level;
    const rvw_city *city;         /* NULL for a map */
    rvw_drive *drive;
    uint32_t occlusion_width;     /* the drive's current setting */
    rvv_renderer renderer;
    rvv_overlay overlay;
    rvv_judge judge;
    bool judge_ready;

    /* the culling frame on screen: the last one rvis made, or a frozen copy */
    rvw_view cull_view;
    uint8_t *verdict;             /* per object (rvw_verdict), sabotage applied */
    rvw_draw *draws;
    uint32_t draw_count, draw_capacity;
    rvw_frame_result result;      /* counters of that frame (verdict points at ours) */
    uint32_t occluders_added, occluders_rasterised;
    int64_t sabotaged;            /* object forced culled in that frame, -1 none */
    bool frozen;

    /* scratch */
    uint8_t *include;
    uint32_t *asked, *results, *results2;
    uint32_t *disagree;

    /* this frame's figures for the overlay */
    double last_frame_us, last_gpu_ms;
    uint32_t last_calls;
    uint32_t last_queries, last_false;
    bool judged;

    /* run totals */
    uint64_t gpu_queries, gpu_false_culls, gpu_frames;
    uint64_t sabotaged_frames;    /* frames in which --sabotage-object overruled rvis */
    uint64_t gpu_unconfirmed;     /* passed in a run of queries, not when asked alone */
    int64_t first_false_frame, first_false_object;
    uint64_t unexplained;
    uint64_t drawn_sum, frustum_sum, occlusion_sum, excluded_sum;
    double *frame_us, *gpu_ms, *judge_ms;   /* per culled, drawn and judged frame */
    uint32_t frame_count, frame_cap, gpu_count, gpu_cap, judge_count, judge_cap;
    uint32_t screenshots;
    uint32_t false_lines;
    rvw_reference reference;
    bool reference_ready;
    rvv_oracle_stats oracle;
    char gl_renderer[128], gl_version[128], context[96];
} rvv_app;

/* Builds rvis's world for level (the walk's driver), the GL scene, the overlay and the
 * judge. A current GL 3.3 core context is needed. False with a reason in err. */
bool rvv_app_init(rvv_app *app, const rvv_options *opt, rvw_level *level, const rvw_city *city,
                  const char *context, char *err, size_t errlen);
void rvv_app_free(rvv_app *app);

/* Rebuilds rvis's world with occlusion width `width` (0 = off). */
bool rvv_app_set_occlusion(rvv_app *app, uint32_t width, char *err, size_t errlen);

/* One rvis frame for view: verdicts, draw list, sabotage, figures. view->frame must grow
 * from call to call. */
bool rvv_app_cull(rvv_app *app, const rvw_view *view, char *err, size_t errlen);

/* Moves the city's vehicles to frame (level and GPU copy). No-op for a map. */
void rvv_app_animate(rvv_app *app, uint32_t frame);

/* What the renderer submits when a stage is switched off in the window. */
typedef struct rvv_toggles {
    bool frustum_off, scene_order, outlines_frustum;
} rvv_toggles;

/* Draws the culling frame from camera into the bound framebuffer (width x height): the
 * scene, and when frozen the culled objects' outlines and the frozen frustum. */
void rvv_app_draw(rvv_app *app, const rvw_view *camera, uint32_t width, uint32_t height, const rvv_toggles *t);

/* The GPU judge on the culling frame (not when frozen). Leaves the judge's framebuffer
 * bound. */
bool rvv_app_judge(rvv_app *app);

/* Compares, object by object, the GPU's visibility with the walk's oracle on the culling
 * frame (after rvv_app_judge, which drew the depth). */
bool rvv_app_compare_oracle(rvv_app *app);

/* Draws the figures panel; extra lines (key help, say) are appended. */
void rvv_app_overlay(rvv_app *app, uint32_t width, uint32_t height, uint32_t frame, uint32_t frames,
                     const rvv_toggles *t, const char *const *extra, uint32_t extra_count);

/* Writes the screenshot of the bound framebuffer for frame into the screenshot dir. */
bool rvv_app_screenshot(rvv_app *app, uint32_t frame, uint32_t width, uint32_t height);

/* Draws once with every program and no figures kept, so shader compilation (llvmpipe
 * compiles on first use) is not counted in the first frame. Binds the judge's framebuffer. */
void rvv_app_warm_up(rvv_app *app, const rvw_view *view, uint32_t width, uint32_t height);

/* Freezes (true) or thaws the culling frame. */
void rvv_app_freeze(rvv_app *app, bool frozen);

/* The run's JSON report. */
void rvv_app_report_json(const rvv_app *app, FILE *out);
/* A few lines for people. */
void rvv_app_report_human(const rvv_app *app, FILE *out);

#endif
