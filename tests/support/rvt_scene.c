#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "support/rvt_scene.h"

#include <cglm/cglm.h>
#include <math.h>
#include <string.h>

rv_world *rvt_world(const rv_world_desc *desc)
{
    rv_world *w = NULL;
    assert_int_equal(rv_world_create(desc, &w), RV_OK);
    return w;
}

rv_world *rvt_world_lod(const rv_lod_desc *lod)
{
    rv_world_desc desc = { 0 };
    if (lod)
        desc.lod = *lod;
    return rvt_world(&desc);
}

rv_world *rvt_world_occlusion(uint32_t width)
{
    rv_world_desc desc = { 0 };
    desc.occlusion.width = width;
    return rvt_world(&desc);
}

rv_node rvt_node(rv_world *w, rv_node parent)
{
    rv_node n;
    assert_int_equal(rv_node_create(w, parent, &n), RV_OK);
    return n;
}

void rvt_set_position(rv_world *w, rv_node n, float x, float y, float z)
{
    const float p[3] = { x, y, z };
    assert_int_equal(rv_node_set_position(w, n, p), RV_OK);
}

void rvt_set_sphere(rv_world *w, rv_node n, float radius)
{
    const float c[3] = { 0, 0, 0 };
    assert_int_equal(rv_node_set_bounds(w, n, c, radius), RV_OK);
}

rv_node rvt_object(rv_world *w, rv_node parent, float x, float y, float z, float radius)
{
    rv_node n = rvt_node(w, parent);
    rvt_set_position(w, n, x, y, z);
    if (radius >= 0.0f)
        rvt_set_sphere(w, n, radius);
    return n;
}

void rvt_look_at(const float eye[3], const float target[3], float view[16])
{
    float f[3] = { target[0] - eye[0], target[1] - eye[1], target[2] - eye[2] };
    float fl = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= fl;
    float up[3] = { 0, 1, 0 };
    if (fabsf(f[1]) > 0.99f) {
        up[1] = 0;
        up[2] = 1;
    }
    float s[3] = { f[1] * up[2] - f[2] * up[1], f[2] * up[0] - f[0] * up[2], f[0] * up[1] - f[1] * up[0] };
    float sl = sqrtf(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    for (int k = 0; k < 3; k++)
        s[k] /= sl;
    float u[3] = { s[1] * f[2] - s[2] * f[1], s[2] * f[0] - s[0] * f[2], s[0] * f[1] - s[1] * f[0] };
    const float v[16] = { s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
                          -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]),
                          -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
                          f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1 };
    memcpy(view, v, sizeof v);
}

void rvt_perspective(float fov_y, float aspect, float near, float far, float projection[16])
{
    float t = 1.0f / tanf(fov_y / 2);
    const float p[16] = { t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (far + near) / (near - far), -1,
                          0, 0, 2 * far * near / (near - far), 0 };
    memcpy(projection, p, sizeof p);
}

void rvt_camera_make(rvt_camera *c, const float eye[3], const float target[3], float fov_y, double time_ms)
{
    rvt_look_at(eye, target, c->view);
    rvt_perspective(fov_y, 16.0f / 9.0f, 0.1f, 1000.0f, c->projection);
    memset(&c->v, 0, sizeof c->v);
    c->v.view = c->view;
    c->v.projection = c->projection;
    c->v.viewport_width = 1280;
    c->v.viewport_height = 720;
    c->v.time_ms = time_ms;
}

rv_frustum rvt_frustum(const float eye[3], const float target[3], float fov_y, float far)
{
    mat4 proj, view, vp;
    vec3 e = { eye[0], eye[1], eye[2] }, t = { target[0], target[1], target[2] }, up = { 0, 1, 0 };
    glm_perspective(fov_y, 16.0f / 9.0f, 0.1f, far, proj);
    glm_lookat(e, t, up, view);
    glm_mat4_mul(proj, view, vp);
    rv_frustum f;
    assert_int_equal(rv_frustum_from_view_projection((const float *)vp, (rv_clip){ 0 }, &f), RV_OK);
    return f;
}
