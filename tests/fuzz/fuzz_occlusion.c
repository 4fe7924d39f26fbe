/* Fuzz target: occlusion against a slow reference — no false cull.
 *
 * The input decodes a view (perspective or orthographic, any clip convention, finite or
 * infinite far plane, any aspect), a few occluders (boxes, convex solids of a box's planes
 * and cuts, closed box meshes and open meshes of random triangles, under arbitrary affine
 * matrices, flat ones included; some malformed on purpose) and a few test objects (boxes
 * and spheres with matrices). Every object the
 * library calls hidden (single and batch tests) is checked against a slow reference in
 * double precision: points are sampled over the object's surface, and a point that lies
 * inside the view and whose sight line (from the near plane to the point, through the same
 * screen position) misses every occluder — each inflated by a small tolerance — is a
 * witness that the object is visible. A witness for a culled object is a hole in the
 * world: abort. Hostile numbers (NaN, infinities, min > max) must get the documented code
 * and a visible answer.
 *
 * Bit 3 of the second byte draws every mesh by its outline (docs/occlusion.md, "Dense
 * meshes"), whatever its size; bits 4 and 5 choose the fusion (3 off, 2 always, else
 * automatic). Bytes
 * after the marker "FEED" drive the depth feed (fuzz_occlusion_feed.c). */
#define _GNU_SOURCE /* memmem */
#include "fuzz_occlusion.h"
#include "occlusion.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* Cube corners (corner k has max[i] where bit i of k is set), wound counter-clockwise seen
 * from outside. */
static const uint32_t CUBE_INDICES[36] = { 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                           2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6 };


/* A number in [lo, hi] from one byte; byte 255 gives a hostile value instead. */
static float num(fz_input *in, float lo, float hi, int *hostile)
{
    uint8_t b = u8(in);
    if (b == 255) {
        static const float bad[4] = { NAN, INFINITY, -INFINITY, 1e30f };
        float v = bad[u8(in) % 4];
        if (!isfinite(v))
            *hostile = 1;
        return v;
    }
    return lo + (hi - lo) * (float)b / 254.0f;
}

/* An affine matrix from the input: rotation about a random axis, non-uniform scale (a
 * zero factor when flat is allowed), translation. */
static void decode_affine(fz_input *in, double m[16], int allow_flat, int *hostile, double thick[16])
{
    double ax = num(in, -1, 1, hostile), ay = num(in, -1, 1, hostile), az = num(in, -1, 1, hostile);
    double len = sqrt(ax * ax + ay * ay + az * az);
    if (!(len > 1e-3) || !isfinite(len)) {
        ax = 0;
        ay = 1;
        az = 0;
        len = 1;
    }
    ax /= len;
    ay /= len;
    az /= len;
    double angle = num(in, -3.2f, 3.2f, hostile);
    if (!isfinite(angle))
        angle = 0;
    double c = cos(angle), s = sin(angle), t = 1 - c;
    double r[9] = { t * ax * ax + c, t * ax * ay + s * az, t * ax * az - s * ay,
                    t * ax * ay - s * az, t * ay * ay + c, t * ay * az + s * ax,
                    t * ax * az + s * ay, t * ay * az - s * ax, t * az * az + c };
    double sc[3];
    for (int k = 0; k < 3; k++) {
        uint8_t b = u8(in);
        sc[k] = allow_flat && b == 0 ? 0.0 : 0.05 + 4.0 * b / 255.0;
    }
    memset(m, 0, 16 * sizeof *m);
    for (int col = 0; col < 3; col++)
        for (int row = 0; row < 3; row++)
            m[col * 4 + row] = r[col * 3 + row] * sc[col];
    m[12] = num(in, -40, 40, hostile);
    m[13] = num(in, -40, 40, hostile);
    m[14] = num(in, -40, 40, hostile);
    m[15] = 1;
    if (thick) {
        /* The reference's stand-in for a flat box: the same with a thin thickness (a
         * larger occluder only removes witnesses, so the check stays sound). */
        memcpy(thick, m, 16 * sizeof *m);
        for (int col = 0; col < 3; col++)
            if (sc[col] == 0.0)
                for (int row = 0; row < 3; row++)
                    thick[col * 4 + row] = r[col * 3 + row] * 1e-3;
    }
}

static void to_float(const double *d, float *f, int n)
{
    for (int i = 0; i < n; i++)
        f[i] = (float)d[i];
}

/* ---- the view ------------------------------------------------------------------------ */

static int decode_view(fz_input *in, fz_view *v)
{
    int hostile = 0;
    uint8_t kind = u8(in);
    v->ortho = kind & 1;
    v->infinite = !v->ortho && (kind & 2);
    v->clip.depth_zero_to_one = (kind & 4) != 0;
    v->clip.reversed_z = (kind & 8) != 0;
    v->aspect = num(in, 0.3f, 3.0f, &hostile);
    double n = num(in, 0.05f, 2.0f, &hostile), f = n + num(in, 1.0f, 500.0f, &hostile);
    double fov = num(in, 0.2f, 2.5f, &hostile);
    double half_h = v->ortho ? num(in, 1.0f, 60.0f, &hostile) : tan(fov / 2);
    if (hostile || !(v->aspect > 0))
        return 0;
    /* Projection in OpenGL form, then remapped to the convention's depth range. */
    double p[16] = {0};
    double lo = v->clip.depth_zero_to_one ? 0.0 : -1.0;
    /* ndc_depth = A * z_eye_linear ...: build so that near -> dn, far -> df. */
    double dn = v->clip.reversed_z ? 1.0 : lo, df = v->clip.reversed_z ? lo : 1.0;
    if (v->ortho) {
        p[0] = 1.0 / (half_h * v->aspect);
        p[5] = 1.0 / half_h;
        /* z_ndc = a * z + b with z = -n -> dn, z = -f -> df */
        double a = (df - dn) / (-(f - n));
        p[10] = a;
        p[14] = dn + a * n;
        p[15] = 1;
    } else {
        p[0] = 1.0 / (half_h * v->aspect);
        p[5] = 1.0 / half_h;
        p[11] = -1;
        /* z_clip = a z + b, w = -z: z_ndc = (a z + b) / -z; z=-n -> dn, z=-f -> df
         * (infinite: f -> infinity gives z_ndc -> -a). */
        double a, b;
        if (v->infinite) {
            a = -df;
            b = (dn - df) * n;
        } else {
            a = (dn * n - df * f) / (f - n);
            b = (dn - df) * n * f / (f - n);
        }
        p[10] = a;
        p[14] = b;
    }
    double view[16];
    int h2 = 0;
    decode_affine(in, view, 0, &h2, NULL);
    /* The camera matrix must be rigid-ish: use its rotation part normalised (scale
     * removed) so the view is a proper camera. */
    for (int c = 0; c < 3; c++) {
        double l = sqrt(view[c * 4] * view[c * 4] + view[c * 4 + 1] * view[c * 4 + 1] + view[c * 4 + 2] * view[c * 4 + 2]);
        for (int r = 0; r < 3; r++)
            view[c * 4 + r] /= l;
    }
    double inv_view[16];
    if (!mat_inverse(view, inv_view))
        return 0;
    mat_mul(p, inv_view, v->vp);
    to_float(v->vp, v->vpf, 16);
    double back[16];
    for (int i = 0; i < 16; i++)
        back[i] = v->vpf[i]; /* the reference uses the matrix the library sees */
    memcpy(v->vp, back, sizeof back);
    if (!mat_inverse(v->vp, v->inv_vp))
        return 0;
    v->near_ndc = dn;
    v->far_ndc = df;
    return 1;
}

/* NDC of a world point; false when behind the eye (w <= 0). */
static int project(const fz_view *v, const double p[3], double ndc[3])
{
    double h[4] = { p[0], p[1], p[2], 1 }, c[4];
    mat_apply(v->vp, h, c);
    if (!(c[3] > 1e-9))
        return 0;
    ndc[0] = c[0] / c[3];
    ndc[1] = c[1] / c[3];
    ndc[2] = c[2] / c[3];
    return 1;
}

static void unproject(const fz_view *v, const double ndc[3], double out[3])
{
    double h[4] = { ndc[0], ndc[1], ndc[2], 1 }, w[4];
    mat_apply(v->inv_vp, h, w);
    out[0] = w[0] / w[3];
    out[1] = w[1] / w[3];
    out[2] = w[2] / w[3];
}

/* ---- occluders and the reference ------------------------------------------------------ */

/* The segment's local parameter range inside a convex solid inflated by a tolerance. */
static int segment_hits_convex(const fz_box *o, const double la[3], const double lb[3], double t_end)
{
    double t0 = 0, t1 = t_end;
    for (uint32_t k = 0; k < o->plane_count; k++) {
        const double *q = o->planes[k];
        double nm = fabs(q[0]) + fabs(q[1]) + fabs(q[2]);
        double e = 1e-4 * (fabs(q[3]) + nm * (fabs(o->min[0]) + fabs(o->min[1]) + fabs(o->min[2]) + fabs(o->max[0]) +
                                              fabs(o->max[1]) + fabs(o->max[2]) + 1));
        double fa = q[0] * la[0] + q[1] * la[1] + q[2] * la[2] - q[3] - e;
        double fb = q[0] * lb[0] + q[1] * lb[1] + q[2] * lb[2] - q[3] - e;
        double d = fb - fa; /* f(t) = fa + t d <= 0 inside */
        if (fabs(d) < 1e-300) {
            if (fa > 0)
                return 0;
            continue;
        }
        double t = -fa / d;
        if (d > 0)
            t1 = fmin(t1, t);
        else
            t0 = fmax(t0, t);
        if (t0 > t1)
            return 0;
    }
    return 1;
}

/* Does the segment a -> b (t in [0, t_end]) meet a triangle grown by a tolerance? */
static int segment_hits_triangle(const double tri[3][3], const double a[3], const double b[3], double t_end)
{
    double e1[3], e2[3], d[3], s[3], h[3], q[3];
    for (int i = 0; i < 3; i++) {
        e1[i] = tri[1][i] - tri[0][i];
        e2[i] = tri[2][i] - tri[0][i];
        d[i] = b[i] - a[i];
        s[i] = a[i] - tri[0][i];
    }
    h[0] = d[1] * e2[2] - d[2] * e2[1];
    h[1] = d[2] * e2[0] - d[0] * e2[2];
    h[2] = d[0] * e2[1] - d[1] * e2[0];
    double det = e1[0] * h[0] + e1[1] * h[1] + e1[2] * h[2];
    double scale = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]) *
                   sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]) * sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(fabs(det) > 1e-9 * scale))
        return 1; /* seen edge-on or degenerate: may touch the sight line, removes the witness */
    double f = 1.0 / det, u = f * (s[0] * h[0] + s[1] * h[1] + s[2] * h[2]);
    q[0] = s[1] * e1[2] - s[2] * e1[1];
    q[1] = s[2] * e1[0] - s[0] * e1[2];
    q[2] = s[0] * e1[1] - s[1] * e1[0];
    double v = f * (d[0] * q[0] + d[1] * q[1] + d[2] * q[2]), t = f * (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]);
    const double tol = 1e-4;
    return u >= -tol && v >= -tol && u + v <= 1 + tol && t >= -tol && t <= t_end + tol;
}

/* True when segment a -> b (t in [0, t_end]) meets the box inflated by a tolerance. */
static int segment_hits_box(const fz_box *o, const double a[3], const double b[3], double t_end)
{
    double la[3], lb[3];
    if (o->kind == SHAPE_CLOSED_MESH || o->kind == SHAPE_OPEN_MESH || o->kind == SHAPE_GRID_MESH) {
        for (uint32_t k = 0; k < o->tri_count; k++)
            if (segment_hits_triangle(o->tri[k], a, b, t_end))
                return 1;
        return 0;
    }
    if (!o->invertible)
        return 1; /* cannot place it: it may hide anything (only removes witnesses) */
    double ha[4] = { a[0], a[1], a[2], 1 }, hb[4] = { b[0], b[1], b[2], 1 }, ra[4], rb[4];
    mat_apply(o->inv, ha, ra);
    mat_apply(o->inv, hb, rb);
    memcpy(la, ra, sizeof la);
    memcpy(lb, rb, sizeof lb);
    if (o->kind == SHAPE_CONVEX)
        return segment_hits_convex(o, la, lb, t_end);
    double t0 = 0, t1 = t_end;
    for (int k = 0; k < 3; k++) {
        double e = 1e-4 * (o->max[k] - o->min[k] + fabs(o->min[k]) + fabs(o->max[k])) + 1e-4;
        double lo = o->min[k] - e, hi = o->max[k] + e, d = lb[k] - la[k];
        if (fabs(d) < 1e-15) {
            if (la[k] < lo || la[k] > hi)
                return 0;
            continue;
        }
        double ta = (lo - la[k]) / d, tb = (hi - la[k]) / d;
        if (ta > tb) {
            double s = ta;
            ta = tb;
            tb = s;
        }
        t0 = fmax(t0, ta);
        t1 = fmin(t1, tb);
        if (t0 > t1)
            return 0;
    }
    return 1;
}

/* A world point is a visibility witness when it is well inside the view and its sight line
 * from the near plane misses every occluder. */
static int witness(const fz_view *v, const fz_box *occ, int n_occ, const double p[3])
{
    double ndc[3];
    if (!project(v, p, ndc))
        return 0;
    const double m = 1e-3;
    if (fabs(ndc[0]) > 1 - m || fabs(ndc[1]) > 1 - m)
        return 0;
    double lo = fmin(v->near_ndc, v->far_ndc), hi = fmax(v->near_ndc, v->far_ndc);
    double range = hi - lo;
    if (ndc[2] < lo + m * range || ndc[2] > hi - m * range)
        return 0;
    double near_ndc[3] = { ndc[0], ndc[1], v->near_ndc }, q[3];
    unproject(v, near_ndc, q);
    for (int i = 0; i < 3; i++)
        if (!isfinite(q[i]))
            return 0;
    for (int i = 0; i < n_occ; i++)
        if (segment_hits_box(&occ[i], q, p, 1.0 - 1e-4))
            return 0;
    return 1;
}

/* Samples the surface of a local box under matrix m: a grid on each face. */
static int box_has_witness(const fz_view *v, const fz_box *occ, int n_occ, const double mn[3], const double mx[3],
                           const double m[16])
{
    for (int face = 0; face < 6; face++) {
        int axis = face / 2;
        for (int i = 0; i < SAMPLES_PER_AXIS; i++)
            for (int j = 0; j < SAMPLES_PER_AXIS; j++) {
                double l[4];
                int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
                l[axis] = face & 1 ? mx[axis] : mn[axis];
                l[a1] = mn[a1] + (mx[a1] - mn[a1]) * i / (SAMPLES_PER_AXIS - 1);
                l[a2] = mn[a2] + (mx[a2] - mn[a2]) * j / (SAMPLES_PER_AXIS - 1);
                l[3] = 1;
                double w[4];
                mat_apply(m, l, w);
                if (witness(v, occ, n_occ, w))
                    return 1;
            }
    }
    return 0;
}

static int sphere_has_witness(const fz_view *v, const fz_box *occ, int n_occ, const double c[3], double r,
                              const double m[16])
{
    for (int i = 0; i < 2 * SAMPLES_PER_AXIS; i++)
        for (int j = 0; j < 2 * SAMPLES_PER_AXIS; j++) {
            double th = 3.14159265358979 * (i + 0.5) / (2 * SAMPLES_PER_AXIS);
            double ph = 6.28318530717959 * j / (2 * SAMPLES_PER_AXIS);
            double l[4] = { c[0] + r * sin(th) * cos(ph), c[1] + r * sin(th) * sin(ph), c[2] + r * cos(th), 1 };
            double w[4];
            mat_apply(m, l, w);
            if (witness(v, occ, n_occ, w))
                return 1;
        }
    return 0;
}

/* ---- convex and mesh occluders ----------------------------------------------------------- */

/* A convex solid (the box's planes, maybe one left out, and up to three cuts), a closed
 * box mesh (an index maybe broken) or an open mesh of random triangles, decoded, added and,
 * when accepted, set up for the reference (b->min/max hold the box, mf the matrix the
 * library got). A refusal must carry the right code and change nothing. */
static rv_result add_shape(fz_input *in, rv_occlusion *occ, fz_box *b, const float mn[3], const float mx[3],
                           const float mf[16])
{
    int hostile = 0, finite = 1, malformed = 0;
    for (int k = 0; k < 16; k++) {
        finite = finite && isfinite(mf[k]);
        b->m[k] = mf[k]; /* the matrix as given: a flat one is not thickened here */
    }
    for (int k = 0; k < 3; k++)
        finite = finite && isfinite(mn[k]) && isfinite(mx[k]);
    rv_occlusion_stats before = rv_occlusion_get_stats(occ);
    rv_result r;
    if (b->kind == SHAPE_CONVEX) {
        float planes[MAX_PLANES][4];
        uint32_t n = 0;
        uint8_t drop = u8(in);
        for (int a = 0; a < 6; a++) {
            if (drop < 24 && drop % 6 == a)
                continue; /* one side open: unbounded unless a cut closes it */
            float q[4] = { 0, 0, 0, a & 1 ? mx[a / 2] : -mn[a / 2] };
            q[a / 2] = a & 1 ? 1.0f : -1.0f;
            memcpy(planes[n++], q, sizeof q);
        }
        int cuts = u8(in) % 4;
        for (int c = 0; c < cuts; c++) {
            float q[4] = { num(in, -1, 1, &hostile), num(in, -1, 1, &hostile), num(in, -1, 1, &hostile), 0 };
            double reach = 0, at = 0;
            for (int k = 0; k < 3; k++) {
                reach += fabs(q[k]) * 0.5 * ((double)mx[k] - mn[k]);
                at += q[k] * 0.5 * ((double)mx[k] + mn[k]);
            }
            q[3] = (float)(at + reach * num(in, -0.2f, 1.2f, &hostile));
            finite = finite && isfinite(q[0] + q[1] + q[2] + q[3]);
            malformed = malformed || (q[0] == 0 && q[1] == 0 && q[2] == 0);
            memcpy(planes[n++], q, sizeof q);
        }
        uint32_t flags = u8(in) & 1 ? RV_OCCLUDER_EXACT : 0;
        rv_occluder_convex c = { (const float (*)[4])planes, n, flags };
        r = rv_occlusion_add_convex(occ, &c, mf);
        if (!finite)
            FZ_ASSERT(r == RV_ERR_NOT_FINITE || r == RV_ERR_INVALID_ARG, "a non-finite convex returned %s",
                      rv_result_string(r));
        else if (malformed)
            FZ_ASSERT(r == RV_ERR_INVALID_ARG, "a zero normal returned %s", rv_result_string(r));
        else
            FZ_ASSERT(r == RV_OK || r == RV_ERR_INVALID_ARG, "a convex returned %s", rv_result_string(r));
        if (r == RV_OK) {
            b->plane_count = n;
            for (uint32_t k = 0; k < n; k++)
                for (int i = 0; i < 4; i++)
                    b->planes[k][i] = planes[k][i];
            b->invertible = mat_inverse(b->m, b->inv);
        }
    } else {
        float pos[MAX_GRID_VERTS][3];
        uint32_t idx[3 * MAX_MESH_TRIS], nv = 8, ni = 36, flags = RV_OCCLUDER_CLOSED;
        if (b->kind == SHAPE_GRID_MESH) {
            /* nx x ny quads over the box's xy extent, heights from the input (flat, or each
             * vertex its own: folds), a column left out (a slit) or repeated (the same
             * positions under other indices), either diagonal; any flags but EXACT alone. */
            uint32_t nx = 1 + u8(in) % MAX_GRID, ny = 1 + u8(in) % MAX_GRID, row = nx + 1;
            uint8_t style = u8(in), gap = u8(in);
            nv = 0;
            for (uint32_t y = 0; y <= ny; y++)
                for (uint32_t x = 0; x <= nx; x++) {
                    float h = style & 1 ? num(in, 0, 1, &hostile) : 0.5f;
                    pos[nv][0] = mn[0] + (mx[0] - mn[0]) * (float)x / (float)nx;
                    pos[nv][1] = mn[1] + (mx[1] - mn[1]) * (float)y / (float)ny;
                    pos[nv][2] = mn[2] + (mx[2] - mn[2]) * h;
                    finite = finite && isfinite(pos[nv][0]) && isfinite(pos[nv][1]) && isfinite(pos[nv][2]);
                    nv++;
                }
            uint32_t column = gap % (nx + 1), twin = nv;
            bool slit = (gap >> 4) == 1, seam = (gap >> 4) == 2 && column > 0;
            if (seam)
                for (uint32_t y = 0; y <= ny; y++)
                    memcpy(pos[nv++], pos[y * row + column], sizeof pos[0]);
            ni = 0;
            for (uint32_t y = 0; y < ny; y++)
                for (uint32_t x = 0; x < nx; x++) {
                    if (slit && x == column)
                        continue;
                    uint32_t a = y * row + x, c = a + row, a1 = a + 1, c1 = c + 1;
                    if (seam && x == column) {
                        a = twin + y;
                        c = a + 1;
                    }
                    uint32_t t[6] = { a, a1, c1, a, c1, c };
                    if ((style >> 1) & 1) {
                        uint32_t u[6] = { a, a1, c, a1, c1, c };
                        memcpy(t, u, sizeof t);
                    }
                    memcpy(idx + ni, t, sizeof t);
                    ni += 6;
                }
            if (!ni) {
                uint32_t t[3] = { 0, 1, row };
                memcpy(idx, t, sizeof t);
                ni = 3;
            }
            flags = (style >> 2) % 3 == 0 ? 0 : (style >> 2) % 3 == 1 ? RV_OCCLUDER_CLOSED
                                                                        : RV_OCCLUDER_CLOSED | RV_OCCLUDER_EXACT;
        } else if (b->kind == SHAPE_CLOSED_MESH) {
            for (int k = 0; k < 8; k++)
                for (int i = 0; i < 3; i++)
                    pos[k][i] = (k >> i) & 1 ? mx[i] : mn[i];
            memcpy(idx, CUBE_INDICES, sizeof CUBE_INDICES);
            uint8_t broken = u8(in);
            if (broken < 36)
                idx[broken] = u8(in) % 10; /* 8 and 9 out of range; others reorder or degenerate */
            malformed = broken < 36 && idx[broken] >= 8;
            flags |= u8(in) & 1 ? RV_OCCLUDER_EXACT : 0;
        } else {
            nv = 3 + u8(in) % (MAX_VERTS - 2);
            for (uint32_t k = 0; k < nv; k++)
                for (int i = 0; i < 3; i++) {
                    pos[k][i] = mn[i] + (mx[i] - mn[i]) * num(in, 0, 1, &hostile);
                    finite = finite && isfinite(pos[k][i]);
                }
            ni = 3 * (1 + u8(in) % MAX_TRIS);
            for (uint32_t k = 0; k < ni; k++) {
                idx[k] = u8(in) % (nv + 1); /* nv: out of range */
                malformed = malformed || idx[k] >= nv;
            }
            flags = u8(in) == 7 ? RV_OCCLUDER_EXACT : 0; /* exact without closed: refused */
            malformed = malformed || flags;
        }
        rv_occluder_mesh m = { (const float (*)[3])pos, nv, idx, ni, flags };
        r = rv_occlusion_add_mesh(occ, &m, mf);
        if (malformed)
            FZ_ASSERT(r == RV_ERR_INVALID_ARG || (!finite && r == RV_ERR_NOT_FINITE), "a malformed mesh returned %s",
                      rv_result_string(r));
        else if (!finite)
            FZ_ASSERT(r == RV_ERR_NOT_FINITE, "a non-finite mesh returned %s", rv_result_string(r));
        else
            FZ_ASSERT(r == RV_OK, "a valid mesh returned %s", rv_result_string(r));
        if (r == RV_OK) {
            b->tri_count = ni / 3;
            for (uint32_t t = 0; t < ni / 3; t++)
                for (int k = 0; k < 3; k++) {
                    const float *l = pos[idx[3 * t + k]];
                    double lh[4] = { l[0], l[1], l[2], 1 }, w[4];
                    mat_apply(b->m, lh, w);
                    memcpy(b->tri[t][k], w, sizeof b->tri[t][k]);
                }
        }
    }
    rv_occlusion_stats after = rv_occlusion_get_stats(occ);
    if (r != RV_OK)
        FZ_ASSERT(after.occluders_submitted == before.occluders_submitted &&
                      after.triangles_submitted == before.triangles_submitted,
                  "a refused shape was counted");
    else
        FZ_ASSERT(after.occluders_submitted == before.occluders_submitted + 1, "an accepted shape was not counted");
    return r;
}

/* The frame's occluders: boxes (some inverted), convex solids and meshes (add_shape), from
 * the input; each accepted one is set up in boxes for the reference. Returns their count. */
static int add_occluders(fz_input *in, rv_occlusion *occ, fz_box *boxes)
{
    int n_occ = 0, count = u8(in) % (MAX_OCCLUDERS + 1);
    rv_result r;
    for (int i = 0; i < count; i++) {
        int hostile = 0;
        fz_box *b = &boxes[n_occ];
        memset(b, 0, sizeof *b);
        for (int k = 0; k < 3; k++) {
            double c = num(in, -6, 6, &hostile), e = num(in, 0, 8, &hostile);
            b->min[k] = c - e;
            b->max[k] = c + e;
        }
        double thick[16];
        decode_affine(in, b->m, 1, &hostile, thick);
        float mn[3], mx[3], mf[16];
        to_float(b->min, mn, 3);
        to_float(b->max, mx, 3);
        to_float(b->m, mf, 16);
        for (int k = 0; k < 3; k++) { /* the reference uses what the library sees */
            b->min[k] = mn[k];
            b->max[k] = mx[k];
        }
        for (int k = 0; k < 16; k++) /* thickened where the library's box is flat */
            b->m[k] = thick[k] == b->m[k] ? (double)mf[k] : thick[k];
        uint8_t kb = u8(in);
        int inverted = (kb & 63) == 0, kind = (kb & 63) <= SHAPE_GRID_MESH ? (kb & 63) : SHAPE_BOX;
        b->kind = kind;
        if (kind != SHAPE_BOX) {
            r = add_shape(in, occ, b, mn, mx, mf);
            if (r != RV_OK)
                continue;
            n_occ++;
            continue;
        }
        rv_occlusion_stats before = rv_occlusion_get_stats(occ);
        if (inverted) {
            float t = mn[0];
            mn[0] = mx[0] + 1.0f;
            mx[0] = t;
        }
        r = rv_occlusion_add_occluder(occ, mn, mx, mf);
        int finite = isfinite(mn[0] + mn[1] + mn[2] + mx[0] + mx[1] + mx[2]);
        for (int k = 0; k < 16; k++)
            finite = finite && isfinite(mf[k]);
        (void)hostile;
        if (!finite)
            FZ_ASSERT(r == RV_ERR_NOT_FINITE || (inverted && r == RV_ERR_INVALID_ARG),
                      "a non-finite occluder returned %s", rv_result_string(r));
        else if (inverted && mn[0] > mx[0])
            FZ_ASSERT(r == RV_ERR_INVALID_ARG, "min > max returned %s", rv_result_string(r));
        else
            FZ_ASSERT(r == RV_OK, "a valid occluder returned %s", rv_result_string(r));
        if (r != RV_OK) { /* refused: not part of the frame, nor of the reference */
            FZ_ASSERT(rv_occlusion_get_stats(occ).occluders_submitted == before.occluders_submitted,
                      "a refused box was counted");
            continue;
        }
        b->invertible = mat_inverse(b->m, b->inv);
        n_occ++;
    }
    return n_occ;
}

/* Objects (boxes and spheres with matrices), tested singly and in batches; each hidden
 * answer is checked against the reference (boxes, n_occ) unless unchecked (a frame fed
 * noise), and hostile numbers for their code and a visible answer. */
static void test_objects(fz_input *in, rv_occlusion *occ, const fz_view *v, const fz_box *boxes, int n_occ,
                         int unchecked)
{
    int n_obj = 1 + u8(in) % MAX_OBJECTS;
    float bmin[3][MAX_OBJECTS], bmax[3][MAX_OBJECTS], bmat[16 * MAX_OBJECTS];
    float sc[3][MAX_OBJECTS], sr[MAX_OBJECTS];
    int obj_hostile[MAX_OBJECTS];
    double dmat[MAX_OBJECTS][16];
    for (int i = 0; i < n_obj; i++) {
        int hostile = 0;
        for (int k = 0; k < 3; k++) {
            float c = num(in, -10, 10, &hostile), e = num(in, 0.01f, 6, &hostile);
            bmin[k][i] = c - e;
            bmax[k][i] = c + e;
            sc[k][i] = c;
        }
        sr[i] = num(in, 0.0f, 6, &hostile);
        decode_affine(in, dmat[i], 0, &hostile, NULL);
        to_float(dmat[i], &bmat[16 * i], 16);
        for (int k = 0; k < 16; k++)
            dmat[i][k] = bmat[16 * i + k];
        obj_hostile[i] = hostile;
    }
    int batch_first = 0;
    rv_occlusion_boxes bx = { { bmin[0], bmin[1], bmin[2] }, { bmax[0], bmax[1], bmax[2] }, bmat };
    rv_occlusion_spheres sp = { { sc[0], sc[1], sc[2] }, sr, bmat };
    uint8_t vis_boxes[MAX_OBJECTS], vis_spheres[MAX_OBJECTS];
    rv_result rb = rv_occlusion_test_boxes(occ, &bx, (uint32_t)batch_first, (uint32_t)n_obj, vis_boxes);
    rv_result rs = rv_occlusion_test_spheres(occ, &sp, (uint32_t)batch_first, (uint32_t)n_obj, vis_spheres);
    FZ_ASSERT(rb == RV_OK || rb == RV_ERR_NOT_FINITE || rb == RV_ERR_INVALID_ARG, "test_boxes returned %s",
              rv_result_string(rb));
    FZ_ASSERT(rs == RV_OK || rs == RV_ERR_NOT_FINITE || rs == RV_ERR_INVALID_ARG, "test_spheres returned %s",
              rv_result_string(rs));
    /* The freeze happened: adds are refused now. */
    float one[3] = { 1, 1, 1 };
    FZ_ASSERT(rv_occlusion_add_occluder(occ, one, one, NULL) == RV_ERR_FROZEN, "an add after a test was accepted");
    for (int i = 0; i < n_obj; i++) {
        float mn[3] = { bmin[0][i], bmin[1][i], bmin[2][i] }, mx[3] = { bmax[0][i], bmax[1][i], bmax[2][i] };
        float c[3] = { sc[0][i], sc[1][i], sc[2][i] };
        bool vb = false, vs = false;
        rv_result r1 = rv_occlusion_test_box(occ, mn, mx, &bmat[16 * i], &vb);
        rv_result r2 = rv_occlusion_test_sphere(occ, c, sr[i], &bmat[16 * i], &vs);
        /* Hostile is what the library gets, not how it was decoded. */
        int mat_ok = 1;
        for (int k = 0; k < 16; k++)
            mat_ok = mat_ok && isfinite(bmat[16 * i + k]);
        int box_ok = mat_ok && isfinite(mn[0] + mn[1] + mn[2] + mx[0] + mx[1] + mx[2]);
        int sphere_ok = mat_ok && isfinite(c[0] + c[1] + c[2] + sr[i]);
        (void)obj_hostile;
        double dmn[3] = { mn[0], mn[1], mn[2] }, dmx[3] = { mx[0], mx[1], mx[2] }, dc[3] = { c[0], c[1], c[2] };
        if (!box_ok)
            FZ_ASSERT(r1 == RV_ERR_NOT_FINITE && vb && vis_boxes[i] && rb != RV_OK,
                      "a non-finite box: %s, visible %d/%d", rv_result_string(r1), vb, vis_boxes[i]);
        else {
            FZ_ASSERT(r1 == RV_OK, "a valid box returned %s", rv_result_string(r1));
            if ((!vb || !vis_boxes[i]) && !unchecked)
                FZ_ASSERT(!box_has_witness(v, boxes, n_occ, dmn, dmx, dmat[i]),
                          "box %d was culled (single %d, batch %d) but a point of it is visible", i, !vb,
                          !vis_boxes[i]);
        }
        if (!sphere_ok)
            FZ_ASSERT(r2 == RV_ERR_NOT_FINITE && vs && vis_spheres[i] && rs != RV_OK,
                      "a non-finite sphere: %s, visible %d/%d", rv_result_string(r2), vs, vis_spheres[i]);
        else {
            FZ_ASSERT(r2 == RV_OK, "a valid sphere returned %s", rv_result_string(r2));
            if ((!vs || !vis_spheres[i]) && !unchecked)
                FZ_ASSERT(!sphere_has_witness(v, boxes, n_occ, dc, sr[i], dmat[i]),
                          "sphere %d was culled (single %d, batch %d) but a point of it is visible", i, !vs,
                          !vis_spheres[i]);
        }
    }
}

/* ---- the target ------------------------------------------------------------------------ */

/* The feed's capacity and settings from the feed section: small capacities (odd sizes),
 * sometimes none; the motion, age and discontinuity settings at their defaults or chosen. A
 * desc the library refuses must be refused with a documented code; the buffer is then made
 * without a feed (every feed answers RV_ERR_CAPACITY). */
static void feed_desc(fz_input *in, rv_occlusion_desc *desc)
{
    uint8_t cap = u8(in);
    desc->feed_max_width = cap < 16 ? 0 : 1 + (cap % 64);
    desc->feed_max_height = cap < 16 ? 0 : 1 + (u8(in) % 64);
    if (cap >= 16 && cap < 24)
        desc->feed_max_height = 0; /* one without the other: refused */
    uint8_t k = u8(in);
    desc->feed_max_translation = k & 1 ? (float)u8(in) / 32.0f : 0.0f;
    desc->feed_max_rotation = k & 2 ? (float)u8(in) / 128.0f : 0.0f;
    desc->feed_discontinuity = k & 4 ? (float)u8(in) / 2550.0f : 0.0f;
    desc->feed_max_age = k & 8 ? u8(in) % 8 : 0;
    if ((k & 0xF0) == 0xF0) { /* hostile settings */
        static const float bad[4] = { NAN, -1.0f, INFINITY, 0.5f };
        desc->feed_max_translation = bad[u8(in) % 4];
        desc->feed_discontinuity = bad[u8(in) % 4];
    }
    rv_occlusion *probe = NULL;
    rv_result r = rv_occlusion_create(desc, &probe);
    if (r == RV_OK) {
        rv_occlusion_destroy(probe);
        return;
    }
    FZ_ASSERT(r == RV_ERR_INVALID_ARG || r == RV_ERR_NOT_FINITE, "a feed desc returned %s", rv_result_string(r));
    FZ_ASSERT(probe == NULL, "a refused create wrote its output");
    desc->feed_max_width = desc->feed_max_height = 0;
    desc->feed_max_translation = desc->feed_max_rotation = desc->feed_discontinuity = 0;
    desc->feed_max_age = 0;
}

static void *fz_alloc_fn(size_t size, void *user) { (void)user; return malloc(size); }
static void fz_free_fn(void *p, size_t size, void *user) { (void)user; (void)size; free(p); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Bytes after the marker "FEED" are the depth-feed section's (fuzz_occlusion_feed.c):
     * the buffer's feed capacity, then one image a frame. Inputs without it mean what they
     * meant before the feed existed. */
    const uint8_t *mark = size >= 4 ? memmem(data, size, "FEED", 4) : NULL;
    fz_input in = { data, mark ? (size_t)(mark - data) : size };
    fz_input feed_in = { mark ? mark + 4 : NULL, mark ? size - (size_t)(mark - data) - 4 : 0 };
    int feeding = mark != NULL;
    rv_occlusion_desc desc = {0};
    desc.allocator = (rv_allocator){ fz_alloc_fn, NULL, fz_free_fn, NULL };
    uint8_t w = u8(&in);
    desc.width = 8 + (uint32_t)w % 120; /* small buffers: more edge texels per object */
    uint8_t mins = u8(&in);
    desc.min_occluder_texels = mins < 64 ? -1.0f : (float)(mins % 8);
    desc.max_occluders = u8(&in) % 6;
    uint32_t fusion = (mins >> 4) & 3u; /* a quarter of the inputs fuse nothing */
    desc.fusion = fusion == 3 ? RV_FUSION_OFF : fusion == 2 ? RV_FUSION_ALWAYS : RV_FUSION_AUTO;
    if (feeding)
        feed_desc(&feed_in, &desc);
    rv_occlusion *occ;
    FZ_ASSERT(rv_occlusion_create(&desc, &occ) == RV_OK, "create failed");
    /* Half the inputs draw every mesh they can by its outline, whatever its size (the
     * path otherwise takes only meshes larger than these small buffers mostly hold). */
    occ->outline.mode = (mins >> 3) & 1;

    for (int frame = 0; frame < 3 && in.n; frame++) {
        fz_view v;
        if (!decode_view(&in, &v))
            break;
        rv_result r = rv_occlusion_begin(occ, v.vpf, v.clip, v.aspect);
        if (r != RV_OK) {
            /* A refused begin drops the frame: adds refused, tests visible. */
            FZ_ASSERT(r == RV_ERR_INVALID_ARG || r == RV_ERR_NOT_FINITE, "begin returned %s", rv_result_string(r));
            float mn[3] = { -1, -1, -1 }, mx[3] = { 1, 1, 1 };
            bool vis = false;
            FZ_ASSERT(rv_occlusion_add_occluder(occ, mn, mx, NULL) == RV_ERR_BAD_STATE, "add after a failed begin");
            FZ_ASSERT(rv_occlusion_test_box(occ, mn, mx, NULL, &vis) == RV_OK && vis, "test after a failed begin");
            if (feeding) {
                rv_depth_feed none = { mn, 1, 1, 0, RV_DEPTH_FLOAT32, false, v.vpf, v.clip, 1 };
                FZ_ASSERT(rv_occlusion_feed_depth(occ, &none) == RV_ERR_BAD_STATE, "a feed after a failed begin");
            }
            continue;
        }
        fz_box boxes[MAX_OCCLUDERS + 1]; /* and the feed's quad */
        int n_occ = add_occluders(&in, occ, boxes);
        /* The depth feed, before the freeze; a used plane joins the reference as a quad. */
        fzo_feed feed;
        memset(&feed, 0, sizeof feed);
        if (feeding) {
            fzo_feed_frame(&feed_in, occ, &desc, &v, &feed, &boxes[n_occ]);
            n_occ += feed.reference;
        }
        test_objects(&in, occ, &v, boxes, n_occ, feed.unknown);
        rv_occlusion_stats st = rv_occlusion_get_stats(occ);
        FZ_ASSERT(st.culled <= st.tests, "more culled than tested");
        FZ_ASSERT(st.occluders_rasterized + st.occluders_hidden + st.occluders_skipped == st.occluders_submitted &&
                      st.skipped_small + st.skipped_offscreen + st.skipped_cap + st.skipped_degenerate +
                              st.skipped_near ==
                          st.occluders_skipped,
                  "occluder counts do not add up (%u + %u + %u != %u)", st.occluders_rasterized, st.occluders_hidden,
                  st.occluders_skipped, st.occluders_submitted);
        FZ_ASSERT(st.triangles_rasterized + st.triangles_hidden + st.triangles_skipped + st.triangles_degenerate ==
                      st.triangles_submitted,
                  "triangle counts do not add up (%u + %u + %u + %u != %u)", st.triangles_rasterized,
                  st.triangles_hidden, st.triangles_skipped, st.triangles_degenerate, st.triangles_submitted);
        if (feeding) {
            fzo_feed_check(occ, &desc, &feed);
            fzf_free(&feed.image);
        }
    }
    rv_occlusion_destroy(occ);
    return 0;
}
