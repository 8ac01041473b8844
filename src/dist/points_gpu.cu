/*
 * points_gpu.cu: window, within and match queries of a distributed point index answered without
 * leaving the GPUs (rdx_dist_gpu_points_query), the device twin of points.c's host round.
 *
 * A batch on rank r: each query's ranks (points_hd.h's test on the partition table's boxes, as
 * the host round routes), the queries copied out grouped by rank (a piece per query and rank),
 * the device all-to-all, the shard's own query on its GPU, its ids mapped to the index's ids
 * (the l2g copy on the GPU), the per-piece counts and the ids back the same way, each query's ids
 * gathered from the ranks that answered, then sorted (rdx_csr_sort_cuda) as one index orders
 * them. Only per-rank totals and the first bad query row pass through the host. Every phase ends
 * in an agreement (rdx_comm_agree), so a failure on one rank fails the call on all with one
 * sentence and nothing written.
 *
 * Pieces are placed by atomics, so their order within a rank's group varies from run to run; the
 * answer does not, since a query's ids are sorted at the end and a query meets each rank once.
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

/* Each query's ranks as a bit mask (a rank without points is never asked), per-rank totals into
 * counts, and the smallest row with a value that is not finite or a negative radius into *bad. */
template <typename T>
__global__ void route_kernel(const T *q, int64_t n, int cols, int32_t type, int size, const double *boxes,
                             unsigned long long nonempty, unsigned long long *mask, unsigned long long *counts,
                             unsigned long long *bad) {
  __shared__ unsigned int hist[RDX_DIST_GPU_POINTS_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) hist[t] = 0;
  __syncthreads();
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v[4] = {0, 0, 0, 0};
    int ok = 1;
    for (int c = 0; c < cols; c++) {
      v[c] = (double)q[i * cols + c];
      if (!isfinite(v[c])) ok = 0;
    }
    if (type == RDX_POINTS_WITHIN && v[2] < 0) ok = 0;
    unsigned long long m = 0;
    if (ok) {
      for (int p = 0; p < size; p++)
        if (((nonempty >> p) & 1) && rdx_dist_touches(boxes + 4 * p, type, v)) {
          m |= 1ull << p;
          atomicAdd(&hist[p], 1u);
        }
    } else {
      atomicMin(bad, (unsigned long long)i);
    }
    mask[i] = m;
  }
  __syncthreads();
  for (int t = threadIdx.x; t < size; t += blockDim.x)
    if (hist[t]) atomicAdd(&counts[t], (unsigned long long)hist[t]);
}

/* Each (query, rank) piece into its rank's group: piece_q the query, send its values. One global
 * atomic per block and rank reserves the block's slots. */
template <typename T>
__global__ void place_kernel(const T *q, int64_t n, int cols, int size, const unsigned long long *mask,
                             const unsigned long long *start, unsigned long long *cursor, uint32_t *piece_q, T *send) {
  __shared__ unsigned int cnt[RDX_DIST_GPU_POINTS_MAX_RANKS];
  __shared__ unsigned long long base[RDX_DIST_GPU_POINTS_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) cnt[t] = 0;
  __syncthreads();
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long m = i < n ? mask[i] : 0;
  for (unsigned long long b = m; b; b &= b - 1) atomicAdd(&cnt[__ffsll((long long)b) - 1], 1u);
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
  }
}

/* The shard's answers: ids mapped to the index's, and each piece's count. */
__global__ void map_kernel(uint64_t *rows, int64_t total, const uint64_t *l2g) {
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x)
    rows[t] = l2g[rows[t]];
}
__global__ void piece_counts_kernel(const uint64_t *offsets, int64_t m, uint64_t *counts) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x)
    counts[j] = offsets[j + 1] - offsets[j];
}

/* What came back, per query: the sum of its pieces' counts. */
__global__ void sum_kernel(const uint32_t *piece_q, const uint64_t *back, int64_t np, unsigned long long *cnt) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < np; j += (int64_t)gridDim.x * blockDim.x)
    if (back[j]) atomicAdd(&cnt[piece_q[j]], (unsigned long long)back[j]);
}

/* A warp per piece: its ids (at istart[j] of items) into its query's span of rows, after the
 * pieces of the same query that took their place first (cur: each query's fill so far). */
__global__ void gather_kernel(const uint32_t *piece_q, const uint64_t *back, const uint64_t *istart, int64_t np,
                              const uint64_t *offs, unsigned long long *cur, const uint64_t *items, uint64_t *rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; j < np; j += warps) {
    const uint64_t c = back[j];
    if (c == 0) continue;
    unsigned long long d = 0;
    if (lane == 0) d = offs[piece_q[j]] + atomicAdd(&cur[piece_q[j]], (unsigned long long)c);
    d = __shfl_sync(0xffffffffu, d, 0);
    const uint64_t *src = items + istart[j];
    for (uint64_t t = lane; t < c; t += 32) rows[d + t] = src[t];
  }
}

unsigned capped_grid(int64_t n) {
  unsigned b = rdx_grid(n, kThreads);
  return b > 8192 ? 8192 : b;
}

/* Device scratch through the account, or a sentence naming fn. */
rdx_status dev_take(rdx_context *ctx, const char *fn, void *p, int64_t n, size_t item) {
  *(void **)p = NULL;
  return rdx_mem_alloc(ctx, fn, (void **)p, (size_t)(n > 0 ? n : 1) * item, RDX_DEVICE);
}

/* The host path's sentence for query row `row` (points.c checks the same, in the same order). */
rdx_status bad_row(rdx_context *ctx, const char *fn, rdx_array in, int cols, int32_t type, int64_t row) {
  double v[4] = {0, 0, 0, 0};
  const size_t es = rdx_dtype_size(in.dtype);
  unsigned char raw[32];
  RDX_CHECK(rdx_copy(ctx, raw, RDX_HOST, (const char *)in.data + (size_t)row * cols * es, in.where, (size_t)cols * es));
  for (int c = 0; c < cols; c++) {
    v[c] = rdx_sp_at(raw, c, in.dtype == RDX_F64);
    if (!isfinite(v[c]))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a coordinate that is not finite", fn,
                      (long long)row);
    if (type == RDX_POINTS_WITHIN && c == 2 && v[2] < 0)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a negative radius %g", fn, (long long)row,
                      v[2]);
  }
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: queries row %lld was refused on the GPU but passes on the host", fn,
                  (long long)row);
}

}  // namespace

#define AGREE(st)                          \
  do {                                     \
    (st) = rdx_comm_agree(comm, fn, (st)); \
    if ((st) != RDX_OK) goto done;         \
  } while (0)

extern "C" rdx_status rdx_dist_gpu_points_query(rdx_comm *comm, const char *fn, const rdx_points *shard,
                                                const rdx_points_query *query, const double *boxes,
                                                const int64_t *rank_counts, const uint64_t *l2g, rdx_array in,
                                                rdx_result **out) {
  rdx_context *ctx = comm->ctx;
  cudaStream_t s = rdx_stream(ctx);
  const int size = comm->size;
  const int64_t n = in.count;
  const int cols = in.columns;
  const int32_t type = query->type;
  const int f64 = in.dtype == RDX_F64;
  const size_t es = rdx_dtype_size(in.dtype), row = (size_t)cols * es;
  void *q = NULL, *d_boxes = NULL, *d_small = NULL, *mask = NULL, *piece_q = NULL, *send_q = NULL, *recv_q = NULL,
       *acounts = NULL, *back = NULL, *items = NULL, *istart = NULL, *cnt = NULL, *offs = NULL, *rows = NULL;
  int64_t *h = NULL; /* send, recv, rsend, rrecv, start (size each), bounds (size + 1) */
  unsigned long long *h_small = NULL;
  rdx_result *res = NULL, *r = NULL;
  int64_t n_pieces = 0, m = 0, n_items = 0;
  uint64_t total = 0;
  unsigned long long nonempty = 0;
  for (int p = 0; p < size; p++)
    if (rank_counts[p] > 0) nonempty |= 1ull << p;
  *out = NULL;
  ctx->dist_exchange_ms = 0;

  /* 1. the batch on this GPU, each query's ranks, the pieces grouped by rank */
  rdx_status st = rdx_dist_take(ctx, fn, &h, 6 * (int64_t)size + 1, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &h_small, size + 1, 8);
  if (st == RDX_OK && in.where != RDX_DEVICE) {
    st = dev_take(ctx, fn, &q, n, row);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, q, in.data, (size_t)n * row);
  }
  if (st == RDX_OK) st = dev_take(ctx, fn, &d_boxes, 4 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_boxes, boxes, (size_t)size * 32);
  /* counts (size), the bad row (1), then the placement cursors (size) */
  if (st == RDX_OK) st = dev_take(ctx, fn, &d_small, 2 * (int64_t)size + 1, 8);
  if (st == RDX_OK) st = dev_take(ctx, fn, &mask, n, 8);
  if (st == RDX_OK) {
    const void *qd = q != NULL ? q : in.data;
    unsigned long long *counts = (unsigned long long *)d_small, *bad = counts + size;
    st = rdx_cuda_ok(ctx, cudaMemsetAsync(d_small, 0, (size_t)(2 * size + 1) * 8, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(bad, 0xFF, 8, s), fn);
    if (st == RDX_OK && n > 0) {
      if (f64)
        route_kernel<double><<<rdx_grid(n, kThreads), kThreads, 0, s>>>((const double *)qd, n, cols, type, size, (const double *)d_boxes,
                                                                        nonempty, (unsigned long long *)mask, counts, bad);
      else
        route_kernel<float><<<rdx_grid(n, kThreads), kThreads, 0, s>>>((const float *)qd, n, cols, type, size, (const double *)d_boxes,
                                                                       nonempty, (unsigned long long *)mask, counts, bad);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(h_small, d_small, (size_t)(size + 1) * 8, cudaMemcpyDeviceToHost, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
    if (st == RDX_OK && h_small[size] != ~0ull) st = bad_row(ctx, fn, in, cols, type, (int64_t)h_small[size]);
  }
  if (st == RDX_OK) {
    for (int p = 0; p < size; p++) h[p] = (int64_t)h_small[p];
    n_pieces = rdx_dist_scan(h, size, h + 4 * size);
    st = dev_take(ctx, fn, &piece_q, n_pieces, 4);
  }
  if (st == RDX_OK) st = dev_take(ctx, fn, &send_q, n_pieces, row);
  if (st == RDX_OK && n > 0) {
    const void *qd = q != NULL ? q : in.data;
    unsigned long long *start = (unsigned long long *)d_small, *cursor = start + size + 1;
    for (int p = 0; p < size; p++) h_small[p] = (unsigned long long)h[4 * size + p];
    st = rdx_cuda_ok(ctx, cudaMemcpyAsync(start, h_small, (size_t)size * 8, cudaMemcpyHostToDevice, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cursor, 0, (size_t)size * 8, s), fn);
    if (st == RDX_OK) {
      if (f64)
        place_kernel<double><<<rdx_grid(n, kThreads), kThreads, 0, s>>>((const double *)qd, n, cols, size, (const unsigned long long *)mask,
                                                                        start, cursor, (uint32_t *)piece_q, (double *)send_q);
      else
        place_kernel<float><<<rdx_grid(n, kThreads), kThreads, 0, s>>>((const float *)qd, n, cols, size, (const unsigned long long *)mask,
                                                                       start, cursor, (uint32_t *)piece_q, (float *)send_q);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    /* h_small is read by the copy above: wait before it is used again */
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  }
  rdx_mem_free(ctx, mask), mask = NULL;
  rdx_mem_free(ctx, q), q = NULL;
  AGREE(st);

  /* 2. the pieces to their ranks */
  {
    int64_t *send = h, *recv = h + size, *rsend = h + 2 * size, *rrecv = h + 3 * size, *bounds = h + 5 * size;
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
    m = rdx_dist_scan(recv, size, bounds);
    bounds[size] = m;
    st = rdx_comm_check_counts(comm, fn, send, recv);
    if (st == RDX_OK) st = dev_take(ctx, fn, &recv_q, m, row);
    if (st == RDX_OK) st = dev_take(ctx, fn, &acounts, m, 8);
    if (st == RDX_OK) st = dev_take(ctx, fn, &back, n_pieces, 8);
    AGREE(st);
    double t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_q, send, recv_q, recv, row), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    rdx_mem_free(ctx, send_q), send_q = NULL;

    /* 3. the shard answers what it got, on its own GPU, in the index's ids */
    st = rdx_points_query_alloc(ctx, shard, rdx_device_matrix(recv_q, m, cols, in.dtype), query, &res);
    if (st == RDX_OK && res->total > 0) {
      map_kernel<<<capped_grid((int64_t)res->total), kThreads, 0, s>>>(res->row_ids, (int64_t)res->total, l2g);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    if (st == RDX_OK && m > 0) {
      piece_counts_kernel<<<capped_grid(m), kThreads, 0, s>>>(res->offsets, m, (uint64_t *)acounts);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
    }
    /* the ids each asking rank gets back: its pieces' span of the shard's result */
    for (int p = 0; st == RDX_OK && p <= size; p++)
      st = rdx_cuda_ok(ctx, cudaMemcpyAsync(&h_small[p], res->offsets + bounds[p], 8, cudaMemcpyDeviceToHost, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
    if (st == RDX_OK)
      for (int p = 0; p < size; p++) rsend[p] = (int64_t)(h_small[p + 1] - h_small[p]);
    rdx_mem_free(ctx, recv_q), recv_q = NULL;
    AGREE(st);

    /* 4. the counts and the ids back to the ranks that asked */
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, acounts, recv, back, send, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, rsend, rrecv), st, done);
    for (int p = 0; p < size; p++) n_items += rrecv[p];
    st = rdx_comm_check_counts(comm, fn, rsend, rrecv);
    if (st == RDX_OK) st = dev_take(ctx, fn, &items, n_items, 8);
    AGREE(st);
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, res->row_ids, rsend, items, rrecv, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    rdx_result_free(ctx, res), res = NULL;
  }

  /* 5. each query's ids together, sorted */
  st = dev_take(ctx, fn, &cnt, n, 8);
  if (st == RDX_OK) st = dev_take(ctx, fn, &offs, n + 1, 8);
  if (st == RDX_OK) st = dev_take(ctx, fn, &istart, n_pieces + 1, 8);
  if (st == RDX_OK) st = dev_take(ctx, fn, &rows, n_items, 8);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cnt, 0, (size_t)(n > 0 ? n : 1) * 8, s), fn);
  if (st == RDX_OK && n_pieces > 0) {
    sum_kernel<<<capped_grid(n_pieces), kThreads, 0, s>>>((const uint32_t *)piece_q, (const uint64_t *)back, n_pieces,
                                                          (unsigned long long *)cnt);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st == RDX_OK) st = rdx_csr_scan_cuda(ctx, (const uint64_t *)cnt, n, (uint64_t *)offs, &total);
  if (st == RDX_OK) {
    uint64_t pieces_total = 0;
    st = rdx_csr_scan_cuda(ctx, (const uint64_t *)back, n_pieces, (uint64_t *)istart, &pieces_total);
    if (st == RDX_OK && (pieces_total != total || total != (uint64_t)n_items))
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %llu ids came back for pieces that count %llu", fn,
                    (unsigned long long)n_items, (unsigned long long)pieces_total);
  }
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(cnt, 0, (size_t)(n > 0 ? n : 1) * 8, s), fn);
  if (st == RDX_OK && n_pieces > 0) {
    gather_kernel<<<capped_grid(32 * n_pieces), kThreads, 0, s>>>((const uint32_t *)piece_q, (const uint64_t *)back,
                                                                   (const uint64_t *)istart, n_pieces, (const uint64_t *)offs,
                                                                   (unsigned long long *)cnt, (const uint64_t *)items,
                                                                   (uint64_t *)rows);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  rdx_mem_free(ctx, items), items = NULL;
  rdx_mem_free(ctx, istart), istart = NULL;
  rdx_mem_free(ctx, cnt), cnt = NULL;
  if (st == RDX_OK && n > 0) st = rdx_csr_sort_cuda(ctx, (const uint64_t *)offs, n, (uint64_t *)rows);
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
      r->offsets = (uint64_t *)offs, offs = NULL;
      r->row_ids = (uint64_t *)rows, rows = NULL;
    } else {
      st = rdx_mem_alloc(ctx, fn, (void **)&r->offsets, (size_t)(n + 1) * 8, RDX_HOST);
      if (st == RDX_OK) st = rdx_mem_alloc(ctx, fn, (void **)&r->row_ids, (size_t)(total > 0 ? total : 1) * 8, RDX_HOST);
      if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, r->offsets, offs, (size_t)(n + 1) * 8);
      if (st == RDX_OK && total > 0) st = rdx_cuda_memcpy(ctx, r->row_ids, rows, (size_t)total * 8);
    }
  }
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  AGREE(st);
  *out = r;
  r = NULL;
done:
  rdx_result_free(ctx, r);
  rdx_result_free(ctx, res);
  rdx_mem_free(ctx, q);
  rdx_mem_free(ctx, d_boxes);
  rdx_mem_free(ctx, d_small);
  rdx_mem_free(ctx, mask);
  rdx_mem_free(ctx, piece_q);
  rdx_mem_free(ctx, send_q);
  rdx_mem_free(ctx, recv_q);
  rdx_mem_free(ctx, acounts);
  rdx_mem_free(ctx, back);
  rdx_mem_free(ctx, items);
  rdx_mem_free(ctx, istart);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, offs);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, h);
  rdx_mem_free(ctx, h_small);
  return st;
}

extern "C" rdx_status rdx_dist_gpu_upload_u64(rdx_context *ctx, const char *fn, const uint64_t *host, int64_t n,
                                              uint64_t **dev) {
  void *p = NULL;
  RDX_CHECK(dev_take(ctx, fn, &p, n, 8));
  rdx_status st = n > 0 ? rdx_cuda_memcpy(ctx, p, host, (size_t)n * 8) : RDX_OK;
  if (st != RDX_OK) {
    rdx_mem_free(ctx, p);
    return st;
  }
  *dev = (uint64_t *)p;
  return RDX_OK;
}
