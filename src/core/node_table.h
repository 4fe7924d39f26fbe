/* A side table of records keyed by node slot: the records sit packed in an rvi_vec (a walk
 * over every record reads contiguous memory) and a plain array maps a slot to its record
 * (UINT32_MAX: none), grown to the largest slot used. Removal swaps the last record into
 * the hole and fixes that record's slot, so removal is O(1) and never allocates. Every
 * record type begins with a uint32_t node: the slot it belongs to. The modules keeping
 * per-node data this way (LOD ladders, HLOD regions, the frame's node boxes) share it. */
#ifndef RVI_NODE_TABLE_H
#define RVI_NODE_TABLE_H

#include "core/alloc.h"
#include "core/vec.h"

typedef struct rvi_node_table {
    uint32_t *record_of;  /* slot -> record index, UINT32_MAX none; capacity entries */
    uint32_t capacity;
    rvi_vec records;      /* records of elem bytes, each starting with its uint32_t node */
    /* Optional per-slot data beside the map, in the same block (a module's dense per-node
     * field for every slot, zero for a slot never given one): slot_bytes each (set once,
     * before the first record), at rvi_node_table_slot_data. */
    uint32_t slot_bytes;
} rvi_node_table;

/* The per-slot data (capacity entries of slot_bytes), NULL before the first record. */
static inline void *rvi_node_table_slot_data(const rvi_node_table *t)
{
    return t->record_of ? (void *)(t->record_of + t->capacity) : NULL;
}

/* The record index of a slot, or UINT32_MAX when it has none. */
static inline uint32_t rvi_node_table_index(const rvi_node_table *t, uint32_t node)
{
    return node < t->capacity ? t->record_of[node] : UINT32_MAX;
}

/* The record of a slot, or NULL. */
static inline void *rvi_node_table_find(const rvi_node_table *t, size_t elem, uint32_t node)
{
    uint32_t at = rvi_node_table_index(t, node);
    return at == UINT32_MAX ? NULL : (char *)t->records.data + (size_t)at * elem;
}

/* Storage for a new record of slot node, obtained before anything changes. */
typedef struct rvi_node_table_room {
    uint32_t *block;      /* the slot array (and slot data) to use: t->record_of or a larger copy */
    uint32_t capacity;
} rvi_node_table_room;

/* Makes room for one more record, for slot node: the records' capacity is grown (that may
 * stay grown) and a larger slot array prepared when node is beyond it. Then either
 * rvi_node_table_add (cannot fail) or rvi_node_table_forgo. RV_ERR_OUT_OF_MEMORY,
 * RV_ERR_CAPACITY; the table is unchanged on error. */
rv_result rvi_node_table_prepare(rvi_heap *heap, rvi_node_table *t, size_t elem, uint32_t node,
                                 rvi_node_table_room *room);
/* Gives up prepared room (frees a prepared slot array). */
void rvi_node_table_forgo(rvi_heap *heap, const rvi_node_table *t, rvi_node_table_room *room);
/* Appends record (elem bytes; its first uint32_t names its slot, which has no record yet)
 * into prepared room. Returns the record in the table. */
void *rvi_node_table_add(rvi_heap *heap, rvi_node_table *t, size_t elem, const void *record,
                         rvi_node_table_room *room);
/* Removes the slot's record (no-op without one); never allocates. True when it had one. */
bool rvi_node_table_remove(rvi_node_table *t, size_t elem, uint32_t node);
void rvi_node_table_free(rvi_heap *heap, rvi_node_table *t, size_t elem);

#endif
