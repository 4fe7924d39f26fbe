/* Hostile cases: the delta journal and the render scene. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <pthread.h>
#include <string.h>

/* ---- digests ------------------------------------------------------------------------- */

static uint64_t journal_digest(const void *object)
{
    const rv_journal *j = object;
    rv_journal_stats s = rv_journal_get_stats(j);
    rv_journal_memory m = rv_journal_get_memory(j);
    rv_alloc_stats a = rv_journal_alloc_stats(j);
    uint32_t n = 0;
    const rv_delta *pending = rv_journal_pending(j, &n);
    uint64_t f[11] = { s.appended, s.coalesced, s.drained, s.ticks, s.next_sequence, s.pending, n,
                       m.buffer_bytes, m.total_bytes, a.allocations - a.frees, a.bytes_live };
    uint64_t h = rvi_hash_bytes(7, f, sizeof f);
    /* Stored deltas are zero outside their channel (documented), padding included. */
    return n ? rvi_hash_bytes(h, pending, n * sizeof *pending) : h;
}

static uint64_t scene_digest(const void *object)
{
    rv_render_scene *s = (rv_render_scene *)object; /* the digest reuses a buffer */
    rv_scene_digest d;
    memset(&d, 0, sizeof d);
    rv_result r = rv_render_scene_digest(s, &d);
    rv_render_scene_stats st = rv_render_scene_get_stats(s);
    rv_projection_counts c = rv_render_scene_counts(s);
    rv_alloc_stats a = rv_render_scene_alloc_stats(s);
    uint64_t f[10] = { (uint64_t)r, d.hash[0], d.hash[1], d.projections, d.generation, st.totals.taken,
                       st.publishes, st.last_sequence, a.allocations - a.frees, a.bytes_live };
    uint64_t h = rvi_hash_bytes(8, f, sizeof f);
    h = rvi_hash_bytes(h, &c, sizeof c);
    /* The dirty index is not in the content digest. */
    for (uint32_t slot = 0; slot < rv_render_scene_slot_limit(s); slot++) {
        rv_projection_record rec;
        if (rv_render_scene_read(s, slot, &rec) == RV_OK) {
            uint64_t g[4] = { rec.key, rec.dirty, rec.node.id & 0xFFFFFFFFFFFFull, slot };
            h = rvi_hash_bytes(h, g, sizeof g);
        }
    }
    return h;
}

/* ---- fixture --------------------------------------------------------------------------- */

static rv_projection good_projection(rv_projection_class c)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform.rotation[3] = 1.0f;
    p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1.0f;
    p.transform.bounds[3] = 1.0f;
    p.appearance.mesh = 5;
    p.bucket.projection_class = c;
    p.bucket.cell = 3;
    p.flags = RV_PROJECTION_SELECTABLE;
    return p;
}

typedef struct jfix {
    rvt_alloc alloc;
    rv_journal *j;
    rv_render_scene *s; /* bound to world a */
    int observer_calls;
    rv_result nested[4];
} jfix;

static void observer(const rv_delta *d, rv_delta_outcome o, void *user);

/* A journal with two pending deltas, and a scene bound to world a holding keys 1 (dynamic)
 * and 2 (cell static, cell 3), published once. Both watched. */
static jfix *setup(rvh_ctx *cx)
{
    static jfix f;
    memset(&f, 0, sizeof f);
    rv_journal_desc jd = {0};
    jd.allocator = rvt_allocator(&f.alloc);
    jd.initial_capacity = 2;
    RVH_ACCEPT(cx, rv_journal_create(&jd, &f.j));
    rv_render_scene_desc sd = {0};
    sd.allocator = rvt_allocator(&f.alloc);
    sd.world = cx->a;
    sd.observer = observer;
    sd.observer_user = &f;
    RVH_ACCEPT(cx, rv_render_scene_create(&sd, &f.s));
    rv_projection dyn = good_projection(RV_PROJECTION_DYNAMIC), cell = good_projection(RV_PROJECTION_CELL_STATIC);
    RVH_ACCEPT(cx, rv_journal_register(f.j, 0, 1, 1, &dyn, NULL));
    RVH_ACCEPT(cx, rv_journal_register(f.j, 0, 2, 1, &cell, NULL));
    RVH_ACCEPT(cx, rv_render_scene_apply(f.s, f.j, NULL));
    RVH_ACCEPT(cx, rv_render_scene_publish(f.s, f.j));
    RVH_ACCEPT(cx, rv_journal_update_flags(f.j, 0, 1, 1, RV_PROJECTION_TRANSLUCENT, NULL));
    RVH_ACCEPT(cx, rv_journal_unregister(f.j, 0, 2, 1, NULL));
    rv_scene_digest d;
    RVH_ACCEPT(cx, rv_render_scene_digest(f.s, &d)); /* sizes the digest buffer */
    rvh_watch(cx, "the journal", journal_digest, f.j);
    rvh_watch(cx, "the render scene", scene_digest, f.s);
    return &f;
}

static void teardown(rvh_ctx *cx, jfix *f)
{
    rvh_unwatch(cx, f->j);
    rvh_unwatch(cx, f->s);
    rv_render_scene_destroy(f->s);
    rv_journal_destroy(f->j);
    RVH_CHECK(cx, f->alloc.live_blocks == 0 && f->alloc.live_bytes == 0);
}

/* The observer tries every call it may not make (they must answer RV_ERR_BAD_STATE). */
static void observer(const rv_delta *d, rv_delta_outcome o, void *user)
{
    jfix *f = user;
    (void)d;
    (void)o;
    if (f->observer_calls++ == 0) {
        rv_delta none[1];
        memset(none, 0, sizeof none);
        f->nested[0] = rv_render_scene_apply(f->s, f->j, NULL);
        f->nested[1] = rv_render_scene_apply_deltas(f->s, none, 0, NULL);
        f->nested[2] = rv_render_scene_publish(f->s, NULL);
        f->nested[3] = rv_journal_claim_thread(f->j);
    }
}

/* Projections and transforms that break one rule each, with the code. */
typedef struct bad_projection {
    rv_projection p;
    rv_result code;
} bad_projection;

static int bad_projections(bad_projection out[40], uint64_t key)
{
    int n = 0;
    rv_projection g = good_projection(RV_PROJECTION_DYNAMIC);
    for (int b = 0; b < RVH_NONFINITE; b++) {
        float *fields[4] = { &g.transform.position[1], &g.transform.rotation[2], &g.transform.scale[0],
                             &g.transform.bounds[3] };
        for (int k = 0; k < 4; k++) {
            out[n] = (bad_projection){ g, RV_ERR_NOT_FINITE };
            float *target = (float *)((char *)&out[n].p + ((char *)fields[k] - (char *)&g));
            *target = rvh_nonfinite[b];
            /* -inf radius: negative and not finite; finiteness is checked first. */
            n++;
        }
    }
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    memset(out[n++].p.transform.rotation, 0, sizeof g.transform.rotation);
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.transform.bounds[3] = -1.0f;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.transform.bounds_space = (rv_bounds_space)2;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n].p.transform.bounds_space = RV_BOUNDS_WORLD;
    out[n++].p.transform.scale[1] = 0.0f;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.bucket.projection_class = RV_PROJECTION_CLASS_NONE;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.bucket.projection_class = RV_PROJECTION_CLASS_COUNT_;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.bucket.projection_class = (rv_projection_class)-1;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.bucket.parent_key = 9; /* a parent for a class that has none */
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n].p.bucket.projection_class = RV_PROJECTION_EQUIPPED_CHILD;
    out[n++].p.bucket.parent_key = key; /* its own parent */
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.flags = 1u << 4;
    out[n] = (bad_projection){ g, RV_ERR_INVALID_ARG };
    out[n++].p.flags = UINT32_MAX;
    return n;
}

/* ---- journal ------------------------------------------------------------------------- */

void hostile_rv_journal_create(rvh_ctx *cx)
{
    rv_journal *sentinel = (rv_journal *)(uintptr_t)0x5a5a5a5a, *out = sentinel;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_create(NULL, NULL));
    rvt_alloc none = { .fail_at = 1 };
    rv_journal_desc d = {0};
    d.allocator = rvt_allocator(&none);
    RVH_REJECT(cx, RV_ERR_OUT_OF_MEMORY, rv_journal_create(&d, &out));
    RVH_CHECK(cx, out == sentinel && none.live_blocks == 0);
}

void hostile_rv_journal_destroy(rvh_ctx *cx)
{
    rv_journal_destroy(NULL);
    jfix *f = setup(cx);
    teardown(cx, f); /* with deltas pending: nothing leaks */
}

typedef struct other_thread_call {
    rv_journal *j;
    rv_render_scene *s;
    rv_result appended, applied;
} other_thread_call;

static void *from_other_thread(void *arg)
{
    other_thread_call *c = arg;
    rv_projection p = good_projection(RV_PROJECTION_DYNAMIC);
    c->appended = rv_journal_register(c->j, 0, 77, 1, &p, NULL);
    c->applied = rv_render_scene_apply(c->s, c->j, NULL);
    return NULL;
}

void hostile_rv_journal_claim_thread(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_claim_thread(NULL));
    /* Appends and drains from a thread that does not own the journal: refused, nothing
     * changed (the watched digests are compared around the thread's life). */
    rvh_before(cx);
    other_thread_call c = { f->j, f->s, RV_OK, RV_OK };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, from_other_thread, &c), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    rvh_after(cx, "register from another thread", __LINE__, c.appended, RV_ERR_INVARIANT);
    RVH_CHECK(cx, c.applied == RV_ERR_INVARIANT);
    teardown(cx, f);
}

void hostile_rv_journal_register(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_projection p = good_projection(RV_PROJECTION_DYNAMIC);
    uint64_t seq = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_register(NULL, 0, 9, 1, &p, &seq));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_register(f->j, 0, 9, 1, NULL, &seq));
    bad_projection bad[40];
    int n = bad_projections(bad, 9);
    for (int i = 0; i < n; i++)
        RVH_REJECT(cx, bad[i].code, rv_journal_register(f->j, 0, 9, 1, &bad[i].p, &seq));
    RVH_CHECK(cx, seq == 0xA5A5A5A5u);
    /* Extreme but valid identities. */
    RVH_ACCEPT(cx, rv_journal_register(f->j, UINT32_MAX, UINT64_MAX, UINT32_MAX, &p, NULL));
    RVH_ACCEPT(cx, rv_journal_register(f->j, 0, 0, 0, &p, NULL));
    teardown(cx, f);
}

void hostile_rv_journal_update_transform(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_projection good = good_projection(RV_PROJECTION_DYNAMIC);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_transform(NULL, 0, 1, 1, &good.transform, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_transform(f->j, 0, 1, 1, NULL, NULL));
    bad_projection bad[40];
    int n = bad_projections(bad, 1);
    for (int i = 0; i < n; i++) {
        rv_projection_transform t = bad[i].p.transform;
        rv_projection_transform g = good_projection(RV_PROJECTION_DYNAMIC).transform;
        if (memcmp(&t, &g, sizeof t) != 0) /* only the transform rules apply here */
            RVH_REJECT(cx, bad[i].code, rv_journal_update_transform(f->j, 0, 1, 1, &t, NULL));
    }
    teardown(cx, f);
}

void hostile_rv_journal_update_appearance(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_projection_appearance a = { UINT64_MAX, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_appearance(NULL, 0, 1, 1, &a, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_appearance(f->j, 0, 1, 1, NULL, NULL));
    RVH_ACCEPT(cx, rv_journal_update_appearance(f->j, 0, 1, 1, &a, NULL)); /* any ids are valid */
    teardown(cx, f);
}

void hostile_rv_journal_update_flags(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_flags(NULL, 0, 1, 1, 0, NULL));
    for (uint32_t bit = 4; bit < 32; bit++)
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_update_flags(f->j, 0, 1, 1, 1u << bit, NULL));
    teardown(cx, f);
}

void hostile_rv_journal_rebucket(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_projection_bucket b = { RV_PROJECTION_OUTDOOR_STATIC, 0, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_rebucket(NULL, 0, 1, 1, &b, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_rebucket(f->j, 0, 1, 1, NULL, NULL));
    bad_projection bad[40];
    int n = bad_projections(bad, 1);
    for (int i = 0; i < n; i++) {
        rv_projection_bucket g = good_projection(RV_PROJECTION_DYNAMIC).bucket, *q = &bad[i].p.bucket;
        /* field by field: the struct has padding */
        if (q->projection_class != g.projection_class || q->cell != g.cell || q->parent_key != g.parent_key)
            RVH_REJECT(cx, bad[i].code, rv_journal_rebucket(f->j, 0, 1, 1, &bad[i].p.bucket, NULL));
    }
    teardown(cx, f);
}

void hostile_rv_journal_unregister(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_unregister(NULL, 0, 1, 1, NULL));
    RVH_ACCEPT(cx, rv_journal_unregister(f->j, UINT32_MAX, UINT64_MAX, UINT32_MAX, NULL)); /* rejected at apply */
    teardown(cx, f);
}

void hostile_rv_journal_clear_generation(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_clear_generation(NULL, 1, NULL));
    teardown(cx, f);
}

void hostile_rv_journal_append(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_delta d;
    memset(&d, 0, sizeof d);
    d.kind = RV_DELTA_REGISTER;
    d.key = 9;
    d.projection = good_projection(RV_PROJECTION_DYNAMIC);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_append(NULL, &d, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_append(f->j, NULL, NULL));
    const int kinds[4] = { RV_DELTA_NONE, RV_DELTA_KIND_COUNT_, -1, 1000 };
    for (int i = 0; i < 4; i++) {
        rv_delta k = d;
        k.kind = (rv_delta_kind)kinds[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_journal_append(f->j, &k, NULL));
    }
    bad_projection bad[40];
    int n = bad_projections(bad, 9);
    for (int i = 0; i < n; i++) {
        rv_delta k = d;
        k.projection = bad[i].p;
        RVH_REJECT(cx, bad[i].code, rv_journal_append(f->j, &k, NULL));
    }
    /* Garbage outside the kind's channel is ignored (and stored as zero). */
    rv_delta u;
    memset(&u, 0xFF, sizeof u);
    u.kind = RV_DELTA_UNREGISTER;
    u.generation = 0;
    RVH_ACCEPT(cx, rv_journal_append(f->j, &u, NULL));
    uint32_t count;
    const rv_delta *p = rv_journal_pending(f->j, &count);
    RVH_CHECK(cx, count == 3 && p[2].projection.flags == 0 && p[2].projection.transform.bounds[3] == 0.0f);
    teardown(cx, f);
}

void hostile_rv_journal_pending(rvh_ctx *cx)
{
    uint32_t n = 7;
    RVH_CHECK(cx, rv_journal_pending(NULL, &n) == NULL && n == 0);
    RVH_CHECK(cx, rv_journal_pending(NULL, NULL) == NULL);
}

void hostile_rv_journal_get_stats(rvh_ctx *cx)
{
    rv_journal_stats s = rv_journal_get_stats(NULL);
    RVH_CHECK(cx, s.appended == 0 && s.pending == 0 && s.next_sequence == 0);
}

void hostile_rv_journal_get_memory(rvh_ctx *cx)
{
    rv_journal_memory m = rv_journal_get_memory(NULL);
    RVH_CHECK(cx, m.total_bytes == 0 && m.buffer_bytes == 0);
}

void hostile_rv_journal_alloc_stats(rvh_ctx *cx)
{
    rv_alloc_stats a = rv_journal_alloc_stats(NULL);
    RVH_CHECK(cx, a.allocations == 0 && a.bytes_live == 0);
}

/* ---- render scene -------------------------------------------------------------------- */

void hostile_rv_render_scene_create(rvh_ctx *cx)
{
    rv_render_scene *sentinel = (rv_render_scene *)(uintptr_t)0x5a5a5a5a, *out = sentinel;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_create(NULL, NULL));
    jfix *f = setup(cx);
    rv_render_scene_desc d = {0};
    d.world = cx->a; /* already bound to f->s */
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_render_scene_create(&d, &out));
    RVH_CHECK(cx, out == sentinel);
    teardown(cx, f);
}

void hostile_rv_render_scene_destroy(rvh_ctx *cx)
{
    rv_render_scene_destroy(NULL);
    jfix *f = setup(cx);
    uint32_t nodes = rv_world_scene_stats(cx->a).nodes;
    teardown(cx, f); /* its nodes go with it */
    RVH_CHECK(cx, rv_world_scene_stats(cx->a).nodes == nodes - 2);
}

void hostile_rv_render_scene_apply(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_apply(NULL, f->j, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_apply(f->s, NULL, NULL));
    /* From the observer: refused. */
    rvh_unwatch(cx, f->j);
    rvh_unwatch(cx, f->s);
    f->observer_calls = 0;
    memset(f->nested, 0, sizeof f->nested);
    RVH_ACCEPT(cx, rv_render_scene_apply(f->s, f->j, NULL));
    RVH_CHECK(cx, f->observer_calls == 2);
    for (int i = 0; i < 4; i++)
        RVH_CHECK(cx, f->nested[i] == RV_ERR_BAD_STATE);
    rvh_watch(cx, "the journal", journal_digest, f->j);
    rvh_watch(cx, "the render scene", scene_digest, f->s);
    teardown(cx, f);
}

void hostile_rv_render_scene_apply_deltas(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_apply_deltas(NULL, NULL, 0, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_apply_deltas(f->s, NULL, 1, NULL));
    /* Malformed recorded deltas are rejected one by one (counted, not errors): the content
     * stays as it was. */
    rv_scene_digest before, after;
    RVH_ACCEPT(cx, rv_render_scene_digest(f->s, &before));
    bad_projection bad[40];
    int n = bad_projections(bad, 9);
    rv_delta ds[40];
    for (int i = 0; i < n; i++) {
        memset(&ds[i], 0, sizeof ds[i]);
        ds[i].sequence = 100 + (uint64_t)i;
        ds[i].kind = RV_DELTA_REGISTER;
        ds[i].key = 9;
        ds[i].projection = bad[i].p;
    }
    rv_apply_counts c;
    RVH_ACCEPT(cx, rv_render_scene_apply_deltas(f->s, ds, (uint32_t)n, &c));
    RVH_CHECK(cx, c.taken == (uint64_t)n && c.rejected[RV_DELTA_REJECTED_INVALID] == (uint64_t)n);
    RVH_ACCEPT(cx, rv_render_scene_digest(f->s, &after));
    RVH_CHECK(cx, memcmp(&before, &after, sizeof before) == 0);
    teardown(cx, f);
}

void hostile_rv_render_scene_publish(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_publish(NULL, f->j));
    /* Deltas left in the journal: refused, counted (carry_over), dirty index kept. */
    rv_slot_list dirty_before, dirty_after;
    RVH_ACCEPT(cx, rv_render_scene_index(f->s, RV_INDEX_DIRTY, &dirty_before));
    uint32_t dirty_count = dirty_before.count;
    uint64_t carry = rv_render_scene_get_stats(f->s).carry_over;
    RVH_CHECK(cx, rv_render_scene_publish(f->s, f->j) == RV_ERR_INVARIANT);
    RVH_ACCEPT(cx, rv_render_scene_index(f->s, RV_INDEX_DIRTY, &dirty_after));
    RVH_CHECK(cx, dirty_after.count == dirty_count && rv_render_scene_get_stats(f->s).carry_over == carry + 1);
    teardown(cx, f);
}

void hostile_rv_render_scene_find(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    uint32_t slot = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_find(NULL, 1, &slot));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_find(f->s, 1, NULL));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_find(f->s, 99, &slot));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_find(f->s, UINT64_MAX, &slot));
    RVH_CHECK(cx, slot == 0xA5A5A5A5u);
    teardown(cx, f);
}

void hostile_rv_render_scene_read(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_projection_record rec;
    rvh_poison(&rec, sizeof rec);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_read(NULL, 0, &rec));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_read(f->s, 0, NULL));
    uint32_t limit = rv_render_scene_slot_limit(f->s);
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_read(f->s, limit, &rec));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_read(f->s, UINT32_MAX, &rec));
    RVH_CHECK(cx, rvh_is_poisoned(&rec, sizeof rec));
    teardown(cx, f);
}

void hostile_rv_render_scene_slot_limit(rvh_ctx *cx)
{
    RVH_CHECK(cx, rv_render_scene_slot_limit(NULL) == 0);
}

void hostile_rv_render_scene_index(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_slot_list l = { (const uint32_t *)(uintptr_t)0x5a5a5a5a, 0xA5A5A5A5u };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_index(NULL, RV_INDEX_DYNAMIC, &l));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_index(f->s, RV_INDEX_DYNAMIC, NULL));
    const int which[4] = { RV_INDEX_NONE, RV_INDEX_COUNT_, -1, 1000 };
    for (int i = 0; i < 4; i++)
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_index(f->s, (rv_projection_index)which[i], &l));
    RVH_CHECK(cx, l.count == 0xA5A5A5A5u);
    teardown(cx, f);
}

void hostile_rv_render_scene_cell(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_slot_list l;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_cell(NULL, 3, &l));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_cell(f->s, 3, NULL));
    RVH_ACCEPT(cx, rv_render_scene_cell(f->s, UINT64_MAX, &l));
    RVH_CHECK(cx, l.count == 0);
    teardown(cx, f);
}

void hostile_rv_render_scene_counts(rvh_ctx *cx)
{
    rv_projection_counts c = rv_render_scene_counts(NULL);
    RVH_CHECK(cx, c.projections == 0 && c.dynamic == 0 && c.dirty == 0);
}

void hostile_rv_render_scene_digest(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    rv_scene_digest d;
    rvh_poison(&d, sizeof d);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_digest(NULL, &d));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_digest(f->s, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&d, sizeof d));
    teardown(cx, f);
}

void hostile_rv_render_scene_node_key(rvh_ctx *cx)
{
    jfix *f = setup(cx);
    uint64_t key = 0xA5A5A5A5u;
    uint32_t slot = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_render_scene_node_key(NULL, cx->na.root, &key, &slot));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_node_key(f->s, RV_NODE_NONE, &key, &slot));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_node_key(f->s, cx->na.root, &key, &slot)); /* a host node */
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_render_scene_node_key(f->s, cx->bad[i], &key, &slot));
    RVH_CHECK(cx, key == 0xA5A5A5A5u && slot == 0xA5A5A5A5u);
    teardown(cx, f);
}

void hostile_rv_render_scene_get_stats(rvh_ctx *cx)
{
    rv_render_scene_stats s = rv_render_scene_get_stats(NULL);
    RVH_CHECK(cx, s.publishes == 0 && s.totals.taken == 0 && s.generation == 0);
}

void hostile_rv_render_scene_get_memory(rvh_ctx *cx)
{
    rv_render_scene_memory m = rv_render_scene_get_memory(NULL);
    RVH_CHECK(cx, m.total_bytes == 0 && m.table_bytes == 0);
}

void hostile_rv_render_scene_alloc_stats(rvh_ctx *cx)
{
    rv_alloc_stats a = rv_render_scene_alloc_stats(NULL);
    RVH_CHECK(cx, a.allocations == 0 && a.bytes_live == 0);
}
