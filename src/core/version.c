#include "rvis.h"

/* Compiled into the library: a program built against other headers sees the difference. */
uint32_t rv_version(void)
{
    return RV_VERSION;
}
