/*
 * test_keys_btree.c: the btree kind's own edge cases, against the oracle, on the backend given
 * by --backend (every case runs on every backend: the backend is the loop variable of CTest).
 *
 * Cases: sizes at leaf and inner-node boundaries (the tree gains a level), runs of equal keys
 * that straddle leaf and inner-node boundaries (the smallest row must come first, counts and
 * fills must cross leaves), key 0 and the maximum key repeated across leaves, u32 keys with rows
 * >= 2^32 (width-64 nodes searched with u32 queries), wide ranges, enough inner nodes that the
 * GPU reads some from shared memory and some from global memory, and the resident bytes per key.
 */
#include "keys/btree_hd.h"
#include "keys_check.h"

typedef struct kset {
  rdx_array keys, rows, queries, bounds;
} kset;

static rdx_array alloc_array(int64_t n, int columns, rdx_dtype dt) {
  void *p = calloc((size_t)(n * columns + 1), rdx_dtype_size(dt));
  return columns == 1 ? rdx_host_array(p, n, dt) : rdx_host_matrix(p, n, columns, dt);
}
static void set(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}
static void kset_free(kset *s) {
  free((void *)s->keys.data);
  free((void *)s->rows.data);
  free((void *)s->queries.data);
  free((void *)s->bounds.data);
}

/* Shuffle the input order of (key, row) together, so rows are not ascending in input order. */
static void shuffle(rdx_array keys, rdx_array rows) {
  for (int64_t i = keys.count - 1; i > 0; i--) {
    int64_t j = (int64_t)check_below((uint64_t)i + 1);
    uint64_t k = kc_at(keys, i), r = rows.data ? kc_at(rows, i) : 0;
    set(keys, i, kc_at(keys, j));
    set(keys, j, k);
    if (rows.data) {
      set(rows, i, kc_at(rows, j));
      set(rows, j, r);
    }
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Queries: every distinct key, its neighbours, 0 and max; bounds: a point range per distinct
 * key, ranges around each, m_wide wide ones, everything, and an empty one. Keys must be set. */
static void make_queries(kset *s, uint64_t maxv, int64_t m_wide) {
  rdx_dtype dt = s->keys.dtype;
  int64_t n = s->keys.count, u = 0;
  uint64_t *distinct = (uint64_t *)malloc((size_t)(n + 1) * 8);
  for (int64_t i = 0; i < n; i++) distinct[i] = kc_at(s->keys, i);
  qsort(distinct, (size_t)n, 8, cmp_u64);
  for (int64_t i = 0; i < n; i++)
    if (u == 0 || distinct[u - 1] != distinct[i]) distinct[u++] = distinct[i];
  int64_t m = 3 * u + 4, mb = 2 * u + m_wide + 2;
  s->queries = alloc_array(m, 1, dt);
  s->bounds = alloc_array(mb, 2, dt);
  int64_t q = 0, b = 0;
  for (int64_t i = 0; i < u; i++) {
    uint64_t k = distinct[i];
    set(s->queries, q++, k);
    set(s->queries, q++, k == maxv ? 0 : k + 1);
    set(s->queries, q++, k == 0 ? maxv : k - 1);
    set(s->bounds, 2 * b, k);
    set(s->bounds, 2 * b++ + 1, k);
    set(s->bounds, 2 * b, k == 0 ? 0 : k - 1);
    set(s->bounds, 2 * b++ + 1, k == maxv ? maxv : k + 1);
  }
  set(s->queries, q++, 0);
  set(s->queries, q++, maxv);
  set(s->queries, q++, maxv - 1);
  set(s->queries, q++, 1);
  for (int64_t i = 0; i < m_wide; i++) {
    uint64_t lo = u ? distinct[check_below((uint64_t)u)] : 0;
    uint64_t w = (uint64_t)1 << check_below(20);
    set(s->bounds, 2 * b, lo);
    set(s->bounds, 2 * b++ + 1, maxv - lo < w ? maxv : lo + w);
  }
  set(s->bounds, 2 * b, 0);
  set(s->bounds, 2 * b++ + 1, maxv);
  set(s->bounds, 2 * b, maxv);
  set(s->bounds, 2 * b++ + 1, 0);
  s->queries.count = q;
  s->bounds.count = b;
  free(distinct);
}

static int check_btree(rdx_context *ctx, const kset *s) {
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_BTREE;
  return kc_check_build(ctx, &bo, s->keys, s->rows, s->queries, s->bounds);
}

/* Rows: 0 implied, 1 shuffled u32, 2 u64 rows >= 2^32 (u32 keys then need width-64 nodes). */
static rdx_array make_rows(int64_t n, int mode) {
  if (mode == 0) return rdx_no_array();
  rdx_array r = alloc_array(n, 1, mode == 1 ? RDX_U32 : RDX_U64);
  for (int64_t i = 0; i < n; i++) set(r, i, mode == 1 ? (uint64_t)i : ((uint64_t)1 << 32) + 5 * (uint64_t)i);
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)check_below((uint64_t)i + 1);
    uint64_t a = kc_at(r, i);
    set(r, i, kc_at(r, j));
    set(r, j, a);
  }
  return r;
}

static void btree_boundaries(rdx_context *ctx) {
  CASE(btree_boundaries);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t maxv = dt ? UINT64_MAX : UINT32_MAX;
    for (int mode = 0; mode < 3; mode++) {
      int wide = dt || mode == 2; /* width-64 nodes */
      int64_t cap = wide ? RDX_BTREE_LEAF_CAP64 : RDX_BTREE_LEAF_CAP32, f = wide ? RDX_BTREE_FANOUT64 : RDX_BTREE_FANOUT32;
      int64_t sizes[] = {1, cap - 1, cap, cap + 1, 2 * cap, cap * f - 1, cap * f, cap * f + 1, cap * f * f - 1,
                         cap * f * f, cap * f * f + 1};
      for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int64_t n = sizes[z];
        if (n > 40000 && mode != 1) continue; /* the largest size once per width */
        kset s;
        s.keys = alloc_array(n, 1, dtype);
        /* sparse keys with gaps (so neighbours miss), spread over the whole key space for u64 */
        for (int64_t i = 0; i < n; i++) set(s.keys, i, dt ? (uint64_t)i * 0x9E3779B97F4A7Cull + 3 : (uint64_t)i * 3 + 1);
        s.rows = make_rows(n, mode);
        shuffle(s.keys, s.rows);
        make_queries(&s, maxv, 8);
        check_btree(ctx, &s);
        kset_free(&s);
      }
    }
  }
}

/* Runs of equal keys of lengths that straddle leaf boundaries in every phase, and one run longer
 * than an inner node's whole subtree, starting mid-leaf. */
static void btree_duplicates_across_leaves(rdx_context *ctx) {
  CASE(btree_duplicates_across_leaves);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t maxv = dt ? UINT64_MAX : UINT32_MAX;
    for (int mode = 0; mode < 3; mode++) {
      int wide = dt || mode == 2;
      int64_t cap = wide ? RDX_BTREE_LEAF_CAP64 : RDX_BTREE_LEAF_CAP32, f = wide ? RDX_BTREE_FANOUT64 : RDX_BTREE_FANOUT32;
      int64_t runs[] = {1, 2, cap - 1, cap, cap + 1, 2 * cap + 3, 3, cap * f + 1, 5, 3 * cap * f + 5, 2, cap - 2};
      int64_t n = 0;
      for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) n += runs[r];
      n *= 3; /* three rounds, so runs start at different offsets within leaves */
      kset s;
      s.keys = alloc_array(n, 1, dtype);
      int64_t i = 0;
      uint64_t key = 10;
      for (int round = 0; round < 3; round++)
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++, key += 10)
          for (int64_t c = 0; c < runs[r]; c++) set(s.keys, i++, dt ? key << 34 : key);
      s.rows = make_rows(n, mode);
      shuffle(s.keys, s.rows);
      make_queries(&s, maxv, 8);
      check_btree(ctx, &s);
      kset_free(&s);
    }
  }
}

/* Key 0 and the maximum key, each repeated across several leaves, around a few others. */
static void btree_extremes(rdx_context *ctx) {
  CASE(btree_extremes);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t maxv = dt ? UINT64_MAX : UINT32_MAX;
    for (int mode = 0; mode < 3; mode++) {
      int64_t n = 200;
      kset s;
      s.keys = alloc_array(n, 1, dtype);
      for (int64_t i = 0; i < n; i++) set(s.keys, i, i < 70 ? 0 : i < 140 ? maxv : i < 150 ? maxv - 1 : (uint64_t)i);
      s.rows = make_rows(n, mode);
      shuffle(s.keys, s.rows);
      make_queries(&s, maxv, 4);
      check_btree(ctx, &s);
      kset_free(&s);
    }
  }
}

/* Random keys with duplicates, enough that the GPU search reads inner nodes from both shared
 * and global memory, with wide ranges (fills across many leaves). */
static void btree_random_large(rdx_context *ctx) {
  CASE(btree_random_large);
  for (int dt = 0; dt < 2; dt++) {
    rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
    uint64_t maxv = dt ? UINT64_MAX : UINT32_MAX;
    int64_t n = 150000;
    kset s;
    s.keys = alloc_array(n, 1, dtype);
    for (int64_t i = 0; i < n; i++) set(s.keys, i, check_below(dt ? (uint64_t)1 << 40 : (uint64_t)n * 4) * (dt ? 977 : 1));
    s.rows = make_rows(n, 1);
    /* a subset of the keys as queries keeps the oracle work small */
    kset small = s;
    small.keys.count = 4000;
    make_queries(&small, maxv, 64);
    s.queries = small.queries;
    s.bounds = small.bounds;
    check_btree(ctx, &s);
    kset_free(&s);
  }
}

/* Resident bytes per key: 15 pairs per 128-byte leaf plus 1/31 of that in inner nodes for u32
 * keys (8.8 bytes, target <= 10); 7 pairs per leaf for width 64 (19.5 bytes). */
static void btree_bytes(rdx_context *ctx) {
  CASE(btree_bytes);
  for (int mode = 0; mode < 3; mode++) {
    int64_t n = (int64_t)1 << 20;
    rdx_dtype dtype = mode == 1 ? RDX_U64 : RDX_U32;
    rdx_array keys = alloc_array(n, 1, dtype);
    for (int64_t i = 0; i < n; i++) set(keys, i, check_rand_());
    rdx_array rows = make_rows(n, mode == 2 ? 2 : 0);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_BTREE;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, keys, rows, &bo, &idx));
    int64_t resident = 0, peak = 0;
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &resident, &peak));
    double per_key = (double)resident / (double)n, limit = mode == 0 ? 10.0 : 20.0;
    printf("btree %s keys%s: %.3f resident, %.3f peak bytes per key\n", mode == 1 ? "u64" : "u32",
           mode == 2 ? " (rows >= 2^32)" : "", per_key, (double)peak / (double)n);
    if (!(per_key <= limit)) CHECK_FAIL_("btree resident %.3f bytes per key > %.1f", per_key, limit);
    if (!(per_key >= (mode == 0 ? 8.5 : 18.2))) CHECK_FAIL_("btree resident %.3f bytes per key is less than its leaves", per_key);
    /* the index answers after its entries are gone */
    uint64_t q = kc_at(keys, 12345), row = RDX_MISS;
    uint32_t q32 = (uint32_t)q;
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, dtype == RDX_U32 ? rdx_host_array(&q32, 1, RDX_U32) : rdx_host_array(&q, 1, RDX_U64),
                                   rdx_host_array(&row, 1, RDX_U64)));
    CHECK(row != RDX_MISS);
    rdx_index_destroy(idx);
    free((void *)keys.data);
    free((void *)rows.data);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  btree_boundaries(ctx);
  btree_duplicates_across_leaves(ctx);
  btree_extremes(ctx);
  btree_random_large(ctx);
  btree_bytes(ctx);
  return check_end(ctx);
}
