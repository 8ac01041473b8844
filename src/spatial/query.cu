/*
 * query.cu: batched queries on the GPU, G-PICS Section 3 (Lewis and Tu).
 *
 * Point search, window and within-distance queries:
 *  Step I (Leaf-Finding): one thread per query descends the tree (traverse_hd.h, the same code
 *    the CPU runs) and registers the query at every leaf it needs, with a flag when the query
 *    covers the whole leaf. Registrations are counted, scanned and written query-major (r), then
 *    sorted by leaf with CUB, so each leaf's query list is contiguous (G-PICS keeps per-leaf
 *    lists; a sort gives them without atomics, in a deterministic order).
 *  Step II (Leaf-List-Processing): one block per leaf with queries. With several queries the
 *    block stages the leaf's points in shared memory in tiles of 1024 and each thread tests its
 *    query against the tile (G-PICS: the leaf is read from global memory once per batch); a
 *    leaf with one query is scanned by the whole block straight from global memory, a block-wide
 *    scan placing the matches in point order. Covered leaves are counted or copied without tests.
 *  Counts are per registration; a query's count is their sum. The fill scans the registration
 *    counts (query-major, so the scan equals the caller's offsets, which are checked), writes
 *    every registration's matches at its position, and sorts each query's ids (CUB segmented
 *    sort, keys/entries.cu).
 * kNN (exact): queries are taken in Morton order of their points so neighbouring warps share
 *    leaves in cache (the sort is charged to the call). k <= 32: one warp per query walks the
 *    branch and bound of traverse_hd.h together, scans leaves 32 points at a time and keeps the
 *    k best spread over its lanes (knn_warp_kernel). k > 32: one thread per query runs
 *    rdx_sp_knn itself with its k candidates in global scratch.
 *    G-PICS answers kNN as within-distance plus selection with a guessed radius; the branch and
 *    bound needs no radius and is exact on the first pass.
 */
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "spatial/sp_cuda.cuh"

namespace {

using namespace rdx_sp;

#define QBLOCK 128
#define TILE 1024

__global__ void reg_count_kernel(rdx_sp_view v, const void *q, int f64, int type, int64_t m, uint64_t *cnt) {
  SP_FOR(i, m) {
    rdx_sp_q qq = rdx_sp_load_query(q, i, type, f64);
    rdx_sp_iter it;
    rdx_sp_iter_init(&it, &v, type, &qq);
    int64_t leaf;
    int full;
    uint64_t c = 0;
    while (rdx_sp_iter_next(&it, &v, &leaf, &full)) c++;
    cnt[i] = c;
  }
}

__global__ void reg_write_kernel(rdx_sp_view v, const void *q, int f64, int type, int64_t m, const uint64_t *off,
                                 uint32_t *leaf_out, uint64_t *rid, int64_t *rq, uint8_t *rfull) {
  SP_FOR(i, m) {
    rdx_sp_q qq = rdx_sp_load_query(q, i, type, f64);
    rdx_sp_iter it;
    rdx_sp_iter_init(&it, &v, type, &qq);
    int64_t leaf;
    int full;
    uint64_t r = off[i];
    while (rdx_sp_iter_next(&it, &v, &leaf, &full)) {
      leaf_out[r] = (uint32_t)leaf;
      rid[r] = r;
      rq[r] = i;
      rfull[r] = (uint8_t)full;
      r++;
    }
  }
}

/* Step II. FILL = 0: rcnt[r] = matches of registration r. FILL = 1: write them at rpos[r]. */
template <typename T, int FILL>
__global__ void __launch_bounds__(QBLOCK) leaf_kernel(rdx_sp_view v, const T *q, int type, const uint32_t *uniq,
                                                      const int64_t *seg_start, const int64_t *seg_len, int64_t n_segs,
                                                      const uint64_t *srid, const int64_t *rq, const uint8_t *rfull,
                                                      uint64_t *rcnt, const uint64_t *rpos, uint64_t *rows) {
  __shared__ T sx[TILE], sy[TILE];
  typedef cub::BlockScan<int, QBLOCK> scan_t;
  __shared__ typename scan_t::TempStorage scan_tmp;
  const T *X = (const T *)v.x, *Y = (const T *)v.y;
  const int tid = threadIdx.x;
  for (int64_t sg = blockIdx.x; sg < n_segs; sg += gridDim.x) {
    int64_t leaf = uniq[sg];
    int64_t p0 = v.fpos[leaf], pn = v.len[leaf], e0 = seg_start[sg], ne = seg_len[sg];
    if (ne == 1) { /* one query: the block scans the leaf from global memory */
      uint64_t r = srid[e0];
      rdx_sp_q qq = rdx_sp_load_query(q, rq[r], type, sizeof(T) == 8);
      if (rfull[r]) {
        if (FILL)
          for (int64_t j = tid; j < pn; j += QBLOCK) rows[rpos[r] + j] = v.id[p0 + j];
        else if (tid == 0)
          rcnt[r] = (uint64_t)pn;
        continue;
      }
      int64_t base = 0;
      for (int64_t t0 = 0; t0 < pn; t0 += QBLOCK) {
        int64_t j = t0 + tid;
        int hit = j < pn && rdx_sp_hit(type, &qq, (double)X[p0 + j], (double)Y[p0 + j]);
        int pre, total;
        scan_t(scan_tmp).ExclusiveSum(hit, pre, total);
        if (FILL && hit) rows[rpos[r] + base + pre] = v.id[p0 + j];
        base += total;
        __syncthreads(); /* scan_tmp is reused */
      }
      if (!FILL && tid == 0) rcnt[r] = (uint64_t)base;
      continue;
    }
    /* several queries: tiles of the leaf in shared memory, one query per thread */
    for (int64_t c0 = 0; c0 < ne; c0 += QBLOCK) {
      int64_t e = c0 + tid;
      int have = e < ne;
      uint64_t r = have ? srid[e0 + e] : 0;
      int full = have ? rfull[r] : 1;
      rdx_sp_q qq = {0, 0, 0, 0, 0};
      if (have) qq = rdx_sp_load_query(q, rq[r], type, sizeof(T) == 8);
      uint64_t local = 0, out = FILL && have ? rpos[r] : 0;
      if (have && full) {
        if (FILL)
          for (int64_t j = 0; j < pn; j++) rows[out + j] = v.id[p0 + j];
        local = (uint64_t)pn;
      }
      if (__syncthreads_or(have && !full)) {
        for (int64_t t0 = 0; t0 < pn; t0 += TILE) {
          int64_t tn = pn - t0 < TILE ? pn - t0 : TILE;
          __syncthreads();
          for (int64_t j = tid; j < tn; j += QBLOCK) {
            sx[j] = X[p0 + t0 + j];
            sy[j] = Y[p0 + t0 + j];
          }
          __syncthreads();
          if (have && !full)
            for (int64_t j = 0; j < tn; j++)
              if (rdx_sp_hit(type, &qq, (double)sx[j], (double)sy[j])) {
                if (FILL) rows[out + local] = v.id[p0 + t0 + j];
                local++;
              }
        }
      }
      if (!FILL && have) rcnt[r] = local;
      __syncthreads();
    }
  }
}

/* Per query: the sum of its registrations' counts (count), or the check of the caller's
 * offsets against it (fill). */
__global__ void sum_kernel(const uint64_t *reg_off, const uint64_t *rcnt, int64_t m, uint64_t *counts, const uint64_t *offsets,
                           unsigned long long *bad) {
  SP_FOR(i, m) {
    uint64_t c = 0;
    for (uint64_t r = reg_off[i]; r < reg_off[i + 1]; r++) c += rcnt[r];
    if (counts) counts[i] = c;
    if (offsets && (offsets[i + 1] - offsets[i] != c || offsets[i + 1] < offsets[i] || (i == 0 && offsets[0] != 0)))
      atomicMin(bad, (unsigned long long)i);
  }
}

struct tail0 { /* c[i], and 0 at i == m so an exclusive scan over m + 1 ends with the total */
  const uint64_t *c;
  int64_t m;
  __host__ __device__ uint64_t operator()(int64_t i) const { return i < m ? c[i] : 0; }
};
struct add_op {
  template <typename T>
  __host__ __device__ T operator()(const T &a, const T &b) const {
    return a + b;
  }
};

struct reg_state {
  int64_t R = 0, n_segs = 0;
  uint64_t *reg_off = nullptr;  /* m + 1 */
  uint64_t *srid = nullptr;     /* R, registrations sorted by leaf */
  int64_t *rq = nullptr;        /* R, query of registration r */
  uint8_t *rfull = nullptr;     /* R */
  uint32_t *uniq = nullptr;     /* leaves with queries */
  int64_t *seg_start = nullptr, *seg_len = nullptr;
  uint64_t *rcnt = nullptr;     /* R */
};

/* Step I: registrations, sorted into per-leaf lists. */
rdx_status step1(rdx_context *ctx, scratch &mm, const rdx_points *pts, const rdx_sp_view &v, const rdx_sp_qin *in,
                 reg_state &g) {
  const char *fn = "rdx_points_query (step I)";
  cudaStream_t s = rdx_stream(ctx);
  int64_t m = in->m, m1 = m + 1;
  uint64_t *cnt;
  RDX_CHECK(mm.get(&cnt, (size_t)m, fn));
  RDX_CHECK(mm.get(&g.reg_off, (size_t)m1, fn));
  reg_count_kernel<<<blocks_for(m, QBLOCK), QBLOCK, 0, s>>>(v, in->q, pts->f64, in->type, m, cnt);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: register kernel");
  auto cin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), tail0{cnt, m});
  RDX_CHECK(mm.cub("rdx_points_query: registration scan", [&](void *t, size_t &b) {
    return cub::DeviceScan::ExclusiveSum(t, b, cin, g.reg_off, m1, s);
  }));
  uint64_t R = 0;
  RDX_CHECK(to_host(ctx, &R, g.reg_off + m, 1, fn));
  g.R = (int64_t)R;
  mm.drop(cnt);
  if (R == 0) return RDX_OK;
  uint32_t *lk, *lk2;
  uint64_t *rid2;
  RDX_CHECK(mm.get(&lk, R, fn));
  RDX_CHECK(mm.get(&lk2, R, fn));
  RDX_CHECK(mm.get(&g.srid, R, fn));
  RDX_CHECK(mm.get(&rid2, R, fn));
  RDX_CHECK(mm.get(&g.rq, R, fn));
  RDX_CHECK(mm.get(&g.rfull, R, fn));
  RDX_CHECK(mm.get(&g.rcnt, R, fn));
  reg_write_kernel<<<blocks_for(m, QBLOCK), QBLOCK, 0, s>>>(v, in->q, pts->f64, in->type, m, g.reg_off, lk, g.srid, g.rq,
                                                            g.rfull);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: register kernel");
  cub::DoubleBuffer<uint32_t> kb(lk, lk2);
  cub::DoubleBuffer<uint64_t> vb(g.srid, rid2);
  int bits = bits_for((uint64_t)(v.n_nodes > 0 ? v.n_nodes - 1 : 0));
  if (bits == 0) bits = 1;
  int64_t RR = (int64_t)R;
  RDX_CHECK(mm.cub("rdx_points_query: registrations by leaf", [&](void *t, size_t &b) {
    return cub::DeviceRadixSort::SortPairs(t, b, kb, vb, RR, 0, bits, s);
  }));
  g.srid = vb.Current();
  const uint32_t *sorted_leaf = kb.Current();
  int64_t *d_runs;
  RDX_CHECK(mm.get(&d_runs, 1, fn));
  RDX_CHECK(mm.get(&g.uniq, R, fn));
  RDX_CHECK(mm.get(&g.seg_len, R, fn));
  RDX_CHECK(mm.get(&g.seg_start, R + 1, fn));
  auto ones = thrust::make_constant_iterator((int64_t)1);
  RDX_CHECK(mm.cub("rdx_points_query: leaf lists", [&](void *t, size_t &b) {
    return cub::DeviceReduce::ReduceByKey(t, b, sorted_leaf, g.uniq, ones, g.seg_len, d_runs, add_op(), RR, s);
  }));
  RDX_CHECK(to_host(ctx, &g.n_segs, d_runs, 1, fn));
  int64_t ns = g.n_segs;
  RDX_CHECK(mm.cub("rdx_points_query: leaf lists", [&](void *t, size_t &b) {
    return cub::DeviceScan::ExclusiveSum(t, b, g.seg_len, g.seg_start, ns, s);
  }));
  return RDX_OK;
}

template <typename T>
rdx_status step2(rdx_context *ctx, const rdx_sp_view &v, const rdx_sp_qin *in, reg_state &g, const uint64_t *rpos,
                 uint64_t *rows) {
  if (g.n_segs == 0) return RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = g.n_segs < (int64_t)1 << 20 ? (unsigned)g.n_segs : 1u << 20;
  if (rows)
    leaf_kernel<T, 1><<<grid, QBLOCK, 0, s>>>(v, (const T *)in->q, in->type, g.uniq, g.seg_start, g.seg_len, g.n_segs, g.srid,
                                               g.rq, g.rfull, g.rcnt, rpos, rows);
  else
    leaf_kernel<T, 0><<<grid, QBLOCK, 0, s>>>(v, (const T *)in->q, in->type, g.uniq, g.seg_start, g.seg_len, g.n_segs, g.srid,
                                               g.rq, g.rfull, g.rcnt, rpos, rows);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: leaf kernel");
  return RDX_OK;
}

rdx_status gpics(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts, const uint64_t *offsets,
                 uint64_t *rows) {
  const char *fn = rows ? "rdx_points_query_fill" : "rdx_points_query_count";
  cudaStream_t s = rdx_stream(ctx);
  rdx_sp_view v = rdx_sp_view_of(pts);
  if (v.n_nodes > (int64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld tree nodes exceed the GPU queries' 2^32", fn, (long long)v.n_nodes);
  rdx_points *mp = (rdx_points *)pts; /* the arena is a cache: queries may grow it */
  scratch mm(ctx, &mp->arena, &mp->arena_bytes, arena_limit(pts));
  reg_state g;
  RDX_CHECK(step1(ctx, mm, pts, v, in, g));
  int64_t m = in->m;
  RDX_CHECK(pts->f64 ? step2<double>(ctx, v, in, g, nullptr, nullptr) : step2<float>(ctx, v, in, g, nullptr, nullptr));
  unsigned long long *bad = nullptr;
  RDX_CHECK(mm.get(&bad, 1, fn));
  unsigned long long none = ~0ull;
  RDX_CHECK(to_device(ctx, bad, &none, 1, fn));
  sum_kernel<<<blocks_for(m, 256), 256, 0, s>>>(g.reg_off, g.rcnt, m, rows ? nullptr : counts, rows ? offsets : nullptr, bad);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: sum kernel");
  if (!rows) {
    rdx_status st = rdx_cuda_sync(ctx, fn);
    if (st == RDX_OK) mm.settle();
    return st;
  }
  unsigned long long hb = 0;
  RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  if (hb != ~0ull)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets do not match this batch's counts (first at query %llu)", fn, hb);
  if (g.R > 0) {
    uint64_t *rpos;
    RDX_CHECK(mm.get(&rpos, (size_t)g.R, fn));
    int64_t R = g.R;
    RDX_CHECK(mm.cub("rdx_points_query: registration offsets", [&](void *t, size_t &b) {
      return cub::DeviceScan::ExclusiveSum(t, b, g.rcnt, rpos, R, s);
    }));
    RDX_CHECK(pts->f64 ? step2<double>(ctx, v, in, g, rpos, rows) : step2<float>(ctx, v, in, g, rpos, rows));
  }
  RDX_CHECK(rdx_csr_sort(ctx, offsets, m, rows));
  rdx_status st = rdx_cuda_sync(ctx, fn);
  if (st == RDX_OK) mm.settle();
  return st;
}

/* ---- kNN ---- */

__global__ void qkey_kernel(const void *q, int f64, int64_t m, rdx_sp_grid g, int shift, uint32_t *key, uint64_t *idx) {
  SP_FOR(i, m) {
    double x = rdx_sp_at(q, 2 * i, f64), y = rdx_sp_at(q, 2 * i + 1, f64);
    key[i] = (uint32_t)(rdx_sp_point_key(&g, x, y) >> shift);
    idx[i] = (uint64_t)i;
  }
}

__global__ void fill_kernel(uint64_t *p, int64_t m, uint64_t v) {
  SP_FOR(i, m) p[i] = v;
}

__global__ void knn_check_kernel(const uint64_t *offsets, int64_t m, uint64_t want, unsigned long long *bad) {
  SP_FOR(i, m) {
    if (offsets[i + 1] - offsets[i] != want || offsets[i + 1] < offsets[i] || (i == 0 && offsets[0] != 0))
      atomicMin(bad, (unsigned long long)i);
  }
}

__global__ void __launch_bounds__(128) knn_kernel(rdx_sp_view v, const void *q, int f64, const uint64_t *order, int64_t c0,
                                                  int64_t cn, int k, double *hd, uint64_t *hi, const uint64_t *offsets,
                                                  uint64_t *rows) {
  SP_FOR(t, cn) {
    int64_t i = (int64_t)order[c0 + t];
    double x = rdx_sp_at(q, 2 * i, f64), y = rdx_sp_at(q, 2 * i + 1, f64);
    double *d = hd + t * (int64_t)k;
    uint64_t *id = hi + t * (int64_t)k;
    int got = rdx_sp_knn(&v, x, y, k, d, id);
    uint64_t o = offsets[i];
    for (int j = 0; j < got; j++) rows[o + j] = id[j];
  }
}

/* ---- kNN for k <= 32: one warp per query ----
 * The per-thread walk above diverges (each lane in its own node), scans its leaves point by point
 * (32 lanes read 32 different leaves: uncoalesced) and keeps its heap in global memory. Here a
 * warp answers one query: every lane runs the same walk (the node order and pruning rule of
 * rdx_sp_knn, through the shared pieces of traverse_hd.h), the stack lives in shared memory (one
 * per warp), the children of a node are tested by one lane each, and a leaf is scanned 32
 * consecutive points at a time (coalesced). The k best candidates form a sorted list spread over
 * the lanes: lane j holds the j-th best (d2, id). A point is a candidate only when it beats the
 * current k-th best (the cheap reject every lane does on its own point); candidates of a chunk go
 * in one by one (ballot, then a shift of the list's tail up by one lane). The top k of a set by
 * (d2, id) is unique (ids are unique), so the answer equals the CPU's whatever the order of
 * insertion. A chunk with many candidates (a query's first chunks, when nothing prunes yet) is
 * instead sorted by a bitonic network and merged with the list in one step. */

#define KNN_WARPS 4     /* warps per block */
/* Queries per block and round: a block takes a run of consecutive queries in Morton order and its
 * warps interleave over it, so the warps resident on one SM scan the same few leaves and read
 * them from L1 (with a plain grid-stride order they worked on queries a whole grid apart). */
#define KNN_CHUNK (8 * KNN_WARPS)
#define KNN_MERGE_MIN 8 /* more candidates than this in a chunk: sort and merge, not one by one */
/* the stack bound of rdx_sp_knn: a quadtree pop pushes <= 4 (3 * depth + 1), a k-d pop 2 */
static_assert(3 * RDX_SP_MAX_QT_DEPTH + 1 <= RDX_SP_STACK && RDX_SP_MAX_KD_DEPTH + 1 <= RDX_SP_STACK, "kNN stack");

__device__ __forceinline__ double shfl_d(double v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ uint64_t shfl_u(uint64_t v, int src) {
  return (uint64_t)__shfl_sync(0xffffffffu, (unsigned long long)v, src);
}
__device__ __forceinline__ double xor_d(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ uint64_t xor_u(uint64_t v, int m) {
  return (uint64_t)__shfl_xor_sync(0xffffffffu, (unsigned long long)v, m);
}

/* (d2, id) entries with a flag: empty entries (e = 1) order after every real one and equal to
 * each other (so any run of them is sorted, as the bitonic networks need), and a real candidate
 * never competes with a sentinel distance. */
__device__ __forceinline__ bool ent_less(double ad, uint64_t ai, int ae, double bd, uint64_t bi, int be) {
  return ae < be || (ae == 0 && be == 0 && rdx_sp_less(ad, ai, bd, bi));
}

/* One compare-exchange step of a bitonic network across lanes at distance j: the lane keeps the
 * smaller of its entry and its partner's when keep_min, else the larger. */
__device__ __forceinline__ void ent_cx(double &d, uint64_t &id, int &e, int j, bool keep_min) {
  const double od = xor_d(d, j);
  const uint64_t oi = xor_u(id, j);
  const int oe = __shfl_xor_sync(0xffffffffu, e, j);
  if (keep_min ? ent_less(od, oi, oe, d, id, e) : ent_less(d, id, e, od, oi, oe)) d = od, id = oi, e = oe;
}

/* Sort the warp's 32 entries ascending (lane 0 the least): bitonic sort. */
__device__ __forceinline__ void ent_sort(double &d, uint64_t &id, int &e, int lane) {
#pragma unroll
  for (int kk = 2; kk <= 32; kk <<= 1)
#pragma unroll
    for (int j = kk >> 1; j > 0; j >>= 1) ent_cx(d, id, e, j, ((lane & kk) == 0) == ((lane & j) == 0));
}

/* Sort a bitonic sequence of 32 entries ascending: bitonic merge. */
__device__ __forceinline__ void ent_merge(double &d, uint64_t &id, int &e, int lane) {
#pragma unroll
  for (int j = 16; j > 0; j >>= 1) ent_cx(d, id, e, j, (lane & j) == 0);
}

/* Where a warp's scan of a quadtree leaf starts: near the query in the leaf's Morton order, as
 * rdx_sp_leaf_scan_start (traverse_hd.h) says why, so that the first chunks fill the k-best list
 * with close candidates and later chunks take the cheap reject only. Instead of a binary search,
 * each lane samples one of 32 evenly spaced codes; the query's code falls between the last
 * sample <= it and the next. */
__device__ __forceinline__ int64_t knn_scan_start(const rdx_sp_view &v, int64_t p0, int64_t pn, uint64_t qc, int lane) {
  if (pn <= 64) return 0;
  const uint64_t c = rdx_sp_slot_code(&v, p0 + (((int64_t)lane * pn) >> 5));
  const int nb = __popc(__ballot_sync(0xffffffffu, c <= qc)); /* samples 0 .. nb-1 are <= qc */
  const int64_t mid = nb == 0 ? 0 : (((int64_t)(2 * nb - 1) * pn) >> 6); /* between samples nb-1 and nb */
  const int64_t s0 = mid - 32; /* the first round of 64 points centred on it, inside the leaf */
  return s0 < 0 ? 0 : s0 > pn - 64 ? pn - 64 : s0;
}

template <typename T, bool KD>
__global__ void __launch_bounds__(32 * KNN_WARPS) knn_warp_kernel(rdx_sp_view v, const T *q, const uint64_t *order, int64_t m,
                                                                  int k, const uint64_t *offsets, uint64_t *rows) {
  constexpr int S = RDX_SP_STACK;
  constexpr unsigned FULL = 0xffffffffu;
  __shared__ int64_t s_node[KNN_WARPS][S];
  __shared__ double s_md[KNN_WARPS][S];
  __shared__ double s_box[KD ? KNN_WARPS : 1][KD ? S : 1][4]; /* k-d regions */
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int64_t *st_node = s_node[w];
  double *st_md = s_md[w];
  double(*st_box)[4] = s_box[KD ? w : 0];
  const T *X = (const T *)v.x, *Y = (const T *)v.y;
  const int64_t stride = (int64_t)gridDim.x * KNN_CHUNK;
  /* the loop bounds are the same for every lane of the warp: the warp stays converged */
  for (int64_t t0 = (int64_t)blockIdx.x * KNN_CHUNK; t0 < m; t0 += stride)
  for (int64_t t = t0 + w; t < t0 + KNN_CHUNK && t < m; t += KNN_WARPS) {
    const int64_t i = (int64_t)order[t];
    const double qx = (double)q[2 * i], qy = (double)q[2 * i + 1];
    const uint64_t qc = KD ? 0 : rdx_sp_point_key(&v.g, qx, qy);
    double ld = 0.0;  /* this lane's list entry (valid for lane < size) */
    uint64_t li = 0;
    int size = 0;     /* warp-uniform from here on: size, wd, wi, top */
    double wd = 0.0;  /* the k-th best, once size == k */
    uint64_t wi = 0;
    int top = 0;
    __syncwarp(); /* the last query's stack reads are done */
    if (v.n_nodes > 0) {
      if (lane == 0) {
        st_node[0] = 0;
        st_md[0] = 0.0;
        if (KD) st_box[0][0] = v.g.x0, st_box[0][1] = v.g.y0, st_box[0][2] = v.g.x1, st_box[0][3] = v.g.y1;
      }
      top = 1;
    }
    __syncwarp();
    while (top > 0) {
      const int ts = --top;
      const int64_t nd = st_node[ts];
      const double md = st_md[ts];
      double pr[4] = {0.0, 0.0, 0.0, 0.0};
      if (KD) pr[0] = st_box[ts][0], pr[1] = st_box[ts][1], pr[2] = st_box[ts][2], pr[3] = st_box[ts][3];
      __syncwarp(); /* every lane has read slot ts before children overwrite it */
      if (size == k && rdx_sp_knn_prune(&v, md, wd)) continue;
      if (v.leaf[nd]) {
        const int64_t p0 = v.fpos[nd], pn = v.len[nd];
        const int64_t s0 = KD ? 0 : knn_scan_start(v, p0, pn, qc, lane);
        /* one chunk of 32 points whose coordinates (px, py) at slot p were loaded already; the
         * lane holds a point when in_leaf */
        auto chunk = [&](bool in_leaf, int64_t p, T px, T py) {
          bool cand = false;
          double d = 0.0;
          uint64_t id = 0;
          if (in_leaf) {
            d = rdx_sp_d2((double)px, (double)py, qx, qy);
            if (size < k || d < wd) { /* ids are read only for points that may enter */
              id = v.id[p];
              cand = true;
            } else if (d == wd) {
              id = v.id[p];
              cand = id < wi;
            }
          }
          unsigned mask = __ballot_sync(FULL, cand);
          const int nm = __popc(mask);
          if (nm > KNN_MERGE_MIN) {
            /* many candidates (the first chunks of a query): sort them, then keep the 32 least of
             * list and chunk as the element-wise least of the list and the reversed chunk (a
             * bitonic sequence) and merge it; the list's entries past size count as empty */
            int ce = cand ? 0 : 1;
            ent_sort(d, id, ce, lane);
            const double rd = shfl_d(d, 31 - lane);
            const uint64_t ri = shfl_u(id, 31 - lane);
            const int re = __shfl_sync(FULL, ce, 31 - lane);
            int le = lane < size ? 0 : 1;
            if (ent_less(rd, ri, re, ld, li, le)) ld = rd, li = ri, le = re;
            ent_merge(ld, li, le, lane);
            size = size + nm < k ? size + nm : k;
            if (size == k) {
              wd = shfl_d(ld, k - 1);
              wi = shfl_u(li, k - 1);
            }
            mask = 0;
          }
          while (mask) { /* insert the chunk's candidates in lane order */
            const int src = __ffs(mask) - 1;
            mask &= mask - 1;
            const double cd = shfl_d(d, src);
            const uint64_t ci = shfl_u(id, src);
            if (size == k && !rdx_sp_less(cd, ci, wd, wi)) continue; /* an earlier insertion beat it */
            const int pos = __popc(__ballot_sync(FULL, lane < size && rdx_sp_less(ld, li, cd, ci)));
            const double ud = shfl_d(ld, lane > 0 ? lane - 1 : 0);
            const uint64_t ui = shfl_u(li, lane > 0 ? lane - 1 : 0);
            if (lane > pos) ld = ud, li = ui;
            if (lane == pos) ld = cd, li = ci;
            if (size < k) size++;
            if (size == k) {
              wd = shfl_d(ld, k - 1);
              wi = shfl_u(li, k - 1);
            }
          }
        };
        /* two chunks per round, both loads issued before either is used: the leaf scan waits on
         * memory, and a warp has nothing else to hide that latency with */
        for (int64_t b = 0; b < pn; b += 64) { /* pn is warp-uniform: so is this loop */
          const int64_t j0 = b + lane, j1 = b + 32 + lane; /* scan positions, from s0 round the leaf */
          int64_t a0 = s0 + j0, a1 = s0 + j1;
          a0 = p0 + (a0 >= pn ? a0 - pn : a0);
          a1 = p0 + (a1 >= pn ? a1 - pn : a1);
          T x0 = 0, y0 = 0, x1 = 0, y1 = 0;
          if (j0 < pn) x0 = X[a0], y0 = Y[a0];
          if (j1 < pn) x1 = X[a1], y1 = Y[a1];
          chunk(j0 < pn, a0, x0, y0);
          if (b + 32 < pn) chunk(j1 < pn, a1, x1, y1);
        }
        continue;
      }
      const int64_t c0 = v.fpos[nd];
      if (KD) {
        double r[4] = {0.0, 0.0, 0.0, 0.0}, mc = 0.0;
        if (lane < 2) mc = rdx_sp_kd_child(&v, nd, pr, lane, qx, qy, r);
        const double m0 = shfl_d(mc, 0), m1 = shfl_d(mc, 1);
        if (lane < 2) {
          const int u = top + rdx_sp_kd_child_slot(m0, m1, lane);
          st_node[u] = c0 + lane;
          st_md[u] = mc;
          st_box[u][0] = r[0], st_box[u][1] = r[1], st_box[u][2] = r[2], st_box[u][3] = r[3];
        }
        top += 2;
      } else {
        const int nc = (int)v.len[nd];
        double mc = 0.0, cm[4];
        if (lane < nc) mc = rdx_sp_qt_child_md(&v, c0 + lane, qx, qy);
#pragma unroll
        for (int c = 0; c < 4; c++) cm[c] = shfl_d(mc, c);
        if (lane < nc) {
          const int u = top + rdx_sp_qt_child_slot(cm, nc, mc, lane);
          st_node[u] = c0 + lane;
          st_md[u] = mc;
        }
        top += nc;
      }
      __syncwarp(); /* the children are written before the next pop reads them */
    }
    const uint64_t o = offsets[i];
    if (lane < size) rows[o + lane] = li;
  }
}

rdx_status knn(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts, const uint64_t *offsets,
               uint64_t *rows) {
  const char *fn = rows ? "rdx_points_query_fill" : "rdx_points_query_count";
  cudaStream_t s = rdx_stream(ctx);
  int64_t m = in->m;
  uint64_t want = (uint64_t)(pts->n < in->k ? pts->n : in->k);
  if (!rows) {
    fill_kernel<<<blocks_for(m, 256), 256, 0, s>>>(counts, m, want);
    SP_LAUNCH_CHECK(ctx, "rdx_points_query: knn counts kernel");
    return rdx_cuda_sync(ctx, fn);
  }
  rdx_points *mp = (rdx_points *)pts;
  scratch mm(ctx, &mp->arena, &mp->arena_bytes, arena_limit(pts));
  unsigned long long *bad = nullptr;
  RDX_CHECK(mm.get(&bad, 1, fn));
  unsigned long long none = ~0ull, hb = 0;
  RDX_CHECK(to_device(ctx, bad, &none, 1, fn));
  knn_check_kernel<<<blocks_for(m, 256), 256, 0, s>>>(offsets, m, want, bad);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: knn check kernel");
  RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  if (hb != ~0ull)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets do not match this batch's counts (first at query %llu)", fn, hb);
  /* queries in Morton order of their points */
  uint32_t *ka, *kb;
  uint64_t *ia, *ib;
  RDX_CHECK(mm.get(&ka, (size_t)m, fn));
  RDX_CHECK(mm.get(&kb, (size_t)m, fn));
  RDX_CHECK(mm.get(&ia, (size_t)m, fn));
  RDX_CHECK(mm.get(&ib, (size_t)m, fn));
  rdx_sp_view v = rdx_sp_view_of(pts);
  int shift = v.g.depth > 16 ? 2 * (v.g.depth - 16) : 0;
  qkey_kernel<<<blocks_for(m, 256), 256, 0, s>>>(in->q, pts->f64, m, v.g, shift, ka, ia);
  SP_LAUNCH_CHECK(ctx, "rdx_points_query: query keys kernel");
  cub::DoubleBuffer<uint32_t> kbuf(ka, kb);
  cub::DoubleBuffer<uint64_t> ibuf(ia, ib);
  RDX_CHECK(mm.cub("rdx_points_query: query order", [&](void *t, size_t &b) {
    return cub::DeviceRadixSort::SortPairs(t, b, kbuf, ibuf, m, 0, 32, s);
  }));
  const uint64_t *order = ibuf.Current();
  if (in->k <= 32) { /* one warp per query, no scratch */
    unsigned grid = blocks_for((m + KNN_CHUNK - 1) / KNN_CHUNK, 1);
    const void *qp = in->q;
    if (pts->f64 && v.kd)
      knn_warp_kernel<double, true><<<grid, 32 * KNN_WARPS, 0, s>>>(v, (const double *)qp, order, m, in->k, offsets, rows);
    else if (pts->f64)
      knn_warp_kernel<double, false><<<grid, 32 * KNN_WARPS, 0, s>>>(v, (const double *)qp, order, m, in->k, offsets, rows);
    else if (v.kd)
      knn_warp_kernel<float, true><<<grid, 32 * KNN_WARPS, 0, s>>>(v, (const float *)qp, order, m, in->k, offsets, rows);
    else
      knn_warp_kernel<float, false><<<grid, 32 * KNN_WARPS, 0, s>>>(v, (const float *)qp, order, m, in->k, offsets, rows);
    SP_LAUNCH_CHECK(ctx, "rdx_points_query: knn warp kernel");
    rdx_status st = rdx_cuda_sync(ctx, fn);
    if (st == RDX_OK) mm.settle();
    return st;
  }
  /* k > 32: one thread per query; candidate heaps: 16 bytes per candidate; at most 256 MiB at a time */
  int64_t chunk = ((int64_t)256 << 20) / ((int64_t)in->k * 16);
  if (chunk < 1) chunk = 1;
  if (chunk > m) chunk = m;
  double *hd;
  uint64_t *hi;
  RDX_CHECK(mm.get(&hd, (size_t)chunk * (size_t)in->k, fn));
  RDX_CHECK(mm.get(&hi, (size_t)chunk * (size_t)in->k, fn));
  for (int64_t c0 = 0; c0 < m; c0 += chunk) {
    int64_t cn = m - c0 < chunk ? m - c0 : chunk;
    knn_kernel<<<blocks_for(cn, 128), 128, 0, s>>>(v, in->q, pts->f64, order, c0, cn, in->k, hd, hi, offsets, rows);
    SP_LAUNCH_CHECK(ctx, "rdx_points_query: knn kernel");
  }
  rdx_status st = rdx_cuda_sync(ctx, fn);
  if (st == RDX_OK) mm.settle();
  return st;
}

}  // namespace

extern "C" rdx_status rdx_sp_query_cuda(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                                        const uint64_t *offsets, uint64_t *rows) {
  if (in->type == RDX_SP_KNN) return knn(ctx, pts, in, counts, offsets, rows);
  return gpics(ctx, pts, in, counts, offsets, rows);
}
