/* What a delta must satisfy (journal_validate.h). */
#include "journal_validate.h"
#include "journal.h"
#include "core/check.h"

/* The checks of a transform that need no call: all but whether world-space bounds fit in
 * local space (validate_transform adds that). rvi_transform_needs_check is their
 * branch-free form for the append of an update. */
static rv_result validate_transform_inline(const rv_projection_transform *t)
{
    if (!rvi_transform_finite(t))
        return RV_ERR_NOT_FINITE;
    if (rvi_rotation_negligible(t))
        return RV_ERR_INVALID_ARG;
    if (rvi_radius_negative(t))
        return RV_ERR_INVALID_ARG;
    if (t->bounds_space != RV_BOUNDS_LOCAL && t->bounds_space != RV_BOUNDS_WORLD)
        return RV_ERR_INVALID_ARG;
    if (t->bounds_space == RV_BOUNDS_WORLD && rvi_scale_negligible(t))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

static rv_result validate_transform(const rv_projection_transform *t)
{
    RVI_TRY(validate_transform_inline(t));
    if (t->bounds_space == RV_BOUNDS_WORLD && !rvi_world_bounds_to_local(t, NULL))
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rvi_validate_bucket(const rv_projection_bucket *b, uint64_t key)
{
    if (b->projection_class <= RV_PROJECTION_CLASS_NONE || b->projection_class >= RV_PROJECTION_CLASS_COUNT_)
        return RV_ERR_INVALID_ARG;
    if (b->projection_class == RV_PROJECTION_EQUIPPED_CHILD ? b->parent_key == key : b->parent_key != 0)
        return RV_ERR_INVALID_ARG;
    return RV_OK;
}

rv_result rvi_validate_register(const rv_delta *d)
{
    const rv_projection *p = &d->projection;
    RVI_TRY(validate_transform(&p->transform));
    RVI_TRY(rvi_validate_bucket(&p->bucket, d->key));
    return (p->flags & ~RV_PROJECTION_FLAGS_ALL) ? RV_ERR_INVALID_ARG : RV_OK;
}

rv_result rvi_delta_validate(const rv_delta *d)
{
    const rv_projection *p = &d->projection;
    switch (d->kind) {
    case RV_DELTA_REGISTER:
        return rvi_validate_register(d);
    case RV_DELTA_UPDATE_TRANSFORM:
        return validate_transform(&p->transform);
    case RV_DELTA_UPDATE_FLAGS:
        return (p->flags & ~RV_PROJECTION_FLAGS_ALL) ? RV_ERR_INVALID_ARG : RV_OK;
    case RV_DELTA_REBUCKET:
        return rvi_validate_bucket(&p->bucket, d->key);
    case RV_DELTA_UPDATE_APPEARANCE:
    case RV_DELTA_UNREGISTER:
    case RV_DELTA_CLEAR_GENERATION:
        return RV_OK;
    default:
        return RV_ERR_INVALID_ARG;
    }
}
