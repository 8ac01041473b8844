/*
 * nocuda.c: the ray-tracing engine's CUDA entry points for builds without CUDA. No GPU context
 * can exist in such a build, so these are never reached; they fail loudly if they ever are.
 */
#include "rt/rt.h"

#include <string.h>

rdx_status rdx_bvh_build_cuda(rdx_context *ctx, int kind, const float *prims, int64_t n,
                              const rdx_bvh_options *opts, rdx_bvh *out) {
  (void)kind, (void)prims, (void)n, (void)opts;
  memset(out, 0, sizeof *out);
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_bvh_build: the cuda backend is not built");
}

rdx_status rdx_rt_trace_cuda(rdx_context *ctx, const rdx_bvh *b, const rdx_ray *rays, int64_t n,
                             rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                             const uint64_t *offsets, uint32_t *ids) {
  (void)b, (void)rays, (void)n, (void)mode, (void)hits, (void)counts, (void)offsets, (void)ids;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_rt_trace: the cuda backend is not built");
}

rdx_status rdx_rt_sort_ids_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint32_t *ids) {
  (void)offsets, (void)n, (void)ids;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_rt_trace: the cuda backend is not built");
}
