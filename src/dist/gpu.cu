/*
 * gpu.cu: the device half of the distributed layer: point lookups and counts of a sharded key
 * index answered without leaving the GPUs (rdx_dist_gpu_query), and the copies between GPUs a
 * local group's device exchange makes (rdx_dist_peer_*).
 *
 * A query batch on rank r: each key's shard (route_hd.h, as the host path routes it), a stable
 * sort of the batch's positions by shard (CUB's radix sort over the few bits of a shard number),
 * the keys gathered in that order, an all-to-all of device memory to their shards, the shard's
 * own lookup on its GPU, the answers back the same way, and a scatter into the caller's order.
 * Only the per-shard counts (a few words) pass through the host. Every phase ends in an agreement
 * (rdx_comm_agree), as in keys.c, so a failure on one rank fails the call on all with one
 * sentence and nothing written.
 */
#include <cub/cub.cuh>

#include "cuda_util.cuh"
#include "dist/dist.h"
#include "dist/route_hd.h"

#include <string.h>

/* Each key's shard into sid, its position into pos, and the per-shard totals into counts. */
template <typename K>
__global__ void route_kernel(const K *q, int64_t n, int size, int hashed, const uint64_t *splitters, uint8_t *sid,
                             uint32_t *pos, unsigned long long *counts) {
  __shared__ unsigned int hist[RDX_DIST_GPU_MAX_RANKS];
  for (int t = threadIdx.x; t < size; t += blockDim.x) hist[t] = 0;
  __syncthreads();
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int p = rdx_dist_shard_of(hashed, size, splitters, (uint64_t)q[i]);
    sid[i] = (uint8_t)p;
    pos[i] = (uint32_t)i;
    atomicAdd(&hist[p], 1u);
  }
  __syncthreads();
  for (int t = threadIdx.x; t < size; t += blockDim.x)
    if (hist[t]) atomicAdd(&counts[t], (unsigned long long)hist[t]);
}

template <typename K>
__global__ void gather_kernel(const K *q, const uint32_t *order, int64_t n, K *out) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
    out[j] = q[order[j]];
}

__global__ void scatter_kernel(const uint64_t *back, const uint32_t *order, int64_t n, uint64_t *answer) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
    answer[order[j]] = back[j];
}

#define AGREE(st)                              \
  do {                                         \
    (st) = rdx_comm_agree(comm, fn, (st));     \
    if ((st) != RDX_OK) goto done;             \
  } while (0)

/* Device scratch through the account, or a sentence naming fn. */
static rdx_status dev_take(rdx_context *ctx, const char *fn, void **p, int64_t n, size_t item) {
  *p = NULL;
  return rdx_mem_alloc(ctx, fn, p, (size_t)(n > 0 ? n : 1) * item, RDX_DEVICE);
}

extern "C" rdx_status rdx_dist_gpu_query(rdx_comm *comm, const char *fn, const rdx_index *shard, int hashed,
                                         const uint64_t *splitters, int count_only, rdx_array in, rdx_array out) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  cudaStream_t s = rdx_stream(ctx);
  const int64_t n = in.count;
  const size_t es = rdx_dtype_size(in.dtype);
  const int threads = 256;
  void *q = NULL, *sid = NULL, *sid2 = NULL, *pos = NULL, *order = NULL, *send_q = NULL, *recv_q = NULL,
       *answers = NULL, *back = NULL, *answer = NULL, *d_split = NULL, *d_counts = NULL;
  int64_t *counts = NULL; /* send, receive: size each (host) */
  unsigned long long *h_counts = NULL;
  int64_t m = 0;
  int bits = 1;
  while ((1 << bits) < size) bits++;
  ctx->dist_exchange_ms = 0;

  /* 1. the batch on this GPU, each key's shard, the positions sorted by shard */
  rdx_status st = rdx_dist_take(ctx, fn, &counts, 2 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &h_counts, size, 8);
  if (st == RDX_OK && in.where != RDX_DEVICE) {
    st = dev_take(ctx, fn, &q, n, es);
    if (st == RDX_OK && n > 0) st = rdx_cuda_memcpy(ctx, q, in.data, (size_t)n * es);
  }
  if (st == RDX_OK) st = dev_take(ctx, fn, &sid, n, 1);
  if (st == RDX_OK) st = dev_take(ctx, fn, &sid2, n, 1);
  if (st == RDX_OK) st = dev_take(ctx, fn, &pos, n, 4);
  if (st == RDX_OK) st = dev_take(ctx, fn, &order, n, 4);
  if (st == RDX_OK) st = dev_take(ctx, fn, &send_q, n, es);
  if (st == RDX_OK) st = dev_take(ctx, fn, &d_counts, size, 8);
  if (st == RDX_OK && !hashed && size > 1) {
    st = dev_take(ctx, fn, &d_split, size - 1, 8);
    if (st == RDX_OK) st = rdx_cuda_memcpy(ctx, d_split, splitters, (size_t)(size - 1) * 8);
  }
  if (st == RDX_OK) {
    const void *qd = q != NULL ? q : in.data;
    st = rdx_cuda_ok(ctx, cudaMemsetAsync(d_counts, 0, (size_t)size * 8, s), fn);
    if (st == RDX_OK && n > 0) {
      unsigned blocks = rdx_grid(n, threads);
      if (blocks > 4096) blocks = 4096;
      if (es == 4)
        route_kernel<uint32_t><<<blocks, threads, 0, s>>>((const uint32_t *)qd, n, size, hashed, (const uint64_t *)d_split,
                                                          (uint8_t *)sid, (uint32_t *)pos, (unsigned long long *)d_counts);
      else
        route_kernel<uint64_t><<<blocks, threads, 0, s>>>((const uint64_t *)qd, n, size, hashed, (const uint64_t *)d_split,
                                                          (uint8_t *)sid, (uint32_t *)pos, (unsigned long long *)d_counts);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      if (st == RDX_OK)
        st = rdx_cub_run(ctx, fn, [&](void *t, size_t &bytes) {
          return cub::DeviceRadixSort::SortPairs(t, bytes, (const uint8_t *)sid, (uint8_t *)sid2, (const uint32_t *)pos,
                                                 (uint32_t *)order, n, 0, bits, s);
        });
      if (st == RDX_OK) {
        if (es == 4)
          gather_kernel<uint32_t><<<blocks, threads, 0, s>>>((const uint32_t *)qd, (const uint32_t *)order, n, (uint32_t *)send_q);
        else
          gather_kernel<uint64_t><<<blocks, threads, 0, s>>>((const uint64_t *)qd, (const uint32_t *)order, n, (uint64_t *)send_q);
        st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      }
    }
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(h_counts, d_counts, (size_t)size * 8, cudaMemcpyDeviceToHost, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  }
  rdx_mem_free(ctx, sid), sid = NULL;
  rdx_mem_free(ctx, sid2), sid2 = NULL;
  rdx_mem_free(ctx, pos), pos = NULL;
  rdx_mem_free(ctx, q), q = NULL;
  AGREE(st);

  /* 2. the keys to their shards */
  {
    int64_t *send = counts, *recv = counts + size;
    for (int p = 0; p < size; p++) send[p] = (int64_t)h_counts[p];
    RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
    for (int p = 0; p < size; p++) m += recv[p];
    st = rdx_comm_check_counts(comm, fn, send, recv);
    if (st == RDX_OK) st = dev_take(ctx, fn, &recv_q, m, es);
    if (st == RDX_OK) st = dev_take(ctx, fn, &answers, m, 8);
    if (st == RDX_OK) st = dev_take(ctx, fn, &back, n, 8);
    if (st == RDX_OK) st = dev_take(ctx, fn, &answer, n, 8);
    AGREE(st);
    double t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, send_q, send, recv_q, recv, es), st, done);
    ctx->dist_exchange_ms = rdx_now_ms() - t0;

    /* 3. the shard answers what it got, on its own GPU */
    rdx_array rq = rdx_device_array(recv_q, m, in.dtype);
    rdx_array ra = rdx_device_array(answers, m, RDX_U64);
    st = count_only ? rdx_index_lookup_count(ctx, shard, rq, ra) : rdx_index_lookup(ctx, shard, rq, ra);
    AGREE(st);

    /* 4. the answers back, into the caller's order */
    t0 = rdx_now_ms();
    RDX_CHECK_GOTO(comm->ops->alltoallv_device(comm, answers, recv, back, send, 8), st, done);
    ctx->dist_exchange_ms += rdx_now_ms() - t0;
    if (n > 0) {
      unsigned blocks = rdx_grid(n, threads);
      if (blocks > 4096) blocks = 4096;
      scatter_kernel<<<blocks, threads, 0, s>>>((const uint64_t *)back, (const uint32_t *)order, n, (uint64_t *)answer);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
      if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
    }
    AGREE(st);
  }
  /* every rank has its answers: only now is the output written */
  if (n > 0)
    st = out.where == RDX_DEVICE ? rdx_cuda_ok(ctx, cudaMemcpyAsync(out.data, answer, (size_t)n * 8, cudaMemcpyDeviceToDevice, s), fn)
                                 : rdx_cuda_memcpy(ctx, out.data, answer, (size_t)n * 8);
  if (st == RDX_OK && n > 0 && out.where == RDX_DEVICE) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
done:
  rdx_mem_free(ctx, sid);
  rdx_mem_free(ctx, sid2);
  rdx_mem_free(ctx, pos);
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

/* ---- copies between the GPUs of a local group ---- */

extern "C" void rdx_dist_peers_enable(rdx_context *const *ctxs, int n) {
  int before = -1;
  if (cudaGetDevice(&before) != cudaSuccess) before = -1;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int a = ctxs[i]->device, b = ctxs[j]->device, can = 0;
      if (a == b || cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) continue;
      /* a's copy engines and kernels may read and write b's memory, cudaMalloc'd or pooled */
      if (cudaSetDevice(a) == cudaSuccess) (void)cudaDeviceEnablePeerAccess(b, 0); /* already enabled: fine */
      cudaMemPool_t pool;
      if (cudaDeviceGetDefaultMemPool(&pool, b) == cudaSuccess) {
        cudaMemAccessDesc d;
        memset(&d, 0, sizeof d);
        d.location.type = cudaMemLocationTypeDevice;
        d.location.id = a;
        d.flags = cudaMemAccessFlagsProtReadWrite;
        (void)cudaMemPoolSetAccess(pool, &d, 1);
      }
    }
  if (before >= 0) (void)cudaSetDevice(before);
  (void)cudaGetLastError(); /* best effort: without peer access the copies still work, staged */
}

extern "C" rdx_status rdx_dist_peer_copy(rdx_context *ctx, void *dst, const void *src, int src_device, size_t bytes) {
  if (bytes == 0) return RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  cudaError_t e = src_device == ctx->device ? cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)
                                            : cudaMemcpyPeerAsync(dst, ctx->device, src, src_device, bytes, s);
  return rdx_cuda_ok(ctx, e, "device all-to-all: cudaMemcpyPeerAsync");
}

extern "C" rdx_status rdx_dist_peer_wait(rdx_context *ctx) {
  return rdx_cuda_ok(ctx, cudaStreamSynchronize(rdx_stream(ctx)), "device all-to-all: cudaStreamSynchronize");
}

extern "C" double rdx_dist_exchange_ms(const rdx_context *ctx) { return ctx->dist_exchange_ms; }

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
  if (st == RDX_OK) st = dev_take(ctx, fn, &send, part * size, 1);
  if (st == RDX_OK) st = dev_take(ctx, fn, &recv, part * size, 1);
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
