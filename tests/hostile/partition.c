/* Hostile cases: partition gating. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <string.h>

/* Digest of everything the partition getters show of world a: per node whether it is a
 * group, its part info (field by field: the struct has padding), frustum flag and hidden
 * flag; and the view version. */
static uint64_t partition_digest(const void *object)
{
    const rv_world *w = object;
    uint64_t h = rv_partition_view_version(w);
    rv_node n;
    rv_world_first_root(w, &n);
    while (n.id) {
        rv_partition_part_info info;
        bool is_group = rv_partition_is_group(w, n), visible = false, hidden = false;
        rv_result r = rv_partition_part_get_info(w, n, &info);
        uint64_t fields[14] = { n.id, is_group, (uint64_t)r };
        if (r == RV_OK) {
            fields[3] = info.group.id;
            fields[4] = info.leaf_count;
            fields[5] = info.leaves_committed;
            fields[6] = info.leaves_complete;
            fields[7] = (uint64_t)info.deferred | (uint64_t)info.active << 1 | (uint64_t)info.ever_visible << 2 |
                        (uint64_t)info.frustum_visible << 3 | (uint64_t)info.resync_waiting << 4;
            fields[8] = info.activation_requests;
            memcpy(&fields[9], &info.activation_expiry_ms, 8);
            fields[10] = (uint64_t)rv_partition_part_frustum_visible(w, n, &visible) | (uint64_t)visible << 8;
        }
        fields[11] = (uint64_t)rv_partition_node_hidden(w, n, &hidden) | (uint64_t)hidden << 8;
        h = rvi_hash_bytes(h, fields, sizeof fields);
        rv_node next;
        rv_node_first_child(w, n, &next);
        while (!next.id && n.id) {
            rv_node_next_sibling(w, n, &next);
            if (!next.id)
                rv_node_parent(w, n, &n);
        }
        n = next;
    }
    return h;
}

/* root is a group; mid (leaves 1, 2; leaf 1 committed for version 5) and twig (leaf 3,
 * deferred) are its parts. The gate is created here, so no case sees its first use. */
static void setup(rvh_ctx *cx)
{
    const uint64_t mid_leaves[2] = { 1, 2 }, twig_leaves[1] = { 3 };
    RVH_ACCEPT(cx, rv_partition_make_group(cx->a, cx->na.root));
    RVH_ACCEPT(cx, rv_partition_set_part(cx->a, cx->na.mid, mid_leaves, 2, false));
    RVH_ACCEPT(cx, rv_partition_set_part(cx->a, cx->na.twig, twig_leaves, 1, true));
    RVH_ACCEPT(cx, rv_partition_set_view_version(cx->a, 5));
    RVH_ACCEPT(cx, rv_partition_leaf_committed(cx->a, 1, 5, true));
    rvh_watch(cx, "the partition gate", partition_digest, cx->a);
}

static rv_frustum wide_frustum(void)
{
    float m[16] = { 0.1f, 0, 0, 0, 0, 0.1f, 0, 0, 0, 0, -0.01f, 0, 0, 0, 0, 1 }; /* ortho box of +-10 */
    rv_frustum f;
    assert_int_equal(rv_frustum_from_view_projection(m, (rv_clip){0}, &f), RV_OK);
    return f;
}

void hostile_rv_partition_make_group(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_make_group(NULL, cx->na.leaf));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_make_group(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_make_group(cx->a, cx->bad[i]));
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_make_group(cx->a, cx->na.root));

    /* An invalid partition desc: rv_world_create refuses it with the desc's code and makes
     * nothing. */
    const struct { float margin, timeout, backoff, cap; rv_result code; } bad[] = {
        { NAN, 0, 0, 0, RV_ERR_NOT_FINITE }, { 0, INFINITY, 0, 0, RV_ERR_NOT_FINITE },
        { -1, 0, 0, 0, RV_ERR_INVALID_ARG }, { 0, -5, 0, 0, RV_ERR_INVALID_ARG },
        { 0, 0, 0.5f, 0, RV_ERR_INVALID_ARG }, { 0, 5000, 0, 100, RV_ERR_ORDER },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rvt_alloc st = {0};
        rv_world_desc desc = {0};
        desc.allocator = rvt_allocator(&st);
        desc.partition.frustum_margin = bad[i].margin;
        desc.partition.lazy_activation_timeout_ms = bad[i].timeout;
        desc.partition.lazy_activation_backoff = bad[i].backoff;
        desc.partition.lazy_activation_cap_ms = bad[i].cap;
        rv_world *w = (rv_world *)(uintptr_t)0x5a5a5a5a;
        RVH_REJECT(cx, bad[i].code, rv_world_create(&desc, &w));
        RVH_CHECK(cx, w == (rv_world *)(uintptr_t)0x5a5a5a5a && st.live_blocks == 0);
    }
}

void hostile_rv_partition_set_part(rvh_ctx *cx)
{
    setup(cx);
    const uint64_t fresh[2] = { 10, 11 }, dup[2] = { 12, 12 }, taken[2] = { 13, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_part(NULL, cx->na.leaf, fresh, 2, false));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_part(cx->a, cx->na.leaf, NULL, 2, false));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_set_part(cx->a, RV_NODE_NONE, fresh, 2, false));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_set_part(cx->a, cx->bad[i], fresh, 2, false));
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_set_part(cx->a, cx->na.leaf, dup, 2, false));
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_set_part(cx->a, cx->na.leaf, taken, 2, false));
    /* Replacing a part's leaves with a list that repeats one keeps the old leaves. */
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_set_part(cx->a, cx->na.mid, dup, 2, false));
    /* A long list whose repeat comes last: refused before anything is reserved for it (the
     * fingerprint compares the bytes held, which would grow with the leaf map). */
    enum { LONG = 4096 };
    static uint64_t longdup[LONG];
    for (uint32_t i = 0; i < LONG; i++)
        longdup[i] = 100000u + i;
    longdup[LONG - 1] = longdup[7];
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_set_part(cx->a, cx->na.leaf, longdup, LONG, false));
    RVH_REJECT(cx, RV_ERR_DUPLICATE, rv_partition_set_part(cx->a, cx->na.other_root, longdup, LONG, true));
    /* Extreme but valid leaf ids. */
    const uint64_t extreme[3] = { 0, UINT64_MAX, 1ull << 63 };
    RVH_ACCEPT(cx, rv_partition_set_part(cx->a, cx->na.other_root, extreme, 3, true));
    RVH_ACCEPT(cx, rv_partition_set_part(cx->a, cx->na.other_root, NULL, 0, false));
}

void hostile_rv_partition_remove(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_remove(NULL, cx->na.mid));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_remove(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_remove(cx->a, cx->bad[i]));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_remove(cx->a, cx->na.leaf));
    RVH_ACCEPT(cx, rv_partition_remove(cx->a, cx->na.mid));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_remove(cx->a, cx->na.mid));
}

void hostile_rv_partition_set_view_version(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_view_version(NULL, 6));
    RVH_ACCEPT(cx, rv_partition_set_view_version(cx->a, UINT64_MAX));
    RVH_CHECK(cx, rv_partition_view_version(cx->a) == UINT64_MAX);
}

void hostile_rv_partition_view_version(rvh_ctx *cx)
{
    setup(cx);
    RVH_CHECK(cx, rv_partition_view_version(NULL) == 0);
    RVH_CHECK(cx, rv_partition_view_version(cx->a) == 5);
    RVH_CHECK(cx, rv_partition_view_version(cx->b) == 0); /* no gate there */
}

void hostile_rv_partition_leaf_committed(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_leaf_committed(NULL, 2, 5, true));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_leaf_committed(cx->a, 99, 5, true));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_leaf_committed(cx->a, UINT64_MAX, UINT64_MAX, false));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_leaf_committed(cx->b, 2, 5, true)); /* another world's gate */
}

void hostile_rv_partition_leaf_dropped(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_leaf_dropped(NULL, 1));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_leaf_dropped(cx->a, 99));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_leaf_dropped(cx->a, 0));
}

void hostile_rv_partition_set_committed_slice(rvh_ctx *cx)
{
    setup(cx);
    float lo[3] = { -5, -5, -5 }, hi[3] = { 5, 5, 5 };
    RVH_ACCEPT(cx, rv_partition_set_committed_slice(cx->a, lo, hi)); /* the slice errors must keep */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_committed_slice(NULL, lo, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_committed_slice(cx->a, NULL, hi));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_set_committed_slice(cx->a, lo, NULL));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3];
            memcpy(bad, lo, sizeof bad);
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_partition_set_committed_slice(cx->a, bad, hi));
            memcpy(bad, hi, sizeof bad);
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_partition_set_committed_slice(cx->a, lo, bad));
        }
    for (int k = 0; k < 3; k++) {
        float bad[3];
        memcpy(bad, hi, sizeof bad);
        bad[k] = lo[k] - 1.0f;
        RVH_REJECT(cx, RV_ERR_ORDER, rv_partition_set_committed_slice(cx->a, lo, bad));
    }
    float open_lo[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX }, open_hi[3] = { FLT_MAX, FLT_MAX, FLT_MAX };
    RVH_ACCEPT(cx, rv_partition_set_committed_slice(cx->a, open_lo, open_hi));
}

void hostile_rv_partition_clear_committed_slice(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_clear_committed_slice(NULL));
}

void hostile_rv_partition_begin_frame(rvh_ctx *cx)
{
    setup(cx);
    rv_frustum f = wide_frustum();
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_begin_frame(NULL, &f));
    RVH_ACCEPT(cx, rv_partition_begin_frame(cx->a, &f));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_partition_begin_frame(cx->a, &f)); /* already begun */
    rv_partition_result res;
    RVH_ACCEPT(cx, rv_partition_end_frame(cx->a, &f, 0.0, &res));
    /* A hand-built frustum with NaN planes must not hide anything (or be refused). */
    rv_frustum nan_f = f;
    for (int i = 0; i < 6; i++)
        nan_f.planes[i][0] = NAN;
    rv_result r = rv_partition_begin_frame(cx->a, &nan_f);
    RVH_CHECK(cx, r == RV_OK || r == RV_ERR_NOT_FINITE);
    if (r == RV_OK) {
        RVH_ACCEPT(cx, rv_partition_end_frame(cx->a, &nan_f, 1.0, &res));
        bool visible = false;
        RVH_ACCEPT(cx, rv_partition_part_frustum_visible(cx->a, cx->na.mid, &visible));
        RVH_CHECK(cx, visible);
    }
}

void hostile_rv_partition_gate_group(rvh_ctx *cx)
{
    setup(cx);
    rv_frustum f = wide_frustum();
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_partition_gate_group(cx->a, cx->na.root, &f)); /* no frame */
    RVH_ACCEPT(cx, rv_partition_begin_frame(cx->a, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_gate_group(NULL, cx->na.root, &f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_gate_group(cx->a, cx->na.root, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_gate_group(cx->a, RV_NODE_NONE, &f));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_gate_group(cx->a, cx->bad[i], &f));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_gate_group(cx->a, cx->na.mid, &f));
}

void hostile_rv_partition_group_hidden(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_partition_group_hidden(cx->a, cx->na.root)); /* no frame */
    RVH_ACCEPT(cx, rv_partition_begin_frame(cx->a, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_group_hidden(NULL, cx->na.root));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_group_hidden(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_group_hidden(cx->a, cx->bad[i]));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_group_hidden(cx->a, cx->na.twig));
}

void hostile_rv_partition_end_frame(rvh_ctx *cx)
{
    setup(cx);
    rv_frustum f = wide_frustum();
    rv_partition_result res;
    rvh_poison(&res, sizeof res);
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_partition_end_frame(cx->a, &f, 0.0, &res)); /* no frame */
    RVH_ACCEPT(cx, rv_partition_begin_frame(cx->a, &f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_end_frame(NULL, &f, 0.0, &res));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_end_frame(cx->a, &f, 0.0, NULL));
    const double bad_times[3] = { NAN, INFINITY, -INFINITY };
    for (int i = 0; i < 3; i++)
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_partition_end_frame(cx->a, &f, bad_times[i], &res));
    RVH_CHECK(cx, rvh_is_poisoned(&res, sizeof res));
    /* The frame stayed open: a finite time ends it (huge times are valid host clocks). */
    RVH_ACCEPT(cx, rv_partition_end_frame(cx->a, &f, 1e300, &res));
    RVH_CHECK(cx, res.tick.mode == RV_TICK_IDLE || isfinite(res.tick.wake_at_ms));
}

void hostile_rv_partition_is_group(rvh_ctx *cx)
{
    setup(cx);
    RVH_CHECK(cx, !rv_partition_is_group(NULL, cx->na.root));
    RVH_CHECK(cx, !rv_partition_is_group(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_CHECK(cx, !rv_partition_is_group(cx->a, cx->bad[i]));
    RVH_CHECK(cx, rv_partition_is_group(cx->a, cx->na.root) && !rv_partition_is_group(cx->b, cx->nb.root));
}

void hostile_rv_partition_part_get_info(rvh_ctx *cx)
{
    setup(cx);
    rv_partition_part_info info;
    rvh_poison(&info, sizeof info);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_part_get_info(NULL, cx->na.mid, &info));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_part_get_info(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_part_get_info(cx->a, RV_NODE_NONE, &info));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_part_get_info(cx->a, cx->bad[i], &info));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_part_get_info(cx->a, cx->na.leaf, &info));
    RVH_CHECK(cx, rvh_is_poisoned(&info, sizeof info));
}

void hostile_rv_partition_part_frustum_visible(rvh_ctx *cx)
{
    setup(cx);
    bool v = true;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_part_frustum_visible(NULL, cx->na.mid, &v));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_part_frustum_visible(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_part_frustum_visible(cx->a, RV_NODE_NONE, &v));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_part_frustum_visible(cx->a, cx->bad[i], &v));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_partition_part_frustum_visible(cx->a, cx->na.root, &v));
    RVH_CHECK(cx, v);
}

void hostile_rv_partition_node_hidden(rvh_ctx *cx)
{
    setup(cx);
    bool h = true;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_node_hidden(NULL, cx->na.leaf, &h));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_partition_node_hidden(cx->a, cx->na.leaf, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_node_hidden(cx->a, RV_NODE_NONE, &h));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_partition_node_hidden(cx->a, cx->bad[i], &h));
    RVH_CHECK(cx, h);
}
