/*
 * cmd_keys.c: `raydex keys`, the stable command-line contract for key indexes (usage below,
 * which `raydex keys --help` prints).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
    "usage: raydex keys --kind {scan,sorted,btree,hash,rx,cgrx} [--backend {auto,cpu,cuda,optix}]\n"
    "                   --keys K.npy [--rows R.npy] (--lookup Q.npy | --range LOHI.npy)\n"
    "                   --out OUT.npy [--counts-out C.npy] [--bucket-size N]\n"
    "\n"
    "Builds a key index over the 1-D u32 or u64 column K (row ids R, default 0..n-1) and answers one\n"
    "batch. --lookup without --counts-out: OUT is one u64 row id per query (the smallest among equal\n"
    "keys), 2^64-1 for a miss. With --counts-out, or with --range (LOHI: (m, 2), inclusive bounds):\n"
    "OUT holds every matching row id grouped by query in query order, ascending within a query, and\n"
    "C the count per query. --bucket-size: keys per bucket of cgrx.\n"
    "Exit 0 on success, 2 with one line on stderr for bad input (also: --backend optix with a kind\n"
    "that does not use ray tracing, or when OptiX cannot run here).\n";

int cmd_keys(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  const char *kind_s = cli_opt(&a, "kind");
  const char *backend_s = cli_opt(&a, "backend");
  const char *keys_p = cli_opt(&a, "keys");
  const char *rows_p = cli_opt(&a, "rows");
  const char *lookup_p = cli_opt(&a, "lookup");
  const char *range_p = cli_opt(&a, "range");
  const char *out_p = cli_opt(&a, "out");
  const char *counts_p = cli_opt(&a, "counts-out");
  int64_t bucket = cli_int(&a, "bucket-size", 0);
  cli_args_done(&a);
  if (!kind_s) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required");
  if (!keys_p) cli_die(CLI_EXIT_BAD_INPUT, "--keys is required");
  if (!out_p) cli_die(CLI_EXIT_BAD_INPUT, "--out is required");
  if ((lookup_p != NULL) == (range_p != NULL))
    cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --lookup and --range");
  rdx_kind kind = cli_kind(kind_s);
  rdx_backend backend = cli_backend(backend_s ? backend_s : "auto");
  if (bucket != 0 && kind != RDX_KIND_CGRX)
    cli_die(CLI_EXIT_BAD_INPUT, "--bucket-size applies to --kind cgrx only");
  if (bucket < 0 || bucket > 65536) cli_die(CLI_EXIT_BAD_INPUT, "--bucket-size %lld is not in [1, 65536]", (long long)bucket);
  rdx_context *ctx = cli_context(backend);
  /* optix means OptiX: the kinds without rays are not quietly run on the cuda backend instead */
  if (backend == RDX_BACKEND_OPTIX && kind != RDX_KIND_RX && kind != RDX_KIND_CGRX)
    cli_die(CLI_EXIT_BAD_INPUT, "--backend optix runs the ray-tracing kinds rx and cgrx only; use --backend cuda for --kind %s",
            kind_s);

  int nd;
  rdx_array keys = cli_read_npy(ctx, "keys", keys_p, &nd);
  if (nd != 1 || (keys.dtype != RDX_U32 && keys.dtype != RDX_U64))
    cli_die(CLI_EXIT_BAD_INPUT, "--keys %s must be 1-D u32 or u64 (it is %d-D %s)", keys_p, nd, cli_dtype_name(keys.dtype));
  rdx_array rows = rdx_no_array();
  if (rows_p) {
    rows = cli_read_npy(ctx, "rows", rows_p, &nd);
    if (nd != 1 || (rows.dtype != RDX_U32 && rows.dtype != RDX_U64))
      cli_die(CLI_EXIT_BAD_INPUT, "--rows %s must be 1-D u32 or u64 (it is %d-D %s)", rows_p, nd, cli_dtype_name(rows.dtype));
    if (rows.count != keys.count)
      cli_die(CLI_EXIT_BAD_INPUT, "--rows %s has %lld entries but --keys has %lld", rows_p, (long long)rows.count, (long long)keys.count);
  }
  rdx_array q;
  if (lookup_p) {
    q = cli_read_npy(ctx, "lookup", lookup_p, &nd);
    if (nd != 1 || q.dtype != keys.dtype)
      cli_die(CLI_EXIT_BAD_INPUT, "--lookup %s must be 1-D %s like the keys (it is %d-D %s)", lookup_p,
              cli_dtype_name(keys.dtype), nd, cli_dtype_name(q.dtype));
  } else {
    q = cli_read_npy(ctx, "range", range_p, &nd);
    if (nd != 2 || q.columns != 2 || q.dtype != keys.dtype)
      cli_die(CLI_EXIT_BAD_INPUT, "--range %s must be (m, 2) %s like the keys (it is %d-D with %d columns, %s)", range_p,
              cli_dtype_name(keys.dtype), nd, q.columns, cli_dtype_name(q.dtype));
  }

  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  bo.bucket_size = (int)bucket;
  rdx_index *idx = NULL;
  rdx_status st = rdx_index_build(ctx, keys, rows, &bo, &idx);
  if (st != RDX_OK) cli_die_status(ctx, st, "build");

  if (lookup_p && !counts_p) {
    uint64_t *out = (uint64_t *)malloc((size_t)(q.count ? q.count : 1) * 8);
    if (!out) cli_die(CLI_EXIT_FAILURE, "out of memory");
    st = rdx_index_lookup(ctx, idx, q, rdx_host_array(out, q.count, RDX_U64));
    if (st != RDX_OK) cli_die_status(ctx, st, "lookup");
    cli_write_npy(ctx, "out", out_p, rdx_host_array(out, q.count, RDX_U64));
    free(out);
  } else {
    rdx_result *r = NULL;
    st = lookup_p ? rdx_index_lookup_alloc(ctx, idx, q, &r) : rdx_index_range_alloc(ctx, idx, q, &r);
    if (st != RDX_OK) cli_die_status(ctx, st, lookup_p ? "lookup" : "range");
    cli_write_npy(ctx, "out", out_p, rdx_host_array(r->row_ids, (int64_t)r->total, RDX_U64));
    if (counts_p) {
      uint64_t *c = (uint64_t *)malloc((size_t)(q.count ? q.count : 1) * 8);
      if (!c) cli_die(CLI_EXIT_FAILURE, "out of memory");
      for (int64_t i = 0; i < q.count; i++) c[i] = r->offsets[i + 1] - r->offsets[i];
      cli_write_npy(ctx, "counts-out", counts_p, rdx_host_array(c, q.count, RDX_U64));
      free(c);
    }
    rdx_result_free(ctx, r);
  }
  rdx_index_destroy(idx);
  rdx_npy_free(&keys);
  rdx_npy_free(&rows);
  rdx_npy_free(&q);
  cli_context_close(ctx);
  return 0;
}
