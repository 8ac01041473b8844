/*
 * test_keys_hash_update.c: batch inserts and erases of the hash kind (rdx_index_insert,
 * rdx_index_erase), against the oracle after every batch, on the backend given by --backend.
 *
 * Cases: random interleavings of insert, erase and lookup batches (u32 and u64 keys; implied and
 * given rows, rows too big for a slot; keys repeated in a batch and keys already present; erases
 * of absent and repeated keys), keys 0, the maximum and the values that spell the table's
 * internal words (EMPTY, PENDING, BUSY, flagged directory values); growth through several
 * rehashes with the resident bytes bounded; erasing every key and refilling; many waves of
 * erase and re-insert of the same keys with the table's size unchanged; the cluster compaction
 * of hash_hd.h on a table of its own, checked slot by slot for its invariants and for probe
 * lengths that do not drift over a thousand waves; the ops table's entries against the oracle;
 * all-or-nothing under rdx_mem_fail_after for inserts (new keys only; present keys with rows too
 * big for a slot, the whole batch sorted; new keys mixed with present and repeated ones, only the
 * latter sorted, with given and implied rows and with growth) and erases (with CSR keys); and a
 * memory limit that a batch of mostly new keys fits only when just its present keys are sorted.
 */
#include "core/core.h"
#include "keys/hash_hd.h"
#include "keys_check.h"

/* ---- the expected multiset of (key, row) ---- */

typedef struct model {
  uint64_t *key, *row;
  int64_t n, cap;
  rdx_dtype dt;
} model;

static void model_add(model *m, uint64_t k, uint64_t r) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 1024;
    m->key = (uint64_t *)realloc(m->key, (size_t)m->cap * 8);
    m->row = (uint64_t *)realloc(m->row, (size_t)m->cap * 8);
  }
  m->key[m->n] = k;
  m->row[m->n++] = r;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Remove every pair whose key is in keys[0..n); returns the pairs removed. */
static int64_t model_erase(model *m, const uint64_t *keys, int64_t n) {
  uint64_t *s = (uint64_t *)malloc((size_t)(n + 1) * 8);
  memcpy(s, keys, (size_t)n * 8);
  qsort(s, (size_t)n, 8, cmp_u64);
  int64_t j = 0;
  for (int64_t i = 0; i < m->n; i++) {
    if (bsearch(&m->key[i], s, (size_t)n, 8, cmp_u64)) continue;
    m->key[j] = m->key[i];
    m->row[j++] = m->row[i];
  }
  int64_t gone = m->n - j;
  m->n = j;
  free(s);
  return gone;
}

static uint64_t maxv(rdx_dtype dt) { return dt == RDX_U32 ? UINT32_MAX : UINT64_MAX; }

/* A host array of dtype dt holding v[0..n). */
static rdx_array narrow(const uint64_t *v, int64_t n, rdx_dtype dt) {
  void *p = malloc((size_t)(n + 1) * 8);
  for (int64_t i = 0; i < n; i++) {
    if (dt == RDX_U32) ((uint32_t *)p)[i] = (uint32_t)v[i];
    else ((uint64_t *)p)[i] = v[i];
  }
  return rdx_host_array(p, n, dt);
}

/* Keys that spell the table's internal words, and the ends of the range. */
static int special_keys(rdx_dtype dt, uint64_t *out) {
  int n = 0;
  out[n++] = 0;
  out[n++] = 1;
  out[n++] = maxv(dt);
  out[n++] = maxv(dt) - 1;
  out[n++] = maxv(dt) - 2;
  out[n++] = maxv(dt) - 3;
  out[n++] = dt == RDX_U32 ? RDX_HASH32_FLAG : RDX_HASH64_FLAG;
  out[n++] = dt == RDX_U32 ? RDX_HASH32_ROW_MAX : RDX_HASH64_ROW_MAX;
  out[n++] = dt == RDX_U32 ? (RDX_HASH32_FLAG | 5) : (RDX_HASH64_FLAG | 5);
  out[n++] = dt == RDX_U32 ? RDX_HASH32_V_PENDING : RDX_HASH64_PENDING;
  return n;
}

/* A key from a small universe (so batches meet keys already present), with some specials and
 * some anywhere in the range. */
static uint64_t draw_key(rdx_dtype dt, uint64_t universe) {
  uint64_t sp[16];
  int n_sp = special_keys(dt, sp);
  uint64_t r = check_below(100);
  if (r < 5) return sp[check_below((uint64_t)n_sp)];
  if (r < 15) return check_rand_() & maxv(dt);
  return (check_below(universe) * 0x9E3779B97F4A7C15ull) & maxv(dt);
}

/* Every answer of the index against the model: count, lookups, counts and all rows of the
 * model's keys, random misses and the specials. */
static void check_model(rdx_context *ctx, const rdx_index *idx, const model *m) {
  CHECK_EQ(rdx_index_count(idx), m->n);
  keys_oracle o;
  rdx_array ka = narrow(m->key, m->n, m->dt);
  CHECK(keys_oracle_build(&o, ka, rdx_host_array(m->row, m->n, RDX_U64)));
  free((void *)ka.data);
  int64_t nq = m->n + 64 + 16, j = 0;
  uint64_t *q = (uint64_t *)malloc((size_t)nq * 8);
  for (int64_t i = 0; i < m->n; i++) q[j++] = m->key[i];
  for (int i = 0; i < 64; i++) q[j++] = check_rand_() & maxv(m->dt);
  j += special_keys(m->dt, q + j);
  nq = j;
  rdx_array qa = narrow(q, nq, m->dt);
  uint64_t *out = (uint64_t *)malloc((size_t)nq * 8);
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, qa, rdx_host_array(out, nq, RDX_U64)));
  for (int64_t i = 0; i < nq; i++) {
    uint64_t want = keys_oracle_lookup(&o, q[i]);
    if (out[i] != want) {
      CHECK_FAIL_("lookup of key %llu: row %llu, oracle %llu", (unsigned long long)q[i], (unsigned long long)out[i],
                  (unsigned long long)want);
      break;
    }
  }
  CHECK_OK(ctx, rdx_index_lookup_count(ctx, idx, qa, rdx_host_array(out, nq, RDX_U64)));
  for (int64_t i = 0; i < nq; i++)
    if (out[i] != keys_oracle_count(&o, q[i], q[i])) {
      CHECK_FAIL_("count of key %llu: %llu, oracle %llu", (unsigned long long)q[i], (unsigned long long)out[i],
                  (unsigned long long)keys_oracle_count(&o, q[i], q[i]));
      break;
    }
  rdx_result *r = NULL;
  CHECK_OK(ctx, rdx_index_lookup_alloc(ctx, idx, qa, &r));
  if (r) {
    uint64_t *ho, *hr;
    check_result_host(ctx, r, &ho, &hr);
    kc_check_csr(&o, qa, 0, ho, hr);
    check_result_host_free(r, ho, hr);
    rdx_result_free(ctx, r);
  }
  free(out);
  free(q);
  free((void *)qa.data);
  keys_oracle_free(&o);
}

/* The ops table's entries: every pair sorted by (key, row), as the model's sorted pairs. */
static void check_entries(rdx_context *ctx, const rdx_index *idx, const model *m) {
  if (idx->ops == NULL) {
    CHECK_EQ(m->n, 0);
    return;
  }
  rdx_entries e = {0};
  CHECK_OK(ctx, idx->ops->entries(ctx, (rdx_index *)idx, &e));
  CHECK_EQ(e.n, m->n);
  if (e.n != m->n) return;
  size_t psz = e.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  void *h = malloc((size_t)e.n * psz + 1);
  check_fetch(ctx, h, e.pairs, (size_t)e.n * psz);
  keys_oracle o;
  rdx_array ka = narrow(m->key, m->n, m->dt);
  CHECK(keys_oracle_build(&o, ka, rdx_host_array(m->row, m->n, RDX_U64)));
  free((void *)ka.data);
  for (int64_t i = 0; i < e.n; i++) {
    uint64_t k = e.width == 32 ? ((rdx_pair32 *)h)[i].key : ((rdx_pair64 *)h)[i].key;
    uint64_t r = e.width == 32 ? ((rdx_pair32 *)h)[i].row : ((rdx_pair64 *)h)[i].row;
    if (k != o.keys[i] || r != o.rows[i]) {
      CHECK_FAIL_("entry %lld: (%llu, %llu), oracle (%llu, %llu)", (long long)i, (unsigned long long)k,
                  (unsigned long long)r, (unsigned long long)o.keys[i], (unsigned long long)o.rows[i]);
      break;
    }
  }
  keys_oracle_free(&o);
  free(h);
  rdx_entries_free(ctx, &e);
}

/* Insert n pairs (rows implied when rows == NULL) into both the index and the model. */
static rdx_status do_insert(rdx_context *ctx, rdx_index *idx, model *m, const uint64_t *keys, const uint64_t *rows,
                            int64_t n, rdx_dtype row_dt) {
  uint64_t first = rdx_index_next_row(idx);
  rdx_array ka = narrow(keys, n, m->dt), ra = rows ? narrow(rows, n, row_dt) : rdx_no_array();
  rdx_status st = rdx_index_insert(ctx, idx, ka, ra, NULL);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) model_add(m, keys[i], rows ? rows[i] : first + (uint64_t)i);
  free((void *)ka.data);
  free((void *)ra.data);
  return st;
}

static rdx_status do_erase(rdx_context *ctx, rdx_index *idx, model *m, const uint64_t *keys, int64_t n) {
  rdx_array ka = narrow(keys, n, m->dt);
  int64_t got = -1;
  rdx_status st = rdx_index_erase(ctx, idx, ka, NULL, &got);
  if (st == RDX_OK) CHECK_EQ(got, model_erase(m, keys, n));
  free((void *)ka.data);
  return st;
}

static rdx_index *build_model(rdx_context *ctx, model *m, rdx_dtype dt, const uint64_t *keys, int64_t n, double lf) {
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_HASH;
  bo.load_factor = lf;
  memset(m, 0, sizeof *m);
  m->dt = dt;
  rdx_array ka = narrow(keys, n, dt);
  rdx_index *idx = NULL;
  CHECK_OK(ctx, rdx_index_build(ctx, ka, rdx_no_array(), &bo, &idx));
  for (int64_t i = 0; i < n; i++) model_add(m, keys[i], (uint64_t)i);
  free((void *)ka.data);
  return idx;
}

static void model_free(model *m) {
  free(m->key);
  free(m->row);
  memset(m, 0, sizeof *m);
}

/* A batch of n keys, and maybe rows: given rows are sometimes too big for a slot. */
static void draw_batch(rdx_dtype dt, uint64_t universe, int64_t n, uint64_t *keys, uint64_t *rows, rdx_dtype *row_dt) {
  *row_dt = check_below(2) ? RDX_U64 : RDX_U32;
  for (int64_t i = 0; i < n; i++) {
    keys[i] = draw_key(dt, universe);
    if (i > 0 && check_below(8) == 0) keys[i] = keys[check_below((uint64_t)i)]; /* repeated in the batch */
    uint64_t r = check_below(1000000);
    uint64_t c = check_below(20);
    if (c == 0) r = *row_dt == RDX_U32 ? 0x80000000u + check_below(1000) : (uint64_t)1 << 63 | check_below(1000);
    if (c == 1) r = *row_dt == RDX_U32 ? RDX_HASH32_ROW_MAX : RDX_HASH64_ROW_MAX;
    rows[i] = r;
  }
}

static void hash_update_random(rdx_context *ctx) {
  CASE(hash_update_random);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    for (int round = 0; round < 3; round++) {
      double lf = round == 0 ? 0.5 : round == 1 ? 0.9 : 0.25;
      uint64_t universe = round == 2 ? 300 : 3000;
      int64_t n0 = 1 + (int64_t)check_below(500);
      uint64_t *keys = (uint64_t *)malloc(4096 * 8), *rows = (uint64_t *)malloc(4096 * 8);
      for (int64_t i = 0; i < n0; i++) keys[i] = draw_key(dt, universe);
      model m;
      rdx_index *idx = build_model(ctx, &m, dt, keys, n0, lf);
      for (int step = 0; step < 60 && idx; step++) {
        int64_t n = 1 + (int64_t)check_below(check_below(4) == 0 ? 2000 : 100);
        int failures = check_failures_, given = -1;
        rdx_dtype row_dt = RDX_U64;
        if (check_below(3) != 0) {
          draw_batch(dt, universe, n, keys, rows, &row_dt);
          given = (int)check_below(2);
          CHECK_OK(ctx, do_insert(ctx, idx, &m, keys, given ? rows : NULL, n, row_dt));
        } else {
          for (int64_t i = 0; i < n; i++)
            keys[i] = m.n > 0 && check_below(3) ? m.key[check_below((uint64_t)m.n)] : draw_key(dt, universe);
          CHECK_OK(ctx, do_erase(ctx, idx, &m, keys, n));
        }
        check_model(ctx, idx, &m);
        if (check_failures_ > failures) /* where it went wrong first, for a replay */
          printf("  first difference after step %d of round %d (%s keys, load %.2f): %s of %lld keys%s%s\n", step, round,
                 dt == RDX_U64 ? "u64" : "u32", lf, given < 0 ? "an erase" : "an insert", (long long)n,
                 given < 0 ? "" : given ? ", rows given as " : ", rows implied", given > 0 ? (row_dt == RDX_U64 ? "u64" : "u32") : "");
        if (step % 10 == 9) check_entries(ctx, idx, &m);
      }
      rdx_index_destroy(idx);
      model_free(&m);
      free(keys);
      free(rows);
    }
  }
}

/* One key with many rows, built up over batches and broken up by erases of its neighbours. */
static void hash_update_many_rows(rdx_context *ctx) {
  CASE(hash_update_many_rows);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    uint64_t keys[512], rows[512];
    for (int i = 0; i < 64; i++) keys[i] = (uint64_t)i;
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, 64, 0.5);
    for (int b = 0; b < 20; b++) {
      for (int i = 0; i < 512; i++) {
        keys[i] = i % 3 == 0 ? 7 : i % 3 == 1 ? maxv(dt) : 0;
        rows[i] = check_below(1u << 20);
      }
      CHECK_OK(ctx, do_insert(ctx, idx, &m, keys, b % 2 ? rows : NULL, 512, RDX_U64));
      uint64_t e[3] = {(uint64_t)(10 + b), (uint64_t)(100 + b), 7};
      CHECK_OK(ctx, do_erase(ctx, idx, &m, e, b % 5 == 4 ? 3 : 2));
      check_model(ctx, idx, &m);
    }
    check_entries(ctx, idx, &m);
    rdx_index_destroy(idx);
    model_free(&m);
  }
}

/* Growth from a handful of keys through several rehashes; the table stays within twice what the
 * load factor needs for the keys it holds (plus a window). */
static void hash_update_growth(rdx_context *ctx) {
  CASE(hash_update_growth);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    const double lf = 0.5;
    uint64_t *keys = (uint64_t *)malloc(70000 * 8);
    for (int i = 0; i < 70000; i++) keys[i] = rdx_hash_mix64((uint64_t)i + 1) & maxv(dt);
    keys[1] = 0, keys[2] = maxv(dt);
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, 3, lf);
    int64_t at = 3, prev_bytes = 0, grew = 0;
    for (int64_t n = 4; at + n <= 70000; n *= 2) {
      CHECK_OK(ctx, do_insert(ctx, idx, &m, keys + at, NULL, n, RDX_U64));
      at += n;
      int64_t resident = 0;
      CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &resident, NULL));
      grew += resident > prev_bytes;
      prev_bytes = resident;
      double per_slot = dt == RDX_U32 ? 8 : 16;
      CHECK(resident <= (int64_t)(2.0 * (double)at / lf * per_slot) + 64 + 2 * RDX_HASH_WINDOW_BYTES);
      check_model(ctx, idx, &m);
    }
    CHECK(grew >= 5);
    check_entries(ctx, idx, &m);
    rdx_index_destroy(idx);
    model_free(&m);
    free(keys);
  }
}

/* Erase every key (the index empties), then refill; then erase in halves. */
static void hash_update_erase_all(rdx_context *ctx) {
  CASE(hash_update_erase_all);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    uint64_t keys[3000], rows[3000];
    int64_t n = 0;
    n = special_keys(dt, keys);
    for (; n < 3000; n++) keys[n] = draw_key(dt, 1000);
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, n, 0.5);
    for (int round = 0; round < 3; round++) {
      CHECK_OK(ctx, do_erase(ctx, idx, &m, keys, n));
      CHECK_EQ(m.n, 0);
      check_model(ctx, idx, &m);
      for (int64_t i = 0; i < n; i++) rows[i] = check_below(1u << 30);
      CHECK_OK(ctx, do_insert(ctx, idx, &m, keys, round % 2 ? rows : NULL, n, RDX_U64));
      check_model(ctx, idx, &m);
      CHECK_OK(ctx, do_erase(ctx, idx, &m, keys, n / 2));
      check_model(ctx, idx, &m);
      CHECK_OK(ctx, do_insert(ctx, idx, &m, keys, NULL, n / 2, RDX_U64));
      check_model(ctx, idx, &m);
    }
    rdx_index_destroy(idx);
    model_free(&m);
  }
}

/* Waves of erasing a quarter of the keys and inserting them again: the table never grows, and
 * every answer stays exact. */
static void hash_update_waves(rdx_context *ctx) {
  CASE(hash_update_waves);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    enum { N = 4000, K = 1000 };
    uint64_t *keys = (uint64_t *)malloc(N * 8), *batch = (uint64_t *)malloc(K * 8);
    for (int i = 0; i < N; i++) keys[i] = rdx_hash_mix64((uint64_t)i * 7 + 3) & maxv(dt);
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, N, 0.75);
    /* the first insert after a build may grow the table once; from then on it never does */
    for (int i = 0; i < K; i++) batch[i] = keys[i];
    CHECK_OK(ctx, do_erase(ctx, idx, &m, batch, K));
    CHECK_OK(ctx, do_insert(ctx, idx, &m, batch, NULL, K, RDX_U64));
    int64_t bytes0 = 0, bytes = 0;
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &bytes0, NULL));
    for (int wave = 0; wave < 100; wave++) {
      for (int i = 0; i < K; i++) { /* K distinct keys: a partial shuffle */
        int j = i + (int)check_below(N - i);
        uint64_t x = keys[i];
        keys[i] = keys[j];
        keys[j] = x;
        batch[i] = keys[i];
      }
      CHECK_OK(ctx, do_erase(ctx, idx, &m, batch, K));
      CHECK_OK(ctx, do_insert(ctx, idx, &m, batch, NULL, K, RDX_U64));
      CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &bytes, NULL));
      if (wave % 10 == 0 || bytes != bytes0) check_model(ctx, idx, &m);
    }
    CHECK_EQ(bytes, bytes0);
    rdx_index_destroy(idx);
    model_free(&m);
    free(keys);
    free(batch);
  }
}

/* ---- hash_hd.h's compaction on a table of the test's own ---- */

/* Invariants (W) and (P) of every slot, and the total displacement (windows from home). */
static int64_t table_check(const uint64_t *t, const rdx_hash_layout *L, int64_t n_keys) {
  int64_t disp = 0, seen = 0;
  for (uint64_t w = 0; w < L->n_windows; w++) {
    int empty_seen = 0;
    for (int i = 0; i < L->slots; i++) {
      uint64_t k, v;
      rdx_hash_get(t, L, w * (uint64_t)L->slots + (uint64_t)i, &k, &v);
      if (rdx_hash_is_empty(L, v)) {
        empty_seen = 1;
        continue;
      }
      if (empty_seen) CHECK_FAIL_("window %llu: occupied slot %d after an empty one", (unsigned long long)w, i);
      CHECK(!rdx_hash_is_mark(L, v));
      seen++;
      uint64_t h = rdx_hash_home(L, k), d = (w + L->n_windows - h) % L->n_windows;
      disp += (int64_t)d;
      for (uint64_t x = h; x != w; x = rdx_hash_next(L, x))
        if (!rdx_hash_full(t, L, x)) {
          CHECK_FAIL_("key %llu in window %llu: window %llu on its way is not full", (unsigned long long)k,
                      (unsigned long long)w, (unsigned long long)x);
          break;
        }
    }
  }
  CHECK_EQ(seen, n_keys);
  return disp;
}

static void hash_update_compaction(rdx_context *ctx) {
  CASE(hash_update_compaction);
  (void)ctx;
  for (int bits = 32; bits <= 64; bits += 32) {
    const double lf = 0.8;
    enum { N = 3000, K = 300 };
    rdx_hash_layout L;
    CHECK(rdx_hash_plan(&L, N, bits, lf) == 0);
    size_t bytes = (size_t)L.n_windows * RDX_HASH_WINDOW_BYTES;
    uint64_t *t = (uint64_t *)malloc(bytes), *fresh = (uint64_t *)malloc(bytes);
    uint64_t *live = (uint64_t *)malloc(N * 8), next = 1;
    memset(t, 0xFF, bytes);
    for (int i = 0; i < N; i++) {
      live[i] = rdx_hash_mix64(next++) & (bits == 32 ? UINT32_MAX : UINT64_MAX);
      CHECK(rdx_hash_place(t, &L, live[i], (uint64_t)i));
    }
    int64_t disp0 = table_check(t, &L, N), worst = 0;
    for (int wave = 0; wave < 1000; wave++) {
      /* mark K keys, compact their clusters (owners first, as the backends do), put K new ones */
      int picked[K];
      for (int j = 0; j < K; j++) {
        int i;
        uint64_t v;
        int64_t s;
        do {
          i = (int)check_below(N);
          s = bits == 32 ? rdx_hash_find32(t, &L, (uint32_t)live[i], (uint32_t *)&v)
                         : rdx_hash_find64(t, &L, live[i], &v);
          if (bits == 32) v &= 0xFFFFFFFFu;
        } while (s < 0 || rdx_hash_is_mark(&L, v));
        picked[j] = i;
        rdx_hash_set(t, &L, (uint64_t)s, live[i], rdx_hash_mark_value(&L));
      }
      uint64_t owners[K];
      int n_own = 0;
      for (uint64_t s = 0; s < L.n_windows * (uint64_t)L.slots; s++) {
        uint64_t k, v;
        rdx_hash_get(t, &L, s, &k, &v);
        if (rdx_hash_is_mark(&L, v) && rdx_hash_owns_cluster(t, &L, s))
          owners[n_own++] = rdx_hash_cluster_start(t, &L, rdx_hash_home(&L, k));
      }
      int64_t removed = 0;
      for (int o = 0; o < n_own; o++) removed += rdx_hash_compact_cluster(t, &L, owners[o]);
      CHECK_EQ(removed, K);
      for (int j = 0; j < K; j++) {
        live[picked[j]] = rdx_hash_mix64(next++) & (bits == 32 ? UINT32_MAX : UINT64_MAX);
        CHECK(rdx_hash_place(t, &L, live[picked[j]], (uint64_t)picked[j]));
      }
      int64_t disp = table_check(t, &L, N);
      if (wave % 100 == 99) {
        /* the same keys inserted into a fresh table: the updated one probes no further */
        memset(fresh, 0xFF, bytes);
        for (int i = 0; i < N; i++) rdx_hash_place(fresh, &L, live[i], (uint64_t)i);
        int64_t want = table_check(fresh, &L, N);
        if (disp > want + want / 4 + 8)
          CHECK_FAIL_("wave %d: displacement %lld, a fresh table's %lld", wave, (long long)disp, (long long)want);
      }
      if (disp > worst) worst = disp;
      if (check_failures_) break;
    }
    printf("compaction, %d-bit keys at load %.2f: total displacement %lld after the build, at most %lld over 1000 waves\n",
           bits, lf, (long long)disp0, (long long)worst);
    free(t);
    free(fresh);
    free(live);
  }
}

/* ---- all or nothing ---- */

static int is_oom(rdx_status st) { return st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY; }

/* Run op with the nth allocation failing for nth = 1, 2, ... until it succeeds; after each
 * failure the index must answer exactly as the model says (the model changes only on success). */
typedef rdx_status (*op_fn)(rdx_context *, rdx_index *, model *, void *);

typedef struct op_arg {
  const uint64_t *keys, *rows;
  int64_t n;
} op_arg;

static rdx_status op_insert(rdx_context *ctx, rdx_index *idx, model *m, void *a) {
  op_arg *o = (op_arg *)a;
  return do_insert(ctx, idx, m, o->keys, o->rows, o->n, RDX_U64);
}
static rdx_status op_erase(rdx_context *ctx, rdx_index *idx, model *m, void *a) {
  op_arg *o = (op_arg *)a;
  return do_erase(ctx, idx, m, o->keys, o->n);
}

/* Returns the failures walked: the allocations op made before it succeeded. */
static int fault_walk(rdx_context *ctx, rdx_index *idx, model *m, op_fn op, void *arg, const char *what) {
  int64_t base = 0, now = 0;
  int n_fail = 0;
  uint64_t next = rdx_index_next_row(idx);
  rdx_context_memory(ctx, &base, NULL);
  for (int64_t nth = 1; nth < 1000; nth++) {
    rdx_mem_fail_after(ctx, nth);
    rdx_status st = op(ctx, idx, m, arg);
    rdx_mem_fail_after(ctx, 0);
    if (st == RDX_OK) break;
    n_fail++;
    if (!is_oom(st)) CHECK_FAIL_("%s with allocation %lld failing returned %s (%s)", what, (long long)nth,
                                 rdx_status_name(st), rdx_context_message(ctx));
    rdx_context_memory(ctx, &now, NULL);
    CHECK_EQ(now, base);
    CHECK_EQ(rdx_index_next_row(idx), next);
    check_model(ctx, idx, m);
    if (check_failures_) return n_fail;
  }
  CHECK(n_fail >= 1);
  check_model(ctx, idx, m);
  return n_fail;
}

/* A batch of n_new keys from fresh[], then, one pair in four, a copy of one of those new keys or a
 * key from present[] (n_present of them), shuffled; rows fit a slot. */
static int64_t mixed_batch(const uint64_t *fresh, int64_t n_new, const uint64_t *present, int64_t n_present,
                           uint64_t *out, uint64_t *rows) {
  int64_t n = 0;
  for (int64_t i = 0; i < n_new; i++) {
    out[n++] = fresh[i];
    if (i % 4 == 1) out[n++] = fresh[check_below((uint64_t)i + 1)];               /* a new key again */
    if (i % 4 == 3) out[n++] = present[check_below((uint64_t)n_present)];         /* a key present */
  }
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)check_below((uint64_t)i + 1);
    uint64_t x = out[i];
    out[i] = out[j];
    out[j] = x;
  }
  for (int64_t i = 0; i < n; i++) rows[i] = (uint64_t)i * 5 + 1;
  return n;
}

static void hash_update_faults(rdx_context *ctx) {
  CASE(hash_update_faults);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    enum { N = 2000 };
    uint64_t *keys = (uint64_t *)malloc(9 * N * 8), *rows = (uint64_t *)malloc(5 * N * 8);
    uint64_t *batch = (uint64_t *)malloc(5 * N * 8); /* mixed_batch makes 1.5 pairs per new key */
    for (int i = 0; i < 9 * N; i++) keys[i] = rdx_hash_mix64((uint64_t)i + 11) & maxv(dt);
    for (int i = 0; i < N; i += 10) keys[i + 1] = keys[i]; /* some keys with two rows: the CSR */
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, N, 0.5);
    op_arg a;
    /* growth with new unique keys (the first insert after a build grows) */
    a.keys = keys + N, a.rows = NULL, a.n = N;
    fault_walk(ctx, idx, &m, op_insert, &a, "insert with growth");
    /* new unique keys into room: the one-pass path */
    a.keys = keys + 2 * N, a.rows = NULL, a.n = N / 4;
    fault_walk(ctx, idx, &m, op_insert, &a, "insert of new keys");
    /* keys present and repeated, rows too big for a slot: the whole batch sorted */
    for (int i = 0; i < N / 4; i++) rows[i] = i % 7 == 0 ? (uint64_t)1 << 63 | (uint64_t)i : (uint64_t)i * 3;
    uint64_t *mixed = (uint64_t *)malloc(N / 4 * 8);
    for (int i = 0; i < N / 4; i++) mixed[i] = i % 2 ? keys[check_below(2 * N)] : keys[3 * N + i];
    a.keys = mixed, a.rows = rows, a.n = N / 4;
    fault_walk(ctx, idx, &m, op_insert, &a, "insert of present keys");
    /* new keys, new keys repeated, keys present with a direct row (keys[N..2N)) and with CSR rows
     * (keys[10 i]), rows that fit: the pass's puts stay and the pairs whose key was present are
     * sorted in; a failure at their allocations must take the puts out again. Given rows, then
     * implied ones. */
    uint64_t present[2 * (N / 10)];
    for (int i = 0; i < N / 10; i++) present[2 * i] = keys[10 * i], present[2 * i + 1] = keys[N + 10 * i + 3];
    a.keys = batch, a.rows = rows;
    a.n = mixed_batch(keys + 4 * N, N / 2, present, 2 * (N / 10), batch, rows);
    int walked = fault_walk(ctx, idx, &m, op_insert, &a, "insert of new and present keys");
    CHECK(walked >= 3); /* the pass's state, the pairs of keys present, their sort */
    a.keys = batch, a.rows = NULL;
    a.n = mixed_batch(keys + 5 * N, N / 2, present, 2 * (N / 10), batch, rows);
    fault_walk(ctx, idx, &m, op_insert, &a, "insert of new and present keys, implied rows");
    /* the same kind of batch, big enough to grow the table: the pass runs on the new table, and a
     * failure after it frees that table */
    a.keys = batch, a.rows = rows;
    a.n = mixed_batch(keys + 6 * N, 3 * N, present, 2 * (N / 10), batch, rows);
    int64_t bytes0 = 0, bytes1 = 0;
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &bytes0, NULL));
    fault_walk(ctx, idx, &m, op_insert, &a, "insert of new and present keys with growth");
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &bytes1, NULL));
    CHECK(bytes1 > bytes0);
    /* erase keys with one row, several rows, absent ones and repeats */
    for (int i = 0; i < N / 4; i++) mixed[i] = i % 3 == 0 ? keys[check_below(9 * N)] : keys[check_below(N)];
    a.keys = mixed, a.rows = NULL, a.n = N / 4;
    fault_walk(ctx, idx, &m, op_erase, &a, "erase");
    check_entries(ctx, idx, &m);
    rdx_index_destroy(idx);
    model_free(&m);
    free(mixed);
    free(batch);
    free(keys);
    free(rows);
  }
}

/* Coverage of the insert's paths, seen through memory: a large batch of new keys with some keys
 * present and some repeated, rows fitting a slot, goes in under a memory limit that leaves room
 * for the batch's staging and one state byte per pair but not for sorting the batch, since only
 * the pairs whose key was present are sorted; the same batch with one row too big for a slot,
 * which sorts the whole batch, fails under that limit with the index unchanged. */
static void hash_update_present_budget(rdx_context *ctx) {
  CASE(hash_update_present_budget);
  for (int dt_i = 0; dt_i < 2; dt_i++) {
    rdx_dtype dt = dt_i ? RDX_U64 : RDX_U32;
    enum { N = 1 << 17 };
    const int64_t ksz = dt == RDX_U32 ? 4 : 8;
    uint64_t *keys = (uint64_t *)malloc(2 * (size_t)N * 8), *batch = (uint64_t *)malloc((size_t)N * 8);
    uint64_t *rows = (uint64_t *)malloc((size_t)N * 8);
    for (int64_t i = 0; i < 2 * N; i++) keys[i] = rdx_hash_mix64((uint64_t)i + 77) & maxv(dt);
    model m;
    rdx_index *idx = build_model(ctx, &m, dt, keys, 2 * N, 0.5);
    CHECK_OK(ctx, do_erase(ctx, idx, &m, keys + N, N)); /* a table with room for N keys more */
    for (int64_t i = 0; i < N; i++) {
      batch[i] = keys[N + i];
      rows[i] = (uint64_t)i;
    }
    for (int64_t i = 0; i < 64; i++) {
      batch[i * 1024 + 5] = keys[i * 97];            /* present */
      batch[i * 1024 + 9] = batch[i * 1024 + 700];   /* a new key twice */
    }
    int64_t in_use = 0, after = 0;
    rdx_context_memory(ctx, &in_use, NULL);
    int64_t budget = in_use + N * (ksz + 8 + 1) + (512 << 10); /* sorting the whole batch (pairs of width 64) takes 16 N more */
    rows[N / 2] = (uint64_t)1 << 63;
    CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, budget));
    rdx_status st = do_insert(ctx, idx, &m, batch, rows, N, RDX_U64);
    CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, 0));
    if (!is_oom(st))
      CHECK_FAIL_("a row too big for a slot under the limit: %s, not out of memory", rdx_status_name(st));
    rdx_context_memory(ctx, &after, NULL);
    CHECK_EQ(after, in_use);
    check_model(ctx, idx, &m);
    rows[N / 2] = N / 2;
    CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, budget));
    st = do_insert(ctx, idx, &m, batch, rows, N, RDX_U64);
    if (st != RDX_OK)
      CHECK_FAIL_("new and present keys under the limit: %s (%s)", rdx_status_name(st), rdx_context_message(ctx));
    CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, 0));
    check_model(ctx, idx, &m);
    rdx_index_destroy(idx);
    model_free(&m);
    free(keys);
    free(batch);
    free(rows);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  hash_update_compaction(ctx);
  hash_update_random(ctx);
  hash_update_many_rows(ctx);
  hash_update_growth(ctx);
  hash_update_erase_all(ctx);
  hash_update_waves(ctx);
  hash_update_faults(ctx);
  hash_update_present_budget(ctx);
  return check_end(ctx);
}
