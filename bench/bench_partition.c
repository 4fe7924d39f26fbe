/* Partition benchmarks: partition_city_walk (begin + end with the end's re-gate) and
 * partition_city_walk_end_without_regate (end only judges and flushes, as inside rv_frame).
 * The benchmark city's 1024 buildings become
 * partition groups of 8 storey parts (4 leaves each, none committed, so every re-entry asks
 * for a resync), under a committed slice at y <= 30 m and a 5 m frustum margin, gated along
 * the 600-frame camera walk. rvis: rv_partition_begin_frame + end_frame (the gate's own
 * walk, group test first). Baseline: the loop a host would write — every part against the
 * padded frustum and the slice, then its transition, with no group-level pruning. */
#include "bench_util.h"

#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STOREYS = 8, LEAVES = 4, PARTS = RVB_CITY_BUILDINGS * STOREYS, FRAMES = 600 };
static const float MARGIN = 5.0f;
static const float SLICE_LO[3] = { -1000, -1000, -1000 }, SLICE_HI[3] = { 1000, 30, 1000 };

typedef struct city_parts {
    float spheres[PARTS][4]; /* storey k of building b at b * STOREYS + k */
    rv_frustum frusta[FRAMES];
} city_parts;

static void storey_spheres(const rvb_city *city, city_parts *cp)
{
    for (int b = 0; b < RVB_CITY_BUILDINGS; b++) {
        const rvb_box *box = &city->buildings[b];
        float h = box->max[1] - box->min[1];
        for (int k = 0; k < STOREYS; k++) {
            float lo[3] = { box->min[0], box->min[1] + h * (float)k / STOREYS, box->min[2] };
            float hi[3] = { box->max[0], box->min[1] + h * (float)(k + 1) / STOREYS, box->max[2] };
            float *s = cp->spheres[b * STOREYS + k];
            float d2 = 0;
            for (int a = 0; a < 3; a++) {
                s[a] = 0.5f * (lo[a] + hi[a]);
                d2 += (hi[a] - lo[a]) * (hi[a] - lo[a]);
            }
            s[3] = 0.5f * sqrtf(d2) * 1.0001f;
        }
    }
}

/* ---- rvis ------------------------------------------------------------------------------ */

/* The city as partition groups; part_nodes (PARTS entries, may be NULL) receives the parts. */
static rv_world *build_world(const city_parts *cp, rv_node *part_nodes)
{
    rv_world_desc desc = {0};
    desc.node_capacity = RVB_CITY_BUILDINGS * (STOREYS + 1);
    desc.partition.frustum_margin = MARGIN;
    rv_world *w;
    if (rv_world_create(&desc, &w) != RV_OK)
        return NULL;
    bool ok = rv_partition_set_committed_slice(w, SLICE_LO, SLICE_HI) == RV_OK;
    for (int b = 0; ok && b < RVB_CITY_BUILDINGS; b++) {
        rv_node g;
        ok = rv_node_create(w, RV_NODE_NONE, &g) == RV_OK && rv_partition_make_group(w, g) == RV_OK;
        for (int k = 0; ok && k < STOREYS; k++) {
            const float *s = cp->spheres[b * STOREYS + k];
            uint64_t leaves[LEAVES];
            for (int l = 0; l < LEAVES; l++)
                leaves[l] = ((uint64_t)(b * STOREYS + k) << 8) | (uint64_t)l;
            rv_node part;
            ok = rv_node_create(w, g, &part) == RV_OK && rv_node_set_bounds(w, part, s, s[3]) == RV_OK &&
                 rv_partition_set_part(w, part, leaves, LEAVES, false) == RV_OK;
            if (ok && part_nodes)
                part_nodes[b * STOREYS + k] = part;
        }
    }
    if (!ok || rv_update_world(w) != RV_OK) {
        rv_world_destroy(w);
        return NULL;
    }
    return w;
}

/* regate: end_frame re-gates what was revealed since begin (the standalone pattern); without
 * it end_frame only judges and flushes (what rv_frame's end does after its own walk). */
static bool walk_rvis(rv_world *w, const city_parts *cp, bool regate, uint64_t *visible, uint64_t *requested)
{
    for (int f = 0; f < FRAMES; f++) {
        rv_partition_result r;
        if (rv_partition_begin_frame(w, &cp->frusta[f]) != RV_OK ||
            rv_partition_end_frame(w, regate ? &cp->frusta[f] : NULL, 16.0 * f, &r) != RV_OK)
            return false;
        *visible += r.counts.parts_visible;
        *requested += r.counts.parts_requested;
    }
    return true;
}

/* ---- baseline ---------------------------------------------------------------------------- */

typedef struct naive_gate {
    uint8_t seen[PARTS];      /* 0 never, 1 visible, 2 hidden */
    uint8_t committed[PARTS][LEAVES];
    uint32_t waiting[PARTS];  /* parts to request this frame, grouped by building below */
    uint32_t requests[RVB_CITY_BUILDINGS];
} naive_gate;

/* Aligned so that its loop does not move with the code linked before it (a 10% swing). */
__attribute__((noinline, aligned(64))) static void naive_frame(naive_gate *g, const city_parts *cp,
                                                               const rv_frustum *f, uint64_t *visible,
                                                               uint64_t *requested)
{
    uint32_t n = 0;
    for (int i = 0; i < PARTS; i++) {
        const float *s = cp->spheres[i];
        bool vis = true;
        for (int p = 0; p < 6 && vis; p++) {
            const float *pl = f->planes[p];
            if ((f->plane_mask & (1u << p)) && pl[0] * s[0] + pl[1] * s[1] + pl[2] * s[2] + pl[3] < -(s[3] + MARGIN))
                vis = false;
        }
        if (vis) {
            double d2 = 0;
            for (int a = 0; a < 3; a++) {
                double c = s[a];
                double e = c < SLICE_LO[a] ? SLICE_LO[a] - c : (c > SLICE_HI[a] ? c - SLICE_HI[a] : 0);
                d2 += e * e;
            }
            vis = d2 <= (double)s[3] * s[3];
        }
        if (!vis) {
            if (g->seen[i] == 1)
                g->seen[i] = 2;
            continue;
        }
        bool reentry = g->seen[i] == 2;
        g->seen[i] = 1;
        (*visible)++;
        if (reentry) {
            bool satisfied = true;
            for (int l = 0; l < LEAVES; l++)
                satisfied &= g->committed[i][l] != 0;
            if (!satisfied)
                g->waiting[n++] = (uint32_t)i;
        }
    }
    /* One request per building: parts are in building order already. */
    uint32_t groups = 0;
    for (uint32_t k = 0; k < n; k++)
        if (k == 0 || g->waiting[k] / STOREYS != g->waiting[k - 1] / STOREYS)
            g->requests[groups++] = g->waiting[k] / STOREYS;
    *requested += n;
}

int rvb_partition(rvb_ctx *ctx); /* called by the generated registry */

int rvb_partition(rvb_ctx *ctx)
{
    if (!rvb_begin_case(ctx, "partition_city_walk"))
        return 0; /* both cases share the prefix */
    rvb_city city;
    if (!rvb_city_generate(&city))
        return 1;
    city_parts *cp = malloc(sizeof *cp);
    naive_gate *ng = malloc(sizeof *ng);
    if (!cp || !ng) {
        free(cp);
        free(ng);
        rvb_city_free(&city);
        return 1;
    }
    storey_spheres(&city, cp);
    for (int f = 0; f < FRAMES; f++) {
        float eye[3], vp[16];
        rvb_city_camera(f, FRAMES, eye, vp);
        if (rv_frustum_from_view_projection(vp, (rv_clip){ 0 }, &cp->frusta[f]) != RV_OK) {
            free(cp);
            free(ng);
            rvb_city_free(&city);
            return 1;
        }
    }
    /* Both sides test the same spheres: the world bounds rvis derived (with its rounding
     * slack), read back once. */
    rv_node *part_nodes = malloc(sizeof(rv_node) * PARTS);
    rv_world *probe = part_nodes ? build_world(cp, part_nodes) : NULL;
    bool read_back = probe != NULL;
    for (uint32_t i = 0; read_back && i < PARTS; i++)
        read_back = rv_node_world_bounds(probe, part_nodes[i], cp->spheres[i]) == RV_OK;
    rv_world_destroy(probe);
    free(part_nodes);
    if (!read_back) {
        free(cp);
        free(ng);
        rvb_city_free(&city);
        return 1;
    }
    static const struct { const char *name; bool regate; } modes[2] = {
        { "partition_city_walk", true },
        { "partition_city_walk_end_without_regate", false },
    };
    int status = 0;
    for (int m = 0; m < 2 && status == 0; m++) {
        double ours[64], base[64];
        int reps = ctx->reps < 64 ? ctx->reps : 64;
        uint64_t vis_ours = 0, req_ours = 0, vis_base = 0, req_base = 0;
        for (int k = 0; k < reps && status == 0; k++) {
            /* Fresh state for every repetition, built outside the timed region. */
            rv_world *w = build_world(cp, NULL);
            if (!w) {
                status = 1;
                break;
            }
            uint64_t v = 0, q = 0;
            uint64_t t0 = rvb_now_ns();
            bool ok = walk_rvis(w, cp, modes[m].regate, &v, &q);
            uint64_t t1 = rvb_now_ns();
            rv_world_destroy(w);
            if (!ok) {
                status = 1;
                break;
            }
            ours[k] = (double)(t1 - t0) / FRAMES / 1000.0;
            vis_ours = v;
            req_ours = q;

            memset(ng, 0, sizeof *ng);
            v = q = 0;
            t0 = rvb_now_ns();
            for (int f = 0; f < FRAMES; f++)
                naive_frame(ng, cp, &cp->frusta[f], &v, &q);
            t1 = rvb_now_ns();
            base[k] = (double)(t1 - t0) / FRAMES / 1000.0;
            vis_base = v;
            req_base = q;
        }
        if (status == 0 && (vis_ours != vis_base || req_ours != req_base)) {
            fprintf(stderr, "%s: rvis and baseline disagree (visible %llu vs %llu, "
                    "requested %llu vs %llu)\n", modes[m].name, (unsigned long long)vis_ours, (unsigned long long)vis_base,
                    (unsigned long long)req_ours, (unsigned long long)req_base);
            status = 1;
        }
        if (status == 0) {
            char extra[256];
            snprintf(extra, sizeof extra,
                     ", \"parts\": %d, \"frames\": %d, \"parts_visible_per_frame\": %.1f, \"parts_requested\": %llu",
                     PARTS, FRAMES, (double)vis_ours / FRAMES, (unsigned long long)req_ours);
            rvb_report(ctx, modes[m].name, "us/frame", rvb_median(ours, reps), rvb_median(base, reps), extra);
        }
    }
    free(cp);
    free(ng);
    rvb_city_free(&city);
    return status;
}
