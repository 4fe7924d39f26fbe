/* Shared machinery of the hostile-input cases (suite hostile).
 *
 * Every case gets a fresh fixture: two worlds built the same way (so a node of world B has
 * the same slot and generation as its twin in world A and differs only in its world tag),
 * every node updated and clean, and a set of bad handles for world A. A rejected call is
 * checked with RVH_REJECT: the documented code, and then that nothing changed:
 *  - a digest of everything the public getters show of both worlds (every node's links,
 *    local transform, world matrix and bounds, the scene counters, and the memory held:
 *    live blocks and bytes — a refused call may borrow scratch memory, never keep it),
 *  - plus the digests of any standalone objects the case registered (rvh_watch),
 *  - and a following rv_update_world that recomputes nothing (a rejected call that marked
 *    a node moved is caught even though the getters cannot see the mark).
 * Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef RVH_HOSTILE_H
#define RVH_HOSTILE_H

#include "rvis.h"
#include "support/rvt.h"
#include "hostile_table.h"

#include <math.h>
#include <stdint.h>

/* Nodes of the fixture world (same shape in A and B):
 *   root (position, rotation, bounds) -> mid (scale 2, bounds) -> leaf (bounds)
 *   root -> twig;  other_root (no geometry). */
typedef struct rvh_nodes {
    rv_node root, mid, leaf, twig, other_root;
} rvh_nodes;

enum { RVH_BAD_HANDLES = 7, RVH_MAX_WATCH = 8 };

typedef struct rvh_watch_entry {
    const char *name;
    uint64_t (*digest)(const void *object);
    const void *object;
    uint64_t before;
} rvh_watch_entry;

typedef struct rvh_ctx {
    const char *function;   /* the public function under test */
    rvt_alloc alloc_a, alloc_b;
    rv_world *a, *b;        /* b exists for foreign handles; never changed by a case on a */
    rvh_nodes na, nb;
    /* Handles that must be refused by every call on world a: none-where-a-node-is-needed
     * is not among them (some calls accept none); see rvh_bad_handle_names. */
    rv_node bad[RVH_BAD_HANDLES];
    uint64_t checks;        /* assertions the case made (a case must make some) */
    uint64_t digest_a, digest_b;
    rvh_watch_entry watch[RVH_MAX_WATCH];
    int watch_count;
} rvh_ctx;

extern const char *const rvh_bad_handle_names[RVH_BAD_HANDLES];

/* The case of every function in the table: void hostile_<function>(rvh_ctx *). */
#define RVH_DECLARE(fn) void hostile_##fn(rvh_ctx *cx);
RVH_CASES(RVH_DECLARE)

/* Fixture lifetime (test_hostile.c runs these around every case). */
void rvh_fixture_init(rvh_ctx *cx);
void rvh_fixture_fini(rvh_ctx *cx);

/* Digest of everything the public API shows of a world (slot and generation of handles,
 * never their world tag, so twins digest alike). */
uint64_t rvh_world_digest(const rv_world *world);

/* Registers a standalone object whose digest must not change across a rejected call. */
void rvh_watch(rvh_ctx *cx, const char *name, uint64_t (*digest)(const void *), const void *object);
void rvh_unwatch(rvh_ctx *cx, const void *object);

/* Before / after a call expected to be refused: see the header comment. */
void rvh_before(rvh_ctx *cx);
void rvh_after(rvh_ctx *cx, const char *call, int line, rv_result got, rv_result expected);

#define RVH_REJECT(cx, expected, call)                                                     \
    do {                                                                                   \
        rvh_before(cx);                                                                    \
        rv_result rvh_got_ = (call);                                                       \
        rvh_after((cx), #call, __LINE__, rvh_got_, (expected));                            \
    } while (0)

/* A call that must succeed (e.g. huge but finite values are valid input). */
#define RVH_ACCEPT(cx, call)                                                               \
    do {                                                                                   \
        rv_result rvh_got_ = (call);                                                       \
        if (rvh_got_ != RV_OK)                                                             \
            fail_msg("%s line %d: %s returned %s, expected RV_OK", (cx)->function,         \
                     __LINE__, #call, rv_result_string(rvh_got_));                         \
        (cx)->checks++;                                                                    \
    } while (0)

/* Any other property a case asserts (a conservative answer, an untouched output). */
#define RVH_CHECK(cx, condition)                                                           \
    do {                                                                                   \
        if (!(condition))                                                                  \
            fail_msg("%s line %d: %s does not hold", (cx)->function, __LINE__, #condition); \
        (cx)->checks++;                                                                    \
    } while (0)

/* ---- hostile values ---------------------------------------------------------------- */

/* Values no finite-number parameter may accept: NaN (both signs) and both infinities. */
enum { RVH_NONFINITE = 4 };
extern const float rvh_nonfinite[RVH_NONFINITE];
/* Finite extremes every parameter must survive (accepted or refused, never undefined):
 * 1e30, -1e30, FLT_MAX, -FLT_MAX, the smallest denormal, -0. */
enum { RVH_EXTREME = 6 };
extern const float rvh_extreme[RVH_EXTREME];

/* Fills v[0..n) with ok and then puts bad at component k. */
static inline void rvh_vec_with(float *v, int n, float ok, int k, float bad)
{
    for (int i = 0; i < n; i++)
        v[i] = ok;
    v[k] = bad;
}

/* True when the n floats are bit-identical to the sentinel pattern rvh_poison wrote. */
void rvh_poison(void *p, size_t size);
int rvh_is_poisoned(const void *p, size_t size);

#endif
