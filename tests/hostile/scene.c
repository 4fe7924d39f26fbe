/* Hostile cases: the scene-node hierarchy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "hostile_table.h"

#include <float.h>
#include <string.h>

/* Every node of w: world matrix finite (a node whose matrix would overflow keeps its last
 * one), world sphere radius never NaN, and a finite radius around a finite centre. An
 * infinite radius (overflow) is allowed: it is never culled. */
static int world_sane(rv_world *w)
{
    rv_node n;
    if (rv_world_first_root(w, &n) != RV_OK)
        return 0;
    while (n.id) {
        float m[16], b[4];
        if (rv_node_world_matrix(w, n, m) != RV_OK || rv_node_world_bounds(w, n, b) != RV_OK)
            return 0;
        for (int k = 0; k < 16; k++)
            if (!isfinite(m[k]))
                return 0;
        if (isnan(b[3]))
            return 0;
        if (isfinite(b[3]) && !(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2])))
            return 0;
        /* Conservative bounds: a finite parent sphere encloses every child sphere (checked
         * in double precision, with a relative slack for float rounding). */
        rv_node c;
        rv_node_first_child(w, n, &c);
        for (; c.id && isfinite(b[3]); rv_node_next_sibling(w, c, &c)) {
            float cb[4];
            rv_node_world_bounds(w, c, cb);
            if (cb[3] < 0.0f)
                continue;
            double dx = (double)cb[0] - b[0], dy = (double)cb[1] - b[1], dz = (double)cb[2] - b[2];
            double slack = 1e-5 * (fabs((double)b[0]) + fabs((double)b[1]) + fabs((double)b[2]) + b[3] + cb[3]);
            if (!(sqrt(dx * dx + dy * dy + dz * dz) + cb[3] <= b[3] + slack))
                return 0;
        }
        rv_node next;
        rv_node_first_child(w, n, &next);
        while (!next.id && n.id) {
            rv_node_next_sibling(w, n, &next);
            if (!next.id)
                rv_node_parent(w, n, &n);
        }
        n = next;
    }
    return 1;
}

/* Resets the fixture's chain root -> mid -> leaf to identity transforms (after accepted
 * extreme values) and updates. */
static void reset_chain(rvh_ctx *cx)
{
    float zero[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 }, q[4] = { 0, 0, 0, 1 };
    rv_node chain[3] = { cx->na.root, cx->na.mid, cx->na.leaf };
    for (int i = 0; i < 3; i++) {
        RVH_ACCEPT(cx, rv_node_set_position(cx->a, chain[i], zero));
        RVH_ACCEPT(cx, rv_node_set_scale(cx->a, chain[i], one));
        RVH_ACCEPT(cx, rv_node_set_rotation(cx->a, chain[i], q));
    }
    RVH_ACCEPT(cx, rv_update_world(cx->a));
}

/* An update after accepted extremes either succeeds or reports the overflow; either way
 * the world stays sane. */
static void update_stays_sane(rvh_ctx *cx)
{
    rv_result r = rv_update_world(cx->a);
    RVH_CHECK(cx, r == RV_OK || r == RV_ERR_NOT_FINITE);
    RVH_CHECK(cx, world_sane(cx->a));
}

void hostile_rv_node_create(rvh_ctx *cx)
{
    rv_node out = { 0x5a5a5a5a5a5aull };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_create(NULL, RV_NODE_NONE, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_create(cx->a, RV_NODE_NONE, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_create(cx->a, cx->na.root, NULL));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_create(cx->a, cx->bad[i], &out));
    RVH_CHECK(cx, out.id == 0x5a5a5a5a5a5aull);
    /* None is a valid parent (a root); a node of world b is not, even with a twin here. */
    RVH_ACCEPT(cx, rv_node_create(cx->a, RV_NODE_NONE, &out));
    RVH_CHECK(cx, rv_node_is_valid(cx->a, out) && !rv_node_is_valid(cx->b, out));
}

static void destroy_case(rvh_ctx *cx, rv_result (*destroy)(rv_world *, rv_node))
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, destroy(NULL, cx->na.mid));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, destroy(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, destroy(cx->a, cx->bad[i]));
    /* Destroying twice: the second call finds a stale handle. */
    RVH_ACCEPT(cx, destroy(cx->a, cx->na.twig));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, destroy(cx->a, cx->na.twig));
    RVH_CHECK(cx, rv_node_is_valid(cx->b, cx->nb.twig)); /* its twin lives on */
}

void hostile_rv_node_destroy_subtree(rvh_ctx *cx)
{
    destroy_case(cx, rv_node_destroy_subtree);
}

void hostile_rv_node_destroy_reroot(rvh_ctx *cx)
{
    destroy_case(cx, rv_node_destroy_reroot);
}

void hostile_rv_node_attach(rvh_ctx *cx)
{
    rvh_nodes *n = &cx->na;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_attach(NULL, n->root, n->twig));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->a, RV_NODE_NONE, n->twig));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->a, n->root, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++) {
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->a, cx->bad[i], n->twig));
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->a, n->other_root, cx->bad[i]));
    }
    /* Cycles: onto itself, onto its child, onto its grandchild. */
    RVH_REJECT(cx, RV_ERR_CYCLE, rv_node_attach(cx->a, n->root, n->root));
    RVH_REJECT(cx, RV_ERR_CYCLE, rv_node_attach(cx->a, n->mid, n->root));
    RVH_REJECT(cx, RV_ERR_CYCLE, rv_node_attach(cx->a, n->leaf, n->root));
    RVH_REJECT(cx, RV_ERR_CYCLE, rv_node_attach(cx->a, n->leaf, n->mid));
    /* Across worlds, twins included, in both directions. */
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->a, cx->nb.other_root, n->twig));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_attach(cx->b, n->other_root, cx->nb.twig));
}

void hostile_rv_node_detach(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_detach(NULL, cx->na.leaf));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_detach(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_detach(cx->a, cx->bad[i]));
}

typedef rv_result (*vec_setter)(rv_world *, rv_node, const float *);

static void vec3_setter_case(rvh_ctx *cx, vec_setter set, float ok)
{
    float v[3] = { ok, ok, ok };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(NULL, cx->na.mid, v));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, set(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, set(cx->a, RV_NODE_NONE, v));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, set(cx->a, cx->bad[i], v));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            rvh_vec_with(v, 3, ok, k, rvh_nonfinite[b]);
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, set(cx->a, cx->na.mid, v));
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, set(cx->a, cx->na.root, v));
        }
    /* Finite extremes are valid input; what they make is either finite or an overflow
     * the update reports, and the world stays sane. */
    for (int e = 0; e < RVH_EXTREME; e++) {
        for (int k = 0; k < 3; k++) {
            rvh_vec_with(v, 3, ok, k, rvh_extreme[e]);
            RVH_ACCEPT(cx, set(cx->a, cx->na.mid, v));
            update_stays_sane(cx);
        }
        rvh_vec_with(v, 3, rvh_extreme[e], 0, rvh_extreme[e]);
        RVH_ACCEPT(cx, set(cx->a, cx->na.root, v));
        RVH_ACCEPT(cx, set(cx->a, cx->na.mid, v));
        RVH_ACCEPT(cx, set(cx->a, cx->na.leaf, v));
        update_stays_sane(cx);
        reset_chain(cx);
    }
}

void hostile_rv_node_set_position(rvh_ctx *cx)
{
    vec3_setter_case(cx, rv_node_set_position, 1.0f);
}

void hostile_rv_node_set_scale(rvh_ctx *cx)
{
    vec3_setter_case(cx, rv_node_set_scale, 2.0f);
}

/* A quaternion rvis stored: finite and unit length. */
static int stored_rotation_is_unit(rvh_ctx *cx, rv_node n)
{
    float q[4];
    if (rv_node_get_transform(cx->a, n, NULL, q, NULL) != RV_OK)
        return 0;
    for (int k = 0; k < 4; k++)
        if (!isfinite(q[k]))
            return 0;
    return fabsf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1.0f) < 1e-5f;
}

void hostile_rv_node_set_rotation(rvh_ctx *cx)
{
    float q[4] = { 0, 0, 0, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(NULL, cx->na.mid, q));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_rotation(cx->a, RV_NODE_NONE, q));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_rotation(cx->a, cx->bad[i], q));
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 4; k++) {
            rvh_vec_with(q, 4, 0.5f, k, rvh_nonfinite[b]);
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_rotation(cx->a, cx->na.mid, q));
        }
    float zero[4] = { 0, 0, 0, 0 }, neg_zero[4] = { -0.0f, -0.0f, -0.0f, -0.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(cx->a, cx->na.mid, zero));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(cx->a, cx->na.mid, neg_zero));
    /* Tiny, huge and lopsided quaternions normalise to a unit rotation; one with no normal
     * component (subnormals only: zero under DAZ) is refused as zero. */
    for (int e = 0; e < RVH_EXTREME; e++) {
        if (rvh_extreme[e] == 0.0f)
            continue;
        bool subnormal = fpclassify(rvh_extreme[e]) == FP_SUBNORMAL;
        for (int k = 0; k < 4; k++) {
            rvh_vec_with(q, 4, 0.0f, k, rvh_extreme[e]);
            if (subnormal) {
                RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(cx->a, cx->na.mid, q));
                q[(k + 1) % 4] = FLT_MIN; /* beside a normal component it is fine */
            }
            RVH_ACCEPT(cx, rv_node_set_rotation(cx->a, cx->na.mid, q));
            RVH_CHECK(cx, stored_rotation_is_unit(cx, cx->na.mid));
        }
        rvh_vec_with(q, 4, rvh_extreme[e], 0, rvh_extreme[e]);
        if (subnormal) {
            RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation(cx->a, cx->na.mid, q));
            continue;
        }
        RVH_ACCEPT(cx, rv_node_set_rotation(cx->a, cx->na.mid, q));
        RVH_CHECK(cx, stored_rotation_is_unit(cx, cx->na.mid));
        update_stays_sane(cx);
    }
}

void hostile_rv_node_set_rotation_axis_angle(rvh_ctx *cx)
{
    float axis[3] = { 0, 0, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation_axis_angle(NULL, cx->na.mid, axis, 1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, NULL, 1.0f));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_rotation_axis_angle(cx->a, RV_NODE_NONE, axis, 1.0f));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_rotation_axis_angle(cx->a, cx->bad[i], axis, 1.0f));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, axis, rvh_nonfinite[b]));
        for (int k = 0; k < 3; k++) {
            float bad[3];
            rvh_vec_with(bad, 3, 1.0f, k, rvh_nonfinite[b]);
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, bad, 1.0f));
        }
    }
    float zero[3] = { 0, 0, 0 }, neg_zero[3] = { -0.0f, -0.0f, -0.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, zero, 1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, neg_zero, 1.0f));
    for (int e = 0; e < RVH_EXTREME; e++) {
        RVH_ACCEPT(cx, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, axis, rvh_extreme[e]));
        RVH_CHECK(cx, stored_rotation_is_unit(cx, cx->na.mid));
        if (rvh_extreme[e] == 0.0f)
            continue;
        float big[3];
        rvh_vec_with(big, 3, rvh_extreme[e], 2, rvh_extreme[e]);
        if (fpclassify(rvh_extreme[e]) == FP_SUBNORMAL) { /* no normal component: a zero axis */
            RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, big, 0.75f));
            big[0] = FLT_MIN;
        }
        RVH_ACCEPT(cx, rv_node_set_rotation_axis_angle(cx->a, cx->na.mid, big, 0.75f));
        RVH_CHECK(cx, stored_rotation_is_unit(cx, cx->na.mid));
        update_stays_sane(cx);
    }
}

void hostile_rv_node_get_transform(rvh_ctx *cx)
{
    float p[3], q[4], s[3];
    rvh_poison(p, sizeof p);
    rvh_poison(q, sizeof q);
    rvh_poison(s, sizeof s);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_transform(NULL, cx->na.mid, p, q, s));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_transform(cx->a, RV_NODE_NONE, p, q, s));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_transform(cx->a, cx->bad[i], p, q, s));
    RVH_CHECK(cx, rvh_is_poisoned(p, sizeof p) && rvh_is_poisoned(q, sizeof q) && rvh_is_poisoned(s, sizeof s));
    RVH_ACCEPT(cx, rv_node_get_transform(cx->a, cx->na.mid, NULL, NULL, NULL)); /* outputs optional */
}

void hostile_rv_node_transform_ptrs(rvh_ctx *cx)
{
    float *untouched = (float *)(uintptr_t)0x5a5a5a5a;
    float *p = untouched, *q = untouched, *s = untouched;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_transform_ptrs(NULL, cx->na.mid, &p, &q, &s));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_transform_ptrs(cx->a, RV_NODE_NONE, &p, &q, &s));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_transform_ptrs(cx->a, cx->bad[i], &p, &q, &s));
    RVH_CHECK(cx, p == untouched && q == untouched && s == untouched);
    RVH_ACCEPT(cx, rv_node_transform_ptrs(cx->a, cx->na.mid, NULL, NULL, NULL));
}

void hostile_rv_node_mark_moved(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_mark_moved(NULL, cx->na.mid));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_mark_moved(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_mark_moved(cx->a, cx->bad[i]));
}

/* A visit callback that tries to change the flags of the node it is handed. */
typedef struct flags_visit {
    rv_world *world;
    rv_node node;
    rv_result got;
} flags_visit;

static bool set_flags_in_visit(rv_node node, const float world_matrix[16], void *user)
{
    (void)world_matrix;
    flags_visit *v = user;
    v->node = node;
    v->got = rv_node_set_flags(v->world, node, RV_NODE_FLAG_HIDDEN);
    return false;
}

void hostile_rv_node_set_flags(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_flags(NULL, cx->na.mid, 0));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_flags(cx->a, RV_NODE_NONE, 0));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_flags(cx->a, cx->bad[i], RV_NODE_FLAG_HIDDEN));
    /* Every bit beyond the two known ones is refused, alone and beside known ones. */
    for (int bit = 2; bit < 32; bit++) {
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_flags(cx->a, cx->na.mid, 1u << bit));
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_flags(cx->a, cx->na.mid, RV_NODE_FLAG_HIDDEN | (1u << bit)));
    }
    /* A visit callback may not change flags the walk reads. */
    float ortho[16] = { 1e-4f, 0, 0, 0, 0, 1e-4f, 0, 0, 0, 0, -1e-4f, 0, 0, 0, 0, 1 };
    rv_frustum frustum;
    assert_int_equal(rv_frustum_from_view_projection(ortho, (rv_clip){ 0 }, &frustum), RV_OK);
    flags_visit v = { cx->a, RV_NODE_NONE, RV_OK };
    uint32_t flags = 0xFFu;
    RVH_ACCEPT(cx, rv_visit_visible(cx->a, RV_NODE_NONE, &frustum, set_flags_in_visit, &v, NULL));
    RVH_CHECK(cx, v.node.id != 0 && v.got == RV_ERR_BAD_STATE);
    RVH_ACCEPT(cx, rv_node_get_flags(cx->a, v.node, &flags));
    RVH_CHECK(cx, flags == 0);
    RVH_ACCEPT(cx, rv_node_set_flags(cx->a, cx->na.mid, RV_NODE_FLAG_HIDDEN | RV_NODE_FLAG_TRANSLUCENT));
    RVH_ACCEPT(cx, rv_node_get_flags(cx->a, cx->na.mid, &flags));
    RVH_CHECK(cx, flags == (RV_NODE_FLAG_HIDDEN | RV_NODE_FLAG_TRANSLUCENT));
}

void hostile_rv_node_get_flags(rvh_ctx *cx)
{
    uint32_t flags = 0x5a5a5a5au;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_flags(NULL, cx->na.mid, &flags));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_flags(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_flags(cx->a, RV_NODE_NONE, &flags));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_flags(cx->a, cx->bad[i], &flags));
    RVH_CHECK(cx, flags == 0x5a5a5a5au);
    RVH_ACCEPT(cx, rv_node_get_flags(cx->a, cx->na.mid, &flags));
    RVH_CHECK(cx, flags == 0);
}

void hostile_rv_node_set_local_matrix(rvh_ctx *cx)
{
    float m[16] = { 0, 0, -2, 0, 0, 3, 0, 0, 1, 0.5f, 0, 0, 4, 5, 6, 1 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_local_matrix(NULL, cx->na.mid, m));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_local_matrix(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_local_matrix(cx->a, RV_NODE_NONE, m));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_local_matrix(cx->a, cx->bad[i], m));
    const float specials[3] = { NAN, INFINITY, -INFINITY };
    for (int k = 0; k < 16; k++) {
        float bad[16];
        memcpy(bad, m, sizeof m);
        bad[k] = specials[k % 3];
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_local_matrix(cx->a, cx->na.mid, bad));
        if (k % 4 == 3) { /* a projective row */
            bad[k] = k == 15 ? 0.0f : 1e-30f;
            RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_local_matrix(cx->a, cx->na.mid, bad));
        }
    }
    RVH_ACCEPT(cx, rv_node_set_local_matrix(cx->a, cx->na.mid, m));
    float out[16];
    RVH_ACCEPT(cx, rv_node_get_local_matrix(cx->a, cx->na.mid, out));
    RVH_CHECK(cx, memcmp(out, m, sizeof m) == 0);
}

void hostile_rv_node_get_local_matrix(rvh_ctx *cx)
{
    float out[16] = { 7 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_local_matrix(NULL, cx->na.mid, out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_local_matrix(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_local_matrix(cx->a, RV_NODE_NONE, out));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_local_matrix(cx->a, cx->bad[i], out));
    RVH_CHECK(cx, out[0] == 7);
    RVH_ACCEPT(cx, rv_node_get_local_matrix(cx->a, cx->na.mid, out));
    RVH_CHECK(cx, out[3] == 0 && out[7] == 0 && out[11] == 0 && out[15] == 1);
}

void hostile_rv_node_set_key(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_key(NULL, cx->na.mid, 7));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_key(cx->a, RV_NODE_NONE, 7));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_key(cx->a, cx->bad[i], 7));
    uint64_t key = 0;
    RVH_ACCEPT(cx, rv_node_set_key(cx->a, cx->na.mid, UINT64_MAX));
    RVH_ACCEPT(cx, rv_node_get_key(cx->a, cx->na.mid, &key));
    RVH_CHECK(cx, key == UINT64_MAX);
}

void hostile_rv_node_get_key(rvh_ctx *cx)
{
    uint64_t key = 0x5a5a5a5a5a5aull;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_key(NULL, cx->na.mid, &key));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_key(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_key(cx->a, RV_NODE_NONE, &key));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_key(cx->a, cx->bad[i], &key));
    RVH_CHECK(cx, key == 0x5a5a5a5a5a5aull);
    RVH_ACCEPT(cx, rv_node_get_key(cx->a, cx->na.mid, &key));
    RVH_CHECK(cx, key == 0);
}

void hostile_rv_node_set_bounds(rvh_ctx *cx)
{
    float c[3] = { 0, 0, 0 };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_bounds(NULL, cx->na.mid, c, 1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_bounds(cx->a, cx->na.mid, NULL, 1.0f));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_bounds(cx->a, RV_NODE_NONE, c, 1.0f));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_bounds(cx->a, cx->bad[i], c, 1.0f));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        /* -Inf is a non-finite radius, not a "clear": refused like every other. */
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_bounds(cx->a, cx->na.mid, c, rvh_nonfinite[b]));
        for (int k = 0; k < 3; k++) {
            float bad[3];
            rvh_vec_with(bad, 3, 0.0f, k, rvh_nonfinite[b]);
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_bounds(cx->a, cx->na.mid, bad, 1.0f));
        }
    }
    /* Extreme centres and radii (a negative one clears): accepted, and the bounds that
     * follow are finite or an infinite never-culled sphere, never NaN. */
    for (int e = 0; e < RVH_EXTREME; e++) {
        RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, cx->na.leaf, c, rvh_extreme[e]));
        update_stays_sane(cx);
        float far[3];
        rvh_vec_with(far, 3, rvh_extreme[e], 0, rvh_extreme[e]);
        RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, cx->na.leaf, far, 1.0f));
        RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, cx->na.twig, far, fabsf(rvh_extreme[e])));
        update_stays_sane(cx);
        float b[4];
        RVH_ACCEPT(cx, rv_node_world_bounds(cx->a, cx->na.root, b));
        RVH_CHECK(cx, b[3] >= 0.0f); /* the root still has geometry below it */
    }
    /* Spheres far apart at 1e31: their squared distance overflows float. A parent whose
     * sphere is grown (not recomputed) for one changed child must still enclose it
     * (an enclosure test must not say yes when inf <= inf). */
    reset_chain(cx);
    rv_node c1, c2;
    RVH_ACCEPT(cx, rv_node_create(cx->a, cx->na.twig, &c1));
    RVH_ACCEPT(cx, rv_node_create(cx->a, cx->na.twig, &c2)); /* two children: grown, not recomputed */
    float far_parent[3] = { 1e31f, 1e31f, 1e31f }, far_child[3] = { 0.0f, -1.5e31f, 0.0f };
    RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, cx->na.twig, far_parent, 1.1e31f));
    update_stays_sane(cx);
    RVH_ACCEPT(cx, rv_node_set_bounds(cx->a, c1, far_child, 1e30f));
    update_stays_sane(cx);
}

void hostile_rv_update_world(rvh_ctx *cx)
{
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_update_world(NULL));
    float before_mid[16], before_leaf[16], m[16];
    RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.mid, before_mid));
    RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.leaf, before_leaf));
    float *p, *q, *s;
    RVH_ACCEPT(cx, rv_node_transform_ptrs(cx->a, cx->na.mid, &p, &q, &s));
    float saved_p[3], saved_q[4], saved_s[3];
    memcpy(saved_p, p, sizeof saved_p);
    memcpy(saved_q, q, sizeof saved_q);
    memcpy(saved_s, s, sizeof saved_s);
    float twig_pos[3] = { -4, 0, 0 };

    /* A NaN / infinity written in place: reported; the node and its subtree keep their
     * matrices, and every other moved node is still updated. */
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int which = 0; which < 3; which++) {
            float *target = which == 0 ? p : which == 1 ? q : s;
            target[b % 3] = rvh_nonfinite[b];
            RVH_ACCEPT(cx, rv_node_mark_moved(cx->a, cx->na.mid));
            twig_pos[1] += 1.0f;
            RVH_ACCEPT(cx, rv_node_set_position(cx->a, cx->na.twig, twig_pos));
            float twig_before[16], twig_after[16];
            RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.twig, twig_before));
            RVH_CHECK(cx, rv_update_world(cx->a) == RV_ERR_NOT_FINITE);
            RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.mid, m));
            RVH_CHECK(cx, memcmp(m, before_mid, sizeof m) == 0);
            RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.leaf, m));
            RVH_CHECK(cx, memcmp(m, before_leaf, sizeof m) == 0);
            RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.twig, twig_after));
            RVH_CHECK(cx, twig_after[13] != twig_before[13]); /* the other moved node was updated */
            RVH_CHECK(cx, world_sane(cx->a));
            memcpy(p, saved_p, sizeof saved_p);
            memcpy(q, saved_q, sizeof saved_q);
            memcpy(s, saved_s, sizeof saved_s);
        }
    /* A zero quaternion written in place: reported as invalid, matrix kept. */
    memset(q, 0, 4 * sizeof *q);
    RVH_ACCEPT(cx, rv_node_mark_moved(cx->a, cx->na.mid));
    RVH_CHECK(cx, rv_update_world(cx->a) == RV_ERR_INVALID_ARG);
    RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.mid, m));
    RVH_CHECK(cx, memcmp(m, before_mid, sizeof m) == 0);
    memcpy(q, saved_q, sizeof saved_q);
    RVH_ACCEPT(cx, rv_node_mark_moved(cx->a, cx->na.mid));
    RVH_ACCEPT(cx, rv_update_world(cx->a)); /* repaired in place: recovers */
    RVH_ACCEPT(cx, rv_node_world_matrix(cx->a, cx->na.mid, m));
    RVH_CHECK(cx, memcmp(m, before_mid, sizeof m) == 0);

    /* Finite scales whose product overflows: reported, the overflowing node keeps its
     * matrix, the world stays sane. */
    float big[3] = { 1e30f, 1e30f, 1e30f };
    RVH_ACCEPT(cx, rv_node_set_scale(cx->a, cx->na.root, big));
    RVH_ACCEPT(cx, rv_node_set_scale(cx->a, cx->na.mid, big));
    RVH_CHECK(cx, rv_update_world(cx->a) == RV_ERR_NOT_FINITE);
    RVH_CHECK(cx, world_sane(cx->a));
}

typedef rv_result (*float_getter)(const rv_world *, rv_node, float *);

static void float_getter_case(rvh_ctx *cx, float_getter get, size_t floats)
{
    float out[16];
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, get(NULL, cx->na.mid, out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, get(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, get(cx->a, RV_NODE_NONE, out));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, get(cx->a, cx->bad[i], out));
    RVH_CHECK(cx, rvh_is_poisoned(out, floats * sizeof(float)));
}

void hostile_rv_node_world_matrix(rvh_ctx *cx)
{
    float_getter_case(cx, rv_node_world_matrix, 16);
}

void hostile_rv_node_world_bounds(rvh_ctx *cx)
{
    float_getter_case(cx, rv_node_world_bounds, 4);
}

typedef rv_result (*link_getter)(const rv_world *, rv_node, rv_node *);

static void link_getter_case(rvh_ctx *cx, link_getter get)
{
    rv_node out = { 0x5a5a5a5aull };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, get(NULL, cx->na.mid, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, get(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, get(cx->a, RV_NODE_NONE, &out));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, get(cx->a, cx->bad[i], &out));
    RVH_CHECK(cx, out.id == 0x5a5a5a5aull);
}

void hostile_rv_node_parent(rvh_ctx *cx)
{
    link_getter_case(cx, rv_node_parent);
}

void hostile_rv_node_first_child(rvh_ctx *cx)
{
    link_getter_case(cx, rv_node_first_child);
}

void hostile_rv_node_next_sibling(rvh_ctx *cx)
{
    link_getter_case(cx, rv_node_next_sibling);
}

void hostile_rv_world_first_root(rvh_ctx *cx)
{
    rv_node out = { 0x5a5a5a5aull };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_first_root(NULL, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_world_first_root(cx->a, NULL));
    RVH_CHECK(cx, out.id == 0x5a5a5a5aull);
}

void hostile_rv_node_is_valid(rvh_ctx *cx)
{
    RVH_CHECK(cx, !rv_node_is_valid(NULL, cx->na.mid));
    RVH_CHECK(cx, !rv_node_is_valid(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_CHECK(cx, !rv_node_is_valid(cx->a, cx->bad[i]));
    RVH_CHECK(cx, rv_node_is_valid(cx->a, cx->na.leaf) && !rv_node_is_valid(cx->b, cx->na.leaf));
}

void hostile_rv_world_scene_stats(rvh_ctx *cx)
{
    rv_scene_stats z = rv_world_scene_stats(NULL);
    RVH_CHECK(cx, z.nodes == 0 && z.matrices_recomputed == 0 && z.bounds_recomputed == 0);
    RVH_CHECK(cx, rv_world_scene_stats(cx->a).nodes == 5);
}
