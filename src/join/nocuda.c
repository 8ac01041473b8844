/*
 * nocuda.c: the join module's CUDA entry points for builds without CUDA. No GPU context can exist
 * in such a build and the registry lists no CUDA tables, so these are never reached; they fail
 * loudly if they ever are.
 */
#include "join/join.h"

static rdx_status none(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "join: the cuda backend is not built");
}

rdx_status rdx_jn_pip_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                           int64_t n, int planar, const rdx_jn_pip_out *out) {
  (void)r, (void)ix, (void)xy, (void)n, (void)planar, (void)out;
  return none(ctx);
}

rdx_status rdx_jn_split_pairs_gpu(rdx_context *ctx, const uint64_t *keys, int64_t m, int64_t *pairs) {
  (void)keys, (void)m, (void)pairs;
  return none(ctx);
}

rdx_status rdx_jn_points_cuda(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst, int64_t *bad) {
  (void)src, (void)f32, (void)n, (void)dst;
  *bad = -1;
  return none(ctx);
}

rdx_status rdx_jn_lsi_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                           int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats) {
  (void)r, (void)ix, (void)s, (void)want_points, (void)out, (void)stats;
  return none(ctx);
}
