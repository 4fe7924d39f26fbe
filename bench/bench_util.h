/* rvis-bench support: timing, medians, the JSON case record, and the benchmark city
 * (docs/bench-city.md, reproduced exactly; check values verified at start-up). */
#ifndef RVB_UTIL_H
#define RVB_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rvb_ctx {
    bool quick;        /* fewer repetitions, never smaller cases */
    bool json;
    const char *only;  /* run only cases whose name contains this, or NULL */
    int reps;          /* repetitions per measurement: 7 (3 in --quick) */
    int printed;       /* JSON objects printed so far */
} rvb_ctx;

/* Monotonic time in nanoseconds. */
uint64_t rvb_now_ns(void);
/* The wall clock in nanoseconds whatever rvb_use_cpu_clock says: for work other threads do. */
uint64_t rvb_wall_ns(void);
/* Makes rvb_now_ns read the calling thread's CPU time instead of the wall clock: on a loaded
 * machine time the process spent preempted is then not counted (cache interference from
 * other processes still is). Single-threaded cases only. */
void rvb_use_cpu_clock(void);
/* Median of n doubles (sorts in place). */
double rvb_median(double *v, int n);
/* The names of rv_frame_view.stage_us's entries, as the reports print them (stage_<name>_us). */
extern const char *const rvb_stage_names[]; /* RV_STAGE_COUNT of them */
/* True when the case should run (honours --only); prints progress to stderr. */
bool rvb_begin_case(rvb_ctx *ctx, const char *name);
/* Prints one case: {"case", "unit", "ours", "baseline", "speedup", extra...}. baseline < 0
 * prints null (no baseline). extra_json is "" or ", \"key\": value, ..." (already formatted). */
void rvb_report(rvb_ctx *ctx, const char *name, const char *unit, double ours, double baseline,
                const char *extra_json);

/* splitmix64 and the city's U(a, b) = fmaf(b - a, u01, a). */
typedef struct rvb_rng { uint64_t s; } rvb_rng;
uint64_t rvb_next(rvb_rng *r);
float rvb_uniform(rvb_rng *r, float a, float b);

/* The benchmark city. */
#define RVB_CITY_BUILDINGS 1024
#define RVB_CITY_OBJECTS 100000
typedef struct rvb_box { float min[3], max[3]; } rvb_box;
typedef struct rvb_city {
    rvb_box buildings[RVB_CITY_BUILDINGS]; /* index j * 32 + i */
    rvb_box *objects;                      /* RVB_CITY_OBJECTS, malloc'd */
} rvb_city;
/* Generates the city; returns false (with a message on stderr) if a check value differs. */
bool rvb_city_generate(rvb_city *city);
void rvb_city_free(rvb_city *city);
/* Camera of frame f of F: eye and column-major view-projection (OpenGL clip, fov 60°,
 * aspect 16:9, near 0.1, far 2000). */
void rvb_city_camera(int f, int frames, float eye[3], float view_projection[16]);

#endif
