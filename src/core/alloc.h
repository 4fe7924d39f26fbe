/* Allocator hooks with counters (docs/design.md §1). Every rvis allocation goes through a heap. */
#ifndef RVI_ALLOC_H
#define RVI_ALLOC_H

#include "rvis.h"

typedef struct rvi_heap {
    rv_allocator allocator; /* resolved: alloc and free are never NULL */
    rv_alloc_stats stats;
} rvi_heap;

/* Resolves a host allocator (NULL fields select libc). */
void rvi_heap_init(rvi_heap *heap, const rv_allocator *allocator);
/* NULL on failure (counted). size 0 returns NULL without counting a failure. */
void *rvi_alloc(rvi_heap *heap, size_t size);
/* Like rvi_alloc but zero-filled. */
void *rvi_calloc(rvi_heap *heap, size_t count, size_t size);
/* Grows or shrinks a block; on failure returns NULL and the old block is untouched. */
void *rvi_realloc(rvi_heap *heap, void *ptr, size_t old_size, size_t new_size);
void rvi_free(rvi_heap *heap, void *ptr, size_t size);

#endif
