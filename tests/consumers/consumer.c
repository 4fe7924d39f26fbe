/* A program that uses an installed (or subproject) rvis the way a host would: its own
 * build, the public header only. Exit 0 when the library it runs with is the version its
 * header names and one frame culls as expected. */
#include <rvis.h>

#include <stdio.h>

int main(void)
{
    if (rv_version() != RV_VERSION) {
        fprintf(stderr, "library %u.%u.%u, header %d.%d.%d\n", (unsigned)RV_VERSION_MAJOR_OF(rv_version()),
                (unsigned)RV_VERSION_MINOR_OF(rv_version()), (unsigned)RV_VERSION_PATCH_OF(rv_version()),
                RV_VERSION_MAJOR, RV_VERSION_MINOR, RV_VERSION_PATCH);
        return 1;
    }
    rv_world *world;
    rv_world_desc desc = {0};
    if (rv_world_create(&desc, &world) != RV_OK)
        return 1;
    /* one node in front of the camera, one behind it: the frustum keeps one */
    const float ahead[3] = { 0, 0, -10 }, behind[3] = { 0, 0, 10 }, centre[3] = { 0, 0, 0 };
    rv_node a, b;
    if (rv_node_create(world, RV_NODE_NONE, &a) != RV_OK || rv_node_create(world, RV_NODE_NONE, &b) != RV_OK ||
        rv_node_set_position(world, a, ahead) != RV_OK || rv_node_set_position(world, b, behind) != RV_OK ||
        rv_node_set_bounds(world, a, centre, 1) != RV_OK || rv_node_set_bounds(world, b, centre, 1) != RV_OK)
        return 1;
    const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float projection[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };
    rv_view view = { .view = identity, .projection = projection, .viewport_width = 64, .viewport_height = 64 };
    rv_frame_view out;
    rv_result r = rv_frame(world, &view, &out);
    int ok = r == RV_OK && out.opaque_count == 1 && rv_node_equal(out.opaque[0].node, a);
    rv_world_destroy(world);
    printf("rvis %u.%u.%u: %s\n", (unsigned)RV_VERSION_MAJOR_OF(rv_version()), (unsigned)RV_VERSION_MINOR_OF(rv_version()),
           (unsigned)RV_VERSION_PATCH_OF(rv_version()), ok ? "one frame culled as expected" : rv_result_string(r));
    return ok ? 0 : 1;
}
