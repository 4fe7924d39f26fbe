/* Frame benchmark: frame_city.
 *
 * rv_frame over the benchmark city (docs/bench-city.md): the 1,024 buildings are
 * persistent occluder nodes (occlusion width 256) under one bound-less root; the 100,000
 * objects are nodes (a sphere enclosing the box, and the box itself as a test box) under
 * 1,024 cell groups (30 m, the building grid) under 16 district groups (8 x 8 cells); each
 * group carries a test box enclosing its objects. 600 frames of the city's camera walk.
 * Objects are created cell by cell, as a host loading a city by blocks would, so a cell's
 * nodes sit together in node storage. The same city with objects created in the
 * generator's (random) order is timed too (ours_generation_order_us): every cell's
 * children are then scattered through node storage.
 *
 * Baseline, in the same run: the flat scalar frustum loop a host would write without
 * rvis: every object's sphere against the six planes, early exit, visible indices written
 * to a draw list; no occlusion. ours and baseline are the median over ctx->reps walks of
 * the mean time per frame; the three are interleaved frame by frame so they share the
 * machine's noise.
 *
 * Extra fields: drawn_fraction = objects drawn / objects frustum-visible (by their
 * spheres, the baseline's count) over all frames (target <= 0.10); frustum_visible_mean,
 * drawn_mean, occlusion_culled_mean (groups and objects hidden by occluders, per frame),
 * occlusion_tested_mean (groups and objects tested), lod_culled_mean, nodes_visited_mean;
 * stage_*_us (median over walks of the mean per-frame stage time from rv_frame_view.stage_us);
 * steady_allocations (allocations and reallocations over every walk after the first). */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CITY_FRAMES 600
#define CELLS_PER_SIDE 32
#define CELLS_PER_DISTRICT 8
#define DISTRICTS_PER_SIDE (CELLS_PER_SIDE / CELLS_PER_DISTRICT)

static uint64_t monotonic_ns(void *user)
{
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The cell of the building grid (x, z) lies in, clamped like the city generator. */
static int cell_index(float v)
{
    int c = (int)floorf((v + 480.0f) / 30.0f);
    return c < 0 ? 0 : c > CELLS_PER_SIDE - 1 ? CELLS_PER_SIDE - 1 : c;
}

typedef struct city_scene {
    rv_world *world;
    rv_node *objects;      /* RVB_CITY_OBJECTS, by object index */
    uint64_t *sorted_ids;  /* object node ids, sorted (drawn node -> object index) */
    uint32_t *sorted_index;
} city_scene;

static void grow_box(float mn[3], float mx[3], const rvb_box *b)
{
    for (int k = 0; k < 3; k++) {
        mn[k] = b->min[k] < mn[k] ? b->min[k] : mn[k];
        mx[k] = b->max[k] > mx[k] ? b->max[k] : mx[k];
    }
}

static int cmp_pair(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return (x > y) - (x < y);
}

/* The object's sphere (centre of the box, radius its half diagonal, rounded up). */
static void object_sphere(const rvb_box *b, float out[4])
{
    float h[3];
    for (int k = 0; k < 3; k++) {
        out[k] = 0.5f * (b->min[k] + b->max[k]);
        h[k] = 0.5f * (b->max[k] - b->min[k]);
    }
    out[3] = sqrtf(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]) * (1.0f + 1e-6f);
}

static int object_cell(const rvb_box *b)
{
    return cell_index(0.5f * (b->min[2] + b->max[2])) * CELLS_PER_SIDE + cell_index(0.5f * (b->min[0] + b->max[0]));
}

#define TRY(call)                                                                                            \
    do {                                                                                                      \
        rv_result r_ = (call);                                                                                \
        if (r_ != RV_OK) {                                                                                    \
            fprintf(stderr, "rvis-bench: frame_city: %s failed: %s\n", #call, rv_result_string(r_));          \
            return false;                                                                                     \
        }                                                                                                     \
    } while (0)

/* Builds the city world, creating objects in the order given (object indices). */
static bool build_scene(const rvb_city *city, const uint32_t *order, city_scene *s)
{
    rv_world_desc d;
    memset(&d, 0, sizeof d);
    d.node_capacity = RVB_CITY_OBJECTS + RVB_CITY_BUILDINGS + 2048;
    d.occlusion.width = 256;
    d.clock_ns = monotonic_ns;
    TRY(rv_world_create(&d, &s->world));
    rv_world *w = s->world;

    /* Buildings: occluder nodes under a root without geometry (the walk skips it at once). */
    rv_node buildings;
    TRY(rv_node_create(w, RV_NODE_NONE, &buildings));
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++) {
        rv_node b;
        TRY(rv_node_create(w, buildings, &b));
        TRY(rv_node_set_occluder_box(w, b, city->buildings[i].min, city->buildings[i].max));
    }

    /* Districts and cells (identity transforms), then objects placed at their box centres. */
    rv_node districts[DISTRICTS_PER_SIDE * DISTRICTS_PER_SIDE];
    rv_node cells[CELLS_PER_SIDE * CELLS_PER_SIDE];
    for (int dj = 0; dj < DISTRICTS_PER_SIDE; dj++)
        for (int di = 0; di < DISTRICTS_PER_SIDE; di++)
            TRY(rv_node_create(w, RV_NODE_NONE, &districts[dj * DISTRICTS_PER_SIDE + di]));
    for (int cj = 0; cj < CELLS_PER_SIDE; cj++)
        for (int ci = 0; ci < CELLS_PER_SIDE; ci++) {
            rv_node parent = districts[(cj / CELLS_PER_DISTRICT) * DISTRICTS_PER_SIDE + ci / CELLS_PER_DISTRICT];
            TRY(rv_node_create(w, parent, &cells[cj * CELLS_PER_SIDE + ci]));
        }
    float cell_min[CELLS_PER_SIDE * CELLS_PER_SIDE][3], cell_max[CELLS_PER_SIDE * CELLS_PER_SIDE][3];
    for (int c = 0; c < CELLS_PER_SIDE * CELLS_PER_SIDE; c++)
        for (int k = 0; k < 3; k++) {
            cell_min[c][k] = INFINITY;
            cell_max[c][k] = -INFINITY;
        }
    for (uint32_t k = 0; k < RVB_CITY_OBJECTS; k++) {
        uint32_t n = order[k];
        const rvb_box *b = &city->objects[n];
        float sphere[4], half[3];
        object_sphere(b, sphere);
        for (int a = 0; a < 3; a++)
            half[a] = 0.5f * (b->max[a] - b->min[a]);
        int c = object_cell(b);
        rv_node o;
        TRY(rv_node_create(w, cells[c], &o));
        TRY(rv_node_set_position(w, o, sphere));
        const float origin[3] = { 0, 0, 0 };
        TRY(rv_node_set_bounds(w, o, origin, sphere[3]));
        float lo[3] = { -half[0], -half[1], -half[2] };
        TRY(rv_node_set_test_box(w, o, lo, half));
        grow_box(cell_min[c], cell_max[c], b);
        s->objects[n] = o;
    }
    /* Group test boxes: the union of the members' boxes (identity matrices all the way). */
    for (int dj = 0; dj < DISTRICTS_PER_SIDE; dj++)
        for (int di = 0; di < DISTRICTS_PER_SIDE; di++) {
            float mn[3] = { INFINITY, INFINITY, INFINITY }, mx[3] = { -INFINITY, -INFINITY, -INFINITY };
            for (int cj = dj * CELLS_PER_DISTRICT; cj < (dj + 1) * CELLS_PER_DISTRICT; cj++)
                for (int ci = di * CELLS_PER_DISTRICT; ci < (di + 1) * CELLS_PER_DISTRICT; ci++) {
                    int c = cj * CELLS_PER_SIDE + ci;
                    if (!(cell_min[c][0] <= cell_max[c][0]))
                        continue; /* an empty cell */
                    rvb_box cb = { { cell_min[c][0], cell_min[c][1], cell_min[c][2] },
                                   { cell_max[c][0], cell_max[c][1], cell_max[c][2] } };
                    grow_box(mn, mx, &cb);
                    TRY(rv_node_set_test_box(w, cells[c], cell_min[c], cell_max[c]));
                }
            if (mn[0] <= mx[0])
                TRY(rv_node_set_test_box(w, districts[dj * DISTRICTS_PER_SIDE + di], mn, mx));
        }
    TRY(rv_update_world(w));

    uint64_t *pairs = malloc(sizeof(uint64_t) * 2 * RVB_CITY_OBJECTS);
    if (!pairs)
        return false;
    for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++) {
        pairs[2 * n] = s->objects[n].id;
        pairs[2 * n + 1] = n;
    }
    qsort(pairs, RVB_CITY_OBJECTS, 2 * sizeof(uint64_t), cmp_pair);
    for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++) {
        s->sorted_ids[n] = pairs[2 * n];
        s->sorted_index[n] = (uint32_t)pairs[2 * n + 1];
    }
    free(pairs);
    return true;
}

static bool scene_alloc(city_scene *s)
{
    memset(s, 0, sizeof *s);
    s->objects = malloc(sizeof(rv_node) * RVB_CITY_OBJECTS);
    s->sorted_ids = malloc(sizeof(uint64_t) * RVB_CITY_OBJECTS);
    s->sorted_index = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    return s->objects && s->sorted_ids && s->sorted_index;
}

static void scene_free(city_scene *s)
{
    rv_world_destroy(s->world);
    free(s->objects);
    free(s->sorted_ids);
    free(s->sorted_index);
}

/* Object index of a drawn node, or -1 when it is not an object. */
static long object_of(const city_scene *s, rv_node node)
{
    size_t lo = 0, hi = RVB_CITY_OBJECTS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->sorted_ids[mid] < node.id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < RVB_CITY_OBJECTS && s->sorted_ids[lo] == node.id ? (long)s->sorted_index[lo] : -1;
}

/* The naive host loop: every sphere against every plane, early exit, visible indices out. */
__attribute__((noinline)) static uint32_t baseline_frame(const float vp[16], const float *spheres, uint32_t count,
                                                         uint32_t *draw_list)
{
    rv_frustum f;
    if (rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &f) != RV_OK)
        return 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        const float *s = spheres + 4 * (size_t)i;
        bool outside = false;
        for (int p = 0; p < 6; p++) {
            const float *pl = f.planes[p];
            if (pl[0] * s[0] + pl[1] * s[1] + pl[2] * s[2] + pl[3] < -s[3]) {
                outside = true;
                break;
            }
        }
        if (!outside)
            draw_list[n++] = i;
    }
    return n;
}

/* True when a sphere the baseline culled lies within float rounding of the frustum (the
 * frame's world spheres are padded by a few ulps, so it may keep such a sphere). */
static bool near_tangent(const float vp[16], const float *sphere)
{
    rv_frustum f;
    if (rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &f) != RV_OK)
        return false;
    for (int p = 0; p < 6; p++) {
        const float *pl = f.planes[p];
        float d = pl[0] * sphere[0] + pl[1] * sphere[1] + pl[2] * sphere[2] + pl[3];
        if (d < -sphere[3] * (1.0f + 1e-4f) - 1e-3f)
            return false;
    }
    return true;
}

static bool run_frame(rv_world *world, const rv_view *view, rv_frame_view *out, uint64_t *ns)
{
    uint64_t t0 = rvb_now_ns();
    rv_result r = rv_frame(world, view, out);
    *ns += rvb_now_ns() - t0;
    if (r != RV_OK)
        fprintf(stderr, "rvis-bench: frame_city: rv_frame: %s\n", rv_result_string(r));
    return r == RV_OK;
}

/* The view of frame f of the city's walk (eye and vp hold what it points to). */
static void city_view(int f, double time_ms, float eye[3], float vp[16], rv_view *view)
{
    rvb_city_camera(f, CITY_FRAMES, eye, vp);
    memset(view, 0, sizeof *view);
    view->view_projection = vp;
    view->eye = eye;
    view->viewport_width = 1920;
    view->viewport_height = 1080;
    view->fov_y = 60.0f * 3.14159265f / 180.0f;
    view->time_ms = time_ms;
}

static int frame_city(rvb_ctx *ctx, const rvb_city *city)
{
    const char *name = "frame_city";
    if (!rvb_begin_case(ctx, name))
        return 0;
    city_scene cell_order, generation_order;
    bool ok = scene_alloc(&cell_order);
    ok = scene_alloc(&generation_order) && ok;
    float *spheres = malloc(sizeof(float) * 4 * RVB_CITY_OBJECTS);
    uint32_t *order = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    uint32_t *draw_list = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    uint8_t *visible = calloc(RVB_CITY_OBJECTS, 1);
    int reps = ctx->reps;
    double *ours_us = calloc((size_t)reps, sizeof(double)), *base_us = calloc((size_t)reps, sizeof(double));
    double *scattered_us = calloc((size_t)reps, sizeof(double));
    double *stage_mean = calloc((size_t)reps * RV_STAGE_COUNT, sizeof(double));
    int status = 1;
    if (!ok || !spheres || !order || !draw_list || !visible || !ours_us || !base_us || !scattered_us ||
        !stage_mean) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        goto done;
    }
    for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++) {
        object_sphere(&city->objects[n], spheres + 4 * (size_t)n);
        order[n] = n;
    }
    if (!build_scene(city, order, &generation_order))
        goto done;
    /* Cell by cell (a counting sort by cell; generation order within a cell). */
    {
        uint32_t start[CELLS_PER_SIDE * CELLS_PER_SIDE + 1] = { 0 };
        for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++)
            start[object_cell(&city->objects[n]) + 1]++;
        for (int c = 0; c < CELLS_PER_SIDE * CELLS_PER_SIDE; c++)
            start[c + 1] += start[c];
        for (uint32_t n = 0; n < RVB_CITY_OBJECTS; n++)
            order[start[object_cell(&city->objects[n])]++] = n;
    }
    if (!build_scene(city, order, &cell_order))
        goto done;

    uint64_t frustum_visible = 0, drawn = 0, occlusion_culled = 0, drawn_outside = 0;
    uint64_t occlusion_tested = 0, lod_culled = 0, visited = 0;
    uint64_t steady_before = 0;
    double time_ms = 0;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t ours_ns = 0, base_ns = 0, scattered_ns = 0;
        double stage_sum[RV_STAGE_COUNT] = { 0 };
        if (rep == 1) {
            rv_alloc_stats a = rv_world_alloc_stats(cell_order.world);
            steady_before = a.allocations + a.reallocations;
        }
        for (int f = 0; f < CITY_FRAMES; f++) {
            float eye[3], vp[16];
            rv_view view;
            city_view(f, time_ms, eye, vp, &view);
            time_ms += 1000.0 / 60.0;

            uint64_t t0 = rvb_now_ns();
            uint32_t visible_count = baseline_frame(vp, spheres, RVB_CITY_OBJECTS, draw_list);
            base_ns += rvb_now_ns() - t0;
            rv_frame_view v, v2;
            if (!run_frame(cell_order.world, &view, &v, &ours_ns) ||
                !run_frame(generation_order.world, &view, &v2, &scattered_ns))
                goto done;
            for (int k = 0; k < RV_STAGE_COUNT; k++)
                stage_sum[k] += v.stage_us[k];
            if (rep == 0) {
                /* Every drawn object must be one the frustum sees (outside the timing). */
                for (uint32_t i = 0; i < visible_count; i++)
                    visible[draw_list[i]] = 1;
                for (uint32_t i = 0; i < v.opaque_count; i++) {
                    long o = object_of(&cell_order, v.opaque[i].node);
                    drawn_outside += o < 0 || (!visible[o] && !near_tangent(vp, spheres + 4 * o));
                }
                for (uint32_t i = 0; i < visible_count; i++)
                    visible[draw_list[i]] = 0;
                frustum_visible += visible_count;
                drawn += v.opaque_count + v.translucent_count;
                occlusion_culled += v.counts.occlusion_culled;
                occlusion_tested += v.counts.occlusion_tested;
                lod_culled += v.counts.lod_culled;
                visited += v.counts.nodes_visited;
            }
        }
        ours_us[rep] = (double)ours_ns / 1e3 / CITY_FRAMES;
        base_us[rep] = (double)base_ns / 1e3 / CITY_FRAMES;
        scattered_us[rep] = (double)scattered_ns / 1e3 / CITY_FRAMES;
        for (int k = 0; k < RV_STAGE_COUNT; k++)
            stage_mean[(size_t)k * reps + rep] = stage_sum[k] / CITY_FRAMES;
    }
    if (drawn_outside) {
        fprintf(stderr, "rvis-bench: %s: %llu drawn items are not frustum-visible objects\n", name,
                (unsigned long long)drawn_outside);
        goto done;
    }
    rv_alloc_stats a = rv_world_alloc_stats(cell_order.world);
    uint64_t steady = reps > 1 ? a.allocations + a.reallocations - steady_before : 0;

    char extra[1024];
    int len = snprintf(extra, sizeof extra,
                       ", \"drawn_fraction\": %.5f, \"frustum_visible_mean\": %.1f, \"drawn_mean\": %.1f, "
                       "\"occlusion_culled_mean\": %.1f, \"occlusion_tested_mean\": %.1f, \"lod_culled_mean\": %.1f, "
                       "\"nodes_visited_mean\": %.1f, \"ours_generation_order_us\": %.4g, \"frames\": %d, "
                       "\"occlusion_width\": 256, \"steady_allocations\": %llu",
                       frustum_visible ? (double)drawn / (double)frustum_visible : 0.0,
                       (double)frustum_visible / CITY_FRAMES, (double)drawn / CITY_FRAMES,
                       (double)occlusion_culled / CITY_FRAMES, (double)occlusion_tested / CITY_FRAMES,
                       (double)lod_culled / CITY_FRAMES, (double)visited / CITY_FRAMES,
                       rvb_median(scattered_us, reps), CITY_FRAMES,
                       (unsigned long long)steady);
    for (int k = 0; k < RV_STAGE_COUNT && len > 0 && (size_t)len < sizeof extra; k++)
        len += snprintf(extra + len, sizeof extra - (size_t)len, ", \"stage_%s_us\": %.4g", rvb_stage_names[k],
                        rvb_median(stage_mean + (size_t)k * reps, reps));
    if (len > 0 && (size_t)len < sizeof extra)
        snprintf(extra + len, sizeof extra - (size_t)len, ", \"target_speedup\": 1, \"target_drawn_fraction\": 0.1");
    rvb_report(ctx, name, "us/frame", rvb_median(ours_us, reps), rvb_median(base_us, reps), extra);
    status = 0;
done:
    scene_free(&cell_order);
    scene_free(&generation_order);
    free(spheres);
    free(order);
    free(draw_list);
    free(visible);
    free(ours_us);
    free(base_us);
    free(scattered_us);
    free(stage_mean);
    return status;
}

int rvb_frame(rvb_ctx *ctx); /* called by the generated registry */

int rvb_frame(rvb_ctx *ctx)
{
    if (ctx->only && !strstr("frame_city", ctx->only))
        return 0;
    rvb_city city;
    if (!rvb_city_generate(&city))
        return 1;
    int failures = frame_city(ctx, &city);
    rvb_city_free(&city);
    return failures;
}
