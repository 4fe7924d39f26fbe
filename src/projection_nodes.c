/* Backing nodes of a world-bound render scene (docs/design.md §7, §8: projections are backed
 * by nodes so culling, occlusion and LOD treat them like any node). */
#include "projection.h"
#include "journal.h"
#include "core/check.h"
#include "core/round_up.h"
#include "scene.h"
#include "world.h"

#include <float.h>
#include <math.h>

/* World-space bounds in the projection's local space: the sphere a backing node carries,
 * which the scene maps back through T * R * S (and the parent's matrix for an equipped
 * child). The centre goes through the inverse of T * R * S and the radius is divided by
 * the smallest scale, in double; the radius is then padded for the rounding of the centre
 * and the radius to float, so the float sphere always encloses the host's. False when a
 * number does not fit in a float (world bounds under a scale of 1e-36, or a centre 6e38
 * from the position): the journal refuses such a transform on append, so a node's sphere
 * never goes missing. t: finite, quaternion and scales nonzero. */
bool rvi_world_bounds_to_local(const rv_projection_transform *t, float out[4])
{
    double q[4], n2 = 0.0;
    for (int k = 0; k < 4; k++)
        n2 += (double)t->rotation[k] * t->rotation[k];
    double n = sqrt(n2);
    for (int k = 0; k < 4; k++)
        q[k] = t->rotation[k] / n;
    double v[3];
    for (int k = 0; k < 3; k++)
        v[k] = (double)t->bounds[k] - t->position[k];
    /* v rotated by the inverse rotation: q^-1 * v * q = v + w * u + cross(-q.xyz, u) with
     * u = 2 * cross(-q.xyz, v). */
    double x = -q[0], y = -q[1], z = -q[2], w = q[3];
    double ux = 2.0 * (y * v[2] - z * v[1]), uy = 2.0 * (z * v[0] - x * v[2]), uz = 2.0 * (x * v[1] - y * v[0]);
    double c[3] = { v[0] + w * ux + (y * uz - z * uy), v[1] + w * uy + (z * ux - x * uz),
                    v[2] + w * uz + (x * uy - y * ux) };
    double largest = 0.0, smallest = INFINITY, spread = 0.0, reach = 0.0;
    for (int k = 0; k < 3; k++) {
        spread += fabs(c[k]); /* before the scale: the rounding below, in world units */
        c[k] /= t->scale[k];
        reach += fabs(c[k]);
        double a = fabs((double)t->scale[k]);
        largest = a > largest ? a : largest;
        smallest = a < smallest ? a : smallest;
    }
    /* padded is a radius in the transform's frame: the host's, plus the rounding the node
     * adds. Rounding c[k] to float moves it by < |c[k]| * FLT_EPSILON / 2 in local units,
     * at most spread * FLT_EPSILON / 2 / smallest in all; the node's float matrix (rotation
     * times scale) differs from the exact one by a few ulps of its entries, which moves the
     * image of the centre by about spread * FLT_EPSILON and stretches by 4 FLT_EPSILON at
     * most. In the denormals rounding is absolute: a local
     * coordinate moves by up to FLT_TRUE_MIN / 2, and each matrix entry by up to
     * FLT_TRUE_MIN / 2 (reach * FLT_TRUE_MIN in the frame), which also lowers the scale
     * bound to no less than smallest * (1 - FLT_EPSILON) - FLT_TRUE_MIN.
     * The local sphere must hold the whole preimage of that sphere: an ellipsoid of
     * semi-axes padded / |scale[k]|, so the radius is divided by (that lower bound of) the
     * smallest scale and rounded up to float; no local sphere fits when the bound is not
     * positive. Divided by the largest scale (before), the image of the local sphere was an
     * ellipsoid inside the host's sphere: a root node's sphere still came out right (the
     * scene scales a radius by the largest scale), but under a parent stretching along the
     * child's smaller scale axis the scene's tighter Frobenius bound gave a sphere that
     * missed the host's (radius 5.2 for a sphere reaching 10). A non-uniformly scaled node's sphere is now looser by largest /
     * smallest: it errs toward drawing. */
    double padded = t->bounds[3] * (1.0 + 4.0 * FLT_EPSILON) + spread * FLT_EPSILON +
                   (reach + 2.0 * largest) * FLT_TRUE_MIN;
    double scale_low = smallest * (1.0 - FLT_EPSILON) - FLT_TRUE_MIN;
    double radius = scale_low > 0.0 ? padded / scale_low : INFINITY;
    if (!(radius <= FLT_MAX) || !(fabs(c[0]) <= FLT_MAX) || !(fabs(c[1]) <= FLT_MAX) || !(fabs(c[2]) <= FLT_MAX))
        return false;
    if (out) {
        for (int k = 0; k < 3; k++)
            out[k] = (float)c[k];
        out[3] = rvi_float_up(radius);
    }
    return true;
}

#define NONE RVI_INDEX_NONE

/* ---- backing nodes (world bound) ----
 * Every live projection of a bound scene has a node: equipped children under their parent
 * projection's node while it has one, everything else a root. Node storage for a batch is
 * reserved with the scene's storage (rvi_scene_reserve), so creating one never fails. */

static rvi_scene *nodes_of(rv_render_scene *s)
{
    return &s->world->scene;
}

void rvi_set_blocked(rv_render_scene *s, uint32_t slot, bool blocked)
{
    if (s->rows[slot].blocked != blocked) {
        s->rows[slot].blocked = blocked;
        s->blocked += blocked ? 1u : (uint32_t)-1;
    }
}

static void node_forget(rv_render_scene *s, uint32_t slot)
{
    rvi_projection_row *row = &s->rows[slot];
    rvi_map_remove(&s->node_lookup, row->node & 0xFFFFFFu);
    row->node = 0;
    rvi_set_blocked(s, slot, false);
}

/* The projection's bounds as the node's local sphere (world-space bounds mapped back by
 * rvi_world_bounds_to_local, which validation has already run on this transform). */
static void local_bounds(const rv_projection_transform *t, float out[4])
{
    if (t->bounds_space == RV_BOUNDS_LOCAL || !rvi_world_bounds_to_local(t, out))
        memcpy(out, t->bounds, 16); /* the second: unreachable after validation */
}

void rvi_node_write_transform(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    rv_node node = { row->node };
    rv_projection_transform transform;
    const rv_projection_transform *t = &transform;
    rvi_load_transform(&s->hot[slot], &transform);
    float sphere[4];
    local_bounds(t, sphere);
    /* Validated on append (or replay) by the setters' own rules (finite numbers, a
     * quaternion with a normal component, read from bits so the host's DAZ mode changes
     * nothing): these cannot fail. */
    rvi_scene *sc = nodes_of(s);
    sc->projection_writes = true;
    rv_node_set_position(s->world, node, t->position);
    rv_node_set_rotation(s->world, node, t->rotation);
    rv_node_set_scale(s->world, node, t->scale);
    rv_node_set_bounds(s->world, node, sphere, sphere[3]);
    sc->projection_writes = false;
}

/* The node's flags from the projection's: hidden, translucent. An equipped child that is
 * not under its parent's node (no live parent, or a loop of parents keeps it a root) has
 * no placement: its transform is relative to a parent rvis does not have, and read as a
 * world transform it would stand near the origin. It is hidden, with what hangs under it,
 * until it is attached (rvi_node_reparent and rvi_node_drop write its flags again). */
void rvi_node_write_flags(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    rvi_scene *sc = nodes_of(s);
    uint32_t i = row->node & 0xFFFFFFu, *flags = &sc->flags[i];
    bool unattached = s->hot[slot].projection_class == RV_PROJECTION_EQUIPPED_CHILD && sc->parent[i] == NONE;
    bool host_hidden = (s->hot[slot].flags & RV_PROJECTION_HIDDEN) != 0;
    /* Taken by a parent since the last update (rvi_node_reparent): hidden until the update
     * places it under that parent, for a frame already begun draws it where it stood. */
    bool unplaced = (*flags & RVI_NODE_UNPLACED) && !unattached && !host_hidden;
    *flags &= ~(uint32_t)(RVI_NODE_HIDDEN | RVI_NODE_TRANSLUCENT | RVI_NODE_UNPLACED);
    *flags |= RVI_NODE_PROJECTION;
    if (unplaced)
        *flags |= RVI_NODE_UNPLACED;
    if (host_hidden || unattached || unplaced)
        *flags |= RVI_NODE_HIDDEN;
    if (s->hot[slot].flags & RV_PROJECTION_TRANSLUCENT)
        *flags |= RVI_NODE_TRANSLUCENT;
    nodes_of(s)->edits++;
}

/* Puts the node where its class says: under the parent projection's node (an equipped
 * child whose parent lives and has a node), else a root. A parent chain that would close a
 * cycle (a host error) leaves the node a root, marked blocked and retried at the end of
 * the batch. */
void rvi_node_reparent(rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    if (!s->world || !row->node)
        return;
    rv_node node = { row->node };
    rvi_scene *sc = nodes_of(s);
    uint32_t i = row->node & 0xFFFFFFu;
    bool orphan = s->hot[slot].projection_class == RV_PROJECTION_EQUIPPED_CHILD && sc->parent[i] == NONE;
    sc->projection_writes = true; /* the host's attach and detach refuse a projection's node */
    uint64_t parent_value;
    rv_result r = RV_ERR_NOT_FOUND;
    if (s->hot[slot].projection_class == RV_PROJECTION_EQUIPPED_CHILD &&
        rvi_map_get(&s->key_lookup, row->parent_key, &parent_value) &&
        s->rows[(uint32_t)parent_value].node) {
        rv_node parent = { s->rows[(uint32_t)parent_value].node };
        r = rv_node_attach(s->world, parent, node);
        rvi_set_blocked(s, slot, r != RV_OK);
    } else {
        rvi_set_blocked(s, slot, false);
    }
    if (r != RV_OK)
        rv_node_detach(s->world, node);
    else if (orphan)
        sc->flags[i] |= RVI_NODE_UNPLACED; /* its world matrix is still an orphan's */
    sc->projection_writes = false;
    rvi_node_write_flags(s, slot);
}

/* Retries the blocked children. Attaching only adds ancestry, so one pass reaches the
 * fixpoint. O(projections), and only while a host-made cycle exists. */
void rvi_retry_blocked(rv_render_scene *s)
{
    for (uint32_t slot = 0; s->blocked && slot < s->high; slot++)
        if (s->rows[slot].live && s->rows[slot].blocked)
            rvi_node_reparent(s, slot);
}

/* Creates the node of a freshly inserted projection (storage reserved) and adopts the
 * equipped children already waiting for this key. */
void rvi_node_bind(rv_render_scene *s, uint32_t slot)
{
    if (!s->world)
        return;
    rvi_scene *sc = nodes_of(s);
    uint32_t i = rvi_scene_create_reserved(sc, RVI_INDEX_NONE);
    rvi_projection_row *row = &s->rows[slot];
    row->node = rvi_node_handle(sc, i).id;
    sc->key[i] = row->key;
    rv_result r = rvi_map_put(&s->heap, &s->node_lookup, i, slot); /* reserved */
    (void)r;
    rvi_node_write_flags(s, slot);
    rvi_node_write_transform(s, slot);
    rvi_node_reparent(s, slot);
    for (uint32_t c = rvi_first_child(s, row->key); c != NONE; c = s->rows[c].child_next)
        rvi_node_reparent(s, c);
}

/* Destroys the node of a projection leaving the scene; its children become roots. */
void rvi_node_drop(rv_render_scene *s, uint32_t slot)
{
    if (!s->world || !s->rows[slot].node)
        return;
    rv_node node = { s->rows[slot].node };
    node_forget(s, slot); /* first: the destroy notification then finds nothing of ours */
    rvi_scene *sc = &s->world->scene;
    sc->projection_writes = true; /* its equipped children become roots; the scene places them */
    rv_node_destroy_reroot(s->world, node);
    sc->projection_writes = false;
    for (uint32_t c = rvi_first_child(s, s->rows[slot].key); c != NONE; c = s->rows[c].child_next)
        rvi_node_write_flags(s, c); /* now unattached */
}

/* World hooks: the host destroyed a node (forget it), or the world itself (unbind). */
static void on_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    rv_render_scene *s = state;
    (void)world;
    uint64_t slot;
    if (rvi_map_get(&s->node_lookup, node_index, &slot))
        node_forget(s, (uint32_t)slot);
}

static void on_world_destroyed(rv_world *world, void *state)
{
    rv_render_scene *s = state;
    (void)world;
    for (uint32_t slot = 0; slot < s->high; slot++) {
        s->rows[slot].node = 0;
        s->rows[slot].blocked = false;
    }
    s->blocked = 0;
    rvi_map_clear(&s->node_lookup);
    s->world = NULL;
}

rv_result rvi_render_scene_bind_world(rv_render_scene *s, rv_world *world)
{
    if (s->world)
        return s->world == world ? RV_OK : RV_ERR_BAD_STATE;
    if (rvi_world_module(world, RVI_MODULE_PROJECTION))
        return RV_ERR_BAD_STATE;
    if (world->scene.visiting)
        return RV_ERR_BAD_STATE;
    /* Reserve first: binding a scene that already holds projections is all or nothing. */
    RVI_TRY(rvi_scene_reserve(&world->scene, &world->heap, s->live));
    RVI_TRY(rvi_map_reserve(&s->heap, &s->node_lookup, s->capacity));
    rvi_module_hooks hooks = { s, on_world_destroyed, on_node_destroyed };
    RVI_TRY(rvi_world_register_module(world, RVI_MODULE_PROJECTION, &hooks));
    s->world = world;
    for (uint32_t slot = 0; slot < s->high; slot++)
        if (s->rows[slot].live)
            rvi_node_bind(s, slot);
    rvi_retry_blocked(s);
    return RV_OK;
}

void rvi_render_scene_unbind_world(rv_render_scene *s)
{
    if (!s->world)
        return;
    rv_world *world = s->world;
    for (uint32_t slot = 0; slot < s->high; slot++)
        if (s->rows[slot].live)
            rvi_node_drop(s, slot);
    /* world.h has no unregister: clearing the slot is what registering filled in. */
    world->modules[RVI_MODULE_PROJECTION] = (rvi_module_hooks){0};
    s->world = NULL;
}

bool rvi_world_projection_draining(const rv_world *world)
{
    const rv_render_scene *s = rvi_world_module(world, RVI_MODULE_PROJECTION);
    return s && s->in_observer;
}
