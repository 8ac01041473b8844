/*
 * hash.cu: the hash kind on the GPU: the open-addressing table of hash_hd.h in device memory,
 * one thread per key or query, plus the side CSR for keys with several rows or rows too big for
 * a slot. Point lookups only: the ops table has no range calls, so index.c answers them with
 * RDX_ERR_UNSUPPORTED.
 *
 * Build: memset the table to all ones (EMPTY), insert every (key, row) with 64-bit atomics (the
 * slot protocol of hash_hd.h), read back two flags (some key PENDING; some insert found no room).
 * The common case -- unique keys, rows < 2^31 -- ends there: one memset and one kernel. Otherwise
 * the inputs whose slot is PENDING are counted, gathered (warp-aggregated atomics), sorted by
 * (key, row) with the entries sort (entries.cu), the run heads numbered with a CUB scan into the
 * directory, and their slots pointed at it.
 *
 * Lookup: a pair of threads hashes its query and reads the home window, 32 bytes (one sector),
 * with one coalesced request: a 16-byte streaming load per thread (__ldcs: the table is touched
 * at random, caching it is useless). At load factor 0.5 almost every lookup ends in the home
 * window (bench/README.md gives the simulated share that reads a second, adjacent one), so a
 * lookup costs one random sector plus its share of the query and result streams (12 or 16
 * bytes, coalesced).
 */
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <cuda/atomic>
#include <new>

#include "core/cuda_util.cuh"

namespace {
/* The slot protocol's atomics on the device (hash_hd.h). */
__device__ __forceinline__ unsigned long long *ull(uint64_t *p) { return (unsigned long long *)p; }
__device__ __forceinline__ uint64_t load_relaxed(uint64_t *p) {
  return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*ull(p)).load(cuda::memory_order_relaxed);
}
__device__ __forceinline__ uint64_t load_acquire(uint64_t *p) {
  return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*ull(p)).load(cuda::memory_order_acquire);
}
__device__ __forceinline__ void store_relaxed(uint64_t *p, uint64_t v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*ull(p)).store(v, cuda::memory_order_relaxed);
}
__device__ __forceinline__ void store_release(uint64_t *p, uint64_t v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*ull(p)).store(v, cuda::memory_order_release);
}
__device__ __forceinline__ uint64_t cas(uint64_t *p, uint64_t expect, uint64_t want) {
  return atomicCAS(ull(p), (unsigned long long)expect, (unsigned long long)want);
}
}  // namespace

#define RDX_HASH_INSERT 1
#define RDX_HASH_LOAD(p) load_relaxed(p)
#define RDX_HASH_LOAD_ACQ(p) load_acquire(p)
#define RDX_HASH_STORE(p, v) store_relaxed((p), (v))
#define RDX_HASH_STORE_REL(p, v) store_release((p), (v))
#define RDX_HASH_CAS(p, e, w) cas((p), (e), (w))
#define RDX_HASH_MAX(p, v) atomicMax(ull(p), (unsigned long long)(v))
#define RDX_HASH_PAUSE() __nanosleep(32)
#define RDX_HASH_INSERT_FN __device__ __forceinline__
#include "keys/hash_hd.h"

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;

enum { OP_LOOKUP, OP_COUNT, OP_FILL };
enum { FLAG_PENDING = 1, FLAG_OVERFLOW = 2 };

struct hash_impl {
  rdx_hash_layout L;
  uint64_t *table;   /* device: n_windows * 32 bytes */
  rdx_entries csr;   /* device: the side CSR's sorted (key, row) pairs; n = 0 when none */
  uint64_t *dir;     /* device: n_dir + 1 starts into csr; NULL when none */
  int64_t n_dir;
};

/* What the query kernels need, by value. */
struct hash_dev {
  rdx_hash_layout L;
  const uint64_t *table;
  const void *csr;   /* pairs of csr_width */
  int csr_width;
  const uint64_t *dir;
};

__device__ __forceinline__ uint64_t csr_row(const hash_dev &H, uint64_t i) {
  return H.csr_width == 32 ? (uint64_t)((const rdx_pair32 *)H.csr)[i].row : ((const rdx_pair64 *)H.csr)[i].row;
}

/* The probe of the built table: 1 and the slot's value widened to u64 when found. The value
 * is "direct" when it has no flag bit (see rdx_hash_direct32/64). */
template <typename K>
__device__ __forceinline__ int find(const hash_dev &H, K q, uint64_t *value, int64_t *slot);

template <>
__device__ __forceinline__ int find<uint32_t>(const hash_dev &H, uint32_t q, uint64_t *value, int64_t *slot) {
  uint64_t w = rdx_hash_home32(&H.L, q);
  for (uint64_t p = 0; p < H.L.n_windows; p++, w = rdx_hash_next(&H.L, w)) {
    const ulonglong2 *x = (const ulonglong2 *)(H.table + w * RDX_HASH32_SLOTS);
    ulonglong2 a = __ldcs(x), b = __ldcs(x + 1);
    uint32_t v = 0;
    int s = 0;
    int r = rdx_hash_window32(a.x, a.y, b.x, b.y, q, &v, &s);
    if (r > 0) {
      *value = rdx_hash_direct32(v) ? (uint64_t)v : RDX_HASH64_FLAG | (v & ~RDX_HASH32_FLAG);
      *slot = (int64_t)(w * RDX_HASH32_SLOTS) + s;
      return 1;
    }
    if (r < 0) return 0;
  }
  return 0;
}

template <>
__device__ __forceinline__ int find<uint64_t>(const hash_dev &H, uint64_t q, uint64_t *value, int64_t *slot) {
  uint64_t w = rdx_hash_home64(&H.L, q);
  for (uint64_t p = 0; p < H.L.n_windows; p++, w = rdx_hash_next(&H.L, w)) {
    const ulonglong2 *x = (const ulonglong2 *)(H.table + w * RDX_HASH64_SLOTS * 2);
    ulonglong2 a = __ldcs(x), b = __ldcs(x + 1);
    uint64_t v = 0;
    int s = 0;
    int r = rdx_hash_window64(a.x, a.y, b.x, b.y, q, &v, &s);
    if (r > 0) {
      *value = v;
      *slot = (int64_t)(w * RDX_HASH64_SLOTS) + s;
      return 1;
    }
    if (r < 0) return 0;
  }
  return 0;
}

/* A found value (widened as above) after the build: a direct row, or directory entry d. */
__device__ __forceinline__ bool direct(uint64_t v) { return v <= RDX_HASH64_ROW_MAX; }

/* ---- build ---- */

/* OR a flag into *flags once per warp. */
__device__ __forceinline__ void warp_flag(unsigned *flags, unsigned f) {
  f = __reduce_or_sync(__activemask(), f);
  if (f && (threadIdx.x & 31) == __ffs(__activemask()) - 1) atomicOr(flags, f);
}

template <typename K, typename R>
__global__ void hash_insert_kernel(uint64_t *table, rdx_hash_layout L, const K *keys, const R *rows, int64_t n,
                                   unsigned *flags) {
  unsigned f = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t r = rows ? (uint64_t)rows[i] : (uint64_t)i;
    int pending = 0, ok;
    if (sizeof(K) == 4) ok = rdx_hash_insert32(table, &L, (uint32_t)keys[i], r, &pending);
    else ok = rdx_hash_insert64(table, &L, (uint64_t)keys[i], r, &pending);
    if (pending) f |= FLAG_PENDING;
    if (!ok) f |= FLAG_OVERFLOW;
  }
  warp_flag(flags, f);
}

/* Inputs whose slot is PENDING: counted (out == NULL) or gathered at *cursor. */
template <typename K, typename R>
__global__ void hash_pending_kernel(hash_dev H, const K *keys, const R *rows, int64_t n, unsigned long long *cursor,
                                    K *out_keys, uint64_t *out_rows) {
  const uint64_t pending = sizeof(K) == 4 ? (RDX_HASH64_FLAG | (RDX_HASH32_V_PENDING & ~RDX_HASH32_FLAG)) : RDX_HASH64_PENDING;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    K k = keys[i];
    uint64_t v = 0;
    int64_t slot;
    if (!find<K>(H, k, &v, &slot) || v != pending) continue;
    /* warp-aggregated: one atomic per group of threads that got here together */
    cg::coalesced_group g = cg::coalesced_threads();
    unsigned long long base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(cursor, (unsigned long long)g.size());
    base = g.shfl(base, 0) + g.thread_rank();
    if (out_keys) {
      out_keys[base] = k;
      out_rows[base] = rows ? (uint64_t)rows[i] : (uint64_t)i;
    }
  }
}

template <typename P>
__global__ void hash_heads_kernel(const P *e, int64_t m, unsigned long long *head) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m; i += (int64_t)gridDim.x * blockDim.x)
    head[i] = i == 0 || e[i - 1].key != e[i].key;
}

/* Pass 0: each run head writes its directory entry and finds its key's slot (slot_of[d]);
 * pass 1 (a separate launch, so no probe reads a slot word while it changes): point the slot
 * at the directory entry. */
template <typename P>
__global__ void hash_dir_kernel(hash_dev H, const P *e, int64_t m, const unsigned long long *head, const unsigned long long *seg,
                                uint64_t *dir, int64_t *slot_of, uint64_t *table, int pass) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m; i += (int64_t)gridDim.x * blockDim.x) {
    if (!head[i]) continue;
    uint64_t d = seg[i];
    if (pass == 0) {
      dir[d] = (uint64_t)i;
      uint64_t v;
      if (H.L.key_bits == 32) find<uint32_t>(H, (uint32_t)e[i].key, &v, &slot_of[d]);
      else find<uint64_t>(H, (uint64_t)e[i].key, &v, &slot_of[d]);
    } else if (H.L.key_bits == 32) {
      table[slot_of[d]] = (uint64_t)e[i].key << 32 | (RDX_HASH32_FLAG | (uint32_t)d);
    } else {
      table[slot_of[d] * 2 + 1] = RDX_HASH64_FLAG | d;
    }
  }
}

hash_dev dev_view(const hash_impl *h) {
  hash_dev H;
  H.L = h->L;
  H.table = h->table;
  H.csr = h->csr.pairs;
  H.csr_width = h->csr.width;
  H.dir = h->dir;
  return H;
}

/* Move the keys whose slot is PENDING into the side CSR. */
template <typename K, typename R>
rdx_status build_csr(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  static const char what[] = "rdx_index_build: hash overflow rows";
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  unsigned long long *cursor = NULL, *seg = NULL;
  unsigned long long m = 0, n_dir = 0;
  K *ck = NULL;
  uint64_t *cr = NULL;
  unsigned long long *head = NULL;
  int64_t *slot_of = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  hash_dev H = dev_view(h);
  unsigned grid = rdx_grid(in->n, kThreads);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&cursor, 8), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(cursor, 0, 8, s), what, st, done);
  hash_pending_kernel<K, R><<<grid, kThreads, 0, s>>>(H, (const K *)in->keys, (const R *)in->rows, in->n, cursor, NULL, NULL);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&m, cursor, 8, cudaMemcpyDeviceToHost, s), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
  if (m == 0) goto done;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&ck, (size_t)m * sizeof(K)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&cr, (size_t)m * 8), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(cursor, 0, 8, s), what, st, done);
  hash_pending_kernel<K, R><<<grid, kThreads, 0, s>>>(H, (const K *)in->keys, (const R *)in->rows, in->n, cursor, ck, cr);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  {
    rdx_key_input in2 = *in;
    in2.keys = ck;
    in2.rows = cr;
    in2.n = (int64_t)m;
    in2.row_dtype = RDX_U64;
    RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, &in2, &h->csr), st, done); /* synchronises */
  }
  rdx_mem_free(ctx, ck);
  rdx_mem_free(ctx, cr);
  ck = NULL;
  cr = NULL;
  H = dev_view(h);
  /* number the run heads: seg[i] = heads before i */
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&head, (size_t)m * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&seg, (size_t)m * 8), st, done);
  if (h->csr.width == 32)
    hash_heads_kernel<rdx_pair32><<<rdx_grid((int64_t)m, kThreads), kThreads, 0, s>>>((const rdx_pair32 *)h->csr.pairs, (int64_t)m, head);
  else
    hash_heads_kernel<rdx_pair64><<<rdx_grid((int64_t)m, kThreads), kThreads, 0, s>>>((const rdx_pair64 *)h->csr.pairs, (int64_t)m, head);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, head, seg, (int64_t)m, s), what, st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(temp, temp_bytes, head, seg, (int64_t)m, s), what, st, done);
  {
    unsigned long long last_seg = 0;
    unsigned long long last_head = 0;
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last_seg, seg + m - 1, 8, cudaMemcpyDeviceToHost, s), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last_head, head + m - 1, 8, cudaMemcpyDeviceToHost, s), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
    n_dir = last_seg + last_head;
  }
  if (n_dir - 1 > (h->L.key_bits == 32 ? RDX_HASH32_DIR_MAX : RDX_HASH64_DIR_MAX)) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                  "rdx_index_build: %llu keys with several or large rows exceed the hash directory", n_dir);
    goto done;
  }
  h->n_dir = (int64_t)n_dir;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: hash directory", (void **)&h->dir, (size_t)(n_dir + 1) * 8,
                               RDX_DEVICE), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&slot_of, (size_t)n_dir * 8), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(h->dir + n_dir, &m, 8, cudaMemcpyHostToDevice, s), what, st, done);
  H = dev_view(h);
  for (int pass = 0; pass < 2; pass++) {
    if (h->csr.width == 32)
      hash_dir_kernel<rdx_pair32><<<rdx_grid((int64_t)m, kThreads), kThreads, 0, s>>>(
          H, (const rdx_pair32 *)h->csr.pairs, (int64_t)m, head, seg, h->dir, slot_of, h->table, pass);
    else
      hash_dir_kernel<rdx_pair64><<<rdx_grid((int64_t)m, kThreads), kThreads, 0, s>>>(
          H, (const rdx_pair64 *)h->csr.pairs, (int64_t)m, head, seg, h->dir, slot_of, h->table, pass);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  }
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
done:
  (void)cudaStreamSynchronize(s);
  rdx_mem_free(ctx, cursor);
  rdx_mem_free(ctx, ck);
  rdx_mem_free(ctx, cr);
  rdx_mem_free(ctx, head);
  rdx_mem_free(ctx, seg);
  rdx_mem_free(ctx, slot_of);
  rdx_mem_free(ctx, temp);
  return st;
}

template <typename K, typename R>
rdx_status build_typed(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  cudaStream_t s = rdx_stream(ctx);
  unsigned *flags = NULL, hflags = 0;
  rdx_status st = RDX_OK;
  size_t bytes = (size_t)h->L.n_windows * RDX_HASH_WINDOW_BYTES;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_build: hash table", (void **)&h->table, bytes, RDX_DEVICE));
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: hash flags", (void **)&flags, 4), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(h->table, 0xFF, bytes, s), "rdx_index_build: clearing the hash table", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(flags, 0, 4, s), "rdx_index_build: hash flags", st, done);
  hash_insert_kernel<K, R><<<rdx_grid(in->n, kThreads), kThreads, 0, s>>>(h->table, h->L, (const K *)in->keys,
                                                                          (const R *)in->rows, in->n, flags);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: hash insert kernel", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&hflags, flags, 4, cudaMemcpyDeviceToHost, s), "rdx_index_build: hash flags", st,
                done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "rdx_index_build: hash insert", st, done);
  if (hflags & FLAG_OVERFLOW) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_index_build: hash table of %llu windows overflowed with %lld keys",
                  (unsigned long long)h->L.n_windows, (long long)in->n);
    goto done;
  }
  if (hflags & FLAG_PENDING) st = build_csr<K, R>(ctx, h, in);
done:
  rdx_mem_free(ctx, flags);
  return st;
}

rdx_status hash_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  hash_impl *h = new (std::nothrow) hash_impl();
  if (h == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: hash handle");
  int key_bits = in->key_dtype == RDX_U32 ? 32 : 64;
  if (rdx_hash_plan(&h->L, in->n, key_bits, in->opts.load_factor) != 0) {
    delete h;
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "rdx_index_build: %lld keys at load factor %g need more than 2^32 hash windows", (long long)in->n,
                    in->opts.load_factor);
  }
  int r64 = in->rows != NULL && in->row_dtype == RDX_U64;
  rdx_status st;
  if (key_bits == 32)
    st = r64 ? build_typed<uint32_t, uint64_t>(ctx, h, in) : build_typed<uint32_t, uint32_t>(ctx, h, in);
  else
    st = r64 ? build_typed<uint64_t, uint64_t>(ctx, h, in) : build_typed<uint64_t, uint32_t>(ctx, h, in);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, h->table);
    rdx_entries_free(ctx, &h->csr);
    rdx_mem_free(ctx, h->dir);
    delete h;
    return st;
  }
  idx->impl = h;
  return RDX_OK;
}

void hash_destroy(rdx_context *ctx, rdx_index *idx) {
  hash_impl *h = (hash_impl *)idx->impl;
  rdx_mem_free(ctx, h->table);
  rdx_entries_free(ctx, &h->csr);
  rdx_mem_free(ctx, h->dir);
  delete h;
}

/* ---- queries: one query per 2-thread tile ----
 *
 * Each thread of the pair reads one 16-byte half of the window, so a warp's load instruction
 * fetches 16 whole windows, one 32-byte request each, instead of every thread issuing two
 * requests to the same sector. The halves are judged by rdx_hash_half32/64 (hash_hd.h) and
 * combined with two ballots: a hit in either half wins; otherwise an empty slot in either half
 * ends the probe (occupied slots are a prefix of the window); otherwise on to the next window. */

typedef cg::thread_block_tile<2> tile2;

/* The value found for q, widened as by find(); 0 when q is absent. Both threads get it. */
template <typename K>
__device__ __forceinline__ int find2(const tile2 &t, const hash_dev &H, K q, uint64_t *value);

template <>
__device__ __forceinline__ int find2<uint32_t>(const tile2 &t, const hash_dev &H, uint32_t q, uint64_t *value) {
  int half = (int)t.thread_rank();
  uint64_t w = rdx_hash_home32(&H.L, q);
  for (uint64_t p = 0; p < H.L.n_windows; p++, w = rdx_hash_next(&H.L, w)) {
    ulonglong2 a = __ldcs((const ulonglong2 *)(H.table + w * RDX_HASH32_SLOTS) + half);
    uint32_t v = 0;
    int s = 0, r = rdx_hash_half32(a.x, a.y, q, &v, &s);
    unsigned hit = t.ballot(r > 0);
    if (hit) {
      v = t.shfl(v, __ffs(hit) - 1);
      *value = rdx_hash_direct32(v) ? (uint64_t)v : RDX_HASH64_FLAG | (v & ~RDX_HASH32_FLAG);
      return 1;
    }
    if (t.any(r < 0)) return 0;
  }
  return 0;
}

template <>
__device__ __forceinline__ int find2<uint64_t>(const tile2 &t, const hash_dev &H, uint64_t q, uint64_t *value) {
  int half = (int)t.thread_rank();
  uint64_t w = rdx_hash_home64(&H.L, q);
  for (uint64_t p = 0; p < H.L.n_windows; p++, w = rdx_hash_next(&H.L, w)) {
    ulonglong2 a = __ldcs((const ulonglong2 *)(H.table + w * RDX_HASH64_SLOTS * 2) + half);
    uint64_t v = 0;
    int r = rdx_hash_half64(a.x, a.y, q, &v);
    unsigned hit = t.ballot(r > 0);
    if (hit) {
      *value = t.shfl(v, __ffs(hit) - 1);
      return 1;
    }
    if (t.any(r < 0)) return 0;
  }
  return 0;
}

template <typename K, int OP>
__global__ void __launch_bounds__(kThreads) hash_query_kernel(hash_dev H, const K *q, int64_t n, uint64_t *out,
                                                              uint64_t *rows) {
  tile2 t = cg::tiled_partition<2>(cg::this_thread_block());
  int lead = t.thread_rank() == 0;
  int64_t n_tiles = (int64_t)gridDim.x * (blockDim.x / 2);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 2; i < n; i += n_tiles) {
    uint64_t v = 0;
    int hit = find2<K>(t, H, __ldcs(q + i), &v);
    uint64_t d = v & ~RDX_HASH64_FLAG;
    if (OP == OP_LOOKUP) {
      if (lead) out[i] = !hit ? RDX_MISS : direct(v) ? v : csr_row(H, H.dir[d]);
    } else if (OP == OP_COUNT) {
      if (lead) out[i] = !hit ? 0 : direct(v) ? 1 : H.dir[d + 1] - H.dir[d];
    } else {
      uint64_t b = out[i], e = out[i + 1];
      if (!hit || e <= b) continue;
      if (direct(v)) {
        if (lead) rows[b] = v;
        continue;
      }
      /* the key's rows, two threads at a time */
      uint64_t first = H.dir[d], count = H.dir[d + 1] - first;
      for (uint64_t k = t.thread_rank(); k < count && b + k < e; k += 2) rows[b + k] = csr_row(H, first + k);
    }
  }
}

template <int OP>
rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, uint64_t *out, uint64_t *rows,
               const char *what) {
  hash_dev H = dev_view((const hash_impl *)idx->impl);
  unsigned grid = rdx_grid(2 * n, kThreads); /* two threads per query */
  if (H.L.key_bits == 32)
    hash_query_kernel<uint32_t, OP><<<grid, kThreads, 0, rdx_stream(ctx)>>>(H, (const uint32_t *)q, n, out, rows);
  else
    hash_query_kernel<uint64_t, OP><<<grid, kThreads, 0, rdx_stream(ctx)>>>(H, (const uint64_t *)q, n, out, rows);
  RDX_LAUNCH_CHECK(ctx, what);
  return RDX_OK;
}

rdx_status hash_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                      uint64_t *rows) { /* lookups only: index.c keeps ranges away */
  if (op == RDX_KEY_LOOKUP) return run<OP_LOOKUP>(ctx, idx, q, n, out, rows, "rdx_index_lookup: hash kernel");
  if (op == RDX_KEY_LOOKUP_COUNT) return run<OP_COUNT>(ctx, idx, q, n, out, rows, "rdx_index_lookup_count: hash kernel");
  return run<OP_FILL>(ctx, idx, q, n, out, rows, "rdx_index_lookup_fill: hash kernel");
}

}  // namespace

/* No range calls: index.c answers them with RDX_ERR_UNSUPPORTED and a sentence. */
extern "C" const rdx_key_ops rdx_hash_cuda_ops = {
    RDX_KIND_HASH, RDX_BACKEND_CUDA, hash_build, hash_destroy, hash_query, 0, 1, NULL, NULL, NULL,
};
