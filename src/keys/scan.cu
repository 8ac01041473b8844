/*
 * scan.cu: the scan kind on the GPU: the column in ascending row order, and one thread block per
 * query that reads all of it. The baseline every index must beat; O(n) per query.
 *
 * Rows ascend along the column, so the first match is the smallest row, and an ordered block-wide
 * compaction (CUB BlockScan) writes each query's rows already ascending.
 */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda/std/tuple>
#include <new>

#include "core/cuda_util.cuh"
#include "keys/keys.h"

namespace {

constexpr int THREADS = 256;

struct scan_impl {
  uint64_t *keys; /* n keys widened to u64, ascending row order */
  uint64_t *rows; /* n rows, ascending */
  int64_t n;
};

struct row_key {
  uint64_t row, key;
};
struct decompose_row_key {
  __host__ __device__ cuda::std::tuple<uint64_t &, uint64_t &> operator()(row_key &p) const { return {p.row, p.key}; }
};

template <typename K, typename R>
__global__ void gather_kernel(const K *keys, const R *rows, int64_t n, row_key *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    out[i].key = keys[i];
    out[i].row = rows ? (uint64_t)rows[i] : (uint64_t)i;
  }
}

__global__ void split_kernel(const row_key *p, int64_t n, uint64_t *keys, uint64_t *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    keys[i] = p[i].key;
    rows[i] = p[i].row;
  }
}

template <typename Q>
__device__ __forceinline__ void bounds(const Q *q, int64_t i, int range, uint64_t *lo, uint64_t *hi) {
  *lo = range ? (uint64_t)q[2 * i] : (uint64_t)q[i];
  *hi = range ? (uint64_t)q[2 * i + 1] : *lo;
}

/* op 0: first row (RDX_MISS if none) into out; op 1: count into out; op 2: rows at offsets */
template <typename Q>
__global__ void __launch_bounds__(THREADS) scan_kernel(const uint64_t *keys, const uint64_t *rows, int64_t n,
                                                       const Q *q, int64_t m, int range, int op, uint64_t *out,
                                                       uint64_t *fill_rows) {
  typedef cub::BlockReduce<unsigned long long, THREADS> reduce_t;
  typedef cub::BlockScan<unsigned long long, THREADS> scan_t;
  __shared__ union {
    typename reduce_t::TempStorage reduce;
    typename scan_t::TempStorage scan;
  } tmp;
  __shared__ unsigned long long written;
  for (int64_t i = blockIdx.x; i < m; i += gridDim.x) {
    uint64_t lo, hi;
    bounds(q, i, range, &lo, &hi);
    if (op == 0) {
      unsigned long long best = ~0ull; /* smallest matching index */
      for (int64_t k = threadIdx.x; k < n; k += THREADS)
        if (keys[k] >= lo && keys[k] <= hi && (unsigned long long)k < best) best = (unsigned long long)k;
      unsigned long long b = reduce_t(tmp.reduce).Reduce(best, cuda::minimum<>{});
      if (threadIdx.x == 0) out[i] = b == ~0ull ? RDX_MISS : rows[b];
    } else if (op == 1) {
      unsigned long long c = 0;
      for (int64_t k = threadIdx.x; k < n; k += THREADS) c += keys[k] >= lo && keys[k] <= hi;
      unsigned long long total = reduce_t(tmp.reduce).Sum(c);
      if (threadIdx.x == 0) out[i] = total;
    } else {
      if (threadIdx.x == 0) written = 0;
      __syncthreads();
      uint64_t *dst = fill_rows + out[i];
      for (int64_t base = 0; base < n; base += THREADS) {
        int64_t k = base + threadIdx.x;
        unsigned long long hit = k < n && keys[k] >= lo && keys[k] <= hi, pos, sum;
        scan_t(tmp.scan).ExclusiveSum(hit, pos, sum);
        if (hit) dst[written + pos] = rows[k];
        __syncthreads();
        if (threadIdx.x == 0) written += sum;
        __syncthreads();
      }
    }
    __syncthreads();
  }
}

rdx_status scan_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  scan_impl *s = new (std::nothrow) scan_impl();
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: scan handle");
  s->n = in->n;
  cudaStream_t strm = rdx_stream(ctx);
  row_key *a = NULL, *b = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  rdx_status st;
  unsigned g = rdx_grid(in->n, THREADS);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan keys", (void **)&s->keys, (size_t)in->n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan rows", (void **)&s->rows, (size_t)in->n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: scan pairs", (void **)&a, (size_t)in->n * sizeof *a), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: scan pairs", (void **)&b, (size_t)in->n * sizeof *b), st, fail);
  if (in->key_dtype == RDX_U32)
    in->rows == NULL || in->row_dtype == RDX_U32
        ? gather_kernel<uint32_t, uint32_t><<<g, THREADS, 0, strm>>>((const uint32_t *)in->keys, (const uint32_t *)in->rows, in->n, a)
        : gather_kernel<uint32_t, uint64_t><<<g, THREADS, 0, strm>>>((const uint32_t *)in->keys, (const uint64_t *)in->rows, in->n, a);
  else
    in->rows == NULL || in->row_dtype == RDX_U32
        ? gather_kernel<uint64_t, uint32_t><<<g, THREADS, 0, strm>>>((const uint64_t *)in->keys, (const uint32_t *)in->rows, in->n, a)
        : gather_kernel<uint64_t, uint64_t><<<g, THREADS, 0, strm>>>((const uint64_t *)in->keys, (const uint64_t *)in->rows, in->n, a);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: scan gather", st, fail);
  {
    /* stable sort by (row, key): rows ascending, as the scan needs */
    cub::DoubleBuffer<row_key> buf(a, b);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, buf, in->n, decompose_row_key{}, strm),
                  "rdx_index_build: scan sort size", st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: scan sort scratch", &temp, temp_bytes), st, fail);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortKeys(temp, temp_bytes, buf, in->n, decompose_row_key{}, strm),
                  "rdx_index_build: scan sort", st, fail);
    split_kernel<<<g, THREADS, 0, strm>>>(buf.Current(), in->n, s->keys, s->rows);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: scan split", st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), "rdx_index_build: scan", st, fail);
  }
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  idx->impl = s;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  delete s;
  return st;
}

void scan_destroy(rdx_context *ctx, rdx_index *idx) {
  scan_impl *s = (scan_impl *)idx->impl;
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  delete s;
}

rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t m, int range, int op, uint64_t *out,
               uint64_t *rows) {
  const scan_impl *s = (const scan_impl *)idx->impl;
  unsigned g = m < 132 * 32 ? (unsigned)m : 132 * 32;
  if (idx->dtype == RDX_U32)
    scan_kernel<uint32_t><<<g, THREADS, 0, rdx_stream(ctx)>>>(s->keys, s->rows, s->n, (const uint32_t *)q, m, range, op, out, rows);
  else
    scan_kernel<uint64_t><<<g, THREADS, 0, rdx_stream(ctx)>>>(s->keys, s->rows, s->n, (const uint64_t *)q, m, range, op, out, rows);
  RDX_LAUNCH_CHECK(ctx, "scan kernel");
  return RDX_OK;
}

rdx_status scan_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                      uint64_t *rows) {
  /* the kernel's ops: 0 lookup, 1 count, 2 fill */
  int o = op == RDX_KEY_LOOKUP ? 0 : op == RDX_KEY_LOOKUP_COUNT || op == RDX_KEY_RANGE_COUNT ? 1 : 2;
  return run(ctx, idx, q, n, op >= RDX_KEY_RANGE_COUNT, o, out, rows);
}

}  // namespace

extern "C" const rdx_key_ops rdx_scan_cuda_ops = {
    RDX_KIND_SCAN, RDX_BACKEND_CUDA, scan_build, scan_destroy, scan_query, 1, 1, NULL, NULL, NULL,
};
