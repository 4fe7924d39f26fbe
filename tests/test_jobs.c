/* The frame on the host's job system (suite threads, run under ThreadSanitizer by CI): the
 * same frames, frame by frame, whatever the worker count, the order or the split of the
 * ranges; no allocation in steady frames with workers; a job system that breaks its
 * contract is reported, never followed.
 *
 * The world is made to use every path of the parallel walk: a wide group (its children cut
 * into chunks), a comb deeper than a worker's first stack (its levels handed back), random
 * groups with partition groups nested where a worker reaches them (handed back to the
 * calling thread), an HLOD region tree, occluder walls, test boxes, LOD ladders, journal
 * projections (translucent, hidden), cull records; the camera circles it while nodes move
 * and the journal churns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "core/hash.h"
#include "occlusion.h"
#include "support/rvt.h"
#include "support/rvt_jobs.h"
#include "support/rvt_scene.h"

#include <cglm/cglm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDE = 9000, CHAIN = 300, LOOSE = 400, REGIONS = 8, FRAMES = 120 };

typedef struct job_world {
    rv_world *world;
    rv_journal *journal;
    rv_node loose[LOOSE];
    uint64_t seed;
    bool feed;               /* the world takes a depth feed (FEED_W x FEED_H) */
} job_world;

enum { FEED_W = 96, FEED_H = 54 };

/* Wall k of the world (an occluder box). */
static void wall_box(uint32_t k, float mn[3], float mx[3])
{
    mn[0] = -8 + 3.0f * (float)k, mn[1] = 0, mn[2] = -5.0f * (float)k;
    mx[0] = -4 + 3.0f * (float)k, mx[1] = 6, mx[2] = 0.5f - 5.0f * (float)k;
}

static void check(rv_result r)
{
    assert_int_equal(r, RV_OK);
}

static void build(job_world *jw, const rv_job_system *jobs, bool churn)
{
    uint64_t s = jw->seed;
    rv_world_desc desc = { 0 };
    desc.occlusion.width = 64;
    desc.record_culls = true;
    desc.partition.frustum_margin = 1.0f;
    if (jw->feed) {
        desc.occlusion.feed_max_width = FEED_W;
        desc.occlusion.feed_max_height = FEED_H;
        desc.occlusion.feed_max_translation = 4.0f; /* the camera moves 2.25 a frame */
    }
    if (jobs)
        desc.jobs = *jobs;
    check(rv_world_create(&desc, &jw->world));
    rv_world *w = jw->world;
    const float t[3] = { 0.2f, 0.06f, 0.015f }, lo[3] = { -0.4f, -0.4f, -0.4f }, hi[3] = { 0.4f, 0.4f, 0.4f };
    rv_lod_ladder ladder;
    check(rv_lod_ladder_make(t, 3, &ladder));
    /* The wide group: a field of crates, most with ladders, some with test boxes. */
    rv_node field = rvt_object(w, RV_NODE_NONE, 0, 0, 0, -1), chain_top = RV_NODE_NONE;
    for (uint32_t k = 0; k < WIDE; k++) {
        rv_node n = rvt_object(w, field, (float)(k % 95) * 1.2f - 57, 0.5f, (float)(k / 95) * 1.2f - 57, 0.7f);
        if (k == WIDE / 2)
            chain_top = n;
        if (k % 5)
            check(rv_node_set_lod_ladder(w, n, &ladder));
        if (k % 3 == 0)
            check(rv_node_set_test_box(w, n, lo, hi));
    }
    /* The comb, hanging from a crate of the field (so a worker walks it): each link's first
     * child is the next link and its second a tooth, so every level waits on the stack for
     * its tooth while the walk goes deeper. Every fourth link has geometry. */
    rv_node link = chain_top;
    for (uint32_t k = 0; k < CHAIN; k++) {
        rv_node next = rvt_object(w, link, k == 0 ? 2 : 0.1f, k == 0 ? 1 : 0.01f, 0, k % 4 == 0 ? 0.5f : -1);
        rvt_object(w, link, 0, 0.3f, 0, 0.2f);
        link = next;
    }
    /* Loose nodes under random parents; some partition groups, two of them nested. */
    for (uint32_t i = 0; i < LOOSE; i++) {
        rv_node parent = i < 6 ? RV_NODE_NONE : jw->loose[rvt_next(&s) % i];
        jw->loose[i] = rvt_object(w, parent, rvt_uniform(&s, -30, 30), rvt_uniform(&s, -2, 2), rvt_uniform(&s, -30, 30),
                                  rvt_next(&s) % 3 ? rvt_uniform(&s, 0.1f, 3) : -1);
        if (i % 7 == 0)
            check(rv_node_set_lod_ladder(w, jw->loose[i], &ladder));
    }
    check(rv_update_world(w));
    uint64_t leaf = jw->seed << 20;
    const uint32_t groups[4] = { 0, 1, 8, 13 };
    for (uint32_t g = 0; g < 4; g++) {
        rv_node group = jw->loose[groups[g]], part;
        if (rv_partition_make_group(w, group) != RV_OK)
            continue; /* already inside a group's part chain: fine either way */
        check(rv_node_first_child(w, group, &part));
        for (uint32_t k = 0; k < 4 && part.id; k++) {
            uint64_t leaves[2] = { leaf, leaf + 1 };
            leaf += 2;
            check(rv_partition_set_part(w, part, leaves, 2, k % 2 == 0));
            check(rv_node_next_sibling(w, part, &part));
        }
    }
    /* An HLOD tree: a root region over regions over objects, half of them resident. */
    rv_node top = rvt_object(w, RV_NODE_NONE, -20, 1, -20, 4);
    check(rv_node_set_hlod_region(w, top, 2.0f));
    check(rv_node_set_hlod_resident(w, top, true));
    for (uint32_t r = 0; r < REGIONS; r++) {
        rv_node region = rvt_object(w, top, (float)r - 4, 0, 0, 1.5f);
        check(rv_node_set_hlod_region(w, region, 0.5f));
        check(rv_node_set_hlod_resident(w, region, r % 2 == 0));
        for (uint32_t k = 0; k < 6; k++)
            rvt_object(w, region, (float)k * 0.3f, 0, 0.5f, 0.3f);
    }
    /* Walls. */
    for (uint32_t k = 0; k < 6; k++) {
        rv_node wall;
        float mn[3], mx[3];
        wall_box(k, mn, mx);
        check(rv_node_create(w, RV_NODE_NONE, &wall));
        check(rv_node_set_occluder_box(w, wall, mn, mx));
    }
    if (churn)
        check(rv_world_journal(w, &jw->journal));
    check(rv_update_world(w));
}

static void view_at(int frame, float view[16], float projection[16], rv_view *v)
{
    float a = 0.05f * (float)frame;
    const float eye[3] = { 45.0f * cosf(a), 3.0f, 45.0f * sinf(a) }, target[3] = { 0, -1, 0 };
    rvt_look_at(eye, target, view);
    rvt_perspective(1.2f, 1.5f, 0.2f, 300.0f, projection);
    memset(v, 0, sizeof *v);
    v->view = view;
    v->projection = projection;
    v->viewport_width = 960;
    v->viewport_height = 640;
    v->time_ms = 16.0 * frame;
    v->cull_unsampled = frame % 2 == 1; /* the unsampled test runs in the object pass too */
}

/* Everything a view says but its stage times, hashed. */
static uint64_t view_fingerprint(const rv_frame_view *v)
{
    uint64_t h = rv_frame_view_digest(v);
    h = rvi_hash_bytes(h, &v->counts, sizeof v->counts);
    for (uint32_t i = 0; i < v->cull_count; i++) {
        uint64_t rec[2] = { v->culls[i].node.id & 0xFFFFFFFFFFFFull, (uint64_t)v->culls[i].reason };
        h = rvi_hash_bytes(h, rec, sizeof rec);
    }
    for (uint32_t i = 0; i < v->hlod_load_request_count; i++) {
        uint64_t id = v->hlod_load_requests[i].id & 0xFFFFFFFFFFFFull;
        h = rvi_hash_bytes(h, &id, sizeof id);
    }
    for (uint32_t i = 0; i < v->resync_request_count; i++) {
        uint64_t id = v->resync_requests[i].group.id & 0xFFFFFFFFFFFFull;
        h = rvi_hash_bytes(h, &id, sizeof id);
        for (uint32_t k = 0; k < v->resync_requests[i].part_count; k++) {
            id = v->resync_requests[i].parts[k].id & 0xFFFFFFFFFFFFull;
            h = rvi_hash_bytes(h, &id, sizeof id);
        }
    }
    uint64_t tick[2] = { (uint64_t)v->tick.mode, 0 };
    memcpy(&tick[1], &v->tick.wake_at_ms, sizeof(double));
    return rvi_hash_bytes(h, tick, sizeof tick);
}

/* This frame's changes: a few loose nodes move, projections come, change and go. */
static void churn_frame(job_world *jw, int frame, uint64_t *s)
{
    for (int k = 0; k < 6; k++) {
        rv_node n = jw->loose[rvt_next(s) % LOOSE];
        const float p[3] = { rvt_uniform(s, -30, 30), rvt_uniform(s, -2, 2), rvt_uniform(s, -30, 30) };
        check(rv_node_set_position(jw->world, n, p));
    }
    for (int k = 0; k < 4; k++) {
        uint64_t key = rvt_next(s) % 48 + 1;
        rv_projection p;
        memset(&p, 0, sizeof p);
        p.transform.position[0] = rvt_uniform(s, -25, 25);
        p.transform.position[2] = rvt_uniform(s, -25, 25);
        p.transform.rotation[3] = 1.0f;
        p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1.0f;
        p.transform.bounds[3] = rvt_uniform(s, 0.2f, 1.5f);
        p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
        p.flags = (uint32_t)(key % 4); /* hidden, translucent, both or neither */
        uint32_t incarnation = (uint32_t)(frame / 40);
        if (rvt_next(s) % 3)
            (void)rv_journal_register(jw->journal, 0, key, incarnation, &p, NULL); /* a live key is refused: fine */
        else
            (void)rv_journal_unregister(jw->journal, 0, key, incarnation, NULL);
    }
}

static uint64_t unsampled_culled; /* over every drive: the flag's frames cull something */

/* Drives a world for FRAMES frames, writing each view's fingerprint. */
static void drive(const rv_job_system *jobs, uint64_t *prints)
{
    job_world jw = { .seed = 77 };
    build(&jw, jobs, true);
    uint64_t s = 4242;
    for (int frame = 0; frame < FRAMES; frame++) {
        churn_frame(&jw, frame, &s);
        float view[16], projection[16];
        rv_view v;
        view_at(frame, view, projection, &v);
        rv_frame_view out;
        check(rv_frame(jw.world, &v, &out));
        prints[frame] = view_fingerprint(&out);
        unsampled_culled += out.counts.unsampled_culled;
    }
    rv_world_destroy(jw.world);
}

static uint64_t reference[FRAMES];

static int make_reference(void **state)
{
    (void)state;
    drive(NULL, reference);
    assert_true(unsampled_culled > 0);
    return 0;
}

static void expect_reference(const uint64_t *prints, const char *what)
{
    for (int f = 0; f < FRAMES; f++)
        if (prints[f] != reference[f])
            fail_msg("%s: frame %d differs from the frame without a job system", what, f);
}

static void test_views_equal_for_1_2_3_and_8_workers(void **state)
{
    (void)state;
    const uint32_t counts[4] = { 1, 2, 3, 8 };
    for (int k = 0; k < 4; k++) {
        rvt_pool *pool = rvt_pool_create(counts[k]);
        assert_non_null(pool);
        rv_job_system js = rvt_pool_jobs(pool);
        uint64_t prints[FRAMES];
        drive(&js, prints);
        char what[32];
        snprintf(what, sizeof what, "%u workers", counts[k]);
        expect_reference(prints, what);
        rvt_pool_destroy(pool);
    }
    /* Not vacuous: the views change over the run. */
    int changes = 0;
    for (int f = 1; f < FRAMES; f++)
        changes += reference[f] != reference[f - 1];
    assert_true(changes > FRAMES / 2);
}

static void test_views_equal_whatever_the_order_or_split_of_ranges(void **state)
{
    (void)state;
    const struct { rvt_host_order order; uint32_t workers; const char *what; } hosts[] = {
        { RVT_HOST_REVERSE, 3, "ranges in reverse order" },
        { RVT_HOST_SINGLES, 8, "ranges of one item, shuffled" },
        { RVT_HOST_WHOLE, 4, "one range, on the last worker" },
        { RVT_HOST_FORWARD, 8, "all on one thread as worker 0" },
    };
    for (size_t k = 0; k < sizeof hosts / sizeof hosts[0]; k++) {
        rvt_host host = { .order = hosts[k].order, .max_workers = hosts[k].workers, .seed = 5 + k };
        rv_job_system js = rvt_host_jobs(&host);
        uint64_t prints[FRAMES];
        drive(&js, prints);
        expect_reference(prints, hosts[k].what);
        assert_true(host.calls > (uint32_t)FRAMES); /* the frame did use it */
        rvt_host_free(&host);
    }
}

/* The walk's summaries (a world without cull records keeps them) over a long list of
 * siblings whose slots are not consecutive: crates destroyed in the list leave a gap of two
 * blocks, so the chunks the list is cut into meet at a block edge inside a group of slots,
 * and crates made afterwards take the freed slots under another parent. Far rows of the
 * field rest at "nothing" while their ends lie outside the frustum, where only a group's
 * summary passes them over. A crate moves every eighth frame (the summaries are made again).
 * The counts (nodes visited, tested) show what the summaries passed over. */
enum { FIELD = 6000, ROW = 100, GAP_AT = 3990, GAP = 32 };

static void drive_summarised(const rv_job_system *jobs, uint64_t *prints, uint64_t *visited)
{
    rv_world_desc desc = { 0 };
    desc.occlusion.width = 64;
    if (jobs)
        desc.jobs = *jobs;
    rv_world *w;
    check(rv_world_create(&desc, &w));
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    check(rv_lod_ladder_make(t, 3, &ladder));
    rv_node field = rvt_object(w, RV_NODE_NONE, 0, 0, 0, -1), other = rvt_object(w, RV_NODE_NONE, 0, 0, 0, -1);
    static rv_node crates[FIELD];
    for (uint32_t k = 0; k < FIELD; k++) {
        crates[k] = rvt_object(w, field, (float)(k % ROW) * 2.5f - 125, 0.5f, -2.5f * (float)(k / ROW), 0.7f);
        check(rv_node_set_lod_ladder(w, crates[k], &ladder));
    }
    for (uint32_t k = GAP_AT; k < GAP_AT + GAP; k++)
        check(rv_node_destroy_subtree(w, crates[k]));
    for (uint32_t k = 0; k < GAP / 2; k++) {
        rv_node n = rvt_object(w, other, (float)k * 1.5f - 20, 0.5f, 20, 0.7f);
        check(rv_node_set_lod_ladder(w, n, &ladder));
    }
    check(rv_update_world(w));
    *visited = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        if (frame % 8 == 7) {
            uint32_t k = (uint32_t)(frame * 89) % GAP_AT; /* before the gap: never destroyed */
            const float p[3] = { (float)(k % ROW) * 2.5f - 125, 0.5f + 0.01f * (float)(frame % 5), -2.5f * (float)(k / ROW) };
            check(rv_node_set_position(w, crates[k], p));
        }
        const float a = 0.35f * sinf(0.07f * (float)frame);
        const float eye[3] = { 3.0f * sinf(0.05f * (float)frame), 1.7f, 8.0f - 0.2f * (float)frame };
        const float target[3] = { eye[0] + sinf(a), 1.6f, eye[2] - cosf(a) };
        float view[16], projection[16];
        rvt_look_at(eye, target, view);
        rvt_perspective(1.2f, 1.5f, 0.2f, 300.0f, projection);
        rv_view v = { .view = view, .projection = projection, .viewport_width = 960, .viewport_height = 640,
                      .time_ms = 16.0 * frame };
        rv_frame_view out;
        check(rv_frame(w, &v, &out));
        prints[frame] = view_fingerprint(&out);
        *visited += out.counts.nodes_visited;
    }
    rv_world_destroy(w);
}

/* A scene where the order mattered: a row of 3,000 laddered crates with a gap of two blocks
 * near its start (its first chunk ends at a block edge inside a group), 40 small roots before
 * it whose children take the freed slots, and two cameras down the row. With the group's
 * summary made by whichever chunk ran last, the second frame passed over more of the row
 * when the chunks ran in list order than in reverse. */
static float row_uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((rvt_next(s) >> 40) / (double)(1ull << 24));
}

static void row_look(const float eye[3], float yaw, float pitch, float view[16])
{
    float fx = sinf(yaw) * cosf(pitch), fy = sinf(pitch), fz = -cosf(yaw) * cosf(pitch);
    const float target[3] = { eye[0] + fx, eye[1] + fy, eye[2] + fz };
    rvt_look_at(eye, target, view);
}

static void drive_row(const rv_job_system *jobs, uint64_t prints[2])
{
    rv_world_desc desc = { 0 };
    if (jobs)
        desc.jobs = *jobs;
    rv_world *w;
    check(rv_world_create(&desc, &w));
    uint64_t s = 1;
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    check(rv_lod_ladder_make(t, 3, &ladder));
    static rv_node kids[3000];
    rv_node row;
    check(rv_node_create(w, RV_NODE_NONE, &row));
    for (int i = 0; i < 3000; i++) {
        kids[i] = rvt_object(w, row, 1.5f * (float)i, row_uniform(&s, 0, 1), row_uniform(&s, -1, 1) - 20,
                             row_uniform(&s, 0.2f, 0.6f));
        check(rv_node_set_lod_ladder(w, kids[i], &ladder));
    }
    for (int g = 0; g < 32; g++)
        check(rv_node_destroy_subtree(w, kids[10 + g]));
    for (int k = 0; k < 40; k++) {
        rv_node root = rvt_object(w, RV_NODE_NONE, row_uniform(&s, -100, 100), 0, row_uniform(&s, 0, 60), -1);
        for (int c = 0; c < 3; c++)
            rvt_object(w, root, (float)c, 0, 0, 0.5f);
    }
    check(rv_node_detach(w, row)); /* the row after the 40 roots */
    const float cams[2][5] = { { 1863.6958f, 11.5848722f, 64.4867401f, 1.32327247f, -0.277257264f },
                               { 1881.30469f, 26.7837601f, -1.92634201f, -2.31293726f, -0.0989589095f } };
    float projection[16];
    rvt_perspective(1.0f, 16.0f / 9.0f, 0.1f, 2000.0f, projection);
    for (int f = 0; f < 2; f++) {
        float view[16];
        row_look(cams[f], cams[f][3], cams[f][4], view);
        rv_view v = { .view = view, .projection = projection, .viewport_width = 1280, .viewport_height = 720,
                      .time_ms = 16.0 * f };
        rv_frame_view out;
        check(rv_frame(w, &v, &out));
        prints[f] = view_fingerprint(&out);
    }
    rv_world_destroy(w);
}

static void test_summaries_the_same_whatever_runs_first(void **state)
{
    (void)state;
    static uint64_t want[FRAMES], got[FRAMES];
    uint64_t visited, n;
    drive_summarised(NULL, want, &visited);
    /* Not vacuous: the summaries pass a third of the field over (about half, measured). */
    assert_true(visited < (uint64_t)FRAMES * (FIELD - GAP) * 2 / 3);
    const struct { rvt_host_order order; uint32_t workers; const char *what; } hosts[] = {
        { RVT_HOST_REVERSE, 3, "ranges in reverse order" },
        { RVT_HOST_SINGLES, 8, "ranges of one item, shuffled" },
        { RVT_HOST_FORWARD, 1, "all on one thread as worker 0" },
    };
    for (size_t k = 0; k < sizeof hosts / sizeof hosts[0]; k++) {
        rvt_host host = { .order = hosts[k].order, .max_workers = hosts[k].workers, .seed = 31 + k };
        rv_job_system js = rvt_host_jobs(&host);
        drive_summarised(&js, got, &n);
        for (int f = 0; f < FRAMES; f++)
            if (got[f] != want[f])
                fail_msg("%s: frame %d (view or counts) differs from the frame without a job system", hosts[k].what, f);
        rvt_host_free(&host);
    }
    /* Two threads at once (ThreadSanitizer watches the summaries in CI). */
    rvt_pool *pool = rvt_pool_create(2);
    assert_non_null(pool);
    rv_job_system js = rvt_pool_jobs(pool);
    drive_summarised(&js, got, &n);
    for (int f = 0; f < FRAMES; f++)
        if (got[f] != want[f])
            fail_msg("2 workers: frame %d (view or counts) differs from the frame without a job system", f);
    rvt_pool_destroy(pool);
    uint64_t row_want[2], row_got[2];
    drive_row(NULL, row_want);
    const rvt_host_order orders[2] = { RVT_HOST_FORWARD, RVT_HOST_REVERSE };
    for (int k = 0; k < 2; k++) {
        rvt_host host = { .order = orders[k], .max_workers = 1 };
        rv_job_system row_js = rvt_host_jobs(&host);
        drive_row(&row_js, row_got);
        for (int f = 0; f < 2; f++)
            if (row_got[f] != row_want[f])
                fail_msg("the row, %s: frame %d (view or counts) differs from the frame without a job system",
                         k ? "ranges in reverse order" : "ranges in order", f);
        rvt_host_free(&host);
    }
}

static uint64_t allocations_of(const rv_world *w)
{
    rv_alloc_stats a = rv_world_alloc_stats(w);
    return a.allocations + a.reallocations;
}

static void test_steady_frames_with_workers_allocate_nothing(void **state)
{
    (void)state;
    const uint32_t counts[2] = { 2, 8 };
    for (int k = 0; k < 2; k++) {
        rvt_pool *pool = rvt_pool_create(counts[k]);
        assert_non_null(pool);
        rv_job_system js = rvt_pool_jobs(pool);
        job_world jw = { .seed = 9 };
        build(&jw, &js, false);
        /* The camera goes round twice along the same path: the second round is steady. */
        uint64_t before = 0;
        for (int frame = 0; frame < 2 * FRAMES; frame++) {
            if (frame == FRAMES)
                before = allocations_of(jw.world);
            float view[16], projection[16];
            rv_view v;
            view_at(frame % FRAMES, view, projection, &v);
            v.time_ms = 16.0 * frame;
            rv_frame_view out;
            check(rv_frame(jw.world, &v, &out));
        }
        assert_true(before > 0);
        assert_int_equal(allocations_of(jw.world), before);
        rv_world_destroy(jw.world);
        rvt_pool_destroy(pool);
    }
}

/* A host that breaks the contract once: that frame answers RV_ERR_INVARIANT (rv_frame
 * aborts it), and the next frames run. SWAP runs one item twice and skips another, so the
 * number of items run still adds up: only the per-item coverage sees it. The EXTRA_ faults
 * cover every item once and hand over one range more that is not run: it is reported too. */
static void test_a_job_system_that_breaks_its_contract_is_reported(void **state)
{
    (void)state;
    const int faults[7] = { RVT_FAULT_BAD_WORKER,       RVT_FAULT_SKIP,        RVT_FAULT_TWICE,       RVT_FAULT_SWAP,
                            RVT_FAULT_EXTRA_BAD_WORKER, RVT_FAULT_EXTRA_EMPTY, RVT_FAULT_EXTRA_BEYOND };
    for (int k = 0; k < 7; k++) {
        for (uint32_t call = 1; call <= 4; call++) {
            rvt_host host = { .order = RVT_HOST_FORWARD, .max_workers = 2 };
            host.fault = faults[k];
            rv_job_system js = rvt_host_jobs(&host);
            job_world jw = { .seed = 3 };
            build(&jw, &js, false);
            float view[16], projection[16];
            rv_view v;
            view_at(0, view, projection, &v);
            rv_frame_view out;
            check(rv_frame(jw.world, &v, &out)); /* warms up */
            host.fault_call = host.calls + call;  /* the call-th parallel-for of the next frame */
            v.time_ms += 16;
            assert_int_equal(rv_frame(jw.world, &v, &out), RV_ERR_INVARIANT);
            v.time_ms += 16;
            check(rv_frame(jw.world, &v, &out));
            assert_true(rv_frame_view_is_valid(jw.world, &out));
            rv_world_destroy(jw.world);
        }
    }
}

/* A host that runs ranges on four threads at once, all as worker 0 (two ranges that run at
 * the same time share a worker): a range handed to a worker that is running one already is
 * refused, never run beside it, so the frame answers RV_ERR_INVARIANT or, where no two
 * ranges happened to overlap, the frame a world without a job system makes. A refused
 * frame may have run some passes (LOD state moves on) before the refusal, so each trial
 * starts from twin worlds that ran the same frames serially (the host runs every range on
 * the calling thread until it is told to share). Two threads writing one worker's streams
 * used to overrun the gathered records (ASan) or publish lists with holes and repeats. */
enum { SHARING_THREADS = 4, SHARING_TRIALS = 6 };

typedef struct sharing_host {
    bool share;              /* four threads as worker 0; else every range on the caller */
    rv_job_fn job;
    void *context;
    uint32_t count;
    atomic_uint next;
} sharing_host;

static void *sharing_thread(void *arg)
{
    sharing_host *h = arg;
    for (uint32_t b; (b = atomic_fetch_add(&h->next, 1)) < h->count;)
        h->job(h->context, 0, b, b + 1);
    return NULL;
}

static void sharing_parallel_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    sharing_host *h = user;
    if (!h->share) {
        for (uint32_t b = 0; b < count; b += grain)
            job(context, 0, b, count - b > grain ? b + grain : count);
        return;
    }
    h->job = job;
    h->context = context;
    h->count = count;
    atomic_store(&h->next, 0);
    pthread_t t[SHARING_THREADS];
    for (int i = 0; i < SHARING_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, sharing_thread, h), 0);
    for (int i = 0; i < SHARING_THREADS; i++)
        pthread_join(t[i], NULL);
}

static void test_ranges_that_share_a_worker_at_once_are_refused(void **state)
{
    (void)state;
    uint32_t refused = 0, equal = 0;
    for (int trial = 0; trial < SHARING_TRIALS; trial++) {
        sharing_host host;
        memset(&host, 0, sizeof host);
        rv_job_system js = { sharing_parallel_for, &host, SHARING_THREADS };
        job_world shared = { .seed = 77 }, twin = { .seed = 77 };
        build(&shared, &js, false);
        build(&twin, NULL, false);
        rv_frame_view got, want;
        for (int frame = 0; frame <= trial; frame++) {
            float view[16], projection[16];
            rv_view v;
            view_at(frame, view, projection, &v);
            host.share = frame == trial;
            rv_result r = rv_frame(shared.world, &v, &got);
            check(rv_frame(twin.world, &v, &want));
            if (!host.share) {
                check(r);
                continue;
            }
            if (r == RV_ERR_INVARIANT) {
                refused++;
                continue;
            }
            check(r);
            if (view_fingerprint(&got) != view_fingerprint(&want))
                fail_msg("trial %d: published a view the world without a job system does not", trial);
            equal++;
        }
        rv_world_destroy(shared.world);
        rv_world_destroy(twin.world);
    }
    print_message("ranges sharing a worker: %u frames refused, %u equal to the serial world's\n", refused, equal);
    assert_int_equal(refused + equal, SHARING_TRIALS);
}

/* A host whose parallel_for edits the world's hierarchy before running the jobs: every
 * structural call is refused while the jobs may be reading the links, and the frames equal
 * those of a world without a job system. */
typedef struct meddler {
    rv_world *world;
    rv_node victim;
    uint32_t calls, refused, accepted;
} meddler;

static void meddle(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    meddler *m = user;
    m->calls++;
    rv_node n = RV_NODE_NONE;
    const rv_result tries[5] = { rv_node_create(m->world, RV_NODE_NONE, &n),
                                 rv_node_destroy_subtree(m->world, m->victim), rv_node_detach(m->world, m->victim),
                                 rv_update_world(m->world), rv_group_spatially(m->world, m->victim, NULL, 0, 0, NULL) };
    for (int k = 0; k < 5; k++) {
        m->refused += tries[k] == RV_ERR_BAD_STATE;
        m->accepted += tries[k] == RV_OK;
    }
    for (uint32_t b = 0; b < count; b += grain)
        job(context, 0, b, count - b > grain ? b + grain : count);
}

static void test_a_parallel_for_cannot_edit_the_hierarchy_under_the_jobs(void **state)
{
    (void)state;
    meddler m = { 0 };
    rv_job_system js = { meddle, &m, 2 };
    job_world served = { .seed = 11 }, plain = { .seed = 11 };
    build(&served, &js, false);
    build(&plain, NULL, false);
    m.world = served.world;
    check(rv_node_create(served.world, RV_NODE_NONE, &m.victim));
    rv_node twin;
    check(rv_node_create(plain.world, RV_NODE_NONE, &twin));
    for (int frame = 0; frame < 8; frame++) {
        float view[16], projection[16];
        rv_view v;
        view_at(frame, view, projection, &v);
        rv_frame_view a, b;
        check(rv_frame(served.world, &v, &a));
        check(rv_frame(plain.world, &v, &b));
        assert_int_equal(view_fingerprint(&a), view_fingerprint(&b));
    }
    assert_true(m.calls > 8);
    assert_int_equal(m.accepted, 0);
    assert_int_equal(m.refused, 5 * m.calls);
    /* Outside the frame the same calls are taken again. */
    check(rv_node_detach(served.world, m.victim));
    rv_world_destroy(served.world);
    rv_world_destroy(plain.world);
}

/* ---- a world with a depth feed -------------------------------------------------------------- */

/* What a depth pre-pass of frame `frame`'s camera holds: the ground (y = 0) and the walls,
 * ray-cast through each texel's centre (OpenGL clip, window depth, 1 where nothing is hit).
 * vp receives the camera's view-projection. */
static void render_feed(int frame, float *depth, float vp_out[16])
{
    float view[16], projection[16];
    rv_view v;
    view_at(frame, view, projection, &v);
    mat4 p, vw, vp, inv;
    memcpy(p, projection, sizeof p);
    memcpy(vw, view, sizeof vw);
    glm_mat4_mul(p, vw, vp);
    glm_mat4_inv(vp, inv);
    memcpy(vp_out, vp, 16 * sizeof(float));
    for (int j = 0; j < FEED_H; j++)
        for (int i = 0; i < FEED_W; i++) {
            float x = -1.0f + (2.0f * (float)i + 1.0f) / FEED_W, y = 1.0f - (2.0f * (float)j + 1.0f) / FEED_H;
            vec4 a = { x, y, -1, 1 }, b = { x, y, 1, 1 }, pa, pb;
            glm_mat4_mulv(inv, a, pa);
            glm_mat4_mulv(inv, b, pb);
            double o[3], d[3], t_hit = INFINITY;
            for (int k = 0; k < 3; k++) {
                o[k] = (double)pa[k] / pa[3];
                d[k] = (double)pb[k] / pb[3] - o[k];
            }
            if (d[1] != 0) {
                double t = -o[1] / d[1];
                if (t >= 0 && t <= 1)
                    t_hit = t;
            }
            for (uint32_t k = 0; k < 6; k++) { /* slabs */
                float mn[3], mx[3];
                wall_box(k, mn, mx);
                double t0 = 0, t1 = 1;
                for (int c = 0; c < 3 && t0 <= t1; c++) {
                    if (d[c] == 0) {
                        if (o[c] < mn[c] || o[c] > mx[c])
                            t0 = 2;
                        continue;
                    }
                    double u = (mn[c] - o[c]) / d[c], w = (mx[c] - o[c]) / d[c];
                    t0 = fmax(t0, fmin(u, w));
                    t1 = fmin(t1, fmax(u, w));
                }
                if (t0 <= t1 && t0 < t_hit)
                    t_hit = t0;
            }
            float z = 1.0f;
            if (t_hit <= 1) {
                vec4 hit = { (float)(o[0] + t_hit * d[0]), (float)(o[1] + t_hit * d[1]), (float)(o[2] + t_hit * d[2]), 1 },
                     clip;
                glm_mat4_mulv(vp, hit, clip);
                z = fminf(1.0f, fmaxf(0.0f, 0.5f * clip[2] / clip[3] + 0.5f));
            }
            depth[j * FEED_W + i] = z;
        }
}

typedef struct fed_run {
    uint64_t prints[FRAMES];
    uint64_t reprojected, hidden_by_feed, feeds_used;
} fed_run;

/* Drives the fed world: each frame takes the depth of the frame before (age 1). A frame's
 * print adds the buffer's level-0 texels and the feed's counters to the view's. */
static void drive_fed(const rv_job_system *jobs, fed_run *run)
{
    static float depth[FEED_W * FEED_H];
    float feed_vp[16];
    job_world jw = { .seed = 77, .feed = true };
    build(&jw, jobs, false);
    memset(run, 0, sizeof *run);
    for (int frame = 0; frame < FRAMES; frame++) {
        float view[16], projection[16];
        rv_view v;
        view_at(frame, view, projection, &v);
        check(rv_frame_begin(jw.world, &v));
        if (frame > 0) {
            rv_depth_feed feed = { .texels = depth, .width = FEED_W, .height = FEED_H,
                                   .format = RV_DEPTH_FLOAT32, .view_projection = feed_vp, .age = 1 };
            check(rv_frame_feed_depth(jw.world, &feed));
        }
        check(rv_frame_cull(jw.world));
        rv_frame_view out;
        check(rv_frame_end(jw.world, &out));
        const rv_occlusion *occ = rv_world_occlusion(jw.world);
        rv_occlusion_feed_stats st = rv_occlusion_get_feed_stats(occ);
        uint64_t h = view_fingerprint(&out);
        h = rvi_hash_bytes(h, occ->texels, (size_t)occ->width * occ->height * sizeof(float));
        h = rvi_hash_bytes(h, &st, sizeof st);
        run->prints[frame] = h;
        run->reprojected += st.texels_reprojected;
        run->hidden_by_feed += st.objects_hidden_by_feed;
        run->feeds_used += st.feeds_used;
        render_feed(frame, depth, feed_vp);
    }
    rv_world_destroy(jw.world);
}

static void expect_fed(const fed_run *got, const fed_run *want, const char *what)
{
    for (int f = 0; f < FRAMES; f++)
        if (got->prints[f] != want->prints[f])
            fail_msg("%s: frame %d (buffer, feed counters or view) differs from the frame without a job system", what,
                     f);
}

/* With a depth feed the buffer, the feed's counters (objects hidden by the feed alone are
 * counted by the workers' tests) and the view are those of the world without a job system,
 * whatever the worker count or the host's order. */
static void test_the_feed_is_the_same_on_any_workers(void **state)
{
    (void)state;
    static fed_run want, got;
    drive_fed(NULL, &want);
    /* Not vacuous: the feed is used, proves texels and hides objects the walls alone do not. */
    assert_true(want.feeds_used > FRAMES / 2);
    assert_true(want.reprojected > 0);
    assert_true(want.hidden_by_feed > 0);
    const uint32_t counts[3] = { 1, 2, 8 };
    for (int k = 0; k < 3; k++) {
        rvt_pool *pool = rvt_pool_create(counts[k]);
        assert_non_null(pool);
        rv_job_system js = rvt_pool_jobs(pool);
        drive_fed(&js, &got);
        char what[32];
        snprintf(what, sizeof what, "%u workers", counts[k]);
        expect_fed(&got, &want, what);
        rvt_pool_destroy(pool);
    }
    const rvt_host_order orders[2] = { RVT_HOST_REVERSE, RVT_HOST_SINGLES };
    for (int k = 0; k < 2; k++) {
        rvt_host host = { .order = orders[k], .max_workers = 3, .seed = 21 + (uint64_t)k };
        rv_job_system js = rvt_host_jobs(&host);
        drive_fed(&js, &got);
        expect_fed(&got, &want, k == 0 ? "ranges in reverse order" : "ranges of one item, shuffled");
        rvt_host_free(&host);
    }
}

/* A walk item whose subtrees write more records than the room a worker starts a frame with
 * hands the rest of its walk back (at its own level and at every level above it) to be
 * walked as items of their own. The field is made so that the first frame's items do: a
 * list of 2,400 groups is cut into chunks of about a thousand, each walked whole, and each
 * group holds five objects, in every fourth group one of them a comb twelve links deep (two
 * teeth a link), so a chunk writes several times the starting room and the comb puts the
 * point where it runs out inside deeper levels too. Whatever the job system, every object with geometry must be drawn, in the first
 * frame (which runs out) and the next (whose room has grown). */
enum { YIELD_GROUPS = 2400, YIELD_LEAVES = 5, YIELD_CHAIN = 12 };

static int node_order(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void expect_every_object_drawn(rv_world *w, const uint64_t *expected, uint32_t expected_count,
                                      uint64_t *drawn, int frames)
{
    for (int frame = 0; frame < frames; frame++) {
        rvt_camera cam;
        const float eye[3] = { 0.5f, 150.0f, 0.25f }, target[3] = { 0, 0, 0 };
        rvt_camera_make(&cam, eye, target, 1.2f, 16.0 * frame);
        rv_frame_view out;
        check(rv_frame(w, &cam.v, &out));
        assert_int_equal(out.opaque_count, expected_count);
        for (uint32_t i = 0; i < out.opaque_count; i++)
            drawn[i] = out.opaque[i].node.id;
        qsort(drawn, out.opaque_count, sizeof *drawn, node_order);
        for (uint32_t i = 0; i < expected_count; i++)
            if (drawn[i] != expected[i])
                fail_msg("frame %d: object %u of %u missing or drawn twice", frame, i, expected_count);
    }
}

static void test_a_walk_item_that_outgrows_its_room_hands_back_the_rest_and_loses_nothing(void **state)
{
    (void)state;
    const uint32_t most = YIELD_GROUPS * (1 + YIELD_LEAVES + 3 * YIELD_CHAIN);
    uint64_t *expected = malloc(sizeof(uint64_t) * most), *drawn = malloc(sizeof(uint64_t) * most);
    assert_non_null(expected);
    assert_non_null(drawn);
    rvt_host reverse = { .order = RVT_HOST_REVERSE, .max_workers = 3 };
    rvt_host singles = { .order = RVT_HOST_SINGLES, .max_workers = 2, .seed = 9 };
    rvt_pool *pool = rvt_pool_create(2);
    rv_job_system systems[4] = { { 0 }, rvt_host_jobs(&reverse), rvt_host_jobs(&singles), { 0 } };
    uint32_t system_count = 3;
    if (pool)
        systems[system_count++] = rvt_pool_jobs(pool);
    for (uint32_t k = 0; k < system_count; k++) {
        rv_world_desc desc = { 0 };
        desc.jobs = systems[k];
        rv_world *w = rvt_world(&desc);
        rv_node root = rvt_node(w, RV_NODE_NONE);
        uint32_t count = 0;
        for (uint32_t g = 0; g < YIELD_GROUPS; g++) {
            rv_node group = rvt_object(w, root, (float)(g % 60) * 2 - 60, 0, (float)(g / 60) * 2 - 40, 0.4f);
            expected[count++] = group.id;
            for (uint32_t l = 0; l < YIELD_LEAVES; l++) {
                rv_node leaf = rvt_object(w, group, 0.3f * (float)l - 0.6f, 0.2f, 0, 0.1f);
                expected[count++] = leaf.id;
                if (g % 4 == 0 && l == 2)
                    for (uint32_t c = 0; c < YIELD_CHAIN; c++) {
                        for (uint32_t t = 0; t < 2; t++)
                            expected[count++] = rvt_object(w, leaf, 0.02f * (float)t, 0, 0.01f, 0.02f).id;
                        leaf = rvt_object(w, leaf, 0, 0.01f, 0, c % 3 == 0 ? 0.05f : -1);
                        if (c % 3 == 0)
                            expected[count++] = leaf.id;
                    }
            }
        }
        qsort(expected, count, sizeof *expected, node_order);
        expect_every_object_drawn(w, expected, count, drawn, 2);
        rv_world_destroy(w);
    }
    rvt_pool_destroy(pool);
    rvt_host_free(&reverse);
    rvt_host_free(&singles);
    free(expected);
    free(drawn);
}

/* HLOD load requests from a long list of regions (cut into chunks walked as separate
 * items): the same list whatever the job system, in rv_hlod_select's order (largest
 * screen-space error first, then nearest, then lowest node id), not in the order the
 * walk's items met them. The view gives its eye and fov_y, so both compute the same
 * errors. */
enum { LOAD_REGIONS = 3000 };

/* Which region of the list n is (each world tags its handles: compare places, not ids). */
static uint64_t region_number(const rv_node *regions, rv_node n)
{
    for (uint64_t i = 0; i < LOAD_REGIONS; i++)
        if (rv_node_equal(regions[i], n))
            return i;
    return UINT64_MAX;
}

/* The frame's load requests as region numbers into numbers, and with select_numbers,
 * rv_hlod_select's loads in the same view; the request count. */
static uint32_t frame_loads(const rv_job_system *jobs, uint64_t *numbers, uint64_t *select_numbers,
                            uint32_t *select_count)
{
    static rv_node regions[LOAD_REGIONS];
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f;
    if (jobs)
        desc.jobs = *jobs;
    rv_world *w = rvt_world(&desc);
    rv_node root = rvt_node(w, RV_NODE_NONE);
    for (uint32_t i = 0; i < LOAD_REGIONS; i++) {
        float depth = 5.0f + (float)(i / 60) * 4.0f, across = ((float)(i % 60) - 29.5f) / 30.0f;
        rv_node region = regions[i] = rvt_object(w, root, across * 0.8f * depth, 0.0f, -depth, 0.5f);
        check(rv_node_set_hlod_region(w, region, 0.5f + (float)((i * 37u) % 101u) * 0.05f));
        check(rv_node_set_hlod_resident(w, region, true));
        rv_node child = rvt_object(w, region, 0, 0, 0, 0.25f);
        check(rv_node_set_hlod_region(w, child, 0.0f));
    }
    /* 90 degrees, square, looking down -z from the origin. */
    const float vp[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
    const float eye[3] = { 0, 0, 0 };
    rv_view v = { .view_projection = vp, .eye = eye, .viewport_width = 1000, .viewport_height = 1000,
                  .fov_y = 1.5707964f };
    rv_frame_view out;
    check(rv_frame(w, &v, &out));
    for (uint32_t i = 0; i < out.hlod_load_request_count; i++)
        numbers[i] = region_number(regions, out.hlod_load_requests[i]);
    uint32_t count = out.hlod_load_request_count;
    if (select_numbers) {
        rv_lod_view lv = { .eye = { 0, 0, 0 }, .fov_y = 1.5707964f, .viewport_height_px = 1000 };
        rv_hlod_result cut;
        check(rv_hlod_select(w, root, &lv, &out.frustum, 0.0f, &cut));
        for (uint32_t i = 0; i < cut.load_count; i++)
            select_numbers[i] = region_number(regions, cut.loads[i].region);
        *select_count = cut.load_count;
    }
    rv_world_destroy(w);
    return count;
}

static void test_hlod_load_requests_the_same_on_any_workers_most_urgent_first(void **state)
{
    (void)state;
    uint64_t *alone = malloc(sizeof(uint64_t) * LOAD_REGIONS), *select = malloc(sizeof(uint64_t) * LOAD_REGIONS),
             *numbers = malloc(sizeof(uint64_t) * LOAD_REGIONS);
    assert_non_null(alone);
    assert_non_null(select);
    assert_non_null(numbers);
    uint32_t select_count = 0;
    uint32_t count = frame_loads(NULL, alone, select, &select_count);
    assert_true(count > 500 && count < LOAD_REGIONS); /* not vacuous: many, not all */
    assert_int_equal(count, select_count);
    for (uint32_t i = 0; i < count; i++)
        if (alone[i] == UINT64_MAX || alone[i] != select[i])
            fail_msg("load request %u of %u is not rv_hlod_select's", i, count);
    rvt_host reverse = { .order = RVT_HOST_REVERSE, .max_workers = 3 };
    rvt_host singles = { .order = RVT_HOST_SINGLES, .max_workers = 8, .seed = 4 };
    rv_job_system systems[4] = { rvt_host_jobs(&reverse), rvt_host_jobs(&singles) };
    const char *what[4] = { "ranges in reverse order", "ranges of one item, shuffled", "1 worker", "2 workers" };
    rvt_pool *pools[2] = { rvt_pool_create(1), rvt_pool_create(2) };
    for (int k = 0; k < 2; k++) {
        assert_non_null(pools[k]);
        systems[2 + k] = rvt_pool_jobs(pools[k]);
    }
    for (int k = 0; k < 4; k++) {
        uint32_t n = frame_loads(&systems[k], numbers, NULL, NULL);
        assert_int_equal(n, count);
        for (uint32_t i = 0; i < count; i++)
            if (numbers[i] != alone[i])
                fail_msg("%s: load request %u differs from the frame without a job system", what[k], i);
    }
    assert_true(reverse.calls > 0 && singles.calls > 0);
    for (int k = 0; k < 2; k++)
        rvt_pool_destroy(pools[k]);
    rvt_host_free(&reverse);
    rvt_host_free(&singles);
    free(alone);
    free(select);
    free(numbers);
}

/* The same for regions asking for the children of the regions without geometry of their
 * own under them: LOAD_REGIONS / 3 regions, each over three such groups over a child that is
 * not resident. The frame's requests (group numbers into numbers): every group at once, the
 * same list whatever the job system. */
static uint32_t group_loads(const rv_job_system *jobs, uint64_t *numbers)
{
    static rv_node groups[LOAD_REGIONS];
    rv_world_desc desc = { 0 };
    desc.lod.crossfade_ms = -1.0f;
    if (jobs)
        desc.jobs = *jobs;
    rv_world *w = rvt_world(&desc);
    rv_node root = rvt_node(w, RV_NODE_NONE);
    for (uint32_t i = 0; i < LOAD_REGIONS / 3; i++) {
        float depth = 5.0f + (float)(i / 60) * 4.0f, across = ((float)(i % 60) - 29.5f) / 30.0f;
        rv_node region = rvt_object(w, root, across * 0.8f * depth, 0.0f, -depth, 0.5f);
        check(rv_node_set_hlod_region(w, region, 0.5f + (float)((i * 37u) % 101u) * 0.05f));
        check(rv_node_set_hlod_resident(w, region, true));
        for (uint32_t j = 0; j < 3; j++) {
            rv_node group = groups[3 * i + j] = rvt_node(w, region);
            check(rv_node_set_hlod_region(w, group, 0.25f));
            check(rv_node_set_hlod_resident(w, group, true));
            rv_node child = rvt_object(w, group, 0, 0, 0, 0.25f);
            check(rv_node_set_hlod_region(w, child, 0.0f));
        }
    }
    const float vp[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.0002f, -1, 0, 0, -0.20002f, 0 };
    const float eye[3] = { 0, 0, 0 };
    rv_view v = { .view_projection = vp, .eye = eye, .viewport_width = 1000, .viewport_height = 1000,
                  .fov_y = 1.5707964f };
    rv_frame_view out;
    check(rv_frame(w, &v, &out));
    for (uint32_t i = 0; i < out.hlod_load_request_count; i++)
        numbers[i] = region_number(groups, out.hlod_load_requests[i]);
    uint32_t count = out.hlod_load_request_count;
    rv_world_destroy(w);
    return count;
}

static void test_hlod_loads_under_regions_without_geometry_the_same_on_any_workers(void **state)
{
    (void)state;
    uint64_t *alone = malloc(sizeof(uint64_t) * LOAD_REGIONS), *numbers = malloc(sizeof(uint64_t) * LOAD_REGIONS);
    assert_non_null(alone);
    assert_non_null(numbers);
    uint32_t count = group_loads(NULL, alone);
    assert_true(count > 1500 && count % 3 == 0); /* not vacuous: many regions, every group of each */
    bool *seen = calloc(LOAD_REGIONS, sizeof *seen);
    assert_non_null(seen);
    for (uint32_t i = 0; i < count; i++) {
        assert_true(alone[i] < LOAD_REGIONS);
        assert_false(seen[alone[i]]); /* each once */
        seen[alone[i]] = true;
    }
    for (uint32_t i = 0; i < count; i++) /* a region asks for its three groups together */
        assert_true(seen[alone[i] / 3 * 3] && seen[alone[i] / 3 * 3 + 1] && seen[alone[i] / 3 * 3 + 2]);
    rvt_host reverse = { .order = RVT_HOST_REVERSE, .max_workers = 3 };
    rvt_host singles = { .order = RVT_HOST_SINGLES, .max_workers = 8, .seed = 4 };
    rv_job_system systems[4] = { rvt_host_jobs(&reverse), rvt_host_jobs(&singles) };
    const char *what[4] = { "ranges in reverse order", "ranges of one item, shuffled", "1 worker", "2 workers" };
    rvt_pool *pools[2] = { rvt_pool_create(1), rvt_pool_create(2) };
    for (int k = 0; k < 2; k++) {
        assert_non_null(pools[k]);
        systems[2 + k] = rvt_pool_jobs(pools[k]);
    }
    for (int k = 0; k < 4; k++) {
        uint32_t n = group_loads(&systems[k], numbers);
        assert_int_equal(n, count);
        for (uint32_t i = 0; i < count; i++)
            if (numbers[i] != alone[i])
                fail_msg("%s: load request %u differs from the frame without a job system", what[k], i);
    }
    assert_true(reverse.calls > 0 && singles.calls > 0);
    for (int k = 0; k < 2; k++)
        rvt_pool_destroy(pools[k]);
    rvt_host_free(&reverse);
    rvt_host_free(&singles);
    free(seen);
    free(alone);
    free(numbers);
}

static void test_world_refuses_more_workers_than_rvis_keeps_scratch_for(void **state)
{
    (void)state;
    rvt_host host = { .order = RVT_HOST_FORWARD, .max_workers = RV_MAX_WORKERS + 1 };
    rv_world_desc desc = { 0 };
    desc.jobs = rvt_host_jobs(&host);
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&desc, &w), RV_ERR_INVALID_ARG);
    assert_null(w);
    desc.jobs.max_workers = RV_MAX_WORKERS;
    check(rv_world_create(&desc, &w));
    rv_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_equal_for_1_2_3_and_8_workers),
        cmocka_unit_test(test_views_equal_whatever_the_order_or_split_of_ranges),
        cmocka_unit_test(test_summaries_the_same_whatever_runs_first),
        cmocka_unit_test(test_steady_frames_with_workers_allocate_nothing),
        cmocka_unit_test(test_a_job_system_that_breaks_its_contract_is_reported),
        cmocka_unit_test(test_ranges_that_share_a_worker_at_once_are_refused),
        cmocka_unit_test(test_a_parallel_for_cannot_edit_the_hierarchy_under_the_jobs),
        cmocka_unit_test(test_world_refuses_more_workers_than_rvis_keeps_scratch_for),
        cmocka_unit_test(test_a_walk_item_that_outgrows_its_room_hands_back_the_rest_and_loses_nothing),
        cmocka_unit_test(test_hlod_load_requests_the_same_on_any_workers_most_urgent_first),
        cmocka_unit_test(test_hlod_loads_under_regions_without_geometry_the_same_on_any_workers),
        cmocka_unit_test(test_the_feed_is_the_same_on_any_workers),
    };
    return cmocka_run_group_tests(tests, make_reference, NULL);
}
