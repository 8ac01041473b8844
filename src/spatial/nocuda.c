/*
 * nocuda.c: the spatial module's CUDA entry points for builds without CUDA. No GPU context can
 * exist in such a build, so these are never reached; they fail loudly if they ever are.
 */
#include "spatial/spatial.h"

static rdx_status none(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "spatial: the cuda backend is not built");
}
rdx_status rdx_sp_scan_cuda(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols, const double *box,
                            int radius_col, rdx_sp_scan *out) {
  (void)data, (void)f64, (void)rows, (void)cols, (void)box, (void)radius_col, (void)out;
  return none(ctx);
}
rdx_status rdx_sp_qt_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  (void)pts, (void)in;
  return none(ctx);
}
rdx_status rdx_sp_kd_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  (void)pts, (void)in;
  return none(ctx);
}
rdx_status rdx_sp_query_cuda(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                             const uint64_t *offsets, uint64_t *rows) {
  (void)pts, (void)in, (void)counts, (void)offsets, (void)rows;
  return none(ctx);
}
rdx_status rdx_sp_brute_count_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                   uint64_t *counts) {
  (void)xy, (void)f64, (void)n, (void)in, (void)counts;
  return none(ctx);
}
rdx_status rdx_sp_brute_knn_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                 uint64_t *rows) {
  (void)xy, (void)f64, (void)n, (void)in, (void)rows;
  return none(ctx);
}

static rdx_status no_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  (void)pts, (void)b;
  return none(ctx);
}
rdx_status rdx_sp_qt_paged_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) { return no_update(ctx, pts, b); }
rdx_status rdx_sp_qt_merge_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) { return no_update(ctx, pts, b); }
rdx_status rdx_sp_kd_repair_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) { return no_update(ctx, pts, b); }
rdx_status rdx_sp_rebuild_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) { return no_update(ctx, pts, b); }
rdx_status rdx_sp_qt_dense_cuda(rdx_context *ctx, rdx_points *pts) {
  (void)pts;
  return none(ctx);
}
rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  (void)pts, (void)headroom;
  return none(ctx);
}
