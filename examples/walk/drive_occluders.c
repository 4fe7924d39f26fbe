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
    for (uint32_t k = 0; k < level->convex_count; k++) {
        const rvw_convex *c = &level->convexes[k];
        if (!(c->flags & RVW_CONVEX_OCCLUDER) || c->side_count > RVW_OCCLUDER_MAX_SIDES)
            continue;
        float planes[RVW_OCCLUDER_MAX_SIDES][4];
        for (uint32_t j = 0; j < c->side_count; j++)
            memcpy(planes[j], level->convex_sides[c->first_side + j].plane, sizeof planes[j]);
        rv_occluder_convex convex = { (const float(*)[4])planes, c->side_count, RV_OCCLUDER_EXACT };
        if (!occluder_node(world, &root, &n, err, errlen) ||
            !check(rv_node_set_occluder_convex(world, n, &convex), "an occluder brush", err, errlen))
            return false;
    }
    for (uint32_t k = 0; k < level->mesh_count; k++) {
        const rvw_mesh *m = &level->meshes[k];
        if (!(m->flags & RVW_MESH_OCCLUDER))
            continue;
        rv_occluder_mesh mesh = {
            .positions = (const float(*)[3])(level->mesh_positions + (size_t)m->first_vertex * 3),
            .vertex_count = m->vertex_count,
            .indices = level->occluder_indices + m->occluder_first_index,
            .index_count = m->occluder_index_count,
            .flags = 0,
        };
        if (!occluder_node(world, &root, &n, err, errlen) ||
            !check(rv_node_set_occluder_mesh(world, n, &mesh), "an occluder mesh", err, errlen))
            return false;
    }
    return true;
}
