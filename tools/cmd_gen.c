/*
 * cmd_gen.c: `raydex gen keys|lookups|ranges`: reproducible data sets as .npy files (usage
 * below, which `raydex gen --help` prints with that of `gen points|point-queries`).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

static const char usage_keys[] =
    "usage: raydex gen keys --n N [--dtype u32|u64] [--dist dense|sparse|uniform] [--uniformity PCT]\n"
    "                       [--seed S] --out K.npy [--quiet]\n"
    "       raydex gen lookups --keys K.npy --n M [--hit-ratio H] [--miss inside|outside] [--zipf Z]\n"
    "                          [--seed S] --out Q.npy [--quiet]\n"
    "       raydex gen ranges --keys K.npy --n M [--width W] [--seed S] --out LOHI.npy [--quiet]\n"
    "\n"
    "keys: n distinct keys in random order (default u32, uniform; dense: 0..n-1; uniform: over the\n"
    "dtype's whole range; sparse, cgRX's uniformity: (100 - PCT)% of them dense from 0, PCT% uniform\n"
    "above, PCT in [0, 100] and required). lookups: m queries, each a hit with probability H (default\n"
    "1), picking a key by Zipf(Z) over key positions (Z in [0, 100], default 0: uniform), else a miss\n"
    "inside (default) or outside the key range. ranges: (m, 2) bounds [lo, lo + W - 1] (W default 1)\n"
    "with lo a key picked uniformly. The same seed (default 42) gives the same file. On success one\n"
    "line on stderr says what was written (--quiet: none).\n";

static const char *const what_names[] = {"keys", "lookups", "ranges", "points", "point-queries", "polygons"};

static rdx_array read_keys(rdx_context *ctx, const char *path) {
  int ndim;
  rdx_array k = cli_read_npy(ctx, "keys", path, &ndim);
  if (ndim != 1 || (k.dtype != RDX_U32 && k.dtype != RDX_U64))
    cli_die(CLI_EXIT_BAD_INPUT, "--keys %s must be 1-D u32 or u64 (it is %d-D %s)", path, ndim, cli_dtype_name(k.dtype));
  return k;
}

int cmd_gen(int argc, char **argv) {
  if (argc >= 1 && cli_is_help(argv[0])) {
    static char both[sizeof usage_keys + 4096];
    snprintf(both, sizeof both, "%s\n%s\n%s", usage_keys, cli_gen_points_usage, cli_gen_polygons_usage);
    cli_usage(both, 0);
  }
  if (argc < 1) cli_die(CLI_EXIT_BAD_INPUT, "what to generate: keys, lookups, ranges, points, point-queries or polygons");
  int what = -1;
  for (int i = 0; i < 6; i++)
    if (strcmp(argv[0], what_names[i]) == 0) what = i;
  if (what < 0)
    cli_die(CLI_EXIT_BAD_INPUT, "cannot generate '%s' (keys, lookups, ranges, points, point-queries or polygons)", argv[0]);
  static char name[40];
  snprintf(name, sizeof name, "raydex gen %s", what_names[what]);
  cli_set_command(name);
  if (what == 5) return cmd_gen_polygons(argc, argv);
  if (what >= 3) return cmd_gen_points(argc, argv);
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, usage_keys);
  int64_t keys_bytes = 0;
  const char *keys_p = what == 0 ? NULL : cli_input(&a, "keys", 1, &keys_bytes);
  const char *out_p = cli_output(&a, "out", 1);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 42);
  rdx_dtype dtype = cli_choice(&a, "dtype", cli_key_dtypes, 2, 0) ? RDX_U64 : RDX_U32;
  rdx_key_dist dist = (rdx_key_dist)(cli_choice(&a, "dist", cli_key_dists, 3, RDX_DIST_UNIFORM - 1) + 1);
  double uni = cli_double(&a, "uniformity", 0, 100, -1);
  double hit = cli_double(&a, "hit-ratio", 0, 1, 1.0);
  rdx_miss_kind miss = cli_choice(&a, "miss", cli_misses, 2, 0) ? RDX_MISS_OUTSIDE : RDX_MISS_INSIDE;
  double zipf = cli_double(&a, "zipf", 0, 100, 0.0);
  int64_t width = cli_int(&a, "width", 1, INT64_MAX, 1);
  /* u32 keys are distinct, so at most 2^32 of them */
  int64_t n = cli_int(&a, "n", 0, what == 0 && dtype == RDX_U32 ? (int64_t)UINT32_MAX + 1 : INT64_MAX, -1);
  if (n < 0) cli_die(CLI_EXIT_BAD_INPUT, "--n is required");
  cli_applies(&a, "dtype", what == 0, "gen keys (lookups and ranges take the keys' dtype)");
  cli_applies(&a, "dist", what == 0, "gen keys");
  cli_applies(&a, "uniformity", what == 0 && dist == RDX_DIST_SPARSE, "gen keys --dist sparse");
  if (what == 0 && dist == RDX_DIST_SPARSE && uni < 0) cli_die(CLI_EXIT_BAD_INPUT, "--dist sparse needs --uniformity PCT");
  cli_applies(&a, "hit-ratio", what == 1, "gen lookups");
  cli_applies(&a, "miss", what == 1 && hit < 1, "gen lookups with --hit-ratio below 1");
  cli_applies(&a, "zipf", what == 1 && hit > 0, "gen lookups with --hit-ratio above 0");
  cli_applies(&a, "width", what == 2, "gen ranges");
  /* the generator's peak (io.h), sized for u64 keys until the keys' file is read, and the keys */
  size_t peak = 0;
  rdx_status st = what == 0   ? rdx_gen_keys_bytes(NULL, n, dtype, &peak)
                  : what == 1 ? rdx_gen_lookups_bytes(NULL, keys_bytes / 8, RDX_U64, n, hit, miss, &peak)
                              : rdx_gen_ranges_bytes(NULL, RDX_U64, n, &peak);
  cli_need_memory(&a, "n", st == RDX_OK ? (double)peak + (double)keys_bytes : HUGE_VAL);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(RDX_BACKEND_CPU);
  rdx_array k = keys_p ? read_keys(ctx, keys_p) : rdx_no_array(), out;
  cli_progress("generating %lld %s", (long long)n, what_names[what]);
  double t0 = rdx_now_ms();
  if (what == 0) cli_must(ctx, rdx_gen_keys(ctx, n, dtype, dist, uni < 0 ? 1.0 : uni / 100.0, seed, &out), "keys");
  else if (what == 1) cli_must(ctx, rdx_gen_lookups(ctx, k, n, hit, miss, zipf, seed, &out), "lookups");
  else cli_must(ctx, rdx_gen_ranges(ctx, k, n, (uint64_t)width, seed, &out), "ranges");
  double ms = rdx_now_ms() - t0;
  cli_write_npy(ctx, "out", out, what == 2 ? 2 : 1);
  cli_commit_outputs();
  char size_s[32], how[64];
  if (what == 0 && dist == RDX_DIST_SPARSE) snprintf(how, sizeof how, "sparse, uniformity %g%%", uni);
  if (what == 0 && dist != RDX_DIST_SPARSE) snprintf(how, sizeof how, "%s", cli_key_dists[dist - 1]);
  if (what == 1) snprintf(how, sizeof how, "hit ratio %g, zipf %g", hit, zipf);
  if (what == 2) snprintf(how, sizeof how, "width %lld", (long long)width);
  cli_report("wrote %s: %lld %s %s (%s), %s, %.1f ms", out_p, (long long)n, cli_dtype_name(out.dtype), what_names[what], how,
             cli_bytes(size_s, (double)n * (what == 2 ? 2 : 1) * (double)rdx_dtype_size(out.dtype)), ms);
  rdx_npy_free(&k);
  rdx_npy_free(&out);
  cli_context_close(ctx);
  return 0;
}
