#include "core/map.h"
#include "core/hash.h"

#include <string.h>

static uint32_t slot_of(const rvi_map *map, uint64_t key)
{
    return (uint32_t)(rvi_mix64(key + 0x9E3779B97F4A7C15ull) & (map->capacity - 1));
}

static void insert_fresh(rvi_map *map, uint64_t key, uint64_t value)
{
    uint32_t i = slot_of(map, key);
    while (map->used[i])
        i = (i + 1) & (map->capacity - 1);
    map->used[i] = 1;
    map->keys[i] = key;
    map->values[i] = value;
    map->count++;
}

static rv_result rehash(rvi_heap *heap, rvi_map *map, uint32_t new_capacity)
{
    size_t n = new_capacity;
    uint64_t *keys = rvi_alloc(heap, n * sizeof *keys);
    uint64_t *values = rvi_alloc(heap, n * sizeof *values);
    uint8_t *used = rvi_calloc(heap, n, 1);
    if (!keys || !values || !used) {
        rvi_free(heap, keys, keys ? n * sizeof *keys : 0);
        rvi_free(heap, values, values ? n * sizeof *values : 0);
        rvi_free(heap, used, used ? n : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    rvi_map old = *map;
    map->keys = keys;
    map->values = values;
    map->used = used;
    map->capacity = new_capacity;
    map->count = 0;
    for (uint32_t i = 0; i < old.capacity; i++)
        if (old.used[i])
            insert_fresh(map, old.keys[i], old.values[i]);
    rvi_free(heap, old.keys, (size_t)old.capacity * sizeof *old.keys);
    rvi_free(heap, old.values, (size_t)old.capacity * sizeof *old.values);
    rvi_free(heap, old.used, old.capacity);
    return RV_OK;
}

rv_result rvi_map_reserve(rvi_heap *heap, rvi_map *map, uint32_t n)
{
    uint64_t need = (uint64_t)n + n / 3 + 1;
    if (map->capacity >= need)
        return RV_OK;
    uint64_t cap = map->capacity ? map->capacity : 16;
    while (cap < need)
        cap *= 2;
    if (cap > (1ull << 31))
        return RV_ERR_CAPACITY;
    return rehash(heap, map, (uint32_t)cap);
}

bool rvi_map_get(const rvi_map *map, uint64_t key, uint64_t *value)
{
    if (map->count == 0)
        return false;
    uint32_t i = slot_of(map, key);
    while (map->used[i]) {
        if (map->keys[i] == key) {
            if (value)
                *value = map->values[i];
            return true;
        }
        i = (i + 1) & (map->capacity - 1);
    }
    return false;
}

rv_result rvi_map_put(rvi_heap *heap, rvi_map *map, uint64_t key, uint64_t value)
{
    if (map->capacity) {
        uint32_t i = slot_of(map, key);
        while (map->used[i]) {
            if (map->keys[i] == key) {
                map->values[i] = value;
                return RV_OK;
            }
            i = (i + 1) & (map->capacity - 1);
        }
    }
    rv_result r = rvi_map_reserve(heap, map, map->count + 1);
    if (r != RV_OK)
        return r;
    insert_fresh(map, key, value);
    return RV_OK;
}

bool rvi_map_remove(rvi_map *map, uint64_t key)
{
    if (map->count == 0)
        return false;
    uint32_t mask = map->capacity - 1;
    uint32_t i = slot_of(map, key);
    while (map->used[i] && map->keys[i] != key)
        i = (i + 1) & mask;
    if (!map->used[i])
        return false;
    /* Backward-shift: pull later members of the probe run into the hole. */
    uint32_t hole = i;
    uint32_t j = (i + 1) & mask;
    while (map->used[j]) {
        uint32_t home = slot_of(map, map->keys[j]);
        /* j may move to hole when its home is not cyclically within (hole, j]. */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            map->keys[hole] = map->keys[j];
            map->values[hole] = map->values[j];
            hole = j;
        }
        j = (j + 1) & mask;
    }
    map->used[hole] = 0;
    map->count--;
    return true;
}

void rvi_map_clear(rvi_map *map)
{
    if (map->used)
        memset(map->used, 0, map->capacity);
    map->count = 0;
}

void rvi_map_free(rvi_heap *heap, rvi_map *map)
{
    rvi_free(heap, map->keys, (size_t)map->capacity * sizeof *map->keys);
    rvi_free(heap, map->values, (size_t)map->capacity * sizeof *map->values);
    rvi_free(heap, map->used, map->capacity);
    memset(map, 0, sizeof *map);
}
