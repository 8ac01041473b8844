/*
 * cmd_gen.c: `raydex gen keys|lookups|ranges`: reproducible data sets as .npy files (usage
 * below, which `raydex gen --help` prints with that of `gen points|point-queries`).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "io/io.h"

static rdx_array read_keys(rdx_context *ctx, const char *path) {
  rdx_array k;
  int ndim;
  rdx_status st = rdx_npy_read(ctx, path, &k, &ndim);
  if (st != RDX_OK) cli_die_status(ctx, st, "--keys");
  if (ndim != 1 || (k.dtype != RDX_U32 && k.dtype != RDX_U64))
    cli_die(CLI_EXIT_BAD_INPUT, "--keys %s must be 1-D u32 or u64", path);
  return k;
}

static const char usage_keys[] =
    "usage: raydex gen keys --n N [--dtype u32|u64] [--dist dense|sparse|uniform] [--uniformity PCT]\n"
    "                       [--seed S] --out K.npy\n"
    "       raydex gen lookups --keys K.npy --n M [--hit-ratio H] [--miss inside|outside] [--zipf Z]\n"
    "                          [--seed S] --out Q.npy\n"
    "       raydex gen ranges --keys K.npy --n M --width W [--seed S] --out LOHI.npy\n"
    "\n"
    "keys: n distinct keys in random order (dense: 0..n-1; uniform: over the dtype's whole range;\n"
    "sparse, cgRX's uniformity: (100 - PCT)% of them dense from 0, PCT% uniform above). lookups: m\n"
    "queries, each a hit with probability H (default 1), picking a key by Zipf(Z) over key positions\n"
    "(0: uniform), else a miss inside or outside the key range. ranges: (m, 2) bounds [lo, lo + W - 1]\n"
    "with lo a key picked uniformly. The same seed gives the same file.\n";

int cmd_gen(int argc, char **argv) {
  if (argc >= 1 && cli_is_help(argv[0])) {
    printf("%s\n%s", usage_keys, cli_gen_points_usage);
    return 0;
  }
  if (argc < 1) cli_die(CLI_EXIT_BAD_INPUT, "what to generate: keys, lookups, ranges, points or point-queries");
  if (strcmp(argv[0], "points") == 0 || strcmp(argv[0], "point-queries") == 0) return cmd_gen_points(argc, argv);
  const char *what = argv[0];
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, usage_keys);
  rdx_context *ctx = cli_context(RDX_BACKEND_CPU);
  const char *out_path = cli_opt(&a, "out");
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 42);
  rdx_array out;
  rdx_status st;
  if (strcmp(what, "keys") == 0) {
    int64_t n = cli_int(&a, "n", -1);
    const char *dt = cli_opt(&a, "dtype");
    const char *dist_s = cli_opt(&a, "dist");
    double uni = cli_double(&a, "uniformity", -1);
    cli_args_done(&a);
    if (n < 0 || !out_path) cli_die(CLI_EXIT_BAD_INPUT, "gen keys needs --n and --out");
    rdx_key_dist dist = RDX_DIST_UNIFORM;
    if (dist_s && strcmp(dist_s, "dense") == 0) dist = RDX_DIST_DENSE;
    else if (dist_s && strcmp(dist_s, "sparse") == 0) dist = RDX_DIST_SPARSE;
    else if (dist_s && strcmp(dist_s, "uniform") != 0)
      cli_die(CLI_EXIT_BAD_INPUT, "--dist '%s' is not dense, sparse or uniform", dist_s);
    if (dist == RDX_DIST_SPARSE && uni < 0) cli_die(CLI_EXIT_BAD_INPUT, "--dist sparse needs --uniformity PCT");
    st = rdx_gen_keys(ctx, n, dt ? cli_dtype(dt) : RDX_U32, dist, uni < 0 ? 1.0 : uni / 100.0, seed, &out);
  } else if (strcmp(what, "lookups") == 0) {
    const char *kp = cli_opt(&a, "keys");
    int64_t m = cli_int(&a, "n", -1);
    double hit = cli_double(&a, "hit-ratio", 1.0);
    const char *miss = cli_opt(&a, "miss");
    double zipf = cli_double(&a, "zipf", 0.0);
    cli_args_done(&a);
    if (!kp || m < 0 || !out_path) cli_die(CLI_EXIT_BAD_INPUT, "gen lookups needs --keys, --n and --out");
    rdx_miss_kind mk = RDX_MISS_INSIDE;
    if (miss && strcmp(miss, "outside") == 0) mk = RDX_MISS_OUTSIDE;
    else if (miss && strcmp(miss, "inside") != 0) cli_die(CLI_EXIT_BAD_INPUT, "--miss '%s' is not inside or outside", miss);
    rdx_array k = read_keys(ctx, kp);
    st = rdx_gen_lookups(ctx, k, m, hit, mk, zipf, seed, &out);
    rdx_npy_free(&k);
  } else if (strcmp(what, "ranges") == 0) {
    const char *kp = cli_opt(&a, "keys");
    int64_t m = cli_int(&a, "n", -1);
    int64_t w = cli_int(&a, "width", 1);
    cli_args_done(&a);
    if (!kp || m < 0 || !out_path || w < 1) cli_die(CLI_EXIT_BAD_INPUT, "gen ranges needs --keys, --n, --width >= 1 and --out");
    rdx_array k = read_keys(ctx, kp);
    st = rdx_gen_ranges(ctx, k, m, (uint64_t)w, seed, &out);
    rdx_npy_free(&k);
  } else {
    cli_die(CLI_EXIT_BAD_INPUT, "cannot generate '%s' (keys, lookups, ranges, points or point-queries)", what);
  }
  if (st != RDX_OK) cli_die_status(ctx, st, what);
  st = rdx_npy_write(ctx, out_path, out, out.columns == 1 ? 1 : 2);
  if (st != RDX_OK) cli_die_status(ctx, st, "--out");
  rdx_npy_free(&out);
  cli_context_close(ctx);
  return 0;
}
