/*
 * cgrx.cu: the cgrx kind on the GPU: sorted entries (CUB, charged to the build as in the paper),
 * one thread per bucket to emit the scene, the soft BVH (CUDA contexts) or an OptiX GAS (OPTIX
 * contexts). Lookups: one thread per query runs the ray sequence and the bucket search; fills
 * then copy each query's rows with 16 threads per query (the paper's cooperative scan, Section
 * III-A), so a range of 2^20 rows is not one thread's loop.
 */
#include "core/cuda_util.cuh"
#include "keys/cgrx.h"

namespace {

constexpr int TPB = 256;
constexpr int SCAN_GROUP = 16; /* threads per query in the copy, as the paper */

__global__ void emit_kernel(rdx_cgrx_params P, float *tris, uint64_t *codes) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < P.nb; b += (int64_t)gridDim.x * blockDim.x)
    rdx_cgrx_emit(&P, b, 0, tris, codes);
}

/* At most 64 registers (8 blocks of 128 per SM): a lookup waits on dependent node loads, and the
 * resident warps of a build with more registers hide less of that latency (bench/README.md,
 * "Measurements behind the library's choices"). */
template <typename K>
__global__ void __launch_bounds__(128, 8)
    soft_query_kernel(rdx_cgrx_params P, rdx_bvh_view v, const K *q, int64_t n, int op, uint64_t *out,
                      rdx_cgrx_span *spans, int *broken) {
  int range = op >= RDX_CGRX_OP_RANGE_COUNT;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t lo = range ? q[2 * i] : q[i], hi = range ? q[2 * i + 1] : lo;
    int rays = 0;
    int64_t b = range && lo > hi ? RDX_CGRX_MISS : rdx_cgrx_locate_soft(&P, &v, lo, &rays);
    if (b == RDX_CGRX_BROKEN) {
      *(volatile int *)broken = 1;
      b = RDX_CGRX_MISS;
    }
    rdx_cgrx_finish(&P, op, i, b, lo, hi, out, spans);
  }
}

/* rows[offsets[i] + j] = the row of entry spans[i].start + j, 16 threads per query. */
__global__ void copy_kernel(rdx_cgrx_params P, const rdx_cgrx_span *spans, int64_t n, const uint64_t *offsets,
                            uint64_t *rows) {
  int lane = threadIdx.x % SCAN_GROUP;
  int64_t group = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / SCAN_GROUP;
  int64_t groups = (int64_t)gridDim.x * blockDim.x / SCAN_GROUP;
  for (int64_t i = group; i < n; i += groups) {
    rdx_cgrx_span sp = spans[i];
    uint64_t *dst = rows + offsets[i];
    for (int64_t j = lane; j < sp.count; j += SCAN_GROUP) dst[j] = rdx_cgrx_rowid(&P, sp.start + j);
  }
}

template <typename PAIR>
rdx_status read_key(rdx_context *ctx, const void *pairs, int64_t i, uint64_t *k) {
  PAIR p;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(&p, (const PAIR *)pairs + i, sizeof p, cudaMemcpyDeviceToHost, s), "cgrx: read key");
  RDX_CUDA(ctx, cudaStreamSynchronize(s), "cgrx: read key");
  *k = p.key;
  return RDX_OK;
}

rdx_status cgrx_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  static const char what[] = "rdx_index_build: cgrx triangles";
  rdx_cgrx_impl *x = (rdx_cgrx_impl *)calloc(1, sizeof *x);
  if (x == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: cgrx handle");
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st;
  float *tris = NULL;
  uint64_t *codes = NULL;
  uint64_t k0 = 0, k1 = 0;
  int morton = (in->opts.flags & RDX_BUILD_RT_MORTON) != 0 || ctx->backend == RDX_BACKEND_OPTIX;
  RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, in, &x->e), st, fail);
  rdx_cgrx_plan(x, &in->opts);
  {
    int64_t i0 = (x->P.bucket < x->P.n ? x->P.bucket : x->P.n) - 1;
    if (x->e.width == 32) {
      RDX_CHECK_GOTO(read_key<rdx_pair32>(ctx, x->e.pairs, i0, &k0), st, fail);
      RDX_CHECK_GOTO(read_key<rdx_pair32>(ctx, x->e.pairs, x->P.n - 1, &k1), st, fail);
    } else {
      RDX_CHECK_GOTO(read_key<rdx_pair64>(ctx, x->e.pairs, i0, &k0), st, fail);
      RDX_CHECK_GOTO(read_key<rdx_pair64>(ctx, x->e.pairs, x->P.n - 1, &k1), st, fail);
    }
  }
  rdx_cgrx_params_finish(&x->P, k0, k1);
  x->n_slots = rdx_cgrx_slots(&x->P);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&tris, (size_t)x->n_slots * 36), st, fail);
  if (!morton) RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&codes, (size_t)x->n_slots * 8), st, fail);
  emit_kernel<<<rdx_grid(x->P.nb, TPB), TPB, 0, s>>>(x->P, tris, codes);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_build: cgrx emit kernel", st, fail);
  {
    rdx_bvh_options bo = {codes, 0}; /* width 0: the context's forced width, else BVH4 */
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_TRIANGLES, tris, x->n_slots, &bo, &x->scene), st, fail);
  }
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
  /* page-locked host memory, which kernels reach through unified addressing: a query reads it
   * after its sync, with no memset or copy of its own (two fewer calls per small batch) */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: cgrx query flag", (void **)&x->flag, sizeof(int), RDX_HOST_PINNED),
                 st, fail2);
  *x->flag = 0;
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "rdx_index_build", st, fail2);
  idx->impl = x;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
fail2:
  rdx_cgrx_impl_free(ctx, x);
  return st;
}

void cgrx_destroy(rdx_context *ctx, rdx_index *idx) { rdx_cgrx_impl_free(ctx, (rdx_cgrx_impl *)idx->impl); }

/* cgrx's buckets are its sorted entries: a copy of them (CUDA and OptiX alike). */
rdx_status cgrx_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  return rdx_entries_copy_cuda(ctx, &((const rdx_cgrx_impl *)idx->impl)->e, out);
}

rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int op, uint64_t *out, uint64_t *rows) {
  const rdx_cgrx_impl *x = (const rdx_cgrx_impl *)idx->impl;
  cudaStream_t s = rdx_stream(ctx);
  int fill = op == RDX_CGRX_OP_LOOKUP_FILL || op == RDX_CGRX_OP_RANGE_FILL;
  rdx_cgrx_span *spans = NULL;
  int *broken = x->flag; /* pinned host memory, 0 between queries */
  rdx_status st = RDX_OK;
  if (fill) RDX_CHECK_GOTO(rdx_scratch(ctx, "cgrx: fill spans", (void **)&spans, (size_t)n * sizeof *spans), st, done);
  if (x->scene.gas != NULL) {
    RDX_CHECK_GOTO(rdx_cgrx_optix_query(ctx, x, idx->dtype, op, q, n, out, out, spans, broken), st, done);
  } else {
    rdx_bvh_view v = rdx_bvh_view_of(&x->scene.bvh);
    if (idx->dtype == RDX_U32)
      soft_query_kernel<uint32_t><<<rdx_grid(n, 128), 128, 0, s>>>(x->P, v, (const uint32_t *)q, n, op, out, spans, broken);
    else
      soft_query_kernel<uint64_t><<<rdx_grid(n, 128), 128, 0, s>>>(x->P, v, (const uint64_t *)q, n, op, out, spans, broken);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "cgrx: query kernel", st, done);
  }
  if (fill) {
    unsigned grid = rdx_grid(n * SCAN_GROUP, TPB);
    copy_kernel<<<grid, TPB, 0, s>>>(x->P, spans, n, out, rows);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "cgrx: copy kernel", st, done);
  }
  /* the kernels store to the flag across the bus only in a broken scene: no copy back, no reset */
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "cgrx: query", st, done);
  if (*(volatile int *)broken) {
    *(volatile int *)broken = 0;
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "cgrx: a lookup's ray sequence found no representative (a broken scene)");
  }
done:
  rdx_mem_free(ctx, spans);
  return st;
}

rdx_status cgrx_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                      uint64_t *rows) {
  return run(ctx, idx, q, n, (int)op, out, rows); /* RDX_CGRX_OP_* share rdx_key_op's numbers */
}

}  // namespace

extern "C" const rdx_key_ops rdx_cgrx_cuda_ops = {
    RDX_KIND_CGRX, RDX_BACKEND_CUDA, cgrx_build, cgrx_destroy, cgrx_query, 1, 0, NULL, NULL, cgrx_entries,
};
extern "C" const rdx_key_ops rdx_cgrx_optix_ops = {
    RDX_KIND_CGRX, RDX_BACKEND_OPTIX, cgrx_build, cgrx_destroy, cgrx_query, 1, 0, NULL, NULL, cgrx_entries,
};
