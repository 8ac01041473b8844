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

/* The pages that leaves of a paged quadtree gave up, kept for later batches, so the pool's free
 * end (and the relayout when it runs short) is reached only by what the index really grew: every
 * relayout of 16.5M points cost 2-7 ms on an H200, and without reuse one came every 4-9 batches
 * of 3-5% moved (PROBES.md §25). Rooms of new pages come in classes of PAGE_UNIT slots (class k:
 * PAGE_UNIT * (k + 1) slots, k < K); a page given up goes to the largest class it covers, and a
 * new leaf takes a page of its class or of the next PAGE_REACH - 1 before the free end. Class k
 * holds cnt[k] page starts at page[off[k]..]. Takes may leave a count below zero (no page), and
 * pg_free_kernel, after the batch's moves, clamps them and adds the batch's own given-up pages,
 * so no page is reused while its points are still read. On the device, in pts->pfree: cnt (K
 * ints), off (K + 1 int64), page. */
enum { PAGE_UNIT = 64, PAGE_REACH = 3 };
struct pgfree {
  int32_t *cnt;
  const int64_t *off;
  uint32_t *page;
  int K, reach;
  /* The room of a new page for c points: RDX_SP_GROW(c), up to a whole class. */
  __device__ int64_t room_for(int64_t c) const {
    const int64_t r = RDX_SP_GROW(c);
    return r <= (int64_t)PAGE_UNIT * K ? (r + PAGE_UNIT - 1) / PAGE_UNIT * PAGE_UNIT : r;
  }
  /* A page of *room slots (room_for's): a reused one, whose class may be larger (*room says;
   * *reused counts those), or one from the free end past page_base (*used counts its slots). */
  __device__ int64_t take(int64_t *room, int64_t page_base, unsigned long long *used, unsigned long long *reused) const {
    const int64_t r = *room;
    if (r <= (int64_t)PAGE_UNIT * K)
      for (int j = (int)(r / PAGE_UNIT) - 1, j1 = j + reach; j < K && j < j1; j++) {
        const int old = atomicSub(&cnt[j], 1);
        if (old > 0) {
          atomicAdd(reused, 1ull);
          *room = (int64_t)PAGE_UNIT * (j + 1);
          return page[off[j] + old - 1];
        }
      }
    return page_base + (int64_t)atomicAdd(used, (unsigned long long)r);
  }
};

/* pts->pfree as kernels see it (K = 0: none, every page from the free end). */
pgfree pfree_of(const rdx_points *pts);

/* A new, empty pts->pfree for pts->pool.cap slots and pts->cap points a leaf (best effort: on
 * failure none, and pages come from the free end only). */
void pfree_reset(rdx_context *ctx, rdx_points *pts);

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_CUH */
