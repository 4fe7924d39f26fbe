#include "core/vec.h"

#include <string.h>

rv_result rvi_vec_reserve(rvi_heap *heap, rvi_vec *vec, size_t elem_size, uint32_t min_capacity)
{
    if (min_capacity <= vec->capacity)
        return RV_OK;
    uint64_t cap = vec->capacity ? vec->capacity : 8;
    while (cap < min_capacity)
        cap *= 2;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    if ((uint64_t)cap * elem_size > SIZE_MAX / 2)
        return RV_ERR_CAPACITY;
    void *p = rvi_realloc(heap, vec->data, (size_t)vec->capacity * elem_size, (size_t)cap * elem_size);
    if (!p)
        return RV_ERR_OUT_OF_MEMORY;
    vec->data = p;
    vec->capacity = (uint32_t)cap;
    return RV_OK;
}

rv_result rvi_vec_extend(rvi_heap *heap, rvi_vec *vec, size_t elem_size, uint32_t n, void **out)
{
    if (n > UINT32_MAX - vec->count)
        return RV_ERR_CAPACITY;
    rv_result r = rvi_vec_reserve(heap, vec, elem_size, vec->count + n);
    if (r != RV_OK)
        return r;
    *out = (char *)vec->data + (size_t)vec->count * elem_size;
    vec->count += n;
    return RV_OK;
}

rv_result rvi_vec_push(rvi_heap *heap, rvi_vec *vec, size_t elem_size, const void *value)
{
    void *slot;
    rv_result r = rvi_vec_extend(heap, vec, elem_size, 1, &slot);
    if (r != RV_OK)
        return r;
    if (value)
        memcpy(slot, value, elem_size);
    else
        memset(slot, 0, elem_size);
    return RV_OK;
}

void rvi_vec_swap_remove(rvi_vec *vec, size_t elem_size, uint32_t i)
{
    uint32_t last = vec->count - 1;
    if (i != last)
        memcpy((char *)vec->data + (size_t)i * elem_size, (char *)vec->data + (size_t)last * elem_size, elem_size);
    vec->count = last;
}

void rvi_vec_free(rvi_heap *heap, rvi_vec *vec, size_t elem_size)
{
    rvi_free(heap, vec->data, (size_t)vec->capacity * elem_size);
    vec->data = NULL;
    vec->count = vec->capacity = 0;
}
