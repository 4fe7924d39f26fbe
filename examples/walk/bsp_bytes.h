/* rvis-walk: the little-endian reads and the Z-up to Y-up turn that the BSP reader's two
 * files (bsp.c, pvs.c) share. Internal to them. */
#ifndef RVW_BSP_BYTES_H
#define RVW_BSP_BYTES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Coordinates beyond this are refused: Quake III's world is +-65536. */
#define RVW_BSP_MAX_COORD 1.0e6f

static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int32_t rd_i32(const uint8_t *p)
{
    uint32_t u = rd_u32(p);
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline float rd_f32(const uint8_t *p)
{
    uint32_t u = rd_u32(p);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* True when [first, first + count) lies inside a lump of total records. */
static inline bool range_ok(int32_t first, int32_t count, uint32_t total)
{
    return first >= 0 && count >= 0 && (uint64_t)first + (uint64_t)count <= total;
}

static inline bool coord_ok(float v)
{
    return isfinite(v) && fabsf(v) <= RVW_BSP_MAX_COORD;
}

/* Quake Z-up to Y-up: (x, y, z) -> (x, z, -y). */
static inline void to_y_up(const float q[3], float out[3])
{
    float x = q[0], y = q[1], z = q[2];
    out[0] = x;
    out[1] = z;
    out[2] = -y;
}

#endif
