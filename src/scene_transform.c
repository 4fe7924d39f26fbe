/* The scene's transform setters and getters (docs/design.md §2, docs/scene.md): position,
 * rotation and scale, a host's local matrix and its decomposition, the in-place pointers.
 * The rest of the scene's calls live in scene.c. */
#include "scene.h"
#include "world.h"
#include "core/check.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The setters' entry checks, in their documented order: values non-NULL
 * (RV_ERR_INVALID_ARG), a live node (rvi_world_node), n finite values (RV_ERR_NOT_FINITE). */
static rv_result setter_entry(rv_world *world, rv_node node, const float *values, uint32_t n, uint32_t *out)
{
    if (!values)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, out));
    return rvi_finite_n(values, n) ? RV_OK : RV_ERR_NOT_FINITE;
}

rv_result rv_node_set_position(rv_world *world, rv_node node, const float position[3])
{
    uint32_t i;
    RVI_TRY(setter_entry(world, node, position, 3, &i));
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    memcpy(s->position[i], position, 12);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

/* A rotation (quaternion x, y, z, w, unit) and signed scales whose product is the linear
 * part a (column-major 3 x 3): exact up to rounding when a's columns are orthogonal; under
 * shear the columns' directions are taken as they are and the quaternion normalised, an
 * approximation (the node's transform stays the matrix itself). A zero column takes its
 * direction from the other two; with fewer than two nonzero columns the rotation is the
 * identity. */
static void decompose_linear(const float a[9], float q[4], float scale[3])
{
    double e[3][3], len[3];
    int nonzero = 0;
    for (int c = 0; c < 3; c++) {
        len[c] = sqrt((double)a[c * 3] * a[c * 3] + (double)a[c * 3 + 1] * a[c * 3 + 1] +
                      (double)a[c * 3 + 2] * a[c * 3 + 2]);
        for (int r = 0; r < 3; r++)
            e[c][r] = len[c] > 0.0 ? a[c * 3 + r] / len[c] : 0.0;
        nonzero += len[c] > 0.0;
    }
    double det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) - e[1][0] * (e[0][1] * e[2][2] - e[0][2] * e[2][1]) +
                 e[2][0] * (e[0][1] * e[1][2] - e[0][2] * e[1][1]);
    if (det < 0.0) { /* a mirror: the x axis takes the sign, as a negative x scale would */
        len[0] = -len[0];
        for (int r = 0; r < 3; r++)
            e[0][r] = -e[0][r];
    }
    if (nonzero == 2) {
        int k = len[0] == 0.0 ? 0 : len[1] == 0.0 ? 1 : 2, u = (k + 1) % 3, v = (k + 2) % 3;
        double x[3] = { e[u][1] * e[v][2] - e[u][2] * e[v][1], e[u][2] * e[v][0] - e[u][0] * e[v][2],
                        e[u][0] * e[v][1] - e[u][1] * e[v][0] };
        double n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        nonzero = n > 0.0 ? 3 : 0;
        for (int r = 0; r < 3; r++)
            e[k][r] = n > 0.0 ? x[r] / n : 0.0;
    }
    double w = 1.0, x = 0.0, y = 0.0, z = 0.0;
    if (nonzero == 3) { /* Shepperd's method on m[row][col] = e[col][row] */
        double m00 = e[0][0], m11 = e[1][1], m22 = e[2][2], t = m00 + m11 + m22;
        if (t > 0.0) {
            double k = 2.0 * sqrt(t + 1.0);
            w = 0.25 * k, x = (e[1][2] - e[2][1]) / k, y = (e[2][0] - e[0][2]) / k, z = (e[0][1] - e[1][0]) / k;
        } else if (m00 > m11 && m00 > m22) {
            double k = 2.0 * sqrt(1.0 + m00 - m11 - m22);
            w = (e[1][2] - e[2][1]) / k, x = 0.25 * k, y = (e[1][0] + e[0][1]) / k, z = (e[2][0] + e[0][2]) / k;
        } else if (m11 > m22) {
            double k = 2.0 * sqrt(1.0 + m11 - m00 - m22);
            w = (e[2][0] - e[0][2]) / k, x = (e[1][0] + e[0][1]) / k, y = 0.25 * k, z = (e[2][1] + e[1][2]) / k;
        } else {
            double k = 2.0 * sqrt(1.0 + m22 - m00 - m11);
            w = (e[0][1] - e[1][0]) / k, x = (e[2][0] + e[0][2]) / k, y = (e[2][1] + e[1][2]) / k, z = 0.25 * k;
        }
        double n = sqrt(w * w + x * x + y * y + z * z);
        if (n > 0.0 && isfinite(n))
            w /= n, x /= n, y /= n, z /= n;
        else
            w = 1.0, x = y = z = 0.0;
    }
    q[0] = (float)x, q[1] = (float)y, q[2] = (float)z, q[3] = (float)w;
    for (int c = 0; c < 3; c++) /* a column longer than FLT_MAX reads as FLT_MAX: the scale
                                   setters' own range, so a rotation set later composes */
        scale[c] = (float)(len[c] > FLT_MAX ? FLT_MAX : len[c] < -FLT_MAX ? -FLT_MAX : len[c]);
}

/* A setter returns a node holding a matrix to a rotation and scale: the matrix's own, read
 * again from it (the slots may hold what the host wrote through pointers fetched before the
 * node took the matrix, which are ignored while it holds one), before the setter changes
 * its part. */
static void leave_matrix(rvi_scene *s, uint32_t i)
{
    if (!(s->flags[i] & RVI_NODE_LOCAL_MATRIX))
        return;
    decompose_linear(s->local_linear[i], s->rotation[i], s->scale[i]);
    s->flags[i] &= ~(uint32_t)RVI_NODE_LOCAL_MATRIX;
}

rv_result rv_node_set_scale(rv_world *world, rv_node node, const float scale[3])
{
    uint32_t i;
    RVI_TRY(setter_entry(world, node, scale, 3, &i));
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->scale[i], scale, 12);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

/* Normalises q (finite, with a normal component, so n2 > 0) into out, in double precision
 * so tiny quaternions survive. */
static void normalise_quat(const float q[4], float out[4])
{
    double n2 = (double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3];
    double inv = 1.0 / sqrt(n2);
    for (int k = 0; k < 4; k++)
        out[k] = (float)(q[k] * inv);
}

rv_result rv_node_set_rotation(rv_world *world, rv_node node, const float quaternion[4])
{
    uint32_t i;
    RVI_TRY(setter_entry(world, node, quaternion, 4, &i));
    if (rvi_negligible_n(quaternion, 4))
        return RV_ERR_INVALID_ARG;
    float q[4];
    normalise_quat(quaternion, q);
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->rotation[i], q, 16);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_set_rotation_axis_angle(rv_world *world, rv_node node, const float axis[3], float radians)
{
    uint32_t i;
    RVI_TRY(setter_entry(world, node, axis, 3, &i));
    if (!isfinite(radians))
        return RV_ERR_NOT_FINITE;
    if (rvi_negligible_n(axis, 3))
        return RV_ERR_INVALID_ARG;
    double len = sqrt((double)axis[0] * axis[0] + (double)axis[1] * axis[1] + (double)axis[2] * axis[2]); /* > 0 */
    double half = 0.5 * (double)radians, k = sin(half) / len;
    float q[4] = { (float)(axis[0] * k), (float)(axis[1] * k), (float)(axis[2] * k), (float)cos(half) };
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    leave_matrix(s, i);
    memcpy(s->rotation[i], q, 16);
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_set_local_matrix(rv_world *world, rv_node node, const float matrix[16])
{
    uint32_t i;
    RVI_TRY(setter_entry(world, node, matrix, 16, &i));
    if (matrix[3] != 0.0f || matrix[7] != 0.0f || matrix[11] != 0.0f || matrix[15] != 1.0f)
        return RV_ERR_INVALID_ARG; /* not affine */
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    RVI_TRY(rvi_scene_enable_local_linear(s, &world->heap));
    float *a = s->local_linear[i];
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            a[c * 3 + r] = matrix[c * 4 + r];
    memcpy(s->position[i], &matrix[12], 12);
    decompose_linear(a, s->rotation[i], s->scale[i]);
    s->flags[i] |= RVI_NODE_LOCAL_MATRIX;
    rvi_scene_mark(s, i, RVI_NODE_MOVED);
    return RV_OK;
}

rv_result rv_node_get_local_matrix(const rv_world *world, rv_node node, float out[16])
{
    uint32_t i;
    if (!out)
        return RV_ERR_INVALID_ARG;
    RVI_TRY(rvi_world_node(world, node, &i));
    float l[12];
    rvi_scene_local_affine(&world->scene, i, l);
    for (int c = 0; c < 4; c++) {
        memcpy(&out[c * 4], &l[c * 3], 12);
        out[c * 4 + 3] = c == 3 ? 1.0f : 0.0f;
    }
    return RV_OK;
}

rv_result rv_node_get_transform(const rv_world *world, rv_node node, float position[3],
                                float quaternion[4], float scale[3])
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    const rvi_scene *s = &world->scene;
    float q[4], sc[3];
    memcpy(q, s->rotation[i], 16);
    memcpy(sc, s->scale[i], 12);
    if (s->flags[i] & RVI_NODE_LOCAL_MATRIX) /* the matrix's, whatever the slots hold */
        decompose_linear(s->local_linear[i], q, sc);
    if (position)
        memcpy(position, s->position[i], 12);
    if (quaternion)
        memcpy(quaternion, q, 16);
    if (scale)
        memcpy(scale, sc, 12);
    return RV_OK;
}

rv_result rv_node_transform_ptrs(rv_world *world, rv_node node, float **position,
                                 float **quaternion, float **scale)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    rvi_scene *s = &world->scene;
    RVI_TRY(rvi_scene_host_may_move(s, i));
    if ((quaternion || scale) && (s->flags[i] & RVI_NODE_LOCAL_MATRIX))
        return RV_ERR_BAD_STATE; /* the node's rotation and scale are its matrix's */
    if (position)
        *position = s->position[i];
    if (quaternion)
        *quaternion = s->rotation[i];
    if (scale)
        *scale = s->scale[i];
    return RV_OK;
}

rv_result rv_node_mark_moved(rv_world *world, rv_node node)
{
    uint32_t i;
    RVI_TRY(rvi_world_node(world, node, &i));
    rvi_scene_mark(&world->scene, i, RVI_NODE_MOVED);
    return RV_OK;
}
