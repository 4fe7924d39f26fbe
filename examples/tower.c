/* The tower from the scene-graph guide (docs/scene.md), in C: ten blocks under one root.
 * Move the root and every block moves with it; cull from a camera and print what the walk
 * saved. Uses only the public header: no cglm needed on the host's side.
 *
 *   ./tower            prints the visible blocks and the walk's counts for three cameras */
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Column-major 4x4 helpers a host would already have (OpenGL clip conventions). */
static void mat4_mul(const float a[16], const float b[16], float out[16])
{
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += a[k * 4 + r] * b[c * 4 + k];
            out[c * 4 + r] = acc;
        }
}

static void perspective(float fov_y, float aspect, float near, float far, float out[16])
{
    float f = 1.0f / tanf(fov_y / 2);
    memset(out, 0, 16 * sizeof *out);
    out[0] = f / aspect;
    out[5] = f;
    out[10] = (far + near) / (near - far);
    out[11] = -1;
    out[14] = 2 * far * near / (near - far);
}

static void look_at(const float eye[3], const float target[3], float out[16])
{
    float f[3] = { target[0] - eye[0], target[1] - eye[1], target[2] - eye[2] };
    float fl = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= fl;
    /* side = f x up (up = +Y), then true up = side x f */
    float s[3] = { -f[2], 0, f[0] };
    float sl = sqrtf(s[0] * s[0] + s[2] * s[2]);
    s[0] /= sl;
    s[2] /= sl;
    float u[3] = { s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0] };
    float m[16] = { s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0, 0, 0, 0, 1 };
    for (int r = 0; r < 3; r++)
        m[12 + r] = -(m[r] * eye[0] + m[4 + r] * eye[1] + m[8 + r] * eye[2]);
    memcpy(out, m, sizeof m);
}

#define CHECK(call)                                                                     \
    do {                                                                                \
        rv_result r_ = (call);                                                          \
        if (r_ != RV_OK) {                                                              \
            fprintf(stderr, "tower: %s failed: %s\n", #call, rv_result_string(r_));     \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* The host's draw: here it just prints where the block would be drawn. */
static bool draw_block(rv_node node, const float world_matrix[16], void *user)
{
    int *drawn = user;
    (*drawn)++;
    (void)node; /* a host would look up its mesh for this node */
    printf("    draw block at (%.2f, %.2f, %.2f)\n", world_matrix[12], world_matrix[13], world_matrix[14]);
    return true;
}

static int draw_visible(rv_world *world, rv_node root, const char *label, const float eye[3],
                        const float target[3])
{
    float proj[16], view[16], view_projection[16];
    perspective(60.0f * 3.14159265f / 180.0f, 16.0f / 9.0f, 0.1f, 500.0f, proj);
    look_at(eye, target, view);
    mat4_mul(proj, view, view_projection);
    rv_frustum frustum;
    rv_clip opengl = {0};
    CHECK(rv_frustum_from_view_projection(view_projection, opengl, &frustum));
    rv_cull_counts counts;
    int drawn = 0;
    printf("%s\n", label);
    CHECK(rv_visit_visible(world, root, &frustum, draw_block, &drawn, &counts));
    /* counts say what the walk saved: a rejected parent rejects its subtree in one test */
    printf("  drawn %d: visited %u, pruned %u, tested %u\n", drawn, counts.visited, counts.pruned,
           counts.tested);
    return 0;
}

int main(void)
{
    rv_world *world;
    CHECK(rv_world_create(NULL, &world));

    /* A block mesh: a box from (-0.5, -0.5, -0.5) to (0.5, 0.5, 0.5); its bounding sphere
     * (measured when the host loaded the mesh) has radius sqrt(3) / 2. */
    const float block_center[3] = { 0, 0, 0 };
    const float block_radius = 0.8660254f;

    rv_node root;
    CHECK(rv_node_create(world, RV_NODE_NONE, &root));
    for (int level = 0; level < 10; level++) {
        rv_node node;
        CHECK(rv_node_create(world, root, &node));
        const float position[3] = { 0, (float)level + 0.5f, 0 };
        CHECK(rv_node_set_position(world, node, position));
        /* the node only says it holds the mesh's bounds */
        CHECK(rv_node_set_bounds(world, node, block_center, block_radius));
    }
    const float at[3] = { 4, 0, -6 };
    CHECK(rv_node_set_position(world, root, at));
    CHECK(rv_update_world(world));

    rv_scene_stats stats = rv_world_scene_stats(world);
    printf("tower: %u nodes; first update recomputed %u matrices, %u spheres\n", stats.nodes,
           stats.matrices_recomputed, stats.bounds_recomputed);
    float sphere[4];
    CHECK(rv_node_world_bounds(world, root, sphere));
    printf("tower bounds: centre (%.2f, %.2f, %.2f), radius %.2f\n", sphere[0], sphere[1], sphere[2],
           sphere[3]);

    const float eye[3] = { 0, 5, 10 };
    const float toward_tower[3] = { 4, 5, -6 };
    if (draw_visible(world, root, "camera looking at the tower:", eye, toward_tower))
        return 1;
    const float low_target[3] = { 4, -4, -6 };
    if (draw_visible(world, root, "camera looking low (the top blocks leave the view):", eye, low_target))
        return 1;

    /* Move the root and every block moves with it: only the root's subtree is recomputed. */
    const float far_away[3] = { 200, 0, 200 };
    CHECK(rv_node_set_position(world, root, far_away));
    CHECK(rv_update_world(world));
    stats = rv_world_scene_stats(world);
    printf("moved the root: recomputed %u matrices, %u spheres\n", stats.matrices_recomputed,
           stats.bounds_recomputed);
    if (draw_visible(world, root, "camera looking where the tower was:", eye, toward_tower))
        return 1;

    rv_world_destroy(world);
    return 0;
}
