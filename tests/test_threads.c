/* Two worlds on two threads share nothing (suite threads; docs/design.md §0: no global
 * mutable state).
 *
 * A scenario builds one world from a seed (a hierarchy with bounds and LOD ladders,
 * partition groups and parts, a streaming grid served by the world's residency, the world's
 * journal and render scene) and drives it for 1,000 frames: nodes move, deltas are appended
 * to the journal, rv_frame runs (journal drain, transforms, frustum walk, partition gate,
 * LOD, streaming) with the eye circling the scene, and the host answers the page requests.
 * Per frame it records rv_frame_view_digest and a digest of the render scene and the
 * streaming state. Two scenarios run one after the other and then concurrently on two
 * threads; each must produce the same sequences both times. Under ThreadSanitizer (the CI's
 * tsan step) any shared mutable state in the library is also reported as a race. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "core/hash.h"
#include "support/rvt.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { NODES = 400, GROUPS = 4, PARTS_PER_GROUP = 6 };
#define FRAMES 1000

typedef struct scenario {
    uint64_t seed;
    rv_world *world;
    rv_journal *journal;        /* created on the thread that drives the world (its owner) */
    rv_render_scene *render;    /* bound to the world: projections get nodes */
    rv_node nodes[NODES];
    uint32_t node_count;
    uint64_t *digests;      /* FRAMES entries: view, render scene and streaming */
    uint64_t *view_digests; /* FRAMES entries: rv_frame_view_digest alone */
    int failed_line;   /* 0 = fine; set instead of asserting (cmocka is not thread-safe) */
} scenario;

#define SC_TRY(sc, expr)                                                                   \
    do {                                                                                   \
        if ((expr) != RV_OK && !(sc)->failed_line)                                         \
            (sc)->failed_line = __LINE__;                                                  \
    } while (0)

static float frand(uint64_t *s, float lo, float hi)
{
    return rvt_uniform(s, lo, hi);
}

static void build(scenario *sc)
{
    uint64_t s = sc->seed;
    rv_world_desc desc = {0};
    desc.node_capacity = 8; /* grows while building */
    desc.partition.frustum_margin = 1.0f;
    SC_TRY(sc, rv_world_create(&desc, &sc->world));
    if (sc->failed_line)
        return;
    for (uint32_t i = 0; i < NODES; i++) {
        rv_node parent = RV_NODE_NONE;
        if (i >= GROUPS) /* the first nodes are roots; others hang anywhere above them */
            parent = sc->nodes[rvt_next(&s) % i];
        SC_TRY(sc, rv_node_create(sc->world, parent, &sc->nodes[i]));
        float p[3] = { frand(&s, -20, 20), frand(&s, -2, 2), frand(&s, -20, 20) }, c[3] = { 0, 0, 0 };
        SC_TRY(sc, rv_node_set_position(sc->world, sc->nodes[i], p));
        if (rvt_next(&s) % 3)
            SC_TRY(sc, rv_node_set_bounds(sc->world, sc->nodes[i], c, frand(&s, 0.1f, 3.0f)));
    }
    sc->node_count = NODES;
    /* Partition: each root is a group; its first children are parts with a few leaves. */
    uint64_t leaf = sc->seed << 20;
    for (uint32_t g = 0; g < GROUPS; g++) {
        SC_TRY(sc, rv_partition_make_group(sc->world, sc->nodes[g]));
        rv_node part;
        SC_TRY(sc, rv_node_first_child(sc->world, sc->nodes[g], &part));
        for (uint32_t k = 0; k < PARTS_PER_GROUP && part.id; k++) {
            uint64_t leaves[3] = { leaf, leaf + 1, leaf + 2 };
            leaf += 3;
            SC_TRY(sc, rv_partition_set_part(sc->world, part, leaves, 3, k % 2 == 0));
            SC_TRY(sc, rv_node_next_sibling(sc->world, part, &part));
        }
    }
    SC_TRY(sc, rv_update_world(sc->world));
    /* Streaming: a 32 x 32 grid of 4 m pages around the origin, served by the world. */
    rv_grid_desc gd = {0};
    gd.source = (uint32_t)sc->seed;
    gd.origin[0] = gd.origin[1] = -64.0f;
    gd.cell_size = 4.0f;
    gd.count_x = gd.count_z = 32;
    gd.lead = 4.0f;
    gd.eye_radius = 12.0f;
    SC_TRY(sc, rv_world_add_grid(sc->world, &gd, NULL));
    /* The world's journal (drained by rv_frame_begin) and its render scene. */
    SC_TRY(sc, rv_world_journal(sc->world, &sc->journal));
    SC_TRY(sc, rv_world_render_scene(sc->world, &sc->render));
    /* Some nodes carry LOD ladders, so levels and crossfades are in the views. */
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    SC_TRY(sc, rv_lod_ladder_make(t, 3, &ladder));
    for (uint32_t i = 0; i < NODES; i += 5)
        SC_TRY(sc, rv_node_set_lod_ladder(sc->world, sc->nodes[i], &ladder));
}

/* This frame's deltas: register, move, re-flag and unregister projections keyed by the
 * frame, so the render scene churns all the time. */
static void journal_frame(scenario *sc, int frame, uint64_t *s)
{
    for (int k = 0; k < 6; k++) {
        uint64_t key = rvt_next(s) % 64;
        rv_projection p;
        memset(&p, 0, sizeof p);
        p.transform.position[0] = frand(s, -30, 30);
        p.transform.position[2] = frand(s, -30, 30);
        p.transform.rotation[3] = 1.0f;
        p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1.0f;
        p.transform.bounds[3] = frand(s, 0.1f, 2.0f);
        p.bucket.projection_class = key % 3 == 0 ? RV_PROJECTION_CELL_STATIC : RV_PROJECTION_DYNAMIC;
        p.bucket.cell = key % 5;
        p.flags = (uint32_t)(key % 16);
        switch (rvt_next(s) % 4) {
        case 0: /* a register of a live key is rejected and counted: both fine */
            SC_TRY(sc, rv_journal_register(sc->journal, 0, key, (uint32_t)(frame / 50), &p, NULL));
            break;
        case 1:
            SC_TRY(sc, rv_journal_update_transform(sc->journal, 0, key, (uint32_t)(frame / 50), &p.transform, NULL));
            break;
        case 2:
            SC_TRY(sc, rv_journal_update_flags(sc->journal, 0, key, (uint32_t)(frame / 50), p.flags, NULL));
            break;
        default:
            SC_TRY(sc, rv_journal_unregister(sc->journal, 0, key, (uint32_t)(frame / 50), NULL));
        }
    }
    /* rv_frame_begin drains the journal; rv_frame_end publishes. */
}

/* A perspective view at eye looking at the origin (OpenGL depth). */
static void view_projection(const float eye[3], float out[16])
{
    float f[3] = { -eye[0], -eye[1], -eye[2] };
    float len = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= len;
    float up[3] = { 0, 1, 0 }, r[3] = { f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0] };
    float rl = sqrtf(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; k++)
        r[k] /= rl;
    float u[3] = { r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2], r[0] * f[1] - r[1] * f[0] };
    float view[16] = { r[0], u[0], -f[0], 0, r[1], u[1], -f[1], 0, r[2], u[2], -f[2], 0,
                       -(r[0] * eye[0] + r[1] * eye[1] + r[2] * eye[2]),
                       -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
                       f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1 };
    float n = 0.5f, fa = 200.0f, t = 1.0f; /* 90 degrees */
    float proj[16] = { 1 / t, 0, 0, 0, 0, 1 / t, 0, 0, 0, 0, -(fa + n) / (fa - n), -1, 0, 0, -2 * fa * n / (fa - n), 0 };
    for (int c = 0; c < 4; c++)
        for (int row = 0; row < 4; row++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += proj[k * 4 + row] * view[c * 4 + k];
            out[c * 4 + row] = acc;
        }
}

/* What a frame produced: the view's digest (rv_frame_view_digest: what to draw, levels,
 * fades, order — independent of tags and addresses), every item's world matrix and view
 * depth (which that digest leaves out), the render scene's digest, and the streaming
 * state. */
static uint64_t frame_digest(scenario *sc, const rv_frame_view *view)
{
    uint64_t d[6] = { rv_frame_view_digest(view), view->opaque_count, view->translucent_count,
                      view->page_request_count, view->resync_request_count, 0 };
    rv_scene_digest rd;
    SC_TRY(sc, rv_render_scene_digest(sc->render, &rd));
    uint64_t h = rvi_hash_bytes(sc->seed, d, sizeof d);
    for (int list = 0; list < 2; list++) {
        const rv_draw_item *items = list ? view->translucent : view->opaque;
        uint32_t n = list ? view->translucent_count : view->opaque_count;
        for (uint32_t i = 0; i < n; i++) {
            h = rvi_hash_bytes(h, items[i].world_matrix, sizeof items[i].world_matrix);
            h = rvi_hash_bytes(h, &items[i].view_depth, sizeof items[i].view_depth);
        }
    }
    h = rvi_hash_bytes(h, &rd, sizeof rd);
    rv_residency_stats rs = rv_residency_get_stats(rv_world_residency(sc->world));
    uint64_t res_fields[5] = { rs.pages_resident, rs.pages_requested, rs.pages_loading, rs.bytes_resident, rs.frame };
    return rvi_hash_bytes(h, res_fields, sizeof res_fields);
}

static void run_frames(scenario *sc)
{
    uint64_t s = sc->seed * 7919;
    for (int frame = 0; frame < FRAMES && !sc->failed_line; frame++) {
        /* Move a few nodes and churn the journal. */
        for (int k = 0; k < 8; k++) {
            rv_node n = sc->nodes[rvt_next(&s) % sc->node_count];
            float p[3] = { frand(&s, -20, 20), frand(&s, -2, 2), frand(&s, -20, 20) };
            SC_TRY(sc, rv_node_set_position(sc->world, n, p));
        }
        journal_frame(sc, frame, &s);
        /* The eye circles the scene. */
        float a = 0.01f * (float)frame, eye[3] = { 40.0f * cosf(a), 5.0f, 40.0f * sinf(a) }, vp[16];
        view_projection(eye, vp);
        rv_view view;
        memset(&view, 0, sizeof view);
        view.view_projection = vp;
        view.eye = eye;
        view.viewport_width = 1280;
        view.viewport_height = 720;
        view.fov_y = 1.5707963f;
        view.time_ms = 16.0 * frame;
        rv_frame_view fv;
        rv_result r = rv_frame(sc->world, &view, &fv);
        if (r != RV_OK && !sc->failed_line)
            sc->failed_line = __LINE__;
        if (r != RV_OK)
            return;
        sc->view_digests[frame] = rv_frame_view_digest(&fv);
        sc->digests[frame] = frame_digest(sc, &fv);
        /* Answer the page requests: place, or fail one in seven. */
        rv_residency *res = rv_world_residency(sc->world);
        for (uint32_t i = 0; i < fv.page_request_count; i++) {
            rv_page_key key = fv.page_requests[i].key;
            if ((key.index + (uint32_t)frame) % 7 == 0)
                SC_TRY(sc, rv_residency_fail(res, key));
            else
                SC_TRY(sc, rv_residency_place(res, key, 1024 + key.index));
        }
    }
}

static void finish(scenario *sc)
{
    rv_world_destroy(sc->world); /* its journal, render scene, grid and residency with it */
}

static void *thread_main(void *arg)
{
    scenario *sc = arg;
    build(sc);
    if (!sc->failed_line)
        run_frames(sc);
    finish(sc);
    return NULL;
}

static void test_two_worlds_on_two_threads_match_sequential_runs(void **state)
{
    (void)state;
    static uint64_t seq[2][FRAMES], par[2][FRAMES], seq_view[2][FRAMES], par_view[2][FRAMES];
    scenario one[2], two[2];
    for (int w = 0; w < 2; w++) {
        one[w] = (scenario){ .seed = 11 + (uint64_t)w * 1000, .digests = seq[w], .view_digests = seq_view[w] };
        two[w] = (scenario){ .seed = 11 + (uint64_t)w * 1000, .digests = par[w], .view_digests = par_view[w] };
    }
    /* One after the other, on this thread. */
    thread_main(&one[0]);
    thread_main(&one[1]);
    assert_int_equal(one[0].failed_line, 0);
    assert_int_equal(one[1].failed_line, 0);
    /* Concurrently, on two threads. */
    pthread_t t[2];
    for (int w = 0; w < 2; w++)
        assert_int_equal(pthread_create(&t[w], NULL, thread_main, &two[w]), 0);
    for (int w = 0; w < 2; w++)
        assert_int_equal(pthread_join(t[w], NULL), 0);
    assert_int_equal(two[0].failed_line, 0);
    assert_int_equal(two[1].failed_line, 0);
    for (int w = 0; w < 2; w++)
        for (int f = 0; f < FRAMES; f++) {
            if (seq_view[w][f] != par_view[w][f])
                fail_msg("world %d: frame %d's view digest differs between the sequential and the concurrent run",
                         w, f);
            if (seq[w][f] != par[w][f])
                fail_msg("world %d: frame %d (render scene / streaming) differs between the runs", w, f);
        }
    /* Not vacuous: the two scenarios differ, and a world's views change over the run. */
    assert_true(memcmp(seq[0], seq[1], sizeof seq[0]) != 0);
    int changes = 0;
    for (int f = 1; f < FRAMES; f++)
        changes += seq_view[0][f] != seq_view[0][f - 1];
    assert_true(changes > FRAMES / 10);
}

/* A render thread tests the buffer rv_world_occlusion lends once a frame has ended, while
 * the frame thread's next rv_frame_begin is refused (time going backwards, a NULL view):
 * a refused begin changes nothing, so under ThreadSanitizer nothing races; the thread's
 * answers stay those of the frame that ended. */
typedef struct lent_buffer {
    rv_occlusion *occ;
    uint32_t hidden; /* tests that answered hidden */
} lent_buffer;

static void *test_lent_buffer(void *arg)
{
    lent_buffer *lb = arg;
    const float behind[3] = { 0, 1.7f, -40 };
    for (int k = 0; k < 20000; k++) {
        bool visible = true;
        if (rv_occlusion_test_sphere(lb->occ, behind, 0.5f, NULL, &visible) == RV_OK && !visible)
            lb->hidden++;
    }
    return NULL;
}

static void test_a_refused_begin_leaves_the_lent_buffer_to_its_readers(void **state)
{
    (void)state;
    rv_world_desc desc = { 0 };
    desc.occlusion.width = 128;
    rv_world *w;
    assert_int_equal(rv_world_create(&desc, &w), RV_OK);
    rv_node wall;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &wall), RV_OK);
    const float wmin[3] = { -10, -5, -20.5f }, wmax[3] = { 10, 12, -20 };
    assert_int_equal(rv_node_set_occluder_box(w, wall, wmin, wmax), RV_OK);
    const float view[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1.7f, 0, 1 };
    const float proj[16] = { 0.5625f, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
    rv_view v = { 0 };
    v.view = view;
    v.projection = proj;
    v.viewport_width = 1280;
    v.viewport_height = 720;
    v.time_ms = 100;
    rv_frame_view out;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    lent_buffer lb = { rv_world_occlusion(w), 0 };
    assert_non_null(lb.occ);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, test_lent_buffer, &lb), 0);
    rv_view back = v;
    back.time_ms = 50;
    int refused = 0;
    for (int k = 0; k < 2000; k++) {
        refused += rv_frame_begin(w, &back) == RV_ERR_ORDER;
        refused += rv_frame_begin(w, NULL) == RV_ERR_INVALID_ARG;
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(refused, 4000);
    assert_int_equal(lb.hidden, 20000);
    rv_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_worlds_on_two_threads_match_sequential_runs),
        cmocka_unit_test(test_a_refused_begin_leaves_the_lent_buffer_to_its_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
