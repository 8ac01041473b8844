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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "bench_api.h"

typedef enum { OP_POINT, OP_ALL, OP_RANGE, OP_RANGE_COUNT } bench_op;

static const char *const op_names[] = {"point", "all", "range", "range-count"};

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
  int bvh;             /* --bvh: the soft BVH width forced (2 or 4), 0 = the library's */
  int csr_sort;        /* --csr-sort: the GPU's per-query sort path, RDX_CSR_SORT_* */
  const char *device;  /* GPU or CPU name */
} bench_cfg;

/* One timed pass over all batches; returns ms and leaves the last results in out/cnt. */
static double query_pass(rdx_context *ctx, const rdx_index *idx, const bench_cfg *c, rdx_array q,
                         rdx_array out, rdx_array counts, rdx_array offsets, uint64_t *total) {
  double t0 = rdx_now_ms();
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
  return rdx_now_ms() - t0;
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

/* One CSV row; returns 0 (printing why on stderr) when the kind is not built for the backend. */
static int bench_one(const bench_cfg *c, const bench_ref *ref, rdx_kind kind, rdx_array keys_h, rdx_array q_h,
                      int header) {
  rdx_context *ctx = cli_context(c->backend);
  /* the forced paths, through the library's internal entry points (comparisons, not tuning) */
  if (c->bvh) rdx_rt_force_bvh_width(ctx, c->bvh);
  rdx_csr_force_sort(ctx, c->csr_sort);
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
    double t0 = rdx_now_ms();
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    double ms = rdx_now_ms() - t0;
    if (st == RDX_ERR_UNSUPPORTED) {
      cli_progress_clear();
      fprintf(stderr, "raydex bench: skipping %s on %s: %s\n", rdx_kind_name(kind), rdx_backend_name(c->backend),
              rdx_context_message(ctx));
      free(t);
      cli_unplace(ctx, keys);
      cli_unplace(ctx, q);
      cli_context_close(ctx);
      return 0;
    }
    cli_must(ctx, st, "build");
    if (r >= 0) t[r] = ms;
  }
  double build_ms = cli_median(t, c->reps);
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
  double query_ms = cli_median(t, c->reps);

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
  cli_progress_clear();
  if (header)
    printf("date,device,backend,kind,dtype,n,dist,uniformity,op,lookups,width,hit_ratio,zipf,batch,bucket,"
           "build_ms,query_ms,lookups_per_s,results,results_per_s,bytes_per_key,peak_bytes_per_key,check\n");
  double secs = query_ms / 1e3;
  uint64_t results = c->op == OP_POINT ? (uint64_t)m : total;
  char kind_label[64];
  snprintf(kind_label, sizeof kind_label, "%s%s%s%s%s", rdx_kind_name(kind), c->flags & RDX_BUILD_SORT_QUERIES ? "+sortq" : "",
           bo.flags & RDX_BUILD_CGRX_NAIVE ? "+naive" : "", bo.flags & RDX_BUILD_CGRX_DEFAULT_MAPPING ? "+defmap" : "",
           bo.flags & RDX_BUILD_RT_MORTON ? "+morton" : "");
  printf("%s,%s,%s,%s,%s,%lld,%s,%g,%s,%lld,%llu,%g,%g,%lld,%d,%.3f,%.3f,%.4g,%llu,%.4g,%.3f,%.3f,%s\n", date,
         c->device, rdx_backend_name(rdx_context_backend(ctx)), kind_label, cli_dtype_name(c->dtype),
         (long long)c->n, cli_key_dists[c->dist - 1], c->uniformity * 100, op_names[c->op], (long long)m,
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
  return 1;
}

static const char usage[] =
    "usage: raydex bench keys --kind sorted[,btree,...] [--backend auto|cpu|cuda|optix] [--n 2^22]\n"
    "            [--dtype u32|u64] [--dist dense|sparse|uniform] [--uniformity 50] [--lookups 2^22]\n"
    "            [--op point|all|range|range-count] [--width 1] [--hit-ratio 1] [--miss inside|outside]\n"
    "            [--zipf 0] [--batch M] [--reps 5] [--bucket-size 32] [--seed 1] [--header]\n"
    "            [--check full|sample|none] [--sort-queries] [--rt-flags F[,F..]] [--max-results N]\n"
    "            [--bvh 4|2] [--csr-sort auto|packed|segmented] [--quiet]\n"
    "\n"
    "Builds key indexes over generated keys (default: 2^22 uniform u32) and times batched lookups:\n"
    "one CSV row on stdout per combination. --kind, --backend, --lookups, --op, --width, --hit-ratio,\n"
    "--miss, --zipf, --batch, --bucket-size and --rt-flags take comma-separated lists; every\n"
    "combination runs over the same keys. An option must apply to some entry of the lists: --width\n"
    "and --max-results (cap on lookups * width) to range ops, --hit-ratio, --miss and --zipf to point\n"
    "ops, --uniformity to --dist sparse, --bucket-size to cgrx, --sort-queries to sorted, --rt-flags\n"
    "(rdx_build_options.flags: 16 naive, 32 default mapping, 64 Morton BVH; the kind column then\n"
    "reads e.g. cgrx+naive) to rx (64 only) and cgrx. --batch 0 (the default) is the whole batch.\n"
    "--backend optix takes rx, cgrx and cgrxu only, and hash takes no range op. Two options force a path\n"
    "the library would choose, for comparisons (the rows do not say which): --bvh 2 builds rx and\n"
    "cgrx's soft BVH binary instead of BVH4 (cpu, cuda), and --csr-sort the GPU's sort of each\n"
    "range's rows (--op range). Each row's check column\n"
    "compares the answers with the brute-force oracle (--check sample) and the CPU's sorted index\n"
    "(full, the default on GPUs).\n";

static const char *const check_names[] = {"none", "sample", "full"};

int cmd_bench(int argc, char **argv) {
  if (argc >= 1 && cli_is_help(argv[0])) {
    static char both[sizeof usage + 20480];
    snprintf(both, sizeof both, "%s\n%s\n%s\n%s\n%s\n%s\n%s", usage, cli_bench_gpus_usage, cli_bench_points_usage,
             cli_bench_points_gpus_usage, cli_bench_join_usage, cli_bench_update_usage, cli_bench_host_usage);
    cli_usage(both, 0);
  }
  if (argc >= 1 && strcmp(argv[0], "points") == 0) {
    cli_set_command("raydex bench points");
    for (int i = 1; i < argc; i++)
      if (strcmp(argv[i], "--gpus") == 0) return cmd_bench_points_gpus(argc - 1, argv + 1);
    return cmd_bench_points(argc - 1, argv + 1);
  }
  if (argc >= 1 && strcmp(argv[0], "join") == 0) {
    cli_set_command("raydex bench join");
    return cmd_bench_join(argc - 1, argv + 1);
  }
  if (argc >= 1 && strcmp(argv[0], "update") == 0) {
    cli_set_command("raydex bench update");
    return cmd_bench_update(argc - 1, argv + 1);
  }
  if (argc >= 1 && strcmp(argv[0], "host") == 0) {
    cli_set_command("raydex bench host");
    return cmd_bench_host(argc - 1, argv + 1);
  }
  if (argc < 1 || strcmp(argv[0], "keys") != 0)
    cli_die(CLI_EXIT_BAD_INPUT, "bench keys, bench points, bench join, bench update or bench host (bench --help)");
  cli_set_command("raydex bench keys");
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--gpus") == 0) return cmd_bench_keys_gpus(argc - 1, argv + 1);
  cli_args a;
  cli_args_init(&a, argc - 1, argv + 1, usage);
  bench_cfg c;
  memset(&c, 0, sizeof c);
  const char *kinds_s = cli_opt(&a, "kind");
  if (!kinds_s) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required (a comma-separated list)");
  cli_list kind_l, be_l;
  cli_split(&kind_l, "kind", kinds_s);
  const char *be_s = cli_opt(&a, "backend");
  cli_split(&be_l, "backend", be_s ? be_s : "auto");
  rdx_kind kinds[CLI_LIST];
  rdx_backend backends[CLI_LIST];
  int has[RDX_KIND_CGRXU - RDX_KIND_SCAN + 1] = {0};
  for (int i = 0; i < kind_l.n; i++) kinds[i] = cli_parse_kind("kind", kind_l.v[i]), has[kinds[i] - RDX_KIND_SCAN] = 1;
  for (int i = 0; i < be_l.n; i++) backends[i] = cli_parse_backend("backend", be_l.v[i]);
  c.dtype = cli_choice(&a, "dtype", cli_key_dtypes, 2, 0) ? RDX_U64 : RDX_U32;
  c.n = cli_int(&a, "n", 0, c.dtype == RDX_U32 ? (int64_t)UINT32_MAX + 1 : INT64_MAX, (int64_t)1 << 22);
  c.dist = (rdx_key_dist)(cli_choice(&a, "dist", cli_key_dists, 3, RDX_DIST_UNIFORM - 1) + 1);
  c.uniformity = c.dist == RDX_DIST_UNIFORM ? 1.0 : c.dist == RDX_DIST_DENSE ? 0.0 : cli_double(&a, "uniformity", 0, 100, 50) / 100;
  cli_applies(&a, "uniformity", c.dist == RDX_DIST_SPARSE, "--dist sparse");
  /* the lists: every combination is run over the same keys */
  int64_t ms[CLI_LIST], widths[CLI_LIST], batches[CLI_LIST], buckets[CLI_LIST], rtfs[CLI_LIST];
  double hits[CLI_LIST], zipfs[CLI_LIST];
  int ops[CLI_LIST], misses[CLI_LIST];
  int n_m = cli_int_list(&a, "lookups", "2^22", 1, INT64_MAX, ms);
  int n_op = cli_choice_list(&a, "op", "point", op_names, 4, ops);
  int n_w = cli_int_list(&a, "width", "1", 1, INT64_MAX, widths);
  int n_hit = cli_double_list(&a, "hit-ratio", "1", 0, 1, hits);
  int n_miss = cli_choice_list(&a, "miss", "inside", cli_misses, 2, misses);
  int n_zipf = cli_double_list(&a, "zipf", "0", 0, 100, zipfs);
  int n_batch = cli_int_list(&a, "batch", "0", 0, INT64_MAX, batches);
  int n_bucket = cli_int_list(&a, "bucket-size", "32", 1, 65536, buckets);
  int n_rtf = cli_int_list(&a, "rt-flags", "0", 0, 127, rtfs);
  int64_t max_results = cli_int(&a, "max-results", 1, INT64_MAX, 0);
  c.reps = (int)cli_int(&a, "reps", 1, 1 << 20, 5);
  c.seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  int header = cli_flag(&a, "header");
  c.flags = cli_flag(&a, "sort-queries") ? RDX_BUILD_SORT_QUERIES : 0;
  int check = cli_choice(&a, "check", check_names, 3, -1);
  static const char *const bvh_names[] = {"4", "2"}, *const sort_names[] = {"auto", "segmented", "packed"};
  c.bvh = cli_choice(&a, "bvh", bvh_names, 2, -1) == 1 ? 2 : 0; /* 4 is the library's default */
  c.csr_sort = cli_choice(&a, "csr-sort", sort_names, 3, RDX_CSR_SORT_AUTO); /* names in RDX_CSR_SORT_* order */
  /* options that apply to no entry of the lists are refused, not ignored */
  int any_point = 0, any_range = 0, any_miss = 0, any_hit = 0, cgrx_flags = 0;
  const char *range_op = NULL;
  for (int i = 0; i < n_op; i++) {
    any_point |= ops[i] == OP_POINT || ops[i] == OP_ALL;
    if (ops[i] == OP_RANGE || ops[i] == OP_RANGE_COUNT) any_range = 1, range_op = ops[i] == OP_RANGE ? "--op range" : "--op range-count";
  }
  for (int i = 0; i < n_hit; i++) any_miss |= hits[i] < 1, any_hit |= hits[i] > 0;
  for (int i = 0; i < n_rtf; i++) {
    if (rtfs[i] & ~(RDX_BUILD_CGRX_NAIVE | RDX_BUILD_CGRX_DEFAULT_MAPPING | RDX_BUILD_RT_MORTON))
      cli_die(CLI_EXIT_BAD_INPUT, "--rt-flags %lld is not a sum of 16, 32 and 64", (long long)rtfs[i]);
    cgrx_flags |= (int)(rtfs[i] & ~RDX_BUILD_RT_MORTON);
  }
  cli_applies(&a, "width", any_range, "--op range or range-count");
  cli_applies(&a, "max-results", any_range, "--op range or range-count");
  cli_applies(&a, "hit-ratio", any_point, "--op point or all");
  cli_applies(&a, "miss", any_point && any_miss, "--op point or all with a --hit-ratio below 1");
  cli_applies(&a, "zipf", any_point && any_hit, "--op point or all with a --hit-ratio above 0");
  cli_applies(&a, "bucket-size", has[RDX_KIND_CGRX - RDX_KIND_SCAN], "--kind cgrx");
  cli_applies(&a, "sort-queries", has[RDX_KIND_SORTED - RDX_KIND_SCAN], "--kind sorted");
  cli_applies(&a, "bvh", has[RDX_KIND_RX - RDX_KIND_SCAN] || has[RDX_KIND_CGRX - RDX_KIND_SCAN], "--kind rx or cgrx");
  cli_applies(&a, "csr-sort", any_range, "--op range or range-count");
  cli_applies(&a, "rt-flags", has[RDX_KIND_CGRX - RDX_KIND_SCAN] || (has[RDX_KIND_RX - RDX_KIND_SCAN] && !cgrx_flags),
              "--kind cgrx, or rx with 64 only");
  for (int i = 0; i < kind_l.n; i++)
    for (int j = 0; j < be_l.n; j++) cli_kind_fits(kinds[i], backends[j], range_op);
  /* keys, the lookup generator's sorted copy and the oracle's 32 bytes a key, the largest host
   * build, the CPU's reference index for full checks, and the largest batch with its answers */
  int64_t m_max = 0;
  for (int i = 0; i < n_m; i++) m_max = ms[i] > m_max ? ms[i] : m_max;
  double nd = (double)c.n, dsize = (double)rdx_dtype_size(c.dtype), peak = 0;
  int full = check == 2;
  for (int j = 0; j < be_l.n; j++) {
    full |= check < 0 && backends[j] != RDX_BACKEND_CPU; /* --check full is the default on GPUs */
    for (int i = 0; i < kind_l.n; i++) peak = fmax(peak, cli_index_peak_bytes(kinds[i], nd, backends[j]));
  }
  double keys_need = nd * (2 * dsize + (check ? 32 : 0)) + peak + (full ? cli_index_peak_bytes(RDX_KIND_SORTED, nd, RDX_BACKEND_CPU) : 0);
  double query_need = (double)m_max * (2 * dsize + 8 * 4);
  cli_need_memory(&a, keys_need >= query_need ? "n" : "lookups", keys_need + query_need);
  cli_args_done(&a);

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  int gpu = 0;
  for (int i = 0; i < be_l.n; i++) {
    rdx_context *probe = cli_context(backends[i]);
    gpu |= rdx_context_backend(probe) != RDX_BACKEND_CPU;
    cli_context_close(probe);
  }
  static char device[160];
  snprintf(device, sizeof device, "%s", gpu ? info.gpu_name : info.cpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  c.device = device;
  c.check = check >= 0 ? check : gpu ? 2 : 1;

  double t_start = rdx_now_ms();
  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  rdx_array keys;
  cli_progress("generating %lld keys", (long long)c.n);
  cli_must(gen, rdx_gen_keys(gen, c.n, c.dtype, c.dist, c.uniformity, c.seed, &keys), "keys");
  bench_ref ref;
  memset(&ref, 0, sizeof ref);
  if (c.check) {
    if (!keys_oracle_build(&ref.oracle, keys, rdx_no_array())) cli_die(CLI_EXIT_FAILURE, "out of memory");
    ref.have_oracle = 1;
  }
  int n_rows = 0;
  for (int i_m = 0; i_m < n_m; i_m++)
    for (int i_op = 0; i_op < n_op; i_op++)
      for (int i_w = 0; i_w < n_w; i_w++)
        for (int i_h = 0; i_h < n_hit; i_h++)
          for (int i_mi = 0; i_mi < n_miss; i_mi++)
            for (int i_z = 0; i_z < n_zipf; i_z++) {
              c.m = ms[i_m];
              c.op = (bench_op)ops[i_op];
              c.width = (uint64_t)widths[i_w];
              c.hit_ratio = hits[i_h];
              c.miss = misses[i_mi] ? RDX_MISS_OUTSIDE : RDX_MISS_INSIDE;
              c.zipf = zipfs[i_z];
              int ranges = c.op == OP_RANGE || c.op == OP_RANGE_COUNT;
              if (ranges && max_results > 0 && c.m > max_results / (int64_t)c.width)
                c.m = max_results / (int64_t)c.width > 0 ? max_results / (int64_t)c.width : 1;
              /* widths only matter for ranges; hit ratios and skew only for point lookups */
              if ((!ranges && i_w > 0) || (ranges && (i_h > 0 || i_mi > 0 || i_z > 0))) continue;
              rdx_array q;
              cli_progress("generating %lld %s", (long long)c.m, ranges ? "ranges" : "lookups");
              if (ranges)
                cli_must(gen, rdx_gen_ranges(gen, keys, c.m, c.width, c.seed + 1, &q), "ranges");
              else
                cli_must(gen, rdx_gen_lookups(gen, keys, c.m, c.hit_ratio, c.miss, c.zipf, c.seed + 1, &q), "lookups");
              free(ref.rows);
              ref.rows = c.check == 2 && c.op == OP_POINT ? reference_rows(keys, q) : NULL;
              for (int i_b = 0; i_b < n_batch; i_b++) {
                c.batch = batches[i_b] == 0 || batches[i_b] > c.m ? c.m : batches[i_b];
                for (int i_be = 0; i_be < be_l.n; i_be++) {
                  c.backend = backends[i_be];
                  for (int i_k = 0; i_k < kind_l.n; i_k++) {
                    rdx_kind kind = kinds[i_k];
                    int rt = kind == RDX_KIND_RX || kind == RDX_KIND_CGRX;
                    for (int i_f = 0; i_f < (rt ? n_rtf : 1); i_f++) {
                      c.rt_flags = rt ? (int)rtfs[i_f] : 0;
                      /* rx knows only the Morton flag */
                      if (kind == RDX_KIND_RX && (c.rt_flags & ~RDX_BUILD_RT_MORTON)) continue;
                      for (int i_k2 = 0; i_k2 < (kind == RDX_KIND_CGRX ? n_bucket : 1); i_k2++) {
                        c.bucket = (int)buckets[i_k2];
                        cli_progress("row %d: %s on %s, %lld %s", n_rows + 1, rdx_kind_name(kind),
                                     rdx_backend_name(c.backend), (long long)c.m, op_names[c.op]);
                        if (bench_one(&c, &ref, kind, keys, q, header)) n_rows++, header = 0;
                      }
                    }
                  }
                }
              }
              rdx_npy_free(&q);
            }
  cli_context_close(gen);
  if (ref.have_oracle) keys_oracle_free(&ref.oracle);
  free(ref.rows);
  rdx_npy_free(&keys);
  cli_report("%d rows over %lld %s keys in %.1f s", n_rows, (long long)c.n, cli_dtype_name(c.dtype),
             (rdx_now_ms() - t_start) / 1e3);
  return 0;
}
