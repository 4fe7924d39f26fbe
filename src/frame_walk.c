/* The main view's walk over the host's workers, and the parallel-for every parallel pass of
 * the frame runs through.
 *
 * The walk is cut into items: spans of siblings, each walked with its subtrees by one job
 * into the record stream of the worker that ran it (rvi_walk_siblings). The top of the
 * hierarchy is taken up on the calling thread first, breadth first, until there are enough
 * items to share (a long sibling list is cut into chunks on the way), so a scene of one root
 * with a million children and a deep tree of groups both spread. Work a job may not do goes
 * back as a deferral record and becomes an item of the next round: a partition group (the
 * gate is not for workers: the calling thread gates it, then its children are items), the
 * children of a node its stack has no room for, and the rest of an item whose worker ran
 * out of record room. Each item's stream lies where its worker wrote it, and a deferral
 * record is rewritten to point at the item that took its work over: gathering the streams
 * from the top item, in place, gives the walk's records in pre-order, whoever walked what,
 * in whatever order. Every decision is the node's own (the tests, the hooks and their
 * state are per node, parents always before children), so the frame is the same for any
 * worker count, split or order. Also here: the per-frame state the walk and the object
 * passes start from (each worker's counts, the summaries, group_seen) and the sums made
 * of the workers' counts afterwards. */
#include "frame.h"
#include "core/check.h"
#include "core/sort.h"
#include "scene.h"

#include <stdatomic.h>
#include <string.h>

#define NONE RVI_INDEX_NONE
/* Siblings per item when a long list is cut (a job's worth: about 10 to 50 microseconds). */
#define WALK_CHUNK 1024u
/* Items the top is taken up until: enough to even out the loads of a few workers.
 * The same whatever the worker count or job system: what the walk keeps about a subtree
 * for the next frame depends on where items begin, and must not depend on the host. */
#define WALK_ITEMS 32u
/* Records a worker gets room for before a round, at least. */
#define MIN_RECORDS 4096u
#define MIN_STACK 64u
/* rvi_walk_item.worker of an item a worker had no room to start. */
#define ITEM_POSTPONED (UINT32_MAX - 1)

/* ---- the parallel-for -------------------------------------------------------------------- */

typedef struct parallel_call {
    rvi_frame *f;
    rvi_frame_job fn;
    void *context;
    uint32_t count;
    uint8_t *marks;      /* count bytes: 1 where a range ran the item */
    atomic_bool refused; /* a range or worker outside the contract was handed over */
} parallel_call;

/* The job the host runs. A range or a worker outside the contract is not run (nothing is
 * written for it) and is reported after the call, as is a gap or a repeat in the coverage;
 * so is a range handed to a worker that is running another one at that moment (two threads
 * writing one worker's streams would overrun them). Each item run is marked. A worker may
 * run on one thread, then on another: the flag's acquire and release order its writes. */
static void run_range(void *context, uint32_t worker, uint32_t begin, uint32_t end)
{
    parallel_call *c = context;
    if (worker >= c->f->jobs.max_workers || begin >= end || end > c->count) {
        atomic_store_explicit(&c->refused, true, memory_order_relaxed);
        return;
    }
    rvi_frame_worker *w = &c->f->workers[worker];
    if (atomic_exchange_explicit(&w->busy, true, memory_order_acquire)) {
        atomic_store_explicit(&c->refused, true, memory_order_relaxed);
        return;
    }
    w->items_run += end - begin;
    memset(c->marks + begin, 1, end - begin);
    c->fn(c->context, w, begin, end);
    atomic_store_explicit(&w->busy, false, memory_order_release);
}

rv_result rvi_frame_parallel(rv_world *world, rvi_frame *f, rvi_frame_job fn, void *context, uint32_t count,
                             uint32_t grain)
{
    if (count == 0)
        return RV_OK;
    if (!f->jobs.parallel_for || count == 1) { /* one job: no hand-over is worth its cost */
        fn(context, &f->workers[0], 0, count);
        return RV_OK;
    }
    /* Coverage: the ranges run must add up to count AND mark every item. A count alone
     * misses a host that runs one item twice and skips another; marks alone miss a
     * repeat. Together: every item ran, count runs in all, so each ran exactly once. */
    RVI_TRY(rvi_vec_reserve(&world->heap, &f->item_marks, 1, count));
    uint8_t *marks = f->item_marks.data;
    memset(marks, 0, count);
    for (uint32_t k = 0; k < f->jobs.max_workers; k++)
        f->workers[k].items_run = 0;
    parallel_call c = { f, fn, context, count, marks, false };
    /* The jobs read the scene's links while the host's code runs: a structural call it
     * makes meanwhile is refused, as from a visit callback. */
    rvi_scene *sc = &world->scene;
    bool visiting = sc->visiting;
    sc->visiting = true;
    f->jobs.parallel_for(f->jobs.user, run_range, &c, count, grain ? grain : 1);
    sc->visiting = visiting;
    uint64_t run = 0;
    for (uint32_t k = 0; k < f->jobs.max_workers; k++)
        run += f->workers[k].items_run;
    bool refused = atomic_load_explicit(&c.refused, memory_order_relaxed);
    return !refused && run == count && !memchr(marks, 0, count) ? RV_OK : RV_ERR_INVARIANT;
}

rv_result rvi_frame_workers_error(const rvi_frame *f)
{
    for (uint32_t k = 0; k < f->worker_count; k++)
        if (f->workers[k].error != RV_OK)
            return f->workers[k].error;
    return RV_OK;
}

/* ---- items --------------------------------------------------------------------------------- */

static rv_result add_item(rv_world *world, rvi_frame *f, uint32_t first, uint32_t count, uint32_t mask, float weight,
                          uint32_t *out_index)
{
    rvi_walk_item it = { first, count, mask, weight, UINT32_MAX, 0, 0, 0, false };
    *out_index = f->items.count;
    return rvi_vec_push(&world->heap, &f->items, sizeof it, &it);
}

/* The sibling n places after at (NONE past the end). Siblings created one after another sit
 * in consecutive slots: a run of them is skipped by comparing links, sixteen at a time,
 * instead of following them one by one. */
static uint32_t skip_siblings(const rvi_scene *sc, uint32_t at, uint32_t n)
{
    const uint32_t *next = sc->next_sibling;
    while (n > 0 && at != NONE) {
        while (n >= 16 && at + 16 <= sc->capacity) {
            uint32_t linked = 0;
            for (uint32_t k = 0; k < 16; k++)
                linked += next[at + k] == at + k + 1;
            if (linked != 16)
                break;
            at += 16;
            n -= 16;
        }
        if (n == 0)
            break;
        at = next[at];
        n--;
    }
    return at;
}

/* How many siblings from first a span holds, counting at most limit. */
static uint32_t span_length(const rvi_scene *sc, uint32_t first, uint32_t count, uint32_t limit)
{
    uint32_t n = 0;
    for (uint32_t at = first; at != NONE && n < count && n < limit; at = sc->next_sibling[at])
        n++;
    return n;
}

/* The chunks a long span is cut into, as (first sibling, count) pairs: cut once and kept
 * while no node is linked or unlinked anywhere (a frame with a million children to cut
 * would otherwise spend its calling thread's time following their links). Chunks end at
 * groups of leaf slots when the list runs through consecutive slots, so a group's leaves are
 * walked (and summarised) by one job. */
static rv_result span_chunks(rv_world *world, rvi_frame *f, uint32_t first, uint32_t count, const uint32_t **out,
                             uint32_t *out_count)
{
    const rvi_scene *sc = &world->scene;
    if (f->chunk_links != sc->links_changed) {
        f->chunk_spans.count = f->chunk_cuts.count = 0;
        f->chunk_links = sc->links_changed;
    }
    for (uint32_t k = 0; k < f->chunk_spans.count; k++) {
        const uint32_t *span = (const uint32_t *)f->chunk_spans.data + 4 * (size_t)k;
        if (span[0] == first && span[1] == count) {
            *out = (const uint32_t *)f->chunk_cuts.data + 2 * (size_t)span[2];
            *out_count = span[3];
            return RV_OK;
        }
    }
    uint32_t begin = f->chunk_cuts.count, at = first, left = count;
    while (at != NONE && left > 0) {
        uint32_t n = WALK_CHUNK - ((at + WALK_CHUNK) & (RVI_WALK_GROUP - 1));
        n = left < n ? left : n;
        uint32_t cut[2] = { at, n };
        RVI_TRY(rvi_vec_push(&world->heap, &f->chunk_cuts, sizeof cut, cut));
        at = skip_siblings(sc, at, n);
        left -= n;
    }
    uint32_t span[4] = { first, count, begin, f->chunk_cuts.count - begin };
    RVI_TRY(rvi_vec_push(&world->heap, &f->chunk_spans, sizeof span, span));
    *out = (const uint32_t *)f->chunk_cuts.data + 2 * (size_t)begin;
    *out_count = span[3];
    return RV_OK;
}

/* Room for what one node taken up on the calling thread may write. */
static rv_result serial_room(rv_world *world, rvi_frame_worker *w, uint32_t node)
{
    uint32_t need = w->policy->node_cost + world->scene.aux[node].child_count + 2;
    RVI_TRY(rvi_vec_reserve(&world->heap, &w->records, sizeof(rvi_walk_record), w->records.count + need));
    w->budget = need;
    return RV_OK;
}

/* Takes node up on the calling thread; its children become an item (a record points at it). */
static rv_result take_up_node(rv_world *world, rvi_frame *f, uint32_t node, uint32_t mask, float weight)
{
    rvi_frame_worker *w = &f->workers[f->worker_count - 1];
    RVI_TRY(serial_room(world, w, node));
    rvi_walk_action a = rvi_walk_node(w->policy, w, node, &mask, &weight, &w->walk);
    RVI_TRY(w->error);
    if (a != RVI_WALK_DESCEND || world->scene.first_child[node] == NONE)
        return RV_OK;
    uint32_t child;
    RVI_TRY(add_item(world, f, world->scene.first_child[node], world->scene.aux[node].child_count, mask, weight,
                     &child));
    rvi_walk_record sub = { child, RVI_REC_SUB, 0.0f, 0 };
    return rvi_vec_push(&world->heap, &w->records, sizeof sub, &sub);
}

/* Takes item i up on the calling thread: a long span is cut into chunks (items of their own,
 * walked whole), a short one's nodes are taken up one by one. */
static rv_result expand_item(rv_world *world, rvi_frame *f, uint32_t i)
{
    const rvi_scene *sc = &world->scene;
    rvi_frame_worker *w = &f->workers[f->worker_count - 1];
    rvi_walk_item it = RVI_VEC_AT(f->items, rvi_walk_item, i);
    uint32_t begin = w->records.count;
    if (it.count == 0) {
        RVI_TRY(take_up_node(world, f, it.first, it.mask, it.weight));
    } else if ((it.count == UINT32_MAX ? span_length(sc, it.first, it.count, WALK_CHUNK + 1) : it.count) > WALK_CHUNK) {
        const uint32_t *cuts;
        uint32_t cut_count;
        RVI_TRY(span_chunks(world, f, it.first, it.count, &cuts, &cut_count));
        for (uint32_t k = 0; k < cut_count; k++) {
            uint32_t chunk;
            RVI_TRY(add_item(world, f, cuts[2 * k], cuts[2 * k + 1], it.mask, it.weight, &chunk));
            RVI_VEC_AT(f->items, rvi_walk_item, chunk).whole = true;
            rvi_walk_record sub = { chunk, RVI_REC_SUB, 0.0f, 0 };
            RVI_TRY(rvi_vec_push(&world->heap, &w->records, sizeof sub, &sub));
        }
    } else {
        uint32_t at = it.first;
        for (uint32_t k = 0; k < it.count && at != NONE; k++, at = sc->next_sibling[at])
            RVI_TRY(take_up_node(world, f, at, it.mask, it.weight));
    }
    rvi_walk_item *done = &RVI_VEC_AT(f->items, rvi_walk_item, i);
    done->worker = f->worker_count - 1;
    done->begin = begin;
    done->end = w->records.count;
    return RV_OK;
}

/* ---- rounds -------------------------------------------------------------------------------- */

typedef struct walk_round {
    uint32_t *tasks;         /* item indices */
    uint32_t budget;         /* records each item may write */
} walk_round;

static void walk_job(void *context, rvi_frame_worker *w, uint32_t begin, uint32_t end)
{
    walk_round *round = context;
    rvi_frame *f = w->frame;
    rvi_walk_stack stack = { RVI_VEC_PTR(w->stack, uint32_t), RVI_VEC_PTR(w->weights, float),
                             RVI_VEC_PTR(w->acc, rvi_walk_acc), w->stack.capacity,
                             false };
    for (uint32_t t = begin; t < end; t++) {
        rvi_walk_item *it = &RVI_VEC_AT(f->items, rvi_walk_item, round->tasks[t]);
        w->defers = 0;
        w->budget = round->budget;
        if (w->records.capacity - w->records.count < w->budget) {
            /* No room for the item's budget (this worker ran many items): left for the
             * retry. Every item gets the same budget wherever it runs, so where it yields
             * does not depend on the host. */
            it->worker = ITEM_POSTPONED;
            w->yielded = true;
            continue;
        }
        uint32_t start = w->records.count;
        if (rvi_walk_siblings(w->policy, w, &stack, it->first, it->count, it->mask, it->weight, &w->budget,
                              &w->walk) == RVI_WALK_YIELD)
            w->yielded = true;
        it->begin = start;
        it->end = w->records.count;
        it->defers = w->defers;
        it->worker = (uint32_t)(w - f->workers);
    }
    w->stack_full |= stack.overflowed;
}

/* Room on every worker for a round: records for twice the most the jobs of a walk wrote
 * (any worker may run every job; a round after the first starts where the last left off),
 * and at least a round's worth more; a stack for the deepest walk. A steady frame finds all
 * of it there already. */
static rv_result workers_room(rv_world *world, rvi_frame *f)
{
    uint32_t room = f->records_hint > MIN_RECORDS ? f->records_hint : MIN_RECORDS;
    if (room > UINT32_MAX / 4)
        return RV_ERR_CAPACITY;
    for (uint32_t k = 0; k + 1 < f->worker_count; k++) {
        rvi_frame_worker *w = &f->workers[k];
        uint32_t need = w->records.count + room > 2 * room ? w->records.count + room : 2 * room;
        if (w->records.count > UINT32_MAX - room)
            return RV_ERR_CAPACITY;
        RVI_TRY(rvi_vec_reserve(&world->heap, &w->records, sizeof(rvi_walk_record), need));
        uint32_t depth = f->stack_hint > MIN_STACK ? f->stack_hint : MIN_STACK;
        RVI_TRY(rvi_vec_reserve(&world->heap, &w->stack, sizeof(uint32_t), depth));
        RVI_TRY(rvi_vec_reserve(&world->heap, &w->weights, sizeof(float), w->stack.capacity));
        RVI_TRY(rvi_vec_reserve(&world->heap, &w->acc, sizeof(rvi_walk_acc), w->stack.capacity));
    }
    return RV_OK;
}

/* Turns the deferral records of item i into items of their own. */
static rv_result take_deferrals(rv_world *world, rvi_frame *f, uint32_t i)
{
    rvi_walk_item it = RVI_VEC_AT(f->items, rvi_walk_item, i);
    if (it.defers == 0)
        return RV_OK;
    rvi_walk_record *recs = RVI_VEC_PTR(f->workers[it.worker].records, rvi_walk_record);
    for (uint32_t r = it.begin; r < it.end; r++) {
        if ((recs[r].kind & 0xFFu) != RVI_REC_DEFER)
            continue;
        uint32_t index;
        RVI_TRY(add_item(world, f, recs[r].node, recs[r].count, recs[r].kind >> 8, recs[r].weight, &index));
        recs[r].node = index;
        recs[r].kind = RVI_REC_SUB;
    }
    return RV_OK;
}

/* One round: take up on the calling thread what must be (lone nodes) or what is worth it
 * (the top, while there are few items), then walk the other items as jobs. */
static rv_result walk_round_run(rv_world *world, rvi_frame *f, uint32_t *next)
{
    /* Breadth first, in item order: an item is taken up while fewer than WALK_ITEMS wait
     * (lone nodes always); what it makes waits after it. */
    uint32_t waiting = f->items.count - *next;
    for (uint32_t i = *next; i < f->items.count; i++) {
        const rvi_walk_item *it = &RVI_VEC_AT(f->items, rvi_walk_item, i);
        if (it->count != 0 && (it->whole || waiting >= WALK_ITEMS))
            continue;
        uint32_t before = f->items.count;
        RVI_TRY(expand_item(world, f, i));
        waiting += f->items.count - before - 1;
    }
    /* The items left are this round's jobs. */
    rvi_vec *tasks = &f->tasks;
    tasks->count = 0;
    RVI_TRY(rvi_vec_reserve(&world->heap, tasks, sizeof(uint32_t), f->items.count - *next));
    for (uint32_t i = *next; i < f->items.count; i++)
        if (RVI_VEC_AT(f->items, rvi_walk_item, i).worker == UINT32_MAX)
            RVI_VEC_AT(*tasks, uint32_t, tasks->count++) = i;
    uint32_t created = f->items.count;
    while (tasks->count) {
        uint32_t count = tasks->count;
        RVI_TRY(workers_room(world, f));
        walk_round round = { RVI_VEC_PTR(*tasks, uint32_t), f->records_hint > MIN_RECORDS ? f->records_hint : MIN_RECORDS };
        /* Ranges of neighbouring items, about four per worker: a million-leaf list makes
         * a thousand chunks, and handed out one at a time each claim crosses between cores
         * and each worker's chunks land far apart. Which worker walks what never changes
         * what is drawn. */
        uint32_t grain = count / (4u * f->jobs.max_workers);
        RVI_TRY(rvi_frame_parallel(world, f, walk_job, &round, count, grain ? grain : 1));
        RVI_TRY(rvi_frame_workers_error(f));
        bool stack_full = false, yielded = false;
        for (uint32_t t = 0; t < count; t++)
            if (RVI_VEC_AT(f->items, rvi_walk_item, round.tasks[t]).worker == UINT32_MAX)
                return RV_ERR_INVARIANT; /* the job system skipped it */
        uint64_t written = 0;
        for (uint32_t k = 0; k + 1 < f->worker_count; k++) {
            stack_full |= f->workers[k].stack_full;
            yielded |= f->workers[k].yielded;
            f->workers[k].stack_full = f->workers[k].yielded = false;
            written += f->workers[k].records.count;
        }
        /* The next round, and frame, get more room where this one ran short (doubling: a
         * node with a long list of children to record may need more than one step). */
        if (yielded)
            written = written > 2 * (uint64_t)f->records_hint ? written : 2 * (uint64_t)f->records_hint;
        if (written > f->records_hint)
            f->records_hint = written > UINT32_MAX / 8 ? UINT32_MAX / 8 : (uint32_t)written;
        if (stack_full)
            f->stack_hint = (f->stack_hint > MIN_STACK ? f->stack_hint : MIN_STACK) * 2;
        /* Items a worker had no room to start run again, with the room grown. */
        uint32_t kept = 0;
        for (uint32_t t = 0; t < count; t++) {
            uint32_t i = round.tasks[t];
            rvi_walk_item *it = &RVI_VEC_AT(f->items, rvi_walk_item, i);
            if (it->worker == ITEM_POSTPONED) {
                it->worker = UINT32_MAX;
                round.tasks[kept++] = i;
            }
        }
        tasks->count = kept;
    }
    /* Deferrals of every item walked this round, in item order. */
    for (uint32_t i = *next; i < created; i++)
        RVI_TRY(take_deferrals(world, f, i));
    *next = created;
    return RV_OK;
}

/* ---- gathering ----------------------------------------------------------------------------- */

/* rv_hlod_loads by region, the most urgent of a region first. */
static int compare_load_regions(const void *a, const void *b)
{
    const rv_hlod_load *x = a, *y = b;
    if (x->region.id != y->region.id)
        return x->region.id < y->region.id ? -1 : 1;
    return rvi_hlod_compare_loads(a, b);
}

/* The walk's records in pre-order, from the top item: candidates, cull records, HLOD loads. */
static rv_result gather(rv_world *world, rvi_frame *f)
{
    rvi_heap *heap = &world->heap;
    rvi_frame_arena *a = &f->arenas[f->building];
    uint64_t total = 0;
    for (uint32_t k = 0; k < f->worker_count; k++)
        total += f->workers[k].records.count;
    if (total > UINT32_MAX)
        return RV_ERR_CAPACITY;
    rvi_vec *cands = &f->scratch.candidates;
    cands->count = 0;
    RVI_TRY(rvi_vec_reserve(heap, cands, sizeof(rvi_candidate), (uint32_t)total));
    rvi_vec *loads = &f->scratch.hlod_loads;
    loads->count = 0;
    rvi_vec *stack = &f->item_stack;
    stack->count = 0;
    const rvi_walk_item *items = RVI_VEC_PTR(f->items, rvi_walk_item);
    uint32_t item = 0, at = items[0].begin;
    for (;;) {
        const rvi_walk_item *it = &items[item];
        const rvi_walk_record *recs = RVI_VEC_PTR(f->workers[it->worker].records, rvi_walk_record);
        while (at < it->end) {
            rvi_walk_record r = recs[at++];
            uint32_t kind = r.kind & 0xFFu;
            if (kind <= RVI_REC_TESTED) {
                rvi_candidate c = { r.node, r.weight, kind == RVI_REC_TESTED };
                RVI_VEC_AT(*cands, rvi_candidate, cands->count++) = c;
            } else if (kind == RVI_REC_CULL) {
                rv_cull_record rec = { rvi_node_handle(&world->scene, r.node), (rv_cull_reason)(r.kind >> 8) };
                RVI_TRY(rvi_vec_push(heap, &a->culls, sizeof rec, &rec));
            } else if (kind == RVI_REC_LOAD) {
                rv_hlod_load load = { rvi_node_handle(&world->scene, r.node), r.weight, 0.0f };
                memcpy(&load.distance, &r.count, sizeof load.distance);
                if ((r.kind >> 8) & RVI_LOAD_BELOW)
                    RVI_TRY(rvi_hlod_list_loads(world, r.node, load.screen_space_error, load.distance, loads));
                else
                    RVI_TRY(rvi_vec_push(heap, loads, sizeof load, &load));
            } else if (kind == RVI_REC_SUB) {
                uint32_t back[2] = { item, at };
                RVI_TRY(rvi_vec_push(heap, stack, sizeof back, back));
                item = r.node;
                it = &items[item];
                recs = RVI_VEC_PTR(f->workers[it->worker].records, rvi_walk_record);
                at = it->begin;
            } else {
                return RV_ERR_INVARIANT; /* a deferral nobody took up */
            }
        }
        if (stack->count == 0)
            break;
        const uint32_t *back = (const uint32_t *)stack->data + 2 * (size_t)--stack->count;
        item = back[0];
        at = back[1];
    }
    /* Each region once, at its most urgent; then most urgent first, as rv_hlod_select orders
     * its loads. The order the walk found them in (which worker, which item) does not show. */
    if (loads->count > 1) {
        rv_hlod_load *l = RVI_VEC_PTR(*loads, rv_hlod_load);
        rvi_sort(l, loads->count, sizeof(rv_hlod_load), compare_load_regions);
        uint32_t kept = 1;
        for (uint32_t k = 1; k < loads->count; k++)
            if (l[k].region.id != l[kept - 1].region.id)
                l[kept++] = l[k];
        loads->count = kept;
        rvi_sort(l, loads->count, sizeof(rv_hlod_load), rvi_hlod_compare_loads);
    }
    RVI_TRY(rvi_vec_reserve(heap, &a->hlod_loads, sizeof(rv_node), loads->count));
    for (uint32_t k = 0; k < loads->count; k++)
        RVI_VEC_AT(a->hlod_loads, rv_node, a->hlod_loads.count++) = RVI_VEC_AT(*loads, rv_hlod_load, k).region;
    return RV_OK;
}

rv_result rvi_frame_walk(rv_world *world, rvi_frame *f, const rvi_walk_policy *jobs_policy,
                         const rvi_walk_policy *serial_policy)
{
    f->items.count = 0;
    for (uint32_t k = 0; k < f->worker_count; k++) {
        rvi_frame_worker *w = &f->workers[k];
        w->records.count = 0;
        w->policy = k + 1 < f->worker_count ? jobs_policy : serial_policy;
        w->serial = k + 1 == f->worker_count || !f->jobs.parallel_for;
    }
    uint32_t top;
    RVI_TRY(add_item(world, f, world->scene.first_root, UINT32_MAX, f->cam.frustum.plane_mask, 1.0f, &top));
    uint32_t next = 0;
    rv_result r = RV_OK;
    while (r == RV_OK && next < f->items.count)
        r = walk_round_run(world, f, &next);
    /* Every job has returned (a failed round too): the groups' summaries, from the marks. */
    if (f->summaries.capacity)
        rvi_walk_settle_groups(&f->summaries);
    RVI_TRY(r);
    return gather(world, f);
}

/* ---- per-frame state of the walk and the passes ------------------------------------------- */

/* Per-worker state for a cull: counts zero, this frame's HLOD pass. */
static void workers_begin(rvi_frame *f)
{
    for (uint32_t k = 0; k < f->worker_count; k++) {
        rvi_frame_worker *w = &f->workers[k];
        memset(&w->walk, 0, sizeof w->walk);
        memset(&w->counts, 0, sizeof w->counts);
        memset(&w->occlusion_timer, 0, sizeof w->occlusion_timer);
        memset(&w->partition_timer, 0, sizeof w->partition_timer);
        memset(&w->lod_timer, 0, sizeof w->lod_timer);
        w->hlod = f->hlod_pass;
        w->hlod.fading = 0;
        w->fade_end_ms = 0.0;
        w->feed_hidden = 0;
        w->groups_hidden = 0;
        w->error = RV_OK;
        w->stack_full = w->yielded = false;
    }
}

void rvi_frame_workers_end(rv_world *world, rvi_frame *f)
{
    rv_frame_counts *c = &f->counts;
    double fade_end = 0.0;
    uint64_t tests = 0, culled = 0, feed_hidden = 0;
    for (uint32_t k = 0; k < f->worker_count; k++) {
        const rvi_frame_worker *w = &f->workers[k];
        c->nodes_visited += w->walk.visited;
        c->frustum_tested += w->walk.tested;
        c->frustum_culled += w->walk.outside;
        c->lod_culled += w->walk.cut + w->counts.lod_culled;
        c->partition_culled += w->counts.partition_culled;
        c->occlusion_tested += w->counts.occlusion_tested;
        c->occlusion_culled += w->counts.occlusion_culled;
        c->unsampled_culled += w->counts.unsampled_culled;
        c->hlod_refined += w->counts.hlod_refined;
        c->hlod_drawn += w->counts.hlod_drawn;
        f->hlod_pass.fading += w->hlod.fading;
        fade_end = w->fade_end_ms > fade_end ? w->fade_end_ms : fade_end;
        tests += w->counts.occlusion_tested;
        culled += w->counts.occlusion_culled;
        feed_hidden += w->feed_hidden;
    }
    rvi_lod_note_fade_end(world, fade_end);
    if (f->occlusion) {
        f->occlusion->stats.tests += tests;
        f->occlusion->stats.culled += culled;
        rvi_occ_feed_add_hidden(f->occlusion, feed_hidden);
    }
}

void rvi_frame_charge_walk(rvi_frame *f, uint64_t t0, uint64_t t1)
{
    double occlusion_us = 0, partition_us = 0, lod_us = 0;
    for (uint32_t k = 0; k < f->worker_count; k++) {
        occlusion_us += walk_timer_estimate(&f->workers[k].occlusion_timer);
        partition_us += walk_timer_estimate(&f->workers[k].partition_timer);
        lod_us += walk_timer_estimate(&f->workers[k].lod_timer);
    }
    double span_us = t1 >= t0 ? (double)(t1 - t0) / 1000.0 : 0.0;
    double inside = occlusion_us + partition_us + lod_us;
    double scale = inside > span_us ? span_us / inside : 1.0;
    f->stage_us[RV_STAGE_OCCLUSION] += occlusion_us * scale;
    f->stage_us[RV_STAGE_PARTITION] += partition_us * scale;
    f->stage_us[RV_STAGE_LOD] += lod_us * scale;
    f->stage_us[RV_STAGE_FRUSTUM] += inside > span_us ? 0.0 : span_us - inside;
}

/* The walk's summaries: room for every slot, and a new version whenever the scene's links,
 * flags or bounds changed since the last frame (every summary kept before goes stale). */
static rv_result summaries_begin(rv_world *world, rvi_frame *f)
{
    rvi_walk_summaries *s = &f->summaries;
    const rvi_scene *sc = &world->scene;
    uint32_t need = (sc->capacity + RVI_WALK_GROUP - 1) & ~(RVI_WALK_GROUP - 1);
    if (need > s->capacity) {
        rvi_walk_summaries grown = { NULL, NULL, NULL, NULL, NULL, need, s->version, NULL, NULL, NULL };
        size_t blocks = need / RVI_WALK_BLOCK, groups = need / RVI_WALK_GROUP;
        grown.node = rvi_calloc(&world->heap, need, sizeof *grown.node);
        grown.block = grown.node ? rvi_calloc(&world->heap, blocks, sizeof *grown.block) : NULL;
        grown.group = grown.block ? rvi_calloc(&world->heap, groups, sizeof *grown.group) : NULL;
        grown.block_version = grown.group ? rvi_calloc(&world->heap, blocks, sizeof *grown.block_version) : NULL;
        grown.group_version = grown.block_version ? rvi_calloc(&world->heap, groups, sizeof *grown.group_version) : NULL;
        grown.block_visit = grown.group_version ? rvi_calloc(&world->heap, blocks, sizeof *grown.block_visit) : NULL;
        grown.group_visit = grown.block_visit ? rvi_calloc(&world->heap, groups, sizeof *grown.group_visit) : NULL;
        grown.group_marks = grown.group_visit ? rvi_calloc(&world->heap, groups, sizeof *grown.group_marks) : NULL;
        if (!grown.group_marks) {
            grown.capacity = need; /* frees what was made (rvi_free takes NULL) */
            rvi_frame_free_summaries(&world->heap, &grown);
            return RV_ERR_OUT_OF_MEMORY;
        }
        if (s->capacity) {
            size_t had_blocks = s->capacity / RVI_WALK_BLOCK, had_groups = s->capacity / RVI_WALK_GROUP;
            memcpy(grown.node, s->node, (size_t)s->capacity * sizeof *s->node);
            memcpy(grown.block, s->block, had_blocks * sizeof *s->block);
            memcpy(grown.group, s->group, had_groups * sizeof *s->group);
            memcpy(grown.block_version, s->block_version, had_blocks * sizeof *s->block_version);
            memcpy(grown.group_version, s->group_version, had_groups * sizeof *s->group_version);
            memcpy(grown.block_visit, s->block_visit, had_blocks * sizeof *s->block_visit);
            memcpy(grown.group_visit, s->group_visit, had_groups * sizeof *s->group_visit);
            /* marks are settled after every walk: none to carry over */
        }
        rvi_frame_free_summaries(&world->heap, s);
        *s = grown;
    }
    if (s->version == 0 || sc->links_changed != f->summary_links || sc->edits != f->summary_edits) {
        if (++s->version == 0) { /* wrapped: nothing kept may match by chance */
            memset(s->node, 0, (size_t)s->capacity * sizeof *s->node);
            memset(s->block_version, 0, (size_t)(s->capacity / RVI_WALK_BLOCK) * sizeof *s->block_version);
            memset(s->group_version, 0, (size_t)(s->capacity / RVI_WALK_GROUP) * sizeof *s->group_version);
            s->version = 1;
        }
        f->summary_links = sc->links_changed;
        f->summary_edits = sc->edits;
    }
    return RV_OK;
}

/* Room in group_seen and group_hidden for every slot (new slots 0: tested at once). */
static rv_result group_seen_begin(rv_world *world, rvi_frame *f)
{
    uint32_t n = world->scene.capacity, had = f->group_seen.count;
    if (n <= had)
        return RV_OK;
    RVI_TRY(rvi_vec_reserve(&world->heap, &f->group_seen, sizeof(uint32_t), n));
    RVI_TRY(rvi_vec_reserve(&world->heap, &f->group_hidden, sizeof(uint32_t), n));
    memset(RVI_VEC_PTR(f->group_seen, uint32_t) + had, 0, (size_t)(n - had) * sizeof(uint32_t));
    memset(RVI_VEC_PTR(f->group_hidden, uint32_t) + had, 0, (size_t)(n - had) * sizeof(uint32_t));
    f->group_seen.count = f->group_hidden.count = n;
    return RV_OK;
}

rv_result rvi_frame_walk_begin(rv_world *world, rvi_frame *f)
{
    workers_begin(f);
    RVI_TRY(summaries_begin(world, f));
    return group_seen_begin(world, f);
}
