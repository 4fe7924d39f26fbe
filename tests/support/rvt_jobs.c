#define _POSIX_C_SOURCE 200809L
#include "support/rvt_jobs.h"
#include "support/rvt.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- a pthread pool ------------------------------------------------------------------------ */

#define POOL_MAX 64

typedef struct pool_thread {
    struct rvt_pool *pool;
    uint32_t worker;
    pthread_t thread;
} pool_thread;

struct rvt_pool {
    uint32_t workers, started;
    pool_thread threads[POOL_MAX];
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    /* The current parallel-for, under lock. */
    rv_job_fn job;
    void *context;
    uint32_t count, grain, next, running;
    uint64_t generation;
    bool stop;
};

/* Takes ranges until none is left; called with the lock held, returns with it held. */
static void take_ranges(rvt_pool *p, uint32_t worker)
{
    while (p->next < p->count) {
        uint32_t begin = p->next, end = p->count - begin > p->grain ? begin + p->grain : p->count;
        p->next = end;
        rv_job_fn job = p->job;
        void *context = p->context;
        pthread_mutex_unlock(&p->lock);
        job(context, worker, begin, end);
        pthread_mutex_lock(&p->lock);
    }
}

static void *pool_main(void *arg)
{
    pool_thread *t = arg;
    rvt_pool *p = t->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        p->running++;
        take_ranges(p, t->worker);
        if (--p->running == 0)
            pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pool_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    rvt_pool *p = user;
    pthread_mutex_lock(&p->lock);
    p->job = job;
    p->context = context;
    p->count = count;
    p->grain = grain ? grain : 1;
    p->next = 0;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    p->running++;
    take_ranges(p, 0);
    p->running--;
    /* Every range is taken; wait until the helpers that took one are done with it. */
    while (p->running > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

rvt_pool *rvt_pool_create(uint32_t workers)
{
    if (workers < 1 || workers > POOL_MAX)
        return NULL;
    rvt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->workers = workers;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    for (uint32_t w = 1; w < workers; w++) {
        p->threads[w].pool = p;
        p->threads[w].worker = w;
        if (pthread_create(&p->threads[w].thread, NULL, pool_main, &p->threads[w]) != 0) {
            rvt_pool_destroy(p);
            return NULL;
        }
        p->started = w;
    }
    return p;
}

void rvt_pool_destroy(rvt_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t w = 1; w <= p->started; w++)
        pthread_join(p->threads[w].thread, NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

rv_job_system rvt_pool_jobs(rvt_pool *p)
{
    rv_job_system js = { pool_for, p, p->workers };
    return js;
}

/* ---- hosts on the calling thread ----------------------------------------------------------- */

static void host_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    rvt_host *h = user;
    h->calls++;
    bool faulty = h->fault_call == h->calls;
    uint32_t workers = h->max_workers ? h->max_workers : 1;
    if (grain == 0)
        grain = 1;
    uint32_t ranges = (count + grain - 1) / grain;
    switch (h->order) {
    case RVT_HOST_FORWARD:
        for (uint32_t r = 0; r < ranges; r++) {
            uint32_t b = r * grain, e = count - b > grain ? b + grain : count;
            if (faulty && r == 0 && h->fault == RVT_FAULT_SKIP)
                continue;
            if (faulty && r == 0 && h->fault == RVT_FAULT_SWAP && count >= 2 * grain) {
                b = grain;
                e = 2 * grain;
            }
            job(context, faulty && r == 0 && h->fault == RVT_FAULT_BAD_WORKER ? workers : 0, b, e);
            if (faulty && r == 0 && h->fault == RVT_FAULT_TWICE)
                job(context, 0, b, e);
            if (faulty && r == 0 && h->fault == RVT_FAULT_EXTRA_BAD_WORKER)
                job(context, workers, b, e);
            if (faulty && r == 0 && h->fault == RVT_FAULT_EXTRA_EMPTY)
                job(context, 0, b, b);
            if (faulty && r == 0 && h->fault == RVT_FAULT_EXTRA_BEYOND)
                job(context, 0, count, count + 7);
        }
        break;
    case RVT_HOST_REVERSE:
        for (uint32_t r = ranges; r-- > 0;) {
            uint32_t b = r * grain, e = count - b > grain ? b + grain : count;
            job(context, r % workers, b, e);
        }
        break;
    case RVT_HOST_SINGLES:
        if (h->scratch_capacity < count) {
            uint32_t *grown = realloc(h->scratch, sizeof *grown * count);
            if (!grown)
                return; /* the frame's coverage check reports the missing items */
            h->scratch = grown;
            h->scratch_capacity = count;
        }
        for (uint32_t i = 0; i < count; i++)
            h->scratch[i] = i;
        for (uint32_t i = count; i > 1; i--) {
            uint32_t j = (uint32_t)(rvt_next(&h->seed) % i), t = h->scratch[i - 1];
            h->scratch[i - 1] = h->scratch[j];
            h->scratch[j] = t;
        }
        for (uint32_t i = 0; i < count; i++)
            job(context, i % workers, h->scratch[i], h->scratch[i] + 1);
        break;
    case RVT_HOST_WHOLE:
        job(context, workers - 1, 0, count);
        break;
    }
}

rv_job_system rvt_host_jobs(rvt_host *h)
{
    rv_job_system js = { host_for, h, h->max_workers };
    return js;
}

void rvt_host_free(rvt_host *h)
{
    free(h->scratch);
    h->scratch = NULL;
    h->scratch_capacity = 0;
}
