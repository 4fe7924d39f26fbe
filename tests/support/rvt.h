/* Shared test support: a counting allocator that can fail the k-th allocation, and the
 * allocation-failure sweep every module runs its scenarios through.
 * Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>. */
#ifndef RVT_H
#define RVT_H

#include "rvis.h"

#include <stdint.h>

typedef struct rvt_alloc {
    uint64_t calls;       /* alloc + realloc calls seen */
    uint64_t fail_at;     /* 1-based call number to fail; 0 = never */
    uint64_t failed;      /* calls failed */
    int64_t live_blocks;  /* blocks currently held */
    int64_t live_bytes;
} rvt_alloc;

/* An rv_allocator counting into *state. */
rv_allocator rvt_allocator(rvt_alloc *state);

/* One scenario for the sweep. setup builds the object with allocations never failing;
 * call performs the call under test (it must return RV_OK when nothing fails);
 * fingerprint digests the observable state (compared before and after a failed call);
 * teardown frees everything. */
typedef struct rvt_sweep {
    const char *name;
    void *(*setup)(const rv_allocator *allocator);
    rv_result (*call)(void *object);
    uint64_t (*fingerprint)(void *object);
    void (*teardown)(void *object);
} rvt_sweep;

/* Runs the call once to count its allocations (n), then for k = 1..n reruns setup and the
 * call failing its k-th allocation: asserts RV_ERR_OUT_OF_MEMORY, an unchanged fingerprint,
 * and no leak after teardown. Also asserts that a successful run leaks nothing.
 * Returns n, so a test can assert the scenario really allocates. */
uint64_t rvt_run_sweep(const rvt_sweep *sweep);

/* The SSE control register's subnormal modes, which engines often set: DAZ (bit 6) reads
 * subnormal inputs as zero, FTZ (bit 15) flushes subnormal results. rvt_flush_subnormals
 * turns both on and returns the old register for rvt_restore_fp_mode. Where there is no
 * MXCSR, RVT_HAVE_MXCSR is 0 and tests run in the default mode only. */
#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define RVT_HAVE_MXCSR 1
static inline unsigned int rvt_flush_subnormals(void)
{
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u);
    return csr;
}
static inline void rvt_restore_fp_mode(unsigned int csr)
{
    _mm_setcsr(csr);
}
#else
#define RVT_HAVE_MXCSR 0
#endif

/* splitmix64: deterministic random numbers for property tests. */
static inline uint64_t rvt_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline float rvt_uniform(uint64_t *s, float a, float b)
{
    float u = (float)(rvt_next(s) >> 40) / 16777216.0f;
    return a + (b - a) * u;
}

/* RVT_HEAVY(full, light): the full count in release builds (heavy_tests=true), the light
 * one in sanitizer builds. */
#ifdef RVT_HEAVY_TESTS
#define RVT_HEAVY(full, light) (full)
#else
#define RVT_HEAVY(full, light) (light)
#endif

#endif
