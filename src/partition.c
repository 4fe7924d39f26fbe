/* Partition gating (DESIGN.md §3): per-part frustum and slice culling of partition groups,
 * the targeted resync of parts that re-enter, lazy activation of deferred parts, and the
 * tick demand an on-demand render loop reads.
 *
 * Decisions are made in two steps. Gating a group (begin, or the walk reaching it) only
 * sets each part's hidden flag for this frame, so anything below a part sees this frame's
 * cull at once and a later decision in the same frame (occlusion, a revealed group) simply
 * overrides an earlier one. Transitions (first sight, re-entry, expiry) are judged once, at
 * the end of the frame, against the previous frame's outcome; readiness is read from the
 * leaf reports there and again at the flush, never inferred from a callback having fired.
 * Every array the end of a frame writes is reserved when parts are added, so frames never
 * allocate. */
#include "partition.h"
#include "core/check.h"
#include "core/map.h"
#include "core/vec.h"

#include <stdlib.h>
#include <string.h>

enum { LEAF_COMMITTED = 1u, LEAF_LADDER_COMPLETE = 2u };
enum { SEEN_NEVER = 0, SEEN_VISIBLE, SEEN_HIDDEN };
/* Why a part's request waits. */
enum { WAIT_REENTRY = 1u, WAIT_ACTIVATION = 2u };
/* How a group's decision of frame `stamp` was made. */
enum { GROUP_GATED = 1, GROUP_HIDDEN_BY_TEST, GROUP_HIDDEN_BY_HOST };

typedef struct rvi_partition_leaf {
    uint64_t id;
    uint64_t view_version; /* version of the last commit */
    uint32_t state;        /* LEAF_* bits; 0 = not committed */
} rvi_partition_leaf;

typedef struct rvi_partition_part {
    uint32_t node;
    uint32_t leaf_count;
    rvi_partition_leaf *leaves;
    uint64_t stamp;        /* frame of the latest gate decision (0 = never gated) */
    double expiry_ms;      /* deferred and asked: when to ask again */
    double interval_ms;    /* deferred: how long the next ask waits for an answer */
    uint32_t asks;         /* activation requests delivered, unanswered */
    uint8_t seen;          /* SEEN_*: outcome of the last finished frame */
    uint8_t waiting;       /* WAIT_* bits; nonzero while listed in gate->pending */
    bool visible;          /* the latest decision: the frustum_visible flag */
    bool deferred;
    bool active;           /* not deferred, or its activation was answered */
} rvi_partition_part;

typedef struct rvi_partition_group {
    uint32_t node;
    uint8_t kind;          /* GROUP_* of frame `stamp` */
    bool todo;             /* scratch of gate_groups */
    uint64_t stamp;
} rvi_partition_group;

struct rvi_partition {
    /* desc.partition, resolved */
    void (*request_reprocess)(const rv_node *parts, uint32_t count, void *user);
    bool (*is_update_in_progress)(void *user);
    void *user;
    float margin;
    double timeout_ms, backoff, cap_ms;

    rvi_vec groups;        /* rvi_partition_group */
    rvi_map group_of_node; /* node index -> index in groups */
    rvi_vec parts;         /* rvi_partition_part */
    rvi_map part_of_node;  /* node index -> index in parts */
    rvi_map leaf_of_id;    /* leaf id -> part node index << 32 | position in its leaves */
    /* Frame storage, each reserved to hold every part. */
    rvi_vec pending;       /* uint32_t part node indices whose request waits, oldest first */
    rvi_vec sort_keys;     /* uint64_t: group node << 32 | position in pending */
    rvi_vec out_parts;     /* rv_node */
    rvi_vec out_requests;  /* rv_partition_request */

    uint64_t view_version;
    bool has_slice;
    float slice_min[3], slice_max[3];
    uint64_t frame;        /* frames begun; stamps compare against it */
    bool in_frame;
    bool in_callback;      /* request_reprocess is running */
    rv_partition_counts counts;
};

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
    rvi_map_free(heap, &p->group_of_node);
    rvi_map_free(heap, &p->part_of_node);
    rvi_map_free(heap, &p->leaf_of_id);
    rvi_vec_free(heap, &p->pending, sizeof(uint32_t));
    rvi_vec_free(heap, &p->sort_keys, sizeof(uint64_t));
    rvi_vec_free(heap, &p->out_parts, sizeof(rv_node));
    rvi_vec_free(heap, &p->out_requests, sizeof(rv_partition_request));
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

/* ---- lookups --------------------------------------------------------------------------- */

static rvi_partition_part *part_at(const rvi_partition *p, uint32_t node)
{
    uint64_t i;
    if (!rvi_map_get(&p->part_of_node, node, &i))
        return NULL;
    return &RVI_VEC_AT(p->parts, rvi_partition_part, i);
}

static rvi_partition_group *group_at(const rvi_partition *p, uint32_t node)
{
    uint64_t i;
    if (!rvi_map_get(&p->group_of_node, node, &i))
        return NULL;
    return &RVI_VEC_AT(p->groups, rvi_partition_group, i);
}

static bool is_gated_part(const rvi_scene *s, uint32_t node)
{
    uint32_t parent = s->parent[node];
    return (s->flags[node] & RVI_NODE_PARTITION_PART) && parent != RVI_INDEX_NONE &&
           (s->flags[parent] & RVI_NODE_PARTITION_GROUP);
}

/* Every leaf committed for the current view version: a deferred part's activation is answered. */
static bool part_answered(const rvi_partition *p, const rvi_partition_part *part)
{
    for (uint32_t i = 0; i < part->leaf_count; i++) {
        const rvi_partition_leaf *l = &part->leaves[i];
        if (!(l->state & LEAF_COMMITTED) || l->view_version != p->view_version)
            return false;
    }
    return true;
}

/* ... and with a complete LOD ladder: a re-entry needs no resync. */
static bool part_satisfied(const rvi_partition *p, const rvi_partition_part *part)
{
    const uint32_t both = LEAF_COMMITTED | LEAF_LADDER_COMPLETE;
    for (uint32_t i = 0; i < part->leaf_count; i++) {
        const rvi_partition_leaf *l = &part->leaves[i];
        if ((l->state & both) != both || l->view_version != p->view_version)
            return false;
    }
    return true;
}

/* ---- removal (also the node_destroyed hook) -------------------------------------------- */

static void remove_part(rv_world *world, rvi_partition *p, uint32_t node)
{
    uint64_t index;
    if (!rvi_map_get(&p->part_of_node, node, &index))
        return;
    rvi_partition_part *part = &RVI_VEC_AT(p->parts, rvi_partition_part, index);
    for (uint32_t i = 0; i < part->leaf_count; i++)
        rvi_map_remove(&p->leaf_of_id, part->leaves[i].id);
    free_part_leaves(&world->heap, part);
    if (part->waiting) {
        uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
        uint32_t kept = 0;
        for (uint32_t i = 0; i < p->pending.count; i++)
            if (w[i] != node)
                w[kept++] = w[i];
        p->pending.count = kept;
    }
    rvi_map_remove(&p->part_of_node, node);
    uint32_t last = p->parts.count - 1;
    if ((uint32_t)index != last) {
        uint32_t moved = RVI_VEC_AT(p->parts, rvi_partition_part, last).node;
        /* Overwrites an existing key: never allocates. */
        (void)rvi_map_put(&world->heap, &p->part_of_node, moved, index);
    }
    rvi_vec_swap_remove(&p->parts, sizeof(rvi_partition_part), (uint32_t)index);
    world->scene.flags[node] &= ~(uint32_t)RVI_NODE_PARTITION_PART;
}

static void remove_group(rv_world *world, rvi_partition *p, uint32_t node)
{
    uint64_t index;
    if (!rvi_map_get(&p->group_of_node, node, &index))
        return;
    rvi_map_remove(&p->group_of_node, node);
    uint32_t last = p->groups.count - 1;
    if ((uint32_t)index != last) {
        uint32_t moved = RVI_VEC_AT(p->groups, rvi_partition_group, last).node;
        (void)rvi_map_put(&world->heap, &p->group_of_node, moved, index);
    }
    rvi_vec_swap_remove(&p->groups, sizeof(rvi_partition_group), (uint32_t)index);
    world->scene.flags[node] &= ~(uint32_t)RVI_NODE_PARTITION_GROUP;
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

rv_result rv_partition_make_group(rv_world *world, rv_node node)
{
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(enter(world, node, &index, &p));
    if (rvi_map_get(&p->group_of_node, index, NULL))
        return RV_ERR_DUPLICATE;
    RVI_TRY(rvi_vec_reserve(&world->heap, &p->groups, sizeof(rvi_partition_group), p->groups.count + 1));
    RVI_TRY(rvi_map_put(&world->heap, &p->group_of_node, index, p->groups.count));
    rvi_partition_group g = { .node = index };
    (void)rvi_vec_push(&world->heap, &p->groups, sizeof g, &g); /* reserved above */
    world->scene.flags[index] |= RVI_NODE_PARTITION_GROUP;
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
    RVI_TRY(rvi_map_reserve(heap, &p->part_of_node, parts));
    RVI_TRY(rvi_map_reserve(heap, &p->leaf_of_id, p->leaf_of_id.count + leaves));
    RVI_TRY(rvi_vec_reserve(heap, &p->pending, sizeof(uint32_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->sort_keys, sizeof(uint64_t), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->out_parts, sizeof(rv_node), parts));
    RVI_TRY(rvi_vec_reserve(heap, &p->out_requests, sizeof(rv_partition_request), parts));
    return RV_OK;
}

rv_result rv_partition_set_part(rv_world *world, rv_node part, const uint64_t *leaves, uint32_t count,
                                bool deferred)
{
    if (count && !leaves)
        return RV_ERR_INVALID_ARG;
    uint32_t node;
    rvi_partition *p;
    RVI_TRY(enter(world, part, &node, &p));
    rvi_heap *heap = &world->heap;

    for (uint32_t i = 0; i < count; i++) {
        uint64_t v;
        if (rvi_map_get(&p->leaf_of_id, leaves[i], &v) && (uint32_t)(v >> 32) != node)
            return RV_ERR_DUPLICATE; /* a leaf of another part */
    }
    bool exists = rvi_map_get(&p->part_of_node, node, NULL);
    RVI_TRY(reserve_for(world, p, p->parts.count + (exists ? 0u : 1u), count));
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
        free_part_leaves(heap, old);
        old->leaves = fresh;
        old->leaf_count = count;
        if (!deferred) {
            old->active = true;
            old->waiting &= (uint8_t)~WAIT_ACTIVATION;
        } else if (!old->deferred) {
            old->active = false; /* waits for activation again, from a fresh backoff */
            old->asks = 0;
            old->interval_ms = p->timeout_ms;
        }
        old->deferred = deferred;
        return RV_OK;
    }
    rvi_partition_part rec = {
        .node = node, .leaf_count = count, .leaves = fresh, .interval_ms = p->timeout_ms,
        .seen = SEEN_NEVER, .deferred = deferred, .active = !deferred,
    };
    (void)rvi_map_put(heap, &p->part_of_node, node, p->parts.count);
    (void)rvi_vec_push(heap, &p->parts, sizeof rec, &rec);
    world->scene.flags[node] |= RVI_NODE_PARTITION_PART;
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
    bool part = rvi_map_get(&p->part_of_node, index, NULL);
    bool group = rvi_map_get(&p->group_of_node, index, NULL);
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

/* ---- gating ---------------------------------------------------------------------------- */

/* Sphere (world x, y, z, r) against the frustum padded by the margin. A sphere with no
 * radius (empty subtree) or a NaN passes: every culling decision errs toward drawing. */
static bool passes_frustum(const rvi_partition *p, const float sphere[4], const rv_frustum *f)
{
    if (!(sphere[3] >= 0.0f))
        return true;
    return rv_frustum_classify_sphere(f, sphere, sphere[3] + p->margin) != RV_OUTSIDE;
}

/* Sphere against the committed slice box: exact distance from the centre to the box. */
static bool passes_slice(const rvi_partition *p, const float sphere[4])
{
    if (!p->has_slice || !(sphere[3] >= 0.0f))
        return true;
    double d2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double c = sphere[k], e = 0.0;
        if (c < p->slice_min[k])
            e = p->slice_min[k] - c;
        else if (c > p->slice_max[k])
            e = c - p->slice_max[k];
        d2 += e * e;
    }
    double r = sphere[3];
    return d2 <= r * r;
}

static void gate_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, const rv_frustum *f)
{
    const rvi_scene *s = &world->scene;
    g->stamp = p->frame;
    g->kind = GROUP_GATED;
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c]) {
        if (!(s->flags[c] & RVI_NODE_PARTITION_PART))
            continue;
        rvi_partition_part *part = part_at(p, c);
        const float *sphere = s->world_sphere[c];
        part->visible = passes_frustum(p, sphere, f) && passes_slice(p, sphere);
        part->stamp = p->frame;
        p->counts.parts_tested++;
    }
}

static void hide_record(rv_world *world, rvi_partition *p, rvi_partition_group *g, uint8_t kind)
{
    const rvi_scene *s = &world->scene;
    g->stamp = p->frame;
    g->kind = kind;
    for (uint32_t c = s->first_child[g->node]; c != RVI_INDEX_NONE; c = s->next_sibling[c]) {
        if (!(s->flags[c] & RVI_NODE_PARTITION_PART))
            continue;
        rvi_partition_part *part = part_at(p, c);
        part->visible = false;
        part->stamp = p->frame;
    }
}

/* The nearest gated part at or above node, or RVI_INDEX_NONE. */
static uint32_t enclosing_part(const rvi_scene *s, uint32_t node)
{
    for (uint32_t n = node; n != RVI_INDEX_NONE; n = s->parent[n])
        if (is_gated_part(s, n))
            return n;
    return RVI_INDEX_NONE;
}

/* The gate's own walk: gates each group still to decide (not decided this frame, or, with
 * retest, hidden by this test) that is visible, hides the others. A group nested in a part
 * waits for the part's group, so passes repeat until every group is decided (as many passes
 * as groups are nested deep, plus one). */
static void gate_groups(rv_world *world, rvi_partition *p, const rv_frustum *f, bool retest)
{
    const rvi_scene *s = &world->scene;
    rvi_partition_group *groups = RVI_VEC_PTR(p->groups, rvi_partition_group);
    uint32_t todo = 0;
    for (uint32_t i = 0; i < p->groups.count; i++) {
        rvi_partition_group *g = &groups[i];
        g->todo = g->stamp != p->frame || (retest && g->kind == GROUP_HIDDEN_BY_TEST);
        todo += g->todo;
    }
    while (todo) {
        uint32_t decided = 0;
        for (uint32_t i = 0; i < p->groups.count; i++) {
            rvi_partition_group *g = &groups[i];
            if (!g->todo)
                continue;
            bool above_visible = true;
            uint32_t part = enclosing_part(s, g->node);
            if (part != RVI_INDEX_NONE) {
                if (group_at(p, s->parent[part])->todo)
                    continue; /* its part is decided first */
                const rvi_partition_part *pp = part_at(p, part);
                above_visible = pp->stamp == p->frame && pp->visible;
            }
            if (above_visible && passes_frustum(p, s->world_sphere[g->node], f))
                gate_record(world, p, g, f);
            else
                hide_record(world, p, g, GROUP_HIDDEN_BY_TEST);
            g->todo = false;
            decided++;
        }
        if (!decided)
            break; /* unreachable in a tree: the outermost waiting group is always ready */
        todo -= decided;
    }
}

rv_result rvi_partition_frame_begin(rv_world *world, rvi_partition *p, const rv_frustum *gate_all)
{
    if (p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    p->frame++;
    p->in_frame = true;
    memset(&p->counts, 0, sizeof p->counts);
    if (gate_all)
        gate_groups(world, p, gate_all, false);
    return RV_OK;
}

static rv_result group_call(rvi_partition *p, uint32_t group_index, rvi_partition_group **g)
{
    if (!p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    *g = group_at(p, group_index);
    return *g ? RV_OK : RV_ERR_NOT_FOUND;
}

rv_result rvi_partition_gate_group(rv_world *world, rvi_partition *p, uint32_t group_index,
                                   const rv_frustum *frustum)
{
    rvi_partition_group *g;
    RVI_TRY(group_call(p, group_index, &g));
    gate_record(world, p, g, frustum);
    return RV_OK;
}

rv_result rvi_partition_hide_group(rv_world *world, rvi_partition *p, uint32_t group_index)
{
    rvi_partition_group *g;
    RVI_TRY(group_call(p, group_index, &g));
    hide_record(world, p, g, GROUP_HIDDEN_BY_HOST);
    return RV_OK;
}

bool rvi_partition_part_hidden(const rv_world *world, const rvi_partition *p, uint32_t node_index)
{
    if (!is_gated_part(&world->scene, node_index))
        return false;
    const rvi_partition_part *part = part_at(p, node_index);
    return part && !part->visible;
}

/* ---- end of frame ---------------------------------------------------------------------- */

static void wait_for(rvi_partition *p, rvi_partition_part *part, uint8_t why)
{
    if (!part->waiting)
        RVI_VEC_AT(p->pending, uint32_t, p->pending.count++) = part->node; /* reserved: one per part */
    part->waiting |= why;
}

/* Judges every part against the previous frame's outcome and polls readiness. */
static void judge_parts(rvi_partition *p, double now_ms)
{
    for (uint32_t i = 0; i < p->parts.count; i++) {
        rvi_partition_part *part = &RVI_VEC_AT(p->parts, rvi_partition_part, i);
        if (part->stamp != p->frame || !part->visible) {
            /* Culled as a whole, hidden, or never reached. A never-seen part stays never
             * seen; a waiting request is dropped: its re-entry will ask again. */
            part->visible = false;
            if (part->seen == SEEN_VISIBLE)
                part->seen = SEEN_HIDDEN;
            part->waiting = 0;
            continue;
        }
        bool reentry = part->seen == SEEN_HIDDEN;
        part->seen = SEEN_VISIBLE;
        p->counts.parts_visible++;
        p->counts.parts_reentered += reentry;
        if (!part->active) {
            if (part_answered(p, part))
                part->active = true;
            else if (part->asks == 0 || now_ms >= part->expiry_ms)
                wait_for(p, part, WAIT_ACTIVATION);
        }
        if (reentry && !part_satisfied(p, part))
            wait_for(p, part, WAIT_REENTRY);
    }
    /* Keep the waiting list in order without the parts that stopped waiting. */
    uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->pending.count; i++)
        if (part_at(p, w[i])->waiting)
            w[kept++] = w[i];
    p->pending.count = kept;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Re-reads readiness, then writes one request per group (in group node order, parts in
 * the order they began to wait) into the out arrays and empties the waiting list. */
static void build_requests(rv_world *world, rvi_partition *p, double now_ms)
{
    const rvi_scene *s = &world->scene;
    uint32_t *w = RVI_VEC_PTR(p->pending, uint32_t);
    uint64_t *keys = RVI_VEC_PTR(p->sort_keys, uint64_t);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->pending.count; i++) {
        rvi_partition_part *part = part_at(p, w[i]);
        if ((part->waiting & WAIT_ACTIVATION) && part_answered(p, part)) {
            part->active = true;
            part->waiting &= (uint8_t)~WAIT_ACTIVATION;
        }
        if ((part->waiting & WAIT_REENTRY) && part_satisfied(p, part))
            part->waiting &= (uint8_t)~WAIT_REENTRY;
        if (part->waiting && is_gated_part(s, w[i]))
            keys[n++] = (uint64_t)s->parent[w[i]] << 32 | i;
        part->waiting = 0;
    }
    qsort(keys, n, sizeof *keys, compare_u64);
    rv_node *out_parts = RVI_VEC_PTR(p->out_parts, rv_node);
    rv_partition_request *out_requests = RVI_VEC_PTR(p->out_requests, rv_partition_request);
    uint32_t requests = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t group = (uint32_t)(keys[k] >> 32);
        uint32_t node = w[(uint32_t)keys[k]];
        if (k == 0 || group != (uint32_t)(keys[k - 1] >> 32))
            out_requests[requests++] = (rv_partition_request){ rvi_node_handle(s, group), &out_parts[k], 0 };
        out_requests[requests - 1].part_count++;
        out_parts[k] = rvi_node_handle(s, node);
        rvi_partition_part *part = part_at(p, node);
        if (!part->active) {
            /* Each unanswered request lengthens the wait: timeout x backoff^asks, capped. */
            part->expiry_ms = now_ms + part->interval_ms;
            part->interval_ms = part->interval_ms * p->backoff < p->cap_ms ? part->interval_ms * p->backoff
                                                                          : p->cap_ms;
            part->asks++;
            p->counts.activations_requested++;
        }
    }
    p->out_parts.count = n;
    p->out_requests.count = requests;
    p->counts.parts_requested = n;
    p->pending.count = 0;
}

static rv_tick_demand tick_demand(const rvi_partition *p)
{
    rv_tick_demand t = { RV_TICK_IDLE, 0.0 };
    /* Every waiting part is visible this frame (hidden ones stopped waiting). */
    if (p->pending.count && p->request_reprocess) {
        t.mode = RV_TICK_CONTINUOUS;
        return t;
    }
    for (uint32_t i = 0; i < p->parts.count; i++) {
        const rvi_partition_part *part = &RVI_VEC_AT(p->parts, rvi_partition_part, i);
        if (part->visible && !part->active && part->asks && !part->waiting &&
            (t.mode == RV_TICK_IDLE || part->expiry_ms < t.wake_at_ms)) {
            t.mode = RV_TICK_WAKE_AT;
            t.wake_at_ms = part->expiry_ms;
        }
    }
    return t;
}

rv_result rvi_partition_frame_end(rv_world *world, rvi_partition *p, const rv_frustum *regate,
                                  double now_ms, rv_partition_result *out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    if (!p->in_frame || p->in_callback)
        return RV_ERR_BAD_STATE;
    if (!isfinite(now_ms))
        return RV_ERR_NOT_FINITE;
    if (regate)
        gate_groups(world, p, regate, true);
    for (uint32_t i = 0; i < p->groups.count; i++) {
        const rvi_partition_group *g = &RVI_VEC_AT(p->groups, rvi_partition_group, i);
        if (g->stamp == p->frame && g->kind == GROUP_GATED)
            p->counts.groups_gated++;
        else
            p->counts.groups_hidden++;
    }
    judge_parts(p, now_ms);
    p->out_parts.count = 0;
    p->out_requests.count = 0;
    if (p->pending.count) {
        bool busy = p->is_update_in_progress && p->is_update_in_progress(p->user);
        if (busy)
            p->counts.parts_held = p->pending.count;
        else
            build_requests(world, p, now_ms);
    }
    p->in_frame = false;
    if (p->request_reprocess && p->out_requests.count) {
        /* Every state change is done: the callback may report leaves (or destroy nodes,
         * which never touches the out arrays) without disturbing the flush. */
        p->in_callback = true;
        for (uint32_t i = 0; i < p->out_requests.count; i++) {
            const rv_partition_request *r = &RVI_VEC_AT(p->out_requests, rv_partition_request, i);
            p->request_reprocess(r->parts, r->part_count, p->user);
        }
        p->in_callback = false;
    }
    out->requests = RVI_VEC_PTR(p->out_requests, rv_partition_request);
    out->request_count = p->out_requests.count;
    out->tick = tick_demand(p);
    out->counts = p->counts;
    return RV_OK;
}

/* ---- public frame API: thin layers over the hooks -------------------------------------- */

rv_result rv_partition_begin_frame(rv_world *world, const rv_frustum *frustum)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p;
    RVI_TRY(rvi_partition_state(world, &p));
    return rvi_partition_frame_begin(world, p, frustum);
}

static rv_result group_entry(rv_world *world, rv_node group, uint32_t *index, rvi_partition **p)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_node_index(&world->scene, group, index));
    *p = rvi_partition_find(world);
    return *p ? RV_OK : RV_ERR_BAD_STATE; /* no gate: no frame was begun */
}

rv_result rv_partition_gate_group(rv_world *world, rv_node group, const rv_frustum *frustum)
{
    if (!frustum)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(group_entry(world, group, &index, &p));
    return rvi_partition_gate_group(world, p, index, frustum);
}

rv_result rv_partition_group_hidden(rv_world *world, rv_node group)
{
    uint32_t index;
    rvi_partition *p;
    RVI_TRY(group_entry(world, group, &index, &p));
    return rvi_partition_hide_group(world, p, index);
}

rv_result rv_partition_end_frame(rv_world *world, const rv_frustum *frustum, double now_ms,
                                 rv_partition_result *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rvi_partition *p = rvi_partition_find(world);
    if (!p)
        return RV_ERR_BAD_STATE;
    return rvi_partition_frame_end(world, p, frustum, now_ms, out);
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
    info.deferred = rec->deferred;
    info.active = rec->active;
    info.ever_visible = rec->seen != SEEN_NEVER;
    info.frustum_visible = rec->visible;
    info.resync_waiting = rec->waiting != 0;
    info.activation_requests = rec->asks;
    info.activation_expiry_ms = rec->active || !rec->asks ? 0.0 : rec->expiry_ms;
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
