#include "view.h"

#include <math.h>
#include <string.h>

void rvw_mat4_mul(const float a[16], const float b[16], float out[16])
{
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 4; r++) {
            float s = 0;
            for (int k = 0; k < 4; k++)
                s += a[k * 4 + r] * b[c * 4 + k];
            out[c * 4 + r] = s;
        }
}

static void normalize(float v[3])
{
    float l = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l > 0)
        for (int k = 0; k < 3; k++)
            v[k] /= l;
}

static void cross(const float a[3], const float b[3], float out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* Right-handed look-along: the eye looks down its -Z with +Y up. */
static void look_along(const float eye[3], const float forward[3], float m[16])
{
    float f[3] = { forward[0], forward[1], forward[2] }, up[3] = { 0, 1, 0 }, s[3], u[3];
    normalize(f);
    cross(f, up, s);
    if (s[0] * s[0] + s[1] * s[1] + s[2] * s[2] < 1e-12f) { /* looking straight up or down */
        float alt[3] = { 0, 0, -1 };
        cross(f, alt, s);
    }
    normalize(s);
    cross(s, f, u);
    float v[16] = {
        s[0], u[0], -f[0], 0,
        s[1], u[1], -f[1], 0,
        s[2], u[2], -f[2], 0,
        -(s[0] * eye[0] + s[1] * eye[1] + s[2] * eye[2]),
        -(u[0] * eye[0] + u[1] * eye[1] + u[2] * eye[2]),
        f[0] * eye[0] + f[1] * eye[1] + f[2] * eye[2], 1,
    };
    memcpy(m, v, sizeof v);
}

static void perspective(float fov_y, float aspect, float n, float f, float m[16])
{
    float t = 1.0f / tanf(fov_y / 2);
    memset(m, 0, 16 * sizeof(float));
    m[0] = t / aspect;
    m[5] = t;
    m[10] = (f + n) / (n - f);
    m[11] = -1;
    m[14] = 2 * f * n / (n - f);
}

void rvw_view_make(const rvw_level *level, uint32_t frame, uint32_t width, uint32_t height,
                   rvw_view *out)
{
    rvw_view_from_camera(level, &level->path[frame], frame, width, height, out);
}

void rvw_view_from_camera(const rvw_level *level, const rvw_camera *c, uint32_t frame,
                          uint32_t width, uint32_t height, rvw_view *out)
{
    memset(out, 0, sizeof *out);
    out->frame = frame;
    memcpy(out->eye, c->eye, sizeof out->eye);
    memcpy(out->forward, c->forward, sizeof out->forward);
    out->width = width;
    out->height = height;
    out->fov_y = level->fov_y;
    out->near_plane = level->near_plane;
    out->far_plane = level->far_plane;
    out->time_ms = frame * (1000.0 / 60.0);
    look_along(c->eye, c->forward, out->view);
    perspective(level->fov_y, (float)width / (float)height, level->near_plane, level->far_plane,
                out->projection);
    rvw_mat4_mul(out->projection, out->view, out->view_projection);
}
