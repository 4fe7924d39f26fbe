/* Fuzz target: journal delta streams decoded from bytes, applied to a render scene.
 *
 * The input is a list of ticks. A tick either appends deltas to the journal (any kind,
 * keys, incarnations, generations and payloads, NaN and infinities included) and drains it
 * with rv_render_scene_apply, or replays a raw delta array, with sequences of its own
 * (repeated, backwards, jumping), through rv_render_scene_apply_deltas. Between ticks the
 * scene may be published (with or without deltas left over), an allocation failure may be
 * armed for the next apply, and the scene may be bound to a world.
 *
 * Checked after every apply:
 *  - every index (outdoor static, dynamic, translucent, selectable, light candidate, dirty,
 *    each cell's bucket) and every count equals a brute-force scan of the table, and every
 *    live row equals a reference model that applies the docs/design.md §7 rules (sequence,
 *    generation, incarnation, duplicate, replace, clear) delta by delta;
 *  - the observer reports, for every delta, the outcome the reference predicts;
 *  - no live row holds a value an append would refuse (NaN, zero quaternion, bad class...);
 *  - the same appends through a never-coalescing journal give the same scene digest
 *    (coalescing changes nothing observable);
 *  - an apply that runs out of memory leaves scene and journal as they were;
 *  - with a bound world, every live projection has a live node that maps back to its key;
 *    after every rv_update_world, a parented node hangs under its parent_key's node, and
 *    each node's world sphere encloses the host's bounds seen in the world (a reference in
 *    double: check_node_bounds).
 * At the end, a scene rebuilt from the reference in reverse key order has the same digest. */
#include "rvis.h"
#include "fuzz_support.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_ASSERT(cond, ...)                                                               \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_journal: %s:%d: ", __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

enum { MAX_REF = 64, MAX_TICK = 64 };

/* ---- input decoding ----------------------------------------------------------------- */


static uint64_t raw(fz_input *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)u8(in) << (8 * i);
    return v;
}

static float f32(fz_input *in)
{
    uint8_t b = u8(in);
    if (b < 208)
        return ((int)b - 104) * 0.5f;
    static const float palette[15] = { 0.0f, -0.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, NAN, -NAN,
                                       INFINITY, -INFINITY, 1e-45f, 1e-38f, 1e6f, -1e6f, 1.0f };
    if ((b & 15) < 15)
        return palette[b & 15];
    uint32_t bits = (uint32_t)raw(in, 4);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Keys: mostly 0..23 (so they collide), sometimes one of a few extreme ones. */
static uint64_t small_key(fz_input *in)
{
    static const uint64_t extreme[6] = { UINT64_MAX, 1ull << 63, 1ull << 32, 0xFFFFFFFFull,
                                         0x9E3779B97F4A7C15ull, 24 };
    uint8_t b = u8(in);
    return b < 250 ? b % 24 : extreme[b - 250];
}

static void decode_delta(fz_input *in, rv_delta *d)
{
    memset(d, 0, sizeof *d);
    d->kind = (rv_delta_kind)(u8(in) % 9); /* 0 and 8 are not kinds */
    d->key = small_key(in);
    uint8_t inc = u8(in);
    d->incarnation = inc < 250 ? inc % 4 : (uint32_t)raw(in, 4);
    uint8_t gen = u8(in);
    d->generation = gen < 250 ? gen % 4 : (uint32_t)raw(in, 4);
    rv_projection *p = &d->projection;
    rv_projection_transform *t = &p->transform;
    uint8_t shape = u8(in);
    if (shape & 1) { /* a sane transform, so most deltas are valid */
        t->position[0] = f32(in);
        t->position[1] = f32(in);
        t->position[2] = f32(in);
        t->rotation[3] = 1.0f;
        t->scale[0] = t->scale[1] = t->scale[2] = 1.0f;
        t->bounds[3] = fabsf(f32(in));
    } else {
        for (int k = 0; k < 3; k++)
            t->position[k] = f32(in);
        for (int k = 0; k < 4; k++)
            t->rotation[k] = f32(in);
        for (int k = 0; k < 3; k++)
            t->scale[k] = f32(in);
        for (int k = 0; k < 4; k++)
            t->bounds[k] = f32(in);
    }
    t->bounds_space = (rv_bounds_space)((shape >> 1) % 3);
    p->appearance.mesh = u8(in);
    p->appearance.material_variant = u8(in);
    p->bucket.projection_class = (rv_projection_class)(u8(in) % 6);
    p->bucket.cell = u8(in) % 4;
    uint8_t pk = u8(in);
    p->bucket.parent_key = pk < 128 ? 0 : pk % 24;
    uint8_t fl = u8(in);
    p->flags = fl < 240 ? fl & 0xF : fl;
}

/* ---- reference model ------------------------------------------------------------------ */

typedef struct ref_row {
    uint64_t key;
    uint32_t incarnation, generation, dirty;
    rv_projection projection;
} ref_row;

typedef struct ref_scene {
    ref_row rows[MAX_REF];
    int count;
    uint32_t generation;
    uint64_t last_sequence;
} ref_scene;

static int ref_find(const ref_scene *r, uint64_t key)
{
    for (int i = 0; i < r->count; i++)
        if (r->rows[i].key == key)
            return i;
    return -1;
}

static void ref_remove(ref_scene *r, int i)
{
    r->rows[i] = r->rows[--r->count];
}

/* The outcome docs/design.md §7 gives this delta, applied to the reference. valid: whether an
 * append accepts the delta (the payload rules). */
static rv_delta_outcome ref_apply(ref_scene *r, const rv_delta *d, int valid)
{
    if (!valid)
        return RV_DELTA_REJECTED_INVALID;
    if (d->sequence <= r->last_sequence)
        return RV_DELTA_REJECTED_SEQUENCE;
    r->last_sequence = d->sequence;
    if (d->kind == RV_DELTA_CLEAR_GENERATION) {
        if (d->generation <= r->generation)
            return RV_DELTA_REJECTED_OLDER_GENERATION;
        r->count = 0;
        r->generation = d->generation;
        return RV_DELTA_APPLIED;
    }
    if (d->generation != r->generation)
        return d->generation < r->generation ? RV_DELTA_REJECTED_OLDER_GENERATION
                                             : RV_DELTA_REJECTED_NEWER_GENERATION;
    int i = ref_find(r, d->key);
    if (d->kind == RV_DELTA_REGISTER) {
        if (i >= 0 && d->incarnation == r->rows[i].incarnation)
            return RV_DELTA_REJECTED_DUPLICATE;
        if (i >= 0 && d->incarnation < r->rows[i].incarnation)
            return RV_DELTA_REJECTED_STALE_INCARNATION;
        if (i >= 0)
            ref_remove(r, i);
        FZ_ASSERT(r->count < MAX_REF, "reference full");
        ref_row *row = &r->rows[r->count++];
        row->key = d->key;
        row->incarnation = d->incarnation;
        row->generation = d->generation;
        row->projection = d->projection;
        row->dirty = RV_DIRTY_REGISTERED;
        return RV_DELTA_APPLIED;
    }
    if (i < 0 || d->incarnation > r->rows[i].incarnation)
        return RV_DELTA_REJECTED_UNKNOWN_KEY;
    if (d->incarnation < r->rows[i].incarnation)
        return RV_DELTA_REJECTED_STALE_INCARNATION;
    ref_row *row = &r->rows[i];
    switch (d->kind) {
    case RV_DELTA_UPDATE_TRANSFORM:
        row->projection.transform = d->projection.transform;
        row->dirty |= RV_DIRTY_TRANSFORM;
        break;
    case RV_DELTA_UPDATE_APPEARANCE:
        row->projection.appearance = d->projection.appearance;
        row->dirty |= RV_DIRTY_APPEARANCE;
        break;
    case RV_DELTA_UPDATE_FLAGS:
        row->projection.flags = d->projection.flags;
        row->dirty |= RV_DIRTY_FLAGS;
        break;
    case RV_DELTA_REBUCKET:
        row->projection.bucket = d->projection.bucket;
        row->dirty |= RV_DIRTY_BUCKET;
        break;
    case RV_DELTA_UNREGISTER:
        ref_remove(r, i);
        break;
    default:
        break;
    }
    return RV_DELTA_APPLIED;
}

/* ---- the harness ----------------------------------------------------------------------- */

typedef struct fz {
    fz_alloc alloc;
    rv_world *world;          /* NULL: standalone scene */
    rv_render_scene *scene;   /* fed by the coalescing journal and by replays */
    rv_render_scene *twin;    /* fed the same appends through a never-coalescing journal */
    rv_journal *journal, *every;
    ref_scene ref;
    /* The observer compares each outcome with these, in order. */
    rv_delta_outcome expected[4 * MAX_TICK];
    int expected_count, observed;
    int twin_valid; /* no replay yet: scene and twin saw the same appends */
    rv_journal *scratch_journal;
    rv_render_scene *scratch_scene;
} fz;

static void observer(const rv_delta *d, rv_delta_outcome outcome, void *user)
{
    fz *f = user;
    FZ_ASSERT(f->observed < f->expected_count, "the observer saw more deltas than were applied");
    FZ_ASSERT(outcome == f->expected[f->observed],
              "delta %d (kind %d key %llu inc %u gen %u seq %llu): outcome %d, the reference says %d",
              f->observed, (int)d->kind, (unsigned long long)d->key, d->incarnation, d->generation,
              (unsigned long long)d->sequence, (int)outcome, (int)f->expected[f->observed]);
    f->observed++;
}

static void expect(rv_result got, rv_result want, const char *call)
{
    FZ_ASSERT(got == want, "%s returned %s, expected %s", call, rv_result_string(got), rv_result_string(want));
}

static int valid_payload(fz *f, const rv_delta *d)
{
    /* An append validates exactly the payload rules; a scratch journal tells (drained into
     * a scratch scene now and then so it stays small). */
    rv_result r = rv_journal_append(f->scratch_journal, d, NULL);
    FZ_ASSERT(r == RV_OK || r == RV_ERR_INVALID_ARG || r == RV_ERR_NOT_FINITE, "append returned %s",
              rv_result_string(r));
    uint32_t pending;
    rv_journal_pending(f->scratch_journal, &pending);
    if (pending > 32)
        expect(rv_render_scene_apply(f->scratch_scene, f->scratch_journal, NULL), RV_OK, "rv_render_scene_apply");
    return r == RV_OK;
}

static int finite_n(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Field by field (the struct has padding). Floats compare by bits. */
static int same_projection(const rv_projection *a, const rv_projection *b)
{
    const rv_projection_transform *x = &a->transform, *y = &b->transform;
    return memcmp(x->position, y->position, sizeof x->position) == 0 &&
           memcmp(x->rotation, y->rotation, sizeof x->rotation) == 0 &&
           memcmp(x->scale, y->scale, sizeof x->scale) == 0 &&
           memcmp(x->bounds, y->bounds, sizeof x->bounds) == 0 && x->bounds_space == y->bounds_space &&
           a->appearance.mesh == b->appearance.mesh &&
           a->appearance.material_variant == b->appearance.material_variant &&
           a->bucket.projection_class == b->bucket.projection_class && a->bucket.cell == b->bucket.cell &&
           a->bucket.parent_key == b->bucket.parent_key && a->flags == b->flags;
}

static int in_list(const rv_slot_list *l, uint32_t slot)
{
    int hits = 0;
    for (uint32_t i = 0; i < l->count; i++)
        hits += l->slots[i] == slot;
    return hits;
}

/* Every index and count against a brute-force scan; every row against the reference. */
static void check_scene(fz *f)
{
    rv_render_scene *s = f->scene;
    rv_slot_list ix[RV_INDEX_COUNT_];
    for (int w = RV_INDEX_NONE + 1; w < RV_INDEX_COUNT_; w++)
        expect(rv_render_scene_index(s, (rv_projection_index)w, &ix[w]), RV_OK, "rv_render_scene_index");
    rv_projection_counts want = {0}, got = rv_render_scene_counts(s);
    uint32_t in_index[RV_INDEX_COUNT_] = {0}, orphans = 0;
    uint32_t limit = rv_render_scene_slot_limit(s);
    uint64_t cells_seen = 0; /* cells are 0..3 */
    for (uint32_t slot = 0; slot < limit; slot++) {
        rv_projection_record rec;
        rv_result r = rv_render_scene_read(s, slot, &rec);
        int member[RV_INDEX_COUNT_] = {0};
        if (r == RV_OK) {
            const rv_projection *p = &rec.projection;
            int i = ref_find(&f->ref, rec.key);
            FZ_ASSERT(i >= 0, "slot %u holds key %llu, which the reference does not", slot,
                      (unsigned long long)rec.key);
            const ref_row *row = &f->ref.rows[i];
            FZ_ASSERT(rec.incarnation == row->incarnation && rec.generation == row->generation,
                      "key %llu: incarnation/generation differ", (unsigned long long)rec.key);
            FZ_ASSERT(same_projection(p, &row->projection), "key %llu: payload differs from the reference",
                      (unsigned long long)rec.key);
            FZ_ASSERT(rec.dirty == row->dirty, "key %llu: dirty %x, reference %x", (unsigned long long)rec.key,
                      rec.dirty, row->dirty);
            uint32_t found;
            expect(rv_render_scene_find(s, rec.key, &found), RV_OK, "rv_render_scene_find");
            FZ_ASSERT(found == slot, "find(key) is not the slot holding the key");
            /* Nothing an append refuses is ever stored. */
            const rv_projection_transform *t = &p->transform;
            FZ_ASSERT(finite_n(t->position, 3) && finite_n(t->rotation, 4) && finite_n(t->scale, 3) &&
                      finite_n(t->bounds, 4), "a stored transform is not finite");
            FZ_ASSERT(fpclassify(t->rotation[0]) == FP_NORMAL || fpclassify(t->rotation[1]) == FP_NORMAL ||
                          fpclassify(t->rotation[2]) == FP_NORMAL || fpclassify(t->rotation[3]) == FP_NORMAL,
                      "a stored quaternion has no normal component");
            FZ_ASSERT(t->bounds[3] >= 0, "a stored radius is negative");
            FZ_ASSERT(!(p->flags & ~RV_PROJECTION_FLAGS_ALL), "stored flags have unknown bits");
            rv_projection_class c = p->bucket.projection_class;
            FZ_ASSERT(c > RV_PROJECTION_CLASS_NONE && c < RV_PROJECTION_CLASS_COUNT_, "stored class out of range");
            member[RV_INDEX_OUTDOOR_STATIC] = c == RV_PROJECTION_OUTDOOR_STATIC;
            member[RV_INDEX_DYNAMIC] = c == RV_PROJECTION_DYNAMIC || c == RV_PROJECTION_EQUIPPED_CHILD;
            member[RV_INDEX_TRANSLUCENT] = (p->flags & RV_PROJECTION_TRANSLUCENT) != 0;
            member[RV_INDEX_SELECTABLE] = (p->flags & RV_PROJECTION_SELECTABLE) != 0;
            member[RV_INDEX_LIGHT_CANDIDATE] = (p->flags & RV_PROJECTION_LIGHT_CANDIDATE) != 0;
            member[RV_INDEX_DIRTY] = rec.dirty != 0;
            want.projections++;
            want.outdoor_static += member[RV_INDEX_OUTDOOR_STATIC];
            want.dynamic += member[RV_INDEX_DYNAMIC];
            want.equipped += c == RV_PROJECTION_EQUIPPED_CHILD;
            want.translucent += member[RV_INDEX_TRANSLUCENT];
            want.selectable += member[RV_INDEX_SELECTABLE];
            want.light_candidate += member[RV_INDEX_LIGHT_CANDIDATE];
            want.dirty += member[RV_INDEX_DIRTY];
            if (c == RV_PROJECTION_CELL_STATIC) {
                want.cell_static++;
                cells_seen |= 1ull << (p->bucket.cell & 63);
                rv_slot_list cl;
                expect(rv_render_scene_cell(s, p->bucket.cell, &cl), RV_OK, "rv_render_scene_cell");
                FZ_ASSERT(in_list(&cl, slot) == 1, "cell static %u is not exactly once in its cell", slot);
            }
            if (c == RV_PROJECTION_EQUIPPED_CHILD && ref_find(&f->ref, p->bucket.parent_key) < 0)
                orphans++;
            if (f->world) {
                FZ_ASSERT(rv_node_is_valid(f->world, rec.node), "projection %u has no live node", slot);
                uint64_t key;
                uint32_t back;
                expect(rv_render_scene_node_key(s, rec.node, &key, &back), RV_OK, "rv_render_scene_node_key");
                FZ_ASSERT(key == rec.key && back == slot, "a node maps back to another projection");
            }
        } else {
            FZ_ASSERT(r == RV_ERR_NOT_FOUND, "read of slot %u returned %s", slot, rv_result_string(r));
        }
        for (int w = RV_INDEX_NONE + 1; w < RV_INDEX_COUNT_; w++) {
            int hits = in_list(&ix[w], slot);
            FZ_ASSERT(hits == member[w], "index %d lists slot %u %d times, the scan says %d", w, slot, hits,
                      member[w]);
            in_index[w] += (uint32_t)hits;
        }
    }
    for (int w = RV_INDEX_NONE + 1; w < RV_INDEX_COUNT_; w++)
        FZ_ASSERT(in_index[w] == ix[w].count, "index %d lists a slot past the slot limit", w);
    uint32_t cell_total = 0;
    for (uint64_t cell = 0; cell < 4; cell++) {
        rv_slot_list cl;
        expect(rv_render_scene_cell(s, cell, &cl), RV_OK, "rv_render_scene_cell");
        cell_total += cl.count;
    }
    int cells = 0;
    for (int b = 0; b < 64; b++)
        cells += (int)((cells_seen >> b) & 1);
    want.cells = (uint32_t)cells;
    FZ_ASSERT(cell_total == want.cell_static, "cell buckets hold %u slots, the scan finds %u", cell_total,
              want.cell_static);
    FZ_ASSERT(memcmp(&want, &got, sizeof want) == 0,
              "counts differ from the scan (projections %u/%u dynamic %u/%u cells %u/%u dirty %u/%u)",
              got.projections, want.projections, got.dynamic, want.dynamic, got.cells, want.cells, got.dirty,
              want.dirty);
    FZ_ASSERT(want.projections == (uint32_t)f->ref.count, "the scene holds %u projections, the reference %d",
              want.projections, f->ref.count);
    rv_render_scene_stats st = rv_render_scene_get_stats(s);
    FZ_ASSERT(st.generation == f->ref.generation, "generation differs from the reference");
    FZ_ASSERT(st.orphaned_children == orphans, "orphaned children %u, the scan finds %u", st.orphaned_children,
              orphans);
    if (f->world)
        FZ_ASSERT(rv_world_scene_stats(f->world).nodes == want.projections, "the world holds %u nodes for %u projections",
                  rv_world_scene_stats(f->world).nodes, want.projections);
}

/* ---- node spheres against the host's bounds (world bound) ------------------------------
 * After rv_update_world, each live projection's node must carry a world sphere enclosing
 * the bounds the host gave, seen in the world. The reference is written here, in double,
 * from the host's numbers alone: the normalised quaternion as a rotation matrix, times the
 * scale, plus the position; a parented node's chain multiplied out; a radius scaled by the
 * largest singular value of the linear part (for one transform its largest |scale|; for a
 * chain it can be far below the product of those, and the library may use less than that
 * product, so the product would be no bound to check against). World-space bounds are in
 * the frame the transform is expressed in: the world for a root, the parent's world
 * transform for a parented equipped child.
 *
 * Tolerance: a forward-error bound of the library's float matrices against these. Each
 * entry of a rotation times a scale is rounded to float (by <= FLT_EPSILON / 2 of it, or
 * half the smallest denormal), and the rotation itself is the host's quaternion normalised
 * to float (<= 2 FLT_EPSILON of 1 in each entry of R, taken twice: times |scale|, absolute
 * in the entry; a tolerance relative to the entry missed entries near 0 by cancellation:
 * 40 ulps of a 25.8 entry under a parent of scale 52); each composition with a parent adds three products and
 * three sums (<= 2 * FLT_EPSILON of the sum of their magnitudes, plus denormal halves).
 * err carries, per entry and in double, twice that bound along the chain (so it holds with
 * the second-order terms). The centre may then move by err applied to the local centre's
 * magnitudes, the radius by the local radius times err's norm, and the float result is
 * rounded once more (FLT_EPSILON of its magnitude). So the tolerance is relative to the
 * magnitudes the float computation went through, not to the result (a position of 1e6
 * cancelled to a centre near 0 legitimately loses ~0.1).
 * A root with world-space bounds gets the last term only: the journal pads the sphere it
 * maps into local space for the rounding of its own path (rvi_world_bounds_to_local), so
 * it must enclose the host's sphere up to the rounding of the result, and a padding or
 * centre broken there fails here (checked by breaking each on purpose).
 *
 * Skipped: chains whose magnitudes pass FLT_MAX / 16, where the library's float compose may
 * overflow and keep a previous matrix (rv_update_world then says RV_ERR_NOT_FINITE). An
 * infinite radius encloses everything. */

typedef struct fz_affine {
    double m[3][4]; /* rows; columns 0-2 linear, column 3 the translation */
} fz_affine;

/* T * R * S of a projection transform, R from the normalised quaternion (x, y, z, w). */
static void fz_affine_of(const rv_projection_transform *t, fz_affine *out)
{
    double q[4], n2 = 0.0;
    for (int k = 0; k < 4; k++)
        n2 += (double)t->rotation[k] * (double)t->rotation[k];
    double n = sqrt(n2);
    for (int k = 0; k < 4; k++)
        q[k] = (double)t->rotation[k] / n;
    double x = q[0], y = q[1], z = q[2], w = q[3];
    double r[3][3] = {
        { 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y) },
        { 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x) },
        { 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y) },
    };
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            out->m[i][j] = r[i][j] * (double)t->scale[j];
        out->m[i][3] = (double)t->position[i];
    }
}

/* out = a * b with b's fourth row (0 0 0 w): w = 1 composes affine maps, w = 0 applies a
 * only to b's entries (for error terms). out may be a or b. */
static void fz_affine_mul(const fz_affine *a, const fz_affine *b, double w, fz_affine *out)
{
    fz_affine p;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double s = j == 3 ? w * a->m[i][3] : 0.0;
            for (int k = 0; k < 3; k++)
                s += a->m[i][k] * b->m[k][j];
            p.m[i][j] = s;
        }
    *out = p;
}

static void fz_affine_abs(const fz_affine *a, fz_affine *out)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            out->m[i][j] = fabs(a->m[i][j]);
}

/* Largest singular value of a's linear part: the square root of the largest eigenvalue of
 * A^T A, by cyclic Jacobi rotations (Golub & Van Loan §8.5), on A scaled to entries <= 1
 * so no square under- or overflows. */
static double fz_spectral_norm(const fz_affine *a)
{
    double big = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            big = fmax(big, fabs(a->m[i][j]));
    if (big == 0.0)
        return 0.0;
    double g[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0.0;
            for (int k = 0; k < 3; k++)
                s += (a->m[k][i] / big) * (a->m[k][j] / big);
            g[i][j] = s;
        }
    for (int sweep = 0; sweep < 32; sweep++) {
        double off = fabs(g[0][1]) + fabs(g[0][2]) + fabs(g[1][2]);
        if (off <= 1e-300)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (g[p][q] == 0.0)
                    continue;
                double theta = (g[q][q] - g[p][p]) / (2.0 * g[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 3; k++) { /* columns p, q */
                    double gp = g[k][p], gq = g[k][q];
                    g[k][p] = c * gp - s * gq;
                    g[k][q] = s * gp + c * gq;
                }
                for (int k = 0; k < 3; k++) { /* rows p, q */
                    double gp = g[p][k], gq = g[q][k];
                    g[p][k] = c * gp - s * gq;
                    g[q][k] = s * gp + c * gq;
                }
            }
    }
    double top = fmax(g[0][0], fmax(g[1][1], g[2][2]));
    return big * sqrt(fmax(top, 0.0));
}

enum { FZ_MAX_CHAIN = MAX_REF + 1 };

static void check_node_bounds(fz *f)
{
    const double u = (double)FLT_EPSILON, eta = (double)FLT_TRUE_MIN;
    uint32_t limit = rv_render_scene_slot_limit(f->scene);
    for (uint32_t slot = 0; slot < limit; slot++) {
        rv_projection_record rec;
        if (rv_render_scene_read(f->scene, slot, &rec) != RV_OK)
            continue;
        /* The chain of nodes from this one up to its root, as projections. */
        const rv_projection_transform *chain[FZ_MAX_CHAIN];
        int depth = 0;
        rv_node node = rec.node;
        uint64_t expected_parent = 0;
        int has_expected = 0;
        for (;;) {
            uint64_t key;
            uint32_t at;
            expect(rv_render_scene_node_key(f->scene, node, &key, &at), RV_OK, "rv_render_scene_node_key");
            int i = ref_find(&f->ref, key);
            FZ_ASSERT(i >= 0 && depth < FZ_MAX_CHAIN, "a node chain leaves the reference");
            const rv_projection *p = &f->ref.rows[i].projection;
            if (has_expected)
                FZ_ASSERT(key == expected_parent, "a node is parented under a projection other than its parent_key");
            chain[depth++] = &p->transform;
            rv_node parent;
            expect(rv_node_parent(f->world, node, &parent), RV_OK, "rv_node_parent");
            if (parent.id == RV_NODE_NONE.id)
                break;
            FZ_ASSERT(p->bucket.projection_class == RV_PROJECTION_EQUIPPED_CHILD,
                      "key %llu: a node with a parent backs a projection that is not an equipped child",
                      (unsigned long long)key);
            expected_parent = p->bucket.parent_key;
            has_expected = 1;
            node = parent;
        }
        /* Multiply out from the root: m exact, mag the same with every entry's magnitude,
         * err the bound of the float matrix's difference from m (see above). */
        fz_affine m, mag, err, frame = { { { 1, 0, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 } } };
        int overflow = 0;
        for (int c = depth - 1; c >= 0; c--) {
            fz_affine l, l_mag, l_err;
            fz_affine_of(chain[c], &l);
            fz_affine_abs(&l, &l_mag);
            /* Each entry's float rounding, and the rotation's: the node keeps the host's
             * quaternion normalised to float (rv_node_set_rotation), half an ulp per
             * component, which turns the rotation by up to 2 ulps of 1 in every entry of R,
             * an error absolute in R (times the scale), not relative to the entry (an entry
             * near 0 by cancellation moves as much as the others). */
            for (int i = 0; i < 3; i++) {
                for (int j = 0; j < 3; j++)
                    l_err.m[i][j] = 2.0 * (0.5 * u * l_mag.m[i][j] + 0.5 * eta) +
                                    4.0 * u * fabs((double)chain[c]->scale[j]);
                l_err.m[i][3] = 0.0; /* the position is a float already */
            }
            if (c == depth - 1) {
                m = l;
                mag = l_mag;
                err = l_err;
            } else {
                if (c == 0)
                    frame = m; /* the parent's world transform */
                fz_affine l_bound = l_mag, a, b;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++)
                        l_bound.m[i][j] += l_err.m[i][j];
                fz_affine_mul(&err, &l_bound, 1.0, &a); /* the parent's error carried */
                fz_affine_mul(&mag, &l_err, 0.0, &b);   /* this node's rounding, moved by the parent */
                fz_affine_mul(&m, &l, 1.0, &m);
                fz_affine_mul(&mag, &l_mag, 1.0, &mag);
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++)
                        err.m[i][j] = a.m[i][j] + b.m[i][j] + 2.0 * (2.0 * u * mag.m[i][j] + 3.0 * eta);
            }
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++)
                    overflow |= !(mag.m[i][j] <= FLT_MAX / 16);
        }
        if (overflow)
            continue;
        /* The host's sphere in the world, and the local sphere the float path starts from. */
        const rv_projection_transform *t = chain[0];
        double local[3], local_radius, centre[3], radius;
        if (t->bounds_space == RV_BOUNDS_WORLD) {
            /* Given in the frame: the parent's world transform (the world for a root). */
            for (int i = 0; i < 3; i++)
                centre[i] = frame.m[i][0] * t->bounds[0] + frame.m[i][1] * t->bounds[1] +
                            frame.m[i][2] * t->bounds[2] + frame.m[i][3];
            radius = t->bounds[3] * fz_spectral_norm(&frame);
            /* Local: the inverse of T * R * S (R orthonormal: its transpose). */
            fz_affine l;
            fz_affine_of(t, &l);
            double largest = 0.0;
            for (int j = 0; j < 3; j++) {
                double s = t->scale[j], v = 0.0;
                for (int i = 0; i < 3; i++)
                    v += (l.m[i][j] / s) * ((double)t->bounds[i] - t->position[i]);
                local[j] = v / s;
                largest = fmax(largest, fabs(s));
            }
            local_radius = t->bounds[3] / largest;
        } else {
            for (int i = 0; i < 3; i++)
                local[i] = t->bounds[i];
            local_radius = t->bounds[3];
            for (int i = 0; i < 3; i++)
                centre[i] = m.m[i][0] * local[0] + m.m[i][1] * local[1] + m.m[i][2] * local[2] + m.m[i][3];
            radius = t->bounds[3] * fz_spectral_norm(&m);
        }
        double tol = 0.0;
        if (depth > 1 || t->bounds_space == RV_BOUNDS_LOCAL) {
            double e2 = 0.0, f2 = 0.0;
            for (int i = 0; i < 3; i++) {
                double e = err.m[i][3];
                for (int j = 0; j < 3; j++) {
                    e += err.m[i][j] * fabs(local[j]);
                    f2 += err.m[i][j] * err.m[i][j];
                }
                e2 += e * e;
            }
            tol += sqrt(e2) + local_radius * sqrt(f2);
        }
        tol += u * (fabs(centre[0]) + fabs(centre[1]) + fabs(centre[2]) + radius) + 4.0 * eta;
        float sphere[4];
        expect(rv_node_world_bounds(f->world, rec.node, sphere), RV_OK, "rv_node_world_bounds");
        if (sphere[3] == INFINITY)
            continue;
        FZ_ASSERT(sphere[3] >= 0 && finite_n(sphere, 4), "key %llu: the node has no finite sphere (%g %g %g r %g)",
                  (unsigned long long)rec.key, sphere[0], sphere[1], sphere[2], sphere[3]);
        double dx = sphere[0] - centre[0], dy = sphere[1] - centre[1], dz = sphere[2] - centre[2];
        double reach = sqrt(dx * dx + dy * dy + dz * dz) + radius;
        if (!(reach <= sphere[3] + tol)) /* the transform, to reproduce the miss outside the fuzzer */
            fprintf(stderr, "position %a %a %a rotation %a %a %a %a scale %a %a %a bounds %a %a %a %a\n",
                    t->position[0], t->position[1], t->position[2], t->rotation[0], t->rotation[1],
                    t->rotation[2], t->rotation[3], t->scale[0], t->scale[1], t->scale[2], t->bounds[0],
                    t->bounds[1], t->bounds[2], t->bounds[3]);
        FZ_ASSERT(reach <= sphere[3] + tol,
                  "key %llu (depth %d, %s bounds): the node's world sphere (%.9g %.9g %.9g r %.9g) misses the "
                  "host's (%.9g %.9g %.9g r %.9g) by %.3g, tolerance %.3g",
                  (unsigned long long)rec.key, depth, t->bounds_space == RV_BOUNDS_WORLD ? "world" : "local",
                  sphere[0], sphere[1], sphere[2], sphere[3], centre[0], centre[1], centre[2], radius,
                  reach - sphere[3], tol);
    }
}

static rv_scene_digest digest_of(rv_render_scene *s)
{
    rv_scene_digest d;
    expect(rv_render_scene_digest(s, &d), RV_OK, "rv_render_scene_digest");
    return d;
}

/* A journal tick: appends, then one apply (maybe under an armed allocation failure). */
static void journal_tick(fz *f, fz_input *in, int armed_at)
{
    int n = 1 + u8(in) % 24;
    for (int i = 0; i < n; i++) {
        rv_delta d;
        decode_delta(in, &d);
        uint8_t how = u8(in);
        rv_result r;
        uint64_t seq = 0;
        switch (how % 4) { /* the kind's own function, or the generic append */
        case 0:
            if (d.kind == RV_DELTA_REGISTER) {
                r = rv_journal_register(f->journal, d.generation, d.key, d.incarnation, &d.projection, &seq);
                break;
            }
            if (d.kind == RV_DELTA_UPDATE_FLAGS) {
                r = rv_journal_update_flags(f->journal, d.generation, d.key, d.incarnation, d.projection.flags, &seq);
                break;
            }
            if (d.kind == RV_DELTA_UNREGISTER) {
                r = rv_journal_unregister(f->journal, d.generation, d.key, d.incarnation, &seq);
                break;
            }
            if (d.kind == RV_DELTA_CLEAR_GENERATION) {
                r = rv_journal_clear_generation(f->journal, d.generation, &seq);
                break;
            }
            /* fall through */
        default:
            r = rv_journal_append(f->journal, &d, &seq);
        }
        rv_result r2 = rv_journal_append(f->every, &d, NULL);
        FZ_ASSERT(r == r2, "the two journals disagree on a delta: %s / %s", rv_result_string(r), rv_result_string(r2));
        FZ_ASSERT(r == RV_OK || r == RV_ERR_INVALID_ARG || r == RV_ERR_NOT_FINITE, "append returned %s",
                  rv_result_string(r));
    }
    /* The reference takes what the journal will hand out: the pending entries, coalesced. */
    uint32_t pending_count;
    const rv_delta *pending = rv_journal_pending(f->journal, &pending_count);
    FZ_ASSERT(pending_count <= 4 * MAX_TICK, "more pending than appended");
    ref_scene saved = f->ref;
    f->expected_count = 0;
    f->observed = 0;
    for (uint32_t i = 0; i < pending_count; i++)
        f->expected[f->expected_count++] = ref_apply(&f->ref, &pending[i], 1);
    ref_scene after_ref = f->ref;
    rv_render_scene_stats before = rv_render_scene_get_stats(f->scene);
    rv_scene_digest before_digest = digest_of(f->scene);
    if (armed_at) {
        f->alloc.calls = 0;
        f->alloc.fail_at = (uint64_t)armed_at;
    }
    rv_apply_counts counts;
    rv_result r = rv_render_scene_apply(f->scene, f->journal, &counts);
    f->alloc.fail_at = 0;
    if (r == RV_ERR_OUT_OF_MEMORY && armed_at) {
        f->ref = saved;
        rv_render_scene_stats after = rv_render_scene_get_stats(f->scene);
        FZ_ASSERT(memcmp(&before, &after, sizeof before) == 0, "a failed apply changed the scene's counters");
        rv_scene_digest now = digest_of(f->scene);
        FZ_ASSERT(memcmp(&now, &before_digest, sizeof now) == 0, "a failed apply changed the scene");
        uint32_t still;
        rv_journal_pending(f->journal, &still);
        FZ_ASSERT(still == pending_count, "a failed apply drained the journal");
        FZ_ASSERT(f->observed == 0, "a failed apply told the observer");
        check_scene(f);
        /* Now drain for real. */
        f->ref = after_ref;
        r = rv_render_scene_apply(f->scene, f->journal, &counts);
    }
    expect(r, RV_OK, "rv_render_scene_apply");
    FZ_ASSERT(f->observed == f->expected_count, "the observer saw %d of %d deltas", f->observed, f->expected_count);
    FZ_ASSERT(counts.taken == pending_count, "apply took %llu of %u", (unsigned long long)counts.taken, pending_count);
    uint64_t sum = counts.applied;
    for (int o = 0; o < RV_DELTA_OUTCOME_COUNT_; o++)
        sum += counts.rejected[o];
    FZ_ASSERT(sum == counts.taken, "outcomes do not add up to the deltas taken");
    uint32_t left;
    rv_journal_pending(f->journal, &left);
    FZ_ASSERT(left == 0, "apply left %u deltas in the journal", left);
    check_scene(f);
    expect(rv_render_scene_apply(f->twin, f->every, NULL), RV_OK, "rv_render_scene_apply (twin)");
    if (f->twin_valid) {
        rv_scene_digest a = digest_of(f->scene), b = digest_of(f->twin);
        FZ_ASSERT(memcmp(&a, &b, sizeof a) == 0,
                  "coalescing changed the scene (digest differs from the never-coalescing twin)");
    }
}

/* A replay tick: a raw array with sequences of its own. */
static void replay_tick(fz *f, fz_input *in)
{
    rv_delta deltas[MAX_TICK];
    int n = u8(in) % MAX_TICK;
    uint64_t seq = f->ref.last_sequence;
    f->expected_count = 0;
    f->observed = 0;
    for (int i = 0; i < n; i++) {
        decode_delta(in, &deltas[i]);
        uint8_t s = u8(in);
        if (s < 200)
            seq += 1 + s % 3;                 /* forward, maybe jumping */
        else if (s < 230)
            seq = seq > 2 ? seq - s % 3 : seq; /* repeated or backwards */
        else
            seq = raw(in, 8);                 /* anything */
        deltas[i].sequence = seq;
        f->expected[f->expected_count++] = ref_apply(&f->ref, &deltas[i], valid_payload(f, &deltas[i]));
    }
    rv_apply_counts counts;
    expect(rv_render_scene_apply_deltas(f->scene, deltas, (uint32_t)n, &counts), RV_OK,
           "rv_render_scene_apply_deltas");
    FZ_ASSERT(f->observed == n, "the observer saw %d of %d replayed deltas", f->observed, n);
    FZ_ASSERT(counts.taken == (uint64_t)n, "replay took %llu of %d", (unsigned long long)counts.taken, n);
    check_scene(f);
    /* Replayed sequences and the two journals' sequences (the never-coalescing one runs
     * ahead) no longer line up: the twin comparison ends here. */
    f->twin_valid = 0;
}

static void clear_dirty(fz *f)
{
    for (int i = 0; i < f->ref.count; i++)
        f->ref.rows[i].dirty = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz f;
    memset(&f, 0, sizeof f);
    fz_input in = { data, size };
    f.twin_valid = 1;
    uint8_t setup = u8(&in);
    rv_allocator a = { fz_do_alloc, fz_do_realloc, fz_do_free, &f.alloc };
    if (setup & 1) {
        rv_world_desc wd = {0};
        wd.allocator = a;
        expect(rv_world_create(&wd, &f.world), RV_OK, "rv_world_create");
    }
    rv_render_scene_desc sd = {0};
    sd.allocator = a;
    sd.initial_capacity = 1 + (setup >> 1) % 4; /* small, so the table and indices grow */
    sd.world = f.world;
    sd.observer = observer;
    sd.observer_user = &f;
    expect(rv_render_scene_create(&sd, &f.scene), RV_OK, "rv_render_scene_create");
    rv_render_scene_desc td = {0};
    td.initial_capacity = 4; /* small: big first tables cost the fuzzer more than the test */
    expect(rv_render_scene_create(&td, &f.twin), RV_OK, "rv_render_scene_create");
    expect(rv_render_scene_create(&td, &f.scratch_scene), RV_OK, "rv_render_scene_create");
    rv_journal_desc jd = {0};
    jd.allocator = a;
    jd.initial_capacity = 2;
    expect(rv_journal_create(&jd, &f.journal), RV_OK, "rv_journal_create");
    rv_journal_desc ed = {0};
    ed.keep_every_update = true;
    ed.initial_capacity = 4;
    expect(rv_journal_create(&ed, &f.every), RV_OK, "rv_journal_create");
    expect(rv_journal_create(&ed, &f.scratch_journal), RV_OK, "rv_journal_create");

    int ticks = 0;
    while (in.n && ticks++ < 64) {
        uint8_t op = u8(&in);
        switch (op % 6) {
        case 0:
        case 1:
        case 2:
            journal_tick(&f, &in, 0);
            break;
        case 3:
            journal_tick(&f, &in, 1 + u8(&in) % 16);
            break;
        case 4:
            replay_tick(&f, &in);
            break;
        case 5: {
            /* Publish, sometimes with deltas left over (refused, dirty kept). */
            rv_delta d;
            decode_delta(&in, &d);
            d.kind = RV_DELTA_UNREGISTER;
            int leave = u8(&in) & 1;
            if (leave)
                expect(rv_journal_append(f.journal, &d, NULL), RV_OK, "rv_journal_append");
            rv_result r = rv_render_scene_publish(f.scene, f.journal);
            expect(r, leave ? RV_ERR_INVARIANT : RV_OK, "rv_render_scene_publish");
            if (!leave)
                clear_dirty(&f);
            else {
                expect(rv_journal_append(f.every, &d, NULL), RV_OK, "rv_journal_append");
                journal_tick(&f, &in, 0); /* drains the left-over delta too */
            }
            check_scene(&f);
            break;
        }
        }
        if (f.world) {
            rv_result r = rv_update_world(f.world);
            FZ_ASSERT(r == RV_OK || r == RV_ERR_NOT_FINITE, "rv_update_world returned %s", rv_result_string(r));
            check_node_bounds(&f);
        }
    }

    /* Digest independence: a scene rebuilt from the reference in reverse order. */
    rv_render_scene_desc rd = {0};
    rd.initial_capacity = 4;
    rd.initial_generation = f.ref.generation;
    rv_render_scene *rebuilt;
    expect(rv_render_scene_create(&rd, &rebuilt), RV_OK, "rv_render_scene_create");
    for (int i = f.ref.count - 1; i >= 0; i--) {
        rv_delta d = {0};
        d.sequence = (uint64_t)(f.ref.count - i);
        d.kind = RV_DELTA_REGISTER;
        d.key = f.ref.rows[i].key;
        d.incarnation = f.ref.rows[i].incarnation;
        d.generation = f.ref.rows[i].generation;
        d.projection = f.ref.rows[i].projection;
        rv_apply_counts c;
        expect(rv_render_scene_apply_deltas(rebuilt, &d, 1, &c), RV_OK, "rv_render_scene_apply_deltas");
        FZ_ASSERT(c.applied == 1, "rebuilding the reference was refused");
    }
    rv_scene_digest x = digest_of(f.scene), y = digest_of(rebuilt);
    FZ_ASSERT(memcmp(&x, &y, sizeof x) == 0, "the digest depends on insertion order");
    rv_render_scene_destroy(rebuilt);

    rv_render_scene_destroy(f.scene);
    rv_render_scene_destroy(f.twin);
    rv_journal_destroy(f.journal);
    rv_journal_destroy(f.every);
    rv_render_scene_destroy(f.scratch_scene);
    rv_journal_destroy(f.scratch_journal);
    rv_world_destroy(f.world);
    FZ_ASSERT(f.alloc.live == 0, "%lld blocks leaked", (long long)f.alloc.live);
    return 0;
}
