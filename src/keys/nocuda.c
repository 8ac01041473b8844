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
