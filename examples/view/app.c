#include "app.h"

#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[RVW_OBJ_KIND_COUNT] = {
    "surface", "building", "prop", "part item", "vehicle", "terrain tile", "HLOD stand-in",
};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static bool push(double **values, uint32_t *count, uint32_t *capacity, double v)
{
    if (*count == *capacity) {
        uint32_t cap = *capacity ? 2 * *capacity : 256;
        double *fresh = realloc(*values, (size_t)cap * sizeof *fresh);
        if (!fresh)
            return false;
        *values = fresh;
        *capacity = cap;
    }
    (*values)[(*count)++] = v;
    return true;
}

/* The walk's driver for app's scene, with the options' culling settings. */
static bool make_drive(const rvv_app *app, uint32_t occlusion_width, rvw_drive **out, char *err, size_t errlen)
{
    rvw_drive_options d = { .occlusion_width = occlusion_width, .fine_tests = app->opt->fine_tests,
                            .cull_unsampled = app->opt->cull_unsampled };
    return rvw_drive_create(app->level, &d, out, err, errlen);
}

bool rvv_app_init(rvv_app *app, const rvv_options *opt, rvw_level *level, const rvw_city *city,
                  const char *context, char *err, size_t errlen)
{
    memset(app, 0, sizeof *app);
    app->opt = opt;
    app->level = level;
    app->city = city;
    app->sabotaged = -1;
    app->first_false_frame = app->first_false_object = -1;
    snprintf(app->context, sizeof app->context, "%s", context);
    snprintf(app->gl_renderer, sizeof app->gl_renderer, "%s", (const char *)glGetString(GL_RENDERER));
    snprintf(app->gl_version, sizeof app->gl_version, "%s", (const char *)glGetString(GL_VERSION));
    size_t n = level->object_count ? level->object_count : 1;
    app->verdict = calloc(n, 1);
    app->include = calloc(n, 1);
    app->asked = calloc(n, sizeof *app->asked);
    app->results = calloc(n, sizeof *app->results);
    app->results2 = calloc(2 * n, sizeof *app->results2); /* objects, then their results */
    app->disagree = calloc(n, sizeof *app->disagree);
    if (!app->verdict || !app->include || !app->asked || !app->results || !app->results2 || !app->disagree) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (opt->oracle || opt->sabotage == RVV_SABOTAGE_AUTO) {
        if (!rvw_reference_init(&app->reference, opt->width, opt->height)) {
            snprintf(err, errlen, "out of memory for the oracle");
            return false;
        }
        app->reference_ready = true;
    }
    app->occlusion_width = opt->occlusion_width;
    if (!make_drive(app, app->occlusion_width, &app->drive, err, errlen))
        return false;
    if (!rvv_renderer_init(&app->renderer, level, err, errlen) || !rvv_overlay_init(&app->overlay, err, errlen))
        return false;
    if (!rvv_judge_init(&app->judge, opt->width, opt->height, err, errlen))
        return false;
    app->judge_ready = true;
    return true;
}

void rvv_app_free(rvv_app *app)
{
    if (app->judge_ready)
        rvv_judge_free(&app->judge);
    rvv_overlay_free(&app->overlay);
    rvv_renderer_free(&app->renderer);
    rvw_drive_destroy(app->drive);
    if (app->reference_ready)
        rvw_reference_free(&app->reference);
    free(app->verdict);
    free(app->include);
    free(app->asked);
    free(app->results);
    free(app->results2);
    free(app->disagree);
    free(app->draws);
    free(app->frame_us);
    free(app->gpu_ms);
    free(app->judge_ms);
    memset(app, 0, sizeof *app);
}

bool rvv_app_set_occlusion(rvv_app *app, uint32_t width, char *err, size_t errlen)
{
    rvw_drive *fresh;
    if (!make_drive(app, width, &fresh, err, errlen))
        return false;
    rvw_drive_destroy(app->drive);
    app->drive = fresh;
    app->occlusion_width = width;
    return true;
}

void rvv_app_animate(rvv_app *app, uint32_t frame)
{
    if (!app->city)
        return;
    rvw_city_animate(app->city, app->level, frame);
    for (uint32_t v = 0; v < app->city->vehicle_count; v++)
        rvv_renderer_update_object(&app->renderer, app->city->vehicles[v].object);
}

/* Every object the frame did not leave out on purpose is in the judge's scene, as in the
 * walk's oracle: an object excluded on purpose (outside the committed slice, LOD "nothing",
 * a stand-in whose region is refined, ...) is not drawn this frame, so it hides nothing. */
static void fill_include(rvv_app *app)
{
    for (uint32_t i = 0; i < app->level->object_count; i++)
        app->include[i] = app->verdict[i] != RVW_EXCLUDED;
}

bool rvv_app_cull(rvv_app *app, const rvw_view *view, char *err, size_t errlen)
{
    const rvw_level *level = app->level;
    rvw_frame_result r;
    if (!rvw_drive_frame(app->drive, level, view, &r, err, errlen))
        return false;
    rvw_draw_list list;
    if (!rvw_drive_draw_list(app->drive, &list)) {
        snprintf(err, errlen, "out of memory reading the draw list");
        return false;
    }
    if (list.count > app->draw_capacity) {
        rvw_draw *fresh = realloc(app->draws, (size_t)list.count * sizeof *fresh);
        if (!fresh) {
            snprintf(err, errlen, "out of memory copying the draw list");
            return false;
        }
        app->draws = fresh;
        app->draw_capacity = list.count;
    }
    if (list.count) /* an empty list may have no array */
        memcpy(app->draws, list.draws, (size_t)list.count * sizeof *list.draws);
    app->draw_count = list.count;
    memcpy(app->verdict, r.verdict, level->object_count);
    app->occluders_added = list.occluders_added;
    app->occluders_rasterised = list.occluders_rasterised;
    app->cull_view = *view;
    app->unexplained += r.unexplained;

    /* --sabotage-object: overrule rvis on one drawn object. auto: the first object in the
     * draw order that is visible, as the walk's reference rasteriser (not GL) sees it, so a
     * judge that checks nothing fails on every frame; the first item drawn may itself be
     * hidden (the nearest sphere centre is not always in sight). */
    app->sabotaged = -1;
    int64_t s = app->opt->sabotage;
    if (s == RVV_SABOTAGE_AUTO && app->draw_count) {
        s = app->draws[0].object;
        fill_include(app);
        rvw_depth_convention clip = { false, false };
        if (app->reference_ready &&
            rvw_reference_render(&app->reference, level, view->view_projection, clip, app->include) > 0)
            for (uint32_t k = 0; k < app->draw_count; k++)
                if (app->reference.pixels[app->draws[k].object]) {
                    s = app->draws[k].object;
                    break;
                }
    }
    if (s >= 0 && (uint64_t)s < level->object_count && app->verdict[s] == RVW_DRAWN) {
        uint32_t kept = 0;
        for (uint32_t k = 0; k < app->draw_count; k++)
            if (app->draws[k].object != (uint32_t)s)
                app->draws[kept++] = app->draws[k];
        app->draw_count = kept;
        app->verdict[s] = RVW_CULLED_FRUSTUM;
        r.drawn--;
        r.frustum_visible--;
        app->sabotaged = s;
        app->sabotaged_frames++;
    }
    r.verdict = app->verdict;
    app->result = r;
    app->last_frame_us = r.frame_us;
    push(&app->frame_us, &app->frame_count, &app->frame_cap, r.frame_us);
    uint32_t frustum = 0;
    for (uint32_t i = 0; i < level->object_count; i++)
        frustum += app->verdict[i] == RVW_CULLED_FRUSTUM;
    app->drawn_sum += r.drawn;
    app->frustum_sum += frustum;
    app->occlusion_sum += (uint64_t)(r.frustum_visible - r.drawn);
    app->excluded_sum += r.excluded;
    app->judged = false;
    return true;
}

void rvv_app_warm_up(rvv_app *app, const rvw_view *view, uint32_t width, uint32_t height)
{
    /* llvmpipe compiles a shader variant on its first draw under each state: without this
     * the first frame's draw time would be mostly compilation */
    uint32_t n = app->level->object_count < 64 ? app->level->object_count : 64;
    rvw_draw draws[64];
    for (uint32_t i = 0; i < n; i++)
        draws[i] = (rvw_draw){ i, 0, 1.0f, false };
    memset(app->verdict, RVW_CULLED_OCCLUSION, app->level->object_count);
    rvv_scene_pass pass = { .camera = view, .draws = draws, .draw_count = n, .verdict = app->verdict };
    rvv_render_scene(&app->renderer, &pass, width, height);
    rvv_render_outlines(&app->renderer, view, app->verdict, true, true);
    fill_include(app);
    rvv_judge_depth(&app->judge, &app->renderer, view, app->include);
    if (n)
        rvv_judge_query(&app->judge, &app->renderer, &(uint32_t){ 0 }, 1, GL_ANY_SAMPLES_PASSED, GL_LEQUAL, app->results);
    glFinish();
    memset(app->verdict, RVW_DRAWN, app->level->object_count);
}

void rvv_app_freeze(rvv_app *app, bool frozen)
{
    app->frozen = frozen;
    if (frozen)
        app->judged = false; /* the judge checks live frames only */
}

void rvv_app_draw(rvv_app *app, const rvw_view *camera, uint32_t width, uint32_t height, const rvv_toggles *t)
{
    rvv_scene_pass pass = {
        .camera = camera, .draws = app->draws, .draw_count = app->draw_count, .verdict = app->verdict,
        .colouring = app->opt->colouring, .scene_order = t && t->scene_order,
        .draw_frustum_culled = t && t->frustum_off,
    };
    /* The draw's time from one glFinish to the next. On llvmpipe the "GPU" is these CPU
     * threads, and its GL_TIME_ELAPSED counts whatever was still queued (its first query
     * reads garbage), so the wall time of the drained pipeline is the honest figure. */
    glFinish();
    double t0 = now_us();
    app->last_calls = rvv_render_scene(&app->renderer, &pass, width, height);
    if (app->frozen) {
        rvv_render_outlines(&app->renderer, camera, app->verdict, !t || t->outlines_frustum, true);
        float reach = 0;
        for (int k = 0; k < 3; k++) {
            float e = app->level->bounds.max[k] - app->level->bounds.min[k];
            reach += e * e;
        }
        rvv_render_frustum(&app->renderer, camera, &app->cull_view, 0.2f * sqrtf(reach));
    }
    glFinish();
    app->last_gpu_ms = (now_us() - t0) * 1e-3;
    push(&app->gpu_ms, &app->gpu_count, &app->gpu_cap, app->last_gpu_ms);
}

static const char *cull_name(const rvv_app *app, uint32_t object, uint8_t verdict)
{
    if ((int64_t)object == app->sabotaged)
        return "--sabotage-object (rvis drew it)";
    return verdict == RVW_CULLED_OCCLUSION ? "occlusion" : "the frustum";
}

bool rvv_app_judge(rvv_app *app)
{
    if (app->frozen)
        return true;
    const rvw_level *level = app->level;
    double t0 = now_us();
    fill_include(app);
    rvv_judge_depth(&app->judge, &app->renderer, &app->cull_view, app->include);
    uint32_t n = 0;
    for (uint32_t i = 0; i < level->object_count; i++)
        if ((app->verdict[i] == RVW_CULLED_FRUSTUM || app->verdict[i] == RVW_CULLED_OCCLUSION) &&
            level->objects[i].triangle_count)
            app->asked[n++] = i;
    if (!rvv_judge_query(&app->judge, &app->renderer, app->asked, n, GL_ANY_SAMPLES_PASSED, GL_LEQUAL, app->results))
        return false;
    uint32_t false_culls = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!app->results[k])
            continue;
        uint32_t o = app->asked[k];
        /* A passing sample is asked again alone, after the pipeline drained: a driver that
         * miscounts inside a long run of queries (judge.c) must not pass for rvis's fault.
         * Both answers are real queries; a disagreement is counted and named. */
        uint32_t again = 0;
        glFinish();
        if (!rvv_judge_query(&app->judge, &app->renderer, &o, 1, GL_ANY_SAMPLES_PASSED, GL_LEQUAL, &again))
            return false;
        app->gpu_queries++;
        if (!again) {
            app->gpu_unconfirmed++;
            fprintf(stderr, "rvis-view: frame %u: object %u passed its query in the run of %u but not alone; "
                            "not counted as a false cull\n", app->cull_view.frame, o, n);
            continue;
        }
        false_culls++;
        if (app->gpu_false_culls + false_culls == 1) {
            app->first_false_frame = app->cull_view.frame;
            app->first_false_object = o;
        }
        if (app->false_lines < RVV_MAX_LINES) {
            app->false_lines++;
            fprintf(stderr, "rvis-view: GPU FALSE CULL at frame %u: object %u (%s) culled by %s, "
                            "yet samples of it pass GL_LEQUAL against the whole scene's depth\n",
                    app->cull_view.frame, o, kind_names[level->objects[o].kind],
                    cull_name(app, o, app->verdict[o]));
        }
    }
    app->last_queries = n;
    app->last_false = false_culls;
    app->gpu_queries += n;
    app->gpu_false_culls += false_culls;
    app->gpu_frames++;
    app->judged = true;
    push(&app->judge_ms, &app->judge_count, &app->judge_cap, (now_us() - t0) * 1e-3);
    return true;
}

bool rvv_app_compare_oracle(rvv_app *app)
{
    if (app->frozen || !app->reference_ready)
        return true;
    const rvw_level *level = app->level;
    rvv_oracle_stats *st = &app->oracle;
    rvw_depth_convention clip = { false, false };
    if (rvw_reference_render(&app->reference, level, app->cull_view.view_projection, clip, app->include) < 0)
        return false;
    const uint32_t *pixels = app->reference.pixels;
    /* every object in the scene: how many samples of it are nearest (or tied) on the GPU */
    uint32_t n = 0;
    for (uint32_t i = 0; i < level->object_count; i++)
        if (app->include[i] && level->objects[i].triangle_count)
            app->asked[n++] = i;
    if (!rvv_judge_query(&app->judge, &app->renderer, app->asked, n, GL_SAMPLES_PASSED, GL_LEQUAL, app->results))
        return false;
    uint32_t oracle_only = 0, gpu_only = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t o = app->asked[k];
        bool oracle = pixels[o] > 0, gpu = app->results[k] > 0;
        bool culled = app->verdict[o] == RVW_CULLED_FRUSTUM || app->verdict[o] == RVW_CULLED_OCCLUSION;
        st->compared++;
        st->oracle_false_culls += culled && oracle;
        st->gpu_false_culls += culled && gpu;
        if (oracle && gpu)
            st->visible_both++;
        else if (!oracle && !gpu)
            st->hidden_both++;
        else if (oracle)
            app->disagree[oracle_only++] = k;
        else
            app->disagree[n - 1 - gpu_only++] = k;  /* from the end: the two lists share it */
    }
    /* Why they disagree. Oracle only: does GL rasterise any sample of the object at all
     * (GL_ALWAYS)? GPU only: an object always ties with its own depth, so the scene's depth
     * is drawn again without it, and the object asked with GL_LESS: nothing passing means
     * its samples pass only through equal depth with another object. */
    for (int side = 0; side < 2; side++) {
        uint32_t count = side ? gpu_only : oracle_only;
        for (uint32_t d = 0; d < count; d++)
            app->results2[d] = app->asked[app->disagree[side ? n - 1 - d : d]];
        uint32_t *second = app->results2 + count;
        if (!side && count &&
            !rvv_judge_query(&app->judge, &app->renderer, app->results2, count, GL_SAMPLES_PASSED, GL_ALWAYS, second))
            return false;
        for (uint32_t d = 0; side && d < count; d++) {
            uint32_t o = app->results2[d];
            app->include[o] = 0;
            rvv_judge_depth(&app->judge, &app->renderer, &app->cull_view, app->include);
            app->include[o] = 1;
            if (!rvv_judge_query(&app->judge, &app->renderer, &o, 1, GL_SAMPLES_PASSED, GL_LESS, second + d))
                return false;
        }
        for (uint32_t d = 0; d < count; d++) {
            uint32_t k = app->disagree[side ? n - 1 - d : d], o = app->asked[k];
            const char *why;
            int cause;
            if (!side) {
                if (second[d] == 0) {
                    st->oracle_only_raster++;
                    why = "GL rasterises no sample of it (pixel-centre rule or clipping)";
                    cause = 0;
                } else {
                    st->oracle_only_depth++;
                    why = "GL rasterises it, but something is nearer in GL's depth buffer";
                    cause = 1;
                }
            } else {
                if (second[d] == 0) {
                    st->gpu_only_tie++;
                    why = "it passes only by equal depth with another object (coplanar)";
                    cause = 2;
                } else {
                    st->gpu_only_strict++;
                    why = "strictly nearest at some sample in GL";
                    cause = 3;
                }
            }
            uint32_t size = side ? app->results[k] : pixels[o];
            if (size > st->max[cause])
                st->max[cause] = size;
            if (st->lines[cause] < RVV_MAX_LINES / 4) {
                st->lines[cause]++;
                fprintf(stderr, "rvis-view: oracle and GPU disagree at frame %u: object %u (%s, %s): "
                                "oracle %u pixels, GPU %u samples (GL_LEQUAL), %u with %s: %s\n",
                        app->cull_view.frame, o, kind_names[level->objects[o].kind],
                        app->verdict[o] == RVW_DRAWN ? "drawn" : app->verdict[o] == RVW_CULLED_OCCLUSION
                                                                  ? "occlusion-culled" : "frustum-culled",
                        pixels[o], app->results[k], second[d], side ? "GL_LESS without its own depth" : "GL_ALWAYS",
                        why);
            }
        }
    }
    st->frames++;
    return true;
}

static void lod_line(const rvv_app *app, char *out, size_t len)
{
    uint32_t levels[5] = { 0 }, fading = 0;
    for (uint32_t k = 0; k < app->draw_count; k++) {
        levels[app->draws[k].lod_level < 4 ? app->draws[k].lod_level : 4]++;
        fading += app->draws[k].fade < 1.0f;
    }
    int n = snprintf(out, len, "LOD drawn");
    for (int l = 0; l < 5 && n > 0 && (size_t)n < len; l++)
        if (levels[l])
            n += snprintf(out + n, len - (size_t)n, "  %d%s:%u", l, l == 4 ? "+" : "", levels[l]);
    if (fading && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "  (%u crossfading)", fading);
}

void rvv_app_overlay(rvv_app *app, uint32_t width, uint32_t height, uint32_t frame, uint32_t frames,
                     const rvv_toggles *t, const char *const *extra, uint32_t extra_count)
{
    char lines[RVV_OVERLAY_MAX_LINES][RVV_OVERLAY_LINE];
    uint32_t n = 0;
    const rvw_frame_result *r = &app->result;
    uint32_t frustum = 0, occlusion = 0;
    for (uint32_t i = 0; i < app->level->object_count; i++) {
        frustum += app->verdict[i] == RVW_CULLED_FRUSTUM;
        occlusion += app->verdict[i] == RVW_CULLED_OCCLUSION;
    }
    if (frames)
        snprintf(lines[n++], RVV_OVERLAY_LINE, "rvis-view  %s  frame %u/%u%s", app->level->name, frame + 1, frames,
                 app->frozen ? "  FROZEN" : "");
    else
        snprintf(lines[n++], RVV_OVERLAY_LINE, "rvis-view  %s  frame %u%s", app->level->name, frame,
                 app->frozen ? "  FROZEN (culling of the yellow frustum)" : "");
    snprintf(lines[n++], RVV_OVERLAY_LINE, "objects %u   drawn %u   left out %u", app->level->object_count,
             r->drawn, r->excluded);
    snprintf(lines[n++], RVV_OVERLAY_LINE, "culled: frustum %u   occlusion %u", frustum, occlusion);
    if (app->city)
        snprintf(lines[n++], RVV_OVERLAY_LINE, "partition hidden %lld   HLOD refined %lld", (long long)r->partition_hidden,
                 (long long)r->hlod_refined);
    lod_line(app, lines[n++], RVV_OVERLAY_LINE);
    snprintf(lines[n++], RVV_OVERLAY_LINE, "occluders %u (rasterised %u)   buffer %s", app->occluders_added,
             app->occluders_rasterised, app->occlusion_width ? "on" : "off");
    snprintf(lines[n++], RVV_OVERLAY_LINE, "rv_frame %.0f \xc2\xb5s   GPU %.2f ms   draw calls %u", app->last_frame_us,
             app->last_gpu_ms, app->last_calls);
    if (app->judged)
        snprintf(lines[n++], RVV_OVERLAY_LINE, "%sGPU judge: %u queries, %u false culls (run: %llu)",
                 app->last_false ? "!" : "", app->last_queries, app->last_false,
                 (unsigned long long)app->gpu_false_culls);
    else
        snprintf(lines[n++], RVV_OVERLAY_LINE, "GPU judge: %s", app->frozen ? "paused while frozen" : "off");
    snprintf(lines[n++], RVV_OVERLAY_LINE, "colour %s   order %s   frustum %s", rvv_colouring_names[app->opt->colouring],
             t && t->scene_order ? "scene" : "rvis front-to-back", t && t->frustum_off ? "off" : "on");
    if (app->sabotaged >= 0)
        snprintf(lines[n++], RVV_OVERLAY_LINE, "!sabotage: object %lld forced culled", (long long)app->sabotaged);
    for (uint32_t k = 0; k < extra_count && n < RVV_OVERLAY_MAX_LINES; k++)
        snprintf(lines[n++], RVV_OVERLAY_LINE, "%s", extra[k]);
    rvv_overlay_draw(&app->overlay, lines, n, width, height);
}

bool rvv_app_screenshot(rvv_app *app, uint32_t frame, uint32_t width, uint32_t height)
{
    char path[1200], err[1300];
    snprintf(path, sizeof path, "%s/%s_%05u.png", app->opt->screenshot_dir ? app->opt->screenshot_dir : ".",
             app->level->name, frame);
    if (!rvv_screenshot(path, width, height, err, sizeof err)) {
        fprintf(stderr, "rvis-view: %s\n", err);
        return false;
    }
    app->screenshots++;
    return true;
}

static void json_percentiles(FILE *out, const char *name, const double *v, uint32_t n)
{
    if (!n) {
        fprintf(out, "  \"%s\": null,\n", name);
        return;
    }
    fprintf(out, "  \"%s\": {\"p50\": %.3f, \"p99\": %.3f},\n", name, rvw_percentile(v, n, 50),
            rvw_percentile(v, n, 99));
}

void rvv_app_report_json(const rvv_app *app, FILE *out)
{
    const rvw_level *level = app->level;
    double frames = app->frame_count ? app->frame_count : 1;
    fprintf(out, "{\n  \"program\": \"rvis-view\",\n  \"scene\": ");
    rvw_json_string(out, level->name);
    /* A map's occluders are its surfaces, declared as meshes (as rvis-walk counts them). */
    uint32_t occluders = level->occluder_count, meshes, mesh_triangles;
    rvw_level_count_occluders(level, &meshes, &mesh_triangles);
    if (meshes)
        occluders = meshes;
    fprintf(out, ",\n  \"frames\": %u,\n  \"objects\": %u,\n  \"triangles\": %u,\n  \"occluders\": %u,\n",
            app->frame_count, level->object_count, level->triangle_count, occluders);
    fprintf(out, "  \"width\": %u,\n  \"height\": %u,\n  \"occlusion_width\": %u,\n", app->opt->width,
            app->opt->height, app->occlusion_width);
    fprintf(out, "  \"context\": ");
    rvw_json_string(out, app->context);
    fprintf(out, ",\n  \"gl_renderer\": ");
    rvw_json_string(out, app->gl_renderer);
    fprintf(out, ",\n  \"gl_version\": ");
    rvw_json_string(out, app->gl_version);
    fprintf(out, ",\n  \"gpu_verify\": %s,\n  \"gpu_verified_frames\": %llu,\n  \"gpu_queries\": %llu,\n"
                 "  \"gpu_false_culls\": %llu,\n",
            app->opt->gpu_verify ? "true" : "false", (unsigned long long)app->gpu_frames,
            (unsigned long long)app->gpu_queries, (unsigned long long)app->gpu_false_culls);
    if (app->first_false_frame >= 0)
        fprintf(out, "  \"first_gpu_false_cull\": {\"frame\": %lld, \"object\": %lld},\n",
                (long long)app->first_false_frame, (long long)app->first_false_object);
    else
        fprintf(out, "  \"first_gpu_false_cull\": null,\n");
    if (app->opt->sabotage == RVV_SABOTAGE_AUTO)
        fprintf(out, "  \"sabotage_object\": \"auto\",\n");
    else if (app->opt->sabotage >= 0)
        fprintf(out, "  \"sabotage_object\": %lld,\n", (long long)app->opt->sabotage);
    else
        fprintf(out, "  \"sabotage_object\": null,\n");
    fprintf(out, "  \"gpu_unconfirmed\": %llu,\n", (unsigned long long)app->gpu_unconfirmed);
    fprintf(out, "  \"unexplained_verdicts\": %llu,\n", (unsigned long long)app->unexplained);
    fprintf(out, "  \"drawn_mean\": %.3f,\n  \"culled_frustum_mean\": %.3f,\n  \"culled_occlusion_mean\": %.3f,\n"
                 "  \"excluded_mean\": %.3f,\n",
            app->drawn_sum / frames, app->frustum_sum / frames, app->occlusion_sum / frames, app->excluded_sum / frames);
    json_percentiles(out, "frame_us", app->frame_us, app->frame_count);
    json_percentiles(out, "gpu_ms", app->gpu_ms, app->gpu_count);
    json_percentiles(out, "judge_ms", app->judge_ms, app->judge_count);
    fprintf(out, "  \"screenshots\": %u,\n", app->screenshots);
    const rvv_oracle_stats *st = &app->oracle;
    if (!app->opt->oracle) {
        fprintf(out, "  \"oracle\": null\n}\n");
        return;
    }
    fprintf(out, "  \"oracle\": {\"frames\": %u, \"compared\": %llu, \"visible_both\": %llu, \"hidden_both\": %llu, "
                 "\"oracle_only_raster\": %llu, \"oracle_only_depth\": %llu, \"gpu_only_tie\": %llu, "
                 "\"gpu_only_strict\": %llu, \"oracle_only_raster_max_pixels\": %u, "
                 "\"oracle_only_depth_max_pixels\": %u, \"gpu_only_tie_max_samples\": %u, "
                 "\"gpu_only_strict_max_samples\": %u, \"oracle_false_culls\": %llu, \"gpu_false_culls\": %llu}\n}\n",
            st->frames, (unsigned long long)st->compared, (unsigned long long)st->visible_both,
            (unsigned long long)st->hidden_both, (unsigned long long)st->oracle_only_raster,
            (unsigned long long)st->oracle_only_depth, (unsigned long long)st->gpu_only_tie,
            (unsigned long long)st->gpu_only_strict, st->max[0], st->max[1], st->max[2], st->max[3],
            (unsigned long long)st->oracle_false_culls, (unsigned long long)st->gpu_false_culls);
}

void rvv_app_report_human(const rvv_app *app, FILE *out)
{
    const rvw_level *level = app->level;
    double frames = app->frame_count ? app->frame_count : 1;
    fprintf(out, "rvis-view: %s, %u frames at %ux%u on %s (%s)\n", level->name, app->frame_count, app->opt->width,
            app->opt->height, app->gl_renderer, app->context);
    fprintf(out, "  %u objects: drawn %.1f, culled by the frustum %.1f and by occlusion %.1f per frame\n",
            level->object_count, app->drawn_sum / frames, app->frustum_sum / frames, app->occlusion_sum / frames);
    if (app->frame_count)
        fprintf(out, "  rv_frame p50 %.0f us, p99 %.0f us; draw p50 %.2f ms (glFinish to glFinish)\n",
                rvw_percentile(app->frame_us, app->frame_count, 50), rvw_percentile(app->frame_us, app->frame_count, 99),
                app->gpu_count ? rvw_percentile(app->gpu_ms, app->gpu_count, 50) : 0.0);
    if (app->gpu_frames)
        fprintf(out, "  GPU judge: %llu frames, %llu occlusion queries, %llu false culls\n",
                (unsigned long long)app->gpu_frames, (unsigned long long)app->gpu_queries,
                (unsigned long long)app->gpu_false_culls);
    if (app->opt->oracle) {
        const rvv_oracle_stats *st = &app->oracle;
        fprintf(out, "  oracle vs GPU over %u frames, %llu object-frames: agree on %llu visible and %llu hidden; "
                     "oracle only: GL rasterises nothing %llu (at most %u pixels), nearer in GL %llu (at most %u); "
                     "GPU only: equal-depth ties %llu (at most %u samples), strictly nearest %llu (at most %u); "
                     "false culls: oracle %llu, GPU %llu\n",
                st->frames, (unsigned long long)st->compared, (unsigned long long)st->visible_both,
                (unsigned long long)st->hidden_both, (unsigned long long)st->oracle_only_raster, st->max[0],
                (unsigned long long)st->oracle_only_depth, st->max[1], (unsigned long long)st->gpu_only_tie, st->max[2],
                (unsigned long long)st->gpu_only_strict, st->max[3], (unsigned long long)st->oracle_false_culls,
                (unsigned long long)st->gpu_false_culls);
    }
}
