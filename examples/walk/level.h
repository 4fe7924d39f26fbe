/* rvis-walk: the scene a walk runs on, whichever source made it (the embedded city or a
 * Quake III map). Plain data: triangles, objects over them, a group hierarchy, occluder
 * boxes and the camera path. Y is up; units are the source's (metres for the city, Quake
 * units for maps). Nothing here calls rvis: drive.c turns a level into rvis nodes. */
#ifndef RVW_LEVEL_H
#define RVW_LEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rvw_box {
    float min[3], max[3];
} rvw_box;

typedef enum rvw_object_kind {
    RVW_OBJ_SURFACE = 0,   /* a map surface (face, triangle soup or tessellated patch) */
    RVW_OBJ_BUILDING,      /* a city building shell (also an occluder) */
    RVW_OBJ_PROP,          /* street furniture, façade detail: has a LOD ladder */
    RVW_OBJ_PART_ITEM,     /* inside a storey of a partitioned building */
    RVW_OBJ_VEHICLE,       /* moves every frame; fed through the journal */
    RVW_OBJ_TERRAIN,       /* a ground tile, one per terrain page */
    RVW_OBJ_HLOD_PROXY,    /* a district's stand-in, drawn only when its region is not refined */
    RVW_OBJ_KIND_COUNT
} rvw_object_kind;

/* One object: what the oracle draws and rvis culls as one node. */
typedef struct rvw_object {
    uint32_t first_triangle;  /* into rvw_level.triangles */
    uint32_t triangle_count;
    rvw_box bounds;           /* world box of its triangles (kept current for movers) */
    int32_t group;            /* parent group index, -1 = directly under the root */
    uint8_t kind;             /* rvw_object_kind */
    uint8_t ladder;           /* 1 + index into rvw_level.ladders, 0 = none */
    bool oriented;            /* the test box is `box` in the frame `axes`, not `bounds` */
    float axes[3][3];         /* orthonormal, right-handed: world = sum of axes[k] * local[k] */
    rvw_box box;              /* in that frame, enclosing the triangles */
} rvw_object;

typedef enum rvw_group_kind {
    RVW_GROUP_DISTRICT = 0,   /* an HLOD region */
    RVW_GROUP_BLOCK,
    RVW_GROUP_BUILDING,
    RVW_GROUP_PARTITION,      /* a partition group: its direct children are parts */
    RVW_GROUP_PART,           /* one storey of a partitioned building */
} rvw_group_kind;

/* A node without geometry of its own that groups objects (and other groups). */
typedef struct rvw_group {
    int32_t parent;           /* group index, -1 = root; parents come before children */
    uint8_t kind;             /* rvw_group_kind */
    bool deferred;            /* a part activated lazily (partition) */
    int32_t hlod_proxy;       /* district: object index of its stand-in, else -1 */
    float geometric_error;    /* district: HLOD geometric error (world units), else 0 */
    rvw_box bounds;           /* everything below it (computed by rvw_level_finish) */
} rvw_group;

/* A LOD ladder: thresholds in strictly descending radians (docs/lod.md). When the object
 * is smaller than the last threshold, last_is_nothing says the host draws nothing. */
typedef struct rvw_ladder {
    uint32_t count;
    float thresholds[4];
    bool last_is_nothing;
} rvw_ladder;

/* One frame of the camera path: eye and unit forward; up is +Y. cut = the camera jumped
 * here (no straight leg was free of solids). */
typedef struct rvw_camera {
    float eye[3];
    float forward[3];
    bool cut;
} rvw_camera;

/* Occluder candidates: what a map's own geometry offers to hide things, with no
 * precomputed visibility. A host chooses among them by their flags; the walk declares the
 * meshes rvw_level_choose_occluders marks (its opaque drawn surfaces). */

/* One side of a convex candidate: its plane and its shader's flags (Quake's bits). */
typedef struct rvw_convex_side {
    float plane[4];             /* outward unit normal (Y-up) and d: inside is dot(n, p) <= d */
    uint32_t surface_flags;     /* the side's shader: SURF_NODRAW 0x80, SURF_SKY 0x4, ... */
    uint32_t contents;          /* the side's shader's content flags */
} rvw_convex_side;

enum {
    RVW_CONVEX_EXACT_BOX = 1u << 0,   /* six axial sides: the brush is exactly its bounds */
    RVW_CONVEX_NODRAW_SIDE = 1u << 1, /* a side's shader has SURF_NODRAW (the oracle sees
                                         through that side: nothing there draws it) */
    RVW_CONVEX_SKY_SIDE = 1u << 2,    /* a side's shader has SURF_SKY */
    RVW_CONVEX_TRANSLUCENT = 1u << 3, /* the brush's contents are translucent (glass) */
};

/* A solid convex brush of the world: the intersection of its sides' half-spaces, closed and
 * with a volume (the reader drops empty and unbounded plane sets). */
typedef struct rvw_convex {
    uint32_t first_side, side_count;  /* into rvw_level.convex_sides */
    uint32_t contents;                /* the brush's content flags (solid 0x1, ...) */
    uint32_t flags;                   /* RVW_CONVEX_* */
    rvw_box bounds;                   /* exact: the box of its corners */
} rvw_convex;

enum {
    RVW_MESH_PATCH = 1u << 0,    /* a curved patch, tessellated exactly as its object */
    RVW_MESH_OCCLUDER = 1u << 1, /* declared to rvis as an occluder (rvw_level_choose_occluders) */
    RVW_MESH_SOUP = 1u << 2,     /* a triangle soup (a model baked into the map), not a face */
};

/* An opaque drawn surface as an indexed triangle mesh. Its triangles, in order, are exactly
 * those of its object (the same floats, so the oracle draws what the mesh covers); a vertex
 * two neighbouring surfaces share in the file is bit-identical in both meshes. */
typedef struct rvw_mesh {
    uint32_t first_vertex, vertex_count; /* into rvw_level.mesh_positions (3 floats each) */
    uint32_t first_index, index_count;   /* into rvw_level.mesh_indices; each index is below
                                            vertex_count, relative to first_vertex */
    uint32_t object;                     /* the object whose triangles these are */
    uint32_t flags;                      /* RVW_MESH_* */
} rvw_mesh;

struct rvw_city;

typedef struct rvw_level {
    char name[64];              /* "city" or the map's name */
    float *triangles;           /* 9 floats per triangle: three world-space vertices */
    uint32_t triangle_count, triangle_capacity;
    rvw_object *objects;
    uint32_t object_count, object_capacity;
    rvw_group *groups;
    uint32_t group_count, group_capacity;
    rvw_box *occluders;         /* static occluder boxes, world space (the city's buildings;
                                   a map's occluders are its meshes marked RVW_MESH_OCCLUDER) */
    uint32_t occluder_count, occluder_capacity;
    /* occluder candidates (maps only; see above) */
    rvw_convex *convexes;
    uint32_t convex_count, convex_capacity;
    rvw_convex_side *convex_sides;
    uint32_t convex_side_count, convex_side_capacity;
    rvw_mesh *meshes;
    uint32_t mesh_count, mesh_capacity;
    float *mesh_positions;      /* 3 floats per vertex, world space */
    uint32_t mesh_vertex_count, mesh_vertex_capacity;
    uint32_t *mesh_indices;
    uint32_t mesh_index_count, mesh_index_capacity;
    rvw_ladder *ladders;
    uint32_t ladder_count;
    rvw_camera *path;           /* one entry per frame */
    uint32_t frame_count, frame_capacity;
    rvw_box bounds;             /* of every object's vertices */
    /* projection the walk uses: vertical field of view (radians), near and far planes in
     * world units (far is set beyond the scene so nothing is ever cut by it) */
    float fov_y, near_plane, far_plane;
    const struct rvw_city *city; /* the city's dynamic parts, NULL for a map */
} rvw_level;

/* Growth helpers; each returns false when memory ran out (the level stays valid). */
bool rvw_level_add_triangle(rvw_level *level, const float a[3], const float b[3], const float c[3]);
/* Starts an object whose triangles are the ones added from now until the next call;
 * returns its index or -1 when memory ran out. */
int32_t rvw_level_begin_object(rvw_level *level, rvw_object_kind kind, int32_t group);
/* Adds the 12 triangles of a box to the current object. */
bool rvw_level_add_box(rvw_level *level, const rvw_box *box);
/* The 12 triangles of a box, 9 floats each, into out[108]. */
void rvw_box_triangles(const rvw_box *b, float *out);
/* Rewrites the triangles of an object made by one rvw_level_add_box (a mover) and its bounds. */
void rvw_level_write_box(rvw_level *level, uint32_t object, const rvw_box *box);
int32_t rvw_level_add_group(rvw_level *level, rvw_group_kind kind, int32_t parent);
bool rvw_level_add_occluder(rvw_level *level, const rvw_box *box);
bool rvw_level_add_camera(rvw_level *level, const rvw_camera *camera);
/* Adds a convex candidate with copies of its count sides. */
bool rvw_level_add_convex(rvw_level *level, const rvw_convex_side *sides, uint32_t count,
                          uint32_t contents, uint32_t flags, const rvw_box *bounds);
/* Starts a mesh over object's triangles; vertices and triangles added from now until the
 * next call are its own. */
bool rvw_level_begin_mesh(rvw_level *level, uint32_t object, uint32_t flags);
/* Adds a vertex to the current mesh; returns its index in the mesh, or -1 (no memory). */
int64_t rvw_level_add_mesh_vertex(rvw_level *level, const float p[3]);
bool rvw_level_add_mesh_triangle(rvw_level *level, uint32_t a, uint32_t b, uint32_t c);

/* What the occluder candidates hold, for reports. */
typedef struct rvw_candidate_counts {
    uint32_t convexes, exact_boxes, general_convexes;
    uint32_t nodraw_side, sky_side, translucent;  /* convexes with that flag */
    uint32_t meshes, mesh_triangles, patch_meshes, patch_triangles;
} rvw_candidate_counts;

void rvw_level_count_candidates(const rvw_level *level, rvw_candidate_counts *out);

/* Chooses the occluders the walk declares to rvis from a map's candidates, with no
 * precomputed visibility: the planar opaque surfaces (faces; not patches or triangle soups)
 * as open meshes, RVW_MESH_OCCLUDER. They are exactly what the oracle draws, so they can
 * hide nothing it sees (docs/walk.md, "Occluders"). Returns how many it chose. */
uint32_t rvw_level_choose_occluders(rvw_level *level);

/* How many meshes rvw_level_choose_occluders chose, and their triangles. */
void rvw_level_count_occluders(const rvw_level *level, uint32_t *meshes, uint32_t *triangles);

/* Computes object bounds, group bounds (bottom-up) and the level bounds. Call once after
 * building, and rvw_level_object_moved after rewriting an object's triangles. */
void rvw_level_finish(rvw_level *level);
void rvw_level_object_moved(rvw_level *level, uint32_t object);

/* Gives static map objects an oriented test box where it is tighter than their world box
 * (rvw_object.oriented): a slanted face or a rotated detail model. Candidate frames are a
 * triangle's normal with one of its edges; a frame is kept when its box lies inside the
 * world box (it can only hide more) or its surface area is under 0.7 of the world box's
 * (a box poking out of the world box can draw a little more in some views, on the whole
 * far less). Returns how many objects got one. */
uint32_t rvw_level_orient_boxes(rvw_level *level);
/* The 12 triangles of the box rvis tests for o (its oriented box, else its bounds). */
void rvw_object_box_triangles(const rvw_object *o, float out[108]);

/* Frees everything the level owns and zeroes it. */
void rvw_level_free(rvw_level *level);

/* Box helpers. */
void rvw_box_empty(rvw_box *box);
void rvw_box_add_point(rvw_box *box, const float p[3]);
void rvw_box_add_box(rvw_box *box, const rvw_box *other);
bool rvw_box_is_empty(const rvw_box *box);

#endif
