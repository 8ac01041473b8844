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
rdx_status rdx_entries_merge_cuda(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out) {
  (void)e, (void)in, (void)out;
  return none(ctx);
}
rdx_status rdx_entries_erase_cuda(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype,
                                  int64_t m, rdx_entries *out, int64_t *n_erased) {
  (void)e, (void)keys, (void)key_dtype, (void)m, (void)out, (void)n_erased;
  return none(ctx);
}
rdx_status rdx_entries_split_cuda(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                                  rdx_dtype *row_dtype) {
  (void)e, (void)key_dtype, (void)keys, (void)rows, (void)row_dtype;
  return none(ctx);
}
