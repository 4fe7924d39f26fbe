/* rvis-bench support: a small pthread job system handed to worlds as rv_world_desc.jobs.
 * The calling thread is worker 0 and takes ranges too; workers - 1 threads wait for work,
 * spinning briefly before they sleep (a frame hands out several parallel-fors in a row). */
#ifndef RVB_JOBS_H
#define RVB_JOBS_H

#include "rvis.h"

typedef struct rvb_jobs rvb_jobs;

/* workers >= 1 (1: every range runs on the calling thread). NULL when out of resources. */
rvb_jobs *rvb_jobs_create(uint32_t workers);
/* Stops and joins the threads. NULL is ignored. */
void rvb_jobs_destroy(rvb_jobs *jobs);
/* The rv_job_system that runs on this pool (max_workers = its worker count). */
rv_job_system rvb_jobs_system(rvb_jobs *jobs);

#endif
