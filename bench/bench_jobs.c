#define _POSIX_C_SOURCE 200809L
#include "bench_jobs.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define MAX_WORKERS 64
#define SPIN_ROUNDS 8000 /* about 20 us of polling before a helper sleeps or the caller yields */

typedef struct helper_arg {
    struct rvb_jobs *pool;
    uint32_t worker;
} helper_arg;

struct rvb_jobs {
    uint32_t workers;
    pthread_t threads[MAX_WORKERS];
    helper_arg args[MAX_WORKERS];
    uint32_t started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* The current parallel-for: written by the caller before it bumps generation. */
    rv_job_fn job;
    void *context;
    uint32_t count, grain;
    atomic_uint next;        /* start of the next range to hand out */
    atomic_uint finished;    /* helpers done with this generation */
    atomic_ulong generation;
    atomic_bool stop;
};

static inline void pause_briefly(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void run_ranges(rvb_jobs *p, uint32_t worker)
{
    for (;;) {
        uint32_t begin = atomic_fetch_add_explicit(&p->next, p->grain, memory_order_relaxed);
        if (begin >= p->count)
            return;
        uint32_t end = p->count - begin > p->grain ? begin + p->grain : p->count;
        p->job(p->context, worker, begin, end);
    }
}

static void *helper_main(void *arg)
{
    helper_arg *a = arg;
    rvb_jobs *p = a->pool;
    unsigned long seen = 0;
    for (;;) {
        unsigned long g = atomic_load_explicit(&p->generation, memory_order_acquire);
        for (int spin = 0; g == seen && spin < SPIN_ROUNDS && !atomic_load(&p->stop); spin++) {
            pause_briefly();
            g = atomic_load_explicit(&p->generation, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->lock);
            while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        run_ranges(p, a->worker);
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
    }
}

static void parallel_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    rvb_jobs *p = user;
    if (grain == 0)
        grain = 1;
    if (p->workers == 1 || count <= grain) {
        for (uint32_t b = 0; b < count; b += grain)
            job(context, 0, b, count - b > grain ? b + grain : count);
        return;
    }
    p->job = job;
    p->context = context;
    p->count = count;
    p->grain = grain;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_ranges(p, 0);
    /* Wait for the helpers: spin a little, then give the core up (on a loaded machine a
     * helper may not be running yet). */
    for (int spin = 0; atomic_load_explicit(&p->finished, memory_order_acquire) != p->workers - 1; spin++) {
        if (spin < SPIN_ROUNDS)
            pause_briefly();
        else
            sched_yield();
    }
}

rvb_jobs *rvb_jobs_create(uint32_t workers)
{
    if (workers < 1 || workers > MAX_WORKERS)
        return NULL;
    rvb_jobs *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->workers = workers;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    for (uint32_t w = 1; w < workers; w++) {
        p->args[w].pool = p;
        p->args[w].worker = w;
        if (pthread_create(&p->threads[w], NULL, helper_main, &p->args[w]) != 0) {
            rvb_jobs_destroy(p);
            return NULL;
        }
        p->started = w;
    }
    return p;
}

void rvb_jobs_destroy(rvb_jobs *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, true);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t w = 1; w <= p->started; w++)
        pthread_join(p->threads[w], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}

rv_job_system rvb_jobs_system(rvb_jobs *p)
{
    rv_job_system js = { parallel_for, p, p->workers };
    return js;
}
