/* Quake III IBSP v46 reader (see bsp.h). Every read goes through a lump whose bounds were
 * checked against the file, at an index checked against that lump's record count. */
#include "bsp.h"

#include "brush.h"
#include "bsp_bytes.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    LUMP_ENTITIES, LUMP_SHADERS, LUMP_PLANES, LUMP_NODES, LUMP_LEAFS, LUMP_LEAFSURFACES,
    LUMP_LEAFBRUSHES, LUMP_MODELS, LUMP_BRUSHES, LUMP_BRUSHSIDES, LUMP_DRAWVERTS,
    LUMP_DRAWINDEXES, LUMP_FOGS, LUMP_SURFACES, LUMP_LIGHTMAPS, LUMP_LIGHTGRID, LUMP_VISDATA,
    LUMP_COUNT
};

/* Record sizes of the lumps this reader indexes; 0 = not read as records. */
static const uint32_t record_bytes[LUMP_COUNT] = {
    [LUMP_SHADERS] = 72, [LUMP_PLANES] = 16, [LUMP_MODELS] = 40, [LUMP_BRUSHES] = 12,
    [LUMP_BRUSHSIDES] = 8, [LUMP_DRAWVERTS] = 44, [LUMP_DRAWINDEXES] = 4, [LUMP_FOGS] = 72,
    [LUMP_SURFACES] = 104,
};

static const char *const lump_names[LUMP_COUNT] = {
    "entities", "shaders", "planes", "nodes", "leafs", "leafsurfaces", "leafbrushes", "models",
    "brushes", "brushsides", "drawverts", "drawindexes", "fogs", "surfaces", "lightmaps",
    "lightgrid", "visdata",
};

enum { SURF_PLANAR = 1, SURF_PATCH = 2, SURF_SOUP = 3, SURF_FLARE = 4 };

#define HEADER_BYTES (8 + LUMP_COUNT * 8)
/* Limits that keep a hostile file from asking for absurd work. Real maps stay far below:
 * Quake III's own limit on patch control points per side is 32, its world is +-65536. */
#define MAX_PATCH_SIDE 65
#define MAX_TRIANGLES (4u * 1024u * 1024u)
#define MAX_COORD RVW_BSP_MAX_COORD
/* A brush's shape costs about sides^2 clips: the sum over a map's brushes is capped (the
 * 50 OpenArena maps need at most about 1.5 million), so brushes sharing one long run of
 * sides cannot make a small hostile file take minutes. */
#define MAX_SIDE_PAIRS (16u * 1024u * 1024u)
/* Quake III plane normals are unit vectors; a file whose normals are not is not a map. */
#define NORMAL_TOLERANCE 1e-3f

typedef struct reader {
    const uint8_t *bytes;
    size_t size;
    const uint8_t *lump[LUMP_COUNT];
    uint32_t lump_bytes[LUMP_COUNT];
    uint32_t count[LUMP_COUNT];
    char *err;
    size_t errlen;
    rvw_level *level;
    rvw_bsp_map *map;
    int32_t *surface_object;    /* per surface of the lump: its object, -1 = none */
    uint32_t *vertex_stamp;     /* per drawvert: the mesh that last took it (stamp) ... */
    uint32_t *vertex_in_mesh;   /* ... and its index in that mesh */
    uint32_t stamp;
    uint64_t side_pairs;        /* brush shape work so far (MAX_SIDE_PAIRS) */
} reader;

static bool fail(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* Record i of a lump; callers have checked i < r->count[lump]. */
static const uint8_t *rec(const reader *r, int lump, uint32_t i)
{
    return r->lump[lump] + (size_t)i * record_bytes[lump];
}

static bool read_header(reader *r)
{
    if (r->size < HEADER_BYTES)
        return fail(r, "file too short for a BSP header (%zu bytes, need %d)", r->size, HEADER_BYTES);
    if (memcmp(r->bytes, "IBSP", 4) != 0)
        return fail(r, "not an IBSP file (bad magic)");
    int32_t version = rd_i32(r->bytes + 4);
    if (version != 46)
        return fail(r, "IBSP version %d, only 46 (Quake III) is read", (int)version);
    for (int l = 0; l < LUMP_COUNT; l++) {
        int32_t offset = rd_i32(r->bytes + 8 + l * 8);
        int32_t length = rd_i32(r->bytes + 8 + l * 8 + 4);
        if (offset < 0 || length < 0 || (uint64_t)offset + (uint64_t)length > r->size)
            return fail(r, "lump %s (offset %d, length %d) lies outside the %zu-byte file",
                        lump_names[l], (int)offset, (int)length, r->size);
        if (record_bytes[l] && (uint32_t)length % record_bytes[l] != 0)
            return fail(r, "lump %s length %d is not a multiple of its %u-byte records",
                        lump_names[l], (int)length, record_bytes[l]);
        r->lump[l] = r->bytes + offset;
        r->lump_bytes[l] = (uint32_t)length;
        r->count[l] = record_bytes[l] ? (uint32_t)length / record_bytes[l] : 0;
    }
    if (r->count[LUMP_MODELS] == 0)
        return fail(r, "map has no models (model 0 is the world)");
    return true;
}

/* ---- entities ------------------------------------------------------------------------ */

typedef struct entity_text {
    const char *p, *end;
} entity_text;

/* Next token: '{', '}' or a quoted string copied (truncated) into out. Returns 0 at the
 * end, -1 on malformed text, else the token's first character ('{', '}', '"'). */
static int next_token(entity_text *t, char *out, size_t outlen)
{
    while (t->p < t->end && *t->p && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r'))
        t->p++;
    if (t->p >= t->end || !*t->p)
        return 0;
    char c = *t->p++;
    if (c == '{' || c == '}')
        return c;
    if (c != '"')
        return -1;
    size_t n = 0;
    while (t->p < t->end && *t->p && *t->p != '"') {
        if (n + 1 < outlen)
            out[n++] = *t->p;
        t->p++;
    }
    if (t->p >= t->end || *t->p != '"')
        return -1;
    t->p++;
    out[n] = '\0';
    return '"';
}

static bool is_spawn_class(const char *c)
{
    return !strcmp(c, "info_player_deathmatch") || !strcmp(c, "info_player_start") ||
           !strcmp(c, "team_CTF_redplayer") || !strcmp(c, "team_CTF_blueplayer") ||
           !strcmp(c, "team_CTF_redspawn") || !strcmp(c, "team_CTF_bluespawn");
}

static bool is_item_class(const char *c)
{
    return !strncmp(c, "item_", 5) || !strncmp(c, "weapon_", 7) || !strncmp(c, "ammo_", 5) ||
           !strncmp(c, "holdable_", 9);
}

/* Parses exactly n finite, in-range numbers separated by blanks. */
static bool parse_floats(const char *s, float *out, int n)
{
    for (int i = 0; i < n; i++) {
        char *next;
        out[i] = strtof(s, &next);
        if (next == s || !coord_ok(out[i]))
            return false;
        s = next;
    }
    return true;
}

static bool push_point(rvw_bsp_point **array, uint32_t *count, const rvw_bsp_point *p)
{
    if ((*count & (*count - 1)) == 0) { /* grow at powers of two */
        size_t cap = *count ? (size_t)*count * 2 : 16;
        rvw_bsp_point *fresh = realloc(*array, cap * sizeof **array);
        if (!fresh)
            return false;
        *array = fresh;
    }
    (*array)[(*count)++] = *p;
    return true;
}

static bool read_entities(reader *r)
{
    entity_text t = { (const char *)r->lump[LUMP_ENTITIES],
                      (const char *)r->lump[LUMP_ENTITIES] + r->lump_bytes[LUMP_ENTITIES] };
    rvw_bsp_point *spawns = NULL, *items = NULL;
    uint32_t spawn_count = 0, item_count = 0;
    char key[256], value[256];
    bool ok = true;
    for (;;) {
        int tok = next_token(&t, key, sizeof key);
        if (tok == 0)
            break;
        if (tok != '{') {
            ok = fail(r, "entity lump: expected '{'");
            break;
        }
        char classname[64] = "";
        float origin[3] = {0, 0, 0}, yaw_deg = 0;
        bool has_origin = false, has_yaw = false;
        for (;;) {
            tok = next_token(&t, key, sizeof key);
            if (tok == '}')
                break;
            if (tok != '"' || next_token(&t, value, sizeof value) != '"') {
                ok = fail(r, "entity lump: malformed key/value pair");
                break;
            }
            if (!strcmp(key, "classname")) {
                snprintf(classname, sizeof classname, "%.63s", value);
            } else if (!strcmp(key, "origin")) {
                if (!parse_floats(value, origin, 3)) {
                    ok = fail(r, "entity lump: bad origin \"%.40s\"", value);
                    break;
                }
                has_origin = true;
            } else if (!strcmp(key, "angle")) {
                has_yaw = parse_floats(value, &yaw_deg, 1);
            } else if (!strcmp(key, "angles")) {
                float a[3];
                if (parse_floats(value, a, 3)) {
                    yaw_deg = a[1];
                    has_yaw = true;
                }
            }
        }
        if (!ok)
            break;
        bool spawn = is_spawn_class(classname);
        if (!has_origin || (!spawn && !is_item_class(classname)))
            continue;
        rvw_bsp_point p = { .spawn = spawn, .has_yaw = has_yaw };
        to_y_up(origin, p.origin);
        p.yaw = yaw_deg * (float)(3.14159265358979323846 / 180.0);
        if (!(spawn ? push_point(&spawns, &spawn_count, &p) : push_point(&items, &item_count, &p))) {
            ok = fail(r, "out of memory reading entities");
            break;
        }
    }
    if (ok) {
        size_t total = (size_t)spawn_count + item_count;
        r->map->points = malloc((total ? total : 1) * sizeof(rvw_bsp_point));
        if (!r->map->points) {
            ok = fail(r, "out of memory reading entities");
        } else {
            if (spawn_count)
                memcpy(r->map->points, spawns, spawn_count * sizeof *spawns);
            if (item_count)
                memcpy(r->map->points + spawn_count, items, item_count * sizeof *items);
            r->map->point_count = (uint32_t)total;
            r->map->stats.spawns = spawn_count;
            r->map->stats.items = item_count;
        }
    }
    free(spawns);
    free(items);
    return ok;
}

/* ---- surfaces ------------------------------------------------------------------------ */

static bool shader_flags(reader *r, int32_t shader, uint32_t *surface_flags, uint32_t *contents)
{
    if (shader < 0 || (uint32_t)shader >= r->count[LUMP_SHADERS])
        return fail(r, "shader index %d out of range (%u shaders)", (int)shader,
                    r->count[LUMP_SHADERS]);
    const uint8_t *s = rec(r, LUMP_SHADERS, (uint32_t)shader);
    *surface_flags = rd_u32(s + 64);
    *contents = rd_u32(s + 68);
    return true;
}

/* Vertex i (checked by the caller) in Y-up; false when it is not a finite, sane number. */
static bool vertex(reader *r, uint32_t i, float out[3])
{
    const uint8_t *v = rec(r, LUMP_DRAWVERTS, i);
    float q[3] = { rd_f32(v), rd_f32(v + 4), rd_f32(v + 8) };
    if (!coord_ok(q[0]) || !coord_ok(q[1]) || !coord_ok(q[2]))
        return fail(r, "vertex %u is not a finite coordinate within +-%g", i, (double)MAX_COORD);
    to_y_up(q, out);
    return true;
}

static bool add_triangle(reader *r, const float a[3], const float b[3], const float c[3])
{
    if (r->level->triangle_count >= MAX_TRIANGLES)
        return fail(r, "more than %u triangles: refusing the map", MAX_TRIANGLES);
    if (!rvw_level_add_triangle(r->level, a, b, c))
        return fail(r, "out of memory reading surfaces");
    return true;
}

/* Starts the mesh of an opaque surface's object (the one being read). */
static bool begin_mesh(reader *r, uint32_t flags)
{
    if (!rvw_level_begin_mesh(r->level, r->level->object_count - 1, flags))
        return fail(r, "out of memory reading surfaces");
    return true;
}

/* The current mesh's index for drawvert v (whose Y-up position is p), added on first use
 * so a mesh holds only the vertices its triangles use; -1 when memory ran out. */
static int64_t mesh_vertex(reader *r, uint32_t v, const float p[3])
{
    if (r->vertex_stamp[v] == r->stamp)
        return r->vertex_in_mesh[v];
    int64_t i = rvw_level_add_mesh_vertex(r->level, p);
    if (i >= 0) {
        r->vertex_stamp[v] = r->stamp;
        r->vertex_in_mesh[v] = (uint32_t)i;
    }
    return i;
}

/* A planar face or a triangle soup: numIndexes / 3 triangles of its own vertices. With mesh,
 * the triangles also become the current mesh (the same floats, the file's indices), flagged
 * mesh_flags. */
static bool read_indexed(reader *r, uint32_t surface, int32_t first_vert, int32_t num_verts,
                         int32_t first_index, int32_t num_indexes, bool mesh, uint32_t mesh_flags)
{
    if (!range_ok(first_vert, num_verts, r->count[LUMP_DRAWVERTS]))
        return fail(r, "surface %u: vertices [%d, +%d) outside the %u drawverts", surface,
                    (int)first_vert, (int)num_verts, r->count[LUMP_DRAWVERTS]);
    if (!range_ok(first_index, num_indexes, r->count[LUMP_DRAWINDEXES]))
        return fail(r, "surface %u: indexes [%d, +%d) outside the %u drawindexes", surface,
                    (int)first_index, (int)num_indexes, r->count[LUMP_DRAWINDEXES]);
    if (num_indexes % 3 != 0)
        return fail(r, "surface %u: %d indexes is not a whole number of triangles", surface,
                    (int)num_indexes);
    if (mesh && !begin_mesh(r, mesh_flags))
        return false;
    r->stamp++;
    for (int32_t i = 0; i < num_indexes; i += 3) {
        float v[3][3];
        int64_t m[3];
        for (int k = 0; k < 3; k++) {
            int32_t idx = rd_i32(rec(r, LUMP_DRAWINDEXES, (uint32_t)(first_index + i + k)));
            if (idx < 0 || idx >= num_verts)
                return fail(r, "surface %u: index %d outside its %d vertices", surface,
                            (int)idx, (int)num_verts);
            if (!vertex(r, (uint32_t)(first_vert + idx), v[k]))
                return false;
            if (mesh && (m[k] = mesh_vertex(r, (uint32_t)(first_vert + idx), v[k])) < 0)
                return fail(r, "out of memory reading surfaces");
        }
        if (!add_triangle(r, v[0], v[1], v[2]))
            return false;
        if (mesh && !rvw_level_add_mesh_triangle(r->level, (uint32_t)m[0], (uint32_t)m[1], (uint32_t)m[2]))
            return fail(r, "out of memory reading surfaces");
    }
    return true;
}

/* Biquadratic Bézier patch: ((w-1)/2) x ((h-1)/2) sub-patches of 3x3 control points, each
 * evaluated on a (steps+1)^2 grid and split into 2 * steps^2 triangles. The sub-patches'
 * grids make one grid over the whole patch: a point on the edge two sub-patches share is
 * evaluated by both and comes out bit-identical (one has weights (0, 0, 1), the other
 * (1, 0, 0), on the same control points in the same order), so the triangles are the same
 * as if each sub-patch kept its own, and the mesh (with mesh) shares those points. */
static bool read_patch(reader *r, uint32_t surface, int32_t first_vert, int32_t num_verts,
                       int32_t w, int32_t h, bool mesh)
{
    if (w < 3 || h < 3 || w % 2 == 0 || h % 2 == 0 || w > MAX_PATCH_SIDE || h > MAX_PATCH_SIDE)
        return fail(r, "surface %u: patch size %d x %d (need odd sides 3..%d)", surface, (int)w,
                    (int)h, MAX_PATCH_SIDE);
    if (num_verts != w * h || !range_ok(first_vert, num_verts, r->count[LUMP_DRAWVERTS]))
        return fail(r, "surface %u: patch of %d x %d control points does not match its %d "
                       "vertices at %d (of %u)", surface, (int)w, (int)h, (int)num_verts,
                    (int)first_vert, r->count[LUMP_DRAWVERTS]);
    enum { S = RVW_PATCH_STEPS };
    uint32_t cols = (uint32_t)(w - 1) / 2 * S + 1, rows = (uint32_t)(h - 1) / 2 * S + 1;
    float *grid = malloc((size_t)cols * rows * 3 * sizeof *grid);
    if (!grid)
        return fail(r, "out of memory reading surfaces");
#define AT(gy, gx) (grid + ((size_t)(gy) * cols + (gx)) * 3)
    bool ok = true;
    for (int32_t py = 0; ok && py + 2 < h; py += 2) {
        for (int32_t px = 0; ok && px + 2 < w; px += 2) {
            float ctl[3][3][3];
            for (int j = 0; ok && j < 3; j++)
                for (int i = 0; ok && i < 3; i++)
                    ok = vertex(r, (uint32_t)(first_vert + (py + j) * w + px + i), ctl[j][i]);
            for (int b = 0; ok && b <= S; b++) {
                float v = (float)b / S;
                float bv[3] = { (1 - v) * (1 - v), 2 * v * (1 - v), v * v };
                for (int a = 0; a <= S; a++) {
                    float u = (float)a / S;
                    float bu[3] = { (1 - u) * (1 - u), 2 * u * (1 - u), u * u };
                    float *g = AT(py / 2 * S + b, px / 2 * S + a);
                    for (int k = 0; k < 3; k++) {
                        float sum = 0;
                        for (int j = 0; j < 3; j++)
                            for (int i = 0; i < 3; i++)
                                sum += bv[j] * bu[i] * ctl[j][i][k];
                        g[k] = sum;
                    }
                }
            }
        }
    }
    if (ok && mesh) {
        ok = begin_mesh(r, RVW_MESH_PATCH);
        for (size_t k = 0; ok && k < (size_t)cols * rows; k++)
            if (rvw_level_add_mesh_vertex(r->level, grid + k * 3) < 0)
                ok = fail(r, "out of memory reading surfaces");
    }
    /* triangles sub-patch by sub-patch, in the order the oracle always drew them */
    for (uint32_t sy = 0; ok && sy + 1 < rows; sy += S) {
        for (uint32_t sx = 0; ok && sx + 1 < cols; sx += S) {
            for (uint32_t b = sy; ok && b < sy + S; b++) {
                for (uint32_t a = sx; ok && a < sx + S; a++) {
                    uint32_t i00 = b * cols + a, i01 = i00 + 1, i10 = i00 + cols, i11 = i10 + 1;
                    ok = add_triangle(r, AT(b, a), AT(b, a + 1), AT(b + 1, a + 1)) &&
                         add_triangle(r, AT(b, a), AT(b + 1, a + 1), AT(b + 1, a));
                    if (ok && mesh && (!rvw_level_add_mesh_triangle(r->level, i00, i01, i11) ||
                                       !rvw_level_add_mesh_triangle(r->level, i00, i11, i10)))
                        ok = fail(r, "out of memory reading surfaces");
                }
            }
        }
    }
#undef AT
    free(grid);
    return ok;
}

static bool read_surfaces(reader *r, int32_t first, int32_t count)
{
    if (!range_ok(first, count, r->count[LUMP_SURFACES]))
        return fail(r, "model 0: surfaces [%d, +%d) outside the %u surfaces", (int)first,
                    (int)count, r->count[LUMP_SURFACES]);
    r->map->stats.surfaces = (uint32_t)count;
    r->surface_object = malloc((r->count[LUMP_SURFACES] ? r->count[LUMP_SURFACES] : 1) * sizeof(int32_t));
    size_t verts = r->count[LUMP_DRAWVERTS] ? r->count[LUMP_DRAWVERTS] : 1;
    r->vertex_stamp = calloc(verts, sizeof *r->vertex_stamp);
    r->vertex_in_mesh = malloc(verts * sizeof *r->vertex_in_mesh);
    if (!r->surface_object || !r->vertex_stamp || !r->vertex_in_mesh)
        return fail(r, "out of memory reading surfaces");
    for (uint32_t s = 0; s < r->count[LUMP_SURFACES]; s++)
        r->surface_object[s] = -1;
    for (int32_t n = 0; n < count; n++) {
        uint32_t s = (uint32_t)(first + n);
        const uint8_t *p = rec(r, LUMP_SURFACES, s);
        int32_t shader = rd_i32(p), fog = rd_i32(p + 4), type = rd_i32(p + 8);
        int32_t first_vert = rd_i32(p + 12), num_verts = rd_i32(p + 16);
        int32_t first_index = rd_i32(p + 20), num_indexes = rd_i32(p + 24);
        int32_t patch_w = rd_i32(p + 96), patch_h = rd_i32(p + 100);
        uint32_t flags = 0, contents = 0;
        if (!shader_flags(r, shader, &flags, &contents))
            return false;
        if (type < SURF_PLANAR || type > SURF_FLARE)
            return fail(r, "surface %u: unknown type %d", s, (int)type);
        if (flags & (RVW_SURF_NODRAW | RVW_SURF_SKY)) {
            r->map->stats.skipped_nodraw_sky++;
            continue;
        }
        if (type == SURF_FLARE) {
            r->map->stats.skipped_empty++;
            continue;
        }
        /* Some maps point past an empty fog lump: clamp rather than refuse (unused here). */
        if (fog >= 0 && (uint32_t)fog < r->count[LUMP_FOGS])
            r->map->stats.fogged++;
        uint32_t before = r->level->triangle_count, meshes = r->level->mesh_count;
        uint32_t mesh_vertices = r->level->mesh_vertex_count, mesh_indices = r->level->mesh_index_count;
        if (rvw_level_begin_object(r->level, RVW_OBJ_SURFACE, -1) < 0)
            return fail(r, "out of memory reading surfaces");
        /* Opaque: drawn (not NODRAW, not sky: checked above) and not translucent. */
        bool opaque = !(contents & RVW_CONTENTS_TRANSLUCENT);
        bool ok = type == SURF_PATCH
                      ? read_patch(r, s, first_vert, num_verts, patch_w, patch_h, opaque)
                      : read_indexed(r, s, first_vert, num_verts, first_index, num_indexes, opaque,
                                     type == SURF_SOUP ? RVW_MESH_SOUP : 0);
        if (!ok)
            return false;
        if (type == SURF_PATCH)
            r->map->stats.patches++;
        if (r->level->triangle_count == before) { /* nothing to draw: not an object */
            r->level->object_count--;
            r->level->mesh_count = meshes;
            r->level->mesh_vertex_count = mesh_vertices;
            r->level->mesh_index_count = mesh_indices;
            r->map->stats.skipped_empty++;
        } else {
            r->surface_object[s] = (int32_t)(r->level->object_count - 1);
        }
    }
    return true;
}

/* ---- brushes ------------------------------------------------------------------------- */

/* The axial box of a brush from its sides 0..5, which the compiler writes as the axial
 * planes -x,+x,-y,+y,-z,+z (so a 6-sided brush is exactly this box), in Quake coordinates;
 * false when those sides are not the axial planes or the box is empty. */
static bool brush_box(reader *r, int32_t first_side, float mins[3], float maxs[3])
{
    for (int k = 0; k < 6; k++) {
        int32_t plane = rd_i32(rec(r, LUMP_BRUSHSIDES, (uint32_t)(first_side + k)));
        const uint8_t *pl = rec(r, LUMP_PLANES, (uint32_t)plane);
        int axis = k / 2;
        float sign = (k & 1) ? 1.0f : -1.0f;
        for (int a = 0; a < 3; a++)
            if (rd_f32(pl + a * 4) != (a == axis ? sign : 0.0f))
                return false;
        float d = rd_f32(pl + 12);
        if (k & 1)
            maxs[axis] = d;
        else
            mins[axis] = -d;
    }
    return mins[0] < maxs[0] && mins[1] < maxs[1] && mins[2] < maxs[2];
}

static bool push_planes(reader *r, const rvw_convex_side *sides, int32_t num_sides, rvw_bsp_brush *out)
{
    rvw_bsp_map *m = r->map;
    uint64_t need = (uint64_t)m->plane_count + (uint64_t)num_sides;
    if (need > m->plane_capacity) {
        uint64_t cap = m->plane_capacity ? m->plane_capacity : 1024;
        while (cap < need)
            cap *= 2;
        float *fresh = cap <= UINT32_MAX ? realloc(m->planes, (size_t)cap * 4 * sizeof(float)) : NULL;
        if (!fresh)
            return fail(r, "out of memory reading brushes");
        m->planes = fresh;
        m->plane_capacity = (uint32_t)cap;
    }
    out->first_plane = m->plane_count;
    out->plane_count = (uint32_t)num_sides;
    for (int32_t k = 0; k < num_sides; k++)
        memcpy(m->planes + (size_t)m->plane_count++ * 4, sides[k].plane, 4 * sizeof(float));
    return true;
}

/* One brush's sides, checked: planes in range, finite, with unit normals; shaders in range.
 * sides[] gets each side in Y-up with its shader's flags. */
static bool read_sides(reader *r, uint32_t b, int32_t first_side, int32_t num_sides,
                       rvw_convex_side *sides)
{
    for (int32_t k = 0; k < num_sides; k++) {
        const uint8_t *side = rec(r, LUMP_BRUSHSIDES, (uint32_t)(first_side + k));
        int32_t plane = rd_i32(side), side_shader = rd_i32(side + 4);
        if (plane < 0 || (uint32_t)plane >= r->count[LUMP_PLANES])
            return fail(r, "brush %u side %d: plane %d out of range (%u planes)", b, (int)k,
                        (int)plane, r->count[LUMP_PLANES]);
        const uint8_t *pl = rec(r, LUMP_PLANES, (uint32_t)plane);
        for (int a = 0; a < 4; a++)
            if (!coord_ok(rd_f32(pl + a * 4)))
                return fail(r, "plane %d is not finite", (int)plane);
        float n[3] = { rd_f32(pl), rd_f32(pl + 4), rd_f32(pl + 8) };
        float length = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(fabsf(length - 1.0f) <= NORMAL_TOLERANCE))
            return fail(r, "plane %d: normal of length %g, not a unit vector", (int)plane, (double)length);
        to_y_up(n, sides[k].plane);
        sides[k].plane[3] = rd_f32(pl + 12);
        if (!shader_flags(r, side_shader, &sides[k].surface_flags, &sides[k].contents))
            return false;
    }
    return true;
}

/* Model 0's brushes. Solid and player-clip brushes block the camera path (a player's box
 * cannot enter either); solid ones with a volume are also occluder candidates (the walk
 * declares its drawn surfaces instead: see rvw_level_choose_occluders). */
static bool read_brushes(reader *r, int32_t first, int32_t count)
{
    if (!range_ok(first, count, r->count[LUMP_BRUSHES]))
        return fail(r, "model 0: brushes [%d, +%d) outside the %u brushes", (int)first,
                    (int)count, r->count[LUMP_BRUSHES]);
    r->map->stats.brushes = (uint32_t)count;
    r->map->brushes = malloc((count ? (size_t)count : 1) * sizeof(rvw_bsp_brush));
    rvw_convex_side *sides = malloc(RVW_BRUSH_MAX_SIDES * sizeof *sides);
    float *planes = malloc(RVW_BRUSH_MAX_SIDES * 4 * sizeof *planes);
    bool ok = r->map->brushes && sides && planes;
    if (!ok)
        fail(r, "out of memory reading brushes");
    for (int32_t n = 0; ok && n < count; n++) {
        uint32_t b = (uint32_t)(first + n);
        const uint8_t *p = rec(r, LUMP_BRUSHES, b);
        int32_t first_side = rd_i32(p), num_sides = rd_i32(p + 4), shader = rd_i32(p + 8);
        uint32_t flags = 0, contents = 0;
        if (!(ok = shader_flags(r, shader, &flags, &contents)))
            break;
        if (!range_ok(first_side, num_sides, r->count[LUMP_BRUSHSIDES])) {
            ok = fail(r, "brush %u: sides [%d, +%d) outside the %u brushsides", b,
                      (int)first_side, (int)num_sides, r->count[LUMP_BRUSHSIDES]);
            break;
        }
        if (num_sides > RVW_BRUSH_MAX_SIDES) {
            ok = fail(r, "brush %u: %d sides, more than %d", b, (int)num_sides, RVW_BRUSH_MAX_SIDES);
            break;
        }
        if (!(ok = read_sides(r, b, first_side, num_sides, sides)))
            break;
        bool solid = (contents & RVW_CONTENTS_SOLID) != 0;
        r->map->stats.solid_brushes += solid;
        if (!(contents & (RVW_CONTENTS_SOLID | RVW_CONTENTS_PLAYERCLIP)))
            continue;
        r->map->stats.clip_brushes += !solid;
        r->side_pairs += (uint64_t)num_sides * (uint64_t)num_sides;
        if (r->side_pairs > MAX_SIDE_PAIRS) {
            ok = fail(r, "brushes: more than %u side pairs in all, refusing the map", MAX_SIDE_PAIRS);
            break;
        }
        for (int32_t k = 0; k < num_sides; k++)
            memcpy(planes + k * 4, sides[k].plane, sizeof sides[k].plane);
        rvw_box shape_bounds;
        rvw_brush_shape shape = rvw_brush_shape_of(planes, (uint32_t)num_sides, &shape_bounds);
        if (shape == RVW_BRUSH_EMPTY) { /* holds nothing: blocks nothing, hides nothing */
            r->map->stats.empty_brushes++;
            continue;
        }
        rvw_bsp_brush *out = &r->map->brushes[r->map->brush_count];
        if (!(ok = push_planes(r, sides, num_sides, out)))
            break;
        out->contents = contents;
        out->bounds = shape_bounds;
        if (shape == RVW_BRUSH_UNBOUNDED) { /* blocks everything along its open side */
            r->map->stats.unbounded_brushes++;
            for (int a = 0; a < 3; a++) {
                out->bounds.min[a] = -MAX_COORD * 4;
                out->bounds.max[a] = MAX_COORD * 4;
            }
        }
        r->map->brush_count++;
        for (int a = 0; a < 3 && shape != RVW_BRUSH_UNBOUNDED; a++) {
            r->map->extent.min[a] = fminf(r->map->extent.min[a], shape_bounds.min[a]);
            r->map->extent.max[a] = fmaxf(r->map->extent.max[a], shape_bounds.max[a]);
        }
        if (!solid || shape != RVW_BRUSH_SOLID)
            continue;
        float mins[3], maxs[3];
        bool exact = num_sides == 6 && brush_box(r, first_side, mins, maxs);
        uint32_t cflags = exact ? RVW_CONVEX_EXACT_BOX : 0;
        for (int32_t k = 0; k < num_sides; k++) {
            cflags |= sides[k].surface_flags & RVW_SURF_NODRAW ? RVW_CONVEX_NODRAW_SIDE : 0;
            cflags |= sides[k].surface_flags & RVW_SURF_SKY ? RVW_CONVEX_SKY_SIDE : 0;
        }
        cflags |= contents & RVW_CONTENTS_TRANSLUCENT ? RVW_CONVEX_TRANSLUCENT : 0;
        if (!(ok = rvw_level_add_convex(r->level, sides, (uint32_t)num_sides, contents, cflags, &shape_bounds))) {
            fail(r, "out of memory reading brushes");
            break;
        }
    }
    free(sides);
    free(planes);
    return ok;
}

/* ---- PVS ----------------------------------------------------------------------------- */

/* The PVS from the tree, leaf and visdata lumps (pvs.c); false only when memory ran out. */
static bool read_pvs(reader *r)
{
    rvw_pvs_lumps l = {
        .nodes = r->lump[LUMP_NODES], .node_bytes = r->lump_bytes[LUMP_NODES],
        .leafs = r->lump[LUMP_LEAFS], .leaf_bytes = r->lump_bytes[LUMP_LEAFS],
        .leafsurfaces = r->lump[LUMP_LEAFSURFACES], .leafsurface_bytes = r->lump_bytes[LUMP_LEAFSURFACES],
        .visdata = r->lump[LUMP_VISDATA], .visdata_bytes = r->lump_bytes[LUMP_VISDATA],
        .planes = r->lump[LUMP_PLANES], .plane_count = r->count[LUMP_PLANES],
        .surface_object = r->surface_object, .surface_count = r->count[LUMP_SURFACES],
        .object_count = r->level->object_count,
    };
    if (!rvw_bsp_pvs_read(&l, &r->map->pvs))
        return fail(r, "out of memory reading the PVS");
    return true;
}

bool rvw_bsp_read(const uint8_t *bytes, size_t size, const char *name, rvw_level *level,
                  rvw_bsp_map *map, char *err, size_t errlen)
{
    memset(level, 0, sizeof *level);
    memset(map, 0, sizeof *map);
    map->extent = (rvw_box){ { INFINITY, INFINITY, INFINITY }, { -INFINITY, -INFINITY, -INFINITY } };
    reader r = { .bytes = bytes, .size = size, .err = err, .errlen = errlen, .level = level,
                 .map = map };
    bool ok = bytes ? read_header(&r) : fail(&r, "no data");
    const uint8_t *model = ok ? rec(&r, LUMP_MODELS, 0) : NULL;
    ok = ok && read_entities(&r) &&
         read_surfaces(&r, rd_i32(model + 24), rd_i32(model + 28)) &&
         read_brushes(&r, rd_i32(model + 32), rd_i32(model + 36)) && read_pvs(&r);
    free(r.surface_object);
    free(r.vertex_stamp);
    free(r.vertex_in_mesh);
    if (ok && level->object_count == 0)
        ok = fail(&r, "model 0 has no drawable surface");
    if (!ok) {
        rvw_level_free(level);
        rvw_bsp_map_free(map);
        return false;
    }
    snprintf(level->name, sizeof level->name, "%s", name ? name : "map");
    rvw_level_finish(level);
    rvw_level_choose_occluders(level);
    rvw_level_orient_boxes(level);
    /* Quake's near plane is 4 units; the far plane lies beyond the whole scene so it never
     * cuts anything (some maps hang backdrops far outside their hull). A fov of 60 degrees
     * vertical at 16:9 is Quake's 90 degrees horizontal, near enough. */
    float diagonal = 0;
    for (int k = 0; k < 3; k++) {
        float e = level->bounds.max[k] - level->bounds.min[k];
        diagonal += e * e;
    }
    level->fov_y = 60.0f * 3.14159265f / 180.0f;
    level->near_plane = 4.0f;
    level->far_plane = 2.0f * sqrtf(diagonal) + 64.0f;
    return true;
}

void rvw_bsp_map_free(rvw_bsp_map *map)
{
    free(map->points);
    free(map->brushes);
    free(map->planes);
    rvw_bsp_pvs_free(&map->pvs);
    memset(map, 0, sizeof *map);
}
