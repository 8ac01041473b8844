/*
 * query.c: batched queries on the CPU, for both kinds. Each query runs on one thread: Step I's
 * descent (traverse_hd.h) hands out the leaves the query needs, and the leaf's points are tested
 * at once (G-PICS's P-CPU baseline; with per-core caches a per-query scan needs no staging).
 * Leaves whose every point answers (the window or circle contains the leaf's cell or region)
 * are counted or copied without tests. kNN is the exact branch and bound of traverse_hd.h.
 *
 * The fill recounts every query first and refuses offsets that do not match, so a caller's stale
 * offsets can never make it write out of bounds. Ids of a query are sorted ascending after the
 * fill (kNN: by distance, then id).
 *
 * Tuned for: batches of 10^3..10^7 queries over up to ~10^7 points, in chunks of 256 queries
 * over the context's threads.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

#define QCHUNK 256

typedef struct qjob {
  rdx_sp_view v;
  const rdx_sp_qin *in;
  int64_t n_points;
  uint64_t *counts;
  const uint64_t *offsets;
  uint64_t *rows;
  double *hd;        /* kNN: per thread, k distances */
  uint64_t *hi;      /* kNN: per thread, k ids */
  int64_t bad;       /* fill: first query whose offsets disagree, or -1 (written by one task at most) */
} qjob;

static uint64_t leaf_scan(const rdx_sp_view *v, int type, const rdx_sp_q *q, int64_t leaf, int full, uint64_t *out) {
  int64_t p0 = v->fpos[leaf], pn = v->len[leaf];
  if (full) {
    if (out)
      for (int64_t p = 0; p < pn; p++) out[p] = v->id[p0 + p];
    return (uint64_t)pn;
  }
  uint64_t c = 0;
  for (int64_t p = p0; p < p0 + pn; p++) {
    if (rdx_sp_hit(type, q, rdx_sp_at(v->x, p, v->f64), rdx_sp_at(v->y, p, v->f64))) {
      if (out) out[c] = v->id[p];
      c++;
    }
  }
  return c;
}

/* Count (out == NULL) or write the ids of one non-kNN query; returns how many. */
static uint64_t run_one(const rdx_sp_view *v, int type, const rdx_sp_q *q, uint64_t *out) {
  rdx_sp_iter it;
  rdx_sp_iter_init(&it, v, type, q);
  int64_t leaf;
  int full;
  uint64_t c = 0;
  while (rdx_sp_iter_next(&it, v, &leaf, &full)) c += leaf_scan(v, type, q, leaf, full, out ? out + c : NULL);
  return c;
}

static void count_task(void *arg, int64_t t, int thread) {
  qjob *j = (qjob *)arg;
  int64_t lo = t * QCHUNK, hi = lo + QCHUNK < j->in->m ? lo + QCHUNK : j->in->m;
  int type = j->in->type;
  for (int64_t i = lo; i < hi; i++) {
    if (type == RDX_SP_KNN) {
      j->counts[i] = (uint64_t)(j->n_points < j->in->k ? j->n_points : j->in->k);
      continue;
    }
    rdx_sp_q q = rdx_sp_load_query(j->in->q, i, type, j->v.f64);
    j->counts[i] = run_one(&j->v, type, &q, NULL);
  }
}

/* Ascending sort of one query's ids in place: quicksort (median of three, smaller side first
 * so the stack stays logarithmic) over insertion sort; no callback per comparison, which makes
 * it several times faster than libc's qsort (bench/results/NVIDIA-H200/UPDATES.md). */
static void sort_u64(uint64_t *a, int64_t n) {
  while (n > 24) {
    int64_t m = n / 2;
    uint64_t x = a[0], y = a[m], z = a[n - 1];
    uint64_t pv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    int64_t i = 0, j = n - 1;
    while (i <= j) {
      while (a[i] < pv) i++;
      while (a[j] > pv) j--;
      if (i <= j) {
        uint64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (j + 1 < n - i) {
      sort_u64(a, j + 1);
      a += i;
      n -= i;
    } else {
      sort_u64(a + i, n - i);
      n = j + 1;
    }
  }
  for (int64_t i = 1; i < n; i++) {
    uint64_t v = a[i];
    int64_t j = i;
    while (j > 0 && a[j - 1] > v) a[j] = a[j - 1], j--;
    a[j] = v;
  }
}

static void fill_task(void *arg, int64_t t, int thread) {
  qjob *j = (qjob *)arg;
  int64_t lo = t * QCHUNK, hi = lo + QCHUNK < j->in->m ? lo + QCHUNK : j->in->m;
  int type = j->in->type, k = j->in->k;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t *out = j->rows + j->offsets[i];
    rdx_sp_q q = rdx_sp_load_query(j->in->q, i, type, j->v.f64);
    if (type == RDX_SP_KNN) {
      double *hd = j->hd + (int64_t)thread * k;
      uint64_t *hi_ = j->hi + (int64_t)thread * k;
      int got = rdx_sp_knn(&j->v, q.a, q.b, k, hd, hi_);
      memcpy(out, hi_, (size_t)got * 8);
    } else {
      uint64_t c = run_one(&j->v, type, &q, out);
      sort_u64(out, (int64_t)c);
    }
  }
}

rdx_status rdx_sp_query_cpu(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                            const uint64_t *offsets, uint64_t *rows) {
  const char *fn = rows ? "rdx_points_query_fill" : "rdx_points_query_count";
  qjob j;
  memset(&j, 0, sizeof j);
  j.v = rdx_sp_host_view_of(pts);
  j.in = in;
  j.n_points = pts->n;
  j.bad = -1;
  int64_t tasks = (in->m + QCHUNK - 1) / QCHUNK;
  if (rows == NULL) {
    j.counts = counts;
    return rdx_parallel_for(ctx, tasks, count_task, &j);
  }
  rdx_status st;
  uint64_t *mine = NULL;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&mine, (size_t)in->m * 8, RDX_HOST), st, done);
  j.counts = mine;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, tasks, count_task, &j), st, done);
  RDX_CHECK_GOTO(rdx_csr_check_offsets(ctx, fn, offsets, mine, in->m, "ids"), st, done);
  j.offsets = offsets;
  j.rows = rows;
  if (in->type == RDX_SP_KNN) {
    size_t b = (size_t)ctx->n_threads * (size_t)in->k * 8;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&j.hd, b, RDX_HOST), st, done);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&j.hi, b, RDX_HOST), st, done);
  }
  st = rdx_parallel_for(ctx, tasks, fill_task, &j);
done:
  rdx_mem_free(ctx, mine);
  rdx_mem_free(ctx, j.hd);
  rdx_mem_free(ctx, j.hi);
  return st;
}
