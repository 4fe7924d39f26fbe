/* rvis-walk's bridge to rvis (see drive.h), for the stages that exist before rv_frame:
 * the node hierarchy (rv_node_create / rv_node_set_bounds / rv_update_world), spatial
 * grouping (rv_group_spatially) and the hierarchical frustum walk (rv_collect_visible).
 *
 * Every level group becomes a node without geometry, every object a node with its
 * bounding sphere under its group's node; objects without a group (a map's surfaces, the
 * city's ground tiles) go under one root per kind, grouped spatially. Vehicles sit under
 * their own root, ungrouped, because they move. HLOD stand-ins get no node: without the
 * HLOD stage every region is refined, so they are excluded. Per frame the vehicles' nodes
 * are moved, the world updated, and rv_collect_visible lists what the frustum keeps.
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
    rv_node *object_nodes;    /* per level object (none for HLOD stand-ins) */
    rv_node roots[RVW_OBJ_KIND_COUNT]; /* parent of the ungrouped objects of each kind */
    uint64_t *slot_ids;       /* hash of node id -> object: ids (0 = empty) ... */
    uint32_t *slot_objects;   /* ... and their objects */
    uint32_t slot_mask;
    rv_node *visible;         /* rv_collect_visible's output, object_count entries */
    uint8_t *verdict;         /* per object, this frame */
    uint32_t object_count;
};

static uint32_t slot_of(const rvw_drive *d, uint64_t id)
{
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & d->slot_mask;
}

static void remember(rvw_drive *d, rv_node node, uint32_t object)
{
    uint32_t s = slot_of(d, node.id);
    while (d->slot_ids[s])
        s = (s + 1) & d->slot_mask;
    d->slot_ids[s] = node.id;
    d->slot_objects[s] = object;
}

/* The object a node stands for, or UINT32_MAX for a node that is no object. */
static uint32_t object_of(const rvw_drive *d, rv_node node)
{
    for (uint32_t s = slot_of(d, node.id); d->slot_ids[s]; s = (s + 1) & d->slot_mask)
        if (d->slot_ids[s] == node.id)
            return d->slot_objects[s];
    return UINT32_MAX;
}
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
    return "nodes + hierarchical frustum (rv_frame not joined yet: no occlusion, LOD, HLOD, "
           "partition, journal or streaming)";
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

static bool build(rvw_drive *d, const rvw_level *level, char *err, size_t errlen)
{
    rv_world_desc desc = { .node_capacity = level->object_count + level->group_count + 64 };
    if (!check(rv_world_create(&desc, &d->world), "the world", err, errlen))
        return false;
    for (uint32_t g = 0; g < level->group_count; g++) {
        int32_t p = level->groups[g].parent;
        if (!check(rv_node_create(d->world, p >= 0 ? d->group_nodes[p] : RV_NODE_NONE,
                                  &d->group_nodes[g]), "a group node", err, errlen))
            return false;
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        if (o->kind == RVW_OBJ_HLOD_PROXY)
            continue;
        rv_node parent = o->group >= 0 ? d->group_nodes[o->group] : d->roots[o->kind];
        if (o->group < 0 && parent.id == 0) {
            if (!check(rv_node_create(d->world, RV_NODE_NONE, &d->roots[o->kind]), "a root node", err, errlen))
                return false;
            parent = d->roots[o->kind];
        }
        rv_node node;
        if (!check(rv_node_create(d->world, parent, &node), "an object node", err, errlen))
            return false;
        d->object_nodes[i] = node;
        remember(d, node, i);
        float center[3], radius;
        box_sphere(&o->bounds, center, &radius);
        if (o->kind == RVW_OBJ_VEHICLE) { /* a mover: geometry about its node's origin */
            if (!check(rv_node_set_position(d->world, node, center), "a position", err, errlen))
                return false;
            center[0] = center[1] = center[2] = 0;
        }
        if (!check(rv_node_set_bounds(d->world, node, center, radius), "an object's bounds", err, errlen))
            return false;
    }
    if (!check(rv_update_world(d->world), "the first update", err, errlen))
        return false;
    /* flat static lists cull hierarchically once grouped (DESIGN.md §2) */
    for (int k = 0; k < RVW_OBJ_KIND_COUNT; k++)
        if (d->roots[k].id && k != RVW_OBJ_VEHICLE &&
            !check(rv_group_spatially(d->world, d->roots[k], NULL, 0, 0, NULL), "spatial grouping", err, errlen))
            return false;
    return check(rv_update_world(d->world), "the update after grouping", err, errlen);
}

bool rvw_drive_create(const rvw_level *level, rvw_drive **out, char *err, size_t errlen)
{
    rvw_drive *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    d->object_count = level->object_count;
    uint32_t slots = 16;
    while (slots < 2 * level->object_count)
        slots *= 2;
    d->slot_mask = slots - 1;
    d->slot_ids = calloc(slots, sizeof *d->slot_ids);
    d->slot_objects = calloc(slots, sizeof *d->slot_objects);
    d->group_nodes = calloc(level->group_count + 1, sizeof *d->group_nodes);
    d->object_nodes = calloc(level->object_count + 1, sizeof *d->object_nodes);
    d->visible = calloc(level->object_count + 1, sizeof *d->visible);
    d->verdict = calloc(level->object_count + 1, 1);
    bool ok = d->slot_ids && d->slot_objects && d->group_nodes && d->object_nodes && d->visible && d->verdict;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    if (!ok || !build(d, level, err, errlen)) {
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
        if (level->objects[i].kind != RVW_OBJ_VEHICLE)
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
    uint32_t count = 0;
    if (!check(rv_frustum_from_view_projection(view->view_projection, clip, &frustum), "the view", err, errlen) ||
        !check(rv_collect_visible(d->world, RV_NODE_NONE, &frustum, d->visible, d->object_count, &count, NULL),
               "the frustum walk", err, errlen))
        return false;
    for (uint32_t i = 0; i < level->object_count; i++)
        d->verdict[i] = level->objects[i].kind == RVW_OBJ_HLOD_PROXY ? RVW_EXCLUDED : RVW_CULLED_FRUSTUM;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t i = object_of(d, d->visible[k]);
        if (i != UINT32_MAX)
            d->verdict[i] = RVW_DRAWN;
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        out->drawn += d->verdict[i] == RVW_DRAWN;
        out->excluded += d->verdict[i] == RVW_EXCLUDED;
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
    free(d->slot_ids);
    free(d->slot_objects);
    free(d->group_nodes);
    free(d->object_nodes);
    free(d->visible);
    free(d->verdict);
    free(d);
}
