/* Occlusion benchmarks on the benchmark city (docs/bench-city.md).
 *
 * occlusion_city_256 / _512: per frame, frustum-cull the 1,024 buildings and rasterise the
 * visible ones (raster_us, mean per frame), frustum-cull the 100,000 objects (untimed) and
 * occlusion-test every frustum-visible one with rv_occlusion_test_boxes (ours, ns/test)
 * against the same tests answered texel by texel from level 0 without the pyramid
 * (baseline). cull_rate = culled / frustum-visible over all frames.
 *
 * occlusion_mesh: the same frames with every frustum-visible building declared as a mesh
 * instead of a box, in turns frame by frame: ours = raster_us per frame with each building
 * as an open mesh of its walls and roof (ten triangles: the triangle-by-triangle path, as
 * a level's surfaces take), baseline = raster_us of the same buildings as boxes; closed_*
 * the same with each as a closed exact mesh (twelve triangles; convex, so each is drawn as
 * the solid it bounds). ns_per_triangle is raster time over the triangles submitted;
 * test_ns the object tests against each buffer (tests per frame as the city cases), and
 * each buffer's cull rate.
 *
 * occlusion_dense_mesh: a terrain of 128 x 128 quads (32,768 triangles over 400 m, heights
 * from a few waves) as one open mesh, flown over at 14 m looking a little down, 60 frames,
 * width 256: ours = begin, add and freeze with the mesh drawn by its outline (the path a
 * dense mesh takes), baseline = the same frames with it drawn as pieces, triangle by
 * triangle, in turns frame by frame; ns_per_triangle, each buffer's texels covered and the
 * cull rate of 4,096 boxes standing on the terrain.
 *
 * occlusion_city_verify (only when --only names it, e.g. --only occlusion_city_verify):
 * renders every 10th frame exactly at 1920 x 1080 (every triangle of every box, pixel
 * centres, near-plane clipping, perspective-correct depth) and counts false culls of both
 * buffer widths (an object culled although one of its pixels is not behind a building)
 * and the true hidden fraction.
 *
 * Besides the wall-clock figures the JSON carries the same measurements in thread CPU time
 * (*_cpu fields): on a shared machine the wall clock also counts time spent descheduled. */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include "rvis.h"
#include "occlusion.h"
#include "occlusion_feed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CITY_FRAMES 600

/* Thread CPU time in nanoseconds. */
static uint64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- frustum ---------------------------------------------------------------------------- */

/* The six planes of the OpenGL-clip matrix (Gribb & Hartmann), for a plain "wholly outside
 * one plane" box test: what a host's frustum pass over occluders does. It returns the same
 * buildings as rv_frustum_classify_box != RV_OUTSIDE, at about a third of the cost (that
 * one also tells inside from intersecting). */
typedef struct frustum6 { float planes[6][4]; } frustum6;

static void frustum_of(const float vp[16], frustum6 *fr)
{
    for (int j = 0; j < 4; j++) {
        float x = vp[j * 4 + 0], y = vp[j * 4 + 1], z = vp[j * 4 + 2], w = vp[j * 4 + 3];
        fr->planes[0][j] = w + x;
        fr->planes[1][j] = w - x;
        fr->planes[2][j] = w + y;
        fr->planes[3][j] = w - y;
        fr->planes[4][j] = w + z;
        fr->planes[5][j] = w - z;
    }
}

static bool box_in_frustum(const frustum6 *fr, const rvb_box *b)
{
    for (int p = 0; p < 6; p++) {
        const float *pl = fr->planes[p];
        float x = pl[0] >= 0 ? b->max[0] : b->min[0];
        float y = pl[1] >= 0 ? b->max[1] : b->min[1];
        float z = pl[2] >= 0 ? b->max[2] : b->min[2];
        if (pl[0] * x + pl[1] * y + pl[2] * z + pl[3] < 0)
            return false;
    }
    return true;
}

/* ---- the walk --------------------------------------------------------------------------- */

typedef struct soa {
    float *v[6]; /* min x, y, z, max x, y, z */
    uint32_t *index;
    uint8_t *visible, *flat;
    uint32_t count;
} soa;

static bool soa_alloc(soa *s)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < 6; k++)
        if (!(s->v[k] = malloc(sizeof(float) * RVB_CITY_OBJECTS)))
            return false;
    s->index = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    s->visible = malloc(RVB_CITY_OBJECTS);
    s->flat = malloc(RVB_CITY_OBJECTS);
    return s->index && s->visible && s->flat;
}

static void soa_free(soa *s)
{
    for (int k = 0; k < 6; k++)
        free(s->v[k]);
    free(s->index);
    free(s->visible);
    free(s->flat);
}

static void frustum_objects(const rvb_city *city, const frustum6 *planes, soa *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < RVB_CITY_OBJECTS; i++) {
        const rvb_box *b = &city->objects[i];
        if (!box_in_frustum(planes, b))
            continue;
        s->v[0][n] = b->min[0];
        s->v[1][n] = b->min[1];
        s->v[2][n] = b->min[2];
        s->v[3][n] = b->max[0];
        s->v[4][n] = b->max[1];
        s->v[5][n] = b->max[2];
        s->index[n] = i;
        n++;
    }
    s->count = n;
}

/* Frustum-culls the buildings and rasterises the visible ones; returns how many. */
static uint32_t raster_frame(rv_occlusion *occ, const rvb_city *city, const float vp[16])
{
    frustum6 planes;
    frustum_of(vp, &planes);
    rv_clip gl = {0};
    if (rv_occlusion_begin(occ, vp, gl, 16.0f / 9.0f) != RV_OK)
        return 0;
    uint32_t n = 0;
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++) {
        const rvb_box *b = &city->buildings[i];
        if (box_in_frustum(&planes, b)) {
            rv_occlusion_add_occluder(occ, b->min, b->max, NULL);
            n++;
        }
    }
    rv_occlusion_freeze(occ);
    return n;
}

static rv_occlusion_boxes soa_boxes(const soa *s)
{
    rv_occlusion_boxes boxes = { { s->v[0], s->v[1], s->v[2] }, { s->v[3], s->v[4], s->v[5] }, NULL };
    return boxes;
}

static int city_case(rvb_ctx *ctx, const rvb_city *city, uint32_t width, const char *name)
{
    if (!rvb_begin_case(ctx, name))
        return 0;
    rv_occlusion_desc desc = { .width = width };
    rv_occlusion *occ = NULL;
    soa s;
    if (rv_occlusion_create(&desc, &occ) != RV_OK || !soa_alloc(&s)) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        rv_occlusion_destroy(occ);
        return 1;
    }
    int reps = ctx->reps;
    double *raster_mean = calloc((size_t)reps, sizeof(double));
    double *test_ns = calloc((size_t)reps, sizeof(double));
    double *base_ns = calloc((size_t)reps, sizeof(double));
    double *frame_us = calloc((size_t)reps * CITY_FRAMES, sizeof(double));
    double *raster_cpu = calloc((size_t)reps, sizeof(double));
    double *test_cpu = calloc((size_t)reps, sizeof(double));
    double *base_cpu = calloc((size_t)reps, sizeof(double));
    int errors = 0;
    uint64_t visible_total = 0, culled_total = 0, buildings_total = 0;
    for (int rep = 0; rep < reps; rep++) {
        uint64_t raster_t = 0, test_t = 0, base_t = 0, tests = 0, raster_c = 0, test_c = 0, base_c = 0;
        for (int f = 0; f < CITY_FRAMES; f++) {
            float eye[3], vp[16];
            frustum6 planes;
            rvb_city_camera(f, CITY_FRAMES, eye, vp);
            frustum_of(vp, &planes);
            frustum_objects(city, &planes, &s); /* untimed: the host's frustum pass */

            uint64_t c0 = cpu_now_ns(), t0 = rvb_now_ns();
            uint32_t nb = raster_frame(occ, city, vp);
            uint64_t t1 = rvb_now_ns(), c1 = cpu_now_ns();
            rv_occlusion_boxes boxes = soa_boxes(&s);
            rv_occlusion_test_boxes(occ, &boxes, 0, s.count, s.visible);
            uint64_t t2 = rvb_now_ns(), c2 = cpu_now_ns();
            rvi_occlusion_test_world_boxes(occ, &boxes, 0, s.count, s.flat, false);
            uint64_t t3 = rvb_now_ns(), c3 = cpu_now_ns();
            raster_c += c1 - c0;
            test_c += c2 - c1;
            base_c += c3 - c2;
            uint32_t culled_flat = 0;
            for (uint32_t i = 0; i < s.count; i++)
                culled_flat += !s.flat[i];

            uint32_t culled = 0;
            for (uint32_t i = 0; i < s.count; i++)
                culled += !s.visible[i];
            if (culled != culled_flat) {
                fprintf(stderr, "rvis-bench: %s frame %d: pyramid culled %u, flat culled %u\n", name, f, culled,
                        culled_flat);
                errors++;
            }
            raster_t += t1 - t0;
            test_t += t2 - t1;
            base_t += t3 - t2;
            tests += s.count;
            frame_us[(size_t)f * reps + rep] = (double)(t1 - t0) / 1e3;
            if (rep == 0) {
                visible_total += s.count;
                culled_total += culled;
                buildings_total += nb;
            }
        }
        raster_mean[rep] = (double)raster_t / 1e3 / CITY_FRAMES;
        test_ns[rep] = (double)test_t / (double)tests;
        base_ns[rep] = (double)base_t / (double)tests;
        raster_cpu[rep] = (double)raster_c / 1e3 / CITY_FRAMES;
        test_cpu[rep] = (double)test_c / (double)tests;
        base_cpu[rep] = (double)base_c / (double)tests;
    }
    double *frame_med = malloc(sizeof(double) * CITY_FRAMES);
    for (int f = 0; f < CITY_FRAMES; f++)
        frame_med[f] = rvb_median(frame_us + (size_t)f * reps, reps);
    char extra[640];
    snprintf(extra, sizeof extra,
             ", \"raster_us\": %.4g, \"raster_us_frame_median\": %.4g, \"cull_rate\": %.5f, "
             "\"ours_cpu\": %.4g, \"baseline_cpu\": %.4g, \"raster_us_cpu\": %.4g, "
             "\"frustum_visible_per_frame\": %.1f, \"buildings_per_frame\": %.1f, \"width\": %u, \"height\": %u",
             rvb_median(raster_mean, reps), rvb_median(frame_med, CITY_FRAMES),
             visible_total ? (double)culled_total / (double)visible_total : 0.0, rvb_median(test_cpu, reps),
             rvb_median(base_cpu, reps), rvb_median(raster_cpu, reps), (double)visible_total / CITY_FRAMES, (double)buildings_total / CITY_FRAMES, width,
             (unsigned)lround(width / (16.0 / 9.0)));
    rvb_report(ctx, name, "ns/test", rvb_median(test_ns, reps), rvb_median(base_ns, reps), extra);
    free(frame_med);
    free(raster_cpu);
    free(test_cpu);
    free(base_cpu);
    free(raster_mean);
    free(test_ns);
    free(base_ns);
    free(frame_us);
    soa_free(&s);
    rv_occlusion_destroy(occ);
    return errors ? 1 : 0;
}

/* ---- meshes ------------------------------------------------------------------------------- */

/* Cube corners (corner k has max[i] where bit i of k is set): its twelve triangles wound
 * counter-clockwise seen from outside, the first ten being its four walls and roof (+y). */
static const uint32_t CUBE_INDICES[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                           2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };
/* The walls and roof: the cube's triangles but the floor (-y, indices 12..17). */
static const uint32_t SURFACE_INDICES[30] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 2, 6, 7, 2, 7, 3,
                                              0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };

enum { FORM_BOXES, FORM_SURFACES, FORM_CLOSED, FORMS };

/* Frustum-culls the buildings and declares the visible ones in one form: boxes, open
 * meshes of their walls and roof (ten triangles each, drawn triangle by triangle, a quad's
 * halves as one piece), or closed exact meshes (twelve triangles; convex: each drawn as the
 * solid it bounds). */
static void raster_frame_form(rv_occlusion *occ, const rvb_city *city, const float (*corners)[8][3],
                              const float vp[16], int form)
{
    frustum6 planes;
    frustum_of(vp, &planes);
    rv_clip gl = {0};
    if (rv_occlusion_begin(occ, vp, gl, 16.0f / 9.0f) != RV_OK)
        return;
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++) {
        const rvb_box *b = &city->buildings[i];
        if (!box_in_frustum(&planes, b))
            continue;
        if (form == FORM_BOXES) {
            rv_occlusion_add_occluder(occ, b->min, b->max, NULL);
            continue;
        }
        rv_occluder_mesh m = { corners[i], 8, form == FORM_SURFACES ? SURFACE_INDICES : CUBE_INDICES,
                               form == FORM_SURFACES ? 30u : 36u,
                               form == FORM_SURFACES ? 0u : RV_OCCLUDER_CLOSED | RV_OCCLUDER_EXACT };
        rv_occlusion_add_mesh(occ, &m, NULL);
    }
    rv_occlusion_freeze(occ);
}

/* One form's figures over all frames and repetitions. */
typedef struct form_figures {
    double *raster_us, *raster_cpu, *test_ns; /* per repetition */
    uint64_t triangles, drawn, fused, culled, tests;
} form_figures;

/* One frame of one form: raster and tests timed, what rep 0 saw counted. */
static void mesh_frame(rv_occlusion *occ, const rvb_city *city, const float (*corners)[8][3], const float vp[16],
                       int form, soa *s, form_figures *fg, uint64_t t[3], bool count)
{
    rv_occlusion_boxes boxes = soa_boxes(s);
    uint64_t c0 = cpu_now_ns(), t0 = rvb_now_ns();
    raster_frame_form(occ, city, corners, vp, form);
    uint64_t t1 = rvb_now_ns(), c1 = cpu_now_ns();
    rv_occlusion_test_boxes(occ, &boxes, 0, s->count, s->visible);
    uint64_t t2 = rvb_now_ns();
    t[0] += t1 - t0;
    t[1] += c1 - c0;
    t[2] += t2 - t1;
    if (!count)
        return;
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    fg->triangles += st.triangles_submitted;
    fg->drawn += st.triangles_rasterized;
    fg->fused += st.fused_texels;
    fg->tests += s->count;
    for (uint32_t i = 0; i < s->count; i++)
        fg->culled += !s->visible[i];
}

static void mesh_report(rvb_ctx *ctx, form_figures *fg, uint32_t width)
{
    int reps = ctx->reps;
    double us[FORMS], cpu[FORMS], ns[FORMS], per_tri[FORMS], rate[FORMS];
    for (int f = 0; f < FORMS; f++) {
        us[f] = rvb_median(fg[f].raster_us, reps);
        cpu[f] = rvb_median(fg[f].raster_cpu, reps);
        ns[f] = rvb_median(fg[f].test_ns, reps);
        double tris = (double)fg[f].triangles / CITY_FRAMES;
        per_tri[f] = tris > 0 ? us[f] * 1e3 / tris : 0;
        rate[f] = fg[f].tests ? (double)fg[f].culled / (double)fg[f].tests : 0;
    }
    char extra[1024];
    snprintf(extra, sizeof extra,
             ", \"ns_per_triangle\": %.4g, \"triangles_per_frame\": %.1f, \"triangles_rasterized_per_frame\": %.1f, "
             "\"fused_texels_per_frame\": %.1f, \"test_ns\": %.4g, \"cull_rate\": %.5f, \"raster_us_cpu\": %.4g, "
             "\"closed_raster_us\": %.4g, \"closed_ns_per_triangle\": %.4g, \"closed_test_ns\": %.4g, "
             "\"closed_cull_rate\": %.5f, \"closed_raster_us_cpu\": %.4g, \"box_test_ns\": %.4g, "
             "\"box_cull_rate\": %.5f, \"box_raster_us_cpu\": %.4g, \"width\": %u",
             per_tri[FORM_SURFACES], (double)fg[FORM_SURFACES].triangles / CITY_FRAMES,
             (double)fg[FORM_SURFACES].drawn / CITY_FRAMES, (double)fg[FORM_SURFACES].fused / CITY_FRAMES,
             ns[FORM_SURFACES], rate[FORM_SURFACES], cpu[FORM_SURFACES], us[FORM_CLOSED], per_tri[FORM_CLOSED],
             ns[FORM_CLOSED], rate[FORM_CLOSED], cpu[FORM_CLOSED], ns[FORM_BOXES], rate[FORM_BOXES], cpu[FORM_BOXES],
             width);
    rvb_report(ctx, "occlusion_mesh", "us/frame", us[FORM_SURFACES], us[FORM_BOXES], extra);
}

/* occlusion_mesh: the city's frustum-visible buildings as meshes, raster time per frame
 * (ours: walls and roof as open meshes; closed_*: closed exact meshes) against the same
 * buildings as boxes (baseline), all in this run, and each buffer's object tests. */
static int mesh_case(rvb_ctx *ctx, const rvb_city *city, uint32_t width)
{
    const char *name = "occlusion_mesh";
    if (!rvb_begin_case(ctx, name))
        return 0;
    rv_occlusion_desc desc = { .width = width };
    rv_occlusion *occ = NULL;
    soa s;
    int reps = ctx->reps;
    float (*corners)[8][3] = malloc(sizeof(float[8][3]) * RVB_CITY_BUILDINGS);
    double *fig = calloc((size_t)reps * 3 * FORMS, sizeof(double));
    if (!corners || !fig || rv_occlusion_create(&desc, &occ) != RV_OK || !soa_alloc(&s)) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        rv_occlusion_destroy(occ);
        free(corners);
        free(fig);
        return 1;
    }
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++)
        for (int k = 0; k < 8; k++)
            for (int a = 0; a < 3; a++)
                corners[i][k][a] = (k >> a) & 1 ? city->buildings[i].max[a] : city->buildings[i].min[a];
    form_figures fg[FORMS];
    memset(fg, 0, sizeof fg);
    for (int f = 0; f < FORMS; f++) {
        fg[f].raster_us = fig + (size_t)reps * (3 * f);
        fg[f].raster_cpu = fig + (size_t)reps * (3 * f + 1);
        fg[f].test_ns = fig + (size_t)reps * (3 * f + 2);
    }
    for (int rep = 0; rep < reps; rep++) {
        uint64_t t[FORMS][3];
        memset(t, 0, sizeof t);
        for (int f = 0; f < CITY_FRAMES; f++) {
            float eye[3], vp[16];
            frustum6 planes;
            rvb_city_camera(f, CITY_FRAMES, eye, vp);
            frustum_of(vp, &planes);
            frustum_objects(city, &planes, &s); /* untimed: the host's frustum pass */
            for (int form = 0; form < FORMS; form++) /* the forms take turns, frame by frame */
                mesh_frame(occ, city, (const float (*)[8][3])corners, vp, form, &s, &fg[form], t[form], rep == 0);
        }
        for (int form = 0; form < FORMS; form++) {
            fg[form].raster_us[rep] = (double)t[form][0] / 1e3 / CITY_FRAMES;
            fg[form].raster_cpu[rep] = (double)t[form][1] / 1e3 / CITY_FRAMES;
            fg[form].test_ns[rep] = fg[form].tests ? (double)t[form][2] / (double)fg[form].tests : 0;
        }
    }
    mesh_report(ctx, fg, width);
    free(fig);
    free(corners);
    soa_free(&s);
    rv_occlusion_destroy(occ);
    return 0;
}

/* ---- exact reference render ------------------------------------------------------------ */

#define REF_W 1920
#define REF_H 1080

typedef struct ref_vertex { double x, y, iw; } ref_vertex; /* pixels, 1 / w */

/* Clips the convex polygon (clip-space xyzw) against z + w >= 0 and projects it onto a
 * w x h image. */
static int clip_project(const double in[][4], int n, ref_vertex *out, int w, int h)
{
    double poly[8][4];
    int m = 0;
    for (int i = 0; i < n; i++) {
        const double *a = in[i], *b = in[(i + 1) % n];
        double da = a[2] + a[3], db = b[2] + b[3];
        if (da >= 0)
            memcpy(poly[m++], a, sizeof(double) * 4);
        if ((da >= 0) != (db >= 0)) {
            double t = da / (da - db);
            for (int k = 0; k < 4; k++)
                poly[m][k] = a[k] + t * (b[k] - a[k]);
            m++;
        }
    }
    for (int i = 0; i < m; i++) {
        double pw = poly[i][3];
        out[i].x = (poly[i][0] / pw * 0.5 + 0.5) * w;
        out[i].y = (0.5 - 0.5 * poly[i][1] / pw) * h;
        out[i].iw = 1.0 / pw;
    }
    return m;
}

/* Visits the pixel centres inside the convex polygon. mode 0 (an occluder): centres
 * strictly inside get the nearest 1/w in zbuf; mode 1 (an object): true at the first
 * centre inside or on an edge that is not strictly behind zbuf. Strict for occluders and
 * inclusive for objects, so ties count as "seen" and the check can only get stricter. */
static bool raster_polygon(const ref_vertex *v, int n, double *zbuf, int mode, int w, int h)
{
    double area2 = 0;
    for (int i = 0; i < n; i++) {
        const ref_vertex *a = &v[i], *b = &v[(i + 1) % n];
        area2 += a->x * b->y - a->y * b->x;
    }
    if (area2 == 0 || n < 3)
        return false;
    double sgn = area2 > 0 ? 1 : -1;
    /* 1/w is affine over the planar polygon: fit it on its largest fan triangle. */
    int best = 1;
    double best_area = 0;
    for (int i = 1; i + 1 < n; i++) {
        double ar = fabs((v[i].x - v[0].x) * (v[i + 1].y - v[0].y) - (v[i].y - v[0].y) * (v[i + 1].x - v[0].x));
        if (ar > best_area) {
            best_area = ar;
            best = i;
        }
    }
    if (best_area == 0)
        return false;
    const ref_vertex *a = &v[0], *b = &v[best], *c = &v[best + 1];
    double det = (b->x - a->x) * (c->y - a->y) - (b->y - a->y) * (c->x - a->x);
    double gx = ((b->iw - a->iw) * (c->y - a->y) - (c->iw - a->iw) * (b->y - a->y)) / det;
    double gy = ((c->iw - a->iw) * (b->x - a->x) - (b->iw - a->iw) * (c->x - a->x)) / det;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        x0 = fmin(x0, v[i].x);
        x1 = fmax(x1, v[i].x);
        y0 = fmin(y0, v[i].y);
        y1 = fmax(y1, v[i].y);
    }
    int ix0 = (int)fmax(0, ceil(x0 - 0.5)), ix1 = (int)fmin(w - 1, floor(x1 - 0.5));
    int iy0 = (int)fmax(0, ceil(y0 - 0.5)), iy1 = (int)fmin(h - 1, floor(y1 - 0.5));
    for (int iy = iy0; iy <= iy1; iy++) {
        double py = iy + 0.5;
        for (int ix = ix0; ix <= ix1; ix++) {
            double px = ix + 0.5;
            bool inside = true;
            for (int i = 0; i < n && inside; i++) {
                const ref_vertex *p = &v[i], *q = &v[(i + 1) % n];
                double e = sgn * ((q->x - p->x) * (py - p->y) - (q->y - p->y) * (px - p->x));
                inside = mode == 0 ? e > 0 : e >= 0;
            }
            if (!inside)
                continue;
            double iw = a->iw + gx * (px - a->x) + gy * (py - a->y);
            double *z = &zbuf[(size_t)iy * w + ix];
            if (mode == 0) {
                if (iw > *z)
                    *z = iw;
            } else if (iw >= *z) {
                return true;
            }
        }
    }
    return false;
}

/* Renders (mode 0) or tests (mode 1) every face of a box on a w x h image. */
static bool render_box(const rvb_box *b, const float vp[16], double *zbuf, int mode, int w, int h)
{
    static const int faces[6][4] = { { 0, 2, 6, 4 }, { 1, 5, 7, 3 }, { 0, 4, 5, 1 },
                                     { 2, 3, 7, 6 }, { 0, 1, 3, 2 }, { 4, 6, 7, 5 } };
    double clip[8][4];
    for (int k = 0; k < 8; k++) {
        double p[3] = { (k & 1) ? b->max[0] : b->min[0], (k & 2) ? b->max[1] : b->min[1],
                        (k & 4) ? b->max[2] : b->min[2] };
        for (int r = 0; r < 4; r++)
            clip[k][r] = (double)vp[r] * p[0] + (double)vp[4 + r] * p[1] + (double)vp[8 + r] * p[2] + (double)vp[12 + r];
    }
    for (int f = 0; f < 6; f++) {
        double quad[4][4];
        for (int i = 0; i < 4; i++)
            memcpy(quad[i], clip[faces[f][i]], sizeof quad[i]);
        ref_vertex poly[8];
        int n = clip_project(quad, 4, poly, w, h);
        if (raster_polygon(poly, n, zbuf, mode, w, h) && mode == 1)
            return true;
    }
    return false;
}

static int verify_case(rvb_ctx *ctx, const rvb_city *city)
{
    const char *name = "occlusion_city_verify";
    if (!ctx->only || !strstr(ctx->only, "verify") || !rvb_begin_case(ctx, name))
        return 0;
    const uint32_t widths[2] = { 256, 512 };
    rv_occlusion *occ[2] = { NULL, NULL };
    soa s;
    double *zbuf = malloc(sizeof(double) * REF_W * REF_H);
    uint8_t *vis[2] = { malloc(RVB_CITY_OBJECTS), malloc(RVB_CITY_OBJECTS) };
    bool ok = zbuf && vis[0] && vis[1] && soa_alloc(&s);
    for (int k = 0; k < 2 && ok; k++) {
        rv_occlusion_desc desc = { .width = widths[k] };
        ok = rv_occlusion_create(&desc, &occ[k]) == RV_OK;
    }
    if (!ok) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        return 1;
    }
    uint64_t frustum_visible = 0, truly_hidden = 0, culled[2] = { 0, 0 }, false_culls[2] = { 0, 0 };
    int frames = 0;
    for (int f = 0; f < CITY_FRAMES; f += 10, frames++) {
        float eye[3], vp[16];
        frustum6 planes;
        rvb_city_camera(f, CITY_FRAMES, eye, vp);
        frustum_of(vp, &planes);
        frustum_objects(city, &planes, &s);
        rv_occlusion_boxes boxes = soa_boxes(&s);
        for (int k = 0; k < 2; k++) {
            raster_frame(occ[k], city, vp);
            rv_occlusion_test_boxes(occ[k], &boxes, 0, s.count, vis[k]);
        }
        for (size_t i = 0; i < (size_t)REF_W * REF_H; i++)
            zbuf[i] = 0;
        for (int i = 0; i < RVB_CITY_BUILDINGS; i++)
            if (box_in_frustum(&planes, &city->buildings[i]))
                render_box(&city->buildings[i], vp, zbuf, 0, REF_W, REF_H);
        uint32_t frame_false = 0;
        for (uint32_t i = 0; i < s.count; i++) {
            bool seen = render_box(&city->objects[s.index[i]], vp, zbuf, 1, REF_W, REF_H);
            truly_hidden += !seen;
            for (int k = 0; k < 2; k++) {
                culled[k] += !vis[k][i];
                if (seen && !vis[k][i]) {
                    false_culls[k]++;
                    frame_false++;
                    const rvb_box *b = &city->objects[s.index[i]];
                    fprintf(stderr, "rvis-bench: FALSE CULL frame %d width %u object %u [%g %g %g]..[%g %g %g]\n", f,
                            widths[k], s.index[i], b->min[0], b->min[1], b->min[2], b->max[0], b->max[1], b->max[2]);
                }
            }
        }
        frustum_visible += s.count;
        fprintf(stderr, "rvis-bench: verify frame %d: %u frustum-visible, %u false culls\n", f, s.count, frame_false);
    }
    char extra[512];
    snprintf(extra, sizeof extra,
             ", \"frames\": %d, \"false_culls_256\": %llu, \"false_culls_512\": %llu, \"true_hidden_fraction\": %.5f, "
             "\"cull_rate_256\": %.5f, \"cull_rate_512\": %.5f, \"reference\": \"%dx%d\"",
             frames, (unsigned long long)false_culls[0], (unsigned long long)false_culls[1],
             (double)truly_hidden / (double)frustum_visible, (double)culled[0] / (double)frustum_visible,
             (double)culled[1] / (double)frustum_visible, REF_W, REF_H);
    rvb_report(ctx, name, "false_culls", (double)(false_culls[0] + false_culls[1]), -1, extra);
    for (int k = 0; k < 2; k++) {
        rv_occlusion_destroy(occ[k]);
        free(vis[k]);
    }
    soa_free(&s);
    free(zbuf);
    return false_culls[0] + false_culls[1] ? 1 : 0;
}

/* ---- the depth feed --------------------------------------------------------------------- */

#define FEED_W 320
#define FEED_H 180
#define FEED_FRAMES 300 /* every second frame of the walk */

/* What a host's depth pre-pass would read back from frame f: every building in the
 * frustum, window depth (OpenGL: 0.5 + 0.5 z_ndc) at pixel centres, 1 (the clear value)
 * where nothing was drawn. The raster interpolates 1/w (affine across a face) and maps it
 * to window depth with the walk's projection (near 0.1, far 2000). */
static void render_feed(const rvb_city *city, const float vp[16], double *zbuf, float *depth)
{
    frustum6 planes;
    frustum_of(vp, &planes);
    for (size_t i = 0; i < (size_t)FEED_W * FEED_H; i++)
        zbuf[i] = 0;
    for (int i = 0; i < RVB_CITY_BUILDINGS; i++)
        if (box_in_frustum(&planes, &city->buildings[i]))
            render_box(&city->buildings[i], vp, zbuf, 0, FEED_W, FEED_H);
    const double n = 0.1, fa = 2000, a = (fa + n) / (fa - n), b = 2 * fa * n / (fa - n);
    for (size_t i = 0; i < (size_t)FEED_W * FEED_H; i++)
        depth[i] = zbuf[i] > 0 ? (float)(0.5 + 0.5 * (a - b * zbuf[i])) : 1.0f;
}

typedef struct feed_run {
    double *us, *cpu_us;      /* per frame and repetition */
    uint64_t proven, used;    /* buffer texels given a depth, feeds used (first repetition) */
} feed_run;

/* One feed into a fresh frame of occ: begin untimed, the feed call timed. */
static void feed_once(rv_occlusion *occ, const float vp[16], const rv_depth_feed *feed, feed_run *run, size_t at,
                      bool count)
{
    rv_occlusion_begin(occ, vp, (rv_clip){0}, 16.0f / 9.0f);
    uint64_t c0 = cpu_now_ns(), t0 = rvb_now_ns();
    rv_occlusion_feed_depth(occ, feed);
    uint64_t t1 = rvb_now_ns(), c1 = cpu_now_ns();
    run->us[at] = (double)(t1 - t0) / 1e3;
    run->cpu_us[at] = (double)(c1 - c0) / 1e3;
    if (count) {
        rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
        run->proven += fs.texels_reprojected;
        run->used += fs.feeds_used;
    }
}

/* Median over repetitions per frame, then the mean and the 50th / 99th percentiles over
 * frames. */
static void feed_summary(const double *v, int reps, double out[3])
{
    double *med = malloc(sizeof(double) * FEED_FRAMES), sum = 0;
    double *tmp = malloc(sizeof(double) * (size_t)reps);
    for (int f = 0; f < FEED_FRAMES; f++) {
        memcpy(tmp, v + (size_t)f * reps, sizeof(double) * (size_t)reps);
        med[f] = rvb_median(tmp, reps);
        sum += med[f];
    }
    out[0] = sum / FEED_FRAMES;
    out[1] = rvb_median(med, FEED_FRAMES);
    out[2] = med[(int)(0.99 * (FEED_FRAMES - 1))]; /* rvb_median sorted med */
    free(med);
    free(tmp);
}

/* occlusion_feed_320x180: per frame of the walk, the previous frame's depth (buildings,
 * 320 x 180 float, rendered untimed) is fed into a width-256 buffer. ours: the
 * rv_occlusion_feed_depth call (checks, decode, surface bounds, pyramids, reprojection in
 * 8 x 8 blocks split down to 2 x 2), mean us per frame; baseline: the same reprojection
 * proving every buffer texel on its own, in the same run. Also, on the first repetition,
 * the buffer texels proven and the objects the feed hides that the frame's occluders
 * (the frustum-visible buildings) alone do not. */
static int feed_case(rvb_ctx *ctx, const rvb_city *city)
{
    const char *name = "occlusion_feed_320x180";
    if (!rvb_begin_case(ctx, name))
        return 0;
    rv_occlusion_desc desc = { .width = 256, .feed_max_width = FEED_W, .feed_max_height = FEED_H };
    rv_occlusion *occ = NULL, *base = NULL;
    int reps = ctx->reps;
    double *zbuf = malloc(sizeof(double) * FEED_W * FEED_H);
    float *depth = malloc(sizeof(float) * FEED_W * FEED_H);
    feed_run ours = { calloc((size_t)reps * FEED_FRAMES, sizeof(double)), calloc((size_t)reps * FEED_FRAMES, sizeof(double)), 0, 0 };
    feed_run basel = { calloc((size_t)reps * FEED_FRAMES, sizeof(double)), calloc((size_t)reps * FEED_FRAMES, sizeof(double)), 0, 0 };
    soa s;
    if (rv_occlusion_create(&desc, &occ) != RV_OK || rv_occlusion_create(&desc, &base) != RV_OK || !zbuf || !depth ||
        !ours.us || !ours.cpu_us || !basel.us || !basel.cpu_us || !soa_alloc(&s)) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        return 1;
    }
    rvi_occ_feed_set_blocks(base, 1, 1);
    uint64_t tested = 0, culled_with = 0, culled_without = 0, by_feed = 0;
    float old_vp[16];
    rv_depth_feed feed = { depth, FEED_W, FEED_H, 0, RV_DEPTH_FLOAT32, false, old_vp, { false, false }, 1 };
    for (int k = 0; k < FEED_FRAMES; k++) {
        int f = 2 * k + 1;
        float eye[3], vp[16];
        rvb_city_camera(f - 1, CITY_FRAMES, eye, old_vp);
        render_feed(city, old_vp, zbuf, depth);
        rvb_city_camera(f, CITY_FRAMES, eye, vp);
        for (int rep = 0; rep < reps; rep++) {
            size_t at = (size_t)k * reps + rep;
            feed_once(occ, vp, &feed, &ours, at, rep == 0);
            feed_once(base, vp, &feed, &basel, at, rep == 0);
        }
        /* What the feed adds to the occluders, on this frame's objects (untimed). */
        frustum6 planes;
        frustum_of(vp, &planes);
        frustum_objects(city, &planes, &s);
        rv_occlusion_boxes boxes = soa_boxes(&s);
        raster_frame(base, city, vp); /* occluders alone */
        rv_occlusion_test_boxes(base, &boxes, 0, s.count, s.flat);
        rv_occlusion_begin(occ, vp, (rv_clip){0}, 16.0f / 9.0f);
        rv_occlusion_feed_depth(occ, &feed);
        for (int i = 0; i < RVB_CITY_BUILDINGS; i++)
            if (box_in_frustum(&planes, &city->buildings[i]))
                rv_occlusion_add_occluder(occ, city->buildings[i].min, city->buildings[i].max, NULL);
        rv_occlusion_test_boxes(occ, &boxes, 0, s.count, s.visible);
        by_feed += rv_occlusion_get_feed_stats(occ).objects_hidden_by_feed;
        for (uint32_t i = 0; i < s.count; i++) {
            culled_with += !s.visible[i];
            culled_without += !s.flat[i];
        }
        tested += s.count;
    }
    double o[3], b[3], oc[3], bc[3];
    feed_summary(ours.us, reps, o);
    feed_summary(basel.us, reps, b);
    feed_summary(ours.cpu_us, reps, oc);
    feed_summary(basel.cpu_us, reps, bc);
    char extra[768];
    snprintf(extra, sizeof extra,
             ", \"us_p50\": %.4g, \"us_p99\": %.4g, \"baseline_us_p50\": %.4g, \"ours_cpu\": %.4g, "
             "\"baseline_cpu\": %.4g, \"frames\": %d, \"feeds_used\": %llu, \"proven_texels_per_frame\": %.1f, "
             "\"baseline_proven_texels_per_frame\": %.1f, \"buffer_texels\": %u, \"cull_rate_occluders\": %.5f, "
             "\"cull_rate_with_feed\": %.5f, \"hidden_by_feed_alone_per_frame\": %.1f",
             o[1], o[2], b[1], oc[0], bc[0], FEED_FRAMES, (unsigned long long)ours.used,
             (double)ours.proven / FEED_FRAMES, (double)basel.proven / FEED_FRAMES, 256u * 144u,
             tested ? (double)culled_without / (double)tested : 0.0, tested ? (double)culled_with / (double)tested : 0.0,
             (double)by_feed / FEED_FRAMES);
    rvb_report(ctx, name, "us/frame", o[0], b[0], extra);
    rv_occlusion_destroy(occ);
    rv_occlusion_destroy(base);
    soa_free(&s);
    free(zbuf);
    free(depth);
    free(ours.us);
    free(ours.cpu_us);
    free(basel.us);
    free(basel.cpu_us);
    return 0;
}

/* ---- a dense mesh ------------------------------------------------------------------------- */

#define DENSE_QUADS 128
#define DENSE_FRAMES 60
#define DENSE_OBJECTS 4096
#define PI_D 3.14159265358979323846

static float terrain_height(double x, double z)
{
    return (float)(6 * sin(x / 23) * cos(z / 31) + 3 * sin((x + z) / 11));
}

/* Column-major OpenGL view-projection of an eye looking along yaw (radians about +y, 0 =
 * +x) pitched down by pitch: 60 degrees, 16:9, near 0.1, far 2000. */
static void dense_camera(int f, float vp[16])
{
    double t = (double)f / DENSE_FRAMES, eye[3] = { -150 + 260 * t, 0, -120 + 60 * sin(6 * t) };
    eye[1] = terrain_height(eye[0], eye[2]) + 14;
    double yaw = 0.6 * sin(4 * t), pitch = 0.12;
    double fw[3] = { cos(yaw) * cos(pitch), -sin(pitch), sin(yaw) * cos(pitch) };
    double up0[3] = { 0, 1, 0 }, rt[3], up[3];
    rt[0] = fw[1] * up0[2] - fw[2] * up0[1];
    rt[1] = fw[2] * up0[0] - fw[0] * up0[2];
    rt[2] = fw[0] * up0[1] - fw[1] * up0[0];
    double l = sqrt(rt[0] * rt[0] + rt[1] * rt[1] + rt[2] * rt[2]);
    for (int i = 0; i < 3; i++)
        rt[i] /= l;
    up[0] = rt[1] * fw[2] - rt[2] * fw[1];
    up[1] = rt[2] * fw[0] - rt[0] * fw[2];
    up[2] = rt[0] * fw[1] - rt[1] * fw[0];
    double view[16] = { rt[0], up[0], -fw[0], 0, rt[1], up[1], -fw[1], 0, rt[2], up[2], -fw[2], 0, 0, 0, 0, 1 };
    for (int i = 0; i < 3; i++)
        view[12 + i] = -(view[i] * eye[0] + view[4 + i] * eye[1] + view[8 + i] * eye[2]);
    double n = 0.1, fa = 2000, fy = 1 / tan(PI_D / 6), asp = 16.0 / 9.0;
    double proj[16] = { fy / asp, 0, 0, 0, 0, fy, 0, 0, 0, 0, (fa + n) / (n - fa), -1, 0, 0, 2 * fa * n / (n - fa), 0 };
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            double sum = 0;
            for (int k = 0; k < 4; k++)
                sum += proj[k * 4 + r] * view[c * 4 + k];
            vp[c * 4 + r] = (float)sum;
        }
}

typedef struct dense_figures {
    double *us, *cpu;
    uint64_t covered, culled, tests, outlined;
} dense_figures;

static int dense_case(rvb_ctx *ctx)
{
    const char *name = "occlusion_dense_mesh";
    if (!rvb_begin_case(ctx, name))
        return 0;
    enum { N = DENSE_QUADS, V = (N + 1) * (N + 1), T = 2 * N * N };
    float (*pos)[3] = malloc(sizeof(float[3]) * V);
    uint32_t *idx = malloc(sizeof(uint32_t) * 3 * T);
    float *obj = malloc(sizeof(float) * 6 * DENSE_OBJECTS);
    uint8_t *visible = malloc(DENSE_OBJECTS);
    double *fig = calloc((size_t)ctx->reps * 4, sizeof(double));
    rv_occlusion *occ[2] = { NULL, NULL };
    rv_occlusion_desc desc = { .width = 256 };
    if (!pos || !idx || !obj || !visible || !fig || rv_occlusion_create(&desc, &occ[0]) != RV_OK ||
        rv_occlusion_create(&desc, &occ[1]) != RV_OK) {
        fprintf(stderr, "rvis-bench: %s: out of memory\n", name);
        rv_occlusion_destroy(occ[0]);
        rv_occlusion_destroy(occ[1]);
        free(pos), free(idx), free(obj), free(visible), free(fig);
        return 1;
    }
    occ[1]->outline.mode = 2; /* the baseline: pieces */
    for (int z = 0; z <= N; z++)
        for (int x = 0; x <= N; x++) {
            float *p = pos[z * (N + 1) + x];
            p[0] = -200 + 400.0f * (float)x / N;
            p[2] = -200 + 400.0f * (float)z / N;
            p[1] = terrain_height(p[0], p[2]);
        }
    for (uint32_t z = 0, k = 0; z < N; z++)
        for (uint32_t x = 0; x < N; x++) {
            uint32_t a = z * (N + 1) + x, c = a + N + 1;
            uint32_t t[6] = { a, c, a + 1, a + 1, c, c + 1 };
            memcpy(idx + k, t, sizeof t);
            k += 6;
        }
    rvb_rng rng = { 0xDE45E };
    float *o[6];
    for (int k = 0; k < 6; k++)
        o[k] = obj + (size_t)k * DENSE_OBJECTS;
    for (int i = 0; i < DENSE_OBJECTS; i++) {
        float x = rvb_uniform(&rng, -190, 190), z = rvb_uniform(&rng, -190, 190), y = terrain_height(x, z);
        o[0][i] = x - 0.5f, o[1][i] = y, o[2][i] = z - 0.5f;
        o[3][i] = x + 0.5f, o[4][i] = y + 2, o[5][i] = z + 0.5f;
    }
    rv_occlusion_boxes boxes = { { o[0], o[1], o[2] }, { o[3], o[4], o[5] }, NULL };
    rv_occluder_mesh mesh = { (const float (*)[3])pos, V, idx, 3 * T, 0 };
    dense_figures fg[2];
    memset(fg, 0, sizeof fg);
    for (int p = 0; p < 2; p++) {
        fg[p].us = fig + (size_t)ctx->reps * (2 * p);
        fg[p].cpu = fig + (size_t)ctx->reps * (2 * p + 1);
    }
    for (int rep = 0; rep < ctx->reps; rep++) {
        uint64_t t[2][2] = { { 0, 0 }, { 0, 0 } };
        for (int f = 0; f < DENSE_FRAMES; f++) {
            float vp[16];
            dense_camera(f, vp);
            for (int p = 0; p < 2; p++) { /* the paths take turns, frame by frame */
                uint64_t c0 = cpu_now_ns(), t0 = rvb_now_ns();
                rv_occlusion_begin(occ[p], vp, (rv_clip){ 0 }, 16.0f / 9.0f);
                rv_occlusion_add_mesh(occ[p], &mesh, NULL);
                rv_occlusion_freeze(occ[p]);
                t[p][0] += rvb_now_ns() - t0;
                t[p][1] += cpu_now_ns() - c0;
                if (rep)
                    continue;
                rv_occlusion_test_boxes(occ[p], &boxes, 0, DENSE_OBJECTS, visible);
                fg[p].covered += rv_occlusion_get_stats(occ[p]).texels_covered;
                fg[p].outlined += rv_occlusion_get_stats(occ[p]).meshes_outlined;
                fg[p].tests += DENSE_OBJECTS;
                for (int i = 0; i < DENSE_OBJECTS; i++)
                    fg[p].culled += !visible[i];
            }
        }
        for (int p = 0; p < 2; p++) {
            fg[p].us[rep] = (double)t[p][0] / 1e3 / DENSE_FRAMES;
            fg[p].cpu[rep] = (double)t[p][1] / 1e3 / DENSE_FRAMES;
        }
    }
    double us[2], cpu[2];
    for (int p = 0; p < 2; p++) {
        us[p] = rvb_median(fg[p].us, ctx->reps);
        cpu[p] = rvb_median(fg[p].cpu, ctx->reps);
    }
    char extra[768];
    snprintf(extra, sizeof extra,
             ", \"triangles\": %d, \"ns_per_triangle\": %.4g, \"baseline_ns_per_triangle\": %.4g, "
             "\"outlined_frames\": %llu, \"texels_covered\": %.1f, \"baseline_texels_covered\": %.1f, "
             "\"cull_rate\": %.5f, \"baseline_cull_rate\": %.5f, \"us_cpu\": %.4g, \"baseline_us_cpu\": %.4g, "
             "\"frames\": %d, \"width\": 256",
             T, us[0] * 1e3 / T, us[1] * 1e3 / T, (unsigned long long)fg[0].outlined,
             (double)fg[0].covered / DENSE_FRAMES, (double)fg[1].covered / DENSE_FRAMES,
             fg[0].tests ? (double)fg[0].culled / (double)fg[0].tests : 0.0,
             fg[1].tests ? (double)fg[1].culled / (double)fg[1].tests : 0.0, cpu[0], cpu[1], DENSE_FRAMES);
    rvb_report(ctx, name, "us/frame", us[0], us[1], extra);
    int failed = fg[0].outlined != DENSE_FRAMES;
    if (failed)
        fprintf(stderr, "rvis-bench: %s: the mesh was drawn by its outline in %llu of %d frames\n", name,
                (unsigned long long)fg[0].outlined, DENSE_FRAMES);
    rv_occlusion_destroy(occ[0]);
    rv_occlusion_destroy(occ[1]);
    free(pos), free(idx), free(obj), free(visible), free(fig);
    return failed;
}

int rvb_occlusion(rvb_ctx *ctx);
int rvb_occlusion(rvb_ctx *ctx)
{
    bool want = !ctx->only || strstr("occlusion_city_256 occlusion_city_512 occlusion_mesh occlusion_city_verify "
                                     "occlusion_feed_320x180 occlusion_dense_mesh",
                                     ctx->only);
    if (!want)
        return 0;
    rvb_city city;
    if (!rvb_city_generate(&city))
        return 1;
    int failures = 0;
    failures += city_case(ctx, &city, 256, "occlusion_city_256");
    failures += city_case(ctx, &city, 512, "occlusion_city_512");
    failures += mesh_case(ctx, &city, 256);
    failures += verify_case(ctx, &city);
    failures += feed_case(ctx, &city);
    failures += dense_case(ctx);
    rvb_city_free(&city);
    return failures;
}
