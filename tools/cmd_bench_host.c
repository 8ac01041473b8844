/*
 * cmd_bench_host.c: `raydex bench host`, issue 31's end-to-end experiment: every call from host
 * memory against the same call with its inputs and outputs already in device memory, beside the
 * link's own speed measured in the same run.
 *
 * 1. The link: rdx_copy of --link-bytes host->device and device->host, from and to pinned memory
 *    (rdx_malloc RDX_HOST_PINNED: the copy engines' ceiling) and pageable memory (malloc, every
 *    page touched first), the latter with the context's staging forced DIRECT (the driver's own
 *    path) and left AUTO (through the staging ring, src/core/staging.cu).
 * 2. The calls: key index builds (sorted, hash), point lookups on a sorted index, a bottom-up
 *    quadtree build and window queries with their CSR result (rdx_points_query_alloc). Each runs
 *    with inputs and outputs in device memory (where=device: the device-only time), then from
 *    pageable host memory through the ring (path=ring) and through the driver (path=direct), and
 *    from pinned host memory the caller holds (path=pinned: inputs copied there before the clock;
 *    window queries then count and fill into pinned arrays instead of rdx_points_query_alloc).
 *
 * Protocol (METHOD.md): inputs generated from the seed on a CPU context and placed before any
 * clock starts; one warm-up run, then the median of --reps runs; the calls are synchronous, so a
 * host clock around each covers its device work and its copies. Frees (an index's destroy, a
 * result's rdx_result_free) happen outside the clock. Each part frees what it made before the
 * next one starts, so the largest part alone sets the memory needed.
 *
 * Each call row's ratio is ms / (bytes_moved / pinned link bytes-per-ms + device_ms): 1 means
 * the host call costs exactly its copies at the pinned link's speed plus the device work, with no
 * overlap; below 1, copies overlap work. Its check compares the host run's answers with the
 * device run's (results copied back; for builds the index's count, resident bytes and the answers
 * of a sample of lookups, or the quadtree's nodes). A DIFFERS row makes the command exit 1 after
 * the last row. On the CPU backend the link rows are skipped, "device" is the same host memory and
 * the host row is one run with path "-".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_api.h"
#include "cli.h"

const char cli_bench_host_usage[] =
    "usage: raydex bench host [--backend cuda|cpu|auto] [--op link,keys_build_sorted,...] [--link-bytes 2^30]\n"
    "            [--n 2^26] [--lookups 2^27] [--points 170000000] [--queries 2^20] [--dist uniform|clustered|taxi]\n"
    "            [--dtype f32|f64] [--leaf-capacity 200] [--max-depth 16] [--size S] [--reps 5] [--seed 1]\n"
    "            [--header] [--quiet]\n"
    "   every call from host memory against the same call on device memory (issue 31), one CSV row per\n"
    "   measurement: op, where (pinned|pageable for the link, device|host for calls), path (ring: through\n"
    "   the context's staging ring; direct: the driver's own copy of pageable memory; pinned: the\n"
    "   caller's arrays in pinned memory, windows counted and filled into them), n, bytes_moved\n"
    "   (inputs in plus outputs back), ms (median of --reps after a warm-up), device_ms (the same call\n"
    "   on device memory, this run), link_gbps (the pinned link, matching direction or mix, 1e9 B/s)\n"
    "   and ratio = ms / (bytes_moved / pinned link speed + device_ms); check: host answers = device's\n"
    "   --op (default all): link (rdx_copy of --link-bytes each way, pinned and pageable),\n"
    "          keys_build_sorted, keys_build_hash (--n uniform u32 keys), keys_lookup (--lookups hits on a\n"
    "          sorted index, u64 row ids back), points_build (--points points of --dist and --dtype,\n"
    "          bottom-up quadtree, --leaf-capacity, --max-depth), points_window (--queries windows of\n"
    "          side --size, default about 64 points a query on uniform points, with their CSR result)\n"
    "   on a GPU the pinned link is measured in every run (the ratios need it), its rows printed with --op link\n"
    "   --backend cpu: no link rows; device means the same host memory (a check that the command runs)\n";

enum { OP_LINK, OP_BUILD_SORTED, OP_BUILD_HASH, OP_LOOKUP, OP_POINTS_BUILD, OP_POINTS_WINDOW, N_OPS };
static const char *const op_names[N_OPS] = {"link",        "keys_build_sorted", "keys_build_hash",
                                            "keys_lookup", "points_build",      "points_window"};

typedef struct cfg {
  int want[N_OPS];
  int64_t link_bytes, n, lookups, points, queries;
  rdx_point_dist dist;
  rdx_dtype pdtype;
  int cap, depth, reps;
  double size;
  uint64_t seed;
} cfg;

/* The run's state: contexts, the pinned link's speed and what the rows share. */
typedef struct bench {
  rdx_context *ctx, *gen; /* the measured backend; a CPU context for the generators */
  int gpu, reps, n_rows, n_differ;
  double *t;              /* reps timings */
  double h2d, d2h;        /* the pinned link, bytes per ms each way (0: not measured, cpu) */
  char date[32], device[160], label[32];
} bench;

/* ---- rows ---- */

static void header(void) { printf("date,device,backend,op,where,path,n,bytes_moved,ms,device_ms,link_gbps,ratio,check\n"); }

/* One row. in and out are the bytes a host call moves each way (link_gbps and the ratio's link
 * time come from them); moved says whether this row moved them (device rows move nothing, and
 * their ratio is 1 by definition). */
static void emit(bench *b, const char *op, const char *where, const char *path, int64_t n, double in, double out,
                 int moved, double ms, double device_ms, const char *check) {
  const double link_ms = (b->h2d > 0 ? in / b->h2d : 0) + (b->d2h > 0 ? out / b->d2h : 0);
  const double gbps = link_ms > 0 ? (in + out) / link_ms / 1e6 : 0;
  const double expect = (moved ? link_ms : 0) + device_ms;
  cli_progress_clear();
  printf("%s,%s,%s,%s,%s,%s,%lld,%.0f,%.4f,%.4f,%.3f,%.3f,%s\n", b->date, b->device, b->label, op, where, path,
         (long long)n, moved ? in + out : 0.0, ms, device_ms, gbps, expect > 0 ? ms / expect : 0.0, check);
  fflush(stdout);
  b->n_rows++;
  if (strcmp(check, "DIFFERS") == 0) {
    b->n_differ++;
    fprintf(stderr, "raydex bench host: %s %s %s: the answers differ from the device run's\n", op, where, path);
  }
}

/* One run's milliseconds; the state carries what it made (the last run's stays for the check). */
typedef double (*run_fn)(bench *b, void *state);

/* One warm-up run, then the median of --reps. */
static double median_ms(bench *b, run_fn f, void *state) {
  for (int r = -1; r < b->reps; r++) {
    double ms = f(b, state);
    if (r >= 0) b->t[r] = ms;
  }
  return cli_median(b->t, b->reps);
}

/* The host runs: through the ring and the driver on GPUs, once on the CPU. */
typedef struct host_path {
  const char *name;
  int mode;
  int pinned; /* the call's host arrays are pinned memory the caller holds (rdx_malloc RDX_HOST_PINNED) */
} host_path;
static int host_paths(const bench *b, host_path p[3]) {
  if (!b->gpu) {
    p[0].name = "-", p[0].mode = RDX_STAGING_AUTO, p[0].pinned = 0;
    return 1;
  }
  /* AUTO is the ring unless the context could not have one (the pinned memory was refused) */
  p[0].name = rdx_staging_bytes(b->ctx) ? "ring" : "none", p[0].mode = RDX_STAGING_AUTO, p[0].pinned = 0;
  p[1].name = "direct", p[1].mode = RDX_STAGING_DIRECT, p[1].pinned = 0;
  p[2].name = "pinned", p[2].mode = RDX_STAGING_AUTO, p[2].pinned = 1;
  return 3;
}

static size_t array_bytes(rdx_array a) { return (size_t)a.count * (size_t)a.columns * rdx_dtype_size(a.dtype); }

/* A host array as the path hands it to the call: itself, or a copy in pinned memory (free with
 * path_release). */
static rdx_array path_array(bench *b, const host_path *p, rdx_array a) {
  if (!p->pinned) return a;
  void *pin = NULL;
  cli_must(b->ctx, rdx_malloc(b->ctx, &pin, array_bytes(a) ? array_bytes(a) : 1, RDX_HOST_PINNED), "pinned copy");
  memcpy(pin, a.data, array_bytes(a));
  a.data = pin;
  return a;
}
static void path_release(bench *b, const host_path *p, rdx_array a) {
  if (p->pinned) rdx_free(b->ctx, a.data, RDX_HOST_PINNED);
}

static void *must_malloc(size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (p == NULL) cli_die(CLI_EXIT_FAILURE, "out of host memory for %s (%zu bytes)", what, bytes);
  return p;
}

/* ---- 1. the link ---- */

typedef struct copy_run {
  void *dst;
  rdx_location dst_where;
  const void *src;
  rdx_location src_where;
  size_t bytes;
} copy_run;

static double run_copy(bench *b, void *state) {
  const copy_run *c = (const copy_run *)state;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_copy(b->ctx, c->dst, c->dst_where, c->src, c->src_where, c->bytes), "copy");
  return rdx_now_ms() - t0;
}

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The pinned link always (the calls' ratios need it); its rows and the pageable ones when asked.
 * Each check: the bytes read back equal the bytes sent (an h2d row's device copy read back
 * through pinned memory; a d2h row's pageable or pinned destination). */
static void part_link(bench *b, const cfg *c) {
  rdx_context *ctx = b->ctx;
  const size_t bytes = (size_t)c->link_bytes;
  const int show = c->want[OP_LINK];
  void *dev = NULL, *pin = NULL;
  cli_must(ctx, rdx_malloc(ctx, &dev, bytes, RDX_DEVICE), "device buffer");
  cli_must(ctx, rdx_malloc(ctx, &pin, bytes, RDX_HOST_PINNED), "pinned buffer");
  unsigned char *src = (unsigned char *)must_malloc(bytes, "the link's source");
  uint64_t s = c->seed;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t v = mix(&s);
    memcpy(src + i, &v, bytes - i < 8 ? bytes - i : 8);
  }
  cli_progress("link: %zu bytes, pinned", bytes);
  memcpy(pin, src, bytes);
  copy_run in = {dev, RDX_DEVICE, pin, RDX_HOST_PINNED, bytes}, out = {pin, RDX_HOST_PINNED, dev, RDX_DEVICE, bytes};
  const double in_ms = median_ms(b, run_copy, &in);
  memset(pin, 0, bytes);
  const double out_ms = median_ms(b, run_copy, &out);
  const char *check = memcmp(pin, src, bytes) == 0 ? "same" : "DIFFERS";
  b->h2d = (double)bytes / in_ms;
  b->d2h = (double)bytes / out_ms;
  if (show) {
    emit(b, "link_h2d", "pinned", "direct", (int64_t)bytes, (double)bytes, 0, 1, in_ms, 0, check);
    emit(b, "link_d2h", "pinned", "direct", (int64_t)bytes, 0, (double)bytes, 1, out_ms, 0, check);
    unsigned char *dst = (unsigned char *)must_malloc(bytes, "the link's destination");
    memset(dst, 0, bytes); /* every page touched */
    host_path p[3];
    const int n_paths = host_paths(b, p);
    for (int k = 0; k < n_paths; k++) {
      if (p[k].pinned) continue; /* the pinned rows above */
      cli_progress("link: %zu bytes, pageable, %s", bytes, p[k].name);
      rdx_staging_force(ctx, p[k].mode);
      memset(pin, 0, bytes);
      cli_must(ctx, rdx_copy(ctx, dev, RDX_DEVICE, pin, RDX_HOST_PINNED, bytes), "clear"); /* no stale bytes */
      copy_run pin_in = {dev, RDX_DEVICE, src, RDX_HOST, bytes}, pin_out = {dst, RDX_HOST, dev, RDX_DEVICE, bytes};
      const double ms_in = median_ms(b, run_copy, &pin_in);
      cli_must(ctx, rdx_copy(ctx, pin, RDX_HOST_PINNED, dev, RDX_DEVICE, bytes), "read back");
      const char *check_in = memcmp(pin, src, bytes) == 0 ? "same" : "DIFFERS";
      memset(dst, 0, bytes);
      const double ms_out = median_ms(b, run_copy, &pin_out);
      const char *check_out = memcmp(dst, src, bytes) == 0 ? "same" : "DIFFERS";
      emit(b, "link_h2d", "pageable", p[k].name, (int64_t)bytes, (double)bytes, 0, 1, ms_in, 0, check_in);
      emit(b, "link_d2h", "pageable", p[k].name, (int64_t)bytes, 0, (double)bytes, 1, ms_out, 0, check_out);
    }
    rdx_staging_force(ctx, RDX_STAGING_AUTO);
    free(dst);
  }
  free(src);
  rdx_free(ctx, pin, RDX_HOST_PINNED);
  rdx_free(ctx, dev, RDX_DEVICE);
}

/* ---- 2a. key indexes ---- */

typedef struct key_build_run {
  rdx_array keys;
  rdx_build_options opts;
  rdx_index *idx; /* the last run's */
} key_build_run;

static double run_key_build(bench *b, void *state) {
  key_build_run *k = (key_build_run *)state;
  rdx_index_destroy(k->idx);
  k->idx = NULL;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_index_build(b->ctx, k->keys, rdx_no_array(), &k->opts, &k->idx), "build");
  return rdx_now_ms() - t0;
}

typedef struct lookup_run {
  const rdx_index *idx;
  rdx_array queries, row_ids;
} lookup_run;

static double run_lookup(bench *b, void *state) {
  const lookup_run *l = (const lookup_run *)state;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_index_lookup(b->ctx, l->idx, l->queries, l->row_ids), "lookup");
  return rdx_now_ms() - t0;
}

/* The answers of queries (device or host memory, any prefix of the keys) copied to the host. */
static uint64_t *answers(bench *b, const rdx_index *idx, rdx_array queries) {
  const size_t bytes = (size_t)queries.count * 8;
  const rdx_location where = b->gpu ? RDX_DEVICE : RDX_HOST;
  void *out = NULL;
  cli_must(b->ctx, rdx_malloc(b->ctx, &out, bytes ? bytes : 1, where), "answers");
  rdx_array a = b->gpu ? rdx_device_array(out, queries.count, RDX_U64) : rdx_host_array(out, queries.count, RDX_U64);
  cli_must(b->ctx, rdx_index_lookup(b->ctx, idx, queries, a), "lookup");
  uint64_t *h = (uint64_t *)must_malloc(bytes, "answers");
  cli_must(b->ctx, rdx_copy(b->ctx, h, RDX_HOST, out, where, bytes), "copy back");
  rdx_free(b->ctx, out, where);
  return h;
}

/* Two builds over the same keys agree: keys held, resident bytes, and the answers of up to 2^16
 * of the keys (queries in the backend's memory). */
static const char *same_index(bench *b, const rdx_index *ref, const rdx_index *idx, rdx_array keys) {
  int64_t r_bytes = 0, i_bytes = 0;
  cli_must(b->ctx, rdx_index_bytes(b->ctx, ref, &r_bytes, NULL), "bytes");
  cli_must(b->ctx, rdx_index_bytes(b->ctx, idx, &i_bytes, NULL), "bytes");
  if (rdx_index_count(ref) != rdx_index_count(idx) || r_bytes != i_bytes) return "DIFFERS";
  rdx_array q = keys;
  q.count = keys.count < 65536 ? keys.count : 65536;
  uint64_t *x = answers(b, ref, q), *y = answers(b, idx, q);
  int same = memcmp(x, y, (size_t)q.count * 8) == 0;
  free(x), free(y);
  return same ? "same" : "DIFFERS";
}

static void part_keys(bench *b, const cfg *c) {
  rdx_context *ctx = b->ctx;
  const int64_t n = c->n, m = c->lookups;
  cli_progress("keys: %lld uniform u32 keys", (long long)n);
  rdx_array kh;
  cli_must(b->gen, rdx_gen_keys(b->gen, n, RDX_U32, RDX_DIST_UNIFORM, 0.0, c->seed, &kh), "keys");
  rdx_array kd = cli_place(ctx, kh);
  host_path p[3];
  const int n_paths = host_paths(b, p);
  rdx_index *sorted = NULL; /* the device build of the sorted index, which the lookups query */
  for (int op = OP_BUILD_SORTED; op <= OP_BUILD_HASH; op++) {
    const int lookups_need = op == OP_BUILD_SORTED && c->want[OP_LOOKUP];
    if (!c->want[op] && !lookups_need) continue;
    key_build_run dev;
    memset(&dev, 0, sizeof dev);
    dev.keys = kd;
    dev.opts = (rdx_build_options)RDX_BUILD_OPTIONS_INIT;
    dev.opts.kind = op == OP_BUILD_SORTED ? RDX_KIND_SORTED : RDX_KIND_HASH;
    cli_progress("%s: %lld keys, device", op_names[op], (long long)n);
    const double dev_ms = c->want[op] ? median_ms(b, run_key_build, &dev) : run_key_build(b, &dev);
    const double in = (double)n * 4;
    if (c->want[op]) {
      emit(b, op_names[op], "device", "-", n, in, 0, 0, dev_ms, dev_ms, "ref");
      for (int k = 0; k < n_paths; k++) {
        cli_progress("%s: %lld keys, host, %s", op_names[op], (long long)n, p[k].name);
        key_build_run host = dev;
        host.keys = path_array(b, &p[k], kh);
        host.idx = NULL;
        rdx_staging_force(ctx, p[k].mode);
        const double ms = median_ms(b, run_key_build, &host);
        rdx_staging_force(ctx, RDX_STAGING_AUTO);
        path_release(b, &p[k], host.keys);
        const char *check = same_index(b, dev.idx, host.idx, kd);
        rdx_index_destroy(host.idx);
        emit(b, op_names[op], "host", p[k].name, n, in, 0, 1, ms, dev_ms, check);
      }
    }
    if (lookups_need) sorted = dev.idx;
    else rdx_index_destroy(dev.idx);
  }
  if (c->want[OP_LOOKUP]) {
    cli_progress("keys_lookup: %lld lookups", (long long)m);
    rdx_array qh;
    cli_must(b->gen, rdx_gen_lookups(b->gen, kh, m, 1.0, RDX_MISS_INSIDE, 0.0, c->seed + 1, &qh), "lookups");
    rdx_array qd = cli_place(ctx, qh);
    const rdx_location where = b->gpu ? RDX_DEVICE : RDX_HOST;
    void *out_d = NULL;
    cli_must(ctx, rdx_malloc(ctx, &out_d, (size_t)m * 8, where), "answers");
    lookup_run dev = {sorted, qd, b->gpu ? rdx_device_array(out_d, m, RDX_U64) : rdx_host_array(out_d, m, RDX_U64)};
    const double dev_ms = median_ms(b, run_lookup, &dev);
    uint64_t *ref = (uint64_t *)must_malloc((size_t)m * 8, "answers");
    cli_must(ctx, rdx_copy(ctx, ref, RDX_HOST, out_d, where, (size_t)m * 8), "copy back");
    rdx_free(ctx, out_d, where);
    const double in = (double)m * 4, out = (double)m * 8;
    emit(b, "keys_lookup", "device", "-", m, in, out, 0, dev_ms, dev_ms, "ref");
    uint64_t *out_h = (uint64_t *)must_malloc((size_t)m * 8, "answers");
    for (int k = 0; k < n_paths; k++) {
      cli_progress("keys_lookup: %lld lookups, host, %s", (long long)m, p[k].name);
      rdx_array answers_h = path_array(b, &p[k], rdx_host_array(out_h, m, RDX_U64));
      memset(answers_h.data, 0, (size_t)m * 8); /* every page touched, no answer left from the last path */
      lookup_run host = {sorted, path_array(b, &p[k], qh), answers_h};
      rdx_staging_force(ctx, p[k].mode);
      const double ms = median_ms(b, run_lookup, &host);
      rdx_staging_force(ctx, RDX_STAGING_AUTO);
      const char *check = memcmp(answers_h.data, ref, (size_t)m * 8) == 0 ? "same" : "DIFFERS";
      path_release(b, &p[k], host.queries);
      path_release(b, &p[k], answers_h);
      emit(b, "keys_lookup", "host", p[k].name, m, in, out, 1, ms, dev_ms, check);
    }
    free(out_h), free(ref);
    cli_unplace(ctx, qd);
    rdx_npy_free(&qh);
  }
  rdx_index_destroy(sorted);
  cli_unplace(ctx, kd);
  rdx_npy_free(&kh);
}

/* ---- 2b. point indexes ---- */

typedef struct points_build_run {
  rdx_array points;
  rdx_points_options opts;
  rdx_points *pts; /* the last run's */
} points_build_run;

static double run_points_build(bench *b, void *state) {
  points_build_run *r = (points_build_run *)state;
  rdx_points_destroy(r->pts);
  r->pts = NULL;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_points_build(b->ctx, r->points, &r->opts, &r->pts), "build");
  return rdx_now_ms() - t0;
}

typedef struct window_run {
  const rdx_points *pts;
  rdx_array queries;
  rdx_points_query query;
  rdx_result *res; /* the last run's */
} window_run;

static double run_window(bench *b, void *state) {
  window_run *w = (window_run *)state;
  rdx_result_free(b->ctx, w->res);
  w->res = NULL;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_points_query_alloc(b->ctx, w->pts, w->queries, &w->query, &w->res), "query");
  return rdx_now_ms() - t0;
}

/* Window queries answered into the caller's arrays: count, offsets, fill (the pinned path). */
typedef struct window_into {
  window_run *w;
  uint64_t *counts, *offsets, *rows; /* offsets (m + 1) and rows (total) contiguous, as fetch lays them */
  uint64_t total;                    /* the device run's */
} window_into;

static double run_window_into(bench *b, void *state) {
  window_into *r = (window_into *)state;
  const int64_t m = r->w->queries.count;
  uint64_t total = 0;
  double t0 = rdx_now_ms();
  cli_must(b->ctx, rdx_points_query_count(b->ctx, r->w->pts, r->w->queries, &r->w->query, rdx_host_array(r->counts, m, RDX_U64)),
           "count");
  cli_must(b->ctx, rdx_counts_to_offsets(b->ctx, rdx_host_array(r->counts, m, RDX_U64), rdx_host_array(r->offsets, m + 1, RDX_U64),
                                         &total),
           "offsets");
  if (total != r->total) cli_die(CLI_EXIT_FAILURE, "window queries: %llu rows, the device run had %llu",
                                 (unsigned long long)total, (unsigned long long)r->total);
  cli_must(b->ctx, rdx_points_query_fill(b->ctx, r->w->pts, r->w->queries, &r->w->query,
                                         rdx_host_array(r->offsets, m + 1, RDX_U64), rdx_host_array(r->rows, (int64_t)total, RDX_U64)),
           "fill");
  return rdx_now_ms() - t0;
}

/* Two builds over the same points agree: points, node and leaf counts, resident bytes, and every
 * node (Morton key, level, leaf flag, points below it and where its points start). */
static const char *same_points(bench *b, const rdx_points *ref, const rdx_points *pts) {
  rdx_points_info x, y;
  x.size = y.size = sizeof x;
  cli_must(b->ctx, rdx_points_describe(b->ctx, ref, &x), "describe");
  cli_must(b->ctx, rdx_points_describe(b->ctx, pts, &y), "describe");
  int64_t xb = 0, yb = 0;
  cli_must(b->ctx, rdx_points_bytes(b->ctx, ref, &xb, NULL), "bytes");
  cli_must(b->ctx, rdx_points_bytes(b->ctx, pts, &yb, NULL), "bytes");
  if (x.count != y.count || x.n_nodes != y.n_nodes || x.n_leaves != y.n_leaves || x.depth != y.depth || xb != yb)
    return "DIFFERS";
  rdx_sp_tree s, t; /* owned by each index, valid while neither changes */
  cli_must(b->ctx, rdx_sp_tree_of(b->ctx, ref, &s), "nodes");
  cli_must(b->ctx, rdx_sp_tree_of(b->ctx, pts, &t), "nodes");
  if (s.n_nodes != t.n_nodes) return "DIFFERS";
  const size_t n = (size_t)s.n_nodes;
  int same = memcmp(s.key, t.key, n * 8) == 0 && memcmp(s.fpos, t.fpos, n * 8) == 0 && memcmp(s.len, t.len, n * 8) == 0 &&
             memcmp(s.count, t.count, n * 8) == 0 && memcmp(s.level, t.level, n) == 0 && memcmp(s.leaf, t.leaf, n) == 0;
  return same ? "same" : "DIFFERS";
}

/* A result's CSR copied to the host (offsets then row ids, one block). */
static uint64_t *fetch(bench *b, const rdx_result *r) {
  const size_t n_off = (size_t)r->n_queries + 1;
  uint64_t *h = (uint64_t *)must_malloc((n_off + (size_t)r->total) * 8, "a result");
  cli_must(b->ctx, rdx_copy(b->ctx, h, RDX_HOST, r->offsets, r->where, n_off * 8), "copy back");
  cli_must(b->ctx, rdx_copy(b->ctx, h + n_off, RDX_HOST, r->row_ids, r->where, (size_t)r->total * 8), "copy back");
  return h;
}

static void part_points(bench *b, const cfg *c) {
  rdx_context *ctx = b->ctx;
  const int64_t n = c->points, m = c->queries;
  const size_t es = rdx_dtype_size(c->pdtype);
  cli_progress("points: %lld points", (long long)n);
  rdx_array ph;
  cli_must(b->gen, rdx_gen_points(b->gen, n, c->dist, c->pdtype, c->seed, &ph), "points");
  rdx_array pd = cli_place(ctx, ph);
  host_path p[3];
  const int n_paths = host_paths(b, p);
  points_build_run dev;
  memset(&dev, 0, sizeof dev);
  dev.points = pd;
  dev.opts = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
  dev.opts.kind = RDX_POINTS_QUADTREE;
  dev.opts.method = RDX_POINTS_BOTTOM_UP;
  dev.opts.leaf_capacity = c->cap;
  dev.opts.max_depth = c->depth;
  dev.opts.use_box = true; /* the distribution's domain, as `bench points` builds */
  rdx_gen_points_box(c->dist, dev.opts.box);
  cli_progress("points_build: %lld points, device", (long long)n);
  const double dev_ms = c->want[OP_POINTS_BUILD] ? median_ms(b, run_points_build, &dev) : run_points_build(b, &dev);
  if (c->want[OP_POINTS_BUILD]) {
    const double in = (double)n * 2 * (double)es;
    emit(b, "points_build", "device", "-", n, in, 0, 0, dev_ms, dev_ms, "ref");
    for (int k = 0; k < n_paths; k++) {
      cli_progress("points_build: %lld points, host, %s", (long long)n, p[k].name);
      points_build_run host = dev;
      host.points = path_array(b, &p[k], ph);
      host.pts = NULL;
      rdx_staging_force(ctx, p[k].mode);
      const double ms = median_ms(b, run_points_build, &host);
      rdx_staging_force(ctx, RDX_STAGING_AUTO);
      path_release(b, &p[k], host.points);
      const char *check = same_points(b, dev.pts, host.pts);
      rdx_points_destroy(host.pts);
      emit(b, "points_build", "host", p[k].name, n, in, 0, 1, ms, dev_ms, check);
    }
  }
  if (c->want[OP_POINTS_WINDOW]) {
    /* about 64 points a window on uniform data, as `bench points --exp query` */
    const double side = c->dist == RDX_PDIST_TAXI ? 154000.0 : 1.0;
    const double size = c->size > 0 ? c->size : side * sqrt(64.0 / (double)(n > 0 ? n : 1));
    cli_progress("points_window: %lld windows", (long long)m);
    rdx_array qh;
    cli_must(b->gen, rdx_gen_point_queries(b->gen, ph, 1, m, size, c->seed + 101, &qh), "queries");
    rdx_array qd = cli_place(ctx, qh);
    window_run w;
    memset(&w, 0, sizeof w);
    w.pts = dev.pts;
    w.queries = qd;
    w.query = (rdx_points_query)RDX_POINTS_QUERY_INIT;
    w.query.type = RDX_POINTS_WINDOW;
    const double wdev_ms = median_ms(b, run_window, &w);
    const uint64_t total = w.res->total;
    uint64_t *ref = fetch(b, w.res);
    rdx_result_free(ctx, w.res);
    const size_t ref_words = (size_t)m + 1 + (size_t)total;
    const double in = (double)m * 4 * (double)es, out = ((double)m + 1 + (double)total) * 8;
    emit(b, "points_window", "device", "-", m, in, out, 0, wdev_ms, wdev_ms, "ref");
    for (int k = 0; k < n_paths; k++) {
      cli_progress("points_window: %lld windows, host, %s", (long long)m, p[k].name);
      window_run host = w;
      host.queries = path_array(b, &p[k], qh);
      host.res = NULL;
      const char *check = "DIFFERS";
      double ms;
      if (p[k].pinned) {
        /* count and fill into the caller's pinned arrays, sized by the device run */
        window_into into;
        memset(&into, 0, sizeof into);
        into.w = &host;
        into.total = total;
        void *mem = NULL;
        cli_must(ctx, rdx_malloc(ctx, &mem, ref_words * 8 + (size_t)m * 8, RDX_HOST_PINNED), "pinned result");
        into.offsets = (uint64_t *)mem;
        into.rows = into.offsets + m + 1;
        into.counts = into.rows + total;
        rdx_staging_force(ctx, p[k].mode);
        ms = median_ms(b, run_window_into, &into);
        rdx_staging_force(ctx, RDX_STAGING_AUTO);
        if (memcmp(into.offsets, ref, ref_words * 8) == 0) check = "same";
        rdx_free(ctx, mem, RDX_HOST_PINNED);
      } else {
        rdx_staging_force(ctx, p[k].mode);
        ms = median_ms(b, run_window, &host);
        rdx_staging_force(ctx, RDX_STAGING_AUTO);
        if (host.res->total == total) {
          uint64_t *got = fetch(b, host.res);
          if (memcmp(got, ref, ref_words * 8) == 0) check = "same";
          free(got);
        }
        rdx_result_free(ctx, host.res);
      }
      path_release(b, &p[k], host.queries);
      emit(b, "points_window", "host", p[k].name, m, in, out, 1, ms, wdev_ms, check);
    }
    free(ref);
    cli_unplace(ctx, qd);
    rdx_npy_free(&qh);
  }
  rdx_points_destroy(dev.pts);
  cli_unplace(ctx, pd);
  rdx_npy_free(&ph);
}

/* ---- options ---- */

/* Host bytes a part holds at once (the largest decides what the run needs). */
static double need_keys(const cfg *c, rdx_backend be) {
  size_t gk = 0, gl = 0;
  if (rdx_gen_keys_bytes(NULL, c->n, RDX_U32, &gk) != RDX_OK) gk = (size_t)c->n * 4;
  double need = (double)gk + 2 * cli_index_peak_bytes(RDX_KIND_HASH, (double)c->n, be);
  if (c->want[OP_LOOKUP]) {
    if (rdx_gen_lookups_bytes(NULL, c->n, RDX_U32, c->lookups, 1.0, RDX_MISS_INSIDE, &gl) != RDX_OK) gl = (size_t)c->lookups * 4;
    need += (double)gl + (double)c->lookups * 8 * (be == RDX_BACKEND_CPU ? 3 : 2); /* answers: host, reference */
  }
  return need;
}
static double need_points(const cfg *c, rdx_backend be) {
  size_t gp = 0, gq = 0;
  if (rdx_gen_points_bytes(NULL, c->points, c->pdtype, &gp) != RDX_OK) gp = (size_t)c->points * 16;
  double need = (double)gp + 2 * cli_points_peak_bytes(RDX_POINTS_QUADTREE, (double)c->points, be);
  if (c->want[OP_POINTS_WINDOW]) {
    if (rdx_gen_point_queries_bytes(NULL, c->pdtype, 1, c->queries, &gq) != RDX_OK) gq = (size_t)c->queries * 32;
    need += (double)gq + 3 * (double)c->queries * (64 + 1) * 8; /* results of ~64 ids: two, and one copy */
  }
  return need;
}

int cmd_bench_host(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_host_usage);
  cfg c;
  memset(&c, 0, sizeof c);
  const char *be_s = cli_opt(&a, "backend");
  const rdx_backend be = be_s ? cli_parse_backend("backend", be_s) : RDX_BACKEND_CUDA;
  if (be == RDX_BACKEND_OPTIX)
    cli_die(CLI_EXIT_BAD_INPUT, "--backend optix: the point indexes and the staging ring are cuda's; use --backend cuda");
  int v[CLI_LIST];
  const int n_ops = cli_choice_list(&a, "op", "link,keys_build_sorted,keys_build_hash,keys_lookup,points_build,points_window",
                                    op_names, N_OPS, v);
  for (int i = 0; i < n_ops; i++) c.want[v[i]] = 1;
  const int keys = c.want[OP_BUILD_SORTED] || c.want[OP_BUILD_HASH] || c.want[OP_LOOKUP];
  const int points = c.want[OP_POINTS_BUILD] || c.want[OP_POINTS_WINDOW];
  c.link_bytes = cli_int(&a, "link-bytes", 1, (int64_t)1 << 40, (int64_t)1 << 30);
  c.n = cli_int(&a, "n", 1, (int64_t)1 << 32, (int64_t)1 << 26);
  c.lookups = cli_int(&a, "lookups", 1, (int64_t)1 << 34, (int64_t)1 << 27);
  c.points = cli_int(&a, "points", 1, (int64_t)1 << 34, 170000000);
  c.queries = cli_int(&a, "queries", 1, (int64_t)1 << 32, (int64_t)1 << 20);
  c.dist = (rdx_point_dist)(cli_choice(&a, "dist", cli_point_dists, 3, 0) + 1);
  c.pdtype = cli_choice(&a, "dtype", cli_point_dtypes, 2, 1) ? RDX_F32 : RDX_F64;
  c.cap = (int)cli_int(&a, "leaf-capacity", 1, 1 << 30, 200);
  c.depth = (int)cli_int(&a, "max-depth", 1, RDX_SP_MAX_QT_DEPTH, 16);
  c.size = cli_double(&a, "size", 0, HUGE_VAL, 0);
  c.reps = (int)cli_int(&a, "reps", 1, 1 << 20, 5);
  c.seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  const int hdr = cli_flag(&a, "header");
  cli_applies(&a, "n", keys, "--op keys_build_sorted, keys_build_hash or keys_lookup");
  cli_applies(&a, "lookups", c.want[OP_LOOKUP], "--op keys_lookup");
  cli_applies(&a, "points", points, "--op points_build or points_window");
  cli_applies(&a, "dist", points, "--op points_build or points_window");
  cli_applies(&a, "dtype", points, "--op points_build or points_window");
  cli_applies(&a, "leaf-capacity", points, "--op points_build or points_window");
  cli_applies(&a, "max-depth", points, "--op points_build or points_window");
  cli_applies(&a, "queries", c.want[OP_POINTS_WINDOW], "--op points_window");
  cli_applies(&a, "size", c.want[OP_POINTS_WINDOW], "--op points_window");
  /* the parts run one after another, each freeing what it made: the largest decides */
  const double link_need = be == RDX_BACKEND_CPU ? 0 : (double)c.link_bytes * (c.want[OP_LINK] ? 3 : 2);
  const double keys_need = keys ? need_keys(&c, be) : 0, points_need = points ? need_points(&c, be) : 0;
  if (link_need >= keys_need && link_need >= points_need) cli_need_memory(&a, "link-bytes", link_need);
  else if (keys_need >= points_need) cli_need_memory(&a, c.want[OP_LOOKUP] && c.lookups > c.n ? "lookups" : "n", keys_need);
  else cli_need_memory(&a, c.want[OP_POINTS_WINDOW] && c.queries * 64 > c.points ? "queries" : "points", points_need);
  cli_args_done(&a);

  bench b;
  memset(&b, 0, sizeof b);
  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  time_t now = time(NULL);
  strftime(b.date, sizeof b.date, "%Y-%m-%d", gmtime(&now));
  b.ctx = cli_context(be);
  b.gen = cli_context(RDX_BACKEND_CPU);
  b.gpu = cli_is_gpu(b.ctx);
  b.reps = c.reps;
  b.t = (double *)must_malloc(sizeof(double) * (size_t)c.reps, "timings");
  cli_backend_label(b.label, b.ctx, be);
  snprintf(b.device, sizeof b.device, "%s", b.gpu ? info.gpu_name : info.cpu_name);
  for (char *p = b.device; *p; p++)
    if (*p == ',') *p = ' ';
  if (b.gpu && rdx_staging_bytes(b.ctx) == 0)
    fprintf(stderr, "raydex bench host: the context has no staging ring (no pinned memory); path \"none\" is the driver's\n");
  if (hdr) header();
  const double t0 = rdx_now_ms();
  if (b.gpu) part_link(&b, &c); /* the pinned link: every ratio's denominator */
  if (keys) part_keys(&b, &c);
  if (points) part_points(&b, &c);
  cli_context_close(b.gen);
  cli_context_close(b.ctx);
  free(b.t);
  if (b.n_differ) cli_die(CLI_EXIT_FAILURE, "%d of %d rows differ from the device run", b.n_differ, b.n_rows);
  cli_report("%d rows on %s in %.1f s", b.n_rows, b.label, (rdx_now_ms() - t0) / 1e3);
  return 0;
}
