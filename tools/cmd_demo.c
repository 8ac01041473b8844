/*
 * cmd_demo.c: `raydex demo`, the README's main job. It generates a key column on the spot,
 * builds every key index kind on the best backend present, runs batched point lookups (90%
 * hits, misses inside the key range) and range lookups, checks every answer against the
 * brute-force oracle, and prints a table of build time, throughput and bytes per key (usage
 * below, which `raydex demo --help` prints).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "io/io.h"
#include "keys_oracle.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static rdx_array prefix(rdx_array a, int64_t n) {
  if (a.count > n) a.count = n;
  return a;
}

static uint64_t at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

static const char usage[] =
    "usage: raydex demo [--backend auto] [--n 2^22] [--dtype u32] [--lookups 2^22] [--ranges 2^16]\n"
    "                   [--width 2^16] [--seed 7]\n"
    "\n"
    "The main job: generates n unique uniform keys, builds every key index kind on the backend\n"
    "(auto: the best one here), answers point lookups (90% hits, misses inside the key range) and\n"
    "range lookups of the given width, checks every answer against the brute-force oracle and\n"
    "prints build time, throughput and bytes per key. The scan kind reads the whole column per\n"
    "query, so it answers the first 2^10 queries only. Integers take 2^k and 1e6 forms.\n";

int cmd_demo(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  const char *b = cli_opt(&a, "backend");
  int64_t n = cli_int(&a, "n", (int64_t)1 << 22);
  const char *dt = cli_opt(&a, "dtype");
  int64_t m = cli_int(&a, "lookups", (int64_t)1 << 22);
  int64_t mr = cli_int(&a, "ranges", (int64_t)1 << 16);
  int64_t width = cli_int(&a, "width", (int64_t)1 << 16);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 7);
  cli_args_done(&a);
  if (n < 1 || m < 1 || mr < 1 || width < 1) cli_die(CLI_EXIT_BAD_INPUT, "--n, --lookups, --ranges and --width must be >= 1");
  rdx_dtype dtype = dt ? cli_dtype(dt) : RDX_U32;
  rdx_context *ctx = cli_context(cli_backend(b ? b : "auto"));
  rdx_info info;
  info.size = sizeof info;
  cli_must(ctx, rdx_info_get(&info), "info");
  int gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;

  rdx_array keys, q, r;
  double t0 = now_ms();
  cli_must(ctx, rdx_gen_keys(ctx, n, dtype, RDX_DIST_UNIFORM, 1.0, seed, &keys), "generate keys");
  cli_must(ctx, rdx_gen_lookups(ctx, keys, m, 0.9, RDX_MISS_INSIDE, 0.0, seed + 1, &q), "generate lookups");
  cli_must(ctx, rdx_gen_ranges(ctx, keys, mr, (uint64_t)width, seed + 2, &r), "generate ranges");
  keys_oracle o;
  if (!keys_oracle_build(&o, keys, rdx_no_array())) cli_die(CLI_EXIT_FAILURE, "out of memory");
  printf("raydex %s demo: %lld unique uniform %s keys, %lld point lookups (90%% hits), %lld ranges of width %lld\n",
         rdx_version_string(), (long long)n, cli_dtype_name(dtype), (long long)m, (long long)mr, (long long)width);
  printf("backend %s on %s (data generated in %.0f ms; every answer checked against the oracle)\n\n",
         rdx_backend_name(rdx_context_backend(ctx)), gpu ? info.gpu_name : info.cpu_name, now_ms() - t0);
  printf("%-7s %10s %16s %16s %14s %10s  %s\n", "kind", "build ms", "point lookups/s", "range lookups/s",
         "range rows/s", "bytes/key", "check");

  uint64_t *rows = (uint64_t *)malloc((size_t)m * 8);
  if (!rows) cli_die(CLI_EXIT_FAILURE, "out of memory");
  int failures = 0;
  static const rdx_kind kinds[] = {RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH, RDX_KIND_SCAN, RDX_KIND_RX, RDX_KIND_CGRX};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    rdx_index *idx = NULL;
    t0 = now_ms();
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    double build_ms = now_ms() - t0;
    if (st == RDX_ERR_UNSUPPORTED) continue; /* kind not built for this backend */
    cli_must(ctx, st, "build");
    int64_t resident = 0;
    cli_must(ctx, rdx_index_bytes(ctx, idx, &resident, NULL), "bytes");
    int64_t mq = kinds[k] == RDX_KIND_SCAN ? (m < 1024 ? m : 1024) : m;
    int64_t mrq = kinds[k] == RDX_KIND_SCAN ? (mr < 1024 ? mr : 1024) : mr;
    t0 = now_ms();
    cli_must(ctx, rdx_index_lookup(ctx, idx, prefix(q, mq), rdx_host_array(rows, mq, RDX_U64)), "lookup");
    double point_ms = now_ms() - t0;
    int ok = 1;
    for (int64_t i = 0; i < mq && ok; i++) ok = rows[i] == keys_oracle_lookup(&o, at(q, i));
    char range_s[32] = "-", rows_s[32] = "-";
    if (kinds[k] != RDX_KIND_HASH) {
      rdx_result *res = NULL;
      t0 = now_ms();
      cli_must(ctx, rdx_index_range_alloc(ctx, idx, prefix(r, mrq), &res), "range");
      double range_ms = now_ms() - t0;
      uint64_t *want = (uint64_t *)malloc(((size_t)width + 1) * 8);
      for (int64_t i = 0; i < mrq && ok && want; i++) {
        uint64_t lo = at(r, 2 * i), hi = at(r, 2 * i + 1), c = keys_oracle_count(&o, lo, hi);
        ok = res->offsets[i + 1] - res->offsets[i] == c;
        if (ok && c <= (uint64_t)width) {
          keys_oracle_rows(&o, lo, hi, want);
          ok = memcmp(want, res->row_ids + res->offsets[i], c * 8) == 0;
        }
      }
      ok = ok && want;
      free(want);
      snprintf(range_s, sizeof range_s, "%.3g", (double)mrq / (range_ms / 1e3));
      snprintf(rows_s, sizeof rows_s, "%.3g", (double)res->total / (range_ms / 1e3));
      rdx_result_free(ctx, res);
    } else {
      /* ranges must be refused with a sentence, not answered wrongly */
      rdx_result *res = NULL;
      ok = ok && rdx_index_range_alloc(ctx, idx, prefix(r, 1), &res) == RDX_ERR_UNSUPPORTED;
    }
    char point_s[32];
    snprintf(point_s, sizeof point_s, "%.3g", (double)mq / (point_ms / 1e3));
    printf("%-7s %10.1f %16s %16s %14s %10.2f  %s%s\n", rdx_kind_name(kinds[k]), build_ms, point_s, range_s, rows_s,
           (double)resident / (double)n, ok ? "ok" : "WRONG", mq < m ? " (first 1024 queries)" : "");
    fflush(stdout);
    failures += !ok;
    rdx_index_destroy(idx);
  }
  printf("\nTimes are wall-clock from host arrays, so GPU rows include the transfers; `raydex bench keys` "
         "measures device-resident batches.\n");
  free(rows);
  keys_oracle_free(&o);
  rdx_npy_free(&keys);
  rdx_npy_free(&q);
  rdx_npy_free(&r);
  cli_context_close(ctx);
  if (failures) cli_die(CLI_EXIT_FAILURE, "%d kind(s) gave wrong answers", failures);
  return 0;
}
