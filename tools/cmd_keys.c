/*
 * cmd_keys.c: `raydex keys`, the stable command-line contract for key indexes (usage below,
 * which `raydex keys --help` prints).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "bench_api.h"

static const char usage[] =
    "usage: raydex keys --kind {scan,sorted,btree,hash,rx,cgrx} [--backend {auto,cpu,cuda,optix}]\n"
    "                   --keys K.npy [--rows R.npy] (--lookup Q.npy | --range LOHI.npy)\n"
    "                   --out OUT.npy [--counts-out C.npy] [--bucket-size N] [--quiet]\n"
    "\n"
    "Builds a key index over the 1-D u32 or u64 column K (row ids R, default 0..n-1) and answers one\n"
    "batch. --lookup without --counts-out: OUT is one u64 row id per query (the smallest among equal\n"
    "keys), 2^64-1 for a miss. With --counts-out, or with --range (LOHI: (m, 2), inclusive bounds):\n"
    "OUT holds every matching row id grouped by query in query order, ascending within a query, and\n"
    "C the count per query. --bucket-size (cgrx only, 1..65536, default 32): keys per bucket.\n"
    "On success one line on stderr says what ran (--quiet: none); outputs appear only then.\n"
    "Exit 0 on success, 2 with one line on stderr for bad input (also: --backend optix with a kind\n"
    "that does not use ray tracing, or when OptiX cannot run here; --range with hash).\n";

/* The scan kind reads every key per query, so it answers in chunks of this many queries and a
 * terminal shows its progress; the other kinds answer a batch in one call. */
#define SCAN_CHUNK 4096

static rdx_array rows_of(rdx_array a, int64_t first, int64_t count) {
  a.data = (char *)a.data + (size_t)first * (size_t)a.columns * rdx_dtype_size(a.dtype);
  a.count = count;
  return a;
}

static void check_column(const char *opt, const char *path, int nd, rdx_array a, int columns, rdx_dtype want) {
  int dtype_ok = want ? a.dtype == want : a.dtype == RDX_U32 || a.dtype == RDX_U64;
  if (nd != (columns == 1 ? 1 : 2) || a.columns != columns || !dtype_ok)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s must be %s %s%s (it is %d-D with %d columns, %s)", opt, path,
            columns == 1 ? "1-D" : "(m, 2)", want ? cli_dtype_name(want) : "u32 or u64", want ? " like the keys" : "", nd,
            a.columns, cli_dtype_name(a.dtype));
}

int cmd_keys(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  const char *kind_s = cli_opt(&a, "kind");
  if (!kind_s) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required");
  rdx_kind kind = cli_parse_kind("kind", kind_s);
  rdx_backend backend = cli_backend(&a, "backend");
  int64_t keys_bytes = 0, rows_bytes = 0, q_bytes = 0;
  const char *keys_p = cli_input(&a, "keys", 1, &keys_bytes);
  const char *rows_p = cli_input(&a, "rows", 0, &rows_bytes);
  const char *lookup_p = cli_input(&a, "lookup", 0, &q_bytes);
  const char *range_p = cli_input(&a, "range", 0, &q_bytes);
  if ((lookup_p != NULL) == (range_p != NULL)) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --lookup and --range");
  cli_output(&a, "out", 1);
  const char *counts_p = cli_output(&a, "counts-out", 0);
  int bucket = (int)cli_int(&a, "bucket-size", 1, 65536, 0);
  cli_applies(&a, "bucket-size", kind == RDX_KIND_CGRX, "--kind cgrx");
  cli_kind_fits(kind, backend, range_p ? "--range" : NULL);
  /* inputs held, the build's peak (at most one key per 4 bytes), 8-byte answers per 4-byte query */
  cli_need_memory(&a, "keys", (double)(keys_bytes + rows_bytes + q_bytes) + cli_index_peak_bytes(kind, keys_bytes / 4.0, backend) +
                                  4.0 * (double)q_bytes);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(backend);
  int nd;
  cli_progress("reading the inputs");
  rdx_array keys = cli_read_npy(ctx, "keys", keys_p, &nd);
  check_column("keys", keys_p, nd, keys, 1, 0);
  rdx_array rows = rdx_no_array();
  if (rows_p) {
    rows = cli_read_npy(ctx, "rows", rows_p, &nd);
    check_column("rows", rows_p, nd, rows, 1, 0);
    if (rows.count != keys.count)
      cli_die(CLI_EXIT_BAD_INPUT, "--rows %s has %lld entries but --keys has %lld", rows_p, (long long)rows.count, (long long)keys.count);
  }
  rdx_array q = cli_read_npy(ctx, lookup_p ? "lookup" : "range", lookup_p ? lookup_p : range_p, &nd);
  check_column(lookup_p ? "lookup" : "range", lookup_p ? lookup_p : range_p, nd, q, lookup_p ? 1 : 2, keys.dtype);

  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  bo.bucket_size = bucket;
  rdx_index *idx = NULL;
  cli_progress("building %s over %lld keys", kind_s, (long long)keys.count);
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_index_build(ctx, keys, rows, &bo, &idx), "build");
  double build_ms = rdx_now_ms() - t0;

  int64_t m = q.count, chunk = kind == RDX_KIND_SCAN ? SCAN_CHUNK : (m > 0 ? m : 1);
  uint64_t hits = 0, total = 0;
  size_t m_bytes = 0;
  if (!rdx_size_rows(m + 1, 1, 8, &m_bytes)) cli_die(CLI_EXIT_FAILURE, "%lld queries are too many", (long long)m);
  uint64_t *per_query = (uint64_t *)malloc(m_bytes); /* row ids (lookups), else counts */
  uint64_t *offsets = (uint64_t *)malloc((size_t)(chunk + 1) * 8), *found = NULL;
  if (!per_query || !offsets) cli_die(CLI_EXIT_FAILURE, "out of memory for %lld answers", (long long)m);
  t0 = rdx_now_ms();
  int all = counts_p != NULL || range_p != NULL;
  for (int64_t b = 0; b < m; b += chunk) {
    int64_t len = m - b < chunk ? m - b : chunk;
    cli_progress("answering %lld queries: %.0f%%", (long long)m, 100.0 * (double)b / (double)m);
    rdx_array qb = rows_of(q, b, len), pb = rdx_host_array(per_query + b, len, RDX_U64);
    if (!all) cli_must(ctx, rdx_index_lookup(ctx, idx, qb, pb), "lookup");
    else cli_must(ctx, range_p ? rdx_index_range_count(ctx, idx, qb, pb) : rdx_index_lookup_count(ctx, idx, qb, pb), "count");
  }
  for (int64_t i = 0; i < m; i++) hits += all ? per_query[i] > 0 : per_query[i] != RDX_MISS, total += all ? per_query[i] : 0;
  if (all) { /* the second phase: every match, chunk by chunk after the counts */
    size_t found_bytes = 0;
    if (total > (uint64_t)INT64_MAX || !rdx_size_mul((size_t)total, 8, &found_bytes) || !(found = (uint64_t *)malloc(found_bytes + 8)))
      cli_die(CLI_EXIT_FAILURE, "out of memory for %llu result rows", (unsigned long long)total);
    uint64_t base = 0;
    for (int64_t b = 0; b < m; b += chunk) {
      int64_t len = m - b < chunk ? m - b : chunk;
      uint64_t n_found = 0;
      cli_progress("collecting %llu rows: %.0f%%", (unsigned long long)total, 100.0 * (double)b / (double)m);
      rdx_array qb = rows_of(q, b, len), ob = rdx_host_array(offsets, len + 1, RDX_U64);
      cli_must(ctx, rdx_counts_to_offsets(ctx, rdx_host_array(per_query + b, len, RDX_U64), ob, &n_found), "offsets");
      rdx_array fb = rdx_host_array(found + base, (int64_t)n_found, RDX_U64);
      cli_must(ctx, range_p ? rdx_index_range_fill(ctx, idx, qb, ob, fb) : rdx_index_lookup_fill(ctx, idx, qb, ob, fb), "fill");
      base += n_found;
    }
  }
  double query_ms = rdx_now_ms() - t0;

  if (all) {
    cli_write_npy(ctx, "out", rdx_host_array(found, (int64_t)total, RDX_U64), 1);
    if (counts_p) cli_write_npy(ctx, "counts-out", rdx_host_array(per_query, m, RDX_U64), 1);
  } else {
    cli_write_npy(ctx, "out", rdx_host_array(per_query, m, RDX_U64), 1);
  }
  cli_commit_outputs();
  char label[32], rows_s[48] = "";
  if (all) snprintf(rows_s, sizeof rows_s, ", %llu rows", (unsigned long long)total);
  cli_report("%s on %s, %lld keys, %lld %s, %llu %s%s, build %.1f ms, query %.1f ms", kind_s,
             cli_backend_label(label, ctx, backend), (long long)keys.count, (long long)m, range_p ? "ranges" : "lookups",
             (unsigned long long)hits, range_p ? "non-empty" : "hits", rows_s, build_ms, query_ms);
  free(per_query);
  free(offsets);
  free(found);
  rdx_index_destroy(idx);
  rdx_npy_free(&keys);
  rdx_npy_free(&rows);
  rdx_npy_free(&q);
  cli_context_close(ctx);
  return 0;
}
