/*
 * optix_stub.c: the keys module's OptiX queries for builds without OptiX headers (the real ones
 * are src/keys/optix/rx_cgrx.cu). An OPTIX context cannot be created in such a build, so these
 * are never reached; they fail loudly if they ever are.
 */
#include "keys/cgrx.h"
#include "keys/rx.h"

#ifndef RDX_HAVE_OPTIX

rdx_status rdx_rx_optix_query(rdx_context *ctx, const rdx_rx_impl *x, rdx_dtype dt, int op, const void *q, int64_t n,
                              uint64_t *out, uint64_t *rows) {
  (void)x, (void)dt, (void)op, (void)q, (void)n, (void)out, (void)rows;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rx: OptiX is not built");
}
rdx_status rdx_cgrx_optix_query(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, int op, const void *q,
                                int64_t n, uint64_t *out, const uint64_t *offsets, rdx_cgrx_span *spans, int *broken) {
  (void)x, (void)dt, (void)op, (void)q, (void)n, (void)out, (void)offsets, (void)spans, (void)broken;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "cgrx: OptiX is not built");
}
rdx_status rdx_cgrx_optix_locate(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, const void *q, int64_t n,
                                 int64_t *buckets, int *broken) {
  (void)x, (void)dt, (void)q, (void)n, (void)buckets, (void)broken;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "cgrxu: OptiX is not built");
}

#else
typedef int rdx_keys_optix_stub_unused_; /* ISO C forbids an empty translation unit */
#endif
