#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

static void *libc_alloc(size_t size, void *user) { (void)user; return malloc(size); }
static void *libc_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    (void)user; (void)old_size;
    return realloc(ptr, new_size);
}
static void libc_free(void *ptr, size_t size, void *user) { (void)user; (void)size; free(ptr); }

void rvi_heap_init(rvi_heap *heap, const rv_allocator *allocator)
{
    memset(heap, 0, sizeof *heap);
    if (allocator && allocator->alloc && allocator->free) {
        heap->allocator = *allocator;
    } else {
        heap->allocator.alloc = libc_alloc;
        heap->allocator.realloc = libc_realloc;
        heap->allocator.free = libc_free;
        heap->allocator.user = NULL;
    }
}

static void note_live(rvi_heap *heap, uint64_t add, uint64_t sub)
{
    heap->stats.bytes_live = heap->stats.bytes_live + add - sub;
    if (heap->stats.bytes_live > heap->stats.bytes_peak)
        heap->stats.bytes_peak = heap->stats.bytes_live;
}

void *rvi_alloc(rvi_heap *heap, size_t size)
{
    if (size == 0)
        return NULL;
    void *p = heap->allocator.alloc(size, heap->allocator.user);
    if (!p) {
        heap->stats.failures++;
        return NULL;
    }
    heap->stats.allocations++;
    note_live(heap, size, 0);
    return p;
}

void *rvi_calloc(rvi_heap *heap, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    void *p = rvi_alloc(heap, count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *rvi_realloc(rvi_heap *heap, void *ptr, size_t old_size, size_t new_size)
{
    if (!ptr)
        return rvi_alloc(heap, new_size);
    if (new_size == 0)
        return NULL; /* callers free explicitly; shrinking to zero is not a realloc */
    void *p;
    if (heap->allocator.realloc) {
        p = heap->allocator.realloc(ptr, old_size, new_size, heap->allocator.user);
    } else {
        p = heap->allocator.alloc(new_size, heap->allocator.user);
        if (p) {
            memcpy(p, ptr, old_size < new_size ? old_size : new_size);
            heap->allocator.free(ptr, old_size, heap->allocator.user);
        }
    }
    if (!p) {
        heap->stats.failures++;
        return NULL;
    }
    heap->stats.reallocations++;
    note_live(heap, new_size, old_size);
    return p;
}

void rvi_free(rvi_heap *heap, void *ptr, size_t size)
{
    if (!ptr)
        return;
    heap->allocator.free(ptr, size, heap->allocator.user);
    heap->stats.frees++;
    note_live(heap, 0, size);
}
