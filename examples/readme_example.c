#include <rvis.h>
#include <stdio.h>

/* The host's draw call (it finds its mesh by the key it gave the node); here it prints. */
static void draw(uint64_t key, uint32_t lod_level, const float world_matrix[16])
{
    printf("  draw mesh %u LOD %u at (%.1f, %.1f, %.1f)\n", (unsigned)key, lod_level, world_matrix[12],
           world_matrix[13], world_matrix[14]);
}

int main(void)
{
    rv_world *world;
    rv_world_desc desc = {0};             /* zero = every default */
    desc.occlusion.width = 256;           /* CPU occlusion buffer on (0 = off) */
    if (rv_world_create(&desc, &world) != RV_OK)
        return 1;

    rv_node crate;
    rv_node_create(world, RV_NODE_NONE, &crate);
    rv_node_set_position(world, crate, (float[3]){ 0, 0.5f, -10 });
    rv_node_set_bounds(world, crate, (float[3]){ 0, 0, 0 }, 0.87f);   /* local sphere */
    rv_node_set_key(world, crate, 7);     /* the host's own id: its mesh 7 */

    rv_node wall;                         /* something that hides things */
    rv_node_create(world, RV_NODE_NONE, &wall);
    rv_node_set_occluder_box(world, wall, (float[3]){ -6, 0, -5.2f }, (float[3]){ 6, 8, -5 });

    /* Camera: eye at (x, 1.7, 0) looking down -Z; 90 degrees vertical, 16:9, near 0.1,
     * far 100, OpenGL clip. Matrices are column-major float[16]. */
    float view_matrix[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1.7f, 0, 1 };
    const float projection_matrix[16] = { 0.5625f, 0, 0, 0, 0, 1, 0, 0,
                                          0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };

    for (int frame = 0; frame < 3; frame++) {
        view_matrix[12] = -7.0f * (float)frame;   /* steps right: the wall stops hiding the crate */
        rv_view view = { .view = view_matrix, .projection = projection_matrix,
                         .viewport_width = 1920, .viewport_height = 1080, .time_ms = 16.0 * frame };
        rv_frame_view out;
        if (rv_frame(world, &view, &out) != RV_OK)
            break;
        printf("frame %d: %u to draw\n", frame, out.opaque_count);
        for (uint32_t i = 0; i < out.opaque_count; i++)
            draw(out.opaque[i].key, out.opaque[i].lod_level, out.opaque[i].world_matrix);
        /* out stays valid until the frame after next; rv_frame_view_is_valid() tells */
    }
    rv_world_destroy(world);
    return 0;
}
