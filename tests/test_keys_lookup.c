/*
 * test_keys_lookup.c: property tests of the baseline key indexes (scan, sorted, btree, hash)
 * against the oracle, on random and adversarial key sets, for the backend given by --backend.
 *
 * Cases: sizes 0, 1, then random; u32 and u64 keys; implied, u32 and u64 (above 2^32) row ids;
 * duplicates (many, runs across leaf blocks, all keys equal); key 0 and the maximum key; all
 * misses; u64 keys above 2^32; ranges covering nothing, everything, lo > hi, single points. The
 * oracle itself is checked first against a linear scan (oracle_self_check).
 */
#include "keys_check.h"

static const rdx_kind kinds[] = {RDX_KIND_SCAN, RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH};

typedef struct dataset {
  rdx_array keys, rows, queries, bounds;
  void *kbuf, *rbuf, *qbuf, *bbuf;
} dataset;

static void ds_free(dataset *d) {
  free(d->kbuf);
  free(d->rbuf);
  free(d->qbuf);
  free(d->bbuf);
  memset(d, 0, sizeof *d);
}

static void put(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

/* keys drawn by `draw`; rows: 0 implied, 1 u32 shuffled, 2 u64 above 2^32 */
static dataset make(rdx_dtype dt, int64_t n, int row_mode, int64_t m, int64_t mb, uint64_t (*draw)(uint64_t, int64_t, int64_t),
                    uint64_t maxv) {
  dataset d;
  memset(&d, 0, sizeof d);
  size_t es = rdx_dtype_size(dt);
  d.kbuf = malloc((size_t)(n + 1) * es);
  d.qbuf = malloc((size_t)(m + 1) * es);
  d.bbuf = malloc((size_t)(2 * mb + 1) * es);
  d.keys = rdx_host_array(d.kbuf, n, dt);
  d.queries = rdx_host_array(d.qbuf, m, dt);
  d.bounds = rdx_host_matrix(d.bbuf, mb, 2, dt);
  for (int64_t i = 0; i < n; i++) put(d.keys, i, draw(maxv, i, n));
  if (row_mode == 0) {
    d.rows = rdx_no_array();
  } else {
    rdx_dtype rt = row_mode == 1 ? RDX_U32 : RDX_U64;
    d.rbuf = malloc((size_t)(n + 1) * 8);
    d.rows = rdx_host_array(d.rbuf, n, rt);
    for (int64_t i = 0; i < n; i++) put(d.rows, i, (uint64_t)i);
    for (int64_t i = n - 1; i > 0; i--) { /* shuffle */
      int64_t j = (int64_t)check_below((uint64_t)i + 1);
      uint64_t a = kc_at(d.rows, i), b = kc_at(d.rows, j);
      put(d.rows, i, b);
      put(d.rows, j, a);
    }
    if (row_mode == 2)
      for (int64_t i = 0; i < n; i++) put(d.rows, i, kc_at(d.rows, i) * 3 + ((uint64_t)1 << 33));
  }
  /* queries: half existing keys, half random values (mostly misses), plus the extremes */
  for (int64_t i = 0; i < m; i++) {
    uint64_t v;
    int r = (int)check_below(10);
    if (n > 0 && r < 5) v = kc_at(d.keys, (int64_t)check_below((uint64_t)n));
    else if (r == 5) v = 0;
    else if (r == 6) v = maxv;
    else if (n > 0 && r == 7) v = kc_at(d.keys, (int64_t)check_below((uint64_t)n)) + 1;
    else v = check_below(maxv == UINT64_MAX ? 0 : maxv + 1);
    put(d.queries, i, v & maxv);
  }
  for (int64_t i = 0; i < mb; i++) {
    uint64_t lo, hi;
    int r = (int)check_below(8);
    if (r == 0) lo = 0, hi = maxv;                                 /* everything */
    else if (r == 1) lo = maxv, hi = 0;                            /* lo > hi: empty */
    else if (r == 2 && n > 0) lo = hi = kc_at(d.keys, (int64_t)check_below((uint64_t)n)); /* a point */
    else {
      lo = n > 0 && r < 6 ? kc_at(d.keys, (int64_t)check_below((uint64_t)n)) : check_below(maxv == UINT64_MAX ? 0 : maxv + 1);
      uint64_t w = check_below(r == 7 ? (maxv == UINT64_MAX ? 0 : maxv + 1) : 1000);
      hi = maxv - lo < w ? maxv : lo + w;
    }
    put(d.bounds, 2 * i, lo);
    put(d.bounds, 2 * i + 1, hi);
  }
  return d;
}

/* key drawers */
static uint64_t draw_uniform(uint64_t maxv, int64_t i, int64_t n) { return check_below(maxv == UINT64_MAX ? 0 : maxv + 1); }
static uint64_t draw_dups(uint64_t maxv, int64_t i, int64_t n) { return check_below((uint64_t)(n / 8 + 1)) * 7; }
static uint64_t draw_extremes(uint64_t maxv, int64_t i, int64_t n) {
  switch (check_below(4)) {
    case 0: return 0;
    case 1: return maxv;
    case 2: return maxv - check_below(5);
    default: return check_below(5);
  }
}
static uint64_t draw_equal(uint64_t maxv, int64_t i, int64_t n) { return 42; }
static uint64_t draw_dense(uint64_t maxv, int64_t i, int64_t n) { return (uint64_t)i; }
static uint64_t draw_high(uint64_t maxv, int64_t i, int64_t n) { /* u64 keys above 2^32 */
  return ((uint64_t)1 << 32) + check_below((uint64_t)1 << 40);
}
static uint64_t draw_runs(uint64_t maxv, int64_t i, int64_t n) { /* runs of 1..40 equal keys crossing blocks */
  return (uint64_t)(i / (1 + (int64_t)(i * 2654435761u % 40))) * 1000003u;
}

typedef struct gen_case {
  const char *name;
  uint64_t (*draw)(uint64_t, int64_t, int64_t);
} gen_case;

/* The oracle's self-check (STYLE rule 26), shown once: the reference every key test trusts agrees
 * with a plain linear scan on every generator, and the check catches a corrupted reference (a
 * changed row, a changed key, a lost entry), so a wrong oracle cannot pass silently. */
static void oracle_self_check(void) {
  static uint64_t (*const draws[])(uint64_t, int64_t, int64_t) = {draw_uniform, draw_dups, draw_extremes, draw_equal};
  static const int64_t sizes[] = {0, 1, 2, 100, 1000};
  for (size_t g = 0; g < sizeof draws / sizeof draws[0]; g++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
      for (int dt = 0; dt < 2; dt++)
        for (int row_mode = 0; row_mode < 3; row_mode++) {
          rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
          dataset d = make(dtype, sizes[z], row_mode, 200, 0, draws[g], dt ? UINT64_MAX : UINT32_MAX);
          uint64_t *q = (uint64_t *)malloc((size_t)(d.queries.count + 1) * 8);
          for (int64_t i = 0; i < d.queries.count; i++) q[i] = kc_at(d.queries, i);
          keys_oracle o;
          CHECK(keys_oracle_build(&o, d.keys, d.rows));
          CHECK_EQ(keys_oracle_self_check(&o, d.keys, d.rows, q, d.queries.count, 1000), 0);
          keys_oracle_free(&o);
          free(q);
          ds_free(&d);
        }
  /* a corrupted reference is caught: every key of a set with duplicates is queried */
  dataset d = make(RDX_U64, 1000, 1, 0, 0, draw_dups, UINT64_MAX);
  uint64_t *q = (uint64_t *)malloc(1000 * 8);
  for (int64_t i = 0; i < 1000; i++) q[i] = kc_at(d.keys, i);
  keys_oracle o;
  CHECK(keys_oracle_build(&o, d.keys, d.rows));
  CHECK_EQ(keys_oracle_self_check(&o, d.keys, d.rows, q, 1000, 7), 0);
  int64_t j = 500;
  o.rows[j] ^= 1; /* a row id changed */
  CHECK(keys_oracle_self_check(&o, d.keys, d.rows, q, 1000, 7) > 0);
  o.rows[j] ^= 1;
  o.keys[j] ^= (uint64_t)1 << 40; /* a key changed (and the order broken) */
  CHECK(keys_oracle_self_check(&o, d.keys, d.rows, q, 1000, 7) > 0);
  o.keys[j] ^= (uint64_t)1 << 40;
  o.n--; /* the last entry lost */
  CHECK(keys_oracle_self_check(&o, d.keys, d.rows, q, 1000, 7) > 0);
  o.n++;
  CHECK_EQ(keys_oracle_self_check(&o, d.keys, d.rows, q, 1000, 7), 0); /* restored */
  keys_oracle_free(&o);
  free(q);
  ds_free(&d);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  if (CASE_RUN(oracle_self_check)) oracle_self_check();
  static const gen_case gens[] = {{"uniform", draw_uniform}, {"duplicates", draw_dups}, {"extremes", draw_extremes},
                                  {"all_equal", draw_equal}, {"dense", draw_dense},     {"runs", draw_runs},
                                  {"high_u64", draw_high}};
  static const int64_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 31, 64, 100, 1000, 4099, 30000, 200000};
  int checked[sizeof kinds / sizeof kinds[0]] = {0};
  for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      for (int dt = 0; dt < 2; dt++) {
        rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
        if (gens[g].draw == draw_high && dtype == RDX_U32) continue;
        for (int row_mode = 0; row_mode < 3; row_mode++) {
          int64_t n = sizes[s];
          if (n >= 30000 && row_mode != (int)(s % 3)) continue; /* big sets: one row mode each */
          if (n > 30000 && gens[g].draw != draw_uniform && gens[g].draw != draw_runs) continue;
          uint64_t maxv = dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
          int64_t m = n < 1000 ? 300 : 2000, mb = n > 30000 ? 16 : n > 3000 ? 60 : 200;
          dataset d = make(dtype, n, row_mode, m, mb, gens[g].draw, maxv);
          for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            if (kinds[k] == RDX_KIND_SCAN && n > 30000) continue; /* O(n m) */
            static char part[96];
            snprintf(part, sizeof part, "%s/%s/%s", gens[g].name, rdx_kind_name(kinds[k]), dt ? "u64" : "u32");
            if (!CASE_PART(lookup_sets, part)) continue;
            checked[k] += kc_check_kind(ctx, kinds[k], 0, d.keys, d.rows, d.queries, d.bounds);
          }
          ds_free(&d);
        }
      }
    }
  }
  /* every baseline kind must exist on the CPU and CUDA backends (counted over every generator) */
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !check_filtered(); k++) {
    CASE(kind_available);
    if (checked[k] == 0) CHECK_FAIL_("kind %s is not available on this backend", rdx_kind_name(kinds[k]));
  }
  if (CASE_RUN(host_chunks)) {
    /* A batch of host queries to host answers that a GPU answers in chunks through the staging ring
     * (with --staging ring: slots of 8192 u64 answers, so four chunks, the last one partial) */
    for (int dt = 0; dt < 2; dt++) {
      dataset d = make(dt ? RDX_U64 : RDX_U32, 50000, 1, 3 * 8192 + 1234, 16, draw_dups, dt ? UINT64_MAX : UINT32_MAX);
      for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (kinds[k] != RDX_KIND_SCAN) kc_check_kind(ctx, kinds[k], 0, d.keys, d.rows, d.queries, d.bounds);
      ds_free(&d);
    }
  }
  if (CASE_RUN(sorted_sort_queries)) {
    /* RDX_BUILD_SORT_QUERIES (sorts batches of 2^16 or more on the GPU) answers as without */
    dataset d = make(RDX_U32, 50000, 1, (int64_t)1 << 17, 0, draw_dups, UINT32_MAX);
    keys_oracle o;
    CHECK(keys_oracle_build(&o, d.keys, d.rows));
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.flags = RDX_BUILD_SORT_QUERIES;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, d.keys, d.rows, &bo, &idx));
    uint64_t *out = (uint64_t *)malloc((size_t)d.queries.count * 8);
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, d.queries, rdx_host_array(out, d.queries.count, RDX_U64)));
    for (int64_t i = 0; i < d.queries.count; i++)
      if (out[i] != keys_oracle_lookup(&o, kc_at(d.queries, i))) {
        CHECK_FAIL_("sorted-queries lookup %lld differs from the oracle", (long long)i);
        break;
      }
    free(out);
    rdx_index_destroy(idx);
    keys_oracle_free(&o);
    ds_free(&d);
  }
  if (CASE_RUN(empty_batch)) {
    uint32_t keys[3] = {5, 1, 5};
    rdx_index *idx = NULL;
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 3, RDX_U32), rdx_no_array(), &bo, &idx));
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(NULL, 0, RDX_U32), rdx_host_array(NULL, 0, RDX_U64)));
    CHECK_OK(ctx, rdx_index_range_alloc(ctx, idx, rdx_host_matrix(NULL, 0, 2, RDX_U32), &r));
    CHECK(r != NULL && r->n_queries == 0 && r->total == 0);
    rdx_result_free(ctx, r);
    rdx_index_destroy(idx);
  }
  return check_end(ctx);
}
