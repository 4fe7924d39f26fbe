/* Rounding toward +infinity when a double becomes a float: a conservative bound (a radius, a
 * stretch) is computed in double and must not shrink when stored. */
#ifndef RVI_ROUND_UP_H
#define RVI_ROUND_UP_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The bit pattern of the next float above the one with these bits (toward +infinity; from
 * either zero, the smallest subnormal), for any float but +infinity and NaN. No branch:
 * rvi_float_up selects it by a mask. */
static inline uint32_t rvi_step_up_bits(uint32_t bits)
{
    uint32_t up = bits + ((bits >> 31) ? UINT32_MAX : 1u); /* a negative float steps toward zero */
    return (bits & 0x7FFFFFFFu) ? up : 1u;
}

/* The next float above x (x itself for +infinity and NaN): what nextafterf(x, INFINITY)
 * returns, as a step of the bit pattern rather than a call into libm (the calls were 5 % of
 * rv_update_world's instructions). */
static inline float rvi_next_up(float x)
{
    if (!(x < INFINITY))
        return x;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = rvi_step_up_bits(bits);
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The smallest float not below d (d not NaN; above FLT_MAX: +infinity). Rounding to
 * nearest lands below d about half the time, so the step up is computed either way and
 * selected by a mask (compilers turned a ternary back into a branch). Only a finite float
 * or -infinity can lie below d, so the step is rvi_next_up's. */
static inline float rvi_float_up(double d)
{
    float f = (float)d;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t below = 0u - (uint32_t)((double)f < d); /* all ones when f is below d */
    bits = (rvi_step_up_bits(bits) & below) | (bits & ~below);
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
