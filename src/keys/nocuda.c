/*
 * nocuda.c: the keys module's CUDA entry points for builds without CUDA. No GPU context can
 * exist in such a build, so these are never reached; they fail loudly if they ever are.
 */
#include "keys/keys.h"

static rdx_status none(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "keys: the cuda backend is not built");
}
rdx_status rdx_entries_build_cuda(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out) {
  (void)in, (void)out;
  return none(ctx);
}
rdx_status rdx_csr_sort_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows) {
  (void)offsets, (void)n, (void)rows;
  return none(ctx);
}
rdx_status rdx_scan_counts_cuda(rdx_context *ctx, const uint64_t *counts, int64_t n,
                                uint64_t *offsets, uint64_t *total) {
  (void)counts, (void)n, (void)offsets, (void)total;
  return none(ctx);
}
rdx_status rdx_fill_u64_cuda(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones) {
  (void)p, (void)n, (void)all_ones;
  return none(ctx);
}
rdx_status rdx_find_u64_cuda(rdx_context *ctx, const uint64_t *p, int64_t n, uint64_t value, int64_t *first) {
  (void)p, (void)n, (void)value, (void)first;
  return none(ctx);
}
rdx_status rdx_offsets_check_cuda(rdx_context *ctx, const char *fn, const uint64_t *offsets, const uint64_t *counts,
                                  int64_t n, int64_t *first) {
  (void)fn, (void)offsets, (void)counts, (void)n, (void)first;
  return none(ctx);
}
