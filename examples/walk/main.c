/* rvis-walk: walks a camera through the embedded city or a Quake III map, lets rvis decide
 * what to draw each frame, and (with --verify) proves with a reference rasteriser that rvis
 * never hid anything visible. Exit codes: 0 success, 1 a false cull (or a verification
 * limit exceeded), 2 bad input. Progress goes to stderr; stdout carries the human report,
 * or only the one output given as - (--json, --dump-scene or --dump-visibility). */
#include "args.h"
#include "bsp.h"
#include "city.h"
#include "drive.h"
#include "rvis.h"
#include "dump.h"
#include "feed.h"
#include "image.h"
#include "level.h"
#include "occluders.h"
#include "path.h"
#include "pk3.h"
#include "reference.h"
#include "report.h"
#include "view.h"
#include "bench_jobs.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_FALSE_CULL_LINES 20

#define WALK_STR_(x) #x
#define WALK_STR(x) WALK_STR_(x)

typedef struct options {
    const char *map;
    bool verify;
    uint32_t verify_width, verify_height, verify_every;
    double max_draw_ratio;      /* <= 0: no limit */
    const char *json;
    const char *dump_scene, *dump_visibility;
    const char *images;
    uint32_t image_every;
    uint32_t frames;            /* 0: the whole path */
    bool quiet;
    int64_t sabotage_object;    /* -1: none; else this object is marked culled every frame */
    uint32_t occlusion_width;   /* rvis occlusion buffer width; 0 = off */
    uint32_t fine_tests;        /* rv_occlusion_desc.fine_tests (default 1) */
    uint32_t cull_unsampled;    /* rv_view.cull_unsampled (default 1) */
    bool require_all_stages;    /* city: exit 1 when a module counter stayed 0 */
    bool pvs;                   /* maps: the host skips objects outside the compiler's PVS */
    bool depth_feed;            /* hand rvis each frame's depth image one frame late */
    uint32_t feed_width, feed_height;
    bool feed_res_given;
    bool require_feed;          /* exit 1 unless the feed hid something and every cut's feed
                                   was ignored */
    uint32_t workers;           /* a pthread job system of this many workers; 0 = none */
} options;

static const char usage[] =
    "usage: rvis-walk [options]\n"
    "  (no --map)              walk the embedded city\n"
    "  --map NAME|PAK:maps/X.bsp|FILE.bsp\n"
    "                          a Quake III map; NAME is looked up in\n"
    "                          " RVW_DEFAULT_PAK "\n"
    "  --verify                check every frame against the reference rasteriser\n"
    "  --verify-res WxH        its resolution (default 1280x720; also the viewport)\n"
    "  --verify-every N        check every Nth frame only (default 1)\n"
    "  --max-draw-ratio R      fail (exit 1) when drawn / truly visible exceeds R\n"
    "  --json FILE|-           write the JSON report (- = stdout, which then holds only it)\n"
    "  --dump-scene FILE|-     the scene as JSON lines\n"
    "  --dump-visibility FILE|-  per-frame verdicts as JSON lines (one output at most on -)\n"
    "  --images DIR            PNG pictures (top-down map, oracle view) into DIR\n"
    "  --image-every N         picture every Nth frame (default 60)\n"
    "  --frames N              stop after N frames\n"
    "  --quiet                 no progress lines\n"
    "  --occlusion-width N     rvis occlusion buffer width in texels (default 256, 0 = off)\n"
    "  --fine-tests 0|1|2      rvis tests finer than a texel (rv_occlusion_desc.fine_tests;\n"
    "                          default 1; 2 also at pixel centres, with --cull-unsampled 1)\n"
    "  --cull-unsampled 0|1    rvis culls objects whose box holds no pixel centre of the\n"
    "                          viewport (rv_view.cull_unsampled; default 1)\n"
    "  --workers N             hand rvis a job system of N workers (pthreads, the calling\n"
    "                          thread one of them; default 0: none, rvis runs serially)\n"
    "  --require-all-stages    city: fail (exit 1) when a module counter stays 0\n"
    "  --pvs                   maps: after rvis, skip objects outside the compiler's PVS\n"
    "                          (as a Quake III engine would); the oracle still checks them\n"
    "  --depth-feed            after each frame, draw the depth a host's pre-pass would hold\n"
    "                          (the static surfaces rvis drew) and hand it to rvis one frame\n"
    "                          late, as a GPU read-back arrives (rv_frame_feed_depth)\n"
    "  --feed-res WxH          that image's resolution (default 320x180)\n"
    "  --require-feed          with --depth-feed: fail (exit 1) unless the feed hid something\n"
    "                          the occluders alone did not, and rvis ignored every cut's feed\n"
    "  --sabotage-object N     checks the checker: overrule rvis and cull object N every\n"
    "                          frame, so --verify must report it (exit 1) when it is visible\n"
    "  -h, --help              this text\n"
    "Exit codes: 0 success, 1 a false cull or a limit exceeded, 2 bad input.\n";

static int bad_input(const char *fmt, const char *arg)
{
    fprintf(stderr, "rvis-walk: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

enum {
    OPT_MAP = 256, OPT_VERIFY, OPT_VERIFY_RES, OPT_VERIFY_EVERY, OPT_MAX_DRAW_RATIO, OPT_JSON,
    OPT_DUMP_SCENE, OPT_DUMP_VISIBILITY, OPT_IMAGES, OPT_IMAGE_EVERY, OPT_FRAMES, OPT_QUIET,
    OPT_OCCLUSION_WIDTH, OPT_FINE_TESTS, OPT_REQUIRE_ALL_STAGES, OPT_PVS, OPT_SABOTAGE_OBJECT, OPT_DEPTH_FEED, OPT_FEED_RES,
    OPT_REQUIRE_FEED, OPT_CULL_UNSAMPLED, OPT_WORKERS,
};

static const struct option long_options[] = {
    { "map", required_argument, NULL, OPT_MAP },
    { "verify", no_argument, NULL, OPT_VERIFY },
    { "verify-res", required_argument, NULL, OPT_VERIFY_RES },
    { "verify-every", required_argument, NULL, OPT_VERIFY_EVERY },
    { "max-draw-ratio", required_argument, NULL, OPT_MAX_DRAW_RATIO },
    { "json", required_argument, NULL, OPT_JSON },
    { "dump-scene", required_argument, NULL, OPT_DUMP_SCENE },
    { "dump-visibility", required_argument, NULL, OPT_DUMP_VISIBILITY },
    { "images", required_argument, NULL, OPT_IMAGES },
    { "image-every", required_argument, NULL, OPT_IMAGE_EVERY },
    { "frames", required_argument, NULL, OPT_FRAMES },
    { "quiet", no_argument, NULL, OPT_QUIET },
    { "occlusion-width", required_argument, NULL, OPT_OCCLUSION_WIDTH },
    { "fine-tests", required_argument, NULL, OPT_FINE_TESTS },
    { "cull-unsampled", required_argument, NULL, OPT_CULL_UNSAMPLED },
    { "workers", required_argument, NULL, OPT_WORKERS },
    { "require-all-stages", no_argument, NULL, OPT_REQUIRE_ALL_STAGES },
    { "pvs", no_argument, NULL, OPT_PVS },
    { "sabotage-object", required_argument, NULL, OPT_SABOTAGE_OBJECT },
    { "depth-feed", no_argument, NULL, OPT_DEPTH_FEED },
    { "feed-res", required_argument, NULL, OPT_FEED_RES },
    { "require-feed", no_argument, NULL, OPT_REQUIRE_FEED },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* Returns 0 when parsed, else the exit code (2, or -1 for --help). getopt_long's own
 * messages are off ("+:" and opterr = 0) so that every refusal is one line of ours and exit
 * code 2; "+" also stops at the first operand, which is refused (rvis-walk takes none). */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){ .verify_width = 1280, .verify_height = 720, .verify_every = 1, .image_every = 60,
                    .sabotage_object = -1, .occlusion_width = 256, .fine_tests = RVW_DEFAULT_FINE_TESTS,
                    .cull_unsampled = RVW_DEFAULT_CULL_UNSAMPLED, .feed_width = 320, .feed_height = 180 };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
        const char *v = optarg;
        /* A value that is the next option ("--map --quiet") is a value left out. */
        if (rvw_value_is_option(v))
            return bad_input("%s needs a value, not an option (see --help)",
                             optind >= 2 && argv[optind - 1] == v ? argv[optind - 2] : argv[optind - 1]);
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return -1;
        case OPT_MAP: o->map = v; break;
        case OPT_VERIFY: o->verify = true; break;
        case OPT_QUIET: o->quiet = true; break;
        case OPT_REQUIRE_ALL_STAGES: o->require_all_stages = true; break;
        case OPT_PVS: o->pvs = true; break;
        case OPT_DEPTH_FEED: o->depth_feed = true; break;
        case OPT_REQUIRE_FEED: o->require_feed = true; break;
        case OPT_JSON: o->json = v; break;
        case OPT_DUMP_SCENE: o->dump_scene = v; break;
        case OPT_DUMP_VISIBILITY: o->dump_visibility = v; break;
        case OPT_IMAGES: o->images = v; break;
        case OPT_VERIFY_RES:
            if (!rvw_parse_size(v, 16, 8192, &o->verify_width, &o->verify_height))
                return bad_input("--verify-res wants WxH between 16x16 and 8192x8192, not '%s'", v);
            break;
        case OPT_FEED_RES:
            if (!rvw_parse_size(v, 8, 4096, &o->feed_width, &o->feed_height))
                return bad_input("--feed-res wants WxH between 8x8 and 4096x4096, not '%s'", v);
            o->feed_res_given = true;
            break;
        case OPT_VERIFY_EVERY:
            if (!rvw_parse_u32(v, &o->verify_every, 1))
                return bad_input("--verify-every wants a positive integer, not '%s'", v);
            break;
        case OPT_MAX_DRAW_RATIO: {
            char *end;
            o->max_draw_ratio = strtod(v, &end);
            if (end == v || *end || !(o->max_draw_ratio > 0) || !isfinite(o->max_draw_ratio))
                return bad_input("--max-draw-ratio wants a positive number, not '%s'", v);
            break;
        }
        case OPT_IMAGE_EVERY:
            if (!rvw_parse_u32(v, &o->image_every, 1))
                return bad_input("--image-every wants a positive integer, not '%s'", v);
            break;
        case OPT_SABOTAGE_OBJECT: {
            uint32_t n;
            if (!rvw_parse_u32(v, &n, 0))
                return bad_input("--sabotage-object wants an object index, not '%s'", v);
            o->sabotage_object = n;
            break;
        }
        case OPT_OCCLUSION_WIDTH:
            if (!rvw_parse_u32(v, &o->occlusion_width, 0) || o->occlusion_width > 8192)
                return bad_input("--occlusion-width wants an integer 0..8192, not '%s'", v);
            break;
        case OPT_FINE_TESTS:
            if (!rvw_parse_u32(v, &o->fine_tests, 0) || o->fine_tests > 2)
                return bad_input("--fine-tests wants 0, 1 or 2, not '%s'", v);
            break;
        case OPT_CULL_UNSAMPLED:
            if (!rvw_parse_u32(v, &o->cull_unsampled, 0) || o->cull_unsampled > 1)
                return bad_input("--cull-unsampled wants 0 or 1, not '%s'", v);
            break;
        case OPT_WORKERS:
            if (!rvw_parse_u32(v, &o->workers, 0) || o->workers > RV_MAX_WORKERS)
                return bad_input("--workers wants an integer 0.." WALK_STR(RV_MAX_WORKERS) ", not '%s'", v);
            break;
        case OPT_FRAMES:
            if (!rvw_parse_u32(v, &o->frames, 1))
                return bad_input("--frames wants a positive integer, not '%s'", v);
            break;
        case ':':
            return bad_input("%s needs a value (see --help)", argv[optind - 1]);
        default: /* '?': an unknown or ambiguous option, or a value given to a flag */
            return bad_input("unknown or ambiguous argument '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad_input("unexpected argument '%s' (see --help)", argv[optind]);
    /* stdout holds one output whole, or their lines would interleave */
    const char *outputs[] = { o->json, o->dump_scene, o->dump_visibility };
    int on_stdout = 0;
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++)
        on_stdout += outputs[k] && !strcmp(outputs[k], "-");
    if (on_stdout > 1)
        return bad_input("%s", "--json, --dump-scene and --dump-visibility: only one of them may be '-' (stdout)");
    if ((o->feed_res_given || o->require_feed) && !o->depth_feed)
        return bad_input("%s", "--feed-res and --require-feed need --depth-feed");
    if ((o->max_draw_ratio > 0 || o->sabotage_object >= 0) && !o->verify)
        return bad_input("%s", "--max-draw-ratio and --sabotage-object need --verify (nothing checks them without it)");
    if (o->images && !rvw_have_images())
        return bad_input("%s", "--images needs cairo (libcairo2-dev), and rvis-walk was built without it");
    return 0;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* The scene: the city, or a map read and pathed. Returns 0 or an exit code. */
static int load_scene(const options *o, rvw_level *level, rvw_city *city, rvw_run *run,
                      rvw_bsp_pvs *pvs)
{
    char err[512];
    if (!o->map) {
        if (!rvw_city_generate(city, level))
            return bad_input("%s", "out of memory generating the city");
        run->is_city = true;
        return 0;
    }
    rvw_map_source src;
    uint8_t *bytes = NULL;
    size_t size = 0;
    bool pak_missing;
    if (!rvw_map_source_parse(o->map, &src, err, sizeof err) ||
        !rvw_map_source_read(&src, &bytes, &size, &pak_missing, err, sizeof err))
        return bad_input("%s", err);
    rvw_bsp_map map;
    bool ok = rvw_bsp_read(bytes, size, src.name, level, &map, err, sizeof err);
    free(bytes);
    if (!ok) {
        fprintf(stderr, "rvis-walk: %s: %s\n", o->map, err);
        return 2;
    }
    rvw_path_result built = rvw_path_build(level, &map, &run->path);
    run->has_map = true;
    run->map = map.stats;
    rvw_level_count_candidates(level, &run->candidates);
    *pvs = map.pvs; /* kept for the oracle's PVS figure */
    memset(&map.pvs, 0, sizeof map.pvs);
    rvw_bsp_map_free(&map);
    if (built == RVW_PATH_OVER_BUDGET) {
        fprintf(stderr, "rvis-walk: %s: the camera path needs more than %llu brush and tree tests "
                        "(a hostile map?)\n", o->map, (unsigned long long)RVW_PATH_WORK_BUDGET);
        return 2;
    }
    if (built != RVW_PATH_BUILT)
        return bad_input("%s", "out of memory building the camera path");
    return 0;
}

static FILE *open_out(const char *path, const char *what)
{
    if (!strcmp(path, "-"))
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "rvis-walk: cannot write %s %s: %s\n", what, path, strerror(errno));
    return f;
}

/* Closes an output (stdout is flushed, not closed). False, with a message, when anything
 * written to it failed (a full disk, /dev/full): the run then exits 2. */
static bool close_out(FILE *f, const char *path, const char *what)
{
    if (!f)
        return true;
    bool ok = !ferror(f);
    if (f == stdout)
        ok = fflush(f) == 0 && ok;
    else
        ok = fclose(f) == 0 && ok;
    if (!ok)
        fprintf(stderr, "rvis-walk: writing %s %s failed: %s\n", what, path, strerror(errno));
    return ok;
}

typedef struct walk {
    const options *opt;
    rvw_level *level;
    const rvw_city *city;
    rvw_drive *drive;
    rvw_reference ref;
    uint8_t *include;
    uint8_t *ideal_visible;     /* per object: seen by the ideal-occluder count this frame */
    uint8_t *ideal_box_visible; /* per object: kept by the ideal bound drawing boxes */
    uint8_t *truly_visible;     /* per object: the oracle saw a pixel of it (for the dump) */
    rvw_occluder_set occluders; /* the occluders rvis gets, as triangles: a map's once, the
                                   city's buildings per frame (ideal bound, false-cull names) */
    rvw_bsp_pvs pvs;            /* maps: the compiler's PVS */
    uint8_t *sabotaged;         /* the verdicts with --sabotage-object applied */
    uint8_t *pvs_verdict;       /* the verdicts after the host's PVS stage (--pvs) */
    rvw_run *run;
    FILE *visibility;
    uint64_t unexplained;       /* object-frames neither drawn nor recorded (a bug) */
    rvw_feed feed;              /* --depth-feed: the last frame's depth image */
} walk;

static const char *const kind_names[RVW_OBJ_KIND_COUNT] = {
    "surface", "building", "prop", "part item", "vehicle", "terrain tile", "HLOD stand-in",
};

/* Names what hid a falsely culled object: the declared occluders in front of its visible
 * pixels (found with the oracle's rasteriser), most pixels first, and how many of its
 * pixels lie behind them all together. Needs the ideal bound of this frame computed first
 * (its occluder buffer holds these occluders). */
static void name_false_cull(walk *w, const rvw_view *view, uint32_t object, uint8_t verdict, rvw_false_cull *out)
{
    rvw_depth_convention clip = { false, false };
    *out = (rvw_false_cull){ .frame = view->frame, .object = object, .pixels = w->ref.pixels[object],
                             .occluder_kind = w->level->city ? "building" : "occluder" };
    memcpy(out->eye, view->eye, sizeof out->eye);
    out->culled_by = verdict == RVW_CULLED_FRUSTUM ? "the frustum"
                     : verdict == RVW_CULLED_PVS   ? "the PVS (--pvs)"
                     : verdict == RVW_CULLED_UNSAMPLED ? "the unsampled test (--cull-unsampled)" : "occlusion";
    out->covered = rvw_reference_covered_by_ideal(&w->ref, object);
    for (uint32_t k = 0; k < w->occluders.count; k++) {
        const rvw_occluder_ref *o = &w->occluders.items[k];
        if (!rvw_reference_box_in_view(&o->bounds, view->view_projection, clip))
            continue;
        int64_t px = rvw_reference_cover(&w->ref, view->view_projection, clip, object,
                                         w->occluders.triangles + (size_t)o->first_triangle * 9, o->triangle_count);
        if (px <= 0)
            continue;
        out->occluders_in_front++;
        /* keep the RVW_NAMED_OCCLUDERS with the most pixels, sorted */
        uint32_t n = out->occluder_count, at = n;
        while (at > 0 && out->occluders[at - 1].pixels < (uint32_t)px)
            at--;
        if (at >= RVW_NAMED_OCCLUDERS)
            continue;
        if (n == RVW_NAMED_OCCLUDERS)
            n--;
        memmove(out->occluders + at + 1, out->occluders + at, (n - at) * sizeof out->occluders[0]);
        out->occluders[at] = (rvw_named_occluder){ o->index, (uint32_t)px, o->bounds, o->kind };
        out->occluder_count = n + 1;
    }
}

/* What the line says of an occlusion cull that no declared occluder explains. With the
 * depth feed, rvis takes a crack in the level no sample of the fed image looked through as
 * closed (docs/occlusion.md, "The depth feed"): such a cull may be that, not a fault. */
static const char *unexplained(const walk *w, const char *culled_by)
{
    if (strcmp(culled_by, "occlusion"))
        return "";
    return w->opt->depth_feed ? ": a culling bug, or hidden by the depth feed through a crack no sample of "
                                "the fed image looked through"
                              : ": a culling bug";
}

static void print_false_cull(const walk *w, const rvw_false_cull *f)
{
    fprintf(stderr, "rvis-walk: FALSE CULL at frame %u: object %u (%s, %u pixels visible) culled by %s; "
                    "eye (%.1f, %.1f, %.1f)", f->frame, f->object, kind_names[w->level->objects[f->object].kind],
            f->pixels, f->culled_by, (double)f->eye[0], (double)f->eye[1], (double)f->eye[2]);
    if (f->occluders_in_front == 0) {
        fprintf(stderr, "; no declared occluder lies in front of it%s\n", unexplained(w, f->culled_by));
        return;
    }
    fprintf(stderr, "; %u of its pixels lie behind %u declared %s%s:", f->covered, f->occluders_in_front,
            f->occluder_kind, f->occluders_in_front == 1 ? "" : "s");
    for (uint32_t k = 0; k < f->occluder_count; k++) {
        const rvw_named_occluder *o = &f->occluders[k];
        fprintf(stderr, "%s %s %u (%u px, box %.0f %.0f %.0f .. %.0f %.0f %.0f)", k ? "," : "", o->kind,
                o->index, o->pixels, (double)o->box.min[0], (double)o->box.min[1], (double)o->box.min[2],
                (double)o->box.max[0], (double)o->box.max[1], (double)o->box.max[2]);
    }
    if (f->occluders_in_front > f->occluder_count)
        fprintf(stderr, " and %u more", f->occluders_in_front - f->occluder_count);
    if (f->covered == f->pixels)
        fputs("; the oracle sees it through them (a face no surface draws: caulk, sky or a hole in the "
              "level)\n", stderr);
    else
        fprintf(stderr, "; %u visible pixels lie behind no occluder%s\n", f->pixels - f->covered,
                unexplained(w, f->culled_by));
}

/* The oracle's verdict on one frame: counts false culls and names the first few. */
/* Does the box's image (all of it in front of the eye) hold no pixel centre of a W x H
 * image? Then the oracle, which samples pixel centres, cannot see the object however
 * little stands in front of it. False when unsure (a corner at or behind the eye). */
static bool covers_no_pixel_centre(const rvw_box *b, const float vp[16], uint32_t W, uint32_t H)
{
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int k = 0; k < 8; k++) {
        double p[3] = { k & 1 ? b->max[0] : b->min[0], k & 2 ? b->max[1] : b->min[1], k & 4 ? b->max[2] : b->min[2] };
        double c[4];
        for (int r = 0; r < 4; r++)
            c[r] = (double)vp[r] * p[0] + (double)vp[4 + r] * p[1] + (double)vp[8 + r] * p[2] + vp[12 + r];
        if (!(c[3] > 1e-6))
            return false;
        double px = (c[0] / c[3] * 0.5 + 0.5) * W, py = (0.5 - c[1] / c[3] * 0.5) * H;
        x0 = fmin(x0, px);
        x1 = fmax(x1, px);
        y0 = fmin(y0, py);
        y1 = fmax(y1, py);
    }
    x0 = fmax(x0, 0);
    y0 = fmax(y0, 0);
    x1 = fmin(x1, W);
    y1 = fmin(y1, H);
    /* Centres sit at i + 0.5. */
    return !(floor(x1 - 0.5) >= ceil(x0 - 0.5) && floor(y1 - 0.5) >= ceil(y0 - 0.5));
}

static bool verify_frame(walk *w, const rvw_view *view, const rvw_frame_result *r)
{
    const rvw_level *level = w->level;
    for (uint32_t i = 0; i < level->object_count; i++)
        w->include[i] = r->verdict[i] != RVW_EXCLUDED;
    double t0 = now_us();
    rvw_depth_convention clip = { false, false };
    int64_t visible = rvw_reference_render(&w->ref, level, view->view_projection, clip, w->include);
    double t1 = now_us();
    if (visible < 0)
        return false;

    /* The bounds: a pixel-exact culler with exactly rvis's occluders, and the PVS. */
    if (level->city) { /* buildings carry their shell as occluder box, when not left out */
        rvw_occluders_clear(&w->occluders);
        for (uint32_t i = 0; i < level->object_count; i++)
            if (level->objects[i].kind == RVW_OBJ_BUILDING && r->verdict[i] != RVW_EXCLUDED &&
                !rvw_occluders_add_box(&w->occluders, &level->objects[i].bounds, i, "building"))
                return false;
    }
    if (!rvw_reference_occluders_clear(&w->ref))
        return false;
    for (uint32_t k = 0; k < w->occluders.count; k++) {
        const rvw_occluder_ref *o = &w->occluders.items[k];
        if (rvw_reference_box_in_view(&o->bounds, view->view_projection, clip))
            rvw_reference_occluders_draw(&w->ref, view->view_projection, clip,
                                         w->occluders.triangles + (size_t)o->first_triangle * 9, o->triangle_count);
    }
    int64_t ideal_boxes = rvw_reference_ideal_count(&w->ref, level, view->view_projection, clip, w->include, true,
                                                    w->ideal_box_visible);
    int64_t ideal = rvw_reference_ideal_count(&w->ref, level, view->view_projection, clip, w->include, false,
                                              w->ideal_visible);
    if (ideal < 0 || ideal_boxes < 0)
        return false;

    for (uint32_t i = 0; i < level->object_count; i++) {
        bool culled = r->verdict[i] == RVW_CULLED_FRUSTUM || r->verdict[i] == RVW_CULLED_OCCLUSION ||
                      r->verdict[i] == RVW_CULLED_PVS || r->verdict[i] == RVW_CULLED_UNSAMPLED;
        if (!culled || w->ref.pixels[i] == 0)
            continue;
        bool first = w->run->false_culls == 0;
        if (first || w->run->false_culls < MAX_FALSE_CULL_LINES) {
            rvw_false_cull f;
            name_false_cull(w, view, i, r->verdict[i], &f);
            print_false_cull(w, &f);
            if (first) {
                w->run->first_false_frame = view->frame;
                w->run->first_false_object = i;
                w->run->first_false = f;
            }
        }
        w->run->false_culls++;
    }
    rvw_run_record_verified(w->run, (uint32_t)visible, r->drawn, t1 - t0);

    uint32_t ideal_misses = 0, pvs_frustum = 0, pvs_misses = 0;
    int32_t cluster = w->run->has_map ? rvw_bsp_pvs_cluster(&w->pvs, view->eye, NULL) : -1;
    for (uint32_t i = 0; i < level->object_count; i++) {
        bool truly = w->ref.pixels[i] > 0;
        w->truly_visible[i] = truly;
        ideal_misses += truly && !w->ideal_visible[i];
        if (!w->run->has_map)
            continue;
        bool in_pvs = r->verdict[i] != RVW_EXCLUDED && rvw_bsp_pvs_object_visible(&w->pvs, cluster, i);
        bool in_frustum = rvw_reference_box_in_view(&level->objects[i].bounds, view->view_projection, clip);
        pvs_frustum += in_pvs && in_frustum;
        pvs_misses += truly && !in_pvs;
    }
    uint32_t unsampled = 0;
    for (uint32_t i = 0; i < level->object_count; i++)
        unsampled += r->verdict[i] == RVW_DRAWN && w->ref.pixels[i] == 0 &&
                     covers_no_pixel_centre(&level->objects[i].bounds, view->view_projection, w->ref.width,
                                            w->ref.height);
    rvw_run_record_bounds(w->run, (uint32_t)ideal, (uint32_t)ideal_boxes, ideal_misses, pvs_frustum, pvs_misses,
                          unsampled);
    return true;
}

/* Writes the frame's pictures. False, with a message, when one cannot be written (the run
 * then stops and exits 2, as for any output that fails). */
static bool pictures(walk *w, const rvw_view *view, const rvw_frame_result *r, bool verified)
{
    char path[1100], err[512];
    snprintf(path, sizeof path, "%s/topdown_%05u.png", w->opt->images, view->frame);
    bool ok = rvw_image_top_down(path, w->level, view, r->verdict, verified ? w->ref.pixels : NULL, err, sizeof err);
    if (ok && verified) {
        snprintf(path, sizeof path, "%s/reference_%05u.png", w->opt->images, view->frame);
        ok = rvw_image_reference(path, w->level, view, &w->ref, err, sizeof err);
    }
    const uint8_t *gray;
    uint32_t gw, gh;
    float depths[2];
    if (ok && rvw_drive_occlusion_image(w->drive, &gray, &gw, &gh, depths)) {
        snprintf(path, sizeof path, "%s/occlusion_%05u.png", w->opt->images, view->frame);
        ok = rvw_image_occlusion(path, w->level, view, gray, gw, gh, depths[0], depths[1], err, sizeof err);
    }
    if (!ok)
        fprintf(stderr, "rvis-walk: %s\n", err);
    return ok;
}

/* Runs every frame. Returns false when something outside the input failed (memory, rvis). */
static bool run_frames(walk *w, uint32_t frames)
{
    char err[512];
    double started = now_us(), last_progress = started;
    for (uint32_t f = 0; f < frames; f++) {
        if (w->city)
            rvw_city_animate(w->city, w->level, f);
        rvw_view view;
        rvw_view_make(w->level, f, w->opt->verify_width, w->opt->verify_height, &view);
        if (w->feed.ready) { /* last frame's depth, as its read-back arrives */
            rvw_depth_image img = { w->feed.depth, w->feed.width, w->feed.height, true,
                                    w->feed.view_projection, f - w->feed.frame };
            rvw_drive_set_feed(w->drive, &img);
        }
        rvw_frame_result r;
        double t0 = now_us();
        if (!rvw_drive_frame(w->drive, w->level, &view, &r, err, sizeof err)) {
            fprintf(stderr, "rvis-walk: frame %u: %s\n", f, err);
            return false;
        }
        double frame_us = r.frame_us > 0 ? r.frame_us : now_us() - t0; /* rv_frame alone */
        w->unexplained += r.unexplained;
        if (w->sabotaged && r.verdict[w->opt->sabotage_object] == RVW_DRAWN) {
            memcpy(w->sabotaged, r.verdict, w->level->object_count);
            w->sabotaged[w->opt->sabotage_object] = RVW_CULLED_FRUSTUM;
            r.verdict = w->sabotaged;
            r.drawn--;
            r.frustum_visible--;
        }
        if (w->pvs_verdict) { /* the host's PVS stage: what rvis drew outside the PVS is skipped */
            int32_t cluster = rvw_bsp_pvs_cluster(&w->pvs, view.eye, NULL);
            memcpy(w->pvs_verdict, r.verdict, w->level->object_count);
            for (uint32_t i = 0; i < w->level->object_count; i++)
                if (r.verdict[i] == RVW_DRAWN && !rvw_bsp_pvs_object_visible(&w->pvs, cluster, i)) {
                    w->pvs_verdict[i] = RVW_CULLED_PVS;
                    r.drawn--;
                }
            r.verdict = w->pvs_verdict;
        }
        rvw_run_record(w->run, f, &r, frame_us);
        if (w->opt->depth_feed) { /* what the host drew this frame, for the next one */
            bool draw = f + 1 < frames;
            if (draw && !rvw_feed_draw(&w->feed, w->level, &view, r.verdict)) {
                fprintf(stderr, "rvis-walk: out of memory drawing the depth feed\n");
                return false;
            }
            rvw_run_record_feed(w->run, &r.feed, w->level->path[f].cut, r.stage_us[RVW_STAGE_FEED],
                                draw ? w->feed.draw_us : -1);
        }
        bool verified = w->opt->verify && f % w->opt->verify_every == 0;
        if (verified && !verify_frame(w, &view, &r)) {
            fprintf(stderr, "rvis-walk: out of memory in the reference rasteriser\n");
            return false;
        }
        if (w->visibility)
            rvw_dump_visibility(w->visibility, w->level, &view, r.verdict, verified ? w->truly_visible : NULL,
                                verified ? w->ideal_box_visible : NULL);
        if (w->opt->images && f % w->opt->image_every == 0 && !pictures(w, &view, &r, verified))
            return false;
        double t = now_us();
        if (!w->opt->quiet && t - last_progress >= 1e6) {
            last_progress = t;
            fprintf(stderr, "rvis-walk: %s frame %u/%u, drawn %u, %.0f frames/s%s", w->level->name,
                    f + 1, frames, r.drawn, (f + 1) / ((t - started) * 1e-6),
                    w->opt->verify ? "" : "\n");
            if (w->opt->verify)
                fprintf(stderr, ", truly visible %.1f per frame, false culls %llu\n",
                        w->run->verified_frames ? (double)w->run->truly_visible_sum / w->run->verified_frames : 0.0,
                        (unsigned long long)w->run->false_culls);
        }
    }
    return true;
}

/* The limits a run is held to besides false culls (--require-all-stages, --max-draw-ratio,
 * --require-feed): 1 when one failed (each named on stderr), else 0. */
static int limits_code(const options *opt, const rvw_run *run)
{
    int code = 0;
    if (opt->require_all_stages && run->is_city) {
        const struct { const char *name; const rvw_total *t; } counters[] = {
            { "occlusion_culled", &run->occlusion_culled }, { "partition_hidden", &run->partition_hidden },
            { "hlod_refined", &run->hlod_refined }, { "journal_deltas", &run->journal_deltas },
            { "pages_requested", &run->pages_requested }, { "pages_evicted", &run->pages_evicted },
        };
        for (size_t k = 0; k < sizeof counters / sizeof counters[0]; k++)
            if (!counters[k].t->joined || counters[k].t->sum <= 0) {
                fprintf(stderr, "rvis-walk: --require-all-stages: %s is 0 after %u frames\n",
                        counters[k].name, run->frames);
                code = 1;
            }
        uint64_t m = run->lod_mask;
        if (!run->lod_joined || (m & (m - 1)) == 0) { /* fewer than two distinct levels drawn */
            fprintf(stderr, "rvis-walk: --require-all-stages: lod_levels_used is %d after %u frames\n",
                    m ? 1 : 0, run->frames);
            code = 1;
        }
    }
    if (opt->verify && opt->max_draw_ratio > 0 && run->truly_visible_sum &&
        (double)run->drawn_verified_sum / (double)run->truly_visible_sum > opt->max_draw_ratio) {
        fprintf(stderr, "rvis-walk: draw ratio %.3f above the limit %.3f\n",
                (double)run->drawn_verified_sum / (double)run->truly_visible_sum, opt->max_draw_ratio);
        code = 1;
    }
    if (opt->require_feed && run->feed.hidden_by_feed == 0) {
        fprintf(stderr, "rvis-walk: --require-feed: the depth feed hid nothing the occluders did not "
                        "(%llu of %llu feeds used)\n", (unsigned long long)run->feed.used,
                (unsigned long long)run->feed.handed);
        code = 1;
    }
    if (opt->require_feed && run->feed.cuts_used) {
        fprintf(stderr, "rvis-walk: --require-feed: rvis used the feed across %llu of the path's %llu cuts\n",
                (unsigned long long)run->feed.cuts_used, (unsigned long long)run->feed.cuts);
        code = 1;
    }
    return code;
}

/* The walk's own buffers (the oracle's, the verdict copies, the depth feed's). False when
 * memory ran out. */
static bool walk_alloc(walk *w, const options *opt, const rvw_level *level)
{
    size_t objects = level->object_count ? level->object_count : 1;
    bool ok = true;
    if (opt->pvs)
        ok = (w->pvs_verdict = malloc(objects)) != NULL;
    if (ok && opt->sabotage_object >= 0)
        ok = (w->sabotaged = malloc(objects)) != NULL;
    if (ok && opt->verify) {
        w->include = malloc(objects);
        w->ideal_visible = malloc(objects);
        w->ideal_box_visible = malloc(objects);
        w->truly_visible = malloc(objects);
        ok = w->include && w->ideal_visible && w->ideal_box_visible && w->truly_visible &&
             (level->city || rvw_occluders_of_map(level, &w->occluders)) &&
             rvw_reference_init(&w->ref, opt->verify_width, opt->verify_height);
    }
    if (ok && opt->depth_feed)
        ok = rvw_feed_init(&w->feed, level, opt->feed_width, opt->feed_height, opt->verify_width, opt->verify_height);
    return ok;
}

static void walk_free(walk *w)
{
    rvw_drive_destroy(w->drive);
    rvw_reference_free(&w->ref);
    rvw_feed_free(&w->feed);
    free(w->include);
    free(w->ideal_visible);
    free(w->ideal_box_visible);
    free(w->truly_visible);
    rvw_occluders_free(&w->occluders);
    rvw_bsp_pvs_free(&w->pvs);
    free(w->sabotaged);
    free(w->pvs_verdict);
}

/* How rvis is configured: the occlusion width and, with --depth-feed, the feed's capacity.
 * A map's camera runs 320 units a second (5.3 a frame) and its cuts jump 139 units or more
 * on the eight maps the suite walks, so a feed from more than 32 units away (six frames of
 * running) is a jump rvis should ignore; the city keeps rvis's default (2 m, six frames at
 * its 72 km/h). */
static rvw_drive_options drive_options(const options *opt, const rvw_run *run)
{
    rvw_drive_options d = { .occlusion_width = opt->occlusion_width, .fine_tests = opt->fine_tests,
                             .cull_unsampled = opt->cull_unsampled != 0 };
    if (opt->depth_feed) {
        d.feed_width = opt->feed_width;
        d.feed_height = opt->feed_height;
        d.feed_max_translation = run->is_city ? 0.0f : 32.0f;
    }
    return d;
}

int main(int argc, char **argv)
{
    options opt;
    int code = parse_args(argc, argv, &opt);
    if (code)
        return code < 0 ? 0 : code;
    struct stat images_dir;
    if (opt.images && mkdir(opt.images, 0777) != 0 && errno != EEXIST)
        return bad_input("cannot create the images directory %s", opt.images);
    if (opt.images && (stat(opt.images, &images_dir) != 0 || !S_ISDIR(images_dir.st_mode)))
        return bad_input("the images directory %s is not a directory", opt.images);

    rvw_level level = {0};
    rvw_city city = {0};
    rvw_run run = {0};
    rvw_bsp_pvs pvs = {0};
    code = load_scene(&opt, &level, &city, &run, &pvs);
    if (code)
        return code;
    uint32_t frames = level.frame_count;
    if (opt.frames && opt.frames < frames)
        frames = opt.frames;
    snprintf(run.scene, sizeof run.scene, "%s", level.name);
    run.objects = level.object_count;
    run.occluders = level.occluder_count;
    if (run.has_map)
        rvw_level_count_occluders(&level, &run.occluders, &run.occluder_triangles);
    for (uint32_t i = 0; i < level.object_count; i++)
        run.oriented_boxes += level.objects[i].oriented;
    run.triangles = level.triangle_count;
    run.verified = opt.verify;
    run.verify_width = opt.verify_width;
    run.verify_height = opt.verify_height;
    run.verify_every = opt.verify_every;
    run.stages = rvw_drive_stages(run.is_city);
    run.feed = (rvw_feed_totals){ .on = opt.depth_feed, .width = opt.feed_width, .height = opt.feed_height };

    walk w = { .opt = &opt, .level = &level, .city = run.is_city ? &city : NULL, .run = &run, .pvs = pvs };
    run.has_pvs = run.has_map && pvs.valid;
    char err[512];
    if (opt.sabotage_object >= (int64_t)level.object_count) {
        fprintf(stderr, "rvis-walk: --sabotage-object %lld: the scene has %u objects\n",
                (long long)opt.sabotage_object, level.object_count);
        code = 2;
    } else if (opt.pvs && !run.has_map) {
        code = bad_input("%s", "--pvs needs a map (the city has no PVS)");
    }
    run.pvs_stage = opt.pvs;
    run.workers = opt.workers;
    rvw_drive_options dopt = drive_options(&opt, &run);
    rvb_jobs *pool = NULL;
    rv_job_system jobs;
    if (!code && opt.workers) {
        if ((pool = rvb_jobs_create(opt.workers)) != NULL) {
            jobs = rvb_jobs_system(pool);
            dopt.jobs = &jobs;
        } else {
            fprintf(stderr, "rvis-walk: cannot start %u worker threads\n", opt.workers);
            code = 2;
        }
    }
    if (code) {
        /* refused above */
    } else if (!rvw_run_init(&run, frames) || !walk_alloc(&w, &opt, &level)) {
        fprintf(stderr, "rvis-walk: out of memory\n");
        code = 2;
    } else if (!rvw_drive_create(&level, &dopt, &w.drive, err, sizeof err)) {
        fprintf(stderr, "rvis-walk: %s\n", err);
        code = 2;
    }
    FILE *json = NULL;
    if (!code && opt.dump_scene) {
        FILE *f = open_out(opt.dump_scene, "the scene dump");
        if (f) {
            rvw_dump_scene(f, &level);
            if (!close_out(f, opt.dump_scene, "the scene dump"))
                code = 2;
        } else {
            code = 2;
        }
    }
    if (!code && opt.dump_visibility && !(w.visibility = open_out(opt.dump_visibility, "the visibility dump")))
        code = 2;
    if (!code && opt.json && !(json = open_out(opt.json, "the JSON report")))
        code = 2;
    if (!code && !run_frames(&w, frames))
        code = 2;
    if (!code && run.false_culls)
        code = 1;
    if (!code && w.unexplained) {
        fprintf(stderr, "rvis-walk: BUG: %llu object-frames neither drawn nor recorded as culled\n",
                (unsigned long long)w.unexplained);
        code = 1;
    }
    if (!code)
        code = limits_code(&opt, &run);
    if (json && code != 2)
        rvw_report_json(json, &run);
    if (code != 2) {
        bool stdout_taken = json == stdout || w.visibility == stdout ||
                            (opt.dump_scene && !strcmp(opt.dump_scene, "-"));
        FILE *human = stdout_taken ? stderr : stdout;
        rvw_report_human(human, &run);
        if (code == 1 && run.false_culls)
            fprintf(stderr, "rvis-walk: %llu false culls; the first at frame %lld, object %lld\n",
                    (unsigned long long)run.false_culls, (long long)run.first_false_frame,
                    (long long)run.first_false_object);
    }
    if (!close_out(json, opt.json, "the JSON report"))
        code = 2;
    if (!close_out(w.visibility, opt.dump_visibility, "the visibility dump"))
        code = 2;
    walk_free(&w);
    rvb_jobs_destroy(pool);
    rvw_run_free(&run);
    rvw_level_free(&level);
    rvw_city_free(&city);
    return code;
}
