/*
 * gen.c: generators of key sets, lookup batches and range batches, as the RX and cgRX papers
 * define them (dense, sparse with a uniformity percentage, uniform; hits and misses inside or
 * outside the key range; Zipf-skewed hits; ranges of a given width).
 *
 * Everything is reproducible from a seed. Distinct sampling draws, radix-sorts and deduplicates
 * until enough values are found, so 2^26 keys take about a second on one core.
 */
#include "io/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ---- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void rdx_rng_seed(rdx_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rdx_rng_next(rdx_rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

uint64_t rdx_rng_below(rdx_rng *r, uint64_t bound) {
  if (bound == 0) return rdx_rng_next(r); /* the whole 64-bit range */
  unsigned __int128 m = (unsigned __int128)rdx_rng_next(r) * bound;
  uint64_t low = (uint64_t)m;
  if (low < bound) {
    uint64_t t = -bound % bound;
    while (low < t) {
      m = (unsigned __int128)rdx_rng_next(r) * bound;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

double rdx_rng_double(rdx_rng *r) { return (double)(rdx_rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- Zipf by rejection-inversion (the Apache Commons RNG formulation) ---- */

/* log(1 + x) / x and (exp(x) - 1) / x, accurate near 0 */
static double helper1(double x) { return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x)); }
static double helper2(double x) { return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x)); }

/* H(x) = ((x)^(1-s) - 1) / (1 - s), continuous in s at 1 (log x) */
static double zipf_h(const rdx_zipf *z, double x) {
  double lx = log(x);
  return helper2((1 - z->s) * lx) * lx;
}
static double zipf_h_inv(const rdx_zipf *z, double x) {
  double t = x * (1 - z->s);
  if (t < -1) t = -1; /* numerical guard */
  return exp(helper1(t) * x);
}

void rdx_zipf_init(rdx_zipf *z, uint64_t n, double s) {
  z->n = n;
  z->s = s;
  z->h_x1 = zipf_h(z, 1.5) - 1.0;
  z->h_n = zipf_h(z, (double)n + 0.5);
  z->s_const = 2.0 - zipf_h_inv(z, zipf_h(z, 2.5) - exp(-s * log(2.0)));
}

uint64_t rdx_zipf_draw(const rdx_zipf *z, rdx_rng *r) {
  if (z->s == 0.0) return 1 + rdx_rng_below(r, z->n);
  for (;;) {
    double u = z->h_n + rdx_rng_double(r) * (z->h_x1 - z->h_n);
    double x = zipf_h_inv(z, u);
    double kd = floor(x + 0.5);
    if (kd < 1) kd = 1;
    if (kd > (double)z->n) kd = (double)z->n;
    uint64_t k = (uint64_t)kd;
    if (kd - x <= z->s_const || u >= zipf_h(z, kd + 0.5) - exp(-z->s * log(kd))) return k;
  }
}

/* ---- helpers ---- */

static void radix_sort_u64(uint64_t *a, uint64_t *tmp, int64_t n, int64_t *cnt /* 65537 */) {
  for (int shift = 0; shift < 64; shift += 16) {
    memset(cnt, 0, 65537 * sizeof *cnt);
    for (int64_t i = 0; i < n; i++) cnt[((a[i] >> shift) & 0xFFFF) + 1]++;
    if (cnt[1 + ((a[0] >> shift) & 0xFFFF)] == n) continue; /* constant digit */
    for (int d = 0; d < 65536; d++) cnt[d + 1] += cnt[d];
    for (int64_t i = 0; i < n; i++) tmp[cnt[(a[i] >> shift) & 0xFFFF]++] = a[i];
    memcpy(a, tmp, (size_t)n * 8);
  }
}

static void shuffle_u64(uint64_t *a, int64_t n, rdx_rng *r) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)rdx_rng_below(r, (uint64_t)i + 1);
    uint64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* k distinct values uniform in [lo, hi] into out (sorted); needs hi - lo + 1 >= k. */
static int sample_distinct(uint64_t *out, uint64_t *tmp, int64_t k, uint64_t lo, uint64_t hi, rdx_rng *r) {
  uint64_t span = hi - lo + 1; /* 0 means 2^64 */
  if (span != 0 && span < (uint64_t)k) return 0;
  if (span != 0 && span <= (uint64_t)k * 2) {
    /* dense enough: choose which ones to keep by a partial shuffle of a selection bitmap */
    int64_t have = 0;
    for (uint64_t v = 0; v < span && have < k; v++) {
      /* selection sampling (Knuth's algorithm S) */
      if (rdx_rng_below(r, span - v) < (uint64_t)(k - have)) out[have++] = lo + v;
    }
    return 1;
  }
  int64_t have = 0, *cnt = (int64_t *)malloc(65537 * sizeof *cnt);
  if (cnt == NULL) return 0;
  while (have < k) {
    for (int64_t i = have; i < k; i++) out[i] = lo + rdx_rng_below(r, span);
    radix_sort_u64(out, tmp, k, cnt);
    int64_t w = 0;
    for (int64_t i = 0; i < k; i++)
      if (w == 0 || out[i] != out[w - 1]) out[w++] = out[i];
    have = w;
  }
  free(cnt);
  return 1;
}

static rdx_status alloc_host(rdx_context *ctx, const char *what, rdx_array *out, int64_t count,
                             int columns, rdx_dtype dtype) {
  size_t bytes = (size_t)count * (size_t)columns * rdx_dtype_size(dtype);
  memset(out, 0, sizeof *out);
  out->data = malloc(bytes ? bytes : 1);
  if (out->data == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %zu bytes", what, bytes);
  out->count = count;
  out->columns = columns;
  out->dtype = dtype;
  out->where = RDX_HOST;
  return RDX_OK;
}

static inline uint64_t get(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}
static inline void put(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

rdx_status rdx_gen_keys(rdx_context *ctx, int64_t n, rdx_dtype dtype, rdx_key_dist dist,
                        double uniformity, uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_keys";
  memset(out, 0, sizeof *out);
  if (dtype != RDX_U32 && dtype != RDX_U64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: dtype must be u32 or u64", fn);
  uint64_t maxv = dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  if (n < 0 || (dtype == RDX_U32 && (uint64_t)n > (uint64_t)UINT32_MAX + 1))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: n %lld does not fit the key width", fn, (long long)n);
  if (dist == RDX_DIST_UNIFORM) uniformity = 1.0;
  else if (dist == RDX_DIST_DENSE) uniformity = 0.0;
  else if (dist != RDX_DIST_SPARSE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown distribution %d", fn, (int)dist);
  if (!(uniformity >= 0.0 && uniformity <= 1.0))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: uniformity %g is not in [0, 1]", fn, uniformity);
  rdx_rng r;
  rdx_rng_seed(&r, seed);
  int64_t n_sparse = (int64_t)llround(uniformity * (double)n);
  int64_t d = n - n_sparse;
  uint64_t *all = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
  uint64_t *tmp = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
  if (all == NULL || tmp == NULL) {
    free(all);
    free(tmp);
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %lld keys", fn, (long long)n);
  }
  for (int64_t i = 0; i < d; i++) all[i] = (uint64_t)i;
  if (n_sparse > 0 && !sample_distinct(all + d, tmp, n_sparse, (uint64_t)d, maxv, &r)) {
    free(all);
    free(tmp);
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: cannot draw %lld distinct keys", fn, (long long)n_sparse);
  }
  shuffle_u64(all, n, &r);
  free(tmp);
  rdx_status st = alloc_host(ctx, fn, out, n, 1, dtype);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) put(*out, i, all[i]);
  free(all);
  return st;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int contains(const uint64_t *sorted, int64_t n, uint64_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && sorted[lo] == v;
}

rdx_status rdx_gen_lookups(rdx_context *ctx, rdx_array keys, int64_t m, double hit_ratio,
                           rdx_miss_kind miss, double zipf, uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_lookups";
  memset(out, 0, sizeof *out);
  if (keys.dtype != RDX_U32 && keys.dtype != RDX_U64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be u32 or u64", fn);
  if (m < 0) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: m %lld is negative", fn, (long long)m);
  if (!(hit_ratio >= 0 && hit_ratio <= 1))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: hit ratio %g is not in [0, 1]", fn, hit_ratio);
  if (!(zipf >= 0 && zipf <= 100))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: zipf %g is not in [0, 100]", fn, zipf);
  if (keys.count == 0 && hit_ratio > 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: hits need a non-empty key set", fn);
  uint64_t maxv = keys.dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t n = keys.count;
  uint64_t *sorted = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
  if (sorted == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %lld keys", fn, (long long)n);
  for (int64_t i = 0; i < n; i++) sorted[i] = get(keys, i);
  {
    uint64_t *tmp = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
    int64_t *cnt = (int64_t *)malloc(65537 * sizeof *cnt);
    if (tmp && cnt && n > 0) radix_sort_u64(sorted, tmp, n, cnt);
    else qsort(sorted, (size_t)n, 8, cmp_u64);
    free(tmp);
    free(cnt);
  }
  uint64_t kmin = n ? sorted[0] : 0, kmax = n ? sorted[n - 1] : 0;
  /* distinct values between kmin and kmax that are absent */
  uint64_t distinct = 0;
  for (int64_t i = 0; i < n; i++) distinct += i == 0 || sorted[i] != sorted[i - 1];
  int inside_possible = n > 0 && (kmax - kmin + 1 > distinct || (kmax - kmin == UINT64_MAX));
  int outside_possible = n == 0 || kmax < maxv || kmin > 0;
  rdx_status st = alloc_host(ctx, fn, out, m, 1, keys.dtype);
  if (st != RDX_OK) {
    free(sorted);
    return st;
  }
  rdx_rng r;
  rdx_rng_seed(&r, seed);
  rdx_zipf z;
  if (n > 0) rdx_zipf_init(&z, (uint64_t)n, zipf);
  for (int64_t i = 0; i < m; i++) {
    uint64_t v;
    if (n > 0 && rdx_rng_double(&r) < hit_ratio) {
      v = get(keys, (int64_t)rdx_zipf_draw(&z, &r) - 1);
    } else if ((miss == RDX_MISS_INSIDE && inside_possible) || !outside_possible) {
      if (!inside_possible) { /* every value of the width is a key: no miss exists */
        free(sorted);
        rdx_npy_free(out);
        return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the key set covers every value; no miss exists", fn);
      }
      do v = kmin + rdx_rng_below(&r, kmax - kmin + 1);
      while (contains(sorted, n, v));
    } else {
      if (n == 0) v = rdx_rng_below(&r, maxv == UINT64_MAX ? 0 : maxv + 1);
      else if (kmax < maxv && (kmin == 0 || (rdx_rng_next(&r) & 1)))
        v = kmax + 1 + rdx_rng_below(&r, maxv - kmax == UINT64_MAX ? 0 : maxv - kmax);
      else
        v = rdx_rng_below(&r, kmin);
    }
    put(*out, i, v);
  }
  free(sorted);
  return RDX_OK;
}

rdx_status rdx_gen_ranges(rdx_context *ctx, rdx_array keys, int64_t m, uint64_t width,
                          uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_ranges";
  memset(out, 0, sizeof *out);
  if (keys.dtype != RDX_U32 && keys.dtype != RDX_U64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be u32 or u64", fn);
  if (m < 0 || width == 0 || keys.count == 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: need m >= 0, width >= 1 and keys (m %lld, width %llu, keys %lld)",
                    fn, (long long)m, (unsigned long long)width, (long long)keys.count);
  uint64_t maxv = keys.dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  RDX_CHECK(alloc_host(ctx, fn, out, m, 2, keys.dtype));
  rdx_rng r;
  rdx_rng_seed(&r, seed);
  for (int64_t i = 0; i < m; i++) {
    uint64_t lo = get(keys, (int64_t)rdx_rng_below(&r, (uint64_t)keys.count));
    uint64_t hi = maxv - lo < width - 1 ? maxv : lo + width - 1;
    put(*out, 2 * i, lo);
    put(*out, 2 * i + 1, hi);
  }
  return RDX_OK;
}
