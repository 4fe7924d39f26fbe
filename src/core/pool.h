/* Handle pool: slot indices with generations and a per-owner tag (docs/design.md §1).
 * A handle is tag << 48 | generation << 24 | index. Generation 0 is never issued, so the
 * zero handle is never valid. A slot whose generation would pass 2^24 - 1 is retired. */
#ifndef RVI_POOL_H
#define RVI_POOL_H

#include "core/alloc.h"

#define RVI_POOL_MAX_SLOTS (1u << 24)
#define RVI_POOL_MAX_GENERATION ((1u << 24) - 1)
#define RVI_INDEX_NONE UINT32_MAX

typedef struct rvi_pool {
    uint32_t *generation; /* per slot: current generation; bit 31 set while the slot is live */
    uint32_t *next_free;  /* per slot: free-list link */
    uint32_t capacity;    /* slots allocated */
    uint32_t used;        /* slots ever handed out (high-water mark) */
    uint32_t live;
    uint32_t free_head;   /* RVI_INDEX_NONE when empty */
    uint16_t tag;         /* nonzero */
} rvi_pool;

/* Claims a tag for a new owner: the next of 1 .. 65535 in turn over the process (whatever
 * thread asks) that no live owner holds, so two live owners never share a tag, and an
 * owner shares one with a destroyed owner only when at least 65,534 tags were handed out
 * between them. Not from the owner's address: an allocator hands a destroyed owner's
 * address to the next one, and with it the old owner's handles would pass. False when all
 * 65,535 are held. The owner gives it back with rvi_pool_tag_release when destroyed. */
bool rvi_pool_tag_claim(uint16_t *out_tag);
void rvi_pool_tag_release(uint16_t tag);
void rvi_pool_init(rvi_pool *pool, uint16_t tag);
/* Grows slot storage to at least capacity slots (<= RVI_POOL_MAX_SLOTS). */
rv_result rvi_pool_reserve(rvi_heap *heap, rvi_pool *pool, uint32_t capacity);
/* True when acquire would need no growth. */
bool rvi_pool_has_free(const rvi_pool *pool);
/* Takes a free slot; RV_ERR_CAPACITY when there is none (call reserve first). */
rv_result rvi_pool_acquire(rvi_pool *pool, uint32_t *out_index, uint64_t *out_handle);
/* The slot a handle names, or RV_ERR_STALE_HANDLE (zero, foreign tag, old generation, dead). */
rv_result rvi_pool_resolve(const rvi_pool *pool, uint64_t handle, uint32_t *out_index);
/* The live handle of a slot. */
uint64_t rvi_pool_handle(const rvi_pool *pool, uint32_t index);
bool rvi_pool_is_live(const rvi_pool *pool, uint32_t index);
/* Frees a live slot; its old handles go stale. */
void rvi_pool_release(rvi_pool *pool, uint32_t index);
void rvi_pool_free(rvi_heap *heap, rvi_pool *pool);

#endif
