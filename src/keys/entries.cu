/*
 * entries.cu: sorted (key, row) entries on the GPU (the CSR helpers of lookups and fills are
 * core's, src/core/csr.cu and csr_sort.cu).
 *
 * The entries are sorted in one CUB radix sort of the pair structs themselves, through a
 * decomposer that presents each pair as the composite (key, row): one sort gives (key, row)
 * order, and when the rows arrive ascending (implied rows always do) only the key bits are
 * sorted, since the radix sort is stable. Only the bits some key uses are sorted.
 *
 * Batch updates (keys.h): a merge sorts the batch alone, then merges it with the entries in
 * one cub::DeviceMerge (merge path: each tile's start in both inputs by a binary search, the
 * tile merged in shared memory), reading each old pair once and writing it once, with no sort of
 * the whole index; a narrow side is widened on the fly through a transform iterator. An erase
 * sorts and dedups its keys, finds each key's run of pairs by two binary searches (a warp per
 * key clears the run's keep flags), and compacts the kept pairs with cub::DeviceSelect::Flagged:
 * one read of the pairs and the flags, one write of the survivors.
 */
#include <cub/cub.cuh>
#include <cub/device/device_merge.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <cuda/std/tuple>

#include "core/cuda_util.cuh"
#include "keys/sorted_hd.h"

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
__global__ void facts_kernel(const K *keys, const R *rows, int64_t n, uint64_t first_row, input_facts *f) {
  unsigned long long kor = 0, ror = 0;
  unsigned desc = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    kor |= keys[i];
    if (rows) {
      ror |= rows[i];
      if (i > 0 && rows[i] < rows[i - 1]) desc = 1;
    } else {
      ror |= (unsigned long long)(first_row + (uint64_t)i);
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
__global__ void fill_pairs_kernel(const K *keys, const R *rows, int64_t n, uint64_t first_row, PAIR *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    PAIR p;
    p.key = keys[i];
    p.row = rows ? rows[i] : first_row + (uint64_t)i;
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
      (const K *)in->keys, (const R *)in->rows, in->n, in->first_row, d);
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
      fill_pairs_kernel<rdx_pair32, K, R><<<grid, 256, 0, s>>>((const K *)in->keys, (const R *)in->rows, in->n, in->first_row, (rdx_pair32 *)a);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: fill pairs", st, fail);
      RDX_CHECK_GOTO((sort_pairs<rdx_pair32, decompose32>(ctx, (rdx_pair32 *)a, (rdx_pair32 *)b, in->n, begin, end,
                                                         (rdx_pair32 **)&sorted)), st, fail);
    } else {
      fill_pairs_kernel<rdx_pair64, K, R><<<grid, 256, 0, s>>>((const K *)in->keys, (const R *)in->rows, in->n, in->first_row, (rdx_pair64 *)a);
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

/* ---- batch updates ---- */

namespace {

constexpr int UPD_THREADS = 256;

struct pair_less {
  template <typename P>
  __host__ __device__ bool operator()(const P &a, const P &b) const {
    return a.key < b.key || (a.key == b.key && a.row < b.row);
  }
};
struct widen {
  __host__ __device__ rdx_pair64 operator()(const rdx_pair32 &p) const {
    rdx_pair64 q;
    q.key = p.key;
    q.row = p.row;
    return q;
  }
};

template <typename I1, typename I2, typename O>
rdx_status merge_into(rdx_context *ctx, I1 a, int64_t na, I2 b, int64_t nb, O out) {
  cudaStream_t s = rdx_stream(ctx);
  return rdx_cub_run(ctx, "rdx_index_insert: merging entries", [&](void *temp, size_t &bytes) {
    return cub::DeviceMerge::MergeKeys(temp, bytes, a, na, b, nb, out, pair_less{}, s);
  });
}

/* First index in a[0, n) whose key is >= q (n if none). */
template <typename K>
__device__ __forceinline__ int64_t lower_of(const K *a, int64_t n, uint64_t q) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    if ((uint64_t)a[mid] < q) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

constexpr int ERASE_TILE = 2048; /* pairs a block flags; also the erase keys it stages */

/* keep[i] = 0 for the pairs whose key is among the erase keys u (sorted, distinct), 1 for the
 * others; *removed += the pairs flagged 0. Both sides are sorted, so the erase keys that can
 * match a tile of pairs are one run of u, found by two binary searches per block; the block
 * stages that run in shared memory and each pair searches it there. A run longer than a tile (many
 * erase keys absent from the index between two of its keys) is searched where it lies: correct,
 * slower, and only where the batch is mostly misses. */
template <typename PAIR, typename K>
__global__ void __launch_bounds__(UPD_THREADS) erase_flags_kernel(const PAIR *e, int64_t n, const K *u, int64_t m,
                                                                  uint8_t *keep, unsigned long long *removed) {
  __shared__ K staged[ERASE_TILE];
  __shared__ int64_t run[2];
  __shared__ unsigned long long block_removed;
  const int64_t base = (int64_t)blockIdx.x * ERASE_TILE;
  const int64_t end = base + ERASE_TILE < n ? base + ERASE_TILE : n;
  if (threadIdx.x == 0) {
    uint64_t last = (uint64_t)e[end - 1].key;
    run[0] = lower_of(u, m, (uint64_t)e[base].key);
    run[1] = last == ~(uint64_t)0 ? m : lower_of(u, m, last + 1);
    block_removed = 0;
  }
  __syncthreads();
  const K *r = u + run[0];
  const int64_t cnt = run[1] - run[0];
  if (cnt <= ERASE_TILE) {
    for (int64_t i = threadIdx.x; i < cnt; i += blockDim.x) staged[i] = r[i];
    r = staged;
  }
  __syncthreads();
  unsigned c = 0;
  for (int64_t i = base + threadIdx.x; i < end; i += blockDim.x) {
    uint64_t k = (uint64_t)e[i].key;
    int64_t at = cnt > 0 ? lower_of(r, cnt, k) : 0;
    int hit = at < cnt && (uint64_t)r[at] == k;
    keep[i] = (uint8_t)!hit;
    c += hit;
  }
  if (c) atomicAdd(&block_removed, (unsigned long long)c);
  __syncthreads();
  if (threadIdx.x == 0 && block_removed) atomicAdd(removed, block_removed);
}

template <typename K>
rdx_status sorted_distinct(rdx_context *ctx, const K *keys, int64_t m, K **out, int64_t *n_out) {
  static const char what[] = "rdx_index_erase: sorting keys";
  cudaStream_t s = rdx_stream(ctx);
  K *a = NULL, *b = NULL, *u = NULL;
  int64_t *d_count = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&a, (size_t)m * sizeof(K)), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&b, (size_t)m * sizeof(K)), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&u, (size_t)m * sizeof(K)), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_count, sizeof *d_count), st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(a, keys, (size_t)m * sizeof(K), cudaMemcpyDeviceToDevice, s), what, st, fail);
  {
    cub::DoubleBuffer<K> buf(a, b);
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceRadixSort::SortKeys(temp, bytes, buf, m, 0, (int)sizeof(K) * 8, s);
                   }), st, fail);
    const K *sorted = buf.Current();
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                     return cub::DeviceSelect::Unique(temp, bytes, sorted, u, d_count, m, s);
                   }), st, fail);
  }
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(n_out, d_count, sizeof *n_out, cudaMemcpyDeviceToHost, s), what, st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, d_count);
  *out = u;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, u);
  rdx_mem_free(ctx, d_count);
  return st;
}

template <typename PAIR, typename K>
rdx_status erase_typed(rdx_context *ctx, const rdx_entries *e, const K *keys, int64_t m, rdx_entries *out,
                       int64_t *n_erased) {
  static const char what[] = "rdx_index_erase: entries";
  cudaStream_t s = rdx_stream(ctx);
  K *u = NULL;
  int64_t nu = 0;
  uint8_t *keep = NULL;
  unsigned long long *d_removed = NULL, removed = 0;
  int64_t *d_count = NULL;
  void *pairs = NULL;
  rdx_status st;
  RDX_CHECK(sorted_distinct<K>(ctx, keys, m, &u, &nu));
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&keep, (size_t)e->n), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_removed, sizeof *d_removed), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_count, sizeof *d_count), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(d_removed, 0, sizeof *d_removed, s), what, st, done);
  if (e->n > 0) {
    erase_flags_kernel<PAIR, K><<<(unsigned)((e->n + ERASE_TILE - 1) / ERASE_TILE), UPD_THREADS, 0, s>>>(
        (const PAIR *)e->pairs, e->n, u, nu, keep, d_removed);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_erase: flags kernel", st, done);
  }
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&removed, d_removed, sizeof removed, cudaMemcpyDeviceToHost, s), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &pairs, (size_t)(e->n - (int64_t)removed) * sizeof(PAIR), RDX_DEVICE), st, done);
  RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *temp, size_t &bytes) {
                   return cub::DeviceSelect::Flagged(temp, bytes, (const PAIR *)e->pairs, keep, (PAIR *)pairs, d_count,
                                                     e->n, s);
                 }), st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
  out->pairs = pairs;
  out->n = e->n - (int64_t)removed;
  out->width = e->width;
  *n_erased = (int64_t)removed;
  pairs = NULL;
  st = RDX_OK;
done:
  rdx_mem_free(ctx, pairs);
  rdx_mem_free(ctx, u);
  rdx_mem_free(ctx, keep);
  rdx_mem_free(ctx, d_removed);
  rdx_mem_free(ctx, d_count);
  return st;
}

template <typename PAIR, typename K, typename R>
__global__ void split_kernel(const PAIR *e, int64_t n, K *keys, R *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    PAIR p = e[i];
    keys[i] = (K)p.key;
    rows[i] = (R)p.row;
  }
}

}  // namespace

extern "C" rdx_status rdx_entries_merge_cuda(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in,
                                             rdx_entries *out) {
  rdx_entries b = {};
  void *pairs = NULL;
  rdx_status st;
  rdx_trace(ctx, "entries merge: start");
  RDX_CHECK(rdx_entries_build_cuda(ctx, in, &b));
  rdx_trace(ctx, "entries merge: batch sorted");
  int width = e->width == 64 || b.width == 64 ? 64 : 32;
  int64_t n = e->n + b.n;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_insert: merged entries", &pairs,
                               (size_t)n * (width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64)), RDX_DEVICE),
                 st, fail);
  if (width == 32) {
    st = merge_into(ctx, (const rdx_pair32 *)e->pairs, e->n, (const rdx_pair32 *)b.pairs, b.n, (rdx_pair32 *)pairs);
  } else if (e->width == 64 && b.width == 64) {
    st = merge_into(ctx, (const rdx_pair64 *)e->pairs, e->n, (const rdx_pair64 *)b.pairs, b.n, (rdx_pair64 *)pairs);
  } else if (e->width == 32) {
    st = merge_into(ctx, thrust::make_transform_iterator((const rdx_pair32 *)e->pairs, widen{}), e->n,
                    (const rdx_pair64 *)b.pairs, b.n, (rdx_pair64 *)pairs);
  } else {
    st = merge_into(ctx, (const rdx_pair64 *)e->pairs, e->n,
                    thrust::make_transform_iterator((const rdx_pair32 *)b.pairs, widen{}), b.n, (rdx_pair64 *)pairs);
  }
  if (st != RDX_OK) goto fail;
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(rdx_stream(ctx)), "rdx_index_insert: merging entries", st, fail);
  rdx_trace(ctx, "entries merge: allocated and merged");
  rdx_entries_free(ctx, &b);
  out->pairs = pairs;
  out->n = n;
  out->width = width;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, pairs);
  rdx_entries_free(ctx, &b);
  return st;
}

extern "C" rdx_status rdx_entries_erase_cuda(rdx_context *ctx, const rdx_entries *e, const void *keys,
                                             rdx_dtype key_dtype, int64_t m, rdx_entries *out, int64_t *n_erased) {
  if (e->width == 32) /* width 32 holds u32 keys only */
    return erase_typed<rdx_pair32, uint32_t>(ctx, e, (const uint32_t *)keys, m, out, n_erased);
  if (key_dtype == RDX_U32) return erase_typed<rdx_pair64, uint32_t>(ctx, e, (const uint32_t *)keys, m, out, n_erased);
  return erase_typed<rdx_pair64, uint64_t>(ctx, e, (const uint64_t *)keys, m, out, n_erased);
}

extern "C" rdx_status rdx_entries_copy_cuda(rdx_context *ctx, const rdx_entries *e, rdx_entries *out) {
  size_t bytes = (size_t)e->n * (e->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64));
  void *p = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "entries: copy", &p, bytes, RDX_DEVICE));
  cudaStream_t s = rdx_stream(ctx);
  cudaError_t err = cudaMemcpyAsync(p, e->pairs, bytes, cudaMemcpyDeviceToDevice, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  if (err != cudaSuccess) {
    rdx_mem_free(ctx, p);
    return rdx_cuda_fail(ctx, err, "entries: copy");
  }
  out->pairs = p;
  out->n = e->n;
  out->width = e->width;
  return RDX_OK;
}

extern "C" rdx_status rdx_entries_split_cuda(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys,
                                             void **rows, rdx_dtype *row_dtype) {
  size_t ks = key_dtype == RDX_U32 ? 4 : 8, rs = e->width == 32 ? 4 : 8;
  void *k = NULL, *r = NULL;
  rdx_status st;
  cudaStream_t s = rdx_stream(ctx);
  unsigned g = rdx_grid(e->n, UPD_THREADS);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "entries: keys", &k, (size_t)e->n * ks, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "entries: rows", &r, (size_t)e->n * rs, RDX_DEVICE), st, fail);
  if (e->width == 32)
    split_kernel<rdx_pair32, uint32_t, uint32_t><<<g, UPD_THREADS, 0, s>>>((const rdx_pair32 *)e->pairs, e->n,
                                                                          (uint32_t *)k, (uint32_t *)r);
  else if (ks == 4)
    split_kernel<rdx_pair64, uint32_t, uint64_t><<<g, UPD_THREADS, 0, s>>>((const rdx_pair64 *)e->pairs, e->n,
                                                                          (uint32_t *)k, (uint64_t *)r);
  else
    split_kernel<rdx_pair64, uint64_t, uint64_t><<<g, UPD_THREADS, 0, s>>>((const rdx_pair64 *)e->pairs, e->n,
                                                                          (uint64_t *)k, (uint64_t *)r);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "entries: split kernel", st, fail);
  *keys = k;
  *rows = r;
  *row_dtype = rs == 4 ? RDX_U32 : RDX_U64;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, k);
  rdx_mem_free(ctx, r);
  return st;
}
