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

static rdx_status relayout(rdx_context *ctx, rdx_points *pts, const int64_t *new_fpos, int64_t new_cap) {
  (void)pts, (void)new_fpos, (void)new_cap;
  return none(ctx);
}
static rdx_status find(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, rdx_sp_work **w, rdx_sp_found *f) {
  (void)pts, (void)b, (void)w, (void)f;
  return none(ctx);
}
static rdx_status split_gather(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                               int64_t n_points, const int64_t *group_start, int64_t n_groups, uint64_t *keys_h,
                               double *x_h, double *y_h, uint64_t *id_h) {
  (void)pts, (void)w, (void)segs, (void)n_segs, (void)n_points, (void)group_start, (void)n_groups, (void)keys_h,
      (void)x_h, (void)y_h, (void)id_h;
  return none(ctx);
}
static rdx_status reserve(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, int64_t new_cap, int64_t slot_cap,
                          int64_t n_nodes, int64_t n_segs, int64_t n_keeps, int64_t n_order) {
  (void)pts, (void)w, (void)new_cap, (void)slot_cap, (void)n_nodes, (void)n_segs, (void)n_keeps, (void)n_order;
  return none(ctx);
}
static rdx_status commit(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                         const rdx_sp_keep *keeps, int64_t n_keeps, const int64_t *order, int64_t n_order,
                         const rdx_sp_nodes *new_nodes) {
  (void)pts, (void)w, (void)segs, (void)n_segs, (void)keeps, (void)n_keeps, (void)order, (void)n_order, (void)new_nodes;
  return none(ctx);
}
static void release(rdx_context *ctx, rdx_sp_work *w) { (void)ctx, (void)w; }

const rdx_sp_backend rdx_sp_cuda_backend = {relayout, find, split_gather, reserve, commit, release};

rdx_status rdx_sp_qt_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  (void)pts, (void)b, (void)f;
  return none(ctx);
}
rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  (void)pts, (void)headroom;
  return none(ctx);
}
rdx_status rdx_sp_kd_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  (void)pts, (void)b, (void)f;
  return none(ctx);
}
