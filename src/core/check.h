/* Input validation helpers: every public entry point checks host numbers with these. */
#ifndef RVI_CHECK_H
#define RVI_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline bool rvi_finite_n(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* The exponent field of an IEEE 754 binary32: zero for a zero or a subnormal. */
#define RVI_FLOAT_EXPONENT_BITS 0x7F800000u

/* True when no component is a normal number (each is zero or subnormal), read from its
 * bits: a quaternion or axis refused as zero whether or not the host flushes subnormals to
 * zero (DAZ; a float compare would then see a subnormal as zero). */
static inline bool rvi_negligible_n(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        if (bits & RVI_FLOAT_EXPONENT_BITS)
            return false;
    }
    return true;
}

/* Evaluates an rv_result expression and returns it from the caller when it fails. */
#define RVI_TRY(expr) do { rv_result rvi_try_r_ = (expr); if (rvi_try_r_ != RV_OK) return rvi_try_r_; } while (0)

#endif
