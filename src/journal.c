/* The render-projection delta journal (docs/design.md §7).
 *
 * An ordered buffer of deltas with journal-assigned sequences. Coalescing keeps, per key
 * and tick, the entry holding the latest update of each channel; a structural edge of the
 * key (or any ClearGeneration) forgets them, so an update never merges across an edge.
 * Merging rewrites the earlier entry's payload in place: channels are independent and no
 * structural edge of the key lies between the two positions, so every delta between them
 * sees the same validity and the final scene is the same as applying both in order. */
#include "journal.h"
#include "journal_validate.h"
#include "core/check.h"
#include "core/pool.h"
#include "core/prefetch.h"

#include <stddef.h>
#include <string.h>

#if defined(_WIN32)
__declspec(dllimport) unsigned long __stdcall GetCurrentThreadId(void);
static rvi_thread_id current_thread(void) { return GetCurrentThreadId(); }
static bool same_thread(rvi_thread_id a, rvi_thread_id b) { return a == b; }
#elif RVI_THREAD_TAG
/* The calling thread's own instance of this (never written) object: its address is
 * distinct among live threads and may be reused only once a thread has ended, as a
 * pthread_t may. With the initial-exec model it is the thread pointer plus a constant: no
 * call, where pthread_self is a call into libc on every append. glibc keeps room in the
 * static TLS block for libraries opened later, so one byte of initial-exec TLS is safe in
 * a dlopen'ed librvis.so too; elsewhere the default model (the linker still turns it into
 * a thread-pointer offset in an executable). */
#if defined(__GLIBC__) && defined(__ELF__)
#define THREAD_TAG_MODEL __attribute__((tls_model("initial-exec")))
#else
#define THREAD_TAG_MODEL
#endif
static _Thread_local const char thread_tag THREAD_TAG_MODEL = 0;
static rvi_thread_id current_thread(void) { return &thread_tag; }
static bool same_thread(rvi_thread_id a, rvi_thread_id b) { return a == b; }
#else
static rvi_thread_id current_thread(void) { return pthread_self(); }
static bool same_thread(rvi_thread_id a, rvi_thread_id b) { return pthread_equal(a, b) != 0; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define NOINLINE __declspec(noinline)
#define ALWAYS_INLINE __forceinline
#else
#define NOINLINE
#define ALWAYS_INLINE inline
#endif

#define PREFETCH_WRITE RVI_PREFETCH_WRITE

/* How many entries ahead an append prefetches the buffer. */
enum { WRITE_AHEAD = 4 };

enum { CHANNEL_TRANSFORM, CHANNEL_APPEARANCE, CHANNEL_FLAGS };

/* ---- the stored form ---- */

/* Which 32-bit words of an rv_delta each kind stores (all ones); every other word is
 * stored as zero: the sequence (set apart), the channels of other kinds and every padding
 * word. Designated by offsetof, so the table follows the platform's layout. */
enum { DELTA_WORDS = sizeof(rv_delta) / 4 };
_Static_assert(sizeof(rv_delta) % 4 == 0 && sizeof(rv_delta_kind) == 4 && sizeof(rv_bounds_space) == 4 &&
                   sizeof(rv_projection_class) == 4 && sizeof(rv_projection_transform) == 15 * 4,
               "every member of rv_delta is whole 32-bit words and the transform has no padding");

#define KEEP_WORD(member, i) [offsetof(rv_delta, member) / 4 + (i)] = ~0u
#define KEEP_32(member) KEEP_WORD(member, 0)
#define KEEP_64(member) KEEP_WORD(member, 0), KEEP_WORD(member, 1)
#define KEEP_HEADER KEEP_64(key), KEEP_32(generation), KEEP_32(incarnation), KEEP_32(kind)
#define KEEP_TRANSFORM                                                                                   \
    KEEP_WORD(projection.transform, 0), KEEP_WORD(projection.transform, 1),                              \
        KEEP_WORD(projection.transform, 2), KEEP_WORD(projection.transform, 3),                          \
        KEEP_WORD(projection.transform, 4), KEEP_WORD(projection.transform, 5),                          \
        KEEP_WORD(projection.transform, 6), KEEP_WORD(projection.transform, 7),                          \
        KEEP_WORD(projection.transform, 8), KEEP_WORD(projection.transform, 9),                          \
        KEEP_WORD(projection.transform, 10), KEEP_WORD(projection.transform, 11),                        \
        KEEP_WORD(projection.transform, 12), KEEP_WORD(projection.transform, 13),                        \
        KEEP_WORD(projection.transform, 14)
#define KEEP_APPEARANCE KEEP_64(projection.appearance.mesh), KEEP_64(projection.appearance.material_variant)
#define KEEP_BUCKET                                                                                      \
    KEEP_32(projection.bucket.projection_class), KEEP_64(projection.bucket.cell),                        \
        KEEP_64(projection.bucket.parent_key)
#define KEEP_FLAGS KEEP_32(projection.flags)

static const uint32_t kept_words[RV_DELTA_KIND_COUNT_][DELTA_WORDS] = {
    [RV_DELTA_REGISTER] = { KEEP_HEADER, KEEP_TRANSFORM, KEEP_APPEARANCE, KEEP_BUCKET, KEEP_FLAGS },
    [RV_DELTA_UPDATE_TRANSFORM] = { KEEP_HEADER, KEEP_TRANSFORM },
    [RV_DELTA_UPDATE_APPEARANCE] = { KEEP_HEADER, KEEP_APPEARANCE },
    [RV_DELTA_UPDATE_FLAGS] = { KEEP_HEADER, KEEP_FLAGS },
    [RV_DELTA_REBUCKET] = { KEEP_HEADER, KEEP_BUCKET },
    [RV_DELTA_UNREGISTER] = { KEEP_HEADER },
    [RV_DELTA_CLEAR_GENERATION] = { KEEP_32(generation), KEEP_32(kind) },
};

/* Writes the stored form of a validated delta (in->kind in range): only the kind's header
 * and channel, every other byte zero (recordings compare byte for byte, and the host's
 * padding bytes must not leak into an entry), then the sequence. A mask per kind rather
 * than field by field: whole vectors, no branch on the kind, and no padding byte to miss.
 * entry and in must not overlap (restrict: the compiler then needs no overlap check). */
static ALWAYS_INLINE void store_entry(rv_delta *restrict entry, const rv_delta *restrict in, rv_delta_kind kind,
                                      uint64_t sequence)
{
    const unsigned char *keep = (const unsigned char *)kept_words[kind];
    const unsigned char *from = (const unsigned char *)in;
    unsigned char *to = (unsigned char *)entry;
    for (size_t i = 0; i < sizeof(rv_delta); i++)
        to[i] = from[i] & keep[i];
    entry->sequence = sequence;
}

/* A zero delta, padding included, that the typed appends start from. */
static const rv_delta zero_delta;

/* ---- lifecycle ---- */

rv_result rvi_journal_create_spent(const rv_journal_desc *desc, rv_journal **out, rv_alloc_stats *spent)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_journal_desc d = desc ? *desc : (rv_journal_desc){0};
    if (d.initial_capacity == 0)
        d.initial_capacity = 1024;
    if (d.coalescing_keys == 0)
        d.coalescing_keys = 4096;
    if (d.coalescing_keys > (1u << 24))
        return RV_ERR_INVALID_ARG;
    uint32_t slots = 1, slot_bits = 0;
    while (slots < d.coalescing_keys) {
        slots *= 2;
        slot_bits++;
    }
    rvi_heap heap;
    rvi_heap_init(&heap, &d.allocator);
    rv_journal *j = rvi_alloc(&heap, sizeof *j);
    if (!j) {
        if (spent)
            *spent = heap.stats;
        return RV_ERR_OUT_OF_MEMORY;
    }
    memset(j, 0, sizeof *j);
    j->heap = heap;
    j->keep_every_update = d.keep_every_update;
    j->epoch = 1; /* the zeroed table's records (epoch 0) are all stale */
    j->owner = current_thread();
    if (!d.keep_every_update) {
        j->coalesce = rvi_calloc(&j->heap, slots, sizeof *j->coalesce);
        j->coalesce_slots = j->coalesce ? slots : 0;
        if (j->coalesce) {
            j->coalesce_tags = rvi_calloc(&j->heap, slots, sizeof *j->coalesce_tags);
            if (!j->coalesce_tags) {
                rvi_free(&j->heap, j->coalesce, (size_t)slots * sizeof *j->coalesce);
                j->coalesce = NULL;
                j->coalesce_slots = 0;
            }
        }
        j->coalesce_shift = (uint8_t)(63 - slot_bits);
    }
    if ((!d.keep_every_update && !j->coalesce) ||
        rvi_vec_reserve(&j->heap, &j->deltas, sizeof(rv_delta), d.initial_capacity) != RV_OK) {
        rvi_journal_destroy_spent(j, spent);
        return RV_ERR_OUT_OF_MEMORY;
    }
    j->stats.next_sequence = 1;
    *out = j;
    return RV_OK;
}

rv_result rv_journal_create(const rv_journal_desc *desc, rv_journal **out)
{
    return rvi_journal_create_spent(desc, out, NULL);
}

void rvi_journal_destroy_spent(rv_journal *j, rv_alloc_stats *spent)
{
    if (!j)
        return;
    rvi_vec_free(&j->heap, &j->deltas, sizeof(rv_delta));
    rvi_free(&j->heap, j->coalesce, (size_t)j->coalesce_slots * sizeof *j->coalesce);
    rvi_free(&j->heap, j->coalesce_tags, (size_t)j->coalesce_slots * sizeof *j->coalesce_tags);
    rvi_vec_free(&j->heap, &j->needs.cell_entries, sizeof(uint32_t));
    rvi_heap heap = j->heap;
    rvi_free(&heap, j, sizeof *j);
    if (spent)
        *spent = heap.stats;
}

void rv_journal_destroy(rv_journal *j)
{
    rvi_journal_destroy_spent(j, NULL);
}

rv_result rv_journal_claim_thread(rv_journal *j)
{
    if (!j)
        return RV_ERR_INVALID_ARG;
    if (j->draining)
        return RV_ERR_BAD_STATE;
    j->owner = current_thread();
    return RV_OK;
}

rv_result rvi_journal_check_thread(const rv_journal *j)
{
    return same_thread(j->owner, current_thread()) ? RV_OK : RV_ERR_INVARIANT;
}

/* ---- append ---- */

static rv_projection_class target_class(const rv_delta *d)
{
    if (d->kind != RV_DELTA_REGISTER && d->kind != RV_DELTA_REBUCKET)
        return RV_PROJECTION_CLASS_NONE;
    return d->projection.bucket.projection_class;
}

/* Counts entry `index` into the drain's reservation needs (room reserved by the caller). */
static void count_needs(rv_journal *j, const rv_delta *d, uint32_t index)
{
    j->needs.registers += d->kind == RV_DELTA_REGISTER;
    rv_projection_class c = target_class(d);
    j->needs.equipped_targets += c == RV_PROJECTION_EQUIPPED_CHILD;
    if (c == RV_PROJECTION_CELL_STATIC)
        RVI_VEC_AT(j->needs.cell_entries, uint32_t, j->needs.cell_entries.count++) = index;
}

static void forget_needs(rv_journal *j)
{
    j->needs.registers = j->needs.equipped_targets = 0;
    j->needs.cell_entries.count = 0;
}

/* Forgets every coalescing target (a ClearGeneration, the end of a tick): O(1). */
static void forget_coalescing(rv_journal *j)
{
    if (++j->epoch == 0) { /* wrapped: old records could look current again */
        if (j->coalesce) {
            memset(j->coalesce, 0, (size_t)j->coalesce_slots * sizeof *j->coalesce);
            memset(j->coalesce_tags, 0, (size_t)j->coalesce_slots * sizeof *j->coalesce_tags);
        }
        j->epoch = 1;
    }
}

/* Fibonacci hashing (multiply by 2^64 / golden ratio; Knuth, TAOCP vol. 3, 6.4): one
 * multiply gives a key's table entry (the top log2(slots) bits) and its tag. */
static uint64_t coalesce_hash(uint64_t key)
{
    return key * 0x9E3779B97F4A7C15ull;
}

/* The table entry a key's coalescing record lives in (direct-mapped). Shifted in two steps
 * so a one-slot table needs no shift by 64. */
static uint32_t coalesce_slot(const rv_journal *j, uint64_t hash)
{
    return (uint32_t)((hash >> 1) >> j->coalesce_shift);
}

/* A record's tag: 8 bits of its key's hash (below those any table's entry takes) and the
 * low 8 of the epoch it was written in. The tags (2 bytes an entry, 8 KiB for the default
 * table) stay in cache where the 32-byte records do not: a tick's appends go to 128 KiB of
 * records at random while the buffer streams through, and a scene's drain evicts them all.
 * A tag that differs proves the entry holds no current record of the key, so most appends
 * never read a record (measured, a record read was the append's costliest instruction,
 * waiting on memory). Equal tags prove nothing: the record itself is compared. */
static uint16_t coalesce_tag(const rv_journal *j, uint64_t hash)
{
    return (uint16_t)((uint32_t)(hash >> 16 & 0xFF) | (j->epoch & 0xFF) << 8);
}

/* True when the table entry r holds a record of key for this tick. */
static bool record_current(const rv_journal *j, const rvi_coalesce_record *r, uint64_t key)
{
    return r->epoch == j->epoch && r->key == key;
}

/* A delta's identity (key, generation, incarnation) is 16 contiguous bytes in rv_delta and
 * in a coalescing record alike: compared and copied whole. */
enum { IDENTITY_BYTES = 16 };
_Static_assert(offsetof(rv_delta, generation) == offsetof(rv_delta, key) + 8 &&
                   offsetof(rv_delta, incarnation) == offsetof(rv_delta, key) + 12 &&
                   offsetof(rvi_coalesce_record, generation) == offsetof(rvi_coalesce_record, key) + 8 &&
                   offsetof(rvi_coalesce_record, incarnation) == offsetof(rvi_coalesce_record, key) + 12,
               "identity layout");

static const unsigned char *delta_identity(const rv_delta *d)
{
    return (const unsigned char *)d + offsetof(rv_delta, key);
}

/* True when r is the record, this tick, of the delta's key, generation and incarnation:
 * the only record an update may merge into. One test rather than four branches (which
 * table entries hold current records is data, not a pattern a predictor learns). */
static bool record_matches(const rv_journal *j, const rvi_coalesce_record *r, const rv_delta *d)
{
    uint64_t ours[2], theirs[2];
    memcpy(ours, (const unsigned char *)r + offsetof(rvi_coalesce_record, key), IDENTITY_BYTES);
    memcpy(theirs, delta_identity(d), IDENTITY_BYTES);
    return ((ours[0] ^ theirs[0]) | (ours[1] ^ theirs[1]) | (r->epoch ^ j->epoch)) == 0;
}

/* Grows the buffer by at least one entry (a failure changes nothing). Out of line: rare. */
static NOINLINE rv_result grow_buffer(rv_journal *j)
{
    if (j->deltas.count == UINT32_MAX)
        return RV_ERR_CAPACITY;
    return rvi_vec_reserve(&j->heap, &j->deltas, sizeof(rv_delta), j->deltas.count + 1);
}

/* True when d lies in the journal's buffer (compared as integers: any pointer may be given). */
static bool in_buffer(const rv_journal *j, const rv_delta *d)
{
    return (uintptr_t)d - (uintptr_t)j->deltas.data < (uintptr_t)j->deltas.capacity * sizeof(rv_delta);
}

/* Room for one more entry and, for a cell-static target, one more index in the list of
 * cell targets: all or nothing, so a failure leaves even the memory figures as they were.
 * When both must grow, the list's new block is allocated first and kept aside (its old
 * block intact) until the buffer has grown. Out of line: rare. */
static NOINLINE rv_result grow_for_entry(rv_journal *j, bool cell_target)
{
    bool more_entries = j->deltas.count == j->deltas.capacity;
    rvi_vec *cells = &j->needs.cell_entries;
    if (!cell_target || cells->count < cells->capacity)
        return more_entries ? grow_buffer(j) : RV_OK;
    if (!more_entries)
        return rvi_vec_reserve(&j->heap, cells, sizeof(uint32_t), cells->count + 1);
    rvi_vec fresh = {0};
    RVI_TRY(rvi_vec_reserve(&j->heap, &fresh, sizeof(uint32_t), cells->count + 1));
    rv_result r = grow_buffer(j);
    if (r != RV_OK) {
        rvi_vec_free(&j->heap, &fresh, sizeof(uint32_t));
        return r;
    }
    if (cells->count)
        memcpy(fresh.data, cells->data, (size_t)cells->count * sizeof(uint32_t));
    fresh.count = cells->count;
    rvi_vec_free(&j->heap, cells, sizeof(uint32_t));
    *cells = fresh;
    return RV_OK;
}

/* Room for one more entry (and a cell-target index, for a cell-static target). */
static rv_result reserve_entry(rv_journal *j, bool cell_target)
{
    bool room = j->deltas.count < j->deltas.capacity &&
                (!cell_target || j->needs.cell_entries.count < j->needs.cell_entries.capacity);
    return room ? RV_OK : grow_for_entry(j, cell_target);
}

/* Stores a validated delta as the next entry, in room reserved by the caller, with the
 * next sequence. Returns its index. */
static ALWAYS_INLINE uint32_t push_entry(rv_journal *j, const rv_delta *in, rv_delta_kind kind)
{
    uint32_t index = j->deltas.count++;
    rv_delta *e = &RVI_VEC_AT(j->deltas, rv_delta, index);
    /* The buffer is written front to back but between drains a scene's apply evicts it: ask
     * for the lines of an entry a few appends ahead (for writing), so an append rarely
     * waits on one. */
    if (index + WRITE_AHEAD < j->deltas.capacity) {
        const char *ahead = (const char *)(e + WRITE_AHEAD);
        PREFETCH_WRITE(ahead);
        PREFETCH_WRITE(ahead + sizeof *e - 1);
    }
    store_entry(e, in, kind, j->stats.next_sequence++);
    return index;
}

static rv_result grow_and_append(rv_journal *j, const rv_delta *in, uint64_t *out_sequence);

/* Appends a validated update of `channel`, merging it into the key's latest undrained
 * update of that channel when the coalescing rules allow. */
static ALWAYS_INLINE rv_result append_update(rv_journal *j, const rv_delta *in, int channel, uint64_t *out_sequence)
{
    static const rv_delta_kind channel_kind[] = { RV_DELTA_UPDATE_TRANSFORM, RV_DELTA_UPDATE_APPEARANCE,
                                                  RV_DELTA_UPDATE_FLAGS };
    rv_delta_kind kind = channel_kind[channel];
    /* The key's coalescing table entry, hashed once for the lookup and the update. */
    rvi_coalesce_record *r = NULL;
    uint32_t slot = 0;
    uint16_t tag = 0;
    if (j->coalesce) {
        uint64_t hash = coalesce_hash(in->key);
        slot = coalesce_slot(j, hash);
        tag = coalesce_tag(j, hash);
        r = &j->coalesce[slot];
    }
    bool matches = r && j->coalesce_tags[slot] == tag && record_matches(j, r, in);
    /* Entries below the cursor were already taken by a running drain. */
    if (matches && r->entry[channel] != RVI_INDEX_NONE && r->entry[channel] >= j->cursor) {
        rv_delta *e = &RVI_VEC_AT(j->deltas, rv_delta, r->entry[channel]);
        /* Entries hold consecutive sequences, the last next_sequence - 1 (push_entry; an
         * aborted drain moves entries without changing them): the entry's sequence without
         * reading the entry, whose line a tick's appends have long evicted. */
        uint64_t sequence = j->stats.next_sequence - j->deltas.count + r->entry[channel];
        /* in may be this very entry, read back from rv_journal_pending: it is already in
         * stored form, and the merge would rewrite it unchanged. */
        if (e != in)
            store_entry(e, in, kind, sequence);
        j->stats.coalesced++;
        if (out_sequence)
            *out_sequence = sequence;
        return RV_OK;
    }
    if (j->deltas.count == j->deltas.capacity)
        return grow_and_append(j, in, out_sequence);
    uint64_t sequence = j->stats.next_sequence;
    uint32_t index = push_entry(j, in, kind);
    if (r) {
        /* Remember the entry as the key's merge target. The table is direct-mapped: another
         * key's record in the same place is pushed out, which only means that key's next
         * update gets an entry of its own (not merging is always correct). */
        if (!matches) {
            memcpy((unsigned char *)r + offsetof(rvi_coalesce_record, key), delta_identity(in), IDENTITY_BYTES);
            r->epoch = j->epoch;
            r->entry[0] = r->entry[1] = r->entry[2] = RVI_INDEX_NONE;
            j->coalesce_tags[slot] = tag;
        }
        r->entry[channel] = index;
    }
    if (out_sequence)
        *out_sequence = sequence;
    return RV_OK;
}

/* Appends a validated structural edge of `kind` (a constant in each copy, so the stored
 * form's mask, the reservation counts and the coalescing step fold to what that kind
 * needs). */
static ALWAYS_INLINE rv_result append_edge_of(rv_journal *j, const rv_delta *in, rv_delta_kind kind,
                                              uint64_t *out_sequence)
{
    rv_projection_class target = kind == RV_DELTA_REGISTER || kind == RV_DELTA_REBUCKET
                                     ? in->projection.bucket.projection_class
                                     : RV_PROJECTION_CLASS_NONE;
    /* Reserve everything first so a failure changes nothing. */
    RVI_TRY(reserve_entry(j, target == RV_PROJECTION_CELL_STATIC));
    uint64_t sequence = j->stats.next_sequence;
    uint32_t index = push_entry(j, in, kind);
    /* count_needs, for a known kind. */
    j->needs.registers += kind == RV_DELTA_REGISTER;
    j->needs.equipped_targets += target == RV_PROJECTION_EQUIPPED_CHILD;
    if (target == RV_PROJECTION_CELL_STATIC)
        RVI_VEC_AT(j->needs.cell_entries, uint32_t, j->needs.cell_entries.count++) = index;
    if (j->coalesce) {
        if (kind == RV_DELTA_CLEAR_GENERATION) {
            forget_coalescing(j);
        } else {
            /* An edge of this key: nothing after it merges with anything before. */
            uint64_t hash = coalesce_hash(in->key);
            uint32_t slot = coalesce_slot(j, hash);
            rvi_coalesce_record *r = &j->coalesce[slot];
            if (j->coalesce_tags[slot] == coalesce_tag(j, hash) && record_current(j, r, in->key))
                r->entry[0] = r->entry[1] = r->entry[2] = RVI_INDEX_NONE;
        }
    }
    if (out_sequence)
        *out_sequence = sequence;
    return RV_OK;
}

/* Validates and appends a structural edge (Register, Rebucket, Unregister,
 * ClearGeneration); any other kind is RV_ERR_INVALID_ARG. Out of line: its calls and
 * registers stay off the updates' path. */
static NOINLINE rv_result append_edge(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    if (j->deltas.count == j->deltas.capacity && in_buffer(j, in)) /* growing would move it */
        return grow_and_append(j, in, out_sequence);
    switch (in->kind) {
    case RV_DELTA_REGISTER:
        RVI_TRY(rvi_validate_register(in));
        return append_edge_of(j, in, RV_DELTA_REGISTER, out_sequence);
    case RV_DELTA_UNREGISTER:
        return append_edge_of(j, in, RV_DELTA_UNREGISTER, out_sequence);
    case RV_DELTA_REBUCKET:
        RVI_TRY(rvi_validate_bucket(&in->projection.bucket, in->key));
        return append_edge_of(j, in, RV_DELTA_REBUCKET, out_sequence);
    case RV_DELTA_CLEAR_GENERATION:
        return append_edge_of(j, in, RV_DELTA_CLEAR_GENERATION, out_sequence);
    default:
        return RV_ERR_INVALID_ARG;
    }
}

/* An update the common path did not take: a transform with world-space bounds (whether they
 * fit in local space is a call) or an invalid payload. Validates it fully and appends it. */
static NOINLINE rv_result append_update_checked(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    RVI_TRY(rvi_delta_validate(in));
    return append_update(j, in, (int)(in->kind - RV_DELTA_UPDATE_TRANSFORM), out_sequence);
}

/* Appends a delta from the journal's owner thread. Kept free of calls on the way of an
 * update (validation and the store are inline; only growth calls out, and the edges take
 * a function of their own) so it needs no stack frame: the thread check, which does call,
 * stays with the caller. */
static NOINLINE rv_result append_owned(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    /* The three updates take one path, their channel as data: which kind comes next follows
     * no pattern a predictor can learn, and a test per kind was often mispredicted
     * (measured: the same appends with their kinds in a repeating pattern were ≈ 4 ns
     * faster). Each channel's checks are computed for every update and count for its
     * own kind only. */
    uint32_t channel = (uint32_t)in->kind - RV_DELTA_UPDATE_TRANSFORM;
    _Static_assert(RV_DELTA_UPDATE_APPEARANCE - RV_DELTA_UPDATE_TRANSFORM == CHANNEL_APPEARANCE &&
                       RV_DELTA_UPDATE_FLAGS - RV_DELTA_UPDATE_TRANSFORM == CHANNEL_FLAGS,
                   "update kinds in channel order");
    if (channel > CHANNEL_FLAGS)
        return append_edge(j, in, out_sequence);
    uint32_t check =
        (uint32_t)(channel == CHANNEL_TRANSFORM) & (uint32_t)rvi_transform_needs_check(&in->projection.transform);
    check |= (uint32_t)(channel == CHANNEL_FLAGS) & (uint32_t)((in->projection.flags & ~RV_PROJECTION_FLAGS_ALL) != 0);
    if (check)
        return append_update_checked(j, in, out_sequence);
    return append_update(j, in, (int)channel, out_sequence);
}

/* Grows the buffer (and the cell-target list, for a cell-static target), then appends (the
 * rare path of append_owned, kept out of it so the common path makes no call that returns
 * to it). An entry of this very buffer (read back from rv_journal_pending) is copied first:
 * growing moves it. */
static NOINLINE rv_result grow_and_append(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    rv_delta copy;
    if (in_buffer(j, in)) {
        copy = *in;
        in = &copy;
    }
    RVI_TRY(grow_for_entry(j, target_class(in) == RV_PROJECTION_CELL_STATIC));
    return append_owned(j, in, out_sequence);
}

static rv_result append_checked(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    RVI_TRY(rvi_journal_check_thread(j));
    return append_owned(j, in, out_sequence);
}

rv_result rv_journal_append(rv_journal *j, const rv_delta *delta, uint64_t *out_sequence)
{
    if (!j || !delta)
        return RV_ERR_INVALID_ARG;
    return append_checked(j, delta, out_sequence);
}

static rv_delta header(rv_delta_kind kind, uint32_t generation, uint64_t key, uint32_t incarnation)
{
    rv_delta d;
    memcpy(&d, &zero_delta, sizeof d);
    d.kind = kind;
    d.generation = generation;
    d.key = key;
    d.incarnation = incarnation;
    return d;
}

rv_result rv_journal_register(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                              const rv_projection *projection, uint64_t *out_sequence)
{
    if (!j || !projection)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_REGISTER, generation, key, incarnation);
    d.projection = *projection;
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_update_transform(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                                      const rv_projection_transform *transform, uint64_t *out_sequence)
{
    if (!j || !transform)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_UPDATE_TRANSFORM, generation, key, incarnation);
    d.projection.transform = *transform;
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_update_appearance(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                                       const rv_projection_appearance *appearance, uint64_t *out_sequence)
{
    if (!j || !appearance)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_UPDATE_APPEARANCE, generation, key, incarnation);
    d.projection.appearance = *appearance;
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_update_flags(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                                  uint32_t flags, uint64_t *out_sequence)
{
    if (!j)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_UPDATE_FLAGS, generation, key, incarnation);
    d.projection.flags = flags;
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_rebucket(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                              const rv_projection_bucket *bucket, uint64_t *out_sequence)
{
    if (!j || !bucket)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_REBUCKET, generation, key, incarnation);
    d.projection.bucket = *bucket;
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_unregister(rv_journal *j, uint32_t generation, uint64_t key, uint32_t incarnation,
                                uint64_t *out_sequence)
{
    if (!j)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_UNREGISTER, generation, key, incarnation);
    return append_checked(j, &d, out_sequence);
}

rv_result rv_journal_clear_generation(rv_journal *j, uint32_t new_generation, uint64_t *out_sequence)
{
    if (!j)
        return RV_ERR_INVALID_ARG;
    rv_delta d = header(RV_DELTA_CLEAR_GENERATION, new_generation, 0, 0);
    return append_checked(j, &d, out_sequence);
}

/* ---- reading and draining ---- */

const rv_delta *rv_journal_pending(const rv_journal *j, uint32_t *out_count)
{
    if (!j) {
        if (out_count)
            *out_count = 0;
        return NULL;
    }
    uint32_t first = j->draining ? j->cursor : 0;
    if (out_count)
        *out_count = j->deltas.count - first;
    return j->deltas.count > first ? &RVI_VEC_AT(j->deltas, rv_delta, first) : NULL;
}

rv_result rvi_journal_check_drain(const rv_journal *j)
{
    return j->draining ? RV_ERR_BAD_STATE : RV_OK;
}

rv_result rvi_journal_begin_drain(rv_journal *j)
{
    RVI_TRY(rvi_journal_check_drain(j));
    j->draining = true;
    j->cursor = 0;
    return RV_OK;
}

void rvi_journal_end_drain(rv_journal *j)
{
    j->stats.drained += j->cursor;
    j->stats.ticks++;
    j->deltas.count = 0;
    j->cursor = 0;
    j->draining = false;
    forget_coalescing(j);
    forget_needs(j);
}

void rvi_journal_abort_drain(rv_journal *j)
{
    uint32_t taken = j->cursor;
    j->cursor = 0;
    j->draining = false;
    if (taken == 0)
        return; /* nothing was taken: the journal is as it was, merge targets included */
    uint32_t left = j->deltas.count - taken;
    if (left)
        memmove(j->deltas.data, &RVI_VEC_AT(j->deltas, rv_delta, taken), (size_t)left * sizeof(rv_delta));
    j->deltas.count = left;
    j->stats.drained += taken;
    /* Entry indices moved: forget the merge targets (not merging is always correct) and
     * recount the needs of what is left (within the room already reserved). */
    forget_coalescing(j);
    forget_needs(j);
    for (uint32_t i = 0; i < left; i++)
        count_needs(j, &RVI_VEC_AT(j->deltas, rv_delta, i), i);
}

rv_journal_stats rv_journal_get_stats(const rv_journal *j)
{
    rv_journal_stats none = {0};
    if (!j)
        return none;
    rv_journal_stats s = j->stats;
    /* Every accepted append either took a sequence or was coalesced. */
    s.appended = (s.next_sequence - 1) + s.coalesced;
    s.pending = j->deltas.count - (j->draining ? j->cursor : 0);
    return s;
}

rv_journal_memory rv_journal_get_memory(const rv_journal *j)
{
    rv_journal_memory m = {0};
    if (!j)
        return m;
    m.buffer_bytes = (uint64_t)j->deltas.capacity * sizeof(rv_delta);
    m.coalescing_bytes =
        j->coalesce ? (uint64_t)j->coalesce_slots * (sizeof *j->coalesce + sizeof *j->coalesce_tags) : 0;
    m.buffer_bytes += (uint64_t)j->needs.cell_entries.capacity * sizeof(uint32_t);
    m.total_bytes = m.buffer_bytes + m.coalescing_bytes + sizeof *j;
    return m;
}

rv_alloc_stats rv_journal_alloc_stats(const rv_journal *j)
{
    rv_alloc_stats none = {0};
    return j ? j->heap.stats : none;
}
