/* pool — worker threads for the CPU engine's parallel loops (see pool.h). A generation counter and one
 * condition variable wake the workers; a done counter and a second one wake the caller. */
#include "engine/cpu/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/util.h"

struct pool {
    int n_threads;
    pthread_t *threads;     /* (n_threads - 1) workers; the caller is thread 0 */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation;
    int pending;            /* workers still running the current job */
    int quit;
    void (*fn)(void *ctx, int begin, int end);
    void *ctx;
    int n;
};

struct worker_arg {
    struct pool *p;
    int index;
};

static void run_share(struct pool *p, int index)
{
    long begin = (long)p->n * index / p->n_threads, end = (long)p->n * (index + 1) / p->n_threads;
    if (begin < end) p->fn(p->ctx, (int)begin, (int)end);
}

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct pool *p = wa->p;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->generation == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_share(p, wa->index);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
    free(wa);
    return NULL;
}

struct pool *pool_create(int n_threads)
{
    struct pool *p = g4_calloc(1, sizeof *p);
    if (n_threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = cores > 0 ? (int)cores : 1;
    }
    p->n_threads = n_threads;
    p->threads = g4_calloc((size_t)n_threads, sizeof *p->threads);
    G4_CHECK(pthread_mutex_init(&p->mu, NULL) == 0, "mutex");
    G4_CHECK(pthread_cond_init(&p->wake, NULL) == 0, "cond");
    G4_CHECK(pthread_cond_init(&p->done, NULL) == 0, "cond");
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *wa = g4_malloc(sizeof *wa);
        wa->p = p;
        wa->index = i;
        G4_CHECK(pthread_create(&p->threads[i], NULL, worker_main, wa) == 0, "cannot start worker %d", i);
    }
    return p;
}

void pool_destroy(struct pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}

int pool_threads(const struct pool *p)
{
    return p->n_threads;
}

void pool_run(struct pool *p, void (*fn)(void *ctx, int begin, int end), void *ctx, int n)
{
    if (n <= 0) return;
    if (p->n_threads == 1 || n == 1) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->pending = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_share(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
