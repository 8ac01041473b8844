/*
 * merge.cuh: the merge of a sorted batch into a pool kept in key order, one streaming pass: the
 * dense layout's engines share it (update_qt.cu merges Morton codes, update_kd.cu k-d leaf
 * codes). The old pool's slots [0, n) hold the live points in ascending key order; the batch's
 * (key, row) entries are sorted by key. Tiles of TILE slots, one block each (merge_tile_kernel),
 * drop the slots whose id the batch claims, rank the survivors with a decoupled look-back, and
 * place them and the batch points of their tile; merge_crowded_kernel places the batch points of
 * tiles that receive more than a block caches. Among equal keys the survivors come first. It
 * reads the pool once and writes the new one once (bench/results/NVIDIA-H200/UPDATES.md).
 */
#ifndef RDX_SP_MERGE_CUH
#define RDX_SP_MERGE_CUH

#include "spatial/update.cuh"

namespace rdx_sp {

constexpr int TB = 512;        /* threads per block of the merge */
constexpr int TILE = 4 * TB;   /* old pool slots per tile: one block, four slots per thread */
constexpr int SNK = 2048;      /* batch codes a tile caches in shared memory */

/* jlo[t]: the first batch entry that goes at or after tile t (codes >= the code before it). */
template <typename K>
__global__ void jlo_kernel(const K *okey, const K *nk, int64_t m_new, int64_t ntiles, int64_t *jlo) {
  SP_FOR(t, ntiles + 1) jlo[t] = t == 0 ? 0 : t == ntiles ? m_new : lower(nk, 0, m_new, (uint64_t)okey[t * TILE - 1]);
}

/* Local ranks of a tile's survivors carry SP_GONE on the slots the batch claims. */
#define SP_GONE 0x8000u

/* The tiles' survivor counts, scanned in the merge itself (a decoupled look-back: each block
 * adds up its predecessors' published counts), so the old pool is read once. */
typedef cub::ScanTileState<long long> tile_state;
static __global__ void tile_init_kernel(tile_state ts, int ntiles) { ts.InitializeStatus(ntiles); }

/* The new pool as the merge writes it; a place past its end (only a batch with bad ids can
 * compute one, and that batch is dropped) is flagged instead of written. */
template <typename T, typename K>
struct npool {
  T *x, *y;
  uint64_t *id;
  K *key;
  int64_t cap;
  unsigned long long *bad; /* bit 2: a place past the end */
  __device__ void put(int64_t o, T vx, T vy, uint64_t d, K k) const {
    if (o < cap) x[o] = vx, y[o] = vy, id[o] = d, key[o] = k;
    else atomicOr(bad, 2ull);
  }
};

/* The batch's points, sorted by code: entry j is row nrow[j] of the batch. */
template <typename T, typename K>
struct nbatch {
  const K *nk;
  const uint32_t *nrow;
  const T *xy;
  const void *ids; /* NULL for inserts: ids first_id + row */
  int ids64;
  uint64_t first_id;
  __device__ void put(const npool<T, K> &P, int64_t o, int64_t j) const {
    uint32_t r = nrow[j];
    P.put(o, xy[2 * (int64_t)r], xy[2 * (int64_t)r + 1], ids ? id_at(ids, ids64, r) : first_id + r, nk[j]);
  }
};

/* One block per tile t (blockIdx.x; the look-back needs tiles started in order) reads its
 * slots, drops those whose id the batch claims (a move or an erase) and ranks the survivors
 * (one block scan); sbase[t], the survivors of the tiles before it, comes from the
 * look-back. It writes the survivors and, when they fit in shared memory (most tiles receive a
 * few), the batch entries that fall in it. Survivor i goes to sbase[t] + (survivors before it
 * in the tile) + (batch codes below its code), which are the entries of [0, jlo[t]) and those
 * below it in [jlo[t], jlo[t+1]). Batch entry j goes to j + sbase[t] + (survivors before the
 * upper bound of its code in the tile). Slots are striped over the threads (q TB + thread), so
 * a warp's loads and stores are runs of consecutive slots. Crowded tiles leave their ranks in
 * sp for merge_crowded_kernel. */
template <typename T, typename K>
__global__ void __launch_bounds__(TB) merge_tile_kernel(const T *ox, const T *oy, const uint64_t *oid, const K *okey,
                                                         int64_t n_old, int drop, const uint32_t *claim, nbatch<T, K> B,
                                                         const int64_t *jlo, tile_state ts, int64_t *surv,
                                                         int64_t *sbase, uint16_t *sp, npool<T, K> P) {
  typedef cub::BlockScan<unsigned long long, TB> scan_t;
  typedef cub::TilePrefixCallbackOp<long long, ::cuda::std::plus<long long>, tile_state> prefix_t;
  __shared__ union {
    typename scan_t::TempStorage scan;
    typename prefix_t::TempStorage prefix;
  } tmp;
  __shared__ K snk[SNK], sok[TILE];
  __shared__ uint16_t ssp[TILE];
  __shared__ long long s_base;
  const int t = (int)blockIdx.x;
  const int64_t j0 = jlo[t], kn = jlo[t + 1] - j0, a = (int64_t)t * TILE;
  const int64_t size = n_old - a < TILE ? (n_old > a ? n_old - a : 0) : TILE;
  const int shared = kn <= SNK;
  if (shared)
    for (int64_t q = threadIdx.x; q < kn; q += TB) snk[q] = B.nk[j0 + q];
  unsigned v[4];
  K k[4];
  T vx[4], vy[4];
  uint64_t d[4];
#pragma unroll
  for (int q = 0; q < 4; q++) { /* all loads first: four slots in flight per thread */
    const int64_t i = a + q * TB + threadIdx.x;
    const int in = i < n_old;
    k[q] = in ? okey[i] : K();
    vx[q] = in ? ox[i] : T();
    vy[q] = in ? oy[i] : T();
    d[q] = in ? oid[i] : 0;
  }
  /* one block scan for the four stripes: a 16-bit field each (a stripe has TB <= 2^15 slots) */
  unsigned long long flags = 0, pre, all;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int64_t i = a + q * TB + threadIdx.x;
    flags |= (unsigned long long)(i < n_old && !(drop && bit_get(claim, d[q]))) << (16 * q);
  }
  scan_t(tmp.scan).ExclusiveSum(flags, pre, all);
  __syncthreads(); /* tmp is the look-back's next */
  int run = 0;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int64_t i = a + q * TB + threadIdx.x;
    v[q] = (unsigned)(run + (int)((pre >> (16 * q)) & 0xFFFF)) | ((flags >> (16 * q)) & 1 ? 0u : SP_GONE);
    sok[q * TB + threadIdx.x] = k[q];
    ssp[q * TB + threadIdx.x] = (uint16_t)v[q];
    if (!shared && i < n_old) sp[i] = (uint16_t)v[q];
    run += (int)((all >> (16 * q)) & 0xFFFF);
  }
  if (t == 0) {
    if (threadIdx.x == 0) ts.SetInclusive(0, run), s_base = 0;
  } else if (threadIdx.x < 32) {
    prefix_t op(ts, tmp.prefix, ::cuda::std::plus<long long>(), t);
    long long e = op(run);
    if (threadIdx.x == 0) s_base = e;
  }
  __syncthreads();
  const int64_t base = s_base;
  if (threadIdx.x == 0) surv[t] = run, sbase[t] = base;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    if (v[q] & SP_GONE) continue;
    int64_t below = shared ? j0 + lower(snk, 0, kn, (uint64_t)k[q]) : lower(B.nk, j0, j0 + kn, (uint64_t)k[q]);
    P.put(base + v[q] + below, vx[q], vy[q], d[q], k[q]);
  }
  if (shared)
    for (int64_t q = threadIdx.x; q < kn; q += TB) {
      int64_t p = upper(sok, 0, size, (uint64_t)snk[q]);
      B.put(P, j0 + q + base + (p < size ? (int64_t)(ssp[p] & ~SP_GONE) : run), j0 + q);
    }
}

/* The batch entries of tiles that receive more than SNK (merge_tile_kernel places the others),
 * one thread each: its tile t has jlo[t] <= j < jlo[t + 1]. */
template <typename T, typename K>
__global__ void merge_crowded_kernel(nbatch<T, K> B, int64_t m_new, const K *okey, int64_t n_old, const int64_t *jlo,
                                   const int64_t *surv, const int64_t *sbase, const uint16_t *sp, int64_t ntiles,
                                   npool<T, K> P) {
  SP_FOR(j, m_new) {
    int64_t t = upper(jlo, 0, ntiles + 1, (uint64_t)j) - 1;
    if (jlo[t + 1] - jlo[t] <= SNK) continue;
    int64_t a = t * TILE, e = a + TILE < n_old ? a + TILE : n_old;
    if (e < a) e = a;
    int64_t p = upper(okey, a, e, (uint64_t)B.nk[j]);
    B.put(P, j + sbase[t] + (p < e ? (int64_t)(sp[p] & ~SP_GONE) : surv[t]), j);
  }
}

/* The merge of the sorted batch B (m_new entries, keys B.nk) into the sorted old pool src
 * (n_old slots; with drop, those whose id is set in claim are left out) as pool P. */
template <typename T, typename K>
rdx_status merge_pool(scratch &mm, const rdx_sp_pool &src, int64_t n_old, int drop, const uint32_t *claim,
                      const nbatch<T, K> &B, int64_t m_new, const npool<T, K> &P, const char *fn) {
  rdx_context *ctx = mm.ctx;
  cudaStream_t s = rdx_stream(ctx);
  const int64_t ntiles = n_old > 0 ? (n_old + TILE - 1) / TILE : 1;
  if (ntiles >= INT32_MAX) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: a pool of %lld points", fn, (long long)n_old);
  int64_t *surv, *sbase, *jlo;
  uint16_t *sp;
  void *ts_mem;
  size_t ts_bytes = 0;
  tile_state ts;
  RDX_CHECK(mm.get(&surv, (size_t)ntiles, fn));
  RDX_CHECK(mm.get(&sbase, (size_t)ntiles, fn));
  RDX_CHECK(mm.get(&jlo, (size_t)ntiles + 1, fn));
  RDX_CHECK(mm.get(&sp, (size_t)(ntiles * TILE), fn));
  RDX_CUDA(ctx, tile_state::AllocationSize((int)ntiles, ts_bytes), fn);
  RDX_CHECK(mm.raw(&ts_mem, ts_bytes, fn));
  RDX_CUDA(ctx, ts.Init((int)ntiles, ts_mem, ts_bytes), fn);
  tile_init_kernel<<<(unsigned)((ntiles + 255) / 256), 256, 0, s>>>(ts, (int)ntiles);
  jlo_kernel<K><<<blocks_for(ntiles + 1, 256), 256, 0, s>>>((const K *)src.key, B.nk, m_new, ntiles, jlo);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: tile kernels");
  merge_tile_kernel<T, K><<<(unsigned)ntiles, TB, 0, s>>>((const T *)src.x, (const T *)src.y, src.id, (const K *)src.key,
                                                          n_old, drop, claim, B, jlo, ts, surv, sbase, sp, P);
  if (m_new > 0)
    merge_crowded_kernel<T, K><<<blocks_for(m_new, 256), 256, 0, s>>>(B, m_new, (const K *)src.key, n_old, jlo, surv, sbase,
                                                                    sp, ntiles, P);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: merge kernels");
  return RDX_OK;
}

/* ---- what both merge updates do around the merge ---- */

/* A batch's device arrays: the claim bitmap (moves and erases: a bit per id the batch names)
 * and its (key, row) sort entries with their spares (moves and inserts). */
template <typename K>
struct mrows {
  uint32_t *claim;
  K *k, *k2;
  uint32_t *row, *row2;
};

/* The live-id bitmap, made from the dense pool src_id on the first merge update (derived state:
 * keeping it when the batch fails changes nothing), and the batch's arrays. */
template <typename K>
rdx_status merge_rows_alloc(scratch &mm, rdx_points *pts, const rdx_sp_batch *b, const uint64_t *src_id, int64_t n_old,
                            mrows<K> *r, const char *fn) {
  rdx_context *ctx = mm.ctx;
  memset(r, 0, sizeof *r);
  if (pts->live == NULL) {
    int64_t bits = live_room(pts->id_end);
    RDX_CHECK(live_bitmap(ctx, src_id, n_old, bits, &pts->live));
    pts->live_bits = bits;
  }
  if (b->op != RDX_SP_INSERT) {
    const int64_t words = (int64_t)(pts->id_end / 32) + 1;
    RDX_CHECK(mm.get(&r->claim, (size_t)words, fn));
    RDX_CUDA(ctx, sp_fill(r->claim, (size_t)words * 4, 0, rdx_stream(ctx)), fn);
  }
  if (b->op != RDX_SP_ERASE) {
    RDX_CHECK(mm.get(&r->k, (size_t)b->m, fn));
    RDX_CHECK(mm.get(&r->k2, (size_t)b->m, fn));
    RDX_CHECK(mm.get(&r->row, (size_t)b->m, fn));
    RDX_CHECK(mm.get(&r->row2, (size_t)b->m, fn));
  }
  return RDX_OK;
}

/* The new pool *np (allocated here, the caller's to keep or free) of *n_new points: the batch's
 * sorted entries r merged into the sorted pool src of n_old points. */
template <typename T, typename K>
rdx_status merge_into(scratch &mm, const rdx_points *pts, const rdx_sp_batch *b, const rdx_sp_pool &src, int64_t n_old,
                      const mrows<K> &r, unsigned long long *bad, rdx_sp_pool *np, int64_t *n_new, const char *fn) {
  const int op = b->op;
  const int64_t m = b->m, nn = n_old + (op == RDX_SP_INSERT ? m : op == RDX_SP_ERASE ? -m : 0);
  if (nn < 0) return rdx_fail(mm.ctx, RDX_ERR_INTERNAL, "%s: more erases than points", fn); /* bad ids say so first */
  RDX_CHECK(rdx_sp_pool_alloc(mm.ctx, nn > 0 ? nn : 1, pts->f64, (int)sizeof(K), np));
  RDX_CHECK(pool_zero_from(mm.ctx, np, nn, pts->f64, fn)); /* the one spare slot of an empty pool */
  *n_new = nn;
  const npool<T, K> P = {(T *)np->x, (T *)np->y, np->id, (K *)np->key, nn > 0 ? nn : 1, bad};
  const nbatch<T, K> B = {r.k, r.row, (const T *)b->xy, op == RDX_SP_INSERT ? NULL : b->ids, b->ids64, b->first_id};
  return merge_pool(mm, src, n_old, op != RDX_SP_INSERT, r.claim, B, op == RDX_SP_ERASE ? 0 : m, P, fn);
}

/* The live-id bitmap after an insert (ids from..) or an erase (the batch's ids). */
static __global__ void set_range_kernel(uint64_t from, int64_t n, uint32_t *bits) {
  SP_FOR(i, n) atomicOr(&bits[(from + (uint64_t)i) >> 5], 1u << ((from + (uint64_t)i) & 31));
}
static __global__ void clear_bits_kernel(const void *ids, int ids64, int64_t n, uint32_t *bits) {
  SP_FOR(i, n) {
    uint64_t id = id_at(ids, ids64, i);
    atomicAnd(&bits[id >> 5], ~(1u << (id & 31)));
  }
}

/* A pool freed when it goes out of scope (emptied to keep it). */
struct pool_hold {
  rdx_context *ctx;
  rdx_sp_pool *p;
  ~pool_hold() { rdx_sp_pool_free(ctx, p); }
};

/* A live-id bitmap with room for an insert's ids past the index's (*nlive stays NULL when it
 * has room); allocated before the swap, so running out of memory changes nothing. */
static inline rdx_status live_grow(rdx_context *ctx, const rdx_points *pts, const rdx_sp_batch *b, uint32_t **nlive,
                                   int64_t *nlive_bits, const char *fn) {
  *nlive = NULL, *nlive_bits = pts->live_bits;
  if (b->op != RDX_SP_INSERT || (int64_t)(b->first_id + (uint64_t)b->m) <= pts->live_bits) return RDX_OK;
  int64_t bits = (int64_t)(b->first_id + (uint64_t)b->m);
  bits += bits / 2 + 64;
  const size_t old_b = (size_t)(pts->live_bits / 32 + 1) * 4, new_b = (size_t)(bits / 32 + 1) * 4;
  cudaStream_t s = rdx_stream(ctx);
  uint32_t *p = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: live ids", (void **)&p, new_b, RDX_DEVICE));
  rdx_status st = rdx_cuda_ok(ctx, cudaMemsetAsync(p, 0, new_b, s), fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(p, pts->live, old_b, cudaMemcpyDeviceToDevice, s), fn);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, p);
    return st;
  }
  *nlive = p, *nlive_bits = bits;
  return RDX_OK;
}

/* At the swap: the grown bitmap (if any) in place, and the batch's ids set (an insert) or
 * cleared (an erase). */
static inline rdx_status live_commit(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, uint32_t *nlive,
                                     int64_t nlive_bits) {
  cudaStream_t s = rdx_stream(ctx);
  if (nlive) {
    rdx_mem_free(ctx, pts->live);
    pts->live = nlive, pts->live_bits = nlive_bits;
  }
  if (b->op == RDX_SP_INSERT) set_range_kernel<<<blocks_for(b->m, 256), 256, 0, s>>>(b->first_id, b->m, pts->live);
  if (b->op == RDX_SP_ERASE) clear_bits_kernel<<<blocks_for(b->m, 256), 256, 0, s>>>(b->ids, b->ids64, b->m, pts->live);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: live ids kernel");
}

/* The swap at the end of a merge update (only device errors can have failed before it): the
 * live ids (live_commit), the new nodes and pool (*np emptied). */
static inline rdx_status merge_swap(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, uint32_t *nlive,
                                    int64_t nlive_bits, const rdx_sp_nodes &nodes, rdx_sp_pool *np, int64_t n_new) {
  RDX_CHECK(live_commit(ctx, pts, b, nlive, nlive_bits));
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = nodes;
  pts->host_stale = 1;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = *np;
  pts->pool.used = n_new;
  memset(np, 0, sizeof *np);
  return RDX_OK;
}

}  // namespace rdx_sp

#endif /* RDX_SP_MERGE_CUH */
