/*
 * update_kd.cu: bulk moves, inserts and erases of a k-d tree on the GPU: the repair (G-PICS
 * Section 5 in the dense layout). The rule is the CPU planner's (update_cpu.c), and the nodes come
 * out equal to its node for node: a node is a leaf by rdx_sp_leaf; an internal node keeps its
 * split; a leaf that overflows splits at the median of its points ((coordinate, id) order, axis
 * level % 2), as a build would from there; subtrees that fall to a leaf merge. The pool holds the
 * live points in leaf order, slots [0, n), each with a code of its leaf (the leaf's path
 * left-aligned, u32 while the tree is at most 32 levels deep), and a bit per live id stands in for
 * an id map. Batches of more than half the points rebuild instead (update.c), which leaves the
 * tree balanced again. One batch:
 *  1. krows_kernel, a thread per row: the id checked and claimed; a new point checked, its leaf
 *     found by descent (c <= split goes left) and its code; the batch sorted by code (CUB, only
 *     the bits the tree's depth uses).
 *  2. The merge (merge.cuh) drops the moved and erased points and places the batch among the
 *     survivors in one pass over the pool: leaves stay contiguous.
 *  3. Per old node, its new count (two binary searches over the merged codes) and the rule: kept
 *     nodes, merged leaves (their points are one run already) and the leaves that split (groups).
 *     The host reads the totals (bad input ends the update here, nothing changed).
 *  4. The groups' subtrees: their points gathered in (group, id) order and sorted along both axes
 *     on the device while the host plans every level from the counts (kdtree.cu's kd_plan_make,
 *     kd_run_orders, kd_run_levels, which the build shares); the levels run without a wait, and
 *     the points go back to their group's slots in leaf order.
 *  5. The kept and new nodes in BFS order (update.cuh), checked; then the swap.
 */
#include <algorithm>

#include "spatial/merge.cuh"

namespace {

using namespace rdx_sp;

/* A node's left-aligned code: its path bits followed by zeros to A bits (A >= its level). Leaves
 * are a prefix-free set, so a leaf's points are the codes in [code, code + 2^(A - level)), and
 * codes ascend in pool order. A slot holds a code in its leaf's range: its leaf's, or after a
 * merge an old leaf's below it, which orders and counts the same. */
__device__ __forceinline__ uint64_t lcode(uint64_t key, int level, int A) { return key << (A - level); }

/* Totals the host reads (one copy). */
struct ktot {
  unsigned long long bad;   /* 1 a bad id (check_ids finds which); 4 a bad point (points.c's scan
                               finds which); internal checks: 2 a merged point past the pool, 32
                               nodes out of BFS order or without their children */
  unsigned long long nodes, groups, gpoints, splits, merges, levels, subused;
};

/* A leaf that splits: its `count` points are new pool slots [start, start + count). */
struct kgroup {
  int64_t start, count;
  uint64_t key;
  int32_t level, pad;
};

/* 1. One thread per batch row: the id checked against the live-id bitmap and claimed (a repeated
 * id is an error), and for moves and inserts the point checked and the (leaf code, row) sort
 * entry of the leaf it goes to (c <= split goes left, as on every path). */
template <typename K>
__global__ void krows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                             const uint32_t *live, uint32_t *claim, int check_xy, rdx_sp_view v, int A, K *keys,
                             uint32_t *rows, ktot *tot) {
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
    if (!row_point(xy, f64, i, check_xy, v.g, &x, &y)) {
      atomicOr(&tot->bad, 4ull);
      continue;
    }
    const int64_t u = rdx_sp_kd_find(&v, x, y);
    keys[i] = (K)lcode(v.key[u], v.level[u], A);
  }
}

/* The codes of a pool in leaf order (a build's). */
template <typename K>
__global__ void leaf_fill_kernel(rdx_sp_nodes N, int A, K *key) {
  for_leaf_slots(N, [&](int64_t u, int64_t, int64_t s) { key[s] = (K)lcode(N.key[u], N.level[u], A); });
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

/* A node the decisions keep, at old node u's place; kidx[u] >= 0 marks it (bfs_order::compact). */
__device__ void put_knode(rdx_sp_hnode *tn, int64_t *kidx, int64_t u, ktot *tot, int level, int leaf, int64_t c, int64_t fpos,
                          double split, uint64_t key) {
  rdx_sp_hnode h;
  h.key = key, h.level = level, h.leaf = leaf, h.count = c, h.split = split;
  h.len = leaf ? c : 0, h.room = h.len, h.fpos = leaf ? fpos : 0;
  tn[u] = h, kidx[u] = (int64_t)agg_add(&tot->nodes, 1ull);
  atomicMax(&tot->levels, (unsigned long long)level + 1);
}

/* One thread per old node, by the leaf rule: a node below a new leaf is no node; a leaf stays one
 * (its points are the merged run) or splits (a group); an internal node becomes a leaf (a merge:
 * its subtree's points are one run already) or stays, with its split. Empty nodes stay (a k-d
 * node always has both children). */
__global__ void kdecide_kernel(rdx_sp_nodes N, const int64_t *parent, const int64_t *A, const int64_t *C, int D, int64_t cap,
                               rdx_sp_hnode *tn, int64_t *kidx, kgroup *groups, ktot *tot) {
  SP_FOR(u, N.n) {
    kidx[u] = -1;
    if (leaf_above(parent, u, [&](int64_t a) { return rdx_sp_leaf(C[a], N.level[a], D, cap); }) >= 0) continue;
    const int l = N.level[u];
    const int64_t c = C[u];
    if (rdx_sp_leaf(c, l, D, cap)) {
      put_knode(tn, kidx, u, tot, l, 1, c, A[u], 0.0, N.key[u]);
      if (!N.leaf[u]) agg_add(&tot->merges, 1ull);
    } else if (N.leaf[u]) {
      kgroup g;
      g.start = A[u], g.count = c, g.key = N.key[u], g.level = l, g.pad = 0;
      groups[agg_add(&tot->groups, 1ull)] = g;
      agg_add(&tot->gpoints, (unsigned long long)c);
      agg_add(&tot->splits, 1ull);
    } else {
      put_knode(tn, kidx, u, tot, l, 0, c, 0, N.split[u], N.key[u]);
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

/* The splitting leaves' subtrees (groups ng, gn points, in the new pool np): what they leave. */
struct ksub {
  rdx_sp_hnode *sub = nullptr;    /* their nodes, on the device (split values filled by the caller) */
  const int64_t *snode = nullptr; /* the node of each split value */
  double *split = nullptr;        /* the split values */
  int levels = 0;                 /* 1 + the deepest level, at least the kept nodes' */
};

/* Step 4: the groups' points gathered in (group, id) order and sorted along both axes on the
 * device while the host plans the levels (kd_plan_make); the plan's tables and nodes go up in one
 * copy, the levels run (kd_run_levels), and the points go back to their group's slots of np in
 * leaf order, with their leaves' codes. sub and plan receive the subtrees' nodes and plan. */
template <typename T, typename K>
rdx_status split_groups(scratch &mm, rdx_points *pts, const rdx_sp_batch *b, const kgroup *groups, int64_t ng, int64_t gn,
                        int A, rdx_sp_pool &np, rdx_sp_hlist &sub, kd_plan &plan, ksub *o) {
  rdx_context *ctx = mm.ctx;
  const char *fn = "rdx_points update: k-d splits";
  cudaStream_t s = rdx_stream(ctx);
  const int64_t m = b->m;
  hbuf<kgroup> hg(ctx);
  hbuf<int64_t> hs(ctx);
  hbuf<kd_root> roots(ctx);
  RDX_CHECK(hg.resize(ng));
  RDX_CHECK(hs.resize(ng));
  RDX_CHECK(roots.resize(ng));
  RDX_CHECK(to_host(ctx, hg.data(), groups, (size_t)ng, fn));
  std::sort(hg.data(), hg.data() + ng, [](const kgroup &x, const kgroup &y) { return x.start < y.start; });
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
  RDX_CHECK(kd_plan_make(ctx, roots.data(), ng, pts->depth, pts->cap, &sub, &plan));
  const int64_t nlv = plan.leaf_node.size();
  hbuf<K> hlc(ctx);
  RDX_CHECK(hlc.resize(nlv));
  for (int64_t i = 0; i < nlv; i++) {
    const rdx_sp_hnode &h = sub.v[plan.leaf_node[i]];
    hlc[i] = h.level <= A ? (K)(h.key << (A - h.level)) : 0; /* past A: dropped below */
  }
  for (int64_t i = 0; i < sub.n; i++) {
    rdx_sp_hnode &h = sub.v[i];
    if (h.level + 1 > o->levels) o->levels = h.level + 1;
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
  RDX_CHECK(mm.get(&o->split, (size_t)plan.split_node.size() + 1, fn));
  RDX_CHECK(to_device(ctx, dblob, blob.data(), total, fn));
  rdx_trace(ctx, "kd update: split points sorted, levels planned");
  const int64_t *d_tab = (const int64_t *)(dblob + off[0]);
  const K *lc = (const K *)(dblob + off[1]);
  o->snode = (const int64_t *)(dblob + off[2]), o->sub = (rdx_sp_hnode *)(dblob + off[3]);
  RDX_CHECK(kd_run_levels(mm, fxy, pts->f64, gn, plan, d_tab, &ls, sid, perm, o->split));
  gscatter_kernel<T, K><<<blocks_for(gn, 256), 256, 0, s>>>(dg, gs, ng, perm, gn, sid, lc, tx, ty, tid, (T *)np.x, (T *)np.y,
                                                           np.id, (K *)np.key);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: group scatter kernel");
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: group scatter kernel");
}

/* The repair, for coordinates T and leaf codes K aligned to A bits (u32 and A = min(depth, 32)
 * while the tree is at most 32 levels deep, else u64 and A = depth). */
template <typename T, typename K>
rdx_status repair(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, int A) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, cap = pts->cap, n_old = pts->n;
  const int D = pts->depth, op = b->op;
  const int64_t m_new = op == RDX_SP_ERASE ? 0 : m;
  b->bad_row = -1;
  if (m >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: a batch of %lld rows", fn, (long long)m);
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "kd repair: start");

  /* the pool in leaf order with its leaves' codes: a build's, or one whose codes outgrew u32,
   * gets them from its leaves */
  rdx_sp_pool src = pts->pool;
  if ((src.key == NULL || src.key_bytes != (int)sizeof(K)) && n_old > 0) {
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
                                                     r.claim, b->check_xy, rdx_sp_view_of(pts), A, r.k, r.row, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  if (m_new > 0) { /* codes of leaves at level < levels have their low A - levels bits zero */
    const int lo = pts->kd_levels > 0 && pts->kd_levels <= A ? A - pts->kd_levels : 0;
    RDX_CHECK(sort_batch(mm, m_new, lo, A, &r.k, r.k2, &r.row, r.row2, fn));
  }

  /* 2: the merge into a new pool */
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  pool_hold np_guard{ctx, &np}; /* freed on failure; emptied (kept) on success */
  int64_t n_new = 0;
  RDX_CHECK((merge_into<T, K>)(mm, pts, b, src, n_old, r, &tot->bad, &np, &n_new, fn));
  rdx_trace(ctx, "kd repair: rows, merge");

  /* 3: the nodes, and the host's one wait before the writes that matter */
  const K *keys = (const K *)np.key;
  int64_t *parent, *first, *C, *kidx;
  rdx_sp_hnode *tn, *kept;
  kgroup *groups;
  RDX_CHECK(mm.get(&kidx, (size_t)nn, fn));
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&first, (size_t)nn, fn));
  RDX_CHECK(mm.get(&C, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)nn, fn));
  kcount_kernel<K><<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, keys, n_new, A, parent, first, C);
  kdecide_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, parent, first, C, D, cap, tn, kidx, groups, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  RDX_CHECK(bfs_order<rdx_sp_hnode>::compact(mm, tn, kidx, nn, &kept, &tot->nodes, fn));
  ktot H;
  RDX_CHECK(to_host(ctx, &H, tot, 1, fn));
  if (H.bad & 4) {
    b->bad_xy = 1;
    return RDX_OK;
  }
  if (H.bad & 1) return check_ids(ctx, pts, b, mm);
  if (H.bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an internal check failed before the writes (check %llu)", fn, H.bad);
  rdx_trace(ctx, "kd repair: plan");
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups;
  double t1 = rdx_now_ms();

  /* 4: the subtrees */
  rdx_sp_hlist sub = {nullptr, 0, 0};
  struct list_guard {
    rdx_context *c;
    rdx_sp_hlist *l;
    ~list_guard() { rdx_sp_hlist_free(c, l); }
  } sub_guard{ctx, &sub};
  kd_plan plan(ctx);
  ksub o;
  o.levels = (int)H.levels;
  if (ng > 0) RDX_CHECK((split_groups<T, K>)(mm, pts, b, groups, ng, (int64_t)H.gpoints, A, np, sub, plan, &o));
  const int64_t n_split = (int64_t)plan.split_node.size();
  if (n_split > 0) split_fill_kernel<<<blocks_for(n_split, 256), 256, 0, s>>>(o.snode, o.split, n_split, o.sub);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: split values kernel");
  rdx_trace(ctx, "kd repair: split subtrees");

  /* 5: the new nodes in BFS order, linked, checked; then the swap */
  const int64_t n_all = n_base + sub.n;
  bfs_order<rdx_sp_hnode> order;
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  uint32_t *nlive = NULL;
  int64_t nlive_bits = 0;
  RDX_CHECK(order.alloc(mm, sub.n, o.levels - 1, 1, fn));
  H.subused = (unsigned long long)sub.n;
  RDX_CHECK(to_device(ctx, &tot->subused, &H.subused, 1, fn));
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_all, RDX_DEVICE, &nodes));
  rdx_status st = live_grow(ctx, pts, b, &nlive, &nlive_bits, fn);
  const bfs_lists<rdx_sp_hnode> nl = {kept, o.sub, &tot->nodes, &tot->subused};
  if (st == RDX_OK) st = order.run(mm, nl, n_base, &nodes, &tot->bad, fn);
  if (st == RDX_OK) st = to_host(ctx, &H, tot, 1, fn);
  if (st == RDX_OK && H.bad) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, H.bad);
  rdx_trace(ctx, "kd repair: nodes");
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  RDX_CHECK(merge_swap(ctx, pts, b, nlive, nlive_bits, nodes, &np, n_new));
  pts->kd_levels = o.levels;
  if (o.levels - 1 > A) { /* leaves too deep for these codes: the next repair makes u64 ones */
    rdx_mem_free(ctx, pts->pool.key);
    pts->pool.key = NULL, pts->pool.key_bytes = 0;
  }
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = 0, S->new_leaves = 0;
  b->in_place = -1; /* a merge moves every point */
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = 0, S->phase_ms[2] = rdx_now_ms() - t1, S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_repair_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  const int D = pts->depth;
  rdx_status st;
  if (D <= 32 || (pts->kd_levels > 0 && pts->kd_levels - 1 <= 32)) {
    const int A = D < 32 ? D : 32;
    st = pts->f64 ? repair<double, uint32_t>(ctx, pts, b, A) : repair<float, uint32_t>(ctx, pts, b, A);
  } else {
    st = pts->f64 ? repair<double, uint64_t>(ctx, pts, b, D) : repair<float, uint64_t>(ctx, pts, b, D);
  }
  rdx_trace_flush(ctx);
  return st;
}
