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
 * order, as the sort-per-level build before this one did. The host keeps the segment list (about
 * 2n / capacity entries) and reads back one split value per split node.
 *
 * Cost (H200, 16.5M taxi-like f32 points, capacity 1024, 14 levels): 15.4-16.5 ms, two sorts, then
 * per level one random read of a rank and about 20 bytes streamed per point; the sort-per-level
 * build it replaced took 26-28 ms (a 48-bit sort of every point each level).
 *
 * Limits: up to 2^32 points with u32 positions, beyond that u64.
 */
#include <vector>

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

/* The root of each listed position (roots' starts ascending), as a sort key. */
template <typename I>
__global__ void root_kernel(const I *list, int64_t n, const int64_t *starts, int64_t n_roots, uint64_t *key) {
  SP_FOR(j, n) key[j] = (uint64_t)seg_of(starts, n_roots, (int64_t)list[j]);
}

/* Per segment splitting on axis a (half[s] = floor(c / 2), else -1): the rank on a of its first
 * right point. */
template <typename I>
__global__ void thr_kernel(const I *La, const int64_t *starts, const int64_t *half, int64_t n_seg, const I *rank_a,
                           I *thr) {
  SP_FOR(g, n_seg) if (half[g] >= 0) thr[g] = rank_a[La[starts[g] + half[g]]];
}

/* Per position of the other list: 1 if its point goes left. */
template <typename I>
__global__ void side_kernel(const I *Lb, int64_t n, const int64_t *starts, const int64_t *half, int64_t n_seg,
                            const I *thr, const I *rank_a, I *left) {
  SP_FOR(j, n) {
    int64_t g = seg_of(starts, n_seg, j);
    left[j] = half[g] >= 0 && rank_a[Lb[j]] < thr[g];
  }
}

/* The stable partition of the other list: in a split segment, left points keep their order at
 * its start, right points theirs after the first half; other segments stay. */
template <typename I>
__global__ void part_kernel(const I *Lb, int64_t n, const int64_t *starts, const int64_t *half, int64_t n_seg,
                            const I *left, const I *pre, I *out) {
  SP_FOR(j, n) {
    int64_t g = seg_of(starts, n_seg, j), st = starts[g], h = half[g];
    if (h < 0) {
      out[j] = Lb[j];
      continue;
    }
    int64_t lb = (int64_t)(pre[j] - pre[st]); /* left points before j in the segment */
    out[left[j] ? st + lb : st + h + (j - st - lb)] = Lb[j];
  }
}

/* The final order: a leaf's points as the list of its parent's axis holds them (which[g] 0 or
 * 1), or in input order (-1: the root as a leaf). */
template <typename I>
__global__ void leaf_order_kernel(const I *L0, const I *L1, int64_t n, const int64_t *starts, const int64_t *which,
                                  int64_t n_seg, I *perm) {
  SP_FOR(j, n) {
    int64_t w = which[seg_of(starts, n_seg, j)];
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
 * its root's range (roots of starts[0..n_roots), ascending), rank[axis] each position's place in
 * it. Positions within a root are in id order, so ties go by id. */
template <typename T, typename I>
rdx_status kd_orders(scratch &m, const T *xy, int64_t n, const int64_t *d_roots, int64_t n_roots, I *L[2], I *rank[2],
                     I *alt, const char *fn) {
  rdx_context *ctx = m.ctx;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(n, 256);
  uint64_t *ka, *kb;
  RDX_CHECK(m.get(&ka, n, fn));
  RDX_CHECK(m.get(&kb, n, fn));
  int root_bits = 0;
  while (((int64_t)1 << root_bits) < n_roots) root_bits++;
  for (int axis = 0; axis < 2; axis++) {
    bits_kernel<T, I><<<grid, 256, 0, s>>>(xy, n, axis, ka, alt);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d bits kernel");
    cub::DoubleBuffer<uint64_t> kbuf(ka, kb);
    cub::DoubleBuffer<I> vbuf(alt, L[axis]);
    /* a float's order bits (as a double) end in 29 equal bits: five passes instead of eight */
    const int lo_bit = sizeof(T) == 4 ? 29 : 0;
    RDX_CHECK(m.cub("rdx_points: k-d rank sort", [&](void *t, size_t &b) {
      return cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, lo_bit, 64, s);
    }));
    if (n_roots > 1) { /* then stably by root: each root's range in its own order */
      root_kernel<I><<<grid, 256, 0, s>>>(vbuf.Current(), n, d_roots, n_roots, kbuf.Current());
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

/* Median splits, level by level, of every segment with more than cap points above depth, from
 * the roots (segs: one per root, their nodes in l); the node at round r from its root splits on
 * axis r % 2 of its frame. New nodes are appended to l (key 2 key + side); segs ends as the
 * leaves in position order and perm as the points' final order: a leaf's points as the list of
 * its parent's axis holds them, a root that does not split in position order. */
template <typename T, typename I>
rdx_status kd_rounds(scratch &m, const T *xy, int64_t n, int depth, int64_t cap, std::vector<seg> &segs, rdx_sp_hlist *l,
                     I *L[2], I *rank[2], I *alt, I *perm, const char *fn) {
  rdx_context *ctx = m.ctx;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(n, 256);
  I *left, *pre;
  RDX_CHECK(m.get(&left, n, fn));
  RDX_CHECK(m.get(&pre, n, fn));
  std::vector<int64_t> h_starts, h_half, h_pos;
  std::vector<double> h_split;
  int64_t *d_starts = nullptr, *d_half = nullptr, *d_pos = nullptr;
  I *d_thr = nullptr;
  double *d_split = nullptr;
  int64_t seg_cap = 0;
  /* device tables of ns segments, grown geometrically */
  auto tables = [&](int64_t ns) -> rdx_status {
    if (ns <= seg_cap) return RDX_OK;
    if (d_starts) m.drop(d_starts), m.drop(d_half), m.drop(d_pos), m.drop(d_thr), m.drop(d_split);
    seg_cap = ns * 2 + 16;
    RDX_CHECK(m.get(&d_starts, (size_t)seg_cap, fn));
    RDX_CHECK(m.get(&d_half, (size_t)seg_cap, fn));
    RDX_CHECK(m.get(&d_pos, (size_t)seg_cap, fn));
    RDX_CHECK(m.get(&d_thr, (size_t)seg_cap, fn));
    return m.get(&d_split, (size_t)seg_cap, fn);
  };
  auto splits = [&](const seg &g) { return g.count > cap && g.level < depth; };
  for (int round = 0;; round++) {
    const int a = round & 1;
    h_starts.clear(), h_half.clear(), h_pos.clear();
    int64_t n_active = 0;
    for (const seg &g : segs) {
      int act = splits(g);
      h_starts.push_back(g.start);
      h_half.push_back(act ? g.count / 2 : -1);
      if (act) h_pos.push_back(g.start + g.count / 2 - 1), n_active++;
    }
    if (n_active == 0) break;
    const int64_t ns = (int64_t)segs.size();
    RDX_CHECK(tables(ns));
    RDX_CHECK(to_device(ctx, d_starts, h_starts.data(), (size_t)ns, fn));
    RDX_CHECK(to_device(ctx, d_half, h_half.data(), (size_t)ns, fn));
    RDX_CHECK(to_device(ctx, d_pos, h_pos.data(), (size_t)n_active, fn));
    /* the split values (the last left point on a), then the other list's partition */
    split_kernel<T, I><<<blocks_for(n_active, 128), 128, 0, s>>>(xy, L[a], d_pos, n_active, a, d_split);
    thr_kernel<I><<<blocks_for(ns, 128), 128, 0, s>>>(L[a], d_starts, d_half, ns, rank[a], d_thr);
    side_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, d_starts, d_half, ns, d_thr, rank[a], left);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d split kernels");
    RDX_CHECK(m.cub("rdx_points: k-d partition scan", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, left, pre, n, s);
    }));
    part_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, d_starts, d_half, ns, left, pre, alt);
    SP_LAUNCH_CHECK(ctx, "rdx_points: k-d partition kernel");
    I *t = L[1 - a];
    L[1 - a] = alt;
    alt = t;
    h_split.resize((size_t)n_active);
    RDX_CHECK(to_host(ctx, h_split.data(), d_split, (size_t)n_active, fn));
    /* the host list: split nodes get their split and two children, in place of their segment */
    std::vector<seg> next;
    next.reserve(segs.size() + (size_t)n_active);
    int64_t k = 0; /* the split values, in segment order */
    for (const seg &g : segs) {
      if (!splits(g)) {
        next.push_back(g);
        continue;
      }
      l->v[g.node].split = h_split[(size_t)k++];
      int64_t h = g.count / 2;
      for (int side = 0; side < 2; side++) {
        rdx_sp_hnode c;
        memset(&c, 0, sizeof c);
        c.key = 2 * l->v[g.node].key + (uint64_t)side;
        c.level = g.level + 1;
        c.count = side ? g.count - h : h;
        c.fpos = side ? g.start + h : g.start;
        RDX_CHECK(rdx_sp_hlist_push(ctx, l, c));
        next.push_back(seg{c.fpos, c.count, l->n - 1, g.level + 1, g.round + 1});
      }
    }
    segs.swap(next);
  }
  for (const seg &g : segs) { /* leaves: what was not split */
    rdx_sp_hnode *h = &l->v[g.node];
    h->leaf = 1, h->len = h->count, h->room = h->count;
  }
  /* the final segments are the leaves, in position order */
  const int64_t ns = (int64_t)segs.size();
  h_starts.clear(), h_half.clear();
  for (const seg &g : segs) {
    h_starts.push_back(g.start);
    h_half.push_back(g.round == 0 ? -1 : (g.round - 1) & 1); /* d_half now says which list holds its order */
  }
  RDX_CHECK(tables(ns));
  RDX_CHECK(to_device(ctx, d_starts, h_starts.data(), (size_t)ns, fn));
  RDX_CHECK(to_device(ctx, d_half, h_half.data(), (size_t)ns, fn));
  leaf_order_kernel<I><<<grid, 256, 0, s>>>(L[0], L[1], n, d_starts, d_half, ns, perm);
  SP_LAUNCH_CHECK(ctx, "rdx_points: k-d leaf order kernel");
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
  I *L[2], *alt, *rank[2], *perm;
  RDX_CHECK(m.get(&L[0], n, fn));
  RDX_CHECK(m.get(&L[1], n, fn));
  RDX_CHECK(m.get(&alt, n, fn));
  RDX_CHECK(m.get(&rank[0], n, fn));
  RDX_CHECK(m.get(&rank[1], n, fn));
  RDX_CHECK((kd_orders<T, I>)(m, xy, n, nullptr, 1, L, rank, alt, fn));
  RDX_CHECK(m.get(&perm, n, fn));

  rdx_sp_hlist l = {nullptr, 0, 0};
  std::vector<seg> segs;
  rdx_status st;
  rdx_sp_nodes nodes, host;
  memset(&nodes, 0, sizeof nodes);
  memset(&host, 0, sizeof host);
  {
    rdx_sp_hnode root;
    memset(&root, 0, sizeof root);
    root.count = n;
    RDX_CHECK_GOTO(rdx_sp_hlist_push(ctx, &l, root), st, done);
    segs.push_back(seg{0, n, 0, 0, 0});
  }
  RDX_CHECK_GOTO((kd_rounds<T, I>)(m, xy, n, pts->depth, pts->cap, segs, &l, L, rank, alt, perm, fn), st, done);
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

template <typename T>
rdx_status forest_t(rdx_context *ctx, const void *xy_, int64_t n, const kd_root *roots, int64_t n_roots, int depth, int64_t cap,
                    rdx_sp_hlist *out, uint32_t *perm) {
  const char *fn = "rdx_points update: k-d split subtrees";
  const T *xy = (const T *)xy_;
  scratch m(ctx);
  uint32_t *L[2], *alt, *rank[2];
  int64_t *d_roots;
  RDX_CHECK(m.get(&L[0], n, fn));
  RDX_CHECK(m.get(&L[1], n, fn));
  RDX_CHECK(m.get(&alt, n, fn));
  RDX_CHECK(m.get(&rank[0], n, fn));
  RDX_CHECK(m.get(&rank[1], n, fn));
  RDX_CHECK(m.get(&d_roots, (size_t)n_roots, fn));
  std::vector<int64_t> starts((size_t)n_roots);
  std::vector<seg> segs;
  for (int64_t r = 0; r < n_roots; r++) {
    starts[(size_t)r] = roots[r].start;
    rdx_sp_hnode h;
    memset(&h, 0, sizeof h);
    h.key = roots[r].key, h.level = roots[r].level, h.count = roots[r].count, h.fpos = roots[r].start;
    RDX_CHECK(rdx_sp_hlist_push(ctx, out, h));
    segs.push_back(seg{roots[r].start, roots[r].count, out->n - 1, roots[r].level, 0});
  }
  RDX_CHECK(to_device(ctx, d_roots, starts.data(), (size_t)n_roots, fn));
  RDX_CHECK((kd_orders<T, uint32_t>)(m, xy, n, d_roots, n_roots, L, rank, alt, fn));
  return (kd_rounds<T, uint32_t>)(m, xy, n, depth, cap, segs, out, L, rank, alt, perm, fn);
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return pts->f64 ? build_t<double>(ctx, pts, in) : build_t<float>(ctx, pts, in);
}

rdx_status rdx_sp::kd_forest(rdx_context *ctx, const void *xy, int f64, int64_t n, const kd_root *roots, int64_t n_roots,
                             int depth, int64_t cap, rdx_sp_hlist *out, uint32_t *perm) {
  if (n >= (int64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "rdx_points update: %lld points in splitting k-d leaves", (long long)n);
  return f64 ? forest_t<double>(ctx, xy, n, roots, n_roots, depth, cap, out, perm)
             : forest_t<float>(ctx, xy, n, roots, n_roots, depth, cap, out, perm);
}
