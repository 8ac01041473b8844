/*
 * cmd_bench_points_gpus.c: `raydex bench points --gpus N,...`: a distributed point index
 * (rdx_dist_points, G-PICS on several ranks) over N GPUs of this process (rdx_comm_create_local,
 * one thread and one cuda context per GPU), built and queried with batches of window, within,
 * kNN and match queries, beside one GPU's plain rdx_points index over the same points (issue 33's
 * strong and weak scaling for point indexes; usage below).
 *
 * Inputs: n points of `raydex bench points`'s generator and distributions (rdx_gen_points; taxi
 * by default, about 1.7e8 pickups as in a year of NYC yellow cabs), rank r building from its
 * slice of them with implied ids (so ids are positions, as the plain index numbers them), and m
 * queries of each type (rdx_gen_point_queries), rank r answering its slice; each rank's slices
 * placed in its context's memory (its GPU's) before any clock starts. --weak makes n and m per
 * rank. The build is timed once; each query type gets one warm-up, then the median of --reps
 * runs; a run is timed on rank 0 between two barriers of all ranks, so it is the slowest rank's
 * time. check: every answer of the last run read back and compared with the plain index's (the
 * same counts and the same ids in the same order: ascending per query, kNN by distance then id).
 * --backend cpu runs the same on CPU contexts (--threads each), for testing where no GPU is.
 *
 * Window sides and radii are bench points' (about 64 points per query on uniform data, the side
 * shrinking as 1 / sqrt(n)); on taxi points the hot spots and taxi stands give far more, and more
 * as n grows (27,500 a window at 2^22 points, about 46,000 at 2^25), so no size gives every n the
 * same count. The plain index therefore runs first, and before its timed runs it counts each
 * batch (the count pass, which allocates no results): a batch of more than --max-results results
 * is refused, naming the count and the --queries that would fit, before anything is allocated for
 * the results (2^25 points and 2^18 windows would make 1.2e10, whose sort asked a GPU for 98 GB:
 * bench/results/NVIDIA-H200/gpus/README.md).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

const char cli_bench_points_gpus_usage[] =
    "usage: raydex bench points --gpus N[,N...] [--backend cuda|cpu] [--index quadtree|kdtree]\n"
    "                           [--build bottomup|topdown] [--dist taxi|uniform|clustered] [--dtype f64|f32]\n"
    "                           [--n 1.7e8] [--queries 2^22] [--type window,within,knn,match] [--k 16]\n"
    "                           [--size S] [--leaf-capacity 1024] [--max-depth D] [--weak] [--reps 3]\n"
    "                           [--seed 1] [--threads 2] [--max-results 2^31] [--header]\n"
    "A distributed point index (rdx_dist_points) over N GPUs of this process, one thread and one cuda\n"
    "context per GPU (rank r on GPU r modulo the GPUs visible), built from --n points of bench points'\n"
    "generator (implied ids) and queried with --queries queries of each --type, each rank's share in\n"
    "its GPU's memory. --weak: --n and --queries per GPU. Rows, per N and type: the sharded index (path\n"
    "sharded) and a plain index on GPU 0 (path index, N 1) over the same points and queries. Columns:\n"
    "build ms (once), query ms (median of --reps after one warm-up, timed between barriers of all\n"
    "ranks), queries per second, results, speedups over the plain index, check (every answer of the\n"
    "sharded index equal to the plain index's), then where the last run's time went (the slowest\n"
    "rank's ms in the exchanges; the busiest and the idlest shard's ms answering its part).\n"
    "--size: window side or radius (default: about 64 points per query on uniform data, as bench\n"
    "points; taxi points give many more). --max-results:\n"
    "a batch whose results (counted first) exceed it is refused before it runs. --backend cpu: CPU\n"
    "contexts of --threads threads instead of GPUs (tests; small sizes).\n";

enum { MAX_RANKS = 64 };

static const rdx_points_query_type api_types[4] = {RDX_POINTS_MATCH, RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_KNN};

typedef struct pgpus_run {
  int n_ranks, reps, gpu, n_types, k;
  int types[4];
  double qsize[4];                     /* each type's window side or radius (0: none) */
  uint64_t max_results;                /* --max-results: the most results a batch may have */
  rdx_points_options opts;
  rdx_context *ctxs[MAX_RANKS];
  rdx_comm *comms[MAX_RANKS];
  rdx_dist_points *dp[MAX_RANKS];
  rdx_array pts;                       /* host, every point */
  rdx_array q[4];                      /* host, every query of each type */
  rdx_array pts_on[MAX_RANKS];         /* each rank's points in its context's memory */
  rdx_array q_on[4][MAX_RANKS];        /* its queries of each type */
  int64_t p_from[MAX_RANKS + 1], q_from[MAX_RANKS + 1];
  rdx_result *res[4][MAX_RANKS];       /* each rank's answers of the last run of each type */
  pthread_barrier_t bar;
  double build_ms[MAX_RANKS], query_ms[4][MAX_RANKS];
  double exchange_ms[4][MAX_RANKS], shard_ms[4][MAX_RANKS]; /* each rank's, in the last run of a type */
  rdx_status st[MAX_RANKS];
} pgpus_run;

typedef struct { pgpus_run *run; int rank; } rank_arg;

static rdx_array rows_slice(rdx_array a, int64_t from, int64_t to) {
  rdx_array s = a;
  s.data = (char *)a.data + (size_t)from * (size_t)a.columns * rdx_dtype_size(a.dtype);
  s.count = to - from;
  return s;
}

/* One rank: the build, then per type a warm-up and --reps timed batches; the last batch's
 * answers kept. Every rank makes the same calls in the same order (collective), also after a
 * failure, which fails the call on every rank. */
static void *rank_main(void *p) {
  rank_arg *ra = (rank_arg *)p;
  pgpus_run *r = ra->run;
  const int me = ra->rank;
  rdx_comm *comm = r->comms[me];
  pthread_barrier_wait(&r->bar);
  double t0 = rdx_now_ms();
  rdx_status st = rdx_dist_points_build(comm, r->pts_on[me], rdx_no_array(), &r->opts, &r->dp[me]);
  pthread_barrier_wait(&r->bar);
  r->build_ms[me] = rdx_now_ms() - t0;
  double times[MAX_RANKS];
  for (int ti = 0; st == RDX_OK && ti < r->n_types; ti++) {
    const int type = r->types[ti];
    rdx_points_query pq = RDX_POINTS_QUERY_INIT;
    pq.type = api_types[type];
    pq.k = r->k;
    for (int i = 0; st == RDX_OK && i <= r->reps; i++) {
      rdx_result_free(r->ctxs[me], r->res[type][me]);
      r->res[type][me] = NULL;
      pthread_barrier_wait(&r->bar);
      t0 = rdx_now_ms();
      st = rdx_dist_points_query_alloc(comm, r->dp[me], r->q_on[type][me], &pq, &r->res[type][me]);
      pthread_barrier_wait(&r->bar);
      if (i > 0) times[i - 1] = rdx_now_ms() - t0;
    }
    if (st == RDX_OK) r->query_ms[type][me] = cli_median(times, r->reps);
    r->exchange_ms[type][me] = rdx_dist_exchange_ms(r->ctxs[me]);
    r->shard_ms[type][me] = rdx_dist_shard_ms(r->ctxs[me]);
  }
  r->st[me] = st;
  return NULL;
}

/* A result's counts and ids on the host: counts into counts[0..n_queries), ids appended at
 * ids + *n_ids (room checked by the caller through the counts). */
static void result_to_host(rdx_context *ctx, const rdx_result *res, uint64_t *counts, uint64_t **ids, int64_t *n_ids,
                           int64_t *cap_ids) {
  const int64_t m = res->n_queries;
  uint64_t *off = (uint64_t *)malloc((size_t)(m + 1) * 8);
  if (off == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory for %lld offsets", (long long)m);
  cli_must(ctx, rdx_copy(ctx, off, RDX_HOST, res->offsets, res->where, (size_t)(m + 1) * 8), "offsets to the host");
  for (int64_t i = 0; i < m; i++) counts[i] = off[i + 1] - off[i];
  if (*n_ids + (int64_t)res->total > *cap_ids) {
    int64_t cap = (*n_ids + (int64_t)res->total) * 2 + 1;
    uint64_t *grown = (uint64_t *)realloc(*ids, (size_t)cap * 8);
    if (grown == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory for %lld ids", (long long)cap);
    *ids = grown, *cap_ids = cap;
  }
  if (res->total)
    cli_must(ctx, rdx_copy(ctx, *ids + *n_ids, RDX_HOST, res->row_ids, res->where, (size_t)res->total * 8), "ids to the host");
  *n_ids += (int64_t)res->total;
  free(off);
}

typedef struct answers {
  uint64_t *counts, *ids;
  int64_t n_ids, cap_ids;
} answers;

/* Each query's result count (counts[0..m), host) by the count pass alone, which allocates no
 * results; returns their sum (UINT64_MAX if it does not fit). */
static uint64_t count_results(rdx_context *ctx, const rdx_points *pts, rdx_array q, const rdx_points_query *pq,
                              uint64_t *counts) {
  const int64_t m = q.count;
  rdx_array c = rdx_host_array(counts, m, RDX_U64);
  void *d = NULL;
  if (cli_is_gpu(ctx)) {
    cli_must(ctx, rdx_malloc(ctx, &d, (size_t)m * 8 + 8, RDX_DEVICE), "counts on the GPU");
    c = rdx_device_array(d, m, RDX_U64);
  }
  cli_must(ctx, rdx_points_query_count(ctx, pts, q, pq, c), "the count pass");
  if (d != NULL) {
    cli_must(ctx, rdx_copy(ctx, counts, RDX_HOST, d, RDX_DEVICE, (size_t)m * 8), "counts to the host");
    rdx_free(ctx, d, RDX_DEVICE);
  }
  uint64_t total = 0;
  for (int64_t i = 0; i < m; i++) total = counts[i] > UINT64_MAX - total ? UINT64_MAX : total + counts[i];
  return total;
}

/* Refuses a batch of more than r->max_results results, saying how many it has and how many
 * queries (per rank with --weak) would fit at its mean per query. */
static void refuse_batch(const pgpus_run *r, int type, int weak, int64_t n_all, int64_t m_all, uint64_t total) {
  const double per_query = (double)total / (double)m_all;
  double fit = floor((double)r->max_results / per_query);
  if (weak) fit = floor(fit / r->n_ranks);
  char size[64] = "";
  if (r->qsize[type] > 0)
    snprintf(size, sizeof size, " (%s %.6g)", type == 2 ? "radius" : "side", r->qsize[type]);
  cli_die(CLI_EXIT_BAD_INPUT,
          "%d rank%s: %lld %s queries%s would return %llu results over %lld points (%.4g a query), more than "
          "--max-results %llu; pass --queries %.0f or fewer%s",
          r->n_ranks, r->n_ranks == 1 ? "" : "s", (long long)m_all, cli_query_types[type], size, (unsigned long long)total,
          (long long)n_all, per_query, (unsigned long long)r->max_results, fit,
          r->qsize[type] > 0 ? ", or a smaller --size" : "");
}

/* The plain index over every point on ctx, run before the sharded index: built; each type's
 * batch counted (count_results) and refused past r->max_results, then the answers of every type
 * checked against the host memory left (host_bytes: the run's other host memory); then each
 * type's query ms (median of --reps after a warm-up) and the answers of the last run. */
static void plain_index(pgpus_run *r, rdx_context *ctx, cli_args *a, double host_bytes, int weak, double *build_ms,
                        double query_ms[4], answers ans[4]) {
  const int64_t n_all = r->pts.count;
  rdx_array p = cli_place(ctx, r->pts);
  rdx_points *pts = NULL;
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_points_build(ctx, p, &r->opts, &pts), "the plain index's build");
  *build_ms = rdx_now_ms() - t0;
  cli_unplace(ctx, p);
  rdx_points_query pq[4];
  rdx_array q[4];
  for (int ti = 0; ti < r->n_types; ti++) {
    const int type = r->types[ti];
    pq[type] = (rdx_points_query)RDX_POINTS_QUERY_INIT;
    pq[type].type = api_types[type];
    pq[type].k = r->k;
    q[type] = cli_place(ctx, r->q[type]);
    const uint64_t total = count_results(ctx, pts, q[type], &pq[type], ans[type].counts);
    if (total > r->max_results) refuse_batch(r, type, weak, n_all, q[type].count, total);
    host_bytes += 2.0 * 8.0 * (double)total; /* both indexes' ids */
  }
  cli_need_memory(a, "queries", host_bytes);
  double times[MAX_RANKS];
  for (int ti = 0; ti < r->n_types; ti++) {
    const int type = r->types[ti];
    rdx_result *res = NULL;
    for (int i = 0; i <= r->reps; i++) {
      rdx_result_free(ctx, res);
      res = NULL;
      t0 = rdx_now_ms();
      cli_must(ctx, rdx_points_query_alloc(ctx, pts, q[type], &pq[type], &res), cli_query_types[type]);
      if (i > 0) times[i - 1] = rdx_now_ms() - t0;
    }
    query_ms[type] = cli_median(times, r->reps);
    result_to_host(ctx, res, ans[type].counts, &ans[type].ids, &ans[type].n_ids, &ans[type].cap_ids);
    rdx_result_free(ctx, res);
    cli_unplace(ctx, q[type]);
  }
  rdx_points_destroy(pts);
}

/* Host bytes of a run over n points and m queries of each type, its answers aside: the points
 * (twice on the CPU, where the indexes' copies are host memory too), the queries and the plain
 * index's build peak. */
static double inputs_bytes(double n, double m, rdx_dtype dtype, rdx_backend backend, int kd) {
  const double unit = (double)rdx_dtype_size(dtype);
  return n * 2 * unit * (backend == RDX_BACKEND_CPU ? 2 : 1) + m * 11 * unit +
         cli_points_peak_bytes(kd ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE, n, backend);
}

/* Queries whose answers differ (counts, or ids in order). */
static int64_t differing(const answers *a, const answers *b, int64_t m) {
  int64_t diff = 0, at_a = 0, at_b = 0;
  for (int64_t i = 0; i < m; i++) {
    diff += a->counts[i] != b->counts[i] || (a->counts[i] && memcmp(a->ids + at_a, b->ids + at_b, (size_t)a->counts[i] * 8) != 0);
    at_a += (int64_t)a->counts[i], at_b += (int64_t)b->counts[i];
  }
  return diff;
}

int cmd_bench_points_gpus(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_points_gpus_usage);
  int64_t gpus_v[CLI_LIST];
  const int n_g = cli_int_list(&a, "gpus", "1", 1, MAX_RANKS, gpus_v);
  rdx_backend backend = cli_backend(&a, "backend");
  if (backend == RDX_BACKEND_AUTO) backend = RDX_BACKEND_CUDA;
  if (backend == RDX_BACKEND_OPTIX) cli_die(CLI_EXIT_BAD_INPUT, "--backend optix runs key indexes only; use cuda for points");
  const int kd = cli_choice(&a, "index", cli_point_indexes, 2, 0);
  const int topdown = cli_choice(&a, "build", cli_point_builds, 2, 0);
  cli_applies(&a, "build", !kd, "--index quadtree");
  const int dist = cli_choice(&a, "dist", cli_point_dists, 3, RDX_PDIST_TAXI - 1);
  const rdx_dtype dtype = cli_choice(&a, "dtype", cli_point_dtypes, 2, 0) ? RDX_F32 : RDX_F64;
  const int64_t n = cli_int(&a, "n", 0, (int64_t)1 << 40, (int64_t)170000000);
  const int64_t m = cli_int(&a, "queries", 1, (int64_t)1 << 40, (int64_t)1 << 22);
  int types_v[CLI_LIST];
  const int n_types = cli_choice_list(&a, "type", "window,within,knn,match", cli_query_types, 4, types_v);
  int has_type[4] = {0};
  for (int i = 0; i < n_types; i++) {
    if (has_type[types_v[i]]) cli_die(CLI_EXIT_BAD_INPUT, "--type names %s twice", cli_query_types[types_v[i]]);
    has_type[types_v[i]] = 1;
  }
  const int k = (int)cli_int(&a, "k", 1, RDX_SP_MAX_K, 16);
  cli_applies(&a, "k", has_type[3], "--type knn");
  const double size_opt = cli_double(&a, "size", 0, HUGE_VAL, 0);
  cli_applies(&a, "size", has_type[1] || has_type[2], "--type window or within");
  const int cap = (int)cli_int(&a, "leaf-capacity", 1, 1 << 30, 1024);
  const int depth = (int)cli_int(&a, "max-depth", 1, kd ? RDX_SP_MAX_KD_DEPTH : RDX_SP_MAX_QT_DEPTH, 0);
  const int weak = cli_flag(&a, "weak");
  const int reps = (int)cli_int(&a, "reps", 1, MAX_RANKS - 1, 3);
  const uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  const int threads = (int)cli_int(&a, "threads", 1, 1024, 2);
  cli_applies(&a, "threads", backend == RDX_BACKEND_CPU, "--backend cpu");
  const uint64_t max_results = (uint64_t)cli_int(&a, "max-results", 0, INT64_MAX, (int64_t)1 << 31);
  const int header = cli_flag(&a, "header");
  /* the largest run, its answers guessed at 64 ids a query (k for kNN) for both indexes; the plain
   * index checks again with the batches' real counts (plain_index) */
  int64_t g_max = 1;
  for (int i = 0; i < n_g; i++) g_max = gpus_v[i] > g_max ? gpus_v[i] : g_max;
  const double n_max = (double)n * (double)(weak ? g_max : 1), m_max = (double)m * (double)(weak ? g_max : 1);
  cli_need_memory(&a, "n",
                  inputs_bytes(n_max, m_max, dtype, backend, kd) + (double)n_types * m_max * 2 * 8 * (k > 64 ? k : 64));
  cli_args_done(&a);

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  const int gpu = backend != RDX_BACKEND_CPU;
  if (gpu && info.n_gpus < 1)
    cli_die(CLI_EXIT_BAD_INPUT, "--gpus: backend cuda cannot run here: no GPU is visible (--backend cpu runs the same on "
            "CPU contexts)");
  char device[160];
  snprintf(device, sizeof device, "%s", gpu ? info.gpu_name : info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  if (header)
    printf("bench,device,backend,gpus_visible,gpus,scaling,path,index,dist,dtype,n_points,type,queries,k,size,reps,"
           "build_ms,query_ms,mqueries_per_s,results,build_speedup_vs_index,query_speedup_vs_index,check,"
           "exchange_ms_max,shard_ms_max,shard_ms_min\n");

  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  const rdx_point_dist pdist = (rdx_point_dist)(dist + 1);
  for (int gi = 0; gi < n_g; gi++) {
    const int g = (int)gpus_v[gi];
    const int64_t n_all = weak ? n * g : n, m_all = weak ? m * g : m;
    pgpus_run *r = (pgpus_run *)calloc(1, sizeof *r);
    if (r == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
    r->n_ranks = g, r->reps = reps, r->gpu = gpu, r->k = k, r->n_types = n_types, r->max_results = max_results;
    for (int i = 0; i < n_types; i++) r->types[i] = types_v[i];
    rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
    o.kind = kd ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
    o.method = topdown ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
    o.leaf_capacity = cap;
    o.max_depth = depth;
    o.use_box = true; /* the distribution's domain, as bench points builds */
    rdx_gen_points_box(pdist, o.box);
    r->opts = o;
    /* bench points' rule (cmd_bench_points.c): about 64 points per window or circle on uniform
     * data, whatever n_all; the radius is half the side */
    const double side = pdist == RDX_PDIST_TAXI ? 154000.0 : 1.0;
    const double size = size_opt > 0 ? size_opt : side * sqrt(64.0 / (n_all > 0 ? (double)n_all : 1.0));
    r->qsize[1] = size, r->qsize[2] = size / 2;
    cli_progress("%d ranks: generating %lld points and %lld queries of each type", g, (long long)n_all, (long long)m_all);
    cli_must(gen, rdx_gen_points(gen, n_all, pdist, dtype, seed, &r->pts), "points");
    for (int ti = 0; ti < n_types; ti++) {
      const int type = types_v[ti];
      cli_must(gen, rdx_gen_point_queries(gen, r->pts, type, m_all, r->qsize[type], seed + 100 + (uint64_t)type, &r->q[type]),
               "queries");
    }
    answers sharded[4], plain[4];
    memset(sharded, 0, sizeof sharded);
    memset(plain, 0, sizeof plain);
    for (int ti = 0; ti < n_types; ti++) {
      const int type = types_v[ti];
      sharded[type].counts = (uint64_t *)malloc((size_t)m_all * 8 + 8);
      plain[type].counts = (uint64_t *)malloc((size_t)m_all * 8 + 8);
      if (sharded[type].counts == NULL || plain[type].counts == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
    }
    for (int j = 0; j <= g; j++) r->p_from[j] = n_all * j / g, r->q_from[j] = m_all * j / g;
    for (int j = 0; j < g; j++) {
      rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
      co.backend = backend;
      if (gpu) co.device = j % info.n_gpus;
      else co.n_threads = threads;
      rdx_status st = rdx_context_create(&co, &r->ctxs[j]);
      if (st != RDX_OK) cli_die_status(r->ctxs[j], st, gpu ? "a context per GPU" : "a context per rank");
    }
    /* the plain index on rank 0's context (GPU 0), over the same points and queries: first, so
     * that a batch too large is refused before the sharded index runs */
    double pb = 0, pq_ms[4] = {0};
    cli_progress("one %s: the plain index", gpu ? "GPU" : "context");
    plain_index(r, r->ctxs[0], &a, inputs_bytes((double)n_all, (double)m_all, dtype, backend, kd), weak, &pb, pq_ms,
                plain);
    for (int j = 0; j < g; j++) {
      r->pts_on[j] = cli_place(r->ctxs[j], rows_slice(r->pts, r->p_from[j], r->p_from[j + 1]));
      for (int ti = 0; ti < n_types; ti++) {
        const int type = types_v[ti];
        r->q_on[type][j] = cli_place(r->ctxs[j], rows_slice(r->q[type], r->q_from[j], r->q_from[j + 1]));
      }
    }
    cli_must(r->ctxs[0], rdx_comm_create_local(r->ctxs, g, r->comms), "a local group");
    pthread_barrier_init(&r->bar, NULL, (unsigned)g);
    pthread_t th[MAX_RANKS];
    rank_arg args[MAX_RANKS];
    cli_progress("%d ranks: building and querying", g);
    for (int j = 0; j < g; j++) {
      args[j] = (rank_arg){r, j};
      if (pthread_create(&th[j], NULL, rank_main, &args[j]) != 0) cli_die(CLI_EXIT_FAILURE, "cannot start a thread");
    }
    for (int j = 0; j < g; j++) pthread_join(th[j], NULL);
    for (int j = 0; j < g; j++)
      if (r->st[j] != RDX_OK) cli_die_status(r->ctxs[j], r->st[j], "the distributed point index");
    /* every answer of the last runs, in query order (rank order is query order) */
    for (int ti = 0; ti < n_types; ti++) {
      const int type = types_v[ti];
      for (int j = 0; j < g; j++) {
        result_to_host(r->ctxs[j], r->res[type][j], sharded[type].counts + r->q_from[j], &sharded[type].ids,
                       &sharded[type].n_ids, &sharded[type].cap_ids);
        rdx_result_free(r->ctxs[j], r->res[type][j]);
      }
    }
    int64_t held = rdx_dist_points_count(r->dp[0]);
    for (int j = 0; j < g; j++) {
      rdx_dist_points_destroy(r->dp[j]);
      cli_unplace(r->ctxs[j], r->pts_on[j]);
      for (int ti = 0; ti < n_types; ti++) cli_unplace(r->ctxs[j], r->q_on[types_v[ti]][j]);
      rdx_comm_destroy(r->comms[j]);
    }
    for (int j = 0; j < g; j++) rdx_context_destroy(r->ctxs[j]);
    const char *scaling = weak ? "weak" : "strong";
    for (int ti = 0; ti < n_types; ti++) {
      const int type = types_v[ti];
      const double qs = r->qsize[type];
      const int kk = type == 3 ? k : 0;
      char check[64];
      int64_t diff = differing(&sharded[type], &plain[type], m_all);
      if (held != n_all) snprintf(check, sizeof check, "WRONG:count-%lld", (long long)held);
      else if (diff) snprintf(check, sizeof check, "DIFF-from-index:%lld-queries", (long long)diff);
      else snprintf(check, sizeof check, "ok;same-as-index");
      const double qm = r->query_ms[type][0];
      /* where the last run's time went: the slowest rank's exchanges, and the busiest and idlest
       * shards' own answers (their gap is the imbalance of the work among the GPUs) */
      double xmax = 0, smax = 0, smin = r->shard_ms[type][0];
      for (int j = 0; j < g; j++) {
        xmax = r->exchange_ms[type][j] > xmax ? r->exchange_ms[type][j] : xmax;
        smax = r->shard_ms[type][j] > smax ? r->shard_ms[type][j] : smax;
        smin = r->shard_ms[type][j] < smin ? r->shard_ms[type][j] : smin;
      }
      printf("points-gpus,%s,%s,%d,%d,%s,sharded,%s,%s,%s,%lld,%s,%lld,%d,%.6g,%d,%.3f,%.3f,%.4f,%lld,%.3f,%.3f,%s,"
             "%.3f,%.3f,%.3f\n",
             device, rdx_backend_name(backend), info.n_gpus, g, scaling, cli_point_indexes[kd], cli_point_dists[dist],
             cli_dtype_name(dtype), (long long)n_all, cli_query_types[type], (long long)m_all, kk, qs, reps, r->build_ms[0],
             qm, (double)m_all / qm / 1e3, (long long)sharded[type].n_ids, pb / r->build_ms[0], pq_ms[type] / qm, check,
             xmax, smax, smin);
      printf("points-gpus,%s,%s,%d,1,%s,index,%s,%s,%s,%lld,%s,%lld,%d,%.6g,%d,%.3f,%.3f,%.4f,%lld,1.000,1.000,reference,,,\n", device,
             rdx_backend_name(backend), info.n_gpus, scaling, cli_point_indexes[kd], cli_point_dists[dist],
             cli_dtype_name(dtype), (long long)n_all, cli_query_types[type], (long long)m_all, kk, qs, reps, pb,
             pq_ms[type], (double)m_all / pq_ms[type] / 1e3, (long long)plain[type].n_ids);
      free(sharded[type].counts), free(sharded[type].ids), free(plain[type].counts), free(plain[type].ids);
      rdx_npy_free(&r->q[type]);
    }
    fflush(stdout);
    pthread_barrier_destroy(&r->bar);
    rdx_npy_free(&r->pts);
    free(r);
  }
  cli_context_close(gen);
  return 0;
}
