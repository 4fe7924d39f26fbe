/* rvis-walk's bridge to rvis (see drive.h), for the stages that exist before rv_frame:
 * the node hierarchy (rv_node_create / rv_node_set_bounds / rv_update_world) and the
 * frustum (rv_frustum_from_view_projection, rv_frustum_classify_sphere / _box).
 *
 * Every level group becomes a node without geometry, every object a node with its
 * bounding sphere under its group's node. Per frame the movers' nodes are moved, the world
 * updated, and the hierarchy walked here: a group whose world sphere the frustum rejects
 * culls its whole subtree, a surviving object is tested by its world box. HLOD stand-ins
 * are never drawn (without the HLOD stage every region is refined), so they are excluded.
 *
 * When rv_frame lands, this file becomes: create the world with the occlusion / LOD /
 * partition / residency descs, attach ladders, HLOD regions, occluder boxes, partition
 * groups and grids to the same nodes, register vehicles through the journal, then per
 * frame call rv_frame and translate its draw list and per-stage counts into verdicts. */
#include "drive.h"

#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rvw_drive {
    rv_world *world;
    rv_node *group_nodes;     /* per level group */
    rv_node *object_nodes;    /* per level object */
    uint8_t *group_culled;    /* per group, this frame */
    uint8_t *verdict;         /* per object, this frame */
    uint32_t group_count, object_count;
};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static bool check(rv_result r, const char *what, char *err, size_t errlen)
{
    if (r == RV_OK)
        return true;
    snprintf(err, errlen, "rvis refused %s: %s", what, rv_result_string(r));
    return false;
}

const char *rvw_drive_stages(void)
{
    return "nodes + frustum (rv_frame not joined yet: no occlusion, LOD, HLOD, partition, "
           "journal or streaming)";
}

/* The bounding sphere of a box: its centre and half its diagonal. */
static void box_sphere(const rvw_box *b, float center[3], float *radius)
{
    float r2 = 0;
    for (int k = 0; k < 3; k++) {
        center[k] = 0.5f * (b->min[k] + b->max[k]);
        float e = 0.5f * (b->max[k] - b->min[k]);
        r2 += e * e;
    }
    *radius = sqrtf(r2);
}

static bool is_vehicle(const rvw_level *level, uint32_t object)
{
    return level->objects[object].kind == RVW_OBJ_VEHICLE;
}

bool rvw_drive_create(const rvw_level *level, rvw_drive **out, char *err, size_t errlen)
{
    rvw_drive *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    d->group_count = level->group_count;
    d->object_count = level->object_count;
    d->group_nodes = calloc(level->group_count + 1, sizeof *d->group_nodes);
    d->object_nodes = calloc(level->object_count + 1, sizeof *d->object_nodes);
    d->group_culled = calloc(level->group_count + 1, 1);
    d->verdict = calloc(level->object_count + 1, 1);
    rv_world_desc desc = { .node_capacity = level->object_count + level->group_count + 1 };
    bool ok = d->group_nodes && d->object_nodes && d->group_culled && d->verdict;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    ok = ok && check(rv_world_create(&desc, &d->world), "the world", err, errlen);
    for (uint32_t g = 0; ok && g < level->group_count; g++) {
        int32_t p = level->groups[g].parent;
        ok = check(rv_node_create(d->world, p >= 0 ? d->group_nodes[p] : RV_NODE_NONE,
                                  &d->group_nodes[g]), "a group node", err, errlen);
    }
    for (uint32_t i = 0; ok && i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        rv_node parent = o->group >= 0 ? d->group_nodes[o->group] : RV_NODE_NONE;
        ok = check(rv_node_create(d->world, parent, &d->object_nodes[i]), "an object node", err, errlen);
        float center[3], radius;
        box_sphere(&o->bounds, center, &radius);
        if (ok && is_vehicle(level, i)) { /* a mover: geometry about its node's origin */
            ok = check(rv_node_set_position(d->world, d->object_nodes[i], center), "a position", err, errlen);
            center[0] = center[1] = center[2] = 0;
        }
        ok = ok && check(rv_node_set_bounds(d->world, d->object_nodes[i], center, radius),
                         "an object's bounds", err, errlen);
    }
    ok = ok && check(rv_update_world(d->world), "the first update", err, errlen);
    if (!ok) {
        rvw_drive_destroy(d);
        return false;
    }
    *out = d;
    return true;
}

bool rvw_drive_frame(rvw_drive *d, const rvw_level *level, const rvw_view *view,
                     rvw_frame_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (int s = 0; s < RVW_STAGE_COUNT; s++)
        out->stage_us[s] = -1;
    out->occlusion_culled = out->partition_hidden = out->lod_levels_mask = -1;
    out->hlod_refined = out->journal_deltas = out->pages_requested = out->pages_evicted = -1;

    double t0 = now_us();
    for (uint32_t i = 0; i < level->object_count; i++) {
        if (!is_vehicle(level, i))
            continue;
        float center[3], radius;
        box_sphere(&level->objects[i].bounds, center, &radius);
        if (!check(rv_node_set_position(d->world, d->object_nodes[i], center), "a vehicle position", err, errlen))
            return false;
    }
    if (!check(rv_update_world(d->world), "the world update", err, errlen))
        return false;
    double t1 = now_us();

    rv_frustum frustum;
    rv_clip clip = { false, false };
    if (!check(rv_frustum_from_view_projection(view->view_projection, clip, &frustum), "the view", err, errlen))
        return false;
    for (uint32_t g = 0; g < level->group_count; g++) {
        int32_t p = level->groups[g].parent;
        float sphere[4];
        if (p >= 0 && d->group_culled[p]) {
            d->group_culled[g] = 1;
        } else if (rv_node_world_bounds(d->world, d->group_nodes[g], sphere) != RV_OK) {
            d->group_culled[g] = 0; /* cannot tell: draw */
        } else {
            d->group_culled[g] = sphere[3] >= 0 &&
                rv_frustum_classify_sphere(&frustum, sphere, sphere[3]) == RV_OUTSIDE;
        }
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        uint8_t v;
        if (o->kind == RVW_OBJ_HLOD_PROXY)
            v = RVW_EXCLUDED;
        else if (o->group >= 0 && d->group_culled[o->group])
            v = RVW_CULLED_FRUSTUM;
        else
            v = rv_frustum_classify_box(&frustum, o->bounds.min, o->bounds.max) == RV_OUTSIDE
                    ? RVW_CULLED_FRUSTUM : RVW_DRAWN;
        d->verdict[i] = v;
        out->drawn += v == RVW_DRAWN;
        out->excluded += v == RVW_EXCLUDED;
    }
    double t2 = now_us();
    out->frustum_visible = out->drawn;
    out->verdict = d->verdict;
    out->stage_us[RVW_STAGE_TRANSFORMS] = t1 - t0;
    out->stage_us[RVW_STAGE_FRUSTUM] = t2 - t1;
    out->allocations = rv_world_alloc_stats(d->world).allocations;
    return true;
}

void rvw_drive_destroy(rvw_drive *d)
{
    if (!d)
        return;
    rv_world_destroy(d->world);
    free(d->group_nodes);
    free(d->object_nodes);
    free(d->group_culled);
    free(d->verdict);
    free(d);
}
