/*
 * cmd_gen_polygons.c: `raydex gen polygons`: reproducible synthetic polygon layers as .rdxp files
 * (src/io/gen_polygons.c), for the join benchmarks' 10^6 to 5 x 10^7 segments.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

const char cli_gen_polygons_usage[] =
    "usage: raydex gen polygons --kind grid|random --n N [--vertices V] [--seed S] --out L.rdxp [--quiet]\n"
    "\n"
    "N features of one ring each, written as a .rdxp layer. grid: a planar subdivision of N quads\n"
    "(ceil(sqrt(N)) per row, about 1 x 1 each) whose corners are moved at random so that no edge is\n"
    "axis-aligned and neighbours share their edges exactly: 4N segments. random: N simple\n"
    "star-shaped polygons of V vertices (3..1024, default 8), about one per unit area, overlapping\n"
    "freely (not a planar subdivision): N x V segments. A layer holds at most 2^32 - 2 vertices. The\n"
    "same seed (default 42) gives the same file on every machine.\n";

int cmd_gen_polygons(int argc, char **argv) {
  static const char *const kinds[] = {"grid", "random"};
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, cli_gen_polygons_usage);
  const char *out_p = cli_output(&a, "out", 1);
  size_t len = strlen(out_p);
  if (len < 5 || strcmp(out_p + len - 5, ".rdxp") != 0)
    cli_die(CLI_EXIT_BAD_INPUT, "--out %s must end in .rdxp (gen polygons writes raydex's layer format)", out_p);
  int kind = cli_choice(&a, "kind", kinds, 2, -1);
  if (kind < 0) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required (grid or random)");
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 42);
  int64_t vertices = cli_int(&a, "vertices", 3, RDX_PGEN_MAX_VERTICES, kind == 0 ? 4 : 8);
  cli_applies(&a, "vertices", kind == 1, "gen polygons --kind random (a grid's cells have 4)");
  int64_t n = cli_int(&a, "n", 0, (int64_t)(0xFFFFFFFEull / (uint64_t)vertices), -1);
  if (n < 0) cli_die(CLI_EXIT_BAD_INPUT, "--n is required");
  size_t gen = 0;
  rdx_polygon_kind k = kind == 0 ? RDX_PGEN_GRID : RDX_PGEN_RANDOM;
  rdx_status st = rdx_gen_polygons_bytes(NULL, k, n, (int)vertices, &gen);
  /* the generator's arrays, then the layer made from them: 16 + 8 bytes per vertex and scratch */
  cli_need_memory(&a, "n", st == RDX_OK ? (double)gen + 32.0 * (double)n * (double)vertices : 1e300);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(RDX_BACKEND_CPU);
  cli_progress("generating %lld %s polygons", (long long)n, kinds[kind]);
  double t0 = rdx_now_ms();
  rdx_array fo, ro, xy;
  cli_must(ctx, rdx_gen_polygons(ctx, k, n, (int)vertices, seed, &fo, &ro, &xy), "polygons");
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = fo, in.ring_offsets = ro, in.coords = xy;
  rdx_polygons *p = NULL;
  cli_progress("validating %lld vertices", (long long)xy.count);
  st = rdx_polygons_create(ctx, &in, &p);
  rdx_npy_free(&fo);
  rdx_npy_free(&ro);
  rdx_npy_free(&xy);
  cli_must(ctx, st, "polygons");
  cli_progress("writing %s", out_p);
  st = rdx_polygons_save(ctx, p, out_p);
  rdx_polygons_destroy(p);
  cli_must(ctx, st, "--out");
  cli_commit_outputs();
  cli_report("wrote %s: %lld %s polygons, %lld segments%s, %.1f ms", out_p, (long long)n, kinds[kind],
             (long long)(n * vertices), kind == 0 ? " (a planar subdivision)" : "", rdx_now_ms() - t0);
  cli_context_close(ctx);
  return 0;
}
