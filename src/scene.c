#include "scene.h"
#include "world.h"

#include <string.h>

/* Grows every per-node array to capacity. All-or-nothing: on failure nothing changes. */
static rv_result scene_grow(rvi_scene *s, rvi_heap *heap, uint32_t capacity)
{
    struct { void **ptr; size_t elem; } arrays[] = {
        { (void **)&s->parent, 4 }, { (void **)&s->first_child, 4 },
        { (void **)&s->next_sibling, 4 }, { (void **)&s->prev_sibling, 4 },
        { (void **)&s->flags, 4 }, { (void **)&s->position, 12 }, { (void **)&s->rotation, 16 },
        { (void **)&s->scale, 12 }, { (void **)&s->world_matrix, 64 },
        { (void **)&s->local_sphere, 16 }, { (void **)&s->world_sphere, 16 },
    };
    enum { N = sizeof arrays / sizeof arrays[0] };
    void *fresh[N];
    for (int i = 0; i < N; i++) {
        fresh[i] = rvi_alloc(heap, (size_t)capacity * arrays[i].elem);
        if (!fresh[i]) {
            for (int j = 0; j < i; j++)
                rvi_free(heap, fresh[j], (size_t)capacity * arrays[j].elem);
            return RV_ERR_OUT_OF_MEMORY;
        }
    }
    rvi_pool grown = s->pool;
    /* The pool grows last so a pool failure can still roll back the arrays. */
    rv_result r = rvi_pool_reserve(heap, &grown, capacity);
    if (r != RV_OK) {
        for (int j = 0; j < N; j++)
            rvi_free(heap, fresh[j], (size_t)capacity * arrays[j].elem);
        return r;
    }
    for (int i = 0; i < N; i++) {
        if (s->capacity)
            memcpy(fresh[i], *arrays[i].ptr, (size_t)s->capacity * arrays[i].elem);
        rvi_free(heap, *arrays[i].ptr, (size_t)s->capacity * arrays[i].elem);
        *arrays[i].ptr = fresh[i];
    }
    s->pool = grown;
    s->capacity = capacity;
    return RV_OK;
}

rv_result rvi_scene_init(rvi_scene *scene, rvi_heap *heap, uint32_t capacity, uint16_t tag)
{
    memset(scene, 0, sizeof *scene);
    rvi_pool_init(&scene->pool, tag);
    rv_result r = scene_grow(scene, heap, capacity);
    if (r != RV_OK)
        rvi_scene_fini(scene, heap);
    return r;
}

void rvi_scene_fini(rvi_scene *s, rvi_heap *heap)
{
    size_t c = s->capacity;
    rvi_free(heap, s->parent, c * 4);
    rvi_free(heap, s->first_child, c * 4);
    rvi_free(heap, s->next_sibling, c * 4);
    rvi_free(heap, s->prev_sibling, c * 4);
    rvi_free(heap, s->flags, c * 4);
    rvi_free(heap, s->position, c * 12);
    rvi_free(heap, s->rotation, c * 16);
    rvi_free(heap, s->scale, c * 12);
    rvi_free(heap, s->world_matrix, c * 64);
    rvi_free(heap, s->local_sphere, c * 16);
    rvi_free(heap, s->world_sphere, c * 16);
    rvi_pool_free(heap, &s->pool);
    memset(s, 0, sizeof *s);
}
