/* libFuzzer target: rvis-walk's Quake III BSP reader on arbitrary bytes. A read either
 * fails with a message or yields a level whose every number is finite and every index in
 * range: objects over the triangle array, occluder boxes, the occluder candidates (brush
 * sides, planes, bounds; meshes whose triangles are their objects' to the bit) and the
 * path's brushes. The camera path (player box placement, settling, legs, detours) then runs
 * on the first points against the first brushes. Any crash, sanitizer report or broken
 * invariant is a finding.
 *
 * Seeds: when the first corpus directory given on the command line is empty (or missing),
 * LLVMFuzzerInitialize writes the builder and room maps (tests/walk/bsp_builder.h), a few
 * truncated and header-only files, and, with libzip and openarena-081-maps installed, maps
 * cut out of real ones (a few brushes, surfaces and points each, some with the BSP tree)
 * and bit-flipped copies of those cuts, all well under the 128 KiB the test allows. */
#include "brush.h"
#include "bsp.h"
#include "path.h"
#include "pk3.h"
#include "../walk/bsp_builder.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_bsp: broken: %s\n", #cond); abort(); } } while (0)

/* The path on a hostile map is cut short: the search near a point tries thousands of places
 * against every brush near it, which a small file can make all brushes. */
#define PATH_POINTS 4u
#define PATH_BRUSHES 16u

static void check_box(const rvw_box *b)
{
    for (int k = 0; k < 3; k++) {
        REQUIRE(isfinite(b->min[k]) && isfinite(b->max[k]));
        REQUIRE(b->min[k] <= b->max[k]);
    }
}

static void check_candidates(const rvw_level *level)
{
    for (uint32_t i = 0; i < level->convex_count; i++) {
        const rvw_convex *c = &level->convexes[i];
        REQUIRE(c->side_count >= 4 && c->side_count <= RVW_BRUSH_MAX_SIDES);
        REQUIRE((uint64_t)c->first_side + c->side_count <= level->convex_side_count);
        REQUIRE(c->contents & RVW_CONTENTS_SOLID);
        check_box(&c->bounds);
        for (uint32_t k = 0; k < c->side_count; k++) {
            const float *pl = level->convex_sides[c->first_side + k].plane;
            for (int a = 0; a < 4; a++)
                REQUIRE(isfinite(pl[a]));
            float length = sqrtf(pl[0] * pl[0] + pl[1] * pl[1] + pl[2] * pl[2]);
            REQUIRE(fabsf(length - 1.0f) <= 2e-3f);
        }
        if (c->flags & RVW_CONVEX_EXACT_BOX)
            REQUIRE(c->side_count == 6);
    }
    for (uint32_t i = 0; i < level->mesh_count; i++) {
        const rvw_mesh *m = &level->meshes[i];
        REQUIRE(m->object < level->object_count);
        REQUIRE((uint64_t)m->first_vertex + m->vertex_count <= level->mesh_vertex_count);
        REQUIRE((uint64_t)m->first_index + m->index_count <= level->mesh_index_count);
        const rvw_object *o = &level->objects[m->object];
        REQUIRE(m->index_count == o->triangle_count * 3);
        for (uint32_t k = 0; k < m->index_count; k++) {
            uint32_t v = level->mesh_indices[m->first_index + k];
            REQUIRE(v < m->vertex_count);
            REQUIRE(memcmp(level->mesh_positions + (size_t)(m->first_vertex + v) * 3,
                           level->triangles + (size_t)o->first_triangle * 9 + (size_t)k * 3, 3 * sizeof(float)) == 0);
        }
    }
}

static void check_path(rvw_level *level, const rvw_bsp_map *map)
{
    rvw_bsp_map small = *map;
    small.point_count = map->point_count < PATH_POINTS ? map->point_count : PATH_POINTS;
    small.brush_count = map->brush_count < PATH_BRUSHES ? map->brush_count : PATH_BRUSHES;
    for (uint32_t i = 0; i < small.brush_count; i++) {
        const rvw_bsp_brush *b = &small.brushes[i];
        REQUIRE((uint64_t)b->first_plane + b->plane_count <= small.plane_count);
        check_box(&b->bounds);
    }
    rvw_path_stats stats;
    REQUIRE(rvw_path_build(level, &small, &stats) == RVW_PATH_BUILT);
    REQUIRE(stats.dropped <= stats.points && stats.points == small.point_count);
    REQUIRE(level->frame_count > 0 && level->frame_count <= RVW_PATH_MAX_FRAMES);
    for (uint32_t f = 0; f < level->frame_count; f++)
        for (int k = 0; k < 3; k++)
            REQUIRE(isfinite(level->path[f].eye[k]) && isfinite(level->path[f].forward[k]));
    /* a placed point's box is free */
    for (uint32_t i = 0; i < small.point_count; i++) {
        float origin[3], moved;
        if (rvw_path_place(&small, &small.points[i], origin, &moved))
            REQUIRE(!rvw_path_box_blocked(&small, origin));
    }
}

static void check_level(rvw_level *level, const rvw_bsp_map *map)
{
    REQUIRE(level->object_count > 0);
    for (uint32_t i = 0; i < level->object_count; i++) {
        const rvw_object *o = &level->objects[i];
        REQUIRE(o->triangle_count > 0);
        REQUIRE((uint64_t)o->first_triangle + o->triangle_count <= level->triangle_count);
        for (int k = 0; k < 3; k++)
            REQUIRE(o->bounds.min[k] <= o->bounds.max[k]);
    }
    for (uint64_t i = 0; i < (uint64_t)level->triangle_count * 9; i++)
        REQUIRE(isfinite(level->triangles[i]));
    for (uint32_t i = 0; i < level->occluder_count; i++)
        for (int k = 0; k < 3; k++)
            REQUIRE(level->occluders[i].min[k] < level->occluders[i].max[k]);
    for (uint32_t b = 0; b < map->brush_count; b++)
        REQUIRE((uint64_t)map->brushes[b].first_plane + map->brushes[b].plane_count <= map->plane_count);
    check_candidates(level);
    check_path(level, map);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rvw_level level;
    rvw_bsp_map map;
    char err[256];
    if (rvw_bsp_read(data, size, "fuzz", &level, &map, err, sizeof err)) {
        check_level(&level, &map);
        rvw_level_free(&level);
        rvw_bsp_map_free(&map);
    } else {
        REQUIRE(err[0] != '\0');
        REQUIRE(level.object_count == 0 && level.triangles == NULL);
    }
    return 0;
}

static void put(const char *dir, const char *name, const uint8_t *bytes, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(bytes, 1, size, f);
    fclose(f);
}

static bool dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return true;
    struct dirent *e;
    bool empty = true;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = false;
    closedir(d);
    return empty;
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Cuts of one real map: a window of brushes and surfaces at its start, middle and end
 * (one with the BSP tree when that stays small), each also with a few bits flipped. */
static void seed_cuts(const char *dir, const char *name, uint64_t *random)
{
    rvw_map_source src;
    char err[256];
    uint8_t *bytes;
    size_t size;
    bool missing;
    if (!rvw_map_source_parse(name, &src, err, sizeof err) ||
        !rvw_map_source_read(&src, &bytes, &size, &missing, err, sizeof err))
        return;
    static const uint32_t starts[3] = { 0, 1, 2 }; /* thirds of model 0's brushes and surfaces */
    for (int w = 0; w < 3; w++) {
        uint32_t brushes = bspb_rd(bytes + 8 + 8 * 8 + 4) / 12, surfaces = bspb_rd(bytes + 8 + 13 * 8 + 4) / 104;
        bspb_cut_spec spec = { .first_brush = brushes * starts[w] / 3, .brush_count = 48,
                               .first_surface = surfaces * starts[w] / 3, .surface_count = 24,
                               .point_count = 8, .tree = w == 0 };
        size_t cut_size;
        uint8_t *cut;
        /* small and quick: without the tree when it makes the cut big, and fewer surfaces
         * while big patches make it thousands of triangles (executions stay fast) */
        for (;;) {
            cut = bspb_cut(bytes, size, &spec, &cut_size);
            if (!cut)
                break;
            rvw_level level;
            rvw_bsp_map map;
            bool read = rvw_bsp_read(cut, cut_size, "seed", &level, &map, err, sizeof err);
            uint32_t triangles = read ? level.triangle_count : 0;
            if (read) {
                rvw_level_free(&level);
                rvw_bsp_map_free(&map);
            }
            if (spec.tree && cut_size > 64 * 1024)
                spec.tree = 0;
            else if (triangles > 4096 && spec.surface_count > 1)
                spec.surface_count /= 2;
            else
                break;
            free(cut);
        }
        if (!cut)
            continue;
        char file[128];
        snprintf(file, sizeof file, "cut_%s_%d.bsp", name, w);
        put(dir, file, cut, cut_size);
        for (int f = 0; f < 2; f++) {
            uint8_t *flipped = malloc(cut_size);
            memcpy(flipped, cut, cut_size);
            for (int k = 0; k < 4; k++) /* past the header: the lumps' contents */
                flipped[8 + 17 * 8 + next_random(random) % (cut_size - 8 - 17 * 8)] ^= (uint8_t)(1u << (next_random(random) % 8));
            snprintf(file, sizeof file, "cut_%s_%d_flip%d.bsp", name, w, f);
            put(dir, file, flipped, cut_size);
            free(flipped);
        }
        free(cut);
    }
    free(bytes);
}

static void seed(const char *dir)
{
    mkdir(dir, 0777);
    if (!dir_is_empty(dir))
        return;
    size_t size;
    uint8_t *map = bspb_build(&size, NULL);
    put(dir, "builder.bsp", map, size);
    put(dir, "magic_only.bsp", map, 8);
    put(dir, "header_only.bsp", map, 8 + 17 * 8);
    put(dir, "half.bsp", map, size / 2);
    uint8_t empty[8 + 17 * 8] = { 'I', 'B', 'S', 'P', 46 };
    put(dir, "empty_lumps.bsp", empty, sizeof empty);
    free(map);
    map = bspb_build_room(&size, NULL);
    put(dir, "room.bsp", map, size);
    free(map);
    /* real maps: brushes of every kind (islanddm: general convex; oa_dm3 and oa_dm5: clip and
     * patches; czest2ctf: empty brushes; fan: a small BSP tree) */
    static const char *const real[] = { "oa_dm4", "oa_dm3", "oa_dm5", "oa_ctf2", "islanddm", "czest2ctf", "fan" };
    uint64_t random = 2026;
    for (size_t i = 0; i < sizeof real / sizeof real[0]; i++)
        seed_cuts(dir, real[i], &random);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    for (int i = 1; i < *argc; i++) {
        if ((*argv)[i][0] != '-') { /* the first corpus directory */
            seed((*argv)[i]);
            break;
        }
    }
    return 0;
}
