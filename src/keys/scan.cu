/*
 * scan.cu: the scan kind on the GPU: the column in ascending row order, and one thread block per
 * query that reads all of it. The baseline every index must beat; O(n) per query.
 *
 * Rows ascend along the column, so the first match is the smallest row, and an ordered block-wide
 * compaction (CUB BlockScan) writes each query's rows already ascending.
 *
 * Updates keep that order: an insert sorts its batch by (row, key) and merges it in with
 * cub::DeviceMerge (implied rows come after every earlier one, so that merge is an append); an
 * erase flags the pairs whose key is in the sorted, deduplicated batch and compacts the rest with
 * cub::DeviceSelect::Flagged. Both write new arrays and swap them in once nothing can fail.
 */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_merge.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
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
__global__ void gather_kernel(const K *keys, const R *rows, int64_t n, uint64_t first_row, row_key *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    out[i].key = keys[i];
    out[i].row = rows ? (uint64_t)rows[i] : first_row + (uint64_t)i;
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

/* The input's pairs sorted by (row, key) into *sorted (one of a and b, n entries each). */
rdx_status gather_sorted(rdx_context *ctx, const rdx_key_input *in, row_key *a, row_key *b, row_key **sorted) {
  cudaStream_t strm = rdx_stream(ctx);
  unsigned g = rdx_grid(in->n, THREADS);
  if (in->key_dtype == RDX_U32)
    in->rows == NULL || in->row_dtype == RDX_U32
        ? gather_kernel<uint32_t, uint32_t><<<g, THREADS, 0, strm>>>((const uint32_t *)in->keys, (const uint32_t *)in->rows, in->n, in->first_row, a)
        : gather_kernel<uint32_t, uint64_t><<<g, THREADS, 0, strm>>>((const uint32_t *)in->keys, (const uint64_t *)in->rows, in->n, in->first_row, a);
  else
    in->rows == NULL || in->row_dtype == RDX_U32
        ? gather_kernel<uint64_t, uint32_t><<<g, THREADS, 0, strm>>>((const uint64_t *)in->keys, (const uint32_t *)in->rows, in->n, in->first_row, a)
        : gather_kernel<uint64_t, uint64_t><<<g, THREADS, 0, strm>>>((const uint64_t *)in->keys, (const uint64_t *)in->rows, in->n, in->first_row, a);
  RDX_LAUNCH_CHECK(ctx, "scan: gather");
  /* stable sort by (row, key): rows ascending, as the scan needs */
  cub::DoubleBuffer<row_key> buf(a, b);
  RDX_CHECK(rdx_cub_run(ctx, "scan: sort", [&](void *temp, size_t &bytes) {
    return cub::DeviceRadixSort::SortKeys(temp, bytes, buf, in->n, decompose_row_key{}, strm);
  }));
  *sorted = buf.Current();
  return RDX_OK;
}

rdx_status scan_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  scan_impl *s = new (std::nothrow) scan_impl();
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: scan handle");
  s->n = in->n;
  cudaStream_t strm = rdx_stream(ctx);
  row_key *a = NULL, *b = NULL, *sorted = NULL;
  rdx_status st;
  unsigned g = rdx_grid(in->n, THREADS);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan keys", (void **)&s->keys, (size_t)in->n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan rows", (void **)&s->rows, (size_t)in->n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: scan pairs", (void **)&a, (size_t)in->n * sizeof *a), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: scan pairs", (void **)&b, (size_t)in->n * sizeof *b), st, fail);
  RDX_CHECK_GOTO(gather_sorted(ctx, in, a, b, &sorted), st, fail);
  split_kernel<<<g, THREADS, 0, strm>>>(sorted, in->n, s->keys, s->rows);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: scan split", st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), "rdx_index_build: scan", st, fail);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  idx->impl = s;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  delete s;
  return st;
}

/* ---- updates ---- */

struct row_key_less {
  __host__ __device__ bool operator()(const row_key &x, const row_key &y) const {
    return x.row < y.row || (x.row == y.row && x.key < y.key);
  }
};
/* pair i of the column as a row_key, for the merge */
struct column_at {
  const uint64_t *keys, *rows;
  __host__ __device__ row_key operator()(int64_t i) const {
    row_key p;
    p.row = rows[i];
    p.key = keys[i];
    return p;
  }
};

void swap_arrays(rdx_context *ctx, scan_impl *s, uint64_t *keys, uint64_t *rows, int64_t n) {
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  s->keys = keys;
  s->rows = rows;
  s->n = n;
}

rdx_status scan_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  static const char what[] = "rdx_index_insert: scan";
  scan_impl *s = (scan_impl *)idx->impl;
  cudaStream_t strm = rdx_stream(ctx);
  int64_t n = s->n + in->n;
  uint64_t *keys = NULL, *rows = NULL;
  row_key *a = NULL, *b = NULL, *sorted = NULL, *merged = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&keys, (size_t)n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&rows, (size_t)n * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&a, (size_t)in->n * sizeof *a), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&b, (size_t)in->n * sizeof *b), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&merged, (size_t)n * sizeof *merged), st, fail);
  RDX_CHECK_GOTO(gather_sorted(ctx, in, a, b, &sorted), st, fail);
  {
    auto old = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), column_at{s->keys, s->rows});
    int64_t n_old = s->n, n_new = in->n;
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceMerge::MergeKeys(temp, bytes, old, n_old, (const row_key *)sorted, n_new, merged,
                                                        row_key_less{}, strm);
                   }), st, fail);
  }
  split_kernel<<<rdx_grid(n, THREADS), THREADS, 0, strm>>>(merged, n, keys, rows);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_insert: scan split", st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), what, st, fail);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, merged);
  swap_arrays(ctx, s, keys, rows, n);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, merged);
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  return st;
}

template <typename K>
__global__ void widen_kernel(const K *in, int64_t n, uint64_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = (uint64_t)in[i];
}

/* keep[i] = 1 unless keys[i] is one of the sorted, distinct u[0, m); *kept += the ones kept. */
__global__ void keep_kernel(const uint64_t *keys, int64_t n, const uint64_t *u, int64_t m, uint8_t *keep,
                            unsigned long long *kept) {
  for (int64_t base = blockIdx.x * (int64_t)blockDim.x; base < n; base += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = base + threadIdx.x;
    int k = 0;
    if (i < n) {
      uint64_t key = keys[i];
      int64_t lo = 0, hi = m;
      while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (u[mid] < key) lo = mid + 1;
        else hi = mid;
      }
      k = !(lo < m && u[lo] == key);
      keep[i] = (uint8_t)k;
    }
    int c = __syncthreads_count(k);
    if (threadIdx.x == 0 && c) atomicAdd(kept, (unsigned long long)c);
  }
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
rdx_status scan_erase(rdx_context *ctx, rdx_index *idx, const void *k, int64_t m, int64_t *n_erased) {
  static const char what[] = "rdx_index_erase: scan";
  scan_impl *s = (scan_impl *)idx->impl;
  cudaStream_t strm = rdx_stream(ctx);
  uint64_t *wa = NULL, *wb = NULL, *u = NULL, *keys = NULL, *rows = NULL;
  uint8_t *keep = NULL;
  int64_t *d_count = NULL, nu = 0;
  unsigned long long *d_kept = NULL, kept = 0;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&wa, (size_t)m * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&wb, (size_t)m * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&u, (size_t)m * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&keep, (size_t)s->n), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_count, sizeof *d_count), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_kept, sizeof *d_kept), st, done);
  if (idx->dtype == RDX_U32) widen_kernel<uint32_t><<<rdx_grid(m, THREADS), THREADS, 0, strm>>>((const uint32_t *)k, m, wa);
  else widen_kernel<uint64_t><<<rdx_grid(m, THREADS), THREADS, 0, strm>>>((const uint64_t *)k, m, wa);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_erase: scan keys", st, done);
  {
    cub::DoubleBuffer<uint64_t> buf(wa, wb);
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceRadixSort::SortKeys(temp, bytes, buf, m, 0, 64, strm);
                   }), st, done);
    const uint64_t *sk = buf.Current();
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceSelect::Unique(temp, bytes, sk, u, d_count, m, strm);
                   }), st, done);
  }
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&nu, d_count, sizeof nu, cudaMemcpyDeviceToHost, strm), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(d_kept, 0, sizeof *d_kept, strm), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), what, st, done);
  keep_kernel<<<rdx_grid(s->n, THREADS) < 132 * 16 ? rdx_grid(s->n, THREADS) : 132 * 16, THREADS, 0, strm>>>(
      s->keys, s->n, u, nu, keep, d_kept);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_erase: scan flags", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&kept, d_kept, sizeof kept, cudaMemcpyDeviceToHost, strm), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), what, st, done);
  *n_erased = s->n - (int64_t)kept;
  st = RDX_OK;
  if (kept == 0 || (int64_t)kept == s->n) goto done; /* st is RDX_OK: nothing to change here */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&keys, (size_t)kept * 8, RDX_DEVICE), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&rows, (size_t)kept * 8, RDX_DEVICE), st, done);
  for (int pass = 0; pass < 2; pass++) {
    const uint64_t *from = pass ? s->rows : s->keys;
    uint64_t *to = pass ? rows : keys;
    int64_t n = s->n;
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceSelect::Flagged(temp, bytes, from, keep, to, d_count, n, strm);
                   }), st, done);
  }
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), what, st, done);
  swap_arrays(ctx, s, keys, rows, (int64_t)kept);
  keys = rows = NULL;
done:
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, wa);
  rdx_mem_free(ctx, wb);
  rdx_mem_free(ctx, u);
  rdx_mem_free(ctx, keep);
  rdx_mem_free(ctx, d_count);
  rdx_mem_free(ctx, d_kept);
  return st;
}

__global__ void narrow_kernel(const uint64_t *in, int64_t n, uint32_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = (uint32_t)in[i];
}

/* The column's pairs sorted by (key, row): the entries' own sort over it, as a build's input. */
rdx_status scan_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const scan_impl *s = (const scan_impl *)idx->impl;
  rdx_key_input in;
  memset(&in, 0, sizeof in);
  in.keys = s->keys;
  in.rows = s->rows;
  in.n = s->n;
  in.key_dtype = RDX_U64;
  in.row_dtype = RDX_U64;
  in.opts = idx->opts;
  uint32_t *k32 = NULL;
  if (idx->dtype == RDX_U32) { /* u32 keys keep width 32 when every row fits */
    RDX_CHECK(rdx_scratch(ctx, "scan: entries keys", (void **)&k32, (size_t)s->n * 4));
    narrow_kernel<<<rdx_grid(s->n, THREADS), THREADS, 0, rdx_stream(ctx)>>>(s->keys, s->n, k32);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      rdx_mem_free(ctx, k32);
      return rdx_cuda_fail(ctx, err, "scan: entries keys");
    }
    in.keys = k32;
    in.key_dtype = RDX_U32;
  }
  rdx_status st = rdx_entries_build_cuda(ctx, &in, out);
  rdx_mem_free(ctx, k32);
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
    RDX_KIND_SCAN, RDX_BACKEND_CUDA, scan_build, scan_destroy, scan_query, 1, 1, scan_insert, scan_erase, scan_entries,
};
