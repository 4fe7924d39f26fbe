/* Internal interface of the frustum module (frustum.c, frustum_simd.c). */
#ifndef RVI_FRUSTUM_H
#define RVI_FRUSTUM_H

#include "rvis.h"

/* The six plane bits of rv_frustum.plane_mask. */
#define RVI_FRUSTUM_ALL_PLANES 0x3Fu

#endif
