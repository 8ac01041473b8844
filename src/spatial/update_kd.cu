/*
 * update_kd.cu: bulk moves, inserts and erases of a k-d tree on the GPU, by rebuilding.
 *
 * Why not G-PICS's repair (update.c's planned path, which the CPU keeps): a k-d leaf that
 * overflows splits at the median of its points, which the planned path gathers and splits on
 * the host. On an H200, 16.5M taxi-like f32 points, leaf capacity 1024, it took 55 ms for 1% of
 * the points moved and 189 ms for 10%, against 28 ms for the GPU build of then (session 5). A
 * rebuild over the points as they are after the batch costs one build plus a few passes over
 * the ids (about 3 ms), and gives the tree a fresh build would, balanced again: 20-22 ms from
 * 1% to 50% moved against a 16.5 ms build (spatial_update.csv, session 6).
 *
 *  1. The ids are checked as on the other paths (check_ids: known, live, not repeated), against
 *     the live-id bitmap (pts->live, made from the pool on the first update) or the planned
 *     path's id map.
 *  2. The live points are scattered to arrays indexed by id, the batch written over them (moves,
 *     inserts at ids id_end.., erases clear a flag), and the flagged ids compacted in id order.
 *  3. rdx_sp_kd_build_cuda builds over those points; their positions are in id order, so ties of
 *     a median go by id as in a fresh build. The new pool's ids are mapped back through the
 *     compacted list, and the new pool, nodes and live-id bitmap replace the old ones.
 * Only scratch and the new index are written before the swap: a bad batch or a failed build
 * leaves the index as it was.
 */
#include <thrust/iterator/counting_iterator.h>

#include "spatial/update.cuh"

namespace {

using namespace rdx_sp;

/* Each live point to its id's place. */
template <typename T>
__global__ void scatter_kernel(rdx_sp_nodes N, const T *px, const T *py, const uint64_t *pid, T *x, T *y,
                               uint8_t *flag) {
  for_leaf_slots(N, [&](int64_t, int64_t, int64_t s) {
    uint64_t d = pid[s];
    x[d] = px[s], y[d] = py[s], flag[d] = 1;
  });
}

/* The batch over the id-indexed points (its ids are checked already). */
template <typename T>
__global__ void batch_kernel(int op, const void *ids, int ids64, const T *xy, int64_t m, uint64_t first_id, T *x, T *y,
                             uint8_t *flag) {
  SP_FOR(i, m) {
    uint64_t d = op == RDX_SP_INSERT ? first_id + (uint64_t)i : id_at(ids, ids64, i);
    if (op == RDX_SP_ERASE) {
      flag[d] = 0;
    } else {
      x[d] = xy[2 * i], y[d] = xy[2 * i + 1], flag[d] = 1;
    }
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

template <typename T>
rdx_status update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  const int op = b->op;
  const int64_t m = b->m;
  f->bad_row = -1;
  f->n_inplace = -1; /* not tracked: a rebuild places every point anew */
  double t0 = rdx_now_ms();
  scratch mm(ctx);

  /* 1: the ids */
  if (pts->slot == NULL && pts->live == NULL) { /* no update yet: the pool is a build's, dense */
    int64_t bits = live_room(pts->id_end);
    RDX_CHECK(live_bitmap(ctx, pts->pool.id, pts->n, bits, &pts->live));
    pts->live_bits = bits;
  }
  if (op != RDX_SP_INSERT) {
    RDX_CHECK(check_ids(ctx, pts, b, mm, f));
    if (f->bad_row >= 0) return RDX_OK;
  }

  /* 2: the points after the batch, by id, compacted in id order */
  const uint64_t ids = pts->id_end + (op == RDX_SP_INSERT ? (uint64_t)m : 0);
  T *x, *y, *xy;
  uint8_t *flag;
  uint64_t *idl;
  int64_t *nsel, n_new = 0;
  RDX_CHECK(mm.get(&x, (size_t)ids, fn));
  RDX_CHECK(mm.get(&y, (size_t)ids, fn));
  RDX_CHECK(mm.get(&flag, (size_t)ids, fn));
  RDX_CHECK(mm.get(&idl, (size_t)ids, fn));
  RDX_CHECK(mm.get(&nsel, 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(flag, 0, (size_t)ids, s), fn);
  scatter_kernel<T><<<blocks_for(pts->nodes.n * 32, 256), 256, 0, s>>>(pts->nodes, (const T *)pts->pool.x,
                                                                       (const T *)pts->pool.y, pts->pool.id, x, y, flag);
  batch_kernel<T><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, (const T *)b->xy, m, b->first_id, x, y, flag);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: scatter kernels");
  thrust::counting_iterator<uint64_t> every(0);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, every, flag, idl, nsel, (int64_t)ids, s);
  }));
  RDX_CHECK(to_host(ctx, &n_new, nsel, 1, fn));
  const int64_t want = pts->n + (op == RDX_SP_INSERT ? m : op == RDX_SP_ERASE ? -m : 0);
  if (n_new != want)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %lld points after the batch, expected %lld", fn, (long long)n_new,
                    (long long)want);
  double t1 = rdx_now_ms();

  /* 3: the new index, swapped in once it is whole */
  rdx_points nx = *pts;
  memset(&nx.pool, 0, sizeof nx.pool);
  memset(&nx.nodes, 0, sizeof nx.nodes);
  nx.n = n_new;
  uint32_t *nlive = nullptr;
  const int64_t bits = live_room(ids);
  rdx_status st = RDX_OK;
  if (n_new == 0) { /* the empty index, as points.c builds it */
    rdx_sp_nodes h;
    memset(&h, 0, sizeof h);
    st = rdx_sp_pool_alloc(ctx, 0, pts->f64, 0, &nx.pool);
    if (st == RDX_OK) st = rdx_sp_nodes_empty(ctx, &h);
    if (st == RDX_OK) st = rdx_sp_nodes_alloc(ctx, 1, RDX_DEVICE, &nx.nodes);
    if (st == RDX_OK) st = rdx_sp_nodes_copy(ctx, &nx.nodes, &h);
    rdx_sp_nodes_free(ctx, &h);
  } else {
    st = mm.get(&xy, (size_t)(2 * n_new), fn);
    if (st == RDX_OK) {
      gather_kernel<T><<<blocks_for(n_new, 256), 256, 0, s>>>(idl, n_new, x, y, xy);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: gather kernel");
    }
    rdx_sp_build_in in;
    in.xy = xy, in.n = n_new, in.debug = 0;
    if (st == RDX_OK) st = rdx_sp_kd_build_cuda(ctx, &nx, &in);
    if (st == RDX_OK) {
      remap_kernel<<<blocks_for(n_new, 256), 256, 0, s>>>(nx.pool.id, n_new, idl);
      st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: remap kernel");
    }
  }
  if (st == RDX_OK) st = live_bitmap(ctx, nx.pool.id, n_new, bits, &nlive);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  if (st != RDX_OK) {
    rdx_sp_pool_free(ctx, &nx.pool);
    rdx_sp_nodes_free(ctx, &nx.nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  rdx_sp_pool_free(ctx, &pts->pool);
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->pool = nx.pool, pts->nodes = nx.nodes;
  pts->host_stale = 1;
  if (pts->slot) rdx_mem_free(ctx, pts->slot);
  pts->slot = NULL, pts->slot_cap = 0;
  if (pts->live) rdx_mem_free(ctx, pts->live);
  pts->live = nlive, pts->live_bits = bits;
  pts->sorted = 0;
  rdx_sp_stats *S = &pts->stats;
  S->splits = S->merges = S->relocated = S->new_leaves = 0;
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = rdx_now_ms() - t1, S->phase_ms[2] = S->phase_ms[3] = 0;
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  return pts->f64 ? update<double>(ctx, pts, b, f) : update<float>(ctx, pts, b, f);
}
