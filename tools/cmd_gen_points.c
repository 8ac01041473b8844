/*
 * cmd_gen_points.c: `raydex gen points` and `raydex gen point-queries`: reproducible point sets
 * and spatial query batches as .npy files (src/io/gen_points.c; usage below, which `raydex gen
 * points --help` prints).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "io/io.h"

static rdx_dtype float_dtype(const char *s) {
  if (s == NULL || strcmp(s, "f64") == 0) return RDX_F64;
  if (strcmp(s, "f32") == 0) return RDX_F32;
  cli_die(CLI_EXIT_BAD_INPUT, "--dtype '%s' is not f32 or f64", s);
}

const char cli_gen_points_usage[] =
    "usage: raydex gen points --n N [--dist uniform|clustered|taxi] [--dtype f64|f32] [--seed S] --out P.npy\n"
    "       raydex gen point-queries --points P.npy --type match|window|within|knn --n M [--size S]\n"
    "                                [--seed S] --out Q.npy\n"
    "\n"
    "uniform and clustered points lie in [0, 1)^2; taxi points in an NYC-sized box in feet. --size is\n"
    "the window side or the radius, in the points' units (default 1% of the box's larger side).\n";

int cmd_gen_points(int argc, char **argv) {
  const char *what = argv[0];
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, cli_gen_points_usage);
  rdx_context *ctx = cli_context(RDX_BACKEND_CPU);
  const char *out_path = cli_opt(&a, "out");
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 42);
  int64_t n = cli_int(&a, "n", -1);
  rdx_array out;
  rdx_status st;
  if (strcmp(what, "points") == 0) {
    const char *dist_s = cli_opt(&a, "dist"), *dt = cli_opt(&a, "dtype");
    cli_args_done(&a);
    if (n < 0 || !out_path) cli_die(CLI_EXIT_BAD_INPUT, "gen points needs --n and --out");
    rdx_point_dist dist = RDX_PDIST_UNIFORM;
    if (dist_s && strcmp(dist_s, "clustered") == 0) dist = RDX_PDIST_CLUSTERED;
    else if (dist_s && strcmp(dist_s, "taxi") == 0) dist = RDX_PDIST_TAXI;
    else if (dist_s && strcmp(dist_s, "uniform") != 0)
      cli_die(CLI_EXIT_BAD_INPUT, "--dist '%s' is not uniform, clustered or taxi", dist_s);
    st = rdx_gen_points(ctx, n, dist, float_dtype(dt), seed, &out);
  } else {
    const char *pp = cli_opt(&a, "points"), *type_s = cli_opt(&a, "type");
    double size = cli_double(&a, "size", -1);
    cli_args_done(&a);
    if (!pp || !type_s || n < 0 || !out_path)
      cli_die(CLI_EXIT_BAD_INPUT, "gen point-queries needs --points, --type, --n and --out");
    static const char *const types[4] = {"match", "window", "within", "knn"};
    int type = -1;
    for (int i = 0; i < 4; i++)
      if (strcmp(type_s, types[i]) == 0) type = i;
    if (type < 0) cli_die(CLI_EXIT_BAD_INPUT, "--type '%s' is not match, window, within or knn", type_s);
    rdx_array p;
    int nd;
    st = rdx_npy_read(ctx, pp, &p, &nd);
    if (st != RDX_OK) cli_die_status(ctx, st, "--points");
    if (nd != 2 || p.columns != 2 || (p.dtype != RDX_F32 && p.dtype != RDX_F64))
      cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f32 or f64", pp);
    if (size < 0) { /* 1% of the larger side of the points' box */
      double b[4] = {0, 0, 0, 0};
      for (int64_t i = 0; i < p.count; i++)
        for (int c = 0; c < 2; c++) {
          double v = p.dtype == RDX_F64 ? ((double *)p.data)[2 * i + c] : ((float *)p.data)[2 * i + c];
          if (i == 0 || v < b[c]) b[c] = v;
          if (i == 0 || v > b[2 + c]) b[2 + c] = v;
        }
      double w = b[2] - b[0] > b[3] - b[1] ? b[2] - b[0] : b[3] - b[1];
      size = 0.01 * (w > 0 ? w : 1);
    }
    st = rdx_gen_point_queries(ctx, p, type, n, size, seed, &out);
    rdx_npy_free(&p);
  }
  if (st != RDX_OK) cli_die_status(ctx, st, what);
  st = rdx_npy_write(ctx, out_path, out, 2);
  if (st != RDX_OK) cli_die_status(ctx, st, "--out");
  rdx_npy_free(&out);
  cli_context_close(ctx);
  return 0;
}
