/*
 * kdtree.c: the k-d tree on the CPU (G-PICS Section 2.3's data-driven tree): every node with more
 * than leaf_capacity points above max_depth splits at the median of its points on axis
 * level % 2 (x first); the left child gets the floor(c / 2) points that come first in
 * (coordinate, id) order, the right child the rest, and the split value is the largest left
 * coordinate. So left points have c <= split and right points c >= split, and the regions are
 * closed on both sides (traverse_hd.h).
 *
 * Order by (coordinate, id) is made exact and identical on every backend by ranks: the points
 * are sorted once per axis by (order-preserving bits of the coordinate, id), with -0.0 taken as
 * 0.0, and each node selects the median by rank. The CUDA build (kdtree.cu) sorts by the same
 * ranks, so both backends give the same nodes (the order of points inside a leaf may differ).
 *
 * rdx_sp_kd_subtree is also what an update runs on the points of a leaf that has to split
 * (update_cpu.c), starting at that leaf's level and path.
 *
 * Tuned for: tests and the CPU baseline; one quickselect per node, the nodes of a level in
 * parallel on the context's threads.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

/* Order-preserving image of a double, with -0.0 mapped like 0.0. */
static uint64_t order_bits(double v) {
  if (v == 0.0) v = 0.0;
  uint64_t b;
  memcpy(&b, &v, 8);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

/* Rearrange a[0..n) so that a[kth] has the kth smallest rank, smaller ranks before it and larger
 * after it. Ranks are distinct. */
static void select_rank(int64_t *a, int64_t n, int64_t kth, const int64_t *rank) {
  int64_t lo = 0, hi = n - 1;
  while (hi > lo) {
    int64_t mid = lo + (hi - lo) / 2;
    int64_t r0 = rank[a[lo]], r1 = rank[a[mid]], r2 = rank[a[hi]];
    int64_t pv = r0 < r1 ? (r1 < r2 ? r1 : (r0 < r2 ? r2 : r0)) : (r0 < r2 ? r0 : (r1 < r2 ? r2 : r1));
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (rank[a[i]] < pv) i++;
      while (rank[a[j]] > pv) j--;
      if (i <= j) {
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (kth <= j) hi = j;
    else if (kth >= i) lo = i;
    else return;
  }
}

typedef struct split_job {
  rdx_sp_hlist *out;
  int64_t first;            /* first node of this level in out */
  int64_t *perm;
  const int64_t *rank[2];
  const double *coord[2];
  int depth;
  int64_t cap;
} split_job;

static void split_task(void *arg, int64_t t, int thread) {
  split_job *j = (split_job *)arg;
  rdx_sp_hnode *nd = &j->out->v[j->first + t];
  if (rdx_sp_leaf(nd->count, nd->level, j->depth, j->cap)) return;
  int axis = nd->level & 1;
  int64_t h = nd->count / 2;
  int64_t *seg = j->perm + nd->fpos;
  select_rank(seg, nd->count, h - 1, j->rank[axis]);
  nd->split = j->coord[axis][seg[h - 1]];
}

#define SMALL_SORT ((int64_t)1 << 16)

/* Stable sort of n (key, value) pairs by key. Only the bits where the keys differ take part
 * (the others cannot change the order): f32 coordinates widened to doubles leave 29 low bits
 * zero, nearby points share the high bits, ids fit in few bits. Up to SMALL_SORT pairs (an
 * update's splitting leaves) sort here, serially with 8-bit digits through tk, tv (n each):
 * the parallel 11-bit sort's setup per pass costs more than such a sort. */
static rdx_status sort_pairs(rdx_context *ctx, uint64_t *k, uint64_t *v, int64_t n, uint64_t *tk, uint64_t *tv) {
  uint64_t diff = 0;
  for (int64_t i = 1; i < n; i++) diff |= k[i] ^ k[0];
  if (diff == 0) return RDX_OK;
  int lo = 0, hi = 64;
  while (!((diff >> lo) & 1)) lo++;
  while (!((diff >> (hi - 1)) & 1)) hi--;
  if (n > SMALL_SORT) return rdx_sp_radix_sort_cpu(ctx, k, v, n, lo, hi);
  uint64_t *sk = k, *sv = v, *dk = tk, *dv = tv;
  for (int shift = lo; shift < hi; shift += 8) {
    int64_t cnt[257];
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < n; i++) cnt[((sk[i] >> shift) & 255) + 1]++;
    for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (int64_t i = 0; i < n; i++) {
      int64_t p = cnt[(sk[i] >> shift) & 255]++;
      dk[p] = sk[i];
      dv[p] = sv[i];
    }
    uint64_t *t1 = sk, *t2 = sv;
    sk = dk, sv = dv, dk = t1, dv = t2;
  }
  if (sk != k) {
    memcpy(k, sk, (size_t)n * 8);
    memcpy(v, sv, (size_t)n * 8);
  }
  return RDX_OK;
}

rdx_status rdx_sp_kd_subtree(rdx_context *ctx, const double *x, const double *y, const uint64_t *id, int64_t n,
                             int level, uint64_t key, int depth, int64_t cap, rdx_sp_hlist *out, int64_t *perm) {
  uint64_t *k = NULL, *v = NULL, *tk = NULL, *tv = NULL;
  int64_t *rank = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: k-d ranks", (void **)&k, (size_t)n * 16, RDX_HOST), st, done);
  v = k + n;
  if (n <= SMALL_SORT) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: k-d ranks", (void **)&tk, (size_t)n * 16, RDX_HOST), st, done);
    tv = tk + n;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: k-d ranks", (void **)&rank, (size_t)n * 16, RDX_HOST), st, done);
  /* the points in id order (the tie order), then ranks per axis by a stable sort on the bits */
  int ascending = 1;
  for (int64_t i = 1; i < n && ascending; i++) ascending = id[i] > id[i - 1];
  for (int64_t i = 0; i < n; i++) {
    k[i] = id[i];
    v[i] = (uint64_t)i;
  }
  if (!ascending) RDX_CHECK_GOTO(sort_pairs(ctx, k, v, n, tk, tv), st, done);
  for (int64_t i = 0; i < n; i++) perm[i] = (int64_t)v[i];
  for (int axis = 0; axis < 2; axis++) {
    const double *c = axis ? y : x;
    for (int64_t i = 0; i < n; i++) {
      k[i] = order_bits(c[perm[i]]);
      v[i] = (uint64_t)perm[i];
    }
    RDX_CHECK_GOTO(sort_pairs(ctx, k, v, n, tk, tv), st, done);
    for (int64_t i = 0; i < n; i++) rank[axis * n + (int64_t)v[i]] = i;
  }
  /* breadth first; out doubles as the queue, fpos holding each node's first position in perm */
  {
    int64_t head = out->n;
    rdx_sp_hnode root;
    memset(&root, 0, sizeof root);
    root.key = key;
    root.level = level;
    root.count = n;
    RDX_CHECK_GOTO(rdx_sp_hlist_push(ctx, out, root), st, done);
    int64_t first = head;
    while (first < out->n) {
      int64_t end = out->n;
      split_job j = {out, first, perm, {rank, rank + n}, {x, y}, depth, cap};
      /* the nodes of a level split in parallel, unless they hold few points (a splitting leaf of
       * an update): then waking the threads costs more than the selections */
      int64_t work = 0;
      for (int64_t i = first; i < end && work < SMALL_SORT; i++) work += out->v[i].count;
      if (work < SMALL_SORT)
        for (int64_t i = first; i < end; i++) split_task(&j, i - first, 0);
      else
        RDX_CHECK_GOTO(rdx_parallel_for(ctx, end - first, split_task, &j), st, done);
      for (int64_t i = first; i < end; i++) {
        rdx_sp_hnode nd = out->v[i];
        if (rdx_sp_leaf(nd.count, nd.level, depth, cap)) {
          out->v[i].leaf = 1;
          out->v[i].len = nd.count;
          out->v[i].room = nd.count;
          continue;
        }
        out->v[i].leaf = 0;
        int64_t h = nd.count / 2;
        for (int s = 0; s < 2; s++) {
          rdx_sp_hnode c;
          memset(&c, 0, sizeof c);
          c.key = 2 * nd.key + (uint64_t)s;
          c.level = nd.level + 1;
          c.count = s ? nd.count - h : h;
          c.fpos = s ? nd.fpos + h : nd.fpos;
          RDX_CHECK_GOTO(rdx_sp_hlist_push(ctx, out, c), st, done);
        }
      }
      first = end;
    }
  }
  st = RDX_OK;
done:
  rdx_mem_free(ctx, k);
  rdx_mem_free(ctx, tk);
  rdx_mem_free(ctx, rank);
  return st;
}

typedef struct kd_gather_job {
  const void *xy;
  int f64;
  int64_t n;
  const int64_t *perm;
  rdx_sp_pool *pool;
  double *x, *y; /* for the conversion pass */
  uint64_t *id;
} kd_gather_job;

static void kd_convert_task(void *arg, int64_t t, int thread) {
  kd_gather_job *j = (kd_gather_job *)arg;
  int64_t lo = t * 16384, hi = lo + 16384 < j->n ? lo + 16384 : j->n;
  for (int64_t i = lo; i < hi; i++) {
    j->x[i] = rdx_sp_at(j->xy, 2 * i, j->f64);
    j->y[i] = rdx_sp_at(j->xy, 2 * i + 1, j->f64);
    j->id[i] = (uint64_t)i;
  }
}

static void kd_gather_task(void *arg, int64_t t, int thread) {
  kd_gather_job *j = (kd_gather_job *)arg;
  int64_t lo = t * 16384, hi = lo + 16384 < j->n ? lo + 16384 : j->n;
  for (int64_t i = lo; i < hi; i++) {
    rdx_sp_pool_put(j->pool, i, j->xy, j->f64, j->perm[i]);
  }
}

rdx_status rdx_sp_kd_build_cpu(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  int64_t n = in->n;
  double *x = NULL, *y = NULL;
  uint64_t *id = NULL;
  int64_t *perm = NULL;
  rdx_sp_hlist l = {NULL, 0, 0};
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  rdx_status st;
  double t0 = rdx_now_ms();
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: k-d input", (void **)&x, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: k-d input", (void **)&y, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: k-d input", (void **)&id, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: k-d order", (void **)&perm, (size_t)n * 8, RDX_HOST), st, fail);
  {
    kd_gather_job j = {in->xy, pts->f64, n, perm, &pts->pool, x, y, id};
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n + 16383) / 16384, kd_convert_task, &j), st, fail);
  }
  RDX_CHECK_GOTO(rdx_sp_kd_subtree(ctx, x, y, id, n, 0, 0, pts->depth, pts->cap, &l, perm), st, fail);
  double t1 = rdx_now_ms();
  RDX_CHECK_GOTO(rdx_sp_hlist_link(ctx, &l, 1), st, fail);
  RDX_CHECK_GOTO(rdx_sp_hlist_to_nodes(ctx, &l, &nodes), st, fail);
  RDX_CHECK_GOTO(rdx_sp_pool_alloc(ctx, n, pts->f64, 0, &pts->pool), st, fail);
  pts->pool.used = n;
  {
    kd_gather_job j = {in->xy, pts->f64, n, perm, &pts->pool, x, y, id};
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n + 16383) / 16384, kd_gather_task, &j), st, fail);
  }
  pts->nodes = nodes;
  pts->stats.phase_ms[0] = 0;
  pts->stats.phase_ms[1] = t1 - t0;
  pts->stats.phase_ms[2] = 0;
  pts->stats.phase_ms[3] = rdx_now_ms() - t1;
  st = RDX_OK;
  goto done;
fail:
  rdx_sp_nodes_free(ctx, &nodes);
  rdx_sp_pool_free(ctx, &pts->pool);
done:
  rdx_sp_hlist_free(ctx, &l);
  rdx_mem_free(ctx, x);
  rdx_mem_free(ctx, y);
  rdx_mem_free(ctx, id);
  rdx_mem_free(ctx, perm);
  return st;
}

const rdx_sp_ops rdx_sp_kd_cpu_ops = {
    RDX_POINTS_KDTREE, RDX_BACKEND_CPU, "k-d tree",
    0, RDX_SP_MAX_KD_DEPTH, RDX_SP_DEFAULT_KD_DEPTH, 0,              /* bottom-up only, depths, no Morton */
    RDX_POINTS_PAGED, "the dense layout needs a GPU backend; the CPU backend pages",
    {{rdx_sp_update_cpu, 0, 0}, {NULL, 0, 0}}, NULL, 0,             /* the planner takes any batch */
    rdx_sp_scan_cpu, rdx_sp_kd_build_cpu, rdx_sp_query_cpu, rdx_sp_resident, rdx_sp_storage_free, NULL,
};
