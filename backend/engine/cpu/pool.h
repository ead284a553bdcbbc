/* pool — a fixed set of worker threads that run one parallel-for at a time.
 *
 * pool_run splits task indices 0 … n-1 into contiguous ranges, one per thread (the caller's thread takes
 * the first), and returns when all are done. Which thread computes a task never changes what it computes:
 * every task writes its own outputs with its own fixed reduction order, so results do not depend on the
 * thread count. Not reentrant: one pool_run at a time, from the thread that owns the pool. */
#ifndef G4_POOL_H
#define G4_POOL_H

struct pool;

/* n_threads ≤ 0 means one per online core. Never fails (aborts when threads cannot be created). */
struct pool *pool_create(int n_threads);
void pool_destroy(struct pool *p);
int pool_threads(const struct pool *p);

/* Calls fn(ctx, begin, end) on disjoint ranges covering [0, n). */
void pool_run(struct pool *p, void (*fn)(void *ctx, int begin, int end), void *ctx, int n);

#endif
