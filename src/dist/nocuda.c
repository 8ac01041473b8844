/*
 * nocuda.c: stands in for gpu.cu and points_gpu.cu when CUDA is not built: no context is a
 * GPU's, so the device path (builds and queries) is never taken and no copy between GPUs is ever
 * asked for; the benchmark's data made on the GPUs (rdx_dist_bench_*) answers RDX_ERR_NO_BACKEND.
 */
#include "dist/dist.h"

rdx_status rdx_dist_gpu_query(rdx_comm *comm, const char *fn, const rdx_index *shard, int hashed,
                              const uint64_t *splitters, int what, rdx_array in, rdx_array out) {
  (void)shard, (void)hashed, (void)splitters, (void)what, (void)in, (void)out;
  return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "%s: the device path needs CUDA, which is not built", fn);
}
rdx_status rdx_dist_gpu_build(rdx_comm *comm, const char *fn, rdx_array keys, rdx_array rows,
                              const int64_t *rank_counts, int hashed, uint64_t *splitters,
                              const rdx_build_options *opts, rdx_index **out) {
  (void)keys, (void)rows, (void)rank_counts, (void)hashed, (void)splitters, (void)opts, (void)out;
  return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "%s: the device path needs CUDA, which is not built", fn);
}
void rdx_dist_peers_enable(rdx_context *const *ctxs, int n, uint64_t *reach) {
  (void)ctxs;
  for (int i = 0; i < n; i++) reach[i] = 0;
}
rdx_status rdx_dist_peer_pull(rdx_context *ctx, const rdx_dist_part *parts, int n) {
  (void)parts, (void)n;
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "device all-to-all: CUDA is not built");
}
rdx_status rdx_dist_peer_wait(rdx_context *ctx) { (void)ctx; return RDX_OK; }
double rdx_dist_exchange_ms(const rdx_context *ctx) { return ctx->dist_exchange_ms; }
double rdx_dist_shard_ms(const rdx_context *ctx) { return ctx->dist_shard_ms; }
rdx_status rdx_dist_probe_exchange(rdx_comm *comm, int64_t bytes, double *ms) {
  (void)bytes, (void)ms;
  RDX_CHECK(rdx_comm_check(comm));
  int ok = 0;
  RDX_CHECK(comm->ops->allreduce_min_int(comm, &ok));
  return rdx_fail(comm->ctx, RDX_ERR_UNSUPPORTED, "rdx_dist_probe_exchange: needs CUDA, which is not built");
}
rdx_status rdx_dist_gpu_points_query(rdx_comm *comm, const char *fn, const rdx_dist_gpu_points *gp,
                                     const rdx_points_query *query, rdx_array in, rdx_result **out) {
  (void)gp, (void)query, (void)in, (void)out;
  return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "%s: the device path needs CUDA, which is not built", fn);
}
rdx_status rdx_dist_gpu_upload(rdx_context *ctx, const char *fn, const void *host, int64_t n, void **dev) {
  (void)host, (void)n, (void)dev;
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the device path needs CUDA, which is not built", fn);
}
rdx_status rdx_dist_bench_keys(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, uint64_t first, int64_t n,
                               void *keys, uint64_t row_base, uint64_t *rows) {
  (void)dtype, (void)seed, (void)first, (void)n, (void)keys, (void)row_base, (void)rows;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_dist_bench_keys: needs CUDA, which is not built");
}
rdx_status rdx_dist_bench_lookups(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, int64_t n_total, uint64_t first,
                                  int64_t m, void *queries) {
  (void)dtype, (void)seed, (void)n_total, (void)first, (void)m, (void)queries;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_dist_bench_lookups: needs CUDA, which is not built");
}
rdx_status rdx_dist_bench_check(rdx_context *ctx, uint64_t seed, int64_t n_total, uint64_t first, int64_t m,
                                const uint64_t *answers, uint64_t row_base, int64_t *wrong) {
  (void)seed, (void)n_total, (void)first, (void)m, (void)answers, (void)row_base, (void)wrong;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_dist_bench_check: needs CUDA, which is not built");
}
