/*
 * cmd_demo.c: `raydex demo`, the README's main job. It generates a key column on the spot,
 * builds every key index kind on the best backend present, runs batched point lookups (90%
 * hits, misses inside the key range) and range lookups, checks every answer against the
 * brute-force oracle, and prints a table of build time, throughput and bytes per key. Then a
 * real polygon overlay (issue 29): us-atlas counties x states from .cache/maps (made by
 * scripts/fetch-maps.sh), joined on the same backend by overlay (with areas), intersects,
 * contains and within, every pair and area checked against tools/oracle/polygons_oracle.h's brute
 * force, one table row per predicate; without the maps one line says how to get them. Usage
 * below, which `raydex demo --help` prints. A terminal sees each stage on stderr as it runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "bench_api.h"

static rdx_array prefix(rdx_array a, int64_t n) {
  if (a.count > n) a.count = n;
  return a;
}

static uint64_t at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

static const char usage[] =
    "usage: raydex demo [--backend auto|cpu|cuda|optix] [--n 2^22] [--dtype u32|u64] [--lookups 2^22]\n"
    "                   [--ranges 2^16] [--width 2^16] [--seed 7] [--maps .cache/maps | --r R --s S]\n"
    "                   [--quiet]\n"
    "\n"
    "The main job: generates n unique uniform keys, builds every key index kind on the backend\n"
    "(auto: the best one here), answers point lookups (90% hits, misses inside the key range) and\n"
    "range lookups of the given width, checks every answer against the brute-force oracle and\n"
    "prints build time, throughput and bytes per key. The scan kind reads the whole column per\n"
    "query, so it answers the first 2^10 queries only. Integers take 2^k and 1e6 forms.\n"
    "\n"
    "Then a polygon overlay on the same backend: R = MAPS/us-counties.rdxp, S = MAPS/us-states.rdxp\n"
    "(scripts/fetch-maps.sh --only us makes them), or the layers --r and --s (.rdxp, or any format\n"
    "with GDAL). It builds both join indexes, runs rdx_join_polygons by overlay (with areas),\n"
    "intersects, contains and within, and checks every pair and area (to 1e-9 relative) against\n"
    "the brute-force oracle. Without the maps it says so in one line and still succeeds.\n";

/* ---- the polygon overlay ---- */

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static polygons_oracle_layer oracle_layer(const rdx_polygons *p) {
  rdx_polygons_host_csr csr;
  rdx_polygons_host_csr_of(p, &csr);
  polygons_oracle_layer o = {csr.feat_off, csr.ring_off, csr.xy, csr.n_features};
  return o;
}

/* The joins of r and s by every predicate but boxes, checked against the oracle, one row each;
 * returns the rows that were wrong. *n_joins gets the rows. */
static int demo_polygons(rdx_context *ctx, const char *r_path, const char *s_path, int *n_joins) {
  static const rdx_join_predicate preds[] = {RDX_JOIN_OVERLAY, RDX_JOIN_INTERSECTS, RDX_JOIN_CONTAINS, RDX_JOIN_WITHIN};
  static const char *const names[] = {"overlay", "intersects", "contains", "within"};
  rdx_polygons *r = NULL, *s = NULL;
  cli_progress("loading %s and %s", base_name(r_path), base_name(s_path));
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_polygons_load(ctx, r_path, NULL, &r), "rdx_polygons_load R");
  cli_must(ctx, rdx_polygons_load(ctx, s_path, NULL, &s), "rdx_polygons_load S");
  const double load_ms = rdx_now_ms() - t0;
  rdx_polygons_info ri, si;
  ri.size = si.size = sizeof ri;
  cli_must(ctx, rdx_polygons_describe(ctx, r, &ri), "rdx_polygons_describe");
  cli_must(ctx, rdx_polygons_describe(ctx, s, &si), "rdx_polygons_describe");
  cli_progress("building the join indexes");
  rdx_join_options jo = RDX_JOIN_OPTIONS_INIT;
  t0 = rdx_now_ms();
  cli_must(ctx, rdx_polygons_build_index(ctx, r, &jo), "rdx_polygons_build_index R");
  cli_must(ctx, rdx_polygons_build_index(ctx, s, &jo), "rdx_polygons_build_index S");
  const double index_ms = rdx_now_ms() - t0;
  cli_progress_clear();
  printf("\nPolygon joins: R = %s (%lld features, %lld edges) x S = %s (%lld features, %lld edges)\n",
         base_name(r_path), (long long)ri.n_features, (long long)ri.n_edges, base_name(s_path),
         (long long)si.n_features, (long long)si.n_edges);
  printf("loaded in %.1f ms, both join indexes built in %.1f ms; every pair (and area, to 1e-9 relative) checked\n\n",
         load_ms, index_ms);
  printf("%-10s %10s %10s %10s  %s\n", "predicate", "join ms", "pairs", "oracle ms", "check");
  fflush(stdout);
  const polygons_oracle_layer orr = oracle_layer(r), ors = oracle_layer(s);
  int wrong_rows = 0;
  *n_joins = 0;
  for (int k = 0; k < 4; k++) {
    const int areas = preds[k] == RDX_JOIN_OVERLAY;
    rdx_join_pairs_result *res = NULL;
    cli_progress("%s (%d of 4): joining", names[k], k + 1);
    t0 = rdx_now_ms();
    rdx_status st = rdx_join_polygons(ctx, r, s, preds[k], &jo, areas, &res);
    const double join_ms = rdx_now_ms() - t0;
    if (st == RDX_ERR_UNSUPPORTED) { /* not on this backend yet: said, not counted as wrong */
      cli_progress_clear();
      printf("%-10s %10s %10s %10s  unsupported on %s\n", names[k], "-", "-", "-",
             rdx_backend_name(rdx_context_backend(ctx)));
      continue;
    }
    cli_must(ctx, st, "rdx_join_polygons");
    const int64_t n = res->n_pairs;
    int64_t *pairs = (int64_t *)malloc((size_t)(2 * n + 1) * 8);
    double *area = (double *)malloc((size_t)(n + 1) * 8);
    if (!pairs || !area) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld pairs", (long long)n);
    cli_must(ctx, rdx_copy(ctx, pairs, RDX_HOST, res->pairs, res->where, (size_t)n * 16), "copy pairs");
    if (areas) cli_must(ctx, rdx_copy(ctx, area, RDX_HOST, res->areas, res->where, (size_t)n * 8), "copy areas");
    rdx_join_pairs_free(ctx, res);
    cli_progress("%s (%d of 4): the oracle", names[k], k + 1);
    int64_t *want = NULL;
    double *want_area = NULL;
    t0 = rdx_now_ms();
    const int64_t m = polygons_oracle_join(&orr, &ors, (int)preds[k], 0, &want, areas ? &want_area : NULL);
    const double oracle_ms = rdx_now_ms() - t0;
    if (m < 0) cli_die(CLI_EXIT_FAILURE, "out of host memory in the polygon oracle");
    char check[96] = "ok";
    int64_t diff = -1; /* the first pair that differs */
    for (int64_t i = 0; i < (n < m ? n : m) && diff < 0; i++)
      if (pairs[2 * i] != want[2 * i] || pairs[2 * i + 1] != want[2 * i + 1]) diff = i;
    if (diff < 0 && n != m) diff = n < m ? n : m;
    if (diff >= 0) {
      snprintf(check, sizeof check, "WRONG: %lld pairs, the oracle %lld", (long long)n, (long long)m);
      cli_progress_clear();
      fprintf(stderr, "raydex demo: %s: first difference at row %lld: ", names[k], (long long)diff);
      if (diff < n) fprintf(stderr, "raydex (%lld, %lld)", (long long)pairs[2 * diff], (long long)pairs[2 * diff + 1]);
      else fprintf(stderr, "raydex nothing");
      if (diff < m) fprintf(stderr, ", the oracle (%lld, %lld)\n", (long long)want[2 * diff], (long long)want[2 * diff + 1]);
      else fprintf(stderr, ", the oracle nothing\n");
    } else if (areas) {
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < n; i++) {
        const double a = area[i], b = want_area[i], big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
        if (!(fabs(a - b) <= 1e-9 * big)) bad++, first = first < 0 ? i : first;
      }
      if (bad) {
        snprintf(check, sizeof check, "WRONG: %lld areas", (long long)bad);
        cli_progress_clear();
        fprintf(stderr, "raydex demo: overlay: pair (%lld, %lld): area %.17g, the oracle %.17g\n",
                (long long)pairs[2 * first], (long long)pairs[2 * first + 1], area[first], want_area[first]);
      } else {
        snprintf(check, sizeof check, "ok, and %lld areas", (long long)n);
      }
    }
    wrong_rows += strcmp(check, "ok") != 0 && strncmp(check, "ok,", 3) != 0;
    cli_progress_clear();
    printf("%-10s %10.1f %10lld %10.1f  %s\n", names[k], join_ms, (long long)n, oracle_ms, check);
    fflush(stdout);
    (*n_joins)++;
    free(pairs), free(area), free(want), free(want_area);
  }
  printf("\nJoin times are wall-clock from the layers in backend memory, results copied to the host included.\n");
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  return wrong_rows;
}

int cmd_demo(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  rdx_backend backend = cli_backend(&a, "backend");
  rdx_dtype dtype = cli_choice(&a, "dtype", cli_key_dtypes, 2, 0) ? RDX_U64 : RDX_U32;
  int64_t n = cli_int(&a, "n", 1, dtype == RDX_U32 ? (int64_t)UINT32_MAX + 1 : INT64_MAX, (int64_t)1 << 22);
  int64_t m = cli_int(&a, "lookups", 1, INT64_MAX, (int64_t)1 << 22);
  int64_t mr = cli_int(&a, "ranges", 1, INT64_MAX, (int64_t)1 << 16);
  int64_t width = cli_int(&a, "width", 1, INT64_MAX, (int64_t)1 << 16);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 7);
  /* the polygon layers: --r and --s, or the us-atlas maps in --maps */
  const char *maps = cli_opt(&a, "maps");
  const char *r_path = cli_input(&a, "r", 0, NULL), *s_path = cli_input(&a, "s", 0, NULL);
  if ((r_path == NULL) != (s_path == NULL)) cli_die(CLI_EXIT_BAD_INPUT, "--r and --s go together");
  if (r_path && maps) cli_die(CLI_EXIT_BAD_INPUT, "--maps or --r and --s, not both");
  char r_map[4096], s_map[4096];
  if (!maps) maps = ".cache/maps";
  snprintf(r_map, sizeof r_map, "%s/us-counties.rdxp", maps);
  snprintf(s_map, sizeof s_map, "%s/us-states.rdxp", maps);
  /* keys, the lookup generator's sorted copy, the oracle's sorted pairs, the largest build
   * (rx), the queries and answers, and the range rows uniform keys give on average */
  double dsize = (double)rdx_dtype_size(dtype), nd = (double)n, span = dtype == RDX_U32 ? 0x1p32 : 0x1p64;
  double rows_per_range = (double)width * nd / span < nd ? (double)width * nd / span : nd;
  cli_need_memory(&a, "n", nd * (2 * dsize + 32) + cli_index_peak_bytes(RDX_KIND_RX, nd, backend) + (double)m * (dsize + 8) +
                               (double)mr * (2 * dsize + 16 + 8 * rows_per_range));
  cli_args_done(&a);
  rdx_context *ctx = cli_context(backend);
  rdx_info info;
  info.size = sizeof info;
  cli_must(ctx, rdx_info_get(&info), "info");
  int gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;

  rdx_array keys, q, r;
  double t_start = rdx_now_ms(), t0 = t_start;
  cli_progress("generating %lld keys, %lld lookups and %lld ranges", (long long)n, (long long)m, (long long)mr);
  cli_must(ctx, rdx_gen_keys(ctx, n, dtype, RDX_DIST_UNIFORM, 1.0, seed, &keys), "generate keys");
  cli_must(ctx, rdx_gen_lookups(ctx, keys, m, 0.9, RDX_MISS_INSIDE, 0.0, seed + 1, &q), "generate lookups");
  cli_must(ctx, rdx_gen_ranges(ctx, keys, mr, (uint64_t)width, seed + 2, &r), "generate ranges");
  cli_progress("sorting the oracle's copy of the keys");
  keys_oracle o;
  if (!keys_oracle_build(&o, keys, rdx_no_array())) cli_die(CLI_EXIT_FAILURE, "out of memory");
  cli_progress_clear();
  printf("raydex %s demo: %lld unique uniform %s keys, %lld point lookups (90%% hits), %lld ranges of width %lld\n",
         rdx_version_string(), (long long)n, cli_dtype_name(dtype), (long long)m, (long long)mr, (long long)width);
  printf("backend %s on %s (data generated in %.0f ms; every answer checked against the oracle)\n\n",
         rdx_backend_name(rdx_context_backend(ctx)), gpu ? info.gpu_name : info.cpu_name, rdx_now_ms() - t0);
  printf("%-7s %10s %16s %16s %14s %10s  %s\n", "kind", "build ms", "point lookups/s", "range lookups/s",
         "range rows/s", "bytes/key", "check");
  fflush(stdout);

  uint64_t *rows = (uint64_t *)malloc((size_t)m * 8);
  /* a range's rows, for comparison: at most n, and at most width */
  uint64_t *want = (uint64_t *)malloc(((size_t)(width < n ? width : n) + 1) * 8);
  if (!rows || !want) cli_die(CLI_EXIT_FAILURE, "out of memory");
  int failures = 0, n_kinds = 0;
  static const rdx_kind kinds[] = {RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH, RDX_KIND_SCAN,
                                   RDX_KIND_RX,     RDX_KIND_CGRX,  RDX_KIND_CGRXU};
  const int n_all = (int)(sizeof kinds / sizeof kinds[0]);
  for (int k = 0; k < n_all; k++) {
    const char *name = rdx_kind_name(kinds[k]);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    rdx_index *idx = NULL;
    cli_progress("%s (%d of %d): building", name, k + 1, n_all);
    t0 = rdx_now_ms();
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    double build_ms = rdx_now_ms() - t0;
    if (st == RDX_ERR_UNSUPPORTED) continue; /* kind not built for this backend */
    cli_must(ctx, st, "build");
    int64_t resident = 0;
    cli_must(ctx, rdx_index_bytes(ctx, idx, &resident, NULL), "bytes");
    int64_t mq = kinds[k] == RDX_KIND_SCAN ? (m < 1024 ? m : 1024) : m;
    int64_t mrq = kinds[k] == RDX_KIND_SCAN ? (mr < 1024 ? mr : 1024) : mr;
    cli_progress("%s (%d of %d): %lld point lookups", name, k + 1, n_all, (long long)mq);
    t0 = rdx_now_ms();
    cli_must(ctx, rdx_index_lookup(ctx, idx, prefix(q, mq), rdx_host_array(rows, mq, RDX_U64)), "lookup");
    double point_ms = rdx_now_ms() - t0;
    int ok = 1;
    for (int64_t i = 0; i < mq && ok; i++) ok = rows[i] == keys_oracle_lookup(&o, at(q, i));
    char range_s[32] = "-", rows_s[32] = "-";
    if (kinds[k] != RDX_KIND_HASH) {
      rdx_result *res = NULL;
      cli_progress("%s (%d of %d): %lld range lookups", name, k + 1, n_all, (long long)mrq);
      t0 = rdx_now_ms();
      cli_must(ctx, rdx_index_range_alloc(ctx, idx, prefix(r, mrq), &res), "range");
      double range_ms = rdx_now_ms() - t0;
      cli_progress("%s (%d of %d): checking", name, k + 1, n_all);
      for (int64_t i = 0; i < mrq && ok; i++) {
        uint64_t lo = at(r, 2 * i), hi = at(r, 2 * i + 1), c = keys_oracle_count(&o, lo, hi);
        ok = res->offsets[i + 1] - res->offsets[i] == c;
        if (ok) {
          keys_oracle_rows(&o, lo, hi, want);
          ok = memcmp(want, res->row_ids + res->offsets[i], c * 8) == 0;
        }
      }
      snprintf(range_s, sizeof range_s, "%.3g", (double)mrq / (range_ms / 1e3));
      snprintf(rows_s, sizeof rows_s, "%.3g", (double)res->total / (range_ms / 1e3));
      rdx_result_free(ctx, res);
    } else {
      /* ranges must be refused with a sentence, not answered wrongly */
      rdx_result *res = NULL;
      ok = ok && rdx_index_range_alloc(ctx, idx, prefix(r, 1), &res) == RDX_ERR_UNSUPPORTED;
    }
    char point_s[32];
    snprintf(point_s, sizeof point_s, "%.3g", (double)mq / (point_ms / 1e3));
    cli_progress_clear();
    printf("%-7s %10.1f %16s %16s %14s %10.2f  %s%s\n", name, build_ms, point_s, range_s, rows_s,
           (double)resident / (double)n, ok ? "ok" : "WRONG", mq < m ? " (first 1024 queries)" : "");
    fflush(stdout);
    failures += !ok;
    n_kinds++;
    rdx_index_destroy(idx);
  }
  printf("\nTimes are wall-clock from host arrays, so GPU rows include the transfers; `raydex bench keys` "
         "measures device-resident batches.\n");
  int n_joins = 0, join_failures = 0;
  if (r_path) {
    join_failures = demo_polygons(ctx, r_path, s_path, &n_joins);
  } else if (file_exists(r_map) && file_exists(s_map)) {
    join_failures = demo_polygons(ctx, r_map, s_map, &n_joins);
  } else {
    printf("\nPolygon overlay skipped: no %s (scripts/fetch-maps.sh --only us fetches the us-atlas maps; "
           "or give --maps DIR, or --r and --s)\n",
           file_exists(r_map) ? s_map : r_map);
  }
  fflush(stdout);
  free(rows);
  free(want);
  keys_oracle_free(&o);
  rdx_npy_free(&keys);
  rdx_npy_free(&q);
  rdx_npy_free(&r);
  if (failures || join_failures)
    cli_die(CLI_EXIT_FAILURE, "%d kind(s) and %d polygon join(s) gave wrong answers", failures, join_failures);
  char label[32];
  cli_report("%d kinds and %d polygon joins on %s, every answer checked against the oracle, %.1f s", n_kinds,
             n_joins, cli_backend_label(label, ctx, backend), (rdx_now_ms() - t_start) / 1e3);
  cli_context_close(ctx);
  return 0;
}
