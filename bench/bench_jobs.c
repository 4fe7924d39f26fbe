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

/* A parallel-for hands out ranges through one atomic word: the call's number in the high
 * half, the next item in the low half, so a helper that wakes late for a call already over
 * claims nothing. The caller waits for the items to be done, not for every helper to look. */
struct rvb_jobs {
    uint32_t workers;
    pthread_t threads[MAX_WORKERS];
    helper_arg args[MAX_WORKERS];
    uint32_t started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* The current call: written by the caller before it publishes the call's number. */
    rv_job_fn job;
    void *context;
    /* Read before a claim succeeds, also by a helper still looking at the previous call:
     * atomic, and written only after the claim word has left that call (see parallel_for). */
    atomic_uint count, grain;
    atomic_uint_fast64_t claim; /* call << 32 | next item */
    atomic_uint done;           /* items done in the current call */
    atomic_uint calls;          /* number of the current call */
    atomic_bool stop;
};

static inline void pause_briefly(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claims and runs ranges of call number call until none is left. */
static void run_ranges(rvb_jobs *p, uint32_t call, uint32_t worker)
{
    for (;;) {
        uint_fast64_t c = atomic_load(&p->claim);
        uint32_t begin = (uint32_t)c, count = atomic_load(&p->count), grain = atomic_load(&p->grain);
        if ((uint32_t)(c >> 32) != call || begin >= count)
            return;
        uint32_t end = count - begin > grain ? begin + grain : count;
        uint_fast64_t want = ((uint_fast64_t)call << 32) | end;
        if (!atomic_compare_exchange_weak(&p->claim, &c, want))
            continue;
        p->job(p->context, worker, begin, end);
        atomic_fetch_add_explicit(&p->done, end - begin, memory_order_release);
    }
}

static void *helper_main(void *arg)
{
    helper_arg *a = arg;
    rvb_jobs *p = a->pool;
    uint32_t seen = 0;
    for (;;) {
        uint32_t call = atomic_load_explicit(&p->calls, memory_order_acquire);
        for (int spin = 0; call == seen && spin < SPIN_ROUNDS && !atomic_load(&p->stop); spin++) {
            pause_briefly();
            call = atomic_load_explicit(&p->calls, memory_order_acquire);
        }
        if (call == seen) {
            pthread_mutex_lock(&p->lock);
            while ((call = atomic_load_explicit(&p->calls, memory_order_acquire)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = call;
        run_ranges(p, call, a->worker);
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
    uint32_t call = atomic_load_explicit(&p->calls, memory_order_relaxed) + 1;
    /* First take the claim word off the previous call (no item left in it whatever the
     * count): a helper that read it before and then reads the new count fails its claim,
     * instead of taking items of the new call under the old call's number. */
    atomic_store(&p->claim, ((uint_fast64_t)(call - 1) << 32) | UINT32_MAX);
    p->job = job;
    p->context = context;
    atomic_store(&p->count, count);
    atomic_store(&p->grain, grain);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (uint_fast64_t)call << 32, memory_order_release);
    atomic_store_explicit(&p->calls, call, memory_order_release);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_ranges(p, call, 0);
    /* Wait for ranges other workers claimed: spin a little, then give the core up. */
    for (int spin = 0; atomic_load_explicit(&p->done, memory_order_acquire) != count; spin++) {
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
