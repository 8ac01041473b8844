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
#include <cooperative_groups/reduce.h>
#include <cub/cub.cuh>
#include <cuda/atomic>
#include <new>

#include "core/cuda_util.cuh"
#include "keys/sorted_hd.h"

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
enum { FLAG_PENDING = 1, FLAG_OVERFLOW = 2, FLAG_WHOLE = 4 }; /* FLAG_WHOLE: insert, a row too big for a slot */

struct hash_impl {
  rdx_hash_layout L;
  uint64_t *table;   /* device: n_windows * 32 bytes */
  rdx_entries csr;   /* device: the side CSR's sorted (key, row) pairs; n = 0 when none */
  uint64_t *dir;     /* device: n_dir + 1 starts into csr; NULL when none */
  int64_t n_dir;
  int64_t n_keys;    /* occupied slots: distinct keys, <= rdx_hash_limit after an insert */
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

/* Warp-wide sums and appends. Every lane of the warp calls them, at the same point: the sums at
 * the end of a kernel none of whose threads returns early (blocks are whole warps), the appends
 * inside a loop whose trip count is the warp's (WARP_LOOP). __syncwarp first: after a loop that
 * lanes left at different iterations, or spun in a CAS, independent thread scheduling does not
 * promise that the warp has come back together, and a collective operation over whichever lanes
 * happen to be active at that moment can miss lanes that arrive later. */
__device__ __forceinline__ void warp_flag(unsigned *flags, unsigned f) {
  __syncwarp();
  f = __reduce_or_sync(0xffffffffu, f);
  if (f && (threadIdx.x & 31) == 0) atomicOr(flags, f);
}
__device__ __forceinline__ void warp_add(unsigned long long *sum, unsigned long long v) {
  __syncwarp();
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0 && v) atomicAdd(sum, v);
}
/* The lanes with take get consecutive slots at *cursor (one atomic per warp); returns the lane's. */
__device__ __forceinline__ unsigned long long warp_append(unsigned long long *cursor, bool take) {
  __syncwarp();
  unsigned m = __ballot_sync(0xffffffffu, take);
  int lane = threadIdx.x & 31;
  unsigned long long base = 0;
  if (lane == 0 && m) base = atomicAdd(cursor, (unsigned long long)__popc(m));
  return __shfl_sync(0xffffffffu, base, 0) + (unsigned long long)__popc(m & ((1u << lane) - 1));
}
/* for (i ...) over [0, n), grid-stride, with the same trip count for every lane of a warp (lanes
 * past n see i >= n and must not use it). */
#define WARP_LOOP(i, n)                                                                                    \
  for (int64_t i##_warp = blockIdx.x * (int64_t)blockDim.x + (threadIdx.x & ~31), i = i##_warp + (threadIdx.x & 31); \
       i##_warp < (n); i##_warp += (int64_t)gridDim.x * blockDim.x, i = i##_warp + (threadIdx.x & 31))

template <typename K, typename R>
__global__ void hash_insert_kernel(uint64_t *table, rdx_hash_layout L, const K *keys, const R *rows, uint64_t first_row,
                                   int64_t n, unsigned *flags) {
  unsigned f = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t r = rows ? (uint64_t)rows[i] : first_row + (uint64_t)i;
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
__global__ void hash_pending_kernel(hash_dev H, const K *keys, const R *rows, uint64_t first_row, int64_t n,
                                    unsigned long long *cursor, K *out_keys, uint64_t *out_rows) {
  const uint64_t pending = sizeof(K) == 4 ? (RDX_HASH64_FLAG | (RDX_HASH32_V_PENDING & ~RDX_HASH32_FLAG)) : RDX_HASH64_PENDING;
  WARP_LOOP(i, n) {
    K k = i < n ? keys[i] : (K)0;
    uint64_t v = 0;
    int64_t slot;
    bool take = i < n && find<K>(H, k, &v, &slot) && v == pending;
    unsigned long long base = warp_append(cursor, take);
    if (take && out_keys) {
      out_keys[base] = k;
      out_rows[base] = rows ? (uint64_t)rows[i] : first_row + (uint64_t)i;
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
  hash_pending_kernel<K, R><<<grid, kThreads, 0, s>>>(H, (const K *)in->keys, (const R *)in->rows, in->first_row, in->n, cursor, NULL,
                                                           NULL);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&m, cursor, 8, cudaMemcpyDeviceToHost, s), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
  if (m == 0) goto done;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&ck, (size_t)m * sizeof(K)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&cr, (size_t)m * 8), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(cursor, 0, 8, s), what, st, done);
  hash_pending_kernel<K, R><<<grid, kThreads, 0, s>>>(H, (const K *)in->keys, (const R *)in->rows, in->first_row, in->n, cursor, ck,
                                                           cr);
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
  hash_insert_kernel<K, R><<<rdx_grid(in->n, kThreads), kThreads, 0, s>>>(
      h->table, h->L, (const K *)in->keys, (const R *)in->rows, in->first_row, in->n, flags);
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
  if (st == RDX_OK) h->n_keys = in->n - h->csr.n + h->n_dir; /* direct keys hold one entry each */
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

/* ---- updates (the design is hash.c's, step for step; see there) ----
 *
 * Insert: one kernel puts every pair with an atomic CAS (the build's protocol, a key that holds a
 * slot already changing nothing), writes one state byte per pair, counts the keys put and the
 * pairs whose key was present, and ORs two flags (FLAG_WHOLE: a row too big for a slot;
 * FLAG_OVERFLOW). With neither flag the puts stay: the pairs whose key was present (ST_NONE) --
 * keys there before the batch, and later copies of keys the kernel put -- are gathered with
 * explicit rows (warp-aggregated, unordered: sort_insert sorts) and go through sort_insert, where
 * every one of their keys is present (classes 2 and 3: no key is added, the CSR and directory are
 * rebuilt and the slots pointed). If that gather's allocation or sort_insert fails (it allocates
 * everything before its first change), the kernel's puts are undone -- marked, then removed
 * cluster by cluster, needing only the pass's state -- and the index is as before. With a flag,
 * the puts are undone and the whole batch goes in sorted (or the insert fails, on overflow).
 * Growth rehashes into a table twice the size the load factor needs, aside. Erase: mark, find the
 * clusters' owners, compact, and drop the erased keys' lists from the CSR (rdx_entries_erase_cuda)
 * with a new directory. Every allocation comes before the first change that is not undone; the
 * phases after it are kernels on the context's stream. */

enum { ST_NONE = 0, ST_PUT = 1, ST_MARKED = 2, ST_OWNER = 3 };

__device__ __forceinline__ int put_dev(uint64_t *table, const rdx_hash_layout &L, uint64_t k, uint64_t val) {
  return L.key_bits == 32 ? rdx_hash_put32(table, &L, (uint32_t)k, (uint32_t)val, 0)
                          : rdx_hash_put64(table, &L, k, val, 0);
}

/* Mark key k for removal (its value exchanged for PENDING): 1 with the old value when this thread
 * changed it, 0 when k is absent or marked already. */
__device__ int mark_key(uint64_t *table, const rdx_hash_layout &L, uint64_t k, uint64_t *old) {
  uint64_t w = rdx_hash_home(&L, k);
  for (uint64_t p = 0; p < L.n_windows; p++, w = rdx_hash_next(&L, w)) {
    for (int i = 0; i < L.slots; i++) {
      uint64_t s = w * (uint64_t)L.slots + (uint64_t)i;
      if (L.key_bits == 32) {
        uint64_t cur = load_relaxed(table + s);
        if ((uint32_t)cur == RDX_HASH32_V_EMPTY) return 0;
        if ((cur >> 32) != k) continue;
        uint64_t was = atomicExch(ull(table + s), (unsigned long long)(k << 32 | RDX_HASH32_V_PENDING));
        *old = (uint32_t)was;
        return *old != RDX_HASH32_V_PENDING;
      }
      uint64_t cur = load_relaxed(table + 2 * s + 1);
      if (cur == RDX_HASH64_EMPTY) return 0;
      if (load_relaxed(table + 2 * s) != k) continue;
      *old = atomicExch(ull(table + 2 * s + 1), (unsigned long long)RDX_HASH64_PENDING);
      return *old != RDX_HASH64_PENDING;
    }
  }
  return 0;
}

/* A found value of width key_bits: a direct row, or the directory entry it names. */
__device__ __forceinline__ int direct_w(int key_bits, uint64_t v) {
  return key_bits == 32 ? rdx_hash_direct32((uint32_t)v) : rdx_hash_direct64(v);
}
__device__ __forceinline__ uint64_t dir_index_w(int key_bits, uint64_t v) {
  return key_bits == 32 ? v & ~(uint64_t)RDX_HASH32_FLAG : v & ~RDX_HASH64_FLAG;
}
/* Plain probe of the table: the slot and its value (u32 values as 32-bit numbers), or -1. */
__device__ __forceinline__ int64_t find_plain(const uint64_t *table, const rdx_hash_layout &L, uint64_t k, uint64_t *v) {
  if (L.key_bits == 32) {
    uint32_t v32 = 0;
    int64_t s = rdx_hash_find32(table, &L, (uint32_t)k, &v32);
    *v = v32;
    return s;
  }
  return rdx_hash_find64(table, &L, k, v);
}

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* The insert's put pass: state ST_PUT for a pair that took an empty slot, ST_NONE for one whose
 * key held a slot already (or found no room); counts[0] the keys put, counts[1] the pairs whose
 * key was present; flags FLAG_WHOLE (a row too big for a slot), FLAG_OVERFLOW. */
template <typename K, typename R>
__global__ void hash_put_kernel(uint64_t *table, rdx_hash_layout L, const K *keys, const R *rows, uint64_t first_row,
                                int64_t n, uint8_t *state, unsigned *flags, unsigned long long *counts) {
  unsigned f = 0;
  unsigned long long c = 0, present = 0;
  GRID_STRIDE(i, n) {
    uint64_t r = rows ? (uint64_t)rows[i] : first_row + (uint64_t)i;
    uint64_t val = sizeof(K) == 4 ? (uint64_t)rdx_hash_value32(r) : rdx_hash_value64(r);
    int got = put_dev(table, L, (uint64_t)keys[i], val);
    state[i] = got == 1 ? ST_PUT : ST_NONE;
    c += got == 1;
    present += got == 2;
    if (rdx_hash_is_mark(&L, val)) f |= FLAG_WHOLE;
    if (got == 0) f |= FLAG_OVERFLOW;
  }
  warp_flag(flags, f);
  warp_add(counts, c);
  warp_add(counts + 1, present);
}

/* After a put pass without overflow: the pairs whose key was present (ST_NONE), keys and explicit
 * rows, gathered at *cursor (warp-aggregated, so in no fixed order: sort_insert sorts them). At
 * most m are written; the put pass counted exactly m. */
template <typename K, typename R>
__global__ void hash_present_kernel(const K *keys, const R *rows, uint64_t first_row, int64_t n, const uint8_t *state,
                                    unsigned long long *cursor, unsigned long long m, K *out_keys, uint64_t *out_rows) {
  WARP_LOOP(i, n) {
    bool take = i < n && state[i] == ST_NONE;
    unsigned long long base = warp_append(cursor, take);
    if (!take || base >= m) continue;
    out_keys[base] = keys[i];
    out_rows[base] = rows ? (uint64_t)rows[i] : first_row + (uint64_t)i;
  }
}

/* Undo of the put kernel: mark every key it put. */
template <typename K>
__global__ void hash_unput_kernel(uint64_t *table, rdx_hash_layout L, const K *keys, int64_t n, uint8_t *state) {
  GRID_STRIDE(i, n) {
    if (state[i] != ST_PUT) continue;
    uint64_t old;
    (void)mark_key(table, L, (uint64_t)keys[i], &old);
    state[i] = ST_MARKED;
  }
}

/* Erase: mark each key; the marking thread counts the key's rows (counts[0]) and the key
 * (counts[1]). */
template <typename K>
__global__ void hash_erase_mark_kernel(uint64_t *table, rdx_hash_layout L, const uint64_t *dir, const K *keys,
                                       int64_t m, uint8_t *state, unsigned long long *counts) {
  unsigned long long rows = 0, nk = 0;
  GRID_STRIDE(i, m) {
    uint64_t old;
    state[i] = ST_NONE;
    if (!mark_key(table, L, (uint64_t)keys[i], &old)) continue;
    state[i] = ST_MARKED;
    nk++;
    if (direct_w(L.key_bits, old)) {
      rows++;
    } else {
      uint64_t d = dir_index_w(L.key_bits, old);
      rows += dir[d + 1] - dir[d];
    }
  }
  warp_add(counts, rows);
  warp_add(counts + 1, nk);
}

/* Read-only: the marked keys that own their cluster. */
template <typename K>
__global__ void hash_owner_kernel(const uint64_t *table, rdx_hash_layout L, const K *keys, int64_t n, uint8_t *state) {
  GRID_STRIDE(i, n) {
    if (state[i] != ST_MARKED) continue;
    uint64_t v;
    int64_t s = find_plain(table, L, (uint64_t)keys[i], &v);
    if (s >= 0 && rdx_hash_owns_cluster(table, &L, (uint64_t)s)) state[i] = ST_OWNER;
  }
}

/* Each owner rewrites its cluster without the marked keys (hash_hd.h). */
template <typename K>
__global__ void hash_compact_kernel(uint64_t *table, rdx_hash_layout L, const K *keys, int64_t n, const uint8_t *state) {
  GRID_STRIDE(i, n) {
    if (state[i] != ST_OWNER) continue;
    uint64_t c = rdx_hash_cluster_start(table, &L, rdx_hash_home(&L, (uint64_t)keys[i]));
    rdx_hash_compact_cluster(table, &L, c);
  }
}

/* Read-only: keys absent from the table (counts[0]). */
template <typename K>
__global__ void hash_absent_kernel(const uint64_t *table, rdx_hash_layout L, const K *keys, int64_t n,
                                   unsigned long long *counts) {
  unsigned long long c = 0;
  GRID_STRIDE(i, n) {
    uint64_t v;
    c += find_plain(table, L, (uint64_t)keys[i], &v) < 0;
  }
  warp_add(counts, c);
}

/* Growth: every key of the old table, value word and all, into the new one. */
__global__ void hash_rehash_kernel(const uint64_t *table, rdx_hash_layout L, uint64_t *to, rdx_hash_layout L2) {
  GRID_STRIDE(s, (int64_t)(L.n_windows * (uint64_t)L.slots)) {
    uint64_t k, v;
    rdx_hash_get(table, &L, (uint64_t)s, &k, &v);
    if (!rdx_hash_is_empty(&L, v)) put_dev(to, L2, k, v);
  }
}

/* Read-only: whether some key listed has its rows in the CSR (flags |= 1). */
template <typename K>
__global__ void hash_csr_hit_kernel(const uint64_t *table, rdx_hash_layout L, const K *keys, int64_t m, unsigned *flags) {
  unsigned f = 0;
  GRID_STRIDE(i, m) {
    uint64_t v;
    if (find_plain(table, L, (uint64_t)keys[i], &v) >= 0 && !direct_w(L.key_bits, v)) f = 1;
  }
  warp_flag(flags, f);
}

/* sort_insert's groups of the sorted batch e (one thread per group head): cls of every entry of
 * the group (0 a new key with one row that fits a slot; 1 another new key; 2 a key present with a
 * direct row; 3 a key present with CSR rows) and cnt, the CSR pairs each entry adds (the head of a
 * class 2 group adds the old row too); counts[0] the new keys. */
template <typename P>
__global__ void hash_classify_kernel(const uint64_t *table, rdx_hash_layout L, const P *e, int64_t n, uint8_t *cls,
                                     unsigned long long *cnt, unsigned long long *counts) {
  const uint64_t row_max = L.key_bits == 32 ? RDX_HASH32_ROW_MAX : RDX_HASH64_ROW_MAX;
  unsigned long long fresh = 0;
  GRID_STRIDE(i, n) {
    if (i > 0 && e[i - 1].key == e[i].key) continue;
    int64_t end = i + 1;
    while (end < n && e[end].key == e[i].key) end++;
    uint64_t v;
    int present = find_plain(table, L, (uint64_t)e[i].key, &v) >= 0;
    uint8_t c = !present ? (end - i == 1 && (uint64_t)e[i].row <= row_max ? 0 : 1) : direct_w(L.key_bits, v) ? 2 : 3;
    fresh += !present;
    for (int64_t j = i; j < end; j++) {
      cls[j] = c;
      cnt[j] = (c != 0) + (j == i && c == 2);
    }
  }
  warp_add(counts, fresh);
}

/* The CSR pairs sort_insert adds, at the scanned positions. */
template <typename P, typename K>
__global__ void hash_extra_kernel(const uint64_t *table, rdx_hash_layout L, const P *e, int64_t n, const uint8_t *cls,
                                  const unsigned long long *pos, K *ck, uint64_t *cr) {
  GRID_STRIDE(i, n) {
    if (cls[i] == 0) continue;
    unsigned long long at = pos[i];
    if (cls[i] == 2 && (i == 0 || e[i - 1].key != e[i].key)) {
      uint64_t v;
      find_plain(table, L, (uint64_t)e[i].key, &v);
      ck[at] = (K)e[i].key;
      cr[at++] = v;
    }
    ck[at] = (K)e[i].key;
    cr[at] = (uint64_t)e[i].row;
  }
}

/* sort_insert's commit: the new keys into the table, CSR keys with a placeholder value that the
 * directory pass replaces. */
template <typename P>
__global__ void hash_put_new_kernel(uint64_t *table, rdx_hash_layout L, const P *e, int64_t n, const uint8_t *cls) {
  GRID_STRIDE(i, n) {
    if (cls[i] > 1 || (i > 0 && e[i - 1].key == e[i].key)) continue;
    put_dev(table, L, (uint64_t)e[i].key, cls[i] == 0 ? (uint64_t)e[i].row : rdx_hash_mark_value(&L));
  }
}

/* Direct keys of the table gathered at *cursor (entries). */
template <typename K>
__global__ void hash_gather_kernel(const uint64_t *table, rdx_hash_layout L, unsigned long long *cursor, K *keys,
                                   uint64_t *rows) {
  const int64_t slots = (int64_t)(L.n_windows * (uint64_t)L.slots);
  WARP_LOOP(s, slots) {
    uint64_t k = 0, v = 0;
    if (s < slots) rdx_hash_get(table, &L, (uint64_t)s, &k, &v);
    bool take = s < slots && !rdx_hash_is_empty(&L, v) && direct_w(L.key_bits, v);
    unsigned long long base = warp_append(cursor, take);
    if (!take) continue;
    keys[base] = (K)k;
    rows[base] = v;
  }
}

template <typename P, typename K>
__global__ void hash_split_kernel(const P *e, int64_t n, K *keys, uint64_t *rows) {
  GRID_STRIDE(i, n) {
    keys[i] = (K)e[i].key;
    rows[i] = (uint64_t)e[i].row;
  }
}

/* A directory for sorted CSR entries c (n >= 1), prepared before an update's first change:
 * dir (n_dir + 1, the last entry written at the commit), the heads and their numbers, and the
 * slot array the pointing needs. */
struct dir_plan {
  uint64_t *dir = nullptr;
  int64_t n_dir = 0;
  unsigned long long *head = nullptr, *seg = nullptr;
  int64_t *slot_of = nullptr;
  void *temp = nullptr;
};

void dir_plan_free(rdx_context *ctx, dir_plan *p) {
  rdx_mem_free(ctx, p->dir);
  rdx_mem_free(ctx, p->head);
  rdx_mem_free(ctx, p->seg);
  rdx_mem_free(ctx, p->slot_of);
  rdx_mem_free(ctx, p->temp);
  *p = dir_plan();
}

rdx_status dir_prepare(rdx_context *ctx, const char *fn, const rdx_entries *c, int key_bits, dir_plan *p) {
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  int64_t m = c->n;
  size_t temp_bytes = 0;
  unsigned long long last_seg = 0, last_head = 0;
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&p->head, (size_t)m * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&p->seg, (size_t)m * 8), st, fail);
  if (c->width == 32)
    hash_heads_kernel<rdx_pair32><<<rdx_grid(m, kThreads), kThreads, 0, s>>>((const rdx_pair32 *)c->pairs, m, p->head);
  else
    hash_heads_kernel<rdx_pair64><<<rdx_grid(m, kThreads), kThreads, 0, s>>>((const rdx_pair64 *)c->pairs, m, p->head);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, fail);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, p->head, p->seg, m, s), fn, st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, &p->temp, temp_bytes), st, fail);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(p->temp, temp_bytes, p->head, p->seg, m, s), fn, st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last_seg, p->seg + m - 1, 8, cudaMemcpyDeviceToHost, s), fn, st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last_head, p->head + m - 1, 8, cudaMemcpyDeviceToHost, s), fn, st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, fail);
  p->n_dir = (int64_t)(last_seg + last_head);
  if ((uint64_t)p->n_dir - 1 > (key_bits == 32 ? RDX_HASH32_DIR_MAX : RDX_HASH64_DIR_MAX)) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld keys with several or large rows exceed the hash directory", fn,
                  (long long)p->n_dir);
    goto fail;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&p->dir, (size_t)(p->n_dir + 1) * 8, RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&p->slot_of, (size_t)p->n_dir * 8), st, fail);
  return RDX_OK;
fail:
  (void)cudaStreamSynchronize(s);
  dir_plan_free(ctx, p);
  return st;
}

/* Commit: write the directory of c and point every CSR key's slot at its entry (the keys are all
 * in h's table). Two launches, so no probe reads a slot while it changes. */
rdx_status dir_point(rdx_context *ctx, const char *fn, const hash_impl *h, const rdx_entries *c, dir_plan *p) {
  cudaStream_t s = rdx_stream(ctx);
  uint64_t m = (uint64_t)c->n;
  RDX_CUDA(ctx, cudaMemcpyAsync(p->dir + p->n_dir, &m, 8, cudaMemcpyHostToDevice, s), fn);
  hash_dev H = dev_view(h);
  H.csr = c->pairs;
  H.csr_width = c->width;
  H.dir = p->dir;
  for (int pass = 0; pass < 2; pass++) {
    if (c->width == 32)
      hash_dir_kernel<rdx_pair32><<<rdx_grid(c->n, kThreads), kThreads, 0, s>>>(
          H, (const rdx_pair32 *)c->pairs, c->n, p->head, p->seg, p->dir, p->slot_of, h->table, pass);
    else
      hash_dir_kernel<rdx_pair64><<<rdx_grid(c->n, kThreads), kThreads, 0, s>>>(
          H, (const rdx_pair64 *)c->pairs, c->n, p->head, p->seg, p->dir, p->slot_of, h->table, pass);
    RDX_LAUNCH_CHECK(ctx, fn);
  }
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn); /* m is on this stack */
  return RDX_OK;
}

/* Remove the marked keys (state ST_MARKED) of n keys: owners, then their clusters. */
template <typename K>
rdx_status remove_marked(rdx_context *ctx, const char *fn, hash_impl *h, const K *keys, int64_t n, uint8_t *state) {
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = rdx_grid(n, kThreads);
  hash_owner_kernel<K><<<grid, kThreads, 0, s>>>(h->table, h->L, keys, n, state);
  RDX_LAUNCH_CHECK(ctx, fn);
  hash_compact_kernel<K><<<grid, kThreads, 0, s>>>(h->table, h->L, keys, n, state);
  RDX_LAUNCH_CHECK(ctx, fn);
  return RDX_OK;
}

/* The pairs `in` sorted and merged into the CSR: the whole batch, or the pairs of a put pass
 * whose key was present (then every group is class 2 or 3, no key is put and n_keys is
 * unchanged). All or nothing: every allocation before the first change. Adds in->n rows to
 * h->L.n. */
template <typename K, typename P>
rdx_status sort_insert_typed(rdx_context *ctx, hash_impl *h, const rdx_key_input *in, const rdx_entries *E) {
  static const char fn[] = "rdx_index_insert: hash rows";
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  const P *e = (const P *)E->pairs;
  int64_t n = E->n;
  uint8_t *cls = NULL;
  unsigned long long *cnt = NULL, *pos = NULL, *counts = NULL, hc[2] = {0, 0}, last[2] = {0, 0};
  void *temp = NULL;
  size_t temp_bytes = 0;
  K *ck = NULL;
  uint64_t *cr = NULL;
  rdx_entries C = {};
  dir_plan plan;
  int64_t extra = 0;
  unsigned grid = rdx_grid(n, kThreads);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&cls, (size_t)n), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&cnt, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&pos, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&counts, 16), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(counts, 0, 16, s), fn, st, done);
  hash_classify_kernel<P><<<grid, kThreads, 0, s>>>(h->table, h->L, e, n, cls, cnt, counts);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, cnt, pos, n, s), fn, st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, &temp, temp_bytes), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(temp, temp_bytes, cnt, pos, n, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(hc, counts, 16, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[0], pos + n - 1, 8, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[1], cnt + n - 1, 8, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  rdx_trace(ctx, "hash rows: batch sorted, classified, scanned");
  extra = (int64_t)(last[0] + last[1]);
  if (extra > 0) {
    RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&ck, (size_t)extra * sizeof(K)), st, done);
    RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&cr, (size_t)extra * 8), st, done);
    hash_extra_kernel<P, K><<<grid, kThreads, 0, s>>>(h->table, h->L, e, n, cls, pos, ck, cr);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
    rdx_key_input in2 = *in;
    in2.keys = ck;
    in2.rows = cr;
    in2.n = extra;
    in2.row_dtype = RDX_U64;
    in2.first_row = 0;
    if (h->csr.n > 0) RDX_CHECK_GOTO(rdx_entries_merge_cuda(ctx, &h->csr, &in2, &C), st, done);
    else RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, &in2, &C), st, done);
    rdx_trace(ctx, "hash rows: CSR merged");
    RDX_CHECK_GOTO(dir_prepare(ctx, fn, &C, h->L.key_bits, &plan), st, done);
    rdx_trace(ctx, "hash rows: directory planned");
  }
  /* commit */
  hash_put_new_kernel<P><<<grid, kThreads, 0, s>>>(h->table, h->L, e, n, cls);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  if (extra > 0) {
    RDX_CHECK_GOTO(dir_point(ctx, fn, h, &C, &plan), st, done);
    rdx_entries_free(ctx, &h->csr);
    rdx_mem_free(ctx, h->dir);
    h->csr = C;
    h->dir = plan.dir;
    h->n_dir = plan.n_dir;
    C = rdx_entries();
    plan.dir = NULL;
  }
  h->n_keys += (int64_t)hc[0];
  h->L.n += in->n;
  rdx_trace(ctx, "hash rows: keys put, slots pointed");
done:
  (void)cudaStreamSynchronize(s);
  dir_plan_free(ctx, &plan);
  rdx_entries_free(ctx, &C);
  rdx_mem_free(ctx, cls);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, pos);
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, ck);
  rdx_mem_free(ctx, cr);
  return st;
}

template <typename K>
rdx_status sort_insert(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  rdx_entries E = {};
  RDX_CHECK(rdx_entries_build_cuda(ctx, in, &E));
  rdx_status st = E.width == 32 ? sort_insert_typed<K, rdx_pair32>(ctx, h, in, &E)
                                : sort_insert_typed<K, rdx_pair64>(ctx, h, in, &E);
  rdx_entries_free(ctx, &E);
  return st;
}

/* The batch into table h, which has room for all of it. */
template <typename K, typename R>
rdx_status insert_into(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  static const char fn[] = "rdx_index_insert: hash";
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK, undo_st = RDX_OK;
  uint8_t *state = NULL;
  void *sub = NULL;
  unsigned long long *meta = NULL, hm[3] = {0, 0, 0}; /* flags, keys put, pairs whose key was present */
  unsigned long long m = 0;
  const K *keys = (const K *)in->keys;
  unsigned grid = rdx_grid(in->n, kThreads);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&state, (size_t)in->n), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&meta, 32), st, done); /* hm's three, and a gather cursor */
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(meta, 0, 32, s), fn, st, done);
  hash_put_kernel<K, R><<<grid, kThreads, 0, s>>>(h->table, h->L, keys, (const R *)in->rows, in->first_row, in->n,
                                                  state, (unsigned *)meta, meta + 1);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(hm, meta, 24, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  rdx_trace(ctx, "hash insert: put pass");
  if (!((unsigned)hm[0] & (FLAG_WHOLE | FLAG_OVERFLOW))) {
    m = hm[2];
    if (m > 0) { /* the pairs whose key was present, through sort_insert; the puts stay */
      RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_insert: hash rows of keys present", &sub, (size_t)m * (8 + sizeof(K))),
                     st, undo);
      uint64_t *sub_rows = (uint64_t *)sub;
      K *sub_keys = (K *)(sub_rows + m);
      hash_present_kernel<K, R><<<grid, kThreads, 0, s>>>(keys, (const R *)in->rows, in->first_row, in->n, state,
                                                          meta + 3, m, sub_keys, sub_rows);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, undo);
      unsigned long long gathered = 0;
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&gathered, meta + 3, 8, cudaMemcpyDeviceToHost, s), fn, st, undo);
      RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, undo);
      if (gathered != m) {
        st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: gathered %llu pairs of keys present, counted %llu", fn, gathered, m);
        goto undo;
      }
      rdx_trace(ctx, "hash insert: pairs of keys present gathered");
      rdx_key_input in2 = *in;
      in2.keys = sub_keys;
      in2.rows = sub_rows;
      in2.n = (int64_t)m;
      in2.row_dtype = RDX_U64;
      in2.first_row = 0;
      RDX_CHECK_GOTO(sort_insert<K>(ctx, h, &in2), st, undo); /* counts its m rows, adds no key */
    }
    h->n_keys += (int64_t)hm[1];
    h->L.n += in->n - (int64_t)m;
    goto done;
  }
undo: /* the kernel's puts come out: the table is as before */
  hash_unput_kernel<K><<<grid, kThreads, 0, s>>>(h->table, h->L, keys, in->n, state);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, undo_st, undone);
  RDX_CHECK_GOTO(remove_marked<K>(ctx, fn, h, keys, in->n, state), undo_st, undone);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, undo_st, undone);
undone:
  if (st == RDX_OK) st = undo_st;
  if (st != RDX_OK) goto done;
  rdx_mem_free(ctx, state);
  rdx_mem_free(ctx, meta);
  state = NULL;
  meta = NULL;
  if ((unsigned)hm[0] & FLAG_OVERFLOW) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_index_insert: hash table of %llu windows overflowed with %lld keys",
                  (unsigned long long)h->L.n_windows, (long long)h->n_keys);
    goto done;
  }
  st = sort_insert<K>(ctx, h, in);
done:
  (void)cudaStreamSynchronize(s);
  rdx_mem_free(ctx, state);
  rdx_mem_free(ctx, meta);
  rdx_mem_free(ctx, sub);
  return st;
}

template <typename K, typename R>
rdx_status insert_typed(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  static const char fn[] = "rdx_index_insert: hash growth";
  cudaStream_t s = rdx_stream(ctx);
  const double lf = in->opts.load_factor;
  int64_t limit = rdx_hash_limit(&h->L, lf), add = in->n;
  rdx_trace(ctx, "hash insert: start");
  if (h->n_keys + add > limit) { /* count the keys that are new, at most */
    unsigned long long *c = NULL, hc = 0;
    rdx_status st = RDX_OK;
    RDX_CHECK(rdx_scratch(ctx, fn, (void **)&c, 8));
    RDX_CUDA_GOTO(ctx, cudaMemsetAsync(c, 0, 8, s), fn, st, counted);
    hash_absent_kernel<K><<<rdx_grid(in->n, kThreads), kThreads, 0, s>>>(h->table, h->L, (const K *)in->keys, in->n, c);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, counted);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&hc, c, 8, cudaMemcpyDeviceToHost, s), fn, st, counted);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, counted);
  counted:
    rdx_mem_free(ctx, c);
    RDX_CHECK(st);
    add = (int64_t)hc;
  }
  if (h->n_keys + add <= limit) return insert_into<K, R>(ctx, h, in);
  hash_impl g = *h;
  int64_t want = h->n_keys + add;
  if (rdx_hash_plan(&g.L, 2 * want, h->L.key_bits, lf) != 0 && rdx_hash_plan(&g.L, want, h->L.key_bits, lf) != 0)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "rdx_index_insert: %lld keys at load factor %g need more than 2^32 hash windows", (long long)want, lf);
  g.L.n = h->L.n;
  size_t bytes = (size_t)g.L.n_windows * RDX_HASH_WINDOW_BYTES;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_insert: grown hash table", (void **)&g.table, bytes, RDX_DEVICE));
  rdx_status st = RDX_OK;
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(g.table, 0xFF, bytes, s), fn, st, fail);
  hash_rehash_kernel<<<rdx_grid((int64_t)(h->L.n_windows * (uint64_t)h->L.slots), kThreads), kThreads, 0, s>>>(
      h->table, h->L, g.table, g.L);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, fail);
  RDX_CHECK_GOTO((insert_into<K, R>(ctx, &g, in)), st, fail);
  rdx_mem_free(ctx, h->table);
  *h = g; /* the CSR and directory are g's: the old ones, or what sort_insert made */
  return RDX_OK;
fail:
  (void)cudaStreamSynchronize(s);
  rdx_mem_free(ctx, g.table);
  return st;
}

rdx_status hash_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  hash_impl *h = (hash_impl *)idx->impl;
  int r64 = in->rows != NULL && in->row_dtype == RDX_U64;
  if (h->L.key_bits == 32)
    return r64 ? insert_typed<uint32_t, uint64_t>(ctx, h, in) : insert_typed<uint32_t, uint32_t>(ctx, h, in);
  return r64 ? insert_typed<uint64_t, uint64_t>(ctx, h, in) : insert_typed<uint64_t, uint32_t>(ctx, h, in);
}

template <typename K>
rdx_status erase_typed(rdx_context *ctx, hash_impl *h, const K *keys, int64_t m, int64_t *n_erased) {
  static const char fn[] = "rdx_index_erase: hash";
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  uint8_t *state = NULL;
  unsigned long long *meta = NULL, hm[3] = {0, 0, 0}; /* rows, keys, CSR hit */
  rdx_entries C = {};
  dir_plan plan;
  int64_t gone_rows = 0;
  unsigned grid = rdx_grid(m, kThreads);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&state, (size_t)m), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&meta, 24), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(meta, 0, 24, s), fn, st, done);
  if (h->n_dir > 0) {
    hash_csr_hit_kernel<K><<<grid, kThreads, 0, s>>>(h->table, h->L, keys, m, (unsigned *)(meta + 2));
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&hm[2], meta + 2, 8, cudaMemcpyDeviceToHost, s), fn, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  }
  if (hm[2]) { /* the CSR without the erased keys' lists, and its directory */
    int64_t dropped = 0;
    RDX_CHECK_GOTO(rdx_entries_erase_cuda(ctx, &h->csr, keys, h->L.key_bits == 32 ? RDX_U32 : RDX_U64, m, &C, &dropped),
                   st, done);
    if (C.n > 0) RDX_CHECK_GOTO(dir_prepare(ctx, fn, &C, h->L.key_bits, &plan), st, done);
  }
  /* commit */
  hash_erase_mark_kernel<K><<<grid, kThreads, 0, s>>>(h->table, h->L, h->dir, keys, m, state, meta);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  RDX_CHECK_GOTO(remove_marked<K>(ctx, fn, h, keys, m, state), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(hm, meta, 16, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  gone_rows = (int64_t)hm[0];
  if (hm[2]) {
    if (C.n > 0) RDX_CHECK_GOTO(dir_point(ctx, fn, h, &C, &plan), st, done);
    rdx_entries_free(ctx, &h->csr);
    rdx_mem_free(ctx, h->dir);
    h->csr = C;
    h->dir = plan.dir; /* NULL when no CSR key is left */
    h->n_dir = plan.n_dir;
    C = rdx_entries();
    plan.dir = NULL;
  }
  h->n_keys -= (int64_t)hm[1];
  h->L.n -= gone_rows;
  *n_erased = gone_rows;
done:
  (void)cudaStreamSynchronize(s);
  dir_plan_free(ctx, &plan);
  rdx_entries_free(ctx, &C);
  rdx_mem_free(ctx, state);
  rdx_mem_free(ctx, meta);
  return st;
}

rdx_status hash_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  hash_impl *h = (hash_impl *)idx->impl;
  if (h->L.key_bits == 32) return erase_typed<uint32_t>(ctx, h, (const uint32_t *)keys, m, n_erased);
  return erase_typed<uint64_t>(ctx, h, (const uint64_t *)keys, m, n_erased);
}

/* entries: the direct keys gathered from the table, the CSR as it is, sorted together. */
template <typename K>
rdx_status entries_typed(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  static const char fn[] = "rdx_index entries: hash";
  const hash_impl *h = (const hash_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  int64_t n = h->L.n;
  K *keys = NULL;
  uint64_t *rows = NULL;
  unsigned long long *cursor = NULL, direct = 0;
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&keys, (size_t)n * sizeof(K)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&rows, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, fn, (void **)&cursor, 8), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(cursor, 0, 8, s), fn, st, done);
  hash_gather_kernel<K><<<rdx_grid((int64_t)(h->L.n_windows * (uint64_t)h->L.slots), kThreads), kThreads, 0, s>>>(
      h->table, h->L, cursor, keys, rows);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&direct, cursor, 8, cudaMemcpyDeviceToHost, s), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  if ((int64_t)direct + h->csr.n != n) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %llu direct and %lld CSR entries for %lld", fn, direct,
                  (long long)h->csr.n, (long long)n);
    goto done;
  }
  if (h->csr.n > 0) {
    if (h->csr.width == 32)
      hash_split_kernel<rdx_pair32, K><<<rdx_grid(h->csr.n, kThreads), kThreads, 0, s>>>(
          (const rdx_pair32 *)h->csr.pairs, h->csr.n, keys + direct, rows + direct);
    else
      hash_split_kernel<rdx_pair64, K><<<rdx_grid(h->csr.n, kThreads), kThreads, 0, s>>>(
          (const rdx_pair64 *)h->csr.pairs, h->csr.n, keys + direct, rows + direct);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  }
  {
    rdx_key_input in = {};
    in.keys = keys;
    in.rows = rows;
    in.n = n;
    in.key_dtype = sizeof(K) == 4 ? RDX_U32 : RDX_U64;
    in.row_dtype = RDX_U64;
    in.opts = idx->opts;
    st = rdx_entries_build_cuda(ctx, &in, out);
  }
done:
  (void)cudaStreamSynchronize(s);
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, cursor);
  return st;
}

rdx_status hash_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const hash_impl *h = (const hash_impl *)idx->impl;
  return h->L.key_bits == 32 ? entries_typed<uint32_t>(ctx, idx, out) : entries_typed<uint64_t>(ctx, idx, out);
}

}  // namespace

/* No range calls: index.c answers them with RDX_ERR_UNSUPPORTED and a sentence. */
extern "C" const rdx_key_ops rdx_hash_cuda_ops = {
    RDX_KIND_HASH, RDX_BACKEND_CUDA, hash_build, hash_destroy, hash_query, 0, 1, hash_insert, hash_erase, hash_entries,
};
