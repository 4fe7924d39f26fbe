/* The emit pass of the cull stage (docs/design.md §8): the visible candidates' draw items
 * into the building arena's opaque and translucent lists, in draw order. frame_cull.c runs
 * the passes before it (LOD selection, occlusion tests) over the same chunks. */
#include "frame.h"
#include "core/check.h"
#include "core/prefetch.h"
#include "scene.h"

/* How far ahead, in draw order, the place pass fetches the generation, matrix and key an
 * item copies, and the item itself: the nodes come at random there. */
#define PREFETCH_PLACE 16u

/* The emit pass: both lists' sort keys (opaque first, then translucent, in one array),
 * then their items in sorted order. */
typedef struct emit_lists {
    rvi_object_pass *p;
    uint32_t *keys, *refs;   /* in emit order: a candidate's items, candidate after candidate */
    const uint32_t *sorted[2]; /* refs in draw order: candidate index << 1 | item */
    uint32_t count[2];
    uint32_t chunks[2];      /* place_job's chunks of each list */
} emit_lists;

/* Each visible candidate's items: a key and a reference, at the place the chunks before it
 * end in its list (the translucent list's keys after the opaque list's). */
static void key_job(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end)
{
    (void)w;
    emit_lists *l = context;
    rvi_object_pass *p = l->p;
    const rvi_scene *sc = &p->world->scene;
    const uint32_t *offsets = p->chunk_counts + 2 * (size_t)p->chunks;
    for (uint32_t chunk = begin; chunk < end; chunk++) {
        uint32_t at[2] = { offsets[2 * chunk], l->count[0] + offsets[2 * chunk + 1] };
        uint32_t last = (chunk + 1) * RVI_OBJECT_CHUNK < p->count ? (chunk + 1) * RVI_OBJECT_CHUNK : p->count;
        for (uint32_t k = chunk * RVI_OBJECT_CHUNK; k < last; k++) {
            uint32_t node = p->cands[k].node;
            if (p->state[k] != RVI_OBJECT_VISIBLE)
                continue;
            uint32_t list = (sc->flags[node] & RVI_NODE_TRANSLUCENT) != 0;
            float depth = rvi_frame_item_depth(&p->f->cam, sc, node);
            p->lod[k].depth = depth; /* for place_job, which meets the nodes at random */
            uint32_t key = rvi_frame_depth_key(depth, list == 1);
            for (uint32_t s = 0; s < p->lod[k].n; s++, at[list]++) {
                l->keys[at[list]] = key;
                l->refs[at[list]] = k << 1 | s;
            }
        }
    }
}

/* The items at sorted places, RVI_OBJECT_CHUNK places a job: the opaque list's chunks, then
 * the translucent list's. */
static void place_job(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end)
{
    (void)w;
    emit_lists *l = context;
    rvi_object_pass *p = l->p;
    rvi_frame *f = p->f;
    const rvi_scene *sc = &p->world->scene;
    rvi_frame_arena *a = &f->arenas[f->building];
    for (uint32_t chunk = begin; chunk < end; chunk++) {
        uint32_t list = chunk >= l->chunks[0], c = chunk - (list ? l->chunks[0] : 0);
        rv_draw_item *items = RVI_VEC_PTR(list ? a->translucent : a->opaque, rv_draw_item);
        uint32_t last = (c + 1) * RVI_OBJECT_CHUNK < l->count[list] ? (c + 1) * RVI_OBJECT_CHUNK : l->count[list];
        for (uint32_t q = c * RVI_OBJECT_CHUNK; q < last; q++) {
            if (q + PREFETCH_PLACE < last) {
                /* In draw order the nodes come at random: fetch what an item copies ahead.
                 * The item itself is asked for owned: the arena was last written two
                 * frames ago, and a store that misses holds up the stores behind it. */
                uint32_t ahead = p->cands[l->sorted[list][q + PREFETCH_PLACE] >> 1].node;
                RVI_PREFETCH(&sc->pool.generation[ahead]);
                RVI_PREFETCH(sc->world_matrix[ahead]);
                RVI_PREFETCH(&sc->key[ahead]);
                RVI_PREFETCH_OWNED(sc->prefetchw, &items[q + PREFETCH_PLACE]);
                RVI_PREFETCH_OWNED(sc->prefetchw, (const char *)&items[q + PREFETCH_PLACE + 1] - 1);
            }
            uint32_t k = l->sorted[list][q] >> 1, s = l->sorted[list][q] & 1;
            const rvi_object_lod *o = &p->lod[k];
            rvi_frame_emit(p->world, &items[q], p->cands[k].node, o->level[s], o->fade[s], o->depth);
        }
    }
}

rv_result rvi_frame_emit_pass(rv_world *world, rvi_frame *f, rvi_object_pass *p, uint64_t *sort_ns)
{
    uint64_t total[2] = { 0, 0 };
    /* Without candidates chunk_counts may be NULL: no offset is taken from it. */
    uint32_t *offsets = p->chunks ? p->chunk_counts + 2 * (size_t)p->chunks : NULL;
    for (uint32_t k = 0; k < 2 * p->chunks; k++) {
        offsets[k] = (uint32_t)total[k & 1];
        total[k & 1] += p->chunk_counts[k];
    }
    if (total[0] + total[1] > UINT32_MAX / 2)
        return RV_ERR_CAPACITY;
    rvi_frame_arena *a = &f->arenas[f->building];
    RVI_TRY(rvi_vec_reserve(&world->heap, &a->opaque, sizeof(rv_draw_item), (uint32_t)total[0]));
    RVI_TRY(rvi_vec_reserve(&world->heap, &a->translucent, sizeof(rv_draw_item), (uint32_t)total[1]));
    RVI_TRY(rvi_frame_reserve_sort(&world->heap, &f->scratch, (uint32_t)(total[0] + total[1])));
    a->opaque.count = (uint32_t)total[0];
    a->translucent.count = (uint32_t)total[1];
    emit_lists l = { p, RVI_VEC_PTR(f->scratch.sort_keys, uint32_t), RVI_VEC_PTR(f->scratch.sort_order, uint32_t),
                     { NULL, NULL }, { (uint32_t)total[0], (uint32_t)total[1] },
                     { ((uint32_t)total[0] + RVI_OBJECT_CHUNK - 1) / RVI_OBJECT_CHUNK,
                       ((uint32_t)total[1] + RVI_OBJECT_CHUNK - 1) / RVI_OBJECT_CHUNK } };
    if (total[0] + total[1] == 0)
        return RV_OK;
    RVI_TRY(rvi_frame_parallel(world, f, key_job, &l, p->chunks, 1));
    /* Each list sorted where its keys are, with the scratch's second halves beside them
     * for the passes. */
    uint64_t t0 = rvi_clock_now(world);
    uint32_t n = l.count[0] + l.count[1], n0 = l.count[0];
    l.sorted[0] = rvi_frame_sort_pairs(n0, l.keys, l.refs, l.keys + n, l.refs + n);
    l.sorted[1] = rvi_frame_sort_pairs(l.count[1], l.keys + n0, l.refs + n0, l.keys + n + n0, l.refs + n + n0);
    uint64_t t1 = rvi_clock_now(world);
    *sort_ns += t1 > t0 ? t1 - t0 : 0; /* a clock that steps back counts nothing, as for every stage */
    return rvi_frame_parallel(world, f, place_job, &l, l.chunks[0] + l.chunks[1], 1);
}
