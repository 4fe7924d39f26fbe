/* Delta journal internals (docs/design.md §7). projection_apply.c drains a journal through these. */
#ifndef RVI_JOURNAL_H
#define RVI_JOURNAL_H

#include "rvis.h"
#include "core/alloc.h"
#include "core/map.h"
#include "core/vec.h"

/* Who owns a journal: GetCurrentThreadId on Windows; with GCC or Clang, the address of a
 * thread-local object (journal.c); elsewhere pthread_self. */
#if defined(_WIN32)
typedef unsigned long rvi_thread_id;
#elif defined(__GNUC__) || defined(__clang__)
#define RVI_THREAD_TAG 1
typedef const void *rvi_thread_id;
#else
#include <pthread.h>
typedef pthread_t rvi_thread_id;
#endif

/* Coalescing memory of one key: the entries holding its latest coalescable update of each
 * channel (RVI_INDEX_NONE after a structural edge). Valid only while epoch matches the
 * journal's (a tick end or a ClearGeneration moves the journal's epoch on). */
typedef struct rvi_coalesce_record {
    uint64_t key;         /* key, generation, incarnation: laid out as in rv_delta, */
    uint32_t generation;  /* so that journal.c compares and copies them as 16 bytes */
    uint32_t incarnation;
    uint32_t epoch;
    uint32_t entry[3]; /* transform, appearance, flags */
} rvi_coalesce_record;

/* What the undrained entries need a scene to reserve, counted on append so a drain need
 * not pass over its deltas first. */
typedef struct rvi_journal_needs {
    uint32_t registers;
    uint32_t equipped_targets; /* Registers and Rebuckets into class equipped child */
    rvi_vec cell_entries;      /* uint32_t: entries (Registers, Rebuckets) into class cell
                                  static, in order */
} rvi_journal_needs;

struct rv_journal {
    rvi_heap heap;
    rvi_vec deltas;          /* rv_delta, in sequence order; emptied when a drain completes */
    uint32_t cursor;         /* while draining: the first entry not yet taken */
    bool draining;
    bool keep_every_update;
    rvi_coalesce_record *coalesce; /* direct-mapped by key hash; NULL: never coalesce */
    uint16_t *coalesce_tags;       /* per table entry: coalesce_tag of the record's key and epoch */
    uint32_t coalesce_slots;       /* a power of two */
    uint8_t coalesce_shift;        /* 63 - log2(coalesce_slots) (see coalesce_slot) */
    uint32_t epoch;
    rvi_thread_id owner;
    rvi_journal_needs needs;
    rv_journal_stats stats; /* appended and pending are derived by rv_journal_get_stats;
                               stats.next_sequence is the sequence counter itself */
};

/* rv_journal_create and rv_journal_destroy for an owner that reports the journal's
 * allocations with its own (the world: rv_world_alloc_stats). A journal's heap goes with
 * it, so what a creation that failed, or a destroy, leaves in that heap's counters is
 * written to *spent (NULL: not wanted) for the owner to keep. */
rv_result rvi_journal_create_spent(const rv_journal_desc *desc, rv_journal **out, rv_alloc_stats *spent);
void rvi_journal_destroy_spent(rv_journal *journal, rv_alloc_stats *spent);

/* Checks a delta's kind and the payload of its channel (what an append validates; a replay
 * checks recorded deltas with it too). */
rv_result rvi_delta_validate(const rv_delta *delta);

/* A transform's world-space bounds as the local sphere of its backing node
 * (projection_nodes.c; padded so the node's sphere encloses the host's under any parent);
 * false when that sphere does not fit in floats, which validation refuses. out may be NULL
 * (only the check). t: finite, with a nonzero quaternion and nonzero scales. */
bool rvi_world_bounds_to_local(const rv_projection_transform *t, float out[4]);

/* RV_OK when the calling thread owns the journal, else RV_ERR_INVARIANT. */
rv_result rvi_journal_check_thread(const rv_journal *journal);

/* Drain protocol: begin (BAD_STATE when a drain already runs), take entries while
 * cursor < count (entries may be appended meanwhile: read by index, never keep pointers
 * across an observer call), then end: the buffer empties and the tick ends. An interrupted
 * drain (out of memory) ends with rvi_journal_abort_drain, which keeps the untaken entries. */
rv_result rvi_journal_begin_drain(rv_journal *journal);
/* begin_drain's check, changing nothing. */
rv_result rvi_journal_check_drain(const rv_journal *journal);
void rvi_journal_end_drain(rv_journal *journal);
void rvi_journal_abort_drain(rv_journal *journal);

static inline const rv_delta *rvi_journal_entry(const rv_journal *journal, uint32_t index)
{
    return &RVI_VEC_AT(journal->deltas, rv_delta, index);
}

#endif
