#include "path.h"

#include <math.h>

#define SHRINK 1.0f /* units: a segment must enter a brush this deep to count as blocked */

/* Cyrus–Beck clip of a -> b against the brush's half-spaces dot(n, p) <= d - SHRINK. */
static bool segment_enters_brush(const rvw_bsp_map *map, const rvw_bsp_brush *brush,
                                 const float a[3], const float b[3])
{
    for (int k = 0; k < 3; k++) {
        float lo = fminf(a[k], b[k]), hi = fmaxf(a[k], b[k]);
        if (hi < brush->bounds.min[k] || lo > brush->bounds.max[k])
            return false;
    }
    float t0 = 0, t1 = 1;
    for (uint32_t i = 0; i < brush->plane_count; i++) {
        const float *pl = map->planes + (size_t)(brush->first_plane + i) * 4;
        float da = pl[0] * a[0] + pl[1] * a[1] + pl[2] * a[2] - (pl[3] - SHRINK);
        float db = pl[0] * b[0] + pl[1] * b[1] + pl[2] * b[2] - (pl[3] - SHRINK);
        if (da >= 0 && db >= 0)
            return false;            /* wholly outside this side */
        if (da < 0 && db < 0)
            continue;                /* wholly inside this side */
        float t = da / (da - db);
        if (da > 0) {
            if (t > t0)
                t0 = t;              /* entering */
        } else if (t < t1) {
            t1 = t;                  /* leaving */
        }
        if (t0 >= t1)
            return false;
    }
    return true;
}

bool rvw_path_segment_blocked(const rvw_bsp_map *map, const float a[3], const float b[3])
{
    for (uint32_t i = 0; i < map->brush_count; i++)
        if (segment_enters_brush(map, &map->brushes[i], a, b))
            return true;
    return false;
}

/* Unit forward along d: its yaw, and its pitch clamped so a steep leg still looks ahead.
 * A vertical d keeps the previous forward. */
static void facing(const float d[3], float forward[3])
{
    float h = sqrtf(d[0] * d[0] + d[2] * d[2]);
    if (h < 1e-3f)
        return;
    float pitch = atan2f(d[1], h);
    if (pitch > RVW_PATH_MAX_PITCH)
        pitch = RVW_PATH_MAX_PITCH;
    if (pitch < -RVW_PATH_MAX_PITCH)
        pitch = -RVW_PATH_MAX_PITCH;
    forward[0] = cosf(pitch) * d[0] / h;
    forward[1] = sinf(pitch);
    forward[2] = cosf(pitch) * d[2] / h;
}

/* Yaw about +Y in the Y-up frame: Quake yaw 0 faces +X, 90 faces Quake +Y = Y-up -Z. */
static void yaw_forward(float yaw, float forward[3])
{
    forward[0] = cosf(yaw);
    forward[1] = 0;
    forward[2] = -sinf(yaw);
}

static bool emit(rvw_level *level, const float eye[3], const float forward[3], bool cut)
{
    rvw_camera c = { { eye[0], eye[1], eye[2] }, { forward[0], forward[1], forward[2] }, cut };
    return rvw_level_add_camera(level, &c);
}

static bool turn_in_place(rvw_level *level)
{
    float eye[3];
    for (int k = 0; k < 3; k++)
        eye[k] = 0.5f * (level->bounds.min[k] + level->bounds.max[k]);
    for (int f = 0; f < 120; f++) {
        float fwd[3];
        yaw_forward(6.2831853f * (float)f / 120.0f, fwd);
        if (!emit(level, eye, fwd, false))
            return false;
    }
    return true;
}

bool rvw_path_build(rvw_level *level, const rvw_bsp_map *map, rvw_path_stats *stats)
{
    *stats = (rvw_path_stats){0};
    if (map->point_count == 0)
        return turn_in_place(level);
    float forward[3] = { 1, 0, 0 };
    bool cut = false;
    for (uint32_t i = 0; i < map->point_count && level->frame_count < RVW_PATH_MAX_FRAMES; i++) {
        const rvw_bsp_point *p = &map->points[i];
        float eye[3] = { p->origin[0], p->origin[1] + RVW_PATH_EYE_HEIGHT, p->origin[2] };
        float next[3] = { 0, 0, 0 }, d[3] = { 0, 0, 0 };
        bool has_next = i + 1 < map->point_count;
        if (has_next) {
            const rvw_bsp_point *q = &map->points[i + 1];
            next[0] = q->origin[0];
            next[1] = q->origin[1] + RVW_PATH_EYE_HEIGHT;
            next[2] = q->origin[2];
            for (int k = 0; k < 3; k++)
                d[k] = next[k] - eye[k];
            facing(d, forward);
        }
        if (p->spawn) {
            float stand[3] = { forward[0], forward[1], forward[2] };
            if (p->has_yaw)
                yaw_forward(p->yaw, stand);
            for (int f = 0; f < RVW_PATH_STAND_FRAMES; f++)
                if (!emit(level, eye, stand, cut && f == 0))
                    return false;
        } else if (!emit(level, eye, forward, cut)) {
            return false;
        }
        cut = false;
        if (!has_next)
            break;
        float length = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (rvw_path_segment_blocked(map, eye, next)) {
            stats->jumps++;
            cut = true;
            continue;
        }
        stats->legs++;
        uint32_t steps = (uint32_t)ceilf(length / RVW_PATH_SPEED);
        for (uint32_t s = 1; s < steps && level->frame_count < RVW_PATH_MAX_FRAMES; s++) {
            float t = (float)s / (float)steps, at[3];
            for (int k = 0; k < 3; k++)
                at[k] = eye[k] + d[k] * t;
            if (!emit(level, at, forward, false))
                return false;
        }
    }
    return true;
}
