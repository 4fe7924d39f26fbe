#include "window.h"

#ifndef RVV_HAVE_GLFW

#include <stdio.h>

int rvv_window_run(const rvv_options *opt, rvw_level *level, const rvw_city *city)
{
    (void)opt;
    (void)level;
    (void)city;
    fprintf(stderr, "rvis-view: built without GLFW, so there is no window; run with --headless\n");
    return 3;
}

#else

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct flight {
    rvv_app *app;
    rvv_options *opt;
    rvv_toggles toggles;
    float eye[3], yaw, pitch;
    bool captured, follow, judge, overlay, screenshot;
    double follow_frame;          /* position on rvis-walk's path while following it */
    double last_x, last_y;
    bool have_cursor;
    char message[RVV_OVERLAY_LINE];
} flight;

static void forward_of(const flight *f, float out[3])
{
    out[0] = cosf(f->pitch) * cosf(f->yaw);
    out[1] = sinf(f->pitch);
    out[2] = -cosf(f->pitch) * sinf(f->yaw);
}

static void look_from_path(flight *f, const rvw_level *level, uint32_t frame)
{
    const rvw_camera *c = &level->path[frame < level->frame_count ? frame : level->frame_count - 1];
    memcpy(f->eye, c->eye, sizeof f->eye);
    f->yaw = atan2f(-c->forward[2], c->forward[0]);
    f->pitch = asinf(fmaxf(-1.0f, fminf(1.0f, c->forward[1])));
}

static void set_capture(GLFWwindow *w, flight *f, bool on)
{
    f->captured = on;
    f->have_cursor = false;
    glfwSetInputMode(w, GLFW_CURSOR, on ? GLFW_CURSOR_DISABLED : GLFW_CURSOR_NORMAL);
}

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods)
{
    (void)scancode;
    (void)mods;
    if (action != GLFW_PRESS)
        return;
    flight *f = glfwGetWindowUserPointer(w);
    rvv_app *app = f->app;
    char err[512];
    switch (key) {
    case GLFW_KEY_ESCAPE: glfwSetWindowShouldClose(w, GLFW_TRUE); break;
    case GLFW_KEY_TAB: set_capture(w, f, !f->captured); break;
    case GLFW_KEY_F:
        rvv_app_freeze(app, !app->frozen);
        snprintf(f->message, sizeof f->message, "%s", app->frozen ? "culling frozen: fly around to see what it culled"
                                                                   : "culling follows the camera again");
        break;
    case GLFW_KEY_O: {
        uint32_t width = app->occlusion_width ? 0 : (f->opt->occlusion_width ? f->opt->occlusion_width : 256);
        if (!rvv_app_set_occlusion(app, width, err, sizeof err))
            snprintf(f->message, sizeof f->message, "!%.100s", err);
        else
            snprintf(f->message, sizeof f->message, "occlusion buffer %s (rvis world rebuilt)", width ? "on" : "off");
        break;
    }
    case GLFW_KEY_X: f->toggles.frustum_off = !f->toggles.frustum_off; break;
    case GLFW_KEY_R: f->toggles.scene_order = !f->toggles.scene_order; break;
    case GLFW_KEY_V: f->opt->colouring = (rvv_colouring)((f->opt->colouring + 1) % RVV_COLOUR_COUNT); break;
    case GLFW_KEY_G: f->judge = !f->judge; break;
    case GLFW_KEY_T: f->toggles.outlines_frustum = !f->toggles.outlines_frustum; break;
    case GLFW_KEY_P:
        f->follow = !f->follow;
        if (f->follow) {
            /* resume from the path frame nearest the camera */
            const rvw_level *level = app->level;
            float best = INFINITY;
            for (uint32_t k = 0; k < level->frame_count; k++) {
                float d = 0;
                for (int a = 0; a < 3; a++)
                    d += (level->path[k].eye[a] - f->eye[a]) * (level->path[k].eye[a] - f->eye[a]);
                if (d < best) {
                    best = d;
                    f->follow_frame = k;
                }
            }
        }
        break;
    case GLFW_KEY_H: f->overlay = !f->overlay; break;
    case GLFW_KEY_K: f->screenshot = true; break;
    default: break;
    }
}

static void fly(GLFWwindow *w, flight *f, double dt, float speed)
{
    if (f->captured) {
        double x, y;
        glfwGetCursorPos(w, &x, &y);
        if (f->have_cursor) {
            f->yaw -= (float)(x - f->last_x) * 0.0025f;
            f->pitch -= (float)(y - f->last_y) * 0.0025f;
            f->pitch = fmaxf(-1.5f, fminf(1.5f, f->pitch));
        }
        f->last_x = x;
        f->last_y = y;
        f->have_cursor = true;
    }
    float fwd[3], right[3];
    forward_of(f, fwd);
    float h = sqrtf(fwd[0] * fwd[0] + fwd[2] * fwd[2]);
    right[0] = h > 0 ? -fwd[2] / h : 1;
    right[1] = 0;
    right[2] = h > 0 ? fwd[0] / h : 0;
    float move[3] = { 0, 0, 0 };
    float step = speed * (float)dt * (glfwGetKey(w, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS ? 4.0f : 1.0f);
    struct { int key; const float *axis; float sign; } binds[] = {
        { GLFW_KEY_W, fwd, 1 }, { GLFW_KEY_S, fwd, -1 }, { GLFW_KEY_D, right, 1 }, { GLFW_KEY_A, right, -1 },
    };
    bool moved = false;
    for (size_t b = 0; b < sizeof binds / sizeof binds[0]; b++)
        if (glfwGetKey(w, binds[b].key) == GLFW_PRESS) {
            for (int a = 0; a < 3; a++)
                move[a] += binds[b].sign * binds[b].axis[a];
            moved = true;
        }
    if (glfwGetKey(w, GLFW_KEY_SPACE) == GLFW_PRESS || glfwGetKey(w, GLFW_KEY_E) == GLFW_PRESS) {
        move[1] += 1;
        moved = true;
    }
    if (glfwGetKey(w, GLFW_KEY_Q) == GLFW_PRESS || glfwGetKey(w, GLFW_KEY_C) == GLFW_PRESS) {
        move[1] -= 1;
        moved = true;
    }
    if (moved)
        f->follow = false;
    for (int a = 0; a < 3; a++)
        f->eye[a] += move[a] * step;
}

int rvv_window_run(const rvv_options *given, rvw_level *level, const rvw_city *city)
{
    if (!glfwInit()) {
        const char *why = NULL;
        glfwGetError(&why);
        fprintf(stderr, "rvis-view: no window system (%s); run with --headless\n", why ? why : "glfwInit failed");
        return 3;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_DEPTH_BITS, 24);
    char title[128];
    snprintf(title, sizeof title, "rvis-view: %s", level->name);
    GLFWwindow *window = glfwCreateWindow((int)given->width, (int)given->height, title, NULL, NULL);
    if (!window) {
        const char *why = NULL;
        glfwGetError(&why);
        fprintf(stderr, "rvis-view: no OpenGL 3.3 core window (%s); run with --headless\n", why ? why : "unknown");
        glfwTerminate();
        return 3;
    }
    glfwMakeContextCurrent(window);
    glfwSwapInterval(1);
    int fw, fh;
    glfwGetFramebufferSize(window, &fw, &fh);
    rvv_options opt = *given;          /* the window changes colouring and the viewport */
    opt.width = (uint32_t)(fw > 64 ? fw : 64);
    opt.height = (uint32_t)(fh > 64 ? fh : 64);
    rvv_app app;
    char err[1024];
    int code = 0;
    if (!rvv_app_init(&app, &opt, level, city, "GLFW window", err, sizeof err)) {
        fprintf(stderr, "rvis-view: %s\n", err);
        rvv_app_free(&app);
        glfwDestroyWindow(window);
        glfwTerminate();
        return 2;
    }
    flight f = { .app = &app, .opt = &opt, .judge = opt.gpu_verify, .overlay = opt.overlay };
    f.toggles.outlines_frustum = true;
    look_from_path(&f, level, 0);
    glfwSetWindowUserPointer(window, &f);
    glfwSetKeyCallback(window, on_key);
    set_capture(window, &f, true);
    float speed = city ? 20.0f : 320.0f; /* the walk's pace: 72 km/h, a Quake player's run */
    double start = glfwGetTime(), last = start;
    uint32_t frame = 0;
    while (!glfwWindowShouldClose(window) && (!opt.frames || frame < opt.frames)) {
        double t = glfwGetTime(), dt = t - last;
        last = t;
        fly(window, &f, dt, speed);
        if (f.follow) {
            f.follow_frame += dt * 60.0;
            if (f.follow_frame >= level->frame_count)
                f.follow_frame = 0;
            look_from_path(&f, level, (uint32_t)f.follow_frame);
        }
        glfwGetFramebufferSize(window, &fw, &fh);
        if (fw < 64 || fh < 64) { /* minimised */
            glfwWaitEvents();
            continue;
        }
        opt.width = (uint32_t)fw;
        opt.height = (uint32_t)fh;
        if (app.reference_ready && (app.reference.width != opt.width || app.reference.height != opt.height)) {
            rvw_reference_free(&app.reference); /* --sabotage-object auto's picker draws at the window's size */
            app.reference_ready = rvw_reference_init(&app.reference, opt.width, opt.height);
        }
        if (!rvv_judge_resize(&app.judge, opt.width, opt.height, err, sizeof err)) {
            fprintf(stderr, "rvis-view: %s\n", err);
            code = 2;
            break;
        }
        rvw_camera camera = { { f.eye[0], f.eye[1], f.eye[2] }, { 0, 0, 0 }, false };
        forward_of(&f, camera.forward);
        rvw_view view;
        rvw_view_from_camera(level, &camera, frame, opt.width, opt.height, &view);
        view.time_ms = (t - start) * 1000.0;
        rvv_app_animate(&app, frame);
        if (!app.frozen && !rvv_app_cull(&app, &view, err, sizeof err)) {
            fprintf(stderr, "rvis-view: %s\n", err);
            code = 2;
            break;
        }
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
        rvv_app_draw(&app, &view, opt.width, opt.height, &f.toggles);
        app.judged = false;
        if (f.judge && !app.frozen) {
            if (!rvv_app_judge(&app)) {
                fprintf(stderr, "rvis-view: out of memory for occlusion queries\n");
                code = 2;
                break;
            }
            if (opt.oracle && !rvv_app_compare_oracle(&app)) {
                fprintf(stderr, "rvis-view: out of memory in the oracle\n");
                code = 2;
                break;
            }
            glBindFramebuffer(GL_FRAMEBUFFER, 0);
        }
        if (f.overlay) {
            const char *extra[3];
            uint32_t n = 0;
            extra[n++] = "F freeze  O occlusion  X frustum  R order  V colour  G judge";
            extra[n++] = "T frustum outlines  P path  H overlay  K shot  Tab mouse  Esc quit";
            if (f.message[0])
                extra[n++] = f.message;
            rvv_app_overlay(&app, opt.width, opt.height, frame, 0, &f.toggles, extra, n);
        }
        if (f.screenshot) {
            f.screenshot = false;
            if (rvv_app_screenshot(&app, frame, opt.width, opt.height))
                snprintf(f.message, sizeof f.message, "screenshot %s/%s_%05u.png",
                         opt.screenshot_dir ? opt.screenshot_dir : ".", level->name, frame);
        }
        glfwSwapBuffers(window);
        glfwPollEvents();
        frame++;
    }
    if (!code && app.gpu_false_culls)
        code = 1;
    if (opt.json) {
        FILE *json = strcmp(opt.json, "-") ? fopen(opt.json, "w") : stdout;
        if (json) {
            rvv_app_report_json(&app, json);
            if (json != stdout)
                fclose(json);
        } else {
            fprintf(stderr, "rvis-view: cannot write %s\n", opt.json);
        }
    }
    rvv_app_report_human(&app, opt.json && !strcmp(opt.json, "-") ? stderr : stdout);
    rvv_app_free(&app);
    glfwDestroyWindow(window);
    glfwTerminate();
    return code;
}

#endif
