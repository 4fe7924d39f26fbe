/* Hash map from uint64_t keys to uint64_t values: open addressing, linear probing,
 * backward-shift deletion (no tombstones, so a long-running map never degrades).
 *
 * Layout: one array of interleaved {key, value} slots (16 bytes, four to a 64-byte line),
 * power-of-two capacity, load <= 3/4. Key 0 marks an empty slot; the key 0 itself is kept
 * apart (has_zero, zero_value). A lookup in a map larger than the cache is then one cache
 * miss (the slot's line) instead of one per array, and rvi_map_prefetch can fetch that line
 * ahead of time. A zero-initialised rvi_map is a valid empty map.
 * Iteration order depends on the hash layout: never derive host-visible order from it. */
#ifndef RVI_MAP_H
#define RVI_MAP_H

#include "core/alloc.h"
#include "core/hash.h"

typedef struct rvi_map_slot {
    uint64_t key;   /* 0: empty */
    uint64_t value;
} rvi_map_slot;

typedef struct rvi_map {
    rvi_map_slot *slots;
    uint64_t zero_value; /* the value of key 0, while has_zero */
    uint32_t capacity;   /* 0 or a power of two */
    uint32_t count;      /* entries, key 0 included */
    bool has_zero;
} rvi_map;

/* A key's hash: any map's probe for key starts at rvi_map_hash(key) & (capacity - 1), so a
 * caller that looks the same key up twice (prefetch, then get) can hash it once. */
static inline uint64_t rvi_map_hash(uint64_t key)
{
    return rvi_mix64(key + 0x9E3779B97F4A7C15ull);
}

/* The slot where key's probe starts (capacity > 0). */
static inline uint32_t rvi_map_home(const rvi_map *map, uint64_t key)
{
    return (uint32_t)(rvi_map_hash(key) & (map->capacity - 1));
}

/* Hints the cache to fetch the line where key's probe starts and the line of the slot
 * after it (a later get, put or remove of key then rarely waits on memory). The second is
 * the same line three times in four; otherwise the probe starts in its line's last slot,
 * and then a removal always reads the next line (backward shift) and a displaced key or an
 * insertion's empty slot is often there. Measured on journal_apply_1m (pinned, paired):
 * about 1-1.5 ns a delta faster than the first line alone. Reads nothing; any map, any
 * key. */
static inline void rvi_map_prefetch_hashed(const rvi_map *map, uint64_t hash)
{
#if defined(__GNUC__) || defined(__clang__)
    if (map->capacity) {
        uint64_t mask = map->capacity - 1;
        __builtin_prefetch(&map->slots[hash & mask]);
        __builtin_prefetch(&map->slots[(hash + 1) & mask]);
    }
#else
    (void)map;
    (void)hash;
#endif
}

static inline void rvi_map_prefetch(const rvi_map *map, uint64_t key)
{
    rvi_map_prefetch_hashed(map, rvi_map_hash(key));
}

/* Ensures n entries fit without growing (load <= 3/4). */
rv_result rvi_map_reserve(rvi_heap *heap, rvi_map *map, uint32_t n);
/* False exactly when rvi_map_reserve would answer RV_ERR_CAPACITY for n. */
bool rvi_map_can_reserve(const rvi_map *map, uint32_t n);
/* Inserts or overwrites. May grow (RV_ERR_OUT_OF_MEMORY leaves the map as it was). The
 * _hashed form takes rvi_map_hash(key). */
rv_result rvi_map_put_hashed(rvi_heap *heap, rvi_map *map, uint64_t key, uint64_t hash, uint64_t value);
static inline rv_result rvi_map_put(rvi_heap *heap, rvi_map *map, uint64_t key, uint64_t value)
{
    return rvi_map_put_hashed(heap, map, key, rvi_map_hash(key), value);
}
/* True and *value (if non-NULL) when key is present. Inline: the lookup is the hot path of
 * every user (a probe of one line, rarely two). The _hashed forms take rvi_map_hash(key). */
static inline bool rvi_map_get_hashed(const rvi_map *map, uint64_t key, uint64_t hash, uint64_t *value)
{
    if (key == 0) {
        if (map->has_zero && value)
            *value = map->zero_value;
        return map->has_zero;
    }
    if (map->capacity == 0)
        return false;
    uint32_t mask = map->capacity - 1;
    for (uint32_t i = (uint32_t)(hash & mask);; i = (i + 1) & mask) {
        uint64_t k = map->slots[i].key;
        if (k == key) {
            if (value)
                *value = map->slots[i].value;
            return true;
        }
        if (k == 0)
            return false;
    }
}

/* Where key's value is stored (it may be rewritten in place until the map next changes),
 * or NULL when key is absent. */
static inline uint64_t *rvi_map_value_hashed(rvi_map *map, uint64_t key, uint64_t hash)
{
    if (key == 0)
        return map->has_zero ? &map->zero_value : NULL;
    if (map->capacity == 0)
        return NULL;
    uint32_t mask = map->capacity - 1;
    for (uint32_t i = (uint32_t)(hash & mask);; i = (i + 1) & mask) {
        uint64_t k = map->slots[i].key;
        if (k == key)
            return &map->slots[i].value;
        if (k == 0)
            return NULL;
    }
}

/* Inserts a key known to be absent, into room rvi_map_reserve made: no check of either, no
 * growth, no call (the structural edges of a render scene's drain insert this way;
 * rvi_map_put is the checked form). */
static inline void rvi_map_insert_absent_hashed(rvi_map *map, uint64_t key, uint64_t hash, uint64_t value)
{
    map->count++;
    if (key == 0) {
        map->has_zero = true;
        map->zero_value = value;
        return;
    }
    uint32_t mask = map->capacity - 1;
    uint32_t i = (uint32_t)(hash & mask);
    while (map->slots[i].key != 0)
        i = (i + 1) & mask;
    map->slots[i].key = key;
    map->slots[i].value = value;
}

static inline bool rvi_map_get(const rvi_map *map, uint64_t key, uint64_t *value)
{
    return rvi_map_get_hashed(map, key, rvi_map_hash(key), value);
}

/* True when key was present; it is removed. Never allocates. The _hashed form takes
 * rvi_map_hash(key). */
bool rvi_map_remove_hashed(rvi_map *map, uint64_t key, uint64_t hash);
static inline bool rvi_map_remove(rvi_map *map, uint64_t key)
{
    return rvi_map_remove_hashed(map, key, rvi_map_hash(key));
}
void rvi_map_clear(rvi_map *map);
void rvi_map_free(rvi_heap *heap, rvi_map *map);
/* Iteration: uint32_t cursor = 0; while (rvi_map_next(map, &cursor, &key, &value)) ...
 * Visits every entry once (in hash-layout order) while the map is not modified. */
bool rvi_map_next(const rvi_map *map, uint32_t *cursor, uint64_t *key, uint64_t *value);
/* Bytes the map holds. */
uint64_t rvi_map_bytes(const rvi_map *map);

#endif
