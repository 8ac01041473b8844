/*
 * nocuda.c: the spatial module's one CUDA entry point named outside the ops tables (a test calls
 * it), for builds without CUDA, whose registry has no CUDA entries. No GPU context can exist in
 * such a build, so it is never reached; it fails loudly if it ever is.
 */
#include "spatial/spatial.h"

rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  (void)pts, (void)headroom;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "spatial: the cuda backend is not built");
}
