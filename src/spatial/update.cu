/*
 * update.cu: what the GPU update engines share (update.cuh declares it): the paged quadtree's
 * relayout, the check of a batch's ids, live-id bitmaps, pool copies, the pages a paged pool
 * reuses, and the rebuild that takes a batch too large for its layout's engine.
 *
 * RELAYOUT (paged quadtrees, rdx_sp_qt_relayout_cuda). Every leaf gets a new page of room
 * RDX_SP_GROW(len), in node order, with free slots past them, in a pool without codes (paged
 * readers derive them from the coordinates), and the id map follows its points: written from
 * them on the first relayout, remapped in id order on later ones. The paged engine runs it at
 * its first update and whenever the free end runs short, so its cost is part of the batches'.
 *
 * REBUILD (rdx_sp_rebuild_cuda, both kinds, the same layout). The live points are scattered to
 * arrays indexed by id, the batch checked and written over them, the flagged ids compacted in id
 * order, and the index built anew over them: their positions are in id order, so ties of a k-d
 * median go by id as in a fresh build. The new pool's ids are mapped back through the compacted
 * list. The result is what a fresh build of the points gives, with their ids; a paged index gets
 * its pages and id map back at its next update.
 */
#include <thrust/iterator/counting_iterator.h>

#include <vector>

#include "spatial/update.cuh"

namespace {

using namespace rdx_sp;

/* ---- relayout ---- */

struct leaf_move {
  int64_t from, len, to, room; /* room: slots at `to`, its part past len zeroed */
};

/* One block per leaf move (256 threads: bench/results/NVIDIA-H200/UPDATES.md): its points to
 * their new slots, the rest of its room zeroed; the id map pointed at them when slot is set. */
template <typename T>
__global__ void relayout_kernel(const leaf_move *lm, int64_t n_leaves, const T *sx, const T *sy, const uint64_t *sid,
                                T *x, T *y, uint64_t *id, uint64_t *slot) {
  for (int64_t a = blockIdx.x; a < n_leaves; a += gridDim.x) {
    const leaf_move L = lm[a];
    for (int64_t j = threadIdx.x; j < L.room; j += blockDim.x) {
      const int64_t s = L.from + j, d = L.to + j;
      const bool live = j < L.len;
      const uint64_t v = live ? sid[s] : 0;
      x[d] = live ? sx[s] : T(0), y[d] = live ? sy[s] : T(0), id[d] = v;
      if (live && slot) slot[v] = (uint64_t)d;
    }
  }
}

/* The id map after a relayout, in id order: an entry's old slot lies in one leaf move's old
 * extent and moves with it. The moves are sorted by old slot, and chunk[c] is the first that
 * starts at or past slot c * REMAP_CHUNK - 1, so a slot's move is among the few that start in
 * its chunk, or the one before; delta[c] is the shift of the chunk's slots when one move covers
 * them all (most chunks: leaves hold hundreds of slots), else REMAP_MIXED. This reads the map in
 * order where writing it from the points would scatter a write per point. */
#define REMAP_CHUNK 64
#define REMAP_MIXED INT64_MIN
__global__ void remap_keys_kernel(const leaf_move *lm, int64_t n, uint32_t *key, uint32_t *idx) {
  SP_FOR(i, n) key[i] = lm[i].len > 0 ? (uint32_t)lm[i].from : 0xFFFFFFFFu, idx[i] = (uint32_t)i;
}
static __device__ int64_t first_from_past(const uint32_t *from, int64_t lo, int64_t hi, uint64_t s) { /* first from > s */
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if ((uint64_t)from[mid] <= s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
__global__ void remap_chunks_kernel(const uint32_t *from, const uint32_t *idx, int64_t n, const leaf_move *lm,
                                    int64_t n_chunks, uint32_t *chunk, int64_t *delta) {
  SP_FOR(c, n_chunks + 1) {
    const int64_t lo = c == 0 ? 0 : first_from_past(from, 0, n, (uint64_t)c * REMAP_CHUNK - 1);
    chunk[c] = (uint32_t)lo;
    if (c == n_chunks) break;
    const int64_t hi = first_from_past(from, lo, n, (uint64_t)(c + 1) * REMAP_CHUNK - 1);
    int64_t one = -1, k = 0; /* the moves whose extents reach into the chunk */
    if (lo > 0) {
      const leaf_move &L = lm[idx[lo - 1]];
      if (L.from + L.len > c * REMAP_CHUNK) one = lo - 1, k++;
    }
    if (hi > lo) one = lo, k += hi - lo;
    delta[c] = k == 1 ? lm[idx[one]].to - lm[idx[one]].from : REMAP_MIXED;
  }
}
/* The old map's n entries into the new map (*bad set for a live id outside every leaf). */
__global__ void remap_ids_kernel(const uint64_t *slot, int64_t n, const uint32_t *from, const uint32_t *idx,
                                 const uint32_t *chunk, const int64_t *delta, int64_t n_chunks, const leaf_move *lm,
                                 uint64_t *out, unsigned *bad) {
  SP_FOR(i, n) {
    const uint64_t s = slot[i], c = s / REMAP_CHUNK;
    uint64_t d = RDX_SP_NONE;
    if (s == RDX_SP_NONE) {
    } else if (c >= (uint64_t)n_chunks) {
      *bad = 1u;
    } else if (delta[c] != REMAP_MIXED) {
      d = (uint64_t)((int64_t)s + delta[c]);
    } else {
      const int64_t e = first_from_past(from, chunk[c], chunk[c + 1], s); /* the first move past s */
      const leaf_move L = e > 0 ? lm[idx[e - 1]] : leaf_move{0, 0, 0, 0};
      if (e == 0 || s - (uint64_t)L.from >= (uint64_t)L.len) *bad = 1u;
      else d = (uint64_t)(L.to + (int64_t)(s - (uint64_t)L.from));
    }
    out[i] = d;
  }
}

/* The relayout's plan, on the device: each leaf's room GROW(len) (room[n] = 0, so the exclusive
 * sum's last entry is the total), its move to the sum of the rooms before it, then the nodes'
 * new fpos and room. */
__global__ void rooms_kernel(rdx_sp_nodes N, int64_t *room) {
  SP_FOR(i, N.n + 1) room[i] = i < N.n && N.leaf[i] ? RDX_SP_GROW(N.len[i]) : 0;
}
__global__ void moves_kernel(rdx_sp_nodes N, const int64_t *nf, leaf_move *lm) {
  SP_FOR(i, N.n) lm[i] = N.leaf[i] ? leaf_move{N.fpos[i], N.len[i], nf[i], nf[i + 1] - nf[i]} : leaf_move{0, 0, 0, 0};
}
__global__ void place_kernel(rdx_sp_nodes N, const int64_t *nf, const int64_t *room) {
  SP_FOR(i, N.n) if (N.leaf[i]) N.fpos[i] = nf[i], N.room[i] = room[i];
}

/* The moves lm (on the device, one per node) into a new pool of new_cap slots, the slots from
 * total on zeroed, and the id map made or remapped; waits. On failure the index is as it was. */
template <typename T>
rdx_status relayout_to(rdx_context *ctx, rdx_points *pts, const leaf_move *lm, int64_t n_lm, int64_t new_cap,
                       int64_t total) {
  const char *fn = "rdx_points update: relayout";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx);
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, new_cap, pts->f64, 0, &np));
  const int remap = pts->slot != nullptr && pts->pool.cap < (int64_t)UINT32_MAX;
  const int64_t slot_cap = pts->slot ? pts->slot_cap : live_room(pts->id_end);
  const int64_t n_old = !remap ? 0 : (int64_t)pts->id_end < slot_cap ? (int64_t)pts->id_end : slot_cap; /* entries remapped */
  uint64_t *slot = nullptr;
  rdx_status st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&slot, (size_t)slot_cap * 8, RDX_DEVICE);
  if (st == RDX_OK && n_old < slot_cap)
    st = rdx_cuda_ok(ctx, cudaMemsetAsync(slot + n_old, 0xFF, (size_t)(slot_cap - n_old) * 8, s), fn);
  uint32_t *rk = nullptr, *ri = nullptr, *rk2 = nullptr, *ri2 = nullptr, *chunk = nullptr;
  int64_t *delta = nullptr;
  unsigned *bad = nullptr;
  const int64_t n_chunks = pts->pool.cap / REMAP_CHUNK + 1;
  if (st == RDX_OK && remap) {
    uint32_t **u32s[] = {&rk, &ri, &rk2, &ri2};
    for (uint32_t **p : u32s)
      if (st == RDX_OK) st = mm.get(p, (size_t)n_lm, fn);
    if (st == RDX_OK) st = mm.get(&chunk, (size_t)n_chunks + 1, fn);
    if (st == RDX_OK) st = mm.get(&delta, (size_t)n_chunks, fn);
    if (st == RDX_OK) st = mm.get(&bad, 1, fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(bad, 0, 4, s), fn);
  }
  cub::DoubleBuffer<uint32_t> kb(rk, rk2), ib(ri, ri2);
  if (st == RDX_OK && remap) {
    remap_keys_kernel<<<blocks_for(n_lm, 256), 256, 0, s>>>(lm, n_lm, rk, ri);
    st = mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceRadixSort::SortPairs(t, b, kb, ib, n_lm, 0, 32, s); });
    if (st == RDX_OK)
      remap_chunks_kernel<<<blocks_for(n_chunks + 1, 256), 256, 0, s>>>(kb.Current(), ib.Current(), n_lm, lm, n_chunks, chunk,
                                                                        delta);
  }
  if (st == RDX_OK) st = pool_zero_from(ctx, &np, total, pts->f64, fn);
  if (st == RDX_OK && n_lm > 0) {
    relayout_kernel<T><<<n_lm < 65536 ? (unsigned)n_lm : 65536u, 256, 0, s>>>(
        lm, n_lm, (const T *)pts->pool.x, (const T *)pts->pool.y, pts->pool.id, (T *)np.x, (T *)np.y, np.id,
        remap ? nullptr : slot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st == RDX_OK && remap && n_old > 0) {
    remap_ids_kernel<<<blocks_for(n_old, 256), 256, 0, s>>>(pts->slot, n_old, kb.Current(), ib.Current(), chunk, delta,
                                                            n_chunks, lm, slot, bad);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  unsigned bad_h = 0;
  if (st == RDX_OK) st = remap ? to_host(ctx, &bad_h, bad, 1, fn) : rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  if (st == RDX_OK && bad_h) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an id of the map outside every leaf", fn);
  if (st != RDX_OK) {
    if (slot) rdx_mem_free(ctx, slot);
    rdx_sp_pool_free(ctx, &np);
    return st;
  }
  if (pts->slot) rdx_mem_free(ctx, pts->slot);
  pts->slot = slot, pts->slot_cap = slot_cap;
  np.used = new_cap;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  pfree_reset(ctx, pts);
  return RDX_OK;
}

/* ---- ids ---- */

/* Ids against the id map (paged), the live-id bitmap (dense) or per-id flags (the rebuild):
 * unknown or erased ids ranked, and (id, row) sort entries for the repeats. */
__global__ void validate_kernel(const void *ids, int ids64, int64_t m, uint64_t id_end, const uint64_t *slot,
                                const uint32_t *live, const uint8_t *flag, unsigned long long *bad, uint64_t *keys,
                                int64_t *rows) {
  SP_FOR(i, m) {
    const uint64_t id = id_at(ids, ids64, i);
    const int in = id < id_end && (slot ? slot[id] != RDX_SP_NONE : live ? bit_get(live, id) : flag[id]);
    const int what = rdx_sp_id_state(id, id_end, in);
    if (what) atomicMin(bad, (unsigned long long)rdx_sp_bad_rank(i, what));
    keys[i] = id, rows[i] = i;
  }
}
__global__ void repeats_kernel(const uint64_t *k, const int64_t *rows, int64_t m, unsigned long long *bad) {
  SP_FOR(j, m) if (j > 0 && k[j] == k[j - 1]) atomicMin(bad, (unsigned long long)rdx_sp_bad_rank(rows[j], RDX_SP_BAD_REPEATED));
}
__global__ void set_bits_kernel(const uint64_t *ids, int64_t n, uint32_t *bits) {
  SP_FOR(i, n) atomicOr(&bits[ids[i] >> 5], 1u << (ids[i] & 31));
}

rdx_status check_ids_with(rdx_context *ctx, rdx_sp_batch *b, uint64_t id_end, const uint64_t *slot, const uint32_t *live,
                          const uint8_t *flag, scratch &mm) {
  const char *fn = "rdx_points update: ids";
  const int64_t m = b->m;
  cudaStream_t s = rdx_stream(ctx);
  unsigned long long *bad, hb = ~0ull;
  uint64_t *k, *k2;
  int64_t *r, *r2;
  RDX_CHECK(mm.get(&bad, 1, fn));
  RDX_CHECK(mm.get(&k, (size_t)m, fn));
  RDX_CHECK(mm.get(&k2, (size_t)m, fn));
  RDX_CHECK(mm.get(&r, (size_t)m, fn));
  RDX_CHECK(mm.get(&r2, (size_t)m, fn));
  RDX_CHECK(to_device(ctx, bad, &hb, 1, fn));
  validate_kernel<<<blocks_for(m, 256), 256, 0, s>>>(b->ids, b->ids64, m, id_end, slot, live, flag, bad, k, r);
  SP_LAUNCH_CHECK(ctx, fn);
  cub::DoubleBuffer<uint64_t> kb(k, k2);
  cub::DoubleBuffer<int64_t> rb(r, r2);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &bytes) {
    return cub::DeviceRadixSort::SortPairs(t, bytes, kb, rb, m, 0, bits_for(id_end) > 0 ? bits_for(id_end) : 1, s);
  }));
  repeats_kernel<<<blocks_for(m, 256), 256, 0, s>>>(kb.Current(), rb.Current(), m, bad);
  SP_LAUNCH_CHECK(ctx, fn);
  RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  b->bad_row = -1;
  if (hb == ~0ull) return RDX_OK;
  hb &= ((unsigned long long)1 << 62) - 1;
  b->bad_row = (int64_t)(hb / 4), b->bad_what = (int)(hb % 4);
  if (b->ids64) return to_host(ctx, &b->bad_id, (const uint64_t *)b->ids + b->bad_row, 1, fn);
  uint32_t id32 = 0;
  RDX_CHECK(to_host(ctx, &id32, (const uint32_t *)b->ids + b->bad_row, 1, fn));
  b->bad_id = id32;
  return RDX_OK;
}

/* ---- rebuild ---- */

/* Each id live (flag) and named once (claim bits): a bad batch sets bad bit 1, and check_ids_with
 * words it. */
__global__ void claim_kernel(const void *ids, int ids64, int64_t m, uint64_t id_end, const uint8_t *flag, uint32_t *claim,
                             unsigned long long *bad) {
  SP_FOR(i, m) {
    const uint64_t id = id_at(ids, ids64, i);
    if (id >= id_end || !flag[id]) atomicOr(bad, 1ull);
    else claim_id(id, claim, bad);
  }
}

/* Each live point to its id's place. */
template <typename T>
__global__ void scatter_kernel(rdx_sp_nodes N, const T *px, const T *py, const uint64_t *pid, T *x, T *y, uint8_t *flag) {
  for_leaf_slots(N, [&](int64_t, int64_t, int64_t s) {
    const uint64_t d = pid[s];
    x[d] = px[s], y[d] = py[s], flag[d] = 1;
  });
}
/* The batch over the id-indexed points, its points checked (*bad bit 4). The ids are checked
 * and the flags read before this runs. */
template <typename T>
__global__ void batch_kernel(int op, const void *ids, int ids64, const T *xy, int64_t m, uint64_t first_id, int check,
                             rdx_sp_grid g, T *x, T *y, uint8_t *flag, unsigned long long *bad) {
  SP_FOR(i, m) {
    const uint64_t d = op == RDX_SP_INSERT ? first_id + (uint64_t)i : id_at(ids, ids64, i);
    double px, py;
    if (op == RDX_SP_ERASE) flag[d] = 0;
    else if (!row_point(xy, sizeof(T) == 8, i, check, g, &px, &py)) atomicOr(bad, 4ull);
    else x[d] = xy[2 * i], y[d] = xy[2 * i + 1], flag[d] = 1;
  }
}
template <typename T>
__global__ void gather_kernel(const uint64_t *idl, int64_t n, const T *x, const T *y, T *xy) {
  SP_FOR(j, n) xy[2 * j] = x[idl[j]], xy[2 * j + 1] = y[idl[j]];
}
/* The build numbered the points by position; positions map to ids through the compacted list. */
__global__ void remap_kernel(uint64_t *pid, int64_t n, const uint64_t *idl) {
  SP_FOR(j, n) pid[j] = idl[pid[j]];
}

/* The index over the n_new points xy (ids idl), built into *nx (pool and nodes; its own
 * otherwise a copy of pts). */
rdx_status build_into(rdx_context *ctx, const rdx_points *pts, const void *xy, const uint64_t *idl, int64_t n_new,
                      rdx_points *nx) {
  *nx = *pts;
  memset(&nx->pool, 0, sizeof nx->pool);
  memset(&nx->nodes, 0, sizeof nx->nodes);
  nx->n = n_new;
  if (n_new == 0) { /* the empty index, as points.c builds it */
    rdx_status st = rdx_sp_pool_alloc(ctx, 0, pts->f64, 0, &nx->pool);
    if (st == RDX_OK) st = rdx_sp_nodes_empty(ctx, RDX_DEVICE, &nx->nodes);
    return st;
  }
  rdx_sp_build_in in;
  in.xy = xy, in.n = n_new, in.debug = 0;
  RDX_CHECK(pts->ops->build(ctx, nx, &in));
  remap_kernel<<<blocks_for(n_new, 256), 256, 0, rdx_stream(ctx)>>>(nx->pool.id, n_new, idl);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: remap kernel");
}

template <typename T>
rdx_status rebuild(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  const char *fn = "rdx_points update (rebuild)";
  cudaStream_t s = rdx_stream(ctx);
  const int op = b->op;
  const int64_t m = b->m;
  b->bad_row = -1;
  double t0 = rdx_now_ms();
  scratch mm(ctx);

  /* 1: the live points by id, the ids checked against them, the batch over them */
  const uint64_t ids = pts->id_end + (op == RDX_SP_INSERT ? (uint64_t)m : 0);
  T *x, *y, *xy;
  uint8_t *flag;
  uint64_t *idl;
  int64_t *nsel, n_new = 0;
  unsigned long long *bad, hb = 0;
  RDX_CHECK(mm.get(&x, (size_t)ids, fn));
  RDX_CHECK(mm.get(&y, (size_t)ids, fn));
  RDX_CHECK(mm.get(&flag, (size_t)ids, fn));
  RDX_CHECK(mm.get(&idl, (size_t)ids, fn));
  RDX_CHECK(mm.get(&nsel, 1, fn));
  RDX_CHECK(mm.get(&bad, 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(flag, 0, (size_t)ids, s), fn);
  RDX_CUDA(ctx, cudaMemsetAsync(bad, 0, sizeof *bad, s), fn);
  scatter_kernel<T><<<blocks_for(pts->nodes.n * 32, 256), 256, 0, s>>>(pts->nodes, (const T *)pts->pool.x,
                                                                       (const T *)pts->pool.y, pts->pool.id, x, y, flag);
  SP_LAUNCH_CHECK(ctx, fn);
  if (op != RDX_SP_INSERT) { /* the ids, against the flags before the batch changes them */
    uint32_t *claim;
    const size_t words = (size_t)(pts->id_end / 32) + 1;
    RDX_CHECK(mm.get(&claim, words, fn));
    RDX_CUDA(ctx, cudaMemsetAsync(claim, 0, words * 4, s), fn);
    claim_kernel<<<blocks_for(m, 256), 256, 0, s>>>(b->ids, b->ids64, m, pts->id_end, flag, claim, bad);
    SP_LAUNCH_CHECK(ctx, fn);
    RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
    if (hb & 1) return check_ids_with(ctx, b, pts->id_end, nullptr, nullptr, flag, mm);
  }
  batch_kernel<T><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, (const T *)b->xy, m, b->first_id, b->check_xy,
                                                     pts->grid, x, y, flag, bad);
  SP_LAUNCH_CHECK(ctx, fn);
  thrust::counting_iterator<uint64_t> every(0);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, every, flag, idl, nsel, (int64_t)ids, s);
  }));
  RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  if (hb & 4) {
    b->bad_xy = 1;
    return RDX_OK;
  }
  RDX_CHECK(to_host(ctx, &n_new, nsel, 1, fn));
  const int64_t want = pts->n + (op == RDX_SP_INSERT ? m : op == RDX_SP_ERASE ? -m : 0);
  if (n_new != want)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %lld points after the batch, expected %lld", fn, (long long)n_new,
                    (long long)want);
  double t1 = rdx_now_ms();

  /* 2: the new index, swapped in once it is whole */
  rdx_points nx;
  memset(&nx, 0, sizeof nx);
  uint32_t *nlive = nullptr;
  const int dense = pts->layout == RDX_POINTS_DENSE;
  rdx_status st = mm.get(&xy, (size_t)(2 * n_new + 2), fn);
  if (st == RDX_OK && n_new > 0) {
    gather_kernel<T><<<blocks_for(n_new, 256), 256, 0, s>>>(idl, n_new, x, y, xy);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st == RDX_OK) st = build_into(ctx, pts, xy, idl, n_new, &nx);
  if (st == RDX_OK && dense) st = live_bitmap(ctx, nx.pool.id, n_new, live_room(ids), &nlive);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  if (st != RDX_OK) {
    rdx_sp_pool_free(ctx, &nx.pool);
    rdx_sp_nodes_free(ctx, &nx.nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  rdx_sp_pool_free(ctx, &pts->pool);
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->pool = nx.pool, pts->nodes = nx.nodes, pts->kd_levels = nx.kd_levels;
  pts->host_stale = 1;
  if (pts->slot) rdx_mem_free(ctx, pts->slot); /* paged: pages and map come back at the next update */
  pts->slot = NULL, pts->slot_cap = 0;
  rdx_sp_drop_pages(ctx, pts);
  if (pts->live) rdx_mem_free(ctx, pts->live);
  pts->live = nlive, pts->live_bits = dense ? live_room(ids) : 0;
  rdx_sp_stats *S = &pts->stats;
  S->splits = S->merges = S->relocated = S->new_leaves = 0;
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = 0, S->phase_ms[2] = rdx_now_ms() - t1, S->phase_ms[3] = 0;
  b->in_place = -1;
  return RDX_OK;
}

}  // namespace

/* ---- shared (update.cuh) ---- */

rdx_status rdx_sp::check_ids(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, scratch &mm) {
  return check_ids_with(ctx, b, pts->id_end, pts->slot, pts->slot ? nullptr : pts->live, nullptr, mm);
}

rdx_status rdx_sp::live_bitmap(rdx_context *ctx, const uint64_t *pid, int64_t n, int64_t bits, uint32_t **out) {
  const char *fn = "rdx_points update: live ids";
  cudaStream_t s = rdx_stream(ctx);
  const size_t bytes = (size_t)(bits / 32 + 1) * 4;
  uint32_t *live = nullptr;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: live ids", (void **)&live, bytes, RDX_DEVICE));
  rdx_status st = rdx_cuda_ok(ctx, cudaMemsetAsync(live, 0, bytes, s), fn);
  if (st == RDX_OK && n > 0) {
    set_bits_kernel<<<blocks_for(n, 256), 256, 0, s>>>(pid, n, live);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st != RDX_OK) {
    rdx_mem_free(ctx, live);
    return st;
  }
  *out = live;
  return RDX_OK;
}

rdx_status rdx_sp::pool_zero_from(rdx_context *ctx, rdx_sp_pool *p, int64_t from, int f64, const char *fn) {
  if (from >= p->cap) return RDX_OK;
  const size_t f = (size_t)from, c = (size_t)p->cap, es = f64 ? 8 : 4, kb = (size_t)p->key_bytes;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemsetAsync((char *)p->x + f * es, 0, (c - f) * es, s), fn);
  RDX_CUDA(ctx, cudaMemsetAsync((char *)p->y + f * es, 0, (c - f) * es, s), fn);
  RDX_CUDA(ctx, cudaMemsetAsync(p->id + f, 0, (c - f) * 8, s), fn);
  if (p->key) RDX_CUDA(ctx, cudaMemsetAsync((char *)p->key + f * kb, 0, (c - f) * kb, s), fn);
  return RDX_OK;
}

rdx_status rdx_sp::pool_copy_used(rdx_context *ctx, rdx_sp_pool *dst, const rdx_sp_pool *src, int f64, const char *fn) {
  const size_t u = (size_t)src->used, es = f64 ? 8 : 4, kb = (size_t)src->key_bytes;
  cudaStream_t s = rdx_stream(ctx);
  if (src->used > dst->cap || (src->key == NULL) != (dst->key == NULL) || kb != (size_t)dst->key_bytes)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a pool of %lld slots into one of %lld", fn, (long long)src->used,
                    (long long)dst->cap);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->x, src->x, u * es, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->y, src->y, u * es, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->id, src->id, u * 8, cudaMemcpyDeviceToDevice, s), fn);
  if (src->key) RDX_CUDA(ctx, cudaMemcpyAsync(dst->key, src->key, u * kb, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CHECK(pool_zero_from(ctx, dst, src->used, f64, fn));
  dst->used = src->used;
  return RDX_OK;
}

pgfree rdx_sp::pfree_of(const rdx_points *pts) {
  pgfree F;
  memset(&F, 0, sizeof F);
  if (pts->pfree == NULL) return F;
  F.K = pts->pfree_k;
  F.cnt = (int32_t *)pts->pfree;
  F.off = (const int64_t *)((char *)pts->pfree + ((size_t)F.K * 4 + 7) / 8 * 8);
  F.page = (uint32_t *)(F.off + F.K + 1);
  return F;
}

void rdx_sp::pfree_reset(rdx_context *ctx, rdx_points *pts) {
  rdx_sp_drop_pages(ctx, pts);
  const int K = (int)((RDX_SP_GROW(pts->cap) + PAGE_UNIT - 1) / PAGE_UNIT);
  std::vector<int64_t> off((size_t)K + 1, 0);
  for (int k = 0; k < K; k++) off[k + 1] = off[k] + pts->pool.cap / ((int64_t)PAGE_UNIT * (k + 1)) + 1;
  const size_t head = ((size_t)K * 4 + 7) / 8 * 8, bytes = head + ((size_t)K + 1) * 8 + (size_t)off[K] * 4;
  keep_message keep(ctx); /* no failure of the caller */
  void *b = NULL;
  cudaStream_t s = rdx_stream(ctx);
  if (rdx_mem_alloc(ctx, "rdx_points: free pages", &b, bytes, RDX_DEVICE) == RDX_OK &&
      cudaMemsetAsync(b, 0, (size_t)K * 4, s) == cudaSuccess &&
      cudaMemcpyAsync((char *)b + head, off.data(), ((size_t)K + 1) * 8, cudaMemcpyHostToDevice, s) == cudaSuccess &&
      cudaStreamSynchronize(s) == cudaSuccess) {
    pts->pfree = b, pts->pfree_k = K, pts->pfree_bytes = (int64_t)bytes;
  } else {
    if (b) rdx_mem_free(ctx, b);
    (void)cudaGetLastError();
  }
}

/* ---- entry points ---- */

extern "C" rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  const char *fn = "rdx_points update: relayout";
  const rdx_sp_nodes &N = pts->nodes;
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx);
  int64_t *room = nullptr, *nf = nullptr, total = 0;
  leaf_move *lm = nullptr;
  RDX_CHECK(mm.get(&room, (size_t)N.n + 1, fn));
  RDX_CHECK(mm.get(&nf, (size_t)N.n + 1, fn));
  RDX_CHECK(mm.get(&lm, (size_t)N.n + 1, fn));
  rooms_kernel<<<blocks_for(N.n + 1, 256), 256, 0, s>>>(N, room);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceScan::ExclusiveSum(t, b, room, nf, N.n + 1, s); }));
  moves_kernel<<<blocks_for(N.n, 256), 256, 0, s>>>(N, nf, lm);
  RDX_CUDA(ctx, cudaGetLastError(), fn);
  RDX_CHECK(to_host(ctx, &total, nf + N.n, 1, fn));
  /* The new pool's size goes up in steps of n/16, so that the next relayout usually asks for no
   * more than this one frees, which the stream-ordered pool hands back at once. */
  const int64_t step = pts->n / 16 > 65536 ? pts->n / 16 : 65536, cap = (total + headroom + step - 1) / step * step;
  RDX_CHECK(pts->f64 ? relayout_to<double>(ctx, pts, lm, N.n, cap, total) : relayout_to<float>(ctx, pts, lm, N.n, cap, total));
  place_kernel<<<blocks_for(N.n, 256), 256, 0, s>>>(N, nf, room); /* a device error here is fatal anyway */
  RDX_CHECK(rdx_cuda_ok(ctx, cudaGetLastError(), fn));
  RDX_CHECK(rdx_cuda_sync(ctx, fn));
  pts->pool.used = total;
  pts->host_stale = 1;
  pts->stats.relayouts++;
  return RDX_OK;
}

extern "C" rdx_status rdx_sp_rebuild_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  return pts->f64 ? rebuild<double>(ctx, pts, b) : rebuild<float>(ctx, pts, b);
}
