#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rvv_colouring_names[RVV_COLOUR_COUNT] = { "shaded", "lod", "verdict" };

static const char vertex_source[] =
    "#version 330 core\n"
    "layout(location = 0) in vec3 a_position;\n"
    "uniform mat4 u_view_projection;\n"
    "out vec3 v_world;\n"
    "void main() {\n"
    "    v_world = a_position;\n"
    "    gl_Position = u_view_projection * vec4(a_position, 1.0);\n"
    "}\n";

/* The level has no normals: a flat normal from the derivatives of the world position is
 * exact for planar triangles. Both sides are lit alike (surfaces are drawn two-sided, as
 * the oracle draws them). A crossfade keeps the finer level's share of a 4 x 4 ordered
 * dither and the coarser level the rest, so the two never overlap nor leave holes. */
static const char surface_source[] =
    "#version 330 core\n"
    "in vec3 v_world;\n"
    "uniform vec3 u_colour;\n"
    "uniform vec3 u_eye;\n"
    "uniform vec3 u_sky;\n"
    "uniform float u_fog;\n"
    "uniform float u_fade;\n"
    "uniform int u_fade_coarse;\n"
    "uniform int u_tone;\n"
    "uniform float u_alpha;\n"
    "out vec4 o_colour;\n"
    "const int bayer[16] = int[16](0, 8, 2, 10, 12, 4, 14, 6, 3, 11, 1, 9, 15, 7, 13, 5);\n"
    "void main() {\n"
    "    if (u_fade < 1.0) {\n"
    "        ivec2 p = ivec2(gl_FragCoord.xy) & 3;\n"
    "        float t = (float(bayer[p.y * 4 + p.x]) + 0.5) / 16.0;\n"
    "        if (u_fade_coarse != 0 ? t < 1.0 - u_fade : t >= u_fade) discard;\n"
    "    }\n"
    "    vec3 n = normalize(cross(dFdx(v_world), dFdy(v_world)));\n"
    "    vec3 v = normalize(u_eye - v_world);\n"
    "    if (dot(n, v) < 0.0) n = -n;\n"
    "    vec3 base = u_colour;\n"
    "    if (u_tone != 0) {\n"
    "        if (n.y > 0.7) base *= vec3(1.08, 0.98, 0.82);\n"
    "        else if (n.y < -0.7) base *= vec3(0.70, 0.72, 0.80);\n"
    "        else base *= vec3(0.86, 0.90, 1.00);\n"
    "    }\n"
    "    float light = 0.22 + 0.55 * abs(dot(n, normalize(vec3(0.45, 0.80, 0.30))))\n"
    "                + 0.30 * max(dot(n, v), 0.0);\n"
    "    vec3 c = base * light;\n"
    "    c = mix(u_sky, c, exp(-length(u_eye - v_world) * u_fog));\n"
    "    o_colour = vec4(c, u_alpha);\n"
    "}\n";

static const char flat_source[] =
    "#version 330 core\n"
    "uniform vec4 u_colour;\n"
    "out vec4 o_colour;\n"
    "void main() { o_colour = u_colour; }\n";

/* Colour writes are masked while the judge draws; the program still needs an output-free
 * fragment stage. */
static const char depth_source[] =
    "#version 330 core\n"
    "void main() { }\n";

static GLuint shader(GLenum type, const char *source, char *err, size_t errlen)
{
    GLuint s = glCreateShader(type);
    glShaderSource(s, 1, &source, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[512] = "";
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        snprintf(err, errlen, "a shader did not compile: %s", log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

GLuint rvv_program(const char *vertex, const char *fragment, char *err, size_t errlen)
{
    GLuint v = shader(GL_VERTEX_SHADER, vertex, err, errlen);
    GLuint f = v ? shader(GL_FRAGMENT_SHADER, fragment, err, errlen) : 0;
    if (!f) {
        glDeleteShader(v);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, v);
    glAttachShader(p, f);
    glLinkProgram(p);
    glDeleteShader(v);
    glDeleteShader(f);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[512] = "";
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        snprintf(err, errlen, "a program did not link: %s", log);
        glDeleteProgram(p);
        return 0;
    }
    return p;
}

bool rvv_renderer_init(rvv_renderer *r, const rvw_level *level, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->level = level;
    r->object_count = level->object_count;
    size_t n = level->object_count ? level->object_count : 1;
    r->run_first = malloc(n * sizeof *r->run_first);
    r->run_count = malloc(n * sizeof *r->run_count);
    r->coarse = malloc(n);
    if (!r->run_first || !r->run_count || !r->coarse) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    r->surface_program = rvv_program(vertex_source, surface_source, err, errlen);
    r->flat_program = r->surface_program ? rvv_program(vertex_source, flat_source, err, errlen) : 0;
    r->depth_program = r->flat_program ? rvv_program(vertex_source, depth_source, err, errlen) : 0;
    if (!r->depth_program)
        return false;
    GLuint s = r->surface_program;
    r->surface.view_projection = glGetUniformLocation(s, "u_view_projection");
    r->surface.colour = glGetUniformLocation(s, "u_colour");
    r->surface.eye = glGetUniformLocation(s, "u_eye");
    r->surface.sky = glGetUniformLocation(s, "u_sky");
    r->surface.fog = glGetUniformLocation(s, "u_fog");
    r->surface.fade = glGetUniformLocation(s, "u_fade");
    r->surface.fade_coarse = glGetUniformLocation(s, "u_fade_coarse");
    r->surface.tone = glGetUniformLocation(s, "u_tone");
    r->surface.alpha = glGetUniformLocation(s, "u_alpha");
    r->flat.view_projection = glGetUniformLocation(r->flat_program, "u_view_projection");
    r->flat.colour = glGetUniformLocation(r->flat_program, "u_colour");
    r->depth_view_projection = glGetUniformLocation(r->depth_program, "u_view_projection");

    /* level->triangles is already 3 vertices of 3 floats per triangle, in object order */
    glGenVertexArrays(1, &r->vao);
    glGenBuffers(1, &r->vbo);
    glBindVertexArray(r->vao);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)level->triangle_count * 9 * sizeof(float), level->triangles,
                 level->city ? GL_DYNAMIC_DRAW : GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 3 * sizeof(float), NULL);
    glGenVertexArrays(1, &r->lines_vao);
    glGenBuffers(1, &r->lines_vbo);
    glBindVertexArray(r->lines_vao);
    glBindBuffer(GL_ARRAY_BUFFER, r->lines_vbo);
    glBufferData(GL_ARRAY_BUFFER, 24 * 3 * sizeof(float), NULL, GL_DYNAMIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 3 * sizeof(float), NULL);
    glBindVertexArray(0);

    /* a light haze for depth: half the light left at the level's diagonal */
    float diag = 0;
    for (int k = 0; k < 3; k++) {
        float e = level->bounds.max[k] - level->bounds.min[k];
        diag += e * e;
    }
    diag = sqrtf(diag);
    r->fog_per_unit = diag > 0 ? logf(2.0f) / diag : 0;
    r->sky[0] = 0.52f;
    r->sky[1] = 0.66f;
    r->sky[2] = 0.82f;
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) {
        snprintf(err, errlen, "OpenGL error 0x%x while uploading the level", e);
        return false;
    }
    return true;
}

void rvv_renderer_free(rvv_renderer *r)
{
    if (r->vbo) {
        glDeleteBuffers(1, &r->vbo);
        glDeleteBuffers(1, &r->lines_vbo);
        glDeleteVertexArrays(1, &r->vao);
        glDeleteVertexArrays(1, &r->lines_vao);
    }
    if (r->surface_program)
        glDeleteProgram(r->surface_program);
    if (r->flat_program)
        glDeleteProgram(r->flat_program);
    if (r->depth_program)
        glDeleteProgram(r->depth_program);
    free(r->run_first);
    free(r->run_count);
    free(r->coarse);
    free(r->order);
    memset(r, 0, sizeof *r);
}

void rvv_renderer_update_object(rvv_renderer *r, uint32_t object)
{
    const rvw_object *o = &r->level->objects[object];
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo);
    glBufferSubData(GL_ARRAY_BUFFER, (GLintptr)o->first_triangle * 9 * sizeof(float),
                    (GLsizeiptr)o->triangle_count * 9 * sizeof(float),
                    r->level->triangles + (size_t)o->first_triangle * 9);
}

/* A stable per-object brightness variation in [0.88, 1.12], so neighbouring surfaces of
 * one colour stay apart. */
static float tint(uint32_t object)
{
    uint32_t h = object * 2654435761u;
    h ^= h >> 15;
    return 0.88f + 0.24f * (float)(h & 1023) / 1023.0f;
}

static void kind_colour(uint8_t kind, float out[3])
{
    static const float colours[RVW_OBJ_KIND_COUNT][3] = {
        [RVW_OBJ_SURFACE] = { 0.78f, 0.74f, 0.66f },
        [RVW_OBJ_BUILDING] = { 0.66f, 0.67f, 0.72f },
        [RVW_OBJ_PROP] = { 0.86f, 0.62f, 0.34f },
        [RVW_OBJ_PART_ITEM] = { 0.45f, 0.76f, 0.86f },
        [RVW_OBJ_VEHICLE] = { 0.86f, 0.27f, 0.22f },
        [RVW_OBJ_TERRAIN] = { 0.47f, 0.60f, 0.38f },
        [RVW_OBJ_HLOD_PROXY] = { 0.72f, 0.62f, 0.86f },
    };
    memcpy(out, colours[kind < RVW_OBJ_KIND_COUNT ? kind : 0], 3 * sizeof(float));
}

static void lod_colour(uint32_t level, bool stand_in, float out[3])
{
    static const float colours[5][3] = {
        { 0.30f, 0.80f, 0.35f }, { 0.92f, 0.86f, 0.30f }, { 0.96f, 0.56f, 0.20f },
        { 0.90f, 0.26f, 0.26f }, { 0.85f, 0.30f, 0.85f },
    };
    static const float cyan[3] = { 0.25f, 0.85f, 0.90f };
    memcpy(out, stand_in ? cyan : colours[level < 4 ? level : 4], 3 * sizeof(float));
}

static void draw_object(const rvv_renderer *r, uint32_t object)
{
    const rvw_object *o = &r->level->objects[object];
    if (o->triangle_count)
        glDrawArrays(GL_TRIANGLES, (GLint)o->first_triangle * 3, (GLsizei)o->triangle_count * 3);
}

/* Draws every object with pick(verdict, user) true as merged runs of consecutive objects
 * (their triangles are contiguous): one glMultiDrawArrays. Returns the run count. */
static uint32_t draw_runs(rvv_renderer *r, const uint8_t *values, bool (*pick)(uint8_t value, const void *user),
                          const void *user)
{
    const rvw_level *level = r->level;
    uint32_t runs = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        if (!o->triangle_count || !pick(values[i], user))
            continue;
        GLint first = (GLint)o->first_triangle * 3;
        if (runs && r->run_first[runs - 1] + r->run_count[runs - 1] == first) {
            r->run_count[runs - 1] += (GLsizei)o->triangle_count * 3;
        } else {
            r->run_first[runs] = first;
            r->run_count[runs] = (GLsizei)o->triangle_count * 3;
            runs++;
        }
    }
    if (runs)
        glMultiDrawArrays(GL_TRIANGLES, r->run_first, r->run_count, (GLsizei)runs);
    return runs;
}

static bool pick_nonzero(uint8_t value, const void *user)
{
    (void)user;
    return value != 0;
}

static bool pick_verdict(uint8_t value, const void *user)
{
    return value == *(const uint8_t *)user;
}

static void set_surface_common(rvv_renderer *r, const rvw_view *camera)
{
    glUseProgram(r->surface_program);
    glUniformMatrix4fv(r->surface.view_projection, 1, GL_FALSE, camera->view_projection);
    glUniform3fv(r->surface.eye, 1, camera->eye);
    glUniform3fv(r->surface.sky, 1, r->sky);
    glUniform1f(r->surface.fog, r->fog_per_unit);
    glUniform1f(r->surface.fade, 1.0f);
    glUniform1i(r->surface.fade_coarse, 0);
    glUniform1i(r->surface.tone, r->level->city == NULL);
    glUniform1f(r->surface.alpha, 1.0f);
}

/* Draws the objects of one culled verdict, filled, after the drawn ones: with a strict depth
 * test only what lies in front of everything drawn shows. */
static uint32_t fill_verdict(rvv_renderer *r, const uint8_t *verdict, uint8_t which, const float colour[3])
{
    glUniform3fv(r->surface.colour, 1, colour);
    glUniform1i(r->surface.tone, 0);
    return draw_runs(r, verdict, pick_verdict, &which);
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The same items in object order (opaque first): what a renderer without rvis's sort
 * would submit. Keys are (translucent, object, index); false when memory ran out (rvis's
 * order is kept then). */
static bool scene_order(rvv_renderer *r, const rvw_draw *draws, uint32_t count)
{
    if (count > r->order_capacity) {
        uint64_t *fresh = realloc(r->order, (size_t)count * sizeof *fresh);
        if (!fresh)
            return false;
        r->order = fresh;
        r->order_capacity = count;
    }
    for (uint32_t k = 0; k < count; k++)
        r->order[k] = (uint64_t)draws[k].translucent << 63 | (uint64_t)(draws[k].object & 0x7FFFFFFFu) << 32 | k;
    qsort(r->order, count, sizeof *r->order, by_key);
    return true;
}

uint32_t rvv_render_scene(rvv_renderer *r, const rvv_scene_pass *pass, uint32_t width, uint32_t height)
{
    const rvw_level *level = r->level;
    glViewport(0, 0, (GLsizei)width, (GLsizei)height);
    glClearColor(r->sky[0], r->sky[1], r->sky[2], 1.0f);
    glClearDepth(1.0);
    glDepthMask(GL_TRUE);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDisable(GL_CULL_FACE); /* two-sided, as the oracle draws */
    glDisable(GL_BLEND);
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glBindVertexArray(r->vao);
    set_surface_common(r, pass->camera);

    /* which level of a crossfading pair is the finer one: the lowest drawn this frame */
    memset(r->coarse, 255, level->object_count);
    for (uint32_t k = 0; k < pass->draw_count; k++) {
        const rvw_draw *d = &pass->draws[k];
        if (d->lod_level < r->coarse[d->object])
            r->coarse[d->object] = (uint8_t)(d->lod_level < 254 ? d->lod_level : 254);
    }
    const uint64_t *order = NULL;
    if (pass->scene_order && scene_order(r, pass->draws, pass->draw_count))
        order = r->order;
    uint32_t calls = 0;
    bool translucent_started = false;
    for (uint32_t n = 0; n < pass->draw_count; n++) {
        const rvw_draw *d = &pass->draws[order ? (uint32_t)order[n] : n];
        if (d->translucent && !translucent_started) {
            translucent_started = true;
            glEnable(GL_BLEND);
            glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
            glDepthMask(GL_FALSE);
            glUniform1f(r->surface.alpha, 0.5f);
        }
        const rvw_object *o = &level->objects[d->object];
        float c[3];
        bool stand_in = o->kind == RVW_OBJ_HLOD_PROXY;
        if (pass->colouring == RVV_COLOUR_LOD) {
            lod_colour(d->lod_level, stand_in, c);
            glUniform1i(r->surface.tone, 0);
        } else if (pass->colouring == RVV_COLOUR_VERDICT) {
            c[0] = 0.58f, c[1] = 0.74f, c[2] = 0.58f;
            glUniform1i(r->surface.tone, 0);
        } else {
            kind_colour(o->kind, c);
            glUniform1i(r->surface.tone, level->city == NULL);
        }
        float t = tint(d->object);
        for (int k = 0; k < 3; k++)
            c[k] *= t;
        glUniform3fv(r->surface.colour, 1, c);
        bool coarse = stand_in || d->lod_level > r->coarse[d->object];
        glUniform1f(r->surface.fade, d->fade);
        glUniform1i(r->surface.fade_coarse, coarse);
        draw_object(r, d->object);
        calls++;
    }
    if (translucent_started) {
        glDisable(GL_BLEND);
        glDepthMask(GL_TRUE);
        glUniform1f(r->surface.alpha, 1.0f);
    }
    glUniform1f(r->surface.fade, 1.0f);
    glUniform1i(r->surface.fade_coarse, 0);
    if (pass->verdict && pass->draw_frustum_culled && pass->colouring != RVV_COLOUR_VERDICT) {
        /* frustum culling switched off: what it culled is submitted too (shaded alike) */
        float c[3];
        uint8_t v = RVW_CULLED_FRUSTUM;
        kind_colour(level->city ? RVW_OBJ_BUILDING : RVW_OBJ_SURFACE, c);
        glUniform3fv(r->surface.colour, 1, c);
        glUniform1i(r->surface.tone, level->city == NULL);
        calls += draw_runs(r, pass->verdict, pick_verdict, &v);
    }
    if (pass->colouring == RVV_COLOUR_VERDICT && pass->verdict) {
        static const float red[3] = { 1.0f, 0.16f, 0.10f }, blue[3] = { 0.20f, 0.42f, 1.0f };
        calls += fill_verdict(r, pass->verdict, RVW_CULLED_OCCLUSION, red);
        calls += fill_verdict(r, pass->verdict, RVW_CULLED_FRUSTUM, blue);
    }
    glBindVertexArray(0);
    return calls;
}

void rvv_render_outlines(rvv_renderer *r, const rvw_view *camera, const uint8_t *verdict, bool frustum,
                         bool occlusion)
{
    glUseProgram(r->flat_program);
    glUniformMatrix4fv(r->flat.view_projection, 1, GL_FALSE, camera->view_projection);
    glBindVertexArray(r->vao);
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glPolygonMode(GL_FRONT_AND_BACK, GL_LINE);
    if (frustum) {
        uint8_t v = RVW_CULLED_FRUSTUM;
        glUniform4f(r->flat.colour, 0.35f, 0.55f, 1.0f, 0.35f);
        draw_runs(r, verdict, pick_verdict, &v);
    }
    if (occlusion) {
        uint8_t v = RVW_CULLED_OCCLUSION;
        glUniform4f(r->flat.colour, 1.0f, 0.30f, 0.15f, 0.8f);
        draw_runs(r, verdict, pick_verdict, &v);
    }
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glDisable(GL_BLEND);
    glEnable(GL_DEPTH_TEST);
    glBindVertexArray(0);
}

void rvv_render_frustum(rvv_renderer *r, const rvw_view *camera, const rvw_view *frozen, float reach)
{
    /* the view matrix's rows are the camera's right, up and back axes */
    const float *m = frozen->view;
    float right[3] = { m[0], m[4], m[8] }, up[3] = { m[1], m[5], m[9] }, back[3] = { m[2], m[6], m[10] };
    float ty = tanf(frozen->fov_y / 2), tx = ty * (float)frozen->width / (float)frozen->height;
    float corner[4][3];
    for (int c = 0; c < 4; c++) {
        float sx = (c & 1) ? tx : -tx, sy = (c & 2) ? ty : -ty;
        for (int k = 0; k < 3; k++)
            corner[c][k] = frozen->eye[k] + reach * (-back[k] + sx * right[k] + sy * up[k]);
    }
    float lines[16][3];
    int n = 0;
    static const int ring[4] = { 0, 1, 3, 2 };
    for (int c = 0; c < 4; c++) {
        memcpy(lines[n++], frozen->eye, sizeof lines[0]);
        memcpy(lines[n++], corner[c], sizeof lines[0]);
        memcpy(lines[n++], corner[ring[c]], sizeof lines[0]);
        memcpy(lines[n++], corner[ring[(c + 1) % 4]], sizeof lines[0]);
    }
    glUseProgram(r->flat_program);
    glUniformMatrix4fv(r->flat.view_projection, 1, GL_FALSE, camera->view_projection);
    glUniform4f(r->flat.colour, 1.0f, 0.92f, 0.2f, 1.0f);
    glBindVertexArray(r->lines_vao);
    glBindBuffer(GL_ARRAY_BUFFER, r->lines_vbo);
    glBufferSubData(GL_ARRAY_BUFFER, 0, sizeof lines, lines);
    glDisable(GL_DEPTH_TEST);
    glDrawArrays(GL_LINES, 0, n);
    glEnable(GL_DEPTH_TEST);
    glBindVertexArray(0);
}

void rvv_render_depth(rvv_renderer *r, const rvw_view *view, const uint8_t *include)
{
    glUseProgram(r->depth_program);
    glUniformMatrix4fv(r->depth_view_projection, 1, GL_FALSE, view->view_projection);
    glBindVertexArray(r->vao);
    glEnable(GL_DEPTH_TEST);
    glDepthFunc(GL_LESS);
    glDepthMask(GL_TRUE);
    glDisable(GL_CULL_FACE);
    glDisable(GL_BLEND);
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_FALSE);
    draw_runs(r, include, pick_nonzero, NULL);
}

void rvv_render_object_depth(rvv_renderer *r, uint32_t object)
{
    draw_object(r, object);
}
