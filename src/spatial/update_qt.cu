/*
 * update_qt.cu: bulk moves, inserts and erases of a dense quadtree on the GPU: the merge. The
 * pool keeps what a bottom-up build leaves, slots [0, n) holding the live points in Morton order
 * with their codes, and a bit per live id (pts->live) stands in for an id map. One batch:
 *  1. rows_kernel, a thread per row: its id checked and claimed (a repeated id is an error), a new
 *     point checked and coded; the batch's codes sorted (CUB).
 *  2. The merge (merge.cuh) drops the claimed slots and places the batch among the survivors in
 *     one streaming pass over the pool, so its cost hardly depends on the batch.
 *  3. The nodes (update_qt.cuh): per old node its new count, two binary searches over the merged
 *     codes; the decisions by the leaf rule; the host reads the totals (bad input ends the update
 *     here, nothing changed); the groups' subtrees; the BFS order. Then the new pool, nodes and
 *     live bits replace the old.
 * The nodes equal a fresh build's with the same box. rdx_sp_qt_dense_cuda gives a top-down
 * build's pool this layout.
 */
#include "spatial/merge.cuh"
#include "spatial/update_qt.cuh"

namespace {

using namespace rdx_sp;

/* Every move or insert row gets a sort entry (code, row), bad rows too (the batch is then dropped
 * before anything of the index changes). */
template <typename K>
__global__ void rows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                            const uint32_t *live, uint32_t *claim, int check_xy, rdx_sp_grid g, K *keys, uint32_t *rows,
                            qtot *tot) {
  SP_FOR(i, m) {
    if (op != RDX_SP_ERASE) keys[i] = 0, rows[i] = (uint32_t)i;
    if (op != RDX_SP_INSERT) {
      uint64_t id = id_at(ids, ids64, i);
      if (rdx_sp_id_state(id, id_end, id < id_end && bit_get(live, id))) {
        atomicOr(&tot->bad, 1ull);
        continue;
      }
      if (!claim_id(id, claim, &tot->bad)) continue;
    }
    double x, y;
    if (op == RDX_SP_ERASE) continue;
    if (row_point(xy, f64, i, check_xy, g, &x, &y)) keys[i] = (K)rdx_sp_point_key(&g, x, y);
    else atomicOr(&tot->bad, 4ull);
  }
}

/* Per old node: its parent, the quadrants that have a child, and its new count and first position
 * among the merged codes. */
template <typename K>
__global__ void count_kernel(rdx_sp_nodes N, const K *keys, int64_t n, int D, int64_t *parent, uint8_t *have, int64_t *A,
                             int64_t *C) {
  SP_FOR(u, N.n) {
    node_links(N, u, parent, have);
    int sh = 2 * (D - (int)N.level[u]);
    int64_t a = lower(keys, 0, n, N.key[u] << sh);
    A[u] = a;
    C[u] = lower(keys, a, n, (N.key[u] + 1) << sh) - a;
  }
}

/* One thread per old node, by the leaf rule: a node below a new leaf, or without points (the
 * root aside), is no node; a leaf stays one or splits (a group); an internal node becomes a leaf
 * (a merge) or stays, its quadrants without a node that receive points becoming groups. */
template <typename K>
__global__ void decide_kernel(rdx_sp_nodes N, const K *keys, const int64_t *parent, const uint8_t *have, const int64_t *A,
                              const int64_t *C, int D, int64_t cap, qnode *tn, int64_t *kidx, qgroup *groups, qtot *tot) {
  SP_FOR(u, N.n) {
    kidx[u] = -1;
    const int64_t c = C[u];
    if (c == 0 && u != 0) continue;
    if (leaf_above(parent, u, [&](int64_t a) { return rdx_sp_leaf(C[a], N.level[a], D, cap); }) >= 0) continue;
    const int l = N.level[u];
    const uint64_t key = N.key[u];
    if (rdx_sp_leaf(c, l, D, cap)) {
      push_node(tn, tot, make_node(key, l, 1, c, A[u]), kidx, u);
      if (!N.leaf[u]) agg_add(&tot->merges, 1ull);
    } else if (N.leaf[u]) {
      push_group(groups, tot, key, l, c, D, cap);
      agg_add(&tot->splits, 1ull);
    } else {
      push_node(tn, tot, make_node(key, l, 0, c, 0), kidx, u);
      push_new_quadrants(N, u, have, keys, A[u], A[u] + c, D, cap, groups, tot, -1);
    }
  }
}

template <typename T, typename K>
rdx_status merge_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, cap = pts->cap, n_old = pts->n;
  const int D = pts->depth, op = b->op;
  const int64_t m_new = op == RDX_SP_ERASE ? 0 : m;
  b->bad_row = -1;
  if (m >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: a batch of %lld rows", fn, (long long)m);
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "qt merge: start");

  /* 1: the batch */
  qtot *tot;
  mrows<K> r;
  RDX_CHECK(merge_rows_alloc(mm, pts, b, pts->pool.id, n_old, &r, fn));
  RDX_CHECK(mm.get(&tot, 1, fn));
  RDX_CUDA(ctx, sp_fill(tot, sizeof *tot, 0, s), fn);
  rows_kernel<K><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->live, r.claim,
                                                    b->check_xy, pts->grid, r.k, r.row, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  RDX_CHECK(sort_batch(mm, m_new, 0, 2 * D, &r.k, r.k2, &r.row, r.row2, fn));
  rdx_trace(ctx, "qt merge: rows, batch sort");

  /* 2: the merge into a new pool */
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  pool_hold np_guard{ctx, &np}; /* freed on failure; emptied (kept) on success */
  int64_t n_new = 0;
  RDX_CHECK((merge_into<T, K>)(mm, pts, b, pts->pool, n_old, r, &tot->bad, &np, &n_new, fn));
  rdx_trace(ctx, "qt merge: merge");

  /* 3: the nodes */
  const K *keys = (const K *)np.key;
  int64_t *parent, *A, *C, *kidx;
  uint8_t *have;
  qnode *tn;
  qgroup *groups;
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&A, (size_t)nn, fn));
  RDX_CHECK(mm.get(&C, (size_t)nn, fn));
  RDX_CHECK(mm.get(&kidx, (size_t)nn, fn));
  RDX_CHECK(mm.get(&have, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)(4 * nn), fn));
  count_kernel<K><<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, keys, n_new, D, parent, have, A, C);
  decide_kernel<K><<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, keys, parent, have, A, C, D, cap, tn, kidx, groups, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  qnode *kept;
  RDX_CHECK(bfs_order<qnode>::compact(mm, tn, kidx, nn, &kept, &tot->nodes, fn));
  qtot H;
  int go;
  RDX_CHECK(read_plan(ctx, pts, b, mm, tot, &H, &go, fn)); /* the host's wait */
  rdx_trace(ctx, "qt merge: plan");
  if (!go) return RDX_OK;
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, n_sort = n_base + (int64_t)H.subnodes;
  double t1 = rdx_now_ms();

  /* the memory the rest needs, then the subtrees and the BFS order; only device errors can fail
   * after the allocations */
  qnode *sub;
  bfs_order<qnode> O;
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  uint32_t *nlive = NULL;
  int64_t nlive_bits = 0;
  RDX_CHECK(mm.get(&sub, (size_t)(n_sort - n_base) + 1, fn));
  RDX_CHECK(O.alloc(mm, n_sort - n_base, D, 0, fn));
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_sort, RDX_DEVICE, &nodes));
  rdx_status st = live_grow(ctx, pts, b, &nlive, &nlive_bits, fn);
  double t2 = rdx_now_ms();
  if (st == RDX_OK && ng > 0) {
    st = rdx_cuda_ok(ctx, sp_fill(sub, (size_t)(n_sort - n_base) * sizeof(qnode), 0xFFFFFFFFu, s), fn);
    const sublists<K> L = {keys, n_new, nullptr, 0, 0, 0, 0, pgfree{}};
    if (st == RDX_OK) split_tree_kernel<K><<<blocks_for(ng, 1), SPLIT_THREADS, 0, s>>>(groups, ng, L, D, cap, sub, tot);
    if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: split tree kernel");
  }
  const bfs_lists<qnode> nl = {kept, sub, &tot->nodes, &tot->subused};
  if (st == RDX_OK) st = O.run(mm, nl, n_base, &nodes, &tot->bad, fn);
  if (st == RDX_OK) st = read_nodes(ctx, n_base, &nodes, tot, &H, fn);
  rdx_trace(ctx, "qt merge: nodes");
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  RDX_CHECK(merge_swap(ctx, pts, b, nlive, nlive_bits, nodes, &np, n_new));
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = 0, S->new_leaves = (int64_t)H.new_leaves;
  b->in_place = -1; /* a merge moves every point */
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = rdx_now_ms() - t2, S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}

/* ---- the dense layout of a top-down build ---- */

__global__ void slots_kernel(int64_t n, int64_t *slot) {
  SP_FOR(i, n) slot[i] = i;
}
template <typename T, typename K>
__global__ void gather_kernel(const int64_t *slot, const K *k, int64_t n, const T *ox, const T *oy, const uint64_t *oid, T *x,
                              T *y, uint64_t *id, K *key) {
  SP_FOR(i, n) {
    const int64_t s = slot[i];
    x[i] = ox[s], y[i] = oy[s], id[i] = oid[s], key[i] = k[i];
  }
}
/* A leaf's points are a run of the Morton-ordered pool: its first slot is the first code of its
 * cell. */
template <typename K>
__global__ void leaf_fpos_kernel(rdx_sp_nodes N, const K *keys, int64_t n, int D) {
  SP_FOR(u, N.n) if (N.leaf[u]) N.fpos[u] = lower(keys, 0, n, N.key[u] << (2 * (D - (int)N.level[u])));
}

template <typename T, typename K>
rdx_status to_morton(rdx_context *ctx, rdx_points *pts) {
  const char *fn = "rdx_points_build: Morton order";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx);
  const int64_t n = pts->n;
  int64_t *slot, *slot2;
  K *k2;
  RDX_CHECK(mm.get(&slot, (size_t)n, fn));
  RDX_CHECK(mm.get(&slot2, (size_t)n, fn));
  RDX_CHECK(mm.get(&k2, (size_t)n, fn));
  slots_kernel<<<blocks_for(n, 256), 256, 0, s>>>(n, slot);
  cub::DoubleBuffer<K> kb((K *)pts->pool.key, k2);
  cub::DoubleBuffer<int64_t> sb(slot, slot2);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceRadixSort::SortPairs(t, b, kb, sb, n, 0, 2 * pts->depth, s); }));
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, n, pts->f64, (int)sizeof(K), &np));
  gather_kernel<T, K><<<blocks_for(n, 256), 256, 0, s>>>(sb.Current(), kb.Current(), n, (const T *)pts->pool.x,
                                                         (const T *)pts->pool.y, pts->pool.id, (T *)np.x, (T *)np.y, np.id,
                                                         (K *)np.key);
  leaf_fpos_kernel<K><<<blocks_for(pts->nodes.n, 256), 256, 0, s>>>(pts->nodes, (const K *)np.key, n, pts->depth);
  rdx_status st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn);
  if (st != RDX_OK) { /* the nodes' fpos may be new: the caller drops the index */
    rdx_sp_pool_free(ctx, &np);
    return st;
  }
  np.used = n;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_sp_qt_merge_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  rdx_status st;
  if (pts->f64) st = pts->key64 ? merge_update<double, uint64_t>(ctx, pts, b) : merge_update<double, uint32_t>(ctx, pts, b);
  else st = pts->key64 ? merge_update<float, uint64_t>(ctx, pts, b) : merge_update<float, uint32_t>(ctx, pts, b);
  rdx_trace_flush(ctx);
  return st;
}

extern "C" rdx_status rdx_sp_qt_dense_cuda(rdx_context *ctx, rdx_points *pts) {
  if (pts->n == 0) return RDX_OK;
  if (pts->f64) return pts->key64 ? to_morton<double, uint64_t>(ctx, pts) : to_morton<double, uint32_t>(ctx, pts);
  return pts->key64 ? to_morton<float, uint64_t>(ctx, pts) : to_morton<float, uint32_t>(ctx, pts);
}
