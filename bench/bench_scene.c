/* Scene benchmarks: hierarchy_cull_100k and update_world_1m_1pct.
 * Each prints rvis's median time next to a naive baseline measured in the same run. */
#include "bench_util.h"

#include "rvis.h"

#include <cglm/cglm.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CITY_FRAMES = 600, REPS_MAX = 64 };

/* ---- hierarchy_cull_100k ------------------------------------------------------------- */

/* The flat loop a host would write: every object's sphere against the six planes with an
 * early exit, visible indices written out (the same output rv_collect_visible makes). */
__attribute__((noinline)) static uint32_t flat_cull(const rv_frustum *f, const float (*spheres)[4], uint32_t count,
                                                    uint32_t *out)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        const float *s = spheres[i];
        bool outside = false;
        for (int p = 0; p < 6; p++) {
            const float *pl = f->planes[p];
            if (pl[0] * s[0] + pl[1] * s[1] + pl[2] * s[2] + pl[3] < -s[3]) {
                outside = true;
                break;
            }
        }
        if (!outside)
            out[kept++] = i;
    }
    return kept;
}

/* The host's side of rv_visit_visible: note each visible node in its draw list. */
typedef struct draw_list {
    rv_node *nodes;
    uint32_t count;
} draw_list;

static bool note_visible(rv_node node, const float world_matrix[16], void *user)
{
    (void)world_matrix;
    draw_list *d = user;
    d->nodes[d->count++] = node;
    return true;
}

static int cell_of(float v)
{
    int c = (int)floorf((v + 480.0f) / 30.0f);
    return c < 0 ? 0 : (c > 31 ? 31 : c);
}

static int hierarchy_cull_100k(rvb_ctx *ctx)
{
    const char *name = "hierarchy_cull_100k";
    if (!rvb_begin_case(ctx, name))
        return 0;
    int status = 1;
    rvb_city city = {0};
    rv_world *world = NULL;
    float (*spheres)[4] = malloc(sizeof(float[4]) * RVB_CITY_OBJECTS);
    uint32_t *flat_out = malloc(sizeof(uint32_t) * RVB_CITY_OBJECTS);
    rv_node *ours_out = malloc(sizeof(rv_node) * RVB_CITY_OBJECTS);
    int *order = malloc(sizeof(int) * RVB_CITY_OBJECTS);
    rv_frustum *frusta = malloc(sizeof(rv_frustum) * CITY_FRAMES);
    if (!spheres || !flat_out || !ours_out || !order || !frusta || !rvb_city_generate(&city)) {
        fprintf(stderr, "%s: setup failed\n", name);
        goto done;
    }
    for (int k = 0; k < RVB_CITY_OBJECTS; k++) {
        const rvb_box *b = &city.objects[k];
        float hx = (b->max[0] - b->min[0]) / 2, hy = (b->max[1] - b->min[1]) / 2, hz = (b->max[2] - b->min[2]) / 2;
        spheres[k][0] = b->min[0] + hx;
        spheres[k][1] = b->min[1] + hy;
        spheres[k][2] = b->min[2] + hz;
        spheres[k][3] = sqrtf(hx * hx + hy * hy + hz * hz);
    }
    for (int f = 0; f < CITY_FRAMES; f++) {
        float eye[3], vp[16];
        rvb_city_camera(f, CITY_FRAMES, eye, vp);
        if (rv_frustum_from_view_projection(vp, (rv_clip){0}, &frusta[f]) != RV_OK) {
            fprintf(stderr, "%s: frustum extraction failed\n", name);
            goto done;
        }
    }

    /* 4 x 4 districts of 8 x 8 cells; each object under the cell its centre lies in. Nodes
     * are created cell by cell, as a host loading the city by cell would. */
    rv_world_desc desc = { .node_capacity = RVB_CITY_OBJECTS + 1024 + 16 };
    rv_node districts[16], cells[1024];
    if (rv_world_create(&desc, &world) != RV_OK)
        goto done;
    for (int d = 0; d < 16; d++)
        if (rv_node_create(world, RV_NODE_NONE, &districts[d]) != RV_OK)
            goto done;
    for (int j = 0; j < 32; j++)
        for (int i = 0; i < 32; i++)
            if (rv_node_create(world, districts[(j / 8) * 4 + i / 8], &cells[j * 32 + i]) != RV_OK)
                goto done;
    int *cell_start = calloc(1025, sizeof(int));
    if (!cell_start)
        goto done;
    for (int k = 0; k < RVB_CITY_OBJECTS; k++)
        cell_start[cell_of(spheres[k][2]) * 32 + cell_of(spheres[k][0]) + 1]++;
    for (int c = 0; c < 1024; c++)
        cell_start[c + 1] += cell_start[c];
    for (int k = 0; k < RVB_CITY_OBJECTS; k++)
        order[cell_start[cell_of(spheres[k][2]) * 32 + cell_of(spheres[k][0])]++] = k;
    free(cell_start);
    for (int n = 0; n < RVB_CITY_OBJECTS; n++) {
        int k = order[n];
        rv_node node;
        const float zero[3] = { 0, 0, 0 };
        if (rv_node_create(world, cells[cell_of(spheres[k][2]) * 32 + cell_of(spheres[k][0])], &node) != RV_OK ||
            rv_node_set_position(world, node, spheres[k]) != RV_OK ||
            rv_node_set_bounds(world, node, zero, spheres[k][3]) != RV_OK)
            goto done;
    }
    if (rv_update_world(world) != RV_OK)
        goto done;

    double t_ours[REPS_MAX], t_base[REPS_MAX], t_collect[REPS_MAX];
    int reps = ctx->reps < REPS_MAX ? ctx->reps : REPS_MAX;
    uint64_t seen_ours = 0, seen_base = 0, seen_collect = 0, tested = 0, visited = 0;
    for (int r = 0; r < reps; r++) {
        uint64_t so = 0, sb = 0, sc = 0, te = 0, vi = 0;
        uint64_t t0 = rvb_now_ns();
        for (int f = 0; f < CITY_FRAMES; f++) {
            draw_list list = { ours_out, 0 };
            rv_cull_counts counts;
            if (rv_visit_visible(world, RV_NODE_NONE, &frusta[f], note_visible, &list, &counts) != RV_OK)
                goto done;
            so += list.count;
            te += counts.tested;
            vi += counts.visited;
        }
        uint64_t t1 = rvb_now_ns();
        for (int f = 0; f < CITY_FRAMES; f++)
            sb += flat_cull(&frusta[f], (const float (*)[4])spheres, RVB_CITY_OBJECTS, flat_out);
        uint64_t t2 = rvb_now_ns();
        for (int f = 0; f < CITY_FRAMES; f++) {
            uint32_t n;
            if (rv_collect_visible(world, RV_NODE_NONE, &frusta[f], ours_out, RVB_CITY_OBJECTS, &n, NULL) != RV_OK)
                goto done;
            sc += n;
        }
        uint64_t t3 = rvb_now_ns();
        t_ours[r] = (double)(t1 - t0) / 1000.0 / CITY_FRAMES;
        t_base[r] = (double)(t2 - t1) / 1000.0 / CITY_FRAMES;
        t_collect[r] = (double)(t3 - t2) / 1000.0 / CITY_FRAMES;
        seen_ours = so, seen_base = sb, seen_collect = sc, tested = te, visited = vi;
    }
    /* Conservative: the hierarchy may keep a sphere the flat test rejects only at float
     * tangency; it must never drop one the flat test keeps. */
    if (seen_ours < seen_base || seen_collect != seen_ours) {
        fprintf(stderr, "%s: hierarchy kept %llu objects, the flat test %llu\n", name,
                (unsigned long long)seen_ours, (unsigned long long)seen_base);
        goto done;
    }
    double ours = rvb_median(t_ours, reps), base = rvb_median(t_base, reps);
    double collect = rvb_median(t_collect, reps);
    char extra[320];
    snprintf(extra, sizeof extra,
             ", \"api\": \"rv_visit_visible\", \"collect_us\": %.4g, \"collect_speedup\": %.4g, "
             "\"visible_per_frame\": %.1f, \"flat_visible_per_frame\": %.1f, \"tested_per_frame\": %.1f, "
             "\"visited_per_frame\": %.1f, \"target_speedup\": 5",
             collect, base / collect, (double)seen_ours / CITY_FRAMES, (double)seen_base / CITY_FRAMES,
             (double)tested / CITY_FRAMES, (double)visited / CITY_FRAMES);
    rvb_report(ctx, name, "us/frame", ours, base, extra);
    status = 0;
done:
    rv_world_destroy(world);
    rvb_city_free(&city);
    free(spheres);
    free(flat_out);
    free(ours_out);
    free(order);
    free(frusta);
    return status;
}

/* ---- update_world_1m_1pct ------------------------------------------------------------ */

enum { BLOCKS = 100, BUILDINGS = 100, PROPS = 100,
       NODES = BLOCKS + BLOCKS * BUILDINGS + BLOCKS * BUILDINGS * PROPS,
       PROP_COUNT = BLOCKS * BUILDINGS * PROPS, MOVES = PROP_COUNT / 100 };

/* The naive host's copy of the same hierarchy, parents before children. */
typedef struct naive_scene {
    int32_t *parent;
    float (*position)[3];
    versor *rotation;
    float (*scale)[3];
    float (*local_sphere)[4];
    mat4 *world;
    float (*sphere)[4];
} naive_scene;

static void naive_merge(float a[4], const float b[4])
{
    float d = sqrtf((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
    if (d + b[3] <= a[3])
        return;
    if (d + a[3] <= b[3]) {
        memcpy(a, b, 16);
        return;
    }
    float r = (d + a[3] + b[3]) / 2, t = (r - a[3]) / d;
    for (int k = 0; k < 3; k++)
        a[k] += (b[k] - a[k]) * t;
    a[3] = r;
}

/* Recomputes every world matrix (cglm, as a host would) and every world sphere. */
__attribute__((noinline)) static void naive_full_update(naive_scene *s)
{
    for (int i = 0; i < NODES; i++) {
        mat4 local;
        glm_quat_mat4(s->rotation[i], local);
        glm_scale(local, s->scale[i]);
        local[3][0] = s->position[i][0];
        local[3][1] = s->position[i][1];
        local[3][2] = s->position[i][2];
        if (s->parent[i] >= 0)
            glm_mat4_mul(s->world[s->parent[i]], local, s->world[i]);
        else
            glm_mat4_copy(local, s->world[i]);
        vec3 c;
        glm_mat4_mulv3(s->world[i], s->local_sphere[i], 1.0f, c);
        float ms = 0;
        for (int k = 0; k < 3; k++)
            ms = fmaxf(ms, glm_vec3_norm(s->world[i][k]));
        s->sphere[i][0] = c[0];
        s->sphere[i][1] = c[1];
        s->sphere[i][2] = c[2];
        s->sphere[i][3] = s->local_sphere[i][3] * ms;
    }
    for (int i = NODES - 1; i > 0; i--)
        if (s->parent[i] >= 0)
            naive_merge(s->sphere[s->parent[i]], s->sphere[i]);
}

static int update_world_1m_1pct(rvb_ctx *ctx)
{
    const char *name = "update_world_1m_1pct";
    if (!rvb_begin_case(ctx, name))
        return 0;
    int status = 1;
    rv_world *world = NULL;
    naive_scene ns = {0};
    rv_node *nodes = malloc(sizeof(rv_node) * NODES);
    int32_t *prop_index = malloc(sizeof(int32_t) * PROP_COUNT);
    int32_t *moved = malloc(sizeof(int32_t) * MOVES);
    ns.parent = malloc(sizeof(int32_t) * NODES);
    ns.position = malloc(sizeof(float[3]) * NODES);
    ns.rotation = malloc(sizeof(versor) * NODES);
    ns.scale = malloc(sizeof(float[3]) * NODES);
    ns.local_sphere = malloc(sizeof(float[4]) * NODES);
    ns.world = aligned_alloc(32, sizeof(mat4) * NODES);
    ns.sphere = malloc(sizeof(float[4]) * NODES);
    rv_world_desc desc = { .node_capacity = NODES };
    if (!nodes || !prop_index || !moved || !ns.parent || !ns.position || !ns.rotation || !ns.scale ||
        !ns.local_sphere || !ns.world || !ns.sphere || rv_world_create(&desc, &world) != RV_OK) {
        fprintf(stderr, "%s: setup failed\n", name);
        goto done;
    }
    /* 10 x 10 blocks (200 m pitch) of 10 x 10 buildings (20 m pitch) of 100 props each */
    rvb_rng rng = { 0x5CE4Eull };
    int n = 0, props = 0;
    for (int b = 0; b < BLOCKS; b++) {
        int block = n++;
        ns.parent[block] = -1;
        float bp[3] = { (float)(b % 10) * 200.0f, 0, (float)(b / 10) * 200.0f };
        memcpy(ns.position[block], bp, 12);
        float bs[4] = { 100, 0, 100, 142 }; /* the block's ground slab */
        memcpy(ns.local_sphere[block], bs, 16);
        for (int h = 0; h < BUILDINGS; h++) {
            int building = n++;
            ns.parent[building] = block;
            float hp[3] = { (float)(h % 10) * 20.0f, 0, (float)(h / 10) * 20.0f };
            memcpy(ns.position[building], hp, 12);
            float hs[4] = { 0, 15, 0, 18 };
            memcpy(ns.local_sphere[building], hs, 16);
            for (int p = 0; p < PROPS; p++) {
                int prop = n++;
                prop_index[props++] = prop;
                ns.parent[prop] = building;
                float pp[3] = { rvb_uniform(&rng, -8, 8), rvb_uniform(&rng, 0, 30), rvb_uniform(&rng, -8, 8) };
                memcpy(ns.position[prop], pp, 12);
                float ps[4] = { 0, 0, 0, rvb_uniform(&rng, 0.2f, 1.0f) };
                memcpy(ns.local_sphere[prop], ps, 16);
            }
        }
    }
    for (int i = 0; i < NODES; i++) {
        bool prop = ns.parent[i] >= 0 && ns.parent[ns.parent[i]] >= 0;
        float angle = prop ? rvb_uniform(&rng, 0, 6.2831853f) : 0.0f;
        glm_quatv(ns.rotation[i], angle, (vec3){ 0, 1, 0 });
        float s = prop ? rvb_uniform(&rng, 0.5f, 2.0f) : 1.0f;
        ns.scale[i][0] = ns.scale[i][1] = ns.scale[i][2] = s;
        rv_node parent = ns.parent[i] >= 0 ? nodes[ns.parent[i]] : RV_NODE_NONE;
        if (rv_node_create(world, parent, &nodes[i]) != RV_OK ||
            rv_node_set_position(world, nodes[i], ns.position[i]) != RV_OK ||
            rv_node_set_rotation(world, nodes[i], ns.rotation[i]) != RV_OK ||
            rv_node_set_scale(world, nodes[i], ns.scale[i]) != RV_OK ||
            rv_node_set_bounds(world, nodes[i], ns.local_sphere[i], ns.local_sphere[i][3]) != RV_OK)
            goto done;
    }
    if (rv_update_world(world) != RV_OK)
        goto done;
    naive_full_update(&ns);

    double t_ours[REPS_MAX], t_base[REPS_MAX];
    int reps = ctx->reps < REPS_MAX ? ctx->reps : REPS_MAX;
    rv_scene_stats last = {0};
    for (int r = -1; r < reps; r++) { /* r = -1 warms up */
        /* move a random 1 % of the props (outside the timing), in both copies */
        for (int m = 0; m < MOVES; m++) {
            int i = prop_index[rvb_next(&rng) % PROP_COUNT];
            moved[m] = i;
            float *p;
            if (rv_node_transform_ptrs(world, nodes[i], &p, NULL, NULL) != RV_OK)
                goto done;
            p[0] = ns.position[i][0] = rvb_uniform(&rng, -8, 8);
            p[2] = ns.position[i][2] = rvb_uniform(&rng, -8, 8);
            if (rv_node_mark_moved(world, nodes[i]) != RV_OK)
                goto done;
        }
        uint64_t t0 = rvb_now_ns();
        rv_result res = rv_update_world(world);
        uint64_t t1 = rvb_now_ns();
        naive_full_update(&ns);
        uint64_t t2 = rvb_now_ns();
        if (res != RV_OK)
            goto done;
        if (r >= 0) {
            t_ours[r] = (double)(t1 - t0) / 1000.0;
            t_base[r] = (double)(t2 - t1) / 1000.0;
        }
        last = rv_world_scene_stats(world);
    }
    /* Both copies agree on the moved props' matrices, and every moved prop's exact sphere
     * lies inside its building's and block's rvis spheres (the policy is conservative). */
    for (int m = 0; m < MOVES; m++) {
        int i = moved[m];
        float w[16], sb[4], sk[4];
        if (rv_node_world_matrix(world, nodes[i], w) != RV_OK ||
            rv_node_world_bounds(world, nodes[ns.parent[i]], sb) != RV_OK ||
            rv_node_world_bounds(world, nodes[ns.parent[ns.parent[i]]], sk) != RV_OK)
            goto done;
        for (int k = 0; k < 16; k++)
            if (fabsf(w[k] - ((float *)ns.world[i])[k]) > 1e-3f * (1.0f + fabsf(w[k]))) {
                fprintf(stderr, "%s: node %d matrix differs from the baseline\n", name, i);
                goto done;
            }
        const float *s = ns.sphere[i];
        for (int a = 0; a < 2; a++) {
            const float *o = a ? sk : sb;
            float d = sqrtf((o[0] - s[0]) * (o[0] - s[0]) + (o[1] - s[1]) * (o[1] - s[1]) + (o[2] - s[2]) * (o[2] - s[2]));
            if (d + s[3] > o[3] * 1.0001f + 1e-3f) {
                fprintf(stderr, "%s: prop %d pokes out of an ancestor's sphere\n", name, i);
                goto done;
            }
        }
    }
    double ours = rvb_median(t_ours, reps), base = rvb_median(t_base, reps);
    char extra[256];
    snprintf(extra, sizeof extra,
             ", \"nodes\": %d, \"moved\": %d, \"matrices_recomputed\": %u, \"bounds_recomputed\": %u, "
             "\"target_speedup\": 10",
             NODES, MOVES, last.matrices_recomputed, last.bounds_recomputed);
    rvb_report(ctx, name, "us/update", ours, base, extra);
    status = 0;
done:
    rv_world_destroy(world);
    free(nodes);
    free(prop_index);
    free(moved);
    free(ns.parent);
    free(ns.position);
    free(ns.rotation);
    free(ns.scale);
    free(ns.local_sphere);
    free(ns.world);
    free(ns.sphere);
    return status;
}

int rvb_scene(rvb_ctx *ctx); /* called by the generated registry */

int rvb_scene(rvb_ctx *ctx)
{
    int failures = 0;
    failures += hierarchy_cull_100k(ctx) != 0;
    failures += update_world_1m_1pct(ctx) != 0;
    return failures;
}
