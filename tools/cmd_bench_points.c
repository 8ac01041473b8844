/*
 * cmd_bench_points.c: `raydex bench points`: the spatial experiments of issue 4, CSV rows on
 * stdout (usage below, which `raydex bench points --help` prints).
 *
 * Protocol (METHOD.md): inputs generated from the seed; one warm-up run, then the median of
 * --reps timed runs (updates: their mean, since some batches also relayout or grow the pool);
 * calls are synchronous, so a host clock around them covers the device work.
 * Queries (count, scan, allocate, fill: rdx_points_query_alloc) take device arrays on GPUs and
 * leave the result there; queries are not pre-sorted (kNN sorts them inside, and pays for it).
 * --size is the window side or radius; by default it is chosen for about 64 points per query on
 * uniform data. Every row has a check column:
 *   build:  bottom-up and top-down nodes equal (ok-bu=td), or root and leaf counts add up (ok-sum);
 *   query:  the index's answers equal the CPU backend's (ids, ok-cpu), or the brute-force scan's
 *           (counts; kNN ids; ok-brute), or, for batches beyond both, a prefix already checked
 *           (ok-prefix);
 *   update: after the moves, 1024 window queries answer as a fresh build over the same points.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "bench_api.h"

typedef struct cfg {
  rdx_backend backend;
  const char *exp;
  int n_kinds, n_methods, n_ns, n_where, n_queries, n_types, n_engines, n_moved;
  rdx_points_kind kinds[CLI_LIST];
  rdx_points_method methods[CLI_LIST];
  int64_t ns[CLI_LIST], queries[CLI_LIST];
  int where_host[CLI_LIST], types[CLI_LIST], engines[CLI_LIST];
  double moved[CLI_LIST];
  rdx_point_dist dist;
  const char *dist_name;
  rdx_dtype dtype;
  int cap, depth, reps, k;     /* depth 0: each kind's default */
  double size;
  int64_t brute_max, cpu_max;
  uint64_t seed;
  int resample, uniform;       /* --moves resample, --moves uniform */
  rdx_points_layout layout;    /* --layout (update), 0 = the library's default */
  const char *device;
} cfg;

enum { E_INDEX, E_BRUTE, E_CPU };
static const char *const engine_names[] = {"index", "brute", "cpu"};

static const rdx_points_query_type api_types[] = {RDX_POINTS_MATCH, RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_KNN};

static rdx_points *build(rdx_context *ctx, const cfg *c, rdx_points_kind kind, rdx_points_method method, rdx_array p) {
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = kind;
  o.method = kind == RDX_POINTS_KDTREE ? RDX_POINTS_BOTTOM_UP : method;
  o.leaf_capacity = c->cap;
  o.max_depth = c->depth;
  o.use_box = true; /* the distribution's whole domain, so moved points stay inside */
  o.layout = c->layout;
  rdx_gen_points_box(c->dist, o.box);
  rdx_points *pts = NULL;
  cli_must(ctx, rdx_points_build(ctx, p, &o, &pts), "build");
  return pts;
}

static void header(void) {
  printf("date,device,backend,exp,index,build,engine,where,dtype,dist,n,leaf_capacity,max_depth,type,queries,k,size,"
         "moved_pct,reps,ms,p1_ms,p2_ms,p3_ms,per_s,results,nodes,leaves,bytes_per_point,peak_bytes_per_point,left_leaf,"
         "splits,merges,check\n");
}

typedef struct row {
  const char *index, *build, *engine, *where, *type, *check;
  int64_t n, queries, results, nodes, leaves, left_leaf, splits, merges;
  int k, depth; /* depth: the index's max depth (k-d trees keep their default), 0 = --max-depth */
  double size, moved, ms, p[3], per_s, bytes, peak;
} row;

static int n_rows; /* rows emitted */

static void emit(const cfg *c, rdx_context *ctx, const row *r) {
  cli_progress_clear();
  n_rows++;
  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  printf("%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%lld,%d,%d,%s,%lld,%d,%.6g,%g,%d,%.4f,%.4f,%.4f,%.4f,%.6g,%lld,%lld,%lld,%.3f,%.3f,%lld,"
         "%lld,%lld,%s\n",
         date, c->device, rdx_backend_name(rdx_context_backend(ctx)), c->exp, r->index, r->build, r->engine, r->where,
         c->dtype == RDX_F32 ? "f32" : "f64", c->dist_name, (long long)r->n, c->cap, r->depth ? r->depth : c->depth, r->type ? r->type : "",
         (long long)r->queries, r->k, r->size, r->moved, c->reps, r->ms, r->p[0], r->p[1], r->p[2], r->per_s,
         (long long)r->results, (long long)r->nodes, (long long)r->leaves, r->bytes, r->peak, (long long)r->left_leaf,
         (long long)r->splits, (long long)r->merges, r->check ? r->check : "skipped");
  fflush(stdout);
}

static const char *kind_name(rdx_points_kind k) { return k == RDX_POINTS_KDTREE ? "kdtree" : "quadtree"; }
static const char *method_name(rdx_points_kind k, rdx_points_method m) {
  return k == RDX_POINTS_KDTREE ? "median" : m == RDX_POINTS_TOP_DOWN ? "topdown" : "bottomup";
}

static void describe(rdx_context *ctx, rdx_points *pts, row *r) {
  rdx_points_info info;
  info.size = sizeof info;
  cli_must(ctx, rdx_points_describe(ctx, pts, &info), "describe");
  int64_t res = 0, peak = 0;
  cli_must(ctx, rdx_points_bytes(ctx, pts, &res, &peak), "bytes");
  r->nodes = info.n_nodes;
  r->leaves = info.n_leaves;
  r->depth = info.max_depth;
  r->bytes = info.count ? (double)res / (double)info.count : 0;
  r->peak = info.count ? (double)peak / (double)info.count : 0;
}

/* Nodes equal except leaf offsets (the two build methods order points differently). */
static int same_tree(const rdx_sp_tree *a, const rdx_sp_tree *b) {
  if (a->n_nodes != b->n_nodes) return 0;
  for (int64_t i = 0; i < a->n_nodes; i++)
    if (a->key[i] != b->key[i] || a->level[i] != b->level[i] || a->leaf[i] != b->leaf[i] || a->len[i] != b->len[i] ||
        a->count[i] != b->count[i] || (!a->leaf[i] && a->fpos[i] != b->fpos[i]))
      return 0;
  return 1;
}
static int sums_ok(const rdx_sp_tree *t, const rdx_points *pts) {
  int64_t s = 0, n = rdx_points_count(pts);
  for (int64_t i = 0; i < t->n_nodes; i++)
    if (t->leaf[i]) s += t->len[i];
  return t->n_nodes > 0 && s == n && t->count[0] == n;
}
static rdx_sp_tree tree_of(rdx_context *ctx, const rdx_points *pts) {
  rdx_sp_tree t;
  cli_must(ctx, rdx_sp_tree_of(ctx, pts, &t), "nodes");
  return t;
}
/* A copy of a tree's nodes in one block (tree_free releases it), kept past its index. */
static rdx_sp_tree tree_copy(const rdx_sp_tree *t) {
  const size_t n = (size_t)t->n_nodes;
  char *b = (char *)malloc(34 * n + 1);
  if (b == NULL) cli_die(CLI_EXIT_FAILURE, "no memory for a copy of %lld nodes", (long long)t->n_nodes);
  memcpy(b, t->key, 8 * n), memcpy(b + 8 * n, t->fpos, 8 * n), memcpy(b + 16 * n, t->len, 8 * n);
  memcpy(b + 24 * n, t->count, 8 * n), memcpy(b + 32 * n, t->level, n), memcpy(b + 33 * n, t->leaf, n);
  rdx_sp_tree c = {t->n_nodes,           (const uint64_t *)b,         (const int64_t *)(b + 8 * n),
                   (const int64_t *)(b + 16 * n), (const int64_t *)(b + 24 * n), (const uint8_t *)(b + 32 * n),
                   (const uint8_t *)(b + 33 * n)};
  return c;
}
static void tree_free(rdx_sp_tree *t) {
  free((void *)t->key);
  memset(t, 0, sizeof *t);
}

/* ---- build ---- */

static void exp_build(const cfg *c, int hdr) {
  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_context *ctx = cli_context(c->backend);
  double *t = (double *)malloc(sizeof(double) * (size_t)(c->reps + 1));
  for (int ni = 0; ni < c->n_ns; ni++) {
    rdx_array ph;
    cli_must(gen, rdx_gen_points(gen, c->ns[ni], c->dist, c->dtype, c->seed + (uint64_t)ni, &ph), "points");
    rdx_array pd = cli_place(ctx, ph);
    for (int k = 0; k < c->n_kinds; k++) {
      rdx_sp_tree keep; /* the first method's nodes, which the second's must equal */
      memset(&keep, 0, sizeof keep);
      int have_keep = 0;
      for (int mi = 0; mi < c->n_methods; mi++) {
        if (c->kinds[k] == RDX_POINTS_KDTREE && mi > 0) break;
        for (int w = 0; w < c->n_where; w++) {
          rdx_array in = c->where_host[w] ? ph : pd;
          rdx_points *pts = NULL;
          double p[3] = {0, 0, 0};
          cli_progress("build: %s %s, %lld points", kind_name(c->kinds[k]), method_name(c->kinds[k], c->methods[mi]),
                       (long long)c->ns[ni]);
          for (int r = -1; r < c->reps; r++) {
            rdx_points_destroy(pts);
            double t0 = rdx_now_ms();
            pts = build(ctx, c, c->kinds[k], c->methods[mi], in);
            double ms = rdx_now_ms() - t0;
            if (r >= 0) t[r] = ms;
            const rdx_sp_stats st = rdx_sp_stats_of(pts);
            for (int i = 0; i < 3; i++) p[i] += r >= 0 ? st.phase_ms[i] / c->reps : 0;
          }
          row rr;
          memset(&rr, 0, sizeof rr);
          rr.index = kind_name(c->kinds[k]);
          rr.build = method_name(c->kinds[k], c->methods[mi]);
          rr.engine = "index";
          rr.where = c->where_host[w] || !cli_is_gpu(ctx) ? "host" : "device";
          rr.n = c->ns[ni];
          rr.ms = cli_median(t, c->reps);
          memcpy(rr.p, p, sizeof p);
          rr.per_s = rr.n / (rr.ms / 1e3);
          describe(ctx, pts, &rr);
          const rdx_sp_tree tree = tree_of(ctx, pts);
          rr.check = sums_ok(&tree, pts) ? "ok-sum" : "WRONG";
          if (sums_ok(&tree, pts) && c->kinds[k] == RDX_POINTS_QUADTREE) {
            if (!have_keep) {
              keep = tree_copy(&tree);
              have_keep = 1;
            } else {
              rr.check = same_tree(&keep, &tree) ? "ok-bu=td" : "WRONG";
            }
          }
          if (hdr) header(), hdr = 0;
          emit(c, ctx, &rr);
          rdx_points_destroy(pts);
          if (strcmp(rr.check, "WRONG") == 0) cli_die(CLI_EXIT_FAILURE, "build check failed at n %lld", (long long)rr.n);
        }
      }
      if (have_keep) tree_free(&keep);
    }
    cli_unplace(ctx, pd);
    rdx_npy_free(&ph);
  }
  free(t);
  cli_context_close(ctx);
  cli_context_close(gen);
}

/* ---- query ---- */

typedef struct answer {
  int64_t m;
  uint64_t *offsets, *rows; /* host copies */
  uint64_t total;
} answer;

static void answer_free(answer *a) {
  free(a->offsets);
  free(a->rows);
  memset(a, 0, sizeof *a);
}

static answer fetch(rdx_context *ctx, const rdx_result *r) {
  answer a;
  a.m = r->n_queries;
  a.total = r->total;
  a.offsets = (uint64_t *)malloc((size_t)(a.m + 1) * 8);
  a.rows = (uint64_t *)malloc((size_t)(a.total + 1) * 8);
  cli_must(ctx, rdx_copy(ctx, a.offsets, RDX_HOST, r->offsets, r->where, (size_t)(a.m + 1) * 8), "copy back");
  cli_must(ctx, rdx_copy(ctx, a.rows, RDX_HOST, r->row_ids, r->where, (size_t)a.total * 8), "copy back");
  return a;
}

/* Does the first a.m queries' answer of `big` equal `a`? */
static int same_prefix(const answer *a, const answer *big) {
  if (big->m < a->m) return 0;
  if (memcmp(a->offsets, big->offsets, (size_t)(a->m + 1) * 8) != 0) return 0;
  return memcmp(a->rows, big->rows, (size_t)a->total * 8) == 0;
}

static void exp_query(const cfg *c, int hdr) {
  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_context *ctx = cli_context(c->backend);
  rdx_context *cpu = NULL;
  for (int e = 0; e < c->n_engines; e++)
    if (c->engines[e] == E_CPU) cpu = cli_context(RDX_BACKEND_CPU);
  int64_t mmax = 0;
  for (int i = 0; i < c->n_queries; i++)
    if (c->queries[i] > mmax) mmax = c->queries[i];
  double *t = (double *)malloc(sizeof(double) * (size_t)(c->reps + 1));
  for (int ni = 0; ni < c->n_ns; ni++) {
    int64_t n = c->ns[ni];
    rdx_array ph;
    cli_must(gen, rdx_gen_points(gen, n, c->dist, c->dtype, c->seed + (uint64_t)ni, &ph), "points");
    rdx_array pd = cli_place(ctx, ph);
    /* about 64 points per window or circle on uniform data */
    double side = c->dist == RDX_PDIST_TAXI ? 154000.0 : 1.0;
    double size = c->size > 0 ? c->size : side * sqrt(64.0 / (n > 0 ? (double)n : 1.0));
    for (int k = 0; k < c->n_kinds; k++) {
      rdx_points *pts = build(ctx, c, c->kinds[k], c->methods[0], pd);
      rdx_points *cpts = cpu ? build(cpu, c, c->kinds[k], c->methods[0], ph) : NULL;
      for (int ti = 0; ti < c->n_types; ti++) {
        int type = c->types[ti];
        double qsize = type == 2 ? size / 2 : size; /* radius: half the window side */
        rdx_array qh;
        cli_must(gen, rdx_gen_point_queries(gen, ph, type, mmax, qsize, c->seed + 100 + (uint64_t)type, &qh), "queries");
        rdx_points_query pq = RDX_POINTS_QUERY_INIT;
        pq.type = api_types[type];
        pq.k = c->k;
        answer checked; /* the largest batch checked so far (a prefix of later ones) */
        memset(&checked, 0, sizeof checked);
        for (int mi = 0; mi < c->n_queries; mi++) {
          int64_t m = c->queries[mi];
          cli_progress("query: %s, %lld %s queries over %lld points", kind_name(c->kinds[k]), (long long)m, cli_query_types[type],
                       (long long)n);
          rdx_array qm = qh;
          qm.count = m;
          answer idx_ans;
          memset(&idx_ans, 0, sizeof idx_ans);
          row index_row;
          memset(&index_row, 0, sizeof index_row);
          int have_index_row = 0;
          const char *index_check = "skipped";
          for (int e = 0; e < c->n_engines; e++) {
            int eng = c->engines[e];
            if (eng == E_BRUTE && (!cli_is_gpu(ctx) || m > c->brute_max || (type == 3 && m > c->brute_max / 16))) continue;
            if (eng == E_CPU && (!cpts || m > c->cpu_max)) continue;
            row rr;
            memset(&rr, 0, sizeof rr);
            rr.index = kind_name(c->kinds[k]);
            rr.build = method_name(c->kinds[k], c->methods[0]);
            rr.engine = engine_names[eng];
            rr.where = eng == E_CPU || !cli_is_gpu(ctx) ? "host" : "device";
            rr.type = cli_query_types[type];
            rr.n = n, rr.queries = m, rr.k = type == 3 ? c->k : 0, rr.size = type == 3 || type == 0 ? 0 : qsize;
            int reps = eng == E_BRUTE ? (c->reps < 2 ? c->reps : 2) : c->reps;
            if (eng == E_BRUTE) { /* no index: every query against every point, on the GPU */
              rdx_array qd = cli_place(ctx, qm);
              uint64_t *d = NULL;
              size_t outn = type == 3 ? (size_t)m * (size_t)c->k : (size_t)m;
              cli_must(ctx, rdx_malloc(ctx, (void **)&d, (outn ? outn : 1) * 8, RDX_DEVICE), "brute output");
              for (int r = -1; r < reps; r++) {
                double t0 = rdx_now_ms();
                rdx_status st = type == 3 ? bench_brute_knn(ctx, pd.data, c->dtype == RDX_F64, n, qd.data, m, c->k, d)
                                          : bench_brute_count(ctx, pd.data, c->dtype == RDX_F64, n, type, qd.data, m, d);
                cli_must(ctx, st, "brute force");
                if (r >= 0) t[r] = rdx_now_ms() - t0;
              }
              rr.ms = cli_median(t, reps);
              uint64_t *h = (uint64_t *)malloc((outn ? outn : 1) * 8);
              cli_must(ctx, rdx_copy(ctx, h, RDX_HOST, d, RDX_DEVICE, outn * 8), "copy back");
              int ok = idx_ans.offsets != NULL;
              uint64_t kk = (uint64_t)(n < c->k ? n : c->k);
              for (int64_t i = 0; ok && i < m; i++) {
                uint64_t cnt = idx_ans.offsets[i + 1] - idx_ans.offsets[i];
                if (type == 3) ok = cnt == kk && memcmp(idx_ans.rows + idx_ans.offsets[i], h + (size_t)i * (size_t)c->k, kk * 8) == 0;
                else ok = cnt == h[i];
              }
              rr.results = 0;
              for (int64_t i = 0; i < m && type != 3; i++) rr.results += (int64_t)h[i];
              if (type == 3) rr.results = (int64_t)kk * m;
              /* without an index row in this invocation there is nothing to compare with */
              rr.check = idx_ans.offsets == NULL ? "skipped" : ok ? "ok" : "WRONG";
              free(h);
              rdx_free(ctx, d, RDX_DEVICE);
              cli_unplace(ctx, qd);
            } else {
              rdx_context *ec = eng == E_CPU ? cpu : ctx;
              rdx_points *ep = eng == E_CPU ? cpts : pts;
              rdx_array qd = eng == E_CPU ? qm : cli_place(ctx, qm);
              rdx_result *res = NULL;
              for (int r = -1; r < reps; r++) {
                rdx_result_free(ec, res);
                res = NULL;
                double t0 = rdx_now_ms();
                cli_must(ec, rdx_points_query_alloc(ec, ep, qd, &pq, &res), "query");
                if (r >= 0) t[r] = rdx_now_ms() - t0;
              }
              rr.ms = cli_median(t, reps);
              rr.results = (int64_t)res->total;
              answer a = fetch(ec, res);
              rdx_result_free(ec, res);
              cli_unplace(ctx, qd); /* a no-op for host arrays */
              if (eng == E_INDEX) {
                idx_ans = a;
                rr.check = checked.offsets && same_prefix(&checked, &idx_ans) ? "ok-prefix" : NULL;
              } else { /* the CPU backend: ids must agree exactly */
                int ok = idx_ans.offsets && idx_ans.total == a.total &&
                         memcmp(idx_ans.offsets, a.offsets, (size_t)(m + 1) * 8) == 0 &&
                         memcmp(idx_ans.rows, a.rows, (size_t)a.total * 8) == 0;
                rr.check = ok ? "ok" : "WRONG";
                if (ok) {
                  answer_free(&checked);
                  checked = a;
                  memset(&a, 0, sizeof a);
                }
                answer_free(&a);
              }
            }
            rr.per_s = m / (rr.ms / 1e3);
            if (eng == E_INDEX) {
              describe(ctx, pts, &rr);
              index_row = rr;
              have_index_row = 1;
              continue;
            }
            if (rr.check && strcmp(rr.check, "WRONG") == 0) {
              fprintf(stderr, "raydex bench points: %s %s %s at %lld queries disagrees with the index\n", rr.index, rr.type,
                      rr.engine, (long long)m);
              index_check = "WRONG";
            } else if (rr.check && strcmp(rr.check, "skipped") != 0 && strcmp(index_check, "WRONG") != 0) {
              index_check = eng == E_CPU ? "ok-cpu" : "ok-brute";
            }
            if (hdr) header(), hdr = 0;
            emit(c, eng == E_CPU ? cpu : ctx, &rr);
          }
          if (have_index_row) {
            if (strcmp(index_check, "skipped") != 0 || index_row.check == NULL) index_row.check = index_check;
            if (hdr) header(), hdr = 0;
            emit(c, ctx, &index_row);
          }
          if (checked.offsets == NULL && idx_ans.offsets != NULL && !cli_is_gpu(ctx)) { /* a CPU run checks itself by prefix */
            checked = idx_ans;
            memset(&idx_ans, 0, sizeof idx_ans);
          }
          answer_free(&idx_ans);
        }
        answer_free(&checked);
        rdx_npy_free(&qh);
      }
      rdx_points_destroy(pts);
      rdx_points_destroy(cpts);
    }
    cli_unplace(ctx, pd);
    rdx_npy_free(&ph);
  }
  free(t);
  if (cpu) cli_context_close(cpu);
  cli_context_close(ctx);
  cli_context_close(gen);
}

/* ---- update ---- */

/* The engine column of update rows: the moves' kind (resample, uniform), then the layout when
 * --layout names one, e.g. update-dense or update-uniform-paged. The layout decides the engine;
 * batches too large for it rebuild (the stderr line counts them). */
static const char *update_engine(const cfg *c) {
  static char name[40];
  const char *lay = c->layout == RDX_POINTS_DENSE ? "-dense" : c->layout == RDX_POINTS_PAGED ? "-paged" : "";
  snprintf(name, sizeof name, "update%s%s", c->resample ? "-resample" : c->uniform ? "-uniform" : "", lay);
  return name;
}

/* Points uniform in the unit square, spread over the distribution's box (--moves uniform). */
static void to_box(rdx_array *a, rdx_point_dist dist) {
  double b[4];
  rdx_gen_points_box(dist, b);
  for (int64_t i = 0; i < 2 * a->count; i++) {
    int d = (int)(i & 1);
    if (a->dtype == RDX_F64) {
      double *v = (double *)a->data + i;
      *v = fmin(b[d] + *v * (b[d + 2] - b[d]), b[d + 2]);
    } else {
      float *v = (float *)a->data + i;
      *v = (float)fmin(b[d] + (double)*v * (b[d + 2] - b[d]), b[d + 2]);
    }
  }
}

static void exp_update(const cfg *c, int hdr) {
  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_context *ctx = cli_context(c->backend);
  double *t = (double *)malloc(sizeof(double) * (size_t)(c->reps + 1));
  for (int ni = 0; ni < c->n_ns; ni++) {
    int64_t n = c->ns[ni];
    /* --moves resample: rows n .. n + extra of the same generator (its first n rows are the
     * index's points, whatever the count) are the pool of fresh places */
    int64_t extra = 0;
    for (int mi = 0; c->resample && mi < c->n_moved; mi++) {
      int64_t m = (int64_t)llround((double)n * c->moved[mi] / 100.0);
      if (2 * m + 1 > extra) extra = 2 * m + 1;
    }
    rdx_array ph;
    cli_must(gen, rdx_gen_points(gen, n + extra, c->dist, c->dtype, c->seed + (uint64_t)ni, &ph), "points");
    rdx_array base = ph;
    base.count = n;
    rdx_array pd = cli_place(ctx, base);
    for (int k = 0; k < c->n_kinds; k++) {
      /* the rebuild baseline: a build from scratch of n points already in device memory */
      rdx_points *pts = NULL;
      for (int r = -1; r < c->reps; r++) {
        rdx_points_destroy(pts);
        double t0 = rdx_now_ms();
        pts = build(ctx, c, c->kinds[k], c->methods[0], pd);
        if (r >= 0) t[r] = rdx_now_ms() - t0;
      }
      row rb;
      memset(&rb, 0, sizeof rb);
      rb.index = kind_name(c->kinds[k]);
      rb.build = method_name(c->kinds[k], c->methods[0]);
      rb.engine = "rebuild";
      rb.where = cli_is_gpu(ctx) ? "device" : "host";
      rb.n = n;
      rb.ms = cli_median(t, c->reps);
      rb.per_s = n / (rb.ms / 1e3);
      describe(ctx, pts, &rb);
      const rdx_sp_tree tree = tree_of(ctx, pts);
      rb.check = sums_ok(&tree, pts) ? "ok-sum" : "WRONG";
      if (hdr) header(), hdr = 0;
      emit(c, ctx, &rb);
      int64_t *perm = (int64_t *)malloc((size_t)(n ? n : 1) * 8);
      uint64_t *ids = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
      for (int64_t i = 0; i < n; i++) perm[i] = i;
      uint64_t rs = c->seed * 977 + 5;
      for (int mi = 0; mi < c->n_moved; mi++) {
        int64_t m = (int64_t)llround((double)n * c->moved[mi] / 100.0);
        if (m < 1) m = 1;
        if (m > n) m = n;
        int64_t left = 0, splits = 0, merges = 0;
        double p[3] = {0, 0, 0}; /* spatial.h, rdx_sp_stats.phase_ms */
        cli_progress("update: %s, %g%% of %lld points moved", kind_name(c->kinds[k]), c->moved[mi], (long long)n);
        int64_t relayouts = 0, growths = 0, rebuilds = 0;
        for (int r = -1; r < c->reps; r++) {
          /* m distinct random ids (partial Fisher-Yates) to fresh places (see --moves) */
          for (int64_t i = 0; i < m; i++) {
            rs = rs * 6364136223846793005ull + 1442695040888963407ull;
            int64_t j = i + (int64_t)((rs >> 11) % (uint64_t)(n - i));
            int64_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
            ids[i] = (uint64_t)perm[i];
          }
          rdx_array np;
          if (c->resample) { /* m consecutive rows of the pool, from a random start */
            rs = rs * 6364136223846793005ull + 1442695040888963407ull;
            int64_t off = n + (int64_t)((rs >> 11) % (uint64_t)(extra - m + 1));
            size_t row_bytes = 2 * (c->dtype == RDX_F64 ? 8 : 4);
            np = rdx_host_matrix((const char *)ph.data + (size_t)off * row_bytes, m, 2, c->dtype);
          } else {
            uint64_t seed = c->seed * 31 + (uint64_t)(mi * 1000 + r + 7);
            cli_must(gen, rdx_gen_points(gen, m, c->uniform ? RDX_PDIST_UNIFORM : c->dist, c->dtype, seed, &np), "moves");
            if (c->uniform) to_box(&np, c->dist);
          }
          rdx_array idd = cli_place(ctx, rdx_host_array(ids, m, RDX_U64)), npd = cli_place(ctx, np);
          const rdx_sp_stats was = rdx_sp_stats_of(pts);
          double t0 = rdx_now_ms();
          cli_must(ctx, rdx_points_move(ctx, pts, idd, npd), "move");
          double ms = rdx_now_ms() - t0;
          if (r >= 0) {
            const rdx_sp_stats st = rdx_sp_stats_of(pts);
            t[r] = ms;
            relayouts += st.relayouts - was.relayouts, growths += st.growths - was.growths, rebuilds += st.rebuilt;
            left += st.left_leaf, splits += st.splits, merges += st.merges;
            for (int i = 0; i < 3; i++) p[i] += st.phase_ms[i] / c->reps;
          }
          cli_unplace(ctx, idd);
          cli_unplace(ctx, npd);
          if (!c->resample) rdx_npy_free(&np);
        }
        row ru;
        memset(&ru, 0, sizeof ru);
        ru.index = rb.index, ru.build = rb.build, ru.engine = update_engine(c), ru.where = cli_is_gpu(ctx) ? "device" : "host";
        ru.n = n, ru.moved = c->moved[mi], ru.queries = m;
        /* The mean, not the median: a paged quadtree spreads its pool out again (a relayout) or
         * grows it every few batches, and a median would hide those batches' cost. */
        double mean = 0;
        for (int r = 0; r < c->reps; r++) mean += t[r] / c->reps;
        ru.ms = mean;
        const double med = cli_median(t, c->reps);
        cli_progress_clear();
        fprintf(stderr, "# update %s %g%%: mean %.4f ms, median %.4f ms, max %.4f ms, %lld rebuilds, %lld relayouts and "
                "%lld pool growths in %d batches\n", update_engine(c), c->moved[mi], mean, med, t[c->reps - 1],
                (long long)rebuilds, (long long)relayouts, (long long)growths, c->reps);
        memcpy(ru.p, p, sizeof p);
        ru.per_s = m / (ru.ms / 1e3);
        ru.left_leaf = left / c->reps, ru.splits = splits / c->reps, ru.merges = merges / c->reps;
        describe(ctx, pts, &ru);
        /* check: window queries against a fresh build over the points now in the index */
        double *x = (double *)malloc((size_t)(n ? n : 1) * 8), *y = (double *)malloc((size_t)(n ? n : 1) * 8);
        uint64_t *id = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
        cli_must(ctx, rdx_sp_export_points(ctx, pts, x, y, id), "export");
        rdx_array cur;
        cli_must(gen, rdx_gen_points(gen, n, c->dist, c->dtype, 0, &cur), "points");
        for (int64_t i = 0; i < n; i++) {
          if (c->dtype == RDX_F64) ((double *)cur.data)[2 * id[i]] = x[i], ((double *)cur.data)[2 * id[i] + 1] = y[i];
          else ((float *)cur.data)[2 * id[i]] = (float)x[i], ((float *)cur.data)[2 * id[i] + 1] = (float)y[i];
        }
        rdx_points *fresh = build(ctx, c, c->kinds[k], c->methods[0], cur);
        rdx_array qh;
        double side = c->dist == RDX_PDIST_TAXI ? 154000.0 : 1.0;
        cli_must(gen, rdx_gen_point_queries(gen, cur, 1, 1024, side * sqrt(64.0 / (double)n), c->seed + 9, &qh), "queries");
        rdx_points_query pq = RDX_POINTS_QUERY_INIT;
        rdx_result *ra = NULL, *rf = NULL;
        cli_must(ctx, rdx_points_query_alloc(ctx, pts, qh, &pq, &ra), "check query");
        cli_must(ctx, rdx_points_query_alloc(ctx, fresh, qh, &pq, &rf), "check query");
        int ok = ra->total == rf->total && memcmp(ra->offsets, rf->offsets, 1025 * 8) == 0 &&
                 memcmp(ra->row_ids, rf->row_ids, ra->total * 8) == 0;
        ru.check = ok ? "ok-fresh" : "WRONG";
        rdx_result_free(ctx, ra);
        rdx_result_free(ctx, rf);
        rdx_points_destroy(fresh);
        rdx_npy_free(&qh);
        rdx_npy_free(&cur);
        free(x), free(y), free(id);
        emit(c, ctx, &ru);
        if (!ok) cli_die(CLI_EXIT_FAILURE, "updates of %g%% gave answers that differ from a fresh build", c->moved[mi]);
      }
      free(perm);
      free(ids);
      rdx_points_destroy(pts);
    }
    cli_unplace(ctx, pd);
    rdx_npy_free(&ph);
  }
  free(t);
  cli_context_close(ctx);
  cli_context_close(gen);
}

/* ---- options ---- */

const char cli_bench_points_usage[] =
    "usage: raydex bench points --exp build|query|update [--backend auto|cpu|cuda] [--index quadtree,kdtree]\n"
    "            [--build bottomup,topdown] [--n 2^20,...] [--dist uniform|clustered|taxi] [--dtype f64|f32]\n"
    "            [--leaf-capacity 200 (query: 1024)] [--max-depth 16 (k-d tree: 48)] [--reps 3] [--seed 1]\n"
    "            [--header] [--quiet]\n"
    "   build:   [--where device,host]     device: points already in GPU memory (the default); host:\n"
    "                                      the call copies them in (end to end)\n"
    "   query:   [--queries 2^16,...] [--type window,within,match,knn] [--k 16] [--size S]\n"
    "            [--engine index,brute,cpu] [--brute-max 2^16] [--cpu-max 2^20]\n"
    "   update:  [--moved 1,10]            percent of the points moved per batch, against a rebuild\n"
    "            [--moves relocate|resample|uniform]  where they go: relocate (default) to another\n"
    "                                      hot-spot layout of the generator; resample to fresh samples\n"
    "                                      of the index's own layout; uniform in the box (G-PICS's\n"
    "                                      experiment)\n"
    "            [--layout paged|dense]    the indexes' layout (default: paged, and dense for k-d trees on a\n"
    "                                      GPU; dense needs a GPU)\n"
    "\n"
    "Lists are comma-separated; every combination gives one CSV row on stdout, with a check column\n"
    "(the answers compared with another engine or a fresh build). Defaults: quadtree, bottomup,\n"
    "uniform f64 points, window queries, the index engine. --build applies to quadtrees, a list of\n"
    "methods to --exp build only (query and update build with one); --k to knn; --size (the side or\n"
    "radius, default about 64 points a query on uniform data) to window and within; --brute-max and\n"
    "--cpu-max (the largest batch those engines answer) to their engines; brute needs a GPU.\n"
    "Timings are medians of --reps runs after a warm-up; updates report the mean of --reps batches.\n";

static const char *const exp_names[] = {"build", "query", "update"};
static const char *const where_names[] = {"device", "host"};
static const char *const moves_names[] = {"relocate", "resample", "uniform"};
static const char *const layout_names[] = {"paged", "dense"};

int cmd_bench_points(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_points_usage);
  cfg c;
  memset(&c, 0, sizeof c);
  int v[CLI_LIST];
  if (!cli_opt(&a, "exp")) cli_die(CLI_EXIT_BAD_INPUT, "--exp build|query|update is required");
  int exp = cli_choice(&a, "exp", exp_names, 3, 0);
  c.exp = exp_names[exp];
  c.backend = cli_backend(&a, "backend");
  if (c.backend == RDX_BACKEND_OPTIX) cli_die(CLI_EXIT_BAD_INPUT, "--backend optix runs key indexes only; use cuda for points");
  int quadtree = 0;
  c.n_kinds = cli_choice_list(&a, "index", "quadtree", cli_point_indexes, 2, v);
  for (int i = 0; i < c.n_kinds; i++) c.kinds[i] = v[i] ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE, quadtree |= !v[i];
  c.n_methods = cli_choice_list(&a, "build", "bottomup", cli_point_builds, 2, v);
  for (int i = 0; i < c.n_methods; i++) c.methods[i] = v[i] ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
  cli_applies(&a, "build", quadtree && (exp == 0 || c.n_methods == 1), "--index quadtree (a list: with --exp build)");
  c.n_ns = cli_int_list(&a, "n", "2^20", 0, INT64_MAX, c.ns);
  int dist = cli_choice(&a, "dist", cli_point_dists, 3, 0);
  c.dist = (rdx_point_dist)(dist + 1);
  c.dist_name = cli_point_dists[dist];
  c.dtype = cli_choice(&a, "dtype", cli_point_dtypes, 2, 0) ? RDX_F32 : RDX_F64;
  c.n_where = cli_choice_list(&a, "where", "device", where_names, 2, c.where_host);
  c.n_queries = cli_int_list(&a, "queries", "2^16", 1, INT64_MAX, c.queries);
  c.n_types = cli_choice_list(&a, "type", "window", cli_query_types, 4, c.types);
  c.n_engines = cli_choice_list(&a, "engine", "index", engine_names, 3, c.engines);
  c.n_moved = cli_double_list(&a, "moved", "1,10", 0, 100, c.moved);
  c.cap = (int)cli_int(&a, "leaf-capacity", 1, 1 << 30, exp == 1 ? 1024 : 200);
  c.depth = (int)cli_int(&a, "max-depth", 1, quadtree ? RDX_SP_MAX_QT_DEPTH : RDX_SP_MAX_KD_DEPTH, 0);
  c.reps = (int)cli_int(&a, "reps", 1, 1 << 20, 3);
  c.k = (int)cli_int(&a, "k", 1, RDX_SP_MAX_K, 16);
  c.size = cli_double(&a, "size", 0, HUGE_VAL, 0);
  c.brute_max = cli_int(&a, "brute-max", 0, INT64_MAX, (int64_t)1 << 16);
  c.cpu_max = cli_int(&a, "cpu-max", 0, INT64_MAX, (int64_t)1 << 20);
  c.seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  int moves = cli_choice(&a, "moves", moves_names, 3, 0);
  c.resample = moves == 1;
  c.uniform = moves == 2;
  const int layout = cli_choice(&a, "layout", layout_names, 2, -1);
  c.layout = layout < 0 ? (rdx_points_layout)0 : layout ? RDX_POINTS_DENSE : RDX_POINTS_PAGED;
  int hdr = cli_flag(&a, "header");
  /* options that apply to no entry of the lists are refused, not ignored */
  int has_type[4] = {0}, has_engine[3] = {0};
  for (int i = 0; i < c.n_types; i++) has_type[c.types[i]] = 1;
  for (int i = 0; i < c.n_engines; i++) has_engine[c.engines[i]] = 1;
  cli_applies(&a, "where", exp == 0, "--exp build");
  cli_applies(&a, "queries", exp == 1, "--exp query");
  cli_applies(&a, "type", exp == 1, "--exp query");
  cli_applies(&a, "engine", exp == 1, "--exp query");
  cli_applies(&a, "k", exp == 1 && has_type[3], "--exp query --type knn");
  cli_applies(&a, "size", exp == 1 && (has_type[1] || has_type[2]), "--exp query --type window or within");
  cli_applies(&a, "brute-max", exp == 1 && has_engine[E_BRUTE], "--exp query --engine brute");
  cli_applies(&a, "cpu-max", exp == 1 && has_engine[E_CPU], "--exp query --engine cpu");
  cli_applies(&a, "moved", exp == 2, "--exp update");
  cli_applies(&a, "moves", exp == 2, "--exp update");
  cli_applies(&a, "layout", exp == 2, "--exp update");
  /* the index runs first: brute and cpu rows are checked against it */
  for (int i = 0; i < c.n_engines; i++)
    if (c.engines[i] == E_INDEX && i > 0) c.engines[i] = c.engines[0], c.engines[0] = E_INDEX;
  /* the largest point set (generated, and placed on a GPU), its largest build, and the largest
   * batch with answers of 64 points a query (k for kNN) from two engines */
  int64_t n_max = 0, m_max = 0;
  for (int i = 0; i < c.n_ns; i++) n_max = c.ns[i] > n_max ? c.ns[i] : n_max;
  for (int i = 0; i < c.n_queries && exp == 1; i++) m_max = c.queries[i] > m_max ? c.queries[i] : m_max;
  double points_need = (double)n_max * 32 * (exp == 2 ? 2 : 1) + cli_points_peak_bytes(quadtree ? RDX_POINTS_QUADTREE : RDX_POINTS_KDTREE, (double)n_max, c.backend);
  double query_need = (double)m_max * (32 + 2 * 8 * (c.k > 64 ? c.k : 64));
  cli_need_memory(&a, points_need >= query_need ? "n" : "queries", points_need + query_need);
  cli_args_done(&a);

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  rdx_context *probe = cli_context(c.backend);
  int gpu = cli_is_gpu(probe);
  char label[32];
  cli_backend_label(label, probe, c.backend);
  cli_context_close(probe);
  if (exp == 1 && has_engine[E_BRUTE] && !gpu) cli_die(CLI_EXIT_BAD_INPUT, "--engine brute runs on a GPU backend only");
  static char device[160];
  snprintf(device, sizeof device, "%s", gpu ? info.gpu_name : info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  c.device = device;
  double t0 = rdx_now_ms();
  if (exp == 0) exp_build(&c, hdr);
  else if (exp == 1) exp_query(&c, hdr);
  else exp_update(&c, hdr);
  cli_report("%d rows (--exp %s) on %s in %.1f s", n_rows, c.exp, label, (rdx_now_ms() - t0) / 1e3);
  return 0;
}
