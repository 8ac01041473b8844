/*
 * cmd_gen_points.c: `raydex gen points` and `raydex gen point-queries`: reproducible point sets
 * and spatial query batches as .npy files (src/io/gen_points.c; usage below, which `raydex gen
 * points --help` prints).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

const char cli_gen_points_usage[] =
    "usage: raydex gen points --n N [--dist uniform|clustered|taxi] [--dtype f64|f32] [--seed S] --out P.npy\n"
    "                         [--quiet]\n"
    "       raydex gen point-queries --points P.npy --type match|window|within|knn --n M [--size S]\n"
    "                                [--seed S] --out Q.npy [--quiet]\n"
    "\n"
    "uniform (the default) and clustered points lie in [0, 1)^2; taxi points in an NYC-sized box in\n"
    "feet; f64 by default. Queries take the points' dtype. --size (window and within only) is the\n"
    "window side or the radius, in the points' units (default 1% of the box's larger side). The same\n"
    "seed (default 42) gives the same file.\n";


/* 1% of the larger side of the points' bounding box (1% of 1 for an empty or single point). */
static double default_size(rdx_array p) {
  double b[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < p.count; i++)
    for (int c = 0; c < 2; c++) {
      double v = p.dtype == RDX_F64 ? ((const double *)p.data)[2 * i + c] : ((const float *)p.data)[2 * i + c];
      if (i == 0 || v < b[c]) b[c] = v;
      if (i == 0 || v > b[2 + c]) b[2 + c] = v;
    }
  double w = b[2] - b[0] > b[3] - b[1] ? b[2] - b[0] : b[3] - b[1];
  return 0.01 * (w > 0 ? w : 1);
}

int cmd_gen_points(int argc, char **argv) {
  int queries = strcmp(argv[0], "point-queries") == 0;
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, cli_gen_points_usage);
  int64_t points_bytes = 0;
  const char *points_p = queries ? cli_input(&a, "points", 1, &points_bytes) : NULL;
  const char *out_p = cli_output(&a, "out", 1);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 42);
  int64_t n = cli_int(&a, "n", 0, INT64_MAX, -1);
  if (n < 0) cli_die(CLI_EXIT_BAD_INPUT, "--n is required");
  rdx_point_dist dist = (rdx_point_dist)(cli_choice(&a, "dist", cli_point_dists, 3, 0) + 1);
  rdx_dtype dtype = cli_choice(&a, "dtype", cli_point_dtypes, 2, 0) ? RDX_F32 : RDX_F64;
  int type = cli_choice(&a, "type", cli_query_types, 4, -1);
  if (queries && type < 0) cli_die(CLI_EXIT_BAD_INPUT, "--type is required (match, window, within or knn)");
  double size = cli_double(&a, "size", 0, HUGE_VAL, -1);
  cli_applies(&a, "dist", !queries, "gen points");
  cli_applies(&a, "dtype", !queries, "gen points (queries take the points' dtype)");
  cli_applies(&a, "type", queries, "gen point-queries");
  cli_applies(&a, "size", queries && (type == 1 || type == 2), "gen point-queries --type window or within");
  /* the generator's peak (io.h), sized for f64 points until the points' file is read, and the
   * points */
  size_t peak = 0;
  rdx_status st = queries ? rdx_gen_point_queries_bytes(NULL, RDX_F64, type, n, &peak) : rdx_gen_points_bytes(NULL, n, dtype, &peak);
  cli_need_memory(&a, "n", st == RDX_OK ? (double)peak + (double)points_bytes : HUGE_VAL);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(RDX_BACKEND_CPU);
  rdx_array p = rdx_no_array(), out;
  if (queries) {
    int nd;
    p = cli_read_npy(ctx, "points", points_p, &nd);
    if (nd != 2 || p.columns != 2 || (p.dtype != RDX_F32 && p.dtype != RDX_F64))
      cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f32 or f64 (it is %d-D with %d columns, %s)", points_p, nd,
              p.columns, cli_dtype_name(p.dtype));
    if (size < 0) size = default_size(p);
  }
  cli_progress("generating %lld %s", (long long)n, queries ? "queries" : "points");
  double t0 = rdx_now_ms();
  if (queries) cli_must(ctx, rdx_gen_point_queries(ctx, p, type, n, size, seed, &out), "point-queries");
  else cli_must(ctx, rdx_gen_points(ctx, n, dist, dtype, seed, &out), "points");
  double ms = rdx_now_ms() - t0;
  cli_write_npy(ctx, "out", out, 2);
  cli_commit_outputs();
  char size_s[32], how[64];
  if (queries && (type == 1 || type == 2)) snprintf(how, sizeof how, "%s, size %g", cli_query_types[type], size);
  else snprintf(how, sizeof how, "%s", queries ? cli_query_types[type] : cli_point_dists[dist - 1]);
  cli_report("wrote %s: %lld %s %s (%s), %s, %.1f ms", out_p, (long long)n, cli_dtype_name(out.dtype),
             queries ? "queries" : "points", how, cli_bytes(size_s, (double)out.count * out.columns * (double)rdx_dtype_size(out.dtype)), ms);
  rdx_npy_free(&p);
  rdx_npy_free(&out);
  cli_context_close(ctx);
  return 0;
}
