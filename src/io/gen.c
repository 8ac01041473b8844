/*
 * gen.c: generators of key sets, lookup batches and range batches, as the RX and cgRX papers
 * define them (dense, sparse with a uniformity percentage, uniform; hits and misses inside or
 * outside the key range; Zipf-skewed hits; ranges of a given width), for `raydex gen`, the tests
 * and `raydex bench keys`, at any size that fits in memory (2^32 u32 keys, 2^30 lookups).
 *
 * Invariants: each generator holds its output plus the scratch its rdx_gen_*_bytes reports (none
 * but the lookups' sorted copy of the keys for misses inside), every size is overflow-checked
 * before anything is allocated, and the output depends on the seed only, not on the thread count:
 * a key is a function of its position (a keyed permutation, no sampling and no sort), and
 * lookups and ranges are made in chunks on the thread pool, each from its own generator.
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

void rdx_rng_seed_chunk(rdx_rng *r, uint64_t seed, int64_t chunk) {
  uint64_t x = seed ^ ((uint64_t)chunk * 0xD1B54A32D192ED03ull);
  rdx_rng_seed(r, splitmix64(&x));
}

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

/* ---- sizes and outputs ---- */

rdx_status rdx_gen_out_bytes(rdx_context *ctx, const char *fn, const char *what, int64_t count, int columns,
                             rdx_dtype dtype, size_t *bytes) {
  size_t es = rdx_dtype_size(dtype);
  if (count < 0) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s is negative (%lld)", fn, what, (long long)count);
  /* an output is an rdx_array, so it obeys the arrays' bound as well as size_t's */
  if (!rdx_size_rows(count, columns, es, bytes) || *bytes > RDX_MAX_ARRAY_BYTES)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: %s %lld needs more bytes than an address space holds (%.3g bytes, 2^56 at most)", fn, what,
                    (long long)count, (double)count * columns * (double)es);
  return RDX_OK;
}

rdx_status rdx_gen_alloc(rdx_context *ctx, const char *fn, const char *what, int64_t count, int columns,
                         rdx_dtype dtype, rdx_array *out) {
  size_t bytes = 0;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_gen_out_bytes(ctx, fn, what, count, columns, dtype, &bytes));
  void *p = malloc(bytes ? bytes : 1);
  if (p == NULL)
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: cannot allocate the output (%zu bytes)", fn, bytes);
  *out = rdx_host_matrix(p, count, columns, dtype);
  return RDX_OK;
}

static inline uint64_t load(const void *p, size_t es, int64_t i) {
  return es == 4 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}
static inline void store(void *p, size_t es, int64_t i, uint64_t v) {
  if (es == 4) ((uint32_t *)p)[i] = (uint32_t)v;
  else ((uint64_t *)p)[i] = v;
}
/* Keys are u32 or u64 (checked on entry), so the element size is inline, not a call. */
static inline size_t key_size(rdx_dtype dtype) { return dtype == RDX_U32 ? 4 : 8; }
static inline uint64_t get(rdx_array a, int64_t i) { return load(a.data, key_size(a.dtype), i); }
static inline void put(rdx_array a, int64_t i, uint64_t v) { store(a.data, key_size(a.dtype), i, v); }

/* The key generators' shared checks: keys are u32 or u64. */
static rdx_status check_key_dtype(rdx_context *ctx, const char *fn, const char *what, rdx_dtype dtype) {
  if (dtype != RDX_U32 && dtype != RDX_U64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s must be u32 or u64 (dtype 0x%x)", fn, what, (unsigned)dtype);
  return RDX_OK;
}

/* ---- the keyed permutation ----
 *
 * A round splits the k-bit value into its low `lo_bits` and high k - lo_bits, xors a hash of the
 * low part into the high part, and swaps the parts (the new low part is the old high one), so the
 * widths alternate between floor(k/2) and ceil(k/2) and every round is invertible. The round
 * function is splitmix64's finalizer of the half and the round key (Steele, Lea and Flood 2014),
 * whose low bits depend on all 64. */

static inline uint64_t perm_mix(uint64_t half, uint64_t key) {
  uint64_t z = key ^ half;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void rdx_perm_init(rdx_perm *p, uint64_t last, uint64_t seed) {
  p->last = last;
  p->bits = last ? 64 - __builtin_clzll(last) : 0;
  p->rounds = p->bits <= 8 ? RDX_PERM_ROUNDS : 6; /* see io.h */
  for (int r = 0; r < RDX_PERM_ROUNDS; r++) p->keys[r] = splitmix64(&seed);
}

/* One round on k = lo_bits + hi_bits bits; the next round swaps the widths. */
static inline uint64_t feistel_round(uint64_t x, int lo_bits, int hi_bits, uint64_t key) {
  uint64_t lo = x & ((1ull << lo_bits) - 1), hi = x >> lo_bits; /* both widths <= 32 */
  hi ^= perm_mix(lo, key) & ((1ull << hi_bits) - 1);
  return (lo << hi_bits) | hi;
}

uint64_t rdx_perm_at(const rdx_perm *p, uint64_t x) {
  do {
    for (int r = 0, lo_bits = p->bits / 2; r < p->rounds; r++, lo_bits = p->bits - lo_bits)
      x = feistel_round(x, lo_bits, p->bits - lo_bits, p->keys[r]);
  } while (x > p->last);
  return x;
}

/* rdx_perm_at of x[0 .. k-1] in place. The rounds run across the lanes, so that their
 * multiplications, independent of one another, overlap instead of each waiting for the last
 * (a value's rounds form one chain of dependent multiplications); the values that must walk
 * finish one by one. */
#define PERM_LANES 16
static void perm_lanes(const rdx_perm *p, uint64_t *x, int k) {
  for (int r = 0, lo_bits = p->bits / 2; r < p->rounds; r++, lo_bits = p->bits - lo_bits)
    for (int l = 0; l < k; l++) x[l] = feistel_round(x[l], lo_bits, p->bits - lo_bits, p->keys[r]);
  for (int l = 0; l < k; l++)
    if (x[l] > p->last) x[l] = rdx_perm_at(p, x[l]);
}

/* ---- keys ----
 *
 * Position i holds f(pi(i)): pi a keyed permutation of [0, n) (the order) and f an injective
 * map of [0, n) into the distribution's keys: with d = (1 - u) n dense keys, f(j) = j for j < d
 * (0 .. d-1) and f(j) = d + g(j - d) otherwise, g a keyed permutation of [0, 2^w - 1 - d], so the
 * u n sparse keys are a pseudo-random subset of [d, 2^w - 1]. Dense is d = n; uniform is d = 0,
 * where pi is left out: g alone already puts the keys in pseudo-random order. The keys are
 * distinct because pi and g are bijections, and each is computed alone, in parallel. */

#define KEY_CHUNK ((int64_t)1 << 16)

typedef struct key_job {
  rdx_array out;
  int64_t d;    /* dense keys 0 .. d-1; 0 <= d <= n */
  rdx_perm pi;  /* positions to ranks, a permutation of [0, n); used when d > 0 */
  rdx_perm g;   /* sparse ranks to keys above d, a permutation of [0, 2^w - 1 - d]; used when d < n */
} key_job;

static void key_task(void *arg, int64_t t, int thread) {
  const key_job *j = (const key_job *)arg;
  int64_t first = t * KEY_CHUNK, end = first + KEY_CHUNK < j->out.count ? first + KEY_CHUNK : j->out.count;
  uint64_t d = (uint64_t)j->d, rank[PERM_LANES], sparse[PERM_LANES];
  (void)thread;
  for (int64_t i0 = first; i0 < end; i0 += PERM_LANES) {
    int k = end - i0 < PERM_LANES ? (int)(end - i0) : PERM_LANES, n_sparse = 0;
    for (int l = 0; l < k; l++) rank[l] = (uint64_t)(i0 + l);
    if (d > 0) perm_lanes(&j->pi, rank, k);
    for (int l = 0; l < k; l++)
      if (rank[l] >= d) sparse[n_sparse++] = rank[l] - d;
    perm_lanes(&j->g, sparse, n_sparse);
    for (int l = 0, s = 0; l < k; l++) put(j->out, i0 + l, rank[l] < d ? rank[l] : d + sparse[s++]);
  }
}

rdx_status rdx_gen_keys_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes) {
  static const char fn[] = "rdx_gen_keys";
  RDX_CHECK(check_key_dtype(ctx, fn, "keys", dtype));
  if (dtype == RDX_U32 && n > (int64_t)UINT32_MAX + 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: n is more than there are distinct u32 keys (%lld > 2^32)", fn,
                    (long long)n);
  return rdx_gen_out_bytes(ctx, fn, "n", n, 1, dtype, bytes);
}

rdx_status rdx_gen_keys(rdx_context *ctx, int64_t n, rdx_dtype dtype, rdx_key_dist dist,
                        double uniformity, uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_keys";
  size_t bytes;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_gen_keys_bytes(ctx, n, dtype, &bytes));
  if (dist == RDX_DIST_UNIFORM) uniformity = 1.0;
  else if (dist == RDX_DIST_DENSE) uniformity = 0.0;
  else if (dist != RDX_DIST_SPARSE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown distribution (%d)", fn, (int)dist);
  if (!(uniformity >= 0.0 && uniformity <= 1.0))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: uniformity is not in [0, 1] (%g)", fn, uniformity);
  uint64_t maxv = dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  key_job j;
  memset(&j, 0, sizeof j);
  /* u n rounded, within [0, n] also where the double product rounds past n (n near 2^63) */
  double n_sparse = uniformity * (double)n;
  j.d = n_sparse >= (double)n ? 0 : n - (int64_t)llround(n_sparse);
  rdx_rng r;
  rdx_rng_seed(&r, seed);
  uint64_t pi_seed = rdx_rng_next(&r), g_seed = rdx_rng_next(&r);
  if (j.d > 0) rdx_perm_init(&j.pi, (uint64_t)n - 1, pi_seed);
  if (j.d < n) rdx_perm_init(&j.g, maxv - (uint64_t)j.d, g_seed); /* n <= 2^w, so n - d sparse ranks fit */
  RDX_CHECK(rdx_gen_alloc(ctx, fn, "n", n, 1, dtype, out));
  j.out = *out;
  rdx_status st = rdx_parallel_for(ctx, (n + KEY_CHUNK - 1) / KEY_CHUNK, key_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
  return st;
}

/* ---- lookups ----
 *
 * Hits pick a key by Zipf over key positions and misses outside the key range are drawn
 * directly; neither needs scratch. Misses inside the key range are uniform over the absent values
 * between min(keys) and max(keys), drawn from a sorted, deduplicated copy s[0 .. n'-1] of the
 * keys, the only scratch (the keys' size, sorted in place): A(i) = s[i] - s[0] - i values are
 * absent below s[i], A is non-decreasing, and the u-th absent value (u < A(n'-1)) is
 * s[i] + 1 + u - A(i) for the last i with A(i) <= u. A guide table on the top bits of the random
 * word (about n'/64 entries) narrows that search to a few cache lines. So every absent value is
 * equally likely and a draw costs O(1) expected memory reads. The lookups are made in chunks of
 * LOOKUP_CHUNK on the thread pool, each chunk with its own generator (rdx_rng_seed_chunk). */

#define LOOKUP_CHUNK ((int64_t)1 << 16)
#define GUIDE_SPAN 64  /* sorted keys per guide entry, about */

/* Guide table bits for n' sorted keys: the largest b with 2^b <= max(1, n' / GUIDE_SPAN). */
static int guide_bits(int64_t n) {
  int b = 0;
  while (b < 62 && ((int64_t)1 << (b + 1)) <= n / GUIDE_SPAN) b++;
  return b;
}

/* Sort n values of es bytes ascending in place on the digit at bits shift .. shift+7 and below:
 * an MSD radix sort, American flag sort (McIlroy, Bostic and McIlroy 1993): count the digit,
 * move every value into its bucket by cycles of swaps, recurse into each bucket on the next
 * lower digit; no second buffer. The bits above the digit must be equal across the n values.
 * flag_partition does one digit and leaves bucket b at [end[b] - count[b], end[b]). */
static void flag_partition(char *a, size_t es, int64_t n, int shift, int64_t count[256], int64_t end[256]) {
  int64_t next[256], at = 0;
  memset(count, 0, 256 * sizeof *count);
  for (int64_t i = 0; i < n; i++) count[(load(a, es, i) >> shift) & 255]++;
  for (int b = 0; b < 256; b++) next[b] = at, at += count[b], end[b] = at;
  for (int b = 0; b < 256; b++)
    while (next[b] < end[b]) {
      uint64_t v = load(a, es, next[b]);
      for (int dv; (dv = (int)((v >> shift) & 255)) != b;) {
        uint64_t t = load(a, es, next[dv]);
        store(a, es, next[dv]++, v);
        v = t;
      }
      store(a, es, next[b]++, v);
    }
}

/* The digit below `shift`; the lowest digit may overlap bits already sorted on, which are equal
 * within a bucket. */
static int lower_digit(int shift) { return shift >= 8 ? shift - 8 : 0; }

static void flag_sort(char *a, size_t es, int64_t n, int shift) {
  if (n < 64) {
    for (int64_t i = 1; i < n; i++) {
      uint64_t v = load(a, es, i);
      int64_t k = i;
      for (; k > 0 && load(a, es, k - 1) > v; k--) store(a, es, k, load(a, es, k - 1));
      store(a, es, k, v);
    }
    return;
  }
  int64_t count[256], end[256];
  flag_partition(a, es, n, shift, count, end);
  if (shift == 0) return;
  for (int b = 0; b < 256; b++)
    if (count[b] > 1) flag_sort(a + (size_t)(end[b] - count[b]) * es, es, count[b], lower_digit(shift));
}

/* The top digit on one thread, its 256 buckets on the pool. */
typedef struct sort_job {
  char *a;
  size_t es;
  int shift;
  int64_t count[256], end[256];
} sort_job;

static void sort_task(void *arg, int64_t b, int thread) {
  const sort_job *j = (const sort_job *)arg;
  (void)thread;
  if (j->count[b] > 1) flag_sort(j->a + (size_t)(j->end[b] - j->count[b]) * j->es, j->es, j->count[b], lower_digit(j->shift));
}

/* Sort n values in [lo, hi] in place; the top digit is the one holding the highest bit in which
 * lo and hi differ, since the bits above it are equal in every value. */
static rdx_status sort_values(rdx_context *ctx, void *a, size_t es, int64_t n, uint64_t lo, uint64_t hi) {
  sort_job j;
  int bits = lo == hi ? 0 : 64 - __builtin_clzll(lo ^ hi);
  j.a = (char *)a;
  j.es = es;
  j.shift = bits > 8 ? bits - 8 : 0;
  if (n < 64 || j.shift == 0) {
    flag_sort(j.a, es, n, j.shift);
    return RDX_OK;
  }
  flag_partition(j.a, es, n, j.shift, j.count, j.end);
  return rdx_parallel_for(ctx, 256, sort_task, &j);
}

typedef struct lookup_job {
  rdx_array keys, out;
  int64_t m, n;
  double hit_ratio;
  const rdx_zipf *zipf;
  uint64_t seed, kmin, kmax, maxv;
  int inside;                 /* misses from the gaps (else outside, or anything when n == 0) */
  const void *sorted;         /* n_sorted distinct keys ascending, of the keys' dtype */
  int64_t n_sorted;           /* >= 2 when inside */
  uint64_t n_absent;          /* absent values strictly between kmin and kmax, >= 1 when inside */
  const int64_t *guide;       /* 2^guide_bits + 1 indices into sorted */
  int guide_bits;
} lookup_job;

/* A(i): the absent values between sorted[0] and sorted[i]. */
static inline uint64_t absent_below(const lookup_job *j, int64_t i) {
  return load(j->sorted, key_size(j->keys.dtype), i) - j->kmin - (uint64_t)i;
}

/* A uniform absent value between kmin and kmax, in two steps so that a batch of draws can
 * overlap its memory reads. draw_inside_u: u = floor(x * n_absent / 2^64) with Lemire's rejection
 * (unbiased, as rdx_rng_below), and the guide bucket b = the top guide_bits of x. Since
 * u >= floor(b * n_absent / 2^bits), the first u of bucket b, and u <= the first u of bucket
 * b + 1, the i of u lies between guide[b] and guide[b + 1]. */
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

/* The u-th absent value: the last i in [lo, hi] with A(i) <= u, then the offset past sorted[i]. */
static uint64_t inside_value(const lookup_job *j, uint64_t u, int64_t lo, int64_t hi) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (absent_below(j, mid) <= u) lo = mid;
    else hi = mid - 1;
  }
  return load(j->sorted, key_size(j->keys.dtype), lo) + 1 + (u - absent_below(j, lo));
}

static uint64_t draw_outside(const lookup_job *j, rdx_rng *r) {
  if (j->n == 0) return rdx_rng_below(r, j->maxv == UINT64_MAX ? 0 : j->maxv + 1);
  if (j->kmax < j->maxv && (j->kmin == 0 || (rdx_rng_next(r) & 1)))
    return j->kmax + 1 + rdx_rng_below(r, j->maxv - j->kmax == UINT64_MAX ? 0 : j->maxv - j->kmax);
  return rdx_rng_below(r, j->kmin);
}

/* Lookups in batches of LOOKUP_BATCH: first every random draw, in order (the generator's
 * sequence does not depend on memory), prefetching the key of each hit and the guide entry of
 * each inside miss; then the guide entries, prefetching their stretch of sorted keys; then the
 * values. The random reads of one batch overlap instead of waiting one after another. */
#define LOOKUP_BATCH 32
static void lookup_task(void *arg, int64_t t, int thread) {
  const lookup_job *j = (const lookup_job *)arg;
  int64_t first = t * LOOKUP_CHUNK, end = first + LOOKUP_CHUNK < j->m ? first + LOOKUP_CHUNK : j->m;
  rdx_rng r;
  (void)thread;
  rdx_rng_seed_chunk(&r, j->seed, t);
  uint64_t u[LOOKUP_BATCH], w[LOOKUP_BATCH];
  int64_t glo[LOOKUP_BATCH], ghi[LOOKUP_BATCH];
  unsigned char kind[LOOKUP_BATCH]; /* 0: w is the value; 1: hit, w the key's position; 2: inside miss, w its bucket */
  size_t es = key_size(j->keys.dtype);
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
        __builtin_prefetch((const char *)j->sorted + (size_t)glo[k] * es);
      }
    for (int k = 0; k < nb; k++) {
      uint64_t v = kind[k] == 0 ? w[k] : kind[k] == 1 ? get(j->keys, (int64_t)w[k]) : inside_value(j, u[k], glo[k], ghi[k]);
      put(j->out, i0 + k, v);
    }
  }
}

/* Whether a request may draw a miss from a non-empty key set, the case that may need the sorted
 * copy: misses outside fall back to inside ones when the keys reach both ends of the width. */
static int may_miss(int64_t n_keys, int64_t m, double hit_ratio) { return n_keys > 0 && m > 0 && hit_ratio < 1; }

rdx_status rdx_gen_lookups_bytes(rdx_context *ctx, int64_t n_keys, rdx_dtype dtype, int64_t m, double hit_ratio,
                                 rdx_miss_kind miss, size_t *bytes) {
  static const char fn[] = "rdx_gen_lookups";
  size_t sorted, guide;
  RDX_CHECK(check_key_dtype(ctx, fn, "keys", dtype));
  if (!(hit_ratio >= 0 && hit_ratio <= 1))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: hit ratio is not in [0, 1] (%g)", fn, hit_ratio);
  if (miss != RDX_MISS_INSIDE && miss != RDX_MISS_OUTSIDE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: miss kind is not inside or outside (%d)", fn, (int)miss);
  RDX_CHECK(rdx_gen_out_bytes(ctx, fn, "keys.count", n_keys, 1, dtype, &sorted));
  RDX_CHECK(rdx_gen_out_bytes(ctx, fn, "m", m, 1, dtype, bytes));
  if (!may_miss(n_keys, m, hit_ratio)) return RDX_OK;
  /* the sorted copy is no larger than the keys, which are a valid array: the sum fits */
  guide = (((size_t)1 << guide_bits(n_keys)) + 1) * sizeof(int64_t);
  *bytes += sorted + guide;
  return RDX_OK;
}

rdx_status rdx_gen_lookups(rdx_context *ctx, rdx_array keys, int64_t m, double hit_ratio,
                           rdx_miss_kind miss, double zipf, uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_lookups";
  size_t bytes;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if (keys.where == RDX_DEVICE || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be a 1-column host array (columns %d)", fn,
                    (int)keys.columns);
  RDX_CHECK(rdx_gen_lookups_bytes(ctx, keys.count, keys.dtype, m, hit_ratio, miss, &bytes));
  if (!(zipf >= 0 && zipf <= 100))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: zipf is not in [0, 100] (%g)", fn, zipf);
  if (keys.count == 0 && hit_ratio > 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: hits need a non-empty key set (hit ratio %g)", fn, hit_ratio);
  lookup_job j;
  memset(&j, 0, sizeof j);
  j.keys = keys;
  j.m = m;
  j.n = keys.count;
  j.hit_ratio = hit_ratio;
  j.seed = seed;
  j.maxv = keys.dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t n = keys.count;
  size_t es = rdx_dtype_size(keys.dtype);
  void *sorted = NULL;
  int64_t *guide = NULL;
  rdx_status st = RDX_OK;
  if (may_miss(n, m, hit_ratio)) {
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
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_gen_lookups: sorted copy of the keys", &sorted, (size_t)n * es, RDX_HOST),
                   st, done);
    memcpy(sorted, keys.data, (size_t)n * es);
    RDX_CHECK_GOTO(sort_values(ctx, sorted, es, n, j.kmin, j.kmax), st, done);
    int64_t w = 1;
    for (int64_t i = 1; i < n; i++) {
      uint64_t v = load(sorted, es, i);
      if (v != load(sorted, es, w - 1)) store(sorted, es, w++, v);
    }
    j.sorted = sorted;
    j.n_sorted = w;
    j.n_absent = j.kmax - j.kmin - (uint64_t)(w - 1);
    if (j.n_absent == 0) {
      st = j.kmin > 0 || j.kmax < j.maxv
               ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                          "%s: no miss exists inside the key range: every value in [%llu, %llu] is a key (use misses outside)",
                          fn, (unsigned long long)j.kmin, (unsigned long long)j.kmax)
               : rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the key set covers every value; no miss exists", fn);
      goto done;
    }
    j.guide_bits = guide_bits(w);
    int64_t n_buckets = (int64_t)1 << j.guide_bits;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_gen_lookups: guide table", (void **)&guide,
                                 (size_t)(n_buckets + 1) * sizeof *guide, RDX_HOST),
                   st, done);
    /* guide[b]: the last i with A(i) <= the first u of bucket b; n_absent >= 1 means w >= 2 */
    int64_t i = 0;
    for (int64_t b = 0; b < n_buckets; b++) {
      uint64_t first = (uint64_t)(((unsigned __int128)b * j.n_absent) >> j.guide_bits);
      while (i + 1 <= w - 2 && absent_below(&j, i + 1) <= first) i++;
      guide[b] = i;
    }
    guide[n_buckets] = w - 2;
    j.guide = guide;
  }
  RDX_CHECK_GOTO(rdx_gen_alloc(ctx, fn, "m", m, 1, keys.dtype, out), st, done);
  rdx_zipf z;
  memset(&z, 0, sizeof z);
  if (n > 0) rdx_zipf_init(&z, (uint64_t)n, zipf);
  j.zipf = &z;
  j.out = *out;
  st = rdx_parallel_for(ctx, (m + LOOKUP_CHUNK - 1) / LOOKUP_CHUNK, lookup_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
done:
  rdx_mem_free(ctx, guide);
  rdx_mem_free(ctx, sorted);
  return st;
}

/* ---- ranges ---- */

typedef struct range_job {
  rdx_array keys, out;
  uint64_t width, maxv, seed;
} range_job;

static void range_task(void *arg, int64_t t, int thread) {
  const range_job *j = (const range_job *)arg;
  int64_t first = t * LOOKUP_CHUNK, end = first + LOOKUP_CHUNK < j->out.count ? first + LOOKUP_CHUNK : j->out.count;
  rdx_rng r;
  (void)thread;
  rdx_rng_seed_chunk(&r, j->seed, t);
  for (int64_t i = first; i < end; i++) {
    uint64_t lo = get(j->keys, (int64_t)rdx_rng_below(&r, (uint64_t)j->keys.count));
    put(j->out, 2 * i, lo);
    put(j->out, 2 * i + 1, j->maxv - lo < j->width - 1 ? j->maxv : lo + j->width - 1);
  }
}

rdx_status rdx_gen_ranges_bytes(rdx_context *ctx, rdx_dtype dtype, int64_t m, size_t *bytes) {
  static const char fn[] = "rdx_gen_ranges";
  RDX_CHECK(check_key_dtype(ctx, fn, "keys", dtype));
  return rdx_gen_out_bytes(ctx, fn, "m", m, 2, dtype, bytes);
}

rdx_status rdx_gen_ranges(rdx_context *ctx, rdx_array keys, int64_t m, uint64_t width,
                          uint64_t seed, rdx_array *out) {
  static const char fn[] = "rdx_gen_ranges";
  size_t bytes;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if (keys.where == RDX_DEVICE || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be a 1-column host array (columns %d)", fn,
                    (int)keys.columns);
  RDX_CHECK(rdx_gen_ranges_bytes(ctx, keys.dtype, m, &bytes));
  if (width == 0) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: width must be at least 1 (0)", fn);
  if (keys.count == 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ranges start at keys, but the key set is empty (m %lld)", fn,
                    (long long)m);
  RDX_CHECK(rdx_gen_alloc(ctx, fn, "m", m, 2, keys.dtype, out));
  range_job j = {.keys = keys, .out = *out, .width = width, .maxv = keys.dtype == RDX_U32 ? UINT32_MAX : UINT64_MAX,
                 .seed = seed};
  rdx_status st = rdx_parallel_for(ctx, (m + LOOKUP_CHUNK - 1) / LOOKUP_CHUNK, range_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
  return st;
}
