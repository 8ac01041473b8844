/*
 * kdtree.cu: the k-d tree on the GPU, node for node the CPU build's (kdtree.c): median splits
 * by (coordinate, id) on alternating axes.
 *
 * One CUB radix sort per axis of the order-preserving coordinate bits (stable, positions
 * ascending, so ties go by id) gives the points in order along that axis (list L[axis]) and each
 * point's rank. From then on both lists hold the same segments (a node's points), each list in
 * its axis's order within every segment, as the classic presorted k-d build keeps them. A level
 * splitting on axis a needs no sort: a segment's first floor(c / 2) points in L[a] are its left
 * child. The other list is partitioned stably (a point goes left iff its rank on a is below the
 * rank of the first right point): one flag pass, one scan and one scatter. A leaf keeps its
 * points in the order of its parent's axis (the list that split it), the root leaf in input
 * order, as the sort-per-level build before this one did. Where a segment splits depends on its
 * count only, so the host plans every level first (plan_make: the segment tables, the node
 * list), uploads the tables once and the device runs the levels without a wait; the split values
 * come back in one copy at the end. The same steps build the subtrees of an update's splitting
 * leaves (update_kd.cu), from many roots at once: the lists are then sorted by (root,
 * coordinate), and a root at an odd level has its points' x and y swapped.
 *
 * Cost: two sorts, then per level one random read of a rank and about 20 bytes streamed per
 * point, with no host round trip per level (bench/results/NVIDIA-H200/UPDATES.md).
 *
 * Limits: up to 2^32 points with u32 positions, beyond that u64.
 */

#include "spatial/sp_cuda.cuh"

namespace {

using namespace rdx_sp;

template <typename T, typename I>
__global__ void bits_kernel(const T *xy, int64_t n, int axis, uint64_t *key, I *val) {
  SP_FOR(i, n) {
    key[i] = order_bits((double)xy[2 * i + axis]);
    val[i] = (I)i;
  }
}

template <typename I>
__global__ void rank_kernel(const I *order, int64_t n, I *rank) {
  SP_FOR(j, n) rank[order[j]] = (I)j;
}

/* Sort keys (root, coordinate bits from lo_bit up) of each position, and the positions. */
template <typename T, typename I>
__global__ void bits_root_kernel(const T *xy, int64_t n, int axis, const uint32_t *sid, int lo_bit, uint64_t *key, I *val) {
  SP_FOR(i, n) {
    key[i] = ((uint64_t)sid[i] << (64 - lo_bit)) | (order_bits((double)xy[2 * i + axis]) >> lo_bit);
    val[i] = (I)i;
  }
}

/* The root of each listed position, as a sort key. */
template <typename I>
__global__ void root_kernel(const I *list, int64_t n, const uint32_t *sid, uint64_t *key) {
  SP_FOR(j, n) key[j] = sid[list[j]];
}

/* Per segment splitting on axis a (half[s] = floor(c / 2), else -1): the rank on a of its first
 * right point. */
template <typename I>
__global__ void thr_kernel(const I *La, const int64_t *starts, const int64_t *half, int64_t n_seg, const I *rank_a,
                           I *thr) {
  SP_FOR(g, n_seg) if (half[g] >= 0) thr[g] = rank_a[La[starts[g] + half[g]]];
}

/* sid[j] is the segment of position j at the current level: part_kernel moves it to the next
 * level's (a binary search over the segments per point and level cost more than the rest). */

/* Per position of the other list: 1 if its point goes left. */
template <typename I>
__global__ void side_kernel(const I *Lb, int64_t n, const uint32_t *sid, const int64_t *half, const I *thr, const I *rank_a,
                            I *left) {
  SP_FOR(j, n) {
    const uint32_t g = sid[j];
    left[j] = half[g] >= 0 && rank_a[Lb[j]] < thr[g];
  }
}

/* The stable partition of the other list: in a split segment, left points keep their order at
 * its start, right points theirs after the first half; other segments stay. Position j's
 * segment in the next round: nxt[g] (a segment's place, or its left child's), + 1 past the
 * half of a split one. */
template <typename I>
__global__ void part_kernel(const I *Lb, int64_t n, uint32_t *sid, const int64_t *starts, const int64_t *half,
                            const int64_t *nxt, const I *left, const I *pre, I *out) {
  SP_FOR(j, n) {
    const uint32_t g = sid[j];
    const int64_t st = starts[g], h = half[g];
    if (h < 0) {
      out[j] = Lb[j];
      sid[j] = (uint32_t)nxt[g];
      continue;
    }
    int64_t lb = (int64_t)(pre[j] - pre[st]); /* left points before j in the segment */
    out[left[j] ? st + lb : st + h + (j - st - lb)] = Lb[j];
    sid[j] = (uint32_t)nxt[g] + (j >= st + h);
  }
}

/* The final order: a leaf's points as the list of its parent's axis holds them (which[g] 0 or
 * 1), or in input order (-1: the root as a leaf). */
template <typename I>
__global__ void leaf_order_kernel(const I *L0, const I *L1, int64_t n, const uint32_t *sid, const int64_t *which, I *perm) {
  SP_FOR(j, n) {
    int64_t w = which[sid[j]];
    perm[j] = w < 0 ? (I)j : w ? L1[j] : L0[j];
  }
}

template <typename T, typename I>
__global__ void split_kernel(const T *xy, const I *perm, const int64_t *pos, int64_t n_split, int axis, double *split) {
  SP_FOR(a, n_split) split[a] = (double)xy[2 * (int64_t)perm[pos[a]] + axis];
}

template <typename T, typename I>
__global__ void kd_gather_kernel(const T *xy, const I *perm, int64_t n, T *x, T *y, uint64_t *id) {
  SP_FOR(j, n) {
    int64_t s = (int64_t)perm[j];
    x[j] = xy[2 * s];
    y[j] = xy[2 * s + 1];
    id[j] = (uint64_t)s;
  }
}

struct seg {
  int64_t start, count, node; /* node: index in the host list */
  int level, round;           /* the node's level; its distance from its root */
};

/* The two lists: L[axis] holds every position in (coordinate on axis, position) order within
 * its root's range (sid: each position's root, of n_roots), rank[axis] each position's place in
 * it. Positions within a root are in id order, so ties go by id. */
template <typename T, typename I>
rdx_status kd_orders(scratch &m, const T *xy, int64_t n, const uint32_t *sid, int64_t n_roots, I *L[2], I *rank[2], I *alt,
                     const char *fn) {
  rdx_context *ctx = m.ctx;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(n, 256);
  uint64_t *ka, *kb;
  RDX_CHECK(m.get(&ka, n, fn));
  RDX_CHECK(m.get(&kb, n, fn));
  int root_bits = 0;
  while (((int64_t)1 << root_bits) < n_roots) root_bits++;
  /* a float's order bits (as a double) end in 29 equal bits: five passes instead of eight */
  const int lo_bit = sizeof(T) == 4 ? 29 : 0;
  const int packed = n_roots > 1 && root_bits + (64 - lo_bit) <= 64; /* (root, coordinate) in one key */
  for (int axis = 0; axis < 2; axis++) {
    if (packed) bits_root_kernel<T, I><<<grid, 256, 0, s>>>(xy, n, axis, sid, lo_bit, ka, alt);
    else bits_kernel<T, I><<<grid, 256, 0, s>>>(xy, n, axis, ka, alt);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d bits kernel");
    cub::DoubleBuffer<uint64_t> kbuf(ka, kb);
    cub::DoubleBuffer<I> vbuf(alt, L[axis]);
    RDX_CHECK(m.cub("rdx_points: k-d rank sort", [&](void *t, size_t &b) {
      return packed ? cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, 0, 64 - lo_bit + root_bits, s)
                    : cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, lo_bit, 64, s);
    }));
    if (n_roots > 1 && !packed) { /* then stably by root: each root's range in its own order */
      root_kernel<I><<<grid, 256, 0, s>>>(vbuf.Current(), n, sid, kbuf.Current());
      SP_LAUNCH_CHECK(ctx, "rdx_points: k-d root kernel");
      RDX_CHECK(m.cub("rdx_points: k-d root sort", [&](void *t, size_t &b) {
        return cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, 0, root_bits, s);
      }));
    }
    if (vbuf.Current() != L[axis])
      RDX_CUDA(ctx, cudaMemcpyAsync(L[axis], vbuf.Current(), (size_t)n * sizeof(I), cudaMemcpyDeviceToDevice, s), fn);
    rank_kernel<I><<<grid, 256, 0, s>>>(L[axis], n, rank[axis]);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d rank kernel");
  }
  m.drop(ka), m.drop(kb);
  return RDX_OK;
}

/* The plan (sp_cuda.cuh): median splits, level by level, of every segment with more than cap
 * points above depth, from the roots; the node at round r from its root splits on axis r % 2 of
 * its frame. Where a segment splits depends on its count only, so the host plans every round
 * and the device runs them without a wait. */
rdx_status plan_make(rdx_context *ctx, hbuf<seg> &segs, int depth, int64_t cap, rdx_sp_hlist *l, kd_plan *p) {
  p->tab.clear(), p->rounds.clear(), p->split_node.clear(), p->leaf_node.clear();
  auto splits = [&](const seg &g) { return g.count > cap && g.level < depth; };
  hbuf<seg> next(ctx);
  p->max_ns = segs.size();
  for (;;) {
    const int64_t ns = segs.size(), off = p->tab.size();
    int64_t na = 0;
    for (int64_t i = 0; i < ns; i++) na += splits(segs[i]);
    if (na == 0) break;
    RDX_CHECK(p->rounds.push(ns));
    RDX_CHECK(p->rounds.push(na));
    RDX_CHECK(p->rounds.push(off));
    p->max_ns = ns > p->max_ns ? ns : p->max_ns;
    RDX_CHECK(p->tab.resize(off + 3 * ns + na));
    RDX_CHECK(p->split_node.reserve(p->split_node.size() + na));
    RDX_CHECK(next.reserve(ns + na));
    if (l->n + 2 * na > l->cap) /* doubling: each fresh block faults its pages in */
      RDX_CHECK(rdx_sp_hlist_reserve(ctx, l, l->n + 2 * na > 2 * l->cap ? l->n + 2 * na : 2 * l->cap));
    int64_t *st = p->tab.data() + off, *half = st + ns, *nxt = half + ns, *pos = nxt + ns;
    next.clear();
    for (int64_t i = 0, k = 0; i < ns; i++) {
      const seg g = segs[i];
      st[i] = g.start;
      half[i] = -1;
      nxt[i] = next.size();
      if (!splits(g)) {
        next.v[next.n++] = g;
        continue;
      }
      const int64_t h = g.count / 2;
      half[i] = h;
      pos[k++] = g.start + h - 1; /* the last left point: its coordinate is the split */
      p->split_node.v[p->split_node.n++] = g.node;
      for (int side = 0; side < 2; side++) {
        rdx_sp_hnode c;
        memset(&c, 0, sizeof c);
        c.key = 2 * l->v[g.node].key + (uint64_t)side;
        c.level = g.level + 1;
        c.count = side ? g.count - h : h;
        c.fpos = side ? g.start + h : g.start;
        l->v[l->n++] = c;
        next.v[next.n++] = seg{c.fpos, c.count, l->n - 1, g.level + 1, g.round + 1};
      }
    }
    segs.swap(next);
  }
  /* leaves: what was not split, in position order; a leaf's order is its parent's axis list */
  p->leaf_off = p->tab.size();
  RDX_CHECK(p->tab.reserve(p->leaf_off + segs.size()));
  RDX_CHECK(p->leaf_node.reserve(segs.size()));
  for (int64_t i = 0; i < segs.size(); i++) {
    const seg &g = segs[i];
    rdx_sp_hnode *h = &l->v[g.node];
    h->leaf = 1, h->len = h->count, h->room = h->count;
    p->tab.v[p->tab.n++] = g.round == 0 ? -1 : (g.round - 1) & 1;
    p->leaf_node.v[p->leaf_node.n++] = g.node;
  }
  return RDX_OK;
}

/* A run's first step (sp_cuda.cuh, kd_run_orders), positions of type I. */
template <typename T, typename I>
rdx_status run_orders(scratch &m, const T *xy, int64_t n, int64_t n_roots, const uint32_t *sid, kd_lists_t<I> *ls,
                      const char *fn) {
  RDX_CHECK(m.get(&ls->L[0], n, fn));
  RDX_CHECK(m.get(&ls->L[1], n, fn));
  RDX_CHECK(m.get(&ls->alt, n, fn));
  RDX_CHECK(m.get(&ls->rank[0], n, fn));
  RDX_CHECK(m.get(&ls->rank[1], n, fn));
  return (kd_orders<T, I>)(m, xy, n, sid, n_roots, ls->L, ls->rank, ls->alt, fn);
}

/* Its second (kd_run_levels): the plan's levels, then the leaf order. */
template <typename T, typename I>
rdx_status run_levels(scratch &m, const T *xy, int64_t n, const kd_plan &p, const int64_t *d_tab, kd_lists_t<I> *ls,
                      uint32_t *sid, I *perm, double *split, const char *fn) {
  rdx_context *ctx = m.ctx;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(n, 256);
  I **L = ls->L, **rank = ls->rank, *alt = ls->alt, *left, *pre, *thr;
  RDX_CHECK(m.get(&left, n, fn));
  RDX_CHECK(m.get(&pre, n, fn));
  RDX_CHECK(m.get(&thr, (size_t)p.max_ns, fn));
  int64_t sb = 0; /* the round's first split value */
  for (int64_t r = 0; 3 * r < p.rounds.size(); r++) {
    const int a = (int)(r & 1);
    const int64_t ns = p.rounds[3 * r], na = p.rounds[3 * r + 1];
    const int64_t *st = d_tab + p.rounds[3 * r + 2], *half = st + ns, *nxt = half + ns, *pos = nxt + ns;
    /* the split values (the last left point on a), then the other list's partition */
    split_kernel<T, I><<<blocks_for(na, 128), 128, 0, s>>>(xy, L[a], pos, na, a, split + sb);
    thr_kernel<I><<<blocks_for(ns, 128), 128, 0, s>>>(L[a], st, half, ns, rank[a], thr);
    side_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, sid, half, thr, rank[a], left);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d split kernels");
    RDX_CHECK(m.cub("rdx_points: k-d partition scan", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, left, pre, n, s);
    }));
    part_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, sid, st, half, nxt, left, pre, alt);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d partition kernel");
    I *t = L[1 - a];
    L[1 - a] = alt;
    alt = t;
    sb += na;
  }
  leaf_order_kernel<I><<<grid, 256, 0, s>>>(L[0], L[1], n, sid, d_tab + p.leaf_off, perm);
  SP_LAUNCH_CHECK(ctx, "rdx_points: k-d leaf order kernel");
  m.drop(L[0]), m.drop(L[1]), m.drop(alt), m.drop(rank[0]), m.drop(rank[1]), m.drop(left), m.drop(pre), m.drop(thr);
  ls->L[0] = ls->L[1] = ls->alt = ls->rank[0] = ls->rank[1] = nullptr;
  return RDX_OK;
}

template <typename T, typename I>
rdx_status build_kd(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  const char *fn = "rdx_points_build (k-d)";
  const int64_t n = in->n;
  const T *xy = (const T *)in->xy;
  cudaStream_t s = rdx_stream(ctx);
  scratch m(ctx);
  double t0 = rdx_now_ms();
  I *perm;
  uint32_t *sid; /* one root: every position's segment is 0 */
  int64_t *d_tab;
  double *d_split;
  RDX_CHECK(m.get(&perm, n, fn));
  RDX_CHECK(m.get(&sid, n, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(sid, 0, (size_t)n * sizeof *sid, s), fn);

  rdx_sp_hlist l = {nullptr, 0, 0};
  kd_lists_t<I> ls;
  kd_plan p(ctx);
  hbuf<seg> segs(ctx);
  hbuf<double> h_split(ctx);
  rdx_status st;
  rdx_sp_nodes nodes, host;
  memset(&nodes, 0, sizeof nodes);
  memset(&host, 0, sizeof host);
  {
    rdx_sp_hnode root;
    memset(&root, 0, sizeof root);
    root.count = n;
    RDX_CHECK_GOTO(rdx_sp_hlist_push(ctx, &l, root), st, done);
  }
  RDX_CHECK_GOTO(segs.push(seg{0, n, 0, 0, 0}), st, done);
  RDX_CHECK_GOTO(plan_make(ctx, segs, pts->depth, pts->cap, &l, &p), st, done);
  RDX_CHECK_GOTO(m.get(&d_tab, (size_t)p.tab.size(), fn), st, done);
  RDX_CHECK_GOTO(m.get(&d_split, (size_t)p.split_node.size() + 1, fn), st, done);
  RDX_CHECK_GOTO(to_device(ctx, d_tab, p.tab.data(), (size_t)p.tab.size(), fn), st, done);
  RDX_CHECK_GOTO((run_orders<T, I>)(m, xy, n, 1, sid, &ls, fn), st, done);
  RDX_CHECK_GOTO((run_levels<T, I>)(m, xy, n, p, d_tab, &ls, sid, perm, d_split, fn), st, done);
  RDX_CHECK_GOTO(h_split.resize(p.split_node.size()), st, done);
  RDX_CHECK_GOTO(to_host(ctx, h_split.data(), d_split, (size_t)h_split.size(), fn), st, done);
  for (int64_t k = 0; k < h_split.size(); k++) l.v[p.split_node[k]].split = h_split[k];
  RDX_CHECK_GOTO(rdx_sp_hlist_link(ctx, &l, 1), st, done);
  RDX_CHECK_GOTO(rdx_sp_hlist_to_nodes(ctx, &l, &host), st, done);
  RDX_CHECK_GOTO(rdx_sp_nodes_alloc(ctx, l.n, RDX_DEVICE, &nodes), st, done);
  RDX_CHECK_GOTO(rdx_sp_nodes_copy(ctx, &nodes, &host), st, done);
  RDX_CHECK_GOTO(rdx_sp_pool_alloc(ctx, n, pts->f64, 0, &pts->pool), st, done);
  pts->pool.used = n;
  kd_gather_kernel<T, I><<<blocks_for(n, 256), 256, 0, s>>>(xy, perm, n, (T *)pts->pool.x, (T *)pts->pool.y, pts->pool.id);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), fn, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), fn, st, done);
  pts->nodes = nodes;
  memset(&nodes, 0, sizeof nodes);
  pts->kd_levels = 0;
  for (int64_t i = 0; i < l.n; i++)
    if (l.v[i].level + 1 > pts->kd_levels) pts->kd_levels = l.v[i].level + 1;
  pts->stats.phase_ms[0] = 0;
  pts->stats.phase_ms[1] = rdx_now_ms() - t0;
  pts->stats.phase_ms[2] = pts->stats.phase_ms[3] = 0;
done:
  rdx_sp_nodes_free(ctx, &host);
  rdx_sp_nodes_free(ctx, &nodes);
  rdx_sp_hlist_free(ctx, &l);
  return st;
}

template <typename T>
rdx_status build_t(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return in->n > (int64_t)UINT32_MAX - 1 ? build_kd<T, uint64_t>(ctx, pts, in) : build_kd<T, uint32_t>(ctx, pts, in);
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return pts->f64 ? build_t<double>(ctx, pts, in) : build_t<float>(ctx, pts, in);
}

extern "C" const rdx_sp_ops rdx_sp_kd_cuda_ops = {
    RDX_POINTS_KDTREE, RDX_BACKEND_CUDA, "k-d tree",
    0, RDX_SP_MAX_KD_DEPTH, RDX_SP_DEFAULT_KD_DEPTH, 0,              /* bottom-up only, depths, no Morton */
    RDX_POINTS_DENSE, "a k-d tree on a GPU keeps the dense layout",
    {{NULL, 0, 0}, {rdx_sp_kd_repair_cuda, RDX_SP_REPAIR_SHARE, 0}}, rdx_sp_rebuild_cuda, 1,
    rdx_sp_scan_cuda, rdx_sp_kd_build_cuda, rdx_sp_query_cuda, rdx_sp_resident, rdx_sp_storage_free, rdx_cuda_sync,
};

rdx_status rdx_sp::kd_plan_make(rdx_context *ctx, const kd_root *roots, int64_t n_roots, int depth, int64_t cap,
                                rdx_sp_hlist *out, kd_plan *p) {
  hbuf<seg> segs(ctx);
  RDX_CHECK(segs.reserve(n_roots));
  for (int64_t r = 0; r < n_roots; r++) {
    rdx_sp_hnode h;
    memset(&h, 0, sizeof h);
    h.key = roots[r].key, h.level = roots[r].level, h.count = roots[r].count, h.fpos = roots[r].start;
    RDX_CHECK(rdx_sp_hlist_push(ctx, out, h));
    segs.v[segs.n++] = seg{roots[r].start, roots[r].count, out->n - 1, roots[r].level, 0};
  }
  return plan_make(ctx, segs, depth, cap, out, p);
}

rdx_status rdx_sp::kd_run_orders(scratch &m, const void *xy, int f64, int64_t n, int64_t n_roots, const uint32_t *sid,
                                 kd_lists *ls) {
  const char *fn = "rdx_points update: k-d split orders";
  if (n >= (int64_t)UINT32_MAX)
    return rdx_fail(m.ctx, RDX_ERR_UNSUPPORTED, "rdx_points update: %lld points in splitting k-d leaves", (long long)n);
  return f64 ? (run_orders<double, uint32_t>)(m, (const double *)xy, n, n_roots, sid, ls, fn)
             : (run_orders<float, uint32_t>)(m, (const float *)xy, n, n_roots, sid, ls, fn);
}

rdx_status rdx_sp::kd_run_levels(scratch &m, const void *xy, int f64, int64_t n, const kd_plan &p, const int64_t *d_tab,
                                 kd_lists *ls, uint32_t *sid, uint32_t *perm, double *split) {
  const char *fn = "rdx_points update: k-d split levels";
  return f64 ? (run_levels<double, uint32_t>)(m, (const double *)xy, n, p, d_tab, ls, sid, perm, split, fn)
             : (run_levels<float, uint32_t>)(m, (const float *)xy, n, p, d_tab, ls, sid, perm, split, fn);
}
