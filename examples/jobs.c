/* The host's job system: rvis runs its frame on the host's threads through one parallel-for
 * the host hands it in rv_world_desc.jobs. Here the host's job system is a small pthread
 * pool (a real engine passes its own: Unity's jobs, Unreal's task graph, enkiTS...).
 * Public header only.
 *
 *   ./jobs [workers]   builds the same field of crates in two worlds, one with the pool
 *                      (default 4 workers) and one without, runs 120 frames in both and
 *                      prints their times; exit 1 if any frame's view differs between them
 *                      (rv_frame_view_digest), which rvis promises never happens. */
#define _POSIX_C_SOURCE 200809L
#include "rvis.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the host's job system: a pool of pthreads ----------------------------------------------
 * The calling thread is worker 0 and takes ranges too; workers - 1 threads wait for work.
 * rvis needs three things of it (rv_job_system): every range of [0, count) run exactly
 * once, a worker index below max_workers that no two ranges running at once share, and
 * parallel_for returning only when all ranges are done (here: the mutex and the condition
 * variable give the calling thread every write the jobs made). */

#define MAX_THREADS 64

typedef struct pool pool;

typedef struct pool_thread {
    pool *owner;
    unsigned worker;
    pthread_t thread;
} pool_thread;

struct pool {
    unsigned workers;
    pool_thread threads[MAX_THREADS];
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    rv_job_fn job; /* the parallel-for being run, under lock */
    void *context;
    uint32_t count, grain, next, busy;
    unsigned long generation;
    int stop;
};

/* Runs ranges until none is left. Called and returns with the lock held. */
static void run_ranges(pool *p, unsigned worker)
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

static void *pool_thread_main(void *arg)
{
    pool_thread *t = arg;
    pool *p = t->owner;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (p->generation == seen) {
            pthread_cond_wait(&p->work, &p->lock);
            continue;
        }
        seen = p->generation;
        p->busy++;
        run_ranges(p, t->worker);
        if (--p->busy == 0)
            pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* rv_job_system.parallel_for */
static void pool_parallel_for(void *user, rv_job_fn job, void *context, uint32_t count, uint32_t grain)
{
    pool *p = user;
    pthread_mutex_lock(&p->lock);
    p->job = job;
    p->context = context;
    p->count = count;
    p->grain = grain;
    p->next = 0;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    p->busy++;
    run_ranges(p, 0);
    p->busy--;
    while (p->busy > 0) /* every range is taken: wait for those still running */
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void pool_stop(pool *p, unsigned started)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned w = 1; w <= started; w++)
        pthread_join(p->threads[w].thread, NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
}

static int pool_start(pool *p, unsigned workers)
{
    memset(p, 0, sizeof *p);
    p->workers = workers;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    for (unsigned w = 1; w < workers; w++) {
        p->threads[w].owner = p;
        p->threads[w].worker = w;
        if (pthread_create(&p->threads[w].thread, NULL, pool_thread_main, &p->threads[w]) != 0) {
            pool_stop(p, w - 1);
            return 0;
        }
    }
    return 1;
}

/* ---- a world to cull: a field of crates behind a few walls ----------------------------------- */

#define SIDE 200          /* 40,000 crates */
#define FRAMES 120

#define CHECK(call)                                                                 \
    do {                                                                            \
        rv_result r_ = (call);                                                      \
        if (r_ != RV_OK) {                                                          \
            fprintf(stderr, "%s: %s\n", #call, rv_result_string(r_));               \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static rv_world *make_world(const rv_job_system *jobs)
{
    rv_world_desc desc = { 0 };
    desc.node_capacity = SIDE * SIDE + 64;
    desc.occlusion.width = 256;
    if (jobs)
        desc.jobs = *jobs; /* the one line a host with a job system adds */
    rv_world *world;
    CHECK(rv_world_create(&desc, &world));
    const float thresholds[3] = { 0.2f, 0.06f, 0.015f };
    rv_lod_ladder ladder;
    CHECK(rv_lod_ladder_make(thresholds, 3, &ladder));
    rv_node field;
    CHECK(rv_node_create(world, RV_NODE_NONE, &field));
    const float centre[3] = { 0, 0, 0 }, lo[3] = { -0.5f, -0.5f, -0.5f }, hi[3] = { 0.5f, 0.5f, 0.5f };
    for (int k = 0; k < SIDE * SIDE; k++) {
        rv_node crate;
        const float p[3] = { 2.5f * (float)(k % SIDE - SIDE / 2), 0.5f, 2.5f * (float)(k / SIDE - SIDE / 2) };
        CHECK(rv_node_create(world, field, &crate));
        CHECK(rv_node_set_position(world, crate, p));
        CHECK(rv_node_set_bounds(world, crate, centre, 0.87f));
        CHECK(rv_node_set_test_box(world, crate, lo, hi));
        CHECK(rv_node_set_lod_ladder(world, crate, &ladder));
    }
    for (int k = 0; k < 16; k++) {
        rv_node wall;
        const float mn[3] = { -200 + 25.0f * (float)k, 0, -60 }, mx[3] = { -180 + 25.0f * (float)k, 8, -59.5f };
        CHECK(rv_node_create(world, RV_NODE_NONE, &wall));
        CHECK(rv_node_set_occluder_box(world, wall, mn, mx));
    }
    return world;
}

/* A camera at (x, 1.7, z) turning on the spot; view and OpenGL projection, column-major. */
static void camera(int frame, float view[16], float projection[16])
{
    float yaw = 0.02f * (float)frame, fx = sinf(yaw), fz = -cosf(yaw);
    const float ex = 10.0f, ey = 1.7f, ez = 40.0f;
    /* rows: right (-fz, 0, fx), up (0, 1, 0), minus forward */
    const float v[16] = { -fz, 0, -fx, 0, 0, 1, 0, 0, fx, 0, -fz, 0,
                          -(-fz * ex + fx * ez), -ey, -(-fx * ex - fz * ez), 1 };
    const float n = 0.1f, f = 1000.0f, t = 1.0f / tanf(0.5236f), aspect = 16.0f / 9.0f;
    const float p[16] = { t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (f + n) / (n - f), -1, 0, 0, 2 * f * n / (n - f), 0 };
    memcpy(view, v, sizeof v);
    memcpy(projection, p, sizeof p);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    unsigned workers = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
    if (workers < 1 || workers > MAX_THREADS) {
        fprintf(stderr, "usage: jobs [workers 1..%d]\n", MAX_THREADS);
        return 2;
    }
    static pool threads;
    if (!pool_start(&threads, workers)) {
        fprintf(stderr, "jobs: could not start %u threads\n", workers);
        return 1;
    }
    rv_job_system jobs = { pool_parallel_for, &threads, workers };
    rv_world *pooled = make_world(&jobs), *alone = make_world(NULL);

    double pooled_ms = 0, alone_ms = 0;
    int differing = 0;
    uint32_t drawn = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        float view[16], projection[16];
        camera(frame, view, projection);
        rv_view v = { 0 };
        v.view = view;
        v.projection = projection;
        v.viewport_width = 1920;
        v.viewport_height = 1080;
        v.time_ms = 16.0 * frame;
        rv_frame_view a, b;
        double t0 = now_ms();
        CHECK(rv_frame(pooled, &v, &a));
        double t1 = now_ms();
        CHECK(rv_frame(alone, &v, &b));
        double t2 = now_ms();
        pooled_ms += t1 - t0;
        alone_ms += t2 - t1;
        drawn += a.opaque_count;
        if (rv_frame_view_digest(&a) != rv_frame_view_digest(&b) || a.opaque_count != b.opaque_count) {
            fprintf(stderr, "jobs: frame %d: the view with %u workers differs from the view without\n", frame,
                    workers);
            differing++;
        }
    }
    printf("%d frames, %u drawn a frame: %.3f ms a frame on %u workers, %.3f ms on the calling thread alone\n",
           FRAMES, drawn / FRAMES, pooled_ms / FRAMES, workers, alone_ms / FRAMES);
    rv_world_destroy(pooled);
    rv_world_destroy(alone);
    pool_stop(&threads, workers - 1);
    return differing ? 1 : 0;
}
