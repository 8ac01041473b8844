/*
 * update_kd.cu: bulk moves, inserts and erases of a k-d tree on the GPU: G-PICS's repair planned
 * on the device (repair), or for batches of more than half the points a rebuild (rebuild;
 * update.c's rdx_sp_kd_rebuilds picks). Both leave the index as it was when the batch is bad or
 * memory runs out: only scratch and the new pool and nodes are written before the swap.
 *
 * REPAIR. The rule is update.c's planner's, which the CPU runs: a node is a leaf iff it holds at
 * most capacity points or is at max depth; an internal node keeps its split; a leaf that
 * overflows splits at the median of its points ((coordinate, id) order, axis level % 2), as a
 * build would from there; sibling subtrees that fall to capacity merge into their parent. The
 * resulting nodes equal the planner's node for node (test_spatial_update keeps a twin index on
 * the planned path). The pool is kept as the quadtree's merge keeps it: slots [0, n) hold the
 * live points in leaf order, each with a code of its leaf (the leaf's path left-aligned, u32
 * while the tree is at most 32 levels deep), and a live-id bitmap stands in for an id map.
 *  1. krows_kernel, a thread per row: the id checked and claimed; a new point's leaf found by
 *     descent (c <= split goes left) and its code; the batch sorted by code (CUB, only the bits
 *     the tree's depth uses).
 *  2. The merge (merge.cuh) drops the moved and erased points and places the batch among the
 *     survivors in one streaming pass over the pool: leaves stay contiguous.
 *  3. Per old node, its new count (two binary searches over the merged codes) and the rule:
 *     kept nodes, merged leaves (their points are already one run) and the leaves that split
 *     (groups). The host reads the totals here (the mid-way wait): bad ids end the update.
 *  4. The groups' subtrees: their points gathered in (group, id) order and sorted along both
 *     axes within their group on the device while the host plans every level from the counts
 *     (kdtree.cu's kd_plan_make, kd_run_orders, kd_run_levels, which the build shares); then the
 *     levels run without a wait, and the points go back to their group's slots in leaf order.
 *  5. The kept and new nodes sorted into BFS order (CUB), linked, checked (the final wait).
 * Costs on an H200, 16.5M taxi-like f32 points, leaf capacity 1024, against a 13.3 ms build
 * (spatial_update.csv, PROBES.md section 22): 1.4 ms at 1% of the points moved, 2.1 ms at 10%,
 * 7.0 ms at 50%. At 10% about 0.45 ms is the merge; the splitting leaves hold about 1.9M points
 * (11% of the pool): their sorts and levels take about 1 ms.
 *
 * REBUILD. Over the points as they are after the batch: one build plus a few passes over the ids
 * (about 3 ms), and the tree a fresh build gives, balanced again; 18-19 ms on the same points.
 *  1. The ids are checked as on the other paths (check_ids: known, live, not repeated), against
 *     the live-id bitmap (pts->live, made from the pool on the first update) or the planned
 *     path's id map.
 *  2. The live points are scattered to arrays indexed by id, the batch written over them (moves,
 *     inserts at ids id_end.., erases clear a flag), and the flagged ids compacted in id order.
 *  3. rdx_sp_kd_build_cuda builds over those points; their positions are in id order, so ties of
 *     a median go by id as in a fresh build. The new pool's ids are mapped back through the
 *     compacted list, and the new pool, nodes and live-id bitmap replace the old ones.
 */
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>

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
  pts->sorted = 1; /* a build's pool is in leaf order */
  rdx_sp_stats *S = &pts->stats;
  S->splits = S->merges = S->relocated = S->new_leaves = 0;
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = rdx_now_ms() - t1, S->phase_ms[2] = S->phase_ms[3] = 0;
  return RDX_OK;
}

/* ==== the repair: G-PICS's update with the pool kept in leaf order ==== */

/* A node's left-aligned code: its path bits followed by zeros to A bits (A >= its level). Leaves
 * are a prefix-free set, so a leaf's points are the codes in [code, code + 2^(A - level)), and
 * codes ascend in pool order. A slot holds a code in its leaf's range: its leaf's, or after a
 * merge an old leaf's below it, which orders and counts the same. */
__device__ __forceinline__ uint64_t lcode(uint64_t key, int level, int A) { return key << (A - level); }

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
template <typename K>
__global__ void krows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                             const uint32_t *live, uint32_t *claim, rdx_sp_view v, int A, K *keys, uint32_t *rows, ktot *tot) {
  SP_FOR(i, m) {
    if (op != RDX_SP_ERASE) keys[i] = 0, rows[i] = (uint32_t)i;
    if (op != RDX_SP_INSERT) {
      uint64_t id = id_at(ids, ids64, i);
      if (id >= id_end || !bit_get(live, id)) {
        atomicOr(&tot->bad, 1ull);
        continue;
      }
      if (!claim_id(id, claim, &tot->bad)) continue;
    }
    if (op == RDX_SP_ERASE) continue;
    const int64_t u = rdx_sp_kd_find(&v, rdx_sp_at(xy, 2 * i, f64), rdx_sp_at(xy, 2 * i + 1, f64));
    keys[i] = (K)lcode(v.key[u], v.level[u], A);
  }
}

/* Densifying a paged pool: each leaf's code (others sort last) and length. */
__global__ void leaf_codes_kernel(rdx_sp_nodes N, int A, uint64_t *code, int64_t *idx, int64_t *len) {
  SP_FOR(u, N.n) {
    code[u] = N.leaf[u] ? lcode(N.key[u], N.level[u], A) : ~0ull;
    idx[u] = u;
    len[u] = 0;
  }
}
__global__ void leaf_lens_kernel(rdx_sp_nodes N, const int64_t *idx, int64_t *len) {
  SP_FOR(i, N.n) len[i] = N.leaf[idx[i]] ? N.len[idx[i]] : 0;
}
/* The codes of a pool in leaf order (a build's). */
template <typename K>
__global__ void leaf_fill_kernel(rdx_sp_nodes N, int A, K *key) {
  for_leaf_slots(N, [&](int64_t u, int64_t, int64_t s) { key[s] = (K)lcode(N.key[u], N.level[u], A); });
}
/* One warp per leaf (in code order): its points to off[i].., with its code. */
template <typename T, typename K>
__global__ void densify_kernel(rdx_sp_nodes N, const int64_t *idx, const int64_t *off, int A, const T *ox, const T *oy,
                               const uint64_t *oid, T *x, T *y, uint64_t *id, K *key) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < N.n; i += warps) {
    const int64_t u = idx[i];
    if (!N.leaf[u]) continue;
    const K c = (K)lcode(N.key[u], N.level[u], A);
    for (int64_t j = lane; j < N.len[u]; j += 32) {
      const int64_t s = N.fpos[u] + j, d = off[i] + j;
      x[d] = ox[s], y[d] = oy[s], id[d] = oid[s], key[d] = c;
    }
  }
}

/* 3. Per old node: its children's parent, its new count C and first slot A in the merged pool. */
template <typename K>
__global__ void kcount_kernel(rdx_sp_nodes N, const K *keys, int64_t n, int Ab, int64_t *parent, int64_t *A,
                              int64_t *C) {
  SP_FOR(u, N.n) {
    if (u == 0) parent[0] = -1;
    if (!N.leaf[u])
      for (int64_t c = N.fpos[u]; c < N.fpos[u] + N.len[u]; c++) parent[c] = u;
    const int l = N.level[u];
    const int64_t a = lower(keys, 0, n, lcode(N.key[u], l, Ab));
    A[u] = a;
    C[u] = lower(keys, a, n, lcode(N.key[u] + 1, l, Ab)) - a;
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
 * entries (id, position) for the (group, id) order, the group above id_bits when it fits (else
 * a second sort orders the groups). */
__global__ void gpos_kernel(const kgroup *g, const int64_t *gs, int64_t ng, int64_t n, const uint64_t *pid, int id_bits,
                            uint64_t *key, uint32_t *pos) {
  SP_FOR(p, n) {
    const int64_t k = seg_of(gs, ng, p);
    key[p] = pid[g[k].start + (p - gs[k])] | (id_bits < 64 ? (uint64_t)k << id_bits : 0);
    pos[p] = (uint32_t)p;
  }
}
__global__ void group_key_kernel(const uint32_t *pos, int64_t n, const int64_t *gs, int64_t ng, uint64_t *key) {
  SP_FOR(q, n) key[q] = (uint64_t)seg_of(gs, ng, (int64_t)pos[q]);
}
/* Gathered point q (in (group, id) order) is group position pos[q]: its coordinates in its group's
 * frame (x and y swapped at odd levels) for kd_run_orders, the point itself, and its group. */
template <typename T>
__global__ void ggather_kernel(const kgroup *g, const int64_t *gs, int64_t ng, const uint32_t *pos, int64_t n, const T *px,
                               const T *py, const uint64_t *pid, T *fxy, T *tx, T *ty, uint64_t *tid, uint32_t *root) {
  SP_FOR(q, n) {
    const int64_t p = pos[q], k = seg_of(gs, ng, p), s = g[k].start + (p - gs[k]);
    root[q] = (uint32_t)k;
    const T x = px[s], y = py[s];
    const int sw = g[k].level & 1;
    fxy[2 * q] = sw ? y : x, fxy[2 * q + 1] = sw ? x : y;
    tx[q] = x, ty[q] = y, tid[q] = pid[s];
  }
}
/* Final position p of the groups' points (leaf order): the point perm[p] to its group's slot,
 * with the code of its leaf (leaf_of[p]). */
template <typename T, typename K>
__global__ void gscatter_kernel(const kgroup *g, const int64_t *gs, int64_t ng, const uint32_t *perm, int64_t n,
                                const uint32_t *leaf_of, const K *lcodes, const T *tx, const T *ty, const uint64_t *tid, T *x,
                                T *y, uint64_t *id, K *key) {
  SP_FOR(p, n) {
    const int64_t k = seg_of(gs, ng, p), s = g[k].start + (p - gs[k]), q = perm[p];
    x[s] = tx[q], y[s] = ty[q], id[s] = tid[q], key[s] = lcodes[leaf_of[p]];
  }
}

/* The subtrees' split values, from the run, into their nodes. */
__global__ void split_fill_kernel(const int64_t *node, const double *split, int64_t n, rdx_sp_hnode *sub) {
  SP_FOR(k, n) sub[node[k]].split = split[k];
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
/* Internal nodes: both children linked (keys 2 key and 2 key + 1, adjacent in BFS order). */
__global__ void knode_link_kernel(rdx_sp_nodes o, ktot *tot) {
  SP_FOR(i, o.n) {
    if (!o.leaf[i] && link_children(o, i, 1) != 2) atomicOr(&tot->bad, 8ull);
  }
}

/* The repair, for coordinates T and leaf codes K aligned to A bits (u32 and A = min(depth, 32)
 * while the tree is at most 32 levels deep, else u64 and A = depth). */
template <typename T, typename K>
rdx_status repair(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f, int A) {
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

  /* the old pool in leaf order with leaf codes: the index's own after a repair; a build's (in leaf
   * order) with codes from its leaves; else gathered leaf by leaf (after the planned path) */
  rdx_sp_pool src = pts->pool, dense;
  memset(&dense, 0, sizeof dense);
  const int64_t n_old = pts->n;
  pool_hold guard{ctx, &dense};
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
    leaf_codes_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, A, c1, i1, len);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: leaf codes kernel");
    cub::DoubleBuffer<uint64_t> cb(c1, c2);
    cub::DoubleBuffer<int64_t> ib(i1, i2);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, cb, ib, nn, 0, 64, s); }));
    leaf_lens_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, ib.Current(), len);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceScan::ExclusiveSum(tmp, bytes, len, off, nn, s); }));
    RDX_CHECK(rdx_sp_pool_alloc(ctx, n_old, pts->f64, (int)sizeof(K), &dense));
    densify_kernel<T, K><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, ib.Current(), off, A, (const T *)src.x,
                                                             (const T *)src.y, src.id, (T *)dense.x, (T *)dense.y, dense.id,
                                                             (K *)dense.key);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: densify kernel");
    src = dense;
    rdx_trace(ctx, "kd update: pool in leaf order");
  } else if ((src.key == NULL || src.key_bytes != (int)sizeof(K)) && n_old > 0) { /* in leaf order: the codes */
    RDX_CHECK(mm.get((K **)&src.key, (size_t)n_old, fn));
    leaf_fill_kernel<K><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, A, (K *)src.key);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: leaf codes kernel");
  }
  /* 1: the batch */
  ktot *tot;
  mrows<K> r;
  RDX_CHECK(merge_rows_alloc(mm, pts, b, src.id, n_old, &r, fn));
  RDX_CHECK(mm.get(&tot, 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(tot, 0, sizeof *tot, s), fn);
  krows_kernel<K><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->live,
                                                     r.claim, rdx_sp_view_of(pts), A, r.k, r.row, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  if (m_new > 0) { /* codes of leaves at level < levels have their low A - levels bits zero */
    const int lo = pts->kd_levels > 0 && pts->kd_levels <= A ? A - pts->kd_levels : 0;
    RDX_CHECK(sort_batch(mm, m_new, lo, A, &r.k, r.k2, &r.row, r.row2, fn));
  }
  rdx_trace(ctx, "kd update: rows");

  /* 2: the merge into a new pool */
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  pool_hold np_guard{ctx, &np}; /* freed on failure; emptied (kept) on success */
  int64_t n_new = 0;
  RDX_CHECK((merge_into<T, K>)(mm, pts, b, src, n_old, r, &tot->bad, &np, &n_new, fn));
  rdx_trace(ctx, "kd update: merge");

  /* 3: the nodes, and the host's one wait before the writes that matter */
  const K *keys = (const K *)np.key;
  int64_t *parent, *first, *C;
  rdx_sp_hnode *tn;
  kgroup *groups;
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&first, (size_t)nn, fn));
  RDX_CHECK(mm.get(&C, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)nn, fn));
  kcount_kernel<K><<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, keys, n_new, A, parent, first, C);
  kdecide_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, parent, first, C, D, cap, tn, groups, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  ktot H;
  RDX_CHECK(to_host(ctx, &H, tot, 1, fn));
  if (H.bad & 1) return check_ids(ctx, pts, b, mm, f); /* sets f->bad_row */
  if (H.bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an internal check failed before the writes (check %llu)", fn, H.bad);
  rdx_trace(ctx, "kd update: plan");
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, gn = (int64_t)H.gpoints;
  double t1 = rdx_now_ms();

  /* the splitting leaves' subtrees. Their points are gathered in (leaf, id) order and sorted
   * along both axes on the device while the host plans the levels (kd_plan_make); the plan's
   * tables and nodes go up in one copy, the levels run (kd_run_levels), and the points are
   * written back in leaf order in place */
  rdx_sp_hlist sub = {nullptr, 0, 0};
  struct list_guard {
    rdx_context *c;
    rdx_sp_hlist *l;
    ~list_guard() { rdx_sp_hlist_free(c, l); }
  } sub_guard{ctx, &sub};
  int levels = (int)H.levels;
  kd_plan plan(ctx);
  const rdx_sp_hnode *d_sub = NULL; /* the subtrees' nodes, uploaded */
  const int64_t *d_snode = NULL;    /* the node of each split value */
  double *d_split = NULL;
  if (ng > 0) {
    hbuf<kgroup> hg(ctx);
    hbuf<int64_t> hs(ctx);
    hbuf<kd_root> roots(ctx);
    RDX_CHECK(hg.resize(ng));
    RDX_CHECK(hs.resize(ng));
    RDX_CHECK(roots.resize(ng));
    RDX_CHECK(to_host(ctx, hg.data(), groups, (size_t)ng, fn));
    std::sort(hg.data(), hg.data() + ng, [](const kgroup &a, const kgroup &b) { return a.start < b.start; });
    for (int64_t g = 0, p = 0; g < ng; g++) {
      hs[g] = p;
      roots[g] = kd_root{p, hg[g].count, hg[g].key, hg[g].level};
      p += hg[g].count;
    }
    kgroup *dg;
    int64_t *gs;
    uint64_t *k1, *k2, *tid;
    uint32_t *p1, *p2, *perm, *sid;
    T *fxy, *tx, *ty;
    RDX_CHECK(mm.get(&dg, (size_t)ng, fn));
    RDX_CHECK(mm.get(&gs, (size_t)ng, fn));
    RDX_CHECK(mm.get(&k1, (size_t)gn, fn));
    RDX_CHECK(mm.get(&k2, (size_t)gn, fn));
    RDX_CHECK(mm.get(&p1, (size_t)gn, fn));
    RDX_CHECK(mm.get(&p2, (size_t)gn, fn));
    RDX_CHECK(mm.get(&perm, (size_t)gn, fn));
    RDX_CHECK(mm.get(&sid, (size_t)gn, fn));
    RDX_CHECK(mm.get(&fxy, (size_t)(2 * gn), fn));
    RDX_CHECK(mm.get(&tx, (size_t)gn, fn));
    RDX_CHECK(mm.get(&ty, (size_t)gn, fn));
    RDX_CHECK(mm.get(&tid, (size_t)gn, fn));
    RDX_CHECK(to_device(ctx, dg, hg.data(), (size_t)ng, fn)); /* the stream is idle here */
    RDX_CHECK(to_device(ctx, gs, hs.data(), (size_t)ng, fn));
    /* (group, id) order: by id, then stably by group */
    int id_bits = 1, g_bits = 0;
    while (id_bits < 64 && ((uint64_t)1 << id_bits) < pts->id_end + (uint64_t)m) id_bits++;
    while (((int64_t)1 << g_bits) < ng) g_bits++;
    const int packed = g_bits + id_bits <= 64; /* (group, id) in one key */
    gpos_kernel<<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, gn, np.id, packed ? id_bits : 64, k1, p1);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group kernel");
    cub::DoubleBuffer<uint64_t> kb(k1, k2);
    cub::DoubleBuffer<uint32_t> pb(p1, p2);
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, pb, gn, 0, packed ? id_bits + g_bits : id_bits, s);
    }));
    if (ng > 1 && !packed) {
      group_key_kernel<<<blocks_for(gn, 256), 256, 0, s>>>(pb.Current(), gn, gs, ng, kb.Current());
      SP_LAUNCH_CHECK(ctx, "rdx_points update: group key kernel");
      RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, pb, gn, 0, g_bits, s); }));
    }
    ggather_kernel<T><<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, pb.Current(), gn, (const T *)np.x, (const T *)np.y, np.id,
                                                         fxy, tx, ty, tid, sid);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group gather kernel");
    kd_lists ls;
    RDX_CHECK(kd_run_orders(mm, fxy, pts->f64, gn, ng, sid, &ls));

    /* meanwhile the plan; the new leaves' codes in position order, and their slots */
    RDX_CHECK(kd_plan_make(ctx, roots.data(), ng, D, cap, &sub, &plan));
    const int64_t nlv = plan.leaf_node.size();
    hbuf<K> hlc(ctx);
    RDX_CHECK(hlc.resize(nlv));
    for (int64_t i = 0; i < nlv; i++) {
      const rdx_sp_hnode &h = sub.v[plan.leaf_node[i]];
      hlc[i] = h.level <= A ? (K)(h.key << (A - h.level)) : 0; /* past A: dropped below */
    }
    for (int64_t i = 0; i < sub.n; i++) {
      rdx_sp_hnode &h = sub.v[i];
      if (h.level + 1 > levels) levels = h.level + 1;
      if (!h.leaf) continue;
      const int64_t g = std::upper_bound(hs.data(), hs.data() + ng, h.fpos) - hs.data() - 1;
      h.fpos = hg[g].start + (h.fpos - hs[g]);
    }
    /* one upload (it waits for the sorts) */
    const size_t parts[4] = {(size_t)plan.tab.size() * 8, (size_t)nlv * sizeof(K), (size_t)plan.split_node.size() * 8,
                             (size_t)sub.n * sizeof *sub.v};
    const void *from[4] = {plan.tab.data(), hlc.data(), plan.split_node.data(), sub.v};
    size_t off[4], total = 0;
    for (int i = 0; i < 4; i++) off[i] = total, total += (parts[i] + 15) & ~(size_t)15;
    hbuf<uint8_t> blob(ctx);
    RDX_CHECK(blob.resize((int64_t)total));
    for (int i = 0; i < 4; i++)
      if (parts[i]) memcpy(blob.data() + off[i], from[i], parts[i]);
    uint8_t *dblob;
    RDX_CHECK(mm.get(&dblob, total, fn));
    RDX_CHECK(mm.get(&d_split, (size_t)plan.split_node.size() + 1, fn));
    RDX_CHECK(to_device(ctx, dblob, blob.data(), total, fn));
    rdx_trace(ctx, "kd update: split points sorted, levels planned");
    const int64_t *d_tab = (const int64_t *)(dblob + off[0]);
    const K *lc = (const K *)(dblob + off[1]);
    d_snode = (const int64_t *)(dblob + off[2]), d_sub = (const rdx_sp_hnode *)(dblob + off[3]);
    RDX_CHECK(kd_run_levels(mm, fxy, pts->f64, gn, plan, d_tab, &ls, sid, perm, d_split));
    gscatter_kernel<T, K><<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, perm, gn, sid, lc, tx, ty, tid, (T *)np.x, (T *)np.y,
                                                             np.id, (K *)np.key);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: group scatter kernel");
    if (rdx_trace_on())
      fprintf(stderr, "[raydex trace] kd update: %lld groups, %lld points, %lld subtree nodes, %lld levels\n", (long long)ng,
              (long long)gn, (long long)sub.n, (long long)plan.rounds.size() / 3);
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
  if (sub.n > 0) {
    RDX_CUDA(ctx, cudaMemcpyAsync(all + n_base, d_sub, (size_t)sub.n * sizeof *tn, cudaMemcpyDeviceToDevice, s), fn);
    const int64_t n_split = (int64_t)plan.split_node.size();
    if (n_split > 0) split_fill_kernel<<<blocks_for(n_split, 256), 256, 0, s>>>(d_snode, d_split, n_split, all + n_base);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: split values kernel");
  }
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
  rdx_trace(ctx, "kd update: node sort");
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_all, RDX_DEVICE, &nodes));
  uint32_t *nlive = NULL;
  int64_t nlive_bits = 0;
  rdx_status st = live_grow(ctx, pts, b, &nlive, &nlive_bits, fn);
  if (st == RDX_OK) {
    nodes.n = n_all;
    knode_put_kernel<<<blocks_for(n_all, 256), 256, 0, s>>>(all, nib.Current(), n_all, nodes);
    knode_link_kernel<<<blocks_for(n_all, 256), 256, 0, s>>>(nodes, tot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: node kernels");
  }
  if (st == RDX_OK) st = to_host(ctx, &H, tot, 1, fn);
  rdx_trace(ctx, "kd update: nodes");
  if (st == RDX_OK && H.bad) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, H.bad);
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  RDX_CHECK(merge_swap(ctx, pts, b, nlive, nlive_bits, nodes, &np, n_new));
  pts->kd_levels = levels;
  if (levels - 1 > A) { /* leaves too deep for these codes: the next repair makes u64 ones */
    rdx_mem_free(ctx, pts->pool.key);
    pts->pool.key = NULL, pts->pool.key_bytes = 0;
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
  const int D = pts->depth;
  if (D <= 32 || (pts->kd_levels > 0 && pts->kd_levels - 1 <= 32)) {
    const int A = D < 32 ? D : 32;
    return pts->f64 ? repair<double, uint32_t>(ctx, pts, b, f, A) : repair<float, uint32_t>(ctx, pts, b, f, A);
  }
  return pts->f64 ? repair<double, uint64_t>(ctx, pts, b, f, D) : repair<float, uint64_t>(ctx, pts, b, f, D);
}
