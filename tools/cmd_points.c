/*
 * cmd_points.c: `raydex points`, the stable command-line contract for spatial point indexes
 * (usage below, which `raydex points --help` prints).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

static const char usage[] =
    "usage: raydex points --index {quadtree,kdtree} [--build {bottomup,topdown}] [--backend {auto,cpu,cuda}]\n"
    "                     --points P.npy (--match Q.npy | --window W.npy | --within C.npy | --knn Q.npy --k K)\n"
    "                     --out OUT.npy --counts-out CNT.npy [--leaf-capacity N] [--max-depth D]\n"
    "                     [--box XMIN,YMIN,XMAX,YMAX] [--quiet]\n"
    "\n"
    "Builds a spatial point index over P and answers one batch of queries. Defaults: a bottom-up\n"
    "build (topdown: quadtree only), leaf capacity 256 (1..2^30), depth 16 (quadtree, 1..31) or 48\n"
    "(k-d tree, 1..56), the best backend here.\n"
    "P: (n, 2) f64 or f32. Q: (m, 2), W: (m, 4) xmin, ymin, xmax, ymax, C: (m, 3) x, y, r, all in\n"
    "P's dtype. OUT: u64 row numbers of P grouped by query in query order, ascending within a query\n"
    "except kNN (ascending distance, ties by row number); CNT: u64 count per query. Windows and\n"
    "circles include their boundary; kNN is exact, k up to 1024. --box fixes the index space (points\n"
    "outside it are bad input); without it the box is P's bounding box.\n"
    "On success one line on stderr says what ran (--quiet: none); outputs appear only then.\n"
    "Exit 0 on success, 2 with one line on stderr for bad input (NaN or infinite coordinates, wrong\n"
    "shapes or dtypes, negative radius, k outside 1..1024, points outside --box, bad options).\n";


/* XMIN,YMIN,XMAX,YMAX: four finite numbers, min <= max. */
static void parse_box(const char *s, double box[4]) {
  const char *p = s;
  char item[64];
  for (int i = 0; i < 4; i++) {
    const char *e = i < 3 ? strchr(p, ',') : p + strlen(p);
    if (!e || (size_t)(e - p) >= sizeof item) cli_die(CLI_EXIT_BAD_INPUT, "--box '%s' is not XMIN,YMIN,XMAX,YMAX", s);
    memcpy(item, p, (size_t)(e - p));
    item[e - p] = '\0';
    box[i] = cli_parse_double("box", item, -HUGE_VAL, HUGE_VAL);
    if (!isfinite(box[i])) cli_die(CLI_EXIT_BAD_INPUT, "--box '%s' has a value that is not finite", s);
    p = e + 1;
  }
  if (!(box[0] <= box[2] && box[1] <= box[3])) cli_die(CLI_EXIT_BAD_INPUT, "--box '%s' has a minimum above its maximum", s);
}

int cmd_points(int argc, char **argv) {
  static const rdx_points_query_type qtypes[4] = {RDX_POINTS_MATCH, RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_KNN};
  static const int qcols[4] = {2, 4, 3, 2};
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  if (!cli_opt(&a, "index")) cli_die(CLI_EXIT_BAD_INPUT, "--index is required (quadtree or kdtree)");
  int kd = cli_choice(&a, "index", cli_point_indexes, 2, 0);
  o.kind = kd ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
  o.method = cli_choice(&a, "build", cli_point_builds, 2, 0) ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
  if (kd && o.method == RDX_POINTS_TOP_DOWN) cli_die(CLI_EXIT_BAD_INPUT, "--build topdown applies to --index quadtree only");
  rdx_backend backend = cli_backend(&a, "backend");
  if (backend == RDX_BACKEND_OPTIX) cli_die(CLI_EXIT_BAD_INPUT, "--backend optix runs key indexes only; use cuda for points");
  int64_t p_bytes = 0, q_bytes = 0;
  const char *points_p = cli_input(&a, "points", 1, &p_bytes);
  const char *qp[4];
  int t = -1;
  for (int i = 0; i < 4; i++) {
    qp[i] = cli_input(&a, cli_query_types[i], 0, &q_bytes);
    if (qp[i] && t >= 0) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --match, --window, --within and --knn");
    if (qp[i]) t = i;
  }
  if (t < 0) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --match, --window, --within and --knn");
  cli_output(&a, "out", 1);
  cli_output(&a, "counts-out", 1);
  int k = (int)cli_int(&a, "k", 1, RDX_SP_MAX_K, 0);
  cli_applies(&a, "k", t == 3, "--knn");
  if (t == 3 && k == 0) cli_die(CLI_EXIT_BAD_INPUT, "--knn needs --k K");
  o.leaf_capacity = (int)cli_int(&a, "leaf-capacity", 1, 1 << 30, 0);
  o.max_depth = (int)cli_int(&a, "max-depth", 1, kd ? RDX_SP_MAX_KD_DEPTH : RDX_SP_MAX_QT_DEPTH, 0);
  const char *box_s = cli_opt(&a, "box");
  if (box_s) parse_box(box_s, o.box), o.use_box = true;
  /* inputs held, the build's peak (a point per 8 bytes at least), results of 8 bytes per point
   * and query at least */
  cli_need_memory(&a, "points", (double)(p_bytes + q_bytes) + cli_points_peak_bytes(o.kind, p_bytes / 8.0, backend) +
                                    2.0 * (double)q_bytes);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(backend);
  int nd;
  cli_progress("reading the inputs");
  rdx_array pts_a = cli_read_npy(ctx, "points", points_p, &nd);
  if (nd != 2 || pts_a.columns != 2 || (pts_a.dtype != RDX_F32 && pts_a.dtype != RDX_F64))
    cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f32 or f64 (it is %d-D with %d columns, %s)", points_p, nd,
            pts_a.columns, cli_dtype_name(pts_a.dtype));
  rdx_array q = cli_read_npy(ctx, cli_query_types[t], qp[t], &nd);
  if (nd != 2 || q.columns != qcols[t] || q.dtype != pts_a.dtype)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s must be (m, %d) %s like the points (it is %d-D with %d columns, %s)", cli_query_types[t], qp[t],
            qcols[t], cli_dtype_name(pts_a.dtype), nd, q.columns, cli_dtype_name(q.dtype));

  rdx_points *pts = NULL;
  cli_progress("building a %s over %lld points", cli_point_indexes[kd], (long long)pts_a.count);
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_points_build(ctx, pts_a, &o, &pts), "build");
  double build_ms = rdx_now_ms() - t0;
  rdx_points_query pq = RDX_POINTS_QUERY_INIT;
  pq.type = qtypes[t];
  pq.k = k;
  rdx_result *r = NULL;
  cli_progress("answering %lld %s queries", (long long)q.count, cli_query_types[t]);
  t0 = rdx_now_ms();
  cli_must(ctx, rdx_points_query_alloc(ctx, pts, q, &pq, &r), cli_query_types[t]);
  double query_ms = rdx_now_ms() - t0;
  cli_write_npy(ctx, "out", rdx_host_array(r->row_ids, (int64_t)r->total, RDX_U64), 1);
  uint64_t *c = (uint64_t *)malloc((size_t)(q.count ? q.count : 1) * 8);
  if (!c) cli_die(CLI_EXIT_FAILURE, "out of memory");
  for (int64_t i = 0; i < q.count; i++) c[i] = r->offsets[i + 1] - r->offsets[i];
  cli_write_npy(ctx, "counts-out", rdx_host_array(c, q.count, RDX_U64), 1);
  cli_commit_outputs();
  char label[32];
  cli_report("%s (%s) on %s, %lld points, %lld %s queries, %llu results, build %.1f ms, query %.1f ms", cli_point_indexes[kd],
             kd ? "median" : cli_point_builds[o.method == RDX_POINTS_TOP_DOWN], cli_backend_label(label, ctx, backend),
             (long long)pts_a.count, (long long)q.count, cli_query_types[t], (unsigned long long)r->total, build_ms, query_ms);
  free(c);
  rdx_result_free(ctx, r);
  rdx_points_destroy(pts);
  rdx_npy_free(&pts_a);
  rdx_npy_free(&q);
  cli_context_close(ctx);
  return 0;
}
