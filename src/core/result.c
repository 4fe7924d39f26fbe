#include "rvis.h"

const char *rv_result_string(rv_result result)
{
    switch (result) {
    case RV_OK: return "RV_OK";
    case RV_ERR_INVALID_ARG: return "RV_ERR_INVALID_ARG";
    case RV_ERR_NOT_FINITE: return "RV_ERR_NOT_FINITE";
    case RV_ERR_STALE_HANDLE: return "RV_ERR_STALE_HANDLE";
    case RV_ERR_CYCLE: return "RV_ERR_CYCLE";
    case RV_ERR_OUT_OF_MEMORY: return "RV_ERR_OUT_OF_MEMORY";
    case RV_ERR_CAPACITY: return "RV_ERR_CAPACITY";
    case RV_ERR_FROZEN: return "RV_ERR_FROZEN";
    case RV_ERR_INVARIANT: return "RV_ERR_INVARIANT";
    case RV_ERR_NOT_FOUND: return "RV_ERR_NOT_FOUND";
    case RV_ERR_DUPLICATE: return "RV_ERR_DUPLICATE";
    case RV_ERR_ORDER: return "RV_ERR_ORDER";
    case RV_ERR_BAD_STATE: return "RV_ERR_BAD_STATE";
    case RV_RESULT_COUNT_: break;
    }
    return "RV_ERR_UNKNOWN";
}
