/* Depth images for the targets that fuzz the depth feed (fuzz_occlusion's feed section,
 * fuzz_world's frames): a feed decoded from the input, in every format and row order, any
 * size up to one texel past the capacity, padded or broken row pitches, misaligned texels,
 * ages, and a view-projection that is the frame's own, moved a little, or broken.
 *
 * The texels are either a plane (window depth affine in NDC x and y, which is what any
 * planar surface looks like in a depth buffer) with some texels spoilt by NaN, infinities,
 * negative or out-of-range values, sky or stencil bits, or noise of every kind. A plane
 * whose depth stays inside (0, 1) at the image's corners is the surface the four corners
 * unproject to, so a reference can treat it as an occluder; spoilt texels only hide less.
 * The decoder also counts what the library must count as invalid and as sky. */
#ifndef RVIS_FUZZ_FEED_H
#define RVIS_FUZZ_FEED_H

#include "rvis.h"
#include "fuzz_support.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a decoded feed is expected to get (bits; 0 = RV_OK). */
enum {
    FZF_BAD_ARG = 1,      /* a documented RV_ERR_INVALID_ARG */
    FZF_BAD_CAPACITY = 2, /* larger than the buffer's capacity */
    FZF_BAD_FINITE = 4,   /* a NaN or infinite matrix */
    FZF_MAYBE_ARG = 8     /* a matrix that may or may not be invertible enough */
};

typedef struct fzf_image {
    uint8_t *mem;          /* malloc'd storage behind feed.texels */
    rv_depth_feed feed;
    float vp[16];          /* the matrix feed.view_projection points to */
    unsigned expect;       /* FZF_* bits */
    int plane;             /* the texels are a plane inside (0, 1) (possibly spoilt) */
    double d0, gx, gy;     /* the plane: depth = d0 + gx * x_ndc + gy * y_ndc */
    uint32_t invalid, sky; /* texels the library must count as invalid and as sky */
} fzf_image;

static inline uint64_t fzf_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The texel's value as the library reads it (window depth as a float). */
static inline float fzf_read(rv_depth_format f, const uint8_t *p)
{
    if (f == RV_DEPTH_FLOAT32) {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    if (f == RV_DEPTH_UNORM16) {
        uint16_t v;
        memcpy(&v, p, 2);
        return (float)v / 65535.0f;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return f == RV_DEPTH_UNORM24 ? (float)(int32_t)(v & 0xFFFFFFu) / 16777215.0f
                                 : (float)(int32_t)(v >> 8) / 16777215.0f;
}

/* Writes depth d (or, for unorm formats, raw bits when raw) at p; junk fills the bits the
 * format ignores. */
static inline void fzf_write(rv_depth_format f, uint8_t *p, double d, int raw, uint32_t bits, uint32_t junk)
{
    if (f == RV_DEPTH_FLOAT32) {
        float v = raw ? 0.0f : (float)d;
        if (raw)
            memcpy(&v, &bits, 4);
        memcpy(p, &v, 4);
    } else if (f == RV_DEPTH_UNORM16) {
        double c = d < 0 ? 0 : d > 1 ? 1 : d;
        uint16_t v = raw ? (uint16_t)bits : (uint16_t)lround(c * 65535.0);
        memcpy(p, &v, 2);
    } else {
        double c = d < 0 ? 0 : d > 1 ? 1 : d;
        uint32_t v = raw ? bits & 0xFFFFFFu : (uint32_t)lround(c * 16777215.0);
        v = f == RV_DEPTH_UNORM24 ? v | junk << 24 : v << 8 | (junk & 0xFFu);
        memcpy(p, &v, 4);
    }
}

/* A spoilt texel's value: NaN, infinities, negative, above 1, exactly 0 or 1, tiny. */
static inline double fzf_hostile(uint64_t r)
{
    static const double bad[10] = { NAN, INFINITY, -INFINITY, -0.5, 1.5, 0.0, 1.0, -1e-30, 1e-38, 1.0000001 };
    return bad[r % 10];
}

/* The feed's matrix: the frame's own (vp, double) times a small rigid motion of the world,
 * or something broken. Returns FZF_* bits for the matrix. */
static inline unsigned fzf_matrix(fz_input *in, const double vp[16], float out[16])
{
    uint8_t kind = u8(in);
    double m[16];
    memcpy(m, vp, sizeof m);
    unsigned expect = 0;
    if (kind < 200) {
        /* vp * T: the camera moved by T's inverse (a turn about a random axis, a step). */
        double ax = (u8(in) - 127.5) / 127.5, ay = (u8(in) - 127.5) / 127.5, az = (u8(in) - 127.5) / 127.5;
        double len = sqrt(ax * ax + ay * ay + az * az), angle = (kind % 8) * 0.02 * (u8(in) % 5);
        if (!(len > 1e-3)) {
            ax = 0, ay = 1, az = 0, len = 1;
        }
        ax /= len, ay /= len, az /= len;
        double c = cos(angle), s = sin(angle), t = 1 - c, step = (kind / 8 % 4) * 0.25 * ((kind & 32) ? -1 : 1);
        double tr[16] = { t * ax * ax + c, t * ax * ay + s * az, t * ax * az - s * ay, 0,
                          t * ax * ay - s * az, t * ay * ay + c, t * ay * az + s * ax, 0,
                          t * ax * az + s * ay, t * ay * az - s * ax, t * az * az + c, 0,
                          step * ax, step * ay, step * az, 1 };
        for (int col = 0; col < 4; col++)
            for (int row = 0; row < 4; row++) {
                double acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += vp[k * 4 + row] * tr[col * 4 + k];
                m[col * 4 + row] = acc;
            }
    } else {
        switch (kind % 8) {
        case 0: memset(m, 0, sizeof m); expect = FZF_BAD_ARG; break;                 /* singular */
        case 1: m[u8(in) % 16] = NAN; expect = FZF_BAD_FINITE; break;
        case 2: m[u8(in) % 16] = -INFINITY; expect = FZF_BAD_FINITE; break;
        case 3: for (int k = 0; k < 4; k++) m[k * 4 + 2] = 0; expect = FZF_MAYBE_ARG; break; /* flat depth */
        case 4: for (int k = 0; k < 16; k++) m[k] *= 1e-30; expect = FZF_MAYBE_ARG; break;
        case 5: for (int k = 0; k < 16; k++) m[k] *= 1e30; expect = FZF_MAYBE_ARG; break; /* may overflow */
        case 6: m[u8(in) % 16] += (u8(in) - 128) * 0.5; expect = FZF_MAYBE_ARG; break;
        default: for (int k = 0; k < 4; k++) m[k * 4 + 3] = (k == 3); expect = FZF_MAYBE_ARG; break; /* w = 1 */
        }
    }
    for (int k = 0; k < 16; k++)
        out[k] = (float)m[k];
    for (int k = 0; k < 16; k++) {
        if (!isfinite(out[k]))
            expect |= FZF_BAD_FINITE;
        else if (fabsf(out[k]) > 1e6f)
            expect |= FZF_MAYBE_ARG; /* a camera 1e30 away: its depth may not vary within float precision */
    }
    return expect;
}

/* Decodes a feed for a buffer of capacity cap_w x cap_h whose frame has view-projection vp
 * (double) and clip. im->mem is malloc'd (free it with fzf_free). */
static inline void fzf_decode(fz_input *in, fzf_image *im, uint32_t cap_w, uint32_t cap_h, const double vp[16],
                              rv_clip clip)
{
    memset(im, 0, sizeof *im);
    rv_depth_feed *fd = &im->feed;
    uint8_t shape = u8(in);
    uint32_t lim_w = cap_w ? cap_w : 16, lim_h = cap_h ? cap_h : 16;
    fd->width = shape < 8 ? (shape & 1 ? 0 : lim_w + 1) : 1 + u8(in) % lim_w;
    fd->height = shape < 8 ? (shape & 2 ? 0 : lim_h + 1) : 1 + u8(in) % lim_h;
    if (shape >= 8 && (shape & 7) == 0) { /* as large as allowed */
        fd->width = lim_w;
        fd->height = lim_h;
    }
    if (fd->width == 0 || fd->height == 0)
        im->expect |= FZF_BAD_ARG;
    if (fd->width > cap_w || fd->height > cap_h)
        im->expect |= FZF_BAD_CAPACITY;
    uint8_t fb = u8(in);
    fd->format = (rv_depth_format)(fb % 5 == 4 ? (fb & 128 ? 4u : 0x7FFFFFFFu) : fb % 5);
    if ((unsigned)fd->format >= RV_DEPTH_FORMAT_COUNT_) {
        im->expect |= FZF_BAD_ARG;
        fd->format = RV_DEPTH_FORMAT_COUNT_; /* an out-of-range value, stored as the enum's */
        if (fb & 64)
            fd->format = (rv_depth_format)-1;
    }
    rv_depth_format f = (unsigned)fd->format < RV_DEPTH_FORMAT_COUNT_ ? fd->format : RV_DEPTH_FLOAT32;
    size_t ts = f == RV_DEPTH_UNORM16 ? 2 : 4, row = (size_t)fd->width * ts;
    fd->rows_bottom_up = fb & 8;
    uint8_t pb = u8(in);
    size_t pitch = row;
    switch (pb % 8) {
    case 0: fd->row_pitch = 0; break;
    case 1: fd->row_pitch = row; break;
    case 2: case 3: fd->row_pitch = pitch = row + ts * (1 + u8(in) % 9); break; /* padded */
    case 4: fd->row_pitch = row ? row - ts : 0; im->expect |= row > ts ? FZF_BAD_ARG : 0; break;
    case 5: fd->row_pitch = row + 1; pitch = row + 1; im->expect |= ts > 1 ? FZF_BAD_ARG : 0; break;
    case 6: fd->row_pitch = SIZE_MAX - SIZE_MAX % ts; pitch = 0; break; /* the size overflows */
    default: fd->row_pitch = pitch = row; break;
    }
    if (pb % 8 == 4 && row <= ts)
        pitch = fd->row_pitch ? fd->row_pitch : row; /* 0 means a whole row: valid */
    if (pb % 8 == 6 && fd->height > 1)
        im->expect |= FZF_BAD_ARG;
    if (pb % 8 == 6 && fd->height <= 1)
        pitch = row; /* one row: only it is read */
    int misaligned = (pb & 8) && !(pb & 16);
    if (misaligned)
        im->expect |= FZF_BAD_ARG;
    size_t bytes = fd->height && pitch ? pitch * (fd->height - 1) + row : row;
    im->mem = malloc(bytes + 8);
    memset(im->mem, 0, bytes + 8);
    uint8_t *base = im->mem + (misaligned ? 1 : 0);
    fd->texels = base;
    fd->clip = clip;
    if (u8(in) == 255) /* another convention than the frame's: the reference follows the feed's */
        fd->clip.reversed_z = !fd->clip.reversed_z;
    uint8_t ab = u8(in);
    fd->age = ab < 200 ? 1 + ab % 3 : ab % 12;
    im->expect |= fzf_matrix(in, vp, im->vp);
    fd->view_projection = im->vp;
    if (u8(in) == 254) {
        fd->texels = NULL;
        im->expect |= FZF_BAD_ARG;
    }

    /* The texels: a plane with some spoilt, or noise. */
    uint8_t tb = u8(in);
    uint64_t seed = (uint64_t)u8(in) << 8 | u8(in) | (uint64_t)tb << 16;
    uint8_t sb = u8(in);
    uint32_t spoil = tb % 4 == 0 ? 0u : 1u << (2 + sb % 10); /* about one texel in 4 * spoil */
    int noise = tb >= 224;
    im->d0 = 0.02 + 0.96 * u8(in) / 255.0;
    im->gx = (u8(in) - 128) / 400.0;
    im->gy = (u8(in) - 128) / 400.0;
    if (tb & 8)
        im->gx = im->gy = 0;
    double lo = im->d0 - fabs(im->gx) - fabs(im->gy), hi = im->d0 + fabs(im->gx) + fabs(im->gy);
    im->plane = !noise && lo > 0 && hi < 1;
    float sky = fd->clip.reversed_z ? 0.0f : 1.0f;
    for (uint32_t y = 0; y < fd->height; y++) {
        double yn = fd->rows_bottom_up ? -1 + (2.0 * y + 1) / fd->height : 1 - (2.0 * y + 1) / fd->height;
        for (uint32_t x = 0; x < fd->width; x++) {
            double xn = -1 + (2.0 * x + 1) / fd->width, d = im->d0 + im->gx * xn + im->gy * yn;
            uint64_t r = fzf_next(&seed);
            int raw = 0;
            if (noise) {
                raw = (r >> 8) % 4 == 0;
                d = (r >> 8) % 4 == 1 ? fzf_hostile(r >> 16) : (double)(r >> 40) / (double)(1ull << 24);
            } else if (spoil && (r & 0xFF) % spoil == 0 && (r >> 8) % 4 == 0) {
                d = fzf_hostile(r >> 16);
                raw = (r >> 24) % 8 == 0;
            }
            uint8_t *p = base + (size_t)y * pitch + (size_t)x * ts;
            fzf_write(f, p, d, raw, (uint32_t)(r >> 32), (uint32_t)(r >> 56));
            float v = fzf_read(f, p);
            im->invalid += !(v >= 0.0f && v <= 1.0f);
            im->sky += v == sky;
        }
    }
}

static inline void fzf_free(fzf_image *im)
{
    free(im->mem);
    im->mem = NULL;
}

/* True when the feed's result is one its decoding allows. */
static inline int fzf_result_ok(const fzf_image *im, rv_result r)
{
    unsigned e = im->expect;
    if (r == RV_ERR_INVALID_ARG)
        return (e & (FZF_BAD_ARG | FZF_MAYBE_ARG)) != 0;
    if (r == RV_ERR_CAPACITY)
        return (e & FZF_BAD_CAPACITY) != 0;
    if (r == RV_ERR_NOT_FINITE)
        return (e & FZF_BAD_FINITE) != 0;
    if (r == RV_OK)
        return (e & ~FZF_MAYBE_ARG) == 0;
    return 0;
}

#endif
