/* Journal benchmarks: journal_apply_1m and journal_steady_100k_1pct. */
#include "bench_util.h"

#include "rvis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    KEYS = 100000,
    CELLS = 1024,
    APPLY_DELTAS = 1000000,
    APPLY_TICK = 10000,
    STEADY_FRAMES = 100,
    STEADY_CHANGES = 1000
};

static rv_projection_transform random_transform(rvb_rng *r)
{
    rv_projection_transform t;
    memset(&t, 0, sizeof t);
    for (int k = 0; k < 3; k++) {
        t.position[k] = rvb_uniform(r, -1000.0f, 1000.0f);
        t.scale[k] = 1.0f;
    }
    t.rotation[1] = rvb_uniform(r, -1.0f, 1.0f);
    t.rotation[3] = 1.0f;
    t.bounds[3] = rvb_uniform(r, 0.5f, 8.0f);
    return t;
}

static rv_projection random_projection(rvb_rng *r, uint64_t key)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform = random_transform(r);
    p.appearance.mesh = rvb_next(r) % 5000;
    p.appearance.material_variant = rvb_next(r) % 8;
    p.bucket.projection_class = (rv_projection_class)(1 + rvb_next(r) % 4);
    p.bucket.cell = rvb_next(r) % CELLS;
    if (p.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD)
        p.bucket.parent_key = (key + 1 + rvb_next(r) % (KEYS - 1)) % KEYS;
    p.flags = (uint32_t)(rvb_next(r) & RV_PROJECTION_FLAGS_ALL);
    return p;
}

/* The state a delta stream is generated against: which keys live, under which incarnation,
 * with live and dead keys kept in two swap-remove lists. */
typedef struct key_state {
    uint32_t incarnation[KEYS];
    uint32_t where[KEYS];      /* position in live or dead */
    bool live[KEYS];
    uint32_t live_keys[KEYS], dead_keys[KEYS];
    uint32_t live_count, dead_count;
} key_state;

static void key_state_init(key_state *k)
{
    memset(k, 0, sizeof *k);
    for (uint32_t i = 0; i < KEYS; i++) {
        k->dead_keys[i] = i;
        k->where[i] = i;
    }
    k->dead_count = KEYS;
}

static void move_key(key_state *k, uint32_t key, bool to_live)
{
    uint32_t *from = to_live ? k->dead_keys : k->live_keys, *to = to_live ? k->live_keys : k->dead_keys;
    uint32_t *from_count = to_live ? &k->dead_count : &k->live_count, *to_count = to_live ? &k->live_count : &k->dead_count;
    uint32_t p = k->where[key], last = from[--*from_count];
    from[p] = last;
    k->where[last] = p;
    k->where[key] = *to_count;
    to[(*to_count)++] = key;
    k->live[key] = to_live;
}

/* One delta valid for the state it meets, from the mix: 10 % Register, 10 %
 * Unregister, 60 % UpdateTransform, 10 % UpdateFlags, 10 % UpdateAppearance. */
static rv_delta next_delta(rvb_rng *r, key_state *k)
{
    rv_delta d;
    memset(&d, 0, sizeof d);
    uint64_t roll = rvb_next(r) % 10;
    if ((roll == 0 && k->dead_count) || k->live_count == 0) {
        uint32_t key = k->dead_keys[rvb_next(r) % k->dead_count];
        d.kind = RV_DELTA_REGISTER;
        d.key = key;
        d.incarnation = ++k->incarnation[key];
        d.projection = random_projection(r, key);
        move_key(k, key, true);
        return d;
    }
    uint32_t key = k->live_keys[rvb_next(r) % k->live_count];
    d.key = key;
    d.incarnation = k->incarnation[key];
    if (roll == 1) {
        d.kind = RV_DELTA_UNREGISTER;
        move_key(k, key, false);
    } else if (roll < 8) {
        d.kind = RV_DELTA_UPDATE_TRANSFORM;
        d.projection.transform = random_transform(r);
    } else if (roll == 8) {
        d.kind = RV_DELTA_UPDATE_FLAGS;
        d.projection.flags = (uint32_t)(rvb_next(r) & RV_PROJECTION_FLAGS_ALL);
    } else {
        d.kind = RV_DELTA_UPDATE_APPEARANCE;
        d.projection.appearance.mesh = rvb_next(r) % 5000;
        d.projection.appearance.material_variant = rvb_next(r) % 8;
    }
    return d;
}

/* A journal and scene holding `initial` registered projections (their Registers first in
 * stream, applied outside the timing). */
static int make_loaded(const rv_delta *stream, uint32_t initial, rv_journal **j, rv_render_scene **s)
{
    rv_render_scene_desc sd = {0};
    sd.initial_capacity = KEYS;
    rv_journal_desc jd = {0};
    jd.initial_capacity = APPLY_TICK;
    if (rv_journal_create(&jd, j) != RV_OK || rv_render_scene_create(&sd, s) != RV_OK)
        return 1;
    for (uint32_t i = 0; i < initial; i++)
        if (rv_journal_append(*j, &stream[i], NULL) != RV_OK)
            return 1;
    return rv_render_scene_apply(*s, *j, NULL) != RV_OK || rv_render_scene_publish(*s, *j) != RV_OK;
}

static int bench_apply_1m(rvb_ctx *ctx)
{
    const char *name = "journal_apply_1m";
    if (!rvb_begin_case(ctx, name))
        return 0;
    /* Half the keys registered beforehand, so updates and unregisters have targets. */
    const uint32_t initial = KEYS / 2;
    key_state *k = malloc(sizeof *k);
    rv_delta *stream = malloc((size_t)(initial + APPLY_DELTAS) * sizeof *stream);
    if (!k || !stream)
        return 1;
    key_state_init(k);
    rvb_rng r = { 7 };
    for (uint32_t i = 0; i < initial; i++) {
        uint32_t key = k->dead_keys[rvb_next(&r) % k->dead_count];
        memset(&stream[i], 0, sizeof stream[i]);
        stream[i].kind = RV_DELTA_REGISTER;
        stream[i].key = key;
        stream[i].incarnation = ++k->incarnation[key];
        stream[i].projection = random_projection(&r, key);
        move_key(k, key, true);
    }
    for (uint32_t i = 0; i < APPLY_DELTAS; i++)
        stream[initial + i] = next_delta(&r, k);
    int reps = ctx->reps < 32 ? ctx->reps : 32;
    double t[32];
    rv_apply_counts total = {0};
    for (int rep = 0; rep < reps; rep++) {
        rv_journal *j;
        rv_render_scene *s;
        if (make_loaded(stream, initial, &j, &s))
            return 1;
        const rv_delta *d = stream + initial;
        memset(&total, 0, sizeof total);
        uint64_t t0 = rvb_now_ns();
        for (uint32_t tick = 0; tick < APPLY_DELTAS; tick += APPLY_TICK) {
            for (uint32_t i = tick; i < tick + APPLY_TICK; i++)
                if (rv_journal_append(j, &d[i], NULL) != RV_OK)
                    return 1;
            rv_apply_counts c;
            if (rv_render_scene_apply(s, j, &c) != RV_OK)
                return 1;
            total.taken += c.taken;
            total.applied += c.applied;
        }
        uint64_t t1 = rvb_now_ns();
        t[rep] = (double)(t1 - t0) / APPLY_DELTAS;
        rv_render_scene_destroy(s);
        rv_journal_destroy(j);
    }
    /* Every delta was valid for the state it met (a coalesced update is taken once). */
    if (total.applied != total.taken) {
        fprintf(stderr, "journal_apply_1m: %llu of %llu deltas rejected\n",
                (unsigned long long)(total.taken - total.applied), (unsigned long long)total.taken);
        return 1;
    }
    char extra[128];
    snprintf(extra, sizeof extra, ", \"deltas\": %d, \"keys\": %d, \"tick\": %d, \"target\": 50", APPLY_DELTAS, KEYS,
             APPLY_TICK);
    rvb_report(ctx, name, "ns/delta", rvb_median(t, reps), -1.0, extra);
    free(stream);
    free(k);
    return 0;
}

/* ---- journal_steady_100k_1pct ---- */

/* The old path the seed retires: the projections in a plain table, changes written in
 * place, and every index rebuilt by scanning every projection each frame (per-cell lists
 * by a counting sort over the cell ids). */
typedef struct plain_row {
    rv_projection projection;
    uint32_t incarnation;
} plain_row;

typedef struct plain_scene {
    plain_row *rows;            /* by key */
    uint32_t *outdoor, *dynamic, *translucent, *selectable, *light;
    uint32_t outdoor_count, dynamic_count, translucent_count, selectable_count, light_count;
    uint32_t *cell_start;       /* CELLS + 1 offsets into cell_slots */
    uint32_t *cell_slots;
} plain_scene;

__attribute__((noinline)) static void plain_frame(plain_scene *p, const rv_delta *changes, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const rv_delta *d = &changes[i];
        plain_row *row = &p->rows[d->key];
        if (row->incarnation != d->incarnation)
            continue;
        if (d->kind == RV_DELTA_UPDATE_TRANSFORM)
            row->projection.transform = d->projection.transform;
        else
            row->projection.flags = d->projection.flags;
    }
    p->outdoor_count = p->dynamic_count = p->translucent_count = p->selectable_count = p->light_count = 0;
    memset(p->cell_start, 0, (CELLS + 1) * sizeof *p->cell_start);
    for (uint32_t k = 0; k < KEYS; k++) {
        const rv_projection *q = &p->rows[k].projection;
        switch (q->bucket.projection_class) {
        case RV_PROJECTION_OUTDOOR_STATIC: p->outdoor[p->outdoor_count++] = k; break;
        case RV_PROJECTION_CELL_STATIC: p->cell_start[q->bucket.cell + 1]++; break;
        default: p->dynamic[p->dynamic_count++] = k; break;
        }
        if (q->flags & RV_PROJECTION_TRANSLUCENT)
            p->translucent[p->translucent_count++] = k;
        if (q->flags & RV_PROJECTION_SELECTABLE)
            p->selectable[p->selectable_count++] = k;
        if (q->flags & RV_PROJECTION_LIGHT_CANDIDATE)
            p->light[p->light_count++] = k;
    }
    for (uint32_t c = 0; c < CELLS; c++)
        p->cell_start[c + 1] += p->cell_start[c];
    for (uint32_t k = 0; k < KEYS; k++) {
        const rv_projection *q = &p->rows[k].projection;
        if (q->bucket.projection_class == RV_PROJECTION_CELL_STATIC)
            p->cell_slots[p->cell_start[q->bucket.cell]++] = k;
    }
    for (uint32_t c = CELLS; c > 0; c--) /* shift the filled ends back to starts */
        p->cell_start[c] = p->cell_start[c - 1];
    p->cell_start[0] = 0;
}

static int bench_steady(rvb_ctx *ctx)
{
    const char *name = "journal_steady_100k_1pct";
    if (!rvb_begin_case(ctx, name))
        return 0;
    rvb_rng r = { 11 };
    rv_delta *registers = malloc((size_t)KEYS * sizeof *registers);
    rv_delta *changes = malloc((size_t)STEADY_FRAMES * STEADY_CHANGES * sizeof *changes);
    plain_scene p;
    p.rows = malloc((size_t)KEYS * sizeof *p.rows);
    p.outdoor = malloc((size_t)KEYS * 4);
    p.dynamic = malloc((size_t)KEYS * 4);
    p.translucent = malloc((size_t)KEYS * 4);
    p.selectable = malloc((size_t)KEYS * 4);
    p.light = malloc((size_t)KEYS * 4);
    p.cell_start = malloc((CELLS + 1) * 4);
    p.cell_slots = malloc((size_t)KEYS * 4);
    if (!registers || !changes || !p.rows || !p.outdoor || !p.dynamic || !p.translucent || !p.selectable ||
        !p.light || !p.cell_start || !p.cell_slots)
        return 1;
    for (uint32_t k = 0; k < KEYS; k++) {
        memset(&registers[k], 0, sizeof registers[k]);
        registers[k].kind = RV_DELTA_REGISTER;
        registers[k].key = k;
        registers[k].incarnation = 1;
        registers[k].projection = random_projection(&r, k);
        p.rows[k].projection = registers[k].projection;
        p.rows[k].incarnation = 1;
    }
    for (uint32_t i = 0; i < STEADY_FRAMES * STEADY_CHANGES; i++) {
        rv_delta *d = &changes[i];
        memset(d, 0, sizeof *d);
        d->key = rvb_next(&r) % KEYS;
        d->incarnation = 1;
        if (rvb_next(&r) % 2) {
            d->kind = RV_DELTA_UPDATE_TRANSFORM;
            d->projection.transform = random_transform(&r);
        } else {
            d->kind = RV_DELTA_UPDATE_FLAGS;
            d->projection.flags = (uint32_t)(rvb_next(&r) & RV_PROJECTION_FLAGS_ALL);
        }
    }
    rv_journal *j;
    rv_render_scene *s;
    if (make_loaded(registers, KEYS, &j, &s))
        return 1;
    int reps = ctx->reps < 32 ? ctx->reps : 32;
    double ours[32], base[32];
    for (int rep = 0; rep < reps; rep++) {
        uint64_t t0 = rvb_now_ns();
        for (uint32_t f = 0; f < STEADY_FRAMES; f++) {
            const rv_delta *d = changes + (size_t)f * STEADY_CHANGES;
            for (uint32_t i = 0; i < STEADY_CHANGES; i++)
                if (rv_journal_append(j, &d[i], NULL) != RV_OK)
                    return 1;
            if (rv_render_scene_apply(s, j, NULL) != RV_OK || rv_render_scene_publish(s, j) != RV_OK)
                return 1;
        }
        uint64_t t1 = rvb_now_ns();
        for (uint32_t f = 0; f < STEADY_FRAMES; f++)
            plain_frame(&p, changes + (size_t)f * STEADY_CHANGES, STEADY_CHANGES);
        uint64_t t2 = rvb_now_ns();
        ours[rep] = (double)(t1 - t0) / 1000.0 / STEADY_FRAMES;
        base[rep] = (double)(t2 - t1) / 1000.0 / STEADY_FRAMES;
    }
    /* Both paths must hold the same indices. */
    rv_projection_counts c = rv_render_scene_counts(s);
    if (c.outdoor_static != p.outdoor_count || c.dynamic != p.dynamic_count || c.translucent != p.translucent_count ||
        c.selectable != p.selectable_count || c.light_candidate != p.light_count ||
        c.cell_static != p.cell_start[CELLS]) {
        fprintf(stderr, "journal_steady_100k_1pct: index counts differ from the rebuild\n");
        return 1;
    }
    char extra[128];
    snprintf(extra, sizeof extra, ", \"projections\": %d, \"changes_per_frame\": %d, \"target_speedup\": 30", KEYS,
             STEADY_CHANGES);
    rvb_report(ctx, name, "us/frame", rvb_median(ours, reps), rvb_median(base, reps), extra);
    rv_render_scene_destroy(s);
    rv_journal_destroy(j);
    free(registers);
    free(changes);
    free(p.rows);
    free(p.outdoor);
    free(p.dynamic);
    free(p.translucent);
    free(p.selectable);
    free(p.light);
    free(p.cell_start);
    free(p.cell_slots);
    return 0;
}

int rvb_journal(rvb_ctx *ctx);
int rvb_journal(rvb_ctx *ctx)
{
    if (bench_apply_1m(ctx))
        return 1;
    return bench_steady(ctx);
}
