/*
 * test_io_gen.c: the generators behind `raydex gen`, `raydex bench` and the tests.
 *
 * The keyed permutation is a bijection of [0, last] for every domain of 1 to 300 values (checked
 * exhaustively) and on samples of wide domains, and it looks random on small ones (where a
 * value goes is uniform over the seeds). Key sets hold n distinct keys (checked by sorting a
 * copy) of the documented distribution for every distribution and dtype at n = 0, 1, 2, 3 and
 * larger: dense is 0 .. n-1, sparse is 0 .. d-1 plus keys in [d, 2^w - 1], uniform anything;
 * their values are uniform (chi-square over 1024 buckets of high and of low bits, two-sided, so
 * too regular a set fails too) and their order random (ascents, adjacent successors).
 *
 * Lookups: misses inside the key range must be misses (not a key) strictly between the smallest
 * and the largest key; misses outside must lie below the smallest or above the largest key;
 * hits must be keys. Checked against a sorted copy of the keys on sparse, uniform, clustered and
 * tiny key sets, u32 and u64, with duplicates; dense key sets (no inside miss exists) must fail
 * with RDX_ERR_INVALID_ARGUMENT and say so. The inside misses are uniform over the absent values
 * (a chi-square-free check: each of two gaps gets its share within 6 sigma). Ranges start at a
 * key, each key about as often, and end width - 1 above it or at the top of the width.
 *
 * Every generator's output depends on the seed only: one thread and four give the same bytes.
 * Sizes: a negative count and one whose bytes overflow (2^61 u64 keys) are refused with
 * RDX_ERR_INVALID_ARGUMENT and an empty output before anything is allocated; rdx_gen_*_bytes
 * gives the output's bytes plus the scratch, and the scratch the lookups take from the
 * context's account stays within it.
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

static rdx_context *cpu_context(int n_threads) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  o.n_threads = n_threads;
  rdx_context *c = NULL;
  CHECK_OK(c, rdx_context_create(&o, &c));
  return c;
}

/* A sorted copy of a 1-column u32/u64 array, as u64. */
static uint64_t *sorted_copy(rdx_array a) {
  uint64_t *s = (uint64_t *)malloc((size_t)(a.count + 1) * 8);
  for (int64_t i = 0; i < a.count; i++) s[i] = at(a, i);
  qsort(s, (size_t)a.count, 8, cmp_u64);
  return s;
}

/* The bijection on [0, last] for a domain small enough to walk: every image in the domain, each
 * once. */
static void check_perm_domain(uint64_t last, uint64_t seed) {
  rdx_perm p;
  rdx_perm_init(&p, last, seed);
  unsigned char *seen = (unsigned char *)calloc((size_t)last + 1, 1);
  for (uint64_t x = 0; x <= last; x++) {
    uint64_t y = rdx_perm_at(&p, x);
    if (y > last || seen[y]) {
      CHECK_FAIL_("perm of [0, %llu], seed %llu: %llu -> %llu, %s", (unsigned long long)last,
                  (unsigned long long)seed, (unsigned long long)x, (unsigned long long)y,
                  y > last ? "outside the domain" : "a repeated image");
      break;
    }
    seen[y] = 1;
  }
  free(seen);
}

/* Chi-square of counts against equal expectation, accepted within 6 standard deviations of its
 * mean (buckets - 1 degrees of freedom): too far above is lumpy, too far below too regular. */
static void check_flat(const char *what, const int64_t *count, int buckets, int64_t total) {
  double want = (double)total / buckets, chi = 0, df = buckets - 1, sd = sqrt(2 * df);
  for (int b = 0; b < buckets; b++) chi += (count[b] - want) * (count[b] - want) / want;
  if (fabs(chi - df) > 6 * sd) CHECK_FAIL_("%s: chi-square %.0f, expected %.0f +- %.0f", what, chi, df, 6 * sd);
}

/* n keys of dist: distinct, of the distribution's range, uniform over it, in random order. */
static void check_key_set(rdx_context *ctx, int64_t n, rdx_dtype dtype, rdx_key_dist dist, double u, uint64_t seed) {
  rdx_array k;
  CHECK_OK(ctx, rdx_gen_keys(ctx, n, dtype, dist, u, seed, &k));
  if (k.data == NULL) return;
  CHECK_EQ(k.count, n);
  CHECK_EQ(k.dtype, dtype);
  CHECK_EQ(k.columns, 1);
  int w = dtype == RDX_U32 ? 32 : 64;
  uint64_t maxv = dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t d = dist == RDX_DIST_DENSE ? n : dist == RDX_DIST_UNIFORM ? 0 : n - (int64_t)llround(u * (double)n);
  uint64_t *s = sorted_copy(k);
  for (int64_t i = 0; i < n; i++) {
    if (i > 0 && s[i] == s[i - 1]) {
      CHECK_FAIL_("n %lld dist %d u %g: key %llu twice", (long long)n, (int)dist, u, (unsigned long long)s[i]);
      break;
    }
    if (i < d ? s[i] != (uint64_t)i : s[i] > maxv) {
      CHECK_FAIL_("n %lld dist %d u %g: sorted key %lld is %llu (%lld dense keys)", (long long)n, (int)dist, u,
                  (long long)i, (unsigned long long)s[i], (long long)d);
      break;
    }
  }
  if (n - d >= 1 << 16) { /* the sparse keys, uniform over [d, 2^w - 1]: high bits, then low bits */
    int64_t hi[1024] = {0}, lo[1024] = {0};
    uint64_t span = maxv - (uint64_t)d;
    for (int64_t i = d; i < n; i++) {
      hi[(int)((unsigned __int128)(s[i] - (uint64_t)d) * 1024 / ((unsigned __int128)span + 1))]++;
      lo[s[i] & 1023]++;
    }
    char what[96];
    snprintf(what, sizeof what, "n %lld dist %d u %g u%d high bits", (long long)n, (int)dist, u, w);
    check_flat(what, hi, 1024, n - d);
    snprintf(what, sizeof what, "n %lld dist %d u %g u%d low bits", (long long)n, (int)dist, u, w);
    check_flat(what, lo, 1024, n - d);
  }
  if (n >= 1 << 16) { /* a random order: (n - 1) / 2 ascents, about one key followed by the next */
    int64_t ascents = 0, successors = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
      ascents += at(k, i + 1) > at(k, i);
      successors += at(k, i + 1) == at(k, i) + 1;
    }
    double sd = sqrt((double)(n + 1) / 12);
    if (fabs((double)ascents - (double)(n - 1) / 2) > 6 * sd)
      CHECK_FAIL_("n %lld dist %d: %lld ascents, expected %.0f +- %.0f", (long long)n, (int)dist, (long long)ascents,
                  (double)(n - 1) / 2, 6 * sd);
    CHECK(successors < 20);
  }
  free(s);
  rdx_npy_free(&k);
}

/* The same call on one thread and on four gives the same bytes. */
typedef rdx_status (*gen_call)(rdx_context *ctx, const void *arg, rdx_array *out);
static void check_thread_free(const char *what, gen_call call, const void *arg) {
  rdx_context *one = cpu_context(1), *four = cpu_context(4);
  rdx_array a, b;
  CHECK_OK(one, call(one, arg, &a));
  CHECK_OK(four, call(four, arg, &b));
  if (a.data && b.data) {
    CHECK_EQ(a.count, b.count);
    if (a.count != b.count || memcmp(a.data, b.data, (size_t)a.count * a.columns * rdx_dtype_size(a.dtype)) != 0)
      CHECK_FAIL_("%s: one thread and four differ", what);
  }
  rdx_npy_free(&a);
  rdx_npy_free(&b);
  rdx_context_destroy(one);
  rdx_context_destroy(four);
}

typedef struct gen_args {
  rdx_array input;
  int64_t n;
  rdx_dtype dtype;
  int kind; /* the distribution or query type */
} gen_args;

static rdx_status call_keys(rdx_context *c, const void *a, rdx_array *out) {
  const gen_args *g = (const gen_args *)a;
  return rdx_gen_keys(c, g->n, g->dtype, (rdx_key_dist)g->kind, 0.4, 21, out);
}
static rdx_status call_ranges(rdx_context *c, const void *a, rdx_array *out) {
  const gen_args *g = (const gen_args *)a;
  return rdx_gen_ranges(c, g->input, g->n, 1000, 22, out);
}
static rdx_status call_points(rdx_context *c, const void *a, rdx_array *out) {
  const gen_args *g = (const gen_args *)a;
  return rdx_gen_points(c, g->n, (rdx_point_dist)g->kind, g->dtype, 23, out);
}
static rdx_status call_point_queries(rdx_context *c, const void *a, rdx_array *out) {
  const gen_args *g = (const gen_args *)a;
  return rdx_gen_point_queries(c, g->input, g->kind, g->n, 0.01, 24, out);
}

/* A refused size: INVALID_ARGUMENT, a sentence naming want, and an empty output. */
static void check_refused(rdx_context *ctx, rdx_status st, const rdx_array *out, const char *want) {
  CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
  if (strstr(rdx_context_message(ctx), want) == NULL)
    CHECK_FAIL_("message '%s' does not name '%s'", rdx_context_message(ctx), want);
  CHECK(out->data == NULL && out->count == 0);
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
  CASE(perm_bijective);
  {
    for (uint64_t last = 0; last < 300; last++)
      for (int k = 0; k < 3; k++) check_perm_domain(last, check_rand_());
    check_perm_domain(((uint64_t)1 << 20) + 7, check_rand_()); /* walks past 2^20 + 7 */
    /* wide domains, sampled: images distinct and inside */
    static const uint64_t wide[] = {UINT64_MAX, UINT32_MAX, ((uint64_t)1 << 40) + 12345, ((uint64_t)1 << 63) - 1};
    for (int w = 0; w < 4; w++) {
      rdx_perm p;
      rdx_perm_init(&p, wide[w], check_rand_());
      int64_t m = 100000;
      uint64_t *v = (uint64_t *)malloc((size_t)m * 8);
      for (int64_t i = 0; i < m; i++) v[i] = rdx_perm_at(&p, wide[w] - (uint64_t)i * 3);
      qsort(v, (size_t)m, 8, cmp_u64);
      for (int64_t i = 0; i < m; i++)
        if ((i > 0 && v[i] == v[i - 1]) || v[i] > wide[w]) {
          CHECK_FAIL_("perm of [0, %llu]: image %llu repeated or outside", (unsigned long long)wide[w],
                      (unsigned long long)v[i]);
          break;
        }
      free(v);
    }
  }
  CASE(perm_uniform_over_seeds);
  {
    /* where 0 and the last value go is uniform over the domain, seed to seed */
    for (uint64_t size = 2; size <= 12; size++) {
      int64_t first[12] = {0}, last[12] = {0}, seeds = 4000;
      for (int64_t k = 0; k < seeds; k++) {
        rdx_perm p;
        rdx_perm_init(&p, size - 1, check_rand_());
        first[rdx_perm_at(&p, 0)]++;
        last[rdx_perm_at(&p, size - 1)]++;
      }
      char what[64];
      snprintf(what, sizeof what, "images of 0 in [0, %llu]", (unsigned long long)size - 1);
      check_flat(what, first, (int)size, seeds);
      snprintf(what, sizeof what, "images of %llu in [0, %llu]", (unsigned long long)size - 1,
               (unsigned long long)size - 1);
      check_flat(what, last, (int)size, seeds);
    }
  }
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    CASE(gen_keys_distinct);
    {
      static const int64_t ns[] = {0, 1, 2, 3, 17, 1000, 1 << 17};
      static const double us[] = {0.0, 0.01, 0.3, 0.5, 0.99, 1.0};
      for (int i = 0; i < 7; i++) {
        check_key_set(ctx, ns[i], dtype, RDX_DIST_DENSE, 0, check_rand_());
        check_key_set(ctx, ns[i], dtype, RDX_DIST_UNIFORM, 0, check_rand_());
        for (int u = 0; u < 6; u++) check_key_set(ctx, ns[i], dtype, RDX_DIST_SPARSE, us[u], check_rand_());
      }
    }
    CASE(gen_keys_uniform_is_sparse_100);
    {
      rdx_array a, b;
      CHECK_OK(ctx, rdx_gen_keys(ctx, 5000, dtype, RDX_DIST_UNIFORM, 0.2, 77, &a));
      CHECK_OK(ctx, rdx_gen_keys(ctx, 5000, dtype, RDX_DIST_SPARSE, 1.0, 77, &b));
      if (a.data && b.data) CHECK(memcmp(a.data, b.data, 5000 * rdx_dtype_size(dtype)) == 0);
      rdx_npy_free(&b);
      CHECK_OK(ctx, rdx_gen_keys(ctx, 5000, dtype, RDX_DIST_UNIFORM, 0.2, 78, &b));
      if (a.data && b.data) CHECK(memcmp(a.data, b.data, 5000 * rdx_dtype_size(dtype)) != 0);
      rdx_npy_free(&a);
      rdx_npy_free(&b);
    }
    CASE(gen_seed_only);
    {
      for (int dist = RDX_DIST_DENSE; dist <= RDX_DIST_UNIFORM; dist++) {
        gen_args g = {rdx_no_array(), 300001, dtype, dist};
        check_thread_free("keys", call_keys, &g);
      }
      gen_args g = {rdx_no_array(), 1000, dtype, RDX_DIST_SPARSE};
      rdx_array keys;
      CHECK_OK(ctx, call_keys(ctx, &g, &keys));
      g.input = keys, g.n = 200001;
      check_thread_free("ranges", call_ranges, &g);
      rdx_npy_free(&keys);
      rdx_dtype ft = dt ? RDX_F64 : RDX_F32;
      for (int dist = RDX_PDIST_UNIFORM; dist <= RDX_PDIST_TAXI; dist++) {
        gen_args p = {rdx_no_array(), 200001, ft, dist};
        check_thread_free("points", call_points, &p);
      }
      gen_args p = {rdx_no_array(), 5000, ft, RDX_PDIST_TAXI};
      rdx_array pts;
      CHECK_OK(ctx, call_points(ctx, &p, &pts));
      p.input = pts, p.n = 200001;
      for (p.kind = 0; p.kind < 4; p.kind++) check_thread_free("point queries", call_point_queries, &p);
      rdx_npy_free(&pts);
    }
  }
  CASE(gen_ranges_bounds);
  for (int dt = 0; dt < 2; dt++) {
    /* lo a key, hi = lo + width - 1 clamped at the top of the width; each key drawn */
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t top = dt ? UINT64_MAX : UINT32_MAX, width = 1000;
    uint64_t v[] = {top, 5, top - 998, top - 999, 0, 123456};
    rdx_array keys = host_keys(dtype, v, 6), r;
    int64_t m = 60000, seen[6] = {0};
    CHECK_OK(ctx, rdx_gen_ranges(ctx, keys, m, width, check_rand_(), &r));
    CHECK_EQ(r.columns, 2);
    for (int64_t i = 0; r.data && i < m; i++) {
      uint64_t lo = at(r, 2 * i), hi = at(r, 2 * i + 1);
      int k = 0;
      while (k < 6 && v[k] != lo) k++;
      if (k == 6 || hi != (top - lo < width - 1 ? top : lo + width - 1)) {
        CHECK_FAIL_("range %lld is [%llu, %llu]", (long long)i, (unsigned long long)lo, (unsigned long long)hi);
        break;
      }
      seen[k]++;
    }
    for (int k = 0; k < 6; k++) CHECK(seen[k] > m / 6 - 1000 && seen[k] < m / 6 + 1000);
    rdx_npy_free(&r);
    CHECK_STATUS(ctx, rdx_gen_ranges(ctx, keys, 10, 0, 1, &r), RDX_ERR_INVALID_ARGUMENT);
    keys.count = 0;
    CHECK_STATUS(ctx, rdx_gen_ranges(ctx, keys, 10, 5, 1, &r), RDX_ERR_INVALID_ARGUMENT);
    CHECK(r.data == NULL);
    free((void *)keys.data);
  }
  CASE(gen_sizes_refused);
  {
    rdx_array out, keys, pts;
    uint64_t kv[2] = {1, 5};
    double pv[4] = {0, 0, 1, 1};
    keys = rdx_host_array(kv, 2, RDX_U64);
    pts = rdx_host_matrix(pv, 2, 2, RDX_F64);
    check_refused(ctx, rdx_gen_keys(ctx, -1, RDX_U32, RDX_DIST_DENSE, 0, 1, &out), &out, "n is negative (-1)");
    check_refused(ctx, rdx_gen_lookups(ctx, keys, -2, 1.0, RDX_MISS_INSIDE, 0, 1, &out), &out, "m is negative (-2)");
    check_refused(ctx, rdx_gen_ranges(ctx, keys, -3, 10, 1, &out), &out, "m is negative (-3)");
    check_refused(ctx, rdx_gen_points(ctx, -4, RDX_PDIST_UNIFORM, RDX_F32, 1, &out), &out, "n is negative (-4)");
    check_refused(ctx, rdx_gen_point_queries(ctx, pts, 1, -5, 0.1, 1, &out), &out, "m is negative (-5)");
    /* bytes past size_t (the 1-byte buffer this once wrote past), then past the arrays' 2^56 */
    check_refused(ctx, rdx_gen_keys(ctx, (int64_t)1 << 61, RDX_U64, RDX_DIST_UNIFORM, 0, 1, &out), &out,
                  "n 2305843009213693952 needs more bytes");
    check_refused(ctx, rdx_gen_keys(ctx, (int64_t)1 << 54, RDX_U64, RDX_DIST_DENSE, 0, 1, &out), &out,
                  "n 18014398509481984 needs more bytes");
    check_refused(ctx, rdx_gen_keys(ctx, INT64_MAX, RDX_U64, RDX_DIST_SPARSE, 0.5, 1, &out), &out, "needs more bytes");
    check_refused(ctx, rdx_gen_keys(ctx, ((int64_t)1 << 32) + 1, RDX_U32, RDX_DIST_UNIFORM, 0, 1, &out), &out,
                  "distinct u32 keys (4294967297");
    check_refused(ctx, rdx_gen_lookups(ctx, keys, (int64_t)1 << 61, 0.5, RDX_MISS_INSIDE, 0, 1, &out), &out,
                  "m 2305843009213693952 needs more bytes");
    check_refused(ctx, rdx_gen_ranges(ctx, keys, (int64_t)1 << 60, 10, 1, &out), &out,
                  "m 1152921504606846976 needs more bytes");
    check_refused(ctx, rdx_gen_points(ctx, (int64_t)1 << 60, RDX_PDIST_TAXI, RDX_F64, 1, &out), &out,
                  "n 1152921504606846976 needs more bytes");
    check_refused(ctx, rdx_gen_point_queries(ctx, pts, 1, (int64_t)1 << 59, 0.1, 1, &out), &out,
                  "m 576460752303423488 needs more bytes");
    size_t bytes = 0;
    check_refused(ctx, rdx_gen_keys_bytes(ctx, (int64_t)1 << 61, RDX_U64, &bytes), &out, "1.84e+19 bytes");
    check_refused(ctx, rdx_gen_keys_bytes(ctx, 10, RDX_F32, &bytes), &out, "must be u32 or u64");
    check_refused(ctx, rdx_gen_points_bytes(ctx, 10, RDX_U32, &bytes), &out, "must be f32 or f64");
    check_refused(ctx, rdx_gen_point_queries_bytes(ctx, RDX_F32, 4, 10, &bytes), &out, "query type is not 0 to 3 (4)");
    check_refused(ctx, rdx_gen_lookups_bytes(ctx, 10, RDX_U32, 10, 1.5, RDX_MISS_INSIDE, &bytes), &out,
                  "hit ratio is not in [0, 1] (1.5)");
    check_refused(ctx, rdx_gen_lookups_bytes(ctx, -1, RDX_U32, 10, 0.5, RDX_MISS_INSIDE, &bytes), &out,
                  "keys.count is negative (-1)");
    /* without a context: the status alone */
    CHECK_EQ(rdx_gen_keys_bytes(NULL, (int64_t)1 << 61, RDX_U64, &bytes), RDX_ERR_INVALID_ARGUMENT);
    CHECK_EQ(rdx_gen_points_bytes(NULL, -1, RDX_F64, &bytes), RDX_ERR_INVALID_ARGUMENT);
    CHECK_EQ(rdx_gen_keys_bytes(NULL, 10, RDX_U64, &bytes), RDX_OK);
    CHECK_EQ(bytes, 80);
  }
  CASE(gen_bytes);
  {
    size_t bytes = 0;
    CHECK_OK(ctx, rdx_gen_keys_bytes(ctx, 1000, RDX_U32, &bytes));
    CHECK_EQ(bytes, 4000);
    CHECK_OK(ctx, rdx_gen_keys_bytes(ctx, (int64_t)1 << 32, RDX_U32, &bytes)); /* asked, not allocated */
    CHECK_EQ(bytes, (uint64_t)1 << 34);
    CHECK_OK(ctx, rdx_gen_keys_bytes(ctx, 0, RDX_U64, &bytes));
    CHECK_EQ(bytes, 0);
    CHECK_OK(ctx, rdx_gen_ranges_bytes(ctx, RDX_U64, 100, &bytes));
    CHECK_EQ(bytes, 1600);
    CHECK_OK(ctx, rdx_gen_points_bytes(ctx, 100, RDX_F32, &bytes));
    CHECK_EQ(bytes, 800);
    static const int cols[4] = {2, 4, 3, 2};
    for (int type = 0; type < 4; type++) {
      CHECK_OK(ctx, rdx_gen_point_queries_bytes(ctx, RDX_F64, type, 100, &bytes));
      CHECK_EQ(bytes, 100 * 8 * cols[type]);
    }
    /* lookups: the output, plus the sorted copy and the guide table when a miss may be drawn */
    CHECK_OK(ctx, rdx_gen_lookups_bytes(ctx, 1 << 20, RDX_U32, 1000, 1.0, RDX_MISS_INSIDE, &bytes));
    CHECK_EQ(bytes, 4000);
    CHECK_OK(ctx, rdx_gen_lookups_bytes(ctx, 0, RDX_U32, 1000, 0.0, RDX_MISS_INSIDE, &bytes));
    CHECK_EQ(bytes, 4000);
    CHECK_OK(ctx, rdx_gen_lookups_bytes(ctx, 1 << 20, RDX_U32, 1000, 0.5, RDX_MISS_OUTSIDE, &bytes));
    CHECK(bytes >= 4000 + 4 * (1 << 20) && bytes <= 4000 + 4 * (1 << 20) + 8 * ((1 << 20) / 64 + 2));
    /* the scratch a call takes from a fresh context's account stays within the estimate */
    for (int dt = 0; dt < 2; dt++) {
      rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
      rdx_context *fresh = cpu_context(2);
      rdx_array keys, q;
      int64_t peak = -1, n = 300000, m = 1000;
      CHECK_OK(fresh, rdx_gen_keys(fresh, n, dtype, RDX_DIST_SPARSE, 0.5, 5, &keys));
      rdx_context_memory(fresh, NULL, &peak);
      CHECK_EQ(peak, 0); /* keys: the output alone */
      CHECK_OK(fresh, rdx_gen_lookups(fresh, keys, m, 0.5, RDX_MISS_INSIDE, 0.0, 6, &q));
      CHECK_OK(fresh, rdx_gen_lookups_bytes(fresh, n, dtype, m, 0.5, RDX_MISS_INSIDE, &bytes));
      rdx_context_memory(fresh, NULL, &peak);
      CHECK(peak > 0 && (uint64_t)peak <= bytes - (size_t)m * rdx_dtype_size(dtype));
      rdx_npy_free(&q);
      rdx_npy_free(&keys);
      rdx_context_destroy(fresh);
    }
  }
  return check_end(ctx);
}
