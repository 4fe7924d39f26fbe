#include "image.h"

#include "drive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RVW_HAVE_CAIRO
#include <cairo.h>
#endif
#ifdef RVW_HAVE_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif

bool rvw_have_images(void)
{
#ifdef RVW_HAVE_CAIRO
    return true;
#else
    return false;
#endif
}

#ifndef RVW_HAVE_CAIRO
static bool no_cairo(const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "rvis-walk was built without cairo: cannot write %s", path);
    return false;
}

bool rvw_image_top_down(const char *path, const rvw_level *level, const rvw_view *view,
                        const uint8_t *verdict, const uint32_t *visible_pixels, char *err,
                        size_t errlen)
{
    (void)level, (void)view, (void)verdict, (void)visible_pixels;
    return no_cairo(path, err, errlen);
}

bool rvw_image_reference(const char *path, const rvw_level *level, const rvw_view *view,
                         const rvw_reference *ref, char *err, size_t errlen)
{
    (void)level, (void)view, (void)ref;
    return no_cairo(path, err, errlen);
}

bool rvw_image_occlusion(const char *path, const rvw_level *level, const rvw_view *view,
                         const uint8_t *gray, uint32_t width, uint32_t height, float depth_near,
                         float depth_far, char *err, size_t errlen)
{
    (void)level, (void)view, (void)gray, (void)width, (void)height, (void)depth_near, (void)depth_far;
    return no_cairo(path, err, errlen);
}

#else

/* ---- the footer: title, key, scale ------------------------------------------------------ */

enum { MARGIN = 12, TITLE_H = 24, ROW_H = 20, KEY_COLUMN_W = 290, SCALE_ROW_H = 34 };

typedef enum swatch { SWATCH_BOX, SWATCH_LINE, SWATCH_DOT } swatch;

typedef struct key_entry {
    double rgb[3];
    swatch shape;
    const char *label;
} key_entry;

/* The map's units: the city is built in metres, Quake maps in their own units. */
static const char *units_of(const rvw_level *level)
{
    return level->city ? "m" : "map units";
}

static int key_columns(int width)
{
    int columns = (width - 2 * MARGIN) / KEY_COLUMN_W;
    return columns < 1 ? 1 : columns;
}

/* Footer height for a picture width pixels wide with key_count entries and extra_rows
 * full-width rows (the depth bar) above the key. */
static int footer_height(int width, int key_count, int extra_rows)
{
    int columns = key_columns(width);
    int rows = (key_count + columns - 1) / columns + extra_rows;
    return MARGIN + TITLE_H + rows * ROW_H + SCALE_ROW_H + MARGIN / 2;
}

static void text_at(cairo_t *cr, double x, double y, double size, bool bold, const char *text)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, text);
}

static double text_width(cairo_t *cr, double size, const char *text)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    return e.x_advance;
}

/* Dark band from y = top to the bottom with the title in it; returns the y below the title. */
static double footer_begin(cairo_t *cr, int width, int height, int top, const char *title)
{
    cairo_set_source_rgb(cr, 0.13, 0.13, 0.14);
    cairo_rectangle(cr, 0, top, width, height - top);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
    text_at(cr, MARGIN, top + MARGIN + 14, 15, true, title);
    return top + MARGIN + TITLE_H;
}

/* The key in columns from y; returns the y below it. */
static double footer_key(cairo_t *cr, int width, double y, const key_entry *key, int count)
{
    int columns = key_columns(width);
    for (int i = 0; i < count; i++) {
        double x = MARGIN + (i % columns) * KEY_COLUMN_W, row = y + (i / columns) * ROW_H;
        const double *c = key[i].rgb;
        cairo_set_source_rgb(cr, c[0], c[1], c[2]);
        switch (key[i].shape) {
        case SWATCH_BOX:
            cairo_rectangle(cr, x, row + 3, 22, 12);
            cairo_fill_preserve(cr);
            cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
            cairo_set_line_width(cr, 1);
            cairo_stroke(cr);
            break;
        case SWATCH_LINE:
            cairo_set_line_width(cr, 2);
            cairo_move_to(cr, x, row + 9);
            cairo_line_to(cr, x + 22, row + 9);
            cairo_stroke(cr);
            break;
        case SWATCH_DOT:
            cairo_arc(cr, x + 11, row + 9, 4, 0, 2 * M_PI);
            cairo_fill(cr);
            break;
        }
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        text_at(cr, x + 30, row + 14, 12, false, key[i].label);
    }
    int rows = (count + columns - 1) / columns;
    return y + rows * ROW_H;
}

/* A scale bar px pixels long from (x, y) with its label; returns its right end. */
static double scale_bar(cairo_t *cr, double x, double y, double px, const char *label)
{
    cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, x, y - 5);
    cairo_line_to(cr, x, y + 5);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + px, y);
    cairo_move_to(cr, x + px, y - 5);
    cairo_line_to(cr, x + px, y + 5);
    cairo_stroke(cr);
    text_at(cr, x + px + 8, y + 5, 12, false, label);
    return x + px + 8 + text_width(cr, 12, label);
}

/* The largest 1, 2 or 5 x 10^k not above limit (limit > 0). */
static double round_length(double limit)
{
    double decade = pow(10.0, floor(log10(limit)));
    double steps[3] = { 5, 2, 1 };
    for (int i = 0; i < 3; i++)
        if (steps[i] * decade <= limit)
            return steps[i] * decade;
    return decade;
}

/* The angle bar of a perspective picture: pixels_per_radian at the centre (the focal
 * length in pixels), a whole number of degrees about a fifth of the picture wide. */
static double angle_bar(cairo_t *cr, double x, double y, int width, double focal_px)
{
    double target = atan(0.2 * width / focal_px) * 180 / M_PI;
    double degrees = round_length(target);
    char label[96];
    snprintf(label, sizeof label, "%g\xc2\xb0 of view at the centre", degrees);
    return scale_bar(cr, x, y, focal_px * tan(degrees * M_PI / 180), label);
}

static bool finish(cairo_t *cr, cairo_surface_t *surface, const char *path, char *err, size_t errlen)
{
    cairo_status_t status = cairo_status(cr);
    cairo_destroy(cr);
    if (status == CAIRO_STATUS_SUCCESS) {
        cairo_surface_flush(surface);
        status = cairo_surface_write_to_png(surface, path);
    }
    cairo_surface_destroy(surface);
    if (status != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot write %s: %s", path, cairo_status_to_string(status));
        return false;
    }
    return true;
}

/* cairo keeps the fonts it has loaded until its static data is reset, and fontconfig its
 * configuration until FcFini: both at exit, so a leak checker sees only real leaks. */
static void release_fonts(void)
{
    cairo_debug_reset_static_data();
#ifdef RVW_HAVE_FONTCONFIG
    FcFini();
#endif
}

/* A picture width x height (the content above the footer included). NULL (and err set)
 * when cairo could not make it. */
static cairo_t *picture(int width, int height, const char *path, cairo_surface_t **surface,
                        char *err, size_t errlen)
{
    static bool release_registered;
    if (!release_registered)
        release_registered = atexit(release_fonts) == 0;
    *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cairo_t *cr = cairo_create(*surface);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot draw %s: %s", path, cairo_status_to_string(cairo_status(cr)));
        cairo_destroy(cr);
        cairo_surface_destroy(*surface);
        return NULL;
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_paint(cr);
    return cr;
}

/* ---- top-down ------------------------------------------------------------------------- */

enum { PASS_FRUSTUM, PASS_EXCLUDED, PASS_PVS, PASS_OCCLUDED, PASS_HIDDEN, PASS_VISIBLE, PASS_FALSE, PASSES };

static const double pass_rgb[PASSES][3] = {
    { 0.27, 0.27, 0.27 }, { 0.16, 0.24, 0.78 }, { 0.85, 0.55, 0.10 }, { 0.78, 0.16, 0.16 },
    { 0.08, 0.43, 0.08 }, { 0.24, 0.90, 0.24 }, { 1.00, 0.00, 1.00 },
};
static const double ground_rgb[3] = { 0.10, 0.18, 0.10 }, camera_rgb[3] = { 1, 1, 1 },
                    frustum_rgb[3] = { 0.98, 0.86, 0.16 };

static int pass_of(uint8_t verdict, bool visible, bool verified)
{
    switch (verdict) {
    case RVW_DRAWN: return (!verified || visible) ? PASS_VISIBLE : PASS_HIDDEN;
    case RVW_EXCLUDED: return PASS_EXCLUDED;
    case RVW_CULLED_OCCLUSION: return visible ? PASS_FALSE : PASS_OCCLUDED;
    case RVW_CULLED_PVS: return visible ? PASS_FALSE : PASS_PVS;
    case RVW_CULLED_UNSAMPLED: return visible ? PASS_FALSE : PASS_FRUSTUM; /* too small to show */
    default: return visible ? PASS_FALSE : PASS_FRUSTUM;
    }
}

typedef struct map_frame {
    float origin[2], scale; /* world x, z of pixel (0, 0); pixels per world unit */
} map_frame;

static void footprint(cairo_t *cr, const map_frame *m, const rvw_box *b, double grow, const double rgb[3])
{
    double x0 = (b->min[0] - m->origin[0]) * m->scale - grow, x1 = (b->max[0] - m->origin[0]) * m->scale + grow;
    double y0 = (b->min[2] - m->origin[1]) * m->scale - grow, y1 = (b->max[2] - m->origin[1]) * m->scale + grow;
    /* at least a pixel, so small things still show */
    if (x1 - x0 < 1)
        x1 = x0 + 1;
    if (y1 - y0 < 1)
        y1 = y0 + 1;
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_rectangle(cr, floor(x0), floor(y0), ceil(x1) - floor(x0), ceil(y1) - floor(y0));
    if (x1 - x0 > 3 && y1 - y0 > 3) { /* a darker rim keeps neighbouring footprints apart */
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, rgb[0] / 2, rgb[1] / 2, rgb[2] / 2);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
    } else {
        cairo_fill(cr);
    }
}

typedef struct by_area {
    float area;
    uint32_t object;
} by_area;

static int larger_first(const void *a, const void *b)
{
    float x = ((const by_area *)a)->area, y = ((const by_area *)b)->area;
    return (x < y) - (x > y);
}

bool rvw_image_top_down(const char *path, const rvw_level *level, const rvw_view *view,
                        const uint8_t *verdict, const uint32_t *visible_pixels, char *err,
                        size_t errlen)
{
    bool verified = visible_pixels != NULL;
    rvw_box b = level->bounds;
    rvw_box_add_point(&b, view->eye);
    float ex = b.max[0] - b.min[0], ez = b.max[2] - b.min[2];
    float longest = fmaxf(fmaxf(ex, ez), 1e-3f);
    map_frame m = { .scale = 1000.0f / longest };
    int map_w = (int)ceilf(ex * m.scale) + 24, map_h = (int)ceilf(ez * m.scale) + 24;
    m.origin[0] = b.min[0] - 12 / m.scale;
    m.origin[1] = b.min[2] - 12 / m.scale;
    /* wide enough for two key columns and the scale row */
    int width = map_w < 2 * KEY_COLUMN_W + 2 * MARGIN ? 2 * KEY_COLUMN_W + 2 * MARGIN : map_w;

    key_entry key[10];
    int keys = 0;
    if (verified) {
        key[keys++] = (key_entry){ { pass_rgb[PASS_VISIBLE][0], pass_rgb[PASS_VISIBLE][1], pass_rgb[PASS_VISIBLE][2] },
                                   SWATCH_BOX, "drawn, truly visible" };
        key[keys++] = (key_entry){ { pass_rgb[PASS_HIDDEN][0], pass_rgb[PASS_HIDDEN][1], pass_rgb[PASS_HIDDEN][2] },
                                   SWATCH_BOX, "drawn, hidden (no pixel in the oracle)" };
    } else {
        key[keys++] = (key_entry){ { pass_rgb[PASS_VISIBLE][0], pass_rgb[PASS_VISIBLE][1], pass_rgb[PASS_VISIBLE][2] },
                                   SWATCH_BOX, "drawn (frame not verified)" };
    }
    static const struct { int pass; const char *label; } culls[] = {
        { PASS_FRUSTUM, "culled by the frustum" },
        { PASS_OCCLUDED, "culled by occlusion" },
        { PASS_PVS, "skipped by the host's PVS (--pvs)" },
        { PASS_EXCLUDED, "left out on purpose (slice, LOD, HLOD)" },
    };
    for (size_t i = 0; i < sizeof culls / sizeof culls[0]; i++)
        key[keys++] = (key_entry){ { pass_rgb[culls[i].pass][0], pass_rgb[culls[i].pass][1], pass_rgb[culls[i].pass][2] },
                                   SWATCH_BOX, culls[i].label };
    if (verified)
        key[keys++] = (key_entry){ { 1, 0, 1 }, SWATCH_BOX, "FALSE CULL: visible, yet culled" };
    key[keys++] = (key_entry){ { ground_rgb[0], ground_rgb[1], ground_rgb[2] }, SWATCH_BOX, "ground tile, drawn" };
    key[keys++] = (key_entry){ { camera_rgb[0], camera_rgb[1], camera_rgb[2] }, SWATCH_DOT, "camera" };
    key[keys++] = (key_entry){ { frustum_rgb[0], frustum_rgb[1], frustum_rgb[2] }, SWATCH_LINE, "frustum sides" };

    int height = map_h + footer_height(width, keys, 0);
    cairo_surface_t *surface;
    cairo_t *cr = picture(width, height, path, &surface, err, errlen);
    if (!cr)
        return false;
    /* Largest footprints first, so small things stay visible on top of floors and
     * ground; false culls last of all, drawn bigger. */
    by_area *order = malloc((level->object_count ? level->object_count : 1) * sizeof *order);
    if (!order) {
        cairo_destroy(cr);
        cairo_surface_destroy(surface);
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_box *bb = &level->objects[i].bounds;
        order[i].area = (bb->max[0] - bb->min[0]) * (bb->max[2] - bb->min[2]);
        order[i].object = i;
    }
    qsort(order, level->object_count, sizeof *order, larger_first);
    cairo_save(cr);
    cairo_rectangle(cr, 0, 0, map_w, map_h);
    cairo_clip(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE); /* crisp footprints, as they are boxes */
    for (int falses = 0; falses < 2; falses++) {
        for (uint32_t k = 0; k < level->object_count; k++) {
            uint32_t i = order[k].object;
            const rvw_object *o = &level->objects[i];
            bool visible = visible_pixels && visible_pixels[i] > 0;
            int pass = pass_of(verdict[i], visible, verified);
            if ((pass == PASS_FALSE) != (falses == 1))
                continue;
            /* a stand-in not drawn would cover its whole district */
            if (o->kind == RVW_OBJ_HLOD_PROXY && verdict[i] != RVW_DRAWN)
                continue;
            /* ground tiles would paint over everything: only the drawn ones, faintly */
            if (o->kind == RVW_OBJ_TERRAIN) {
                if (pass == PASS_VISIBLE || pass == PASS_HIDDEN)
                    footprint(cr, &m, &o->bounds, 0, ground_rgb);
                continue;
            }
            footprint(cr, &m, &o->bounds, pass == PASS_FALSE ? 3 : 0, pass_rgb[pass]);
        }
    }
    free(order);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    double px = (view->eye[0] - m.origin[0]) * m.scale, py = (view->eye[2] - m.origin[1]) * m.scale;
    double half_x = atan(tan(view->fov_y / 2) * (double)view->width / (double)view->height);
    double fx = view->forward[0], fz = view->forward[2], flen = sqrt(fx * fx + fz * fz);
    if (flen > 0) {
        double reach = 2.0 * (map_w + map_h); /* pixels: past the picture's edge */
        cairo_set_source_rgb(cr, frustum_rgb[0], frustum_rgb[1], frustum_rgb[2]);
        cairo_set_line_width(cr, 1.5);
        for (int side = -1; side <= 1; side += 2) {
            double a = half_x * side, ca = cos(a), sa = sin(a);
            double dx = (fx * ca - fz * sa) / flen, dz = (fx * sa + fz * ca) / flen;
            cairo_move_to(cr, px, py);
            cairo_line_to(cr, px + dx * reach, py + dz * reach);
        }
        cairo_stroke(cr);
    }
    cairo_set_source_rgb(cr, camera_rgb[0], camera_rgb[1], camera_rgb[2]);
    cairo_arc(cr, px, py, 4, 0, 2 * M_PI);
    cairo_fill(cr);
    cairo_restore(cr);

    char title[256];
    snprintf(title, sizeof title, "%s \xc2\xb7 frame %u \xc2\xb7 top-down map: what rvis did with each object%s",
             level->name, view->frame, verified ? "" : " (not verified)");
    double y = footer_begin(cr, width, height, map_h, title);
    y = footer_key(cr, width, y, key, keys);
    double length = round_length(0.25 * map_w / m.scale);
    char label[64];
    snprintf(label, sizeof label, "%g %s", length, units_of(level));
    double right = scale_bar(cr, MARGIN + 1, y + SCALE_ROW_H / 2, length * m.scale, label);
    cairo_set_source_rgb(cr, 0.75, 0.75, 0.75);
    text_at(cr, right + 24, y + SCALE_ROW_H / 2 + 5, 12, false,
            "seen from above: +X to the right, +Z down the picture");
    return finish(cr, surface, path, err, errlen);
}

/* ---- the oracle's view and the occlusion buffer ---------------------------------------- */

/* Focal length in pixels of a picture width x height showing view (square pixels). */
static double focal_pixels(const rvw_view *view, double picture_height)
{
    return picture_height / 2 / tan(view->fov_y / 2);
}

bool rvw_image_reference(const char *path, const rvw_level *level, const rvw_view *view,
                         const rvw_reference *ref, char *err, size_t errlen)
{
    static const key_entry key[] = {
        { { 0.55, 0.75, 0.35 }, SWATCH_BOX, "one colour per object (from its index)" },
        { { 0, 0, 0 }, SWATCH_BOX, "no object: sky or void" },
    };
    int keys = (int)(sizeof key / sizeof key[0]);
    int width = (int)ref->width, view_h = (int)ref->height;
    int height = view_h + footer_height(width, keys, 0);
    cairo_surface_t *surface;
    cairo_t *cr = picture(width, height, path, &surface, err, errlen);
    if (!cr)
        return false;
    cairo_surface_t *ids = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, view_h);
    if (cairo_surface_status(ids) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(ids);
        cairo_destroy(cr);
        cairo_surface_destroy(surface);
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    cairo_surface_flush(ids);
    unsigned char *data = cairo_image_surface_get_data(ids);
    int stride = cairo_image_surface_get_stride(ids);
    for (uint32_t y = 0; y < ref->height; y++) {
        const uint32_t *row_ids = ref->ids + (size_t)(ref->height - 1 - y) * ref->width; /* y up */
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
        for (uint32_t x = 0; x < ref->width; x++) {
            uint32_t h = row_ids[x] * 2654435761u, rgb = 0;
            for (int k = 0; k < 3; k++)
                rgb = (rgb << 8) | (row_ids[x] ? 64u + ((h >> (8 * k + 8)) & 0xBFu) : 0u);
            row[x] = rgb;
        }
    }
    cairo_surface_mark_dirty(ids);
    cairo_set_source_surface(cr, ids, 0, 0);
    cairo_paint(cr);
    cairo_surface_destroy(ids);

    char title[256];
    snprintf(title, sizeof title, "%s \xc2\xb7 frame %u \xc2\xb7 the oracle's view (%u \xc3\x97 %u): every object it sees",
             level->name, view->frame, ref->width, ref->height);
    double y = footer_begin(cr, width, height, view_h, title);
    y = footer_key(cr, width, y, key, keys);
    angle_bar(cr, MARGIN + 1, y + SCALE_ROW_H / 2, width, focal_pixels(view, view_h));
    return finish(cr, surface, path, err, errlen);
}

bool rvw_image_occlusion(const char *path, const rvw_level *level, const rvw_view *view,
                         const uint8_t *gray, uint32_t width, uint32_t height, float depth_near,
                         float depth_far, char *err, size_t errlen)
{
    static const key_entry key[] = {
        { { 0, 0, 0 }, SWATCH_BOX, "no occluder covers the texel" },
    };
    int keys = (int)(sizeof key / sizeof key[0]);
    /* a 256-texel buffer is enlarged to at least 768 pixels, whole texels per pixel block */
    int zoom = width ? (int)((768 + width - 1) / width) : 1;
    zoom = zoom < 1 ? 1 : zoom > 16 ? 16 : zoom;
    int shown_w = (int)width * zoom, shown_h = (int)height * zoom;
    int picture_w = shown_w < 2 * KEY_COLUMN_W + 2 * MARGIN ? 2 * KEY_COLUMN_W + 2 * MARGIN : shown_w;
    int picture_h = shown_h + footer_height(picture_w, keys, 2);
    cairo_surface_t *surface;
    cairo_t *cr = picture(picture_w, picture_h, path, &surface, err, errlen);
    if (!cr)
        return false;
    cairo_surface_t *buffer = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)width, (int)height);
    if (cairo_surface_status(buffer) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(buffer);
        cairo_destroy(cr);
        cairo_surface_destroy(surface);
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    cairo_surface_flush(buffer);
    unsigned char *data = cairo_image_surface_get_data(buffer);
    int stride = cairo_image_surface_get_stride(buffer);
    for (uint32_t y = 0; y < height; y++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
        for (uint32_t x = 0; x < width; x++) {
            uint32_t g = gray[(size_t)y * width + x];
            row[x] = g << 16 | g << 8 | g;
        }
    }
    cairo_surface_mark_dirty(buffer);
    cairo_save(cr);
    cairo_scale(cr, zoom, zoom);
    cairo_set_source_surface(cr, buffer, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST); /* texels stay square */
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(buffer);

    char title[256];
    snprintf(title, sizeof title, "%s \xc2\xb7 frame %u \xc2\xb7 rvis's occlusion buffer (%u \xc3\x97 %u texels, shown %d\xc3\x97)",
             level->name, view->frame, width, height, zoom);
    double y = footer_begin(cr, picture_w, picture_h, shown_h, title);
    /* the grey scale: 255 at the nearest covered depth down to 32 at the farthest */
    const char *units = units_of(level);
    char label[160];
    if (depth_far > 0) {
        double bar_w = 200, x = MARGIN;
        cairo_pattern_t *ramp = cairo_pattern_create_linear(x, 0, x + bar_w, 0);
        cairo_pattern_add_color_stop_rgb(ramp, 0, 1, 1, 1);
        cairo_pattern_add_color_stop_rgb(ramp, 1, 32 / 255.0, 32 / 255.0, 32 / 255.0);
        cairo_set_source(cr, ramp);
        cairo_rectangle(cr, x, y + 3, bar_w, 14);
        cairo_fill(cr);
        cairo_pattern_destroy(ramp);
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        snprintf(label, sizeof label, "depth from the eye: %.1f (white) to %.1f %s (dark grey)",
                 depth_near, depth_far, units);
        text_at(cr, x + bar_w + 10, y + 15, 12, false, label);
        text_at(cr, x, y + ROW_H + 15, 12, false,
                "linear in view depth; each texel holds the far side of the occluders that wholly cover it");
    } else {
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        text_at(cr, MARGIN, y + 15, 12, false, "no texel is covered this frame: no depth range");
    }
    y = footer_key(cr, picture_w, y + 2 * ROW_H, key, keys);
    /* the buffer spans the viewport's field of view at its own resolution */
    angle_bar(cr, MARGIN + 1, y + SCALE_ROW_H / 2, shown_w, focal_pixels(view, shown_h));
    return finish(cr, surface, path, err, errlen);
}

#endif
