/* Every benchmark group: one function per module file (bench_<module>.c), returning 0 on
 * success and non-zero on an error (never on a missed target). */
#ifndef RVB_CASES_H
#define RVB_CASES_H

#include "bench_util.h"

typedef int (*rvb_case_fn)(rvb_ctx *ctx);
extern const rvb_case_fn rvb_cases[];
extern const size_t rvb_case_count;

#endif
