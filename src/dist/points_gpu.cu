/*
 * points_gpu.cu: queries of a distributed point index answered without leaving the GPUs
 * (rdx_dist_gpu_points_query), the device twin of points.c's host rounds.
 *
 * A round on rank r: each query's ranks as a bit mask (points_hd.h's arithmetic, as the host
 * rounds route), the queries copied out grouped by rank (a piece per query and rank), the device
 * all-to-all, the shard's own query on its GPU with its ids mapped to the index's ids (the l2g copy
 * on the GPU), the per-piece counts and the items back the same way, and each query's items
 * gathered from the ranks that answered. Window, within and match take one round whose items are
 * ids, each query's ascending at the end as one index orders them: merged from the pieces when
 * every shard's ids follow the index's (points.c builds them so), else sorted (rdx_csr_sort_cuda). kNN takes two,
 * as points.c's: first the rank owning the query's code, then every other rank whose box lies
 * within the k-th distance found; the items are (distance, id) candidates, each query's sorted by
 * distance then id (two stable segmented sorts) and the first k kept.
 *
 * Only per-rank totals and the first bad query row pass through the host. Every phase ends in an
 * agreement (rdx_comm_agree), so a failure on one rank fails the call on all with one sentence and
 * nothing written. Pieces are placed by atomics, so their order within a rank's group varies from
 * run to run; answers do not, since every query's items are sorted at the end and a query meets
 * each rank at most once a round.
 */
#include <cub/cub.cuh>

#include "cuda_util.cuh"
#include "dist/dist.h"
#include "dist/points_hd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;

/* A kNN candidate: its computed squared distance and index id. */
struct cand {
  double d2;
  uint64_t gid;
};

/* What a rank's shard answers with: the shard, l2g (shard id -> index id) and the points'
 * coordinates by shard id, both in its GPU's memory, how many points it holds, and whether l2g
 * ascends (then the shard breaks kNN ties by the index's order, as one index does). */
struct shard_view {
  const rdx_points *shard;
  const uint64_t *l2g;
  const double *xy;
  int64_t here;
  int ascending;
};

/* ---- routing ---- */

/* A query's values as doubles; false when one is not finite or a within radius is negative. */
template <typename T>
__device__ bool read_query(const T *q, int64_t i, int cols, int32_t type, double *v) {
  bool ok = true;
  for (int c = 0; c < cols; c++) {
    v[c] = (double)q[i * cols + c];
    if (!isfinite(v[c])) ok = false;
  }
  return ok && !(type == RDX_POINTS_WITHIN && v[2] < 0);
}

/* Adds each set bit of a query's mask to the block's per-rank totals, then to counts. */
__device__ void count_mask(unsigned int *hist, unsigned long long m) {
  for (unsigned long long b = m; b; b &= b - 1) atomicAdd(&hist[__ffsll((long long)b) - 1], 1u);
}

/* The partition table on the device: per rank PART doubles, its box (4), its number of cover
 * blocks, then RDX_DIST_COVER_MAX blocks (points_hd.h). */
constexpr int PART = 5 + 4 * RDX_DIST_COVER_MAX;

/* The rounds' routes into mask (one bit per rank asked), per-rank totals into counts, the smallest
 * refused row into *bad (round 1 only):
 *  - window, within, match: every rank holding points whose box and blocks the query meets;
 *  - kNN round 1 (kth NULL): the rank owning the query's code, or when it holds no point the
 *    nearest box that holds some (first the lowest rank), recorded in first;
 *  - kNN round 2: every other rank holding points whose box and blocks lie within kth[i]. */
template <typename T>
__global__ void route_kernel(const T *q, int64_t n, int cols, int32_t type, int size, const double *part,
                             unsigned long long nonempty, const double *box, const uint64_t *splitters, const double *kth,
                             int *first, unsigned long long *mask, unsigned long long *counts, unsigned long long *bad) {
  __shared__ unsigned int hist[RDX_DIST_GPU_POINTS_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) hist[t] = 0;
  __syncthreads();
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v[4] = {0, 0, 0, 0};
    unsigned long long m = 0;
    if (!read_query(q, i, cols, type, v)) {
      if (kth == NULL) atomicMin(bad, (unsigned long long)i);
    } else if (type != RDX_POINTS_KNN) {
      for (int p = 0; p < size; p++)
        if (((nonempty >> p) & 1) &&
            rdx_dist_rank_touches(part + PART * p, part + PART * p + 5, (int64_t)part[PART * p + 4], type, v))
          m |= 1ull << p;
    } else if (kth == NULL) {
      if (nonempty) {
        int p = size == 1 ? 0 : rdx_dist_owner_of_code(splitters, size, rdx_dist_code_of(box, v[0], v[1]));
        if (!((nonempty >> p) & 1)) {
          double best = 0;
          p = -1;
          for (int r = 0; r < size; r++)
            if ((nonempty >> r) & 1) {
              double b = rdx_sp_box_min_d2(part + PART * r, v[0], v[1]);
              if (p < 0 || b < best) best = b, p = r;
            }
        }
        first[i] = p;
        m = 1ull << p;
      }
    } else {
      for (int p = 0; p < size; p++)
        if (p != first[i] && ((nonempty >> p) & 1) &&
            rdx_dist_rank_min_d2(part + PART * p, part + PART * p + 5, (int64_t)part[PART * p + 4], v[0], v[1]) <= kth[i])
          m |= 1ull << p;
    }
    count_mask(hist, m);
    mask[i] = m;
  }
  __syncthreads();
  for (int t = threadIdx.x; t < size; t += blockDim.x)
    if (hist[t]) atomicAdd(&counts[t], (unsigned long long)hist[t]);
}

/* Each (query, rank) piece into its rank's group: piece_q the query, send its values, bound its
 * bound (kth[query], or infinity without kth). One global atomic per block and rank reserves the
 * block's slots. */
template <typename T>
__global__ void place_kernel(const T *q, int64_t n, int cols, int size, const unsigned long long *mask,
                             const unsigned long long *start, unsigned long long *cursor, const double *kth,
                             uint32_t *piece_q, T *send, double *bound) {
  __shared__ unsigned int cnt[RDX_DIST_GPU_POINTS_MAX_RANKS];
  __shared__ unsigned long long base[RDX_DIST_GPU_POINTS_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) cnt[t] = 0;
  __syncthreads();
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long m = i < n ? mask[i] : 0;
  count_mask(cnt, m);
  __syncthreads();
  for (int t = threadIdx.x; t < size; t += blockDim.x) {
    base[t] = cnt[t] ? start[t] + atomicAdd(&cursor[t], (unsigned long long)cnt[t]) : 0;
    cnt[t] = 0;
  }
  __syncthreads();
  for (unsigned long long b = m; b; b &= b - 1) {
    const int p = __ffsll((long long)b) - 1;
    const unsigned long long slot = base[p] + atomicAdd(&cnt[p], 1u);
    piece_q[slot] = (uint32_t)i;
    for (int c = 0; c < cols; c++) send[slot * cols + c] = q[i * cols + c];
    bound[slot] = kth != NULL ? kth[i] : INFINITY;
  }
}

/* ---- the shard's answers ---- */

__global__ void map_kernel(uint64_t *rows, int64_t total, const uint64_t *l2g) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x)
    rows[t] = l2g[rows[t]];
}

/* A piece's count: its span of the shard's offsets. */
__global__ void piece_counts_kernel(const uint64_t *offsets, int64_t m, uint64_t *counts) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x)
    counts[j] = offsets[j + 1] - offsets[j];
}

/* kNN, per piece j, on a shard whose ids do not follow the index's: when the shard's k nearest
 * are k of more than k points, the k-th distance, and when that is within the piece's bound a
 * within query at it (wq row ext_of[j]) to bring every point tied there: the shard broke the tie by
 * its own ids, which are not the index's order. */
template <typename T>
__global__ void knn_ext_kernel(const T *q, int64_t m, const uint64_t *off, const uint64_t *ids, const double *xy,
                               int64_t here, int k, int f64, const double *bound, double *kthv, int64_t *ext_of,
                               unsigned long long *n_ext, T *wq) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x) {
    ext_of[j] = -1;
    if (off[j + 1] - off[j] != (uint64_t)k || here <= k) continue;
    const uint64_t lid = ids[off[j + 1] - 1];
    const double kth = rdx_sp_d2(xy[2 * lid], xy[2 * lid + 1], (double)q[2 * j], (double)q[2 * j + 1]);
    kthv[j] = kth;
    if (!(kth <= bound[j])) continue;
    const int64_t e = (int64_t)atomicAdd(n_ext, 1ull);
    ext_of[j] = e;
    wq[3 * e] = q[2 * j];
    wq[3 * e + 1] = q[2 * j + 1];
    wq[3 * e + 2] = (T)rdx_dist_radius_for(kth, f64);
  }
}

/* kNN, per piece: the candidates at computed distance <= the limit (the k-th distance after a
 * within query, else the bound): counted (out NULL) into counts, or written at offs. */
template <typename T>
__global__ void knn_cands_kernel(const T *q, int64_t m, const uint64_t *off, const uint64_t *ids, const uint64_t *off2,
                                 const uint64_t *ids2, const int64_t *ext_of, const double *kthv, const double *bound,
                                 const double *xy, const uint64_t *l2g, uint64_t *counts, const uint64_t *offs,
                                 cand *out) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = ext_of[j];
    const uint64_t *o = e >= 0 ? off2 + e : off + j, *r = e >= 0 ? ids2 : ids;
    const double lim = e >= 0 ? kthv[j] : bound[j];
    const double qx = (double)q[2 * j], qy = (double)q[2 * j + 1];
    uint64_t c = 0;
    for (uint64_t t = o[0]; t < o[1]; t++) {
      const uint64_t lid = r[t];
      const double d2 = rdx_sp_d2(xy[2 * lid], xy[2 * lid + 1], qx, qy);
      if (d2 <= lim) {
        if (out != NULL) out[offs[j] + c] = cand{d2, l2g[lid]};
        c++;
      }
    }
    if (out == NULL) counts[j] = c;
  }
}

/* ---- each query's items together ---- */

__global__ void sum_kernel(const uint32_t *piece_q, const uint64_t *back, int64_t np, unsigned long long *cnt) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < np; j += (int64_t)gridDim.x * blockDim.x)
    if (back[j]) atomicAdd(&cnt[piece_q[j]], (unsigned long long)back[j]);
}

/* A warp per piece: its items (words u64 each, at istart[j] items into items) into its query's
 * span of rows, after the pieces of the same query that took their place first (cur: each
 * query's fill so far). */
__global__ void gather_kernel(const uint32_t *piece_q, const uint64_t *back, const uint64_t *istart, int64_t np, int words,
                             const uint64_t *offs, unsigned long long *cur, const uint64_t *items, uint64_t *rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; j < np; j += warps) {
    const uint64_t c = back[j];
    if (c == 0) continue;
    unsigned long long d = 0;
    if (lane == 0) d = offs[piece_q[j]] + atomicAdd(&cur[piece_q[j]], (unsigned long long)c);
    d = __shfl_sync(0xffffffffu, d, 0);
    const uint64_t *src = items + istart[j] * words;
    uint64_t *dst = rows + d * words;
    for (uint64_t t = lane; t < c * words; t += 32) dst[t] = src[t];
  }
}

/* Merging instead (every piece's ids ascending, as they are when every shard's ids follow the
 * index's): the pieces of each query listed in qp (size slots a query, qn[i] used), then a warp per
 * piece puts each of its ids at its place among the query's sorted ids: its own place in its
 * piece plus the ids below it in the query's other pieces (ids are distinct). */
__global__ void list_kernel(const uint32_t *piece_q, const uint64_t *back, int64_t np, int size, unsigned int *qn,
                            int64_t *qp) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < np; j += (int64_t)gridDim.x * blockDim.x)
    if (back[j]) {
      const uint32_t i = piece_q[j];
      qp[(int64_t)i * size + atomicAdd(&qn[i], 1u)] = j;
    }
}
__global__ void merge_kernel(const uint32_t *piece_q, const uint64_t *back, const uint64_t *istart, int64_t np, int size,
                             const unsigned int *qn, const int64_t *qp, const uint64_t *offs, const uint64_t *items,
                             uint64_t *rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; j < np; j += warps) {
    const uint64_t c = back[j];
    if (c == 0) continue;
    const uint32_t i = piece_q[j];
    const uint64_t *run = items + istart[j];
    const unsigned int others = qn[i];
    for (uint64_t u = lane; u < c; u += 32) {
      const uint64_t x = run[u];
      uint64_t pos = offs[i] + u;
      for (unsigned int e = 0; e < others; e++) {
        const int64_t j2 = qp[(int64_t)i * size + e];
        if (j2 == j) continue;
        const uint64_t *r2 = items + istart[j2];
        uint64_t lo = 0, hi = back[j2]; /* ids of r2 below x */
        while (lo < hi) {
          const uint64_t mid = lo + (hi - lo) / 2;
          if (r2[mid] < x) lo = mid + 1;
          else hi = mid;
        }
        pos += lo;
      }
      rows[pos] = x;
    }
  }
}

/* Candidates to two arrays: the distance's bits (non-negative doubles order as their bits) and the id. */
__global__ void split_kernel(const cand *c, int64_t n, uint64_t *d2bits, uint64_t *gid) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (int64_t)gridDim.x * blockDim.x) {
    d2bits[t] = (uint64_t)__double_as_longlong(c[t].d2);
    gid[t] = c[t].gid;
  }
}

/* Each query's k-th distance among its sorted candidates, infinity with fewer than k. */
__global__ void kth_kernel(const uint64_t *offs, int64_t n, int k, const uint64_t *d2bits, double *kth) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    kth[i] = offs[i + 1] - offs[i] >= (uint64_t)k ? __longlong_as_double((long long)d2bits[offs[i] + k - 1]) : INFINITY;
}

/* The first k of each query's sorted candidates: counts, then (rows not NULL) their ids. */
__global__ void take_kernel(const uint64_t *offs, int64_t n, int k, const uint64_t *gid, uint64_t *counts,
                            const uint64_t *out_offs, uint64_t *rows) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t c = offs[i + 1] - offs[i];
    if (c > (uint64_t)k) c = (uint64_t)k;
    if (rows == NULL) counts[i] = c;
    else
      for (uint64_t t = 0; t < c; t++) rows[out_offs[i] + t] = gid[offs[i] + t];
  }
}

unsigned capped_grid(int64_t n) {
  unsigned b = rdx_grid(n, kThreads);
  return b > 8192 ? 8192 : b;
}

/* The host path's sentence for query row `row` (points.c checks the same, in the same order). */
rdx_status bad_row(rdx_context *ctx, const char *fn, rdx_array in, int32_t type, int64_t row) {
  const int cols = in.columns;
  const size_t es = rdx_dtype_size(in.dtype);
  unsigned char raw[32];
  RDX_CHECK(rdx_copy(ctx, raw, RDX_HOST, (const char *)in.data + (size_t)row * cols * es, in.where, (size_t)cols * es));
  for (int c = 0; c < cols; c++) {
    double v = rdx_sp_at(raw, c, in.dtype == RDX_F64);
    if (!isfinite(v))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a coordinate that is not finite", fn,
                      (long long)row);
    if (type == RDX_POINTS_WITHIN && c == 2 && v < 0)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a negative radius %g", fn, (long long)row, v);
  }
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: queries row %lld was refused on the GPU but passes on the host", fn,
                  (long long)row);
}

/* What one round leaves on the asking rank: its pieces (the query of each, in the order they
 * went), how many items each brought back, and the items packed in that order. */
struct trip {
  int64_t np, n_items;
  void *piece_q, *back, *items;
};
void trip_free(rdx_context *ctx, trip *t) {
  rdx_mem_free(ctx, t->piece_q);
  rdx_mem_free(ctx, t->back);
  rdx_mem_free(ctx, t->items);
  memset(t, 0, sizeof *t);
}

/* The parts of a round that run on every rank alike: route (route_kernel's rules; kth and first as
 * there), place, exchange, answer, return. qd: this rank's n queries on its GPU. On round 1 a
 * refused row fails the call with the host path's sentence. */
template <typename T>
rdx_status round_trip(rdx_comm *comm, const char *fn, const shard_view *sv, const rdx_points_query *query, rdx_array in,
                      const T *qd, const double *d_part, unsigned long long nonempty, const double *d_box,
                      const uint64_t *d_split, const double *kth, int *first, trip *t) {
  rdx_context *ctx = comm->ctx;
  cudaStream_t s = rdx_stream(ctx);
  const int size = comm->size, cols = in.columns, f64 = in.dtype == RDX_F64, knn = query->type == RDX_POINTS_KNN;
  const int64_t n = in.count;
  const size_t row = (size_t)cols * sizeof(T), item = knn ? sizeof(cand) : 8;
  int64_t *h = NULL; /* send, recv, rsend, rrecv, starts (size each), bounds (size + 1) */
  unsigned long long *hs = NULL; /* size + 1 words to and from the device */
  void *small = NULL, *mask = NULL, *send_q = NULL, *send_b = NULL, *recv_q = NULL, *recv_b = NULL, *acounts = NULL,
       *aoffs = NULL, *aitems = NULL, *ext_of = NULL, *kthv = NULL, *wq = NULL;
  rdx_result *res = NULL, *res2 = NULL;
  int64_t m = 0;
  memset(t, 0, sizeof *t);
  double t0;

  /* 1. routes and pieces */
  rdx_status st = rdx_dist_take(ctx, fn, &h, 6 * (int64_t)size + 1, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &hs, size + 1, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &small, 2 * (int64_t)size + 1, 8); /* counts, bad; then starts, cursors */
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &mask, n, 8);
  if (st == RDX_OK) {
    unsigned long long *counts = (unsigned long long *)small, *bad = counts + size;
    st = rdx_cuda_ok(ctx, cudaMemsetAsync(small, 0, (size_t)size * 8, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(bad, 0xFF, 8, s), fn);
    if (st == RDX_OK && n > 0) {
      route_kernel<T><<<rdx_grid(n, kThreads), kThreads, 0, s>>>(qd, n, cols, query->type, size, d_part, nonempty, d_box,
                                                                 d_split, kth, first, (unsigned long long *)mask, counts, bad);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(hs, small, (size_t)(size + 1) * 8, cudaMemcpyDeviceToHost, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
    if (st == RDX_OK && hs[size] != kNone) st = bad_row(ctx, fn, in, query->type, (int64_t)hs[size]);
  }
  if (st == RDX_OK) {
    for (int p = 0; p < size; p++) h[p] = (int64_t)hs[p];
    t->np = rdx_dist_scan(h, size, h + 4 * size);
    st = rdx_dist_dev_take(ctx, fn, &t->piece_q, t->np, 4);
  }
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &send_q, t->np, row);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &send_b, t->np, 8);
  if (st == RDX_OK && n > 0) {
    unsigned long long *start = (unsigned long long *)small, *cursor = start + size + 1;
    for (int p = 0; p < size; p++) hs[p] = (unsigned long long)h[4 * size + p];
    st = rdx_cuda_ok(ctx, cudaMemcpyAsync(start, hs, (size_t)size * 8, cudaMemcpyHostToDevice, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cursor, 0, (size_t)size * 8, s), fn);
    if (st == RDX_OK) {
      place_kernel<T><<<rdx_grid(n, kThreads), kThreads, 0, s>>>(qd, n, cols, size, (const unsigned long long *)mask, start, cursor,
                                                                 kth, (uint32_t *)t->piece_q, (T *)send_q, (double *)send_b);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn); /* hs is read by the copy above */
  }
  rdx_mem_free(ctx, mask), mask = NULL;
  RDX_DIST_AGREE(st);

  /* 2. the pieces to their ranks */
  {
    int64_t *send = h, *recv = h + size, *rsend = h + 2 * size, *rrecv = h + 3 * size, *bounds = h + 5 * size;
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
    m = rdx_dist_scan(recv, size, bounds);
    bounds[size] = m;
    st = rdx_dist_dev_take(ctx, fn, &recv_q, m, row);
    if (st == RDX_OK && knn) st = rdx_dist_dev_take(ctx, fn, &recv_b, m, 8);
    if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &t->back, t->np, 8);
    RDX_DIST_AGREE(st);
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_q, send, recv_q, recv, row), st, done);
    if (knn) RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_b, send, recv_b, recv, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    rdx_mem_free(ctx, send_q), send_q = NULL;
    rdx_mem_free(ctx, send_b), send_b = NULL;

    /* 3. the shard answers what it got, on its own GPU, in the index's ids */
    const double t_shard = rdx_now_ms();
    st = rdx_points_query_alloc(ctx, sv->shard, rdx_device_matrix(recv_q, m, cols, in.dtype), query, &res);
    if (st == RDX_OK && !knn) {
      aoffs = res->offsets, aitems = res->row_ids; /* still res's */
      if (res->total > 0) {
        map_kernel<<<capped_grid((int64_t)res->total), kThreads, 0, s>>>(res->row_ids, (int64_t)res->total, sv->l2g);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &acounts, m, 8);
      if (st == RDX_OK && m > 0) {
        piece_counts_kernel<<<capped_grid(m), kThreads, 0, s>>>((const uint64_t *)aoffs, m, (uint64_t *)acounts);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
    } else if (st == RDX_OK) {
      void *d_next = NULL;
      unsigned long long n_ext = 0;
      uint64_t total = 0;
      st = rdx_dist_dev_take(ctx, fn, &ext_of, m, 8);
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &kthv, m, 8);
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &wq, 3 * m, sizeof(T));
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d_next, 1, 8);
      if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(d_next, 0, 8, s), fn);
      /* ids in the index's order: the shard's own k nearest are the ones to send (ext_of all -1) */
      if (st == RDX_OK && sv->ascending) st = rdx_cuda_ok(ctx, cudaMemsetAsync(ext_of, 0xFF, (size_t)(m > 0 ? m : 1) * 8, s), fn);
      if (st == RDX_OK && m > 0 && !sv->ascending) {
        knn_ext_kernel<T><<<capped_grid(m), kThreads, 0, s>>>((const T *)recv_q, m, res->offsets, res->row_ids, sv->xy, sv->here,
                                                              query->k, f64, (const double *)recv_b, (double *)kthv,
                                                              (int64_t *)ext_of, (unsigned long long *)d_next, (T *)wq);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
      if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, &n_ext, d_next, 8);
      rdx_mem_free(ctx, d_next);
      if (st == RDX_OK && n_ext > 0) {
        rdx_points_query wi = RDX_POINTS_QUERY_INIT;
        wi.type = RDX_POINTS_WITHIN;
        st = rdx_points_query_alloc(ctx, sv->shard, rdx_device_matrix(wq, (int64_t)n_ext, 3, in.dtype), &wi, &res2);
      }
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &acounts, m, 8);
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &aoffs, m + 1, 8);
      for (int pass = 0; pass < 2 && st == RDX_OK; pass++) {
        if (m > 0) {
          knn_cands_kernel<T><<<capped_grid(m), kThreads, 0, s>>>(
              (const T *)recv_q, m, res->offsets, res->row_ids, res2 ? res2->offsets : NULL, res2 ? res2->row_ids : NULL,
              (const int64_t *)ext_of, (const double *)kthv, (const double *)recv_b, sv->xy, sv->l2g, (uint64_t *)acounts,
              (const uint64_t *)aoffs, pass ? (cand *)aitems : NULL);
          st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
        }
        if (st == RDX_OK && pass == 0) st = rdx_csr_scan_cuda(ctx, (const uint64_t *)acounts, m, (uint64_t *)aoffs, &total);
        if (st == RDX_OK && pass == 0) st = rdx_dist_dev_take(ctx, fn, &aitems, (int64_t)total, sizeof(cand));
      }
    }
    /* each asking rank's items: its pieces' span of the answers; the wait also makes acounts and
     * aitems whole before the exchange below, where the other ranks read them */
    for (int p = 0; st == RDX_OK && p <= size; p++)
      st = rdx_cuda_ok(ctx, cudaMemcpyAsync(&hs[p], (const uint64_t *)aoffs + bounds[p], 8, cudaMemcpyDeviceToHost, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
    ctx->dist_shard_ms += rdx_now_ms() - t_shard;
    if (st == RDX_OK)
      for (int p = 0; p < size; p++) rsend[p] = (int64_t)(hs[p + 1] - hs[p]);
    RDX_DIST_AGREE(st);

    /* 4. the counts and the items back to the ranks that asked */
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, acounts, recv, t->back, send, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, rsend, rrecv), st, done);
    for (int p = 0; p < size; p++) t->n_items += rrecv[p];
    st = rdx_dist_dev_take(ctx, fn, &t->items, t->n_items, item);
    RDX_DIST_AGREE(st);
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, aitems, rsend, t->items, rrecv, item), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
  }
done:
  if (st != RDX_OK) trip_free(ctx, t);
  if (knn) {
    rdx_mem_free(ctx, aoffs);
    rdx_mem_free(ctx, aitems);
  }
  rdx_result_free(ctx, res);
  rdx_result_free(ctx, res2);
  rdx_mem_free(ctx, h);
  rdx_mem_free(ctx, hs);
  rdx_mem_free(ctx, small);
  rdx_mem_free(ctx, mask);
  rdx_mem_free(ctx, send_q);
  rdx_mem_free(ctx, send_b);
  rdx_mem_free(ctx, recv_q);
  rdx_mem_free(ctx, recv_b);
  rdx_mem_free(ctx, acounts);
  rdx_mem_free(ctx, ext_of);
  rdx_mem_free(ctx, kthv);
  rdx_mem_free(ctx, wq);
  return st;
}

/* Each query's items from the trips: offs (n + 1) and rows (items of `words` u64 each; each
 * query's in no set order), *total items. merge (one trip of ids, each piece's ascending, size
 * ranks): each query's ids ascending instead. */
rdx_status group(rdx_context *ctx, const char *fn, int64_t n, const trip *ts, int nt, int words, int merge, int size,
                 void **offs, void **rows, uint64_t *total) {
  cudaStream_t s = rdx_stream(ctx);
  void *cnt = NULL, *istart = NULL, *qp = NULL;
  int64_t most = 0;
  *offs = *rows = NULL;
  for (int w = 0; w < nt; w++) most = ts[w].np > most ? ts[w].np : most;
  rdx_status st = rdx_dist_dev_take(ctx, fn, &cnt, n, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, offs, n + 1, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &istart, most + 1, 8);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cnt, 0, (size_t)(n > 0 ? n : 1) * 8, s), fn);
  for (int w = 0; w < nt && st == RDX_OK; w++)
    if (ts[w].np > 0) {
      sum_kernel<<<capped_grid(ts[w].np), kThreads, 0, s>>>((const uint32_t *)ts[w].piece_q, (const uint64_t *)ts[w].back,
                                                            ts[w].np, (unsigned long long *)cnt);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
  if (st == RDX_OK) st = rdx_csr_scan_cuda(ctx, (const uint64_t *)cnt, n, (uint64_t *)*offs, total);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, rows, (int64_t)*total, 8 * (size_t)words);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cnt, 0, (size_t)(n > 0 ? n : 1) * 8, s), fn);
  uint64_t got = 0;
  for (int w = 0; w < nt && st == RDX_OK; w++) {
    uint64_t items = 0;
    st = rdx_csr_scan_cuda(ctx, (const uint64_t *)ts[w].back, ts[w].np, (uint64_t *)istart, &items);
    got += items;
    if (st == RDX_OK && items != (uint64_t)ts[w].n_items)
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %lld items came back for pieces that count %llu", fn, (long long)ts[w].n_items,
                    (unsigned long long)items);
    if (st == RDX_OK && ts[w].np > 0 && merge) {
      /* cnt, zero again, counts each query's pieces */
      st = rdx_dist_dev_take(ctx, fn, &qp, n * (int64_t)size, 8);
      if (st == RDX_OK) {
        list_kernel<<<capped_grid(ts[w].np), kThreads, 0, s>>>((const uint32_t *)ts[w].piece_q, (const uint64_t *)ts[w].back,
                                                               ts[w].np, size, (unsigned int *)cnt, (int64_t *)qp);
        merge_kernel<<<capped_grid(32 * ts[w].np), kThreads, 0, s>>>(
            (const uint32_t *)ts[w].piece_q, (const uint64_t *)ts[w].back, (const uint64_t *)istart, ts[w].np, size,
            (const unsigned int *)cnt, (const int64_t *)qp, (const uint64_t *)*offs, (const uint64_t *)ts[w].items,
            (uint64_t *)*rows);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
    } else if (st == RDX_OK && ts[w].np > 0) {
      gather_kernel<<<capped_grid(32 * ts[w].np), kThreads, 0, s>>>(
          (const uint32_t *)ts[w].piece_q, (const uint64_t *)ts[w].back, (const uint64_t *)istart, ts[w].np, words,
          (const uint64_t *)*offs, (unsigned long long *)cnt, (const uint64_t *)ts[w].items, (uint64_t *)*rows);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
  }
  if (st == RDX_OK && got != *total)
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %llu items for queries that count %llu", fn, (unsigned long long)got,
                  (unsigned long long)*total);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, istart);
  rdx_mem_free(ctx, qp);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *offs);
    rdx_mem_free(ctx, *rows);
    *offs = *rows = NULL;
  }
  return st;
}

/* Each query's candidates (cands, total of them, spans offs) ordered by distance, then id, into
 * *d2bits and *gid: two stable segmented sorts, the second by the first key. */
rdx_status sort_cands(rdx_context *ctx, const char *fn, int64_t n, const void *offs, const void *cands, uint64_t total,
                      void **d2bits, void **gid) {
  cudaStream_t s = rdx_stream(ctx);
  void *d2b = NULL, *gidb = NULL;
  const int64_t nt = (int64_t)total;
  const uint64_t *o = (const uint64_t *)offs;
  *d2bits = *gid = NULL;
  rdx_status st = rdx_dist_dev_take(ctx, fn, d2bits, nt, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, gid, nt, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d2b, nt, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &gidb, nt, 8);
  if (st == RDX_OK && nt > 0) {
    split_kernel<<<capped_grid(nt), kThreads, 0, s>>>((const cand *)cands, nt, (uint64_t *)*d2bits, (uint64_t *)*gid);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    if (st == RDX_OK)
      st = rdx_cub_run(ctx, fn, [&](void *tmp, size_t &bytes) {
        return cub::DeviceSegmentedSort::StableSortPairs(tmp, bytes, (const uint64_t *)*gid, (uint64_t *)gidb,
                                                         (const uint64_t *)*d2bits, (uint64_t *)d2b, nt, n, o, o + 1, s);
      });
    if (st == RDX_OK)
      st = rdx_cub_run(ctx, fn, [&](void *tmp, size_t &bytes) {
        return cub::DeviceSegmentedSort::StableSortPairs(tmp, bytes, (const uint64_t *)d2b, (uint64_t *)*d2bits,
                                                         (const uint64_t *)gidb, (uint64_t *)*gid, nt, n, o, o + 1, s);
      });
  }
  rdx_mem_free(ctx, d2b);
  rdx_mem_free(ctx, gidb);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *d2bits);
    rdx_mem_free(ctx, *gid);
    *d2bits = *gid = NULL;
  }
  return st;
}

template <typename T>
rdx_status run(rdx_comm *comm, const char *fn, const shard_view *sv, const rdx_points_query *query, rdx_array in,
               const rdx_dist_gpu_points *gp, int ascending, rdx_result **out) {
  rdx_context *ctx = comm->ctx;
  cudaStream_t s = rdx_stream(ctx);
  const int size = comm->size, knn = query->type == RDX_POINTS_KNN;
  const int64_t n = in.count;
  const size_t row = (size_t)in.columns * sizeof(T);
  double *h_part = NULL;
  void *q = NULL, *d_part = NULL, *d_box = NULL, *d_split = NULL, *first = NULL, *kth = NULL, *offs = NULL, *rows = NULL,
       *d2bits = NULL, *gid = NULL, *cnt = NULL, *final_offs = NULL, *final_rows = NULL;
  rdx_result *r = NULL;
  trip t1, t2;
  memset(&t1, 0, sizeof t1);
  memset(&t2, 0, sizeof t2);
  uint64_t total = 0;
  unsigned long long nonempty = 0;
  for (int p = 0; p < size; p++)
    if (gp->rank_counts[p] > 0) nonempty |= 1ull << p;
  ctx->dist_exchange_ms = 0;
  ctx->dist_shard_ms = 0;

  rdx_status st = RDX_OK;
  if (in.where != RDX_DEVICE) {
    st = rdx_dist_dev_take(ctx, fn, &q, n, row);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, q, in.data, (size_t)n * row);
  }
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &h_part, PART * (int64_t)size, 8);
  if (st == RDX_OK) {
    for (int p = 0; p < size; p++) {
      memcpy(h_part + PART * p, gp->boxes + 4 * p, 4 * sizeof(double));
      h_part[PART * p + 4] = (double)gp->n_cover[p];
      memcpy(h_part + PART * p + 5, gp->cover + 4 * RDX_DIST_COVER_MAX * p, (size_t)gp->n_cover[p] * 4 * sizeof(double));
    }
    st = rdx_dist_dev_take(ctx, fn, &d_part, PART * (int64_t)size, 8);
  }
  if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_part, h_part, (size_t)size * PART * sizeof(double));
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d_box, 4, 8);
  if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_box, gp->box, 32);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d_split, size, 8);
  if (st == RDX_OK && size > 1) st = rdx_cuda_memcpy(ctx, d_split, gp->splitters, (size_t)(size - 1) * 8);
  if (st == RDX_OK && knn) st = rdx_dist_dev_take(ctx, fn, &first, n, sizeof(int));
  if (st == RDX_OK && knn) st = rdx_dist_dev_take(ctx, fn, &kth, n, 8);
  RDX_DIST_AGREE(st);
  /* every shard's ids in the index's order: the ids of window, within and match are merged */
  RDX_CHECK_GOTO(comm->ops->allreduce_min_int(comm, &ascending), st, done);
  {
    const T *qd = (const T *)(q != NULL ? q : in.data);
    RDX_CHECK_GOTO(round_trip<T>(comm, fn, sv, query, in, qd, (const double *)d_part, nonempty, (const double *)d_box,
                                 (const uint64_t *)d_split, NULL, (int *)first, &t1),
                   st, done);
    if (!knn) {
      st = group(ctx, fn, n, &t1, 1, 1, ascending, size, &offs, &rows, &total);
      trip_free(ctx, &t1);
      if (st == RDX_OK && n > 0 && !ascending) st = rdx_csr_sort_cuda(ctx, (const uint64_t *)offs, n, (uint64_t *)rows);
      final_offs = offs, final_rows = rows, offs = rows = NULL;
    } else {
      /* the k-th distance of round 1 bounds round 2 */
      st = group(ctx, fn, n, &t1, 1, 2, 0, size, &offs, &rows, &total);
      if (st == RDX_OK) st = sort_cands(ctx, fn, n, offs, rows, total, &d2bits, &gid);
      if (st == RDX_OK && n > 0) {
        kth_kernel<<<capped_grid(n), kThreads, 0, s>>>((const uint64_t *)offs, n, query->k, (const uint64_t *)d2bits, (double *)kth);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
      if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
      rdx_mem_free(ctx, offs), offs = NULL;
      rdx_mem_free(ctx, rows), rows = NULL;
      rdx_mem_free(ctx, d2bits), d2bits = NULL;
      rdx_mem_free(ctx, gid), gid = NULL;
      RDX_DIST_AGREE(st);
      RDX_CHECK_GOTO(round_trip<T>(comm, fn, sv, query, in, qd, (const double *)d_part, nonempty, (const double *)d_box,
                                   (const uint64_t *)d_split, (const double *)kth, (int *)first, &t2),
                     st, done);
      /* merged: the k smallest by (distance, id); candidates are distinct points (each rank's
       * points once, and each rank asked once per query) */
      const trip both[2] = {t1, t2};
      st = group(ctx, fn, n, both, 2, 2, 0, size, &offs, &rows, &total);
      trip_free(ctx, &t1);
      trip_free(ctx, &t2);
      if (st == RDX_OK) st = sort_cands(ctx, fn, n, offs, rows, total, &d2bits, &gid);
      rdx_mem_free(ctx, rows), rows = NULL;
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &cnt, n, 8);
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &final_offs, n + 1, 8);
      if (st == RDX_OK && n > 0) {
        take_kernel<<<capped_grid(n), kThreads, 0, s>>>((const uint64_t *)offs, n, query->k, (const uint64_t *)gid, (uint64_t *)cnt,
                                                        NULL, NULL);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
      if (st == RDX_OK) st = rdx_csr_scan_cuda(ctx, (const uint64_t *)cnt, n, (uint64_t *)final_offs, &total);
      if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &final_rows, (int64_t)total, 8);
      if (st == RDX_OK && n > 0) {
        take_kernel<<<capped_grid(n), kThreads, 0, s>>>((const uint64_t *)offs, n, query->k, (const uint64_t *)gid, NULL,
                                                        (const uint64_t *)final_offs, (uint64_t *)final_rows);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
    }
  }
  /* the result where the queries live */
  if (st == RDX_OK) {
    r = (rdx_result *)calloc(1, sizeof *r);
    if (r == NULL) st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the result", fn);
  }
  if (st == RDX_OK) {
    r->n_queries = n;
    r->total = total;
    r->where = in.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST;
    if (r->where == RDX_DEVICE) {
      r->offsets = (uint64_t *)final_offs, final_offs = NULL;
      r->row_ids = (uint64_t *)final_rows, final_rows = NULL;
    } else {
      st = rdx_mem_alloc(ctx, fn, (void **)&r->offsets, (size_t)(n + 1) * 8, RDX_HOST);
      if (st == RDX_OK) st = rdx_mem_alloc(ctx, fn, (void **)&r->row_ids, (size_t)(total > 0 ? total : 1) * 8, RDX_HOST);
      if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, r->offsets, final_offs, (size_t)(n + 1) * 8);
      if (st == RDX_OK && total > 0) st = rdx_cuda_memcpy(ctx, r->row_ids, final_rows, (size_t)total * 8);
    }
  }
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  RDX_DIST_AGREE(st);
  *out = r;
  r = NULL;
done:
  rdx_result_free(ctx, r);
  trip_free(ctx, &t1);
  trip_free(ctx, &t2);
  rdx_mem_free(ctx, q);
  rdx_mem_free(ctx, d_part);
  rdx_mem_free(ctx, h_part);
  rdx_mem_free(ctx, d_box);
  rdx_mem_free(ctx, d_split);
  rdx_mem_free(ctx, first);
  rdx_mem_free(ctx, kth);
  rdx_mem_free(ctx, offs);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, d2bits);
  rdx_mem_free(ctx, gid);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, final_offs);
  rdx_mem_free(ctx, final_rows);
  return st;
}

}  // namespace

extern "C" rdx_status rdx_dist_gpu_points_query(rdx_comm *comm, const char *fn, const rdx_dist_gpu_points *gp,
                                                const rdx_points_query *query, rdx_array in, rdx_result **out) {
  const shard_view sv = {gp->shard, gp->l2g, gp->xy, gp->here, gp->ascending};
  *out = NULL;
  const int asc = gp->ascending;
  return in.dtype == RDX_F64 ? run<double>(comm, fn, &sv, query, in, gp, asc, out)
                             : run<float>(comm, fn, &sv, query, in, gp, asc, out);
}

extern "C" rdx_status rdx_dist_gpu_upload(rdx_context *ctx, const char *fn, const void *host, int64_t n, void **dev) {
  void *p = NULL;
  RDX_CHECK(rdx_dist_dev_take(ctx, fn, &p, n, 8));
  rdx_status st = n > 0 ? rdx_cuda_memcpy(ctx, p, host, (size_t)n * 8) : RDX_OK;
  if (st != RDX_OK) {
    rdx_mem_free(ctx, p);
    return st;
  }
  *dev = p;
  return RDX_OK;
}
