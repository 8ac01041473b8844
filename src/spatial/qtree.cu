/*
 * qtree.cu: PR quadtree construction on the GPU, bottom-up and top-down (Zhang and Gruenwald;
 * see qtree.c for the algorithms, the leaf-offset fix and the equivalences). The result is
 * identical to the CPU build: the same nodes, and for bottom-up the same point order.
 *
 * Bottom-up, tuned for 10^8..10^9 points:
 *  1. keys_kernel: finest Morton code and position per point (reads 8-16 B, writes 8-16 B).
 *  2. One CUB radix sort of (code, position) pairs over the 2D code bits (onesweep, 8-bit
 *     digits: 4 passes for 32-bit codes).
 *  3. gather_kernel: the pool in Morton order (x, y, id, code).
 *  4. Phase 1, finest level first: the paper's per-level reduction by key, done as one
 *     cub::DeviceSelect of run starts per level (a quadrant starts where its code prefix
 *     changes), so each full quadrant is stored as (code, first point, first child) and its
 *     point and child counts are differences of neighbours; the first point is the minimum
 *     the leaf-offset fix asks for. ~16 B per full quadrant, one host read of the count per
 *     level. (ReduceByKey with a 12-byte aggregate took over 40% of a build; the figures are in
 *     bench/results/NVIDIA-H200/UPDATES.md.)
 *  5. Phase 2 top-down over the kept nodes only: phase 1's first-child array is line 1's scan
 *     of clen, locating each kept internal node's children among the next level's full
 *     quadrants; the nodes of each level are written by one kernel. Levels below the deepest
 *     internal node are never read.
 * Top-down: per level a CUB sort of the unfinished suffix by the level's code bits, a
 * ReduceByKey for the quadrant counts, a scan and a stable scatter of leaf points to the
 * finished prefix (double buffer, then a copy back, as the paper's copy_if/copy), then Phase 2
 * from the leaf quadrants.
 *
 * Index widths: positions and counts are u32 below 2^32 points and u64 beyond; codes are u32
 * for depth <= 16 and u64 beyond.
 */
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "spatial/sp_cuda.cuh"

namespace {

using namespace rdx_sp;

template <typename I>
struct agg {
  I nlen, clen, first;
};

/* Phase 1's result for one level l: its full quadrants in code order, each as its code, its
 * first point (position in Morton order) and, above the finest level, its first child among
 * level l + 1's quadrants. Counts follow from neighbours: a quadrant's points run to the next
 * quadrant's first point, its children to the next quadrant's first child. */
template <typename K, typename I>
struct level_view {
  const K *key;
  const I *pos;
  const I *child; /* NULL at the finest level */
  int64_t F, Fnext, n;
  __host__ __device__ agg<I> at(int64_t e) const {
    agg<I> r;
    int64_t p = (int64_t)pos[e];
    r.first = (I)p;
    r.nlen = (I)((e + 1 < F ? (int64_t)pos[e + 1] : n) - p);
    r.clen = child ? (I)((e + 1 < F ? (int64_t)child[e + 1] : Fnext) - (int64_t)child[e]) : (I)0;
    return r;
  }
};

/* Where a finest-level quadrant starts: the first point, or a code unlike the previous one. */
template <typename K>
struct code_head {
  const K *k;
  __host__ __device__ bool operator()(int64_t i) const { return i == 0 || k[i] != k[i - 1]; }
};
/* Where a level-l quadrant starts among level l + 1's: its parent code (code >> 2) changes. */
template <typename K>
struct parent_head {
  const K *k;
  __host__ __device__ bool operator()(int64_t j) const { return j == 0 || (k[j] >> 2) != (k[j - 1] >> 2); }
};

template <typename K>
struct shr {
  int s;
  __host__ __device__ K operator()(K k) const { return (K)(k >> s); }
};
struct sum_op {
  template <typename T>
  __host__ __device__ T operator()(const T &a, const T &b) const {
    return a + b;
  }
};

template <typename K, typename I>
__global__ void finest_kernel(const K *keys, const I *pos, int64_t F, K *key) {
  SP_FOR(e, F) key[e] = keys[pos[e]];
}
template <typename K, typename I>
__global__ void parent_kernel(const K *ckey, const I *cpos, const I *child, int64_t F, K *key, I *pos) {
  SP_FOR(e, F) {
    I j = child[e];
    key[e] = (K)(ckey[j] >> 2);
    pos[e] = cpos[j];
  }
}

template <typename T, typename K, typename I>
__global__ void keys_kernel(const T *xy, int64_t n, rdx_sp_grid g, K *key, I *idx) {
  SP_FOR(i, n) {
    key[i] = (K)rdx_sp_point_key(&g, (double)xy[2 * i], (double)xy[2 * i + 1]);
    idx[i] = (I)i;
  }
}

template <typename T, typename K, typename I>
__global__ void gather_kernel(const T *xy, int64_t n, const K *key, const I *idx, T *x, T *y, uint64_t *id, K *pkey) {
  SP_FOR(j, n) {
    int64_t s = (int64_t)idx[j];
    x[j] = xy[2 * s];
    y[j] = xy[2 * s + 1];
    id[j] = (uint64_t)s;
    pkey[j] = key[j];
  }
}

/* Per kept node of level l: children to list (0 for leaves). in[j] for j == nk is 0, so an
 * exclusive scan over nk + 1 entries ends with the total. */
template <typename K, typename I>
struct kept_children {
  const I *klist;
  level_view<K, I> lv;
  int64_t nk;
  int64_t cap;
  int last; /* l == D: every node is a leaf */
  __host__ __device__ int64_t operator()(int64_t j) const {
    if (j >= nk) return 0;
    agg<I> v = lv.at(klist[j]);
    int leaf = last || (int64_t)v.nlen <= cap;
    return leaf ? 0 : (int64_t)v.clen;
  }
};
template <typename K, typename I>
struct kept_leaf_points { /* the paper's line 9 input: nlen of leaves, 0 for internal nodes */
  const I *klist;
  level_view<K, I> lv;
  int64_t nk;
  int64_t cap;
  int last;
  __host__ __device__ int64_t operator()(int64_t j) const {
    if (j >= nk) return 0;
    agg<I> v = lv.at(klist[j]);
    int leaf = last || (int64_t)v.nlen <= cap;
    return leaf ? (int64_t)v.nlen : 0;
  }
};

/* Expand: the children of kept internal node j are full quadrants child[e] .. child[e] + clen - 1
 * of the next level; write them to the next kept list at coff[j]. */
template <typename K, typename I>
__global__ void expand_kernel(const I *klist, int64_t nk, level_view<K, I> lv, const int64_t *coff, int64_t cap, I *next) {
  SP_FOR(j, nk) {
    I e = klist[j];
    agg<I> v = lv.at(e);
    if ((int64_t)v.nlen <= cap) continue;
    for (int64_t c = 0; c < (int64_t)v.clen; c++) next[coff[j] + c] = (I)((int64_t)lv.child[e] + c);
  }
}

template <typename K, typename I>
__global__ void bu_nodes_kernel(const I *klist, int64_t nk, level_view<K, I> lv, int level, int last, int64_t cap,
                                int64_t base, int64_t next_base, const int64_t *coff, const int64_t *ppos, int64_t pcarry,
                                rdx_sp_nodes nd) {
  SP_FOR(j, nk) {
    I e = klist[j];
    agg<I> v = lv.at(e);
    int64_t node = base + j;
    int leaf = last || (int64_t)v.nlen <= cap;
    nd.key[node] = (uint64_t)lv.key[e];
    nd.level[node] = (uint8_t)level;
    nd.leaf[node] = (uint8_t)leaf;
    nd.count[node] = (int64_t)v.nlen;
    nd.split[node] = 0.0;
    if (leaf) {
      nd.len[node] = (int64_t)v.nlen;
      nd.room[node] = (int64_t)v.nlen;
      nd.fpos[node] = ppos ? pcarry + ppos[j] : (int64_t)v.first;
    } else {
      nd.len[node] = (int64_t)v.clen;
      nd.room[node] = 0;
      nd.fpos[node] = next_base + coff[j];
    }
  }
}

template <typename T, typename K, typename I>
rdx_status build_bottom_up(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  const char *fn = "rdx_points_build (bottom-up)";
  const int64_t n = in->n, cap = pts->cap;
  const int D = pts->depth;
  cudaStream_t s = rdx_stream(ctx);
  scratch m(ctx);
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "bottom-up: start");
  K *ka, *kb;
  I *ia, *ib;
  RDX_CHECK(m.get(&ka, n, fn));
  RDX_CHECK(m.get(&kb, n, fn));
  RDX_CHECK(m.get(&ia, n, fn));
  RDX_CHECK(m.get(&ib, n, fn));
  keys_kernel<T, K, I><<<blocks_for(n, 256), 256, 0, s>>>((const T *)in->xy, n, pts->grid, ka, ia);
  SP_LAUNCH_CHECK(ctx, "rdx_points_build: keys kernel");
  rdx_trace(ctx, "bottom-up: keys");
  cub::DoubleBuffer<K> kbuf(ka, kb);
  cub::DoubleBuffer<I> ibuf(ia, ib);
  RDX_CHECK(m.cub("rdx_points_build: sort", [&](void *t, size_t &b) {
    return cub::DeviceRadixSort::SortPairs(t, b, kbuf, ibuf, n, 0, 2 * D, s);
  }));
  rdx_trace(ctx, "bottom-up: sort");
  const K *keys = kbuf.Current();
  const I *idx = ibuf.Current();
  RDX_CHECK(rdx_sp_pool_alloc(ctx, n, pts->f64, (int)sizeof(K), &pts->pool));
  pts->pool.used = n;
  gather_kernel<T, K, I><<<blocks_for(n, 256), 256, 0, s>>>((const T *)in->xy, n, keys, idx, (T *)pts->pool.x,
                                                            (T *)pts->pool.y, pts->pool.id, (K *)pts->pool.key);
  SP_LAUNCH_CHECK(ctx, "rdx_points_build: gather kernel");
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  rdx_trace(ctx, "bottom-up: gather");
  double t1 = rdx_now_ms();

  /* Phase 1: full quadrants, finest level first. The paper reduces (code, 1) pairs by key per
   * level; since the codes are sorted, a level's quadrants are exactly where its code prefix
   * changes, so each level is one selection of run starts from the level below (4 bytes read,
   * 12 written per quadrant) and the counts are differences of neighbouring starts. */
  level_view<K, I> lv[RDX_SP_MAX_QT_DEPTH + 1];
  int64_t F[RDX_SP_MAX_QT_DEPTH + 1];
  int64_t *d_runs;
  RDX_CHECK(m.get(&d_runs, 1, fn));
  {
    I *pos;
    K *key;
    RDX_CHECK(m.get(&pos, n, fn));
    code_head<K> h{keys};
    RDX_CHECK(m.cub("rdx_points_build: phase 1", [&](void *t, size_t &b) {
      return cub::DeviceSelect::If(t, b, thrust::counting_iterator<int64_t>(0), pos, d_runs, n, h, s);
    }));
    RDX_CHECK(to_host(ctx, &F[D], d_runs, 1, fn));
    RDX_CHECK(m.get(&key, (size_t)F[D], fn));
    finest_kernel<K, I><<<blocks_for(F[D], 256), 256, 0, s>>>(keys, pos, F[D], key);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: phase 1 kernel");
    lv[D] = level_view<K, I>{key, pos, nullptr, F[D], 0, n};
  }
  for (int l = D - 1; l >= 0; l--) {
    I *child, *pos;
    K *key;
    int64_t fl = F[l + 1];
    RDX_CHECK(m.get(&child, (size_t)fl, fn));
    parent_head<K> h{lv[l + 1].key};
    RDX_CHECK(m.cub("rdx_points_build: phase 1", [&](void *t, size_t &b) {
      return cub::DeviceSelect::If(t, b, thrust::counting_iterator<int64_t>(0), child, d_runs, fl, h, s);
    }));
    RDX_CHECK(to_host(ctx, &F[l], d_runs, 1, fn));
    RDX_CHECK(m.get(&key, (size_t)F[l], fn));
    RDX_CHECK(m.get(&pos, (size_t)F[l], fn));
    parent_kernel<K, I><<<blocks_for(F[l], 256), 256, 0, s>>>(lv[l + 1].key, lv[l + 1].pos, child, F[l], key, pos);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: phase 1 kernel");
    lv[l] = level_view<K, I>{key, pos, child, F[l], fl, n};
  }
  if (F[0] != 1) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %lld roots", fn, (long long)F[0]);
  double t2 = rdx_now_ms();

  /* Phase 2: kept lists top-down. */
  I *klist[RDX_SP_MAX_QT_DEPTH + 2];
  int64_t *coff[RDX_SP_MAX_QT_DEPTH + 1], *ppos[RDX_SP_MAX_QT_DEPTH + 1];
  int64_t nk[RDX_SP_MAX_QT_DEPTH + 2], base[RDX_SP_MAX_QT_DEPTH + 2], pcarry[RDX_SP_MAX_QT_DEPTH + 1];
  int paper = (in->debug & RDX_SP_DEBUG_PAPER_LINE9) != 0;
  RDX_CHECK(m.get(&klist[0], 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(klist[0], 0, sizeof(I), s), fn);
  nk[0] = 1;
  base[0] = 0;
  int last_level = 0;
  int64_t carry = 0;
  for (int l = 0; l <= D; l++) {
    int last = l == D;
    coff[l] = ppos[l] = nullptr;
    pcarry[l] = carry;
    RDX_CHECK(m.get(&coff[l], (size_t)nk[l] + 1, fn));
    kept_children<K, I> kc{klist[l], lv[l], nk[l], cap, last};
    auto cin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), kc);
    int64_t nkl = nk[l] + 1;
    RDX_CHECK(m.cub("rdx_points_build: phase 2", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, cin, coff[l], nkl, s);
    }));
    if (paper) { /* line 9 as printed: leaf offsets by a scan of leaf counts in BFS order */
      RDX_CHECK(m.get(&ppos[l], (size_t)nk[l] + 1, fn));
      kept_leaf_points<K, I> kp{klist[l], lv[l], nk[l], cap, last};
      auto pin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), kp);
      RDX_CHECK(m.cub("rdx_points_build: phase 2", [&](void *t, size_t &b) {
        return cub::DeviceScan::ExclusiveSum(t, b, pin, ppos[l], nkl, s);
      }));
      int64_t lt = 0;
      RDX_CHECK(to_host(ctx, &lt, ppos[l] + nk[l], 1, fn));
      carry += lt;
    }
    int64_t children = 0;
    RDX_CHECK(to_host(ctx, &children, coff[l] + nk[l], 1, fn));
    base[l + 1] = base[l] + nk[l];
    nk[l + 1] = children;
    last_level = l;
    if (children == 0) break;
    /* line 1 (an exclusive scan of clen over the level's full quadrants, giving each one's first
     * child among the next level's) is phase 1's child array */
    RDX_CHECK(m.get(&klist[l + 1], (size_t)children, fn));
    expand_kernel<K, I><<<blocks_for(nk[l], 128), 128, 0, s>>>(klist[l], nk[l], lv[l], coff[l], cap, klist[l + 1]);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: expand kernel");
  }
  int64_t n_nodes = base[last_level + 1];
  rdx_sp_nodes nodes;
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_nodes, RDX_DEVICE, &nodes));
  for (int l = 0; l <= last_level; l++) {
    bu_nodes_kernel<K, I><<<blocks_for(nk[l], 128), 128, 0, s>>>(klist[l], nk[l], lv[l], l, l == D, cap, base[l],
                                                                 base[l + 1], coff[l], ppos[l], pcarry[l], nodes);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      rdx_sp_nodes_free(ctx, &nodes);
      return rdx_cuda_fail(ctx, e, "rdx_points_build: nodes kernel");
    }
  }
  cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    rdx_sp_nodes_free(ctx, &nodes);
    return rdx_cuda_fail(ctx, e, fn);
  }
  pts->nodes = nodes;
  double t3 = rdx_now_ms();
  pts->stats.phase_ms[0] = t1 - t0; /* keys, sort, gather */
  pts->stats.phase_ms[1] = t2 - t1;
  pts->stats.phase_ms[2] = t3 - t2;
  pts->stats.phase_ms[3] = 0;
  return RDX_OK;
}

/* ---- top-down ---- */

template <typename K>
struct head_of { /* 1 where a new quadrant (code >> s) starts */
  const K *k;
  int s;
  __host__ __device__ int64_t operator()(int64_t i) const { return i == 0 || (k[i] >> s) != (k[i - 1] >> s) ? 1 : 0; }
};
template <typename I>
struct leaf_flag { /* point i belongs to a leaf quadrant; 0 past the end */
  const int64_t *qidx;
  const I *cnt;
  int64_t n, cap;
  int last;
  __host__ __device__ int64_t operator()(int64_t i) const {
    if (i >= n) return 0;
    return last || (int64_t)cnt[qidx[i] - 1] <= cap ? 1 : 0;
  }
};

template <typename K, typename I>
__global__ void partition_kernel(const K *k, const I *v, int64_t n, const int64_t *qidx, const I *cnt, int64_t cap, int last,
                                 const int64_t *pos, int64_t n_leaf, K *ko, I *vo) {
  SP_FOR(i, n) {
    int leaf = last || (int64_t)cnt[qidx[i] - 1] <= cap;
    int64_t p = leaf ? pos[i] : n_leaf + (i - pos[i]);
    ko[p] = k[i];
    vo[p] = v[i];
  }
}

template <typename I>
struct td_leaf_points {
  const I *cnt;
  int64_t n, cap;
  int last;
  __host__ __device__ int64_t operator()(int64_t i) const {
    if (i >= n) return 0;
    return last || (int64_t)cnt[i] <= cap ? (int64_t)cnt[i] : 0;
  }
};
template <typename I>
struct td_internal {
  const I *cnt;
  int64_t n, cap;
  int last;
  __host__ __device__ int64_t operator()(int64_t i) const {
    if (i >= n) return 0;
    return last || (int64_t)cnt[i] <= cap ? 0 : 1;
  }
};

template <typename K, typename I>
__global__ void td_nodes_kernel(const K *qkey, const I *cnt, int64_t nq, int level, int last, int64_t cap, int64_t base,
                                int64_t next_base, const int64_t *ppos, int64_t pcarry, const int64_t *irank,
                                const int64_t *nchild, const int64_t *cpos, rdx_sp_nodes nd) {
  SP_FOR(i, nq) {
    int64_t node = base + i;
    int leaf = last || (int64_t)cnt[i] <= cap;
    nd.key[node] = (uint64_t)qkey[i];
    nd.level[node] = (uint8_t)level;
    nd.leaf[node] = (uint8_t)leaf;
    nd.count[node] = (int64_t)cnt[i];
    nd.split[node] = 0.0;
    if (leaf) {
      nd.fpos[node] = pcarry + ppos[i];
      nd.len[node] = (int64_t)cnt[i];
      nd.room[node] = (int64_t)cnt[i];
    } else {
      int64_t r = irank[i];
      nd.fpos[node] = next_base + cpos[r];
      nd.len[node] = nchild[r];
      nd.room[node] = 0;
    }
  }
}

/* Top-down Phase 2: the children of level l's n_int internal nodes, in order (the next level's
 * n_next codes >> 2, reduced by key), as counts *nchild and first offsets *cpos. */
template <typename K>
rdx_status td_children(scratch &m, const K *next_keys, int64_t n_next, int64_t n_int, int l, int64_t *d_runs,
                       int64_t **nchild, int64_t **cpos, const char *fn) {
  rdx_context *ctx = m.ctx;
  cudaStream_t s = rdx_stream(ctx);
  K *pk = nullptr;
  RDX_CHECK(m.get(&pk, (size_t)n_int, fn));
  RDX_CHECK(m.get(nchild, (size_t)n_int + 1, fn));
  RDX_CHECK(m.get(cpos, (size_t)n_int + 1, fn));
  int64_t *nc = *nchild, *cp = *cpos, runs = 0;
  auto ck = thrust::make_transform_iterator(next_keys, shr<K>{2});
  auto ones = thrust::make_constant_iterator((int64_t)1);
  RDX_CHECK(m.cub("rdx_points_build: children", [&](void *t, size_t &b) {
    return cub::DeviceReduce::ReduceByKey(t, b, ck, pk, ones, nc, d_runs, sum_op(), n_next, s);
  }));
  RDX_CHECK(to_host(ctx, &runs, d_runs, 1, fn));
  if (runs != n_int)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: level %d has %lld internal nodes and %lld parents below", fn, l,
                    (long long)n_int, (long long)runs);
  return m.cub("rdx_points_build: child offsets", [&](void *t, size_t &b) {
    return cub::DeviceScan::ExclusiveSum(t, b, nc, cp, n_int, s);
  });
}

template <typename T, typename K, typename I>
rdx_status build_top_down(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  const char *fn = "rdx_points_build (top-down)";
  const int64_t n = in->n, cap = pts->cap;
  const int D = pts->depth;
  cudaStream_t s = rdx_stream(ctx);
  scratch m(ctx);
  double t0 = rdx_now_ms();
  K *ka, *kb;
  I *ia, *ib;
  int64_t *qidx, *pos, *d_runs;
  RDX_CHECK(m.get(&ka, n, fn));
  RDX_CHECK(m.get(&kb, n, fn));
  RDX_CHECK(m.get(&ia, n, fn));
  RDX_CHECK(m.get(&ib, n, fn));
  RDX_CHECK(m.get(&qidx, n, fn));
  RDX_CHECK(m.get(&pos, n + 1, fn));
  RDX_CHECK(m.get(&d_runs, 1, fn));
  keys_kernel<T, K, I><<<blocks_for(n, 256), 256, 0, s>>>((const T *)in->xy, n, pts->grid, ka, ia);
  SP_LAUNCH_CHECK(ctx, "rdx_points_build: keys kernel");
  /* Phase 1: level by level on the unfinished suffix [done, n) of (ka, ia). */
  K *qkey[RDX_SP_MAX_QT_DEPTH + 1];
  I *qcnt[RDX_SP_MAX_QT_DEPTH + 1];
  int64_t F[RDX_SP_MAX_QT_DEPTH + 1];
  RDX_CHECK(m.get(&qkey[0], 1, fn));
  RDX_CHECK(m.get(&qcnt[0], 1, fn));
  {
    K zk = 0;
    I nn = (I)n;
    RDX_CHECK(to_device(ctx, qkey[0], &zk, 1, fn));
    RDX_CHECK(to_device(ctx, qcnt[0], &nn, 1, fn));
  }
  F[0] = 1;
  int64_t done = n <= cap ? n : 0;
  int last_level = 0;
  for (int k = 1; k <= D && done < n; k++) {
    int64_t rn = n - done;
    int sh = 2 * (D - k);
    int last = k == D;
    cub::DoubleBuffer<K> kbuf(ka + done, kb + done);
    cub::DoubleBuffer<I> ibuf(ia + done, ib + done);
    RDX_CHECK(m.cub("rdx_points_build: level sort", [&](void *t, size_t &b) {
      return cub::DeviceRadixSort::SortPairs(t, b, kbuf, ibuf, rn, sh, 2 * D, s);
    }));
    if (kbuf.Current() != ka + done) RDX_CUDA(ctx, cudaMemcpyAsync(ka + done, kbuf.Current(), (size_t)rn * sizeof(K), cudaMemcpyDeviceToDevice, s), fn);
    if (ibuf.Current() != ia + done) RDX_CUDA(ctx, cudaMemcpyAsync(ia + done, ibuf.Current(), (size_t)rn * sizeof(I), cudaMemcpyDeviceToDevice, s), fn);
    /* quadrants of this level among the unfinished points */
    RDX_CHECK(m.get(&qkey[k], (size_t)rn, fn));
    RDX_CHECK(m.get(&qcnt[k], (size_t)rn, fn));
    auto lk = thrust::make_transform_iterator(ka + done, shr<K>{sh});
    auto ones = thrust::make_constant_iterator((I)1);
    RDX_CHECK(m.cub("rdx_points_build: level counts", [&](void *t, size_t &b) {
      return cub::DeviceReduce::ReduceByKey(t, b, lk, qkey[k], ones, qcnt[k], d_runs, sum_op(), rn, s);
    }));
    RDX_CHECK(to_host(ctx, &F[k], d_runs, 1, fn));
    last_level = k;
    /* the quadrant of every point (1-based), its leaf flag's prefix sum, and the stable scatter */
    head_of<K> hf{ka + done, sh};
    auto heads = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), hf);
    RDX_CHECK(m.cub("rdx_points_build: quadrant of points", [&](void *t, size_t &b) {
      return cub::DeviceScan::InclusiveSum(t, b, heads, qidx, rn, s);
    }));
    leaf_flag<I> lf{qidx, qcnt[k], rn, cap, last};
    auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), lf);
    int64_t rn1 = rn + 1;
    RDX_CHECK(m.cub("rdx_points_build: leaf positions", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, flags, pos, rn1, s);
    }));
    int64_t n_leaf = 0;
    RDX_CHECK(to_host(ctx, &n_leaf, pos + rn, 1, fn));
    partition_kernel<K, I><<<blocks_for(rn, 256), 256, 0, s>>>(ka + done, ia + done, rn, qidx, qcnt[k], cap, last, pos, n_leaf,
                                                               kb + done, ib + done);
    SP_LAUNCH_CHECK(ctx, "rdx_points_build: partition kernel");
    RDX_CUDA(ctx, cudaMemcpyAsync(ka + done, kb + done, (size_t)rn * sizeof(K), cudaMemcpyDeviceToDevice, s), fn);
    RDX_CUDA(ctx, cudaMemcpyAsync(ia + done, ib + done, (size_t)rn * sizeof(I), cudaMemcpyDeviceToDevice, s), fn);
    done += n_leaf;
  }
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  double t1 = rdx_now_ms();

  /* Phase 2 (Fig. 3) per level: child counts from the next level's codes >> 2, first child
   * offsets, leaf point offsets by a scan in BFS order. */
  int64_t base[RDX_SP_MAX_QT_DEPTH + 2];
  base[0] = 0;
  for (int l = 0; l <= last_level; l++) base[l + 1] = base[l] + F[l];
  rdx_sp_nodes nodes;
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, base[last_level + 1], RDX_DEVICE, &nodes));
  rdx_status st = RDX_OK;
  int64_t carry = 0;
  for (int l = 0; l <= last_level && st == RDX_OK; l++) {
    int last = l == D;
    int64_t nq = F[l], nq1 = nq + 1;
    int64_t *ppos = nullptr, *irank = nullptr, *nchild = nullptr, *cpos = nullptr;
    st = m.get(&ppos, (size_t)nq1, fn);
    if (st == RDX_OK) st = m.get(&irank, (size_t)nq1, fn);
    if (st != RDX_OK) break;
    td_leaf_points<I> lp{qcnt[l], nq, cap, last};
    auto lpi = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), lp);
    st = m.cub("rdx_points_build: leaf offsets", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, lpi, ppos, nq1, s);
    });
    td_internal<I> ti{qcnt[l], nq, cap, last};
    auto tii = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), ti);
    if (st == RDX_OK)
      st = m.cub("rdx_points_build: internal ranks", [&](void *t, size_t &b) {
        return cub::DeviceScan::ExclusiveSum(t, b, tii, irank, nq1, s);
      });
    int64_t n_int = 0, leaf_total = 0;
    if (st == RDX_OK) st = to_host(ctx, &n_int, irank + nq, 1, fn);
    if (st == RDX_OK) st = to_host(ctx, &leaf_total, ppos + nq, 1, fn);
    if (st != RDX_OK) break;
    if (n_int > 0) {
      if (l == last_level) {
        st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: level %d has internal nodes but no children", fn, l);
        break;
      }
      st = td_children<K>(m, qkey[l + 1], F[l + 1], n_int, l, d_runs, &nchild, &cpos, fn);
      if (st != RDX_OK) break;
    }
    td_nodes_kernel<K, I><<<blocks_for(nq, 128), 128, 0, s>>>(qkey[l], qcnt[l], nq, l, last, cap, base[l], base[l + 1], ppos,
                                                              carry, irank, nchild, cpos, nodes);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_points_build: nodes kernel");
    carry += leaf_total;
  }
  if (st == RDX_OK) st = rdx_sp_pool_alloc(ctx, n, pts->f64, (int)sizeof(K), &pts->pool);
  if (st == RDX_OK) {
    pts->pool.used = n;
    gather_kernel<T, K, I><<<blocks_for(n, 256), 256, 0, s>>>((const T *)in->xy, n, ka, ia, (T *)pts->pool.x, (T *)pts->pool.y,
                                                              pts->pool.id, (K *)pts->pool.key);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, fn);
  }
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    return st;
  }
  pts->nodes = nodes;
  double t2 = rdx_now_ms();
  pts->stats.phase_ms[0] = 0;
  pts->stats.phase_ms[1] = t1 - t0;
  pts->stats.phase_ms[2] = t2 - t1;
  pts->stats.phase_ms[3] = 0;
  return RDX_OK;
}

template <typename T, typename K, typename I>
rdx_status build_typed(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return pts->method == RDX_POINTS_TOP_DOWN ? build_top_down<T, K, I>(ctx, pts, in) : build_bottom_up<T, K, I>(ctx, pts, in);
}

template <typename T>
rdx_status build_t(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  int i64 = in->n > (int64_t)UINT32_MAX - 1;
  if (pts->key64)
    return i64 ? build_typed<T, uint64_t, uint64_t>(ctx, pts, in) : build_typed<T, uint64_t, uint32_t>(ctx, pts, in);
  return i64 ? build_typed<T, uint32_t, uint64_t>(ctx, pts, in) : build_typed<T, uint32_t, uint32_t>(ctx, pts, in);
}

}  // namespace

extern "C" rdx_status rdx_sp_qt_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  RDX_CHECK(pts->f64 ? build_t<double>(ctx, pts, in) : build_t<float>(ctx, pts, in));
  /* the dense layout keeps the pool in Morton order, as a bottom-up build leaves it already */
  return pts->layout == RDX_POINTS_DENSE && pts->method == RDX_POINTS_TOP_DOWN ? rdx_sp_qt_dense_cuda(ctx, pts) : RDX_OK;
}

extern "C" const rdx_sp_ops rdx_sp_qt_cuda_ops = {
    RDX_POINTS_QUADTREE, RDX_BACKEND_CUDA, "quadtree",
    1, RDX_SP_MAX_QT_DEPTH, RDX_SP_DEFAULT_QT_DEPTH, 1,              /* top-down, depths, Morton */
    RDX_POINTS_PAGED, NULL,                                          /* both layouts */
    {{rdx_sp_qt_paged_cuda, RDX_SP_PAGED_SHARE, 1}, {rdx_sp_qt_merge_cuda, 0, 0}}, rdx_sp_rebuild_cuda, 1,
    rdx_sp_scan_cuda, rdx_sp_qt_build_cuda, rdx_sp_query_cuda, rdx_sp_resident, rdx_sp_storage_free, rdx_cuda_sync,
};
