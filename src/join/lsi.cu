/*
 * lsi.cu: segment intersection (LSI) on the GPU: lsi_hd.h's rays as kernels over the soft BVH of
 * R's groups (CUDA contexts), and the stages around the traversal, which the OptiX backend shares
 * (rdx_jn_lsi_gpu: its count and fill passes are the OptiX programs', src/join/optix/launch.cu).
 * The stages are lsi.c's, and the answers equal the CPU's: the same functions decide every pair,
 * every point is the same correctly rounded value, and rows are sorted and made unique by value.
 *   count   one thread per S edge counts its intersecting R edges (and, reduced per warp, the
 *           statistics);
 *   fill    rdx_csr_scan_cuda of the counts, then the same traversal writing (r edge << 32 |
 *           s edge) at each S edge's offset; a thread that meets another count sets a flag;
 *   points  (want_points) per edge pair its number of points, scanned; the points written with
 *           their (r feature << 32 | s feature) key; three stable CUB radix sorts (y, x, then the
 *           key) carrying a u32 permutation; first-of-a-run flags scanned into the output rows;
 *   pairs   edge pairs mapped in place to feature keys, CUB radix sorted, first-of-a-run flags
 *           scanned into the output rows.
 * Every buffer comes from the context's account; the result's arrays are device memory.
 */
#include <cub/cub.cuh>

#include "core/cuda_util.cuh"
#include "join/join.h"
#include "join/lsi_hd.h"

namespace {

constexpr int TPB = 128;
constexpr int TALLY = 4; /* candidates, rays, clipped, brute */


__device__ uint64_t warp_sum(uint64_t v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
  return v;
}

/* Count (pairs NULL: counts[e] and the tally) or fill (pairs at offsets[e], mismatch flag). The
 * loop runs the same number of times in every thread of a block, so the warp sums see all lanes. */
__global__ void edges_kernel(rdx_jn_lsi_r r, const double *sxy, const uint32_t *send, int64_t n_s, uint64_t *counts,
                             const uint64_t *offsets, uint64_t *pairs, unsigned long long *tally, int *mismatch) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t base = blockIdx.x * (int64_t)blockDim.x; base < n_s; base += stride) {
    int64_t e = base + threadIdx.x;
    uint64_t t[TALLY] = {0, 0, 0, 0};
    if (e < n_s) {
      rdx_jn_lsi_state st;
      const double *s0 = sxy + 2 * e, *s1 = sxy + 2 * (uint64_t)send[e];
      uint64_t *out = pairs ? pairs + offsets[e] : NULL;
      uint64_t cap = pairs ? offsets[e + 1] - offsets[e] : 0;
      rdx_jn_lsi_begin(&r, s0, s1, (uint32_t)e, out, cap, &st);
      int how = rdx_jn_lsi_edge(&r, &st);
      if (pairs) {
        if (st.hits != cap) *mismatch = 1;
      } else {
        counts[e] = st.hits;
        t[0] = st.candidates;
        t[1] = how == RDX_JN_LSI_RAY;
        t[2] = how == RDX_JN_LSI_CLIPPED;
        t[3] = how == RDX_JN_LSI_BRUTE;
      }
    }
    if (pairs) continue;
    for (int k = 0; k < TALLY; k++) {
      uint64_t v = warp_sum(t[k]);
      if ((threadIdx.x & 31) == 0 && v != 0) atomicAdd(tally + k, (unsigned long long)v);
    }
  }
}

/* Per edge pair its number of points (lsi_hd.h). */
__global__ void point_count_kernel(rdx_jn_arrays ra, rdx_jn_arrays sa, const uint64_t *pairs, int64_t n,
                                   uint64_t *counts) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t re = (uint32_t)(pairs[i] >> 32), se = (uint32_t)pairs[i];
    counts[i] = (uint64_t)rdx_jn_lsi_point_count(ra.xy + 2 * (uint64_t)re, ra.xy + 2 * (uint64_t)ra.edge_end[re],
                                                 sa.xy + 2 * (uint64_t)se, sa.xy + 2 * (uint64_t)sa.edge_end[se]);
  }
}

/* The points of edge pair i at offsets[i]: x, y and the feature key. */
__global__ void point_fill_kernel(rdx_jn_arrays ra, rdx_jn_arrays sa, const uint64_t *pairs, int64_t n,
                                  const uint64_t *offsets, double *x, double *y, uint64_t *key) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t re = (uint32_t)(pairs[i] >> 32), se = (uint32_t)pairs[i];
    double p[4];
    int m = rdx_jn_lsi_points(ra.xy + 2 * (uint64_t)re, ra.xy + 2 * (uint64_t)ra.edge_end[re],
                              sa.xy + 2 * (uint64_t)se, sa.xy + 2 * (uint64_t)sa.edge_end[se], p);
    uint64_t k = offsets[i], fk = (uint64_t)ra.edge_feat[re] << 32 | sa.edge_feat[se];
    for (int q = 0; q < m && k + q < offsets[i + 1]; q++) {
      x[k + q] = p[2 * q];
      y[k + q] = p[2 * q + 1];
      key[k + q] = fk;
    }
  }
}

/* out[i] = the sort key of point perm[i]: pass 0 its y, 1 its x, 2 its feature key. */
__global__ void gather_kernel(const double *x, const double *y, const uint64_t *key, const uint32_t *perm, int64_t n,
                              int pass, uint64_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t p = perm[i];
    out[i] = pass == 0 ? rdx_jn_lsi_f64_key(y[p]) : pass == 1 ? rdx_jn_lsi_f64_key(x[p]) : key[p];
  }
}

__global__ void iota_kernel(uint32_t *p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)i;
}

/* flags[i] = 1 when sorted point i (through perm) differs from point i - 1. */
__global__ void point_first_kernel(const double *x, const double *y, const uint64_t *key, const uint32_t *perm,
                                   int64_t n, uint64_t *flags) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t b = perm[i];
    int first = 1;
    if (i > 0) {
      uint32_t a = perm[i - 1];
      first = key[a] != key[b] || x[a] != x[b] || y[a] != y[b];
    }
    flags[i] = (uint64_t)first;
  }
}

__global__ void point_write_kernel(const double *x, const double *y, const uint64_t *key, const uint32_t *perm,
                                   const uint64_t *rows, int64_t n, int64_t *point_pairs, double *points) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (rows[i + 1] == rows[i]) continue; /* not the first of its run */
    uint64_t k = rows[i];
    uint32_t p = perm[i];
    point_pairs[2 * k] = (int64_t)(key[p] >> 32);
    point_pairs[2 * k + 1] = (int64_t)(uint32_t)key[p];
    points[2 * k] = x[p];
    points[2 * k + 1] = y[p];
  }
}

/* Edge pairs to feature keys, in place. */
__global__ void feature_key_kernel(uint64_t *keys, int64_t n, const uint32_t *rfeat, const uint32_t *sfeat) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t v = keys[i];
    keys[i] = (uint64_t)rfeat[v >> 32] << 32 | sfeat[(uint32_t)v];
  }
}

__global__ void key_first_kernel(const uint64_t *keys, int64_t n, uint64_t *flags) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    flags[i] = i == 0 || keys[i] != keys[i - 1];
}

__global__ void pair_write_kernel(const uint64_t *keys, const uint64_t *rows, int64_t n, int64_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (rows[i + 1] == rows[i]) continue;
    uint64_t k = rows[i];
    out[2 * k] = (int64_t)(keys[i] >> 32);
    out[2 * k + 1] = (int64_t)(uint32_t)keys[i];
  }
}

/* R's side of the join from the layer and the index, device memory. */
rdx_jn_lsi_r lsi_r_of(const rdx_polygons *r, const rdx_jn_index *ix) {
  rdx_jn_lsi_r R;
  R.v = rdx_bvh_view_of(&ix->scene.bvh);
  R.xy = r->dev.xy;
  R.edge_end = r->dev.edge_end;
  R.group_first = ix->group_first;
  R.n_edges = r->dev.n_vertices;
  for (int k = 0; k < 2; k++) R.lo[k] = r->lo[k], R.hi[k] = r->hi[k];
  R.tol = rdx_jn_lsi_index_tol(ix->pad_ulps, ix->abs_pad);
  return R;
}

/* The soft BVH's pass (rdx_jn_lsi_pass_fn): edges_kernel. */
rdx_status soft_pass(rdx_context *ctx, const rdx_jn_lsi_r *r, const rdx_jn_index *ix, const rdx_polygons *s,
                     uint64_t *counts, const uint64_t *offsets, uint64_t *pairs, unsigned long long *tally,
                     int *mismatch) {
  (void)ix; /* r->v is its BVH */
  const int64_t n_s = s->dev.n_vertices;
  edges_kernel<<<rdx_grid(n_s, TPB), TPB, 0, rdx_stream(ctx)>>>(*r, s->dev.xy, s->dev.edge_end, n_s, counts, offsets,
                                                                 pairs, tally, mismatch);
  return rdx_cuda_ok(ctx, cudaGetLastError(), pairs ? "rdx_join_lsi: fill kernel" : "rdx_join_lsi: count kernel");
}

/* Count and fill through pass: *pairs (device, *n_pairs of them) gets every intersecting edge
 * pair. */
rdx_status edge_pairs(rdx_context *ctx, rdx_jn_lsi_pass_fn pass, const rdx_polygons *r, const rdx_jn_index *ix,
                      const rdx_polygons *s, uint64_t **pairs, int64_t *n_pairs, rdx_jn_lsi_stats *stats) {
  static const char what[] = "rdx_join_lsi: edge pairs";
  cudaStream_t cs = rdx_stream(ctx);
  const rdx_jn_lsi_r R = lsi_r_of(r, ix);
  const int64_t n_s = s->dev.n_vertices;
  uint64_t *counts = NULL, *offsets = NULL, total = 0;
  unsigned long long *tally = NULL; /* TALLY counters, then the mismatch flag */
  rdx_status st = RDX_OK;
  *pairs = NULL;
  double t0 = rdx_now_ms(), t1 = t0;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&counts, (size_t)n_s * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&offsets, (size_t)(n_s + 1) * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&tally, (TALLY + 1) * 8), st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(tally, 0, (TALLY + 1) * 8, cs), what, st, fail);
  RDX_CHECK_GOTO(pass(ctx, &R, ix, s, counts, NULL, NULL, tally, NULL), st, fail);
  {
    unsigned long long h[TALLY];
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(h, tally, sizeof h, cudaMemcpyDeviceToHost, cs), what, st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(cs), what, st, fail);
    stats->candidates = (int64_t)h[0], stats->rays = (int64_t)h[1];
    stats->clipped = (int64_t)h[2], stats->brute = (int64_t)h[3];
  }
  t1 = rdx_now_ms();
  stats->count_ms = t1 - t0;
  RDX_CHECK_GOTO(rdx_csr_scan_cuda(ctx, counts, n_s, offsets, &total), st, fail);
  if (total > (uint64_t)INT64_MAX / 16) {
    st = rdx_fail(ctx, RDX_ERR_DEVICE_OUT_OF_MEMORY, "%s: %llu intersecting edge pairs overflow the address space", what,
                  (unsigned long long)total);
    goto fail;
  }
  rdx_mem_free(ctx, counts);
  counts = NULL;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)pairs, (size_t)total * 8), st, fail);
  {
    int *mismatch = (int *)(tally + TALLY);
    RDX_CHECK_GOTO(pass(ctx, &R, ix, s, NULL, offsets, *pairs, NULL, mismatch), st, fail);
    int bad = 0;
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&bad, mismatch, sizeof bad, cudaMemcpyDeviceToHost, cs), what, st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(cs), what, st, fail);
    if (bad) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the filling pass met other counts than the counting pass", what);
      goto fail;
    }
  }
  stats->fill_ms = rdx_now_ms() - t1;
  stats->edge_pairs = (int64_t)total;
  *n_pairs = (int64_t)total;
  rdx_mem_free(ctx, offsets);
  rdx_mem_free(ctx, tally);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, offsets);
  rdx_mem_free(ctx, tally);
  rdx_mem_free(ctx, *pairs);
  *pairs = NULL;
  return st;
}

/* The points before they are written: x, y, key per point, perm their order, rows (n + 1) the
 * output row of each sorted point that starts a run, m distinct. */
struct sorted_points {
  double *x = NULL, *y = NULL;
  uint64_t *key = NULL, *rows = NULL;
  uint32_t *perm = NULL;
  int64_t n = 0;
  uint64_t m = 0;
};

void sorted_points_free(rdx_context *ctx, sorted_points *sp) {
  rdx_mem_free(ctx, sp->x), rdx_mem_free(ctx, sp->y), rdx_mem_free(ctx, sp->key);
  rdx_mem_free(ctx, sp->rows), rdx_mem_free(ctx, sp->perm);
  *sp = sorted_points();
}

/* perm: the order of the points by (key, x, y), three stable radix sorts from the last key up. */
rdx_status points_order(rdx_context *ctx, sorted_points *sp) {
  static const char what[] = "rdx_join_lsi: sorting points";
  cudaStream_t cs = rdx_stream(ctx);
  const int64_t n = sp->n;
  uint64_t *kb = NULL, *kb2 = NULL;
  uint32_t *pb2 = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kb, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kb2, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&sp->perm, (size_t)n * 4), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&pb2, (size_t)n * 4), st, done);
  iota_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(sp->perm, n);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: iota kernel", st, done);
  for (int pass = 0; pass < 3; pass++) {
    gather_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(sp->x, sp->y, sp->key, sp->perm, n, pass, kb);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: gather kernel", st, done);
    cub::DoubleBuffer<uint64_t> keys(kb, kb2);
    cub::DoubleBuffer<uint32_t> vals(sp->perm, pb2);
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *t, size_t &b) {
                     return cub::DeviceRadixSort::SortPairs(t, b, keys, vals, n, 0, 64, cs);
                   }),
                   st, done);
    kb = keys.Current(), kb2 = keys.Alternate();
    sp->perm = vals.Current(), pb2 = vals.Alternate();
  }
done:
  rdx_mem_free(ctx, kb);
  rdx_mem_free(ctx, kb2);
  rdx_mem_free(ctx, pb2);
  return st;
}

rdx_status points_prepare(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const uint64_t *pairs,
                          int64_t n_pairs, sorted_points *sp) {
  static const char what[] = "rdx_join_lsi: points";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *counts = NULL, *offsets = NULL, total = 0;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&counts, (size_t)n_pairs * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&offsets, (size_t)(n_pairs + 1) * 8), st, fail);
  point_count_kernel<<<rdx_grid(n_pairs, TPB), TPB, 0, cs>>>(r->dev, s->dev, pairs, n_pairs, counts);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: point count kernel", st, fail);
  RDX_CHECK_GOTO(rdx_csr_scan_cuda(ctx, counts, n_pairs, offsets, &total), st, fail);
  rdx_mem_free(ctx, counts);
  counts = NULL;
  if (total > UINT32_MAX) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %llu intersection points; at most 2^32 - 1 are sorted", what,
                  (unsigned long long)total);
    goto fail;
  }
  sp->n = (int64_t)total;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&sp->x, (size_t)total * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&sp->y, (size_t)total * 8), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&sp->key, (size_t)total * 8), st, fail);
  point_fill_kernel<<<rdx_grid(n_pairs, TPB), TPB, 0, cs>>>(r->dev, s->dev, pairs, n_pairs, offsets, sp->x, sp->y,
                                                             sp->key);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: point fill kernel", st, fail);
  rdx_mem_free(ctx, offsets);
  offsets = NULL;
  RDX_CHECK_GOTO(points_order(ctx, sp), st, fail);
  {
    uint64_t *flags = NULL;
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&flags, (size_t)sp->n * 8), st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&sp->rows, (size_t)(sp->n + 1) * 8), st, fail_flags);
    point_first_kernel<<<rdx_grid(sp->n, TPB), TPB, 0, cs>>>(sp->x, sp->y, sp->key, sp->perm, sp->n, flags);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: point flags kernel", st, fail_flags);
    RDX_CHECK_GOTO(rdx_csr_scan_cuda(ctx, flags, sp->n, sp->rows, &sp->m), st, fail_flags);
  fail_flags:
    rdx_mem_free(ctx, flags);
    if (st != RDX_OK) goto fail;
  }
  return RDX_OK;
fail:
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, offsets);
  sorted_points_free(ctx, sp);
  return st;
}

/* The distinct feature keys of the edge pairs (mapped and sorted in place; *keys may move):
 * *rows (n + 1) the output row of each key that starts a run, *n_out how many. */
rdx_status feature_pairs(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, uint64_t **keys, int64_t n,
                         uint64_t **rows, uint64_t *n_out) {
  static const char what[] = "rdx_join_lsi: feature pairs";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *tmp = NULL, *flags = NULL;
  rdx_status st = RDX_OK;
  *rows = NULL;
  feature_key_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(*keys, n, r->dev.edge_feat, s->dev.edge_feat);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: feature key kernel", st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&tmp, (size_t)n * 8), st, done);
  {
    cub::DoubleBuffer<uint64_t> kb(*keys, tmp);
    RDX_CHECK_GOTO(rdx_cub_run(ctx, what, [&](void *t, size_t &b) {
                     return cub::DeviceRadixSort::SortKeys(t, b, kb, n, 0, 64, cs);
                   }),
                   st, done);
    *keys = kb.Current(), tmp = kb.Alternate();
  }
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&flags, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)rows, (size_t)(n + 1) * 8), st, done);
  key_first_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(*keys, n, flags);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: pair flags kernel", st, done);
  RDX_CHECK_GOTO(rdx_csr_scan_cuda(ctx, flags, n, *rows, n_out), st, done);
done:
  rdx_mem_free(ctx, tmp);
  rdx_mem_free(ctx, flags);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *rows);
    *rows = NULL;
  }
  return st;
}

}  // namespace

extern "C" rdx_status rdx_jn_lsi_gpu(rdx_context *ctx, rdx_jn_lsi_pass_fn pass, const rdx_polygons *r,
                                     const rdx_jn_index *ix, const rdx_polygons *s, int want_points,
                                     rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats) {
  static const char what[] = "rdx_join_lsi";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *pairs = NULL, *rows = NULL, n_fp = 0;
  int64_t n_edge_pairs = 0;
  sorted_points sp;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(edge_pairs(ctx, pass, r, ix, s, &pairs, &n_edge_pairs, stats), st, done);
  {
    double t0 = rdx_now_ms();
    /* the points read the edge pairs before they become feature keys in place */
    if (want_points && n_edge_pairs > 0) RDX_CHECK_GOTO(points_prepare(ctx, r, s, pairs, n_edge_pairs, &sp), st, done);
    RDX_CHECK_GOTO(rdx_cuda_sync(ctx, what), st, done);
    double t1 = rdx_now_ms();
    if (n_edge_pairs > 0) RDX_CHECK_GOTO(feature_pairs(ctx, r, s, &pairs, n_edge_pairs, &rows, &n_fp), st, done);
    RDX_CHECK_GOTO(rdx_jn_lsi_result_arrays(ctx, out, (int64_t)n_fp, (int64_t)sp.m), st, done);
    if (n_edge_pairs > 0) {
      pair_write_kernel<<<rdx_grid(n_edge_pairs, TPB), TPB, 0, cs>>>(pairs, rows, n_edge_pairs, out->pairs);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: pair write kernel", st, done);
    }
    RDX_CHECK_GOTO(rdx_cuda_sync(ctx, what), st, done);
    double t2 = rdx_now_ms();
    if (sp.n > 0) {
      point_write_kernel<<<rdx_grid(sp.n, TPB), TPB, 0, cs>>>(sp.x, sp.y, sp.key, sp.perm, sp.rows, sp.n,
                                                               out->point_pairs, out->points);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_lsi: point write kernel", st, done);
    }
    RDX_CHECK_GOTO(rdx_cuda_sync(ctx, what), st, done);
    stats->pairs_ms = t2 - t1;
    stats->points_ms = want_points ? (t1 - t0) + (rdx_now_ms() - t2) : 0.0;
  }
done:
  rdx_mem_free(ctx, pairs);
  rdx_mem_free(ctx, rows);
  sorted_points_free(ctx, &sp);
  return st; /* on failure the caller frees what out holds */
}

extern "C" rdx_status rdx_jn_lsi_edge_pairs_gpu(rdx_context *ctx, rdx_jn_lsi_pass_fn pass, const rdx_polygons *r,
                                                const rdx_jn_index *ix, const rdx_polygons *s, uint64_t **pairs,
                                                int64_t *n_pairs, rdx_jn_lsi_stats *stats) {
  *n_pairs = 0;
  return edge_pairs(ctx, pass, r, ix, s, pairs, n_pairs, stats);
}

extern "C" rdx_status rdx_jn_lsi_edge_pairs_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                                 const rdx_polygons *s, uint64_t **pairs, int64_t *n_pairs,
                                                 rdx_jn_lsi_stats *stats) {
  return rdx_jn_lsi_edge_pairs_gpu(ctx, soft_pass, r, ix, s, pairs, n_pairs, stats);
}

extern "C" rdx_status rdx_jn_lsi_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                      const rdx_polygons *s, int want_points, rdx_join_lsi_result *out,
                                      rdx_jn_lsi_stats *stats) {
  return rdx_jn_lsi_gpu(ctx, soft_pass, r, ix, s, want_points, out, stats);
}

extern "C" const rdx_jn_ops rdx_jn_lsi_cuda_ops = {
    RDX_JN_OP_LSI, RDX_BACKEND_CUDA, NULL, NULL, NULL, NULL, rdx_jn_lsi_cuda, rdx_jn_lsi_edge_pairs_cuda, NULL, NULL,
};
