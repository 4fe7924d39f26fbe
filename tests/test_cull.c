/* Hierarchical frustum culling and spatial grouping (suite cull): rv_visit_visible,
 * rv_collect_visible, rv_group_spatially, against brute force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "world.h"
#include "cull.h"
#include "frustum.h"
#include "lod.h"
#include "core/hash.h"
#include "support/rvt.h"
#include "support/rvt_scene.h"

#include <cglm/cglm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------- */

static rv_frustum ortho_camera(void)
{
    mat4 proj, view, vp;
    vec3 e = { 0, 50, 0 }, t = { 0, 0, 0 }, up = { 0, 0, 1 };
    glm_ortho(-20, 20, -10, 10, 1, 100, proj);
    glm_lookat(e, t, up, view);
    glm_mat4_mul(proj, view, vp);
    rv_frustum f;
    rv_clip clip = { .depth_zero_to_one = true };
    assert_int_equal(rv_frustum_from_view_projection((const float *)vp, clip, &f), RV_OK);
    return f;
}

/* Signed distance of the sphere to the frustum in double: < 0 when wholly outside a plane
 * by that much; the reference every culling decision is compared with. */
static double outside_by(const rv_frustum *f, const double c[3], double r)
{
    double worst = INFINITY;
    for (int i = 0; i < 6; i++) {
        if (!(f->plane_mask & (1u << i)))
            continue;
        const float *p = f->planes[i];
        double d = p[0] * c[0] + p[1] * c[1] + p[2] * c[2] + p[3] + r;
        worst = d < worst ? d : worst;
    }
    return worst;
}

typedef struct seen {
    uint32_t count;
    uint8_t *mark; /* by slot index */
    const rv_world *w;
    uint32_t stop_after; /* 0 = never */
} seen;

static bool mark_seen(rv_node node, const float world_matrix[16], void *user)
{
    seen *s = user;
    uint32_t i;
    assert_int_equal(rvi_node_index(&s->w->scene, node, &i), RV_OK);
    assert_true(world_matrix == s->w->scene.world_matrix[i]);
    assert_int_equal(s->mark[i], 0); /* never twice */
    s->mark[i] = 1;
    s->count++;
    return !(s->stop_after && s->count >= s->stop_after);
}

static uint64_t scene_digest(const rv_world *w)
{
    const rvi_scene *s = &w->scene;
    uint64_t h = rvi_hash_bytes(1, &s->pool.live, sizeof s->pool.live);
    h = rvi_hash_bytes(h, &s->pool.used, sizeof s->pool.used);
    h = rvi_hash_bytes(h, &s->first_root, sizeof s->first_root);
    h = rvi_hash_bytes(h, &s->dirty_count, sizeof s->dirty_count);
    for (uint32_t i = 0; i < s->pool.used; i++) {
        h = rvi_hash_bytes(h, &s->pool.generation[i], 4);
        if (!rvi_pool_is_live(&s->pool, i))
            continue;
        h = rvi_hash_bytes(h, &s->parent[i], 4);
        h = rvi_hash_bytes(h, &s->first_child[i], 4);
        h = rvi_hash_bytes(h, &s->next_sibling[i], 4);
        h = rvi_hash_bytes(h, &s->flags[i], 4);
        h = rvi_hash_bytes(h, s->world_matrix[i], 64);
        h = rvi_hash_bytes(h, s->world_sphere[i], 16);
    }
    return h;
}

/* ---- visit: against brute force ----------------------------------------------------- */

/* Largest singular value of a world matrix's upper 3x3, in double (power iteration). */
static double spectral_norm(const float m[16])
{
    double v[3] = { 0.57, 0.61, 0.55 }, lambda = 0;
    for (int it = 0; it < 100; it++) {
        double mv[3], w[3];
        for (int r = 0; r < 3; r++)
            mv[r] = m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2];
        for (int c = 0; c < 3; c++)
            w[c] = m[c * 4] * mv[0] + m[c * 4 + 1] * mv[1] + m[c * 4 + 2] * mv[2];
        double len = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
        if (len == 0)
            return 0;
        lambda = len;
        for (int k = 0; k < 3; k++)
            v[k] = w[k] / len;
    }
    return sqrt(lambda);
}

static void build_random_scene(rv_world *w, rv_node *nodes, int count, uint64_t *seed)
{
    for (int i = 0; i < count; i++) {
        rv_node parent = (i == 0 || rvt_next(seed) % 10 == 0) ? RV_NODE_NONE
                                                                : nodes[rvt_next(seed) % (uint64_t)i];
        nodes[i] = rvt_node(w, parent);
        float spread = parent.id ? 8.0f : 60.0f;
        rvt_set_position(w, nodes[i], rvt_uniform(seed, -spread, spread), rvt_uniform(seed, -spread / 4, spread / 4),
                rvt_uniform(seed, -spread, spread));
        float axis[3] = { rvt_uniform(seed, -1, 1), rvt_uniform(seed, -1, 1), 0.3f };
        assert_int_equal(rv_node_set_rotation_axis_angle(w, nodes[i], axis, rvt_uniform(seed, -3, 3)), RV_OK);
        float sc[3] = { rvt_uniform(seed, 0.3f, 2), rvt_uniform(seed, 0.3f, 2), rvt_uniform(seed, 0.3f, 2) };
        assert_int_equal(rv_node_set_scale(w, nodes[i], sc), RV_OK);
        if (rvt_next(seed) % 4) {
            float c[3] = { rvt_uniform(seed, -1, 1), rvt_uniform(seed, -1, 1), rvt_uniform(seed, -1, 1) };
            assert_int_equal(rv_node_set_bounds(w, nodes[i], c, rvt_uniform(seed, 0.05f, 4)), RV_OK);
        }
    }
}

/* Every node whose own geometry (centre transformed, radius times the exact largest
 * stretch) meets the frustum is handed out; every node handed out has geometry and is
 * not clearly outside; ancestors never hide a visible descendant. */
static void check_visit_against_brute_force(rv_world *w, rv_node *nodes, int count, const rv_frustum *f)
{
    seen s = { 0, calloc(w->scene.capacity, 1), w, 0 };
    rv_cull_counts counts;
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, f, mark_seen, &s, &counts), RV_OK);
    assert_int_equal(counts.visible, s.count);
    uint32_t expected = 0;
    for (int i = 0; i < count; i++) {
        uint32_t idx;
        assert_int_equal(rvi_node_index(&w->scene, nodes[i], &idx), RV_OK);
        const rvi_scene *sc = &w->scene;
        bool has = sc->flags[idx] & RVI_NODE_HAS_GEOMETRY;
        if (!has) {
            assert_int_equal(s.mark[idx], 0);
            continue;
        }
        const float *m = sc->world_matrix[idx], *l = sc->local_sphere[idx];
        double c[3];
        for (int k = 0; k < 3; k++)
            c[k] = (double)m[k] * l[0] + (double)m[4 + k] * l[1] + (double)m[8 + k] * l[2] + m[12 + k];
        double r = l[3] * spectral_norm(m);
        double d = outside_by(f, c, r);
        double tol = 1e-4 * (1 + r + fabs(c[0]) + fabs(c[1]) + fabs(c[2]));
        if (d > tol) {
            expected++;
            if (!s.mark[idx])
                fail_msg("node %d meets the frustum (by %g) but was skipped", i, d);
        }
        if (s.mark[idx] && d < -tol) {
            /* handed out although outside: only allowed through the conservative radius */
            float g[4];
            rvi_scene_geometry_sphere(sc, idx, g);
            double cg[3] = { g[0], g[1], g[2] };
            assert_true(outside_by(f, cg, g[3]) >= -tol);
        }
    }
    assert_true(s.count >= expected);
    assert_true(counts.visited <= (uint32_t)count);
    free(s.mark);
}

static void test_visit_visible_never_skips_a_node_whose_sphere_meets_the_frustum(void **state)
{
    (void)state;
    const int count = RVT_HEAVY(4000, 800), cameras = RVT_HEAVY(40, 12);
    uint64_t seed = 2024;
    rv_world *w = rvt_world(NULL);
    rv_node *nodes = calloc((size_t)count, sizeof *nodes);
    build_random_scene(w, nodes, count, &seed);
    assert_int_equal(rv_update_world(w), RV_OK);
    for (int cam = 0; cam < cameras; cam++) {
        float eye[3] = { rvt_uniform(&seed, -80, 80), rvt_uniform(&seed, -10, 30), rvt_uniform(&seed, -80, 80) };
        float target[3] = { rvt_uniform(&seed, -40, 40), 0, rvt_uniform(&seed, -40, 40) };
        rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), rvt_uniform(&seed, 20, 300));
        check_visit_against_brute_force(w, nodes, count, &f);
        /* move a few nodes (and so their subtrees) between cameras */
        for (int k = 0; k < 20; k++)
            rvt_set_position(w, nodes[rvt_next(&seed) % (uint64_t)count], rvt_uniform(&seed, -30, 30), 0,
                    rvt_uniform(&seed, -30, 30));
        assert_int_equal(rv_update_world(w), RV_OK);
    }
    rv_frustum o = ortho_camera();
    check_visit_against_brute_force(w, nodes, count, &o);
    free(nodes);
    rv_world_destroy(w);
}

/* A visit that keeps the first `limit` nodes it is handed and then stops the walk. */
typedef struct stop_after {
    uint32_t count, limit;
    rv_node *nodes;
} stop_after;

static bool take_until(rv_node node, const float m[16], void *user)
{
    (void)m;
    stop_after *s = user;
    s->nodes[s->count++] = node;
    return s->count < s->limit;
}

/* The reference order: pre-order over the whole scene, roots and children in attach
 * order, written as rank[slot] = 1, 2, 3, ... (0: not reached). */
static void rank_pre_order(const rvi_scene *sc, uint32_t *rank)
{
    uint32_t next = 1;
    for (uint32_t r = sc->first_root; r != RVI_INDEX_NONE; r = sc->next_sibling[r]) {
        uint32_t n = r;
        for (;;) {
            rank[n] = next++;
            if (sc->first_child[n] != RVI_INDEX_NONE) {
                n = sc->first_child[n];
                continue;
            }
            while (n != r && sc->next_sibling[n] == RVI_INDEX_NONE)
                n = sc->parent[n];
            if (n == r)
                break;
            n = sc->next_sibling[n];
        }
    }
}

/* Visible nodes come out in pre-order, children in attach order, whatever mix of leaves
 * and inner nodes a parent has and whether a plane cuts the parent (the walk then tests
 * and hands out its leaf children without a trip through its stack) or not: the output's
 * reference ranks rise strictly, so it is the reference order restricted to what was
 * handed out, each node once. A stop after k nodes gives the first k. */
static void test_visit_hands_out_in_pre_order_when_planes_cut_parents(void **state)
{
    (void)state;
    uint64_t seed = 4242;
    uint64_t cut_parents = 0;
    for (int round = 0; round < RVT_HEAVY(60, 20); round++) {
        rv_world *w = rvt_world(NULL);
        int count = 50 + (int)(rvt_next(&seed) % 400);
        rv_node *nodes = calloc((size_t)count, sizeof *nodes);
        rv_node *out = calloc((size_t)count, sizeof *out);
        build_random_scene(w, nodes, count, &seed);
        assert_int_equal(rv_update_world(w), RV_OK);
        uint32_t *rank = calloc(w->scene.capacity, sizeof *rank);
        rank_pre_order(&w->scene, rank);
        for (int cam = 0; cam < 8; cam++) {
            float eye[3] = { rvt_uniform(&seed, -80, 80), rvt_uniform(&seed, -10, 30), rvt_uniform(&seed, -80, 80) };
            float target[3] = { rvt_uniform(&seed, -40, 40), 0, rvt_uniform(&seed, -40, 40) };
            rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), rvt_uniform(&seed, 20, 300));
            uint32_t n;
            rv_cull_counts counts;
            assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, out, (uint32_t)count, &n, &counts), RV_OK);
            assert_int_equal(n, counts.visible);
            uint32_t last = 0;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t idx;
                assert_int_equal(rvi_node_index(&w->scene, out[i], &idx), RV_OK);
                assert_true(rank[idx] > last);
                last = rank[idx];
            }
            cut_parents += counts.tested > counts.pruned; /* some node was tested and kept */
            /* a walk stopped after k nodes hands out the first k */
            uint32_t limit = n ? 1 + (uint32_t)(rvt_next(&seed) % n) : 1;
            stop_after st = { 0, limit, calloc((size_t)limit, sizeof(rv_node)) };
            assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, take_until, &st, NULL), RV_OK);
            assert_int_equal(st.count, n < limit ? n : limit);
            for (uint32_t i = 0; i < st.count; i++)
                assert_true(rv_node_equal(st.nodes[i], out[i]));
            free(st.nodes);
        }
        free(rank);
        free(out);
        free(nodes);
        rv_world_destroy(w);
    }
    assert_true(cut_parents > 0);
}

/* ---- visit: pruning and masks -------------------------------------------------------- */

static bool count_only(rv_node node, const float m[16], void *user)
{
    (void)node, (void)m;
    (*(uint32_t *)user)++;
    return true;
}

static void test_visit_prunes_subtree_outside_in_one_test(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    rv_node group = rvt_node(w, RV_NODE_NONE);
    rvt_set_position(w, group, 0, 0, -500); /* behind the camera */
    for (int i = 0; i < 100; i++) {
        rv_node c = rvt_node(w, group);
        rvt_set_position(w, c, (float)(i % 10), 0, (float)(i / 10));
        rvt_set_sphere(w, c, 0.5f);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    uint32_t n = 0;
    rv_cull_counts c;
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, count_only, &n, &c), RV_OK);
    assert_int_equal(n, 0);
    assert_int_equal(c.tested, 1);
    assert_int_equal(c.pruned, 1);
    assert_int_equal(c.visited, 1);
    assert_int_equal(c.visible, 0);
    rv_world_destroy(w);
}

static void test_visit_skips_plane_tests_below_a_sphere_inside_every_plane(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    rv_node group = rvt_node(w, RV_NODE_NONE);
    rvt_set_position(w, group, 0, 0, 50);
    for (int i = 0; i < 100; i++) {
        rv_node c = rvt_node(w, group);
        rvt_set_position(w, c, (float)(i % 10) - 5, 0, (float)(i / 10) - 5);
        rvt_set_sphere(w, c, 0.5f);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    uint32_t n = 0;
    rv_cull_counts c;
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, count_only, &n, &c), RV_OK);
    assert_int_equal(n, 100);
    assert_int_equal(c.tested, 1);   /* only the group's sphere */
    assert_int_equal(c.visited, 101);
    assert_int_equal(c.pruned, 0);

    /* half in, half out of the left plane: the group is tested, then each child */
    rvt_set_position(w, group, 0, 0, 8);
    assert_int_equal(rv_update_world(w), RV_OK);
    n = 0;
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, count_only, &n, &c), RV_OK);
    assert_true(n > 0 && n < 100);
    assert_int_equal(c.tested, 101);
    assert_int_equal(c.pruned, 100 - n);
    rv_world_destroy(w);
}

static void test_visit_tests_own_geometry_of_a_node_with_children(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    /* a parent with small geometry of its own, and a far child that drags its bounds into view */
    rv_node p = rvt_node(w, RV_NODE_NONE);
    rvt_set_position(w, p, 0, 0, -20); /* behind */
    rvt_set_sphere(w, p, 1);
    rv_node c = rvt_node(w, p);
    rvt_set_position(w, c, 0, 0, 40);  /* at z = 20: in front */
    rvt_set_sphere(w, c, 1);
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    rv_node out[4];
    uint32_t n;
    assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, out, 4, &n, NULL), RV_OK);
    assert_int_equal(n, 1);
    assert_true(rv_node_equal(out[0], c));
    rv_world_destroy(w);
}

static void test_visit_from_a_root_walks_only_its_subtree_in_order(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    rv_node a = rvt_node(w, RV_NODE_NONE), b = rvt_node(w, RV_NODE_NONE);
    rv_node kids[5];
    for (int i = 0; i < 5; i++) {
        kids[i] = rvt_node(w, a);
        rvt_set_position(w, kids[i], (float)i, 0, 20);
        rvt_set_sphere(w, kids[i], 0.5f);
    }
    rv_node grandchild = rvt_node(w, kids[1]);
    rvt_set_sphere(w, grandchild, 0.1f);
    rv_node other = rvt_node(w, b);
    rvt_set_position(w, other, 0, 0, 20);
    rvt_set_sphere(w, other, 1);
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    rv_node out[8];
    uint32_t n;
    assert_int_equal(rv_collect_visible(w, a, &f, out, 8, &n, NULL), RV_OK);
    assert_int_equal(n, 6);
    /* pre-order, children in attach order */
    rv_node expect[] = { kids[0], kids[1], grandchild, kids[2], kids[3], kids[4] };
    for (int i = 0; i < 6; i++)
        assert_true(rv_node_equal(out[i], expect[i]));
    assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, out, 8, &n, NULL), RV_OK);
    assert_int_equal(n, 7);
    assert_true(rv_node_equal(out[6], other));
    /* too small an array: the first ones, the full count, RV_ERR_CAPACITY */
    rv_node small[3];
    assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, small, 3, &n, NULL), RV_ERR_CAPACITY);
    assert_int_equal(n, 7);
    assert_true(rv_node_equal(small[2], grandchild));
    assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, NULL, 0, &n, NULL), RV_ERR_CAPACITY);
    assert_int_equal(n, 7);
    rv_world_destroy(w);
}

static void test_visit_stops_when_the_callback_returns_false(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    rv_node root = rvt_node(w, RV_NODE_NONE);
    for (int i = 0; i < 50; i++) {
        rv_node c = rvt_node(w, root);
        rvt_set_position(w, c, 0, 0, 10.0f + (float)i);
        rvt_set_sphere(w, c, 0.5f);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    seen s = { 0, calloc(w->scene.capacity, 1), w, 7 };
    rv_cull_counts c;
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, mark_seen, &s, &c), RV_OK);
    assert_int_equal(s.count, 7);
    assert_int_equal(c.visible, 7);
    free(s.mark);
    /* the world is usable again after a stopped walk */
    rv_node extra;
    assert_int_equal(rv_node_create(w, root, &extra), RV_OK);
    rv_world_destroy(w);
}

typedef struct reentry {
    rv_world *w;
    rv_node some;
    const rv_frustum *f;
    int calls;
} reentry;

static bool try_structural_calls(rv_node node, const float m[16], void *user)
{
    (void)m;
    reentry *r = user;
    rv_node out;
    uint32_t n;
    assert_int_equal(rv_node_create(r->w, RV_NODE_NONE, &out), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_destroy_subtree(r->w, node), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_destroy_reroot(r->w, node), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_attach(r->w, r->some, node), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_attach(r->w, node, node), RV_ERR_BAD_STATE); /* a cycle too: the visit first */
    assert_int_equal(rv_node_detach(r->w, node), RV_ERR_BAD_STATE);
    assert_int_equal(rv_update_world(r->w), RV_ERR_BAD_STATE);
    assert_int_equal(rv_group_spatially(r->w, r->some, NULL, 0, 0, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_visit_visible(r->w, RV_NODE_NONE, r->f, count_only, &n, NULL), RV_ERR_BAD_STATE);
    /* setters are fine: they only mark the node for the next update */
    float p[3] = { 0, 0, 30 };
    assert_int_equal(rv_node_set_position(r->w, node, p), RV_OK);
    r->calls++;
    return true;
}

static void test_visit_refuses_structural_calls_from_the_callback(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    rv_node root = rvt_node(w, RV_NODE_NONE);
    rv_node kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = rvt_node(w, root);
        rvt_set_position(w, kids[i], 0, 0, 10);
        rvt_set_sphere(w, kids[i], 1);
    }
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 1000);
    uint64_t before = scene_digest(w);
    reentry r = { w, root, &f, 0 };
    assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &f, try_structural_calls, &r, NULL), RV_OK);
    assert_int_equal(r.calls, 3);
    assert_true(scene_digest(w) != before); /* the setters did mark the nodes */
    assert_int_equal(rv_update_world(w), RV_OK);
    float m[16];
    assert_int_equal(rv_node_world_matrix(w, kids[2], m), RV_OK);
    assert_float_equal(m[14], 30.0f, 0.0f);
    rv_world_destroy(w);
}

static void test_visit_rejects_bad_arguments(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL), *other = rvt_world(NULL);
    rv_node root = rvt_node(w, RV_NODE_NONE);
    rv_node dead = rvt_node(w, RV_NODE_NONE);
    rv_node foreign = rvt_node(other, RV_NODE_NONE);
    assert_int_equal(rv_node_destroy_subtree(w, dead), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    float eye[3] = { 0, 0, 0 }, target[3] = { 0, 0, 10 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 100);
    uint32_t n = 0;
    rv_node out[2];
    assert_int_equal(rv_visit_visible(NULL, root, &f, count_only, &n, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_visit_visible(w, root, NULL, count_only, &n, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_visit_visible(w, root, &f, NULL, &n, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_visit_visible(w, dead, &f, count_only, &n, NULL), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_visit_visible(w, foreign, &f, count_only, &n, NULL), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_collect_visible(w, root, &f, out, 2, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_collect_visible(w, root, &f, NULL, 2, &n, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_collect_visible(w, foreign, &f, out, 2, &n, NULL), RV_ERR_STALE_HANDLE);
    rv_world_destroy(other);
    rv_world_destroy(w);
}

static void test_visit_allocates_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    uint64_t seed = 5;
    rv_node nodes[500];
    build_random_scene(w, nodes, 500, &seed);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_alloc_stats before = rv_world_alloc_stats(w);
    float eye[3] = { 0, 5, -80 }, target[3] = { 0, 0, 0 };
    rv_frustum f = rvt_frustum(eye, target, glm_rad(60.0f), 500);
    rv_node out[500];
    for (int frame = 0; frame < 50; frame++) {
        uint32_t n;
        assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &f, out, 500, &n, NULL), RV_OK);
        assert_true(n > 0);
    }
    rv_alloc_stats after = rv_world_alloc_stats(w);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.reallocations, before.reallocations);
    rv_world_destroy(w);
}

static bool collected(const rv_node *out, uint32_t n, rv_node node)
{
    for (uint32_t i = 0; i < n; i++)
        if (rv_node_equal(out[i], node))
            return true;
    return false;
}

typedef struct matrix_of {
    rv_node node;
    float m[16];
    bool seen;
} matrix_of;

static bool note_matrix(rv_node node, const float world_matrix[16], void *user)
{
    matrix_of *mo = user;
    if (rv_node_equal(node, mo->node)) {
        memcpy(mo->m, world_matrix, sizeof mo->m);
        mo->seen = true;
    }
    return true;
}

/* c (with a child g) sits 10 ahead of a camera looking down -z. The host then moves it
 * behind, to z = +10, where a camera looking down +z sees it, with a transform that
 * cannot be composed: (kind 0) parent scale 1e30 times its own 1e30 overflows float (its
 * real geometry then fills all space); (kind 1) an in-place write with a NaN. c keeps
 * its old matrix (ahead), which the walk must not cull it by: c and g are handed out to
 * the camera looking +z in that update and every later one, with the kept matrix, while
 * an unrelated node out of view stays culled. Once c composes again back ahead, the
 * camera looking +z culls it and g again. */
static void test_visit_draws_a_node_of_unknown_placement_and_its_subtree_until_it_composes(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        rv_world *w = rvt_world(NULL);
        rv_node p = rvt_node(w, RV_NODE_NONE);
        rv_node c = rvt_node(w, p);
        rvt_set_position(w, c, 0, 0, -10);
        rvt_set_sphere(w, c, 1);
        rv_node g = rvt_node(w, c);
        rvt_set_position(w, g, 0, 1, 0);
        rvt_set_sphere(w, g, 0.5f);
        rv_node e = rvt_node(w, RV_NODE_NONE);
        rvt_set_position(w, e, 0, 0, -50);
        rvt_set_sphere(w, e, 1);
        assert_int_equal(rv_update_world(w), RV_OK);
        float eye[3] = { 0, 0, 0 }, front[3] = { 0, 0, -10 }, back[3] = { 0, 0, 10 };
        rv_frustum to_front = rvt_frustum(eye, front, glm_rad(60.0f), 1000), to_back = rvt_frustum(eye, back, glm_rad(60.0f), 1000);
        rv_node out[8];
        uint32_t n;
        assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &to_front, out, 8, &n, NULL), RV_OK);
        assert_int_equal(n, 3);
        assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &to_back, out, 8, &n, NULL), RV_OK);
        assert_int_equal(n, 0);
        float kept[16];
        assert_int_equal(rv_node_world_matrix(w, c, kept), RV_OK);

        if (kind == 0) {
            const float huge[3] = { 1e30f, 1e30f, 1e30f };
            rvt_set_position(w, c, 0, 0, 10);
            assert_int_equal(rv_node_set_scale(w, p, huge), RV_OK);
            assert_int_equal(rv_node_set_scale(w, c, huge), RV_OK);
        } else {
            float *pos;
            assert_int_equal(rv_node_transform_ptrs(w, c, &pos, NULL, NULL), RV_OK);
            pos[0] = NAN;
            pos[2] = 10;
            assert_int_equal(rv_node_mark_moved(w, c), RV_OK);
        }
        assert_int_equal(rv_update_world(w), RV_ERR_NOT_FINITE);
        for (int update = 0; update < 3; update++) {
            assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &to_back, out, 8, &n, NULL), RV_OK);
            assert_true(collected(out, n, c));
            assert_true(collected(out, n, g));
            assert_false(collected(out, n, e));
            assert_int_equal(rv_world_scene_stats(w).transform_stale, 2);
            matrix_of mo = { .node = c };
            assert_int_equal(rv_visit_visible(w, RV_NODE_NONE, &to_back, note_matrix, &mo, NULL), RV_OK);
            assert_true(mo.seen);
            assert_memory_equal(mo.m, kept, sizeof kept); /* drawn where it was last placed */
            assert_int_equal(rv_update_world(w), RV_OK);
        }

        const float one[3] = { 1, 1, 1 };
        assert_int_equal(rv_node_set_scale(w, p, one), RV_OK);
        assert_int_equal(rv_node_set_scale(w, c, one), RV_OK);
        rvt_set_position(w, c, 0, 0, -10);
        assert_int_equal(rv_update_world(w), RV_OK);
        assert_int_equal(rv_world_scene_stats(w).transform_stale, 0);
        assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &to_back, out, 8, &n, NULL), RV_OK);
        assert_int_equal(n, 0);
        assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &to_front, out, 8, &n, NULL), RV_OK);
        assert_int_equal(n, 3);
        rv_world_destroy(w);
    }
}

/* ---- group_spatially ----------------------------------------------------------------- */

static rv_node *scatter_children(rv_world *w, rv_node parent, uint32_t count, uint64_t *seed)
{
    rv_node *kids = malloc(count * sizeof *kids);
    for (uint32_t i = 0; i < count; i++) {
        kids[i] = rvt_node(w, parent);
        rvt_set_position(w, kids[i], rvt_uniform(seed, -500, 500), rvt_uniform(seed, 0, 5), rvt_uniform(seed, -500, 500));
        rvt_set_sphere(w, kids[i], rvt_uniform(seed, 0.2f, 2));
    }
    return kids;
}

static void test_group_spatially_makes_20000_loose_children_cull_hierarchically(void **state)
{
    (void)state;
    const uint32_t count = 20000;
    uint64_t seed = 77;
    rv_world *w = rvt_world(NULL);
    rv_node floor = rvt_node(w, RV_NODE_NONE);
    rvt_set_position(w, floor, 10, 0, 10);
    rv_node *kids = scatter_children(w, floor, count, &seed);
    assert_int_equal(rv_update_world(w), RV_OK);
    float before_m[16], after_m[16];
    assert_int_equal(rv_node_world_matrix(w, kids[1234], before_m), RV_OK);

    float eye[3] = { 0, 2, -600 }, target[3] = { 0, 2, -400 };
    rv_frustum narrow = rvt_frustum(eye, target, glm_rad(60.0f), 150); /* sees a corner of the floor only */
    rv_node *flat = malloc(count * sizeof *flat), *grouped = malloc(count * sizeof *grouped);
    uint32_t n_flat, n_grouped;
    rv_cull_counts cf, cg;
    assert_int_equal(rv_collect_visible(w, floor, &narrow, flat, count, &n_flat, &cf), RV_OK);
    assert_true(cf.tested > count);

    uint32_t groups = 0;
    assert_int_equal(rv_group_spatially(w, floor, kids, count, 8, &groups), RV_OK);
    assert_true(groups > count / 8 && groups < count);
    assert_int_equal(rv_world_scene_stats(w).nodes, 1 + count + groups);
    /* the groups culled at once, before any update */
    assert_int_equal(rv_collect_visible(w, floor, &narrow, grouped, count, &n_grouped, &cg), RV_OK);
    assert_int_equal(n_grouped, n_flat);
    assert_true(cg.tested * 10 < cf.tested);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_collect_visible(w, floor, &narrow, grouped, count, &n_grouped, &cg), RV_OK);
    assert_int_equal(n_grouped, n_flat);
    /* same set of visible nodes (order may differ) */
    uint8_t *mark = calloc(w->scene.capacity, 1);
    for (uint32_t i = 0; i < n_flat; i++) {
        uint32_t idx;
        assert_int_equal(rvi_node_index(&w->scene, flat[i], &idx), RV_OK);
        mark[idx] = 1;
    }
    for (uint32_t i = 0; i < n_grouped; i++) {
        uint32_t idx;
        assert_int_equal(rvi_node_index(&w->scene, grouped[i], &idx), RV_OK);
        assert_int_equal(mark[idx], 1);
    }
    free(mark);
    /* no child moved: world matrices are as they were */
    assert_int_equal(rv_node_world_matrix(w, kids[1234], after_m), RV_OK);
    assert_memory_equal(before_m, after_m, sizeof before_m);
    /* every child is still below the floor, at most ~log2(20000 / 8) + 1 groups deep, and
     * each group holds at most 8 children or exactly 2 groups */
    const rvi_scene *s = &w->scene;
    uint32_t floor_idx;
    assert_int_equal(rvi_node_index(s, floor, &floor_idx), RV_OK);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t idx, depth = 0;
        assert_int_equal(rvi_node_index(s, kids[i], &idx), RV_OK);
        uint32_t g = s->parent[idx];
        assert_true(s->aux[g].child_count <= 8);
        while (g != floor_idx) {
            const float *gs = s->world_sphere[g], *cs = s->world_sphere[idx];
            float dx = gs[0] - cs[0], dy = gs[1] - cs[1], dz = gs[2] - cs[2];
            assert_true(sqrtf(dx * dx + dy * dy + dz * dz) + cs[3] <= gs[3] * 1.0001f);
            idx = g;
            g = s->parent[g];
            depth++;
        }
        assert_true(depth <= 14);
    }
    free(flat);
    free(grouped);
    free(kids);
    rv_world_destroy(w);
}

static void test_group_spatially_with_null_groups_every_child(void **state)
{
    (void)state;
    uint64_t seed = 3;
    rv_world *w = rvt_world(NULL);
    rv_node p = rvt_node(w, RV_NODE_NONE);
    rv_node *kids = scatter_children(w, p, 100, &seed);
    assert_int_equal(rv_update_world(w), RV_OK);
    uint32_t groups;
    assert_int_equal(rv_group_spatially(w, p, NULL, 0, 0, &groups), RV_OK);
    assert_true(groups >= 100 / 32); /* the default leaf size */
    rv_node c;
    assert_int_equal(rv_node_first_child(w, p, &c), RV_OK);
    int direct = 0;
    for (; c.id; direct++)
        assert_int_equal(rv_node_next_sibling(w, c, &c), RV_OK);
    assert_int_equal(direct, 2); /* the two top groups */
    /* at most the leaf size: nothing to do */
    rv_node q = rvt_node(w, RV_NODE_NONE);
    rv_node few[3] = { rvt_node(w, q), rvt_node(w, q), rvt_node(w, q) };
    assert_int_equal(rv_group_spatially(w, q, few, 3, 4, &groups), RV_OK);
    assert_int_equal(groups, 0);
    free(kids);
    rv_world_destroy(w);
}

static void test_group_spatially_rejects_bad_children_and_changes_nothing(void **state)
{
    (void)state;
    uint64_t seed = 4;
    rv_world *w = rvt_world(NULL), *other = rvt_world(NULL);
    rv_node p = rvt_node(w, RV_NODE_NONE), stranger = rvt_node(w, RV_NODE_NONE);
    rv_node *kids = scatter_children(w, p, 40, &seed);
    rv_node foreign = rvt_node(other, RV_NODE_NONE);
    assert_int_equal(rv_update_world(w), RV_OK);
    uint64_t before = scene_digest(w);
    rv_node list[41];
    memcpy(list, kids, 40 * sizeof *kids);
    list[20] = stranger; /* not a child of p */
    assert_int_equal(rv_group_spatially(w, p, list, 40, 4, NULL), RV_ERR_INVALID_ARG);
    list[20] = kids[3];  /* a repeat */
    assert_int_equal(rv_group_spatially(w, p, list, 40, 4, NULL), RV_ERR_INVALID_ARG);
    list[20] = foreign;
    assert_int_equal(rv_group_spatially(w, p, list, 40, 4, NULL), RV_ERR_STALE_HANDLE);
    list[20] = kids[20];
    assert_int_equal(rv_group_spatially(w, p, list, 40, 1, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_group_spatially(w, foreign, NULL, 0, 4, NULL), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_group_spatially(NULL, p, NULL, 0, 4, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(scene_digest(w), before);
    /* the marks of a refused call are gone: the same list is then accepted */
    assert_int_equal(rv_group_spatially(w, p, list, 40, 4, NULL), RV_OK);
    free(kids);
    rv_world_destroy(other);
    rv_world_destroy(w);
}

typedef struct sweep_group {
    rv_world *w;
    rv_node parent;
    rv_node kids[300];
    uint32_t groups; /* the call's output: untouched by a failed call */
} sweep_group;

static void *setup_group(const rv_allocator *allocator)
{
    sweep_group *g = calloc(1, sizeof *g);
    rv_world_desc d = { .allocator = *allocator, .node_capacity = 301 }; /* full: groups grow it */
    if (rv_world_create(&d, &g->w) != RV_OK)
        return NULL;
    uint64_t seed = 11;
    g->groups = 0xA5A5A5A5u;
    g->parent = rvt_node(g->w, RV_NODE_NONE);
    for (int i = 0; i < 300; i++) {
        g->kids[i] = rvt_node(g->w, g->parent);
        rvt_set_position(g->w, g->kids[i], rvt_uniform(&seed, -50, 50), 0, rvt_uniform(&seed, -50, 50));
        rvt_set_sphere(g->w, g->kids[i], 1);
    }
    assert_int_equal(rv_update_world(g->w), RV_OK);
    return g;
}
static rv_result call_group(void *o)
{
    sweep_group *g = o;
    return rv_group_spatially(g->w, g->parent, g->kids, 300, 8, &g->groups);
}
static uint64_t fingerprint_group(void *o)
{
    const sweep_group *g = o;
    return scene_digest(g->w) ^ g->groups;
}
static void teardown_group(void *o)
{
    sweep_group *g = o;
    rv_world_destroy(g->w);
    free(g);
}

static void test_group_spatially_allocation_failure_leaves_world_unchanged(void **state)
{
    (void)state;
    rvt_sweep sweep = { "group_spatially", setup_group, call_group, fingerprint_group, teardown_group };
    assert_true(rvt_run_sweep(&sweep) >= 2); /* scratch and node storage */
}

/* A summary's box passes a block or group over only where every sphere inside it is
 * outside a plane by the walk's own float test (rvi_outside_plane): random frustums near
 * and far from the origin, random spheres, a third of them set tangent to a plane from
 * outside (the float test may then keep them), the box made around them as a run makes it
 * (the float minimum of centre - radius, the maximum of centre + radius). */
static void test_summary_box_passes_over_only_what_every_sphere_test_would(void **state)
{
    (void)state;
    uint64_t seed = 2024;
    uint32_t trials = RVT_HEAVY(400000u, 40000u), outside = 0, tangent_kept = 0;
    for (uint32_t t = 0; t < trials; t++) {
        float scale = powf(10.0f, rvt_uniform(&seed, 0, 5)); /* eyes up to 1e5 from the origin */
        const float eye[3] = { rvt_uniform(&seed, -scale, scale), rvt_uniform(&seed, -scale, scale),
                               rvt_uniform(&seed, -scale, scale) };
        const float target[3] = { eye[0] + rvt_uniform(&seed, -1, 1), eye[1] + rvt_uniform(&seed, -0.5f, 0.5f),
                                  eye[2] + rvt_uniform(&seed, -1, 1) };
        rv_frustum f = rvt_frustum(eye, target, glm_rad(rvt_uniform(&seed, 20, 120)), rvt_uniform(&seed, 5, 5000));
        uint32_t mask = f.plane_mask & RVI_FRUSTUM_ALL_PLANES;
        int n = 1 + (int)(rvt_next(&seed) % 8);
        float c[8][3], r[8], lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
        float size = powf(10.0f, rvt_uniform(&seed, -2, 3)), reach = powf(10.0f, rvt_uniform(&seed, 0, 3.7f));
        for (int k = 0; k < n; k++) {
            r[k] = rvt_uniform(&seed, 0, size);
            for (int a = 0; a < 3; a++)
                c[k][a] = eye[a] + rvt_uniform(&seed, -reach, reach);
            if (rvt_next(&seed) % 3 == 0) { /* tangent to a plane, from outside */
                int i = (int)(rvt_next(&seed) % 6);
                if (mask & (1u << i)) {
                    float d = rvi_plane_distance(f.planes[i], c[k]) + r[k];
                    for (int a = 0; a < 3; a++)
                        c[k][a] -= d * f.planes[i][a];
                }
            }
            for (int a = 0; a < 3; a++) {
                lo[a] = fminf(lo[a], c[k][a] - r[k]);
                hi[a] = fmaxf(hi[a], c[k][a] + r[k]);
            }
        }
        if (!rvi_walk_box_outside(&f, lo, hi, mask))
            continue;
        outside++;
        for (int k = 0; k < n; k++) {
            bool culled = false;
            for (int i = 0; i < 6 && !culled; i++)
                culled = (mask & (1u << i)) && rvi_outside_plane(rvi_plane_distance(f.planes[i], c[k]), r[k]);
            if (!culled)
                fail_msg("trial %u: the box is outside, sphere %d (radius %g) is not", t, k, (double)r[k]);
        }
    }
    /* The worst case: a sphere moved out, a float step at a time along the axis nearest a
     * plane's normal, to the last place where the float test still keeps it; a box made
     * around it must not be passed over. Axis-aligned planes first (no slack between the
     * box and the sphere along them), then any. */
    for (uint32_t t = 0; t < 20000; t++) {
        float s = powf(10.0f, rvt_uniform(&seed, 0, 4));
        const float eye[3] = { rvt_uniform(&seed, -s, s), rvt_uniform(&seed, -s, s), rvt_uniform(&seed, -s, s) };
        float target[3] = { eye[0], eye[1], eye[2] - 1 };
        if (t % 2)
            for (int a = 0; a < 3; a++)
                target[a] = eye[a] + rvt_uniform(&seed, -1, 1);
        rv_frustum f = rvt_frustum(eye, target, glm_rad(rvt_uniform(&seed, 30, 90)), rvt_uniform(&seed, 10, 3000));
        int i = (int)(rvt_next(&seed) % 6);
        if (!(f.plane_mask & (1u << i)))
            continue;
        const float *q = f.planes[i];
        int axis = fabsf(q[0]) >= fabsf(q[1]) && fabsf(q[0]) >= fabsf(q[2]) ? 0 : fabsf(q[1]) >= fabsf(q[2]) ? 1 : 2;
        float c[3] = { eye[0] + rvt_uniform(&seed, -s, s), eye[1] + rvt_uniform(&seed, -s, s), eye[2] + rvt_uniform(&seed, -s, s) };
        float r = powf(10.0f, rvt_uniform(&seed, -3, 2));
        float d = rvi_plane_distance(q, c) + r;
        for (int a = 0; a < 3; a++)
            c[a] -= d * q[a];
        float away = q[axis] > 0 ? -INFINITY : INFINITY; /* the way out of the plane */
        for (int step = 0; step < 64 && !rvi_outside_plane(rvi_plane_distance(q, c), r); step++)
            c[axis] = nextafterf(c[axis], away);
        for (int step = 0; step < 64 && rvi_outside_plane(rvi_plane_distance(q, c), r); step++)
            c[axis] = nextafterf(c[axis], -away);
        if (rvi_outside_plane(rvi_plane_distance(q, c), r))
            continue;
        tangent_kept++;
        float lo[3] = { c[0] - r, c[1] - r, c[2] - r }, hi[3] = { c[0] + r, c[1] + r, c[2] + r };
        if (rvi_walk_box_outside(&f, lo, hi, 1u << i))
            fail_msg("trial %u: a sphere the float test keeps (plane %d) is in a box passed over", t, i);
    }
    assert_true(outside > trials / 10);
    assert_true(tangent_kept > 5000);
}

/* Runs of leaves (consecutive slots, linked in order) are classified by a vector pass on
 * AVX-512, AVX2 or plain C, whichever the CPU has: every code path gives the same verdicts
 * and, for a walk that keeps summaries, the same summary and box; each lane's verdict is
 * the one-by-one test's (the plane test, the LOD cutoff), and a lane only to be handed out
 * is one the one-by-one test draws. */
static void test_runs_of_leaves_classify_alike_on_every_code_path(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL);
    enum { N = 3000 };
    rv_node group = rvt_node(w, RV_NODE_NONE), nodes[N];
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    assert_int_equal(rv_lod_ladder_make(t, 3, &ladder), RV_OK);
    uint64_t seed = 17;
    for (int i = 0; i < N; i++) {
        nodes[i] = rvt_node(w, group);
        rvt_set_position(w, nodes[i], rvt_uniform(&seed, -150, 150), rvt_uniform(&seed, -3, 3), rvt_uniform(&seed, -150, 150));
        if (i % 11 != 3) /* some leaves without geometry */
            rvt_set_sphere(w, nodes[i], rvt_uniform(&seed, 0.1f, 2.0f));
        if (i % 3 || i >= N / 2) /* the second half all with ladders: whole runs at rest */
            assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], &ladder), RV_OK);
    }
    /* Frames from a few eyes: far nodes come to rest at "nothing" (their cutoffs set); the
     * last from far away, where every node rests there, so whole runs have a summary. */
    for (int f = 0; f < 5; f++) {
        const float eye[3] = { f < 4 ? 20.0f * (float)f : 0, f < 4 ? 2 : 400, f < 4 ? 0 : 1500 };
        const float target[3] = { 0, 0, f < 4 ? -100 : 0 };
        float vp[16], view[16];
        mat4 proj, vw;
        vec3 e = { eye[0], eye[1], eye[2] }, tg = { target[0], target[1], target[2] }, up = { 0, 1, 0 };
        glm_perspective(glm_rad(60.0f), 16.0f / 9.0f, 0.1f, 4000, proj);
        glm_lookat(e, tg, up, vw);
        memcpy(vp, proj, sizeof vp);
        memcpy(view, vw, sizeof view);
        rv_view v = { .view = view, .projection = vp, .viewport_width = 640, .viewport_height = 360, .time_ms = 16.0 * f };
        rv_frame_view out;
        assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    }
    const float eye[3] = { 30, 2, 10 }, target[3] = { -40, 0, -90 };
    rv_frustum fr = rvt_frustum(eye, target, glm_rad(60.0f), 300);
    rvi_walk_policy p = { 0 };
    p.scene = &w->scene;
    p.frustum = &fr;
    p.cutoff_sq = rvi_lod_cutoff(w, &p.cutoff_count);
    memcpy(p.eye, eye, sizeof eye);
    rvi_simd_level best = rvi_simd_best_level();
    rvi_walk_summaries kept = { 0 }; /* the kernels only ask whether there are summaries */
    uint32_t first = (uint32_t)(nodes[0].id & 0xFFFFFF), lanes = 0, cut = 0, handed = 0, summarised = 0;
    uint32_t visit_boxes = 0; /* lanes in a visit box */
    for (uint32_t k = 0; k + 64 < N; k += 7) {
        uint32_t mask = (uint32_t)(rvt_next(&seed) & fr.plane_mask), limit = 1 + (uint32_t)(rvt_next(&seed) % 64);
        p.summaries = (k / 7) % 2 ? &kept : NULL;
        rvi_walk_run ref;
        memset(&ref, 0, sizeof ref);
        rvi_walk_classify_run(&p, RVI_SIMD_SCALAR, mask, first + k, limit, &ref);
        for (int level = RVI_SIMD_AVX2; level <= (int)best; level++) {
            rvi_walk_run got;
            memset(&got, 0, sizeof got);
            rvi_walk_classify_run(&p, level, mask, first + k, limit, &got);
            assert_int_equal(got.n, ref.n);
            if (ref.n < RVI_WALK_RUN_MIN)
                continue;
            assert_true(got.outside == ref.outside && got.visit_lane == ref.visit_lane &&
                        got.visit_whole == ref.visit_whole && got.hand_out == ref.hand_out);
            assert_int_equal(got.settled, ref.settled);
            assert_int_equal(got.n_cut, ref.n_cut);
            assert_int_equal(got.acc.ok, ref.acc.ok);
            assert_int_equal(got.bound_ok, ref.bound_ok);
            if (p.summaries)
                assert_true(got.acc.k == ref.acc.k && got.acc.r == ref.acc.r);
            if (p.summaries && ref.bound_ok)
                assert_true(memcmp(got.lo, ref.lo, sizeof ref.lo) == 0 && memcmp(got.hi, ref.hi, sizeof ref.hi) == 0 &&
                            memcmp(&got.visit, &ref.visit, sizeof ref.visit) == 0);
        }
        summarised += p.summaries && ref.n >= RVI_WALK_RUN_MIN && ref.acc.ok && ref.bound_ok;
        if (ref.n < RVI_WALK_RUN_MIN)
            continue;
        if (p.summaries && ref.bound_ok) {
            /* The visit box is the box around the geometry lanes that do not rest at
             * "nothing", exactly; k and r bound the ones that do. */
            rvi_walk_box want = { { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY } };
            float k_min = INFINITY, r_max = 0;
            for (uint32_t j = 0; j < ref.n; j++) {
                uint32_t i = first + k + j;
                const float *ws = w->scene.world_sphere[i];
                if (!(w->scene.flags[i] & RVI_NODE_HAS_GEOMETRY))
                    continue;
                float kj = (w->scene.flags[i] & RVI_NODE_HAS_LOD) && i < p.cutoff_count ? p.cutoff_sq[i] : 0.0f;
                if (kj > 0) {
                    k_min = fminf(k_min, kj);
                    r_max = fmaxf(r_max, ws[3]);
                    continue;
                }
                for (int a = 0; a < 3; a++) {
                    want.lo[a] = fminf(want.lo[a], ws[a] - ws[3]);
                    want.hi[a] = fmaxf(want.hi[a], ws[a] + ws[3]);
                }
                visit_boxes++;
            }
            assert_memory_equal(&ref.visit, &want, sizeof want);
            assert_true(ref.acc.k == k_min && ref.acc.r == r_max);
        }
        for (uint32_t j = 0; j < ref.n; j++) {
            uint32_t i = first + k + j, m = mask;
            const float *ws = w->scene.world_sphere[i];
            if ((ref.visit_whole >> j) & 1)
                continue;
            bool outside = rvi_classify_sphere_masked(&fr, ws, ws[3], &m) == RV_OUTSIDE;
            assert_int_equal(((ref.outside >> j) & 1) != 0, outside);
            bool settled = !((ref.visit_lane >> j) & 1);
            bool has_geometry = (w->scene.flags[i] & RVI_NODE_HAS_GEOMETRY) != 0;
            if (settled && !outside) /* not drawn, or dropped by the cutoff */
                assert_true(!has_geometry || rvi_walk_cut(&p, i, ws));
            if ((ref.hand_out >> j) & 1) /* drawn as it stands */
                assert_true(!settled && !outside && has_geometry && !rvi_walk_cut(&p, i, ws));
            lanes++;
            cut += settled && !outside && has_geometry;
            handed += (ref.hand_out >> j) & 1;
        }
    }
    /* not vacuous: runs, lanes the cutoff drops, lanes handed out, runs summarised */
    assert_true(lanes > 1000 && cut > 10 && handed > 10 && summarised > 0 && visit_boxes > 10);
    rv_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_visit_visible_never_skips_a_node_whose_sphere_meets_the_frustum),
        cmocka_unit_test(test_visit_prunes_subtree_outside_in_one_test),
        cmocka_unit_test(test_visit_skips_plane_tests_below_a_sphere_inside_every_plane),
        cmocka_unit_test(test_visit_tests_own_geometry_of_a_node_with_children),
        cmocka_unit_test(test_visit_from_a_root_walks_only_its_subtree_in_order),
        cmocka_unit_test(test_visit_hands_out_in_pre_order_when_planes_cut_parents),
        cmocka_unit_test(test_visit_stops_when_the_callback_returns_false),
        cmocka_unit_test(test_visit_refuses_structural_calls_from_the_callback),
        cmocka_unit_test(test_visit_rejects_bad_arguments),
        cmocka_unit_test(test_visit_allocates_nothing),
        cmocka_unit_test(test_visit_draws_a_node_of_unknown_placement_and_its_subtree_until_it_composes),
        cmocka_unit_test(test_group_spatially_makes_20000_loose_children_cull_hierarchically),
        cmocka_unit_test(test_group_spatially_with_null_groups_every_child),
        cmocka_unit_test(test_group_spatially_rejects_bad_children_and_changes_nothing),
        cmocka_unit_test(test_group_spatially_allocation_failure_leaves_world_unchanged),
        cmocka_unit_test(test_runs_of_leaves_classify_alike_on_every_code_path),
        cmocka_unit_test(test_summary_box_passes_over_only_what_every_sphere_test_would),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
