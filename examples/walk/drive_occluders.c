/* rvis-walk: a map's occluders as rvis nodes (see drive_occluders.h). */
#include "drive_occluders.h"

#include <stdio.h>
#include <string.h>

static bool check(rv_result r, const char *what, char *err, size_t errlen)
{
    if (r == RV_OK)
        return true;
    snprintf(err, errlen, "rvis refused %s: %s", what, rv_result_string(r));
    return false;
}

/* A node without geometry under root (made on first use) carrying one occluder. */
static bool occluder_node(rv_world *world, rv_node *root, rv_node *out, char *err, size_t errlen)
{
    if (root->id == 0 && !check(rv_node_create(world, RV_NODE_NONE, root), "a root node", err, errlen))
        return false;
    return check(rv_node_create(world, *root, out), "an occluder node", err, errlen);
}

bool rvw_drive_map_occluders(rv_world *world, const rvw_level *level, char *err, size_t errlen)
{
    rv_node root = RV_NODE_NONE, n;
    for (uint32_t k = 0; k < level->mesh_count; k++) {
        const rvw_mesh *m = &level->meshes[k];
        if (!(m->flags & RVW_MESH_OCCLUDER))
            continue;
        rv_occluder_mesh mesh = {
            .positions = (const float(*)[3])(level->mesh_positions + (size_t)m->first_vertex * 3),
            .vertex_count = m->vertex_count,
            .indices = level->mesh_indices + m->first_index,
            .index_count = m->index_count,
            .flags = 0,
        };
        if (!occluder_node(world, &root, &n, err, errlen) ||
            !check(rv_node_set_occluder_mesh(world, n, &mesh), "an occluder mesh", err, errlen))
            return false;
    }
    return true;
}
