/* fuzz_world's pure helpers: numbers from the input, float classification, the
 * double-precision oracles of the transform and bounds checks, and a camera from the input. */
#ifndef RVIS_FUZZ_WORLD_H
#define RVIS_FUZZ_WORLD_H

#include "fuzz_support.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- input decoding ----------------------------------------------------------------- */

static float f32(fz_input *in)
{
    uint8_t b = u8(in);
    if (b < 192)
        return ((int)b - 96) * 0.25f;
    static const float palette[15] = { 0.0f, -0.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, NAN, -NAN,
                                       INFINITY, -INFINITY, 1e-45f, 1e-38f, 1e6f, -1e6f, 3.0e19f };
    if ((b & 15) < 15)
        return palette[b & 15];
    uint32_t bits = (uint32_t)u8(in) | (uint32_t)u8(in) << 8 | (uint32_t)u8(in) << 16 | (uint32_t)u8(in) << 24;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static int finite_n(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* True when no component is a normal number (each zero or subnormal): what the rotation
 * setters refuse as zero. */
static int no_normal(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (fpclassify(v[i]) == FP_NORMAL)
            return 0;
    return 1;
}

/* ---- double-precision oracles --------------------------------------------------------- */

/* Local matrix T * R * S (column-major, double) as rv_update_world defines it; the
 * quaternion is divided by its squared length. */
static void local_matrix(const float p[3], const float q[4], const float s[3], double m[16])
{
    double x = q[0], y = q[1], z = q[2], w = q[3];
    double n2 = x * x + y * y + z * z + w * w, k = 2.0 / n2;
    double r[9] = {
        1 - k * (y * y + z * z), k * (x * y + w * z), k * (x * z - w * y),
        k * (x * y - w * z), 1 - k * (x * x + z * z), k * (y * z + w * x),
        k * (x * z + w * y), k * (y * z - w * x), 1 - k * (x * x + y * y),
    };
    for (int c = 0; c < 3; c++) {
        for (int row = 0; row < 3; row++)
            m[c * 4 + row] = r[c * 3 + row] * s[c];
        m[c * 4 + 3] = 0;
    }
    m[12] = p[0];
    m[13] = p[1];
    m[14] = p[2];
    m[15] = 1;
}

static double max_abs(const double *v, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

/* Largest singular value of the upper 3x3 of a column-major matrix (power iteration on
 * M^T M; a slight underestimate at worst, which only weakens the check). */
static double sigma_max(const float *m)
{
    double a[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += (double)m[i * 4 + k] * m[j * 4 + k];
            a[i * 3 + j] = s;
        }
    double v[3] = { 1, 0.7, 0.3 }, lambda = 0;
    for (int it = 0; it < 64; it++) {
        double u[3];
        for (int i = 0; i < 3; i++)
            u[i] = a[i * 3] * v[0] + a[i * 3 + 1] * v[1] + a[i * 3 + 2] * v[2];
        double len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        if (!(len > 0))
            return 0;
        for (int i = 0; i < 3; i++)
            v[i] = u[i] / len;
        lambda = len;
    }
    return sqrt(lambda);
}

static double dist3(const float *a, const double *b)
{
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return sqrt(dx * dx + dy * dy + dz * dz);
}

/* A view-projection from the input: eye, a look direction, a field of view, perspective
 * (OpenGL depth, near 0.1, far 1000). */
static void decode_view(fz_input *in, float vp[16], float eye_out[3])
{
    double eye[3] = { f32(in), f32(in), f32(in) };
    double dir[3] = { f32(in), f32(in), f32(in) };
    for (int k = 0; k < 3; k++) {
        if (!isfinite(eye[k]) || fabs(eye[k]) > 1e6)
            eye[k] = 0;
        if (!isfinite(dir[k]) || fabs(dir[k]) > 1e6)
            dir[k] = 0;
    }
    double len = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(len > 1e-6)) {
        dir[0] = 0;
        dir[1] = 0;
        dir[2] = -1;
        len = 1;
    }
    for (int k = 0; k < 3; k++)
        eye_out[k] = (float)eye[k];
    double f[3] = { dir[0] / len, dir[1] / len, dir[2] / len };
    double view[16], proj[16];
    fz_look_at(eye, f, tan(0.2 + (u8(in) % 128) * 0.02), 1000, view, proj);
    for (int c = 0; c < 4; c++)
        for (int row = 0; row < 4; row++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += proj[k * 4 + row] * view[c * 4 + k];
            vp[c * 4 + row] = (float)acc;
        }
}

#endif
