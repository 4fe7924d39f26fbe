#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include "rvis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The clock every case times with: wall time by default; the thread's CPU time after
 * rvb_use_cpu_clock (rvis-bench --cpu-clock). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

void rvb_use_cpu_clock(void)
{
    bench_clock = CLOCK_THREAD_CPUTIME_ID;
}

uint64_t rvb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rvb_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rvb_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool rvb_begin_case(rvb_ctx *ctx, const char *name)
{
    if (ctx->only && !strstr(name, ctx->only))
        return false;
    fprintf(stderr, "rvis-bench: %s ...\n", name);
    return true;
}

static void print_number(double x)
{
    if (x < 0 || !isfinite(x))
        printf("null");
    else
        printf("%.6g", x);
}

void rvb_report(rvb_ctx *ctx, const char *name, const char *unit, double ours, double baseline,
                const char *extra_json)
{
    if (ctx->json) {
        printf("%s\n  {\"case\": \"%s\", \"unit\": \"%s\", \"ours\": ", ctx->printed ? "," : "[", name, unit);
        print_number(ours);
        printf(", \"baseline\": ");
        print_number(baseline);
        printf(", \"speedup\": ");
        print_number(baseline >= 0 && ours > 0 ? baseline / ours : -1);
        printf("%s}", extra_json ? extra_json : "");
    } else {
        printf("%-28s %12.4g %-10s", name, ours, unit);
        if (baseline >= 0)
            printf("  baseline %12.4g  speedup %7.2fx", baseline, baseline / ours);
        printf("%s\n", extra_json ? extra_json : "");
    }
    ctx->printed++;
    fflush(stdout);
}

uint64_t rvb_next(rvb_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float rvb_uniform(rvb_rng *r, float a, float b)
{
    float u01 = (float)(rvb_next(r) >> 40) / 16777216.0f;
    return fmaf(b - a, u01, a);
}

static bool box_is(const rvb_box *b, const float expect[6], const char *what)
{
    const float *got[2] = { b->min, b->max };
    for (int k = 0; k < 6; k++) {
        float g = got[k / 3][k % 3], e = expect[k];
        if (fabsf(g - e) > 1e-4f * fmaxf(1.0f, fabsf(e))) {
            fprintf(stderr, "rvis-bench: city check value %s differs: component %d is %.9g, expected %.9g\n",
                    what, k, g, e);
            return false;
        }
    }
    return true;
}

bool rvb_city_generate(rvb_city *city)
{
    rvb_rng rng = { 0x00C17E5EEDull };
    for (int j = 0; j < 32; j++) {
        for (int i = 0; i < 32; i++) {
            float cx = -480.0f + 30.0f * (float)i + 15.0f;
            float cz = -480.0f + 30.0f * (float)j + 15.0f;
            float sx = rvb_uniform(&rng, 10, 20);
            float sz = rvb_uniform(&rng, 10, 20);
            float h = rvb_uniform(&rng, 5, 60);
            rvb_box *b = &city->buildings[j * 32 + i];
            b->min[0] = cx - sx / 2; b->min[1] = 0; b->min[2] = cz - sz / 2;
            b->max[0] = cx + sx / 2; b->max[1] = h; b->max[2] = cz + sz / 2;
        }
    }
    city->objects = malloc(sizeof(rvb_box) * RVB_CITY_OBJECTS);
    if (!city->objects)
        return false;
    for (int n = 0; n < RVB_CITY_OBJECTS; n++) {
        for (;;) {
            float x = rvb_uniform(&rng, -480, 480);
            float z = rvb_uniform(&rng, -480, 480);
            float sx = rvb_uniform(&rng, 0.5f, 2);
            float sy = rvb_uniform(&rng, 0.5f, 2);
            float sz = rvb_uniform(&rng, 0.5f, 2);
            rvb_box o = { { x - sx / 2, 0, z - sz / 2 }, { x + sx / 2, sy, z + sz / 2 } };
            int ci = (int)floorf((x + 480.0f) / 30.0f), cj = (int)floorf((z + 480.0f) / 30.0f);
            if (ci > 31) ci = 31;
            if (cj > 31) cj = 31;
            if (ci < 0) ci = 0;
            if (cj < 0) cj = 0;
            const rvb_box *b = &city->buildings[cj * 32 + ci];
            bool overlap = o.min[0] < b->max[0] && o.max[0] > b->min[0] &&
                           o.min[2] < b->max[2] && o.max[2] > b->min[2];
            if (!overlap) {
                city->objects[n] = o;
                break;
            }
        }
    }
    static const float b0[6] = { -474.12085f, 0, -472.069244f, -455.87915f, 11.0334854f, -457.930756f };
    static const float b1023[6] = { 455.722961f, 0, 458.760345f, 474.277039f, 34.5173759f, 471.239655f };
    static const float o0[6] = { -184.446594f, 0, -397.183014f, -183.13797f, 0.957573533f, -395.435699f };
    static const float o1[6] = { 303.478943f, 0, -476.186432f, 304.211121f, 1.10281658f, -474.493011f };
    static const float o99999[6] = { 158.507996f, 0, 330.05899f, 160.029144f, 1.14286947f, 330.814423f };
    bool ok = box_is(&city->buildings[0], b0, "building 0") &&
              box_is(&city->buildings[1023], b1023, "building 1023") &&
              box_is(&city->objects[0], o0, "object 0") && box_is(&city->objects[1], o1, "object 1") &&
              box_is(&city->objects[99999], o99999, "object 99999");
    if (!ok) {
        free(city->objects);
        city->objects = NULL;
    }
    return ok;
}

void rvb_city_free(rvb_city *city)
{
    free(city->objects);
    city->objects = NULL;
}

void rvb_city_camera(int f, int frames, float eye[3], float vp[16])
{
    const float pi = 3.14159265358979f;
    eye[0] = 0;
    eye[1] = 1.7f;
    eye[2] = -450.0f + 900.0f * (float)f / (float)(frames - 1);
    float yaw = (30.0f * pi / 180.0f) * sinf(2.0f * pi * (float)f / 150.0f);
    float fwd[3] = { sinf(yaw), 0, cosf(yaw) };
    /* Right-handed look-at (OpenGL): camera looks down -Z in view space. */
    float up[3] = { 0, 1, 0 };
    float s[3] = { fwd[1] * up[2] - fwd[2] * up[1], fwd[2] * up[0] - fwd[0] * up[2], fwd[0] * up[1] - fwd[1] * up[0] };
    float sl = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    for (int k = 0; k < 3; k++) s[k] /= sl;
    float u[3] = { s[1] * fwd[2] - s[2] * fwd[1], s[2] * fwd[0] - s[0] * fwd[2], s[0] * fwd[1] - s[1] * fwd[0] };
    float view[16] = {
        s[0], u[0], -fwd[0], 0,
        s[1], u[1], -fwd[1], 0,
        s[2], u[2], -fwd[2], 0,
        -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]),
        -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
        (fwd[0] * eye[0] + fwd[1] * eye[1] + fwd[2] * eye[2]), 1 };
    float fovy = 60.0f * pi / 180.0f, aspect = 16.0f / 9.0f, n = 0.1f, fa = 2000.0f;
    float t = 1.0f / tanf(fovy / 2);
    float proj[16] = { t / aspect, 0, 0, 0,  0, t, 0, 0,  0, 0, (fa + n) / (n - fa), -1,
                       0, 0, 2 * fa * n / (n - fa), 0 };
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += proj[k * 4 + r] * view[c * 4 + k];
            vp[c * 4 + r] = acc;
        }
}

const char *const rvb_stage_names[RV_STAGE_COUNT] = { "transforms", "journal", "frustum", "partition", "occlusion",
                                                      "lod",        "streaming", "publish", "feed" };
