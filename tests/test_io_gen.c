/*
 * test_io_gen.c: the lookup generator behind `raydex bench keys` and `raydex gen lookups`.
 * Misses inside the key range must be misses (not a key) strictly between the smallest and the
 * largest key; misses outside must lie below the smallest or above the largest key; hits must
 * be keys. Checked against a sorted copy of the keys on sparse, uniform, clustered and tiny key
 * sets, u32 and u64, with duplicates; dense key sets (no inside miss exists) must fail with
 * RDX_ERR_INVALID_ARGUMENT and say so. Batches depend on the seed only: the same seed on one
 * thread and on four gives the same lookups. The inside misses are uniform over the absent
 * values (a chi-square-free check: each of two gaps gets its share within 6 sigma).
 */
#include "check.h"
#include "io/io.h"

#include <math.h>

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static uint64_t at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

static int is_key(const uint64_t *sorted, int64_t n, uint64_t v) {
  return bsearch(&v, sorted, (size_t)n, 8, cmp_u64) != NULL;
}

/* Generate m lookups and check every one; returns the number of misses. */
static int64_t check_lookups_as(rdx_context *ctx, rdx_array keys, int64_t m, double hit, rdx_miss_kind miss,
                                rdx_miss_kind expect, uint64_t seed) {
  int64_t n = keys.count, n_miss = 0;
  uint64_t *s = (uint64_t *)malloc((size_t)(n + 1) * 8);
  for (int64_t i = 0; i < n; i++) s[i] = at(keys, i);
  qsort(s, (size_t)n, 8, cmp_u64);
  uint64_t kmin = n ? s[0] : 0, kmax = n ? s[n - 1] : 0;
  rdx_array q;
  CHECK_OK(ctx, rdx_gen_lookups(ctx, keys, m, hit, miss, 0.0, seed, &q));
  if (q.data == NULL) {
    free(s);
    return -1;
  }
  CHECK_EQ(q.count, m);
  CHECK_EQ(q.dtype, keys.dtype);
  for (int64_t i = 0; i < m; i++) {
    uint64_t v = at(q, i);
    if (is_key(s, n, v)) {
      if (hit == 0) {
        CHECK_FAIL_("lookup %lld = %llu is a key, but the hit ratio is 0", (long long)i, (unsigned long long)v);
        break;
      }
      continue;
    }
    n_miss++;
    int ok = expect == RDX_MISS_INSIDE ? (v > kmin && v < kmax) : (v < kmin || v > kmax);
    if (!ok) {
      CHECK_FAIL_("miss %lld = %llu is not %s the key range [%llu, %llu]", (long long)i, (unsigned long long)v,
                  expect == RDX_MISS_INSIDE ? "inside" : "outside", (unsigned long long)kmin, (unsigned long long)kmax);
      break;
    }
  }
  if (hit == 1) CHECK_EQ(n_miss, 0);
  rdx_npy_free(&q);
  free(s);
  return n_miss;
}

static int64_t check_lookups(rdx_context *ctx, rdx_array keys, int64_t m, double hit, rdx_miss_kind miss,
                             uint64_t seed) {
  return check_lookups_as(ctx, keys, m, hit, miss, miss, seed);
}

static void check_same(rdx_context *a, rdx_context *b, rdx_array keys, int64_t m, double hit, rdx_miss_kind miss) {
  rdx_array qa, qb;
  CHECK_OK(a, rdx_gen_lookups(a, keys, m, hit, miss, 1.0, 99, &qa));
  CHECK_OK(b, rdx_gen_lookups(b, keys, m, hit, miss, 1.0, 99, &qb));
  if (qa.data && qb.data) CHECK(memcmp(qa.data, qb.data, (size_t)m * rdx_dtype_size(keys.dtype)) == 0);
  rdx_array qc;
  CHECK_OK(a, rdx_gen_lookups(a, keys, m, hit, miss, 1.0, 100, &qc));
  if (qa.data && qc.data && m > 100) CHECK(memcmp(qa.data, qc.data, (size_t)m * rdx_dtype_size(keys.dtype)) != 0);
  rdx_npy_free(&qa);
  rdx_npy_free(&qb);
  rdx_npy_free(&qc);
}

static rdx_array host_keys(rdx_dtype dt, const uint64_t *v, int64_t n) {
  void *p = malloc((size_t)(n + 1) * 8);
  rdx_array a = rdx_host_array(p, n, dt);
  for (int64_t i = 0; i < n; i++) {
    if (dt == RDX_U32) ((uint32_t *)p)[i] = (uint32_t)v[i];
    else ((uint64_t *)p)[i] = v[i];
  }
  return a;
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    CASE(gen_lookups_sparse);
    {
      static const double uni[] = {0.01, 0.3, 1.0};
      for (int u = 0; u < 3; u++) {
        rdx_array keys;
        CHECK_OK(ctx, rdx_gen_keys(ctx, 200000, dtype, RDX_DIST_SPARSE, uni[u], check_rand_(), &keys));
        int64_t m = 300000;
        CHECK_EQ(check_lookups(ctx, keys, m, 0.0, RDX_MISS_INSIDE, check_rand_()), m);
        int64_t half = check_lookups(ctx, keys, m, 0.5, RDX_MISS_INSIDE, check_rand_());
        CHECK(half > m / 2 - 5000 && half < m / 2 + 5000);
        check_lookups(ctx, keys, m, 0.2, RDX_MISS_OUTSIDE, check_rand_());
        check_lookups(ctx, keys, 1000, 1.0, RDX_MISS_INSIDE, check_rand_());
        rdx_npy_free(&keys);
      }
    }
    CASE(gen_lookups_dense_has_no_inside_miss);
    {
      rdx_array keys, q;
      CHECK_OK(ctx, rdx_gen_keys(ctx, 100000, dtype, RDX_DIST_DENSE, 0, check_rand_(), &keys));
      CHECK_STATUS(ctx, rdx_gen_lookups(ctx, keys, 1000, 0.5, RDX_MISS_INSIDE, 0.0, 1, &q), RDX_ERR_INVALID_ARGUMENT);
      CHECK(strstr(rdx_context_message(ctx), "no miss exists inside the key range") != NULL);
      CHECK(q.data == NULL);
      /* all hits need no miss; misses outside exist */
      check_lookups(ctx, keys, 1000, 1.0, RDX_MISS_INSIDE, 2);
      check_lookups(ctx, keys, 1000, 0.5, RDX_MISS_OUTSIDE, 3);
      rdx_npy_free(&keys);
      /* dense with duplicates, and a single key */
      uint64_t v[] = {7, 8, 8, 9, 7, 10};
      keys = host_keys(dtype, v, 6);
      CHECK_STATUS(ctx, rdx_gen_lookups(ctx, keys, 10, 0.0, RDX_MISS_INSIDE, 0.0, 1, &q), RDX_ERR_INVALID_ARGUMENT);
      free((void *)keys.data);
      keys = host_keys(dtype, v, 1);
      CHECK_STATUS(ctx, rdx_gen_lookups(ctx, keys, 10, 0.0, RDX_MISS_INSIDE, 0.0, 1, &q), RDX_ERR_INVALID_ARGUMENT);
      free((void *)keys.data);
    }
    CASE(gen_lookups_one_gap);
    {
      /* 0..999 without 500, shuffled, with duplicates: every inside miss is 500 */
      uint64_t *v = (uint64_t *)malloc(1200 * 8);
      int64_t n = 0;
      for (uint64_t k = 0; k < 1000; k++)
        if (k != 500) v[n++] = k;
      for (int i = 0; i < 201; i++) v[n++] = check_below(1000) | 1; /* odd: never 500 */
      for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)check_below((uint64_t)i + 1);
        uint64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
      }
      rdx_array keys = host_keys(dtype, v, n), q;
      CHECK_OK(ctx, rdx_gen_lookups(ctx, keys, 5000, 0.0, RDX_MISS_INSIDE, 0.0, 5, &q));
      for (int64_t i = 0; q.data && i < q.count; i++)
        if (at(q, i) != 500) {
          CHECK_FAIL_("miss %lld is %llu, the only absent value is 500", (long long)i, (unsigned long long)at(q, i));
          break;
        }
      rdx_npy_free(&q);
      free((void *)keys.data);
      free(v);
    }
    CASE(gen_lookups_uniform_over_gaps);
    {
      /* keys 0, 10, 1000 (u64: near the top of the width): gaps of 9 and 989 absent values */
      uint64_t base = dt ? UINT64_MAX - 1000 : 0;
      uint64_t v[] = {base + 1000, base, base + 10};
      rdx_array keys = host_keys(dtype, v, 3), q;
      int64_t m = 400000, first = 0;
      CHECK_OK(ctx, rdx_gen_lookups(ctx, keys, m, 0.0, RDX_MISS_INSIDE, 0.0, 6, &q));
      for (int64_t i = 0; q.data && i < m; i++) {
        uint64_t x = at(q, i) - base;
        if (x == 0 || x == 10 || x >= 1000) {
          CHECK_FAIL_("miss %lld = base + %llu is a key or outside", (long long)i, (unsigned long long)x);
          break;
        }
        first += x < 10;
      }
      double want = (double)m * 9 / 998, sigma = sqrt(want * (1 - 9.0 / 998));
      if (fabs((double)first - want) > 6 * sigma)
        CHECK_FAIL_("%lld misses in the first gap, expected %.0f +- %.0f", (long long)first, want, 6 * sigma);
      rdx_npy_free(&q);
      free((void *)keys.data);
    }
    CASE(gen_lookups_full_width);
    {
      /* keys at both ends of the width: inside is everything else, outside does not exist and
       * falls back to inside */
      uint64_t top = dt ? UINT64_MAX : UINT32_MAX;
      uint64_t v[] = {top, 0, top - 1, 1, (top >> 1) + 3};
      rdx_array keys = host_keys(dtype, v, 5);
      CHECK_EQ(check_lookups(ctx, keys, 20000, 0.0, RDX_MISS_INSIDE, 7), 20000);
      CHECK_EQ(check_lookups_as(ctx, keys, 20000, 0.0, RDX_MISS_OUTSIDE, RDX_MISS_INSIDE, 8), 20000);
      free((void *)keys.data);
    }
    CASE(gen_lookups_seed_only);
    {
      rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
      o.backend = RDX_BACKEND_CPU;
      o.n_threads = 1;
      rdx_context *one = NULL, *four = NULL;
      CHECK_OK(one, rdx_context_create(&o, &one));
      o.n_threads = 4;
      CHECK_OK(four, rdx_context_create(&o, &four));
      rdx_array keys;
      CHECK_OK(ctx, rdx_gen_keys(ctx, 100000, dtype, RDX_DIST_SPARSE, 0.5, 11, &keys));
      check_same(one, four, keys, 300000, 0.5, RDX_MISS_INSIDE);
      check_same(one, four, keys, 300000, 0.5, RDX_MISS_OUTSIDE);
      rdx_npy_free(&keys);
      rdx_context_destroy(one);
      rdx_context_destroy(four);
    }
  }
  return check_end(ctx);
}
