/* rv_frame end to end on small scenes: every stage counted, frame view validity, zero
 * steady allocations, extra views, bad view input rejected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "frame.h"
#include "support/rvt.h"
#include "support/rvt_scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------- */

static bool view_draws(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n))
            return true;
    for (uint32_t i = 0; i < v->translucent_count; i++)
        if (rv_node_equal(v->translucent[i].node, n))
            return true;
    return false;
}

/* The item of node n in v (NULL when it is not listed); *translucent says which list. */
static const rv_draw_item *view_item(const rv_frame_view *v, rv_node n, bool *translucent)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n)) {
            *translucent = false;
            return &v->opaque[i];
        }
    for (uint32_t i = 0; i < v->translucent_count; i++)
        if (rv_node_equal(v->translucent[i].node, n)) {
            *translucent = true;
            return &v->translucent[i];
        }
    return NULL;
}

/* The first opaque item of node n in v, NULL when it has none. */
static const rv_draw_item *item_of(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->opaque_count; i++)
        if (rv_node_equal(v->opaque[i].node, n))
            return &v->opaque[i];
    return NULL;
}

static const float eye0[3] = { 0, 1.7f, 0 };
static const float ahead[3] = { 0, 1.7f, -10 };

/* A dynamic projection at the origin: no rotation, unit scale, a unit bounding sphere. */
static rv_projection unit_projection(void)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform.rotation[3] = 1;
    p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1;
    p.transform.bounds[3] = 1;
    p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
    return p;
}

/* ---- tests ------------------------------------------------------------------------------ */

/* The drawn nodes of a frame, as sorted handle ids. */
static uint32_t drawn_ids(const rv_frame_view *v, uint64_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < v->opaque_count && n < cap; i++)
        out[n++] = v->opaque[i].node.id;
    for (uint32_t i = 0; i < v->translucent_count && n < cap; i++)
        out[n++] = v->translucent[i].node.id;
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: a few hundred */
        uint64_t x = out[i];
        uint32_t j = i;
        for (; j > 0 && out[j - 1] > x; j--)
            out[j] = out[j - 1];
        out[j] = x;
    }
    return n;
}

static uint32_t count_roots(const rv_world *w)
{
    uint32_t n = 0;
    rv_node r;
    assert_int_equal(rv_world_first_root(w, &r), RV_OK);
    for (; r.id; n++)
        assert_int_equal(rv_node_next_sibling(w, r, &r), RV_OK);
    return n;
}

static void test_group_spatially_groups_roots_and_the_frame_draws_the_same(void **state)
{
    (void)state;
    enum { N = 3000, CAP = N + 8, LOOKS = 6 };
    rv_world *w = rvt_world_occlusion(0);
    rv_node *nodes = malloc(N * sizeof *nodes);
    uint64_t seed = 41;
    for (int i = 0; i < N; i++)
        nodes[i] = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -300, 300), rvt_uniform(&seed, -5, 5),
                              rvt_uniform(&seed, -300, 300), rvt_uniform(&seed, 0.2f, 3));
    assert_int_equal(rv_update_world(w), RV_OK);
    uint64_t *before = malloc(LOOKS * CAP * sizeof *before), *after = malloc(CAP * sizeof *after);
    uint32_t counts[LOOKS];
    rvt_camera c[LOOKS];
    for (int k = 0; k < LOOKS; k++) {
        float target[3] = { cosf(1.05f * (float)k) * 10, 1.7f, sinf(1.05f * (float)k) * 10 };
        rvt_camera_make(&c[k], eye0, target, 1.0f, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c[k].v, &v), RV_OK);
        counts[k] = drawn_ids(&v, before + (size_t)k * CAP, CAP);
        assert_true(counts[k] > 50 && counts[k] < N / 2);
    }
    float kept[16], now[16];
    assert_int_equal(rv_node_world_matrix(w, nodes[777], kept), RV_OK);

    /* a list with one node that is not a root is refused, nothing changed */
    rv_node child = rvt_object(w, nodes[5], 0, 0, 0, 1);
    rv_node list[3] = { nodes[1], child, nodes[2] };
    assert_int_equal(rv_group_spatially(w, RV_NODE_NONE, list, 3, 2, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(count_roots(w), N);
    assert_int_equal(rv_node_destroy_subtree(w, child), RV_OK);

    uint32_t groups = 0;
    assert_int_equal(rv_group_spatially(w, RV_NODE_NONE, NULL, 0, 8, &groups), RV_OK);
    assert_true(groups > N / 8 && groups < N);
    assert_int_equal(count_roots(w), 2);
    assert_int_equal(rv_world_scene_stats(w).nodes, N + groups);
    rv_node parent;
    assert_int_equal(rv_node_parent(w, nodes[777], &parent), RV_OK);
    assert_true(parent.id != 0);
    assert_int_equal(rv_node_world_matrix(w, nodes[777], now), RV_OK);
    assert_memory_equal(kept, now, sizeof kept);
    /* the same objects drawn, at once and after an update */
    for (int update = 0; update < 2; update++) {
        for (int k = 0; k < LOOKS; k++) {
            rv_frame_view v;
            assert_int_equal(rv_frame(w, &c[k].v, &v), RV_OK);
            assert_int_equal(drawn_ids(&v, after, CAP), counts[k]);
            assert_memory_equal(after, before + (size_t)k * CAP, counts[k] * sizeof *after);
            assert_true(v.counts.nodes_visited < N / 2);
        }
        assert_int_equal(rv_update_world(w), RV_OK);
    }
    /* a few new roots, grouped by an explicit list, join the old top groups as roots */
    rv_node more[20];
    for (int i = 0; i < 20; i++)
        more[i] = rvt_object(w, RV_NODE_NONE, (float)i, 0, -20, 0.5f);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_group_spatially(w, RV_NODE_NONE, more, 20, 4, &groups), RV_OK);
    assert_true(groups >= 4);
    assert_int_equal(count_roots(w), 4);
    free(before);
    free(after);
    free(nodes);
    rv_world_destroy(w);
}

static void test_frame_draws_exactly_the_frustum_visible_objects(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    enum { N = 400 };
    rv_node nodes[N];
    float pos[N][3];
    uint64_t seed = 7;
    rv_node group;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &group), RV_OK);
    for (int i = 0; i < N; i++) {
        pos[i][0] = rvt_uniform(&seed, -100, 100);
        pos[i][1] = rvt_uniform(&seed, -5, 5);
        pos[i][2] = rvt_uniform(&seed, -100, 100);
        nodes[i] = rvt_object(w, i % 2 ? group : RV_NODE_NONE, pos[i][0], pos[i][1], pos[i][2], 0.5f);
    }
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    /* Reference: each object's own sphere against the frustum, brute force. */
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += c.projection[k * 4 + r] * c.view[col * 4 + k];
            vp[col * 4 + r] = acc;
        }
    rv_frustum fr;
    assert_int_equal(rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &fr), RV_OK);
    uint32_t expected = 0;
    for (int i = 0; i < N; i++) {
        bool inside = rv_frustum_classify_sphere(&fr, pos[i], 0.5f) != RV_OUTSIDE;
        expected += inside;
        assert_int_equal(view_draws(&v, nodes[i]), inside);
    }
    assert_true(expected > 10 && expected < N);
    assert_int_equal(v.opaque_count, expected);
    /* The view hands out the frustum it was culled with; an extra view with the same camera
     * alike. */
    rv_view_list *list;
    rv_frame_view extra;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    /* An extra view names no world arena, and counts its list's culls. */
    assert_int_equal(extra.arena, 2);
    assert_true(extra.generation == 1 && extra.frame_sequence == 1);
    assert_false(rv_frame_view_is_valid(w, &extra));
    rv_frame_view again;
    assert_int_equal(rv_cull_view(w, &c.v, list, &again), RV_OK);
    assert_true(again.arena == 2 && again.generation == 2 && again.frame_sequence == 2);
    assert_true(v.arena < 2);
    for (int i = 0; i < N; i++) {
        assert_int_equal(rv_frustum_classify_sphere(&v.frustum, pos[i], 0.5f) != RV_OUTSIDE, view_draws(&v, nodes[i]));
        assert_int_equal(rv_frustum_classify_sphere(&extra.frustum, pos[i], 0.5f) != RV_OUTSIDE,
                         view_draws(&extra, nodes[i]));
    }
    rv_view_list_destroy(list);
    assert_true(v.counts.frustum_culled > 0);
    assert_int_equal(v.counts.opaque, expected);
    /* Front to back. */
    for (uint32_t i = 1; i < v.opaque_count; i++)
        assert_true(v.opaque[i - 1].view_depth <= v.opaque[i].view_depth);
    rv_world_destroy(w);
}

/* A 6 x 10 m occluder wall 10 m ahead of eye0 (z from -10.5 to -10). */
static rv_node wall_ahead(rv_world *w)
{
    rv_node wall;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
    float wmin[3] = { -3, 0, -10.5f }, wmax[3] = { 3, 10, -10 };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    return wall;
}

static void test_occluder_node_hides_objects_behind_and_group_prunes(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    /* A wall 10 m ahead; a crate behind it, one beside it, one in front. */
    wall_ahead(w);
    rv_node behind = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_node beside = rvt_object(w, RV_NODE_NONE, 10, 1.5f, -20, 0.5f);
    rv_node front = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -5, 0.5f);
    rv_node grp;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &grp), RV_OK);
    rv_node g1 = rvt_object(w, grp, -1, 1.5f, -30, 0.5f);
    rv_node g2 = rvt_object(w, grp, 1, 1.5f, -30, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, behind));
    assert_true(view_draws(&v, beside));
    assert_true(view_draws(&v, front));
    assert_false(view_draws(&v, g1));
    assert_false(view_draws(&v, g2));
    assert_true(v.counts.occlusion_culled >= 2);
    assert_int_equal(v.counts.occluders_added, 1);
    assert_int_equal(v.counts.occluders_rasterised, 1);
    /* After the frame the host tests its own things against the world's buffer: a crate
     * behind the wall is hidden, one in front and one beside it are not. */
    rv_occlusion *occ = rv_world_occlusion(w);
    assert_non_null(occ);
    const float cmin[3] = { -0.5f, 1, -0.5f }, cmax[3] = { 0.5f, 2, 0.5f };
    const float at[3][3] = { { 0, 0, -25 }, { 0, 0, -5 }, { 10, 0, -25 } };
    for (int k = 0; k < 3; k++) {
        float m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, at[k][0], at[k][1], at[k][2], 1 };
        bool visible = false;
        assert_int_equal(rv_occlusion_test_box(occ, cmin, cmax, m, &visible), RV_OK);
        assert_int_equal(visible, k != 0);
    }
    /* The world alone changes its buffer: the host's begin, adds and feed are refused and
     * change nothing (the crate behind stays hidden), its destroy is ignored. */
    float vp[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1, -1, 0, 0, -0.2f, 0 };
    const float pos[3][3] = { { 0, 0, -1 }, { 1, 0, -1 }, { 0, 1, -1 } };
    const uint32_t tri[3] = { 0, 1, 2 };
    const float planes[6][4] = { { 1, 0, 0, -1 }, { -1, 0, 0, -1 }, { 0, 1, 0, -1 },
                                 { 0, -1, 0, -1 }, { 0, 0, 1, -1 }, { 0, 0, -1, -1 } };
    rv_occluder_mesh mesh = { pos, 3, tri, 3, 0 };
    rv_occluder_convex convex = { planes, 6, 0 };
    float texel = 0.5f;
    rv_depth_feed feed = { .texels = &texel, .width = 1, .height = 1, .format = RV_DEPTH_FLOAT32,
                           .view_projection = vp, .age = 1 };
    rv_occlusion_stats before = rv_occlusion_get_stats(occ);
    assert_int_equal(rv_occlusion_begin(occ, vp, c.v.clip, 1.0f), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_add_occluder(occ, cmin, cmax, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_add_convex(occ, &convex, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_add_mesh(occ, &mesh, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_feed_depth(occ, &feed), RV_ERR_BAD_STATE);
    rv_occlusion_destroy(occ);
    assert_true(rv_world_occlusion(w) == occ);
    rv_occlusion_stats after = rv_occlusion_get_stats(occ);
    assert_memory_equal(&before, &after, sizeof before);
    float behind_m[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, -25, 1 };
    bool hidden_still = true;
    assert_int_equal(rv_occlusion_test_box(occ, cmin, cmax, behind_m, &hidden_still), RV_OK);
    assert_false(hidden_still);
    /* The extra view has no occlusion: it draws what the frustum sees. */
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    rv_frame_view extra;
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    assert_true(view_draws(&extra, behind));
    assert_true(view_draws(&extra, g1));
    assert_false(rv_frame_view_is_valid(w, &extra));
    /* Its counts describe its lists, the LOD histogram included (no ladders: level 0). */
    uint32_t drawn = extra.opaque_count + extra.translucent_count, binned = 0;
    for (int b = 0; b < RV_LOD_HISTOGRAM_BINS; b++)
        binned += extra.counts.lod_histogram[b];
    assert_int_equal(extra.counts.opaque, extra.opaque_count);
    assert_true(drawn >= 5);
    assert_int_equal(binned, drawn);
    assert_int_equal(extra.counts.lod_histogram[0], drawn);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* A viewport so tall or so wide that the buffer's height would pass RV_OCCLUSION_MAX_SIZE
 * rows or fall below one still culls, with the height held in range: what is in front of
 * the wall is drawn, and in the tall views the wall hides what is behind it (in the wide
 * one a single row spans the whole height of the view, more than the wall covers). */
static void test_a_viewport_of_any_shape_keeps_occlusion(void **state)
{
    (void)state;
    const uint32_t shapes[3][2] = { { 20, 4000 }, { 200000, 40 }, { 1, 65535 } };
    for (int k = 0; k < 3; k++) {
        rv_world *w = rvt_world_occlusion(256);
        wall_ahead(w);
        rv_node behind = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
        rv_node front = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -5, 0.5f);
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
        c.v.viewport_width = shapes[k][0];
        c.v.viewport_height = shapes[k][1];
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_true(view_draws(&v, front));
        if (k != 1) {
            assert_false(view_draws(&v, behind));
            assert_true(v.counts.occlusion_culled >= 1);
        }
        rv_world_destroy(w);
    }
}

/* rv_world_desc.group_retest_frames: a subtree found visible is tested again at least every
 * n frames, on one frame in n; in between its objects are tested one by one, so a wall put
 * in front of it hides them at once. A hidden subtree is tested every frame. */
/* A frame whose buffer hides nothing (no occluder in view, or none at all) tests nothing
 * against it and draws what a world without occlusion draws; the next frame with a wall
 * in view tests and hides again. */
static void test_a_buffer_that_hides_nothing_tests_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256), *plain = rvt_world(NULL);
    rv_node wall = wall_ahead(w);
    float away[3] = { 0, 0, 40 }, home[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_position(w, wall, away), RV_OK); /* behind the eye */
    rv_node grp = rvt_node(w, RV_NODE_NONE), pgrp = rvt_node(plain, RV_NODE_NONE);
    rv_node behind = rvt_object(w, grp, 0, 1.5f, -20, 0.5f);
    rvt_object(w, grp, 2, 1.5f, -25, 0.5f);
    rvt_object(plain, pgrp, 0, 1.5f, -20, 0.5f);
    rvt_object(plain, pgrp, 2, 1.5f, -25, 0.5f);
    rvt_camera c;
    rv_frame_view v, pv;
    for (int frame = 0; frame < 3; frame++) {
        rvt_camera_make(&c, eye0, ahead, 1.2f, 16.0 * frame);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.counts.occlusion_tested, 0);
        assert_int_equal(v.counts.occlusion_culled, 0);
        assert_int_equal(v.opaque_count, 2);
        assert_int_equal(rv_frame(plain, &c.v, &pv), RV_OK);
        assert_int_equal(pv.opaque_count, 2);
        for (uint32_t k = 0; k < 2; k++)
            assert_memory_equal(v.opaque[k].world_matrix, pv.opaque[k].world_matrix, sizeof pv.opaque[k].world_matrix);
    }
    /* The wall comes back in front: tested and hidden on the next frame. */
    assert_int_equal(rv_node_set_position(w, wall, home), RV_OK);
    rvt_camera_make(&c, eye0, ahead, 1.2f, 48.0);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(v.counts.occlusion_tested > 0);
    assert_false(view_draws(&v, behind));
    rv_world_destroy(w);
    rv_world_destroy(plain);
}

static void test_visible_subtree_retested_every_n_frames(void **state)
{
    (void)state;
    rv_world_desc bad = { 0 };
    rv_world *w = NULL;
    bad.group_retest_frames = RV_MAX_GROUP_RETEST_FRAMES + 1;
    assert_int_equal(rv_world_create(&bad, &w), RV_ERR_INVALID_ARG);
    assert_null(w);
    for (uint32_t n = 1; n <= 4; n += 3) {
        rv_world_desc d = { 0 };
        d.occlusion.width = 256;
        d.group_retest_frames = n;
        w = rvt_world(&d);
        /* A wall in view but off to the side at first (a buffer that hides nothing is not
         * tested against: see test_a_buffer_that_hides_nothing_tests_nothing); a group of
         * two crates 30 m ahead. */
        rv_node wall = wall_ahead(w);
        float aside[3] = { 6.5f, 0, 0 }, home[3] = { 0, 0, 0 };
        assert_int_equal(rv_node_set_position(w, wall, aside), RV_OK);
        rv_node grp = rvt_node(w, RV_NODE_NONE);
        rv_node g1 = rvt_object(w, grp, -1, 1.5f, -30, 0.5f);
        rv_node g2 = rvt_object(w, grp, 1, 1.5f, -30, 0.5f);
        rvt_camera c;
        rv_frame_view v;
        uint32_t frame = 0, group_tests = 0;
        /* Eight frames in view after the first: the group is tested on 8 / n of them. */
        for (; frame < 9; frame++) {
            rvt_camera_make(&c, eye0, ahead, 1.2f, 16.0 * frame);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_true(view_draws(&v, g1) && view_draws(&v, g2));
            assert_int_equal(v.counts.occlusion_culled, 0);
            assert_true(v.counts.occlusion_tested == 2 || v.counts.occlusion_tested == 3);
            group_tests += frame > 0 && v.counts.occlusion_tested == 3;
        }
        assert_int_equal(group_tests, 8 / n);
        /* The wall comes back: the crates are hidden from the next frame on, one by one
         * until the group's own test comes round (within n frames), then as a group. */
        assert_int_equal(rv_node_set_position(w, wall, home), RV_OK);
        uint32_t waited = 0;
        for (;; frame++, waited++) {
            assert_true(waited < n);
            rvt_camera_make(&c, eye0, ahead, 1.2f, 16.0 * frame);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_false(view_draws(&v, g1) || view_draws(&v, g2));
            if (v.counts.occlusion_tested == 1)
                break;
            assert_int_equal(v.counts.occlusion_tested, 2);
            assert_int_equal(v.counts.occlusion_culled, 2);
        }
        assert_int_equal(v.counts.occlusion_culled, 1);
        /* Hidden, it is tested (and pruned) every frame. */
        for (int k = 0; k < 3; k++) {
            rvt_camera_make(&c, eye0, ahead, 1.2f, 16.0 * ++frame);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_int_equal(v.counts.occlusion_tested, 1);
            assert_int_equal(v.counts.occlusion_culled, 1);
        }
        rv_world_destroy(w);
    }
}

/* A node with geometry of its own and a child: its own geometry behind a wall, the child
 * beside it in view. A passing subtree test draws the node's own geometry untested, and a
 * skipped one must do the same: in a still scene the drawn list is the same every frame,
 * whatever group_retest_frames is. */
static void test_skipped_subtree_test_draws_what_a_passing_one_does(void **state)
{
    (void)state;
    uint64_t digests[2][9];
    for (uint32_t k = 0; k < 2; k++) {
        rv_world_desc d = { 0 };
        d.occlusion.width = 256;
        d.group_retest_frames = k ? 4 : 1;
        rv_world *w = rvt_world(&d);
        wall_ahead(w);
        rv_node parent = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
        rv_node child = rvt_object(w, parent, 12, 0, 0, 0.5f);
        rvt_camera c;
        rv_frame_view v;
        for (uint32_t frame = 0; frame < 9; frame++) {
            rvt_camera_make(&c, eye0, ahead, 1.2f, 16.0 * frame);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_true(view_draws(&v, parent) && view_draws(&v, child));
            digests[k][frame] = rv_frame_view_digest(&v);
            assert_int_equal(digests[k][frame], digests[k][0]);
        }
        rv_world_destroy(w);
    }
    assert_int_equal(digests[0][0], digests[1][0]);
}

static void test_per_frame_occluder_needs_open_frame(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    rv_node behind = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    float mn[3] = { -10, 0, -10.5f }, mx[3] = { 10, 10, -10 };
    assert_int_equal(rv_frame_add_occluder(w, mn, mx, NULL), RV_ERR_BAD_STATE);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_int_equal(rv_frame_begin(w, &c.v), RV_ERR_BAD_STATE);
    float bad[3] = { 11, 0, 0 };
    assert_int_equal(rv_frame_add_occluder(w, bad, mx, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_frame_add_occluder(w, mn, mx, NULL), RV_OK);
    assert_int_equal(rv_frame_cull(w), RV_OK);
    assert_int_equal(rv_frame_add_occluder(w, mn, mx, NULL), RV_ERR_BAD_STATE);
    rv_frame_view v;
    assert_int_equal(rv_frame_end(w, &v), RV_OK);
    assert_false(view_draws(&v, behind));
    /* Next frame: no occluder, so it is drawn again. */
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    rv_world_destroy(w);
}

static void test_view_stays_valid_until_its_arena_is_reused(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v1, v2, v3;
    assert_int_equal(rv_frame(w, &c.v, &v1), RV_OK);
    assert_true(rv_frame_view_is_valid(w, &v1));
    assert_int_equal(v1.frame_sequence, 1);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_true(rv_frame_view_is_valid(w, &v1)); /* frame 2 builds in the other arena */
    assert_int_equal(rv_frame_cull(w), RV_OK);
    assert_int_equal(rv_frame_end(w, &v2), RV_OK);
    assert_true(rv_frame_view_is_valid(w, &v1));
    assert_true(rv_frame_view_is_valid(w, &v2));
    assert_int_not_equal(v1.arena, v2.arena);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_false(rv_frame_view_is_valid(w, &v1)); /* its arena is being rebuilt */
    assert_true(rv_frame_view_is_valid(w, &v2));
    /* Abort: nothing published, v2 stays valid, v1 stays invalid. */
    assert_int_equal(rv_frame_abort(w), RV_OK);
    assert_true(rv_frame_view_is_valid(w, &v2));
    assert_false(rv_frame_view_is_valid(w, &v1));
    c.v.time_ms = 48;
    assert_int_equal(rv_frame(w, &c.v, &v3), RV_OK);
    assert_int_equal(v3.frame_sequence, 3);
    assert_true(rv_frame_view_is_valid(w, &v3));
    assert_true(rv_frame_view_is_valid(w, &v2));
    assert_false(rv_frame_view_is_valid(w, &v1));
    rv_world *other = rvt_world_occlusion(0);
    assert_false(rv_frame_view_is_valid(other, &v3));
    assert_false(rv_frame_view_is_valid(w, NULL));
    rv_world_destroy(other);
    rv_world_destroy(w);
}

/* A host allocator that hands a freed block back to the next request of its size, as pool
 * allocators do: the next world is then made at the address of the one destroyed. */
/* Room for every block a world frees (a few dozen today), so none goes back to libc. */
#define RECYCLER_BLOCKS 1024
typedef struct recycler {
    void *block[RECYCLER_BLOCKS];
    size_t size[RECYCLER_BLOCKS];
    uint32_t count;
    int64_t live; /* blocks handed out and not given back */
} recycler;

static void *recycle_alloc(size_t size, void *user)
{
    recycler *r = user;
    r->live++;
    for (uint32_t i = r->count; i-- > 0;)
        if (r->size[i] == size) {
            void *p = r->block[i];
            r->block[i] = r->block[--r->count];
            r->size[i] = r->size[r->count];
            return p;
        }
    return malloc(size);
}

static void recycle_free(void *ptr, size_t size, void *user)
{
    recycler *r = user;
    if (!ptr)
        return;
    r->live--;
    if (r->count == RECYCLER_BLOCKS) {
        free(ptr);
        return;
    }
    r->block[r->count] = ptr;
    r->size[r->count++] = size;
}

static void *recycle_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    void *p = recycle_alloc(new_size, user);
    if (p && ptr)
        memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    if (p)
        recycle_free(ptr, old_size, user);
    return p;
}

static void test_handles_and_views_of_a_destroyed_world_fail_in_the_next_one(void **state)
{
    (void)state;
    static recycler r; /* 16 KiB: off the stack */
    r.count = 0;
    rv_world_desc desc = { 0 };
    desc.allocator = (rv_allocator){ recycle_alloc, recycle_realloc, recycle_free, &r };
    desc.occlusion.width = 64;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_world *a = rvt_world(&desc);
    rv_node old = rvt_object(a, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_frame_view va;
    assert_int_equal(rv_frame(a, &c.v, &va), RV_OK);
    assert_true(view_draws(&va, old));
    rv_world_destroy(a);
    rv_world *b = rvt_world(&desc);
    assert_ptr_equal(b, a); /* the case under test: the old address, reused */
    rv_node mine = rvt_object(b, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    assert_int_equal(mine.id & 0xFFFFFFFFFFFFull, old.id & 0xFFFFFFFFFFFFull); /* same slot and generation */
    rv_frame_view vb;
    assert_int_equal(rv_frame(b, &c.v, &vb), RV_OK);
    assert_false(rv_node_is_valid(b, old));
    float p[3] = { 100, 200, 300 }, m[16];
    assert_int_equal(rv_node_set_position(b, old, p), RV_ERR_STALE_HANDLE);
    assert_int_equal(rv_node_destroy_subtree(b, old), RV_ERR_STALE_HANDLE);
    assert_true(rv_node_is_valid(b, mine));
    assert_int_equal(rv_node_world_matrix(b, mine, m), RV_OK);
    assert_float_equal(m[14], -20.0f, 0.0f);
    assert_false(rv_frame_view_is_valid(b, &va));
    assert_true(rv_frame_view_is_valid(b, &vb));
    rv_world_destroy(b);
    for (uint32_t i = 0; i < r.count; i++)
        free(r.block[i]);
}

/* A view list may be destroyed before or after its world. One that outlives its world keeps
 * its last view readable, is refused by every later world (one made at the old address
 * included), and gives its memory back to the host's allocator when destroyed. */
static void test_view_lists_may_outlive_their_world(void **state)
{
    (void)state;
    static recycler r;
    r.count = 0;
    r.live = 0;
    rv_world_desc desc = { 0 };
    desc.allocator = (rv_allocator){ recycle_alloc, recycle_realloc, recycle_free, &r };
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_world *a = rvt_world(&desc);
    rv_node obj = rvt_object(a, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_view_list *list[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(rv_view_list_create(a, &list[i]), RV_OK);
    /* The newest, a middle one and the oldest: each place in the world's chain. */
    rv_view_list_destroy(list[4]);
    rv_view_list_destroy(list[2]);
    rv_view_list_destroy(list[0]);
    rv_frame_view va, extra[2];
    assert_int_equal(rv_frame(a, &c.v, &va), RV_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rv_cull_view(a, &c.v, list[1 + 2 * k], &extra[k]), RV_OK);
        assert_true(view_draws(&extra[k], obj));
    }
    rv_world_destroy(a);
    assert_true(r.live > 0);                 /* the two lists keep their memory */
    assert_true(view_draws(&extra[0], obj)); /* and their last views */
    rv_world *b = rvt_world(&desc);
    assert_ptr_equal(b, a); /* a list matched by address would pass here */
    rvt_object(b, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_frame_view vb, e;
    assert_int_equal(rv_frame(b, &c.v, &vb), RV_OK);
    assert_int_equal(rv_cull_view(b, &c.v, list[1], &e), RV_ERR_BAD_STATE);
    rv_view_list *mine;
    assert_int_equal(rv_view_list_create(b, &mine), RV_OK);
    assert_int_equal(rv_cull_view(b, &c.v, mine, &e), RV_OK);
    assert_int_equal(e.opaque_count + e.translucent_count, 1);
    rv_view_list_destroy(list[1]);
    rv_world_destroy(b); /* mine outlives b too */
    rv_view_list_destroy(mine);
    rv_view_list_destroy(list[3]);
    assert_int_equal(r.live, 0);
    for (uint32_t i = 0; i < r.count; i++)
        free(r.block[i]);
}

static void test_bad_view_input_is_rejected_and_changes_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 100);
    rv_frame_view v;
    memset(&v, 0x5a, sizeof v);
    rv_frame_view before = v;
    /* Refused before the world ever drew a frame: no frame state is created, so the world
     * holds exactly the memory it held and made no allocation. */
    rv_alloc_stats held = rv_world_alloc_stats(w);
    rvt_camera bad = c;
    bad.v.view = bad.view;
    bad.view[5] = NAN;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_NOT_FINITE);
    bad = c;
    bad.v.viewport_width = 0;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    bad = c;
    bad.v.view = NULL;
    bad.v.projection = NULL;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    bad = c;
    bad.v.time_ms = INFINITY;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_NOT_FINITE);
    /* A wild time (an unset clock) is refused, so it cannot become the time every later
     * frame must not go back from. */
    bad.v.time_ms = -1e300;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    bad.v.time_ms = 9007199254740994.0;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    bad = c;
    bad.v.fov_y = NAN;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_NOT_FINITE);
    bad.v.fov_y = 3.2f;
    assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    /* A view matrix whose last row is not 0 0 0 1: no eye, no view depth. */
    for (int k = 0; k < 4; k++) {
        bad = c;
        bad.v.view = bad.view;
        bad.view[k * 4 + 3] += 0.5f;
        assert_int_equal(rv_frame(w, &bad.v, &v), RV_ERR_INVALID_ARG);
    }
    /* What a float inverse of a camera matrix leaves there is affine enough (checked
     * below, with the first good frame). */
    rvt_camera inverted = c;
    inverted.v.view = inverted.view;
    inverted.view[15] = 0x1.fffffcp-1f;
    assert_int_equal(rv_frame(w, NULL, &v), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_frame(NULL, &c.v, &v), RV_ERR_INVALID_ARG);
    assert_memory_equal(&v, &before, sizeof v);
    rv_alloc_stats after = rv_world_alloc_stats(w);
    assert_int_equal(after.allocations, held.allocations);
    assert_int_equal(after.bytes_live, held.bytes_live);
    assert_int_equal(rv_frame(w, &inverted.v, &v), RV_OK);
    c.v.time_ms = inverted.v.time_ms + 1;
    /* An extra view refuses a view matrix that is not affine too. */
    rv_view_list *list;
    rv_frame_view extra;
    memset(&extra, 0x5a, sizeof extra);
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    bad = c;
    bad.v.view = bad.view;
    bad.view[15] = 2;
    assert_int_equal(rv_cull_view(w, &bad.v, list, &extra), RV_ERR_INVALID_ARG);
    assert_memory_equal(&extra, &before, sizeof extra);
    rv_view_list_destroy(list);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    c.v.time_ms = 50; /* backwards */
    assert_int_equal(rv_frame(w, &c.v, &v), RV_ERR_ORDER);
    assert_int_equal(rv_frame_cull(w), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_end(w, &v), RV_ERR_BAD_STATE);
    /* The view-projection + eye form works too. */
    rvt_camera d;
    rvt_camera_make(&d, eye0, ahead, 1.0f, 200);
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += d.projection[k * 4 + r] * d.view[col * 4 + k];
            vp[col * 4 + r] = acc;
        }
    rv_view alt = d.v;
    alt.view = alt.projection = NULL;
    alt.view_projection = vp;
    alt.eye = eye0;
    assert_int_equal(rv_frame(w, &alt, &v), RV_OK);
    assert_int_equal(v.opaque_count, 1);
    rv_world_destroy(w);
}

/* One of a pair of worlds built alike for test_a_refused_begin_leaves_the_world_as_it_was:
 * a wall in front of an object, a laddered object on the move, a streaming grid and the
 * world's journal. */
typedef struct twin_world {
    rv_world *w;
    rv_journal *journal;
    rv_node laddered;
} twin_world;

static void twin_make(twin_world *t)
{
    rv_world_desc d;
    memset(&d, 0, sizeof d);
    d.occlusion.width = 128;
    d.lod.crossfade_ms = 100;
    d.lod.hysteresis = -1;
    assert_int_equal(rv_world_create(&d, &t->w), RV_OK);
    rv_node wall = rvt_node(t->w, RV_NODE_NONE);
    const float lo[3] = { -10, -10, -10.5f }, hi[3] = { 10, 10, -9.5f };
    assert_int_equal(rv_node_set_occluder_box(t->w, wall, lo, hi), RV_OK);
    rvt_object(t->w, RV_NODE_NONE, 0, 1.7f, -30, 1);
    t->laddered = rvt_object(t->w, RV_NODE_NONE, 2, 1.7f, -5, 1);
    rv_lod_ladder ladder;
    const float thresholds[2] = { 0.2f, 0.05f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(t->w, t->laddered, &ladder), RV_OK);
    rv_grid_desc g;
    memset(&g, 0, sizeof g);
    g.cell_size = 8;
    g.count_x = g.count_z = 8;
    g.origin[0] = g.origin[1] = -32;
    assert_int_equal(rv_world_add_grid(t->w, &g, NULL), RV_OK);
    assert_int_equal(rv_world_journal(t->w, &t->journal), RV_OK);
}

/* The host's edits between two frames: the laddered object moves off (a crossfade starts)
 * and a projection is registered (a delta waits in the journal). */
static void twin_edit(twin_world *t, uint64_t key)
{
    const float far_off[3] = { 2, 1.7f, -20 };
    assert_int_equal(rv_node_set_position(t->w, t->laddered, far_off), RV_OK);
    rv_projection pr = unit_projection();
    assert_int_equal(rv_journal_register(t->journal, 0, key, 1, &pr, NULL), RV_OK);
}

/* Is the object behind the wall hidden in the buffer of the published frame? */
static bool twin_wall_hides(twin_world *t)
{
    const float lo[3] = { -0.5f, 1.2f, -30.5f }, hi[3] = { 0.5f, 2.2f, -29.5f };
    bool visible = true;
    assert_int_equal(rv_occlusion_test_box(rv_world_occlusion(t->w), lo, hi, NULL, &visible), RV_OK);
    return !visible;
}

/* rv_frame_begin refused by a check that comes after the journal and the transforms in a
 * frame's work — a projection the occlusion buffer cannot place, a partition frame the host
 * left open, a residency clock the host moved past the view's time, a time step float cannot
 * hold — leaves the world as it
 * was: the journal undrained, the matrices and LOD and residency clocks where they were,
 * the published frame's buffer whole; the frames after it match a twin's that never saw it. */
static void test_a_refused_begin_leaves_the_world_as_it_was(void **state)
{
    (void)state;
    for (int kind = 0; kind < 4; kind++) {
        twin_world a, b;
        twin_make(&a);
        twin_make(&b);
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
        rv_frame_view va, vb;
        assert_int_equal(rv_frame(a.w, &c.v, &va), RV_OK);
        assert_int_equal(rv_frame(b.w, &c.v, &vb), RV_OK);
        assert_true(twin_wall_hides(&b));
        twin_edit(&a, 77);
        twin_edit(&b, 77);
        float matrix_before[16], matrix_after[16];
        assert_int_equal(rv_node_world_matrix(b.w, b.laddered, matrix_before), RV_OK);

        rvt_camera late = c;
        late.v.time_ms = 90;
        rv_result expected = RV_ERR_BAD_STATE;
        rv_partition_result pr;
        if (kind == 0) { /* a field of view near pi: the buffer cannot place it */
            late.v.projection = late.projection;
            late.projection[0] = late.projection[5] = 1e-7f;
            expected = RV_ERR_INVALID_ARG;
        } else if (kind == 1) {
            assert_int_equal(rv_partition_begin_frame(b.w, NULL), RV_OK);
        } else if (kind == 2) {
            assert_int_equal(rv_residency_begin_frame(rv_world_residency(a.w), 200), RV_OK);
            assert_int_equal(rv_residency_begin_frame(rv_world_residency(b.w), 200), RV_OK);
            expected = RV_ERR_ORDER;
        } else { /* a time beyond 2^53 ms */
            late.v.time_ms = 1e39;
            expected = RV_ERR_INVALID_ARG;
        }
        assert_int_equal(rv_frame_begin(b.w, &late.v), expected);
        assert_int_equal(rv_journal_get_stats(b.journal).pending, 1);
        assert_int_equal(rv_node_world_matrix(b.w, b.laddered, matrix_after), RV_OK);
        assert_memory_equal(matrix_after, matrix_before, sizeof matrix_before);
        assert_true(rv_frame_view_is_valid(b.w, &vb));
        assert_true(twin_wall_hides(&b));
        if (kind == 1)
            assert_int_equal(rv_partition_end_frame(b.w, NULL, 10, &pr), RV_OK);

        /* The same frames from here on: a crossfade 10 ms in, then one past it. */
        for (double t = kind == 2 ? 210 : 10; t < (kind == 2 ? 400 : 200); t += 100) {
            c.v.time_ms = t;
            assert_int_equal(rv_frame(a.w, &c.v, &va), RV_OK);
            assert_int_equal(rv_frame(b.w, &c.v, &vb), RV_OK);
            assert_int_equal(rv_frame_view_digest(&va), rv_frame_view_digest(&vb));
            assert_int_equal(va.counts.journal_applied, vb.counts.journal_applied);
        }
        assert_true(twin_wall_hides(&b));
        rv_world_destroy(a.w);
        rv_world_destroy(b.w);
    }
}

/* A test the host's clock makes while rv_frame_begin runs answers as the header says for a
 * frame being built (RV_ERR_BAD_STATE, visible), not from the frame being replaced. */
typedef struct clock_probe {
    rv_world *w;
    uint64_t now;
    uint32_t tested, refused;
} clock_probe;

static uint64_t probing_clock(void *user)
{
    clock_probe *p = user;
    rv_occlusion *occ = rv_world_occlusion(p->w);
    if (occ && p->w) {
        const float lo[3] = { -0.5f, 1.2f, -30.5f }, hi[3] = { 0.5f, 2.2f, -29.5f };
        bool visible = false;
        rv_result r = rv_occlusion_test_box(occ, lo, hi, NULL, &visible);
        p->tested++;
        p->refused += r == RV_ERR_BAD_STATE && visible;
    }
    return p->now += 1000;
}

static void test_a_test_from_the_clock_inside_begin_is_refused(void **state)
{
    (void)state;
    clock_probe probe = { NULL, 0, 0, 0 };
    rv_world_desc d;
    memset(&d, 0, sizeof d);
    d.occlusion.width = 128;
    d.clock_ns = probing_clock;
    d.clock_user = &probe;
    rv_world *w;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    rv_node wall = rvt_node(w, RV_NODE_NONE);
    const float lo[3] = { -10, -10, -10.5f }, hi[3] = { 10, 10, -9.5f };
    assert_int_equal(rv_node_set_occluder_box(w, wall, lo, hi), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    probe.w = w;
    c.v.time_ms = 16;
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_true(probe.tested > 0);
    assert_int_equal(probe.refused, probe.tested);
    assert_int_equal(rv_frame_abort(w), RV_OK);
    rv_world_destroy(w);
}

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(128);
    uint64_t seed = 3;
    rv_node grp;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &grp), RV_OK);
    rv_lod_ladder ladder;
    float thresholds[3] = { 0.2f, 0.05f, 0.01f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 3, &ladder), RV_OK);
    for (int i = 0; i < 300; i++) {
        rv_node n = rvt_object(w, grp, rvt_uniform(&seed, -50, 50), 1, rvt_uniform(&seed, -80, -2), 0.7f);
        if (i % 3 == 0)
            assert_int_equal(rv_node_set_lod_ladder(w, n, &ladder), RV_OK);
    }
    rv_node wall;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
    float wmin[3] = { -3, 0, -30.5f }, wmax[3] = { 3, 6, -30 };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    rv_grid_desc gd = { 0 };
    gd.source = 1;
    gd.origin[0] = gd.origin[1] = -256;
    gd.cell_size = 16;
    gd.count_x = gd.count_z = 32;
    gd.lead = 16;
    assert_int_equal(rv_world_add_grid(w, &gd, NULL), RV_OK);
    rvt_camera c;
    rv_frame_view v;
    uint64_t allocations = 0;
    for (int f = 0; f < 200; f++) {
        float eye[3] = { 20.0f * sinf((float)f * 0.05f), 1.7f, 10.0f * cosf((float)f * 0.03f) };
        float target[3] = { eye[0] + sinf((float)f * 0.02f), 1.7f, eye[2] - 10 };
        rvt_camera_make(&c, eye, target, 1.0f, f * 16.0);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        /* The host answers page requests at once. */
        for (uint32_t k = 0; k < v.page_request_count; k++)
            assert_int_equal(rv_residency_place(rv_world_residency(w), v.page_requests[k].key, 1024), RV_OK);
        if (f == 100)
            allocations = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
    }
    assert_true(v.opaque_count > 0);
    uint64_t now = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
    assert_int_equal(now, allocations);
    rv_world_destroy(w);
}

/* Occluder nodes all around the eye: the first frame looks where there are few, a later
 * one where there are many. The frame reserves room for every persistent occluder up
 * front, so seeing more occluders than ever before allocates nothing. */
static void test_more_occluders_than_ever_before_allocate_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(128);
    for (int i = 0; i < 48; i++) {
        rv_node n;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
        /* a fan of walls ahead (-z), one wall behind (+z) */
        float x = i == 0 ? 0.0f : -24 + (float)i, z = i == 0 ? 20.0f : -20.0f;
        float mn[3] = { x - 0.4f, 0, z - 0.5f }, mx[3] = { x + 0.4f, 4, z };
        assert_int_equal(rv_node_set_occluder_box(w, n, mn, mx), RV_OK);
    }
    rvt_camera c;
    rv_frame_view v;
    const float back[3] = { 0, 1.7f, 10 };
    rvt_camera_make(&c, eye0, back, 1.0f, 0);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.occluders_added, 1);
    uint64_t before = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(v.counts.occluders_added > 30);
    assert_int_equal(rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations, before);
    rv_world_destroy(w);
}

static void test_lod_levels_and_nothing_level(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_lod_ladder ladder;
    float thresholds[2] = { 0.1f, 0.02f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, &ladder), RV_OK);
    /* r = 1: angle 2 asin(1/d): near (d 5) level 0, mid (d 30) level 1, far (d 200) nothing. */
    rv_node near_n = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -5, 1);
    rv_node mid = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -30, 1);
    rv_node far_n = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -200, 1);
    rv_node plain = rvt_object(w, RV_NODE_NONE, 1, 1.7f, -200, 1);
    assert_int_equal(rv_node_set_lod_ladder(w, near_n, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, mid, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, far_n, &ladder), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 3);
    for (uint32_t i = 0; i < v.opaque_count; i++) {
        if (rv_node_equal(v.opaque[i].node, near_n)) assert_int_equal(v.opaque[i].lod_level, 0);
        if (rv_node_equal(v.opaque[i].node, mid)) assert_int_equal(v.opaque[i].lod_level, 1);
        if (rv_node_equal(v.opaque[i].node, plain)) assert_int_equal(v.opaque[i].lod_level, 0);
        assert_true(v.opaque[i].fade == 1.0f);
    }
    assert_false(view_draws(&v, far_n));
    assert_int_equal(v.counts.lod_culled, 1);
    assert_int_equal(v.counts.lod_histogram[0], 2);
    assert_int_equal(v.counts.lod_histogram[1], 1);
    /* Move mid closer: a crossfade starts (its first frame is all old level), then two items
     * with weights summing to 1, and the frame asks to keep ticking. */
    float p[3] = { 0, 1.7f, -8 };
    assert_int_equal(rv_node_set_position(w, mid, p), RV_OK);
    c.v.time_ms = 100;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.tick.mode, RV_TICK_CONTINUOUS);
    c.v.time_ms = 200;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    float sum = 0;
    int items = 0;
    for (uint32_t i = 0; i < v.opaque_count; i++)
        if (rv_node_equal(v.opaque[i].node, mid)) {
            sum += v.opaque[i].fade;
            items++;
        }
    assert_int_equal(items, 2);
    assert_float_equal(sum, 1.0f, 1e-5f);
    assert_int_equal(v.tick.mode, RV_TICK_CONTINUOUS);
    c.v.time_ms = 1000; /* past the 250 ms fade */
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.tick.mode, RV_TICK_IDLE);
    rv_world_destroy(w);
}

/* The frame's draw items carry the crossfade: a node's items (one per level shown) never
 * move a level's weight by more than dt / crossfade_ms in a frame, whatever the level it
 * is retargeted to mid-fade, and the level past the ladder (drawn as nothing) takes the
 * rest of the weight. */
/* A view matrix that also scales (a view in centimetres of a world in metres) with the
 * projection scaled back: the same camera, so the same frustum, LOD levels and view depths
 * as the rigid view (the eye is the inverse of the whole 3 x 3 part, the lens read from the
 * product). An orthographic camera alike. */
static void test_a_scaled_view_matrix_is_the_same_camera(void **state)
{
    (void)state;
    rv_lod_ladder ladder;
    float thresholds[2] = { 0.1f, 0.02f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, &ladder), RV_OK);
    const float scales[4] = { 1, 2, 100, 0.01f };
    for (int ortho = 0; ortho < 2; ortho++) {
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
        if (ortho) {
            const float o[16] = { 0.05f, 0, 0, 0, 0, 0.08f, 0, 0, 0, 0, -0.002f, 0, 0, 0, -1.0f, 1 };
            memcpy(c.projection, o, sizeof o);
        }
        uint32_t levels[4][64], drawn[4];
        float depth[4][64];
        for (int k = 0; k < 4; k++) {
            rv_world *w = rvt_world_occlusion(0);
            rv_node nodes[64];
            uint64_t seed = 11;
            for (int i = 0; i < 64; i++) {
                nodes[i] = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -30, 30), rvt_uniform(&seed, -3, 6),
                                      rvt_uniform(&seed, -300, -2), 1);
                assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], &ladder), RV_OK);
            }
            float view[16], projection[16];
            memcpy(view, c.view, sizeof view);
            memcpy(projection, c.projection, sizeof projection);
            for (int i = 0; i < 15; i++)
                if (i % 4 != 3)
                    view[i] *= scales[k]; /* the 3 x 3 part and the translation */
            for (int i = 0; i < 12; i++)
                projection[i] /= scales[k]; /* the first three columns */
            rv_view v = c.v;
            v.view = view;
            v.projection = projection;
            rv_frame_view out;
            assert_int_equal(rv_frame(w, &v, &out), RV_OK);
            drawn[k] = out.opaque_count;
            for (int i = 0; i < 64; i++) {
                bool translucent;
                const rv_draw_item *it = view_item(&out, nodes[i], &translucent);
                levels[k][i] = it ? it->lod_level : 99u;
                depth[k][i] = it ? it->view_depth : 0.0f;
            }
            rv_world_destroy(w);
        }
        assert_true(drawn[0] >= 10 && drawn[0] < 64);
        for (int k = 1; k < 4; k++) {
            assert_int_equal(drawn[k], drawn[0]);
            for (int i = 0; i < 64; i++) {
                assert_int_equal(levels[k][i], levels[0][i]);
                assert_true(fabsf(depth[k][i] - depth[0][i]) <= 1e-4f * (1.0f + fabsf(depth[0][i])));
            }
        }
    }
}

/* The lod_camera tests' world: SHADOW_CASTERS objects of radius 0.5 scattered ahead of
 * eye0, each with the ladder {0.1, 0.02} (*ladder). */
enum { SHADOW_CASTERS = 48 };

static rv_world *caster_field(uint64_t seed, rv_node nodes[SHADOW_CASTERS], rv_lod_ladder *ladder)
{
    rv_world *w = rvt_world_occlusion(0);
    float thresholds[2] = { 0.1f, 0.02f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, ladder), RV_OK);
    for (int i = 0; i < SHADOW_CASTERS; i++) {
        nodes[i] = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -20, 20), 1, rvt_uniform(&seed, -120, -2), 0.5f);
        assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], ladder), RV_OK);
    }
    return w;
}

/* The sun straight above, an orthographic box 400 m across over the whole field. */
static const float sun_view[16] = { 1, 0, 0, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, 60, 0, 1 };
static const float sun_projection[16] = { 0.005f, 0, 0, 0, 0, 0.005f, 0, 0, 0, 0, -0.02f, 0, 0, 0, -1, 1 };

static rv_view sun_at(double time_ms)
{
    rv_view sun = { 0 };
    sun.view = sun_view;
    sun.projection = sun_projection;
    sun.viewport_width = sun.viewport_height = 2048;
    sun.time_ms = time_ms;
    return sun;
}

/* rv_view.lod_camera: a shadow view (orthographic, from above) chooses each caster's level
 * as the main camera sees it, not as the light does. */
static void test_a_shadow_view_takes_its_levels_from_the_main_camera(void **state)
{
    (void)state;
    enum { N = SHADOW_CASTERS };
    rv_node nodes[N];
    rv_lod_ladder ladder;
    rv_world *w = caster_field(5, nodes, &ladder);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view main_view;
    assert_int_equal(rv_frame(w, &c.v, &main_view), RV_OK);
    rv_view sun = sun_at(c.v.time_ms);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    rv_frame_view own, shadow;
    assert_int_equal(rv_cull_view(w, &sun, list, &own), RV_OK);
    assert_true(own.counts.lod_culled > N / 2); /* from the light's side most are too small */
    sun.lod_camera = &c.v;
    assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_OK);
    /* Every caster the camera draws casts, at the camera's level; none is drawn finer. */
    uint32_t matched = 0;
    for (int i = 0; i < N; i++) {
        bool t1, t2;
        const rv_draw_item *seen = view_item(&main_view, nodes[i], &t1);
        const rv_draw_item *cast = view_item(&shadow, nodes[i], &t2);
        if (seen) {
            assert_non_null(cast);
            assert_int_equal(cast->lod_level, seen->lod_level);
            matched++;
        }
    }
    assert_true(matched >= 10);
    assert_true(shadow.opaque_count > own.opaque_count);
    /* A bad reference camera is refused as a view is. */
    rv_view bad = c.v;
    bad.viewport_width = 0;
    sun.lod_camera = &bad;
    assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_ERR_INVALID_ARG);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* Frame f of a 400-frame walk 0 .. 20 m toward the caster field and back, 0.1 m a frame. */
static void caster_walk_camera(int f, float eye[3], rvt_camera *c)
{
    float z = f < 200 ? -0.1f * (float)f : -0.1f * (float)(400 - f);
    float at[3] = { eye0[0], eye0[1], z - 1.0f };
    eye[0] = eye0[0], eye[1] = eye0[1], eye[2] = z;
    rvt_camera_make(c, eye, at, 1.0f, 16.0 * f);
}

/* The same walk where every third frame keeps the time of the one before (dt 0: time
 * only must not go backwards), so that fades start and turn back at one LOD clock. */
static void caster_walk_camera_stalling(int f, float eye[3], rvt_camera *c)
{
    caster_walk_camera(f, eye, c);
    c->v.time_ms = 16.0 * (f - f / 3);
}

/* The heavier of node's opaque items in v (NULL when none) and their number in *items. */
static const rv_draw_item *heavier_item(const rv_frame_view *v, rv_node node, uint32_t *items)
{
    const rv_draw_item *heavier = NULL;
    *items = 0;
    for (uint32_t k = 0; k < v->opaque_count; k++) {
        const rv_draw_item *it = &v->opaque[k];
        if (it->node.id != node.id)
            continue;
        ++*items;
        if (!heavier || it->fade > heavier->fade)
            heavier = it;
    }
    return heavier;
}

/* With the main view as lod_camera, a shadow view lists each caster the main view draws
 * whole (no crossfade running) at the very level drawn, also where the caster rests inside
 * a threshold's hysteresis band, where its apparent size alone picks the other level: the
 * camera walks toward the field and back, slowly, so casters linger in the bands. Without
 * the held level the shadow of a caster the camera still drew at a finer level, or at all,
 * differed for as long as the camera rested there. */
static void test_a_shadow_view_holds_the_levels_the_main_view_holds(void **state)
{
    (void)state;
    enum { N = SHADOW_CASTERS };
    rv_node nodes[N];
    rv_lod_ladder ladder;
    rv_world *w = caster_field(9, nodes, &ladder);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    /* Frame f's main level (listed whole, -1 if not) and shadow level (-1 if not cast), to
     * be judged once frame f + 1 says whether a fade began at f: its first frame lists
     * the outgoing level whole. */
    int32_t seen_before[N], cast_before[N];
    uint32_t whole = 0, in_band = 0, faded = 0, faded_nothing = 0;
    for (int f = 0; f < 400; f++) {
        float eye[3];
        rvt_camera c;
        caster_walk_camera(f, eye, &c);
        rv_frame_view main_view, shadow;
        assert_int_equal(rv_frame(w, &c.v, &main_view), RV_OK);
        rv_view sun = sun_at(c.v.time_ms);
        sun.lod_camera = &c.v;
        assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_OK);
        for (int i = 0; i < N; i++) {
            bool t;
            const rv_draw_item *seen = view_item(&main_view, nodes[i], &t);
            const rv_draw_item *cast = view_item(&shadow, nodes[i], &t);
            int32_t level = seen && seen->fade == 1.0f ? (int32_t)seen->lod_level : -1;
            if (f > 0 && level >= 0 && seen_before[i] == level) { /* at rest at frame f - 1 */
                assert_int_equal(cast_before[i], level);
                whole++;
            }
            seen_before[i] = level;
            cast_before[i] = cast ? (int32_t)cast->lod_level : -1;
            /* While the main view fades the caster between two drawn levels, the shadow
             * casts the heavier (the incoming from half way); between a level and nothing,
             * the drawn one. */
            uint32_t items;
            const rv_draw_item *heavier = heavier_item(&main_view, nodes[i], &items);
            if (items == 2 && heavier->fade != 0.5f) {
                assert_non_null(cast);
                assert_int_equal(cast->lod_level, heavier->lod_level);
                faded++;
            } else if (items == 1 && heavier->fade < 1.0f) { /* fading in from, or out to, nothing */
                assert_non_null(cast);
                assert_int_equal(cast->lod_level, heavier->lod_level);
                faded_nothing++;
            }
            if (level >= 0) {
                rv_lod_view lv = { .eye = { eye[0], eye[1], eye[2] }, .fov_y = 1.0f, .viewport_height_px = 720.0f };
                uint32_t plain;
                assert_int_equal(rv_lod_for_node(w, nodes[i], &lv, &ladder, &plain), RV_OK);
                in_band += plain != (uint32_t)level;
            }
        }
    }
    assert_true(whole > 1000);
    assert_true(in_band > 20); /* the hysteresis held levels the size alone would change */
    assert_true(faded > 20 && faded_nothing > 0);
    print_message("shadow levels: %u at rest, %u in a fade, %u fading from or to nothing\n", whole, faded,
                  faded_nothing);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* The same walk with the shadow view culled between rv_frame_begin and rv_frame_cull (as
 * docs/frame.md allows an extra view, once its frame has begun): before the frame's LOD
 * pass it casts what that pass is about to select, so it matches the main view of the same
 * frame: the level drawn whole, the heavier of two fading levels, the drawn one over
 * nothing, also on frames that keep the time of the one before. Judged from the latest
 * selection alone, a caster whose fade toward nothing the frame was starting cast nothing
 * while the main view drew it whole. */
static void test_a_shadow_view_culled_before_the_frame_s_lod_casts_that_frame_s_levels(void **state)
{
    (void)state;
    enum { N = SHADOW_CASTERS };
    rv_node nodes[N];
    rv_lod_ladder ladder;
    rv_world *w = caster_field(9, nodes, &ladder);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    uint32_t whole = 0, faded = 0;
    for (int f = 0; f < 400; f++) {
        float eye[3];
        rvt_camera c;
        caster_walk_camera_stalling(f, eye, &c);
        rv_frame_view main_view, shadow;
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        rv_view sun = sun_at(c.v.time_ms);
        sun.lod_camera = &c.v;
        assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_OK);
        assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &main_view), RV_OK);
        for (int i = 0; i < N; i++) {
            bool t;
            const rv_draw_item *cast = view_item(&shadow, nodes[i], &t);
            uint32_t items;
            const rv_draw_item *heavier = heavier_item(&main_view, nodes[i], &items);
            if (items == 0 || (items == 2 && heavier->fade == 0.5f))
                continue;
            assert_non_null(cast);
            assert_int_equal(cast->lod_level, heavier->lod_level);
            if (items == 1 && heavier->fade == 1.0f)
                whole++;
            else
                faded++;
        }
    }
    assert_true(whole > 1000);
    assert_true(faded > 20);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* A caster resting at "nothing" that comes into range while its place was in view fades in:
 * the main view lists nothing on the fade's first frame (its weight 0), and the shadow casts
 * nothing then either, whether culled after the frame or inside it; from the next frame on
 * both list the drawn level. */
static void test_a_shadow_view_casts_nothing_on_a_fade_in_s_first_frame(void **state)
{
    (void)state;
    for (int inside = 0; inside < 2; inside++) {
        rv_world *w = rvt_world_occlusion(0);
        const float t[3] = { 0.08f, 0.03f, 0.012f };
        rv_lod_ladder ladder;
        assert_int_equal(rv_lod_ladder_make(t, 3, &ladder), RV_OK);
        rv_node n = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -10, 1);
        assert_int_equal(rv_node_set_lod_ladder(w, n, &ladder), RV_OK);
        rv_view_list *list;
        assert_int_equal(rv_view_list_create(w, &list), RV_OK);
        int first = -1;
        for (int f = 0; f < 6; f++) {
            /* 300 m away ("nothing"), then 100 m (level 2): the place stayed in view. */
            const float eye[3] = { 0, 1.7f, f < 2 ? 290.0f : 90.0f }, at[3] = { 0, 1.7f, -10 };
            rvt_camera c;
            rvt_camera_make(&c, eye, at, 1.0f, 16.0 * f);
            rv_view sun = c.v;
            sun.lod_camera = &c.v;
            rv_frame_view main_view, shadow;
            assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
            if (inside)
                assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_OK);
            assert_int_equal(rv_frame_cull(w), RV_OK);
            assert_int_equal(rv_frame_end(w, &main_view), RV_OK);
            if (!inside)
                assert_int_equal(rv_cull_view(w, &sun, list, &shadow), RV_OK);
            const rv_draw_item *seen = item_of(&main_view, n);
            assert_int_equal(view_draws(&shadow, n), seen != NULL);
            if (seen && first < 0)
                first = f;
            if (seen)
                assert_true(seen->fade < 1.0f);
        }
        assert_int_equal(first, 3); /* frame 2 began the fade, listing nothing */
        rv_view_list_destroy(list);
        rv_world_destroy(w);
    }
}

/* An extra view that is the main view itself (same camera, lod_camera = main, no occluders)
 * lists exactly the nodes the main view draws, each at its heavier level, whatever the
 * order (culled inside the frame's window or after it), with the camera jumping near and
 * far, turning away and back (places out of the last frame's sight), and frames keeping
 * the time of the one before (fades starting and turning back at one LOD clock). */
static void test_a_copy_of_the_main_view_lists_what_the_main_view_draws(void **state)
{
    (void)state;
    enum { N = 40 };
    rv_world *w = rvt_world_occlusion(0);
    const float t[2] = { 0.3f, 0.12f };
    rv_lod_ladder ladder;
    assert_int_equal(rv_lod_ladder_make(t, 2, &ladder), RV_OK);
    uint64_t seed = 5;
    rv_node nodes[N];
    for (int i = 0; i < N; i++) {
        nodes[i] = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -6, 6), 1.7f, rvt_uniform(&seed, -60, -40), 2);
        assert_int_equal(rv_node_set_lod_ladder(w, nodes[i], &ladder), RV_OK);
    }
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    double time = 0;
    uint32_t compared = 0, listed = 0;
    for (int f = 0; f < 600; f++) {
        uint64_t r = rvt_next(&seed);
        time += r % 3 == 0 ? 0.0 : 16.0;
        float z = (r >> 8) % 2 ? 60.0f : -20.0f; /* far (nothing) or near */
        float eye[3] = { 0, 1.7f, z }, at[3] = { 0, 1.7f, (r >> 16) % 4 == 0 ? z + 10 : z - 10 };
        rvt_camera c;
        rvt_camera_make(&c, eye, at, 1.0f, time);
        rv_view copy = c.v;
        copy.lod_camera = &c.v;
        bool inside = (r >> 24) % 2;
        rv_frame_view main_view, extra;
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        if (inside)
            assert_int_equal(rv_cull_view(w, &copy, list, &extra), RV_OK);
        assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &main_view), RV_OK);
        if (!inside)
            assert_int_equal(rv_cull_view(w, &copy, list, &extra), RV_OK);
        for (int i = 0; i < N; i++) {
            bool tr;
            uint32_t items;
            const rv_draw_item *heavier = heavier_item(&main_view, nodes[i], &items);
            const rv_draw_item *cast = view_item(&extra, nodes[i], &tr);
            if (items == 2 && heavier->fade == 0.5f)
                continue;
            if ((cast != NULL) != (items > 0))
                fail_msg("frame %d (%s): node %d main lists %u items, the copy %s", f, inside ? "inside" : "after",
                         i, items, cast ? "lists it" : "does not");
            if (cast)
                assert_int_equal(cast->lod_level, heavier->lod_level);
            compared++;
            listed += cast != NULL;
        }
    }
    assert_true(listed > 1000 && compared > listed + 1000);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* A fade from level 1 to 2 whose camera, before it ends, wants a third level (0, or
 * "nothing"): the main view keeps drawing the two fading levels (the third waits), and a
 * shadow view with the main view as lod_camera casts the heavier of them, not the third
 * level, and not nothing. */
static void test_a_shadow_view_casts_a_fading_level_while_a_third_waits(void **state)
{
    (void)state;
    const float third[2] = { 3.0f, 100.0f };
    for (int k = 0; k < 2; k++) {
        rv_world_desc d = { 0 };
        d.lod.hysteresis = -1.0f;
        d.lod.crossfade_ms = 250.0f;
        rv_world *w;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        rv_node n;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &n), RV_OK);
        const float centre[3] = { 0, 0, 0 };
        assert_int_equal(rv_node_set_bounds(w, n, centre, 1.0f), RV_OK);
        const float th[3] = { 0.5f, 0.2f, 0.05f }; /* level 1 at 8 m, 2 at 20 m, 0 at 3 m, nothing at 100 m */
        rv_lod_ladder ladder;
        assert_int_equal(rv_lod_ladder_make(th, 3, &ladder), RV_OK);
        assert_int_equal(rv_node_set_lod_ladder(w, n, &ladder), RV_OK);
        rv_view_list *list;
        assert_int_equal(rv_view_list_create(w, &list), RV_OK);
        const float dist[3] = { 8.0f, 20.0f, third[k] };
        for (int f = 0; f < 3; f++) {
            float eye[3] = { 0, 0, dist[f] }, at[3] = { 0, 0, 0 };
            rvt_camera c;
            rvt_camera_make(&c, eye, at, 1.0f, 100.0 * (f + 1));
            rv_frame_view main_view, shadow;
            assert_int_equal(rv_frame(w, &c.v, &main_view), RV_OK);
            rv_view sv = c.v;
            sv.lod_camera = &c.v;
            assert_int_equal(rv_cull_view(w, &sv, list, &shadow), RV_OK);
            const rv_draw_item *heavier = NULL;
            for (uint32_t i = 0; i < main_view.opaque_count; i++)
                if (!heavier || main_view.opaque[i].fade > heavier->fade)
                    heavier = &main_view.opaque[i];
            assert_non_null(heavier);
            assert_int_equal(shadow.opaque_count, 1);
            assert_int_equal(shadow.opaque[0].lod_level, heavier->lod_level);
            if (f == 2) { /* still fading 1 -> 2, level 1 the heavier */
                assert_int_equal(main_view.opaque_count, 2);
                assert_true(heavier->lod_level == 1 && heavier->fade > 0.5f);
            }
        }
        rv_view_list_destroy(list);
        rv_world_destroy(w);
    }
}

static void test_lod_crossfade_retargeted_in_the_frame_view_never_jumps(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_lod_ladder ladder;
    float thresholds[3] = { 0.2f, 0.06f, 0.015f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 3, &ladder), RV_OK);
    /* r = 1: level 0 at 5 m, 1 at 20 m, 2 at 60 m, nothing (3) at 300 m; all far from a
     * threshold's hysteresis band. */
    const float distance_of[4] = { 5, 20, 60, 300 };
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -distance_of[2], 1);
    assert_int_equal(rv_node_set_lod_ladder(w, n, &ladder), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    uint64_t seed = 5;
    uint32_t wanted = 2;
    float before[4] = { 0, 0, 1, 0 };
    double now = 0;
    int fading_frames = 0;
    for (int f = 0; f < RVT_HEAVY(20000, 3000); f++) {
        if (rvt_next(&seed) % 8 == 0) {
            wanted = (uint32_t)(rvt_next(&seed) % 4);
            float p[3] = { 0, 1.7f, -distance_of[wanted] };
            assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
        }
        float dt = f == 0 ? 0.0f : (float)(rvt_next(&seed) % 41);
        now += dt;
        c.v.time_ms = now;
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        float after[4] = { 0, 0, 0, 0 };
        int items = 0;
        for (uint32_t i = 0; i < v.opaque_count; i++) {
            if (!rv_node_equal(v.opaque[i].node, n))
                continue;
            assert_true(v.opaque[i].lod_level < 3);
            assert_true(v.opaque[i].fade > 0.0f && v.opaque[i].fade <= 1.0f);
            after[v.opaque[i].lod_level] += v.opaque[i].fade;
            items++;
        }
        assert_true(items <= 2);
        float drawn = after[0] + after[1] + after[2];
        assert_true(drawn <= 1.0f + 1e-5f);
        after[3] = 1.0f - drawn;
        fading_frames += after[wanted] < 1.0f;
        if (f > 0)
            for (int k = 0; k < 4; k++)
                assert_true(fabsf(after[k] - before[k]) <= dt / 250.0f + 1e-5f);
        memcpy(before, after, sizeof before);
    }
    assert_true(fading_frames > 100); /* fades really ran (and were retargeted) */
    rv_world_destroy(w);
}

/* An object resting at "nothing" that came near where nobody saw it on the last published
 * frame — under a group the occlusion test hid, outside the frustum (also with an aborted
 * frame between, or by its test box while its sphere straddled a plane) — shows its level
 * whole on the first frame it is seen again, as an object the occlusion test hid on its
 * own does; one that comes near in plain view fades in (its first frame lists nothing). */
static void test_an_object_unseen_while_it_came_near_shows_its_level_at_once(void **state)
{
    (void)state;
    rv_lod_ladder ladder;
    float thresholds[3] = { 0.2f, 0.06f, 0.015f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 3, &ladder), RV_OK);
    /* r = 1: level 1 at 20 m, nothing at 300 m (as in the crossfade test above). */
    const float far_p[3] = { 0, 1.7f, -300 }, near_p[3] = { 0, 1.7f, -20 }, away[3] = { 0, 0, 40 },
                home[3] = { 0, 0, 0 }, behind[3] = { 0, 1.7f, 10 };
    /* how: 0 occluded group, 1 out of the frustum, 2 in view, 3 as 1 with an aborted frame
     * before the last, 4 outside by its test box only */
    for (int how = 0; how < 5; how++) {
        rv_world *w = rvt_world_occlusion(256);
        rv_node wall = wall_ahead(w);
        assert_int_equal(rv_node_set_position(w, wall, away), RV_OK); /* behind the eye */
        rv_node group = rvt_node(w, RV_NODE_NONE);
        rv_node o = rvt_object(w, how == 0 ? group : RV_NODE_NONE, far_p[0], far_p[1], far_p[2], 1);
        assert_int_equal(rv_node_set_lod_ladder(w, o, &ladder), RV_OK);
        /* how 4: a view turned right until the object at 20 m lies 0.9 m beyond its left
         * plane (half the horizontal fov is 0.7707 rad; 0.8157 = 0.7707 + asin(0.9 / 20)):
         * its sphere (r 1) reaches across, its box (+-0.5 m, at most 0.71 m along the
         * plane's normal) does not. */
        const float box_min[3] = { -0.5f, -0.5f, -0.5f }, box_max[3] = { 0.5f, 0.5f, 0.5f };
        const float turned[3] = { 7.284f, 1.7f, -6.853f };
        if (how == 4)
            assert_int_equal(rv_node_set_test_box(w, o, box_min, box_max), RV_OK);
        rvt_camera c;
        rv_frame_view v;
        double now = 0;
        for (int frame = 0; frame < 3; frame++, now += 16) { /* at rest at "nothing", in view */
            rvt_camera_make(&c, eye0, ahead, 1.0f, now);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_false(view_draws(&v, o));
        }
        /* Out of sight: the wall comes home (how 0) or the camera turns round (how 1). */
        if (how == 0)
            assert_int_equal(rv_node_set_position(w, wall, home), RV_OK);
        for (int frame = 0; frame < 3; frame++, now += 16) {
            if (frame == 1)
                assert_int_equal(rv_node_set_position(w, o, near_p), RV_OK);
            rvt_camera_make(&c, eye0, how == 1 || how == 3 ? behind : how == 4 ? turned : ahead, 1.0f, now);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            if (how != 2) {
                assert_false(view_draws(&v, o));
            }
        }
        if (how == 0) {
            assert_true(v.counts.occlusion_culled >= 1);
            assert_int_equal(rv_node_set_position(w, wall, away), RV_OK);
        }
        if (how == 3) { /* culled, never published */
            rvt_camera_make(&c, eye0, behind, 1.0f, now);
            assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
            assert_int_equal(rv_frame_cull(w), RV_OK);
            assert_int_equal(rv_frame_abort(w), RV_OK);
        }
        rvt_camera_make(&c, eye0, ahead, 1.0f, now);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        /* One item, at level 1: whole when unseen (how 2 aside); seen all along, the fade from
         * "nothing" ran in view (it started two frames ago; 32 of its 250 ms passed). */
        const rv_draw_item *item = item_of(&v, o);
        assert_non_null(item);
        assert_int_equal(v.counts.opaque, v.opaque_count);
        assert_int_equal(item->lod_level, 1);
        if (how == 2)
            assert_true(item->fade > 0.0f && item->fade < 0.5f);
        else
            assert_true(item->fade == 1.0f);
        rv_world_destroy(w);
    }
}

/* Two refined regions, one at the top and one under a plain node, go out of view and come
 * back: each shows the cut it wants then, whole (its children at fade 1, itself not
 * listed), as nobody saw it change; the camera having gone far meanwhile, it shows itself
 * whole. In view, a change still crossfades. */
static void test_hlod_regions_back_in_view_show_their_cut_whole(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node holder = rvt_node(w, RV_NODE_NONE);
    rv_node region[2], child[2][2];
    region[0] = rvt_object(w, RV_NODE_NONE, -8, 1.7f, -40, 5);
    region[1] = rvt_object(w, holder, 8, 1.7f, -40, 5);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(rv_node_set_hlod_region(w, region[r], 1.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, region[r], true), RV_OK);
        for (int k = 0; k < 2; k++) {
            child[r][k] = rvt_object(w, region[r], k ? 2.0f : -2.0f, 0, 0, 2);
            assert_int_equal(rv_node_set_hlod_region(w, child[r][k], 0.01f), RV_OK);
            assert_int_equal(rv_node_set_hlod_resident(w, child[r][k], true), RV_OK);
        }
    }
    const float behind[3] = { 0, 1.7f, 10 };
    rvt_camera c;
    rv_frame_view v;
    double t = 0;
    for (int f = 0; f < 6; f++, t += 100) { /* refine and settle: 1 m at 35 m is ~15 px... */
        rvt_camera_make(&c, eye0, ahead, 0.5f, t); /* ...at fov 0.5 it is ~41 px */
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    }
    for (int r = 0; r < 2; r++) {
        assert_false(view_draws(&v, region[r]));
        assert_float_equal(item_of(&v, child[r][0])->fade, 1.0f, 0);
    }
    rvt_camera_make(&c, eye0, behind, 0.5f, t += 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 0);
    rvt_camera_make(&c, eye0, ahead, 0.5f, t += 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.crossfades, 0);
    for (int r = 0; r < 2; r++) {
        assert_false(view_draws(&v, region[r]));
        for (int k = 0; k < 2; k++)
            assert_float_equal(item_of(&v, child[r][k])->fade, 1.0f, 0);
    }
    /* Away, then back from 400 m: 1 m there is under 16 px, so each region shows itself. */
    rvt_camera_make(&c, eye0, behind, 0.5f, t += 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    const float far_eye[3] = { 0, 1.7f, 400 };
    rvt_camera_make(&c, far_eye, ahead, 0.5f, t += 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.crossfades, 0);
    for (int r = 0; r < 2; r++) {
        assert_float_equal(item_of(&v, region[r])->fade, 1.0f, 0);
        assert_false(view_draws(&v, child[r][0]));
    }
    /* Coming near while in view refines with a crossfade, as before. */
    rvt_camera_make(&c, eye0, ahead, 0.5f, t += 16);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    rvt_camera_make(&c, eye0, ahead, 0.5f, t += 50);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(v.counts.crossfades >= 2);
    assert_true(view_draws(&v, region[0]) && view_draws(&v, child[0][0]));
    rv_world_destroy(w);
}

static void test_hlod_region_drawn_as_itself_stops_the_walk(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node region = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -300, 20);
    rv_node child_a = rvt_object(w, region, -5, 0, 0, 5);
    rv_node child_b = rvt_object(w, region, 5, 0, 0, 5);
    assert_int_equal(rv_node_set_hlod_region(w, region, 0.5f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, child_a, 0.01f), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, child_b, 0.01f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, child_a, true), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    /* Far: error 0.5 m at ~280 m is under 16 px: the region is drawn as itself. */
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region));
    assert_false(view_draws(&v, child_a));
    assert_int_equal(v.counts.hlod_drawn, 1);
    /* Near, but child_b is not resident: still the region (never a hole), and a load asked. */
    float p[3] = { 0, 1.7f, -40 };
    assert_int_equal(rv_node_set_position(w, region, p), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region));
    assert_false(view_draws(&v, child_a));
    assert_int_equal(v.hlod_load_request_count, 1);
    assert_true(rv_node_equal(v.hlod_load_requests[0], region));
    /* Both resident: it refines, crossfading (the fade's first frame is all region), and
     * after the fade only the children draw. */
    assert_int_equal(rv_node_set_hlod_resident(w, child_b, true), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region));
    assert_true(v.counts.hlod_refined >= 1);
    c.v.time_ms = 100;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region));
    assert_true(view_draws(&v, child_a));
    assert_true(v.counts.crossfades >= 2);
    c.v.time_ms = 1000;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, region));
    assert_true(view_draws(&v, child_a));
    assert_true(view_draws(&v, child_b));
    rv_world_destroy(w);
}

/* A region with no geometry of its own (no rv_node_set_bounds: a grouping node made a
 * region) has nothing to draw as itself: the lists pass through it to its resident
 * children from the first frame, near or far, instead of leaving a hole where they are. */
static void test_hlod_region_without_own_geometry_draws_its_children(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node region, child_a, child_b;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &region), RV_OK);
    float at[3] = { 0, 1.7f, -300 };
    assert_int_equal(rv_node_set_position(w, region, at), RV_OK);
    child_a = rvt_object(w, region, -5, 0, 0, 5);
    child_b = rvt_object(w, region, 5, 0, 0, 5);
    assert_int_equal(rv_node_set_hlod_region(w, region, 0.5f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, child_a, 0.01f), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, child_b, 0.01f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, child_a, true), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, child_b, true), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v, extra;
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    /* Far (a region with geometry would be drawn as itself here), then near, then far; an
     * extra view with the same camera passes through the region alike. */
    const float z[4] = { -300, -40, -40, -300 };
    for (int f = 0; f < 4; f++) {
        at[2] = z[f];
        assert_int_equal(rv_node_set_position(w, region, at), RV_OK);
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        const rv_frame_view *views[2] = { &v, &extra };
        for (int k = 0; k < 2; k++) {
            assert_true(view_draws(views[k], child_a));
            assert_true(view_draws(views[k], child_b));
            assert_false(view_draws(views[k], region));
            for (uint32_t i = 0; i < views[k]->opaque_count; i++)
                assert_true(views[k]->opaque[i].fade == 1.0f); /* nothing fades against a region with nothing */
        }
    }
    rv_view_list_destroy(list);
    /* Not resident below: nothing can be drawn there, and the load is asked for. */
    assert_int_equal(rv_node_set_hlod_resident(w, child_b, false), RV_OK);
    c.v.time_ms = 100;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, child_b));
    assert_int_equal(v.hlod_load_request_count, 1);
    rv_world_destroy(w);
    /* The standalone cut keeps its meaning (the host draws a region's proxy by its own
     * means): far away, the same region without bounds is what it draws. */
    w = rvt_world_occlusion(0);
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &region), RV_OK);
    at[2] = -300;
    assert_int_equal(rv_node_set_position(w, region, at), RV_OK);
    child_a = rvt_object(w, region, -5, 0, 0, 5);
    assert_int_equal(rv_node_set_hlod_region(w, region, 0.5f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, child_a, 0.01f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, child_a, true), RV_OK);
    assert_int_equal(rv_update_world(w), RV_OK);
    rv_lod_view lv = { .eye = { eye0[0], eye0[1], eye0[2] }, .fov_y = 1.0f, .viewport_height_px = 720 };
    rv_frustum fr = rvt_frustum(eye0, ahead, 1.0f, 1000.0f);
    rv_hlod_result cut;
    assert_int_equal(rv_hlod_select(w, region, &lv, &fr, 0.0f, &cut), RV_OK);
    assert_int_equal(cut.draw_count, 1);
    assert_true(rv_node_equal(cut.draws[0].region, region));
    rv_world_destroy(w);
}

/* The same with no region below: a resident region without geometry of its own, over
 * plain nodes only, passes all of them through (it used to draw nothing and stop the walk,
 * recording its children replaced). And one whose bounds the host clears stops standing
 * in for its subtree from that frame on. */
/* A world where nothing is resident yet, seen from far (no region wants to refine): T over
 * R (no geometry of its own: loaded, it can only pass through) over C. The frame asks for
 * T's children and, since R cannot stand for its own place once loaded, for R's too: with
 * the host loading what is asked, C is drawn on the next frame, with nothing left to ask. */
static void test_hlod_a_region_without_geometry_asks_for_its_children_at_once(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    const float origin[3] = { 0, 0, 0 };
    rv_node t, r, c;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &t), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, t, origin, 10), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, t, 1.0f), RV_OK);
    assert_int_equal(rv_node_create(w, t, &r), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, r, 0.5f), RV_OK);
    assert_int_equal(rv_node_create(w, r, &c), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, c, origin, 10), RV_OK);
    assert_int_equal(rv_node_set_hlod_region(w, c, 0.25f), RV_OK);
    rvt_set_position(w, t, 0, 1.7f, -1000);
    rvt_camera cam;
    float target[3] = { 0, 1.7f, -1000 };
    rvt_camera_make(&cam, eye0, target, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 0);
    assert_int_equal(v.hlod_load_request_count, 2);
    bool asked_t = false, asked_r = false;
    for (uint32_t k = 0; k < v.hlod_load_request_count; k++) {
        asked_t |= rv_node_equal(v.hlod_load_requests[k], t);
        asked_r |= rv_node_equal(v.hlod_load_requests[k], r);
    }
    assert_true(asked_t && asked_r);
    assert_int_equal(rv_node_set_hlod_resident(w, r, true), RV_OK); /* T's children */
    assert_int_equal(rv_node_set_hlod_resident(w, c, true), RV_OK); /* R's children */
    cam.v.time_ms += 16;
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_non_null(item_of(&v, c));
    assert_int_equal(v.hlod_load_request_count, 0);
    rv_world_destroy(w);
}

/* A region with geometry over a resident region without geometry of its own (a grouping
 * node made a region: passed through) over a child that is not resident. The region
 * passed through stands for nothing, so refining into it would leave a hole where its
 * child is: the region above draws itself, and the load asked for is the children of the
 * one passed through (those of the region above are resident already). */
typedef struct pass_through_tree {
    rv_world *world;
    rv_node top, through[3], child, sibling;
} pass_through_tree;

/* top (error 5 m, 40 m ahead: ~100 px) over depth regions without geometry over child;
 * sibling: a second child region of top with geometry, or none. */
static pass_through_tree make_pass_through_tree(uint32_t depth, bool sibling)
{
    pass_through_tree t;
    memset(&t, 0, sizeof t);
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f; /* cuts change at once */
    t.world = rvt_world(&desc);
    rv_world *w = t.world;
    t.top = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -40, 10);
    assert_int_equal(rv_node_set_hlod_region(w, t.top, 5.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, t.top, true), RV_OK);
    rv_node parent = t.top;
    for (uint32_t k = 0; k < depth; k++) {
        t.through[k] = rvt_node(w, parent);
        assert_int_equal(rv_node_set_hlod_region(w, t.through[k], 1.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, t.through[k], true), RV_OK);
        parent = t.through[k];
    }
    t.child = rvt_object(w, parent, -3, 0, 0, 4);
    assert_int_equal(rv_node_set_hlod_region(w, t.child, 0.0f), RV_OK);
    if (sibling) {
        t.sibling = rvt_object(w, t.top, 3, 0, 0, 4);
        assert_int_equal(rv_node_set_hlod_region(w, t.sibling, 0.0f), RV_OK);
    }
    return t;
}

static void test_hlod_a_region_refines_through_a_region_without_geometry_only_onto_loaded_children(void **state)
{
    (void)state;
    pass_through_tree t = make_pass_through_tree(1, false);
    rv_world *w = t.world;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v, extra;
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, t.top));
    assert_false(view_draws(&v, t.child));
    assert_int_equal(v.counts.hlod_drawn, 1);
    assert_int_equal(v.counts.hlod_refined, 0);
    assert_int_equal(v.hlod_load_request_count, 1);
    assert_true(rv_node_equal(v.hlod_load_requests[0], t.through[0]));
    rv_node named;
    uint32_t n;
    assert_int_equal(rv_hlod_children(w, v.hlod_load_requests[0], &named, 1, &n), RV_OK);
    assert_int_equal(n, 1);
    assert_true(rv_node_equal(named, t.child)); /* what the host loads is what is missing */
    c.v.time_ms = 16;
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    assert_true(view_draws(&extra, t.top));
    assert_false(view_draws(&extra, t.child));
    /* Loaded: the top region refines, through the one without geometry, onto the child. */
    assert_int_equal(rv_node_set_hlod_resident(w, t.child, true), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, t.top));
    assert_true(view_draws(&v, t.child));
    assert_int_equal(v.hlod_load_request_count, 0);
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    assert_false(view_draws(&extra, t.top));
    assert_true(view_draws(&extra, t.child));
    /* Unloaded again: the top region stands in at once. */
    assert_int_equal(rv_node_set_hlod_resident(w, t.child, false), RV_OK);
    c.v.time_ms = 48;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, t.top));
    assert_false(view_draws(&v, t.child));
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    assert_true(view_draws(&extra, t.top));
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* Whether the frame's load requests hold n, and how many times. */
static uint32_t requests_of(const rv_frame_view *v, rv_node n)
{
    uint32_t times = 0;
    for (uint32_t k = 0; k < v->hlod_load_request_count; k++)
        times += rv_node_equal(v->hlod_load_requests[k], n);
    return times;
}

/* Through three regions without geometry in a row, the load names the deepest (the one
 * whose children are missing), not the ones between; with a child of the top region
 * missing too, the top region is named in the same frame, and once its children are in,
 * the one below still is. Every frame draws the top region or the children in its place. */
static void test_hlod_loads_behind_regions_without_geometry_name_the_region_missing_children(void **state)
{
    (void)state;
    pass_through_tree t = make_pass_through_tree(3, true);
    rv_world *w = t.world;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, t.top));
    assert_int_equal(v.hlod_load_request_count, 2);
    assert_int_equal(requests_of(&v, t.top), 1);
    assert_int_equal(requests_of(&v, t.through[2]), 1);
    assert_int_equal(rv_node_set_hlod_resident(w, t.sibling, true), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, t.top));
    assert_false(view_draws(&v, t.sibling));
    assert_int_equal(v.hlod_load_request_count, 1);
    assert_true(rv_node_equal(v.hlod_load_requests[0], t.through[2]));
    assert_int_equal(rv_node_set_hlod_resident(w, t.child, true), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, t.top));
    assert_true(view_draws(&v, t.child));
    assert_true(view_draws(&v, t.sibling));
    assert_int_equal(v.hlod_load_request_count, 0);
    rv_world_destroy(w);
}

/* top (error 5 m, 40 m ahead) over four resident regions without geometry of their own
 * (grouping nodes made regions), each over two child regions; ready[k]: group k's
 * children are resident. */
typedef struct sibling_groups {
    rv_world *world;
    rv_node top, group[4], child[4][2];
} sibling_groups;

static sibling_groups make_sibling_groups(const bool ready[4])
{
    sibling_groups g;
    memset(&g, 0, sizeof g);
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f;
    g.world = rvt_world(&desc);
    rv_world *w = g.world;
    g.top = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -40, 10);
    assert_int_equal(rv_node_set_hlod_region(w, g.top, 5.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, g.top, true), RV_OK);
    for (int k = 0; k < 4; k++) {
        g.group[k] = rvt_node(w, g.top);
        assert_int_equal(rv_node_set_hlod_region(w, g.group[k], 1.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, g.group[k], true), RV_OK);
        for (int j = 0; j < 2; j++) {
            g.child[k][j] = rvt_object(w, g.group[k], -7.0f + 4.0f * (float)k + 2.0f * (float)j, 0, 0, 1.5f);
            assert_int_equal(rv_node_set_hlod_region(w, g.child[k][j], 0.0f), RV_OK);
            assert_int_equal(rv_node_set_hlod_resident(w, g.child[k][j], ready[k]), RV_OK);
        }
    }
    return g;
}

/* Four sibling regions without geometry, each over children that are not resident: the top
 * region draws itself and one frame asks for all four groups' children (not one group a
 * frame): once the host loads them, the next frame refines onto them. One round trip. */
static void test_hlod_sibling_regions_without_geometry_are_all_asked_for_in_one_frame(void **state)
{
    (void)state;
    const bool ready[4] = { false, false, false, false };
    sibling_groups g = make_sibling_groups(ready);
    rv_world *w = g.world;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, g.top));
    assert_int_equal(v.hlod_load_request_count, 4);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(requests_of(&v, g.group[k]), 1);
        assert_false(view_draws(&v, g.child[k][0]) || view_draws(&v, g.child[k][1]));
    }
    for (uint32_t k = 1; k < v.hlod_load_request_count; k++) /* one urgency: by node id */
        assert_true(v.hlod_load_requests[k - 1].id < v.hlod_load_requests[k].id);
    /* The same again while nothing is loaded: nothing more, nothing less, and once the
     * frame's lists have grown, nothing allocated. */
    uint64_t allocations = 0;
    for (int f = 1; f <= 4; f++) {
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.hlod_load_request_count, 4);
        if (f == 2)
            allocations = rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations;
    }
    assert_int_equal(rv_world_alloc_stats(w).allocations + rv_world_alloc_stats(w).reallocations, allocations);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 2; j++)
            assert_int_equal(rv_node_set_hlod_resident(w, g.child[k][j], true), RV_OK);
    c.v.time_ms = 80;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, g.top));
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 2; j++)
            assert_true(view_draws(&v, g.child[k][j]));
    assert_int_equal(v.hlod_load_request_count, 0);
    rv_world_destroy(w);
}

/* Some groups ready, some not: only those whose children are missing are asked for, and
 * the top region draws itself until they are in. A group without geometry under a group
 * without geometry, both missing children, is asked for with it in the same frame. */
static void test_hlod_only_regions_without_geometry_missing_children_are_asked_for(void **state)
{
    (void)state;
    const bool ready[4] = { true, false, true, false };
    sibling_groups g = make_sibling_groups(ready);
    rv_world *w = g.world;
    rv_node inner = rvt_node(w, g.group[3]);
    assert_int_equal(rv_node_set_hlod_region(w, inner, 1.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, inner, true), RV_OK);
    rv_node deep = rvt_object(w, inner, 7, 0, 0, 1.5f);
    assert_int_equal(rv_node_set_hlod_region(w, deep, 0.0f), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, g.top));
    assert_false(view_draws(&v, g.child[0][0]));
    assert_int_equal(v.hlod_load_request_count, 3);
    assert_int_equal(requests_of(&v, g.group[1]), 1);
    assert_int_equal(requests_of(&v, g.group[3]), 1);
    assert_int_equal(requests_of(&v, inner), 1);
    /* group 3's own children in, inner's not: inner alone is asked for. */
    for (int k = 1; k < 4; k += 2)
        for (int j = 0; j < 2; j++)
            assert_int_equal(rv_node_set_hlod_resident(w, g.child[k][j], true), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, g.top));
    assert_int_equal(v.hlod_load_request_count, 1);
    assert_true(rv_node_equal(v.hlod_load_requests[0], inner));
    assert_int_equal(rv_node_set_hlod_resident(w, deep, true), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, g.top));
    assert_true(view_draws(&v, deep) && view_draws(&v, g.child[0][1]) && view_draws(&v, g.child[3][0]));
    assert_int_equal(v.hlod_load_request_count, 0);
    rv_world_destroy(w);
}

/* A chain of 100,000 resident regions without geometry between a region and its loaded
 * child: a scan looks through a few of them only (each frame stays linear in the chain),
 * so the top region, unable to see that the chain ends on loaded ground, draws itself:
 * never a hole, and nothing asked for that cannot help. */
static void test_hlod_a_deep_chain_of_regions_without_geometry_is_never_a_hole(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f;
    rv_world *w = rvt_world(&desc);
    rv_node top = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -40, 10);
    assert_int_equal(rv_node_set_hlod_region(w, top, 5.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, top, true), RV_OK);
    rv_node parent = top;
    for (uint32_t k = 0; k < DEPTH; k++) {
        parent = rvt_node(w, parent);
        assert_int_equal(rv_node_set_hlod_region(w, parent, 1.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, parent, true), RV_OK);
    }
    rv_node child = rvt_object(w, parent, 0, 0, 0, 4);
    assert_int_equal(rv_node_set_hlod_region(w, child, 0.0f), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v, extra;
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    for (int f = 0; f < 4; f++) {
        assert_int_equal(rv_node_set_hlod_resident(w, child, f >= 2), RV_OK);
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        assert_true(view_draws(&v, top));
        assert_true(view_draws(&extra, top));
        assert_int_equal(v.hlod_load_request_count, 0);
        assert_true(v.counts.nodes_visited < 100); /* the chain under it is not walked */
    }
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* The frame's load requests come most urgent first, as rv_hlod_select's loads: the near
 * region (larger screen-space error) before the far one, although the walk meets the far
 * one first. */
static void test_hlod_load_requests_come_most_urgent_first(void **state)
{
    (void)state;
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f;
    rv_world *w = rvt_world(&desc);
    rv_node top = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -60, 60);
    assert_int_equal(rv_node_set_hlod_region(w, top, 50.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, top, true), RV_OK);
    const float at[2][2] = { { -20, -100 }, { 0, -15 } }; /* far (~30 px), near (~500 px) */
    rv_node region[2];
    for (int k = 0; k < 2; k++) {
        region[k] = rvt_object(w, top, at[k][0], 0, at[k][1] + 60, 10);
        assert_int_equal(rv_node_set_hlod_region(w, region[k], 4.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, region[k], true), RV_OK);
        rv_node child = rvt_object(w, region[k], 0, 0, 0, 5);
        assert_int_equal(rv_node_set_hlod_region(w, child, 0.0f), RV_OK);
    }
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region[0]) && view_draws(&v, region[1]));
    assert_int_equal(v.hlod_load_request_count, 2);
    assert_true(rv_node_equal(v.hlod_load_requests[0], region[1]));
    assert_true(rv_node_equal(v.hlod_load_requests[1], region[0]));
    rv_world_destroy(w);
}

static void test_hlod_leaf_region_without_own_geometry_draws_its_plain_children(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node region;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &region), RV_OK);
    float at[3] = { 0, 1.7f, -30 };
    assert_int_equal(rv_node_set_position(w, region, at), RV_OK);
    rv_node crate = rvt_object(w, region, 0, 0, 0, 1);
    assert_int_equal(rv_node_set_hlod_region(w, region, 1.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v, extra;
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    for (int f = 0; f < 3; f++) {
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        assert_true(view_draws(&v, crate));
        assert_true(view_draws(&extra, crate));
        assert_int_equal(v.counts.hlod_drawn, 0);
    }
    /* Given bounds, the region is a proxy: drawn in the crate's place... */
    float zero[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_bounds(w, region, zero, 2.0f), RV_OK);
    c.v.time_ms = 48;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, region));
    assert_false(view_draws(&v, crate));
    /* ...and once they are cleared, the crate is drawn again, in both views. */
    assert_int_equal(rv_node_set_bounds(w, region, zero, -1.0f), RV_OK);
    for (int f = 4; f < 7; f++) {
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        assert_true(view_draws(&v, crate));
        assert_true(view_draws(&extra, crate));
    }
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* A laddered node whose placement becomes unknown (a NaN written in place into its
 * parent) is drawn whole, at its finest level, for every frame it stays unknown: it used
 * to be listed at weight 1 on the first frame and then fade in from "nothing" (16/250,
 * 32/250, ...). Once placed again it fades out from there, never faster than the fade. */
static void test_a_node_of_unknown_placement_is_drawn_whole_until_placed(void **state)
{
    (void)state;
    rv_world *w = rvt_world(NULL); /* crossfade 250 ms */
    rv_node parent = rvt_node(w, RV_NODE_NONE);
    rvt_set_position(w, parent, 0, 1.7f, -80);
    rv_node crate = rvt_object(w, parent, 0, 0, 0, 0.5f); /* 2 asin(0.5 / 80) = 0.0125 rad */
    rv_lod_ladder ladder;
    const float threshold = 0.05f;                        /* below it: nothing */
    assert_int_equal(rv_lod_ladder_make(&threshold, 1, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, crate, &ladder), RV_OK);
    rvt_camera c;
    rv_frame_view v;
    float last = 0.0f;
    for (int f = 0; f < 14; f++) {
        float *p = NULL;
        if (f == 3 || f == 8) {
            assert_int_equal(rv_node_transform_ptrs(w, parent, &p, NULL, NULL), RV_OK);
            p[0] = f == 3 ? NAN : 0.0f;
            assert_int_equal(rv_node_mark_moved(w, parent), RV_OK);
        }
        rvt_camera_make(&c, eye0, ahead, 1.0f, 16.0 * f);
        rv_result r = rv_frame(w, &c.v, &v);
        assert_true(r == RV_OK);
        bool translucent;
        const rv_draw_item *it = view_item(&v, crate, &translucent);
        if (f < 3) {
            assert_null(it); /* too small: nothing */
        } else if (f < 8) {
            assert_true(v.counts.transform_stale > 0);
            assert_non_null(it);
            assert_int_equal(it->lod_level, 0);
            assert_true(it->fade == 1.0f);
        } else {
            float now = it ? it->fade : 0.0f;
            assert_true(now <= last + 1e-6f);
            assert_true(last - now <= 16.0f / 250.0f + 1e-4f); /* no faster than the fade */
            last = now;
            continue;
        }
        last = it ? it->fade : 0.0f;
    }
    assert_true(last < 1.0f); /* it did fade out once placed */
    rv_world_destroy(w);
}

static int reprocess_calls;
static bool host_busy;
static bool is_busy(void *user) { (void)user; return host_busy; }
static void on_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    (void)parts; (void)user;
    reprocess_calls += (int)count > 0;
}

/* A world-wide finest_level past a ladder's length (a quality setting meant for longer
 * ladders) coarsens that ladder's objects to its coarsest drawn level; it used to turn them
 * all into "nothing" and hide them. */
static void test_finest_level_past_a_short_ladder_never_hides(void **state)
{
    (void)state;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    float thresholds[2] = { 0.2f, 0.01f };
    rv_lod_ladder ladder;
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, &ladder), RV_OK);
    rv_node near = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -5, 1);
    rv_node tiny = rvt_object(w, RV_NODE_NONE, 1, 1.5f, -50, 0.01f); /* reaches no threshold */
    assert_int_equal(rv_node_set_lod_ladder(w, near, &ladder), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, tiny, &ladder), RV_OK);
    rv_lod_desc d;
    assert_int_equal(rv_lod_get_desc(w, &d), RV_OK);
    d.finest_level = 5;
    d.crossfade_ms = -1;
    assert_int_equal(rv_lod_set_desc(w, &d), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, near));
    assert_false(view_draws(&v, tiny));
    assert_int_equal(v.counts.lod_histogram[1], 1);
    rv_world_destroy(w);
}

/* A world's grid is updated every frame with the eye and the host's sources. A reach that
 * could make that update examine more than 2^24 cells is refused when the grid or the
 * sources are given, with nothing changed, so no frame fails on it (it used to be every
 * frame's answer, with no way to shrink the grid). Reaches just inside the bound are kept and
 * the frames run. */
static void test_world_refuses_a_stream_reach_every_frame_would_fail_on(void **state)
{
    (void)state;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 0, -10, 1);
    rv_grid_desc gd = { 0 };
    gd.cell_size = 1;
    gd.count_x = gd.count_z = 60000;
    gd.origin[0] = gd.origin[1] = -30000;
    gd.eye_radius = 5000; /* a square of ~10,000 x 10,000 cells */
    rv_alloc_stats before = rv_world_alloc_stats(w);
    assert_int_equal(rv_world_add_grid(w, &gd, NULL), RV_ERR_CAPACITY);
    assert_null(rv_world_residency(w));
    /* Refused before anything is allocated: the counters do not move. */
    rv_alloc_stats after = rv_world_alloc_stats(w);
    assert_int_equal(after.bytes_live, before.bytes_live);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.bytes_peak, before.bytes_peak);
    /* A radius of 100 (a square of 203 x 203 cells) fits, and its frames succeed. */
    gd.eye_radius = 100;
    rv_grid *grid = NULL;
    assert_int_equal(rv_world_add_grid(w, &gd, &grid), RV_OK);
    rvt_camera c;
    float look[3] = { 0, 0, -10 };
    rvt_camera_make(&c, eye0, look, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, n));
    /* Host sources that would push the sum over the bound (two squares of 3003 x 3003 cells
     * and the eye's) are refused, and the old ones (none) stay: frames still run. */
    rv_stream_source far[2] = { { { 0, 0, 0 }, 1500 }, { { 100, 0, 100 }, 1500 } };
    assert_int_equal(rv_world_set_stream_sources(w, far, 2), RV_ERR_CAPACITY);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(rv_grid_get_stats(grid).cells_visited > 30000);
    assert_true(rv_grid_get_stats(grid).cells_visited <= 203 * 203);
    rv_stream_source near[2] = { { { 0, 0, 0 }, 50 }, { { 100, 0, 100 }, 50 } };
    assert_int_equal(rv_world_set_stream_sources(w, near, 2), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    /* A second grid is checked against the sources already set. */
    rv_grid_desc second = gd;
    second.source = 2;
    second.eye_radius = -1;
    second.lead = 2100; /* one source's square alone: (2 * 2150 + 3)^2 > 2^24 cells */
    assert_int_equal(rv_world_add_grid(w, &second, NULL), RV_ERR_CAPACITY);
    second.lead = 0;
    assert_int_equal(rv_world_add_grid(w, &second, NULL), RV_OK);
    c.v.time_ms = 48;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    rv_world_destroy(w);
}

/* Frame calls made from a host callback that a frame call is running (here request_reprocess,
 * called by rv_frame_end) are refused and change nothing: an abort from there used to make
 * the running rv_frame publish a view that was already invalid and answer RV_OK. */
static rv_world *reentry_world;
static rv_result reentry_results[6];
static int reentry_calls;
static void reenter_from_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    (void)parts;
    (void)count;
    const rv_view *view = user;
    rv_frame_view v;
    float lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 };
    reentry_results[0] = rv_frame_abort(reentry_world);
    reentry_results[1] = rv_frame_begin(reentry_world, view);
    reentry_results[2] = rv_frame_cull(reentry_world);
    reentry_results[3] = rv_frame_end(reentry_world, &v);
    reentry_results[4] = rv_frame(reentry_world, view, &v);
    reentry_results[5] = rv_frame_add_occluder(reentry_world, lo, hi, NULL);
    reentry_calls++;
}

static void test_frame_calls_from_a_callback_are_refused(void **state)
{
    (void)state;
    rvt_camera c;
    float look[3] = { 0, 1.7f, -20 };
    rvt_camera_make(&c, eye0, look, 2.0f, 0);
    rv_world_desc d = { 0 };
    d.partition.request_reprocess = reenter_from_reprocess;
    d.partition.user = &c.v;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    reentry_world = w;
    reentry_calls = 0;
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 0, -20, 0.1f);
    rv_node left = rvt_object(w, building, -15, 0, 0, 1);
    rv_node right = rvt_object(w, building, 15, 0, 0, 1);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves_l[1] = { 100 }, leaves_r[1] = { 200 };
    assert_int_equal(rv_partition_set_part(w, left, leaves_l, 1, false), RV_OK);
    assert_int_equal(rv_partition_set_part(w, right, leaves_r, 1, false), RV_OK);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    /* Hide the left storey by a slice, then reveal it: its re-entry asks for a resync, and
     * rv_frame_end calls request_reprocess. */
    float smin[3] = { 0, -100, -100 }, smax[3] = { 100, 100, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, smin, smax), RV_OK);
    c.v.time_ms = 8;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, left));
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(reentry_calls, 1);
    for (int k = 0; k < 6; k++)
        assert_int_equal(reentry_results[k], RV_ERR_BAD_STATE);
    /* The frame the callback ran in was published whole and stays valid. */
    assert_true(rv_frame_view_is_valid(w, &v));
    assert_int_equal(v.resync_request_count, 1);
    assert_true(view_draws(&v, left));
    assert_true(view_draws(&v, right));
    /* And the world goes on: the next frame is fine. */
    c.v.time_ms = 24;
    rv_frame_view next;
    assert_int_equal(rv_frame(w, &c.v, &next), RV_OK);
    assert_true(rv_frame_view_is_valid(w, &next));
    assert_true(rv_frame_view_is_valid(w, &v));
    rv_world_destroy(w);
}

/* The delta observer of a render scene the host bound to the world, while the host drains
 * it outside a frame: a frame from there would publish half a tick, and is refused too. */
static rv_result observer_frame_result;
static int observer_calls;
static void frame_from_observer(const rv_delta *delta, rv_delta_outcome outcome, void *user)
{
    (void)delta;
    (void)outcome;
    rv_frame_view v;
    observer_frame_result = rv_frame(reentry_world, user, &v);
    observer_calls++;
}

static void test_frame_from_a_draining_scenes_observer_is_refused(void **state)
{
    (void)state;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    reentry_world = w;
    observer_calls = 0;
    rv_render_scene_desc sd = { 0 };
    sd.world = w;
    sd.observer = frame_from_observer;
    sd.observer_user = &c.v;
    rv_render_scene *scene = NULL;
    rv_journal *journal = NULL;
    assert_int_equal(rv_render_scene_create(&sd, &scene), RV_OK);
    assert_int_equal(rv_journal_create(NULL, &journal), RV_OK);
    rv_projection p = unit_projection();
    p.transform.position[2] = -5;
    assert_int_equal(rv_journal_register(journal, 0, 7, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_render_scene_apply(scene, journal, NULL), RV_OK);
    assert_int_equal(observer_calls, 1);
    assert_int_equal(observer_frame_result, RV_ERR_BAD_STATE);
    /* Outside the drain the frame runs and draws the projection's node. */
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 1);
    rv_render_scene_destroy(scene);
    rv_journal_destroy(journal);
    rv_world_destroy(w);
}

static void test_partition_gate_runs_inside_the_walk(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.partition.request_reprocess = on_reprocess;
    d.partition.is_update_in_progress = is_busy;
    host_busy = false;
    reprocess_calls = 0;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 0, -20, 0.1f);
    /* Two storeys side by side: the left is outside the view when looking right. */
    rv_node left = rvt_object(w, building, -15, 0, 0, 1);
    rv_node right = rvt_object(w, building, 15, 0, 0, 1);
    rv_node left_item = rvt_object(w, left, 0, 0.5f, 0, 0.5f);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves_l[1] = { 100 }, leaves_r[1] = { 200 };
    assert_int_equal(rv_partition_set_part(w, left, leaves_l, 1, false), RV_OK);
    assert_int_equal(rv_partition_set_part(w, right, leaves_r, 1, false), RV_OK);
    rvt_camera c;
    float look[3] = { 0, 1.7f, -20 };
    rvt_camera_make(&c, eye0, look, 2.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* first sight: not a re-entry */
    assert_true(view_draws(&v, left));
    assert_int_equal(v.resync_request_count, 0);
    /* A committed slice keeps only the right half: the left storey is hidden by the gate
     * although the frustum sees it. */
    float smin[3] = { 0, -100, -100 }, smax[3] = { 100, 100, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, smin, smax), RV_OK);
    c.v.time_ms = 8;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, right));
    assert_false(view_draws(&v, left));
    assert_false(view_draws(&v, left_item));
    assert_true(v.counts.partition_culled >= 1);
    bool left_visible = true;
    assert_int_equal(rv_partition_part_frustum_visible(w, left, &left_visible), RV_OK);
    assert_false(left_visible);
    /* Clear the slice while the host is busy: the left storey re-enters, its resync is held,
     * and the loop must keep ticking to deliver it. */
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    host_busy = true;
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, left));
    assert_true(view_draws(&v, left_item));
    assert_int_equal(v.resync_request_count, 0);
    assert_int_equal(v.tick.mode, RV_TICK_CONTINUOUS);
    /* The host is free: the request is flushed (once), and nothing waits any more. */
    host_busy = false;
    c.v.time_ms = 24;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.resync_request_count, 1);
    assert_int_equal(v.resync_requests[0].part_count, 1);
    assert_true(rv_node_equal(v.resync_requests[0].parts[0], left));
    assert_int_equal(reprocess_calls, 1);
    assert_int_equal(v.tick.mode, RV_TICK_IDLE);
    rv_world_destroy(w);
}

/* After a frame of c: the group deep, nested in part through plain nodes, has its part
 * deep_part frustum-visible (gated within the margin, out of view); then relinked straight
 * under part, and under another plain node, a frame each, it still has. */
static void relink_deep_group(rv_world *w, rvt_camera *c, rv_node part, rv_node deep, rv_node deep_part)
{
    bool deep_visible = false;
    assert_int_equal(rv_partition_part_frustum_visible(w, deep_part, &deep_visible), RV_OK);
    assert_true(deep_visible);
    rv_frame_view v;
    assert_int_equal(rv_node_attach(w, part, deep), RV_OK);
    c->v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c->v, &v), RV_OK);
    assert_int_equal(rv_partition_part_frustum_visible(w, deep_part, &deep_visible), RV_OK);
    assert_true(deep_visible);
    rv_node other = rvt_node(w, part);
    assert_int_equal(rv_node_attach(w, other, deep), RV_OK);
    c->v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c->v, &v), RV_OK);
    assert_int_equal(rv_partition_part_frustum_visible(w, deep_part, &deep_visible), RV_OK);
    assert_true(deep_visible);
    assert_false(view_draws(&v, deep_part));
}

/* A model just outside the view but within the gate's margin: the world's walk gates the
 * group nested in its part as the gate's own walk does (the part is frustum-visible, so is
 * the nested part), and draws neither part. */
static void test_walk_gates_groups_nested_in_a_part_within_the_margin(void **state)
{
    (void)state;
    /* 0: rv_frame, margin 5; 1: the gate's own walk, margin 5; 2: the same, margin 0. */
    for (int run = 0; run < 3; run++) {
        rv_world_desc d = { 0 };
        d.partition.frustum_margin = run == 2 ? 0.0f : 5.0f;
        rv_world *w = NULL;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        /* Eye at eye0 looking down -Z, 90 degrees high, 16:9: the model (1 m) at x = -26,
         * 10 m ahead, lies about 3.5 m beyond the left plane. */
        rv_node outer = rvt_object(w, RV_NODE_NONE, -26, 1.7f, -10, 0.1f);
        rv_node part = rvt_object(w, outer, 0, 0, 0, 0.5f);
        rv_node inner = rvt_object(w, part, 0, 0, 0, 0.1f);
        rv_node nested = rvt_object(w, inner, 0, 0, 0, 1.0f);
        rv_node own = rvt_object(w, part, 0, 0, 0, 0.5f); /* a part of the part, itself a group */
        /* A group nested through plain nodes (the first with geometry of its own). */
        rv_node plain = rvt_object(w, part, 0, 0, 0, 0.3f);
        rv_node bare = rvt_node(w, plain);
        rv_node deep = rvt_object(w, bare, 0, 0, 0, 0.1f);
        rv_node deep_part = rvt_object(w, deep, 0, 0, 0, 1.0f);
        rv_node twin = rvt_object(w, bare, 0, 0, 0, 0.1f); /* a second path through bare */
        rv_node twin_part = rvt_object(w, twin, 0, 0, 0, 1.0f);
        assert_int_equal(rv_partition_make_group(w, outer), RV_OK);
        assert_int_equal(rv_partition_make_group(w, inner), RV_OK);
        assert_int_equal(rv_partition_make_group(w, part), RV_OK);
        assert_int_equal(rv_partition_make_group(w, deep), RV_OK);
        assert_int_equal(rv_partition_make_group(w, twin), RV_OK);
        uint64_t leaf_outer = 1, leaf_nested = 2, leaf_own = 3, leaf_deep = 4, leaf_twin = 5;
        assert_int_equal(rv_partition_set_part(w, part, &leaf_outer, 1, false), RV_OK);
        assert_int_equal(rv_partition_set_part(w, nested, &leaf_nested, 1, false), RV_OK);
        assert_int_equal(rv_partition_set_part(w, own, &leaf_own, 1, false), RV_OK);
        assert_int_equal(rv_partition_set_part(w, deep_part, &leaf_deep, 1, false), RV_OK);
        assert_int_equal(rv_partition_set_part(w, twin_part, &leaf_twin, 1, false), RV_OK);
        float look[3] = { eye0[0], eye0[1], eye0[2] - 10 }, quarter = 1.5707963f;
        if (run == 0) {
            rvt_camera c;
            rvt_camera_make(&c, eye0, look, quarter, 0);
            rv_frame_view v;
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            assert_false(view_draws(&v, part));
            assert_false(view_draws(&v, nested));
            assert_false(view_draws(&v, own));
            assert_false(view_draws(&v, plain));
            assert_false(view_draws(&v, deep_part));
            relink_deep_group(w, &c, part, deep, deep_part);
        } else {
            assert_int_equal(rv_update_world(w), RV_OK);
            rv_frustum fr = rvt_frustum(eye0, look, quarter, 1000);
            rv_partition_result res;
            assert_int_equal(rv_partition_begin_frame(w, &fr), RV_OK);
            assert_int_equal(rv_partition_end_frame(w, &fr, 0, &res), RV_OK);
        }
        bool part_visible = false, nested_visible = false, own_visible = false;
        assert_int_equal(rv_partition_part_frustum_visible(w, part, &part_visible), RV_OK);
        assert_int_equal(rv_partition_part_frustum_visible(w, nested, &nested_visible), RV_OK);
        assert_int_equal(rv_partition_part_frustum_visible(w, own, &own_visible), RV_OK);
        assert_true(part_visible == (run < 2));
        assert_true(nested_visible == (run < 2));
        assert_true(own_visible == (run < 2));
        bool deep_visible = false, twin_visible = false;
        assert_int_equal(rv_partition_part_frustum_visible(w, deep_part, &deep_visible), RV_OK);
        assert_true(deep_visible == (run < 2));
        assert_int_equal(rv_partition_part_frustum_visible(w, twin_part, &twin_visible), RV_OK);
        assert_true(twin_visible == (run < 2));
        rv_world_destroy(w);
    }
}

/* The nodes between a nested group and its part are marked for the walk at the frame's
 * begin; when the list of them cannot grow (the allocator fails there) the frame still
 * succeeds and marks them, and later frames take the marks back from every node: after
 * any single failed allocation of the first frame that it survives, the nested group is
 * gated within the margin in that frame and after two relinks, as with no failure. */
static void test_a_frame_that_cannot_list_its_paths_still_gates_through_them(void **state)
{
    (void)state;
    uint32_t survived = 0;
    for (uint64_t k = 1; k < 400; k++) {
        rvt_alloc counter = { 0 };
        rv_world_desc d = { 0 };
        d.allocator = rvt_allocator(&counter);
        d.partition.frustum_margin = 5.0f;
        rv_world *w = NULL;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        rv_node outer = rvt_object(w, RV_NODE_NONE, -26, 1.7f, -10, 0.1f);
        rv_node part = rvt_object(w, outer, 0, 0, 0, 0.5f);
        rv_node plain = rvt_object(w, part, 0, 0, 0, 0.3f);
        rv_node bare = rvt_node(w, plain);
        rv_node deep = rvt_object(w, bare, 0, 0, 0, 0.1f);
        rv_node deep_part = rvt_object(w, deep, 0, 0, 0, 1.0f);
        assert_int_equal(rv_partition_make_group(w, outer), RV_OK);
        assert_int_equal(rv_partition_make_group(w, deep), RV_OK);
        uint64_t leaf_outer = 1, leaf_deep = 4;
        assert_int_equal(rv_partition_set_part(w, part, &leaf_outer, 1, false), RV_OK);
        assert_int_equal(rv_partition_set_part(w, deep_part, &leaf_deep, 1, false), RV_OK);
        float look[3] = { eye0[0], eye0[1], eye0[2] - 10 };
        rvt_camera c;
        rvt_camera_make(&c, eye0, look, 1.5707963f, 0);
        rv_frame_view v;
        counter.fail_at = counter.calls + k;
        rv_result r = rv_frame(w, &c.v, &v);
        bool failed = counter.failed > 0;
        counter.fail_at = 0;
        if (!failed) { /* k is past the frame's allocations: every one has been tried */
            assert_int_equal(r, RV_OK);
            rv_world_destroy(w);
            assert_true(survived > 0);
            return;
        }
        if (r != RV_OK) {
            assert_int_equal(r, RV_ERR_OUT_OF_MEMORY);
            rv_world_destroy(w);
            continue;
        }
        survived++;
        relink_deep_group(w, &c, part, deep, deep_part);
        rv_world_destroy(w);
    }
    fail_msg("the first frame made more allocations than the test tries");
}

/* The world's first partition call made while a frame is open (here a model made into a
 * group between begin and end): that frame ends as it began, without the gate, and the gate
 * takes part from the next frame. */
static void test_a_gate_made_during_a_frame_joins_at_the_next(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -20, 0.1f);
    rv_node left = rvt_object(w, building, -2, 0, 0, 1);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves[1] = { 100 };
    assert_int_equal(rv_partition_set_part(w, left, leaves, 1, false), RV_OK);
    assert_int_equal(rv_frame_cull(w), RV_OK);
    assert_int_equal(rv_frame_end(w, &v), RV_OK);
    assert_true(view_draws(&v, left));
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, left));
    bool visible = false;
    assert_int_equal(rv_partition_part_frustum_visible(w, left, &visible), RV_OK);
    assert_true(visible);
    rv_world_destroy(w);
}

/* Between rv_frame_begin and rv_frame_end the world's walk gates the partition groups: the
 * host's own gate calls are refused and leave the frame to finish; outside it they work. */
static void test_gate_calls_are_refused_inside_the_worlds_frame(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 0, -20, 0.1f);
    rv_node left = rvt_object(w, building, -15, 0, 0, 1);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves[1] = { 100 };
    assert_int_equal(rv_partition_set_part(w, left, leaves, 1, false), RV_OK);
    rvt_camera c;
    float look[3] = { 0, 1.7f, -20 };
    rvt_camera_make(&c, eye0, look, 2.0f, 0);
    rv_frustum fr = rvt_frustum(eye0, look, 2.0f, 1000.0f);
    rv_partition_result pr;
    rv_frame_view v;
    for (int culled = 0; culled < 2; culled++) {
        c.v.time_ms = 8.0 * culled;
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        if (culled)
            assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_partition_gate_group(w, building, &fr), RV_ERR_BAD_STATE);
        assert_int_equal(rv_partition_group_hidden(w, building), RV_ERR_BAD_STATE);
        assert_int_equal(rv_partition_end_frame(w, &fr, c.v.time_ms, &pr), RV_ERR_BAD_STATE);
        assert_int_equal(rv_partition_begin_frame(w, &fr), RV_ERR_BAD_STATE);
        if (!culled)
            assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &v), RV_OK);
        assert_true(view_draws(&v, left));
    }
    /* Outside the world's frame the host may run the gate by hand. */
    assert_int_equal(rv_partition_begin_frame(w, NULL), RV_OK);
    assert_int_equal(rv_partition_gate_group(w, building, &fr), RV_OK);
    assert_int_equal(rv_partition_end_frame(w, NULL, 20.0, &pr), RV_OK);
    rv_world_destroy(w);
}

/* rv_node_set_flags: a hidden node is drawn in no view, nor is anything under it, and an
 * occluder on it or under it hides nothing; a translucent node goes to the translucent
 * list. rv_node_set_key: each draw item carries its node's key. */
static void test_node_flags_and_keys_reach_every_view(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    rv_node wall = wall_ahead(w);
    rv_node behind = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_node parent = rvt_object(w, RV_NODE_NONE, -2, 1.5f, -5, 0.5f);
    rv_node child = rvt_object(w, parent, 0.5f, 0, 0, 0.25f);
    rv_node glass = rvt_object(w, RV_NODE_NONE, 2, 1.5f, -5, 0.5f);
    rv_node nodes[4] = { behind, parent, child, glass };
    for (uint64_t k = 0; k < 4; k++)
        assert_int_equal(rv_node_set_key(w, nodes[k], 0xC0FFEE00ull + k), RV_OK);
    assert_int_equal(rv_node_set_flags(w, glass, RV_NODE_FLAG_TRANSLUCENT), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    rv_frame_view v, extra;
    bool translucent;
    /* Both views list every node with its key, the glass as translucent; the crate behind
     * the wall is hidden in the main view only (extra views have no occlusion). */
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    for (uint64_t k = 0; k < 4; k++) {
        const rv_frame_view *views[2] = { &v, &extra };
        for (int which = 0; which < 2; which++) {
            const rv_draw_item *it = view_item(views[which], nodes[k], &translucent);
            if (which == 0 && k == 0) {
                assert_null(it);
                continue;
            }
            assert_non_null(it);
            assert_true(it->key == 0xC0FFEE00ull + k);
            assert_int_equal(translucent, k == 3);
        }
    }
    /* The parent hidden: neither it nor its child is drawn, in either view or by the host's
     * own walk; the frame records why. */
    assert_int_equal(rv_node_set_flags(w, parent, RV_NODE_FLAG_HIDDEN), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
    assert_false(view_draws(&v, parent) || view_draws(&v, child));
    assert_false(view_draws(&extra, parent) || view_draws(&extra, child));
    assert_true(view_draws(&v, glass) && view_draws(&extra, glass));
    rv_frustum fr = rvt_frustum(eye0, ahead, 1.2f, 1000);
    rv_node seen[16];
    uint32_t seen_count;
    assert_int_equal(rv_collect_visible(w, RV_NODE_NONE, &fr, seen, 16, &seen_count, NULL), RV_OK);
    for (uint32_t i = 0; i < seen_count; i++)
        assert_false(rv_node_equal(seen[i], parent) || rv_node_equal(seen[i], child));
    assert_true(seen_count >= 2); /* behind and glass (the wall has no geometry) */
    /* A walk from inside the hidden subtree hands out nothing either. */
    rv_cull_counts walk_counts;
    assert_int_equal(rv_collect_visible(w, child, &fr, seen, 16, &seen_count, &walk_counts), RV_OK);
    assert_int_equal(seen_count, 0);
    assert_int_equal(walk_counts.visible, 0);
    /* The wall hidden: it hides nothing, so the crate behind it is drawn. The same when
     * the wall sits under a hidden node (at the origin, so the wall stays where it was). */
    assert_int_equal(rv_node_set_flags(w, wall, RV_NODE_FLAG_HIDDEN), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    assert_int_equal(v.counts.occluders_added, 0);
    assert_int_equal(rv_node_set_flags(w, wall, 0), RV_OK);
    rv_node holder = rvt_node(w, RV_NODE_NONE);
    assert_int_equal(rv_node_attach(w, holder, wall), RV_OK);
    assert_int_equal(rv_node_set_flags(w, holder, RV_NODE_FLAG_HIDDEN), RV_OK);
    c.v.time_ms = 48;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(view_draws(&v, behind));
    assert_int_equal(v.counts.occluders_added, 0);
    /* Flags cleared: everything as at first. */
    assert_int_equal(rv_node_set_flags(w, holder, 0), RV_OK);
    assert_int_equal(rv_node_set_flags(w, parent, 0), RV_OK);
    c.v.time_ms = 64;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, behind));
    assert_int_equal(v.counts.occluders_added, 1);
    assert_true(view_draws(&v, parent) && view_draws(&v, child));
    uint32_t flags;
    assert_int_equal(rv_node_get_flags(w, glass, &flags), RV_OK);
    assert_int_equal(flags, RV_NODE_FLAG_TRANSLUCENT);
    /* A slot reused by a new node starts with no key and no flags. */
    assert_int_equal(rv_node_destroy_subtree(w, glass), RV_OK);
    rv_node fresh = rvt_object(w, RV_NODE_NONE, 2, 1.5f, -5, 0.5f);
    uint64_t key;
    assert_int_equal(rv_node_get_key(w, fresh, &key), RV_OK);
    assert_int_equal(rv_node_get_flags(w, fresh, &flags), RV_OK);
    assert_true(key == 0 && flags == 0);
    c.v.time_ms = 80;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    const rv_draw_item *it = view_item(&v, fresh, &translucent);
    assert_non_null(it);
    assert_true(it->key == 0 && !translucent);
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* rv_group_spatially leaves a projection's equipped children where its render scene put
 * them: grouping them under host-made nodes is refused, and the world is unchanged (so
 * when the body leaves, its children become roots, as the journal's header says). */
static rv_projection group_test_projection(rv_projection_class c, uint64_t parent, float x)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform.position[0] = x;
    p.transform.position[2] = -10;
    p.transform.rotation[3] = 1;
    p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1;
    p.transform.bounds[3] = 0.5f;
    p.bucket.projection_class = c;
    p.bucket.parent_key = parent;
    return p;
}

static rv_node group_test_node(rv_render_scene *s, uint64_t key)
{
    uint32_t slot;
    rv_projection_record rec;
    assert_int_equal(rv_render_scene_find(s, key, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(s, slot, &rec), RV_OK);
    return rec.node;
}

static void test_grouping_and_rerooting_leave_projection_nodes_to_their_scene(void **state)
{
    (void)state;
    rv_world *w;
    rv_journal *j;
    rv_render_scene *s;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    assert_int_equal(rv_world_journal(w, &j), RV_OK);
    assert_int_equal(rv_world_render_scene(w, &s), RV_OK);
    rv_projection body = group_test_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(j, 0, 100, 1, &body, NULL), RV_OK);
    for (int i = 0; i < 8; i++) {
        rv_projection c = group_test_projection(RV_PROJECTION_EQUIPPED_CHILD, 100, (float)i);
        assert_int_equal(rv_journal_register(j, 0, 1000 + (uint64_t)i, 1, &c, NULL), RV_OK);
    }
    float projection[16], view[16];
    rvt_perspective(1.2f, 4.0f / 3.0f, 0.1f, 100.0f, projection);
    const float eye[3] = { 0, 1.7f, 0 }, target[3] = { 0, 1.7f, -1 };
    rvt_look_at(eye, target, view);
    rv_view v = { .view = view, .projection = projection, .viewport_width = 640, .viewport_height = 480 };
    rv_frame_view out;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    rv_node b = group_test_node(s, 100), c = group_test_node(s, 1003), parent;
    uint32_t nodes = rv_world_scene_stats(w).nodes, groups = 99;
    assert_int_equal(rv_group_spatially(w, b, NULL, 0, 2, &groups), RV_ERR_BAD_STATE);
    rv_node first;
    assert_int_equal(rv_node_first_child(w, b, &first), RV_OK);
    assert_int_equal(rv_group_spatially(w, b, &first, 1, 0, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_world_scene_stats(w).nodes, nodes);
    assert_int_equal(rv_node_parent(w, c, &parent), RV_OK);
    assert_true(parent.id == b.id);
    /* Nor may the host destroy the body and make its equipped children roots: they would
     * keep their transforms relative to the body as a root's. */
    assert_int_equal(rv_node_destroy_reroot(w, b), RV_ERR_BAD_STATE);
    assert_true(rv_node_is_valid(w, b));
    assert_int_equal(rv_world_scene_stats(w).nodes, nodes);
    assert_int_equal(rv_node_parent(w, c, &parent), RV_OK);
    assert_true(parent.id == b.id);
    /* The body leaves: its children become roots. */
    assert_int_equal(rv_journal_unregister(j, 0, 100, 1, NULL), RV_OK);
    v.time_ms = 16;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    assert_int_equal(rv_node_parent(w, c, &parent), RV_OK);
    assert_true(parent.id == RV_NODE_NONE.id);
    rv_world_destroy(w);
}

static void test_journal_projections_are_drawn_with_their_keys(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_journal *j;
    assert_int_equal(rv_world_journal(w, &j), RV_OK);
    rv_projection p = unit_projection();
    for (uint64_t key = 1; key <= 3; key++) {
        p.transform.position[0] = (float)key - 2;
        p.transform.position[1] = 1.7f;
        p.transform.position[2] = -10;
        p.flags = key == 3 ? RV_PROJECTION_TRANSLUCENT : 0;
        assert_int_equal(rv_journal_register(j, 0, key, 1, &p, NULL), RV_OK);
    }
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.journal_applied, 3);
    assert_int_equal(v.opaque_count, 2);
    assert_int_equal(v.translucent_count, 1);
    assert_true(v.translucent[0].key == 3);
    assert_true(v.opaque[0].key == 1 || v.opaque[0].key == 2);
    /* The journal owns a projection's flags and key: the node refuses the host's. */
    rv_node projected = v.translucent[0].node;
    uint32_t flags = 0;
    uint64_t key = 0;
    assert_int_equal(rv_node_get_key(w, projected, &key), RV_OK);
    assert_int_equal(rv_node_get_flags(w, projected, &flags), RV_OK);
    assert_true(key == 3 && flags == RV_NODE_FLAG_TRANSLUCENT);
    assert_int_equal(rv_node_set_flags(w, projected, 0), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_set_key(w, projected, 9), RV_ERR_BAD_STATE);
    const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    float local_before[16], local_after[16];
    assert_int_equal(rv_node_get_local_matrix(w, projected, local_before), RV_OK);
    assert_int_equal(rv_node_set_local_matrix(w, projected, identity), RV_ERR_BAD_STATE);
    /* Its transform and bounds too, by every setter. */
    const float far[3] = { 300, 0, 0 }, two[3] = { 2, 2, 2 }, turn[4] = { 0, 1, 0, 0 }, up[3] = { 0, 1, 0 };
    float *pos = NULL, *rot = NULL, *scl = NULL, sphere_before[4], sphere_after[4];
    assert_int_equal(rv_node_world_bounds(w, projected, sphere_before), RV_OK);
    assert_int_equal(rv_node_set_position(w, projected, far), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_set_scale(w, projected, two), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_set_rotation(w, projected, turn), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_set_rotation_axis_angle(w, projected, up, 1.0f), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_set_bounds(w, projected, far, 5.0f), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_transform_ptrs(w, projected, &pos, &rot, &scl), RV_ERR_BAD_STATE);
    assert_null(pos);
    /* And its place in the hierarchy: under a host node far away, or detached. */
    rv_node elsewhere, parent_before, parent_after;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &elsewhere), RV_OK);
    assert_int_equal(rv_node_set_position(w, elsewhere, far), RV_OK);
    assert_int_equal(rv_node_parent(w, projected, &parent_before), RV_OK);
    assert_int_equal(rv_node_attach(w, elsewhere, projected), RV_ERR_BAD_STATE);
    /* Under itself it would also make a cycle: the projection's refusal comes first. */
    assert_int_equal(rv_node_attach(w, projected, projected), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_detach(w, projected), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_parent(w, projected, &parent_after), RV_OK);
    assert_true(parent_after.id == parent_before.id);
    assert_int_equal(rv_update_world(w), RV_OK);
    assert_int_equal(rv_node_world_bounds(w, projected, sphere_after), RV_OK);
    assert_memory_equal(sphere_before, sphere_after, sizeof sphere_after);
    assert_int_equal(rv_node_get_local_matrix(w, projected, local_after), RV_OK);
    assert_memory_equal(local_before, local_after, sizeof local_after);
    assert_int_equal(rv_node_get_key(w, projected, &key), RV_OK);
    assert_int_equal(rv_node_get_flags(w, projected, &flags), RV_OK);
    assert_true(key == 3 && flags == RV_NODE_FLAG_TRANSLUCENT);
    /* Move key 1 far away through the journal: it leaves the view next frame. */
    rv_projection_transform t = p.transform;
    t.position[0] = 500;
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 1);
    assert_true(v.opaque[0].key == 2);
    rv_world_destroy(w);
}

static void test_streaming_hands_out_requests_and_ticks_while_loading(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_grid_desc gd = { 0 };
    gd.source = 9;
    gd.origin[0] = gd.origin[1] = -64;
    gd.cell_size = 8;
    gd.count_x = gd.count_z = 16;
    gd.lead = 8;
    gd.eye_radius = 8;
    assert_int_equal(rv_world_add_grid(w, &gd, NULL), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(v.page_request_count > 0);
    assert_int_equal(v.page_requests[0].key.source, 9);
    assert_true(v.page_requests[0].distance == 0.0f); /* nearest first: the eye's cell */
    assert_int_equal(v.tick.mode, RV_TICK_CONTINUOUS); /* loads in flight */
    rv_residency *res = rv_world_residency(w);
    assert_non_null(res);
    /* No page size is known yet (none placed, no estimate in the desc): only the pages in
     * use load; the lead ring waits for a size to reserve room with. */
    for (uint32_t k = 0; k < v.page_request_count; k++)
        assert_int_equal(v.page_requests[k].flags, RV_PAGE_REQUEST_IN_USE);
    assert_true(rv_residency_get_stats(res).prefetch_paused);
    for (uint32_t k = 0; k < v.page_request_count; k++)
        assert_int_equal(rv_residency_place(res, v.page_requests[k].key, 4096), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_true(v.page_request_count > 0); /* the lead ring, at 4096 bytes a page */
    for (uint32_t k = 0; k < v.page_request_count; k++) {
        assert_int_equal(v.page_requests[k].flags, 0);
        assert_int_equal(rv_residency_place(res, v.page_requests[k].key, 4096), RV_OK);
    }
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.page_request_count, 0);
    assert_int_equal(v.tick.mode, RV_TICK_IDLE);
    rv_world_destroy(w);
}

/* A host that answers every frame's page requests right after rv_frame, freeing the view's
 * evictions first, and checks the residency's budget after every placement. */
enum { FH_SIDE = 64 };

typedef struct frame_host {
    rv_world *w;
    bool resident[FH_SIDE * FH_SIDE];
    uint64_t page_bytes;
    uint64_t peak;             /* largest bytes_resident after a placement */
    uint32_t over_placements;  /* placements after which resident bytes passed the budget */
    uint32_t prefetches;       /* requests of the last view not flagged in use */
    rv_frame_view v;
    double now;
} frame_host;

/* A 64 x 64 grid of 16 m pages centred on the origin; the eye is its only source. */
static void frame_host_init(frame_host *h, uint64_t budget, uint64_t estimate, float eye_radius, float lead,
                            uint64_t page_bytes)
{
    memset(h, 0, sizeof *h);
    rv_world_desc d = { 0 };
    d.residency.budget_bytes = budget;
    d.residency.page_bytes_estimate = estimate;
    assert_int_equal(rv_world_create(&d, &h->w), RV_OK);
    rv_grid_desc gd = { 0 };
    gd.source = 5;
    gd.origin[0] = gd.origin[1] = -512;
    gd.cell_size = 16;
    gd.count_x = gd.count_z = FH_SIDE;
    gd.lead = lead;
    gd.eye_radius = eye_radius;
    assert_int_equal(rv_world_add_grid(h->w, &gd, NULL), RV_OK);
    h->page_bytes = page_bytes;
}

static void frame_host_check(frame_host *h)
{
    rv_residency *res = rv_world_residency(h->w);
    rv_residency_stats st = rv_residency_get_stats(res);
    if (st.bytes_resident > h->peak)
        h->peak = st.bytes_resident;
    assert_int_equal(st.over_budget, st.bytes_resident > st.budget_bytes);
    if (!st.over_budget)
        return;
    /* Past the budget only with every resident page in use this frame. */
    for (uint32_t i = 0; i < FH_SIDE * FH_SIDE; i++)
        if (h->resident[i]) {
            rv_page_info info;
            assert_int_equal(rv_residency_page_info(res, (rv_page_key){ 5, i }, &info), RV_OK);
            assert_int_equal(info.last_touched_frame, st.frame);
        }
    h->over_placements++;
}

/* One frame with the eye at cell (x, z)'s centre. */
static void frame_host_step(frame_host *h, uint32_t x, uint32_t z)
{
    rvt_camera c;
    float eye[3] = { -512.0f + 16.0f * (float)x + 8, 1.7f, -512.0f + 16.0f * (float)z + 8 };
    float target[3] = { eye[0], eye[1], eye[2] - 10 };
    h->now += 16;
    rvt_camera_make(&c, eye, target, 1.0f, h->now);
    assert_int_equal(rv_frame(h->w, &c.v, &h->v), RV_OK);
    assert_int_equal(h->v.counts.pages_evicted, h->v.page_eviction_count);
    for (uint32_t k = 0; k < h->v.page_eviction_count; k++) {
        assert_true(h->resident[h->v.page_evictions[k].key.index]);
        h->resident[h->v.page_evictions[k].key.index] = false;
    }
    h->prefetches = 0;
    rv_residency *res = rv_world_residency(h->w);
    for (uint32_t k = 0; k < h->v.page_request_count; k++) {
        const rv_page_request *q = &h->v.page_requests[k];
        h->prefetches += !(q->flags & RV_PAGE_REQUEST_IN_USE);
        assert_int_equal(rv_residency_place(res, q->key, h->page_bytes), RV_OK);
        h->resident[q->key.index] = true;
        frame_host_check(h);
    }
}

static void test_streaming_budget_holds_after_every_placement_through_a_teleport(void **state)
{
    (void)state;
    /* 13 pages in use around the eye (24 m over 16 m pages), 29 with the lead ring; room
     * for 20. */
    const uint64_t page = 64 * 1024, budget = 20 * page;
    frame_host h;
    frame_host_init(&h, budget, 0, 24, 16, page);
    for (int f = 0; f < 60; f++) {
        uint32_t cell = f >= 20 && f < 40 ? 7 : 32; /* there, across the grid, and back */
        frame_host_step(&h, cell, cell);
        if (f == 20 || f == 40) {
            /* The frame the eye lands: its loads and the evictions that make room for them
             * are in the same view. */
            assert_int_equal(h.v.page_request_count, 20);
            assert_int_equal(h.prefetches, 7);
            assert_int_equal(h.v.page_eviction_count, 20);
        }
    }
    assert_int_equal(h.over_placements, 0);
    assert_int_equal(h.peak, budget); /* filled to the budget, never past it */
    rv_world_destroy(h.w);
}

static void test_streaming_cold_start_prefetch_fits_the_budget(void **state)
{
    (void)state;
    /* One page in use (7 m around the eye at a page's centre), dozens in the lead ring, room
     * for 8. */
    const uint64_t page = 64 * 1024, budget = 8 * page;
    frame_host h;
    frame_host_init(&h, budget, 0, 7, 64, page);
    frame_host_step(&h, 32, 32); /* no size known yet: only the page in use */
    assert_int_equal(h.v.page_request_count, 1);
    assert_int_equal(h.prefetches, 0);
    frame_host_step(&h, 32, 32); /* the first page's size reserves room for the rest */
    assert_int_equal(h.prefetches, 7);
    frame_host_step(&h, 32, 32);
    assert_int_equal(h.v.page_request_count, 0);
    assert_int_equal(h.over_placements, 0);
    assert_int_equal(h.peak, budget);
    rv_world_destroy(h.w);

    /* With the page size in the desc, prefetch starts on the first frame, as much as fits. */
    frame_host_init(&h, budget, page, 7, 64, page);
    frame_host_step(&h, 32, 32);
    assert_int_equal(h.v.page_request_count, 8);
    assert_int_equal(h.prefetches, 7);
    assert_int_equal(h.over_placements, 0);
    assert_int_equal(h.peak, budget);
    rv_world_destroy(h.w);
}

static void test_streaming_budget_smaller_than_one_source_is_passed_only_by_pages_in_use(void **state)
{
    (void)state;
    const uint64_t page = 64 * 1024, budget = 10 * page;
    frame_host h;
    frame_host_init(&h, budget, page, 24, 16, page);
    for (int f = 0; f < 3; f++)
        frame_host_step(&h, 0, 0); /* in the grid's corner: 6 pages in use, 4 lead pages */
    assert_int_equal(h.peak, budget);
    assert_int_equal(h.over_placements, 0);
    frame_host_step(&h, 32, 32); /* 13 pages in use: all load, the old ones all go */
    assert_int_equal(h.v.page_request_count, 13);
    assert_int_equal(h.prefetches, 0);
    assert_int_equal(h.v.page_eviction_count, 10);
    assert_true(h.over_placements > 0);
    rv_residency_stats st = rv_residency_get_stats(rv_world_residency(h.w));
    assert_true(st.over_budget);
    assert_int_equal(st.over_budget_bytes, 3 * page);
    frame_host_step(&h, 32, 32); /* staying: nothing leaves, nothing reloads */
    assert_int_equal(h.v.page_request_count, 0);
    assert_int_equal(h.v.page_eviction_count, 0);
    rv_world_destroy(h.w);
}

static void test_translucent_far_to_near_stable_and_digest_reproducible(void **state)
{
    (void)state;
    uint64_t digests[2][20];
    for (int run = 0; run < 2; run++) {
        rv_world *w = rvt_world_occlusion(64);
        uint64_t seed = 11;
        for (int i = 0; i < 200; i++) {
            rv_node n = rvt_object(w, RV_NODE_NONE, rvt_uniform(&seed, -30, 30), 1, -(float)(i % 10) * 5 - 5, 0.5f);
            (void)n;
        }
        rv_node wall;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
        float wmin[3] = { -5, 0, -26 }, wmax[3] = { 5, 5, -25 };
        assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
        rvt_camera c;
        rv_frame_view v;
        for (int f = 0; f < 20; f++) {
            float eye[3] = { (float)f * 0.5f, 1.7f, 0 };
            float target[3] = { (float)f * 0.5f, 1.7f, -10 };
            rvt_camera_make(&c, eye, target, 1.2f, f * 16.0);
            assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
            digests[run][f] = rv_frame_view_digest(&v);
            for (uint32_t i = 1; i < v.opaque_count; i++)
                assert_true(v.opaque[i - 1].view_depth <= v.opaque[i].view_depth);
        }
        rv_world_destroy(w);
    }
    assert_memory_equal(digests[0], digests[1], sizeof digests[0]);
    assert_true(digests[0][0] != digests[0][19]);
}

static void test_translucent_list_is_far_to_near(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_journal *j;
    assert_int_equal(rv_world_journal(w, &j), RV_OK);
    rv_projection p = unit_projection();
    p.transform.bounds[3] = 0.5f;
    p.flags = RV_PROJECTION_TRANSLUCENT;
    const float depths[6] = { 10, 30, 20, 20, 5, 20 };
    for (uint64_t k = 0; k < 6; k++) {
        p.transform.position[0] = (float)k * 0.1f;
        p.transform.position[1] = 1.7f;
        p.transform.position[2] = -depths[k];
        assert_int_equal(rv_journal_register(j, 0, k + 1, 1, &p, NULL), RV_OK);
    }
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.translucent_count, 6);
    for (uint32_t i = 1; i < v.translucent_count; i++)
        assert_true(v.translucent[i - 1].view_depth >= v.translucent[i].view_depth - 1e-3f);
    assert_true(v.translucent[0].key == 2);
    assert_true(v.translucent[5].key == 5);
    rv_world_destroy(w);
}

/* A translucent node with a child far behind it sorts by its own geometry: a pane at depth
 * 5 whose child stands at 60 is drawn after (in front of) a glass at 20. */
static void test_translucent_parent_sorts_by_its_own_geometry(void **state)
{
    (void)state;
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node pane, child, glass;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &pane), RV_OK);
    assert_int_equal(rv_node_set_position(w, pane, (float[3]){ 0, 0, -5 }), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, pane, (float[3]){ 0, 0, 0 }, 1), RV_OK);
    assert_int_equal(rv_node_set_flags(w, pane, RV_NODE_FLAG_TRANSLUCENT), RV_OK);
    assert_int_equal(rv_node_create(w, pane, &child), RV_OK);
    assert_int_equal(rv_node_set_position(w, child, (float[3]){ 0, 0, -55 }), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, child, (float[3]){ 0, 0, 0 }, 1), RV_OK);
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &glass), RV_OK);
    assert_int_equal(rv_node_set_position(w, glass, (float[3]){ 1, 0, -20 }), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, glass, (float[3]){ 0, 0, 0 }, 1), RV_OK);
    assert_int_equal(rv_node_set_flags(w, glass, RV_NODE_FLAG_TRANSLUCENT), RV_OK);
    const float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float proj[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };
    rv_view v = { .view = view, .projection = proj, .viewport_width = 800, .viewport_height = 800 };
    rv_frame_view out;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    assert_int_equal(out.translucent_count, 2);
    assert_true(rv_node_equal(out.translucent[0].node, glass));
    assert_true(rv_node_equal(out.translucent[1].node, pane));
    assert_float_equal(out.translucent[1].view_depth, 5.0f, 1e-4f);

    /* A pane that loses its child after the update keeps a sphere around it until the next
     * one; its depth is still its own: detached or destroyed in the frame's window, detached
     * before an extra view, and a node attached under the glass and detached again. */
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    for (int how = 0; how < 3; how++) {
        v.time_ms += 16;
        assert_int_equal(rv_frame_begin(w, &v), RV_OK);
        if (how == 0)
            assert_int_equal(rv_node_detach(w, child), RV_OK);
        else if (how == 1)
            assert_int_equal(rv_node_destroy_subtree(w, child), RV_OK);
        else {
            assert_int_equal(rv_node_attach(w, glass, child), RV_OK); /* grows the glass */
            assert_int_equal(rv_node_detach(w, child), RV_OK);
        }
        assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_end(w, &out), RV_OK);
        rv_frame_view extra;
        assert_int_equal(rv_cull_view(w, &v, list, &extra), RV_OK);
        for (int k = 0; k < 2; k++) {
            const rv_frame_view *fv = k ? &extra : &out;
            assert_int_equal(fv->translucent_count, 2);
            assert_true(rv_node_equal(fv->translucent[0].node, glass));
            assert_true(rv_node_equal(fv->translucent[1].node, pane));
            assert_float_equal(fv->translucent[0].view_depth, 20.0f, 1e-4f);
            assert_float_equal(fv->translucent[1].view_depth, 5.0f, 1e-4f);
        }
        /* the child back under the pane, placed, for the next case */
        if (how == 0)
            assert_int_equal(rv_node_attach(w, pane, child), RV_OK);
        if (how == 1) {
            assert_int_equal(rv_node_create(w, pane, &child), RV_OK);
            assert_int_equal(rv_node_set_position(w, child, (float[3]){ 0, 0, -55 }), RV_OK);
            assert_int_equal(rv_node_set_bounds(w, child, (float[3]){ 0, 0, 0 }, 1), RV_OK);
        }
        if (how == 2)
            assert_int_equal(rv_node_set_position(w, child, (float[3]){ 0, 0, -55 }), RV_OK);
        assert_int_equal(rv_update_world(w), RV_OK);
    }
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

/* An orthographic camera given as view_projection + eye: view depths grow away from the
 * eye and the opaque list is front to back, in OpenGL depth and in reversed 0..1 depth. */
static void test_orthographic_view_projection_form_sorts_front_to_back(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node near_n = rvt_object(w, RV_NODE_NONE, 0, 0, -5, 1);
    rv_node far_n = rvt_object(w, RV_NODE_NONE, 0, 0, -50, 1);
    const float n = 0.1f, fa = 100.0f;
    /* Camera at the origin looking down -Z, 20 x 20 m; the view matrix is the identity. */
    const float gl[16] = { 0.1f, 0, 0, 0, 0, 0.1f, 0, 0, 0, 0, -2 / (fa - n), 0, 0, 0, -(fa + n) / (fa - n), 1 };
    const float rev01[16] = { 0.1f, 0, 0, 0, 0, 0.1f, 0, 0, 0, 0, 1 / (fa - n), 0, 0, 0, fa / (fa - n), 1 };
    const float eye[3] = { 0, 0, 0 };
    for (int k = 0; k < 2; k++) {
        rv_view v;
        memset(&v, 0, sizeof v);
        v.view_projection = k ? rev01 : gl;
        v.eye = eye;
        v.clip.depth_zero_to_one = k == 1;
        v.clip.reversed_z = k == 1;
        v.viewport_width = v.viewport_height = 100;
        v.time_ms = 10.0 * k;
        rv_frame_view fv;
        assert_int_equal(rv_frame(w, &v, &fv), RV_OK);
        assert_int_equal(fv.opaque_count, 2);
        assert_true(rv_node_equal(fv.opaque[0].node, near_n));
        assert_true(rv_node_equal(fv.opaque[1].node, far_n));
        assert_float_equal(fv.opaque[0].view_depth, 5.0f, 1e-4f);
        assert_float_equal(fv.opaque[1].view_depth, 50.0f, 1e-4f);
    }
    rv_world_destroy(w);
}

/* Bad in-place transform writes (NaN, zero quaternion) keep that node's old matrix; the
 * frame still runs and draws the rest. */
static void test_bad_in_place_write_does_not_stop_the_frame(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node a = rvt_object(w, RV_NODE_NONE, -1, 1.7f, -10, 0.5f);
    rv_node b = rvt_object(w, RV_NODE_NONE, 1, 1.7f, -10, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.opaque_count, 2);
    float *pos, *rot;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rv_node_transform_ptrs(w, a, &pos, &rot, NULL), RV_OK);
        if (k == 0)
            rot[0] = rot[1] = rot[2] = rot[3] = 0.0f;
        else
            pos[0] = NAN;
        assert_int_equal(rv_node_mark_moved(w, a), RV_OK);
        c.v.time_ms = 16.0 * (k + 1);
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_true(view_draws(&v, a));
        assert_true(view_draws(&v, b));
        const float q[4] = { 0, 0, 0, 1 }, p[3] = { -1, 1.7f, -10 };
        assert_int_equal(rv_node_set_rotation(w, a, q), RV_OK);
        assert_int_equal(rv_node_set_position(w, a, p), RV_OK);
    }
    rv_world_destroy(w);
}

static uint64_t allocations_of(const rv_world *w)
{
    rv_alloc_stats st = rv_world_alloc_stats(w);
    return st.allocations + st.reallocations;
}

/* Parent scale 1e30 times c's 1e30 overflows float while the host moves c from ahead of the
 * camera to behind it (where its real geometry, scaled by 1e60, is too: it fills all
 * space). c keeps its matrix (ahead). Looking back, every frame from then on draws c and
 * its child g (with the kept matrix; c's test box under it must not cull them either) and
 * counts them in transform_stale; transform_errors
 * says 1 in the first frame only. Those frames allocate nothing. The extra view draws
 * them too. Composed again (scales back to 1, c ahead), they are culled looking back. */
static void test_frame_draws_a_node_of_unknown_placement_in_every_frame_and_counts_it(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_node p;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &p), RV_OK);
    rv_node c = rvt_object(w, p, 0, 1.7f, -10, 1);
    rv_node g = rvt_object(w, c, 0, 1, 0, 0.5f);
    float bmin[3] = { -1.5f, -1.5f, -1.5f }, bmax[3] = { 1.5f, 1.5f, 1.5f }; /* c and g */
    assert_int_equal(rv_node_set_test_box(w, c, bmin, bmax), RV_OK);
    rv_node e = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -50, 1);
    const float behind[3] = { 0, 1.7f, 10 };
    rvt_camera front, back;
    rvt_camera_make(&front, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &front.v, &v), RV_OK);
    assert_true(view_draws(&v, c) && view_draws(&v, g) && view_draws(&v, e));
    assert_int_equal(v.counts.transform_stale, 0);
    float kept[16];
    assert_int_equal(rv_node_world_matrix(w, c, kept), RV_OK);

    const float huge[3] = { 1e30f, 1e30f, 1e30f }, to[3] = { 0, 1.7f, 10 };
    assert_int_equal(rv_node_set_position(w, c, to), RV_OK);
    assert_int_equal(rv_node_set_scale(w, p, huge), RV_OK);
    assert_int_equal(rv_node_set_scale(w, c, huge), RV_OK);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    uint64_t allocations = 0;
    for (int f = 1; f <= 6; f++) {
        rvt_camera_make(&back, eye0, behind, 1.0f, 16.0 * f);
        assert_int_equal(rv_frame(w, &back.v, &v), RV_OK);
        assert_int_equal(v.counts.transform_errors, f == 1);
        assert_int_equal(v.counts.transform_stale, 2);
        assert_true(view_draws(&v, c));
        assert_true(view_draws(&v, g));
        assert_false(view_draws(&v, e));
        assert_memory_equal(item_of(&v, c)->world_matrix, kept, sizeof kept);
        assert_true(isfinite(item_of(&v, c)->view_depth));
        rv_frame_view extra;
        assert_int_equal(rv_cull_view(w, &back.v, list, &extra), RV_OK);
        assert_true(view_draws(&extra, c) && view_draws(&extra, g));
        if (f == 3)
            allocations = allocations_of(w);
    }
    assert_int_equal(allocations_of(w), allocations);
    rv_view_list_destroy(list);

    const float one[3] = { 1, 1, 1 }, home[3] = { 0, 1.7f, -10 };
    assert_int_equal(rv_node_set_scale(w, p, one), RV_OK);
    assert_int_equal(rv_node_set_scale(w, c, one), RV_OK);
    assert_int_equal(rv_node_set_position(w, c, home), RV_OK);
    rvt_camera_make(&back, eye0, behind, 1.0f, 200);
    assert_int_equal(rv_frame(w, &back.v, &v), RV_OK);
    assert_int_equal(v.counts.transform_errors, 0);
    assert_int_equal(v.counts.transform_stale, 0);
    assert_false(view_draws(&v, c));
    assert_false(view_draws(&v, g));
    assert_int_equal(v.opaque_count, 0);
    rv_world_destroy(w);
}

/* Beside the wall's shadow: a node whose test box (1 wide) lies wholly behind the wall and
 * whose sphere (3 across) reaches past its edge. With the box it is hidden; cleared, the
 * frame tests its sphere and draws it; cleared again, nothing changes; set again, hidden
 * again. */
static void test_a_cleared_test_box_leaves_the_sphere_to_judge(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    wall_ahead(w); /* at z = -10 its shadow reaches x = 6 at z = -20 */
    rv_node n = rvt_object(w, RV_NODE_NONE, 5.2f, 1.7f, -20, 1.5f);
    const float bmin[3] = { -0.5f, -0.5f, -0.5f }, bmax[3] = { 0.5f, 0.5f, 0.5f };
    assert_int_equal(rv_node_set_test_box(w, n, bmin, bmax), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, n));
    assert_int_equal(v.counts.occlusion_culled, 1);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rv_node_clear_test_box(w, n), RV_OK);
        c.v.time_ms += 16;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_true(view_draws(&v, n));
        assert_int_equal(v.counts.occlusion_culled, 0);
    }
    assert_int_equal(rv_node_set_test_box(w, n, bmin, bmax), RV_OK);
    c.v.time_ms += 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, n));
    rv_world_destroy(w);
}

/* Behind a wall: n (with a test box small enough that occlusion tests the box) and a group
 * of two. A NaN written into n's and one group child's positions (the host moving them)
 * leaves their placement unknown: occlusion must not hide them, in that frame or later
 * (nor the group, whose subtree sphere is unbounded), while the untouched group child stays
 * hidden. Fixed (moved back behind the wall), they are hidden again. */
static void test_occlusion_never_hides_a_node_of_unknown_placement(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    wall_ahead(w);
    rv_node n = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    float bmin[3] = { -0.3f, -0.3f, -0.3f }, bmax[3] = { 0.3f, 0.3f, 0.3f };
    assert_int_equal(rv_node_set_test_box(w, n, bmin, bmax), RV_OK);
    rv_node grp;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &grp), RV_OK);
    rv_node g1 = rvt_object(w, grp, -1, 1.5f, -30, 0.5f);
    rv_node g2 = rvt_object(w, grp, 1, 1.5f, -30, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, n));
    assert_false(view_draws(&v, g1));
    assert_false(view_draws(&v, g2));
    assert_true(v.counts.occlusion_culled >= 2);

    float *pn, *pg;
    assert_int_equal(rv_node_transform_ptrs(w, n, &pn, NULL, NULL), RV_OK);
    assert_int_equal(rv_node_transform_ptrs(w, g1, &pg, NULL, NULL), RV_OK);
    pn[0] = NAN;
    pg[1] = NAN;
    assert_int_equal(rv_node_mark_moved(w, n), RV_OK);
    assert_int_equal(rv_node_mark_moved(w, g1), RV_OK);
    for (int f = 1; f <= 3; f++) {
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.counts.transform_stale, 2);
        assert_int_equal(v.counts.occluders_rasterised, 1); /* the wall still hides */
        assert_true(view_draws(&v, n));
        assert_true(view_draws(&v, g1));
        assert_false(view_draws(&v, g2));
    }
    float pn_home[3] = { 0, 1.5f, -20 }, pg_home[3] = { -1, 1.5f, -30 };
    assert_int_equal(rv_node_set_position(w, n, pn_home), RV_OK);
    assert_int_equal(rv_node_set_position(w, g1, pg_home), RV_OK);
    c.v.time_ms = 100;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.transform_stale, 0);
    assert_false(view_draws(&v, n));
    assert_false(view_draws(&v, g1));
    assert_false(view_draws(&v, g2));
    rv_world_destroy(w);
}

/* A wall hides a crate. The host moves the wall away and writes a NaN: the wall's kept
 * matrix is not where it is, so it must hide nothing (it is not rasterised) until it
 * composes again; then it hides the crate again. */
static void test_occluder_of_unknown_placement_hides_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    rv_node wall = wall_ahead(w);
    rv_node crate = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, crate));
    assert_int_equal(v.counts.occluders_rasterised, 1);

    float *pos;
    assert_int_equal(rv_node_transform_ptrs(w, wall, &pos, NULL, NULL), RV_OK);
    pos[0] = 100;
    pos[1] = NAN;
    assert_int_equal(rv_node_mark_moved(w, wall), RV_OK);
    for (int f = 1; f <= 3; f++) {
        c.v.time_ms = 16.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.counts.transform_stale, 1);
        assert_int_equal(v.counts.occluders_rasterised, 0);
        assert_true(view_draws(&v, crate));
    }
    const float home[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_position(w, wall, home), RV_OK);
    c.v.time_ms = 100;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.transform_stale, 0);
    assert_int_equal(v.counts.occluders_rasterised, 1);
    assert_false(view_draws(&v, crate));
    rv_world_destroy(w);
}

/* 200 ahead a ladder says "nothing" for a unit sphere. A NaN written into its position
 * (the host moving it, perhaps close) leaves its placement unknown: LOD must draw it at
 * level 0 in that very frame (no fade-in from nothing) and in later ones. Composed again
 * 200 ahead, it fades back to nothing. */
static void test_lod_never_drops_a_node_of_unknown_placement(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    rv_lod_ladder ladder;
    float thresholds[2] = { 0.1f, 0.02f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 2, &ladder), RV_OK);
    rv_node far_n = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -200, 1);
    assert_int_equal(rv_node_set_lod_ladder(w, far_n, &ladder), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, far_n));
    assert_int_equal(v.counts.lod_culled, 1);

    float *pos;
    assert_int_equal(rv_node_transform_ptrs(w, far_n, &pos, NULL, NULL), RV_OK);
    pos[2] = NAN;
    assert_int_equal(rv_node_mark_moved(w, far_n), RV_OK);
    for (int f = 1; f <= 4; f++) {
        c.v.time_ms = 100.0 * f;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.counts.transform_stale, 1);
        assert_int_equal(v.counts.lod_culled, 0);
        const rv_draw_item *it = item_of(&v, far_n);
        assert_non_null(it);
        assert_int_equal(it->lod_level, 0);
    }
    const float home[3] = { 0, 1.7f, -200 };
    assert_int_equal(rv_node_set_position(w, far_n, home), RV_OK);
    c.v.time_ms = 500;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(v.counts.transform_stale, 0);
    c.v.time_ms = 2000; /* past the fade */
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, far_n));
    assert_int_equal(v.counts.lod_culled, 1);
    rv_world_destroy(w);
}

static rv_cull_reason reason_of(const rv_frame_view *v, rv_node n)
{
    for (uint32_t i = 0; i < v->cull_count; i++)
        if (rv_node_equal(v->culls[i].node, n))
            return v->culls[i].reason;
    return (rv_cull_reason)0;
}

/* A node with children is drawn only where its own geometry meets the frustum, as leaves
 * are: the subtree's sphere takes the walk into it, not into drawing the node. With
 * occlusion on (an occluder drawn, so subtrees are tested through the frame's own hook)
 * and off, in the frame and in an extra view; a recorded frame says why. */
static void test_a_parent_is_drawn_only_where_its_own_geometry_is_in_view(void **state)
{
    (void)state;
    for (uint32_t width = 0; width <= 256; width += 256) {
        rv_world_desc d = { 0 };
        d.record_culls = true;
        d.occlusion.width = width;
        rv_world *w = rvt_world(&d);
        if (width) { /* an occluder to the side, so the frame tests subtrees */
            rv_node wall;
            assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
            float wmin[3] = { 20, 0, -40.5f }, wmax[3] = { 30, 10, -40 };
            assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
        }
        enum { N = 64 };
        rv_node parent[N], child[N];
        float pos[N][3];
        uint64_t seed = 11;
        for (int i = 0; i < N; i++) {
            pos[i][0] = rvt_uniform(&seed, -100, 100);
            pos[i][1] = rvt_uniform(&seed, -5, 5);
            pos[i][2] = rvt_uniform(&seed, -100, 100);
            parent[i] = rvt_object(w, RV_NODE_NONE, pos[i][0], pos[i][1], pos[i][2], 0.5f);
            /* the child straight ahead of the eye, 8 to 12 m away: always in view */
            float cx = rvt_uniform(&seed, -1, 1), cz = rvt_uniform(&seed, -12, -8);
            child[i] = rvt_object(w, parent[i], cx - pos[i][0], 1.7f - pos[i][1], cz - pos[i][2], 0.25f);
        }
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        rv_view_list *list;
        rv_frame_view extra;
        assert_int_equal(rv_view_list_create(w, &list), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        uint32_t in_view = 0;
        for (int i = 0; i < N; i++) {
            bool inside = rv_frustum_classify_sphere(&v.frustum, pos[i], 0.5f) != RV_OUTSIDE;
            in_view += inside;
            assert_int_equal(view_draws(&v, parent[i]), inside);
            assert_int_equal(view_draws(&extra, parent[i]), inside);
            assert_true(view_draws(&v, child[i]));
            assert_true(view_draws(&extra, child[i]));
            if (!inside)
                assert_int_equal(reason_of(&v, parent[i]), RV_CULL_FRUSTUM);
        }
        assert_true(in_view > 0 && in_view < N);
        if (width)
            assert_true(v.counts.occlusion_tested > 0);
        rv_view_list_destroy(list);
        rv_world_destroy(w);
    }
}

/* An HLOD region drawn as itself whose own geometry is wholly out of view is not listed
 * (its children stay replaced: nothing of the region shows there), in the frame and in an
 * extra view; in view it is. */
static void test_hlod_region_drawn_as_itself_out_of_view_is_not_listed(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.record_culls = true;
    rv_world *w = rvt_world(&d);
    rv_node region = rvt_node(w, RV_NODE_NONE);
    float behind[3] = { 0, 1.7f, 50 };
    assert_int_equal(rv_node_set_bounds(w, region, behind, 1.0f), RV_OK);
    rv_node child = rvt_object(w, region, 0, 1.7f, -10, 1);
    assert_int_equal(rv_node_set_hlod_region(w, region, 0.0f), RV_OK);
    assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    for (int in_view = 0; in_view < 2; in_view++) {
        if (in_view) {
            float front[3] = { 0, 1.7f, -20 };
            assert_int_equal(rv_node_set_bounds(w, region, front, 1.0f), RV_OK);
        }
        rv_frame_view v, extra;
        c.v.time_ms += 16;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(rv_cull_view(w, &c.v, list, &extra), RV_OK);
        assert_int_equal(v.counts.hlod_drawn, 1);
        assert_int_equal(view_draws(&v, region), in_view);
        assert_int_equal(view_draws(&extra, region), in_view);
        assert_false(view_draws(&v, child));
        assert_false(view_draws(&extra, child));
        assert_int_equal(reason_of(&v, child), RV_CULL_HLOD_REPLACED);
        assert_int_equal(reason_of(&v, region), in_view ? (rv_cull_reason)0 : RV_CULL_FRUSTUM);
    }
    rv_view_list_destroy(list);
    rv_world_destroy(w);
}

static void test_cull_records_say_why_each_subtree_was_not_drawn(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.occlusion.width = 256;
    d.record_culls = true;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    rv_node wall = wall_ahead(w);
    rv_node behind = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    rv_node grp;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &grp), RV_OK);
    rvt_object(w, grp, -1, 1.5f, -30, 0.5f);
    rvt_object(w, grp, 1, 1.5f, -30, 0.5f);
    rv_node back = rvt_object(w, RV_NODE_NONE, 0, 1.5f, 30, 0.5f);
    rv_lod_ladder ladder;
    float t[1] = { 0.1f };
    assert_int_equal(rv_lod_ladder_make(t, 1, &ladder), RV_OK);
    rv_node tiny = rvt_object(w, RV_NODE_NONE, 100, 1.5f, -200, 0.1f);
    assert_int_equal(rv_node_set_lod_ladder(w, tiny, &ladder), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_int_equal(reason_of(&v, behind), RV_CULL_OCCLUSION);
    assert_int_equal(reason_of(&v, grp), RV_CULL_OCCLUSION);
    assert_int_equal(reason_of(&v, back), RV_CULL_FRUSTUM);
    assert_int_equal(reason_of(&v, tiny), RV_CULL_LOD_NOTHING);
    assert_int_equal(reason_of(&v, wall), 0); /* no geometry: neither drawn nor culled */
    /* Every drawn node has no record, every record names a node not drawn. */
    for (uint32_t i = 0; i < v.cull_count; i++)
        assert_false(view_draws(&v, v.culls[i].node));
    rv_world_destroy(w);
}

/* A wall-sized test box beside the view: its sphere reaches into the frustum, the box does
 * not, so the frustum culls it by its box (a node with the same sphere and no box is
 * drawn); moved into the view, it is drawn. */
/* A camera a million units from the origin (an open world without origin rebasing) sees an
 * object 40 units ahead in every direction. Projection times view multiplied in float
 * cancelled the far plane away there (row w minus row z) and culled it; the frame now
 * multiplies in double. */
/* A node attached elsewhere after the frame's update (between rv_frame_begin and the
 * cull, or before an extra view) keeps its world placement until the next update: the
 * walk, following the new links, still reaches it where it stands. */
static bool lists_node(const rv_frame_view *out, rv_node n)
{
    for (uint32_t i = 0; i < out->opaque_count; i++)
        if (rv_node_equal(out->opaque[i].node, n))
            return true;
    return false;
}

static void test_a_node_attached_after_the_update_is_culled_where_it_stands(void **state)
{
    (void)state;
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_node far_root, near_root, crate[2];
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &far_root), RV_OK);
    assert_int_equal(rv_node_set_position(w, far_root, (float[3]){ 0, 0, 500 }), RV_OK); /* behind the eye */
    assert_int_equal(rv_node_set_bounds(w, far_root, (float[3]){ 0, 0, 0 }, 1), RV_OK);
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &near_root), RV_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rv_node_create(w, near_root, &crate[k]), RV_OK);
        assert_int_equal(rv_node_set_position(w, crate[k], (float[3]){ 3.0f * (float)k, 0, -10 }), RV_OK);
        assert_int_equal(rv_node_set_bounds(w, crate[k], (float[3]){ 0, 0, 0 }, 1), RV_OK);
    }
    const float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float proj[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };
    rv_view v = { .view = view, .projection = proj, .viewport_width = 800, .viewport_height = 800 };
    rv_frame_view out, extra;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    assert_true(lists_node(&out, crate[0]) && lists_node(&out, crate[1]));

    /* An extra view after an attach, before any update. */
    rv_view_list *list;
    assert_int_equal(rv_view_list_create(w, &list), RV_OK);
    assert_int_equal(rv_node_attach(w, far_root, crate[0]), RV_OK);
    assert_int_equal(rv_cull_view(w, &v, list, &extra), RV_OK);
    assert_true(lists_node(&extra, crate[0])); /* at z = -10 until the next update */
    rv_view_list_destroy(list);

    /* An attach between rv_frame_begin (whose update placed crate[0] under far_root, at
     * z = 490) and the cull. */
    v.time_ms = 16;
    assert_int_equal(rv_frame_begin(w, &v), RV_OK);
    assert_int_equal(rv_node_attach(w, far_root, crate[1]), RV_OK);
    assert_int_equal(rv_frame_cull(w), RV_OK);
    assert_int_equal(rv_frame_end(w, &out), RV_OK);
    assert_false(lists_node(&out, crate[0]));
    assert_true(lists_node(&out, crate[1])); /* at z = -10 until the next update */

    v.time_ms = 32; /* the next update places it under its parent, behind the eye */
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    assert_false(lists_node(&out, crate[1]));
    rv_world_destroy(w);
}

static void test_camera_far_from_the_origin_keeps_the_far_plane(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(0);
    int drawn = 0;
    for (int i = 0; i < 32; i++) {
        double a = 6.283185307179586 * i / 32.0;
        float eye[3] = { 945709.2f + (float)(i * 1013), 6.1f, -946238.8f - (float)(i * 977) };
        float target[3] = { eye[0] + 40.0f * (float)sin(a), 4.6f, eye[2] - 40.0f * (float)cos(a) };
        rv_node n = rvt_object(w, RV_NODE_NONE, target[0], target[1], target[2], 1.0f);
        rvt_camera c;
        rvt_camera_make(&c, eye, target, 1.0f, 0.0);
        float near = 0.01f, far = 10000.0f; /* a deep range: the far plane's row is nearly row w */
        c.projection[10] = (far + near) / (near - far);
        c.projection[14] = 2 * far * near / (near - far);
        rv_frame_view fv;
        assert_int_equal(rv_frame(w, &c.v, &fv), RV_OK);
        drawn += view_draws(&fv, n);
        assert_int_equal(rv_node_destroy_subtree(w, n), RV_OK);
    }
    assert_int_equal(drawn, 32);
    rv_world_destroy(w);
}

/* An object just past the outline of a small occluder a few centimetres from an eye far
 * from the origin. The view + projection form's
 * product is formed in double; rounded to float it moves the eye by millimetres at 1e5,
 * which turns the outline of an occluder 7 cm away by degrees and hid this object. The
 * buffer must see the double product. A box wholly inside the outline is still hidden, so
 * the occlusion is live. */
static void test_far_eye_occlusion_sees_the_view_and_projection_product(void **state)
{
    (void)state;
    static const double eyes_x[] = { 0.0, 57450.5, 100000.5 };
    for (size_t e = 0; e < sizeof eyes_x / sizeof eyes_x[0]; e++) {
        float x = (float)eyes_x[e];
        rv_world_desc d = { 0 };
        d.occlusion.width = 256;
        d.record_culls = true;
        rv_world *w = NULL;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        /* The occluder's near face, half-width 0.01 at depth 0.07, outlines x = +-9 at depth 63. */
        float omn[3] = { -0.01f, -0.01f, -0.09f }, omx[3] = { 0.01f, 0.01f, -0.07f };
        float om[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, x, 0, 0, 1 };
        /* Boxes at depth 63..64: two pokes 0.3 m past the outline, left and right, and one
         * inside it. lo/hi are x extents relative to the eye. */
        static const float lo[3] = { -9.3f, 8.0f, -8.0f }, hi[3] = { -8.0f, 9.3f, 8.0f };
        rv_node n[3];
        for (int k = 0; k < 3; k++) {
            float cx = (lo[k] + hi[k]) / 2, hx = (hi[k] - lo[k]) / 2;
            n[k] = rvt_object(w, RV_NODE_NONE, x + cx, 0, -63.5f, sqrtf(hx * hx + 1.25f));
            float bmn[3] = { -hx, -1, -0.5f }, bmx[3] = { hx, 1, 0.5f };
            assert_int_equal(rv_node_set_test_box(w, n[k], bmn, bmx), RV_OK);
        }
        float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -x, 0, 0, 1 };
        float near = 0.01f, far = 1000.0f, t = 1.0f / tanf(0.6f), aspect = 16.0f / 9.0f;
        float projection[16] = { t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (far + near) / (near - far), -1,
                                 0, 0, 2 * far * near / (near - far), 0 };
        rv_view v = { 0 };
        v.view = view;
        v.projection = projection;
        v.viewport_width = 1920;
        v.viewport_height = 1080;
        v.time_ms = 1;
        assert_int_equal(rv_frame_begin(w, &v), RV_OK);
        assert_int_equal(rv_frame_add_occluder(w, omn, omx, om), RV_OK);
        assert_int_equal(rv_frame_cull(w), RV_OK);
        rv_frame_view fv;
        assert_int_equal(rv_frame_end(w, &fv), RV_OK);
        assert_true(view_draws(&fv, n[0]));
        assert_true(view_draws(&fv, n[1]));
        assert_false(view_draws(&fv, n[2]));
        assert_int_equal(reason_of(&fv, n[2]), RV_CULL_OCCLUSION);
        rv_world_destroy(w);
    }
}

static void test_test_box_outside_the_frustum_culls_a_straddling_sphere(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.record_culls = true;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    /* A thin wall along the view direction, just left of the left frustum plane. */
    float mn[3] = { -14.0f, 0, -12 }, mx[3] = { -13.9f, 3, 0 };
    float c[3] = { (mn[0] + mx[0]) / 2, (mn[1] + mx[1]) / 2, (mn[2] + mx[2]) / 2 };
    float half[3] = { (mx[0] - mn[0]) / 2, (mx[1] - mn[1]) / 2, (mx[2] - mn[2]) / 2 };
    float r = sqrtf(half[0] * half[0] + half[1] * half[1] + half[2] * half[2]);
    float lmn[3] = { -half[0], -half[1], -half[2] }, lmx[3] = { half[0], half[1], half[2] };
    rv_node wall = rvt_object(w, RV_NODE_NONE, c[0], c[1], c[2], r);
    assert_int_equal(rv_node_set_test_box(w, wall, lmn, lmx), RV_OK);
    rv_node plain = rvt_object(w, RV_NODE_NONE, c[0], c[1], c[2], r); /* same sphere, no box */
    rvt_camera cam;
    rvt_camera_make(&cam, eye0, ahead, 1.0f, 0); /* 1 rad vertical, 16:9: left plane at x ~ -0.94 z */
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_false(view_draws(&v, wall));
    assert_int_equal(reason_of(&v, wall), RV_CULL_FRUSTUM);
    assert_true(view_draws(&v, plain)); /* its sphere alone meets the frustum */
    /* Moved in front of the eye, the box is in view: drawn. */
    float p[3] = { -3, c[1], c[2] };
    assert_int_equal(rv_node_set_position(w, wall, p), RV_OK);
    assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
    assert_true(view_draws(&v, wall));
    rv_world_destroy(w);
}

/* A rotated test box is tested against the frustum as the oriented box it is: a thin wall
 * turned to run along the left frustum plane, 1 unit outside it, is culled although its
 * world box (which reaches back across the plane) and its sphere straddle; 1 unit inside,
 * it is drawn. */
static void test_rotated_test_box_outside_the_frustum_is_culled_as_an_oriented_box(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.record_culls = true;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    /* 1 rad vertical at 16:9: the left plane holds the eye and the direction (-t, 0, -1),
     * t = 16/9 tan(0.5). */
    double t = 16.0 / 9.0 * tan(0.5), len = sqrt(t * t + 1);
    double along[3] = { -t / len, 0, -1 / len }, out[3] = { -1 / len, 0, t / len }; /* out: away from the view */
    float lmn[3] = { -0.05f, -1.5f, -6 }, lmx[3] = { 0.05f, 1.5f, 6 };
    float r = sqrtf(0.05f * 0.05f + 1.5f * 1.5f + 36.0f);
    float axis[3] = { 0, 1, 0 };
    float angle = (float)atan2(along[0], along[2]); /* local z onto along, local x onto out */
    for (int side = 1; side >= -1; side -= 2) {
        float c[3];
        for (int k = 0; k < 3; k++)
            c[k] = eye0[k] + (float)(10 * along[k] + side * 1.0 * out[k]);
        rv_node wall = rvt_object(w, RV_NODE_NONE, c[0], c[1], c[2], r);
        assert_int_equal(rv_node_set_rotation_axis_angle(w, wall, axis, angle), RV_OK);
        assert_int_equal(rv_node_set_test_box(w, wall, lmn, lmx), RV_OK);
        rvt_camera cam;
        rvt_camera_make(&cam, eye0, ahead, 1.0f, 0);
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &cam.v, &v), RV_OK);
        float m[16], wmn[3] = { INFINITY, INFINITY, INFINITY }, wmx[3] = { -INFINITY, -INFINITY, -INFINITY };
        assert_int_equal(rv_node_world_matrix(w, wall, m), RV_OK);
        for (int k = 0; k < 8; k++)
            for (int a = 0; a < 3; a++) {
                float p = m[12 + a];
                for (int b = 0; b < 3; b++)
                    p += m[b * 4 + a] * ((k >> b) & 1 ? lmx[b] : lmn[b]);
                wmn[a] = fminf(wmn[a], p);
                wmx[a] = fmaxf(wmx[a], p);
            }
        rv_frustum f = rvt_frustum(eye0, ahead, 1.0f, 1000.0f);
        assert_int_equal(rv_frustum_classify_box(&f, wmn, wmx), RV_INTERSECTING); /* the world box straddles */
        if (side > 0) {
            assert_false(view_draws(&v, wall));
            assert_int_equal(reason_of(&v, wall), RV_CULL_FRUSTUM);
        } else {
            assert_true(view_draws(&v, wall));
        }
        assert_int_equal(rv_node_destroy_subtree(w, wall), RV_OK);
    }
    rv_world_destroy(w);
}

static uint64_t fake_clock_ns(void *user)
{
    uint64_t *now = user;
    return *now += 1000; /* every read advances 1 us */
}

static uint64_t backward_clock_ns(void *user)
{
    uint64_t *now = user;
    return *now -= 1000; /* a host error: every read goes back 1 us */
}

/* Per-stage times: -1 without a clock; with one, every stage is >= 0, the walk's stages are
 * charged, and together they never exceed the time the clock saw pass during the frame.
 * A clock that steps back charges nothing (0, never an unsigned wrap). */
static void test_stage_times_follow_the_host_clock(void **state)
{
    (void)state;
    uint64_t now = 0;
    for (int with_clock = 0; with_clock < 3; with_clock++) {
        rv_world_desc d = { 0 };
        d.occlusion.width = 128;
        if (with_clock) {
            d.clock_ns = with_clock == 1 ? fake_clock_ns : backward_clock_ns;
            d.clock_user = &now;
            now = with_clock == 1 ? 0 : 1000000000ull;
        }
        rv_world *w = NULL;
        assert_int_equal(rv_world_create(&d, &w), RV_OK);
        for (int g = 0; g < 40; g++) {
            rv_node grp;
            assert_int_equal(rv_node_create(w, RV_NODE_NONE, &grp), RV_OK);
            for (int k = 0; k < 4; k++)
                rvt_object(w, grp, (float)(g % 8) * 3 - 12 + (float)k * 0.5f, 1, -5 - (float)(g / 8) * 6, 0.4f);
        }
        rv_node wall;
        assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
        float wmin[3] = { -4, 0, -12.5f }, wmax[3] = { 4, 6, -12 };
        assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
        rv_frame_view v;
        uint64_t before = now;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        double span_us = (double)(now - before) / 1000.0, sum = 0;
        assert_true(v.opaque_count > 0);
        assert_true(v.counts.occlusion_culled > 0);
        for (int k = 0; k < RV_STAGE_COUNT; k++) {
            if (!with_clock) {
                assert_true(v.stage_us[k] == -1.0);
                continue;
            }
            if (with_clock == 2) {
                assert_true(v.stage_us[k] == 0.0);
                continue;
            }
            assert_true(v.stage_us[k] >= 0.0);
            sum += v.stage_us[k];
        }
        if (with_clock == 1) {
            assert_true(v.stage_us[RV_STAGE_OCCLUSION] > 0);
            assert_true(v.stage_us[RV_STAGE_PUBLISH] > 0);
            assert_true(v.stage_us[RV_STAGE_TRANSFORMS] > 0);
            assert_true(sum <= span_us + 1e-6);
        }
        rv_world_destroy(w);
    }
}

/* The publication sort (radix on view depth, permutation applied in place) against a
 * plain stable insertion sort, both directions, with many equal depths (-0 and +0 among
 * them), negative depths and list lengths around the radix passes' skips. */
static void test_publication_sort_is_a_stable_sort_both_ways(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_walk_scratch scratch;
    memset(&scratch, 0, sizeof scratch);
    enum { MAX = 700 };
    static rv_draw_item items[MAX], expect[MAX];
    uint64_t seed = 99;
    const uint32_t sizes[] = { 0, 1, 2, 3, 17, 256, 257, MAX };
    for (uint32_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int far_to_near = 0; far_to_near < 2; far_to_near++) {
            uint32_t n = sizes[s];
            for (uint32_t i = 0; i < n; i++) {
                memset(&items[i], 0, sizeof items[i]);
                items[i].node.id = i + 1; /* the original position */
                /* Few distinct depths (so ties abound), both signs, some exact zeros of
                 * either sign (equal depths: a centre in the eye's plane gives -0 or +0 as
                 * its coordinates fall). */
                items[i].view_depth = (float)((int)(rvt_next(&seed) % 41) - 20) * 0.75f;
                if (items[i].view_depth == 0.0f && (rvt_next(&seed) & 1))
                    items[i].view_depth = -0.0f;
                items[i].world_matrix[5] = (float)i;
                expect[i] = items[i];
            }
            for (uint32_t i = 1; i < n; i++) {
                rv_draw_item x = expect[i];
                uint32_t j = i;
                while (j > 0 && (far_to_near ? expect[j - 1].view_depth < x.view_depth
                                             : expect[j - 1].view_depth > x.view_depth)) {
                    expect[j] = expect[j - 1];
                    j--;
                }
                expect[j] = x;
            }
            assert_int_equal(rvi_frame_reserve_sort(&heap, &scratch, n), RV_OK);
            rvi_frame_sort(items, n, far_to_near != 0, &scratch);
            for (uint32_t i = 0; i < n; i++) {
                assert_int_equal(items[i].node.id, expect[i].node.id);
                assert_true(items[i].world_matrix[5] == expect[i].world_matrix[5]);
            }
        }
    }
    rvi_walk_scratch_free(&heap, &scratch);
    assert_int_equal(heap.stats.bytes_live, 0);
}

/* fov_y 0 reads the field of view from a perspective projection in both view forms: an HLOD
 * region whose screen-space error exceeds the limit only at the camera's narrow 20 degrees
 * (not at the 60 degree fallback) refines either way. */
static void test_view_projection_form_reads_fov_from_the_matrix(void **state)
{
    (void)state;
    for (int vp_form = 0; vp_form < 2; vp_form++) {
        rv_world *w = rvt_world_occlusion(0);
        rv_node region = rvt_object(w, RV_NODE_NONE, 0, 1.7f, -100, 5);
        rv_node child = rvt_object(w, region, 0, 0, 0, 4);
        assert_int_equal(rv_node_set_hlod_region(w, region, 1.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_region(w, child, 0.0f), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, region, true), RV_OK);
        assert_int_equal(rv_node_set_hlod_resident(w, child, true), RV_OK);
        /* SSE = 1 m * 720 px / (2 * 95 m * tan(fov / 2)): 21.5 px at 20 degrees, 6.6 px at 60. */
        rvt_camera c;
        rvt_camera_make(&c, eye0, ahead, 20.0f * 3.14159265f / 180.0f, 0);
        float vp[16];
        for (int col = 0; col < 4; col++)
            for (int r = 0; r < 4; r++) {
                float acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += c.projection[k * 4 + r] * c.view[col * 4 + k];
                vp[col * 4 + r] = acc;
            }
        if (vp_form) {
            c.v.view = c.v.projection = NULL;
            c.v.view_projection = vp;
            c.v.eye = eye0;
        }
        rv_frame_view v;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_int_equal(v.counts.hlod_refined, 1);
        rv_world_destroy(w);
    }
}

/* An aborted frame must not make every part look culled: a frame abandoned right after
 * begin leaves the gate as a complete frame would, so the next frame asks no resync for
 * parts that never left the view. */
static void test_abort_does_not_make_parts_reenter(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.partition.request_reprocess = on_reprocess;
    d.partition.is_update_in_progress = is_busy;
    host_busy = false;
    reprocess_calls = 0;
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&d, &w), RV_OK);
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 0, -20, 0.1f);
    rv_node left = rvt_object(w, building, -3, 0, 0, 1);
    rv_node right = rvt_object(w, building, 3, 0, 0, 1);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves_l[1] = { 100 }, leaves_r[1] = { 200 };
    assert_int_equal(rv_partition_set_part(w, left, leaves_l, 1, false), RV_OK);
    assert_int_equal(rv_partition_set_part(w, right, leaves_r, 1, false), RV_OK);
    rvt_camera c;
    float look[3] = { 0, 1.7f, -20 };
    rvt_camera_make(&c, eye0, look, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK); /* first sight: not a re-entry */
    assert_int_equal(v.resync_request_count, 0);
    for (int stage = 0; stage < 2; stage++) {
        c.v.time_ms += 16;
        assert_int_equal(rv_frame_begin(w, &c.v), RV_OK);
        if (stage == 1)
            assert_int_equal(rv_frame_cull(w), RV_OK);
        assert_int_equal(rv_frame_abort(w), RV_OK);
        c.v.time_ms += 16;
        assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
        assert_true(view_draws(&v, left));
        assert_true(view_draws(&v, right));
        assert_int_equal(v.resync_request_count, 0);
        assert_int_equal(reprocess_calls, 0);
    }
    rv_world_destroy(w);
}

/* A view is valid only in its own world, even when it lists nothing (no pointer to tell). */
static void test_view_of_another_world_is_never_valid(void **state)
{
    (void)state;
    rv_world *a = rvt_world_occlusion(0), *b = rvt_world_occlusion(0);
    rvt_object(a, RV_NODE_NONE, 0, 1.7f, 50, 0.5f); /* behind the camera: nothing drawn */
    rvt_object(b, RV_NODE_NONE, 0, 1.7f, 50, 0.5f);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.0f, 0);
    rv_frame_view va, vb;
    assert_int_equal(rv_frame(a, &c.v, &va), RV_OK);
    assert_int_equal(rv_frame(b, &c.v, &vb), RV_OK);
    assert_int_equal(va.opaque_count, 0);
    assert_true(rv_frame_view_is_valid(a, &va));
    assert_true(rv_frame_view_is_valid(b, &vb));
    assert_false(rv_frame_view_is_valid(b, &va));
    assert_false(rv_frame_view_is_valid(a, &vb));
    rv_world_destroy(a);
    rv_world_destroy(b);
}

/* ---- allocation failure ------------------------------------------------------------------ */

typedef struct sweep_world {
    rv_world *world;
    rv_node nodes[120];
    rv_frame_view last;
} sweep_world;

static sweep_world *sweep_world_new(const rv_allocator *allocator, bool occlusion)
{
    sweep_world *s = calloc(1, sizeof *s);
    assert_non_null(s);
    rv_world_desc d = { 0 };
    d.allocator = *allocator;
    d.occlusion.width = occlusion ? 128 : 0;
    assert_int_equal(rv_world_create(&d, &s->world), RV_OK);
    uint64_t seed = 5;
    for (int i = 0; i < 120; i++)
        s->nodes[i] = rvt_object(s->world, i % 3 ? s->nodes[i - i % 3] : RV_NODE_NONE, rvt_uniform(&seed, -30, 30), 1,
                                rvt_uniform(&seed, -60, -5), 0.6f);
    return s;
}

static void sweep_world_free(void *o)
{
    sweep_world *s = o;
    rv_world_destroy(s->world);
    free(s);
}

static void *box_setup(const rv_allocator *allocator) { return sweep_world_new(allocator, false); }
static rv_result box_call(void *o)
{
    sweep_world *s = o;
    const float mn[3] = { -1, -1, -1 }, mx[3] = { 1, 1, 1 };
    return rv_node_set_test_box(s->world, s->nodes[119], mn, mx); /* slot array past 64 entries */
}
static rv_result occluder_box_call(void *o)
{
    sweep_world *s = o;
    const float mn[3] = { -1, -1, -1 }, mx[3] = { 1, 1, 1 };
    return rv_node_set_occluder_box(s->world, s->nodes[100], mn, mx);
}
static uint64_t box_fingerprint(void *o)
{
    sweep_world *s = o;
    return rv_world_scene_stats(s->world).nodes;
}

static void *frame_setup(const rv_allocator *allocator)
{
    sweep_world *s = sweep_world_new(allocator, true);
    const float mn[3] = { -4, 0, -20.5f }, mx[3] = { 4, 5, -20 };
    assert_int_equal(rv_node_set_occluder_box(s->world, s->nodes[7], mn, mx), RV_OK);
    assert_int_equal(rv_node_set_test_box(s->world, s->nodes[9], mn, mx), RV_OK);
    rv_grid_desc gd = { 0 };
    gd.source = 3;
    gd.origin[0] = gd.origin[1] = -64;
    gd.cell_size = 8;
    gd.count_x = gd.count_z = 16;
    assert_int_equal(rv_world_add_grid(s->world, &gd, NULL), RV_OK);
    /* A partitioned model (nodes 1 and 2 are parts of node 0) and a journal. */
    assert_int_equal(rv_partition_make_group(s->world, s->nodes[0]), RV_OK);
    uint64_t leaves[2] = { 11, 12 };
    assert_int_equal(rv_partition_set_part(s->world, s->nodes[1], &leaves[0], 1, false), RV_OK);
    assert_int_equal(rv_partition_set_part(s->world, s->nodes[2], &leaves[1], 1, true), RV_OK);
    rv_journal *j;
    assert_int_equal(rv_world_journal(s->world, &j), RV_OK);
    /* A first frame looking away: little drawn, little requested. */
    rvt_camera c;
    const float behind[3] = { 0, 1.7f, 10 };
    rvt_camera_make(&c, eye0, behind, 1.0f, 0);
    assert_int_equal(rv_frame(s->world, &c.v, &s->last), RV_OK);
    return s;
}
static rv_result frame_call(void *o)
{
    sweep_world *s = o;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.6f, 16); /* now everything: every list grows */
    rv_journal *j;
    assert_int_equal(rv_world_journal(s->world, &j), RV_OK); /* made in setup: no allocation */
    rv_projection p = unit_projection();
    p.transform.position[2] = -10;
    rv_result r = rv_journal_register(j, 0, 77, 1, &p, NULL);
    if (r != RV_OK)
        return r;
    rv_frame_view v;
    return rv_frame(s->world, &c.v, &v);
}
/* A failed frame leaves the published view valid and saying the same. */
static uint64_t frame_fingerprint(void *o)
{
    sweep_world *s = o;
    return rv_frame_view_digest(&s->last) ^ (rv_frame_view_is_valid(s->world, &s->last) ? 0x9e37ull : 0);
}

/* rv_frame_begin out of memory: a delta waits in the journal and a node has moved; the view
 * is taller than before, so the occlusion buffer grows as the begin opens it. */
static void *begin_setup(const rv_allocator *allocator)
{
    sweep_world *s = frame_setup(allocator);
    rv_journal *j;
    assert_int_equal(rv_world_journal(s->world, &j), RV_OK);
    rv_projection p = unit_projection();
    assert_int_equal(rv_journal_register(j, 0, 78, 1, &p, NULL), RV_OK);
    const float moved[3] = { 3, 1, -12 };
    assert_int_equal(rv_node_set_position(s->world, s->nodes[0], moved), RV_OK);
    return s;
}
static rv_result begin_call(void *o)
{
    sweep_world *s = o;
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.6f, 16);
    c.v.viewport_height = c.v.viewport_width; /* square: more buffer rows than 16:9 */
    return rv_frame_begin(s->world, &c.v);
}
/* The journal still holds its delta, the moved node its old matrix, and the published view
 * is valid and says the same. */
static uint64_t begin_fingerprint(void *o)
{
    sweep_world *s = o;
    rv_journal *j;
    assert_int_equal(rv_world_journal(s->world, &j), RV_OK);
    float m[16];
    assert_int_equal(rv_node_world_matrix(s->world, s->nodes[0], m), RV_OK);
    uint64_t h = frame_fingerprint(o) ^ ((uint64_t)rv_journal_get_stats(j).pending << 32);
    for (int i = 0; i < 16; i++) {
        uint32_t bits;
        memcpy(&bits, &m[i], sizeof bits);
        h = (h ^ bits) * 0x100000001b3ull;
    }
    return h;
}

static void test_allocation_failure_in_boxes_and_frames(void **state)
{
    (void)state;
    rvt_sweep box = { "rv_node_set_test_box", box_setup, box_call, box_fingerprint, sweep_world_free };
    assert_true(rvt_run_sweep(&box) >= 2); /* frame state, slot array, boxes */
    rvt_sweep occluder = { "rv_node_set_occluder_box", box_setup, occluder_box_call, box_fingerprint,
                           sweep_world_free };
    assert_true(rvt_run_sweep(&occluder) >= 2);
    rvt_sweep frame = { "rv_frame", frame_setup, frame_call, frame_fingerprint, sweep_world_free };
    assert_true(rvt_run_sweep(&frame) >= 3);
    rvt_sweep begin = { "rv_frame_begin", begin_setup, begin_call, begin_fingerprint, sweep_world_free };
    assert_true(rvt_run_sweep(&begin) >= 2); /* the buffer's rows, the journal's drain */
}

/* ---- property test: random scenes against a slow ray-cast reference ------------------------ */

/* Camera kinds: every clip convention the library accepts, perspective and orthographic. */
typedef enum cam_kind {
    CAM_GL = 0,          /* OpenGL -1..1 */
    CAM_ZERO_ONE,        /* Direct3D / Vulkan 0..1 */
    CAM_REVERSED,        /* reversed 0..1 */
    CAM_REVERSED_INF,    /* reversed 0..1, infinite far */
    CAM_REVERSED_GL,     /* reversed -1..1 */
    CAM_GL_INF,          /* OpenGL, infinite far */
    CAM_ORTHO_GL,
    CAM_ORTHO_ZERO_ONE,
    CAM_ORTHO_REVERSED,
    CAM_KIND_COUNT
} cam_kind;

typedef struct prop_camera {
    float view[16], projection[16], view_projection[16];
    float eye[3], forward[3];
    rv_clip clip;
    bool ortho;
    uint32_t width, height;
} prop_camera;

static void mat_mul(const float a[16], const float b[16], float out[16])
{
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += a[k * 4 + r] * b[c * 4 + k];
            out[c * 4 + r] = acc;
        }
}

static void prop_camera_make(prop_camera *c, cam_kind kind, uint64_t *seed)
{
    memset(c, 0, sizeof *c);
    /* An eye 30-60 m from the scene's middle, looking at it with some jitter. */
    float dir[3] = { rvt_uniform(seed, -1, 1), rvt_uniform(seed, -0.3f, 0.8f), rvt_uniform(seed, -1, 1) };
    float dl = sqrtf(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]) + 1e-3f;
    float dist = rvt_uniform(seed, 30, 60);
    for (int k = 0; k < 3; k++)
        c->eye[k] = dir[k] / dl * dist;
    float target[3] = { rvt_uniform(seed, -8, 8), rvt_uniform(seed, -4, 4), rvt_uniform(seed, -8, 8) };
    float f[3] = { target[0] - c->eye[0], target[1] - c->eye[1], target[2] - c->eye[2] };
    float fl = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= fl;
    memcpy(c->forward, f, sizeof c->forward);
    float up[3] = { 0, 1, 0 };
    float s[3] = { f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0] };
    float sl = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    for (int k = 0; k < 3; k++)
        s[k] /= sl;
    float u[3] = { s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0] };
    const float *e = c->eye;
    float v[16] = { s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
                    -(s[0] * e[0] + s[1] * e[1] + s[2] * e[2]), -(u[0] * e[0] + u[1] * e[1] + u[2] * e[2]),
                    f[0] * e[0] + f[1] * e[1] + f[2] * e[2], 1 };
    memcpy(c->view, v, sizeof v);
    static const uint32_t sizes[3][2] = { { 640, 360 }, { 500, 500 }, { 800, 600 } };
    int sz = (int)(rvt_next(seed) % 3);
    c->width = sizes[sz][0];
    c->height = sizes[sz][1];
    float aspect = (float)c->width / (float)c->height;
    float n = rvt_uniform(seed, 0.1f, 1.0f), fa = 300.0f;
    float *p = c->projection;
    c->ortho = kind >= CAM_ORTHO_GL;
    if (!c->ortho) {
        float t = 1.0f / tanf(rvt_uniform(seed, 0.5f, 1.4f) / 2);
        p[0] = t / aspect;
        p[5] = t;
        p[11] = -1;
        switch (kind) {
        case CAM_GL: p[10] = (fa + n) / (n - fa); p[14] = 2 * fa * n / (n - fa); break;
        case CAM_ZERO_ONE: p[10] = fa / (n - fa); p[14] = fa * n / (n - fa); break;
        case CAM_REVERSED: p[10] = n / (fa - n); p[14] = fa * n / (fa - n); break;
        case CAM_REVERSED_INF: p[10] = 0; p[14] = n; break;
        case CAM_REVERSED_GL: p[10] = -(fa + n) / (n - fa); p[14] = -2 * fa * n / (n - fa); break;
        default: p[10] = -1; p[14] = -2 * n; break; /* CAM_GL_INF */
        }
    } else {
        float hh = rvt_uniform(seed, 20, 35), hw = hh * aspect;
        p[0] = 1 / hw;
        p[5] = 1 / hh;
        p[15] = 1;
        switch (kind) {
        case CAM_ORTHO_GL: p[10] = -2 / (fa - n); p[14] = -(fa + n) / (fa - n); break;
        case CAM_ORTHO_ZERO_ONE: p[10] = -1 / (fa - n); p[14] = -n / (fa - n); break;
        default: p[10] = 1 / (fa - n); p[14] = fa / (fa - n); break; /* CAM_ORTHO_REVERSED */
        }
    }
    c->clip.depth_zero_to_one = kind == CAM_ZERO_ONE || kind == CAM_REVERSED || kind == CAM_REVERSED_INF ||
                                kind == CAM_ORTHO_ZERO_ONE || kind == CAM_ORTHO_REVERSED;
    c->clip.reversed_z = kind == CAM_REVERSED || kind == CAM_REVERSED_INF || kind == CAM_REVERSED_GL ||
                         kind == CAM_ORTHO_REVERSED;
    mat_mul(c->projection, c->view, c->view_projection);
}

/* True when a world point lies inside the view volume (clip-space test in double, a hair
 * inside every bound so rounding cannot put a point on the wrong side). */
static bool in_view(const prop_camera *c, const double p[3])
{
    const float *m = c->view_projection;
    double q[4];
    for (int r = 0; r < 4; r++)
        q[r] = (double)m[r] * p[0] + (double)m[4 + r] * p[1] + (double)m[8 + r] * p[2] + (double)m[12 + r];
    double w = q[3];
    if (!(w > 0))
        return false;
    double in = w * (1.0 - 1e-5);
    if (fabs(q[0]) > in || fabs(q[1]) > in)
        return false;
    double lo = c->clip.depth_zero_to_one ? 0.0 : -w;
    return q[2] >= lo + w * 1e-5 && q[2] <= in;
}

/* An occluder for the reference: local box [mn, mx] under an affine matrix (inverted here). */
typedef struct ref_occluder {
    double inv[9];   /* inverse of the linear part, row-major */
    double origin[3];
    double mn[3], mx[3];
} ref_occluder;

static bool ref_occluder_make(const float m[16], const float mn[3], const float mx[3], ref_occluder *o)
{
    double a[9] = { m[0], m[4], m[8], m[1], m[5], m[9], m[2], m[6], m[10] }; /* row-major */
    double det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                 a[2] * (a[3] * a[7] - a[4] * a[6]);
    if (fabs(det) < 1e-9)
        return false;
    double id = 1.0 / det;
    o->inv[0] = (a[4] * a[8] - a[5] * a[7]) * id;
    o->inv[1] = (a[2] * a[7] - a[1] * a[8]) * id;
    o->inv[2] = (a[1] * a[5] - a[2] * a[4]) * id;
    o->inv[3] = (a[5] * a[6] - a[3] * a[8]) * id;
    o->inv[4] = (a[0] * a[8] - a[2] * a[6]) * id;
    o->inv[5] = (a[2] * a[3] - a[0] * a[5]) * id;
    o->inv[6] = (a[3] * a[7] - a[4] * a[6]) * id;
    o->inv[7] = (a[1] * a[6] - a[0] * a[7]) * id;
    o->inv[8] = (a[0] * a[4] - a[1] * a[3]) * id;
    for (int k = 0; k < 3; k++) {
        o->origin[k] = m[12 + k];
        /* Shrunk a hair (a ray grazing an edge counts as passing); a flat axis stays flat. */
        double ext = (double)mx[k] - mn[k], pad = ext * 1e-4;
        o->mn[k] = mn[k] + pad;
        o->mx[k] = mx[k] - pad;
    }
    return true;
}

/* True when the segment from p (t = 0) to q (t = 1) passes through the occluder strictly
 * between its ends. Exact slab test in the occluder's local space. */
static bool ref_blocks(const ref_occluder *o, const double p[3], const double q[3])
{
    double lp[3], lq[3];
    for (int r = 0; r < 3; r++) {
        lp[r] = o->inv[3 * r] * (p[0] - o->origin[0]) + o->inv[3 * r + 1] * (p[1] - o->origin[1]) +
                o->inv[3 * r + 2] * (p[2] - o->origin[2]);
        lq[r] = o->inv[3 * r] * (q[0] - o->origin[0]) + o->inv[3 * r + 1] * (q[1] - o->origin[1]) +
                o->inv[3 * r + 2] * (q[2] - o->origin[2]);
    }
    double t0 = 1e-6, t1 = 1.0 - 1e-6;
    for (int k = 0; k < 3; k++) {
        double d = lq[k] - lp[k];
        if (d == 0) {
            if (lp[k] < o->mn[k] || lp[k] > o->mx[k])
                return false;
            continue;
        }
        double ta = (o->mn[k] - lp[k]) / d, tb = (o->mx[k] - lp[k]) / d;
        if (ta > tb) {
            double t = ta;
            ta = tb;
            tb = t;
        }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
        if (t0 > t1)
            return false;
    }
    return true;
}

enum { PROP_MAX_NODES = 160, PROP_MAX_OCCLUDERS = 64 };

typedef enum prop_role { ROLE_GROUP = 0, ROLE_OCCLUDER, ROLE_SPHERE, ROLE_BOX } prop_role;

typedef struct prop_node {
    rv_node handle;
    int parent;              /* -1: root */
    prop_role role;
    bool also_occluder;      /* a box object that is its own occluder */
    bool group_box;          /* gets a test box enclosing its subtree, every frame */
    float centre[3], radius; /* local geometry sphere (ROLE_SPHERE, and around a ROLE_BOX box) */
    float mn[3], mx[3];      /* local box (ROLE_BOX geometry, ROLE_OCCLUDER occluder) */
} prop_node;

typedef struct prop_scene {
    rv_world *world;
    int count;
    prop_node nodes[PROP_MAX_NODES];
} prop_scene;

static void random_rotation(uint64_t *seed, float q[4])
{
    float l = 0;
    for (int k = 0; k < 4; k++) {
        q[k] = rvt_uniform(seed, -1, 1);
        l += q[k] * q[k];
    }
    if (l < 1e-4f)
        q[3] = l = 1;
    for (int k = 0; k < 4; k++)
        q[k] /= sqrtf(l);
}

static void random_transform(rv_world *w, rv_node n, uint64_t *seed, float reach)
{
    float p[3] = { rvt_uniform(seed, -reach, reach), rvt_uniform(seed, -reach / 2, reach / 2),
                   rvt_uniform(seed, -reach, reach) };
    float q[4], s[3];
    random_rotation(seed, q);
    for (int k = 0; k < 3; k++)
        s[k] = rvt_uniform(seed, 0.6f, 1.6f);
    if (rvt_next(seed) % 8 == 0)
        s[rvt_next(seed) % 3] *= -1; /* a mirror */
    assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
    assert_int_equal(rv_node_set_rotation(w, n, q), RV_OK);
    assert_int_equal(rv_node_set_scale(w, n, s), RV_OK);
}

static void random_box(uint64_t *seed, float lo, float hi, float mn[3], float mx[3], bool may_be_flat)
{
    int flat = may_be_flat && rvt_next(seed) % 5 == 0 ? (int)(rvt_next(seed) % 3) : -1;
    for (int k = 0; k < 3; k++) {
        float c = rvt_uniform(seed, -1, 1), h = k == flat ? 0 : rvt_uniform(seed, lo, hi) / 2;
        mn[k] = c - h;
        mx[k] = c + h;
    }
}

static void prop_scene_build(prop_scene *sc, uint64_t seed, uint32_t occlusion_width)
{
    memset(sc, 0, sizeof *sc);
    sc->world = rvt_world_occlusion(occlusion_width);
    rv_world *w = sc->world;
    sc->count = 60 + (int)(rvt_next(&seed) % 80);
    rv_lod_ladder ladder;
    /* The last threshold is too small for anything here to fall below: no "nothing" level,
     * so every LOD-culled object would be a bug, and crossfades still happen. */
    const float thresholds[3] = { 0.3f, 0.08f, 1e-6f };
    assert_int_equal(rv_lod_ladder_make(thresholds, 3, &ladder), RV_OK);
    for (int i = 0; i < sc->count; i++) {
        prop_node *n = &sc->nodes[i];
        n->parent = i > 0 && rvt_next(&seed) % 10 < 7 ? (int)(rvt_next(&seed) % (uint64_t)i) : -1;
        assert_int_equal(rv_node_create(w, n->parent < 0 ? RV_NODE_NONE : sc->nodes[n->parent].handle, &n->handle),
                         RV_OK);
        random_transform(w, n->handle, &seed, n->parent < 0 ? 25.0f : 8.0f);
        uint64_t r = rvt_next(&seed) % 100;
        n->role = r < 15 ? ROLE_OCCLUDER : r < 27 ? ROLE_GROUP : r < 55 ? ROLE_SPHERE : ROLE_BOX;
        if (n->role == ROLE_OCCLUDER) {
            random_box(&seed, 2, 14, n->mn, n->mx, true);
            assert_int_equal(rv_node_set_occluder_box(w, n->handle, n->mn, n->mx), RV_OK);
        } else if (n->role == ROLE_SPHERE) {
            for (int k = 0; k < 3; k++)
                n->centre[k] = rvt_uniform(&seed, -1, 1);
            n->radius = rvt_uniform(&seed, 0.2f, 2.0f);
        } else if (n->role == ROLE_BOX) {
            random_box(&seed, 0.3f, 4, n->mn, n->mx, false);
            float h2 = 0;
            for (int k = 0; k < 3; k++) {
                n->centre[k] = 0.5f * (n->mn[k] + n->mx[k]);
                h2 += 0.25f * (n->mx[k] - n->mn[k]) * (n->mx[k] - n->mn[k]);
            }
            n->radius = sqrtf(h2) * (1.0f + 1e-5f);
            n->also_occluder = rvt_next(&seed) % 12 == 0;
            if (n->also_occluder)
                assert_int_equal(rv_node_set_occluder_box(w, n->handle, n->mn, n->mx), RV_OK);
        }
        if (n->role == ROLE_SPHERE || n->role == ROLE_BOX) {
            assert_int_equal(rv_node_set_bounds(w, n->handle, n->centre, n->radius), RV_OK);
            if (rvt_next(&seed) % 10 < 3)
                assert_int_equal(rv_node_set_lod_ladder(w, n->handle, &ladder), RV_OK);
        }
    }
    /* Test boxes: a box object's own box on leaves; a box enclosing the subtree on some
     * inner nodes (recomputed every frame, as things under them move). */
    for (int i = 0; i < sc->count; i++) {
        prop_node *n = &sc->nodes[i];
        bool leaf = true;
        for (int j = i + 1; j < sc->count && leaf; j++)
            leaf = sc->nodes[j].parent != i;
        if (leaf && n->role == ROLE_BOX && rvt_next(&seed) % 3 != 0)
            assert_int_equal(rv_node_set_test_box(w, n->handle, n->mn, n->mx), RV_OK);
        else if (!leaf && n->role != ROLE_OCCLUDER)
            n->group_box = rvt_next(&seed) % 2 == 0;
    }
}

static void world_matrix_of(rv_world *w, rv_node n, float m[16])
{
    assert_int_equal(rv_node_world_matrix(w, n, m), RV_OK);
}

static void transform_point(const float m[16], const double p[3], double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = (double)m[r] * p[0] + (double)m[4 + r] * p[1] + (double)m[8 + r] * p[2] + (double)m[12 + r];
}

/* The world sphere of a node's own geometry, exactly (largest column norm as the scale). */
static void geometry_world_sphere(const float m[16], const prop_node *n, double out[4])
{
    double c[3] = { n->centre[0], n->centre[1], n->centre[2] };
    transform_point(m, c, out);
    double s2 = 0;
    for (int a = 0; a < 3; a++) {
        double l2 = (double)m[a * 4] * m[a * 4] + (double)m[a * 4 + 1] * m[a * 4 + 1] + (double)m[a * 4 + 2] * m[a * 4 + 2];
        s2 = l2 > s2 ? l2 : s2;
    }
    out[3] = n->radius * sqrt(s2);
}

/* Eight world points whose hull holds node i's geometry (box corners or the sphere's box). */
static void geometry_corners(const float m[16], const prop_node *n, double corners[8][3])
{
    if (n->role == ROLE_BOX) {
        for (int k = 0; k < 8; k++) {
            double p[3] = { (k & 1) ? n->mx[0] : n->mn[0], (k & 2) ? n->mx[1] : n->mn[1], (k & 4) ? n->mx[2] : n->mn[2] };
            transform_point(m, p, corners[k]);
        }
        return;
    }
    double s[4];
    geometry_world_sphere(m, n, s);
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 3; a++)
            corners[k][a] = s[a] + (((k >> a) & 1) ? s[3] : -s[3]);
}

static bool is_descendant(const prop_scene *sc, int j, int i)
{
    for (int p = j; p >= 0; p = sc->nodes[p].parent)
        if (p == i)
            return true;
    return false;
}

/* Sets node i's test box to enclose its subtree's geometry in its local space. */
static void set_group_box(prop_scene *sc, int i)
{
    float gm[16];
    world_matrix_of(sc->world, sc->nodes[i].handle, gm);
    ref_occluder inv; /* only its inverse is used */
    const float zero[3] = { 0, 0, 0 };
    if (!ref_occluder_make(gm, zero, zero, &inv))
        return;
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    for (int j = i; j < sc->count; j++) {
        const prop_node *n = &sc->nodes[j];
        if ((n->role != ROLE_SPHERE && n->role != ROLE_BOX) || !is_descendant(sc, j, i))
            continue;
        float m[16];
        world_matrix_of(sc->world, n->handle, m);
        double corners[8][3];
        geometry_corners(m, n, corners);
        for (int k = 0; k < 8; k++)
            for (int r = 0; r < 3; r++) {
                double v = inv.inv[3 * r] * (corners[k][0] - inv.origin[0]) +
                           inv.inv[3 * r + 1] * (corners[k][1] - inv.origin[1]) +
                           inv.inv[3 * r + 2] * (corners[k][2] - inv.origin[2]);
                lo[r] = v < lo[r] ? v : lo[r];
                hi[r] = v > hi[r] ? v : hi[r];
            }
    }
    if (!(lo[0] <= hi[0]))
        return; /* no geometry below */
    float mn[3], mx[3];
    for (int r = 0; r < 3; r++) {
        double pad = 1e-4 * (fabs(lo[r]) + fabs(hi[r])) + 1e-4;
        mn[r] = (float)(lo[r] - pad);
        mx[r] = (float)(hi[r] + pad);
    }
    assert_int_equal(rv_node_set_test_box(sc->world, sc->nodes[i].handle, mn, mx), RV_OK);
}

/* Moves some nodes (the same moves in every world given the same seed), updates, and
 * refreshes the subtree test boxes. */
static void prop_scene_step(prop_scene *sc, uint64_t seed)
{
    for (int i = 0; i < sc->count; i++)
        if (rvt_next(&seed) % 10 == 0)
            random_transform(sc->world, sc->nodes[i].handle, &seed, sc->nodes[i].parent < 0 ? 25.0f : 8.0f);
    assert_int_equal(rv_update_world(sc->world), RV_OK);
    for (int i = 0; i < sc->count; i++)
        if (sc->nodes[i].group_box)
            set_group_box(sc, i);
}

typedef struct frame_occluder {
    float mn[3], mx[3], m[16];
    bool identity;
} frame_occluder;

static void random_frame_occluders(uint64_t seed, frame_occluder *out, int *count)
{
    *count = (int)(rvt_next(&seed) % 6);
    for (int k = 0; k < *count; k++) {
        frame_occluder *o = &out[k];
        random_box(&seed, 3, 16, o->mn, o->mx, true);
        o->identity = rvt_next(&seed) % 3 == 0;
        float q[4];
        random_rotation(&seed, q);
        float x = q[0], y = q[1], z = q[2], qw = q[3];
        float r[9] = { 1 - 2 * (y * y + z * z), 2 * (x * y + z * qw), 2 * (x * z - y * qw),
                       2 * (x * y - z * qw), 1 - 2 * (x * x + z * z), 2 * (y * z + x * qw),
                       2 * (x * z + y * qw), 2 * (y * z - x * qw), 1 - 2 * (x * x + y * y) };
        memset(o->m, 0, sizeof o->m);
        for (int c = 0; c < 3; c++) {
            float s = rvt_uniform(&seed, 0.7f, 1.5f);
            for (int rr = 0; rr < 3; rr++)
                o->m[c * 4 + rr] = r[c * 3 + rr] * s;
        }
        o->m[12] = rvt_uniform(&seed, -20, 20);
        o->m[13] = rvt_uniform(&seed, -8, 8);
        o->m[14] = rvt_uniform(&seed, -20, 20);
        o->m[15] = 1;
        if (o->identity) {
            memset(o->m, 0, sizeof o->m);
            o->m[0] = o->m[5] = o->m[10] = o->m[15] = 1;
        }
    }
}

/* Runs one frame through begin / add_occluder / cull / end. */
static void prop_frame(prop_scene *sc, const prop_camera *c, bool vp_form, double time_ms,
                       const frame_occluder *occ, int occ_count, rv_frame_view *out)
{
    rv_view v;
    memset(&v, 0, sizeof v);
    if (vp_form) {
        v.view_projection = c->view_projection;
        v.eye = c->eye;
    } else {
        v.view = c->view;
        v.projection = c->projection;
    }
    v.clip = c->clip;
    v.viewport_width = c->width;
    v.viewport_height = c->height;
    v.time_ms = time_ms;
    assert_int_equal(rv_frame_begin(sc->world, &v), RV_OK);
    for (int k = 0; k < occ_count; k++)
        assert_int_equal(rv_frame_add_occluder(sc->world, occ[k].mn, occ[k].mx, occ[k].identity ? NULL : occ[k].m),
                         RV_OK);
    assert_int_equal(rv_frame_cull(sc->world), RV_OK);
    assert_int_equal(rv_frame_end(sc->world, out), RV_OK);
}

/* Reference: true when some sample of node i's geometry inside the view volume has an
 * unobstructed segment to the eye (to the eye plane, orthographic). Boxes: a 7 x 7 grid on
 * each face; spheres: 258 points (a Fibonacci lattice and the six poles). */
static bool reference_sees(const prop_scene *sc, int i, const prop_camera *c, const ref_occluder *occ,
                           int occ_count)
{
    const prop_node *n = &sc->nodes[i];
    float m[16];
    world_matrix_of(sc->world, n->handle, m);
    double sphere[4];
    if (n->role == ROLE_SPHERE)
        geometry_world_sphere(m, n, sphere);
    int total = n->role == ROLE_BOX ? 6 * 49 : 258;
    for (int k = 0; k < total; k++) {
        double p[3];
        if (n->role == ROLE_BOX) {
            int face = k / 49, a = (k % 49) / 7, b = k % 7, axis = face / 2;
            double local[3];
            local[axis] = face & 1 ? n->mx[axis] : n->mn[axis];
            int u = (axis + 1) % 3, w = (axis + 2) % 3;
            local[u] = n->mn[u] + (n->mx[u] - n->mn[u]) * a / 6.0;
            local[w] = n->mn[w] + (n->mx[w] - n->mn[w]) * b / 6.0;
            transform_point(m, local, p);
        } else {
            double d[3];
            if (k < 6) {
                d[0] = d[1] = d[2] = 0;
                d[k / 2] = k & 1 ? 1 : -1;
            } else {
                double y = 1 - 2.0 * (k - 6 + 0.5) / 252.0, rr = sqrt(1 - y * y), phi = (k - 6) * 2.399963229728653;
                d[0] = cos(phi) * rr;
                d[1] = y;
                d[2] = sin(phi) * rr;
            }
            for (int a = 0; a < 3; a++)
                p[a] = sphere[a] + sphere[3] * d[a];
        }
        if (!in_view(c, p))
            continue;
        double eye[3];
        if (c->ortho) {
            double depth = 0;
            for (int a = 0; a < 3; a++)
                depth += (p[a] - c->eye[a]) * c->forward[a];
            for (int a = 0; a < 3; a++)
                eye[a] = p[a] - depth * c->forward[a];
        } else {
            for (int a = 0; a < 3; a++)
                eye[a] = c->eye[a];
        }
        bool blocked = false;
        for (int o = 0; o < occ_count && !blocked; o++)
            blocked = ref_blocks(&occ[o], p, eye);
        if (!blocked)
            return true;
    }
    return false;
}

typedef struct prop_totals {
    uint64_t frames, drawn, frustum_out, hidden_verified, seen_drawn, crossfades, occlusion_culled;
} prop_totals;

/* Checks one frame of scene sc against the reference. */
static void prop_check_frame(const prop_scene *sc, const prop_camera *c, const frame_occluder *focc, int focc_count,
                             const rv_frame_view *v, prop_totals *t)
{
    /* Every item names a node with geometry; a node appears once with fade 1, or twice (two
     * levels) with fades summing to 1. Front to back. */
    float fade_sum[PROP_MAX_NODES] = { 0 };
    int items[PROP_MAX_NODES] = { 0 };
    uint32_t levels[PROP_MAX_NODES][2];
    for (uint32_t k = 0; k < v->opaque_count; k++) {
        const rv_draw_item *it = &v->opaque[k];
        if (k > 0)
            assert_true(v->opaque[k - 1].view_depth <= it->view_depth);
        int i = -1;
        for (int j = 0; j < sc->count && i < 0; j++)
            if (rv_node_equal(sc->nodes[j].handle, it->node))
                i = j;
        assert_true(i >= 0);
        assert_true(sc->nodes[i].role == ROLE_SPHERE || sc->nodes[i].role == ROLE_BOX);
        assert_true(it->fade > 0.0f && it->fade <= 1.0f);
        /* view_depth: the centre of the node's own geometry in the world, along this
         * camera's view direction (not its world bounds', which hold its children too). */
        float wm[16];
        assert_int_equal(rv_node_world_matrix(sc->world, it->node, wm), RV_OK);
        float depth = 0;
        for (int k2 = 0; k2 < 3; k2++) {
            const float *lc = sc->nodes[i].centre;
            float wc = wm[k2] * lc[0] + wm[4 + k2] * lc[1] + wm[8 + k2] * lc[2] + wm[12 + k2];
            depth += (wc - c->eye[k2]) * c->forward[k2];
        }
        assert_float_equal(it->view_depth, depth, 1e-3f * (1.0f + fabsf(depth)));
        assert_true(items[i] < 2);
        levels[i][items[i]++] = it->lod_level;
        fade_sum[i] += it->fade;
    }
    assert_int_equal(v->translucent_count, 0);
    assert_int_equal(v->counts.lod_culled, 0);
    for (int i = 0; i < sc->count; i++) {
        if (!items[i])
            continue;
        assert_float_equal(fade_sum[i], 1.0f, 1e-5f);
        if (items[i] == 2) {
            assert_true(levels[i][0] != levels[i][1]);
            t->crossfades++;
        }
    }

    /* The occluders, exactly: persistent nodes under their world matrices, then this frame's. */
    ref_occluder occ[PROP_MAX_OCCLUDERS];
    int occ_count = 0;
    for (int i = 0; i < sc->count && occ_count < PROP_MAX_OCCLUDERS; i++) {
        const prop_node *n = &sc->nodes[i];
        if (n->role != ROLE_OCCLUDER && !n->also_occluder)
            continue;
        float m[16];
        world_matrix_of(sc->world, n->handle, m);
        occ_count += ref_occluder_make(m, n->mn, n->mx, &occ[occ_count]);
    }
    for (int k = 0; k < focc_count && occ_count < PROP_MAX_OCCLUDERS; k++) {
        static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
        occ_count += ref_occluder_make(focc[k].identity ? identity : focc[k].m, focc[k].mn, focc[k].mx, &occ[occ_count]);
    }

    /* Brute-force frustum planes in double (Gribb & Hartmann, per depth convention). */
    double planes[6][4];
    const float *m = c->view_projection;
    for (int j = 0; j < 4; j++) {
        double x = m[j * 4], y = m[j * 4 + 1], z = m[j * 4 + 2], w = m[j * 4 + 3];
        double lo = c->clip.depth_zero_to_one ? z : w + z, hi = w - z;
        planes[0][j] = w + x;
        planes[1][j] = w - x;
        planes[2][j] = w + y;
        planes[3][j] = w - y;
        planes[4][j] = lo;
        planes[5][j] = hi;
    }
    for (int i = 0; i < sc->count; i++) {
        const prop_node *n = &sc->nodes[i];
        if (n->role != ROLE_SPHERE && n->role != ROLE_BOX)
            continue;
        if (items[i]) {
            t->drawn++;
            if (t->seen_drawn < 50 && reference_sees(sc, i, c, occ, occ_count))
                t->seen_drawn++; /* the reference can say "seen" at all */
            continue;
        }
        float wm[16];
        world_matrix_of(sc->world, n->handle, wm);
        double s[4];
        geometry_world_sphere(wm, n, s);
        bool outside = false;
        for (int p = 0; p < 6 && !outside; p++) {
            double len = sqrt(planes[p][0] * planes[p][0] + planes[p][1] * planes[p][1] + planes[p][2] * planes[p][2]);
            if (len < 1e-12)
                continue; /* an infinite far plane */
            double d = (planes[p][0] * s[0] + planes[p][1] * s[1] + planes[p][2] * s[2] + planes[p][3]) / len;
            outside = d < -s[3];
        }
        if (outside) {
            t->frustum_out++;
            continue;
        }
        if (reference_sees(sc, i, c, occ, occ_count)) {
            print_error("node %d (role %d, parent %d) culled but the reference sees it; clip %d/%d ortho %d\n", i,
                        (int)n->role, n->parent, c->clip.depth_zero_to_one, c->clip.reversed_z, c->ortho);
            fail();
        }
        t->hidden_verified++;
    }
    t->frames++;
    t->occlusion_culled += v->counts.occlusion_culled;
}

/* Random hierarchies (random transforms with mirrors and non-uniform scale), occluder
 * nodes and per-frame occluders, random cameras in every clip convention: an object the
 * frame does not draw is outside the frustum or hidden by the reference; nothing is drawn
 * twice outside crossfades; two identical worlds give the same digests. */
static void test_property_frame_culls_only_what_is_truly_hidden(void **state)
{
    (void)state;
    static prop_scene a, b;
    prop_totals t = { 0 };
    int scenes = RVT_HEAVY(240, 60);
    for (int s = 0; s < scenes; s++) {
        uint64_t seed = 0x5eed0000ull + (uint64_t)s * 7919u;
        uint32_t width = (uint32_t[]){ 64, 128, 256 }[s % 3];
        prop_scene_build(&a, seed, width);
        prop_scene_build(&b, seed, width);
        uint64_t cam_seed = seed ^ 0xca11ull;
        for (int f = 0; f < CAM_KIND_COUNT; f++) {
            uint64_t step_seed = seed + 1000u * (uint64_t)f;
            prop_scene_step(&a, step_seed);
            prop_scene_step(&b, step_seed);
            prop_camera c;
            prop_camera_make(&c, (cam_kind)((f + s) % CAM_KIND_COUNT), &cam_seed);
            frame_occluder focc[8];
            int focc_count;
            random_frame_occluders(step_seed ^ 0x0cc1ull, focc, &focc_count);
            bool vp_form = (f + s) % 2 == 0;
            rv_frame_view va, vb;
            prop_frame(&a, &c, vp_form, 16.0 * f, focc, focc_count, &va);
            prop_frame(&b, &c, vp_form, 16.0 * f, focc, focc_count, &vb);
            assert_true(rv_frame_view_digest(&va) == rv_frame_view_digest(&vb));
            assert_int_equal(va.opaque_count, vb.opaque_count);
            prop_check_frame(&a, &c, focc, focc_count, &va, &t);
        }
        rv_world_destroy(a.world);
        rv_world_destroy(b.world);
    }
    /* The property was exercised: things were drawn, culled by the frustum, and culled
     * by occlusion (each verified hidden); crossfades ran; the reference can see. */
    assert_true(t.drawn > 100);
    assert_true(t.frustum_out > 20);
    assert_true(t.hidden_verified > 20);
    assert_true(t.occlusion_culled > 20);
    assert_true(t.seen_drawn > 10);
    assert_true(t.crossfades > 0);
}

/* Extra views test the nodes' test boxes as the main view does: over random hierarchies
 * (test boxes on leaves and around subtrees, rotated, mirrored, scaled) and random views
 * in every clip convention, an extra view draws every node the reference sees inside its
 * volume (no occlusion there), nothing the sphere-only walk of the same frustum culls, and
 * over the run fewer than that walk: the boxes cull where spheres straddle a plane. */
static void test_property_extra_view_culls_by_test_box_only_what_is_outside(void **state)
{
    (void)state;
    static prop_scene sc;
    uint64_t seen = 0, drawn = 0, sphere_visible = 0, box_culled = 0;
    rv_node nodes[PROP_MAX_NODES];
    int scenes = RVT_HEAVY(200, 50);
    for (int s = 0; s < scenes; s++) {
        uint64_t seed = 0xe57a0000ull + (uint64_t)s * 104729u;
        prop_scene_build(&sc, seed, 0);
        rv_view_list *list;
        assert_int_equal(rv_view_list_create(sc.world, &list), RV_OK);
        uint64_t cam_seed = seed ^ 0x5eeull;
        for (int f = 0; f < CAM_KIND_COUNT; f++) {
            prop_scene_step(&sc, seed + 1000u * (uint64_t)f);
            prop_camera main_cam, c;
            prop_camera_make(&main_cam, (cam_kind)((f + s + 3) % CAM_KIND_COUNT), &cam_seed);
            prop_camera_make(&c, (cam_kind)((f + s) % CAM_KIND_COUNT), &cam_seed);
            rv_frame_view v, extra;
            prop_frame(&sc, &main_cam, false, 16.0 * f, NULL, 0, &v);
            rv_view ev;
            memset(&ev, 0, sizeof ev);
            ev.view = c.view;
            ev.projection = c.projection;
            ev.clip = c.clip;
            ev.viewport_width = c.width;
            ev.viewport_height = c.height;
            ev.time_ms = 16.0 * f;
            assert_int_equal(rv_cull_view(sc.world, &ev, list, &extra), RV_OK);
            uint32_t n = 0;
            assert_int_equal(rv_collect_visible(sc.world, RV_NODE_NONE, &extra.frustum, nodes, PROP_MAX_NODES, &n, NULL),
                             RV_OK);
            for (int i = 0; i < sc.count; i++) {
                const prop_node *pn = &sc.nodes[i];
                if (pn->role != ROLE_SPHERE && pn->role != ROLE_BOX)
                    continue;
                bool in_extra = view_draws(&extra, pn->handle), by_sphere = false;
                for (uint32_t k = 0; k < n && !by_sphere; k++)
                    by_sphere = rv_node_equal(nodes[k], pn->handle);
                if (reference_sees(&sc, i, &c, NULL, 0)) {
                    assert_true(in_extra);
                    seen++;
                }
                if (in_extra)
                    assert_true(by_sphere);
                drawn += in_extra;
                sphere_visible += by_sphere;
                box_culled += by_sphere && !in_extra;
            }
        }
        rv_view_list_destroy(list);
        rv_world_destroy(sc.world);
    }
    /* Exercised: the reference saw things, and the boxes culled some the spheres kept. */
    assert_true(seen > 100);
    assert_true(drawn >= seen);
    assert_true(box_culled > 20);
    assert_true(drawn + box_culled == sphere_visible);
}

static void test_occluder_in_a_hidden_part_hides_nothing(void **state)
{
    (void)state;
    rv_world *w = rvt_world_occlusion(256);
    /* A storey part holding a wall occluder; a crate behind the wall, outside the building. */
    rv_node building = rvt_object(w, RV_NODE_NONE, 0, 0, -10, 0.1f);
    rv_node storey = rvt_object(w, building, 0, 1, 0, 0.5f);
    rv_node wall;
    assert_int_equal(rv_node_create(w, storey, &wall), RV_OK);
    float wmin[3] = { -3, -1, -0.5f }, wmax[3] = { 3, 9, 0 };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    rv_node crate = rvt_object(w, RV_NODE_NONE, 0, 1.5f, -20, 0.5f);
    assert_int_equal(rv_partition_make_group(w, building), RV_OK);
    uint64_t leaves[1] = { 7 };
    assert_int_equal(rv_partition_set_part(w, storey, leaves, 1, false), RV_OK);
    rvt_camera c;
    rvt_camera_make(&c, eye0, ahead, 1.2f, 0);
    rv_frame_view v;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, crate)); /* the storey stands: its wall hides the crate */
    /* A committed slice that cuts the storey away: its wall is not drawn, so it must not
     * hide the crate behind it, from this very frame on. */
    float smin[3] = { -100, -100, 0 }, smax[3] = { 100, 100, 100 };
    assert_int_equal(rv_partition_set_committed_slice(w, smin, smax), RV_OK);
    c.v.time_ms = 16;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, storey));
    assert_true(view_draws(&v, crate));
    /* The same for an occluder whose own LOD level is "nothing". */
    assert_int_equal(rv_partition_clear_committed_slice(w), RV_OK);
    rv_lod_ladder ladder;
    float t[1] = { 3.0f }; /* only an enormous angle reaches level 0 */
    assert_int_equal(rv_lod_ladder_make(t, 1, &ladder), RV_OK);
    assert_int_equal(rv_node_set_bounds(w, wall, (float[3]){ 0, 4, -0.25f }, 5.0f), RV_OK);
    assert_int_equal(rv_node_set_lod_ladder(w, wall, &ladder), RV_OK);
    c.v.time_ms = 32;
    assert_int_equal(rv_frame(w, &c.v, &v), RV_OK);
    assert_false(view_draws(&v, wall));
    assert_true(view_draws(&v, crate));
    rv_world_destroy(w);
}

/* Both worlds (summaries kept by w[0]; w[1] keeps cull records, so none) through one
 * frame: their views must be the same. */
static void frame_pair(rv_world *w[2], const rvt_camera *c, int f, rv_frame_view v[2])
{
    for (int k = 0; k < 2; k++)
        assert_int_equal(rv_frame(w[k], &c->v, &v[k]), RV_OK);
    if (rv_frame_view_digest(&v[0]) != rv_frame_view_digest(&v[1]))
        fail_msg("frame %d: the walk with summaries drew another list", f);
}

/* What the last frame's walk passed over by summaries in w, over every worker. */
static rvi_walk_counts walk_counts(rv_world *w)
{
    const rvi_frame *fs = rvi_frame_find(w);
    rvi_walk_counts sum = { 0 };
    for (uint32_t k = 0; k < fs->worker_count; k++) {
        sum.summarised += fs->workers[k].walk.summarised;
        sum.summarised_visit += fs->workers[k].walk.summarised_visit;
    }
    return sum;
}

/* The walk drops whole subtrees and blocks of leaves whose every piece rests at LOD
 * "nothing" and stays there: what it draws is what a walk that looks at every node draws
 * (a world keeping cull records keeps no summaries), while the camera comes and goes, nodes
 * move, a ladder changes and a node is added. */
static void test_dropping_what_stays_at_nothing_changes_nothing_drawn(void **state)
{
    (void)state;
    rv_world *w[2];
    rv_node field[2], crates[2][2400];
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder, coarse;
    assert_int_equal(rv_lod_ladder_make(t, 3, &ladder), RV_OK);
    assert_int_equal(rv_lod_ladder_make(t, 2, &coarse), RV_OK);
    for (int k = 0; k < 2; k++) {
        rv_world_desc d = { 0 };
        d.occlusion.width = 64;
        d.record_culls = k == 1;
        assert_int_equal(rv_world_create(&d, &w[k]), RV_OK);
        assert_int_equal(rv_node_create(w[k], RV_NODE_NONE, &field[k]), RV_OK);
        for (int i = 0; i < 2400; i++) {
            crates[k][i] = rvt_object(w[k], field[k], (float)(i % 30) * 2.5f - 37, 0.5f, -(float)(i / 30) * 2.5f - 5, 0.87f);
            assert_int_equal(rv_node_set_lod_ladder(w[k], crates[k][i], &ladder), RV_OK);
        }
        assert_int_equal(rv_update_world(w[k]), RV_OK);
        /* Groups over a quarter: subtrees to drop besides the blocks and groups of blocks of
         * the rest (a list long enough to be walked in chunks, as a field's is). */
        rv_node quarter[600];
        memcpy(quarter, crates[k] + 1800, sizeof quarter);
        assert_int_equal(rv_group_spatially(w[k], field[k], quarter, 600, 0, NULL), RV_OK);
    }
    int drawn_far = 0, drawn_near = 0;
    uint64_t dropped = 0; /* blocks and subtrees the walk passed over by their summaries */
    uint32_t groups_kept = 0; /* groups of blocks summarised whole, far from the field */
    for (int f = 0; f < 160; f++) {
        /* Away from the field and back, looking along it. */
        float z = f < 80 ? 10.0f + 4.0f * (float)f : 10.0f + 4.0f * (float)(160 - f);
        const float eye[3] = { 0, 1.7f, z }, target[3] = { 0, 0.5f, z - 50 };
        rvt_camera c;
        rvt_camera_make(&c, eye, target, 1.0f, 16.0 * f);
        for (int k = 0; k < 2; k++) {
            if (f == 50) { /* a crate moves, another gets a shorter ladder */
                float p[3] = { 3, 0.5f, -20 };
                assert_int_equal(rv_node_set_position(w[k], crates[k][100], p), RV_OK);
                assert_int_equal(rv_node_set_lod_ladder(w[k], crates[k][700], &coarse), RV_OK);
            }
            if (f == 120) /* a node comes */
                (void)rvt_object(w[k], field[k], 1, 0.5f, -30, 0.87f);
        }
        rv_frame_view v[2];
        frame_pair(w, &c, f, v);
        dropped += walk_counts(w[0]).summarised;
        const rvi_frame *fs = rvi_frame_find(w[0]);
        if (f == 75) {
            drawn_far = (int)v[0].opaque_count;
            const rvi_walk_summaries *s = &fs->summaries;
            for (uint32_t g = 0; g < s->capacity / RVI_WALK_GROUP; g++)
                groups_kept += s->group_version[g] == s->version && s->group[g].lod_ok;
        }
        if (f == 5)
            drawn_near = (int)v[0].opaque_count;
    }
    assert_true(drawn_near > 100 && drawn_far < drawn_near); /* the LOD did drop the far ones */
    assert_true(dropped > 100);                             /* and the walk passed them over */
    assert_true(groups_kept > 0);                           /* a group at a time, too */
    for (int k = 0; k < 2; k++)
        rv_world_destroy(w[k]);
}

/* Rows of leaves just past the far plane, inside the side planes: each block's sphere (a
 * row 150 long) reaches into the frustum, its box does not, so only their boxes let the
 * walk pass blocks and groups over (there is no LOD here to pass anything over by): what it
 * draws is what a walk that looks at every node draws, while the camera comes closer and
 * the rows come into view. */
static void test_rows_past_the_far_plane_are_passed_over_by_their_boxes(void **state)
{
    (void)state;
    enum { ROWS = 12, PER_ROW = 128 };
    rv_world *w[2];
    for (int k = 0; k < 2; k++) {
        rv_world_desc d = { 0 };
        d.record_culls = k == 1; /* a world keeping cull records keeps no summaries */
        assert_int_equal(rv_world_create(&d, &w[k]), RV_OK);
        rv_node field;
        assert_int_equal(rv_node_create(w[k], RV_NODE_NONE, &field), RV_OK);
        for (int i = 0; i < ROWS * PER_ROW; i++)
            (void)rvt_object(w[k], field, (float)(i % PER_ROW) * 10.0f - 635, 0.5f,
                             -1015.0f - 4.0f * (float)(i / PER_ROW), 1.0f);
        assert_int_equal(rv_update_world(w[k]), RV_OK);
    }
    uint64_t dropped = 0, dropped_first = 0;
    uint32_t drawn_last = 0;
    for (int f = 0; f < 60; f++) {
        /* The far plane is 1000 away: the rows start 15 past it and come 1 nearer a frame. */
        const float eye[3] = { 0, 1.7f, -(float)f }, target[3] = { 0, 1.7f, -(float)f - 50 };
        rvt_camera c;
        rvt_camera_make(&c, eye, target, 1.0f, 16.0 * f);
        rv_frame_view v[2];
        frame_pair(w, &c, f, v);
        dropped += walk_counts(w[0]).summarised;
        if (f == 10)
            dropped_first = dropped;
        drawn_last = v[0].opaque_count;
    }
    assert_true(dropped_first >= 30); /* while every row is past the far plane */
    assert_true(drawn_last > 100);   /* and the rows that came into view were drawn */
    for (int k = 0; k < 2; k++)
        rv_world_destroy(w[k]);
}

/* Rows reaching from the view out past its right side, with ladders: the part in view rests
 * at LOD "nothing" (far away), the part beyond the side was never selected, so no group is
 * at rest as a whole; a group is still passed over when its leaves not at rest lie
 * outside the frustum and the rest are cut. What the walk draws is what a walk that looks
 * at every node draws, while the camera walks up to the rows (leaves at rest come near)
 * and turns toward their far ends (leaves never selected come into view). */
static void test_groups_with_unselected_leaves_outside_the_view_are_passed_over(void **state)
{
    (void)state;
    enum { ROWS = 8, PER_ROW = 512 };
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    assert_int_equal(rv_lod_ladder_make(t, 3, &ladder), RV_OK);
    rv_world *w[2];
    for (int k = 0; k < 2; k++) {
        rv_world_desc d = { 0 };
        d.record_culls = k == 1; /* a world keeping cull records keeps no summaries */
        assert_int_equal(rv_world_create(&d, &w[k]), RV_OK);
        rv_node field;
        assert_int_equal(rv_node_create(w[k], RV_NODE_NONE, &field), RV_OK);
        for (int i = 0; i < ROWS * PER_ROW; i++) {
            rv_node n = rvt_object(w[k], field, (float)(i % PER_ROW) * 5.0f - 150, 0.5f,
                                   -400.0f - 20.0f * (float)(i / PER_ROW), 1.0f);
            assert_int_equal(rv_node_set_lod_ladder(w[k], n, &ladder), RV_OK);
        }
        assert_int_equal(rv_update_world(w[k]), RV_OK);
    }
    uint64_t passed_over = 0;
    uint32_t drawn_max = 0;
    for (int f = 0; f < 160; f++) {
        /* Still for 40 frames, then walking up to the rows (those ahead come near, out of
         * "nothing"), then turning right toward their far ends. */
        float turn = f < 110 ? 0.0f : 0.01f * (float)(f - 110), walked = f < 40 ? 0.0f : f < 110 ? 5.0f * (float)(f - 40) : 350.0f;
        const float eye[3] = { 0, 1.7f, -walked }, target[3] = { 50.0f * sinf(turn), 1.7f, -walked - 50.0f * cosf(turn) };
        rvt_camera c;
        rvt_camera_make(&c, eye, target, 1.0f, 16.0 * f);
        rv_frame_view v[2];
        frame_pair(w, &c, f, v);
        passed_over += walk_counts(w[0]).summarised_visit;
        drawn_max = v[0].opaque_count > drawn_max ? v[0].opaque_count : drawn_max;
    }
    assert_true(drawn_max > 50); /* the rows came near enough to be drawn */
    assert_true(passed_over >= 100);
    for (int k = 0; k < 2; k++)
        rv_world_destroy(w[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_draws_exactly_the_frustum_visible_objects),
        cmocka_unit_test(test_group_spatially_groups_roots_and_the_frame_draws_the_same),
        cmocka_unit_test(test_rows_past_the_far_plane_are_passed_over_by_their_boxes),
        cmocka_unit_test(test_groups_with_unselected_leaves_outside_the_view_are_passed_over),
        cmocka_unit_test(test_occluder_node_hides_objects_behind_and_group_prunes),
        cmocka_unit_test(test_a_viewport_of_any_shape_keeps_occlusion),
        cmocka_unit_test(test_a_buffer_that_hides_nothing_tests_nothing),
        cmocka_unit_test(test_visible_subtree_retested_every_n_frames),
        cmocka_unit_test(test_skipped_subtree_test_draws_what_a_passing_one_does),
        cmocka_unit_test(test_per_frame_occluder_needs_open_frame),
        cmocka_unit_test(test_view_stays_valid_until_its_arena_is_reused),
        cmocka_unit_test(test_handles_and_views_of_a_destroyed_world_fail_in_the_next_one),
        cmocka_unit_test(test_view_lists_may_outlive_their_world),
        cmocka_unit_test(test_bad_view_input_is_rejected_and_changes_nothing),
        cmocka_unit_test(test_a_refused_begin_leaves_the_world_as_it_was),
        cmocka_unit_test(test_a_test_from_the_clock_inside_begin_is_refused),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_more_occluders_than_ever_before_allocate_nothing),
        cmocka_unit_test(test_lod_levels_and_nothing_level),
        cmocka_unit_test(test_a_scaled_view_matrix_is_the_same_camera),
        cmocka_unit_test(test_a_shadow_view_takes_its_levels_from_the_main_camera),
        cmocka_unit_test(test_a_shadow_view_holds_the_levels_the_main_view_holds),
        cmocka_unit_test(test_a_shadow_view_casts_a_fading_level_while_a_third_waits),
        cmocka_unit_test(test_a_shadow_view_culled_before_the_frame_s_lod_casts_that_frame_s_levels),
        cmocka_unit_test(test_a_shadow_view_casts_nothing_on_a_fade_in_s_first_frame),
        cmocka_unit_test(test_a_copy_of_the_main_view_lists_what_the_main_view_draws),
        cmocka_unit_test(test_lod_crossfade_retargeted_in_the_frame_view_never_jumps),
        cmocka_unit_test(test_an_object_unseen_while_it_came_near_shows_its_level_at_once),
        cmocka_unit_test(test_hlod_region_drawn_as_itself_stops_the_walk),
        cmocka_unit_test(test_hlod_regions_back_in_view_show_their_cut_whole),
        cmocka_unit_test(test_hlod_region_without_own_geometry_draws_its_children),
        cmocka_unit_test(test_hlod_leaf_region_without_own_geometry_draws_its_plain_children),
        cmocka_unit_test(test_hlod_a_region_without_geometry_asks_for_its_children_at_once),
        cmocka_unit_test(test_hlod_a_region_refines_through_a_region_without_geometry_only_onto_loaded_children),
        cmocka_unit_test(test_hlod_loads_behind_regions_without_geometry_name_the_region_missing_children),
        cmocka_unit_test(test_hlod_sibling_regions_without_geometry_are_all_asked_for_in_one_frame),
        cmocka_unit_test(test_hlod_only_regions_without_geometry_missing_children_are_asked_for),
        cmocka_unit_test(test_hlod_a_deep_chain_of_regions_without_geometry_is_never_a_hole),
        cmocka_unit_test(test_hlod_load_requests_come_most_urgent_first),
        cmocka_unit_test(test_a_node_of_unknown_placement_is_drawn_whole_until_placed),
        cmocka_unit_test(test_partition_gate_runs_inside_the_walk),
        cmocka_unit_test(test_walk_gates_groups_nested_in_a_part_within_the_margin),
        cmocka_unit_test(test_a_frame_that_cannot_list_its_paths_still_gates_through_them),
        cmocka_unit_test(test_a_gate_made_during_a_frame_joins_at_the_next),
        cmocka_unit_test(test_gate_calls_are_refused_inside_the_worlds_frame),
        cmocka_unit_test(test_node_flags_and_keys_reach_every_view),
        cmocka_unit_test(test_journal_projections_are_drawn_with_their_keys),
        cmocka_unit_test(test_grouping_and_rerooting_leave_projection_nodes_to_their_scene),
        cmocka_unit_test(test_streaming_hands_out_requests_and_ticks_while_loading),
        cmocka_unit_test(test_streaming_budget_holds_after_every_placement_through_a_teleport),
        cmocka_unit_test(test_streaming_cold_start_prefetch_fits_the_budget),
        cmocka_unit_test(test_streaming_budget_smaller_than_one_source_is_passed_only_by_pages_in_use),
        cmocka_unit_test(test_translucent_far_to_near_stable_and_digest_reproducible),
        cmocka_unit_test(test_translucent_list_is_far_to_near),
        cmocka_unit_test(test_a_parent_is_drawn_only_where_its_own_geometry_is_in_view),
        cmocka_unit_test(test_hlod_region_drawn_as_itself_out_of_view_is_not_listed),
        cmocka_unit_test(test_cull_records_say_why_each_subtree_was_not_drawn),
        cmocka_unit_test(test_test_box_outside_the_frustum_culls_a_straddling_sphere),
        cmocka_unit_test(test_rotated_test_box_outside_the_frustum_is_culled_as_an_oriented_box),
        cmocka_unit_test(test_a_node_attached_after_the_update_is_culled_where_it_stands),
        cmocka_unit_test(test_camera_far_from_the_origin_keeps_the_far_plane),
        cmocka_unit_test(test_far_eye_occlusion_sees_the_view_and_projection_product),
        cmocka_unit_test(test_occluder_in_a_hidden_part_hides_nothing),
        cmocka_unit_test(test_dropping_what_stays_at_nothing_changes_nothing_drawn),
        cmocka_unit_test(test_translucent_parent_sorts_by_its_own_geometry),
        cmocka_unit_test(test_orthographic_view_projection_form_sorts_front_to_back),
        cmocka_unit_test(test_bad_in_place_write_does_not_stop_the_frame),
        cmocka_unit_test(test_frame_draws_a_node_of_unknown_placement_in_every_frame_and_counts_it),
        cmocka_unit_test(test_a_cleared_test_box_leaves_the_sphere_to_judge),
        cmocka_unit_test(test_occlusion_never_hides_a_node_of_unknown_placement),
        cmocka_unit_test(test_occluder_of_unknown_placement_hides_nothing),
        cmocka_unit_test(test_lod_never_drops_a_node_of_unknown_placement),
        cmocka_unit_test(test_stage_times_follow_the_host_clock),
        cmocka_unit_test(test_publication_sort_is_a_stable_sort_both_ways),
        cmocka_unit_test(test_view_projection_form_reads_fov_from_the_matrix),
        cmocka_unit_test(test_abort_does_not_make_parts_reenter),
        cmocka_unit_test(test_frame_calls_from_a_callback_are_refused),
        cmocka_unit_test(test_frame_from_a_draining_scenes_observer_is_refused),
        cmocka_unit_test(test_finest_level_past_a_short_ladder_never_hides),
        cmocka_unit_test(test_world_refuses_a_stream_reach_every_frame_would_fail_on),
        cmocka_unit_test(test_view_of_another_world_is_never_valid),
        cmocka_unit_test(test_allocation_failure_in_boxes_and_frames),
        cmocka_unit_test(test_property_frame_culls_only_what_is_truly_hidden),
        cmocka_unit_test(test_property_extra_view_culls_by_test_box_only_what_is_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
