/* Job systems for the tests: a pthread pool (the calling thread is worker 0, workers - 1
 * threads wait on a condition variable; everything shared is under one mutex, so
 * ThreadSanitizer sees every hand-over), and hosts that run every range on the calling
 * thread in an order and split of their own, to show the frame does not depend on them. */
#ifndef RVT_JOBS_H
#define RVT_JOBS_H

#include "rvis.h"

typedef struct rvt_pool rvt_pool;

/* workers >= 1; NULL when threads could not be made. */
rvt_pool *rvt_pool_create(uint32_t workers);
void rvt_pool_destroy(rvt_pool *pool);
rv_job_system rvt_pool_jobs(rvt_pool *pool);

/* How a host on the calling thread runs a parallel-for. */
typedef enum rvt_host_order {
    RVT_HOST_FORWARD,     /* ranges of grain in order, worker 0 */
    RVT_HOST_REVERSE,     /* ranges of grain from the last to the first, workers taking turns */
    RVT_HOST_SINGLES,     /* ranges of one item, shuffled, workers taking turns */
    RVT_HOST_WHOLE        /* the whole count as one range, on the last worker */
} rvt_host_order;

typedef struct rvt_host {
    rvt_host_order order;
    uint32_t max_workers;
    uint64_t seed;        /* RVT_HOST_SINGLES' shuffle */
    uint32_t calls;       /* parallel-fors run */
    uint32_t *scratch;    /* RVT_HOST_SINGLES: room for the largest count (grown with realloc) */
    uint32_t scratch_capacity;
    /* Misbehaviour on call number fault_call (1-based; 0 never): */
    /* SWAP runs the second range in place of the first (the item count still adds up).
     * The EXTRA_ faults run every range right and hand over one more that breaks the
     * contract: the first range again on a worker at max_workers, an empty range, a range
     * beyond count. */
    enum { RVT_FAULT_NONE, RVT_FAULT_BAD_WORKER, RVT_FAULT_SKIP, RVT_FAULT_TWICE, RVT_FAULT_SWAP,
           RVT_FAULT_EXTRA_BAD_WORKER, RVT_FAULT_EXTRA_EMPTY, RVT_FAULT_EXTRA_BEYOND } fault;
    uint32_t fault_call;
} rvt_host;

rv_job_system rvt_host_jobs(rvt_host *host);
void rvt_host_free(rvt_host *host);

#endif
