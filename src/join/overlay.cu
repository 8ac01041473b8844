/*
 * overlay.cu: the polygon joins on the GPU (CUDA and OptiX contexts): overlay.c's stages as kernels
 * and CUB calls, with overlay_hd.h's rule and steps, so the answers equal the CPU's. The edge pairs
 * and the side PIP are the backend's own (its LSI and PIP tables: soft BVH kernels or OptiX
 * programs); everything else is written once here.
 *   pairs     the backend's LSI count and fill (device edge pairs); INTERSECTS ends with their
 *             feature pairs and each ring's first vertex located in the other layer (overlay.c);
 *   classify  one thread per pair, counted then written at scanned offsets: proper crossings as
 *             records of both directions, vertex events (and, for areas, proper ones) per direction;
 *   groups    events ordered by (key, x, y) with three stable radix sorts carrying a permutation;
 *             the first event of each run adds its run's flips and keeps an odd result;
 *   starts    the side PIP (count and first feature in one traversal, the two directions' batches
 *             side by side on two streams; the few queries in several features traced again to
 *             fill their lists) of the edges overlay_hd.h's "Fewer side queries" keeps, expanded
 *             into records;
 *   reduce    per direction the records radix sorted by key, their bits ORed per key; then the
 *             predicate's pairs selected, sorted and made unique (counted per pair for CONTAINS
 *             and WITHIN);
 *   areas     events ordered by (key, t); one thread per record walks its events into its share;
 *             the shares ordered by pair (stably) and summed per pair in the CPU's order and
 *             chunks (overlay_hd.h), one thread a chunk, so the areas have the CPU's bits.
 * The pairs and areas are copied out of the scratch into device memory that the result keeps
 * (join_polygons.c). Every buffer comes from the context's account; the scratch is freed before
 * return.
 */
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "core/cuda_util.cuh"
#include "join/join.h"
#include "join/index_hd.h"
#include "join/overlay_hd.h"

namespace {

constexpr int TPB = 128;
typedef rdx_jn_ov_event vev;

/* Scratch buffers freed together (an overlay with areas holds about 60 at its peak). */
constexpr int BAG = 256;
struct bag {
  rdx_context *ctx;
  void *p[BAG];
  int n = 0;
  explicit bag(rdx_context *c) : ctx(c) {}
  ~bag() {
    for (int i = 0; i < n; i++) rdx_mem_free(ctx, p[i]);
  }
  template <typename T>
  rdx_status get(T **out, int64_t count) {
    *out = NULL;
    if (n == BAG) return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_join_polygons: too many scratch buffers");
    RDX_CHECK(rdx_scratch(ctx, "rdx_join_polygons", (void **)out, (size_t)(count + 1) * sizeof(T)));
    p[n++] = *out;
    return RDX_OK;
  }
  rdx_status keep(void *q) { /* hold one made elsewhere */
    if (n == BAG) {
      rdx_mem_free(ctx, q);
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_join_polygons: too many scratch buffers");
    }
    p[n++] = q;
    return RDX_OK;
  }
  void drop(void *q) { /* free one early */
    for (int i = 0; i < n; i++)
      if (p[i] == q) {
        rdx_mem_free(ctx, q);
        p[i] = p[--n];
        return;
      }
  }
};

rdx_status read_i64(rdx_context *ctx, const void *p, int64_t *v) {
  cudaStream_t cs = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(v, p, 8, cudaMemcpyDeviceToHost, cs), "rdx_join_polygons");
  RDX_CUDA(ctx, cudaStreamSynchronize(cs), "rdx_join_polygons");
  return RDX_OK;
}

/* ---- classify ---- */

__global__ void classify_kernel(rdx_jn_arrays R, rdx_jn_arrays S, const uint64_t *pairs, int64_t n, int areas,
                                uint64_t *c_rec, uint64_t *c_ev0, uint64_t *c_ev1, const uint64_t *o_rec,
                                const uint64_t *o_ev0, const uint64_t *o_ev1, uint64_t *rk0, uint32_t *rb0,
                                uint64_t *rk1, uint32_t *rb1, vev *ev0, vev *ev1) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t e = (uint32_t)(pairs[i] >> 32), f = (uint32_t)pairs[i];
    const double *a = R.xy + 2 * (uint64_t)e, *b = R.xy + 2 * (uint64_t)R.edge_end[e];
    const double *c = S.xy + 2 * (uint64_t)f, *d = S.xy + 2 * (uint64_t)S.edge_end[f];
    double v[2];
    uint32_t bits;
    int kind = rdx_jn_ov_classify(a, b, c, d, v, &bits);
    if (kind != RDX_JN_OV_PROPER && bits == 0) kind = RDX_JN_OV_NONE;
    const int proper = kind == RDX_JN_OV_PROPER;
    const int on0 = kind == RDX_JN_OV_VERTEX_S || (proper && areas), on1 = kind == RDX_JN_OV_VERTEX_R || (proper && areas);
    if (c_rec) {
      c_rec[i] = proper, c_ev0[i] = on0, c_ev1[i] = on1;
      continue;
    }
    const uint64_t k0 = (uint64_t)e << 32 | S.edge_feat[f], k1 = (uint64_t)f << 32 | R.edge_feat[e];
    const uint32_t both = RDX_JN_OV_ODD_L | RDX_JN_OV_ODD_R;
    if (proper) {
      rk0[o_rec[i]] = k0, rb0[o_rec[i]] = both;
      rk1[o_rec[i]] = k1, rb1[o_rec[i]] = both;
      if (areas) rdx_jn_seg_point(a, b, c, d, &v[0], &v[1]);
    }
    if (on0) rdx_jn_ov_put_event(ev0 + o_ev0[i], k0, v, a, b, proper ? both : bits, (uint32_t)proper);
    if (on1) rdx_jn_ov_put_event(ev1 + o_ev1[i], k1, v, c, d, proper ? both : bits, (uint32_t)proper);
  }
}

/* ---- ordering events ---- */

/* A double's bits, ordered like the values (the events' -0 are +0 already). */
__device__ uint64_t ordered(double x) {
  uint64_t u = (uint64_t)__double_as_longlong(x);
  return (u >> 63) ? ~u : u | (1ull << 63);
}

__global__ void iota_kernel(uint32_t *p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)i;
}

/* The sort key of pass `field` for the events in perm's order: 0 y, 1 x, 2 t, 3 key. */
__global__ void event_key_kernel(const vev *ev, const uint32_t *perm, int64_t n, int field, uint64_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const vev &w = ev[perm[i]];
    out[i] = field == 0 ? ordered(w.v[1]) : field == 1 ? ordered(w.v[0]) : field == 2 ? ordered(w.t) : w.key;
  }
}

/* *perm (scratch, the caller frees it): the events ordered by the fields, least significant
 * first (stable radix sorts). */
rdx_status event_order(rdx_context *ctx, const vev *ev, int64_t n, const int *fields, int n_fields, uint32_t **perm) {
  static const char what[] = "rdx_join_polygons: ordering events";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *kb = NULL, *kb2 = NULL;
  uint32_t *pb = NULL, *pb2 = NULL;
  rdx_status st = RDX_OK;
  *perm = NULL;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kb, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kb2, (size_t)n * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&pb, (size_t)n * 4), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&pb2, (size_t)n * 4), st, done);
  iota_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(pb, n);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  for (int k = 0; k < n_fields; k++) {
    event_key_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(ev, pb, n, fields[k], kb);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
    cub::DoubleBuffer<uint64_t> keys(kb, kb2);
    cub::DoubleBuffer<uint32_t> vals(pb, pb2);
    st = rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(t, bytes, keys, vals, n, 0, 64, cs);
    });
    kb = keys.Current(), kb2 = keys.Alternate(), pb = vals.Current(), pb2 = vals.Alternate();
    if (st != RDX_OK) goto done;
  }
  *perm = pb;
  pb = NULL;
done:
  rdx_mem_free(ctx, kb), rdx_mem_free(ctx, kb2), rdx_mem_free(ctx, pb), rdx_mem_free(ctx, pb2);
  return st;
}

/* The first event of each (key, x, y) run adds the flips of the run's vertex events: out_bits[i]
 * (0 when not a first or even). */
__global__ void group_kernel(const vev *ev, const uint32_t *perm, int64_t n, uint32_t *out_bits, uint64_t *out_key,
                             uint8_t *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const vev &w = ev[perm[i]];
    uint32_t x = 0;
    if (i == 0 || ev[perm[i - 1]].key != w.key || ev[perm[i - 1]].v[0] != w.v[0] || ev[perm[i - 1]].v[1] != w.v[1])
      for (int64_t k = i; k < n; k++) {
        const vev &u = ev[perm[k]];
        if (u.key != w.key || u.v[0] != w.v[0] || u.v[1] != w.v[1]) break;
        if (!u.proper) x ^= u.bits;
      }
    out_bits[i] = x, out_key[i] = w.key, flag[i] = x != 0;
  }
}

/* ---- records ---- */

/* A direction's records from several sources, then sorted and merged. */
struct recs {
  uint64_t *key = NULL;
  uint32_t *bits = NULL;
  int64_t n = 0;
};

/* Select the flagged keys and bits into a new recs (owned by the bag). */
rdx_status select_recs(rdx_context *ctx, bag &b, const uint64_t *key, const uint32_t *bits, const uint8_t *flag, int64_t n,
                       recs *out) {
  static const char what[] = "rdx_join_polygons: selecting records";
  cudaStream_t cs = rdx_stream(ctx);
  int64_t *d_m;
  int64_t m = 0;
  RDX_CHECK(b.get(&d_m, 1));
  RDX_CHECK(b.get(&out->key, n));
  RDX_CHECK(b.get(&out->bits, n));
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, key, flag, out->key, d_m, n, cs);
  }));
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, bits, flag, out->bits, d_m, n, cs);
  }));
  RDX_CHECK(read_i64(ctx, d_m, &m));
  out->n = m;
  return RDX_OK;
}

/* Side PIP records: query k's features at feat[off[k] ..] as (edge << 32 | feature, bit), its
 * edge ids[k] (NULL: k); `also` ORed into the bits of queries whose edge is not touched (touch
 * may be NULL: none). */
__global__ void expand_kernel(const uint64_t *off, const uint64_t *feat, const int64_t *ids, const uint8_t *touch,
                              int64_t n, uint32_t bit, uint32_t also, uint64_t *key, uint32_t *bits) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t i = ids ? (uint64_t)ids[k] : (uint64_t)k;
    const uint32_t bt = bit | (touch && !touch[i] ? also : 0u);
    for (uint64_t j = off[k]; j < off[k + 1]; j++) key[j] = i << 32 | (uint32_t)feat[j], bits[j] = bt;
  }
}

/* A located query's one feature written into its CSR slot; multi[i] = query i has several. */
__global__ void single_kernel(const uint64_t *cnt, const int64_t *first, const uint64_t *off, int64_t n, uint64_t *feat,
                              uint8_t *multi) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (cnt[i] == 1) feat[off[i]] = (uint64_t)first[i];
    multi[i] = cnt[i] > 1;
  }
}

/* The queries list[0 .. m) as a batch of their own: points at sub_xy[0 .. m), and with dir_end
 * their edges' ends at sub_xy[m + k] (sub_end[k] = m + k); with off, sub_off[k] = their CSR
 * offsets. */
__global__ void gather_queries_kernel(const int64_t *list, int64_t m, const double *xy, const uint32_t *dir_end,
                                      const uint64_t *off, double *sub_xy, uint32_t *sub_end, uint64_t *sub_off) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < m; k += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = list[k];
    sub_xy[2 * k] = xy[2 * i], sub_xy[2 * k + 1] = xy[2 * i + 1];
    if (dir_end) {
      const uint64_t j = dir_end[i];
      sub_xy[2 * (m + k)] = xy[2 * j], sub_xy[2 * (m + k) + 1] = xy[2 * j + 1];
      sub_end[k] = (uint32_t)(m + k);
    }
    if (off) sub_off[k] = off[i];
  }
}

/* The indices i < n whose flag is set, ascending: *list (in the bag), *m of them. */
rdx_status flagged(rdx_context *ctx, bag &b, const uint8_t *flag, int64_t n, int64_t **list, int64_t *m) {
  static const char what[] = "rdx_join_polygons: selecting queries";
  cudaStream_t cs = rdx_stream(ctx);
  int64_t *d_m;
  *m = 0;
  RDX_CHECK(b.get(list, n));
  RDX_CHECK(b.get(&d_m, 1));
  if (n == 0) return RDX_OK;
  thrust::counting_iterator<int64_t> idx(0);
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, idx, flag, *list, d_m, n, cs);
  }));
  RDX_CHECK(read_i64(ctx, d_m, m));
  b.drop(d_m);
  return RDX_OK;
}

/* The PIP of n queries in y (index iy) through the backend's table: the points xy (pip), or with
 * dir_end the side queries of edges (xy, dir_end: their device arrays) to `side` (side_pip). */
rdx_status trace(rdx_context *ctx, const rdx_jn_ops *pip, const rdx_polygons *y, const rdx_jn_index *iy,
                 const double *xy, const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *o) {
  return dir_end ? pip->side_pip(ctx, y, iy, xy, dir_end, n, side, o) : pip->pip(ctx, y, iy, xy, n, 0, o);
}

/* A batch of queries to locate in y (index iy) through the backend's PIP: the points xy, or with
 * dir_end the side points of edges (device arrays) to `side`. locate_all answers it as CSR in the
 * bag (off: n + 1, feat). */
struct batch {
  const rdx_polygons *y = NULL;
  const rdx_jn_index *iy = NULL;
  const double *xy = NULL;
  const uint32_t *dir_end = NULL;
  int64_t n = 0;
  int side = 0;
  int aux = 0; /* 1: traced on a side stream, beside the batches with 0 */
  uint64_t *cnt = NULL, *off = NULL, *feat = NULL;
  int64_t *first = NULL;
  uint32_t *pending = NULL;
};

/* The features holding each query of the nq batches. One traversal gives every query's count and
 * first feature, which is all of its answer when it has at most one (nearly every query: features
 * of a map rarely overlap); only the queries in several features are traced again, as a batch of
 * their own, to fill their lists. The batches marked aux run that traversal on a side stream
 * beside the others (the two directions of a join are independent): both are enqueued before
 * either's pass 2 waits on the host. */
rdx_status locate_all(rdx_context *ctx, bag &b, const rdx_jn_ops *pip, batch *q, int nq) {
  static const char what[] = "rdx_join_polygons: locating points";
  cudaStream_t cs = rdx_stream(ctx);
  const rdx_jn_pip_engine *eng = pip->engine;
  int n_aux = 0;
  if (nq > 8) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %d batches", what, nq);
  for (int k = 0; k < nq; k++) {
    RDX_CHECK(b.get(&q[k].cnt, q[k].n));
    RDX_CHECK(b.get(&q[k].first, q[k].n));
    RDX_CHECK(b.get(&q[k].off, q[k].n + 1));
    RDX_CHECK(b.get(&q[k].pending, q[k].n));
    n_aux += q[k].aux;
  }
  rdx_jn_pip_out o[8];
  for (int k = 0; k < nq; k++) {
    memset(&o[k], 0, sizeof o[k]);
    o[k].counts = q[k].cnt;
    o[k].first = q[k].first;
  }
  rdx_jn_pip_query qq[8];
  for (int k = 0; k < nq; k++) qq[k] = {q[k].xy, q[k].dir_end, q[k].dir_end ? (q[k].side < 0 ? -1 : 1) : 0};
  side_by_side fork{ctx};
  const int two = n_aux > 0 && n_aux < nq && !ctx->force.join_one_stream;
  if (two) RDX_CHECK(fork.start(what));
  for (int pass = 0; pass < 2; pass++) /* pass 1 of the side stream's batches first, then the own stream's */
    for (int k = 0; k < nq; k++) {
      if ((q[k].aux && two) != (pass == 0) || q[k].n == 0) continue;
      if (pass == 0) fork.on_aux();
      rdx_status st = rdx_jn_pip_gpu_start(ctx, eng, q[k].y, q[k].iy, &qq[k], q[k].n, 0, &o[k], q[k].pending);
      fork.on_own();
      RDX_CHECK(st);
    }
  for (int pass = 0; pass < 2; pass++) /* pass 2 of the own stream's batches, then the side stream's */
    for (int k = 0; k < nq; k++) {
      if ((q[k].aux && two) != (pass == 1) || q[k].n == 0) continue;
      if (pass == 1) fork.on_aux();
      rdx_status st = rdx_jn_pip_gpu_finish(ctx, eng, q[k].y, q[k].iy, &qq[k], q[k].n, &o[k], q[k].pending);
      fork.on_own();
      RDX_CHECK(st);
    }
  RDX_CHECK(fork.join(what));
  for (int k = 0; k < nq; k++) {
    batch &w = q[k];
    const int64_t n = w.n;
    uint64_t total = 0;
    int64_t *list, m = 0;
    uint8_t *multi;
    b.drop(w.pending);
    w.pending = NULL;
    RDX_CHECK(rdx_csr_scan_cuda(ctx, w.cnt, n, w.off, &total));
    RDX_CHECK(b.get(&w.feat, (int64_t)total));
    RDX_CHECK(b.get(&multi, n));
    if (n > 0) {
      single_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(w.cnt, w.first, w.off, n, w.feat, multi);
      RDX_CUDA(ctx, cudaGetLastError(), what);
    }
    RDX_CHECK(flagged(ctx, b, multi, n, &list, &m));
    b.drop(w.cnt), b.drop(w.first), b.drop(multi);
    w.cnt = NULL, w.first = NULL;
    if (m == 0) {
      b.drop(list);
      continue;
    }
    double *sub_xy;
    uint32_t *sub_end;
    uint64_t *sub_off;
    RDX_CHECK(b.get(&sub_xy, 4 * m));
    RDX_CHECK(b.get(&sub_end, m));
    RDX_CHECK(b.get(&sub_off, m));
    gather_queries_kernel<<<rdx_grid(m, TPB), TPB, 0, cs>>>(list, m, w.xy, w.dir_end, w.off, sub_xy, sub_end, sub_off);
    RDX_CUDA(ctx, cudaGetLastError(), what);
    rdx_jn_pip_out fill;
    memset(&fill, 0, sizeof fill);
    fill.offsets = sub_off;
    fill.features = w.feat;
    RDX_CHECK(trace(ctx, pip, w.y, w.iy, sub_xy, w.dir_end ? sub_end : NULL, m, w.side, &fill));
    b.drop(sub_xy), b.drop(sub_end), b.drop(sub_off), b.drop(list);
  }
  return RDX_OK;
}

/* The side PIP to `side` of x's edges in y (index iy), as records of `bit`: of every edge (keep
 * NULL), or of the edges keep flags, traced as a batch of their own. With touch, `also` is ORed
 * into the bits of the edges it does not flag. side_batch makes the batch; side_records turns its
 * answer into the records. */
struct side_job {
  batch *q;
  int64_t *list = NULL; /* the batch's edges; NULL: every edge of x */
  const uint8_t *touch = NULL;
  uint32_t bit = 0, also = 0;
  recs *out = NULL;
};

rdx_status side_batch(rdx_context *ctx, bag &b, const rdx_polygons *x, const rdx_polygons *y, const rdx_jn_index *iy,
                      const uint8_t *keep, int side, int aux, side_job *j) {
  static const char what[] = "rdx_join_polygons: side PIP";
  cudaStream_t cs = rdx_stream(ctx);
  batch *q = j->q;
  q->y = y, q->iy = iy, q->side = side, q->aux = aux;
  q->xy = x->dev.xy;
  q->dir_end = x->dev.edge_end;
  q->n = x->dev.n_vertices;
  j->list = NULL;
  if (keep) {
    int64_t m = 0;
    RDX_CHECK(flagged(ctx, b, keep, q->n, &j->list, &m));
    double *sub_xy;
    uint32_t *sub_end;
    RDX_CHECK(b.get(&sub_xy, 4 * m));
    RDX_CHECK(b.get(&sub_end, m));
    if (m > 0) {
      gather_queries_kernel<<<rdx_grid(m, TPB), TPB, 0, cs>>>(j->list, m, q->xy, q->dir_end, NULL, sub_xy, sub_end,
                                                              NULL);
      RDX_CUDA(ctx, cudaGetLastError(), what);
    }
    q->xy = sub_xy, q->dir_end = sub_end, q->n = m;
  }
  return RDX_OK;
}

rdx_status side_records(rdx_context *ctx, bag &b, side_job *j) {
  cudaStream_t cs = rdx_stream(ctx);
  recs *out = j->out;
  const batch *q = j->q;
  const int64_t n = q->n;
  uint64_t total = 0;
  RDX_CHECK(read_i64(ctx, q->off + n, (int64_t *)&total));
  RDX_CHECK(b.get(&out->key, (int64_t)total));
  RDX_CHECK(b.get(&out->bits, (int64_t)total));
  if (n > 0) {
    expand_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(q->off, q->feat, j->list, j->touch, n, j->bit, j->also, out->key,
                                                     out->bits);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: expand kernel");
  }
  out->n = (int64_t)total;
  b.drop(q->feat), b.drop(q->off);
  return RDX_OK;
}

/* Which vertices of each layer lie on an edge of the other (t0: R's, t1: S's), and which rings
 * meet the other layer's boundary (m0, m1; NULL: not wanted), from the edge pairs: a vertex on an
 * edge f starts an edge that meets f, so its pair is among them. */
__global__ void meet_kernel(rdx_jn_arrays R, rdx_jn_arrays S, const uint64_t *pairs, int64_t n, uint8_t *t0,
                            uint8_t *t1, uint8_t *m0, uint8_t *m1) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t e = (uint32_t)(pairs[i] >> 32), f = (uint32_t)pairs[i];
    if (t0) {
      const double *a = R.xy + 2 * (uint64_t)e, *b = R.xy + 2 * (uint64_t)R.edge_end[e];
      const double *c = S.xy + 2 * (uint64_t)f, *d = S.xy + 2 * (uint64_t)S.edge_end[f];
      if (rdx_jn_on_segment(a, c, d)) t0[e] = 1;
      if (rdx_jn_on_segment(c, a, b)) t1[f] = 1;
    }
    if (m0) {
      m0[rdx_jn_run_of(R.ring_off, R.n_rings, e)] = 1;
      m1[rdx_jn_run_of(S.ring_off, S.n_rings, f)] = 1;
    }
  }
}

/* keep[v]: the edge starting at vertex v is located: every edge of a ring that meets the other
 * layer's boundary (meets), the first edge of any other ring. */
__global__ void ring_keep_kernel(rdx_jn_arrays X, const uint8_t *meets, uint8_t *keep) {
  for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v < X.n_vertices;
       v += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t r = rdx_jn_run_of(X.ring_off, X.n_rings, (uint64_t)v);
    keep[v] = meets[r] || X.ring_off[r] == (uint64_t)v;
  }
}

struct bit_or {
  __device__ uint32_t operator()(uint32_t a, uint32_t c) const { return a | c; }
};

/* The sources concatenated, sorted by key and merged (bits ORed) into *out. */
rdx_status merge(rdx_context *ctx, bag &b, const recs *src, int n_src, recs *out) {
  static const char what[] = "rdx_join_polygons: merging records";
  cudaStream_t cs = rdx_stream(ctx);
  int64_t n = 0;
  for (int i = 0; i < n_src; i++) n += src[i].n;
  uint64_t *k, *k2;
  uint32_t *v, *v2;
  int64_t *d_m, m = 0;
  RDX_CHECK(b.get(&k, n));
  RDX_CHECK(b.get(&k2, n));
  RDX_CHECK(b.get(&v, n));
  RDX_CHECK(b.get(&v2, n));
  RDX_CHECK(b.get(&d_m, 1));
  int64_t at = 0;
  for (int i = 0; i < n_src; i++) {
    if (src[i].n == 0) continue;
    RDX_CUDA(ctx, cudaMemcpyAsync(k + at, src[i].key, (size_t)src[i].n * 8, cudaMemcpyDeviceToDevice, cs), what);
    RDX_CUDA(ctx, cudaMemcpyAsync(v + at, src[i].bits, (size_t)src[i].n * 4, cudaMemcpyDeviceToDevice, cs), what);
    at += src[i].n;
  }
  out->n = 0;
  if (n == 0) return RDX_OK;
  cub::DoubleBuffer<uint64_t> keys(k, k2);
  cub::DoubleBuffer<uint32_t> vals(v, v2);
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceRadixSort::SortPairs(t, bytes, keys, vals, (int)n, 0, 64, cs);
  }));
  out->key = keys.Alternate(), out->bits = vals.Alternate();
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceReduce::ReduceByKey(t, bytes, keys.Current(), out->key, vals.Current(), out->bits, d_m, bit_or(),
                                          (int)n, cs);
  }));
  RDX_CHECK(read_i64(ctx, d_m, &m));
  out->n = m;
  return RDX_OK;
}

/* ---- pairs ---- */

/* Which merged records a selection keeps: (bits & any) != 0, or (when any is 0) all of need and
 * none of none. */
__global__ void pick_kernel(const uint64_t *key, const uint32_t *bits, int64_t n, int d, const uint32_t *r_feat,
                            const uint32_t *s_feat, uint32_t any, uint32_t need, uint32_t none, uint64_t *pair,
                            uint8_t *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t bt = bits[i];
    flag[i] = any ? (bt & any) != 0 : ((bt & need) == need && (bt & none) == 0);
    pair[i] = rdx_jn_ov_pair(r_feat, s_feat, d, key[i]);
  }
}

/* Sort keys[0 .. n) (moved into the bag's buffers) and drop repeats: *out, *m. With counts (not
 * NULL), the run lengths too. */
rdx_status sort_unique(rdx_context *ctx, bag &b, uint64_t *keys, int64_t n, uint64_t **out, int64_t *m,
                       uint64_t **counts) {
  static const char what[] = "rdx_join_polygons: sorting pairs";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *k2, *u;
  int64_t *d_m;
  *m = 0;
  RDX_CHECK(b.get(&k2, n));
  RDX_CHECK(b.get(&u, n));
  RDX_CHECK(b.get(&d_m, 1));
  *out = u;
  if (counts) RDX_CHECK(b.get(counts, n));
  if (n == 0) return RDX_OK;
  cub::DoubleBuffer<uint64_t> kb(keys, k2);
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceRadixSort::SortKeys(t, bytes, kb, (int)n, 0, 64, cs);
  }));
  if (counts)
    RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
      return cub::DeviceRunLengthEncode::Encode(t, bytes, kb.Current(), u, *counts, d_m, (int)n, cs);
    }));
  else
    RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
      return cub::DeviceSelect::Unique(t, bytes, kb.Current(), u, d_m, (int)n, cs);
    }));
  return read_i64(ctx, d_m, m);
}

/* The pairs of the records of direction d that the selection keeps, sorted unique; with
 * all_edges, only those counted once for every edge of the pair's feature on d's side. */
__global__ void all_edges_kernel(const uint64_t *pair, const uint64_t *count, int64_t n, int d, rdx_jn_arrays X,
                                 uint8_t *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t f = d == 0 ? (uint32_t)(pair[i] >> 32) : (uint32_t)pair[i];
    flag[i] = count[i] == X.ring_off[X.feat_off[f + 1]] - X.ring_off[X.feat_off[f]];
  }
}

rdx_status select_pairs(rdx_context *ctx, bag &b, const rdx_polygons *r, const rdx_polygons *s, const recs &rec, int d,
                        uint32_t any, uint32_t need, uint32_t none, int all_edges, uint64_t **out, int64_t *m) {
  static const char what[] = "rdx_join_polygons: selecting pairs";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *pair, *sel, *cnt = NULL;
  uint8_t *flag;
  int64_t *d_m, k = 0;
  RDX_CHECK(b.get(&pair, rec.n));
  RDX_CHECK(b.get(&sel, rec.n));
  RDX_CHECK(b.get(&flag, rec.n));
  RDX_CHECK(b.get(&d_m, 1));
  if (rec.n > 0) {
    pick_kernel<<<rdx_grid(rec.n, TPB), TPB, 0, cs>>>(rec.key, rec.bits, rec.n, d, r->dev.edge_feat, s->dev.edge_feat,
                                                       any, need, none, pair, flag);
    RDX_CUDA(ctx, cudaGetLastError(), what);
    RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
      return cub::DeviceSelect::Flagged(t, bytes, pair, flag, sel, d_m, rec.n, cs);
    }));
    RDX_CHECK(read_i64(ctx, d_m, &k));
  }
  RDX_CHECK(sort_unique(ctx, b, sel, k, out, m, all_edges ? &cnt : NULL));
  if (!all_edges || *m == 0) return RDX_OK;
  all_edges_kernel<<<rdx_grid(*m, TPB), TPB, 0, cs>>>(*out, cnt, *m, d, d == 0 ? r->dev : s->dev, flag);
  RDX_CUDA(ctx, cudaGetLastError(), what);
  uint64_t *kept;
  RDX_CHECK(b.get(&kept, *m));
  const int64_t mm = *m;
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, *out, flag, kept, d_m, mm, cs);
  }));
  *out = kept;
  return read_i64(ctx, d_m, m);
}

/* The feature pair of each edge pair. */
__global__ void feature_pair_kernel(const uint64_t *pairs, int64_t n, const uint32_t *rf, const uint32_t *sf,
                                    uint64_t *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = (uint64_t)rf[pairs[i] >> 32] << 32 | sf[(uint32_t)pairs[i]];
}

/* flag[i] = a[i] is not in the sorted b. */
__global__ void minus_kernel(const uint64_t *a, int64_t na, const uint64_t *b, int64_t nb, uint8_t *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < na; i += (int64_t)gridDim.x * blockDim.x)
    flag[i] = rdx_jn_ov_find(b, nb, a[i]) < 0;
}

/* ---- areas ---- */

/* The first event of each key, for the records' walks: lower bound of key in the ordered events. */
__device__ int64_t first_event(const vev *ev, const uint32_t *perm, int64_t n, uint64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ev[perm[mid]].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* One thread per merged record of direction d: its pair's index (m when none: its pieces add up
 * to 0) and its share of the pair's area (overlay_hd.h), its events read through perm. */
__global__ void share_kernel(const uint64_t *key, const uint32_t *bits, int64_t n, int d, rdx_jn_arrays R,
                             rdx_jn_arrays S, const vev *ev, const uint32_t *perm, int64_t n_ev, const uint64_t *pairs,
                             int64_t m, uint64_t *at_out, double *share) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t at = rdx_jn_ov_find(pairs, m, rdx_jn_ov_pair(R.edge_feat, S.edge_feat, d, key[i]));
    at_out[i] = at < 0 ? (uint64_t)m : (uint64_t)at;
    share[i] = 0.0;
    if (at < 0) continue;
    const rdx_jn_arrays &X = d == 0 ? R : S;
    const uint32_t edge = (uint32_t)(key[i] >> 32), fa = (uint32_t)(pairs[at] >> 32);
    const double *a = X.xy + 2 * (uint64_t)edge, *b = X.xy + 2 * (uint64_t)X.edge_end[edge];
    const double *o = R.xy + 2 * R.ring_off[R.feat_off[fa]];
    int64_t k0 = n_ev ? first_event(ev, perm, n_ev, key[i]) : 0, k1 = k0;
    while (k1 < n_ev && ev[perm[k1]].key == key[i]) k1++;
    share[i] = rdx_jn_ov_area_share(a, b, bits[i], ev, perm, k0, k1 - k0, o);
  }
}

/* The sorted at[] (n) split by pair: off[p] = the first entry of pair p, p <= m. */
__global__ void pair_range_kernel(const uint64_t *at, int64_t n, int64_t m, uint64_t *off) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p <= m; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (at[mid] < (uint64_t)p) lo = mid + 1;
      else hi = mid;
    }
    off[p] = (uint64_t)lo;
  }
}
/* chunks[p]: pair p's chunks of RDX_JN_OV_CHUNK shares. */
__global__ void chunk_count_kernel(const uint64_t *off, int64_t m, uint64_t *chunks) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < m; p += (int64_t)gridDim.x * blockDim.x)
    chunks[p] = (off[p + 1] - off[p] + RDX_JN_OV_CHUNK - 1) / RDX_JN_OV_CHUNK;
}

/* One thread per chunk (chunk c of pair p: choff[p] <= c < choff[p + 1]): its shares summed in
 * order (overlay_hd.h), as the CPU sums them. */
__global__ void chunk_sum_kernel(const double *share, const uint64_t *off, const uint64_t *choff, int64_t m,
                                 int64_t n_chunks, double *partial) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n_chunks;
       c += (int64_t)gridDim.x * blockDim.x) {
    int64_t lo = 0, hi = m; /* the pair: the last p with choff[p] <= c */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (choff[mid] <= (uint64_t)c) lo = mid;
      else hi = mid;
    }
    const uint64_t a = off[lo] + (uint64_t)(c - (int64_t)choff[lo]) * RDX_JN_OV_CHUNK;
    const uint64_t b = a + RDX_JN_OV_CHUNK < off[lo + 1] ? a + RDX_JN_OV_CHUNK : off[lo + 1];
    rdx_jn_ov_sum acc = {0.0, 0.0};
    for (uint64_t i = a; i < b; i++) rdx_jn_ov_sum_add(&acc, share[i]);
    partial[c] = rdx_jn_ov_sum_value(&acc);
  }
}

/* One thread per pair: its chunks' sums summed in order. */
__global__ void pair_sum_kernel(const double *partial, const uint64_t *choff, int64_t m, double *area) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < m; p += (int64_t)gridDim.x * blockDim.x) {
    rdx_jn_ov_sum acc = {0.0, 0.0};
    for (uint64_t c = choff[p]; c < choff[p + 1]; c++) rdx_jn_ov_sum_add(&acc, partial[c]);
    area[p] = rdx_jn_ov_sum_value(&acc);
  }
}

/* Each ring's first vertex and feature (x's device arrays), a thread per ring: a map's features
 * hold up to hundreds of thousands of island rings each, so a thread per feature would walk them
 * alone. */
__global__ void ring_points_kernel(rdx_jn_arrays X, double *pts, uint32_t *ring_feat) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < X.n_rings; k += (int64_t)gridDim.x * blockDim.x) {
    pts[2 * k] = X.xy[2 * X.ring_off[k]], pts[2 * k + 1] = X.xy[2 * X.ring_off[k] + 1];
    ring_feat[k] = rdx_jn_run_of(X.feat_off, X.n_features, (uint64_t)k);
  }
}

/* Ring k's containing features at feat[off[k] ..] as pairs in direction d's order. */
__global__ void ring_pair_kernel(const uint64_t *off, uint64_t *feat, const uint32_t *ring_feat, int64_t n, int d) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
    for (uint64_t i = off[k]; i < off[k + 1]; i++)
      feat[i] = d == 0 ? (uint64_t)ring_feat[k] << 32 | (uint32_t)feat[i] : feat[i] << 32 | (uint64_t)ring_feat[k];
}

/* overlay.c's ring_pairs: the pairs of each ring of x whose first vertex lies in a feature of y
 * (plain PIP through the backend's table), sorted unique. ring_batch makes the batch of the
 * rings' first vertices (*rf: their features), ring_result the pairs from its answer. */
rdx_status ring_batch(rdx_context *ctx, bag &b, const rdx_polygons *x, const rdx_polygons *y, const rdx_jn_index *iy,
                      int aux, batch *q, uint32_t **rf) {
  cudaStream_t cs = rdx_stream(ctx);
  const int64_t n = x->dev.n_rings;
  double *pts;
  RDX_CHECK(b.get(&pts, 2 * n));
  RDX_CHECK(b.get(rf, n));
  if (n > 0) ring_points_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(x->dev, pts, *rf);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: ring points kernel");
  q->y = y, q->iy = iy, q->xy = pts, q->dir_end = NULL, q->n = n, q->side = 0, q->aux = aux;
  return RDX_OK;
}

rdx_status ring_result(rdx_context *ctx, bag &b, const batch *q, const uint32_t *rf, int d, uint64_t **out, int64_t *m) {
  int64_t total = 0;
  RDX_CHECK(read_i64(ctx, q->off + q->n, &total));
  if (q->n > 0) {
    ring_pair_kernel<<<rdx_grid(q->n, TPB), TPB, 0, rdx_stream(ctx)>>>(q->off, q->feat, rf, q->n, d);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: ring pair kernel");
  }
  return sort_unique(ctx, b, q->feat, total, out, m, NULL);
}

/* The m pairs (and areas when not NULL) copied out of the bag into device memory of the caller's
 * (the result's arrays: join_polygons.c keeps them). */
rdx_status to_result(rdx_context *ctx, const uint64_t *res, const double *d_area, int64_t m, uint64_t **out,
                     int64_t *n_out, double **areas) {
  static const char what[] = "rdx_join_polygons: result";
  cudaStream_t cs = rdx_stream(ctx);
  uint64_t *k = NULL;
  double *a = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&k, (size_t)(m + 1) * 8, RDX_DEVICE));
  rdx_status st = RDX_OK;
  if (m > 0) st = rdx_cuda_ok(ctx, cudaMemcpyAsync(k, res, (size_t)m * 8, cudaMemcpyDeviceToDevice, cs), what);
  if (st == RDX_OK && areas) {
    st = rdx_mem_alloc(ctx, what, (void **)&a, (size_t)(m + 1) * 8, RDX_DEVICE);
    if (st == RDX_OK && m > 0)
      st = rdx_cuda_ok(ctx, cudaMemcpyAsync(a, d_area, (size_t)m * 8, cudaMemcpyDeviceToDevice, cs), what);
  }
  if (st == RDX_OK) st = rdx_cuda_sync(ctx, what);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, k);
    rdx_mem_free(ctx, a);
    return st;
  }
  *out = k;
  *n_out = m;
  if (areas) *areas = a;
  return RDX_OK;
}

__global__ void split_pairs_kernel(const uint64_t *keys, int64_t m, int64_t *pairs) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m; i += (int64_t)gridDim.x * blockDim.x)
    pairs[2 * i] = (int64_t)(keys[i] >> 32), pairs[2 * i + 1] = (int64_t)(uint32_t)keys[i];
}

}  // namespace

extern "C" rdx_status rdx_jn_polygons_gpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ixr,
                                          const rdx_polygons *s, const rdx_jn_index *ixs, rdx_join_predicate pred,
                                          rdx_jn_track *track, uint64_t **out, int64_t *n_out, double **areas) {
  static const char what[] = "rdx_join_polygons";
  cudaStream_t cs = rdx_stream(ctx);
  bag b(ctx);
  *out = NULL;
  *n_out = 0;
  if (areas) *areas = NULL;
  const rdx_jn_ops *lsi = rdx_jn_find_ops(RDX_JN_OP_LSI, ctx->backend);
  const rdx_jn_ops *pip = rdx_jn_find_ops(RDX_JN_OP_PIP, ctx->backend);
  if (lsi == NULL || lsi->edge_pairs == NULL || pip == NULL || pip->pip == NULL || pip->side_pip == NULL ||
      pip->engine == NULL)
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: no polygon join on backend %s", what, rdx_backend_name(ctx->backend));
  const int want_areas = areas != NULL;
  /* pairs */
  uint64_t *pairs = NULL;
  int64_t np = 0;
  rdx_jn_lsi_stats stats;
  memset(&stats, 0, sizeof stats);
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PAIRS));
  RDX_CHECK(lsi->edge_pairs(ctx, r, ixr, s, &pairs, &np, &stats));
  RDX_CHECK(b.keep(pairs));
  if (track->stats) track->stats->edge_pairs = np;
  if (pred == RDX_JOIN_INTERSECTS) { /* overlay.c's rule: the edge pairs' features, and rings */
    uint64_t *fp, *bnd, *c0, *c1, *u, *res;
    int64_t nbnd = 0, n0 = 0, n1 = 0, m = 0;
    RDX_CHECK(b.get(&fp, np));
    if (np > 0) {
      feature_pair_kernel<<<rdx_grid(np, TPB), TPB, 0, cs>>>(pairs, np, r->dev.edge_feat, s->dev.edge_feat, fp);
      RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: feature pair kernel");
    }
    RDX_CHECK(sort_unique(ctx, b, fp, np, &bnd, &nbnd, NULL));
    RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PIP));
    batch q[2];
    uint32_t *rf[2];
    RDX_CHECK(ring_batch(ctx, b, r, s, ixs, 0, &q[0], &rf[0]));
    RDX_CHECK(ring_batch(ctx, b, s, r, ixr, 1, &q[1], &rf[1]));
    RDX_CHECK(locate_all(ctx, b, pip, q, 2));
    RDX_CHECK(ring_result(ctx, b, &q[0], rf[0], 0, &c0, &n0));
    RDX_CHECK(ring_result(ctx, b, &q[1], rf[1], 1, &c1, &n1));
    RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_SELECT));
    RDX_CHECK(b.get(&u, nbnd + n0 + n1));
    if (nbnd) RDX_CUDA(ctx, cudaMemcpyAsync(u, bnd, (size_t)nbnd * 8, cudaMemcpyDeviceToDevice, cs), what);
    if (n0) RDX_CUDA(ctx, cudaMemcpyAsync(u + nbnd, c0, (size_t)n0 * 8, cudaMemcpyDeviceToDevice, cs), what);
    if (n1) RDX_CUDA(ctx, cudaMemcpyAsync(u + nbnd + n0, c1, (size_t)n1 * 8, cudaMemcpyDeviceToDevice, cs), what);
    RDX_CHECK(sort_unique(ctx, b, u, nbnd + n0 + n1, &res, &m, NULL));
    RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_RESULT));
    return to_result(ctx, res, NULL, m, out, n_out, NULL);
  }
  /* classify */
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_CLASSIFY));
  uint64_t *c[3], *o[3];
  uint64_t tot[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) {
    RDX_CHECK(b.get(&c[k], np));
    RDX_CHECK(b.get(&o[k], np + 1));
  }
  recs proper[2], vgroups[2], side[2][2];
  vev *ev[2] = {NULL, NULL};
  if (np > 0) {
    classify_kernel<<<rdx_grid(np, TPB), TPB, 0, cs>>>(r->dev, s->dev, pairs, np, want_areas, c[0], c[1], c[2], NULL,
                                                       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: classify kernel");
    for (int k = 0; k < 3; k++) RDX_CHECK(rdx_csr_scan_cuda(ctx, c[k], np, o[k], &tot[k]));
  }
  for (int d = 0; d < 2; d++) {
    RDX_CHECK(b.get(&proper[d].key, (int64_t)tot[0]));
    RDX_CHECK(b.get(&proper[d].bits, (int64_t)tot[0]));
    proper[d].n = (int64_t)tot[0];
    RDX_CHECK(b.get(&ev[d], (int64_t)tot[1 + d]));
  }
  if (np > 0) {
    classify_kernel<<<rdx_grid(np, TPB), TPB, 0, cs>>>(r->dev, s->dev, pairs, np, want_areas, NULL, NULL, NULL, o[0],
                                                       o[1], o[2], proper[0].key, proper[0].bits, proper[1].key,
                                                       proper[1].bits, ev[0], ev[1]);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: classify kernel");
  }
  for (int k = 0; k < 3; k++) b.drop(c[k]), b.drop(o[k]);
  /* What the side PIP needs of the edge pairs (overlay_hd.h's "Fewer side queries"): with both
   * sides, the vertices that lie on the other layer's edges; for OVERLAY alone, the rings that
   * meet the other layer's boundary */
  const int sides = pred == RDX_JOIN_CONTAINS || pred == RDX_JOIN_WITHIN || want_areas;
  const rdx_polygons *lay[2] = {r, s};
  uint8_t *touch[2] = {NULL, NULL}, *meets[2] = {NULL, NULL}, *keep[2] = {NULL, NULL};
  for (int d = 0; d < 2; d++) {
    const int64_t nv = lay[d]->dev.n_vertices, nr = lay[d]->dev.n_rings;
    if (sides) {
      RDX_CHECK(b.get(&touch[d], nv));
      RDX_CUDA(ctx, cudaMemsetAsync(touch[d], 0, (size_t)nv, cs), what);
    } else {
      RDX_CHECK(b.get(&meets[d], nr));
      RDX_CHECK(b.get(&keep[d], nv));
      RDX_CUDA(ctx, cudaMemsetAsync(meets[d], 0, (size_t)nr, cs), what);
    }
  }
  if (np > 0) {
    meet_kernel<<<rdx_grid(np, TPB), TPB, 0, cs>>>(r->dev, s->dev, pairs, np, touch[0], touch[1], meets[0], meets[1]);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: meet kernel");
  }
  for (int d = 0; d < 2 && !sides; d++) {
    ring_keep_kernel<<<rdx_grid(lay[d]->dev.n_vertices, TPB), TPB, 0, cs>>>(lay[d]->dev, meets[d], keep[d]);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: ring keep kernel");
  }
  b.drop(pairs);
  /* vertex groups */
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_GROUPS));
  for (int d = 0; d < 2; d++) {
    const int64_t n = (int64_t)tot[1 + d];
    if (n == 0) continue;
    uint32_t *perm, *gb;
    uint64_t *gk;
    uint8_t *flag;
    static const int by_point[3] = {0, 1, 3};
    RDX_CHECK(event_order(ctx, ev[d], n, by_point, 3, &perm));
    RDX_CHECK(b.keep(perm));
    RDX_CHECK(b.get(&gb, n));
    RDX_CHECK(b.get(&gk, n));
    RDX_CHECK(b.get(&flag, n));
    group_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(ev[d], perm, n, gb, gk, flag);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: group kernel");
    RDX_CHECK(select_recs(ctx, b, gk, gb, flag, n, &vgroups[d]));
    b.drop(perm), b.drop(gb), b.drop(gk), b.drop(flag);
  }
  /* starts */
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PIP));
  const rdx_jn_index *into[2] = {ixs, ixr};
  batch q[4];
  side_job job[4];
  int nj = 0;
  for (int k = 0; k < 4; k++) job[k].q = &q[k];
  for (int d = 0; d < 2; d++) { /* direction 1 on a side stream */
    const rdx_polygons *x = lay[d], *y = lay[1 - d];
    if (sides) { /* left everywhere (and right where untouched), right where touched */
      side_job &l = job[nj++], &rt = job[nj++];
      RDX_CHECK(side_batch(ctx, b, x, y, into[d], NULL, +1, d, &l));
      l.bit = RDX_JN_OV_START_L, l.touch = touch[d], l.also = RDX_JN_OV_START_R, l.out = &side[d][0];
      RDX_CHECK(side_batch(ctx, b, x, y, into[d], touch[d], -1, d, &rt));
      rt.bit = RDX_JN_OV_START_R, rt.out = &side[d][1];
    } else {
      side_job &l = job[nj++];
      RDX_CHECK(side_batch(ctx, b, x, y, into[d], keep[d], +1, d, &l));
      l.bit = RDX_JN_OV_START_L, l.out = &side[d][0];
    }
  }
  RDX_CHECK(locate_all(ctx, b, pip, q, nj));
  for (int k = 0; k < nj; k++) RDX_CHECK(side_records(ctx, b, &job[k]));
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_MERGE));
  recs rec[2];
  for (int d = 0; d < 2; d++) {
    recs src[4] = {proper[d], vgroups[d], side[d][0], side[d][1]};
    RDX_CHECK(merge(ctx, b, src, 4, &rec[d]));
  }
  /* pairs */
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_SELECT));
  const uint32_t exists_l = RDX_JN_OV_START_L | RDX_JN_OV_ODD_L, exists_r = RDX_JN_OV_START_R | RDX_JN_OV_ODD_R;
  uint64_t *res = NULL;
  int64_t m = 0;
  if (pred == RDX_JOIN_OVERLAY) {
    uint64_t *p0, *p1, *u;
    int64_t n0 = 0, n1 = 0;
    RDX_CHECK(select_pairs(ctx, b, r, s, rec[0], 0, exists_l, 0, 0, 0, &p0, &n0));
    RDX_CHECK(select_pairs(ctx, b, r, s, rec[1], 1, exists_l, 0, 0, 0, &p1, &n1));
    RDX_CHECK(b.get(&u, n0 + n1));
    if (n0) RDX_CUDA(ctx, cudaMemcpyAsync(u, p0, (size_t)n0 * 8, cudaMemcpyDeviceToDevice, cs), what);
    if (n1) RDX_CUDA(ctx, cudaMemcpyAsync(u + n0, p1, (size_t)n1 * 8, cudaMemcpyDeviceToDevice, cs), what);
    RDX_CHECK(sort_unique(ctx, b, u, n0 + n1, &res, &m, NULL));
  } else {
    const int d_all = pred == RDX_JOIN_CONTAINS ? 1 : 0;
    uint64_t *a, *v, *kept;
    int64_t na = 0, nv = 0, *d_m;
    uint8_t *flag;
    RDX_CHECK(select_pairs(ctx, b, r, s, rec[d_all], d_all, 0, RDX_JN_OV_START_L, RDX_JN_OV_ODD_L, 1, &a, &na));
    RDX_CHECK(select_pairs(ctx, b, r, s, rec[1 - d_all], 1 - d_all, exists_r, 0, 0, 0, &v, &nv));
    RDX_CHECK(b.get(&flag, na));
    RDX_CHECK(b.get(&kept, na));
    RDX_CHECK(b.get(&d_m, 1));
    if (na > 0) {
      minus_kernel<<<rdx_grid(na, TPB), TPB, 0, cs>>>(a, na, v, nv, flag);
      RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: minus kernel");
      RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
        return cub::DeviceSelect::Flagged(t, bytes, a, flag, kept, d_m, na, cs);
      }));
      RDX_CHECK(read_i64(ctx, d_m, &m));
    }
    res = kept;
  }
  /* areas: every record's share, ordered by pair (stably: direction, then key), summed per pair */
  double *d_area = NULL;
  if (want_areas) {
    RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_AREAS));
    const int64_t n_sh = rec[0].n + rec[1].n;
    uint64_t *at, *at2;
    double *sh, *sh2;
    RDX_CHECK(b.get(&d_area, m));
    RDX_CHECK(b.get(&at, n_sh));
    RDX_CHECK(b.get(&at2, n_sh));
    RDX_CHECK(b.get(&sh, n_sh));
    RDX_CHECK(b.get(&sh2, n_sh));
    for (int d = 0; d < 2; d++) {
      const int64_t n = (int64_t)tot[1 + d], base = d == 0 ? 0 : rec[0].n;
      uint32_t *perm = NULL;
      static const int along[4] = {0, 1, 2, 3}; /* (key, t, x, y), as the CPU's order */
      if (n > 0) {
        RDX_CHECK(event_order(ctx, ev[d], n, along, 4, &perm));
        RDX_CHECK(b.keep(perm));
      }
      if (rec[d].n > 0) {
        share_kernel<<<rdx_grid(rec[d].n, TPB), TPB, 0, cs>>>(rec[d].key, rec[d].bits, rec[d].n, d, r->dev, s->dev,
                                                              ev[d], perm, n, res, m, at + base, sh + base);
        RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: share kernel");
      }
    }
    if (n_sh > 0 && m > 0) {
      cub::DoubleBuffer<uint64_t> kk(at, at2);
      cub::DoubleBuffer<double> vv(sh, sh2);
      RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
        return cub::DeviceRadixSort::SortPairs(t, bytes, kk, vv, n_sh, 0, 64, cs);
      }));
      uint64_t *off, *cnt, *choff, n_chunks = 0;
      double *partial;
      RDX_CHECK(b.get(&off, m + 1));
      RDX_CHECK(b.get(&cnt, m));
      RDX_CHECK(b.get(&choff, m + 1));
      pair_range_kernel<<<rdx_grid(m + 1, TPB), TPB, 0, cs>>>(kk.Current(), n_sh, m, off);
      chunk_count_kernel<<<rdx_grid(m, TPB), TPB, 0, cs>>>(off, m, cnt);
      RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: area chunk kernels");
      RDX_CHECK(rdx_csr_scan_cuda(ctx, cnt, m, choff, &n_chunks));
      RDX_CHECK(b.get(&partial, (int64_t)n_chunks));
      if (n_chunks > 0)
        chunk_sum_kernel<<<rdx_grid((int64_t)n_chunks, TPB), TPB, 0, cs>>>(vv.Current(), off, choff, m,
                                                                           (int64_t)n_chunks, partial);
      pair_sum_kernel<<<rdx_grid(m, TPB), TPB, 0, cs>>>(partial, choff, m, d_area);
      RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: area sum kernels");
    } else if (m > 0) {
      RDX_CUDA(ctx, cudaMemsetAsync(d_area, 0, (size_t)m * 8, cs), what);
    }
  }
  RDX_CHECK(rdx_jn_track_stage(ctx, track, RDX_JN_ST_RESULT));
  return to_result(ctx, res, d_area, m, out, n_out, areas);
}

extern "C" rdx_status rdx_jn_split_pairs_gpu(rdx_context *ctx, const uint64_t *keys, int64_t m, int64_t *pairs) {
  if (m > 0) split_pairs_kernel<<<rdx_grid(m, TPB), TPB, 0, rdx_stream(ctx)>>>(keys, m, pairs);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_join_polygons: split pairs kernel");
  return rdx_cuda_sync(ctx, "rdx_join_polygons: result");
}

extern "C" const rdx_jn_ops rdx_jn_polygons_cuda_ops = {
    RDX_JN_OP_POLYGONS, RDX_BACKEND_CUDA, NULL, NULL, NULL, NULL, NULL, NULL, rdx_jn_polygons_gpu, NULL,
};
#ifdef RDX_HAVE_OPTIX
extern "C" const rdx_jn_ops rdx_jn_polygons_optix_ops = {
    RDX_JN_OP_POLYGONS, RDX_BACKEND_OPTIX, NULL, NULL, NULL, NULL, NULL, NULL, rdx_jn_polygons_gpu, NULL,
};
#endif
