/* Streaming grid (docs/design.md §6): geometry, distance to the cell, what an update
 * touches and requests, what it costs, and how it fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static rv_grid_desc desc_of(uint32_t source, float ox, float oz, float cell, uint32_t cx, uint32_t cz, float lead)
{
    rv_grid_desc d = {0};
    d.source = source;
    d.origin[0] = ox;
    d.origin[1] = oz;
    d.cell_size = cell;
    d.count_x = cx;
    d.count_z = cz;
    d.lead = lead;
    return d;
}

static rv_grid *make_grid(rv_grid_desc d)
{
    rv_grid *g = NULL;
    assert_int_equal(rv_grid_create(&d, &g), RV_OK);
    assert_non_null(g);
    return g;
}

static rv_residency *make_residency(void)
{
    rv_residency *r = NULL;
    assert_int_equal(rv_residency_create(NULL, &r), RV_OK);
    assert_int_equal(rv_residency_begin_frame(r, 0.0), RV_OK);
    return r;
}

static rv_stream_source source_at(float x, float z, float radius)
{
    rv_stream_source s = { { x, 0.0f, z }, radius };
    return s;
}

static rv_page_state state_of(const rv_residency *r, rv_page_key key)
{
    rv_page_info info;
    assert_int_equal(rv_residency_page_info(r, key, &info), RV_OK);
    return info.state;
}

/* ---- creation ----------------------------------------------------------------------- */

static void test_create_refuses_each_bad_field_and_makes_nothing(void **state)
{
    (void)state;
    rv_grid *sentinel = (rv_grid *)(uintptr_t)0x1234;
    rv_grid *g = sentinel;
    rv_grid_desc ok = desc_of(1, 0, 0, 10, 8, 8, 2);
    assert_int_equal(rv_grid_create(NULL, &g), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_create(&ok, NULL), RV_ERR_INVALID_ARG);

    struct { rv_grid_desc d; rv_result expect; } cases[] = {
        { desc_of(1, 0, 0, 0, 8, 8, 0), RV_ERR_INVALID_ARG },          /* cell size 0 */
        { desc_of(1, 0, 0, -1, 8, 8, 0), RV_ERR_INVALID_ARG },         /* negative cell */
        { desc_of(1, 0, 0, NAN, 8, 8, 0), RV_ERR_NOT_FINITE },
        { desc_of(1, 0, 0, INFINITY, 8, 8, 0), RV_ERR_NOT_FINITE },
        { desc_of(1, 0, 0, 10, 0, 8, 0), RV_ERR_INVALID_ARG },         /* count x 0 */
        { desc_of(1, 0, 0, 10, 8, 0, 0), RV_ERR_INVALID_ARG },         /* count z 0 */
        { desc_of(1, 0, 0, 10, 65536, 65536, 0), RV_ERR_CAPACITY },    /* 2^32 cells */
        { desc_of(1, 0, 0, 10, UINT32_MAX, 2, 0), RV_ERR_CAPACITY },
        { desc_of(1, 0, 0, 10, 8, 8, -0.5f), RV_ERR_INVALID_ARG },     /* negative lead */
        { desc_of(1, 0, 0, 10, 8, 8, NAN), RV_ERR_NOT_FINITE },
        { desc_of(1, NAN, 0, 10, 8, 8, 0), RV_ERR_NOT_FINITE },
        { desc_of(1, 0, -INFINITY, 10, 8, 8, 0), RV_ERR_NOT_FINITE },
        { desc_of(1, 3e38f, 0, 1e37f, 1000, 1, 0), RV_ERR_NOT_FINITE }, /* far corner overflows */
        { desc_of(1, FLT_MAX, 0, 10, 100, 100, 0), RV_ERR_INVALID_ARG }, /* cells below float's spacing */
        { desc_of(1, 0, 3.3e7f, 1, 8, 8, 0), RV_ERR_INVALID_ARG },      /* spacing 2 from 2^24 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g = sentinel;
        assert_int_equal(rv_grid_create(&cases[i].d, &g), cases[i].expect);
        assert_ptr_equal(g, sentinel);
    }
    rv_grid_desc bad_eye = ok;
    bad_eye.eye_radius = NAN;
    assert_int_equal(rv_grid_create(&bad_eye, &g), RV_ERR_NOT_FINITE);
    assert_ptr_equal(g, sentinel);

    /* Cells exactly as wide as float's spacing there still have bounds of their own. */
    rv_grid_desc coarse = desc_of(1, 8388608.0f, 0, 1, 8, 8, 0); /* 2^23: spacing 1 */
    g = make_grid(coarse);
    float lo0[2], hi0[2], lo1[2], hi1[2];
    assert_int_equal(rv_grid_bounds_of(g, 6, 0, lo0, hi0), RV_OK);
    assert_int_equal(rv_grid_bounds_of(g, 7, 0, lo1, hi1), RV_OK);
    assert_true(lo0[0] < lo1[0] && hi0[0] <= lo1[0]);
    rv_grid_destroy(g);

    /* The largest grid that fits: 2^32 - 1 cells. */
    rv_grid_desc biggest = desc_of(1, 0, 0, 1, 65535, 65537, 0);
    g = make_grid(biggest);
    rv_page_key key;
    assert_int_equal(rv_grid_key_of(g, 65534, 65536, &key), RV_OK);
    assert_int_equal(key.index, UINT32_MAX - 1);
    rv_grid_destroy(g);
    rv_grid_destroy(NULL);
}

static void test_create_resolves_eye_radius_and_keeps_fields(void **state)
{
    (void)state;
    rv_grid_desc d = desc_of(42, -5, 7, 16, 10, 20, 3);
    rv_grid *g = make_grid(d);
    rv_grid_desc got = rv_grid_get_desc(g);
    assert_int_equal(got.source, 42);
    assert_int_equal(got.count_x, 10);
    assert_int_equal(got.count_z, 20);
    assert_float_equal(got.cell_size, 16, 0);
    assert_float_equal(got.lead, 3, 0);
    assert_float_equal(got.eye_radius, 64, 0); /* default: 4 cells */
    rv_grid_destroy(g);
    d.eye_radius = -1; /* no eye source */
    g = make_grid(d);
    assert_float_equal(rv_grid_get_desc(g).eye_radius, -1, 0);
    rv_grid_destroy(g);
    rv_grid_stats none = rv_grid_get_stats(NULL);
    assert_int_equal(none.requested_cells, 0);
    assert_int_equal(rv_grid_get_desc(NULL).count_x, 0);
}

/* ---- geometry ----------------------------------------------------------------------- */

static void test_key_of_and_cell_of_round_trip_without_wrapping(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(9, 0, 0, 4, 7, 5, 0));
    for (uint32_t z = 0; z < 5; z++)
        for (uint32_t x = 0; x < 7; x++) {
            rv_page_key key;
            assert_int_equal(rv_grid_key_of(g, x, z, &key), RV_OK);
            assert_int_equal(key.source, 9);
            assert_int_equal(key.index, z * 7 + x);
            uint32_t cx = 99, cz = 99;
            assert_int_equal(rv_grid_cell_of(g, key.index, &cx, &cz), RV_OK);
            assert_int_equal(cx, x);
            assert_int_equal(cz, z);
        }
    rv_page_key key = { 77, 77 };
    assert_int_equal(rv_grid_key_of(g, 7, 0, &key), RV_ERR_NOT_FOUND); /* would wrap to (0, 1) */
    assert_int_equal(rv_grid_key_of(g, 0, 5, &key), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_grid_key_of(g, UINT32_MAX, 0, &key), RV_ERR_NOT_FOUND);
    assert_int_equal(key.source, 77);
    uint32_t x = 99, z = 99;
    assert_int_equal(rv_grid_cell_of(g, 35, &x, &z), RV_ERR_NOT_FOUND);
    assert_int_equal(x, 99);
    assert_int_equal(rv_grid_key_of(NULL, 0, 0, &key), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_key_of(g, 0, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_cell_of(NULL, 0, &x, &z), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_cell_of(g, 0, NULL, &z), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_cell_of(g, 0, &x, NULL), RV_ERR_INVALID_ARG);
    rv_grid_destroy(g);
}

static void test_bounds_of_follow_origin_and_cell_size(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, -100, 50, 25, 8, 4, 0));
    float mn[2], mx[2];
    assert_int_equal(rv_grid_bounds_of(g, 0, 0, mn, mx), RV_OK);
    assert_float_equal(mn[0], -100, 0);
    assert_float_equal(mn[1], 50, 0);
    assert_float_equal(mx[0], -75, 0);
    assert_float_equal(mx[1], 75, 0);
    assert_int_equal(rv_grid_bounds_of(g, 7, 3, mn, mx), RV_OK);
    assert_float_equal(mn[0], 75, 0);
    assert_float_equal(mn[1], 125, 0);
    assert_float_equal(mx[0], 100, 0);
    assert_float_equal(mx[1], 150, 0);
    float keep[2] = { 123, 456 };
    assert_int_equal(rv_grid_bounds_of(g, 8, 0, keep, mx), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_grid_bounds_of(g, 0, 4, keep, mx), RV_ERR_NOT_FOUND);
    assert_float_equal(keep[0], 123, 0);
    assert_int_equal(rv_grid_bounds_of(NULL, 0, 0, mn, mx), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_bounds_of(g, 0, 0, NULL, mx), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_bounds_of(g, 0, 0, mn, NULL), RV_ERR_INVALID_ARG);
    rv_grid_destroy(g);
}

static void test_distance_is_to_the_cell_zero_inside_never_to_the_centre(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 100, 4, 4, 0));
    float d = -1;
    float inside[3] = { 150, 999, 150 }; /* Y ignored */
    assert_int_equal(rv_grid_distance_to(g, 1, 1, inside, &d), RV_OK);
    assert_float_equal(d, 0, 0);
    float corner[3] = { 100, 0, 100 }; /* the corner of four cells: zero from each */
    for (uint32_t z = 0; z < 2; z++)
        for (uint32_t x = 0; x < 2; x++) {
            assert_int_equal(rv_grid_distance_to(g, x, z, corner, &d), RV_OK);
            assert_float_equal(d, 0, 0);
        }
    float beside[3] = { 130, 0, 210 }; /* 10 beyond the +Z edge of cell (1, 1) */
    assert_int_equal(rv_grid_distance_to(g, 1, 1, beside, &d), RV_OK);
    assert_float_equal(d, 10, 1e-5);
    float diagonal[3] = { 203, 0, 204 }; /* 3, 4 beyond the corner of cell (1, 1) */
    assert_int_equal(rv_grid_distance_to(g, 1, 1, diagonal, &d), RV_OK);
    assert_float_equal(d, 5, 1e-5);
    float outside[3] = { -30, 0, -40 };
    assert_int_equal(rv_grid_distance_to(g, 0, 0, outside, &d), RV_OK);
    assert_float_equal(d, 50, 1e-5);

    d = 7;
    float nan_pos[3] = { NAN, 0, 0 };
    float inf_y[3] = { 0, INFINITY, 0 };
    assert_int_equal(rv_grid_distance_to(g, 0, 0, nan_pos, &d), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_grid_distance_to(g, 0, 0, inf_y, &d), RV_ERR_NOT_FINITE);
    assert_int_equal(rv_grid_distance_to(g, 4, 0, inside, &d), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_grid_distance_to(g, 0, 4, inside, &d), RV_ERR_NOT_FOUND);
    assert_float_equal(d, 7, 0);
    assert_int_equal(rv_grid_distance_to(NULL, 0, 0, inside, &d), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_distance_to(g, 0, 0, NULL, &d), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_distance_to(g, 0, 0, inside, NULL), RV_ERR_INVALID_ARG);
    rv_grid_destroy(g);
}

/* The strafe case: a source walking along the edge of a large cell stays at the same
 * distance from it, so the cell stays touched the whole way. Measured to the centre, the
 * distance would swing from 50 to 70.7 and the cell would drop out mid-strafe. */
static void test_strafe_along_a_cell_keeps_the_load_boundary_still(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 100, 3, 3, 0));
    rv_residency *r = make_residency();
    rv_page_key across;
    assert_int_equal(rv_grid_key_of(g, 1, 2, &across), RV_OK); /* cell z in [200, 300) */
    float prev = -1;
    for (int step = 0; step <= 100; step++) {
        float x = 100.0f + (float)step; /* along cell (1, 2)'s edge from corner to corner */
        rv_stream_source s = source_at(x, 199.0f, 1.5f);
        float d;
        assert_int_equal(rv_grid_distance_to(g, 1, 2, s.position, &d), RV_OK);
        assert_float_equal(d, 1.0f, 1e-4);
        if (prev >= 0)
            assert_float_equal(d, prev, 0);
        prev = d;
        assert_int_equal(rv_residency_begin_frame(r, step * 16.0), RV_OK);
        assert_int_equal(rv_grid_update(g, &s, 1, r), RV_OK);
        rv_page_info info;
        assert_int_equal(rv_residency_page_info(r, across, &info), RV_OK);
        assert_int_equal(info.state, RV_PAGE_REQUESTED);
        assert_int_equal(info.last_touched_frame, rv_residency_get_stats(r).frame);
    }
    /* Standing exactly on the corner of four large cells: all four at distance 0, all touched
     * even with radius 0. */
    rv_stream_source corner = source_at(100, 100, 0);
    assert_int_equal(rv_residency_begin_frame(r, 5000), RV_OK);
    assert_int_equal(rv_grid_update(g, &corner, 1, r), RV_OK);
    assert_int_equal(rv_grid_get_stats(g).touched_cells, 4);
    assert_int_equal(rv_grid_get_stats(g).requested_cells, 4);
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

/* ---- update ------------------------------------------------------------------------- */

typedef struct ref_cell {
    bool requested, touched;
    float distance;
} ref_cell;

/* The slow, obviously correct reference: every cell of the grid against every source. */
static void reference_update(const rv_grid *g, const rv_stream_source *s, uint32_t n, ref_cell *out,
                             uint32_t *touched, uint32_t *requested)
{
    rv_grid_desc d = rv_grid_get_desc(g);
    *touched = *requested = 0;
    for (uint32_t z = 0; z < d.count_z; z++)
        for (uint32_t x = 0; x < d.count_x; x++) {
            ref_cell c = { false, false, INFINITY };
            for (uint32_t i = 0; i < n; i++) {
                float dist;
                assert_int_equal(rv_grid_distance_to(g, x, z, s[i].position, &dist), RV_OK);
                if (dist <= s[i].radius + d.lead) {
                    c.requested = true;
                    if (dist < c.distance)
                        c.distance = dist;
                }
                if (dist <= s[i].radius)
                    c.touched = true;
            }
            out[z * d.count_x + x] = c;
            *touched += c.touched;
            *requested += c.requested;
        }
}

static void test_update_matches_a_slow_reference_and_touched_is_within_requested(void **state)
{
    (void)state;
    uint64_t seed = 5;
    for (int trial = 0; trial < RVT_HEAVY(200, 40); trial++) {
        uint32_t cx = 1 + (uint32_t)(rvt_next(&seed) % 40), cz = 1 + (uint32_t)(rvt_next(&seed) % 40);
        float cell = rvt_uniform(&seed, 0.5f, 20.0f);
        float ox = rvt_uniform(&seed, -100, 100), oz = rvt_uniform(&seed, -100, 100);
        float lead = (rvt_next(&seed) & 3) == 0 ? 0.0f : rvt_uniform(&seed, 0, 3 * cell);
        rv_grid *g = make_grid(desc_of(3, ox, oz, cell, cx, cz, lead));
        rv_residency *r = make_residency();
        rv_stream_source src[5];
        uint32_t n = (uint32_t)(rvt_next(&seed) % 6);
        for (uint32_t i = 0; i < n; i++) {
            float w = cx * cell, h = cz * cell;
            src[i] = source_at(ox + rvt_uniform(&seed, -0.3f * w, 1.3f * w), oz + rvt_uniform(&seed, -0.3f * h, 1.3f * h),
                               (rvt_next(&seed) & 7) == 0 ? 0.0f : rvt_uniform(&seed, 0, 5 * cell));
        }
        ref_cell *ref = calloc((size_t)cx * cz, sizeof *ref);
        uint32_t ref_touched, ref_requested;
        reference_update(g, src, n, ref, &ref_touched, &ref_requested);
        assert_int_equal(rv_grid_update(g, src, n, r), RV_OK);
        rv_grid_stats st = rv_grid_get_stats(g);
        assert_int_equal(st.touched_cells, ref_touched);
        assert_int_equal(st.requested_cells, ref_requested);
        assert_true(st.touched_cells <= st.requested_cells);
        uint64_t frame = rv_residency_get_stats(r).frame;
        for (uint32_t i = 0; i < cx * cz; i++) {
            rv_page_info info;
            assert_int_equal(rv_residency_page_info(r, (rv_page_key){ 3, i }, &info), RV_OK);
            if (!ref[i].requested) {
                assert_int_equal(info.state, RV_PAGE_ABSENT);
                continue;
            }
            assert_int_equal(info.state, RV_PAGE_REQUESTED); /* touched pages are requested too */
            assert_float_equal(info.distance, ref[i].distance, 1e-5 * (1 + ref[i].distance));
            assert_int_equal(info.last_touched_frame == frame, ref[i].touched);
        }
        assert_int_equal(rv_residency_get_stats(r).pages_requested, ref_requested);
        free(ref);
        rv_residency_destroy(r);
        rv_grid_destroy(g);
    }
}

/* A cell at exactly the radius (as rv_grid_distance_to gives it, in float) is touched, and
 * one at exactly radius + lead requested: the update decides on the distance the call
 * returns, not on the double it rounds. */
static void test_a_cell_at_exactly_the_radius_or_the_reach_is_in(void **state)
{
    (void)state;
    uint64_t seed = 17;
    for (int trial = 0; trial < RVT_HEAVY(4000, 800); trial++) {
        uint32_t cx = 1 + (uint32_t)(rvt_next(&seed) % 32), cz = 1 + (uint32_t)(rvt_next(&seed) % 32);
        float cell = rvt_uniform(&seed, 0.1f, 20.0f);
        float ox = rvt_uniform(&seed, -1000, 1000), oz = rvt_uniform(&seed, -1000, 1000);
        rv_stream_source src = source_at(ox + rvt_uniform(&seed, -0.2f, 1.2f) * cx * cell,
                                         oz + rvt_uniform(&seed, -0.2f, 1.2f) * cz * cell, 0.0f);
        uint32_t x = (uint32_t)(rvt_next(&seed) % cx), z = (uint32_t)(rvt_next(&seed) % cz);
        uint32_t x2 = (uint32_t)(rvt_next(&seed) % cx), z2 = (uint32_t)(rvt_next(&seed) % cz);
        rv_grid *probe = make_grid(desc_of(3, ox, oz, cell, cx, cz, 0.0f));
        float d, d2;
        assert_int_equal(rv_grid_distance_to(probe, x, z, src.position, &d), RV_OK);
        assert_int_equal(rv_grid_distance_to(probe, x2, z2, src.position, &d2), RV_OK);
        rv_grid_destroy(probe);
        src.radius = d < d2 ? d : d2;
        float lead = (d < d2 ? d2 : d) - src.radius;
        rv_grid *g = make_grid(desc_of(3, ox, oz, cell, cx, cz, lead));
        rv_residency *r = make_residency();
        ref_cell *ref = calloc((size_t)cx * cz, sizeof *ref);
        uint32_t ref_touched, ref_requested;
        reference_update(g, &src, 1, ref, &ref_touched, &ref_requested);
        assert_int_equal(rv_grid_update(g, &src, 1, r), RV_OK);
        rv_grid_stats st = rv_grid_get_stats(g);
        assert_int_equal(st.touched_cells, ref_touched);
        assert_int_equal(st.requested_cells, ref_requested);
        uint32_t nearer = d < d2 ? z * cx + x : z2 * cx + x2;
        assert_true(ref[nearer].touched);
        for (uint32_t i = 0; i < cx * cz; i++) {
            rv_page_info info;
            assert_int_equal(rv_residency_page_info(r, (rv_page_key){ 3, i }, &info), RV_OK);
            assert_int_equal(info.state != RV_PAGE_ABSENT, ref[i].requested);
            assert_int_equal(info.last_touched_frame == rv_residency_get_stats(r).frame, ref[i].touched);
        }
        free(ref);
        rv_residency_destroy(r);
        rv_grid_destroy(g);
    }
}

static void test_lead_ring_requests_but_does_not_touch(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 10, 20, 20, 10)); /* lead: one cell */
    rv_residency *r = make_residency();
    rv_stream_source s = source_at(105, 105, 4); /* middle of cell (10, 10) */
    assert_int_equal(rv_grid_update(g, &s, 1, r), RV_OK);
    rv_grid_stats st = rv_grid_get_stats(g);
    assert_int_equal(st.touched_cells, 1);     /* nearest neighbour is 5 away > radius 4 */
    assert_int_equal(st.requested_cells, 9);   /* 3 x 3: neighbours at 5 and 7.07 <= 14 */
    uint64_t frame = rv_residency_get_stats(r).frame;
    for (uint32_t z = 9; z <= 11; z++)
        for (uint32_t x = 9; x <= 11; x++) {
            rv_page_key key;
            assert_int_equal(rv_grid_key_of(g, x, z, &key), RV_OK);
            rv_page_info info;
            assert_int_equal(rv_residency_page_info(r, key, &info), RV_OK);
            assert_int_equal(info.state, RV_PAGE_REQUESTED);
            assert_int_equal(info.last_wanted_frame, frame);
            assert_int_equal(info.last_touched_frame == frame, x == 10 && z == 10);
        }
    /* The lead ring is prefetch: requests say so. It waits until a page size is known (the
     * first placement, here). */
    rv_page_request req[16];
    uint32_t n;
    assert_int_equal(rv_residency_take_requests(r, req, 16, &n), RV_OK);
    assert_int_equal(n, 1);
    assert_int_equal(req[0].key.index, 10 * 20 + 10);
    assert_true(req[0].flags & RV_PAGE_REQUEST_IN_USE);
    assert_int_equal(rv_residency_place(r, req[0].key, 4096), RV_OK);
    assert_int_equal(rv_residency_take_requests(r, req, 16, &n), RV_OK);
    assert_int_equal(n, 8);
    for (uint32_t i = 0; i < n; i++)
        assert_false(req[i].flags & RV_PAGE_REQUEST_IN_USE);
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

static void test_update_cost_does_not_depend_on_grid_size(void **state)
{
    (void)state;
    rv_grid *big = make_grid(desc_of(1, 0, 0, 1, 4096, 4096, 2));
    rv_grid *small = make_grid(desc_of(2, 0, 0, 1, 64, 64, 2));
    rv_residency *r = make_residency();
    rv_stream_source s = source_at(32.25f, 30.5f, 8);
    assert_int_equal(rv_grid_update(big, &s, 1, r), RV_OK);
    assert_int_equal(rv_grid_update(small, &s, 1, r), RV_OK);
    rv_grid_stats a = rv_grid_get_stats(big), b = rv_grid_get_stats(small);
    assert_true(a.cells_visited > 0);
    assert_true(a.cells_visited <= 21 * 21); /* the source's square, not 16 M cells */
    assert_int_equal(a.cells_visited, b.cells_visited);
    assert_int_equal(a.touched_cells, b.touched_cells);
    assert_int_equal(a.requested_cells, b.requested_cells);
    /* The same cells, cell by cell. */
    for (uint32_t z = 0; z < 64; z++)
        for (uint32_t x = 0; x < 64; x++) {
            rv_page_info ia, ib;
            assert_int_equal(rv_residency_page_info(r, (rv_page_key){ 1, z * 4096 + x }, &ia), RV_OK);
            assert_int_equal(rv_residency_page_info(r, (rv_page_key){ 2, z * 64 + x }, &ib), RV_OK);
            assert_int_equal(ia.state, ib.state);
            assert_int_equal(ia.last_touched_frame, ib.last_touched_frame);
            assert_float_equal(ia.distance, ib.distance, 0);
        }
    /* A source far away on the big grid still visits only its own square. */
    rv_stream_source far = source_at(4000.5f, 100.5f, 8);
    assert_int_equal(rv_grid_update(big, &far, 1, r), RV_OK);
    assert_int_equal(rv_grid_get_stats(big).cells_visited, 21 * 21);
    rv_residency_destroy(r);
    rv_grid_destroy(big);
    rv_grid_destroy(small);
}

static void test_sources_out_of_reach_touch_nothing_and_edges_clip(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 10, 10, 10, 5));
    rv_residency *r = make_residency();
    rv_stream_source away[4] = { source_at(-100, 50, 20), source_at(50, 500, 20), source_at(1e30f, -1e30f, 1e3f),
                                 source_at(130, 50, 10) /* reach 15 ends 15 short of x = 100 */ };
    assert_int_equal(rv_grid_update(g, away, 4, r), RV_OK);
    rv_grid_stats st = rv_grid_get_stats(g);
    assert_int_equal(st.touched_cells, 0);
    assert_int_equal(st.requested_cells, 0);
    assert_int_equal(st.cells_visited, 0);
    assert_int_equal(rv_residency_get_stats(r).pages_requested, 0);
    /* Zero sources: nothing, and NULL is fine then. */
    assert_int_equal(rv_grid_update(g, NULL, 0, r), RV_OK);
    assert_int_equal(rv_grid_get_stats(g).cells_visited, 0);
    /* A source just outside the edge reaches the edge cells within its radius (distance to
     * the cell, consistently), and its square is clipped to the grid. */
    rv_stream_source edge = source_at(103, 55, 4);
    assert_int_equal(rv_grid_update(g, &edge, 1, r), RV_OK);
    st = rv_grid_get_stats(g);
    assert_int_equal(st.touched_cells, 1);     /* (9, 5): 3 away */
    assert_int_equal(st.requested_cells, 3);   /* (9, 4..6): 3 away, and 5.83 in the lead */
    assert_int_equal(st.cells_visited, 3);     /* x 9..11 clipped to 9, z 4..6 */
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

static void test_overlapping_sources_count_once_and_keep_the_smallest_distance(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 1, 32, 32, 1));
    rv_residency *r = make_residency();
    rv_stream_source one = source_at(10.5f, 10.5f, 3);
    assert_int_equal(rv_grid_update(g, &one, 1, r), RV_OK);
    rv_grid_stats single = rv_grid_get_stats(g);
    rv_stream_source twice[3] = { one, one, source_at(11.5f, 10.5f, 3) };
    assert_int_equal(rv_grid_update(g, twice, 2, r), RV_OK);
    rv_grid_stats doubled = rv_grid_get_stats(g);
    assert_int_equal(doubled.touched_cells, single.touched_cells);
    assert_int_equal(doubled.requested_cells, single.requested_cells);
    assert_int_equal(doubled.cells_visited, 2 * single.cells_visited); /* visits, not cells */
    assert_int_equal(rv_residency_get_stats(r).pages_requested, single.requested_cells);

    /* Cell (14, 10) is 3.5 from the first source (in lead) and 2.5 from the third (touched). */
    assert_int_equal(rv_grid_update(g, twice, 3, r), RV_OK);
    rv_page_info info;
    assert_int_equal(rv_residency_page_info(r, (rv_page_key){ 1, 10 * 32 + 14 }, &info), RV_OK);
    assert_float_equal(info.distance, 2.5f, 1e-6);
    assert_int_equal(info.last_touched_frame, rv_residency_get_stats(r).frame);
    /* The union of two overlapping discs, counted once. */
    ref_cell ref[32 * 32];
    uint32_t t, q;
    reference_update(g, twice, 3, ref, &t, &q);
    assert_int_equal(rv_grid_get_stats(g).touched_cells, t);
    assert_int_equal(rv_grid_get_stats(g).requested_cells, q);
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

static void test_update_refuses_bad_arguments_and_changes_nothing(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 1, 16, 16, 1));
    rv_residency *r = make_residency();
    rv_stream_source good = source_at(8, 8, 2);
    assert_int_equal(rv_grid_update(g, &good, 1, r), RV_OK);
    rv_grid_stats before = rv_grid_get_stats(g);
    rv_residency_stats rbefore = rv_residency_get_stats(r);

    rv_stream_source bad[2] = { source_at(2, 2, 1), good };
    assert_int_equal(rv_grid_update(NULL, &good, 1, r), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_update(g, &good, 1, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_grid_update(g, NULL, 1, r), RV_ERR_INVALID_ARG);
    bad[1].radius = -1;
    assert_int_equal(rv_grid_update(g, bad, 2, r), RV_ERR_INVALID_ARG);
    bad[1].radius = NAN;
    assert_int_equal(rv_grid_update(g, bad, 2, r), RV_ERR_NOT_FINITE);
    bad[1] = good;
    bad[1].position[1] = INFINITY;
    assert_int_equal(rv_grid_update(g, bad, 2, r), RV_ERR_NOT_FINITE);
    bad[1].position[1] = 0;
    bad[1].position[2] = NAN;
    assert_int_equal(rv_grid_update(g, bad, 2, r), RV_ERR_NOT_FINITE);
    /* More cells than one update may examine (2^24; here 2^32 - 2^17 + 1): refused before
     * anything is reserved. */
    rv_grid *huge = make_grid(desc_of(5, 0, 0, 1, 65535, 65535, 0));
    enum { MANY = 2 };
    rv_stream_source all[MANY];
    for (int i = 0; i < MANY; i++)
        all[i] = source_at(32768, 32768, 1e6f);
    rv_alloc_stats abefore = rv_residency_alloc_stats(r);
    assert_int_equal(rv_grid_update(huge, all, MANY, r), RV_ERR_CAPACITY);
    assert_int_equal(rv_residency_alloc_stats(r).allocations, abefore.allocations);
    assert_int_equal(rv_residency_alloc_stats(r).reallocations, abefore.reallocations);
    /* Just past the limit: one source over 4097 x 4096 cells (2^24 + 4096) is refused at
     * once, without reserving a page record. */
    rv_grid *wide = make_grid(desc_of(6, 0, 0, 1, 4097, 4096, 0));
    rv_stream_source over = source_at(2048, 2048, 1e6f);
    assert_int_equal(rv_grid_update(wide, &over, 1, r), RV_ERR_CAPACITY);
    assert_int_equal(rv_residency_alloc_stats(r).allocations, abefore.allocations);
    rv_grid_destroy(wide);

    rv_grid_stats after = rv_grid_get_stats(g);
    rv_residency_stats rafter = rv_residency_get_stats(r);
    assert_memory_equal(&after, &before, sizeof after);
    assert_int_equal(rafter.pages_requested, rbefore.pages_requested);
    assert_int_equal(rafter.requested, rbefore.requested);
    assert_int_equal(state_of(r, (rv_page_key){ 1, 2 * 16 + 2 }), RV_PAGE_ABSENT);
    rv_grid_destroy(huge);
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

static void test_large_square_over_known_pages_reserves_nothing_more(void **state)
{
    (void)state;
    rv_grid *g = make_grid(desc_of(1, 0, 0, 1, 256, 256, 0));
    rv_residency *r = make_residency();
    rv_stream_source s = source_at(128, 128, 100); /* ~31,400 cells in a 201 x 201 square */
    assert_int_equal(rv_grid_update(g, &s, 1, r), RV_OK);
    uint32_t requested = rv_grid_get_stats(g).requested_cells;
    assert_true(requested > 30000);
    rv_alloc_stats first = rv_residency_alloc_stats(r);
    /* Again, slightly moved: the square alone would ask for room for 40,401 more pages; the
     * few that are new are counted instead, so the table does not double. */
    for (int f = 1; f <= 3; f++) {
        assert_int_equal(rv_residency_begin_frame(r, f * 16.0), RV_OK);
        s.position[0] += 0.5f;
        assert_int_equal(rv_grid_update(g, &s, 1, r), RV_OK);
    }
    rv_alloc_stats later = rv_residency_alloc_stats(r);
    assert_true(later.bytes_live <= first.bytes_live + first.bytes_live / 4);
    assert_true(rv_residency_get_stats(r).pages_requested >= rv_grid_get_stats(g).requested_cells);
    rv_residency_destroy(r);
    rv_grid_destroy(g);
}

/* ---- allocation failures --------------------------------------------------------------- */

typedef struct sweep_env {
    rv_grid *grid;
    rv_residency *residency;
    rv_allocator allocator;
} sweep_env;

static void *sweep_setup(const rv_allocator *a)
{
    sweep_env *e = calloc(1, sizeof *e);
    rv_residency_desc rd = {0};
    rd.allocator = *a;
    rd.page_capacity = 4; /* so the update must grow everything */
    assert_int_equal(rv_residency_create(&rd, &e->residency), RV_OK);
    assert_int_equal(rv_residency_begin_frame(e->residency, 0), RV_OK);
    rv_grid_desc gd = desc_of(1, 0, 0, 1, 64, 64, 2);
    gd.allocator = *a;
    assert_int_equal(rv_grid_create(&gd, &e->grid), RV_OK);
    rv_stream_source s = source_at(3, 3, 1); /* a few pages known before the call */
    assert_int_equal(rv_grid_update(e->grid, &s, 1, e->residency), RV_OK);
    return e;
}

static rv_result sweep_update(void *obj)
{
    sweep_env *e = obj;
    rv_stream_source s[2] = { source_at(20, 20, 6), source_at(40, 30, 4) };
    return rv_grid_update(e->grid, s, 2, e->residency);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t sweep_fingerprint(void *obj)
{
    sweep_env *e = obj;
    rv_grid_stats gs = rv_grid_get_stats(e->grid);
    rv_residency_stats rs = rv_residency_get_stats(e->residency);
    uint64_t h = mix(mix(mix(0, gs.touched_cells), gs.requested_cells), gs.cells_visited);
    h = mix(mix(mix(h, rs.pages_requested), rs.requested), rs.pages_resident);
    for (uint32_t i = 0; i < 64 * 64; i++) {
        rv_page_info info;
        assert_int_equal(rv_residency_page_info(e->residency, (rv_page_key){ 1, i }, &info), RV_OK);
        uint32_t dbits;
        memcpy(&dbits, &info.distance, 4);
        h = mix(mix(mix(h, info.state), dbits), info.last_touched_frame);
    }
    return h;
}

static void sweep_teardown(void *obj)
{
    sweep_env *e = obj;
    rv_grid_destroy(e->grid);
    rv_residency_destroy(e->residency);
    free(e);
}

static void *create_setup(const rv_allocator *a)
{
    sweep_env *e = calloc(1, sizeof *e);
    e->allocator = *a;
    return e;
}

static rv_result create_call(void *obj)
{
    sweep_env *e = obj;
    rv_grid_desc gd = desc_of(1, 0, 0, 1, 64, 64, 2);
    gd.allocator = e->allocator;
    return rv_grid_create(&gd, &e->grid);
}

static uint64_t create_fingerprint(void *obj)
{
    sweep_env *e = obj;
    return (uint64_t)(uintptr_t)e->grid;
}

static void create_teardown(void *obj)
{
    sweep_env *e = obj;
    rv_grid_destroy(e->grid);
    free(e);
}

static void test_update_and_create_survive_every_allocation_failure(void **state)
{
    (void)state;
    rvt_sweep update = { "grid_update", sweep_setup, sweep_update, sweep_fingerprint, sweep_teardown };
    assert_true(rvt_run_sweep(&update) >= 3); /* records, heaps and map grow */
    rvt_sweep create = { "grid_create", create_setup, create_call, create_fingerprint, create_teardown };
    assert_int_equal(rvt_run_sweep(&create), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_refuses_each_bad_field_and_makes_nothing),
        cmocka_unit_test(test_create_resolves_eye_radius_and_keeps_fields),
        cmocka_unit_test(test_key_of_and_cell_of_round_trip_without_wrapping),
        cmocka_unit_test(test_bounds_of_follow_origin_and_cell_size),
        cmocka_unit_test(test_distance_is_to_the_cell_zero_inside_never_to_the_centre),
        cmocka_unit_test(test_strafe_along_a_cell_keeps_the_load_boundary_still),
        cmocka_unit_test(test_update_matches_a_slow_reference_and_touched_is_within_requested),
        cmocka_unit_test(test_a_cell_at_exactly_the_radius_or_the_reach_is_in),
        cmocka_unit_test(test_lead_ring_requests_but_does_not_touch),
        cmocka_unit_test(test_update_cost_does_not_depend_on_grid_size),
        cmocka_unit_test(test_sources_out_of_reach_touch_nothing_and_edges_clip),
        cmocka_unit_test(test_overlapping_sources_count_once_and_keep_the_smallest_distance),
        cmocka_unit_test(test_update_refuses_bad_arguments_and_changes_nothing),
        cmocka_unit_test(test_large_square_over_known_pages_reserves_nothing_more),
        cmocka_unit_test(test_update_and_create_survive_every_allocation_failure),
    };
    return cmocka_run_group_tests_name("grid", tests, NULL, NULL);
}
