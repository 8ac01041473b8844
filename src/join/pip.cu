/*
 * pip.cu: point in polygon on the GPU: pip_hd.h's two passes as kernels over the soft BVH (CUDA
 * contexts), the machinery around them that the OptiX programs share (rdx_jn_pip_gpu: the OptiX
 * backend's engine, src/join/optix/launch.cu, traces the same rays through a GAS), and the query
 * points' check and widening to f64.
 *
 * Pass 1: one thread per point, with a set of RDX_JN_PIP_SET_GPU events in local memory; it runs
 * the point's phase (A) through the ring scene, then answers the point or records how many events
 * the general rule met. Pass 2 for the points left (each of its threads runs phase (A) again rather
 * than pass 1 keeping 4 bytes per point): CUB counts and selects them in point order, their event
 * counts are scanned into offsets (rdx_csr_scan_cuda), and blocks of at most EVENT_BLOCK events (or
 * one point, however many it has; block ends found by binary search over the offsets) are traced
 * again by one thread per point appending every event at its offset, sorted per point
 * (rdx_csr_sort_cuda) and reduced by one thread per point. The answers equal the CPU's (pip.c): the
 * same functions decide each point, and which pass answers a point never shows in its answer.
 * Side PIP (join.h) runs the same kernels over side queries (pip_hd.h's rdx_jn_pip_at_of reads
 * query i from the batch's rdx_jn_pip_query), Morton order included (query i's cell is xy[i]'s).
 */
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/cuda_util.cuh"
#include "join/join.h"
#include "join/pip_hd.h"

namespace {

constexpr int TPB = 128;
constexpr uint64_t EVENT_BLOCK = (uint64_t)1 << 25; /* 256 MiB of events at a time */
constexpr int64_t ORDER_MIN = 1 << 14;            /* smaller batches take the points in input order */

__device__ void emit(const rdx_jn_pip_out &out, int64_t i, uint64_t count, int64_t first) {
  if (out.counts) out.counts[i] = count;
  if (out.first) out.first[i] = first;
}

__global__ void pass1_kernel(rdx_jn_pip_bvhs v, rdx_jn_pip_geom g, rdx_jn_pip_query q, const int64_t *order, int64_t n,
                             int planar, rdx_jn_pip_out out, uint32_t *pending) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = order ? order[k] : k;
    uint64_t set[RDX_JN_PIP_SET_GPU];
    uint64_t count = 0;
    int64_t first = -1;
    uint32_t n_ev = 0;
    uint64_t *fill = out.features ? out.features + out.offsets[i] : NULL;
    const rdx_jn_pip_at at = rdx_jn_pip_at_of(&q, i);
    const float reach = rdx_jn_pip_reach(&v, at.a[0], at.a[1]);
    if (rdx_jn_pip_point(&v, &g, &at, reach, planar, set, RDX_JN_PIP_SET_GPU, &count, &first, fill, &n_ev)) {
      emit(out, i, count, first);
      pending[i] = 0;
    } else {
      pending[i] = n_ev;
    }
  }
}

struct is_pending {
  const uint32_t *pending;
  __device__ bool operator()(int64_t i) const { return pending[i] != 0; }
};

__global__ void gather_kernel(const int64_t *list, int64_t m, const uint32_t *pending, uint64_t *counts) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < m; k += (int64_t)gridDim.x * blockDim.x)
    counts[k] = pending[list[k]];
}

/* the block's offsets from 0: boff[k] = off[k0 + k] - off[k0], k in [0, nb] */
__global__ void block_offsets_kernel(const uint64_t *off, int64_t k0, int64_t nb, uint64_t *boff) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k <= nb; k += (int64_t)gridDim.x * blockDim.x)
    boff[k] = off[k0 + k] - off[k0];
}

__global__ void events_kernel(rdx_jn_pip_bvhs v, rdx_jn_pip_geom g, rdx_jn_pip_query q, const int64_t *list,
                              int64_t nb, const uint64_t *boff, uint64_t *ev, int *mismatch) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nb; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = list[k];
    uint32_t want = (uint32_t)(boff[k + 1] - boff[k]);
    const rdx_jn_pip_at at = rdx_jn_pip_at_of(&q, i);
    uint32_t got = rdx_jn_pip_events(&v, &g, &at, rdx_jn_pip_reach(&v, at.a[0], at.a[1]), ev + boff[k], want);
    if (got != want) *mismatch = 1;
  }
}

__global__ void reduce_kernel(const int64_t *list, int64_t nb, const uint64_t *boff, const uint64_t *ev,
                              rdx_jn_pip_out out) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nb; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = list[k];
    int64_t first = -1;
    uint64_t *fill = out.features ? out.features + out.offsets[i] : NULL;
    uint64_t count = rdx_jn_pip_reduce(ev + boff[k], (uint32_t)(boff[k + 1] - boff[k]), &first, fill);
    emit(out, i, count, first);
  }
}

struct nonzero {
  __host__ __device__ int64_t operator()(uint32_t v) const { return v != 0; }
};

/* Pass 2's scratch. */
struct pass2_mem {
  int64_t *list = NULL, *d_m = NULL;
  uint64_t *counts = NULL, *off = NULL, *boff = NULL, *ev = NULL;
  void *temp = NULL;
  int *mismatch = NULL;
};

void pass2_free(rdx_context *ctx, pass2_mem *s) {
  rdx_mem_free(ctx, s->list), rdx_mem_free(ctx, s->d_m), rdx_mem_free(ctx, s->counts), rdx_mem_free(ctx, s->off);
  rdx_mem_free(ctx, s->boff), rdx_mem_free(ctx, s->ev), rdx_mem_free(ctx, s->temp), rdx_mem_free(ctx, s->mismatch);
}

rdx_status read_u64(rdx_context *ctx, const uint64_t *p, uint64_t *v) {
  cudaStream_t cs = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(v, p, 8, cudaMemcpyDeviceToHost, cs), "rdx_join_pip: pass 2");
  RDX_CUDA(ctx, cudaStreamSynchronize(cs), "rdx_join_pip: pass 2");
  return RDX_OK;
}

/* The points pass 1 left, in point order (s->list, *m_out of them), and their events' offsets
 * (s->off, m + 1; *total = the last). */
rdx_status pass2_list(rdx_context *ctx, const uint32_t *pending, int64_t n, pass2_mem *s, int64_t *m_out,
                      uint64_t *total) {
  static const char what[] = "rdx_join_pip: pass 2";
  cudaStream_t cs = rdx_stream(ctx);
  *m_out = 0;
  *total = 0;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&s->d_m, 8));
  /* how many, so the list is sized to them */
  thrust::transform_iterator<nonzero, const uint32_t *> flags(pending, nonzero());
  size_t temp_bytes = 0;
  RDX_CUDA(ctx, cub::DeviceReduce::Sum(NULL, temp_bytes, flags, s->d_m, n, cs), what);
  RDX_CHECK(rdx_scratch(ctx, what, &s->temp, temp_bytes));
  RDX_CUDA(ctx, cub::DeviceReduce::Sum(s->temp, temp_bytes, flags, s->d_m, n, cs), what);
  uint64_t m = 0;
  RDX_CHECK(read_u64(ctx, (const uint64_t *)s->d_m, &m));
  if (m == 0) return RDX_OK;
  rdx_mem_free(ctx, s->temp);
  s->temp = NULL;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&s->list, (size_t)m * 8));
  thrust::counting_iterator<int64_t> idx(0);
  is_pending pred{pending};
  RDX_CUDA(ctx, cub::DeviceSelect::If(NULL, temp_bytes, idx, s->list, s->d_m, n, pred, cs), what);
  RDX_CHECK(rdx_scratch(ctx, what, &s->temp, temp_bytes));
  RDX_CUDA(ctx, cub::DeviceSelect::If(s->temp, temp_bytes, idx, s->list, s->d_m, n, pred, cs), what);
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&s->counts, (size_t)m * 8));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&s->off, (size_t)(m + 1) * 8));
  gather_kernel<<<rdx_grid((int64_t)m, TPB), TPB, 0, cs>>>(s->list, (int64_t)m, pending, s->counts);
  RDX_LAUNCH_CHECK(ctx, "rdx_join_pip: pass 2 gather kernel");
  RDX_CHECK(rdx_csr_scan_cuda(ctx, s->counts, (int64_t)m, s->off, total));
  *m_out = (int64_t)m;
  return RDX_OK;
}

/* The end of the block that starts at list entry k0: the most entries whose events fit `room`,
 * at least one (a binary search over the device offsets). */
rdx_status block_end(rdx_context *ctx, const uint64_t *off, int64_t k0, int64_t m, uint64_t room, int64_t *k1) {
  uint64_t base = 0, v = 0;
  RDX_CHECK(read_u64(ctx, off + k0, &base));
  int64_t lo = k0 + 1, hi = m; /* the answer is in [lo, hi] */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    RDX_CHECK(read_u64(ctx, off + mid, &v));
    if (v - base <= room) lo = mid;
    else hi = mid - 1;
  }
  *k1 = lo;
  return RDX_OK;
}

rdx_status pass2(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r, const rdx_jn_index *ix,
                 const rdx_jn_pip_query *q, int64_t n, const rdx_jn_pip_out &out, const uint32_t *pending) {
  static const char what[] = "rdx_join_pip: pass 2";
  cudaStream_t cs = rdx_stream(ctx);
  pass2_mem s;
  int64_t m = 0;
  uint64_t total = 0, room = 0;
  rdx_status st = pass2_list(ctx, pending, n, &s, &m, &total);
  if (st != RDX_OK || m == 0) {
    pass2_free(ctx, &s);
    return st;
  }
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&s.boff, (size_t)(m + 1) * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&s.mismatch, sizeof(int)), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(s.mismatch, 0, sizeof(int), cs), what, st, done);
  for (int64_t k0 = 0; k0 < m;) {
    int64_t k1 = k0 + 1;
    uint64_t a = 0, b = 0;
    RDX_CHECK_GOTO(block_end(ctx, s.off, k0, m, total < EVENT_BLOCK ? total : EVENT_BLOCK, &k1), st, done);
    RDX_CHECK_GOTO(read_u64(ctx, s.off + k0, &a), st, done);
    RDX_CHECK_GOTO(read_u64(ctx, s.off + k1, &b), st, done);
    if (b - a > room) { /* the first block, or one point of more events than a block holds */
      rdx_mem_free(ctx, s.ev);
      s.ev = NULL;
      room = b - a;
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&s.ev, (size_t)room * 8), st, done);
    }
    int64_t nb = k1 - k0;
    block_offsets_kernel<<<rdx_grid(nb + 1, TPB), TPB, 0, cs>>>(s.off, k0, nb, s.boff);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_pip: pass 2 offsets kernel", st, done);
    RDX_CHECK_GOTO(eng->events(ctx, r, ix, q, s.list + k0, nb, s.boff, s.ev, s.mismatch), st, done);
    RDX_CHECK_GOTO(rdx_csr_sort_cuda(ctx, s.boff, nb, s.ev), st, done);
    reduce_kernel<<<rdx_grid(nb, TPB), TPB, 0, cs>>>(s.list + k0, nb, s.boff, s.ev, out);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_join_pip: pass 2 reduce kernel", st, done);
    k0 = k1;
  }
  {
    int bad = 0;
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&bad, s.mismatch, sizeof bad, cudaMemcpyDeviceToHost, cs), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(cs), what, st, done);
    if (bad) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_join_pip: a point met another number of edges in its second pass");
  }
done:
  pass2_free(ctx, &s);
  return st;
}

/* The soft BVH's engine (rdx_jn_pip_engine): the kernels above. */
rdx_jn_pip_geom geom_of(const rdx_polygons *r, const rdx_jn_index *ix) {
  rdx_jn_pip_geom g;
  g.xy = r->dev.xy;
  g.edge_end = r->dev.edge_end;
  g.edge_feat = r->dev.edge_feat;
  g.group_first = ix->group_first;
  g.group_span = ix->group_span;
  return g;
}

rdx_jn_pip_bvhs bvhs_of(const rdx_jn_index *ix) {
  rdx_jn_pip_bvhs b;
  b.groups = rdx_bvh_view_of(&ix->scene.bvh);
  b.rings = rdx_bvh_view_of(&ix->rings.bvh);
  return b;
}

rdx_status soft_pass1(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                      const int64_t *order, int64_t n, int planar, const rdx_jn_pip_out *out, uint32_t *pending) {
  pass1_kernel<<<rdx_grid(n, TPB), TPB, 0, rdx_stream(ctx)>>>(bvhs_of(ix), geom_of(r, ix), *q, order, n, planar, *out,
                                                               pending);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_join_pip: pass 1 kernel");
}

rdx_status soft_events(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                       const int64_t *list, int64_t nb, const uint64_t *boff, uint64_t *ev, int *mismatch) {
  events_kernel<<<rdx_grid(nb, TPB), TPB, 0, rdx_stream(ctx)>>>(bvhs_of(ix), geom_of(r, ix), *q, list, nb, boff, ev,
                                                                 mismatch);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_join_pip: pass 2 events kernel");
}

const rdx_jn_pip_engine soft_engine = {soft_pass1, soft_events};

__global__ void points_kernel(const void *src, int f32, int64_t n, double *dst, unsigned long long *bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double c[2];
    for (int k = 0; k < 2; k++) c[k] = f32 ? (double)((const float *)src)[2 * i + k] : ((const double *)src)[2 * i + k];
    int ok = 1;
    for (int k = 0; k < 2; k++) {
      double a = fabs(c[k]);
      ok &= c[k] == 0.0 || (a >= RDX_JN_COORD_MIN && a <= RDX_JN_COORD_MAX); /* false for NaN */
    }
    if (!ok) atomicMin(bad, (unsigned long long)i);
    else if (dst) dst[2 * i] = c[0], dst[2 * i + 1] = c[1];
  }
}

/* 16 bits of x and of y interleaved, x in the even bits. */
__device__ uint32_t morton16(uint32_t x, uint32_t y) {
  uint32_t v[2] = {x, y};
  for (int a = 0; a < 2; a++) {
    uint32_t w = v[a] & 0xFFFFu;
    w = (w | w << 8) & 0x00FF00FFu;
    w = (w | w << 4) & 0x0F0F0F0Fu;
    w = (w | w << 2) & 0x33333333u;
    w = (w | w << 1) & 0x55555555u;
    v[a] = w;
  }
  return v[0] | v[1] << 1;
}

/* Each point's cell on a 2^16 x 2^16 grid over R's box (points outside it clamped to its edge). */
__global__ void morton_kernel(const double *xy, int64_t n, double lox, double loy, double sx, double sy,
                              uint32_t *key, int64_t *idx) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double c[2] = {(xy[2 * i] - lox) * sx, (xy[2 * i + 1] - loy) * sy};
    uint32_t q[2];
    for (int a = 0; a < 2; a++) q[a] = c[a] >= 65535.0 ? 65535u : c[a] > 0.0 ? (uint32_t)c[a] : 0u;
    key[i] = morton16(q[0], q[1]);
    idx[i] = i;
  }
}

/* The order pass 1 takes the points in: by their Morton cell in R's box, so that the threads of a
 * warp trace neighbouring points through the same part of the BVH and the same edges (random
 * points in input order make every thread of a warp walk elsewhere). Answers are written at each
 * point's own index, so the order never shows. *order: n indices (scratch), or NULL for small
 * batches, which take input order. */
rdx_status query_order(rdx_context *ctx, const rdx_polygons *r, const double *xy, int64_t n, int64_t **order) {
  static const char what[] = "rdx_join_pip: ordering the points";
  cudaStream_t cs = rdx_stream(ctx);
  *order = NULL;
  if (n < ORDER_MIN || n > INT32_MAX) return RDX_OK; /* CUB's item count is an int */
  uint32_t *key = NULL;
  int64_t *idx = NULL, *out = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  double w[2] = {r->hi[0] - r->lo[0], r->hi[1] - r->lo[1]};
  double sx = w[0] > 0 ? 65536.0 / w[0] : 0.0, sy = w[1] > 0 ? 65536.0 / w[1] : 0.0;
  rdx_status st = rdx_scratch(ctx, what, (void **)&key, (size_t)n * 8);
  if (st == RDX_OK) st = rdx_scratch(ctx, what, (void **)&idx, (size_t)n * 8);
  if (st == RDX_OK) st = rdx_scratch(ctx, what, (void **)&out, (size_t)n * 8);
  if (st == RDX_OK) {
    morton_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(xy, n, r->lo[0], r->lo[1], sx, sy, key, idx);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_join_pip: Morton kernel");
  }
  /* the sorted keys go to key's second half */
  if (st == RDX_OK)
    st = rdx_cuda_ok(ctx, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, key, key + n, idx, out, (int)n, 0, 32, cs),
                     what);
  if (st == RDX_OK) st = rdx_scratch(ctx, what, &temp, temp_bytes);
  if (st == RDX_OK)
    st = rdx_cuda_ok(ctx, cub::DeviceRadixSort::SortPairs(temp, temp_bytes, key, key + n, idx, out, (int)n, 0, 32, cs),
                     what);
  rdx_mem_free(ctx, temp), rdx_mem_free(ctx, key), rdx_mem_free(ctx, idx);
  if (st == RDX_OK) *order = out;
  else rdx_mem_free(ctx, out);
  return st;
}

}  // namespace

extern "C" rdx_status rdx_jn_pip_gpu_start(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                                           const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n, int planar,
                                           const rdx_jn_pip_out *out, uint32_t *pending) {
  int64_t *order = NULL;
  rdx_status st = ctx->force.join_input_order ? RDX_OK : query_order(ctx, r, q->xy, n, &order);
  if (st == RDX_OK) st = eng->pass1(ctx, r, ix, q, order, n, planar, out, pending);
  rdx_mem_free(ctx, order); /* stream-ordered: after pass 1 */
  return st;
}

extern "C" rdx_status rdx_jn_pip_gpu_finish(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                                            const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n,
                                            const rdx_jn_pip_out *out, const uint32_t *pending) {
  RDX_CHECK(pass2(ctx, eng, r, ix, q, n, *out, pending));
  return rdx_cuda_sync(ctx, "rdx_join_pip");
}

extern "C" rdx_status rdx_jn_pip_gpu(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                                     const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n, int planar,
                                     const rdx_jn_pip_out *out) {
  uint32_t *pending = NULL;
  RDX_CHECK(rdx_scratch(ctx, "rdx_join_pip: pending points", (void **)&pending, (size_t)n * 4));
  rdx_status st = rdx_jn_pip_gpu_start(ctx, eng, r, ix, q, n, planar, out, pending);
  if (st == RDX_OK) st = rdx_jn_pip_gpu_finish(ctx, eng, r, ix, q, n, out, pending);
  rdx_mem_free(ctx, pending);
  return st;
}

extern "C" rdx_status rdx_jn_pip_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                                      int64_t n, int planar, const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, NULL, 0};
  return rdx_jn_pip_gpu(ctx, &soft_engine, r, ix, &q, n, planar, out);
}

extern "C" rdx_status rdx_jn_side_pip_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                           const double *xy, const uint32_t *dir_end, int64_t n, int side,
                                           const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, dir_end, side < 0 ? -1 : 1};
  return rdx_jn_pip_gpu(ctx, &soft_engine, r, ix, &q, n, 0, out);
}

extern "C" rdx_status rdx_jn_points_cuda(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst,
                                         int64_t *bad) {
  static const char what[] = "rdx_join_pip: checking points";
  cudaStream_t cs = rdx_stream(ctx);
  unsigned long long *d_bad = NULL, h_bad = ~0ull;
  *bad = -1;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&d_bad, 8));
  rdx_status st = rdx_cuda_ok(ctx, cudaMemsetAsync(d_bad, 0xFF, 8, cs), what);
  if (st == RDX_OK) {
    points_kernel<<<rdx_grid(n, 256), 256, 0, cs>>>(src, f32, n, dst, d_bad);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_join_pip: points kernel");
  }
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(&h_bad, d_bad, 8, cudaMemcpyDeviceToHost, cs), what);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(cs), what);
  if (st == RDX_OK && h_bad != ~0ull) *bad = (int64_t)h_bad;
  rdx_mem_free(ctx, d_bad);
  return st;
}

extern "C" const rdx_jn_ops rdx_jn_pip_cuda_ops = {
    RDX_JN_OP_PIP, RDX_BACKEND_CUDA, NULL, rdx_jn_points_cuda, rdx_jn_pip_cuda, rdx_jn_side_pip_cuda,
    NULL,          NULL,             NULL, &soft_engine,
};
