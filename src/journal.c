/* The render-projection delta journal (DESIGN.md §7; seed 004 §3.4).
 *
 * An ordered buffer of deltas with journal-assigned sequences. Coalescing keeps, per key
 * and tick, the entry holding the latest update of each channel; a structural edge of the
 * key (or any ClearGeneration) forgets them, so an update never merges across an edge.
 * Merging rewrites the earlier entry's payload in place: channels are independent and no
 * structural edge of the key lies between the two positions, so every delta between them
 * sees the same validity and the final scene is the same as applying both in order. */
#include "journal.h"
#include "core/check.h"
#include "core/hash.h"
#include "core/pool.h"

#include <string.h>

#if defined(_WIN32)
__declspec(dllimport) unsigned long __stdcall GetCurrentThreadId(void);
static rvi_thread_id current_thread(void) { return GetCurrentThreadId(); }
static bool same_thread(rvi_thread_id a, rvi_thread_id b) { return a == b; }
#else
static rvi_thread_id current_thread(void) { return pthread_self(); }
static bool same_thread(rvi_thread_id a, rvi_thread_id b) { return pthread_equal(a, b) != 0; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH_WRITE(address) __builtin_prefetch((address), 1)
#else
#define PREFETCH_WRITE(address) ((void)(address))
#endif

/* How many entries ahead an append prefetches the buffer. */
enum { WRITE_AHEAD = 4 };

enum { CHANNEL_TRANSFORM, CHANNEL_APPEARANCE, CHANNEL_FLAGS, CHANNEL_NONE };

/* ---- validation ---- */

/* x * 0 is 0 for every finite x and NaN for an infinity or a NaN, so one sum tells whether
 * all 14 numbers are finite: no branch per number (appends are the journal's hot path). */
static bool transform_finite(const rv_projection_transform *t)
{
    float zero = 0.0f;
    for (int i = 0; i < 3; i++)
        zero += t->position[i] * 0.0f + t->scale[i] * 0.0f;
    for (int i = 0; i < 4; i++)
        zero += t->rotation[i] * 0.0f + t->bounds[i] * 0.0f;
    return zero == 0.0f;
}

static rv_result validate_transform(const rv_projection_transform *t)
{
    if (!transform_finite(t))
        return RV_ERR_NOT_FINITE;
    if (t->rotation[0] == 0.0f && t->rotation[1] == 0.0f && t->rotation[2] == 0.0f && t->rotation[3] == 0.0f)
        return RV_ERR_INVALID_ARG;
    if (t->bounds[3] < 0.0f)
        return RV_ERR_INVALID_ARG;
    if (t->bounds_space != RV_BOUNDS_LOCAL && t->bounds_space != RV_BOUNDS_WORLD)
        return RV_ERR_INVALID_ARG;
    if (t->bounds_space == RV_BOUNDS_WORLD && (t->scale[0] == 0.0f || t->scale[1] == 0.0f || t->scale[2] == 0.0f))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

static rv_result validate_bucket(const rv_projection_bucket *b, uint64_t key)
{
    if (b->projection_class <= RV_PROJECTION_CLASS_NONE || b->projection_class >= RV_PROJECTION_CLASS_COUNT_)
        return RV_ERR_INVALID_ARG;
    if (b->projection_class == RV_PROJECTION_EQUIPPED_CHILD ? b->parent_key == key : b->parent_key != 0)
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rvi_delta_validate(const rv_delta *d)
{
    const rv_projection *p = &d->projection;
    switch (d->kind) {
    case RV_DELTA_REGISTER:
        RVI_TRY(validate_transform(&p->transform));
        RVI_TRY(validate_bucket(&p->bucket, d->key));
        return (p->flags & ~RV_PROJECTION_FLAGS_ALL) ? RV_ERR_INVALID_ARG : RV_OK;
    case RV_DELTA_UPDATE_TRANSFORM:
        return validate_transform(&p->transform);
    case RV_DELTA_UPDATE_FLAGS:
        return (p->flags & ~RV_PROJECTION_FLAGS_ALL) ? RV_ERR_INVALID_ARG : RV_OK;
    case RV_DELTA_REBUCKET:
        return validate_bucket(&p->bucket, d->key);
    case RV_DELTA_UPDATE_APPEARANCE:
    case RV_DELTA_UNREGISTER:
    case RV_DELTA_CLEAR_GENERATION:
        return RV_OK;
    default:
        return RV_ERR_INVALID_ARG;
    }
}

/* All bytes zero, padding included: copied rather than memset, because compilers turn a
 * 144-byte memset into `rep stos`, whose start-up cost is most of an append's. */
static const rv_delta zero_delta;

static void copy_transform(rv_projection_transform *p, const rv_projection_transform *q)
{
    memcpy(p->position, q->position, sizeof p->position);
    memcpy(p->rotation, q->rotation, sizeof p->rotation);
    memcpy(p->scale, q->scale, sizeof p->scale);
    memcpy(p->bounds, q->bounds, sizeof p->bounds);
    p->bounds_space = q->bounds_space;
}

static void copy_bucket(rv_projection_bucket *p, const rv_projection_bucket *q)
{
    p->projection_class = q->projection_class;
    p->cell = q->cell;
    p->parent_key = q->parent_key;
}

/* The stored form: only the kind's channel, everything else zero (recordings compare
 * byte for byte). Field by field: a struct copy would carry the host's padding bytes into
 * the stored delta. One switch on the kind (appends are the journal's hot path). */
static void canonical_delta(const rv_delta *in, rv_delta *out)
{
    memcpy(out, &zero_delta, sizeof *out);
    out->kind = in->kind;
    out->generation = in->generation;
    if (in->kind == RV_DELTA_CLEAR_GENERATION)
        return;
    out->key = in->key;
    out->incarnation = in->incarnation;
    rv_projection *p = &out->projection;
    const rv_projection *q = &in->projection;
    switch (in->kind) {
    case RV_DELTA_REGISTER:
        copy_transform(&p->transform, &q->transform);
        p->appearance.mesh = q->appearance.mesh;
        p->appearance.material_variant = q->appearance.material_variant;
        copy_bucket(&p->bucket, &q->bucket);
        p->flags = q->flags;
        break;
    case RV_DELTA_UPDATE_TRANSFORM:
        copy_transform(&p->transform, &q->transform);
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        p->appearance.mesh = q->appearance.mesh;
        p->appearance.material_variant = q->appearance.material_variant;
        break;
    case RV_DELTA_UPDATE_FLAGS:
        p->flags = q->flags;
        break;
    case RV_DELTA_REBUCKET:
        copy_bucket(&p->bucket, &q->bucket);
        break;
    default:
        break;
    }
}

/* ---- lifecycle ---- */

rv_result rv_journal_create(const rv_journal_desc *desc, rv_journal **out)
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
    uint32_t slots = 1;
    while (slots < d.coalescing_keys)
        slots *= 2;
    rvi_heap heap;
    rvi_heap_init(&heap, &d.allocator);
    rv_journal *j = rvi_alloc(&heap, sizeof *j);
    if (!j)
        return RV_ERR_OUT_OF_MEMORY;
    memset(j, 0, sizeof *j);
    j->heap = heap;
    j->keep_every_update = d.keep_every_update;
    j->next_sequence = 1;
    j->epoch = 1; /* the zeroed table's records (epoch 0) are all stale */
    j->owner = current_thread();
    if (!d.keep_every_update) {
        j->coalesce = rvi_calloc(&j->heap, slots, sizeof *j->coalesce);
        j->coalesce_slots = j->coalesce ? slots : 0;
    }
    if ((!d.keep_every_update && !j->coalesce) ||
        rvi_vec_reserve(&j->heap, &j->deltas, sizeof(rv_delta), d.initial_capacity) != RV_OK) {
        rv_journal_destroy(j);
        return RV_ERR_OUT_OF_MEMORY;
    }
    j->stats.next_sequence = 1;
    *out = j;
    return RV_OK;
}

void rv_journal_destroy(rv_journal *j)
{
    if (!j)
        return;
    rvi_vec_free(&j->heap, &j->deltas, sizeof(rv_delta));
    rvi_free(&j->heap, j->coalesce, (size_t)j->coalesce_slots * sizeof *j->coalesce);
    rvi_vec_free(&j->heap, &j->needs.cell_entries, sizeof(uint32_t));
    rvi_heap heap = j->heap;
    rvi_free(&heap, j, sizeof *j);
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
        if (j->coalesce)
            memset(j->coalesce, 0, (size_t)j->coalesce_slots * sizeof *j->coalesce);
        j->epoch = 1;
    }
}

/* The table entry a key's coalescing record lives in (direct-mapped by key hash). */
static rvi_coalesce_record *coalesce_slot(const rv_journal *j, uint64_t key)
{
    return &j->coalesce[rvi_mix64(key) & (j->coalesce_slots - 1)];
}

/* True when the table entry r holds a record of key for this tick. */
static bool record_current(const rv_journal *j, const rvi_coalesce_record *r, uint64_t key)
{
    return r->epoch == j->epoch && r->key == key;
}

/* The entry an update of this channel may merge into (r: the key's table entry), or
 * RVI_INDEX_NONE. */
static uint32_t coalesce_target(const rv_journal *j, const rvi_coalesce_record *r, const rv_delta *d, int channel)
{
    if (!record_current(j, r, d->key) || r->generation != d->generation || r->incarnation != d->incarnation)
        return RVI_INDEX_NONE;
    uint32_t entry = r->entry[channel];
    /* Entries below the cursor were already taken by a running drain. */
    return entry != RVI_INDEX_NONE && entry >= j->cursor ? entry : RVI_INDEX_NONE;
}

/* Remembers entry `index` (an update of `channel`) as the key's merge target in its table
 * entry r. The table is direct-mapped: another key's record in the same place is pushed
 * out, which only means that key's next update gets an entry of its own (not merging is
 * always correct). */
static void remember_update(const rv_journal *j, rvi_coalesce_record *r, const rv_delta *d, int channel,
                            uint32_t index)
{
    if (!record_current(j, r, d->key) || r->generation != d->generation || r->incarnation != d->incarnation) {
        r->key = d->key;
        r->epoch = j->epoch;
        r->generation = d->generation;
        r->incarnation = d->incarnation;
        r->entry[0] = r->entry[1] = r->entry[2] = RVI_INDEX_NONE;
    }
    r->entry[channel] = index;
}

static rv_result append_checked(rv_journal *j, const rv_delta *in, uint64_t *out_sequence)
{
    RVI_TRY(rvi_journal_check_thread(j));
    /* Validation and channel in one switch on the kind: the updates (the common appends)
     * check their channel only. */
    int channel;
    switch (in->kind) {
    case RV_DELTA_UPDATE_TRANSFORM:
        RVI_TRY(validate_transform(&in->projection.transform));
        channel = CHANNEL_TRANSFORM;
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        channel = CHANNEL_APPEARANCE;
        break;
    case RV_DELTA_UPDATE_FLAGS:
        if (in->projection.flags & ~RV_PROJECTION_FLAGS_ALL)
            return RV_ERR_INVALID_ARG;
        channel = CHANNEL_FLAGS;
        break;
    default:
        RVI_TRY(rvi_delta_validate(in));
        channel = CHANNEL_NONE;
        break;
    }
    /* The key's coalescing table entry, hashed once for the lookup and the update. */
    rvi_coalesce_record *record =
        j->coalesce && in->kind != RV_DELTA_CLEAR_GENERATION ? coalesce_slot(j, in->key) : NULL;

    if (record && channel != CHANNEL_NONE) {
        uint32_t target = coalesce_target(j, record, in, channel);
        if (target != RVI_INDEX_NONE) {
            rv_delta *e = &RVI_VEC_AT(j->deltas, rv_delta, target);
            uint64_t sequence = e->sequence;
            canonical_delta(in, e);
            e->sequence = sequence;
            j->stats.appended++;
            j->stats.coalesced++;
            if (out_sequence)
                *out_sequence = sequence;
            return RV_OK;
        }
    }

    /* Reserve everything first so a failure changes nothing. */
    if (j->deltas.count == UINT32_MAX)
        return RV_ERR_CAPACITY;
    if (j->deltas.count >= j->deltas.capacity)
        RVI_TRY(rvi_vec_reserve(&j->heap, &j->deltas, sizeof(rv_delta), j->deltas.count + 1));
    if (channel == CHANNEL_NONE && target_class(in) == RV_PROJECTION_CELL_STATIC)
        RVI_TRY(rvi_vec_reserve(&j->heap, &j->needs.cell_entries, sizeof(uint32_t), j->needs.cell_entries.count + 1));

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
    canonical_delta(in, e);
    e->sequence = j->next_sequence++;
    j->stats.next_sequence = j->next_sequence;
    j->stats.appended++;
    if (channel == CHANNEL_NONE) /* an update needs no reservation */
        count_needs(j, e, index);

    if (j->coalesce && in->kind == RV_DELTA_CLEAR_GENERATION) {
        forget_coalescing(j);
    } else if (record && channel == CHANNEL_NONE) {
        /* A structural edge of this key: nothing after it merges with anything before. */
        if (record_current(j, record, in->key))
            record->entry[0] = record->entry[1] = record->entry[2] = RVI_INDEX_NONE;
    } else if (record) {
        remember_update(j, record, in, channel, index);
    }
    if (out_sequence)
        *out_sequence = e->sequence;
    return RV_OK;
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

rv_result rvi_journal_begin_drain(rv_journal *j)
{
    if (j->draining)
        return RV_ERR_BAD_STATE;
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
    uint32_t left = j->deltas.count - taken;
    if (taken && left)
        memmove(j->deltas.data, &RVI_VEC_AT(j->deltas, rv_delta, taken), (size_t)left * sizeof(rv_delta));
    j->deltas.count = left;
    j->stats.drained += taken;
    j->cursor = 0;
    j->draining = false;
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
    s.pending = j->deltas.count - (j->draining ? j->cursor : 0);
    return s;
}

rv_journal_memory rv_journal_get_memory(const rv_journal *j)
{
    rv_journal_memory m = {0};
    if (!j)
        return m;
    m.buffer_bytes = (uint64_t)j->deltas.capacity * sizeof(rv_delta);
    m.coalescing_bytes = j->coalesce ? (uint64_t)j->coalesce_slots * sizeof *j->coalesce : 0;
    m.buffer_bytes += (uint64_t)j->needs.cell_entries.capacity * sizeof(uint32_t);
    m.total_bytes = m.buffer_bytes + m.coalescing_bytes + sizeof *j;
    return m;
}

rv_alloc_stats rv_journal_alloc_stats(const rv_journal *j)
{
    rv_alloc_stats none = {0};
    return j ? j->heap.stats : none;
}
