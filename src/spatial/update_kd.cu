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

#include <algorithm>
#include <vector>

#include "spatial/merge.cuh"

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
rdx_status rebuild(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  const char *fn = "rdx_points update (k-d rebuild)";
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
  pts->pool = nx.pool, pts->nodes = nx.nodes, pts->kd_levels = nx.kd_levels;
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

/* ==== the repair: G-PICS's update with the pool kept in leaf order ==== */

/* A node's left-aligned code: its path bits followed by zeros to depth D. Leaves are a prefix-free
 * set, so a leaf's points are the codes in [code, code + 2^(D - level)), and codes ascend in pool
 * order. */
__device__ __forceinline__ uint64_t lcode(uint64_t key, int level, int D) { return key << (D - level); }

/* Totals the host reads (one copy). */
struct ktot {
  unsigned long long bad;   /* 1 a bad id (check_ids finds which); internal checks: 2 a merged point
                               past the pool, 8 a subtree's node without its place */
  unsigned long long nodes, groups, gpoints, splits, merges, levels;
};

/* A leaf that splits: its `count` points are new pool slots [start, start + count). */
struct kgroup {
  int64_t start, count;
  uint64_t key;
  int32_t level, pad;
};

/* 1. One thread per batch row: the id checked against the live-id bitmap and claimed (a repeated
 * id is an error), and for moves and inserts the (leaf code, row) sort entry of the leaf the
 * point goes to (c <= split goes left, as on every path). */
__global__ void krows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                             const uint32_t *live, uint32_t *claim, rdx_sp_view v, int D, uint64_t *keys, uint32_t *rows,
                             ktot *tot) {
  SP_FOR(i, m) {
    if (op != RDX_SP_ERASE) keys[i] = 0, rows[i] = (uint32_t)i;
    if (op != RDX_SP_INSERT) {
      uint64_t id = id_at(ids, ids64, i);
      if (id >= id_end || !bit_get(live, id)) {
        atomicOr(&tot->bad, 1ull);
        continue;
      }
      const uint32_t bit = 1u << (id & 31);
      if (atomicOr(&claim[id >> 5], bit) & bit) {
        atomicOr(&tot->bad, 1ull); /* the id's second row */
        continue;
      }
    }
    if (op == RDX_SP_ERASE) continue;
    const int64_t u = rdx_sp_kd_find(&v, rdx_sp_at(xy, 2 * i, f64), rdx_sp_at(xy, 2 * i + 1, f64));
    keys[i] = lcode(v.key[u], v.level[u], D);
  }
}

/* Densifying a paged pool: each leaf's code (others sort last) and length. */
__global__ void leaf_codes_kernel(rdx_sp_nodes N, int D, uint64_t *code, int64_t *idx, int64_t *len) {
  SP_FOR(u, N.n) {
    code[u] = N.leaf[u] ? lcode(N.key[u], N.level[u], D) : ~0ull;
    idx[u] = u;
    len[u] = 0;
  }
}
__global__ void leaf_lens_kernel(rdx_sp_nodes N, const int64_t *idx, int64_t *len) {
  SP_FOR(i, N.n) len[i] = N.leaf[idx[i]] ? N.len[idx[i]] : 0;
}
/* One warp per leaf (in code order): its points to off[i].., with its code. */
template <typename T>
__global__ void densify_kernel(rdx_sp_nodes N, const int64_t *idx, const int64_t *off, int D, const T *ox, const T *oy,
                               const uint64_t *oid, T *x, T *y, uint64_t *id, uint64_t *key) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < N.n; i += warps) {
    const int64_t u = idx[i];
    if (!N.leaf[u]) continue;
    const uint64_t c = lcode(N.key[u], N.level[u], D);
    for (int64_t j = lane; j < N.len[u]; j += 32) {
      const int64_t s = N.fpos[u] + j, d = off[i] + j;
      x[d] = ox[s], y[d] = oy[s], id[d] = oid[s], key[d] = c;
    }
  }
}

/* 3. Per old node: its children's parent, its new count C and first slot A in the merged pool. */
__global__ void kcount_kernel(rdx_sp_nodes N, const uint64_t *keys, int64_t n, int D, int64_t *parent, int64_t *A,
                              int64_t *C) {
  SP_FOR(u, N.n) {
    if (u == 0) parent[0] = -1;
    if (!N.leaf[u])
      for (int64_t c = N.fpos[u]; c < N.fpos[u] + N.len[u]; c++) parent[c] = u;
    const int l = N.level[u];
    const int64_t a = lower(keys, 0, n, lcode(N.key[u], l, D));
    A[u] = a;
    C[u] = lower(keys, a, n, lcode(N.key[u] + 1, l, D)) - a;
  }
}

__device__ __forceinline__ int kleaf(int64_t c, int level, int D, int64_t cap) { return c <= cap || level >= D; }

__device__ void put_knode(rdx_sp_hnode *tn, ktot *tot, uint64_t key, int level, int leaf, int64_t c, int64_t fpos,
                          double split) {
  rdx_sp_hnode h;
  h.key = key, h.level = level, h.leaf = leaf, h.count = c, h.split = split;
  h.len = leaf ? c : 0, h.room = h.len, h.fpos = leaf ? fpos : 0;
  tn[agg_add(&tot->nodes, 1ull)] = h;
  atomicMax(&tot->levels, (unsigned long long)level + 1);
}

/* One thread per old node, by update.c's rule: a node inside a subtree whose top is a leaf now
 * is no node; a leaf stays one (its points are the merged run) or splits (a group); an internal
 * node becomes a leaf (a merge: its subtree's points are already one run) or stays, with its
 * split. Empty nodes stay (a k-d node always has both children). */
__global__ void kdecide_kernel(rdx_sp_nodes N, const int64_t *parent, const int64_t *A, const int64_t *C, int D, int64_t cap,
                               rdx_sp_hnode *tn, kgroup *groups, ktot *tot) {
  SP_FOR(u, N.n) {
    int inside = 0;
    for (int64_t a = parent[u]; a >= 0 && !inside; a = parent[a]) inside = kleaf(C[a], N.level[a], D, cap);
    if (inside) continue;
    const int l = N.level[u];
    const int64_t c = C[u];
    if (kleaf(c, l, D, cap)) {
      put_knode(tn, tot, N.key[u], l, 1, c, A[u], 0.0);
      if (!N.leaf[u]) agg_add(&tot->merges, 1ull);
    } else if (N.leaf[u]) {
      kgroup g;
      g.start = A[u], g.count = c, g.key = N.key[u], g.level = l, g.pad = 0;
      groups[agg_add(&tot->groups, 1ull)] = g;
      agg_add(&tot->gpoints, (unsigned long long)c);
      agg_add(&tot->splits, 1ull);
    } else {
      put_knode(tn, tot, N.key[u], l, 0, c, 0, N.split[u]);
    }
  }
}

/* The groups' points, gathered (gs: the groups' first gathered positions, ascending): as sort
 * entries (id, position) for the id order, and their pool slots. */
__global__ void gpos_kernel(const kgroup *g, const int64_t *gs, int64_t ng, int64_t n, const uint64_t *pid, uint64_t *key,
                            uint32_t *pos) {
  SP_FOR(p, n) {
    const int64_t k = seg_of(gs, ng, p);
    key[p] = pid[g[k].start + (p - gs[k])];
    pos[p] = (uint32_t)p;
  }
}
__global__ void group_key_kernel(const uint32_t *pos, int64_t n, const int64_t *gs, int64_t ng, uint64_t *key) {
  SP_FOR(q, n) key[q] = (uint64_t)seg_of(gs, ng, (int64_t)pos[q]);
}
/* Gathered point q (in (group, id) order) is group position pos[q]: its coordinates in its group's
 * frame (x and y swapped at odd levels) for kd_forest, and the point itself. */
template <typename T>
__global__ void ggather_kernel(const kgroup *g, const int64_t *gs, int64_t ng, const uint32_t *pos, int64_t n, const T *px,
                               const T *py, const uint64_t *pid, T *fxy, T *tx, T *ty, uint64_t *tid) {
  SP_FOR(q, n) {
    const int64_t p = pos[q], k = seg_of(gs, ng, p), s = g[k].start + (p - gs[k]);
    const T x = px[s], y = py[s];
    const int sw = g[k].level & 1;
    fxy[2 * q] = sw ? y : x, fxy[2 * q + 1] = sw ? x : y;
    tx[q] = x, ty[q] = y, tid[q] = pid[s];
  }
}
/* Final position p of the groups' points (leaf order): the point perm[p] to its group's slot,
 * with the code of its leaf (lstart: the new leaves' first positions, ascending). */
template <typename T>
__global__ void gscatter_kernel(const kgroup *g, const int64_t *gs, int64_t ng, const uint32_t *perm, int64_t n,
                                const int64_t *lstart, const uint64_t *lcodes, int64_t nl, const T *tx, const T *ty,
                                const uint64_t *tid, T *x, T *y, uint64_t *id, uint64_t *key) {
  SP_FOR(p, n) {
    const int64_t k = seg_of(gs, ng, p), s = g[k].start + (p - gs[k]), q = perm[p];
    x[s] = tx[q], y[s] = ty[q], id[s] = tid[q], key[s] = lcodes[seg_of(lstart, nl, p)];
  }
}

/* 4. The new nodes (kept, then the subtrees'): BFS sort keys (level, key) in `bits` bits. */
__global__ void knode_keys_kernel(const rdx_sp_hnode *tn, int64_t n, int kbits, uint64_t *k, int64_t *idx) {
  SP_FOR(i, n) k[i] = ((uint64_t)tn[i].level << kbits) | tn[i].key, idx[i] = i;
}
__global__ void knode_put_kernel(const rdx_sp_hnode *tn, const int64_t *idx, int64_t n, rdx_sp_nodes out) {
  SP_FOR(i, n) {
    const rdx_sp_hnode q = tn[idx[i]];
    out.key[i] = q.key, out.fpos[i] = q.fpos, out.len[i] = q.len, out.count[i] = q.count, out.room[i] = q.room;
    out.split[i] = q.split, out.level[i] = (uint8_t)q.level, out.leaf[i] = (uint8_t)q.leaf;
  }
}
/* Internal nodes: their two children are the next level's nodes with keys 2 key and 2 key + 1,
 * adjacent in BFS order. */
__global__ void knode_link_kernel(rdx_sp_nodes o, ktot *tot) {
  SP_FOR(i, o.n) {
    if (o.leaf[i]) continue;
    const int l = o.level[i] + 1;
    const uint64_t k = 2 * o.key[i];
    int64_t a = i + 1, b = o.n;
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if ((int)o.level[mid] < l || ((int)o.level[mid] == l && o.key[mid] < k)) a = mid + 1;
      else b = mid;
    }
    o.fpos[i] = a, o.len[i] = 2;
    if (a + 1 >= o.n || o.level[a] != l || o.key[a] != k || o.level[a + 1] != l || o.key[a + 1] != k + 1)
      atomicOr(&tot->bad, 8ull);
  }
}

template <typename T>
rdx_status repair(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  typedef uint64_t K;
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, cap = pts->cap;
  const int D = pts->depth, op = b->op;
  const int64_t m_new = op == RDX_SP_ERASE ? 0 : m;
  f->bad_row = -1;
  if (m >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: a batch of %lld rows", fn, (long long)m);
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "kd update: start");

  /* the old pool in leaf order with leaf codes: the index's own after a repair, else gathered
   * here leaf by leaf (once per index: after a build, a rebuild or the planned path) */
  rdx_sp_pool src = pts->pool, dense;
  memset(&dense, 0, sizeof dense);
  const int64_t n_old = pts->n;
  struct pool_guard {
    rdx_context *c;
    rdx_sp_pool *p;
    ~pool_guard() { rdx_sp_pool_free(c, p); }
  } guard{ctx, &dense};
  if (!pts->sorted && n_old > 0) {
    scratch rs(ctx); /* outside the arena, which would keep it */
    uint64_t *c1, *c2;
    int64_t *i1, *i2, *len, *off;
    RDX_CHECK(rs.get(&c1, (size_t)nn, fn));
    RDX_CHECK(rs.get(&c2, (size_t)nn, fn));
    RDX_CHECK(rs.get(&i1, (size_t)nn, fn));
    RDX_CHECK(rs.get(&i2, (size_t)nn, fn));
    RDX_CHECK(rs.get(&len, (size_t)nn, fn));
    RDX_CHECK(rs.get(&off, (size_t)nn, fn));
    leaf_codes_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, D, c1, i1, len);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: leaf codes kernel");
    cub::DoubleBuffer<uint64_t> cb(c1, c2);
    cub::DoubleBuffer<int64_t> ib(i1, i2);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, cb, ib, nn, 0, 64, s); }));
    leaf_lens_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, ib.Current(), len);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceScan::ExclusiveSum(tmp, bytes, len, off, nn, s); }));
    RDX_CHECK(rdx_sp_pool_alloc(ctx, n_old, pts->f64, 8, &dense));
    densify_kernel<T><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, ib.Current(), off, D, (const T *)src.x,
                                                             (const T *)src.y, src.id, (T *)dense.x, (T *)dense.y, dense.id,
                                                             (K *)dense.key);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: densify kernel");
    src = dense;
    rdx_trace(ctx, "kd update: pool in leaf order");
  }
  if (pts->live == NULL) { /* derived state: keeping it when the batch fails changes nothing */
    int64_t bits = live_room(pts->id_end);
    RDX_CHECK(live_bitmap(ctx, src.id, n_old, bits, &pts->live));
    pts->live_bits = bits;
  }

  /* 1: the batch */
  ktot *tot;
  uint32_t *claim = NULL;
  RDX_CHECK(mm.get(&tot, 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(tot, 0, sizeof *tot, s), fn);
  if (op != RDX_SP_INSERT) {
    const int64_t words = (int64_t)(pts->id_end / 32) + 1;
    RDX_CHECK(mm.get(&claim, (size_t)words, fn));
    RDX_CUDA(ctx, cudaMemsetAsync(claim, 0, (size_t)words * 4, s), fn);
  }
  K *nk = NULL, *nk2 = NULL;
  uint32_t *nrow = NULL, *nrow2 = NULL;
  if (m_new > 0) {
    RDX_CHECK(mm.get(&nk, (size_t)m, fn));
    RDX_CHECK(mm.get(&nk2, (size_t)m, fn));
    RDX_CHECK(mm.get(&nrow, (size_t)m, fn));
    RDX_CHECK(mm.get(&nrow2, (size_t)m, fn));
  }
  krows_kernel<<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->live, claim,
                                                  rdx_sp_view_of(pts), D, nk, nrow, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  if (m_new > 0) { /* codes of leaves at level < levels have their low D - levels bits zero */
    const int lo = pts->kd_levels > 0 && pts->kd_levels <= D ? D - pts->kd_levels : 0;
    cub::DoubleBuffer<K> kb(nk, nk2);
    cub::DoubleBuffer<uint32_t> rb(nrow, nrow2);
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, rb, m, lo, D, s); }));
    nk = kb.Current(), nrow = rb.Current();
  }
  rdx_trace(ctx, "kd update: rows");

  /* 2: the merge into a new pool */
  const int64_t n_new = n_old + (op == RDX_SP_INSERT ? m : op == RDX_SP_ERASE ? -m : 0);
  if (n_new < 0) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: more erases than points", fn); /* bad ids say so first */
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  RDX_CHECK(rdx_sp_pool_alloc(ctx, n_new > 0 ? n_new : 1, pts->f64, 8, &np));
  struct pool_guard np_guard{ctx, &np}; /* freed on failure; emptied (kept) on success */
  {
    const npool<T, K> P = {(T *)np.x, (T *)np.y, np.id, (K *)np.key, n_new > 0 ? n_new : 1, &tot->bad};
    const nbatch<T, K> B = {nk, nrow, (const T *)b->xy, op == RDX_SP_INSERT ? NULL : b->ids, b->ids64, b->first_id};
    RDX_CHECK(merge_pool(mm, src, n_old, op != RDX_SP_INSERT, claim, B, m_new, P, fn));
  }
  rdx_trace(ctx, "kd update: merge");

  /* 3: the nodes, and the host's one wait before the writes that matter */
  const K *keys = (const K *)np.key;
  int64_t *parent, *A, *C;
  rdx_sp_hnode *tn;
  kgroup *groups;
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&A, (size_t)nn, fn));
  RDX_CHECK(mm.get(&C, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)nn, fn));
  kcount_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, keys, n_new, D, parent, A, C);
  kdecide_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, parent, A, C, D, cap, tn, groups, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  ktot H;
  RDX_CHECK(to_host(ctx, &H, tot, 1, fn));
  if (H.bad & 1) return check_ids(ctx, pts, b, mm, f); /* sets f->bad_row */
  if (H.bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an internal check failed before the writes (check %llu)", fn, H.bad);
  rdx_trace(ctx, "kd update: plan");
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, gn = (int64_t)H.gpoints;
  double t1 = rdx_now_ms();

  /* the splitting leaves' subtrees (kd_forest), their points rewritten in leaf order in place */
  rdx_sp_hlist sub = {nullptr, 0, 0};
  struct list_guard {
    rdx_context *c;
    rdx_sp_hlist *l;
    ~list_guard() { rdx_sp_hlist_free(c, l); }
  } sub_guard{ctx, &sub};
  int levels = (int)H.levels;
  if (ng > 0) {
    std::vector<kgroup> hg((size_t)ng);
    RDX_CHECK(to_host(ctx, hg.data(), groups, (size_t)ng, fn));
    std::sort(hg.begin(), hg.end(), [](const kgroup &a, const kgroup &b) { return a.start < b.start; });
    std::vector<int64_t> hs((size_t)ng);
    std::vector<kd_root> roots((size_t)ng);
    for (int64_t g = 0, p = 0; g < ng; g++) {
      hs[(size_t)g] = p;
      roots[(size_t)g] = kd_root{p, hg[(size_t)g].count, hg[(size_t)g].key, hg[(size_t)g].level};
      p += hg[(size_t)g].count;
    }
    kgroup *dg;
    int64_t *gs;
    uint64_t *k1, *k2, *tid;
    uint32_t *p1, *p2, *perm;
    T *fxy, *tx, *ty;
    RDX_CHECK(mm.get(&dg, (size_t)ng, fn));
    RDX_CHECK(mm.get(&gs, (size_t)ng, fn));
    RDX_CHECK(mm.get(&k1, (size_t)gn, fn));
    RDX_CHECK(mm.get(&k2, (size_t)gn, fn));
    RDX_CHECK(mm.get(&p1, (size_t)gn, fn));
    RDX_CHECK(mm.get(&p2, (size_t)gn, fn));
    RDX_CHECK(mm.get(&perm, (size_t)gn, fn));
    RDX_CHECK(mm.get(&fxy, (size_t)(2 * gn), fn));
    RDX_CHECK(mm.get(&tx, (size_t)gn, fn));
    RDX_CHECK(mm.get(&ty, (size_t)gn, fn));
    RDX_CHECK(mm.get(&tid, (size_t)gn, fn));
    RDX_CHECK(to_device(ctx, dg, hg.data(), (size_t)ng, fn));
    RDX_CHECK(to_device(ctx, gs, hs.data(), (size_t)ng, fn));
    /* (group, id) order: by id, then stably by group */
    gpos_kernel<<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, gn, np.id, k1, p1);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group kernel");
    int id_bits = 1, g_bits = 0;
    while (id_bits < 64 && ((uint64_t)1 << id_bits) < pts->id_end + (uint64_t)m) id_bits++;
    while (((int64_t)1 << g_bits) < ng) g_bits++;
    cub::DoubleBuffer<uint64_t> kb(k1, k2);
    cub::DoubleBuffer<uint32_t> pb(p1, p2);
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, pb, gn, 0, id_bits, s); }));
    if (ng > 1) {
      group_key_kernel<<<blocks_for(gn, 256), 256, 0, s>>>(pb.Current(), gn, gs, ng, kb.Current());
      SP_LAUNCH_CHECK(ctx, "rdx_points update: group key kernel");
      RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, pb, gn, 0, g_bits, s); }));
    }
    ggather_kernel<T><<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, pb.Current(), gn, (const T *)np.x, (const T *)np.y, np.id,
                                                         fxy, tx, ty, tid);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group gather kernel");
    RDX_CHECK(kd_forest(ctx, fxy, pts->f64, gn, roots.data(), ng, D, cap, &sub, perm));
    /* the new leaves in position order, with their codes */
    std::vector<std::pair<int64_t, uint64_t>> lv;
    for (int64_t i = 0; i < sub.n; i++) {
      const rdx_sp_hnode &h = sub.v[i];
      if (h.level + 1 > levels) levels = h.level + 1;
      if (h.leaf) lv.push_back({h.fpos, h.key << (D - h.level)});
    }
    std::sort(lv.begin(), lv.end());
    const int64_t nlv = (int64_t)lv.size();
    std::vector<int64_t> hls((size_t)nlv);
    std::vector<uint64_t> hlc((size_t)nlv);
    for (int64_t i = 0; i < nlv; i++) hls[(size_t)i] = lv[(size_t)i].first, hlc[(size_t)i] = lv[(size_t)i].second;
    int64_t *ls;
    uint64_t *lc;
    RDX_CHECK(mm.get(&ls, (size_t)nlv, fn));
    RDX_CHECK(mm.get(&lc, (size_t)nlv, fn));
    RDX_CHECK(to_device(ctx, ls, hls.data(), (size_t)nlv, fn));
    RDX_CHECK(to_device(ctx, lc, hlc.data(), (size_t)nlv, fn));
    gscatter_kernel<T><<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, perm, gn, ls, lc, nlv, tx, ty, tid, (T *)np.x,
                                                          (T *)np.y, np.id, (K *)np.key);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group scatter kernel");
    /* subtree leaves: from group positions to pool slots */
    for (int64_t i = 0; i < sub.n; i++) {
      rdx_sp_hnode &h = sub.v[i];
      if (!h.leaf) continue;
      const int64_t g = std::upper_bound(hs.begin(), hs.end(), h.fpos) - hs.begin() - 1;
      h.fpos = hg[(size_t)g].start + (h.fpos - hs[(size_t)g]);
    }
  }
  rdx_trace(ctx, "kd update: split subtrees");

  /* 4: the new nodes in BFS order, linked, checked; then the swap */
  const int64_t n_all = n_base + sub.n;
  rdx_sp_hnode *all;
  uint64_t *bk1, *bk2;
  int64_t *bi1, *bi2;
  RDX_CHECK(mm.get(&all, (size_t)n_all, fn));
  RDX_CHECK(mm.get(&bk1, (size_t)n_all, fn));
  RDX_CHECK(mm.get(&bk2, (size_t)n_all, fn));
  RDX_CHECK(mm.get(&bi1, (size_t)n_all, fn));
  RDX_CHECK(mm.get(&bi2, (size_t)n_all, fn));
  RDX_CUDA(ctx, cudaMemcpyAsync(all, tn, (size_t)n_base * sizeof *tn, cudaMemcpyDeviceToDevice, s), fn);
  if (sub.n > 0) RDX_CHECK(to_device(ctx, all + n_base, sub.v, (size_t)sub.n, fn));
  int kbits = 1, lbits = 1;
  while (kbits < levels) kbits++; /* keys of level l < levels have at most l bits */
  while ((1 << lbits) <= levels) lbits++;
  knode_keys_kernel<<<blocks_for(n_all, 256), 256, 0, s>>>(all, n_all, kbits, bk1, bi1);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: node keys kernel");
  cub::DoubleBuffer<uint64_t> nkb(bk1, bk2);
  cub::DoubleBuffer<int64_t> nib(bi1, bi2);
  RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, nkb, nib, n_all, 0, kbits + lbits, s);
  }));
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_all, RDX_DEVICE, &nodes));
  uint32_t *nlive = NULL;
  int64_t nlive_bits = pts->live_bits;
  rdx_status st = RDX_OK;
  if (op == RDX_SP_INSERT && (int64_t)(b->first_id + (uint64_t)m) > pts->live_bits) {
    nlive_bits = (int64_t)(b->first_id + (uint64_t)m);
    nlive_bits += nlive_bits / 2 + 64;
    size_t old_b = (size_t)(pts->live_bits / 32 + 1) * 4, new_b = (size_t)(nlive_bits / 32 + 1) * 4;
    st = rdx_mem_alloc(ctx, "rdx_points: live ids", (void **)&nlive, new_b, RDX_DEVICE);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemsetAsync(nlive, 0, new_b, s), fn);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(nlive, pts->live, old_b, cudaMemcpyDeviceToDevice, s), fn);
  }
  if (st == RDX_OK) {
    nodes.n = n_all;
    knode_put_kernel<<<blocks_for(n_all, 256), 256, 0, s>>>(all, nib.Current(), n_all, nodes);
    knode_link_kernel<<<blocks_for(n_all, 256), 256, 0, s>>>(nodes, tot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: node kernels");
  }
  if (st == RDX_OK) st = to_host(ctx, &H, tot, 1, fn);
  if (st == RDX_OK && H.bad) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, H.bad);
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  if (nlive) {
    rdx_mem_free(ctx, pts->live);
    pts->live = nlive, pts->live_bits = nlive_bits;
  }
  if (op == RDX_SP_INSERT) set_range_kernel<<<blocks_for(m, 256), 256, 0, s>>>(b->first_id, m, pts->live);
  if (op == RDX_SP_ERASE) clear_bits_kernel<<<blocks_for(m, 256), 256, 0, s>>>(b->ids, b->ids64, m, pts->live);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: live ids kernel");
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = nodes;
  pts->host_stale = 1;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  pts->pool.used = n_new;
  memset(&np, 0, sizeof np);
  pts->sorted = 1;
  pts->kd_levels = levels;
  if (pts->slot) { /* the planned path's id map: a merge moves every point */
    rdx_mem_free(ctx, pts->slot);
    pts->slot = NULL, pts->slot_cap = 0;
  }
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = 0, S->new_leaves = 0;
  f->n_inplace = -1; /* not tracked: a merge moves every point */
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  double t2 = rdx_now_ms();
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  if (rdx_sp_kd_rebuilds(pts, b->m)) return pts->f64 ? rebuild<double>(ctx, pts, b, f) : rebuild<float>(ctx, pts, b, f);
  return pts->f64 ? repair<double>(ctx, pts, b, f) : repair<float>(ctx, pts, b, f);
}
