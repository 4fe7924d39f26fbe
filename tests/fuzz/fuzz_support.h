/* What the reliability fuzz targets share: reading bytes from libFuzzer's input,
 * and a counting host allocator that can be armed to fail. Each target decodes its own
 * numbers (their byte layouts are what the committed seeds mean), so only these are here. */
#ifndef RVIS_FUZZ_SUPPORT_H
#define RVIS_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The bytes not read yet; reads past the end give 0, so any input is a whole program. */
typedef struct fz_input {
    const uint8_t *p;
    size_t n;
} fz_input;

static inline uint8_t u8(fz_input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

/* A host allocator (rv_allocator's three hooks, user = the fz_alloc) counting live blocks;
 * with fail_at = k > 0, the k-th call and every later one fail. */
typedef struct fz_alloc {
    uint64_t calls, fail_at;
    int64_t live;
} fz_alloc;

static inline void *fz_do_alloc(size_t size, void *user)
{
    fz_alloc *a = user;
    if (a->fail_at && ++a->calls >= a->fail_at)
        return NULL;
    void *p = malloc(size);
    if (p)
        a->live++;
    return p;
}

static inline void *fz_do_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    fz_alloc *a = user;
    (void)old_size;
    if (a->fail_at && ++a->calls >= a->fail_at)
        return NULL;
    return realloc(ptr, new_size);
}

static inline void fz_do_free(void *ptr, size_t size, void *user)
{
    fz_alloc *a = user;
    (void)size;
    if (ptr)
        a->live--;
    free(ptr);
}

#endif
