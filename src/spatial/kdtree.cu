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

/* The segment holding position j: the last with start <= j. */
__device__ __forceinline__ int64_t seg_of(const int64_t *starts, int64_t n_seg, int64_t j) {
  int64_t lo = 0, hi = n_seg;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= j) lo = mid;
    else hi = mid;
  }
  return lo;
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
};

template <typename T, typename I>
rdx_status build_kd(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  const char *fn = "rdx_points_build (k-d)";
  const int64_t n = in->n, cap = pts->cap;
  const int depth = pts->depth;
  const T *xy = (const T *)in->xy;
  cudaStream_t s = rdx_stream(ctx);
  scratch m(ctx);
  double t0 = rdx_now_ms();
  I *L[2], *alt, *rank[2], *left, *pre;
  RDX_CHECK(m.get(&L[0], n, fn));
  RDX_CHECK(m.get(&L[1], n, fn));
  RDX_CHECK(m.get(&alt, n, fn));
  RDX_CHECK(m.get(&rank[0], n, fn));
  RDX_CHECK(m.get(&rank[1], n, fn));
  unsigned grid = blocks_for(n, 256);
  {
    uint64_t *ka, *kb;
    RDX_CHECK(m.get(&ka, n, fn));
    RDX_CHECK(m.get(&kb, n, fn));
    for (int axis = 0; axis < 2; axis++) {
      bits_kernel<T, I><<<grid, 256, 0, s>>>(xy, n, axis, ka, alt);
      SP_LAUNCH_CHECK(ctx, "rdx_points_build: k-d bits kernel");
      cub::DoubleBuffer<uint64_t> kbuf(ka, kb);
      cub::DoubleBuffer<I> vbuf(alt, L[axis]);
      /* a float's order bits (as a double) end in 29 equal bits: five passes instead of eight */
      const int lo_bit = sizeof(T) == 4 ? 29 : 0;
      RDX_CHECK(m.cub("rdx_points_build: k-d rank sort", [&](void *t, size_t &b) {
        return cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, lo_bit, 64, s);
      }));
      if (vbuf.Current() != L[axis])
        RDX_CUDA(ctx, cudaMemcpyAsync(L[axis], vbuf.Current(), (size_t)n * sizeof(I), cudaMemcpyDeviceToDevice, s), fn);
      rank_kernel<I><<<grid, 256, 0, s>>>(L[axis], n, rank[axis]);
      SP_LAUNCH_CHECK(ctx, "rdx_points_build: k-d rank kernel");
    }
    m.drop(ka), m.drop(kb);
  }
  RDX_CHECK(m.get(&left, n, fn));
  RDX_CHECK(m.get(&pre, n, fn));

  rdx_sp_hlist l = {nullptr, 0, 0};
  std::vector<seg> segs;
  std::vector<int64_t> h_starts, h_half, h_pos;
  std::vector<double> h_split;
  rdx_status st = RDX_OK;
  int64_t *d_starts = nullptr, *d_half = nullptr, *d_pos = nullptr;
  I *d_thr = nullptr;
  double *d_split = nullptr;
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  {
    rdx_sp_hnode root;
    memset(&root, 0, sizeof root);
    root.count = n;
    st = rdx_sp_hlist_push(ctx, &l, root);
    segs.push_back(seg{0, n, 0});
  }
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
  for (int level = 0; st == RDX_OK; level++) {
    const int a = level & 1;
    h_starts.clear(), h_half.clear(), h_pos.clear();
    int64_t n_active = 0;
    for (const seg &g : segs) {
      int act = g.count > cap && level < depth;
      h_starts.push_back(g.start);
      h_half.push_back(act ? g.count / 2 : -1);
      if (act) h_pos.push_back(g.start + g.count / 2 - 1), n_active++;
    }
    if (n_active == 0) break;
    const int64_t ns = (int64_t)segs.size();
    st = tables(ns);
    if (st == RDX_OK) st = to_device(ctx, d_starts, h_starts.data(), (size_t)ns, fn);
    if (st == RDX_OK) st = to_device(ctx, d_half, h_half.data(), (size_t)ns, fn);
    if (st == RDX_OK) st = to_device(ctx, d_pos, h_pos.data(), (size_t)n_active, fn);
    if (st != RDX_OK) break;
    /* the split values (the last left point on a), then the other list's partition */
    split_kernel<T, I><<<blocks_for(n_active, 128), 128, 0, s>>>(xy, L[a], d_pos, n_active, a, d_split);
    thr_kernel<I><<<blocks_for(ns, 128), 128, 0, s>>>(L[a], d_starts, d_half, ns, rank[a], d_thr);
    side_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, d_starts, d_half, ns, d_thr, rank[a], left);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      st = rdx_cuda_fail(ctx, e, "rdx_points_build: k-d split kernels");
      break;
    }
    st = m.cub("rdx_points_build: k-d partition scan", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, left, pre, n, s);
    });
    if (st != RDX_OK) break;
    part_kernel<I><<<grid, 256, 0, s>>>(L[1 - a], n, d_starts, d_half, ns, left, pre, alt);
    e = cudaGetLastError();
    if (e != cudaSuccess) {
      st = rdx_cuda_fail(ctx, e, "rdx_points_build: k-d partition kernel");
      break;
    }
    I *t = L[1 - a];
    L[1 - a] = alt;
    alt = t;
    h_split.resize((size_t)n_active);
    st = to_host(ctx, h_split.data(), d_split, (size_t)n_active, fn);
    if (st != RDX_OK) break;
    /* the host list: split nodes get their split and two children, in place of their segment */
    std::vector<seg> next;
    next.reserve(segs.size() + (size_t)n_active);
    int64_t k = 0; /* the split values, in segment order */
    for (const seg &g : segs) {
      if (!(g.count > cap && level < depth)) {
        next.push_back(g);
        continue;
      }
      l.v[g.node].split = h_split[(size_t)k++];
      int64_t h = g.count / 2;
      for (int side = 0; side < 2 && st == RDX_OK; side++) {
        rdx_sp_hnode c;
        memset(&c, 0, sizeof c);
        c.key = 2 * l.v[g.node].key + (uint64_t)side;
        c.level = level + 1;
        c.count = side ? g.count - h : h;
        c.fpos = side ? g.start + h : g.start;
        st = rdx_sp_hlist_push(ctx, &l, c);
        next.push_back(seg{c.fpos, c.count, l.n - 1});
      }
    }
    segs.swap(next);
  }
  if (st == RDX_OK) {
    for (int64_t i = 0; i < l.n; i++) { /* leaves: what was not split */
      rdx_sp_hnode *h = &l.v[i];
      h->leaf = !(h->count > cap && h->level < depth);
      if (h->leaf) h->len = h->count, h->room = h->count;
    }
    st = rdx_sp_hlist_link(ctx, &l, 1);
  }
  rdx_sp_nodes host;
  memset(&host, 0, sizeof host);
  if (st == RDX_OK) st = rdx_sp_hlist_to_nodes(ctx, &l, &host);
  if (st == RDX_OK) st = rdx_sp_nodes_alloc(ctx, l.n, RDX_DEVICE, &nodes);
  if (st == RDX_OK) st = rdx_sp_nodes_copy(ctx, &nodes, &host);
  if (st == RDX_OK) { /* the final segments are the leaves, in position order */
    const int64_t ns = (int64_t)segs.size();
    h_starts.clear(), h_half.clear();
    for (const seg &g : segs) {
      int lv = l.v[g.node].level;
      h_starts.push_back(g.start);
      h_half.push_back(lv == 0 ? -1 : (lv - 1) & 1); /* d_half now says which list holds its order */
    }
    st = tables(ns);
    if (st == RDX_OK) st = to_device(ctx, d_starts, h_starts.data(), (size_t)ns, fn);
    if (st == RDX_OK) st = to_device(ctx, d_half, h_half.data(), (size_t)ns, fn);
    if (st == RDX_OK) {
      leaf_order_kernel<I><<<grid, 256, 0, s>>>(L[0], L[1], n, d_starts, d_half, ns, alt);
      cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_points_build: k-d leaf order kernel");
    }
  }
  if (st == RDX_OK) st = rdx_sp_pool_alloc(ctx, n, pts->f64, 0, &pts->pool);
  if (st == RDX_OK) {
    pts->pool.used = n;
    kd_gather_kernel<T, I><<<grid, 256, 0, s>>>(xy, alt, n, (T *)pts->pool.x, (T *)pts->pool.y, pts->pool.id);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, fn);
  }
  rdx_sp_nodes_free(ctx, &host);
  rdx_sp_hlist_free(ctx, &l);
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    return st;
  }
  pts->nodes = nodes;
  pts->stats.phase_ms[0] = 0;
  pts->stats.phase_ms[1] = rdx_now_ms() - t0;
  pts->stats.phase_ms[2] = pts->stats.phase_ms[3] = 0;
  return RDX_OK;
}

template <typename T>
rdx_status build_t(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return in->n > (int64_t)UINT32_MAX - 1 ? build_kd<T, uint64_t>(ctx, pts, in) : build_kd<T, uint32_t>(ctx, pts, in);
}

}  // namespace

extern "C" rdx_status rdx_sp_kd_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return pts->f64 ? build_t<double>(ctx, pts, in) : build_t<float>(ctx, pts, in);
}
