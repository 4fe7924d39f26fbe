/* Deterministic digest of a render scene (docs/design.md §7): every live
 * projection in ascending key order, independent of insertion order, slots and hashing. */
#include "projection.h"
#include "core/hash.h"

/* ---- digest ---- */

/* LSD radix sort of (key, slot) by key, 8 bits a pass; passes over bytes every key shares
 * are skipped. Deterministic, and independent of slot and hash layout (keys are unique). */
static rvi_digest_entry *sort_by_key(rvi_digest_entry *a, rvi_digest_entry *b, uint32_t n)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (uint32_t i = 0; i < n; i++) {
        all_or |= a[i].key;
        all_and &= a[i].key;
    }
    uint64_t varying = all_or ^ all_and;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((varying >> shift) & 0xFF))
            continue;
        uint32_t offset[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            offset[((a[i].key >> shift) & 0xFF) + 1]++;
        for (int k = 0; k < 256; k++)
            offset[k + 1] += offset[k];
        for (uint32_t i = 0; i < n; i++)
            b[offset[(a[i].key >> shift) & 0xFF]++] = a[i];
        rvi_digest_entry *t = a;
        a = b;
        b = t;
    }
    return a;
}

typedef struct digest_state {
    uint64_t h[2];
} digest_state;

static void absorb(digest_state *d, uint64_t w)
{
    d->h[0] = rvi_mix64(d->h[0] ^ w);
    d->h[1] = rvi_mix64((d->h[1] + w) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
}

/* Two floats as one word; -0 counts as +0 (the same placement). */
static uint64_t float_pair(float a, float b)
{
    uint32_t x, y;
    a = a == 0.0f ? 0.0f : a;
    b = b == 0.0f ? 0.0f : b;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return (uint64_t)x | (uint64_t)y << 32;
}

static void absorb_projection(digest_state *d, const rv_render_scene *s, uint32_t slot)
{
    const rvi_projection_row *row = &s->rows[slot];
    const rvi_projection_hot *h = &s->hot[slot];
    absorb(d, row->key);
    absorb(d, (uint64_t)h->incarnation | (uint64_t)s->generation << 32);
    absorb(d, (uint64_t)h->projection_class | (uint64_t)h->flags << 8 | (uint64_t)h->bounds_space << 40);
    absorb(d, row->cell);
    absorb(d, row->parent_key);
    absorb(d, row->mesh);
    absorb(d, row->material_variant);
    absorb(d, float_pair(h->position[0], h->position[1]));
    absorb(d, float_pair(h->position[2], h->rotation[0]));
    absorb(d, float_pair(h->rotation[1], h->rotation[2]));
    absorb(d, float_pair(h->rotation[3], h->scale[0]));
    absorb(d, float_pair(h->scale[1], h->scale[2]));
    absorb(d, float_pair(h->bounds[0], h->bounds[1]));
    absorb(d, float_pair(h->bounds[2], h->bounds[3]));
}

rv_result rv_render_scene_digest(rv_render_scene *s, rv_scene_digest *out)
{
    if (!s || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t n = s->live;
    if (n > s->digest_capacity) {
        uint64_t cap = s->digest_capacity ? s->digest_capacity : 64;
        while (cap < n)
            cap *= 2;
        rvi_digest_entry *e = rvi_alloc(&s->heap, (size_t)cap * 2 * sizeof *e);
        if (!e)
            return RV_ERR_OUT_OF_MEMORY;
        rvi_free(&s->heap, s->digest_entries, (size_t)s->digest_capacity * 2 * sizeof *e);
        s->digest_entries = e;
        s->digest_capacity = (uint32_t)cap;
    }
    uint32_t k = 0;
    for (uint32_t slot = 0; slot < s->high; slot++) {
        if (s->rows[slot].live) {
            s->digest_entries[k].key = s->rows[slot].key;
            s->digest_entries[k].slot = slot;
            k++;
        }
    }
    const rvi_digest_entry *sorted =
        n ? sort_by_key(s->digest_entries, s->digest_entries + s->digest_capacity, n) : s->digest_entries;
    digest_state d = { { 0x243F6A8885A308D3ull, 0x13198A2E03707344ull } };
    absorb(&d, (uint64_t)s->generation << 32 | n);
    for (uint32_t i = 0; i < n; i++)
        absorb_projection(&d, s, sorted[i].slot);
    out->hash[0] = d.h[0];
    out->hash[1] = d.h[1];
    out->projections = n;
    out->generation = s->generation;
    return RV_OK;
}

