/*
 * entries.cu: sorted (key, row) entries on the GPU (the CSR helpers of lookups and fills are
 * core's, src/core/csr.cu and csr_sort.cu).
 *
 * The entries are sorted in one CUB radix sort of the pair structs themselves, through a
 * decomposer that presents each pair as the composite (key, row): one sort gives (key, row)
 * order, and when the rows arrive ascending (implied rows always do) only the key bits are
 * sorted, since the radix sort is stable. Only the bits some key uses are sorted.
 */
#include <cub/cub.cuh>
#include <cuda/std/tuple>

#include "core/cuda_util.cuh"
#include "keys/keys.h"

namespace {

struct decompose32 {
  __host__ __device__ cuda::std::tuple<uint32_t &, uint32_t &> operator()(rdx_pair32 &p) const {
    return {p.key, p.row};
  }
};
struct decompose64 {
  __host__ __device__ cuda::std::tuple<uint64_t &, uint64_t &> operator()(rdx_pair64 &p) const {
    return {p.key, p.row};
  }
};

/* Facts about the input: OR of all keys and rows (bits used), and whether rows ever descend. */
struct input_facts {
  unsigned long long key_or, row_or;
  unsigned int descends;
};

template <typename K, typename R>
__global__ void facts_kernel(const K *keys, const R *rows, int64_t n, input_facts *f) {
  unsigned long long kor = 0, ror = 0;
  unsigned desc = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    kor |= keys[i];
    if (rows) {
      ror |= rows[i];
      if (i > 0 && rows[i] < rows[i - 1]) desc = 1;
    } else {
      ror |= (unsigned long long)i;
    }
  }
  /* warp-reduce, then one atomic per warp */
  for (int o = 16; o > 0; o >>= 1) {
    kor |= __shfl_xor_sync(0xffffffff, kor, o);
    ror |= __shfl_xor_sync(0xffffffff, ror, o);
    desc |= __shfl_xor_sync(0xffffffff, desc, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicOr(&f->key_or, kor);
    atomicOr(&f->row_or, ror);
    if (desc) atomicOr(&f->descends, 1u);
  }
}

template <typename PAIR, typename K, typename R>
__global__ void fill_pairs_kernel(const K *keys, const R *rows, int64_t n, PAIR *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    PAIR p;
    p.key = keys[i];
    p.row = rows ? rows[i] : i;
    out[i] = p;
  }
}

int bits_used(unsigned long long v) { return v ? 64 - __builtin_clzll(v) : 0; }

template <typename K, typename R>
rdx_status facts(rdx_context *ctx, const rdx_key_input *in, input_facts *h) {
  input_facts *d = NULL;
  RDX_CHECK(rdx_scratch(ctx, "rdx_index_build: input facts", (void **)&d, sizeof *d));
  rdx_status st = RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(d, 0, sizeof *d, s), "rdx_index_build: memset", st, done);
  facts_kernel<K, R><<<rdx_grid(in->n, 256) < 1024 ? rdx_grid(in->n, 256) : 1024, 256, 0, s>>>(
      (const K *)in->keys, (const R *)in->rows, in->n, d);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: facts kernel", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(h, d, sizeof *h, cudaMemcpyDeviceToHost, s), "rdx_index_build: copy", st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "rdx_index_build: facts", st, done);
done:
  rdx_mem_free(ctx, d);
  return st;
}

template <typename PAIR, typename DEC>
rdx_status sort_pairs(rdx_context *ctx, PAIR *a, PAIR *b, int64_t n, int begin_bit, int end_bit, PAIR **sorted) {
  size_t temp_bytes = 0;
  cudaStream_t s = rdx_stream(ctx);
  *sorted = a;
  if (begin_bit >= end_bit) return RDX_OK; /* nothing to sort: one distinct key, ascending rows */
  cub::DoubleBuffer<PAIR> buf(a, b);
  RDX_CUDA(ctx, cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, buf, n, DEC{}, begin_bit, end_bit, s),
           "rdx_index_build: sort size");
  void *temp = NULL;
  RDX_CHECK(rdx_scratch(ctx, "rdx_index_build: sort scratch", &temp, temp_bytes));
  rdx_status st = RDX_OK;
  cudaError_t e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, buf, n, DEC{}, begin_bit, end_bit, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_index_build: sort");
  rdx_mem_free(ctx, temp);
  *sorted = buf.Current();
  return st;
}

template <typename K, typename R>
rdx_status build_typed(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out) {
  input_facts f;
  RDX_CHECK((facts<K, R>(ctx, in, &f)));
  int width = (in->key_dtype == RDX_U32 && f.row_or <= 0xFFFFFFFFull) ? 32 : 64;
  size_t sz = width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  void *a = NULL, *b = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: entries", &a, (size_t)in->n * sz, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: entries (sort buffer)", &b, (size_t)in->n * sz, RDX_DEVICE), st,
                 fail);
  {
    cudaStream_t s = rdx_stream(ctx);
    unsigned grid = rdx_grid(in->n, 256);
    int half = width; /* bits per field in the composite (key, row) */
    int key_bits = bits_used(f.key_or), row_bits = bits_used(f.row_or);
    int begin = f.descends ? 0 : half, end = half + key_bits;
    if (f.descends && key_bits == 0) end = row_bits; /* all keys zero: rows alone */
    void *sorted = NULL;
    if (width == 32) {
      fill_pairs_kernel<rdx_pair32, K, R><<<grid, 256, 0, s>>>((const K *)in->keys, (const R *)in->rows, in->n, (rdx_pair32 *)a);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: fill pairs", st, fail);
      RDX_CHECK_GOTO((sort_pairs<rdx_pair32, decompose32>(ctx, (rdx_pair32 *)a, (rdx_pair32 *)b, in->n, begin, end,
                                                         (rdx_pair32 **)&sorted)), st, fail);
    } else {
      fill_pairs_kernel<rdx_pair64, K, R><<<grid, 256, 0, s>>>((const K *)in->keys, (const R *)in->rows, in->n, (rdx_pair64 *)a);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: fill pairs", st, fail);
      RDX_CHECK_GOTO((sort_pairs<rdx_pair64, decompose64>(ctx, (rdx_pair64 *)a, (rdx_pair64 *)b, in->n, begin, end,
                                                         (rdx_pair64 **)&sorted)), st, fail);
    }
    rdx_mem_free(ctx, sorted == a ? b : a);
    out->pairs = sorted;
    out->n = in->n;
    out->width = width;
    return RDX_OK;
  }
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  return st;
}

}  // namespace

extern "C" rdx_status rdx_entries_build_cuda(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out) {
  int k64 = in->key_dtype == RDX_U64, r64 = in->rows != NULL && in->row_dtype == RDX_U64;
  if (k64) return r64 ? build_typed<uint64_t, uint64_t>(ctx, in, out) : build_typed<uint64_t, uint32_t>(ctx, in, out);
  return r64 ? build_typed<uint32_t, uint64_t>(ctx, in, out) : build_typed<uint32_t, uint32_t>(ctx, in, out);
}
