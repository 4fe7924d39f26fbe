/* rvis-walk and rvis-view: the command-line value parsers both tools share. Values are
 * digits only: no blanks, no sign, nothing after them, nothing above UINT32_MAX (strtoul
 * and sscanf("%u") take all of those, and wrap a negative or a too-large number). */
#ifndef RVW_ARGS_H
#define RVW_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A decimal integer >= min, digits only, into *out. */
static inline bool rvw_parse_u32(const char *s, uint32_t *out, uint32_t min)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!(s[0] >= '0' && s[0] <= '9') || errno || end == s || *end || v > UINT32_MAX || v < min)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* "WxH": two such integers split at the first 'x', each within [min, max]. */
static inline bool rvw_parse_size(const char *s, uint32_t min, uint32_t max, uint32_t *w, uint32_t *h)
{
    const char *x = strchr(s, 'x');
    char width[16];
    if (!x || (size_t)(x - s) >= sizeof width)
        return false;
    memcpy(width, s, (size_t)(x - s));
    width[x - s] = '\0';
    uint32_t a, b;
    if (!rvw_parse_u32(width, &a, min) || !rvw_parse_u32(x + 1, &b, min) || a > max || b > max)
        return false;
    *w = a;
    *h = b;
    return true;
}

/* True when an option's value is itself a long option ("--map --quiet"): the value was
 * left out, and taking the next option as it would hide the mistake. */
static inline bool rvw_value_is_option(const char *v)
{
    return v && v[0] == '-' && v[1] == '-';
}

#endif
