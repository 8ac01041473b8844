/*
 * nocuda.c: the spatial module's CUDA entry points that code outside the ops tables names, for
 * builds without CUDA (the registry has no CUDA entries then). No GPU context can exist in such a
 * build, so these are never reached; they fail loudly if they ever are.
 */
#include "spatial/spatial.h"

rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  (void)pts, (void)headroom;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "spatial: the cuda backend is not built");
}
rdx_status rdx_sp_brute_count_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                   uint64_t *counts) {
  (void)xy, (void)f64, (void)n, (void)in, (void)counts;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "spatial: the cuda backend is not built");
}
rdx_status rdx_sp_brute_knn_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                 uint64_t *rows) {
  (void)xy, (void)f64, (void)n, (void)in, (void)rows;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "spatial: the cuda backend is not built");
}
