/* The hostile-input fixture: twin worlds, bad handles, digests (see hostile.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <string.h>

const float rvh_nonfinite[RVH_NONFINITE] = { NAN, -NAN, INFINITY, -INFINITY };
const float rvh_extreme[RVH_EXTREME] = { 1e30f, -1e30f, FLT_MAX, -FLT_MAX, 1e-45f, -0.0f };

const char *const rvh_bad_handle_names[RVH_BAD_HANDLES] = {
    "stale (slot free)", "stale (slot reused)", "foreign (twin in world b)",
    "forged index past capacity", "forged generation 0", "forged future generation",
    "all bits set",
};

#define HANDLE_TAG(id) ((id) >> 48)
#define HANDLE_GEN(id) (((id) >> 24) & 0xFFFFFFu)
#define HANDLE_INDEX(id) ((id) & 0xFFFFFFu)

static void must(rv_result r, const char *what)
{
    if (r != RV_OK)
        fail_msg("hostile fixture: %s returned %s", what, rv_result_string(r));
}

static rv_node node_at(rv_world *w, rv_node parent, float x, float y, float z, float radius)
{
    rv_node n;
    must(rv_node_create(w, parent, &n), "rv_node_create");
    float p[3] = { x, y, z }, c[3] = { 0.25f, -0.5f, 0.125f };
    must(rv_node_set_position(w, n, p), "rv_node_set_position");
    if (radius >= 0.0f)
        must(rv_node_set_bounds(w, n, c, radius), "rv_node_set_bounds");
    return n;
}

/* Builds the fixture shape; returns the two stale handles (slot free, slot reused). */
static rvh_nodes build(rv_world *w, rv_node *stale_free, rv_node *stale_reused)
{
    rvh_nodes n;
    n.root = node_at(w, RV_NODE_NONE, 1, 2, 3, 1.0f);
    float axis[3] = { 0, 1, 0 };
    must(rv_node_set_rotation_axis_angle(w, n.root, axis, 0.5f), "rv_node_set_rotation_axis_angle");
    n.mid = node_at(w, n.root, 0, 5, 0, 0.5f);
    float two[3] = { 2, 2, 2 };
    must(rv_node_set_scale(w, n.mid, two), "rv_node_set_scale");
    rv_node gone = node_at(w, n.root, 7, 7, 7, 2.0f);
    must(rv_node_destroy_subtree(w, gone), "rv_node_destroy_subtree");
    n.leaf = node_at(w, n.mid, 1, 0, 0, 0.25f); /* reuses gone's slot */
    n.twig = node_at(w, n.root, -3, 0, 0, -1.0f);
    n.other_root = node_at(w, RV_NODE_NONE, 100, 0, 0, -1.0f);
    rv_node gone2 = node_at(w, RV_NODE_NONE, 9, 9, 9, 1.0f);
    must(rv_node_destroy_reroot(w, gone2), "rv_node_destroy_reroot");
    must(rv_update_world(w), "rv_update_world");
    must(rv_update_world(w), "rv_update_world"); /* last-update counters read 0 from now on */
    *stale_free = gone2;
    *stale_reused = gone;
    return n;
}

static rv_world *make_world(rvt_alloc *st)
{
    rv_world_desc desc = {0};
    desc.allocator = rvt_allocator(st);
    desc.node_capacity = 4; /* small, so the fixture's growth paths are the real ones */
    rv_world *w = NULL;
    must(rv_world_create(&desc, &w), "rv_world_create");
    return w;
}

void rvh_fixture_init(rvh_ctx *cx)
{
    memset(&cx->alloc_a, 0, sizeof cx->alloc_a);
    memset(&cx->alloc_b, 0, sizeof cx->alloc_b);
    cx->a = make_world(&cx->alloc_a);
    rv_node stale_free, stale_reused, ignore_free, ignore_reused;
    cx->na = build(cx->a, &stale_free, &stale_reused);
    /* World tags are 16 bits, taken in turn over the process: two live worlds share one
     * only 65,535 worlds apart, which a long test process could reach. A foreign handle is
     * only foreign under different tags, so remake b (keeping the old one alive) until the
     * tags differ. */
    rvt_alloc spare_alloc = {0};
    rv_world *spare = NULL;
    for (int attempt = 0;; attempt++) {
        cx->b = make_world(&cx->alloc_b);
        cx->nb = build(cx->b, &ignore_free, &ignore_reused);
        if (HANDLE_TAG(cx->na.root.id) != HANDLE_TAG(cx->nb.root.id))
            break;
        assert_true(attempt < 4);
        rv_world_destroy(spare);
        spare = cx->b;
        spare_alloc = cx->alloc_b;
        memset(&cx->alloc_b, 0, sizeof cx->alloc_b);
    }
    rv_world_destroy(spare);
    (void)spare_alloc;
    assert_int_equal(HANDLE_INDEX(cx->na.leaf.id), HANDLE_INDEX(cx->nb.leaf.id));
    assert_int_equal(HANDLE_GEN(cx->na.leaf.id), HANDLE_GEN(cx->nb.leaf.id));

    uint64_t tag = HANDLE_TAG(cx->na.root.id), live = cx->na.mid.id;
    cx->bad[0] = stale_free;
    cx->bad[1] = stale_reused;
    cx->bad[2] = cx->nb.leaf;
    cx->bad[3] = (rv_node){ tag << 48 | 1ull << 24 | 0xFFFFFFull };
    cx->bad[4] = (rv_node){ tag << 48 | HANDLE_INDEX(live) };
    cx->bad[5] = (rv_node){ tag << 48 | (uint64_t)(HANDLE_GEN(live) + 1) << 24 | HANDLE_INDEX(live) };
    cx->bad[6] = (rv_node){ UINT64_MAX };
    assert_true(HANDLE_INDEX(stale_reused.id) == HANDLE_INDEX(cx->na.leaf.id));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        assert_false(rv_node_is_valid(cx->a, cx->bad[i]));
    cx->checks = 0;
    cx->watch_count = 0;
}

void rvh_fixture_fini(rvh_ctx *cx)
{
    rv_world_destroy(cx->a);
    rv_world_destroy(cx->b);
    cx->a = cx->b = NULL;
    if (cx->alloc_a.live_blocks != 0 || cx->alloc_a.live_bytes != 0 || cx->alloc_b.live_blocks != 0)
        fail_msg("%s: the worlds leaked %lld blocks", cx->function,
                 (long long)(cx->alloc_a.live_blocks + cx->alloc_b.live_blocks));
}

/* ---- digests ------------------------------------------------------------------------ */

static uint64_t hash_node_id(uint64_t h, rv_node n)
{
    uint64_t untagged = n.id & 0xFFFFFFFFFFFFull;
    return rvi_hash_bytes(h, &untagged, sizeof untagged);
}

uint64_t rvh_world_digest(const rv_world *w)
{
    uint64_t h = rvi_hash_bytes(0x686f7374696c65ull, "world", 5);
    rv_scene_stats st = rv_world_scene_stats(w);
    h = rvi_hash_bytes(h, &st, sizeof st);
    /* Memory held, not traffic: a refused call may use scratch memory it gives back (the
     * partition gate checks a leaf list that way), but must hold no more than before. */
    rv_alloc_stats as = rv_world_alloc_stats(w);
    uint64_t held[2] = { as.allocations - as.frees, as.bytes_live };
    h = rvi_hash_bytes(h, held, sizeof held);
    rv_node n;
    must(rv_world_first_root(w, &n), "rv_world_first_root");
    uint32_t visited = 0;
    /* Pre-order walk over the public links, no stack. */
    while (n.id) {
        float p[3], q[4], s[3], m[16], b[4];
        rv_node parent;
        must(rv_node_get_transform(w, n, p, q, s), "rv_node_get_transform");
        must(rv_node_world_matrix(w, n, m), "rv_node_world_matrix");
        must(rv_node_world_bounds(w, n, b), "rv_node_world_bounds");
        must(rv_node_parent(w, n, &parent), "rv_node_parent");
        h = hash_node_id(h, n);
        h = hash_node_id(h, parent);
        h = rvi_hash_bytes(h, p, sizeof p);
        h = rvi_hash_bytes(h, q, sizeof q);
        h = rvi_hash_bytes(h, s, sizeof s);
        h = rvi_hash_bytes(h, m, sizeof m);
        h = rvi_hash_bytes(h, b, sizeof b);
        uint32_t flags;
        uint64_t key;
        must(rv_node_get_flags(w, n, &flags), "rv_node_get_flags");
        must(rv_node_get_key(w, n, &key), "rv_node_get_key");
        h = rvi_hash_bytes(h, &flags, sizeof flags);
        h = rvi_hash_bytes(h, &key, sizeof key);
        float local[16];
        must(rv_node_get_local_matrix(w, n, local), "rv_node_get_local_matrix");
        h = rvi_hash_bytes(h, local, sizeof local);
        visited++;
        rv_node next;
        must(rv_node_first_child(w, n, &next), "rv_node_first_child");
        while (!next.id && n.id) {
            must(rv_node_next_sibling(w, n, &next), "rv_node_next_sibling");
            if (!next.id)
                must(rv_node_parent(w, n, &n), "rv_node_parent");
        }
        n = next;
    }
    if (visited != st.nodes)
        fail_msg("hostile digest: walked %u nodes, the world counts %u", visited, st.nodes);
    return h;
}

void rvh_watch(rvh_ctx *cx, const char *name, uint64_t (*digest)(const void *), const void *object)
{
    assert_true(cx->watch_count < RVH_MAX_WATCH);
    cx->watch[cx->watch_count++] = (rvh_watch_entry){ name, digest, object, 0 };
}

void rvh_unwatch(rvh_ctx *cx, const void *object)
{
    for (int i = 0; i < cx->watch_count; i++)
        if (cx->watch[i].object == object) {
            cx->watch[i] = cx->watch[--cx->watch_count];
            return;
        }
}

void rvh_before(rvh_ctx *cx)
{
    /* Settle anything an accepted call left pending, so "recomputes nothing" below is a
     * statement about the call under test. */
    rv_update_world(cx->a);
    rv_update_world(cx->a);
    rv_update_world(cx->b);
    rv_update_world(cx->b);
    cx->digest_a = rvh_world_digest(cx->a);
    cx->digest_b = rvh_world_digest(cx->b);
    for (int i = 0; i < cx->watch_count; i++)
        cx->watch[i].before = cx->watch[i].digest(cx->watch[i].object);
}

void rvh_after(rvh_ctx *cx, const char *call, int line, rv_result got, rv_result expected)
{
    if (got != expected)
        fail_msg("%s line %d: %s returned %s, expected %s", cx->function, line, call,
                 rv_result_string(got), rv_result_string(expected));
    if (rvh_world_digest(cx->a) != cx->digest_a)
        fail_msg("%s line %d: %s was refused but changed world a", cx->function, line, call);
    if (rvh_world_digest(cx->b) != cx->digest_b)
        fail_msg("%s line %d: %s was refused but changed world b", cx->function, line, call);
    for (int i = 0; i < cx->watch_count; i++)
        if (cx->watch[i].digest(cx->watch[i].object) != cx->watch[i].before)
            fail_msg("%s line %d: %s was refused but changed %s", cx->function, line, call,
                     cx->watch[i].name);
    must(rv_update_world(cx->a), "rv_update_world after a refused call");
    rv_scene_stats st = rv_world_scene_stats(cx->a);
    if (st.matrices_recomputed || st.bounds_recomputed)
        fail_msg("%s line %d: %s was refused but left work for rv_update_world (%u matrices, %u spheres)",
                 cx->function, line, call, st.matrices_recomputed, st.bounds_recomputed);
    cx->checks++;
}

void rvh_poison(void *p, size_t size)
{
    memset(p, 0xA5, size);
}

int rvh_is_poisoned(const void *p, size_t size)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < size; i++)
        if (c[i] != 0xA5)
            return 0;
    return 1;
}
