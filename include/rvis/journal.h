/* rvis/journal.h — The render-projection delta journal and the render scene it feeds.
 * Part of rvis (MIT licence); include <rvis.h> for everything, or this header alone. */
#ifndef RVIS_JOURNAL_H
#define RVIS_JOURNAL_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Render-projection delta journal and the render scene it feeds (docs/design.md §7).
 *
 * The host's world stays the authority; rvis keeps a derived, disposable *render
 * projection* of it. The host's update thread appends deltas to an rv_journal; at the
 * update-to-render boundary rv_render_scene_apply drains the journal fully into an
 * rv_render_scene, which keeps a projection table and incremental indices (outdoor static,
 * per-cell static, dynamic, translucent, selectable, light candidate, dirty).
 *
 * Identity: a projection is named by the host's 64-bit source key and an owner
 * incarnation (a larger incarnation is newer). Every delta also carries the scene
 * generation it was made for; a ClearGeneration delta moves the scene to a newer
 * generation and drops every projection. Sequence numbers are assigned by the journal on
 * append (1, 2, 3, ...) and checked by the scene (a repeated or backwards sequence is
 * rejected), which is what makes replaying a recorded journal or merging streams safe.
 * docs/journal.md is the host's guide. */

/* Kind of a delta. Structural edges (Register, Rebucket, Unregister, ClearGeneration) keep
 * their exact order and never coalesce; the three updates each change one channel. */
typedef enum rv_delta_kind {
    RV_DELTA_NONE = 0,
    RV_DELTA_REGISTER,          /* a full projection: every channel */
    RV_DELTA_UPDATE_TRANSFORM,  /* channel transform: rv_projection_transform */
    RV_DELTA_UPDATE_APPEARANCE, /* channel appearance: rv_projection_appearance */
    RV_DELTA_UPDATE_FLAGS,      /* channel flags: RV_PROJECTION_* bits */
    RV_DELTA_REBUCKET,          /* channel bucket: rv_projection_bucket (class, cell, parent) */
    RV_DELTA_UNREGISTER,        /* no payload */
    RV_DELTA_CLEAR_GENERATION,  /* no payload; generation is the new scene generation */
    RV_DELTA_KIND_COUNT_
} rv_delta_kind;

/* Spatial class of a projection; it decides which class index holds it. */
typedef enum rv_projection_class {
    RV_PROJECTION_CLASS_NONE = 0,    /* invalid in a delta */
    RV_PROJECTION_OUTDOOR_STATIC,    /* static outdoors: the outdoor-static index */
    RV_PROJECTION_CELL_STATIC,       /* static inside a cell: that cell's bucket */
    RV_PROJECTION_DYNAMIC,           /* moving root (live object, animated static): the dynamic index */
    RV_PROJECTION_EQUIPPED_CHILD,    /* attached to its parent projection: the dynamic index */
    RV_PROJECTION_CLASS_COUNT_
} rv_projection_class;

/* Projection flag bits (channel flags). Other bits are RV_ERR_INVALID_ARG. */
enum {
    RV_PROJECTION_HIDDEN = 1u << 0,          /* never drawn (its node gets the hidden flag), nor
                                                is anything under its node: its equipped
                                                children are pruned with it */
    RV_PROJECTION_TRANSLUCENT = 1u << 1,     /* the translucent index; drawn far to near */
    RV_PROJECTION_SELECTABLE = 1u << 2,      /* the selectable index (picking) */
    RV_PROJECTION_LIGHT_CANDIDATE = 1u << 3, /* the light-candidate index */
    RV_PROJECTION_FLAGS_ALL = 0xFu
};

/* Space of a projection's bounding sphere. */
typedef enum rv_bounds_space {
    RV_BOUNDS_LOCAL = 0, /* in the projection's own space: transformed by its transform */
    RV_BOUNDS_WORLD = 1  /* in the frame the transform is expressed in (the world, or the
                            parent projection's space for an equipped child) */
} rv_bounds_space;

/* Channel transform. position (world units), rotation quaternion (x, y, z, w; any nonzero
 * length, rvis normalises it where it builds a matrix), scale (factors; zero allowed with
 * local bounds) — the same decomposition as a scene node. The frame is the world, except
 * for an equipped child: its transform is relative to its parent projection (the
 * attachment transform), so it moves with the parent. bounds: sphere centre x, y, z and
 * radius >= 0 in bounds_space. With RV_BOUNDS_WORLD every scale component must be a normal
 * (nonzero, not subnormal) number and the sphere mapped back into local space (centre through the inverse transform,
 * radius divided by the smallest |scale|, so that the local sphere holds the whole preimage
 * of the host's sphere whatever the parent does) must fit in floats: a radius of 1000
 * under a scale of 1e-36 on any axis, say, is RV_ERR_INVALID_ARG. Under a non-uniform scale the
 * node's sphere is therefore looser than the host's by largest / smallest scale. Every
 * number must be finite. A rotation with no normal component (each zero or subnormal) is
 * refused as zero, a negative subnormal radius as negative: the checks read the numbers'
 * bits, so the verdict is the same whether or not the host flushes subnormals to zero
 * (DAZ/FTZ), and an append raises no floating-point exception. */
typedef struct rv_projection_transform {
    float position[3];
    float rotation[4];
    float scale[3];
    float bounds[4];
    rv_bounds_space bounds_space;
} rv_projection_transform;

/* Channel appearance: the host's 64-bit ids, never interpreted by rvis. */
typedef struct rv_projection_appearance {
    uint64_t mesh;             /* mesh set / setup id */
    uint64_t material_variant; /* palette, texture replacement or material variant id */
} rv_projection_appearance;

/* Channel bucket: where a projection lives spatially. cell: the host's spatial bucket id
 * (a cell, a landblock), kept for every class and indexed for RV_PROJECTION_CELL_STATIC.
 * parent_key: the source key of the parent projection for RV_PROJECTION_EQUIPPED_CHILD
 * (never the child's own key); it must be 0 for every other class. */
typedef struct rv_projection_bucket {
    rv_projection_class projection_class;
    uint64_t cell;
    uint64_t parent_key;
} rv_projection_bucket;

/* A full projection: every channel (the payload of a Register). */
typedef struct rv_projection {
    rv_projection_transform transform;
    rv_projection_appearance appearance;
    rv_projection_bucket bucket;
    uint32_t flags; /* RV_PROJECTION_* bits */
} rv_projection;

/* One delta as the journal stores it and a recording holds it. Only the channel the kind
 * names is meaningful in projection; the journal stores every other field as zero, so two
 * recordings of the same appends compare equal byte for byte. For ClearGeneration, key and
 * incarnation are 0 and generation is the generation the scene moves to. */
typedef struct rv_delta {
    uint64_t sequence;     /* assigned by the journal on append: 1, 2, 3, ... */
    uint64_t key;          /* the projection's source key */
    uint32_t generation;   /* scene generation the delta was made for */
    uint32_t incarnation;  /* exact owner incarnation */
    rv_delta_kind kind;
    rv_projection projection;
} rv_delta;

/* ---- journal ---- */

/* A delta journal: an ordered buffer of deltas with coalescing. Opaque; standalone (its own
 * allocator). Owned by one thread: see rv_journal_claim_thread. */
typedef struct rv_journal rv_journal;

typedef struct rv_journal_desc {
    rv_allocator allocator;
    uint32_t initial_capacity; /* deltas held before the buffer grows, rounded up to a power
                                  of two (at least 8); 0 = default 1024 */
    bool keep_every_update;    /* true: never coalesce (every update keeps its own entry) */
    uint32_t coalescing_keys;  /* keys a tick remembers for coalescing (a direct-mapped table,
                                  rounded up to a power of two, <= 2^24, 34 bytes a key,
                                  allocated at creation: 4096 take 136 KiB, 2^24 take
                                  544 MiB); 0 = default 4096. A key pushed out by another
                                  just gets a new entry. */
} rv_journal_desc;

/* Journal counters since creation. */
typedef struct rv_journal_stats {
    uint64_t appended;      /* deltas accepted by an append call (coalesced ones included) */
    uint64_t coalesced;     /* updates merged into an earlier entry of the same channel */
    uint64_t drained;       /* entries handed to a scene */
    uint64_t ticks;         /* completed drains */
    uint64_t next_sequence; /* the sequence the next entry gets */
    uint32_t pending;       /* entries not yet drained */
} rv_journal_stats;

/* Memory held by a journal, in bytes (capacity, not use). */
typedef struct rv_journal_memory {
    uint64_t buffer_bytes;     /* the delta buffer, and the list of its cell-static targets a
                                  drain reserves for (4 bytes each) */
    uint64_t coalescing_bytes; /* the per-tick (key -> entry) table coalescing uses, and its
                                  tags */
    uint64_t total_bytes;      /* both plus the journal object */
} rv_journal_memory;

/* Creates a journal owned by the calling thread. desc may be NULL (defaults).
 * *out receives it, owned by the caller until rv_journal_destroy.
 * Errors: RV_ERR_INVALID_ARG (out NULL, coalescing_keys above 2^24), RV_ERR_OUT_OF_MEMORY;
 * *out untouched on error. */
RV_API rv_result rv_journal_create(const rv_journal_desc *desc, rv_journal **out);

/* Destroys a journal (NULL is ignored). Must not be called while a scene drains it. */
RV_API void rv_journal_destroy(rv_journal *journal);

/* Makes the calling thread the journal's owner (e.g. after handing the journal to the
 * update thread). Thread rule, exactly: every append and every drain (rv_render_scene_apply)
 * compares the calling thread with the owner recorded at creation or by the last
 * rv_journal_claim_thread and returns RV_ERR_INVARIANT, changing nothing, when they differ.
 * The check is always on: with GCC or Clang it compares the address of a thread-local object
 * (distinct among live threads, as a pthread_t is; no call), on Windows GetCurrentThreadId,
 * elsewhere pthread_self. Read-only calls
 * (rv_journal_pending, stats, memory) are not checked. claim_thread itself is not checked:
 * the host must ensure no other thread uses the journal meanwhile.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_BAD_STATE (a drain is running). */
RV_API rv_result rv_journal_claim_thread(rv_journal *journal);

/* Appends a Register of a full projection for (key, incarnation) made for scene
 * generation. *out_sequence (may be NULL) receives the entry's sequence.
 * Errors (journal unchanged): RV_ERR_INVALID_ARG (NULL journal or projection, a class,
 * flag, bounds space or parent key out of range, a zero quaternion, a negative radius, a
 * zero scale with world bounds), RV_ERR_NOT_FINITE, RV_ERR_INVARIANT (another thread),
 * RV_ERR_CAPACITY (2^32 - 1 entries pending), RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_journal_register(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                     const rv_projection *projection, uint64_t *out_sequence);

/* Appends an update of one channel of (key, incarnation). When the current tick already
 * holds an undrained update of the same channel for the same key, incarnation and
 * generation, with no structural edge of that key (and no ClearGeneration) after it, the
 * new payload replaces that entry's (which keeps its place and sequence; *out_sequence
 * receives it) and stats.coalesced counts it — applying the tick gives the same scene as
 * applying every update in order. Merging is best effort: the journal remembers the latest
 * update of up to desc.coalescing_keys keys a tick (more keys simply get more entries).
 * Errors as rv_journal_register (NULL payload: RV_ERR_INVALID_ARG). */
RV_API rv_result rv_journal_update_transform(rv_journal *journal, uint32_t generation, uint64_t key,
                                             uint32_t incarnation, const rv_projection_transform *transform,
                                             uint64_t *out_sequence);
/* Appends an UpdateAppearance of (key, incarnation): mesh and material variant ids.
 * Coalescing, sequence and errors as rv_journal_update_transform. */
RV_API rv_result rv_journal_update_appearance(rv_journal *journal, uint32_t generation, uint64_t key,
                                              uint32_t incarnation, const rv_projection_appearance *appearance,
                                              uint64_t *out_sequence);
/* Appends an UpdateFlags of (key, incarnation): RV_PROJECTION_* bits. Coalescing, sequence
 * and errors as rv_journal_update_transform. */
RV_API rv_result rv_journal_update_flags(rv_journal *journal, uint32_t generation, uint64_t key,
                                         uint32_t incarnation, uint32_t flags, uint64_t *out_sequence);

/* Appends a Rebucket (a structural edge): the projection moves to another class, cell or
 * parent without being recreated. Errors as rv_journal_register. */
RV_API rv_result rv_journal_rebucket(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                     const rv_projection_bucket *bucket, uint64_t *out_sequence);

/* Appends an Unregister of (key, incarnation); it never removes another incarnation.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_INVARIANT, RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_journal_unregister(rv_journal *journal, uint32_t generation, uint64_t key, uint32_t incarnation,
                                       uint64_t *out_sequence);

/* Appends a ClearGeneration: the scene drops every projection and moves to new_generation
 * (which must be newer than the scene's when it is applied). Errors as rv_journal_unregister. */
RV_API rv_result rv_journal_clear_generation(rv_journal *journal, uint32_t new_generation, uint64_t *out_sequence);

/* Appends a delta given whole (delta->sequence is ignored: the journal assigns it; fields
 * outside the kind's channel are ignored and stored as zero). The same rules and errors as
 * the kind's own function; an unknown kind is RV_ERR_INVALID_ARG. delta may be an entry of
 * this journal's rv_journal_pending (it is copied before the buffer can move). */
RV_API rv_result rv_journal_append(rv_journal *journal, const rv_delta *delta, uint64_t *out_sequence);

/* The undrained entries in sequence order, *out_count of them (out_count may be NULL when
 * only the pointer is wanted). Borrowed: valid until the next append or drain. Copy them to
 * record the journal; replay with rv_render_scene_apply_deltas. NULL journal: NULL, 0. */
RV_API const rv_delta *rv_journal_pending(const rv_journal *journal, uint32_t *out_count);

/* Counters (zeroes for NULL). */
RV_API rv_journal_stats rv_journal_get_stats(const rv_journal *journal);
/* Bytes held (zeroes for NULL). */
RV_API rv_journal_memory rv_journal_get_memory(const rv_journal *journal);
/* Allocation counters of the journal's allocator use (zeroes for NULL). */
RV_API rv_alloc_stats rv_journal_alloc_stats(const rv_journal *journal);

/* ---- render scene ---- */

/* The projection table and its indices. Opaque; standalone (its own allocator), or bound
 * to a world, where every live projection is backed by a scene node. That node belongs to
 * the scene: if the host destroys it anyway (rv_node_destroy_subtree; rv_node_destroy_reroot
 * of a body with equipped children is refused), the projection lives on in the table (its
 * updates still apply) but is never drawn again until it is registered anew. */
typedef struct rv_render_scene rv_render_scene;

/* What happened to one delta during a drain or replay. */
typedef enum rv_delta_outcome {
    RV_DELTA_APPLIED = 0,
    RV_DELTA_REJECTED_SEQUENCE,          /* sequence not above the last one the scene took */
    RV_DELTA_REJECTED_OLDER_GENERATION,  /* generation below the scene's (a ClearGeneration
                                            not above it counts here too) */
    RV_DELTA_REJECTED_NEWER_GENERATION,  /* generation above the scene's (no ClearGeneration yet) */
    RV_DELTA_REJECTED_STALE_INCARNATION, /* the key lives under a newer incarnation */
    RV_DELTA_REJECTED_UNKNOWN_KEY,       /* no live projection with this key and incarnation */
    RV_DELTA_REJECTED_DUPLICATE,         /* Register of the live (key, incarnation) */
    RV_DELTA_REJECTED_INVALID,           /* malformed (replayed arrays only; appends validate) */
    RV_DELTA_OUTCOME_COUNT_
} rv_delta_outcome;

/* Called by the scene after each delta it takes, in sequence order, with a copy of the
 * delta (valid for the call) and its outcome. It may append to the journal being drained:
 * those deltas get later sequences and are drained by the same apply. It may read the
 * scene, but apply, apply_deltas and publish answer RV_ERR_BAD_STATE from inside it. One
 * lag: a node left a root because its equipped parents looped (a host error) is attached
 * when the batch in which the loop breaks ends, not at the breaking delta. */
typedef void (*rv_delta_observer)(const rv_delta *delta, rv_delta_outcome outcome, void *user);

typedef struct rv_render_scene_desc {
    rv_allocator allocator;      /* the scene's own memory (node memory is the world's) */
    uint32_t initial_capacity;   /* projections before the table grows; 0 = default 1024 */
    uint32_t initial_generation; /* the scene's generation before any ClearGeneration; 0 = 0 */
    rv_world *world;             /* NULL: standalone. Else live projections get nodes there */
    rv_delta_observer observer;  /* may be NULL */
    void *observer_user;
} rv_render_scene_desc;

/* Delta counts of one apply (or, in rv_render_scene_stats, since creation). */
typedef struct rv_apply_counts {
    uint64_t taken;        /* deltas read (each lands in exactly one outcome) */
    uint64_t applied;      /* outcome RV_DELTA_APPLIED */
    uint64_t rejected[RV_DELTA_OUTCOME_COUNT_]; /* per outcome; [RV_DELTA_APPLIED] stays 0 */
    uint64_t registered;   /* projections registered (replacements included) */
    uint64_t replaced;     /* Registers of a new incarnation that replaced a live older one */
    uint64_t unregistered; /* projections removed by Unregister */
    uint64_t cleared;      /* projections dropped by ClearGeneration */
} rv_apply_counts;

/* Render-scene counters. */
typedef struct rv_render_scene_stats {
    rv_apply_counts totals;  /* every apply and apply_deltas since creation */
    uint64_t publishes;      /* successful rv_render_scene_publish calls */
    uint64_t carry_over;     /* publications refused because deltas were left in the journal */
    uint64_t last_sequence;  /* highest sequence of a delta taken and checked against the scene
                                (0: none); a RV_DELTA_REJECTED_INVALID delta (replay only) and
                                one refused for its sequence leave it as it was */
    uint32_t generation;     /* current scene generation */
    uint32_t orphaned_children; /* live equipped children whose parent key is not live */
} rv_render_scene_stats;

/* Indices a host can iterate (rv_render_scene_index). Per-cell statics: rv_render_scene_cell. */
typedef enum rv_projection_index {
    RV_INDEX_NONE = 0,
    RV_INDEX_OUTDOOR_STATIC,  /* class outdoor static */
    RV_INDEX_DYNAMIC,         /* classes dynamic and equipped child */
    RV_INDEX_TRANSLUCENT,     /* flag translucent (hidden ones included) */
    RV_INDEX_SELECTABLE,      /* flag selectable */
    RV_INDEX_LIGHT_CANDIDATE, /* flag light candidate */
    RV_INDEX_DIRTY,           /* registered or changed since the last publish */
    RV_INDEX_COUNT_
} rv_projection_index;

/* Dirty bits of a projection since the last publish (rv_projection_record.dirty). */
enum {
    RV_DIRTY_REGISTERED = 1u << 0,
    RV_DIRTY_TRANSFORM = 1u << 1,
    RV_DIRTY_APPEARANCE = 1u << 2,
    RV_DIRTY_FLAGS = 1u << 3,
    RV_DIRTY_BUCKET = 1u << 4
};

/* A borrowed list of projection slots. Valid until the next apply, apply_deltas or
 * publish on the scene; order is unspecified (swap-remove). */
typedef struct rv_slot_list {
    const uint32_t *slots;
    uint32_t count;
} rv_slot_list;

/* One projection as the scene holds it. */
typedef struct rv_projection_record {
    uint64_t key;
    uint32_t incarnation;
    uint32_t generation;
    rv_projection projection;
    rv_node node;      /* backing node; RV_NODE_NONE when standalone or the node was destroyed */
    uint32_t dirty;    /* RV_DIRTY_* bits since the last publish */
} rv_projection_record;

/* Projection counts, one per index. */
typedef struct rv_projection_counts {
    uint32_t projections;     /* live */
    uint32_t outdoor_static;
    uint32_t cell_static;     /* over every cell */
    uint32_t cells;           /* cells with at least one cell static */
    uint32_t dynamic;         /* dynamic roots and equipped children */
    uint32_t equipped;        /* equipped children (a subset of dynamic) */
    uint32_t translucent;
    uint32_t selectable;
    uint32_t light_candidate;
    uint32_t dirty;
} rv_projection_counts;

/* Memory held by a render scene, in bytes (capacity, not use). */
typedef struct rv_render_scene_memory {
    uint64_t table_bytes;   /* projection rows and the key lookup */
    uint64_t index_bytes[RV_INDEX_COUNT_]; /* per index ([RV_INDEX_NONE] stays 0) */
    uint64_t cell_bytes;    /* per-cell buckets and the cell lookup */
    uint64_t link_bytes;    /* parent -> children and node -> projection lookups */
    uint64_t digest_bytes;  /* the reusable digest buffer */
    uint64_t total_bytes;   /* all of the above plus the scene object */
} rv_render_scene_memory;

/* Deterministic digest of every live projection (key, incarnation, generation, every
 * channel) in ascending key order, plus the scene generation and count: the same for any
 * insertion order, slot layout or hash layout. 128 bits. */
typedef struct rv_scene_digest {
    uint64_t hash[2];
    uint32_t projections;
    uint32_t generation;
} rv_scene_digest;

/* Creates a render scene. desc may be NULL (defaults, standalone). With desc->world, every
 * live projection gets a node in that world (class equipped child: under its parent's node
 * while the parent lives; otherwise a root, and hidden with what hangs under it, since its
 * transform is relative to a parent that is not there), flagged projection, hidden and
 * translucent to match; at most one render scene binds a world. The world must outlive the scene or be
 * destroyed first (the scene then forgets its nodes). *out is owned by the caller.
 * Errors: RV_ERR_INVALID_ARG (out NULL, initial_capacity above 2^30), RV_ERR_BAD_STATE
 * (the world already has a render scene), RV_ERR_OUT_OF_MEMORY; *out untouched on error. */
RV_API rv_result rv_render_scene_create(const rv_render_scene_desc *desc, rv_render_scene **out);

/* Destroys a scene (NULL is ignored) and the nodes it made in a world that still lives. */
RV_API void rv_render_scene_destroy(rv_render_scene *scene);

/* Drains journal fully into the scene, in sequence order: each delta is applied or rejected
 * and counted by outcome (*out_counts, may be NULL, receives this call's counts). Deltas the
 * observer appends are drained by this same call. Afterwards the journal is empty and its
 * tick ends. Everything a batch needs (table, indices, cells, a bound world's nodes) is
 * reserved before its first delta is applied: an RV_ERR_OUT_OF_MEMORY for the deltas
 * pending at the call leaves scene and journal unchanged (projections, indices, counts,
 * stats; storage reserved before the failure stays reserved, so
 * rv_render_scene_get_memory may report more). Deltas the observer appended
 * form later batches; a failure there stops after the last whole batch — the scene is
 * consistent, the journal keeps the rest in order, and calling apply again resumes. The
 * journal's buffer keeps the entries taken until the drain ends, so it holds everything
 * pending at the call plus everything the observer appends during it.
 * Cost: O(deltas) (ClearGeneration: O(projections)); nothing when the journal is empty.
 * Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_BAD_STATE (called from the observer or during
 * a node visit of the bound world, or the journal is being drained), RV_ERR_INVARIANT (the
 * calling thread does not own the journal), RV_ERR_CAPACITY (2^30 projections),
 * RV_ERR_OUT_OF_MEMORY. Rejected deltas are not errors. */
RV_API rv_result rv_render_scene_apply(rv_render_scene *scene, rv_journal *journal, rv_apply_counts *out_counts);

/* Applies an array of recorded deltas (a replay, or merged streams) with their own
 * sequences: the scene checks them like a drain (repeated or backwards sequences are
 * rejected), validates each payload (RV_DELTA_REJECTED_INVALID) and calls the observer.
 * deltas: count elements, borrowed for the call. All or nothing on RV_ERR_OUT_OF_MEMORY (as
 * for rv_render_scene_apply, storage reserved before the failure stays reserved).
 * Errors: RV_ERR_INVALID_ARG (NULL scene, or NULL deltas with count > 0), RV_ERR_BAD_STATE
 * (from the observer or during a node visit), RV_ERR_CAPACITY, RV_ERR_OUT_OF_MEMORY. */
RV_API rv_result rv_render_scene_apply_deltas(rv_render_scene *scene, const rv_delta *deltas, uint32_t count,
                                              rv_apply_counts *out_counts);

/* Publishes the scene for a frame: checks that journal (may be NULL) holds no undrained
 * delta and clears the dirty index. Deltas left over are an invariant failure: the call
 * returns RV_ERR_INVARIANT, stats.carry_over counts it, and the dirty index is kept.
 * Costs O(dirty projections); allocates nothing.
 * Errors: RV_ERR_INVALID_ARG (scene NULL), RV_ERR_BAD_STATE (from the observer), RV_ERR_INVARIANT. */
RV_API rv_result rv_render_scene_publish(rv_render_scene *scene, const rv_journal *journal);

/* The slot of the live projection with this key. A slot names the projection until the
 * next apply; identity is (key, incarnation). Errors: RV_ERR_INVALID_ARG, RV_ERR_NOT_FOUND. */
RV_API rv_result rv_render_scene_find(const rv_render_scene *scene, uint64_t key, uint32_t *out_slot);

/* Copies the projection in slot into *out. Errors: RV_ERR_INVALID_ARG (NULL),
 * RV_ERR_NOT_FOUND (slot not live). */
RV_API rv_result rv_render_scene_read(const rv_render_scene *scene, uint32_t slot, rv_projection_record *out);

/* One past the highest slot ever used: every live slot is below it (for full scans). */
RV_API uint32_t rv_render_scene_slot_limit(const rv_render_scene *scene);

/* The slots of one index (borrowed, see rv_slot_list). Errors: RV_ERR_INVALID_ARG (NULL,
 * which out of range). */
RV_API rv_result rv_render_scene_index(const rv_render_scene *scene, rv_projection_index which, rv_slot_list *out);

/* The slots of the cell statics in one cell (borrowed; an unknown cell is an empty list).
 * Errors: RV_ERR_INVALID_ARG (NULL). */
RV_API rv_result rv_render_scene_cell(const rv_render_scene *scene, uint64_t cell, rv_slot_list *out);

/* Counts per index (zeroes for NULL). O(1). */
RV_API rv_projection_counts rv_render_scene_counts(const rv_render_scene *scene);

/* Digest of the scene (see rv_scene_digest). Sorts keys in a buffer the scene keeps and
 * reuses: it allocates only when the scene holds more projections than ever digested
 * before. O(n). Errors: RV_ERR_INVALID_ARG (NULL), RV_ERR_OUT_OF_MEMORY (*out unchanged). */
RV_API rv_result rv_render_scene_digest(rv_render_scene *scene, rv_scene_digest *out);

/* The projection key (and slot, either output may be NULL) a node backs. Errors:
 * RV_ERR_INVALID_ARG (scene NULL), RV_ERR_NOT_FOUND (not a node of this scene's projections). */
RV_API rv_result rv_render_scene_node_key(const rv_render_scene *scene, rv_node node, uint64_t *out_key,
                                          uint32_t *out_slot);

/* Counters, memory and allocation counters (zeroes for NULL). */
RV_API rv_render_scene_stats rv_render_scene_get_stats(const rv_render_scene *scene);
/* Bytes held in the table, each index and the digest buffer (zeroes for NULL). */
RV_API rv_render_scene_memory rv_render_scene_get_memory(const rv_render_scene *scene);
/* The render scene's allocation counters (zeroes for NULL). */
RV_API rv_alloc_stats rv_render_scene_alloc_stats(const rv_render_scene *scene);

#ifdef __cplusplus
}
#endif

#endif /* RVIS_JOURNAL_H */
