/* rvis-view: draws the embedded city or a Quake III map with OpenGL 3.3 core, rvis deciding
 * every frame what is drawn, at which LOD and in which order (through rvis-walk's driver,
 * so both programs cull alike). In a window (GLFW) the camera flies; headless (EGL on
 * Mesa) it follows rvis-walk's camera path. --gpu-verify makes the GPU a second judge of
 * every cull. Exit codes: 0 success, 1 a false cull, 2 bad input, 3 no OpenGL context. */
#include "app.h"
#include "args.h"
#include "bsp.h"
#include "city.h"
#include "headless.h"
#include "level.h"
#include "path.h"
#include "pk3.h"
#include "rvis.h"
#include "window.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage[] =
    "usage: rvis-view [--headless] [--map NAME | --map PK3:maps/x.bsp | --city] [--frames N]\n"
    "                 [--gpu-verify] [--screenshot DIR --every N] [--json FILE] [options]\n"
    "  --headless              no window: EGL on Mesa (llvmpipe), following rvis-walk's path\n"
    "  --map NAME|PAK:maps/X.bsp|FILE.bsp\n"
    "                          a Quake III map; NAME is looked up in\n"
    "                          " RVW_DEFAULT_PAK "\n"
    "  --city                  the embedded city (the default without --map)\n"
    "  --frames N              stop after N frames (headless default: the whole path)\n"
    "  --start F               headless: begin at frame F of the path (default 0)\n"
    "  --gpu-verify            each frame, the GPU judges every cull: the whole scene's depth,\n"
    "                          then one GL_ANY_SAMPLES_PASSED query per culled object (GL_LEQUAL);\n"
    "                          a sample passing is a false cull (stderr, exit 1)\n"
    "  --oracle                also compare, object by object, the GPU's visibility with\n"
    "                          rvis-walk's reference rasteriser (implies --gpu-verify)\n"
    "  --screenshot DIR        PNG screenshots with the overlay into DIR (created)\n"
    "  --every N               a screenshot every Nth frame from the first (default 60)\n"
    "  --json FILE|-           the JSON report (- = stdout, which then holds only it)\n"
    "  --size WxH              viewport rvis culls for and the GL draws (default 1280x720)\n"
    "  --occlusion-width N     rvis's occlusion buffer width in texels (default 256, 0 = off)\n"
    "  --fine-tests 0|1|2      rvis tests finer than a texel (rv_occlusion_desc.fine_tests;\n"
    "                          default 1, as rvis-walk)\n"
    "  --cull-unsampled 0|1    rvis may cull objects no pixel centre of the viewport can show\n"
    "                          (rv_view.cull_unsampled; default 1, as rvis-walk)\n"
    "  --colour MODE           shaded (default), lod (by LOD level), verdict (culled objects\n"
    "                          filled red/blue behind a strict depth test: visible = wrong)\n"
    "  --freeze F              headless: freeze culling at frame F; later frames show what that\n"
    "                          view culled as outlines through walls, and its frustum\n"
    "  --no-overlay            screenshots without the figures panel\n"
    "  --sabotage-object ID|auto\n"
    "                          checks the judge: force rvis's verdict for object ID (auto: the\n"
    "                          first object in draw order the walk's oracle finds visible) to\n"
    "                          culled; needs --gpu-verify (headless), which must catch it\n"
    "  --quiet                 no progress lines\n"
    "  --help                  this text\n"
    "window keys: mouse + WASD fly (Space/E up, Q/C down, Shift faster), Tab releases the mouse,\n"
    "  F freeze culling, O occlusion, X frustum culling, R draw order, V colouring,\n"
    "  G GPU judge, T outlines of frustum-culled objects, P follow rvis-walk's path,\n"
    "  H overlay, K screenshot, Esc quit\n";

enum {
    OPT_HEADLESS = 256, OPT_MAP, OPT_CITY, OPT_FRAMES, OPT_GPU_VERIFY, OPT_ORACLE, OPT_SCREENSHOT, OPT_EVERY,
    OPT_JSON, OPT_SIZE, OPT_START, OPT_OCCLUSION_WIDTH, OPT_FINE_TESTS, OPT_CULL_UNSAMPLED, OPT_COLOUR, OPT_FREEZE,
    OPT_NO_OVERLAY, OPT_SABOTAGE, OPT_QUIET,
};

static const struct option long_options[] = {
    { "headless", no_argument, NULL, OPT_HEADLESS },
    { "map", required_argument, NULL, OPT_MAP },
    { "city", no_argument, NULL, OPT_CITY },
    { "frames", required_argument, NULL, OPT_FRAMES },
    { "start", required_argument, NULL, OPT_START },
    { "gpu-verify", no_argument, NULL, OPT_GPU_VERIFY },
    { "oracle", no_argument, NULL, OPT_ORACLE },
    { "screenshot", required_argument, NULL, OPT_SCREENSHOT },
    { "every", required_argument, NULL, OPT_EVERY },
    { "json", required_argument, NULL, OPT_JSON },
    { "size", required_argument, NULL, OPT_SIZE },
    { "occlusion-width", required_argument, NULL, OPT_OCCLUSION_WIDTH },
    { "fine-tests", required_argument, NULL, OPT_FINE_TESTS },
    { "cull-unsampled", required_argument, NULL, OPT_CULL_UNSAMPLED },
    { "colour", required_argument, NULL, OPT_COLOUR },
    { "color", required_argument, NULL, OPT_COLOUR },
    { "freeze", required_argument, NULL, OPT_FREEZE },
    { "no-overlay", no_argument, NULL, OPT_NO_OVERLAY },
    { "sabotage-object", required_argument, NULL, OPT_SABOTAGE },
    { "quiet", no_argument, NULL, OPT_QUIET },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int bad_input(const char *fmt, const char *arg)
{
    fprintf(stderr, "rvis-view: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

/* Returns 0 when parsed, else the exit code (2, or -1 for --help). */
static int parse_args(int argc, char **argv, rvv_options *o)
{
    *o = (rvv_options){ .width = 1280, .height = 720, .every = 60, .sabotage = RVV_SABOTAGE_NONE,
                        .occlusion_width = 256, .fine_tests = RVW_DEFAULT_FINE_TESTS,
                        .cull_unsampled = RVW_DEFAULT_CULL_UNSAMPLED, .freeze_at = -1, .overlay = true };
    bool city = false;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *v = optarg;
        uint32_t n;
        /* A value that is the next option ("--map --quiet") is a value left out. */
        if (rvw_value_is_option(v))
            return bad_input("%s needs a value, not an option (see --help)",
                             optind >= 2 && argv[optind - 1] == v ? argv[optind - 2] : argv[optind - 1]);
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return -1;
        case OPT_HEADLESS: o->headless = true; break;
        case OPT_MAP: o->map = v; break;
        case OPT_CITY: city = true; break;
        case OPT_FRAMES:
            if (!rvw_parse_u32(v, &o->frames, 1))
                return bad_input("--frames wants a positive integer, not '%s'", v);
            break;
        case OPT_START:
            if (!rvw_parse_u32(v, &o->start, 0))
                return bad_input("--start wants a frame number, not '%s'", v);
            break;
        case OPT_GPU_VERIFY: o->gpu_verify = true; break;
        case OPT_ORACLE: o->oracle = o->gpu_verify = true; break;
        case OPT_SCREENSHOT: o->screenshot_dir = v; break;
        case OPT_EVERY:
            if (!rvw_parse_u32(v, &o->every, 1))
                return bad_input("--every wants a positive integer, not '%s'", v);
            break;
        case OPT_JSON: o->json = v; break;
        case OPT_SIZE:
            if (!rvw_parse_size(v, 64, 8192, &o->width, &o->height))
                return bad_input("--size wants WxH between 64x64 and 8192x8192, not '%s'", v);
            break;
        case OPT_OCCLUSION_WIDTH:
            if (!rvw_parse_u32(v, &o->occlusion_width, 0) || o->occlusion_width > 8192)
                return bad_input("--occlusion-width wants an integer 0..8192, not '%s'", v);
            break;
        case OPT_FINE_TESTS:
            if (!rvw_parse_u32(v, &o->fine_tests, 0) || o->fine_tests > 2)
                return bad_input("--fine-tests wants 0, 1 or 2, not '%s'", v);
            break;
        case OPT_CULL_UNSAMPLED:
            if (!rvw_parse_u32(v, &n, 0) || n > 1)
                return bad_input("--cull-unsampled wants 0 or 1, not '%s'", v);
            o->cull_unsampled = n != 0;
            break;
        case OPT_COLOUR: {
            bool found = false;
            for (int m = 0; m < RVV_COLOUR_COUNT && !found; m++)
                if (!strcmp(v, rvv_colouring_names[m])) {
                    o->colouring = (rvv_colouring)m;
                    found = true;
                }
            if (!found)
                return bad_input("--colour wants shaded, lod or verdict, not '%s'", v);
            break;
        }
        case OPT_FREEZE:
            if (!rvw_parse_u32(v, &n, 0))
                return bad_input("--freeze wants a frame number, not '%s'", v);
            o->freeze_at = n;
            break;
        case OPT_NO_OVERLAY: o->overlay = false; break;
        case OPT_SABOTAGE:
            if (!strcmp(v, "auto")) {
                o->sabotage = RVV_SABOTAGE_AUTO;
            } else {
                if (!rvw_parse_u32(v, &n, 0))
                    return bad_input("--sabotage-object wants an object index or 'auto', not '%s'", v);
                o->sabotage = n;
            }
            break;
        case OPT_QUIET: o->quiet = true; break;
        case ':':
            return bad_input("%s needs a value (see --help)", argv[optind - 1]);
        default:
            return bad_input("unknown argument '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad_input("unexpected argument '%s' (see --help)", argv[optind]);
    if (city && o->map)
        return bad_input("%s", "--city and --map exclude each other");
    if (o->freeze_at >= 0 && !o->headless)
        return bad_input("%s", "--freeze is for --headless runs (press F in the window)");
    if (o->oracle && !o->headless)
        return bad_input("%s", "--oracle is for --headless runs (the oracle draws at a fixed size)");
    if (o->headless && o->sabotage != RVV_SABOTAGE_NONE && !o->gpu_verify)
        return bad_input("%s", "--sabotage-object checks the GPU judge: add --gpu-verify");
    if (o->headless && o->freeze_at >= 0 && o->freeze_at < (int64_t)o->start)
        return bad_input("%s", "--freeze is before --start: no frame would be culled");
    return 0;
}

/* The scene: the city, or a map read and pathed with rvis-walk's reader and camera path. */
static int load_scene(const rvv_options *o, rvw_level *level, rvw_city *city)
{
    char err[512];
    if (!o->map) {
        if (!rvw_city_generate(city, level))
            return bad_input("%s", "out of memory generating the city");
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
        fprintf(stderr, "rvis-view: %s: %s\n", o->map, err);
        return 2;
    }
    rvw_path_stats path;
    rvw_path_result built = rvw_path_build(level, &map, &path);
    rvw_bsp_map_free(&map);
    if (built == RVW_PATH_OVER_BUDGET) {
        fprintf(stderr, "rvis-view: %s: the camera path needs more than %llu brush and tree tests "
                        "(a hostile map?)\n", o->map, (unsigned long long)RVW_PATH_WORK_BUDGET);
        return 2;
    }
    if (built != RVW_PATH_BUILT)
        return bad_input("%s", "out of memory building the camera path");
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The headless run: rvis-walk's path, frame by frame. Returns the exit code. */
static int run_headless(const rvv_options *opt, rvw_level *level, const rvw_city *city)
{
    char err[1024];
    rvv_headless *context;
    if (!rvv_headless_create(&context, err, sizeof err)) {
        fprintf(stderr, "rvis-view: %s\n", err);
        return 3;
    }
    rvv_target target;
    rvv_app app;
    int code = 0;
    if (!rvv_target_create(&target, opt->width, opt->height, true, err, sizeof err)) {
        fprintf(stderr, "rvis-view: %s\n", err);
        rvv_headless_destroy(context);
        return 3;
    }
    if (!rvv_app_init(&app, opt, level, city, rvv_headless_platform(context), err, sizeof err)) {
        fprintf(stderr, "rvis-view: %s\n", err);
        code = 2;
    }
    if (opt->start >= level->frame_count) {
        fprintf(stderr, "rvis-view: --start %u: the path has %u frames\n", opt->start, level->frame_count);
        code = 2;
    }
    uint32_t end = level->frame_count;
    if (opt->frames && opt->frames < end - opt->start)
        end = opt->start + opt->frames;
    FILE *json = NULL; /* opened before the run: a report that cannot be written fails at once */
    if (!code && opt->json) {
        json = strcmp(opt->json, "-") ? fopen(opt->json, "w") : stdout;
        if (!json) {
            fprintf(stderr, "rvis-view: cannot write %s: %s\n", opt->json, strerror(errno));
            code = 2;
        }
    }
    if (!code) {
        rvw_view first;
        rvw_view_make(level, opt->start, opt->width, opt->height, &first);
        glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
        rvv_app_warm_up(&app, &first, opt->width, opt->height);
    }
    double started = now_s(), last_progress = started;
    for (uint32_t f = opt->start; !code && f < end; f++) {
        rvv_app_animate(&app, f);
        rvw_view view;
        rvw_view_make(level, f, opt->width, opt->height, &view);
        bool freeze = opt->freeze_at >= 0 && f > (uint64_t)opt->freeze_at;
        rvv_app_freeze(&app, freeze);
        if (!freeze && !rvv_app_cull(&app, &view, err, sizeof err)) {
            fprintf(stderr, "rvis-view: frame %u: %s\n", f, err);
            code = 2;
            break;
        }
        glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
        rvv_toggles toggles = { .outlines_frustum = true };
        rvv_app_draw(&app, &view, opt->width, opt->height, &toggles);
        if (opt->gpu_verify && !rvv_app_judge(&app)) {
            fprintf(stderr, "rvis-view: out of memory for occlusion queries\n");
            code = 2;
            break;
        }
        if (opt->oracle && !rvv_app_compare_oracle(&app)) {
            fprintf(stderr, "rvis-view: out of memory in the oracle\n");
            code = 2;
            break;
        }
        if (opt->screenshot_dir && (f - opt->start) % opt->every == 0) {
            glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
            if (opt->overlay)
                rvv_app_overlay(&app, opt->width, opt->height, f, level->frame_count, &toggles, NULL, 0);
            if (!rvv_app_screenshot(&app, f, opt->width, opt->height))
                code = 2;
        }
        double t = now_s();
        if (!opt->quiet && t - last_progress >= 1.0) {
            last_progress = t;
            fprintf(stderr, "rvis-view: %s frame %u/%u, drawn %u, %.1f frames/s, GPU false culls %llu\n", level->name,
                    f + 1, end, app.result.drawn, (f + 1 - opt->start) / (t - started),
                    (unsigned long long)app.gpu_false_culls);
        }
    }
    GLenum e = glGetError();
    if (!code && e != GL_NO_ERROR) {
        fprintf(stderr, "rvis-view: OpenGL error 0x%x during the run\n", e);
        code = 2;
    }
    /* a sabotage that never found its object drawn tested nothing: the judge's silence
     * would pass for a check */
    if (!code && opt->sabotage != RVV_SABOTAGE_NONE && app.sabotaged_frames == 0) {
        fprintf(stderr, "rvis-view: --sabotage-object: no frame drew %s, so nothing was sabotaged and the "
                        "judge checked nothing\n", opt->sabotage == RVV_SABOTAGE_AUTO ? "a visible object" : "the object");
        code = 2;
    }
    if (!code && app.gpu_false_culls) {
        fprintf(stderr, "rvis-view: %llu GPU false culls; the first at frame %lld, object %lld\n",
                (unsigned long long)app.gpu_false_culls, (long long)app.first_false_frame,
                (long long)app.first_false_object);
        code = 1;
    }
    if (!code && app.unexplained) {
        fprintf(stderr, "rvis-view: BUG: %llu object-frames neither drawn nor recorded as culled\n",
                (unsigned long long)app.unexplained);
        code = 1;
    }
    if (code != 2 && code != 3) {
        if (json) {
            rvv_app_report_json(&app, json);
            bool ok = !ferror(json);
            ok = (json == stdout ? fflush(json) == 0 : fclose(json) == 0) && ok;
            if (!ok) {
                fprintf(stderr, "rvis-view: writing %s failed\n", opt->json);
                code = 2;
            }
        }
        rvv_app_report_human(&app, json == stdout ? stderr : stdout);
    } else if (json && json != stdout) {
        fclose(json);
    }
    rvv_app_free(&app);
    rvv_target_free(&target);
    rvv_headless_destroy(context);
    return code;
}

int main(int argc, char **argv)
{
    rvv_options opt;
    int code = parse_args(argc, argv, &opt);
    if (code)
        return code < 0 ? 0 : code;
    struct stat shot_dir;
    if (opt.screenshot_dir && mkdir(opt.screenshot_dir, 0777) != 0 && errno != EEXIST)
        return bad_input("cannot create the screenshot directory %s", opt.screenshot_dir);
    if (opt.screenshot_dir && (stat(opt.screenshot_dir, &shot_dir) != 0 || !S_ISDIR(shot_dir.st_mode)))
        return bad_input("the screenshot directory %s is not a directory", opt.screenshot_dir);
    rvw_level level = { 0 };
    rvw_city city = { 0 };
    code = load_scene(&opt, &level, &city);
    if (code)
        return code;
    if (opt.sabotage >= (int64_t)level.object_count) {
        fprintf(stderr, "rvis-view: --sabotage-object %lld: the scene has %u objects\n", (long long)opt.sabotage,
                level.object_count);
        code = 2;
    } else if (opt.headless) {
        code = run_headless(&opt, &level, opt.map ? NULL : &city);
    } else {
        code = rvv_window_run(&opt, &level, opt.map ? NULL : &city);
    }
    rvw_level_free(&level);
    rvw_city_free(&city);
    rvv_overlay_shutdown();
    return code;
}
