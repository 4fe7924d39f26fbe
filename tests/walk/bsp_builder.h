/* A tiny, valid Quake III IBSP v46 map built in memory, for rvis-walk's reader tests and
 * the fuzz target's seed corpus. Header-only (static functions) so each user compiles it.
 *
 * The map (Quake Z-up units):
 *  - entities: worldspawn, info_player_deathmatch at (0 0 24) angle 90, info_player_start at
 *    (200 0 24), weapon_rocketlauncher at (100 100 24), a func_door (ignored);
 *  - shaders: 0 "floor" (drawn, solid), 1 "nodraw" (SURF_NODRAW), 2 "sky" (SURF_SKY),
 *    3 "glass" (solid + translucent);
 *  - surfaces of model 0: a planar quad (2 triangles), a 3x3 patch (128 triangles), a
 *    triangle soup (1 triangle, fog index 7 pointing past the empty fog lump), a sky face
 *    (skipped), a flare (skipped);
 *  - brushes of model 0 (all 6-sided axial boxes): b0 floor 512 x 512 x 16 (side 0
 *    nodraw), b1 with a sky side, b2 translucent, b3 all sides nodraw, b4 100 x 100 x 100,
 *    b5 128 x 8 x 128 (all occluder candidates; the walk declares the planar quad only).
 *
 * bspb_build_room makes a second map for the player box and the occluder candidates (see
 * there), and bspb_cut cuts a smaller valid map out of any map (the fuzz target's seeds). */
#ifndef RVW_BSP_BUILDER_H
#define RVW_BSP_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct bspb {
    uint8_t *data;
    size_t size, capacity;
} bspb;

static void bspb_bytes(bspb *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->size + n > b->capacity) {
        size_t cap = b->capacity ? b->capacity * 2 : 4096;
        while (cap < b->size + n)
            cap *= 2;
        b->data = realloc(b->data, cap);
        b->capacity = cap;
    }
    memcpy(b->data + b->size, p, n);
    b->size += n;
}

static void bspb_i32(bspb *b, int32_t v)
{
    uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    bspb_bytes(b, le, 4);
}

static void bspb_f32(bspb *b, float f)
{
    int32_t v;
    memcpy(&v, &f, 4);
    bspb_i32(b, v);
}

static void bspb_patch_i32(bspb *b, size_t at, int32_t v)
{
    uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    memcpy(b->data + at, le, 4);
}

static void bspb_shader(bspb *b, const char *name, uint32_t surface_flags, uint32_t contents)
{
    char n[64] = {0};
    strncpy(n, name, 63);
    bspb_bytes(b, n, 64);
    bspb_i32(b, (int32_t)surface_flags);
    bspb_i32(b, (int32_t)contents);
}

static void bspb_vertex(bspb *b, float x, float y, float z)
{
    bspb_f32(b, x);
    bspb_f32(b, y);
    bspb_f32(b, z);
    for (int k = 0; k < 7; k++) /* st, lightmap st, normal */
        bspb_f32(b, 0);
    bspb_i32(b, -1);            /* colour */
}

static void bspb_surface(bspb *b, int32_t shader, int32_t fog, int32_t type, int32_t first_vert,
                         int32_t num_verts, int32_t first_index, int32_t num_indexes,
                         int32_t patch_w, int32_t patch_h)
{
    bspb_i32(b, shader);
    bspb_i32(b, fog);
    bspb_i32(b, type);
    bspb_i32(b, first_vert);
    bspb_i32(b, num_verts);
    bspb_i32(b, first_index);
    bspb_i32(b, num_indexes);
    for (int k = 0; k < 5; k++) /* lightmap, lm x/y/w/h */
        bspb_i32(b, 0);
    for (int k = 0; k < 12; k++) /* lmOrigin, lmVecs */
        bspb_f32(b, 0);
    bspb_i32(b, patch_w);
    bspb_i32(b, patch_h);
}

/* Six axial planes (with their flipped pair after each) for box [lo, hi]; returns the index
 * of the first plane. Planes are written as -x, +x, -y, +y, -z, +z at even indices. */
static int32_t bspb_box_planes(bspb *b, int32_t *plane_count, const float lo[3], const float hi[3])
{
    int32_t first = *plane_count;
    for (int k = 0; k < 6; k++) {
        int axis = k / 2;
        float sign = (k & 1) ? 1.0f : -1.0f;
        float d = (k & 1) ? hi[axis] : -lo[axis];
        for (int flip = 0; flip < 2; flip++) {
            float s = flip ? -sign : sign;
            for (int a = 0; a < 3; a++)
                bspb_f32(b, a == axis ? s : 0.0f);
            bspb_f32(b, flip ? -d : d);
            (*plane_count)++;
        }
    }
    return first;
}

enum { BSPB_LUMPS = 17 };

/* Lump offsets of the last built map (to corrupt chosen fields in tests). */
typedef struct bspb_layout {
    int32_t offset[BSPB_LUMPS], length[BSPB_LUMPS];
} bspb_layout;

/* The file: header, then the lumps in reverse order (a reader must seek by offset). Frees
 * the lumps' buffers; *size receives the length; free() the result. */
static uint8_t *bspb_assemble(bspb lumps[BSPB_LUMPS], size_t *size, bspb_layout *layout)
{
    bspb b = {0};
    bspb_bytes(&b, "IBSP", 4);
    bspb_i32(&b, 46);
    size_t dir = b.size;
    for (int l = 0; l < BSPB_LUMPS * 2; l++)
        bspb_i32(&b, 0);
    for (int l = BSPB_LUMPS - 1; l >= 0; l--) {
        int32_t offset = (int32_t)b.size;
        if (lumps[l].size)
            bspb_bytes(&b, lumps[l].data, lumps[l].size);
        bspb_patch_i32(&b, dir + (size_t)l * 8, offset);
        bspb_patch_i32(&b, dir + (size_t)l * 8 + 4, (int32_t)lumps[l].size);
        if (layout) {
            layout->offset[l] = offset;
            layout->length[l] = (int32_t)lumps[l].size;
        }
        free(lumps[l].data);
        lumps[l].data = NULL;
    }
    *size = b.size;
    return b.data;
}

/* Builds the map; *size receives its length; free() the result. */
static uint8_t *bspb_build(size_t *size, bspb_layout *layout)
{
    bspb lumps[BSPB_LUMPS];
    memset(lumps, 0, sizeof lumps);
    const char *ents =
        "{\n\"classname\" \"worldspawn\"\n\"message\" \"builder\"\n}\n"
        "{\n\"classname\" \"info_player_deathmatch\"\n\"origin\" \"0 0 24\"\n\"angle\" \"90\"\n}\n"
        "{\n\"classname\" \"weapon_rocketlauncher\"\n\"origin\" \"100 100 24\"\n}\n"
        "{\n\"classname\" \"info_player_start\"\n\"origin\" \"200 0 24\"\n}\n"
        "{\n\"classname\" \"func_door\"\n\"model\" \"*1\"\n}\n";
    bspb_bytes(&lumps[0], ents, strlen(ents) + 1);
    bspb_shader(&lumps[1], "textures/floor", 0, 1);
    bspb_shader(&lumps[1], "common/nodraw", 0x80, 1);
    bspb_shader(&lumps[1], "textures/sky", 0x4, 1);
    bspb_shader(&lumps[1], "textures/glass", 0, 1 | 0x20000000);
    /* brushes: [lo, hi, shader of the brush, shader of side 0, shader of the other sides] */
    static const float boxes[6][2][3] = {
        { { -256, -256, -16 }, { 256, 256, 0 } },
        { { 0, 0, 300 }, { 512, 512, 320 } },
        { { -300, -300, 0 }, { -100, -100, 200 } },
        { { 300, 300, 0 }, { 500, 500, 200 } },
        { { 600, 600, 0 }, { 700, 700, 100 } },
        { { 800, 800, 0 }, { 928, 808, 128 } },
    };
    static const int32_t shaders[6][3] = {
        { 0, 1, 0 }, { 0, 2, 0 }, { 3, 0, 0 }, { 0, 1, 1 }, { 0, 0, 0 }, { 0, 0, 0 },
    };
    int32_t plane_count = 0;
    for (int br = 0; br < 6; br++) {
        int32_t first_plane = bspb_box_planes(&lumps[2], &plane_count, boxes[br][0], boxes[br][1]);
        bspb_i32(&lumps[8], br * 6);
        bspb_i32(&lumps[8], 6);
        bspb_i32(&lumps[8], shaders[br][0]);
        for (int k = 0; k < 6; k++) {
            bspb_i32(&lumps[9], first_plane + 2 * k);
            bspb_i32(&lumps[9], k == 0 ? shaders[br][1] : shaders[br][2]);
        }
    }
    /* drawverts: quad 0..3, patch 4..12, soup 13..15, sky 16..18 */
    bspb_vertex(&lumps[10], 0, 0, 0);
    bspb_vertex(&lumps[10], 64, 0, 0);
    bspb_vertex(&lumps[10], 64, 64, 0);
    bspb_vertex(&lumps[10], 0, 64, 0);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            bspb_vertex(&lumps[10], 100.0f + 32 * i, 32.0f * j, (i == 1 && j == 1) ? 32.0f : 0.0f);
    bspb_vertex(&lumps[10], 1, 2, 3);
    bspb_vertex(&lumps[10], 5, 2, 3);
    bspb_vertex(&lumps[10], 1, 2, 9);
    bspb_vertex(&lumps[10], 0, 0, 500);
    bspb_vertex(&lumps[10], 10, 0, 500);
    bspb_vertex(&lumps[10], 0, 10, 500);
    static const int32_t indexes[] = { 0, 1, 2, 0, 2, 3, 0, 1, 2, 0, 1, 2 };
    for (size_t k = 0; k < sizeof indexes / sizeof indexes[0]; k++)
        bspb_i32(&lumps[11], indexes[k]);
    bspb_surface(&lumps[13], 0, -1, 1, 0, 4, 0, 6, 0, 0);
    bspb_surface(&lumps[13], 0, -1, 2, 4, 9, 0, 0, 3, 3);
    bspb_surface(&lumps[13], 0, 7, 3, 13, 3, 6, 3, 0, 0);
    bspb_surface(&lumps[13], 2, -1, 1, 16, 3, 9, 3, 0, 0);
    bspb_surface(&lumps[13], 0, -1, 4, 0, 0, 0, 0, 0, 0);
    /* model 0: every surface and brush; model 1: none */
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 6; k++)
            bspb_f32(&lumps[7], k < 3 ? -1024.0f : 1024.0f);
        bspb_i32(&lumps[7], 0);
        bspb_i32(&lumps[7], m ? 0 : 5);
        bspb_i32(&lumps[7], 0);
        bspb_i32(&lumps[7], m ? 0 : 6);
    }
    return bspb_assemble(lumps, size, layout);
}


/* A brush of n planes (Quake Z-up: normal, d), each written with its flipped pair as q3map
 * does; side k uses the unflipped plane and side_shaders[k]. */
static void bspb_brush(bspb lumps[BSPB_LUMPS], int32_t *plane_count, const float (*planes)[4], int n,
                       int32_t brush_shader, const int32_t *side_shaders)
{
    int32_t first_side = (int32_t)(lumps[9].size / 8);
    for (int k = 0; k < n; k++) {
        for (int flip = 0; flip < 2; flip++)
            for (int a = 0; a < 4; a++)
                bspb_f32(&lumps[2], flip ? -planes[k][a] : planes[k][a]);
        bspb_i32(&lumps[9], *plane_count);
        bspb_i32(&lumps[9], side_shaders[k]);
        *plane_count += 2;
    }
    bspb_i32(&lumps[8], first_side);
    bspb_i32(&lumps[8], n);
    bspb_i32(&lumps[8], brush_shader);
}

/* The six axial planes of box [lo, hi] in the order q3map writes them (-x, +x, -y, +y, -z,
 * +z) into planes[0..5]. */
static void bspb_axial(float planes[][4], const float lo[3], const float hi[3])
{
    for (int k = 0; k < 6; k++) {
        int axis = k / 2;
        for (int a = 0; a < 3; a++)
            planes[k][a] = a == axis ? ((k & 1) ? 1.0f : -1.0f) : 0.0f;
        planes[k][3] = (k & 1) ? hi[axis] : -lo[axis];
    }
}

/* The room (Quake Z-up units):
 *  - shaders: 0 "floor" (solid), 1 "caulk" (SURF_NODRAW, solid), 2 "sky" (SURF_SKY, solid),
 *    3 "glass" (solid + translucent), 4 "clip" (SURF_NODRAW, player clip only);
 *  - model-0 brushes: b0 the floor (-512 -512 -16)..(512 512 0), bottom side caulk (an
 *    exact box); b1 a ramp (100 -64 0)..(164 64 64) cut by z <= x - 100, 45 degrees up
 *    along +x; b2 player clip (-300 -300 0)..(-200 -200 128); b3 a pillar (300 -32 0)..
 *    (364 32 256) (an exact box); b4 a pillar (-364 200 0)..(-300 264 256) with its four
 *    vertical edges cut off 16 units deep at 45 degrees and a sky top; b5 glass (400 300 0)..
 *    (410 400 100); b6 contradictory planes (x >= 0 and x <= -20: empty);
 *  - surfaces: a floor quad, a glass quad (translucent: no mesh), a 3 x 3 patch, a soup;
 *  - entities: spawn A (0 0 24) angle 0 (free); spawn B (-250 -250 24) (in the clip brush,
 *    65 units from its nearest free place: dropped); item C (400 -100 10) (14 units into the
 *    floor: lifted); item D (332 40 24) (7 units into the pillar b3: moved 8 sideways); item
 *    E (-332 232 24) (inside pillar b4: dropped). */
static uint8_t *bspb_build_room(size_t *size, bspb_layout *layout)
{
    bspb lumps[BSPB_LUMPS];
    memset(lumps, 0, sizeof lumps);
    const char *ents =
        "{\n\"classname\" \"worldspawn\"\n}\n"
        "{\n\"classname\" \"info_player_deathmatch\"\n\"origin\" \"0 0 24\"\n\"angle\" \"0\"\n}\n"
        "{\n\"classname\" \"info_player_deathmatch\"\n\"origin\" \"-250 -250 24\"\n}\n"
        "{\n\"classname\" \"weapon_shotgun\"\n\"origin\" \"400 -100 10\"\n}\n"
        "{\n\"classname\" \"item_armor_shard\"\n\"origin\" \"332 40 24\"\n}\n"
        "{\n\"classname\" \"item_health\"\n\"origin\" \"-332 232 24\"\n}\n";
    bspb_bytes(&lumps[0], ents, strlen(ents) + 1);
    bspb_shader(&lumps[1], "textures/room/floor", 0, 1);
    bspb_shader(&lumps[1], "common/caulk", 0x80, 1);
    bspb_shader(&lumps[1], "textures/room/sky", 0x4, 1);
    bspb_shader(&lumps[1], "textures/room/glass", 0, 1 | 0x20000000);
    bspb_shader(&lumps[1], "common/playerclip", 0x80, 0x10000);
    int32_t plane_count = 0;
    float pl[10][4];
    int32_t sh[10] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    const float r2 = 0.70710678f;
    { /* b0 floor */
        const float lo[3] = { -512, -512, -16 }, hi[3] = { 512, 512, 0 };
        bspb_axial(pl, lo, hi);
        int32_t s0[6] = { 0, 0, 0, 0, 1, 0 };
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 6, 0, s0);
    }
    { /* b1 ramp */
        const float lo[3] = { 100, -64, 0 }, hi[3] = { 164, 64, 64 };
        bspb_axial(pl, lo, hi);
        pl[6][0] = -r2; pl[6][1] = 0; pl[6][2] = r2; pl[6][3] = -100 * r2;
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 7, 0, sh);
    }
    { /* b2 player clip */
        const float lo[3] = { -300, -300, 0 }, hi[3] = { -200, -200, 128 };
        bspb_axial(pl, lo, hi);
        int32_t s4[6] = { 4, 4, 4, 4, 4, 4 };
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 6, 4, s4);
    }
    { /* b3 pillar */
        const float lo[3] = { 300, -32, 0 }, hi[3] = { 364, 32, 256 };
        bspb_axial(pl, lo, hi);
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 6, 0, sh);
    }
    { /* b4 pillar with cut edges and a sky top */
        const float lo[3] = { -364, 200, 0 }, hi[3] = { -300, 264, 256 };
        bspb_axial(pl, lo, hi);
        static const float corner[4][2] = { { 1, 1 }, { -1, 1 }, { 1, -1 }, { -1, -1 } };
        for (int c = 0; c < 4; c++) {
            float x = corner[c][0] > 0 ? hi[0] : lo[0], y = corner[c][1] > 0 ? hi[1] : lo[1];
            pl[6 + c][0] = corner[c][0] * r2;
            pl[6 + c][1] = corner[c][1] * r2;
            pl[6 + c][2] = 0;
            pl[6 + c][3] = (corner[c][0] * x + corner[c][1] * y - 16) * r2;
        }
        int32_t s2[10] = { 0, 0, 0, 0, 0, 2, 0, 0, 0, 0 };
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 10, 0, s2);
    }
    { /* b5 glass */
        const float lo[3] = { 400, 300, 0 }, hi[3] = { 410, 400, 100 };
        bspb_axial(pl, lo, hi);
        int32_t s3[6] = { 3, 3, 3, 3, 3, 3 };
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 6, 3, s3);
    }
    { /* b6 empty: -x says x >= 0, +x says x <= -20 */
        const float lo[3] = { 0, 0, 0 }, hi[3] = { -20, 10, 10 };
        bspb_axial(pl, lo, hi);
        bspb_brush(lumps, &plane_count, (const float (*)[4])pl, 6, 0, sh);
    }
    /* drawverts: floor quad 0..3, glass quad 4..7, patch 8..16, soup 17..19 */
    bspb_vertex(&lumps[10], 0, 0, 0);
    bspb_vertex(&lumps[10], 64, 0, 0);
    bspb_vertex(&lumps[10], 64, 64, 0);
    bspb_vertex(&lumps[10], 0, 64, 0);
    bspb_vertex(&lumps[10], 400, 300, 0);
    bspb_vertex(&lumps[10], 400, 400, 0);
    bspb_vertex(&lumps[10], 400, 400, 100);
    bspb_vertex(&lumps[10], 400, 300, 100);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            bspb_vertex(&lumps[10], -100.0f + 32 * i, 100.0f + 32.0f * j, (i == 1 && j == 1) ? 32.0f : 0.0f);
    bspb_vertex(&lumps[10], -50, -50, 0);
    bspb_vertex(&lumps[10], -20, -50, 0);
    bspb_vertex(&lumps[10], -50, -50, 40);
    static const int32_t indexes[] = { 0, 1, 2, 0, 2, 3, 0, 1, 2 };
    for (size_t k = 0; k < sizeof indexes / sizeof indexes[0]; k++)
        bspb_i32(&lumps[11], indexes[k]);
    bspb_surface(&lumps[13], 0, -1, 1, 0, 4, 0, 6, 0, 0);
    bspb_surface(&lumps[13], 3, -1, 1, 4, 4, 0, 6, 0, 0);
    bspb_surface(&lumps[13], 0, -1, 2, 8, 9, 0, 0, 3, 3);
    bspb_surface(&lumps[13], 0, -1, 3, 17, 3, 6, 3, 0, 0);
    for (int k = 0; k < 6; k++)
        bspb_f32(&lumps[7], k < 3 ? -512.0f : 512.0f);
    bspb_i32(&lumps[7], 0);
    bspb_i32(&lumps[7], 4);
    bspb_i32(&lumps[7], 0);
    bspb_i32(&lumps[7], 7);
    return bspb_assemble(lumps, size, layout);
}

/* What bspb_cut keeps of a map. */
typedef struct bspb_cut_spec {
    uint32_t first_brush, brush_count;     /* of model 0's brushes (clamped to them) */
    uint32_t first_surface, surface_count; /* of model 0's surfaces (clamped) */
    uint32_t point_count;                  /* spawn and item entities kept after worldspawn */
    int tree;                              /* keep nodes, leafs and visdata (leaf surfaces
                                              renumbered to the kept surfaces) */
} bspb_cut_spec;

static uint32_t bspb_rd(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A smaller map cut out of map[0, size) (a map that reads): all shaders, the kept brushes
 * with their sides and planes, the kept surfaces with their vertices and indexes, worldspawn
 * and the first spawn and item entities, model 0 over what was kept. NULL when the map's
 * header or model 0 does not hold together. */
static uint8_t *bspb_cut(const uint8_t *map, size_t size, const bspb_cut_spec *spec, size_t *out_size)
{
    static const uint32_t rec_bytes[BSPB_LUMPS] = { 0, 72, 16, 36, 48, 4, 4, 40, 12, 8, 44, 4, 72, 104 };
    const uint8_t *lump[BSPB_LUMPS];
    uint32_t count[BSPB_LUMPS], bytes[BSPB_LUMPS];
    if (size < 8 + BSPB_LUMPS * 8)
        return NULL;
    for (int l = 0; l < BSPB_LUMPS; l++) {
        uint32_t off = bspb_rd(map + 8 + l * 8), len = bspb_rd(map + 12 + l * 8);
        if (off > size || len > size - off)
            return NULL;
        lump[l] = map + off;
        bytes[l] = len;
        count[l] = rec_bytes[l] ? len / rec_bytes[l] : 0;
    }
    if (count[7] == 0)
        return NULL;
    const uint8_t *m0 = lump[7];
    uint32_t m_first_surface = bspb_rd(m0 + 24), m_surfaces = bspb_rd(m0 + 28);
    uint32_t m_first_brush = bspb_rd(m0 + 32), m_brushes = bspb_rd(m0 + 36);
    if (m_first_surface > count[13] || m_surfaces > count[13] - m_first_surface ||
        m_first_brush > count[8] || m_brushes > count[8] - m_first_brush)
        return NULL;
    bspb lumps[BSPB_LUMPS];
    memset(lumps, 0, sizeof lumps);
    /* entities: worldspawn, then the first point_count spawns and items */
    const char *t = (const char *)lump[0], *end = t + bytes[0];
    uint32_t blocks = 0, points = 0;
    while (t < end && *t) {
        const char *open = memchr(t, '{', (size_t)(end - t));
        const char *close = open ? memchr(open, '}', (size_t)(end - open)) : NULL;
        if (!close)
            break;
        size_t n = (size_t)(close - open + 1);
        char block[4096];
        size_t k = n < sizeof block - 1 ? n : sizeof block - 1;
        memcpy(block, open, k);
        block[k] = '\0';
        int point = strstr(block, "\"info_player") || strstr(block, "\"team_CTF") ||
                    strstr(block, "\"item_") || strstr(block, "\"weapon_") || strstr(block, "\"ammo_");
        if (blocks == 0 || (point && points < spec->point_count)) {
            bspb_bytes(&lumps[0], open, n);
            bspb_bytes(&lumps[0], "\n", 1);
            points += blocks > 0;
        }
        blocks++;
        t = close + 1;
    }
    bspb_bytes(&lumps[0], "", 1);
    bspb_bytes(&lumps[1], lump[1], (size_t)count[1] * 72);
    /* brushes, their sides and planes (planes renumbered in first-use order, with pairs) */
    uint32_t fb = spec->first_brush < m_brushes ? spec->first_brush : m_brushes;
    uint32_t nb = spec->brush_count < m_brushes - fb ? spec->brush_count : m_brushes - fb;
    int32_t plane_count = 0;
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *br = lump[8] + (size_t)(m_first_brush + fb + b) * 12;
        uint32_t first_side = bspb_rd(br), sides = bspb_rd(br + 4);
        if (first_side > count[9] || sides > count[9] - first_side)
            continue;
        bspb_i32(&lumps[8], (int32_t)(lumps[9].size / 8));
        bspb_i32(&lumps[8], (int32_t)sides);
        bspb_i32(&lumps[8], (int32_t)bspb_rd(br + 8));
        for (uint32_t k = 0; k < sides; k++) {
            const uint8_t *side = lump[9] + (size_t)(first_side + k) * 8;
            uint32_t plane = bspb_rd(side);
            bspb_i32(&lumps[9], plane_count);
            bspb_i32(&lumps[9], (int32_t)bspb_rd(side + 4));
            for (uint32_t q = 0; q < 2; q++) { /* the plane and its flipped pair */
                uint32_t src = plane ^ q;
                if (src < count[2])
                    bspb_bytes(&lumps[2], lump[2] + (size_t)src * 16, 16);
                else
                    bspb_bytes(&lumps[2], lump[2], 16);
            }
            plane_count += 2;
        }
    }
    if (lumps[2].size == 0 && count[2] > 0)
        bspb_bytes(&lumps[2], lump[2], 16); /* nodes need a plane to point at */
    /* surfaces with their own vertices and indexes */
    uint32_t fs = spec->first_surface < m_surfaces ? spec->first_surface : m_surfaces;
    uint32_t ns = spec->surface_count < m_surfaces - fs ? spec->surface_count : m_surfaces - fs;
    for (uint32_t s = 0; s < ns; s++) {
        uint8_t rec[104];
        memcpy(rec, lump[13] + (size_t)(m_first_surface + fs + s) * 104, 104);
        uint32_t first_vert = bspb_rd(rec + 12), verts = bspb_rd(rec + 16);
        uint32_t first_index = bspb_rd(rec + 20), indexes = bspb_rd(rec + 24);
        if (first_vert > count[10] || verts > count[10] - first_vert || first_index > count[11] ||
            indexes > count[11] - first_index)
            continue;
        bspb out = { rec, 104, 104 };
        bspb_patch_i32(&out, 12, (int32_t)(lumps[10].size / 44));
        bspb_patch_i32(&out, 20, (int32_t)(lumps[11].size / 4));
        bspb_bytes(&lumps[10], lump[10] + (size_t)first_vert * 44, (size_t)verts * 44);
        bspb_bytes(&lumps[11], lump[11] + (size_t)first_index * 4, (size_t)indexes * 4);
        bspb_bytes(&lumps[13], rec, 104);
    }
    if (spec->tree) {
        bspb_bytes(&lumps[3], lump[3], bytes[3]);
        /* leaf surfaces: kept surfaces renumbered, the others past the end (skipped) */
        for (uint32_t k = 0; k < count[5]; k++) {
            uint32_t s = bspb_rd(lump[5] + (size_t)k * 4);
            uint32_t rel = s - m_first_surface - fs;
            bspb_i32(&lumps[5], s >= m_first_surface + fs && rel < ns ? (int32_t)rel : 0x7fffffff);
        }
        bspb_bytes(&lumps[4], lump[4], bytes[4]);
        bspb_bytes(&lumps[16], lump[16], bytes[16]);
    }
    uint8_t model[40];
    memcpy(model, m0, 24);
    bspb mb = { model, 40, 40 };
    bspb_patch_i32(&mb, 24, 0);
    bspb_patch_i32(&mb, 28, (int32_t)(lumps[13].size / 104));
    bspb_patch_i32(&mb, 32, 0);
    bspb_patch_i32(&mb, 36, (int32_t)(lumps[8].size / 12));
    bspb_bytes(&lumps[7], model, 40);
    return bspb_assemble(lumps, out_size, NULL);
}

#endif
