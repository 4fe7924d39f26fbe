#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rvis.h"
#include "core/alloc.h"
#include "core/map.h"
#include "core/round_up.h"
#include "core/pool.h"
#include "core/sort.h"
#include "core/vec.h"
#include "support/rvt.h"

#include <stdio.h>
#include <string.h>

static void test_result_strings_name_every_code(void **state)
{
    (void)state;
    assert_string_equal(rv_result_string(RV_OK), "RV_OK");
    assert_string_equal(rv_result_string(RV_ERR_CYCLE), "RV_ERR_CYCLE");
    for (int r = 1; r < RV_RESULT_COUNT_; r++) {
        const char *s = rv_result_string((rv_result)r);
        assert_true(strncmp(s, "RV_ERR_", 7) == 0);
        assert_string_not_equal(s, "RV_ERR_UNKNOWN");
    }
    assert_string_equal(rv_result_string((rv_result)9999), "RV_ERR_UNKNOWN");
}

static void test_heap_counts_and_fails_cleanly(void **state)
{
    (void)state;
    rvt_alloc st = {0};
    rv_allocator a = rvt_allocator(&st);
    rvi_heap heap;
    rvi_heap_init(&heap, &a);
    void *p = rvi_alloc(&heap, 100);
    assert_non_null(p);
    p = rvi_realloc(&heap, p, 100, 300);
    assert_non_null(p);
    assert_int_equal(heap.stats.allocations, 1);
    assert_int_equal(heap.stats.reallocations, 1);
    assert_int_equal(heap.stats.bytes_live, 300);
    st.fail_at = st.calls + 1;
    assert_null(rvi_realloc(&heap, p, 300, 600));
    assert_int_equal(heap.stats.failures, 1);
    assert_int_equal(heap.stats.bytes_live, 300);
    rvi_free(&heap, p, 300);
    assert_int_equal(heap.stats.bytes_live, 0);
    assert_int_equal(heap.stats.bytes_peak, 300);
    assert_int_equal(st.live_blocks, 0);
}

static void test_vec_grows_and_swap_removes(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_vec v = {0};
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(rvi_vec_push(&heap, &v, sizeof(uint32_t), &i), RV_OK);
    assert_int_equal(v.count, 1000);
    assert_int_equal(RVI_VEC_AT(v, uint32_t, 999), 999);
    rvi_vec_swap_remove(&v, sizeof(uint32_t), 0);
    assert_int_equal(v.count, 999);
    assert_int_equal(RVI_VEC_AT(v, uint32_t, 0), 999);
    rvi_vec_free(&heap, &v, sizeof(uint32_t));
    assert_int_equal(heap.stats.bytes_live, 0);
}

static void test_map_matches_reference_under_random_churn(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_map map = {0};
    enum { KEYS = 4096 };
    static uint64_t ref[KEYS];
    static bool present[KEYS];
    memset(present, 0, sizeof present);
    uint64_t seed = 42;
    for (int step = 0; step < 200000; step++) {
        uint32_t k = (uint32_t)(rvt_next(&seed) % KEYS);
        uint64_t key = (uint64_t)k * 0x100000001ull; /* keys colliding in low bits */
        if (rvt_next(&seed) & 1) {
            uint64_t v = rvt_next(&seed);
            assert_int_equal(rvi_map_put(&heap, &map, key, v), RV_OK);
            ref[k] = v;
            present[k] = true;
        } else {
            assert_int_equal(rvi_map_remove(&map, key), present[k]);
            present[k] = false;
        }
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < KEYS; k++) {
        uint64_t v = 0;
        bool got = rvi_map_get(&map, (uint64_t)k * 0x100000001ull, &v);
        assert_int_equal(got, present[k]);
        if (got) {
            assert_true(v == ref[k]);
            n++;
        }
    }
    assert_int_equal(map.count, n);
    rvi_map_free(&heap, &map);
    assert_int_equal(heap.stats.bytes_live, 0);
}

/* Keys that all share one home slot near the end of a 16-slot map: their run wraps past
 * the last slot and spans several lines, so every lookup, insertion and backward-shift
 * removal in it crosses those boundaries. Checked against a reference after every change,
 * absent keys of the same home looked up as well. */
static void test_map_long_runs_across_lines_and_the_array_end(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    enum { KEYS = 24, HOME = 14 };
    uint64_t keys[KEYS];
    uint32_t n = 0;
    for (uint64_t k = 1; n < KEYS; k++)
        if ((rvi_map_hash(k) & 15) == HOME)
            keys[n++] = k;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rvi_map map = {0};
        assert_int_equal(rvi_map_reserve(&heap, &map, 11), RV_OK);
        assert_int_equal(map.capacity, 16);
        bool present[KEYS] = {0};
        uint64_t value[KEYS] = {0};
        uint32_t live = 0;
        uint64_t s = seed;
        for (int step = 0; step < 200; step++) {
            uint32_t k = (uint32_t)(rvt_next(&s) % KEYS);
            if ((rvt_next(&s) & 1) && (present[k] || live < 11)) { /* stays at 16 slots */
                value[k] = rvt_next(&s);
                live += !present[k];
                present[k] = true;
                assert_int_equal(rvi_map_put(&heap, &map, keys[k], value[k]), RV_OK);
            } else {
                assert_int_equal(rvi_map_remove(&map, keys[k]), present[k]);
                live -= present[k];
                present[k] = false;
            }
            assert_int_equal(map.capacity, 16);
            assert_int_equal(map.count, live);
            for (uint32_t q = 0; q < KEYS; q++) {
                uint64_t v = 0;
                assert_int_equal(rvi_map_get(&map, keys[q], &v), present[q]);
                if (present[q])
                    assert_true(v == value[q]);
                uint64_t *at = rvi_map_value_hashed(&map, keys[q], rvi_map_hash(keys[q]));
                assert_true(present[q] ? at && *at == value[q] : at == NULL);
            }
        }
        rvi_map_free(&heap, &map);
    }
    assert_int_equal(heap.stats.bytes_live, 0);
}

/* rvi_next_up is nextafterf(x, INFINITY) without the libm call, and rvi_float_up rounds a
 * double up into a float: checked against libm on the special values and on a sweep of
 * random bit patterns of every sign and exponent. */
static void test_round_up_matches_nextafterf(void **state)
{
    (void)state;
    const float special[] = { 0.0f, -0.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MIN, -FLT_MIN, 1.0f, -1.0f,
                              FLT_MAX, -FLT_MAX, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        float want = nextafterf(special[i], INFINITY), got = rvi_next_up(special[i]);
        assert_memory_equal(&got, &want, sizeof got);
    }
    assert_true(isnan(rvi_next_up(NAN)));
    uint64_t seed = 7;
    for (int i = 0; i < 1000000; i++) {
        uint32_t bits = (uint32_t)rvt_next(&seed);
        float x;
        memcpy(&x, &bits, sizeof x);
        if (isnan(x))
            continue;
        float want = nextafterf(x, INFINITY), got = rvi_next_up(x);
        assert_memory_equal(&got, &want, sizeof got);
        double d = (double)x * (1.0 + (double)(rvt_next(&seed) % 1000) * 1e-9);
        float up = rvi_float_up(d);
        assert_true((double)up >= d);
        assert_true(up == (float)d || (double)(float)d < d);
        if (isfinite(up) && up != 0.0f)
            assert_true((double)nextafterf(up, -INFINITY) < d);
    }
    assert_true(rvi_float_up(1e39) == INFINITY);
    assert_true(rvi_float_up((double)FLT_MAX) == FLT_MAX);
}

static void test_map_keeps_key_zero_apart_from_empty_slots(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_map map = {0};
    uint64_t v = 7;
    assert_false(rvi_map_get(&map, 0, &v));
    assert_false(rvi_map_remove(&map, 0));
    assert_int_equal(rvi_map_put(&heap, &map, 0, 11), RV_OK);
    assert_int_equal(rvi_map_put(&heap, &map, 5, 55), RV_OK);
    assert_int_equal(map.count, 2);
    assert_true(rvi_map_get(&map, 0, &v));
    assert_true(v == 11);
    assert_int_equal(rvi_map_put(&heap, &map, 0, 12), RV_OK); /* overwrite, not a second entry */
    assert_int_equal(map.count, 2);
    assert_true(rvi_map_get(&map, 0, &v) && v == 12);
    assert_true(rvi_map_remove(&map, 0));
    assert_false(rvi_map_get(&map, 0, NULL));
    assert_true(rvi_map_get(&map, 5, &v) && v == 55);
    assert_int_equal(map.count, 1);
    assert_int_equal(rvi_map_put(&heap, &map, 0, 13), RV_OK);
    rvi_map_clear(&map);
    assert_int_equal(map.count, 0);
    assert_false(rvi_map_get(&map, 0, NULL));
    assert_false(rvi_map_get(&map, 5, NULL));
    rvi_map_free(&heap, &map);
    assert_int_equal(heap.stats.bytes_live, 0);
}

static void test_map_next_visits_every_entry_once(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_map map = {0};
    uint64_t key, value;
    uint32_t cursor = 0;
    assert_false(rvi_map_next(&map, &cursor, &key, &value)); /* never allocated */
    enum { N = 1000 };
    static uint32_t seen[N];
    memset(seen, 0, sizeof seen);
    for (uint64_t k = 0; k < N; k++) /* key 0 included */
        assert_int_equal(rvi_map_put(&heap, &map, k * 0x100000001ull, k + 1000), RV_OK);
    for (uint64_t k = 0; k < N; k += 3)
        assert_true(rvi_map_remove(&map, k * 0x100000001ull));
    cursor = 0;
    uint32_t visits = 0;
    while (rvi_map_next(&map, &cursor, &key, &value)) {
        uint64_t k = key / 0x100000001ull;
        assert_true(k < N && key == k * 0x100000001ull);
        assert_true(value == k + 1000);
        assert_true(k % 3 != 0);
        seen[k]++;
        visits++;
    }
    assert_int_equal(visits, map.count);
    for (uint32_t k = 0; k < N; k++)
        assert_int_equal(seen[k], k % 3 != 0 ? 1 : 0);
    rvi_map_free(&heap, &map);
}

static void test_map_prefetch_reads_and_changes_nothing(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_map map = {0};
    rvi_map_prefetch(&map, 42); /* no storage yet: must not touch memory */
    assert_int_equal(map.capacity, 0);
    for (uint64_t k = 1; k <= 100; k++)
        assert_int_equal(rvi_map_put(&heap, &map, k, k * 2), RV_OK);
    rv_alloc_stats before = heap.stats;
    for (uint64_t k = 0; k <= 200; k++)
        rvi_map_prefetch(&map, k);
    assert_int_equal(map.count, 100);
    assert_true(heap.stats.allocations == before.allocations);
    for (uint64_t k = 1; k <= 100; k++) {
        uint64_t v;
        assert_true(rvi_map_get(&map, k, &v) && v == k * 2);
    }
    assert_true(rvi_map_bytes(&map) == (uint64_t)map.capacity * sizeof(rvi_map_slot));
    rvi_map_free(&heap, &map);
    assert_int_equal(rvi_map_bytes(&map), 0);
}

static void test_pool_rejects_stale_foreign_and_zero_handles(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_pool a, b;
    rvi_pool_init(&a, 7);
    rvi_pool_init(&b, 8);
    assert_int_equal(rvi_pool_reserve(&heap, &a, 4), RV_OK);
    assert_int_equal(rvi_pool_reserve(&heap, &b, 4), RV_OK);
    uint32_t ia, ib, idx;
    uint64_t ha, hb;
    assert_int_equal(rvi_pool_acquire(&a, &ia, &ha), RV_OK);
    assert_int_equal(rvi_pool_acquire(&b, &ib, &hb), RV_OK);
    assert_int_equal(ia, ib);
    assert_int_equal(rvi_pool_resolve(&a, ha, &idx), RV_OK);
    assert_int_equal(rvi_pool_resolve(&a, hb, &idx), RV_ERR_STALE_HANDLE); /* foreign */
    assert_int_equal(rvi_pool_resolve(&a, 0, &idx), RV_ERR_STALE_HANDLE);
    rvi_pool_release(&a, ia);
    assert_int_equal(rvi_pool_resolve(&a, ha, &idx), RV_ERR_STALE_HANDLE); /* stale */
    uint64_t ha2;
    assert_int_equal(rvi_pool_acquire(&a, &idx, &ha2), RV_OK);
    assert_int_equal(idx, ia);            /* slot reused */
    assert_true(ha2 != ha);               /* with a new generation */
    assert_int_equal(rvi_pool_resolve(&a, ha, &idx), RV_ERR_STALE_HANDLE);
    rvi_pool_free(&heap, &a);
    rvi_pool_free(&heap, &b);
}

static void test_pool_retires_slot_before_generation_wraps(void **state)
{
    (void)state;
    rvi_heap heap;
    rvi_heap_init(&heap, NULL);
    rvi_pool p;
    rvi_pool_init(&p, 3);
    assert_int_equal(rvi_pool_reserve(&heap, &p, 1), RV_OK);
    uint32_t idx;
    uint64_t h;
    assert_int_equal(rvi_pool_acquire(&p, &idx, &h), RV_OK);
    p.generation[idx] = RVI_POOL_MAX_GENERATION | 0x80000000u; /* fast-forward */
    uint64_t last = rvi_pool_handle(&p, idx);
    rvi_pool_release(&p, idx);
    assert_int_equal(rvi_pool_acquire(&p, &idx, &h), RV_ERR_CAPACITY); /* retired, not reused */
    assert_int_equal(rvi_pool_resolve(&p, last, &idx), RV_ERR_STALE_HANDLE);
    rvi_pool_free(&heap, &p);
}

/* A live world's tag is never handed to another world, however many are made meanwhile:
 * the node of a world kept alive stays foreign to every later world, also to the ones
 * whose node has its slot and generation. */
static void test_a_live_worlds_tag_is_never_handed_to_another(void **state)
{
    (void)state;
    rv_world_desc desc = {0};
    desc.node_capacity = 1;
    rv_world *a = NULL;
    assert_int_equal(rv_world_create(&desc, &a), RV_OK);
    rv_node old;
    assert_int_equal(rv_node_create(a, RV_NODE_NONE, &old), RV_OK);
    for (uint32_t i = 0; i < 65536u + 64u; i++) {
        rv_world *c = NULL;
        assert_int_equal(rv_world_create(&desc, &c), RV_OK);
        rv_node mine;
        assert_int_equal(rv_node_create(c, RV_NODE_NONE, &mine), RV_OK);
        assert_int_equal(mine.id & 0xFFFFFFFFFFFFull, old.id & 0xFFFFFFFFFFFFull); /* same slot and generation */
        if (rv_node_is_valid(c, old))
            fail_msg("world %u of the churn took the live world's tag", i);
        rv_world_destroy(c);
    }
    assert_true(rv_node_is_valid(a, old));
    rv_world_destroy(a);
}

/* With every tag held, a new world is refused (RV_ERR_CAPACITY) and nothing is made; a tag
 * given back is handed out again. */
static void test_world_create_refuses_when_every_tag_is_held(void **state)
{
    (void)state;
    static uint16_t held[65535];
    uint32_t n = 0;
    while (n < 65535u && rvi_pool_tag_claim(&held[n]))
        n++;
    /* Worlds other tests of this program left alive hold the rest. */
    assert_true(n > 65000u);
    uint16_t extra;
    assert_false(rvi_pool_tag_claim(&extra));
    rvt_alloc st = {0};
    rv_world_desc desc = {0};
    desc.allocator = rvt_allocator(&st);
    rv_world *w = (rv_world *)&extra; /* untouched on error */
    assert_int_equal(rv_world_create(&desc, &w), RV_ERR_CAPACITY);
    assert_ptr_equal(w, (rv_world *)&extra);
    assert_int_equal(st.live_blocks, 0);
    rvi_pool_tag_release(held[n / 2]);
    assert_int_equal(rv_world_create(&desc, &w), RV_OK);
    rv_world_destroy(w);
    assert_int_equal(st.live_blocks, 0);
    for (uint32_t i = 0; i < n; i++)
        rvi_pool_tag_release(held[i]);
    assert_int_equal(rv_world_create(&desc, &w), RV_OK);
    rv_world_destroy(w);
}

static void test_world_create_defaults_and_counts_allocations(void **state)
{
    (void)state;
    rvt_alloc st = {0};
    rv_world_desc desc = {0};
    desc.allocator = rvt_allocator(&st);
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(&desc, &w), RV_OK);
    assert_non_null(w);
    rv_alloc_stats s = rv_world_alloc_stats(w);
    assert_true(s.allocations > 0);
    assert_int_equal(s.allocations, (uint64_t)st.live_blocks);
    rv_world_destroy(w);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(rv_world_create(&desc, NULL), RV_ERR_INVALID_ARG);
    rv_world_destroy(NULL);
}

static void *world_setup(const rv_allocator *a)
{
    (void)a;
    return (void *)a; /* the call under test creates the world */
}
static rv_world *swept_world;
static rv_result world_create_call(void *o)
{
    rv_world_desc desc = {0};
    desc.allocator = *(const rv_allocator *)o;
    swept_world = NULL;
    return rv_world_create(&desc, &swept_world);
}
static uint64_t world_fingerprint(void *o) { (void)o; return (uint64_t)(uintptr_t)swept_world; }
static void world_teardown(void *o) { (void)o; rv_world_destroy(swept_world); swept_world = NULL; }

static void test_world_create_survives_every_allocation_failure(void **state)
{
    (void)state;
    rvt_sweep sweep = { "rv_world_create", world_setup, world_create_call, world_fingerprint, world_teardown };
    assert_true(rvt_run_sweep(&sweep) > 1);
}

/* The library, the header's macros and meson's project version are one version. */
/* rvi_sort against a reference (insertion sort) on random arrays of every small size and
 * some large ones, elements of 4, 16 and 72 bytes (72: wider than the swap's chunk), keys
 * with many repeats; the order by key must match and every element must survive. */
typedef struct wide72 {
    uint32_t key, id;
    unsigned char pad[64];
} wide72;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_key_id(const void *a, const void *b)
{
    const wide72 *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static void test_sort_matches_reference(void **state)
{
    (void)state;
    uint64_t seed = 0x5027u;
    static uint32_t a[3000], ref[3000];
    static wide72 w[700], wref[700];
    size_t sizes[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 100, 255, 256, 1000, 2999, 3000 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        uint32_t range = (uint32_t)(s % 3 == 0 ? 4 : s % 3 == 1 ? 1000 : 0xFFFFFFFFu);
        for (size_t i = 0; i < n; i++)
            a[i] = ref[i] = range == 0xFFFFFFFFu ? (uint32_t)rvt_next(&seed) : (uint32_t)(rvt_next(&seed) % range);
        rvi_sort(a, n, sizeof *a, cmp_u32);
        for (size_t i = 1; i < n; i++) { /* the reference: insertion sort */
            uint32_t k = ref[i];
            size_t j = i;
            for (; j > 0 && ref[j - 1] > k; j--)
                ref[j] = ref[j - 1];
            ref[j] = k;
        }
        for (size_t i = 0; i < n; i++)
            assert_int_equal(a[i], ref[i]);
    }
    /* Wide elements with a total order (key, then a unique id): the exact permutation. */
    for (size_t n = 0; n <= 700; n += 233) {
        for (size_t i = 0; i < n; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].key = (uint32_t)(rvt_next(&seed) % 50);
            w[i].id = (uint32_t)i;
            memset(w[i].pad, (int)(i & 0xFF), sizeof w[i].pad);
            wref[i] = w[i];
        }
        rvi_sort(w, n, sizeof *w, cmp_key_id);
        for (size_t i = 1; i < n; i++) {
            wide72 k = wref[i];
            size_t j = i;
            for (; j > 0 && cmp_key_id(&wref[j - 1], &k) > 0; j--)
                wref[j] = wref[j - 1];
            wref[j] = k;
        }
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(w[i].key, wref[i].key);
            assert_int_equal(w[i].id, wref[i].id);
            assert_int_equal(w[i].pad[63], (unsigned char)(w[i].id & 0xFF)); /* moved whole */
        }
    }
}

static void test_version_matches_header_and_project(void **state)
{
    (void)state;
    assert_int_equal(rv_version(), RV_VERSION);
    assert_int_equal(RV_VERSION_MAJOR_OF(rv_version()), RV_VERSION_MAJOR);
    assert_int_equal(RV_VERSION_MINOR_OF(rv_version()), RV_VERSION_MINOR);
    assert_int_equal(RV_VERSION_PATCH_OF(rv_version()), RV_VERSION_PATCH);
    /* ordered like the versions: a patch, minor or major step always compares greater */
    assert_true(RV_MAKE_VERSION(0, 2, 0) > RV_MAKE_VERSION(0, 1, 255));
    assert_true(RV_MAKE_VERSION(1, 0, 0) > RV_MAKE_VERSION(0, 255, 255));
    char text[32];
    snprintf(text, sizeof text, "%u.%u.%u", (unsigned)RV_VERSION_MAJOR_OF(rv_version()),
             (unsigned)RV_VERSION_MINOR_OF(rv_version()), (unsigned)RV_VERSION_PATCH_OF(rv_version()));
    assert_string_equal(text, RVT_PROJECT_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_strings_name_every_code),
        cmocka_unit_test(test_heap_counts_and_fails_cleanly),
        cmocka_unit_test(test_vec_grows_and_swap_removes),
        cmocka_unit_test(test_map_matches_reference_under_random_churn),
        cmocka_unit_test(test_map_long_runs_across_lines_and_the_array_end),
        cmocka_unit_test(test_round_up_matches_nextafterf),
        cmocka_unit_test(test_map_keeps_key_zero_apart_from_empty_slots),
        cmocka_unit_test(test_map_next_visits_every_entry_once),
        cmocka_unit_test(test_map_prefetch_reads_and_changes_nothing),
        cmocka_unit_test(test_pool_rejects_stale_foreign_and_zero_handles),
        cmocka_unit_test(test_pool_retires_slot_before_generation_wraps),
        cmocka_unit_test(test_world_create_defaults_and_counts_allocations),
        cmocka_unit_test(test_world_create_survives_every_allocation_failure),
        cmocka_unit_test(test_a_live_worlds_tag_is_never_handed_to_another),
        cmocka_unit_test(test_world_create_refuses_when_every_tag_is_held),
        cmocka_unit_test(test_sort_matches_reference),
        cmocka_unit_test(test_version_matches_header_and_project),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
