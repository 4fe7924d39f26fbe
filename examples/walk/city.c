/* The embedded city (see city.h). Everything comes from two splitmix64 streams with fixed
 * seeds (one for the buildings and props, one for the route), so every run, on every
 * machine, walks the identical city. */
#include "city.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 60.0f          /* block side; the other 20 m of the pitch is street */
#define LOT 30.0f            /* 2 x 2 lots per block */
#define DISTRICT_BLOCKS RVW_CITY_DISTRICT_BLOCKS /* 4 x 4 blocks per district */
#define FACADE_PROPS 36
#define ROOF_PROPS 4
#define STREET_PROPS 48
#define VEHICLES 160
#define TERRAIN_CELL 16.0f
#define STOREY 3.6f
#define DISTRICT_ERROR 12.0f /* metres: HLOD geometric error of a district's stand-in */
#define LOOK_AHEAD 12.0f     /* metres: the camera looks at the route this far ahead */
#define PI_F 3.14159265f

enum { LADDER_FACADE = 1, LADDER_STREET = 2, LADDER_ROOF = 3 };

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float uniform(rng *r, float a, float b)
{
    return a + (b - a) * ((float)(rng_next(r) >> 40) / 16777216.0f);
}

typedef struct builder {
    rvw_level *level;
    rvw_city *city;
    rng rng;
    bool ok;
} builder;

static float street_line(int i)
{
    return -RVW_CITY_HALF + RVW_CITY_PITCH * (float)i;
}

static rvw_box make_box(float x0, float y0, float z0, float x1, float y1, float z1)
{
    rvw_box b = { { fminf(x0, x1), fminf(y0, y1), fminf(z0, z1) },
                  { fmaxf(x0, x1), fmaxf(y0, y1), fmaxf(z0, z1) } };
    return b;
}

/* One object made of one box (two for a tree). Returns the object index or -1. */
static int32_t box_object(builder *b, rvw_object_kind kind, int32_t group, uint8_t ladder,
                          rvw_box box)
{
    if (!b->ok)
        return -1;
    int32_t o = rvw_level_begin_object(b->level, kind, group);
    if (o < 0 || !rvw_level_add_box(b->level, &box)) {
        b->ok = false;
        return -1;
    }
    b->level->objects[o].ladder = ladder;
    return o;
}

static int32_t group(builder *b, rvw_group_kind kind, int32_t parent)
{
    if (!b->ok)
        return -1;
    int32_t g = rvw_level_add_group(b->level, kind, parent);
    b->ok = g >= 0;
    return g;
}

/* Façade details on the four walls of building box w: balconies, signs, air conditioners,
 * each protruding from its wall. */
static void facade_props(builder *b, int32_t g, const rvw_box *w)
{
    float h = w->max[1];
    for (int k = 0; k < FACADE_PROPS; k++) {
        int face = k % 4; /* 0: -x, 1: +x, 2: -z, 3: +z */
        float pick = uniform(&b->rng, 0, 1);
        float len = pick < 0.5f ? 2.4f : pick < 0.7f ? uniform(&b->rng, 1.5f, 3.0f) : 0.8f;
        float tall = pick < 0.5f ? 1.1f : pick < 0.7f ? uniform(&b->rng, 0.6f, 1.2f) : 0.6f;
        float out = pick < 0.5f ? 1.2f : pick < 0.7f ? 0.25f : 0.5f;
        int along = face < 2 ? 2 : 0; /* the wall runs along z for x faces */
        float u = uniform(&b->rng, w->min[along] + 1.5f, w->max[along] - 1.5f - len);
        float y = uniform(&b->rng, fminf(2.5f, h * 0.3f), fmaxf(h - tall - 0.5f, h * 0.3f));
        float wall = (face & 1) ? w->max[face < 2 ? 0 : 2] : w->min[face < 2 ? 0 : 2];
        float o0 = wall, o1 = wall + ((face & 1) ? out : -out);
        rvw_box box = face < 2 ? make_box(o0, y, u, o1, y + tall, u + len)
                               : make_box(u, y, o0, u + len, y + tall, o1);
        box_object(b, RVW_OBJ_PROP, g, LADDER_FACADE, box);
    }
}

static float roof_props(builder *b, int32_t g, const rvw_box *w)
{
    float top = w->max[1];
    for (int k = 0; k < ROOF_PROPS; k++) {
        float sx = uniform(&b->rng, 1, 3), sz = uniform(&b->rng, 1, 3), sy = uniform(&b->rng, 1, 3.5f);
        float x = uniform(&b->rng, w->min[0] + 1, w->max[0] - 1 - sx);
        float z = uniform(&b->rng, w->min[2] + 1, w->max[2] - 1 - sz);
        box_object(b, RVW_OBJ_PROP, g, LADDER_ROOF,
                   make_box(x, w->max[1], z, x + sx, w->max[1] + sy, z + sz));
        top = fmaxf(top, w->max[1] + sy);
    }
    return top;
}

/* A building in a lot: its group, the shell (an object and an occluder), its props.
 * Returns the height of the tallest thing on it. */
static float building(builder *b, int32_t block_group, float lx, float lz)
{
    float w = uniform(&b->rng, 16, 26), d = uniform(&b->rng, 16, 26);
    float cx = lx + LOT / 2 + uniform(&b->rng, -1, 1) * ((LOT - w) / 2 - 1);
    float cz = lz + LOT / 2 + uniform(&b->rng, -1, 1) * ((LOT - d) / 2 - 1);
    float central = 1.0f - fmaxf(fabsf(cx), fabsf(cz)) / RVW_CITY_HALF;
    float h = uniform(&b->rng, 8, 20) + uniform(&b->rng, 0, 70) * central * central;
    rvw_box shell = make_box(cx - w / 2, 0, cz - d / 2, cx + w / 2, h, cz + d / 2);
    int32_t g = group(b, RVW_GROUP_BUILDING, block_group);
    box_object(b, RVW_OBJ_BUILDING, g, 0, shell);
    if (b->ok && !rvw_level_add_occluder(b->level, &shell))
        b->ok = false;
    facade_props(b, g, &shell);
    return roof_props(b, g, &shell);
}

/* A glass tower built as a partition group: one part per storey (slab, four columns,
 * desks); the top storey is deferred. It is no occluder: it can be sliced open. */
static float tower(builder *b, int32_t block_group, float lx, float lz)
{
    int storeys = 6 + (int)(rng_next(&b->rng) % 9);
    float x0 = lx + 4, z0 = lz + 4, x1 = lx + LOT - 4, z1 = lz + LOT - 4;
    int32_t g = group(b, RVW_GROUP_PARTITION, block_group);
    for (int s = 0; s < storeys; s++) {
        float y = STOREY * (float)s;
        int32_t part = group(b, RVW_GROUP_PART, g);
        if (!b->ok)
            return 0;
        b->level->groups[part].deferred = s == storeys - 1;
        box_object(b, RVW_OBJ_PART_ITEM, part, 0, make_box(x0, y, z0, x1, y + 0.3f, z1));
        for (int c = 0; c < 4; c++) {
            float cx = (c & 1) ? x1 - 1.1f : x0 + 0.5f, cz = (c & 2) ? z1 - 1.1f : z0 + 0.5f;
            box_object(b, RVW_OBJ_PART_ITEM, part, 0,
                       make_box(cx, y + 0.3f, cz, cx + 0.6f, y + STOREY, cz + 0.6f));
        }
        for (int k = 0; k < 6; k++) {
            float dx = uniform(&b->rng, x0 + 1.5f, x1 - 3.1f), dz = uniform(&b->rng, z0 + 1.5f, z1 - 2.3f);
            box_object(b, RVW_OBJ_PART_ITEM, part, 0,
                       make_box(dx, y + 0.3f, dz, dx + 1.6f, y + 1.05f, dz + 0.8f));
        }
    }
    if (b->ok) {
        rvw_city_tower *t = &b->city->towers[b->city->tower_count++];
        t->group = g;
        t->bounds = make_box(x0, 0, z0, x1, STOREY * (float)storeys, z1);
    }
    return STOREY * (float)storeys;
}

/* Lamps, benches, bins, trees and bollards on the pavements around a block. */
static void street_props(builder *b, int32_t g, float bx, float bz)
{
    for (int k = 0; k < STREET_PROPS; k++) {
        int side = k % 4;
        float u = uniform(&b->rng, 2, BLOCK - 2), off = uniform(&b->rng, 1.0f, 2.5f);
        float px, pz;
        switch (side) {
        case 0: px = bx - off; pz = bz + u; break;
        case 1: px = bx + BLOCK + off; pz = bz + u; break;
        case 2: px = bx + u; pz = bz - off; break;
        default: px = bx + u; pz = bz + BLOCK + off; break;
        }
        float pick = uniform(&b->rng, 0, 1);
        if (pick < 0.25f) {        /* lamp */
            box_object(b, RVW_OBJ_PROP, g, LADDER_STREET, make_box(px - 0.12f, 0, pz - 0.12f, px + 0.12f, 6, pz + 0.12f));
        } else if (pick < 0.5f) {  /* bench, along the kerb */
            float lx = side < 2 ? 0.3f : 0.9f, lz = side < 2 ? 0.9f : 0.3f;
            box_object(b, RVW_OBJ_PROP, g, LADDER_STREET, make_box(px - lx, 0, pz - lz, px + lx, 0.5f, pz + lz));
        } else if (pick < 0.7f) {  /* bin */
            box_object(b, RVW_OBJ_PROP, g, LADDER_STREET, make_box(px - 0.3f, 0, pz - 0.3f, px + 0.3f, 1, pz + 0.3f));
        } else if (pick < 0.9f) {  /* tree: trunk and crown, one object */
            int32_t o = box_object(b, RVW_OBJ_PROP, g, LADDER_STREET,
                                   make_box(px - 0.2f, 0, pz - 0.2f, px + 0.2f, 2.5f, pz + 0.2f));
            rvw_box crown = make_box(px - 1.5f, 2.5f, pz - 1.5f, px + 1.5f, 5.5f, pz + 1.5f);
            if (o >= 0 && !rvw_level_add_box(b->level, &crown))
                b->ok = false;
        } else {                   /* bollard */
            box_object(b, RVW_OBJ_PROP, g, LADDER_STREET, make_box(px - 0.15f, 0, pz - 0.15f, px + 0.15f, 0.9f, pz + 0.15f));
        }
    }
}

static bool is_tower_lot(const int lots[RVW_CITY_TOWERS], int lot)
{
    for (int t = 0; t < RVW_CITY_TOWERS; t++)
        if (lots[t] == lot)
            return true;
    return false;
}

/* Tower lots: lot index = (block_z * 16 + block_x) * 4 + lot. The first sits at the
 * corner the camera starts at, so the slice is seen from the first frame. */
static void pick_tower_lots(rng *r, int lots[RVW_CITY_TOWERS])
{
    lots[0] = (3 * RVW_CITY_BLOCKS + 3) * 4;
    for (int t = 1; t < RVW_CITY_TOWERS; t++) {
        int lot;
        do
            lot = (int)(rng_next(r) % (RVW_CITY_BLOCKS * RVW_CITY_BLOCKS * 4));
        while (is_tower_lot(lots, lot));
        lots[t] = lot;
    }
}

static void blocks(builder *b)
{
    int tower_lots[RVW_CITY_TOWERS];
    for (int t = 0; t < RVW_CITY_TOWERS; t++)
        tower_lots[t] = -1;
    pick_tower_lots(&b->rng, tower_lots);
    float tallest[RVW_CITY_BLOCKS * RVW_CITY_BLOCKS];
    const int districts = RVW_CITY_BLOCKS / DISTRICT_BLOCKS;
    int32_t district_groups[16];
    for (int d = 0; d < districts * districts; d++) {
        district_groups[d] = group(b, RVW_GROUP_DISTRICT, -1);
        if (b->ok)
            b->level->groups[district_groups[d]].geometric_error = DISTRICT_ERROR;
    }
    for (int d = 0; d < districts * districts && b->ok; d++) {
        int dx = d % districts, dz = d / districts;
        for (int k = 0; k < DISTRICT_BLOCKS * DISTRICT_BLOCKS; k++) {
            int bxi = dx * DISTRICT_BLOCKS + k % DISTRICT_BLOCKS;
            int bzi = dz * DISTRICT_BLOCKS + k / DISTRICT_BLOCKS;
            float bx = street_line(bxi) + 10, bz = street_line(bzi) + 10;
            int32_t g = group(b, RVW_GROUP_BLOCK, district_groups[d]);
            float top = 5.5f; /* trees */
            for (int lot = 0; lot < 4; lot++) {
                float lx = bx + LOT * (float)(lot & 1), lz = bz + LOT * (float)(lot >> 1);
                int id = (bzi * RVW_CITY_BLOCKS + bxi) * 4 + lot;
                top = fmaxf(top, is_tower_lot(tower_lots, id) ? tower(b, g, lx, lz)
                                                              : building(b, g, lx, lz));
            }
            street_props(b, g, bx, bz);
            tallest[bzi * RVW_CITY_BLOCKS + bxi] = top;
        }
    }
    /* Each district's stand-in: every block as one box as tall as its tallest thing, so
     * it hides at least what the buildings it replaces hide. */
    for (int d = 0; d < districts * districts && b->ok; d++) {
        int dx = d % districts, dz = d / districts;
        int32_t o = -1;
        for (int k = 0; k < DISTRICT_BLOCKS * DISTRICT_BLOCKS; k++) {
            int bxi = dx * DISTRICT_BLOCKS + k % DISTRICT_BLOCKS;
            int bzi = dz * DISTRICT_BLOCKS + k / DISTRICT_BLOCKS;
            float bx = street_line(bxi) + 10, bz = street_line(bzi) + 10;
            rvw_box box = make_box(bx, 0, bz, bx + BLOCK, tallest[bzi * RVW_CITY_BLOCKS + bxi], bz + BLOCK);
            if (k == 0)
                o = box_object(b, RVW_OBJ_HLOD_PROXY, -1, 0, box);
            else if (b->ok && !rvw_level_add_box(b->level, &box))
                b->ok = false;
        }
        if (b->ok)
            b->level->groups[district_groups[d]].hlod_proxy = o;
    }
}

static void terrain(builder *b)
{
    rvw_city_terrain *t = &b->city->terrain;
    t->origin[0] = t->origin[1] = -RVW_CITY_HALF;
    t->cell = TERRAIN_CELL;
    t->count_x = t->count_z = (uint32_t)(2 * RVW_CITY_HALF / TERRAIN_CELL);
    t->first_object = b->level->object_count;
    t->page_bytes = 65 * 65 * 4;
    for (uint32_t z = 0; z < t->count_z && b->ok; z++) {
        for (uint32_t x = 0; x < t->count_x && b->ok; x++) {
            float x0 = t->origin[0] + TERRAIN_CELL * (float)x, z0 = t->origin[1] + TERRAIN_CELL * (float)z;
            float x1 = x0 + TERRAIN_CELL, z1 = z0 + TERRAIN_CELL;
            float a[3] = { x0, 0, z0 }, c[3] = { x1, 0, z0 }, e[3] = { x1, 0, z1 }, f[3] = { x0, 0, z1 };
            b->ok = rvw_level_begin_object(b->level, RVW_OBJ_TERRAIN, -1) >= 0 &&
                    rvw_level_add_triangle(b->level, a, c, e) &&
                    rvw_level_add_triangle(b->level, a, e, f);
        }
    }
}

static void vehicles(builder *b)
{
    rvw_city *c = b->city;
    c->vehicles = calloc(VEHICLES, sizeof *c->vehicles);
    if (!c->vehicles) {
        b->ok = false;
        return;
    }
    for (uint32_t v = 0; v < VEHICLES && b->ok; v++) {
        rvw_city_vehicle *car = &c->vehicles[v];
        int line = 1 + (int)(rng_next(&b->rng) % (RVW_CITY_BLOCKS - 1));
        car->axis = (rng_next(&b->rng) & 1) ? 2 : 0;
        car->direction = (rng_next(&b->rng) & 1) ? 1.0f : -1.0f;
        car->lane = street_line(line) + 3.5f * car->direction;
        car->speed = uniform(&b->rng, 8, 16);
        car->phase = uniform(&b->rng, 0, 2 * RVW_CITY_HALF);
        bool bus = v % 8 == 0;
        float len = bus ? 6.0f : 2.2f, wid = bus ? 1.3f : 0.9f;
        car->half[car->axis] = len;
        car->half[1] = bus ? 1.6f : 0.75f;
        car->half[2 - car->axis] = wid;
        rvw_box zero = make_box(0, 0, 0, 1, 1, 1);
        int32_t o = box_object(b, RVW_OBJ_VEHICLE, -1, 0, zero);
        car->object = (uint32_t)(o < 0 ? 0 : o);
        c->vehicle_count = v + 1;
    }
}

void rvw_city_vehicle_position(const rvw_city *city, uint32_t v, uint32_t frame, float out[3])
{
    const rvw_city_vehicle *car = &city->vehicles[v];
    float span = 2 * RVW_CITY_HALF;
    float s = fmodf(car->phase + car->direction * car->speed * (float)frame / 60.0f, span);
    if (s < 0)
        s += span;
    out[car->axis] = -RVW_CITY_HALF + s;
    out[1] = car->half[1] + 0.3f;
    out[2 - car->axis] = car->lane;
}

void rvw_city_animate(const rvw_city *city, rvw_level *level, uint32_t frame)
{
    for (uint32_t v = 0; v < city->vehicle_count; v++) {
        const rvw_city_vehicle *car = &city->vehicles[v];
        float p[3];
        rvw_city_vehicle_position(city, v, frame, p);
        rvw_box box;
        for (int k = 0; k < 3; k++) {
            box.min[k] = p[k] - car->half[k];
            box.max[k] = p[k] + car->half[k];
        }
        rvw_level_write_box(level, car->object, &box);
    }
}

static float slice_height(const rvw_city_tower *t, uint32_t frame)
{
    float phase = 2 * PI_F * (float)(frame % 300) / 300.0f + PI_F; /* starts at its lowest */
    float h = t->bounds.max[1] - t->bounds.min[1];
    return t->bounds.min[1] + h * (0.35f + 0.65f * (0.5f + 0.5f * cosf(phase)));
}

void rvw_city_slice(const rvw_city *city, uint32_t t, uint32_t frame, rvw_box *committed,
                    rvw_box *pending)
{
    const rvw_city_tower *tw = &city->towers[t];
    *committed = *pending = tw->bounds;
    committed->min[1] = pending->min[1] = tw->bounds.min[1] - 1;
    committed->max[1] = slice_height(tw, frame);
    pending->max[1] = slice_height(tw, frame + 30);
}

/* The route: street intersections, straight on more often than turning, never onto the
 * city's edge streets. */
static bool route(float (**points)[2], uint32_t *count, float length_needed)
{
    rng r = { 0x57EE7C0FFEEull };
    int i = 3, j = 3, dir = 1; /* 0: +x, 1: +z, 2: -x, 3: -z */
    static const int step[4][2] = { { 1, 0 }, { 0, 1 }, { -1, 0 }, { 0, -1 } };
    uint32_t n = (uint32_t)(length_needed / RVW_CITY_PITCH) + 2;
    float (*p)[2] = malloc((size_t)n * sizeof *p);
    if (!p)
        return false;
    p[0][0] = street_line(i);
    p[0][1] = street_line(j);
    for (uint32_t k = 1; k < n; k++) {
        for (;;) {
            float pick = uniform(&r, 0, 1);
            int d = pick < 0.6f ? dir : pick < 0.8f ? (dir + 1) % 4 : (dir + 3) % 4;
            int ni = i + step[d][0], nj = j + step[d][1];
            if (ni >= 1 && ni <= RVW_CITY_BLOCKS - 1 && nj >= 1 && nj <= RVW_CITY_BLOCKS - 1) {
                i = ni;
                j = nj;
                dir = d;
                break;
            }
        }
        p[k][0] = street_line(i);
        p[k][1] = street_line(j);
    }
    *points = p;
    *count = n;
    return true;
}

/* Point at arc length s along the polyline (legs are all RVW_CITY_PITCH long). */
static void along(float (*p)[2], uint32_t n, float s, float out[2])
{
    uint32_t leg = (uint32_t)(s / RVW_CITY_PITCH);
    if (leg >= n - 1) {
        out[0] = p[n - 1][0];
        out[1] = p[n - 1][1];
        return;
    }
    float t = (s - RVW_CITY_PITCH * (float)leg) / RVW_CITY_PITCH;
    out[0] = p[leg][0] + (p[leg + 1][0] - p[leg][0]) * t;
    out[1] = p[leg][1] + (p[leg + 1][1] - p[leg][1]) * t;
}

static void camera_path(builder *b)
{
    float (*p)[2];
    uint32_t n;
    if (!b->ok || !route(&p, &n, RVW_CITY_FRAMES * RVW_CITY_SPEED + 2 * LOOK_AHEAD)) {
        b->ok = false;
        return;
    }
    for (uint32_t f = 0; f < RVW_CITY_FRAMES && b->ok; f++) {
        float s = (float)f * RVW_CITY_SPEED, at[2], ahead[2];
        along(p, n, s, at);
        along(p, n, s + LOOK_AHEAD, ahead);
        float dx = ahead[0] - at[0], dz = ahead[1] - at[1], len = sqrtf(dx * dx + dz * dz);
        rvw_camera c = { { at[0], RVW_CITY_EYE_HEIGHT, at[1] }, { dx / len, 0, dz / len }, false };
        b->ok = rvw_level_add_camera(b->level, &c);
    }
    free(p);
}

static const rvw_ladder ladders[3] = {
    [LADDER_FACADE - 1] = { 3, { 0.06f, 0.025f, 0.01f }, true },
    [LADDER_STREET - 1] = { 2, { 0.05f, 0.015f }, false },
    [LADDER_ROOF - 1] = { 2, { 0.04f, 0.012f }, true },
};

bool rvw_city_generate(rvw_city *city, rvw_level *level)
{
    memset(city, 0, sizeof *city);
    memset(level, 0, sizeof *level);
    builder b = { level, city, { 0x00C17E5EEDull }, true };
    level->ladders = malloc(sizeof ladders);
    if (level->ladders) {
        memcpy(level->ladders, ladders, sizeof ladders);
        level->ladder_count = 3;
    } else {
        b.ok = false;
    }
    if (b.ok)
        blocks(&b);
    terrain(&b);
    vehicles(&b);
    camera_path(&b);
    if (!b.ok) {
        rvw_city_free(city);
        rvw_level_free(level);
        return false;
    }
    strcpy(level->name, "city");
    level->fov_y = 60.0f * PI_F / 180.0f;
    level->near_plane = 0.25f;
    level->far_plane = 4000.0f;
    level->city = city;
    rvw_city_animate(city, level, 0);
    rvw_level_finish(level);
    return true;
}

void rvw_city_free(rvw_city *city)
{
    free(city->vehicles);
    memset(city, 0, sizeof *city);
}
