/* libFuzzer target (issue 9, part 1): rvis-walk's Quake III BSP reader on arbitrary bytes.
 * A read either fails with a message or yields a level whose every number is finite and
 * every object's triangles lie inside the triangle array; the path's solid test is run on
 * what was read. Any crash, sanitizer report or broken invariant is a finding.
 *
 * Seeds: when the first corpus directory given on the command line is empty (or missing),
 * LLVMFuzzerInitialize writes the builder map (tests/walk/bsp_builder.h), a few truncated
 * and header-only files, and, with libzip and openarena-081-maps installed, one real map. */
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

static void check_level(const rvw_level *level, const rvw_bsp_map *map)
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
    /* the path's box tests between the first few points */
    for (uint32_t i = 0; i + 1 < map->point_count && i < 4; i++) {
        double t = rvw_path_sweep(map, map->points[i].origin, map->points[i + 1].origin);
        REQUIRE(t >= 0 && t <= 1);
        (void)rvw_path_box_blocked(map, map->points[i].origin);
    }
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
    rvw_map_source src;
    char err[256];
    uint8_t *bytes;
    bool missing;
    if (rvw_map_source_parse("oa_ctf2", &src, err, sizeof err) &&
        rvw_map_source_read(&src, &bytes, &size, &missing, err, sizeof err)) {
        put(dir, "oa_ctf2.bsp", bytes, size);
        free(bytes);
    }
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
