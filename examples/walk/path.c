#include "path.h"

#include "brush.h"

#include <math.h>
#include <stdlib.h>

const float rvw_player_box_min[3] = { -RVW_PLAYER_HALF_WIDTH, -RVW_PLAYER_BELOW, -RVW_PLAYER_HALF_WIDTH };
const float rvw_player_box_max[3] = { RVW_PLAYER_HALF_WIDTH, RVW_PLAYER_ABOVE, RVW_PLAYER_HALF_WIDTH };

/* The map being pathed and the work spent on it (see RVW_PATH_WORK_BUDGET). */
typedef struct pather {
    const rvw_bsp_map *map;
    uint64_t work, budget;
} pather;

static bool over_budget(const pather *p)
{
    return p->work > p->budget;
}

/* Cyrus–Beck clip of the box's origin moving a -> b against one brush grown by the box, its
 * planes moved inwards by inset (negative: outwards). Returns the fraction at which the
 * origin enters the grown brush, or 2 when it never does. */
static double sweep_brush(const rvw_bsp_map *map, const rvw_bsp_brush *brush, const double a[3],
                          const double b[3], double inset)
{
    double t0 = 0, t1 = 1;
    for (uint32_t i = 0; i < brush->plane_count; i++) {
        const float *pl = map->planes + (size_t)(brush->first_plane + i) * 4;
        double d = rvw_brush_expanded_distance(pl, rvw_player_box_min, rvw_player_box_max) - inset;
        double da = pl[0] * a[0] + pl[1] * a[1] + pl[2] * a[2] - d;
        double db = pl[0] * b[0] + pl[1] * b[1] + pl[2] * b[2] - d;
        if (da >= 0 && db >= 0)
            return 2;                /* wholly outside this side */
        if (da < 0 && db < 0)
            continue;                /* wholly inside this side */
        double t = da / (da - db);
        if (da >= 0) {
            if (t > t0)
                t0 = t;              /* entering */
        } else if (t < t1) {
            t1 = t;                  /* leaving */
        }
        if (t0 >= t1)
            return 2;
    }
    return t0;
}

/* The first fraction of a -> b at which the box enters a brush (planes moved in by inset),
 * or 1 when it enters none. */
static double sweep(pather *p, const float from[3], const float to[3], double inset)
{
    const rvw_bsp_map *map = p->map;
    double a[3] = { from[0], from[1], from[2] }, b[3] = { to[0], to[1], to[2] };
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = fminf(from[k], to[k]) + rvw_player_box_min[k] - 1;
        hi[k] = fmaxf(from[k], to[k]) + rvw_player_box_max[k] + 1;
    }
    double first = 1;
    for (uint32_t i = 0; i < map->brush_count; i++) {
        const rvw_bsp_brush *brush = &map->brushes[i];
        /* out of budget, everything is blocked: the caller stops at its next check */
        if (++p->work > p->budget)
            return 0;
        bool apart = false;
        for (int k = 0; k < 3; k++)
            apart |= hi[k] < brush->bounds.min[k] || lo[k] > brush->bounds.max[k];
        if (apart)
            continue;
        p->work += brush->plane_count;
        double t = sweep_brush(map, brush, a, b, inset);
        if (t < first)
            first = t;
    }
    return first;
}

static pather unbounded(const rvw_bsp_map *map)
{
    return (pather){ map, 0, UINT64_MAX };
}

double rvw_path_sweep(const rvw_bsp_map *map, const float from[3], const float to[3])
{
    pather p = unbounded(map);
    return sweep(&p, from, to, RVW_PATH_TOLERANCE);
}

static bool box_blocked(pather *p, const float origin[3])
{
    return sweep(p, origin, origin, RVW_PATH_TOLERANCE) < 1;
}

bool rvw_path_box_blocked(const rvw_bsp_map *map, const float origin[3])
{
    pather p = unbounded(map);
    return box_blocked(&p, origin);
}

/* The eye of a box at origin stays inside the map: within the bounds of its brushes (the
 * tree sends a point far outside them to whatever leaf its planes lead to, a cluster's
 * too), and in a leaf of some cluster, not in the void around a sealed map (cluster -1),
 * when the map has a PVS to tell. */
static bool eye_in_map(pather *p, const float origin[3])
{
    const rvw_bsp_map *map = p->map;
    float eye[3] = { origin[0], origin[1] + RVW_PATH_EYE_HEIGHT, origin[2] };
    for (int a = 0; a < 3; a++)
        if (!(eye[a] >= map->extent.min[a] && eye[a] <= map->extent.max[a]))
            return false;
    return !map->pvs.valid || rvw_bsp_pvs_cluster(&map->pvs, eye, &p->work) >= 0;
}

static bool can_stand(pather *p, const float origin[3])
{
    return !box_blocked(p, origin) && eye_in_map(p, origin);
}

typedef struct offset {
    float d[3];
    float cost;
    uint32_t order;     /* ties go to the one generated first: the same path on every libc */
} offset;

static int compare_offsets(const void *a, const void *b)
{
    const offset *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

enum { RING_DIRECTIONS = 16 };
static const float ring_radii[] = { 2, 4, 8, 12, 16, 24, 32 };
/* Sideways moves are tried at these lifts only: an item sunk into a floor needs its exact
 * lift, a point beside a wall rarely a lift at all, and every try tests the nearby brushes. */
static const float ring_lifts[] = { 0, 2, 4, 8, 12, 16, 24, 32, 40 };

/* The moves tried to free a box, nearest first: up in whole units to RVW_PATH_SEARCH_UP,
 * sideways on rings up to RVW_PATH_SEARCH_SIDE, and both. NULL when memory ran out. */
static offset *search_offsets(uint32_t *count)
{
    uint32_t lifts = (uint32_t)RVW_PATH_SEARCH_UP + 1;
    uint32_t rings = sizeof ring_radii / sizeof ring_radii[0];
    uint32_t ring_heights = sizeof ring_lifts / sizeof ring_lifts[0];
    offset *o = malloc(((size_t)lifts + (size_t)ring_heights * rings * RING_DIRECTIONS) * sizeof *o);
    if (!o)
        return NULL;
    uint32_t n = 0;
    for (uint32_t up = 0; up < lifts; up++) {
        o[n] = (offset){ { 0, (float)up, 0 }, (float)up, n };
        n++;
    }
    for (uint32_t h = 0; h < ring_heights && ring_lifts[h] <= RVW_PATH_SEARCH_UP; h++)
        for (uint32_t r = 0; r < rings && ring_radii[r] <= RVW_PATH_SEARCH_SIDE; r++)
            for (int k = 0; k < RING_DIRECTIONS; k++) {
                float angle = 6.2831853f * (float)k / RING_DIRECTIONS, up = ring_lifts[h];
                float x = ring_radii[r] * cosf(angle), z = ring_radii[r] * sinf(angle);
                o[n] = (offset){ { x, up, z }, sqrtf(ring_radii[r] * ring_radii[r] + up * up), n };
                n++;
            }
    qsort(o, n, sizeof *o, compare_offsets);
    *count = n;
    return o;
}

/* Settles a free box on the floor below it: at most RVW_PATH_MAX_DROP units down, leaving
 * RVW_PATH_SKIN of air; stays where it is when no floor is that near. */
static void settle(pather *p, float origin[3])
{
    /* The sweep stops where the box is RVW_PATH_TOLERANCE deep in the floor, so the box
     * touched it that much higher. (Moving every plane out by the skin instead would stop a
     * box that touches a wall beside it before it fell at all.) */
    float below[3] = { origin[0], origin[1] - RVW_PATH_MAX_DROP, origin[2] };
    double t = sweep(p, origin, below, RVW_PATH_TOLERANCE);
    if (t >= 1)
        return;
    double drop = RVW_PATH_MAX_DROP * t - RVW_PATH_TOLERANCE - RVW_PATH_SKIN;
    float at[3] = { origin[0], (float)(origin[1] - drop), origin[2] };
    if (drop > 0 && can_stand(p, at))
        origin[1] = at[1];
}

static bool place(pather *pa, const rvw_bsp_point *p, float origin[3], float *moved)
{
    float start[3] = { p->origin[0], p->origin[1] + (p->spawn ? RVW_PATH_SPAWN_LIFT : 0), p->origin[2] };
    *moved = 0;
    bool found = can_stand(pa, start);
    if (found) {
        for (int k = 0; k < 3; k++)
            origin[k] = start[k];
    } else {
        uint32_t n;
        offset *o = search_offsets(&n);
        for (uint32_t i = 0; o && i < n && !found && !over_budget(pa); i++) {
            float at[3] = { start[0] + o[i].d[0], start[1] + o[i].d[1], start[2] + o[i].d[2] };
            if (can_stand(pa, at)) {
                for (int k = 0; k < 3; k++)
                    origin[k] = at[k];
                *moved = o[i].cost;
                found = true;
            }
        }
        free(o);
    }
    if (found)
        settle(pa, origin);
    return found;
}

bool rvw_path_place(const rvw_bsp_map *map, const rvw_bsp_point *p, float origin[3], float *moved)
{
    pather pa = unbounded(map);
    return place(&pa, p, origin, moved);
}

/* A leg the box can take in a straight line: free of brushes, and the eye inside the map
 * all the way. */
static bool leg_free(pather *p, const float a[3], const float b[3])
{
    float eye_a[3] = { a[0], a[1] + RVW_PATH_EYE_HEIGHT, a[2] };
    float eye_b[3] = { b[0], b[1] + RVW_PATH_EYE_HEIGHT, b[2] };
    return sweep(p, a, b, RVW_PATH_TOLERANCE) == 1 &&
           rvw_bsp_pvs_segment_in_clusters(&p->map->pvs, eye_a, eye_b, &p->work);
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

/* One frame with the eye above the box's origin. */
static bool emit(rvw_level *level, const float origin[3], const float forward[3], bool cut)
{
    rvw_camera c = { { origin[0], origin[1] + RVW_PATH_EYE_HEIGHT, origin[2] },
                     { forward[0], forward[1], forward[2] }, cut };
    return rvw_level_add_camera(level, &c);
}

/* The frames strictly between a and b (the box's origins), facing along the way; with
 * with_end, b's frame too. */
static bool walk(rvw_level *level, const float a[3], const float b[3], float forward[3], bool with_end)
{
    float d[3] = { b[0] - a[0], b[1] - a[1], b[2] - a[2] };
    facing(d, forward);
    float length = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    uint32_t steps = (uint32_t)ceilf(length / RVW_PATH_SPEED);
    for (uint32_t s = 1; s < steps + with_end && level->frame_count < RVW_PATH_MAX_FRAMES; s++) {
        float t = (float)s / (float)steps, at[3];
        for (int k = 0; k < 3; k++)
            at[k] = s == steps ? b[k] : a[k] + d[k] * t;
        if (!emit(level, at, forward, false))
            return false;
    }
    return true;
}

/* A waypoint for a blocked leg a -> b: above or beside its middle, or false. */
static bool detour(pather *p, const float a[3], const float b[3], float via[3])
{
    float d[3] = { b[0] - a[0], b[1] - a[1], b[2] - a[2] };
    float h = sqrtf(d[0] * d[0] + d[2] * d[2]);
    float side[3] = { h > 1e-3f ? -d[2] / h : 1, 0, h > 1e-3f ? d[0] / h : 0 };
    /* {sideways, up}: over a step or a railing first, then around a pillar */
    static const float tries[][2] = {
        { 0, 32 }, { 0, 64 }, { 48, 0 }, { -48, 0 }, { 96, 0 }, { -96, 0 },
        { 48, 48 }, { -48, 48 }, { 0, 128 },
    };
    for (size_t k = 0; k < sizeof tries / sizeof tries[0]; k++) {
        for (int c = 0; c < 3; c++)
            via[c] = 0.5f * (a[c] + b[c]) + side[c] * tries[k][0];
        via[1] += tries[k][1];
        if (can_stand(p, via) && leg_free(p, a, via) && leg_free(p, via, b))
            return true;
    }
    return false;
}

static bool turn_in_place(rvw_level *level, pather *p)
{
    rvw_bsp_point centre = { .spawn = false };
    for (int k = 0; k < 3; k++)
        centre.origin[k] = 0.5f * (level->bounds.min[k] + level->bounds.max[k]);
    float origin[3] = { centre.origin[0], centre.origin[1], centre.origin[2] }, moved;
    place(p, &centre, origin, &moved); /* stays at the centre when nothing is free */
    for (int f = 0; f < 120; f++) {
        float fwd[3];
        yaw_forward(6.2831853f * (float)f / 120.0f, fwd);
        if (!emit(level, origin, fwd, false))
            return false;
    }
    return true;
}

rvw_path_result rvw_path_build(rvw_level *level, const rvw_bsp_map *map, rvw_path_stats *stats)
{
    return rvw_path_build_within(level, map, RVW_PATH_WORK_BUDGET, stats);
}

rvw_path_result rvw_path_build_within(rvw_level *level, const rvw_bsp_map *map, uint64_t budget,
                                      rvw_path_stats *stats)
{
    *stats = (rvw_path_stats){ .points = map->point_count };
    pather pa = { map, 0, budget };
    /* where a player stands at each point; dropped points leave the path */
    float (*origins)[3] = malloc((map->point_count ? map->point_count : 1) * sizeof *origins);
    uint32_t *which = malloc((map->point_count ? map->point_count : 1) * sizeof *which);
    if (!origins || !which) {
        free(origins);
        free(which);
        return RVW_PATH_NO_MEMORY;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < map->point_count && !over_budget(&pa); i++) {
        float moved;
        if (!place(&pa, &map->points[i], origins[n], &moved)) {
            stats->dropped++;
            continue;
        }
        if (moved > 0) {
            stats->moved++;
            if (moved > stats->max_move)
                stats->max_move = moved;
        }
        which[n++] = i;
    }
    bool ok = true;
    if (n == 0 && !over_budget(&pa))
        ok = turn_in_place(level, &pa);
    float forward[3] = { 1, 0, 0 };
    bool cut = false;
    for (uint32_t i = 0; ok && i < n && level->frame_count < RVW_PATH_MAX_FRAMES && !over_budget(&pa); i++) {
        const rvw_bsp_point *p = &map->points[which[i]];
        const float *at = origins[i];
        bool has_next = i + 1 < n;
        float via[3];
        int route = 0; /* 0 cut, 1 straight, 2 through via */
        if (has_next) {
            const float *next = origins[i + 1];
            route = leg_free(&pa, at, next) ? 1 : detour(&pa, at, next, via) ? 2 : 0;
            float d[3];
            for (int k = 0; k < 3; k++)
                d[k] = (route == 2 ? via[k] : next[k]) - at[k];
            facing(d, forward);
        }
        if (p->spawn) {
            float stand[3] = { forward[0], forward[1], forward[2] };
            if (p->has_yaw)
                yaw_forward(p->yaw, stand);
            for (int f = 0; ok && f < RVW_PATH_STAND_FRAMES; f++)
                ok = emit(level, at, stand, cut && f == 0);
        } else {
            ok = emit(level, at, forward, cut);
        }
        cut = false;
        if (!ok || !has_next)
            break;
        const float *next = origins[i + 1];
        if (route == 1) {
            stats->legs++;
            ok = walk(level, at, next, forward, false);
        } else if (route == 2) {
            stats->detours++;
            ok = walk(level, at, via, forward, true) && walk(level, via, next, forward, false);
        } else {
            stats->jumps++;
            cut = true;
        }
    }
    free(origins);
    free(which);
    stats->work = pa.work;
    if (!ok)
        return RVW_PATH_NO_MEMORY;
    return over_budget(&pa) ? RVW_PATH_OVER_BUDGET : RVW_PATH_BUILT;
}
