/* fuzz_world's job-system section (the bytes after the marker "JOBS"): two worlds built by
 * the same calls, A without a job system and B with one given by the input, both with the
 * main-view occlusion buffer on (or off) and a depth-feed capacity.
 *
 * B's job system runs every range on the calling thread, split (whole, by grain, single
 * items, random sizes) and ordered (forward, reverse, shuffled) as the input says, each
 * range on a worker the input picks below max_workers. On a parallel-for the input picks it
 * may break the contract: skip a range, run one twice, run one on a worker at or above
 * max_workers, run one item in place of another (the item count still adds up), or add an
 * empty range or one past the count.
 *
 * The program: nodes created, destroyed, moved, given bounds, test boxes, LOD ladders and
 * persistent occluders of every shape (box, convex solid, mesh; some malformed), occluders
 * cleared; frames with per-frame occluders of every shape and a depth feed (fuzz_feed.h).
 * Every call must answer the same in both worlds, with a documented code. A frame whose
 * job system kept the contract must publish the same view in both (digest, counts, culls,
 * occlusion and feed counters); one whose job system skipped, repeated or misplaced an item
 * must answer RV_ERR_INVARIANT from the cull, and B is then left out of comparisons (the
 * aborted frame may have moved LOD state). Both worlds must free every block at the end. */
#include "rvis.h"
#include "fuzz_support.h"
#include "fuzz_feed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZJ_ASSERT(cond, ...)                                                              \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_world (jobs): %s:%d: ", __FILE__, __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

enum { FZJ_NODES = 800, FZJ_OPS = 160, FZJ_PLANES = 70, FZJ_RANGES = 4096 };
enum { FAULT_NONE, FAULT_SKIP, FAULT_TWICE, FAULT_WORKER, FAULT_SWAP, FAULT_EMPTY, FAULT_PAST, FAULT_KINDS };

/* ---- the host's job system ------------------------------------------------------------- */

typedef struct fzj_host {
    uint32_t max_workers; /* as the world resolved it (0 = 1) */
    uint64_t rng;
    uint32_t calls;       /* parallel-fors run this frame */
    uint32_t fault_call;  /* 1-based; 0 = never */
    int fault;
    int broke;            /* an item was skipped, repeated or given a bad worker */
    int odd;              /* an empty or out-of-range extra range was handed out */
    uint32_t begin[FZJ_RANGES + 2], end[FZJ_RANGES + 2], worker[FZJ_RANGES + 2];
} fzj_host;

static void host_parallel_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    fzj_host *h = user;
    h->calls++;
    uint64_t r = fzf_next(&h->rng);
    uint32_t n = 0, split = r % 4;
    for (uint32_t b = 0; b < count && n < FZJ_RANGES;) {
        uint32_t size = split == 0 ? count : split == 1 ? grain : split == 2 ? 1 : 1 + (uint32_t)(fzf_next(&h->rng) % (2u * grain));
        if (size > count - b || n + 1 == FZJ_RANGES)
            size = count - b;
        h->begin[n] = b;
        h->end[n] = b + size;
        h->worker[n] = (uint32_t)(fzf_next(&h->rng) % h->max_workers);
        n++;
        b += size;
    }
    uint32_t order = (r >> 8) % 3;
    if (order == 1) {
        for (uint32_t i = 0; i < n / 2; i++) {
            uint32_t j = n - 1 - i, t;
            t = h->begin[i], h->begin[i] = h->begin[j], h->begin[j] = t;
            t = h->end[i], h->end[i] = h->end[j], h->end[j] = t;
        }
    } else if (order == 2) {
        for (uint32_t i = n; i > 1; i--) {
            uint32_t j = (uint32_t)(fzf_next(&h->rng) % i), t;
            t = h->begin[i - 1], h->begin[i - 1] = h->begin[j], h->begin[j] = t;
            t = h->end[i - 1], h->end[i - 1] = h->end[j], h->end[j] = t;
        }
    }
    if (h->calls == h->fault_call && n) {
        uint32_t k = (uint32_t)(fzf_next(&h->rng) % n), other = (uint32_t)(fzf_next(&h->rng) % n);
        switch (h->fault) {
        case FAULT_SKIP:
            h->begin[k] = h->end[k] = 0; /* dropped below */
            h->broke = 1;
            break;
        case FAULT_TWICE:
            h->begin[n] = h->begin[k], h->end[n] = h->end[k], h->worker[n] = h->worker[k];
            n++;
            h->broke = 1;
            break;
        case FAULT_WORKER:
            h->worker[k] = h->max_workers + (uint32_t)(fzf_next(&h->rng) % 2) * (UINT32_MAX - h->max_workers);
            h->broke = 1;
            break;
        case FAULT_SWAP: /* item k's range runs other's instead: the count still adds up */
            if (k != other && h->end[k] - h->begin[k] == h->end[other] - h->begin[other]) {
                h->begin[k] = h->begin[other];
                h->end[k] = h->end[other];
                h->broke = 1;
            }
            break;
        case FAULT_EMPTY:
            h->begin[n] = h->end[n] = h->end[k], h->worker[n] = 0;
            n++;
            h->odd = 1;
            break;
        case FAULT_PAST:
            h->begin[n] = count, h->end[n] = count + 1 + (uint32_t)(fzf_next(&h->rng) % 3), h->worker[n] = 0;
            n++;
            h->odd = 1;
            break;
        default:
            break;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (h->begin[i] < h->end[i] || (h->fault == FAULT_EMPTY && h->calls == h->fault_call && i + 1 == n))
            job(context, h->worker[i], h->begin[i], h->end[i]);
}

/* ---- the two worlds --------------------------------------------------------------------- */

typedef struct fzj {
    rv_world *w[2];      /* A: no job system; B: the host's */
    fz_alloc alloc[2];
    fzj_host host;
    rv_node nodes[2][FZJ_NODES];
    uint32_t count;
    int diverged;        /* B aborted a frame: its LOD state may differ from A's */
    double time_ms;
    uint32_t feed_w, feed_h;
    int occlusion;
} fzj;

static float small(fz_input *in, float scale)
{
    uint8_t b = u8(in);
    if (b == 255) {
        static const float bad[4] = { NAN, INFINITY, -INFINITY, 3e38f };
        return bad[u8(in) % 4];
    }
    return ((float)b - 127.0f) * scale;
}

/* Both worlds answered alike, with one of the allowed codes (a bit per rv_result). */
static void same(rv_result a, rv_result b, const char *call, unsigned allowed)
{
    FZJ_ASSERT(a == b, "%s: %s without jobs, %s with", call, rv_result_string(a), rv_result_string(b));
    FZJ_ASSERT((unsigned)a < 32 && (allowed >> (unsigned)a) & 1, "%s returned %s", call, rv_result_string(a));
}

#define OK_ (1u << RV_OK)
#define ARG_ (1u << RV_ERR_INVALID_ARG)
#define FIN_ (1u << RV_ERR_NOT_FINITE)
#define CAP_ (1u << RV_ERR_CAPACITY)
#define STALE_ (1u << RV_ERR_STALE_HANDLE)

/* An occluder shape around a local box: a convex solid of its planes (some left out, cut,
 * repeated past the most planes allowed, or broken) or a mesh (the closed box, an index
 * broken; or open triangles). Fills the arrays; returns 1 for convex, 2 for mesh. */
typedef struct fzj_shape {
    float planes[FZJ_PLANES][4];
    rv_occluder_convex convex;
    float pos[8][3];
    uint32_t idx[40];
    rv_occluder_mesh mesh;
    float mn[3], mx[3];
} fzj_shape;

static const uint32_t CUBE[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                   2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };

static void decode_box(fz_input *in, float mn[3], float mx[3])
{
    for (int k = 0; k < 3; k++) {
        float c = small(in, 0.25f), e = fabsf(small(in, 0.05f));
        mn[k] = c - e;
        mx[k] = c + e;
    }
    if (u8(in) == 7) { /* inverted */
        float t = mn[1];
        mn[1] = mx[1] + 1.0f;
        mx[1] = t;
    }
}

static int decode_shape(fz_input *in, fzj_shape *s)
{
    decode_box(in, s->mn, s->mx);
    uint8_t kind = u8(in);
    if (kind & 1) {
        uint32_t n = 0;
        for (int a = 0; a < 6; a++) {
            if (kind < 16 && kind / 2 % 8 == (unsigned)a)
                continue; /* one side open */
            float q[4] = { 0, 0, 0, a & 1 ? s->mx[a / 2] : -s->mn[a / 2] };
            q[a / 2] = a & 1 ? 1.0f : -1.0f;
            memcpy(s->planes[n++], q, sizeof q);
        }
        for (int c = u8(in) % 3; c > 0; c--) {
            float q[4] = { small(in, 0.01f), small(in, 0.01f), small(in, 0.01f), small(in, 0.1f) };
            memcpy(s->planes[n++], q, sizeof q);
        }
        uint8_t count = u8(in);
        if (count >= 250) /* past the most planes: the box's repeated */
            for (; n < (count == 255 ? FZJ_PLANES : 64u); n++)
                memcpy(s->planes[n], s->planes[n % 6], sizeof s->planes[n]);
        else if (count < 8)
            n = count % 4; /* too few */
        s->convex = (rv_occluder_convex){ (const float (*)[4])s->planes, n, kind & 2 ? RV_OCCLUDER_EXACT : 0 };
        if (kind >= 240)
            s->convex.flags = 4u; /* unknown */
        return 1;
    }
    uint32_t nv = 8, ni = 36, flags = RV_OCCLUDER_CLOSED;
    if (kind & 2) {
        for (int k = 0; k < 8; k++)
            for (int i = 0; i < 3; i++)
                s->pos[k][i] = (k >> i) & 1 ? s->mx[i] : s->mn[i];
        memcpy(s->idx, CUBE, sizeof CUBE);
        uint8_t broken = u8(in);
        if (broken < 36)
            s->idx[broken] = u8(in) % 10;
        flags |= kind & 4 ? RV_OCCLUDER_EXACT : 0;
    } else {
        nv = u8(in) % 9;
        for (uint32_t k = 0; k < nv; k++)
            for (int i = 0; i < 3; i++)
                s->pos[k][i] = s->mn[i] + (s->mx[i] - s->mn[i]) * (float)u8(in) / 255.0f;
        ni = u8(in) % 40;
        for (uint32_t k = 0; k < ni; k++)
            s->idx[k] = nv ? u8(in) % (nv + 1) : 0;
        flags = kind & 4 ? (kind & 8 ? RV_OCCLUDER_EXACT : 16u) : 0;
    }
    s->mesh = (rv_occluder_mesh){ (const float (*)[3])s->pos, nv, s->idx, ni, flags };
    return 2;
}

static rv_node pick(fzj *z, int world, uint8_t b)
{
    if (!z->count || b == 255)
        return RV_NODE_NONE;
    return z->nodes[world][b % z->count];
}

/* One node call in both worlds. */
static void node_op(fzj *z, fz_input *in, uint8_t op)
{
    uint8_t which = u8(in);
    rv_node a = pick(z, 0, which), b = pick(z, 1, which);
    FZJ_ASSERT(rv_node_is_valid(z->w[0], a) == rv_node_is_valid(z->w[1], b), "a node lives in one world only");
    rv_result ra = RV_OK, rb = RV_OK;
    const char *call = "";
    unsigned allowed = OK_ | STALE_;
    switch (op) {
    case 0: { /* create under it (or as a root), with bounds and a place */
        if (z->count == FZJ_NODES)
            return;
        float c[3] = { small(in, 0.25f), small(in, 0.25f), small(in, 0.25f) }, r = fabsf(small(in, 0.05f));
        float p[3] = { small(in, 0.5f), small(in, 0.5f), small(in, 0.5f) };
        rv_node na, nb;
        call = "rv_node_create";
        ra = rv_node_create(z->w[0], a, &na);
        rb = rv_node_create(z->w[1], b, &nb);
        same(ra, rb, call, allowed);
        if (ra != RV_OK)
            return;
        z->nodes[0][z->count] = na;
        z->nodes[1][z->count++] = nb;
        same(rv_node_set_bounds(z->w[0], na, c, r), rv_node_set_bounds(z->w[1], nb, c, r), "rv_node_set_bounds",
             OK_ | FIN_);
        same(rv_node_set_position(z->w[0], na, p), rv_node_set_position(z->w[1], nb, p), "rv_node_set_position",
             OK_ | FIN_);
        /* Siblings in a grid beside it: more than one chunk of candidates (256) sends the
         * frame's object passes (occlusion tests, LOD, draw lists) through the job system. */
        uint8_t many = u8(in);
        for (uint32_t k = 0; many >= 128 && k < (many - 128u) * 4u && z->count < FZJ_NODES; k++) {
            float q[3] = { p[0] + (float)(k % 16), p[1] + (float)(k / 16 % 16), p[2] - (float)(k / 256) };
            ra = rv_node_create(z->w[0], a, &na);
            rb = rv_node_create(z->w[1], b, &nb);
            same(ra, rb, call, allowed);
            z->nodes[0][z->count] = na;
            z->nodes[1][z->count++] = nb;
            same(rv_node_set_bounds(z->w[0], na, c, r), rv_node_set_bounds(z->w[1], nb, c, r),
                 "rv_node_set_bounds", OK_ | FIN_);
            same(rv_node_set_position(z->w[0], na, q), rv_node_set_position(z->w[1], nb, q),
                 "rv_node_set_position", OK_ | FIN_);
        }
        return;
    }
    case 1:
        call = "rv_node_destroy_subtree";
        ra = rv_node_destroy_subtree(z->w[0], a);
        rb = rv_node_destroy_subtree(z->w[1], b);
        break;
    case 2: {
        float mn[3], mx[3];
        decode_box(in, mn, mx);
        call = "rv_node_set_occluder_box";
        ra = rv_node_set_occluder_box(z->w[0], a, mn, mx);
        rb = rv_node_set_occluder_box(z->w[1], b, mn, mx);
        allowed |= ARG_ | FIN_;
        break;
    }
    case 3: {
        static fzj_shape s;
        if (decode_shape(in, &s) == 1) {
            call = "rv_node_set_occluder_convex";
            ra = rv_node_set_occluder_convex(z->w[0], a, &s.convex);
            rb = rv_node_set_occluder_convex(z->w[1], b, &s.convex);
        } else {
            call = "rv_node_set_occluder_mesh";
            ra = rv_node_set_occluder_mesh(z->w[0], a, &s.mesh);
            rb = rv_node_set_occluder_mesh(z->w[1], b, &s.mesh);
        }
        allowed |= ARG_ | FIN_ | CAP_;
        break;
    }
    case 4:
        call = which & 1 ? "rv_node_clear_occluder" : "rv_node_clear_occluder_box";
        ra = which & 1 ? rv_node_clear_occluder(z->w[0], a) : rv_node_clear_occluder_box(z->w[0], a);
        rb = which & 1 ? rv_node_clear_occluder(z->w[1], b) : rv_node_clear_occluder_box(z->w[1], b);
        break;
    case 5: {
        float p[3] = { small(in, 0.5f), small(in, 0.5f), small(in, 0.5f) };
        call = "rv_node_set_position";
        ra = rv_node_set_position(z->w[0], a, p);
        rb = rv_node_set_position(z->w[1], b, p);
        allowed |= FIN_;
        break;
    }
    case 6: {
        float mn[3], mx[3];
        decode_box(in, mn, mx);
        call = "rv_node_set_test_box";
        ra = rv_node_set_test_box(z->w[0], a, mn, mx);
        rb = rv_node_set_test_box(z->w[1], b, mn, mx);
        allowed |= ARG_ | FIN_;
        break;
    }
    default: {
        float t[3] = { 1.0f, 0.3f, 0.05f };
        rv_lod_ladder ladder;
        if (rv_lod_ladder_make(t, 1 + u8(in) % 3, &ladder) != RV_OK)
            return;
        call = "rv_node_set_lod_ladder";
        ra = rv_node_set_lod_ladder(z->w[0], a, &ladder);
        rb = rv_node_set_lod_ladder(z->w[1], b, &ladder);
        break;
    }
    }
    if (!a.id && ra == RV_ERR_INVALID_ARG && rb == RV_ERR_INVALID_ARG)
        return; /* no node at all: either code */
    same(ra, rb, call, allowed);
}

/* ---- frames ------------------------------------------------------------------------------ */

/* A camera from the input: eye, a forward direction, a field of view; view and projection
 * (OpenGL convention) as floats, and their product in double for the feed. */
static void decode_camera(fz_input *in, float view[16], float proj[16], double vp[16])
{
    double eye[3] = { small(in, 0.5f), small(in, 0.5f), small(in, 0.5f) };
    double f[3] = { small(in, 1.0f), small(in, 1.0f), small(in, 1.0f) };
    for (int k = 0; k < 3; k++)
        if (!isfinite(eye[k]) || fabs(eye[k]) > 1e4)
            eye[k] = 0;
    double len = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    if (!(len > 1e-3) || !isfinite(len)) {
        f[0] = 0, f[1] = 0, f[2] = -1, len = 1;
    }
    for (int k = 0; k < 3; k++)
        f[k] /= len;
    double v[16], p[16];
    fz_look_at(eye, f, tan(0.3 + (u8(in) % 64) * 0.02), 500, v, p);
    for (int k = 0; k < 16; k++) {
        view[k] = (float)v[k];
        proj[k] = (float)p[k];
    }
    for (int c = 0; c < 4; c++)
        for (int row = 0; row < 4; row++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)proj[k * 4 + row] * view[c * 4 + k];
            vp[c * 4 + row] = acc;
        }
}

/* The views of a frame both worlds published agree. */
static void compare_views(fzj *z, const rv_frame_view *va, const rv_frame_view *vb)
{
    FZJ_ASSERT(rv_frame_view_digest(va) == rv_frame_view_digest(vb) && va->opaque_count == vb->opaque_count &&
                   va->translucent_count == vb->translucent_count && va->cull_count == vb->cull_count,
               "the frame with jobs differs (%u/%u opaque, %u/%u translucent, %u/%u culls)", va->opaque_count,
               vb->opaque_count, va->translucent_count, vb->translucent_count, va->cull_count, vb->cull_count);
    FZJ_ASSERT(memcmp(&va->counts, &vb->counts, sizeof va->counts) == 0, "the frame counts with jobs differ");
    for (uint32_t k = 0; k < va->cull_count; k++)
        FZJ_ASSERT(va->culls[k].reason == vb->culls[k].reason, "cull record %u differs", k);
    rv_occlusion *oa = rv_world_occlusion(z->w[0]), *ob = rv_world_occlusion(z->w[1]);
    FZJ_ASSERT((oa == NULL) == (ob == NULL), "one world has an occlusion buffer");
    if (!oa)
        return;
    rv_occlusion_stats sa = rv_occlusion_get_stats(oa), sb = rv_occlusion_get_stats(ob);
    rv_occlusion_feed_stats fa = rv_occlusion_get_feed_stats(oa), fb = rv_occlusion_get_feed_stats(ob);
    FZJ_ASSERT(memcmp(&sa, &sb, sizeof sa) == 0, "the occlusion counters with jobs differ (%llu/%llu culled)",
               (unsigned long long)sa.culled, (unsigned long long)sb.culled);
    FZJ_ASSERT(memcmp(&fa, &fb, sizeof fa) == 0, "the feed counters with jobs differ");
    FZJ_ASSERT(sa.culled <= sa.tests && fa.objects_hidden_by_feed <= sa.culled, "occlusion counters out of order");
    for (uint32_t k = 0; k < va->opaque_count; k++)
        FZJ_ASSERT(rv_node_is_valid(z->w[0], va->opaque[k].node), "the view draws a node that is not live");
}

/* Per-frame occluders and the feed, in both worlds. */
static void frame_inputs(fzj *z, fz_input *in, const double vp[16])
{
    for (int n = u8(in) % 4; n > 0; n--) {
        static fzj_shape s;
        int kind = decode_shape(in, &s);
        unsigned allowed = OK_ | ARG_ | FIN_ | CAP_;
        if (u8(in) < 64)
            same(rv_frame_add_occluder(z->w[0], s.mn, s.mx, NULL), rv_frame_add_occluder(z->w[1], s.mn, s.mx, NULL),
                 "rv_frame_add_occluder", OK_ | ARG_ | FIN_);
        else if (kind == 1)
            same(rv_frame_add_convex(z->w[0], &s.convex, NULL), rv_frame_add_convex(z->w[1], &s.convex, NULL),
                 "rv_frame_add_convex", allowed);
        else
            same(rv_frame_add_mesh(z->w[0], &s.mesh, NULL), rv_frame_add_mesh(z->w[1], &s.mesh, NULL),
                 "rv_frame_add_mesh", allowed);
    }
    if (u8(in) < 128)
        return;
    fzf_image im;
    fzf_decode(in, &im, z->feed_w, z->feed_h, vp, (rv_clip){ 0 });
    if (im.feed.age == 0)
        im.expect |= FZF_BAD_ARG; /* this frame's own depth cannot exist yet */
    rv_result a = rv_frame_feed_depth(z->w[0], &im.feed), b = rv_frame_feed_depth(z->w[1], &im.feed);
    FZJ_ASSERT(a == b, "rv_frame_feed_depth: %s without jobs, %s with", rv_result_string(a), rv_result_string(b));
    FZJ_ASSERT(fzf_result_ok(&im, a) || (!z->occlusion && a == RV_OK),
               "rv_frame_feed_depth (%ux%u, format %d, age %u, expect %#x) returned %s", im.feed.width, im.feed.height,
               (int)im.feed.format, im.feed.age, im.expect, rv_result_string(a));
    fzf_free(&im);
}

static void frame(fzj *z, fz_input *in)
{
    float view[16], proj[16];
    double vp[16];
    decode_camera(in, view, proj, vp);
    rv_view v;
    memset(&v, 0, sizeof v);
    v.view = view;
    v.projection = proj;
    v.viewport_width = 64 + u8(in);
    v.viewport_height = 48 + u8(in);
    z->time_ms += 16.0;
    v.time_ms = z->time_ms;
    /* B's job system for this frame, maybe with a fault. */
    fzj_host *h = &z->host;
    h->rng = (uint64_t)u8(in) << 16 | (uint64_t)u8(in) << 8 | u8(in);
    uint8_t fb = u8(in);
    h->fault = fb < 160 ? FAULT_NONE : 1 + fb % (FAULT_KINDS - 1);
    h->fault_call = 1 + u8(in) % 6;
    h->calls = 0;
    h->broke = h->odd = 0;

    rv_result a = rv_frame_begin(z->w[0], &v), b = rv_frame_begin(z->w[1], &v);
    FZJ_ASSERT(a == RV_OK && b == RV_OK, "rv_frame_begin: %s without jobs, %s with", rv_result_string(a),
               rv_result_string(b));
    frame_inputs(z, in, vp);
    a = rv_frame_cull(z->w[0]);
    b = rv_frame_cull(z->w[1]);
    FZJ_ASSERT(a == RV_OK, "rv_frame_cull without jobs returned %s", rv_result_string(a));
    if (h->broke)
        FZJ_ASSERT(b == RV_ERR_INVARIANT, "a job system that broke its contract (fault %d on call %u): cull returned %s",
                   h->fault, h->fault_call, rv_result_string(b));
    else if (h->odd)
        FZJ_ASSERT(b == RV_OK || b == RV_ERR_INVARIANT, "an empty or out-of-range range: cull returned %s",
                   rv_result_string(b));
    else
        FZJ_ASSERT(b == RV_OK, "rv_frame_cull with jobs returned %s", rv_result_string(b));
    rv_frame_view va, vb;
    FZJ_ASSERT(rv_frame_end(z->w[0], &va) == RV_OK, "rv_frame_end without jobs failed");
    if (b != RV_OK) {
        FZJ_ASSERT(rv_frame_abort(z->w[1]) == RV_OK, "rv_frame_abort failed");
        z->diverged = 1;
        return;
    }
    FZJ_ASSERT(rv_frame_end(z->w[1], &vb) == RV_OK, "rv_frame_end with jobs failed");
    if (!z->diverged)
        compare_views(z, &va, &vb);
}

/* ---- the section ------------------------------------------------------------------------- */

void fzj_run(const uint8_t *data, size_t size);

void fzj_run(const uint8_t *data, size_t size)
{
    static fzj z; /* large; reset for every input */
    memset(&z, 0, sizeof z);
    fz_input in = { data, size };
    rv_world_desc desc = {0};
    uint8_t wb = u8(&in), ob = u8(&in);
    uint32_t workers = wb % 70; /* above RV_MAX_WORKERS: refused */
    z.occlusion = ob >= 32;
    desc.occlusion.width = z.occlusion ? 16 + ob % 112 : 0;
    desc.occlusion.min_occluder_texels = -1.0f;
    uint8_t cap = u8(&in);
    z.feed_w = cap < 32 ? 0 : 1 + cap % 48;
    z.feed_h = cap < 32 ? 0 : 1 + u8(&in) % 48;
    desc.occlusion.feed_max_width = z.feed_w;
    desc.occlusion.feed_max_height = z.feed_h;
    desc.record_culls = wb & 128;
    for (int k = 0; k < 2; k++) {
        desc.allocator = (rv_allocator){ fz_do_alloc, fz_do_realloc, fz_do_free, &z.alloc[k] };
        desc.jobs = k ? (rv_job_system){ host_parallel_for, &z.host, workers } : (rv_job_system){ 0 };
        rv_result r = rv_world_create(&desc, &z.w[k]);
        if (k && workers > RV_MAX_WORKERS) {
            FZJ_ASSERT(r == RV_ERR_INVALID_ARG, "max_workers %u returned %s", workers, rv_result_string(r));
            workers = RV_MAX_WORKERS;
            desc.jobs.max_workers = workers;
            r = rv_world_create(&desc, &z.w[k]);
        }
        FZJ_ASSERT(r == RV_OK, "rv_world_create returned %s", rv_result_string(r));
    }
    z.host.max_workers = workers ? workers : 1;
    for (int ops = 0; in.n && ops < FZJ_OPS; ops++) {
        uint8_t op = u8(&in) % 12;
        if (op < 8)
            node_op(&z, &in, op);
        else
            frame(&z, &in);
    }
    for (int k = 0; k < 2; k++) {
        rv_world_destroy(z.w[k]);
        FZJ_ASSERT(z.alloc[k].live == 0, "destroying world %c left %lld blocks", "AB"[k], (long long)z.alloc[k].live);
    }
}
