/* RVI_CLONES: on x86-64 with glibc (GCC), a function built twice, for AVX2 and for the
 * baseline, the CPU picking one when the library loads (function multiversioning,
 * target_clones). For plain C loops written for the compiler to vectorise: with SSE2's
 * two-operand forms and 4 lanes they are often compute bound, and the AVX2 clone runs
 * them about twice as fast. Both give the same results: the same operations in the same
 * order, and the build contracts nothing into fused multiply-adds (-ffp-contract=off).
 * Define RVIS_NO_MULTIVERSION to build one version. */
#ifndef RVI_CLONES_H
#define RVI_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    defined(__ELF__) && !defined(RVIS_NO_MULTIVERSION)
#define RVI_CLONES __attribute__((target_clones("avx2", "default")))
/* The same with an AVX-512 build first, for loops that run out of AVX2's 16 registers. */
#define RVI_CLONES_512 __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RVI_CLONES
#define RVI_CLONES_512
#endif

#endif
