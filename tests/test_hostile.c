/* Hostile input across the whole public API (suite hostile).
 *
 * One cmocka test per public function, named after it, driven by the table of
 * hostile_table.h: each case (tests/hostile/<module>.c) feeds its function NaN, infinities,
 * negative and zero sizes, huge values, NULL where it is not allowed, stale, forged and
 * foreign handles, and checks the documented code and that nothing changed (hostile.h says
 * how "unchanged" is proven). test_api_coverage.c checks the table against rvis.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "hostile_table.h"

#include <stdlib.h>

typedef void (*rvh_case_fn)(rvh_ctx *cx);
typedef void (*rvh_any_fn)(void);

typedef struct rvh_entry {
    const char *function;
    rvh_any_fn public_function; /* taken so that a name in the table must be a declared function */
    rvh_case_fn run;
} rvh_entry;

#define RVH_ENTRY(fn) { #fn, (rvh_any_fn)fn, hostile_##fn },
static const rvh_entry rvh_table[] = { RVH_CASES(RVH_ENTRY) };
enum { RVH_TABLE_SIZE = sizeof rvh_table / sizeof rvh_table[0] };

static void run_entry(void **state)
{
    const rvh_entry *e = *state;
    assert_non_null(e->public_function);
    rvh_ctx cx;
    cx.function = e->function;
    rvh_fixture_init(&cx);
    e->run(&cx);
    if (cx.checks == 0)
        fail_msg("%s: the hostile case checked nothing", e->function);
    rvh_fixture_fini(&cx);
}

int main(void)
{
    struct CMUnitTest tests[RVH_TABLE_SIZE];
    for (size_t i = 0; i < RVH_TABLE_SIZE; i++) {
        tests[i] = (struct CMUnitTest){ rvh_table[i].function, run_entry, NULL, NULL,
                                        (void *)&rvh_table[i] };
    }
    return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
