#include "core/node_table.h"
#include "core/pool.h"

#include <string.h>

static size_t block_size(const rvi_node_table *t, uint32_t capacity)
{
    return (size_t)capacity * (sizeof(uint32_t) + t->slot_bytes);
}

rv_result rvi_node_table_prepare(rvi_heap *heap, rvi_node_table *t, size_t elem, uint32_t node,
                                 rvi_node_table_room *room)
{
    room->block = t->record_of;
    room->capacity = t->capacity;
    if (t->records.count == UINT32_MAX)
        return RV_ERR_CAPACITY;
    if (node >= t->capacity) {
        uint64_t cap = t->capacity ? t->capacity : 64;
        while (cap <= node)
            cap *= 2;
        if (cap > RVI_POOL_MAX_SLOTS)
            cap = node < RVI_POOL_MAX_SLOTS ? RVI_POOL_MAX_SLOTS : (uint64_t)node + 1;
        uint32_t *block = rvi_alloc(heap, block_size(t, (uint32_t)cap));
        if (!block)
            return RV_ERR_OUT_OF_MEMORY;
        if (t->capacity)
            memcpy(block, t->record_of, (size_t)t->capacity * sizeof *block);
        for (uint64_t i = t->capacity; i < cap; i++)
            block[i] = UINT32_MAX;
        char *data = (char *)(block + cap);
        if (t->capacity)
            memcpy(data, rvi_node_table_slot_data(t), (size_t)t->capacity * t->slot_bytes);
        memset(data + (size_t)t->capacity * t->slot_bytes, 0, (size_t)(cap - t->capacity) * t->slot_bytes);
        room->block = block;
        room->capacity = (uint32_t)cap;
    }
    /* The records' growth is the only other allocation (a failure leaves the vector as it
     * was; a success only grows its capacity). */
    rv_result r = rvi_vec_reserve(heap, &t->records, elem, t->records.count + 1);
    if (r != RV_OK)
        rvi_node_table_forgo(heap, t, room);
    return r;
}

void rvi_node_table_forgo(rvi_heap *heap, const rvi_node_table *t, rvi_node_table_room *room)
{
    if (room->block != t->record_of)
        rvi_free(heap, room->block, block_size(t, room->capacity));
    room->block = t->record_of;
    room->capacity = t->capacity;
}

void *rvi_node_table_add(rvi_heap *heap, rvi_node_table *t, size_t elem, const void *record,
                         rvi_node_table_room *room)
{
    if (room->block != t->record_of) {
        rvi_free(heap, t->record_of, block_size(t, t->capacity));
        t->record_of = room->block;
        t->capacity = room->capacity;
    }
    uint32_t node;
    memcpy(&node, record, sizeof node);
    void *slot = (char *)t->records.data + (size_t)t->records.count * elem;
    memcpy(slot, record, elem);
    t->record_of[node] = t->records.count++;
    return slot;
}

bool rvi_node_table_remove(rvi_node_table *t, size_t elem, uint32_t node)
{
    uint32_t at = rvi_node_table_index(t, node);
    if (at == UINT32_MAX)
        return false;
    uint32_t last = t->records.count - 1;
    if (at != last) {
        char *dst = (char *)t->records.data + (size_t)at * elem;
        memcpy(dst, (char *)t->records.data + (size_t)last * elem, elem);
        uint32_t moved;
        memcpy(&moved, dst, sizeof moved);
        t->record_of[moved] = at;
    }
    t->records.count = last;
    t->record_of[node] = UINT32_MAX;
    return true;
}

void rvi_node_table_free(rvi_heap *heap, rvi_node_table *t, size_t elem)
{
    rvi_free(heap, t->record_of, block_size(t, t->capacity));
    rvi_vec_free(heap, &t->records, elem);
    t->record_of = NULL;
    t->capacity = 0;
}
