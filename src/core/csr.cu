/*
 * csr.cu: the GPU halves of csr.c's helpers (the per-query sort is csr_sort.cu): the
 * counts-to-offsets scan, runs of u64 set to one value, and the searches behind the checks of
 * caller input (a value among row ids, the first query whose offsets are wrong).
 */
#include <cub/cub.cuh>

#include "cuda_util.cuh"

namespace {

/* The smallest i < n where pred(i) holds. A thread's first hit in its grid-stride walk is its
 * smallest, so one atomicMin per thread gives the global smallest. */
template <typename P>
__global__ void first_where_kernel(P pred, int64_t n, unsigned long long *first) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    if (pred(i)) {
      atomicMin(first, (unsigned long long)i);
      return;
    }
}

struct equals_u64 {
  const uint64_t *p;
  uint64_t value;
  __device__ bool operator()(int64_t i) const { return p[i] == value; }
};
struct span_wrong {
  const uint64_t *offsets, *counts;
  __device__ bool operator()(int64_t i) const {
    return offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] != counts[i];
  }
};

template <typename P>
rdx_status first_where(rdx_context *ctx, P pred, int64_t n, int64_t *first, const char *what) {
  unsigned long long *d = NULL, h = ~0ull;
  *first = -1;
  if (n <= 0) return RDX_OK;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&d, sizeof *d));
  rdx_status st = RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = rdx_grid(n, 256) < 1024 ? rdx_grid(n, 256) : 1024;
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(d, 0xFF, sizeof *d, s), what, st, done);
  first_where_kernel<P><<<grid, 256, 0, s>>>(pred, n, d);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
  if (h != ~0ull) *first = (int64_t)h;
done:
  rdx_mem_free(ctx, d);
  return st;
}

}  // namespace

extern "C" rdx_status rdx_find_u64_cuda(rdx_context *ctx, const uint64_t *p, int64_t n, uint64_t value,
                                        int64_t *first) {
  return first_where(ctx, equals_u64{p, value}, n, first, "rdx_index_build: row id check");
}

extern "C" rdx_status rdx_offsets_check_cuda(rdx_context *ctx, const char *fn, const uint64_t *offsets,
                                             const uint64_t *counts, int64_t n, int64_t *first) {
  return first_where(ctx, span_wrong{offsets, counts}, n, first, fn);
}

extern "C" rdx_status rdx_csr_scan_cuda(rdx_context *ctx, const uint64_t *counts, int64_t n, uint64_t *offsets,
                                        uint64_t *total) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemsetAsync(offsets, 0, 8, s), "rdx_counts_to_offsets: memset");
  if (n > 0) {
    size_t temp_bytes = 0;
    RDX_CUDA(ctx, cub::DeviceScan::InclusiveSum(NULL, temp_bytes, counts, offsets + 1, n, s), "rdx_counts_to_offsets: size");
    void *temp = NULL;
    RDX_CHECK(rdx_scratch(ctx, "rdx_counts_to_offsets: scratch", &temp, temp_bytes));
    cudaError_t e = cub::DeviceScan::InclusiveSum(temp, temp_bytes, counts, offsets + 1, n, s);
    rdx_status st = RDX_OK;
    if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_counts_to_offsets: scan");
    if (st == RDX_OK) {
      e = cudaMemcpyAsync(total, offsets + n, 8, cudaMemcpyDeviceToHost, s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(s);
      if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_counts_to_offsets: total");
    }
    rdx_mem_free(ctx, temp);
    return st;
  }
  *total = 0;
  return RDX_OK;
}

extern "C" rdx_status rdx_fill_u64_cuda(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones) {
  RDX_CUDA(ctx, cudaMemsetAsync(p, all_ones ? 0xFF : 0, (size_t)n * 8, rdx_stream(ctx)), "fill");
  return RDX_OK;
}
