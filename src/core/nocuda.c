/*
 * nocuda.c: the CUDA glue for builds without nvcc. Every entry answers "no CUDA" so the CPU
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
void rdx_cuda_device_sync(rdx_context *ctx) { (void)ctx; }
void rdx_cuda_make_current(rdx_context *ctx) { (void)ctx; }
rdx_status rdx_cuda_memcpy(rdx_context *ctx, void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src, (void)bytes;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_copy: CUDA is not built");
}
void rdx_staging_init(rdx_context *ctx, size_t bytes) { (void)ctx, (void)bytes; }
rdx_status rdx_context_wait_stream(rdx_context *ctx, void *stream) {
  (void)stream;
  return rdx_check_context(ctx); /* nothing runs on a stream */
}
void rdx_staging_fini(rdx_context *ctx) { (void)ctx; }
void rdx_staging_force(rdx_context *ctx, int mode) { ctx->force.staging = mode; }
size_t rdx_staging_bytes(const rdx_context *ctx) { (void)ctx; return 0; }
int64_t rdx_staged_map_chunk(const rdx_context *ctx, int64_t n, size_t in_item, size_t out_item) {
  (void)ctx, (void)n, (void)in_item, (void)out_item;
  return 0;
}
rdx_status rdx_staged_map(rdx_context *ctx, const char *what, const void *in, size_t in_item, void *out,
                          size_t out_item, int64_t n, rdx_chunk_fn work, void *arg) {
  (void)in, (void)in_item, (void)out, (void)out_item, (void)n, (void)work, (void)arg;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: CUDA is not built", what);
}
rdx_status rdx_cuda_sync(rdx_context *ctx, const char *what) { (void)ctx, (void)what; return RDX_OK; }
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

/* csr.c's GPU halves */
static rdx_status no_cuda(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "csr: the cuda backend is not built");
}
rdx_status rdx_csr_scan_cuda(rdx_context *ctx, const uint64_t *counts, int64_t n, uint64_t *offsets, uint64_t *total) {
  (void)counts, (void)n, (void)offsets, (void)total;
  return no_cuda(ctx);
}
rdx_status rdx_csr_sort_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows) {
  (void)offsets, (void)n, (void)rows;
  return no_cuda(ctx);
}
rdx_status rdx_fill_u64_cuda(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones) {
  (void)p, (void)n, (void)all_ones;
  return no_cuda(ctx);
}
rdx_status rdx_find_u64_cuda(rdx_context *ctx, const uint64_t *p, int64_t n, uint64_t value, int64_t *first) {
  (void)p, (void)n, (void)value, (void)first;
  return no_cuda(ctx);
}
rdx_status rdx_offsets_check_cuda(rdx_context *ctx, const char *fn, const uint64_t *offsets, const uint64_t *counts,
                                  int64_t n, int64_t *first) {
  (void)fn, (void)offsets, (void)counts, (void)n, (void)first;
  return no_cuda(ctx);
}
