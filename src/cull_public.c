/* rv_visit_visible and rv_collect_visible: the hierarchy walk (cull.c) over one subtree or
 * the whole scene, handing each visible node to the host's callback or array. */
#include "cull.h"
#include "world.h"
#include "frustum.h"
#include "core/check.h"

#define NONE RVI_INDEX_NONE

/* Where rv_visit_visible and rv_collect_visible hand visible nodes. */
typedef struct public_sink {
    rv_world *world;
    rv_visit_fn host_fn;
    void *user;
    rv_node *out;
    uint32_t capacity, count;
} public_sink;

static bool to_host(void *user, uint32_t i, float weight)
{
    (void)weight;
    public_sink *k = user;
    const rvi_scene *s = &k->world->scene;
    return k->host_fn(rvi_node_handle(s, i), s->world_matrix[i], k->user);
}

static bool to_array(void *user, uint32_t i, float weight)
{
    (void)weight;
    public_sink *k = user;
    if (k->count < k->capacity)
        k->out[k->count] = rvi_node_handle(&k->world->scene, i);
    k->count++;
    return true;
}

static uint32_t run_to_host(void *user, uint32_t first, uint64_t lanes, float weight)
{
    (void)weight;
    public_sink *k = user;
    const rvi_scene *s = &k->world->scene;
    uint32_t n = 0;
    for (; lanes; lanes &= lanes - 1) {
        uint32_t i = first + (uint32_t)__builtin_ctzll(lanes);
        n++;
        if (!k->host_fn(rvi_node_handle(s, i), s->world_matrix[i], k->user))
            break;
    }
    return n;
}

static uint32_t run_to_array(void *user, uint32_t first, uint64_t lanes, float weight)
{
    (void)weight;
    public_sink *k = user;
    const rvi_scene *s = &k->world->scene;
    uint32_t n = (uint32_t)__builtin_popcountll(lanes);
    for (uint32_t at = k->count; lanes && at < k->capacity; lanes &= lanes - 1, at++)
        k->out[at] = rvi_node_handle(s, first + (uint32_t)__builtin_ctzll(lanes));
    k->count += n;
    return n;
}

static rv_result public_walk(rv_world *world, rv_node root, const rv_frustum *frustum,
                             bool (*visible)(void *, uint32_t, float),
                             uint32_t (*visible_run)(void *, uint32_t, uint64_t, float), public_sink *k,
                             rv_cull_counts *counts)
{
    if (!world || !frustum)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    uint32_t r = NONE;
    if (root.id != 0)
        RVI_TRY(rvi_node_index(s, root, &r));
    RVI_TRY(rvi_frustum_check(frustum));
    /* A root under a hidden node: its whole subtree is hidden, nothing is handed out. */
    if (r != NONE && rvi_scene_flag_at_or_above(s, s->parent[r], RVI_NODE_HIDDEN)) {
        if (counts)
            *counts = (rv_cull_counts){ 0 };
        return RV_OK;
    }
    rvi_walk_policy p = { 0 };
    p.scene = s;
    p.frustum = frustum;
    p.visible = visible;
    p.visible_run = visible_run;
    p.own_geometry = true;
    p.hidden_prunes = true;
    /* The scene's scratch holds one entry per slot: deeper than any hierarchy can be. */
    rvi_walk_stack stack = { s->work, NULL, NULL, s->capacity, false };
    rvi_walk_counts c = { 0 };
    uint32_t mask = frustum->plane_mask & RVI_FRUSTUM_ALL_PLANES;
    s->visiting = true;
    if (r == NONE)
        rvi_walk_siblings(&p, k, &stack, s->first_root, UINT32_MAX, mask, 1.0f, NULL, &c);
    else
        rvi_walk_siblings(&p, k, &stack, r, 1, mask, 1.0f, NULL, &c);
    s->visiting = false;
    if (counts) {
        rv_cull_counts out = { c.visited, c.outside + c.empty, c.tested, c.visible };
        *counts = out;
    }
    return RV_OK;
}

rv_result rv_visit_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                           rv_visit_fn callback, void *user, rv_cull_counts *counts)
{
    if (!callback)
        return RV_ERR_INVALID_ARG;
    public_sink k = { world, callback, user, NULL, 0, 0 };
    return public_walk(world, root, frustum, to_host, run_to_host, &k, counts);
}

rv_result rv_collect_visible(rv_world *world, rv_node root, const rv_frustum *frustum,
                             rv_node *out_nodes, uint32_t capacity, uint32_t *out_count,
                             rv_cull_counts *counts)
{
    if (!out_count || (!out_nodes && capacity > 0))
        return RV_ERR_INVALID_ARG;
    public_sink k = { world, NULL, NULL, out_nodes, capacity, 0 };
    RVI_TRY(public_walk(world, root, frustum, to_array, run_to_array, &k, counts));
    *out_count = k.count;
    return k.count > capacity ? RV_ERR_CAPACITY : RV_OK;
}
