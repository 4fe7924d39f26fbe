/* The compiler's potentially visible set of a Quake III map (see pvs.h). Every index read
 * from the tree, leaf and visdata lumps is checked before use; a PVS that does not hold
 * together is dropped (not valid), never followed. */
#include "pvs.h"

#include "bsp_bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NODE_BYTES = 36, LEAF_BYTES = 48, LEAFSURFACE_BYTES = 4 };

/* Drops the PVS: every object counts as potentially visible. */
static bool pvs_invalid(rvw_bsp_pvs *pvs, const char *reason)
{
    rvw_bsp_pvs_free(pvs);
    pvs->valid = false;
    snprintf(pvs->reason, sizeof pvs->reason, "%s", reason);
    return true;
}

typedef struct cluster_pair {
    uint32_t object;
    int32_t cluster;
} cluster_pair;

static int compare_pairs(const void *a, const void *b)
{
    const cluster_pair *x = a, *y = b;
    if (x->object != y->object)
        return x->object < y->object ? -1 : 1;
    return (x->cluster > y->cluster) - (x->cluster < y->cluster);
}

/* Reads the tree, the leaves, which leaves hold which objects and the visdata. A map whose
 * PVS data is missing or inconsistent keeps a PVS that is not valid (the PVS is only a
 * reference figure, never needed to walk the map); false only when memory ran out. */
bool rvw_bsp_pvs_read(const rvw_pvs_lumps *r, rvw_bsp_pvs *pvs)
{
    memset(pvs, 0, sizeof *pvs);
    uint32_t nodes = r->node_bytes / NODE_BYTES, leafs = r->leaf_bytes / LEAF_BYTES;
    uint32_t leafsurfaces = r->leafsurface_bytes / LEAFSURFACE_BYTES;
    if (nodes == 0 || leafs == 0)
        return pvs_invalid(pvs, "no BSP tree");
    if (r->node_bytes % NODE_BYTES || r->leaf_bytes % LEAF_BYTES ||
        r->leafsurface_bytes % LEAFSURFACE_BYTES)
        return pvs_invalid(pvs, "nodes, leafs or leafsurfaces lump not whole records");
    /* visdata: numClusters, bytesPerCluster, rows */
    uint32_t vis_bytes = r->visdata_bytes;
    const uint8_t *vis = r->visdata;
    if (vis_bytes > 0) {
        if (vis_bytes < 8)
            return pvs_invalid(pvs, "visdata shorter than its header");
        int32_t n = rd_i32(vis), bpc = rd_i32(vis + 4);
        if (n < 0 || bpc < 0 || (uint64_t)bpc * 8 < (uint64_t)n || 8 + (uint64_t)n * (uint64_t)bpc > vis_bytes)
            return pvs_invalid(pvs, "visdata header does not match the lump");
        pvs->cluster_count = (uint32_t)n;
        pvs->bytes_per_cluster = (uint32_t)bpc;
    }
    pvs->node_count = nodes;
    pvs->leaf_count = leafs;
    pvs->object_count = r->object_count;
    pvs->node_planes = malloc((size_t)nodes * 4 * sizeof(float));
    pvs->node_children = malloc((size_t)nodes * 2 * sizeof(int32_t));
    pvs->leaf_clusters = malloc((size_t)leafs * sizeof(int32_t));
    pvs->object_first = calloc((size_t)pvs->object_count + 1, sizeof(uint32_t));
    size_t rows = (size_t)pvs->cluster_count * pvs->bytes_per_cluster;
    pvs->rows = malloc(rows ? rows : 1);
    uint8_t *seen = calloc(nodes, 1), *leaf_seen = calloc(leafs, 1);
    int32_t *stack = malloc((size_t)nodes * sizeof(int32_t));
    cluster_pair *pairs = NULL;
    size_t pair_count = 0, pair_capacity = 0;
    bool ok = pvs->node_planes && pvs->node_children && pvs->leaf_clusters && pvs->object_first &&
              pvs->rows && seen && leaf_seen && stack;
    const char *bad = NULL;
    if (ok && rows)
        memcpy(pvs->rows, vis + 8, rows);
    for (uint32_t i = 0; ok && !bad && i < nodes; i++) {
        const uint8_t *n = r->nodes + (size_t)i * NODE_BYTES;
        int32_t plane = rd_i32(n);
        if (plane < 0 || (uint32_t)plane >= r->plane_count) {
            bad = "a node's plane is out of range";
            break;
        }
        const uint8_t *pl = r->planes + (size_t)plane * 16;
        float q[3] = { rd_f32(pl), rd_f32(pl + 4), rd_f32(pl + 8) };
        float d = rd_f32(pl + 12);
        if (!coord_ok(q[0]) || !coord_ok(q[1]) || !coord_ok(q[2]) || !coord_ok(d)) {
            bad = "a node's plane is not finite";
            break;
        }
        to_y_up(q, pvs->node_planes + (size_t)i * 4);
        pvs->node_planes[(size_t)i * 4 + 3] = d;
        for (int c = 0; c < 2; c++) {
            int32_t child = rd_i32(n + 4 + c * 4);
            if (child >= 0 ? (uint32_t)child >= nodes : (uint32_t)(-(int64_t)child - 1) >= leafs) {
                bad = "a node's child is out of range";
                break;
            }
            pvs->node_children[i * 2 + c] = child;
        }
    }
    for (uint32_t i = 0; ok && !bad && i < leafs; i++) {
        const uint8_t *l = r->leafs + (size_t)i * LEAF_BYTES;
        int32_t cluster = rd_i32(l);
        pvs->leaf_clusters[i] = cluster < 0 ? -1 : cluster;
        if (!range_ok(rd_i32(l + 32), rd_i32(l + 36), leafsurfaces))
            bad = "a leaf's surfaces lie outside leafsurfaces";
    }
    /* leaves reachable from node 0 (the world model's tree), and the objects in them */
    uint32_t top = 0;
    if (ok && !bad) {
        stack[top++] = 0;
        seen[0] = 1;
    }
    while (ok && !bad && top > 0) {
        int32_t node = stack[--top];
        for (int c = 0; c < 2 && ok; c++) {
            int32_t child = pvs->node_children[node * 2 + c];
            if (child >= 0) {
                if (!seen[child]) { /* a hostile tree may share or loop: visit each once */
                    seen[child] = 1;
                    stack[top++] = child;
                }
                continue;
            }
            uint32_t leaf = (uint32_t)(-(int64_t)child - 1);
            /* a leaf under many nodes gives its pairs once: at most one pair per
             * leafsurface record, however the tree shares its leaves */
            if (leaf_seen[leaf])
                continue;
            leaf_seen[leaf] = 1;
            const uint8_t *l = r->leafs + (size_t)leaf * LEAF_BYTES;
            int32_t first = rd_i32(l + 32), count = rd_i32(l + 36);
            for (int32_t k = 0; k < count; k++) {
                int32_t s = rd_i32(r->leafsurfaces + (size_t)(first + k) * LEAFSURFACE_BYTES);
                if (s < 0 || (uint32_t)s >= r->surface_count || r->surface_object[s] < 0)
                    continue; /* not a drawn model-0 surface */
                if (pair_count == pair_capacity) {
                    size_t cap = pair_capacity ? pair_capacity * 2 : 1024;
                    cluster_pair *fresh = realloc(pairs, cap * sizeof *fresh);
                    if (!fresh) {
                        ok = false;
                        break;
                    }
                    pairs = fresh;
                    pair_capacity = cap;
                }
                pairs[pair_count++] = (cluster_pair){ (uint32_t)r->surface_object[s], pvs->leaf_clusters[leaf] };
            }
        }
    }
    if (ok && !bad) {
        if (pair_count)
            qsort(pairs, pair_count, sizeof *pairs, compare_pairs);
        size_t unique = 0;
        for (size_t k = 0; k < pair_count; k++)
            if (k == 0 || compare_pairs(&pairs[k - 1], &pairs[k]) != 0)
                pairs[unique++] = pairs[k];
        pvs->object_clusters = malloc((unique ? unique : 1) * sizeof(int32_t));
        ok = pvs->object_clusters != NULL;
        for (size_t k = 0; ok && k < unique; k++) {
            pvs->object_clusters[k] = pairs[k].cluster;
            pvs->object_first[pairs[k].object + 1]++;
        }
        for (uint32_t o = 0; ok && o < pvs->object_count; o++)
            pvs->object_first[o + 1] += pvs->object_first[o];
    }
    free(seen);
    free(leaf_seen);
    free(stack);
    free(pairs);
    if (!ok) {
        rvw_bsp_pvs_free(pvs);
        return false;
    }
    if (bad)
        return pvs_invalid(pvs, bad);
    pvs->valid = true;
    return true;
}

int32_t rvw_bsp_pvs_cluster(const rvw_bsp_pvs *pvs, const float p[3], uint64_t *visits)
{
    if (!pvs->valid)
        return -1;
    int32_t node = 0;
    for (uint32_t steps = 0; steps <= pvs->node_count; steps++) {
        if (visits)
            ++*visits;
        const float *pl = pvs->node_planes + (size_t)node * 4;
        double d = (double)pl[0] * p[0] + (double)pl[1] * p[1] + (double)pl[2] * p[2] - pl[3];
        int32_t child = pvs->node_children[node * 2 + (d >= 0 ? 0 : 1)];
        if (child < 0)
            return pvs->leaf_clusters[-(int64_t)child - 1];
        node = child;
    }
    return -1; /* a loop in a hostile tree */
}

bool rvw_bsp_pvs_segment_in_clusters(const rvw_bsp_pvs *pvs, const float a[3], const float b[3],
                                     uint64_t *visits)
{
    if (!pvs->valid)
        return true;
    /* Down the tree with the segment, splitting it where it crosses a node's plane (a point
     * on the plane goes to the front, as rvw_bsp_pvs_cluster sends it). */
    enum { STACK = 512 };
    struct part { int32_t node; double a[3], b[3]; } stack[STACK];
    uint32_t top = 0, count = 0;
    stack[top++] = (struct part){ 0, { a[0], a[1], a[2] }, { b[0], b[1], b[2] } };
    while (top > 0) {
        struct part p = stack[--top];
        if (visits)
            ++*visits;
        if (++count > RVW_BSP_SEGMENT_VISITS)
            return false;
        if (p.node < 0) {
            if (pvs->leaf_clusters[-(int64_t)p.node - 1] < 0)
                return false;
            continue;
        }
        const float *pl = pvs->node_planes + (size_t)p.node * 4;
        double da = pl[0] * p.a[0] + pl[1] * p.a[1] + pl[2] * p.a[2] - pl[3];
        double db = pl[0] * p.b[0] + pl[1] * p.b[1] + pl[2] * p.b[2] - pl[3];
        const int32_t *children = pvs->node_children + (size_t)p.node * 2;
        if ((da >= 0) == (db >= 0)) {
            p.node = children[da >= 0 ? 0 : 1];
            stack[top++] = p;
            continue;
        }
        if (top + 2 > STACK)
            return false;
        double t = da / (da - db), mid[3];
        for (int k = 0; k < 3; k++)
            mid[k] = p.a[k] + (p.b[k] - p.a[k]) * t;
        struct part first = p, second = p;
        first.node = children[da >= 0 ? 0 : 1];
        memcpy(first.b, mid, sizeof mid);
        second.node = children[db >= 0 ? 0 : 1];
        memcpy(second.a, mid, sizeof mid);
        stack[top++] = first;
        stack[top++] = second;
    }
    return true;
}

bool rvw_bsp_pvs_object_visible(const rvw_bsp_pvs *pvs, int32_t cluster, uint32_t object)
{
    if (!pvs->valid || cluster < 0 || !pvs->rows || (uint32_t)cluster >= pvs->cluster_count ||
        object >= pvs->object_count)
        return true;
    uint32_t first = pvs->object_first[object], end = pvs->object_first[object + 1];
    if (first == end)
        return true; /* in no leaf of the tree: no PVS says anything about it */
    const uint8_t *row = pvs->rows + (size_t)cluster * pvs->bytes_per_cluster;
    for (uint32_t k = first; k < end; k++) {
        int32_t c = pvs->object_clusters[k];
        if (c < 0 || (uint32_t)c >= pvs->cluster_count || (row[c >> 3] & (1u << (c & 7))))
            return true;
    }
    return false;
}

void rvw_bsp_pvs_free(rvw_bsp_pvs *pvs)
{
    free(pvs->rows);
    free(pvs->node_planes);
    free(pvs->node_children);
    free(pvs->leaf_clusters);
    free(pvs->object_first);
    free(pvs->object_clusters);
    memset(pvs, 0, sizeof *pvs);
}

