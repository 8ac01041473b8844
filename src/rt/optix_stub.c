/*
 * optix_stub.c: the OptiX entry points for builds without OptiX headers (the real ones live in
 * src/rt/optix/, compiled when CMake finds RAYDEX_OPTIX_DIR/include/optix.h). An OPTIX context
 * cannot be created in such a build, so the rest is never reached.
 */
#include "rt/rt.h"

#ifndef RDX_HAVE_OPTIX

int rdx_optix_built(void) { return 0; }
int rdx_optix_usable(void) { return 0; }

rdx_status rdx_optix_context_init(rdx_context *ctx) {
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND,
                  "rdx_context_create: backend optix is not built (no OptiX headers at configure time; "
                  "set RAYDEX_OPTIX_DIR)");
}
void rdx_optix_context_fini(rdx_context *ctx) { (void)ctx; }

rdx_status rdx_optix_gas_build(rdx_context *ctx, int kind, const float *prims, int64_t n,
                               rdx_optix_gas **out) {
  (void)kind, (void)prims, (void)n;
  *out = NULL;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_optix_gas_build: OptiX is not built");
}
void rdx_optix_gas_free(rdx_context *ctx, rdx_optix_gas *g) { (void)ctx, (void)g; }
int64_t rdx_optix_gas_bytes(const rdx_optix_gas *g) { (void)g; return 0; }
rdx_status rdx_optix_trace(rdx_context *ctx, const rdx_optix_gas *g, const rdx_ray *rays, int64_t n,
                           rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                           const uint64_t *offsets, uint32_t *ids) {
  (void)g, (void)rays, (void)n, (void)mode, (void)hits, (void)counts, (void)offsets, (void)ids;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_rt_trace: OptiX is not built");
}

rdx_status rdx_optix_launch(rdx_context *ctx, const rdx_optix_program *prog, const rdx_optix_gas *g,
                            void *params, size_t bytes, int64_t n) {
  (void)g, (void)params, (void)bytes, (void)n;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: OptiX is not built", prog->name);
}

#else
typedef int rdx_optix_stub_unused_; /* ISO C forbids an empty translation unit */
#endif
