/* Dense meshes drawn by their outline (suite occlusion; docs/occlusion.md, "Dense meshes"):
 * random bumpy, folded, holed and split surfaces and tessellated closed solids, many
 * triangles to a texel, against the reference (support/occlusion_ref.c); a dense wall
 * hides what is behind it while a slit in it of any width stays open; vertices repeated at
 * one position (a render mesh's seams) still join; a part behind another keeps the nearer
 * one's depth; stats; steady frames; allocation failures. */
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
#include <stdlib.h>
#include <string.h>

#define MAX_MESHES 4
#define MAX_GRID 28
#define MAX_VERTS ((MAX_GRID + 2) * (MAX_GRID + 1) + 8)
#define MAX_INDICES (6 * MAX_GRID * MAX_GRID + 64)

typedef struct dense_scene {
    camera cam;
    float vp[16];
    ref_view rv;
    double fwd[3];
    ref_box occ[MAX_MESHES + 2];
    int n_occ;
    float pos[MAX_MESHES][MAX_VERTS][3];
    uint32_t idx[MAX_MESHES][MAX_INDICES];
} dense_scene;

/* ---- shapes, in a box's local extent ------------------------------------------------------- */

static void as_mesh(ref_box *b, const float (*pos)[3], uint32_t nv, const uint32_t *idx, uint32_t ni, uint32_t flags)
{
    b->kind = REF_MESH;
    b->positions = pos;
    b->vertex_count = nv;
    b->indices = idx;
    b->index_count = ni;
    b->flags = flags;
    for (uint32_t k = 0; k < nv; k++) /* bounds of what was made */
        for (int i = 0; i < 3; i++) {
            b->min[i] = k ? fminf(b->min[i], pos[k][i]) : pos[k][i];
            b->max[i] = k ? fmaxf(b->max[i], pos[k][i]) : pos[k][i];
        }
    ref_box_init(b);
}

/* An open nx x ny grid over the box's xy extent, z in its z extent: smooth waves, or noise
 * that folds the surface over itself on screen; sometimes holes, a slit (a column of quads
 * left out), or a seam column whose vertices are repeated (the same positions, other
 * indices). */
static void make_surface(uint64_t *s, ref_box *b, float (*pos)[3], uint32_t *idx)
{
    int nx = 6 + (int)(rvt_next(s) % (MAX_GRID - 5)), ny = 6 + (int)(rvt_next(s) % (MAX_GRID - 5));
    int style = (int)(rvt_next(s) % 3); /* 0 flat, 1 waves, 2 noise */
    double fx = rvt_uniform(s, 0.5f, 4), fy = rvt_uniform(s, 0.5f, 4);
    int seam = rvt_uniform(s, 0, 1) < 0.3f ? 1 + (int)(rvt_next(s) % (uint64_t)(nx - 1)) : -1;
    int slit = seam < 0 && rvt_uniform(s, 0, 1) < 0.25f ? (int)(rvt_next(s) % (uint64_t)nx) : -1;
    float holes = rvt_uniform(s, 0, 1) < 0.2f ? 0.1f : 0;
    uint32_t nv = 0, ni = 0, row = (uint32_t)nx + 1;
    float z0 = b->min[2], z1 = b->max[2];
    for (int y = 0; y <= ny; y++)
        for (int x = 0; x <= nx; x++) {
            float *p = pos[nv++];
            p[0] = b->min[0] + (b->max[0] - b->min[0]) * (float)x / (float)nx;
            p[1] = b->min[1] + (b->max[1] - b->min[1]) * (float)y / (float)ny;
            double h = style == 0 ? 0.5 : style == 1 ? 0.5 + 0.5 * sin(fx * x / nx * 2 * PI) * cos(fy * y / ny * 2 * PI)
                                                     : rvt_uniform(s, 0, 1);
            p[2] = z0 + (z1 - z0) * (float)h;
        }
    /* The seam's repeated column: the same floats, new indices, used by the quads to its right. */
    uint32_t twin = nv;
    if (seam >= 0)
        for (int y = 0; y <= ny; y++)
            memcpy(pos[nv++], pos[(uint32_t)y * row + (uint32_t)seam], sizeof pos[0]);
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            if (x == slit || rvt_uniform(s, 0, 1) < holes)
                continue;
            uint32_t a = (uint32_t)y * row + (uint32_t)x, c = a + row, a1 = a + 1, c1 = c + 1;
            if (x == seam) { /* the quad right of the seam uses the repeated vertices */
                a = twin + (uint32_t)y;
                c = a + 1;
            }
            uint32_t t[6] = { a, a1, c1, a, c1, c };
            if (rvt_next(s) % 2) {
                uint32_t u[6] = { a, a1, c, a1, c1, c };
                memcpy(t, u, sizeof t);
            }
            memcpy(idx + ni, t, sizeof t);
            ni += 6;
        }
    if (ni == 0) {
        uint32_t t[3] = { 0, 1, row };
        memcpy(idx, t, sizeof t);
        ni = 3;
    }
    as_mesh(b, (const float (*)[3])pos, nv, idx, ni, 0);
}

/* A closed solid: the box's surface, each face n x n quads wound counter-clockwise seen
 * from outside, sometimes with its inner lattice points pushed in or out (no longer
 * convex), or a lat-long ellipsoid in the box. */
static void make_solid(uint64_t *s, ref_box *b, float (*pos)[3], uint32_t *idx)
{
    uint32_t nv = 0, ni = 0;
    uint32_t flags = RV_OCCLUDER_CLOSED | (rvt_uniform(s, 0, 1) < 0.5f ? RV_OCCLUDER_EXACT : 0);
    if (rvt_next(s) % 2) {
        int n = 3 + (int)(rvt_next(s) % 8);
        nv = ref_lattice_box(b->min, b->max, n, pos, idx, &ni);
        /* Sometimes every face's inner points move along its normal (no longer convex). */
        float dent = rvt_uniform(s, 0, 1) < 0.4f ? rvt_uniform(s, -0.2f, 0.2f) : 0;
        float lo[3], hi[3];
        memcpy(lo, b->min, sizeof lo);
        memcpy(hi, b->max, sizeof hi);
        for (uint32_t k = 0; k < nv && dent != 0; k++)
            for (int a = 0; a < 3; a++) {
                int u = (a + 1) % 3, v = (a + 2) % 3;
                bool inner = pos[k][u] > lo[u] && pos[k][u] < hi[u] && pos[k][v] > lo[v] && pos[k][v] < hi[v];
                if (inner && (pos[k][a] == lo[a] || pos[k][a] == hi[a]))
                    pos[k][a] += (pos[k][a] == hi[a] ? 1.0f : -1.0f) * dent * (hi[a] - lo[a]);
            }
    } else {
        int lat = 4 + (int)(rvt_next(s) % 20), lon = 4 + (int)(rvt_next(s) % 24);
        double c[3], r[3];
        for (int i = 0; i < 3; i++) {
            c[i] = 0.5 * ((double)b->min[i] + b->max[i]);
            r[i] = 0.5 * ((double)b->max[i] - b->min[i]);
        }
        pos[nv][0] = (float)c[0], pos[nv][1] = (float)c[1], pos[nv][2] = (float)(c[2] + r[2]), nv++; /* pole +z */
        for (int i = 1; i < lat; i++)
            for (int j = 0; j < lon; j++) {
                double th = PI * i / lat, ph = 2 * PI * j / lon;
                pos[nv][0] = (float)(c[0] + r[0] * sin(th) * cos(ph));
                pos[nv][1] = (float)(c[1] + r[1] * sin(th) * sin(ph));
                pos[nv][2] = (float)(c[2] + r[2] * cos(th));
                nv++;
            }
        pos[nv][0] = (float)c[0], pos[nv][1] = (float)c[1], pos[nv][2] = (float)(c[2] - r[2]), nv++; /* pole -z */
        uint32_t south = nv - 1;
#define RING(i, j) (1u + (uint32_t)((i) - 1) * (uint32_t)lon + (uint32_t)((j) % lon))
        for (int j = 0; j < lon; j++) { /* outward: counter-clockwise seen from outside */
            uint32_t t[3] = { 0, RING(1, j), RING(1, j + 1) };
            memcpy(idx + ni, t, sizeof t);
            ni += 3;
        }
        for (int i = 1; i < lat - 1; i++)
            for (int j = 0; j < lon; j++) {
                uint32_t t[6] = { RING(i, j), RING(i + 1, j), RING(i + 1, j + 1), RING(i, j), RING(i + 1, j + 1),
                                  RING(i, j + 1) };
                memcpy(idx + ni, t, sizeof t);
                ni += 6;
            }
        for (int j = 0; j < lon; j++) {
            uint32_t t[3] = { south, RING(lat - 1, j + 1), RING(lat - 1, j) };
            memcpy(idx + ni, t, sizeof t);
            ni += 3;
        }
#undef RING
    }
    as_mesh(b, (const float (*)[3])pos, nv, idx, ni, flags);
}

static rv_result add_shape(rv_occlusion *occ, const ref_box *b)
{
    const float *m = b->has_matrix ? b->matrix : NULL;
    if (b->kind == REF_MESH) {
        rv_occluder_mesh mesh = { b->positions, b->vertex_count, b->indices, b->index_count, b->flags };
        return rv_occlusion_add_mesh(occ, &mesh, m);
    }
    return rv_occlusion_add_occluder(occ, b->min, b->max, m);
}

/* ---- scenes ------------------------------------------------------------------------------- */

static void ahead(const dense_scene *sc, double d, double a, double b, double out[3])
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

static void random_scene(uint64_t *s, dense_scene *sc)
{
    double dir[3];
    random_camera(s, &sc->cam, dir);
    camera_matrix(&sc->cam, sc->vp);
    ref_view_init(&sc->rv, sc->vp, sc->cam.clip);
    memcpy(sc->fwd, dir, sizeof dir);
    sc->n_occ = 0;
    int meshes = 1 + (int)(rvt_next(s) % MAX_MESHES);
    for (int k = 0; k < meshes; k++) {
        ref_box *b = &sc->occ[sc->n_occ++];
        bool crossing = rvt_uniform(s, 0, 1) < 0.08f;
        double centre[3], h[3];
        ahead(sc, crossing ? rvt_uniform(s, -1, 2) : rvt_uniform(s, 2, 30), rvt_uniform(s, -1, 1),
              rvt_uniform(s, -1, 1), centre);
        for (int i = 0; i < 3; i++)
            h[i] = rvt_uniform(s, 0.3f, 7);
        place_box(s, b, centre, h, true);
        if (rvt_uniform(s, 0, 1) < 0.3f) { /* a mirror: the winding reverses in the world */
            int col = (int)(rvt_next(s) % 3);
            for (int i = 0; i < 3; i++)
                b->matrix[4 * col + i] = -b->matrix[4 * col + i];
            ref_box_init(b);
        }
        if (rvt_next(s) % 2)
            make_surface(s, b, sc->pos[k], sc->idx[k]);
        else
            make_solid(s, b, sc->pos[k], sc->idx[k]);
    }
    if (rvt_uniform(s, 0, 1) < 0.3f) { /* a box beside them, drawn as a piece */
        ref_box *b = &sc->occ[sc->n_occ++];
        double centre[3], h[3];
        ahead(sc, rvt_uniform(s, 3, 25), rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1), centre);
        for (int i = 0; i < 3; i++)
            h[i] = rvt_uniform(s, 0.3f, 5);
        place_box(s, b, centre, h, rvt_uniform(s, 0, 1) < 0.5f);
    }
}

/* mode: rvi_occ_outline.mode (0 automatic, 1 every mesh by its outline, 2 none). */
static rv_occlusion *scene_occlusion(const dense_scene *sc, uint32_t width, uint32_t mode)
{
    rv_occlusion *occ = make_occlusion(width);
    occ->outline.mode = mode;
    assert_int_equal(rv_occlusion_begin(occ, sc->vp, sc->cam.clip, (float)sc->cam.aspect), RV_OK);
    for (int k = 0; k < sc->n_occ; k++)
        assert_int_equal(add_shape(occ, &sc->occ[k]), RV_OK);
    return occ;
}

/* ---- against the reference ----------------------------------------------------------------- */

typedef struct tally {
    uint64_t objects, culled, checked, hidden, culled_hidden, false_culls, outlined, meshes;
} tally;

static tally against_reference(uint64_t seed, uint32_t mode, int trials)
{
    static const uint32_t widths[4] = { 64, 128, 256, 512 };
    enum { PER_SCENE = 50 };
    tally t = { 0 };
    dense_scene *sc = malloc(sizeof *sc);
    for (int done = 0; done < trials; done += PER_SCENE) {
        random_scene(&seed, sc);
        rvt_fine_tests = (uint32_t)(done / PER_SCENE) & 1;
        rv_occlusion *occ = scene_occlusion(sc, widths[rvt_next(&seed) % 4], mode);
        rvt_fine_tests = 0;
        for (int i = 0; i < PER_SCENE; i++) {
            ref_box obj;
            place_object_near(&seed, &sc->occ[rvt_next(&seed) % (uint64_t)sc->n_occ], &sc->cam, sc->fwd, &obj, true);
            bool lib = box_visible(occ, obj.min, obj.max, obj.has_matrix ? obj.matrix : NULL);
            t.objects++;
            t.culled += !lib;
            if (lib && i % 4)
                continue;
            bool seen = ref_object_seen(&sc->rv, sc->occ, sc->n_occ, &obj, &seed, 3);
            if (!seen && !ref_object_seen(&sc->rv, NULL, 0, &obj, &seed, 3))
                continue; /* outside the view volume */
            if (i % 4 == 0) {
                t.checked++;
                t.hidden += !seen;
                t.culled_hidden += !seen && !lib;
            }
            if (seen && !lib) {
                t.false_culls++;
                fprintf(stderr, "false cull: seed %llu object %d mode %u\n", (unsigned long long)seed, i, mode);
            }
        }
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        assert_int_equal(st.triangles_submitted,
                         st.triangles_rasterized + st.triangles_hidden + st.triangles_skipped + st.triangles_degenerate);
        t.outlined += rv_occlusion_get_stats(occ).meshes_outlined;
        for (int k = 0; k < sc->n_occ; k++)
            t.meshes += sc->occ[k].kind == REF_MESH;
        rv_occlusion_destroy(occ);
    }
    free(sc);
    return t;
}

static void report(const char *what, const tally *t)
{
    printf("%s: %llu objects, %llu culled; of %llu sampled in view %llu hidden by the reference, cull_efficiency "
           "%.3f; false culls %llu; %llu of %llu meshes drawn by their outline\n",
           what, (unsigned long long)t->objects, (unsigned long long)t->culled, (unsigned long long)t->checked,
           (unsigned long long)t->hidden, t->hidden ? (double)t->culled_hidden / (double)t->hidden : 0.0,
           (unsigned long long)t->false_culls, (unsigned long long)t->outlined, (unsigned long long)t->meshes);
}

static void test_dense_meshes_never_cull_what_the_reference_sees(void **state)
{
    (void)state;
    int trials = RVT_HEAVY(200000, 10000);
    tally outline = against_reference(0xDE45E, 1, trials);
    report("dense meshes, every one by its outline", &outline);
    assert_int_equal(outline.false_culls, 0);
    /* The path ran, and it hides things: a path that covered nothing would fail here. */
    assert_true(outline.outlined * 2 >= outline.meshes);
    assert_true(outline.culled_hidden * 2 >= outline.hidden);

    tally automatic = against_reference(0xDE45E, 0, trials);
    report("dense meshes, the path chosen by density", &automatic);
    assert_int_equal(automatic.false_culls, 0);
    assert_true(automatic.culled_hidden * 2 >= automatic.hidden);
}

/* ---- a wall, its slit, its seam ------------------------------------------------------------ */

/* A wall in the plane z = -10 over x in [-4, 4], y in [-3, 3], n x n quads; quads of column
 * slit left out (< 0: none), whose width is narrowed to gap texels by moving the column's
 * right edge; with seam, the vertices of column n / 2 repeated for the quads to its right. */
typedef struct wall {
    float pos[2 * (64 + 2) * (64 + 1)][3];
    uint32_t idx[2 * 6 * 64 * 64];
    uint32_t nv, ni;
} wall;

static void make_wall(wall *w, int n, int slit, double slit_world, bool seam)
{
    uint32_t row = (uint32_t)n + 1;
    w->nv = w->ni = 0;
    for (int y = 0; y <= n; y++)
        for (int x = 0; x <= n; x++) {
            double fx = -4 + 8.0 * x / n;
            if (slit >= 0 && x == slit + 1)
                fx = -4 + 8.0 * slit / n + slit_world;
            w->pos[w->nv][0] = (float)fx;
            w->pos[w->nv][1] = (float)(-3 + 6.0 * y / n);
            w->pos[w->nv][2] = -10;
            w->nv++;
        }
    uint32_t twin = w->nv;
    int s = n / 2;
    if (seam)
        for (int y = 0; y <= n; y++)
            memcpy(w->pos[w->nv++], w->pos[(uint32_t)y * row + (uint32_t)s], sizeof w->pos[0]);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            if (x == slit)
                continue;
            uint32_t a = (uint32_t)y * row + (uint32_t)x, c = a + row, a1 = a + 1, c1 = c + 1;
            if (seam && x == s) {
                a = twin + (uint32_t)y;
                c = a + 1;
            }
            uint32_t t[6] = { a, a1, c1, a, c1, c };
            memcpy(w->idx + w->ni, t, sizeof t);
            w->ni += 6;
        }
}

/* The camera at the origin looking down -z; the buffer 256 wide. */
static rv_occlusion *wall_occlusion(const wall *w, uint32_t mode, float vp[16])
{
    camera c = look(0, 0, 0, 0, 0, -1);
    camera_matrix(&c, vp);
    rv_occlusion *occ = make_occlusion(256);
    occ->outline.mode = mode;
    assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, (float)c.aspect), RV_OK);
    rv_occluder_mesh m = { (const float (*)[3])w->pos, w->nv, w->idx, w->ni, 0 };
    assert_int_equal(rv_occlusion_add_mesh(occ, &m, NULL), RV_OK);
    assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
    return occ;
}

/* World units of one texel across at the wall (z = -10): the view is 2 * 10 * tan(30 deg)
 * tall and 256 / (16 / 9) = 144 texels. */
static double texel_at_wall(void) { return 2 * 10 * tan(PI / 6) / 144.0; }

static void test_a_dense_wall_hides_what_is_behind_it_and_a_slit_stays_open(void **state)
{
    (void)state;
    wall *w = malloc(sizeof *w);
    float vp[16];
    /* Whole: a thin object far behind it, anywhere, is hidden; drawn by its outline. */
    make_wall(w, 64, -1, 0, false);
    rv_occlusion *occ = wall_occlusion(w, 0, vp);
    assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 1);
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    assert_int_equal(st.triangles_rasterized, 2 * 64 * 64);
    assert_int_equal(st.pieces, 0);
    float mn[3] = { -1.0f, -0.5f, -30 }, mx[3] = { 1.0f, 0.5f, -29 };
    assert_false(box_visible(occ, mn, mx, NULL));
    rv_occlusion_destroy(occ);
    /* A slit one column wide, narrowed to a fraction of a texel: a sliver of an object
     * behind it, wholly inside the slit's image, is never hidden. */
    static const double widths[4] = { 0.1, 0.25, 0.5, 2.0 };
    for (int k = 0; k < 4; k++)
        for (int column = 20; column < 44; column += 3) {
            double gap = widths[k] * texel_at_wall();
            make_wall(w, 64, column, gap, false);
            for (uint32_t mode = 0; mode < 3; mode += 1) {
                occ = wall_occlusion(w, mode, vp);
                assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, mode == 2 ? 0 : 1);
                /* Behind the slit at z = -20: twice as far, so twice the slit's world width. */
                float x0 = (float)(-4 + 8.0 * column / 64) * 2;
                float g = (float)gap * 2;
                float omn[3] = { x0 + 0.2f * g, -2.0f, -20.5f }, omx[3] = { x0 + 0.8f * g, 2.0f, -20 };
                assert_true(box_visible(occ, omn, omx, NULL));
                /* Beside the slit, behind the wall: hidden. */
                float bmn[3] = { x0 - 3.0f, -1, -20.5f }, bmx[3] = { x0 - 2.0f, 1, -20 };
                assert_false(box_visible(occ, bmn, bmx, NULL));
                rv_occlusion_destroy(occ);
            }
        }
    free(w);
}

static void test_repeated_vertices_join_like_shared_ones(void **state)
{
    (void)state;
    wall *w = malloc(sizeof *w);
    float vp[16];
    make_wall(w, 64, -1, 0, true);
    rv_occlusion *occ = wall_occlusion(w, 0, vp);
    assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 1);
    /* A sliver behind the seam (x = 0), narrower than a texel: the two halves join there. */
    double t = texel_at_wall() * 2;
    for (int k = -4; k <= 4; k++) {
        float x = (float)(k * t / 8);
        float mn[3] = { x - (float)t / 10, -1, -20.5f }, mx[3] = { x + (float)t / 10, 1, -20 };
        assert_false(box_visible(occ, mn, mx, NULL));
    }
    rv_occlusion_destroy(occ);
    free(w);
}

/* A double-sided wall (every triangle listed again, wound the other way) covers what the
 * one-sided wall does; a triangle listed 65,536 times covers what it covers once, and the
 * repeats are counted skipped. */
static void test_repeated_triangles_are_drawn_once(void **state)
{
    (void)state;
    wall *w = malloc(sizeof *w);
    float vp[16];
    make_wall(w, 48, -1, 0, false);
    rv_occlusion *one = wall_occlusion(w, 0, vp);
    uint32_t covered = rv_occlusion_get_stats(one).texels_covered;
    rv_occlusion_destroy(one);
    uint32_t ni = w->ni;
    for (uint32_t k = 0; k < ni; k += 3) {
        w->idx[ni + k] = w->idx[k];
        w->idx[ni + k + 1] = w->idx[k + 2];
        w->idx[ni + k + 2] = w->idx[k + 1];
    }
    w->ni = 2 * ni;
    rv_occlusion *two = wall_occlusion(w, 0, vp);
    rv_occlusion_stats st = rv_occlusion_get_stats(two);
    assert_int_equal(rv_occlusion_get_stats(two).meshes_outlined, 1);
    assert_int_equal(st.texels_covered, covered);
    assert_int_equal(st.triangles_rasterized, ni / 3);
    assert_int_equal(st.triangles_skipped, ni / 3);
    float mn[3] = { -1.0f, -0.5f, -30 }, mx[3] = { 1.0f, 0.5f, -29 };
    assert_false(box_visible(two, mn, mx, NULL));
    rv_occlusion_destroy(two);
    free(w);

    enum { COPIES = 65536 };
    const float pos[3][3] = { { -6, -4, -10 }, { 6, -4, -10 }, { 0, 5, -10 } };
    uint32_t *idx = malloc(sizeof(uint32_t) * 3 * COPIES);
    for (uint32_t k = 0; k < 3 * COPIES; k++)
        idx[k] = k % 3;
    uint32_t once = 0;
    static const uint32_t counts[2] = { 1, COPIES };
    for (int pass = 0; pass < 2; pass++) {
        uint32_t copies = counts[pass];
        rv_occlusion *occ = make_occlusion(256);
        occ->outline.mode = 1;
        camera c = look(0, 0, 0, 0, 0, -1);
        camera_matrix(&c, vp);
        assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, (float)c.aspect), RV_OK);
        rv_occluder_mesh m = { pos, 3, idx, 3 * copies, 0 };
        assert_int_equal(rv_occlusion_add_mesh(occ, &m, NULL), RV_OK);
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        st = rv_occlusion_get_stats(occ);
        assert_int_equal(st.triangles_rasterized, 1);
        assert_int_equal(st.triangles_skipped, copies - 1);
        if (copies == 1)
            once = st.texels_covered;
        assert_true(once > 1000);
        assert_int_equal(st.texels_covered, once);
        rv_occlusion_destroy(occ);
    }
    free(idx);
}

/* An orthographic view of one world unit a texel and a wall of unit quads whose grid lines
 * fall on texel corners, centres or between: every texel inside the wall is covered (a
 * texel whose centre lies on a shared edge is still written), and a fan of 20,000
 * triangles around one vertex (its edges all listed there) covers its disc. */
static void test_a_grid_on_texel_centres_leaves_no_seam(void **state)
{
    (void)state;
    static const float offsets[3] = { 0, 0.5f, 0.25f };
    const float vp[16] = { 1.f / 128, 0, 0, 0, 0, 1.f / 72, 0, 0, 0, 0, -2.f / 99, 0, 0, 0, -101.f / 99, 1 };
    enum { N = 64 };
    wall *w = malloc(sizeof *w);
    for (int k = 0; k < 3; k++) {
        w->nv = w->ni = 0;
        for (int j = 0; j <= N; j++)
            for (int i = 0; i <= N; i++) {
                float *q = w->pos[w->nv++];
                q[0] = offsets[k] + (float)(i - N / 2);
                q[1] = offsets[k] + (float)(j - N / 2);
                q[2] = -10;
            }
        for (uint32_t j = 0; j < N; j++)
            for (uint32_t i = 0; i < N; i++) {
                uint32_t a = j * (N + 1) + i, t[6] = { a, a + 1, a + N + 1, a + 1, a + N + 2, a + N + 1 };
                memcpy(w->idx + w->ni, t, sizeof t);
                w->ni += 6;
            }
        rv_occlusion *occ = make_occlusion(256);
        assert_int_equal(rv_occlusion_begin(occ, vp, (rv_clip){ 0 }, 256.f / 144.f), RV_OK);
        rv_occluder_mesh m = { (const float (*)[3])w->pos, w->nv, w->idx, w->ni, 0 };
        assert_int_equal(rv_occlusion_add_mesh(occ, &m, NULL), RV_OK);
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 1);
        /* The texels wholly inside the wall, less the ring its outline marks. */
        assert_true(rv_occlusion_get_stats(occ).texels_covered >= (N - 2) * (N - 2));
        float mn[3] = { -5, -5, -50 }, mx[3] = { 5, 5, -40 };
        assert_false(box_visible(occ, mn, mx, NULL));
        rv_occlusion_destroy(occ);
    }
    free(w);

    enum { FAN = 20000 };
    float (*p)[3] = malloc(sizeof(float[3]) * (FAN + 1));
    uint32_t *ix = malloc(sizeof(uint32_t) * 3 * FAN);
    p[0][0] = 0, p[0][1] = 0, p[0][2] = -10;
    for (int i = 0; i < FAN; i++) {
        double a = 2 * PI * i / FAN;
        p[1 + i][0] = (float)(4 * cos(a)), p[1 + i][1] = (float)(4 * sin(a)), p[1 + i][2] = -10;
        ix[3 * i] = 0, ix[3 * i + 1] = 1 + (uint32_t)i, ix[3 * i + 2] = 1 + (uint32_t)((i + 1) % FAN);
    }
    camera c = look(0, 0, 0, 0, 0, -1);
    float fvp[16];
    camera_matrix(&c, fvp);
    rv_occlusion *occ = make_occlusion(256);
    assert_int_equal(rv_occlusion_begin(occ, fvp, c.clip, (float)c.aspect), RV_OK);
    rv_occluder_mesh m = { (const float (*)[3])p, FAN + 1, ix, 3 * FAN, 0 };
    assert_int_equal(rv_occlusion_add_mesh(occ, &m, NULL), RV_OK);
    float mn[3] = { -1, -1, -30 }, mx[3] = { 1, 1, -29 };
    assert_false(box_visible(occ, mn, mx, NULL));
    assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 1);
    rv_occlusion_destroy(occ);
    free(p);
    free(ix);
}

/* One mesh of two walls, one behind the other (two connected parts): what lies between
 * them, behind the near one, is hidden by the near one's depth, not the far one's. */
static void test_a_part_behind_another_leaves_it_its_depth(void **state)
{
    (void)state;
    wall *w = malloc(sizeof *w);
    make_wall(w, 48, -1, 0, false);
    uint32_t nv = w->nv, ni = w->ni;
    for (uint32_t k = 0; k < nv; k++) { /* the far wall: twice as far, twice as large */
        for (int i = 0; i < 3; i++)
            w->pos[nv + k][i] = w->pos[k][i] * 2;
    }
    for (uint32_t k = 0; k < ni; k++)
        w->idx[ni + k] = w->idx[k] + nv;
    w->nv = 2 * nv;
    w->ni = 2 * ni;
    float vp[16];
    rv_occlusion *occ = wall_occlusion(w, 0, vp);
    assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 1);
    float mn[3] = { -1.0f, -0.5f, -16 }, mx[3] = { 1.0f, 0.5f, -14 };
    assert_false(box_visible(occ, mn, mx, NULL));
    /* Beside the near wall, in front of the far one: seen. */
    float bmn[3] = { 5.0f, -0.5f, -16 }, bmx[3] = { 6.0f, 0.5f, -14 };
    assert_true(box_visible(occ, bmn, bmx, NULL));
    rv_occlusion_destroy(occ);
    free(w);
}

/* ---- frames --------------------------------------------------------------------------------- */

static void test_steady_frames_with_dense_meshes_allocate_nothing(void **state)
{
    (void)state;
    wall *w = malloc(sizeof *w);
    make_wall(w, 64, 10, 0.01, true);
    camera c = look(0, 0, 0, 0, 0, -1);
    float vp[16];
    camera_matrix(&c, vp);
    rv_occlusion *occ = make_occlusion(256);
    rv_occluder_mesh m = { (const float (*)[3])w->pos, w->nv, w->idx, w->ni, 0 };
    rv_alloc_stats before = { 0 };
    for (int f = 0; f < 6; f++) {
        if (f == 2)
            before = rv_occlusion_alloc_stats(occ);
        assert_int_equal(rv_occlusion_begin(occ, vp, c.clip, (float)c.aspect), RV_OK);
        for (int k = 0; k < 3; k++) {
            float mat[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, (float)k, 0, (float)-k, 1 };
            assert_int_equal(rv_occlusion_add_mesh(occ, &m, mat), RV_OK);
        }
        assert_int_equal(rv_occlusion_freeze(occ), RV_OK);
        assert_int_equal(rv_occlusion_get_stats(occ).meshes_outlined, 3);
    }
    rv_alloc_stats after = rv_occlusion_alloc_stats(occ);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.reallocations, before.reallocations);
    rv_occlusion_destroy(occ);
    free(w);
}

/* Every allocation of the first dense mesh's add fails in turn (rvt_run_sweep): the call
 * reports it and changes nothing; the freeze that draws it never allocates. */
typedef struct sweep_wall {
    rv_occlusion *occ;
    wall w;
} sweep_wall;

static void *sweep_setup(const rv_allocator *a)
{
    sweep_wall *s = calloc(1, sizeof *s);
    make_wall(&s->w, 32, -1, 0, true);
    rv_occlusion_desc desc = { .allocator = *a, .width = 256 };
    assert_int_equal(rv_occlusion_create(&desc, &s->occ), RV_OK);
    camera c = look(0, 0, 0, 0, 0, -1);
    begin_camera(s->occ, &c);
    return s;
}

static rv_result sweep_add(void *o)
{
    sweep_wall *s = o;
    rv_occluder_mesh m = { (const float (*)[3])s->w.pos, s->w.nv, s->w.idx, s->w.ni, 0 };
    rv_result r = rv_occlusion_add_mesh(s->occ, &m, NULL);
    if (r == RV_OK) {
        rv_alloc_stats before = rv_occlusion_alloc_stats(s->occ);
        r = rv_occlusion_freeze(s->occ);
        rv_alloc_stats after = rv_occlusion_alloc_stats(s->occ);
        assert_int_equal(after.allocations, before.allocations);
        assert_int_equal(rv_occlusion_get_stats(s->occ).meshes_outlined, 1);
    }
    return r;
}

static uint64_t sweep_fingerprint(void *o)
{
    sweep_wall *s = o;
    rv_occlusion_stats st = rv_occlusion_get_stats(s->occ);
    return 1 + st.occluders_submitted * 1000 + st.triangles_submitted * 7;
}

static void sweep_teardown(void *o)
{
    sweep_wall *s = o;
    rv_occlusion_destroy(s->occ);
    free(s);
}

static void test_allocation_failures_leave_the_buffer_as_it_was(void **state)
{
    (void)state;
    rvt_sweep sweep = { "dense add_mesh", sweep_setup, sweep_add, sweep_fingerprint, sweep_teardown };
    assert_true(rvt_run_sweep(&sweep) >= 4); /* the outline's scratch among them */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_meshes_never_cull_what_the_reference_sees),
        cmocka_unit_test(test_a_dense_wall_hides_what_is_behind_it_and_a_slit_stays_open),
        cmocka_unit_test(test_repeated_vertices_join_like_shared_ones),
        cmocka_unit_test(test_repeated_triangles_are_drawn_once),
        cmocka_unit_test(test_a_grid_on_texel_centres_leaves_no_seam),
        cmocka_unit_test(test_a_part_behind_another_leaves_it_its_depth),
        cmocka_unit_test(test_steady_frames_with_dense_meshes_allocate_nothing),
        cmocka_unit_test(test_allocation_failures_leave_the_buffer_as_it_was),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
