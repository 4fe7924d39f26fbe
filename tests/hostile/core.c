/* Hostile cases: results and the world object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "hostile_table.h"

#include <limits.h>
#include <string.h>

void hostile_rv_result_string(rvh_ctx *cx)
{
    for (int r = 0; r < RV_RESULT_COUNT_; r++) {
        const char *s = rv_result_string((rv_result)r);
        RVH_CHECK(cx, s != NULL && strncmp(s, "RV_", 3) == 0 && strcmp(s, "RV_ERR_UNKNOWN") != 0);
    }
    /* Values outside the enum (a host casting garbage) name themselves unknown. */
    const int outside[] = { -1, RV_RESULT_COUNT_, RV_RESULT_COUNT_ + 1, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        const char *s = rv_result_string((rv_result)outside[i]);
        RVH_CHECK(cx, s != NULL && strcmp(s, "RV_ERR_UNKNOWN") == 0);
    }
}

void hostile_rv_world_create(rvh_ctx *cx)
{
    rv_world *sentinel = (rv_world *)(uintptr_t)0x5a5a5a5a, *w = sentinel;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_create(NULL, NULL));
    rv_world_desc desc = {0};
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_create(&desc, NULL));

    /* Capacity beyond the handle index space (2^24 slots): refused before allocating. */
    rvt_alloc st = {0};
    desc.allocator = rvt_allocator(&st);
    const uint32_t too_many[] = { (1u << 24) + 1, UINT32_MAX };
    for (size_t i = 0; i < 2; i++) {
        desc.node_capacity = too_many[i];
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_create(&desc, &w));
        RVH_CHECK(cx, w == sentinel && st.calls == 0);
    }

    /* Module descs are checked at creation too (each module's rules; lod and partition
     * have their own cases). */
    const struct { int which; float value; rv_result code; } bad_modules[] = {
        { 0, NAN, RV_ERR_NOT_FINITE }, { 0, INFINITY, RV_ERR_NOT_FINITE },
        { 1, NAN, RV_ERR_NOT_FINITE }, { 1, -1.0f, RV_ERR_INVALID_ARG }, { 2, 0.5f, RV_ERR_INVALID_ARG },
    };
    for (size_t i = 0; i < sizeof bad_modules / sizeof bad_modules[0]; i++) {
        desc = (rv_world_desc){0};
        desc.allocator = rvt_allocator(&st);
        if (bad_modules[i].which == 0)
            desc.occlusion.min_occluder_texels = bad_modules[i].value;
        else if (bad_modules[i].which == 1)
            desc.residency.retry_ms = bad_modules[i].value;
        else
            desc.residency.retry_backoff = bad_modules[i].value;
        RVH_REJECT(cx, bad_modules[i].code, rv_world_create(&desc, &w));
        RVH_CHECK(cx, w == sentinel && st.live_blocks == 0);
    }
    desc = (rv_world_desc){0};
    desc.occlusion.width = RV_OCCLUSION_MAX_SIZE + 1;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_create(&desc, &w));
    RVH_CHECK(cx, w == sentinel);

    /* An allocator with alloc but no free is incomplete: rvis falls back to libc for all
     * three rather than pairing the host's alloc with libc's free. */
    rvt_alloc half_state = {0};
    rv_allocator half = rvt_allocator(&half_state);
    half.free = NULL;
    desc = (rv_world_desc){0};
    desc.allocator = half;
    RVH_ACCEPT(cx, rv_world_create(&desc, &w));
    RVH_CHECK(cx, half_state.calls == 0);
    rv_world_destroy(w);

    /* An allocator that always fails: a clean RV_ERR_OUT_OF_MEMORY, nothing held. */
    rvt_alloc none = { .fail_at = 1 };
    desc.allocator = rvt_allocator(&none);
    w = sentinel;
    RVH_REJECT(cx, RV_ERR_OUT_OF_MEMORY, rv_world_create(&desc, &w));
    RVH_CHECK(cx, w == sentinel && none.live_blocks == 0);
}

void hostile_rv_world_destroy(rvh_ctx *cx)
{
    /* NULL is ignored (documented); the fixture's own worlds are destroyed by the fixture
     * and must come out with every block freed (checked in rvh_fixture_fini). */
    rvh_before(cx);
    rv_world_destroy(NULL);
    rvh_after(cx, "rv_world_destroy(NULL)", __LINE__, RV_OK, RV_OK);
    rvt_alloc st = {0};
    rv_world_desc desc = {0};
    desc.allocator = rvt_allocator(&st);
    rv_world *w = NULL;
    RVH_ACCEPT(cx, rv_world_create(&desc, &w));
    rv_node n;
    for (int i = 0; i < 3000; i++) /* grown past its first capacity */
        RVH_ACCEPT(cx, rv_node_create(w, RV_NODE_NONE, &n));
    rv_world_destroy(w);
    RVH_CHECK(cx, st.live_blocks == 0 && st.live_bytes == 0);
}

void hostile_rv_world_alloc_stats(rvh_ctx *cx)
{
    rv_alloc_stats z = rv_world_alloc_stats(NULL);
    RVH_CHECK(cx, z.allocations == 0 && z.frees == 0 && z.bytes_live == 0 && z.failures == 0);
    /* The counters agree with the host allocator's own. */
    rv_alloc_stats s = rv_world_alloc_stats(cx->a);
    RVH_CHECK(cx, s.allocations - s.frees == (uint64_t)cx->alloc_a.live_blocks);
    RVH_CHECK(cx, s.bytes_live == (uint64_t)cx->alloc_a.live_bytes);
}
