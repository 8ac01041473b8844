/*
 * cmd_bench.c: `raydex bench keys`: build and query key indexes, print CSV rows (DESIGN.md §6).
 *
 *   raydex bench keys --kind sorted[,btree,...] [--backend auto|cpu|cuda|optix] [--n 2^26]
 *        [--dtype u32|u64] [--dist dense|sparse|uniform] [--uniformity PCT] [--lookups 2^27]
 *        [--op point|all|range|range-count] [--width W] [--hit-ratio 1] [--miss inside|outside]
 *        [--zipf 0] [--batch M] [--reps 5] [--bucket-size 32] [--seed 1] [--header]
 *        [--check full|sample|none] [--flags 0] [--max-results N]
 *
 * Sweeps: --backend, --bucket-size (cgrx), --width, --hit-ratio, --zipf, --batch and --flags (the
 * rdx_build_options.flags of rx/cgrx, e.g. 1 = RDX_BUILD_CGRX_NAIVE) take comma-separated lists;
 * one row per combination, the keys generated once and the queries once per (width, hit ratio,
 * zipf), the oracle built once. --max-results caps lookups * width for ranges (fewer lookups for
 * wide ranges, so a sweep fits in memory). On --backend optix only rx and cgrx run (the other
 * kinds would run on CUDA; bench them there).
 *
 * Protocol (METHOD.md): inputs generated fresh from the seed (never zeros) and placed where the
 * backend computes (device memory for GPU backends, so no transfer is timed); one warm-up build
 * and query pass, then the median of --reps timed runs. The calls are synchronous, so a host
 * clock around them measures the whole device work. Query batches are not sorted. Build time
 * includes the sort of the keys. Every row carries a check column: the answers of the last run
 * compared with the brute-force oracle on a sample, and (--check full, the default on GPUs) with
 * the CPU backend's sorted index on every query.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "io/io.h"
#include "keys_oracle.h"

typedef enum { OP_POINT, OP_ALL, OP_RANGE, OP_RANGE_COUNT } bench_op;

static const char *op_names[] = {"point", "all", "range", "range-count"};

typedef struct bench_cfg {
  rdx_backend backend;
  int64_t n, m, batch;
  rdx_dtype dtype;
  rdx_key_dist dist;
  double uniformity, hit_ratio, zipf;
  rdx_miss_kind miss;
  bench_op op;
  uint64_t width;
  int reps, bucket, flags;
  uint64_t seed;
  int check;           /* 0 none, 1 sample, 2 full */
  const char *device;  /* GPU or CPU name */
} bench_cfg;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void must(rdx_context *ctx, rdx_status st, const char *what) {
  if (st != RDX_OK) cli_die_status(ctx, st, what);
}

/* A copy of a host array where the context computes. */
static rdx_array place(rdx_context *ctx, rdx_array h) {
  if (!(rdx_context_backend(ctx) == RDX_BACKEND_CUDA || rdx_context_backend(ctx) == RDX_BACKEND_OPTIX)) return h;
  size_t bytes = (size_t)h.count * (size_t)h.columns * rdx_dtype_size(h.dtype);
  void *d = NULL;
  must(ctx, rdx_malloc(ctx, &d, bytes, RDX_DEVICE), "device input");
  must(ctx, rdx_copy(ctx, d, RDX_DEVICE, h.data, RDX_HOST, bytes), "device input");
  rdx_array a = h;
  a.data = d;
  a.where = RDX_DEVICE;
  return a;
}
static void unplace(rdx_context *ctx, rdx_array a) {
  if (a.where == RDX_DEVICE) rdx_free(ctx, a.data, RDX_DEVICE);
}

/* One timed pass over all batches; returns ms and leaves the last results in out/cnt. */
static double query_pass(rdx_context *ctx, const rdx_index *idx, const bench_cfg *c, rdx_array q,
                         rdx_array out, rdx_array counts, rdx_array offsets, uint64_t *total) {
  double t0 = now_ms();
  *total = 0;
  for (int64_t b = 0; b < q.count; b += c->batch) {
    int64_t len = q.count - b < c->batch ? q.count - b : c->batch;
    rdx_array qb = q, ob = out, cb = counts;
    qb.data = (char *)q.data + (size_t)b * (size_t)q.columns * rdx_dtype_size(q.dtype);
    qb.count = len;
    cb.data = (uint64_t *)counts.data + b;
    cb.count = len;
    if (c->op == OP_POINT) {
      ob.data = (uint64_t *)out.data + b;
      ob.count = len;
      must(ctx, rdx_index_lookup(ctx, idx, qb, ob), "lookup");
    } else if (c->op == OP_RANGE_COUNT) {
      must(ctx, rdx_index_range_count(ctx, idx, qb, cb), "range count");
    } else {
      /* count, scan, fill: the two-phase protocol as a caller runs it */
      rdx_array offb = offsets;
      offb.count = len + 1;
      uint64_t t = 0;
      must(ctx, c->op == OP_RANGE ? rdx_index_range_count(ctx, idx, qb, cb) : rdx_index_lookup_count(ctx, idx, qb, cb),
           "count");
      must(ctx, rdx_counts_to_offsets(ctx, cb, offb, &t), "scan");
      if (t > (uint64_t)out.count) cli_die(CLI_EXIT_FAILURE, "result of %llu rows exceeds the buffer", (unsigned long long)t);
      ob.count = (int64_t)t;
      must(ctx, c->op == OP_RANGE ? rdx_index_range_fill(ctx, idx, qb, offb, ob) : rdx_index_lookup_fill(ctx, idx, qb, offb, ob),
           "fill");
      *total += t;
    }
  }
  return now_ms() - t0;
}

/* What one invocation computes once and every row reuses: the oracle of the keys, and the CPU
 * sorted index's answers to the current point lookups (the full check). */
typedef struct bench_cache {
  int have_oracle;
  keys_oracle o;
  uint64_t *ref_rows;   /* NULL until needed; reset when the queries change */
} bench_cache;

static int check_results(const bench_cfg *c, const keys_oracle *op, rdx_array qh, const uint64_t *rows_h,
                         const uint64_t *counts_h) {
  const keys_oracle o = *op;
  int ok = 1;
  int64_t m = qh.count, step = c->check == 2 ? 1 : (m > 65536 ? m / 65536 : 1);
  for (int64_t i = 0; i < m && ok; i += step) {
    uint64_t a = qh.dtype == RDX_U32 ? ((uint32_t *)qh.data)[i * qh.columns] : ((uint64_t *)qh.data)[i * qh.columns];
    uint64_t z = qh.columns == 2 ? (qh.dtype == RDX_U32 ? ((uint32_t *)qh.data)[2 * i + 1] : ((uint64_t *)qh.data)[2 * i + 1]) : a;
    if (c->op == OP_POINT) ok = rows_h[i] == keys_oracle_lookup(&o, a);
    else ok = counts_h[i] == keys_oracle_count(&o, a, z);
  }
  return ok;
}

static void bench_one(const bench_cfg *c, rdx_kind kind, rdx_array keys_h, rdx_array q_h, int header,
                      bench_cache *cache) {
  rdx_context *ctx = cli_context(c->backend);
  rdx_array keys = place(ctx, keys_h), q = place(ctx, q_h);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  bo.bucket_size = c->bucket;
  bo.flags = kind == RDX_KIND_CGRX ? c->flags : kind == RDX_KIND_RX ? c->flags & RDX_BUILD_RT_MORTON : 0;
  double *t = (double *)malloc(sizeof(double) * (size_t)(c->reps + 1));
  /* builds: one warm-up, then reps */
  rdx_index *idx = NULL;
  for (int r = -1; r < c->reps; r++) {
    rdx_index_destroy(idx);
    idx = NULL;
    double t0 = now_ms();
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    double ms = now_ms() - t0;
    if (st == RDX_ERR_UNSUPPORTED) {
      fprintf(stderr, "raydex bench: skipping %s on %s: %s\n", rdx_kind_name(kind), rdx_backend_name(c->backend),
              rdx_context_message(ctx));
      free(t);
      unplace(ctx, keys);
      unplace(ctx, q);
      rdx_context_destroy(ctx);
      return;
    }
    must(ctx, st, "build");
    if (r >= 0) t[r] = ms;
  }
  double build_ms = median(t, c->reps);
  int64_t resident = 0, peak = 0;
  must(ctx, rdx_index_bytes(ctx, idx, &resident, &peak), "bytes");

  /* outputs where the backend computes */
  rdx_location loc = keys.where;
  int64_t m = q.count;
  int64_t cap = c->op == OP_POINT ? m : (c->op == OP_RANGE_COUNT ? 1 : 0);
  if (c->op == OP_ALL || c->op == OP_RANGE) {
    /* size the row buffer from one counting pass: the largest batch's result */
    rdx_result *res = NULL;
    must(ctx, c->op == OP_RANGE ? rdx_index_range_alloc(ctx, idx, q_h, &res) : rdx_index_lookup_alloc(ctx, idx, q_h, &res),
         "sizing");
    uint64_t maxb = 0;
    for (int64_t b = 0; b < m; b += c->batch) {
      int64_t e = b + c->batch < m ? b + c->batch : m;
      uint64_t s = res->offsets[e] - res->offsets[b];
      if (s > maxb) maxb = s;
    }
    cap = (int64_t)maxb;
    rdx_result_free(ctx, res);
  }
  void *out_p = NULL, *cnt_p = NULL, *off_p = NULL;
  must(ctx, rdx_malloc(ctx, &out_p, (size_t)(cap ? cap : 1) * 8, loc), "output");
  must(ctx, rdx_malloc(ctx, &cnt_p, (size_t)(m ? m : 1) * 8, loc), "counts");
  must(ctx, rdx_malloc(ctx, &off_p, (size_t)((c->batch < m ? c->batch : m) + 1) * 8, loc), "offsets");
  rdx_array out = rdx_host_array(out_p, cap, RDX_U64), counts = rdx_host_array(cnt_p, m, RDX_U64),
            offsets = rdx_host_array(off_p, (c->batch < m ? c->batch : m) + 1, RDX_U64);
  out.where = counts.where = offsets.where = loc;
  uint64_t total = 0;
  for (int r = -1; r < c->reps; r++) {
    double ms = query_pass(ctx, idx, c, q, out, counts, offsets, &total);
    if (r >= 0) t[r] = ms;
  }
  double query_ms = median(t, c->reps);

  /* check the last run's answers */
  const char *check = "skipped";
  if (c->check) {
    uint64_t *rows_h = NULL, *cnt_h = (uint64_t *)malloc((size_t)(m ? m : 1) * 8);
    if (c->op == OP_POINT) {
      rows_h = (uint64_t *)malloc((size_t)(m ? m : 1) * 8);
      must(ctx, rdx_copy(ctx, rows_h, RDX_HOST, out_p, loc, (size_t)m * 8), "copy back");
    } else {
      must(ctx, rdx_copy(ctx, cnt_h, RDX_HOST, cnt_p, loc, (size_t)m * 8), "copy back");
    }
    if (!cache->have_oracle) {
      if (!keys_oracle_build(&cache->o, keys_h, rdx_no_array())) cli_die(CLI_EXIT_FAILURE, "no memory for the oracle");
      cache->have_oracle = 1;
    }
    int ok = check_results(c, &cache->o, q_h, rows_h, cnt_h);
    if (ok && c->check == 2 && c->op == OP_POINT &&
        (rdx_context_backend(ctx) != RDX_BACKEND_CPU || kind != RDX_KIND_SORTED)) {
      /* every answer against a second implementation: the CPU backend's sorted index */
      if (cache->ref_rows == NULL) {
        rdx_context *cpu = cli_context(RDX_BACKEND_CPU);
        rdx_index *ref = NULL;
        rdx_build_options so = RDX_BUILD_OPTIONS_INIT;
        cache->ref_rows = (uint64_t *)malloc((size_t)(m ? m : 1) * 8);
        must(cpu, rdx_index_build(cpu, keys_h, rdx_no_array(), &so, &ref), "reference build");
        must(cpu, rdx_index_lookup(cpu, ref, q_h, rdx_host_array(cache->ref_rows, m, RDX_U64)), "reference lookup");
        rdx_index_destroy(ref);
        rdx_context_destroy(cpu);
      }
      ok = memcmp(cache->ref_rows, rows_h, (size_t)m * 8) == 0;
    }
    check = ok ? (c->check == 2 ? "ok-full" : "ok-sample") : "WRONG";
    free(rows_h);
    free(cnt_h);
  }

  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  if (header)
    printf("date,device,backend,kind,dtype,n,dist,uniformity,op,lookups,width,hit_ratio,zipf,batch,bucket,"
           "build_ms,query_ms,lookups_per_s,results,results_per_s,bytes_per_key,peak_bytes_per_key,check\n");
  double secs = query_ms / 1e3;
  uint64_t results = c->op == OP_POINT ? (uint64_t)m : total;
  static const char *dist_names[] = {"", "dense", "sparse", "uniform"};
  /* variants of the ray-tracing kinds show in the kind column: cgrx+naive, cgrx+defmap, rx+morton */
  char kname[64];
  snprintf(kname, sizeof kname, "%s%s%s%s", rdx_kind_name(kind), bo.flags & RDX_BUILD_CGRX_NAIVE ? "+naive" : "",
           bo.flags & RDX_BUILD_CGRX_DEFAULT_MAPPING ? "+defmap" : "", bo.flags & RDX_BUILD_RT_MORTON ? "+morton" : "");
  printf("%s,%s,%s,%s,%s,%lld,%s,%g,%s,%lld,%llu,%g,%g,%lld,%d,%.3f,%.3f,%.4g,%llu,%.4g,%.3f,%.3f,%s\n", date,
         c->device, rdx_backend_name(rdx_context_backend(ctx)), kname, cli_dtype_name(c->dtype),
         (long long)c->n, dist_names[c->dist], c->uniformity * 100, op_names[c->op], (long long)m,
         (unsigned long long)c->width, c->hit_ratio, c->zipf, (long long)c->batch, kind == RDX_KIND_CGRX ? c->bucket : 0,
         build_ms, query_ms, (double)m / secs, (unsigned long long)results, (double)results / secs,
         c->n ? (double)resident / (double)c->n : 0.0, c->n ? (double)peak / (double)c->n : 0.0, check);
  fflush(stdout);
  rdx_free(ctx, out_p, loc);
  rdx_free(ctx, cnt_p, loc);
  rdx_free(ctx, off_p, loc);
  rdx_index_destroy(idx);
  unplace(ctx, keys);
  unplace(ctx, q);
  free(t);
  rdx_context_destroy(ctx);
  if (strcmp(check, "WRONG") == 0) cli_die(CLI_EXIT_FAILURE, "%s on %s gave wrong answers", rdx_kind_name(kind), rdx_backend_name(c->backend));
}

#define MAX_SWEEP 64

/* A comma-separated list of numbers ("2^10,2^12" or "0,0.5,1"). */
typedef struct sweep {
  int n;
  double v[MAX_SWEEP];
} sweep;

static sweep parse_sweep(const char *name, const char *s, double dflt, int integer) {
  sweep w;
  w.n = 0;
  if (s == NULL) {
    w.v[w.n++] = dflt;
    return w;
  }
  char *list = strdup(s), *save = NULL;
  for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (w.n == MAX_SWEEP) cli_die(CLI_EXIT_BAD_INPUT, "--%s has more than %d values", name, MAX_SWEEP);
    if (integer) {
      w.v[w.n++] = (double)cli_parse_int(name, tok);
    } else {
      char *end = NULL;
      w.v[w.n] = strtod(tok, &end);
      if (end == tok || *end) cli_die(CLI_EXIT_BAD_INPUT, "--%s: '%s' is not a number", name, tok);
      w.n++;
    }
  }
  free(list);
  if (w.n == 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s is empty", name);
  return w;
}

int cmd_bench(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "keys") != 0) cli_die(CLI_EXIT_BAD_INPUT, "usage: raydex bench keys [options]");
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1);
  bench_cfg c;
  memset(&c, 0, sizeof c);
  const char *kinds = cli_opt(&a, "kind");
  const char *b = cli_opt(&a, "backend");
  c.n = cli_int(&a, "n", (int64_t)1 << 22);
  const char *dt = cli_opt(&a, "dtype");
  c.dtype = dt ? cli_dtype(dt) : RDX_U32;
  const char *dist = cli_opt(&a, "dist");
  c.dist = !dist || strcmp(dist, "uniform") == 0 ? RDX_DIST_UNIFORM
           : strcmp(dist, "dense") == 0          ? RDX_DIST_DENSE
           : strcmp(dist, "sparse") == 0         ? RDX_DIST_SPARSE
                                                 : (cli_die(CLI_EXIT_BAD_INPUT, "--dist '%s'", dist), RDX_DIST_DENSE);
  c.uniformity = c.dist == RDX_DIST_UNIFORM ? 1.0 : c.dist == RDX_DIST_DENSE ? 0.0 : cli_double(&a, "uniformity", 50) / 100;
  int64_t m_all = cli_int(&a, "lookups", (int64_t)1 << 22);
  const char *op = cli_opt(&a, "op");
  c.op = OP_POINT;
  for (int i = 0; op && i < 4; i++)
    if (strcmp(op, op_names[i]) == 0) c.op = (bench_op)i;
  if (op && strcmp(op, op_names[c.op]) != 0) cli_die(CLI_EXIT_BAD_INPUT, "--op '%s' is not point, all, range or range-count", op);
  sweep widths = parse_sweep("width", cli_opt(&a, "width"), 1, 1);
  sweep hits = parse_sweep("hit-ratio", cli_opt(&a, "hit-ratio"), 1.0, 0);
  const char *miss = cli_opt(&a, "miss");
  c.miss = miss && strcmp(miss, "outside") == 0 ? RDX_MISS_OUTSIDE : RDX_MISS_INSIDE;
  sweep zipfs = parse_sweep("zipf", cli_opt(&a, "zipf"), 0.0, 0);
  sweep batches = parse_sweep("batch", cli_opt(&a, "batch"), 0, 1);
  c.reps = (int)cli_int(&a, "reps", 5);
  sweep buckets = parse_sweep("bucket-size", cli_opt(&a, "bucket-size"), 32, 1);
  sweep flags = parse_sweep("flags", cli_opt(&a, "flags"), 0, 1);
  int64_t max_results = cli_int(&a, "max-results", 0);
  c.seed = (uint64_t)cli_int(&a, "seed", 1);
  int header = cli_flag(&a, "header");
  const char *check = cli_opt(&a, "check");
  cli_args_done(&a);
  if (!kinds) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required (comma-separated list)");
  if (c.reps < 1 || c.n < 0 || m_all < 0) cli_die(CLI_EXIT_BAD_INPUT, "--reps, --n and --lookups must be positive");
  rdx_backend backends[8];
  int n_backends = 0;
  {
    char *list = strdup(b ? b : "auto"), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok && n_backends < 8; tok = strtok_r(NULL, ",", &save))
      backends[n_backends++] = cli_backend(tok);
    free(list);
  }

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  int gpu = 0;
  for (int i = 0; i < n_backends; i++) {
    rdx_context *probe = cli_context(backends[i]);
    gpu |= rdx_context_backend(probe) != RDX_BACKEND_CPU;
    rdx_context_destroy(probe);
  }
  static char device[160];
  snprintf(device, sizeof device, "%s", gpu ? info.gpu_name : info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  c.device = device;
  c.check = !check ? (gpu ? 2 : 1) : strcmp(check, "full") == 0 ? 2 : strcmp(check, "sample") == 0 ? 1 : 0;

  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_array keys;
  must(gen, rdx_gen_keys(gen, c.n, c.dtype, c.dist, c.uniformity, c.seed, &keys), "keys");
  bench_cache cache;
  memset(&cache, 0, sizeof cache);
  int range = c.op == OP_RANGE || c.op == OP_RANGE_COUNT;
  for (int wi = 0; wi < widths.n; wi++)
    for (int hi = 0; hi < hits.n; hi++)
      for (int zi = 0; zi < zipfs.n; zi++) {
        bench_cfg cq = c;
        cq.width = (uint64_t)widths.v[wi];
        cq.hit_ratio = hits.v[hi];
        cq.zipf = zipfs.v[zi];
        cq.m = m_all;
        if (range && max_results > 0 && cq.width > 0 && (uint64_t)cq.m > (uint64_t)max_results / cq.width)
          cq.m = (int64_t)((uint64_t)max_results / cq.width) > 0 ? (int64_t)((uint64_t)max_results / cq.width) : 1;
        rdx_array q;
        if (range) must(gen, rdx_gen_ranges(gen, keys, cq.m, cq.width, c.seed + 1, &q), "ranges");
        else must(gen, rdx_gen_lookups(gen, keys, cq.m, cq.hit_ratio, cq.miss, cq.zipf, c.seed + 1, &q), "lookups");
        free(cache.ref_rows);
        cache.ref_rows = NULL;
        for (int bi = 0; bi < n_backends; bi++) {
          char *list = strdup(kinds), *save = NULL;
          for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            rdx_kind kind = cli_kind(tok);
            int rt = kind == RDX_KIND_RX || kind == RDX_KIND_CGRX;
            if (backends[bi] == RDX_BACKEND_OPTIX && !rt) {
              fprintf(stderr, "raydex bench: skipping %s on optix (it runs on cuda there; bench it with --backend cuda)\n",
                      tok);
              continue;
            }
            for (int fi = 0; fi < (rt ? flags.n : 1); fi++) {
              /* rx knows only the Morton flag: run each distinct effective value once */
              int dup = 0;
              for (int fj = 0; fj < fi && kind == RDX_KIND_RX; fj++)
                dup |= ((int)flags.v[fj] & RDX_BUILD_RT_MORTON) == ((int)flags.v[fi] & RDX_BUILD_RT_MORTON);
              if (dup) continue;
              for (int ki = 0; ki < (kind == RDX_KIND_CGRX ? buckets.n : 1); ki++)
                for (int bb = 0; bb < batches.n; bb++) {
                  bench_cfg cr = cq;
                  cr.backend = backends[bi];
                  cr.flags = rt ? (int)flags.v[fi] : 0;
                  cr.bucket = (int)buckets.v[kind == RDX_KIND_CGRX ? ki : 0];
                  cr.batch = (int64_t)batches.v[bb];
                  if (cr.batch <= 0 || cr.batch > cr.m) cr.batch = cr.m > 0 ? cr.m : 1;
                  bench_one(&cr, kind, keys, q, header, &cache);
                  header = 0;
                }
            }
          }
          free(list);
        }
        rdx_npy_free(&q);
      }
  rdx_context_destroy(gen);
  free(cache.ref_rows);
  if (cache.have_oracle) keys_oracle_free(&cache.o);
  rdx_npy_free(&keys);
  return 0;
}
