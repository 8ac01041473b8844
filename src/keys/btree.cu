/*
 * btree.cu: the btree kind on the GPU: the B+-tree of btree_hd.h in device memory, searched by
 * 8-thread tiles.
 *
 * Build: sort the entries (entries.cu), then one kernel writes every leaf and one every inner
 * node, one 16-byte lane per thread, so reads of the entries and writes of the nodes are both
 * coalesced; then the entries are freed. About 2^26 * (8 + 8.8) bytes move after the sort.
 *
 * Search: one query per 8-thread tile. Each node is one coalesced 128-byte load (lane l takes
 * bytes 16 l .. 16 l + 15), each lane counts the keys below the query in its slice
 * (btree_hd.h), three shuffles add the counts, and lane 7's slice holds the first child. The top
 * RDX_BTREE_SMEM_NODES inner nodes (the top levels: inner nodes are stored root first) are
 * copied into shared memory by each block of a grid sized to stay resident, so those levels cost
 * no global traffic. Inner nodes below them are read through L1 (__ldg: the level above the
 * leaves is 0.28 bytes per key, 18 MB at 2^26 keys, so it stays in the 50 MB L2); leaves are
 * read once with an evict-first hint (__ldcs) so the stream of leaves does not push the inner
 * nodes out of L2. A point lookup thus costs one DRAM access of 128 bytes (the leaf) plus a
 * couple of L2 hits. Counts are two descents; fills read the entries by global position (leaves
 * are full, so entry g is slot g % 15 of leaf g / 15), eight lanes at a time.
 *
 * Updates read the pairs out of the leaves (one coalesced pass), merge the batch in or filter the
 * erased keys out (entries.cu), and bulk-load new nodes from the result, aside: the old nodes go
 * only once the new ones are written.
 */
#include <cooperative_groups.h>
#include <new>

#include "core/cuda_util.cuh"
#include "keys/btree_hd.h"

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 512;         /* threads per block: 64 tiles; 4 blocks fill an SM at <= 32 registers */
/* Inner nodes cached in shared memory per block: 192 nodes = 24 KB covers the top three levels
 * at 2^26 u32 keys (1 + 5 + 137 nodes); four resident blocks take 96 KB of the SM's 256 KB and
 * leave the rest to L1, which caches part of the next level (4370 nodes, 560 KB). Both
 * constants are reasoned, not yet tuned on a GPU. */
constexpr int kSmemNodes = 192;

enum { OP_LOOKUP, OP_COUNT, OP_FILL, OP_RCOUNT, OP_RFILL };

struct btree_impl {
  rdx_btree_layout L;
  void *inner;   /* device: L.n_inner nodes, root first */
  void *leaves;  /* device: L.n_leaves leaves */
  int n_sms;     /* multiprocessors of the context's device */
};

/* What a kernel needs, by value. */
struct bt_dev {
  const uint4 *inner;
  const uint4 *leaves;
  int64_t n;
  int n_levels;
  uint32_t s_nodes;  /* inner nodes held in shared memory (a prefix of the array) */
};

template <int W> struct bt_traits;
template <> struct bt_traits<32> {
  typedef uint32_t key;
  typedef rdx_pair32 pair;
  static constexpr int cap = RDX_BTREE_LEAF_CAP32;
};
template <> struct bt_traits<64> {
  typedef uint64_t key;
  typedef rdx_pair64 pair;
  static constexpr int cap = RDX_BTREE_LEAF_CAP64;
};

/* ---- build ---- */

template <int W>
__global__ void btree_leaves_kernel(const typename bt_traits<W>::pair *e, rdx_btree_layout L, uint4 *leaves) {
  int64_t total = L.n_leaves * RDX_BTREE_LANES;
  for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < total; s += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    if (W == 32) rdx_btree_leaf_lane32((const rdx_pair32 *)e, &L, s / RDX_BTREE_LANES, (int)(s % RDX_BTREE_LANES), w);
    else rdx_btree_leaf_lane64((const rdx_pair64 *)e, &L, s / RDX_BTREE_LANES, (int)(s % RDX_BTREE_LANES), w);
    leaves[s] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <int W>
__global__ void btree_inner_kernel(const typename bt_traits<W>::pair *e, rdx_btree_layout L, uint4 *inner) {
  int64_t total = L.n_inner * RDX_BTREE_LANES;
  for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < total; s += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    if (W == 32) rdx_btree_inner_lane32((const rdx_pair32 *)e, &L, s / RDX_BTREE_LANES, (int)(s % RDX_BTREE_LANES), w);
    else rdx_btree_inner_lane64((const rdx_pair64 *)e, &L, s / RDX_BTREE_LANES, (int)(s % RDX_BTREE_LANES), w);
    inner[s] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

/* ---- search ---- */

typedef cg::thread_block_tile<RDX_BTREE_LANES> tile8;

__device__ __forceinline__ int tile_sum(const tile8 &t, int c) {
  c += t.shfl_xor(c, 4);
  c += t.shfl_xor(c, 2);
  c += t.shfl_xor(c, 1);
  return c;
}

__device__ __forceinline__ uint4 inner_lane(const bt_dev &T, const uint4 *smem, uint32_t node, int lane) {
  return node < T.s_nodes ? smem[node * RDX_BTREE_LANES + lane] : __ldg(T.inner + (size_t)node * RDX_BTREE_LANES + lane);
}

/* lower_bound(q) for the whole tile: the global position g of the first entry >= q, and that
 * entry's key and row when g < n (valid). */
struct bound {
  int64_t g;
  uint64_t key, row;
  bool valid;
};

__device__ __forceinline__ bound lower32(const tile8 &t, const bt_dev &T, const uint4 *smem, uint32_t q) {
  int lane = t.thread_rank();
  uint32_t node = 0;
  for (int d = 0; d < T.n_levels; d++) {
    uint4 v = inner_lane(T, smem, node, lane);
    int c = tile_sum(t, rdx_btree_inner_count32(v.x, v.y, v.z, v.w, lane, q));
    node = t.shfl(v.w, RDX_BTREE_LANES - 1) + (uint32_t)c;
  }
  uint4 v = __ldcs(T.leaves + (size_t)node * RDX_BTREE_LANES + lane);
  int p = tile_sum(t, rdx_btree_leaf_count32(v.x, v.z, lane, q)); /* 0..15 */
  uint32_t count = t.shfl(v.z, RDX_BTREE_LANES - 1);
  int src = (p >> 1) < RDX_BTREE_LANES - 1 ? p >> 1 : RDX_BTREE_LANES - 1;
  /* pair p sits in lane p / 2, first or second half */
  uint32_t key = t.shfl(p & 1 ? v.z : v.x, src), row = t.shfl(p & 1 ? v.w : v.y, src);
  bound b;
  b.g = (int64_t)node * RDX_BTREE_LEAF_CAP32 + p;
  b.valid = (uint32_t)p < count;
  b.key = key;
  b.row = row;
  return b;
}

__device__ __forceinline__ bound lower64(const tile8 &t, const bt_dev &T, const uint4 *smem, uint64_t q) {
  int lane = t.thread_rank();
  uint32_t node = 0;
  for (int d = 0; d < T.n_levels; d++) {
    uint4 v = inner_lane(T, smem, node, lane);
    uint64_t a = v.x | (uint64_t)v.y << 32, b = v.z | (uint64_t)v.w << 32;
    int c = tile_sum(t, rdx_btree_inner_count64(a, b, lane, q));
    node = t.shfl(v.z, RDX_BTREE_LANES - 1) + (uint32_t)c; /* first child < 2^32: its low word */
  }
  uint4 v = __ldcs(T.leaves + (size_t)node * RDX_BTREE_LANES + lane);
  uint64_t key = v.x | (uint64_t)v.y << 32, row = v.z | (uint64_t)v.w << 32;
  int p = tile_sum(t, rdx_btree_leaf_count64(key, lane, q)); /* 0..7 */
  uint32_t count = t.shfl(v.x, RDX_BTREE_LANES - 1);
  bound b;
  b.g = (int64_t)node * RDX_BTREE_LEAF_CAP64 + p;
  b.valid = (uint32_t)p < count;
  b.key = t.shfl(key, p < RDX_BTREE_LANES - 1 ? p : RDX_BTREE_LANES - 1);
  b.row = t.shfl(row, p < RDX_BTREE_LANES - 1 ? p : RDX_BTREE_LANES - 1);
  return b;
}

template <int W>
__device__ __forceinline__ bound lower(const tile8 &t, const bt_dev &T, const uint4 *smem, typename bt_traits<W>::key q) {
  if (W == 32) return lower32(t, T, smem, (uint32_t)q);
  return lower64(t, T, smem, (uint64_t)q);
}

/* upper_bound(q) as a position: the first entry > q. */
template <int W>
__device__ __forceinline__ int64_t upper(const tile8 &t, const bt_dev &T, const uint4 *smem, typename bt_traits<W>::key q) {
  typedef typename bt_traits<W>::key K;
  if (q == (K)~(K)0) return T.n;
  return lower<W>(t, T, smem, (K)(q + 1)).g;
}

/* One query per tile, grid-stride over tiles. W: node width; Q: query dtype (u32 queries on a
 * width-64 tree are widened: a u32 index whose rows reach 2^32). */
template <int W, typename Q, int OP>
__global__ void __launch_bounds__(kThreads) btree_query_kernel(bt_dev T, const Q *q, int64_t n, uint64_t *out,
                                                               uint64_t *rows) {
  typedef typename bt_traits<W>::key K;
  extern __shared__ uint4 smem[];
  for (uint32_t i = threadIdx.x; i < T.s_nodes * RDX_BTREE_LANES; i += blockDim.x) smem[i] = __ldg(T.inner + i);
  __syncthreads();
  tile8 t = cg::tiled_partition<RDX_BTREE_LANES>(cg::this_thread_block());
  int lane = t.thread_rank();
  int64_t n_tiles = (int64_t)gridDim.x * (blockDim.x / RDX_BTREE_LANES);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / RDX_BTREE_LANES; i < n; i += n_tiles) {
    if (OP == OP_LOOKUP) {
      K k = (K)__ldg(q + i);
      bound b = lower<W>(t, T, smem, k);
      if (lane == 0) out[i] = b.valid && b.key == k ? b.row : RDX_MISS;
      continue;
    }
    int range = OP == OP_RCOUNT || OP == OP_RFILL;
    K lo = (K)__ldg(q + (range ? 2 * i : i)), hi = range ? (K)__ldg(q + 2 * i + 1) : lo;
    if (OP == OP_COUNT || OP == OP_RCOUNT) {
      uint64_t c = 0;
      if (lo <= hi) c = (uint64_t)(upper<W>(t, T, smem, hi) - lower<W>(t, T, smem, lo).g);
      if (lane == 0) out[i] = c;
      continue;
    }
    /* fills: rows of the entries from lower_bound(lo) with key <= hi into [out[i], out[i+1]) */
    uint64_t begin = out[i], end = out[i + 1];
    if (lo > hi || end <= begin) continue; /* the same for the whole tile */
    bound b = lower<W>(t, T, smem, lo);
    typedef typename bt_traits<W>::pair P;
    const P *leaf_pairs = (const P *)T.leaves;
    for (uint64_t k = lane; k < end - begin; k += RDX_BTREE_LANES) {
      int64_t g = b.g + (int64_t)k;
      if (g >= T.n) break;
      /* entry g: slot g % cap of leaf g / cap; a leaf is 128 bytes = 128 / sizeof(P) pair slots */
      P p = leaf_pairs[(g / bt_traits<W>::cap) * (RDX_BTREE_NODE_BYTES / sizeof(P)) + g % bt_traits<W>::cap];
      if (p.key > hi) break;
      rows[begin + k] = p.row;
    }
  }
}

template <int W, typename Q, int OP>
rdx_status launch(rdx_context *ctx, const btree_impl *b, const void *q, int64_t n, uint64_t *out, uint64_t *rows,
                  const char *what) {
  bt_dev T;
  T.inner = (const uint4 *)b->inner;
  T.leaves = (const uint4 *)b->leaves;
  T.n = b->L.n;
  T.n_levels = b->L.n_levels;
  T.s_nodes = (uint32_t)(b->L.n_inner < kSmemNodes ? b->L.n_inner : kSmemNodes);
  size_t smem = (size_t)T.s_nodes * RDX_BTREE_NODE_BYTES;
  /* A grid that stays resident: each block pays for its shared-memory copy once. */
  int per_sm = 0;
  RDX_CUDA(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, btree_query_kernel<W, Q, OP>, kThreads, smem),
           what);
  int64_t want = (n * RDX_BTREE_LANES + kThreads - 1) / kThreads;
  int64_t cap = (int64_t)(per_sm > 0 ? per_sm : 1) * b->n_sms;
  unsigned grid = (unsigned)(want < cap ? want : cap);
  btree_query_kernel<W, Q, OP><<<grid, kThreads, smem, rdx_stream(ctx)>>>(T, (const Q *)q, n, out, rows);
  RDX_LAUNCH_CHECK(ctx, what);
  return RDX_OK;
}

template <int OP>
rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, uint64_t *out, uint64_t *rows,
               const char *what) {
  const btree_impl *b = (const btree_impl *)idx->impl;
  if (b->L.width == 32) return launch<32, uint32_t, OP>(ctx, b, q, n, out, rows, what);
  if (idx->dtype == RDX_U32) return launch<64, uint32_t, OP>(ctx, b, q, n, out, rows, what);
  return launch<64, uint64_t, OP>(ctx, b, q, n, out, rows, what);
}

/* Bulk-load leaves and inner nodes of b from entries e (n >= 1), waiting for the kernels (the
 * caller may free e next); on failure b holds no nodes. */
rdx_status load(rdx_context *ctx, const rdx_entries *e, btree_impl *b) {
  rdx_status st = RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  b->leaves = b->inner = NULL;
  if (rdx_btree_plan(&b->L, e->n, e->width) != 0)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "btree: %lld keys need more than 2^32 btree nodes", (long long)e->n);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "btree: leaves", &b->leaves, (size_t)b->L.n_leaves * RDX_BTREE_NODE_BYTES,
                               RDX_DEVICE), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "btree: inner nodes", &b->inner, (size_t)b->L.n_inner * RDX_BTREE_NODE_BYTES,
                               RDX_DEVICE), st, fail);
  if (e->width == 32) {
    btree_leaves_kernel<32><<<rdx_grid(b->L.n_leaves * RDX_BTREE_LANES, 256), 256, 0, s>>>(
        (const rdx_pair32 *)e->pairs, b->L, (uint4 *)b->leaves);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "btree: leaves kernel", st, fail);
    if (b->L.n_inner > 0)
      btree_inner_kernel<32><<<rdx_grid(b->L.n_inner * RDX_BTREE_LANES, 256), 256, 0, s>>>(
          (const rdx_pair32 *)e->pairs, b->L, (uint4 *)b->inner);
  } else {
    btree_leaves_kernel<64><<<rdx_grid(b->L.n_leaves * RDX_BTREE_LANES, 256), 256, 0, s>>>(
        (const rdx_pair64 *)e->pairs, b->L, (uint4 *)b->leaves);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "btree: leaves kernel", st, fail);
    if (b->L.n_inner > 0)
      btree_inner_kernel<64><<<rdx_grid(b->L.n_inner * RDX_BTREE_LANES, 256), 256, 0, s>>>(
          (const rdx_pair64 *)e->pairs, b->L, (uint4 *)b->inner);
  }
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "btree: inner kernel", st, fail);
  /* the entries are read by the kernels above: wait before the caller frees them */
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "btree: nodes", st, fail);
  return RDX_OK;
fail:
  (void)cudaStreamSynchronize(s);
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  b->leaves = b->inner = NULL;
  return st;
}

rdx_status btree_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  btree_impl *b = new (std::nothrow) btree_impl();
  if (b == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: btree handle");
  rdx_status st = RDX_OK;
  rdx_entries e = {};
  RDX_CUDA_GOTO(ctx, cudaDeviceGetAttribute(&b->n_sms, cudaDevAttrMultiProcessorCount, ctx->device),
                "rdx_index_build: device attributes", st, fail);
  RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, in, &e), st, fail);
  RDX_CHECK_GOTO(load(ctx, &e, b), st, fail);
  rdx_entries_free(ctx, &e);
  idx->impl = b;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &e);
  delete b;
  return st;
}

/* ---- updates: the leaves' pairs out, the batch applied (entries.cu), a fresh bulk load aside ---- */

/* Entry g is slot g % cap of leaf g / cap (every leaf is full but the last). */
template <int W>
__global__ void btree_extract_kernel(const typename bt_traits<W>::pair *leaf_pairs, int64_t n,
                                     typename bt_traits<W>::pair *out) {
  typedef typename bt_traits<W>::pair P;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < n; g += (int64_t)gridDim.x * blockDim.x)
    out[g] = leaf_pairs[(g / bt_traits<W>::cap) * (RDX_BTREE_NODE_BYTES / sizeof(P)) + g % bt_traits<W>::cap];
}

rdx_status btree_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const btree_impl *b = (const btree_impl *)idx->impl;
  size_t sz = b->L.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  void *p = NULL;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_mem_alloc(ctx, "btree: entries", &p, (size_t)b->L.n * sz, RDX_DEVICE));
  unsigned g = rdx_grid(b->L.n, 256);
  if (b->L.width == 32)
    btree_extract_kernel<32><<<g, 256, 0, s>>>((const rdx_pair32 *)b->leaves, b->L.n, (rdx_pair32 *)p);
  else
    btree_extract_kernel<64><<<g, 256, 0, s>>>((const rdx_pair64 *)b->leaves, b->L.n, (rdx_pair64 *)p);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaStreamSynchronize(s); /* the caller may read them on any stream */
  if (err != cudaSuccess) {
    rdx_mem_free(ctx, p);
    return rdx_cuda_fail(ctx, err, "btree: extract kernel");
  }
  out->pairs = p;
  out->n = b->L.n;
  out->width = b->L.width;
  return RDX_OK;
}

/* Load ne (freed here either way) into new nodes and swap them in; on failure b is untouched. */
rdx_status swap_in(rdx_context *ctx, btree_impl *b, rdx_entries *ne) {
  btree_impl nb = *b;
  rdx_status st = load(ctx, ne, &nb);
  rdx_entries_free(ctx, ne);
  if (st != RDX_OK) return st;
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  *b = nb;
  return RDX_OK;
}

rdx_status btree_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_entries e = {}, ne = {};
  RDX_CHECK(btree_entries(ctx, idx, &e));
  rdx_status st = rdx_entries_merge_cuda(ctx, &e, in, &ne);
  rdx_entries_free(ctx, &e);
  RDX_CHECK(st);
  return swap_in(ctx, (btree_impl *)idx->impl, &ne);
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
rdx_status btree_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  rdx_entries e = {}, ne = {};
  RDX_CHECK(btree_entries(ctx, idx, &e));
  rdx_status st = rdx_entries_erase_cuda(ctx, &e, keys, idx->dtype, m, &ne, n_erased);
  rdx_entries_free(ctx, &e);
  RDX_CHECK(st);
  if (ne.n == 0 || *n_erased == 0) {
    rdx_entries_free(ctx, &ne);
    return RDX_OK;
  }
  return swap_in(ctx, (btree_impl *)idx->impl, &ne);
}

void btree_destroy(rdx_context *ctx, rdx_index *idx) {
  btree_impl *b = (btree_impl *)idx->impl;
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  delete b;
}

rdx_status btree_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                       uint64_t *rows) {
  switch (op) {
    case RDX_KEY_LOOKUP: return run<OP_LOOKUP>(ctx, idx, q, n, out, rows, "rdx_index_lookup: btree kernel");
    case RDX_KEY_LOOKUP_COUNT: return run<OP_COUNT>(ctx, idx, q, n, out, rows, "rdx_index_lookup_count: btree kernel");
    case RDX_KEY_LOOKUP_FILL: return run<OP_FILL>(ctx, idx, q, n, out, rows, "rdx_index_lookup_fill: btree kernel");
    case RDX_KEY_RANGE_COUNT: return run<OP_RCOUNT>(ctx, idx, q, n, out, rows, "rdx_index_range_count: btree kernel");
    default: return run<OP_RFILL>(ctx, idx, q, n, out, rows, "rdx_index_range_fill: btree kernel");
  }
}

}  // namespace

/* Range fills come out in key order; index.c sorts each query's rows (range_fill_sorted = 0). */
extern "C" const rdx_key_ops rdx_btree_cuda_ops = {
    RDX_KIND_BTREE, RDX_BACKEND_CUDA, btree_build, btree_destroy, btree_query, 1, 0, btree_insert, btree_erase, btree_entries,
};
