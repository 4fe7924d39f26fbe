#include "level.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Grows *array (elem bytes each) so that index `need - 1` fits; false when memory ran out
 * or the count would leave 32 bits. */
static bool grow(void **array, uint32_t *capacity, uint32_t need, size_t elem)
{
    if (need <= *capacity)
        return true;
    uint64_t cap = *capacity ? *capacity : 64;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    if (cap < need || cap * elem > SIZE_MAX / 2)
        return false;
    void *fresh = realloc(*array, (size_t)cap * elem);
    if (!fresh)
        return false;
    *array = fresh;
    *capacity = (uint32_t)cap;
    return true;
}

void rvw_box_empty(rvw_box *box)
{
    for (int k = 0; k < 3; k++) {
        box->min[k] = FLT_MAX;
        box->max[k] = -FLT_MAX;
    }
}

void rvw_box_add_point(rvw_box *box, const float p[3])
{
    for (int k = 0; k < 3; k++) {
        if (p[k] < box->min[k])
            box->min[k] = p[k];
        if (p[k] > box->max[k])
            box->max[k] = p[k];
    }
}

void rvw_box_add_box(rvw_box *box, const rvw_box *other)
{
    if (rvw_box_is_empty(other))
        return;
    rvw_box_add_point(box, other->min);
    rvw_box_add_point(box, other->max);
}

bool rvw_box_is_empty(const rvw_box *box)
{
    return box->min[0] > box->max[0];
}

bool rvw_level_add_triangle(rvw_level *level, const float a[3], const float b[3], const float c[3])
{
    if (level->object_count == 0 || level->triangle_count == UINT32_MAX)
        return false;
    if (!grow((void **)&level->triangles, &level->triangle_capacity, level->triangle_count + 1,
              9 * sizeof(float)))
        return false;
    float *t = level->triangles + (size_t)level->triangle_count * 9;
    memcpy(t, a, 3 * sizeof(float));
    memcpy(t + 3, b, 3 * sizeof(float));
    memcpy(t + 6, c, 3 * sizeof(float));
    level->triangle_count++;
    level->objects[level->object_count - 1].triangle_count++;
    return true;
}

int32_t rvw_level_begin_object(rvw_level *level, rvw_object_kind kind, int32_t group)
{
    if (level->object_count >= INT32_MAX ||
        !grow((void **)&level->objects, &level->object_capacity, level->object_count + 1,
              sizeof(rvw_object)))
        return -1;
    rvw_object *o = &level->objects[level->object_count];
    memset(o, 0, sizeof *o);
    o->first_triangle = level->triangle_count;
    o->group = group;
    o->kind = (uint8_t)kind;
    rvw_box_empty(&o->bounds);
    return (int32_t)level->object_count++;
}

void rvw_box_triangles(const rvw_box *b, float *out)
{
    /* corner k: bit 0 = x max, bit 1 = y max, bit 2 = z max */
    float c[8][3];
    for (int k = 0; k < 8; k++) {
        c[k][0] = (k & 1) ? b->max[0] : b->min[0];
        c[k][1] = (k & 2) ? b->max[1] : b->min[1];
        c[k][2] = (k & 4) ? b->max[2] : b->min[2];
    }
    static const int quads[6][4] = {
        {0, 2, 6, 4}, {1, 5, 7, 3},   /* -x, +x */
        {0, 4, 5, 1}, {2, 3, 7, 6},   /* -y, +y */
        {0, 1, 3, 2}, {4, 6, 7, 5},   /* -z, +z */
    };
    static const int fan[6] = {0, 1, 2, 0, 2, 3};
    for (int f = 0; f < 6; f++)
        for (int v = 0; v < 6; v++)
            memcpy(out + (f * 6 + v) * 3, c[quads[f][fan[v]]], 3 * sizeof(float));
}

bool rvw_level_add_box(rvw_level *level, const rvw_box *b)
{
    float t[108];
    rvw_box_triangles(b, t);
    for (int i = 0; i < 12; i++)
        if (!rvw_level_add_triangle(level, t + i * 9, t + i * 9 + 3, t + i * 9 + 6))
            return false;
    return true;
}

void rvw_level_write_box(rvw_level *level, uint32_t object, const rvw_box *box)
{
    rvw_object *o = &level->objects[object];
    rvw_box_triangles(box, level->triangles + (size_t)o->first_triangle * 9);
    o->bounds = *box;
}

int32_t rvw_level_add_group(rvw_level *level, rvw_group_kind kind, int32_t parent)
{
    if (level->group_count >= INT32_MAX ||
        !grow((void **)&level->groups, &level->group_capacity, level->group_count + 1,
              sizeof(rvw_group)))
        return -1;
    rvw_group *g = &level->groups[level->group_count];
    memset(g, 0, sizeof *g);
    g->parent = parent;
    g->kind = (uint8_t)kind;
    g->hlod_proxy = -1;
    rvw_box_empty(&g->bounds);
    return (int32_t)level->group_count++;
}

bool rvw_level_add_occluder(rvw_level *level, const rvw_box *box)
{
    if (!grow((void **)&level->occluders, &level->occluder_capacity, level->occluder_count + 1,
              sizeof(rvw_box)))
        return false;
    level->occluders[level->occluder_count++] = *box;
    return true;
}

bool rvw_level_add_convex(rvw_level *level, const rvw_convex_side *sides, uint32_t count,
                          uint32_t contents, uint32_t flags, const rvw_box *bounds)
{
    if ((uint64_t)level->convex_side_count + count > UINT32_MAX ||
        !grow((void **)&level->convex_sides, &level->convex_side_capacity,
              level->convex_side_count + count, sizeof(rvw_convex_side)) ||
        !grow((void **)&level->convexes, &level->convex_capacity, level->convex_count + 1,
              sizeof(rvw_convex)))
        return false;
    memcpy(level->convex_sides + level->convex_side_count, sides, (size_t)count * sizeof *sides);
    level->convexes[level->convex_count++] = (rvw_convex){
        .first_side = level->convex_side_count, .side_count = count, .contents = contents,
        .flags = flags, .bounds = *bounds,
    };
    level->convex_side_count += count;
    return true;
}

bool rvw_level_begin_mesh(rvw_level *level, uint32_t object, uint32_t flags)
{
    if (!grow((void **)&level->meshes, &level->mesh_capacity, level->mesh_count + 1, sizeof(rvw_mesh)))
        return false;
    level->meshes[level->mesh_count++] = (rvw_mesh){
        .first_vertex = level->mesh_vertex_count, .first_index = level->mesh_index_count,
        .object = object, .flags = flags,
    };
    return true;
}

int64_t rvw_level_add_mesh_vertex(rvw_level *level, const float p[3])
{
    if (level->mesh_count == 0 || level->mesh_vertex_count == UINT32_MAX ||
        !grow((void **)&level->mesh_positions, &level->mesh_vertex_capacity,
              level->mesh_vertex_count + 1, 3 * sizeof(float)))
        return -1;
    memcpy(level->mesh_positions + (size_t)level->mesh_vertex_count++ * 3, p, 3 * sizeof(float));
    return level->meshes[level->mesh_count - 1].vertex_count++;
}

bool rvw_level_add_mesh_triangle(rvw_level *level, uint32_t a, uint32_t b, uint32_t c)
{
    if (level->mesh_count == 0 || level->mesh_index_count > UINT32_MAX - 3 ||
        !grow((void **)&level->mesh_indices, &level->mesh_index_capacity, level->mesh_index_count + 3,
              sizeof(uint32_t)))
        return false;
    uint32_t *i = level->mesh_indices + level->mesh_index_count;
    i[0] = a;
    i[1] = b;
    i[2] = c;
    level->mesh_index_count += 3;
    level->meshes[level->mesh_count - 1].index_count += 3;
    return true;
}

bool rvw_level_add_camera(rvw_level *level, const rvw_camera *camera)
{
    if (!grow((void **)&level->path, &level->frame_capacity, level->frame_count + 1,
              sizeof(rvw_camera)))
        return false;
    level->path[level->frame_count++] = *camera;
    return true;
}

void rvw_level_object_moved(rvw_level *level, uint32_t object)
{
    rvw_object *o = &level->objects[object];
    rvw_box_empty(&o->bounds);
    const float *t = level->triangles + (size_t)o->first_triangle * 9;
    for (uint32_t i = 0; i < o->triangle_count * 3; i++)
        rvw_box_add_point(&o->bounds, t + i * 3);
}

void rvw_level_finish(rvw_level *level)
{
    rvw_box_empty(&level->bounds);
    for (uint32_t g = 0; g < level->group_count; g++)
        rvw_box_empty(&level->groups[g].bounds);
    for (uint32_t i = 0; i < level->object_count; i++) {
        rvw_level_object_moved(level, i);
        rvw_object *o = &level->objects[i];
        rvw_box_add_box(&level->bounds, &o->bounds);
        if (o->group >= 0)
            rvw_box_add_box(&level->groups[o->group].bounds, &o->bounds);
    }
    /* parents come before children, so one backward pass carries bounds to the top */
    for (uint32_t g = level->group_count; g-- > 0;) {
        int32_t p = level->groups[g].parent;
        if (p >= 0)
            rvw_box_add_box(&level->groups[p].bounds, &level->groups[g].bounds);
    }
}

/* ab + bc + ca: half a box's surface area, its mean image area up to a constant. */
static double half_area(const double e[3])
{
    return e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
}

/* The box of o's vertices in the frame (u, v, n), in lo..hi; true when it lies inside o's
 * world box (up to a hair of rounding). */
static bool frame_box(const rvw_level *level, const rvw_object *o, const double f[3][3], double lo[3], double hi[3])
{
    const float *t = level->triangles + 9ull * o->first_triangle;
    for (int k = 0; k < 3; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    for (uint32_t j = 0; j < o->triangle_count * 3; j++, t += 3)
        for (int k = 0; k < 3; k++) {
            double l = f[k][0] * t[0] + f[k][1] * t[1] + f[k][2] * t[2];
            lo[k] = fmin(lo[k], l);
            hi[k] = fmax(hi[k], l);
        }
    for (int c = 0; c < 8; c++)
        for (int r = 0; r < 3; r++) {
            double w = 0;
            for (int k = 0; k < 3; k++)
                w += f[k][r] * ((c >> k) & 1 ? hi[k] : lo[k]);
            double tol = 0.01 + 1e-5 * fabs(w);
            if (w < o->bounds.min[r] - tol || w > o->bounds.max[r] + tol)
                return false;
        }
    return true;
}

static bool orient_box(const rvw_level *level, rvw_object *o)
{
    double world[3], best_area, best_lo[3], best_hi[3], best[3][3];
    for (int k = 0; k < 3; k++)
        world[k] = (double)o->bounds.max[k] - o->bounds.min[k];
    double limit = half_area(world);
    best_area = limit;
    bool found = false;
    /* at most about 24 triangles looked at, spread over the object */
    uint32_t step = o->triangle_count > 24 ? o->triangle_count / 24 : 1;
    for (uint32_t i = 0; i < o->triangle_count; i += step) {
        const float *a = level->triangles + 9ull * (o->first_triangle + i);
        double e1[3], e2[3];
        for (int k = 0; k < 3; k++) {
            e1[k] = (double)a[3 + k] - a[k];
            e2[k] = (double)a[6 + k] - a[k];
        }
        double n[3] = { e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0] };
        double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(nl > 1e-9))
            continue;
        for (int k = 0; k < 3; k++)
            n[k] /= nl;
        for (int e = 0; e < 3; e++) {
            const float *p = a + 3 * e, *q = a + 3 * ((e + 1) % 3);
            double u[3], d = 0;
            for (int k = 0; k < 3; k++)
                d += ((double)q[k] - p[k]) * n[k];
            for (int k = 0; k < 3; k++)
                u[k] = (double)q[k] - p[k] - d * n[k];
            double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
            if (!(ul > 1e-9))
                continue;
            double f[3][3];
            for (int k = 0; k < 3; k++) {
                f[0][k] = u[k] / ul;
                f[2][k] = n[k];
            }
            f[1][0] = n[1] * f[0][2] - n[2] * f[0][1]; /* v = n x u: (u, v, n) right-handed */
            f[1][1] = n[2] * f[0][0] - n[0] * f[0][2];
            f[1][2] = n[0] * f[0][1] - n[1] * f[0][0];
            double lo[3], hi[3];
            bool inside = frame_box(level, o, (const double (*)[3])f, lo, hi);
            double ext[3] = { hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2] }, area = half_area(ext);
            if (area < best_area && (inside || area < 0.7 * limit)) {
                best_area = area;
                found = true;
                memcpy(best, f, sizeof best);
                memcpy(best_lo, lo, sizeof best_lo);
                memcpy(best_hi, hi, sizeof best_hi);
            }
        }
    }
    if (!found || !(best_area < 0.9 * limit))
        return false;
    o->oriented = true;
    for (int k = 0; k < 3; k++) {
        for (int r = 0; r < 3; r++)
            o->axes[k][r] = (float)best[k][r];
        o->box.min[k] = (float)best_lo[k];
        o->box.max[k] = (float)best_hi[k];
    }
    return true;
}

uint32_t rvw_level_orient_boxes(rvw_level *level)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < level->object_count; i++) {
        rvw_object *o = &level->objects[i];
        o->oriented = false;
        if (o->kind == RVW_OBJ_SURFACE && o->triangle_count > 0)
            n += orient_box(level, o);
    }
    return n;
}

void rvw_object_box_triangles(const rvw_object *o, float out[108])
{
    if (!o->oriented) {
        rvw_box_triangles(&o->bounds, out);
        return;
    }
    rvw_box_triangles(&o->box, out);
    for (int i = 0; i < 36; i++) {
        float l[3] = { out[3 * i], out[3 * i + 1], out[3 * i + 2] };
        for (int r = 0; r < 3; r++)
            out[3 * i + r] = o->axes[0][r] * l[0] + o->axes[1][r] * l[1] + o->axes[2][r] * l[2];
    }
}

void rvw_level_count_candidates(const rvw_level *level, rvw_candidate_counts *out)
{
    *out = (rvw_candidate_counts){ .convexes = level->convex_count, .meshes = level->mesh_count };
    for (uint32_t i = 0; i < level->convex_count; i++) {
        uint32_t f = level->convexes[i].flags;
        out->exact_boxes += (f & RVW_CONVEX_EXACT_BOX) != 0;
        out->nodraw_side += (f & RVW_CONVEX_NODRAW_SIDE) != 0;
        out->sky_side += (f & RVW_CONVEX_SKY_SIDE) != 0;
        out->translucent += (f & RVW_CONVEX_TRANSLUCENT) != 0;
    }
    out->general_convexes = out->convexes - out->exact_boxes;
    for (uint32_t i = 0; i < level->mesh_count; i++) {
        uint32_t t = level->meshes[i].index_count / 3;
        out->mesh_triangles += t;
        if (level->meshes[i].flags & RVW_MESH_PATCH) {
            out->patch_meshes++;
            out->patch_triangles += t;
        }
    }
}

uint32_t rvw_level_choose_occluders(rvw_level *level)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < level->mesh_count; i++) {
        rvw_mesh *m = &level->meshes[i];
        m->flags &= ~(uint32_t)RVW_MESH_OCCLUDER;
        if (m->flags & (RVW_MESH_PATCH | RVW_MESH_SOUP))
            continue;
        m->flags |= RVW_MESH_OCCLUDER;
        count++;
    }
    return count;
}

void rvw_level_count_occluders(const rvw_level *level, uint32_t *meshes, uint32_t *triangles)
{
    *meshes = *triangles = 0;
    for (uint32_t i = 0; i < level->mesh_count; i++)
        if (level->meshes[i].flags & RVW_MESH_OCCLUDER) {
            (*meshes)++;
            *triangles += level->meshes[i].index_count / 3;
        }
}

void rvw_level_free(rvw_level *level)
{
    free(level->triangles);
    free(level->objects);
    free(level->groups);
    free(level->occluders);
    free(level->convexes);
    free(level->convex_sides);
    free(level->meshes);
    free(level->mesh_positions);
    free(level->mesh_indices);
    free(level->ladders);
    free(level->path);
    memset(level, 0, sizeof *level);
}
