/* Partition gating (docs/design.md §3), part 1: the gate's creation, groups and parts, the
 * host's reports (leaf commits, view version, committed slice) and the queries. The
 * per-frame work is in partition_gate.c.
 *
 * Every array the end of a frame writes is reserved here, when parts are added, so frames
 * never allocate. */
#include "partition_state.h"
#include "core/check.h"
#include "core/sort.h"

#include <string.h>

/* ---- creation ------------------------------------------------------------------------ */

static rv_result resolve_desc(const rv_partition_desc *d, rvi_partition *p)
{
    float v[4] = { d->frustum_margin, d->lazy_activation_timeout_ms, d->lazy_activation_backoff,
                   d->lazy_activation_cap_ms };
    if (!rvi_finite_n(v, 4))
        return RV_ERR_NOT_FINITE;
    if (v[0] < 0.0f || v[1] < 0.0f || v[2] < 0.0f || v[3] < 0.0f)
        return RV_ERR_INVALID_ARG;
    double timeout = v[1] > 0.0f ? v[1] : 2000.0;
    double backoff = v[2] > 0.0f ? v[2] : 2.0;
    /* A default cap never undercuts a long timeout the host chose. */
    double cap = v[3] > 0.0f ? v[3] : (timeout > 60000.0 ? timeout : 60000.0);
    if (backoff < 1.0)
        return RV_ERR_INVALID_ARG; /* a shrinking wait would ask ever faster */
    if (cap < timeout)
        return RV_ERR_ORDER;
    p->request_reprocess = d->request_reprocess;
    p->is_update_in_progress = d->is_update_in_progress;
    p->user = d->user;
    p->margin = v[0];
    p->timeout_ms = timeout;
    p->backoff = backoff;
    p->cap_ms = cap;
    return RV_OK;
}

rv_result rvi_partition_check_desc(const rv_partition_desc *desc)
{
    rvi_partition scratch;
    memset(&scratch, 0, sizeof scratch);
    return resolve_desc(desc, &scratch);
}

static void free_part_leaves(rvi_heap *heap, rvi_partition_part *part)
{
    rvi_free(heap, part->leaves, (size_t)part->leaf_count * sizeof *part->leaves);
    part->leaves = NULL;
    part->leaf_count = 0;
}

static void partition_destroy(rv_world *world, void *state)
{
    rvi_partition *p = state;
    rvi_heap *heap = &world->heap;
    for (uint32_t i = 0; i < p->parts.count; i++)
        free_part_leaves(heap, &RVI_VEC_AT(p->parts, rvi_partition_part, i));
    rvi_vec_free(heap, &p->groups, sizeof(rvi_partition_group));
    rvi_vec_free(heap, &p->parts, sizeof(rvi_partition_part));
    rvi_vec_free(heap, &p->part_state, sizeof(uint8_t));
    rvi_free(heap, p->part_of_node, (size_t)p->node_span * 2 * sizeof(uint32_t));
    rvi_map_free(heap, &p->leaf_of_id);
    rvi_vec_free(heap, &p->pending, sizeof(uint32_t));
    rvi_vec_free(heap, &p->gated_now, sizeof(uint32_t));
    rvi_vec_free(heap, &p->visible_last, sizeof(uint32_t));
    rvi_vec_free(heap, &p->sort_keys, sizeof(uint64_t));
    rvi_vec_free(heap, &p->out_parts, sizeof(rv_node));
    rvi_vec_free(heap, &p->out_requests, sizeof(rv_partition_request));
    rvi_vec_free(heap, &p->path_nodes, sizeof(uint32_t));
    rvi_free(heap, p, sizeof *p);
}

static void partition_node_destroyed(rv_world *world, void *state, uint32_t node_index);

rv_result rvi_partition_state(rv_world *world, rvi_partition **out)
{
    rvi_partition *p = rvi_partition_find(world);
    if (p) {
        *out = p;
        return RV_OK;
    }
    rvi_partition resolved = {0};
    RVI_TRY(resolve_desc(&world->desc.partition, &resolved));
    p = rvi_alloc(&world->heap, sizeof *p);
    if (!p)
        return RV_ERR_OUT_OF_MEMORY;
    *p = resolved;
    rvi_module_hooks hooks = { p, partition_destroy, partition_node_destroyed };
    rv_result r = rvi_world_register_module(world, RVI_MODULE_PARTITION, &hooks);
    if (r != RV_OK) {
        rvi_free(&world->heap, p, sizeof *p);
        return r;
    }
    *out = p;
    return RV_OK;
}

float rvi_partition_margin(const rvi_partition *gate)
{
    return gate->margin;
}
/* ---- removal (also the node_destroyed hook) -------------------------------------------- */

/* Removes an entry (a node or a part index) from a list, keeping the order. */
static void list_remove(rvi_vec *list, uint32_t entry)
{
    uint32_t *w = RVI_VEC_PTR(*list, uint32_t);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < list->count; i++)
        if (w[i] != entry)
            w[kept++] = w[i];
    list->count = kept;
}

/* Renames the entry `from` of a list of part indices to `to` (a record moved). */
static void list_rename(rvi_vec *list, uint32_t from, uint32_t to)
{
    uint32_t *w = RVI_VEC_PTR(*list, uint32_t);
    for (uint32_t i = 0; i < list->count; i++)
        if (w[i] == from)
            w[i] = to;
}

/* Takes a part off the waiting list. The frame lists (pending, gated_now, visible_last)
 * hold each part at most once and only live parts: the end of a frame relies on it to stay
 * within their reservation of one entry per part. */
static void drop_waiting(rvi_partition *p, uint32_t index)
{
    list_remove(&p->pending, part_record(p, index)->node);
    *part_state(p, index) &= (uint8_t)~PART_WAITING;
}

static void remove_part(rv_world *world, rvi_partition *p, uint32_t node)
{
    if (!part_at(p, node))
        return;
    uint32_t index = part_index(p, node);
    rvi_partition_part *part = part_record(p, index);
    for (uint32_t i = 0; i < part->leaf_count; i++)
        rvi_map_remove(&p->leaf_of_id, part->leaves[i].id);
    free_part_leaves(&world->heap, part);
    uint8_t state = *part_state(p, index);
    if (state & PART_WAITING)
        drop_waiting(p, index);
    if (state & PART_GATED)
        list_remove(&p->gated_now, index);
    if (state & PART_SHOWN)
        list_remove(&p->visible_last, index);
    p->part_of_node[node] = RVI_INDEX_NONE;
    uint32_t last = p->parts.count - 1;
    if (index != last) { /* the last record moves into the hole: so do its list entries */
        uint8_t moved = *part_state(p, last);
        if (moved & PART_GATED)
            list_rename(&p->gated_now, last, index);
        if (moved & PART_SHOWN)
            list_rename(&p->visible_last, last, index);
        p->part_of_node[part_record(p, last)->node] = index;
    }
    rvi_vec_swap_remove(&p->parts, sizeof(rvi_partition_part), index);
    rvi_vec_swap_remove(&p->part_state, sizeof(uint8_t), index);
    world->scene.flags[node] &= ~(uint32_t)RVI_NODE_PARTITION_PART;
    world->scene.edits++;
    p->structure++;
}

static void remove_group(rv_world *world, rvi_partition *p, uint32_t node)
{
    if (!group_at(p, node))
        return;
    uint32_t index = p->group_of_node[node];
    p->group_of_node[node] = RVI_INDEX_NONE;
    uint32_t last = p->groups.count - 1;
    if (index != last)
        p->group_of_node[RVI_VEC_AT(p->groups, rvi_partition_group, last).node] = index;
    rvi_vec_swap_remove(&p->groups, sizeof(rvi_partition_group), index);
    world->scene.flags[node] &= ~(uint32_t)RVI_NODE_PARTITION_GROUP;
    world->scene.edits++;
    p->structure++;
}

static void partition_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    rvi_partition *p = state;
    remove_part(world, p, node_index);
    remove_group(world, p, node_index);
}

/* ---- structure ------------------------------------------------------------------------- */

/* Common entry: world checked, handle resolved, gate created, no callback running. */
static rv_result enter(rv_world *world, rv_node node, uint32_t *index, rvi_partition **p)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_node_index(&world->scene, node, index));
    RVI_TRY(rvi_partition_state(world, p));
    if ((*p)->in_callback)
        return RV_ERR_BAD_STATE;
    return RV_OK;
}

/* Makes the node-to-record arrays cover node index `node` (to the scene's capacity, so
 * node creation rarely makes the next call grow them). All or nothing. */
static rv_result cover_node(rv_world *world, rvi_partition *p, uint32_t node)
{
    if (node < p->node_span)
        return RV_OK;
    uint32_t span = world->scene.capacity > node ? world->scene.capacity : node + 1;
    uint32_t *fresh = rvi_alloc(&world->heap, (size_t)span * 2 * sizeof *fresh);
    if (!fresh)
        return RV_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < 2 * span; i++)
        fresh[i] = RVI_INDEX_NONE;
    if (p->node_span) {
        memcpy(fresh, p->part_of_node, (size_t)p->node_span * sizeof *fresh);
        memcpy(fresh + span, p->group_of_node, (size_t)p->node_span * sizeof *fresh);
    }
    rvi_free(&world->heap, p->part_of_node, (size_t)p->node_span * 2 * sizeof *fresh);
    p->part_of_node = fresh;
    p->group_of_node = fresh + span;
    p->node_span = span;
    return RV_OK;
}

rv_result rv_partition_make_group(rv_world *world, rv_node node)
{
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(enter(world, node, &index, &p));
    if (group_at(p, index))
        return RV_ERR_DUPLICATE;
    RVI_TRY(rvi_vec_reserve(&world->heap, &p->groups, sizeof(rvi_partition_group), p->groups.count + 1));
    RVI_TRY(cover_node(world, p, index));
    p->group_of_node[index] = p->groups.count;
    rvi_partition_group g = { .node = index };
    (void)rvi_vec_push(&world->heap, &p->groups, sizeof g, &g); /* reserved above */
    world->scene.flags[index] |= RVI_NODE_PARTITION_GROUP;
    world->scene.edits++;
    p->structure++;
    return RV_OK;
}

/* Reserves everything a world with `parts` parts and `leaves` more leaf ids needs, so the
 * rest of set_part and every frame cannot fail. */
static rv_result reserve_for(rv_world *world, rvi_partition *p, uint32_t parts, uint32_t leaves)
{
    rvi_heap *heap = &world->heap;
    if (leaves > UINT32_MAX - p->leaf_of_id.count)
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(heap, &p->parts, sizeof(rvi_partition_part), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->part_state, sizeof(uint8_t), parts));
    RVI_TRY(rvi_map_reserve(heap, &p->leaf_of_id, p->leaf_of_id.count + leaves));
    RVI_TRY(rvi_vec_reserve(heap, &p->pending, sizeof(uint32_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->gated_now, sizeof(uint32_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->visible_last, sizeof(uint32_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->sort_keys, sizeof(uint64_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->out_parts, sizeof(rv_node), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->out_requests, sizeof(rv_partition_request), parts));
    return RV_OK;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* RV_ERR_DUPLICATE when a leaf id repeats within the list. Short lists are compared pair by
 * pair; longer ones through a sorted scratch copy, freed before returning, so a refused
 * call holds no more memory than before. */
static rv_result check_distinct(rvi_heap *heap, const uint64_t *leaves, uint32_t count)
{
    if (count <= 32) {
        for (uint32_t i = 1; i < count; i++)
            for (uint32_t j = 0; j < i; j++)
                if (leaves[i] == leaves[j])
                    return RV_ERR_DUPLICATE;
        return RV_OK;
    }
    uint64_t *sorted = rvi_alloc(heap, (size_t)count * sizeof *sorted);
    if (!sorted)
        return RV_ERR_OUT_OF_MEMORY;
    memcpy(sorted, leaves, (size_t)count * sizeof *sorted);
    rvi_sort(sorted, count, sizeof *sorted, compare_u64);
    rv_result r = RV_OK;
    for (uint32_t i = 1; i < count && r == RV_OK; i++)
        if (sorted[i] == sorted[i - 1])
            r = RV_ERR_DUPLICATE;
    rvi_free(heap, sorted, (size_t)count * sizeof *sorted);
    return r;
}

rv_result rv_partition_set_part(rv_world *world, rv_node part, const uint64_t *leaves, uint32_t count,
                                bool deferred)
{
    if (!world || (count && !leaves))
        return RV_ERR_INVALID_ARG;
    uint32_t node;
    RVI_TRY(rvi_node_index(&world->scene, part, &node));
    rvi_partition *p = rvi_partition_find(world);
    if (p && p->in_callback)
        return RV_ERR_BAD_STATE;
    rvi_heap *heap = &world->heap;

    for (uint32_t i = 0; p && i < count; i++) {
        uint64_t v;
        if (rvi_map_get(&p->leaf_of_id, leaves[i], &v) && (uint32_t)(v >> 32) != node)
            return RV_ERR_DUPLICATE; /* a leaf of another part */
    }
    /* Before anything is reserved, the gate itself included (a world's first part makes it:
     * a refused list keeps nothing). */
    RVI_TRY(check_distinct(heap, leaves, count));
    if (!p)
        RVI_TRY(rvi_partition_state(world, &p));
    bool exists = part_at(p, node) != NULL;
    RVI_TRY(reserve_for(world, p, p->parts.count + (exists ? 0u : 1u), count));
    RVI_TRY(cover_node(world, p, node));
    rvi_partition_leaf *fresh = NULL;
    if (count) {
        fresh = rvi_alloc(heap, (size_t)count * sizeof *fresh);
        if (!fresh)
            return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_partition_part *old = part_at(p, node); /* after the reserve: parts may have moved */
    for (uint32_t i = 0; i < count; i++) {
        uint64_t v;
        fresh[i] = (rvi_partition_leaf){ .id = leaves[i] };
        if (old && rvi_map_get(&p->leaf_of_id, leaves[i], &v))
            fresh[i] = old->leaves[(uint32_t)v]; /* a kept leaf keeps its committed state */
    }
    /* Swap the ids in the map; an id met twice is a duplicate within the list. Every put
     * fits the reservation, and the rollback re-inserts no more than was there. */
    if (old)
        for (uint32_t j = 0; j < old->leaf_count; j++)
            rvi_map_remove(&p->leaf_of_id, old->leaves[j].id);
    for (uint32_t i = 0; i < count; i++) {
        if (rvi_map_get(&p->leaf_of_id, leaves[i], NULL)) {
            for (uint32_t k = 0; k < i; k++)
                rvi_map_remove(&p->leaf_of_id, leaves[k]);
            if (old)
                for (uint32_t j = 0; j < old->leaf_count; j++)
                    (void)rvi_map_put(heap, &p->leaf_of_id, old->leaves[j].id, (uint64_t)node << 32 | j);
            rvi_free(heap, fresh, (size_t)count * sizeof *fresh);
            return RV_ERR_DUPLICATE;
        }
        (void)rvi_map_put(heap, &p->leaf_of_id, leaves[i], (uint64_t)node << 32 | i);
    }

    if (old) {
        uint32_t index = part_index(p, node);
        uint8_t *state = part_state(p, index);
        free_part_leaves(heap, old);
        old->leaves = fresh;
        old->leaf_count = count;
        if (!deferred) {
            *state |= PART_ACTIVE;
            if ((*state & PART_WAITING) == PART_WAIT_ACTIVATION)
                drop_waiting(p, index);
            *state &= (uint8_t)~PART_WAIT_ACTIVATION;
        } else if (!old->deferred) {
            *state &= (uint8_t)~PART_ACTIVE; /* waits for activation again, from a fresh backoff */
            old->asks = 0;
            old->interval_ms = p->timeout_ms;
        }
        old->deferred = deferred;
        return RV_OK;
    }
    rvi_partition_part rec = {
        .node = node, .leaf_count = count, .leaves = fresh, .interval_ms = p->timeout_ms,
        .deferred = deferred,
    };
    uint8_t state = deferred ? 0 : PART_ACTIVE; /* never seen */
    p->part_of_node[node] = p->parts.count;
    p->parts_made++;
    p->structure++;
    (void)rvi_vec_push(heap, &p->parts, sizeof rec, &rec);          /* reserved above */
    (void)rvi_vec_push(heap, &p->part_state, sizeof state, &state); /* reserved above */
    world->scene.flags[node] |= RVI_NODE_PARTITION_PART;
    world->scene.edits++;
    return RV_OK;
}

rv_result rv_partition_remove(rv_world *world, rv_node node)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    rvi_partition *p = rvi_partition_find(world);
    if (!p)
        return RV_ERR_NOT_FOUND;
    if (p->in_callback)
        return RV_ERR_BAD_STATE;
    bool part = part_at(p, index) != NULL;
    bool group = group_at(p, index) != NULL;
    if (!part && !group)
        return RV_ERR_NOT_FOUND;
    remove_part(world, p, index);
    remove_group(world, p, index);
    return RV_OK;
}

bool rv_partition_is_group(const rv_world *world, rv_node node)
{
    uint32_t index;
    if (!world || rvi_node_index(&world->scene, node, &index) != RV_OK)
        return false;
    const rvi_partition *p = rvi_partition_find(world);
    return p && group_at(p, index) != NULL;
}

/* ---- host reports ---------------------------------------------------------------------- */

rv_result rv_partition_set_view_version(rv_world *world, uint64_t view_version)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p;
    RVI_TRY(rvi_partition_state(world, &p));
    p->view_version = view_version;
    return RV_OK;
}

uint64_t rv_partition_view_version(const rv_world *world)
{
    const rvi_partition *p = world ? rvi_partition_find(world) : NULL;
    return p ? p->view_version : 0;
}

static rv_result find_leaf(rv_world *world, uint64_t leaf, rvi_partition_leaf **out)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p = rvi_partition_find(world);
    uint64_t v;
    if (!p || !rvi_map_get(&p->leaf_of_id, leaf, &v))
        return RV_ERR_NOT_FOUND;
    rvi_partition_part *part = part_at(p, (uint32_t)(v >> 32));
    *out = &part->leaves[(uint32_t)v];
    return RV_OK;
}

rv_result rv_partition_leaf_committed(rv_world *world, uint64_t leaf, uint64_t view_version,
                                      bool ladder_complete)
{
    rvi_partition_leaf *l;
    RVI_TRY(find_leaf(world, leaf, &l));
    l->view_version = view_version;
    l->state = LEAF_COMMITTED | (ladder_complete ? LEAF_LADDER_COMPLETE : 0u);
    return RV_OK;
}

rv_result rv_partition_leaf_dropped(rv_world *world, uint64_t leaf)
{
    rvi_partition_leaf *l;
    RVI_TRY(find_leaf(world, leaf, &l));
    l->state = 0;
    return RV_OK;
}

rv_result rv_partition_set_committed_slice(rv_world *world, const float min[3], const float max[3])
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(min, 3) || !rvi_finite_n(max, 3))
        return RV_ERR_NOT_FINITE;
    for (int k = 0; k < 3; k++)
        if (min[k] > max[k])
            return RV_ERR_ORDER;
    rvi_partition *p;
    RVI_TRY(rvi_partition_state(world, &p));
    memcpy(p->slice_min, min, sizeof p->slice_min);
    memcpy(p->slice_max, max, sizeof p->slice_max);
    p->has_slice = true;
    return RV_OK;
}

rv_result rv_partition_clear_committed_slice(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p = rvi_partition_find(world);
    if (p)
        p->has_slice = false;
    return RV_OK;
}
/* ---- queries --------------------------------------------------------------------------- */

rv_result rv_partition_part_frustum_visible(const rv_world *world, rv_node part, bool *out_visible)
{
    if (!out_visible)
        return RV_ERR_INVALID_ARG;
    rv_partition_part_info info;
    RVI_TRY(rv_partition_part_get_info(world, part, &info));
    *out_visible = info.frustum_visible;
    return RV_OK;
}

rv_result rv_partition_part_get_info(const rv_world *world, rv_node part, rv_partition_part_info *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t node;
    RVI_TRY(rvi_node_index(&world->scene, part, &node));
    const rvi_partition *p = rvi_partition_find(world);
    const rvi_partition_part *rec = p ? part_at(p, node) : NULL;
    if (!rec)
        return RV_ERR_NOT_FOUND;
    uint32_t index = part_index(p, node);
    uint8_t state = *part_state(p, index);
    const rvi_scene *s = &world->scene;
    rv_partition_part_info info = {0};
    info.group = is_gated_part(s, node) ? rvi_node_handle(s, s->parent[node]) : RV_NODE_NONE;
    info.leaf_count = rec->leaf_count;
    for (uint32_t i = 0; i < rec->leaf_count; i++) {
        const rvi_partition_leaf *l = &rec->leaves[i];
        if ((l->state & LEAF_COMMITTED) && l->view_version == p->view_version) {
            info.leaves_committed++;
            info.leaves_complete += (l->state & LEAF_LADDER_COMPLETE) != 0;
        }
    }
    bool active = (state & PART_ACTIVE) != 0;
    info.deferred = rec->deferred;
    info.active = active;
    info.ever_visible = (state & PART_SEEN) != 0;
    info.frustum_visible = part_flag_visible(p, s, index);
    info.resync_waiting = (state & PART_WAITING) != 0;
    info.activation_requests = rec->asks;
    info.activation_expiry_ms = active || !rec->asks ? 0.0 : rec->expiry_ms;
    *out = info;
    return RV_OK;
}

rv_result rv_partition_node_hidden(const rv_world *world, rv_node node, bool *out_hidden)
{
    if (!world || !out_hidden)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    const rvi_partition *p = rvi_partition_find(world);
    bool hidden = false;
    if (p)
        for (uint32_t n = index; n != RVI_INDEX_NONE && !hidden; n = world->scene.parent[n])
            hidden = rvi_partition_part_hidden(world, p, n);
    *out_hidden = hidden;
    return RV_OK;
}
