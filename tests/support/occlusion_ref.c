/* The occlusion suites' cameras and reference (occlusion_ref.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "support/occlusion_ref.h"
#include "support/rvt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>




void normalize3(double v[3])
{
    double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    v[0] /= l;
    v[1] /= l;
    v[2] /= l;
}

void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* Column-major view-projection of a right-handed look-at camera (looking down -z in view
 * space) under any depth convention; rows x, y, w never depend on the convention. */
void camera_matrix(const camera *c, float out[16])
{
    double f[3] = { c->target[0] - c->eye[0], c->target[1] - c->eye[1], c->target[2] - c->eye[2] };
    normalize3(f);
    double s[3], u[3];
    cross3(f, c->up, s);
    normalize3(s);
    cross3(s, f, u);
    double view[16] = { s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
                        -(s[0] * c->eye[0] + s[1] * c->eye[1] + s[2] * c->eye[2]),
                        -(u[0] * c->eye[0] + u[1] * c->eye[1] + u[2] * c->eye[2]),
                        f[0] * c->eye[0] + f[1] * c->eye[1] + f[2] * c->eye[2], 1 };
    double p[16] = { 0 };
    double n = c->znear, fa = c->zfar;
    bool zo = c->clip.depth_zero_to_one, rev = c->clip.reversed_z, inf = fa <= 0;
    /* NDC depth as a function of view depth d = -z_view: z_ndc = (A z_view + B) / -z_view,
     * chosen so that near -> lo, far -> hi for the convention. */
    double lo = zo ? 0 : -1, hi = 1;
    if (rev) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    if (c->ortho_height > 0) {
        double h = c->ortho_height / 2, w = h * c->aspect;
        double far = inf ? 1e4 : fa;
        p[0] = 1 / w;
        p[5] = 1 / h;
        /* z_ndc = lo + (hi - lo) (d - n) / (far - n), d = -z_view */
        p[10] = -(hi - lo) / (far - n);
        p[14] = lo - (hi - lo) * n / (far - n);
        p[15] = 1;
    } else {
        double t = 1 / tan(c->fov_y / 2);
        p[0] = t / c->aspect;
        p[5] = t;
        p[11] = -1;
        if (inf) {
            /* z_ndc -> hi as d -> inf, lo at d = n: z_ndc = hi + (lo - hi) n / d */
            p[10] = -hi;
            p[14] = (lo - hi) * n;
        } else {
            /* z_ndc = a + b / d with a + b/n = lo, a + b/fa = hi */
            double b = (lo - hi) / (1 / n - 1 / fa), a = lo - b / n;
            p[10] = -a;
            p[14] = b;
        }
    }
    if (c->shift_w > 0) {
        /* Moves the image by shift[] texels (x right, y down) without moving the eye: clip x
         * and y take a multiple of clip w. */
        double sx = 2 * c->shift[0] / c->shift_w, sy = -2 * c->shift[1] / c->shift_h;
        for (int col = 0; col < 4; col++) {
            p[col * 4 + 0] += sx * p[col * 4 + 3];
            p[col * 4 + 1] += sy * p[col * 4 + 3];
        }
    }
    for (int col = 0; col < 4; col++)
        for (int row = 0; row < 4; row++) {
            double acc = 0;
            for (int k = 0; k < 4; k++)
                acc += p[k * 4 + row] * view[col * 4 + k];
            out[col * 4 + row] = (float)acc;
        }
}

camera look(double ex, double ey, double ez, double tx, double ty, double tz)
{
    camera c = { .eye = { ex, ey, ez }, .target = { tx, ty, tz }, .up = { 0, 1, 0 }, .fov_y = 60 * PI / 180,
                  .aspect = 16.0 / 9.0, .znear = 0.1, .zfar = 1000 };
    return c;
}

const rv_clip ref_conventions[4] = { { false, false }, { true, false }, { false, true }, { true, true } };

void random_camera(uint64_t *s, camera *c, double dir[3])
{
    *c = look(rvt_uniform(s, -20, 20), rvt_uniform(s, 0, 10), rvt_uniform(s, -20, 20), 0, 0, 0);
    dir[0] = rvt_uniform(s, -1, 1);
    dir[1] = rvt_uniform(s, -0.4f, 0.4f);
    dir[2] = rvt_uniform(s, -1, 1);
    normalize3(dir);
    for (int i = 0; i < 3; i++)
        c->target[i] = c->eye[i] + 10 * dir[i];
    c->fov_y = rvt_uniform(s, 30, 100) * PI / 180;
    c->aspect = rvt_uniform(s, 0.5f, 2.5f);
    c->znear = rvt_uniform(s, 0.05f, 1);
    c->zfar = rvt_uniform(s, 0, 1) < 0.2f ? 0 : rvt_uniform(s, 100, 2000);
    c->ortho_height = rvt_uniform(s, 0, 1) < 0.15f ? rvt_uniform(s, 5, 40) : 0;
    c->clip = ref_conventions[rvt_next(s) % 4];
}

uint32_t rvt_fine_tests;
rv_fusion rvt_fusion;

rv_occlusion *make_occlusion(uint32_t width)
{
    rv_occlusion_desc desc = { .width = width, .fine_tests = rvt_fine_tests, .fusion = rvt_fusion };
    rv_occlusion *occ = NULL;
    assert_int_equal(rv_occlusion_create(&desc, &occ), RV_OK);
    return occ;
}

void begin_camera(rv_occlusion *occ, const camera *c)
{
    float vp[16];
    camera_matrix(c, vp);
    assert_int_equal(rv_occlusion_begin(occ, vp, c->clip, (float)c->aspect), RV_OK);
}

bool box_visible(rv_occlusion *occ, const float mn[3], const float mx[3], const float *m)
{
    bool v = false;
    assert_int_equal(rv_occlusion_test_box(occ, mn, mx, m, &v), RV_OK);
    return v;
}

/* ---- the reference --------------------------------------------------------------------- */



void ref_box_init(ref_box *b)
{
    /* The bounding sphere of the local bounds, grown by a part in 1e6 (a quick reject only). */
    double lc[3], half2 = 0, scale2 = 1;
    for (int i = 0; i < 3; i++) {
        lc[i] = 0.5 * ((double)b->min[i] + b->max[i]);
        double h = 0.5 * ((double)b->max[i] - b->min[i]);
        half2 += h * h;
    }
    if (b->has_matrix) {
        scale2 = 0;
        for (int a = 0; a < 3; a++) {
            double l2 = 0;
            for (int i = 0; i < 3; i++)
                l2 += (double)b->matrix[a * 4 + i] * b->matrix[a * 4 + i];
            scale2 = fmax(scale2, l2);
        }
    }
    for (int i = 0; i < 3; i++)
        b->centre[i] = b->has_matrix ? (double)b->matrix[i] * lc[0] + (double)b->matrix[4 + i] * lc[1] +
                                           (double)b->matrix[8 + i] * lc[2] + b->matrix[12 + i]
                                     : lc[i];
    b->radius = sqrt(half2 * scale2) * (1 + 1e-6) + 1e-6;
    double m[3][4];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            m[i][j] = b->has_matrix ? b->matrix[j * 4 + i] : (i == j);
    double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                 m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    double r[3][3] = {
        { (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det, (m[0][2] * m[2][1] - m[0][1] * m[2][2]) / det,
          (m[0][1] * m[1][2] - m[0][2] * m[1][1]) / det },
        { (m[1][2] * m[2][0] - m[1][0] * m[2][2]) / det, (m[0][0] * m[2][2] - m[0][2] * m[2][0]) / det,
          (m[0][2] * m[1][0] - m[0][0] * m[1][2]) / det },
        { (m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det, (m[0][1] * m[2][0] - m[0][0] * m[2][1]) / det,
          (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det },
    };
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            b->inv[i * 4 + j] = r[i][j];
        b->inv[i * 4 + 3] = -(r[i][0] * m[0][3] + r[i][1] * m[1][3] + r[i][2] * m[2][3]);
    }
}

void ref_local_to_world(const ref_box *b, const double l[3], double w[3])
{
    for (int i = 0; i < 3; i++)
        w[i] = b->has_matrix ? (double)b->matrix[i] * l[0] + (double)b->matrix[4 + i] * l[1] +
                                   (double)b->matrix[8 + i] * l[2] + (double)b->matrix[12 + i]
                             : l[i];
}

/* Is the segment q -> p (world) crossed by the box's surface at a parameter t in [0, 1)?
 * A renderer drawing every triangle of the box would then show the box, not p. */
/* A point on the surface itself (a decal) is not hidden by it. */
#define REF_END (1 - 1e-9)

/* Entry and exit parameters of the segment against a convex solid's planes. */
static bool convex_blocks(const ref_box *b, const double lq[3], const double lp[3])
{
    double ta = -INFINITY, tb = INFINITY;
    for (uint32_t k = 0; k < b->plane_count; k++) {
        const float *pl = b->planes[k];
        double fq = pl[0] * lq[0] + pl[1] * lq[1] + pl[2] * lq[2] - (double)pl[3];
        double fd = pl[0] * (lp[0] - lq[0]) + pl[1] * (lp[1] - lq[1]) + pl[2] * (lp[2] - lq[2]);
        if (fd == 0) {
            if (fq > 0)
                return false;
            continue;
        }
        double t = -fq / fd;
        if (fd < 0)
            ta = t > ta ? t : ta;
        else
            tb = t < tb ? t : tb;
    }
    if (ta > tb)
        return false;
    return (ta >= 0 && ta < REF_END) || (tb >= 0 && tb < REF_END);
}

/* Any triangle crossed (Moller & Trumbore), edges included with a tolerance far below any
 * gap a test builds, so that a watertight mesh has no numerical cracks. */
static bool mesh_blocks(const ref_box *b, const double lq[3], const double lp[3])
{
    const double tol = 1e-9;
    double d[3] = { lp[0] - lq[0], lp[1] - lq[1], lp[2] - lq[2] };
    for (uint32_t k = 0; k + 2 < b->index_count; k += 3) {
        const float *v0 = b->positions[b->indices[k]], *v1 = b->positions[b->indices[k + 1]];
        const float *v2 = b->positions[b->indices[k + 2]];
        double e1[3], e2[3], s[3];
        for (int i = 0; i < 3; i++) {
            e1[i] = (double)v1[i] - v0[i];
            e2[i] = (double)v2[i] - v0[i];
            s[i] = lq[i] - v0[i];
        }
        double pv[3], qv[3];
        cross3(d, e2, pv);
        double det = e1[0] * pv[0] + e1[1] * pv[1] + e1[2] * pv[2];
        if (det == 0)
            continue; /* the segment runs in the triangle's plane: it shows no area */
        double u = (s[0] * pv[0] + s[1] * pv[1] + s[2] * pv[2]) / det;
        cross3(s, e1, qv);
        double v = (d[0] * qv[0] + d[1] * qv[1] + d[2] * qv[2]) / det;
        double t = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) / det;
        if (u >= -tol && v >= -tol && u + v <= 1 + tol && t >= 0 && t < REF_END)
            return true;
    }
    return false;
}

/* The segment lq -> lp (local) against the box min..max: entry and exit parameters. */
static bool slab_local(const ref_box *b, const double lq[3], const double lp[3], double *ta_out, double *tb_out)
{
    double ta = -INFINITY, tb = INFINITY;
    for (int i = 0; i < 3; i++) {
        double d = lp[i] - lq[i];
        if (d == 0) {
            if (lq[i] < b->min[i] || lq[i] > b->max[i])
                return false;
            continue;
        }
        double t0 = (b->min[i] - lq[i]) / d, t1 = (b->max[i] - lq[i]) / d;
        if (t0 > t1) {
            double t = t0;
            t0 = t1;
            t1 = t;
        }
        ta = t0 > ta ? t0 : ta;
        tb = t1 < tb ? t1 : tb;
    }
    if (ta > tb)
        return false;
    *ta_out = ta;
    *tb_out = tb;
    return true;
}

bool ref_box_slab(const ref_box *b, const double q[3], const double p[3], double *ta, double *tb)
{
    double lq[3], lp[3];
    for (int i = 0; i < 3; i++) {
        lq[i] = b->inv[i * 4] * q[0] + b->inv[i * 4 + 1] * q[1] + b->inv[i * 4 + 2] * q[2] + b->inv[i * 4 + 3];
        lp[i] = b->inv[i * 4] * p[0] + b->inv[i * 4 + 1] * p[1] + b->inv[i * 4 + 2] * p[2] + b->inv[i * 4 + 3];
    }
    return slab_local(b, lq, lp, ta, tb);
}

bool ref_blocks(const ref_box *b, const double q[3], const double p[3])
{
    double lq[3], lp[3];
    for (int i = 0; i < 3; i++) {
        lq[i] = b->inv[i * 4] * q[0] + b->inv[i * 4 + 1] * q[1] + b->inv[i * 4 + 2] * q[2] + b->inv[i * 4 + 3];
        lp[i] = b->inv[i * 4] * p[0] + b->inv[i * 4 + 1] * p[1] + b->inv[i * 4 + 2] * p[2] + b->inv[i * 4 + 3];
    }
    if (b->kind == REF_CONVEX)
        return convex_blocks(b, lq, lp);
    if (b->kind == REF_MESH)
        return mesh_blocks(b, lq, lp);
    double ta, tb;
    if (!slab_local(b, lq, lp, &ta, &tb))
        return false;
    return (ta >= 0 && ta < REF_END) || (tb >= 0 && tb < REF_END);
}

void invert4(const double m[16], double inv[16])
{
    double a[4][8];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++)
            a[r][c] = c < 4 ? m[c * 4 + r] : (c - 4 == r);
    for (int c = 0; c < 4; c++) {
        int piv = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c]))
                piv = r;
        for (int k = 0; k < 8; k++) {
            double t = a[c][k];
            a[c][k] = a[piv][k];
            a[piv][k] = t;
        }
        double d = a[c][c];
        for (int k = 0; k < 8; k++)
            a[c][k] /= d;
        for (int r = 0; r < 4; r++)
            if (r != c) {
                double f = a[r][c];
                for (int k = 0; k < 8; k++)
                    a[r][k] -= f * a[c][k];
            }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            inv[c * 4 + r] = a[r][c + 4];
}

void ref_view_init(ref_view *v, const float vp[16], rv_clip clip)
{
    for (int i = 0; i < 16; i++)
        v->vp[i] = vp[i];
    invert4(v->vp, v->inv);
    v->clip = clip;
}

/* Is world point p seen by the camera past every occluder? In the view volume (the host's
 * float matrix, in double), and no occluder surface between the near plane and p on the
 * ray through p. */
/* Can the segment q -> p meet the shape at all (its bounding sphere)? */
static bool near_segment(const ref_box *b, const double q[3], const double p[3])
{
    double d[3], e[3], dd = 0, t = 0;
    for (int i = 0; i < 3; i++) {
        d[i] = p[i] - q[i];
        e[i] = b->centre[i] - q[i];
        dd += d[i] * d[i];
        t += d[i] * e[i];
    }
    t = dd > 0 ? fmin(fmax(t / dd, 0), 1) : 0;
    double dist2 = 0;
    for (int i = 0; i < 3; i++) {
        double r = q[i] + t * d[i] - b->centre[i];
        dist2 += r * r;
    }
    return dist2 <= b->radius * b->radius;
}

bool ref_point_seen(const ref_view *v, const ref_box *occ, int n_occ, const double p[3])
{
    double c[4];
    for (int r = 0; r < 4; r++)
        c[r] = v->vp[r] * p[0] + v->vp[4 + r] * p[1] + v->vp[8 + r] * p[2] + v->vp[12 + r];
    double w = c[3];
    if (!(w > 0) || fabs(c[0]) > w || fabs(c[1]) > w)
        return false;
    double z = c[2] / w, zn = v->clip.reversed_z ? 1 : v->clip.depth_zero_to_one ? 0 : -1;
    double zf = v->clip.reversed_z ? (v->clip.depth_zero_to_one ? 0 : -1) : 1;
    if (v->clip.reversed_z ? (z > zn || z < zf) : (z < zn || z > zf))
        return false;
    /* The ray's point on the near plane. */
    double cn[4] = { c[0] / w, c[1] / w, zn, 1 }, h[4];
    for (int r = 0; r < 4; r++)
        h[r] = v->inv[r] * cn[0] + v->inv[4 + r] * cn[1] + v->inv[8 + r] * cn[2] + v->inv[12 + r];
    double q[3] = { h[0] / h[3], h[1] / h[3], h[2] / h[3] };
    /* The occluder that blocked the last point first: neighbouring samples of an object are
     * usually hidden by the same one (only speed depends on it). */
    static int last;
    if (last < n_occ && near_segment(&occ[last], q, p) && ref_blocks(&occ[last], q, p))
        return false;
    for (int i = 0; i < n_occ; i++)
        if (i != last && near_segment(&occ[i], q, p) && ref_blocks(&occ[i], q, p)) {
            last = i;
            return false;
        }
    return true;
}

/* Does the reference see any of the object's surface? Samples the 8 corners, points along
 * the 12 edges and jittered grids on the 6 faces. */
bool ref_object_seen(const ref_view *v, const ref_box *occ, int n_occ, const ref_box *obj, uint64_t *seed,
                            int grid)
{
    double l[3], w[3];
    for (int k = 0; k < 8; k++) {
        for (int i = 0; i < 3; i++)
            l[i] = (k >> i) & 1 ? obj->max[i] : obj->min[i];
        ref_local_to_world(obj, l, w);
        if (ref_point_seen(v, occ, n_occ, w))
            return true;
    }
    for (int axis = 0; axis < 3; axis++)
        for (int k = 0; k < 4; k++)
            for (int s = 1; s < grid; s++) {
                int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
                double t = (double)s / grid;
                l[axis] = obj->min[axis] + t * ((double)obj->max[axis] - obj->min[axis]);
                l[a1] = k & 1 ? obj->max[a1] : obj->min[a1];
                l[a2] = k & 2 ? obj->max[a2] : obj->min[a2];
                ref_local_to_world(obj, l, w);
                if (ref_point_seen(v, occ, n_occ, w))
                    return true;
            }
    for (int face = 0; face < 6; face++) {
        int axis = face / 2, a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
        for (int i = 0; i < grid; i++)
            for (int j = 0; j < grid; j++) {
                double u = (i + rvt_uniform(seed, 0, 1)) / grid, t = (j + rvt_uniform(seed, 0, 1)) / grid;
                l[axis] = face & 1 ? obj->max[axis] : obj->min[axis];
                l[a1] = obj->min[a1] + u * ((double)obj->max[a1] - obj->min[a1]);
                l[a2] = obj->min[a2] + t * ((double)obj->max[a2] - obj->min[a2]);
                ref_local_to_world(obj, l, w);
                if (ref_point_seen(v, occ, n_occ, w))
                    return true;
            }
    }
    if (!ref_crosses_near(v, obj))
        return false;
    /* A box reaching before the near plane also shows its cross-section there (the GPU
     * clips what is nearer): jittered points of the near plane just beyond it, inside the
     * box. */
    double zn = v->clip.reversed_z ? 1 : v->clip.depth_zero_to_one ? 0 : -1;
    double zf = v->clip.reversed_z ? (v->clip.depth_zero_to_one ? 0 : -1) : 1;
    int cap = 4 * grid;
    for (int i = 0; i < cap; i++)
        for (int j = 0; j < cap; j++) {
            double cn[4] = { -1 + 2 * (i + rvt_uniform(seed, 0, 1)) / cap, -1 + 2 * (j + rvt_uniform(seed, 0, 1)) / cap,
                             zn + (zf - zn) * 1e-7, 1 },
                   h[4];
            for (int r = 0; r < 4; r++)
                h[r] = v->inv[r] * cn[0] + v->inv[4 + r] * cn[1] + v->inv[8 + r] * cn[2] + v->inv[12 + r];
            if (!(h[3] != 0))
                continue;
            for (int r = 0; r < 3; r++)
                w[r] = h[r] / h[3];
            bool inside = true;
            for (int r = 0; r < 3 && inside; r++) {
                double lr = obj->inv[4 * r] * w[0] + obj->inv[4 * r + 1] * w[1] + obj->inv[4 * r + 2] * w[2] +
                            obj->inv[4 * r + 3];
                inside = lr >= obj->min[r] && lr <= obj->max[r];
            }
            if (inside && ref_point_seen(v, occ, n_occ, w))
                return true;
        }
    return false;
}

void random_rotation(uint64_t *s, double r[3][3])
{
    double axis[3] = { rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1), rvt_uniform(s, -1, 1) };
    if (fabs(axis[0]) + fabs(axis[1]) + fabs(axis[2]) < 1e-3)
        axis[1] = 1;
    normalize3(axis);
    double a = rvt_uniform(s, 0, 6.2831853f), c = cos(a), sn = sin(a), t = 1 - c;
    double x = axis[0], y = axis[1], z = axis[2];
    double m[3][3] = { { t * x * x + c, t * x * y - sn * z, t * x * z + sn * y },
                       { t * x * y + sn * z, t * y * y + c, t * y * z - sn * x },
                       { t * x * z - sn * y, t * y * z + sn * x, t * z * z + c } };
    memcpy(r, m, sizeof m);
}

/* A box of half sizes h around local origin, placed at centre: an AABB, or (with_matrix)
 * rotated and scaled by a matrix. */
void place_box(uint64_t *s, ref_box *b, const double centre[3], const double h[3], bool with_matrix)
{
    memset(b, 0, sizeof *b);
    b->has_matrix = with_matrix;
    if (!with_matrix) {
        for (int i = 0; i < 3; i++) {
            b->min[i] = (float)(centre[i] - h[i]);
            b->max[i] = (float)(centre[i] + h[i]);
        }
    } else {
        double r[3][3];
        random_rotation(s, r);
        double scale[3] = { rvt_uniform(s, 0.5f, 2), rvt_uniform(s, 0.5f, 2), rvt_uniform(s, 0.5f, 2) };
        for (int i = 0; i < 3; i++) {
            b->min[i] = (float)(-h[i] / scale[i]);
            b->max[i] = (float)(h[i] / scale[i]);
        }
        for (int col = 0; col < 3; col++)
            for (int row = 0; row < 3; row++)
                b->matrix[col * 4 + row] = (float)(r[row][col] * scale[col]);
        for (int row = 0; row < 3; row++)
            b->matrix[12 + row] = (float)centre[row];
        b->matrix[15] = 1;
    }
    ref_box_init(b);
}

void place_object_near(uint64_t *s, const ref_box *o, const camera *cam, const double fwd[3], ref_box *obj,
                       bool allow_matrix)
{
    double lc[3] = { 0.5 * ((double)o->min[0] + o->max[0]), 0.5 * ((double)o->min[1] + o->max[1]),
                     0.5 * ((double)o->min[2] + o->max[2]) };
    double oc[3], dir[3];
    ref_local_to_world(o, lc, oc);
    if (cam->ortho_height > 0) {
        memcpy(dir, fwd, sizeof dir);
    } else {
        for (int i = 0; i < 3; i++)
            dir[i] = oc[i] - cam->eye[i];
        normalize3(dir);
    }
    double size = 0;
    for (int i = 0; i < 3; i++)
        size = fmax(size, (double)o->max[i] - o->min[i]);
    double back = rvt_uniform(s, -2, 15), centre[3], h[3];
    for (int i = 0; i < 3; i++) {
        centre[i] = oc[i] + back * dir[i] + rvt_uniform(s, -0.8f, 0.8f) * size;
        h[i] = rvt_uniform(s, 0.02f, 2);
    }
    if (rvt_uniform(s, 0, 1) < 0.05f)
        h[rvt_next(s) % 3] = 0;
    place_box(s, obj, centre, h, allow_matrix && rvt_uniform(s, 0, 1) < 0.6f);
}

bool ref_crosses_near(const ref_view *v, const ref_box *obj)
{
    for (int k = 0; k < 8; k++) {
        double l[3], w[3], c[4];
        for (int i = 0; i < 3; i++)
            l[i] = (k >> i) & 1 ? obj->max[i] : obj->min[i];
        ref_local_to_world(obj, l, w);
        for (int r = 0; r < 4; r++)
            c[r] = v->vp[r] * w[0] + v->vp[4 + r] * w[1] + v->vp[8 + r] * w[2] + v->vp[12 + r];
        double nv = v->clip.reversed_z ? c[3] - c[2] : v->clip.depth_zero_to_one ? c[2] : c[2] + c[3];
        if (!(nv > 0) || !(c[3] > 0))
            return true;
    }
    return false;
}

uint32_t ref_lattice_box(const float min[3], const float max[3], int n, float (*pos)[3], uint32_t *idx,
                         uint32_t *index_count)
{
    static int32_t at[REF_LATTICE_MAX + 1][REF_LATTICE_MAX + 1][REF_LATTICE_MAX + 1];
    uint32_t nv = 0, ni = 0;
    for (int z = 0; z <= n; z++)
        for (int y = 0; y <= n; y++)
            for (int x = 0; x <= n; x++) {
                at[x][y][z] = -1;
                if (x == 0 || y == 0 || z == 0 || x == n || y == n || z == n) {
                    int l[3] = { x, y, z };
                    for (int i = 0; i < 3; i++)
                        pos[nv][i] = l[i] == 0 ? min[i] : l[i] == n ? max[i]
                                                : min[i] + (max[i] - min[i]) * (float)l[i] / (float)n;
                    at[x][y][z] = (int32_t)nv++;
                }
            }
    /* Faces: axis a, side (0 min, 1 max); (u, v) the other axes so that u x v = +a. */
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            int u = (a + 1) % 3, v = (a + 2) % 3;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    uint32_t q[4];
                    for (int k = 0; k < 4; k++) {
                        int l[3];
                        l[a] = side * n;
                        l[u] = i + (k == 1 || k == 2);
                        l[v] = j + (k >= 2);
                        q[k] = (uint32_t)at[l[0]][l[1]][l[2]];
                    }
                    /* q0 (0,0) q1 (1,0) q2 (1,1) q3 (0,1) in (u, v): counter-clockwise about
                     * +a; the min side winds the other way. */
                    uint32_t t[6] = { q[0], q[1], q[2], q[0], q[2], q[3] };
                    if (!side) {
                        t[1] = q[2];
                        t[2] = q[1];
                        t[4] = q[3];
                        t[5] = q[2];
                    }
                    memcpy(idx + ni, t, sizeof t);
                    ni += 6;
                }
        }
    *index_count = ni;
    return nv;
}
