/*
 * pool.c: the CPU backend's thread pool.
 *
 * One pool per context, started on first use, with n_threads - 1 workers plus the calling thread.
 * A parallel_for hands out task numbers through one atomic counter, so uneven tasks balance
 * themselves; callers size tasks at a few thousand elements so the counter is not contended.
 */
#include "core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct rdx_pool {
  int n_threads;             /* workers + the caller */
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t start_cv;   /* workers wait here for a new job */
  pthread_cond_t done_cv;    /* the caller waits here for the job's end */
  uint64_t generation;       /* bumped per job */
  int stop;
  /* the current job */
  rdx_task_fn fn;
  void *arg;
  int64_t n_tasks;
  atomic_llong next;         /* next task to take */
  int n_busy;                /* workers still inside the job */
};

int rdx_default_threads(void) {
  const char *env = getenv("RAYDEX_THREADS");
  if (env && *env) {
    int n = atoi(env);
    if (n >= 1 && n <= 4096) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (int)n : 1;
}

static void run_tasks(rdx_pool *p, int thread) {
  for (;;) {
    int64_t t = atomic_fetch_add(&p->next, 1);
    if (t >= p->n_tasks) break;
    p->fn(p->arg, t, thread);
  }
}

typedef struct worker_arg {
  rdx_pool *pool;
  int thread;
} worker_arg;

static void *worker_main(void *varg) {
  worker_arg wa = *(worker_arg *)varg;
  free(varg);
  rdx_pool *p = wa.pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->start_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, wa.thread);
    pthread_mutex_lock(&p->mu);
    if (--p->n_busy == 0) pthread_cond_signal(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

rdx_pool *rdx_pool_create(int n_threads) {
  rdx_pool *p = (rdx_pool *)calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->n_threads = n_threads < 1 ? 1 : n_threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->start_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->next, 0);
  int n_workers = p->n_threads - 1;
  if (n_workers > 0) {
    p->workers = (pthread_t *)calloc((size_t)n_workers, sizeof *p->workers);
    if (p->workers == NULL) {
      p->n_threads = 1;
      return p;
    }
    for (int i = 0; i < n_workers; i++) {
      worker_arg *wa = (worker_arg *)malloc(sizeof *wa);
      int ok = wa != NULL;
      if (ok) {
        wa->pool = p;
        wa->thread = i + 1;
        ok = pthread_create(&p->workers[i], NULL, worker_main, wa) == 0;
      }
      if (!ok) {
        free(wa);
        p->n_threads = i + 1; /* run with the workers we got */
        break;
      }
    }
  }
  return p;
}

void rdx_pool_destroy(rdx_pool *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->start_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->workers[i], NULL);
  free(p->workers);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->start_cv);
  pthread_cond_destroy(&p->done_cv);
  free(p);
}

rdx_status rdx_parallel_for(rdx_context *ctx, int64_t n_tasks, rdx_task_fn fn, void *arg) {
  if (n_tasks <= 0) return RDX_OK;
  if (ctx->n_threads <= 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; t++) fn(arg, t, 0);
    return RDX_OK;
  }
  if (ctx->pool == NULL) {
    ctx->pool = rdx_pool_create(ctx->n_threads);
    if (ctx->pool == NULL)
      return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_parallel_for: cannot start threads");
  }
  rdx_pool *p = ctx->pool;
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->arg = arg;
  p->n_tasks = n_tasks;
  atomic_store(&p->next, 0);
  p->n_busy = p->n_threads - 1;
  p->generation++;
  pthread_cond_broadcast(&p->start_cv);
  pthread_mutex_unlock(&p->mu);
  run_tasks(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->n_busy > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return RDX_OK;
}
