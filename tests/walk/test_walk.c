/* rvis-walk's own parts, without rvis: the hostile-input-safe BSP reader, the map source
 * names, the camera path's solid test, the truth oracle, the embedded city and the report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "brush.h"
#include "bsp.h"
#include "city.h"
#include "feed.h"
#include "occluders.h"
#include "path.h"
#include "pk3.h"
#include "reference.h"
#include "report.h"
#include "view.h"
#include "bsp_builder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef RVT_HEAVY_TESTS
#define HEAVY(full, light) (full)
#else
#define HEAVY(full, light) (light)
#endif

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct loaded {
    rvw_level level;
    rvw_bsp_map map;
    char err[256];
    bool ok;
} loaded;

static void load(loaded *l, const uint8_t *bytes, size_t size)
{
    l->err[0] = '\0';
    l->ok = rvw_bsp_read(bytes, size, "t", &l->level, &l->map, l->err, sizeof l->err);
}

static void unload(loaded *l)
{
    rvw_level_free(&l->level);
    rvw_bsp_map_free(&l->map);
}

static void assert_vec3(const float *v, float x, float y, float z)
{
    assert_float_equal(v[0], x, 1e-4);
    assert_float_equal(v[1], y, 1e-4);
    assert_float_equal(v[2], z, 1e-4);
}

static void test_reader_reads_the_builder_map(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_true(l.ok);
    /* quad (2) + patch (2 * 8 * 8) + soup (1); sky face and flare skipped */
    assert_int_equal(l.level.object_count, 3);
    assert_int_equal(l.level.objects[0].triangle_count, 2);
    assert_int_equal(l.level.objects[1].triangle_count, 2 * RVW_PATCH_STEPS * RVW_PATCH_STEPS);
    assert_int_equal(l.level.objects[2].triangle_count, 1);
    assert_int_equal(l.map.stats.skipped_nodraw_sky, 1);
    assert_int_equal(l.map.stats.skipped_empty, 1);
    assert_int_equal(l.map.stats.patches, 1);
    assert_int_equal(l.map.stats.fogged, 0); /* fog 7 points past the empty fog lump */
    /* Z-up (1, 2, 3) becomes Y-up (1, 3, -2) */
    const float *soup = l.level.triangles + (size_t)l.level.objects[2].first_triangle * 9;
    assert_vec3(soup, 1, 3, -2);
    assert_vec3(soup + 3, 5, 3, -2);
    assert_vec3(soup + 6, 1, 9, -2);
    /* the patch's middle control point (32 up) lifts its centre by B1(1/2)^2 * 32 = 8 */
    assert_float_equal(l.level.objects[1].bounds.max[1], 8.0f, 1e-4);
    /* spawns first in entity order, then items; the brush entity is ignored */
    assert_int_equal(l.map.point_count, 3);
    assert_true(l.map.points[0].spawn && l.map.points[1].spawn && !l.map.points[2].spawn);
    assert_vec3(l.map.points[0].origin, 0, 24, 0);
    assert_vec3(l.map.points[1].origin, 200, 24, 0);
    assert_vec3(l.map.points[2].origin, 100, 24, -100);
    assert_true(l.map.points[0].has_yaw && !l.map.points[1].has_yaw);
    assert_float_equal(l.map.points[0].yaw, 3.14159265f / 2, 1e-5);
    unload(&l);
    free(bytes);
}

/* The walk's occluders: the planar opaque surfaces as meshes (the floor quad), never
 * patches or triangle soups, and no brush or box: the reader keeps every solid brush as a
 * candidate only. */
static void test_reader_chooses_the_planar_surfaces(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_true(l.ok);
    assert_int_equal(l.map.stats.brushes, 6);
    assert_int_equal(l.map.stats.solid_brushes, 6);
    assert_int_equal(l.level.occluder_count, 0);
    assert_int_equal(l.level.mesh_count, 3);
    assert_int_equal(l.level.meshes[0].flags, RVW_MESH_OCCLUDER);
    assert_int_equal(l.level.meshes[1].flags, RVW_MESH_PATCH);
    assert_int_equal(l.level.meshes[2].flags, RVW_MESH_SOUP);
    uint32_t meshes, triangles;
    rvw_level_count_occluders(&l.level, &meshes, &triangles);
    assert_int_equal(meshes, 1);
    assert_int_equal(triangles, 2);
    assert_int_equal(rvw_level_choose_occluders(&l.level), 1); /* choosing again changes nothing */
    /* the oracle's view of the set: the quad's object's own triangles, to the bit */
    rvw_occluder_set set = {0};
    assert_true(rvw_occluders_of_map(&l.level, &set));
    assert_int_equal(set.count, 1);
    assert_string_equal(set.items[0].kind, "surface");
    const rvw_object *quad = &l.level.objects[l.level.meshes[0].object];
    assert_int_equal(set.items[0].index, l.level.meshes[0].object);
    assert_int_equal(set.items[0].triangle_count, quad->triangle_count);
    assert_memory_equal(set.triangles, l.level.triangles + (size_t)quad->first_triangle * 9,
                        (size_t)quad->triangle_count * 9 * sizeof(float));
    assert_memory_equal(&set.items[0].bounds, &quad->bounds, sizeof(rvw_box));
    rvw_occluders_free(&set);
    unload(&l);
    free(bytes);
}

static void test_reader_refuses_every_truncation(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    for (size_t n = 0; n < size; n++) {
        uint8_t *cut = malloc(n ? n : 1); /* exact size, so ASan sees any over-read */
        memcpy(cut, bytes, n);
        loaded l;
        load(&l, cut, n);
        assert_false(l.ok);
        assert_true(strlen(l.err) > 0);
        assert_int_equal(l.level.object_count, 0);
        free(cut);
    }
    free(bytes);
}

static void test_reader_survives_random_corruption(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    uint64_t s = 42;
    int refused = 0, read = 0;
    for (int round = 0; round < HEAVY(20000, 2000); round++) {
        uint8_t *copy = malloc(size);
        memcpy(copy, bytes, size);
        int flips = 1 + (int)(next_random(&s) % 8);
        for (int f = 0; f < flips; f++)
            copy[next_random(&s) % size] ^= (uint8_t)(1u << (next_random(&s) % 8));
        loaded l;
        load(&l, copy, size);
        if (l.ok) {
            read++;
            for (uint32_t i = 0; i < l.level.triangle_count * 9; i++)
                assert_true(isfinite(l.level.triangles[i]));
            unload(&l);
        } else {
            refused++;
            assert_true(strlen(l.err) > 0);
        }
        free(copy);
    }
    assert_true(refused > 0 && read > 0);
    free(bytes);
}

/* Builds the map, overwrites one int32 at (lump, byte offset in it), and reads it. */
static bool read_with(int lump, int32_t at, int32_t value, char *err, size_t errlen)
{
    size_t size;
    bspb_layout layout;
    uint8_t *bytes = bspb_build(&size, &layout);
    size_t pos = lump < 0 ? (size_t)at : (size_t)layout.offset[lump] + (size_t)at;
    bspb b = { bytes, size, size };
    bspb_patch_i32(&b, pos, value);
    loaded l;
    load(&l, bytes, size);
    snprintf(err, errlen, "%s", l.err);
    if (l.ok)
        unload(&l);
    free(bytes);
    return l.ok;
}

static void test_reader_names_what_is_wrong(void **state)
{
    (void)state;
    char err[256];
    enum { MODELS = 7, BRUSHSIDES = 9, INDEXES = 11, SURFACES = 13 };
    assert_false(read_with(-1, 4, 47, err, sizeof err));                 /* version */
    assert_non_null(strstr(err, "version"));
    assert_false(read_with(-1, 8 + 13 * 8, -4, err, sizeof err));        /* surfaces offset */
    assert_non_null(strstr(err, "surfaces"));
    assert_false(read_with(-1, 8 + 13 * 8 + 4, 105, err, sizeof err));  /* not whole records */
    assert_non_null(strstr(err, "multiple"));
    assert_false(read_with(INDEXES, 4, 9, err, sizeof err));             /* index past 4 verts */
    assert_non_null(strstr(err, "index"));
    assert_false(read_with(SURFACES, 104 + 96, 4, err, sizeof err));     /* even patch width */
    assert_non_null(strstr(err, "patch"));
    assert_false(read_with(SURFACES, 0, 99, err, sizeof err));           /* shader index */
    assert_non_null(strstr(err, "shader"));
    assert_false(read_with(SURFACES, 8, 9, err, sizeof err));            /* surface type */
    assert_non_null(strstr(err, "type"));
    assert_false(read_with(SURFACES, 16, 0x7fffffff, err, sizeof err));  /* vertex count */
    assert_non_null(strstr(err, "vertices"));
    assert_false(read_with(MODELS, 28, 6, err, sizeof err));             /* model 0 surfaces */
    assert_non_null(strstr(err, "model 0"));
    assert_false(read_with(BRUSHSIDES, 0, 5000, err, sizeof err));       /* plane index */
    assert_non_null(strstr(err, "plane"));
    assert_false(read_with(0, 0, 0x41414141, err, sizeof err));          /* entity text garbage */
    assert_non_null(strstr(err, "entity"));
    assert_true(read_with(SURFACES, 2 * 104 + 4, 1000, err, sizeof err)); /* fog: clamped */
}

static void test_map_source_splits_pak_and_entry(void **state)
{
    (void)state;
    rvw_map_source s;
    char err[256];
    assert_true(rvw_map_source_parse("oa_dm4", &s, err, sizeof err));
    assert_string_equal(s.pak, RVW_DEFAULT_PAK);
    assert_string_equal(s.entry, "maps/oa_dm4.bsp");
    assert_string_equal(s.name, "oa_dm4");
    assert_true(rvw_map_source_parse("C:/games/my:pak.pk3:maps/x.bsp", &s, err, sizeof err));
    assert_string_equal(s.pak, "C:/games/my:pak.pk3");
    assert_string_equal(s.entry, "maps/x.bsp");
    assert_string_equal(s.name, "x");
    assert_true(rvw_map_source_parse("dir/level.BSP", &s, err, sizeof err));
    assert_string_equal(s.pak, "");
    assert_string_equal(s.entry, "dir/level.BSP");
    assert_string_equal(s.name, "level");
    assert_false(rvw_map_source_parse("pak1-maps.pk3", &s, err, sizeof err));
    assert_false(rvw_map_source_parse("", &s, err, sizeof err));
    bool missing;
    uint8_t *bytes;
    size_t size;
    assert_true(rvw_map_source_parse("/nonexistent/x.pk3:maps/a.bsp", &s, err, sizeof err));
    assert_false(rvw_map_source_read(&s, &bytes, &size, &missing, err, sizeof err));
    assert_true(missing);
}

/* The builder map's path: the floor slab (Y-up y in [-16, 0]) holds the box up; the first
 * spawn (0 24 0, 9 units lifted, as Quake III spawns a player) settles on it. */
static void test_path_settles_on_the_floor_and_walks_at_speed(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_true(l.ok);
    /* a box whose bottom is on the floor's top face touches it: free; 1 unit lower: blocked */
    float on[3] = { 0, 24, 0 }, sunk[3] = { 0, 23, 0 }, below[3] = { 0, -40, 0 };
    assert_false(rvw_path_box_blocked(&l.map, on));
    assert_true(rvw_path_box_blocked(&l.map, sunk));
    /* walking along the floor is free; through it is not */
    float far_on[3] = { 200, 24, 0 };
    assert_true(rvw_path_sweep(&l.map, on, far_on) == 1.0);
    assert_true(rvw_path_sweep(&l.map, on, below) < 1.0);
    rvw_path_stats ps;
    assert_int_equal(rvw_path_build(&l.level, &l.map, &ps), RVW_PATH_BUILT);
    assert_int_equal(ps.points, 3);
    assert_int_equal(ps.dropped, 0);
    assert_int_equal(ps.moved, 0);
    assert_true(l.level.frame_count >= 2 * RVW_PATH_STAND_FRAMES);
    /* first frame: the first spawn's eye, facing its yaw 90 (Quake +Y = Y-up -Z) */
    assert_vec3(l.level.path[0].eye, 0, 24 + RVW_PATH_SKIN + RVW_PATH_EYE_HEIGHT, 0);
    assert_vec3(l.level.path[0].forward, 0, 0, -1);
    for (uint32_t f = 1; f < l.level.frame_count; f++) {
        float d = 0;
        for (int k = 0; k < 3; k++)
            d += (l.level.path[f].eye[k] - l.level.path[f - 1].eye[k]) * (l.level.path[f].eye[k] - l.level.path[f - 1].eye[k]);
        if (!l.level.path[f].cut)
            assert_true(sqrtf(d) <= RVW_PATH_SPEED * 1.001f);
    }
    unload(&l);
    free(bytes);
}

static void load_room(loaded *l, uint8_t **bytes)
{
    size_t size;
    *bytes = bspb_build_room(&size, NULL);
    load(l, *bytes, size);
    assert_true(l->ok);
}

/* The room's brushes in the order bspb_build_room writes them, as the path sees them. */
enum { ROOM_FLOOR, ROOM_RAMP, ROOM_CLIP, ROOM_PILLAR, ROOM_CUT_PILLAR, ROOM_GLASS, ROOM_BRUSHES };

static void test_reader_reads_every_solid_brush_and_opaque_surface(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    /* the empty brush is left out, the clip brush blocks the path only */
    assert_int_equal(l.map.stats.brushes, 7);
    assert_int_equal(l.map.stats.solid_brushes, 6);
    assert_int_equal(l.map.stats.clip_brushes, 1);
    assert_int_equal(l.map.stats.empty_brushes, 1);
    assert_int_equal(l.map.brush_count, ROOM_BRUSHES);
    assert_int_equal(l.map.brushes[ROOM_CLIP].contents, RVW_CONTENTS_PLAYERCLIP);
    /* candidates: floor, ramp, pillar, cut pillar, glass */
    assert_int_equal(l.level.convex_count, 5);
    const rvw_convex *c = l.level.convexes;
    assert_int_equal(c[0].flags, RVW_CONVEX_EXACT_BOX | RVW_CONVEX_NODRAW_SIDE);
    assert_int_equal(c[1].flags, 0);
    assert_int_equal(c[1].side_count, 7);
    assert_int_equal(c[2].flags, RVW_CONVEX_EXACT_BOX);
    assert_int_equal(c[3].flags, RVW_CONVEX_SKY_SIDE);
    assert_int_equal(c[3].side_count, 10);
    assert_int_equal(c[4].flags, RVW_CONVEX_EXACT_BOX | RVW_CONVEX_TRANSLUCENT);
    assert_int_equal(c[4].contents, 1 | RVW_CONTENTS_TRANSLUCENT);
    /* exact bounds in Y-up: the ramp is (100 -64 0)..(164 64 64) in Quake */
    assert_vec3(c[1].bounds.min, 100, 0, -64);
    assert_vec3(c[1].bounds.max, 164, 64, 64);
    assert_vec3(c[3].bounds.min, -364, 0, -264);
    assert_vec3(c[3].bounds.max, -300, 256, -200);
    /* sides: Y-up unit normals, the ramp's slope (-1 0 1)/sqrt 2 becomes (-1 1 0)/sqrt 2 */
    const rvw_convex_side *slope = &l.level.convex_sides[c[1].first_side + 6];
    assert_vec3(slope->plane, -0.70710678f, 0.70710678f, 0);
    assert_float_equal(slope->plane[3], -70.710678f, 1e-3);
    assert_int_equal(l.level.convex_sides[c[0].first_side + 4].surface_flags, RVW_SURF_NODRAW);
    assert_int_equal(l.level.convex_sides[c[0].first_side + 4].contents, RVW_CONTENTS_SOLID);
    assert_int_equal(l.level.convex_sides[c[3].first_side + 5].surface_flags, RVW_SURF_SKY);
    /* meshes: the floor quad, the patch, the soup; the glass quad is translucent */
    assert_int_equal(l.level.object_count, 4);
    assert_int_equal(l.level.mesh_count, 3);
    const rvw_mesh *m = l.level.meshes;
    assert_int_equal(m[0].object, 0);
    assert_int_equal(m[0].vertex_count, 4);
    assert_int_equal(m[0].index_count, 6);
    assert_int_equal(m[1].object, 2);
    assert_int_equal(m[1].flags, RVW_MESH_PATCH);
    assert_int_equal(m[1].vertex_count, (RVW_PATCH_STEPS + 1) * (RVW_PATCH_STEPS + 1));
    assert_int_equal(m[1].index_count, 3 * 2 * RVW_PATCH_STEPS * RVW_PATCH_STEPS);
    assert_int_equal(m[2].object, 3);
    assert_int_equal(m[2].flags, RVW_MESH_SOUP);
    assert_int_equal(m[2].vertex_count, 3);
    /* the floor quad, a planar face, is the walk's occluder */
    assert_int_equal(m[0].flags, RVW_MESH_OCCLUDER);
    /* each mesh's triangles are its object's, to the bit */
    for (uint32_t i = 0; i < l.level.mesh_count; i++) {
        const rvw_object *o = &l.level.objects[m[i].object];
        assert_int_equal(m[i].index_count, o->triangle_count * 3);
        for (uint32_t k = 0; k < m[i].index_count; k++) {
            uint32_t v = l.level.mesh_indices[m[i].first_index + k];
            assert_true(v < m[i].vertex_count);
            assert_memory_equal(l.level.mesh_positions + (size_t)(m[i].first_vertex + v) * 3,
                                l.level.triangles + (size_t)o->first_triangle * 9 + (size_t)k * 3, 3 * sizeof(float));
        }
    }
    rvw_candidate_counts n;
    rvw_level_count_candidates(&l.level, &n);
    assert_int_equal(n.convexes, 5);
    assert_int_equal(n.exact_boxes, 3);
    assert_int_equal(n.general_convexes, 2);
    assert_int_equal(n.nodraw_side, 1);
    assert_int_equal(n.sky_side, 1);
    assert_int_equal(n.translucent, 1);
    assert_int_equal(n.meshes, 3);
    assert_int_equal(n.mesh_triangles, 2 + 2 * RVW_PATCH_STEPS * RVW_PATCH_STEPS + 1);
    assert_int_equal(n.patch_meshes, 1);
    unload(&l);
    free(bytes);
}

/* The builder map's six brushes are all exact boxes, with exact bounds. */
static void test_reader_keeps_every_solid_brush_as_a_candidate(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build(&size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_true(l.ok);
    assert_int_equal(l.level.convex_count, 6);
    for (uint32_t i = 0; i < 6; i++) {
        assert_true(l.level.convexes[i].flags & RVW_CONVEX_EXACT_BOX);
        assert_int_equal(l.level.convexes[i].side_count, 6);
    }
    /* the floor slab, Quake (-256, -256, -16) .. (256, 256, 0) turned Y-up */
    assert_vec3(l.level.convexes[0].bounds.min, -256, -16, -256);
    assert_vec3(l.level.convexes[0].bounds.max, 256, 0, 256);
    assert_true(l.level.convexes[1].flags & RVW_CONVEX_SKY_SIDE);
    assert_true(l.level.convexes[2].flags & RVW_CONVEX_TRANSLUCENT);
    assert_true(l.level.convexes[3].flags & RVW_CONVEX_NODRAW_SIDE);
    /* quad, patch, soup: all opaque */
    assert_int_equal(l.level.mesh_count, 3);
    unload(&l);
    free(bytes);
}

/* Brush planes the reader must refuse: a normal that is not a unit vector, more sides than
 * RVW_BRUSH_MAX_SIDES, and brushes that share one long run of sides beyond the work cap. */
static void test_reader_refuses_hostile_brushes(void **state)
{
    (void)state;
    char err[256];
    enum { PLANES = 2, BRUSHES = 8 };
    /* the first plane's normal x: -1 -> -2 */
    float two = -2.0f;
    int32_t bits;
    memcpy(&bits, &two, 4);
    assert_false(read_with(PLANES, 0, bits, err, sizeof err));
    assert_non_null(strstr(err, "normal"));
    /* brush 0 with 300 sides (the lump holds 36) is out of range first; make the side run
     * fit by pointing it at the start with a count the lump has, then too many */
    assert_false(read_with(BRUSHES, 4, 300, err, sizeof err));
    assert_non_null(strstr(err, "sides"));
    /* a map of 300 brushes, each the same 256 sides: 300 * 256^2 side pairs */
    bspb lumps[BSPB_LUMPS];
    memset(lumps, 0, sizeof lumps);
    bspb_bytes(&lumps[0], "", 1);
    bspb_shader(&lumps[1], "floor", 0, 1);
    int32_t plane_count = 0;
    for (int k = 0; k < 256; k++) {
        const float lo[3] = { -(float)k - 1, -1, -1 }, hi[3] = { 1, 1, 1 };
        if (k % 6 == 0)
            bspb_box_planes(&lumps[2], &plane_count, lo, hi);
        bspb_i32(&lumps[9], 2 * (k % 6) + 12 * (k / 6));
        bspb_i32(&lumps[9], 0);
    }
    for (int b = 0; b < 300; b++) {
        bspb_i32(&lumps[8], 0);
        bspb_i32(&lumps[8], 256);
        bspb_i32(&lumps[8], 0);
    }
    bspb_vertex(&lumps[10], 0, 0, 0);
    bspb_vertex(&lumps[10], 1, 0, 0);
    bspb_vertex(&lumps[10], 0, 1, 0);
    for (int k = 0; k < 3; k++)
        bspb_i32(&lumps[11], k);
    bspb_surface(&lumps[13], 0, -1, 1, 0, 3, 0, 3, 0, 0);
    for (int k = 0; k < 6; k++)
        bspb_f32(&lumps[7], 0);
    bspb_i32(&lumps[7], 0);
    bspb_i32(&lumps[7], 1);
    bspb_i32(&lumps[7], 0);
    bspb_i32(&lumps[7], 300);
    size_t size;
    uint8_t *bytes = bspb_assemble(lumps, &size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_false(l.ok);
    assert_non_null(strstr(l.err, "side pairs"));
    free(bytes);
}

static void test_brush_shapes_from_planes(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    const rvw_convex *c = l.level.convexes;
    float planes[10 * 4];
    for (uint32_t k = 0; k < c[3].side_count; k++)
        memcpy(planes + k * 4, l.level.convex_sides[c[3].first_side + k].plane, 4 * sizeof(float));
    rvw_box b;
    assert_int_equal(rvw_brush_shape_of(planes, c[3].side_count, &b), RVW_BRUSH_SOLID);
    /* the cut pillar's surface: four narrowed sides (2 triangles each), two octagons (6
     * each), four cuts (2 each); the axial sides' corners are gone */
    float tris[64 * 9];
    assert_int_equal(rvw_brush_triangles(planes, c[3].side_count, tris, 64), 4 * 2 + 2 * 6 + 4 * 2);
    for (int t = 0; t < 28 * 3; t++) {
        const float *p = tris + t * 3;
        /* every corner on the surface: inside every plane, on at least one */
        float worst = -1e9f;
        for (uint32_t k = 0; k < c[3].side_count; k++) {
            const float *pl = planes + k * 4;
            float d = pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] - pl[3];
            assert_true(d <= 1e-3f);
            worst = fmaxf(worst, d);
        }
        assert_true(worst > -1e-3f);
    }
    /* a box's 12 triangles; fewer than needed written, the count still told */
    for (uint32_t k = 0; k < 6; k++)
        memcpy(planes + k * 4, l.level.convex_sides[c[2].first_side + k].plane, 4 * sizeof(float));
    assert_int_equal(rvw_brush_triangles(planes, 6, tris, 64), 12);
    assert_int_equal(rvw_brush_triangles(planes, 6, tris, 5), 12);
    /* three planes close nothing; contradictory planes hold nothing */
    assert_int_equal(rvw_brush_shape_of(planes, 3, &b), RVW_BRUSH_UNBOUNDED);
    assert_int_equal(rvw_brush_triangles(planes, 3, tris, 64), 0);
    planes[1 * 4 + 3] = planes[0 * 4 + 3] * -1 - 1; /* +x below -x */
    assert_int_equal(rvw_brush_shape_of(planes, 6, &b), RVW_BRUSH_EMPTY);
    float nan_plane[4] = { NAN, 0, 0, 0 };
    assert_int_equal(rvw_brush_shape_of(nan_plane, 1, &b), RVW_BRUSH_UNBOUNDED);
    unload(&l);
    free(bytes);
}

/* The Minkowski test against the exact answer: the box at a random origin meets a brush
 * exactly when the brush's planes and the box's six planes together hold a volume. Near the
 * boundary (within the tolerance) either answer is right. */
static void test_player_box_test_is_exact_for_bevelled_brushes(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    /* fixed cases on the ramp (Y-up: x in [100, 164], y <= x - 100 on the floor) */
    float ramp_foot[3] = { 90, 24, 0 }, before_ramp[3] = { 84, 24, 0 };
    float ramp_sunk[3] = { 120, 58, 0 }, ramp_above[3] = { 120, 60, 0 };
    assert_true(rvw_path_box_blocked(&l.map, ramp_foot));
    assert_false(rvw_path_box_blocked(&l.map, before_ramp));
    assert_true(rvw_path_box_blocked(&l.map, ramp_sunk));
    assert_false(rvw_path_box_blocked(&l.map, ramp_above));
    /* the cut pillar's 45-degree edge: the box's corner reaches 15 sqrt 2 along the
     * diagonal, so it is free 21.3 units out along it, not 15 */
    const rvw_convex *cut = &l.level.convexes[3];
    const rvw_convex_side *diag = &l.level.convex_sides[cut->first_side + 6];
    /* the middle of that cut face, halfway up: the corner (-300, 264) in Quake moved onto it */
    const float *cut_n = diag->plane;
    float corner[3] = { -300, 100, -264 }, out[3];
    float depth = cut_n[0] * corner[0] + cut_n[1] * corner[1] + cut_n[2] * corner[2] - cut_n[3];
    for (float gap = 20.5f; gap <= 22.0f; gap += 1.5f) {
        for (int k = 0; k < 3; k++)
            out[k] = corner[k] - cut_n[k] * depth + cut_n[k] * gap;
        bool blocked = rvw_path_box_blocked(&l.map, out);
        assert_int_equal(blocked, gap < 15 * sqrtf(2));
    }
    uint64_t seed = 7;
    int agreed = 0;
    for (int round = 0; round < HEAVY(20000, 4000); round++) {
        int which = round & 1 ? ROOM_RAMP : ROOM_CUT_PILLAR;
        const rvw_bsp_brush *br = &l.map.brushes[which];
        float o[3];
        for (int k = 0; k < 3; k++) {
            float lo = br->bounds.min[k] - 40, hi = br->bounds.max[k] + 40;
            o[k] = lo + (hi - lo) * (float)(next_random(&seed) % 100000) / 100000.0f;
        }
        /* the margin: how far the origin lies outside the grown brush (negative: inside) */
        float margin = -1e9f, planes[16 * 4];
        for (uint32_t k = 0; k < br->plane_count; k++) {
            const float *pl = l.map.planes + (size_t)(br->first_plane + k) * 4;
            double d = rvw_brush_expanded_distance(pl, rvw_player_box_min, rvw_player_box_max);
            margin = fmaxf(margin, (float)(pl[0] * o[0] + pl[1] * o[1] + pl[2] * o[2] - d));
            memcpy(planes + k * 4, pl, 4 * sizeof(float));
        }
        if (fabsf(margin) < 0.25f)
            continue;
        uint32_t n = br->plane_count;
        for (int k = 0; k < 6; k++) { /* the box's own planes at o */
            int axis = k / 2;
            float *pl = planes + (n + (uint32_t)k) * 4;
            pl[0] = pl[1] = pl[2] = 0;
            pl[axis] = k & 1 ? 1.0f : -1.0f;
            pl[3] = k & 1 ? o[axis] + rvw_player_box_max[axis] : -(o[axis] + rvw_player_box_min[axis]);
        }
        rvw_box meet;
        bool exact = rvw_brush_shape_of(planes, n + 6, &meet) == RVW_BRUSH_SOLID;
        /* only this brush is near o? the other brushes could block too: test this one alone */
        rvw_bsp_map one = l.map;
        one.brushes = (rvw_bsp_brush *)br;
        one.brush_count = 1;
        assert_int_equal(rvw_path_box_blocked(&one, o), exact);
        assert_int_equal(margin < 0, exact);
        agreed++;
    }
    assert_true(agreed > HEAVY(10000, 2000));
    unload(&l);
    free(bytes);
}

/* A leg whose line of eyes never enters the pillar, but whose box would scrape along it:
 * blocked. 16 units further out it is free. */
static void test_path_sweep_catches_a_grazing_leg(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    /* the pillar b3 is Y-up x in [300, 364], z in [-32, 32]: a leg along z = 40 */
    float a[3] = { 250, 24, 40 }, b[3] = { 420, 24, 40 };
    assert_false(rvw_path_box_blocked(&l.map, a));
    assert_false(rvw_path_box_blocked(&l.map, b));
    assert_true(rvw_path_sweep(&l.map, a, b) < 1.0);
    double t = rvw_path_sweep(&l.map, a, b);
    assert_float_equal(250 + 170 * t, 300 - 15, 0.5); /* the box's front meets the pillar */
    a[2] = b[2] = 48;
    assert_true(rvw_path_sweep(&l.map, a, b) == 1.0);
    /* the player clip brush blocks the box as a solid does */
    float c[3] = { -250, 24, 150 }, d[3] = { -250, 24, 350 };
    assert_true(rvw_path_sweep(&l.map, c, d) < 1.0);
    unload(&l);
    free(bytes);
}

static void assert_path_stays_free(const loaded *l)
{
    for (uint32_t f = 0; f < l->level.frame_count; f++) {
        const rvw_camera *c = &l->level.path[f];
        float origin[3] = { c->eye[0], c->eye[1] - RVW_PATH_EYE_HEIGHT, c->eye[2] };
        assert_false(rvw_path_box_blocked(&l->map, origin));
        if (f > 0 && !c->cut) {
            const rvw_camera *p = &l->level.path[f - 1];
            float before[3] = { p->eye[0], p->eye[1] - RVW_PATH_EYE_HEIGHT, p->eye[2] };
            assert_true(rvw_path_sweep(&l->map, before, origin) == 1.0);
        }
    }
}

static void test_path_moves_or_drops_points_in_solids(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    assert_int_equal(l.map.point_count, 5);
    float o[3], moved;
    /* A: free, lifted 9 and settled back on the floor, a skin above it */
    assert_true(rvw_path_place(&l.map, &l.map.points[0], o, &moved));
    assert_vec3(o, 0, 24 + RVW_PATH_SKIN, 0);
    assert_float_equal(moved, 0, 0);
    /* B: in the clip brush, 65 units from a free place: dropped */
    assert_false(rvw_path_place(&l.map, &l.map.points[1], o, &moved));
    /* C: 14 units into the floor: lifted 14 */
    assert_true(rvw_path_place(&l.map, &l.map.points[2], o, &moved));
    assert_vec3(o, 400, 24, 100);
    assert_float_equal(moved, 14, 1e-4);
    /* D: 7 units into the pillar: 8 sideways, now clear of it */
    assert_true(rvw_path_place(&l.map, &l.map.points[3], o, &moved));
    assert_float_equal(moved, 8, 1e-4);
    assert_float_equal(o[1], 24, 1e-4);
    assert_true(o[2] + RVW_PLAYER_HALF_WIDTH <= -32);
    /* E: inside the cut pillar: dropped */
    assert_false(rvw_path_place(&l.map, &l.map.points[4], o, &moved));
    /* an item hovering with its box against the pillar's side still settles on the floor */
    rvw_bsp_point beside = { .origin = { 300 - RVW_PLAYER_HALF_WIDTH, 60, 0 } };
    assert_true(rvw_path_place(&l.map, &beside, o, &moved));
    assert_float_equal(moved, 0, 0);
    assert_vec3(o, 300 - RVW_PLAYER_HALF_WIDTH, 24 + RVW_PATH_SKIN, 0);
    rvw_path_stats ps;
    assert_int_equal(rvw_path_build(&l.level, &l.map, &ps), RVW_PATH_BUILT);
    assert_int_equal(ps.points, 5);
    assert_int_equal(ps.moved, 2);
    assert_int_equal(ps.dropped, 2);
    assert_float_equal(ps.max_move, 14, 1e-4);
    assert_int_equal(ps.legs + ps.detours + ps.jumps, 2);
    /* A -> C runs into the ramp at the foot: not straight */
    assert_int_equal(ps.legs, 0);
    assert_path_stays_free(&l);
    unload(&l);
    free(bytes);
}

/* With a PVS, the eye stays in the map: a hand-made tree whose x >= 200 half is the void
 * (cluster -1) drops C and D, and no frame's eye goes there. */
static void test_path_keeps_the_eye_inside_the_map(void **state)
{
    (void)state;
    uint8_t *bytes;
    loaded l;
    load_room(&l, &bytes);
    float planes[4] = { 1, 0, 0, 200 };
    int32_t children[2] = { -1, -2 }, clusters[2] = { -1, 0 };
    rvw_bsp_pvs keep = l.map.pvs;
    l.map.pvs = (rvw_bsp_pvs){ .valid = true, .node_count = 1, .node_planes = planes,
                               .node_children = children, .leaf_count = 2, .leaf_clusters = clusters };
    rvw_path_stats ps;
    assert_int_equal(rvw_path_build(&l.level, &l.map, &ps), RVW_PATH_BUILT);
    assert_int_equal(ps.dropped, 4);
    for (uint32_t f = 0; f < l.level.frame_count; f++)
        assert_true(l.level.path[f].eye[0] < 200);
    assert_path_stays_free(&l);
    l.map.pvs = keep;
    unload(&l);
    free(bytes);
}

/* The path's work is counted and bounded: the room's path is the same bytes within a budget
 * of exactly its own work and given up one test short of it; a hostile set of brushes all
 * around every point (thousands sharing one box, as brushes sharing one run of brushsides
 * can) is given up at the budget instead of taking some two billion tests. */
static void test_path_gives_up_beyond_its_budget(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = bspb_build_room(&size, NULL);
    loaded l;
    load(&l, bytes, size);
    assert_true(l.ok);
    rvw_path_stats whole, within;
    assert_int_equal(rvw_path_build(&l.level, &l.map, &whole), RVW_PATH_BUILT);
    assert_true(whole.work > 0 && whole.work < RVW_PATH_WORK_BUDGET);
    uint32_t frames = l.level.frame_count;
    rvw_camera *path = malloc(frames * sizeof *path);
    assert_non_null(path);
    memcpy(path, l.level.path, frames * sizeof *path);
    unload(&l);
    load(&l, bytes, size);
    assert_int_equal(rvw_path_build_within(&l.level, &l.map, whole.work, &within), RVW_PATH_BUILT);
    assert_true(within.work == whole.work);
    assert_int_equal(l.level.frame_count, frames);
    for (uint32_t f = 0; f < frames; f++) { /* field by field: the struct's padding is not the path */
        assert_memory_equal(l.level.path[f].eye, path[f].eye, sizeof path[f].eye);
        assert_memory_equal(l.level.path[f].forward, path[f].forward, sizeof path[f].forward);
        assert_int_equal(l.level.path[f].cut, path[f].cut);
    }
    unload(&l);
    load(&l, bytes, size);
    assert_int_equal(rvw_path_build_within(&l.level, &l.map, whole.work - 1, &within), RVW_PATH_OVER_BUDGET);
    unload(&l);

    enum { BRUSHES = 4096, POINTS = 64 };
    load(&l, bytes, size);
    static const float box[6][4] = { { -1, 0, 0, 2000 }, { 1, 0, 0, 2000 }, { 0, -1, 0, 2000 },
                                      { 0, 1, 0, 2000 }, { 0, 0, -1, 2000 }, { 0, 0, 1, 2000 } };
    rvw_bsp_brush *brushes = malloc(BRUSHES * sizeof *brushes);
    rvw_bsp_point points[POINTS];
    assert_non_null(brushes);
    for (uint32_t i = 0; i < BRUSHES; i++)
        brushes[i] = (rvw_bsp_brush){ 0, 6, RVW_CONTENTS_SOLID, { { -2000, -2000, -2000 }, { 2000, 2000, 2000 } } };
    for (uint32_t i = 0; i < POINTS; i++)
        points[i] = (rvw_bsp_point){ .origin = { (float)i, 0, 0 } };
    rvw_bsp_map keep = l.map;
    l.map.brushes = brushes;
    l.map.brush_count = BRUSHES;
    l.map.planes = (float *)box;
    l.map.points = points;
    l.map.point_count = POINTS;
    uint64_t budget = 1000000;
    assert_int_equal(rvw_path_build_within(&l.level, &l.map, budget, &within), RVW_PATH_OVER_BUDGET);
    assert_true(within.work > budget && within.work <= budget + 1 + 6);
    l.map = keep;
    unload(&l);
    free(brushes);
    free(path);
    free(bytes);
}

/* On the real maps, when installed: every frame's box is free and every walked step too. */
static void test_path_on_real_maps_keeps_the_box_free(void **state)
{
    (void)state;
    static const char *const maps[] = { "oa_dm1", "oa_dm4", "oa_ctf2" };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        rvw_map_source src;
        char err[256];
        uint8_t *bytes;
        size_t size;
        bool missing;
        assert_true(rvw_map_source_parse(maps[i], &src, err, sizeof err));
        if (!rvw_map_source_read(&src, &bytes, &size, &missing, err, sizeof err)) {
            skip(); /* openarena-081-maps not installed, or no libzip */
            return;
        }
        loaded l;
        load(&l, bytes, size);
        assert_true(l.ok);
        rvw_path_stats ps;
        assert_int_equal(rvw_path_build(&l.level, &l.map, &ps), RVW_PATH_BUILT);
        assert_true(l.level.frame_count > 100);
        assert_true(ps.legs + ps.detours > 0);
        assert_path_stays_free(&l);
        unload(&l);
        free(bytes);
    }
}

/* bspb_cut (the fuzz target's seeds) cuts a smaller map that still reads. */
static void test_cut_maps_still_read(void **state)
{
    (void)state;
    size_t size, cut_size;
    uint8_t *room = bspb_build_room(&size, NULL);
    bspb_cut_spec spec = { .first_brush = 1, .brush_count = 3, .first_surface = 2, .surface_count = 2, .point_count = 2 };
    uint8_t *cut = bspb_cut(room, size, &spec, &cut_size);
    assert_non_null(cut);
    assert_true(cut_size < size);
    loaded l;
    load(&l, cut, cut_size);
    assert_true(l.ok);
    assert_int_equal(l.map.stats.brushes, 3);      /* ramp, clip, pillar */
    assert_int_equal(l.level.convex_count, 2);
    assert_int_equal(l.level.object_count, 2);     /* patch, soup */
    assert_int_equal(l.map.point_count, 2);
    assert_int_equal(l.level.meshes[0].flags, RVW_MESH_PATCH);
    unload(&l);
    free(cut);
    spec = (bspb_cut_spec){ .brush_count = 100, .surface_count = 100, .point_count = 100 };
    cut = bspb_cut(room, size, &spec, &cut_size);
    load(&l, cut, cut_size);
    assert_true(l.ok);
    assert_int_equal(l.map.stats.brushes, 7);
    assert_int_equal(l.level.object_count, 4);
    unload(&l);
    free(cut);
    assert_null(bspb_cut(room, 40, &spec, &cut_size));
    free(room);
}

/* A one-object level from explicit triangles (9 floats each). */
static void level_of(rvw_level *level, const float *tris, uint32_t n)
{
    memset(level, 0, sizeof *level);
    rvw_level_begin_object(level, RVW_OBJ_SURFACE, -1);
    for (uint32_t i = 0; i < n; i++)
        rvw_level_add_triangle(level, tris + i * 9, tris + i * 9 + 3, tris + i * 9 + 6);
}

static const float identity[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };

static void test_reference_counts_pixel_centres_exactly(void **state)
{
    (void)state;
    rvw_reference ref;
    assert_true(rvw_reference_init(&ref, 8, 8));
    rvw_depth_convention gl = { false, false };
    /* In NDC with the identity matrix, pixel i spans [-1 + i/4, -1 + (i+1)/4]. A square over
     * x, y in [-0.5, 0.5] covers centres 2.5/4 .. 5.5/4 of the way: pixels 2..5 = 16. */
    float quad[18] = { -0.5f, -0.5f, 0, 0.5f, -0.5f, 0, 0.5f, 0.5f, 0,
                       -0.5f, -0.5f, 0, 0.5f, 0.5f, 0, -0.5f, 0.5f, 0 };
    rvw_level level;
    level_of(&level, quad, 2);
    rvw_level_finish(&level);
    assert_int_equal(rvw_reference_render(&ref, &level, identity, gl, NULL), 1);
    assert_int_equal(ref.pixels[0], 16);
    /* the reversed winding (both sides drawn) covers the same */
    for (int t = 0; t < 2; t++) {
        float *v = level.triangles + t * 9;
        float tmp[3];
        memcpy(tmp, v + 3, sizeof tmp);
        memcpy(v + 3, v + 6, sizeof tmp);
        memcpy(v + 6, tmp, sizeof tmp);
    }
    assert_int_equal(rvw_reference_render(&ref, &level, identity, gl, NULL), 1);
    assert_int_equal(ref.pixels[0], 16);
    /* an edge exactly through pixel centres counts them: x in [-0.375, 0.375] hits the
     * centres of pixels 2 and 5 on its edges */
    for (int i = 0; i < 18; i += 3)
        level.triangles[i] = level.triangles[i] < 0 ? -0.375f : 0.375f;
    rvw_level_finish(&level);
    rvw_reference_render(&ref, &level, identity, gl, NULL);
    assert_int_equal(ref.pixels[0], 16);
    /* beyond the far plane (z > w) nothing is drawn; excluded objects neither */
    for (int i = 2; i < 18; i += 3)
        level.triangles[i] = 1.5f;
    rvw_level_finish(&level);
    assert_int_equal(rvw_reference_render(&ref, &level, identity, gl, NULL), 0);
    uint8_t none = 0;
    assert_int_equal(rvw_reference_render(&ref, &level, identity, gl, &none), 0);
    rvw_level_free(&level);
    rvw_reference_free(&ref);
}

/* object 0: a big wall at z = -10; object 1: a small box behind it; object 2: a small box
 * beside it; object 3: a floor crossing the near plane under the camera. The camera at the
 * origin looks down -z; a 160 x 90 reference. */
static const rvw_box four_wall = { { -5, -5, -10.5f }, { 5, 5, -10 } };
static const rvw_box four_hidden = { { -1, -1, -20 }, { 1, 1, -18 } };

static void four_box_scene(rvw_level *level, rvw_view *view, rvw_reference *ref)
{
    const rvw_box beside = { { 11, -1, -20 }, { 13, 1, -18 } };
    const rvw_box floor_box = { { -2, -3, -50 }, { 2, -2.9f, 5 } };
    const rvw_box *boxes[4] = { &four_wall, &four_hidden, &beside, &floor_box };
    memset(level, 0, sizeof *level);
    for (int i = 0; i < 4; i++) {
        rvw_level_begin_object(level, RVW_OBJ_SURFACE, -1);
        rvw_level_add_box(level, boxes[i]);
    }
    rvw_level_finish(level);
    level->fov_y = 1.0f;
    level->near_plane = 0.5f;
    level->far_plane = 100;
    rvw_camera cam = { { 0, 0, 0 }, { 0, 0, -1 }, false };
    rvw_level_add_camera(level, &cam);
    rvw_view_make(level, 0, 160, 90, view);
    assert_true(rvw_reference_init(ref, 160, 90));
}

static void test_reference_hides_what_is_behind_and_clips_near(void **state)
{
    (void)state;
    rvw_level level;
    rvw_view view;
    rvw_reference ref;
    four_box_scene(&level, &view, &ref);
    rvw_depth_convention gl = { false, false };
    assert_int_equal(rvw_reference_render(&ref, &level, view.view_projection, gl, NULL), 3);
    assert_true(ref.pixels[0] > 0);
    assert_int_equal(ref.pixels[1], 0);
    assert_true(ref.pixels[2] > 0);
    assert_true(ref.pixels[3] > 0);
    /* without the wall, the box behind it shows */
    uint8_t include[4] = { 0, 1, 1, 1 };
    rvw_reference_render(&ref, &level, view.view_projection, gl, include);
    assert_true(ref.pixels[1] > 0);
    rvw_reference_free(&ref);
    rvw_level_free(&level);
}

/* The depth image of a pre-pass (--depth-feed): window depth of the nearest surface at each
 * pixel centre, the clear value where nothing is drawn, row 0 at the bottom. */
static void test_depth_image_holds_the_nearest_surface_at_pixel_centres(void **state)
{
    (void)state;
    rvw_level level;
    rvw_view view;
    rvw_reference ref;
    four_box_scene(&level, &view, &ref);
    rvw_depth_convention gl = { false, false };
    static float depth[160 * 90];
    assert_true(rvw_reference_depth(&ref, &level, view.view_projection, gl, NULL, depth) > 0);
    /* the camera looks down -z from the origin with an identity view: at a face z = -d the
     * window depth is 0.5 (p10 (-d) + p14) / d + 0.5 */
    const float *p = view.projection;
    double wall = 0.5 * ((double)p[10] * -10 + p[14]) / 10 + 0.5, behind = 0.5 * ((double)p[10] * -18 + p[14]) / 18 + 0.5;
    float centre = depth[45 * 160 + 80];
    assert_true(fabs(centre - wall) <= 1e-7);
    assert_true(depth[89 * 160 + 0] == 1.0f); /* top left: nothing drawn */
    /* the floor under the camera fills the bottom rows, nearer than the wall */
    assert_true(depth[0 * 160 + 80] < centre);
    assert_true(depth[89 * 160 + 80] == 1.0f);
    /* without the wall, the box behind it */
    uint8_t include[4] = { 0, 1, 1, 1 };
    rvw_reference_depth(&ref, &level, view.view_projection, gl, include, depth);
    assert_true(fabs(depth[45 * 160 + 80] - behind) <= 1e-7);
    rvw_reference_free(&ref);
    rvw_level_free(&level);
}

/* What the walk's depth pre-pass keeps: a map's opaque surfaces (the ones with a mesh); the
 * city's buildings, props and ground, the storeys of its towers inside this frame's and the
 * next frame's committed slices; no vehicles, stand-ins or deferred storeys. */
static void test_depth_feed_keeps_only_what_stays_put(void **state)
{
    (void)state;
    rvw_level level;
    rvw_view view;
    rvw_reference ref;
    four_box_scene(&level, &view, &ref);
    rvw_reference_free(&ref);
    level.meshes = calloc(1, sizeof *level.meshes);
    assert_non_null(level.meshes);
    level.mesh_count = level.mesh_capacity = 1;
    level.meshes[0].object = 0; /* the wall is opaque; the other surfaces are translucent */
    rvw_feed feed;
    assert_true(rvw_feed_init(&feed, &level, 32, 18, 96, 54));
    assert_true(rvw_feed_keeps(&feed, &level, 0, 0));
    assert_false(rvw_feed_keeps(&feed, &level, 1, 0));
    uint8_t verdict[4] = { RVW_DRAWN, RVW_DRAWN, RVW_CULLED_OCCLUSION, RVW_DRAWN };
    assert_true(rvw_feed_draw(&feed, &level, &view, verdict));
    assert_true(feed.ready && feed.include[0] && !feed.include[1] && !feed.include[2]);
    /* Drawn at 96 x 54 and reduced 3 x 3 to 32 x 18: each texel the farthest of its nine
     * pixels, so a texel the wall's outline crosses keeps the clear value behind it. */
    uint32_t mixed = 0;
    for (uint32_t ty = 0; ty < 18; ty++)
        for (uint32_t tx = 0; tx < 32; tx++) {
            float far = 0, near = 1;
            for (uint32_t y = ty * 3; y < ty * 3 + 3; y++)
                for (uint32_t x = tx * 3; x < tx * 3 + 3; x++) {
                    far = fmaxf(far, feed.full[y * 96 + x]);
                    near = fminf(near, feed.full[y * 96 + x]);
                }
            assert_true(feed.depth[ty * 32 + tx] == far);
            mixed += near < far;
        }
    assert_true(mixed > 0);
    rvw_feed_free(&feed);
    rvw_level_free(&level);

    rvw_city city;
    assert_true(rvw_city_generate(&city, &level));
    assert_true(rvw_feed_init(&feed, &level, 32, 18, 32, 18));
    uint32_t seen[RVW_OBJ_KIND_COUNT] = {0}, kept[RVW_OBJ_KIND_COUNT] = {0};
    for (uint32_t i = 0; i < level.object_count; i++) {
        seen[level.objects[i].kind]++;
        kept[level.objects[i].kind] += rvw_feed_keeps(&feed, &level, i, 0);
    }
    assert_int_equal(kept[RVW_OBJ_BUILDING], seen[RVW_OBJ_BUILDING]);
    assert_int_equal(kept[RVW_OBJ_PROP], seen[RVW_OBJ_PROP]);
    assert_int_equal(kept[RVW_OBJ_TERRAIN], seen[RVW_OBJ_TERRAIN]);
    assert_int_equal(kept[RVW_OBJ_VEHICLE], 0);
    assert_int_equal(kept[RVW_OBJ_HLOD_PROXY], 0);
    assert_true(kept[RVW_OBJ_PART_ITEM] > 0 && kept[RVW_OBJ_PART_ITEM] < seen[RVW_OBJ_PART_ITEM]);
    /* a storey of tower 0 that the slice leaves between one frame and the next: kept while
     * both slices hold it, not in the frame before it is cut away */
    bool found = false;
    for (uint32_t f = 160; f < 300 && !found; f++) {
        rvw_box now, next, pending;
        rvw_city_slice(&city, 0, f, &now, &pending);
        rvw_city_slice(&city, 0, f + 1, &next, &pending);
        for (uint32_t i = 0; i < level.object_count && !found; i++) {
            int32_t g = level.objects[i].group;
            if (level.objects[i].kind != RVW_OBJ_PART_ITEM || level.groups[g].parent != city.towers[0].group ||
                level.groups[g].deferred)
                continue;
            float y = level.groups[g].bounds.min[1];
            if (y <= now.max[1] && y > next.max[1]) {
                assert_false(rvw_feed_keeps(&feed, &level, i, f));
                assert_true(rvw_feed_keeps(&feed, &level, i, f - 2));
                found = true;
            }
        }
    }
    assert_true(found);
    for (uint32_t i = 0; i < level.object_count; i++)
        if (level.objects[i].kind == RVW_OBJ_PART_ITEM && level.groups[level.objects[i].group].deferred)
            assert_false(rvw_feed_keeps(&feed, &level, i, 150));
    rvw_feed_free(&feed);
    rvw_city_free(&city);
    rvw_level_free(&level);
}

/* The ideal-occluder bound: the same scene with the wall as an occluder box (not drawn in
 * the depth test of the objects). The wall's own faces lie on the occluder: a tie, seen.
 * The box behind is hidden, the one beside seen, and the floor crossing under the wall is
 * seen (its near part is in front). With the boxes drawn instead of triangles: the same. */
static void test_ideal_occluders_hide_only_what_lies_behind_them(void **state)
{
    (void)state;
    rvw_level level;
    rvw_view view;
    rvw_reference ref;
    four_box_scene(&level, &view, &ref);
    rvw_depth_convention gl = { false, false };
    for (int boxes_mode = 0; boxes_mode < 2; boxes_mode++) {
        uint8_t seen[4] = { 9, 9, 9, 9 };
        assert_int_equal(rvw_reference_ideal_occluders(&ref, &level, view.view_projection, gl, NULL, &four_wall, 1,
                                                       boxes_mode, seen), 3);
        assert_int_equal(seen[0], 1);
        assert_int_equal(seen[1], 0);
        assert_int_equal(seen[2], 1);
        assert_int_equal(seen[3], 1);
        /* no occluder: every object in view is seen; excluded objects are not counted */
        assert_int_equal(rvw_reference_ideal_occluders(&ref, &level, view.view_projection, gl, NULL, NULL, 0,
                                                       boxes_mode, seen), 4);
        uint8_t include[4] = { 1, 0, 1, 1 };
        assert_int_equal(rvw_reference_ideal_occluders(&ref, &level, view.view_projection, gl, include, NULL, 0,
                                                       boxes_mode, seen), 3);
        assert_int_equal(seen[1], 0);
    }
    /* the same bound in steps, the wall drawn as triangles: what the walk does for brushes
     * and surfaces */
    float wall[108];
    rvw_box_triangles(&four_wall, wall);
    uint8_t seen[4] = { 9, 9, 9, 9 };
    assert_true(rvw_reference_occluders_clear(&ref));
    rvw_reference_occluders_draw(&ref, view.view_projection, gl, wall, 12);
    assert_int_equal(rvw_reference_ideal_count(&ref, &level, view.view_projection, gl, NULL, false, seen), 3);
    assert_int_equal(seen[1], 0);
    assert_int_equal(rvw_reference_ideal_count(&ref, &level, view.view_projection, gl, NULL, true, seen), 3);
    /* the oracle's frustum test */
    assert_true(rvw_reference_box_in_view(&four_hidden, view.view_projection, gl));
    rvw_box behind_eye = { { -1, -1, 2 }, { 1, 1, 3 } };
    assert_false(rvw_reference_box_in_view(&behind_eye, view.view_projection, gl));
    rvw_reference_free(&ref);
    rvw_level_free(&level);
}

/* Naming a false cull: with the wall left out of the render, the box behind it is seen; the
 * wall's triangles lie in front of every one of its pixels, the box beside it in front of
 * none, and the ideal bound's buffer (the wall) covers them all together. */
static void test_reference_names_the_occluders_in_front(void **state)
{
    (void)state;
    rvw_level level;
    rvw_view view;
    rvw_reference ref;
    four_box_scene(&level, &view, &ref);
    rvw_depth_convention gl = { false, false };
    uint8_t include[4] = { 0, 1, 1, 1 };
    rvw_reference_render(&ref, &level, view.view_projection, gl, include);
    uint32_t seen = ref.pixels[1];
    assert_true(seen > 0);
    float wall[108], beside[108];
    rvw_box_triangles(&four_wall, wall);
    rvw_box_triangles(&level.objects[2].bounds, beside);
    assert_int_equal(rvw_reference_cover(&ref, view.view_projection, gl, 1, wall, 12), seen);
    assert_int_equal(rvw_reference_cover(&ref, view.view_projection, gl, 1, beside, 12), 0);
    /* the floor runs under the wall: the wall is in front of only its far part */
    int64_t floor_behind = rvw_reference_cover(&ref, view.view_projection, gl, 3, wall, 12);
    assert_true(floor_behind > 0 && floor_behind < ref.pixels[3]);
    /* an object's pixels are counted once, though a box's front and back both cover them */
    assert_int_equal(rvw_reference_cover(&ref, view.view_projection, gl, 1, wall, 12), seen);
    assert_int_equal(rvw_reference_covered_by_ideal(&ref, 1), 0); /* no ideal bound yet */
    rvw_reference_ideal_occluders(&ref, &level, view.view_projection, gl, include, &four_wall, 1, false, NULL);
    assert_int_equal(rvw_reference_covered_by_ideal(&ref, 1), seen);
    assert_int_equal(rvw_reference_covered_by_ideal(&ref, 2), 0);
    rvw_reference_free(&ref);
    rvw_level_free(&level);
}

/* The PVS lookups on a hand-made tree: node 0 splits x = 0 (front: leaf 0, cluster 0;
 * back: leaf 1, cluster 1); cluster 0 sees only itself, cluster 1 sees both. Object 0 sits
 * in leaf 1, object 1 in no leaf, object 2 in a leaf outside every cluster. */
static void test_pvs_lookups_follow_the_tree_and_the_rows(void **state)
{
    (void)state;
    float planes[4] = { 1, 0, 0, 0 };
    int32_t children[2] = { -1, -2 }, clusters[2] = { 0, 1 };
    uint8_t rows[2] = { 0x1, 0x3 };
    uint32_t first[4] = { 0, 1, 1, 2 };
    int32_t object_clusters[2] = { 1, -1 };
    rvw_bsp_pvs pvs = { .valid = true, .cluster_count = 2, .bytes_per_cluster = 1, .rows = rows,
                        .node_count = 1, .node_planes = planes, .node_children = children, .leaf_count = 2,
                        .leaf_clusters = clusters, .object_count = 3, .object_first = first,
                        .object_clusters = object_clusters };
    float front[3] = { 5, 0, 0 }, back[3] = { -5, 0, 0 };
    assert_int_equal(rvw_bsp_pvs_cluster(&pvs, front, NULL), 0);
    assert_int_equal(rvw_bsp_pvs_cluster(&pvs, back, NULL), 1);
    assert_false(rvw_bsp_pvs_object_visible(&pvs, 0, 0)); /* cluster 0 does not see cluster 1 */
    assert_true(rvw_bsp_pvs_object_visible(&pvs, 1, 0));
    assert_true(rvw_bsp_pvs_object_visible(&pvs, 0, 1));  /* in no leaf */
    assert_true(rvw_bsp_pvs_object_visible(&pvs, 0, 2));  /* a leaf of cluster -1 */
    assert_true(rvw_bsp_pvs_object_visible(&pvs, -1, 0)); /* camera outside every cluster */
    assert_true(rvw_bsp_pvs_object_visible(&pvs, 7, 0));  /* a cluster beyond the visdata */
    /* a segment across the split lies in clusters 0 and 1; in no cluster once leaf 0 is
     * the void; a segment in leaf 1 alone still is */
    float far_back[3] = { -9, 0, 0 };
    assert_true(rvw_bsp_pvs_segment_in_clusters(&pvs, back, front, NULL));
    clusters[0] = -1;
    assert_false(rvw_bsp_pvs_segment_in_clusters(&pvs, back, front, NULL));
    assert_false(rvw_bsp_pvs_segment_in_clusters(&pvs, front, front, NULL));
    assert_true(rvw_bsp_pvs_segment_in_clusters(&pvs, back, far_back, NULL));
    clusters[0] = 0;
    pvs.valid = false;
    assert_true(rvw_bsp_pvs_object_visible(&pvs, 0, 0));
    assert_true(rvw_bsp_pvs_segment_in_clusters(&pvs, back, front, NULL));
    assert_int_equal(rvw_bsp_pvs_cluster(&pvs, front, NULL), -1);
    /* a tree that loops never ends the walk: no cluster */
    int32_t loop[2] = { 0, 0 };
    pvs.valid = true;
    pvs.node_children = loop;
    assert_int_equal(rvw_bsp_pvs_cluster(&pvs, front, NULL), -1);
    assert_false(rvw_bsp_pvs_segment_in_clusters(&pvs, back, front, NULL));
}

/* A leaf hung under many nodes gives its objects once: a chain of 10,000 nodes whose back
 * child is always leaf 0, with leaf 0 listing 100,000 leafsurfaces, is 100,000 pairs to
 * sort, not a billion (8 GB). */
static void test_pvs_reader_takes_a_shared_leaf_once(void **state)
{
    (void)state;
    enum { NODES = 10000, LEAFSURFACES = 100000, SURFACES = 64, NODE = 36, LEAF = 48 };
    uint8_t *nodes = calloc(NODES, NODE), *leafs = calloc(1, LEAF);
    int32_t *leafsurfaces = malloc(LEAFSURFACES * sizeof *leafsurfaces);
    int32_t surface_object[SURFACES];
    assert_true(nodes && leafs && leafsurfaces);
    for (int32_t i = 0; i < NODES; i++) {
        int32_t node[3] = { 0, i + 1 < NODES ? i + 1 : -1, -1 }; /* plane 0, front, back = leaf 0 */
        memcpy(nodes + (size_t)i * NODE, node, sizeof node);
    }
    int32_t leaf_surfaces[2] = { 0, LEAFSURFACES }; /* cluster 0; first, count at byte 32 */
    memcpy(leafs + 32, leaf_surfaces, sizeof leaf_surfaces);
    for (int32_t k = 0; k < LEAFSURFACES; k++)
        leafsurfaces[k] = k % SURFACES;
    for (int32_t k = 0; k < SURFACES; k++)
        surface_object[k] = k;
    float plane[4] = { 0, 0, 1, 0 };
    rvw_pvs_lumps lumps = { .nodes = nodes, .leafs = leafs, .leafsurfaces = (const uint8_t *)leafsurfaces,
                            .node_bytes = NODES * NODE, .leaf_bytes = LEAF,
                            .leafsurface_bytes = LEAFSURFACES * sizeof *leafsurfaces,
                            .planes = (const uint8_t *)plane, .plane_count = 1,
                            .surface_object = surface_object, .surface_count = SURFACES,
                            .object_count = SURFACES };
    rvw_bsp_pvs pvs;
    clock_t started = clock();
    assert_true(rvw_bsp_pvs_read(&lumps, &pvs));
    double seconds = (double)(clock() - started) / CLOCKS_PER_SEC;
    assert_true(pvs.valid);
    for (uint32_t o = 0; o < SURFACES; o++) {
        assert_int_equal(pvs.object_first[o + 1] - pvs.object_first[o], 1);
        assert_int_equal(pvs.object_clusters[pvs.object_first[o]], 0);
    }
    assert_true(seconds < 5); /* a billion pairs take minutes */
    rvw_bsp_pvs_free(&pvs);
    free(nodes);
    free(leafs);
    free(leafsurfaces);
}

static uint64_t digest_level(const rvw_level *level)
{
    uint64_t h = 1469598103934665603ull;
    const uint8_t *p = (const uint8_t *)level->triangles;
    for (size_t i = 0; i < (size_t)level->triangle_count * 9 * sizeof(float); i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void test_city_is_big_deterministic_and_well_formed(void **state)
{
    (void)state;
    rvw_city c1, c2;
    rvw_level l1, l2;
    assert_true(rvw_city_generate(&c1, &l1));
    assert_true(rvw_city_generate(&c2, &l2));
    assert_true(l1.object_count >= 50000);
    assert_int_equal(l1.object_count, l2.object_count);
    assert_true(digest_level(&l1) == digest_level(&l2));
    assert_int_equal(l1.frame_count, RVW_CITY_FRAMES);
    assert_int_equal(c1.tower_count, RVW_CITY_TOWERS);
    uint32_t kinds[RVW_OBJ_KIND_COUNT] = {0};
    for (uint32_t i = 0; i < l1.object_count; i++) {
        kinds[l1.objects[i].kind]++;
        assert_true(l1.objects[i].group < (int32_t)l1.group_count);
        if (l1.objects[i].ladder)
            assert_true(l1.objects[i].ladder <= l1.ladder_count);
    }
    assert_int_equal(kinds[RVW_OBJ_BUILDING], l1.occluder_count);
    assert_int_equal(kinds[RVW_OBJ_HLOD_PROXY], 16);
    assert_int_equal(kinds[RVW_OBJ_TERRAIN], c1.terrain.count_x * c1.terrain.count_z);
    assert_int_equal(kinds[RVW_OBJ_VEHICLE], c1.vehicle_count);
    assert_true(kinds[RVW_OBJ_PART_ITEM] > 0 && kinds[RVW_OBJ_PROP] > 40000);
    uint32_t deferred = 0;
    for (uint32_t g = 0; g < l1.group_count; g++) {
        assert_true(l1.groups[g].parent < (int32_t)g); /* parents first */
        deferred += l1.groups[g].deferred;
        if (l1.groups[g].kind == RVW_GROUP_DISTRICT) {
            /* the stand-in covers at least its district's buildings */
            int32_t proxy = l1.groups[g].hlod_proxy;
            assert_true(proxy >= 0);
            assert_true(l1.objects[proxy].bounds.max[1] >= l1.groups[g].bounds.max[1] - 1e-3f);
        }
    }
    assert_int_equal(deferred, RVW_CITY_TOWERS);
    for (uint32_t i = 0; i < l1.ladder_count; i++)
        for (uint32_t k = 1; k < l1.ladders[i].count; k++)
            assert_true(l1.ladders[i].thresholds[k] < l1.ladders[i].thresholds[k - 1]);
    /* vehicles move; the committed slice is not the pending one */
    rvw_box before = l1.objects[c1.vehicles[1].object].bounds;
    rvw_city_animate(&c1, &l1, 60);
    assert_true(memcmp(&before, &l1.objects[c1.vehicles[1].object].bounds, sizeof before) != 0);
    rvw_box committed, pending;
    rvw_city_slice(&c1, 0, 0, &committed, &pending);
    assert_true(committed.max[1] < c1.towers[0].bounds.max[1]);
    assert_true(committed.max[1] != pending.max[1]);
    rvw_city_free(&c1);
    rvw_city_free(&c2);
    rvw_level_free(&l1);
    rvw_level_free(&l2);
}

static void test_percentile_is_nearest_rank(void **state)
{
    (void)state;
    double v[5] = { 5, 1, 4, 2, 3 };
    assert_float_equal(rvw_percentile(v, 5, 50), 3, 0);
    assert_float_equal(rvw_percentile(v, 5, 99), 5, 0);
    assert_float_equal(rvw_percentile(v, 5, 0), 1, 0);
    assert_float_equal(rvw_percentile(v, 0, 50), -1, 0);
    assert_float_equal(v[0], 5, 0); /* not reordered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_reads_the_builder_map),
        cmocka_unit_test(test_reader_chooses_the_planar_surfaces),
        cmocka_unit_test(test_reader_refuses_every_truncation),
        cmocka_unit_test(test_reader_survives_random_corruption),
        cmocka_unit_test(test_reader_names_what_is_wrong),
        cmocka_unit_test(test_map_source_splits_pak_and_entry),
        cmocka_unit_test(test_reader_reads_every_solid_brush_and_opaque_surface),
        cmocka_unit_test(test_reader_keeps_every_solid_brush_as_a_candidate),
        cmocka_unit_test(test_reader_refuses_hostile_brushes),
        cmocka_unit_test(test_brush_shapes_from_planes),
        cmocka_unit_test(test_player_box_test_is_exact_for_bevelled_brushes),
        cmocka_unit_test(test_path_sweep_catches_a_grazing_leg),
        cmocka_unit_test(test_path_settles_on_the_floor_and_walks_at_speed),
        cmocka_unit_test(test_path_moves_or_drops_points_in_solids),
        cmocka_unit_test(test_path_keeps_the_eye_inside_the_map),
        cmocka_unit_test(test_path_gives_up_beyond_its_budget),
        cmocka_unit_test(test_path_on_real_maps_keeps_the_box_free),
        cmocka_unit_test(test_cut_maps_still_read),
        cmocka_unit_test(test_reference_counts_pixel_centres_exactly),
        cmocka_unit_test(test_reference_hides_what_is_behind_and_clips_near),
        cmocka_unit_test(test_depth_image_holds_the_nearest_surface_at_pixel_centres),
        cmocka_unit_test(test_depth_feed_keeps_only_what_stays_put),
        cmocka_unit_test(test_ideal_occluders_hide_only_what_lies_behind_them),
        cmocka_unit_test(test_reference_names_the_occluders_in_front),
        cmocka_unit_test(test_pvs_lookups_follow_the_tree_and_the_rows),
        cmocka_unit_test(test_pvs_reader_takes_a_shared_leaf_once),
        cmocka_unit_test(test_city_is_big_deterministic_and_well_formed),
        cmocka_unit_test(test_percentile_is_nearest_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
