/* Cache prefetch hints: the address's line is requested now so a later access rarely waits
 * on memory. Hints only (nothing is read; any address may be given); a no-op where the
 * compiler has no builtin. */
#ifndef RVI_PREFETCH_H
#define RVI_PREFETCH_H

#include <stdbool.h>

#if defined(__GNUC__) || defined(__clang__)
#define RVI_PREFETCH(address) __builtin_prefetch(address)
/* The write hint as the compiler targets it: on baseline x86-64 (no -mprfchw) this is the
 * same read prefetch; RVI_PREFETCH_OWNED below asks for ownership on any x86-64. */
#define RVI_PREFETCH_WRITE(address) __builtin_prefetch((address), 1)
#else
#define RVI_PREFETCH(address) ((void)(address))
#define RVI_PREFETCH_WRITE(address) ((void)(address))
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

/* True when the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8): every AMD64 processor,
 * Intel's from Broadwell on. It is not in the x86-64 baseline, so a caller asks once (this
 * runs CPUID) and keeps the answer. */
static inline bool rvi_cpu_has_prefetchw(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
}

/* A line the caller will write, requested with write intent (PREFETCHW: it arrives owned,
 * so the store does not wait for a second request) when can_own, a read prefetch
 * otherwise. In rv_update_world this made the sweep of moved nodes 1.6x faster than read
 * prefetches did (bench update_world_1m_1pct, docs/scene.md). */
#define RVI_PREFETCH_OWNED(can_own, address)                                                          \
    do {                                                                                              \
        if (can_own)                                                                                  \
            __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(const void *)(address)));        \
        else                                                                                          \
            __builtin_prefetch(address);                                                              \
    } while (0)
#else
static inline bool rvi_cpu_has_prefetchw(void)
{
    return false;
}
#define RVI_PREFETCH_OWNED(can_own, address) ((void)(can_own), RVI_PREFETCH_WRITE(address))
#endif

#endif
