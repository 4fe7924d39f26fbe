/* rv_world_set_occlusion: the main view's occlusion buffer changed between frames (suite
 * frame). The scene is a row of walls with gaps between them, clusters of crates on pallets
 * behind it and crates before it; an object counts as truly hidden only when its whole box
 * lies in the shadow of one wall as seen from the eye (the gaps are wider than anything two
 * walls could hide together), which is what a world that culls by frustum alone is compared
 * against. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "support/rvt.h"
#include "support/rvt_jobs.h"
#include "support/rvt_scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scene ----------------------------------------------------------------------------- */

enum { WALLS = 4, ROWS = 6, COLUMNS = 15, PER_CLUSTER = 4, FRONT = 8 };
enum { CLUSTERS = ROWS * COLUMNS, CRATES = CLUSTERS * PER_CLUSTER + FRONT, OBJECTS = CRATES + CLUSTERS };

/* Walls at z -21..-20, 6 units tall, with gaps 4 units wide between them. */
static const float wall_x[WALLS][2] = { { -30, -17 }, { -13, -2 }, { 2, 13 }, { 17, 30 } };
static const float wall_y[2] = { -1, 5 }, wall_z[2] = { -21, -20 };
static const float crate_half[3] = { 0.5f, 0.5f, 0.5f }; /* a crate is this box about its centre */
/* A cluster's own geometry: a pallet under its four crates, this box about its origin. */
static const float pallet_half[3] = { 1.4f, 0.1f, 1.4f };

typedef struct scene {
    rv_world *world;
    rvt_alloc counter;
    rv_node city;
    rv_node walls[WALLS];
    float wall_lift[WALLS];    /* y offset of each wall's node */
    float object_at[OBJECTS][3];   /* world centre of each crate, then of each pallet */
    float object_half[OBJECTS][3]; /* its half extents */
} scene;

static void place_wall(scene *s, int k, float lift)
{
    const float min[3] = { wall_x[k][0], wall_y[0], wall_z[0] }, max[3] = { wall_x[k][1], wall_y[1], wall_z[1] };
    assert_int_equal(rv_node_set_occluder_box(s->world, s->walls[k], min, max), RV_OK);
    rvt_set_position(s->world, s->walls[k], 0, lift, 0);
    s->wall_lift[k] = lift;
}

static void add_crate(scene *s, rv_node parent, uint32_t index, const float local[3], const float world[3])
{
    rv_node n = rvt_object(s->world, parent, local[0], local[1], local[2], 0.87f);
    const float lo[3] = { -crate_half[0], -crate_half[1], -crate_half[2] };
    assert_int_equal(rv_node_set_test_box(s->world, n, lo, crate_half), RV_OK);
    assert_int_equal(rv_node_set_key(s->world, n, index + 1), RV_OK);
    memcpy(s->object_at[index], world, sizeof s->object_at[index]);
    memcpy(s->object_half[index], crate_half, sizeof s->object_half[index]);
}

/* The same calls in the same order for every world, so their nodes match slot for slot. desc
 * NULL: every default; desc's allocator is used when it has one, else one counting into
 * s->counter. */
static void build(scene *s, const rv_world_desc *desc)
{
    memset(s, 0, sizeof *s);
    rv_world_desc d = desc ? *desc : (rv_world_desc){ 0 };
    if (!d.allocator.alloc)
        d.allocator = rvt_allocator(&s->counter);
    assert_int_equal(rv_world_create(&d, &s->world), RV_OK);
    s->city = rvt_node(s->world, RV_NODE_NONE);
    uint32_t index = 0;
    for (int r = 0; r < ROWS; r++) {
        rv_node row = rvt_node(s->world, s->city);
        float z = -24.0f - 6.0f * (float)r;
        for (int c = 0; c < COLUMNS; c++) {
            float x = -28.0f + 4.0f * (float)c;
            /* A node with children and geometry of its own, which a skipped subtree test
             * draws untested. */
            uint32_t pallet = CRATES + (uint32_t)(r * COLUMNS + c);
            rv_node cluster = rvt_object(s->world, row, x, 0, z, 2.0f);
            assert_int_equal(rv_node_set_key(s->world, cluster, pallet + 1), RV_OK);
            const float at[3] = { x, 0, z };
            memcpy(s->object_at[pallet], at, sizeof at);
            memcpy(s->object_half[pallet], pallet_half, sizeof pallet_half);
            for (int k = 0; k < PER_CLUSTER; k++) {
                const float local[3] = { (k & 1) ? 0.9f : -0.9f, 0.5f, (k & 2) ? 0.9f : -0.9f };
                const float world[3] = { x + local[0], local[1], z + local[2] };
                add_crate(s, cluster, index++, local, world);
            }
        }
    }
    for (int k = 0; k < FRONT; k++) {
        const float at[3] = { -14.0f + 4.0f * (float)k, 0.5f, -10.0f };
        add_crate(s, s->city, index++, at, at);
    }
    assert_int_equal(index, CRATES);
    for (int k = 0; k < WALLS; k++) {
        s->walls[k] = rvt_node(s->world, RV_NODE_NONE);
        place_wall(s, k, 0);
    }
}

static void destroy(scene *s)
{
    rv_world_destroy(s->world);
    assert_int_equal(s->counter.live_blocks, 0);
    assert_int_equal(s->counter.live_bytes, 0);
}

/* Frame n's camera: the eye strafes in front of the walls, looking past them. */
static void camera_at(int n, rvt_camera *c)
{
    float t = (float)n;
    const float eye[3] = { 18.0f * sinf(t * 0.11f), 1.7f, 4.0f };
    const float target[3] = { 0.3f * eye[0] + 6.0f * sinf(t * 0.05f), 1.2f, -40.0f };
    rvt_camera_make(c, eye, target, 1.2f, 16.0 * n);
}

static rv_frame_view frame(scene *s, int n)
{
    rvt_camera c;
    camera_at(n, &c);
    rv_frame_view v;
    assert_int_equal(rv_frame(s->world, &c.v, &v), RV_OK);
    return v;
}

static rv_result set_occlusion(scene *s, const rv_occlusion_desc *desc)
{
    return rv_world_set_occlusion(s->world, desc);
}

/* Does the segment from eye to p meet the box lo..hi (slabs)? */
static bool segment_meets_box(const float eye[3], const double p[3], const double lo[3], const double hi[3])
{
    double t0 = 0, t1 = 1;
    for (int k = 0; k < 3; k++) {
        double d = p[k] - eye[k];
        if (d == 0) {
            if (eye[k] < lo[k] || eye[k] > hi[k])
                return false;
            continue;
        }
        double a = (lo[k] - eye[k]) / d, b = (hi[k] - eye[k]) / d;
        if (a > b) {
            double swap = a;
            a = b;
            b = swap;
        }
        t0 = a > t0 ? a : t0;
        t1 = b < t1 ? b : t1;
        if (t0 > t1)
            return false;
    }
    return true;
}

/* Is the object's whole box in the shadow of one wall, seen from eye? The cone of rays from
 * the eye through a wall is convex and so is the box: a box beyond the wall's far face lies
 * in its shadow when the ray to every corner meets the wall. */
static bool truly_hidden(const scene *s, const float eye[3], uint32_t object)
{
    const float *at = s->object_at[object], *half = s->object_half[object];
    if (at[2] + half[2] >= wall_z[0])
        return false;
    for (int k = 0; k < WALLS; k++) {
        const double lo[3] = { wall_x[k][0], wall_y[0] + s->wall_lift[k], wall_z[0] };
        const double hi[3] = { wall_x[k][1], wall_y[1] + s->wall_lift[k], wall_z[1] };
        bool inside = true;
        for (int corner = 0; corner < 8 && inside; corner++) {
            const double p[3] = { at[0] + ((corner & 1) ? half[0] : -half[0]),
                                  at[1] + ((corner & 2) ? half[1] : -half[1]),
                                  at[2] + ((corner & 4) ? half[2] : -half[2]) };
            inside = segment_meets_box(eye, p, lo, hi);
        }
        if (inside)
            return true;
    }
    return false;
}

/* Which objects the view draws (by their keys). */
static void drawn_set(const rv_frame_view *v, bool drawn[OBJECTS])
{
    memset(drawn, 0, OBJECTS * sizeof *drawn);
    assert_int_equal(v->translucent_count, 0);
    for (uint32_t i = 0; i < v->opaque_count; i++) {
        uint64_t key = v->opaque[i].key;
        assert_true(key >= 1 && key <= OBJECTS);
        drawn[key - 1] = true;
    }
}

static void assert_same_view(const rv_frame_view *a, const rv_frame_view *b)
{
    assert_int_equal(a->opaque_count, b->opaque_count);
    assert_true(rv_frame_view_digest(a) == rv_frame_view_digest(b));
    assert_int_equal(a->counts.nodes_visited, b->counts.nodes_visited);
    assert_int_equal(a->counts.occlusion_tested, b->counts.occlusion_tested);
    assert_int_equal(a->counts.occlusion_culled, b->counts.occlusion_culled);
    assert_int_equal(a->counts.occluders_rasterised, b->counts.occluders_rasterised);
}

/* A digest of what the world's buffer shows the host: its level count, level 0 as a debug
 * image, its stats (0 when there is no buffer). */
static uint64_t buffer_digest(rv_world *w)
{
    rv_occlusion *occ = rv_world_occlusion(w);
    if (!occ)
        return 0;
    uint64_t h = 1469598103934665603ull;
    uint32_t levels = rv_occlusion_level_count(occ);
    h = (h ^ levels) * 1099511628211ull;
    uint32_t iw = 0, ih = 0;
    rv_result r = rv_occlusion_debug_image(occ, 0, NULL, 0, &iw, &ih);
    h = (h ^ (uint64_t)r) * 1099511628211ull;
    if (r == RV_OK && iw) {
        uint8_t *pixels = malloc((size_t)iw * ih);
        assert_non_null(pixels);
        assert_int_equal(rv_occlusion_debug_image(occ, 0, pixels, (size_t)iw * ih, NULL, NULL), RV_OK);
        for (size_t i = 0; i < (size_t)iw * ih; i++)
            h = (h ^ pixels[i]) * 1099511628211ull;
        free(pixels);
    }
    rv_occlusion_stats st = rv_occlusion_get_stats(occ);
    const uint32_t fields[] = { st.occluders_submitted, st.occluders_rasterized, st.texels_covered,
                                (uint32_t)st.tests, (uint32_t)st.culled };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        h = (h ^ fields[i]) * 1099511628211ull;
    return h;
}

static rv_occlusion_desc occlusion_desc(uint32_t width)
{
    rv_occlusion_desc d;
    memset(&d, 0, sizeof d);
    d.width = width;
    return d;
}

/* The final desc of the change tests: another width, finer tests, fusion every frame and a
 * feed capacity (allocated with the buffer). */
static rv_occlusion_desc final_desc(void)
{
    rv_occlusion_desc d = occlusion_desc(256);
    d.fine_tests = 1;
    d.fusion = RV_FUSION_ALWAYS;
    d.feed_max_width = 160;
    d.feed_max_height = 90;
    return d;
}

/* ---- parity with a world made with the new desc -------------------------------------------- */

/* Switched off, on at another width without fusion, then to the final desc: from the next
 * frame on, the world's verdicts and lists are those of a world made with the final desc,
 * frame for frame, subtree tests and their skipped frames included (the change forgets the
 * old verdicts and restarts the phases). The buffer keeps its pointer throughout. */
static void test_a_changed_world_draws_as_one_made_with_the_new_desc_from_the_next_frame(void **state)
{
    (void)state;
    rv_world_desc first = { 0 };
    first.occlusion.width = 128;
    scene a;
    build(&a, &first);
    int n = 0;
    for (; n < 10; n++)
        (void)frame(&a, n);
    rv_occlusion *kept = rv_world_occlusion(a.world);
    assert_non_null(kept);

    rv_occlusion_desc off = occlusion_desc(0);
    assert_int_equal(set_occlusion(&a, &off), RV_OK);
    assert_null(rv_world_occlusion(a.world));
    for (; n < 16; n++) {
        rv_frame_view v = frame(&a, n);
        assert_int_equal(v.counts.occlusion_tested, 0);
        assert_int_equal(v.counts.occlusion_culled, 0);
    }
    rv_occlusion_desc low = occlusion_desc(64);
    low.fusion = RV_FUSION_OFF;
    assert_int_equal(set_occlusion(&a, &low), RV_OK);
    assert_ptr_equal(rv_world_occlusion(a.world), kept);
    for (; n < 22; n++)
        (void)frame(&a, n);
    rv_occlusion_desc last = final_desc();
    assert_int_equal(set_occlusion(&a, &last), RV_OK);
    assert_ptr_equal(rv_world_occlusion(a.world), kept);

    rv_world_desc fresh = { 0 };
    fresh.occlusion = last;
    scene b, every;
    build(&b, &fresh);
    fresh.group_retest_frames = 1; /* every subtree tested every frame */
    build(&every, &fresh);
    uint64_t culled = 0, skipping = 0;
    for (; n < 70; n++) {
        rv_frame_view va = frame(&a, n), vb = frame(&b, n), ve = frame(&every, n);
        assert_same_view(&va, &vb);
        culled += vb.counts.occlusion_culled;
        skipping += ve.counts.occlusion_tested > vb.counts.occlusion_tested;
    }
    assert_true(culled > 0);   /* the buffer hides things here */
    assert_true(skipping > 0); /* and subtree tests are skipped */
    destroy(&a);
    destroy(&b);
    destroy(&every);
}

/* The phases of the subtree tests matter: two worlds made with the same desc whose frame
 * counts differ by one test different subtrees on the same frame, and a pallet whose
 * subtree test is skipped is drawn untested, so their lists differ (the parity above needs
 * the change to restart the phases). */
static void test_subtree_tests_follow_their_phases(void **state)
{
    (void)state;
    rv_world_desc d = { 0 };
    d.occlusion = final_desc();
    scene a, b;
    build(&a, &d);
    build(&b, &d);
    (void)frame(&a, 0); /* a is one frame ahead */
    bool differ = false;
    for (int n = 1; n < 20; n++) {
        rv_frame_view va = frame(&a, n), vb = frame(&b, n);
        differ |= rv_frame_view_digest(&va) != rv_frame_view_digest(&vb);
    }
    assert_true(differ);
    destroy(&a);
    destroy(&b);
}

/* ---- never a false cull across a change ---------------------------------------------------- */

/* The desc changes every five frames, through off, several widths, finer tests, fusion modes,
 * an occluder cap and a feed capacity; a wall is lifted out of the way on one change and put
 * back on another. Every object the frustum-only world draws and the changing world does not
 * lies in a wall's shadow; with occlusion off the two draw the same. */
static void test_no_crate_is_hidden_wrongly_across_changes(void **state)
{
    (void)state;
    rv_world_desc first = { 0 };
    first.occlusion.width = 256;
    scene a, r;
    build(&a, &first);
    build(&r, NULL);
    rv_occlusion_desc descs[7];
    descs[0] = occlusion_desc(0);
    descs[1] = occlusion_desc(32);
    descs[2] = final_desc();
    descs[3] = occlusion_desc(64);
    descs[3].fusion = RV_FUSION_OFF;
    descs[4] = occlusion_desc(128);
    descs[4].max_occluders = 2;
    descs[5] = occlusion_desc(512);
    descs[5].min_occluder_texels = -1;
    descs[6] = occlusion_desc(256);
    uint64_t hidden = 0, hidden_after_change = 0;
    uint32_t width = 256;
    for (int n = 0; n < 140; n++) {
        bool changed = n > 0 && n % 5 == 0;
        if (changed) {
            const rv_occlusion_desc *d = &descs[(n / 5) % 7];
            assert_int_equal(set_occlusion(&a, d), RV_OK);
            width = d->width;
        }
        if (n == 23 || n == 58) { /* the second wall goes up out of the way, and comes back */
            float lift = n == 23 ? 40.0f : 0.0f;
            place_wall(&a, 1, lift);
            place_wall(&r, 1, lift);
        }
        rv_frame_view va = frame(&a, n), vr = frame(&r, n);
        if (width == 0)
            assert_true(rv_frame_view_digest(&va) == rv_frame_view_digest(&vr));
        bool in_a[OBJECTS], in_r[OBJECTS];
        drawn_set(&va, in_a);
        drawn_set(&vr, in_r);
        rvt_camera c;
        camera_at(n, &c);
        const float eye[3] = { 18.0f * sinf((float)n * 0.11f), 1.7f, 4.0f };
        for (uint32_t k = 0; k < OBJECTS; k++) {
            if (in_a[k])
                assert_true(in_r[k]);
            else if (in_r[k]) {
                if (!truly_hidden(&a, eye, k))
                    fail_msg("frame %d: object %u hidden at width %u, not behind a wall", n, k, width);
                hidden++;
                hidden_after_change += changed;
            }
        }
    }
    assert_true(hidden > 0);
    assert_true(hidden_after_change > 0);
    destroy(&a);
    destroy(&r);
}

/* ---- the buffer, its memory and its steady frames -------------------------------------------- */

/* Off frees the buffer's storage and keeps the object: the host's pointer is a buffer of
 * width 0 (tests visible, no image); on again, the same pointer; the first frame at the new
 * size grows the storage and the steady frames after it allocate nothing. Until the next
 * frame the rebuilt buffer holds none. An equal desc changes nothing. */
static void test_the_buffer_keeps_its_pointer_and_frees_its_storage(void **state)
{
    (void)state;
    rv_world_desc first = { 0 };
    first.occlusion.width = 512;
    scene a;
    build(&a, &first);
    for (int k = 0; k < 3; k++)
        (void)frame(&a, 0);
    rv_occlusion *occ = rv_world_occlusion(a.world);
    assert_non_null(occ);
    assert_true(rv_occlusion_level_count(occ) > 0);

    /* The same desc, spelt with its defaults: nothing changes, the frame's buffer stays. */
    rv_occlusion_desc same = occlusion_desc(512);
    same.min_occluder_texels = 2;
    same.feed_max_age = 4;
    uint64_t held = buffer_digest(a.world);
    rv_alloc_stats before = rv_world_alloc_stats(a.world);
    assert_int_equal(set_occlusion(&a, &same), RV_OK);
    assert_int_equal(buffer_digest(a.world), held);
    assert_int_equal(rv_world_alloc_stats(a.world).allocations, before.allocations);

    rv_occlusion_desc off = occlusion_desc(0);
    off.fine_tests = 1; /* anything else of a desc with width 0 is ignored */
    assert_int_equal(set_occlusion(&a, &off), RV_OK);
    rv_alloc_stats after = rv_world_alloc_stats(a.world);
    assert_true(after.bytes_live + 512u * 288u * sizeof(float) < before.bytes_live);
    assert_null(rv_world_occlusion(a.world));
    /* The kept pointer: a buffer of width 0. */
    const float lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 };
    bool visible = false;
    assert_int_equal(rv_occlusion_test_box(occ, lo, hi, NULL, &visible), RV_OK);
    assert_true(visible);
    assert_int_equal(rv_occlusion_level_count(occ), 0);
    uint32_t iw = 7, ih = 7;
    assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &iw, &ih), RV_OK);
    assert_int_equal(iw, 0);
    assert_int_equal(rv_occlusion_get_stats(occ).tests, 0); /* width 0 counts nothing */
    rv_occlusion_desc off_again = occlusion_desc(0);
    assert_int_equal(set_occlusion(&a, &off_again), RV_OK); /* off is off: nothing changes */
    assert_int_equal(rv_world_alloc_stats(a.world).allocations, after.allocations);
    for (int k = 0; k < 2; k++) {
        rv_frame_view v = frame(&a, 0);
        assert_int_equal(v.counts.occlusion_tested, 0);
    }
    assert_int_equal(rv_world_alloc_stats(a.world).allocations, after.allocations);

    rv_occlusion_desc on = final_desc();
    assert_int_equal(set_occlusion(&a, &on), RV_OK);
    assert_ptr_equal(rv_world_occlusion(a.world), occ);
    /* Rebuilt, holding no frame yet: tests answer visible, no image, stats zero. */
    assert_int_equal(rv_occlusion_level_count(occ), 0);
    assert_int_equal(rv_occlusion_debug_image(occ, 0, NULL, 0, &iw, &ih), RV_ERR_BAD_STATE);
    float near_depth, far_depth;
    assert_int_equal(rv_occlusion_debug_depth_range(occ, &near_depth, &far_depth), RV_ERR_BAD_STATE);
    assert_int_equal(rv_occlusion_test_box(occ, lo, hi, NULL, &visible), RV_OK);
    assert_true(visible);
    assert_int_equal(rv_occlusion_get_stats(occ).occluders_submitted, 0);
    assert_int_equal(rv_occlusion_get_feed_stats(occ).feeds_used, 0);

    rv_alloc_stats grown = rv_world_alloc_stats(a.world);
    rv_frame_view v = frame(&a, 0);
    assert_true(v.counts.occlusion_culled > 0);
    rv_alloc_stats steady = rv_world_alloc_stats(a.world);
    assert_true(steady.allocations + steady.reallocations > grown.allocations + grown.reallocations);
    for (int k = 0; k < 4; k++)
        (void)frame(&a, 0);
    rv_alloc_stats later = rv_world_alloc_stats(a.world);
    assert_int_equal(later.allocations, steady.allocations);
    assert_int_equal(later.reallocations, steady.reallocations);
    assert_int_equal(rv_occlusion_level_count(occ), 9); /* 256 x 144 and its pyramid */
    destroy(&a);
}

/* A world made with occlusion off has no buffer until a change turns it on: the next frame
 * makes it, as a world's first frame does, and later frames allocate nothing. */
static void test_a_world_made_without_occlusion_gets_its_buffer_at_the_next_frame(void **state)
{
    (void)state;
    scene a, b;
    build(&a, NULL);
    rv_world_desc d = { 0 };
    d.occlusion = final_desc();
    build(&b, &d);
    (void)frame(&a, 0);
    assert_null(rv_world_occlusion(a.world));
    rv_occlusion_desc on = final_desc();
    rv_alloc_stats before = rv_world_alloc_stats(a.world);
    assert_int_equal(set_occlusion(&a, &on), RV_OK);
    assert_int_equal(rv_world_alloc_stats(a.world).allocations, before.allocations);
    assert_null(rv_world_occlusion(a.world)); /* made by the next frame */
    for (int n = 1; n < 30; n++) {
        rv_frame_view va = frame(&a, n), vb = frame(&b, n);
        assert_same_view(&va, &vb);
    }
    assert_non_null(rv_world_occlusion(a.world));
    destroy(&a);
    destroy(&b);
}

/* A feed read back before the change: taken after it when it fits the new capacity, refused
 * for its size when it does not, and by a desc without a feed capacity. */
static void test_a_feed_from_before_the_change_is_judged_by_the_new_capacity(void **state)
{
    (void)state;
    rv_world_desc first = { 0 };
    first.occlusion = final_desc(); /* feeds up to 160 x 90 */
    scene a;
    build(&a, &first);
    (void)frame(&a, 0);
    rvt_camera c;
    camera_at(0, &c);
    float vp[16];
    for (int col = 0; col < 4; col++)
        for (int row = 0; row < 4; row++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)c.projection[k * 4 + row] * c.view[col * 4 + k];
            vp[col * 4 + row] = (float)acc;
        }
    static float texels[160 * 90];
    for (size_t i = 0; i < 160 * 90; i++)
        texels[i] = 1.0f; /* sky */
    rv_depth_feed feed;
    memset(&feed, 0, sizeof feed);
    feed.texels = texels;
    feed.width = 160;
    feed.height = 90;
    feed.format = RV_DEPTH_FLOAT32;
    feed.view_projection = vp;
    feed.age = 1;

    rv_occlusion_desc smaller = final_desc();
    smaller.feed_max_width = 80;
    smaller.feed_max_height = 45;
    rv_occlusion_desc none = final_desc();
    none.feed_max_width = none.feed_max_height = 0;
    rv_occlusion_desc off = occlusion_desc(0);
    const struct {
        const rv_occlusion_desc *desc;
        rv_result expected;
    } cases[] = { { &smaller, RV_ERR_CAPACITY }, { &none, RV_ERR_CAPACITY }, { &off, RV_OK } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(set_occlusion(&a, cases[i].desc), RV_OK);
        assert_int_equal(rv_frame_begin(a.world, &c.v), RV_OK);
        assert_int_equal(rv_frame_feed_depth(a.world, &feed), cases[i].expected);
        assert_int_equal(rv_frame_abort(a.world), RV_OK);
    }
    rv_occlusion_desc larger = final_desc();
    larger.feed_max_width = 320;
    larger.feed_max_height = 180;
    assert_int_equal(set_occlusion(&a, &larger), RV_OK);
    assert_int_equal(rv_frame_begin(a.world, &c.v), RV_OK);
    assert_int_equal(rv_frame_feed_depth(a.world, &feed), RV_OK);
    assert_int_equal(rv_occlusion_get_feed_stats(rv_world_occlusion(a.world)).feeds_used, 1);
    assert_int_equal(rv_frame_cull(a.world), RV_OK);
    rv_frame_view v;
    assert_int_equal(rv_frame_end(a.world, &v), RV_OK);
    destroy(&a);
}

/* ---- refused calls change nothing ---------------------------------------------------------- */

/* Host code that tries a change from where it is refused: the allocator, the clock and the
 * job system of a frame call (and the allocator of a change), a node visit, the delta
 * observer of a drain. */
enum { FROM_ALLOC = 1, FROM_CLOCK = 2, FROM_JOBS = 4, FROM_VISIT = 8, FROM_OBSERVER = 16 };

typedef struct hooks {
    rv_world *world;
    rvt_alloc counter;
    rv_allocator inner;
    rvt_host host;
    rv_job_system inner_jobs;
    uint64_t clock;
    unsigned armed;    /* FROM_* bits: where a change is tried */
    int tries;
    int refused;       /* tries answered RV_ERR_BAD_STATE */
} hooks;

static void try_change(hooks *h, unsigned from)
{
    if (!(h->armed & from) || !h->world)
        return;
    rv_occlusion_desc d = occlusion_desc(48);
    h->tries++;
    h->refused += rv_world_set_occlusion(h->world, &d) == RV_ERR_BAD_STATE;
}

static void *hook_alloc(size_t size, void *user)
{
    hooks *h = user;
    try_change(h, FROM_ALLOC);
    return h->inner.alloc(size, h->inner.user);
}
static void *hook_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    hooks *h = user;
    try_change(h, FROM_ALLOC);
    return h->inner.realloc(ptr, old_size, new_size, h->inner.user);
}
static void hook_free(void *ptr, size_t size, void *user)
{
    hooks *h = user;
    h->inner.free(ptr, size, h->inner.user);
}
static uint64_t hook_clock(void *user)
{
    hooks *h = user;
    try_change(h, FROM_CLOCK);
    return h->clock += 1000;
}
static void hook_parallel_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    hooks *h = user;
    try_change(h, FROM_JOBS);
    h->inner_jobs.parallel_for(h->inner_jobs.user, job, context, count, grain);
}
static bool hook_visit(rv_node node, const float world_matrix[16], void *user)
{
    (void)node;
    (void)world_matrix;
    try_change(user, FROM_VISIT);
    return true;
}
static void hook_observer(const rv_delta *delta, rv_delta_outcome outcome, void *user)
{
    (void)delta;
    (void)outcome;
    try_change(user, FROM_OBSERVER);
}

/* A world of the scene whose allocator, clock and job system are h's. */
static void build_hooked(scene *s, hooks *h, const rv_occlusion_desc *occlusion)
{
    memset(h, 0, sizeof *h);
    h->inner = rvt_allocator(&h->counter);
    h->host.order = RVT_HOST_FORWARD;
    h->host.max_workers = 2;
    h->inner_jobs = rvt_host_jobs(&h->host);
    rv_world_desc d = { 0 };
    d.allocator = (rv_allocator){ hook_alloc, hook_realloc, hook_free, h };
    d.occlusion = *occlusion;
    d.clock_ns = hook_clock;
    d.clock_user = h;
    d.jobs = h->inner_jobs;
    d.jobs.parallel_for = hook_parallel_for;
    d.jobs.user = h;
    build(s, &d);
    h->world = s->world;
}

static void destroy_hooked(scene *s, hooks *h)
{
    rv_world_destroy(s->world);
    rvt_host_free(&h->host);
    assert_int_equal(h->counter.live_blocks, 0);
    assert_int_equal(h->counter.live_bytes, 0);
}

/* The changed world and its twin, which never sees a refused call, draw frame n alike. */
static void frame_both(scene *a, scene *t, int n)
{
    rv_frame_view va = frame(a, n), vt = frame(t, n);
    assert_same_view(&va, &vt);
}

/* Nothing of a's buffer changed: the same object, holding what its twin's holds. */
static void assert_buffer_kept(scene *a, scene *t, rv_occlusion *occ)
{
    assert_ptr_equal(rv_world_occlusion(a->world), occ);
    assert_true(buffer_digest(a->world) == buffer_digest(t->world));
}

static void test_refused_changes_change_nothing(void **state)
{
    (void)state;
    rv_occlusion_desc first = occlusion_desc(128);
    hooks h, ht;
    scene a, t;
    build_hooked(&a, &h, &first);
    build_hooked(&t, &ht, &first);
    int n = 0;
    for (; n < 4; n++)
        frame_both(&a, &t, n);
    rv_occlusion *occ = rv_world_occlusion(a.world);
    assert_non_null(occ);

    /* Bad descs: rv_world_create's codes for them. */
    struct {
        rv_occlusion_desc desc;
        rv_result expected;
    } bad[10];
    for (int k = 0; k < 10; k++)
        bad[k].desc = occlusion_desc(64);
    bad[0].desc.width = RV_OCCLUSION_MAX_SIZE + 1;
    bad[0].expected = RV_ERR_INVALID_ARG;
    bad[1].desc.fine_tests = 3;
    bad[1].expected = RV_ERR_INVALID_ARG;
    bad[2].desc.fusion = RV_FUSION_OFF + 1;
    bad[2].expected = RV_ERR_INVALID_ARG;
    bad[3].desc.feed_max_width = 64; /* without a height */
    bad[3].expected = RV_ERR_INVALID_ARG;
    bad[4].desc.feed_max_width = RV_OCCLUSION_MAX_SIZE + 1;
    bad[4].desc.feed_max_height = 4;
    bad[4].expected = RV_ERR_INVALID_ARG;
    bad[5].desc.feed_max_translation = NAN;
    bad[5].expected = RV_ERR_NOT_FINITE;
    bad[6].desc.feed_max_rotation = -1;
    bad[6].expected = RV_ERR_INVALID_ARG;
    bad[7].desc.feed_discontinuity = 0.06f;
    bad[7].expected = RV_ERR_INVALID_ARG;
    bad[8].desc.min_occluder_texels = INFINITY;
    bad[8].expected = RV_ERR_NOT_FINITE;
    bad[9].desc.feed_discontinuity = -INFINITY;
    bad[9].expected = RV_ERR_NOT_FINITE;
    rv_alloc_stats held = rv_world_alloc_stats(a.world);
    for (int k = 0; k < 10; k++) {
        rv_world_desc d = { 0 };
        d.occlusion = bad[k].desc;
        rv_world *never = NULL;
        assert_int_equal(rv_world_create(&d, &never), bad[k].expected);
        assert_int_equal(rv_world_set_occlusion(a.world, &bad[k].desc), bad[k].expected);
        assert_buffer_kept(&a, &t, occ);
    }
    rv_occlusion_desc fine = occlusion_desc(64);
    assert_int_equal(rv_world_set_occlusion(NULL, &fine), RV_ERR_INVALID_ARG);
    rv_alloc_stats after = rv_world_alloc_stats(a.world);
    assert_int_equal(after.allocations, held.allocations);
    assert_int_equal(after.bytes_live, held.bytes_live);
    frame_both(&a, &t, n++);

    /* In the frame's window: after the begin, after the cull. */
    rvt_camera c;
    camera_at(n, &c);
    assert_int_equal(rv_frame_begin(a.world, &c.v), RV_OK);
    assert_int_equal(rv_world_set_occlusion(a.world, &fine), RV_ERR_BAD_STATE);
    assert_int_equal(rv_world_set_occlusion(a.world, NULL), RV_ERR_BAD_STATE);
    assert_int_equal(rv_world_set_occlusion(a.world, &bad[0].desc), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_cull(a.world), RV_OK);
    assert_int_equal(rv_world_set_occlusion(a.world, &fine), RV_ERR_BAD_STATE);
    rv_frame_view va, vt;
    assert_int_equal(rv_frame_end(a.world, &va), RV_OK);
    vt = frame(&t, n++);
    assert_same_view(&va, &vt);
    assert_buffer_kept(&a, &t, occ);

    /* After a cull that failed (the job system skipped a range), until the abort; and after
     * a begun frame is aborted the change is taken again. */
    camera_at(n, &c);
    h.host.fault = ht.host.fault = RVT_FAULT_SKIP;
    h.host.fault_call = h.host.calls + 1;
    ht.host.fault_call = ht.host.calls + 1;
    assert_int_equal(rv_frame_begin(a.world, &c.v), RV_OK);
    assert_int_equal(rv_frame_cull(a.world), RV_ERR_INVARIANT);
    assert_int_equal(rv_world_set_occlusion(a.world, &fine), RV_ERR_BAD_STATE);
    assert_int_equal(rv_frame_abort(a.world), RV_OK);
    assert_int_equal(rv_frame_begin(t.world, &c.v), RV_OK);
    assert_int_equal(rv_frame_cull(t.world), RV_ERR_INVARIANT);
    assert_int_equal(rv_frame_abort(t.world), RV_OK);
    h.host.fault = ht.host.fault = RVT_FAULT_NONE;
    frame_both(&a, &t, n++);
    assert_buffer_kept(&a, &t, occ);

    /* From the clock and the job system of a frame. */
    h.armed = FROM_CLOCK | FROM_JOBS;
    frame_both(&a, &t, n++);
    h.armed = 0;
    assert_true(h.tries >= 2);
    assert_int_equal(h.refused, h.tries);
    assert_buffer_kept(&a, &t, occ);

    /* From the allocator of a frame: a square viewport asks for more buffer rows. */
    h.tries = h.refused = 0;
    camera_at(n, &c);
    c.v.viewport_height = c.v.viewport_width;
    h.armed = FROM_ALLOC;
    assert_int_equal(rv_frame(a.world, &c.v, &va), RV_OK);
    h.armed = 0;
    assert_int_equal(rv_frame(t.world, &c.v, &vt), RV_OK);
    n++;
    assert_same_view(&va, &vt);
    assert_true(h.tries >= 1);
    assert_int_equal(h.refused, h.tries);
    assert_buffer_kept(&a, &t, occ);

    /* From a node visit. */
    h.tries = h.refused = 0;
    const float eye[3] = { 0, 1.7f, 4 }, ahead[3] = { 0, 1.2f, -40 };
    rv_frustum fr = rvt_frustum(eye, ahead, 1.2f, 1000);
    h.armed = FROM_VISIT;
    assert_int_equal(rv_visit_visible(a.world, a.city, &fr, hook_visit, &h, NULL), RV_OK);
    h.armed = 0;
    assert_true(h.tries >= 1);
    assert_int_equal(h.refused, h.tries);
    assert_buffer_kept(&a, &t, occ);
    frame_both(&a, &t, n++);

    /* From the allocator of a change: the nested change is refused, the change itself made. */
    h.tries = h.refused = 0;
    rv_occlusion_desc last = final_desc();
    h.armed = FROM_ALLOC;
    assert_int_equal(rv_world_set_occlusion(a.world, &last), RV_OK);
    h.armed = 0;
    assert_true(h.tries >= 1);
    assert_int_equal(h.refused, h.tries);
    assert_int_equal(rv_world_set_occlusion(t.world, &last), RV_OK);
    assert_ptr_equal(rv_world_occlusion(a.world), occ);
    for (int k = 0; k < 8; k++)
        frame_both(&a, &t, n++);
    assert_buffer_kept(&a, &t, occ);

    /* From the delta observer of the world's render scene while the host drains it. */
    h.tries = h.refused = 0;
    rv_render_scene_desc sd = { 0 };
    sd.world = a.world;
    sd.observer = hook_observer;
    sd.observer_user = &h;
    rv_render_scene *rs = NULL;
    rv_journal *journal = NULL;
    assert_int_equal(rv_render_scene_create(&sd, &rs), RV_OK);
    assert_int_equal(rv_journal_create(NULL, &journal), RV_OK);
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform.rotation[3] = 1;
    p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1;
    p.transform.bounds[3] = 1;
    p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
    assert_int_equal(rv_journal_register(journal, 0, 7, 1, &p, NULL), RV_OK);
    h.armed = FROM_OBSERVER;
    assert_int_equal(rv_render_scene_apply(rs, journal, NULL), RV_OK);
    h.armed = 0;
    assert_int_equal(h.tries, 1);
    assert_int_equal(h.refused, 1);
    assert_buffer_kept(&a, &t, occ);
    rv_render_scene_destroy(rs);
    rv_journal_destroy(journal);

    destroy_hooked(&a, &h);
    destroy_hooked(&t, &ht);
}

/* ---- allocation failures ------------------------------------------------------------------ */

/* The changes the failure tests make: from one desc to another, through the object kept while
 * occlusion is off, and from a world that never made a buffer. */
typedef struct change {
    const char *name;
    rv_occlusion_desc from;
    bool through_off;      /* switched off (and a frame run) before the change */
    rv_occlusion_desc to;
} change;

static void changes(change out[4])
{
    memset(out, 0, 4 * sizeof *out);
    out[0].name = "another width, finer tests and a feed";
    out[0].from = occlusion_desc(64);
    out[0].to = final_desc();
    out[1].name = "off";
    out[1].from = occlusion_desc(128);
    out[1].to = occlusion_desc(0);
    out[2].name = "on again, through the kept buffer";
    out[2].from = occlusion_desc(128);
    out[2].through_off = true;
    out[2].to = final_desc();
    out[3].name = "on in a world made without occlusion";
    out[3].from = occlusion_desc(0);
    out[3].to = final_desc();
}

/* A world with the change's first desc and a few frames of a still camera behind it. */
static void change_setup(scene *s, const change *ch)
{
    rv_world_desc d = { 0 };
    d.occlusion = ch->from;
    build(s, &d);
    for (int k = 0; k < 3; k++)
        (void)frame(s, 0);
    if (ch->through_off) {
        rv_occlusion_desc off = occlusion_desc(0);
        assert_int_equal(set_occlusion(s, &off), RV_OK);
        (void)frame(s, 0);
    }
}

/* What a world made with desc draws from the still camera (the same every frame). */
static uint64_t still_digest(const rv_occlusion_desc *desc)
{
    rv_world_desc d = { 0 };
    d.occlusion = *desc;
    scene s;
    build(&s, &d);
    rv_frame_view v = frame(&s, 0);
    uint64_t digest = rv_frame_view_digest(&v);
    v = frame(&s, 0);
    assert_true(rv_frame_view_digest(&v) == digest);
    destroy(&s);
    return digest;
}

/* A change that fails on any one of its allocations returns RV_ERR_OUT_OF_MEMORY and changes
 * nothing: the same buffer holding the same frame, no memory kept, the next frame drawn with
 * the old desc; the change then made draws with the new one, and allocates nothing once its
 * first frame has grown the buffer (and, where it draws more than before, the next frame its
 * arena's lists, as any frame drawing more does). */
static void test_a_change_out_of_memory_changes_nothing(void **state)
{
    (void)state;
    change ch[4];
    changes(ch);
    for (int i = 0; i < 4; i++) {
        uint64_t before = still_digest(ch[i].through_off ? &(rv_occlusion_desc){ 0 } : &ch[i].from);
        uint64_t after = still_digest(&ch[i].to);
        assert_true(before != after); /* the change shows */
        scene s;
        change_setup(&s, &ch[i]);
        uint64_t calls = s.counter.calls;
        assert_int_equal(set_occlusion(&s, &ch[i].to), RV_OK);
        uint64_t n = s.counter.calls - calls;
        destroy(&s);
        if (i == 3)
            assert_int_equal(n, 0); /* no buffer to rebuild: the next frame makes it */
        else
            assert_true(n >= 1);
        for (uint64_t k = 1; k <= n; k++) {
            change_setup(&s, &ch[i]);
            rv_occlusion *occ = rv_world_occlusion(s.world);
            uint64_t held = buffer_digest(s.world);
            rv_alloc_stats st = rv_world_alloc_stats(s.world);
            s.counter.fail_at = s.counter.calls + k;
            rv_result r = set_occlusion(&s, &ch[i].to);
            s.counter.fail_at = 0;
            if (r != RV_ERR_OUT_OF_MEMORY)
                fail_msg("%s: failing allocation %llu of %llu returned %s", ch[i].name, (unsigned long long)k,
                         (unsigned long long)n, rv_result_string(r));
            assert_ptr_equal(rv_world_occlusion(s.world), occ);
            assert_true(buffer_digest(s.world) == held);
            assert_int_equal(rv_world_alloc_stats(s.world).bytes_live, st.bytes_live);
            rv_frame_view v = frame(&s, 0);
            assert_true(rv_frame_view_digest(&v) == before);
            assert_int_equal(set_occlusion(&s, &ch[i].to), RV_OK);
            for (int f = 0; f < 2; f++) { /* the buffer, and each arena's lists */
                v = frame(&s, 0);
                assert_true(rv_frame_view_digest(&v) == after);
            }
            uint64_t grown = s.counter.calls;
            for (int f = 0; f < 2; f++) {
                v = frame(&s, 0);
                assert_true(rv_frame_view_digest(&v) == after);
            }
            assert_int_equal(s.counter.calls, grown);
            destroy(&s);
        }
    }
}

/* The first frame after a change, failing on any one of its allocations, fails cleanly: it
 * answers RV_ERR_OUT_OF_MEMORY (or, where the frame can do without the memory, draws as it
 * should), the last published view stays valid, the buffer keeps its pointer, and the next
 * frame draws with the new desc; once both arenas have served a frame, none allocates. */
static void test_the_first_frame_after_a_change_out_of_memory_fails_cleanly(void **state)
{
    (void)state;
    change ch[4];
    changes(ch);
    for (int i = 0; i < 4; i++) {
        uint64_t after = still_digest(&ch[i].to);
        uint32_t failed = 0;
        for (uint64_t k = 1;; k++) {
            scene s;
            change_setup(&s, &ch[i]);
            rvt_camera c;
            camera_at(0, &c);
            rv_frame_view last;
            assert_int_equal(rv_frame(s.world, &c.v, &last), RV_OK);
            assert_int_equal(set_occlusion(&s, &ch[i].to), RV_OK);
            rv_occlusion *occ = rv_world_occlusion(s.world);
            s.counter.fail_at = s.counter.calls + k;
            rv_frame_view v;
            rv_result r = rv_frame(s.world, &c.v, &v);
            bool tried = s.counter.failed > 0;
            s.counter.fail_at = 0;
            if (!tried) { /* k is past the frame's allocations: every one has been tried */
                assert_int_equal(r, RV_OK);
                assert_true(rv_frame_view_digest(&v) == after);
                destroy(&s);
                assert_true(failed > 0 || i == 1);
                break;
            }
            if (r == RV_OK) {
                assert_true(rv_frame_view_digest(&v) == after);
            } else {
                assert_int_equal(r, RV_ERR_OUT_OF_MEMORY);
                failed++;
                assert_true(rv_frame_view_is_valid(s.world, &last));
                if (occ)
                    assert_ptr_equal(rv_world_occlusion(s.world), occ);
                v = frame(&s, 0);
                assert_true(rv_frame_view_digest(&v) == after);
            }
            v = frame(&s, 0); /* the other arena's lists */
            assert_true(rv_frame_view_digest(&v) == after);
            uint64_t grown = s.counter.calls;
            for (int f = 0; f < 2; f++) {
                v = frame(&s, 0);
                assert_true(rv_frame_view_digest(&v) == after);
            }
            assert_int_equal(s.counter.calls, grown);
            destroy(&s);
            if (k > 1000)
                fail_msg("%s: the first frame made more allocations than the test tries", ch[i].name);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_changed_world_draws_as_one_made_with_the_new_desc_from_the_next_frame),
        cmocka_unit_test(test_subtree_tests_follow_their_phases),
        cmocka_unit_test(test_no_crate_is_hidden_wrongly_across_changes),
        cmocka_unit_test(test_the_buffer_keeps_its_pointer_and_frees_its_storage),
        cmocka_unit_test(test_a_world_made_without_occlusion_gets_its_buffer_at_the_next_frame),
        cmocka_unit_test(test_a_feed_from_before_the_change_is_judged_by_the_new_capacity),
        cmocka_unit_test(test_refused_changes_change_nothing),
        cmocka_unit_test(test_a_change_out_of_memory_changes_nothing),
        cmocka_unit_test(test_the_first_frame_after_a_change_out_of_memory_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
