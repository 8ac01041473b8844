/*
 * rx.cu: the rx kind on the GPU: the soft BVH (CUDA contexts) or an OptiX GAS (OPTIX contexts),
 * built from keys in device memory; lookups one thread (soft) or one OptiX launch index per query.
 * The geometry, rays and hit program are rx_hd.h's, shared with the CPU and with the OptiX
 * programs (src/keys/optix/programs.cu).
 */
#include <cub/cub.cuh>

#include "core/cuda_util.cuh"
#include "keys/rx.h"


namespace {

constexpr int TPB = 256;

template <typename R>
__global__ void iota_kernel(R *rows, int64_t n, uint64_t first) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    rows[i] = (R)(first + (uint64_t)i);
}

/* Each key read back from its triangle (rx_hd.h: vertex 0 is (x - 1/2, y + 1/2, z - 1/2), every
 * value exact in float) and its row from the primitive's input position, in leaf order. */
__global__ void unpack_kernel(rdx_rx_impl x, rdx_bvh_view v, int key64, void *keys, uint64_t *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < v.n_prims; i += (int64_t)gridDim.x * blockDim.x) {
    const float *t = v.prims + i * 9;
    uint64_t k = (uint64_t)(t[0] + 0.5f) | (uint64_t)(t[1] - 0.5f) << 22 | (uint64_t)(t[2] + 0.5f) << 44;
    if (key64) ((uint64_t *)keys)[i] = k;
    else ((uint32_t *)keys)[i] = (uint32_t)k;
    rows[i] = rdx_rx_row_of(x.rows, x.row_width, v.ids[i]);
  }
}

template <typename K>
__global__ void triangles_kernel(const K *keys, int64_t n, float *tris, uint64_t *codes) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t k = keys[i];
    rdx_rx_triangle(k, tris + i * 9);
    if (codes) codes[i] = k;
  }
}

/* Per sorted entry: does it repeat its predecessor (flags[0] bit 0), does its row start there. */
template <typename PAIR>
__global__ void facts_kernel(const PAIR *e, int64_t n, unsigned *dup, uint64_t *rows, uint8_t *row_start) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t k = e[i].key;
    uint64_t prev = i > 0 ? (uint64_t)e[i - 1].key : 0;
    if (i > 0 && k == prev) atomicOr(dup, 1u);
    if (rows) {
      rows[i] = k >> 22;
      row_start[i] = i == 0 || (k >> 22) != (prev >> 22);
    }
  }
}

template <typename K>
__global__ void soft_query_kernel(rdx_rx_impl x, rdx_bvh_view v, const K *q, int64_t n, int op, uint64_t *out,
                                  uint64_t *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    rdx_rx_state s;
    int fill = op == RDX_RX_OP_LOOKUP_FILL || op == RDX_RX_OP_RANGE_FILL;
    rdx_rx_state_init(x.rows, x.row_width, x.unique, op, &s, fill ? rows + out[i] : NULL);
    if (op >= RDX_RX_OP_RANGE_COUNT) rdx_rx_soft_range(&v, &x.rows_info, q[2 * i], q[2 * i + 1], &s);
    else rdx_rx_soft_point(&v, q[i], &s);
    rdx_rx_finish(op, i, &s, out, rows);
  }
}

rdx_status facts(rdx_context *ctx, const rdx_entries *e, rdx_rx_impl *x) {
  static const char what[] = "rdx_index_build: rx facts";
  cudaStream_t s = rdx_stream(ctx);
  int64_t n = e->n;
  size_t ps = e->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  uint64_t k0 = 0, k1 = 0;
  if (e->width == 32) {
    rdx_pair32 a, b;
    RDX_CUDA(ctx, cudaMemcpyAsync(&a, e->pairs, ps, cudaMemcpyDeviceToHost, s), what);
    RDX_CUDA(ctx, cudaMemcpyAsync(&b, (const char *)e->pairs + (n - 1) * ps, ps, cudaMemcpyDeviceToHost, s), what);
    RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
    k0 = a.key, k1 = b.key;
  } else {
    rdx_pair64 a, b;
    RDX_CUDA(ctx, cudaMemcpyAsync(&a, e->pairs, ps, cudaMemcpyDeviceToHost, s), what);
    RDX_CUDA(ctx, cudaMemcpyAsync(&b, (const char *)e->pairs + (n - 1) * ps, ps, cudaMemcpyDeviceToHost, s), what);
    RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
    k0 = a.key, k1 = b.key;
  }
  x->rows_info.min_row = k0 >> 22;
  x->rows_info.max_row = k1 >> 22;
  int need_list = x->rows_info.max_row - x->rows_info.min_row >= RDX_RX_ROW_SPAN_MAX;
  unsigned *dup = NULL;
  uint64_t *rows = NULL;
  uint8_t *starts = NULL;
  void *temp = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&dup, 16), st, done);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(dup, 0, 16, s), what, st, done);
  if (need_list) {
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&rows, (size_t)n * 8), st, done);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&starts, (size_t)n), st, done);
  }
  if (e->width == 32)
    facts_kernel<rdx_pair32><<<rdx_grid(n, TPB), TPB, 0, s>>>((const rdx_pair32 *)e->pairs, n, dup, rows, starts);
  else
    facts_kernel<rdx_pair64><<<rdx_grid(n, TPB), TPB, 0, s>>>((const rdx_pair64 *)e->pairs, n, dup, rows, starts);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: rx facts kernel", st, done);
  {
    unsigned h[4] = {0, 0, 0, 0};
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(h, dup, 16, cudaMemcpyDeviceToHost, s), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
    x->unique = h[0] == 0;
  }
  if (need_list) {
    /* the populated rows: the row of every entry that starts one */
    int64_t *d_count = (int64_t *)(dup + 2);
    size_t temp_bytes = 0;
    uint64_t *list = NULL;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx populated rows", (void **)&list, (size_t)n * 8, RDX_DEVICE), st,
                   done);
    x->row_list = list;
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(NULL, temp_bytes, rows, starts, list, d_count, n, s), what, st, done);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, done);
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(temp, temp_bytes, rows, starts, list, d_count, n, s), what, st, done);
    int64_t distinct = 0;
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&distinct, d_count, 8, cudaMemcpyDeviceToHost, s), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
    /* keep only the distinct rows: a right-sized copy */
    uint64_t *fit = NULL;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx populated rows", (void **)&fit, (size_t)distinct * 8, RDX_DEVICE),
                   st, done);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(fit, list, (size_t)distinct * 8, cudaMemcpyDeviceToDevice, s), what, st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, done);
    rdx_mem_free(ctx, list);
    x->row_list = fit;
    x->rows_info.list = fit;
    x->rows_info.n_list = distinct;
  }
done:
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, dup);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, starts);
  return st;
}

rdx_status rx_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_rx_impl *x = (rdx_rx_impl *)calloc(1, sizeof *x);
  if (x == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: rx handle");
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st;
  float *tris = NULL;
  uint64_t *codes = NULL;
  rdx_entries e = {0};
  int morton = (in->opts.flags & RDX_BUILD_RT_MORTON) != 0 || ctx->backend == RDX_BACKEND_OPTIX;
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: rx triangles", (void **)&tris, (size_t)in->n * 36), st, fail);
  if (!morton) RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_build: rx sort codes", (void **)&codes, (size_t)in->n * 8), st, fail);
  if (in->key_dtype == RDX_U32)
    triangles_kernel<uint32_t><<<rdx_grid(in->n, TPB), TPB, 0, s>>>((const uint32_t *)in->keys, in->n, tris, codes);
  else
    triangles_kernel<uint64_t><<<rdx_grid(in->n, TPB), TPB, 0, s>>>((const uint64_t *)in->keys, in->n, tris, codes);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: rx triangles kernel", st, fail);
  {
    rdx_bvh_options bo = {codes, 0}; /* width 0: the context's forced width, else BVH4 */
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_TRIANGLES, tris, in->n, &bo, &x->scene), st, fail);
  }
  if (x->scene.gas != NULL) { /* a GAS cannot give its keys back (rx_entries) */
    size_t kb = (size_t)in->n * (in->key_dtype == RDX_U32 ? 4 : 8);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx keys", &x->keys, kb, RDX_DEVICE), st, fail);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(x->keys, in->keys, kb, cudaMemcpyDeviceToDevice, s), "rdx_index_build", st, fail);
  }
  rdx_mem_free(ctx, tris); /* the tree (or GAS) keeps its own copy */
  rdx_mem_free(ctx, codes);
  tris = NULL;
  codes = NULL;
  if (in->rows) {
    size_t w = in->row_dtype == RDX_U32 ? 4 : 8;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx row ids", &x->rows, (size_t)in->n * w, RDX_DEVICE), st, fail);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(x->rows, in->rows, (size_t)in->n * w, cudaMemcpyDeviceToDevice, s), "rdx_index_build",
                  st, fail);
    x->row_width = (int)w * 8;
  } else if (in->first_row != 0) { /* implied rows past 0 (an insert into an empty index): spelt out */
    int w = in->first_row + (uint64_t)in->n - 1 <= 0xFFFFFFFFull ? 4 : 8;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx row ids", &x->rows, (size_t)in->n * w, RDX_DEVICE), st, fail);
    if (w == 4) iota_kernel<uint32_t><<<rdx_grid(in->n, TPB), TPB, 0, s>>>((uint32_t *)x->rows, in->n, in->first_row);
    else iota_kernel<uint64_t><<<rdx_grid(in->n, TPB), TPB, 0, s>>>((uint64_t *)x->rows, in->n, in->first_row);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: rx row ids", st, fail);
    x->row_width = w * 8;
  }
  RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, in, &e), st, fail);
  RDX_CHECK_GOTO(facts(ctx, &e, x), st, fail);
  rdx_entries_free(ctx, &e);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "rdx_index_build", st, fail);
  idx->impl = x;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &e);
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
  rdx_rx_impl_free(ctx, x);
  return st;
}

void rx_destroy(rdx_context *ctx, rdx_index *idx) { rdx_rx_impl_free(ctx, (rdx_rx_impl *)idx->impl); }

/* The pairs of an OptiX build: its kept keys, primitive i's row. */
__global__ void kept_rows_kernel(rdx_rx_impl x, int64_t n, uint64_t *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    rows[i] = rdx_rx_row_of(x.rows, x.row_width, (uint32_t)i);
}

/* The pairs, from the soft BVH's primitives, or on OptiX from the keys the build kept (a GAS is
 * built without random vertex access, so its vertices cannot be read back). */
rdx_status rx_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const rdx_rx_impl *x = (const rdx_rx_impl *)idx->impl;
  rdx_bvh_view v = rdx_bvh_view_of(&x->scene.bvh);
  int64_t n = x->scene.gas != NULL ? idx->n : v.n_prims;
  void *keys = NULL;
  uint64_t *rows = NULL;
  rdx_status st;
  int key64 = idx->dtype == RDX_U64;
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rx: entries keys", &keys, (size_t)n * (key64 ? 8 : 4)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rx: entries rows", (void **)&rows, (size_t)n * 8), st, done);
  if (x->scene.gas != NULL) {
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(keys, x->keys, (size_t)n * (key64 ? 8 : 4), cudaMemcpyDeviceToDevice, rdx_stream(ctx)),
                  "rx: entries", st, done);
    kept_rows_kernel<<<rdx_grid(n, TPB), TPB, 0, rdx_stream(ctx)>>>(*x, n, rows);
  } else {
    unpack_kernel<<<rdx_grid(n, TPB), TPB, 0, rdx_stream(ctx)>>>(*x, v, key64, keys, rows);
  }
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rx: entries kernel", st, done);
  {
    rdx_key_input in;
    memset(&in, 0, sizeof in);
    in.keys = keys;
    in.rows = rows;
    in.n = n;
    in.key_dtype = idx->dtype;
    in.row_dtype = RDX_U64;
    in.opts = idx->opts;
    st = rdx_entries_build_cuda(ctx, &in, out);
  }
done:
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  return st;
}

rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int op, uint64_t *out, uint64_t *rows) {
  const rdx_rx_impl *x = (const rdx_rx_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  if (x->scene.gas != NULL) {
    RDX_CHECK(rdx_rx_optix_query(ctx, x, idx->dtype, op, q, n, out, rows));
  } else {
    rdx_bvh_view v = rdx_bvh_view_of(&x->scene.bvh);
    if (idx->dtype == RDX_U32)
      soft_query_kernel<uint32_t><<<rdx_grid(n, 128), 128, 0, s>>>(*x, v, (const uint32_t *)q, n, op, out, rows);
    else
      soft_query_kernel<uint64_t><<<rdx_grid(n, 128), 128, 0, s>>>(*x, v, (const uint64_t *)q, n, op, out, rows);
    RDX_LAUNCH_CHECK(ctx, "rx: query kernel");
  }
  /* all hits arrive in traversal order: sort each query's rows (point lookups on duplicates) */
  if (op == RDX_RX_OP_LOOKUP_FILL && !x->unique) RDX_CHECK(rdx_csr_sort_cuda(ctx, out, n, rows));
  return rdx_cuda_sync(ctx, "rx: query");
}

rdx_status rx_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                    uint64_t *rows) {
  return run(ctx, idx, q, n, (int)op, out, rows); /* RDX_RX_OP_* share rdx_key_op's numbers */
}

}  // namespace

extern "C" const rdx_key_ops rdx_rx_cuda_ops = {
    RDX_KIND_RX, RDX_BACKEND_CUDA, rx_build, rx_destroy, rx_query, 1, 0, NULL, NULL, rx_entries,
};
extern "C" const rdx_key_ops rdx_rx_optix_ops = {
    RDX_KIND_RX, RDX_BACKEND_OPTIX, rx_build, rx_destroy, rx_query, 1, 0, NULL, NULL, rx_entries,
};
