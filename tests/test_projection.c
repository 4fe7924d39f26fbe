/* Render scene (docs/design.md §7): identity rules, indices against brute-force scans,
 * digest, replay, reentrancy, carry-over, steady frames and out-of-memory behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "projection.h"
#include "world.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static rv_projection_transform make_transform(uint64_t *rng)
{
    rv_projection_transform t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 3; i++) {
        t.position[i] = rvt_uniform(rng, -500.0f, 500.0f);
        t.scale[i] = rvt_uniform(rng, 0.5f, 2.0f);
        t.bounds[i] = rvt_uniform(rng, -1.0f, 1.0f);
    }
    for (int i = 0; i < 4; i++)
        t.rotation[i] = rvt_uniform(rng, -1.0f, 1.0f);
    t.rotation[3] = 1.0f;
    t.bounds[3] = rvt_uniform(rng, 0.1f, 5.0f);
    t.bounds_space = (rvt_next(rng) & 1) ? RV_BOUNDS_WORLD : RV_BOUNDS_LOCAL;
    return t;
}

static rv_projection_bucket make_bucket(uint64_t *rng, uint64_t key, uint64_t keys, uint64_t cells)
{
    rv_projection_bucket b;
    memset(&b, 0, sizeof b);
    b.projection_class = (rv_projection_class)(1 + rvt_next(rng) % 4);
    b.cell = rvt_next(rng) % cells;
    if (b.projection_class == RV_PROJECTION_EQUIPPED_CHILD) {
        b.parent_key = rvt_next(rng) % keys;
        if (b.parent_key == key)
            b.parent_key = (key + 1) % keys == key ? key + 1 : (key + 1) % keys;
    }
    return b;
}

static rv_projection make_projection(uint64_t *rng, uint64_t key, uint64_t keys, uint64_t cells)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform = make_transform(rng);
    p.appearance.mesh = rvt_next(rng);
    p.appearance.material_variant = rvt_next(rng) % 7;
    p.bucket = make_bucket(rng, key, keys, cells);
    p.flags = (uint32_t)(rvt_next(rng) & RV_PROJECTION_FLAGS_ALL);
    return p;
}

static rv_projection simple_projection(rv_projection_class cls, uint64_t cell, uint32_t flags)
{
    rv_projection p;
    memset(&p, 0, sizeof p);
    p.transform.rotation[3] = 1.0f;
    p.transform.scale[0] = p.transform.scale[1] = p.transform.scale[2] = 1.0f;
    p.transform.bounds[3] = 1.0f;
    p.bucket.projection_class = cls;
    p.bucket.cell = cell;
    p.flags = flags;
    return p;
}

typedef struct fixture {
    rv_journal *journal;
    rv_render_scene *scene;
} fixture;

static fixture make_fixture(const rv_render_scene_desc *desc)
{
    fixture f;
    assert_int_equal(rv_journal_create(NULL, &f.journal), RV_OK);
    assert_int_equal(rv_render_scene_create(desc, &f.scene), RV_OK);
    return f;
}

static void free_fixture(fixture *f)
{
    rv_render_scene_destroy(f->scene);
    rv_journal_destroy(f->journal);
}

static rv_apply_counts apply(fixture *f)
{
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply(f->scene, f->journal, &c), RV_OK);
    return c;
}

static rv_projection_record record_of(const rv_render_scene *s, uint64_t key)
{
    uint32_t slot;
    rv_projection_record r;
    assert_int_equal(rv_render_scene_find(s, key, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(s, slot, &r), RV_OK);
    return r;
}

static bool is_live(const rv_render_scene *s, uint64_t key)
{
    uint32_t slot;
    return rv_render_scene_find(s, key, &slot) == RV_OK;
}

static rv_scene_digest digest_of(rv_render_scene *s)
{
    rv_scene_digest d;
    assert_int_equal(rv_render_scene_digest(s, &d), RV_OK);
    return d;
}

static bool digest_equal(rv_scene_digest a, rv_scene_digest b)
{
    return a.hash[0] == b.hash[0] && a.hash[1] == b.hash[1] && a.projections == b.projections &&
           a.generation == b.generation;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct cell_slot {
    uint64_t cell;
    uint32_t slot;
} cell_slot;

static int cmp_cell_slot(const void *a, const void *b)
{
    const cell_slot *x = a, *y = b;
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* Asserts that list holds exactly the slots in expected[0..n) (any order). */
static void assert_same_slots(rv_slot_list list, uint32_t *expected, uint32_t n)
{
    assert_int_equal(list.count, n);
    if (n == 0)
        return;
    uint32_t *got = malloc(n * sizeof *got);
    memcpy(got, list.slots, n * sizeof *got);
    qsort(got, n, sizeof *got, cmp_u32);
    qsort(expected, n, sizeof *expected, cmp_u32);
    assert_memory_equal(got, expected, n * sizeof *got);
    free(got);
}

/* The brute-force referee: scans every slot and checks each index, each cell bucket, the
 * counts, the key lookup and the orphan count against what the table holds. */
static void check_indices(const rv_render_scene *s)
{
    uint32_t limit = rv_render_scene_slot_limit(s);
    uint32_t *expect[RV_INDEX_COUNT_];
    uint32_t n[RV_INDEX_COUNT_] = {0};
    for (int i = 0; i < RV_INDEX_COUNT_; i++)
        expect[i] = malloc((limit + 1) * sizeof(uint32_t));
    cell_slot *cells = malloc((limit + 1) * sizeof *cells);
    uint64_t *keys = malloc((limit + 1) * sizeof(uint64_t));
    uint64_t *parents = malloc((limit + 1) * sizeof(uint64_t));
    uint32_t ncells = 0, live = 0, equipped = 0, orphaned = 0;
    for (uint32_t slot = 0; slot < limit; slot++) {
        rv_projection_record r;
        if (rv_render_scene_read(s, slot, &r) != RV_OK)
            continue;
        keys[live++] = r.key;
        uint32_t found;
        assert_int_equal(rv_render_scene_find(s, r.key, &found), RV_OK);
        assert_int_equal(found, slot);
        rv_projection_class c = r.projection.bucket.projection_class;
        if (c == RV_PROJECTION_OUTDOOR_STATIC)
            expect[RV_INDEX_OUTDOOR_STATIC][n[RV_INDEX_OUTDOOR_STATIC]++] = slot;
        if (c == RV_PROJECTION_DYNAMIC || c == RV_PROJECTION_EQUIPPED_CHILD)
            expect[RV_INDEX_DYNAMIC][n[RV_INDEX_DYNAMIC]++] = slot;
        if (c == RV_PROJECTION_CELL_STATIC)
            cells[ncells++] = (cell_slot){ r.projection.bucket.cell, slot };
        if (c == RV_PROJECTION_EQUIPPED_CHILD) {
            parents[equipped] = r.projection.bucket.parent_key;
            equipped++;
            if (!is_live(s, r.projection.bucket.parent_key))
                orphaned++;
        }
        if (r.projection.flags & RV_PROJECTION_TRANSLUCENT)
            expect[RV_INDEX_TRANSLUCENT][n[RV_INDEX_TRANSLUCENT]++] = slot;
        if (r.projection.flags & RV_PROJECTION_SELECTABLE)
            expect[RV_INDEX_SELECTABLE][n[RV_INDEX_SELECTABLE]++] = slot;
        if (r.projection.flags & RV_PROJECTION_LIGHT_CANDIDATE)
            expect[RV_INDEX_LIGHT_CANDIDATE][n[RV_INDEX_LIGHT_CANDIDATE]++] = slot;
        if (r.dirty)
            expect[RV_INDEX_DIRTY][n[RV_INDEX_DIRTY]++] = slot;
    }
    for (int i = RV_INDEX_NONE + 1; i < RV_INDEX_COUNT_; i++) {
        rv_slot_list list;
        assert_int_equal(rv_render_scene_index(s, (rv_projection_index)i, &list), RV_OK);
        assert_same_slots(list, expect[i], n[i]);
    }
    /* Every distinct cell's bucket holds exactly the cell statics with that cell. */
    qsort(cells, ncells, sizeof *cells, cmp_cell_slot);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < ncells;) {
        uint32_t j = i;
        while (j < ncells && cells[j].cell == cells[i].cell) {
            expect[0][j - i] = cells[j].slot;
            j++;
        }
        distinct++;
        rv_slot_list list;
        assert_int_equal(rv_render_scene_cell(s, cells[i].cell, &list), RV_OK);
        assert_same_slots(list, expect[0], j - i);
        i = j;
    }
    /* The key lookup maps each live key to its slot, with the parent hint the drain's
     * prefetch reads (rvi_lookup_value): kept through Registers and Rebuckets. */
    for (uint32_t slot = 0; slot < s->high; slot++) {
        if (!s->rows[slot].live)
            continue;
        uint64_t value;
        assert_true(rvi_map_get(&s->key_lookup, s->rows[slot].key, &value));
        assert_int_equal(value, rvi_lookup_value(s, slot));
    }
    /* Keys are unique among live projections. */
    qsort(keys, live, sizeof *keys, cmp_u64);
    for (uint32_t i = 1; i < live; i++)
        assert_true(keys[i - 1] != keys[i]);
    rv_projection_counts c = rv_render_scene_counts(s);
    assert_int_equal(c.projections, live);
    assert_int_equal(c.outdoor_static, n[RV_INDEX_OUTDOOR_STATIC]);
    assert_int_equal(c.dynamic, n[RV_INDEX_DYNAMIC]);
    assert_int_equal(c.cell_static, ncells);
    assert_int_equal(c.cells, distinct);
    assert_int_equal(c.equipped, equipped);
    assert_int_equal(c.translucent, n[RV_INDEX_TRANSLUCENT]);
    assert_int_equal(c.selectable, n[RV_INDEX_SELECTABLE]);
    assert_int_equal(c.light_candidate, n[RV_INDEX_LIGHT_CANDIDATE]);
    assert_int_equal(c.dirty, n[RV_INDEX_DIRTY]);
    assert_int_equal(rv_render_scene_get_stats(s).orphaned_children, orphaned);
    /* The child count kept with each parent key's child list (what the orphan count is
     * maintained from) equals the number of live children naming that parent. */
    qsort(parents, equipped, sizeof *parents, cmp_u64);
    for (uint32_t i = 0; i < equipped;) {
        uint32_t j = i;
        while (j < equipped && parents[j] == parents[i])
            j++;
        assert_int_equal(rvi_count_children(s, parents[i]), j - i);
        i = j;
    }
    for (uint32_t i = 0; i < live; i++) {
        uint64_t *hit = equipped ? bsearch(&keys[i], parents, equipped, sizeof *parents, cmp_u64) : NULL;
        if (!hit)
            assert_int_equal(rvi_count_children(s, keys[i]), 0);
    }
    for (int i = 0; i < RV_INDEX_COUNT_; i++)
        free(expect[i]);
    free(cells);
    free(keys);
    free(parents);
}

/* The node referee for a world-bound scene: every live projection has a live node that
 * maps back to it, carries the projection flag and the hidden/translucent flags of the
 * projection, has the projection's transform, and sits under its parent projection's node
 * (an equipped child whose parent lives) unless that would close a cycle; otherwise it is
 * a root. Every node of the world flagged projection belongs to a live projection. */
static bool is_ancestor(const rv_world *w, rv_node a, rv_node n)
{
    while (n.id) {
        if (n.id == a.id)
            return true;
        assert_int_equal(rv_node_parent(w, n, &n), RV_OK);
    }
    return false;
}

static void check_nodes(const rv_render_scene *s, const rv_world *w)
{
    uint32_t limit = rv_render_scene_slot_limit(s), live = 0;
    for (uint32_t slot = 0; slot < limit; slot++) {
        rv_projection_record r;
        if (rv_render_scene_read(s, slot, &r) != RV_OK)
            continue;
        live++;
        assert_true(rv_node_is_valid(w, r.node));
        uint64_t key;
        uint32_t back;
        assert_int_equal(rv_render_scene_node_key(s, r.node, &key, &back), RV_OK);
        assert_int_equal(key, r.key);
        assert_int_equal(back, slot);
        uint32_t flags = w->scene.flags[r.node.id & 0xFFFFFFu];
        assert_true(flags & RVI_NODE_PROJECTION);
        assert_int_equal(!!(flags & RVI_NODE_TRANSLUCENT), !!(r.projection.flags & RV_PROJECTION_TRANSLUCENT));
        float pos[3], scale[3];
        assert_int_equal(rv_node_get_transform(w, r.node, pos, NULL, scale), RV_OK);
        assert_memory_equal(pos, r.projection.transform.position, sizeof pos);
        assert_memory_equal(scale, r.projection.transform.scale, sizeof scale);
        rv_node parent;
        assert_int_equal(rv_node_parent(w, r.node, &parent), RV_OK);
        /* Hidden by the host, or an equipped child that is not under its parent, or one a
         * parent took since the last update (its world matrix not yet under the parent). */
        bool unattached = r.projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD && parent.id == 0;
        bool host_hidden = (r.projection.flags & RV_PROJECTION_HIDDEN) != 0;
        if (flags & RVI_NODE_UNPLACED)
            assert_false(unattached || host_hidden);
        assert_int_equal(!!(flags & RVI_NODE_HIDDEN), host_hidden || unattached || (flags & RVI_NODE_UNPLACED));
        uint32_t parent_slot;
        rv_projection_record pr;
        if (r.projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD &&
            rv_render_scene_find(s, r.projection.bucket.parent_key, &parent_slot) == RV_OK &&
            rv_render_scene_read(s, parent_slot, &pr) == RV_OK) {
            if (parent.id != pr.node.id) {
                /* Only a cycle keeps it away: it is then a root above its would-be parent. */
                assert_int_equal(parent.id, 0);
                assert_true(is_ancestor(w, r.node, pr.node));
            }
        } else {
            assert_int_equal(parent.id, 0);
        }
    }
    uint32_t flagged = 0;
    for (uint32_t i = 0; i < w->scene.pool.used; i++)
        if (rvi_pool_is_live(&w->scene.pool, i) && (w->scene.flags[i] & RVI_NODE_PROJECTION))
            flagged++;
    assert_int_equal(flagged, live);
}

/* ---- identity rules ---- */

static void test_register_fills_class_and_flag_indices(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_OUTDOOR_STATIC, 0,
                                        RV_PROJECTION_TRANSLUCENT | RV_PROJECTION_SELECTABLE);
    assert_int_equal(rv_journal_register(f.journal, 0, 10, 1, &p, NULL), RV_OK);
    p = simple_projection(RV_PROJECTION_CELL_STATIC, 77, RV_PROJECTION_LIGHT_CANDIDATE);
    assert_int_equal(rv_journal_register(f.journal, 0, 11, 1, &p, NULL), RV_OK);
    p = simple_projection(RV_PROJECTION_DYNAMIC, 5, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 12, 1, &p, NULL), RV_OK);
    p = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 5, RV_PROJECTION_HIDDEN);
    p.bucket.parent_key = 12;
    assert_int_equal(rv_journal_register(f.journal, 0, 13, 1, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.taken, 4);
    assert_int_equal(c.applied, 4);
    assert_int_equal(c.registered, 4);
    rv_projection_counts n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.projections, 4);
    assert_int_equal(n.outdoor_static, 1);
    assert_int_equal(n.cell_static, 1);
    assert_int_equal(n.cells, 1);
    assert_int_equal(n.dynamic, 2);
    assert_int_equal(n.equipped, 1);
    assert_int_equal(n.translucent, 1);
    assert_int_equal(n.selectable, 1);
    assert_int_equal(n.light_candidate, 1);
    assert_int_equal(n.dirty, 4);
    rv_slot_list list;
    assert_int_equal(rv_render_scene_cell(f.scene, 77, &list), RV_OK);
    assert_int_equal(list.count, 1);
    rv_projection_record r;
    assert_int_equal(rv_render_scene_read(f.scene, list.slots[0], &r), RV_OK);
    assert_int_equal(r.key, 11);
    assert_int_equal(r.dirty, RV_DIRTY_REGISTERED);
    assert_int_equal(rv_render_scene_cell(f.scene, 78, &list), RV_OK);
    assert_int_equal(list.count, 0);
    assert_int_equal(rv_render_scene_get_stats(f.scene).orphaned_children, 0);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_duplicate_register_of_live_key_and_incarnation_is_rejected(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 3, &p, NULL), RV_OK);
    p.appearance.mesh = 99;
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 3, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.applied, 1);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_DUPLICATE], 1);
    assert_int_equal(c.replaced, 0);
    assert_int_equal(record_of(f.scene, 1).projection.appearance.mesh, 0); /* the first stays */
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 1);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_register_unregister_register_new_incarnation_in_one_tick(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_CELL_STATIC, 4, RV_PROJECTION_SELECTABLE);
    assert_int_equal(rv_journal_register(f.journal, 0, 7, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 7, 1, NULL), RV_OK);
    p = simple_projection(RV_PROJECTION_DYNAMIC, 4, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 7, 2, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.applied, 3);
    assert_int_equal(c.registered, 2);
    assert_int_equal(c.unregistered, 1);
    assert_int_equal(c.replaced, 0);
    rv_projection_record r = record_of(f.scene, 7);
    assert_int_equal(r.incarnation, 2);
    assert_int_equal(r.projection.bucket.projection_class, RV_PROJECTION_DYNAMIC);
    rv_projection_counts n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.projections, 1);
    assert_int_equal(n.cell_static, 0);
    assert_int_equal(n.cells, 0);
    assert_int_equal(n.selectable, 0);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_new_incarnation_replaces_live_older_one(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_OUTDOOR_STATIC, 0, RV_PROJECTION_TRANSLUCENT);
    assert_int_equal(rv_journal_register(f.journal, 0, 7, 1, &p, NULL), RV_OK);
    apply(&f);
    p = simple_projection(RV_PROJECTION_DYNAMIC, 0, RV_PROJECTION_LIGHT_CANDIDATE);
    assert_int_equal(rv_journal_register(f.journal, 0, 7, 5, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.replaced, 1);
    assert_int_equal(c.registered, 1);
    assert_int_equal(rv_render_scene_get_stats(f.scene).totals.replaced, 1);
    rv_projection_record r = record_of(f.scene, 7);
    assert_int_equal(r.incarnation, 5);
    rv_projection_counts n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.projections, 1);
    assert_int_equal(n.outdoor_static, 0);
    assert_int_equal(n.translucent, 0);
    assert_int_equal(n.light_candidate, 1);
    /* A Register of an incarnation older than the live one is stale, not a replacement. */
    assert_int_equal(rv_journal_register(f.journal, 0, 7, 4, &p, NULL), RV_OK);
    c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_STALE_INCARNATION], 1);
    assert_int_equal(record_of(f.scene, 7).incarnation, 5);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_update_for_old_incarnation_after_replacement_is_rejected(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 9, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_register(f.journal, 0, 9, 2, &p, NULL), RV_OK);
    rv_projection_transform t = p.transform;
    t.position[0] = 42.0f;
    assert_int_equal(rv_journal_update_transform(f.journal, 0, 9, 1, &t, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 9, 1, RV_PROJECTION_TRANSLUCENT, NULL), RV_OK);
    rv_projection_appearance a = { 5, 6 };
    assert_int_equal(rv_journal_update_appearance(f.journal, 0, 9, 1, &a, NULL), RV_OK);
    rv_projection_bucket b = { RV_PROJECTION_CELL_STATIC, 3, 0 };
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 9, 1, &b, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.replaced, 1);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_STALE_INCARNATION], 4);
    rv_projection_record r = record_of(f.scene, 9);
    assert_int_equal(r.incarnation, 2);
    assert_true(r.projection.transform.position[0] == 0.0f);
    assert_int_equal(r.projection.flags, 0);
    assert_int_equal(r.projection.appearance.mesh, 0);
    assert_int_equal(r.projection.bucket.projection_class, RV_PROJECTION_DYNAMIC);
    /* An update of an incarnation newer than the live one names nothing live. */
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 9, 3, RV_PROJECTION_TRANSLUCENT, NULL), RV_OK);
    c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_UNKNOWN_KEY], 1);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_unregister_of_old_incarnation_never_removes_replacement(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 9, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_register(f.journal, 0, 9, 2, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 9, 1, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_STALE_INCARNATION], 1);
    assert_int_equal(c.unregistered, 0);
    assert_true(is_live(f.scene, 9));
    assert_int_equal(record_of(f.scene, 9).incarnation, 2);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 9, 2, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 9, 2, NULL), RV_OK);
    c = apply(&f);
    assert_int_equal(c.unregistered, 1);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_UNKNOWN_KEY], 1);
    assert_false(is_live(f.scene, 9));
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_update_of_unknown_key_is_rejected(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 123, 1, 0, NULL), RV_OK);
    rv_projection_bucket b = { RV_PROJECTION_DYNAMIC, 0, 0 };
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 123, 1, &b, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 123, 1, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.taken, 3);
    assert_int_equal(c.applied, 0);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_UNKNOWN_KEY], 3);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 0);
    free_fixture(&f);
}

static void test_clear_generation_drops_everything_and_rejects_late_old_deltas(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    uint64_t rng = 5;
    for (uint64_t k = 0; k < 50; k++) {
        rv_projection p = make_projection(&rng, k, 50, 8);
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    }
    apply(&f);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 50);
    assert_int_equal(rv_journal_clear_generation(f.journal, 1, NULL), RV_OK);
    /* Late deltas of generation 0, appended after the clear. */
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 1000, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 3, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 4, 1, NULL), RV_OK);
    /* The new generation's own deltas are taken. */
    assert_int_equal(rv_journal_register(f.journal, 1, 3, 1, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.cleared, 50);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_OLDER_GENERATION], 3);
    assert_int_equal(c.registered, 1);
    rv_projection_counts n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.projections, 1);
    assert_int_equal(n.cells, 0);
    assert_int_equal(rv_render_scene_get_stats(f.scene).generation, 1);
    assert_int_equal(record_of(f.scene, 3).generation, 1);
    /* A ClearGeneration that does not move the scene forward is stale. */
    assert_int_equal(rv_journal_clear_generation(f.journal, 1, NULL), RV_OK);
    assert_int_equal(rv_journal_clear_generation(f.journal, 0, NULL), RV_OK);
    c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_OLDER_GENERATION], 2);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 1);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_newer_generation_is_rejected_until_clear_generation(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 2, 1, 1, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_NEWER_GENERATION], 1);
    assert_false(is_live(f.scene, 1));
    assert_int_equal(rv_journal_clear_generation(f.journal, 2, NULL), RV_OK);
    assert_int_equal(rv_journal_register(f.journal, 2, 1, 1, &p, NULL), RV_OK);
    c = apply(&f);
    assert_int_equal(c.applied, 2);
    assert_true(is_live(f.scene, 1));
    free_fixture(&f);
}

static void test_initial_generation_comes_from_the_desc(void **state)
{
    (void)state;
    rv_render_scene_desc desc = {0};
    desc.initial_generation = 7;
    fixture f = make_fixture(&desc);
    assert_int_equal(rv_render_scene_get_stats(f.scene).generation, 7);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 6, 1, 1, &p, NULL), RV_OK);
    assert_int_equal(rv_journal_register(f.journal, 7, 2, 1, &p, NULL), RV_OK);
    rv_apply_counts c = apply(&f);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_OLDER_GENERATION], 1);
    assert_int_equal(c.applied, 1);
    free_fixture(&f);
}

/* ---- sequences, replay ---- */

static rv_delta *copy_pending(const rv_journal *j, uint32_t *count)
{
    const rv_delta *pending = rv_journal_pending(j, count);
    rv_delta *copy = malloc((*count + 1) * sizeof *copy);
    if (*count)
        memcpy(copy, pending, *count * sizeof *copy);
    return copy;
}

static void test_replay_rejects_repeated_and_backwards_sequences(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    for (uint64_t k = 0; k < 4; k++)
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    uint32_t n;
    rv_delta *record = copy_pending(f.journal, &n);
    assert_int_equal(n, 4);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(record[i].sequence, i + 1);
    apply(&f);

    rv_render_scene *replica;
    assert_int_equal(rv_render_scene_create(NULL, &replica), RV_OK);
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply_deltas(replica, record, n, &c), RV_OK);
    assert_int_equal(c.applied, 4);
    assert_true(digest_equal(digest_of(replica), digest_of(f.scene)));
    /* The same record again: every sequence repeats. */
    assert_int_equal(rv_render_scene_apply_deltas(replica, record, n, &c), RV_OK);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_SEQUENCE], 4);
    /* Backwards inside one stream: 5 is taken, then 2 is behind it. */
    rv_delta merged[2];
    memset(merged, 0, sizeof merged);
    merged[0].kind = RV_DELTA_UNREGISTER;
    merged[0].key = 0;
    merged[0].incarnation = 1;
    merged[0].sequence = 5;
    merged[1] = merged[0];
    merged[1].key = 1;
    merged[1].sequence = 2;
    assert_int_equal(rv_render_scene_apply_deltas(replica, merged, 2, &c), RV_OK);
    assert_int_equal(c.applied, 1);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_SEQUENCE], 1);
    assert_false(is_live(replica, 0));
    assert_true(is_live(replica, 1));
    assert_int_equal(rv_render_scene_get_stats(replica).last_sequence, 5);
    check_indices(replica);
    rv_render_scene_destroy(replica);
    free(record);
    free_fixture(&f);
}

static void test_replay_rejects_malformed_deltas(void **state)
{
    (void)state;
    rv_render_scene *s;
    assert_int_equal(rv_render_scene_create(NULL, &s), RV_OK);
    rv_delta d[4];
    memset(d, 0, sizeof d);
    d[0].kind = RV_DELTA_REGISTER;
    d[0].projection = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    d[0].projection.transform.position[1] = NAN;
    d[0].sequence = 1;
    d[1] = d[0];
    d[1].projection = simple_projection(RV_PROJECTION_CLASS_COUNT_, 0, 0);
    d[1].sequence = 2;
    d[2].kind = (rv_delta_kind)99;
    d[2].sequence = 3;
    d[3].kind = RV_DELTA_UPDATE_FLAGS;
    d[3].projection.flags = 1u << 20;
    d[3].sequence = 4;
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply_deltas(s, d, 4, &c), RV_OK);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_INVALID], 4);
    assert_int_equal(rv_render_scene_counts(s).projections, 0);
    /* A malformed delta does not use up its sequence. */
    d[0].projection.transform.position[1] = 0.0f;
    assert_int_equal(rv_render_scene_apply_deltas(s, d, 1, &c), RV_OK);
    assert_int_equal(c.applied, 1);
    assert_int_equal(rv_render_scene_apply_deltas(s, NULL, 0, &c), RV_OK);
    assert_int_equal(rv_render_scene_apply_deltas(s, NULL, 1, &c), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_apply_deltas(NULL, d, 1, &c), RV_ERR_INVALID_ARG);
    rv_render_scene_destroy(s);
}

/* ---- reentrancy and carry-over ---- */

typedef struct reentrant {
    rv_journal *journal;
    uint32_t appended;
    uint32_t observed;
    uint64_t last_sequence;
    bool sequences_increase;
    rv_render_scene *scene;
    rv_result nested_apply;
    rv_result nested_publish;
    rv_delta *record; /* every observed delta, for replay */
    uint32_t record_count;
} reentrant;

/* Each Register of a key below 1000 registers its equipped child (key + 1000) and updates
 * its flags from inside the drain; enough appends to grow the journal's buffer. */
static void append_children(const rv_delta *d, rv_delta_outcome o, void *user)
{
    reentrant *r = user;
    if (d->sequence <= r->last_sequence)
        r->sequences_increase = false;
    r->last_sequence = d->sequence;
    r->record[r->record_count++] = *d;
    r->observed++;
    if (r->scene) {
        r->nested_apply = rv_render_scene_apply(r->scene, r->journal, NULL);
        r->nested_publish = rv_render_scene_publish(r->scene, r->journal);
    }
    if (o != RV_DELTA_APPLIED || d->kind != RV_DELTA_REGISTER || d->key >= 1000)
        return;
    rv_projection p = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    p.bucket.parent_key = d->key;
    /* The failing test allocator fails one call only: a retry succeeds. */
    rv_result res = rv_journal_register(r->journal, d->generation, d->key + 1000, 1, &p, NULL);
    if (res == RV_ERR_OUT_OF_MEMORY)
        res = rv_journal_register(r->journal, d->generation, d->key + 1000, 1, &p, NULL);
    assert_int_equal(res, RV_OK);
    res = rv_journal_update_flags(r->journal, d->generation, d->key, d->incarnation, RV_PROJECTION_SELECTABLE, NULL);
    if (res == RV_ERR_OUT_OF_MEMORY)
        res = rv_journal_update_flags(r->journal, d->generation, d->key, d->incarnation, RV_PROJECTION_SELECTABLE, NULL);
    assert_int_equal(res, RV_OK);
    r->appended += 2;
}

static void test_reentrant_append_during_apply_is_drained_in_the_same_apply(void **state)
{
    (void)state;
    enum { PARENTS = 300 };
    reentrant r = {0};
    r.sequences_increase = true;
    r.record = malloc(4 * PARENTS * sizeof(rv_delta));
    rv_journal_desc jd = {0};
    jd.initial_capacity = 4; /* the observer's appends must grow the buffer mid-drain */
    assert_int_equal(rv_journal_create(&jd, &r.journal), RV_OK);
    rv_render_scene_desc sd = {0};
    sd.observer = append_children;
    sd.observer_user = &r;
    sd.initial_capacity = 16;
    rv_render_scene *scene;
    assert_int_equal(rv_render_scene_create(&sd, &scene), RV_OK);
    r.scene = scene;
    for (uint64_t k = 0; k < PARENTS; k++) {
        rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
        assert_int_equal(rv_journal_register(r.journal, 0, k, 1, &p, NULL), RV_OK);
    }
    uint64_t capacity_before = rv_journal_get_memory(r.journal).buffer_bytes;
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply(scene, r.journal, &c), RV_OK);
    assert_true(rv_journal_get_memory(r.journal).buffer_bytes > capacity_before);
    assert_int_equal(r.appended, 2 * PARENTS);
    assert_int_equal(c.taken, 3 * PARENTS);
    assert_int_equal(c.applied, 3 * PARENTS);
    assert_int_equal(r.observed, 3 * PARENTS);
    assert_true(r.sequences_increase);
    assert_int_equal(rv_journal_get_stats(r.journal).pending, 0);
    /* Nested apply and publish from the observer are refused. */
    assert_int_equal(r.nested_apply, RV_ERR_BAD_STATE);
    assert_int_equal(r.nested_publish, RV_ERR_BAD_STATE);
    rv_projection_counts n = rv_render_scene_counts(scene);
    assert_int_equal(n.projections, 2 * PARENTS);
    assert_int_equal(n.equipped, PARENTS);
    assert_int_equal(n.selectable, PARENTS);
    assert_int_equal(rv_render_scene_get_stats(scene).orphaned_children, 0);
    assert_int_equal(rv_render_scene_publish(scene, r.journal), RV_OK);
    check_indices(scene);

    /* The observer's record replays into a fresh scene to the same digest. */
    rv_render_scene *replica;
    assert_int_equal(rv_render_scene_create(NULL, &replica), RV_OK);
    assert_int_equal(rv_render_scene_apply_deltas(replica, r.record, r.record_count, &c), RV_OK);
    assert_int_equal(c.applied, 3 * PARENTS);
    assert_true(digest_equal(digest_of(replica), digest_of(scene)));
    rv_render_scene_destroy(replica);
    rv_render_scene_destroy(scene);
    rv_journal_destroy(r.journal);
    free(r.record);
}

static void test_deltas_left_at_publication_are_an_invariant_failure(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 1, &p, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    /* Appended after the drain: left over when the frame publishes. */
    assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_ERR_INVARIANT);
    assert_int_equal(rv_render_scene_get_stats(f.scene).carry_over, 1);
    assert_int_equal(rv_render_scene_get_stats(f.scene).publishes, 0);
    assert_int_equal(rv_render_scene_counts(f.scene).dirty, 1); /* kept */
    apply(&f);
    assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_OK);
    assert_int_equal(rv_render_scene_get_stats(f.scene).carry_over, 1);
    assert_int_equal(rv_render_scene_get_stats(f.scene).publishes, 1);
    assert_int_equal(rv_render_scene_publish(NULL, f.journal), RV_ERR_INVALID_ARG);
    free_fixture(&f);
}

static void test_publish_clears_the_dirty_index(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    for (uint64_t k = 0; k < 10; k++)
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_render_scene_counts(f.scene).dirty, 10);
    assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_OK);
    assert_int_equal(rv_render_scene_counts(f.scene).dirty, 0);
    assert_int_equal(record_of(f.scene, 3).dirty, 0);
    rv_projection_transform t = p.transform;
    t.position[2] = 3.0f;
    assert_int_equal(rv_journal_update_transform(f.journal, 0, 3, 1, &t, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 3, 1, RV_PROJECTION_SELECTABLE, NULL), RV_OK);
    rv_projection_appearance a = { 1, 2 };
    assert_int_equal(rv_journal_update_appearance(f.journal, 0, 4, 1, &a, NULL), RV_OK);
    rv_projection_bucket b = { RV_PROJECTION_CELL_STATIC, 9, 0 };
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 5, 1, &b, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_render_scene_counts(f.scene).dirty, 3);
    assert_int_equal(record_of(f.scene, 3).dirty, RV_DIRTY_TRANSFORM | RV_DIRTY_FLAGS);
    assert_int_equal(record_of(f.scene, 4).dirty, RV_DIRTY_APPEARANCE);
    assert_int_equal(record_of(f.scene, 5).dirty, RV_DIRTY_BUCKET);
    check_indices(f.scene);
    assert_int_equal(rv_render_scene_publish(f.scene, NULL), RV_OK);
    check_indices(f.scene);
    free_fixture(&f);
}

/* ---- indices ---- */

static void test_rebucket_and_flag_updates_move_index_membership(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_CELL_STATIC, 1, RV_PROJECTION_TRANSLUCENT);
    for (uint64_t k = 0; k < 6; k++)
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    apply(&f);
    check_indices(f.scene);
    rv_projection_bucket to_cell2 = { RV_PROJECTION_CELL_STATIC, 2, 0 };
    rv_projection_bucket to_outdoor = { RV_PROJECTION_OUTDOOR_STATIC, 2, 0 };
    rv_projection_bucket to_child = { RV_PROJECTION_EQUIPPED_CHILD, 2, 5 };
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 0, 1, &to_cell2, NULL), RV_OK);
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 1, 1, &to_cell2, NULL), RV_OK);
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 2, 1, &to_outdoor, NULL), RV_OK);
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 3, 1, &to_child, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(f.journal, 0, 4, 1, RV_PROJECTION_LIGHT_CANDIDATE, NULL), RV_OK);
    apply(&f);
    rv_projection_counts n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.cell_static, 4);
    assert_int_equal(n.cells, 2);
    assert_int_equal(n.outdoor_static, 1);
    assert_int_equal(n.dynamic, 1);
    assert_int_equal(n.equipped, 1);
    assert_int_equal(n.translucent, 5);
    assert_int_equal(n.light_candidate, 1);
    check_indices(f.scene);
    /* Emptying a cell removes it; a rebucket into the same cell keeps one entry. */
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 0, 1, &to_outdoor, NULL), RV_OK);
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 1, 1, &to_cell2, NULL), RV_OK);
    apply(&f);
    n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.cells, 2);
    assert_int_equal(rv_journal_rebucket(f.journal, 0, 1, 1, &to_outdoor, NULL), RV_OK);
    apply(&f);
    n = rv_render_scene_counts(f.scene);
    assert_int_equal(n.cells, 1);
    rv_slot_list list;
    assert_int_equal(rv_render_scene_cell(f.scene, 2, &list), RV_OK);
    assert_int_equal(list.count, 0);
    check_indices(f.scene);
    free_fixture(&f);
}

static void test_equipped_children_count_as_orphans_while_their_parent_is_absent(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.bucket.parent_key = 50;
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 1, &child, NULL), RV_OK);
    assert_int_equal(rv_journal_register(f.journal, 0, 2, 1, &child, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_render_scene_get_stats(f.scene).orphaned_children, 2);
    rv_projection parent = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 50, 1, &parent, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_render_scene_get_stats(f.scene).orphaned_children, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 50, 2, &parent, NULL), RV_OK); /* replaced */
    apply(&f);
    assert_int_equal(rv_render_scene_get_stats(f.scene).orphaned_children, 0);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 50, 2, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(f.journal, 0, 2, 1, NULL), RV_OK);
    apply(&f);
    assert_int_equal(rv_render_scene_get_stats(f.scene).orphaned_children, 1);
    check_indices(f.scene);
    free_fixture(&f);
}

/* Whether a frame of world w, looking down -z from (0, 1, 0), lists the projection key
 * (and where: its world position). */
/* A world with its own journal and render scene. */
static rv_world *journal_world(rv_journal **j, rv_render_scene **scene)
{
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    assert_int_equal(rv_world_journal(w, j), RV_OK);
    assert_int_equal(rv_world_render_scene(w, scene), RV_OK);
    return w;
}

/* The camera of frame_lists: at (0, 1, 0) looking down -z, 1920 x 1080, at time_ms. */
static const float front_view_matrix[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1, 0, 1 };
static const float front_projection[16] = { 0.5625f, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1.002f, -1, 0, 0, -0.2002f, 0 };

static rv_view front_view(double time_ms)
{
    rv_view v = { 0 };
    v.view = front_view_matrix;
    v.projection = front_projection;
    v.viewport_width = 1920;
    v.viewport_height = 1080;
    v.time_ms = time_ms;
    return v;
}

static bool frame_lists(rv_world *w, double time_ms, uint64_t key, float at[3])
{
    rv_view v = front_view(time_ms);
    rv_frame_view out;
    assert_int_equal(rv_frame(w, &v, &out), RV_OK);
    for (uint32_t i = 0; i < out.opaque_count; i++)
        if (out.opaque[i].key == key) {
            memcpy(at, &out.opaque[i].world_matrix[12], 3 * sizeof(float));
            return true;
        }
    return false;
}

/* An equipped child's transform is relative to its parent: while no parent holds it (not
 * registered yet, unregistered first, or a loop of parents) it has no placement and is not
 * drawn, rather than drawn with its attachment offset read as a world position. Under its
 * parent it is drawn where the parent puts it. */
static void test_an_equipped_child_without_its_parent_is_not_drawn(void **state)
{
    (void)state;
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    rv_journal *j;
    assert_int_equal(rv_world_journal(w, &j), RV_OK);
    rv_projection parent = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    parent.transform.position[2] = -20;
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.transform.position[1] = 1;
    child.transform.position[2] = -5; /* in front of the camera, read as a world position */
    child.bucket.parent_key = 1;
    float at[3];
    /* The child first: an orphan. */
    assert_int_equal(rv_journal_register(j, 0, 2, 1, &child, NULL), RV_OK);
    assert_false(frame_lists(w, 0, 2, at));
    /* Its parent 20 m ahead: drawn under it, 25 m ahead. */
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &parent, NULL), RV_OK);
    assert_true(frame_lists(w, 16, 2, at));
    assert_true(at[1] == 1.0f && at[2] == -25.0f);
    /* The parent unregistered first (a page unloading in key order): not drawn. */
    assert_int_equal(rv_journal_unregister(j, 0, 1, 1, NULL), RV_OK);
    assert_false(frame_lists(w, 32, 2, at));
    rv_render_scene *scene;
    assert_int_equal(rv_world_render_scene(w, &scene), RV_OK);
    assert_int_equal(rv_render_scene_get_stats(scene).orphaned_children, 1);
    /* A new incarnation of the parent, 10 m ahead, takes it back. */
    parent.transform.position[2] = -10;
    assert_int_equal(rv_journal_register(j, 0, 1, 2, &parent, NULL), RV_OK);
    assert_true(frame_lists(w, 48, 2, at));
    assert_true(at[2] == -15.0f);
    /* The host's own hidden flag still hides it under its parent. */
    child.flags = RV_PROJECTION_HIDDEN;
    assert_int_equal(rv_journal_register(j, 0, 2, 2, &child, NULL), RV_OK);
    assert_false(frame_lists(w, 64, 2, at));
    child.flags = 0;
    assert_int_equal(rv_journal_register(j, 0, 2, 3, &child, NULL), RV_OK);
    assert_true(frame_lists(w, 80, 2, at));
    /* Made a plain dynamic projection (a rebucket), it stands where its transform says. */
    rv_projection_bucket b = { RV_PROJECTION_DYNAMIC, 0, 0 };
    assert_int_equal(rv_journal_rebucket(j, 0, 2, 3, &b, NULL), RV_OK);
    assert_true(frame_lists(w, 96, 2, at));
    assert_true(at[2] == -5.0f);
    rv_world_destroy(w);
}

/* A parent that takes an orphaned equipped child in a drain between rv_frame_begin and
 * rv_frame_cull (the host's rv_render_scene_apply there: the child rebucketed onto a body
 * that stands) does so after the begin's update: the child's world matrix is still the one
 * it had as an orphan (its offset read as a world position), so it stays hidden in that
 * frame, and is drawn under its parent from the next one. */
static void test_an_equipped_child_a_parent_takes_inside_a_frame_waits_for_its_placement(void **state)
{
    (void)state;
    rv_journal *j;
    rv_render_scene *scene;
    rv_world *w = journal_world(&j, &scene);
    rv_projection body = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    body.transform.position[0] = 40;
    body.transform.position[2] = -30;
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.transform.position[1] = 1;
    child.transform.position[2] = -5; /* in front of the camera, read as a world position */
    child.bucket.parent_key = 9;      /* not registered: an orphan */
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &body, NULL), RV_OK);
    assert_int_equal(rv_journal_register(j, 0, 2, 1, &child, NULL), RV_OK);
    float at[3];
    assert_false(frame_lists(w, 0, 2, at));
    assert_true(frame_lists(w, 16, 1, at));
    rv_view v = front_view(32);
    assert_int_equal(rv_frame_begin(w, &v), RV_OK);
    rv_projection_bucket onto_body = { RV_PROJECTION_EQUIPPED_CHILD, 0, 1 };
    assert_int_equal(rv_journal_rebucket(j, 0, 2, 1, &onto_body, NULL), RV_OK);
    assert_int_equal(rv_render_scene_apply(scene, j, NULL), RV_OK); /* the body takes it */
    assert_int_equal(rv_frame_cull(w), RV_OK);
    rv_frame_view out;
    assert_int_equal(rv_frame_end(w, &out), RV_OK);
    bool body_listed = false;
    for (uint32_t i = 0; i < out.opaque_count; i++) {
        assert_true(out.opaque[i].key != 2);
        body_listed |= out.opaque[i].key == 1;
    }
    assert_true(body_listed);
    assert_true(frame_lists(w, 48, 2, at)); /* placed by the next begin's update */
    assert_true(at[0] == 40.0f && at[1] == 1.0f && at[2] == -35.0f);
    rv_world_destroy(w);
}

/* A projection's node takes nothing of the host's under it: when the projection left, a
 * host node there was made a root holding its offset from the body as its world placement
 * (an occluder on it then hid what the camera saw, near the origin). rv_node_create and
 * rv_node_attach refuse such a parent and change nothing; the projection's own equipped
 * children still hang there. */
static void test_host_nodes_are_refused_under_a_projection_s_node(void **state)
{
    (void)state;
    rv_journal *j;
    rv_render_scene *scene;
    rv_world *w = journal_world(&j, &scene);
    rv_projection body = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    body.transform.position[0] = 300;
    assert_int_equal(rv_journal_register(j, 0, 1, 1, &body, NULL), RV_OK);
    rv_projection sword = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    sword.bucket.parent_key = 1;
    assert_int_equal(rv_journal_register(j, 0, 2, 1, &sword, NULL), RV_OK);
    float at[3];
    (void)frame_lists(w, 0, 1, at); /* applies the journal */
    rv_projection_record b, s;
    assert_int_equal(rv_render_scene_read(scene, 0, &b), RV_OK);
    uint32_t slot;
    assert_int_equal(rv_render_scene_find(scene, 2, &slot), RV_OK);
    assert_int_equal(rv_render_scene_read(scene, slot, &s), RV_OK);
    rv_node parent;
    assert_int_equal(rv_node_parent(w, s.node, &parent), RV_OK);
    assert_int_equal(parent.id, b.node.id); /* the sword hangs under the body */
    uint32_t nodes_before = rv_world_scene_stats(w).nodes;
    rv_node shield = { 12345 };
    assert_int_equal(rv_node_create(w, b.node, &shield), RV_ERR_BAD_STATE);
    assert_int_equal(shield.id, 12345);
    assert_int_equal(rv_node_create(w, s.node, &shield), RV_ERR_BAD_STATE);
    rv_node host;
    assert_int_equal(rv_node_create(w, RV_NODE_NONE, &host), RV_OK);
    assert_int_equal(rv_node_attach(w, b.node, host), RV_ERR_BAD_STATE);
    assert_int_equal(rv_node_parent(w, host, &parent), RV_OK);
    assert_int_equal(parent.id, 0);
    assert_int_equal(rv_world_scene_stats(w).nodes, nodes_before + 1);
    /* A stale parent is still answered first. */
    assert_int_equal(rv_journal_unregister(j, 0, 1, 1, NULL), RV_OK);
    (void)frame_lists(w, 16, 1, at);
    assert_int_equal(rv_node_create(w, b.node, &shield), RV_ERR_STALE_HANDLE);
    rv_world_destroy(w);
}

static void test_queries_refuse_bad_arguments(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_slot_list list;
    rv_projection_record r;
    uint32_t slot;
    assert_int_equal(rv_render_scene_index(f.scene, RV_INDEX_NONE, &list), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_index(f.scene, RV_INDEX_COUNT_, &list), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_index(NULL, RV_INDEX_DIRTY, &list), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_cell(f.scene, 1, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_read(f.scene, 0, &r), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_render_scene_read(f.scene, 0, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_find(f.scene, 5, &slot), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_render_scene_find(f.scene, 5, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_node_key(f.scene, RV_NODE_NONE, NULL, NULL), RV_ERR_NOT_FOUND);
    assert_int_equal(rv_render_scene_apply(NULL, f.journal, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_apply(f.scene, NULL, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_digest(f.scene, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_render_scene_create(NULL, NULL), RV_ERR_INVALID_ARG);
    rv_projection_counts n = rv_render_scene_counts(NULL);
    assert_int_equal(n.projections, 0);
    assert_int_equal(rv_render_scene_slot_limit(NULL), 0);
    rv_render_scene_destroy(NULL);
    free_fixture(&f);
}

/* ---- property: random deltas against a reference model and brute-force scans ---- */

static bool transform_equal(const rv_projection_transform *a, const rv_projection_transform *b)
{
    return memcmp(a->position, b->position, sizeof a->position) == 0 &&
           memcmp(a->rotation, b->rotation, sizeof a->rotation) == 0 &&
           memcmp(a->scale, b->scale, sizeof a->scale) == 0 && memcmp(a->bounds, b->bounds, sizeof a->bounds) == 0 &&
           a->bounds_space == b->bounds_space;
}

static bool projection_equal(const rv_projection *a, const rv_projection *b)
{
    return transform_equal(&a->transform, &b->transform) && a->appearance.mesh == b->appearance.mesh &&
           a->appearance.material_variant == b->appearance.material_variant &&
           a->bucket.projection_class == b->bucket.projection_class && a->bucket.cell == b->bucket.cell &&
           a->bucket.parent_key == b->bucket.parent_key && a->flags == b->flags;
}

/* The obviously-correct reference: one entry per key, the rules of docs/design.md §7 applied
 * to every delta in order. */
typedef struct model_entry {
    bool live;
    uint32_t incarnation;
    rv_projection projection;
} model_entry;

typedef struct model {
    model_entry *keys;
    uint32_t key_count;
    uint32_t generation;
} model;

static void model_apply(model *m, const rv_delta *d)
{
    if (d->kind == RV_DELTA_CLEAR_GENERATION) {
        if (d->generation > m->generation) {
            for (uint32_t k = 0; k < m->key_count; k++)
                m->keys[k].live = false;
            m->generation = d->generation;
        }
        return;
    }
    if (d->generation != m->generation)
        return;
    model_entry *e = &m->keys[d->key];
    if (d->kind == RV_DELTA_REGISTER) {
        if (!e->live || d->incarnation > e->incarnation) {
            e->live = true;
            e->incarnation = d->incarnation;
            e->projection = d->projection;
        }
        return;
    }
    if (!e->live || d->incarnation != e->incarnation)
        return;
    switch (d->kind) {
    case RV_DELTA_UPDATE_TRANSFORM: e->projection.transform = d->projection.transform; break;
    case RV_DELTA_UPDATE_APPEARANCE: e->projection.appearance = d->projection.appearance; break;
    case RV_DELTA_UPDATE_FLAGS: e->projection.flags = d->projection.flags; break;
    case RV_DELTA_REBUCKET: e->projection.bucket = d->projection.bucket; break;
    case RV_DELTA_UNREGISTER: e->live = false; break;
    default: break;
    }
}

/* A random delta for a key space of m->key_count keys: random keys, incarnations (mostly
 * the live one, sometimes older or newer), channels, buckets, flags and generations. */
static rv_delta random_delta(uint64_t *rng, const model *m, uint32_t cells)
{
    rv_delta d;
    memset(&d, 0, sizeof d);
    uint64_t roll = rvt_next(rng) % 1000;
    if (roll < 1 && rvt_next(rng) % 8 == 0) {
        d.kind = RV_DELTA_CLEAR_GENERATION;
        d.generation = (rvt_next(rng) % 4) ? m->generation + 1 : m->generation;
        return d;
    }
    d.key = rvt_next(rng) % m->key_count;
    const model_entry *e = &m->keys[d.key];
    uint64_t g = rvt_next(rng) % 100;
    d.generation = g < 96 ? m->generation : g < 98 ? m->generation + 1 : m->generation - 1;
    uint64_t inc = rvt_next(rng) % 10;
    d.incarnation = inc < 7 ? e->incarnation : inc < 8 ? e->incarnation - 1 : e->incarnation + 1;
    if (roll < 220) {
        d.kind = RV_DELTA_REGISTER;
        if (e->live && inc < 7 && (rvt_next(rng) & 1))
            d.incarnation = e->incarnation + 1; /* mostly replacements, some duplicates */
        d.projection = make_projection(rng, d.key, m->key_count, cells);
    } else if (roll < 320) {
        d.kind = RV_DELTA_UNREGISTER;
    } else if (roll < 620) {
        d.kind = RV_DELTA_UPDATE_TRANSFORM;
        d.projection.transform = make_transform(rng);
    } else if (roll < 770) {
        d.kind = RV_DELTA_UPDATE_FLAGS;
        d.projection.flags = (uint32_t)(rvt_next(rng) & RV_PROJECTION_FLAGS_ALL);
    } else if (roll < 870) {
        d.kind = RV_DELTA_UPDATE_APPEARANCE;
        d.projection.appearance.mesh = rvt_next(rng) % 50;
        d.projection.appearance.material_variant = rvt_next(rng) % 3;
    } else {
        d.kind = RV_DELTA_REBUCKET;
        d.projection.bucket = make_bucket(rng, d.key, m->key_count, cells);
    }
    return d;
}

static void assert_scene_matches_model(const rv_render_scene *s, const model *m)
{
    uint32_t live = 0;
    for (uint32_t k = 0; k < m->key_count; k++) {
        const model_entry *e = &m->keys[k];
        assert_int_equal(is_live(s, k), e->live);
        if (!e->live)
            continue;
        live++;
        rv_projection_record r = record_of(s, k);
        assert_int_equal(r.incarnation, e->incarnation);
        assert_int_equal(r.generation, m->generation);
        assert_true(projection_equal(&r.projection, &e->projection));
    }
    assert_int_equal(rv_render_scene_counts(s).projections, live);
    assert_int_equal(rv_render_scene_get_stats(s).generation, m->generation);
}

/* Registers every live projection of s, in shuffled order, into a fresh scene. */
static rv_render_scene *rebuild_shuffled(const rv_render_scene *s, uint64_t *rng)
{
    uint32_t limit = rv_render_scene_slot_limit(s), n = 0;
    rv_projection_record *all = malloc((limit + 1) * sizeof *all);
    for (uint32_t slot = 0; slot < limit; slot++)
        if (rv_render_scene_read(s, slot, &all[n]) == RV_OK)
            n++;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)(rvt_next(rng) % i);
        rv_projection_record t = all[i - 1];
        all[i - 1] = all[j];
        all[j] = t;
    }
    rv_render_scene_desc desc = {0};
    desc.initial_capacity = 1; /* a different growth history and slot layout */
    desc.initial_generation = rv_render_scene_get_stats(s).generation;
    fixture f = make_fixture(&desc);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(rv_journal_register(f.journal, all[i].generation, all[i].key, all[i].incarnation,
                                             &all[i].projection, NULL), RV_OK);
    apply(&f);
    rv_journal_destroy(f.journal);
    free(all);
    return f.scene;
}

static void test_random_deltas_keep_indices_equal_to_brute_force_scans(void **state)
{
    (void)state;
    const uint32_t deltas = 100000, keys = 3000, cells = 40;
    model m = { calloc(keys, sizeof(model_entry)), keys, 0 };
    fixture f = make_fixture(NULL);
    /* The same deltas through a journal that never coalesces, into a second scene. */
    rv_journal_desc every = {0};
    every.keep_every_update = true;
    rv_journal *plain_journal;
    rv_render_scene *plain_scene;
    rv_world *world;
    assert_int_equal(rv_world_create(NULL, &world), RV_OK);
    rv_render_scene_desc bound = {0};
    bound.world = world; /* this one is node-backed too */
    assert_int_equal(rv_journal_create(&every, &plain_journal), RV_OK);
    assert_int_equal(rv_render_scene_create(&bound, &plain_scene), RV_OK);
    uint64_t rng = 0x5EEDull;
    uint32_t tick_left = 0, ticks = 0;
    for (uint32_t i = 0; i < deltas; i++) {
        rv_delta d = random_delta(&rng, &m, cells);
        assert_int_equal(rv_journal_append(f.journal, &d, NULL), RV_OK);
        assert_int_equal(rv_journal_append(plain_journal, &d, NULL), RV_OK);
        model_apply(&m, &d);
        if (tick_left == 0)
            tick_left = 1 + (uint32_t)(rvt_next(&rng) % 700);
        if (--tick_left == 0 || i + 1 == deltas) {
            apply(&f);
            assert_int_equal(rv_render_scene_apply(plain_scene, plain_journal, NULL), RV_OK);
            check_indices(f.scene);
            assert_scene_matches_model(f.scene, &m);
            assert_true(digest_equal(digest_of(f.scene), digest_of(plain_scene)));
            check_nodes(plain_scene, world);
            if (rvt_next(&rng) % 3 == 0)
                assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_OK);
            ticks++;
        }
    }
    rv_render_scene_stats st = rv_render_scene_get_stats(f.scene);
    /* The mix really exercised every rule. */
    assert_true(ticks > 100);
    assert_true(st.totals.replaced > 100);
    assert_true(st.totals.cleared > 100);
    for (int o = RV_DELTA_REJECTED_SEQUENCE + 1; o < RV_DELTA_REJECTED_INVALID; o++)
        assert_true(st.totals.rejected[o] > 100);
    assert_true(rv_journal_get_stats(f.journal).coalesced > 100);
    assert_true(rv_render_scene_counts(f.scene).cells > 10);

    rv_render_scene *shuffled = rebuild_shuffled(f.scene, &rng);
    check_indices(shuffled);
    assert_true(digest_equal(digest_of(shuffled), digest_of(f.scene)));
    rv_render_scene_destroy(shuffled);
    rv_render_scene_destroy(plain_scene);
    assert_int_equal(rv_world_scene_stats(world).nodes, 0);
    rv_world_destroy(world);
    rv_journal_destroy(plain_journal);
    free_fixture(&f);
    free(m.keys);
}

/* The drain looks keys up several deltas ahead of applying them (projection.c's
 * pipeline). With a handful of keys nearly every delta meets a Register, Unregister or
 * ClearGeneration of its own key a few deltas earlier, so an early lookup that outlived
 * the slot it named (freed, then reused by another key) would write the wrong projection:
 * the scene must still equal the reference after every tick, drained from a journal and
 * replayed from an array alike. */
static void test_drain_lookahead_survives_edges_of_the_same_key(void **state)
{
    (void)state;
    const uint32_t keys = 6, cells = 3;
    model m = { calloc(keys, sizeof(model_entry)), keys, 0 };
    rv_journal_desc every = {0};
    every.keep_every_update = true; /* no coalescing: every delta reaches the drain */
    fixture f = make_fixture(NULL);
    rv_journal_destroy(f.journal);
    assert_int_equal(rv_journal_create(&every, &f.journal), RV_OK);
    rv_render_scene *replayed;
    assert_int_equal(rv_render_scene_create(NULL, &replayed), RV_OK);
    uint64_t rng = 0xED6E;
    uint64_t applied = 0;
    for (int tick = 0; tick < RVT_HEAVY(400, 60); tick++) {
        uint32_t n = 1 + (uint32_t)(rvt_next(&rng) % 120);
        for (uint32_t i = 0; i < n; i++) {
            rv_delta d = random_delta(&rng, &m, cells);
            assert_int_equal(rv_journal_append(f.journal, &d, NULL), RV_OK);
            model_apply(&m, &d);
        }
        uint32_t count;
        const rv_delta *pending = rv_journal_pending(f.journal, &count);
        rv_delta *copy = malloc(count * sizeof *copy);
        memcpy(copy, pending, count * sizeof *copy);
        applied += apply(&f).applied;
        check_indices(f.scene);
        assert_scene_matches_model(f.scene, &m);
        assert_int_equal(rv_render_scene_apply_deltas(replayed, copy, count, NULL), RV_OK);
        check_indices(replayed);
        assert_true(digest_equal(digest_of(replayed), digest_of(f.scene)));
        free(copy);
    }
    assert_true(applied > 1000);
    assert_true(rv_render_scene_get_stats(f.scene).totals.replaced > 100);
    rv_render_scene_destroy(replayed);
    free_fixture(&f);
    free(m.keys);
}

/* A log-uniform magnitude in [10^lo, 10^hi] with a random sign. */
static double signed_magnitude(uint64_t *rng, double lo, double hi)
{
    double m = pow(10.0, lo + (hi - lo) * (double)(rvt_next(rng) >> 11) / 9007199254740992.0);
    return (rvt_next(rng) & 1) ? m : -m;
}

/* The world sphere a transform's world-space bounds describe, mapped into local space in
 * long double (the slow reference): the largest magnitude among the local centre's
 * components and the local radius. */
static long double local_extent(const rv_projection_transform *t)
{
    long double q[4], n = 0.0L;
    for (int k = 0; k < 4; k++)
        n += (long double)t->rotation[k] * t->rotation[k];
    n = sqrtl(n);
    for (int k = 0; k < 4; k++)
        q[k] = t->rotation[k] / n;
    long double v[3], r[3];
    for (int k = 0; k < 3; k++)
        v[k] = (long double)t->bounds[k] - t->position[k];
    /* rotation matrix of q, transposed (the inverse rotation) */
    long double x = q[0], y = q[1], z = q[2], w = q[3];
    long double m[3][3] = { { 1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w) },
                            { 2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w) },
                            { 2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y) } };
    long double smallest = INFINITY, extent = 0.0L;
    for (int i = 0; i < 3; i++) {
        r[i] = (m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2]) / t->scale[i];
        extent = fabsl(r[i]) > extent ? fabsl(r[i]) : extent;
        long double a = fabsl((long double)t->scale[i]);
        smallest = a < smallest ? a : smallest;
    }
    long double radius = t->bounds[3] / smallest; /* the local sphere holds the preimage */
    return radius > extent ? radius : extent;
}

/* World-space bounds under extreme transforms (scales from 1e-38 to 1e38, offsets and
 * radii up to 1e30): a Register is refused (RV_ERR_INVALID_ARG, nothing changes) when the
 * backing node's local sphere cannot be a float or a scale is subnormal, and otherwise the node's world sphere
 * encloses the host's sphere, checked in double against the host's numbers. Before, such a
 * Register was accepted and the node kept no sphere, or its old one: a hole in the world. */
static void test_world_bounds_under_extreme_transforms_enclose_or_are_refused(void **state)
{
    (void)state;
    rv_world *world;
    assert_int_equal(rv_world_create(NULL, &world), RV_OK);
    rv_render_scene_desc desc = {0};
    desc.world = world;
    fixture f = make_fixture(&desc);
    uint64_t rng = 0xB0D5;
    uint32_t accepted = 0, refused = 0;
    for (uint64_t key = 1; key <= (uint64_t)RVT_HEAVY(20000, 3000); key++) {
        rv_projection p = make_projection(&rng, key, 1, 1);
        p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
        p.bucket.parent_key = 0;
        rv_projection_transform *t = &p.transform;
        t->bounds_space = RV_BOUNDS_WORLD;
        for (int k = 0; k < 3; k++) {
            t->scale[k] = (float)signed_magnitude(&rng, -38.0, 38.0);
            t->position[k] = (float)signed_magnitude(&rng, -3.0, 30.0);
            t->bounds[k] = t->position[k] + (float)signed_magnitude(&rng, -6.0, 30.0);
        }
        t->bounds[3] = (float)fabs(signed_magnitude(&rng, -6.0, 30.0));
        long double extent = local_extent(t);
        rv_result r = rv_journal_register(f.journal, 0, key, 1, &p, NULL);
        bool subnormal_scale = false; /* world bounds need normal scales (1e-38 is below FLT_MIN) */
        for (int k = 0; k < 3; k++)
            subnormal_scale |= fpclassify(t->scale[k]) == FP_SUBNORMAL;
        if (r != RV_OK) {
            assert_int_equal(r, RV_ERR_INVALID_ARG);
            assert_true(extent > FLT_MAX / 2.0L || subnormal_scale); /* refused only when it cannot fit */
            refused++;
            continue;
        }
        assert_false(subnormal_scale);
        assert_true(extent < FLT_MAX * 2.0L); /* accepted only when it fits */
        rv_apply_counts c = apply(&f);
        assert_int_equal(c.applied, 1);
        assert_int_equal(rv_update_world(world), RV_OK);
        uint32_t slot;
        rv_projection_record rec;
        assert_int_equal(rv_render_scene_find(f.scene, key, &slot), RV_OK);
        assert_int_equal(rv_render_scene_read(f.scene, slot, &rec), RV_OK);
        float b[4];
        assert_int_equal(rv_node_world_bounds(world, rec.node, b), RV_OK);
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += ((double)b[k] - t->bounds[k]) * ((double)b[k] - t->bounds[k]);
        if (!(sqrt(d2) + t->bounds[3] <= (double)b[3]))
            fail_msg("key %llu: node sphere (%g %g %g r %g) misses (%g %g %g r %g)", (unsigned long long)key,
                     b[0], b[1], b[2], b[3], t->bounds[0], t->bounds[1], t->bounds[2], t->bounds[3]);
        accepted++;
        if (accepted % 64 == 0) { /* keep the scene small: a fresh one */
            rv_render_scene_destroy(f.scene);
            rv_journal_destroy(f.journal);
            f = make_fixture(&desc);
        }
    }
    assert_true(accepted > 100);
    assert_true(refused > 100);
    /* The same rule through an UpdateTransform (its own append path): refused, nothing
     * appended. */
    rv_projection p = make_projection(&rng, 1, 1, 1);
    p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
    p.bucket.parent_key = 0;
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 1, &p, NULL), RV_OK);
    rv_projection_transform t = p.transform;
    t.bounds_space = RV_BOUNDS_WORLD;
    t.rotation[0] = t.rotation[1] = t.rotation[2] = 0.0f;
    t.rotation[3] = 1.0f;
    t.scale[0] = 1e-36f; /* the centre 1000 units along x: 1e39 in local space */
    for (int k = 0; k < 3; k++)
        t.bounds[k] = t.position[k] + (k == 0 ? 1000.0f : 0.0f);
    t.bounds[3] = 1.0f;
    uint32_t before = rv_journal_get_stats(f.journal).pending;
    assert_int_equal(rv_journal_update_transform(f.journal, 0, 1, 1, &t, NULL), RV_ERR_INVALID_ARG);
    assert_int_equal(rv_journal_get_stats(f.journal).pending, before);
    t.scale[0] = 1.0f; /* fits: accepted */
    assert_int_equal(rv_journal_update_transform(f.journal, 0, 1, 1, &t, NULL), RV_OK);
    free_fixture(&f);
    rv_world_destroy(world);
}

/* ---- digest ---- */

/* Changes one field of the projection with key k through a delta, checks the digest
 * moved, restores it and checks the digest came back. */
static void expect_digest_change(fixture *f, rv_scene_digest base, const rv_delta *change, const rv_delta *restore)
{
    assert_int_equal(rv_journal_append(f->journal, change, NULL), RV_OK);
    rv_apply_counts c = apply(f);
    assert_int_equal(c.applied, 1);
    rv_scene_digest changed = digest_of(f->scene);
    assert_false(changed.hash[0] == base.hash[0]);
    assert_false(changed.hash[1] == base.hash[1]);
    assert_int_equal(rv_journal_append(f->journal, restore, NULL), RV_OK);
    c = apply(f);
    assert_int_equal(c.applied, 1);
    assert_true(digest_equal(digest_of(f->scene), base));
}

static void test_changing_any_single_field_changes_the_digest(void **state)
{
    (void)state;
    enum { KEYS = 40 };
    fixture f = make_fixture(NULL);
    uint64_t rng = 99;
    for (uint64_t k = 0; k < KEYS; k++) {
        rv_projection p = make_projection(&rng, k, KEYS, 5);
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    }
    apply(&f);
    rv_scene_digest base = digest_of(f.scene);
    assert_true(digest_equal(digest_of(f.scene), base)); /* stable when nothing changes */
    for (uint64_t k = 0; k < KEYS; k++) {
        rv_projection_record r = record_of(f.scene, k);
        rv_delta restore, change;
        memset(&restore, 0, sizeof restore);
        restore.key = k;
        restore.incarnation = r.incarnation;
        restore.generation = r.generation;

        /* every float of the transform, and the bounds space */
        restore.kind = RV_DELTA_UPDATE_TRANSFORM;
        restore.projection.transform = r.projection.transform;
        for (int field = 0; field < 15; field++) {
            change = restore;
            rv_projection_transform *t = &change.projection.transform;
            float *floats[14] = { &t->position[0], &t->position[1], &t->position[2], &t->rotation[0],
                                  &t->rotation[1], &t->rotation[2], &t->rotation[3], &t->scale[0],
                                  &t->scale[1], &t->scale[2], &t->bounds[0], &t->bounds[1],
                                  &t->bounds[2], &t->bounds[3] };
            if (field < 14)
                *floats[field] += 0.25f;
            else
                t->bounds_space = t->bounds_space == RV_BOUNDS_LOCAL ? RV_BOUNDS_WORLD : RV_BOUNDS_LOCAL;
            expect_digest_change(&f, base, &change, &restore);
        }
        /* appearance: mesh, material variant */
        restore.kind = RV_DELTA_UPDATE_APPEARANCE;
        memset(&restore.projection, 0, sizeof restore.projection);
        restore.projection.appearance = r.projection.appearance;
        change = restore;
        change.projection.appearance.mesh ^= 1;
        expect_digest_change(&f, base, &change, &restore);
        change = restore;
        change.projection.appearance.material_variant += 1;
        expect_digest_change(&f, base, &change, &restore);
        /* each flag bit */
        restore.kind = RV_DELTA_UPDATE_FLAGS;
        memset(&restore.projection, 0, sizeof restore.projection);
        restore.projection.flags = r.projection.flags;
        for (uint32_t bit = 1; bit <= RV_PROJECTION_LIGHT_CANDIDATE; bit <<= 1) {
            change = restore;
            change.projection.flags ^= bit;
            expect_digest_change(&f, base, &change, &restore);
        }
        /* class, cell, parent key */
        restore.kind = RV_DELTA_REBUCKET;
        memset(&restore.projection, 0, sizeof restore.projection);
        restore.projection.bucket = r.projection.bucket;
        change = restore;
        change.projection.bucket.cell += 1;
        expect_digest_change(&f, base, &change, &restore);
        change = restore;
        if (r.projection.bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD) {
            change.projection.bucket.parent_key = r.projection.bucket.parent_key == 1000 ? 1001 : 1000;
            expect_digest_change(&f, base, &change, &restore);
            change = restore;
            change.projection.bucket.parent_key = 0;
        }
        change.projection.bucket.projection_class = r.projection.bucket.projection_class == RV_PROJECTION_DYNAMIC
                                                        ? RV_PROJECTION_OUTDOOR_STATIC : RV_PROJECTION_DYNAMIC;
        expect_digest_change(&f, base, &change, &restore);
        /* incarnation: re-register under a newer one, then restore the original */
        rv_delta reg;
        memset(&reg, 0, sizeof reg);
        reg.kind = RV_DELTA_REGISTER;
        reg.key = k;
        reg.generation = r.generation;
        reg.incarnation = r.incarnation + 1;
        reg.projection = r.projection;
        assert_int_equal(rv_journal_append(f.journal, &reg, NULL), RV_OK);
        apply(&f);
        assert_false(digest_of(f.scene).hash[0] == base.hash[0]);
        rv_delta unreg = reg;
        unreg.kind = RV_DELTA_UNREGISTER;
        memset(&unreg.projection, 0, sizeof unreg.projection);
        assert_int_equal(rv_journal_append(f.journal, &unreg, NULL), RV_OK);
        reg.incarnation = r.incarnation;
        assert_int_equal(rv_journal_append(f.journal, &reg, NULL), RV_OK);
        apply(&f);
        assert_true(digest_equal(digest_of(f.scene), base));
        /* key: the same projection under another key */
        unreg.incarnation = r.incarnation;
        assert_int_equal(rv_journal_append(f.journal, &unreg, NULL), RV_OK);
        reg.key = k + 100000;
        assert_int_equal(rv_journal_append(f.journal, &reg, NULL), RV_OK);
        apply(&f);
        rv_scene_digest moved = digest_of(f.scene);
        assert_int_equal(moved.projections, base.projections);
        assert_false(moved.hash[0] == base.hash[0]);
        unreg.key = k + 100000;
        assert_int_equal(rv_journal_append(f.journal, &unreg, NULL), RV_OK);
        reg.key = k;
        reg.projection = r.projection;
        assert_int_equal(rv_journal_append(f.journal, &reg, NULL), RV_OK);
        apply(&f);
        assert_true(digest_equal(digest_of(f.scene), base));
    }
    /* generation: the scene-wide field */
    rv_render_scene_desc desc = {0};
    desc.initial_generation = 1;
    fixture g = make_fixture(&desc);
    fixture h = make_fixture(NULL);
    assert_false(digest_of(g.scene).hash[0] == digest_of(h.scene).hash[0]);
    free_fixture(&g);
    free_fixture(&h);
    free_fixture(&f);
}

static void test_replay_of_a_recorded_journal_gives_the_same_digest(void **state)
{
    (void)state;
    enum { KEYS = 500, TICKS = 60 };
    model m = { calloc(KEYS, sizeof(model_entry)), KEYS, 0 };
    fixture f = make_fixture(NULL);
    uint32_t cap = 64, n = 0;
    rv_delta *record = malloc(cap * sizeof *record);
    uint64_t rng = 4242;
    for (int tick = 0; tick < TICKS; tick++) {
        uint32_t per_tick = 1 + (uint32_t)(rvt_next(&rng) % 300);
        for (uint32_t i = 0; i < per_tick; i++) {
            rv_delta d = random_delta(&rng, &m, 12);
            assert_int_equal(rv_journal_append(f.journal, &d, NULL), RV_OK);
            model_apply(&m, &d);
        }
        /* Record: copy the journal's deltas through the public API before the drain. */
        uint32_t pending;
        const rv_delta *p = rv_journal_pending(f.journal, &pending);
        while (n + pending > cap)
            record = realloc(record, (cap *= 2) * sizeof *record);
        memcpy(record + n, p, pending * sizeof *p);
        n += pending;
        apply(&f);
    }
    rv_scene_digest original = digest_of(f.scene);
    rv_render_scene *replica;
    assert_int_equal(rv_render_scene_create(NULL, &replica), RV_OK);
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply_deltas(replica, record, n, &c), RV_OK);
    assert_int_equal(c.taken, n);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_SEQUENCE], 0);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_INVALID], 0);
    assert_true(digest_equal(digest_of(replica), original));
    assert_scene_matches_model(replica, &m);
    check_indices(replica);
    /* Replaying it again bites on every sequence and changes nothing. */
    assert_int_equal(rv_render_scene_apply_deltas(replica, record, n, &c), RV_OK);
    assert_int_equal(c.rejected[RV_DELTA_REJECTED_SEQUENCE], n);
    assert_true(digest_equal(digest_of(replica), original));
    rv_render_scene_destroy(replica);
    free(record);
    free(m.keys);
    free_fixture(&f);
}

/* ---- steady frames, memory ---- */

static uint64_t allocation_calls(rv_alloc_stats a)
{
    return a.allocations + a.reallocations;
}

static void test_steady_frames_allocate_nothing(void **state)
{
    (void)state;
    enum { KEYS = 5000, WARM = 300, FRAMES = 1000 };
    fixture f = make_fixture(NULL);
    uint64_t rng = 77;
    uint32_t *incarnation = calloc(KEYS, sizeof *incarnation);
    rv_projection *proj = malloc(KEYS * sizeof *proj);
    for (uint64_t k = 0; k < KEYS; k++) {
        proj[k] = make_projection(&rng, k, KEYS, 60);
        incarnation[k] = 1;
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &proj[k], NULL), RV_OK);
    }
    apply(&f);
    uint64_t scene_calls = 0, journal_calls = 0;
    for (int frame = 0; frame < WARM + FRAMES; frame++) {
        if (frame == WARM) {
            scene_calls = allocation_calls(rv_render_scene_alloc_stats(f.scene));
            journal_calls = allocation_calls(rv_journal_alloc_stats(f.journal));
        }
        for (int i = 0; i < 60; i++) {
            uint64_t k = rvt_next(&rng) % KEYS;
            uint64_t what = rvt_next(&rng) % 10;
            if (what < 6) {
                rv_projection_transform t = make_transform(&rng);
                assert_int_equal(rv_journal_update_transform(f.journal, 0, k, incarnation[k], &t, NULL), RV_OK);
            } else if (what < 8) {
                uint32_t flags = (uint32_t)(rvt_next(&rng) & RV_PROJECTION_FLAGS_ALL);
                assert_int_equal(rv_journal_update_flags(f.journal, 0, k, incarnation[k], flags, NULL), RV_OK);
            } else if (what < 9) {
                rv_projection_appearance a = { rvt_next(&rng), 1 };
                assert_int_equal(rv_journal_update_appearance(f.journal, 0, k, incarnation[k], &a, NULL), RV_OK);
            } else {
                /* Churn: the object is recreated under a new incarnation where it was. */
                incarnation[k]++;
                assert_int_equal(rv_journal_register(f.journal, 0, k, incarnation[k], &proj[k], NULL), RV_OK);
            }
        }
        apply(&f);
        rv_scene_digest d;
        assert_int_equal(rv_render_scene_digest(f.scene, &d), RV_OK);
        assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_OK);
        /* A frame with no deltas at all. */
        apply(&f);
        assert_int_equal(rv_render_scene_publish(f.scene, f.journal), RV_OK);
    }
    assert_int_equal(allocation_calls(rv_render_scene_alloc_stats(f.scene)), scene_calls);
    assert_int_equal(allocation_calls(rv_journal_alloc_stats(f.journal)), journal_calls);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, KEYS);
    check_indices(f.scene);
    free(incarnation);
    free(proj);
    free_fixture(&f);
}

/* The same kind of churn through a world's own journal and render scene, drained by
 * rv_frame: rv_world_alloc_stats counts their heaps with the world's, and once every store
 * has grown to what the frames need a frame allocates nothing, re-registrations (a node
 * destroyed and made again) included. */
static void test_steady_frames_of_a_world_s_journal_allocate_nothing(void **state)
{
    (void)state;
    enum { KEYS = 2000, WARM = 200, FRAMES = 600 };
    rv_world *w;
    assert_int_equal(rv_world_create(NULL, &w), RV_OK);
    uint64_t alone = allocation_calls(rv_world_alloc_stats(w));
    rv_journal *j;
    rv_render_scene *scene;
    assert_int_equal(rv_world_journal(w, &j), RV_OK);
    assert_int_equal(rv_world_render_scene(w, &scene), RV_OK);
    /* The world's count takes in the journal's and the render scene's own heaps. */
    assert_true(allocation_calls(rv_world_alloc_stats(w)) >=
                alone + allocation_calls(rv_journal_alloc_stats(j)) + allocation_calls(rv_render_scene_alloc_stats(scene)));
    assert_true(allocation_calls(rv_journal_alloc_stats(j)) > 0);
    uint64_t rng = 31;
    uint32_t *incarnation = calloc(KEYS, sizeof *incarnation);
    rv_projection *proj = malloc(KEYS * sizeof *proj);
    assert_non_null(incarnation);
    assert_non_null(proj);
    for (uint64_t k = 0; k < KEYS; k++) {
        proj[k] = make_projection(&rng, k, KEYS, 60);
        incarnation[k] = 1;
        assert_int_equal(rv_journal_register(j, 0, k, 1, &proj[k], NULL), RV_OK);
    }
    float at[3];
    uint64_t calls = 0;
    for (int frame = 0; frame < WARM + FRAMES; frame++) {
        if (frame == WARM)
            calls = allocation_calls(rv_world_alloc_stats(w));
        /* Eight frames' worth of edits, repeated: the first rounds meet every peak a
         * frame of them reaches (a cell's bucket, say, holds room for its members and the
         * frame's re-registrations there before the old ones leave). */
        uint64_t edits = 1000 + (uint64_t)(frame % 8);
        for (int i = 0; i < 40; i++) {
            uint64_t k = rvt_next(&edits) % KEYS, what = rvt_next(&edits) % 10;
            if (what < 6) {
                rv_projection_transform t = make_transform(&edits);
                assert_int_equal(rv_journal_update_transform(j, 0, k, incarnation[k], &t, NULL), RV_OK);
            } else if (what < 8) {
                uint32_t flags = (uint32_t)(rvt_next(&edits) & RV_PROJECTION_FLAGS_ALL);
                assert_int_equal(rv_journal_update_flags(j, 0, k, incarnation[k], flags, NULL), RV_OK);
            } else if (what < 9) {
                rv_projection_appearance a = { rvt_next(&edits), 1 };
                assert_int_equal(rv_journal_update_appearance(j, 0, k, incarnation[k], &a, NULL), RV_OK);
            } else {
                incarnation[k]++;
                assert_int_equal(rv_journal_register(j, 0, k, incarnation[k], &proj[k], NULL), RV_OK);
            }
        }
        (void)frame_lists(w, 16.0 * frame, UINT64_MAX, at);
    }
    assert_int_equal(allocation_calls(rv_world_alloc_stats(w)), calls);
    assert_int_equal(rv_render_scene_counts(scene).projections, KEYS);
    free(incarnation);
    free(proj);
    rv_world_destroy(w);
}

static void test_memory_accounting_matches_the_bytes_held(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_render_scene_memory m0 = rv_render_scene_get_memory(f.scene);
    assert_int_equal(m0.total_bytes, rv_render_scene_alloc_stats(f.scene).bytes_live);
    uint64_t rng = 3;
    for (uint64_t k = 0; k < 3000; k++) {
        rv_projection p = make_projection(&rng, k, 3000, 100);
        assert_int_equal(rv_journal_register(f.journal, 0, k, 1, &p, NULL), RV_OK);
    }
    rv_journal_memory jm = rv_journal_get_memory(f.journal);
    assert_true(jm.buffer_bytes >= 3000 * sizeof(rv_delta));
    assert_int_equal(jm.total_bytes, rv_journal_alloc_stats(f.journal).bytes_live);
    apply(&f);
    digest_of(f.scene);
    rv_render_scene_memory m = rv_render_scene_get_memory(f.scene);
    assert_true(m.table_bytes > m0.table_bytes);
    assert_true(m.cell_bytes > 0);
    assert_true(m.link_bytes > 0);
    assert_true(m.digest_bytes >= 3000 * 2 * 12);
    for (int i = RV_INDEX_NONE + 1; i < RV_INDEX_COUNT_; i++)
        assert_true(m.index_bytes[i] >= 3000 * sizeof(uint32_t));
    assert_int_equal(m.index_bytes[RV_INDEX_NONE], 0);
    assert_int_equal(m.total_bytes, rv_render_scene_alloc_stats(f.scene).bytes_live);
    jm = rv_journal_get_memory(f.journal);
    assert_int_equal(jm.total_bytes, rv_journal_alloc_stats(f.journal).bytes_live);
    rv_render_scene_memory none = rv_render_scene_get_memory(NULL);
    assert_int_equal(none.total_bytes, 0);
    free_fixture(&f);
}

/* ---- out of memory ---- */

typedef struct sweep_object {
    rv_allocator allocator;
    rv_journal *journal;
    rv_render_scene *scene;
    rv_delta *record;
    uint32_t record_count;
} sweep_object;

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t scene_fingerprint(void *object)
{
    sweep_object *o = object;
    uint64_t h = 0xcbf29ce484222325ull;
    if (o->scene) {
        rv_scene_digest d;
        assert_int_equal(rv_render_scene_digest(o->scene, &d), RV_OK);
        rv_projection_counts c = rv_render_scene_counts(o->scene);
        rv_render_scene_stats st = rv_render_scene_get_stats(o->scene);
        h = hash_bytes(h, d.hash, sizeof d.hash);
        h = hash_bytes(h, &c, sizeof c);
        h = hash_bytes(h, &st.totals, sizeof st.totals);
        h = hash_bytes(h, &st.last_sequence, sizeof st.last_sequence);
        h = hash_bytes(h, &st.orphaned_children, sizeof st.orphaned_children);
    }
    if (o->journal) {
        uint32_t n;
        const rv_delta *p = rv_journal_pending(o->journal, &n);
        h = hash_bytes(h, &n, sizeof n);
        if (n)
            h = hash_bytes(h, p, n * sizeof *p);
    }
    return h;
}

static void sweep_teardown(void *object)
{
    sweep_object *o = object;
    rv_render_scene_destroy(o->scene);
    rv_journal_destroy(o->journal);
    free(o->record);
    free(o);
}

/* A scene of 3 projections with a small table, and a journal holding a batch that needs
 * every kind of storage: table growth, new cells, a bucket's growth, child links. */
static void *setup_mixed_batch(const rv_allocator *allocator)
{
    sweep_object *o = calloc(1, sizeof *o);
    o->allocator = *allocator;
    rv_journal_desc jd = {0};
    jd.allocator = *allocator;
    rv_render_scene_desc sd = {0};
    sd.allocator = *allocator;
    sd.initial_capacity = 4;
    if (rv_journal_create(&jd, &o->journal) != RV_OK || rv_render_scene_create(&sd, &o->scene) != RV_OK)
        return NULL;
    uint64_t rng = 11;
    for (uint64_t k = 0; k < 3; k++) {
        rv_projection p = make_projection(&rng, k, 3, 2);
        p.bucket.projection_class = RV_PROJECTION_CELL_STATIC;
        p.bucket.parent_key = 0;
        rv_journal_register(o->journal, 0, k, 1, &p, NULL);
    }
    rv_render_scene_apply(o->scene, o->journal, NULL);
    for (uint64_t k = 3; k < 40; k++) {
        rv_projection p = make_projection(&rng, k, 40, 6);
        rv_journal_register(o->journal, 0, k, 1, &p, NULL);
    }
    rv_projection_bucket b = { RV_PROJECTION_CELL_STATIC, 1000, 0 };
    rv_journal_rebucket(o->journal, 0, 0, 1, &b, NULL);
    rv_journal_update_flags(o->journal, 0, 1, 1, RV_PROJECTION_TRANSLUCENT, NULL);
    rv_journal_unregister(o->journal, 0, 2, 1, NULL);
    rv_projection p = make_projection(&rng, 2, 40, 6);
    rv_journal_register(o->journal, 0, 2, 2, &p, NULL);
    return o;
}

static rv_result call_apply(void *object)
{
    sweep_object *o = object;
    return rv_render_scene_apply(o->scene, o->journal, NULL);
}

static void *setup_replay(const rv_allocator *allocator)
{
    sweep_object *o = setup_mixed_batch(allocator);
    uint32_t n;
    const rv_delta *p = rv_journal_pending(o->journal, &n);
    o->record = malloc(n * sizeof *p);
    memcpy(o->record, p, n * sizeof *p);
    o->record_count = n;
    rv_journal_destroy(o->journal);
    o->journal = NULL;
    return o;
}

static rv_result call_apply_deltas(void *object)
{
    sweep_object *o = object;
    return rv_render_scene_apply_deltas(o->scene, o->record, o->record_count, NULL);
}

static void *setup_undigested(const rv_allocator *allocator)
{
    sweep_object *o = setup_mixed_batch(allocator);
    rv_render_scene_apply(o->scene, o->journal, NULL);
    return o;
}

static uint64_t counts_fingerprint(void *object)
{
    sweep_object *o = object;
    rv_projection_counts c = rv_render_scene_counts(o->scene);
    return hash_bytes(0, &c, sizeof c);
}

static rv_result call_digest(void *object)
{
    sweep_object *o = object;
    rv_scene_digest d;
    return rv_render_scene_digest(o->scene, &d);
}

static void *setup_nothing(const rv_allocator *allocator)
{
    sweep_object *o = calloc(1, sizeof *o);
    o->allocator = *allocator;
    return o;
}

static rv_result call_create(void *object)
{
    sweep_object *o = object;
    rv_render_scene_desc sd = {0};
    sd.allocator = o->allocator;
    sd.initial_capacity = 100;
    return rv_render_scene_create(&sd, &o->scene);
}

static uint64_t created_fingerprint(void *object)
{
    return ((sweep_object *)object)->scene != NULL;
}

static void test_out_of_memory_at_each_allocation_leaves_the_scene_unchanged(void **state)
{
    (void)state;
    const rvt_sweep sweeps[] = {
        { "apply a mixed batch", setup_mixed_batch, call_apply, scene_fingerprint, sweep_teardown },
        { "replay a recorded batch", setup_replay, call_apply_deltas, scene_fingerprint, sweep_teardown },
        { "first digest", setup_undigested, call_digest, counts_fingerprint, sweep_teardown },
        { "create", setup_nothing, call_create, created_fingerprint, sweep_teardown },
    };
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++)
        assert_true(rvt_run_sweep(&sweeps[i]) >= 1);
    assert_true(rvt_run_sweep(&sweeps[0]) >= 8); /* the batch really allocates at many sites */
}

/* With an observer appending during the drain, a failure in a later batch stops after the
 * last whole delta: the scene stays consistent, the journal keeps the rest, and a second
 * apply reaches the same scene as an apply that never failed. */
static void test_out_of_memory_in_a_reentrant_batch_keeps_the_scene_consistent(void **state)
{
    (void)state;
    enum { PARENTS = 40 };
    rv_scene_digest expected;
    memset(&expected, 0, sizeof expected);
    uint64_t allocation_count = 0;
    for (uint64_t k = 0; k <= allocation_count; k++) {
        rvt_alloc st = {0};
        rv_allocator a = rvt_allocator(&st);
        reentrant r = {0};
        r.sequences_increase = true;
        r.record = malloc(8 * PARENTS * sizeof(rv_delta));
        rv_journal_desc jd = {0};
        jd.allocator = a;
        jd.initial_capacity = 2;
        assert_int_equal(rv_journal_create(&jd, &r.journal), RV_OK);
        rv_render_scene_desc sd = {0};
        sd.allocator = a;
        sd.initial_capacity = 2;
        sd.observer = append_children;
        sd.observer_user = &r;
        rv_render_scene *scene;
        assert_int_equal(rv_render_scene_create(&sd, &scene), RV_OK);
        for (uint64_t p = 0; p < PARENTS; p++) {
            rv_projection proj = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
            assert_int_equal(rv_journal_register(r.journal, 0, p, 1, &proj, NULL), RV_OK);
        }
        uint64_t before = st.calls;
        if (k > 0)
            st.fail_at = st.calls + k;
        rv_result res = rv_render_scene_apply(scene, r.journal, NULL);
        if (k == 0) {
            assert_int_equal(res, RV_OK);
            allocation_count = st.calls - before;
            expected = digest_of(scene);
        } else {
            /* A failure inside the observer's own append is retried there; the apply reports
             * only its own failures. */
            assert_true(res == RV_OK || res == RV_ERR_OUT_OF_MEMORY);
            st.fail_at = 0;
            check_indices(scene);
            if (res == RV_ERR_OUT_OF_MEMORY) {
                assert_true(rv_journal_get_stats(r.journal).pending > 0);
                assert_int_equal(rv_render_scene_apply(scene, r.journal, NULL), RV_OK);
                check_indices(scene);
            }
            assert_true(digest_equal(digest_of(scene), expected));
        }
        assert_int_equal(rv_journal_get_stats(r.journal).pending, 0);
        rv_render_scene_destroy(scene);
        rv_journal_destroy(r.journal);
        free(r.record);
        assert_int_equal(st.live_blocks, 0);
    }
    assert_true(allocation_count >= 3);
}

/* ---- node backing ---- */

typedef struct bound_fixture {
    rv_world *world;
    rv_journal *journal;
    rv_render_scene *scene;
} bound_fixture;

static bound_fixture make_bound(void)
{
    bound_fixture b;
    assert_int_equal(rv_world_create(NULL, &b.world), RV_OK);
    assert_int_equal(rv_journal_create(NULL, &b.journal), RV_OK);
    rv_render_scene_desc desc = {0};
    desc.world = b.world;
    assert_int_equal(rv_render_scene_create(&desc, &b.scene), RV_OK);
    return b;
}

static void free_bound(bound_fixture *b)
{
    rv_render_scene_destroy(b->scene);
    rv_journal_destroy(b->journal);
    rv_world_destroy(b->world);
}

static void apply_bound(bound_fixture *b)
{
    assert_int_equal(rv_render_scene_apply(b->scene, b->journal, NULL), RV_OK);
}

static void test_projections_are_backed_by_nodes_that_follow_them(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection p = simple_projection(RV_PROJECTION_OUTDOOR_STATIC, 0, RV_PROJECTION_TRANSLUCENT);
    p.transform.position[0] = 10.0f;
    p.transform.bounds[3] = 2.0f;
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &p, NULL), RV_OK);
    p = simple_projection(RV_PROJECTION_CELL_STATIC, 3, RV_PROJECTION_HIDDEN);
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    rv_projection_record r = record_of(b.scene, 1);
    assert_int_equal(rv_world_scene_stats(b.world).nodes, 2);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    float sphere[4];
    assert_int_equal(rv_node_world_bounds(b.world, r.node, sphere), RV_OK);
    assert_float_equal(sphere[0], 10.0f, 1e-5f);
    assert_float_equal(sphere[3], 2.0f, 1e-5f);
    /* Transform, flags follow; the hidden/translucent node flags swap. */
    rv_projection_transform t = p.transform;
    t.position[1] = 5.0f;
    t.scale[0] = 3.0f;
    assert_int_equal(rv_journal_update_transform(b.journal, 0, 1, 1, &t, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(b.journal, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    assert_int_equal(rv_journal_update_flags(b.journal, 0, 2, 1, RV_PROJECTION_TRANSLUCENT, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    assert_int_equal(rv_node_world_bounds(b.world, r.node, sphere), RV_OK);
    assert_float_equal(sphere[1], 5.0f, 1e-5f);
    assert_float_equal(sphere[3], 3.0f, 1e-5f); /* radius 1 times the largest scale */
    /* A replacement gets a fresh node; the old handle goes stale. */
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 2, &p, NULL), RV_OK);
    apply_bound(&b);
    rv_projection_record r2 = record_of(b.scene, 1);
    assert_false(rv_node_is_valid(b.world, r.node));
    assert_true(rv_node_is_valid(b.world, r2.node));
    assert_int_equal(rv_render_scene_node_key(b.scene, r.node, NULL, NULL), RV_ERR_NOT_FOUND);
    /* Unregister and ClearGeneration destroy nodes. */
    assert_int_equal(rv_journal_unregister(b.journal, 0, 2, 1, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_world_scene_stats(b.world).nodes, 1);
    check_nodes(b.scene, b.world);
    assert_int_equal(rv_journal_clear_generation(b.journal, 1, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_world_scene_stats(b.world).nodes, 0);
    assert_false(rv_node_is_valid(b.world, r2.node));
    free_bound(&b);
}

static void test_equipped_child_nodes_hang_under_their_parent_projection_node(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.bucket.parent_key = 100;
    child.transform.position[1] = 1.0f; /* relative to the parent */
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &child, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world); /* an orphan: a root */
    rv_projection parent = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    parent.transform.position[0] = 50.0f;
    assert_int_equal(rv_journal_register(b.journal, 0, 100, 1, &parent, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    rv_node parent_node = record_of(b.scene, 100).node, child_node = record_of(b.scene, 1).node, up;
    assert_int_equal(rv_node_parent(b.world, child_node, &up), RV_OK);
    assert_int_equal(up.id, parent_node.id);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    float m[16];
    assert_int_equal(rv_node_world_matrix(b.world, child_node, m), RV_OK);
    assert_float_equal(m[12], 50.0f, 1e-5f);
    assert_float_equal(m[13], 1.0f, 1e-5f);
    /* The parent moves: the child moves with it, no delta of its own. */
    rv_projection_transform t = parent.transform;
    t.position[0] = 60.0f;
    assert_int_equal(rv_journal_update_transform(b.journal, 0, 100, 1, &t, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    assert_int_equal(rv_node_world_matrix(b.world, child_node, m), RV_OK);
    assert_float_equal(m[12], 60.0f, 1e-5f);
    /* Parent replaced: the child follows the new node. Parent gone: the child is a root. */
    assert_int_equal(rv_journal_register(b.journal, 0, 100, 2, &parent, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    assert_int_equal(rv_journal_unregister(b.journal, 0, 100, 2, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    assert_int_equal(rv_journal_register(b.journal, 0, 100, 3, &parent, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    /* Rebucketed away from its parent: a root. */
    rv_projection_bucket dyn = { RV_PROJECTION_DYNAMIC, 0, 0 };
    assert_int_equal(rv_journal_rebucket(b.journal, 0, 1, 1, &dyn, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    assert_int_equal(rv_node_parent(b.world, record_of(b.scene, 1).node, &up), RV_OK);
    assert_int_equal(up.id, 0);
    free_bound(&b);
}

static void test_equipped_cycles_leave_a_root_until_the_cycle_breaks(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection a = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    a.bucket.parent_key = 2;
    rv_projection c = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    c.bucket.parent_key = 1;
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &a, NULL), RV_OK);
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &c, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    /* Breaking the cycle lets the blocked one attach. */
    rv_projection_bucket dyn = { RV_PROJECTION_DYNAMIC, 0, 0 };
    rv_node n1 = record_of(b.scene, 1).node, n2 = record_of(b.scene, 2).node, up1, up2;
    assert_int_equal(rv_node_parent(b.world, n1, &up1), RV_OK);
    assert_int_equal(rv_node_parent(b.world, n2, &up2), RV_OK);
    uint64_t root_key = up1.id == 0 ? 1 : 2;
    uint64_t other_key = root_key == 1 ? 2 : 1;
    /* The one still attached becomes a plain dynamic root; the blocked one now attaches. */
    assert_int_equal(rv_journal_rebucket(b.journal, 0, other_key, 1, &dyn, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    rv_node up;
    assert_int_equal(rv_node_parent(b.world, record_of(b.scene, root_key).node, &up), RV_OK);
    assert_int_equal(up.id, record_of(b.scene, other_key).node.id);
    free_bound(&b);
}

static void test_world_bounds_map_back_to_the_same_world_sphere(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    p.transform.position[0] = 4.0f;
    p.transform.position[2] = -7.0f;
    p.transform.rotation[0] = 0.3f;
    p.transform.rotation[1] = -0.5f;
    p.transform.rotation[3] = 0.8f;
    p.transform.scale[0] = 2.0f;
    p.transform.scale[1] = -0.5f;
    p.transform.scale[2] = 3.0f;
    p.transform.bounds[0] = 5.0f;
    p.transform.bounds[1] = 1.0f;
    p.transform.bounds[2] = -6.0f;
    p.transform.bounds[3] = 2.5f;
    p.transform.bounds_space = RV_BOUNDS_WORLD;
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    float sphere[4];
    assert_int_equal(rv_node_world_bounds(b.world, record_of(b.scene, 1).node, sphere), RV_OK);
    for (int k = 0; k < 3; k++)
        assert_float_equal(sphere[k], p.transform.bounds[k], 1e-4f);
    /* The local sphere holds the host's sphere's preimage (radius / smallest scale); mapped
     * back under the largest scale it is looser by largest / smallest = 6. */
    assert_true(sphere[3] >= 2.5f);
    assert_true(sphere[3] < 2.5f * 6.0f * 1.001f);
    /* Under a uniform scale it is the host's sphere again. */
    p.transform.scale[0] = p.transform.scale[1] = 3.0f;
    p.transform.scale[2] = -3.0f;
    assert_int_equal(rv_journal_update_transform(b.journal, 0, 1, 1, &p.transform, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    assert_int_equal(rv_node_world_bounds(b.world, record_of(b.scene, 1).node, sphere), RV_OK);
    for (int k = 0; k < 3; k++)
        assert_float_equal(sphere[k], p.transform.bounds[k], 1e-4f);
    assert_true(sphere[3] >= 2.5f);
    assert_true(sphere[3] < 2.5f * 1.001f);
    free_bound(&b);
}

/* World-space bounds of an equipped child under a parent that stretches along the child's
 * smaller scale axis: the child's local sphere
 * was the host's radius over its largest scale, whose image is an ellipsoid inside the
 * host's sphere; under the parent the scene's Frobenius bound then gave a node sphere of
 * radius 5.2 for a host sphere reaching 10 units along x. */
static void test_world_bounds_of_an_equipped_child_enclose_the_host_sphere_under_its_parent(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection parent = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    parent.transform.position[0] = 3.0f;
    parent.transform.scale[0] = 10.0f; /* stretches x */
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &parent, NULL), RV_OK);
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.bucket.parent_key = 1;
    child.transform.scale[0] = 1.0f; /* the child's small axis is x */
    child.transform.scale[1] = child.transform.scale[2] = 2.0f;
    child.transform.bounds[0] = child.transform.bounds[1] = child.transform.bounds[2] = 0.0f;
    child.transform.bounds[3] = 1.0f; /* in the parent's space */
    child.transform.bounds_space = RV_BOUNDS_WORLD;
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &child, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    float sphere[4];
    assert_int_equal(rv_node_world_bounds(b.world, record_of(b.scene, 2).node, sphere), RV_OK);
    /* The host's sphere in the world: the parent maps its centre to (3, 0, 0) and stretches
     * it into an ellipsoid reaching 10 along x and 1 along y and z. Every extreme point of
     * it must lie in the node's sphere. */
    const float extreme[6][3] = { { 13, 0, 0 }, { -7, 0, 0 }, { 3, 1, 0 }, { 3, -1, 0 }, { 3, 0, 1 }, { 3, 0, -1 } };
    for (int e = 0; e < 6; e++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += ((double)extreme[e][k] - sphere[k]) * ((double)extreme[e][k] - sphere[k]);
        assert_true(sqrt(d2) <= sphere[3]);
    }
    free_bound(&b);
}

static void test_nodes_the_host_destroys_are_forgotten(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection parent = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    rv_projection child = simple_projection(RV_PROJECTION_EQUIPPED_CHILD, 0, 0);
    child.bucket.parent_key = 1;
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &parent, NULL), RV_OK);
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &child, NULL), RV_OK);
    apply_bound(&b);
    rv_node pn = record_of(b.scene, 1).node;
    assert_int_equal(rv_node_destroy_subtree(b.world, pn), RV_OK);
    assert_int_equal(record_of(b.scene, 1).node.id, 0);
    assert_int_equal(record_of(b.scene, 2).node.id, 0);
    assert_int_equal(rv_render_scene_node_key(b.scene, pn, NULL, NULL), RV_ERR_NOT_FOUND);
    /* The projections live on without nodes; their deltas still apply. */
    assert_int_equal(rv_journal_update_flags(b.journal, 0, 1, 1, RV_PROJECTION_HIDDEN, NULL), RV_OK);
    assert_int_equal(rv_journal_unregister(b.journal, 0, 2, 1, NULL), RV_OK);
    rv_apply_counts c;
    assert_int_equal(rv_render_scene_apply(b.scene, b.journal, &c), RV_OK);
    assert_int_equal(c.applied, 2);
    assert_int_equal(rv_world_scene_stats(b.world).nodes, 0);
    /* Registered again, it gets a node again. */
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 2, &parent, NULL), RV_OK);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    free_bound(&b);
}

static void test_a_world_binds_one_render_scene_and_may_die_first(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_render_scene_desc desc = {0};
    desc.world = b.world;
    rv_render_scene *second = NULL;
    assert_int_equal(rv_render_scene_create(&desc, &second), RV_ERR_BAD_STATE);
    assert_null(second);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    /* The world goes first: the scene carries on standalone. */
    rv_world_destroy(b.world);
    assert_int_equal(record_of(b.scene, 1).node.id, 0);
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_render_scene_counts(b.scene).projections, 2);
    assert_int_equal(record_of(b.scene, 2).node.id, 0);
    check_indices(b.scene);
    rv_render_scene_destroy(b.scene);
    /* A destroyed scene frees its world's slot for another. */
    assert_int_equal(rv_world_create(NULL, &b.world), RV_OK);
    desc.world = b.world;
    assert_int_equal(rv_render_scene_create(&desc, &b.scene), RV_OK);
    assert_int_equal(rv_journal_register(b.journal, 0, 3, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    rv_render_scene_destroy(b.scene);
    assert_int_equal(rv_world_scene_stats(b.world).nodes, 0);
    assert_int_equal(rv_render_scene_create(&desc, &b.scene), RV_OK);
    free_bound(&b);
}

typedef struct visit_probe {
    rv_render_scene *scene;
    rv_journal *journal;
    rv_result result;
} visit_probe;

static bool apply_inside_visit(rv_node node, const float world_matrix[16], void *user)
{
    visit_probe *v = user;
    (void)node;
    (void)world_matrix;
    v->result = rv_render_scene_apply(v->scene, v->journal, NULL);
    return false;
}

static void test_apply_during_a_node_visit_is_refused(void **state)
{
    (void)state;
    bound_fixture b = make_bound();
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(b.journal, 0, 1, 1, &p, NULL), RV_OK);
    apply_bound(&b);
    assert_int_equal(rv_update_world(b.world), RV_OK);
    assert_int_equal(rv_journal_register(b.journal, 0, 2, 1, &p, NULL), RV_OK);
    float vp[16] = { 0.1f, 0, 0, 0, 0, 0.1f, 0, 0, 0, 0, -0.1f, 0, 0, 0, 0, 1 };
    rv_frustum fr;
    assert_int_equal(rv_frustum_from_view_projection(vp, (rv_clip){0}, &fr), RV_OK);
    visit_probe v = { b.scene, b.journal, RV_OK };
    assert_int_equal(rv_visit_visible(b.world, RV_NODE_NONE, &fr, apply_inside_visit, &v, NULL), RV_OK);
    assert_int_equal(v.result, RV_ERR_BAD_STATE);
    assert_int_equal(rv_journal_get_stats(b.journal).pending, 1);
    apply_bound(&b);
    check_nodes(b.scene, b.world);
    free_bound(&b);
}

/* Out of memory in a bound world: the world's node storage is reserved with the batch. */
static void *setup_bound_batch(const rv_allocator *allocator)
{
    sweep_object *o = calloc(1, sizeof *o);
    rv_world_desc wd = {0};
    wd.allocator = *allocator;
    wd.node_capacity = 4;
    rv_world *world;
    if (rv_world_create(&wd, &world) != RV_OK)
        return NULL;
    rv_journal_desc jd = {0};
    jd.allocator = *allocator;
    rv_render_scene_desc sd = {0};
    sd.allocator = *allocator;
    sd.initial_capacity = 4;
    sd.world = world;
    if (rv_journal_create(&jd, &o->journal) != RV_OK || rv_render_scene_create(&sd, &o->scene) != RV_OK)
        return NULL;
    o->record = (rv_delta *)world; /* teardown destroys it */
    uint64_t rng = 12;
    for (uint64_t k = 0; k < 3; k++) {
        rv_projection p = make_projection(&rng, k, 3, 2);
        p.bucket.projection_class = RV_PROJECTION_DYNAMIC;
        p.bucket.parent_key = 0;
        rv_journal_register(o->journal, 0, k, 1, &p, NULL);
    }
    rv_render_scene_apply(o->scene, o->journal, NULL);
    for (uint64_t k = 3; k < 30; k++) {
        rv_projection p = make_projection(&rng, k, 30, 4);
        rv_journal_register(o->journal, 0, k, 1, &p, NULL);
    }
    return o;
}

static uint64_t bound_fingerprint(void *object)
{
    sweep_object *o = object;
    rv_world *world = (rv_world *)o->record;
    return scene_fingerprint(object) ^ ((uint64_t)rv_world_scene_stats(world).nodes << 40);
}

static void bound_teardown(void *object)
{
    sweep_object *o = object;
    rv_world *world = (rv_world *)o->record;
    o->record = NULL;
    rv_render_scene_destroy(o->scene);
    o->scene = NULL;
    rv_world_destroy(world);
    sweep_teardown(o);
}

static void test_out_of_memory_in_a_bound_world_leaves_scene_and_nodes_unchanged(void **state)
{
    (void)state;
    const rvt_sweep sweep = { "apply with node growth", setup_bound_batch, call_apply, bound_fingerprint,
                              bound_teardown };
    assert_true(rvt_run_sweep(&sweep) >= 8);
}

/* ---- thread ownership ---- */

#include <pthread.h>

typedef struct thread_call {
    fixture *f;
    rv_result result;
} thread_call;

static void *apply_from_other_thread(void *arg)
{
    thread_call *call = arg;
    call->result = rv_render_scene_apply(call->f->scene, call->f->journal, NULL);
    return NULL;
}

static void test_apply_from_a_thread_that_does_not_own_the_journal_is_refused(void **state)
{
    (void)state;
    fixture f = make_fixture(NULL);
    rv_projection p = simple_projection(RV_PROJECTION_DYNAMIC, 0, 0);
    assert_int_equal(rv_journal_register(f.journal, 0, 1, 1, &p, NULL), RV_OK);
    thread_call call = { &f, RV_OK };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, apply_from_other_thread, &call), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(call.result, RV_ERR_INVARIANT);
    assert_int_equal(rv_journal_get_stats(f.journal).pending, 1);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 0);
    apply(&f);
    assert_int_equal(rv_render_scene_counts(f.scene).projections, 1);
    free_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_fills_class_and_flag_indices),
        cmocka_unit_test(test_duplicate_register_of_live_key_and_incarnation_is_rejected),
        cmocka_unit_test(test_register_unregister_register_new_incarnation_in_one_tick),
        cmocka_unit_test(test_new_incarnation_replaces_live_older_one),
        cmocka_unit_test(test_update_for_old_incarnation_after_replacement_is_rejected),
        cmocka_unit_test(test_unregister_of_old_incarnation_never_removes_replacement),
        cmocka_unit_test(test_update_of_unknown_key_is_rejected),
        cmocka_unit_test(test_clear_generation_drops_everything_and_rejects_late_old_deltas),
        cmocka_unit_test(test_newer_generation_is_rejected_until_clear_generation),
        cmocka_unit_test(test_initial_generation_comes_from_the_desc),
        cmocka_unit_test(test_replay_rejects_repeated_and_backwards_sequences),
        cmocka_unit_test(test_replay_rejects_malformed_deltas),
        cmocka_unit_test(test_reentrant_append_during_apply_is_drained_in_the_same_apply),
        cmocka_unit_test(test_deltas_left_at_publication_are_an_invariant_failure),
        cmocka_unit_test(test_publish_clears_the_dirty_index),
        cmocka_unit_test(test_rebucket_and_flag_updates_move_index_membership),
        cmocka_unit_test(test_equipped_children_count_as_orphans_while_their_parent_is_absent),
        cmocka_unit_test(test_an_equipped_child_without_its_parent_is_not_drawn),
        cmocka_unit_test(test_an_equipped_child_a_parent_takes_inside_a_frame_waits_for_its_placement),
        cmocka_unit_test(test_host_nodes_are_refused_under_a_projection_s_node),
        cmocka_unit_test(test_queries_refuse_bad_arguments),
        cmocka_unit_test(test_random_deltas_keep_indices_equal_to_brute_force_scans),
        cmocka_unit_test(test_drain_lookahead_survives_edges_of_the_same_key),
        cmocka_unit_test(test_world_bounds_under_extreme_transforms_enclose_or_are_refused),
        cmocka_unit_test(test_changing_any_single_field_changes_the_digest),
        cmocka_unit_test(test_replay_of_a_recorded_journal_gives_the_same_digest),
        cmocka_unit_test(test_steady_frames_allocate_nothing),
        cmocka_unit_test(test_steady_frames_of_a_world_s_journal_allocate_nothing),
        cmocka_unit_test(test_memory_accounting_matches_the_bytes_held),
        cmocka_unit_test(test_out_of_memory_at_each_allocation_leaves_the_scene_unchanged),
        cmocka_unit_test(test_out_of_memory_in_a_reentrant_batch_keeps_the_scene_consistent),
        cmocka_unit_test(test_apply_from_a_thread_that_does_not_own_the_journal_is_refused),
        cmocka_unit_test(test_projections_are_backed_by_nodes_that_follow_them),
        cmocka_unit_test(test_equipped_child_nodes_hang_under_their_parent_projection_node),
        cmocka_unit_test(test_equipped_cycles_leave_a_root_until_the_cycle_breaks),
        cmocka_unit_test(test_world_bounds_map_back_to_the_same_world_sphere),
        cmocka_unit_test(test_world_bounds_of_an_equipped_child_enclose_the_host_sphere_under_its_parent),
        cmocka_unit_test(test_nodes_the_host_destroys_are_forgotten),
        cmocka_unit_test(test_a_world_binds_one_render_scene_and_may_die_first),
        cmocka_unit_test(test_apply_during_a_node_visit_is_refused),
        cmocka_unit_test(test_out_of_memory_in_a_bound_world_leaves_scene_and_nodes_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
