/* The truth oracle (see reference.h). Written for obviousness first: doubles throughout,
 * pixel coverage decided by the three edge functions evaluated at the pixel centre, no fill
 * rule, no incremental stepping whose rounding could drift. The only shortcuts are exact
 * ones: an object whose box lies wholly outside one clip plane is skipped, and since a row
 * of a convex triangle is one run of pixels, only the run's two ends are found by the
 * per-pixel test (walking from an analytic guess) and the pixels between them are filled. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct clip_vertex {
    double x, y, z, w;
} clip_vertex;

typedef struct screen_vertex {
    double x, y, inv_w, z; /* z: NDC depth, z / w (affine in screen space, like 1 / w) */
} screen_vertex;

bool rvw_reference_init(rvw_reference *ref, uint32_t width, uint32_t height)
{
    memset(ref, 0, sizeof *ref);
    if (width == 0 || height == 0 || width > 16384 || height > 16384)
        return false;
    size_t n = (size_t)width * height;
    ref->inv_w = malloc(n * sizeof *ref->inv_w);
    ref->ids = malloc(n * sizeof *ref->ids);
    if (!ref->inv_w || !ref->ids) {
        rvw_reference_free(ref);
        return false;
    }
    ref->width = width;
    ref->height = height;
    return true;
}

void rvw_reference_free(rvw_reference *ref)
{
    free(ref->inv_w);
    free(ref->ids);
    free(ref->pixels);
    free(ref->occluder_inv_w);
    free(ref->cover_stamp);
    memset(ref, 0, sizeof *ref);
}

static clip_vertex transform(const float m[16], const float p[3])
{
    clip_vertex c;
    c.x = (double)m[0] * p[0] + (double)m[4] * p[1] + (double)m[8] * p[2] + m[12];
    c.y = (double)m[1] * p[0] + (double)m[5] * p[1] + (double)m[9] * p[2] + m[13];
    c.z = (double)m[2] * p[0] + (double)m[6] * p[1] + (double)m[10] * p[2] + m[14];
    c.w = (double)m[3] * p[0] + (double)m[7] * p[1] + (double)m[11] * p[2] + m[15];
    return c;
}

/* Signed distances of a clip-space point to the planes a fragment must lie inside:
 * near, far, and a tiny positive w so the divide is safe. With OpenGL depth both depth
 * planes are |z| <= w whichever way the depth runs; with 0..1 depth they are 0 <= z <= w. */
enum { PLANE_COUNT = 3 };
static double plane_distance(const clip_vertex *v, int plane, rvw_depth_convention clip)
{
    switch (plane) {
    case 0: return clip.depth_zero_to_one ? v->z : v->z + v->w;
    case 1: return v->w - v->z;
    default: return v->w - 1e-9;
    }
}

/* Sutherland–Hodgman against the planes above; in holds n vertices, returns the count. */
static int clip_polygon(clip_vertex *poly, int n, rvw_depth_convention clip)
{
    clip_vertex tmp[16];
    for (int plane = 0; plane < PLANE_COUNT && n > 0; plane++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            const clip_vertex *a = &poly[i], *b = &poly[(i + 1) % n];
            double da = plane_distance(a, plane, clip), db = plane_distance(b, plane, clip);
            if (da >= 0)
                tmp[m++] = *a;
            if ((da >= 0) != (db >= 0)) {
                double t = da / (da - db);
                tmp[m].x = a->x + (b->x - a->x) * t;
                tmp[m].y = a->y + (b->y - a->y) * t;
                tmp[m].z = a->z + (b->z - a->z) * t;
                tmp[m].w = a->w + (b->w - a->w) * t;
                m++;
            }
        }
        memcpy(poly, tmp, (size_t)m * sizeof *poly);
        n = m;
    }
    return n;
}

/* Edge function of edge a->b at p: positive on the left of a->b. */
static double edge(const screen_vertex *a, const screen_vertex *b, double px, double py)
{
    return (b->x - a->x) * (py - a->y) - (b->y - a->y) * (px - a->x);
}

/* Where edge a->b crosses a row, to guess the row's run of pixels: x = a.x + slope * (py - a.y). */
typedef struct edge_guess {
    double ax, ay, dx, slope;
    int side; /* +1: the inside is left of the crossing (px <= x), -1: right, 0: horizontal */
} edge_guess;

static edge_guess guess_of(const screen_vertex *a, const screen_vertex *b)
{
    edge_guess g = { a->x, a->y, b->x - a->x, 0, 0 };
    double dy = b->y - a->y;
    if (dy == 0)
        return g;
    g.slope = (b->x - a->x) / dy;
    g.side = dy > 0 ? 1 : -1;
    return g;
}

/* Narrows [*lo, *hi] (pixel columns) to where the edge can be >= 0 on row centre py,
 * keeping one pixel of slack; the exact test at the ends decides. */
static void narrow_span(const edge_guess *g, double py, int *lo, int *hi)
{
    if (g->side == 0) { /* E = dx * (py - a.y), the same for the whole row */
        if (g->dx * (py - g->ay) < 0)
            *hi = *lo - 1;
        return;
    }
    double x = g->ax + g->slope * (py - g->ay);
    if (g->side > 0) {
        double i = floor(x - 0.5) + 1;
        if (i < *hi)
            *hi = i < *lo ? *lo - 1 : (int)i; /* also catches -inf: an empty span */
    } else {
        double i = ceil(x - 0.5) - 1;
        if (i > *lo)
            *lo = i > *hi ? *hi + 1 : (int)i;
    }
}

static bool covers(const screen_vertex *v0, const screen_vertex *v1, const screen_vertex *v2,
                   double px, double py)
{
    return edge(v1, v2, px, py) >= 0 && edge(v2, v0, px, py) >= 0 && edge(v0, v1, px, py) >= 0;
}

/* What a rasterised pixel does. */
typedef enum raster_mode {
    RASTER_ID,        /* nearest 1/w wins ref->inv_w and ref->ids */
    RASTER_OCCLUDER,  /* ref->occluder_inv_w keeps the nearest occluder 1/w (doubles) */
    RASTER_TEST,      /* stop at the first pixel not behind ref->occluder_inv_w */
    RASTER_COVER,     /* stamp the pixels of object `id` this fragment lies in front of */
    RASTER_DEPTH,     /* nearest 1/w (doubles, ref->occluder_inv_w) writes its window depth
                         into ref->depth_target */
} raster_mode;

/* An object fragment at 1/w v is hidden by an occluder fragment at 1/w o only when the
 * occluder is nearer by more than rounding: the object and the occluder are two different
 * triangle sets (a wall's drawn face lies in its brush's side plane), so a tie is a tie. */
static bool behind_occluder(double v, double o)
{
    return o > v * (1.0 + 1e-6) + 1e-12;
}

/* Returns true in RASTER_TEST mode when a pixel of the triangle is not hidden. */
static bool raster_triangle(rvw_reference *ref, screen_vertex v0, screen_vertex v1,
                            screen_vertex v2, uint32_t id, raster_mode mode)
{
    double area = edge(&v0, &v1, v2.x, v2.y);
    if (area == 0 || !isfinite(area))
        return false;
    if (area < 0) { /* both sides are drawn: make it counter-clockwise */
        screen_vertex t = v1;
        v1 = v2;
        v2 = t;
        area = -area;
    }
    double minx = fmin(v0.x, fmin(v1.x, v2.x)), maxx = fmax(v0.x, fmax(v1.x, v2.x));
    double miny = fmin(v0.y, fmin(v1.y, v2.y)), maxy = fmax(v0.y, fmax(v1.y, v2.y));
    /* pixel i has its centre at i + 0.5 */
    double fx0 = fmax(0, ceil(minx - 0.5)), fx1 = fmin((double)ref->width - 1, floor(maxx - 0.5));
    double fy0 = fmax(0, ceil(miny - 0.5)), fy1 = fmin((double)ref->height - 1, floor(maxy - 0.5));
    if (fx0 > fx1 || fy0 > fy1)
        return false;
    if (mode == RASTER_ID)
        ref->triangles_drawn++;
    /* 1/w is affine in screen space: its plane through the three vertices */
    double x1 = v1.x - v0.x, y1 = v1.y - v0.y, x2 = v2.x - v0.x, y2 = v2.y - v0.y;
    double d1 = v1.inv_w - v0.inv_w, d2 = v2.inv_w - v0.inv_w;
    double gx = (d1 * y2 - d2 * y1) / area, gy = (d2 * x1 - d1 * x2) / area;
    double z1 = v1.z - v0.z, z2 = v2.z - v0.z; /* NDC depth's plane, for RASTER_DEPTH */
    double zx = (z1 * y2 - z2 * y1) / area, zy = (z2 * x1 - z1 * x2) / area;
    int bx0 = (int)fx0, bx1 = (int)fx1;
    edge_guess guesses[3] = { guess_of(&v0, &v1), guess_of(&v1, &v2), guess_of(&v2, &v0) };
    for (int y = (int)fy0; y <= (int)fy1; y++) {
        double py = y + 0.5;
        /* A row of a convex triangle is one run of pixels: find its two ends with the exact
         * test (starting from an analytic guess), and everything between is covered. */
        int lo = bx0, hi = bx1;
        for (int e = 0; e < 3; e++)
            narrow_span(&guesses[e], py, &lo, &hi);
        if (lo < bx0)
            lo = bx0;
        if (hi > bx1)
            hi = bx1;
        while (lo <= hi && !covers(&v0, &v1, &v2, lo + 0.5, py))
            lo++;
        if (lo > hi)
            continue;
        while (!covers(&v0, &v1, &v2, hi + 0.5, py))
            hi--;
        while (lo > bx0 && covers(&v0, &v1, &v2, lo - 0.5, py))
            lo--;
        while (hi < bx1 && covers(&v0, &v1, &v2, hi + 1.5, py))
            hi++;
        size_t row = (size_t)y * ref->width;
        double row_inv_w = v0.inv_w + (py - v0.y) * gy - v0.x * gx;
        double row_z = v0.z + (py - v0.y) * zy - v0.x * zx;
        for (int x = lo; x <= hi; x++) {
            double exact = row_inv_w + (x + 0.5) * gx;
            if (mode == RASTER_DEPTH) {
                if (exact > ref->occluder_inv_w[row + x]) {
                    double z = row_z + (x + 0.5) * zx;
                    ref->occluder_inv_w[row + x] = exact;
                    ref->depth_target[row + x] = (float)(ref->depth_zero_to_one ? z : 0.5 * z + 0.5);
                }
                continue;
            }
            if (mode == RASTER_OCCLUDER) {
                if (exact > ref->occluder_inv_w[row + x])
                    ref->occluder_inv_w[row + x] = exact;
                continue;
            }
            if (mode == RASTER_TEST) {
                if (!behind_occluder(exact, ref->occluder_inv_w[row + x]))
                    return true;
                continue;
            }
            if (mode == RASTER_COVER) {
                if (ref->ids[row + x] == id && behind_occluder(ref->inv_w[row + x], exact))
                    ref->cover_stamp[row + x] = ref->cover_calls;
                continue;
            }
            float inv_w = (float)exact;
            if (inv_w > ref->inv_w[row + x]) {
                ref->inv_w[row + x] = inv_w;
                ref->ids[row + x] = id;
            }
        }
    }
    return false;
}

static bool box_outside_one_plane(const rvw_box *b, const float m[16], rvw_depth_convention clip)
{
    clip_vertex c[8];
    for (int k = 0; k < 8; k++) {
        float p[3] = { (k & 1) ? b->max[0] : b->min[0], (k & 2) ? b->max[1] : b->min[1],
                       (k & 4) ? b->max[2] : b->min[2] };
        c[k] = transform(m, p);
    }
    /* x >= -w, x <= w, y >= -w, y <= w, then the depth planes */
    for (int plane = 0; plane < 4 + PLANE_COUNT; plane++) {
        int outside = 0;
        for (int k = 0; k < 8; k++) {
            double d;
            switch (plane) {
            case 0: d = c[k].x + c[k].w; break;
            case 1: d = c[k].w - c[k].x; break;
            case 2: d = c[k].y + c[k].w; break;
            case 3: d = c[k].w - c[k].y; break;
            default: d = plane_distance(&c[k], plane - 4, clip); break;
            }
            outside += d < 0;
        }
        if (outside == 8)
            return true;
    }
    return false;
}

/* Clips one world triangle and rasterises it in mode; true when RASTER_TEST found a pixel. */
static bool draw_triangle(rvw_reference *ref, const float *t, const float view_projection[16],
                          rvw_depth_convention clip, uint32_t id, raster_mode mode)
{
    const double half_w = ref->width * 0.5, half_h = ref->height * 0.5;
    clip_vertex poly[16] = { transform(view_projection, t), transform(view_projection, t + 3),
                             transform(view_projection, t + 6) };
    int count = clip_polygon(poly, 3, clip);
    screen_vertex s[16];
    for (int j = 0; j < count; j++) {
        double inv_w = 1.0 / poly[j].w;
        s[j].x = (poly[j].x * inv_w + 1.0) * half_w;
        s[j].y = (poly[j].y * inv_w + 1.0) * half_h;
        s[j].inv_w = inv_w;
        s[j].z = poly[j].z * inv_w;
    }
    for (int j = 1; j + 1 < count; j++)
        if (raster_triangle(ref, s[0], s[j], s[j + 1], id, mode))
            return true;
    return false;
}

bool rvw_reference_box_in_view(const rvw_box *box, const float view_projection[16], rvw_depth_convention clip)
{
    return !box_outside_one_plane(box, view_projection, clip);
}

int64_t rvw_reference_render(rvw_reference *ref, const rvw_level *level,
                             const float view_projection[16], rvw_depth_convention clip,
                             const uint8_t *include)
{
    if (ref->object_capacity < level->object_count) {
        uint32_t *fresh = realloc(ref->pixels, (size_t)level->object_count * sizeof *fresh);
        if (!fresh)
            return -1;
        ref->pixels = fresh;
        ref->object_capacity = level->object_count;
    }
    size_t n = (size_t)ref->width * ref->height;
    memset(ref->inv_w, 0, n * sizeof *ref->inv_w);
    memset(ref->ids, 0, n * sizeof *ref->ids);
    ref->triangles_drawn = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        if ((include && !include[i]) || box_outside_one_plane(&o->bounds, view_projection, clip))
            continue;
        const float *t = level->triangles + (size_t)o->first_triangle * 9;
        for (uint32_t k = 0; k < o->triangle_count; k++, t += 9)
            draw_triangle(ref, t, view_projection, clip, i + 1, RASTER_ID);
    }
    memset(ref->pixels, 0, (size_t)level->object_count * sizeof *ref->pixels);
    for (size_t p = 0; p < n; p++)
        if (ref->ids[p])
            ref->pixels[ref->ids[p] - 1]++;
    int64_t visible = 0;
    for (uint32_t i = 0; i < level->object_count; i++)
        visible += ref->pixels[i] > 0;
    return visible;
}

int64_t rvw_reference_depth(rvw_reference *ref, const rvw_level *level, const float view_projection[16],
                            rvw_depth_convention clip, const uint8_t *include, float *depth)
{
    size_t n = (size_t)ref->width * ref->height;
    if (!ref->occluder_inv_w && !(ref->occluder_inv_w = malloc(n * sizeof *ref->occluder_inv_w)))
        return -1;
    float clear = clip.reversed_z ? 0.0f : 1.0f;
    for (size_t p = 0; p < n; p++) {
        ref->occluder_inv_w[p] = 0;
        depth[p] = clear;
    }
    ref->depth_target = depth;
    ref->depth_zero_to_one = clip.depth_zero_to_one;
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        if ((include && !include[i]) || box_outside_one_plane(&o->bounds, view_projection, clip))
            continue;
        const float *t = level->triangles + (size_t)o->first_triangle * 9;
        for (uint32_t k = 0; k < o->triangle_count; k++, t += 9)
            draw_triangle(ref, t, view_projection, clip, i + 1, RASTER_DEPTH);
    }
    ref->depth_target = NULL;
    int64_t covered = 0;
    for (size_t p = 0; p < n; p++)
        covered += ref->occluder_inv_w[p] > 0;
    return covered;
}

bool rvw_reference_occluders_clear(rvw_reference *ref)
{
    size_t n = (size_t)ref->width * ref->height;
    if (!ref->occluder_inv_w && !(ref->occluder_inv_w = malloc(n * sizeof *ref->occluder_inv_w)))
        return false;
    for (size_t p = 0; p < n; p++)
        ref->occluder_inv_w[p] = 0;
    return true;
}

void rvw_reference_occluders_draw(rvw_reference *ref, const float view_projection[16], rvw_depth_convention clip,
                                  const float *triangles, uint32_t triangle_count)
{
    for (uint32_t k = 0; k < triangle_count; k++)
        draw_triangle(ref, triangles + (size_t)k * 9, view_projection, clip, 0, RASTER_OCCLUDER);
}

int64_t rvw_reference_ideal_count(rvw_reference *ref, const rvw_level *level, const float view_projection[16],
                                  rvw_depth_convention clip, const uint8_t *include, bool boxes, uint8_t *visible)
{
    if (!ref->occluder_inv_w)
        return -1;
    int64_t count = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        bool seen = false;
        if ((!include || include[i]) && !box_outside_one_plane(&o->bounds, view_projection, clip)) {
            if (boxes) {
                float t[108];
                rvw_object_box_triangles(o, t);
                for (int f = 0; f < 12 && !seen; f++)
                    seen = draw_triangle(ref, t + f * 9, view_projection, clip, i + 1, RASTER_TEST);
            } else {
                const float *t = level->triangles + (size_t)o->first_triangle * 9;
                for (uint32_t k = 0; k < o->triangle_count && !seen; k++, t += 9)
                    seen = draw_triangle(ref, t, view_projection, clip, i + 1, RASTER_TEST);
            }
        }
        if (visible)
            visible[i] = seen;
        count += seen;
    }
    return count;
}

int64_t rvw_reference_ideal_occluders(rvw_reference *ref, const rvw_level *level,
                                      const float view_projection[16], rvw_depth_convention clip,
                                      const uint8_t *include, const rvw_box *occluders,
                                      uint32_t occluder_count, bool boxes, uint8_t *visible)
{
    if (!rvw_reference_occluders_clear(ref))
        return -1;
    for (uint32_t k = 0; k < occluder_count; k++) {
        if (box_outside_one_plane(&occluders[k], view_projection, clip))
            continue;
        float t[108];
        rvw_box_triangles(&occluders[k], t);
        rvw_reference_occluders_draw(ref, view_projection, clip, t, 12);
    }
    return rvw_reference_ideal_count(ref, level, view_projection, clip, include, boxes, visible);
}

int64_t rvw_reference_cover(rvw_reference *ref, const float view_projection[16], rvw_depth_convention clip,
                            uint32_t object, const float *triangles, uint32_t triangle_count)
{
    size_t n = (size_t)ref->width * ref->height;
    if (!ref->cover_stamp && !(ref->cover_stamp = calloc(n, sizeof *ref->cover_stamp)))
        return -1;
    if (++ref->cover_calls == 0) { /* the stamps wrapped: start them afresh */
        memset(ref->cover_stamp, 0, n * sizeof *ref->cover_stamp);
        ref->cover_calls = 1;
    }
    for (uint32_t k = 0; k < triangle_count; k++)
        draw_triangle(ref, triangles + (size_t)k * 9, view_projection, clip, object + 1, RASTER_COVER);
    int64_t count = 0;
    for (size_t p = 0; p < n; p++)
        count += ref->cover_stamp[p] == ref->cover_calls;
    return count;
}

uint32_t rvw_reference_covered_by_ideal(const rvw_reference *ref, uint32_t object)
{
    if (!ref->occluder_inv_w)
        return 0;
    uint32_t count = 0;
    for (size_t p = 0; p < (size_t)ref->width * ref->height; p++)
        count += ref->ids[p] == object + 1 && behind_occluder(ref->inv_w[p], ref->occluder_inv_w[p]);
    return count;
}
