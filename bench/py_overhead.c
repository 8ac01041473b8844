/*
 * bench/py_overhead.c: the C side of issue 32's per-call overhead measurement. Point lookups on a
 * sorted KeyIndex of distinct u32 keys, timed through the C API; bench/py_overhead.py makes the
 * same calls through the Python binding (raydex.KeyIndex.lookup) with the same keys, queries,
 * sizes, reps and blocks, and bench/py_overhead.sh joins the two CSVs.
 *
 * Inputs (both programs generate them identically, so no data file is shared):
 *   key i   = fmix32(i + seed * 0x9E3779B9) for i < n_keys (fmix32, MurmurHash3's finalizer, is a
 *             bijection of 32-bit words, so the keys are distinct); row ids implied (key i is row i)
 *   query j = key[splitmix64(seed << 40 | j) % n_keys]: hits, uniform over the keys, random order;
 *             the batch of m queries is the first m of one array of the largest m
 * so the answer to query j is exactly splitmix64(seed << 40 | j) % n_keys, which `check` verifies
 * for every query of the last timed call (ok / WRONG). `inputs` is a checksum of what was looked
 * up, sum(keys) + 2^32 sum(queries[0..m)) mod 2^64, which the Python side prints too, so the join
 * can tell that both programs made the same calls.
 *
 * Cases (--cases): cpu:host (CPU backend, host arrays), cuda:host (GPU backend, host arrays: the
 * call copies queries in and answers out), cuda:device (rdx_malloc'd device queries and answers).
 * A GPU case whose context cannot be made (no CUDA build, no GPU) is skipped with a line on stderr.
 *
 * Times, per (case, m): one block = `calls` back-to-back calls, calls = max(1, block_queries / m)
 * (small batches are timed many to a block and divided), time per call = block time / calls;
 * --warmup untimed blocks, then the median of --reps blocks. Two columns:
 *   c_us          rdx_index_lookup into an answer array allocated once, before timing: the C API's
 *                 own cost, the floor issue 32's "overhead over the C API" is measured from
 *   c_binding_us  the C calls the binding makes for one lookup (python/src/keys.c,
 *                 keyindex_lookup): host: malloc the answers, lookup, free (numpy's empty array);
 *                 device: order the context's stream after the legacy default stream
 *                 (rdx_context_wait_stream(ctx, 1), the binding's rdxpy_wait_for_device for DLPack
 *                 producers), rdx_malloc the answers, lookup, rdx_free (the DeviceArray's
 *                 release); py_us - c_binding_us is then what CPython and the binding's argument
 *                 handling add.
 *
 *   cc -O2 -Iinclude bench/py_overhead.c -LBUILD -lraydex -Wl,-rpath,BUILD -o BUILD/py_overhead
 *   BUILD/py_overhead --cases cpu:host --keys 2^24 --sizes 10,12,14 --reps 5 --header
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raydex.h"

static uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "2^24" or "16777216" */
static int64_t parse_count(const char *s) {
  if (strncmp(s, "2^", 2) == 0) return (int64_t)1 << atoi(s + 2);
  return strtoll(s, NULL, 10);
}

static void die(rdx_context *ctx, rdx_status st, const char *what) {
  fprintf(stderr, "py_overhead: %s: %s: %s\n", what, rdx_status_name(st), rdx_context_message(ctx));
  exit(1);
}
#define CHECK(ctx, call)                  \
  do {                                    \
    rdx_status st_ = (call);              \
    if (st_ != RDX_OK) die(ctx, st_, #call); \
  } while (0)

typedef struct {
  rdx_context *ctx;
  const rdx_index *idx;
  rdx_array q;       /* queries of this batch (host or device) */
  void *out;         /* preallocated answers (same location as q) */
  int device;        /* q and out in device memory */
  int binding;       /* 1: allocate the answers per call as the binding does */
} job;

static void one_call(const job *j) {
  rdx_context *ctx = j->ctx;
  int64_t m = j->q.count;
  if (!j->binding) {
    rdx_array out = j->device ? rdx_device_array(j->out, m, RDX_U64) : rdx_host_array(j->out, m, RDX_U64);
    CHECK(ctx, rdx_index_lookup(ctx, j->idx, j->q, out));
    return;
  }
  if (j->device) {
    void *p = NULL;
    CHECK(ctx, rdx_context_wait_stream(ctx, (void *)1)); /* the binding's wait_for_device */
    CHECK(ctx, rdx_malloc(ctx, &p, (size_t)m * sizeof(uint64_t), RDX_DEVICE));
    CHECK(ctx, rdx_index_lookup(ctx, j->idx, j->q, rdx_device_array(p, m, RDX_U64)));
    rdx_free(ctx, p, RDX_DEVICE);
  } else {
    void *p = malloc((size_t)(m > 0 ? m : 1) * sizeof(uint64_t));
    if (p == NULL) die(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "malloc");
    CHECK(ctx, rdx_index_lookup(ctx, j->idx, j->q, rdx_host_array(p, m, RDX_U64)));
    free(p);
  }
}

/* median over reps of (block time / calls), after warmup blocks */
static double time_block(const job *j, int64_t calls, int warmup, int reps) {
  double t[1024];
  if (reps > 1024) reps = 1024;
  for (int w = 0; w < warmup; w++)
    for (int64_t c = 0; c < calls; c++) one_call(j);
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int64_t c = 0; c < calls; c++) one_call(j);
    t[r] = (now_us() - t0) / (double)calls;
  }
  return median(t, reps);
}

static void usage(void) {
  fprintf(stderr,
          "usage: py_overhead [--cases cpu:host,cuda:host,cuda:device] [--keys 2^24] [--sizes 10,12,...]\n"
          "                   [--max-cpu-log2 24] [--reps 5] [--warmup 1] [--seed 1] [--block-queries 2^20]\n"
          "                   [--machine NAME] [--date YYYY-MM-DD] [--header]\n"
          "  --sizes: log2 of the batch sizes m; cpu cases stop at --max-cpu-log2\n");
}

int main(int argc, char **argv) {
  const char *cases = "cpu:host,cuda:host,cuda:device", *sizes = "10,12,14,16,18,20,22,24";
  const char *machine = "unknown", *date = NULL;
  int64_t n_keys = (int64_t)1 << 24, block_queries = (int64_t)1 << 20;
  int reps = 5, warmup = 1, header = 0, max_cpu_log2 = 24;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--header") == 0) { header = 1; continue; }
    if (v == NULL) { usage(); return 2; }
    if (strcmp(a, "--cases") == 0) cases = v;
    else if (strcmp(a, "--keys") == 0) n_keys = parse_count(v);
    else if (strcmp(a, "--sizes") == 0) sizes = v;
    else if (strcmp(a, "--max-cpu-log2") == 0) max_cpu_log2 = atoi(v);
    else if (strcmp(a, "--reps") == 0) reps = atoi(v);
    else if (strcmp(a, "--warmup") == 0) warmup = atoi(v);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--block-queries") == 0) block_queries = parse_count(v);
    else if (strcmp(a, "--machine") == 0) machine = v;
    else if (strcmp(a, "--date") == 0) date = v;
    else { usage(); return 2; }
    i++;
  }
  if (n_keys < 1 || n_keys > ((int64_t)1 << 32) || reps < 1) { usage(); return 2; }
  char today[16];
  if (date == NULL) {
    time_t t = time(NULL);
    strftime(today, sizeof today, "%Y-%m-%d", gmtime(&t));
    date = today;
  }

  int log2s[64], n_sizes = 0, max_log2 = 0;
  for (const char *p = sizes; *p && n_sizes < 64;) {
    log2s[n_sizes] = atoi(p);
    if (log2s[n_sizes] > max_log2) max_log2 = log2s[n_sizes];
    n_sizes++;
    p = strchr(p, ',');
    if (p == NULL) break;
    p++;
  }
  int64_t max_m = (int64_t)1 << max_log2;

  /* inputs, generated once */
  uint32_t *keys = malloc((size_t)n_keys * sizeof *keys);
  uint32_t *queries = malloc((size_t)max_m * sizeof *queries);
  uint64_t *want = malloc((size_t)max_m * sizeof *want);
  uint64_t *got = malloc((size_t)max_m * sizeof *got);
  if (!keys || !queries || !want || !got) { fprintf(stderr, "py_overhead: out of host memory\n"); return 1; }
  for (int64_t i = 0; i < n_keys; i++) keys[i] = fmix32((uint32_t)((uint64_t)i + seed * 0x9E3779B9u));
  for (int64_t j = 0; j < max_m; j++) {
    want[j] = splitmix64((seed << 40) | (uint64_t)j) % (uint64_t)n_keys;
    queries[j] = keys[want[j]];
  }
  uint64_t key_sum = 0;
  for (int64_t i = 0; i < n_keys; i++) key_sum += keys[i];

  if (header) printf("date,machine,backend,where,n_keys,m,calls,reps,c_us,c_binding_us,check,inputs\n");
  char list[256];
  snprintf(list, sizeof list, "%s", cases);
  for (char *save = NULL, *c = strtok_r(list, ",", &save); c != NULL; c = strtok_r(NULL, ",", &save)) {
    char backend_name[16] = "", where_name[16] = "";
    if (sscanf(c, "%15[^:]:%15s", backend_name, where_name) != 2) { usage(); return 2; }
    int device = strcmp(where_name, "device") == 0;
    rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
    o.backend = strcmp(backend_name, "cpu") == 0 ? RDX_BACKEND_CPU : RDX_BACKEND_CUDA;
    rdx_context *ctx = NULL;
    rdx_status st = rdx_context_create(&o, &ctx);
    if (st != RDX_OK) {
      fprintf(stderr, "py_overhead: skip %s: %s (%s)\n", c, rdx_status_name(st), rdx_context_message(ctx));
      rdx_context_destroy(ctx);
      continue;
    }
    if (device && o.backend == RDX_BACKEND_CPU) { fprintf(stderr, "py_overhead: skip %s: no device on cpu\n", c); rdx_context_destroy(ctx); continue; }
    rdx_build_options b = RDX_BUILD_OPTIONS_INIT;
    b.kind = RDX_KIND_SORTED;
    rdx_index *idx = NULL;
    CHECK(ctx, rdx_index_build(ctx, rdx_host_array(keys, n_keys, RDX_U32), rdx_no_array(), &b, &idx));
    int case_max = o.backend == RDX_BACKEND_CPU && max_cpu_log2 < max_log2 ? max_cpu_log2 : max_log2;
    int64_t case_m = (int64_t)1 << case_max;
    void *q_mem = queries, *out_mem = got;
    if (device) {
      CHECK(ctx, rdx_malloc(ctx, &q_mem, (size_t)case_m * sizeof(uint32_t), RDX_DEVICE));
      CHECK(ctx, rdx_malloc(ctx, &out_mem, (size_t)case_m * sizeof(uint64_t), RDX_DEVICE));
      CHECK(ctx, rdx_copy(ctx, q_mem, RDX_DEVICE, queries, RDX_HOST, (size_t)case_m * sizeof(uint32_t)));
    }
    for (int s = 0; s < n_sizes; s++) {
      if (log2s[s] > case_max) continue;
      int64_t m = (int64_t)1 << log2s[s];
      int64_t calls = block_queries / m > 1 ? block_queries / m : 1;
      job j = {ctx, idx, device ? rdx_device_array(q_mem, m, RDX_U32) : rdx_host_array(q_mem, m, RDX_U32),
               out_mem, device, 0};
      double c_us = time_block(&j, calls, warmup, reps);
      /* check the answers the last call of the plain form wrote */
      if (device) CHECK(ctx, rdx_copy(ctx, got, RDX_HOST, out_mem, RDX_DEVICE, (size_t)m * sizeof(uint64_t)));
      int64_t wrong = 0;
      uint64_t q_sum = 0;
      for (int64_t i = 0; i < m; i++) {
        wrong += got[i] != want[i];
        q_sum += queries[i];
      }
      j.binding = 1;
      double c_binding_us = time_block(&j, calls, warmup, reps);
      printf("%s,%s,%s,%s,%lld,%lld,%lld,%d,%.3f,%.3f,%s,%llu\n", date, machine, backend_name, where_name,
             (long long)n_keys, (long long)m, (long long)calls, reps, c_us, c_binding_us,
             wrong ? "WRONG" : "ok", (unsigned long long)(key_sum + (q_sum << 32)));
      if (wrong) fprintf(stderr, "py_overhead: %s m=%lld: %lld wrong answers\n", c, (long long)m, (long long)wrong);
      fflush(stdout);
    }
    if (device) {
      rdx_free(ctx, q_mem, RDX_DEVICE);
      rdx_free(ctx, out_mem, RDX_DEVICE);
    }
    rdx_index_destroy(idx);
    rdx_context_destroy(ctx);
  }
  free(keys);
  free(queries);
  free(want);
  free(got);
  return 0;
}
