/* Streaming grid (docs/design.md §6): a regular grid of pages over the XZ plane, and the
 * decision of which of its cells this frame's sources touch and request.
 *
 * Distances are measured to the cell's rectangle, not its centre: a source in the corner
 * of a large cell is at distance 0 from it, so the load boundary does not move as the
 * source strafes along a cell. An update visits only the cells of each source's square
 * (clipped to the grid), so its cost never depends on the grid's size. Cell geometry is
 * computed in double, so bounds_of, distance_to and update agree on every cell. */
#include "grid.h"
#include "residency.h"
#include "core/check.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Cells an update may reserve beyond what it creates (about 3 MiB of page records). */
#define RESERVE_SLACK 16384u

struct rv_grid {
    rvi_heap own_heap;
    rvi_heap *heap;
    rv_grid_desc desc; /* resolved */
    double origin_x, origin_z, cell;
    rv_grid_stats stats;
};

static rv_result resolve_desc(const rv_grid_desc *in, rv_grid_desc *out)
{
    rv_grid_desc d = *in;
    if (!isfinite(d.origin[0]) || !isfinite(d.origin[1]) || !isfinite(d.cell_size) || !isfinite(d.lead) ||
        !isfinite(d.eye_radius))
        return RV_ERR_NOT_FINITE;
    if (d.cell_size <= 0 || d.count_x == 0 || d.count_z == 0 || d.lead < 0)
        return RV_ERR_INVALID_ARG;
    if ((uint64_t)d.count_x * d.count_z > UINT32_MAX)
        return RV_ERR_CAPACITY;
    double far_x = (double)d.origin[0] + (double)d.count_x * d.cell_size;
    double far_z = (double)d.origin[1] + (double)d.count_z * d.cell_size;
    if (fabs(far_x) > FLT_MAX || fabs(far_z) > FLT_MAX)
        return RV_ERR_NOT_FINITE;
    /* A cell must be at least as wide as float's spacing at the grid's largest coordinate,
     * or neighbouring cells would share their float bounds (rv_grid_bounds_of). */
    double reach = fmax(fmax(fabs((double)d.origin[0]), fabs(far_x)), fmax(fabs((double)d.origin[1]), fabs(far_z)));
    float top = (float)reach;
    if ((double)nextafterf(top, INFINITY) - (double)top > (double)d.cell_size)
        return RV_ERR_INVALID_ARG;
    if (d.eye_radius == 0)
        d.eye_radius = 4 * d.cell_size;
    *out = d;
    return RV_OK;
}

/* A grid's geometry from a resolved desc (no heap). */
static void set_geometry(rv_grid *g, const rv_grid_desc *d)
{
    memset(g, 0, sizeof *g);
    g->desc = *d;
    g->origin_x = d->origin[0];
    g->origin_z = d->origin[1];
    g->cell = d->cell_size;
}

static rv_result create(rvi_heap *external, const rv_grid_desc *desc, rv_grid **out)
{
    if (!desc || !out)
        return RV_ERR_INVALID_ARG;
    rv_grid_desc d;
    RVI_TRY(resolve_desc(desc, &d));
    rvi_heap own;
    rvi_heap_init(&own, &d.allocator);
    rv_grid *g = rvi_alloc(external ? external : &own, sizeof *g);
    if (!g)
        return RV_ERR_OUT_OF_MEMORY;
    set_geometry(g, &d);
    g->own_heap = own;
    g->heap = external ? external : &g->own_heap;
    *out = g;
    return RV_OK;
}

rv_result rvi_grid_create_in(rvi_heap *heap, const rv_grid_desc *desc, rv_grid **out)
{
    return create(heap, desc, out);
}

rv_result rvi_grid_check_for_world(const rv_grid_desc *desc, const rv_stream_source *sources, uint32_t n,
                                   float *out_eye_radius)
{
    if (!desc)
        return RV_ERR_INVALID_ARG;
    rv_grid_desc d;
    RVI_TRY(resolve_desc(desc, &d));
    rv_grid g;
    set_geometry(&g, &d);
    float eye = d.eye_radius < 0 ? -1.0f : d.eye_radius;
    if (!rvi_grid_sources_fit(&g, sources, n, eye))
        return RV_ERR_CAPACITY;
    *out_eye_radius = eye;
    return RV_OK;
}

rv_result rv_grid_create(const rv_grid_desc *desc, rv_grid **out)
{
    return create(NULL, desc, out);
}

void rv_grid_destroy(rv_grid *g)
{
    if (!g)
        return;
    if (g->heap == &g->own_heap) {
        rvi_heap h = g->own_heap;
        rvi_free(&h, g, sizeof *g);
    } else {
        rvi_free(g->heap, g, sizeof *g);
    }
}

rv_grid_desc rv_grid_get_desc(const rv_grid *g)
{
    rv_grid_desc none = {0};
    return g ? g->desc : none;
}

rv_grid_stats rv_grid_get_stats(const rv_grid *g)
{
    rv_grid_stats none = {0};
    return g ? g->stats : none;
}

static inline bool in_range(const rv_grid *g, uint32_t x, uint32_t z)
{
    return x < g->desc.count_x && z < g->desc.count_z;
}

rv_result rv_grid_key_of(const rv_grid *g, uint32_t x, uint32_t z, rv_page_key *out)
{
    if (!g || !out)
        return RV_ERR_INVALID_ARG;
    if (!in_range(g, x, z))
        return RV_ERR_NOT_FOUND;
    out->source = g->desc.source;
    out->index = z * g->desc.count_x + x;
    return RV_OK;
}

rv_result rv_grid_cell_of(const rv_grid *g, uint32_t index, uint32_t *out_x, uint32_t *out_z)
{
    if (!g || !out_x || !out_z)
        return RV_ERR_INVALID_ARG;
    if ((uint64_t)index >= (uint64_t)g->desc.count_x * g->desc.count_z)
        return RV_ERR_NOT_FOUND;
    *out_x = index % g->desc.count_x;
    *out_z = index / g->desc.count_x;
    return RV_OK;
}

rv_result rv_grid_bounds_of(const rv_grid *g, uint32_t x, uint32_t z, float out_min[2], float out_max[2])
{
    if (!g || !out_min || !out_max)
        return RV_ERR_INVALID_ARG;
    if (!in_range(g, x, z))
        return RV_ERR_NOT_FOUND;
    out_min[0] = (float)(g->origin_x + x * g->cell);
    out_min[1] = (float)(g->origin_z + z * g->cell);
    out_max[0] = (float)(g->origin_x + (x + 1.0) * g->cell);
    out_max[1] = (float)(g->origin_z + (z + 1.0) * g->cell);
    return RV_OK;
}

/* Distance along one axis from p to the span [lo, lo + cell]: 0 inside. */
static inline double axis_gap(double p, double lo, double cell)
{
    if (p < lo)
        return lo - p;
    double hi = lo + cell;
    return p > hi ? p - hi : 0.0;
}

static inline double cell_distance(const rv_grid *g, uint32_t x, uint32_t z, double px, double pz)
{
    double dx = axis_gap(px, g->origin_x + x * g->cell, g->cell);
    double dz = axis_gap(pz, g->origin_z + z * g->cell, g->cell);
    return sqrt(dx * dx + dz * dz);
}

rv_result rv_grid_distance_to(const rv_grid *g, uint32_t x, uint32_t z, const float position[3],
                              float *out_distance)
{
    if (!g || !position || !out_distance)
        return RV_ERR_INVALID_ARG;
    if (!in_range(g, x, z))
        return RV_ERR_NOT_FOUND;
    if (!rvi_finite_n(position, 3))
        return RV_ERR_NOT_FINITE;
    *out_distance = (float)cell_distance(g, x, z, position[0], position[2]);
    return RV_OK;
}

/* Whether a cell's gap along one axis keeps it within reach, in the float the header's
 * distance is: the cells of the square are exactly those within reach along both axes. */
static inline bool axis_within(double p, double origin, double cell, int64_t k, float reach)
{
    double gap = axis_gap(p, origin + (double)k * cell, cell);
    return (float)sqrt(gap * gap) <= reach;
}

/* The cells [lo, hi] of one axis whose closed span [i, i + 1] * cell comes within reach of
 * p (a span ending exactly at p - reach is in); false when none. The divisions find them
 * but round; the ends are then settled by axis_within, the test visit_cells makes (the
 * cells within reach along an axis are consecutive, so the ends move a cell or so). */
static bool axis_cells(double p, float reach, double origin, double cell, uint32_t count, uint32_t *lo,
                       uint32_t *hi)
{
    double first = ceil((p - reach - origin) / cell) - 1;
    double last = floor((p + reach - origin) / cell);
    if (last < -1 || first > (double)count)
        return false;
    int64_t a = first < 0 ? 0 : (int64_t)first, b = last > (double)count - 1 ? (int64_t)count - 1 : (int64_t)last;
    while (a > 0 && axis_within(p, origin, cell, a - 1, reach))
        a--;
    while (b + 1 < (int64_t)count && axis_within(p, origin, cell, b + 1, reach))
        b++;
    while (a <= b && !axis_within(p, origin, cell, a, reach))
        a++;
    while (b >= a && !axis_within(p, origin, cell, b, reach))
        b--;
    if (a > b)
        return false;
    *lo = (uint32_t)a;
    *hi = (uint32_t)b;
    return true;
}

typedef struct source_square {
    uint32_t x0, x1, z0, z1;
} source_square;

/* A source's reach as the header states it: radius + lead, summed in float. A cell is
 * within it when its distance, rounded to float as rv_grid_distance_to returns it, is. */
static inline float reach_of(const rv_grid *g, const rv_stream_source *s)
{
    return s->radius + g->desc.lead;
}

static bool square_of(const rv_grid *g, const rv_stream_source *s, source_square *sq)
{
    float reach = reach_of(g, s);
    return axis_cells(s->position[0], reach, g->origin_x, g->cell, g->desc.count_x, &sq->x0, &sq->x1) &&
           axis_cells(s->position[2], reach, g->origin_z, g->cell, g->desc.count_z, &sq->z0, &sq->z1);
}

/* The most cells a source of this radius can put in its square: along each axis, a span of
 * 2 * reach meets at most floor(2 * reach / cell) + 2 cells (one more for the float rounding
 * of the gaps axis_cells tests), and never more than the grid has. */
static uint64_t max_square_cells(const rv_grid *g, float radius)
{
    double span = floor(2.0 * (double)(radius + g->desc.lead) / g->cell) + 3.0;
    double nx = fmin(span, (double)g->desc.count_x), nz = fmin(span, (double)g->desc.count_z);
    return (uint64_t)nx * (uint64_t)nz;
}

bool rvi_grid_sources_fit(const rv_grid *g, const rv_stream_source *sources, uint32_t n, float eye_radius)
{
    uint64_t cells = eye_radius >= 0 ? max_square_cells(g, eye_radius) : 0;
    for (uint32_t s = 0; s < n && cells <= RVI_GRID_MAX_VISIT; s++)
        cells += max_square_cells(g, sources[s].radius);
    return cells <= RVI_GRID_MAX_VISIT;
}

/* Visits every cell within reach of a source. With residency_apply, wants each of them and
 * counts into *st; without, only counts (into the return value) the visits of cells the
 * residency does not know yet: an upper bound on the pages the update will create. */
static uint64_t visit_cells(const rv_grid *g, const rv_stream_source *sources, uint32_t n, rv_residency *residency,
                            bool apply, uint64_t serial, rv_grid_stats *st)
{
    uint64_t unknown = 0;
    uint32_t count_x = g->desc.count_x;
    for (uint32_t s = 0; s < n; s++) {
        const rv_stream_source *src = &sources[s];
        source_square sq;
        if (!square_of(g, src, &sq))
            continue;
        double px = src->position[0], pz = src->position[2];
        float radius = src->radius, reach = reach_of(g, src);
        for (uint32_t z = sq.z0; z <= sq.z1; z++) {
            double dz = axis_gap(pz, g->origin_z + z * g->cell, g->cell);
            for (uint32_t x = sq.x0; x <= sq.x1; x++) {
                double dx = axis_gap(px, g->origin_x + x * g->cell, g->cell);
                float d = (float)sqrt(dx * dx + dz * dz);
                if (d > reach)
                    continue;
                rv_page_key key = { g->desc.source, z * count_x + x };
                if (!apply) {
                    unknown += !rvi_residency_knows(residency, key);
                    continue;
                }
                bool new_request, new_touch;
                rvi_residency_want_cell(residency, key, d, d <= radius, serial, &new_request, &new_touch);
                st->requested_cells += new_request;
                st->touched_cells += new_touch;
            }
        }
    }
    return unknown;
}

rv_result rv_grid_update(rv_grid *g, const rv_stream_source *sources, uint32_t n, rv_residency *residency)
{
    if (!g || !residency || (!sources && n > 0))
        return RV_ERR_INVALID_ARG;
    /* Validate everything and size the work before changing anything. */
    uint64_t cells = 0;
    for (uint32_t s = 0; s < n; s++) {
        const rv_stream_source *src = &sources[s];
        if (!rvi_finite_n(src->position, 3) || !isfinite(src->radius))
            return RV_ERR_NOT_FINITE;
        if (src->radius < 0)
            return RV_ERR_INVALID_ARG;
        source_square sq;
        if (square_of(g, src, &sq))
            cells += ((uint64_t)sq.x1 - sq.x0 + 1) * ((uint64_t)sq.z1 - sq.z0 + 1);
    }
    if (cells > RVI_GRID_MAX_VISIT)
        return RV_ERR_CAPACITY;
    if (!rvi_residency_frame_begun(residency))
        return RV_ERR_BAD_STATE;
    /* Every visited cell could be a page the residency has not seen: reserve that much, so
     * the update cannot fail half done. A large square (mostly over known pages, frame
     * after frame) would keep that much slack in the table, so past RESERVE_SLACK cells the
     * unknown ones are counted first (one extra lookup per cell) and only they reserved. */
    uint64_t new_pages = cells;
    if (cells > RESERVE_SLACK && !rvi_residency_has_room(residency, cells))
        new_pages = visit_cells(g, sources, n, residency, false, 0, NULL);
    RVI_TRY(rvi_residency_reserve(residency, new_pages));

    rv_grid_stats st = { 0, 0, cells };
    visit_cells(g, sources, n, residency, true, rvi_residency_next_serial(residency), &st);
    g->stats = st;
    return RV_OK;
}
