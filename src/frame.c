/* The frame's stages in order: begin (resolve the view; drain the journal, update
 * transforms, open the occlusion and residency frames), add occluders, cull (frame_cull.c),
 * end (partition flush, streaming, tick demand, publish), and the public calls guarding
 * them against re-entry. */
#include "frame.h"
#include "core/check.h"
#include "frustum.h"
#include "occlusion.h"
#include "partition.h"
#include "projection.h"
#include "residency.h"
#include "scene.h"

#include <math.h>
#include <string.h>

/* ---- view ---------------------------------------------------------------------------- */

/* a * b, column-major, in double: for a camera far from the origin the float product
 * loses the far plane to cancellation (the frustum is extracted from this double product;
 * the float copy serves the occlusion buffer). */
static void mat4_mul_d(const float a[16], const float b[16], double out[16])
{
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += (double)a[k * 4 + r] * b[c * 4 + k];
            out[c * 4 + r] = acc;
        }
}

/* The view direction of a view-projection m (world -> clip). Perspective: the w row is the
 * view depth, so its xyz is the forward direction (scaled), whatever the view's
 * handedness. Orthographic (w = 1): the z row grows with depth (shrinks under reversed-Z). */
static void forward_of(const double m[16], bool orthographic, bool reversed_z, float out[3])
{
    double sign = orthographic && reversed_z ? -1.0 : 1.0;
    for (int k = 0; k < 3; k++)
        out[k] = (float)(sign * (orthographic ? m[4 * k + 2] : m[4 * k + 3]));
}

/* Pixels per world unit across the view at unit depth (perspective) or anywhere
 * (orthographic), the larger of the two axes, read from the matrix itself. */
static float pixels_per_unit_of(const double m[16], bool orthographic, uint32_t width, uint32_t height)
{
    double rx = sqrt(m[0] * m[0] + m[4] * m[4] + m[8] * m[8]), ry = sqrt(m[1] * m[1] + m[5] * m[5] + m[9] * m[9]);
    double rw = orthographic ? fabs(m[15]) : sqrt(m[3] * m[3] + m[7] * m[7] + m[11] * m[11]);
    double ppu = 0.5 * fmax(rx * width, ry * height) / rw;
    return ppu < 3e38 ? (float)ppu : 3e38f;
}

/* True when the view matrix's 3 x 3 part is a rotation, possibly with a reflection (its
 * columns orthonormal to 1e-4): its inverse is its transpose. */
static bool view_is_rigid(const float v[16])
{
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++) {
            double dot = (double)v[i * 4] * v[j * 4] + (double)v[i * 4 + 1] * v[j * 4 + 1] +
                         (double)v[i * 4 + 2] * v[j * 4 + 2];
            if (!(fabs(dot - (i == j ? 1.0 : 0.0)) <= 1e-4))
                return false;
        }
    return true;
}

/* The eye of any invertible affine view matrix: -A^-1 t, A its 3 x 3 part (Cramer's rule in
 * double). False when A is singular or the eye is not finite in float. */
static bool affine_view_eye(const float v[16], float eye[3])
{
    double a[3][3]; /* a[r][c] */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            a[r][c] = v[c * 4 + r];
    double cof[3][3];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            int r1 = (r + 1) % 3, r2 = (r + 2) % 3, c1 = (c + 1) % 3, c2 = (c + 2) % 3;
            cof[r][c] = a[r1][c1] * a[r2][c2] - a[r1][c2] * a[r2][c1];
        }
    double det = a[0][0] * cof[0][0] + a[0][1] * cof[0][1] + a[0][2] * cof[0][2];
    if (!(fabs(det) > 0) || !isfinite(det))
        return false;
    for (int k = 0; k < 3; k++) {
        /* (A^-1)[k][j] = cof[j][k] / det */
        double e = -(cof[0][k] * v[12] + cof[1][k] * v[13] + cof[2][k] * v[14]) / det;
        if (!(fabs(e) < 3e38))
            return false;
        eye[k] = (float)e;
    }
    return true;
}

rv_result rvi_frame_resolve_view(const rv_world *world, const rv_view *view, rvi_frame_camera *out)
{
    if (!view || view->viewport_width == 0 || view->viewport_height == 0)
        return RV_ERR_INVALID_ARG;
    if (!isfinite(view->time_ms) || !isfinite(view->fov_y))
        return RV_ERR_NOT_FINITE;
    /* Beyond 2^53 a double no longer counts every millisecond; within it the milliseconds
     * between two frames fit a float, and a wild first time cannot refuse every later one. */
    if (view->fov_y < 0 || view->fov_y >= 3.14159265f || fabs(view->time_ms) > 9007199254740992.0)
        return RV_ERR_INVALID_ARG;
    rvi_frame_camera cam;
    memset(&cam, 0, sizeof cam);
    bool have_double = false;
    if (view->view && view->projection) {
        if (!rvi_finite_n(view->view, 16) || !rvi_finite_n(view->projection, 16))
            return RV_ERR_NOT_FINITE;
        const float *v = view->view;
        /* Affine, to within what a float 4 x 4 inverse of a camera matrix leaves there (a
         * general inverse gives 1 - 2^-22 for its last 1): else the eye and view depths are
         * not defined. */
        if (fabsf(v[3]) > 1e-5f || fabsf(v[7]) > 1e-5f || fabsf(v[11]) > 1e-5f || fabsf(v[15] - 1) > 1e-5f)
            return RV_ERR_INVALID_ARG;
        mat4_mul_d(view->projection, view->view, cam.view_projection_d);
        for (int k = 0; k < 16; k++)
            cam.view_projection[k] = (float)cam.view_projection_d[k];
        if (!rvi_finite_n(cam.view_projection, 16))
            return RV_ERR_NOT_FINITE;
        have_double = true;
        /* Eye from the inverse of the view's 3 x 3 part: -R^T t for a rigid view, the general
         * inverse for one that also scales (a view in other units than the world's). */
        bool rigid = view_is_rigid(v);
        if (rigid) {
            for (int k = 0; k < 3; k++)
                cam.eye[k] = -(v[k * 4 + 0] * v[12] + v[k * 4 + 1] * v[13] + v[k * 4 + 2] * v[14]);
        } else if (!affine_view_eye(v, cam.eye)) {
            return RV_ERR_INVALID_ARG;
        }
        const float *p = view->projection;
        cam.orthographic = p[3] == 0 && p[7] == 0 && p[11] == 0 && p[15] != 0;
        /* Forward from the product, as the view_projection form reads it, so a left-handed
         * view (looking down +Z) has its forward too. */
        float fwd[3];
        forward_of(cam.view_projection_d, cam.orthographic, view->clip.reversed_z, fwd);
        float len = sqrtf(fwd[0] * fwd[0] + fwd[1] * fwd[1] + fwd[2] * fwd[2]);
        if (!(len > 0))
            return RV_ERR_INVALID_ARG;
        for (int k = 0; k < 3; k++)
            cam.forward[k] = fwd[k] / len;
        /* The lens in world units: from the projection for a rigid view, else from the
         * product, as the view_projection form reads it (a scaled view's projection
         * measures view units). */
        float lens_fov = 60.0f * 3.14159265f / 180.0f;
        if (rigid) {
            if (cam.orthographic)
                cam.ortho_height = fabsf(p[5]) > 0 ? 2.0f * fabsf(p[15]) / fabsf(p[5]) : 0;
            else if (fabsf(p[5]) > 0)
                lens_fov = 2.0f * atanf(1.0f / fabsf(p[5]));
        } else {
            const double *m = cam.view_projection_d;
            double ry = sqrt(m[1] * m[1] + m[5] * m[5] + m[9] * m[9]);
            double rw = sqrt(m[3] * m[3] + m[7] * m[7] + m[11] * m[11]);
            if (cam.orthographic)
                cam.ortho_height = ry > 0 ? (float)(2.0 * fabs(m[15]) / ry) : 0;
            else if (ry > 0)
                lens_fov = (float)(2.0 * atan(rw / ry));
        }
        cam.fov_y = view->fov_y > 0 ? view->fov_y : lens_fov;
    } else if (view->view_projection && view->eye) {
        if (!rvi_finite_n(view->view_projection, 16) || !rvi_finite_n(view->eye, 3))
            return RV_ERR_NOT_FINITE;
        memcpy(cam.view_projection, view->view_projection, sizeof cam.view_projection);
        for (int k = 0; k < 16; k++)
            cam.view_projection_d[k] = view->view_projection[k];
        memcpy(cam.eye, view->eye, sizeof cam.eye);
        /* The w row of a perspective view-projection is the view depth: its xyz is the
         * forward direction (scaled). An orthographic one has w = 1: its z row grows with
         * depth (shrinks under reversed-Z), so forward is the z row, negated when reversed. */
        const float *m = view->view_projection;
        cam.orthographic = m[3] == 0 && m[7] == 0 && m[11] == 0;
        float fwd[3];
        forward_of(cam.view_projection_d, cam.orthographic, view->clip.reversed_z, fwd);
        float ry = sqrtf(m[1] * m[1] + m[5] * m[5] + m[9] * m[9]); /* length of the y row */
        if (cam.orthographic) /* NDC y = row y . p / w spans 2: the world height is 2 |w| / |row y|. */
            cam.ortho_height = ry > 0 ? 2.0f * fabsf(m[15]) / ry : 0;
        float len = sqrtf(fwd[0] * fwd[0] + fwd[1] * fwd[1] + fwd[2] * fwd[2]);
        if (!(len > 0))
            return RV_ERR_INVALID_ARG;
        for (int k = 0; k < 3; k++)
            cam.forward[k] = fwd[k] / len;
        /* A perspective view-projection's y row is cot(fov_y / 2) times its w row's length
         * (rigid view): read fov_y from it as the view + projection form does. */
        cam.fov_y = view->fov_y > 0 ? view->fov_y
                    : (!cam.orthographic && ry > 0 ? 2.0f * atanf(len / ry) : 60.0f * 3.14159265f / 180.0f);
    } else {
        return RV_ERR_INVALID_ARG;
    }
    if (cam.orthographic && !(cam.ortho_height > 0 && isfinite(cam.ortho_height)))
        return RV_ERR_INVALID_ARG;
    if (have_double)
        RVI_TRY(rvi_frustum_from_view_projection_d(cam.view_projection_d, view->clip, &cam.published_frustum));
    else
        RVI_TRY(rv_frustum_from_view_projection(cam.view_projection, view->clip, &cam.published_frustum));
    cam.frustum = cam.published_frustum;
    rvi_frustum_widen(&cam.frustum);
    cam.clip = view->clip;
    cam.viewport_width = view->viewport_width;
    cam.viewport_height = view->viewport_height;
    cam.time_ms = view->time_ms;
    memcpy(cam.lod_view.eye, cam.eye, sizeof cam.eye);
    cam.lod_view.fov_y = cam.fov_y;
    cam.lod_view.viewport_height_px = (float)view->viewport_height;
    cam.lod_view.orthographic = cam.orthographic;
    cam.lod_view.ortho_height = cam.orthographic ? cam.ortho_height : 1.0f;
    cam.cull_unsampled = view->cull_unsampled;
    if (view->lod_camera) {
        /* LOD from another camera: its own resolution, without its lod_camera. */
        rv_view reference = *view->lod_camera;
        reference.lod_camera = NULL;
        reference.time_ms = view->time_ms;
        rvi_frame_camera ref;
        RVI_TRY(rvi_frame_resolve_view(world, &reference, &ref));
        cam.lod_view = ref.lod_view;
        cam.lod_from_camera = true;
    }
    cam.pixels_per_unit = pixels_per_unit_of(cam.view_projection_d, cam.orthographic, view->viewport_width,
                                             view->viewport_height);
    (void)world;
    *out = cam;
    return RV_OK;
}

/* ---- begin ----------------------------------------------------------------------------- */

static rv_result ensure_occlusion(rv_world *world, rvi_frame *f)
{
    if (f->occlusion || world->desc.occlusion.width == 0)
        return RV_OK;
    RVI_TRY(rvi_occlusion_create_in(&world->heap, &world->desc.occlusion, &f->occlusion));
    f->occlusion->lent = true;
    return RV_OK;
}

/* The buffer's aspect for the view: it keeps the viewport's shape while its height, width /
 * aspect rounded, stays within 1..RV_OCCLUSION_MAX_SIZE rows; a viewport taller or wider
 * than that gets the nearest height there (texels not square: each axis maps on its own). */
static float occlusion_aspect(uint32_t width, const rvi_frame_camera *cam)
{
    double rows = (double)width * cam->viewport_height / cam->viewport_width;
    return rows > RV_OCCLUSION_MAX_SIZE ? (float)width / (float)RV_OCCLUSION_MAX_SIZE
           : rows < 1.0                ? (float)width
                                       : (float)cam->viewport_width / (float)cam->viewport_height;
}

/* Begins in three steps, so that a refused call changes nothing: first every check that can
 * refuse (no state made, no allocation, no host code run), then what can fail only for
 * memory before anything a frame reads has changed (the frame's state, the buffer; storage
 * made there stays), then the changes, none of which can fail but the buffer's own
 * reservation and the journal's drain, both for memory (see rv_frame_begin). */
static rv_result frame_begin_steps(rv_world *world, const rv_view *view, bool *held)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if ((f && f->state != RVI_FRAME_IDLE) || world->scene.visiting)
        return RV_ERR_BAD_STATE;
    rvi_frame_camera cam;
    RVI_TRY(rvi_frame_resolve_view(world, view, &cam));
    bool have_time = f && f->have_time;
    if (have_time && cam.time_ms < f->last_time_ms)
        return RV_ERR_ORDER;
    float dt = have_time ? (float)(cam.time_ms - f->last_time_ms) : 0.0f;
    rvi_hlod_pass hlod_pass;
    RVI_TRY(rvi_hlod_begin_pass(world, &cam.lod_view, dt, &hlod_pass));
    hlod_pass.own_geometry = true; /* the lists draw a region through its own geometry */
    uint32_t width = world->desc.occlusion.width;
    RVI_TRY(rvi_occlusion_check_view(width, cam.view_projection_d, cam.clip, occlusion_aspect(width, &cam)));
    rv_residency *residency = f ? f->residency : NULL;
    if (residency)
        RVI_TRY(rvi_residency_check_begin(residency, cam.time_ms));
    rvi_partition *gate = rvi_partition_find(world);
    if (gate)
        RVI_TRY(rvi_partition_check_begin(gate));
    rv_render_scene *render_scene = f ? f->render_scene : NULL;
    if (render_scene && f->journal)
        RVI_TRY(rvi_render_scene_check_apply(render_scene, f->journal));

    if (!f)
        RVI_TRY(rvi_frame_state(world, &f));
    RVI_TRY(ensure_occlusion(world, f));
    /* Held from here: the host's clock and allocator, called below, must neither freeze the
     * buffer nor test the frame it is replacing (frame_begin lets go of it on a refusal). */
    if (f->occlusion) {
        f->occlusion->held = true;
        *held = true;
    }
    RVI_TRY(rvi_lod_reserve(world));

    if (f->occlusion) {
        f->occlusion_empty = false;
        RVI_TRY(rvi_occlusion_begin_d(f->occlusion, cam.view_projection_d, cam.clip, occlusion_aspect(width, &cam)));
        if (cam.cull_unsampled && !cam.orthographic) /* the looks are made in perspective only */
            rvi_occ_set_samples(f->occlusion, cam.viewport_width, cam.viewport_height);
    }

    /* The journal before the transforms: its deltas move and create nodes the update must see. */
    bool timed = world->desc.clock_ns != NULL;
    uint64_t t0 = rvi_clock_now(world);
    rv_apply_counts applied = { 0 };
    if (f->render_scene && f->journal)
        RVI_TRY(rv_render_scene_apply(f->render_scene, f->journal, &applied));
    for (int s = 0; s < RV_STAGE_COUNT; s++)
        f->stage_us[s] = timed ? 0.0 : -1.0;
    memset(&f->counts, 0, sizeof f->counts);
    f->counts.journal_applied = (uint32_t)applied.applied;
    uint64_t rejected = 0;
    for (int k = 0; k < RV_DELTA_OUTCOME_COUNT_; k++)
        rejected += applied.rejected[k];
    f->counts.journal_rejected = (uint32_t)rejected;
    uint64_t t1 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_JOURNAL, t0, t1);

    /* A non-finite or zero-quaternion in-place write keeps that node's old matrix and
     * updates the rest: the frame goes on (the scene is not being visited: checked above). */
    rv_result r = rv_update_world(world);
    uint64_t t2 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_TRANSFORMS, t1, t2);
    f->counts.transform_errors = r != RV_OK;
    f->counts.transform_stale = world->scene.stale_count; /* this frame's and earlier ones' */

    /* Checked or reserved above: none of these fails. */
    if (f->residency)
        (void)rv_residency_begin_frame(f->residency, cam.time_ms);
    (void)rvi_lod_advance(world, dt);
    if (gate)
        (void)rvi_partition_frame_begin(world, gate, NULL, true);
    f->gate = gate;
    f->hlod_pass = hlod_pass;

    f->cam = cam;
    f->have_time = true;
    f->last_time_ms = cam.time_ms;
    /* Build in the arena the last published view does not live in. */
    f->building = f->lent == 0 ? 1 : 0;
    rvi_frame_arena *a = &f->arenas[f->building];
    a->generation += 2; /* stays odd/even: never equal to the other arena's */
    a->opaque.count = a->translucent.count = 0;
    a->resync_requests.count = a->resync_parts.count = 0;
    a->page_requests.count = a->page_evictions.count = 0;
    a->hlod_loads.count = 0;
    a->culls.count = 0;
    f->state = RVI_FRAME_BEGUN;
    return RV_OK;
}

static rv_result frame_begin(rv_world *world, const rv_view *view)
{
    bool held = false;
    rv_result r = frame_begin_steps(world, view, &held);
    /* Let go of the buffer only when this call took it: a begin refused before that wrote
     * nothing, so a host testing the lent buffer on another thread is not raced. */
    rvi_frame *f = r != RV_OK && held ? rvi_frame_find(world) : NULL;
    if (f && f->state == RVI_FRAME_IDLE && f->occlusion)
        f->occlusion->held = false; /* no frame opened */
    return r;
}

/* The frame's buffer for an add, or NULL with *r set (RV_OK when occlusion is off). */
static rv_occlusion *frame_buffer(rv_world *world, rv_result *r)
{
    rvi_frame *f = rvi_frame_find(world);
    /* Only before the cull: a cull that failed leaves the frame open for abort alone, its
     * buffer holding some of the node occluders or frozen already. */
    bool open = f && f->state == RVI_FRAME_BEGUN;
    *r = open ? RV_OK : RV_ERR_BAD_STATE;
    return open ? f->occlusion : NULL;
}

static rv_result counted(rv_world *world, rv_result r)
{
    if (r == RV_OK)
        rvi_frame_find(world)->counts.occluders_added++;
    return r;
}

static rv_result frame_add_occluder(rv_world *world, const float min[3], const float max[3],
                                    const float matrix[16])
{
    if (!world || !min || !max)
        return RV_ERR_INVALID_ARG;
    rv_result r;
    rv_occlusion *occ = frame_buffer(world, &r);
    return occ ? counted(world, rvi_occlusion_add_occluder(occ, min, max, matrix)) : r;
}

static rv_result frame_add_convex(rv_world *world, const rv_occluder_convex *convex, const float matrix[16])
{
    if (!world || !convex)
        return RV_ERR_INVALID_ARG;
    rv_result r;
    rv_occlusion *occ = frame_buffer(world, &r);
    return occ ? counted(world, rvi_occlusion_add_convex(occ, convex, matrix)) : r;
}

static rv_result frame_add_mesh(rv_world *world, const rv_occluder_mesh *mesh, const float matrix[16])
{
    if (!world || !mesh)
        return RV_ERR_INVALID_ARG;
    rv_result r;
    rv_occlusion *occ = frame_buffer(world, &r);
    return occ ? counted(world, rvi_occlusion_add_mesh(occ, mesh, matrix)) : r;
}

/* ---- the depth feed --------------------------------------------------------------------- */

static rv_result frame_feed_depth(rv_world *world, const rv_depth_feed *feed)
{
    if (!world || !feed)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if (!f || f->state != RVI_FRAME_BEGUN)
        return RV_ERR_BAD_STATE; /* no frame open, or culled already (a failed cull included) */
    /* This frame's own depth is drawn from what its cull decides: it cannot be fed yet. */
    if (feed->age == 0)
        return RV_ERR_INVALID_ARG;
    if (!f->occlusion)
        return RV_OK;
    uint64_t t0 = rvi_clock_now(world);
    rv_result r = rvi_occlusion_feed_depth(f->occlusion, feed);
    if (world->desc.clock_ns)
        rvi_stage_add(f, RV_STAGE_FEED, t0, rvi_clock_now(world));
    return r;
}

/* ---- end ------------------------------------------------------------------------------- */

/* The grids' updates, and room in the arena for every page request and eviction the
 * residency can hand out now (*out_max requests, *out_evictable evictions). Everything here
 * may fail; nothing is handed out yet. */
static rv_result streaming_prepare(rv_world *world, rvi_frame *f, rvi_frame_arena *a, uint32_t *out_max,
                                   uint32_t *out_evictable)
{
    rvi_heap *heap = &world->heap;
    for (uint32_t g = 0; g < f->grids.count; g++) {
        rvi_frame_grid *fg = &RVI_VEC_AT(f->grids, rvi_frame_grid, g);
        /* The eye source sits after the host's sources; it is rewritten per grid. */
        f->sources.count = f->host_source_count;
        if (fg->eye_radius >= 0) {
            rv_stream_source eye = { { f->cam.eye[0], f->cam.eye[1], f->cam.eye[2] }, fg->eye_radius };
            RVI_TRY(rvi_vec_push(heap, &f->sources, sizeof eye, &eye));
        }
        RVI_TRY(rv_grid_update(fg->grid, RVI_VEC_PTR(f->sources, rv_stream_source), f->sources.count,
                               f->residency));
    }
    f->sources.count = f->host_source_count;
    uint32_t max = world->desc.residency.requests_per_frame ? world->desc.residency.requests_per_frame : 64;
    uint32_t evictable = rvi_residency_evictable(f->residency);
    RVI_TRY(rvi_vec_reserve(heap, &a->page_requests, sizeof(rv_page_request), max));
    RVI_TRY(rvi_vec_reserve(heap, &a->page_evictions, sizeof(rv_page_eviction), evictable));
    *out_max = max;
    *out_evictable = evictable;
    return RV_OK;
}

/* Hands out the page requests and evictions into the room streaming_prepare made. Cannot
 * fail: taken pages always reach the view. */
static void streaming_take(rvi_frame *f, rvi_frame_arena *a, uint32_t max, uint32_t evictable)
{
    uint32_t n = 0;
    (void)rv_residency_take_requests(f->residency, RVI_VEC_PTR(a->page_requests, rv_page_request), max, &n);
    a->page_requests.count = n;
    n = 0;
    (void)rv_residency_take_evictions(f->residency, RVI_VEC_PTR(a->page_evictions, rv_page_eviction), evictable,
                                      &n);
    a->page_evictions.count = n;
    f->counts.pages_requested = a->page_requests.count;
    f->counts.pages_evicted = a->page_evictions.count;
}

void rvi_frame_count_drawn(const rvi_vec *opaque, const rvi_vec *translucent, rv_frame_counts *counts)
{
    counts->opaque = opaque->count;
    counts->translucent = translucent->count;
    for (uint32_t k = 0; k < 2; k++) {
        const rvi_vec *list = k ? translucent : opaque;
        for (uint32_t n = 0; n < list->count; n++) {
            const rv_draw_item *it = &RVI_VEC_AT(*list, rv_draw_item, n);
            uint32_t bin = it->lod_level < RV_LOD_HISTOGRAM_BINS - 1 ? it->lod_level : RV_LOD_HISTOGRAM_BINS - 1;
            counts->lod_histogram[bin]++;
            if (it->fade < 1.0f)
                counts->crossfades++;
        }
    }
}

static void combine_tick(rv_tick_demand *t, rv_tick_demand other)
{
    if (other.mode == RV_TICK_CONTINUOUS || t->mode == RV_TICK_CONTINUOUS) {
        t->mode = RV_TICK_CONTINUOUS;
        t->wake_at_ms = 0;
    } else if (other.mode == RV_TICK_WAKE_AT) {
        if (t->mode != RV_TICK_WAKE_AT || other.wake_at_ms < t->wake_at_ms)
            *t = other;
    }
}

static rv_result frame_end(rv_world *world, rv_frame_view *out)
{
    if (!world || !out)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if (!f || f->state != RVI_FRAME_CULLED)
        return RV_ERR_BAD_STATE;
    rvi_heap *heap = &world->heap;
    rvi_frame_arena *a = &f->arenas[f->building];
    bool timed = world->desc.clock_ns != NULL;
    rv_tick_demand tick = { RV_TICK_IDLE, 0 };

    /* Every step that can fail comes before the first that hands something out (the
     * partition gate's requests, the residency's pages): a failure then loses nothing, and
     * the frame stays open for a retry or an abort. */
    uint64_t t0 = rvi_clock_now(world);
    rvi_partition *gate = f->gate;
    if (gate) {
        uint32_t gate_parts, gate_requests;
        rvi_partition_request_bounds(gate, &gate_parts, &gate_requests);
        RVI_TRY(rvi_vec_reserve(heap, &a->resync_parts, sizeof(rv_node), gate_parts));
        RVI_TRY(rvi_vec_reserve(heap, &a->resync_requests, sizeof(rv_partition_request), gate_requests));
    }
    uint32_t max_requests = 0, evictable = 0;
    if (f->residency)
        RVI_TRY(streaming_prepare(world, f, a, &max_requests, &evictable));
    uint64_t t1 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_STREAMING, t0, t1);

    if (gate) {
        rv_partition_result pr;
        rvi_partition_gate_unplaced(world, gate, &f->cam.frustum);
        RVI_TRY(rvi_partition_frame_end(world, gate, NULL, f->cam.time_ms, false, &pr));
        /* Copy the requests: the gate's storage lives one frame, a view two. */
        uint32_t parts = 0;
        for (uint32_t k = 0; k < pr.request_count; k++)
            parts += pr.requests[k].part_count;
        rv_node *dst = RVI_VEC_PTR(a->resync_parts, rv_node);
        for (uint32_t k = 0; k < pr.request_count; k++) {
            rv_partition_request q = pr.requests[k];
            memcpy(dst, q.parts, (size_t)q.part_count * sizeof *dst);
            q.parts = dst;
            dst += q.part_count;
            RVI_VEC_AT(a->resync_requests, rv_partition_request, k) = q;
        }
        a->resync_parts.count = parts;
        a->resync_requests.count = pr.request_count;
        combine_tick(&tick, pr.tick);
    }
    uint64_t t2 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_PARTITION, t1, t2);

    if (f->residency) {
        streaming_take(f, a, max_requests, evictable);
        if (rv_residency_loads_in_flight(f->residency) > 0)
            combine_tick(&tick, (rv_tick_demand){ RV_TICK_CONTINUOUS, 0 });
        double wake;
        if (rv_residency_next_wake_ms(f->residency, &wake))
            combine_tick(&tick, (rv_tick_demand){ RV_TICK_WAKE_AT, wake });
    }
    uint64_t t3 = rvi_clock_now(world);
    if (timed)
        rvi_stage_add(f, RV_STAGE_STREAMING, t2, t3);
    if (rvi_lod_fading(world) || f->hlod_pass.fading > 0)
        combine_tick(&tick, (rv_tick_demand){ RV_TICK_CONTINUOUS, 0 });

    /* Publication (the lists were sorted as the cull wrote them): check the journal was
     * drained (a carry-over is an invariant failure: reported, and the view is still
     * published so the host keeps drawing). */
    rv_result published = RV_OK;
    if (f->render_scene && f->journal)
        published = rv_render_scene_publish(f->render_scene, f->journal);

    rvi_frame_count_drawn(&a->opaque, &a->translucent, &f->counts);
    if (timed)
        rvi_stage_add(f, RV_STAGE_PUBLISH, t3, rvi_clock_now(world));

    rv_frame_view v;
    memset(&v, 0, sizeof v);
    v.generation = a->generation;
    v.frame_sequence = ++f->sequence;
    f->walked_frustum = f->culled_frustum;
    f->walked_hid_groups = f->culled_hid_groups;
    v.arena = (uint32_t)f->building;
    v.opaque = RVI_VEC_PTR(a->opaque, rv_draw_item);
    v.opaque_count = a->opaque.count;
    v.translucent = RVI_VEC_PTR(a->translucent, rv_draw_item);
    v.translucent_count = a->translucent.count;
    v.resync_requests = RVI_VEC_PTR(a->resync_requests, rv_partition_request);
    v.resync_request_count = a->resync_requests.count;
    v.page_requests = RVI_VEC_PTR(a->page_requests, rv_page_request);
    v.page_request_count = a->page_requests.count;
    v.page_evictions = RVI_VEC_PTR(a->page_evictions, rv_page_eviction);
    v.page_eviction_count = a->page_evictions.count;
    v.hlod_load_requests = RVI_VEC_PTR(a->hlod_loads, rv_node);
    v.hlod_load_request_count = a->hlod_loads.count;
    v.culls = RVI_VEC_PTR(a->culls, rv_cull_record);
    v.cull_count = a->culls.count;
    v.tick = tick;
    v.counts = f->counts;
    memcpy(v.stage_us, f->stage_us, sizeof v.stage_us);
    v.frustum = f->cam.published_frustum;
    *out = v;
    f->lent = f->building;
    f->building = -1;
    f->state = RVI_FRAME_IDLE;
    return published;
}

static rv_result frame_abort(rv_world *world)
{
    if (!world)
        return RV_ERR_INVALID_ARG;
    rvi_frame *f = rvi_frame_find(world);
    if (!f || f->state == RVI_FRAME_IDLE)
        return RV_OK;
    /* The half-built arena is recycled unpublished; its next build bumps its generation. */
    bool walked = f->state == RVI_FRAME_CULLED;
    f->building = -1;
    f->state = RVI_FRAME_IDLE;
    if (f->occlusion)
        f->occlusion->held = false;
    rvi_partition *gate = f->gate;
    if (gate) {
        /* Close the gate's frame. Before the walk no group was gated: gate them by the
         * frustum now, or every part would count as culled and re-enter next frame. The
         * requests wait for the next frame's end: no view of this frame lists them. */
        rv_partition_result pr;
        if (walked)
            rvi_partition_gate_unplaced(world, gate, &f->cam.frustum);
        (void)rvi_partition_frame_end(world, gate, walked ? NULL : &f->cam.frustum, f->cam.time_ms, true, &pr);
    }
    return RV_OK;
}

static rv_result frame_all(rv_world *world, const rv_view *view, rv_frame_view *out)
{
    if (!out)
        return RV_ERR_INVALID_ARG;
    rv_result r = frame_begin(world, view);
    if (r != RV_OK)
        return r;
    r = rvi_frame_cull(world);
    if (r != RV_OK) {
        frame_abort(world);
        return r;
    }
    rv_frame_view v;
    r = frame_end(world, &v);
    if (r == RV_OK || r == RV_ERR_INVARIANT)
        *out = v;
    else
        frame_abort(world);
    return r;
}

/* ---- the public frame calls: guarded against re-entry ----
 * A frame call runs host code: the delta observer while rv_frame_begin drains the journal,
 * request_reprocess and is_update_in_progress in rv_frame_end and rv_frame_abort, the clock
 * and the allocator. A frame call made from there would change the frame under the call
 * running it (an abort from request_reprocess made rv_frame_end publish a view that was
 * already invalid, and answer RV_OK): it is refused with RV_ERR_BAD_STATE, changing
 * nothing. So is one made from the delta observer of the world's render scene while the
 * host drains it outside a frame: the view would show half a tick. */
#define FRAME_CALL(world, call)                                                   \
    do {                                                                          \
        if (!(world))                                                             \
            return RV_ERR_INVALID_ARG;                                            \
        if ((world)->in_frame_call || rvi_world_projection_draining(world))       \
            return RV_ERR_BAD_STATE;                                              \
        (world)->in_frame_call = true;                                            \
        rv_result frame_call_result_ = (call);                                    \
        (world)->in_frame_call = false;                                           \
        return frame_call_result_;                                                \
    } while (0)

rv_result rv_frame_begin(rv_world *world, const rv_view *view)
{
    FRAME_CALL(world, frame_begin(world, view));
}

rv_result rv_frame_add_occluder(rv_world *world, const float min[3], const float max[3], const float matrix[16])
{
    FRAME_CALL(world, frame_add_occluder(world, min, max, matrix));
}

rv_result rv_frame_add_convex(rv_world *world, const rv_occluder_convex *convex, const float matrix[16])
{
    FRAME_CALL(world, frame_add_convex(world, convex, matrix));
}

rv_result rv_frame_add_mesh(rv_world *world, const rv_occluder_mesh *mesh, const float matrix[16])
{
    FRAME_CALL(world, frame_add_mesh(world, mesh, matrix));
}

rv_result rv_frame_feed_depth(rv_world *world, const rv_depth_feed *feed)
{
    FRAME_CALL(world, frame_feed_depth(world, feed));
}

rv_result rv_frame_cull(rv_world *world)
{
    FRAME_CALL(world, rvi_frame_cull(world));
}

rv_result rv_frame_end(rv_world *world, rv_frame_view *out)
{
    FRAME_CALL(world, frame_end(world, out));
}

rv_result rv_frame_abort(rv_world *world)
{
    FRAME_CALL(world, frame_abort(world));
}

rv_result rv_frame(rv_world *world, const rv_view *view, rv_frame_view *out)
{
    FRAME_CALL(world, frame_all(world, view, out));
}
