/* Apparent-size LOD (docs/design.md §5): ladders, hysteresis and crossfade for nodes (world
 * LOD state) and for standalone selectors. The stateless level functions live in
 * lod_levels.c, HLOD in hlod.c. */
#include "lod.h"
#include "core/check.h"
#include "core/inline.h"
#include "core/node_table.h"
#include "core/vec.h"

#include <math.h>
#include <string.h>

#define DEFAULT_HYSTERESIS 0.10f
#define DEFAULT_CROSSFADE_MS 250.0f
#define DEFAULT_MAX_SSE 16.0f
#define DEFAULT_ORTHO_FOV_Y ((float)(RVI_LOD_PI / 3.0))

enum { SELECTOR_STARTED = 1u, SELECTOR_FADING = 2u };

/* ---- validation ---------------------------------------------------------------------- */

rv_result rvi_lod_resolve_desc(const rv_lod_desc *in, rv_lod_desc *out)
{
    rv_lod_desc d = in ? *in : (rv_lod_desc){0};
    float numbers[5] = { d.hysteresis, d.crossfade_ms, d.max_screen_space_error, d.bias,
                         d.ortho_reference_fov_y };
    if (!rvi_finite_n(numbers, 5))
        return RV_ERR_NOT_FINITE;
    if (d.hysteresis >= 1.0f || d.max_screen_space_error < 0.0f || d.bias < 0.0f ||
        d.ortho_reference_fov_y < 0.0f || d.ortho_reference_fov_y >= (float)RVI_LOD_PI)
        return RV_ERR_INVALID_ARG;
    if (d.hysteresis == 0.0f)
        d.hysteresis = DEFAULT_HYSTERESIS;
    else if (d.hysteresis < 0.0f)
        d.hysteresis = -1.0f;
    if (d.crossfade_ms == 0.0f)
        d.crossfade_ms = DEFAULT_CROSSFADE_MS;
    else if (d.crossfade_ms < 0.0f)
        d.crossfade_ms = -1.0f;
    if (d.max_screen_space_error == 0.0f)
        d.max_screen_space_error = DEFAULT_MAX_SSE;
    if (d.bias == 0.0f)
        d.bias = 1.0f;
    if (d.ortho_reference_fov_y == 0.0f)
        d.ortho_reference_fov_y = DEFAULT_ORTHO_FOV_Y;
    *out = d;
    return RV_OK;
}

/* The checks of rv_lod_ladder_make, in its documented order. */
static rv_result check_thresholds(const float *t, uint32_t count)
{
    if (count == 0)
        return RV_ERR_INVALID_ARG;
    if (count > RV_LOD_MAX_THRESHOLDS)
        return RV_ERR_CAPACITY;
    for (uint32_t i = 0; i < count; i++)
        if (!isfinite(t[i]))
            return RV_ERR_NOT_FINITE;
    for (uint32_t i = 0; i < count; i++)
        if (!(t[i] > 0.0f))
            return RV_ERR_INVALID_ARG;
    for (uint32_t i = 1; i < count; i++)
        if (!(t[i] < t[i - 1]))
            return RV_ERR_ORDER;
    return RV_OK;
}

rv_result rvi_lod_check_ladder(const rv_lod_ladder *ladder)
{
    if (!ladder)
        return RV_ERR_INVALID_ARG;
    return check_thresholds(ladder->thresholds, ladder->count);
}

rv_result rvi_lod_check_view(const rv_lod_view *view)
{
    if (!view)
        return RV_ERR_INVALID_ARG;
    if (view->orthographic) {
        if (!isfinite(view->ortho_height))
            return RV_ERR_NOT_FINITE;
        if (!(view->ortho_height > 0.0f))
            return RV_ERR_INVALID_ARG;
        return RV_OK;
    }
    return rvi_finite_n(view->eye, 3) ? RV_OK : RV_ERR_NOT_FINITE;
}

rv_result rvi_lod_check_sphere(const float center[3], float radius)
{
    if (!center)
        return RV_ERR_INVALID_ARG;
    if (!rvi_finite_n(center, 3) || !isfinite(radius))
        return RV_ERR_NOT_FINITE;
    return radius < 0.0f ? RV_ERR_INVALID_ARG : RV_OK;
}

rv_result rv_lod_ladder_make(const float *thresholds, uint32_t count, rv_lod_ladder *out)
{
    if (!thresholds || !out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(check_thresholds(thresholds, count));
    rv_lod_ladder ladder;
    memset(&ladder, 0, sizeof ladder);
    ladder.count = count;
    memcpy(ladder.thresholds, thresholds, count * sizeof *thresholds);
    *out = ladder;
    return RV_OK;
}

/* ---- hysteresis and crossfade -------------------------------------------------------- */

/* The three candidate levels of an angle: plain (no hysteresis, for a first selection),
 * finer (thresholds raised by 1 + h: the level a finer change may go to) and coarser
 * (thresholds lowered by 1 - h: the level a coarser change may go to). */
typedef struct lod_candidates {
    uint32_t plain, finer, coarser;
} lod_candidates;

static RVI_ALWAYS_INLINE lod_candidates candidates_for(double angle, const rv_lod_ladder *ladder,
                                                      const rv_lod_desc *config)
{
    /* level_for_angle for the three factors in one pass: each level counts a prefix of the
     * descending thresholds, and the finer factor's thresholds are the largest, so once the
     * angle reaches one of them no level counts any further threshold. The products are
     * level_for_angle's (t * 1.0 is t). */
    double h = config->hysteresis > 0.0f ? config->hysteresis : 0.0, up = 1.0 + h, down = 1.0 - h;
    uint32_t plain = 0, finer = 0, coarser = 0;
    for (uint32_t i = 0; i < ladder->count; i++) {
        double t = (double)ladder->thresholds[i];
        if (!(angle < t * up * RVI_LOD_REACH))
            break;
        finer++;
        plain += angle < t * RVI_LOD_REACH;
        coarser += angle < t * down * RVI_LOD_REACH;
    }
    lod_candidates c;
    c.plain = rvi_lod_clamp_finest(plain, config->finest_level, ladder->count);
    c.finer = rvi_lod_clamp_finest(finer, config->finest_level, ladder->count);
    c.coarser = rvi_lod_clamp_finest(coarser, config->finest_level, ladder->count);
    return c;
}

/* One step of a selector: advance a running fade by dt_ms, then move toward the level the
 * candidates allow. c comes by pointer: by value, gcc stores its three words separately
 * and reloads two of them as one 8-byte register, a load no store can forward (a stall
 * of the LOD pass on every selection). */
static void selector_step(rv_lod_selector *s, const lod_candidates *c, uint32_t last, float dt_ms,
                          float crossfade_ms)
{
    if (!(s->flags & SELECTOR_STARTED)) {
        s->level = s->from_level = c->plain;
        s->fade_ms = 0.0f;
        s->flags = SELECTOR_STARTED;
        return;
    }
    /* A crossfade shortened below the time a fade has run (the host changed its desc): the
     * incoming level has its whole weight, as if the fade had just ended, and every turn
     * below, which runs the rest of a fade back, starts from there (never from a negative
     * time, which would leave the turned-to level no weight for frames). */
    if ((s->flags & SELECTOR_FADING) && crossfade_ms > 0.0f && s->fade_ms > crossfade_ms)
        s->fade_ms = crossfade_ms;
    /* Fading toward nothing while a drawn level is wanted: the drawn one turns back before
     * this step's time passes, so what is drawn never thins while it should be drawn. */
    if ((s->flags & SELECTOR_FADING) && crossfade_ms > 0.0f && s->level == last && s->from_level != last &&
        c->finer < last) {
        s->level = s->from_level;
        s->from_level = last;
        s->fade_ms = crossfade_ms - s->fade_ms;
    }
    if (s->flags & SELECTOR_FADING) {
        s->fade_ms += dt_ms;
        if (crossfade_ms < 0.0f || s->fade_ms >= crossfade_ms) {
            s->flags &= ~(uint32_t)SELECTOR_FADING;
            s->from_level = s->level;
            s->fade_ms = 0.0f;
        }
    }
    uint32_t target = s->level;
    if (c->finer < s->level)
        target = c->finer;
    else if (c->coarser > s->level)
        target = c->coarser;
    if (target == s->level)
        return;
    if (crossfade_ms < 0.0f) {
        s->level = s->from_level = target;
        return;
    }
    if (s->flags & SELECTOR_FADING) {
        if (target == s->from_level) {
            /* Reversal: the outgoing level becomes the incoming one with the weight it has. */
            s->from_level = s->level;
            s->level = target;
            s->fade_ms = crossfade_ms - s->fade_ms;
            return;
        }
        /* A third level. A selection lists two levels, and handing either one's weight to
         * the target at once would be a jump; so the two settle first: the lighter one
         * fades out at the fade's own rate (the heavier one takes its weight), then the
         * target fades in from the heavier. The target is derived again every step, so it
         * starts once the settling ends, at most crossfade_ms / 2 later. A drawn level
         * fading in from the last one (nothing, in the frame) goes on fading in however
         * light, when the target is drawn too (one fading out toward nothing has turned
         * back above): the target then starts at most crossfade_ms later. */
        bool keep_drawn = target != last && s->from_level == last;
        if (s->fade_ms <= 0.0f) {
            s->level = target; /* the incoming level has no weight yet: nothing to settle */
        } else if (!keep_drawn && s->fade_ms < crossfade_ms - s->fade_ms) {
            /* The outgoing level is the heavier one: it turns back, as in a reversal. */
            uint32_t lighter = s->level;
            s->level = s->from_level;
            s->from_level = lighter;
            s->fade_ms = crossfade_ms - s->fade_ms;
        }
        return;
    }
    s->from_level = s->level;
    s->level = target;
    s->fade_ms = 0.0f;
    s->flags |= SELECTOR_FADING;
}

static void selector_output(const rv_lod_selector *s, float crossfade_ms, rv_lod_selection *out)
{
    rv_lod_selection sel;
    if ((s->flags & SELECTOR_FADING) && crossfade_ms > 0.0f) {
        float w = s->fade_ms / crossfade_ms;
        w = w < 0.0f ? 0.0f : (w > 1.0f ? 1.0f : w);
        sel.levels[0] = s->level;
        sel.levels[1] = s->from_level;
        sel.weights[0] = w;
        sel.weights[1] = 1.0f - w;
        sel.count = 2;
    } else {
        sel.levels[0] = sel.levels[1] = s->level;
        sel.weights[0] = 1.0f;
        sel.weights[1] = 0.0f;
        sel.count = 1;
    }
    *out = sel;
}

rv_result rv_lod_selector_update(rv_lod_selector *selector, const rv_lod_ladder *ladder,
                                 const rv_lod_desc *desc, const rv_lod_view *view,
                                 const float center[3], float radius, float dt_ms,
                                 rv_lod_selection *out)
{
    if (!selector || !out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_lod_check_ladder(ladder));
    rv_lod_desc config;
    RVI_TRY(rvi_lod_resolve_desc(desc, &config));
    RVI_TRY(rvi_lod_check_view(view));
    RVI_TRY(rvi_lod_check_sphere(center, radius));
    if (!isfinite(dt_ms))
        return RV_ERR_NOT_FINITE;
    if (dt_ms < 0.0f)
        return RV_ERR_INVALID_ARG;
    /* The state is the host's memory: one no update can have left is refused. */
    rv_lod_selector s = *selector;
    uint32_t known = SELECTOR_STARTED | SELECTOR_FADING;
    if ((s.flags & ~known) || ((s.flags & SELECTOR_FADING) && !(s.flags & SELECTOR_STARTED)) ||
        !isfinite(s.fade_ms) || s.fade_ms < 0.0f || s.level > RV_LOD_MAX_THRESHOLDS ||
        s.from_level > RV_LOD_MAX_THRESHOLDS)
        return RV_ERR_INVALID_ARG;
    /* Levels this ladder does not have (the host gave the object another ladder): start
     * over, as a node does when its ladder is replaced. */
    if (s.level > ladder->count || s.from_level > ladder->count)
        s.flags = 0;
    lod_candidates c = candidates_for(rvi_lod_biased_angle(center, radius, view, &config), ladder, &config);
    selector_step(&s, &c, ladder->count, dt_ms, config.crossfade_ms);
    selector_output(&s, config.crossfade_ms, out);
    *selector = s;
    return RV_OK;
}

/* ---- the world's LOD state ----------------------------------------------------------- */

typedef struct lod_record {
    uint32_t node_index;    /* first: the node table's key */
    float nothing_sq;       /* the cutoff of this ladder under the world's configuration */
    rv_lod_ladder ladder;
    rv_lod_selector selector;
    double last_clock_ms;   /* LOD clock at the node's previous selection */
    /* The band: while the sphere's radius is band_r, every squared eye distance strictly
     * between band_lo_sq and band_hi_sq gives the candidates in band (band_update). Empty
     * (0, 0) until a perspective selection computes one. */
    float band_lo_sq, band_hi_sq, band_r;
    uint8_t band[3];        /* candidates_for's plain, finer, coarser there */
} lod_record;

typedef struct lod_state {
    rv_lod_desc config;     /* resolved */
    double clock_ms;        /* sum of every rv_lod_advance dt */
    double frame_clock_ms;  /* the clock of the latest frame's LOD pass */
    bool pass_due;          /* the clock advanced (a frame began) since that pass */
    double fade_end_ms;     /* no node fade runs past this clock */
    rvi_node_table table;   /* lod_record per node with a ladder; per slot: its float
                               cutoff (rvi_lod_cutoff) */
} lod_state;

static void lod_state_destroy(rv_world *world, void *state)
{
    lod_state *st = state;
    rvi_node_table_free(&world->heap, &st->table, sizeof(lod_record));
    rvi_free(&world->heap, st, sizeof *st);
}

/* sin^2 of the half angle below which a sphere stays at "nothing" once there: the last
 * threshold reached with the finer hysteresis (candidates_for's finer level is the count
 * exactly when angle < t_last (1 + h) REACH, and a selector at the count moves only
 * finer), through angle = 2 asin(r / d) bias, lowered by 1e-5 so that the float test
 * r^2 < d^2 k (rounding error about 1e-6 at most) implies the double one. */
static float nothing_sq_of(const rv_lod_ladder *ladder, const rv_lod_desc *config)
{
    double h = config->hysteresis > 0.0f ? config->hysteresis : 0.0;
    double half = ladder->thresholds[ladder->count - 1] * (1.0 + h) * RVI_LOD_REACH / (2.0 * config->bias);
    double s = half >= RVI_LOD_PI / 2 ? 1.0 : sin(half);
    return (float)(s * s * (1.0 - 1e-5));
}

/* The node's cutoff: its sphere cannot leave "nothing" while it looks smaller than the
 * record's angle, when its selector rests there (started, no fade running). */
static void update_cutoff(lod_state *st, const lod_record *rec)
{
    const rv_lod_selector *s = &rec->selector;
    bool resting = (s->flags & SELECTOR_STARTED) && !(s->flags & SELECTOR_FADING) && s->level >= rec->ladder.count;
    float *cutoff = rvi_node_table_slot_data(&st->table);
    cutoff[rec->node_index] = resting ? rec->nothing_sq : 0.0f;
}

static void remove_record(rv_world *world, lod_state *st, uint32_t node_index)
{
    if (rvi_node_table_remove(&st->table, sizeof(lod_record), node_index)) {
        world->scene.flags[node_index] &= ~(uint32_t)RVI_NODE_HAS_LOD;
        world->scene.edits++;
        ((float *)rvi_node_table_slot_data(&st->table))[node_index] = 0.0f;
    }
}

static void lod_node_destroyed(rv_world *world, void *state, uint32_t node_index)
{
    remove_record(world, state, node_index);
}

/* A fresh state, not yet registered (register with lod_state_register once nothing can
 * fail any more, so a failed call leaves the world without it). */
static rv_result lod_state_new(rv_world *world, lod_state **out)
{
    rv_lod_desc config;
    RVI_TRY(rvi_lod_resolve_desc(&world->desc.lod, &config));
    lod_state *st = rvi_alloc(&world->heap, sizeof *st);
    if (!st)
        return RV_ERR_OUT_OF_MEMORY;
    memset(st, 0, sizeof *st);
    st->config = config;
    st->table.slot_bytes = sizeof(float);
    *out = st;
    return RV_OK;
}

static void lod_state_register(rv_world *world, lod_state *st)
{
    rvi_module_hooks hooks = { st, lod_state_destroy, lod_node_destroyed };
    rvi_world_register_module(world, RVI_MODULE_LOD, &hooks);
}

static rv_result lod_state_get(rv_world *world, lod_state **out)
{
    lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    if (!st) {
        RVI_TRY(lod_state_new(world, &st));
        lod_state_register(world, st);
    }
    *out = st;
    return RV_OK;
}

rv_result rvi_lod_world_desc(const rv_world *world, rv_lod_desc *out)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    if (st) {
        *out = st->config;
        return RV_OK;
    }
    return rvi_lod_resolve_desc(&world->desc.lod, out);
}

rv_result rv_lod_set_desc(rv_world *world, const rv_lod_desc *desc)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rv_lod_desc config;
    RVI_TRY(rvi_lod_resolve_desc(desc, &config));
    lod_state *st;
    RVI_TRY(lod_state_get(world, &st));
    st->config = config;
    world->scene.edits++;
    lod_record *recs = RVI_VEC_PTR(st->table.records, lod_record);
    for (uint32_t k = 0; k < st->table.records.count; k++) {
        recs[k].nothing_sq = nothing_sq_of(&recs[k].ladder, &config);
        recs[k].band_lo_sq = recs[k].band_hi_sq = 0.0f;
        update_cutoff(st, &recs[k]);
    }
    return RV_OK;
}

rv_result rv_lod_get_desc(const rv_world *world, rv_lod_desc *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    return rvi_lod_world_desc(world, out);
}

rv_result rv_lod_for_node(const rv_world *world, rv_node node, const rv_lod_view *view,
                          const rv_lod_ladder *ladder, uint32_t *out_level)
{
    if (!world || !out_level)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    RVI_TRY(rvi_lod_check_ladder(ladder));
    RVI_TRY(rvi_lod_check_view(view));
    rv_lod_desc config;
    RVI_TRY(rvi_lod_world_desc(world, &config));
    const float *sphere = world->scene.world_sphere[index];
    if (sphere[3] < 0.0f)
        return RV_ERR_BAD_STATE;
    uint32_t level = rvi_lod_level_for_angle(rvi_lod_biased_angle(sphere, sphere[3], view, &config), ladder, 1.0);
    *out_level = rvi_lod_clamp_finest(level, config.finest_level, ladder->count);
    return RV_OK;
}

rv_result rv_node_set_lod_ladder(rv_world *world, rv_node node, const rv_lod_ladder *ladder)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    if (!ladder) {
        if (st)
            remove_record(world, st, index);
        return RV_OK;
    }
    RVI_TRY(rvi_lod_check_ladder(ladder));
    lod_record fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.node_index = index;
    fresh.ladder = *ladder;
    /* Unused entries are zero whatever the host left there. */
    for (uint32_t i = ladder->count; i < RV_LOD_MAX_THRESHOLDS; i++)
        fresh.ladder.thresholds[i] = 0.0f;
    lod_record *existing = st ? rvi_node_table_find(&st->table, sizeof(lod_record), index) : NULL;
    if (existing) {
        fresh.last_clock_ms = st->clock_ms;
        fresh.nothing_sq = nothing_sq_of(&fresh.ladder, &st->config);
        *existing = fresh;
        update_cutoff(st, existing);
        world->scene.edits++;
        return RV_OK;
    }
    /* Everything that can fail happens before anything is changed. */
    bool created = false;
    if (!st) {
        RVI_TRY(lod_state_new(world, &st));
        created = true;
    }
    rvi_node_table_room room;
    rv_result r = rvi_node_table_prepare(&world->heap, &st->table, sizeof(lod_record), index, &room);
    if (r != RV_OK) {
        if (created)
            lod_state_destroy(world, st);
        return r;
    }
    fresh.last_clock_ms = st->clock_ms;
    fresh.nothing_sq = nothing_sq_of(&fresh.ladder, &st->config);
    update_cutoff(st, rvi_node_table_add(&world->heap, &st->table, sizeof(lod_record), &fresh, &room));
    world->scene.flags[index] |= RVI_NODE_HAS_LOD;
    world->scene.edits++;
    if (created)
        lod_state_register(world, st);
    return RV_OK;
}

rv_result rv_node_get_lod_ladder(const rv_world *world, rv_node node, rv_lod_ladder *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    const lod_record *rec = st ? rvi_node_table_find(&st->table, sizeof(lod_record), index) : NULL;
    if (!rec)
        return RV_ERR_NOT_FOUND;
    *out = rec->ladder;
    return RV_OK;
}

rv_result rvi_lod_reserve(rv_world *world)
{
    lod_state *st;
    return lod_state_get(world, &st);
}

rv_result rvi_lod_advance(rv_world *world, float dt_ms)
{
    if (!isfinite(dt_ms))
        return RV_ERR_NOT_FINITE;
    if (dt_ms < 0.0f)
        return RV_ERR_INVALID_ARG;
    lod_state *st;
    RVI_TRY(lod_state_get(world, &st));
    st->clock_ms += dt_ms;
    st->pass_due = true;
    return RV_OK;
}

rv_result rv_lod_advance(rv_world *world, float dt_ms)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    return rvi_lod_advance(world, dt_ms);
}

/* The band of the candidates at eye distance d (perspective). For a threshold's angle x
 * (t f REACH, f = 1, 1 + h or 1 - h as candidates_for forms them), angle < x exactly when
 * d > D = r / sin(x / (2 bias)) (D = r when x / (2 bias) >= pi / 2), and each candidate
 * counts the thresholds whose D lies below d. So between the nearest D below d (at least
 * r) and the nearest above it no candidate changes. The band is that interval shrunk by
 * 1e-5 of itself at each end, far beyond the rounding of asin, sin, the products and the
 * squares (about 1e-15 each; the float squares are rounded inward), so a distance inside
 * it gives candidates_for's answer bit for bit without the arcsine. */
static void band_update(lod_record *rec, const rv_lod_desc *config, double angle, double d, float r,
                        lod_candidates c)
{
    rec->band_lo_sq = rec->band_hi_sq = 0.0f;
    if (!(r >= 0.0f) || !(r < INFINITY) || !(d > r) || !(d < INFINITY))
        return;
    double h = config->hysteresis > 0.0f ? config->hysteresis : 0.0;
    double factor[3] = { 1.0, 1.0 + h, 1.0 - h }, lo = r, hi = INFINITY;
    uint32_t n = rec->ladder.count;
    for (int f = 0; f < 3; f++) {
        /* D grows with i (the thresholds descend), so only the thresholds on either side
         * of the count the angle reaches are nearest; should rounding put d on the wrong
         * side of one, the check below leaves the band empty. */
        uint32_t reached = 0;
        while (reached < n && angle < (double)rec->ladder.thresholds[reached] * factor[f] * RVI_LOD_REACH)
            reached++;
        for (uint32_t i = reached ? reached - 1 : 0; i < n && i <= reached; i++) {
            double x = (double)rec->ladder.thresholds[i] * factor[f] * RVI_LOD_REACH;
            double half = x / (2.0 * (double)config->bias);
            double at = half >= RVI_LOD_PI / 2 ? (double)r : (double)r / sin(half);
            if (at < d)
                lo = at > lo ? at : lo;
            else
                hi = at < hi ? at : hi;
        }
    }
    lo *= 1.0 + 1e-5;
    hi *= 1.0 - 1e-5;
    if (!(lo < d && d < hi))
        return;
    float lo_sq = nextafterf((float)(lo * lo), INFINITY);
    float hi_sq = hi == INFINITY ? INFINITY : hi * hi < 3.0e38 ? nextafterf((float)(hi * hi), 0.0f) : 3.0e38f;
    if (!(lo_sq < hi_sq))
        return;
    rec->band_lo_sq = lo_sq;
    rec->band_hi_sq = hi_sq;
    rec->band_r = r;
    rec->band[0] = (uint8_t)c.plain;
    rec->band[1] = (uint8_t)c.finer;
    rec->band[2] = (uint8_t)c.coarser;
}

rv_result rvi_lod_select_node(rv_world *world, uint32_t node_index, const rv_lod_view *view, rv_lod_selection *out,
                              uint32_t *out_count, double *fade_end_ms, bool snap)
{
    lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    lod_record *rec = st ? rvi_node_table_find(&st->table, sizeof(lod_record), node_index) : NULL;
    if (!rec)
        return RV_ERR_NOT_FOUND;
    RVI_TRY(rvi_lod_check_view(view));
    const float *sphere = world->scene.world_sphere[node_index];
    if (sphere[3] < 0.0f)
        return RV_ERR_BAD_STATE;
    lod_candidates c;
    if (view->orthographic) {
        c = candidates_for(rvi_lod_biased_angle(sphere, sphere[3], view, &st->config), &rec->ladder, &st->config);
    } else {
        double d2 = rvi_lod_distance_sq(sphere, view); /* the biased angle's, to the bit */
        if (sphere[3] == rec->band_r && d2 > (double)rec->band_lo_sq && d2 < (double)rec->band_hi_sq) {
            c.plain = rec->band[0];
            c.finer = rec->band[1];
            c.coarser = rec->band[2];
        } else {
            double angle = rvi_lod_biased_angle(sphere, sphere[3], view, &st->config);
            c = candidates_for(angle, &rec->ladder, &st->config);
            band_update(rec, &st->config, angle, sqrt(d2), sphere[3], c);
        }
    }
    float dt = (float)(st->clock_ms - rec->last_clock_ms);
    rec->last_clock_ms = st->clock_ms;
    float crossfade = st->config.crossfade_ms;
    /* An unbounded sphere (placement unknown, RVI_NODE_STALE, at or below the node) is
     * drawn whole at the level it targets, the finest allowed, for as long as it lasts:
     * a fade in from a coarser level or "nothing" would draw it faint. The selector snaps
     * there, so once placed again it fades from a level it was drawn at. */
    if (!(sphere[3] < INFINITY) || snap)
        crossfade = -1.0f;
    selector_step(&rec->selector, &c, rec->ladder.count, dt, crossfade);
    selector_output(&rec->selector, crossfade, out);
    update_cutoff(st, rec);
    if (out->count == 2) {
        double end = st->clock_ms + (double)(crossfade - rec->selector.fade_ms);
        if (end > *fade_end_ms)
            *fade_end_ms = end;
    }
    *out_count = rec->ladder.count;
    return RV_OK;
}

void rvi_lod_note_fade_end(rv_world *world, double fade_end_ms)
{
    lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    if (st && fade_end_ms > st->fade_end_ms)
        st->fade_end_ms = fade_end_ms;
}

rv_result rvi_lod_select_index(rv_world *world, uint32_t node_index, const rv_lod_view *view,
                               rv_lod_selection *out)
{
    uint32_t count, slots;
    double fade_end = 0.0;
    const float *cutoff = rvi_lod_cutoff(world, &slots);
    bool resting = cutoff && node_index < slots && cutoff[node_index] > 0.0f;
    RVI_TRY(rvi_lod_select_node(world, node_index, view, out, &count, &fade_end, false));
    rvi_lod_note_fade_end(world, fade_end);
    if (resting && !(cutoff[node_index] > 0.0f))
        world->scene.edits++; /* what the frame keeps about the node's subtree goes stale */
    return RV_OK;
}

rv_result rvi_lod_level_of(const rv_world *world, uint32_t node_index, const rv_lod_view *view, bool held,
                           bool unseen, uint32_t *out_level, uint32_t *out_count)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    const lod_record *rec = st ? rvi_node_table_find(&st->table, sizeof(lod_record), node_index) : NULL;
    if (!rec)
        return RV_ERR_NOT_FOUND;
    RVI_TRY(rvi_lod_check_view(view));
    const float *sphere = world->scene.world_sphere[node_index];
    if (sphere[3] < 0.0f)
        return RV_ERR_BAD_STATE;
    /* candidates_for's plain level is rvi_lod_level_for_angle's at factor 1, clamped. */
    lod_candidates c = candidates_for(rvi_lod_biased_angle(sphere, sphere[3], view, &st->config), &rec->ladder,
                                      &st->config);
    /* A selector's level lies in 0 .. count (the ladder's "nothing" included); held while
     * this view's hysteresis would keep it there, as a selector does. */
    const rv_lod_selector *sel = &rec->selector;
    bool latest = rec->last_clock_ms == st->frame_clock_ms;
    rv_lod_selector ahead;
    if (held && st->pass_due && (sel->flags & SELECTOR_STARTED)) {
        /* Between a frame's begin and its LOD pass, the node's latest selection is an
         * earlier frame's: hold what this frame's is about to be instead, the selector's
         * step made on a copy (as rvi_lod_select_node would make it, snapping a node
         * resting at "nothing" whose place the last frame did not see). */
        ahead = *sel;
        bool resting = !(sel->flags & SELECTOR_FADING) && sel->level >= rec->ladder.count;
        float crossfade = sphere[3] < INFINITY && !(unseen && resting) ? st->config.crossfade_ms : -1.0f;
        selector_step(&ahead, &c, rec->ladder.count, (float)(st->clock_ms - rec->last_clock_ms), crossfade);
        sel = &ahead;
        latest = true;
    }
    uint32_t level = sel->level, count = rec->ladder.count;
    bool fading = (sel->flags & SELECTOR_FADING) && st->config.crossfade_ms > 0.0f && sel->from_level <= count;
    /* A running fade keeps its two levels whatever the camera now wants (a third level
     * waits, as in the selector): held whatever the band while the node's latest selection
     * is the latest frame's. */
    bool hold = held && (sel->flags & SELECTOR_STARTED) && level <= count &&
                ((c.finer >= level && c.coarser <= level) || (fading && latest));
    /* While a fade runs the selector's camera draws two levels: the heavier one, and a drawn
     * one over "nothing" (a caster fading in or out keeps its shadow while it is seen). */
    if (hold && fading) {
        /* As the selection lists them: levels[0] incoming, levels[1] outgoing. A level
         * with no weight (a fade's first frame, or one reversed there) is not drawn. */
        rv_lod_selection o;
        selector_output(sel, st->config.crossfade_ms, &o);
        bool in = o.levels[0] < count && o.weights[0] > 0.0f, out = o.levels[1] < count && o.weights[1] > 0.0f;
        level = in && out ? (o.weights[0] < o.weights[1] ? o.levels[1] : o.levels[0])
                : in      ? o.levels[0]
                : out     ? o.levels[1]
                          : count;
    }
    *out_level = hold ? level : c.plain;
    *out_count = rec->ladder.count;
    return RV_OK;
}

bool rvi_lod_drawn_whole(const rv_world *world, uint32_t node_index, const rv_lod_view *view)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    const lod_record *rec = st ? rvi_node_table_find(&st->table, sizeof(lod_record), node_index) : NULL;
    if (!rec)
        return true;
    if (rvi_lod_check_view(view) != RV_OK)
        return false;
    const float *sphere = world->scene.world_sphere[node_index];
    if (sphere[3] < 0.0f)
        return true;
    /* rvi_lod_select_node's step on a copy: the band it may read is a cache of these
     * candidates, to the bit. The frame may still snap a node resting at "nothing" to a
     * drawn level: that is drawn, and "false" here only errs toward hiding nothing. */
    lod_candidates c = candidates_for(rvi_lod_biased_angle(sphere, sphere[3], view, &st->config), &rec->ladder,
                                      &st->config);
    float crossfade = sphere[3] < INFINITY ? st->config.crossfade_ms : -1.0f;
    rv_lod_selector s = rec->selector;
    selector_step(&s, &c, rec->ladder.count, (float)(st->clock_ms - rec->last_clock_ms), crossfade);
    rv_lod_selection sel;
    selector_output(&s, crossfade, &sel);
    uint32_t nothing = rec->ladder.count;
    return sel.levels[0] < nothing && (sel.count == 1 || sel.levels[1] < nothing);
}

void rvi_lod_note_frame_selection(rv_world *world)
{
    lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    if (st) {
        st->frame_clock_ms = st->clock_ms;
        st->pass_due = false;
    }
}

bool rvi_lod_frame_pass_due(const rv_world *world)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    return st && st->pass_due;
}

const float *rvi_lod_cutoff(const rv_world *world, uint32_t *out_count)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    *out_count = st ? st->table.capacity : 0;
    return st ? rvi_node_table_slot_data(&st->table) : NULL;
}

const rvi_node_table *rvi_lod_records(const rv_world *world, size_t *out_record_bytes)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    *out_record_bytes = sizeof(lod_record);
    return st ? &st->table : NULL;
}

rv_result rv_node_lod_select(rv_world *world, rv_node node, const rv_lod_view *view,
                             rv_lod_selection *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    uint32_t index;
    RVI_TRY(rvi_node_index(&world->scene, node, &index));
    return rvi_lod_select_index(world, index, view, out);
}

bool rvi_lod_fading(const rv_world *world)
{
    const lod_state *st = rvi_world_module(world, RVI_MODULE_LOD);
    return st && st->clock_ms < st->fade_end_ms;
}
