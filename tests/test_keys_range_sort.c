/*
 * test_keys_range_sort.c: range fills return each query's rows in ascending order, for segment
 * lengths that take every path of the per-query sort (CPU: core/csr.c; GPU: core/csr_sort.cu), checked
 * row by row against the oracle on every backend.
 *
 * Keys carry chosen multiplicities, so a point range [k, k] returns exactly that many rows:
 * 0, 1, 2, 255, 256, 257, 4096 and 70000 (and ranges over several keys, longer still). Rows are a
 * shuffled permutation shifted to straddle 2^32 (u64 rows), or below 2^32 (u32 rows), or at 2^63
 * and above (query bits + row bits > 64: the GPU cannot pack them and falls back to CUB's
 * segmented sort). The cases and the GPU path they are meant to take:
 *   singles      > 2^16 queries, every segment 0 or 1 rows         nothing to sort
 *   in_order     keys given in order, implied rows                  every segment ascending
 *   small        > 2^16 queries, segments of 2..64 rows             segmented
 *   lengths      0, 1, 2, 255, 256, 257, 4096, 70000 and wider      packed
 *   many_large   > 2^16 queries, most empty, some 4096 rows         packed, 17 query bits
 *   lengths_high the lengths case with rows >= 2^63                 segmented (does not fit)
 * Each case also runs with the GPU's path forced to segmented and to packed (rdx_csr_force_sort,
 * an internal entry point; the CPU ignores it), so both GPU sorts see every length, and with
 * bounds in host and device memory.
 */
#include "core/core.h"
#include "keys_check.h"

#include <time.h>

static const rdx_kind kinds[] = {RDX_KIND_SORTED, RDX_KIND_BTREE};

static void put(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

typedef struct rcase {
  const char *name;
  rdx_dtype key_dtype;
  int row_mode;                /* 0 implied, 1 u32 shuffled, 2 u64 straddling 2^32, 3 u64 >= 2^63 */
  int in_order;                /* keys emitted ascending (with implied rows: ascending segments) */
  const int64_t *mult;         /* multiplicity of key j */
  int n_mult;
  int64_t n_queries;           /* point ranges over random keys j, plus the wide ones below */
  int64_t wide;                /* ranges over several consecutive keys */
} rcase;

/* key j's value: spaced by 3 (so lo = key + 1 finds nothing), high for u64 */
static uint64_t key_of(rdx_dtype dt, int64_t j) {
  return (dt == RDX_U64 ? ((uint64_t)1 << 40) : 1000) + (uint64_t)j * 3;
}

static void run_case(rdx_context *ctx, const rcase *c) {
  check_case_ = c->name;
  int64_t n = 0;
  for (int j = 0; j < c->n_mult; j++) n += c->mult[j];
  uint64_t *kbuf = (uint64_t *)malloc((size_t)(n + 1) * 8), *rbuf = (uint64_t *)malloc((size_t)(n + 1) * 8);
  rdx_array keys = rdx_host_array(kbuf, n, c->key_dtype), rows = rdx_no_array();
  int64_t at = 0;
  for (int j = 0; j < c->n_mult; j++)
    for (int64_t r = 0; r < c->mult[j]; r++) put(keys, at++, key_of(c->key_dtype, j));
  if (!c->in_order) /* shuffle the keys, so rows of one key come in no order */
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = (int64_t)check_below((uint64_t)i + 1);
      uint64_t a = kc_at(keys, i), b = kc_at(keys, j);
      put(keys, i, b);
      put(keys, j, a);
    }
  if (c->row_mode) {
    uint64_t base = c->row_mode == 2 ? ((uint64_t)1 << 32) - (uint64_t)n / 2 : c->row_mode == 3 ? (uint64_t)1 << 63 : 0;
    rows = rdx_host_array(rbuf, n, c->row_mode == 1 ? RDX_U32 : RDX_U64);
    for (int64_t i = 0; i < n; i++) put(rows, i, base + (uint64_t)i);
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = (int64_t)check_below((uint64_t)i + 1);
      uint64_t a = kc_at(rows, i), b = kc_at(rows, j);
      put(rows, i, b);
      put(rows, j, a);
    }
  }
  /* bounds: every key once, then random point ranges, misses between keys, wide ranges */
  int64_t mb = c->n_mult + c->n_queries + c->wide;
  uint64_t *bbuf = (uint64_t *)malloc((size_t)(2 * mb + 1) * 8);
  rdx_array bounds = rdx_host_matrix(bbuf, mb, 2, c->key_dtype);
  for (int64_t i = 0; i < mb; i++) {
    uint64_t lo, hi;
    if (i < c->n_mult) {
      lo = hi = key_of(c->key_dtype, i);
    } else if (i < c->n_mult + c->n_queries) {
      int64_t j = (int64_t)check_below((uint64_t)c->n_mult);
      lo = hi = key_of(c->key_dtype, j);
      if (check_below(8) == 0) lo = hi = lo + 1; /* between keys: 0 rows */
    } else {
      int64_t j = (int64_t)check_below((uint64_t)c->n_mult), w = 1 + (int64_t)check_below(4);
      lo = key_of(c->key_dtype, j);
      hi = key_of(c->key_dtype, j + w);
    }
    put(bounds, 2 * i, lo);
    put(bounds, 2 * i + 1, hi);
  }
  keys_oracle o;
  CHECK(keys_oracle_build(&o, keys, rows));
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, keys, rows, &bo, &idx));
    if (idx == NULL) continue;
    static const char *const modes[] = {"auto", "segmented", "packed"};
    static const int methods[] = {RDX_CSR_SORT_AUTO, RDX_CSR_SORT_SEGMENTED, RDX_CSR_SORT_PACKED};
    for (int mode = 0; mode < 3; mode++) {
      rdx_csr_force_sort(ctx, methods[mode]);
      int failed = kc_check_range_alloc(ctx, idx, &o, bounds);
      for (int pass = 0; pass < 2; pass++)
        if (failed & (1 << pass))
          fprintf(stderr, "  (kind %s, GPU sort path %s, bounds in %s memory, %lld rows, %lld queries)\n",
                  rdx_kind_name(kinds[k]), modes[mode], pass ? "device" : "host", (long long)n, (long long)mb);
    }
    rdx_csr_force_sort(ctx, RDX_CSR_SORT_AUTO);
    rdx_index_destroy(idx);
  }
  keys_oracle_free(&o);
  free(bbuf);
  free(kbuf);
  free(rbuf);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  static const int64_t lengths[] = {0, 1, 2, 255, 256, 257, 4096, 70000, 3, 64, 65, 1};
  static const int64_t ones[] = {1};
  int64_t *small = (int64_t *)malloc(4096 * 8), *many = (int64_t *)malloc(80000 * 8);
  for (int j = 0; j < 4096; j++) small[j] = 2 + (int64_t)check_below(63); /* 2..64 */
  for (int j = 0; j < 80000; j++) many[j] = j % 400 == 0 ? 4096 : (int64_t)check_below(2); /* 200 x 4096, 0s, 1s */
  int64_t *singles = (int64_t *)malloc(70000 * 8);
  for (int j = 0; j < 70000; j++) singles[j] = (int64_t)check_below(2);
  int64_t *ordered = (int64_t *)malloc(64 * 8);
  for (int j = 0; j < 64; j++) ordered[j] = j % 8 == 0 ? 3000 : j; /* ascending rows, long and short */
  const int n_len = (int)(sizeof lengths / sizeof lengths[0]);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype kd = dt ? RDX_U64 : RDX_U32;
    rcase cases[] = {
        {"singles", kd, 1 + dt, 0, singles, 70000, 1000, 0},
        {"in_order", kd, 0, 1, ordered, 64, 2000, 200},
        {"small", kd, 1 + dt, 0, small, 4096, (1 << 16) + 1000, 0},
        {"lengths", kd, 2, 0, lengths, n_len, 200, 40},
        {"lengths_u32_rows", kd, 1, 0, lengths, n_len, 100, 20},
        {"many_large", kd, 2 - dt, 0, many, 80000, 0, 0},
        {"lengths_high", kd, 3, 0, lengths, n_len, 100, 20},
        {"one_key", kd, 2, 0, ones, 1, 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      clock_t t0 = clock();
      run_case(ctx, &cases[i]);
      printf("case %s (%s keys): %.1f s cpu\n", cases[i].name, dt ? "u64" : "u32", (double)(clock() - t0) / CLOCKS_PER_SEC);
    }
  }
  free(small);
  free(many);
  free(singles);
  free(ordered);
  return check_end(ctx);
}
