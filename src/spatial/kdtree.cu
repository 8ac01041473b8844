/*
 * kdtree.cu: the k-d tree on the GPU, node for node the CPU build's (kdtree.c): median splits
 * by (coordinate, id) on alternating axes.
 *
 * Ranks per axis come from one CUB radix sort each of the order-preserving coordinate bits
 * (stable, positions ascending, so ties go by id). Then one pass per level: every point gets the
 * composite key (segment start, rank on the level's axis) -- or (start, position) in segments
 * that are already leaves, which keeps them in place -- and one radix sort over 2 * log2(n) bits
 * leaves every active segment ordered by rank, so its first floor(c / 2) points are the left
 * child. The host keeps the segment list (about 2n / capacity entries) and reads back one split
 * value per split node. So the points are sorted once per level (G-PICS sorts only the median
 * bucket; a full sort is simpler and, at ~48 key bits, still a few ms per level at 16M points).
 *
 * Limits: up to 2^32 points (composite keys are 64 bits).
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

template <typename I>
__global__ void iota_kernel(I *p, int64_t n) {
  SP_FOR(i, n) p[i] = (I)i;
}

/* Composite key of position j: (start of its segment) << rbits | (rank, or offset in a leaf). */
template <typename I>
__global__ void composite_kernel(const I *perm, int64_t n, const int64_t *starts, const uint8_t *active, int64_t n_seg,
                                 const I *rank, int rbits, uint64_t *key) {
  SP_FOR(j, n) {
    int64_t lo = 0, hi = n_seg; /* last segment with start <= j */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (starts[mid] <= j) lo = mid;
      else hi = mid;
    }
    int64_t st = starts[lo];
    uint64_t sec = active[lo] ? (uint64_t)rank[perm[j]] : (uint64_t)(j - st);
    key[j] = ((uint64_t)st << rbits) | sec;
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
  int rbits = bits_for((uint64_t)(n - 1));
  if (rbits == 0) rbits = 1;
  if (2 * rbits > 64) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld points exceed the GPU k-d build's 2^32", fn, (long long)n);
  scratch m(ctx);
  double t0 = rdx_now_ms();
  uint64_t *ka, *kb;
  I *va, *vb, *rank[2];
  RDX_CHECK(m.get(&ka, n, fn));
  RDX_CHECK(m.get(&kb, n, fn));
  RDX_CHECK(m.get(&va, n, fn));
  RDX_CHECK(m.get(&vb, n, fn));
  RDX_CHECK(m.get(&rank[0], n, fn));
  RDX_CHECK(m.get(&rank[1], n, fn));
  unsigned grid = blocks_for(n, 256);
  for (int axis = 0; axis < 2; axis++) {
    bits_kernel<T, I><<<grid, 256, 0, s>>>(xy, n, axis, ka, va);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: k-d bits kernel");
    cub::DoubleBuffer<uint64_t> kbuf(ka, kb);
    cub::DoubleBuffer<I> vbuf(va, vb);
    RDX_CHECK(m.cub("rdx_points_build: k-d rank sort", [&](void *t, size_t &b) {
      return cub::DeviceRadixSort::SortPairs(t, b, kbuf, vbuf, n, 0, 64, s);
    }));
    rank_kernel<I><<<grid, 256, 0, s>>>(vbuf.Current(), n, rank[axis]);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: k-d rank kernel");
  }
  /* perm lives in va/vb from here on */
  iota_kernel<I><<<grid, 256, 0, s>>>(va, n);
  SP_LAUNCH_CHECK(ctx, "rdx_points_build: k-d iota kernel");
  I *perm = va, *perm_alt = vb;

  rdx_sp_hlist l = {nullptr, 0, 0};
  std::vector<seg> segs;
  std::vector<int64_t> h_starts, h_pos;
  std::vector<uint8_t> h_active;
  std::vector<double> h_split;
  rdx_status st = RDX_OK;
  int64_t *d_starts = nullptr, *d_pos = nullptr;
  uint8_t *d_active = nullptr;
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
  for (int level = 0; st == RDX_OK; level++) {
    int axis = level & 1;
    h_starts.clear(), h_active.clear(), h_pos.clear();
    int64_t n_active = 0;
    for (const seg &g : segs) {
      int act = g.count > cap && level < depth;
      h_starts.push_back(g.start);
      h_active.push_back((uint8_t)act);
      if (act) h_pos.push_back(g.start + g.count / 2 - 1), n_active++;
    }
    if (n_active == 0) break;
    int64_t ns = (int64_t)segs.size();
    if (ns > seg_cap) { /* device tables, grown geometrically */
      if (d_starts) m.drop(d_starts), m.drop(d_active), m.drop(d_pos), m.drop(d_split);
      seg_cap = ns * 2 + 16;
      st = m.get(&d_starts, (size_t)seg_cap, fn);
      if (st == RDX_OK) st = m.get(&d_active, (size_t)seg_cap, fn);
      if (st == RDX_OK) st = m.get(&d_pos, (size_t)seg_cap, fn);
      if (st == RDX_OK) st = m.get(&d_split, (size_t)seg_cap, fn);
      if (st != RDX_OK) break;
    }
    st = to_device(ctx, d_starts, h_starts.data(), (size_t)ns, fn);
    if (st == RDX_OK) st = to_device(ctx, d_active, h_active.data(), (size_t)ns, fn);
    if (st == RDX_OK) st = to_device(ctx, d_pos, h_pos.data(), (size_t)n_active, fn);
    if (st != RDX_OK) break;
    composite_kernel<I><<<grid, 256, 0, s>>>(perm, n, d_starts, d_active, ns, rank[axis], rbits, ka);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      st = rdx_cuda_fail(ctx, e, "rdx_points_build: k-d composite kernel");
      break;
    }
    cub::DoubleBuffer<uint64_t> kbuf(ka, kb);
    cub::DoubleBuffer<I> pbuf(perm, perm_alt);
    st = m.cub("rdx_points_build: k-d level sort", [&](void *t, size_t &b) {
      return cub::DeviceRadixSort::SortPairs(t, b, kbuf, pbuf, n, 0, 2 * rbits, s);
    });
    if (st != RDX_OK) break;
    if (pbuf.Current() != perm) {
      I *t = perm;
      perm = pbuf.Current();
      perm_alt = t;
    }
    split_kernel<T, I><<<blocks_for(n_active, 128), 128, 0, s>>>(xy, perm, d_pos, n_active, axis, d_split);
    e = cudaGetLastError();
    if (e != cudaSuccess) {
      st = rdx_cuda_fail(ctx, e, "rdx_points_build: k-d split kernel");
      break;
    }
    h_split.resize((size_t)n_active);
    st = to_host(ctx, h_split.data(), d_split, (size_t)n_active, fn);
    if (st != RDX_OK) break;
    /* the host list: split nodes get their split and two children, in place of their segment */
    std::vector<seg> next;
    next.reserve(segs.size() + (size_t)n_active);
    int64_t a = 0;
    for (const seg &g : segs) {
      if (!(g.count > cap && level < depth)) {
        next.push_back(g);
        continue;
      }
      l.v[g.node].split = h_split[(size_t)a++];
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
  if (st == RDX_OK) st = rdx_sp_pool_alloc(ctx, n, pts->f64, 0, &pts->pool);
  if (st == RDX_OK) {
    pts->pool.used = n;
    kd_gather_kernel<T, I><<<grid, 256, 0, s>>>(xy, perm, n, (T *)pts->pool.x, (T *)pts->pool.y, pts->pool.id);
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
