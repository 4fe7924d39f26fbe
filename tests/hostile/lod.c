/* Hostile cases: apparent-size LOD and HLOD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile/hostile.h"
#include "core/hash.h"

#include <float.h>
#include <string.h>

static rv_lod_ladder good_ladder(void)
{
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder l;
    assert_int_equal(rv_lod_ladder_make(t, 3, &l), RV_OK);
    return l;
}

/* Hand-filled ladders that break a rule, with the code every call answers them with. */
typedef struct bad_ladder {
    rv_lod_ladder ladder;
    rv_result code;
} bad_ladder;

static int bad_ladders(bad_ladder out[6])
{
    rv_lod_ladder g = good_ladder();
    int n = 0;
    out[n] = (bad_ladder){ g, RV_ERR_INVALID_ARG };
    out[n++].ladder.count = 0;
    out[n] = (bad_ladder){ g, RV_ERR_CAPACITY };
    out[n++].ladder.count = RV_LOD_MAX_THRESHOLDS + 1;
    out[n] = (bad_ladder){ g, RV_ERR_NOT_FINITE };
    out[n++].ladder.thresholds[1] = NAN;
    out[n] = (bad_ladder){ g, RV_ERR_INVALID_ARG };
    out[n++].ladder.thresholds[2] = -0.01f;
    out[n] = (bad_ladder){ g, RV_ERR_ORDER };
    out[n++].ladder.thresholds[1] = 0.2f;
    out[n] = (bad_ladder){ g, RV_ERR_ORDER };
    out[n++].ladder.thresholds[2] = 0.5f;
    return n;
}

static rv_lod_view good_view(void)
{
    rv_lod_view v = { { 0, 0, 20 }, 1.0f, 720.0f, 10.0f, false };
    return v;
}

/* Views with one bad field, and the code (perspective HLOD uses every field). */
static int bad_views(rv_lod_view out[12], rv_result codes[12], int hlod)
{
    int n = 0;
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            out[n] = good_view();
            out[n].eye[k] = rvh_nonfinite[b];
            codes[n++] = RV_ERR_NOT_FINITE;
            if (n == 8)
                goto done;
        }
done:
    if (hlod) {
        out[n] = good_view();
        out[n].fov_y = 0.0f;
        codes[n++] = RV_ERR_INVALID_ARG;
        out[n] = good_view();
        out[n].fov_y = 3.2f; /* >= pi */
        codes[n++] = RV_ERR_INVALID_ARG;
        out[n] = good_view();
        out[n].viewport_height_px = -1.0f;
        codes[n++] = RV_ERR_INVALID_ARG;
    }
    out[n] = good_view();
    out[n].orthographic = true;
    out[n].ortho_height = 0.0f;
    codes[n++] = RV_ERR_INVALID_ARG;
    return n;
}

/* The world's LOD state as the getters show it: desc and every node's ladder. */
static uint64_t lod_digest(const void *object)
{
    const rv_world *w = object;
    rv_lod_desc d;
    memset(&d, 0, sizeof d);
    uint64_t h = (uint64_t)rv_lod_get_desc(w, &d);
    float f[5] = { d.hysteresis, d.crossfade_ms, d.max_screen_space_error, d.bias, d.ortho_reference_fov_y };
    h = rvi_hash_bytes(h, f, sizeof f);
    h = rvi_hash_bytes(h, &d.finest_level, 4);
    rv_node n;
    rv_world_first_root(w, &n);
    while (n.id) {
        rv_lod_ladder l;
        memset(&l, 0, sizeof l);
        rv_result r = rv_node_get_lod_ladder(w, n, &l);
        h = rvi_hash_bytes(h, &r, sizeof r);
        h = rvi_hash_bytes(h, &l, sizeof l);
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

/* mid has a ladder, root and leaf are HLOD regions (leaf resident); the LOD state exists. */
static void setup(rvh_ctx *cx)
{
    rv_lod_ladder l = good_ladder();
    RVH_ACCEPT(cx, rv_node_set_lod_ladder(cx->a, cx->na.mid, &l));
    RVH_ACCEPT(cx, rv_node_set_hlod_region(cx->a, cx->na.root, 4.0f));
    RVH_ACCEPT(cx, rv_node_set_hlod_region(cx->a, cx->na.leaf, 1.0f));
    RVH_ACCEPT(cx, rv_node_set_hlod_resident(cx->a, cx->na.leaf, true));
    RVH_ACCEPT(cx, rv_lod_advance(cx->a, 16.0f));
    rvh_watch(cx, "the LOD state", lod_digest, cx->a);
}

void hostile_rv_lod_ladder_make(rvh_ctx *cx)
{
    const float t[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder out;
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(NULL, 3, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(t, 3, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(t, 0, &out));
    float nine[9] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_lod_ladder_make(nine, 9, &out));
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_lod_ladder_make(nine, UINT32_MAX, &out)); /* never read past */
    for (int b = 0; b < RVH_NONFINITE; b++)
        for (int k = 0; k < 3; k++) {
            float bad[3] = { 0.2f, 0.06f, 0.015f };
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_ladder_make(bad, 3, &out));
        }
    const float zero[2] = { 0.2f, 0.0f }, neg[2] = { 0.2f, -0.1f }, neg0[1] = { -0.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(zero, 2, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(neg, 2, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_ladder_make(neg0, 1, &out));
    const float equal[2] = { 0.1f, 0.1f }, up[2] = { 0.1f, 0.2f };
    RVH_REJECT(cx, RV_ERR_ORDER, rv_lod_ladder_make(equal, 2, &out));
    RVH_REJECT(cx, RV_ERR_ORDER, rv_lod_ladder_make(up, 2, &out));
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
    const float extreme[3] = { FLT_MAX, 1.0f, 1e-45f };
    RVH_ACCEPT(cx, rv_lod_ladder_make(extreme, 3, &out));
}

void hostile_rv_lod_for_sphere(rvh_ctx *cx)
{
    rv_lod_ladder l = good_ladder();
    float c[3] = { 0, 0, 0 }, eye[3] = { 0, 0, 20 };
    uint32_t level = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_sphere(NULL, 1.0f, eye, &l, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_sphere(c, 1.0f, NULL, &l, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_sphere(c, 1.0f, eye, NULL, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_sphere(c, 1.0f, eye, &l, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_sphere(c, -1.0f, eye, &l, &level));
    for (int b = 0; b < RVH_NONFINITE; b++) {
        if (rvh_nonfinite[b] != -INFINITY) /* -inf radius: negative or non-finite */
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_for_sphere(c, rvh_nonfinite[b], eye, &l, &level));
        for (int k = 0; k < 3; k++) {
            float bad[3] = { 0, 0, 0 };
            bad[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_for_sphere(bad, 1.0f, eye, &l, &level));
            bad[k] += 0.0f;
            float bad_eye[3] = { 0, 0, 20 };
            bad_eye[k] = rvh_nonfinite[b];
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_for_sphere(c, 1.0f, bad_eye, &l, &level));
        }
    }
    bad_ladder bl[6];
    int nb = bad_ladders(bl);
    for (int i = 0; i < nb; i++)
        RVH_REJECT(cx, bl[i].code, rv_lod_for_sphere(c, 1.0f, eye, &bl[i].ladder, &level));
    RVH_CHECK(cx, level == 0xA5A5A5A5u);
    /* Extremes: a huge sphere holds the eye (level 0); a far eye sees nothing (count). */
    RVH_ACCEPT(cx, rv_lod_for_sphere(c, FLT_MAX, eye, &l, &level));
    RVH_CHECK(cx, level == 0);
    float far[3] = { FLT_MAX, -FLT_MAX, FLT_MAX };
    RVH_ACCEPT(cx, rv_lod_for_sphere(c, 1.0f, far, &l, &level));
    RVH_CHECK(cx, level == 3);
    RVH_ACCEPT(cx, rv_lod_for_sphere(c, 0.0f, eye, &l, &level));
    RVH_CHECK(cx, level == 3);
}

void hostile_rv_lod_select_spheres(rvh_ctx *cx)
{
    rv_lod_ladder l = good_ladder();
    rv_lod_view v = good_view();
    float x[4] = { 0, 0, 0, 0 }, y[4] = { 0, 0, 0, 0 }, z[4] = { 0, 0, 0, 0 }, r[4] = { 1, 1, 1, 1 };
    uint8_t out[4];
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_select_spheres(NULL, NULL, &v, x, y, z, r, 4, out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_select_spheres(&l, NULL, NULL, x, y, z, r, 4, out));
    const float *arrays[4] = { x, y, z, r };
    for (int a = 0; a < 5; a++) {
        const float *p[4] = { arrays[0], arrays[1], arrays[2], arrays[3] };
        uint8_t *o = out;
        if (a < 4)
            p[a] = NULL;
        else
            o = NULL;
        RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_select_spheres(&l, NULL, &v, p[0], p[1], p[2], p[3], 4, o));
    }
    rv_lod_desc bad_desc = { .bias = -1.0f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_select_spheres(&l, &bad_desc, &v, x, y, z, r, 4, out));
    bad_desc.bias = NAN;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_select_spheres(&l, &bad_desc, &v, x, y, z, r, 4, out));
    bad_ladder bl[6];
    int nb = bad_ladders(bl);
    for (int i = 0; i < nb; i++)
        RVH_REJECT(cx, bl[i].code, rv_lod_select_spheres(&bl[i].ladder, NULL, &v, x, y, z, r, 4, out));
    rv_lod_view bv[12];
    rv_result bc[12];
    int nv = bad_views(bv, bc, 0);
    for (int i = 0; i < nv; i++)
        RVH_REJECT(cx, bc[i], rv_lod_select_spheres(&l, NULL, &bv[i], x, y, z, r, 4, out));
    /* Per-sphere errors: every level written, a NaN sphere at the finest level, the
     * error reported after the loop. */
    x[1] = NAN;
    r[2] = -1.0f;
    rv_result got = rv_lod_select_spheres(&l, NULL, &v, x, y, z, r, 4, out);
    RVH_CHECK(cx, got == RV_ERR_NOT_FINITE || got == RV_ERR_INVALID_ARG);
    RVH_CHECK(cx, out[1] == 0 && out[0] <= 3 && out[2] <= 3 && out[3] <= 3);
    RVH_ACCEPT(cx, rv_lod_select_spheres(&l, NULL, &v, NULL, NULL, NULL, NULL, 0, NULL));
}

void hostile_rv_lod_selector_update(rvh_ctx *cx)
{
    rv_lod_ladder l = good_ladder();
    rv_lod_view v = good_view();
    rv_lod_selector sel = {0};
    rv_lod_selection out;
    float c[3] = { 0, 0, 0 };
    RVH_ACCEPT(cx, rv_lod_selector_update(&sel, &l, NULL, &v, c, 1.0f, 0.0f, &out));
    rv_lod_selector saved = sel;
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(NULL, &l, NULL, &v, c, 1.0f, 16.0f, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, NULL, NULL, &v, c, 1.0f, 16.0f, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, NULL, NULL, c, 1.0f, 16.0f, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, NULL, &v, NULL, 1.0f, 16.0f, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, NULL, &v, c, 1.0f, 16.0f, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, NULL, &v, c, -1.0f, 16.0f, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, NULL, &v, c, 1.0f, -1.0f, &out));
    const float bad[3] = { NAN, INFINITY, -NAN };
    for (int i = 0; i < 3; i++) {
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_selector_update(&sel, &l, NULL, &v, c, 1.0f, bad[i], &out));
        RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_selector_update(&sel, &l, NULL, &v, c, bad[i], 16.0f, &out));
    }
    rv_lod_desc bd = { .hysteresis = 1.5f };
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_selector_update(&sel, &l, &bd, &v, c, 1.0f, 16.0f, &out));
    bd.hysteresis = NAN;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_selector_update(&sel, &l, &bd, &v, c, 1.0f, 16.0f, &out));
    bad_ladder bl[6];
    int nb = bad_ladders(bl);
    for (int i = 0; i < nb; i++)
        RVH_REJECT(cx, bl[i].code, rv_lod_selector_update(&sel, &bl[i].ladder, NULL, &v, c, 1.0f, 16.0f, &out));
    RVH_CHECK(cx, memcmp(&sel, &saved, sizeof sel) == 0 && rvh_is_poisoned(&out, sizeof out));
    /* A huge time step finishes any fade; the weights stay a partition of one. */
    RVH_ACCEPT(cx, rv_lod_selector_update(&sel, &l, NULL, &v, c, 1.0f, FLT_MAX, &out));
    RVH_CHECK(cx, out.count >= 1 && out.count <= 2 && isfinite(out.weights[0]) &&
                      fabsf(out.weights[0] + out.weights[1] - 1.0f) < 1e-5f);
}

static void bad_desc_codes(rvh_ctx *cx, rv_result (*apply)(rvh_ctx *, const rv_lod_desc *))
{
    const struct { rv_lod_desc d; rv_result code; } bad[] = {
        { { .hysteresis = 1.0f }, RV_ERR_INVALID_ARG },  { { .hysteresis = NAN }, RV_ERR_NOT_FINITE },
        { { .crossfade_ms = INFINITY }, RV_ERR_NOT_FINITE }, { { .max_screen_space_error = -1.0f }, RV_ERR_INVALID_ARG },
        { { .bias = -0.5f }, RV_ERR_INVALID_ARG }, { { .bias = -INFINITY }, RV_ERR_NOT_FINITE },
        { { .ortho_reference_fov_y = 3.2f }, RV_ERR_INVALID_ARG }, { { .ortho_reference_fov_y = NAN }, RV_ERR_NOT_FINITE },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        RVH_REJECT(cx, bad[i].code, apply(cx, &bad[i].d));
}

static rv_result set_desc_on_a(rvh_ctx *cx, const rv_lod_desc *d)
{
    return rv_lod_set_desc(cx->a, d);
}

static rv_result create_world_with(rvh_ctx *cx, const rv_lod_desc *d)
{
    (void)cx;
    rv_world_desc wd = {0};
    wd.lod = *d;
    rv_world *w = (rv_world *)(uintptr_t)0x5a5a5a5a;
    rv_result r = rv_world_create(&wd, &w);
    if (r == RV_OK)
        rv_world_destroy(w);
    else if (w != (rv_world *)(uintptr_t)0x5a5a5a5a)
        fail_msg("a refused rv_world_create wrote its output");
    return r;
}

void hostile_rv_lod_set_desc(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_desc d = {0};
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_set_desc(NULL, &d));
    /* rv_lod_set_desc(world, NULL) restores the defaults (documented): not a refusal. */
    rv_lod_desc tuned = {0};
    tuned.bias = 2.0f;
    RVH_ACCEPT(cx, rv_lod_set_desc(cx->a, &tuned));
    RVH_ACCEPT(cx, rv_lod_set_desc(cx->a, NULL));
    rv_lod_desc now;
    RVH_ACCEPT(cx, rv_lod_get_desc(cx->a, &now));
    RVH_CHECK(cx, now.bias == 1.0f && now.max_screen_space_error == 16.0f);
    bad_desc_codes(cx, set_desc_on_a);
    /* rv_world_create refuses the same descs (world.c validates desc.lod). */
    bad_desc_codes(cx, create_world_with);
}

void hostile_rv_lod_get_desc(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_desc d;
    rvh_poison(&d, sizeof d);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_get_desc(NULL, &d));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_get_desc(cx->a, NULL));
    RVH_CHECK(cx, rvh_is_poisoned(&d, sizeof d));
    RVH_ACCEPT(cx, rv_lod_get_desc(cx->b, &d)); /* a world whose LOD state was never made */
    RVH_CHECK(cx, d.bias == 1.0f && d.max_screen_space_error == 16.0f);
}

void hostile_rv_lod_for_node(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_ladder l = good_ladder();
    rv_lod_view v = good_view();
    uint32_t level = 0xA5A5A5A5u;
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_node(NULL, cx->na.mid, &v, &l, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_node(cx->a, cx->na.mid, NULL, &l, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_node(cx->a, cx->na.mid, &v, NULL, &level));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_for_node(cx->a, cx->na.mid, &v, &l, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_lod_for_node(cx->a, RV_NODE_NONE, &v, &l, &level));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_lod_for_node(cx->a, cx->bad[i], &v, &l, &level));
    rv_lod_view bv[12];
    rv_result bc[12];
    int nv = bad_views(bv, bc, 0);
    for (int i = 0; i < nv; i++)
        RVH_REJECT(cx, bc[i], rv_lod_for_node(cx->a, cx->na.mid, &bv[i], &l, &level));
    bad_ladder bl[6];
    int nb = bad_ladders(bl);
    for (int i = 0; i < nb; i++)
        RVH_REJECT(cx, bl[i].code, rv_lod_for_node(cx->a, cx->na.mid, &v, &bl[i].ladder, &level));
    RVH_REJECT(cx, RV_ERR_BAD_STATE, rv_lod_for_node(cx->a, cx->na.twig, &v, &l, &level)); /* no geometry */
    RVH_CHECK(cx, level == 0xA5A5A5A5u);
}

void hostile_rv_node_set_lod_ladder(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_ladder l = good_ladder();
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_lod_ladder(NULL, cx->na.leaf, &l));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_lod_ladder(cx->a, RV_NODE_NONE, &l));
    for (int i = 0; i < RVH_BAD_HANDLES; i++) {
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_lod_ladder(cx->a, cx->bad[i], &l));
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_lod_ladder(cx->a, cx->bad[i], NULL));
    }
    bad_ladder bl[6];
    int nb = bad_ladders(bl);
    for (int i = 0; i < nb; i++)
        RVH_REJECT(cx, bl[i].code, rv_node_set_lod_ladder(cx->a, cx->na.mid, &bl[i].ladder));
}

void hostile_rv_node_get_lod_ladder(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_ladder out;
    rvh_poison(&out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_lod_ladder(NULL, cx->na.mid, &out));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_get_lod_ladder(cx->a, cx->na.mid, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_lod_ladder(cx->a, RV_NODE_NONE, &out));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_get_lod_ladder(cx->a, cx->bad[i], &out));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_get_lod_ladder(cx->a, cx->na.leaf, &out));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_get_lod_ladder(cx->b, cx->nb.mid, &out)); /* its twin has none */
    RVH_CHECK(cx, rvh_is_poisoned(&out, sizeof out));
}

void hostile_rv_lod_advance(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_advance(NULL, 16.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_advance(cx->a, -1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_lod_advance(cx->a, -FLT_MAX));
    for (int b = 0; b < RVH_NONFINITE; b++)
        if (rvh_nonfinite[b] != -INFINITY)
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_lod_advance(cx->a, rvh_nonfinite[b]));
    RVH_ACCEPT(cx, rv_lod_advance(cx->a, FLT_MAX)); /* a clock may run for a very long time */
    RVH_ACCEPT(cx, rv_lod_advance(cx->a, FLT_MAX));
    rv_lod_view v = good_view();
    rv_lod_selection s;
    RVH_ACCEPT(cx, rv_node_lod_select(cx->a, cx->na.mid, &v, &s));
    RVH_CHECK(cx, isfinite(s.weights[0]) && isfinite(s.weights[1]));
}

void hostile_rv_node_lod_select(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_view v = good_view();
    rv_lod_selection s;
    RVH_ACCEPT(cx, rv_node_lod_select(cx->a, cx->na.mid, &v, &s)); /* the first selection */
    rvh_poison(&s, sizeof s);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_lod_select(NULL, cx->na.mid, &v, &s));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_lod_select(cx->a, cx->na.mid, NULL, &s));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_lod_select(cx->a, cx->na.mid, &v, NULL));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_lod_select(cx->a, RV_NODE_NONE, &v, &s));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_lod_select(cx->a, cx->bad[i], &v, &s));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_lod_select(cx->a, cx->na.leaf, &v, &s));
    rv_lod_view bv[12];
    rv_result bc[12];
    int nv = bad_views(bv, bc, 0);
    for (int i = 0; i < nv; i++)
        RVH_REJECT(cx, bc[i], rv_node_lod_select(cx->a, cx->na.mid, &bv[i], &s));
    RVH_CHECK(cx, rvh_is_poisoned(&s, sizeof s));
}

void hostile_rv_node_set_hlod_region(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_hlod_region(NULL, cx->na.mid, 1.0f));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_hlod_region(cx->a, cx->na.mid, -1.0f));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_hlod_region(cx->a, RV_NODE_NONE, 1.0f));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_hlod_region(cx->a, cx->bad[i], 1.0f));
    for (int b = 0; b < RVH_NONFINITE; b++)
        if (rvh_nonfinite[b] != -INFINITY)
            RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_node_set_hlod_region(cx->a, cx->na.mid, rvh_nonfinite[b]));
    RVH_ACCEPT(cx, rv_node_set_hlod_region(cx->a, cx->na.mid, FLT_MAX));
}

void hostile_rv_node_clear_hlod_region(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_clear_hlod_region(NULL, cx->na.root));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_clear_hlod_region(cx->a, RV_NODE_NONE));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_clear_hlod_region(cx->a, cx->bad[i]));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_clear_hlod_region(cx->a, cx->na.mid));
    RVH_ACCEPT(cx, rv_node_clear_hlod_region(cx->a, cx->na.root));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_clear_hlod_region(cx->a, cx->na.root));
}

void hostile_rv_node_set_hlod_resident(rvh_ctx *cx)
{
    setup(cx);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_node_set_hlod_resident(NULL, cx->na.root, true));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_hlod_resident(cx->a, RV_NODE_NONE, true));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_node_set_hlod_resident(cx->a, cx->bad[i], true));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_node_set_hlod_resident(cx->a, cx->na.mid, true));
}

void hostile_rv_hlod_children(rvh_ctx *cx)
{
    setup(cx); /* root a region, leaf (under the plain mid) a region */
    rv_node out[2];
    uint32_t count = 77;
    rvh_poison(out, sizeof out);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_children(NULL, cx->na.root, out, 2, &count));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_children(cx->a, cx->na.root, out, 2, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_children(cx->a, cx->na.root, NULL, 2, &count));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_hlod_children(cx->a, RV_NODE_NONE, out, 2, &count));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_hlod_children(cx->a, cx->bad[i], out, 2, &count));
    RVH_REJECT(cx, RV_ERR_NOT_FOUND, rv_hlod_children(cx->a, cx->na.mid, out, 2, &count));
    RVH_CHECK(cx, count == 77 && rvh_is_poisoned(out, sizeof out));
    /* Through the plain mid to the leaf; a count alone says there is one. */
    RVH_REJECT(cx, RV_ERR_CAPACITY, rv_hlod_children(cx->a, cx->na.root, NULL, 0, &count));
    RVH_CHECK(cx, count == 1);
    RVH_ACCEPT(cx, rv_hlod_children(cx->a, cx->na.root, out, 2, &count));
    RVH_CHECK(cx, count == 1 && rv_node_equal(out[0], cx->na.leaf));
    RVH_ACCEPT(cx, rv_hlod_children(cx->a, cx->na.leaf, out, 2, &count));
    RVH_CHECK(cx, count == 0);
}

void hostile_rv_hlod_select(rvh_ctx *cx)
{
    setup(cx);
    rv_lod_view v = good_view();
    rv_hlod_result res;
    RVH_ACCEPT(cx, rv_hlod_select(cx->a, cx->na.root, &v, NULL, 16.0f, &res)); /* storage sized */
    rvh_poison(&res, sizeof res);
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_select(NULL, cx->na.root, &v, NULL, 16.0f, &res));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_select(cx->a, cx->na.root, NULL, NULL, 16.0f, &res));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_select(cx->a, cx->na.root, &v, NULL, 16.0f, NULL));
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_select(cx->a, cx->na.root, &v, NULL, -1.0f, &res));
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_hlod_select(cx->a, cx->na.root, &v, NULL, NAN, &res));
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_hlod_select(cx->a, cx->na.root, &v, NULL, INFINITY, &res));
    RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_hlod_select(cx->a, RV_NODE_NONE, &v, NULL, 16.0f, &res));
    for (int i = 0; i < RVH_BAD_HANDLES; i++)
        RVH_REJECT(cx, RV_ERR_STALE_HANDLE, rv_hlod_select(cx->a, cx->bad[i], &v, NULL, 16.0f, &res));
    rv_lod_view bv[12];
    rv_result bc[12];
    int nv = bad_views(bv, bc, 1);
    for (int i = 0; i < nv; i++)
        RVH_REJECT(cx, bc[i], rv_hlod_select(cx->a, cx->na.root, &bv[i], NULL, 16.0f, &res));
    /* A frustum with a NaN or an infinity in a plane its mask uses. */
    float ortho[16] = { 0.01f, 0, 0, 0, 0, 0.01f, 0, 0, 0, 0, -0.001f, 0, 0, 0, 0, 1 };
    rv_frustum f;
    RVH_ACCEPT(cx, rv_frustum_from_view_projection(ortho, (rv_clip){0}, &f));
    rv_frustum bad = f;
    bad.planes[4][3] = NAN;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_hlod_select(cx->a, cx->na.root, &v, &bad, 16.0f, &res));
    bad = f;
    bad.planes[0][0] = INFINITY;
    RVH_REJECT(cx, RV_ERR_NOT_FINITE, rv_hlod_select(cx->a, cx->na.root, &v, &bad, 16.0f, &res));
    bad = f;
    bad.plane_mask = UINT32_MAX; /* bits that name no plane */
    RVH_REJECT(cx, RV_ERR_INVALID_ARG, rv_hlod_select(cx->a, cx->na.root, &v, &bad, 16.0f, &res));
    RVH_CHECK(cx, rvh_is_poisoned(&res, sizeof res));
}
