/* The occlusion buffer's depth feed (docs/occlusion.md, "The depth feed"): a property test
 * against a slow, obviously-correct reference (it renders the old frame's depth itself, a
 * ray per pixel centre against the scene's boxes, and judges the new view by casting rays
 * to sample points of each object against the same boxes), camera jumps, sky, every clip
 * convention and depth format, a wall that must hide, bad input, allocation and the frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "occlusion.h"
#include "occlusion_feed.h"
#include "support/occlusion_ref.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cameras (double, handed over as float like a host would) ----------------------------- */

/* A camera by yaw and pitch, which the feed's small turns and strafes are made of (the
 * shared reference, support/occlusion_ref.h, gives the boxes, rays and views). */
typedef struct feed_camera {
    double eye[3];
    double yaw, pitch;        /* forward = (sin yaw cos pitch, sin pitch, -cos yaw cos pitch) */
    double fov_y, aspect, znear, zfar; /* zfar <= 0: infinite */
    double ortho_height;      /* > 0: orthographic */
    rv_clip clip;
} feed_camera;

static void forward_of(const feed_camera *c, double f[3])
{
    f[0] = sin(c->yaw) * cos(c->pitch);
    f[1] = sin(c->pitch);
    f[2] = -cos(c->yaw) * cos(c->pitch);
}

/* Column-major view-projection of the camera in its depth convention: the shared look-at
 * camera's (support/occlusion_ref.h) along its forward direction, +Y up. */
static void feed_camera_matrix(const feed_camera *c, float out[16])
{
    double f[3];
    forward_of(c, f);
    camera look_at = { { c->eye[0], c->eye[1], c->eye[2] },
                       { c->eye[0] + f[0], c->eye[1] + f[1], c->eye[2] + f[2] },
                       { 0, 1, 0 },
                       c->fov_y,
                       c->aspect,
                       c->znear,
                       c->zfar,
                       c->ortho_height,
                       c->clip,
                       { 0, 0 },
                       0,
                       0 };
    camera_matrix(&look_at, out);
}

static double near_ndc(rv_clip c)
{
    return c.reversed_z ? 1 : c.depth_zero_to_one ? 0 : -1;
}

static double far_ndc(rv_clip c)
{
    return c.reversed_z ? (c.depth_zero_to_one ? 0 : -1) : 1;
}

/* ---- the reference: boxes, rays ------------------------------------------------------------ */

static void clip_of(const ref_view *v, const double p[3], double c[4])
{
    for (int r = 0; r < 4; r++)
        c[r] = v->vp[r] * p[0] + v->vp[4 + r] * p[1] + v->vp[8 + r] * p[2] + v->vp[12 + r];
}

static void unproject(const ref_view *v, double x, double y, double z, double out[3])
{
    double c[4] = { x, y, z, 1 }, h[4];
    for (int r = 0; r < 4; r++)
        h[r] = v->inv[r] * c[0] + v->inv[4 + r] * c[1] + v->inv[8 + r] * c[2] + v->inv[12 + r];
    for (int i = 0; i < 3; i++)
        out[i] = h[i] / h[3];
}

/* ---- the reference's depth image ------------------------------------------------------------ */

/* The old frame's depth as a GPU would write it: at each pixel centre (row 0 = NDC y +1),
 * the window depth of the first box surface beyond the near plane, or NAN (sky) where the
 * ray meets nothing before the far plane. */
static void render_depth(const ref_view *v, const ref_box *box, int n_box, uint32_t w, uint32_t h, double *out)
{
    double zn = near_ndc(v->clip), zf = far_ndc(v->clip), zm = 0.5 * (zn + zf);
    bool zo = v->clip.depth_zero_to_one;
    for (uint32_t j = 0; j < h; j++)
        for (uint32_t i = 0; i < w; i++) {
            double x = 2.0 * (i + 0.5) / w - 1.0, y = 1.0 - 2.0 * (j + 0.5) / h;
            double a[3], b[3];
            unproject(v, x, y, zn, a);
            unproject(v, x, y, zm, b);
            double best = INFINITY;
            for (int k = 0; k < n_box; k++) {
                double ta, tb;
                if (!ref_box_slab(&box[k], a, b, &ta, &tb))
                    continue;
                double t = ta >= 0 ? ta : tb;
                if (t >= 0 && t < best)
                    best = t;
            }
            double depth = NAN;
            if (best < INFINITY) {
                double p[3] = { a[0] + best * (b[0] - a[0]), a[1] + best * (b[1] - a[1]), a[2] + best * (b[2] - a[2]) };
                double c[4];
                clip_of(v, p, c);
                double z = c[2] / c[3], win = zo ? z : 0.5 * (z + 1.0);
                if (win >= 0 && win <= 1)
                    depth = win;
            }
            out[(size_t)j * w + i] = depth;
        }
}

typedef struct feed_image {
    uint32_t buf[320 * 200 + 64];
    rv_depth_feed feed;
} feed_image;

static size_t texel_bytes(rv_depth_format f)
{
    return f == RV_DEPTH_UNORM16 ? 2 : 4;
}

/* Encodes window depths (NAN = sky) in a format, rows in either order, with a padded pitch
 * and random stencil bits where the format has them. */
static void encode_feed(const double *depth, uint32_t w, uint32_t h, rv_depth_format f, bool bottom_up,
                        uint32_t pad_texels, rv_clip clip, uint64_t *seed, feed_image *img)
{
    size_t ts = texel_bytes(f), pitch = (w + pad_texels) * ts;
    assert_true(pitch * h <= sizeof img->buf);
    uint8_t *base = (uint8_t *)img->buf;
    double sky = clip.reversed_z ? 0.0 : 1.0;
    for (uint32_t j = 0; j < h; j++) {
        uint8_t *row = base + (size_t)(bottom_up ? h - 1 - j : j) * pitch;
        for (uint32_t i = 0; i < w; i++) {
            double v = depth[(size_t)j * w + i];
            if (v != v)
                v = sky;
            uint32_t stencil = (uint32_t)(rvt_next(seed) & 0xFF);
            if (f == RV_DEPTH_FLOAT32) {
                float x = (float)v;
                memcpy(row + 4 * i, &x, 4);
            } else if (f == RV_DEPTH_UNORM16) {
                uint16_t x = (uint16_t)lround(v * 65535.0);
                memcpy(row + 2 * i, &x, 2);
            } else {
                uint32_t d = (uint32_t)lround(v * 16777215.0);
                uint32_t x = f == RV_DEPTH_UNORM24 ? d | stencil << 24 : d << 8 | stencil;
                memcpy(row + 4 * i, &x, 4);
            }
        }
    }
    memset(&img->feed, 0, sizeof img->feed);
    img->feed.texels = img->buf;
    img->feed.width = w;
    img->feed.height = h;
    img->feed.row_pitch = pitch;
    img->feed.format = f;
    img->feed.rows_bottom_up = bottom_up;
    img->feed.clip = clip;
    img->feed.age = 1;
}

/* ---- scenes and camera moves ------------------------------------------------------------------ */

#define MAX_BOX 16

enum { KIND_BOXES, KIND_ROOM, KIND_EDGE, KIND_COUNT };

typedef struct fscene {
    int kind;
    feed_camera old_cam, new_cam;
    float old_vp[16], new_vp[16];
    ref_view old_rv, new_rv;
    ref_box box[MAX_BOX];
    int n_box;
    uint32_t feed_w, feed_h;
} fscene;

/* An axis-aligned box from its corners (walls of rooms and edges). */
static void aabb(ref_box *b, double x0, double y0, double z0, double x1, double y1, double z1)
{
    memset(b, 0, sizeof *b);
    b->min[0] = (float)x0;
    b->min[1] = (float)y0;
    b->min[2] = (float)z0;
    b->max[0] = (float)x1;
    b->max[1] = (float)y1;
    b->max[2] = (float)z1;
    ref_box_init(b);
}

static void random_feed_camera(uint64_t *s, feed_camera *c)
{
    memset(c, 0, sizeof *c);
    c->eye[0] = rvt_uniform(s, -20, 20);
    c->eye[1] = rvt_uniform(s, 0.5f, 8);
    c->eye[2] = rvt_uniform(s, -20, 20);
    c->yaw = rvt_uniform(s, -3.14159f, 3.14159f);
    c->pitch = rvt_uniform(s, -0.3f, 0.2f);
    c->fov_y = rvt_uniform(s, 40, 90) * PI / 180;
    c->aspect = rvt_uniform(s, 1.0f, 2.2f);
    c->znear = rvt_uniform(s, 0.05f, 0.5f);
    c->zfar = rvt_uniform(s, 0, 1) < 0.2f ? 0 : rvt_uniform(s, 200, 2000);
    c->ortho_height = rvt_uniform(s, 0, 1) < 0.08f ? rvt_uniform(s, 8, 30) : 0;
    c->clip = ref_conventions[rvt_next(s) % 4];
}

/* A point ahead of the camera: d along the forward axis, a and b across it (scaled by the
 * view's half extent at that distance). */
static void ahead(const feed_camera *c, double d, double a, double b, double out[3])
{
    double f[3], up[3] = { 0, 1, 0 }, side[3], top[3];
    forward_of(c, f);
    cross3(f, up, side);
    normalize3(side);
    cross3(side, f, top);
    double spread = c->ortho_height > 0 ? c->ortho_height / 2 : d * tan(c->fov_y / 2);
    for (int i = 0; i < 3; i++)
        out[i] = c->eye[i] + d * f[i] + a * spread * c->aspect * side[i] + b * spread * top[i];
}

static void scene_boxes(uint64_t *s, fscene *sc)
{
    const feed_camera *c = &sc->old_cam;
    sc->n_box = 3 + (int)(rvt_next(s) % 8);
    for (int k = 0; k < sc->n_box; k++) {
        double centre[3], h[3];
        ahead(c, rvt_uniform(s, 2, 35), rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1), centre);
        for (int i = 0; i < 3; i++)
            h[i] = rvt_uniform(s, 0.1f, 5);
        if (rvt_uniform(s, 0, 1) < 0.1f)
            h[rvt_next(s) % 3] = 0; /* a flat wall quad */
        place_box(s, &sc->box[k], centre, h, rvt_uniform(s, 0, 1) < 0.4f);
    }
    if (rvt_uniform(s, 0, 1) < 0.5f && sc->n_box < MAX_BOX)
        aabb(&sc->box[sc->n_box++], c->eye[0] - 80, -1, c->eye[2] - 80, c->eye[0] + 80, 0, c->eye[2] + 80);
}

/* A room ahead (four walls, floor, perhaps a ceiling) whose front wall has a doorway; the
 * old camera sees the wall, the new one will look through the door. *door gets the
 * doorway's centre. */
static void scene_room(uint64_t *s, fscene *sc, double door[3])
{
    const feed_camera *c = &sc->old_cam;
    double centre[3];
    ahead(c, rvt_uniform(s, 7, 20), rvt_uniform(s, -0.3f, 0.3f), 0, centre);
    double hx = rvt_uniform(s, 2, 4), hz = rvt_uniform(s, 2, 4), t = rvt_uniform(s, 0.1f, 0.3f);
    double y0 = c->eye[1] - rvt_uniform(s, 1.0f, 2.0f), y1 = y0 + 3;
    double x0 = centre[0] - hx, x1 = centre[0] + hx, z0 = centre[2] - hz, z1 = centre[2] + hz;
    /* The front wall faces the camera (the side of the room nearer the eye along z). */
    bool front_is_z1 = c->eye[2] > centre[2];
    double fz = front_is_z1 ? z1 : z0, dw = rvt_uniform(s, 0.9f, 2.0f), dh = rvt_uniform(s, 2.0f, 2.6f);
    double dc = centre[0] + rvt_uniform(s, -0.5f, 0.5f) * (hx - dw);
    int n = 0;
    aabb(&sc->box[n++], x0 - 20, y0 - 1, z0 - 20, x1 + 20, y0, z1 + 20);               /* ground */
    aabb(&sc->box[n++], x0, y0, front_is_z1 ? z0 : z1 - t, x1, y1, front_is_z1 ? z0 + t : z1); /* back */
    aabb(&sc->box[n++], x0, y0, z0, x0 + t, y1, z1);                                  /* left */
    aabb(&sc->box[n++], x1 - t, y0, z0, x1, y1, z1);                                  /* right */
    double f0 = front_is_z1 ? fz - t : fz, f1 = front_is_z1 ? fz : fz + t;
    aabb(&sc->box[n++], x0, y0, f0, dc - dw / 2, y1, f1);                             /* front, left of the door */
    aabb(&sc->box[n++], dc + dw / 2, y0, f0, x1, y1, f1);                             /* right of it */
    aabb(&sc->box[n++], dc - dw / 2, y0 + dh, f0, dc + dw / 2, y1, f1);               /* lintel */
    if (rvt_uniform(s, 0, 1) < 0.5f)
        aabb(&sc->box[n++], x0, y1, z0, x1, y1 + t, z1);                              /* ceiling */
    sc->n_box = n;
    door[0] = dc;
    door[1] = y0 + dh / 2;
    door[2] = fz;
}

/* A near wall whose vertical edge is near the middle of the view and a far wall behind it at
 * a random depth gap: the silhouette the new camera peeks around. */
static void scene_edge(uint64_t *s, fscene *sc)
{
    const feed_camera *c = &sc->old_cam;
    double d = rvt_uniform(s, 3, 25), gap = d * exp(rvt_uniform(s, (float)log(0.008), (float)log(0.5)));
    double f[3];
    forward_of(c, f);
    double p[3];
    ahead(c, d, rvt_uniform(s, -0.3f, 0.3f), 0, p);
    /* Walls facing the camera along the axis its forward mostly runs on. */
    int ax = fabs(f[0]) > fabs(f[2]) ? 0 : 2, across = 2 - ax;
    double toward = f[ax] > 0 ? -1 : 1, side = rvt_uniform(s, 0, 1) < 0.5f ? -1 : 1, thick = rvt_uniform(s, 0.05f, 1);
    double lo[3], hi[3];
    int n = 0;
    for (int w = 0; w < 2; w++) {
        double face = p[ax] + (w ? -toward * gap : 0); /* the wall's face toward the camera */
        lo[1] = p[1] - 4;
        hi[1] = p[1] + 4;
        lo[ax] = toward > 0 ? face - thick : face;
        hi[ax] = toward > 0 ? face : face + thick;
        if (w == 0) { /* the near wall ends at the edge */
            lo[across] = side > 0 ? p[across] - 15 : p[across];
            hi[across] = side > 0 ? p[across] : p[across] + 15;
        } else {
            lo[across] = p[across] - 15;
            hi[across] = p[across] + 15;
        }
        aabb(&sc->box[n++], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    }
    sc->n_box = n;
}

/* The camera of the frame that uses the feed: a small turn, a strafe, or both, inside the
 * default jump thresholds (2 world units, 0.5 radians). */
static void move_camera(uint64_t *s, const feed_camera *old, feed_camera *now, const double *look_at)
{
    *now = *old;
    double f[3], up[3] = { 0, 1, 0 }, side[3];
    forward_of(old, f);
    cross3(f, up, side);
    normalize3(side);
    int kind = (int)(rvt_next(s) % 3);
    double strafe = kind == 0 ? rvt_uniform(s, -0.1f, 0.1f) : rvt_uniform(s, -1.3f, 1.3f);
    double dolly = kind == 0 ? rvt_uniform(s, -0.1f, 0.1f) : rvt_uniform(s, -0.5f, 0.5f);
    double rise = rvt_uniform(s, -0.2f, 0.2f);
    for (int i = 0; i < 3; i++)
        now->eye[i] += strafe * side[i] + dolly * f[i] + rise * up[i];
    double yaw = kind == 1 ? rvt_uniform(s, -0.05f, 0.05f) : rvt_uniform(s, -0.33f, 0.33f);
    double pitch = kind == 1 ? rvt_uniform(s, -0.03f, 0.03f) : rvt_uniform(s, -0.12f, 0.12f);
    if (look_at) { /* turn toward a point (the doorway), within the same limits */
        double d[3] = { look_at[0] - now->eye[0], look_at[1] - now->eye[1], look_at[2] - now->eye[2] };
        double want_yaw = atan2(d[0], -d[2]), dy = want_yaw - old->yaw;
        while (dy > PI)
            dy -= 2 * PI;
        while (dy < -PI)
            dy += 2 * PI;
        yaw = dy > 0.33 ? 0.33 : dy < -0.33 ? -0.33 : dy;
    }
    now->yaw += yaw;
    now->pitch += pitch;
}

/* Texels of the old image the doorway's opening spans on its narrower side, seen from the
 * old camera through both faces of the wall (a thick wall seen at an angle narrows it). */
static double door_texels(const fscene *sc)
{
    const ref_box *l = &sc->box[4], *r = &sc->box[5], *top = &sc->box[6];
    double x0 = l->max[0], x1 = r->min[0], y0 = sc->box[0].max[1], y1 = top->min[1];
    double in_x[2] = { -INFINITY, INFINITY }, in_y[2] = { -INFINITY, INFINITY };
    for (int face = 0; face < 2; face++) {
        double z = face ? l->max[2] : l->min[2];
        double corners[4][3] = { { x0, y0, z }, { x1, y0, z }, { x0, y1, z }, { x1, y1, z } };
        double px[4], py[4];
        for (int k = 0; k < 4; k++) {
            double c[4];
            clip_of(&sc->old_rv, corners[k], c);
            if (!(c[3] > 0))
                return 0;
            px[k] = (c[0] / c[3] + 1) * 0.5 * sc->feed_w;
            py[k] = (1 - c[1] / c[3]) * 0.5 * sc->feed_h;
        }
        /* The opening's inner interval on each axis: between its two sides' nearer corners. */
        double a0 = fmin(px[0], px[2]), a1 = fmax(px[0], px[2]), b0 = fmin(px[1], px[3]), b1 = fmax(px[1], px[3]);
        double lo = a0 < b0 ? a1 : b1, hi = a0 < b0 ? b0 : a0;
        in_x[0] = fmax(in_x[0], lo);
        in_x[1] = fmin(in_x[1], hi);
        a0 = fmin(py[0], py[1]), a1 = fmax(py[0], py[1]), b0 = fmin(py[2], py[3]), b1 = fmax(py[2], py[3]);
        lo = a0 < b0 ? a1 : b1;
        hi = a0 < b0 ? b0 : a0;
        in_y[0] = fmax(in_y[0], lo);
        in_y[1] = fmin(in_y[1], hi);
    }
    return fmin(in_x[1] - in_x[0], in_y[1] - in_y[0]);
}

static void finish_views(fscene *sc)
{
    feed_camera_matrix(&sc->old_cam, sc->old_vp);
    feed_camera_matrix(&sc->new_cam, sc->new_vp);
    ref_view_init(&sc->old_rv, sc->old_vp, sc->old_cam.clip);
    ref_view_init(&sc->new_rv, sc->new_vp, sc->new_cam.clip);
}

/* A random scene of a random kind, its two cameras and the feed's size. Doorways are kept at
 * least two feed texels wide in the old image: a narrower opening is one the image cannot
 * show (no sample falls in it), the documented limit of any depth image. */
static void random_fscene(uint64_t *s, fscene *sc, uint32_t max_feed_w)
{
    for (;;) {
        memset(sc, 0, sizeof *sc);
        sc->kind = (int)(rvt_next(s) % KIND_COUNT);
        random_feed_camera(s, &sc->old_cam);
        if (sc->kind == KIND_ROOM)
            sc->old_cam.ortho_height = 0;
        uint32_t fw = 32 + (uint32_t)(rvt_next(s) % (max_feed_w - 31));
        sc->feed_w = fw;
        sc->feed_h = (uint32_t)fmax(8, floor(fw / sc->old_cam.aspect + 0.5));
        double door[3];
        if (sc->kind == KIND_BOXES)
            scene_boxes(s, sc);
        else if (sc->kind == KIND_ROOM)
            scene_room(s, sc, door);
        else
            scene_edge(s, sc);
        move_camera(s, &sc->old_cam, &sc->new_cam, sc->kind == KIND_ROOM ? door : NULL);
        finish_views(sc);
        if (sc->kind == KIND_ROOM && door_texels(sc) < 2)
            continue;
        return;
    }
}

/* An object to test: around one of the scene's boxes, behind or beside it as the new camera
 * sees it (mostly not in the depth image: an object hidden last frame was not drawn); some
 * are the scene's own boxes (in the image: never hidden by their own depth), some decals on
 * a box's face. */
static void random_object(uint64_t *s, const fscene *sc, ref_box *obj)
{
    float pick = rvt_uniform(s, 0, 1);
    const ref_box *o = &sc->box[rvt_next(s) % (uint64_t)sc->n_box];
    if (pick < 0.05f) {
        *obj = *o;
        return;
    }
    double lc[3] = { 0.5 * ((double)o->min[0] + o->max[0]), 0.5 * ((double)o->min[1] + o->max[1]),
                     0.5 * ((double)o->min[2] + o->max[2]) };
    double oc[3], size = 0;
    ref_local_to_world(o, lc, oc);
    for (int i = 0; i < 3; i++)
        size = fmax(size, (double)o->max[i] - o->min[i]);
    size = fmin(size, 8);
    if (pick < 0.10f && !o->has_matrix) {
        /* A decal: a flat box lying on one face of an axis-aligned box. */
        int axis = (int)(rvt_next(s) % 3), a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
        double c[3], h[3];
        c[axis] = rvt_uniform(s, 0, 1) < 0.5f ? o->min[axis] : o->max[axis];
        c[a1] = o->min[a1] + rvt_uniform(s, 0, 1) * ((double)o->max[a1] - o->min[a1]);
        c[a2] = o->min[a2] + rvt_uniform(s, 0, 1) * ((double)o->max[a2] - o->min[a2]);
        h[axis] = 0;
        h[a1] = rvt_uniform(s, 0.05f, 0.5f);
        h[a2] = rvt_uniform(s, 0.05f, 0.5f);
        place_box(s, obj, c, h, false);
        return;
    }
    double dir[3];
    if (sc->new_cam.ortho_height > 0) {
        forward_of(&sc->new_cam, dir);
    } else {
        for (int i = 0; i < 3; i++)
            dir[i] = oc[i] - sc->new_cam.eye[i];
        normalize3(dir);
    }
    double back = rvt_uniform(s, -2, 12), centre[3], h[3];
    for (int i = 0; i < 3; i++) {
        centre[i] = oc[i] + back * dir[i] + rvt_uniform(s, -0.7f, 0.7f) * size;
        h[i] = rvt_uniform(s, 0.02f, 1.5f);
    }
    if (rvt_uniform(s, 0, 1) < 0.05f)
        h[rvt_next(s) % 3] = 0;
    place_box(s, obj, centre, h, rvt_uniform(s, 0, 1) < 0.5f);
}

/* ---- buffers -------------------------------------------------------------------------------- */

/* Fused every frame: the property test holds a buffer with the feed against one without,
 * frozen in different frames, so fusion must not depend on what earlier frames did. */
static rv_occlusion *feed_buffer(uint32_t width, uint32_t max_w, uint32_t max_h, rvt_alloc *counter)
{
    rv_occlusion_desc desc = { .width = width, .feed_max_width = max_w, .feed_max_height = max_h,
                               .fusion = RV_FUSION_ALWAYS };
    if (counter)
        desc.allocator = rvt_allocator(counter);
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    return occ;
}

/* Begins the new frame, renders and encodes the old frame's depth, feeds it. */
static void feed_scene(rv_occlusion *occ, const fscene *sc, rv_depth_format f, bool bottom_up, uint64_t *seed,
                       feed_image *img, double *depth)
{
    assert_int_equal(rv_occlusion_begin(occ, sc->new_vp, sc->new_cam.clip, (float)sc->new_cam.aspect), RV_OK);
    render_depth(&sc->old_rv, sc->box, sc->n_box, sc->feed_w, sc->feed_h, depth);
    encode_feed(depth, sc->feed_w, sc->feed_h, f, bottom_up, (uint32_t)(rvt_next(seed) % 9), sc->old_cam.clip, seed,
                img);
    img->feed.view_projection = sc->old_vp;
    assert_int_equal(rv_occlusion_feed_depth(occ, &img->feed), RV_OK);
}

static bool object_visible(rv_occlusion *occ, const ref_box *b)
{
    bool v = false;
    assert_int_equal(rv_occlusion_test_box(occ, b->min, b->max, b->has_matrix ? b->matrix : NULL, &v), RV_OK);
    return v;
}

/* ---- the property test -------------------------------------------------------------------- */

#define FEED_CAP 200

static void test_never_hides_what_the_reference_sees(void **state)
{
    (void)state;
    const uint64_t target = RVT_HEAVY(1000000, 100000);
    const int per_scene = 200, grid = 6;
    static const uint32_t widths[3] = { 64, 128, 256 };
    rv_occlusion *occ[3], *plain[3]; /* plain: the same widths, the occluders alone */
    for (int k = 0; k < 3; k++) {
        occ[k] = feed_buffer(widths[k], FEED_CAP, FEED_CAP, NULL);
        plain[k] = feed_buffer(widths[k], 0, 0, NULL);
    }
    static feed_image img;
    static double depth[FEED_CAP * FEED_CAP];
    uint64_t seed = 0xFEEDu, trials = 0, culled = 0, false_culls = 0, sampled = 0, sampled_hidden = 0, scenes = 0;
    uint64_t by_kind[KIND_COUNT] = { 0 }, culled_by_kind[KIND_COUNT] = { 0 }, feed_alone = 0, with_occluders = 0;
    while (trials < target) {
        fscene sc;
        random_fscene(&seed, &sc, FEED_CAP);
        uint32_t which = (uint32_t)(rvt_next(&seed) % 3);
        rv_occlusion *o = occ[which], *alone = plain[which];
        rv_depth_format f = (rv_depth_format)(rvt_next(&seed) % RV_DEPTH_FORMAT_COUNT_);
        feed_scene(o, &sc, f, rvt_next(&seed) & 1, &seed, &img, depth);
        rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(o);
        assert_int_equal(fs.feeds_used, 1); /* every move stays inside the default thresholds */
        assert_int_equal(fs.texels_fed, sc.feed_w * sc.feed_h);
        /* A quarter of the frames also declare the scene's boxes as occluders. */
        assert_int_equal(rv_occlusion_begin(alone, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
        if (rvt_next(&seed) % 4 == 0) {
            with_occluders++;
            for (int k = 0; k < sc.n_box; k++) {
                assert_int_equal(rv_occlusion_add_occluder(o, sc.box[k].min, sc.box[k].max,
                                                           sc.box[k].has_matrix ? sc.box[k].matrix : NULL),
                                 RV_OK);
                assert_int_equal(rv_occlusion_add_occluder(alone, sc.box[k].min, sc.box[k].max,
                                                           sc.box[k].has_matrix ? sc.box[k].matrix : NULL),
                                 RV_OK);
            }
        }
        ref_box obj[200];
        float mn[3][200], mx[3][200];
        uint8_t single[200];
        for (int i = 0; i < per_scene; i++) {
            random_object(&seed, &sc, &obj[i]);
            if (obj[i].has_matrix) { /* the batch below takes world boxes: give it the bounds */
                for (int a = 0; a < 3; a++)
                    mn[a][i] = mx[a][i] = 0;
            } else {
                for (int a = 0; a < 3; a++) {
                    mn[a][i] = obj[i].min[a];
                    mx[a][i] = obj[i].max[a];
                }
            }
        }
        for (int i = 0; i < per_scene; i++) {
            bool lib = object_visible(o, &obj[i]);
            single[i] = lib;

            trials++;
            by_kind[sc.kind]++;
            if (!lib) {
                culled++;
                culled_by_kind[sc.kind]++;
                if (ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &obj[i], &seed, grid)) {
                    false_culls++;
                    fprintf(stderr, "false cull: scene %llu kind %d object %d format %d feed %ux%u\n",
                            (unsigned long long)scenes, sc.kind, i, (int)f, sc.feed_w, sc.feed_h);
                }
            } else if (i % 4 == 0 && ref_object_seen(&sc.new_rv, NULL, 0, &obj[i], &seed, 3)) {
                sampled++;
                sampled_hidden += !ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &obj[i], &seed, 4);
            }
        }
        /* Hidden by the feed alone: hidden here, seen by the same occluders without it. */
        uint64_t alone_expected = 0, alone_counted = rv_occlusion_get_feed_stats(o).objects_hidden_by_feed;
        for (int i = 0; i < per_scene; i++)
            alone_expected += !single[i] && object_visible(alone, &obj[i]);
        assert_int_equal(alone_counted, alone_expected);
        feed_alone += alone_counted;
        /* The batch of world boxes answers as the single tests did (and counts through the
         * same hook). */
        uint8_t batch[200];
        rv_occlusion_boxes boxes = { { mn[0], mn[1], mn[2] }, { mx[0], mx[1], mx[2] }, NULL };
        assert_int_equal(rv_occlusion_test_boxes(o, &boxes, 0, (uint32_t)per_scene, batch), RV_OK);
        for (int i = 0; i < per_scene; i++)
            if (!obj[i].has_matrix)
                assert_int_equal(batch[i], single[i]);
        scenes++;
    }
    for (int k = 0; k < 3; k++) {
        rv_occlusion_destroy(occ[k]);
        rv_occlusion_destroy(plain[k]);
    }
    /* Of the sampled objects the feed drew, sampled_hidden were hidden: the share of hidden
     * objects the feed finds is culled / (culled + 4 * sampled_hidden), roughly. */
    double found = (double)culled / ((double)culled + 4.0 * (double)sampled_hidden + 1e-9);
    printf("depth feed property: %llu scenes (%llu with occluders), %llu objects in front of the near plane "
           "(boxes %llu, rooms %llu, edges %llu), culled %llu (boxes %llu, rooms %llu, edges %llu), "
           "by the feed alone %llu, hidden-and-drawn in the 1/4 sample %llu of %llu, share of hidden culled ~%.2f, "
           "false culls %llu\n",
           (unsigned long long)scenes, (unsigned long long)with_occluders, (unsigned long long)trials,
           (unsigned long long)by_kind[0], (unsigned long long)by_kind[1], (unsigned long long)by_kind[2],
           (unsigned long long)culled, (unsigned long long)culled_by_kind[0], (unsigned long long)culled_by_kind[1],
           (unsigned long long)culled_by_kind[2], (unsigned long long)feed_alone, (unsigned long long)sampled_hidden,
           (unsigned long long)sampled, found, (unsigned long long)false_culls);
    assert_int_equal(false_culls, 0);
    /* A feed that never hides anything fails here. */
    assert_true(culled * 10 > trials);
    for (int k = 0; k < KIND_COUNT; k++)
        assert_true(culled_by_kind[k] * 50 > by_kind[k]);
    assert_true(feed_alone > culled / 4);
}

/* ---- a wall -------------------------------------------------------------------------------- */

/* A 12 x 8 wall, 1 thick, centred on x = 0 at z = 0; the old camera 12 units in front at eye
 * height, near plane 1; the new camera moved by strafe and turned by yaw. */
static void wall_scene(fscene *sc, rv_clip clip, double zfar, double strafe, double yaw)
{
    memset(sc, 0, sizeof *sc);
    feed_camera c = { { 0, 1.7, 12 }, 0, 0, 60 * PI / 180, 16.0 / 9.0, 1.0, zfar, 0, clip };
    sc->old_cam = c;
    sc->new_cam = c;
    sc->new_cam.eye[0] += strafe;
    sc->new_cam.yaw += yaw;
    aabb(&sc->box[0], -6, 0, -0.5, 6, 8, 0.5);
    sc->n_box = 1;
    sc->feed_w = 160;
    sc->feed_h = 90;
    finish_views(sc);
}

static ref_box crate(double x, double y, double z, double h)
{
    ref_box b;
    aabb(&b, x - h, y - h, z - h, x + h, y + h, z + h);
    return b;
}

static void test_a_wall_in_the_feed_hides_what_is_behind_it_after_a_small_move(void **state)
{
    (void)state;
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.3, 0.02);
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 1;
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    ref_box behind = crate(0, 2, -3, 0.5), beside = crate(11, 1, -3, 0.5), above = crate(0, 9.5, -3, 0.5);
    ref_box front = crate(0, 1, 3, 0.5), edge = crate(7.6, 2, -3, 0.5);
    assert_false(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &behind, &seed, 6));
    assert_true(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &edge, &seed, 6)); /* straddles the wall's edge */
    assert_false(object_visible(occ, &behind));
    assert_true(object_visible(occ, &beside));
    assert_true(object_visible(occ, &above));
    assert_true(object_visible(occ, &front));
    assert_true(object_visible(occ, &edge));
    ref_box decal;
    aabb(&decal, -1, 1, 0.5, 1, 2, 0.5); /* on the wall's front face */
    assert_true(object_visible(occ, &decal));
    assert_true(object_visible(occ, &sc.box[0])); /* the wall itself */
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    assert_int_equal(fs.feeds_used, 1);
    assert_int_equal(fs.texels_fed, 160 * 90);
    assert_true(fs.texels_sky > 0);
    assert_true(fs.texels_discontinuous > 0); /* the wall's outline and the image's edge */
    assert_true(fs.texels_reprojected > 1000);
    assert_int_equal(fs.texels_raised, fs.texels_reprojected); /* no occluders this frame */
    assert_int_equal(fs.objects_hidden_by_feed, 1);
    assert_int_equal(rv_occlusion_get_stats(occ).texels_covered, 0); /* the occluders' own: none */
    /* With the wall as an occluder too, the crate is hidden by both: not by the feed alone. */
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    assert_int_equal(rv_occlusion_feed_depth(occ, &img.feed), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, sc.box[0].min, sc.box[0].max, NULL), RV_OK);
    assert_false(object_visible(occ, &behind));
    assert_int_equal(rv_occlusion_get_feed_stats(occ).objects_hidden_by_feed, 0);
    /* texels_covered counts the occluders' texels alone: the same without the feed. */
    uint32_t covered = rv_occlusion_get_stats(occ).texels_covered;
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    assert_int_equal(rv_occlusion_add_occluder(occ, sc.box[0].min, sc.box[0].max, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    assert_true(covered > 0);
    assert_int_equal(rv_occlusion_get_stats(occ).texels_covered, covered);
    rv_occlusion_destroy(occ);
}

/* A fixed set of crates around the wall and their verdicts. */
static ref_box wall_crates[8];

static void wall_verdicts(rv_occlusion *occ, uint8_t out[8])
{
    const double at[8][4] = { { 0, 2, -3, 0.5 },  { -3, 5, -2, 1 },   { 3, 1.5, -8, 0.7 }, { 11, 1, -3, 0.5 },
                              { 0, 9.5, -3, 0.5 }, { 0, 1, 3, 0.5 }, { 7.6, 2, -3, 0.5 }, { -2, 6, -1.5, 0.4 } };
    for (int i = 0; i < 8; i++) {
        wall_crates[i] = crate(at[i][0], at[i][1], at[i][2], at[i][3]);
        out[i] = object_visible(occ, &wall_crates[i]);
    }
}

static void test_every_clip_convention_and_format_gives_the_same_verdicts(void **state)
{
    (void)state;
    static const uint8_t expect[8] = { 0, 0, 0, 1, 1, 1, 1, 0 };
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 2;
    for (int conv = 0; conv < 4; conv++)
        for (int inf = 0; inf < 2; inf++)
            for (int f = 0; f < RV_DEPTH_FORMAT_COUNT_; f++)
                for (int flip = 0; flip < 2; flip++) {
                    fscene sc;
                    wall_scene(&sc, ref_conventions[conv], inf ? 0 : 500, -0.25, -0.015);
                    feed_scene(occ, &sc, (rv_depth_format)f, flip, &seed, &img, depth);
                    uint8_t v[8];
                    wall_verdicts(occ, v);
                    if (conv == 0 && inf == 0 && f == 0 && flip == 0)
                        for (int i = 0; i < 8; i++) { /* the expectations are the reference's */
                            const ref_box *b = &wall_crates[i];
                            assert_int_equal(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, b, &seed, 6), expect[i]);
                        }
                    if (memcmp(v, expect, 8) != 0)
                        fprintf(stderr, "convention %d infinite %d format %d flipped %d\n", conv, inf, f, flip);
                    assert_memory_equal(v, expect, 8);
                }
    rv_occlusion_destroy(occ);
}

/* ---- when the feed is ignored ---------------------------------------------------------------- */

static void test_a_camera_jump_is_ignored_and_counted(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 3;
    ref_box behind = crate(0, 2, -3, 0.5);
    const double moves[3][2] = { { 2.5, 0 }, { 0, 0.6 }, { -2.1, -0.1 } }; /* strafe, yaw */
    for (int m = 0; m < 3; m++) {
        fscene sc;
        wall_scene(&sc, (rv_clip){ 0 }, 1000, moves[m][0], moves[m][1]);
        feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
        rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
        assert_int_equal(fs.feeds_ignored_motion, 1);
        assert_int_equal(fs.feeds_used, 0);
        assert_int_equal(fs.texels_reprojected, 0);
        assert_true(object_visible(occ, &behind));
    }
    rv_occlusion_destroy(occ);
    /* Thresholds from the desc: a 0.3 strafe is a jump under max_translation 0.1. */
    rv_occlusion_desc desc = { .width = 128, .feed_max_width = 160, .feed_max_height = 90,
                               .feed_max_translation = 0.1f, .feed_max_rotation = 0.01f };
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.3, 0);
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_ignored_motion, 1);
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.05, 0.02);
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_ignored_motion, 1);
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.05, 0.005);
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_used, 1);
    assert_false(object_visible(occ, &behind));
    rv_occlusion_destroy(occ);
}

static void test_another_projection_or_an_old_feed_is_ignored(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 4;
    ref_box behind = crate(0, 2, -3, 0.5);
    fscene sc;
    /* A zoom: the new view's field of view is 10 % narrower. */
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.1, 0);
    sc.new_cam.fov_y *= 0.9;
    finish_views(&sc);
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_ignored_projection, 1);
    assert_true(object_visible(occ, &behind));
    /* An orthographic view fed a perspective depth. */
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.1, 0);
    sc.new_cam.ortho_height = 10;
    finish_views(&sc);
    feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_ignored_projection, 1);
    assert_true(object_visible(occ, &behind));
    /* Too old (the default limit is 4 frames); age 0 is this frame's own view. */
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.1, 0);
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    render_depth(&sc.old_rv, sc.box, sc.n_box, sc.feed_w, sc.feed_h, depth);
    encode_feed(depth, sc.feed_w, sc.feed_h, RV_DEPTH_FLOAT32, false, 0, sc.old_cam.clip, &seed, &img);
    img.feed.view_projection = sc.old_vp;
    img.feed.age = 5;
    assert_int_equal(rv_occlusion_feed_depth(occ, &img.feed), RV_OK);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_ignored_age, 1);
    assert_true(object_visible(occ, &behind));
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    img.feed.age = 0;
    assert_int_equal(rv_occlusion_feed_depth(occ, &img.feed), RV_OK);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_used, 1);
    assert_false(object_visible(occ, &behind));
    rv_occlusion_destroy(occ);
}

/* ---- what hides nothing --------------------------------------------------------------------- */

static void test_sky_and_bad_values_hide_nothing(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 5;
    ref_box behind = crate(0, 2, -3, 0.5), behind_left = crate(-3, 5, -2, 1);
    for (int conv = 0; conv < 4; conv++) {
        fscene sc;
        wall_scene(&sc, ref_conventions[conv], 1000, 0.2, 0.01);
        /* All sky. */
        for (size_t i = 0; i < 160 * 90; i++)
            depth[i] = NAN;
        assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
        encode_feed(depth, 160, 90, RV_DEPTH_UNORM24, false, 0, sc.old_cam.clip, &seed, &img);
        img.feed.view_projection = sc.old_vp;
        assert_int_equal(rv_occlusion_feed_depth(occ, &img.feed), RV_OK);
        rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
        assert_int_equal(fs.texels_sky, 160 * 90);
        assert_int_equal(fs.texels_reprojected, 0);
        assert_true(object_visible(occ, &behind));
        /* The wall, with a patch of sky, NaN and values outside 0..1 where the crate is. */
        assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
        render_depth(&sc.old_rv, sc.box, sc.n_box, 160, 90, depth);
        encode_feed(depth, 160, 90, RV_DEPTH_FLOAT32, false, 0, sc.old_cam.clip, &seed, &img);
        float *t = (float *)(void *)img.buf;
        /* Rows 39..48, columns 74..85: where the new view's rays to the crate cross the wall
         * in the old image. */
        const float bad[4] = { NAN, 1.5f, -0.25f, sc.old_cam.clip.reversed_z ? 0.0f : 1.0f };
        for (uint32_t y = 39; y < 49; y++)
            for (uint32_t x = 74; x < 86; x++)
                t[y * 160 + x] = bad[(x + y) % 4];
        img.feed.view_projection = sc.old_vp;
        assert_int_equal(rv_occlusion_feed_depth(occ, &img.feed), RV_OK);
        fs = rv_occlusion_get_feed_stats(occ);
        assert_int_equal(fs.texels_invalid, 90);
        assert_true(object_visible(occ, &behind));
        assert_false(object_visible(occ, &behind_left));
    }
    rv_occlusion_destroy(occ);
}

/* One missing sample in a flat wall: its own texel and its four neighbours (whose second
 * differences it is part of) are on no plane, so every texel whose 3 x 3 meets that cross
 * proves nothing: 21 texels, besides the image's two-texel rim. A sample missing only
 * along x must count as missing, not be judged by y alone. */
static void test_a_missing_sample_breaks_the_plane_on_both_axes(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(64, 16, 16, NULL);
    feed_camera c = { { 0, 0, 10 }, 0, 0, 60 * PI / 180, 1.0, 1.0, 100, 0, { true, true } };
    fscene sc;
    memset(&sc, 0, sizeof sc);
    sc.old_cam = sc.new_cam = c;
    finish_views(&sc);
    static float depth[16 * 16];
    for (int i = 0; i < 16 * 16; i++)
        depth[i] = 0.1f; /* reversed-Z: a wall facing the camera at 10 units */
    depth[7 * 16 + 9] = NAN;
    rv_depth_feed feed = { depth, 16, 16, 0, RV_DEPTH_FLOAT32, false, sc.old_vp, { true, true }, 1 };
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, c.clip, 1.0f), RV_OK);
    assert_int_equal(rv_occlusion_feed_depth(occ, &feed), RV_OK);
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    assert_int_equal(fs.texels_invalid, 1);
    assert_int_equal(fs.texels_discontinuous, 255 - (12 * 12 - 21));
    rv_occlusion_destroy(occ);
}

/* A far wall in a 16-bit depth buffer: 65,535 steps over an OpenGL range of 0.1 to 1000
 * cannot bound a surface 50 units away tightly enough, so no sample proves anything, and
 * every one is counted (as discontinuous) rather than falling out of the counters. */
static void test_a_depth_the_format_cannot_resolve_is_counted_and_hides_nothing(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(64, 16, 16, NULL);
    feed_camera c = { { 0, 0, 10 }, 0, 0, 60 * PI / 180, 1.0, 0.1, 1000, 0, { false, false } };
    fscene sc;
    memset(&sc, 0, sizeof sc);
    sc.old_cam = sc.new_cam = c;
    finish_views(&sc);
    double z = 50, n = 0.1, f = 1000, ndc = (f + n) / (f - n) - 2 * f * n / ((f - n) * z);
    static uint16_t depth[16 * 16];
    for (int i = 0; i < 16 * 16; i++)
        depth[i] = (uint16_t)lround((0.5 * ndc + 0.5) * 65535.0);
    rv_depth_feed feed = { depth, 16, 16, 0, RV_DEPTH_UNORM16, false, sc.old_vp, { false, false }, 1 };
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, c.clip, 1.0f), RV_OK);
    assert_int_equal(rv_occlusion_feed_depth(occ, &feed), RV_OK);
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    assert_int_equal(fs.texels_fed, 256);
    assert_int_equal(fs.texels_invalid + fs.texels_sky, 0);
    assert_int_equal(fs.texels_discontinuous, 256);
    assert_int_equal(fs.texels_reprojected, 0);
    rv_occlusion_destroy(occ);
}

/* A near wall's edge in front of a far wall 2.6 behind it: after a strafe the camera sees into
 * the gap between them; a crate in the gap was never in the image and must be drawn. */
static void test_an_edge_never_stretches_into_the_wall_behind(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(256, 200, 120, NULL);
    static feed_image img;
    static double depth[200 * 120];
    uint64_t seed = 6;
    for (int conv = 0; conv < 4; conv++) {
        fscene sc;
        memset(&sc, 0, sizeof sc);
        feed_camera c = { { 0, 1.7, 10 }, 0, 0, 60 * PI / 180, 16.0 / 9.0, 0.3, 500, 0, ref_conventions[conv] };
        sc.old_cam = c;
        sc.new_cam = c;
        sc.new_cam.eye[0] += 1.0;
        aabb(&sc.box[0], -10, -2, -0.2, 0, 6, 0);     /* near wall, its edge at x = 0 */
        aabb(&sc.box[1], -10, -2, -3.0, 10, 6, -2.6); /* far wall */
        sc.n_box = 2;
        sc.feed_w = 200;
        sc.feed_h = 112;
        finish_views(&sc);
        feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
        ref_box in_gap = crate(-0.15, 1.5, -2.0, 0.12), deep = crate(-3, 1.5, -2.0, 0.2);
        assert_true(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &in_gap, &seed, 6));
        assert_true(object_visible(occ, &in_gap));
        assert_false(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &deep, &seed, 6));
        assert_false(object_visible(occ, &deep));
    }
    rv_occlusion_destroy(occ);
}

/* A room the old camera never saw into: the new camera looks through the door. */
static void test_a_room_seen_through_a_door_for_the_first_time_is_drawn(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(256, 200, 120, NULL);
    static feed_image img;
    static double depth[200 * 120];
    uint64_t seed = 7;
    fscene sc;
    memset(&sc, 0, sizeof sc);
    feed_camera c = { { -2.5, 1.7, 6 }, 0.3, 0, 60 * PI / 180, 16.0 / 9.0, 0.1, 500, 0, { true, true } };
    sc.old_cam = c;
    sc.new_cam = c;
    sc.new_cam.eye[0] = -0.8;
    sc.new_cam.yaw = 0.0;
    aabb(&sc.box[0], -20, -1, -20, 20, 0, 20);   /* ground */
    aabb(&sc.box[1], -4, 0, 0, -0.6, 3, 0.2);    /* front wall, left of the door */
    aabb(&sc.box[2], 0.6, 0, 0, 4, 3, 0.2);      /* right of it */
    aabb(&sc.box[3], -0.6, 2.2, 0, 0.6, 3, 0.2); /* lintel */
    aabb(&sc.box[4], -4, 0, -6, 4, 3, -5.8);     /* back wall */
    aabb(&sc.box[5], -4.2, 0, -6, -4, 3, 0.2);   /* side walls */
    aabb(&sc.box[6], 4, 0, -6, 4.2, 3, 0.2);
    sc.n_box = 7;
    sc.feed_w = 200;
    sc.feed_h = 112;
    finish_views(&sc);
    feed_scene(occ, &sc, RV_DEPTH_UNORM24_HIGH, true, &seed, &img, depth);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_used, 1);
    ref_box inside = crate(-0.3, 0.6, -4, 0.3);
    assert_false(ref_object_seen(&sc.old_rv, sc.box, sc.n_box, &inside, &seed, 6)); /* never seen */
    assert_true(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &inside, &seed, 6));
    assert_true(object_visible(occ, &inside));
    ref_box behind_wall = crate(-3, 1, -2, 0.5);
    assert_false(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &behind_wall, &seed, 6));
    rv_occlusion_destroy(occ);
}

/* ---- bad input ------------------------------------------------------------------------------- */

static uint64_t feed_fingerprint(const rv_occlusion *occ)
{
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    rv_alloc_stats a = rv_occlusion_alloc_stats(occ);
    return fs.feeds_used * 1000003ull + fs.texels_fed * 31ull + fs.texels_reprojected * 7ull +
           fs.feeds_ignored_motion * 3ull + a.allocations * 101ull + a.bytes_live;
}

static void test_bad_input_gets_a_specific_code_and_changes_nothing(void **state)
{
    (void)state;
    rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 8;
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.2, 0);
    render_depth(&sc.old_rv, sc.box, sc.n_box, 160, 90, depth);
    encode_feed(depth, 160, 90, RV_DEPTH_FLOAT32, false, 0, sc.old_cam.clip, &seed, &img);
    img.feed.view_projection = sc.old_vp;
    rv_depth_feed good = img.feed;
    /* Before any begin. */
    assert_int_equal(rv_occlusion_feed_depth(occ, &good), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    assert_int_equal(rv_occlusion_feed_depth(occ, &good), RV_OK); /* accepted: later refusals keep it */
    ref_box behind = crate(0, 2, -3, 0.5);
    uint64_t before = feed_fingerprint(occ);
    assert_int_equal(rv_occlusion_feed_depth(NULL, &good), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_occlusion_feed_depth(occ, NULL), RV_ERR_INVALID_ARG);
    rv_depth_feed f = good;
    f.texels = NULL;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.view_projection = NULL;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.width = 0;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.height = 0;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.format = RV_DEPTH_FORMAT_COUNT_;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.row_pitch = 159 * 4; /* shorter than a row */
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.row_pitch = 160 * 4 + 2; /* not a multiple of the texel size */
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.texels = (const uint8_t *)good.texels + 2; /* misaligned */
    f.width = 100;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    f = good;
    f.width = 161; /* above the capacity */
    f.row_pitch = 0;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_CAPACITY);
    f = good;
    f.height = 91;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_CAPACITY);
    float m[16];
    const float nonfinite[3] = { NAN, INFINITY, -INFINITY };
    for (int k = 0; k < 3; k++)
        for (int e = 0; e < 16; e += 3) {
            memcpy(m, sc.old_vp, sizeof m);
            m[e] = nonfinite[k];
            f = good;
            f.view_projection = m;
            assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_NOT_FINITE);
        }
    memset(m, 0, sizeof m); /* not invertible */
    f = good;
    f.view_projection = m;
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    memcpy(m, sc.old_vp, sizeof m); /* NDC depth the same at every distance: z = w / 2 */
    for (int col = 0; col < 4; col++)
        m[col * 4 + 2] = 0.5f * m[col * 4 + 3];
    assert_int_equal(rv_occlusion_feed_depth(occ, &f), RV_ERR_INVALID_ARG);
    assert_int_equal(feed_fingerprint(occ), before);
    assert_false(object_visible(occ, &behind)); /* the accepted feed still stands (and froze) */
    assert_int_equal(rv_occlusion_feed_depth(occ, &good), RV_ERR_FROZEN);
    rv_occlusion_destroy(occ);

    /* A buffer made without a feed capacity refuses every feed; width 0 accepts and ignores. */
    occ = feed_buffer(128, 0, 0, NULL);
    assert_int_equal(rv_occlusion_begin(occ, sc.new_vp, sc.new_cam.clip, (float)sc.new_cam.aspect), RV_OK);
    assert_int_equal(rv_occlusion_feed_depth(occ, &good), RV_ERR_CAPACITY);
    rv_occlusion_destroy(occ);
    occ = feed_buffer(0, 160, 90, NULL);
    assert_int_equal(rv_occlusion_feed_depth(occ, &good), RV_OK);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_used, 0);
    rv_occlusion_destroy(occ);
}

static void test_desc_checks_the_feed_fields(void **state)
{
    (void)state;
    rv_occlusion *occ = NULL;
    rv_occlusion_desc d = { .width = 64, .feed_max_width = 10 };
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_INVALID_ARG); /* width without height */
    d.feed_max_height = RV_OCCLUSION_MAX_SIZE + 1;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_INVALID_ARG);
    d.feed_max_height = 10;
    d.feed_max_translation = -1;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_INVALID_ARG);
    d.feed_max_translation = NAN;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_NOT_FINITE);
    d.feed_max_translation = 0;
    d.feed_max_rotation = INFINITY;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_NOT_FINITE);
    d.feed_max_rotation = 0;
    d.feed_discontinuity = 0.06f;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_ERR_INVALID_ARG);
    assert_null(occ);
    rv_world *world = NULL;
    rv_world_desc wd = { 0 };
    wd.occlusion = d;
    assert_int_equal(rv_world_create(&wd, &world), RV_ERR_INVALID_ARG);
    d.feed_discontinuity = 0.05f;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_OK);
    rv_occlusion_destroy(occ);
}

/* ---- allocation ------------------------------------------------------------------------------- */

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    rvt_alloc counter = { 0 };
    rv_occlusion *occ = feed_buffer(128, 160, 90, &counter);
    static feed_image img;
    static double depth[160 * 90];
    uint64_t seed = 9;
    rv_alloc_stats warm = { 0 };
    for (int frame = 0; frame < 6; frame++) {
        if (frame == 2)
            warm = rv_occlusion_alloc_stats(occ);
        fscene sc;
        wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.05 * frame, 0.01 * frame);
        feed_scene(occ, &sc, RV_DEPTH_UNORM16, frame & 1, &seed, &img, depth);
        ref_box behind = crate(0, 2, -3, 0.5);
        assert_false(object_visible(occ, &behind));
    }
    rv_alloc_stats now = rv_occlusion_alloc_stats(occ);
    assert_int_equal(now.allocations, warm.allocations);
    assert_int_equal(now.reallocations, warm.reallocations);
    rv_occlusion_destroy(occ);
    assert_int_equal(counter.live_blocks, 0);
    assert_int_equal(counter.live_bytes, 0);
}

typedef struct sweep_feed {
    rv_allocator allocator;
    rv_occlusion *occ;
    fscene sc;
} sweep_feed;

static feed_image sweep_img;

static void *sweep_setup_empty(const rv_allocator *a)
{
    sweep_feed *s = calloc(1, sizeof *s);
    s->allocator = *a;
    wall_scene(&s->sc, (rv_clip){ 0 }, 1000, 0.2, 0.01);
    return s;
}

static rv_result sweep_create(void *o)
{
    sweep_feed *s = o;
    rv_occlusion_desc desc = { .allocator = s->allocator, .width = 64, .feed_max_width = 160, .feed_max_height = 90 };
    return rv_occlusion_create(&desc, &s->occ);
}

static void *sweep_setup_begun(const rv_allocator *a)
{
    sweep_feed *s = sweep_setup_empty(a);
    assert_int_equal(sweep_create(s), RV_OK);
    assert_int_equal(rv_occlusion_begin(s->occ, s->sc.new_vp, s->sc.new_cam.clip, (float)s->sc.new_cam.aspect), RV_OK);
    return s;
}

static rv_result sweep_feed_call(void *o)
{
    sweep_feed *s = o;
    return rv_occlusion_feed_depth(s->occ, &sweep_img.feed);
}

static uint64_t sweep_fingerprint(void *o)
{
    sweep_feed *s = o;
    if (!s->occ)
        return 0;
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(s->occ);
    return 1 + fs.feeds_used * 1000003ull + fs.texels_fed * 31ull + fs.texels_reprojected * 7ull;
}

static void sweep_teardown(void *o)
{
    sweep_feed *s = o;
    rv_occlusion_destroy(s->occ);
    free(s);
}

/* The frame's main view: the buffer (and its feed side) is made by the first begin, the
 * destination side by the first feed. */
typedef struct sweep_world {
    rv_world *world;
    rv_view view;
    float eye[3];
} sweep_world;

static fscene sweep_scene;

static void *sweep_world_setup(const rv_allocator *a, bool begin)
{
    sweep_world *s = calloc(1, sizeof *s);
    rv_world_desc wd = { 0 };
    wd.allocator = *a;
    wd.occlusion.width = 64;
    wd.occlusion.feed_max_width = 160;
    wd.occlusion.feed_max_height = 90;
    assert_int_equal(rv_world_create(&wd, &s->world), RV_OK);
    for (int i = 0; i < 3; i++)
        s->eye[i] = (float)sweep_scene.new_cam.eye[i];
    s->view.view_projection = sweep_scene.new_vp;
    s->view.eye = s->eye;
    s->view.viewport_width = 1280;
    s->view.viewport_height = 720;
    if (begin)
        assert_int_equal(rv_frame_begin(s->world, &s->view), RV_OK);
    return s;
}

static void *sweep_world_empty(const rv_allocator *a)
{
    return sweep_world_setup(a, false);
}

static void *sweep_world_begun(const rv_allocator *a)
{
    return sweep_world_setup(a, true);
}

static rv_result sweep_world_begin(void *o)
{
    sweep_world *s = o;
    return rv_frame_begin(s->world, &s->view);
}

static rv_result sweep_world_feed(void *o)
{
    sweep_world *s = o;
    return rv_frame_feed_depth(s->world, &sweep_img.feed);
}

static uint64_t sweep_world_fingerprint(void *o)
{
    sweep_world *s = o;
    rv_occlusion *occ = rv_world_occlusion(s->world);
    rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(occ);
    return 1 + fs.feeds_used * 1000003ull + fs.texels_reprojected * 7ull;
}

static void sweep_world_teardown(void *o)
{
    sweep_world *s = o;
    rv_world_destroy(s->world);
    free(s);
}

static void test_allocation_failures_leave_the_buffer_as_it_was(void **state)
{
    (void)state;
    static double depth[160 * 90];
    uint64_t seed = 10;
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.2, 0.01);
    render_depth(&sc.old_rv, sc.box, sc.n_box, 160, 90, depth);
    encode_feed(depth, 160, 90, RV_DEPTH_FLOAT32, false, 0, sc.old_cam.clip, &seed, &sweep_img);
    static float vp[16];
    memcpy(vp, sc.old_vp, sizeof vp);
    sweep_img.feed.view_projection = vp;
    rvt_sweep create = { "create with a feed", sweep_setup_empty, sweep_create, sweep_fingerprint, sweep_teardown };
    rvt_sweep feed = { "first feed", sweep_setup_begun, sweep_feed_call, sweep_fingerprint, sweep_teardown };
    assert_true(rvt_run_sweep(&create) >= 5); /* the buffer, the feed state, its rows and two pyramids */
    assert_int_equal(rvt_run_sweep(&feed), 3); /* the destination, the occluders' copy, scratch */
    sweep_scene = sc;
    rvt_sweep begin = { "frame begin with a feed capacity", sweep_world_empty, sweep_world_begin,
                        sweep_world_fingerprint, sweep_world_teardown };
    rvt_sweep frame_feed = { "rv_frame_feed_depth", sweep_world_begun, sweep_world_feed, sweep_world_fingerprint,
                             sweep_world_teardown };
    assert_true(rvt_run_sweep(&begin) >= 5);
    assert_int_equal(rvt_run_sweep(&frame_feed), 3);
}

/* ---- the frame ------------------------------------------------------------------------------ */

static uint64_t fake_clock_ns(void *user)
{
    uint64_t *now = user;
    return *now += 1000;
}

static void test_the_frame_feeds_its_main_view(void **state)
{
    (void)state;
    uint64_t clock = 0, seed = 11;
    rv_world_desc wd = { 0 };
    wd.occlusion.width = 128;
    wd.occlusion.feed_max_width = 160;
    wd.occlusion.feed_max_height = 90;
    wd.clock_ns = fake_clock_ns;
    wd.clock_user = &clock;
    rv_world *world = NULL;
    assert_int_equal(rv_world_create(&wd, &world), RV_OK);
    rv_node behind, beside;
    const float behind_at[3] = { 0, 2, -3 }, beside_at[3] = { 11, 1, -3 };
    assert_int_equal(rv_node_create(world, RV_NODE_NONE, &behind), RV_OK);
    assert_int_equal(rv_node_create(world, RV_NODE_NONE, &beside), RV_OK);
    assert_int_equal(rv_node_set_bounds(world, behind, behind_at, 0.5f), RV_OK);
    assert_int_equal(rv_node_set_bounds(world, beside, beside_at, 0.5f), RV_OK);
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.3, 0.02);
    static feed_image img;
    static double depth[160 * 90];
    render_depth(&sc.old_rv, sc.box, sc.n_box, 160, 90, depth);
    encode_feed(depth, 160, 90, RV_DEPTH_UNORM24, false, 0, sc.old_cam.clip, &seed, &img);
    img.feed.view_projection = sc.old_vp;
    float eye[3] = { (float)sc.new_cam.eye[0], (float)sc.new_cam.eye[1], (float)sc.new_cam.eye[2] };
    rv_view view = { 0 };
    view.view_projection = sc.new_vp;
    view.eye = eye;
    view.clip = sc.new_cam.clip;
    view.viewport_width = 1280;
    view.viewport_height = 720;
    rv_frame_view out;
    assert_int_equal(rv_frame_feed_depth(world, &img.feed), RV_ERR_BAD_STATE); /* no frame open */
    for (int frame = 0; frame < 2; frame++) {
        view.time_ms = 16.0 * frame;
        assert_int_equal(rv_frame_begin(world, &view), RV_OK);
        img.feed.age = 0;
        assert_int_equal(rv_frame_feed_depth(world, &img.feed), RV_ERR_INVALID_ARG);
        assert_int_equal(rv_frame_feed_depth(NULL, &img.feed), RV_ERR_INVALID_ARG);
        assert_int_equal(rv_frame_feed_depth(world, NULL), RV_ERR_INVALID_ARG);
        img.feed.age = 1;
        if (frame == 1)
            assert_int_equal(rv_frame_feed_depth(world, &img.feed), RV_OK);
        assert_int_equal(rv_frame_cull(world), RV_OK);
        assert_int_equal(rv_frame_feed_depth(world, &img.feed), RV_ERR_BAD_STATE); /* after the cull */
        assert_int_equal(rv_frame_end(world, &out), RV_OK);
        rv_occlusion_feed_stats fs = rv_occlusion_get_feed_stats(rv_world_occlusion(world));
        if (frame == 0) { /* no feed, no occluders: both drawn */
            assert_int_equal(out.opaque_count, 2);
            assert_int_equal(fs.feeds_used, 0);
        } else {
            assert_int_equal(out.opaque_count, 1);
            assert_true(rv_node_equal(out.opaque[0].node, beside));
            assert_int_equal(out.counts.occlusion_culled, 1);
            assert_int_equal(fs.feeds_used, 1);
            assert_int_equal(fs.objects_hidden_by_feed, 1);
            assert_true(out.stage_us[RV_STAGE_FEED] > 0);
        }
    }
    rv_world_destroy(world);
    /* Occlusion off: a no-op once the arguments pass. */
    wd.occlusion.width = 0;
    assert_int_equal(rv_world_create(&wd, &world), RV_OK);
    assert_int_equal(rv_frame_begin(world, &view), RV_OK);
    assert_int_equal(rv_frame_feed_depth(world, &img.feed), RV_OK);
    rv_depth_feed age0 = img.feed; /* the age is checked even then; the other fields are not read */
    age0.age = 0;
    assert_int_equal(rv_frame_feed_depth(world, &age0), RV_ERR_INVALID_ARG);
    rv_depth_feed unread = img.feed;
    unread.texels = NULL;
    unread.width = 0;
    assert_int_equal(rv_frame_feed_depth(world, &unread), RV_OK);
    assert_int_equal(rv_frame_abort(world), RV_OK);
    rv_world_destroy(world);
}

/* ---- the two builds of the source side and of the reprojection ------------------------------ */

static void test_portable_and_wide_builds_agree_exactly(void **state)
{
    (void)state;
    static feed_image img;
    static double depth[FEED_CAP * FEED_CAP];
    uint64_t seed = 12;
    for (int t = 0; t < RVT_HEAVY(60, 12); t++) {
        fscene sc;
        random_fscene(&seed, &sc, FEED_CAP);
        /* a: the widest build this CPU runs (AVX-512 where it has it); c: AVX2; b: portable */
        rv_occlusion *a = feed_buffer(128, FEED_CAP, FEED_CAP, NULL), *b = feed_buffer(128, FEED_CAP, FEED_CAP, NULL);
        rv_occlusion *c = feed_buffer(128, FEED_CAP, FEED_CAP, NULL);
        b->wide = false;
        c->feed->avx512 = false;
        rv_depth_format f = (rv_depth_format)(t % RV_DEPTH_FORMAT_COUNT_);
        uint64_t s2 = seed, s3 = seed;
        feed_scene(a, &sc, f, false, &seed, &img, depth);
        feed_scene(b, &sc, f, false, &s2, &img, depth);
        feed_scene(c, &sc, f, false, &s3, &img, depth);
        assert_int_equal(rv_occlusion_freeze(a), RV_OK);
        assert_int_equal(rv_occlusion_freeze(b), RV_OK);
        assert_int_equal(rv_occlusion_freeze(c), RV_OK);
        assert_memory_equal(a->texels, b->texels, (size_t)a->width * a->height * sizeof(float));
        assert_memory_equal(c->texels, b->texels, (size_t)a->width * a->height * sizeof(float));
        rv_occlusion_feed_stats sa = rv_occlusion_get_feed_stats(a), sb = rv_occlusion_get_feed_stats(b),
                                sc3 = rv_occlusion_get_feed_stats(c);
        assert_memory_equal(&sa, &sb, sizeof sa);
        assert_memory_equal(&sc3, &sb, sizeof sb);
        rv_occlusion_destroy(a);
        rv_occlusion_destroy(b);
        rv_occlusion_destroy(c);
    }
}

/* The block sizes are an internal knob (the benchmark's baseline proves every texel on its
 * own): every size stays conservative, and smaller blocks prove at least as much of the
 * wall as the default. */
static void test_every_block_size_stays_conservative(void **state)
{
    (void)state;
    static feed_image img;
    static double depth[FEED_CAP * FEED_CAP];
    static const int32_t sizes[4][2] = { { 1, 1 }, { 2, 2 }, { 16, 4 }, { 64, 64 } };
    uint64_t seed = 13, culled = 0;
    for (int t = 0; t < RVT_HEAVY(80, 16); t++) {
        fscene sc;
        random_fscene(&seed, &sc, FEED_CAP);
        ref_box obj[40];
        for (int i = 0; i < 40; i++)
            random_object(&seed, &sc, &obj[i]);
        for (int k = 0; k < 4; k++) {
            rv_occlusion *occ = feed_buffer(64u << (t % 3), FEED_CAP, FEED_CAP, NULL);
            rvi_occ_feed_set_blocks(occ, sizes[k][0], sizes[k][1]);
            uint64_t s2 = seed;
            feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &s2, &img, depth);
            for (int i = 0; i < 40; i++) {
                if (ref_crosses_near(&sc.new_rv, &obj[i]) || object_visible(occ, &obj[i]))
                    continue;
                culled++;
                assert_false(ref_object_seen(&sc.new_rv, sc.box, sc.n_box, &obj[i], &s2, 6));
            }
            rv_occlusion_destroy(occ);
        }
    }
    assert_true(culled > 0);
    fscene sc;
    wall_scene(&sc, (rv_clip){ 0 }, 1000, 0.3, 0.02);
    uint32_t proven[2];
    for (int k = 0; k < 2; k++) {
        rv_occlusion *occ = feed_buffer(128, 160, 90, NULL);
        if (k == 1)
            rvi_occ_feed_set_blocks(occ, 1, 1);
        feed_scene(occ, &sc, RV_DEPTH_FLOAT32, false, &seed, &img, depth);
        proven[k] = rv_occlusion_get_feed_stats(occ).texels_reprojected;
        rv_occlusion_destroy(occ);
    }
    assert_true(proven[1] >= proven[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_wall_in_the_feed_hides_what_is_behind_it_after_a_small_move),
        cmocka_unit_test(test_every_clip_convention_and_format_gives_the_same_verdicts),
        cmocka_unit_test(test_a_camera_jump_is_ignored_and_counted),
        cmocka_unit_test(test_another_projection_or_an_old_feed_is_ignored),
        cmocka_unit_test(test_sky_and_bad_values_hide_nothing),
        cmocka_unit_test(test_a_missing_sample_breaks_the_plane_on_both_axes),
        cmocka_unit_test(test_a_depth_the_format_cannot_resolve_is_counted_and_hides_nothing),
        cmocka_unit_test(test_an_edge_never_stretches_into_the_wall_behind),
        cmocka_unit_test(test_a_room_seen_through_a_door_for_the_first_time_is_drawn),
        cmocka_unit_test(test_bad_input_gets_a_specific_code_and_changes_nothing),
        cmocka_unit_test(test_desc_checks_the_feed_fields),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_allocation_failures_leave_the_buffer_as_it_was),
        cmocka_unit_test(test_the_frame_feeds_its_main_view),
        cmocka_unit_test(test_portable_and_wide_builds_agree_exactly),
        cmocka_unit_test(test_every_block_size_stays_conservative),
        cmocka_unit_test(test_never_hides_what_the_reference_sees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
