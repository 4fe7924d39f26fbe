/* The frame loop of docs/frame.md: a street of crates behind a wall, a door that occludes
 * for some frames only, one streamed grid, an extra view, and the tick demand an on-demand
 * loop would sleep on. Public header only.
 *
 *   ./frame_minimal    prints what each frame draws, the page requests it answers, its
 *                      tick demand and its per-stage times */
#define _POSIX_C_SOURCE 200809L
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t monotonic_ns(void *user)
{
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A camera at (x, 1.7, z) looking down -Z: view and OpenGL projection, column-major. */
static void camera(float x, float z, float view[16], float projection[16])
{
    const float v[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -x, -1.7f, -z, 1 };
    const float n = 0.1f, f = 500.0f, t = 1.0f / tanf(0.5f), aspect = 16.0f / 9.0f;
    const float p[16] = { t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (f + n) / (n - f), -1, 0, 0, 2 * f * n / (n - f), 0 };
    memcpy(view, v, sizeof v);
    memcpy(projection, p, sizeof p);
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        rv_result r_ = (call);                                                      \
        if (r_ != RV_OK) {                                                          \
            fprintf(stderr, "%s: %s\n", #call, rv_result_string(r_));               \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main(void)
{
    rv_world_desc desc = { 0 };
    desc.occlusion.width = 256;    /* the main view's occluder buffer */
    desc.clock_ns = monotonic_ns;  /* per-stage times in every frame view */
    rv_world *world;
    CHECK(rv_world_create(&desc, &world));

    /* Ten crates along the street under one group node, and a wall across it at z = -40. */
    rv_node street, wall, crates[10];
    CHECK(rv_node_create(world, RV_NODE_NONE, &street));
    for (int i = 0; i < 10; i++) {
        const float position[3] = { (i % 2) ? 3.0f : -3.0f, 0.5f, -10.0f - 8.0f * (float)i };
        const float centre[3] = { 0, 0, 0 }, low[3] = { -0.5f, -0.5f, -0.5f }, high[3] = { 0.5f, 0.5f, 0.5f };
        CHECK(rv_node_create(world, street, &crates[i]));
        CHECK(rv_node_set_position(world, crates[i], position));
        CHECK(rv_node_set_bounds(world, crates[i], centre, 0.87f)); /* encloses the crate */
        CHECK(rv_node_set_test_box(world, crates[i], low, high));   /* tighter for occlusion */
    }
    const float wall_min[3] = { -20, -1, -41 }, wall_max[3] = { 20, 12, -40 }; /* into the ground */
    CHECK(rv_node_create(world, RV_NODE_NONE, &wall));
    CHECK(rv_node_set_occluder_box(world, wall, wall_min, wall_max));

    /* A terrain grid of 16 m pages; the eye is its stream source (radius 4 pages). */
    rv_grid_desc grid = { 0 };
    grid.source = 1;
    grid.origin[0] = grid.origin[1] = -256;
    grid.cell_size = 16;
    grid.count_x = grid.count_z = 32;
    grid.lead = 16;
    CHECK(rv_world_add_grid(world, &grid, NULL));

    rv_view_list *extra_list;
    CHECK(rv_view_list_create(world, &extra_list));

    double now_ms = 0;
    for (int frame = 0; frame < 6; frame++, now_ms += 16.0) {
        float view[16], projection[16];
        camera(0, -4.0f * (float)frame, view, projection);
        rv_view v = { 0 };
        v.view = view;
        v.projection = projection;
        v.viewport_width = 1280;
        v.viewport_height = 720;
        v.time_ms = now_ms;

        CHECK(rv_frame_begin(world, &v));
        if (frame >= 3) { /* a door closes across the street: an occluder for this frame only */
            const float door_min[3] = { -5, 0, -26 }, door_max[3] = { 5, 4, -25.8f };
            CHECK(rv_frame_add_occluder(world, door_min, door_max, NULL));
        }
        CHECK(rv_frame_cull(world));
        rv_frame_view out;
        CHECK(rv_frame_end(world, &out));

        /* Draw: front to back; the view is borrowed until the frame after next. */
        printf("frame %d: %u drawn (", frame, out.opaque_count);
        for (uint32_t i = 0; i < out.opaque_count; i++)
            for (int c = 0; c < 10; c++)
                if (rv_node_equal(out.opaque[i].node, crates[c]))
                    printf(" crate%d@%.0fm", c, out.opaque[i].view_depth);
        printf(" ), %u hidden by occluders\n", out.counts.occlusion_culled);

        /* Pages: start the loads; here every load finishes at once. */
        rv_residency *residency = rv_world_residency(world);
        for (uint32_t i = 0; i < out.page_request_count; i++)
            CHECK(rv_residency_place(residency, out.page_requests[i].key, 64 * 1024));
        printf("  %u page requests answered, %u evictions\n", out.page_request_count, out.page_eviction_count);

        /* An extra view (a shadow cascade, a mirror; here a camera 30 m further on):
         * frustum and LOD only, into its own list. */
        float extra_view[16], extra_projection[16];
        camera(0, -30, extra_view, extra_projection);
        rv_view second = v;
        second.view = extra_view;
        second.projection = extra_projection;
        rv_frame_view extra;
        CHECK(rv_cull_view(world, &second, extra_list, &extra));
        printf("  extra view: %u drawn\n", extra.opaque_count);

        printf("  stages (us): walk %.1f, occlusion %.1f, publish %.1f\n", out.stage_us[RV_STAGE_FRUSTUM],
               out.stage_us[RV_STAGE_OCCLUSION], out.stage_us[RV_STAGE_PUBLISH]);
        if (out.tick.mode == RV_TICK_CONTINUOUS)
            printf("  tick: keep running frames\n");
        else if (out.tick.mode == RV_TICK_WAKE_AT)
            printf("  tick: sleep until %.0f ms\n", out.tick.wake_at_ms);
        else
            printf("  tick: idle until the next input\n");
    }
    rv_view_list_destroy(extra_list);
    rv_world_destroy(world);
    return 0;
}
