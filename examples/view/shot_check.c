/* rvis-view-shot-check: does a screenshot show a scene, not only the overlay on a blank
 * frame? Reads the PNG with cairo and looks at the rows below the overlay panel (the lower
 * part of the image, from --from of its height): the share of pixels that differ from the
 * clear colour, and the number of distinct colours there. Exit 0 when both reach their
 * minimum, 1 when not (with the figures), 2 when the file cannot be read. */
#include <cairo.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rvis-view's clear colour (render.c's sky) in 8 bits */
static const int background[3] = { 133, 168, 209 };

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: rvis-view-shot-check FILE.png FROM MIN_SCENE_SHARE MIN_COLOURS\n"
                        "  FROM: the first row examined, as a fraction of the height (below the overlay)\n");
        return 2;
    }
    double from = atof(argv[2]), min_share = atof(argv[3]);
    long min_colours = atol(argv[4]);
    cairo_surface_t *s = cairo_image_surface_create_from_png(argv[1]);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        fprintf(stderr, "rvis-view-shot-check: cannot read %s: %s\n", argv[1],
                cairo_status_to_string(cairo_surface_status(s)));
        cairo_surface_destroy(s);
        return 2;
    }
    cairo_surface_flush(s);
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    int stride = cairo_image_surface_get_stride(s);
    const uint8_t *data = cairo_image_surface_get_data(s);
    uint8_t *seen = calloc(1u << 21, 1); /* one bit per 24-bit colour */
    if (!seen) {
        cairo_surface_destroy(s);
        return 2;
    }
    int y0 = (int)(from * h);
    if (y0 < 0)
        y0 = 0;
    uint64_t total = 0, scene = 0;
    long colours = 0;
    for (int y = y0; y < h; y++) {
        const uint32_t *row = (const uint32_t *)(data + (size_t)y * stride);
        for (int x = 0; x < w; x++) {
            uint32_t p = row[x] & 0xFFFFFFu; /* cairo's pixels are native-endian 0xAARRGGBB */
            int c[3] = { (int)(p >> 16), (int)(p >> 8 & 255), (int)(p & 255) };
            bool differs = false;
            for (int k = 0; k < 3; k++)
                differs |= abs(c[k] - background[k]) > 6;
            scene += differs;
            total++;
            if (!(seen[p >> 3] & (1u << (p & 7)))) {
                seen[p >> 3] |= (uint8_t)(1u << (p & 7));
                colours++;
            }
        }
    }
    free(seen);
    cairo_surface_destroy(s);
    double share = total ? (double)scene / (double)total : 0;
    bool ok = share >= min_share && colours >= min_colours;
    printf("%s: %dx%d, rows %d..%d: %.1f %% scene pixels (at least %.1f %%), %ld colours (at least %ld): %s\n",
           argv[1], w, h, y0, h - 1, 100 * share, 100 * min_share, colours, min_colours, ok ? "a scene" : "NO SCENE");
    return ok ? 0 : 1;
}
