/*
 * cmd_bench_join.c: `raydex bench join`, the polygon joins' benchmark (issue 28; RayJoin's
 * experiments E1, E2, E4 and E7, rayjoin.md section 11): LSI of two layers, PIP of points in a
 * layer and the polygon joins (overlay, intersects, contains, within, boxes: rdx_join_polygons),
 * per backend and grouping threshold, one CSV row each.
 *
 * What a row times (milliseconds, medians of --reps runs after one warm-up):
 *   group_ms, build_ms  rdx_polygons_build_index on R (grouping and boxes; all of it with the BVH);
 *                       the polygon joins index S too, and build_ms counts both
 *   query_ms            the join alone, R's index built, inputs in the backend's memory (PIP:
 *                       points already on the GPU, rdx_join_pip_first into device memory)
 *   total_ms            build_ms + query_ms (RayJoin's "total" less its host-to-device copy)
 *   index_ms .. result_ms  (polygon joins only: the last columns) the means over the reps of the
 *                       join's stages (bench_api.h's rdx_jn_stage; each stage waited for on GPU
 *                       contexts, so they add up to about query_ms)
 * The op column reads "overlay+areas" for overlay with --areas.
 * The check column compares every row's answers with the first row's of the same join (another
 * backend or threshold in the same run): "ref" for that row, "same" or "DIFF" (overlay with
 * --areas: also "DIFF_AREA" when an area differs from the first row's by more than 1e-9 of it).
 *
 * --naive (RayJoin's precision experiment, rayjoin.md section 5): after each row, a row of the
 * same join on the same backend and threshold whose index has naive boxes (bench_api.h's
 * rdx_join_force_naive: bounds rounded to the nearest float32, no pad, every LSI ray cast; the
 * exact tests of the candidates kept). Its pad column reads 0 and its check column "wrong=N", the
 * answers that differ from the row before: points whose smallest feature differs (PIP), pairs in
 * one result and not the other (LSI; then also edge_pairs_missed=M, the intersecting edge pairs
 * missed, as a feature pair stands while one of its edge pairs is found). Every wrong answer is a
 * candidate the plain float32 boxes missed; the conservative ones miss none.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_api.h"
#include "cli.h"

const char cli_bench_join_usage[] =
    "usage: raydex bench join --op pip|lsi|overlay|intersects|contains|within|boxes --r R [--s S]\n"
    "            [--points N] [--backend cpu,cuda,optix] [--areas]\n"
    "            [--group 3.5,1] [--pad 2] [--planar] [--naive] [--input-order] [--one-stream]\n"
    "            [--reps 5] [--seed 1]\n"
    "            [--header] [--quiet]\n"
    "   R, S: polygon layers (.rdxp, or any layer GDAL reads when built with GDAL)\n"
    "   lsi:   every edge of S against R's index; rows count the (r, s) feature pairs\n"
    "   pip:   the vertices of S located in R (with --s), or --points N points uniform in R's box\n"
    "   overlay ... boxes: the (r, s) feature pairs of rdx_join_polygons; --areas: overlay's areas\n"
    "          (default 2^20); --planar takes the nearest-edge rule (R must not overlap itself)\n"
    "   --naive: after each row, the same join with plain float32 boxes (no pad): pad 0, and the\n"
    "          check column counts the answers that differ from the row before (wrong=N)\n"
    "   --input-order: GPU PIP traces the points in input order, without sorting them first\n"
    "   --one-stream: polygon joins on GPUs run the two directions' PIP one after the other, not\n"
    "          side by side on two streams (the backend column reads cuda-1stream, optix-1stream)\n"
    "Lists are comma-separated; every (backend, group) gives one CSV row with a check column.\n";

typedef struct join_cfg {
  int op; /* 0 pip, 1 lsi */
  const char *r_path, *s_path;
  int64_t n_points;
  rdx_backend backends[CLI_LIST];
  int n_backends;
  double groups[CLI_LIST];
  int n_groups;
  int pad, planar, naive, input_order, one_stream, areas, reps;
  uint64_t seed;
  rdx_info info;
} join_cfg;

static const char *const op_names[] = {"pip", "lsi", "overlay", "intersects", "contains", "within", "boxes"};
#define N_OPS 7

static void header(int op) {
  printf("date,device,backend,op,r,s,r_features,r_edges,s_edges,points,group,pad,planar,groups,index_mb,"
         "group_ms,build_ms,query_ms,total_ms,rate_per_s,results,candidates,check");
  if (op >= 2)
    for (int k = 0; k < RDX_JN_N_STAGES; k++) printf(",%s_ms", rdx_jn_stage_names[k]);
  printf("\n");
}

static const char *base_name(const char *path) {
  const char *b = path ? strrchr(path, '/') : NULL;
  return b ? b + 1 : path ? path : "";
}

/* splitmix64: the benchmark's own points, the same for every backend */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The PIP query points (host, f64, (n, 2)): S's vertices, or n uniform in R's box. */
static double *make_points(const join_cfg *c, rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                           int64_t *n) {
  if (s) {
    int64_t nv = 0;
    const double *xy = rdx_polygons_host_xy(s, &nv);
    double *p = malloc((size_t)(nv ? nv : 1) * 16);
    if (!p) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld points", (long long)nv);
    memcpy(p, xy, (size_t)nv * 16);
    *n = nv;
    return p;
  }
  rdx_polygons_info info;
  info.size = sizeof info;
  cli_must(ctx, rdx_polygons_describe(ctx, r, &info), "rdx_polygons_describe");
  double *p = malloc((size_t)(c->n_points ? c->n_points : 1) * 16);
  if (!p) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld points", (long long)c->n_points);
  uint64_t st = c->seed;
  for (int64_t i = 0; i < c->n_points; i++)
    for (int a = 0; a < 2; a++) {
      double u = (double)(mix(&st) >> 11) * 0x1p-53;
      p[2 * i + a] = info.lo[a] + u * (info.hi[a] - info.lo[a]);
    }
  *n = c->n_points;
  return p;
}

/* The answers of one join as host int64s, for the check column. */
typedef struct answers {
  int64_t *v;
  int64_t n;
  double *area;       /* overlay with --areas: n / 2 areas */
  int64_t edge_pairs; /* LSI: the intersecting edge pairs behind the feature pairs */
} answers;

/* The check of a row: against the run's first answers (*ref, taken from this row when empty). */
static const char *compare(answers *ref, const answers *now) {
  if (!ref->v) {
    ref->n = now->n;
    ref->v = malloc((size_t)(now->n ? now->n : 1) * 8);
    if (!ref->v) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld answers", (long long)now->n);
    memcpy(ref->v, now->v, (size_t)now->n * 8);
    if (now->area) {
      ref->area = malloc((size_t)(now->n / 2 + 1) * 8);
      if (!ref->area) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld areas", (long long)now->n / 2);
      memcpy(ref->area, now->area, (size_t)(now->n / 2) * 8);
    }
    return "ref";
  }
  int same = ref->n == now->n && (ref->n == 0 || memcmp(ref->v, now->v, (size_t)ref->n * 8) == 0);
  if (!same) return "DIFF";
  if (ref->area && now->area)
    for (int64_t i = 0; i < now->n / 2; i++)
      if (fabs(ref->area[i] - now->area[i]) > 1e-9 * fabs(ref->area[i])) return "DIFF_AREA";
  return "same";
}

/* A naive row's wrong answers against the exact row's: PIP, the points whose answers differ; LSI
 * (sorted unique (r, s) rows), the pairs in one list and not the other. */
static int64_t wrong_answers(int op, const answers *exact, const answers *naive) {
  int64_t wrong = 0;
  if (op == 0) {
    for (int64_t i = 0; i < exact->n && i < naive->n; i++) wrong += exact->v[i] != naive->v[i];
    return wrong;
  }
  int64_t i = 0, j = 0;
  while (i < exact->n && j < naive->n) {
    const int64_t *a = exact->v + i, *b = naive->v + j;
    int c = a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] != b[1] ? (a[1] < b[1] ? -1 : 1) : 0;
    wrong += c != 0;
    i += c <= 0 ? 2 : 0;
    j += c >= 0 ? 2 : 0;
  }
  return wrong + (exact->n - i) / 2 + (naive->n - j) / 2;
}

static int n_rows;

/* One row: the join on backend b at threshold `group`, checked against *ref; or with naive boxes
 * (exact: the answers of the row before, whose wrong ones it counts). The row's answers go to
 * *keep when keep is not NULL (the caller frees them). */
static void run_one(const join_cfg *c, rdx_backend b, double group, answers *ref, const answers *exact,
                    answers *keep) {
  rdx_context *ctx = cli_context(b);
  if (exact) rdx_join_force_naive(ctx, 1);
  if (c->input_order) rdx_join_force_input_order(ctx, 1);
  if (c->one_stream) rdx_join_force_one_stream(ctx, 1);
  rdx_polygons *r = NULL, *s = NULL;
  cli_must(ctx, rdx_polygons_load(ctx, c->r_path, NULL, &r), "rdx_polygons_load R");
  if (c->s_path) cli_must(ctx, rdx_polygons_load(ctx, c->s_path, NULL, &s), "rdx_polygons_load S");
  rdx_join_options jo = RDX_JOIN_OPTIONS_INIT;
  jo.pad_ulps = c->pad;
  jo.group_threshold = group;
  jo.planar = c->planar;
  double group_ms[64], build_ms[64], query_ms[64], stage_ms[RDX_JN_N_STAGES] = {0};
  const int reps = c->reps < 64 ? c->reps : 64;
  rdx_join_index_stats ist;
  for (int i = 0; i <= reps; i++) { /* run 0 warms up */
    double t0 = rdx_now_ms();
    cli_must(ctx, rdx_polygons_build_index(ctx, r, &jo), "rdx_polygons_build_index");
    if (c->op >= 2) cli_must(ctx, rdx_polygons_build_index(ctx, s, &jo), "rdx_polygons_build_index S");
    double t1 = rdx_now_ms();
    rdx_polygons_index_stats(r, &ist);
    if (i > 0) build_ms[i - 1] = t1 - t0, group_ms[i - 1] = ist.group_ms;
  }
  answers now = {NULL, 0, NULL, 0};
  int64_t n_pts = 0, results = 0, candidates = -1, s_edges = 0;
  rdx_polygons_info ri, si;
  ri.size = si.size = sizeof ri;
  cli_must(ctx, rdx_polygons_describe(ctx, r, &ri), "rdx_polygons_describe");
  if (s) cli_must(ctx, rdx_polygons_describe(ctx, s, &si), "rdx_polygons_describe"), s_edges = si.n_edges;
  if (c->op == 0) {
    double *hp = make_points(c, ctx, r, s, &n_pts);
    rdx_array pts = cli_place(ctx, rdx_host_matrix(hp, n_pts, 2, RDX_F64));
    int64_t *hfirst = malloc((size_t)(n_pts ? n_pts : 1) * 8);
    if (!hfirst) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld answers", (long long)n_pts);
    rdx_array first = cli_place(ctx, rdx_host_array(hfirst, n_pts, RDX_I64));
    for (int i = 0; i <= reps; i++) {
      double t0 = rdx_now_ms();
      cli_must(ctx, rdx_join_pip_first(ctx, r, pts, &jo, first), "rdx_join_pip_first");
      if (i > 0) query_ms[i - 1] = rdx_now_ms() - t0;
    }
    if (first.where != RDX_HOST)
      cli_must(ctx, rdx_copy(ctx, hfirst, RDX_HOST, first.data, first.where, (size_t)n_pts * 8), "copy answers");
    for (int64_t i = 0; i < n_pts; i++) results += hfirst[i] >= 0;
    now.v = hfirst, now.n = n_pts;
    if (first.data != hfirst) cli_unplace(ctx, first);
    if (pts.data != hp) cli_unplace(ctx, pts);
    free(hp);
  } else if (c->op >= 2) {
    rdx_join_pairs_result *res = NULL;
    const int areas = c->areas && c->op == 2;
    for (int i = 0; i <= reps; i++) {
      rdx_join_pairs_free(ctx, res);
      res = NULL;
      rdx_jn_polygons_stats st;
      double t0 = rdx_now_ms();
      cli_must(ctx, rdx_jn_polygons_run(ctx, r, s, (rdx_join_predicate)(c->op - 1), &jo, areas, &res, &st),
               "rdx_join_polygons");
      if (i > 0) {
        query_ms[i - 1] = rdx_now_ms() - t0;
        for (int k = 0; k < RDX_JN_N_STAGES; k++) stage_ms[k] += st.ms[k] / reps;
      }
    }
    results = res->n_pairs;
    now.n = 2 * res->n_pairs;
    now.v = malloc((size_t)(now.n ? now.n : 1) * 8);
    if (!now.v) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld pairs", (long long)res->n_pairs);
    cli_must(ctx, rdx_copy(ctx, now.v, RDX_HOST, res->pairs, res->where, (size_t)now.n * 8), "copy pairs");
    if (areas) {
      now.area = malloc((size_t)(res->n_pairs + 1) * 8);
      if (!now.area) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld areas", (long long)res->n_pairs);
      cli_must(ctx, rdx_copy(ctx, now.area, RDX_HOST, res->areas, res->where, (size_t)res->n_pairs * 8), "copy areas");
    }
    rdx_join_pairs_free(ctx, res);
  } else {
    rdx_join_lsi_result *res = NULL;
    rdx_jn_lsi_stats stats;
    for (int i = 0; i <= reps; i++) {
      rdx_join_lsi_free(ctx, res);
      res = NULL;
      double t0 = rdx_now_ms();
      cli_must(ctx, rdx_jn_lsi_run(ctx, r, s, &jo, 0, &res, &stats), "rdx_join_lsi");
      if (i > 0) query_ms[i - 1] = rdx_now_ms() - t0;
    }
    results = res->n_pairs;
    candidates = stats.candidates;
    now.edge_pairs = stats.edge_pairs;
    now.n = 2 * res->n_pairs;
    now.v = malloc((size_t)(now.n ? now.n : 1) * 8);
    if (!now.v) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld pairs", (long long)res->n_pairs);
    cli_must(ctx, rdx_copy(ctx, now.v, RDX_HOST, res->pairs, res->where, (size_t)now.n * 8), "copy pairs");
    rdx_join_lsi_free(ctx, res);
  }
  const double g = cli_median(group_ms, reps), bm = cli_median(build_ms, reps), q = cli_median(query_ms, reps);
  const double work = c->op == 0 ? (double)n_pts : (double)s_edges;
  char label[32], date[32], device[160], check[48];
  if (exact && c->op == 1) /* and the edge pairs missed, of which a feature pair needs only one */
    snprintf(check, sizeof check, "wrong=%lld edge_pairs_missed=%lld", (long long)wrong_answers(c->op, exact, &now),
             (long long)(exact->edge_pairs - now.edge_pairs));
  else if (exact) snprintf(check, sizeof check, "wrong=%lld", (long long)wrong_answers(c->op, exact, &now));
  else snprintf(check, sizeof check, "%s", compare(ref, &now));
  if (keep) *keep = now;
  else free(now.v), free(now.area);
  cli_backend_label(label, ctx, b);
  if (c->one_stream && cli_is_gpu(ctx)) snprintf(label + strlen(label), sizeof label - strlen(label), "-1stream");
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  snprintf(device, sizeof device, "%s", cli_is_gpu(ctx) ? c->info.gpu_name : c->info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  printf("%s,%s,%s,%s,%s,%s,%lld,%lld,%lld,%lld,%g,%d,%d,%lld,%.2f,%.3f,%.3f,%.3f,%.3f,%.4g,%lld,%lld,%s",
         date, device, label, c->op == 2 && c->areas ? "overlay+areas" : op_names[c->op], base_name(c->r_path),
         base_name(c->s_path),
         (long long)ri.n_features, (long long)ri.n_edges, (long long)s_edges, (long long)n_pts, group,
         exact ? 0 : c->pad, c->planar, (long long)ist.n_groups, (double)ist.bytes / 1048576.0, g, bm, q, bm + q,
         q > 0 ? work / (q / 1e3) : 0.0, (long long)results, (long long)candidates, check);
  if (c->op >= 2)
    for (int k = 0; k < RDX_JN_N_STAGES; k++) printf(",%.3f", stage_ms[k]);
  printf("\n");
  fflush(stdout);
  n_rows++;
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  cli_context_close(ctx);
}

int cmd_bench_join(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_join_usage);
  join_cfg c;
  memset(&c, 0, sizeof c);
  if (!cli_opt(&a, "op")) cli_die(CLI_EXIT_BAD_INPUT, "--op pip|lsi is required");
  c.op = cli_choice(&a, "op", op_names, N_OPS, 0);
  c.r_path = cli_input(&a, "r", 1, NULL);
  c.s_path = cli_input(&a, "s", c.op >= 1, NULL);
  c.n_points = cli_int(&a, "points", 1, (int64_t)1 << 40, (int64_t)1 << 20);
  cli_applies(&a, "points", c.op == 0 && !c.s_path, "--op pip without --s");
  cli_list l;
  const char *bl = cli_opt(&a, "backend");
  cli_split(&l, "backend", bl ? bl : "auto");
  c.n_backends = l.n;
  for (int i = 0; i < l.n; i++) c.backends[i] = cli_parse_backend("backend", l.v[i]);
  c.n_groups = cli_double_list(&a, "group", "3.5", 1, 64, c.groups);
  c.pad = (int)cli_int(&a, "pad", 1, 64, 2);
  c.planar = cli_flag(&a, "planar");
  cli_applies(&a, "planar", c.op == 0, "--op pip");
  c.naive = cli_flag(&a, "naive");
  cli_applies(&a, "naive", c.op <= 1, "--op pip or lsi");
  c.areas = cli_flag(&a, "areas");
  cli_applies(&a, "areas", c.op == 2, "--op overlay");
  c.input_order = cli_flag(&a, "input-order");
  cli_applies(&a, "input-order", c.op == 0, "--op pip");
  c.one_stream = cli_flag(&a, "one-stream");
  cli_applies(&a, "one-stream", c.op >= 2 && c.op <= 5, "--op overlay, intersects, contains or within");
  c.reps = (int)cli_int(&a, "reps", 1, 63, 5);
  c.seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  int hdr = cli_flag(&a, "header");
  cli_args_done(&a);

  c.info.size = sizeof c.info;
  if (rdx_info_get(&c.info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  if (hdr) header(c.op);
  answers ref = {NULL, 0, NULL, 0};
  double t0 = rdx_now_ms();
  for (int i = 0; i < c.n_backends; i++)
    for (int j = 0; j < c.n_groups; j++) {
      answers exact = {NULL, 0, NULL, 0};
      run_one(&c, c.backends[i], c.groups[j], &ref, NULL, c.naive ? &exact : NULL);
      if (c.naive) run_one(&c, c.backends[i], c.groups[j], &ref, &exact, NULL);
      free(exact.v), free(exact.area);
    }
  free(ref.v), free(ref.area);
  cli_report("%d rows (--op %s) in %.1f s", n_rows, op_names[c.op], (rdx_now_ms() - t0) / 1e3);
  return 0;
}
