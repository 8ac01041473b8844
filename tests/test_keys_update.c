/*
 * test_keys_update.c: batch updates of key indexes (rdx_index_insert, rdx_index_erase,
 * rdx_index_next_row) against the oracle, for the backend given by --backend.
 *
 * The test keeps the expected multiset of (key, row) pairs itself and rebuilds a keys_oracle from
 * it after every batch; each batch is followed by lookups, all-match lookups and ranges checked
 * against that oracle. Cases: random interleavings of inserts and erases (u32 and u64 keys;
 * implied, u32 and u64 rows, a u32 index getting rows >= 2^32; duplicate inserts; absent erase
 * keys; keys 0 and the maximum; inserts below the minimum and above the maximum key); erasing
 * every key and refilling; rx and cgrx refusing a batch without RDX_UPDATE_REBUILD with the index
 * unchanged; and fault injection: every allocation of an insert and an erase fails in turn, and
 * each failure is out-of-memory with every answer and the memory held exactly as before.
 *
 * Kinds are one table: a kind that lands later is one line there.
 */
#include "core/core.h"
#include "keys_check.h"

typedef struct kind_case {
  rdx_kind kind;
  int rebuild; /* 1: updates need RDX_UPDATE_REBUILD (rx, cgrx), refused without it */
} kind_case;

static const kind_case kinds[] = {
    {RDX_KIND_SCAN, 0},
    {RDX_KIND_SORTED, 0},
    {RDX_KIND_BTREE, 0},
    {RDX_KIND_RX, 1},
    {RDX_KIND_CGRX, 1},
    {RDX_KIND_HASH, 0},
    {RDX_KIND_CGRXU, 0},
};

/* ---- the expected multiset ---- */

typedef struct model {
  rdx_dtype dt;
  uint64_t maxv;
  uint64_t *keys, *rows;
  int64_t n, cap;
} model;

static void model_add(model *m, uint64_t k, uint64_t r) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 1024;
    m->keys = (uint64_t *)realloc(m->keys, (size_t)m->cap * 8);
    m->rows = (uint64_t *)realloc(m->rows, (size_t)m->cap * 8);
  }
  m->keys[m->n] = k;
  m->rows[m->n++] = r;
}

static int64_t model_erase(model *m, const uint64_t *keys, int64_t c) {
  int64_t o = 0;
  for (int64_t i = 0; i < m->n; i++) {
    int hit = 0;
    for (int64_t j = 0; j < c && !hit; j++) hit = keys[j] == m->keys[i];
    if (!hit) m->keys[o] = m->keys[i], m->rows[o++] = m->rows[i];
  }
  int64_t gone = m->n - o;
  m->n = o;
  return gone;
}

static void model_free(model *m) {
  free(m->keys);
  free(m->rows);
  memset(m, 0, sizeof *m);
}

static void put(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

/* A host array of dtype dt holding v[0, n). */
static rdx_array host_copy(const uint64_t *v, int64_t n, rdx_dtype dt) {
  rdx_array a = rdx_host_array(malloc((size_t)(n + 1) * 8), n, dt);
  for (int64_t i = 0; i < n; i++) put(a, i, v[i]);
  return a;
}

/* ---- checks of an index against the model ---- */

typedef struct probe {
  rdx_array q, b; /* point queries, (lo, hi) bounds */
} probe;

static uint64_t draw_key(const model *m, int mode);

static probe make_probe(const model *m, int64_t nq, int64_t nb) {
  probe p;
  uint64_t *q = (uint64_t *)malloc((size_t)(nq + 1) * 8), *b = (uint64_t *)malloc((size_t)(2 * nb + 1) * 8);
  for (int64_t i = 0; i < nq; i++) q[i] = m->n > 0 && i % 2 ? m->keys[check_below((uint64_t)m->n)] : draw_key(m, (int)(i % 4));
  for (int64_t i = 0; i < nb; i++) {
    uint64_t lo = m->n > 0 && i % 2 ? m->keys[check_below((uint64_t)m->n)] : draw_key(m, (int)(i % 4));
    uint64_t w = i % 5 == 0 ? m->maxv : check_below(i % 5 == 1 ? m->maxv : 5000);
    uint64_t hi = m->maxv - lo < w ? m->maxv : lo + w;
    if (i % 7 == 3) hi = lo, lo = hi + (hi < m->maxv); /* lo > hi now and then: empty */
    b[2 * i] = lo;
    b[2 * i + 1] = hi;
  }
  p.q = host_copy(q, nq, m->dt);
  p.b = host_copy(b, 2 * nb, m->dt);
  p.b = rdx_host_matrix((void *)p.b.data, nb, 2, m->dt);
  free(q);
  free(b);
  return p;
}
static void probe_free(probe *p) {
  free((void *)p->q.data);
  free((void *)p->b.data);
}

/* The index answers every probe as the model does: count, lookups, all matches, ranges. */
static void check_index(rdx_context *ctx, const rdx_index *idx, const model *m, const char *when) {
  int before = check_failures_;
  CHECK_EQ(rdx_index_count(idx), m->n);
  rdx_array ka = host_copy(m->keys, m->n, m->dt), ra = rdx_host_array(m->rows, m->n, RDX_U64);
  keys_oracle o;
  CHECK(keys_oracle_build(&o, ka, ra));
  probe p = make_probe(m, 200, 60);
  int64_t nq = p.q.count;
  uint64_t *out = (uint64_t *)malloc((size_t)(nq + 1) * 8);
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, p.q, rdx_host_array(out, nq, RDX_U64)));
  for (int64_t i = 0; i < nq; i++) {
    uint64_t want = keys_oracle_lookup(&o, kc_at(p.q, i));
    if (out[i] != want) {
      CHECK_FAIL_("%s: lookup of key %llu: row %llu, oracle %llu", when, (unsigned long long)kc_at(p.q, i),
                  (unsigned long long)out[i], (unsigned long long)want);
      break;
    }
  }
  rdx_result *r = NULL;
  CHECK_OK(ctx, rdx_index_lookup_alloc(ctx, idx, p.q, &r));
  if (r) {
    uint64_t *ho, *hr;
    check_result_host(ctx, r, &ho, &hr);
    kc_check_csr(&o, p.q, 0, ho, hr);
    check_result_host_free(r, ho, hr);
    rdx_result_free(ctx, r);
  }
  if (rdx_index_kind(idx) != RDX_KIND_HASH) kc_check_range_alloc(ctx, idx, &o, p.b);
  if (check_failures_ != before) fprintf(stderr, "  (after %s, %lld pairs)\n", when, (long long)m->n);
  free(out);
  probe_free(&p);
  keys_oracle_free(&o);
  free((void *)ka.data);
}

/* Answers of an index to fixed probes, to compare before and after a failed batch. */
typedef struct answers {
  uint64_t *look;
  uint64_t *counts;
} answers;

static answers take_answers(rdx_context *ctx, const rdx_index *idx, const probe *p) {
  answers a;
  a.look = (uint64_t *)calloc((size_t)p->q.count + 1, 8);
  const int64_t nc = p->q.count > p->b.count ? p->q.count : p->b.count;
  a.counts = (uint64_t *)calloc((size_t)nc + 1, 8);
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, p->q, rdx_host_array(a.look, p->q.count, RDX_U64)));
  if (rdx_index_kind(idx) == RDX_KIND_HASH) /* point lookups only: the counts of the lookups instead */
    CHECK_OK(ctx, rdx_index_lookup_count(ctx, idx, p->q, rdx_host_array(a.counts, p->q.count, RDX_U64)));
  else
    CHECK_OK(ctx, rdx_index_range_count(ctx, idx, p->b, rdx_host_array(a.counts, p->b.count, RDX_U64)));
  return a;
}
static int same_answers(const answers *x, const answers *y, const probe *p) {
  const int64_t nc = p->q.count > p->b.count ? p->q.count : p->b.count;
  return memcmp(x->look, y->look, (size_t)p->q.count * 8) == 0 && memcmp(x->counts, y->counts, (size_t)nc * 8) == 0;
}
static void answers_free(answers *a) {
  free(a->look);
  free(a->counts);
}

/* ---- batches ---- */

/* A key: mode 0 any value, 1 a small domain (duplicates), 2 the extremes (0, 1, max - 1, max),
 * 3 below the smallest or above the largest key of the model. */
static uint64_t draw_key(const model *m, int mode) {
  uint64_t any = check_below(m->maxv == UINT64_MAX ? 0 : m->maxv + 1);
  switch (mode) {
    case 1: return check_below(300) * 7919u;
    case 2: {
      uint64_t e[4] = {0, 1, m->maxv - 1, m->maxv};
      return e[check_below(4)];
    }
    case 3: {
      if (m->n == 0) return any;
      uint64_t lo = m->keys[0], hi = lo;
      for (int64_t i = 1; i < m->n; i++) lo = m->keys[i] < lo ? m->keys[i] : lo, hi = m->keys[i] > hi ? m->keys[i] : hi;
      if (check_below(2) && lo > 0) return check_below(lo);
      return hi == m->maxv ? hi : hi + 1 + check_below(m->maxv - hi);
    }
    default: return any;
  }
}

static rdx_update_options upd(int rebuild) {
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  o.flags = rebuild ? RDX_UPDATE_REBUILD : 0;
  return o;
}

/* The arrays of one insert batch. row_mode: 0 implied, 1 u32 rows, 2 u64 rows >= 2^32, 3 u64
 * rows below 2^32. The rows the batch will get go into rows_out. */
typedef struct batch {
  rdx_array keys, rows;
  uint64_t *k, *r; /* the pairs as u64 */
  int64_t n;
} batch;

static batch make_batch(const model *m, int64_t n, int key_mode, int row_mode, uint64_t next_row) {
  batch b;
  b.n = n;
  b.k = (uint64_t *)malloc((size_t)(n + 1) * 8);
  b.r = (uint64_t *)malloc((size_t)(n + 1) * 8);
  for (int64_t i = 0; i < n; i++) {
    b.k[i] = draw_key(m, key_mode < 0 ? (int)check_below(4) : key_mode);
    if (i > 0 && check_below(8) == 0) b.k[i] = b.k[check_below((uint64_t)i)]; /* repeats within the batch */
    if (row_mode == 0) b.r[i] = next_row + (uint64_t)i;
    else if (row_mode == 1) b.r[i] = check_below((uint64_t)1 << 31);
    else if (row_mode == 2) b.r[i] = ((uint64_t)1 << 32) + check_below((uint64_t)1 << 40);
    else b.r[i] = check_below((uint64_t)1 << 32);
  }
  b.keys = host_copy(b.k, n, m->dt);
  b.rows = row_mode == 0 ? rdx_no_array() : host_copy(b.r, n, row_mode == 1 ? RDX_U32 : RDX_U64);
  return b;
}
static void batch_free(batch *b) {
  free((void *)b->keys.data);
  free((void *)b->rows.data);
  free(b->k);
  free(b->r);
}

/* Insert b; on a GPU context, from device memory half the time. */
static rdx_status insert(rdx_context *ctx, rdx_index *idx, const batch *b, const rdx_update_options *o) {
  int dev = kc_gpu(ctx) && check_below(2);
  rdx_array k = dev ? kc_to_device(ctx, b->keys) : b->keys, r = dev ? kc_to_device(ctx, b->rows) : b->rows;
  rdx_status st = rdx_index_insert(ctx, idx, k, r, o);
  kc_free_device(ctx, k);
  kc_free_device(ctx, r);
  return st;
}
static rdx_status erase(rdx_context *ctx, rdx_index *idx, rdx_array keys, const rdx_update_options *o, int64_t *gone) {
  int dev = kc_gpu(ctx) && check_below(2);
  rdx_array k = dev ? kc_to_device(ctx, keys) : keys;
  rdx_status st = rdx_index_erase(ctx, idx, k, o, gone);
  kc_free_device(ctx, k);
  return st;
}

/* Build a kind over the model's pairs (rows given) or, with n == 0, an empty index. Returns NULL
 * when the kind is not on this backend (or not known to this build). */
static rdx_index *build(rdx_context *ctx, const kind_case *kc, const model *m) {
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kc->kind;
  rdx_array ka = host_copy(m->keys, m->n, m->dt), ra = rdx_host_array(m->rows, m->n, RDX_U64);
  rdx_index *idx = NULL;
  rdx_status st = rdx_index_build(ctx, ka, m->n ? ra : rdx_no_array(), &bo, &idx);
  free((void *)ka.data);
  if (st == RDX_ERR_UNSUPPORTED || st == RDX_ERR_INVALID_ARGUMENT) return NULL;
  CHECK_OK(ctx, st);
  return idx;
}

/* The first insert tells whether the kind takes updates yet: an "in progress" refusal skips it. */
static int in_progress(rdx_context *ctx, rdx_status st) {
  return st == RDX_ERR_UNSUPPORTED && strstr(rdx_context_message(ctx), "in progress") != NULL;
}

/* ---- cases ---- */

/* Random interleavings of inserts and erases, every answer checked after each batch. */
static void update_random(rdx_context *ctx, const kind_case *kc, rdx_dtype dt) {
  model m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  int64_t n0 = check_below(3) == 0 ? 0 : (int64_t)check_below(2000) + 1;
  for (int64_t i = 0; i < n0; i++) model_add(&m, draw_key(&m, (int)check_below(3)), (uint64_t)i);
  rdx_index *idx = build(ctx, kc, &m);
  if (idx == NULL) {
    model_free(&m);
    return;
  }
  uint64_t next = (uint64_t)n0;
  CHECK_EQ(rdx_index_next_row(idx), next);
  rdx_update_options o = upd(kc->rebuild);
  check_index(ctx, idx, &m, "build");
  for (int round = 0; round < 24; round++) {
    char when[64];
    if (check_below(5) < 3) { /* insert */
      int row_mode = (int)check_below(4);
      int64_t n = 1 + (int64_t)check_below(check_below(4) == 0 ? 1500 : 120);
      batch b = make_batch(&m, n, check_below(2) ? -1 : (int)check_below(4), row_mode, next);
      if (check_below(6) == 0 && m.n > 0) /* pairs already in the index, added again */
        for (int64_t i = 0; i < n && i < m.n; i++) {
          int64_t j = (int64_t)check_below((uint64_t)m.n);
          b.k[i] = m.keys[j];
          put(b.keys, i, m.keys[j]);
          if (row_mode != 0) b.r[i] = m.rows[j] & (row_mode == 1 ? 0x7FFFFFFFu : ~0ull), put(b.rows, i, b.r[i]);
        }
      rdx_status st = insert(ctx, idx, &b, &o);
      if (in_progress(ctx, st)) {
        batch_free(&b);
        break;
      }
      CHECK_OK(ctx, st);
      if (st == RDX_OK) {
        for (int64_t i = 0; i < n; i++) model_add(&m, b.k[i], b.r[i]);
        next += (uint64_t)n;
      }
      snprintf(when, sizeof when, "insert of %lld (rows %d) in round %d", (long long)n, row_mode, round);
      batch_free(&b);
    } else { /* erase: present keys, absent ones, repeats */
      int64_t c = 1 + (int64_t)check_below(check_below(4) == 0 ? 400 : 40);
      uint64_t *k = (uint64_t *)malloc((size_t)c * 8);
      for (int64_t i = 0; i < c; i++)
        k[i] = m.n > 0 && check_below(3) ? m.keys[check_below((uint64_t)m.n)] : draw_key(&m, (int)check_below(4));
      rdx_array ka = host_copy(k, c, dt);
      int64_t gone = -1;
      rdx_status st = erase(ctx, idx, ka, &o, &gone);
      CHECK_OK(ctx, st);
      if (st == RDX_OK) CHECK_EQ(gone, model_erase(&m, k, c));
      snprintf(when, sizeof when, "erase of %lld keys in round %d", (long long)c, round);
      free((void *)ka.data);
      free(k);
    }
    CHECK_EQ(rdx_index_next_row(idx), next);
    check_index(ctx, idx, &m, when);
  }
  rdx_index_destroy(idx);
  model_free(&m);
}

/* Erase every key (the index empties), then refill it with implied rows that go on counting. */
static void update_erase_all_refill(rdx_context *ctx, const kind_case *kc, rdx_dtype dt) {
  model m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  for (int64_t i = 0; i < 700; i++) model_add(&m, i % 3 == 0 ? m.maxv - (uint64_t)(i % 5) : (uint64_t)(i % 250), (uint64_t)i);
  rdx_index *idx = build(ctx, kc, &m);
  if (idx == NULL) {
    model_free(&m);
    return;
  }
  rdx_update_options o = upd(kc->rebuild);
  for (int pass = 0; pass < 2; pass++) {
    rdx_array ka = host_copy(m.keys, m.n, dt);
    int64_t gone = -1, had = m.n;
    rdx_status st = erase(ctx, idx, ka, &o, &gone);
    free((void *)ka.data);
    if (in_progress(ctx, st)) break;
    CHECK_OK(ctx, st);
    CHECK_EQ(gone, had);
    m.n = 0;
    CHECK_EQ(rdx_index_count(idx), 0);
    check_index(ctx, idx, &m, "erasing every key");
    /* erasing from the empty index, then refilling it */
    uint64_t zero = 0;
    CHECK_OK(ctx, rdx_index_erase(ctx, idx, rdx_host_array(&zero, 1, dt), &o, &gone));
    CHECK_EQ(gone, 0);
    uint64_t next = rdx_index_next_row(idx);
    CHECK_EQ(next, 700 + (uint64_t)pass * 300);
    batch b = make_batch(&m, 300, 2, 0, next);
    CHECK_OK(ctx, insert(ctx, idx, &b, &o));
    for (int64_t i = 0; i < b.n; i++) model_add(&m, b.k[i], b.r[i]);
    batch_free(&b);
    CHECK_EQ(rdx_index_next_row(idx), next + 300);
    check_index(ctx, idx, &m, "refilling");
  }
  rdx_index_destroy(idx);
  model_free(&m);
}

/* rx and cgrx without RDX_UPDATE_REBUILD: RDX_ERR_UNSUPPORTED, the index exactly as before. */
static void update_refused(rdx_context *ctx, const kind_case *kc, rdx_dtype dt) {
  model m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  for (int64_t i = 0; i < 500; i++) model_add(&m, draw_key(&m, 1), (uint64_t)i);
  rdx_index *idx = build(ctx, kc, &m);
  if (idx == NULL) {
    model_free(&m);
    return;
  }
  batch b = make_batch(&m, 50, 1, 0, 500);
  CHECK_STATUS(ctx, insert(ctx, idx, &b, NULL), RDX_ERR_UNSUPPORTED);
  CHECK(strstr(rdx_context_message(ctx), "RDX_UPDATE_REBUILD") != NULL);
  int64_t gone = -1;
  CHECK_STATUS(ctx, erase(ctx, idx, b.keys, NULL, &gone), RDX_ERR_UNSUPPORTED);
  CHECK_EQ(rdx_index_next_row(idx), 500);
  check_index(ctx, idx, &m, "refused batches");
  batch_free(&b);
  rdx_index_destroy(idx);
  model_free(&m);
}

static int is_oom(rdx_status st) { return st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY; }

/* Every allocation of an insert, then of an erase, fails in turn: out of memory each time, and
 * the index answers as before and holds the same bytes; then the batch goes through. */
static void update_faults(rdx_context *ctx, const kind_case *kc, rdx_dtype dt) {
  model m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  for (int64_t i = 0; i < 1500; i++) model_add(&m, draw_key(&m, (int)check_below(3)), (uint64_t)i);
  rdx_index *idx = build(ctx, kc, &m);
  if (idx == NULL) {
    model_free(&m);
    return;
  }
  rdx_update_options o = upd(kc->rebuild);
  probe p = make_probe(&m, 150, 40);
  for (int op = 0; op < 3; op++) { /* implied rows; u64 rows >= 2^32 (a u32 index widens); erase */
    answers want = take_answers(ctx, idx, &p);
    int64_t held = 0, in_use = 0, now = 0;
    CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &held, NULL));
    rdx_context_memory(ctx, &in_use, NULL);
    batch b = make_batch(&m, 200, -1, op == 1 ? 2 : 0, rdx_index_next_row(idx));
    rdx_array ek = host_copy(m.keys, 100, dt);
    rdx_status st = RDX_OK;
    int n_fail = 0;
    for (int64_t nth = 1; nth < 1000; nth++) {
      int64_t gone = -1;
      uint64_t next = rdx_index_next_row(idx);
      rdx_mem_fail_after(ctx, nth);
      st = op < 2 ? rdx_index_insert(ctx, idx, b.keys, b.rows, &o) : rdx_index_erase(ctx, idx, ek, &o, &gone);
      rdx_mem_fail_after(ctx, 0);
      if (st == RDX_OK || in_progress(ctx, st)) break;
      n_fail++;
      if (!is_oom(st)) CHECK_FAIL_("%s with allocation %lld failing returned %s (%s)", op < 2 ? "insert" : "erase",
                                   (long long)nth, rdx_status_name(st), rdx_context_message(ctx));
      CHECK(strstr(rdx_context_message(ctx), "fault injected") != NULL);
      rdx_context_memory(ctx, &now, NULL);
      CHECK_EQ(now, in_use);
      CHECK_EQ(rdx_index_count(idx), m.n);
      CHECK_EQ(rdx_index_next_row(idx), next);
      answers got = take_answers(ctx, idx, &p);
      if (!same_answers(&got, &want, &p)) CHECK_FAIL_("answers changed after a failed batch (allocation %lld)", (long long)nth);
      answers_free(&got);
      int64_t h = 0;
      CHECK_OK(ctx, rdx_index_bytes(ctx, idx, &h, NULL));
      CHECK_EQ(h, held);
      if (check_failures_ > 0) break;
    }
    answers_free(&want);
    if (in_progress(ctx, st)) {
      batch_free(&b);
      free((void *)ek.data);
      break;
    }
    CHECK_OK(ctx, st);
    CHECK(n_fail >= 1);
    if (op < 2) {
      for (int64_t i = 0; i < b.n; i++) model_add(&m, b.k[i], b.r[i]);
    } else {
      uint64_t *k = (uint64_t *)malloc(100 * 8);
      for (int64_t i = 0; i < 100; i++) k[i] = kc_at(ek, i);
      model_erase(&m, k, 100);
      free(k);
    }
    check_index(ctx, idx, &m, op < 2 ? "insert after faults" : "erase after faults");
    batch_free(&b);
    free((void *)ek.data);
  }
  probe_free(&p);
  rdx_index_destroy(idx);
  model_free(&m);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  static const rdx_dtype dts[] = {RDX_U32, RDX_U64};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (int d = 0; d < 2; d++) {
      const kind_case *kc = &kinds[k];
      const char *part = rdx_kind_name(kc->kind);
      char label[64];
      snprintf(label, sizeof label, "%s/%s", part, dts[d] == RDX_U32 ? "u32" : "u64");
      if (CASE_PART(update_random, label))
        for (int rep = 0; rep < 3; rep++) update_random(ctx, kc, dts[d]);
      if (CASE_PART(update_erase_all_refill, label)) update_erase_all_refill(ctx, kc, dts[d]);
      if (kc->rebuild && CASE_PART(update_refused, label)) update_refused(ctx, kc, dts[d]);
      if (CASE_PART(update_faults, label)) update_faults(ctx, kc, dts[d]);
    }
  return check_end(ctx);
}
