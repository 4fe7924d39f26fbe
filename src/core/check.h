/* Input validation helpers: every public entry point checks host numbers with these. */
#ifndef RVI_CHECK_H
#define RVI_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

static inline bool rvi_finite_n(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* Evaluates an rv_result expression and returns it from the caller when it fails. */
#define RVI_TRY(expr) do { rv_result rvi_try_r_ = (expr); if (rvi_try_r_ != RV_OK) return rvi_try_r_; } while (0)

#endif
