/*
 * rt_keysets.h: adversarial key sets and query batches for the ray-tracing key indexes (rx, cgrx),
 * built around the geometry of their key mappings:
 *   RX 3D mode     x = bits 0..21, y = bits 22..43, z = bits 44..63 (rows of 2^22, planes of 2^44)
 *   cgRX default   x = bits 0..22, y = bits 23..45, z = bits 46..63 (rows of 2^23, planes of 2^46)
 *   cgRX scaled    the same bits, y and z spread by 2^15 and 2^25 in space
 * Keys sit on and next to every row and plane boundary, one per row, at the last slot of a row,
 * with huge gaps, on one plane and many, at 0 and at the maximum; queries hit every key's
 * neighbourhood (misses below, above, in gaps, on boundaries); ranges start and end there.
 */
#ifndef RDX_RT_KEYSETS_H
#define RDX_RT_KEYSETS_H

#include "keys_check.h"

typedef struct ks_data {
  rdx_array keys, rows, queries, bounds;
  uint64_t *kbuf, *rbuf, *qbuf, *bbuf; /* u64 staging; converted to the dtype in place */
} ks_data;

static void ks_free(ks_data *d) {
  free(d->kbuf);
  free(d->rbuf);
  free(d->qbuf);
  free(d->bbuf);
  memset(d, 0, sizeof *d);
}

static uint64_t ks_rand_below(uint64_t n) { return n ? check_rand_() % n : check_rand_(); }

/* boundary bits of the three mappings: rows (22, 23) and planes (44, 46) */
static const int ks_bounds_bits[] = {22, 23, 44, 45, 46};

typedef enum ks_gen {
  KS_DENSE,           /* 0 .. n-1 (one plane, few rows) */
  KS_UNIFORM,         /* uniform over the width */
  KS_BOUNDARIES,      /* m * 2^b + delta, delta in -2..2, for every boundary b */
  KS_ONE_PER_ROW,     /* one key per row, random x (both row widths) */
  KS_ROW_ENDS,        /* keys at the first and the last slot of rows (x = 0, x = x_max) */
  KS_HUGE_GAPS,       /* a few clusters far apart, 0 and the maximum */
  KS_MANY_PLANES,     /* one key per plane, and small clusters on many planes */
  KS_DUP_RUNS,        /* runs of equal keys of lengths around bucket sizes */
  KS_EXTREMES,        /* 0, 1, max - 1, max, repeated */
  KS_ALL_EQUAL,       /* one key value */
  KS_SPARSE20,        /* cgRX's uniformity 20%: dense 0..d-1 plus uniform keys */
  KS_SPARSE50,
  KS_N_GENS
} ks_gen;

static const char *ks_gen_names[] = {"dense", "uniform", "boundaries", "one_per_row", "row_ends", "huge_gaps",
                                     "many_planes", "dup_runs", "extremes", "all_equal", "sparse20", "sparse50"};

static uint64_t ks_draw(ks_gen g, int64_t i, int64_t n, uint64_t maxv, int bucket) {
  int w64 = maxv == UINT64_MAX;
  switch (g) {
    case KS_DENSE: return (uint64_t)i;
    case KS_UNIFORM: return ks_rand_below(w64 ? 0 : maxv + 1);
    case KS_BOUNDARIES: {
      int b = ks_bounds_bits[ks_rand_below(w64 ? 5 : 2)];
      uint64_t top = w64 ? (b >= 46 ? (1ull << 18) : (1ull << 20)) : (1ull << (32 - b));
      uint64_t m = 1 + ks_rand_below(top - 1);
      int64_t delta = (int64_t)ks_rand_below(5) - 2;
      return ((m << b) + (uint64_t)delta) & maxv;
    }
    case KS_ONE_PER_ROW: {
      int b = ks_rand_below(2) ? 22 : 23;
      uint64_t row = (uint64_t)i * (w64 ? 977 : 3) % (w64 ? (1ull << 30) : (1ull << (32 - b)));
      return ((row << b) | ks_rand_below(1ull << b)) & maxv;
    }
    case KS_ROW_ENDS: {
      int b = ks_rand_below(2) ? 22 : 23;
      uint64_t rows = w64 ? (1ull << 20) : (1ull << (32 - b));
      uint64_t row = ks_rand_below(rows);
      uint64_t x = ks_rand_below(2) ? (1ull << b) - 1 - ks_rand_below(2) : ks_rand_below(2);
      return ((row << b) | x) & maxv;
    }
    case KS_HUGE_GAPS: {
      static const uint64_t c64[] = {0, 1000, 1ull << 40, 1ull << 62, UINT64_MAX - 5000};
      static const uint64_t c32[] = {0, 1000, 1u << 28, 3u << 30, UINT32_MAX - 5000};
      uint64_t c = w64 ? c64[ks_rand_below(5)] : c32[ks_rand_below(5)];
      return (c + ks_rand_below(3000)) & maxv;
    }
    case KS_MANY_PLANES: {
      if (!w64) return ((uint64_t)ks_rand_below(1u << 9) << 23) | ks_rand_below(50);
      uint64_t plane = ks_rand_below(1ull << 18);
      int b = ks_rand_below(2) ? 44 : 46;
      return (plane << b) | (ks_rand_below(4) << 23) | ks_rand_below(8);
    }
    case KS_DUP_RUNS: {
      /* run lengths 1, bucket - 1, bucket, bucket + 1, 2 bucket + 1 */
      static int64_t pos = 0, run = 0, val = 0;
      if (i == 0) pos = 0, run = 0, val = (int64_t)ks_rand_below(1000);
      if (pos == run) {
        int64_t lens[5] = {1, bucket - 1 > 0 ? bucket - 1 : 1, bucket, bucket + 1, 2 * bucket + 1};
        run = lens[ks_rand_below(5)];
        pos = 0;
        val += 1 + (int64_t)ks_rand_below(3) * (ks_rand_below(4) == 0 ? (1 << 22) : 1);
      }
      pos++;
      return (uint64_t)val & maxv;
    }
    case KS_EXTREMES: {
      uint64_t v[4] = {0, 1, maxv - 1, maxv};
      return v[ks_rand_below(4)];
    }
    case KS_ALL_EQUAL: return 42;
    case KS_SPARSE20:
    case KS_SPARSE50: {
      double u = g == KS_SPARSE20 ? 0.2 : 0.5;
      int64_t d = (int64_t)((1.0 - u) * (double)n);
      if (i < d) return (uint64_t)i;
      return (uint64_t)d + ks_rand_below(w64 ? 0 : maxv - (uint64_t)d + 1);
    }
    default: return 0;
  }
}

static void ks_put(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

/* A query value near the key set's geometry. */
static uint64_t ks_query(const ks_data *d, uint64_t maxv) {
  int64_t n = d->keys.count;
  uint64_t k = n ? kc_at(d->keys, (int64_t)ks_rand_below((uint64_t)n)) : 0;
  switch (ks_rand_below(12)) {
    case 0: case 1: case 2: return k;                        /* hits */
    case 3: return k + 1 > maxv ? k : k + 1;                 /* neighbours: gaps, boundaries */
    case 4: return k ? k - 1 : k;
    case 5: return 0;
    case 6: return maxv;
    case 7: {                                                /* row and plane boundaries */
      int b = ks_bounds_bits[ks_rand_below(maxv == UINT64_MAX ? 5 : 2)];
      uint64_t base = k >> b << b;
      int64_t delta = (int64_t)ks_rand_below(5) - 2;
      return (base + (uint64_t)delta + (ks_rand_below(2) ? (1ull << b) : 0)) & maxv;
    }
    case 8: return k | ((1ull << (ks_rand_below(2) ? 22 : 23)) - 1); /* last slot of k's row */
    case 9: return k >> 22 << 22;                            /* first slot of k's row */
    default: return ks_rand_below(maxv == UINT64_MAX ? 0 : maxv + 1);
  }
}

/* Build keys (gen), rows (0 implied, 1 u32 shuffled, 2 u64 above 2^32), m queries, mb ranges. */
static ks_data ks_make(ks_gen g, rdx_dtype dt, int64_t n, int row_mode, int64_t m, int64_t mb, int bucket) {
  ks_data d;
  memset(&d, 0, sizeof d);
  uint64_t maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  d.kbuf = (uint64_t *)malloc((size_t)(n + 1) * 8);
  d.qbuf = (uint64_t *)malloc((size_t)(m + 1) * 8);
  d.bbuf = (uint64_t *)malloc((size_t)(2 * mb + 1) * 8);
  d.keys = rdx_host_array(d.kbuf, n, dt);
  d.queries = rdx_host_array(d.qbuf, m, dt);
  d.bounds = rdx_host_matrix(d.bbuf, mb, 2, dt);
  for (int64_t i = 0; i < n; i++) ks_put(d.keys, i, ks_draw(g, i, n, maxv, bucket));
  for (int64_t i = n - 1; i > 0; i--) { /* shuffle: the key's position is its implied row */
    int64_t j = (int64_t)ks_rand_below((uint64_t)i + 1);
    uint64_t a = kc_at(d.keys, i), b = kc_at(d.keys, j);
    ks_put(d.keys, i, b);
    ks_put(d.keys, j, a);
  }
  if (row_mode == 0) {
    d.rows = rdx_no_array();
  } else {
    d.rbuf = (uint64_t *)malloc((size_t)(n + 1) * 8);
    d.rows = rdx_host_array(d.rbuf, n, row_mode == 1 ? RDX_U32 : RDX_U64);
    for (int64_t i = 0; i < n; i++) ks_put(d.rows, i, (uint64_t)(n - 1 - i) * 3 + (row_mode == 2 ? (1ull << 33) : 0));
  }
  for (int64_t i = 0; i < m; i++) ks_put(d.queries, i, ks_query(&d, maxv));
  for (int64_t i = 0; i < mb; i++) {
    uint64_t lo = ks_query(&d, maxv), hi;
    switch (ks_rand_below(6)) {
      case 0: hi = lo; break;                                        /* a point */
      case 1: hi = ks_query(&d, maxv); break;                        /* anything, also lo > hi */
      case 2: lo = 0, hi = maxv; break;                              /* everything */
      case 3: hi = lo | ((1ull << 23) - 1); break;                   /* to the end of the row */
      default: {
        uint64_t wdt = ks_rand_below(ks_rand_below(2) ? 64 : (1u << 24));
        hi = maxv - lo < wdt ? maxv : lo + wdt;
      }
    }
    ks_put(d.bounds, 2 * i, lo);
    ks_put(d.bounds, 2 * i + 1, hi);
  }
  return d;
}

#endif /* RDX_RT_KEYSETS_H */
