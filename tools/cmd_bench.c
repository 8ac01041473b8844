/*
 * cmd_bench.c: `raydex bench keys`: build and query key indexes, print CSV rows (DESIGN.md §6;
 * usage below, which `raydex bench keys --help` prints).
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
  int reps, bucket;
  uint64_t seed;
  int check;           /* 0 none, 1 sample, 2 full */
  int flags;           /* rdx_build_options.flags */
  int rt_flags;        /* more flags for rx and cgrx only */
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

/* A comma-separated option value, split into at most 32 entries. */
typedef struct list_t {
  int n;
  char v[32][32];
} list_t;

static void split(list_t *l, const char *s, const char *dflt) {
  if (s == NULL) s = dflt;
  l->n = 0;
  while (*s && l->n < 32) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 0 || len >= sizeof l->v[0]) cli_die(CLI_EXIT_BAD_INPUT, "bad list entry in '%s'", s);
    memcpy(l->v[l->n], s, len);
    l->v[l->n++][len] = '\0';
    s += len + (e != NULL);
  }
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
      cli_must(ctx, rdx_index_lookup(ctx, idx, qb, ob), "lookup");
    } else if (c->op == OP_RANGE_COUNT) {
      cli_must(ctx, rdx_index_range_count(ctx, idx, qb, cb), "range count");
    } else {
      /* count, scan, fill: the two-phase protocol as a caller runs it */
      rdx_array offb = offsets;
      offb.count = len + 1;
      uint64_t t = 0;
      cli_must(ctx, c->op == OP_RANGE ? rdx_index_range_count(ctx, idx, qb, cb) : rdx_index_lookup_count(ctx, idx, qb, cb),
           "count");
      cli_must(ctx, rdx_counts_to_offsets(ctx, cb, offb, &t), "scan");
      if (t > (uint64_t)out.count) cli_die(CLI_EXIT_FAILURE, "result of %llu rows exceeds the buffer", (unsigned long long)t);
      ob.count = (int64_t)t;
      cli_must(ctx, c->op == OP_RANGE ? rdx_index_range_fill(ctx, idx, qb, offb, ob) : rdx_index_lookup_fill(ctx, idx, qb, offb, ob),
           "fill");
      *total += t;
    }
  }
  return now_ms() - t0;
}

/* The references, built once per invocation and shared by every kind benchmarked. */
typedef struct bench_ref {
  keys_oracle oracle;   /* brute-force reference (qsort + binary search) */
  int have_oracle;
  uint64_t *rows;       /* every point answer from the CPU backend's sorted index, or NULL */
} bench_ref;

static int check_results(const bench_cfg *c, const bench_ref *ref, rdx_array qh, const uint64_t *rows_h,
                         const uint64_t *counts_h) {
  int ok = 1;
  int64_t m = qh.count, step = m > 65536 ? m / 65536 : 1;
  for (int64_t i = 0; i < m && ok; i += step) {
    uint64_t a = qh.dtype == RDX_U32 ? ((uint32_t *)qh.data)[i * qh.columns] : ((uint64_t *)qh.data)[i * qh.columns];
    uint64_t z = qh.columns == 2 ? (qh.dtype == RDX_U32 ? ((uint32_t *)qh.data)[2 * i + 1] : ((uint64_t *)qh.data)[2 * i + 1]) : a;
    if (c->op == OP_POINT) ok = rows_h[i] == keys_oracle_lookup(&ref->oracle, a);
    else ok = counts_h[i] == keys_oracle_count(&ref->oracle, a, z);
  }
  if (ok && ref->rows && c->op == OP_POINT) ok = memcmp(ref->rows, rows_h, (size_t)m * 8) == 0;
  return ok;
}

/* The CPU backend's sorted index answers every point query: the second implementation the GPU
 * rows are compared with in full. */
static uint64_t *reference_rows(rdx_array keys_h, rdx_array q_h) {
  rdx_context *cpu = cli_context(RDX_BACKEND_CPU);
  rdx_index *ref = NULL;
  rdx_build_options so = RDX_BUILD_OPTIONS_INIT;
  uint64_t *rows = (uint64_t *)malloc((size_t)(q_h.count ? q_h.count : 1) * 8);
  if (!rows) cli_die(CLI_EXIT_FAILURE, "out of memory");
  cli_must(cpu, rdx_index_build(cpu, keys_h, rdx_no_array(), &so, &ref), "reference build");
  cli_must(cpu, rdx_index_lookup(cpu, ref, q_h, rdx_host_array(rows, q_h.count, RDX_U64)), "reference lookup");
  rdx_index_destroy(ref);
  cli_context_close(cpu);
  return rows;
}

static void bench_one(const bench_cfg *c, const bench_ref *ref, rdx_kind kind, rdx_array keys_h, rdx_array q_h,
                      int header) {
  rdx_context *ctx = cli_context(c->backend);
  rdx_array keys = cli_place(ctx, keys_h), q = cli_place(ctx, q_h);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  bo.bucket_size = c->bucket;
  bo.flags = c->flags | (kind == RDX_KIND_RX || kind == RDX_KIND_CGRX ? c->rt_flags : 0);
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
      cli_unplace(ctx, keys);
      cli_unplace(ctx, q);
      cli_context_close(ctx);
      return;
    }
    cli_must(ctx, st, "build");
    if (r >= 0) t[r] = ms;
  }
  double build_ms = median(t, c->reps);
  int64_t resident = 0, peak = 0;
  cli_must(ctx, rdx_index_bytes(ctx, idx, &resident, &peak), "bytes");

  /* outputs where the backend computes */
  rdx_location loc = keys.where;
  int64_t m = q.count;
  int64_t cap = c->op == OP_POINT ? m : (c->op == OP_RANGE_COUNT ? 1 : 0);
  if (c->op == OP_ALL || c->op == OP_RANGE) {
    /* size the row buffer from one counting pass: the largest batch's result */
    rdx_result *res = NULL;
    cli_must(ctx, c->op == OP_RANGE ? rdx_index_range_alloc(ctx, idx, q_h, &res) : rdx_index_lookup_alloc(ctx, idx, q_h, &res),
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
  cli_must(ctx, rdx_malloc(ctx, &out_p, (size_t)(cap ? cap : 1) * 8, loc), "output");
  cli_must(ctx, rdx_malloc(ctx, &cnt_p, (size_t)(m ? m : 1) * 8, loc), "counts");
  cli_must(ctx, rdx_malloc(ctx, &off_p, (size_t)((c->batch < m ? c->batch : m) + 1) * 8, loc), "offsets");
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
      cli_must(ctx, rdx_copy(ctx, rows_h, RDX_HOST, out_p, loc, (size_t)m * 8), "copy back");
    } else {
      cli_must(ctx, rdx_copy(ctx, cnt_h, RDX_HOST, cnt_p, loc, (size_t)m * 8), "copy back");
    }
    int ok = check_results(c, ref, q_h, rows_h, cnt_h);
    check = ok ? (ref->rows && c->op == OP_POINT ? "ok-full" : "ok-sample") : "WRONG";
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
  char kind_label[64];
  snprintf(kind_label, sizeof kind_label, "%s%s%s%s%s", rdx_kind_name(kind), c->flags & RDX_BUILD_SORT_QUERIES ? "+sortq" : "",
           bo.flags & RDX_BUILD_CGRX_NAIVE ? "+naive" : "", bo.flags & RDX_BUILD_CGRX_DEFAULT_MAPPING ? "+defmap" : "",
           bo.flags & RDX_BUILD_RT_MORTON ? "+morton" : "");
  printf("%s,%s,%s,%s,%s,%lld,%s,%g,%s,%lld,%llu,%g,%g,%lld,%d,%.3f,%.3f,%.4g,%llu,%.4g,%.3f,%.3f,%s\n", date,
         c->device, rdx_backend_name(rdx_context_backend(ctx)), kind_label, cli_dtype_name(c->dtype),
         (long long)c->n, dist_names[c->dist], c->uniformity * 100, op_names[c->op], (long long)m,
         (unsigned long long)c->width, c->hit_ratio, c->zipf, (long long)c->batch, kind == RDX_KIND_CGRX ? c->bucket : 0,
         build_ms, query_ms, (double)m / secs, (unsigned long long)results, (double)results / secs,
         c->n ? (double)resident / (double)c->n : 0.0, c->n ? (double)peak / (double)c->n : 0.0, check);
  fflush(stdout);
  rdx_free(ctx, out_p, loc);
  rdx_free(ctx, cnt_p, loc);
  rdx_free(ctx, off_p, loc);
  rdx_index_destroy(idx);
  cli_unplace(ctx, keys);
  cli_unplace(ctx, q);
  free(t);
  cli_context_close(ctx);
  if (strcmp(check, "WRONG") == 0) cli_die(CLI_EXIT_FAILURE, "%s on %s gave wrong answers", rdx_kind_name(kind), rdx_backend_name(c->backend));
}

static const char usage[] =
    "usage: raydex bench keys --kind sorted[,btree,...] [--backend auto|cpu|cuda|optix] [--n 2^22]\n"
    "            [--dtype u32|u64] [--dist dense|sparse|uniform] [--uniformity PCT] [--lookups 2^22]\n"
    "            [--op point|all|range|range-count] [--width W] [--hit-ratio 1] [--miss inside|outside]\n"
    "            [--zipf 0] [--batch M] [--reps 5] [--bucket-size 32] [--seed 1] [--header]\n"
    "            [--check full|sample|none] [--sort-queries] [--rt-flags F[,F..]] [--max-results N]\n"
    "\n"
    "Builds key indexes over generated keys and times batched lookups: one CSV row on stdout per\n"
    "combination. --kind, --backend, --lookups, --op, --width, --hit-ratio, --miss, --zipf, --batch,\n"
    "--bucket-size and --rt-flags take comma-separated lists; every combination runs over the same\n"
    "keys. --rt-flags are rdx_build_options.flags for rx and cgrx (16 naive, 32 default mapping, 64\n"
    "Morton BVH; the kind column then reads e.g. cgrx+naive). --max-results caps lookups * width of\n"
    "range batches. On --backend optix only rx and cgrx run. Each row's check column compares the\n"
    "answers with the brute-force oracle (--check sample) and the CPU's sorted index (full).\n";

int cmd_bench(int argc, char **argv) {
  if (argc >= 1 && cli_is_help(argv[0])) {
    printf("%s\n%s", usage, cli_bench_points_usage);
    return 0;
  }
  if (argc >= 1 && strcmp(argv[0], "points") == 0) return cmd_bench_points(argc - 1, argv + 1);
  if (argc < 1 || strcmp(argv[0], "keys") != 0) cli_die(CLI_EXIT_BAD_INPUT, "bench keys or bench points (bench --help)");
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, usage);
  bench_cfg c;
  memset(&c, 0, sizeof c);
  const char *kinds = cli_opt(&a, "kind");
  const char *backend_l = cli_opt(&a, "backend");
  c.n = cli_int(&a, "n", (int64_t)1 << 22);
  const char *dt = cli_opt(&a, "dtype");
  c.dtype = dt ? cli_dtype(dt) : RDX_U32;
  const char *dist = cli_opt(&a, "dist");
  c.dist = !dist || strcmp(dist, "uniform") == 0 ? RDX_DIST_UNIFORM
           : strcmp(dist, "dense") == 0          ? RDX_DIST_DENSE
           : strcmp(dist, "sparse") == 0         ? RDX_DIST_SPARSE
                                                 : (cli_die(CLI_EXIT_BAD_INPUT, "--dist '%s'", dist), RDX_DIST_DENSE);
  c.uniformity = c.dist == RDX_DIST_UNIFORM ? 1.0 : c.dist == RDX_DIST_DENSE ? 0.0 : cli_double(&a, "uniformity", 50) / 100;
  /* these take comma-separated lists: every combination is run over the same keys */
  const char *lookups_l = cli_opt(&a, "lookups"), *op_l = cli_opt(&a, "op"), *width_l = cli_opt(&a, "width");
  const char *hit_l = cli_opt(&a, "hit-ratio"), *miss_l = cli_opt(&a, "miss"), *zipf_l = cli_opt(&a, "zipf");
  const char *batch_l = cli_opt(&a, "batch"), *bucket_l = cli_opt(&a, "bucket-size");
  const char *rtf_l = cli_opt(&a, "rt-flags");
  int64_t max_results = cli_int(&a, "max-results", 0);
  c.reps = (int)cli_int(&a, "reps", 5);
  c.seed = (uint64_t)cli_int(&a, "seed", 1);
  int header = cli_flag(&a, "header");
  c.flags = cli_flag(&a, "sort-queries") ? RDX_BUILD_SORT_QUERIES : 0;
  const char *check = cli_opt(&a, "check");
  cli_args_done(&a);
  if (!kinds) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required (comma-separated list)");
  if (c.reps < 1 || c.n < 0) cli_die(CLI_EXIT_BAD_INPUT, "--reps and --n must be positive");
  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  list_t L_be, L_rtf;
  split(&L_be, backend_l, "auto");
  split(&L_rtf, rtf_l, "0");
  int gpu = 0;
  for (int i = 0; i < L_be.n; i++) {
    rdx_context *probe = cli_context(cli_backend(L_be.v[i]));
    gpu |= rdx_context_backend(probe) != RDX_BACKEND_CPU;
    cli_context_close(probe);
  }
  static char device[160];
  snprintf(device, sizeof device, "%s", gpu ? info.gpu_name : info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  c.device = device;
  c.check = !check ? (gpu ? 2 : 1) : strcmp(check, "full") == 0 ? 2 : strcmp(check, "sample") == 0 ? 1 : 0;

  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_array keys;
  cli_must(gen, rdx_gen_keys(gen, c.n, c.dtype, c.dist, c.uniformity, c.seed, &keys), "keys");
  bench_ref ref;
  memset(&ref, 0, sizeof ref);
  if (c.check) {
    if (!keys_oracle_build(&ref.oracle, keys, rdx_no_array())) cli_die(CLI_EXIT_FAILURE, "out of memory");
    ref.have_oracle = 1;
  }
  list_t L_m, L_op, L_w, L_hit, L_miss, L_zipf, L_batch, L_bucket;
  split(&L_m, lookups_l, "2^22");
  split(&L_op, op_l, "point");
  split(&L_w, width_l, "1");
  split(&L_hit, hit_l, "1");
  split(&L_miss, miss_l, "inside");
  split(&L_zipf, zipf_l, "0");
  split(&L_batch, batch_l, "0");
  split(&L_bucket, bucket_l, "32");
  for (int i_m = 0; i_m < L_m.n; i_m++)
    for (int i_op = 0; i_op < L_op.n; i_op++)
      for (int i_w = 0; i_w < L_w.n; i_w++)
        for (int i_h = 0; i_h < L_hit.n; i_h++)
          for (int i_mi = 0; i_mi < L_miss.n; i_mi++)
            for (int i_z = 0; i_z < L_zipf.n; i_z++) {
              c.m = cli_parse_int("lookups", L_m.v[i_m]);
              c.op = (bench_op)-1;
              for (int i = 0; i < 4; i++)
                if (strcmp(L_op.v[i_op], op_names[i]) == 0) c.op = (bench_op)i;
              if ((int)c.op < 0) cli_die(CLI_EXIT_BAD_INPUT, "--op '%s' is not point, all, range or range-count", L_op.v[i_op]);
              c.width = (uint64_t)cli_parse_int("width", L_w.v[i_w]);
              c.hit_ratio = atof(L_hit.v[i_h]);
              c.miss = strcmp(L_miss.v[i_mi], "outside") == 0 ? RDX_MISS_OUTSIDE : RDX_MISS_INSIDE;
              c.zipf = atof(L_zipf.v[i_z]);
              if (c.m < 1 || c.width < 1) cli_die(CLI_EXIT_BAD_INPUT, "--lookups and --width must be >= 1");
              int ranges = c.op == OP_RANGE || c.op == OP_RANGE_COUNT;
              if (ranges && max_results > 0 && c.m > max_results / (int64_t)c.width)
                c.m = max_results / (int64_t)c.width > 0 ? max_results / (int64_t)c.width : 1;
              /* widths only matter for ranges; hit ratios and skew only for point lookups */
              if ((!ranges && i_w > 0) || (ranges && (i_h > 0 || i_mi > 0 || i_z > 0))) continue;
              rdx_array q;
              if (ranges)
                cli_must(gen, rdx_gen_ranges(gen, keys, c.m, c.width, c.seed + 1, &q), "ranges");
              else
                cli_must(gen, rdx_gen_lookups(gen, keys, c.m, c.hit_ratio, c.miss, c.zipf, c.seed + 1, &q), "lookups");
              free(ref.rows);
              ref.rows = c.check == 2 && c.op == OP_POINT ? reference_rows(keys, q) : NULL;
              for (int i_b = 0; i_b < L_batch.n; i_b++) {
                c.batch = cli_parse_int("batch", L_batch.v[i_b]);
                if (c.batch <= 0 || c.batch > c.m) c.batch = c.m;
                for (int i_be = 0; i_be < L_be.n; i_be++) {
                  c.backend = cli_backend(L_be.v[i_be]);
                  char *list = strdup(kinds);
                  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                    rdx_kind kind = cli_kind(tok);
                    int rt = kind == RDX_KIND_RX || kind == RDX_KIND_CGRX;
                    if (kind == RDX_KIND_HASH && ranges) continue; /* point lookups only */
                    if (c.backend == RDX_BACKEND_OPTIX && !rt) continue; /* cuda code there: bench it on cuda */
                    for (int i_f = 0; i_f < (rt ? L_rtf.n : 1); i_f++) {
                      c.rt_flags = rt ? (int)cli_parse_int("rt-flags", L_rtf.v[i_f]) : 0;
                      /* rx knows only the Morton flag */
                      if (kind == RDX_KIND_RX && (c.rt_flags & ~RDX_BUILD_RT_MORTON)) continue;
                      for (int i_k = 0; i_k < (kind == RDX_KIND_CGRX ? L_bucket.n : 1); i_k++) {
                        c.bucket = (int)cli_parse_int("bucket-size", L_bucket.v[i_k]);
                        bench_one(&c, &ref, kind, keys, q, header);
                        header = 0;
                      }
                    }
                  }
                  free(list);
                }
              }
              rdx_npy_free(&q);
            }
  cli_context_close(gen);
  if (ref.have_oracle) keys_oracle_free(&ref.oracle);
  free(ref.rows);
  rdx_npy_free(&keys);
  return 0;
}
