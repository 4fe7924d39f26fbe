/* Hash map from uint64_t keys to uint64_t values: open addressing, linear probing,
 * backward-shift deletion (no tombstones, so a long-running map never degrades).
 * Iteration order depends on the hash layout: never derive host-visible order from it. */
#ifndef RVI_MAP_H
#define RVI_MAP_H

#include "core/alloc.h"

typedef struct rvi_map {
    uint64_t *keys;
    uint64_t *values;
    uint8_t *used;
    uint32_t capacity; /* 0 or a power of two */
    uint32_t count;
} rvi_map;

/* Ensures n entries fit without growing (load <= 3/4). */
rv_result rvi_map_reserve(rvi_heap *heap, rvi_map *map, uint32_t n);
/* Inserts or overwrites. May grow (RV_ERR_OUT_OF_MEMORY leaves the map as it was). */
rv_result rvi_map_put(rvi_heap *heap, rvi_map *map, uint64_t key, uint64_t value);
/* True and *value (if non-NULL) when key is present. */
bool rvi_map_get(const rvi_map *map, uint64_t key, uint64_t *value);
/* True when key was present; it is removed. Never allocates. */
bool rvi_map_remove(rvi_map *map, uint64_t key);
void rvi_map_clear(rvi_map *map);
void rvi_map_free(rvi_heap *heap, rvi_map *map);
/* Iteration: for (uint32_t i = 0; i < map->capacity; i++) if (map->used[i]) ... */

#endif
