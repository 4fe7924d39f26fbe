#include "overlay.h"

#include "render.h"

#include <cairo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A screen-aligned quad from gl_VertexID (no vertex buffer): rect is x, y, width, height
 * in pixels from the top-left corner. */
static const char vertex_source[] =
    "#version 330 core\n"
    "uniform vec4 u_rect;\n"
    "uniform vec2 u_viewport;\n"
    "out vec2 v_uv;\n"
    "void main() {\n"
    "    vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);\n"
    "    vec2 pixel = u_rect.xy + corner * u_rect.zw;\n"
    "    v_uv = corner;\n"
    "    gl_Position = vec4(pixel.x / u_viewport.x * 2.0 - 1.0, 1.0 - pixel.y / u_viewport.y * 2.0, 0.0, 1.0);\n"
    "}\n";

/* cairo's ARGB32 is premultiplied; uploaded as BGRA it samples as premultiplied RGBA. */
static const char fragment_source[] =
    "#version 330 core\n"
    "uniform sampler2D u_panel;\n"
    "in vec2 v_uv;\n"
    "out vec4 o_colour;\n"
    "void main() { o_colour = texture(u_panel, v_uv); }\n";

bool rvv_overlay_init(rvv_overlay *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->program = rvv_program(vertex_source, fragment_source, err, errlen);
    if (!o->program)
        return false;
    o->rect = glGetUniformLocation(o->program, "u_rect");
    o->viewport = glGetUniformLocation(o->program, "u_viewport");
    glGenVertexArrays(1, &o->vao);
    glGenTextures(1, &o->texture);
    glBindTexture(GL_TEXTURE_2D, o->texture);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    return true;
}

void rvv_overlay_free(rvv_overlay *o)
{
    if (o->program)
        glDeleteProgram(o->program);
    if (o->texture)
        glDeleteTextures(1, &o->texture);
    if (o->vao)
        glDeleteVertexArrays(1, &o->vao);
    memset(o, 0, sizeof *o);
}

void rvv_overlay_draw(rvv_overlay *o, const char lines[][RVV_OVERLAY_LINE], uint32_t count, uint32_t width,
                      uint32_t height)
{
    if (!count)
        return;
    /* text a little larger on a larger screen; 13 px at 720 lines */
    double size = height / 55.0 < 11.0 ? 11.0 : height / 55.0;
    double pad = size * 0.6, line_height = size * 1.32;
    /* measure first: the panel is as wide as its widest line */
    cairo_surface_t *probe = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *m = cairo_create(probe);
    cairo_select_font_face(m, "monospace", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(m, size);
    double widest = 0;
    for (uint32_t k = 0; k < count; k++) {
        cairo_text_extents_t e;
        cairo_text_extents(m, lines[k][0] == '!' ? lines[k] + 1 : lines[k], &e);
        if (e.x_advance > widest)
            widest = e.x_advance;
    }
    cairo_destroy(m);
    cairo_surface_destroy(probe);
    uint32_t w = (uint32_t)(widest + 2 * pad + 1), h = (uint32_t)(count * line_height + 2 * pad - size * 0.25);
    if (w > width)
        w = width;
    if (h > height)
        h = height;

    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, (int)h);
    cairo_t *c = cairo_create(surface);
    cairo_set_source_rgba(c, 0.05, 0.06, 0.08, 0.72);
    cairo_paint(c);
    cairo_select_font_face(c, "monospace", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(c, size);
    for (uint32_t k = 0; k < count; k++) {
        const char *text = lines[k];
        if (text[0] == '!') {
            cairo_set_source_rgb(c, 1.0, 0.35, 0.3);
            text++;
        } else if (k == 0) {
            cairo_set_source_rgb(c, 1.0, 0.86, 0.45);
        } else {
            cairo_set_source_rgb(c, 0.92, 0.94, 0.96);
        }
        cairo_move_to(c, pad, pad + size * 0.95 + k * line_height);
        cairo_show_text(c, text);
    }
    cairo_destroy(c);
    cairo_surface_flush(surface);

    glBindTexture(GL_TEXTURE_2D, o->texture);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, cairo_image_surface_get_stride(surface) / 4);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    if (w != o->texture_width || h != o->texture_height) {
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, (GLsizei)w, (GLsizei)h, 0, GL_BGRA, GL_UNSIGNED_INT_8_8_8_8_REV,
                     cairo_image_surface_get_data(surface));
        o->texture_width = w;
        o->texture_height = h;
    } else {
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, (GLsizei)w, (GLsizei)h, GL_BGRA, GL_UNSIGNED_INT_8_8_8_8_REV,
                        cairo_image_surface_get_data(surface));
    }
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    cairo_surface_destroy(surface);
    o->panel_width = w;
    o->panel_height = h;

    glViewport(0, 0, (GLsizei)width, (GLsizei)height);
    glUseProgram(o->program);
    glUniform4f(o->rect, 0.0f, 0.0f, (float)w, (float)h);
    glUniform2f(o->viewport, (float)width, (float)height);
    glDisable(GL_DEPTH_TEST);
    glEnable(GL_BLEND);
    glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glBindVertexArray(o->vao);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
    glBindVertexArray(0);
    glDisable(GL_BLEND);
    glEnable(GL_DEPTH_TEST);
}

bool rvv_screenshot(const char *path, uint32_t width, uint32_t height, char *err, size_t errlen)
{
    int stride = cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, (int)width);
    uint8_t *pixels = malloc((size_t)stride * height);
    if (!pixels) {
        snprintf(err, errlen, "out of memory for a screenshot");
        return false;
    }
    /* GL's rows start at the bottom; cairo's at the top */
    glPixelStorei(GL_PACK_ALIGNMENT, 4);
    glPixelStorei(GL_PACK_ROW_LENGTH, stride / 4);
    glReadPixels(0, 0, (GLsizei)width, (GLsizei)height, GL_BGRA, GL_UNSIGNED_INT_8_8_8_8_REV, pixels);
    glPixelStorei(GL_PACK_ROW_LENGTH, 0);
    for (uint32_t y = 0; y < height / 2; y++) {
        uint8_t *a = pixels + (size_t)y * stride, *b = pixels + (size_t)(height - 1 - y) * stride;
        for (int k = 0; k < stride; k++) {
            uint8_t t = a[k];
            a[k] = b[k];
            b[k] = t;
        }
    }
    cairo_surface_t *s = cairo_image_surface_create_for_data(pixels, CAIRO_FORMAT_RGB24, (int)width, (int)height, stride);
    cairo_status_t status = cairo_surface_write_to_png(s, path);
    cairo_surface_destroy(s);
    free(pixels);
    if (status != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot write %s: %s", path, cairo_status_to_string(status));
        return false;
    }
    return true;
}

void rvv_overlay_shutdown(void)
{
    cairo_debug_reset_static_data();
}
