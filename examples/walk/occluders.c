/* rvis-walk: the occluders rvis gets, as triangles (see occluders.h). */
#include "occluders.h"

#include <stdlib.h>
#include <string.h>

static bool grow(void **array, uint32_t *capacity, uint64_t need, size_t elem)
{
    if (need <= *capacity)
        return true;
    if (need > UINT32_MAX / 2)
        return false;
    uint64_t cap = *capacity ? *capacity : 64;
    while (cap < need)
        cap *= 2;
    void *fresh = realloc(*array, (size_t)cap * elem);
    if (!fresh)
        return false;
    *array = fresh;
    *capacity = (uint32_t)cap;
    return true;
}

/* Starts an item over the triangles added from now on; NULL when memory ran out. */
static rvw_occluder_ref *begin_item(rvw_occluder_set *set, uint32_t index, const char *kind)
{
    if (!grow((void **)&set->items, &set->capacity, (uint64_t)set->count + 1, sizeof *set->items))
        return NULL;
    rvw_occluder_ref *o = &set->items[set->count++];
    *o = (rvw_occluder_ref){ .first_triangle = set->triangle_count, .index = index, .kind = kind };
    rvw_box_empty(&o->bounds);
    return o;
}

/* Room for count more triangles; false when memory ran out. */
static bool reserve(rvw_occluder_set *set, uint32_t count)
{
    return grow((void **)&set->triangles, &set->triangle_capacity, (uint64_t)set->triangle_count + count,
                9 * sizeof(float));
}

/* Counts the last count triangles into item o and its bounds. */
static void end_item(rvw_occluder_set *set, rvw_occluder_ref *o, uint32_t count)
{
    const float *t = set->triangles + (size_t)set->triangle_count * 9;
    for (uint32_t k = 0; k < count * 3; k++)
        rvw_box_add_point(&o->bounds, t + k * 3);
    set->triangle_count += count;
    o->triangle_count += count;
}

void rvw_occluders_clear(rvw_occluder_set *set)
{
    set->count = 0;
    set->triangle_count = 0;
}

bool rvw_occluders_add_box(rvw_occluder_set *set, const rvw_box *box, uint32_t index, const char *kind)
{
    rvw_occluder_ref *o = begin_item(set, index, kind);
    if (!o || !reserve(set, 12))
        return false;
    rvw_box_triangles(box, set->triangles + (size_t)set->triangle_count * 9);
    end_item(set, o, 12);
    return true;
}

/* A mesh's triangles, spelled out. */
static bool add_mesh(rvw_occluder_set *set, const rvw_level *level, const rvw_mesh *m)
{
    uint32_t count = m->index_count / 3;
    rvw_occluder_ref *o = begin_item(set, m->object, "surface");
    if (!o || !reserve(set, count))
        return false;
    float *t = set->triangles + (size_t)set->triangle_count * 9;
    const uint32_t *ix = level->mesh_indices + m->first_index;
    for (uint32_t k = 0; k < count * 3; k++)
        memcpy(t + k * 3, level->mesh_positions + ((size_t)m->first_vertex + ix[k]) * 3, 3 * sizeof(float));
    end_item(set, o, count);
    return true;
}

bool rvw_occluders_of_map(const rvw_level *level, rvw_occluder_set *set)
{
    rvw_occluders_clear(set);
    for (uint32_t i = 0; i < level->mesh_count; i++)
        if ((level->meshes[i].flags & RVW_MESH_OCCLUDER) && !add_mesh(set, level, &level->meshes[i]))
            return false;
    return true;
}

void rvw_occluders_free(rvw_occluder_set *set)
{
    free(set->items);
    free(set->triangles);
    memset(set, 0, sizeof *set);
}
