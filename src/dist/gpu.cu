/*
 * gpu.cu: the device half of the distributed layer: a sharded key index built (rdx_dist_gpu_build)
 * and queried (rdx_dist_gpu_query: point lookups, their counts, range counts) without leaving the
 * GPUs; the copies between GPUs a local group's device exchange makes (rdx_dist_peer_*); and the
 * device-side data of `raydex bench keys --gpus --device-input` (rdx_dist_bench_*).
 *
 * Both calls move items to the shards that own them with one partition in two passes over the
 * items (keys, or a range's bounds), each item's shards computed by route_hd.h as the host path
 * computes them:
 *   pass 1 (count_kernel) counts the pieces per shard (a point one piece, a range one piece per
 *     shard it meets), then a one-thread kernel turns the counts into each shard's start;
 *   pass 2 (partition_kernel) recomputes each item's shards and writes each piece at its shard's
 *     region of the send buffer, with a value beside it (the item's position for queries, its row
 *     for a build). A block ranks a tile's pieces in shared memory (one shared atomic per warp and
 *     shard: the lanes of a shard found by a ballot per shard, or __match_any_sync past 8 shards)
 *     and takes their places with one global atomicAdd per shard per tile; pieces of one shard
 *     keep no order, which nothing needs: a query's answers come back to the positions carried
 *     with them, and a shard's pairs are sorted by its own build.
 * Then a device all-to-all to the shards, the shard's own call on its GPU, and (queries) the
 * answers back the same way and scattered into the caller's order. Only counts (a few words a
 * rank) pass through the host. Every phase ends in an agreement (rdx_comm_agree), as in keys.c, so
 * a failure on one rank fails the call on all with one sentence; a query writes its output only
 * after the last agreement, a build hands its shard over only after it.
 * Tuned for 10^7..10^9 items a rank over 2..8 GPUs of one machine, where the two passes (each a
 * read of the items, the second a write of them) and the exchanges' NVLink time are the cost.
 */
#include <cub/cub.cuh>

#include "cuda_util.cuh"
#include "dist/dist.h"
#include "dist/route_hd.h"

#include <string.h>

namespace {

constexpr int THREADS = 256;         /* a block: 8 warps */
constexpr int ITEMS = 4;             /* items a thread holds per tile */
constexpr int TILE = THREADS * ITEMS;
constexpr unsigned MAX_BLOCKS = 4096; /* grid-stride beyond: a block's counters stay small */
constexpr unsigned FULL = 0xFFFFFFFFu;
/* Keys a rank samples for the splitters, per rank on average (in proportion to its keys): sorted,
 * they are regular quantiles to split.c's stratified draw, so a shard's share errs by about
 * 1 / sqrt(8192 ranks) of the whole rather than split.c's 1 / sqrt(256 ranks) over raw keys. */
constexpr int64_t SAMPLE_PER_RANK = 8192;

/* The shards an item goes to, first .. first + span - 1 (span 0: none). A point: its key's shard.
 * A range [lo, hi]: shard_of(lo) .. shard_of(hi), none when lo > hi (route_hd.h: monotone). */
template <typename K, int COLS>
__device__ void span_of(const K *key, int size, int hashed, const uint64_t *sp, int &first, int &span) {
  if (COLS == 1) {
    first = rdx_dist_shard_of(hashed, size, sp, (uint64_t)key[0]);
    span = 1;
  } else if ((uint64_t)key[0] > (uint64_t)key[1]) {
    first = 0;
    span = 0;
  } else {
    first = rdx_dist_shard_of(hashed, size, sp, (uint64_t)key[0]);
    span = rdx_dist_shard_of(hashed, size, sp, (uint64_t)key[1]) - first + 1;
  }
}

/* The lanes of the warp whose p equals this lane's (p >= 0; a lane with p < 0 may get any mask).
 * A few shards take one ballot each, cheaper than __match_any_sync, which serves many. */
constexpr int FEW_SHARDS = 8;
__device__ unsigned warp_peers(int p, int size) {
  if (size > FEW_SHARDS) return __match_any_sync(FULL, p);
  unsigned peers = 0;
  for (int q = 0; q < size; q++) {
    const unsigned b = __ballot_sync(FULL, p == q);
    if (p == q) peers = b;
  }
  return peers;
}

/* Lanes adding to the same counter share one shared-memory atomic: each lane with p >= 0 adds 1
 * to hist[p] and gets its rank among that counter's adds (a lane with p < 0 adds nothing, and
 * what it gets means nothing). Every lane of the warp calls it, with the same size. */
template <typename C>
__device__ C warp_add(C *hist, int p, int size) {
  const unsigned peers = warp_peers(p, size);
  const int lane = threadIdx.x & 31, leader = peers ? __ffs(peers) - 1 : lane;
  C base = 0;
  if (p >= 0 && lane == leader) base = atomicAdd(&hist[p], (C)__popc(peers));
  base = __shfl_sync(FULL, base, leader);
  return base + (C)__popc(peers & ((1u << lane) - 1u));
}

__device__ int warp_max(int v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(FULL, v, o));
  return v;
}

/* The splitters in shared memory (the binary search reads them for every item). */
__device__ void load_splitters(uint64_t *sp, const uint64_t *splitters, int size, int hashed) {
  for (int t = threadIdx.x; !hashed && t + 1 < size; t += blockDim.x) sp[t] = splitters[t];
}

/* Pass 1: the pieces per shard into counts (zeroed by the caller). */
template <typename K, int COLS>
__global__ void __launch_bounds__(THREADS) count_kernel(const K *in, int64_t n, int size, int hashed,
                                                        const uint64_t *splitters, unsigned long long *counts) {
  __shared__ unsigned long long hist[RDX_DIST_GPU_MAX_RANKS];
  __shared__ uint64_t sp[RDX_DIST_GPU_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) hist[t] = 0;
  load_splitters(sp, splitters, size, hashed);
  __syncthreads();
  for (int64_t tile = (int64_t)blockIdx.x * TILE; tile < n; tile += (int64_t)gridDim.x * TILE)
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      const int64_t i = tile + it * THREADS + threadIdx.x;
      int first = 0, span = 0;
      if (i < n) span_of<K, COLS>(in + i * COLS, size, hashed, sp, first, span);
      const int kmax = COLS == 1 ? 1 : warp_max(span);
      for (int k = 0; k < kmax; k++) (void)warp_add<unsigned long long>(hist, k < span ? first + k : -1, size);
    }
  __syncthreads();
  for (int t = threadIdx.x; t < size; t += blockDim.x)
    if (hist[t]) atomicAdd(&counts[t], hist[t]);
}

/* cursor[p] = counts[0] + ... + counts[p - 1]: each shard's first place in the send buffer. */
__global__ void starts_kernel(const unsigned long long *counts, int size, unsigned long long *cursor) {
  unsigned long long at = 0;
  for (int p = 0; p < size; p++) {
    cursor[p] = at;
    at += counts[p];
  }
}

/* What travels beside a piece: the item's position (queries: V = uint32_t, first = 0), or the
 * build's row, implied (first + position) or given. */
template <typename V>
struct implied_value {
  uint64_t first;
  __device__ V operator()(int64_t i) const { return (V)(first + (uint64_t)i); }
};
template <typename R>
struct given_value {
  const R *rows;
  __device__ R operator()(int64_t i) const { return rows[i]; }
};

/* Pass 2: each piece (COLS keys) into out at its shard's region, value_of(item) into vals at the
 * same place; cursor (pass 1's starts) advances as places are taken. A tile takes its pieces in
 * rounds k = 0, 1, ...: round k places each item's k-th shard (points: one round). */
template <typename K, int COLS, typename V, typename F>
__global__ void __launch_bounds__(THREADS) partition_kernel(const K *in, int64_t n, int size, int hashed,
                                                            const uint64_t *splitters, unsigned long long *cursor,
                                                            K *out, V *vals, F value_of) {
  __shared__ unsigned hist[RDX_DIST_GPU_MAX_RANKS];
  __shared__ unsigned long long base[RDX_DIST_GPU_MAX_RANKS];
  __shared__ uint64_t sp[RDX_DIST_GPU_MAX_RANKS];
  __shared__ int rounds;
  for (int t = threadIdx.x; t < size; t += blockDim.x) hist[t] = 0;
  load_splitters(sp, splitters, size, hashed);
  __syncthreads();
  for (int64_t tile = (int64_t)blockIdx.x * TILE; tile < n; tile += (int64_t)gridDim.x * TILE) {
    K key[ITEMS][COLS];
    int first[ITEMS], span[ITEMS], most = 0;
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      const int64_t i = tile + it * THREADS + threadIdx.x;
      first[it] = 0, span[it] = 0;
      if (i < n) {
        for (int c = 0; c < COLS; c++) key[it][c] = in[i * COLS + c];
        span_of<K, COLS>(key[it], size, hashed, sp, first[it], span[it]);
      }
      most = max(most, span[it]);
    }
    int kmax = 1;
    if (COLS > 1) {
      if (threadIdx.x == 0) rounds = 0;
      __syncthreads();
      most = warp_max(most);
      if ((threadIdx.x & 31) == 0) atomicMax(&rounds, most);
      __syncthreads();
      kmax = rounds;
      __syncthreads(); /* everyone has read it before the next tile resets it */
    }
    for (int k = 0; k < kmax; k++) {
      int p[ITEMS];
      unsigned rank[ITEMS];
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        p[it] = k < span[it] ? first[it] + k : -1;
        rank[it] = warp_add<unsigned>(hist, p[it], size);
      }
      __syncthreads();
      for (int t = threadIdx.x; t < size; t += blockDim.x) {
        base[t] = hist[t] ? atomicAdd(&cursor[t], (unsigned long long)hist[t]) : 0;
        hist[t] = 0;
      }
      __syncthreads();
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        if (p[it] < 0) continue;
        const int64_t i = tile + it * THREADS + threadIdx.x;
        const unsigned long long at = base[p[it]] + rank[it];
        for (int c = 0; c < COLS; c++) out[at * COLS + c] = key[it][c];
        vals[at] = value_of(i);
      }
    }
  }
}

/* The answers back into the caller's order: out[order[j]] = back[j], or += for range counts
 * (a range's pieces from several shards; out zeroed first). */
template <int ADD>
__global__ void scatter_kernel(const uint64_t *back, const uint32_t *order, int64_t n, uint64_t *out) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x) {
    if (ADD) atomicAdd((unsigned long long *)&out[order[j]], (unsigned long long)back[j]);
    else out[order[j]] = back[j];
  }
}

/* s keys of keys[0 .. n) into out as u64, one at a pseudo-random place in each of s equal
 * slices (split.c's stratified draw, seeded by the rank). */
template <typename K>
__global__ void sample_kernel(const K *keys, int64_t n, int64_t s, uint64_t seed, uint64_t *out) {
  const int64_t stride = n / s; /* >= 1: s <= n */
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < s; j += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t z = rdx_hash_mix64(seed + (uint64_t)j * 0x9E3779B97F4A7C15ull);
    out[j] = (uint64_t)keys[j * stride + (int64_t)(z % (uint64_t)stride)];
  }
}

unsigned blocks_for(int64_t n) {
  int64_t b = (n + TILE - 1) / TILE;
  return b < 1 ? 1u : b > (int64_t)MAX_BLOCKS ? MAX_BLOCKS : (unsigned)b;
}

/* Pass 1 on ctx's stream: d_counts[0 .. size) the pieces per shard, d_counts[size .. 2 size) the
 * shards' starts (pass 2's cursors). */
template <typename K, int COLS>
rdx_status launch_count(rdx_context *ctx, const char *fn, const K *in, int64_t n, int size, int hashed,
                        const uint64_t *d_split, unsigned long long *d_counts) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_cuda_ok(ctx, cudaMemsetAsync(d_counts, 0, (size_t)size * 8, s), fn));
  if (n > 0) count_kernel<K, COLS><<<blocks_for(n), THREADS, 0, s>>>(in, n, size, hashed, d_split, d_counts);
  starts_kernel<<<1, 1, 0, s>>>(d_counts, size, d_counts + size);
  return rdx_cuda_ok(ctx, cudaGetLastError(), fn);
}

/* Pass 2 on ctx's stream, after launch_count. */
template <typename K, int COLS, typename V, typename F>
rdx_status launch_partition(rdx_context *ctx, const char *fn, const K *in, int64_t n, int size, int hashed,
                            const uint64_t *d_split, unsigned long long *d_counts, K *out, V *vals, F value_of) {
  if (n > 0)
    partition_kernel<K, COLS, V, F><<<blocks_for(n), THREADS, 0, rdx_stream(ctx)>>>(
        in, n, size, hashed, d_split, d_counts + size, out, vals, value_of);
  return rdx_cuda_ok(ctx, cudaGetLastError(), fn);
}

/* The pieces per shard to the host (h_counts, host memory), waiting for the stream. */
rdx_status fetch_counts(rdx_context *ctx, const char *fn, const unsigned long long *d_counts, int size,
                        unsigned long long *h_counts) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_cuda_ok(ctx, cudaMemcpyAsync(h_counts, d_counts, (size_t)size * 8, cudaMemcpyDeviceToHost, s), fn));
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
}

/* A query batch's pieces grouped by shard: pass 1 and 2 over in (n items of COLS keys, device);
 * send_q and order (the pieces' query positions) allocated here, for *n_pieces pieces, counted
 * per shard in h_counts. Points know their number of pieces (n) before pass 1 ends, so both
 * passes go before one wait; ranges wait for pass 1 to size the buffers. */
template <typename K, int COLS>
rdx_status group_queries(rdx_context *ctx, const char *fn, const K *in, int64_t n, int size, int hashed,
                         const uint64_t *d_split, unsigned long long *d_counts, unsigned long long *h_counts,
                         void **send_q, void **order, int64_t *n_pieces) {
  RDX_CHECK((launch_count<K, COLS>(ctx, fn, in, n, size, hashed, d_split, d_counts)));
  *n_pieces = n;
  if (COLS > 1) {
    RDX_CHECK(fetch_counts(ctx, fn, d_counts, size, h_counts));
    *n_pieces = 0;
    for (int p = 0; p < size; p++) *n_pieces += (int64_t)h_counts[p];
  }
  RDX_CHECK(rdx_dist_dev_take(ctx, fn, send_q, *n_pieces, sizeof(K) * COLS));
  RDX_CHECK(rdx_dist_dev_take(ctx, fn, order, *n_pieces, 4));
  RDX_CHECK((launch_partition<K, COLS, uint32_t, implied_value<uint32_t>>(ctx, fn, in, n, size, hashed, d_split, d_counts,
                                                                         (K *)*send_q, (uint32_t *)*order,
                                                                         implied_value<uint32_t>{0})));
  return fetch_counts(ctx, fn, d_counts, size, h_counts);
}

rdx_status scatter(rdx_context *ctx, const char *fn, const uint64_t *back, const uint32_t *order, int64_t n_pieces,
                   int64_t n, int add, uint64_t *out) {
  cudaStream_t s = rdx_stream(ctx);
  if (add && n > 0) RDX_CHECK(rdx_cuda_ok(ctx, cudaMemsetAsync(out, 0, (size_t)n * 8, s), fn));
  if (n_pieces > 0) {
    unsigned blocks = rdx_grid(n_pieces, THREADS);
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    if (add) scatter_kernel<1><<<blocks, THREADS, 0, s>>>(back, order, n_pieces, out);
    else scatter_kernel<0><<<blocks, THREADS, 0, s>>>(back, order, n_pieces, out);
    RDX_CHECK(rdx_cuda_ok(ctx, cudaGetLastError(), fn));
  }
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
}

}  // namespace

extern "C" rdx_status rdx_dist_gpu_query(rdx_comm *comm, const char *fn, const rdx_index *shard, int hashed,
                                         const uint64_t *splitters, int what, rdx_array in, rdx_array out) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  const int64_t n = in.count;
  const int cols = what == RDX_DIST_GPU_RANGE_COUNT ? 2 : 1;
  const size_t es = rdx_dtype_size(in.dtype), item = es * (size_t)cols;
  void *q = NULL, *order = NULL, *send_q = NULL, *recv_q = NULL, *answers = NULL, *back = NULL, *answer = NULL,
       *d_split = NULL, *d_counts = NULL;
  int64_t *counts = NULL; /* send, receive: size each (host) */
  unsigned long long *h_counts = NULL;
  int64_t n_pieces = 0, m = 0;
  ctx->dist_exchange_ms = 0;

  /* 1. the batch on this GPU, its pieces grouped by shard */
  rdx_status st = rdx_dist_take(ctx, fn, &counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &h_counts, size, 8);
  if (st == RDX_OK && in.where != RDX_DEVICE) {
    st = rdx_dist_dev_take(ctx, fn, &q, n, item);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, q, in.data, (size_t)n * item);
  }
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d_counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK && !hashed && size > 1) {
    st = rdx_dist_dev_take(ctx, fn, &d_split, size - 1, 8);
    if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_split, splitters, (size_t)(size - 1) * 8);
  }
  if (st == RDX_OK) {
    const void *qd = q != NULL ? q : in.data;
    unsigned long long *dc = (unsigned long long *)d_counts;
    const uint64_t *ds = (const uint64_t *)d_split;
    if (es == 4 && cols == 1)
      st = group_queries<uint32_t, 1>(ctx, fn, (const uint32_t *)qd, n, size, hashed, ds, dc, h_counts, &send_q, &order, &n_pieces);
    else if (cols == 1)
      st = group_queries<uint64_t, 1>(ctx, fn, (const uint64_t *)qd, n, size, hashed, ds, dc, h_counts, &send_q, &order, &n_pieces);
    else if (es == 4)
      st = group_queries<uint32_t, 2>(ctx, fn, (const uint32_t *)qd, n, size, hashed, ds, dc, h_counts, &send_q, &order, &n_pieces);
    else
      st = group_queries<uint64_t, 2>(ctx, fn, (const uint64_t *)qd, n, size, hashed, ds, dc, h_counts, &send_q, &order, &n_pieces);
  }
  rdx_mem_free(ctx, q), q = NULL;
  RDX_DIST_AGREE(st);

  /* 2. the pieces to their shards */
  {
    int64_t *send = counts, *recv = counts + size;
    for (int p = 0; p < size; p++) send[p] = (int64_t)h_counts[p];
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
    for (int p = 0; p < size; p++) m += recv[p];
    st = rdx_dist_dev_take(ctx, fn, &recv_q, m, item);
    if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &answers, m, 8);
    if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &back, n_pieces, 8);
    RDX_DIST_AGREE(st);
    double t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_q, send, recv_q, recv, item), st, done);
    ctx->dist_exchange_ms = rdx_now_ms() - t0;
    rdx_mem_free(ctx, send_q), send_q = NULL;

    /* 3. the shard answers what it got, on its own GPU */
    rdx_array rq = cols == 2 ? rdx_device_matrix(recv_q, m, 2, in.dtype) : rdx_device_array(recv_q, m, in.dtype);
    rdx_array ra = rdx_device_array(answers, m, RDX_U64);
    st = what == RDX_DIST_GPU_LOOKUP ? rdx_index_lookup(ctx, shard, rq, ra)
         : what == RDX_DIST_GPU_COUNT ? rdx_index_lookup_count(ctx, shard, rq, ra)
                                      : rdx_index_range_count(ctx, shard, rq, ra);
    rdx_mem_free(ctx, recv_q), recv_q = NULL;
    RDX_DIST_AGREE(st);

    /* 4. the answers back; for a host output, into the caller's order in a device buffer */
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, answers, recv, back, send, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    rdx_mem_free(ctx, answers), answers = NULL;
    if (out.where != RDX_DEVICE) {
      st = rdx_dist_dev_take(ctx, fn, &answer, n, 8);
      if (st == RDX_OK)
        st = scatter(ctx, fn, (const uint64_t *)back, (const uint32_t *)order, n_pieces, n, cols == 2, (uint64_t *)answer);
    }
    RDX_DIST_AGREE(st);
  }
  /* 5. every rank has its answers: only now is the output written. A device output takes the
   * scatter itself, so the answers are written once; a launch that fails here (which nothing
   * before foretold) fails this rank alone, with the output partly written. */
  if (out.where == RDX_DEVICE)
    st = scatter(ctx, fn, (const uint64_t *)back, (const uint32_t *)order, n_pieces, n, cols == 2, (uint64_t *)out.data);
  else if (n > 0)
    st = rdx_cuda_memcpy(ctx, out.data, answer, (size_t)n * 8);
done:
  rdx_mem_free(ctx, q);
  rdx_mem_free(ctx, order);
  rdx_mem_free(ctx, send_q);
  rdx_mem_free(ctx, recv_q);
  rdx_mem_free(ctx, answers);
  rdx_mem_free(ctx, back);
  rdx_mem_free(ctx, answer);
  rdx_mem_free(ctx, d_split);
  rdx_mem_free(ctx, d_counts);
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, h_counts);
  return st;
}

/* ---- the build ---- */

namespace {

/* Pass 1 and 2 over a build's keys: keys and their rows (given, or implied from `first`) grouped by
 * shard into send_k and send_r (rows of dtype rv), counted per shard in h_counts. */
template <typename K>
rdx_status group_pairs(rdx_context *ctx, const char *fn, const K *keys, rdx_array rows, const void *rows_dev,
                       uint64_t first, int64_t n, int size, int hashed, const uint64_t *d_split,
                       unsigned long long *d_counts, unsigned long long *h_counts, K *send_k, rdx_dtype rv,
                       void *send_r) {
  RDX_CHECK((launch_count<K, 1>(ctx, fn, keys, n, size, hashed, d_split, d_counts)));
  rdx_status st;
  if (rows.data != NULL && rows.dtype == RDX_U32)
    st = launch_partition<K, 1, uint32_t>(ctx, fn, keys, n, size, hashed, d_split, d_counts, send_k, (uint32_t *)send_r,
                                          given_value<uint32_t>{(const uint32_t *)rows_dev});
  else if (rows.data != NULL)
    st = launch_partition<K, 1, uint64_t>(ctx, fn, keys, n, size, hashed, d_split, d_counts, send_k, (uint64_t *)send_r,
                                          given_value<uint64_t>{(const uint64_t *)rows_dev});
  else if (rv == RDX_U32)
    st = launch_partition<K, 1, uint32_t>(ctx, fn, keys, n, size, hashed, d_split, d_counts, send_k, (uint32_t *)send_r,
                                          implied_value<uint32_t>{first});
  else
    st = launch_partition<K, 1, uint64_t>(ctx, fn, keys, n, size, hashed, d_split, d_counts, send_k, (uint64_t *)send_r,
                                          implied_value<uint64_t>{first});
  RDX_CHECK(st);
  return fetch_counts(ctx, fn, d_counts, size, h_counts);
}

/* This rank's sample: s keys drawn as split.c draws them, sorted (on the GPU), into host. */
rdx_status sample_keys(rdx_context *ctx, const char *fn, const void *keys, rdx_dtype dtype, int64_t n, int64_t s,
                       int rank, uint64_t *host) {
  if (s == 0) return RDX_OK;
  void *a = NULL, *b = NULL;
  cudaStream_t strm = rdx_stream(ctx);
  rdx_status st = rdx_dist_dev_take(ctx, fn, &a, s, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &b, s, 8);
  if (st == RDX_OK) {
    const uint64_t seed = 0x243F6A8885A308D3ull ^ (uint64_t)rank;
    unsigned blocks = rdx_grid(s, THREADS);
    if (dtype == RDX_U32) sample_kernel<uint32_t><<<blocks, THREADS, 0, strm>>>((const uint32_t *)keys, n, s, seed, (uint64_t *)a);
    else sample_kernel<uint64_t><<<blocks, THREADS, 0, strm>>>((const uint64_t *)keys, n, s, seed, (uint64_t *)a);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st == RDX_OK)
    st = rdx_cub_run(ctx, fn, [&](void *t, size_t &bytes) {
      return cub::DeviceRadixSort::SortKeys(t, bytes, (const uint64_t *)a, (uint64_t *)b, (int)s, 0, 64, strm);
    });
  if (st == RDX_OK)
    st = rdx_cuda_ok(ctx, cudaMemcpyAsync(host, b, (size_t)s * 8, cudaMemcpyDeviceToHost, strm), fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(strm), fn);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  return st;
}

}  // namespace

extern "C" rdx_status rdx_dist_gpu_build(rdx_comm *comm, const char *fn, rdx_array keys, rdx_array rows,
                                         const int64_t *rank_counts, int hashed, uint64_t *splitters,
                                         const rdx_build_options *opts, rdx_index **out) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size, rank = comm->rank;
  const int64_t n = keys.count;
  const size_t es = rdx_dtype_size(keys.dtype);
  int64_t n_total = 0, offset = 0, m = 0, s_me = 0;
  for (int r = 0; r < size; r++) {
    if (r < rank) offset += rank_counts[r];
    n_total += rank_counts[r];
  }
  /* the rows that travel: the given ones as they are; implied ones as u32 while they fit */
  const rdx_dtype rv = rows.data != NULL ? rows.dtype : (uint64_t)n_total <= ((uint64_t)1 << 32) ? RDX_U32 : RDX_U64;
  const size_t rs = rdx_dtype_size(rv);
  const int split = !hashed && size > 1;
  void *dk = NULL, *dr = NULL, *d_split = NULL, *d_counts = NULL, *send_k = NULL, *send_r = NULL, *recv_k = NULL,
       *recv_r = NULL;
  int64_t *counts = NULL, *samples = NULL; /* counts: send, receive (size each); samples: each rank's */
  uint64_t *sample = NULL;
  unsigned long long *h_counts = NULL;
  rdx_index *shard = NULL;
  *out = NULL;
  ctx->dist_exchange_ms = 0;

  /* 1. this rank's pairs on its GPU, and (range kinds) its sorted sample of keys */
  rdx_status st = rdx_dist_take(ctx, fn, &counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &h_counts, size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &samples, size, 8);
  if (st == RDX_OK && keys.where != RDX_DEVICE) {
    st = rdx_dist_dev_take(ctx, fn, &dk, n, es);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, dk, keys.data, (size_t)n * es);
  }
  if (st == RDX_OK && rows.data != NULL && rows.where != RDX_DEVICE) {
    st = rdx_dist_dev_take(ctx, fn, &dr, n, rs);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, dr, rows.data, (size_t)n * rs);
  }
  const void *kd = dk != NULL ? dk : keys.data, *rd = dr != NULL ? dr : rows.data;
  if (st == RDX_OK && split) {
    /* every rank's sample size alike, from the counts all hold: in proportion to its keys */
    for (int r = 0; r < size; r++) {
      int64_t s = 0;
      if (rank_counts[r] > 0) {
        s = 1 + (int64_t)((double)rank_counts[r] / (double)n_total * (double)(SAMPLE_PER_RANK * size));
        if (s > rank_counts[r]) s = rank_counts[r];
      }
      samples[r] = s;
    }
    s_me = samples[rank];
    st = rdx_dist_take(ctx, fn, &sample, s_me, 8);
    if (st == RDX_OK) st = sample_keys(ctx, fn, kd, keys.dtype, n, s_me, rank, sample);
  }
  RDX_DIST_AGREE(st);

  /* 2. splitters (range kinds on several ranks), agreed within */
  if (split) {
    RDX_CHECK_GOTO(rdx_dist_splitters(comm, fn, samples, sample, s_me, splitters), st, done);
    st = rdx_dist_dev_take(ctx, fn, &d_split, size - 1, 8);
    if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_split, splitters, (size_t)(size - 1) * 8);
  }

  /* 3. the pairs grouped by shard; this rank's copies of host inputs go once read */
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &d_counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &send_k, n, es);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &send_r, n, rs);
  if (st == RDX_OK) {
    unsigned long long *dc = (unsigned long long *)d_counts;
    const uint64_t *ds = (const uint64_t *)d_split;
    if (keys.dtype == RDX_U32)
      st = group_pairs<uint32_t>(ctx, fn, (const uint32_t *)kd, rows, rd, (uint64_t)offset, n, size, hashed, ds, dc,
                                 h_counts, (uint32_t *)send_k, rv, send_r);
    else
      st = group_pairs<uint64_t>(ctx, fn, (const uint64_t *)kd, rows, rd, (uint64_t)offset, n, size, hashed, ds, dc,
                                 h_counts, (uint64_t *)send_k, rv, send_r);
  }
  rdx_mem_free(ctx, dk), dk = NULL;
  rdx_mem_free(ctx, dr), dr = NULL;
  RDX_DIST_AGREE(st);

  /* 4. the pairs to their shards */
  {
    int64_t *send = counts, *recv = counts + size;
    for (int p = 0; p < size; p++) send[p] = (int64_t)h_counts[p];
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
    for (int p = 0; p < size; p++) m += recv[p];
    st = rdx_dist_dev_take(ctx, fn, &recv_k, m, es);
    if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &recv_r, m, rs);
    RDX_DIST_AGREE(st);
    double t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_k, send, recv_k, recv, es), st, done);
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_r, send, recv_r, recv, rs), st, done);
    ctx->dist_exchange_ms = rdx_now_ms() - t0;
  }
  /* the shard's build is the peak: only the received pairs stay beside it */
  rdx_mem_free(ctx, send_k), send_k = NULL;
  rdx_mem_free(ctx, send_r), send_r = NULL;
  rdx_mem_free(ctx, d_split), d_split = NULL;
  rdx_mem_free(ctx, d_counts), d_counts = NULL;

  /* 5. this rank's shard, an ordinary index of its context, built from the GPU's arrays */
  st = rdx_index_build(ctx, rdx_device_array(recv_k, m, keys.dtype), rdx_device_array(recv_r, m, rv), opts, &shard);
  rdx_mem_free(ctx, recv_k), recv_k = NULL;
  rdx_mem_free(ctx, recv_r), recv_r = NULL;
  RDX_DIST_AGREE(st);
  *out = shard;
  shard = NULL;
done:
  rdx_index_destroy(shard);
  rdx_mem_free(ctx, dk);
  rdx_mem_free(ctx, dr);
  rdx_mem_free(ctx, d_split);
  rdx_mem_free(ctx, d_counts);
  rdx_mem_free(ctx, send_k);
  rdx_mem_free(ctx, send_r);
  rdx_mem_free(ctx, recv_k);
  rdx_mem_free(ctx, recv_r);
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, samples);
  rdx_mem_free(ctx, sample);
  rdx_mem_free(ctx, h_counts);
  return st;
}

extern "C" rdx_status rdx_dist_dev_take(rdx_context *ctx, const char *fn, void *ptr, int64_t n, size_t item) {
  *(void **)ptr = NULL;
  return rdx_mem_alloc(ctx, fn, (void **)ptr, (size_t)(n > 0 ? n : 1) * item, RDX_DEVICE);
}

/* ---- copies between the GPUs of a local group ---- */

extern "C" void rdx_dist_peers_enable(rdx_context *const *ctxs, int n, uint64_t *reach) {
  int before = -1;
  if (cudaGetDevice(&before) != cudaSuccess) before = -1;
  for (int i = 0; i < n; i++) {
    int a = ctxs[i]->device;
    reach[i] = a < 64 ? (uint64_t)1 << a : 0;
    for (int j = 0; j < n; j++) {
      int b = ctxs[j]->device, can = 0;
      if (a == b || cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) continue;
      /* a's copy engines and kernels may read and write b's memory, cudaMalloc'd or pooled */
      int ok = cudaSetDevice(a) == cudaSuccess;
      cudaError_t e = ok ? cudaDeviceEnablePeerAccess(b, 0) : cudaErrorInvalidDevice;
      ok = ok && (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled);
      cudaMemPool_t pool;
      if (cudaDeviceGetDefaultMemPool(&pool, b) == cudaSuccess) {
        cudaMemAccessDesc d;
        memset(&d, 0, sizeof d);
        d.location.type = cudaMemLocationTypeDevice;
        d.location.id = a;
        d.flags = cudaMemAccessFlagsProtReadWrite;
        ok = ok && cudaMemPoolSetAccess(pool, &d, 1) == cudaSuccess;
      } else {
        ok = 0;
      }
      if (ok && b < 64) reach[i] |= (uint64_t)1 << b;
    }
  }
  if (before >= 0) (void)cudaSetDevice(before);
  (void)cudaGetLastError(); /* best effort: without peer access the copies still work, staged */
}

/* One launch pulls up to RDX_DIST_PULL_MAX parts, a row of blocks (blockIdx.y) each. */
struct pull_part {
  char *dst;
  const char *src;
  size_t bytes;
};
struct pull_batch {
  pull_part part[RDX_DIST_PULL_MAX];
};

/* 16 bytes v to d, aligned to W, in stores of W. */
template <typename W>
__device__ void put16(char *d, uint4 v) {
  const W *w = (const W *)&v;
  for (int j = 0; j < (int)(16 / sizeof(W)); j++) ((W *)d)[j] = w[j];
}

/* Copy bytes from src to dst: loads of 16 bytes aligned on src (the width that keeps the link
 * busy, four in flight per thread), stores of W, the widest word to which dst is then aligned
 * (dst and src agree modulo sizeof(W)); the bytes before src's first aligned word and after its
 * last one singly. */
template <typename W>
__device__ void pull_words(char *dst, const char *src, size_t bytes, size_t t, size_t stride) {
  size_t head = (16 - ((uintptr_t)src & 15)) & 15;
  if (head > bytes) head = bytes;
  const size_t n = (bytes - head) / 16, tail = head + n * 16; /* head and bytes - tail are < 16 <= stride */
  if (t < head) dst[t] = src[t];
  if (tail + t < bytes) dst[tail + t] = src[tail + t];
  const uint4 *s = (const uint4 *)(src + head);
  char *d = dst + head;
  size_t i = t;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];
    put16<W>(d + 16 * i, a), put16<W>(d + 16 * (i + stride), b);
    put16<W>(d + 16 * (i + 2 * stride), c), put16<W>(d + 16 * (i + 3 * stride), e);
  }
  for (; i < n; i += stride) put16<W>(d + 16 * i, s[i]);
}

__global__ void pull_kernel(pull_batch b) {
  const pull_part p = b.part[blockIdx.y];
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  const uintptr_t x = (uintptr_t)p.src ^ (uintptr_t)p.dst;
  if ((x & 15) == 0) pull_words<uint4>(p.dst, p.src, p.bytes, t, stride);
  else if ((x & 7) == 0) pull_words<uint2>(p.dst, p.src, p.bytes, t, stride);
  else if ((x & 3) == 0) pull_words<unsigned>(p.dst, p.src, p.bytes, t, stride);
  else pull_words<unsigned char>(p.dst, p.src, p.bytes, t, stride);
}

extern "C" rdx_status rdx_dist_peer_pull(rdx_context *ctx, const rdx_dist_part *parts, int n) {
  cudaStream_t s = rdx_stream(ctx);
  pull_batch b;
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (parts[i].bytes == 0) continue;
    if (parts[i].direct) {
      b.part[m++] = pull_part{(char *)parts[i].dst, (const char *)parts[i].src, parts[i].bytes};
      continue;
    }
    cudaError_t e = parts[i].src_device == ctx->device
                        ? cudaMemcpyAsync(parts[i].dst, parts[i].src, parts[i].bytes, cudaMemcpyDeviceToDevice, s)
                        : cudaMemcpyPeerAsync(parts[i].dst, ctx->device, parts[i].src, parts[i].src_device,
                                              parts[i].bytes, s);
    RDX_CHECK(rdx_cuda_ok(ctx, e, "device all-to-all: cudaMemcpyPeerAsync"));
  }
  if (m == 0) return RDX_OK;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device) != cudaSuccess || sms < 1) sms = 1;
  /* every SM busy twice over, split among the parts: the loads in flight, not the SMs' arithmetic,
   * set the pace over NVLink */
  const unsigned per = (unsigned)(2 * sms + m - 1) / (unsigned)m;
  pull_kernel<<<dim3(per > 0 ? per : 1, (unsigned)m), 512, 0, s>>>(b);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "device all-to-all: the pull kernel");
}

extern "C" rdx_status rdx_dist_peer_wait(rdx_context *ctx) {
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(rdx_stream(ctx)), "device all-to-all: cudaStreamSynchronize");
}

extern "C" double rdx_dist_exchange_ms(const rdx_context *ctx) { return ctx->dist_exchange_ms; }
extern "C" double rdx_dist_shard_ms(const rdx_context *ctx) { return ctx->dist_shard_ms; }

extern "C" rdx_status rdx_dist_probe_exchange(rdx_comm *comm, int64_t bytes, double *ms) {
  static const char fn[] = "rdx_dist_probe_exchange";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  int ok = comm->ops->alltoallv_device != NULL && rdx_is_gpu(ctx) && bytes >= 0;
  RDX_CHECK(comm->ops->allreduce_min_int(comm, &ok));
  if (!ok) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: needs GPU contexts on every rank and a device exchange", fn);
  int64_t part = bytes / size;
  void *send = NULL, *recv = NULL;
  int64_t *counts = NULL;
  rdx_status st = rdx_dist_take(ctx, fn, &counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &send, part * size, 1);
  if (st == RDX_OK) st = rdx_dist_dev_take(ctx, fn, &recv, part * size, 1);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(send, comm->rank + 1, (size_t)(part * size), rdx_stream(ctx)), fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(rdx_stream(ctx)), fn);
  for (int p = 0; counts != NULL && p < 2 * size; p++) counts[p] = part;
  st = rdx_comm_agree(comm, fn, st);
  if (st == RDX_OK) {
    double t0 = rdx_now_ms();
    st = comm->ops->alltoallv_device(comm, send, counts, recv, counts + size, 1);
    *ms = rdx_now_ms() - t0;
  }
  rdx_mem_free(ctx, send);
  rdx_mem_free(ctx, recv);
  rdx_mem_free(ctx, counts);
  return st;
}

/* ---- the device-side data of `raydex bench keys --gpus --device-input` ----
 *
 * Key number g (0 <= g < n_total) of the set drawn from seed is a bijection of g (Murmur3's fmix64,
 * or fmix32 for u32 keys, of g xor the seed), so the keys are distinct without any rank seeing
 * another's; its row (given) is g + row_base. Lookup j picks a key number uniformly from its own
 * hash, so a rank draws, and checks, its lookups from j alone. */

namespace {

__device__ uint64_t bench_key(int wide, uint64_t seed, uint64_t g) {
  return wide ? rdx_hash_mix64(g ^ seed) : (uint64_t)rdx_hash_mix32((uint32_t)g ^ (uint32_t)seed);
}
__device__ uint64_t bench_pick(uint64_t seed, uint64_t j, uint64_t n_total) {
  return rdx_hash_mix64((j + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xD1B54A32D192ED03ull) % n_total;
}

template <typename K>
__global__ void bench_keys_kernel(K *keys, uint64_t *rows, int64_t n, uint64_t first, uint64_t seed, uint64_t row_base) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    keys[i] = (K)bench_key(sizeof(K) == 8, seed, first + (uint64_t)i);
    if (rows) rows[i] = first + (uint64_t)i + row_base;
  }
}
template <typename K>
__global__ void bench_lookups_kernel(K *q, int64_t m, uint64_t first, uint64_t seed, uint64_t n_total) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x)
    q[j] = (K)bench_key(sizeof(K) == 8, seed, bench_pick(seed, first + (uint64_t)j, n_total));
}
__global__ void bench_check_kernel(const uint64_t *answers, int64_t m, uint64_t first, uint64_t seed, uint64_t n_total,
                                   uint64_t row_base, unsigned long long *wrong) {
  unsigned long long mine = 0;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x)
    mine += answers[j] != bench_pick(seed, first + (uint64_t)j, n_total) + row_base;
  if (mine) atomicAdd(wrong, mine);
}

unsigned bench_grid(int64_t n) {
  unsigned b = rdx_grid(n, THREADS);
  return b > MAX_BLOCKS ? MAX_BLOCKS : b;
}

rdx_status bench_ctx(rdx_context *ctx, const char *fn) {
  RDX_CHECK(rdx_check_context(ctx));
  if (!rdx_is_gpu(ctx)) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: needs a GPU context", fn);
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_dist_bench_keys(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, uint64_t first, int64_t n,
                                          void *keys, uint64_t row_base, uint64_t *rows) {
  static const char fn[] = "rdx_dist_bench_keys";
  RDX_CHECK(bench_ctx(ctx, fn));
  cudaStream_t s = rdx_stream(ctx);
  if (n > 0 && dtype == RDX_U32)
    bench_keys_kernel<uint32_t><<<bench_grid(n), THREADS, 0, s>>>((uint32_t *)keys, rows, n, first, seed, row_base);
  else if (n > 0)
    bench_keys_kernel<uint64_t><<<bench_grid(n), THREADS, 0, s>>>((uint64_t *)keys, rows, n, first, seed, row_base);
  RDX_CHECK(rdx_cuda_ok(ctx, cudaGetLastError(), fn));
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
}

extern "C" rdx_status rdx_dist_bench_lookups(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, int64_t n_total,
                                             uint64_t first, int64_t m, void *queries) {
  static const char fn[] = "rdx_dist_bench_lookups";
  RDX_CHECK(bench_ctx(ctx, fn));
  if (n_total < 1) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: lookups need keys (n_total %lld)", fn, (long long)n_total);
  cudaStream_t s = rdx_stream(ctx);
  if (m > 0 && dtype == RDX_U32)
    bench_lookups_kernel<uint32_t><<<bench_grid(m), THREADS, 0, s>>>((uint32_t *)queries, m, first, seed, (uint64_t)n_total);
  else if (m > 0)
    bench_lookups_kernel<uint64_t><<<bench_grid(m), THREADS, 0, s>>>((uint64_t *)queries, m, first, seed, (uint64_t)n_total);
  RDX_CHECK(rdx_cuda_ok(ctx, cudaGetLastError(), fn));
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
}

extern "C" rdx_status rdx_dist_bench_check(rdx_context *ctx, uint64_t seed, int64_t n_total, uint64_t first, int64_t m,
                                           const uint64_t *answers, uint64_t row_base, int64_t *wrong) {
  static const char fn[] = "rdx_dist_bench_check";
  RDX_CHECK(bench_ctx(ctx, fn));
  if (n_total < 1) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: lookups need keys (n_total %lld)", fn, (long long)n_total);
  void *d = NULL;
  unsigned long long h = 0;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_dist_dev_take(ctx, fn, &d, 1, 8));
  rdx_status st = rdx_cuda_ok(ctx, cudaMemsetAsync(d, 0, 8, s), fn);
  if (st == RDX_OK && m > 0) {
    bench_check_kernel<<<bench_grid(m), THREADS, 0, s>>>(answers, m, first, seed, (uint64_t)n_total, row_base,
                                                         (unsigned long long *)d);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(&h, d, 8, cudaMemcpyDeviceToHost, s), fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  rdx_mem_free(ctx, d);
  if (st == RDX_OK) *wrong = (int64_t)h;
  return st;
}
