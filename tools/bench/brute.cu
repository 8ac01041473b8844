/*
 * brute.cu: the brute-force GPU baselines of the benchmarks (`raydex bench points`): every query
 * tests every point, with no index. One thread per query; blocks stage the points in shared
 * memory in tiles, so each point is read from global memory once per block and the scan runs at
 * shared-memory speed (the best a scan can do: n * m tests).
 *
 * Counts only for point, window and within-distance queries (what the benchmark times and
 * checks); kNN keeps a k-candidate heap per query in global scratch and writes the ids.
 *
 * Part of the raydex program, not of the library (brute_nocuda.c stands in without CUDA). It
 * uses the spatial module's CUDA helpers: scratch through the context's account, its stream, and
 * the query arithmetic the API defines (geom_hd.h), as the tests use internals.
 */
#include "spatial/sp_cuda.cuh"

extern "C" {
#include "cli.h"
}

namespace {

using namespace rdx_sp;

#define BB 256
#define BTILE 2048

template <typename T>
__global__ void __launch_bounds__(BB) brute_count_kernel(const T *xy, int64_t n, const T *q, int type, int64_t m,
                                                         uint64_t *counts) {
  __shared__ T sx[BTILE], sy[BTILE];
  for (int64_t b0 = (int64_t)blockIdx.x * BB; b0 < m; b0 += (int64_t)gridDim.x * BB) {
    int64_t i = b0 + threadIdx.x;
    int have = i < m;
    rdx_sp_q qq = {0, 0, 0, 0, 0};
    if (have) qq = rdx_sp_load_query(q, i, type, sizeof(T) == 8);
    uint64_t c = 0;
    for (int64_t t0 = 0; t0 < n; t0 += BTILE) {
      int64_t tn = n - t0 < BTILE ? n - t0 : BTILE;
      __syncthreads();
      for (int64_t j = threadIdx.x; j < tn; j += BB) {
        sx[j] = xy[2 * (t0 + j)];
        sy[j] = xy[2 * (t0 + j) + 1];
      }
      __syncthreads();
      if (have)
        for (int64_t j = 0; j < tn; j++) c += rdx_sp_hit(type, &qq, (double)sx[j], (double)sy[j]);
    }
    if (have) counts[i] = c;
  }
}

template <typename T>
__global__ void __launch_bounds__(BB) brute_knn_kernel(const T *xy, int64_t n, const T *q, int64_t m, int k, double *hd,
                                                       uint64_t *hi, uint64_t *rows) {
  __shared__ T sx[BTILE], sy[BTILE];
  for (int64_t b0 = (int64_t)blockIdx.x * BB; b0 < m; b0 += (int64_t)gridDim.x * BB) {
    int64_t i = b0 + threadIdx.x;
    int have = i < m;
    double qx = have ? (double)q[2 * i] : 0, qy = have ? (double)q[2 * i + 1] : 0;
    double *d = hd + (have ? i : 0) * (int64_t)k;
    uint64_t *id = hi + (have ? i : 0) * (int64_t)k;
    int size = 0;
    for (int64_t t0 = 0; t0 < n; t0 += BTILE) {
      int64_t tn = n - t0 < BTILE ? n - t0 : BTILE;
      __syncthreads();
      for (int64_t j = threadIdx.x; j < tn; j += BB) {
        sx[j] = xy[2 * (t0 + j)];
        sy[j] = xy[2 * (t0 + j) + 1];
      }
      __syncthreads();
      if (have)
        for (int64_t j = 0; j < tn; j++) {
          double dd = rdx_sp_d2((double)sx[j], (double)sy[j], qx, qy);
          if (size < k || rdx_sp_less(dd, (uint64_t)(t0 + j), d[0], id[0]))
            rdx_sp_heap_offer(d, id, &size, k, dd, (uint64_t)(t0 + j));
        }
    }
    if (have) {
      rdx_sp_heap_sort(d, id, size);
      for (int j = 0; j < size; j++) rows[i * (int64_t)k + j] = id[j];
    }
  }
}

}  // namespace

extern "C" rdx_status bench_brute_count(rdx_context *ctx, const void *xy, int f64, int64_t n, int type, const void *q,
                                        int64_t m, uint64_t *counts) {
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = blocks_for(m, BB);
  if (f64)
    brute_count_kernel<double><<<grid, BB, 0, s>>>((const double *)xy, n, (const double *)q, type, m, counts);
  else
    brute_count_kernel<float><<<grid, BB, 0, s>>>((const float *)xy, n, (const float *)q, type, m, counts);
  SP_LAUNCH_CHECK(ctx, "bench_brute_count: kernel");
  return rdx_cuda_sync(ctx, "bench_brute_count");
}

extern "C" rdx_status bench_brute_knn(rdx_context *ctx, const void *xy, int f64, int64_t n, const void *q, int64_t m, int k,
                                      uint64_t *rows) {
  scratch mm(ctx);
  double *hd;
  uint64_t *hi;
  RDX_CHECK(mm.get(&hd, (size_t)m * (size_t)k, "bench_brute_knn"));
  RDX_CHECK(mm.get(&hi, (size_t)m * (size_t)k, "bench_brute_knn"));
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = blocks_for(m, BB);
  if (f64)
    brute_knn_kernel<double><<<grid, BB, 0, s>>>((const double *)xy, n, (const double *)q, m, k, hd, hi, rows);
  else
    brute_knn_kernel<float><<<grid, BB, 0, s>>>((const float *)xy, n, (const float *)q, m, k, hd, hi, rows);
  SP_LAUNCH_CHECK(ctx, "bench_brute_knn: kernel");
  return rdx_cuda_sync(ctx, "bench_brute_knn");
}
