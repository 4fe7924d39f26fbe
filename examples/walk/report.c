#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP_FRAMES 10

const char *const rvw_stage_names[RVW_STAGE_COUNT] = {
    "transforms", "journal", "frustum", "partition", "occlusion", "lod", "streaming", "publish", "feed",
};

bool rvw_run_init(rvw_run *run, uint32_t frames)
{
    size_t n = frames ? frames : 1;
    run->frame_capacity = frames;
    run->frame_us = calloc(n, sizeof(double));
    run->oracle_us = calloc(n, sizeof(double));
    bool ok = run->frame_us && run->oracle_us;
    for (int s = 0; s < RVW_STAGE_COUNT; s++) {
        run->stage_us[s] = calloc(n, sizeof(double));
        ok = ok && run->stage_us[s];
    }
    run->feed.used_us = calloc(n, sizeof(double));
    run->feed.draw_us = calloc(n, sizeof(double));
    ok = ok && run->feed.used_us && run->feed.draw_us;
    run->first_false_frame = run->first_false_object = -1;
    return ok;
}

void rvw_run_free(rvw_run *run)
{
    free(run->frame_us);
    free(run->oracle_us);
    free(run->feed.used_us);
    free(run->feed.draw_us);
    for (int s = 0; s < RVW_STAGE_COUNT; s++)
        free(run->stage_us[s]);
    memset(run, 0, sizeof *run);
}

static void add_total(rvw_total *t, int64_t value)
{
    if (value < 0)
        return;
    t->sum += value;
    t->joined = true;
}

void rvw_run_record(rvw_run *run, uint32_t frame, const rvw_frame_result *r, double frame_us)
{
    if (run->frames >= run->frame_capacity)
        return;
    uint32_t i = run->frames++;
    run->frame_us[i] = frame_us;
    for (int s = 0; s < RVW_STAGE_COUNT; s++) {
        run->stage_us[s][i] = r->stage_us[s];
        run->stage_joined[s] |= r->stage_us[s] >= 0;
    }
    run->drawn_sum += r->drawn;
    run->frustum_visible_sum += r->frustum_visible;
    add_total(&run->occlusion_culled, r->occlusion_culled);
    add_total(&run->unsampled_culled, r->unsampled_culled);
    add_total(&run->partition_hidden, r->partition_hidden);
    add_total(&run->hlod_refined, r->hlod_refined);
    add_total(&run->journal_deltas, r->journal_deltas);
    add_total(&run->pages_requested, r->pages_requested);
    add_total(&run->pages_evicted, r->pages_evicted);
    if (r->lod_levels_mask >= 0) {
        run->lod_mask |= (uint64_t)r->lod_levels_mask;
        run->lod_joined = true;
    }
    if (frame + 1 == WARMUP_FRAMES)
        run->allocations_at_warmup = r->allocations;
    run->allocations_last = r->allocations;
}

void rvw_run_record_verified(rvw_run *run, uint32_t truly_visible, uint32_t drawn, double oracle_us)
{
    if (run->verified_frames < run->frame_capacity)
        run->oracle_us[run->verified_frames] = oracle_us;
    run->verified_frames++;
    run->truly_visible_sum += truly_visible;
    run->drawn_verified_sum += drawn;
}

void rvw_run_record_feed(rvw_run *run, const rvw_feed_result *f, bool cut, double stage_us, double draw_us)
{
    rvw_feed_totals *t = &run->feed;
    if (draw_us >= 0 && t->draws < run->frame_capacity)
        t->draw_us[t->draws++] = draw_us;
    if (!f->handed)
        return;
    if (f->used && t->used < run->frame_capacity)
        t->used_us[t->used] = stage_us;
    t->handed++;
    t->used += f->used;
    t->ignored_motion += f->ignored_motion;
    t->ignored_projection += f->ignored_projection;
    t->ignored_age += f->ignored_age;
    t->cuts += cut;
    t->cuts_used += cut && f->used;
    t->texels_fed += f->texels_fed;
    t->texels_invalid += f->texels_invalid;
    t->texels_sky += f->texels_sky;
    t->texels_discontinuous += f->texels_discontinuous;
    t->texels_reprojected += f->texels_reprojected;
    t->texels_raised += f->texels_raised;
    t->hidden_by_feed += f->hidden_by_feed;
}

void rvw_run_record_bounds(rvw_run *run, uint32_t ideal_occluder_drawn, uint32_t ideal_box_drawn,
                           uint32_t ideal_misses, uint32_t pvs_frustum, uint32_t pvs_misses, uint32_t drawn_unsampled)
{
    run->drawn_unsampled_sum += drawn_unsampled;
    run->ideal_occluder_sum += ideal_occluder_drawn;
    run->ideal_box_sum += ideal_box_drawn;
    run->ideal_occluder_misses += ideal_misses;
    run->pvs_frustum_sum += pvs_frustum;
    run->pvs_misses += pvs_misses;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rvw_percentile(const double *values, uint32_t n, double p)
{
    if (n == 0)
        return -1;
    double *copy = malloc(n * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, values, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare_double);
    uint32_t rank = (uint32_t)ceil(p / 100.0 * n);
    double v = copy[rank ? rank - 1 : 0];
    free(copy);
    return v;
}

/* A JSON string (quotes and control characters escaped). */
void rvw_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) /* bytes, not UTF-8: keep the JSON valid */
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void json_number(FILE *out, double v, bool valid)
{
    if (valid && isfinite(v))
        fprintf(out, "%.6g", v);
    else
        fputs("null", out);
}

static void json_total(FILE *out, const char *key, const rvw_total *t)
{
    fprintf(out, ",\n  \"%s\": ", key);
    if (t->joined)
        fprintf(out, "%lld", (long long)t->sum);
    else
        fputs("null", out);
}

static int popcount64(uint64_t v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* A stage's percentile over the frames it ran in (a stage that did not run that frame, the
 * depth feed of a frame without one, is negative there). */
static double stage_percentile(const rvw_run *run, int stage, double p)
{
    double *kept = malloc((run->frames ? run->frames : 1) * sizeof *kept);
    if (!kept)
        return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < run->frames; i++)
        if (run->stage_us[stage][i] >= 0)
            kept[n++] = run->stage_us[stage][i];
    double v = rvw_percentile(kept, n, p);
    free(kept);
    return v;
}

static double draw_ratio(const rvw_run *run)
{
    return run->truly_visible_sum ? (double)run->drawn_verified_sum / (double)run->truly_visible_sum
                                  : (run->drawn_verified_sum ? INFINITY : 1.0);
}

/* "depth_feed": null without --depth-feed; else what rvis did with the feeds, totals over
 * the run, and the feed stage of the frames whose feed it used. */
static void feed_json(FILE *out, const rvw_run *run)
{
    const rvw_feed_totals *t = &run->feed;
    fputs(",\n  \"depth_feed\": ", out);
    if (!t->on) {
        fputs("null", out);
        return;
    }
    uint32_t nu = t->used < run->frame_capacity ? (uint32_t)t->used : run->frame_capacity;
    fprintf(out, "{\"width\": %u, \"height\": %u, \"age\": 1, \"feeds\": %llu, \"used\": %llu, "
                 "\"ignored_motion\": %llu, \"ignored_projection\": %llu, \"ignored_age\": %llu, "
                 "\"cuts\": %llu, \"cuts_used\": %llu, \"texels_fed\": %llu, \"texels_invalid\": %llu, "
                 "\"texels_sky\": %llu, \"texels_discontinuous\": %llu, \"texels_reprojected\": %llu, "
                 "\"texels_raised\": %llu, \"hidden_by_feed\": %llu, \"hidden_by_feed_per_frame\": ",
            t->width, t->height, (unsigned long long)t->handed, (unsigned long long)t->used,
            (unsigned long long)t->ignored_motion, (unsigned long long)t->ignored_projection,
            (unsigned long long)t->ignored_age, (unsigned long long)t->cuts, (unsigned long long)t->cuts_used,
            (unsigned long long)t->texels_fed, (unsigned long long)t->texels_invalid,
            (unsigned long long)t->texels_sky, (unsigned long long)t->texels_discontinuous,
            (unsigned long long)t->texels_reprojected, (unsigned long long)t->texels_raised,
            (unsigned long long)t->hidden_by_feed);
    json_number(out, run->frames ? (double)t->hidden_by_feed / run->frames : 0, true);
    fputs(", \"used_us\": {\"p50\": ", out);
    json_number(out, rvw_percentile(t->used_us, nu, 50), nu > 0);
    fputs(", \"p99\": ", out);
    json_number(out, rvw_percentile(t->used_us, nu, 99), nu > 0);
    fputs("}, \"draw_us_p50\": ", out);
    json_number(out, rvw_percentile(t->draw_us, t->draws, 50), t->draws > 0);
    fputs("}", out);
}

void rvw_report_json(FILE *out, const rvw_run *run)
{
    double frames = run->frames ? run->frames : 1;
    double vframes = run->verified_frames ? run->verified_frames : 1;
    bool v = run->verified && run->verified_frames > 0;
    fputs("{\n  \"scene\": ", out);
    rvw_json_string(out, run->scene);
    fprintf(out, ",\n  \"frames\": %u,\n  \"objects\": %u,\n"
                 "  \"occluders\": %u,\n  \"verified\": %s,\n  \"false_culls\": %llu",
            run->frames, run->objects, run->occluders, v ? "true" : "false",
            (unsigned long long)run->false_culls);
    fputs(",\n  \"drawn_mean\": ", out);
    json_number(out, (double)run->drawn_sum / frames, true);
    fputs(",\n  \"frustum_visible_mean\": ", out);
    json_number(out, (double)run->frustum_visible_sum / frames, true);
    fputs(",\n  \"truly_visible_mean\": ", out);
    json_number(out, (double)run->truly_visible_sum / vframes, v);
    fputs(",\n  \"draw_ratio\": ", out);
    json_number(out, draw_ratio(run), v);
    double truly = (double)run->truly_visible_sum;
    fputs(",\n  \"ideal_occluder_drawn_mean\": ", out);
    json_number(out, (double)run->ideal_occluder_sum / vframes, v);
    fputs(",\n  \"ideal_occluder_ratio\": ", out);
    json_number(out, truly > 0 ? run->ideal_occluder_sum / truly : 1.0, v);
    fputs(",\n  \"ideal_box_ratio\": ", out);
    json_number(out, truly > 0 ? run->ideal_box_sum / truly : 1.0, v);
    fputs(",\n  \"drawn_unsampled_mean\": ", out);
    json_number(out, (double)run->drawn_unsampled_sum / vframes, v);
    fputs(",\n  \"pvs_frustum_mean\": ", out);
    json_number(out, (double)run->pvs_frustum_sum / vframes, v && run->has_pvs);
    fputs(",\n  \"pvs_ratio\": ", out);
    json_number(out, truly > 0 ? run->pvs_frustum_sum / truly : 1.0, v && run->has_pvs);
    fputs(",\n  \"frame_us\": {\"p50\": ", out);
    json_number(out, rvw_percentile(run->frame_us, run->frames, 50), run->frames > 0);
    fputs(", \"p95\": ", out);
    json_number(out, rvw_percentile(run->frame_us, run->frames, 95), run->frames > 0);
    fputs(", \"p99\": ", out);
    json_number(out, rvw_percentile(run->frame_us, run->frames, 99), run->frames > 0);
    fputs("},\n  \"stage_us\": {", out);
    for (int s = 0; s < RVW_STAGE_COUNT; s++) {
        bool j = run->stage_joined[s] && run->frames > 0;
        fprintf(out, "%s\"%s\": {\"p50\": ", s ? ", " : "", rvw_stage_names[s]);
        json_number(out, j ? stage_percentile(run, s, 50) : 0, j);
        fputs(", \"p99\": ", out);
        json_number(out, j ? stage_percentile(run, s, 99) : 0, j);
        fputs("}", out);
    }
    fprintf(out, "},\n  \"steady_allocations\": %llu",
            (unsigned long long)(run->frames > WARMUP_FRAMES
                                     ? run->allocations_last - run->allocations_at_warmup : 0));
    json_total(out, "occlusion_culled", &run->occlusion_culled);
    json_total(out, "unsampled_culled", &run->unsampled_culled);
    if (run->is_city) {
        json_total(out, "partition_hidden", &run->partition_hidden);
        fputs(",\n  \"lod_levels_used\": ", out);
        if (run->lod_joined)
            fprintf(out, "%d", popcount64(run->lod_mask));
        else
            fputs("null", out);
        json_total(out, "hlod_refined", &run->hlod_refined);
        json_total(out, "journal_deltas", &run->journal_deltas);
        json_total(out, "pages_requested", &run->pages_requested);
        json_total(out, "pages_evicted", &run->pages_evicted);
    }
    feed_json(out, run);
    /* what the run was, so a reader can judge the figures */
    fprintf(out, ",\n  \"pvs_stage\": %s", run->pvs_stage ? "true" : "false");
    fprintf(out, ",\n  \"workers\": %u", run->workers);
    fprintf(out, ",\n  \"triangles\": %u,\n  \"stages_joined\": ", run->triangles);
    rvw_json_string(out, run->stages);
    fprintf(out, ",\n  \"verify\": {\"width\": %u, \"height\": %u, \"every\": %u, \"frames\": %u, "
                 "\"oracle_us_p50\": ", run->verify_width, run->verify_height, run->verify_every,
            run->verified_frames);
    uint32_t nv = run->verified_frames < run->frame_capacity ? run->verified_frames : run->frame_capacity;
    json_number(out, rvw_percentile(run->oracle_us, nv, 50), nv > 0);
    fprintf(out, ", \"ideal_occluder_misses\": %llu, \"pvs_misses\": ",
            (unsigned long long)run->ideal_occluder_misses);
    if (run->has_pvs)
        fprintf(out, "%llu", (unsigned long long)run->pvs_misses);
    else
        fputs("null", out);
    fputs("}", out);
    if (run->first_false_frame >= 0) {
        const rvw_false_cull *f = &run->first_false;
        fprintf(out, ",\n  \"first_false_cull\": {\"frame\": %u, \"object\": %u, \"pixels\": %u, "
                     "\"culled_by\": ", f->frame, f->object, f->pixels);
        rvw_json_string(out, f->culled_by);
        fprintf(out, ", \"eye\": [%.6g, %.6g, %.6g], \"pixels_behind_occluders\": %u, "
                     "\"occluders_in_front\": %u, \"occluders\": [", (double)f->eye[0], (double)f->eye[1],
                (double)f->eye[2], f->covered, f->occluders_in_front);
        for (uint32_t k = 0; k < f->occluder_count; k++) {
            const rvw_named_occluder *o = &f->occluders[k];
            fprintf(out, "%s{\"%s\": %u, \"pixels\": %u, \"min\": [%.6g, %.6g, %.6g], "
                         "\"max\": [%.6g, %.6g, %.6g]}", k ? ", " : "", o->kind, o->index,
                    o->pixels, (double)o->box.min[0], (double)o->box.min[1], (double)o->box.min[2],
                    (double)o->box.max[0], (double)o->box.max[1], (double)o->box.max[2]);
        }
        fputs("]}", out);
    }
    if (run->has_map) {
        const rvw_bsp_stats *m = &run->map;
        const rvw_path_stats *p = &run->path;
        const rvw_candidate_counts *c = &run->candidates;
        fprintf(out, ",\n  \"map\": {\"surfaces\": %u, \"patches\": %u, \"skipped_nodraw_sky\": %u, "
                     "\"skipped_empty\": %u, \"brushes\": %u, \"solid_brushes\": %u, \"clip_brushes\": %u, "
                     "\"empty_brushes\": %u, \"unbounded_brushes\": %u, \"spawns\": %u, \"items\": %u, "
                     "\"path_points\": %u, \"path_moved\": %u, \"path_dropped\": %u, \"path_max_move\": %.6g, "
                     "\"path_legs\": %u, \"path_detours\": %u, \"path_jumps\": %u}",
                m->surfaces, m->patches, m->skipped_nodraw_sky, m->skipped_empty, m->brushes,
                m->solid_brushes, m->clip_brushes, m->empty_brushes, m->unbounded_brushes, m->spawns,
                m->items, p->points, p->moved, p->dropped, (double)p->max_move, p->legs, p->detours,
                p->jumps);
        fprintf(out, ",\n  \"candidates\": {\"convexes\": %u, \"exact_boxes\": %u, \"general_convexes\": %u, "
                     "\"nodraw_side\": %u, \"sky_side\": %u, \"translucent\": %u, \"opaque_meshes\": %u, "
                     "\"opaque_triangles\": %u, \"patch_meshes\": %u, \"patch_triangles\": %u}",
                c->convexes, c->exact_boxes, c->general_convexes, c->nodraw_side, c->sky_side,
                c->translucent, c->meshes, c->mesh_triangles, c->patch_meshes, c->patch_triangles);
        fprintf(out, ",\n  \"occluder_triangles\": %u,\n  \"oriented_test_boxes\": %u", run->occluder_triangles,
                run->oriented_boxes);
    }
    fputs("\n}\n", out);
}

static void feed_human(FILE *out, const rvw_run *run)
{
    const rvw_feed_totals *t = &run->feed;
    if (!t->on)
        return;
    uint32_t nu = t->used < run->frame_capacity ? (uint32_t)t->used : run->frame_capacity;
    double used = t->used ? (double)t->used : 1.0;
    fprintf(out, "  depth feed %ux%u, one frame late: used %llu of %llu (ignored: %llu moved or turned too "
                 "far, %llu another projection, %llu too old; the path's %llu cuts: %llu used)\n",
            t->width, t->height, (unsigned long long)t->used, (unsigned long long)t->handed,
            (unsigned long long)t->ignored_motion, (unsigned long long)t->ignored_projection,
            (unsigned long long)t->ignored_age, (unsigned long long)t->cuts, (unsigned long long)t->cuts_used);
    fprintf(out, "    per used feed: %.0f texels fed (%.0f sky, %.0f discontinuous), %.0f buffer texels "
                 "reprojected (%.0f nearer than the occluders); feed stage p50 %.1f us, p99 %.1f us\n",
            t->texels_fed / used, t->texels_sky / used, t->texels_discontinuous / used,
            t->texels_reprojected / used, t->texels_raised / used, rvw_percentile(t->used_us, nu, 50),
            rvw_percentile(t->used_us, nu, 99));
    fprintf(out, "    hidden by the feed alone: %llu tests (%.2f per frame); the walk drew each image in "
                 "%.1f us (p50)\n", (unsigned long long)t->hidden_by_feed,
            run->frames ? (double)t->hidden_by_feed / run->frames : 0.0, rvw_percentile(t->draw_us, t->draws, 50));
}

void rvw_report_human(FILE *out, const rvw_run *run)
{
    double frames = run->frames ? run->frames : 1;
    fprintf(out, "rvis-walk: %s, %u frames, %u objects (%u triangles), %u occluders\n", run->scene,
            run->frames, run->objects, run->triangles, run->occluders);
    fprintf(out, "  rvis stages: %s%s\n", run->stages,
            run->pvs_stage ? "; then the host skips objects outside the PVS (--pvs)" : "");
    fprintf(out, "  drawn %.1f of %u objects per frame on average; %.1f passed the frustum\n",
            (double)run->drawn_sum / frames, run->objects, (double)run->frustum_visible_sum / frames);
    fprintf(out, "  frame time p50 %.1f us, p95 %.1f us, p99 %.1f us", rvw_percentile(run->frame_us, run->frames, 50),
            rvw_percentile(run->frame_us, run->frames, 95), rvw_percentile(run->frame_us, run->frames, 99));
    if (run->workers)
        fprintf(out, " (a job system of %u workers)", run->workers);
    fputc('\n', out);
    feed_human(out, run);
    if (run->verified && run->verified_frames) {
        uint32_t nv = run->verified_frames < run->frame_capacity ? run->verified_frames : run->frame_capacity;
        fprintf(out, "  verified %u frames at %ux%u: %.1f objects truly visible per frame, draw ratio "
                     "%.2f (drawn / truly visible), oracle %.1f ms per frame\n",
                run->verified_frames, run->verify_width, run->verify_height,
                (double)run->truly_visible_sum / run->verified_frames, draw_ratio(run),
                rvw_percentile(run->oracle_us, nv, 50) / 1000.0);
        double truly = run->truly_visible_sum ? (double)run->truly_visible_sum : 1.0;
        fprintf(out, "  bounds: a pixel-exact culler with these occluders would draw %.1f (ratio %.2f; "
                     "testing boxes %.2f)", (double)run->ideal_occluder_sum / run->verified_frames,
                run->ideal_occluder_sum / truly, run->ideal_box_sum / truly);
        if (run->has_pvs)
            fprintf(out, "; PVS and frustum keep %.1f (ratio %.2f)\n",
                    (double)run->pvs_frustum_sum / run->verified_frames, run->pvs_frustum_sum / truly);
        else
            fputc('\n', out);
        fprintf(out, "  of the objects drawn, %.1f per frame cover no pixel centre of the oracle: too small "
                     "to be sampled, not hidden (no occlusion culler hides them)\n",
                (double)run->drawn_unsampled_sum / run->verified_frames);
        if (run->ideal_occluder_misses || run->pvs_misses)
            fprintf(out, "  truly visible objects the bounds would hide: %llu by the ideal occluders, "
                         "%llu by the PVS\n", (unsigned long long)run->ideal_occluder_misses,
                    (unsigned long long)run->pvs_misses);
        if (run->false_culls)
            fprintf(out, "  FALSE CULLS: %llu (first: frame %lld, object %lld)\n",
                    (unsigned long long)run->false_culls, (long long)run->first_false_frame,
                    (long long)run->first_false_object);
        else
            fprintf(out, "  no false culls: rvis never hid a visible object\n");
    }
    if (run->has_map) {
        const rvw_path_stats *p = &run->path;
        const rvw_candidate_counts *c = &run->candidates;
        fprintf(out, "  map: %u surfaces (%u patches), %u brushes (%u solid, %u player clip), %u spawns, "
                     "%u items\n", run->map.surfaces, run->map.patches, run->map.brushes,
                run->map.solid_brushes, run->map.clip_brushes, run->map.spawns, run->map.items);
        fprintf(out, "  path (player box): %u of %u points moved out of a solid (at most %.1f units), %u "
                     "dropped; %u legs straight, %u around a waypoint, %u cuts; %llu tests of the path's "
                     "budget\n", p->moved, p->points, (double)p->max_move, p->dropped, p->legs, p->detours,
                p->jumps, (unsigned long long)p->work);
        fprintf(out, "  occluder candidates: %u solid brushes (%u exact boxes, %u general; %u with a nodraw "
                     "side, %u with a sky side), %u opaque surfaces (%u triangles; %u patches, %u triangles)\n",
                c->convexes, c->exact_boxes, c->general_convexes, c->nodraw_side, c->sky_side, c->meshes,
                c->mesh_triangles, c->patch_meshes, c->patch_triangles);
        fprintf(out, "  occluders: %u planar surfaces as open meshes (%u triangles); %u objects tested by an oriented box\n",
                run->occluders, run->occluder_triangles, run->oriented_boxes);
    }
}
