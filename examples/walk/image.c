#include "image.h"

#include "drive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RVW_HAVE_PNG
#include <png.h>
#endif

bool rvw_have_png(void)
{
#ifdef RVW_HAVE_PNG
    return true;
#else
    return false;
#endif
}

#ifdef RVW_HAVE_PNG
static bool write_png(const char *path, uint32_t width, uint32_t height, const uint8_t *pixels,
                      int channels, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot write %s", path);
        return false;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        snprintf(err, errlen, "libpng failed writing %s", path);
        return false;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, width, height, 8, channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++)
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * width * channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "cannot write %s", path);
        return false;
    }
    return true;
}
#else
static bool write_png(const char *path, uint32_t width, uint32_t height, const uint8_t *pixels,
                      int channels, char *err, size_t errlen)
{
    (void)width, (void)height, (void)pixels, (void)channels;
    snprintf(err, errlen, "rvis-walk was built without libpng: cannot write %s", path);
    return false;
}
#endif

bool rvw_png_write_rgb(const char *path, uint32_t width, uint32_t height, const uint8_t *rgb,
                       char *err, size_t errlen)
{
    return write_png(path, width, height, rgb, 3, err, errlen);
}

bool rvw_png_write_gray(const char *path, uint32_t width, uint32_t height, const uint8_t *gray,
                        char *err, size_t errlen)
{
    return write_png(path, width, height, gray, 1, err, errlen);
}

typedef struct canvas {
    uint8_t *rgb;
    int width, height;
    float origin[2], scale; /* world x, z of pixel (0, 0); pixels per world unit */
} canvas;

static void put(canvas *c, int x, int y, const uint8_t color[3])
{
    if (x >= 0 && y >= 0 && x < c->width && y < c->height)
        memcpy(c->rgb + ((size_t)y * c->width + x) * 3, color, 3);
}

static void fill_box(canvas *c, const rvw_box *b, int grow, const uint8_t color[3])
{
    int x0 = (int)floorf((b->min[0] - c->origin[0]) * c->scale) - grow;
    int x1 = (int)floorf((b->max[0] - c->origin[0]) * c->scale) + grow;
    int y0 = (int)floorf((b->min[2] - c->origin[1]) * c->scale) - grow;
    int y1 = (int)floorf((b->max[2] - c->origin[1]) * c->scale) + grow;
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 >= c->width) x1 = c->width - 1;
    if (y1 >= c->height) y1 = c->height - 1;
    /* a darker rim keeps neighbouring footprints apart */
    uint8_t rim[3] = { (uint8_t)(color[0] / 2), (uint8_t)(color[1] / 2), (uint8_t)(color[2] / 2) };
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
            put(c, x, y, (x == x0 || x == x1 || y == y0 || y == y1) && x1 - x0 > 3 && y1 - y0 > 3 ? rim : color);
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

/* A ray from world (x, z) along (dx, dz) until it leaves the picture. */
static void ray(canvas *c, float x, float z, float dx, float dz, const uint8_t color[3])
{
    float px = (x - c->origin[0]) * c->scale, py = (z - c->origin[1]) * c->scale;
    float len = sqrtf(dx * dx + dz * dz);
    if (len <= 0)
        return;
    dx /= len;
    dz /= len;
    for (int s = 0; s < 4 * (c->width + c->height); s++) {
        int ix = (int)floorf(px + dx * (float)s * 0.5f), iy = (int)floorf(py + dz * (float)s * 0.5f);
        if (ix < 0 || iy < 0 || ix >= c->width || iy >= c->height)
            break;
        put(c, ix, iy, color);
    }
}

enum { PASS_FRUSTUM, PASS_EXCLUDED, PASS_OCCLUDED, PASS_HIDDEN, PASS_VISIBLE, PASS_FALSE, PASSES };

static int pass_of(uint8_t verdict, bool visible, bool verified)
{
    switch (verdict) {
    case RVW_DRAWN: return (!verified || visible) ? PASS_VISIBLE : PASS_HIDDEN;
    case RVW_EXCLUDED: return PASS_EXCLUDED;
    case RVW_CULLED_OCCLUSION: return visible ? PASS_FALSE : PASS_OCCLUDED;
    default: return visible ? PASS_FALSE : PASS_FRUSTUM;
    }
}

bool rvw_image_top_down(const char *path, const rvw_level *level, const rvw_view *view,
                        const uint8_t *verdict, const uint32_t *visible_pixels, char *err,
                        size_t errlen)
{
    static const uint8_t colors[PASSES][3] = {
        { 70, 70, 70 }, { 40, 60, 200 }, { 200, 40, 40 }, { 20, 110, 20 }, { 60, 230, 60 },
        { 255, 0, 255 },
    };
    static const uint8_t white[3] = { 255, 255, 255 }, yellow[3] = { 250, 220, 40 };
    rvw_box b = level->bounds;
    rvw_box_add_point(&b, view->eye);
    float ex = b.max[0] - b.min[0], ez = b.max[2] - b.min[2];
    float longest = fmaxf(fmaxf(ex, ez), 1e-3f);
    canvas c = { .scale = 1000.0f / longest };
    c.width = (int)ceilf(ex * c.scale) + 24;
    c.height = (int)ceilf(ez * c.scale) + 24;
    c.origin[0] = b.min[0] - 12 / c.scale;
    c.origin[1] = b.min[2] - 12 / c.scale;
    c.rgb = calloc((size_t)c.width * c.height, 3);
    if (!c.rgb) {
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    /* Largest footprints first, so small things stay visible on top of floors and
     * ground; false culls last of all, drawn bigger. */
    by_area *order = malloc((level->object_count ? level->object_count : 1) * sizeof *order);
    if (!order) {
        free(c.rgb);
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_box *bb = &level->objects[i].bounds;
        order[i].area = (bb->max[0] - bb->min[0]) * (bb->max[2] - bb->min[2]);
        order[i].object = i;
    }
    qsort(order, level->object_count, sizeof *order, larger_first);
    for (int falses = 0; falses < 2; falses++) {
        for (uint32_t k = 0; k < level->object_count; k++) {
            uint32_t i = order[k].object;
            const rvw_object *o = &level->objects[i];
            bool visible = visible_pixels && visible_pixels[i] > 0;
            int pass = pass_of(verdict[i], visible, visible_pixels != NULL);
            if ((pass == PASS_FALSE) != (falses == 1))
                continue;
            /* a stand-in not drawn would cover its whole district */
            if (o->kind == RVW_OBJ_HLOD_PROXY && verdict[i] != RVW_DRAWN)
                continue;
            /* ground tiles would paint over everything: only the drawn ones, faintly */
            if (o->kind == RVW_OBJ_TERRAIN) {
                if (pass == PASS_VISIBLE || pass == PASS_HIDDEN) {
                    static const uint8_t ground[3] = { 25, 45, 25 };
                    fill_box(&c, &o->bounds, 0, ground);
                }
                continue;
            }
            fill_box(&c, &o->bounds, pass == PASS_FALSE ? 3 : 0, colors[pass]);
        }
    }
    free(order);
    float half_x = atanf(tanf(view->fov_y / 2) * (float)view->width / (float)view->height);
    float fx = view->forward[0], fz = view->forward[2];
    for (int side = -1; side <= 1; side += 2) {
        float a = half_x * (float)side, ca = cosf(a), sa = sinf(a);
        ray(&c, view->eye[0], view->eye[2], fx * ca - fz * sa, fx * sa + fz * ca, yellow);
    }
    rvw_box eye = { { view->eye[0], 0, view->eye[2] }, { view->eye[0], 0, view->eye[2] } };
    fill_box(&c, &eye, 3, white);
    bool ok = rvw_png_write_rgb(path, (uint32_t)c.width, (uint32_t)c.height, c.rgb, err, errlen);
    free(c.rgb);
    return ok;
}

bool rvw_image_reference(const char *path, const rvw_reference *ref, char *err, size_t errlen)
{
    uint8_t *rgb = malloc((size_t)ref->width * ref->height * 3);
    if (!rgb) {
        snprintf(err, errlen, "out of memory drawing %s", path);
        return false;
    }
    for (uint32_t y = 0; y < ref->height; y++) {
        const uint32_t *ids = ref->ids + (size_t)(ref->height - 1 - y) * ref->width; /* y up */
        uint8_t *row = rgb + (size_t)y * ref->width * 3;
        for (uint32_t x = 0; x < ref->width; x++) {
            uint32_t h = ids[x] * 2654435761u;
            for (int k = 0; k < 3; k++)
                row[x * 3 + k] = ids[x] ? (uint8_t)(64 + ((h >> (8 * k + 8)) & 0xBF)) : 0;
        }
    }
    bool ok = rvw_png_write_rgb(path, ref->width, ref->height, rgb, err, errlen);
    free(rgb);
    return ok;
}
