/*
 * cgrxu.cu: the cgrxu kind on CUDA contexts (soft BVH) and OPTIX contexts (a GAS, traced by the
 * cgrx pipeline's locate, the chains walked by a kernel after it): cgrxu.c's steps as kernels over
 * cgrxu_hd.h's functions, one thread per bucket for the build's fill and for updates, one thread
 * per query for lookups; the batch's sort and the erase keys' sort and unique are CUB's. The node
 * store (slabs, free stack) is cgrxu.c's, in device memory here.
 */
#include <cub/cub.cuh>
#include <stdint.h>

/* cgrxu_hd.h's updaters are host and device functions; this file runs them on the device only */
__host__ __device__ inline uint32_t cgrxu_atomic_add(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
  return atomicAdd((unsigned int *)p, v);
#else
  uint32_t old = *p;
  *p = old + v;
  return old;
#endif
}
#define RDX_CGRXU_ATOMIC_ADD32(p, v) cgrxu_atomic_add((p), (v))

#include "core/cuda_util.cuh"
#include "keys/cgrxu.h"

namespace {

constexpr int TPB = 128;

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void emit_kernel(rdx_cgrx_params P, float *tris, uint64_t *codes) {
  GRID_STRIDE(b, P.nb) rdx_cgrx_emit(&P, b, 0, tris, codes);
}

template <typename PAIR>
__global__ void fill_kernel(rdx_cgrx_params P, rdx_cgrxu_view v, const PAIR *e, int64_t n, int64_t B, PAIR *reps,
                            uint64_t *eff) {
  GRID_STRIDE(b, v.nb + 1) {
    rdx_cgrxu_head *h = rdx_cgrxu_head_of(&v, (uint32_t)b);
    char *p = rdx_cgrxu_pairs_of(&v, (uint32_t)b);
    int64_t lo = b * B, hi = lo + B < n ? lo + B : n;
    if (b == v.nb) lo = hi = n;
    for (int64_t i = lo; i < hi; i++) ((PAIR *)p)[i - lo] = e[i];
    h->size = (uint32_t)(hi - lo);
    h->next = RDX_CGRXU_NONE;
    h->max_key = hi > lo ? e[hi - 1].key : 0;
    if (b < v.nb) {
      reps[b].key = e[hi - 1].key, reps[b].row = e[lo].key;
      eff[b] = rdx_cgrxu_eff(&P, b, e[hi - 1].key, hi < n ? e[hi].key : 0, e[n - 1].key);
    }
  }
}

__device__ int64_t bucket_of(const rdx_cgrx_params &P, const rdx_cgrxu_view &v, const rdx_bvh_view &bv, uint64_t k,
                             int *broken) {
  int rays = 0;
  int64_t b = rdx_cgrx_locate_soft(&P, &bv, k, &rays);
  if (b == RDX_CGRX_BROKEN) {
    *(volatile int *)broken = 1;
    return v.nb;
  }
  return rdx_cgrxu_bucket(&v, b);
}

/* One thread per query: the rays (soft BVH), or the buckets an OptiX launch found (located: a
 * key's, or a range's lo and hi), then the chains' walk. */
template <typename K>
__global__ void __launch_bounds__(128, 8)
    query_kernel(rdx_cgrx_params P, rdx_cgrxu_view v, rdx_bvh_view bv, const K *q, const int64_t *located, int64_t n,
                 int op, uint64_t *out, uint64_t *rows, int *broken) {
  const int range = op >= RDX_CGRX_OP_RANGE_COUNT, fill = op == RDX_CGRX_OP_LOOKUP_FILL || op == RDX_CGRX_OP_RANGE_FILL;
  GRID_STRIDE(i, n) {
    uint64_t lo = range ? q[2 * i] : q[i], hi = range ? q[2 * i + 1] : lo;
    rdx_cgrxu_found f;
    f.count = 0;
    f.min_row = RDX_MISS;
    if (lo <= hi) {
      int64_t b, bh;
      if (located) {
        b = rdx_cgrxu_bucket(&v, located[range ? 2 * i : i]);
        bh = range ? rdx_cgrxu_bucket(&v, located[2 * i + 1]) : b;
      } else {
        b = bucket_of(P, v, bv, lo, broken);
        bh = range ? bucket_of(P, v, bv, hi, broken) : b;
      }
      f = rdx_cgrxu_walk(&v, b, bh, lo, hi, fill ? rows + out[i] : NULL, fill ? out[i + 1] - out[i] : 0);
    }
    if (op == RDX_CGRX_OP_LOOKUP) out[i] = f.count ? f.min_row : RDX_MISS;
    else if (!fill) out[i] = f.count;
  }
}

/* ---- updates ---- */

template <typename PAIR>
__global__ void split_kernel(const PAIR *e, int64_t m, uint64_t *keys, uint64_t *rows) {
  GRID_STRIDE(i, m) keys[i] = e[i].key, rows[i] = e[i].row;
}

/* off[b] = the first batch key routed to bucket b or later, b in [0, nb + 1]. */
__global__ void offsets_kernel(rdx_cgrxu_view v, const uint64_t *keys, int64_t m, int64_t *off) {
  GRID_STRIDE(b, v.nb + 2) off[b] = rdx_cgrxu_insert_offset(&v, b, keys, m);
}

__global__ void bound_kernel(rdx_cgrxu_view v, const int64_t *off, unsigned long long *sum) {
  GRID_STRIDE(b, v.nb + 1) {
    uint64_t s = rdx_cgrxu_split_bound(&v, b, (uint64_t)(off[b + 1] - off[b]));
    if (s) atomicAdd(sum, (unsigned long long)s);
  }
}

__global__ void insert_kernel(rdx_cgrxu_view v, const int64_t *off, const uint64_t *keys, const uint64_t *rows,
                              const uint32_t *free_ids, uint32_t n_free, uint32_t fresh, uint32_t *taken) {
  GRID_STRIDE(b, v.nb + 1) {
    int64_t a = off[b], z = off[b + 1];
    if (a < z) rdx_cgrxu_insert_chain(&v, b, keys + a, rows + a, z - a, free_ids, n_free, fresh, taken);
  }
}

__global__ void erase_kernel(rdx_cgrxu_view v, const uint64_t *keys, int64_t m, uint32_t *free_ids, uint32_t *free_top,
                             unsigned long long *sum) {
  GRID_STRIDE(b, v.nb + 1) {
    int64_t a, z;
    rdx_cgrxu_slice(&v, b, 1, keys, m, &a, &z);
    if (a < z) {
      uint64_t gone = rdx_cgrxu_erase_chain(&v, b, keys + a, z - a, free_ids, free_top);
      if (gone) atomicAdd(sum, (unsigned long long)gone);
    }
  }
}

template <typename K>
__global__ void widen_kernel(const K *in, int64_t m, uint64_t *out) {
  GRID_STRIDE(i, m) out[i] = in[i];
}

/* ---- entries ---- */

__global__ void chain_count_kernel(rdx_cgrxu_view v, uint64_t *count) {
  GRID_STRIDE(b, v.nb + 1) {
    uint64_t c = 0;
    for (uint32_t id = (uint32_t)b; id != RDX_CGRXU_NONE; id = rdx_cgrxu_head_of(&v, id)->next)
      c += rdx_cgrxu_head_of(&v, id)->size;
    count[b] = c;
  }
}
template <typename K>
__global__ void chain_copy_kernel(rdx_cgrxu_view v, const uint64_t *off, K *keys, uint64_t *rows) {
  GRID_STRIDE(b, v.nb + 1) {
    uint64_t w = off[b];
    for (uint32_t id = (uint32_t)b; id != RDX_CGRXU_NONE; id = rdx_cgrxu_head_of(&v, id)->next) {
      const rdx_cgrxu_head *h = rdx_cgrxu_head_of(&v, id);
      const char *p = rdx_cgrxu_pairs_of(&v, id);
      for (int i = 0; i < (int)h->size; i++, w++) keys[w] = (K)rdx_cgrxu_key(&v, p, i), rows[w] = rdx_cgrxu_row(&v, p, i);
    }
  }
}

/* Scratch buffers freed together on every way out. */
struct scratch {
  rdx_context *ctx;
  void *p[16];
  int n = 0;
  explicit scratch(rdx_context *c) : ctx(c) {}
  ~scratch() {
    for (int i = 0; i < n; i++) rdx_mem_free(ctx, p[i]);
  }
  template <typename T>
  rdx_status get(T **out, int64_t count, const char *what) {
    *out = NULL;
    RDX_CHECK(rdx_scratch(ctx, what, (void **)out, (size_t)(count + 1) * sizeof(T)));
    p[n++] = *out;
    return RDX_OK;
  }
};

template <typename T>
rdx_status read_back(rdx_context *ctx, const void *p, T *v, const char *what) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(v, p, sizeof(T), cudaMemcpyDeviceToHost, s), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  return RDX_OK;
}

template <typename T>
rdx_status write_to(rdx_context *ctx, void *p, T v, const char *what) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(p, &v, sizeof(T), cudaMemcpyHostToDevice, s), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  return RDX_OK;
}

rdx_status check_broken(rdx_context *ctx, int *broken, const char *what) {
  int b = 0;
  RDX_CHECK(read_back(ctx, broken, &b, what));
  if (b) RDX_CHECK(write_to(ctx, broken, 0, what));
  if (b) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a ray sequence found no representative (a broken scene)", what);
  return RDX_OK;
}

void cgrxu_destroy(rdx_context *ctx, rdx_index *idx) { rdx_cgrxu_impl_free(ctx, (rdx_cgrxu_impl *)idx->impl); }

rdx_status cgrxu_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  static const char what[] = "rdx_index_build: cgrxu";
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)calloc(1, sizeof *u);
  if (u == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s handle", what);
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st;
  float *tris = NULL;
  uint64_t *codes = NULL;
  void *reps = NULL;
  uint64_t *eff = NULL;
  int64_t nb = 0;
  RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, in, &u->x.e), st, fail);
  {
    const int w = u->x.e.width;
    u->v.width = w;
    u->v.node_bytes = in->opts.node_bytes;
    u->v.cap = in->opts.node_bytes / (w == 32 ? (int)sizeof(rdx_pair32) : (int)sizeof(rdx_pair64));
    rdx_build_options o = in->opts;
    o.bucket_size = u->v.cap / 2; /* nodes start half full */
    rdx_cgrx_plan(&u->x, &o);
    const int64_t n = u->x.P.n, i0 = (u->x.P.bucket < n ? u->x.P.bucket : n) - 1;
    uint64_t k0 = 0, k1 = 0;
    if (w == 32) {
      rdx_pair32 a, b;
      RDX_CHECK_GOTO(read_back(ctx, (const rdx_pair32 *)u->x.e.pairs + i0, &a, what), st, fail);
      RDX_CHECK_GOTO(read_back(ctx, (const rdx_pair32 *)u->x.e.pairs + n - 1, &b, what), st, fail);
      k0 = a.key, k1 = b.key;
    } else {
      rdx_pair64 a, b;
      RDX_CHECK_GOTO(read_back(ctx, (const rdx_pair64 *)u->x.e.pairs + i0, &a, what), st, fail);
      RDX_CHECK_GOTO(read_back(ctx, (const rdx_pair64 *)u->x.e.pairs + n - 1, &b, what), st, fail);
      k0 = a.key, k1 = b.key;
    }
    rdx_cgrx_params_finish(&u->x.P, k0, k1);
    u->x.n_slots = rdx_cgrx_slots(&u->x.P);
    nb = u->x.P.nb;
    const int morton = (in->opts.flags & RDX_BUILD_RT_MORTON) != 0 || ctx->backend == RDX_BACKEND_OPTIX;
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&tris, (size_t)u->x.n_slots * 36), st, fail);
    if (!morton) RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&codes, (size_t)u->x.n_slots * 8), st, fail);
    emit_kernel<<<rdx_grid(nb, TPB), TPB, 0, s>>>(u->x.P, tris, codes);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: cgrxu emit kernel", st, fail);
    rdx_bvh_options bo = {codes, 0};
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_TRIANGLES, tris, u->x.n_slots, &bo, &u->x.scene), st, fail);
    rdx_mem_free(ctx, tris), tris = NULL;
    rdx_mem_free(ctx, codes), codes = NULL;
    RDX_CHECK_GOTO(rdx_cgrxu_store_init(ctx, u, nb), st, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &reps, (size_t)nb * (w == 32 ? 8 : 16), RDX_DEVICE), st, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&eff, (size_t)nb * 8, RDX_DEVICE), st, fail);
    u->v.nb = nb;
    if (w == 32)
      fill_kernel<rdx_pair32><<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->x.P, u->v, (const rdx_pair32 *)u->x.e.pairs, n,
                                                                     o.bucket_size, (rdx_pair32 *)reps, eff);
    else
      fill_kernel<rdx_pair64><<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->x.P, u->v, (const rdx_pair64 *)u->x.e.pairs, n,
                                                                     o.bucket_size, (rdx_pair64 *)reps, eff);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: cgrxu fill kernel", st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu query flag", (void **)&u->x.flag, sizeof(int), RDX_DEVICE),
                 st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(u->x.flag, 0, sizeof(int), s), what, st, fail);
  rdx_entries_free(ctx, &u->x.e);
  u->v.eff = eff;
  rdx_cgrxu_adopt_reps(u, reps);
  idx->impl = u;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
  rdx_mem_free(ctx, reps);
  rdx_mem_free(ctx, eff);
  rdx_cgrxu_impl_free(ctx, u);
  return st;
}

rdx_status cgrxu_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                       uint64_t *rows) {
  const rdx_cgrxu_impl *u = (const rdx_cgrxu_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  scratch sc(ctx);
  rdx_bvh_view bv = rdx_bvh_view_of(&u->x.scene.bvh);
  int64_t *located = NULL;
  if (u->x.scene.gas != NULL) { /* OptiX: the rays in a launch of their own, the walks after it */
    const int64_t nk = op >= RDX_KEY_RANGE_COUNT ? 2 * n : n;
    RDX_CHECK(sc.get(&located, nk, "cgrxu: query buckets"));
    RDX_CHECK(rdx_cgrx_optix_locate(ctx, &u->x, idx->dtype, q, nk, located, u->x.flag));
  }
  if (idx->dtype == RDX_U32)
    query_kernel<uint32_t><<<rdx_grid(n, 128), 128, 0, s>>>(u->x.P, u->v, bv, (const uint32_t *)q, located, n, (int)op,
                                                             out, rows, u->x.flag);
  else
    query_kernel<uint64_t><<<rdx_grid(n, 128), 128, 0, s>>>(u->x.P, u->v, bv, (const uint64_t *)q, located, n, (int)op,
                                                             out, rows, u->x.flag);
  RDX_CUDA(ctx, cudaGetLastError(), "cgrxu: query kernel");
  RDX_CHECK(check_broken(ctx, u->x.flag, "cgrxu: query"));
  /* a key's rows may sit in several chains: a lookup's rows are put in ascending order here */
  if (op == RDX_KEY_LOOKUP_FILL) return rdx_csr_sort_cuda(ctx, out, n, rows);
  return RDX_OK;
}

rdx_status cgrxu_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  static const char what[] = "rdx_index_insert: cgrxu batch";
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  scratch sc(ctx);
  rdx_entries be = {0};
  rdx_trace(ctx, "cgrxu insert: start");
  RDX_CHECK(rdx_entries_build_cuda(ctx, in, &be));
  rdx_trace(ctx, "cgrxu insert: batch sorted");
  if (be.width > u->v.width) { /* rows past 2^32 into 32-bit nodes: the nodes must widen */
    rdx_entries_free(ctx, &be);
    return rdx_keys_rebuild(ctx, idx, in, NULL, 0, NULL);
  }
  const int64_t m = be.n, nb = u->v.nb;
  uint64_t *keys, *rows;
  int64_t *off;
  rdx_status st = RDX_OK;
  uint64_t bound = 0;
  uint32_t taken = 0;
  RDX_CHECK_GOTO(sc.get(&keys, m, what), st, done);
  RDX_CHECK_GOTO(sc.get(&rows, m, what), st, done);
  RDX_CHECK_GOTO(sc.get(&off, nb + 2, what), st, done);
  if (be.width == 32) split_kernel<rdx_pair32><<<rdx_grid(m, TPB), TPB, 0, s>>>((const rdx_pair32 *)be.pairs, m, keys, rows);
  else split_kernel<rdx_pair64><<<rdx_grid(m, TPB), TPB, 0, s>>>((const rdx_pair64 *)be.pairs, m, keys, rows);
  offsets_kernel<<<rdx_grid(nb + 2, TPB), TPB, 0, s>>>(u->v, keys, m, off);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(u->counters, 0, 16, s), what, st, done);
  bound_kernel<<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, off, (unsigned long long *)(u->counters + 2));
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), what, st, done);
  RDX_CHECK_GOTO(read_back(ctx, u->counters + 2, &bound, what), st, done);
  rdx_trace(ctx, "cgrxu insert: split, bucket offsets, split bound");
  /* room for every split the batch can cause, before anything changes */
  RDX_CHECK_GOTO(rdx_cgrxu_reserve(ctx, u, bound > u->n_free ? bound - u->n_free : 0), st, done);
  insert_kernel<<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, off, keys, rows, u->free_ids, u->n_free, u->n_nodes,
                                                       u->counters + 1);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "cgrxu: insert kernel", st, done);
  RDX_CHECK_GOTO(read_back(ctx, u->counters + 1, &taken, what), st, done);
  rdx_trace(ctx, "cgrxu insert: slabs reserved, insert kernel");
  {
    uint32_t from_free = taken < u->n_free ? taken : u->n_free;
    u->n_free -= from_free;
    u->n_nodes += taken - from_free;
  }
done:
  rdx_entries_free(ctx, &be);
  return st;
}

rdx_status cgrxu_erase(rdx_context *ctx, rdx_index *idx, const void *q, int64_t m, int64_t *n_erased) {
  static const char what[] = "rdx_index_erase: cgrxu batch";
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  scratch sc(ctx);
  const int64_t nb = u->v.nb;
  uint64_t *k0, *k1;
  int64_t *d_mu, mu = 0;
  RDX_CHECK(sc.get(&k0, m, what));
  RDX_CHECK(sc.get(&k1, m, what));
  RDX_CHECK(sc.get(&d_mu, 1, what));
  if (idx->dtype == RDX_U32) widen_kernel<uint32_t><<<rdx_grid(m, TPB), TPB, 0, s>>>((const uint32_t *)q, m, k0);
  else widen_kernel<uint64_t><<<rdx_grid(m, TPB), TPB, 0, s>>>((const uint64_t *)q, m, k0);
  RDX_CUDA(ctx, cudaGetLastError(), what);
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) {
    return cub::DeviceRadixSort::SortKeys(t, bytes, k0, k1, m, 0, idx->dtype == RDX_U32 ? 32 : 64, s);
  }));
  RDX_CHECK(rdx_cub_run(ctx, what, [&](void *t, size_t &bytes) { return cub::DeviceSelect::Unique(t, bytes, k1, k0, d_mu, m, s); }));
  RDX_CHECK(read_back(ctx, d_mu, &mu, what));
  /* nothing below fails short of a CUDA error: the free stack holds every node id */
  RDX_CUDA(ctx, cudaMemsetAsync(u->counters, 0, 16, s), what);
  RDX_CHECK(write_to(ctx, u->counters, u->n_free, what));
  erase_kernel<<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, k0, mu, u->free_ids, u->counters,
                                                      (unsigned long long *)(u->counters + 2));
  RDX_CUDA(ctx, cudaGetLastError(), "cgrxu: erase kernel");
  uint64_t gone = 0;
  RDX_CHECK(read_back(ctx, u->counters + 2, &gone, what));
  RDX_CHECK(read_back(ctx, u->counters, &u->n_free, what));
  *n_erased = (int64_t)gone;
  return RDX_OK;
}

rdx_status cgrxu_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  static const char what[] = "cgrxu: entries";
  const rdx_cgrxu_impl *u = (const rdx_cgrxu_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  scratch sc(ctx);
  const int64_t nb = u->v.nb;
  uint64_t *count, *off, *rows, total = 0;
  void *keys;
  RDX_CHECK(sc.get(&count, nb + 1, what));
  RDX_CHECK(sc.get(&off, nb + 2, what));
  chain_count_kernel<<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, count);
  RDX_CUDA(ctx, cudaGetLastError(), what);
  RDX_CHECK(rdx_csr_scan_cuda(ctx, count, nb + 1, off, &total));
  if ((int64_t)total != idx->n)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %llu pairs in the chains, %lld counted", what, (unsigned long long)total,
                    (long long)idx->n);
  RDX_CHECK(sc.get((uint64_t **)&keys, (int64_t)total, what));
  RDX_CHECK(sc.get(&rows, (int64_t)total, what));
  if (idx->dtype == RDX_U32) chain_copy_kernel<uint32_t><<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, off, (uint32_t *)keys, rows);
  else chain_copy_kernel<uint64_t><<<rdx_grid(nb + 1, TPB), TPB, 0, s>>>(u->v, off, (uint64_t *)keys, rows);
  RDX_CUDA(ctx, cudaGetLastError(), what);
  rdx_key_input in;
  memset(&in, 0, sizeof in);
  in.keys = keys;
  in.rows = rows;
  in.n = (int64_t)total;
  in.key_dtype = idx->dtype;
  in.row_dtype = RDX_U64;
  in.opts = idx->opts;
  return rdx_entries_build_cuda(ctx, &in, out); /* sorted by (key, row); width as a build's */
}

}  // namespace

extern "C" const rdx_key_ops rdx_cgrxu_cuda_ops = {
    RDX_KIND_CGRXU, RDX_BACKEND_CUDA, cgrxu_build,  cgrxu_destroy, cgrxu_query, 1, 0, cgrxu_insert, cgrxu_erase,
    cgrxu_entries,
};
/* OPTIX contexts: the scene is a GAS, traced by the cgrx pipeline's locate (rx_cgrx.cu) */
extern "C" const rdx_key_ops rdx_cgrxu_optix_ops = {
    RDX_KIND_CGRXU, RDX_BACKEND_OPTIX, cgrxu_build,  cgrxu_destroy, cgrxu_query, 1, 0, cgrxu_insert, cgrxu_erase,
    cgrxu_entries,
};
