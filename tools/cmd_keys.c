/*
 * cmd_keys.c: `raydex keys`, the stable command-line contract for key indexes (usage below,
 * which `raydex keys --help` prints).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

static const char usage[] =
    "usage: raydex keys --kind {scan,sorted,btree,hash,rx,cgrx,cgrxu} [--backend {auto,cpu,cuda,optix}]\n"
    "                   (--keys K.npy [--rows R.npy] | --load FILE)\n"
    "                   [--insert I.npy [--insert-rows IR.npy]] [--erase E.npy]\n"
    "                   [(--lookup Q.npy | --range LOHI.npy) --out OUT.npy [--counts-out C.npy]]\n"
    "                   [--save FILE] [--bucket-size N] [--node-bytes N] [--quiet]\n"
    "\n"
    "Builds a key index over the 1-D u32 or u64 column K (row ids R, default 0..n-1), or loads one\n"
    "from a snapshot FILE (--kind must name the kind it holds), then applies the updates: the pairs\n"
    "of I (keys of the index's dtype) with row ids IR (u32 or u64; default: the rows after the\n"
    "index's last, rdx_index_next_row), then the erase of every row of each key in E. rx and cgrx\n"
    "rebuild their whole index for an update (RDX_UPDATE_REBUILD), the other kinds update in place.\n"
    "Then it answers one batch. --lookup without --counts-out: OUT is one u64 row id per query (the\n"
    "smallest among equal keys), 2^64-1 for a miss. With --counts-out, or with --range (LOHI:\n"
    "(m, 2), inclusive bounds): OUT holds every matching row id grouped by query in query order,\n"
    "ascending within a query, and C the count per query. A batch is required unless --save is\n"
    "given. --save writes the index, after the updates, as a snapshot FILE (crash safe: a temporary\n"
    "beside it, flushed, renamed over it; the same FILE as --load is fine).\n"
    "--bucket-size (cgrx, 1..65536, default 32): keys per bucket. --node-bytes (cgrxu, a power of\n"
    "two in 32..4096, default 128): bytes of (key, row) pairs per node; its buckets start as half a\n"
    "node. A loaded index keeps its own.\n"
    "On success one line on stderr says what ran (--quiet: none); outputs appear only then.\n"
    "Under mpirun (or another MPI launcher) each rank reads its near-equal share of K, R and the\n"
    "batch, one sharded index is built over all ranks (rdx_dist_index_build: rows are positions in\n"
    "K, or R's), updated with its shares of I, IR and E (rdx_dist_index_insert, _erase), and rank 0\n"
    "writes the outputs, the same files as one process writes; --load and --save are refused there.\n"
    "On a GPU backend the ranks of a machine take its GPUs in turn (local rank modulo the GPUs).\n"
    "Exit 0 on success, 2 with one line on stderr for bad input (also: a snapshot that is truncated,\n"
    "corrupted, of another kind or format; --backend optix with a kind that does not use ray\n"
    "tracing, or when OptiX cannot run here; --range with hash).\n";

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

/* A .npy input named by --opt as a 1-D column of the index's key dtype. */
static rdx_array read_keys_of(rdx_context *ctx, const char *opt, const char *path, rdx_dtype dtype) {
  int nd;
  rdx_array a = cli_read_npy(ctx, opt, path, &nd);
  check_column(opt, path, nd, a, 1, dtype);
  return a;
}

/* One near-equal share of a .npy input for this rank, its total rows in *total. */
static rdx_array read_share(rdx_context *ctx, rdx_comm *comm, const char *opt, const char *path, int columns,
                            rdx_dtype want, int64_t *total) {
  int nd;
  rdx_array a;
  char what[64];
  snprintf(what, sizeof what, "--%s", opt);
  cli_must(ctx, rdx_npy_read_share(ctx, path, rdx_comm_rank(comm), rdx_comm_size(comm), &a, &nd, NULL, total), what);
  check_column(opt, path, nd, a, columns, want);
  return a;
}

/* `mpirun raydex keys`: each rank its share of the inputs, one sharded index over all ranks, the
 * answers gathered to rank 0, which writes them as one process would. */
static int keys_mpi(rdx_context *ctx, rdx_backend backend, const char *kind_s, const rdx_build_options *bo,
                    const char *keys_p, const char *rows_p, const char *ins_p, const char *ins_rows_p,
                    const char *erase_p, const char *lookup_p, const char *range_p, const char *counts_p) {
  static const char fn[] = "raydex keys";
  rdx_comm *comm = NULL;
  cli_must(ctx, rdx_dist_world_begin(ctx, &comm), "mpi");
  const int root = rdx_comm_rank(comm) == 0;
  int64_t n_keys = 0, n_rows = 0, n_q = 0;
  cli_progress("reading this rank's share of the inputs");
  rdx_array keys = read_share(ctx, comm, "keys", keys_p, 1, 0, &n_keys), rows = rdx_no_array(), q = rdx_no_array();
  if (rows_p) {
    rows = read_share(ctx, comm, "rows", rows_p, 1, 0, &n_rows);
    if (n_rows != n_keys)
      cli_die(CLI_EXIT_BAD_INPUT, "--rows %s has %lld entries but --keys has %lld", rows_p, (long long)n_rows, (long long)n_keys);
  }
  const char *q_p = lookup_p ? lookup_p : range_p;
  if (q_p) q = read_share(ctx, comm, lookup_p ? "lookup" : "range", q_p, lookup_p ? 1 : 2, keys.dtype, &n_q);
  double t0 = rdx_now_ms();
  rdx_dist_index *di = NULL;
  cli_progress("building %s over %lld keys on %d ranks", kind_s, (long long)n_keys, rdx_comm_size(comm));
  cli_must(ctx, rdx_dist_index_build(comm, keys, rows, bo, &di), "build");
  const double build_ms = rdx_now_ms() - t0;
  /* the updates as one process makes them: the batch is the file's keys in order, the ranks'
   * shares concatenated, so implied rows continue from the same next_row */
  rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT;
  uo.flags = RDX_UPDATE_REBUILD;
  int64_t n_erased = 0, n_ins = 0;
  t0 = rdx_now_ms();
  if (ins_p) {
    rdx_array ins = read_share(ctx, comm, "insert", ins_p, 1, keys.dtype, &n_ins), ins_rows = rdx_no_array();
    if (ins_rows_p) {
      int64_t n_ins_rows = 0;
      ins_rows = read_share(ctx, comm, "insert-rows", ins_rows_p, 1, 0, &n_ins_rows);
      if (n_ins_rows != n_ins)
        cli_die(CLI_EXIT_BAD_INPUT, "--insert-rows %s has %lld entries but --insert has %lld", ins_rows_p,
                (long long)n_ins_rows, (long long)n_ins);
    }
    cli_progress("inserting %lld keys on %d ranks", (long long)n_ins, rdx_comm_size(comm));
    cli_must(ctx, rdx_dist_index_insert(comm, di, ins, ins_rows, &uo), "insert");
    rdx_npy_free(&ins);
    rdx_npy_free(&ins_rows);
  }
  if (erase_p) {
    int64_t n_era = 0;
    rdx_array era = read_share(ctx, comm, "erase", erase_p, 1, keys.dtype, &n_era);
    cli_progress("erasing %lld keys on %d ranks", (long long)n_era, rdx_comm_size(comm));
    cli_must(ctx, rdx_dist_index_erase(comm, di, era, &uo, &n_erased), "erase");
    rdx_npy_free(&era);
  }
  const double update_ms = rdx_now_ms() - t0;
  const int all = counts_p != NULL || range_p != NULL;
  const int64_t m = q.count;
  uint64_t *per_query = (uint64_t *)malloc((size_t)(m > 0 ? m : 1) * 8); /* row ids (lookups), else counts */
  if (per_query == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory for %lld answers", (long long)m);
  rdx_result *res = NULL;
  t0 = rdx_now_ms();
  if (q_p && !all) {
    cli_must(ctx, rdx_dist_index_lookup(comm, di, q, rdx_host_array(per_query, m, RDX_U64)), "lookup");
  } else if (q_p) {
    cli_must(ctx, range_p ? rdx_dist_index_range_alloc(comm, di, q, &res) : rdx_dist_index_lookup_alloc(comm, di, q, &res),
             range_p ? "range" : "lookup");
    for (int64_t i = 0; i < m; i++) per_query[i] = res->offsets[i + 1] - res->offsets[i];
  }
  const double query_ms = rdx_now_ms() - t0;
  void *g_per = NULL, *g_found = NULL;
  int64_t n_per = 0, n_found = 0;
  if (q_p) {
    cli_must(ctx, rdx_dist_gather_root(comm, fn, per_query, m, 8, &g_per, &n_per), "gather");
    if (all)
      cli_must(ctx, rdx_dist_gather_root(comm, fn, res->row_ids, (int64_t)res->total, 8, &g_found, &n_found), "gather");
  }
  const int64_t held = rdx_dist_index_count(di);
  if (root) {
    uint64_t hits = 0;
    const uint64_t *pq = (const uint64_t *)g_per;
    for (int64_t i = 0; i < n_per; i++) hits += all ? pq[i] > 0 : pq[i] != RDX_MISS;
    if (q_p && all) {
      cli_write_npy(ctx, "out", rdx_host_array(g_found, n_found, RDX_U64), 1);
      if (counts_p) cli_write_npy(ctx, "counts-out", rdx_host_array(g_per, n_per, RDX_U64), 1);
    } else if (q_p) {
      cli_write_npy(ctx, "out", rdx_host_array(g_per, n_per, RDX_U64), 1);
    }
    cli_commit_outputs();
    char label[32], rows_s[48] = "", query_s[128] = "";
    if (all) snprintf(rows_s, sizeof rows_s, ", %lld rows", (long long)n_found);
    if (q_p)
      snprintf(query_s, sizeof query_s, ", %lld %s, %llu %s%s, query %.1f ms", (long long)n_per,
               range_p ? "ranges" : "lookups", (unsigned long long)hits, range_p ? "non-empty" : "hits", rows_s, query_ms);
    char upd_s[96] = "";
    if (ins_p || erase_p)
      snprintf(upd_s, sizeof upd_s, ", %lld inserted, %lld erased, update %.1f ms", (long long)n_ins, (long long)n_erased,
               update_ms);
    cli_report("%s on %s, %d rank%s, %lld keys, build %.1f ms%s%s", kind_s, cli_backend_label(label, ctx, backend),
               rdx_comm_size(comm), rdx_comm_size(comm) == 1 ? "" : "s", (long long)held, build_ms, upd_s, query_s);
  }
  free(g_per);
  free(g_found);
  free(per_query);
  rdx_result_free(ctx, res);
  rdx_dist_index_destroy(di);
  rdx_npy_free(&keys);
  rdx_npy_free(&rows);
  rdx_npy_free(&q);
  rdx_dist_world_end(comm);
  cli_context_close(ctx);
  return 0;
}

int cmd_keys(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  const char *kind_s = cli_opt(&a, "kind");
  if (!kind_s) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required");
  rdx_kind kind = cli_parse_kind("kind", kind_s);
  rdx_backend backend = cli_backend(&a, "backend");
  int64_t keys_bytes = 0, rows_bytes = 0, q_bytes = 0, load_bytes = 0, upd_bytes = 0, file_bytes = 0;
  const char *load_p = cli_input(&a, "load", 0, &load_bytes);
  const char *keys_p = cli_input(&a, "keys", 0, &keys_bytes);
  if ((keys_p != NULL) == (load_p != NULL)) cli_die(CLI_EXIT_BAD_INPUT, "give exactly one of --keys and --load");
  const char *rows_p = cli_input(&a, "rows", 0, &rows_bytes);
  if (rows_p && load_p) cli_die(CLI_EXIT_BAD_INPUT, "--rows goes with --keys; a loaded index has its own rows");
  const char *ins_p = cli_input(&a, "insert", 0, &file_bytes);
  upd_bytes += file_bytes;
  const char *ins_rows_p = cli_input(&a, "insert-rows", 0, &file_bytes);
  upd_bytes += file_bytes;
  if (ins_rows_p && !ins_p) cli_die(CLI_EXIT_BAD_INPUT, "--insert-rows goes with --insert");
  const char *erase_p = cli_input(&a, "erase", 0, &file_bytes);
  upd_bytes += file_bytes;
  const char *lookup_p = cli_input(&a, "lookup", 0, &q_bytes);
  const char *range_p = cli_input(&a, "range", 0, &q_bytes);
  /* --save may name the file --load read: the snapshot is read whole before the save replaces it */
  const char *save_p = cli_opt(&a, "save");
  int save_over_load = 0;
  if (save_p && load_p) {
    char *s = realpath(save_p, NULL), *l = realpath(load_p, NULL);
    save_over_load = s && l && strcmp(s, l) == 0;
    free(s);
    free(l);
  }
  if (save_p && !save_over_load) cli_output(&a, "save", 0);
  int query = lookup_p != NULL || range_p != NULL;
  if (lookup_p && range_p) cli_die(CLI_EXIT_BAD_INPUT, "give at most one of --lookup and --range");
  if (!query && !save_p) cli_die(CLI_EXIT_BAD_INPUT, "give one of --lookup and --range, or --save");
  const char *out_p = cli_output(&a, "out", query);
  if (out_p && !query) cli_die(CLI_EXIT_BAD_INPUT, "--out goes with --lookup or --range");
  const char *counts_p = cli_output(&a, "counts-out", 0);
  if (counts_p && !query) cli_die(CLI_EXIT_BAD_INPUT, "--counts-out goes with --lookup or --range");
  int bucket = (int)cli_int(&a, "bucket-size", 1, 65536, 0);
  int node_bytes = (int)cli_int(&a, "node-bytes", 32, 4096, 0);
  if (node_bytes & (node_bytes - 1)) cli_die(CLI_EXIT_BAD_INPUT, "--node-bytes %d is not a power of two", node_bytes);
  cli_applies(&a, "bucket-size", kind == RDX_KIND_CGRX && !load_p, "--kind cgrx with --keys (a loaded index keeps its own)");
  cli_applies(&a, "node-bytes", kind == RDX_KIND_CGRXU && !load_p, "--kind cgrxu with --keys (a loaded index keeps its own)");
  cli_kind_fits(kind, backend, range_p ? "--range" : NULL);
  /* inputs held, the build's peak (at most one key per 4 bytes; a snapshot holds 8 or 16 bytes a
   * key, read whole), 8-byte answers per 4-byte query */
  double n_keys = (double)keys_bytes / 4.0 + (double)load_bytes / 8.0 + (double)upd_bytes / 4.0;
  cli_need_memory(&a, load_p ? "load" : "keys", (double)(keys_bytes + rows_bytes + q_bytes + 2 * load_bytes + upd_bytes) +
                                                    cli_index_peak_bytes(kind, n_keys, backend) + 4.0 * (double)q_bytes);
  cli_args_done(&a);

  rdx_context *ctx = cli_context(backend);
  rdx_dist_info dist;
  dist.size = sizeof dist;
  if (rdx_dist_info_get(&dist) == RDX_OK && dist.mpi_rank >= 0) { /* launched by mpirun */
    if (load_p || save_p)
      cli_die(CLI_EXIT_BAD_INPUT, "under mpirun --load and --save are not supported (one process: run raydex keys "
                                  "without mpirun)");
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kind;
    bo.bucket_size = bucket;
    bo.node_bytes = node_bytes;
    return keys_mpi(ctx, backend, kind_s, &bo, keys_p, rows_p, ins_p, ins_rows_p, erase_p, lookup_p, range_p, counts_p);
  }
  int nd;
  rdx_index *idx = NULL;
  rdx_array keys = rdx_no_array(), rows = rdx_no_array();
  double t0 = rdx_now_ms(), build_ms;
  if (load_p) {
    cli_progress("loading %s", load_p);
    cli_must(ctx, rdx_index_load(ctx, load_p, &idx), "load");
    if (rdx_index_kind(idx) != kind)
      cli_die(CLI_EXIT_BAD_INPUT, "--kind %s but --load %s holds a %s index", kind_s, load_p, rdx_kind_name(rdx_index_kind(idx)));
    build_ms = rdx_now_ms() - t0;
  } else {
    cli_progress("reading the inputs");
    keys = cli_read_npy(ctx, "keys", keys_p, &nd);
    check_column("keys", keys_p, nd, keys, 1, 0);
    if (rows_p) {
      rows = cli_read_npy(ctx, "rows", rows_p, &nd);
      check_column("rows", rows_p, nd, rows, 1, 0);
      if (rows.count != keys.count)
        cli_die(CLI_EXIT_BAD_INPUT, "--rows %s has %lld entries but --keys has %lld", rows_p, (long long)rows.count, (long long)keys.count);
    }
  }
  rdx_dtype dtype = load_p ? rdx_index_dtype(idx) : keys.dtype;
  rdx_array ins = rdx_no_array(), ins_rows = rdx_no_array(), era = rdx_no_array(), q = rdx_no_array();
  if (ins_p) ins = read_keys_of(ctx, "insert", ins_p, dtype);
  if (ins_rows_p) {
    ins_rows = cli_read_npy(ctx, "insert-rows", ins_rows_p, &nd);
    check_column("insert-rows", ins_rows_p, nd, ins_rows, 1, 0);
    if (ins_rows.count != ins.count)
      cli_die(CLI_EXIT_BAD_INPUT, "--insert-rows %s has %lld entries but --insert has %lld", ins_rows_p,
              (long long)ins_rows.count, (long long)ins.count);
  }
  if (erase_p) era = read_keys_of(ctx, "erase", erase_p, dtype);
  if (query) {
    q = cli_read_npy(ctx, lookup_p ? "lookup" : "range", lookup_p ? lookup_p : range_p, &nd);
    check_column(lookup_p ? "lookup" : "range", lookup_p ? lookup_p : range_p, nd, q, lookup_p ? 1 : 2, dtype);
  }

  if (!load_p) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kind;
    bo.bucket_size = bucket;
    bo.node_bytes = node_bytes;
    cli_progress("building %s over %lld keys", kind_s, (long long)keys.count);
    t0 = rdx_now_ms();
    cli_must(ctx, rdx_index_build(ctx, keys, rows, &bo, &idx), "build");
    build_ms = rdx_now_ms() - t0;
  }
  /* the user asked for the updates: rx and cgrx rebuild for them (the others ignore the flag) */
  rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT;
  uo.flags = RDX_UPDATE_REBUILD;
  int64_t n_erased = 0;
  t0 = rdx_now_ms();
  if (ins_p) {
    cli_progress("inserting %lld keys", (long long)ins.count);
    cli_must(ctx, rdx_index_insert(ctx, idx, ins, ins_rows, &uo), "insert");
  }
  if (erase_p) {
    cli_progress("erasing %lld keys", (long long)era.count);
    cli_must(ctx, rdx_index_erase(ctx, idx, era, &uo, &n_erased), "erase");
  }
  double update_ms = rdx_now_ms() - t0;

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

  if (query && all) {
    cli_write_npy(ctx, "out", rdx_host_array(found, (int64_t)total, RDX_U64), 1);
    if (counts_p) cli_write_npy(ctx, "counts-out", rdx_host_array(per_query, m, RDX_U64), 1);
  } else if (query) {
    cli_write_npy(ctx, "out", rdx_host_array(per_query, m, RDX_U64), 1);
  }
  /* the snapshot before the outputs are committed: a refused save leaves no output either */
  double save_ms = 0;
  if (save_p) {
    cli_progress("saving %s", save_p);
    t0 = rdx_now_ms();
    cli_must(ctx, rdx_index_save(ctx, idx, save_p), "save");
    save_ms = rdx_now_ms() - t0;
  }
  cli_commit_outputs();
  char label[32], rows_s[48] = "", upd_s[96] = "", query_s[128] = "", save_s[48] = "";
  if (all) snprintf(rows_s, sizeof rows_s, ", %llu rows", (unsigned long long)total);
  if (ins_p || erase_p)
    snprintf(upd_s, sizeof upd_s, ", %lld inserted, %lld erased, update %.1f ms", (long long)ins.count, (long long)n_erased,
             update_ms);
  if (query)
    snprintf(query_s, sizeof query_s, ", %lld %s, %llu %s%s", (long long)m, range_p ? "ranges" : "lookups",
             (unsigned long long)hits, range_p ? "non-empty" : "hits", rows_s);
  if (save_p) snprintf(save_s, sizeof save_s, ", save %.1f ms", save_ms);
  char qtime_s[48] = "";
  if (query) snprintf(qtime_s, sizeof qtime_s, ", query %.1f ms", query_ms);
  cli_report("%s on %s, %lld keys, %s %.1f ms%s%s%s%s", kind_s, cli_backend_label(label, ctx, backend),
             (long long)rdx_index_count(idx), load_p ? "load" : "build", build_ms, upd_s, query_s, qtime_s, save_s);
  free(per_query);
  free(offsets);
  free(found);
  rdx_index_destroy(idx);
  rdx_npy_free(&keys);
  rdx_npy_free(&rows);
  rdx_npy_free(&q);
  rdx_npy_free(&ins);
  rdx_npy_free(&ins_rows);
  rdx_npy_free(&era);
  cli_context_close(ctx);
  return 0;
}
