/* A growable array of fixed-size elements; the one every module uses (STYLE.md 5).
 * Growth is geometric; reserve ahead so steady frames never allocate. */
#ifndef RVI_VEC_H
#define RVI_VEC_H

#include "core/alloc.h"

typedef struct rvi_vec {
    void *data;
    uint32_t count;
    uint32_t capacity;
} rvi_vec;

#define RVI_VEC_AT(v, T, i) (((T *)(v).data)[i])
#define RVI_VEC_PTR(v, T) ((T *)(v).data)

/* Ensures capacity >= min_capacity. RV_ERR_OUT_OF_MEMORY or RV_ERR_CAPACITY (over 2^32-1
 * elements) leave the vector as it was. */
rv_result rvi_vec_reserve(rvi_heap *heap, rvi_vec *vec, size_t elem_size, uint32_t min_capacity);
/* Appends one element (copied from value, or zeroed when value is NULL). */
rv_result rvi_vec_push(rvi_heap *heap, rvi_vec *vec, size_t elem_size, const void *value);
/* Appends n uninitialised elements and returns a pointer to the first through *out. */
rv_result rvi_vec_extend(rvi_heap *heap, rvi_vec *vec, size_t elem_size, uint32_t n, void **out);
/* Removes element i by moving the last one into its place (O(1), order not kept). */
void rvi_vec_swap_remove(rvi_vec *vec, size_t elem_size, uint32_t i);
void rvi_vec_free(rvi_heap *heap, rvi_vec *vec, size_t elem_size);

#endif
