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
 *  - brushes of model 0 (all 6-sided axial boxes): b0 floor 512 x 512 x 16 (an occluder),
 *    b1 with a sky side (not an occluder), b2 translucent (not), b3 all sides nodraw (not),
 *    b4 100 x 100 x 100 (no 128 x 128 face: not), b5 128 x 8 x 128 (an occluder: one
 *    128 x 128 face). */
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

/* Builds the map; *size receives its length; free() the result. */
static uint8_t *bspb_build(size_t *size, bspb_layout *layout)
{
    bspb b = {0};
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
    /* header, then lumps in reverse order (a reader must seek by offset) */
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
    }
    *size = b.size;
    return b.data;
}

#endif
