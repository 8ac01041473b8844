/*
 * cmd_convert.c: `raydex convert`: a polygon layer from any file rdx_polygons_load reads (GDAL's
 * vector formats in a build with GDAL, and .rdxp) to raydex's binary layer format, validated and
 * normalized on the way, so the GPU machine (which has no GDAL) and later runs load it fast.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "bench_api.h"

static const char usage[] =
    "usage: raydex convert --in LAYER --out LAYER.rdxp [--layer NAME] [--drop-degenerate] [--backend B]\n"
    "                      [--quiet]\n"
    "\n"
    "Reads a polygon layer and writes it in raydex's binary format (.rdxp), which rdx_polygons_load\n"
    "and every raydex command read without GDAL. LAYER is .rdxp, or, in a build with GDAL (raydex info\n"
    "says), any vector file or dataset GDAL reads: GeoJSON, TopoJSON, Shapefile, GeoPackage,\n"
    "FlatGeobuf, WKT in CSV, ... (a directory or a /vsizip/ path too). --layer NAME picks a layer of\n"
    "a dataset that holds several (us-atlas's counties-10m.json: counties, states, nation); without it\n"
    "the first layer is read. Features keep the file's order, so feature i of the output is the i-th\n"
    "feature read. Each must be a Polygon or MultiPolygon (one GDAL reads as empty or absent is kept\n"
    "as a feature without rings, counted on the success line); rings are closed for you, repeated\n"
    "vertices merged, and a ring with fewer than 3 distinct vertices or a NaN, infinite or\n"
    "out-of-range coordinate is refused (exit 2) naming feature, ring and vertex: nothing is dropped,\n"
    "unless --drop-degenerate drops rings of fewer than 3 distinct vertices (islands a quantized map\n"
    "collapsed to a point or a segment; world-atlas's countries-110m has one), counted and the first\n"
    "named on the success line.\n"
    "--backend (auto, cpu, cuda, optix; default cpu) picks the context that validates the layer.\n"
    "The output is written to a temporary beside it and renamed, so a failed run leaves an existing\n"
    "file untouched. On success one line on stderr gives the features, rings and vertices written\n"
    "(--quiet: none).\n";

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

int cmd_convert(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  /* a GDAL dataset may be a directory (shapefiles) or a virtual path; a file is checked as inputs are */
  const char *in = cli_opt(&a, "in");
  struct stat is;
  if (in == NULL) cli_die(CLI_EXIT_BAD_INPUT, "--in is required");
  if (strncmp(in, "/vsi", 4) != 0 && !(stat(in, &is) == 0 && S_ISDIR(is.st_mode))) in = cli_input(&a, "in", 1, NULL);
  const char *out = cli_output(&a, "out", 1);
  if (!ends_with(out, ".rdxp")) cli_die(CLI_EXIT_BAD_INPUT, "--out %s must end in .rdxp (raydex writes no other layer format)", out);
  const char *layer = cli_opt(&a, "layer");
  if (layer != NULL && *layer == '\0') cli_die(CLI_EXIT_BAD_INPUT, "--layer '' names no layer");
  int drop = cli_flag(&a, "drop-degenerate");
  const char *bname = cli_opt(&a, "backend");
  rdx_backend backend = bname ? cli_parse_backend("backend", bname) : RDX_BACKEND_CPU;
  cli_args_done(&a);

  rdx_context *ctx = cli_context(backend);
  rdx_info info;
  info.size = sizeof info;
  cli_must(ctx, rdx_info_get(&info), "rdx_info_get");
  if (!info.have_gdal && !ends_with(in, ".rdxp")) {
    /* say why before GDAL's absence turns into a load error on a file that may be fine */
    FILE *f = fopen(in, "rb");
    char magic[7] = {0};
    size_t n = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f) fclose(f);
    if (n != sizeof magic || memcmp(magic, "RDXPOLY", sizeof magic) != 0)
      cli_die(CLI_EXIT_BAD_INPUT, "--in %s: this raydex was built without GDAL, so it reads .rdxp layers only", in);
  }
  cli_progress("reading %s", in);
  rdx_polygons *p = NULL;
  int64_t dropped = 0;
  char first[128] = "";
  rdx_status st = drop ? rdx_polygons_load_dropping(ctx, in, layer, &p, &dropped, first, sizeof first)
                       : rdx_polygons_load(ctx, in, layer, &p);
  /* with a layer name, the only argument a load refuses is that name */
  cli_must(ctx, st, layer != NULL && st == RDX_ERR_INVALID_ARGUMENT ? "--layer" : "--in");
  rdx_polygons_info pi;
  pi.size = sizeof pi;
  cli_must(ctx, rdx_polygons_describe(ctx, p, &pi), "rdx_polygons_describe");
  cli_progress("writing %s", out);
  st = rdx_polygons_save(ctx, p, out);
  rdx_polygons_destroy(p);
  cli_must(ctx, st, "--out");
  cli_commit_outputs();
  char empty[64] = "";
  if (pi.n_empty) snprintf(empty, sizeof empty, " (%lld empty: no rings)", (long long)pi.n_empty);
  char gone[192] = "";
  if (dropped)
    snprintf(gone, sizeof gone, "; dropped %lld degenerate ring%s (the first: %s)", (long long)dropped,
             dropped > 1 ? "s" : "", first);
  cli_report("%s: %lld features%s, %lld rings, %lld vertices (%s) to %s%s", in, (long long)pi.n_features, empty,
             (long long)pi.n_rings, (long long)pi.n_vertices, cli_dtype_name(pi.dtype), out, gone);
  return 0;
}
