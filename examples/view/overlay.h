/* rvis-view: the figures panel drawn over the picture, and PNG screenshots. cairo lays the
 * text out (a system monospace font through fontconfig) into an image that becomes a GL
 * texture; cairo also writes the PNG files. */
#ifndef RVV_OVERLAY_H
#define RVV_OVERLAY_H

#include <epoxy/gl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RVV_OVERLAY_MAX_LINES 16
#define RVV_OVERLAY_LINE 128

typedef struct rvv_overlay {
    GLuint program, texture, vao;
    GLint rect, viewport;
    uint32_t texture_width, texture_height;
    uint32_t panel_width, panel_height;   /* pixels of the last panel drawn */
} rvv_overlay;

/* Builds the overlay's program and texture (a current GL context is needed). */
bool rvv_overlay_init(rvv_overlay *o, char *err, size_t errlen);
void rvv_overlay_free(rvv_overlay *o);

/* Draws lines (UTF-8) as a panel in the top-left corner of a width x height viewport. The
 * first line is a title; a line starting with '!' is drawn in red (without the '!'). */
void rvv_overlay_draw(rvv_overlay *o, const char lines[][RVV_OVERLAY_LINE], uint32_t count, uint32_t width,
                      uint32_t height);

/* Reads the bound framebuffer (width x height) and writes it to path as a PNG. */
bool rvv_screenshot(const char *path, uint32_t width, uint32_t height, char *err, size_t errlen);

/* Frees cairo's and fontconfig's caches (so a leak checker sees only real leaks). */
void rvv_overlay_shutdown(void);

#endif
