/* What the reliability fuzz targets share: reading bytes from libFuzzer's input,
 * and a counting host allocator that can be armed to fail. Each target decodes its own
 * numbers (their byte layouts are what the committed seeds mean), so only these are here. */
#ifndef RVIS_FUZZ_SUPPORT_H
#define RVIS_FUZZ_SUPPORT_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

/* The bytes not read yet; reads past the end give 0, so any input is a whole program. */
typedef struct fz_input {
    const uint8_t *p;
    size_t n;
} fz_input;

static inline uint8_t u8(fz_input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

/* A host allocator (rv_allocator's three hooks, user = the fz_alloc) counting live blocks;
 * with fail_at = k > 0, the k-th call and every later one fail. */
typedef struct fz_alloc {
    uint64_t calls, fail_at;
    int64_t live;
} fz_alloc;

static inline void *fz_do_alloc(size_t size, void *user)
{
    fz_alloc *a = user;
    if (a->fail_at && ++a->calls >= a->fail_at)
        return NULL;
    void *p = malloc(size);
    if (p)
        a->live++;
    return p;
}

static inline void *fz_do_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    fz_alloc *a = user;
    (void)old_size;
    if (a->fail_at && ++a->calls >= a->fail_at)
        return NULL;
    return realloc(ptr, new_size);
}

static inline void fz_do_free(void *ptr, size_t size, void *user)
{
    fz_alloc *a = user;
    (void)size;
    if (ptr)
        a->live--;
    free(ptr);
}

/* A look-at camera in OpenGL convention (near 0.1): eye, a unit forward direction, the
 * tangent of half the vertical field of view and the far distance; column-major. */
static inline void fz_look_at(const double eye[3], const double f[3], double t, double far, double view[16],
                              double proj[16])
{
    double up[3] = { fabs(f[1]) > 0.9 ? 1 : 0, fabs(f[1]) > 0.9 ? 0 : 1, 0 };
    double r[3] = { f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0] };
    double rl = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; k++)
        r[k] /= rl;
    double u[3] = { r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2], r[0] * f[1] - r[1] * f[0] };
    double n = 0.1;
    double v[16] = { r[0], u[0], -f[0], 0, r[1], u[1], -f[1], 0, r[2], u[2], -f[2], 0,
                     -(r[0] * eye[0] + r[1] * eye[1] + r[2] * eye[2]), -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
                     f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1 };
    double p[16] = { 1 / t, 0, 0, 0, 0, 1 / t, 0, 0, 0, 0, -(far + n) / (far - n), -1, 0, 0, -2 * far * n / (far - n), 0 };
    memcpy(view, v, sizeof v);
    memcpy(proj, p, sizeof p);
}

#endif
