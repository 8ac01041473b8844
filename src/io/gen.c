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

/* ---- lookups ----
 *
 * Misses inside the key range are drawn from the gaps between consecutive distinct keys: the
 * keys are copied and sorted once (a parallel LSD radix sort), each gap of g > 0 absent values
 * gets its first value and the exclusive prefix sum of the gap sizes, and a draw u uniform over
 * all absent values is mapped back to its gap by a guide table on the top bits of the random
 * word plus a short binary search. So every absent value between min(keys) and max(keys) is
 * equally likely (as with the rejection sampling this replaced, which binary-searched the sorted
 * keys once per candidate on one thread and took minutes at 2^27 lookups), and a draw costs
 * O(1) expected memory reads. The lookups are made in chunks of LOOKUP_CHUNK on the thread pool,
 * each chunk with its own generator seeded from (seed, chunk), so a batch depends on the seed
 * only, not on the thread count. */

#define LOOKUP_CHUNK ((int64_t)1 << 16)
#define SORT_CHUNK ((int64_t)1 << 18)

typedef struct key_load {
  rdx_array keys;
  uint64_t *dst;
} key_load;

static void ks_load_task(void *arg, int64_t t, int thread) {
  key_load *k = (key_load *)arg;
  int64_t lo = t * SORT_CHUNK, hi = lo + SORT_CHUNK < k->keys.count ? lo + SORT_CHUNK : k->keys.count;
  (void)thread;
  for (int64_t i = lo; i < hi; i++) k->dst[i] = get(k->keys, i);
}

/* Copy keys into a (n values) and sort them ascending, using b (n values) as the other buffer;
 * returns the buffer holding the result, or NULL on failure (the context says why). */
static uint64_t *sort_keys(rdx_context *ctx, rdx_array keys, uint64_t *a, uint64_t *b) {
  key_load k = {keys, a};
  if (rdx_parallel_for(ctx, (keys.count + SORT_CHUNK - 1) / SORT_CHUNK, ks_load_task, &k) != RDX_OK) return NULL;
  if (rdx_radix_sort_u64(ctx, &a, &b, NULL, NULL, keys.count) != RDX_OK) return NULL;
  return a;
}

/* A run of absent values between two consecutive distinct keys; one cache line holds four, so a
 * draw reads the guide table and then (usually) one line of gaps. */
typedef struct gap {
  uint64_t cum;    /* absent values in the gaps before this one */
  uint64_t start;  /* its first absent value */
} gap;

typedef struct lookup_job {
  rdx_array keys, out;
  int64_t m, n;
  double hit_ratio;
  const rdx_zipf *zipf;
  uint64_t seed, kmin, kmax, maxv;
  int inside;                 /* misses from the gaps (else outside, or anything when n == 0) */
  const gap *gaps;            /* n_gaps, ascending */
  int64_t n_gaps;
  uint64_t n_absent;          /* absent values strictly between kmin and kmax, >= 1 when inside */
  const int64_t *guide;       /* 2^guide_bits + 1 gap indices */
  int guide_bits;
} lookup_job;

/* A uniform absent value between kmin and kmax, in two steps so that a batch of draws can
 * overlap its memory reads. draw_inside_u: u = floor(x * n_absent / 2^64) with Lemire's rejection
 * (unbiased, as rdx_rng_below), and the guide bucket b = the top guide_bits of x. Since
 * u >= floor(b * n_absent / 2^bits), the first u of bucket b, the gap of u lies between the
 * gaps of this bucket's first u and the next bucket's: guide[b] .. guide[b + 1]. */
static uint64_t draw_inside_u(const lookup_job *j, rdx_rng *r, uint64_t *bucket) {
  uint64_t total = j->n_absent, x = rdx_rng_next(r);
  unsigned __int128 mm = (unsigned __int128)x * total;
  if ((uint64_t)mm < total) {
    uint64_t t = -total % total;
    while ((uint64_t)mm < t) {
      x = rdx_rng_next(r);
      mm = (unsigned __int128)x * total;
    }
  }
  *bucket = j->guide_bits ? x >> (64 - j->guide_bits) : 0;
  return (uint64_t)(mm >> 64);
}

/* The u-th absent value: the last gap in [lo, hi] whose cum <= u, then the offset in it. */
static uint64_t inside_value(const lookup_job *j, uint64_t u, int64_t lo, int64_t hi) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (j->gaps[mid].cum <= u) lo = mid;
    else hi = mid - 1;
  }
  return j->gaps[lo].start + (u - j->gaps[lo].cum);
}

static uint64_t draw_outside(const lookup_job *j, rdx_rng *r) {
  if (j->n == 0) return rdx_rng_below(r, j->maxv == UINT64_MAX ? 0 : j->maxv + 1);
  if (j->kmax < j->maxv && (j->kmin == 0 || (rdx_rng_next(r) & 1)))
    return j->kmax + 1 + rdx_rng_below(r, j->maxv - j->kmax == UINT64_MAX ? 0 : j->maxv - j->kmax);
  return rdx_rng_below(r, j->kmin);
}

/* Lookups in batches of LOOKUP_BATCH: first every random draw, in order (the generator's
 * sequence does not depend on memory), prefetching the key of each hit and the guide entry of
 * each inside miss; then the guide entries, prefetching their gaps; then the values. The random
 * reads of one batch overlap instead of waiting one after another (2 or 3 cache misses a draw
 * into tables of up to 2^27 gaps). */
#define LOOKUP_BATCH 32
static void lookup_task(void *arg, int64_t t, int thread) {
  const lookup_job *j = (const lookup_job *)arg;
  int64_t first = t * LOOKUP_CHUNK, end = first + LOOKUP_CHUNK < j->m ? first + LOOKUP_CHUNK : j->m;
  uint64_t x = j->seed ^ ((uint64_t)t * 0xD1B54A32D192ED03ull);
  rdx_rng r;
  (void)thread;
  rdx_rng_seed(&r, splitmix64(&x));
  uint64_t u[LOOKUP_BATCH], w[LOOKUP_BATCH];
  int64_t glo[LOOKUP_BATCH], ghi[LOOKUP_BATCH];
  unsigned char kind[LOOKUP_BATCH]; /* 0: w is the value; 1: hit, w the key's position; 2: inside miss, w its bucket */
  size_t es = rdx_dtype_size(j->keys.dtype);
  for (int64_t i0 = first; i0 < end; i0 += LOOKUP_BATCH) {
    int nb = end - i0 < LOOKUP_BATCH ? (int)(end - i0) : LOOKUP_BATCH;
    for (int k = 0; k < nb; k++) {
      if (j->n > 0 && rdx_rng_double(&r) < j->hit_ratio) {
        kind[k] = 1;
        w[k] = rdx_zipf_draw(j->zipf, &r) - 1;
        __builtin_prefetch((const char *)j->keys.data + w[k] * es);
      } else if (j->inside) {
        kind[k] = 2;
        u[k] = draw_inside_u(j, &r, &w[k]);
        __builtin_prefetch(j->guide + w[k]);
      } else {
        kind[k] = 0;
        w[k] = draw_outside(j, &r);
      }
    }
    for (int k = 0; k < nb; k++)
      if (kind[k] == 2) {
        glo[k] = j->guide[w[k]];
        ghi[k] = j->guide[w[k] + 1];
        __builtin_prefetch(j->gaps + glo[k]);
      }
    for (int k = 0; k < nb; k++) {
      uint64_t v = kind[k] == 0 ? w[k] : kind[k] == 1 ? get(j->keys, (int64_t)w[k]) : inside_value(j, u[k], glo[k], ghi[k]);
      put(j->out, i0 + k, v);
    }
  }
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
  if (miss != RDX_MISS_INSIDE && miss != RDX_MISS_OUTSIDE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: miss kind %d is not inside or outside", fn, (int)miss);
  if (!(zipf >= 0 && zipf <= 100))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: zipf %g is not in [0, 100]", fn, zipf);
  if (keys.count == 0 && hit_ratio > 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: hits need a non-empty key set", fn);
  lookup_job j;
  memset(&j, 0, sizeof j);
  j.keys = keys;
  j.m = m;
  j.n = keys.count;
  j.hit_ratio = hit_ratio;
  j.seed = seed;
  j.maxv = keys.dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t n = keys.count;
  int misses = m > 0 && hit_ratio < 1 && n > 0; /* an empty key set: every value is a miss */
  uint64_t *a = NULL, *b = NULL;
  int64_t *guide = NULL;
  gap *gaps = NULL;
  rdx_status st = RDX_OK;
  if (misses) {
    j.kmin = UINT64_MAX;
    for (int64_t i = 0; i < n; i++) {
      uint64_t v = get(keys, i);
      if (v < j.kmin) j.kmin = v;
      if (v > j.kmax) j.kmax = v;
    }
    int outside_possible = j.kmin > 0 || j.kmax < j.maxv;
    j.inside = miss == RDX_MISS_INSIDE || !outside_possible;
  }
  if (j.inside) {
    a = (uint64_t *)malloc((size_t)n * 8);
    b = (uint64_t *)malloc((size_t)n * 8);
    uint64_t *s = a && b ? sort_keys(ctx, keys, a, b) : NULL;
    if (s == NULL) {
      st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: sorting %lld keys", fn, (long long)n);
      goto done;
    }
    uint64_t *cum = s == a ? b : a;
    /* gaps between consecutive distinct keys, compacted into s (start) and cum in place: the
     * write index never passes the read index */
    uint64_t absent = 0;
    int64_t g = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
      uint64_t lo = s[i], hi = s[i + 1];
      if (hi - lo > 1) {
        s[g] = lo + 1;
        cum[g] = absent;
        absent += hi - lo - 1;
        g++;
      }
    }
    if (g == 0) {
      st = j.kmin > 0 || j.kmax < j.maxv
               ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                          "%s: no miss exists inside the key range: every value in [%llu, %llu] is a key (use misses outside)",
                          fn, (unsigned long long)j.kmin, (unsigned long long)j.kmax)
               : rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the key set covers every value; no miss exists", fn);
      goto done;
    }
    {
      gaps = (gap *)malloc((size_t)g * sizeof *gaps);
      if (gaps == NULL) {
        st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %lld gaps between keys", fn, (long long)g);
        goto done;
      }
      for (int64_t i = 0; i < g; i++) gaps[i].cum = cum[i], gaps[i].start = s[i];
      free(a);
      free(b);
      a = b = NULL;
      j.gaps = gaps;
      j.n_gaps = g;
      j.n_absent = absent;
      while (j.guide_bits < 40 && ((int64_t)1 << (j.guide_bits + 1)) <= g) j.guide_bits++;
      int64_t n_buckets = (int64_t)1 << j.guide_bits;
      guide = (int64_t *)malloc((size_t)(n_buckets + 1) * 8);
      if (guide == NULL) {
        st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: guide table of %lld entries", fn, (long long)n_buckets);
        goto done;
      }
      int64_t gi = 0;
      for (int64_t k = 0; k < n_buckets; k++) {
        uint64_t first = (uint64_t)(((unsigned __int128)k * absent) >> j.guide_bits);
        while (gi + 1 < g && gaps[gi + 1].cum <= first) gi++;
        guide[k] = gi;
      }
      guide[n_buckets] = g - 1;
      j.guide = guide;
    }
  }
  st = alloc_host(ctx, fn, out, m, 1, keys.dtype);
  if (st != RDX_OK) goto done;
  rdx_zipf z;
  memset(&z, 0, sizeof z);
  if (n > 0) rdx_zipf_init(&z, (uint64_t)n, zipf);
  j.zipf = &z;
  j.out = *out;
  st = rdx_parallel_for(ctx, (m + LOOKUP_CHUNK - 1) / LOOKUP_CHUNK, lookup_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
done:
  free(gaps);
  free(guide);
  free(a);
  free(b);
  return st;
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
