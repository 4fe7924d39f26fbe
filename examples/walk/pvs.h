/* rvis-walk: the compiler's potentially visible set of a Quake III map (nodes, leafs,
 * leafsurfaces, visdata), kept as a sanity reference for how much a perfect culler could
 * hide, and to tell where the camera is inside the map. Read by bsp.c through
 * rvw_bsp_pvs_read; planes are turned Y-up like everything else the reader gives. */
#ifndef RVW_PVS_H
#define RVW_PVS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The compiler's potentially visible set (nodes, leafs, leafsurfaces, visdata),
 * kept as a sanity reference for how much a perfect culler could hide. valid is false when
 * the map has no BSP tree or its tree, leaves or visdata are inconsistent; then every object
 * counts as potentially visible (and reason says why). */
typedef struct rvw_bsp_pvs {
    bool valid;
    char reason[96];            /* why valid is false ("" when valid) */
    uint32_t cluster_count, bytes_per_cluster;
    uint8_t *rows;              /* cluster_count rows of bytes_per_cluster; NULL = all visible */
    uint32_t node_count;
    float *node_planes;         /* 4 floats per node: normal (Y-up), dist */
    int32_t *node_children;     /* 2 per node: front, back; negative c = leaf -(c + 1) */
    uint32_t leaf_count;
    int32_t *leaf_clusters;     /* per leaf */
    uint32_t object_count;
    uint32_t *object_first;     /* object_count + 1 offsets into object_clusters */
    int32_t *object_clusters;   /* distinct clusters of the leaves holding each object; -1 =
                                   a leaf outside every cluster (always potentially visible) */
} rvw_bsp_pvs;

/* The lumps a PVS is read from; the caller has checked that each lies inside the file. */
typedef struct rvw_pvs_lumps {
    const uint8_t *nodes, *leafs, *leafsurfaces, *visdata;
    uint32_t node_bytes, leaf_bytes, leafsurface_bytes, visdata_bytes;
    const uint8_t *planes;          /* 16-byte records */
    uint32_t plane_count;
    const int32_t *surface_object;  /* per surface of the surfaces lump: its object, -1 = none */
    uint32_t surface_count;
    uint32_t object_count;
} rvw_pvs_lumps;

/* Reads *pvs (zeroed first). A map whose tree, leaves or visdata do not hold together gets
 * a PVS that is not valid, with the reason. False only when memory ran out (*pvs empty). */
bool rvw_bsp_pvs_read(const rvw_pvs_lumps *lumps, rvw_bsp_pvs *pvs);

/* The cluster of the leaf holding point p (Y-up), walking the tree from node 0; -1 when the
 * point lies in a solid / outside leaf, the PVS is not valid, or the walk does not end.
 * visits (may be NULL) is increased by the nodes visited, at most node_count + 1. */
int32_t rvw_bsp_pvs_cluster(const rvw_bsp_pvs *pvs, const float p[3], uint64_t *visits);

/* True when every point of the segment a -> b (Y-up) lies in a leaf of some cluster: never
 * in a solid leaf or the void around a sealed map. True when the PVS is not valid; false
 * when a hostile tree needs more than RVW_BSP_SEGMENT_VISITS node visits. visits (may be
 * NULL) is increased by the nodes and leaves visited, at most RVW_BSP_SEGMENT_VISITS + 1. */
bool rvw_bsp_pvs_segment_in_clusters(const rvw_bsp_pvs *pvs, const float a[3], const float b[3],
                                     uint64_t *visits);
#define RVW_BSP_SEGMENT_VISITS 65536u

/* True when object may be visible from cluster: the PVS is not valid, cluster is -1 or
 * beyond the visdata, the map has no visdata, the object sits in no leaf or in a leaf of
 * cluster -1, or one of its clusters is set in cluster's row. */
bool rvw_bsp_pvs_object_visible(const rvw_bsp_pvs *pvs, int32_t cluster, uint32_t object);

void rvw_bsp_pvs_free(rvw_bsp_pvs *pvs);

#endif
