/* Frame benchmarks on a generic scene: frame_flat_100k, frame_grouped_100k, frame_1m.
 *
 * The crate field: N crates (local bounds sphere radius 0.87, test box +-0.5) on a square
 * XZ grid (side ceil(sqrt(N)), filled row by row), spacing 2.5, y = 0.5, centred on the
 * origin; each crate is a node under one root and carries the LOD ladder {0.2, 0.06,
 * 0.015} radians. 64 occluder boxes 20 x 8 x 0.5 (x, y, z; standing on y = 0) at the
 * centres of an 8 x 8 lattice of cells over the field, as persistent occluder nodes under
 * a root of their own. A camera at height 1.7 walks the field's diagonal from the (-x, -z)
 * corner to the (+x, +z) corner over 600 frames while turning 0.5 degrees a frame
 * (starting along the diagonal); vertical fov 60 degrees, 16:9, near 0.1, far 1000,
 * OpenGL clip, viewport 1920 x 1080, occlusion width 256, 60 frames a second.
 *   frame_flat_100k     N = 100,000, flat under the root
 *   frame_grouped_100k  the same after rv_group_spatially(root, default leaf size)
 *   frame_1m            N = 1,000,000, flat
 *
 * Baseline, in the same run: what a host would write without rvis, done well. Per object
 * it keeps its world box and sphere; per frame it tests every box against the six planes
 * (scalar, nearest-vertex, early exit), picks a level by apparent size for the visible ones
 * (r / d against the precomputed sin(threshold / 2): no trigonometry per object), drops
 * those past the ladder and sorts the rest front to back with qsort. No occlusion.
 *
 * ours is rv_frame without a job system (the serial path); workers_1_us and workers_2_us
 * are the same frames on worlds given a pthread job system of one and two workers (the
 * calling thread is worker 0). Each is the median over the repetitions of the mean time
 * per frame; baseline and the three worlds are interleaved frame by frame so they share
 * the machine's noise. workers_1_us and workers_2_us are always wall time (the workers run
 * on other threads); ours and the baseline follow --cpu-clock.
 *
 * Extra fields: frustum_visible_mean (the baseline's box test), baseline_drawn_mean,
 * drawn_mean, occlusion_culled_mean, lod_culled_mean, steady_allocations (allocations and
 * reallocations of the three worlds over every repetition after the first), digests_equal
 * (the three worlds published the same view, by rv_frame_view_digest, in every frame),
 * stage_*_us (mean per-frame stage times from rv_frame_view.stage_us, median over the
 * repetitions, of a fourth world: serial, the same frames, given a clock; the clock's
 * calls stay out of the three timed worlds). */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include "bench_jobs.h"
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CRATE_FRAMES 600
#define CRATE_SPACING 2.5f
#define CRATE_RADIUS 0.87f
#define OCCLUDER_LATTICE 8
#define LADDER_COUNT 3
static const float ladder_thresholds[LADDER_COUNT] = { 0.2f, 0.06f, 0.015f };

/* What the host keeps per object without rvis. */
typedef struct host_object {
    float min[3], max[3];
    float center[3], radius;
} host_object;

typedef struct host_item {
    float depth;
    uint32_t object;
    uint32_t level;
} host_item;

typedef struct crate_field {
    uint32_t count, side;
    float half;               /* the field spans [-half, half] on x and z (crate centres) */
    host_object *objects;
} crate_field;

/* Worlds measured side by side: serial, one worker, two workers. */
enum { WORLD_SERIAL, WORLD_ONE, WORLD_TWO, WORLD_COUNT };

typedef struct crate_world {
    rv_world *world;
    uint32_t first_crate;     /* slot of crate 0; crate k is slot first_crate + k */
} crate_world;

static void crate_position(const crate_field *f, uint32_t k, float out[3])
{
    uint32_t i = k % f->side, j = k / f->side;
    out[0] = -f->half + CRATE_SPACING * (float)i;
    out[1] = 0.5f;
    out[2] = -f->half + CRATE_SPACING * (float)j;
}

static bool field_make(crate_field *f, uint32_t count)
{
    f->count = count;
    f->side = (uint32_t)ceil(sqrt((double)count));
    f->half = 0.5f * CRATE_SPACING * (float)(f->side - 1);
    f->objects = malloc(sizeof *f->objects * count);
    if (!f->objects)
        return false;
    for (uint32_t k = 0; k < count; k++) {
        host_object *o = &f->objects[k];
        crate_position(f, k, o->center);
        for (int a = 0; a < 3; a++) {
            o->min[a] = o->center[a] - 0.5f;
            o->max[a] = o->center[a] + 0.5f;
        }
        o->radius = CRATE_RADIUS;
    }
    return true;
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        rv_result r_ = (call);                                                                     \
        if (r_ != RV_OK) {                                                                         \
            fprintf(stderr, "rvis-bench: crates: %s failed: %s\n", #call, rv_result_string(r_));   \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

static uint64_t stage_clock_ns(void *user)
{
    (void)user;
    return rvb_wall_ns();
}

static bool world_make(const crate_field *f, bool grouped, const rv_job_system *jobs, bool clock, crate_world *out)
{
    rv_world_desc d;
    memset(&d, 0, sizeof d);
    d.node_capacity = f->count + 2 + OCCLUDER_LATTICE * OCCLUDER_LATTICE;
    d.occlusion.width = 256;
    if (jobs)
        d.jobs = *jobs;
    if (clock)
        d.clock_ns = stage_clock_ns;
    TRY(rv_world_create(&d, &out->world));
    rv_world *w = out->world;
    rv_node root, crate;
    TRY(rv_node_create(w, RV_NODE_NONE, &root));
    rv_lod_ladder ladder;
    TRY(rv_lod_ladder_make(ladder_thresholds, LADDER_COUNT, &ladder));
    const float origin[3] = { 0, 0, 0 }, lo[3] = { -0.5f, -0.5f, -0.5f }, hi[3] = { 0.5f, 0.5f, 0.5f };
    for (uint32_t k = 0; k < f->count; k++) {
        float p[3];
        crate_position(f, k, p);
        TRY(rv_node_create(w, root, &crate));
        if (k == 0)
            out->first_crate = (uint32_t)(crate.id & 0xFFFFFFu);
        TRY(rv_node_set_position(w, crate, p));
        TRY(rv_node_set_bounds(w, crate, origin, CRATE_RADIUS));
        TRY(rv_node_set_test_box(w, crate, lo, hi));
        TRY(rv_node_set_lod_ladder(w, crate, &ladder));
    }
    rv_node occluders, wall;
    TRY(rv_node_create(w, RV_NODE_NONE, &occluders));
    float cell = 2.0f * f->half / OCCLUDER_LATTICE;
    for (int j = 0; j < OCCLUDER_LATTICE; j++)
        for (int i = 0; i < OCCLUDER_LATTICE; i++) {
            float cx = -f->half + cell * ((float)i + 0.5f), cz = -f->half + cell * ((float)j + 0.5f);
            const float mn[3] = { cx - 10.0f, 0.0f, cz - 0.25f }, mx[3] = { cx + 10.0f, 8.0f, cz + 0.25f };
            TRY(rv_node_create(w, occluders, &wall));
            TRY(rv_node_set_occluder_box(w, wall, mn, mx));
        }
    TRY(rv_update_world(w));
    if (grouped) {
        TRY(rv_group_spatially(w, root, NULL, 0, 0, NULL));
        TRY(rv_update_world(w));
    }
    return true;
}

/* Frame f of the walk: eye, forward, view and projection (column-major, OpenGL clip). */
typedef struct crate_camera {
    float eye[3], forward[3];
    float view[16], projection[16];
} crate_camera;

static void camera_of(const crate_field *f, int frame, crate_camera *c)
{
    const float pi = 3.14159265358979f;
    float t = (float)frame / (float)(CRATE_FRAMES - 1);
    c->eye[0] = -f->half + 2.0f * f->half * t;
    c->eye[1] = 1.7f;
    c->eye[2] = -f->half + 2.0f * f->half * t;
    float yaw = (45.0f + 0.5f * (float)frame) * pi / 180.0f;
    float fwd[3] = { cosf(yaw), 0, sinf(yaw) }, up[3] = { 0, 1, 0 };
    memcpy(c->forward, fwd, sizeof fwd);
    float s[3] = { fwd[1] * up[2] - fwd[2] * up[1], fwd[2] * up[0] - fwd[0] * up[2], fwd[0] * up[1] - fwd[1] * up[0] };
    float sl = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    for (int k = 0; k < 3; k++)
        s[k] /= sl;
    float u[3] = { s[1] * fwd[2] - s[2] * fwd[1], s[2] * fwd[0] - s[0] * fwd[2], s[0] * fwd[1] - s[1] * fwd[0] };
    const float *e = c->eye;
    float view[16] = { s[0], u[0], -fwd[0], 0, s[1], u[1], -fwd[1], 0, s[2], u[2], -fwd[2], 0,
                       -(s[0] * e[0] + s[1] * e[1] + s[2] * e[2]), -(u[0] * e[0] + u[1] * e[1] + u[2] * e[2]),
                       fwd[0] * e[0] + fwd[1] * e[1] + fwd[2] * e[2], 1 };
    float n = 0.1f, fa = 1000.0f, ty = 1.0f / tanf(30.0f * pi / 180.0f), aspect = 16.0f / 9.0f;
    float proj[16] = { ty / aspect, 0, 0, 0, 0, ty, 0, 0, 0, 0, (fa + n) / (n - fa), -1, 0, 0, 2 * fa * n / (n - fa), 0 };
    memcpy(c->view, view, sizeof view);
    memcpy(c->projection, proj, sizeof proj);
}

/* The frame's view of camera c (which it points into). */
static void crate_view(const crate_camera *c, double time_ms, rv_view *view)
{
    memset(view, 0, sizeof *view);
    view->view = c->view;
    view->projection = c->projection;
    view->viewport_width = 1920;
    view->viewport_height = 1080;
    view->time_ms = time_ms;
}

static int compare_items(const void *a, const void *b)
{
    float x = ((const host_item *)a)->depth, y = ((const host_item *)b)->depth;
    return (x > y) - (x < y);
}

/* The host's frame without rvis; returns the number of items drawn. */
__attribute__((noinline)) static uint32_t baseline_frame(const crate_camera *c, const host_object *objects,
                                                         uint32_t count, const float sin_half[LADDER_COUNT],
                                                         host_item *items, uint32_t *out_visible)
{
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += c->projection[k * 4 + r] * c->view[col * 4 + k];
            vp[col * 4 + r] = acc;
        }
    rv_frustum fr;
    if (rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &fr) != RV_OK)
        return 0;
    uint32_t n = 0, visible = 0;
    for (uint32_t i = 0; i < count; i++) {
        const host_object *o = &objects[i];
        bool outside = false;
        for (int p = 0; p < 6 && !outside; p++) {
            const float *pl = fr.planes[p];
            float x = pl[0] >= 0 ? o->max[0] : o->min[0];
            float y = pl[1] >= 0 ? o->max[1] : o->min[1];
            float z = pl[2] >= 0 ? o->max[2] : o->min[2];
            outside = pl[0] * x + pl[1] * y + pl[2] * z + pl[3] < 0;
        }
        if (outside)
            continue;
        visible++;
        float dx = o->center[0] - c->eye[0], dy = o->center[1] - c->eye[1], dz = o->center[2] - c->eye[2];
        float d = sqrtf(dx * dx + dy * dy + dz * dz);
        uint32_t level = 0;
        if (d > o->radius) {
            float s = o->radius / d; /* sin of the half angle */
            for (int t = 0; t < LADDER_COUNT; t++)
                level += s < sin_half[t];
        }
        if (level >= LADDER_COUNT)
            continue;
        host_item it = { dx * c->forward[0] + dy * c->forward[1] + dz * c->forward[2], i, level };
        items[n++] = it;
    }
    qsort(items, n, sizeof *items, compare_items);
    *out_visible = visible;
    return n;
}

/* True when crate k lies within float rounding of the frustum (a box the baseline culled
 * may be kept by rvis's padded world bounds). */
static bool near_frustum(const rv_frustum *fr, const host_object *o)
{
    for (int p = 0; p < 6; p++) {
        const float *pl = fr->planes[p];
        float d = pl[0] * o->center[0] + pl[1] * o->center[1] + pl[2] * o->center[2] + pl[3];
        if (d < -o->radius - 1e-2f)
            return false;
    }
    return true;
}

typedef struct case_stats {
    uint64_t visible, baseline_drawn, drawn, occlusion_culled, lod_culled, wrong;
    uint64_t visited, frustum_tested, occlusion_tested;
    bool digests_equal;
} case_stats;

/* Every drawn item of the serial world must be a crate the frustum keeps. */
static void check_view(const crate_field *f, const crate_world *cw, const crate_camera *c, const rv_frame_view *v,
                       case_stats *st)
{
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += c->projection[k * 4 + r] * c->view[col * 4 + k];
            vp[col * 4 + r] = acc;
        }
    rv_frustum fr;
    if (rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &fr) != RV_OK)
        return;
    for (uint32_t i = 0; i < v->opaque_count; i++) {
        uint32_t slot = (uint32_t)(v->opaque[i].node.id & 0xFFFFFFu);
        uint32_t k = slot - cw->first_crate;
        st->wrong += k >= f->count || !near_frustum(&fr, &f->objects[k]);
    }
}

static int crate_case(rvb_ctx *ctx, const char *name, uint32_t count, bool grouped, int reps)
{
    if (!rvb_begin_case(ctx, name))
        return 0;
    int status = 1;
    crate_field field = { 0 };
    crate_world worlds[WORLD_COUNT], timed = { 0 };
    memset(worlds, 0, sizeof worlds);
    rvb_jobs *pools[WORLD_COUNT] = { NULL, rvb_jobs_create(1), rvb_jobs_create(2) };
    host_item *items = malloc(sizeof *items * count);
    double *times = calloc((size_t)reps * (WORLD_COUNT + 1), sizeof *times);
    double *stage_mean = calloc((size_t)reps * RV_STAGE_COUNT, sizeof *stage_mean);
    if (!field_make(&field, count) || !items || !times || !stage_mean || !pools[WORLD_ONE] || !pools[WORLD_TWO]) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        goto done;
    }
    for (int k = 0; k < WORLD_COUNT; k++) {
        rv_job_system js = pools[k] ? rvb_jobs_system(pools[k]) : (rv_job_system){ 0 };
        if (!world_make(&field, grouped, pools[k] ? &js : NULL, false, &worlds[k]))
            goto done;
    }
    if (!world_make(&field, grouped, NULL, true, &timed))
        goto done;
    float sin_half[LADDER_COUNT];
    for (int t = 0; t < LADDER_COUNT; t++)
        sin_half[t] = sinf(0.5f * ladder_thresholds[t]);

    case_stats st = { .digests_equal = true };
    uint64_t steady_before = 0;
    double time_ms = 0;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t ns[WORLD_COUNT + 1] = { 0 };
        double stage_sum[RV_STAGE_COUNT] = { 0 };
        if (rep == 1)
            for (int k = 0; k < WORLD_COUNT; k++) {
                rv_alloc_stats a = rv_world_alloc_stats(worlds[k].world);
                steady_before += a.allocations + a.reallocations;
            }
        for (int fr = 0; fr < CRATE_FRAMES; fr++, time_ms += 1000.0 / 60.0) {
            crate_camera c;
            camera_of(&field, fr, &c);
            uint64_t t0 = rvb_now_ns();
            uint32_t visible = 0, drawn = baseline_frame(&c, field.objects, count, sin_half, items, &visible);
            ns[WORLD_COUNT] += rvb_now_ns() - t0;
            rv_view view;
            crate_view(&c, time_ms, &view);
            rv_frame_view v[WORLD_COUNT];
            for (int k = 0; k < WORLD_COUNT; k++) {
                uint64_t (*now)(void) = k == WORLD_SERIAL ? rvb_now_ns : rvb_wall_ns;
                t0 = now();
                rv_result r = rv_frame(worlds[k].world, &view, &v[k]);
                ns[k] += now() - t0;
                if (r != RV_OK) {
                    fprintf(stderr, "rvis-bench: %s: rv_frame: %s\n", name, rv_result_string(r));
                    goto done;
                }
            }
            rv_frame_view tv;
            if (rv_frame(timed.world, &view, &tv) != RV_OK) {
                fprintf(stderr, "rvis-bench: %s: rv_frame (timed world) failed\n", name);
                goto done;
            }
            for (int k = 0; k < RV_STAGE_COUNT; k++)
                stage_sum[k] += tv.stage_us[k];
            uint64_t digest = rv_frame_view_digest(&v[WORLD_SERIAL]);
            for (int k = 1; k < WORLD_COUNT; k++)
                st.digests_equal = st.digests_equal && rv_frame_view_digest(&v[k]) == digest;
            if (rep == 0) {
                st.visible += visible;
                st.baseline_drawn += drawn;
                st.drawn += v[WORLD_SERIAL].opaque_count + v[WORLD_SERIAL].translucent_count;
                st.occlusion_culled += v[WORLD_SERIAL].counts.occlusion_culled;
                st.lod_culled += v[WORLD_SERIAL].counts.lod_culled;
                st.visited += v[WORLD_SERIAL].counts.nodes_visited;
                st.frustum_tested += v[WORLD_SERIAL].counts.frustum_tested;
                st.occlusion_tested += v[WORLD_SERIAL].counts.occlusion_tested;
                check_view(&field, &worlds[WORLD_SERIAL], &c, &v[WORLD_SERIAL], &st);
            }
        }
        for (int k = 0; k <= WORLD_COUNT; k++)
            times[(size_t)k * reps + rep] = (double)ns[k] / 1e3 / CRATE_FRAMES;
        for (int k = 0; k < RV_STAGE_COUNT; k++)
            stage_mean[(size_t)k * reps + rep] = stage_sum[k] / CRATE_FRAMES;
    }
    if (st.wrong) {
        fprintf(stderr, "rvis-bench: %s: %llu drawn items are not crates the frustum keeps\n", name,
                (unsigned long long)st.wrong);
        goto done;
    }
    uint64_t steady_after = 0;
    for (int k = 0; k < WORLD_COUNT; k++) {
        rv_alloc_stats a = rv_world_alloc_stats(worlds[k].world);
        steady_after += a.allocations + a.reallocations;
    }
    double med[WORLD_COUNT + 1];
    for (int k = 0; k <= WORLD_COUNT; k++)
        med[k] = rvb_median(times + (size_t)k * reps, reps);
    char extra[1280];
    int len = snprintf(extra, sizeof extra,
             ", \"workers_1_us\": %.4g, \"workers_2_us\": %.4g, \"workers_2_over_1\": %.3f, "
             "\"frustum_visible_mean\": %.1f, \"baseline_drawn_mean\": %.1f, \"drawn_mean\": %.1f, "
             "\"occlusion_culled_mean\": %.1f, \"lod_culled_mean\": %.1f, \"nodes_visited_mean\": %.1f, "
             "\"frustum_tested_mean\": %.1f, \"occlusion_tested_mean\": %.1f, \"steady_allocations\": %llu, "
             "\"digests_equal\": %s, \"frames\": %d, \"crates\": %u, \"grouped\": %s",
             med[WORLD_ONE], med[WORLD_TWO], med[WORLD_TWO] / med[WORLD_ONE], (double)st.visible / CRATE_FRAMES,
             (double)st.baseline_drawn / CRATE_FRAMES, (double)st.drawn / CRATE_FRAMES,
             (double)st.occlusion_culled / CRATE_FRAMES, (double)st.lod_culled / CRATE_FRAMES,
             (double)st.visited / CRATE_FRAMES, (double)st.frustum_tested / CRATE_FRAMES,
             (double)st.occlusion_tested / CRATE_FRAMES,
             (unsigned long long)(reps > 1 ? steady_after - steady_before : 0), st.digests_equal ? "true" : "false",
             CRATE_FRAMES, count, grouped ? "true" : "false");
    for (int k = 0; k < RV_STAGE_COUNT && len > 0 && (size_t)len < sizeof extra; k++)
        len += snprintf(extra + len, sizeof extra - (size_t)len, ", \"stage_%s_us\": %.4g", rvb_stage_names[k],
                        rvb_median(stage_mean + (size_t)k * reps, reps));
    rvb_report(ctx, name, "us/frame", med[WORLD_SERIAL], med[WORLD_COUNT], extra);
    status = st.digests_equal ? 0 : 1;
    if (!st.digests_equal)
        fprintf(stderr, "rvis-bench: %s: the worlds with workers published another view\n", name);
done:
    for (int k = 0; k < WORLD_COUNT; k++) {
        rv_world_destroy(worlds[k].world);
        rvb_jobs_destroy(pools[k]);
    }
    rv_world_destroy(timed.world);
    free(field.objects);
    free(items);
    free(times);
    free(stage_mean);
    return status;
}

int rvb_crates(rvb_ctx *ctx); /* called by the generated registry */

int rvb_crates(rvb_ctx *ctx)
{
    int failures = 0;
    failures += crate_case(ctx, "frame_flat_100k", 100000, false, ctx->reps) != 0;
    failures += crate_case(ctx, "frame_grouped_100k", 100000, true, ctx->reps) != 0;
    /* A million crates: three repetitions (each walks 600 frames on three worlds). */
    failures += crate_case(ctx, "frame_1m", 1000000, false, ctx->reps < 3 ? ctx->reps : 3) != 0;
    return failures;
}
