/* Delta journal (docs/design.md §7): sequences, validation, thread ownership, coalescing rules
 * and their equivalence with applying every delta, recording, out-of-memory behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "journal.h" /* rvi_delta_validate and the drain's reservation counts, for the reference checks */
#include "support/rvt.h"

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static rv_projection_transform transform_at(float x)
{
    rv_projection_transform t;
    memset(&t, 0, sizeof t);
    t.position[0] = x;
    t.rotation[3] = 1.0f;
    t.scale[0] = t.scale[1] = t.scale[2] = 1.0f;
    t.bounds[3] = 1.0f;
    return t;
}

static rv_projection projection_of(rv_projection_class cls)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform = transform_at(0.0f);
    p.bucket.projection_class = cls;
    return p;
}

static rv_journal *make_journal(bool keep_every_update)
{
    rv_journal_desc desc = {0};
    desc.keep_every_update = keep_every_update;
    rv_journal *j;
    assert_int_equal(rv_journal_create(&desc, &j), RV_OK);
    return j;
}

static uint32_t pending_count(const rv_journal *j)
{
    uint32_t n;
    rv_journal_pending(j, &n);
    return n;
}

static rv_scene_digest digest_of(rv_render_scene *s)
{
    rv_scene_digest d;
    assert_int_equal(rv_render_scene_digest(s, &d), RV_OK);
    return d;
}

static void assert_same_digest(rv_render_scene *a, rv_render_scene *b)
{
    rv_scene_digest x = digest_of(a), y = digest_of(b);
    assert_int_equal(x.hash[0], y.hash[0]);
    assert_int_equal(x.hash[1], y.hash[1]);
    assert_int_equal(x.projections, y.projections);
    assert_int_equal(x.generation, y.generation);
}

/* ---- sequences, validation ---- */

static void test_appends_get_strictly_increasing_sequences(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    rv_projection_transform t = transform_at(1.0f);
    rv_projection_appearance a = { 1, 2 };
    rv_projection_bucket b = { RV_PROJECTION_OUTDOOR_STATIC, 3, 0 };
    uint64_t seq[7];
    assert_int_equal(rv_journal_register(j, 0, 5, 1, &p, &seq[0]), RV_OK);
    assert_int_equal(rv_journal_update_transform(j, 0, 5, 1, &t, &seq[1]), RV_OK);
    assert_int_equal(rv_journal_update_appearance(j, 0, 5, 1, &a, &seq[2]), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 5, 1, RV_PROJECTION_HIDDEN, &seq[3]), RV_OK);
    assert_int_equal(rv_journal_rebucket(j, 0, 5, 1, &b, &seq[4]), RV_OK);
    assert_int_equal(rv_journal_unregister(j, 0, 5, 1, &seq[5]), RV_OK);
    assert_int_equal(rv_journal_clear_generation(j, 1, &seq[6]), RV_OK);
    for (int i = 0; i < 7; i++)
        assert_int_equal(seq[i], (uint64_t)i + 1);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 7);
    const rv_delta_kind kinds[7] = { RV_DELTA_REGISTER, RV_DELTA_UPDATE_TRANSFORM, RV_DELTA_UPDATE_APPEARANCE,
                                     RV_DELTA_UPDATE_FLAGS, RV_DELTA_REBUCKET, RV_DELTA_UNREGISTER,
                                     RV_DELTA_CLEAR_GENERATION };
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(d[i].sequence, i + 1);
        assert_int_equal(d[i].kind, kinds[i]);
    }
    /* Sequences keep rising across drains. */
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    uint64_t next;
    assert_int_equal(rv_journal_unregister(j, 1, 5, 1, &next), RV_OK);
    assert_int_equal(next, 8);
    rv_journal_stats st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 8);
    assert_int_equal(st.drained, 7);
    assert_int_equal(st.ticks, 1);
    assert_int_equal(st.pending, 1);
    assert_int_equal(st.next_sequence, 9);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

static void test_pending_deltas_hold_only_their_channel(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_delta in;
    memset(&in, 0xAB, sizeof in); /* garbage everywhere outside the channel */
    in.kind = RV_DELTA_UPDATE_FLAGS;
    in.key = 9;
    in.generation = 2;
    in.incarnation = 3;
    in.projection.flags = RV_PROJECTION_SELECTABLE;
    assert_int_equal(rv_journal_append(j, &in, NULL), RV_OK);
    in.kind = RV_DELTA_CLEAR_GENERATION;
    in.generation = 4;
    assert_int_equal(rv_journal_append(j, &in, NULL), RV_OK);
    rv_delta expect[2];
    memset(expect, 0, sizeof expect);
    expect[0].sequence = 1;
    expect[0].kind = RV_DELTA_UPDATE_FLAGS;
    expect[0].key = 9;
    expect[0].generation = 2;
    expect[0].incarnation = 3;
    expect[0].projection.flags = RV_PROJECTION_SELECTABLE;
    expect[1].sequence = 2;
    expect[1].kind = RV_DELTA_CLEAR_GENERATION;
    expect[1].generation = 4;
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 2);
    assert_memory_equal(d, expect, sizeof expect);
    rv_journal_destroy(j);
}

/* A number for a hostile payload: ordinary values, signed zeros, subnormals, the extremes,
 * infinities, NaNs and raw bit patterns. */
static float hostile_float(uint64_t *seed)
{
    static const float special[] = { 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-45f, -1e-45f, FLT_MIN, FLT_MAX, -FLT_MAX,
                                     INFINITY, -INFINITY, NAN };
    uint64_t r = rvt_next(seed);
    if (r % 4 == 0) {
        uint32_t bits = (uint32_t)(r >> 32);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return special[(r >> 8) % (sizeof special / sizeof special[0])];
}

/* Every append is checked against rvi_delta_validate (the rules the header states, and what
 * a replay checks) on deltas that are mostly well formed with one field broken at a time, or
 * anything at all: the append takes exactly the deltas validation accepts and returns the
 * same error for the rest. After each append, the reservation counts a drain relies on match
 * a count over the pending entries. */
static void test_append_accepts_exactly_the_deltas_validation_accepts(void **state)
{
    (void)state;
    uint64_t seed = 0xA11CE;
    const int n = RVT_HEAVY(400000, 100000);
    rv_journal *j = make_journal(false);
    int accepted = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        if (i % 4096 == 0) { /* keep the journal small: a fresh one now and then */
            rv_journal_destroy(j);
            j = make_journal(i % 8192 == 0);
        }
        rv_delta d;
        memset(&d, 0, sizeof d);
        uint64_t r = rvt_next(&seed);
        d.kind = (rv_delta_kind)((int)(r % 10) - 1); /* -1 .. 8: two kinds out of range */
        d.key = rvt_next(&seed) % 64;
        d.generation = (uint32_t)(rvt_next(&seed) % 3);
        d.incarnation = (uint32_t)(rvt_next(&seed) % 3);
        d.projection = projection_of((rv_projection_class)(1 + rvt_next(&seed) % 4));
        if (d.projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD)
            d.projection.bucket.parent_key = d.key + 1;
        d.projection.flags = (uint32_t)(rvt_next(&seed) & RV_PROJECTION_FLAGS_ALL);
        d.projection.appearance.mesh = rvt_next(&seed);
        switch (rvt_next(&seed) % 12) { /* break one thing, or everything */
        case 0: { /* one of the transform's 14 numbers (its first 14 words) */
            float f = hostile_float(&seed);
            memcpy((unsigned char *)&d.projection.transform + 4 * (rvt_next(&seed) % 14), &f, sizeof f);
            break;
        }
        case 1: d.projection.transform.bounds_space = (rv_bounds_space)(rvt_next(&seed) % 4); break;
        case 2: d.projection.transform.scale[rvt_next(&seed) % 3] = 0.0f;
                d.projection.transform.bounds_space = RV_BOUNDS_WORLD; break;
        case 3: d.projection.bucket.projection_class = (rv_projection_class)((int)(rvt_next(&seed) % 8) - 1); break;
        case 4: d.projection.bucket.parent_key = rvt_next(&seed) % 3 ? d.key : rvt_next(&seed); break;
        case 5: d.projection.flags = (uint32_t)rvt_next(&seed); break;
        case 6: memset(d.projection.transform.rotation, 0, sizeof d.projection.transform.rotation); break;
        case 7: {
            unsigned char *bytes = (unsigned char *)&d;
            for (size_t b = 0; b < sizeof d; b++)
                bytes[b] = (unsigned char)rvt_next(&seed);
            d.kind = (rv_delta_kind)(rvt_next(&seed) % 9);
            break;
        }
        default: break;
        }
        rv_result expected = rvi_delta_validate(&d);
#if RVT_HAVE_MXCSR
        /* The same verdict with subnormals flushed to zero (DAZ, FTZ), as engines often run. */
        unsigned int csr = rvt_flush_subnormals();
        rv_result flushed = rvi_delta_validate(&d);
        rvt_restore_fp_mode(csr);
        assert_int_equal(flushed, expected);
#endif
        feclearexcept(FE_INVALID);
        rv_result got = rv_journal_append(j, &d, NULL);
        /* Whatever bytes a payload holds, an append compares no NaN as a float (its checks
         * are integer ones, or come after the finiteness check). */
        assert_false(fetestexcept(FE_INVALID));
        assert_int_equal(got, expected);
        accepted += got == RV_OK;
        refused += got != RV_OK;
        uint32_t count;
        const rv_delta *pending = rv_journal_pending(j, &count);
        uint32_t registers = 0, equipped = 0, cells = 0;
        for (uint32_t e = 0; e < count; e++) {
            bool target = pending[e].kind == RV_DELTA_REGISTER || pending[e].kind == RV_DELTA_REBUCKET;
            registers += pending[e].kind == RV_DELTA_REGISTER;
            equipped += target && pending[e].projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD;
            if (target && pending[e].projection.bucket.projection_class == RV_PROJECTION_CELL_STATIC) {
                assert_true(cells < j->needs.cell_entries.count);
                assert_int_equal(RVI_VEC_AT(j->needs.cell_entries, uint32_t, cells), e);
                cells++;
            }
        }
        assert_int_equal(j->needs.registers, registers);
        assert_int_equal(j->needs.equipped_targets, equipped);
        assert_int_equal(j->needs.cell_entries.count, cells);
    }
    rv_journal_destroy(j);
    /* Both outcomes were exercised in earnest. */
    assert_true(accepted > n / 4);
    assert_true(refused > n / 8);
}

static void test_append_refuses_malformed_payloads_and_changes_nothing(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    rv_projection bad;
    bad = p; bad.transform.position[2] = NAN;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_NOT_FINITE);
    bad = p; bad.transform.bounds[3] = INFINITY;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_NOT_FINITE);
    bad = p; bad.transform.rotation[3] = 0.0f;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.transform.bounds[3] = -1.0f;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.transform.bounds_space = (rv_bounds_space)2;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.transform.bounds_space = RV_BOUNDS_WORLD; bad.transform.scale[1] = 0.0f;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.bucket.projection_class = RV_PROJECTION_CLASS_NONE;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.bucket.projection_class = RV_PROJECTION_CLASS_COUNT_;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.bucket.parent_key = 4; /* a parent for a class that has none */
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    bad = p; bad.bucket.projection_class = RV_PROJECTION_EQUIPPED_CHILD; bad.bucket.parent_key = 1;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG); /* its own parent */
    bad = p; bad.flags = 1u << 4;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, 0x100, NULL), RV_ERR_INVALID_ARG);
    rv_projection_transform t = transform_at(NAN);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_NOT_FINITE);
    rv_projection_bucket b = { RV_PROJECTION_CELL_STATIC, 0, 2 };
    assert_int_equal(rv_journal_rebucket(j, 0, 1, 1, &b, NULL), RV_ERR_INVALID_ARG);
    rv_delta d;
    memset(&d, 0, sizeof d);
    d.kind = RV_DELTA_NONE;
    assert_int_equal(rv_journal_append(j, &d, NULL), RV_ERR_INVALID_ARG);
    d.kind = RV_DELTA_KIND_COUNT_;
    assert_int_equal(rv_journal_append(j, &d, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_register(j, 0, 1, 1, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_update_appearance(j, 0, 1, 1, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_rebucket(j, 0, 1, 1, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_append(j, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_register(NULL, 0, 1, 1, &p, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_unregister(NULL, 0, 1, 1, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_clear_generation(NULL, 1, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_update_flags(NULL, 0, 1, 1, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_create(NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_claim_thread(NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(pending_count(j), 0);
    rv_journal_stats st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 0);
    assert_int_equal(st.next_sequence, 1);
    /* An equipped child with another parent, and world bounds with nonzero scale, are fine. */
    bad = p; bad.bucket.projection_class = RV_PROJECTION_EQUIPPED_CHILD; bad.bucket.parent_key = 2;
    bad.transform.bounds_space = RV_BOUNDS_WORLD;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &bad, NULL), RV_OK);
    assert_null(rv_journal_pending(NULL, NULL));
    assert_int_equal(rv_journal_get_stats(NULL).appended, 0);
    rv_journal_destroy(NULL);
    rv_journal_destroy(j);
}

/* A valid delta of `kind` written field by field over `fill` (the host's padding bytes:
 * every byte no field covers keeps the fill). */
static rv_delta delta_over(unsigned char fill, rv_delta_kind kind, float x)
{
    rv_delta d;
    memset(&d, fill, sizeof d);
    d.sequence = 77; /* ignored: the journal assigns it */
    d.kind = kind;
    d.key = kind == RV_DELTA_CLEAR_GENERATION ? 0 : 5;
    d.generation = kind == RV_DELTA_CLEAR_GENERATION ? 1 : 0;
    d.incarnation = kind == RV_DELTA_CLEAR_GENERATION ? 0 : 2;
    rv_projection_transform t = transform_at(x);
    rv_projection *p = &d.projection;
    if (kind == RV_DELTA_REGISTER || kind == RV_DELTA_UPDATE_TRANSFORM) {
        memcpy(p->transform.position, t.position, sizeof t.position);
        memcpy(p->transform.rotation, t.rotation, sizeof t.rotation);
        memcpy(p->transform.scale, t.scale, sizeof t.scale);
        memcpy(p->transform.bounds, t.bounds, sizeof t.bounds);
        p->transform.bounds_space = RV_BOUNDS_LOCAL;
    }
    if (kind == RV_DELTA_REGISTER || kind == RV_DELTA_UPDATE_APPEARANCE) {
        p->appearance.mesh = 11 + (uint64_t)x;
        p->appearance.material_variant = 12;
    }
    if (kind == RV_DELTA_REGISTER || kind == RV_DELTA_REBUCKET) {
        p->bucket.projection_class = RV_PROJECTION_CELL_STATIC;
        p->bucket.cell = 13;
        p->bucket.parent_key = 0;
    }
    if (kind == RV_DELTA_REGISTER || kind == RV_DELTA_UPDATE_FLAGS)
        p->flags = RV_PROJECTION_TRANSLUCENT;
    return d;
}

/* The same delta as the journal must store it: over zeroes, with its sequence. */
static rv_delta stored_form(rv_delta_kind kind, float x, uint64_t sequence)
{
    rv_delta d = delta_over(0, kind, x);
    d.sequence = sequence;
    return d;
}

static void test_stored_entries_hold_zero_padding_whatever_the_host_left_there(void **state)
{
    (void)state;
    const rv_delta_kind kinds[] = { RV_DELTA_REGISTER, RV_DELTA_UPDATE_TRANSFORM, RV_DELTA_UPDATE_APPEARANCE,
                                    RV_DELTA_UPDATE_FLAGS, RV_DELTA_REBUCKET, RV_DELTA_UNREGISTER,
                                    RV_DELTA_CLEAR_GENERATION };
    const unsigned char fills[] = { 0xFF, 0xAB, 0x01 };
    for (size_t f = 0; f < sizeof fills; f++) {
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            for (int keep_every_update = 0; keep_every_update < 2; keep_every_update++) {
                rv_journal *j = make_journal(keep_every_update != 0);
                rv_delta in = delta_over(fills[f], kinds[k], 1.0f);
                uint64_t sequence = 0;
                assert_int_equal(rv_journal_append(j, &in, &sequence), RV_OK);
                assert_int_equal(sequence, 1);
                rv_delta expect = stored_form(kinds[k], 1.0f, 1);
                uint32_t n;
                const rv_delta *d = rv_journal_pending(j, &n);
                assert_int_equal(n, 1);
                assert_memory_equal(d, &expect, sizeof expect);
                /* A second update of the same channel merges into the entry (or, keeping
                 * every update, gets its own): garbage padding stays out either way. */
                in = delta_over(fills[f], kinds[k], 2.0f);
                assert_int_equal(rv_journal_append(j, &in, &sequence), RV_OK);
                d = rv_journal_pending(j, &n);
                bool merges = !keep_every_update && (kinds[k] == RV_DELTA_UPDATE_TRANSFORM ||
                                                     kinds[k] == RV_DELTA_UPDATE_APPEARANCE ||
                                                     kinds[k] == RV_DELTA_UPDATE_FLAGS);
                assert_int_equal(n, merges ? 1 : 2);
                assert_int_equal(sequence, merges ? 1 : 2);
                expect = stored_form(kinds[k], 2.0f, sequence);
                assert_memory_equal(&d[n - 1], &expect, sizeof expect);
                rv_journal_destroy(j);
            }
        }
    }
}

static void test_re_appending_a_pending_entry_merges_it_unchanged(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection_transform t = transform_at(4.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    rv_delta before = d[0];
    uint64_t sequence = 0;
    assert_int_equal(rv_journal_append(j, &d[0], &sequence), RV_OK); /* the entry itself */
    d = rv_journal_pending(j, &n);
    assert_int_equal(n, 1);
    assert_int_equal(sequence, 1);
    assert_memory_equal(&d[0], &before, sizeof before);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 1);
    assert_int_equal(rv_journal_get_stats(j).appended, 2);
    rv_journal_destroy(j);
}

/* Appending entries read back from rv_journal_pending while the buffer must grow: the
 * pointer handed to the append lies in the very buffer the append moves. Every copy must
 * still carry what the entry held (under AddressSanitizer a read of the freed buffer fails
 * the run). */
static void test_re_appending_pending_entries_while_the_buffer_grows(void **state)
{
    (void)state;
    /* An update (its own growth path) and a structural edge (another). */
    const rv_delta_kind kinds[] = { RV_DELTA_UPDATE_TRANSFORM, RV_DELTA_REGISTER };
    for (int k = 0; k < 2; k++) {
        rv_journal_desc desc = {0};
        desc.initial_capacity = 1;
        desc.keep_every_update = true; /* nothing merges: every append needs a new entry */
        rv_journal *j;
        assert_int_equal(rv_journal_create(&desc, &j), RV_OK);
        rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
        p.transform = transform_at(7.0f);
        if (kinds[k] == RV_DELTA_REGISTER)
            assert_int_equal(rv_journal_register(j, 0, 9, 1, &p, NULL), RV_OK);
        else
            assert_int_equal(rv_journal_update_transform(j, 0, 9, 1, &p.transform, NULL), RV_OK);
        for (uint32_t round = 0; round < 5; round++) {
            uint64_t capacity = rv_journal_get_memory(j).buffer_bytes / sizeof(rv_delta);
            /* Re-append the last pending entry until an append had to grow the buffer. */
            while (rv_journal_get_memory(j).buffer_bytes / sizeof(rv_delta) == capacity) {
                uint32_t n;
                const rv_delta *d = rv_journal_pending(j, &n);
                uint64_t sequence;
                assert_int_equal(rv_journal_append(j, &d[n - 1], &sequence), RV_OK);
                assert_int_equal(sequence, n + 1);
            }
        }
        uint32_t n;
        const rv_delta *d = rv_journal_pending(j, &n);
        assert_true(n > 16);
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(d[i].kind, kinds[k]);
            assert_int_equal(d[i].key, 9);
            assert_true(d[i].projection.transform.position[0] == 7.0f);
            assert_int_equal(d[i].sequence, i + 1);
        }
        rv_journal_destroy(j);
    }
}

/* Each of the 14 numbers of a transform, as a pointer into t. */
static float *transform_number(rv_projection_transform *t, int i)
{
    if (i < 3)
        return &t->position[i];
    if (i < 7)
        return &t->rotation[i - 3];
    if (i < 10)
        return &t->scale[i - 7];
    return &t->bounds[i - 10];
}

static float float_of_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void test_nan_or_infinity_in_any_transform_number_is_refused(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    const float bad[] = { NAN, -NAN, INFINITY, -INFINITY, float_of_bits(0x7F800001u) /* signalling */,
                          float_of_bits(0xFFFFFFFFu) };
    for (int i = 0; i < 14; i++) {
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            rv_projection_transform t = transform_at(0.0f);
            *transform_number(&t, i) = bad[b];
            assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_NOT_FINITE);
            rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
            p.transform = t;
            assert_int_equal(rv_journal_register(j, 0, 1, 1, &p, NULL), RV_ERR_NOT_FINITE);
            /* Not finite comes first, whatever else is wrong. */
            t.bounds_space = (rv_bounds_space)7;
            assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_NOT_FINITE);
        }
    }
    assert_int_equal(pending_count(j), 0);
    assert_int_equal(rv_journal_get_stats(j).appended, 0);
    /* The largest, smallest and subnormal finite numbers pass, in every place. */
    const float fine[] = { FLT_MAX, -FLT_MAX, FLT_MIN, float_of_bits(1u) /* smallest subnormal */,
                           float_of_bits(0x7F7FFFFFu) };
    for (int i = 0; i < 14; i++) {
        for (size_t f = 0; f < sizeof fine / sizeof fine[0]; f++) {
            rv_projection_transform t = transform_at(0.0f);
            t.rotation[0] = 1.0f; /* the rotation keeps a normal component whichever number changes */
            *transform_number(&t, i) = i == 13 ? fabsf(fine[f]) : fine[f]; /* 13: the radius */
            assert_int_equal(rv_journal_update_transform(j, 0, (uint64_t)i + 1, 1, &t, NULL), RV_OK);
        }
    }
    rv_journal_destroy(j);
}

/* The verdicts on signed zeros and subnormals, in the current floating-point environment. */
static void check_zero_and_subnormal_verdicts(rv_journal *j)
{
    rv_projection_transform t = transform_at(0.0f);
    t.rotation[0] = -0.0f; t.rotation[1] = 0.0f; t.rotation[2] = -0.0f; t.rotation[3] = -0.0f;
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
    for (int r = 0; r < 4; r++) {
        /* Subnormal components alone are refused as a zero quaternion (under DAZ they read as
         * zero); beside a normal one they are fine. */
        t = transform_at(0.0f);
        memset(t.rotation, 0, sizeof t.rotation);
        t.rotation[r] = -float_of_bits(1u);
        t.rotation[(r + 1) % 4] = float_of_bits(0x007FFFFFu); /* the largest subnormal */
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
        t.rotation[(r + 2) % 4] = FLT_MIN; /* the smallest normal */
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    }
    t = transform_at(0.0f);
    t.bounds[3] = -0.0f; /* not negative */
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    t.bounds[3] = -float_of_bits(1u); /* negative, though DAZ would read it as -0 */
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
    t = transform_at(0.0f);
    t.bounds_space = (rv_bounds_space)0x7FFFFFFF;
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
    for (int s = 0; s < 3; s++) {
        t = transform_at(0.0f);
        t.bounds_space = RV_BOUNDS_WORLD;
        t.scale[s] = -0.0f;
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
        /* World bounds need normal scales: a subnormal one is refused, even when the sphere
         * divided by it would fit in floats. */
        t.scale[s] = float_of_bits(1u << 20); /* 1.5e-39 */
        t.bounds[3] = 1e-40f;
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
        t.scale[s] = FLT_MIN;
        t.bounds[3] = 1e-30f;
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
        t.bounds[3] = 100.0f; /* 100 / FLT_MIN does not fit in a float */
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
        t.bounds_space = RV_BOUNDS_LOCAL;
        t.scale[s] = -0.0f; /* zero scale is fine with local bounds */
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
        t.scale[s] = float_of_bits(1u); /* and so is a subnormal one */
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    }
}

/* Engines often run with subnormals flushed to zero (DAZ and FTZ in MXCSR); the checks read
 * bits, so every verdict is the same there. */
static void test_transform_verdicts_on_zeros_and_subnormals_hold_under_daz(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    check_zero_and_subnormal_verdicts(j);
    int passes = 1;
#if RVT_HAVE_MXCSR
    unsigned int csr = rvt_flush_subnormals();
    check_zero_and_subnormal_verdicts(j);
    rvt_restore_fp_mode(csr);
    passes++;
#endif
    /* 14 appends a pass are accepted (all to one key: they merge), none other. */
    assert_int_equal(rv_journal_get_stats(j).appended, 14 * passes);
    assert_int_equal(pending_count(j), 1);
    rv_journal_destroy(j);
}

static void test_stats_count_every_accepted_append(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection_transform t = transform_at(0.0f);
    for (uint64_t k = 1; k <= 3; k++)
        for (int i = 0; i < 4; i++)
            assert_int_equal(rv_journal_update_transform(j, 0, k, 1, &t, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, 0x100, NULL), RV_ERR_INVALID_ARG); /* not counted */
    rv_journal_stats st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 12);
    assert_int_equal(st.coalesced, 9);
    assert_int_equal(st.next_sequence, 4);
    assert_int_equal(st.pending, 3);
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    assert_int_equal(rv_journal_clear_generation(j, 1, NULL), RV_OK);
    st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 13);
    assert_int_equal(st.drained, 3);
    assert_int_equal(st.pending, 1);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

/* ---- thread ownership ---- */

typedef struct thread_call {
    rv_journal *journal;
    rv_result append;
    rv_result claim;
    rv_result append_after_claim;
} thread_call;

static void *append_from_thread(void *arg)
{
    thread_call *c = arg;
    c->append = rv_journal_unregister(c->journal, 0, 1, 1, NULL);
    c->claim = rv_journal_claim_thread(c->journal);
    c->append_after_claim = rv_journal_unregister(c->journal, 0, 2, 1, NULL);
    return NULL;
}

static void test_append_from_another_thread_is_refused_until_it_claims_the_journal(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    thread_call c = { j, RV_OK, RV_OK, RV_OK };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, append_from_thread, &c), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(c.append, RV_ERR_INVARIANT);
    assert_int_equal(c.claim, RV_OK);
    assert_int_equal(c.append_after_claim, RV_OK);
    assert_int_equal(pending_count(j), 1);
    assert_int_equal(rv_journal_get_stats(j).appended, 1);
    /* The creating thread no longer owns it. */
    assert_int_equal(rv_journal_unregister(j, 0, 3, 1, NULL), RV_ERR_INVARIANT);
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_ERR_INVARIANT);
    assert_int_equal(pending_count(j), 1);
    assert_int_equal(rv_journal_claim_thread(j), RV_OK);
    assert_int_equal(rv_journal_unregister(j, 0, 3, 1, NULL), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    assert_int_equal(pending_count(j), 0);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

typedef struct foreign_appends {
    rv_journal *journal;
    rv_result append[4];
} foreign_appends;

/* Every way in, from a thread that does not own the journal. */
static void *append_every_kind_from_thread(void *arg)
{
    foreign_appends *c = arg;
    rv_delta d = delta_over(0, RV_DELTA_UPDATE_TRANSFORM, 1.0f);
    c->append[0] = rv_journal_append(c->journal, &d, NULL);
    d = delta_over(0, RV_DELTA_UPDATE_FLAGS, 1.0f);
    c->append[1] = rv_journal_append(c->journal, &d, NULL);
    d = delta_over(0, RV_DELTA_REGISTER, 1.0f);
    c->append[2] = rv_journal_append(c->journal, &d, NULL);
    rv_projection_transform t = transform_at(1.0f);
    c->append[3] = rv_journal_update_transform(c->journal, 0, 5, 2, &t, NULL);
    return NULL;
}

static void test_appends_of_every_kind_from_another_thread_are_refused(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection_transform t = transform_at(0.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 5, 2, &t, NULL), RV_OK); /* a merge target */
    foreign_appends c = { j, { RV_OK, RV_OK, RV_OK, RV_OK } };
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, append_every_kind_from_thread, &c), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(c.append[i], RV_ERR_INVARIANT);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 1);
    assert_true(d[0].projection.transform.position[0] == 0.0f); /* nothing merged either */
    rv_journal_stats st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 1);
    assert_int_equal(st.coalesced, 0);
    assert_int_equal(rv_journal_update_transform(j, 0, 5, 2, &t, NULL), RV_OK); /* the owner still can */
    rv_journal_destroy(j);
}

/* ---- coalescing ---- */

static void test_updates_of_one_channel_coalesce_within_a_tick(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &p, NULL), RV_OK);
    uint64_t s1, s2, s3;
    rv_projection_transform t = transform_at(1.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, &s1), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    t = transform_at(2.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, &s2), RV_OK);
    t = transform_at(3.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, &s3), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_SELECTABLE, NULL), RV_OK);
    /* The merged entry keeps its place and sequence; its payload is the latest. */
    assert_int_equal(s1, 2);
    assert_int_equal(s2, 2);
    assert_int_equal(s3, 2);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 3);
    assert_int_equal(d[1].kind, RV_DELTA_UPDATE_TRANSFORM);
    assert_true(d[1].projection.transform.position[0] == 3.0f);
    assert_int_equal(d[2].kind, RV_DELTA_UPDATE_FLAGS);
    assert_int_equal(d[2].projection.flags, RV_PROJECTION_SELECTABLE);
    rv_journal_stats st = rv_journal_get_stats(j);
    assert_int_equal(st.appended, 6);
    assert_int_equal(st.coalesced, 3);
    assert_int_equal(st.next_sequence, 4);
    rv_journal_destroy(j);
}

static void test_coalescing_does_not_cross_a_structural_edge(void **state)
{
    (void)state;
    const rv_delta_kind edges[4] = { RV_DELTA_REGISTER, RV_DELTA_UNREGISTER, RV_DELTA_REBUCKET,
                                     RV_DELTA_CLEAR_GENERATION };
    for (int e = 0; e < 4; e++) {
        rv_journal *j = make_journal(false);
        rv_projection_transform t = transform_at(1.0f);
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
        rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
        rv_projection_bucket b = { RV_PROJECTION_OUTDOOR_STATIC, 0, 0 };
        switch (edges[e]) {
        case RV_DELTA_REGISTER: assert_int_equal(rv_journal_register(j, 0, 1, 1, &p, NULL), RV_OK); break;
        case RV_DELTA_UNREGISTER: assert_int_equal(rv_journal_unregister(j, 0, 1, 1, NULL), RV_OK); break;
        case RV_DELTA_REBUCKET: assert_int_equal(rv_journal_rebucket(j, 0, 1, 1, &b, NULL), RV_OK); break;
        default: assert_int_equal(rv_journal_clear_generation(j, 0, NULL), RV_OK); break;
        }
        t = transform_at(2.0f);
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
        uint32_t n;
        const rv_delta *d = rv_journal_pending(j, &n);
        assert_int_equal(n, 3);
        assert_true(d[0].projection.transform.position[0] == 1.0f);
        assert_int_equal(d[1].kind, edges[e]);
        assert_true(d[2].projection.transform.position[0] == 2.0f);
        /* An edge of another key does not separate them (ClearGeneration is every key's). */
        t = transform_at(3.0f);
        assert_int_equal(rv_journal_unregister(j, 0, 99, 1, NULL), RV_OK);
        assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
        d = rv_journal_pending(j, &n);
        assert_int_equal(n, 4);
        assert_true(d[2].projection.transform.position[0] == 3.0f);
        assert_int_equal(rv_journal_get_stats(j).coalesced, 1);
        rv_journal_destroy(j);
    }
}

static void test_coalescing_needs_the_same_key_incarnation_generation_and_channel(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_projection_transform t = transform_at(1.0f);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 2, &t, NULL), RV_OK); /* incarnation */
    assert_int_equal(rv_journal_update_transform(j, 1, 1, 2, &t, NULL), RV_OK); /* generation */
    assert_int_equal(rv_journal_update_transform(j, 1, 2, 2, &t, NULL), RV_OK); /* key */
    rv_projection_appearance a = { 1, 1 };
    assert_int_equal(rv_journal_update_appearance(j, 1, 2, 2, &a, NULL), RV_OK); /* channel */
    assert_int_equal(rv_journal_update_flags(j, 1, 2, 2, 0, NULL), RV_OK);
    assert_int_equal(pending_count(j), 6);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 0);
    /* Back to an earlier incarnation: its old entry is no longer the latest for the key. */
    assert_int_equal(rv_journal_update_transform(j, 0, 1, 1, &t, NULL), RV_OK);
    assert_int_equal(pending_count(j), 7);
    rv_journal_destroy(j);
}

static void test_updates_do_not_coalesce_across_ticks(void **state)
{
    (void)state;
    rv_journal *j = make_journal(false);
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_TRANSLUCENT, NULL), RV_OK);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 1);
    assert_int_equal(d[0].sequence, 3);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 0);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

/* An apply that fails before taking anything leaves the journal as it was (header), merge
 * targets included: an update appended afterwards still merges into its pending entry. */
static void test_a_failed_apply_keeps_the_journals_merge_targets(void **state)
{
    (void)state;
    rvt_alloc st = {0};
    rv_render_scene_desc sd = {0};
    sd.allocator = rvt_allocator(&st);
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(&sd, &s), RV_OK);
    rv_journal *j = make_journal(false);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_SELECTABLE, NULL), RV_OK);
    rv_projection in_cell = projection_of(RV_PROJECTION_CELL_STATIC);
    in_cell.bucket.cell = 7; /* a cell the scene has no bucket for: the apply must allocate */
    assert_int_equal(rv_journal_register(j, 0, 2, 1, &in_cell, NULL), RV_OK);
    st.fail_at = st.calls + 1;
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_ERR_OUT_OF_MEMORY);
    st.fail_at = 0;
    uint32_t n;
    rv_journal_pending(j, &n);
    assert_int_equal(n, 2);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_TRANSLUCENT, NULL), RV_OK);
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 2); /* merged, not a third entry */
    assert_int_equal(d[0].projection.flags, RV_PROJECTION_TRANSLUCENT);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 1);
    assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
    uint32_t slot;
    rv_projection_record r;
    assert_int_equal(rv_render_scene_find(s, 1, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(s, slot, &r), RV_OK);
    assert_int_equal(r.projection.flags, RV_PROJECTION_TRANSLUCENT);
    assert_int_equal(rv_render_scene_find(s, 2, &slot), RV_OK);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

static void test_a_key_pushed_out_of_the_coalescing_table_gets_its_own_entry(void **state)
{
    (void)state;
    rv_journal_desc desc = {0};
    desc.coalescing_keys = 1; /* one key remembered at a time */
    rv_journal *j;
    assert_int_equal(rv_journal_create(&desc, &j), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, 0, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK); /* merges */
    assert_int_equal(rv_journal_update_flags(j, 0, 2, 1, 0, NULL), RV_OK);                    /* pushes 1 out */
    assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, RV_PROJECTION_SELECTABLE, NULL), RV_OK);
    uint32_t n;
    const rv_delta *d = rv_journal_pending(j, &n);
    assert_int_equal(n, 3);
    assert_int_equal(d[0].projection.flags, RV_PROJECTION_HIDDEN);
    assert_int_equal(d[2].key, 1);
    assert_int_equal(d[2].projection.flags, RV_PROJECTION_SELECTABLE);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 1);
    assert_true(rv_journal_get_memory(j).coalescing_bytes > 0);
    rv_journal_destroy(j);
    desc.coalescing_keys = (1u << 24) + 1;
    assert_int_equal(rv_journal_create(&desc, &j), RV_ERR_INVALID_ARG);
}

static void test_keep_every_update_never_coalesces(void **state)
{
    (void)state;
    rv_journal *j = make_journal(true);
    for (int i = 0; i < 10; i++)
        assert_int_equal(rv_journal_update_flags(j, 0, 1, 1, (uint32_t)i & RV_PROJECTION_FLAGS_ALL, NULL), RV_OK);
    assert_int_equal(pending_count(j), 10);
    assert_int_equal(rv_journal_get_stats(j).coalesced, 0);
    rv_journal_destroy(j);
}

/* During a drain, the observer appends updates: one for the projection just taken (it must
 * get a new entry after the current sequence, never merge into the taken one) and one for
 * a projection whose update is still ahead in the same batch (it may merge there). */
typedef struct drain_appender {
    rv_journal *journal;
    rv_delta taken[16];
    uint32_t count;
} drain_appender;

static void append_during_drain(const rv_delta *d, rv_delta_outcome o, void *user)
{
    drain_appender *a = user;
    a->taken[a->count++] = *d;
    (void)o;
    if (d->kind == RV_DELTA_UPDATE_TRANSFORM && d->key == 1 && d->projection.transform.position[0] == 1.0f) {
        rv_projection_transform t = transform_at(5.0f);
        assert_int_equal(rv_journal_update_transform(a->journal, 0, 1, 1, &t, NULL), RV_OK);
        t = transform_at(6.0f);
        assert_int_equal(rv_journal_update_transform(a->journal, 0, 2, 1, &t, NULL), RV_OK);
    }
}

static void test_append_during_a_drain_never_merges_into_a_taken_entry(void **state)
{
    (void)state;
    drain_appender a;
    memset(&a, 0, sizeof a);
    a.journal = make_journal(false);
    rv_render_scene_desc desc = {0};
    desc.observer = append_during_drain;
    desc.observer_user = &a;
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(&desc, &s), RV_OK);
    rv_projection p = projection_of(RV_PROJECTION_DYNAMIC);
    assert_int_equal(rv_journal_register(a.journal, 0, 1, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_register(a.journal, 0, 2, 1, &p, NULL), RV_OK);
    rv_projection_transform t = transform_at(1.0f);
    assert_int_equal(rv_journal_update_transform(a.journal, 0, 1, 1, &t, NULL), RV_OK); /* seq 3 */
    t = transform_at(2.0f);
    assert_int_equal(rv_journal_update_transform(a.journal, 0, 2, 1, &t, NULL), RV_OK); /* seq 4 */
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply(s, a.journal, &c), RV_OK);
    /* Taken: 1, 2, 3 (key 1 at x=1), 4 (key 2, merged to x=6), 5 (key 1 at x=5). */
    assert_int_equal(a.count, 5);
    assert_int_equal(c.applied, 5);
    for (uint32_t i = 0; i < a.count; i++)
        assert_int_equal(a.taken[i].sequence, i + 1);
    assert_true(a.taken[3].projection.transform.position[0] == 6.0f);
    assert_int_equal(a.taken[4].key, 1);
    assert_true(a.taken[4].projection.transform.position[0] == 5.0f);
    assert_int_equal(rv_journal_get_stats(a.journal).coalesced, 1);
    uint32_t slot;
    rv_projection_record r;
    assert_int_equal(rv_render_scene_find(s, 1, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(s, slot, &r), RV_OK);
    assert_true(r.projection.transform.position[0] == 5.0f);
    assert_int_equal(rv_render_scene_find(s, 2, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(s, slot, &r), RV_OK);
    assert_true(r.projection.transform.position[0] == 6.0f);
    rv_render_scene_destroy(s);
    rv_journal_destroy(a.journal);
}

/* ---- coalescing equivalence ---- */

typedef struct echo {
    rv_journal *journal;
    uint64_t appended;
} echo;

/* On every applied Register, append (from inside the drain) a transform and a flags update
 * of the new projection, derived from its key and incarnation only. */
static void echo_register(const rv_delta *d, rv_delta_outcome o, void *user)
{
    echo *e = user;
    if (o != RV_DELTA_APPLIED || d->kind != RV_DELTA_REGISTER)
        return;
    rv_projection_transform t = transform_at((float)(d->key * 7 + d->incarnation));
    assert_int_equal(rv_journal_update_transform(e->journal, d->generation, d->key, d->incarnation, &t, NULL), RV_OK);
    uint32_t flags = (uint32_t)(d->key + d->incarnation) & RV_PROJECTION_FLAGS_ALL;
    assert_int_equal(rv_journal_update_flags(e->journal, d->generation, d->key, d->incarnation, flags, NULL), RV_OK);
    e->appended += 2;
}

static rv_delta random_delta(uint64_t *rng, uint32_t keys, uint32_t generation)
{
    rv_delta d;
    memset(&d, 0, sizeof d);
    uint64_t roll = rvt_next(rng) % 100;
    if (roll == 0 && rvt_next(rng) % 4 == 0) {
        d.kind = RV_DELTA_CLEAR_GENERATION;
        d.generation = generation + (uint32_t)(rvt_next(rng) % 2);
        return d;
    }
    d.key = rvt_next(rng) % keys;
    d.incarnation = 1 + (rvt_next(rng) % 10 == 0);
    d.generation = generation + (rvt_next(rng) % 50 == 0);
    if (roll < 6) {
        d.kind = RV_DELTA_REGISTER;
        d.projection = projection_of((rv_projection_class)(1 + rvt_next(rng) % 3));
        d.projection.bucket.cell = rvt_next(rng) % 4;
        d.projection.transform.position[1] = (float)(rvt_next(rng) % 1000);
    } else if (roll < 9) {
        d.kind = RV_DELTA_UNREGISTER;
    } else if (roll < 12) {
        d.kind = RV_DELTA_REBUCKET;
        d.projection.bucket.projection_class = (rv_projection_class)(1 + rvt_next(rng) % 3);
        d.projection.bucket.cell = rvt_next(rng) % 4;
    } else if (roll < 55) {
        d.kind = RV_DELTA_UPDATE_TRANSFORM;
        d.projection.transform = transform_at((float)(rvt_next(rng) % 1000));
    } else if (roll < 80) {
        d.kind = RV_DELTA_UPDATE_FLAGS;
        d.projection.flags = (uint32_t)(rvt_next(rng) & RV_PROJECTION_FLAGS_ALL);
    } else {
        d.kind = RV_DELTA_UPDATE_APPEARANCE;
        d.projection.appearance.mesh = rvt_next(rng) % 9;
        d.projection.appearance.material_variant = rvt_next(rng) % 9;
    }
    return d;
}

static void test_coalescing_gives_the_same_scene_as_applying_every_delta(void **state)
{
    (void)state;
    const uint32_t keys = 24, deltas = RVT_HEAVY(200000, 50000);
    echo merged_echo = { make_journal(false), 0 }, plain_echo = { make_journal(true), 0 };
    /* A third journal remembers only 4 keys for coalescing: keys keep pushing each other out. */
    rv_journal_desc small = {0};
    small.coalescing_keys = 4;
    echo small_echo = { NULL, 0 };
    assert_int_equal(rv_journal_create(&small, &small_echo.journal), RV_OK);
    rv_render_scene_desc desc = {0};
    desc.observer = echo_register;
    desc.observer_user = &merged_echo;
    rv_render_scene *merged, *plain, *crowded;
    assert_int_equal(rv_render_scene_create(&desc, &merged), RV_OK);
    desc.observer_user = &plain_echo;
    assert_int_equal(rv_render_scene_create(&desc, &plain), RV_OK);
    desc.observer_user = &small_echo;
    assert_int_equal(rv_render_scene_create(&desc, &crowded), RV_OK);
    uint64_t rng = 1234;
    uint32_t generation = 0, left = 0;
    for (uint32_t i = 0; i < deltas; i++) {
        rv_delta d = random_delta(&rng, keys, generation);
        if (d.kind == RV_DELTA_CLEAR_GENERATION && d.generation > generation)
            generation = d.generation;
        assert_int_equal(rv_journal_append(merged_echo.journal, &d, NULL), RV_OK);
        assert_int_equal(rv_journal_append(plain_echo.journal, &d, NULL), RV_OK);
        assert_int_equal(rv_journal_append(small_echo.journal, &d, NULL), RV_OK);
        if (left == 0)
            left = 1 + (uint32_t)(rvt_next(&rng) % 400);
        if (--left == 0) {
            assert_int_equal(rv_render_scene_apply(merged, merged_echo.journal, NULL), RV_OK);
            assert_int_equal(rv_render_scene_apply(plain, plain_echo.journal, NULL), RV_OK);
            assert_int_equal(rv_render_scene_apply(crowded, small_echo.journal, NULL), RV_OK);
            assert_same_digest(merged, plain);
            assert_same_digest(crowded, plain);
            rv_projection_counts a = rv_render_scene_counts(merged), b = rv_render_scene_counts(plain);
            assert_memory_equal(&a, &b, sizeof a);
        }
    }
    rv_journal_stats ms = rv_journal_get_stats(merged_echo.journal);
    rv_journal_stats ps = rv_journal_get_stats(plain_echo.journal);
    /* Coalescing really happened (including merges made from inside a drain), and the
     * reentrant appends were the same in both. */
    assert_true(ms.coalesced > deltas / 5);
    assert_int_equal(ps.coalesced, 0);
    assert_true(ms.drained < ps.drained);
    assert_int_equal(merged_echo.appended, plain_echo.appended);
    rv_journal_stats cs = rv_journal_get_stats(small_echo.journal);
    assert_true(cs.coalesced > 0 && cs.coalesced < ms.coalesced);
    assert_true(merged_echo.appended > 1000);
    rv_render_scene_destroy(merged);
    rv_render_scene_destroy(plain);
    rv_render_scene_destroy(crowded);
    rv_journal_destroy(small_echo.journal);
    rv_journal_destroy(merged_echo.journal);
    rv_journal_destroy(plain_echo.journal);
}

/* A journal remembering one key has a single coalescing record, so which appends merge
 * follows from the header's rules alone: an update merges when the record is its key's,
 * generation's and incarnation's, this tick, and holds an entry of its channel; any other
 * update takes a new entry and (when the record is another identity's) takes the record; an
 * edge of the record's key empties it; a ClearGeneration or a drain forgets it. A model of
 * that one record predicts every append's sequence and the merge count, over 300 keys (many
 * share any few bits of their hashes) and enough ticks that every 8-bit counter wraps. */
static void test_a_one_key_table_merges_exactly_as_its_record_allows(void **state)
{
    (void)state;
    rv_journal_desc desc = {0};
    desc.coalescing_keys = 1;
    rv_journal *j;
    assert_int_equal(rv_journal_create(&desc, &j), RV_OK);
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    struct {
        bool current;
        uint64_t key;
        uint32_t generation, incarnation;
        bool has[3];
        uint64_t sequence[3];
    } record = { 0 };
    uint64_t rng = 99, next_sequence = 1, merges = 0;
    const uint32_t ticks = RVT_HEAVY(1200, 600);
    for (uint32_t tick = 0; tick < ticks; tick++) {
        uint32_t appends = 1 + (uint32_t)(rvt_next(&rng) % 12);
        for (uint32_t a = 0; a < appends; a++) {
            uint64_t roll = rvt_next(&rng) % 20;
            /* Few keys within a tick, so identities repeat and merge. */
            uint64_t key = (tick * 7 + rvt_next(&rng) % 3) % 300;
            uint32_t generation = (uint32_t)(rvt_next(&rng) % 8 == 0), incarnation = 1 + (rvt_next(&rng) % 8 == 0);
            uint64_t sequence = 0, expect;
            if (roll == 0) {
                assert_int_equal(rv_journal_clear_generation(j, 0, &sequence), RV_OK);
                expect = next_sequence++;
                record.current = false;
            } else if (roll < 3) {
                assert_int_equal(rv_journal_unregister(j, generation, key, incarnation, &sequence), RV_OK);
                expect = next_sequence++;
                if (record.current && record.key == key)
                    record.has[0] = record.has[1] = record.has[2] = false;
            } else {
                int channel = (int)(roll % 3);
                rv_projection_transform t = transform_at((float)a);
                rv_projection_appearance ap = { a, tick };
                if (channel == 0)
                    assert_int_equal(rv_journal_update_transform(j, generation, key, incarnation, &t, &sequence), RV_OK);
                else if (channel == 1)
                    assert_int_equal(rv_journal_update_appearance(j, generation, key, incarnation, &ap, &sequence), RV_OK);
                else
                    assert_int_equal(rv_journal_update_flags(j, generation, key, incarnation, 0, &sequence), RV_OK);
                bool same = record.current && record.key == key && record.generation == generation &&
                            record.incarnation == incarnation;
                if (same && record.has[channel]) {
                    expect = record.sequence[channel];
                    merges++;
                } else {
                    expect = next_sequence++;
                    if (!same) {
                        record.current = true;
                        record.key = key;
                        record.generation = generation;
                        record.incarnation = incarnation;
                        record.has[0] = record.has[1] = record.has[2] = false;
                    }
                    record.has[channel] = true;
                    record.sequence[channel] = expect;
                }
            }
            assert_int_equal(sequence, expect);
        }
        assert_int_equal(rv_journal_get_stats(j).coalesced, merges);
        assert_int_equal(rv_render_scene_apply(s, j, NULL), RV_OK);
        record.current = false;
    }
    assert_true(merges > ticks / 4); /* merging did happen, in many ticks */
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
}

/* ---- out of memory ---- */

typedef struct journal_object {
    rv_allocator allocator;
    rv_journal *journal;
} journal_object;

static uint64_t journal_fingerprint(void *object)
{
    journal_object *o = object;
    if (!o->journal)
        return 0;
    uint32_t n;
    const rv_delta *d = rv_journal_pending(o->journal, &n);
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)d;
    for (size_t i = 0; i < (size_t)n * sizeof *d; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    rv_journal_stats st = rv_journal_get_stats(o->journal);
    /* The memory figures too: a failed append must not leave room grown behind it. */
    rv_journal_memory m = rv_journal_get_memory(o->journal);
    return h ^ (st.appended * 31 + st.coalesced * 7 + st.next_sequence * 131 + n) ^ (m.total_bytes << 20) ^
           (m.buffer_bytes << 40);
}

static void journal_teardown(void *object)
{
    journal_object *o = object;
    rv_journal_destroy(o->journal);
    free(o);
}

/* A journal whose buffer is full. */
static void *setup_full_journal(const rv_allocator *allocator)
{
    journal_object *o = calloc(1, sizeof *o);
    o->allocator = *allocator;
    rv_journal_desc desc = {0};
    desc.allocator = *allocator;
    desc.initial_capacity = 8;
    if (rv_journal_create(&desc, &o->journal) != RV_OK)
        return NULL;
    for (uint64_t k = 0; k < 8; k++)
        rv_journal_update_flags(o->journal, 0, k, 1, 0, NULL);
    return o;
}

static rv_result call_append_new_key(void *object)
{
    journal_object *o = object;
    return rv_journal_update_flags(o->journal, 0, 100, 1, RV_PROJECTION_HIDDEN, NULL);
}

static rv_result call_register_into_a_cell(void *object)
{
    journal_object *o = object;
    rv_projection p = projection_of(RV_PROJECTION_CELL_STATIC);
    return rv_journal_register(o->journal, 0, 100, 1, &p, NULL); /* also its first cell entry */
}

static rv_result call_append_structural(void *object)
{
    journal_object *o = object;
    return rv_journal_unregister(o->journal, 0, 100, 1, NULL);
}

static void *setup_no_journal(const rv_allocator *allocator)
{
    journal_object *o = calloc(1, sizeof *o);
    o->allocator = *allocator;
    return o;
}

static rv_result call_create_journal(void *object)
{
    journal_object *o = object;
    rv_journal_desc desc = {0};
    desc.allocator = o->allocator;
    return rv_journal_create(&desc, &o->journal);
}

static void test_out_of_memory_at_each_allocation_leaves_the_journal_unchanged(void **state)
{
    (void)state;
    const rvt_sweep grow_update = { "append an update that grows the buffer", setup_full_journal,
                                    call_append_new_key, journal_fingerprint, journal_teardown };
    const rvt_sweep grow_cell = { "register into a cell", setup_full_journal, call_register_into_a_cell,
                                  journal_fingerprint, journal_teardown };
    const rvt_sweep grow_edge = { "append an edge that grows the buffer", setup_full_journal,
                                  call_append_structural, journal_fingerprint, journal_teardown };
    const rvt_sweep create = { "create", setup_no_journal, call_create_journal, journal_fingerprint,
                               journal_teardown };
    assert_true(rvt_run_sweep(&grow_update) >= 1);
    assert_true(rvt_run_sweep(&grow_cell) >= 2);
    assert_true(rvt_run_sweep(&grow_edge) >= 1);
    assert_true(rvt_run_sweep(&create) >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends_get_strictly_increasing_sequences),
        cmocka_unit_test(test_pending_deltas_hold_only_their_channel),
        cmocka_unit_test(test_append_refuses_malformed_payloads_and_changes_nothing),
        cmocka_unit_test(test_append_accepts_exactly_the_deltas_validation_accepts),
        cmocka_unit_test(test_stored_entries_hold_zero_padding_whatever_the_host_left_there),
        cmocka_unit_test(test_re_appending_a_pending_entry_merges_it_unchanged),
        cmocka_unit_test(test_re_appending_pending_entries_while_the_buffer_grows),
        cmocka_unit_test(test_nan_or_infinity_in_any_transform_number_is_refused),
        cmocka_unit_test(test_transform_verdicts_on_zeros_and_subnormals_hold_under_daz),
        cmocka_unit_test(test_stats_count_every_accepted_append),
        cmocka_unit_test(test_append_from_another_thread_is_refused_until_it_claims_the_journal),
        cmocka_unit_test(test_appends_of_every_kind_from_another_thread_are_refused),
        cmocka_unit_test(test_updates_of_one_channel_coalesce_within_a_tick),
        cmocka_unit_test(test_coalescing_does_not_cross_a_structural_edge),
        cmocka_unit_test(test_coalescing_needs_the_same_key_incarnation_generation_and_channel),
        cmocka_unit_test(test_updates_do_not_coalesce_across_ticks),
        cmocka_unit_test(test_a_failed_apply_keeps_the_journals_merge_targets),
        cmocka_unit_test(test_a_key_pushed_out_of_the_coalescing_table_gets_its_own_entry),
        cmocka_unit_test(test_keep_every_update_never_coalesces),
        cmocka_unit_test(test_append_during_a_drain_never_merges_into_a_taken_entry),
        cmocka_unit_test(test_coalescing_gives_the_same_scene_as_applying_every_delta),
        cmocka_unit_test(test_a_one_key_table_merges_exactly_as_its_record_allows),
        cmocka_unit_test(test_out_of_memory_at_each_allocation_leaves_the_journal_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
