#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "support/rvt.h"

#include <stdlib.h>

static void *rvt_do_alloc(size_t size, void *user)
{
    rvt_alloc *st = user;
    st->calls++;
    if (st->fail_at && st->calls == st->fail_at) {
        st->failed++;
        return NULL;
    }
    void *p = malloc(size);
    if (p) {
        st->live_blocks++;
        st->live_bytes += (int64_t)size;
    }
    return p;
}

static void *rvt_do_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    rvt_alloc *st = user;
    st->calls++;
    if (st->fail_at && st->calls == st->fail_at) {
        st->failed++;
        return NULL;
    }
    void *p = realloc(ptr, new_size);
    if (p)
        st->live_bytes += (int64_t)new_size - (int64_t)old_size;
    return p;
}

static void rvt_do_free(void *ptr, size_t size, void *user)
{
    rvt_alloc *st = user;
    if (!ptr)
        return;
    st->live_blocks--;
    st->live_bytes -= (int64_t)size;
    free(ptr);
}

rv_allocator rvt_allocator(rvt_alloc *state)
{
    rv_allocator a = { rvt_do_alloc, rvt_do_realloc, rvt_do_free, state };
    return a;
}

uint64_t rvt_run_sweep(const rvt_sweep *sweep)
{
    /* Count the call's allocations. */
    rvt_alloc st = {0};
    rv_allocator a = rvt_allocator(&st);
    void *obj = sweep->setup(&a);
    assert_non_null(obj);
    uint64_t before = st.calls;
    rv_result r = sweep->call(obj);
    assert_int_equal(r, RV_OK);
    uint64_t n = st.calls - before;
    sweep->teardown(obj);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.live_bytes, 0);

    for (uint64_t k = 1; k <= n; k++) {
        rvt_alloc fs = {0};
        rv_allocator fa = rvt_allocator(&fs);
        void *o = sweep->setup(&fa);
        assert_non_null(o);
        uint64_t fp = sweep->fingerprint(o);
        fs.fail_at = fs.calls + k;
        rv_result fr = sweep->call(o);
        if (fr != RV_ERR_OUT_OF_MEMORY)
            fail_msg("%s: failing allocation %llu of %llu returned %s, not RV_ERR_OUT_OF_MEMORY",
                     sweep->name, (unsigned long long)k, (unsigned long long)n, rv_result_string(fr));
        if (sweep->fingerprint(o) != fp)
            fail_msg("%s: failing allocation %llu of %llu changed the object", sweep->name,
                     (unsigned long long)k, (unsigned long long)n);
        fs.fail_at = 0;
        sweep->teardown(o);
        if (fs.live_blocks != 0 || fs.live_bytes != 0)
            fail_msg("%s: failing allocation %llu leaked %lld blocks / %lld bytes", sweep->name,
                     (unsigned long long)k, (long long)fs.live_blocks, (long long)fs.live_bytes);
    }
    return n;
}
