/*
 * check.h: the test harness (libuv's ASSERT_EQ and RETURN_SKIP, mimalloc's testhelper):
 * assertions that print both values with file:line and the seed, a backend loop so every case
 * runs on every backend present, and a skip code CTest understands.
 *
 * Each test program takes `--backend cpu|cuda|optix` (default cpu); CTest registers one entry
 * per backend. A GPU entry on a machine without a GPU prints "skipped: no GPU" and exits 77.
 * RDX_TEST_SEED=<n> replays a failing seed. `--bvh 2` makes the soft BVHs of the contexts the
 * test opens binary (check_force; CTest's .bvh2 entries), through the internal entry point
 * rdx_rt_force_bvh_width, never the environment.
 */
#ifndef RDX_CHECK_H
#define RDX_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raydex.h"

#define RDX_SKIP_CODE 77

/* The state a thread's checks keep is its own (_Thread_local): the generator, the case name and
 * the label of its failure lines, so that threads of one process (tests/dist_check.h's ranks) use
 * these macros as they are; a thread other than check_begin's sets check_seed_ = check_seed0_
 * before it draws. The failure count is every thread's (atomic); the options below are set by
 * check_begin before any other thread starts, and only read after. */
static _Thread_local uint64_t check_seed_; /* generator state */
static uint64_t check_seed0_;              /* the seed the run started from */
static _Atomic int check_failures_;
static _Thread_local const char *check_case_ = "";
static _Thread_local char check_who_[48];  /* after the case in failure lines, e.g. ", rank 1 of 3" */
static _Thread_local int check_quiet_;     /* 1: this thread prints no progress lines */
static rdx_backend check_backend_ = RDX_BACKEND_CPU;
static int check_bvh_width_;  /* --bvh: 2 or 4, 0 = the library's default */
static int check_ring_;       /* --staging ring: every host copy through a small staging ring */
static int check_dist_host_;  /* --dist-host: sharded key queries stage through the host */

/* Internal (src/bench_api.h): the soft BVH width a context's builds use when their options say
 * 0; the staging ring's forced path and its size. */
void rdx_rt_force_bvh_width(rdx_context *ctx, int width);
void rdx_staging_force(rdx_context *ctx, int mode);
size_t rdx_staging_bytes(const rdx_context *ctx);
void rdx_dist_force_host(rdx_context *ctx, int on);
/* With --staging ring, slots of 64 KiB + 3 bytes: copies span several and end inside a row. */
#define CHECK_RING_BYTES (4 * ((size_t)65536 + 3))
/* Apply the command line's forced paths (--bvh, --staging, --dist-host) to a context the test
 * opened itself. */
static inline void check_force(rdx_context *ctx) {
  if (ctx != NULL && check_bvh_width_ != 0) rdx_rt_force_bvh_width(ctx, check_bvh_width_);
  if (ctx != NULL && check_ring_) rdx_staging_force(ctx, 1 /* RDX_STAGING_RING */);
  if (ctx != NULL && check_dist_host_) rdx_dist_force_host(ctx, 1);
}
/* Bytes a context holds beyond its staging ring: 0 once everything made is freed. */
static inline int64_t check_held(const rdx_context *ctx) {
  int64_t in_use = 0;
  rdx_context_memory(ctx, &in_use, NULL);
  return in_use - (int64_t)rdx_staging_bytes(ctx);
}

#define CHECK_FAIL_(fmt, ...)                                                                  \
  do {                                                                                         \
    fprintf(stderr, "%s:%d: case %s%s, backend %s, seed %" PRIu64 ": " fmt "\n", __FILE__,    \
            __LINE__, check_case_, check_who_, rdx_backend_name(check_backend_), check_seed0_,   \
            __VA_ARGS__);                                                                      \
    if (++check_failures_ > 20) exit(1);                                                       \
  } while (0)

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (!(cond)) CHECK_FAIL_("CHECK(%s) failed", #cond);                                       \
  } while (0)

#define CHECK_EQ(a, b)                                                                         \
  do {                                                                                         \
    uint64_t ca_ = (uint64_t)(a), cb_ = (uint64_t)(b);                                         \
    if (ca_ != cb_)                                                                            \
      CHECK_FAIL_("%s == %s failed: %" PRIu64 " != %" PRIu64, #a, #b, ca_, cb_);               \
  } while (0)

/* A status check that shows the context's message. */
#define CHECK_OK(ctx, expr)                                                                    \
  do {                                                                                         \
    rdx_status cs_ = (expr);                                                                   \
    if (cs_ != RDX_OK)                                                                         \
      CHECK_FAIL_("%s returned %s: %s", #expr, rdx_status_name(cs_), rdx_context_message(ctx)); \
  } while (0)

#define CHECK_STATUS(ctx, expr, want)                                                          \
  do {                                                                                         \
    rdx_status cs_ = (expr);                                                                   \
    if (cs_ != (want))                                                                         \
      CHECK_FAIL_("%s returned %s, wanted %s (%s)", #expr, rdx_status_name(cs_),               \
                  rdx_status_name(want), rdx_context_message(ctx));                            \
  } while (0)

static inline uint64_t check_rand_(void) {
  /* splitmix64 over the seed: deterministic per seed */
  uint64_t z = (check_seed_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* uniform in [0, n) for n >= 1 (slight bias is irrelevant for tests) */
static inline uint64_t check_below(uint64_t n) { return n ? check_rand_() % n : check_rand_(); }

/* Parse --backend, set the seed (RDX_TEST_SEED or the time), and open a context; skips (exit 77)
 * when the backend cannot run here. */
static inline rdx_context *check_begin(int argc, char **argv) {
  const char *b = "cpu";
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--backend") == 0) b = argv[i + 1];
    if (strcmp(argv[i], "--bvh") == 0) check_bvh_width_ = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--staging") == 0) check_ring_ = strcmp(argv[i + 1], "ring") == 0;
  }
  for (int i = 1; i < argc; i++) check_dist_host_ |= strcmp(argv[i], "--dist-host") == 0;
  if (check_bvh_width_ != 0 && check_bvh_width_ != 2 && check_bvh_width_ != 4) {
    fprintf(stderr, "--bvh takes 2 or 4\n");
    exit(1);
  }
  check_backend_ = strcmp(b, "cuda") == 0    ? RDX_BACKEND_CUDA
                   : strcmp(b, "optix") == 0 ? RDX_BACKEND_OPTIX
                                             : RDX_BACKEND_CPU;
  const char *s = getenv("RDX_TEST_SEED");
  check_seed0_ = check_seed_ = s ? strtoull(s, NULL, 10) : 12345;
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = check_backend_;
  if (check_ring_) o.staging_bytes = CHECK_RING_BYTES;
  rdx_context *ctx = NULL;
  rdx_status st = rdx_context_create(&o, &ctx);
  if (st != RDX_OK) {
    if (st == RDX_ERR_NO_BACKEND) {
      printf("skipped: no GPU (%s)\n", rdx_context_message(ctx));
      rdx_context_destroy(ctx);
      exit(RDX_SKIP_CODE);
    }
    fprintf(stderr, "cannot create a %s context: %s\n", b, rdx_context_message(ctx));
    exit(1);
  }
  check_force(ctx);
  printf("backend %s%s%s, seed %" PRIu64 " (replay with RDX_TEST_SEED)\n", b, check_bvh_width_ == 2 ? ", binary BVH" : "",
         check_ring_ ? ", every host copy through a staging ring of 4 x 65539 bytes" : "", check_seed_);
  return ctx;
}

static inline int check_end(rdx_context *ctx) {
  int64_t in_use = check_held(ctx);
  if (in_use != 0) CHECK_FAIL_("context still holds %" PRId64 " bytes at the end (beyond its staging ring)", in_use);
  rdx_context_destroy(ctx);
  if (check_failures_) {
    fprintf(stderr, "%d check(s) failed\n", check_failures_);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}

/* RDX_TEST_PROGRESS=1 prints each case as it starts, with the seconds since the first: a run
 * stopped by a time limit (under compute-sanitizer, say) shows how far it got. One thread prints
 * (the others are check_quiet_), so the statics here are that thread's alone. */
static inline const char *check_case_enter_(const char *name, const char *part) {
  static int on = -1;
  static double t0 = -1;
  if (check_quiet_) return part ? part : name;
  if (on < 0) {
    const char *e = getenv("RDX_TEST_PROGRESS");
    on = e && *e && strcmp(e, "0") != 0;
  }
  if (!on) return part ? part : name;
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  if (t0 < 0) t0 = t;
  printf("case %s%s%s at %.1f s\n", name, part ? "/" : "", part ? part : "", t - t0);
  fflush(stdout);
  return part ? part : name;
}
#define CASE(name) (check_case_ = check_case_enter_(#name, NULL))

/* RDX_TEST_CASES=a,b,... runs only the cases whose name, or "name/part", contains one of the
 * comma-separated strings; unset or empty, every case runs. Tools that run a test a hundred
 * times slower (compute-sanitizer's racecheck) take it in pieces this way. Only the cases
 * written with CASE_RUN or CASE_PART can be left out; a check that sums over cases asks
 * check_filtered() first. */
static inline int check_filtered(void) {
  const char *e = getenv("RDX_TEST_CASES");
  return e && *e;
}
static inline int check_case_wanted_(const char *name, const char *part) {
  if (!check_filtered()) return 1;
  char full[256], tok[256];
  snprintf(full, sizeof full, "%s/%s", name, part ? part : "");
  for (const char *e = getenv("RDX_TEST_CASES"); *e;) {
    size_t k = strcspn(e, ",");
    if (k > 0 && k < sizeof tok) {
      memcpy(tok, e, k);
      tok[k] = 0;
      if (strstr(full, tok)) return 1;
    }
    e += k + (e[k] == ',');
  }
  return 0;
}
/* if (CASE_RUN(name)) { ... }: the case, entered, when wanted */
#define CASE_RUN(name) CASE_PART(name, NULL)
/* The same for one part of a case (a generator, say), which also labels its failures. */
#define CASE_PART(name, part) \
  (check_case_wanted_(#name, (part)) ? (check_case_ = check_case_enter_(#name, (part)), 1) : 0)

/* A result's offsets and rows on the host: its own arrays, or copies of device ones. Release
 * with check_result_host_free. */
static inline void check_result_host(rdx_context *ctx, const rdx_result *r, uint64_t **ho, uint64_t **hr) {
  *ho = r->offsets, *hr = r->row_ids;
  if (r->where != RDX_DEVICE) return;
  size_t ob = (size_t)(r->n_queries + 1) * 8;
  *ho = (uint64_t *)malloc(ob);
  *hr = (uint64_t *)malloc((size_t)(r->total + 1) * 8);
  CHECK_OK(ctx, rdx_copy(ctx, *ho, RDX_HOST, r->offsets, RDX_DEVICE, ob));
  CHECK_OK(ctx, rdx_copy(ctx, *hr, RDX_HOST, r->row_ids, RDX_DEVICE, (size_t)r->total * 8));
}
static inline void check_result_host_free(const rdx_result *r, uint64_t *ho, uint64_t *hr) {
  if (r->where != RDX_DEVICE) return;
  free(ho);
  free(hr);
}

/* A copy of a host buffer where ctx computes (host memory on the CPU backend, else device
 * memory), copied back with check_fetch and released with check_unplace. */
static inline void *check_place(rdx_context *ctx, const void *h, size_t bytes) {
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    void *p = malloc(bytes ? bytes : 1);
    if (bytes) memcpy(p, h, bytes);
    return p;
  }
  void *d = NULL;
  CHECK_OK(ctx, rdx_malloc(ctx, &d, bytes ? bytes : 1, RDX_DEVICE));
  if (bytes) CHECK_OK(ctx, rdx_copy(ctx, d, RDX_DEVICE, h, RDX_HOST, bytes));
  return d;
}
static inline void check_fetch(rdx_context *ctx, void *h, const void *p, size_t bytes) {
  if (!bytes) return;
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) memcpy(h, p, bytes);
  else CHECK_OK(ctx, rdx_copy(ctx, h, RDX_HOST, p, RDX_DEVICE, bytes));
}
static inline void check_unplace(rdx_context *ctx, void *p) {
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) free(p);
  else rdx_free(ctx, p, RDX_DEVICE);
}

#endif /* RDX_CHECK_H */
