/*
 * update.cuh: what the GPU update engines share (update.cu, update_qt.cu, update_paged.cu,
 * update_kd.cu): reading a batch, bitmaps, searches, warp-aggregated counters, the check of a
 * batch's ids behind every "bad id" message (update_hd.h's rule), the pages a paged pool reuses,
 * and the new tree's nodes put in BFS order (update_hd.h).
 */
#ifndef RDX_SP_UPDATE_CUH
#define RDX_SP_UPDATE_CUH

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

#include "spatial/sp_cuda.cuh"

namespace rdx_sp {

namespace cg = cooperative_groups;

/* Bit s of a bitmap of u32 words. */
static __device__ __forceinline__ int bit_get(const uint32_t *b, uint64_t s) { return (b[s >> 5] >> (s & 31)) & 1u; }

static __device__ __forceinline__ uint64_t id_at(const void *ids, int ids64, int64_t i) {
  return ids64 ? ((const uint64_t *)ids)[i] : ((const uint32_t *)ids)[i];
}

/* Batch row i's point, into *x, *y: false when check finds it outside the box g or not finite. */
static __device__ __forceinline__ bool row_point(const void *xy, int f64, int64_t i, int check, const rdx_sp_grid &g,
                                                 double *x, double *y) {
  *x = rdx_sp_at(xy, 2 * i, f64), *y = rdx_sp_at(xy, 2 * i + 1, f64);
  return !check || (*x >= g.x0 && *x <= g.x1 && *y >= g.y0 && *y <= g.y1); /* NaN fails too */
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

/* atomicAdd(ctr, v) for the threads that call it together, one atomic per warp; returns this
 * thread's old value. */
__device__ __forceinline__ unsigned long long agg_add(unsigned long long *ctr, unsigned long long v) {
  cg::coalesced_group g = cg::coalesced_threads();
  unsigned long long pre = cg::exclusive_scan(g, v, cg::plus<unsigned long long>());
  unsigned long long base = 0;
  if (g.thread_rank() == g.size() - 1) base = atomicAdd(ctr, pre + v);
  return g.shfl(base, g.size() - 1) + pre;
}

/* First of k[lo, hi) >= v (lower) or > v (upper). */
template <typename K>
__device__ __forceinline__ int64_t lower(const K *k, int64_t lo, int64_t hi, uint64_t v) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if ((uint64_t)k[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
template <typename K>
__device__ __forceinline__ int64_t upper(const K *k, int64_t lo, int64_t hi, uint64_t v) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if ((uint64_t)k[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The highest ancestor of old node u that the new tree makes a leaf (is_leaf(a)), or -1: u is
 * then no node of the new tree, its points that leaf's. */
template <class F>
__device__ __forceinline__ int64_t leaf_above(const int64_t *parent, int64_t u, F is_leaf) {
  int64_t top = -1;
  for (int64_t a = parent[u]; a >= 0; a = parent[a])
    if (is_leaf(a)) top = a;
  return top;
}

/* The batch's sort entries by code bits [lo, hi) (CUB): *k and *row point at the sorted ones, in
 * their buffers or the spares k2, row2. The quadtree sorts 2 D bits; the k-d tree leaves out the
 * low bits that no leaf's code uses. */
template <typename K>
rdx_status sort_batch(scratch &mm, int64_t m, int lo, int hi, K **k, K *k2, uint32_t **row, uint32_t *row2,
                      const char *fn) {
  if (m == 0) return RDX_OK;
  cub::DoubleBuffer<K> kb(*k, k2);
  cub::DoubleBuffer<uint32_t> rb(*row, row2);
  RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, rb, m, lo, hi, rdx_stream(mm.ctx));
  }));
  *k = kb.Current(), *row = rb.Current();
  return RDX_OK;
}

/* Claims a batch row's id (a bit per id): false, with bad bit 1, when a row before claimed it. */
static __device__ __forceinline__ bool claim_id(uint64_t id, uint32_t *claim, unsigned long long *bad) {
  const uint32_t bit = 1u << (id & 31);
  if (!(atomicOr(&claim[id >> 5], bit) & bit)) return true;
  atomicOr(bad, 1ull); /* the id's second row */
  return false;
}

/* Bits a live-id bitmap gets for ids below id_end: a quarter more, for inserts. */
static inline int64_t live_room(uint64_t id_end) { return (int64_t)id_end + (int64_t)id_end / 4 + 64; }

/* A live-id bitmap of `bits` bits with the n ids pid[0..n) set: those of a dense pool. */
rdx_status live_bitmap(rdx_context *ctx, const uint64_t *pid, int64_t n, int64_t bits, uint32_t **out);

/* The reported bad row of a move or erase batch (update_hd.h) into b->bad_row, bad_what, bad_id,
 * checked against pts->slot (paged) or pts->live (dense); b->bad_row = -1 when every id is good. */
rdx_status check_ids(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, scratch &mm);

/* Slots [from, cap) of *p zeroed, column by column (enqueued). No answer reads spare room, but
 * copies of a whole pool do, and memory never written is what compute-sanitizer's initcheck
 * reports. */
rdx_status pool_zero_from(rdx_context *ctx, rdx_sp_pool *p, int64_t from, int f64, const char *fn);

/* src's used slots copied into the larger *dst, the rest of it zeroed, dst->used = src->used
 * (enqueued; the caller waits). */
rdx_status pool_copy_used(rdx_context *ctx, rdx_sp_pool *dst, const rdx_sp_pool *src, int f64, const char *fn);

/* The pages that leaves of a paged quadtree gave up, kept for later batches, so that the pool's
 * free end (and the relayout when it runs short) is reached only by what the index grew. Rooms
 * come in classes of PAGE_UNIT slots (class k: PAGE_UNIT * (k + 1) slots, k < K); a page given up
 * goes to the largest class it covers, and a new leaf takes a page of its class or of the next
 * PAGE_REACH - 1 before the free end. Class k holds cnt[k] page starts at page[off[k]..]. Takes
 * may leave a count below zero (no page); pg_free_kernel, after the batch's moves, clamps them and
 * adds the batch's own given-up pages, so no page is reused while its points are still read. On
 * the device, in pts->pfree: cnt (K ints), off (K + 1 int64), page. */
enum { PAGE_UNIT = 64, PAGE_REACH = 3 };
struct pgfree {
  int32_t *cnt;
  const int64_t *off;
  uint32_t *page;
  int K;
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
      for (int j = (int)(r / PAGE_UNIT) - 1, j1 = j + PAGE_REACH; j < K && j < j1; j++) {
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

/* A new, empty pts->pfree for pts->pool.cap slots (best effort: on failure none). */
void pfree_reset(rdx_context *ctx, rdx_points *pts);

/* ---- the new tree's nodes in BFS order (update_hd.h) ----
 * An engine's decisions write each node they keep at its old index u (keep[u] = 1); compacted
 * in that order (bfs_order::compact), they are in BFS order already, since old nodes are. The
 * subtrees' nodes come in any order, a bound of entries with those at level < 0 unused; only their
 * ranks are sorted (CUB). A node's place is its index in its own list plus the number of the
 * other list's nodes of a lower rank (ranks are distinct), and internal nodes are then linked;
 * *bad gets bit 32 when the order or a node's children are wrong. as_hnode(T) reads a node of
 * type T. alloc takes all the memory before an engine's first write; the rest only launches. */
static __device__ __forceinline__ rdx_sp_hnode as_hnode(const rdx_sp_hnode &h) { return h; }

template <class T>
struct bfs_lists {
  const T *kept, *sub;
  const unsigned long long *n_kept, *n_sub; /* on the device: the kept nodes, the subtrees' used ones */
};

template <class T>
__global__ void bfs_rank_kernel(const T *sub, int64_t bound, int kd, uint64_t *k, int64_t *idx) {
  SP_FOR(i, bound) {
    const rdx_sp_hnode h = as_hnode(sub[i]);
    k[i] = h.level < 0 ? ~0ull : rdx_sp_bfs_rank(h.level, h.key, kd), idx[i] = i;
  }
}
/* The kept nodes before rank r (they ascend in rank). */
template <class T>
__device__ int64_t kept_below(const T *kept, int64_t n, uint64_t r, int kd) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const rdx_sp_hnode h = as_hnode(kept[mid]);
    if (rdx_sp_bfs_rank(h.level, h.key, kd) < r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
template <class T>
__global__ void bfs_place_kernel(bfs_lists<T> L, const uint64_t *sk, const int64_t *si, int kd, rdx_sp_nodes out) {
  const int64_t nk = (int64_t)*L.n_kept, ns = (int64_t)*L.n_sub;
  SP_FOR(i, nk + ns) {
    if (i < nk) {
      const rdx_sp_hnode h = as_hnode(L.kept[i]);
      rdx_sp_node_put(&out, i + lower(sk, 0, ns, rdx_sp_bfs_rank(h.level, h.key, kd)), &h);
    } else {
      const rdx_sp_hnode h = as_hnode(L.sub[si[i - nk]]);
      rdx_sp_node_put(&out, i - nk + kept_below(L.kept, nk, sk[i - nk], kd), &h);
    }
  }
}
template <class T>
__global__ void bfs_link_kernel(bfs_lists<T> L, rdx_sp_nodes out, int kd, unsigned long long *bad) {
  const int64_t n = (int64_t)(*L.n_kept + *L.n_sub);
  SP_FOR(i, n) if (rdx_sp_link_children(&out, n, i, kd)) atomicOr(bad, 32ull);
}
static __global__ void bfs_flags_kernel(const int64_t *keep, int64_t n, uint8_t *flag) { /* keep: -1 or its kept count */
  SP_FOR(i, n) flag[i] = keep[i] >= 0;
}

template <class T>
struct bfs_order {
  uint64_t *k = nullptr, *k2 = nullptr;
  int64_t *i = nullptr, *i2 = nullptr, bound = 0;
  int bits = 0, kd = 0;
  cudaError_t sort(void *t, size_t &b, cudaStream_t s) {
    cub::DoubleBuffer<uint64_t> kb(k, k2);
    cub::DoubleBuffer<int64_t> ib(i, i2);
    const cudaError_t e = cub::DeviceRadixSort::SortPairs(t, b, kb, ib, bound, 0, bits, s);
    if (t) k = kb.Current(), i = ib.Current(), k2 = kb.Alternate(), i2 = ib.Alternate();
    return e;
  }
  /* The n decisions' nodes tn (keep[u] >= 0 for those kept) compacted in order into *kept, their
   * count into *n_kept (before the host's read: its scratch may fail, nothing is written). */
  static rdx_status compact(scratch &mm, const T *tn, const int64_t *keep, int64_t n, T **kept,
                            unsigned long long *n_kept, const char *fn) {
    cudaStream_t s = rdx_stream(mm.ctx);
    uint8_t *flag;
    RDX_CHECK(mm.get(&flag, (size_t)n + 1, fn));
    RDX_CHECK(mm.get(kept, (size_t)n + 1, fn));
    bfs_flags_kernel<<<blocks_for(n, 256), 256, 0, s>>>(keep, n, flag);
    return mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceSelect::Flagged(t, b, tn, flag, *kept, n_kept, n, s); });
  }
  /* The scratch of the subtrees' order: bound entries, ranks of levels to max_level. */
  rdx_status alloc(scratch &mm, int64_t n_bound, int max_level, int is_kd, const char *fn) {
    bound = n_bound, kd = is_kd, bits = rdx_sp_bfs_bits(max_level, is_kd);
    RDX_CHECK(mm.get(&k, (size_t)bound + 1, fn));
    RDX_CHECK(mm.get(&k2, (size_t)bound + 1, fn));
    RDX_CHECK(mm.get(&i, (size_t)bound + 1, fn));
    RDX_CHECK(mm.get(&i2, (size_t)bound + 1, fn));
    return mm.cub_reserve(fn, [&](void *t, size_t &b) { return sort(t, b, rdx_stream(mm.ctx)); });
  }
  /* The nodes into out (allocated for all of them; the caller sets out->n once it knows it). */
  rdx_status run(scratch &mm, const bfs_lists<T> &L, int64_t kept_bound, rdx_sp_nodes *out, unsigned long long *bad,
                 const char *fn) {
    cudaStream_t s = rdx_stream(mm.ctx);
    bfs_rank_kernel<T><<<blocks_for(bound, 256), 256, 0, s>>>(L.sub, bound, kd, k, i);
    if (bound > 0) RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return sort(t, b, s); }));
    bfs_place_kernel<T><<<blocks_for(kept_bound + bound, 256), 256, 0, s>>>(L, k, i, kd, *out);
    bfs_link_kernel<T><<<blocks_for(kept_bound + bound, 256), 256, 0, s>>>(L, *out, kd, bad);
    RDX_CUDA(mm.ctx, cudaGetLastError(), fn);
    return RDX_OK;
  }
};

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_CUH */
