/*
 * update.cuh: what the two CUDA update paths share (update.cu: the host-planned path of the k-d
 * tree; update_qt.cu: the quadtree's merge; update_kd.cu: the k-d rebuild): reading a batch's
 * ids, bitmaps, a warp-per-leaf walk of the live slots, and the deterministic check of a batch's
 * ids behind every "bad id" message.
 */
#ifndef RDX_SP_UPDATE_CUH
#define RDX_SP_UPDATE_CUH

#include "spatial/sp_cuda.cuh"

namespace rdx_sp {

/* Bit s of a bitmap of u32 words (the merge's claim and live-id bitmaps). */
static __device__ __forceinline__ int bit_get(const uint32_t *b, uint64_t s) { return (b[s >> 5] >> (s & 31)) & 1u; }

static __device__ __forceinline__ uint64_t id_at(const void *ids, int ids64, int64_t i) {
  return ids64 ? ((const uint64_t *)ids)[i] : ((const uint32_t *)ids)[i];
}

/* One warp per leaf of N (launch 32 threads per node): f(u, j, s) for the j-th point of leaf u,
 * at pool slot s. */
template <class F>
__device__ __forceinline__ void for_leaf_slots(const rdx_sp_nodes &N, F f) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t u = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; u < N.n; u += warps) {
    if (!N.leaf[u]) continue;
    for (int64_t j = lane; j < N.len[u]; j += 32) f(u, j, N.fpos[u] + j);
  }
}

/* Bits a live-id bitmap gets for ids below id_end: a quarter more, for inserts. */
static inline int64_t live_room(uint64_t id_end) { return (int64_t)id_end + (int64_t)id_end / 4 + 64; }

/* A live-id bitmap (pts->live of the GPU update paths) of `bits` bits with the n ids pid[0..n)
 * set: those of a dense pool. */
rdx_status live_bitmap(rdx_context *ctx, const uint64_t *pid, int64_t n, int64_t bits, uint32_t **out);

/* The first bad row of a move or erase batch (an unknown, erased or repeated id) into f->bad_row,
 * bad_what, bad_id, as update.c reports it; f->bad_row = -1 when every id is good. */
rdx_status check_ids(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, scratch &mm, rdx_sp_found *f);

/* Slots [from, cap) of *p zeroed, column by column (enqueued). No answer reads spare room, but
 * copies of a whole pool do (its growth, the tests' checks), and memory that was never written
 * is what compute-sanitizer's initcheck reports. */
rdx_status pool_zero_from(rdx_context *ctx, rdx_sp_pool *p, int64_t from, int f64, const char *fn);

/* src's used slots copied into the larger *dst, the rest of it zeroed, dst->used = src->used
 * (enqueued; the caller waits). */
rdx_status pool_copy_used(rdx_context *ctx, rdx_sp_pool *dst, const rdx_sp_pool *src, int f64, const char *fn);

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_CUH */
