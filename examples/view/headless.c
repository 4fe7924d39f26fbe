#include "headless.h"

#include <epoxy/egl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rvv_headless {
    EGLDisplay display;
    EGLContext context;
    EGLSurface surface;
    const char *platform;
};

static bool has_extension(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* Initialises display and makes a 3.3 core context current on a 16 x 16 pbuffer. */
static bool try_display(rvv_headless *h, EGLDisplay display, const char *platform, char *why, size_t whylen)
{
    EGLint major = 0, minor = 0;
    if (display == EGL_NO_DISPLAY || !eglInitialize(display, &major, &minor)) {
        snprintf(why, whylen, "%s: no display (EGL error 0x%x)", platform, eglGetError());
        return false;
    }
    static const EGLint config_attributes[] = {
        EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
        EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_NONE,
    };
    static const EGLint context_attributes[] = {
        EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
        EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE,
    };
    static const EGLint surface_attributes[] = { EGL_WIDTH, 16, EGL_HEIGHT, 16, EGL_NONE };
    EGLConfig config;
    EGLint configs = 0;
    EGLContext context = EGL_NO_CONTEXT;
    EGLSurface surface = EGL_NO_SURFACE;
    const char *step = "no OpenGL API";
    if (!eglBindAPI(EGL_OPENGL_API))
        goto fail;
    step = "no pbuffer config for desktop OpenGL";
    if (!eglChooseConfig(display, config_attributes, &config, 1, &configs) || configs < 1)
        goto fail;
    step = "no OpenGL 3.3 core context";
    context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attributes);
    if (context == EGL_NO_CONTEXT)
        goto fail;
    step = "no pbuffer";
    surface = eglCreatePbufferSurface(display, config, surface_attributes);
    if (surface == EGL_NO_SURFACE)
        goto fail;
    step = "the context could not be made current";
    if (!eglMakeCurrent(display, surface, surface, context))
        goto fail;
    h->display = display;
    h->context = context;
    h->surface = surface;
    h->platform = platform;
    return true;
fail:
    snprintf(why, whylen, "%s (EGL %d.%d): %s (EGL error 0x%x)", platform, major, minor, step, eglGetError());
    if (surface != EGL_NO_SURFACE)
        eglDestroySurface(display, surface);
    if (context != EGL_NO_CONTEXT)
        eglDestroyContext(display, context);
    eglTerminate(display);
    return false;
}

bool rvv_headless_create(rvv_headless **out, char *err, size_t errlen)
{
    rvv_headless *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    /* A machine without libEGL: epoxy would abort on the first EGL call. */
    if (!epoxy_has_egl()) {
        snprintf(err, errlen, "no EGL library (Debian: libegl1 and libegl-mesa0)");
        free(h);
        return false;
    }
    const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    char why[3][192] = { "surfaceless platform: not offered", "device platform: not offered", "" };
    bool ok = false;
    if (has_extension(client, "EGL_MESA_platform_surfaceless"))
        ok = try_display(h, eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL),
                         "EGL surfaceless platform (Mesa)", why[0], sizeof why[0]);
    if (!ok && has_extension(client, "EGL_EXT_platform_device") && has_extension(client, "EGL_EXT_device_enumeration")) {
        EGLDeviceEXT devices[8];
        EGLint count = 0;
        if (eglQueryDevicesEXT(8, devices, &count) && count > 0)
            ok = try_display(h, eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devices[0], NULL),
                             "EGL device platform", why[1], sizeof why[1]);
        else
            snprintf(why[1], sizeof why[1], "device platform: no device");
    }
    if (!ok)
        ok = try_display(h, eglGetDisplay(EGL_DEFAULT_DISPLAY), "EGL default display", why[2], sizeof why[2]);
    if (!ok) {
        snprintf(err, errlen, "no OpenGL 3.3 core context through EGL: %s; %s; %s", why[0], why[1], why[2]);
        free(h);
        return false;
    }
    *out = h;
    return true;
}

const char *rvv_headless_platform(const rvv_headless *h)
{
    return h->platform;
}

/* The display stays initialised: eglTerminate makes Mesa unload its driver, leaving two
 * small blocks behind whose allocating code is then gone, so a leak checker can neither
 * name nor suppress them. The process ends soon after; nothing else uses the display. */
void rvv_headless_destroy(rvv_headless *h)
{
    if (!h)
        return;
    eglMakeCurrent(h->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroySurface(h->display, h->surface);
    eglDestroyContext(h->display, h->context);
    free(h);
}

bool rvv_target_create(rvv_target *t, uint32_t width, uint32_t height, bool colour, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->width = width;
    t->height = height;
    glGenFramebuffers(1, &t->framebuffer);
    glBindFramebuffer(GL_FRAMEBUFFER, t->framebuffer);
    if (colour) {
        glGenRenderbuffers(1, &t->colour);
        glBindRenderbuffer(GL_RENDERBUFFER, t->colour);
        glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, (GLsizei)width, (GLsizei)height);
        glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, t->colour);
    } else {
        glDrawBuffer(GL_NONE);
        glReadBuffer(GL_NONE);
    }
    glGenRenderbuffers(1, &t->depth);
    glBindRenderbuffer(GL_RENDERBUFFER, t->depth);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, (GLsizei)width, (GLsizei)height);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, t->depth);
    GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    if (status != GL_FRAMEBUFFER_COMPLETE) {
        snprintf(err, errlen, "a %ux%u framebuffer is incomplete (0x%x)", width, height, status);
        rvv_target_free(t);
        return false;
    }
    return true;
}

void rvv_target_free(rvv_target *t)
{
    if (t->framebuffer)
        glDeleteFramebuffers(1, &t->framebuffer);
    if (t->colour)
        glDeleteRenderbuffers(1, &t->colour);
    if (t->depth)
        glDeleteRenderbuffers(1, &t->depth);
    memset(t, 0, sizeof *t);
}
