/* What a delta must satisfy (docs/design.md §7; the rules rvis.h states for each channel): the
 * checks of the journal's append and of a replay. The transform checks read the numbers'
 * bits, never compare them as floats: the same verdict whether or not the host flushes
 * subnormals to zero (DAZ/FTZ, which engines often set: a float compare would then see a
 * subnormal as zero), and no FE_INVALID from a NaN. rvi_delta_validate (journal.h) is the
 * whole check of one delta. */
#ifndef RVI_JOURNAL_VALIDATE_H
#define RVI_JOURNAL_VALIDATE_H

#include "rvis.h"
#include "core/check.h"

#include <float.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RVI_CHECK_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define RVI_CHECK_INLINE static __forceinline
#else
#define RVI_CHECK_INLINE static inline
#endif

/* A transform's 14 numbers are its first 14 32-bit words (position, rotation, scale,
 * bounds), read as IEEE 754 binary32 bit patterns by the checks below. */
enum { RVI_TRANSFORM_NUMBERS = 14 };
_Static_assert(sizeof(float) == 4 && FLT_MANT_DIG == 24 && FLT_MAX_EXP == 128, "binary32 floats");
_Static_assert(offsetof(rv_projection_transform, rotation) == 3 * 4 &&
                   offsetof(rv_projection_transform, scale) == 7 * 4 &&
                   offsetof(rv_projection_transform, bounds_space) == RVI_TRANSFORM_NUMBERS * 4,
               "the transform's numbers are its first 14 words");

#define RVI_MAGNITUDE_BITS 0x7FFFFFFFu

/* True when none of the transform's 14 numbers is an infinity or a NaN. Such a number has
 * every exponent bit set, so adding one to the exponent of its magnitude carries into bit
 * 31 (a finite number's does not): one OR over all 14, no branch per number. */
RVI_CHECK_INLINE bool rvi_transform_finite(const rv_projection_transform *t)
{
#if defined(__SSE2__)
    /* Words 0-3, 4-7, 8-11 and 10-13 (overlapping: 14 is not a multiple of 4). */
    const unsigned char *p = (const unsigned char *)t;
    const __m128i magnitude = _mm_set1_epi32((int)RVI_MAGNITUDE_BITS), exponent_one = _mm_set1_epi32(0x00800000);
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(p + (RVI_TRANSFORM_NUMBERS - 4) * 4));
    a = _mm_add_epi32(_mm_and_si128(a, magnitude), exponent_one);
    b = _mm_add_epi32(_mm_and_si128(b, magnitude), exponent_one);
    c = _mm_add_epi32(_mm_and_si128(c, magnitude), exponent_one);
    d = _mm_add_epi32(_mm_and_si128(d, magnitude), exponent_one);
    __m128i carry = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
    return _mm_movemask_ps(_mm_castsi128_ps(carry)) == 0; /* bit 31 of each lane */
#else
    uint32_t bits[RVI_TRANSFORM_NUMBERS];
    memcpy(bits, t, sizeof bits);
    uint32_t carry = 0;
    for (int i = 0; i < RVI_TRANSFORM_NUMBERS; i++)
        carry |= (bits[i] & RVI_MAGNITUDE_BITS) + 0x00800000u;
    return (carry & 0x80000000u) == 0;
#endif
}

/* True when none of the four rotation numbers (finite) is a normal number: each is zero or
 * subnormal. Such a quaternion reads as zero under DAZ, so it is refused everywhere. */
RVI_CHECK_INLINE bool rvi_rotation_negligible(const rv_projection_transform *t)
{
#if defined(__SSE2__)
    __m128i q = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)t->rotation),
                              _mm_set1_epi32((int)RVI_FLOAT_EXPONENT_BITS));
    return _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(q, _mm_setzero_si128()))) == 0xF;
#else
    return rvi_negligible_n(t->rotation, 4);
#endif
}

/* True when the sphere's radius is below zero: sign set and magnitude nonzero (-0 is a
 * radius of zero; a negative subnormal is below zero in every environment). */
RVI_CHECK_INLINE bool rvi_radius_negative(const rv_projection_transform *t)
{
    uint32_t radius;
    memcpy(&radius, &t->bounds[3], sizeof radius);
    return radius > 0x80000000u;
}

/* True when a scale factor is zero or subnormal (world-space bounds need every factor
 * normal: the bounds are divided by it, and under DAZ a subnormal one reads as zero). */
RVI_CHECK_INLINE bool rvi_scale_negligible(const rv_projection_transform *t)
{
    uint32_t scale[3];
    memcpy(scale, t->scale, sizeof scale);
    return (scale[0] & RVI_FLOAT_EXPONENT_BITS) == 0 || (scale[1] & RVI_FLOAT_EXPONENT_BITS) == 0 ||
           (scale[2] & RVI_FLOAT_EXPONENT_BITS) == 0;
}

/* True when a transform's local-space checks fail or its bounds are not local-space ones:
 * the append's test of an update, computed without branches (the caller keeps it for an
 * UpdateTransform only; an update of another channel computes it too, on whatever bytes the
 * host left in the transform). When true, rvi_delta_validate decides. */
RVI_CHECK_INLINE bool rvi_transform_needs_check(const rv_projection_transform *t)
{
    uint32_t fails = (uint32_t)!rvi_transform_finite(t) | (uint32_t)rvi_rotation_negligible(t) |
                     (uint32_t)rvi_radius_negative(t) | (uint32_t)(t->bounds_space != RV_BOUNDS_LOCAL);
    return fails != 0;
}

/* A bucket's class and parent key for projection `key`: RV_OK or RV_ERR_INVALID_ARG. */
rv_result rvi_validate_bucket(const rv_projection_bucket *bucket, uint64_t key);
/* Every channel of a Register: RV_OK, RV_ERR_NOT_FINITE or RV_ERR_INVALID_ARG. */
rv_result rvi_validate_register(const rv_delta *delta);

#endif
