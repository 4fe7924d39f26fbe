/* RVI_ALWAYS_INLINE: inline, and forced inline where the compiler can be told (GCC,
 * Clang). For small helpers of hot loops, and needed by a helper that does nothing but
 * prefetch: GCC may otherwise keep it out of line, find it free of side effects and drop
 * the call, prefetches and all. */
#ifndef RVI_INLINE_H
#define RVI_INLINE_H

#if defined(__GNUC__) || defined(__clang__)
#define RVI_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RVI_ALWAYS_INLINE inline
#endif

#endif
