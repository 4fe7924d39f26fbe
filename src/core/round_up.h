/* Rounding toward +infinity when a double becomes a float: a conservative bound (a radius, a
 * stretch) is computed in double and must not shrink when stored. */
#ifndef RVI_ROUND_UP_H
#define RVI_ROUND_UP_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The next float above x (x itself for +infinity and NaN): what nextafterf(x, INFINITY)
 * returns, as a step of the bit pattern rather than a call into libm (the calls were 5 % of
 * rv_update_world's instructions). */
static inline float rvi_next_up(float x)
{
    if (!(x < INFINITY))
        return x;
    if (x == 0.0f)
        return FLT_TRUE_MIN;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits += (bits >> 31) ? UINT32_MAX : 1u; /* a negative float steps toward zero */
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* The smallest float not below d (d not NaN; above FLT_MAX: +infinity). Rounding to
 * nearest lands below d about half the time, so the step up is computed either way and
 * selected, not branched to (rvi_next_up's steps, for the finite floats and -infinity that
 * can lie below d). */
static inline float rvi_float_up(double d)
{
    float f = (float)d;
    uint32_t bits, up;
    memcpy(&bits, &f, sizeof bits);
    up = bits + ((bits >> 31) ? UINT32_MAX : 1u); /* a negative float steps toward zero */
    up = (bits & 0x7FFFFFFFu) ? up : 1u;          /* from a zero: the smallest subnormal */
    uint32_t below = 0u - (uint32_t)((double)f < d); /* all ones when f is below d (a mask,
                                                          which compilers do not turn back into a branch) */
    bits = (up & below) | (bits & ~below);
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
