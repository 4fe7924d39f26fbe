/* rvis-view: an off-screen OpenGL 3.3 core context through EGL, and the framebuffer the
 * headless run draws into.
 *
 * Why EGL: GL calls go through libepoxy, which dispatches through the current GLX or EGL
 * context; an OSMesa context is neither (epoxy stops with "Couldn't find current GLX or EGL
 * context"), and OSMesa's headers clash with epoxy's. Mesa's EGL gives the same llvmpipe
 * rasteriser with no window system: the surfaceless platform (EGL_MESA_platform_surfaceless)
 * first, then the device platform (EGL_EXT_platform_device), then the default display, each
 * with a small pbuffer made current; the picture itself is drawn into a framebuffer object. */
#ifndef RVV_HEADLESS_H
#define RVV_HEADLESS_H

#include <epoxy/gl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rvv_headless rvv_headless;

/* Makes a GL 3.3 core context current on this thread. False with a one-line reason (every
 * platform tried and why it failed) in err. */
bool rvv_headless_create(rvv_headless **out, char *err, size_t errlen);

/* Which EGL platform made the context (for reports). */
const char *rvv_headless_platform(const rvv_headless *h);

void rvv_headless_destroy(rvv_headless *h);

/* A colour + depth framebuffer object of width x height (RGBA8, 24-bit depth). */
typedef struct rvv_target {
    GLuint framebuffer, colour, depth;
    uint32_t width, height;
} rvv_target;

/* Creates the target (colour may be false: depth only). False with a reason in err. */
bool rvv_target_create(rvv_target *t, uint32_t width, uint32_t height, bool colour, char *err, size_t errlen);
void rvv_target_free(rvv_target *t);

#endif
