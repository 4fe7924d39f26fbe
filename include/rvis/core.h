/* rvis/core.h — results, allocator hooks, clip conventions, node handles, version.
 * Every other rvis header includes this one. Part of rvis (MIT licence). */
#ifndef RVIS_CORE_H
#define RVIS_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(_WIN32) && defined(RV_SHARED)
#  if defined(RV_BUILDING_LIBRARY)
#    define RV_API __declspec(dllexport)
#  else
#    define RV_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define RV_API __attribute__((visibility("default")))
#else
#  define RV_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of these headers. rv_version() returns the library's, so a program can tell
 * when the shared library it runs with is not the one it was compiled against. */
#define RV_VERSION_MAJOR 0
#define RV_VERSION_MINOR 2
#define RV_VERSION_PATCH 0
/* One number per version, ordered like the versions: major << 16 | minor << 8 | patch
 * (each piece 0..255), an unsigned int (32 bits wherever rvis builds). RV_VERSION is this
 * header's. No casts, so C++ with -Wold-style-cast takes them too. */
#define RV_MAKE_VERSION(major, minor, patch) \
    ((((major) + 0u) & 0xffu) << 16 | (((minor) + 0u) & 0xffu) << 8 | (((patch) + 0u) & 0xffu))
#define RV_VERSION RV_MAKE_VERSION(RV_VERSION_MAJOR, RV_VERSION_MINOR, RV_VERSION_PATCH)
#define RV_VERSION_MAJOR_OF(version) ((((version) + 0u) >> 16) & 0xffu)
#define RV_VERSION_MINOR_OF(version) ((((version) + 0u) >> 8) & 0xffu)
#define RV_VERSION_PATCH_OF(version) (((version) + 0u) & 0xffu)

/* ======================================================================================
 * core: results, allocator, handles, clip conventions
 * ====================================================================================== */

/* Result of every fallible call. RV_OK is 0; every failure leaves the object unchanged,
 * except where a call's comment says what its failure does instead (a failed
 * rv_occlusion_begin drops the buffer's frame, so a stale view never culls; a failed cull
 * leaves the frame to rv_frame_abort). */
typedef enum rv_result {
    RV_OK = 0,
    RV_ERR_INVALID_ARG,   /* a NULL where one is not allowed, a size <= 0, min > max, ... */
    RV_ERR_NOT_FINITE,    /* a NaN or an infinity where a finite number is required */
    RV_ERR_STALE_HANDLE,  /* a handle whose object is gone, or that belongs to another world
                           * (told by a 16-bit world tag: see rvis/scene.h) */
    RV_ERR_CYCLE,         /* attach would make a node its own ancestor */
    RV_ERR_OUT_OF_MEMORY, /* the allocator returned NULL; state is as before the call
                             (storage a call reserved before the failure may stay reserved,
                             so memory figures can be larger: see each call) */
    RV_ERR_CAPACITY,      /* a fixed limit (handle index space, 32-bit counts) is reached */
    RV_ERR_FROZEN,        /* the object no longer accepts this call (e.g. occluders after the first test) */
    RV_ERR_INVARIANT,     /* rvis detected a broken invariant (e.g. deltas left at publication) */
    RV_ERR_NOT_FOUND,     /* a key or id that is valid in form but unknown */
    RV_ERR_DUPLICATE,     /* the thing already exists (e.g. a Register of a live key+incarnation) */
    RV_ERR_ORDER,         /* thresholds or sequences not in the required order */
    RV_ERR_BAD_STATE,     /* the call is not allowed in the object's current state */
    RV_RESULT_COUNT_
} rv_result;

/* The enum's name as a static string ("RV_OK", "RV_ERR_CYCLE", ...); "RV_ERR_UNKNOWN" for
 * values outside the enum. Never NULL; the string is static and must not be freed. */
RV_API const char *rv_result_string(rv_result result);

/* The version of the library as built, RV_MAKE_VERSION(major, minor, patch); RV_VERSION is
 * the header's. Before 1.0 a program should expect the same major and minor (the patch may
 * differ); RV_VERSION_MAJOR_OF and friends take it apart. Any thread, any time. */
RV_API uint32_t rv_version(void);

/* Host allocator. Every field may be NULL: alloc and free go together, and when either is
 * NULL rvis uses libc's malloc/realloc/free for both (a lone alloc is never called). alloc
 * returns memory aligned for any C type (like malloc) or NULL on failure; realloc may be
 * NULL, in which case rvis uses alloc + copy + free. free(NULL) must be harmless.
 * rvis never calls these from more than one thread for one world at a time. Every block
 * rvis holds comes from these; it calls no libc function that allocates behind them (one
 * thread-local byte aside, whose per-thread storage some platforms' loaders allocate). */
typedef struct rv_allocator {
    void *(*alloc)(size_t size, void *user);
    void *(*realloc)(void *ptr, size_t old_size, size_t new_size, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} rv_allocator;

/* Allocation counters of one world or standalone module object, monotonic since creation.
 * A steady frame leaves allocations and reallocations unchanged. */
typedef struct rv_alloc_stats {
    uint64_t allocations;   /* successful alloc calls (realloc of NULL counts here) */
    uint64_t reallocations; /* successful realloc calls of a live block */
    uint64_t frees;         /* free calls of a live block */
    uint64_t failures;      /* alloc/realloc calls that returned NULL */
    uint64_t bytes_live;    /* bytes currently held */
    uint64_t bytes_peak;    /* largest bytes_live seen */
} rv_alloc_stats;

/* Clip-space depth convention of a projection matrix. {0} is OpenGL: NDC depth in -1..1,
 * near maps to -1. depth_zero_to_one: Direct3D / Vulkan / Metal / WebGPU (0..1).
 * reversed_z: near maps to the far end (1), far to 0 (or -1 with OpenGL depth).
 * An infinite far plane and an orthographic projection are recognised from the matrix. */
typedef struct rv_clip {
    bool depth_zero_to_one;
    bool reversed_z;
} rv_clip;

/* A world: the node hierarchy and every module the frame joins. Opaque. */
typedef struct rv_world rv_world;

/* Handle of a scene node. id 0 is "none". Layout (not a promise to hosts): bits 0..23 slot
 * index, 24..47 generation, 48..63 the owning world's tag. Compare with rv_node_equal or by id. */
typedef struct rv_node {
    uint64_t id;
} rv_node;

/* The "none" node (id 0), for a parent argument or a comparison. C++ has no compound
 * literals, so it gets the equivalent braced temporary. */
#ifdef __cplusplus
#define RV_NODE_NONE (rv_node{0})
#else
#define RV_NODE_NONE ((rv_node){0})
#endif

/* True when a and b name the same node (or both are none). */
static inline bool rv_node_equal(rv_node a, rv_node b) { return a.id == b.id; }

#ifdef __cplusplus
}
#endif

#endif /* RVIS_CORE_H */
