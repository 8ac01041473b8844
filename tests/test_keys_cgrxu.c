/*
 * test_keys_cgrxu.c: the cgrxu kind (cgRXu, seed 000 Section IV) against the oracle, on the
 * backend given by --backend: a build, then random waves of insert and erase batches, every query
 * call checked after each batch (keys_check.h's kc_check_index against an oracle of the expected
 * multiset of pairs).
 *
 * Cases: u32 and u64 keys; node sizes of 32, 128 and 1024 bytes; keys dense, sparse and spread
 * over many rows and planes of cgRX's grid; inserts below the smallest and above the largest key
 * (the overflow bucket); a hot bucket split many times; duplicates spanning nodes and buckets;
 * erasing absent keys, every key, then refilling; implied and explicit rows (u64 rows past 2^32
 * into a u32 index, which widens its nodes); every allocation of an insert and an erase failed in
 * turn, each leaving every answer as it was.
 */
#include "core/core.h" /* rdx_mem_fail_after */
#include "keys_check.h"

typedef struct multiset {
  uint64_t *k, *r;
  int64_t n, cap;
} multiset;

static void ms_add(multiset *s, uint64_t k, uint64_t r) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->k = (uint64_t *)realloc(s->k, (size_t)s->cap * 8);
    s->r = (uint64_t *)realloc(s->r, (size_t)s->cap * 8);
  }
  s->k[s->n] = k, s->r[s->n++] = r;
}

/* Remove every pair whose key is in keys[0, m); returns how many. */
static int64_t ms_erase(multiset *s, const uint64_t *keys, int64_t m) {
  int64_t w = 0, gone = 0;
  for (int64_t i = 0; i < s->n; i++) {
    int hit = 0;
    for (int64_t j = 0; j < m && !hit; j++) hit = keys[j] == s->k[i];
    if (hit) gone++;
    else s->k[w] = s->k[i], s->r[w++] = s->r[i];
  }
  s->n = w;
  return gone;
}

static uint64_t draw_key(rdx_dtype dt, int pattern, uint64_t span) {
  uint64_t mx = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  switch (pattern) {
    case 0: return check_below(span); /* dense, many duplicates */
    case 1: return dt == RDX_U32 ? check_rand_() & mx : check_rand_(); /* sparse: rows and planes */
    default: return (check_rand_() & 1) ? check_below(16) : mx - check_below(16); /* the ends */
  }
}

/* Check idx against s with random queries and ranges (keys present and absent). */
static void check_all(rdx_context *ctx, const rdx_index *idx, const multiset *s, rdx_dtype dt, int pattern,
                      uint64_t span) {
  const int64_t m = 300, mb = 100;
  void *kb = malloc((size_t)(s->n + 1) * 8), *qb = malloc((size_t)m * 8), *bb = malloc((size_t)mb * 16);
  rdx_array keys = rdx_host_array(kb, s->n, dt), rows = rdx_host_array(s->r, s->n, RDX_U64);
  for (int64_t i = 0; i < s->n; i++) {
    if (dt == RDX_U32) ((uint32_t *)kb)[i] = (uint32_t)s->k[i];
    else ((uint64_t *)kb)[i] = s->k[i];
  }
  keys_oracle o;
  CHECK(keys_oracle_build(&o, keys, rows));
  rdx_array q = rdx_host_array(qb, m, dt), b = rdx_host_matrix(bb, mb, 2, dt);
  for (int64_t i = 0; i < m; i++) {
    uint64_t v = s->n && (check_rand_() & 1) ? s->k[check_below((uint64_t)s->n)] : draw_key(dt, pattern, span);
    if (dt == RDX_U32) ((uint32_t *)qb)[i] = (uint32_t)v;
    else ((uint64_t *)qb)[i] = v;
  }
  for (int64_t i = 0; i < mb; i++) {
    uint64_t lo = s->n && (check_rand_() & 1) ? s->k[check_below((uint64_t)s->n)] : draw_key(dt, pattern, span);
    uint64_t hi = s->n && (check_rand_() & 1) ? s->k[check_below((uint64_t)s->n)] : draw_key(dt, pattern, span);
    if (lo > hi && (check_rand_() & 3)) {
      uint64_t t = lo;
      lo = hi, hi = t;
    }
    if (dt == RDX_U32) ((uint32_t *)bb)[2 * i] = (uint32_t)lo, ((uint32_t *)bb)[2 * i + 1] = (uint32_t)hi;
    else ((uint64_t *)bb)[2 * i] = lo, ((uint64_t *)bb)[2 * i + 1] = hi;
  }
  CHECK_EQ(rdx_index_count(idx), s->n);
  kc_check_index(ctx, idx, &o, q, b);
  keys_oracle_free(&o);
  free(kb), free(qb), free(bb);
}

static rdx_array host_keys(rdx_dtype dt, const uint64_t *v, int64_t m, void **buf) {
  *buf = malloc((size_t)(m + 1) * 8);
  for (int64_t i = 0; i < m; i++) {
    if (dt == RDX_U32) ((uint32_t *)*buf)[i] = (uint32_t)v[i];
    else ((uint64_t *)*buf)[i] = v[i];
  }
  return rdx_host_array(*buf, m, dt);
}

/* Waves of inserts and erases on one index, checked after each. */
static void waves(rdx_context *ctx, rdx_dtype dt, int node_bytes, int pattern, int64_t n0, int n_waves) {
  static char part[96];
  snprintf(part, sizeof part, "%s node %d pattern %d n %lld", dt == RDX_U32 ? "u32" : "u64", node_bytes, pattern,
           (long long)n0);
  if (!CASE_PART(cgrxu_waves, part)) return;
  {
    const uint64_t span = (uint64_t)(n0 > 0 ? n0 : 16) * 2;
    multiset s = {0};
    uint64_t *kv = (uint64_t *)malloc((size_t)(n0 + 1) * 8);
    for (int64_t i = 0; i < n0; i++) kv[i] = draw_key(dt, pattern, span), ms_add(&s, kv[i], (uint64_t)i);
    void *kb;
    rdx_array keys = host_keys(dt, kv, n0, &kb);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_CGRXU;
    bo.node_bytes = node_bytes;
    rdx_index *idx = NULL;
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    free(kb), free(kv);
    if (st == RDX_ERR_UNSUPPORTED) {
      printf("  cgrxu is not on this backend: %s\n", rdx_context_message(ctx));
      free(s.k), free(s.r);
      return;
    }
    CHECK_OK(ctx, st);
    check_all(ctx, idx, &s, dt, pattern, span);
    for (int w = 0; w < n_waves && idx; w++) {
      const int erase = w % 3 == 2;
      int64_t m = 1 + (int64_t)check_below((uint64_t)(n0 / 2 + 8));
      uint64_t *v = (uint64_t *)malloc((size_t)m * 8);
      for (int64_t i = 0; i < m; i++) {
        int hot = w % 4 == 1; /* one hot key range: a bucket that splits many times */
        v[i] = hot ? (s.n ? s.k[0] : 5) + (check_rand_() & 3) : (s.n && (check_rand_() & 1)) ? s.k[check_below((uint64_t)s.n)]
                                                                                               : draw_key(dt, pattern, span);
        if (dt == RDX_U32) v[i] = (uint32_t)v[i];
      }
      void *b;
      rdx_array a = host_keys(dt, v, m, &b);
      if (erase) {
        int64_t gone = -1;
        CHECK_OK(ctx, rdx_index_erase(ctx, idx, a, NULL, &gone));
        CHECK_EQ(gone, ms_erase(&s, v, m));
      } else {
        /* rows: implied, or explicit (now and then past 2^32) */
        int explicit_rows = check_rand_() & 1, big = explicit_rows && w == 4;
        uint64_t *rv = (uint64_t *)malloc((size_t)m * 8);
        uint64_t next = rdx_index_next_row(idx);
        for (int64_t i = 0; i < m; i++) rv[i] = explicit_rows ? (big ? ((uint64_t)1 << 33) + check_below(1000) : check_below(1u << 20)) : next + (uint64_t)i;
        CHECK_OK(ctx, rdx_index_insert(ctx, idx, a, explicit_rows ? rdx_host_array(rv, m, RDX_U64) : rdx_no_array(), NULL));
        for (int64_t i = 0; i < m; i++) ms_add(&s, v[i], rv[i]);
        CHECK_EQ(rdx_index_next_row(idx), next + (uint64_t)m);
        free(rv);
      }
      free(b), free(v);
      check_all(ctx, idx, &s, dt, pattern, span);
    }
    /* erase everything, then refill */
    {
      void *b;
      rdx_array a = host_keys(dt, s.k, s.n, &b);
      int64_t gone = -1, had = s.n;
      CHECK_OK(ctx, rdx_index_erase(ctx, idx, a, NULL, &gone));
      CHECK_EQ(gone, had);
      s.n = 0;
      free(b);
      check_all(ctx, idx, &s, dt, pattern, span);
      uint64_t v[5] = {3, 3, 0, dt == RDX_U32 ? UINT32_MAX : UINT64_MAX, 77};
      rdx_array r = host_keys(dt, v, 5, &b);
      uint64_t next = rdx_index_next_row(idx);
      CHECK_OK(ctx, rdx_index_insert(ctx, idx, r, rdx_no_array(), NULL));
      for (int i = 0; i < 5; i++) ms_add(&s, v[i], next + (uint64_t)i);
      free(b);
      check_all(ctx, idx, &s, dt, pattern, span);
    }
    rdx_index_destroy(idx);
    free(s.k), free(s.r);
  }
}

/* Every allocation of an insert and of an erase failed in turn: the batch fails, nothing changes. */
static void faults(rdx_context *ctx) {
  if (!CASE_RUN(cgrxu_faults)) return;
  {
    multiset s = {0};
    const int64_t n0 = 2000;
    uint64_t *kv = (uint64_t *)malloc((size_t)n0 * 8);
    for (int64_t i = 0; i < n0; i++) kv[i] = check_below(5000), ms_add(&s, kv[i], (uint64_t)i);
    void *kb;
    rdx_array keys = host_keys(RDX_U64, kv, n0, &kb);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_CGRXU;
    bo.node_bytes = 64;
    rdx_index *idx = NULL;
    rdx_status st = rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx);
    free(kb), free(kv);
    if (st == RDX_ERR_UNSUPPORTED) {
      free(s.k), free(s.r);
      return;
    }
    CHECK_OK(ctx, st);
    for (int erase = 0; erase < 2; erase++) {
      const int64_t m = 3000;
      uint64_t *v = (uint64_t *)malloc((size_t)m * 8);
      for (int64_t i = 0; i < m; i++) v[i] = erase ? check_below(6000) : check_below(7000); /* splits, new slabs */
      void *b;
      rdx_array a = host_keys(RDX_U64, v, m, &b);
      int done = 0;
      for (int64_t nth = 1; nth < 200 && !done; nth++) {
        uint64_t next = rdx_index_next_row(idx);
        rdx_mem_fail_after(ctx, nth);
        int64_t gone = 0;
        st = erase ? rdx_index_erase(ctx, idx, a, NULL, &gone) : rdx_index_insert(ctx, idx, a, rdx_no_array(), NULL);
        rdx_mem_fail_after(ctx, 0);
        if (st == RDX_OK) {
          done = 1;
          if (erase) CHECK_EQ(gone, ms_erase(&s, v, m));
          else
            for (int64_t i = 0; i < m; i++) ms_add(&s, v[i], next + (uint64_t)i);
        } else {
          CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY);
          CHECK_EQ(rdx_index_next_row(idx), next);
        }
        check_all(ctx, idx, &s, RDX_U64, 0, 10000);
      }
      CHECK(done);
      free(b), free(v);
    }
    rdx_index_destroy(idx);
    free(s.k), free(s.r);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  static const int nodes[] = {32, 128, 1024};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++)
      for (int p = 0; p < 3; p++) waves(ctx, d ? RDX_U64 : RDX_U32, nodes[k], p, p == 2 ? 40 : 3000, 8);
  waves(ctx, RDX_U64, 128, 1, 1, 6);
  waves(ctx, RDX_U32, 128, 0, 0, 6);
  faults(ctx);
  return check_end(ctx);
}
