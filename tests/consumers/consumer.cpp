// The same check from C++ (an engine's renderer): the public header under the C++ standard
// the build asks for, with -Wall -Wextra -pedantic -Werror.
#include <rvis.h>

#include <cstdio>

int main()
{
    rv_world *world = nullptr;
    rv_world_desc desc = {};
    if (rv_version() != RV_VERSION || rv_world_create(&desc, &world) != RV_OK)
        return 1;
    rv_node node;
    const float ahead[3] = { 0, 0, -10 }, centre[3] = { 0, 0, 0 };
    bool ok = rv_node_create(world, RV_NODE_NONE, &node) == RV_OK &&
              rv_node_set_position(world, node, ahead) == RV_OK &&
              rv_node_set_bounds(world, node, centre, 1) == RV_OK;
    const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const float projection[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };
    rv_view view = {};
    view.view = identity;
    view.projection = projection;
    view.viewport_width = view.viewport_height = 64;
    rv_frame_view out;
    ok = ok && rv_frame(world, &view, &out) == RV_OK && out.opaque_count == 1 &&
         rv_node_equal(out.opaque[0].node, node);
    rv_world_destroy(world);
    std::printf("rvis from C++%ld: %s\n", static_cast<long>(__cplusplus / 100 % 100), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
