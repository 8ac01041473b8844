/*
 * cuda_stub.c: the CUDA glue for builds without nvcc. Every entry answers "no CUDA" so the CPU
 * backend stays complete on its own.
 */
#include "core.h"

int rdx_cuda_built(void) { return 0; }
int rdx_cuda_device_count(void) { return 0; }
rdx_status rdx_cuda_context_init(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND,
                  "rdx_context_create: backend %s is not built (no CUDA compiler at configure time)",
                  rdx_backend_name(ctx->backend));
}
void rdx_cuda_context_fini(rdx_context *ctx) { (void)ctx; }
rdx_status rdx_cuda_malloc(rdx_context *ctx, void **ptr, size_t bytes, int pinned) {
  (void)ctx, (void)bytes, (void)pinned;
  *ptr = NULL;
  return RDX_ERR_NO_BACKEND;
}
void rdx_cuda_free(rdx_context *ctx, void *ptr, int pinned) { (void)ctx, (void)ptr, (void)pinned; }
void rdx_cuda_device_sync(void) {}
rdx_status rdx_cuda_memcpy(rdx_context *ctx, void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src, (void)bytes;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_copy: CUDA is not built");
}
rdx_status rdx_cuda_sync(rdx_context *ctx, const char *what) { (void)ctx, (void)what; return RDX_OK; }
rdx_status rdx_cuda_peek_start(rdx_context *ctx, const void *dev, size_t bytes, const char *what) {
  (void)dev, (void)bytes;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: CUDA is not built", what);
}
rdx_status rdx_cuda_peek_wait(rdx_context *ctx, void *host, size_t bytes, const char *what) {
  (void)host, (void)bytes;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: CUDA is not built", what);
}
rdx_status rdx_cuda_fork(rdx_context *ctx, void **stream, const char *what) {
  *stream = NULL;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: CUDA is not built", what);
}
rdx_status rdx_cuda_join(rdx_context *ctx, void *stream, const char *what) {
  (void)stream;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: CUDA is not built", what);
}
void rdx_cuda_trace_mark(rdx_context *ctx, const char *what) { (void)ctx, (void)what; }
void rdx_cuda_trace_flush(rdx_context *ctx) { (void)ctx; }
int rdx_cuda_is_device_pointer(const void *ptr) { (void)ptr; return 0; }
void rdx_cuda_info(rdx_info *info) { (void)info; }
