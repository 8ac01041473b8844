/*
 * cmd_points.c: `raydex points`, the stable command-line contract for spatial point indexes
 * (usage below, which `raydex points --help` prints).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: raydex points --index {quadtree,kdtree} [--build {bottomup,topdown}] [--backend {auto,cpu,cuda}]\n"
    "                     --points P.npy (--match Q.npy | --window W.npy | --within C.npy | --knn Q.npy --k K)\n"
    "                     --out OUT.npy --counts-out CNT.npy [--leaf-capacity N] [--max-depth D]\n"
    "                     [--box XMIN,YMIN,XMAX,YMAX]\n"
    "\n"
    "Builds a spatial point index over P and answers one batch of queries. Defaults: a bottom-up\n"
    "build, leaf capacity 256, depth 16 (quadtree) or 48 (k-d tree), the best backend here.\n"
    "P: (n, 2) f64 or f32. Q: (m, 2), W: (m, 4) xmin, ymin, xmax, ymax, C: (m, 3) x, y, r, all in\n"
    "P's dtype. OUT: u64 row numbers of P grouped by query in query order, ascending within a query\n"
    "except kNN (ascending distance, ties by row number); CNT: u64 count per query. Windows and\n"
    "circles include their boundary; kNN is exact, k up to 1024. --box fixes the index space (points\n"
    "outside it are bad input); without it the box is P's bounding box.\n"
    "Exit 0 on success, 2 with one line on stderr for bad input (NaN or infinite coordinates, wrong\n"
    "shapes or dtypes, negative radius, k outside 1..1024, points outside --box, bad options).\n";

static const char *dtype_name(rdx_dtype d) { return d == RDX_F32 ? "f32" : d == RDX_F64 ? "f64" : cli_dtype_name(d); }

int cmd_points(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  const char *index_s = cli_opt(&a, "index"), *build_s = cli_opt(&a, "build"), *backend_s = cli_opt(&a, "backend");
  const char *points_p = cli_opt(&a, "points"), *out_p = cli_opt(&a, "out"), *counts_p = cli_opt(&a, "counts-out");
  const char *qp[4] = {cli_opt(&a, "match"), cli_opt(&a, "window"), cli_opt(&a, "within"), cli_opt(&a, "knn")};
  const char *k_s = cli_opt(&a, "k"), *box_s = cli_opt(&a, "box");
  const char *cap_s = cli_opt(&a, "leaf-capacity"), *depth_s = cli_opt(&a, "max-depth");
  cli_args_done(&a);
  static const char *const qnames[4] = {"match", "window", "within", "knn"};
  static const rdx_points_query_type qtypes[4] = {RDX_POINTS_MATCH, RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_KNN};
  static const int qcols[4] = {2, 4, 3, 2};

  if (!index_s) cli_die(CLI_EXIT_BAD_INPUT, "--index is required (quadtree or kdtree)");
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  if (strcmp(index_s, "quadtree") == 0) o.kind = RDX_POINTS_QUADTREE;
  else if (strcmp(index_s, "kdtree") == 0) o.kind = RDX_POINTS_KDTREE;
  else cli_die(CLI_EXIT_BAD_INPUT, "--index '%s' is not quadtree or kdtree", index_s);
  if (build_s && strcmp(build_s, "bottomup") == 0) o.method = RDX_POINTS_BOTTOM_UP;
  else if (build_s && strcmp(build_s, "topdown") == 0) o.method = RDX_POINTS_TOP_DOWN;
  else if (build_s) cli_die(CLI_EXIT_BAD_INPUT, "--build '%s' is not bottomup or topdown", build_s);
  if (o.kind == RDX_POINTS_KDTREE && o.method == RDX_POINTS_TOP_DOWN)
    cli_die(CLI_EXIT_BAD_INPUT, "--build topdown applies to --index quadtree only");
  if (!points_p) cli_die(CLI_EXIT_BAD_INPUT, "--points is required");
  if (!out_p) cli_die(CLI_EXIT_BAD_INPUT, "--out is required");
  if (!counts_p) cli_die(CLI_EXIT_BAD_INPUT, "--counts-out is required");
  int t = -1;
  for (int i = 0; i < 4; i++)
    if (qp[i]) {
      if (t >= 0) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --match, --window, --within and --knn");
      t = i;
    }
  if (t < 0) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --match, --window, --within and --knn");
  int64_t k = 0;
  if (t == 3) {
    if (!k_s) cli_die(CLI_EXIT_BAD_INPUT, "--knn needs --k K");
    k = cli_parse_int("k", k_s);
    if (k < 1 || k > 1024) cli_die(CLI_EXIT_BAD_INPUT, "--k %lld is not in [1, 1024]", (long long)k);
  } else if (k_s) {
    cli_die(CLI_EXIT_BAD_INPUT, "--k applies to --knn only");
  }
  if (cap_s) {
    int64_t c = cli_parse_int("leaf-capacity", cap_s);
    if (c < 1 || c > (1 << 30)) cli_die(CLI_EXIT_BAD_INPUT, "--leaf-capacity %lld is not in [1, 2^30]", (long long)c);
    o.leaf_capacity = (int)c;
  }
  if (depth_s) {
    int64_t d = cli_parse_int("max-depth", depth_s);
    int maxd = o.kind == RDX_POINTS_KDTREE ? 56 : 31;
    if (d < 1 || d > maxd) cli_die(CLI_EXIT_BAD_INPUT, "--max-depth %lld is not in [1, %d]", (long long)d, maxd);
    o.max_depth = (int)d;
  }
  if (box_s) {
    char *end = NULL;
    const char *p = box_s;
    for (int i = 0; i < 4; i++) {
      o.box[i] = strtod(p, &end);
      if (end == p || !isfinite(o.box[i]) || (i < 3 && *end != ',') || (i == 3 && *end != '\0'))
        cli_die(CLI_EXIT_BAD_INPUT, "--box '%s' is not XMIN,YMIN,XMAX,YMAX", box_s);
      p = end + 1;
    }
    o.use_box = true;
  }
  rdx_backend backend = cli_backend(backend_s ? backend_s : "auto");
  rdx_context *ctx = cli_context(backend);

  int nd;
  rdx_array pts_a = cli_read_npy(ctx, "points", points_p, &nd);
  if (nd != 2 || pts_a.columns != 2 || (pts_a.dtype != RDX_F32 && pts_a.dtype != RDX_F64))
    cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f32 or f64 (it is %d-D with %d columns, %s)", points_p, nd,
            pts_a.columns, dtype_name(pts_a.dtype));
  rdx_array q = cli_read_npy(ctx, qnames[t], qp[t], &nd);
  if (nd != 2 || q.columns != qcols[t] || q.dtype != pts_a.dtype)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s must be (m, %d) %s like the points (it is %d-D with %d columns, %s)", qnames[t], qp[t],
            qcols[t], dtype_name(pts_a.dtype), nd, q.columns, dtype_name(q.dtype));

  rdx_points *pts = NULL;
  rdx_status st = rdx_points_build(ctx, pts_a, &o, &pts);
  if (st != RDX_OK) cli_die_status(ctx, st, "build");
  rdx_points_query pq = RDX_POINTS_QUERY_INIT;
  pq.type = qtypes[t];
  pq.k = (int)k;
  rdx_result *r = NULL;
  st = rdx_points_query_alloc(ctx, pts, q, &pq, &r);
  if (st != RDX_OK) cli_die_status(ctx, st, qnames[t]);
  cli_write_npy(ctx, "out", out_p, rdx_host_array(r->row_ids, (int64_t)r->total, RDX_U64));
  uint64_t *c = (uint64_t *)malloc((size_t)(q.count ? q.count : 1) * 8);
  if (!c) cli_die(CLI_EXIT_FAILURE, "out of memory");
  for (int64_t i = 0; i < q.count; i++) c[i] = r->offsets[i + 1] - r->offsets[i];
  cli_write_npy(ctx, "counts-out", counts_p, rdx_host_array(c, q.count, RDX_U64));
  free(c);
  rdx_result_free(ctx, r);
  rdx_points_destroy(pts);
  rdx_npy_free(&pts_a);
  rdx_npy_free(&q);
  cli_context_close(ctx);
  return 0;
}
