/* rvis-walk's bridge to rvis (see drive.h): one world, every stage joined through rv_frame.
 *
 * Build (once):
 *  - the world: occlusion buffer (--occlusion-width, 256 by default), cull records (so every
 *    object not drawn has a reason), a CLOCK_MONOTONIC clock for per-stage times, the
 *    partition gate wired to a host stub (below), residency and LOD defaults;
 *  - every level group becomes a node without geometry, every object a node with its
 *    bounding sphere and its box as a test box (the box encloses its triangles); ungrouped
 *    objects go under one root per kind, grouped spatially;
 *  - occluders: a map's planar opaque surfaces (rvw_level_choose_occluders) as open mesh
 *    occluders, each on a node without geometry; the city's buildings carry their shell as
 *    occluder box on their own node;
 *  - city: props get their LOD ladders (a ladder that does not end in "nothing" gets a last
 *    threshold of 1e-7 rad, smaller than anything in the city subtends, so its coarsest level
 *    draws); each district node is an HLOD region (resident) whose geometry is its stand-in
 *    (the node's bounds are the stand-in's sphere), and each building shell is a resident
 *    leaf region (error 0) so a district has region children to refine into (a region
 *    without region descendants never refines, docs/lod.md); a leaf region is drawn as
 *    itself, like any object. Towers are partition groups, storeys parts with one leaf each
 *    (the top storey deferred); vehicles are journal projections (key = vehicle index + 1,
 *    since a draw item's projection key 0 means "no projection"); terrain pages are a grid.
 *
 * Per frame: commit the leaves the gate asked for last frame (the host stub), place the
 * pages whose simulated load finished (PAGE_LATENCY frames), set the committed slice, move
 * the vehicles through the journal, rv_frame_begin, the depth feed when the walk set one
 * (rv_frame_feed_depth), rv_frame_cull and rv_frame_end, then read verdicts back: drawn =
 * in the opaque or translucent list; otherwise the cull record of the object's node or of
 * the nearest ancestor listed in view.culls says why.
 *
 * The partition gate holds one committed slice per world: the city's tower 0 slice height
 * is used with open X and Z, so every tower is cut at that world height. */
#include "drive.h"

#include "city.h"
#include "drive_occluders.h"
#include "rvis.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_LATENCY 3u       /* frames a simulated page load takes */
#define TERRAIN_SOURCE 1u

typedef struct part_ref {
    rv_node node;
    uint64_t leaf;
    int32_t group;            /* level group index */
} part_ref;

typedef struct page_load {
    rv_page_key key;
    uint32_t due;             /* frame at which it is placed */
} page_load;

struct rvw_drive {
    rv_world *world;
    rv_journal *journal;
    rv_render_scene *render;
    const rvw_level *level;
    rv_node *group_nodes;     /* per level group */
    rv_node *object_nodes;    /* per level object (vehicles: once resolved after frame 0) */
    rv_node roots[RVW_OBJ_KIND_COUNT];
    uint64_t *slot_ids;       /* hash of node id -> object: ids (0 = empty) ... */
    uint32_t *slot_objects;   /* ... and their objects */
    uint32_t slot_mask;
    uint64_t *cull_ids;       /* hash of node id -> cull reason for this frame */
    uint8_t *cull_reason;
    uint32_t *cull_stamp;
    uint32_t cull_mask;
    uint8_t *verdict;
    uint32_t object_count;
    uint32_t frame;
    bool cull_unsampled;      /* rv_view.cull_unsampled */
    /* partition host stub */
    part_ref *parts;
    uint32_t part_count;
    uint64_t *to_commit;      /* leaves asked for, committed at the next frame */
    uint32_t commit_count, commit_capacity;
    bool have_slice;
    float slice_min[3], slice_max[3];
    /* residency host stub */
    page_load *loads;
    uint32_t load_count, load_capacity;
    uint32_t page_bytes;
    /* vehicles */
    bool vehicles_resolved;
    /* occlusion picture */
    uint8_t *occlusion_pixels;
    size_t occlusion_size;
    uint32_t unexplained_reported;
    /* the last frame view and its draw list for a renderer (rvw_drive_draw_list) */
    rv_frame_view last;
    bool have_last;
    rvw_draw *draws;
    uint32_t draw_capacity;
    /* the depth image to hand over in the next frame (rvw_drive_set_feed) */
    rvw_depth_image feed;
    bool have_feed;
};

static uint32_t slot_of(uint64_t id, uint32_t mask)
{
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & mask;
}

static void remember(rvw_drive *d, rv_node node, uint32_t object)
{
    uint32_t s = slot_of(node.id, d->slot_mask);
    while (d->slot_ids[s] && d->slot_ids[s] != node.id)
        s = (s + 1) & d->slot_mask;
    d->slot_ids[s] = node.id;
    d->slot_objects[s] = object;
}

/* The object a node stands for, or UINT32_MAX for a node that is no object. */
static uint32_t object_of(const rvw_drive *d, rv_node node)
{
    for (uint32_t s = slot_of(node.id, d->slot_mask); d->slot_ids[s]; s = (s + 1) & d->slot_mask)
        if (d->slot_ids[s] == node.id)
            return d->slot_objects[s];
    return UINT32_MAX;
}

static void note_cull(rvw_drive *d, rv_node node, rv_cull_reason reason)
{
    uint32_t stamp = d->frame + 1;
    uint32_t s = slot_of(node.id, d->cull_mask);
    while (d->cull_stamp[s] == stamp && d->cull_ids[s] != node.id)
        s = (s + 1) & d->cull_mask;
    d->cull_stamp[s] = stamp;
    d->cull_ids[s] = node.id;
    d->cull_reason[s] = (uint8_t)reason;
}

/* This frame's cull reason of node, 0 when it has no record. */
static int cull_of(const rvw_drive *d, rv_node node)
{
    uint32_t stamp = d->frame + 1;
    for (uint32_t s = slot_of(node.id, d->cull_mask); d->cull_stamp[s] == stamp; s = (s + 1) & d->cull_mask)
        if (d->cull_ids[s] == node.id)
            return d->cull_reason[s];
    return 0;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static uint64_t clock_ns(void *user)
{
    (void)user;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static bool check(rv_result r, const char *what, char *err, size_t errlen)
{
    if (r == RV_OK)
        return true;
    snprintf(err, errlen, "rvis refused %s: %s", what, rv_result_string(r));
    return false;
}

const char *rvw_drive_stages(bool city)
{
    if (!city)
        return "rv_frame: transforms, hierarchical frustum (surfaces grouped spatially), "
               "occlusion (drawn surfaces as mesh occluders, test boxes)";
    return "rv_frame: transforms, journal (vehicles), hierarchical frustum, partition gate "
           "(towers, committed slice, deferred storeys), occlusion (occluder nodes, test boxes), "
           "LOD ladders, HLOD districts, streaming (terrain grid, residency)";
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

/* Quaternion (x y z w) of the rotation whose columns are the axes a[0], a[1], a[2]
 * (orthonormal, right-handed). */
static void axes_quaternion(const float a[3][3], float q[4])
{
    /* m[row][col] = a[col][row] */
    double m00 = a[0][0], m11 = a[1][1], m22 = a[2][2], tr = m00 + m11 + m22, x, y, z, w;
    if (tr > 0) {
        double s = sqrt(tr + 1.0) * 2;
        w = 0.25 * s;
        x = ((double)a[1][2] - a[2][1]) / s;
        y = ((double)a[2][0] - a[0][2]) / s;
        z = ((double)a[0][1] - a[1][0]) / s;
    } else if (m00 > m11 && m00 > m22) {
        double s = sqrt(1.0 + m00 - m11 - m22) * 2;
        w = ((double)a[1][2] - a[2][1]) / s;
        x = 0.25 * s;
        y = ((double)a[1][0] + a[0][1]) / s;
        z = ((double)a[2][0] + a[0][2]) / s;
    } else if (m11 > m22) {
        double s = sqrt(1.0 + m11 - m00 - m22) * 2;
        w = ((double)a[2][0] - a[0][2]) / s;
        x = ((double)a[1][0] + a[0][1]) / s;
        y = 0.25 * s;
        z = ((double)a[2][1] + a[1][2]) / s;
    } else {
        double s = sqrt(1.0 + m22 - m00 - m11) * 2;
        w = ((double)a[0][1] - a[1][0]) / s;
        x = ((double)a[2][0] + a[0][2]) / s;
        y = ((double)a[2][1] + a[1][2]) / s;
        z = 0.25 * s;
    }
    q[0] = (float)x;
    q[1] = (float)y;
    q[2] = (float)z;
    q[3] = (float)w;
}

/* An oriented object's test box and sphere, in the frame of the world matrix rvis made from
 * its rotation and position: every vertex taken through the matrix's inverse (in double),
 * the box widened by a hair and rounded outward, so it encloses the triangles under the
 * float matrix rvis tests it with. */
static bool fit_oriented_box(rvw_drive *d, const rvw_level *level, const rvw_object *o, rv_node node, char *err,
                             size_t errlen)
{
    float m[16];
    if (!check(rv_node_world_matrix(d->world, node, m), "an oriented box's matrix", err, errlen))
        return false;
    double a[3][3], inv[3][3];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            a[r][c] = m[c * 4 + r];
    double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                 a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    inv[0][0] = (a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det;
    inv[0][1] = (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det;
    inv[0][2] = (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det;
    inv[1][0] = (a[1][2] * a[2][0] - a[1][0] * a[2][2]) / det;
    inv[1][1] = (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;
    inv[1][2] = (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det;
    inv[2][0] = (a[1][0] * a[2][1] - a[1][1] * a[2][0]) / det;
    inv[2][1] = (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det;
    inv[2][2] = (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det;
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    const float *t = level->triangles + 9ull * o->first_triangle;
    for (uint32_t j = 0; j < o->triangle_count * 3; j++, t += 3) {
        double p[3] = { (double)t[0] - m[12], (double)t[1] - m[13], (double)t[2] - m[14] };
        for (int r = 0; r < 3; r++) {
            double l = inv[r][0] * p[0] + inv[r][1] * p[1] + inv[r][2] * p[2];
            lo[r] = fmin(lo[r], l);
            hi[r] = fmax(hi[r], l);
        }
    }
    float mn[3], mx[3], c[3];
    double r2 = 0;
    for (int r = 0; r < 3; r++) {
        double pad = 1e-6 * (1 + fmax(fabs(lo[r]), fabs(hi[r])));
        mn[r] = nextafterf((float)(lo[r] - pad), -INFINITY);
        mx[r] = nextafterf((float)(hi[r] + pad), INFINITY);
        c[r] = 0.5f * mn[r] + 0.5f * mx[r];
        double e = fmax((double)mx[r] - c[r], (double)c[r] - mn[r]);
        r2 += e * e;
    }
    if (!(det > 0.5 && det < 2) || !(r2 < INFINITY)) {
        snprintf(err, errlen, "an oriented box's matrix is not a rotation");
        return false;
    }
    float radius = nextafterf((float)sqrt(r2), INFINITY);
    return check(rv_node_set_test_box(d->world, node, mn, mx), "an oriented test box", err, errlen) &&
           check(rv_node_set_bounds(d->world, node, c, radius), "an oriented object's bounds", err, errlen);
}

/* The partition host stub: remembers the leaves of the parts asked for; the next frame
 * commits them for the current view version (a loader one frame behind). */
static void on_reprocess(const rv_node *parts, uint32_t count, void *user)
{
    rvw_drive *d = user;
    for (uint32_t k = 0; k < count; k++)
        for (uint32_t p = 0; p < d->part_count; p++)
            if (rv_node_equal(d->parts[p].node, parts[k]) && d->commit_count < d->commit_capacity)
                d->to_commit[d->commit_count++] = d->parts[p].leaf;
}

static bool make_ladders(const rvw_level *level, rv_lod_ladder *out, char *err, size_t errlen)
{
    for (uint32_t l = 0; l < level->ladder_count; l++) {
        const rvw_ladder *src = &level->ladders[l];
        float t[RV_LOD_MAX_THRESHOLDS];
        uint32_t n = src->count;
        memcpy(t, src->thresholds, n * sizeof *t);
        if (!src->last_is_nothing)
            t[n++] = 1e-7f; /* the coarsest level draws; "nothing" only below 1e-7 rad */
        if (!check(rv_lod_ladder_make(t, n, &out[l]), "a LOD ladder", err, errlen))
            return false;
    }
    return true;
}

static bool build_city(rvw_drive *d, const rvw_level *level, char *err, size_t errlen)
{
    const rvw_city *city = level->city;
    /* partitioned towers: groups, parts with one leaf each, the top storey deferred */
    for (uint32_t g = 0; g < level->group_count; g++) {
        const rvw_group *gr = &level->groups[g];
        if (gr->kind == RVW_GROUP_PARTITION &&
            !check(rv_partition_make_group(d->world, d->group_nodes[g]), "a partition group", err, errlen))
            return false;
        if (gr->kind == RVW_GROUP_PART) {
            part_ref *p = &d->parts[d->part_count++];
            p->node = d->group_nodes[g];
            p->leaf = 1000 + g;
            p->group = (int32_t)g;
            if (!check(rv_partition_set_part(d->world, p->node, &p->leaf, 1, gr->deferred), "a part", err, errlen))
                return false;
        }
    }
    /* HLOD: districts are regions drawn as their stand-in; building shells leaf regions. A
     * building's occluder hides only while its district is refined (rvis lets nothing it
     * does not draw hide), so each stand-in is an occluder too: its blocks' boxes, as the
     * triangles it is drawn with (faces that share an edge fuse by their positions). */
    static uint32_t stand_in_indices[3 * RVW_CITY_STAND_IN_TRIANGLES];
    for (uint32_t i = 0; i < 3 * RVW_CITY_STAND_IN_TRIANGLES; i++)
        stand_in_indices[i] = i;
    for (uint32_t g = 0; g < level->group_count; g++) {
        const rvw_group *gr = &level->groups[g];
        if (gr->kind != RVW_GROUP_DISTRICT || gr->hlod_proxy < 0)
            continue;
        rv_node n = d->group_nodes[g];
        const rvw_object *proxy = &level->objects[gr->hlod_proxy];
        float c[3], r;
        box_sphere(&proxy->bounds, c, &r);
        if (proxy->triangle_count > RVW_CITY_STAND_IN_TRIANGLES) {
            snprintf(err, errlen, "a stand-in of %u triangles (at most %u)", proxy->triangle_count,
                     RVW_CITY_STAND_IN_TRIANGLES);
            return false;
        }
        rv_occluder_mesh stand_in = {
            .positions = (const float(*)[3])(level->triangles + (size_t)proxy->first_triangle * 9),
            .vertex_count = 3 * proxy->triangle_count,
            .indices = stand_in_indices,
            .index_count = 3 * proxy->triangle_count,
            .flags = 0,
        };
        if (!check(rv_node_set_bounds(d->world, n, c, r), "a stand-in's bounds", err, errlen) ||
            !check(rv_node_set_hlod_region(d->world, n, gr->geometric_error), "an HLOD region", err, errlen) ||
            !check(rv_node_set_hlod_resident(d->world, n, true), "an HLOD region", err, errlen) ||
            !check(rv_node_set_occluder_mesh(d->world, n, &stand_in), "a stand-in's occluder", err, errlen))
            return false;
        d->object_nodes[gr->hlod_proxy] = n;
        remember(d, n, (uint32_t)gr->hlod_proxy);
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        if (level->objects[i].kind != RVW_OBJ_BUILDING)
            continue;
        if (!check(rv_node_set_hlod_region(d->world, d->object_nodes[i], 0.0f), "a leaf region", err, errlen) ||
            !check(rv_node_set_hlod_resident(d->world, d->object_nodes[i], true), "a leaf region", err, errlen))
            return false;
    }
    /* vehicles through the journal */
    if (!check(rv_world_journal(d->world, &d->journal), "the journal", err, errlen) ||
        !check(rv_world_render_scene(d->world, &d->render), "the render scene", err, errlen))
        return false;
    for (uint32_t v = 0; v < city->vehicle_count; v++) {
        rv_projection p;
        memset(&p, 0, sizeof p);
        float c[3], r;
        box_sphere(&level->objects[city->vehicles[v].object].bounds, c, &r);
        memcpy(p.transform.position, c, sizeof c);
        p.transform.rotation[3] = 1;
        p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1;
        p.transform.bounds[3] = r;
        p.transform.bounds_space = RV_BOUNDS_LOCAL;
        p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
        if (!check(rv_journal_register(d->journal, 0, v + 1, 1, &p, NULL), "a vehicle", err, errlen))
            return false;
    }
    /* terrain pages */
    const rvw_city_terrain *t = &city->terrain;
    rv_grid_desc gd = { 0 };
    gd.source = TERRAIN_SOURCE;
    gd.origin[0] = t->origin[0];
    gd.origin[1] = t->origin[1];
    gd.cell_size = t->cell;
    gd.count_x = t->count_x;
    gd.count_z = t->count_z;
    gd.lead = 0.5f * t->cell;
    gd.eye_radius = 2 * t->cell;
    d->page_bytes = t->page_bytes;
    d->load_capacity = t->count_x * t->count_z;
    d->loads = calloc(d->load_capacity, sizeof *d->loads);
    if (!d->loads) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return check(rv_world_add_grid(d->world, &gd, NULL), "the terrain grid", err, errlen);
}

static bool build(rvw_drive *d, const rvw_level *level, const rvw_drive_options *opt, char *err, size_t errlen)
{
    rv_world_desc desc = { .node_capacity = level->object_count + level->group_count + level->occluder_count +
                                          level->mesh_count + 64 };
    desc.occlusion.width = opt->occlusion_width;
    desc.occlusion.fine_tests = opt->fine_tests;
    desc.occlusion.feed_max_width = opt->feed_width;
    desc.occlusion.feed_max_height = opt->feed_height;
    desc.occlusion.feed_max_translation = opt->feed_max_translation;
    desc.record_culls = true;
    if (opt->jobs)
        desc.jobs = *opt->jobs;
    desc.clock_ns = clock_ns;
    desc.partition.request_reprocess = on_reprocess;
    desc.partition.user = d;
    /* The terrain's budget: 32 pages, a little more than the eye's request disc (radius
     * 2 cells + half a cell lead), so pages left behind are evicted as the camera drives on. */
    if (level->city)
        desc.residency.budget_bytes = 32ull * level->city->terrain.page_bytes;
    if (!check(rv_world_create(&desc, &d->world), "the world", err, errlen))
        return false;
    rv_lod_ladder ladders[8];
    if (level->ladder_count > 8) {
        snprintf(err, errlen, "too many LOD ladders");
        return false;
    }
    if (!make_ladders(level, ladders, err, errlen))
        return false;
    for (uint32_t g = 0; g < level->group_count; g++) {
        int32_t p = level->groups[g].parent;
        if (!check(rv_node_create(d->world, p >= 0 ? d->group_nodes[p] : RV_NODE_NONE,
                                  &d->group_nodes[g]), "a group node", err, errlen))
            return false;
    }
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        if (o->kind == RVW_OBJ_HLOD_PROXY || (o->kind == RVW_OBJ_VEHICLE && level->city))
            continue; /* the district's node; a journal projection */
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
        if (!check(rv_node_set_bounds(d->world, node, center, radius), "an object's bounds", err, errlen) ||
            !check(rv_node_set_test_box(d->world, node, o->bounds.min, o->bounds.max), "a test box", err, errlen))
            return false;
        if (o->oriented) {
            /* rotated into its box's frame, placed at the world box's centre; the test box
             * and sphere are fitted to the matrix rvis makes, after the first update */
            float q[4];
            axes_quaternion(o->axes, q);
            if (!check(rv_node_set_rotation(d->world, node, q), "an object's rotation", err, errlen) ||
                !check(rv_node_set_position(d->world, node, center), "an object's position", err, errlen))
                return false;
        }
        if (o->kind == RVW_OBJ_BUILDING &&
            !check(rv_node_set_occluder_box(d->world, node, o->bounds.min, o->bounds.max), "an occluder box", err, errlen))
            return false;
        if (o->ladder && o->ladder <= level->ladder_count &&
            !check(rv_node_set_lod_ladder(d->world, node, &ladders[o->ladder - 1]), "a LOD ladder", err, errlen))
            return false;
    }
    if (!level->city && !rvw_drive_map_occluders(d->world, level, err, errlen))
        return false;
    if (level->city && !build_city(d, level, err, errlen))
        return false;
    if (!check(rv_update_world(d->world), "the first update", err, errlen))
        return false;
    bool oriented = false;
    for (uint32_t i = 0; i < level->object_count; i++)
        if (level->objects[i].oriented && level->objects[i].kind == RVW_OBJ_SURFACE) {
            oriented = true;
            if (!fit_oriented_box(d, level, &level->objects[i], d->object_nodes[i], err, errlen))
                return false;
        }
    if (oriented && !check(rv_update_world(d->world), "the update after oriented boxes", err, errlen))
        return false;
    /* flat static lists cull hierarchically once grouped (docs/scene.md) */
    for (int k = 0; k < RVW_OBJ_KIND_COUNT; k++)
        if (d->roots[k].id && k != RVW_OBJ_VEHICLE &&
            !check(rv_group_spatially(d->world, d->roots[k], NULL, 0, 0, NULL), "spatial grouping", err, errlen))
            return false;
    return check(rv_update_world(d->world), "the update after grouping", err, errlen);
}

bool rvw_drive_create(const rvw_level *level, const rvw_drive_options *opt, rvw_drive **out, char *err,
                      size_t errlen)
{
    rvw_drive *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    d->level = level;
    d->object_count = level->object_count;
    d->cull_unsampled = opt->cull_unsampled;
    uint32_t slots = 16;
    while (slots < 2 * level->object_count)
        slots *= 2;
    d->slot_mask = slots - 1;
    /* every node: objects, groups, spatial groups (fewer than objects), occluders */
    uint32_t culls = 16;
    while (culls < 2 * (2 * level->object_count + level->group_count + level->occluder_count + level->mesh_count + 64))
        culls *= 2;
    d->cull_mask = culls - 1;
    uint32_t parts = 0;
    for (uint32_t g = 0; g < level->group_count; g++)
        parts += level->groups[g].kind == RVW_GROUP_PART;
    d->commit_capacity = 4 * parts + 16;
    d->slot_ids = calloc(slots, sizeof *d->slot_ids);
    d->slot_objects = calloc(slots, sizeof *d->slot_objects);
    d->cull_ids = calloc(culls, sizeof *d->cull_ids);
    d->cull_reason = calloc(culls, 1);
    d->cull_stamp = calloc(culls, sizeof *d->cull_stamp);
    d->group_nodes = calloc(level->group_count + 1, sizeof *d->group_nodes);
    d->object_nodes = calloc(level->object_count + 1, sizeof *d->object_nodes);
    d->verdict = calloc(level->object_count + 1, 1);
    d->parts = calloc(parts + 1, sizeof *d->parts);
    d->to_commit = calloc(d->commit_capacity, sizeof *d->to_commit);
    bool ok = d->slot_ids && d->slot_objects && d->cull_ids && d->cull_reason && d->cull_stamp &&
              d->group_nodes && d->object_nodes && d->verdict && d->parts && d->to_commit;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    if (!ok || !build(d, level, opt, err, errlen)) {
        rvw_drive_destroy(d);
        return false;
    }
    *out = d;
    return true;
}

/* Host work before a frame: the stubs' answers, the slice, the vehicles. */
static bool host_before(rvw_drive *d, const rvw_level *level, uint32_t frame, char *err, size_t errlen)
{
    const rvw_city *city = level->city;
    uint64_t version = rv_partition_view_version(d->world);
    for (uint32_t k = 0; k < d->commit_count; k++)
        if (!check(rv_partition_leaf_committed(d->world, d->to_commit[k], version, true), "a leaf commit", err, errlen))
            return false;
    d->commit_count = 0;
    rv_residency *res = rv_world_residency(d->world);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < d->load_count; k++) {
        if (d->loads[k].due > frame) {
            d->loads[kept++] = d->loads[k];
            continue;
        }
        rv_result r = rv_residency_place(res, d->loads[k].key, d->page_bytes);
        /* a page dropped while it loaded is no longer wanted: nothing to place */
        if (r == RV_ERR_OUT_OF_MEMORY || r == RV_ERR_INVALID_ARG)
            return check(r, "a page", err, errlen);
    }
    d->load_count = kept;
    if (city->tower_count) {
        rvw_box committed, pending;
        rvw_city_slice(city, 0, frame, &committed, &pending);
        float mn[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, mx[3] = { FLT_MAX, committed.max[1], FLT_MAX };
        if (!d->have_slice || d->slice_max[1] != mx[1]) {
            if (!check(rv_partition_set_committed_slice(d->world, mn, mx), "the committed slice", err, errlen))
                return false;
            memcpy(d->slice_min, mn, sizeof mn);
            memcpy(d->slice_max, mx, sizeof mx);
            d->have_slice = true;
        }
    }
    for (uint32_t v = 0; v < city->vehicle_count; v++) {
        rv_projection_transform t;
        memset(&t, 0, sizeof t);
        float c[3], r;
        box_sphere(&level->objects[city->vehicles[v].object].bounds, c, &r);
        memcpy(t.position, c, sizeof c);
        t.rotation[3] = 1;
        t.scale[0] = t.scale[1] = t.scale[2] = 1;
        t.bounds[3] = r;
        if (!check(rv_journal_update_transform(d->journal, 0, v + 1, 1, &t, NULL), "a vehicle move", err, errlen))
            return false;
    }
    return true;
}

/* Host work after a frame: start the page loads asked for; find the vehicles' nodes. */
static bool host_after(rvw_drive *d, const rvw_level *level, const rv_frame_view *v, uint32_t frame,
                       char *err, size_t errlen)
{
    for (uint32_t k = 0; k < v->page_request_count && d->load_count < d->load_capacity; k++) {
        bool queued = false;
        for (uint32_t q = 0; q < d->load_count && !queued; q++)
            queued = d->loads[q].key.source == v->page_requests[k].key.source &&
                     d->loads[q].key.index == v->page_requests[k].key.index;
        if (!queued)
            d->loads[d->load_count++] = (page_load){ v->page_requests[k].key, frame + PAGE_LATENCY };
    }
    if (!d->vehicles_resolved) {
        const rvw_city *city = level->city;
        for (uint32_t i = 0; i < city->vehicle_count; i++) {
            uint32_t slot;
            rv_projection_record rec;
            if (!check(rv_render_scene_find(d->render, i + 1, &slot), "a vehicle lookup", err, errlen) ||
                !check(rv_render_scene_read(d->render, slot, &rec), "a vehicle lookup", err, errlen))
                return false;
            uint32_t o = city->vehicles[i].object;
            d->object_nodes[o] = rec.node;
            remember(d, rec.node, o);
            const rvw_box *b = &level->objects[o].bounds;
            float c[3], r, mn[3], mx[3];
            box_sphere(b, c, &r);
            for (int a = 0; a < 3; a++) {
                mn[a] = b->min[a] - c[a];
                mx[a] = b->max[a] - c[a];
            }
            if (!check(rv_node_set_test_box(d->world, rec.node, mn, mx), "a vehicle test box", err, errlen))
                return false;
        }
        d->vehicles_resolved = true;
    }
    return true;
}

static const part_ref *part_of(const rvw_drive *d, rv_node node)
{
    for (uint32_t p = 0; p < d->part_count; p++)
        if (rv_node_equal(d->parts[p].node, node))
            return &d->parts[p];
    return NULL;
}

static bool box_meets(const rvw_box *b, const float mn[3], const float mx[3])
{
    for (int a = 0; a < 3; a++)
        if (b->max[a] < mn[a] || b->min[a] > mx[a])
            return false;
    return true;
}

/* The verdict for an object whose node (or an ancestor) was pruned for reason at node at. */
static uint8_t verdict_of(const rvw_drive *d, int reason, rv_node at)
{
    switch (reason) {
    case RV_CULL_FRUSTUM: return RVW_CULLED_FRUSTUM;
    case RV_CULL_OCCLUSION: return RVW_CULLED_OCCLUSION;
    case RV_CULL_UNSAMPLED: return RVW_CULLED_UNSAMPLED;
    case RV_CULL_PARTITION: {
        rv_partition_part_info info;
        const part_ref *p = part_of(d, at);
        if (p && rv_partition_part_get_info(d->world, at, &info) == RV_OK) {
            if (info.deferred && !info.active)
                return RVW_EXCLUDED; /* an inactive deferred part */
            if (d->have_slice && !box_meets(&d->level->groups[p->group].bounds, d->slice_min, d->slice_max))
                return RVW_EXCLUDED; /* outside the committed slice */
        }
        return RVW_CULLED_FRUSTUM;   /* the padded frustum: a cull the oracle checks */
    }
    default: return RVW_EXCLUDED;    /* LOD nothing, HLOD replaced, hidden */
    }
}

static void count_drawn(rvw_drive *d, const rv_draw_item *items, uint32_t n, uint64_t *levels)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t o = object_of(d, items[k].node);
        if (o == UINT32_MAX)
            continue;
        d->verdict[o] = RVW_DRAWN;
        *levels |= 1ull << (items[k].lod_level < 63 ? items[k].lod_level : 63);
    }
}

void rvw_drive_set_feed(rvw_drive *d, const rvw_depth_image *image)
{
    d->have_feed = image != NULL;
    if (image)
        d->feed = *image;
}

/* rv_frame's three steps, with the depth feed (when one is set) handed over between the
 * begin and the cull, as a host does with last frame's read-back. */
static bool run_frame(rvw_drive *d, const rv_view *rv, rv_frame_view *v, rvw_feed_result *fr, char *err,
                      size_t errlen)
{
    if (!check(rv_frame_begin(d->world, rv), "the frame", err, errlen))
        return false;
    rv_result r = RV_OK;
    if (d->have_feed) {
        rv_depth_feed feed = {
            .texels = d->feed.depth, .width = d->feed.width, .height = d->feed.height,
            .format = RV_DEPTH_FLOAT32, .rows_bottom_up = d->feed.rows_bottom_up,
            .view_projection = d->feed.view_projection, .clip = { false, false }, .age = d->feed.age,
        };
        r = rv_frame_feed_depth(d->world, &feed);
        fr->handed = r == RV_OK;
    }
    if (r == RV_OK)
        r = rv_frame_cull(d->world);
    if (r == RV_OK)
        r = rv_frame_end(d->world, v);
    bool fed = d->have_feed;
    d->have_feed = false; /* one image per rvw_drive_set_feed */
    if (r != RV_OK) {
        rv_frame_abort(d->world);
        return check(r, fed ? "the frame (with its depth feed)" : "the frame", err, errlen);
    }
    rv_occlusion *occ = rv_world_occlusion(d->world);
    if (fr->handed && occ) {
        rv_occlusion_feed_stats st = rv_occlusion_get_feed_stats(occ);
        fr->used = st.feeds_used > 0;
        fr->ignored_motion = st.feeds_ignored_motion;
        fr->ignored_projection = st.feeds_ignored_projection;
        fr->ignored_age = st.feeds_ignored_age;
        fr->texels_fed = st.texels_fed;
        fr->texels_invalid = st.texels_invalid;
        fr->texels_sky = st.texels_sky;
        fr->texels_discontinuous = st.texels_discontinuous;
        fr->texels_reprojected = st.texels_reprojected;
        fr->texels_raised = st.texels_raised;
        fr->hidden_by_feed = st.objects_hidden_by_feed;
    }
    return true;
}

bool rvw_drive_frame(rvw_drive *d, const rvw_level *level, const rvw_view *view,
                     rvw_frame_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    d->frame = view->frame;
    bool city = level->city != NULL;
    if (city && !host_before(d, level, view->frame, err, errlen))
        return false;

    rv_view rv = { 0 };
    rv.view = view->view;
    rv.projection = view->projection;
    rv.clip = (rv_clip){ false, false };
    rv.viewport_width = view->width;
    rv.viewport_height = view->height;
    rv.fov_y = view->fov_y;
    rv.time_ms = view->time_ms;
    rv.cull_unsampled = d->cull_unsampled;
    rv_frame_view v;
    double t0 = now_us();
    if (!run_frame(d, &rv, &v, &out->feed, err, errlen))
        return false;
    out->frame_us = now_us() - t0;
    d->last = v;
    d->have_last = true;
    if (city && !host_after(d, level, &v, view->frame, err, errlen))
        return false;

    /* verdicts */
    memset(d->verdict, 255, d->object_count);
    uint64_t levels = 0;
    count_drawn(d, v.opaque, v.opaque_count, &levels);
    count_drawn(d, v.translucent, v.translucent_count, &levels);
    for (uint32_t k = 0; k < v.cull_count; k++)
        note_cull(d, v.culls[k].node, v.culls[k].reason);
    uint32_t unexplained = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        if (d->verdict[i] != 255)
            continue;
        if (level->objects[i].kind == RVW_OBJ_HLOD_PROXY) {
            /* Not drawn: its district is refined (or culled, and then its children carry
             * the reason): the full detail is what the oracle checks. */
            d->verdict[i] = RVW_EXCLUDED;
            continue;
        }
        rv_node n = d->object_nodes[i];
        int reason = 0;
        while (n.id && !(reason = cull_of(d, n))) {
            rv_node p;
            if (rv_node_parent(d->world, n, &p) != RV_OK)
                break;
            n = p;
        }
        if (reason) {
            d->verdict[i] = verdict_of(d, reason, n);
        } else {
            /* Neither drawn nor recorded: a bug. Counted as a cull the oracle checks. */
            d->verdict[i] = RVW_CULLED_FRUSTUM;
            unexplained++;
            if (d->unexplained_reported < 10) {
                d->unexplained_reported++;
                fprintf(stderr, "rvis-walk: BUG: frame %u, object %u (kind %u) neither drawn nor in a cull record\n",
                        view->frame, i, level->objects[i].kind);
            }
        }
    }
    out->unexplained = unexplained;
    uint32_t occluded = 0, unsampled = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        out->drawn += d->verdict[i] == RVW_DRAWN;
        out->excluded += d->verdict[i] == RVW_EXCLUDED;
        occluded += d->verdict[i] == RVW_CULLED_OCCLUSION;
        unsampled += d->verdict[i] == RVW_CULLED_UNSAMPLED;
    }
    out->frustum_visible = out->drawn + occluded + unsampled;
    out->unsampled_culled = unsampled;
    out->verdict = d->verdict;
    static const rvw_stage map[RV_STAGE_COUNT] = {
        [RV_STAGE_TRANSFORMS] = RVW_STAGE_TRANSFORMS, [RV_STAGE_JOURNAL] = RVW_STAGE_JOURNAL,
        [RV_STAGE_FRUSTUM] = RVW_STAGE_FRUSTUM, [RV_STAGE_PARTITION] = RVW_STAGE_PARTITION,
        [RV_STAGE_OCCLUSION] = RVW_STAGE_OCCLUSION, [RV_STAGE_LOD] = RVW_STAGE_LOD,
        [RV_STAGE_STREAMING] = RVW_STAGE_STREAMING, [RV_STAGE_PUBLISH] = RVW_STAGE_PUBLISH,
        [RV_STAGE_FEED] = RVW_STAGE_FEED,
    };
    for (int s = 0; s < RV_STAGE_COUNT; s++)
        out->stage_us[map[s]] = v.stage_us[s];
    if (!out->feed.handed)
        out->stage_us[RVW_STAGE_FEED] = -1; /* no feed this frame: nothing to time */
    out->occlusion_culled = occluded;
    out->partition_hidden = v.counts.partition_culled;
    out->lod_levels_mask = (int64_t)(levels & 0x7FFFFFFFFFFFFFFFull);
    out->hlod_refined = v.counts.hlod_refined;
    out->journal_deltas = v.counts.journal_applied;
    out->pages_requested = v.counts.pages_requested;
    out->pages_evicted = v.counts.pages_evicted;
    rv_alloc_stats a = rv_world_alloc_stats(d->world);
    out->allocations = a.allocations + a.reallocations;
    return true;
}

bool rvw_drive_occlusion_image(rvw_drive *d, const uint8_t **pixels, uint32_t *width, uint32_t *height,
                               float depth_range[2])
{
    rv_occlusion *o = rv_world_occlusion(d->world);
    uint32_t w = 0, h = 0;
    if (!o || rv_occlusion_debug_image(o, 0, NULL, 0, &w, &h) != RV_OK || !w || !h)
        return false;
    size_t need = (size_t)w * h;
    if (need > d->occlusion_size) {
        uint8_t *p = realloc(d->occlusion_pixels, need);
        if (!p)
            return false;
        d->occlusion_pixels = p;
        d->occlusion_size = need;
    }
    if (rv_occlusion_debug_image(o, 0, d->occlusion_pixels, need, &w, &h) != RV_OK ||
        rv_occlusion_debug_depth_range(o, &depth_range[0], &depth_range[1]) != RV_OK)
        return false;
    *pixels = d->occlusion_pixels;
    *width = w;
    *height = h;
    return true;
}

bool rvw_drive_draw_list(rvw_drive *d, rvw_draw_list *out)
{
    memset(out, 0, sizeof *out);
    if (!d->have_last)
        return false;
    const rv_frame_view *v = &d->last;
    uint32_t need = v->opaque_count + v->translucent_count;
    if (need > d->draw_capacity) {
        rvw_draw *fresh = realloc(d->draws, (size_t)need * sizeof *fresh);
        if (!fresh)
            return false;
        d->draws = fresh;
        d->draw_capacity = need;
    }
    uint32_t n = 0;
    for (int list = 0; list < 2; list++) {
        const rv_draw_item *items = list ? v->translucent : v->opaque;
        uint32_t count = list ? v->translucent_count : v->opaque_count;
        for (uint32_t k = 0; k < count; k++) {
            uint32_t o = object_of(d, items[k].node);
            if (o != UINT32_MAX)
                d->draws[n++] = (rvw_draw){ o, items[k].lod_level, items[k].fade, list == 1 };
        }
    }
    out->draws = d->draws;
    out->count = n;
    out->occluders_added = v->counts.occluders_added;
    out->occluders_rasterised = v->counts.occluders_rasterised;
    return true;
}

void rvw_drive_destroy(rvw_drive *d)
{
    if (!d)
        return;
    rv_world_destroy(d->world);
    free(d->slot_ids);
    free(d->slot_objects);
    free(d->cull_ids);
    free(d->cull_reason);
    free(d->cull_stamp);
    free(d->group_nodes);
    free(d->object_nodes);
    free(d->verdict);
    free(d->parts);
    free(d->to_commit);
    free(d->loads);
    free(d->occlusion_pixels);
    free(d->draws);
    free(d);
}
