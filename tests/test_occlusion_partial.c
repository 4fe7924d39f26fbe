/* What a texel holds is not all a test knows (suite occlusion). A texel that fails an
 * object on its own single depth may still hide it: the piece that wholly covers the texel
 * is nearer by its planes (a wall seen edge-on hides what lies just behind it, though both
 * span the same depths across the texel), or the pieces that partly cover the texel hold
 * all of the part where the object's image lies (an object just inside a wall's outline,
 * or straddling the edge two triangles share at a corner). Each case is checked against the
 * reference, with a visible twin that must stay drawn; then random slivers and flat boxes
 * just behind random occluders' outlines and grazing faces never cull what the reference
 * sees. With the viewport's pixel grid known (a frame's rv_view.cull_unsampled), a texel
 * hides what no pixel centre in it can show: checked against a reference that casts a
 * ray through every pixel centre (and points a rasteriser's snapping away from it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "occlusion.h"
#include "support/occlusion_ref.h"
#include "support/rvt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 256

/* A buffer that tests finer than a texel (rv_occlusion_desc.fine_tests), or not. */
static rv_occlusion *make_fine(uint32_t width, uint32_t fine)
{
    rv_occlusion_desc desc = { .width = width, .fine_tests = fine };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    return occ;
}

typedef struct quad {
    float pos[4][3];
    uint32_t idx[6];
} quad;

/* An open quad (two triangles, 0-1-2 and 0-2-3) for the library and the reference. */
static void quad_make(quad *q, const float corners[4][3], ref_box *ref)
{
    memcpy(q->pos, corners, sizeof q->pos);
    static const uint32_t idx[6] = { 0, 1, 2, 0, 2, 3 };
    memcpy(q->idx, idx, sizeof idx);
    memset(ref, 0, sizeof *ref);
    ref->kind = REF_MESH;
    ref->positions = (const float (*)[3])q->pos;
    ref->indices = q->idx;
    ref->vertex_count = 4;
    ref->index_count = 6;
    for (int i = 0; i < 3; i++) {
        ref->min[i] = ref->max[i] = corners[0][i];
        for (int k = 1; k < 4; k++) {
            ref->min[i] = fminf(ref->min[i], corners[k][i]);
            ref->max[i] = fmaxf(ref->max[i], corners[k][i]);
        }
    }
    ref_box_init(ref);
}

static void add_mesh(rv_occlusion *occ, const ref_box *b)
{
    rv_occluder_mesh m = { b->positions, b->vertex_count, b->indices, b->index_count, 0 };
    assert_int_equal(rv_occlusion_add_mesh(occ, &m, NULL), RV_OK);
}

static ref_box object(float x0, float y0, float z0, float x1, float y1, float z1)
{
    ref_box o;
    memset(&o, 0, sizeof o);
    float mn[3] = { x0, y0, z0 }, mx[3] = { x1, y1, z1 };
    memcpy(o.min, mn, sizeof mn);
    memcpy(o.max, mx, sizeof mx);
    ref_box_init(&o);
    return o;
}

/* The library's verdict, after the reference's: an object the reference sees must be drawn. */
static bool verdict(rv_occlusion *occ, const ref_view *rv, const ref_box *occluders, int n, const ref_box *obj,
                    bool *seen)
{
    uint64_t seed = 0x9A27;
    *seen = ref_object_seen(rv, occluders, n, obj, &seed, 8);
    bool lib = box_visible(occ, obj->min, obj->max, NULL);
    if (*seen)
        assert_true(lib);
    return lib;
}

/* ---- the covering piece's planes ------------------------------------------------------------ */

/* A wall in the plane x = 1, seen from the origin almost edge-on, and a slab just behind it
 * (x in [1.2, 1.3]) over most of its length: every ray to the slab crosses the wall first,
 * but across a texel both the wall and the slab span tens of units of depth, so no single
 * depth per texel can say so. Each camera yaw moves the texel grid; a slab reaching past
 * the wall's end is drawn. */
static void test_an_edge_on_wall_hides_what_lies_just_behind_it(void **state)
{
    (void)state;
    int hidden = 0, trials = 0, coarse_hidden = 0;
    for (int k = 0; k < 16; k++) {
        double yaw = (k - 8) * 0.004;
        camera cam = look(0, 0, 0, sin(yaw), 0, -cos(yaw));
        float vp[16];
        camera_matrix(&cam, vp);
        ref_view rv;
        ref_view_init(&rv, vp, cam.clip);
        const float corners[4][3] = { { 1, -3, -5 }, { 1, -3, -60 }, { 1, 3, -60 }, { 1, 3, -5 } };
        quad q;
        ref_box wall;
        quad_make(&q, corners, &wall);
        rv_occlusion *occ = make_fine(WIDTH, 1);
        assert_int_equal(rv_occlusion_begin(occ, vp, cam.clip, (float)cam.aspect), RV_OK);
        add_mesh(occ, &wall);
        bool seen;
        ref_box behind = object(1.2f, -2, -50, 1.3f, 2, -10);
        trials++;
        hidden += !verdict(occ, &rv, &wall, 1, &behind, &seen);
        assert_false(seen);
        /* Without fine tests, one depth per texel cannot separate the two. */
        rv_occlusion *coarse = make_fine(WIDTH, 0);
        assert_int_equal(rv_occlusion_begin(coarse, vp, cam.clip, (float)cam.aspect), RV_OK);
        add_mesh(coarse, &wall);
        coarse_hidden += !box_visible(coarse, behind.min, behind.max, NULL);
        rv_occlusion_destroy(coarse);
        ref_box past = object(1.2f, -2, -90, 1.3f, 2, -10); /* seen beyond the wall's far end */
        assert_true(verdict(occ, &rv, &wall, 1, &past, &seen));
        assert_true(seen);
        ref_box front = object(0.8f, -2, -50, 0.9f, 2, -10); /* on the eye's side */
        assert_true(verdict(occ, &rv, &wall, 1, &front, &seen));
        assert_true(seen);
        rv_occlusion_destroy(occ);
    }
    printf("edge-on wall: slab behind hidden in %d of %d views (%d without fine tests)\n", hidden, trials,
           coarse_hidden);
    assert_int_equal(hidden, trials);
    assert_int_equal(coarse_hidden, 0);
}

/* ---- the pieces that partly cover a texel ---------------------------------------------------- */

/* Texel size at depth d for the look() camera (60 degrees, 16:9) at WIDTH texels. */
static double texel_at(double d)
{
    return 2.0 * d * tan(PI / 6) * (16.0 / 9.0) / WIDTH;
}

/* The look() camera at the origin looking down -z, its matrix and its reference view. */
typedef struct front_view {
    camera cam;
    float vp[16];
    ref_view rv;
} front_view;

static front_view front(void)
{
    front_view f;
    f.cam = look(0, 0, 0, 0, 0, -1);
    camera_matrix(&f.cam, f.vp);
    ref_view_init(&f.rv, f.vp, f.cam.clip);
    return f;
}

/* A wall facing the eye whose right edge falls anywhere within a texel column, and an
 * object twice as far whose image ends a quarter texel inside that edge: its last column
 * is one the wall only partly covers, with nothing behind. The wall holds all of the
 * object's part of that texel. The same object reaching a quarter texel past the edge is
 * drawn. */
static void test_an_object_just_inside_an_outline_is_hidden(void **state)
{
    (void)state;
    front_view f = front();
    double t = texel_at(10);
    int hidden = 0;
    for (int k = 0; k < 16; k++) {
        float edge = (float)(1.0 + t * (k + 0.5) / 16.0);
        const float corners[4][3] = { { -2, -2, -10 }, { edge, -2, -10 }, { edge, 2, -10 }, { -2, 2, -10 } };
        quad q;
        ref_box wall;
        quad_make(&q, corners, &wall);
        rv_occlusion *occ = make_fine(WIDTH, 1);
        assert_int_equal(rv_occlusion_begin(occ, f.vp, f.cam.clip, (float)f.cam.aspect), RV_OK);
        add_mesh(occ, &wall);
        bool seen;
        float inside = (float)(2.0 * (edge - 0.25 * t)), outside = (float)(2.0 * (edge + 0.25 * t));
        ref_box in = object(0, -1, -20, inside, 1, -20);
        hidden += !verdict(occ, &f.rv, &wall, 1, &in, &seen);
        assert_false(seen);
        ref_box out = object(0, -1, -20, outside, 1, -20);
        assert_true(verdict(occ, &f.rv, &wall, 1, &out, &seen));
        assert_true(seen);
        rv_occlusion_destroy(occ);
    }
    printf("just inside an outline: hidden at %d of 16 offsets\n", hidden);
    assert_int_equal(hidden, 16);
}

/* A quad declared as two separate triangles sharing its diagonal, and a small flat object
 * twice as far, near the corner the diagonal ends in, straddling the diagonal: the corner's
 * texel is partly covered by each triangle, neither holds all of the object's part of it,
 * both together do. Moved a third of a texel out past the corner, it is drawn. */
static void test_two_triangles_together_hide_what_straddles_their_shared_edge(void **state)
{
    (void)state;
    front_view f = front();
    double t = texel_at(10);
    int hidden = 0;
    for (int k = 0; k < 16; k++) {
        float ex = (float)(1.0 + t * (k % 4 + 0.37) / 4.0), ey = (float)(0.5 + t * (k / 4 + 0.61) / 4.0);
        float p[4][3] = { { -2, -2, -10 }, { ex, -2, -10 }, { ex, ey, -10 }, { -2, ey, -10 } };
        quad qa, qb;
        ref_box tri[2];
        const float a[4][3] = { { p[0][0], p[0][1], p[0][2] }, { p[1][0], p[1][1], p[1][2] },
                                { p[2][0], p[2][1], p[2][2] }, { p[2][0], p[2][1], p[2][2] } };
        const float b[4][3] = { { p[0][0], p[0][1], p[0][2] }, { p[2][0], p[2][1], p[2][2] },
                                { p[3][0], p[3][1], p[3][2] }, { p[3][0], p[3][1], p[3][2] } };
        quad_make(&qa, a, &tri[0]);
        quad_make(&qb, b, &tri[1]);
        tri[0].index_count = tri[1].index_count = 3; /* one triangle each: 0-1-2 */
        rv_occlusion *occ = make_fine(WIDTH, 1);
        assert_int_equal(rv_occlusion_begin(occ, f.vp, f.cam.clip, (float)f.cam.aspect), RV_OK);
        add_mesh(occ, &tri[0]);
        add_mesh(occ, &tri[1]);
        /* Along the diagonal, half a texel in from the corner; a square 0.3 texel across. */
        double dx = ex + 2.0, dy = ey + 2.0, len = sqrt(dx * dx + dy * dy);
        double cx = ex - 0.5 * t * dx / len, cy = ey - 0.5 * t * dy / len, h = 0.15 * t;
        bool seen;
        ref_box in = object((float)(2 * (cx - h)), (float)(2 * (cy - h)), -20, (float)(2 * (cx + h)),
                            (float)(2 * (cy + h)), -20);
        hidden += !verdict(occ, &f.rv, tri, 2, &in, &seen);
        assert_false(seen);
        double ox = ex + 0.33 * t, oy = ey + 0.33 * t;
        ref_box out = object((float)(2 * (ox - h)), (float)(2 * (oy - h)), -20, (float)(2 * (ox + h)),
                             (float)(2 * (oy + h)), -20);
        assert_true(verdict(occ, &f.rv, tri, 2, &out, &seen));
        assert_true(seen);
        rv_occlusion_destroy(occ);
    }
    printf("straddling a shared edge: hidden at %d of 16 offsets\n", hidden);
    assert_int_equal(hidden, 16);
}

/* ---- random slivers along outlines ------------------------------------------------------------ */

/* A random point of occluder quad q's outline (or of its inside when grazing), pushed away
 * from the eye by a factor in [1.0005, 1.5], and a thin or flat box around it. */
static void sliver_behind(uint64_t *s, const camera *cam, const float (*pos)[3], ref_box *obj)
{
    int e = (int)(rvt_next(s) % 4);
    float u = rvt_uniform(s, 0, 1), v = rvt_uniform(s, 0, 1);
    double p[3];
    bool inside = rvt_next(s) % 4 == 0;
    for (int i = 0; i < 3; i++) {
        double a = pos[e][i], b = pos[(e + 1) % 4][i], c = pos[(e + 2) % 4][i];
        p[i] = inside ? a + u * (b - a) + v * (c - b) * 0.9 : a + u * (b - a);
    }
    double f = 1.0005 + 0.5 * pow(rvt_uniform(s, 0, 1), 3);
    for (int i = 0; i < 3; i++)
        p[i] = cam->eye[i] + f * (p[i] - cam->eye[i]);
    double size = 0.02 + 0.5 * rvt_uniform(s, 0, 1);
    memset(obj, 0, sizeof *obj);
    int flat = (int)(rvt_next(s) % 4); /* 3: a thin box; else flat along that axis */
    for (int i = 0; i < 3; i++) {
        double h = i == flat ? 0 : size * rvt_uniform(s, 0.05f, 1);
        obj->min[i] = (float)(p[i] - h);
        obj->max[i] = (float)(p[i] + h);
    }
    ref_box_init(obj);
}

/* A random quad: a wall, a floor or a slanted face, 2 .. 20 units across, often seen at a
 * grazing angle. */
static void random_quad(uint64_t *s, const camera *cam, float pos[4][3])
{
    double fwd[3] = { cam->target[0] - cam->eye[0], cam->target[1] - cam->eye[1], cam->target[2] - cam->eye[2] };
    normalize3(fwd);
    double d = rvt_uniform(s, 2, 30), c[3];
    for (int i = 0; i < 3; i++)
        c[i] = cam->eye[i] + d * fwd[i] + rvt_uniform(s, -0.4f, 0.4f) * d;
    double r[3][3];
    random_rotation(s, r);
    double hu = rvt_uniform(s, 1, 10), hv = rvt_uniform(s, 1, 10);
    static const double sign[4][2] = { { -1, -1 }, { 1, -1 }, { 1, 1 }, { -1, 1 } };
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++)
            pos[k][i] = (float)(c[i] + sign[k][0] * hu * r[0][i] + sign[k][1] * hv * r[1][i]);
}

enum { QUADS = 4, PER_SCENE = 50 };

/* A random camera (perspective, at the given aspect, when aspect > 0) and QUADS random
 * quads before it, for the reference and handed to occ after a begin. */
typedef struct quad_scene {
    camera cam;
    float vp[16];
    ref_view rv;
    quad q[QUADS];
    ref_box occl[QUADS];
    float pos[QUADS][4][3];
} quad_scene;

static void quad_scene_make(uint64_t *seed, rv_occlusion *occ, double aspect, quad_scene *sc)
{
    double dir[3];
    do
        random_camera(seed, &sc->cam, dir);
    while (aspect > 0 && sc->cam.ortho_height > 0);
    if (aspect > 0)
        sc->cam.aspect = aspect;
    camera_matrix(&sc->cam, sc->vp);
    ref_view_init(&sc->rv, sc->vp, sc->cam.clip);
    assert_int_equal(rv_occlusion_begin(occ, sc->vp, sc->cam.clip, (float)sc->cam.aspect), RV_OK);
    for (int k = 0; k < QUADS; k++) {
        random_quad(seed, &sc->cam, sc->pos[k]);
        quad_make(&sc->q[k], (const float (*)[3])sc->pos[k], &sc->occl[k]);
        add_mesh(occ, &sc->occl[k]);
    }
}

static void test_slivers_along_outlines_never_cull_what_the_reference_sees(void **state)
{
    (void)state;
    static const uint32_t widths[3] = { 128, 256, 512 };
    uint64_t seed = 0x51175, objects = 0, culled = 0, false_culls = 0, checked_hidden = 0;
    int trials = RVT_HEAVY(1000000, 100000);
    rv_occlusion *occs[3];
    for (int k = 0; k < 3; k++)
        occs[k] = make_fine(widths[k], 1);
    static quad_scene sc;
    for (int done = 0; done < trials; done += PER_SCENE) {
        rv_occlusion *occ = occs[rvt_next(&seed) % 3];
        quad_scene_make(&seed, occ, 0, &sc);
        for (int i = 0; i < PER_SCENE; i++) {
            ref_box obj;
            sliver_behind(&seed, &sc.cam, (const float (*)[3])sc.pos[rvt_next(&seed) % QUADS], &obj);
            bool lib = box_visible(occ, obj.min, obj.max, NULL);
            objects++;
            if (lib || ref_crosses_near(&sc.rv, &obj))
                continue;
            culled++;
            uint64_t s2 = seed;
            if (ref_object_seen(&sc.rv, sc.occl, QUADS, &obj, &s2, 6)) {
                false_culls++;
                fprintf(stderr, "false cull: scene before seed %llu, object %d\n", (unsigned long long)seed, i);
            } else {
                checked_hidden++;
            }
        }
    }
    for (int k = 0; k < 3; k++)
        rv_occlusion_destroy(occs[k]);
    printf("slivers along outlines: %llu objects, %llu culled (%llu checked hidden), false culls %llu\n",
           (unsigned long long)objects, (unsigned long long)culled, (unsigned long long)checked_hidden,
           (unsigned long long)false_culls);
    assert_int_equal(false_culls, 0);
    assert_true(culled > objects / 50); /* the test reaches culls, not only visible objects */
}

/* ---- pixel centres ----------------------------------------------------------------------- */

/* The viewport of the sampled tests: 5 pixels a texel across at width 256, 16:9. */
#define VIEW_W 1280
#define VIEW_H 720

/* Does a ray through a pixel centre, or a point a rasteriser's snapping may put there
 * (1/32 pixel away each way), reach the object before any occluder? The ray from the eye
 * through the point's NDC position meets the box (ref_box_slab) where it enters; that point
 * is seen when nothing lies between the near plane and it (ref_point_seen: ties are seen).
 * A perspective camera; offsets: 1 (the centre alone) or 3 (3 x 3 points). */
static bool ref_seen_at_pixels(const camera *cam, const ref_view *rv, const ref_box *occl, int n, const ref_box *obj,
                               int offsets, int view_w, int view_h)
{
    /* The object's pixels: its corners' images (all in front of the eye: objects crossing
     * the near plane are not asked about), one pixel more each way. */
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int k = 0; k < 8; k++) {
        double l[3] = { k & 1 ? obj->max[0] : obj->min[0], k & 2 ? obj->max[1] : obj->min[1],
                        k & 4 ? obj->max[2] : obj->min[2] }, c[4];
        for (int r = 0; r < 4; r++)
            c[r] = rv->vp[r] * l[0] + rv->vp[4 + r] * l[1] + rv->vp[8 + r] * l[2] + rv->vp[12 + r];
        if (!(c[3] > 0))
            return true; /* behind the eye: counted as seen */
        double px = 0.5 * view_w * (c[0] / c[3] + 1), py = 0.5 * view_h * (1 - c[1] / c[3]);
        x0 = fmin(x0, px), x1 = fmax(x1, px), y0 = fmin(y0, py), y1 = fmax(y1, py);
    }
    int i0 = (int)fmax(floor(x0) - 1, 0), i1 = (int)fmin(ceil(x1) + 1, view_w - 1);
    int j0 = (int)fmax(floor(y0) - 1, 0), j1 = (int)fmin(ceil(y1) + 1, view_h - 1);
    for (int j = j0; j <= j1; j++)
        for (int i = i0; i <= i1; i++)
            for (int oy = 0; oy < offsets; oy++)
                for (int ox = 0; ox < offsets; ox++) {
                    double dx = offsets > 1 ? (ox - 1) / 32.0 : 0, dy = offsets > 1 ? (oy - 1) / 32.0 : 0;
                    double nx = 2 * (i + 0.5 + dx) / view_w - 1, ny = 1 - 2 * (j + 0.5 + dy) / view_h, h[4];
                    double cn[4] = { nx, ny, 0, 1 };
                    for (int r = 0; r < 4; r++)
                        h[r] = rv->inv[r] * cn[0] + rv->inv[4 + r] * cn[1] + rv->inv[8 + r] * cn[2] + rv->inv[12 + r];
                    double far[3], ta, tb;
                    for (int a = 0; a < 3; a++)
                        far[a] = cam->eye[a] + 1e4 * (h[a] / h[3] - cam->eye[a]);
                    if (!ref_box_slab(obj, cam->eye, far, &ta, &tb))
                        continue;
                    double p[3];
                    for (int a = 0; a < 3; a++)
                        p[a] = cam->eye[a] + fmax(ta, 0) * (far[a] - cam->eye[a]);
                    if (ref_point_seen(rv, occl, n, p))
                        return true;
                }
    return false;
}

/* Random slivers and flat boxes just behind random quads' outlines (the cases above), now
 * with the pixel grid known: every object the library culls is shown at no pixel centre
 * (nor 1/32 pixel from one, in a heavy build), and the grid hides objects the texels alone
 * cannot (a look that never helps fails the suite). The viewports vary: a fraction of a
 * texel's pixels unlike across and down, portrait, smaller than the buffer, and one so large
 * that a texel holds more centres than the look takes. */
static void test_pixel_centres_never_cull_what_the_reference_sees(void **state)
{
    (void)state;
    static const int views[9][2] = { { 1280, 720 }, { 1000, 561 }, { 333, 777 },  { 100, 57 },  { 1917, 1079 },
                                     { 257, 143 },  { 77, 311 },   { 3840, 2160 }, { 6000, 3000 } };
    uint64_t seed = 0x9C51, objects = 0, culled = 0, only_by_centres = 0, false_culls = 0;
    int trials = RVT_HEAVY(200000, 20000), offsets = RVT_HEAVY(3, 1);
    rv_occlusion *occ = make_fine(WIDTH, 2);
    static quad_scene sc;
    for (int done = 0; done < trials; done += PER_SCENE) {
        const int *view = views[rvt_next(&seed) % 9];
        /* pixel centres are looked at in perspective views */
        quad_scene_make(&seed, occ, (double)view[0] / view[1], &sc);
        for (int i = 0; i < PER_SCENE; i++) {
            ref_box obj;
            sliver_behind(&seed, &sc.cam, (const float (*)[3])sc.pos[rvt_next(&seed) % QUADS], &obj);
            rvi_occ_set_samples(occ, 0, 0);
            bool texels = box_visible(occ, obj.min, obj.max, NULL);
            rvi_occ_set_samples(occ, (uint32_t)view[0], (uint32_t)view[1]);
            bool lib = box_visible(occ, obj.min, obj.max, NULL);
            objects++;
            if (lib || ref_crosses_near(&sc.rv, &obj))
                continue;
            culled++;
            only_by_centres += texels;
            if (ref_seen_at_pixels(&sc.cam, &sc.rv, sc.occl, QUADS, &obj, offsets, view[0], view[1])) {
                false_culls++;
                fprintf(stderr, "false cull: scene before seed %llu, object %d\n", (unsigned long long)seed, i);
            }
        }
    }
    rv_occlusion_destroy(occ);
    printf("pixel centres: %llu objects, %llu culled (%llu only thanks to the pixel grid), false culls %llu\n",
           (unsigned long long)objects, (unsigned long long)culled, (unsigned long long)only_by_centres,
           (unsigned long long)false_culls);
    assert_int_equal(false_culls, 0);
    assert_true(only_by_centres > 0);
}

/* A wall facing the camera (z = -10) and a panel behind it (z = -12) whose image reaches a
 * tenth of a pixel below the wall's lower edge, between two rows of pixel centres: the
 * texels along that edge hold the wall only in part, and the panel's part there reaches
 * beyond it, so every texel-wide look draws the panel; at pixel centres the wall hides it
 * wherever it shows. The same panel reaching a third of a pixel further, onto the next row
 * of centres, stays drawn. Sixteen sideways shifts move the texel grid under both. */
static void test_a_sliver_between_pixel_centres_is_hidden(void **state)
{
    (void)state;
    rv_occlusion *occ = make_fine(WIDTH, 2);
    int hidden_by_texels = 0, hidden_by_centres = 0;
    for (int k = 0; k < 16; k++) {
        double shift = 0.137 * k;
        camera cam = look(shift, 0, 0, shift, 0, -1);
        cam.aspect = (double)VIEW_W / VIEW_H;
        float vp[16];
        camera_matrix(&cam, vp);
        ref_view rv;
        ref_view_init(&rv, vp, cam.clip);
        /* World y at pixel row r (y down) and depth d, for this camera. */
#define ROW_Y(r, d) ((1 - 2 * (r) / VIEW_H) * (d) / vp[5])
        float wall_low = (float)ROW_Y(400.2, 10.0), top = (float)ROW_Y(300.0, 10.0);
        const float wall[4][3] = { { (float)shift - 4, wall_low, -10 }, { (float)shift + 4, wall_low, -10 },
                                   { (float)shift + 4, top, -10 }, { (float)shift - 4, top, -10 } };
        quad q;
        ref_box occl;
        quad_make(&q, wall, &occl);
        ref_box panel = object((float)shift - 2, (float)ROW_Y(400.3, 12.0), -12, (float)shift + 2, (float)ROW_Y(350.0, 12.0), -12);
        ref_box lower = object((float)shift - 2, (float)ROW_Y(400.6, 12.0), -12, (float)shift + 2, (float)ROW_Y(350.0, 12.0), -12);
#undef ROW_Y
        assert_int_equal(rv_occlusion_begin(occ, vp, cam.clip, (float)cam.aspect), RV_OK);
        add_mesh(occ, &occl);
        assert_false(ref_seen_at_pixels(&cam, &rv, &occl, 1, &panel, 3, VIEW_W, VIEW_H));
        assert_true(ref_seen_at_pixels(&cam, &rv, &occl, 1, &lower, 1, VIEW_W, VIEW_H));
        rvi_occ_set_samples(occ, 0, 0);
        hidden_by_texels += !box_visible(occ, panel.min, panel.max, NULL);
        rvi_occ_set_samples(occ, VIEW_W, VIEW_H);
        hidden_by_centres += !box_visible(occ, panel.min, panel.max, NULL);
        assert_true(box_visible(occ, lower.min, lower.max, NULL));
    }
    rv_occlusion_destroy(occ);
    assert_int_equal(hidden_by_texels, 0);
    assert_int_equal(hidden_by_centres, 16);
}

/* The same wall and panel in a world: its frame hides the panel when the view samples pixel
 * centres (rv_view.cull_unsampled) and fine_tests is 2, and draws it with either off. */
static void test_a_frame_judges_at_pixel_centres_when_told_so(void **state)
{
    (void)state;
    camera cam = look(0, 0, 0, 0, 0, -1);
    cam.aspect = (double)VIEW_W / VIEW_H;
    float vp[16], eye[3] = { 0, 0, 0 };
    camera_matrix(&cam, vp);
#define ROW_Y(r, d) ((float)((1 - 2 * (r) / VIEW_H) * (d) / vp[5]))
    const float wall[4][3] = { { -4, ROW_Y(400.2, 10.0), -10 }, { 4, ROW_Y(400.2, 10.0), -10 },
                               { 4, ROW_Y(300.0, 10.0), -10 }, { -4, ROW_Y(300.0, 10.0), -10 } };
    const float pmin[3] = { -2, ROW_Y(400.3, 12.0), -12 }, pmax[3] = { 2, ROW_Y(350.0, 12.0), -12 };
#undef ROW_Y
    static const uint32_t idx[6] = { 0, 1, 2, 0, 2, 3 };
    for (uint32_t fine = 1; fine <= 2; fine++)
        for (int sampled = 0; sampled <= 1; sampled++) {
            rv_world_desc wd = { 0 };
            wd.occlusion.width = WIDTH;
            wd.occlusion.fine_tests = fine;
            rv_world *world = NULL;
            assert_int_equal(rv_world_create(&wd, &world), RV_OK);
            rv_node occluder, panel;
            assert_int_equal(rv_node_create(world, RV_NODE_NONE, &occluder), RV_OK);
            rv_occluder_mesh mesh = { wall, 4, idx, 6, 0 };
            assert_int_equal(rv_node_set_occluder_mesh(world, occluder, &mesh), RV_OK);
            assert_int_equal(rv_node_create(world, RV_NODE_NONE, &panel), RV_OK);
            float centre[3] = { 0, 0.5f * (pmin[1] + pmax[1]), -12 };
            assert_int_equal(rv_node_set_bounds(world, panel, centre, 2.5f), RV_OK);
            assert_int_equal(rv_node_set_test_box(world, panel, pmin, pmax), RV_OK);
            rv_view view = { .view_projection = vp, .eye = eye, .clip = cam.clip, .viewport_width = VIEW_W,
                             .viewport_height = VIEW_H, .cull_unsampled = sampled != 0 };
            rv_frame_view out;
            assert_int_equal(rv_frame(world, &view, &out), RV_OK);
            bool hidden = fine == 2 && sampled;
            assert_int_equal(out.counts.occlusion_culled, hidden ? 1 : 0);
            assert_int_equal(out.opaque_count, hidden ? 0 : 1);
            rv_world_destroy(world);
        }
}

/* fine_tests takes 0, 1 or 2 and fusion an rv_fusion: anything else is refused, and
 * nothing is made. */
static void test_fine_tests_and_fusion_refuse_other_values(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        rv_occlusion_desc desc = { .width = 64 };
        if (which)
            desc.fusion = (rv_fusion)3;
        else
            desc.fine_tests = 3;
        rv_occlusion *occ = (rv_occlusion *)&desc; /* a value the call must not touch on failure */
        assert_int_equal(rv_occlusion_create(&desc, &occ), RV_ERR_INVALID_ARG);
        assert_ptr_equal(occ, (rv_occlusion *)&desc);
        rv_world_desc wd = { 0 };
        wd.occlusion.width = 64;
        if (which)
            wd.occlusion.fusion = (rv_fusion)7;
        else
            wd.occlusion.fine_tests = 7;
        rv_world *world = NULL;
        assert_int_equal(rv_world_create(&wd, &world), RV_ERR_INVALID_ARG);
        assert_null(world);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_edge_on_wall_hides_what_lies_just_behind_it),
        cmocka_unit_test(test_an_object_just_inside_an_outline_is_hidden),
        cmocka_unit_test(test_two_triangles_together_hide_what_straddles_their_shared_edge),
        cmocka_unit_test(test_slivers_along_outlines_never_cull_what_the_reference_sees),
        cmocka_unit_test(test_pixel_centres_never_cull_what_the_reference_sees),
        cmocka_unit_test(test_a_sliver_between_pixel_centres_is_hidden),
        cmocka_unit_test(test_a_frame_judges_at_pixel_centres_when_told_so),
        cmocka_unit_test(test_fine_tests_and_fusion_refuse_other_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
