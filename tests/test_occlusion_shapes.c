/* Convex and mesh occluders (suite occlusion): each shape, and random mixes of boxes, convex
 * solids and meshes (many built to share faces and edges, some with gaps between), against
 * the reference (support/occlusion_ref.c: rays to sample points of each object against every
 * occluder surface, exactly); the depth each shape keeps (far side, an exact solid's entry
 * side, an open mesh's own surface); near-plane crossing; clip conventions; stats of skipped,
 * hidden and degenerate triangles; allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "occlusion.h"
#include "support/occlusion_ref.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OCC 12
#define MAX_VERTS 64
#define MAX_INDICES 300

/* ---- shapes ------------------------------------------------------------------------------- */

typedef enum shape_kind { SHAPE_BOX = 0, SHAPE_CONVEX, SHAPE_CLOSED_MESH, SHAPE_OPEN_MESH, SHAPE_KINDS } shape_kind;

typedef struct scene {
    camera cam;
    float vp[16];
    ref_view rv;
    ref_box occ[MAX_OCC];
    int n_occ;
    double fwd[3];
    float pos[MAX_OCC][MAX_VERTS][3];
    uint32_t idx[MAX_OCC][MAX_INDICES];
} scene;

/* A box's planes (outward normals, n . p <= d). */
static uint32_t box_planes(const float mn[3], const float mx[3], float planes[][4])
{
    for (int a = 0; a < 3; a++) {
        float lo[4] = { 0, 0, 0, -mn[a] }, hi[4] = { 0, 0, 0, mx[a] };
        lo[a] = -1;
        hi[a] = 1;
        memcpy(planes[2 * a], lo, sizeof lo);
        memcpy(planes[2 * a + 1], hi, sizeof hi);
    }
    return 6;
}

/* A convex solid: the box's planes, then up to four planes cutting corners off (each keeps
 * the centre) and sometimes a bevel touching a corner (it changes nothing). */
static void make_convex(uint64_t *s, ref_box *b)
{
    b->kind = REF_CONVEX;
    b->plane_count = box_planes(b->min, b->max, b->planes);
    int cuts = (int)(rvt_next(s) % 5);
    double c[3], h[3];
    for (int i = 0; i < 3; i++) {
        c[i] = 0.5 * ((double)b->min[i] + b->max[i]);
        h[i] = 0.5 * ((double)b->max[i] - b->min[i]);
    }
    for (int k = 0; k < cuts + 1 && b->plane_count < REF_MAX_PLANES; k++) {
        double n[3] = { rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1) };
        double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (len < 1e-3)
            continue;
        double reach = fabs(n[0]) * h[0] + fabs(n[1]) * h[1] + fabs(n[2]) * h[2];
        double at = n[0] * c[0] + n[1] * c[1] + n[2] * c[2];
        bool bevel = k == cuts; /* the last one only touches */
        if (bevel && rvt_uniform(s, 0, 1) < 0.5)
            continue;
        double d = at + reach * (bevel ? 1.0 : rvt_uniform(s, 0.35f, 0.95f));
        float *p = b->planes[b->plane_count++];
        p[0] = (float)n[0];
        p[1] = (float)n[1];
        p[2] = (float)n[2];
        p[3] = (float)d;
    }
    if (rvt_uniform(s, 0, 1) < 0.5)
        b->flags = RV_OCCLUDER_EXACT;
}

/* A closed box mesh, each face split into n x n quads (corners shared along the box's
 * edges), wound counter-clockwise seen from outside. */
static void make_closed_mesh(uint64_t *s, ref_box *b, float (*pos)[3], uint32_t *idx)
{
    int n = 1 + (int)(rvt_next(s) % 2);
    uint32_t ni, nv = ref_lattice_box(b->min, b->max, n, pos, idx, &ni);
    /* With n = 2, sometimes one face's centre moves: inward (a dent: no longer convex, drawn
     * triangle by triangle) or outward (a pyramid: still convex, drawn as one solid). */
    if (n == 2 && rvt_next(s) % 3) {
        int a = (int)(rvt_next(s) % 3), side = (int)(rvt_next(s) % 2);
        float depth = (b->max[a] - b->min[a]) * rvt_uniform(s, 0.05f, 0.45f), out = side ? 1.0f : -1.0f;
        float plane = side ? b->max[a] : b->min[a], move = rvt_next(s) % 2 ? out * depth : -out * depth;
        for (uint32_t k = 0; k < nv; k++) { /* the face's centre: on its plane, inside on both other axes */
            int u = (a + 1) % 3, v = (a + 2) % 3;
            if (pos[k][a] == plane && pos[k][u] > b->min[u] && pos[k][u] < b->max[u] && pos[k][v] > b->min[v] &&
                pos[k][v] < b->max[v])
                pos[k][a] += move;
        }
        for (uint32_t k = 0; k < nv; k++) /* the bounds grow with a pyramid */
            for (int i = 0; i < 3; i++) {
                b->min[i] = fminf(b->min[i], pos[k][i]);
                b->max[i] = fmaxf(b->max[i], pos[k][i]);
            }
    }
    b->kind = REF_MESH;
    b->positions = (const float (*)[3])pos;
    b->indices = idx;
    b->vertex_count = nv;
    b->index_count = ni;
    b->flags = RV_OCCLUDER_CLOSED | (rvt_uniform(s, 0, 1) < 0.5 ? RV_OCCLUDER_EXACT : 0);
}

/* An open mesh: a bumpy nx x ny grid in the box's xy extent (z within the box), some quads
 * left out (holes), sometimes a single triangle. */
static void make_open_mesh(uint64_t *s, ref_box *b, float (*pos)[3], uint32_t *idx)
{
    int nx = 1 + (int)(rvt_next(s) % 5), ny = 1 + (int)(rvt_next(s) % 4);
    uint32_t nv = 0, ni = 0;
    for (int y = 0; y <= ny; y++)
        for (int x = 0; x <= nx; x++) {
            pos[nv][0] = b->min[0] + (b->max[0] - b->min[0]) * (float)x / (float)nx;
            pos[nv][1] = b->min[1] + (b->max[1] - b->min[1]) * (float)y / (float)ny;
            pos[nv][2] = b->min[2] + (b->max[2] - b->min[2]) * rvt_uniform(s, 0, 1);
            nv++;
        }
    float holes = rvt_uniform(s, 0, 1) < 0.3f ? 0.25f : 0;
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            if (rvt_uniform(s, 0, 1) < holes)
                continue;
            uint32_t a = (uint32_t)(y * (nx + 1) + x), c = a + (uint32_t)nx + 1;
            uint32_t t[6] = { a, a + 1, c + 1, a, c + 1, c };
            if (rvt_next(s) % 2) { /* the other diagonal */
                uint32_t u[6] = { a, a + 1, c, a + 1, c + 1, c };
                memcpy(t, u, sizeof t);
            }
            memcpy(idx + ni, t, sizeof t);
            ni += 6;
        }
    if (ni == 0 || rvt_uniform(s, 0, 1) < 0.1f) {
        uint32_t t[3] = { 0, (uint32_t)nx, nv - 1 };
        memcpy(idx, t, sizeof t);
        ni = 3;
    }
    b->kind = REF_MESH;
    b->positions = (const float (*)[3])pos;
    b->indices = idx;
    b->vertex_count = nv;
    b->index_count = ni;
    b->flags = 0;
}

/* Turns b (its min, max and matrix set) into a shape of the given kind. */
static void make_shape(uint64_t *s, scene *sc, int k, shape_kind kind)
{
    ref_box *b = &sc->occ[k];
    b->kind = REF_BOX;
    b->flags = 0;
    if (kind == SHAPE_CONVEX)
        make_convex(s, b);
    else if (kind == SHAPE_CLOSED_MESH)
        make_closed_mesh(s, b, sc->pos[k], sc->idx[k]);
    else if (kind == SHAPE_OPEN_MESH)
        make_open_mesh(s, b, sc->pos[k], sc->idx[k]);
}

static rv_result add_shape(rv_occlusion *occ, const ref_box *b)
{
    const float *m = b->has_matrix ? b->matrix : NULL;
    if (b->kind == REF_CONVEX) {
        rv_occluder_convex c = { (const float (*)[4])b->planes, b->plane_count, b->flags };
        return rv_occlusion_add_convex(occ, &c, m);
    }
    if (b->kind == REF_MESH) {
        rv_occluder_mesh mesh = { b->positions, b->vertex_count, b->indices, b->index_count, b->flags };
        return rv_occlusion_add_mesh(occ, &mesh, m);
    }
    return rv_occlusion_add_occluder(occ, b->min, b->max, m);
}

/* ---- scenes --------------------------------------------------------------------------------- */

/* The scene's random camera (random_camera), its matrix and its reference view. */
static void scene_camera(uint64_t *s, scene *sc)
{
    camera *c = &sc->cam;
    double dir[3];
    random_camera(s, c, dir);
    camera_matrix(c, sc->vp);
    ref_view_init(&sc->rv, sc->vp, c->clip);
    memcpy(sc->fwd, dir, sizeof dir);
}

/* A point d ahead of the eye, offset a, b across the view (in units of the view's spread). */
static void ahead(const scene *sc, double d, double a, double b, double out[3])
{
    const camera *c = &sc->cam;
    double up[3] = { 0, 1, 0 }, side[3], top[3];
    cross3(sc->fwd, up, side);
    normalize3(side);
    cross3(side, sc->fwd, top);
    double spread = c->ortho_height > 0 ? c->ortho_height / 2 : d * tan(c->fov_y / 2);
    for (int i = 0; i < 3; i++)
        out[i] = c->eye[i] + d * sc->fwd[i] + a * spread * side[i] + b * spread * top[i];
}

/* Sometimes a mirror: one column of b's matrix negated (a negative determinant, as an engine's
 * mirrored instance has). The local shape is unchanged, so a closed mesh's winding is then
 * reversed in the world. */
static void maybe_mirror(uint64_t *s, ref_box *b)
{
    if (!b->has_matrix || rvt_uniform(s, 0, 1) >= 0.3f)
        return;
    int col = (int)(rvt_next(s) % 3);
    for (int i = 0; i < 3; i++)
        b->matrix[4 * col + i] = -b->matrix[4 * col + i];
    ref_box_init(b);
}

static shape_kind pick_kind(uint64_t *s, int only)
{
    return only >= 0 ? (shape_kind)only : (shape_kind)(rvt_next(s) % SHAPE_KINDS);
}

/* One occluder of a random kind (only >= 0: that kind) somewhere ahead. */
static void random_occluder(uint64_t *s, scene *sc, int only)
{
    int k = sc->n_occ++;
    bool crossing = rvt_uniform(s, 0, 1) < 0.1f;
    double d = crossing ? rvt_uniform(s, -1, 2) : rvt_uniform(s, 2, 30), centre[3], h[3];
    ahead(sc, d, rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1), centre);
    for (int i = 0; i < 3; i++)
        h[i] = rvt_uniform(s, 0.1f, crossing ? 8.0f : 6.0f);
    shape_kind kind = pick_kind(s, only);
    if (kind == SHAPE_BOX && rvt_uniform(s, 0, 1) < 0.1f)
        h[rvt_next(s) % 3] = 0; /* a flat box: a quad */
    place_box(s, &sc->occ[k], centre, h, rvt_uniform(s, 0, 1) < 0.5f);
    maybe_mirror(s, &sc->occ[k]);
    make_shape(s, sc, k, kind);
    ref_box_init(&sc->occ[k]); /* a shape may reach beyond the box */
}

/* A wall split into two to four pieces along one local axis, sharing faces exactly (the
 * split coordinates are the same floats on both sides) or, sometimes, with a gap; every
 * piece of a random kind, all under one matrix. */
static void split_wall(uint64_t *s, scene *sc, int only)
{
    int pieces = 2 + (int)(rvt_next(s) % 3);
    if (sc->n_occ + pieces > MAX_OCC)
        return;
    double centre[3], h[3];
    ahead(sc, rvt_uniform(s, 3, 25), rvt_uniform(s, -0.7f, 0.7f), rvt_uniform(s, -0.7f, 0.7f), centre);
    for (int i = 0; i < 3; i++)
        h[i] = rvt_uniform(s, 0.5f, 6);
    h[rvt_next(s) % 3] = rvt_uniform(s, 0.05f, 1); /* thin across */
    ref_box whole;
    place_box(s, &whole, centre, h, rvt_uniform(s, 0, 1) < 0.6f);
    maybe_mirror(s, &whole);
    int axis = (int)(rvt_next(s) % 3);
    float gap = rvt_uniform(s, 0, 1) < 0.3f ? (whole.max[axis] - whole.min[axis]) * rvt_uniform(s, 1e-4f, 0.02f) : 0;
    float cut[5];
    cut[0] = whole.min[axis];
    cut[pieces] = whole.max[axis];
    for (int p = 1; p < pieces; p++)
        cut[p] = whole.min[axis] + (whole.max[axis] - whole.min[axis]) * (float)p / (float)pieces;
    for (int p = 0; p < pieces; p++) {
        int k = sc->n_occ++;
        ref_box *b = &sc->occ[k];
        *b = whole;
        b->min[axis] = cut[p] + (p ? gap : 0);
        b->max[axis] = cut[p + 1];
        if (b->min[axis] > b->max[axis])
            b->min[axis] = b->max[axis];
        ref_box_init(b);
        shape_kind kind = pick_kind(s, only);
        if (kind == SHAPE_OPEN_MESH) /* a slab's front face as a surface */
            b->min[2] = b->max[2];
        make_shape(s, sc, k, kind);
        ref_box_init(b);
    }
}

static void random_scene(uint64_t *s, scene *sc, int only)
{
    scene_camera(s, sc);
    sc->n_occ = 0;
    int walls = (int)(rvt_next(s) % 3);
    for (int w = 0; w < walls; w++)
        split_wall(s, sc, only);
    int extra = 1 + (int)(rvt_next(s) % 4);
    for (int e = 0; e < extra && sc->n_occ < MAX_OCC; e++)
        random_occluder(s, sc, only);
}

static rv_occlusion *scene_occlusion(const scene *sc, uint32_t width)
{
    rv_occlusion *occ = make_occlusion(width);
    assert_int_equal(rv_occlusion_begin(occ, sc->vp, sc->cam.clip, (float)sc->cam.aspect), RV_OK);
    for (int k = 0; k < sc->n_occ; k++)
        assert_int_equal(add_shape(occ, &sc->occ[k]), RV_OK);
    return occ;
}

/* An object somewhere behind, beside or around one of the occluders. */
static void random_object(uint64_t *s, const scene *sc, ref_box *obj)
{
    const ref_box *o = &sc->occ[rvt_next(s) % (uint64_t)sc->n_occ];
    place_object_near(s, o, &sc->cam, sc->fwd, obj, true);
}

/* ---- against the reference ----------------------------------------------------------------- */

typedef struct tally {
    uint64_t objects, culled, checked, hidden, culled_hidden, false_culls, near_cross;
} tally;

/* trials objects in scenes of the given kind (-1: any mix); every culled object is checked
 * against the reference, and every 8th object besides for the efficiency figure. */
static tally against_reference(uint64_t seed, int only, int trials, int grid)
{
    static const uint32_t widths[4] = { 64, 128, 256, 512 };
    enum { PER_SCENE = 100 };
    tally t = { 0 };
    scene *sc = malloc(sizeof *sc);
    for (int done = 0; done < trials; done += PER_SCENE) {
        random_scene(&seed, sc, only);
        rvt_fine_tests = (uint32_t)(done / PER_SCENE) & 1; /* every other scene tests finer than a texel */
        /* one in four fuses nothing, finer or not */
        rvt_fusion = (uint32_t)(done / PER_SCENE) % 8 >= 6 ? RV_FUSION_OFF : RV_FUSION_AUTO;
        rv_occlusion *occ = scene_occlusion(sc, widths[rvt_next(&seed) % 4]);
        rvt_fine_tests = 0;
        rvt_fusion = RV_FUSION_AUTO;
        for (int i = 0; i < PER_SCENE; i++) {
            ref_box obj;
            random_object(&seed, sc, &obj);
            bool lib = box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL);
            t.objects++;
            t.near_cross += ref_crosses_near(&sc->rv, &obj);
            t.culled += !lib;
            if (lib && i % 8)
                continue;
            bool seen = ref_object_seen(&sc->rv, sc->occ, sc->n_occ, &obj, &seed, grid);
            if (!seen && !ref_object_seen(&sc->rv, NULL, 0, &obj, &seed, grid))
                continue; /* outside the view volume: frustum culling's business */
            if (i % 8 == 0) {
                t.checked++;
                t.hidden += !seen;
                t.culled_hidden += !seen && !lib;
            }
            if (seen && !lib) {
                t.false_culls++;
                fprintf(stderr, "false cull: scene seed %llu object %d kind %d\n", (unsigned long long)seed, i, only);
            }
        }
        /* A texel fusion raised holds an occluder depth, and counts once however often it
         * was raised (a seam, then a nearer piece's test). */
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        assert_true(st.fused_texels <= st.texels_covered);
        rv_occlusion_destroy(occ);
    }
    free(sc);
    return t;
}

static void report(const char *what, const tally *t)
{
    double efficiency = t->hidden ? (double)t->culled_hidden / (double)t->hidden : 0;
    printf("%s: %llu objects, %llu culled, %llu near-crossing; of %llu sampled in view %llu hidden by the "
           "reference, cull_efficiency %.3f; false culls %llu\n",
           what, (unsigned long long)t->objects, (unsigned long long)t->culled, (unsigned long long)t->near_cross,
           (unsigned long long)t->checked, (unsigned long long)t->hidden, efficiency,
           (unsigned long long)t->false_culls);
}

static void test_each_shape_against_the_reference(void **state)
{
    (void)state;
    static const char *const name[SHAPE_KINDS] = { "boxes", "convex solids", "closed meshes", "open meshes" };
    for (int kind = 0; kind < SHAPE_KINDS; kind++) {
        tally t = against_reference(0x5A9E + (uint64_t)kind, kind, RVT_HEAVY(100000, 10000), 4);
        report(name[kind], &t);
        assert_int_equal(t.false_culls, 0);
        assert_true(t.hidden > t.checked / 10);
        assert_true(t.culled_hidden * 2 >= t.hidden); /* culls at least half of what is hidden */
    }
}

static void test_mixed_shapes_never_cull_what_the_reference_sees(void **state)
{
    (void)state;
    tally t = against_reference(0xF05E, -1, RVT_HEAVY(1000000, 100000), RVT_HEAVY(3, 3));
    report("mixed shapes", &t);
    assert_int_equal(t.false_culls, 0);
    assert_true(t.culled_hidden * 2 >= t.hidden);
}

/* ---- the depth each shape keeps ------------------------------------------------------------ */

/* One solid under test in six forms: a box, a convex solid with and without EXACT, a closed
 * mesh with and without EXACT, and its face toward +z (local) alone as an open surface. */
enum { FORM_BOX, FORM_CONVEX, FORM_EXACT_CONVEX, FORM_CLOSED, FORM_EXACT_CLOSED, FORM_SURFACE, FORMS };
static const char *const FORM_NAME[FORMS] = { "box", "convex", "exact convex", "closed mesh", "exact closed mesh",
                                              "open surface" };

/* Cube corners: corner k has max[i] where bit i of k is set; twelve triangles wound
 * counter-clockwise seen from outside. */
static const uint32_t CUBE_INDICES[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                           2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };
static const uint32_t TOP_INDICES[6] = { 4, 5, 7, 4, 7, 6 }; /* the +z face */

/* b (min, max, matrix, has_matrix set) in the given form; pos holds the mesh corners. */
static void make_form(ref_box *b, int form, float (*pos)[3])
{
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 3; i++)
            pos[k][i] = (k >> i) & 1 ? b->max[i] : b->min[i];
    b->kind = form == FORM_BOX ? REF_BOX : form <= FORM_EXACT_CONVEX ? REF_CONVEX : REF_MESH;
    b->flags = form == FORM_EXACT_CONVEX ? RV_OCCLUDER_EXACT
               : form == FORM_CLOSED     ? RV_OCCLUDER_CLOSED
               : form == FORM_EXACT_CLOSED ? RV_OCCLUDER_CLOSED | RV_OCCLUDER_EXACT
                                           : 0;
    if (b->kind == REF_CONVEX)
        b->plane_count = box_planes(b->min, b->max, b->planes);
    b->positions = (const float (*)[3])pos;
    b->vertex_count = 8;
    b->indices = form == FORM_SURFACE ? TOP_INDICES : CUBE_INDICES;
    b->index_count = form == FORM_SURFACE ? 6 : 36;
    ref_box_init(b);
}

static ref_box flat_box(float x0, float y0, float z0, float x1, float y1, float z1)
{
    ref_box b = { .min = { x0, y0, z0 }, .max = { x1, y1, z1 } };
    ref_box_init(&b);
    return b;
}

/* Four objects around a slab 1 m thick whose front (+z) face is 10 m ahead: inside it, on
 * its front face, on its back face (outside), and behind it. */
static void slab_objects(ref_box out[4])
{
    out[0] = flat_box(-0.5f, -0.5f, -10.8f, 0.5f, 0.5f, -10.2f);
    out[1] = flat_box(-0.5f, -0.5f, -10, 0.5f, 0.5f, -10);
    out[2] = flat_box(-0.5f, -0.5f, -11, 0.5f, 0.5f, -11);
    out[3] = flat_box(-0.5f, -0.5f, -14, 0.5f, 0.5f, -12);
}

/* The slab (one occluder) alone in a buffer seen by camera c: each of slab_objects' four is
 * visible or hidden as expect says, and the reference sees nothing of those hidden. what
 * names the case in a failure's message. */
static void check_slab(const camera *c, const ref_view *rv, const ref_box *slab, const ref_box objects[4],
                       const int expect[4], uint64_t *seed, const char *what)
{
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, c);
    assert_int_equal(add_shape(occ, slab), RV_OK);
    for (int o = 0; o < 4; o++) {
        bool lib = box_visible(occ, objects[o].min, objects[o].max, NULL);
        if (lib != (expect[o] != 0))
            fprintf(stderr, "%s, object %d: visible %d\n", what, o, lib);
        assert_int_equal(lib, expect[o] != 0);
        if (!lib) /* the reference agrees that nothing of it is seen */
            assert_false(ref_object_seen(rv, slab, 1, &objects[o], seed, 6));
    }
    rv_occlusion_destroy(occ);
}

/* Two thin convex solids written far from their local origin (a fresh user's random brushes,
 * minimised), each with an object a ray from the eye reaches past the solid (checked in
 * exact rational arithmetic): their corners, merged within a part in 1e7 of that distance,
 * drew a silhouette past the solid and hid the object. Such a solid is drawn as nothing. The
 * first one moved to its local origin (its planes' d and the matrix's translation moved in
 * double) is drawn, and still leaves the object visible. */
typedef struct far_solid {
    float planes[7][4];
    uint32_t plane_count;
    float matrix[16], view_projection[16], min[3], max[3], aspect;
    uint32_t width, fine_tests;
    rv_clip clip;
} far_solid;

static const far_solid far_solids[2] = {
    { { { -0x1.2245d4p-21f, -0x1.dda26ep-18f, 0x1p+0f, 0x1.87de14p+12f },
        { 0x1.e1baecp-2f, -0x1.c27376p-1f, -0x1.17a4e4p-4f, 0x1.34a36cp+15f },
        { 0x0p+0f, -0x1p+0f, 0x0p+0f, -0x1.e852f4p+12f },
        { 0x0p+0f, 0x0p+0f, 0x1p+0f, 0x1.87dfd4p+12f },
        { 0x0p+0f, 0x0p+0f, -0x1p+0f, -0x1.87de3cp+12f },
        { -0x1p+0f, 0x0p+0f, 0x0p+0f, -0x1.84a74ap+16f },
        { 0x0p+0f, 0x1p+0f, 0x0p+0f, 0x1.e85308p+12f } },
      7,
      { -0x1.64e9b2p-1f, -0x1.ba90f2p-2f, -0x1.24e6a8p-1f, 0, -0x1.6f0a46p-1f, 0x1.a060d8p-2f, 0x1.21f86ap-1f, 0,
        -0x1.8e5782p-7f, 0x1.9c1c4ap-1f, -0x1.2fc294p-1f, 0, 0x1.25178cp+16f, 0x1.0fb9dep+15f, 0x1.b7365p+15f, 1 },
      { -0x1.38cb0ap-1f, -0x1.234066p-4f, -0x1.1de74ep-1f, -0x1.1d711ep-1f, 0x1.4229b8p-5f, -0x1.b7358ap+0f,
        -0x1.58c54ep-8f, -0x1.5836c8p-8f, 0x1.a3ddb2p-2f, 0x1.e01c18p-5f, -0x1.a9ba72p-1f, -0x1.a90a74p-1f,
        -0x1.6e0da6p+2f, 0x1.15529p+2f, 0x1.c63d9cp+3f, 0x1.cfd786p+3f },
      { -0x1.235178p+3f, 0x1.080e2ep+1f, -0x1.18e09ep+1f },
      { -0x1.22d8cp+3f, 0x1.0a50b4p+1f, -0x1.15063ap+1f },
      0x1.2a79bcp+1f, 512, 1, { false, false } },
    { { { -0x1.7f6bfep-3f, 0x1.f66988p-1f, -0x1.7302cp-5f, -0x1.7fa47ap+11f },
        { 0x0p+0f, 0x0p+0f, 0x1.6ac652p+2f, 0x1.6a9d24p+15f },
        { 0x1.400e78p-1f, -0x1.09105cp-3f, 0x1.8a1a32p-1f, 0x1.36f8dep+13f },
        { -0x1.b3abf4p-11f, -0x1.3a7926p-12f, -0x1.fffff2p-1f, -0x1.00034p+13f },
        { -0x1.f7c9f2p-1f, -0x1.770a5ep-5f, 0x1.611328p-3f, -0x1.e7d4eap+11f } },
      5,
      { 0x1.4ee262p+0f, -0x1.ef61b6p-1f, 0x1.127d72p+0f, 0, -0x1.7c745cp+0f, -0x1.3c645ep+1f, -0x1.ab5c66p-2f, 0,
        0x1.50b3d4p-1f, -0x1.cdf1acp-3f, -0x1.017f76p+0f, 0, -0x1.d78134p+13f, 0x1.6ea508p+11f, 0x1.9ca1f4p+10f, 1 },
      { -0x1.e33da2p-6f, -0x1.a0952ap-1f, 0x1.30288ap-16f, -0x1.d4cd2ap-3f, -0x1.084bb2p-1f, -0x1.01566cp-4f,
        -0x1.4ea67cp-15f, 0x1.01e642p-1f, 0x1.3756b8p-2f, -0x1.7c1a4p-3f, -0x1.14b55cp-14f, 0x1.aa7e1cp-1f,
        -0x1.9c845p-1f, 0x1.0b31aep+1f, 0x1.d9274ap-7f, 0x1.1ae6a4p+4f },
      { -0x1.65f9dep+1f, -0x1.958d58p+0f, 0x1.029f08p+2f },
      { -0x1.32aba6p+1f, -0x1.3ea332p+0f, 0x1.10fd44p+2f },
      0x1.65301ep+0f, 256, 0, { true, true } },
};

static bool far_solid_hides(const far_solid *f, const float (*planes)[4], const float *matrix, uint32_t *rasterized)
{
    rv_occlusion_desc d = { 0 };
    d.width = f->width;
    d.fine_tests = f->fine_tests;
    d.min_occluder_texels = -1;
    rv_occlusion *occ;
    assert_int_equal(rv_occlusion_create(&d, &occ), RV_OK);
    assert_int_equal(rv_occlusion_begin(occ, f->view_projection, f->clip, f->aspect), RV_OK);
    rv_occluder_convex c = { planes, f->plane_count, 0 };
    assert_int_equal(rv_occlusion_add_convex(occ, &c, matrix), RV_OK);
    bool visible = false;
    assert_int_equal(rv_occlusion_test_box(occ, f->min, f->max, NULL, &visible), RV_OK);
    *rasterized = rv_occlusion_get_stats(occ).occluders_rasterized;
    rv_occlusion_destroy(occ);
    return !visible;
}

static void test_a_thin_solid_far_from_its_local_origin_hides_nothing_it_does_not_cover(void **state)
{
    (void)state;
    uint32_t rasterized;
    for (int k = 0; k < 2; k++) {
        const far_solid *f = &far_solids[k];
        assert_false(far_solid_hides(f, (const float (*)[4])f->planes, f->matrix, &rasterized));
        assert_int_equal(rasterized, 0);
    }
    const far_solid *f = &far_solids[0];
    static const double centre[3] = { 99497.0, 7813.187, 6269.94 };
    float planes[7][4], matrix[16];
    for (uint32_t k = 0; k < f->plane_count; k++) {
        for (int c = 0; c < 3; c++)
            planes[k][c] = f->planes[k][c];
        planes[k][3] = (float)((double)f->planes[k][3] - ((double)f->planes[k][0] * centre[0] +
                                                         (double)f->planes[k][1] * centre[1] +
                                                         (double)f->planes[k][2] * centre[2]));
    }
    memcpy(matrix, f->matrix, sizeof matrix);
    for (int r = 0; r < 3; r++)
        matrix[12 + r] = (float)((double)f->matrix[12 + r] + f->matrix[r] * centre[0] + f->matrix[4 + r] * centre[1] +
                                 f->matrix[8 + r] * centre[2]);
    assert_false(far_solid_hides(f, (const float (*)[4])planes, matrix, &rasterized));
    assert_int_equal(rasterized, 1);

    /* An ordinary solid about its own origin is drawn: a rotated box cut by a plane through
     * two of its opposite edges (its corners on that plane only to float rounding). */
    static const float wedge[7][4] = {
        { -0x1.ef4abep-2f, -0x1.605948p-10f, -0x1.c01fb6p-1f, 0x1.a50ea2p-3f },
        { 0x1.ef4abep-2f, 0x1.605948p-10f, 0x1.c01fb6p-1f, 0x1.a50ea2p-3f },
        { -0x1.56b1fap-1f, -0x1.499d7p-1f, 0x1.7bc752p-2f, 0x1.961a78p-3f },
        { 0x1.56b1fap-1f, 0x1.499d7p-1f, -0x1.7bc752p-2f, 0x1.961a78p-3f },
        { 0x1.20bf84p-1f, -0x1.87c99cp-1f, -0x1.3deffep-2f, 0x1.fb747cp-3f },
        { -0x1.20bf84p-1f, 0x1.87c99cp-1f, 0x1.3deffep-2f, 0x1.fb747cp-3f },
        { -0x1.76f6b8p-1f, 0x1.f34b5cp-2f, -0x1.e6b69ap-2f, 0x0p+0f } };
    camera c = look(3, -2, 1.5, 0, 0, 0);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    rv_occluder_convex solid = { wedge, 7, 0 };
    assert_int_equal(rv_occlusion_add_convex(occ, &solid, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    assert_int_equal(rv_occlusion_get_stats(occ).occluders_rasterized, 1);
    rv_occlusion_destroy(occ);
}

static void test_each_shape_keeps_its_depth(void **state)
{
    (void)state;
    ref_box objects[4];
    slab_objects(objects);
    /* Visible (1) or hidden (0) per form: a far side keeps what is inside the solid and on
     * its back face; an entry side or a surface hides them; nothing hides the front decal. */
    static const int expect[FORMS][4] = { { 1, 1, 1, 0 }, { 1, 1, 1, 0 }, { 0, 1, 0, 0 },
                                          { 1, 1, 1, 0 }, { 0, 1, 0, 0 }, { 0, 1, 0, 0 } };
    uint64_t seed = 21;
    for (int view = 0; view < 3; view++) {
        /* Straight on, from aside and above, and through the solid's rotation (the same slab
         * under a matrix). */
        camera c = view == 1 ? look(3, 2, 0, 0, 0, -10.5) : look(0, 0, 0, 0, 0, -1);
        float vp[16];
        camera_matrix(&c, vp);
        ref_view rv;
        ref_view_init(&rv, vp, c.clip);
        for (int form = 0; form < FORMS; form++) {
            ref_box slab = { .min = { -5, -5, -11 }, .max = { 5, 5, -10 } };
            if (view == 2) { /* a quarter turn about z: the same solid */
                const float m[16] = { 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
                memcpy(slab.matrix, m, sizeof m);
                slab.has_matrix = true;
            }
            float pos[8][3];
            make_form(&slab, form, pos);
            char what[64];
            snprintf(what, sizeof what, "%s, view %d", FORM_NAME[form], view);
            check_slab(&c, &rv, &slab, objects, expect[form], &seed, what);
        }
    }
}

/* A mirroring matrix (a negative determinant) reverses the world winding of a closed mesh's
 * triangles; the mesh still keeps the side its flags say. The slab of the test above, under
 * matrices that map it onto itself, as a closed mesh whose triangles share corners (drawn as
 * its convex solid) and as one whose triangles share none (drawn triangle by triangle). */
static void test_a_mirroring_matrix_keeps_a_closed_mesh_s_side(void **state)
{
    (void)state;
    ref_box objects[4];
    slab_objects(objects);
    static const float mirrors[3][16] = {
        { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0, 0, 0, -21, 1 }, /* z -> -21 - z: front and back swap */
        { -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 },   /* x -> -x */
        { 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 },    /* x and y swapped */
    };
    /* The far side keeps what is inside and on the back face; the entry side hides them. */
    static const int expect[2][4] = { { 1, 1, 1, 0 }, { 0, 1, 0, 0 } };
    uint64_t seed = 22;
    for (int view = 0; view < 2; view++) {
        camera c = view == 1 ? look(3, 2, 0, 0, 0, -10.5) : look(0, 0, 0, 0, 0, -1);
        float vp[16];
        camera_matrix(&c, vp);
        ref_view rv;
        ref_view_init(&rv, vp, c.clip);
        for (int m = 0; m < 3; m++)
            for (int shared = 0; shared < 2; shared++)
                for (int exact = 0; exact < 2; exact++) {
                    ref_box slab = { .min = { -5, -5, -11 }, .max = { 5, 5, -10 } };
                    memcpy(slab.matrix, mirrors[m], sizeof slab.matrix);
                    slab.has_matrix = true;
                    float pos[36][3];
                    uint32_t idx[36];
                    make_form(&slab, exact ? FORM_EXACT_CLOSED : FORM_CLOSED, pos);
                    if (!shared) { /* every triangle its own three corners */
                        float corners[8][3];
                        memcpy(corners, pos, sizeof corners);
                        for (uint32_t i = 0; i < 36; i++) {
                            memcpy(pos[i], corners[CUBE_INDICES[i]], sizeof pos[i]);
                            idx[i] = i;
                        }
                        slab.positions = (const float (*)[3])pos;
                        slab.vertex_count = 36;
                        slab.indices = idx;
                        ref_box_init(&slab);
                    }
                    char what[64];
                    snprintf(what, sizeof what, "view %d, mirror %d, shared %d, exact %d", view, m, shared, exact);
                    check_slab(&c, &rv, &slab, objects, expect[exact], &seed, what);
                }
    }
}

/* ---- the near plane, conventions --------------------------------------------------------- */

static void test_a_solid_the_near_plane_cuts_in_view_hides_nothing_a_surface_still_does(void **state)
{
    (void)state;
    /* A slab turned 0.1 rad about y, its near face cutting the near plane's rectangle to
     * the left of the centre: what is straight ahead lies behind it from 0.5 m. A GPU
     * clipping the slab's near face there shows its inside (its back faces culled), so a
     * solid of any form hides nothing that frame; the surface alone (an open mesh) is
     * clipped as the GPU clips it and still hides what lies behind its part in view. */
    const float a = -0.1f, m[16] = { cosf(a), 0, -sinf(a), 0, 0, 1, 0, 0, sinf(a), 0, cosf(a), 0, 0, 0, 0, 1 };
    uint64_t seed = 77;
    for (int conv = 0; conv < 4; conv++) {
        camera c = look(0, 0, 0, 0, 0, -1);
        c.clip = ref_conventions[conv];
        float vp[16];
        camera_matrix(&c, vp);
        ref_view rv;
        ref_view_init(&rv, vp, c.clip);
        for (int form = 0; form < FORMS; form++) {
            ref_box slab = { .min = { -1, -50, -50 }, .max = { -0.05f, 50, 50 } };
            memcpy(slab.matrix, m, sizeof m);
            slab.has_matrix = true;
            float pos[8][3];
            make_form(&slab, form, pos);
            if (form == FORM_SURFACE) { /* the face toward the eye (local +x) */
                static const uint32_t near_face[6] = { 1, 3, 7, 1, 7, 5 };
                slab.indices = near_face;
            }
            rv_occlusion *occ = make_occlusion(256);
            begin_camera(occ, &c);
            assert_int_equal(add_shape(occ, &slab), RV_OK);
            ref_box behind = flat_box(-0.5f, -0.5f, -20.5f, 0.5f, 0.5f, -19.5f);
            ref_box before = flat_box(0.25f, -0.05f, -1.05f, 0.35f, 0.05f, -0.95f);
            assert_false(ref_object_seen(&rv, &slab, 1, &behind, &seed, 6));
            bool surface = form == FORM_SURFACE;
            assert_int_equal(box_visible(occ, behind.min, behind.max, NULL), !surface);
            assert_true(box_visible(occ, before.min, before.max, NULL));
            rv_occlusion_stats st = rv_occlusion_get_stats(occ);
            assert_int_equal(st.occluders_rasterized, surface);
            assert_int_equal(st.skipped_near, !surface);
            /* And nothing the reference sees is hidden, all around. */
            for (int i = 0; i < 400; i++) {
                double centre[3] = { rvt_uniform(&seed, -6, 6), rvt_uniform(&seed, -3, 3), rvt_uniform(&seed, -15, 0) },
                       h[3] = { rvt_uniform(&seed, 0.01f, 0.5f), rvt_uniform(&seed, 0.01f, 0.5f),
                                rvt_uniform(&seed, 0.01f, 0.5f) };
                ref_box obj;
                place_box(&seed, &obj, centre, h, rvt_uniform(&seed, 0, 1) < 0.5f);
                if (!box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL))
                    assert_false(ref_object_seen(&rv, &slab, 1, &obj, &seed, 4));
            }
            rv_occlusion_destroy(occ);
        }
    }
}

/* The eye inside an occluder (a third-person camera that has entered a pillar): a GPU culls
 * every face of it from there, so no solid form hides anything, whatever the convention,
 * and a closed mesh that is not convex (two pillars in one mesh, the eye in one) neither;
 * a solid just ahead of the eye, wholly beyond the near plane, still hides. */
static void test_a_solid_holding_the_eye_hides_nothing(void **state)
{
    (void)state;
    for (int conv = 0; conv < 4; conv++) {
        camera c = look(0, 0, 0, 0, 0, -1);
        c.clip = ref_conventions[conv];
        float vp[16];
        camera_matrix(&c, vp);
        ref_box behind = flat_box(-0.5f, -0.5f, -20.5f, 0.5f, 0.5f, -19.5f);
        for (int form = 0; form < FORM_SURFACE; form++) {
            for (int held = 0; held < 2; held++) {
                /* held: the eye at the pillar's centre; else the pillar 1 m ahead. */
                ref_box pillar = held ? flat_box(-0.6f, -0.6f, -0.6f, 0.6f, 0.6f, 0.6f)
                                      : flat_box(-0.6f, -0.6f, -2.2f, 0.6f, 0.6f, -1);
                float pos[8][3];
                make_form(&pillar, form, pos);
                rv_occlusion *occ = make_occlusion(256);
                begin_camera(occ, &c);
                assert_int_equal(add_shape(occ, &pillar), RV_OK);
                bool vis = box_visible(occ, behind.min, behind.max, NULL);
                rv_occlusion_stats st = rv_occlusion_get_stats(occ);
                if (vis != (held != 0) || st.skipped_near != (uint32_t)held)
                    fail_msg("%s, convention %d, %s: visible %d, skipped_near %u", FORM_NAME[form], conv,
                             held ? "eye inside" : "ahead", vis, st.skipped_near);
                rv_occlusion_destroy(occ);
            }
        }
        /* Two pillars in one closed mesh (not convex: drawn triangle by triangle). */
        float two[16][3];
        uint32_t idx[72];
        for (int p = 0; p < 2; p++) {
            float x0 = p ? 3.0f : -0.6f;
            for (int k = 0; k < 8; k++) {
                two[8 * p + k][0] = (k & 1) ? x0 + 1.2f : x0;
                two[8 * p + k][1] = (k & 2) ? 0.6f : -0.6f;
                two[8 * p + k][2] = (k & 4) ? 0.6f : -0.6f;
            }
            for (int i = 0; i < 36; i++)
                idx[36 * p + i] = CUBE_INDICES[i] + 8 * (uint32_t)p;
        }
        rv_occluder_mesh mesh = { (const float (*)[3])two, 16, idx, 72, RV_OCCLUDER_CLOSED };
        rv_occlusion *occ = make_occlusion(256);
        begin_camera(occ, &c);
        assert_int_equal(rv_occlusion_add_mesh(occ, &mesh, NULL), RV_OK);
        assert_true(box_visible(occ, behind.min, behind.max, NULL));
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        assert_int_equal(st.skipped_near, 1);
        assert_int_equal(st.occluders_skipped, 1);
        assert_int_equal(st.triangles_rasterized, 0);
        rv_occlusion_destroy(occ);
    }
}

/* An oblique near plane (Lengyel's, for a mirror's or a portal's view) cutting a solid in
 * view where its part in view reaches out to the far plane: the solid hides nothing (the
 * GPU clips its near faces there and culls its back faces); the same solid under the plain
 * projection, wholly beyond its near plane, hides what lies behind it. */
static void test_an_oblique_near_plane_cutting_a_solid_leaves_it_undrawn(void **state)
{
    (void)state;
    for (int oblique = 0; oblique < 2; oblique++) {
        double n = 0.1, f = 1000;
        double P[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, (f + n) / (n - f), -1, 0, 0, 2 * f * n / (n - f), 0 };
        if (oblique) { /* keep only y < -1 (view space): the eye lies on the clipped side */
            const double C[4] = { 0, -1, 0, -1 };
            double q[4] = { P[8] / P[0], (-1.0 + P[9]) / P[5], -1.0, (1.0 + P[10]) / P[14] };
            double s = 2.0 / (C[0] * q[0] + C[1] * q[1] + C[2] * q[2] + C[3] * q[3]);
            P[2] = C[0] * s;
            P[6] = C[1] * s;
            P[10] = C[2] * s + 1.0;
            P[14] = C[3] * s;
        }
        float vp[16]; /* the view is the identity: the eye at the origin, looking down -z */
        for (int i = 0; i < 16; i++)
            vp[i] = (float)P[i];
        rv_occlusion *occ = make_occlusion(256);
        assert_int_equal(rv_occlusion_begin(occ, vp, (rv_clip){ 0 }, 1.0f), RV_OK);
        const float lo[3] = { -3, -6, -40 }, hi[3] = { 3, 0.5f, -10 };
        assert_int_equal(rv_occlusion_add_occluder(occ, lo, hi, NULL), RV_OK);
        const float centre[3] = { 0, -4, -80 };
        bool visible = false;
        assert_int_equal(rv_occlusion_test_sphere(occ, centre, 0.3f, NULL, &visible), RV_OK);
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        assert_int_equal(visible, oblique);
        assert_int_equal(st.skipped_near, oblique);
        assert_int_equal(st.occluders_rasterized, !oblique);
        rv_occlusion_destroy(occ);
    }
}

static void test_every_shape_gives_the_same_verdicts_under_every_convention(void **state)
{
    (void)state;
    uint64_t seed = 0xC0DE5;
    int culled = 0, total = 0;
    scene *sc = malloc(sizeof *sc), *v = malloc(sizeof *v);
    for (int t = 0; t < RVT_HEAVY(300, 40); t++) {
        random_scene(&seed, sc, -1);
        sc->cam.ortho_height = 0;
        ref_box obj[64];
        for (int i = 0; i < 64; i++)
            random_object(&seed, sc, &obj[i]);
        uint8_t first[64];
        /* 4 conventions with a far plane, then GL and reversed zero-to-one with an infinite one. */
        for (int variant = 0; variant < 6; variant++) {
            *v = *sc;
            v->cam.clip = ref_conventions[variant < 4 ? variant : variant == 4 ? 0 : 3];
            v->cam.zfar = variant < 4 ? 5000 : 0;
            camera_matrix(&v->cam, v->vp);
            /* The meshes' arrays live in the scene: point them at this copy's. */
            for (int k = 0; k < v->n_occ; k++)
                if (v->occ[k].kind == REF_MESH) {
                    v->occ[k].positions = (const float (*)[3])v->pos[k];
                    v->occ[k].indices = v->idx[k];
                }
            rvt_fine_tests = (uint32_t)t & 1; /* every other scene tests finer than a texel */
            rv_occlusion *occ = scene_occlusion(v, 256);
            rvt_fine_tests = 0;
            for (int i = 0; i < 64; i++) {
                bool vis = box_visible(occ, obj[i].min, obj[i].max, obj[i].has_matrix ? obj[i].matrix : NULL);
                if (variant == 0) {
                    first[i] = vis;
                    culled += !vis;
                    total++;
                } else {
                    assert_int_equal(vis, first[i]);
                }
            }
            rv_occlusion_destroy(occ);
        }
    }
    free(sc);
    free(v);
    assert_true(culled > total / 20); /* the scenes do hide things */
}

/* ---- stats ---------------------------------------------------------------------------------- */

static void test_triangle_stats_count_every_triangle_once(void **state)
{
    (void)state;
    camera c = look(0, 0, 0, 0, 0, -1);
    /* A quad 5 m ahead (two triangles), a repeated index, three collinear corners, and a
     * triangle behind the eye; then a small quad behind the first, away from its diagonal
     * (hidden), a closed cube to the right (convex: drawn as one solid, its twelve
     * triangles counted together), and one to the left with its +z face dented in (not
     * convex: its back triangles drawn, two by two, its +x and dented ones facing the eye). */
    const float pos[8][3] = { { -1, -1, -5 }, { 1, -1, -5 }, { 1, 1, -5 }, { -1, 1, -5 },
                              { 0, -1, -5 },  { 0, 0, 5 },   { 1, 0, 5 },  { 0, 1, 5 } };
    const uint32_t idx[15] = { 0, 1, 2, 0, 2, 3, 0, 0, 1, 0, 4, 1, 5, 6, 7 };
    const float far_pos[4][3] = { { 0.6f, -1.4f, -9 }, { 1.4f, -1.4f, -9 }, { 1.4f, -0.6f, -9 }, { 0.6f, -0.6f, -9 } };
    const uint32_t quad[6] = { 0, 1, 2, 0, 2, 3 };
    ref_box cube = { .min = { 4, -1, -12 }, .max = { 6, 1, -10 } };
    float cube_pos[8][3], dent_pos[9][3];
    make_form(&cube, FORM_CLOSED, cube_pos);
    ref_box dent = { .min = { -6, -1, -12 }, .max = { -4, 1, -10 } };
    make_form(&dent, FORM_CLOSED, dent_pos); /* its corners, then the dent */
    const float centre[3] = { -5, 0, -10.5f };
    memcpy(dent_pos[8], centre, sizeof centre);
    uint32_t dent_idx[42];
    memcpy(dent_idx, CUBE_INDICES, 30 * sizeof *dent_idx); /* every face but +z */
    const uint32_t fan[12] = { 4, 5, 8, 5, 7, 8, 7, 6, 8, 6, 4, 8 };
    memcpy(dent_idx + 30, fan, sizeof fan);
    rv_occlusion *occ = make_occlusion(256);
    begin_camera(occ, &c);
    rv_occluder_mesh near = { pos, 8, idx, 15, 0 }, far = { far_pos, 4, quad, 6, 0 };
    rv_occluder_mesh dented = { (const float (*)[3])dent_pos, 9, dent_idx, 42, RV_OCCLUDER_CLOSED };
    assert_int_equal(rv_occlusion_add_mesh(occ, &near, NULL), RV_OK);
    assert_int_equal(rv_occlusion_add_mesh(occ, &far, NULL), RV_OK);
    assert_int_equal(add_shape(occ, &cube), RV_OK);
    assert_int_equal(rv_occlusion_add_mesh(occ, &dented, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.occluders_submitted, 4);
    assert_int_equal(st.triangles_submitted, 5 + 2 + 12 + 14);
    assert_int_equal(st.triangles_degenerate, 2);
    assert_int_equal(st.occluders_hidden, 1);
    assert_int_equal(st.triangles_hidden, 2);
    assert_int_equal(st.triangles_rasterized, 2 + 12 + 8);
    assert_int_equal(st.triangles_skipped, 1 + 6);
    assert_int_equal(st.triangles_submitted, st.triangles_rasterized + st.triangles_hidden + st.triangles_skipped +
                                                 st.triangles_degenerate);
    /* The quad's halves are one piece, the convex cube another; the dented one's four
     * drawn faces (each two coplanar halves) fuse along their shared edges. */
    assert_int_equal(st.pieces, 1 + 1 + 4);
    assert_true(st.fusion_tests > 0 && st.fused_texels > 0);
    float behind[3] = { 0, 0, -20 };
    bool vis = true;
    assert_int_equal(rv_occlusion_test_sphere(occ, behind, 0.5f, NULL, &vis), RV_OK);
    assert_false(vis);
    /* A mesh whose every triangle is degenerate has nothing to draw, wherever it stands
     * (its bounds are then a point at its origin, here the eye's): skipped_small. */
    begin_camera(occ, &c);
    const float flat[4][3] = { { -6, -4, -10 }, { 6, -4, -10 }, { 6, 4, -10 }, { -6, 4, -10 } };
    const uint32_t repeated[6] = { 0, 0, 1, 2, 2, 3 };
    rv_occluder_mesh empty = { flat, 4, repeated, 6, 0 };
    float at_eye[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, (float)c.eye[0], (float)c.eye[1], (float)c.eye[2], 1 };
    assert_int_equal(rv_occlusion_add_mesh(occ, &empty, at_eye), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.occluders_skipped, 1);
    assert_int_equal(st.skipped_small, 1);
    assert_int_equal(st.skipped_offscreen, 0);
    assert_int_equal(st.triangles_degenerate, 2);
    rv_occlusion_destroy(occ);
}

/* ---- allocation ------------------------------------------------------------------------------- */

static void test_steady_frames_with_every_shape_allocate_nothing(void **state)
{
    (void)state;
    rvt_alloc st = { 0 };
    rv_occlusion_desc desc = { .allocator = rvt_allocator(&st), .width = 256 };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    uint64_t seed = 12;
    scene *sc = malloc(sizeof *sc);
    scene *scenes = malloc(4 * sizeof *scenes);
    for (int i = 0; i < 4; i++) {
        random_scene(&seed, &scenes[i], -1);
        for (int k = 0; k < scenes[i].n_occ; k++)
            if (scenes[i].occ[k].kind == REF_MESH) {
                scenes[i].occ[k].positions = (const float (*)[3])scenes[i].pos[k];
                scenes[i].occ[k].indices = scenes[i].idx[k];
            }
    }
    rv_alloc_stats warm = { 0 };
    /* Two rounds of four different scenes: the second round allocates nothing. */
    for (int frame = 0; frame < 8; frame++) {
        if (frame == 4)
            warm = rv_occlusion_alloc_stats(occ);
        const scene *s = &scenes[frame % 4];
        assert_int_equal(rv_occlusion_begin(occ, s->vp, s->cam.clip, (float)s->cam.aspect), RV_OK);
        for (int k = 0; k < s->n_occ; k++)
            assert_int_equal(add_shape(occ, &s->occ[k]), RV_OK);
        ref_box obj;
        random_object(&seed, s, &obj);
        (void)box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL);
    }
    rv_alloc_stats now = rv_occlusion_alloc_stats(occ);
    assert_int_equal(now.allocations, warm.allocations);
    assert_int_equal(now.reallocations, warm.reallocations);
    rv_occlusion_destroy(occ);
    free(sc);
    free(scenes);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.live_bytes, 0);
}

typedef struct sweep_shapes {
    rv_occlusion *occ;
} sweep_shapes;

static void *sweep_setup(const rv_allocator *a)
{
    sweep_shapes *s = calloc(1, sizeof *s);
    rv_occlusion_desc desc = { .allocator = *a, .width = 64 };
    assert_int_equal(rv_occlusion_create(&desc, &s->occ), RV_OK);
    camera c = look(0, 1.7, 20, 0, 1.7, 0);
    begin_camera(s->occ, &c);
    return s;
}

static rv_result sweep_convex(void *o)
{
    sweep_shapes *s = o;
    float mn[3] = { -5, 0, -1 }, mx[3] = { 5, 4, 1 }, planes[7][4];
    box_planes(mn, mx, planes);
    const float bevel[4] = { 1, 1, 0, 9 };
    memcpy(planes[6], bevel, sizeof bevel);
    rv_occluder_convex c = { (const float (*)[4])planes, 7, RV_OCCLUDER_EXACT };
    rv_result r = rv_occlusion_add_convex(s->occ, &c, NULL);
    if (r == RV_OK) /* and the freeze that draws it, on storage the add grew */
        r = rv_occlusion_freeze(s->occ);
    return r;
}

static rv_result sweep_mesh(void *o)
{
    sweep_shapes *s = o;
    ref_box b = { .min = { -5, 0, -1 }, .max = { 5, 4, 1 } };
    float pos[8][3];
    make_form(&b, FORM_CLOSED, pos);
    rv_occluder_mesh m = { (const float (*)[3])pos, 8, CUBE_INDICES, 36, RV_OCCLUDER_CLOSED };
    rv_result r = rv_occlusion_add_mesh(s->occ, &m, NULL);
    if (r == RV_OK)
        r = rv_occlusion_freeze(s->occ);
    return r;
}

static uint64_t sweep_fingerprint(void *o)
{
    sweep_shapes *s = o;
    rv_occlusion_stats st = rv_occlusion_get_stats(s->occ);
    return 1 + st.occluders_submitted * 1000 + st.triangles_submitted * 7;
}

static void sweep_teardown(void *o)
{
    sweep_shapes *s = o;
    rv_occlusion_destroy(s->occ);
    free(s);
}

static void test_allocation_failures_leave_the_buffer_as_it_was(void **state)
{
    (void)state;
    rvt_sweep convex = { "add_convex", sweep_setup, sweep_convex, sweep_fingerprint, sweep_teardown };
    rvt_sweep mesh = { "add_mesh", sweep_setup, sweep_mesh, sweep_fingerprint, sweep_teardown };
    assert_true(rvt_run_sweep(&convex) >= 1);
    assert_true(rvt_run_sweep(&mesh) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_shape_against_the_reference),
        cmocka_unit_test(test_mixed_shapes_never_cull_what_the_reference_sees),
        cmocka_unit_test(test_a_thin_solid_far_from_its_local_origin_hides_nothing_it_does_not_cover),
        cmocka_unit_test(test_each_shape_keeps_its_depth),
        cmocka_unit_test(test_a_mirroring_matrix_keeps_a_closed_mesh_s_side),
        cmocka_unit_test(test_a_solid_the_near_plane_cuts_in_view_hides_nothing_a_surface_still_does),
        cmocka_unit_test(test_a_solid_holding_the_eye_hides_nothing),
        cmocka_unit_test(test_an_oblique_near_plane_cutting_a_solid_leaves_it_undrawn),
        cmocka_unit_test(test_every_shape_gives_the_same_verdicts_under_every_convention),
        cmocka_unit_test(test_triangle_stats_count_every_triangle_once),
        cmocka_unit_test(test_steady_frames_with_every_shape_allocate_nothing),
        cmocka_unit_test(test_allocation_failures_leave_the_buffer_as_it_was),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
