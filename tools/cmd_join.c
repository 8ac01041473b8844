/*
 * cmd_join.c: `raydex join`, the stable command-line contract of the exact spatial joins (usage
 * below, which `raydex join --help` prints): point in polygon (--op pip), segment intersection
 * (--op lsi) and the polygon joins (--op overlay|intersects|contains|within|boxes, rdx_join_polygons)
 * against a polygon layer R read by rdx_polygons_load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_api.h"
#include "cli.h"

static const char usage[] =
    "usage: raydex join --op pip --r R --points P.npy --out OUT.npy [--counts-out C.npy] [--planar]\n"
    "       raydex join --op lsi --r R --s S --out PAIRS.npy [--points-out X.npy]\n"
    "       raydex join --op overlay|intersects|contains|within|boxes --r R --s S --out PAIRS.npy\n"
    "               [--areas-out A.npy (overlay only)]\n"
    "       common: [--r-layer NAME] [--s-layer NAME] [--pad-ulps N] [--group S]\n"
    "               [--backend {auto,cpu,cuda,optix}] [--quiet]\n"
    "\n"
    "Exact spatial joins (RayJoin) of a polygon layer R: its features are numbered 0, 1, ... in the\n"
    "file's order. R and S: .rdxp, or in a build with GDAL (raydex info says) any polygon layer GDAL\n"
    "reads (GeoJSON, TopoJSON, Shapefile, GeoPackage, ...); --r-layer / --s-layer pick a layer of a\n"
    "dataset that holds several. A feature contains its boundary; answers are exact on the\n"
    "coordinates as given, on every backend.\n"
    "pip: P is (n, 2) f64 or f32. OUT is i64 (n,): the smallest feature of R containing each point,\n"
    "or -1. With --counts-out, OUT is every feature containing each point, grouped by point in point\n"
    "order and ascending within a point (i64), and C the u64 count per point (n,). --planar states\n"
    "that R's features do not overlap (counties, countries) and takes RayJoin's faster nearest-edge\n"
    "rule; answers are then the same, but a point in several overlapping features may get fewer.\n"
    "lsi: PAIRS is i64 (m, 2): the sorted unique (r, s) feature pairs whose boundaries share at least\n"
    "one point (they cross, touch or overlap). --points-out X.npy: f64 (k, 2), the intersection\n"
    "points, one per intersecting edge pair (two for a collinear overlap: its ends), each rounded to\n"
    "the nearest double, ordered by their (r, s) pair, then x, then y.\n"
    "overlay, intersects, contains, within, boxes: PAIRS is i64 (m, 2), the sorted unique (r, s)\n"
    "feature pairs where: overlay, the interiors meet (ST_Relate 'T********'; features sharing only\n"
    "a boundary do not overlay); intersects, the features share a point (ST_Intersects); contains, no\n"
    "point of s lies outside r (ST_Contains(r, s)); within, no point of r lies outside s\n"
    "(ST_Within(r, s)); boxes, the features' closed bounding boxes meet (PostGIS's &&). --areas-out\n"
    "A.npy (overlay): f64 (m,), the area of each pair's intersection, in PAIRS' order. overlay,\n"
    "contains and within are exact for features whose rings do not cross (OGC-valid polygons).\n"
    "Index (R's; for overlay, intersects, contains and within S's too; none for boxes): --pad-ulps N\n"
    "(1..64, default 2) float32 ulps of padding on the edges' boxes, --group S (1..64, default 3.5)\n"
    "RayJoin's adaptive grouping threshold (1: one edge per box).\n"
    "On success one line on stderr says what ran and how long the index and the join took (--quiet:\n"
    "none; the polygon joins: reading the layers too); outputs appear only then. On a terminal, a\n"
    "polygon join that has run a second shows its stage on a progress line (--quiet: none). Exit 0 on success, 2 with one line on stderr for bad input\n"
    "(unreadable, truncated or foreign files, an unclosed or degenerate ring, NaN or infinite\n"
    "coordinates, coordinates outside the supported range, wrong shapes or dtypes, bad options) and\n"
    "for a join this build or backend does not run (RDX_ERR_UNSUPPORTED, named on that line).\n";

/* in this order: ops[op] for op >= 2 is rdx_join_predicate op - 1 */
static const char *const ops[7] = {"pip", "lsi", "overlay", "intersects", "contains", "within", "boxes"};
enum { OP_PIP = 0, OP_LSI = 1, OP_OVERLAY = 2, OP_BOXES = 6 };

/* A layer named by --name: a regular file, or for GDAL a directory or a /vsi path. */
static const char *layer_input(cli_args *a, const char *name, int required) {
  const char *p = cli_opt(a, name);
  struct stat st;
  if (p == NULL) {
    if (required) cli_die(CLI_EXIT_BAD_INPUT, "--%s is required", name);
    return NULL;
  }
  if (strncmp(p, "/vsi", 4) == 0 || (stat(p, &st) == 0 && S_ISDIR(st.st_mode))) return p;
  return cli_input(a, name, 1, NULL);
}

static rdx_polygons *load(rdx_context *ctx, const char *opt, const char *path, const char *layer) {
  rdx_polygons *p = NULL;
  cli_progress("reading --%s %s", opt, path);
  char what[16];
  snprintf(what, sizeof what, "--%s", opt);
  cli_must(ctx, rdx_polygons_load(ctx, path, layer, &p), what);
  return p;
}

/* A copy of n bytes of the library's memory in `where` on the host. */
static void *to_host(rdx_context *ctx, const void *p, rdx_location where, size_t bytes) {
  void *h = malloc(bytes ? bytes : 1);
  if (h == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
  if (bytes) cli_must(ctx, rdx_copy(ctx, h, RDX_HOST, p, where, bytes), "rdx_copy");
  return h;
}

static void pip(rdx_context *ctx, rdx_backend asked, rdx_polygons *r, const rdx_join_options *o, const char *points_p,
                int all, double index_ms) {
  int nd = 0;
  rdx_array pts = cli_read_npy(ctx, "points", points_p, &nd);
  if (nd != 2 || pts.columns != 2 || (pts.dtype != RDX_F32 && pts.dtype != RDX_F64))
    cli_die(CLI_EXIT_BAD_INPUT, "--points %s must be (n, 2) f64 or f32 (it is %d-D with %d columns, %s)", points_p, nd,
            pts.columns, cli_dtype_name(pts.dtype));
  cli_progress("locating %lld points", (long long)pts.count);
  double t0 = rdx_now_ms(), query_ms = 0;
  uint64_t found = 0;
  if (all) {
    rdx_result *res = NULL;
    cli_must(ctx, rdx_join_pip_alloc(ctx, r, pts, o, &res), "--points");
    query_ms = rdx_now_ms() - t0;
    uint64_t *c = (uint64_t *)malloc((size_t)(pts.count ? pts.count : 1) * 8);
    if (!c) cli_die(CLI_EXIT_FAILURE, "out of memory");
    for (int64_t i = 0; i < pts.count; i++) c[i] = res->offsets[i + 1] - res->offsets[i];
    /* feature numbers are below 2^32: the u64 row ids are the i64 values */
    cli_write_npy(ctx, "out", rdx_host_array(res->row_ids, (int64_t)res->total, RDX_I64), 1);
    cli_write_npy(ctx, "counts-out", rdx_host_array(c, pts.count, RDX_U64), 1);
    found = res->total;
    free(c);
    rdx_result_free(ctx, res);
  } else {
    int64_t *first = (int64_t *)malloc((size_t)(pts.count ? pts.count : 1) * 8);
    if (!first) cli_die(CLI_EXIT_FAILURE, "out of memory");
    cli_must(ctx, rdx_join_pip_first(ctx, r, pts, o, rdx_host_array(first, pts.count, RDX_I64)), "--points");
    query_ms = rdx_now_ms() - t0;
    for (int64_t i = 0; i < pts.count; i++) found += first[i] >= 0;
    cli_write_npy(ctx, "out", rdx_host_array(first, pts.count, RDX_I64), 1);
    free(first);
  }
  cli_commit_outputs();
  char label[32];
  cli_report("pip (%s rule) on %s: %lld points, %llu %s, index %.1f ms, join %.1f ms", o->planar ? "planar" : "general",
             cli_backend_label(label, ctx, asked), (long long)pts.count, (unsigned long long)found,
             all ? "containing features in all" : "in a feature", index_ms, query_ms);
  rdx_npy_free(&pts);
}

static void lsi(rdx_context *ctx, rdx_backend asked, rdx_polygons *r, rdx_polygons *s, const rdx_join_options *o,
                int want_points, double index_ms) {
  cli_progress("intersecting the boundaries");
  double t0 = rdx_now_ms();
  rdx_join_lsi_result *res = NULL;
  cli_must(ctx, rdx_join_lsi(ctx, r, s, o, want_points, &res), "--s");
  double query_ms = rdx_now_ms() - t0;
  int64_t *pairs = (int64_t *)to_host(ctx, res->pairs, res->where, (size_t)res->n_pairs * 16);
  cli_write_npy(ctx, "out", rdx_host_matrix(pairs, res->n_pairs, 2, RDX_I64), 2);
  free(pairs);
  if (want_points) {
    double *xy = (double *)to_host(ctx, res->points, res->where, (size_t)res->n_points * 16);
    cli_write_npy(ctx, "points-out", rdx_host_matrix(xy, res->n_points, 2, RDX_F64), 2);
    free(xy);
  }
  cli_commit_outputs();
  char label[32], pts_text[48] = "";
  if (want_points) snprintf(pts_text, sizeof pts_text, ", %lld points", (long long)res->n_points);
  cli_report("lsi on %s: %lld feature pairs%s, index %.1f ms, join %.1f ms", cli_backend_label(label, ctx, asked),
             (long long)res->n_pairs, pts_text, index_ms, query_ms);
  rdx_join_lsi_free(ctx, res);
}

/* The progress line of a polygon join that has run a second or more: its stage and time. */
typedef struct join_clock {
  const char *op;
  double t0;
} join_clock;

static void on_stage(void *user, const char *stage, double done) {
  const join_clock *c = (const join_clock *)user;
  const double s = (rdx_now_ms() - c->t0) / 1e3;
  if (s >= 1.0) cli_progress("%s: stage %s (%.0f%% of the stages), %.1f s", c->op, stage, 100.0 * done, s);
}

/* --op overlay, intersects, contains, within, boxes: rdx_join_polygons */
static void polygons(rdx_context *ctx, rdx_backend asked, rdx_polygons *r, rdx_polygons *s, int op,
                     const rdx_join_options *o, int want_areas, double read_ms, double index_ms) {
  rdx_join_predicate predicate = (rdx_join_predicate)(op - 1);
  cli_progress("joining the layers (%s)", ops[op]);
  double t0 = rdx_now_ms();
  rdx_join_pairs_result *res = NULL;
  char what[32];
  snprintf(what, sizeof what, want_areas ? "--areas-out" : "--op %s", ops[op]);
  join_clock clock = {ops[op], t0};
  rdx_join_options oc = *o;
  oc.progress = on_stage, oc.progress_user = &clock;
  cli_must(ctx, rdx_join_polygons(ctx, r, s, predicate, &oc, want_areas, &res), what);
  double query_ms = rdx_now_ms() - t0;
  int64_t *pairs = (int64_t *)to_host(ctx, res->pairs, res->where, (size_t)res->n_pairs * 16);
  cli_write_npy(ctx, "out", rdx_host_matrix(pairs, res->n_pairs, 2, RDX_I64), 2);
  free(pairs);
  if (want_areas) {
    if (res->areas == NULL && res->n_pairs > 0) cli_die(CLI_EXIT_FAILURE, "--areas-out: the join gave no areas");
    double *area = (double *)to_host(ctx, res->areas, res->where, (size_t)res->n_pairs * 8);
    cli_write_npy(ctx, "areas-out", rdx_host_array(area, res->n_pairs, RDX_F64), 1);
    free(area);
  }
  cli_commit_outputs();
  char label[32];
  cli_report("%s on %s: %lld feature pairs%s, read %.1f ms, index %.1f ms, join %.1f ms", ops[op],
             cli_backend_label(label, ctx, asked), (long long)res->n_pairs, want_areas ? " with areas" : "", read_ms,
             index_ms, query_ms);
  rdx_join_pairs_free(ctx, res);
}

int cmd_join(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  if (!cli_opt(&a, "op")) cli_die(CLI_EXIT_BAD_INPUT, "--op is required (pip, lsi, overlay, intersects, contains, within or boxes)");
  int op = cli_choice(&a, "op", ops, 7, 0);
  int is_pip = op == OP_PIP, is_lsi = op == OP_LSI;
  rdx_backend backend = cli_backend(&a, "backend");
  const char *r_path = layer_input(&a, "r", 1);
  const char *s_path = layer_input(&a, "s", !is_pip);
  cli_applies(&a, "s", !is_pip, "--op lsi, overlay, intersects, contains, within and boxes");
  const char *r_layer = cli_opt(&a, "r-layer"), *s_layer = cli_opt(&a, "s-layer");
  if ((r_layer && !*r_layer) || (s_layer && !*s_layer)) cli_die(CLI_EXIT_BAD_INPUT, "a layer name '' names no layer");
  cli_applies(&a, "s-layer", !is_pip, "--op lsi, overlay, intersects, contains, within and boxes");
  const char *points_p = cli_input(&a, "points", is_pip, NULL);
  cli_applies(&a, "points", is_pip, "--op pip");
  cli_output(&a, "out", 1);
  int all = cli_output(&a, "counts-out", 0) != NULL;
  cli_applies(&a, "counts-out", is_pip, "--op pip");
  int want_points = cli_output(&a, "points-out", 0) != NULL;
  cli_applies(&a, "points-out", is_lsi, "--op lsi");
  int want_areas = cli_output(&a, "areas-out", 0) != NULL;
  cli_applies(&a, "areas-out", op == OP_OVERLAY, "--op overlay");
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
  o.planar = cli_flag(&a, "planar");
  cli_applies(&a, "planar", is_pip, "--op pip");
  o.pad_ulps = (int32_t)cli_int(&a, "pad-ulps", 1, 64, 0);
  o.group_threshold = cli_double(&a, "group", 1.0, 64.0, 0.0);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(backend);
  double t0 = rdx_now_ms();
  rdx_polygons *r = load(ctx, "r", r_path, r_layer);
  rdx_polygons *s = is_pip ? NULL : load(ctx, "s", s_path, s_layer);
  double read_ms = rdx_now_ms() - t0;
  /* pip and lsi trace through R's index; the polygon joins through both layers' (boxes: none) */
  t0 = rdx_now_ms();
  if (op != OP_BOXES) {
    cli_progress("indexing R");
    cli_must(ctx, rdx_polygons_build_index(ctx, r, &o), "--r");
  }
  if (!is_pip && !is_lsi && op != OP_BOXES) {
    cli_progress("indexing S");
    cli_must(ctx, rdx_polygons_build_index(ctx, s, &o), "--s");
  }
  double index_ms = rdx_now_ms() - t0;
  if (is_lsi) lsi(ctx, backend, r, s, &o, want_points, index_ms);
  else if (is_pip) pip(ctx, backend, r, &o, points_p, all, index_ms);
  else polygons(ctx, backend, r, s, op, &o, want_areas, read_ms, index_ms);
  rdx_polygons_destroy(s);
  rdx_polygons_destroy(r);
  cli_context_close(ctx);
  return 0;
}
