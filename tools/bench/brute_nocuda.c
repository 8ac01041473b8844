/*
 * brute_nocuda.c: the brute-force GPU baselines (brute.cu) in a raydex program built without
 * CUDA. `raydex bench points --engine brute` refuses a CPU backend first, so these are never
 * reached; they fail if they ever are.
 */
#include "cli.h"

rdx_status bench_brute_count(rdx_context *ctx, const void *xy, int f64, int64_t n, int type, const void *q, int64_t m,
                             uint64_t *counts) {
  (void)ctx, (void)xy, (void)f64, (void)n, (void)type, (void)q, (void)m, (void)counts;
  return RDX_ERR_NO_BACKEND;
}
rdx_status bench_brute_knn(rdx_context *ctx, const void *xy, int f64, int64_t n, const void *q, int64_t m, int k,
                           uint64_t *rows) {
  (void)ctx, (void)xy, (void)f64, (void)n, (void)q, (void)m, (void)k, (void)rows;
  return RDX_ERR_NO_BACKEND;
}
