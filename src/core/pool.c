#include "core/pool.h"

#include <stdatomic.h>
#include <string.h>

#define LIVE_BIT 0x80000000u
#define GEN_MASK 0x00FFFFFFu

/* The tags handed out so far in this process, on any thread. */
static atomic_uint_fast32_t owners_made;
/* Bit t % 32 of word t / 32: tag t is held by a live owner. Zero-initialised static
 * atomics are valid (C11 7.17.2.1). */
static atomic_uint tags_held[65536 / 32];

bool rvi_pool_tag_claim(uint16_t *out_tag)
{
    for (uint32_t tries = 0; tries < 65535u; tries++) {
        uint32_t n = (uint32_t)atomic_fetch_add_explicit(&owners_made, 1, memory_order_relaxed);
        uint16_t tag = (uint16_t)(n % 65535u + 1u);
        unsigned bit = 1u << (tag & 31u);
        if (!(atomic_fetch_or_explicit(&tags_held[tag >> 5], bit, memory_order_relaxed) & bit)) {
            *out_tag = tag;
            return true;
        }
    }
    /* Other threads claimed and gave back tags meanwhile: a last pass over every word. */
    for (uint32_t w = 0; w < 65536u / 32u; w++) {
        unsigned never = w == 0 ? 1u : 0u; /* tag 0 is never handed out */
        unsigned held;
        while ((held = atomic_load_explicit(&tags_held[w], memory_order_relaxed) | never) != ~0u) {
            unsigned bit = ~held & (held + 1u); /* the lowest free one */
            if (!(atomic_fetch_or_explicit(&tags_held[w], bit, memory_order_relaxed) & bit)) {
                *out_tag = (uint16_t)(w * 32u + (uint32_t)__builtin_ctz(bit));
                return true;
            }
        }
    }
    return false;
}

void rvi_pool_tag_release(uint16_t tag)
{
    atomic_fetch_and_explicit(&tags_held[tag >> 5], ~(1u << (tag & 31u)), memory_order_relaxed);
}

void rvi_pool_init(rvi_pool *pool, uint16_t tag)
{
    memset(pool, 0, sizeof *pool);
    pool->free_head = RVI_INDEX_NONE;
    pool->tag = tag ? tag : 1;
}

rv_result rvi_pool_reserve(rvi_heap *heap, rvi_pool *pool, uint32_t capacity)
{
    if (capacity <= pool->capacity)
        return RV_OK;
    if (capacity > RVI_POOL_MAX_SLOTS)
        return RV_ERR_CAPACITY;
    size_t old = pool->capacity;
    uint32_t *gen = rvi_alloc(heap, (size_t)capacity * 4);
    uint32_t *next = rvi_alloc(heap, (size_t)capacity * 4);
    if (!gen || !next) {
        rvi_free(heap, gen, gen ? (size_t)capacity * 4 : 0);
        rvi_free(heap, next, next ? (size_t)capacity * 4 : 0);
        return RV_ERR_OUT_OF_MEMORY;
    }
    if (old) {
        memcpy(gen, pool->generation, old * 4);
        memcpy(next, pool->next_free, old * 4);
    }
    memset(gen + old, 0, ((size_t)capacity - old) * 4);
    rvi_free(heap, pool->generation, old * 4);
    rvi_free(heap, pool->next_free, old * 4);
    pool->generation = gen;
    pool->next_free = next;
    pool->capacity = capacity;
    return RV_OK;
}

bool rvi_pool_has_free(const rvi_pool *pool)
{
    return pool->free_head != RVI_INDEX_NONE || pool->used < pool->capacity;
}

rv_result rvi_pool_acquire(rvi_pool *pool, uint32_t *out_index, uint64_t *out_handle)
{
    uint32_t index;
    if (pool->free_head != RVI_INDEX_NONE) {
        index = pool->free_head;
        pool->free_head = pool->next_free[index];
    } else if (pool->used < pool->capacity) {
        index = pool->used++;
        pool->generation[index] = 0;
    } else {
        return RV_ERR_CAPACITY;
    }
    uint32_t gen = (pool->generation[index] & GEN_MASK) + 1;
    pool->generation[index] = gen | LIVE_BIT;
    pool->live++;
    *out_index = index;
    if (out_handle)
        *out_handle = rvi_pool_handle(pool, index);
    return RV_OK;
}

uint64_t rvi_pool_handle(const rvi_pool *pool, uint32_t index)
{
    return ((uint64_t)pool->tag << 48) | ((uint64_t)(pool->generation[index] & GEN_MASK) << 24) | index;
}

bool rvi_pool_is_live(const rvi_pool *pool, uint32_t index)
{
    return index < pool->used && (pool->generation[index] & LIVE_BIT);
}

rv_result rvi_pool_resolve(const rvi_pool *pool, uint64_t handle, uint32_t *out_index)
{
    uint32_t index = (uint32_t)(handle & 0xFFFFFFu);
    uint32_t gen = (uint32_t)((handle >> 24) & 0xFFFFFFu);
    uint16_t tag = (uint16_t)(handle >> 48);
    if (handle == 0 || tag != pool->tag || index >= pool->used)
        return RV_ERR_STALE_HANDLE;
    uint32_t g = pool->generation[index];
    if (!(g & LIVE_BIT) || (g & GEN_MASK) != gen)
        return RV_ERR_STALE_HANDLE;
    *out_index = index;
    return RV_OK;
}

void rvi_pool_release(rvi_pool *pool, uint32_t index)
{
    uint32_t gen = pool->generation[index] & GEN_MASK;
    pool->generation[index] = gen; /* not live; old handles now fail the live check */
    pool->live--;
    if (gen >= RVI_POOL_MAX_GENERATION)
        return; /* retired: the next generation would wrap and revive old handles */
    pool->next_free[index] = pool->free_head;
    pool->free_head = index;
}

void rvi_pool_free(rvi_heap *heap, rvi_pool *pool)
{
    rvi_free(heap, pool->generation, (size_t)pool->capacity * 4);
    rvi_free(heap, pool->next_free, (size_t)pool->capacity * 4);
    uint16_t tag = pool->tag;
    rvi_pool_init(pool, tag);
}
