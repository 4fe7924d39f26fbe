#include "core/map.h"

#include <string.h>

/* Empty slots hold key 0 (a zero-filled array is an empty table); key 0 itself lives in
 * has_zero / zero_value. */

static void insert_fresh(rvi_map_slot *slots, uint32_t mask, uint32_t home, uint64_t key, uint64_t value)
{
    uint32_t i = home;
    while (slots[i].key != 0)
        i = (i + 1) & mask;
    slots[i].key = key;
    slots[i].value = value;
}

static rv_result rehash(rvi_heap *heap, rvi_map *map, uint32_t new_capacity)
{
    rvi_map_slot *slots = rvi_calloc(heap, new_capacity, sizeof *slots);
    if (!slots)
        return RV_ERR_OUT_OF_MEMORY;
    rvi_map old = *map;
    map->slots = slots;
    map->capacity = new_capacity;
    for (uint32_t i = 0; i < old.capacity; i++)
        if (old.slots[i].key != 0)
            insert_fresh(slots, new_capacity - 1, rvi_map_home(map, old.slots[i].key), old.slots[i].key,
                         old.slots[i].value);
    rvi_free(heap, old.slots, (size_t)old.capacity * sizeof *old.slots);
    return RV_OK;
}

/* The capacity n entries take (map->capacity when they fit); above 2^31: too many. */
static uint64_t capacity_for(const rvi_map *map, uint32_t n)
{
    uint64_t need = (uint64_t)n + n / 3 + 1;
    if (map->capacity >= need)
        return map->capacity;
    uint64_t cap = map->capacity ? map->capacity : 16;
    while (cap < need)
        cap *= 2;
    return cap;
}

bool rvi_map_can_reserve(const rvi_map *map, uint32_t n)
{
    return capacity_for(map, n) <= (1ull << 31);
}

rv_result rvi_map_reserve(rvi_heap *heap, rvi_map *map, uint32_t n)
{
    uint64_t cap = capacity_for(map, n);
    if (cap == map->capacity)
        return RV_OK;
    if (cap > (1ull << 31))
        return RV_ERR_CAPACITY;
    return rehash(heap, map, (uint32_t)cap);
}

/* The slot holding key (non-zero; hash: rvi_map_hash(key)), or UINT32_MAX. */
static uint32_t find(const rvi_map *map, uint64_t key, uint64_t hash)
{
    if (map->capacity == 0)
        return UINT32_MAX;
    uint32_t mask = map->capacity - 1;
    uint32_t i = (uint32_t)(hash & mask);
    for (;;) {
        uint64_t k = map->slots[i].key;
        if (k == key)
            return i;
        if (k == 0)
            return UINT32_MAX;
        i = (i + 1) & mask;
    }
}

rv_result rvi_map_put_hashed(rvi_heap *heap, rvi_map *map, uint64_t key, uint64_t hash, uint64_t value)
{
    if (key == 0) {
        if (!map->has_zero)
            map->count++;
        map->has_zero = true;
        map->zero_value = value;
        return RV_OK;
    }
    if (map->capacity) {
        /* One probe: the key's slot, or the first empty slot of its run, which is where it
         * goes (no tombstones) unless the table must grow first. */
        uint32_t mask = map->capacity - 1;
        uint32_t i = (uint32_t)(hash & mask);
        for (;;) {
            uint64_t k = map->slots[i].key;
            if (k == key) {
                map->slots[i].value = value;
                return RV_OK;
            }
            if (k == 0)
                break;
            i = (i + 1) & mask;
        }
        uint64_t n = (uint64_t)map->count + 1;
        if (n + n / 3 + 1 <= map->capacity) { /* rvi_map_reserve's load bound: no growth */
            map->slots[i].key = key;
            map->slots[i].value = value;
            map->count++;
            return RV_OK;
        }
    }
    rv_result r = rvi_map_reserve(heap, map, map->count + 1);
    if (r != RV_OK)
        return r;
    insert_fresh(map->slots, map->capacity - 1, (uint32_t)(hash & (map->capacity - 1)), key, value);
    map->count++;
    return RV_OK;
}

bool rvi_map_remove_hashed(rvi_map *map, uint64_t key, uint64_t hash)
{
    if (key == 0) {
        if (!map->has_zero)
            return false;
        map->has_zero = false;
        map->zero_value = 0;
        map->count--;
        return true;
    }
    uint32_t i = find(map, key, hash);
    if (i == UINT32_MAX)
        return false;
    /* Backward-shift: pull later members of the probe run into the hole. */
    uint32_t mask = map->capacity - 1;
    rvi_map_slot *s = map->slots;
    uint32_t hole = i;
    uint32_t j = (i + 1) & mask;
    while (s[j].key != 0) {
        uint32_t home = rvi_map_home(map, s[j].key);
        /* j may move to hole when its home is not cyclically within (hole, j]. */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            s[hole] = s[j];
            hole = j;
        }
        j = (j + 1) & mask;
    }
    s[hole].key = 0;
    s[hole].value = 0;
    map->count--;
    return true;
}

void rvi_map_clear(rvi_map *map)
{
    if (map->slots)
        memset(map->slots, 0, (size_t)map->capacity * sizeof *map->slots);
    map->has_zero = false;
    map->zero_value = 0;
    map->count = 0;
}

void rvi_map_free(rvi_heap *heap, rvi_map *map)
{
    rvi_free(heap, map->slots, (size_t)map->capacity * sizeof *map->slots);
    memset(map, 0, sizeof *map);
}

bool rvi_map_next(const rvi_map *map, uint32_t *cursor, uint64_t *key, uint64_t *value)
{
    /* Cursor 0 is key 0's turn; cursor c > 0 resumes at slot c - 1. */
    uint32_t c = *cursor;
    if (c == 0) {
        c = 1;
        if (map->has_zero) {
            *cursor = c;
            *key = 0;
            *value = map->zero_value;
            return true;
        }
    }
    for (; c - 1 < map->capacity; c++) {
        const rvi_map_slot *s = &map->slots[c - 1];
        if (s->key != 0) {
            *cursor = c + 1;
            *key = s->key;
            *value = s->value;
            return true;
        }
    }
    *cursor = c;
    return false;
}

uint64_t rvi_map_bytes(const rvi_map *map)
{
    return (uint64_t)map->capacity * sizeof(rvi_map_slot);
}
