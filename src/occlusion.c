/* The occlusion buffer object (docs/design.md §4): lifecycle, the frame (begin, adding
 * occluders: boxes and convex solids here, their corners and edges worked out in
 * occlusion_convex.c, meshes in occlusion_mesh.c, all through rvi_occ_push), stats and
 * debug images. The freeze lives in occlusion_freeze.c, the object tests in
 * occlusion_test.c. */
#include "occlusion_shape.h"
#include "occlusion_test.h"
#include "core/check.h"
#include "world.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY_TEXEL (-FLT_MAX)

/* ---- lifecycle ------------------------------------------------------------------------- */

static rv_result resolve_desc(const rv_occlusion_desc *in, rv_occlusion_desc *out)
{
    rv_occlusion_desc d = in ? *in : (rv_occlusion_desc){0};
    if (d.width > RV_OCCLUSION_MAX_SIZE)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(d.min_occluder_texels))
        return RV_ERR_NOT_FINITE;
    if (d.fine_tests > 2 || d.fusion > RV_FUSION_OFF)
        return RV_ERR_INVALID_ARG;
    if (d.min_occluder_texels == 0)
        d.min_occluder_texels = 2;
    else if (d.min_occluder_texels < 0)
        d.min_occluder_texels = 0;
    RVI_TRY(rvi_occ_feed_resolve_desc(&d));
    *out = d;
    return RV_OK;
}

rv_result rvi_occlusion_check_desc(const rv_occlusion_desc *desc)
{
    rv_occlusion_desc resolved;
    return resolve_desc(desc, &resolved);
}

static rv_result create_with(rvi_heap *borrowed, const rv_occlusion_desc *desc, rv_occlusion **out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_occlusion_desc resolved;
    RVI_TRY(resolve_desc(desc, &resolved));
    rvi_heap local;
    rvi_heap *heap = borrowed;
    if (!heap) {
        rvi_heap_init(&local, &resolved.allocator);
        heap = &local;
    }
    rv_occlusion *occ = rvi_alloc(heap, sizeof *occ);
    if (!occ)
        return RV_ERR_OUT_OF_MEMORY;
    memset(occ, 0, sizeof *occ);
    if (borrowed) {
        occ->heap = borrowed;
    } else {
        occ->own_heap = local;
        occ->heap = &occ->own_heap;
    }
    occ->desc = resolved;
    occ->width = resolved.width;
    uint32_t wide = rvi_occ_cpu_wide();
    occ->wide = wide >= 1;
    occ->wide_vl = wide >= 2;
    rv_result fed = rvi_occ_feed_create(occ);
    if (fed != RV_OK) {
        rvi_free(borrowed ? borrowed : &local, occ, sizeof *occ); /* not through the heap inside occ */
        return fed;
    }
    *out = occ;
    return RV_OK;
}

rv_result rv_occlusion_create(const rv_occlusion_desc *desc, rv_occlusion **out)
{
    return create_with(NULL, desc, out);
}

rv_result rvi_occlusion_create_in(rvi_heap *heap, const rv_occlusion_desc *desc, rv_occlusion **out)
{
    if (!heap)
        return RV_ERR_INVALID_ARG;
    return create_with(heap, desc, out);
}

rv_result rvi_occlusion_replace(rv_occlusion *occ, const rv_occlusion_desc *desc)
{
    if (occ->heap == &occ->own_heap)
        return RV_ERR_INVALID_ARG; /* a standalone buffer's heap lives inside it */
    rv_occlusion *fresh;
    RVI_TRY(create_with(occ->heap, desc, &fresh));
    /* Nothing points into a buffer borrowing its heap (the feed's copy of the fields is
     * rebuilt each frame), so the contents move whole: occ becomes the new buffer, and the
     * old contents go with the struct that held the new ones. */
    rv_occlusion old = *occ;
    *occ = *fresh;
    *fresh = old;
    occ->lent = old.lent;
    rvi_occlusion_destroy(fresh);
    return RV_OK;
}

bool rvi_occlusion_desc_equal(const rv_occlusion_desc *a, const rv_occlusion_desc *b)
{
    rv_occlusion_desc x, y;
    if (resolve_desc(a, &x) != RV_OK || resolve_desc(b, &y) != RV_OK)
        return false;
    if (x.width == 0 && y.width == 0)
        return true; /* off is off, whatever else the descs say */
    return x.width == y.width && x.min_occluder_texels == y.min_occluder_texels &&
           x.max_occluders == y.max_occluders && x.feed_max_width == y.feed_max_width &&
           x.feed_max_height == y.feed_max_height && x.feed_max_translation == y.feed_max_translation &&
           x.feed_max_rotation == y.feed_max_rotation && x.feed_discontinuity == y.feed_discontinuity &&
           x.feed_max_age == y.feed_max_age && x.fine_tests == y.fine_tests && x.fusion == y.fusion;
}

static void destroy_world_buffer(rv_world *world, void *state)
{
    (void)world;
    rv_occlusion_destroy(state);
}

rv_result rvi_occlusion_of_world(rv_world *world, rv_occlusion **out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rv_occlusion *occ = rvi_world_module(world, RVI_MODULE_OCCLUSION);
    if (!occ) {
        RVI_TRY(rvi_occlusion_create_in(&world->heap, &world->desc.occlusion, &occ));
        rvi_module_hooks hooks = { occ, destroy_world_buffer, NULL };
        rv_result r = rvi_world_register_module(world, RVI_MODULE_OCCLUSION, &hooks);
        if (r != RV_OK) {
            rv_occlusion_destroy(occ);
            return r;
        }
    }
    *out = occ;
    return RV_OK;
}

void rv_occlusion_destroy(rv_occlusion *occ)
{
    if (occ && !occ->lent)
        rvi_occlusion_destroy(occ);
}

void rvi_occlusion_destroy(rv_occlusion *occ)
{
    if (!occ)
        return;
    rvi_heap *heap = occ->heap;
    rvi_heap own = occ->own_heap;
    bool owned = heap == &occ->own_heap;
    if (owned)
        heap = &own; /* the struct is about to go */
    occ->heap = heap;
    rvi_occ_feed_destroy(occ);
    rvi_free(heap, occ->texels, occ->texel_capacity * sizeof(float));
    rvi_free(heap, occ->row_scratch, occ->row_capacity * sizeof(double));
    rvi_free(heap, occ->row_spans, occ->span_capacity * sizeof(int32_t));
    rvi_free(heap, occ->tile_lo, occ->tile_capacity * sizeof(float));
    rvi_vec_free(heap, &occ->inputs, sizeof(rvi_occ_input));
    rvi_vec_free(heap, &occ->matrices, 16 * sizeof(float));
    rvi_vec_free(heap, &occ->shapes, sizeof(rvi_occ_shape));
    rvi_vec_free(heap, &occ->shape_data, sizeof(uint64_t));
    rvi_vec_free(heap, &occ->items, sizeof(rvi_occ_item));
    rvi_vec_free(heap, &occ->footprints, sizeof(rvi_occ_footprint));
    rvi_vec_free(heap, &occ->order, sizeof(uint64_t));
    rvi_vec_free(heap, &occ->vertices, sizeof(rvi_occ_vertex));
    rvi_vec_free(heap, &occ->tallies, sizeof(rvi_occ_tally));
    rvi_free(heap, occ->convex_scratch, occ->convex_scratch ? rvi_occ_convex_scratch_size() : 0);
    rvi_free(heap, occ->draft, occ->draft ? sizeof *occ->draft : 0);
    rvi_occ_fusion_free(heap, &occ->fusion);
    rvi_occ_outline_free(occ);
    rvi_free(heap, occ, sizeof *occ);
}

rv_alloc_stats rv_occlusion_alloc_stats(const rv_occlusion *occ)
{
    rv_alloc_stats none = {0};
    return occ ? occ->heap->stats : none;
}

rv_occlusion_stats rv_occlusion_get_stats(const rv_occlusion *occ)
{
    rv_occlusion_stats none = {0};
    return occ ? occ->stats : none;
}

uint32_t rv_occlusion_level_count(const rv_occlusion *occ)
{
    return rvi_occlusion_active(occ) ? occ->level_count : 0;
}

/* ---- the frame ------------------------------------------------------------------------- */

/* Forgets the frame (its view, occluders, stats and feed): until the next successful begin,
 * adds are refused and tests answer visible. Nothing to forget at width 0. */
static void drop_frame(rv_occlusion *occ)
{
    if (occ->width == 0)
        return;
    occ->state = RVI_OCC_NO_VIEW;
    occ->sample_step[0] = occ->sample_step[1] = 0;
    occ->inputs.count = 0;
    occ->matrices.count = 0;
    occ->shapes.count = 0;
    occ->shape_data.count = 0;
    occ->item_count = 0;
    occ->vertex_count = 0;
    memset(&occ->stats, 0, sizeof occ->stats);
    rvi_occ_feed_begin(occ);
}

rv_result rv_occlusion_begin(rv_occlusion *occ, const float view_projection[16], rv_clip clip, float aspect)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->lent)
        return RV_ERR_BAD_STATE;
    if (!view_projection) {
        drop_frame(occ);
        return RV_ERR_INVALID_ARG;
    }
    double vp[16];
    for (int i = 0; i < 16; i++)
        vp[i] = view_projection[i];
    return rvi_occlusion_begin_d(occ, vp, clip, aspect);
}

/* The checks of rv_occlusion_begin: the buffer's height for aspect, and the view. */
static rv_result view_of(uint32_t width, const double view_projection[16], rv_clip clip, float aspect,
                         uint32_t *out_height, rvi_occ_view *out_view)
{
    bool finite = isfinite(aspect);
    for (int i = 0; i < 16; i++)
        finite &= isfinite(view_projection[i]) != 0;
    if (!finite)
        return RV_ERR_NOT_FINITE;
    if (!(aspect > 0))
        return RV_ERR_INVALID_ARG;
    double h = floor((double)width / aspect + 0.5);
    if (!(h >= 1 && h <= RV_OCCLUSION_MAX_SIZE))
        return RV_ERR_INVALID_ARG;
    *out_height = (uint32_t)h;
    if (!rvi_occ_view_init(out_view, view_projection, clip, width, *out_height))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rvi_occlusion_check_view(uint32_t width, const double view_projection[16], rv_clip clip, float aspect)
{
    if (width == 0)
        return RV_OK;
    uint32_t height;
    rvi_occ_view view;
    return view_of(width, view_projection, clip, aspect, &height, &view);
}

rv_result rvi_occlusion_begin_d(rv_occlusion *occ, const double view_projection[16], rv_clip clip, float aspect)
{
    if (occ->width == 0)
        return RV_OK;
    /* Drop the previous frame first: whatever fails below, a stale view never culls. */
    drop_frame(occ);
    uint32_t height;
    rvi_occ_view view;
    RVI_TRY(view_of(occ->width, view_projection, clip, aspect, &height, &view));

    uint32_t levels = 0, lw = occ->width, lh = height;
    uint32_t level_w[RV_OCCLUSION_MAX_LEVELS], level_h[RV_OCCLUSION_MAX_LEVELS];
    size_t level_offset[RV_OCCLUSION_MAX_LEVELS], total = 0;
    for (;;) {
        level_w[levels] = lw;
        level_h[levels] = lh;
        level_offset[levels] = total;
        total += (size_t)lw * lh;
        levels++;
        if (lw == 1 && lh == 1)
            break;
        lw = (lw + 1) / 2;
        lh = (lh + 1) / 2;
    }

    if (total > occ->texel_capacity) {
        float *t = rvi_realloc(occ->heap, occ->texels, occ->texel_capacity * sizeof(float), total * sizeof(float));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->texels = t;
        occ->texel_capacity = total;
    }
    if (2 * (size_t)height > occ->row_capacity) {
        size_t rows = 2 * (size_t)height;
        double *t = rvi_realloc(occ->heap, occ->row_scratch, occ->row_capacity * sizeof(double), rows * sizeof(double));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->row_scratch = t;
        occ->row_capacity = rows;
    }
    if (4 * (size_t)height > occ->span_capacity) {
        size_t rows = 4 * (size_t)height;
        int32_t *t = rvi_realloc(occ->heap, occ->row_spans, occ->span_capacity * sizeof(int32_t), rows * sizeof(int32_t));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->row_spans = t;
        occ->span_capacity = rows;
    }
    uint32_t tiles_w = (occ->width + RVI_OCC_TILE - 1) / RVI_OCC_TILE;
    uint32_t tiles_h = (height + RVI_OCC_TILE - 1) / RVI_OCC_TILE;
    if ((size_t)tiles_w * tiles_h > occ->tile_capacity) {
        size_t tiles = (size_t)tiles_w * tiles_h;
        float *t = rvi_realloc(occ->heap, occ->tile_lo, occ->tile_capacity * sizeof(float), tiles * sizeof(float));
        if (!t)
            return RV_ERR_OUT_OF_MEMORY;
        occ->tile_lo = t;
        occ->tile_capacity = tiles;
    }
    if (!occ->draft) {
        occ->draft = rvi_alloc(occ->heap, sizeof *occ->draft);
        if (!occ->draft)
            return RV_ERR_OUT_OF_MEMORY;
    }
    RVI_TRY(rvi_occ_fusion_reserve(occ->heap, &occ->fusion, (size_t)occ->width * height));
    occ->height = height;
    occ->tiles_w = tiles_w;
    occ->tiles_h = tiles_h;
    occ->level_count = levels;
    memcpy(occ->level_w, level_w, sizeof(uint32_t) * levels);
    memcpy(occ->level_h, level_h, sizeof(uint32_t) * levels);
    memcpy(occ->level_offset, level_offset, sizeof(size_t) * levels);
    occ->view = view;
    occ->state = RVI_OCC_OPEN;
    return RV_OK;
}

/* Room for items more items, vertices more mesh vertices and one more occluder (a shape
 * entry when shape, data_words words of shape data): all or nothing. */
static rv_result reserve_push(rv_occlusion *occ, uint32_t items, uint32_t vertices, bool matrix, bool shape,
                              size_t data_words)
{
    uint64_t n = (uint64_t)occ->inputs.count + 1, ni = (uint64_t)occ->item_count + items;
    uint64_t nv = (uint64_t)occ->vertex_count + vertices, nd = (uint64_t)occ->shape_data.count + data_words;
    /* Sort keys hold UINT32_MAX - item. Items: every box and triangle, and a whole-mesh item
     * per mesh; footprints: those, and every input's whole footprint. */
    if (ni + 2 * n >= INT32_MAX || nv >= INT32_MAX || nd >= UINT32_MAX || (matrix && occ->matrices.count >= INT32_MAX))
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->inputs, sizeof(rvi_occ_input), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->tallies, sizeof(rvi_occ_tally), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->items, sizeof(rvi_occ_item), (uint32_t)(ni + n)));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->footprints, sizeof(rvi_occ_footprint), (uint32_t)(ni + 2 * n)));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->order, sizeof(uint64_t), (uint32_t)(2 * ni)));
    if (vertices)
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->vertices, sizeof(rvi_occ_vertex), (uint32_t)nv));
    if (matrix)
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->matrices, 16 * sizeof(float), occ->matrices.count + 1));
    if (shape)
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->shapes, sizeof(rvi_occ_shape), occ->shapes.count + 1));
    if (data_words)
        RVI_TRY(rvi_vec_reserve(occ->heap, &occ->shape_data, sizeof(uint64_t), (uint32_t)nd));
    return RV_OK;
}

rv_result rvi_occ_push(rv_occlusion *occ, const rvi_occ_input *input, const float *matrix, uint32_t items,
                       uint32_t vertices, const void *borrowed, size_t data_size, void **out_data)
{
    bool shape = input->kind != RVI_OCC_BOX;
    size_t words = borrowed ? 0 : (data_size + sizeof(uint64_t) - 1) / sizeof(uint64_t);
    uint64_t n = (uint64_t)occ->inputs.count + 1, ni = (uint64_t)occ->item_count + items;
    /* Steady frames find room everywhere: one comparison each instead of the reserves. */
    bool room = n <= occ->inputs.capacity && n <= occ->tallies.capacity && ni + n <= occ->items.capacity &&
                ni + 2 * n <= occ->footprints.capacity && 2 * ni <= occ->order.capacity &&
                (uint64_t)occ->vertex_count + vertices <= occ->vertices.capacity &&
                (!matrix || occ->matrices.count < occ->matrices.capacity) &&
                (!shape || occ->shapes.count < occ->shapes.capacity) &&
                (uint64_t)occ->shape_data.count + words <= occ->shape_data.capacity && ni + 2 * n < INT32_MAX;
    if (!room)
        RVI_TRY(reserve_push(occ, items, vertices, matrix != NULL, shape, words));
    /* Everything the freeze needs is reserved: it never allocates. */
    rvi_occ_input *in = &RVI_VEC_AT(occ->inputs, rvi_occ_input, occ->inputs.count++);
    *in = *input;
    in->matrix = -1;
    if (matrix) {
        in->matrix = (int32_t)occ->matrices.count;
        memcpy((float *)occ->matrices.data + (size_t)16 * occ->matrices.count++, matrix, 16 * sizeof(float));
    }
    if (shape) {
        in->shape = occ->shapes.count;
        rvi_occ_shape *sh = &RVI_VEC_AT(occ->shapes, rvi_occ_shape, occ->shapes.count++);
        sh->borrowed = borrowed;
        sh->offset = (size_t)occ->shape_data.count * sizeof(uint64_t);
        sh->vertex_base = occ->vertex_count;
        if (!borrowed) {
            *out_data = (uint64_t *)occ->shape_data.data + occ->shape_data.count;
            occ->shape_data.count += (uint32_t)words;
        }
    }
    occ->item_count += items;
    occ->vertex_count += vertices;
    occ->stats.occluders_submitted++;
    return RV_OK;
}

rv_result rvi_occ_add_checks(rv_occlusion *occ, const float *matrix)
{
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (occ->state == RVI_OCC_FROZEN)
        return RV_ERR_FROZEN;
    if (matrix && !rvi_finite_n(matrix, 16))
        return RV_ERR_NOT_FINITE;
    if (matrix && !rvi_occ_affine_ok(matrix))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rv_occlusion_add_occluder(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16])
{
    if (occ && occ->lent)
        return RV_ERR_BAD_STATE;
    return rvi_occlusion_add_occluder(occ, min, max, matrix);
}

rv_result rvi_occlusion_add_occluder(rv_occlusion *occ, const float min[3], const float max[3], const float matrix[16])
{
    if (!occ || !min || !max)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (occ->state == RVI_OCC_FROZEN)
        return RV_ERR_FROZEN;
    RVI_TRY(rvi_occ_check_box(min, max, matrix));
    rvi_occ_input in;
    memset(&in, 0, sizeof in);
    memcpy(in.min, min, sizeof in.min);
    memcpy(in.max, max, sizeof in.max);
    in.kind = RVI_OCC_BOX;
    return rvi_occ_push(occ, &in, matrix, 1, 0, NULL, 0, NULL);
}

rv_result rv_occlusion_add_convex(rv_occlusion *occ, const rv_occluder_convex *convex, const float matrix[16])
{
    if (occ && occ->lent)
        return RV_ERR_BAD_STATE;
    return rvi_occlusion_add_convex(occ, convex, matrix);
}

rv_result rvi_occlusion_add_convex(rv_occlusion *occ, const rv_occluder_convex *convex, const float matrix[16])
{
    if (!occ || !convex)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0)
        return RV_OK;
    RVI_TRY(rvi_occ_add_checks(occ, matrix));
    RVI_TRY(rvi_occ_convex_check(convex));
    bool made = !occ->convex_scratch;
    if (made) {
        occ->convex_scratch = rvi_alloc(occ->heap, rvi_occ_convex_scratch_size());
        if (!occ->convex_scratch)
            return RV_ERR_OUT_OF_MEMORY;
    }
    size_t size;
    rvi_occ_input in;
    memset(&in, 0, sizeof in);
    in.kind = RVI_OCC_CONVEX;
    in.flags = (uint8_t)convex->flags;
    void *data = NULL;
    rv_result r = rvi_occ_convex_build(convex, occ->convex_scratch, &size);
    if (r == RV_OK)
        r = rvi_occ_push(occ, &in, matrix, 1, 0, NULL, size, &data);
    if (r != RV_OK) {
        if (made) { /* a refused call keeps no memory */
            rvi_free(occ->heap, occ->convex_scratch, rvi_occ_convex_scratch_size());
            occ->convex_scratch = NULL;
        }
        return r;
    }
    rvi_occ_convex_write(occ->convex_scratch, convex->flags, data);
    rvi_occ_input *last = &RVI_VEC_AT(occ->inputs, rvi_occ_input, occ->inputs.count - 1);
    const rvi_occ_convex_data *c = data;
    memcpy(last->min, c->bounds_min, sizeof last->min);
    memcpy(last->max, c->bounds_max, sizeof last->max);
    return RV_OK;
}

const rvi_occ_mesh_data *rvi_occ_input_mesh(const rv_occlusion *occ, const rvi_occ_input *in)
{
    const rvi_occ_shape *sh = &RVI_VEC_AT(occ->shapes, rvi_occ_shape, in->shape);
    return sh->borrowed ? sh->borrowed : (const void *)((const char *)occ->shape_data.data + sh->offset);
}

const rvi_occ_convex_data *rvi_occ_input_convex(const rv_occlusion *occ, const rvi_occ_input *in)
{
    const rvi_occ_shape *sh = &RVI_VEC_AT(occ->shapes, rvi_occ_shape, in->shape);
    return sh->borrowed ? sh->borrowed : (const void *)((const char *)occ->shape_data.data + sh->offset);
}

rv_result rvi_occlusion_reserve(rv_occlusion *occ, uint32_t occluders, uint32_t with_matrix, uint32_t items,
                                uint32_t vertices)
{
    if (occ->width == 0)
        return RV_OK;
    uint64_t n = (uint64_t)occ->inputs.count + occluders, m = (uint64_t)occ->matrices.count + with_matrix;
    uint64_t ni = (uint64_t)occ->item_count + items, nv = (uint64_t)occ->vertex_count + vertices;
    uint64_t ns = (uint64_t)occ->shapes.count + occluders;
    if (ni + 2 * n >= INT32_MAX || m > INT32_MAX || nv >= INT32_MAX)
        return RV_ERR_CAPACITY;
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->inputs, sizeof(rvi_occ_input), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->tallies, sizeof(rvi_occ_tally), (uint32_t)n));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->shapes, sizeof(rvi_occ_shape), (uint32_t)ns));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->items, sizeof(rvi_occ_item), (uint32_t)(ni + n)));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->footprints, sizeof(rvi_occ_footprint), (uint32_t)(ni + 2 * n)));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->order, sizeof(uint64_t), (uint32_t)(2 * ni)));
    RVI_TRY(rvi_vec_reserve(occ->heap, &occ->vertices, sizeof(rvi_occ_vertex), (uint32_t)nv));
    return rvi_vec_reserve(occ->heap, &occ->matrices, 16 * sizeof(float), (uint32_t)m);
}

/* ---- debug ----------------------------------------------------------------------------- */

/* The debug images' grey scale: the nearest and farthest covered depth of level 0 (clip w
 * for a perspective view, NDC z for an orthographic one). False when nothing is covered. */
static bool debug_depth_range(const rv_occlusion *occ, double *nearest, double *farthest)
{
    bool persp = occ->view.perspective;
    double dmin = INFINITY, dmax = -INFINITY;
    size_t n0 = (size_t)occ->width * occ->height;
    for (size_t i = 0; i < n0; i++) {
        float t = occ->texels[i];
        if (t > EMPTY_TEXEL) {
            double d = persp ? 1.0 / t : -(double)t;
            dmin = fmin(dmin, d);
            dmax = fmax(dmax, d);
        }
    }
    *nearest = dmin;
    *farthest = dmax;
    return dmin <= dmax;
}

rv_result rv_occlusion_debug_depth_range(rv_occlusion *occ, float *out_near, float *out_far)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    double nearest = 0, farthest = 0;
    if (occ->width != 0) {
        if (occ->state == RVI_OCC_NO_VIEW || occ->held)
            return RV_ERR_BAD_STATE;
        rv_occlusion_freeze(occ);
        if (!debug_depth_range(occ, &nearest, &farthest))
            nearest = farthest = 0;
    }
    if (out_near)
        *out_near = (float)nearest;
    if (out_far)
        *out_far = (float)farthest;
    return RV_OK;
}

rv_result rv_occlusion_debug_image(rv_occlusion *occ, uint32_t level, uint8_t *pixels, size_t pixels_size,
                                   uint32_t *out_width, uint32_t *out_height)
{
    if (!occ)
        return RV_ERR_INVALID_ARG;
    if (occ->width == 0) {
        if (out_width)
            *out_width = 0;
        if (out_height)
            *out_height = 0;
        return RV_OK;
    }
    if (occ->state == RVI_OCC_NO_VIEW)
        return RV_ERR_BAD_STATE;
    if (level >= occ->level_count)
        return RV_ERR_INVALID_ARG;
    uint32_t w = occ->level_w[level], h = occ->level_h[level];
    if (pixels && pixels_size < (size_t)w * h)
        return RV_ERR_INVALID_ARG;
    if (pixels && occ->held)
        return RV_ERR_BAD_STATE;
    if (out_width)
        *out_width = w;
    if (out_height)
        *out_height = h;
    if (!pixels)
        return RV_OK;
    rv_occlusion_freeze(occ);
    /* Scale: linear view depth over the covered texels of level 0 (w, or NDC depth). */
    bool persp = occ->view.perspective;
    double dmin, dmax;
    debug_depth_range(occ, &dmin, &dmax);
    const float *src = occ->texels + occ->level_offset[level];
    for (size_t i = 0; i < (size_t)w * h; i++) {
        float t = src[i];
        if (!(t > EMPTY_TEXEL)) {
            pixels[i] = 0;
            continue;
        }
        double d = persp ? 1.0 / t : -(double)t;
        double u = dmax > dmin ? (dmax - d) / (dmax - dmin) : 1.0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        pixels[i] = (uint8_t)(32.0 + 223.0 * u + 0.5);
    }
    return RV_OK;
}

void rvi_occ_set_samples(rv_occlusion *occ, uint32_t viewport_w, uint32_t viewport_h)
{
    bool known = occ->desc.fine_tests == 2 && occ->width && occ->height && viewport_w && viewport_h;
    occ->sample_step[0] = known ? (double)occ->width / viewport_w : 0;
    occ->sample_step[1] = known ? (double)occ->height / viewport_h : 0;
}
