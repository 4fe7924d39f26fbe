/* The world's frame state and the modules it owns: created on first use, destroyed
 * together with the world (journal, render scene, occlusion buffer, residency and its
 * grids), told when a node dies, and counted in the world's allocation figures. */
#include "frame.h"
#include "core/check.h"
#include "grid.h"
#include "journal.h"
#include "occlusion.h"
#include "projection.h"
#include "residency.h"

#include <math.h>
#include <string.h>

/* ---- state ------------------------------------------------------------------------- */

static void frame_destroy(rv_world *world, void *state)
{
    rvi_frame *f = state;
    rvi_heap *heap = &world->heap;
    for (int a = 0; a < 2; a++)
        rvi_frame_arena_free(heap, &f->arenas[a]);
    rvi_occlusion_destroy(f->occlusion);
    rvi_occlusion_destroy(f->occlusion_idle);
    for (uint32_t i = 0; i < f->occluders.records.count; i++) {
        rvi_node_occluder *o = &RVI_VEC_AT(f->occluders.records, rvi_node_occluder, i);
        rvi_free(heap, o->block, o->block_size);
    }
    rvi_node_table_free(heap, &f->occluders, sizeof(rvi_node_occluder));
    rvi_node_table_free(heap, &f->test_boxes, sizeof(rvi_node_box));
    rv_render_scene_destroy(f->render_scene); /* before the journal; it may hold nodes */
    rv_journal_destroy(f->journal);
    for (uint32_t i = 0; i < f->grids.count; i++)
        rv_grid_destroy(RVI_VEC_AT(f->grids, rvi_frame_grid, i).grid);
    rvi_vec_free(heap, &f->grids, sizeof(rvi_frame_grid));
    rv_residency_destroy(f->residency);
    rvi_vec_free(heap, &f->sources, sizeof(rv_stream_source));
    rvi_walk_scratch_free(heap, &f->scratch);
    for (uint32_t k = 0; k < f->worker_count; k++) {
        rvi_frame_worker *w = &f->workers[k];
        rvi_vec_free(heap, &w->records, sizeof(rvi_walk_record));
        rvi_vec_free(heap, &w->stack, sizeof(uint32_t));
        rvi_vec_free(heap, &w->weights, sizeof(float));
    }
    for (uint32_t k = 0; k < f->worker_count; k++)
        rvi_vec_free(heap, &f->workers[k].acc, sizeof(rvi_walk_acc));
    rvi_free(heap, f->workers, (size_t)f->worker_count * sizeof *f->workers);
    rvi_frame_free_summaries(heap, &f->summaries);
    rvi_vec_free(heap, &f->group_seen, sizeof(uint32_t));
    rvi_vec_free(heap, &f->group_hidden, sizeof(uint32_t));
    rvi_vec_free(heap, &f->items, sizeof(rvi_walk_item));
    rvi_vec_free(heap, &f->tasks, sizeof(uint32_t));
    rvi_vec_free(heap, &f->item_stack, 2 * sizeof(uint32_t));
    rvi_vec_free(heap, &f->chunk_spans, 4 * sizeof(uint32_t));
    rvi_vec_free(heap, &f->chunk_cuts, 2 * sizeof(uint32_t));
    rvi_vec_free(heap, &f->object_state, 1);
    rvi_vec_free(heap, &f->selections, sizeof(rvi_object_lod));
    rvi_vec_free(heap, &f->chunk_counts, sizeof(uint32_t));
    rvi_vec_free(heap, &f->item_marks, 1);
    rvi_free(heap, f, sizeof *f);
}

void rvi_frame_free_summaries(rvi_heap *heap, rvi_walk_summaries *s)
{
    rvi_free(heap, s->node, (size_t)s->capacity * sizeof *s->node);
    rvi_free(heap, s->block, (size_t)(s->capacity / RVI_WALK_BLOCK) * sizeof *s->block);
    rvi_free(heap, s->group, (size_t)(s->capacity / RVI_WALK_GROUP) * sizeof *s->group);
    rvi_free(heap, s->block_version, (size_t)(s->capacity / RVI_WALK_BLOCK) * sizeof *s->block_version);
    rvi_free(heap, s->group_version, (size_t)(s->capacity / RVI_WALK_GROUP) * sizeof *s->group_version);
    rvi_free(heap, s->block_visit, (size_t)(s->capacity / RVI_WALK_BLOCK) * sizeof *s->block_visit);
    rvi_free(heap, s->group_visit, (size_t)(s->capacity / RVI_WALK_GROUP) * sizeof *s->group_visit);
    rvi_free(heap, s->group_marks, (size_t)(s->capacity / RVI_WALK_GROUP) * sizeof *s->group_marks);
}

static void frame_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    rvi_frame *f = state;
    rvi_frame_drop_occluder(&world->heap, f, node_index);
    if (node_index < f->group_seen.count) {
        RVI_VEC_AT(f->group_seen, uint32_t, node_index) = 0;
        RVI_VEC_AT(f->group_hidden, uint32_t, node_index) = 0;
    }
    rvi_node_table_remove(&f->test_boxes, sizeof(rvi_node_box), node_index);
}

static void add_stats(rv_alloc_stats *sum, rv_alloc_stats s)
{
    sum->allocations += s.allocations;
    sum->reallocations += s.reallocations;
    sum->frees += s.frees;
    sum->failures += s.failures;
    sum->bytes_live += s.bytes_live;
    sum->bytes_peak += s.bytes_peak; /* an upper bound: the peaks need not coincide */
}

/* Adds to heap's counters those of a heap that is gone (everything it held freed). */
static void keep_spent(rvi_heap *heap, rv_alloc_stats spent)
{
    rv_alloc_stats *st = &heap->stats;
    st->allocations += spent.allocations;
    st->reallocations += spent.reallocations;
    st->frees += spent.frees;
    st->failures += spent.failures;
    if (st->bytes_live + spent.bytes_peak > st->bytes_peak)
        st->bytes_peak = st->bytes_live + spent.bytes_peak;
}

void rvi_frame_add_alloc_stats(const rv_world *world, rv_alloc_stats *sum)
{
    const rvi_frame *f = rvi_frame_find(world);
    if (!f)
        return;
    if (f->journal)
        add_stats(sum, rv_journal_alloc_stats(f->journal));
    if (f->render_scene)
        add_stats(sum, rv_render_scene_alloc_stats(f->render_scene));
}

rv_result rvi_frame_state(rv_world *world, rvi_frame **out)
{
    rvi_frame *f = rvi_frame_find(world);
    if (!f) {
        f = rvi_calloc(&world->heap, 1, sizeof *f);
        if (!f)
            return RV_ERR_OUT_OF_MEMORY;
        /* Per-worker scratch, one per worker the job system may run at once and one for
         * the calling thread's own share: indexed by the worker a job runs on. */
        f->jobs = world->desc.jobs;
        f->worker_count = f->jobs.max_workers + 1;
        f->workers = rvi_calloc(&world->heap, f->worker_count, sizeof *f->workers);
        if (!f->workers) {
            rvi_free(&world->heap, f, sizeof *f);
            return RV_ERR_OUT_OF_MEMORY;
        }
        for (uint32_t k = 0; k < f->worker_count; k++) {
            f->workers[k].world = world;
            f->workers[k].frame = f;
        }
        f->building = -1;
        f->lent = -1;
        /* Arena generations start apart so a view of one never validates against the other,
         * and carry the world's tag in their top bits so no other world's view validates
         * (an empty view has no pointer to tell them apart). Each build adds 2. */
        uint64_t tag = (uint64_t)world->tag << 48;
        f->arenas[0].generation = tag | 1;
        f->arenas[1].generation = tag | 2;
        rvi_module_hooks hooks = { f, frame_destroy, frame_node_destroyed };
        rvi_world_register_module(world, RVI_MODULE_FRAME, &hooks);
    }
    *out = f;
    return RV_OK;
}

/* ---- world-owned modules ------------------------------------------------------------------- */

rv_result rv_world_journal(rv_world *world, rv_journal **out_journal)
{
    if (!world || !out_journal)
        return RV_ERR_INVALID_ARG;
    rv_render_scene *scene;
    RVI_TRY(rv_world_render_scene(world, &scene));
    *out_journal = rvi_frame_find(world)->journal;
    return RV_OK;
}

rv_result rv_world_render_scene(rv_world *world, rv_render_scene **out_scene)
{
    if (!world || !out_scene)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f;
    RVI_TRY(rvi_frame_state(world, &f));
    if (!f->journal) {
        /* Both keep heaps of their own, counted with the world's while they live (see
         * rvi_frame_add_alloc_stats); what one that does not survive this call spent,
         * its failure above all, is kept in the world's heap, or the world's counters
         * would miss it. */
        rv_journal_desc jd;
        memset(&jd, 0, sizeof jd);
        jd.allocator = world->heap.allocator;
        rv_journal *j;
        rv_alloc_stats spent = { 0 };
        rv_result r = rvi_journal_create_spent(&jd, &j, &spent);
        if (r != RV_OK) {
            keep_spent(&world->heap, spent);
            return r;
        }
        rv_render_scene_desc sd;
        memset(&sd, 0, sizeof sd);
        sd.allocator = world->heap.allocator;
        sd.world = world;
        rv_render_scene *s;
        memset(&spent, 0, sizeof spent);
        r = rvi_render_scene_create_spent(&sd, &s, &spent);
        if (r != RV_OK) {
            keep_spent(&world->heap, spent);
            memset(&spent, 0, sizeof spent);
            rvi_journal_destroy_spent(j, &spent);
            keep_spent(&world->heap, spent);
            return r;
        }
        f->journal = j;
        f->render_scene = s;
    }
    *out_scene = f->render_scene;
    return RV_OK;
}

rv_result rv_world_add_grid(rv_world *world, const rv_grid_desc *desc, rv_grid **out_grid)
{
    if (!world || !desc)
        return RV_ERR_INVALID_ARG;
    /* Every frame updates the grid with the host's sources and the eye: refuse now, before
     * anything is allocated, a desc or a reach that would make every frame fail (the host
     * could not shrink a world's grid afterwards). */
    const rvi_frame *known = rvi_frame_find(world);
    float eye;
    RVI_TRY(rvi_grid_check_for_world(desc, known ? RVI_VEC_PTR(known->sources, rv_stream_source) : NULL,
                                     known ? known->host_source_count : 0, &eye));
    /* The world's residency serves every grid, and a page is known by its source: two
     * grids of one source would ask for each other's pages. */
    for (uint32_t i = 0; known && i < known->grids.count; i++)
        if (rv_grid_get_desc(RVI_VEC_AT(known->grids, rvi_frame_grid, i).grid).source == desc->source)
            return RV_ERR_DUPLICATE;
    rv_grid *grid;
    RVI_TRY(rvi_grid_create_in(&world->heap, desc, &grid));
    rvi_frame *f;
    rv_result r = rvi_frame_state(world, &f);
    if (r != RV_OK) {
        rv_grid_destroy(grid);
        return r;
    }
    bool made_residency = false;
    if (!f->residency) {
        r = rvi_residency_create_in(&world->heap, &world->desc.residency, &f->residency);
        made_residency = r == RV_OK;
    }
    if (r == RV_OK)
        r = rvi_vec_reserve(&world->heap, &f->grids, sizeof(rvi_frame_grid), f->grids.count + 1);
    if (r != RV_OK) {
        rv_grid_destroy(grid);
        if (made_residency) {
            rv_residency_destroy(f->residency);
            f->residency = NULL;
        }
        return r;
    }
    rvi_frame_grid g = { grid, eye };
    RVI_TRY(rvi_vec_push(&world->heap, &f->grids, sizeof g, &g));
    if (out_grid)
        *out_grid = grid;
    return RV_OK;
}

rv_result rv_world_set_stream_sources(rv_world *world, const rv_stream_source *sources, uint32_t count)
{
    if (!world || (count && !sources) || count > UINT32_MAX - 1)
        return RV_ERR_INVALID_ARG;
    for (uint32_t i = 0; i < count; i++) {
        if (!rvi_finite_n(sources[i].position, 3) || !isfinite(sources[i].radius))
            return RV_ERR_NOT_FINITE;
        if (sources[i].radius < 0)
            return RV_ERR_INVALID_ARG;
    }
    rvi_frame *f = rvi_frame_find(world);
    for (uint32_t g = 0; f && g < f->grids.count; g++) {
        const rvi_frame_grid *fg = &RVI_VEC_AT(f->grids, rvi_frame_grid, g);
        if (!rvi_grid_sources_fit(fg->grid, sources, count, fg->eye_radius))
            return RV_ERR_CAPACITY; /* every frame would fail on them (see rv_world_add_grid) */
    }
    RVI_TRY(rvi_frame_state(world, &f));
    /* One spare slot for the eye source, so frames never grow this vector. */
    RVI_TRY(rvi_vec_reserve(&world->heap, &f->sources, sizeof *sources, count + 1));
    if (count)
        memcpy(f->sources.data, sources, (size_t)count * sizeof *sources);
    f->sources.count = f->host_source_count = count;
    return RV_OK;
}

rv_residency *rv_world_residency(rv_world *world)
{
    rvi_frame *f = world ? rvi_frame_find(world) : NULL;
    return f ? f->residency : NULL;
}

rv_occlusion *rv_world_occlusion(rv_world *world)
{
    rvi_frame *f = world ? rvi_frame_find(world) : NULL;
    return f ? f->occlusion : NULL;
}

rv_result rv_world_set_occlusion(rv_world *world, const rv_occlusion_desc *desc)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    /* Refused while anything reads the buffer or the verdicts made with it: a frame's window,
     * a callback of a frame call (or of this call's allocations), a visit or the job system,
     * the delta observer of a drain. */
    rvi_frame *f = rvi_frame_find(world);
    if (world->in_frame_call || world->scene.visiting || rvi_world_projection_draining(world) ||
        (f && f->state != RVI_FRAME_IDLE))
        return RV_ERR_BAD_STATE;
    rv_occlusion_desc d = desc ? *desc : (rv_occlusion_desc){ 0 };
    RVI_TRY(rvi_occlusion_check_desc(&d));
    if (rvi_occlusion_desc_equal(&d, &world->desc.occlusion)) {
        world->desc.occlusion = d;
        return RV_OK;
    }
    if (f) {
        /* The buffer the host may hold is rebuilt in place (a buffer not made yet is made by
         * the next rv_frame_begin, as at the first frame). */
        rv_occlusion *occ = f->occlusion ? f->occlusion : f->occlusion_idle;
        if (occ) {
            world->in_frame_call = true;
            rv_result r = rvi_occlusion_replace(occ, &d);
            world->in_frame_call = false;
            RVI_TRY(r);
        }
        f->occlusion = d.width ? occ : NULL;
        f->occlusion_idle = d.width ? NULL : occ;
        /* Verdicts of the old buffer (or of none) say nothing of the new one: every subtree
         * is tested at the next frame, and the tests' phases restart, as in a world made
         * with this desc. What the last published frame hid stays known (the LOD pass's
         * rule for places out of sight). */
        if (f->group_seen.count)
            memset(f->group_seen.data, 0, (size_t)f->group_seen.count * sizeof(uint32_t));
        f->group_phase_base = f->sequence;
    }
    world->desc.occlusion = d;
    return RV_OK;
}
