/*
 * test_keys_hash.c: the hash kind's own edge cases, against the oracle, on the backend given by
 * --backend (every case runs on every backend: the backend is the loop variable of CTest).
 *
 * Cases: load factors 0.1 .. 0.95 with the table full to its load factor (sizes where
 * n / load_factor fills whole windows, and tiny tables of one or two windows), many keys on the
 * same home window (the first, a middle and the last window, so probes wrap around) with
 * duplicates spread over the probe chain, misses that walk the same chains, duplicate keys and
 * all-equal keys (the side CSR), rows that do not fit a slot (>= 2^31 for u32 keys, >= 2^63 for
 * u64 keys, and the largest that do), key 0 and the maximum key, range calls answered with
 * RDX_ERR_UNSUPPORTED, and the resident bytes per key.
 */
#include "keys/hash_hd.h"
#include "keys_check.h"

static const double load_factors[] = {0.1, 0.25, 0.5, 0.75, 0.9, 0.95};

static rdx_array alloc_array(int64_t n, int columns, rdx_dtype dt) {
  void *p = calloc((size_t)(n * columns + 1), rdx_dtype_size(dt));
  return columns == 1 ? rdx_host_array(p, n, dt) : rdx_host_matrix(p, n, columns, dt);
}
static void set(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

static uint64_t home(const rdx_hash_layout *L, uint64_t k) {
  return L->key_bits == 32 ? rdx_hash_home32(L, (uint32_t)k) : rdx_hash_home64(L, k);
}

/* A key drawn at random, never 0 .. 15 (kept for the extremes). */
static uint64_t rand_key(rdx_dtype dt) {
  uint64_t k = check_rand_();
  if (dt == RDX_U32) k &= 0xFFFFFFFFu;
  return k < 16 ? k + 16 : k;
}

/* Shuffled rows 0..n-1 (u32). */
static rdx_array shuffled_rows(int64_t n) {
  rdx_array r = alloc_array(n, 1, RDX_U32);
  for (int64_t i = 0; i < n; i++) set(r, i, (uint64_t)i);
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)check_below((uint64_t)i + 1);
    uint64_t a = kc_at(r, i);
    set(r, i, kc_at(r, j));
    set(r, j, a);
  }
  return r;
}

/* Queries: the keys (all of them, or `limit` of them), their neighbours, `extra` given misses,
 * 0 and the maximum. A few bounds, to see ranges refused. */
static void check_hash(rdx_context *ctx, double lf, rdx_array keys, rdx_array rows, const uint64_t *extra,
                       int64_t n_extra, int64_t limit) {
  rdx_dtype dt = keys.dtype;
  uint64_t maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t nk = keys.count < limit ? keys.count : limit, m = 2 * nk + n_extra + 3;
  rdx_array q = alloc_array(m, 1, dt), b = alloc_array(2, 2, dt);
  int64_t j = 0;
  for (int64_t i = 0; i < nk; i++) {
    uint64_t k = kc_at(keys, i);
    set(q, j++, k);
    set(q, j++, k == maxv ? 0 : k + 1);
  }
  for (int64_t i = 0; i < n_extra; i++) set(q, j++, extra[i]);
  set(q, j++, 0);
  set(q, j++, maxv);
  set(q, j++, maxv - 1);
  set(b, 0, 0), set(b, 1, maxv), set(b, 2, 5), set(b, 3, 1);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_HASH;
  bo.load_factor = lf;
  kc_check_build(ctx, &bo, keys, rows, q, b);
  free((void *)q.data);
  free((void *)b.data);
}

/* Unique random keys at each load factor; sizes that fill whole windows exactly and tiny ones. */
static void hash_load_factors(rdx_context *ctx) {
  CASE(hash_load_factors);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    for (size_t f = 0; f < sizeof load_factors / sizeof load_factors[0]; f++) {
      double lf = load_factors[f];
      /* n * 100 / (lf * 100) slots is a whole number of windows for these n */
      int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, (int64_t)(lf * 100 + 0.5) * 4, (int64_t)(lf * 100 + 0.5) * 400, 20000};
      for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int64_t n = sizes[z];
        rdx_array keys = alloc_array(n, 1, dtype);
        for (int64_t i = 0; i < n; i++) {
          uint64_t k;
          int again;
          do { /* unique */
            k = rand_key(dtype);
            again = 0;
            for (int64_t t = 0; t < i && n <= 4000; t++) again |= kc_at(keys, t) == k;
          } while (again);
          set(keys, i, k);
        }
        rdx_array rows = z % 2 ? shuffled_rows(n) : rdx_no_array();
        uint64_t miss[64];
        for (int t = 0; t < 64; t++) miss[t] = rand_key(dtype);
        check_hash(ctx, lf, keys, rows, miss, 64, 4000);
        free((void *)keys.data);
        free((void *)rows.data);
      }
    }
  }
}

/* Many keys whose home is the same window (the first, one in the middle, the last), some
 * duplicated, amid random fillers: probe chains many windows long that wrap around the end of
 * the table; misses with the same home walk the whole chain. */
static void hash_same_home(rdx_context *ctx) {
  CASE(hash_same_home);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    for (size_t f = 0; f < sizeof load_factors / sizeof load_factors[0]; f += 2) {
      double lf = load_factors[f] + 0.4 > 0.95 ? 0.95 : load_factors[f] + 0.4; /* 0.5, 0.9, 0.95 */
      int64_t n = 3000, per = 24;  /* 3 homes x 24 keys, 6 of them duplicated 3 times */
      rdx_hash_layout L;
      CHECK(rdx_hash_plan(&L, n, dt ? 64 : 32, lf) == 0);
      uint64_t targets[3] = {0, L.n_windows / 2, L.n_windows - 1};
      rdx_array keys = alloc_array(n, 1, dtype);
      uint64_t miss[3 * 8];
      int64_t i = 0, n_miss = 0;
      for (int t = 0; t < 3; t++) {
        for (int c = 0; c < per + 8;) {
          uint64_t k = rand_key(dtype);
          if (home(&L, k) != targets[t]) continue;
          if (c < per) {
            int copies = c % 4 == 0 ? 3 : 1;
            for (int r = 0; r < copies; r++) set(keys, i++, k);
          } else {
            miss[n_miss++] = k;
          }
          c++;
        }
      }
      while (i < n) set(keys, i++, rand_key(dtype));
      /* shuffle, so duplicates arrive at different times */
      for (int64_t a = n - 1; a > 0; a--) {
        int64_t b = (int64_t)check_below((uint64_t)a + 1);
        uint64_t x = kc_at(keys, a);
        set(keys, a, kc_at(keys, b));
        set(keys, b, x);
      }
      rdx_array rows = shuffled_rows(n);
      check_hash(ctx, lf, keys, rows, miss, n_miss, n);
      free((void *)keys.data);
      free((void *)rows.data);
    }
  }
}

/* Duplicate keys (runs of 2 .. 300 rows), and all keys equal: the side CSR. */
static void hash_duplicates(rdx_context *ctx) {
  CASE(hash_duplicates);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    for (int all_equal = 0; all_equal < 2; all_equal++) {
      int64_t n = 20000;
      rdx_array keys = alloc_array(n, 1, dtype);
      int64_t i = 0;
      while (i < n) {
        uint64_t k = all_equal ? 77 : rand_key(dtype);
        int64_t run = all_equal ? n : 1 + (int64_t)check_below(check_below(4) == 0 ? 300 : 3);
        for (int64_t r = 0; r < run && i < n; r++) set(keys, i++, k);
      }
      for (int64_t a = n - 1; a > 0; a--) {
        int64_t b = (int64_t)check_below((uint64_t)a + 1);
        uint64_t x = kc_at(keys, a);
        set(keys, a, kc_at(keys, b));
        set(keys, b, x);
      }
      rdx_array rows = shuffled_rows(n);
      uint64_t miss[8];
      for (int t = 0; t < 8; t++) miss[t] = rand_key(dtype);
      check_hash(ctx, all_equal ? 0.95 : 0.5, keys, rows, miss, 8, all_equal ? 3 : 2000);
      free((void *)keys.data);
      free((void *)rows.data);
    }
  }
}

/* Rows around the largest a slot holds: 2^31 - 1 stays in the slot of a u32 key, 2^31 and up go
 * to the CSR; for u64 keys the limit is 2^63. Key 0 and the maximum key among them. */
static void hash_big_rows_and_extremes(rdx_context *ctx) {
  CASE(hash_big_rows_and_extremes);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t maxv = dt ? UINT64_MAX : UINT32_MAX, limit = dt ? RDX_HASH64_ROW_MAX : RDX_HASH32_ROW_MAX;
    const uint64_t special_rows[] = {limit, limit + 1, limit - 1, (uint64_t)1 << 32, ((uint64_t)1 << 32) + 7,
                                     UINT64_MAX - 1, 0, 1};
    const uint64_t special_keys[] = {0, maxv, maxv - 1, 1, 0, maxv, (uint64_t)1 << 31, 0x80000000u};
    for (int mix = 0; mix < 3; mix++) {
      int64_t n = 1000;
      rdx_array keys = alloc_array(n, 1, dtype), rows = alloc_array(n, 1, RDX_U64);
      for (int64_t i = 0; i < n; i++) {
        /* mix 0: special keys, big rows on some; 1: every row big; 2: specials only, duplicated */
        uint64_t k = i < 8 ? special_keys[i] : mix == 2 ? special_keys[i % 8] : rand_key(dtype);
        uint64_t r = mix == 1 ? limit + 1 + (uint64_t)i * 3 : i < 8 ? special_rows[i] : (uint64_t)i * 11;
        set(keys, i, k);
        set(rows, i, r);
      }
      uint64_t miss[4] = {2, maxv - 2, 3, (uint64_t)1 << 33};
      check_hash(ctx, 0.5, keys, rows, miss, 4, n);
      free((void *)keys.data);
      free((void *)rows.data);
    }
  }
}

/* Ranges are refused with a sentence, on a built and on an empty hash index. */
static void hash_ranges_unsupported(rdx_context *ctx) {
  CASE(hash_ranges_unsupported);
  uint32_t keys[4] = {1, 2, 3, 3}, bounds[2] = {0, 10};
  uint64_t counts[1] = {0};
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_HASH;
  for (int empty = 0; empty < 2; empty++) {
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, empty ? 0 : 4, RDX_U32), rdx_no_array(), &bo, &idx));
    CHECK_STATUS(ctx, rdx_index_range_count(ctx, idx, rdx_host_matrix(bounds, 1, 2, RDX_U32), rdx_host_array(counts, 1, RDX_U64)),
                 RDX_ERR_UNSUPPORTED);
    CHECK(strstr(rdx_context_message(ctx), "hash") != NULL);
    CHECK(strstr(rdx_context_message(ctx), "rdx_index_range_count") != NULL);
    rdx_index_destroy(idx);
  }
}

/* Resident bytes per key: exactly the table for unique keys with small rows, so 16 bytes per u32
 * key at load factor 0.5 (target <= 16) and 8 / 0.95 at 0.95; 32 per u64 key at 0.5. */
static void hash_bytes(rdx_context *ctx) {
  CASE(hash_bytes);
  struct { rdx_dtype dt; double lf, want; } cases[] = {{RDX_U32, 0.5, 16.0}, {RDX_U32, 0.95, 8.0 / 0.95}, {RDX_U64, 0.5, 32.0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t n = (int64_t)1 << 20;
    rdx_array keys = alloc_array(n, 1, cases[c].dt);
    for (int64_t i = 0; i < n; i++) set(keys, i, cases[c].dt == RDX_U32 ? rdx_hash_mix32((uint32_t)i) : rdx_hash_mix64((uint64_t)i));
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_HASH;
    bo.load_factor = cases[c].lf;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx));
    int64_t resident = 0, peak = 0;
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &resident, &peak));
    double per_key = (double)resident / (double)n;
    printf("hash %s keys, load factor %.2f: %.3f resident, %.3f peak bytes per key\n", cases[c].dt == RDX_U32 ? "u32" : "u64",
           cases[c].lf, per_key, (double)peak / (double)n);
    if (!(per_key <= cases[c].want + 0.01 && per_key >= cases[c].want - 0.01))
      CHECK_FAIL_("hash resident %.4f bytes per key, want %.4f", per_key, cases[c].want);
    /* every key found, at its row */
    uint64_t *rows = (uint64_t *)malloc((size_t)n * 8);
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, keys, rdx_host_array(rows, n, RDX_U64)));
    for (int64_t i = 0; i < n; i++)
      if (rows[i] != (uint64_t)i) {
        CHECK_FAIL_("hash lookup of key %llu: row %llu, want %lld", (unsigned long long)kc_at(keys, i),
                    (unsigned long long)rows[i], (long long)i);
        break;
      }
    free(rows);
    rdx_index_destroy(idx);
    free((void *)keys.data);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  hash_load_factors(ctx);
  hash_same_home(ctx);
  hash_duplicates(ctx);
  hash_big_rows_and_extremes(ctx);
  hash_ranges_unsupported(ctx);
  hash_bytes(ctx);
  return check_end(ctx);
}
