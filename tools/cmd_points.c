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
    "Under mpirun (or another MPI launcher) each rank reads its near-equal share of P and of the\n"
    "queries, one distributed index is built over all ranks (rdx_dist_points_build: ids are\n"
    "positions in P), and rank 0 writes the outputs, the same files as one process writes. On a GPU\n"
    "backend the ranks of a machine take its GPUs in turn (local rank modulo the GPUs).\n"
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

static const rdx_points_query_type qtypes[4] = {RDX_POINTS_MATCH, RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_KNN};
static const int qcols[4] = {2, 4, 3, 2};

/* The inputs' shapes and dtypes, as one process checks them (every rank sees the same header). */
static void check_points(const char *path, int nd, rdx_array p) {
  if (nd != 2 || p.columns != 2 || (p.dtype != RDX_F32 && p.dtype != RDX_F64))
    cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f32 or f64 (it is %d-D with %d columns, %s)", path, nd,
            p.columns, cli_dtype_name(p.dtype));
}
static void check_queries(int t, const char *path, int nd, rdx_array q, rdx_dtype dtype) {
  if (nd != 2 || q.columns != qcols[t] || q.dtype != dtype)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s must be (m, %d) %s like the points (it is %d-D with %d columns, %s)", cli_query_types[t],
            path, qcols[t], cli_dtype_name(dtype), nd, q.columns, cli_dtype_name(q.dtype));
}

/* One near-equal share of a .npy input for this rank. */
static rdx_array read_share(rdx_context *ctx, rdx_comm *comm, const char *opt, const char *path, int *nd) {
  rdx_array a;
  char what[64];
  snprintf(what, sizeof what, "--%s", opt);
  cli_must(ctx, rdx_npy_read_share(ctx, path, rdx_comm_rank(comm), rdx_comm_size(comm), &a, nd, NULL, NULL), what);
  return a;
}

/* `mpirun raydex points`: each rank its share of P and of the queries, one distributed index over
 * all ranks (implied ids: positions in P, since shares are P's rows in rank order), the answers
 * gathered to rank 0 in query order, which writes them as one process would. */
static int points_mpi(rdx_context *ctx, rdx_backend backend, const rdx_points_options *o, const char *points_p, int t,
                      const char *q_p, int k) {
  static const char fn[] = "raydex points";
  const int kd = o->kind == RDX_POINTS_KDTREE;
  rdx_comm *comm = NULL;
  cli_must(ctx, rdx_dist_world_begin(ctx, &comm), "mpi");
  const int root = rdx_comm_rank(comm) == 0;
  int nd;
  cli_progress("reading this rank's share of the inputs");
  rdx_array pts_a = read_share(ctx, comm, "points", points_p, &nd);
  check_points(points_p, nd, pts_a);
  rdx_array q = read_share(ctx, comm, cli_query_types[t], q_p, &nd);
  check_queries(t, q_p, nd, q, pts_a.dtype);
  rdx_dist_points *dp = NULL;
  cli_progress("building a %s over this rank's %lld points on %d ranks", cli_point_indexes[kd], (long long)pts_a.count,
               rdx_comm_size(comm));
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_dist_points_build(comm, pts_a, rdx_no_array(), o, &dp), "build");
  const double build_ms = rdx_now_ms() - t0;
  rdx_points_query pq = RDX_POINTS_QUERY_INIT;
  pq.type = qtypes[t];
  pq.k = k;
  rdx_result *r = NULL;
  cli_progress("answering this rank's %lld %s queries", (long long)q.count, cli_query_types[t]);
  t0 = rdx_now_ms();
  cli_must(ctx, rdx_dist_points_query_alloc(comm, dp, q, &pq, &r), cli_query_types[t]);
  const double query_ms = rdx_now_ms() - t0;
  uint64_t *c = (uint64_t *)malloc((size_t)(q.count ? q.count : 1) * 8);
  if (!c) cli_die(CLI_EXIT_FAILURE, "out of memory");
  for (int64_t i = 0; i < q.count; i++) c[i] = r->offsets[i + 1] - r->offsets[i];
  void *g_counts = NULL, *g_rows = NULL;
  int64_t n_counts = 0, n_rows = 0;
  cli_must(ctx, rdx_dist_gather_root(comm, fn, c, q.count, 8, &g_counts, &n_counts), "gather");
  cli_must(ctx, rdx_dist_gather_root(comm, fn, r->row_ids, (int64_t)r->total, 8, &g_rows, &n_rows), "gather");
  const int64_t held = rdx_dist_points_count(dp);
  if (root) {
    cli_write_npy(ctx, "out", rdx_host_array(g_rows, n_rows, RDX_U64), 1);
    cli_write_npy(ctx, "counts-out", rdx_host_array(g_counts, n_counts, RDX_U64), 1);
    cli_commit_outputs();
    char label[32];
    cli_report("%s (%s) on %s, %d rank%s, %lld points, %lld %s queries, %lld results, build %.1f ms, query %.1f ms",
               cli_point_indexes[kd], kd ? "median" : cli_point_builds[o->method == RDX_POINTS_TOP_DOWN],
               cli_backend_label(label, ctx, backend), rdx_comm_size(comm), rdx_comm_size(comm) == 1 ? "" : "s",
               (long long)held, (long long)n_counts, cli_query_types[t], (long long)n_rows, build_ms, query_ms);
  }
  free(g_counts);
  free(g_rows);
  free(c);
  rdx_result_free(ctx, r);
  rdx_dist_points_destroy(dp);
  rdx_npy_free(&pts_a);
  rdx_npy_free(&q);
  rdx_dist_world_end(comm);
  cli_context_close(ctx);
  return 0;
}

int cmd_points(int argc, char **argv) {
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
  rdx_dist_info dist;
  dist.size = sizeof dist;
  if (rdx_dist_info_get(&dist) == RDX_OK && dist.mpi_rank >= 0) /* launched by mpirun */
    return points_mpi(ctx, backend, &o, points_p, t, qp[t], k);
  int nd;
  cli_progress("reading the inputs");
  rdx_array pts_a = cli_read_npy(ctx, "points", points_p, &nd);
  check_points(points_p, nd, pts_a);
  rdx_array q = cli_read_npy(ctx, cli_query_types[t], qp[t], &nd);
  check_queries(t, qp[t], nd, q, pts_a.dtype);

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
