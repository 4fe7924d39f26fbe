/* rv_group_spatially: a median-split bounding-volume hierarchy of group nodes inserted
 * above a flat list of children (docs/design.md §2), so a wide level culls hierarchically. */
#include "cull.h"
#include "world.h"
#include "core/check.h"

#include <string.h>

#define NONE RVI_INDEX_NONE

enum { DEFAULT_LEAF_SIZE = 32, RANGE_STACK = 80 };

/* Groups a median split of n items creates below the top (the parent is the top). */
static uint64_t count_groups(uint32_t n, uint32_t leaf)
{
    uint32_t stack[RANGE_STACK];
    uint32_t top = 0;
    uint64_t groups = 0;
    stack[top++] = n;
    while (top > 0) {
        uint32_t m = stack[--top];
        if (m <= leaf)
            continue;
        groups += 2;
        stack[top++] = m / 2;
        stack[top++] = m - m / 2;
    }
    return groups;
}

typedef struct split_items {
    const uint32_t *slots;  /* the children's slot indices, in the caller's order */
    uint32_t *items;        /* positions into slots, permuted by the splits */
    const float (*sphere)[4];
} split_items;

static inline float key(const split_items *si, uint32_t k, int axis)
{
    return si->sphere[si->slots[si->items[k]]][axis];
}

static inline void swap_items(uint32_t *a, uint32_t i, uint32_t j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* Quickselect (Hoare partition, median-of-three pivot): afterwards items[begin..nth) have
 * keys <= items[nth]'s and items(nth..end) keys >= it. */
static void select_nth(split_items *si, uint32_t begin, uint32_t end, uint32_t nth, int axis)
{
    uint32_t lo = begin, hi = end - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        float a = key(si, lo, axis), b = key(si, mid, axis), c = key(si, hi, axis);
        float pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        uint32_t i = lo, j = hi;
        for (;;) {
            while (key(si, i, axis) < pivot)
                i++;
            while (key(si, j, axis) > pivot)
                j--;
            if (i >= j)
                break;
            swap_items(si->items, i, j);
            i++;
            j--;
        }
        /* now [lo, j] <= pivot <= [j + 1, hi] */
        if (nth <= j)
            hi = j;
        else
            lo = j + 1;
    }
}

/* Orders a leaf range by the caller's order (small ranges: insertion sort). */
static void sort_positions(uint32_t *a, uint32_t begin, uint32_t end)
{
    for (uint32_t i = begin + 1; i < end; i++) {
        uint32_t v = a[i], j = i;
        for (; j > begin && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

/* The axis along which the centres of a range spread most. */
static int widest_axis(const split_items *si, uint32_t begin, uint32_t end)
{
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = hi[k] = key(si, begin, k);
    for (uint32_t i = begin + 1; i < end; i++)
        for (int k = 0; k < 3; k++) {
            float v = key(si, i, k);
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[axis] - lo[axis])
            axis = k;
    return axis;
}

/* Validates an explicit child list: live, direct children of p, no repeats. */
static rv_result check_children(rvi_scene *s, uint32_t p, const rv_node *children, uint32_t count)
{
    rv_result r = RV_OK;
    uint32_t k = 0;
    for (; k < count; k++) {
        uint32_t c;
        r = rvi_node_index(s, children[k], &c);
        if (r != RV_OK)
            break;
        if (s->parent[c] != p || (s->flags[c] & RVI_NODE_MARK)) {
            r = RV_ERR_INVALID_ARG;
            break;
        }
        if (s->flags[c] & RVI_NODE_PROJECTION) { /* its render scene places it */
            r = RV_ERR_BAD_STATE;
            break;
        }
        s->flags[c] |= RVI_NODE_MARK; /* temporary "seen" mark */
    }
    for (uint32_t j = 0; j < k; j++) {
        uint32_t c;
        rvi_node_index(s, children[j], &c);
        s->flags[c] &= ~(uint32_t)RVI_NODE_MARK;
    }
    return r;
}

typedef struct range {
    uint32_t begin, end, owner;
} range;

rv_result rv_group_spatially(rv_world *world, rv_node parent, const rv_node *children,
                             uint32_t count, uint32_t leaf_size, uint32_t *out_groups)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_scene *s = &world->scene;
    if (s->visiting)
        return RV_ERR_BAD_STATE;
    if (leaf_size == 1)
        return RV_ERR_INVALID_ARG;
    uint32_t leaf = leaf_size ? leaf_size : DEFAULT_LEAF_SIZE;
    uint32_t p = NONE; /* RV_NODE_NONE: the roots */
    if (parent.id != 0)
        RVI_TRY(rvi_node_index(s, parent, &p));
    const uint32_t first = p == NONE ? s->first_root : s->first_child[p];
    uint32_t n = count;
    if (children) {
        RVI_TRY(check_children(s, p, children, count));
    } else {
        n = 0;
        for (uint32_t c = first; c != NONE; c = s->next_sibling[c], n++)
            if (s->flags[c] & RVI_NODE_PROJECTION)
                return RV_ERR_BAD_STATE; /* a journal projection's node: its render scene places it */
    }
    if (n <= leaf) {
        if (out_groups)
            *out_groups = 0;
        return RV_OK;
    }

    uint64_t groups = count_groups(n, leaf);
    if (groups > RVI_POOL_MAX_SLOTS)
        return RV_ERR_CAPACITY;
    /* scratch: slots[n], items[n], created[groups]; then node storage, the last fallible step */
    size_t bytes = ((size_t)2 * n + (size_t)groups) * sizeof(uint32_t);
    uint32_t *scratch = rvi_alloc(&world->heap, bytes);
    if (!scratch)
        return RV_ERR_OUT_OF_MEMORY;
    rv_result r = rvi_scene_reserve(s, &world->heap, (uint32_t)groups);
    if (r != RV_OK) {
        rvi_free(&world->heap, scratch, bytes);
        return r;
    }
    uint32_t *slots = scratch, *items = scratch + n, *created = scratch + 2 * (size_t)n;
    if (children) {
        for (uint32_t k = 0; k < n; k++)
            rvi_node_index(s, children[k], &slots[k]);
    } else {
        uint32_t k = 0;
        for (uint32_t c = first; c != NONE; c = s->next_sibling[c])
            slots[k++] = c;
    }
    for (uint32_t k = 0; k < n; k++)
        items[k] = k;

    split_items si = { slots, items, (const float (*)[4])s->world_sphere };
    range stack[RANGE_STACK];
    uint32_t top = 0, made = 0;
    stack[top++] = (range){ 0, n, p };
    while (top > 0) {
        range rg = stack[--top];
        uint32_t m = rg.end - rg.begin;
        if (m <= leaf) {
            sort_positions(items, rg.begin, rg.end);
            for (uint32_t k = rg.begin; k < rg.end; k++)
                rvi_scene_relink(s, rg.owner, slots[items[k]], true);
            continue;
        }
        uint32_t mid = rg.begin + m / 2;
        select_nth(&si, rg.begin, rg.end, mid, widest_axis(&si, rg.begin, rg.end));
        uint32_t g[2];
        for (int h = 0; h < 2; h++) {
            g[h] = rvi_scene_create_reserved(s, rg.owner);
            /* identity under an unmoved owner (or a root): its world matrix, the owner's or
             * the identity, is already right */
            s->flags[g[h]] &= ~(uint32_t)RVI_NODE_MOVED;
            created[made++] = g[h];
        }
        stack[top++] = (range){ mid, rg.end, g[1] };
        stack[top++] = (range){ rg.begin, mid, g[0] };
    }
    /* Creation order puts parents before children: bound the groups bottom-up. */
    for (uint32_t k = made; k-- > 0;) {
        rvi_scene_exact_bounds(s, created[k]);
        s->aux[created[k]].loose = 0;
    }
    rvi_free(&world->heap, scratch, bytes);
    if (out_groups)
        *out_groups = made;
    return RV_OK;
}
