/*
 * test_dist_keys.c: sharded key indexes (rdx_comm_*, rdx_dist_index_*), run by CTest as R = 1, 2, 3
 * ranks, under `mpirun -np R --oversubscribe` (built with MPI: dist_keys.np1, .np2, .np3) and as R
 * threads of one process over rdx_comm_create_local (`--local R`: dist_keys.local.n1, .n2, .n3);
 * the launcher and the checks between ranks are tests/dist_check.h's.
 *
 * Every rank draws the same global data from the shared seed (every rank's keys, rows and query
 * batches), keeps its own share, and checks its answers against the brute-force oracle over all
 * ranks' keys, as one rdx_index over them would answer: uneven shares, an empty share, every key
 * on one rank, every key on one shard (one key value), duplicates split across ranks (a tiny key
 * domain), key 0 and the maximum key, ranges that span every shard and empty ranges, given (u32 and
 * u64) and implied row ids, u32 and u64 keys (i64 keys refused alike on every rank), every kind.
 * On GPU ranks the builds take the device path (dist/gpu.cu), and with --dist-host the host path,
 * each asserted; inputs and queries come in host memory and, every other call, device memory.
 * Faults and mismatches: a memory fault walked through build and queries on one rank, a bad
 * argument on one rank, arguments that differ across ranks; each must fail on every rank with the
 * same status and sentence, leave no index and hold no memory.
 */
#include "dist_check.h"
#include "keys_check.h"

/* Internal (src/bench_api.h): whether a sharded index's build took the device path. */
int rdx_dist_index_built_on_gpus(const rdx_dist_index *idx);

#ifndef RDX_TEST_NCCL
#define RDX_TEST_NCCL 0 /* 1: the library is built with NCCL (tests/CMakeLists.txt) */
#endif

/* A scenario: the global keys (and rows), cut into the ranks' shares at cut[r] .. cut[r + 1]. */
typedef struct scenario {
  const char *name;
  rdx_dtype dtype;
  int64_t n;
  uint64_t *keys;   /* n, as u64 */
  uint64_t *rows;   /* n, or NULL for implied */
  int64_t cut[8];
} scenario;

static uint64_t key_max(rdx_dtype d) { return d == RDX_U32 ? UINT32_MAX : UINT64_MAX; }

/* The index check_queries checks (for check_device_queries, on this rank's thread). */
static _Thread_local const rdx_dist_index *checked_idx_;

/* The share of rank r of a u64 array as an array of dtype (a fresh malloc). */
static void *share(const uint64_t *all, int64_t from, int64_t count, int columns, rdx_dtype dtype) {
  size_t es = rdx_dtype_size(dtype);
  void *p = malloc((size_t)(count * columns + 1) * es);
  for (int64_t i = 0; i < count * columns; i++) {
    if (dtype == RDX_U32) ((uint32_t *)p)[i] = (uint32_t)all[from * columns + i];
    else ((uint64_t *)p)[i] = all[from * columns + i];
  }
  return p;
}

static void make_scenario(scenario *s, const char *name, rdx_dtype dtype, int64_t n, int domain_bits, int split,
                          int given_rows) {
  s->name = name;
  s->dtype = dtype;
  s->n = n;
  s->keys = (uint64_t *)malloc((size_t)(n + 1) * 8);
  s->rows = given_rows ? (uint64_t *)malloc((size_t)(n + 1) * 8) : NULL;
  const uint64_t mask = domain_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << domain_bits) - 1);
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = check_rand_() & mask & key_max(dtype);
    if (domain_bits > 0 && check_below(50) == 0) k = 0; /* domain 0: key 0 alone, on one shard */
    if (domain_bits > 0 && check_below(50) == 0) k = key_max(dtype);
    s->keys[i] = k;
    /* given rows: distinct and out of order (a permutation of a stretch far from 0), some u32-sized */
    if (s->rows) s->rows[i] = (uint64_t)(n - i) * 7919 + 1000000;
  }
  dist_cuts(s->cut, n, split); /* split: dist_check.h's */
}

static void free_scenario(scenario *s) {
  free(s->keys);
  free(s->rows);
}

/* Lookups, counts and range counts with queries and answers in device memory (on the device
 * path, the answers are scattered straight into the caller's array) against the oracle. */
static void check_device_queries(rdx_context *ctx, const scenario *s, const keys_oracle *o, rdx_kind kind, rdx_array qa,
                                 rdx_array ba) {
  const int64_t m = qa.count;
  rdx_array dq = kc_to_device(ctx, qa), db = kc_to_device(ctx, ba);
  void *dout = NULL;
  uint64_t *out = (uint64_t *)malloc((size_t)(m + 1) * 8);
  CHECK_OK(ctx, rdx_malloc(ctx, &dout, (size_t)(m + 1) * 8, RDX_DEVICE));
  const rdx_array da = rdx_device_array(dout, m, RDX_U64);
  CHECK_OK(ctx, rdx_dist_index_lookup(comm_, checked_idx_, dq, da));
  CHECK_OK(ctx, rdx_copy(ctx, out, RDX_HOST, dout, RDX_DEVICE, (size_t)m * 8));
  for (int64_t i = 0; i < m; i++)
    if (out[i] != keys_oracle_lookup(o, kc_at(qa, i))) {
      CHECK_FAIL_("%s %s device lookup %lld differs from the oracle", s->name, rdx_kind_name(kind), (long long)i);
      break;
    }
  CHECK_OK(ctx, rdx_dist_index_lookup_count(comm_, checked_idx_, dq, da));
  CHECK_OK(ctx, rdx_copy(ctx, out, RDX_HOST, dout, RDX_DEVICE, (size_t)m * 8));
  for (int64_t i = 0; i < m; i++)
    if (out[i] != keys_oracle_count(o, kc_at(qa, i), kc_at(qa, i))) {
      CHECK_FAIL_("%s %s device lookup_count %lld differs from the oracle", s->name, rdx_kind_name(kind), (long long)i);
      break;
    }
  if (kind != RDX_KIND_HASH) {
    CHECK_OK(ctx, rdx_dist_index_range_count(comm_, checked_idx_, db, da));
    CHECK_OK(ctx, rdx_copy(ctx, out, RDX_HOST, dout, RDX_DEVICE, (size_t)m * 8));
    for (int64_t i = 0; i < m; i++)
      if (out[i] != keys_oracle_count(o, kc_at(ba, 2 * i), kc_at(ba, 2 * i + 1))) {
        CHECK_FAIL_("%s %s device range_count %lld differs from the oracle", s->name, rdx_kind_name(kind), (long long)i);
        break;
      }
  }
  rdx_free(ctx, dout, RDX_DEVICE);
  kc_free_device(ctx, dq);
  kc_free_device(ctx, db);
  free(out);
}

/* Every query call on idx against the oracle, each rank with its own batch of m queries and m
 * bounds (drawn from the shared seed, so every rank draws every rank's batch and keeps its own). */
static void check_queries(rdx_context *ctx, const rdx_dist_index *idx, const scenario *s, const keys_oracle *o,
                          rdx_kind kind, int64_t m, int empty_on_rank0) {
  uint64_t *q = (uint64_t *)malloc((size_t)(m * size_ + 1) * 8), *b = (uint64_t *)malloc((size_t)(2 * m * size_ + 1) * 8);
  for (int64_t i = 0; i < m * size_; i++) {
    q[i] = s->n && check_below(2) ? s->keys[check_below((uint64_t)s->n)] : check_rand_() & key_max(s->dtype);
    uint64_t lo = s->n ? s->keys[check_below((uint64_t)s->n)] : check_rand_() & key_max(s->dtype);
    uint64_t hi = check_below(4) == 0 ? check_rand_() & key_max(s->dtype) : lo + check_below(1000);
    if (hi > key_max(s->dtype)) hi = key_max(s->dtype);
    if (i % 17 == 0) lo = 0, hi = key_max(s->dtype); /* every shard */
    b[2 * i] = lo;
    b[2 * i + 1] = hi; /* lo > hi happens: an empty range */
  }
  uint64_t *mq = (uint64_t *)share(q, m * rank_, m, 1, s->dtype), *mb = (uint64_t *)share(b, m * rank_, m, 2, s->dtype);
  checked_idx_ = idx;
  if (empty_on_rank0 && rank_ == 0) m = 0; /* drawn all the same, so every rank's generator stays in step */
  rdx_array qa = rdx_host_array(mq, m, s->dtype), ba = rdx_host_matrix(mb, m, 2, s->dtype);
  uint64_t *out = (uint64_t *)malloc((size_t)(m + 1) * 8);

  memset(out, 0xA5, (size_t)(m + 1) * 8);
  rdx_status st = rdx_dist_index_lookup(comm_, idx, qa, rdx_host_array(out, m, RDX_U64));
  CHECK_OK(ctx, st);
  /* the path it took: GPU to GPU where the transport moves device memory, else through the host */
  if (st == RDX_OK) CHECK_EQ(rdx_dist_exchange_ms(ctx) > 0, dist_device_exchange(ctx));
  for (int64_t i = 0; i < m && st == RDX_OK; i++)
    if (out[i] != keys_oracle_lookup(o, kc_at(qa, i))) {
      CHECK_FAIL_("%s %s lookup %lld of key %llu: row %llu, oracle %llu", s->name, rdx_kind_name(kind), (long long)i,
                  (unsigned long long)kc_at(qa, i), (unsigned long long)out[i],
                  (unsigned long long)keys_oracle_lookup(o, kc_at(qa, i)));
      break;
    }
  CHECK_EQ(out[m], 0xA5A5A5A5A5A5A5A5ull);

  CHECK_OK(ctx, rdx_dist_index_lookup_count(comm_, idx, qa, rdx_host_array(out, m, RDX_U64)));
  for (int64_t i = 0; i < m; i++)
    if (out[i] != keys_oracle_count(o, kc_at(qa, i), kc_at(qa, i))) {
      CHECK_FAIL_("%s %s lookup_count %lld differs from the oracle", s->name, rdx_kind_name(kind), (long long)i);
      break;
    }
  rdx_result *r = NULL;
  CHECK_OK(ctx, rdx_dist_index_lookup_alloc(comm_, idx, qa, &r));
  if (r) {
    CHECK_EQ(r->n_queries, m);
    kc_check_csr(o, qa, 0, r->offsets, r->row_ids);
    rdx_result_free(ctx, r);
  }

  if (kind == RDX_KIND_HASH) {
    r = NULL;
    rdx_status rs = rdx_dist_index_range_alloc(comm_, idx, ba, &r);
    CHECK_EQ(rs, RDX_ERR_UNSUPPORTED);
    CHECK(r == NULL);
    check_same(ctx, rs, "hash range");
  } else {
    CHECK_OK(ctx, rdx_dist_index_range_count(comm_, idx, ba, rdx_host_array(out, m, RDX_U64)));
    for (int64_t i = 0; i < m; i++)
      if (out[i] != keys_oracle_count(o, kc_at(ba, 2 * i), kc_at(ba, 2 * i + 1))) {
        CHECK_FAIL_("%s %s range_count %lld differs from the oracle", s->name, rdx_kind_name(kind), (long long)i);
        break;
      }
    r = NULL;
    CHECK_OK(ctx, rdx_dist_index_range_alloc(comm_, idx, ba, &r));
    if (r) {
      kc_check_csr(o, ba, 1, r->offsets, r->row_ids);
      rdx_result_free(ctx, r);
    }
  }
  if (kc_gpu(ctx)) check_device_queries(ctx, s, o, kind, qa, ba);
  free(out);
  free(mq);
  free(mb);
  free(q);
  free(b);
}

static const rdx_kind kinds[] = {RDX_KIND_SCAN, RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH,
                                 RDX_KIND_RX,   RDX_KIND_CGRX,   RDX_KIND_CGRXU};

/* Build every kind over the scenario's shares and check it. */
static void check_scenario(rdx_context *ctx, const scenario *s) {
  keys_oracle o;
  rdx_array all_keys = rdx_host_array(share(s->keys, 0, s->n, 1, s->dtype), s->n, s->dtype);
  rdx_array all_rows = s->rows ? rdx_host_array(s->rows, s->n, RDX_U64) : rdx_no_array();
  CHECK(keys_oracle_build(&o, all_keys, all_rows));
  const int64_t from = s->cut[rank_], count = s->cut[rank_ + 1] - s->cut[rank_];
  void *mk = share(s->keys, from, count, 1, s->dtype);
  rdx_array ka = rdx_host_array(mk, count, s->dtype);
  rdx_array ra = s->rows ? rdx_host_array(s->rows + from, count, RDX_U64) : rdx_no_array();
  /* the given rows also as u32 (they fit), for every other kind */
  void *r32 = s->rows ? share(s->rows, from, count, 1, RDX_U32) : NULL;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    bo.bucket_size = 4;
    rdx_dist_index *idx = NULL;
    int64_t held = check_held(ctx);
    /* every other kind from device memory (GPU ranks), rows u32 on the others */
    const int on_device = kc_gpu(ctx) && k % 2 == 1;
    rdx_array kb = on_device ? kc_to_device(ctx, ka) : ka;
    rdx_array rb = ra.data != NULL && k % 2 == 0 ? rdx_host_array(r32, count, RDX_U32) : ra;
    if (on_device) rb = kc_to_device(ctx, rb);
    rdx_status st = rdx_dist_index_build(comm_, kb, rb, &bo, &idx);
    check_same(ctx, st, "build");
    if (on_device) {
      kc_free_device(ctx, kb);
      kc_free_device(ctx, rb);
    }
    if (st == RDX_ERR_UNSUPPORTED) continue; /* the kind is not on this backend: every rank says so */
    CHECK_OK(ctx, st);
    if (idx == NULL) continue;
    /* the path: on the GPUs where every rank's context is a GPU's and the local group moves
     * device memory, unless forced through the host (MPI's transport: either, as it has) */
    if (dist_local_) CHECK_EQ(rdx_dist_index_built_on_gpus(idx), kc_gpu(ctx) && !check_dist_host_);
    else if (!kc_gpu(ctx) || check_dist_host_) CHECK_EQ(rdx_dist_index_built_on_gpus(idx), 0);
    CHECK_EQ(rdx_dist_index_count(idx), s->n);
    /* the shards together hold every key once */
    CHECK_EQ(dist_sum_i64(rdx_index_count(rdx_dist_index_shard(idx))), s->n);
    check_queries(ctx, idx, s, &o, kinds[k], 200, 0);
    check_queries(ctx, idx, s, &o, kinds[k], 3, 1); /* an empty batch on rank 0 */
    rdx_dist_index_destroy(idx);
    CHECK_EQ(check_held(ctx), held);
  }
  free(r32);
  free(mk);
  free(all_keys.data);
  keys_oracle_free(&o);
}

/* A memory fault on the last rank at its n-th allocation, n = 1, 2, ... until the call succeeds:
 * every failure is the same on every rank, leaves no index and no memory held. */
static void fault_walk(rdx_context *ctx, const scenario *s) {
  const int64_t from = s->cut[rank_], count = s->cut[rank_ + 1] - s->cut[rank_];
  void *mk = share(s->keys, from, count, 1, s->dtype);
  rdx_array ka = rdx_host_array(mk, count, s->dtype);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_SORTED;
  rdx_dist_index *idx = NULL;
  int64_t held = check_held(ctx);
  int failures = 0;
  for (int64_t n = 1; n < 1000; n++) {
    if (rank_ == size_ - 1) rdx_mem_fail_after(ctx, n);
    rdx_status st = rdx_dist_index_build(comm_, ka, rdx_no_array(), &bo, &idx);
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "build under a fault");
    if (st == RDX_OK) break;
    failures++;
    CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY); /* host or GPU memory */
    CHECK(idx == NULL);
    CHECK_EQ(check_held(ctx), held);
    if (n == 1) CHECK(strstr(rdx_context_message(ctx), "rank") != NULL);
  }
  CHECK(failures > 0);
  CHECK(idx != NULL);
  if (idx == NULL) {
    free(mk);
    return;
  }
  /* queries under faults: the index answers as before afterwards */
  keys_oracle o;
  rdx_array all_keys = rdx_host_array(share(s->keys, 0, s->n, 1, s->dtype), s->n, s->dtype);
  CHECK(keys_oracle_build(&o, all_keys, rdx_no_array()));
  uint64_t *b = (uint64_t *)malloc(2 * 64 * 8);
  for (int i = 0; i < 64; i++) {
    uint64_t lo = check_rand_() & key_max(s->dtype), hi = check_rand_() & key_max(s->dtype);
    b[2 * i] = lo < hi ? lo : hi;
    b[2 * i + 1] = lo < hi ? hi : lo;
  }
  void *mb = share(b, 0, 64, 2, s->dtype);
  rdx_array ba = rdx_host_matrix(mb, 64, 2, s->dtype);
  held = check_held(ctx);
  failures = 0;
  for (int64_t n = 1; n < 1000; n++) {
    rdx_result *r = NULL;
    if (rank_ == 0) rdx_mem_fail_after(ctx, n);
    rdx_status st = rdx_dist_index_range_alloc(comm_, idx, ba, &r);
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "range_alloc under a fault");
    if (st == RDX_OK) {
      kc_check_csr(&o, ba, 1, r->offsets, r->row_ids);
      rdx_result_free(ctx, r);
      break;
    }
    failures++;
    CHECK(r == NULL);
    CHECK_EQ(check_held(ctx), held);
  }
  CHECK(failures > 0);
  check_queries(ctx, idx, s, &o, RDX_KIND_SORTED, 50, 0);
  rdx_dist_index_destroy(idx);
  keys_oracle_free(&o);
  free(all_keys.data);
  free(mb);
  free(b);
  free(mk);
}

/* A bad argument on one rank, and arguments that differ across ranks: refused on every rank alike. */
static void check_refusals(rdx_context *ctx) {
  const int last = size_ - 1;
  uint64_t keys64[8] = {5, 1, 9, 5, 0, 7, 3, 5};
  uint32_t keys32[8] = {5, 1, 9, 5, 0, 7, 3, 5};
  uint64_t rows[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  rdx_array k64 = rdx_host_array(keys64, 8, RDX_U64), k32 = rdx_host_array(keys32, 8, RDX_U32);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  int64_t held = check_held(ctx);
  rdx_dist_index *idx = (rdx_dist_index *)&held; /* must come back NULL */
  rdx_status st;

  if (CASE_RUN(dist_build_bad_argument_on_one_rank)) {
    rdx_array bad = k64;
    if (rank_ == last) bad.dtype = RDX_F64;
    st = rdx_dist_index_build(comm_, bad, rdx_no_array(), &bo, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(idx == NULL);
    check_same(ctx, st, "bad dtype on one rank");
    char want[32];
    snprintf(want, sizeof want, "rank %d", last);
    CHECK(strstr(rdx_context_message(ctx), want) != NULL);
    /* a row id that is the miss marker, on one rank */
    uint64_t miss_rows[8] = {1, 2, 3, 4, 5, 6, 7, RDX_MISS};
    st = rdx_dist_index_build(comm_, k64, rdx_host_array(rank_ == last ? miss_rows : rows, 8, RDX_U64), &bo, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "RDX_MISS row on one rank");
    /* i64 keys on every rank: the indexes take u32 and u64 keys */
    rdx_array ki64 = k64;
    ki64.dtype = RDX_I64;
    st = rdx_dist_index_build(comm_, ki64, rdx_no_array(), &bo, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(idx == NULL);
    check_same(ctx, st, "i64 keys");
    CHECK(strstr(rdx_context_message(ctx), "i64") != NULL);
    /* out NULL on one rank */
    idx = NULL;
    st = rdx_dist_index_build(comm_, k64, rdx_no_array(), &bo, rank_ == last ? NULL : &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(idx == NULL);
    check_same(ctx, st, "out NULL on one rank");
    CHECK_EQ(check_held(ctx), held);
  }
  if (size_ > 1 && CASE_RUN(dist_build_mismatch)) {
    st = rdx_dist_index_build(comm_, rank_ == 0 ? k32 : k64, rdx_no_array(), &bo, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "dtype mismatch");
    CHECK(strstr(rdx_context_message(ctx), "disagree") != NULL);
    rdx_build_options other = bo;
    other.kind = rank_ == 0 ? RDX_KIND_SORTED : RDX_KIND_BTREE;
    st = rdx_dist_index_build(comm_, k64, rdx_no_array(), &other, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "kind mismatch");
    st = rdx_dist_index_build(comm_, k64, rank_ == 0 ? rdx_host_array(rows, 8, RDX_U64) : rdx_no_array(), &bo, &idx);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "rows given on one rank only");
    CHECK(idx == NULL);
    CHECK_EQ(check_held(ctx), held);
  }
  if (CASE_RUN(dist_query_refusals)) {
    rdx_dist_index *a = NULL, *h = NULL;
    CHECK_OK(ctx, rdx_dist_index_build(comm_, k64, rdx_no_array(), &bo, &a));
    rdx_build_options ho = bo;
    ho.kind = RDX_KIND_HASH;
    CHECK_OK(ctx, rdx_dist_index_build(comm_, k64, rdx_no_array(), &ho, &h));
    uint64_t out[8];
    uint32_t q32[8] = {5, 1, 2, 3, 4, 5, 6, 7};
    /* queries of the wrong dtype on one rank */
    st = rdx_dist_index_lookup(comm_, a, rank_ == last ? rdx_host_array(q32, 8, RDX_U32) : k64, rdx_host_array(out, 8, RDX_U64));
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "query dtype on one rank");
    /* an output too short on one rank */
    st = rdx_dist_index_lookup_count(comm_, a, k64, rdx_host_array(out, rank_ == last ? 7 : 8, RDX_U64));
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "short output on one rank");
    /* out NULL on one rank */
    rdx_result *r = NULL;
    st = rdx_dist_index_lookup_alloc(comm_, a, k64, rank_ == last ? NULL : &r);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
    check_same(ctx, st, "out NULL on one rank");
    /* something that is not an index on one rank */
    st = rdx_dist_index_lookup(comm_, rank_ == last ? (const rdx_dist_index *)&held : a, k64, rdx_host_array(out, 8, RDX_U64));
    CHECK_EQ(st, RDX_ERR_MISUSE);
    check_same(ctx, st, "not an index on one rank");
    if (size_ > 1) {
      /* another index on rank 0 */
      st = rdx_dist_index_lookup(comm_, rank_ == 0 ? h : a, k64, rdx_host_array(out, 8, RDX_U64));
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "another index on rank 0");
      /* another call on rank 0 */
      uint64_t bounds[16];
      for (int i = 0; i < 16; i++) bounds[i] = (uint64_t)i;
      st = rank_ == 0 ? rdx_dist_index_lookup_count(comm_, a, k64, rdx_host_array(out, 8, RDX_U64))
                      : rdx_dist_index_range_count(comm_, a, rdx_host_matrix(bounds, 8, 2, RDX_U64), rdx_host_array(out, 8, RDX_U64));
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "another call on rank 0");
      CHECK(strstr(rdx_context_message(ctx), "the call") != NULL);
    }
    /* the indexes answer as before */
    CHECK_OK(ctx, rdx_dist_index_lookup(comm_, a, k64, rdx_host_array(out, 8, RDX_U64)));
    CHECK_EQ(out[0], 0); /* key 5: rank 0's row 0 is the smallest */
    CHECK_EQ(out[4], 4);                                  /* key 0: rank 0's row 4 */
    rdx_dist_index_destroy(a);
    rdx_dist_index_destroy(h);
    CHECK_EQ(check_held(ctx), held);
  }
}

/* ---- updates (rdx_dist_index_insert, rdx_dist_index_erase) ----
 *
 * Every rank keeps the same model of the whole index's pairs (drawn from the shared seed), and a
 * reference rdx_index of its own over the same pairs that takes each batch whole, concatenated in
 * rank order: after each update the distributed index answers as the oracle of the model, and its
 * count, next_row and n_erased are the reference's. */
typedef struct model {
  rdx_dtype dtype;
  int64_t n, cap;
  uint64_t *keys, *rows;
} model;

static void model_init(model *md, const scenario *s) {
  md->dtype = s->dtype;
  md->n = s->n;
  md->cap = s->n + 64;
  md->keys = (uint64_t *)malloc((size_t)md->cap * 8);
  md->rows = (uint64_t *)malloc((size_t)md->cap * 8);
  for (int64_t i = 0; i < s->n; i++) {
    md->keys[i] = s->keys[i];
    md->rows[i] = s->rows ? s->rows[i] : (uint64_t)i;
  }
}
static void model_free(model *md) {
  free(md->keys);
  free(md->rows);
}
static void model_insert(model *md, const uint64_t *keys, const uint64_t *rows, uint64_t first_row, int64_t b) {
  if (md->n + b > md->cap) {
    md->cap = 2 * (md->n + b);
    md->keys = (uint64_t *)realloc(md->keys, (size_t)md->cap * 8);
    md->rows = (uint64_t *)realloc(md->rows, (size_t)md->cap * 8);
  }
  for (int64_t j = 0; j < b; j++) {
    md->keys[md->n + j] = keys[j];
    md->rows[md->n + j] = rows ? rows[j] : first_row + (uint64_t)j;
  }
  md->n += b;
}
static int64_t model_erase(model *md, const uint64_t *keys, int64_t b) {
  int64_t kept = 0;
  for (int64_t i = 0; i < md->n; i++) {
    int hit = 0;
    for (int64_t j = 0; j < b && !hit; j++) hit = md->keys[i] == keys[j];
    if (hit) continue;
    md->keys[kept] = md->keys[i];
    md->rows[kept++] = md->rows[i];
  }
  int64_t gone = md->n - kept;
  md->n = kept;
  return gone;
}

/* The distributed index against the model: counts, and every query call against its oracle. */
static void check_model(rdx_context *ctx, const rdx_dist_index *idx, const model *md, rdx_kind kind, int64_t m) {
  CHECK_EQ(rdx_dist_index_count(idx), md->n);
  CHECK_EQ(dist_sum_i64(rdx_index_count(rdx_dist_index_shard(idx))), md->n);
  scenario view;
  memset(&view, 0, sizeof view);
  view.name = "updated";
  view.dtype = md->dtype;
  view.n = md->n;
  view.keys = md->keys;
  keys_oracle o;
  void *k = share(md->keys, 0, md->n, 1, md->dtype);
  CHECK(keys_oracle_build(&o, rdx_host_array(k, md->n, md->dtype), rdx_host_array(md->rows, md->n, RDX_U64)));
  check_queries(ctx, idx, &view, &o, kind, m, 0);
  keys_oracle_free(&o);
  free(k);
}

/* A batch of b keys over all ranks (the concatenation), cut at cut[0..size_]: mode 0 a mix of the
 * index's keys (duplicates, splitters among them), fresh keys, 0 and the maximum; mode 1 one key
 * b times (one shard gets it all); mode 2 keys of a tiny domain (many copies of each). Rank 0's
 * share is empty in every other batch, and the last rank's in mode 1. */
static uint64_t *draw_batch(const model *md, int64_t b, int mode, int64_t *cut) {
  uint64_t *k = (uint64_t *)malloc((size_t)(b + 1) * 8);
  const uint64_t one = md->n ? md->keys[check_below((uint64_t)md->n)] : check_rand_() & key_max(md->dtype);
  for (int64_t j = 0; j < b; j++) {
    uint64_t v = check_rand_() & key_max(md->dtype);
    if (mode == 0 && md->n && check_below(2)) v = md->keys[check_below((uint64_t)md->n)];
    if (mode == 0 && check_below(30) == 0) v = check_below(2) ? 0 : key_max(md->dtype);
    if (mode == 1) v = one;
    if (mode == 2) v = check_below(16);
    k[j] = v;
  }
  const int rank0_empty = check_below(2);
  cut[0] = 0;
  cut[size_] = b;
  for (int r = 1; r < size_; r++) cut[r] = (int64_t)check_below((uint64_t)b + 1);
  for (int r = 1; r < size_; r++)
    for (int q = r; q > 1 && cut[q - 1] > cut[q]; q--) {
      int64_t t = cut[q];
      cut[q] = cut[q - 1];
      cut[q - 1] = t;
    }
  if (rank0_empty && size_ > 1) cut[1] = 0;
  if (mode == 1 && size_ > 1) cut[size_ - 1] = b;
  return k;
}

/* The fault walks' injected fault: this rank's n-th allocation in the next distributed update
 * fails (0: none); the reference's own update afterwards runs without it. */
static _Thread_local int64_t fault_at_;

/* One insert (rows given, or implied when rows is NULL) on the index and the reference, the model
 * following; returns the status, the same on every rank. */
static rdx_status do_insert(rdx_context *ctx, rdx_dist_index *idx, rdx_index *ref, model *md, const uint64_t *keys,
                            const uint64_t *rows, const int64_t *cut, const rdx_update_options *uo) {
  const int64_t from = cut[rank_], count = cut[rank_ + 1] - cut[rank_], b = cut[size_];
  void *mk = share(keys, from, count, 1, md->dtype);
  const uint64_t next = rdx_dist_index_next_row(idx);
  CHECK_EQ(next, rdx_index_next_row(ref));
  if (fault_at_) rdx_mem_fail_after(ctx, fault_at_);
  rdx_status st = rdx_dist_index_insert(comm_, idx, rdx_host_array(mk, count, md->dtype),
                                        rows ? rdx_host_array(rows + from, count, RDX_U64) : rdx_no_array(), uo);
  rdx_mem_fail_after(ctx, 0);
  check_same(ctx, st, "insert");
  if (st == RDX_OK) {
    void *all = share(keys, 0, b, 1, md->dtype);
    CHECK_OK(ctx, rdx_index_insert(ctx, ref, rdx_host_array(all, b, md->dtype),
                                   rows ? rdx_host_array(rows, b, RDX_U64) : rdx_no_array(), uo));
    free(all);
    model_insert(md, keys, rows, next, b);
    CHECK_EQ(rdx_dist_index_next_row(idx), rdx_index_next_row(ref));
  } else {
    CHECK_EQ(rdx_dist_index_next_row(idx), next);
  }
  free(mk);
  return st;
}

static rdx_status do_erase(rdx_context *ctx, rdx_dist_index *idx, rdx_index *ref, model *md, const uint64_t *keys,
                           const int64_t *cut, const rdx_update_options *uo) {
  const int64_t from = cut[rank_], count = cut[rank_ + 1] - cut[rank_], b = cut[size_];
  void *mk = share(keys, from, count, 1, md->dtype);
  const uint64_t next = rdx_dist_index_next_row(idx);
  int64_t gone = -7;
  if (fault_at_) rdx_mem_fail_after(ctx, fault_at_);
  rdx_status st = rdx_dist_index_erase(comm_, idx, rdx_host_array(mk, count, md->dtype), uo, &gone);
  rdx_mem_fail_after(ctx, 0);
  check_same(ctx, st, "erase");
  if (st == RDX_OK) {
    void *all = share(keys, 0, b, 1, md->dtype);
    int64_t ref_gone = -1;
    CHECK_OK(ctx, rdx_index_erase(ctx, ref, rdx_host_array(all, b, md->dtype), uo, &ref_gone));
    free(all);
    CHECK_EQ(gone, ref_gone);
    CHECK_EQ(model_erase(md, keys, b), gone);
  } else {
    CHECK_EQ(gone, 0);
  }
  CHECK_EQ(rdx_dist_index_next_row(idx), next); /* erases never move the counter */
  free(mk);
  return st;
}

/* Inserts and erases of every shape on an index of each kind built over the scenario, checked
 * against the model after each. */
static void check_updates(rdx_context *ctx, const scenario *s) {
  for (size_t kk = 0; kk < sizeof kinds / sizeof kinds[0]; kk++) {
    const rdx_kind kind = kinds[kk];
    rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT;
    if (kind == RDX_KIND_RX || kind == RDX_KIND_CGRX) uo.flags = RDX_UPDATE_REBUILD;
    model md;
    model_init(&md, s);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kind;
    bo.bucket_size = 4;
    const int64_t from = s->cut[rank_], count = s->cut[rank_ + 1] - s->cut[rank_];
    void *mk = share(s->keys, from, count, 1, s->dtype), *all = share(s->keys, 0, s->n, 1, s->dtype);
    int64_t held = check_held(ctx);
    rdx_dist_index *idx = NULL;
    rdx_index *ref = NULL;
    rdx_status st = rdx_dist_index_build(comm_, rdx_host_array(mk, count, s->dtype),
                                         s->rows ? rdx_host_array(s->rows + from, count, RDX_U64) : rdx_no_array(), &bo, &idx);
    check_same(ctx, st, "build for updates");
    rdx_build_options ro = RDX_BUILD_OPTIONS_INIT; /* the reference: any kind answers alike */
    if (st == RDX_OK)
      CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(all, s->n, s->dtype),
                                    s->rows ? rdx_host_array(s->rows, s->n, RDX_U64) : rdx_no_array(), &ro, &ref));
    free(mk);
    free(all);
    if (st != RDX_OK || idx == NULL || ref == NULL) {
      CHECK(st == RDX_ERR_UNSUPPORTED); /* the kind is not on this backend */
      rdx_dist_index_destroy(idx);
      rdx_index_destroy(ref);
      model_free(&md);
      continue;
    }
    CHECK_EQ(rdx_dist_index_next_row(idx), s->n);
    int64_t cut[8];
    uint64_t *k, rows[512];
    for (int j = 0; j < 512; j++) rows[j] = 9000000 + (uint64_t)j * 13 + (uint64_t)kk;
    /* implied rows, a mix */
    k = draw_batch(&md, 150, 0, cut);
    CHECK_OK(ctx, do_insert(ctx, idx, ref, &md, k, NULL, cut, &uo));
    free(k);
    check_model(ctx, idx, &md, kind, 40);
    /* given rows, one key on one shard */
    k = draw_batch(&md, 60, 1, cut);
    CHECK_OK(ctx, do_insert(ctx, idx, ref, &md, k, rows, cut, &uo));
    free(k);
    /* given rows, a tiny domain: copies on every shard */
    k = draw_batch(&md, 200, 2, cut);
    CHECK_OK(ctx, do_insert(ctx, idx, ref, &md, k, rows + 60, cut, &uo));
    free(k);
    check_model(ctx, idx, &md, kind, 40);
    /* erases: a mix (present, absent, repeated keys), one key, a tiny domain */
    k = draw_batch(&md, 80, 0, cut);
    CHECK_OK(ctx, do_erase(ctx, idx, ref, &md, k, cut, &uo));
    free(k);
    k = draw_batch(&md, 5, 1, cut);
    CHECK_OK(ctx, do_erase(ctx, idx, ref, &md, k, cut, &uo));
    free(k);
    check_model(ctx, idx, &md, kind, 40);
    k = draw_batch(&md, 12, 2, cut);
    CHECK_OK(ctx, do_erase(ctx, idx, ref, &md, k, cut, &uo));
    free(k);
    /* empty batches everywhere change nothing, even without the rebuild flag */
    for (int r = 0; r <= size_; r++) cut[r] = 0;
    CHECK_OK(ctx, do_insert(ctx, idx, ref, &md, rows, NULL, cut, NULL));
    CHECK_OK(ctx, do_erase(ctx, idx, ref, &md, rows, cut, NULL));
    check_model(ctx, idx, &md, kind, 40);
    /* everything erased, then implied rows again into the empty index */
    uint64_t *every = (uint64_t *)malloc((size_t)(md.n + 1) * 8);
    memcpy(every, md.keys, (size_t)md.n * 8);
    const int64_t n_all = md.n;
    for (int r = 0; r <= size_; r++) cut[r] = n_all * r / size_;
    CHECK_OK(ctx, do_erase(ctx, idx, ref, &md, every, cut, &uo));
    free(every);
    CHECK_EQ(md.n, 0);
    check_model(ctx, idx, &md, kind, 10);
    k = draw_batch(&md, 40, 0, cut);
    CHECK_OK(ctx, do_insert(ctx, idx, ref, &md, k, NULL, cut, &uo));
    free(k);
    check_model(ctx, idx, &md, kind, 40);
    rdx_dist_index_destroy(idx);
    rdx_index_destroy(ref);
    model_free(&md);
    CHECK_EQ(check_held(ctx), held);
  }
}

/* A memory fault on one rank (the last, or rank 0) at its n-th allocation, n = 1, 2, ..., through
 * an insert and an erase: every failure is the same on every rank, and leaves every rank's count,
 * next_row, memory held and answers as they were. */
static void update_fault_walk(rdx_context *ctx, const scenario *s, rdx_kind kind, int faulty) {
  const int64_t from = s->cut[rank_], count = s->cut[rank_ + 1] - s->cut[rank_];
  void *mk = share(s->keys, from, count, 1, s->dtype), *all = share(s->keys, 0, s->n, 1, s->dtype);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  rdx_dist_index *idx = NULL;
  rdx_index *ref = NULL;
  model md;
  model_init(&md, s);
  CHECK_OK(ctx, rdx_dist_index_build(comm_, rdx_host_array(mk, count, s->dtype), rdx_no_array(), &bo, &idx));
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(all, s->n, s->dtype), rdx_no_array(), NULL, &ref));
  free(mk);
  free(all);
  if (idx == NULL || ref == NULL) {
    rdx_dist_index_destroy(idx);
    rdx_index_destroy(ref);
    model_free(&md);
    return;
  }
  for (int erase = 0; erase < 2; erase++) {
    int64_t cut[8];
    uint64_t *k = draw_batch(&md, 120, 0, cut);
    const int64_t held = check_held(ctx), total = rdx_dist_index_count(idx);
    const uint64_t next = rdx_dist_index_next_row(idx);
    int failures = 0;
    for (int64_t n = 1; n < 1000; n++) {
      fault_at_ = rank_ == faulty ? n : 0;
      rdx_status st = erase ? do_erase(ctx, idx, ref, &md, k, cut, NULL) : do_insert(ctx, idx, ref, &md, k, NULL, cut, NULL);
      fault_at_ = 0;
      if (st == RDX_OK) break;
      failures++;
      CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY); /* host or GPU memory */
      CHECK_EQ(check_held(ctx), held);
      CHECK_EQ(rdx_dist_index_count(idx), total);
      CHECK_EQ(rdx_dist_index_next_row(idx), next);
      if (failures % 4 == 1) check_model(ctx, idx, &md, kind, 12); /* answers as before (a sample) */
    }
    CHECK(failures > 0);
    free(k);
    check_model(ctx, idx, &md, kind, 40);
  }
  rdx_dist_index_destroy(idx);
  rdx_index_destroy(ref);
  model_free(&md);
}

/* Bad and mismatched update arguments: refused on every rank alike, the index unchanged. */
static void check_update_refusals(rdx_context *ctx) {
  const int last = size_ - 1;
  uint64_t keys64[8] = {5, 1, 9, 5, 0, 7, 3, 5}, rows[8] = {11, 12, 13, 14, 15, 16, 17, 18}, out[8];
  uint32_t keys32[8] = {5, 1, 9, 5, 0, 7, 3, 5};
  rdx_array k64 = rdx_host_array(keys64, 8, RDX_U64), k32 = rdx_host_array(keys32, 8, RDX_U32);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  rdx_dist_index *a = NULL, *b = NULL, *x = NULL;
  CHECK_OK(ctx, rdx_dist_index_build(comm_, k64, rdx_no_array(), &bo, &a));
  CHECK_OK(ctx, rdx_dist_index_build(comm_, k64, rdx_no_array(), &bo, &b));
  rdx_build_options xo = bo;
  xo.kind = RDX_KIND_RX;
  CHECK_OK(ctx, rdx_dist_index_build(comm_, k64, rdx_no_array(), &xo, &x));
  if (a == NULL || b == NULL || x == NULL) {
    rdx_dist_index_destroy(a);
    rdx_dist_index_destroy(b);
    rdx_dist_index_destroy(x);
    return;
  }
  const int64_t held = check_held(ctx);
  rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT, rebuild = RDX_UPDATE_OPTIONS_INIT, bad = RDX_UPDATE_OPTIONS_INIT;
  rebuild.flags = RDX_UPDATE_REBUILD;
  bad.flags = 0x40;
  uint64_t miss_rows[8] = {1, 2, 3, 4, 5, 6, 7, RDX_MISS};
  rdx_status st;
  int64_t gone = 3;
  /* on one rank: the wrong dtype, RDX_MISS, a short row_ids, unknown flags, not an index */
  st = rdx_dist_index_insert(comm_, a, rank_ == last ? k32 : k64, rdx_no_array(), &uo);
  CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
  check_same(ctx, st, "insert: dtype on one rank");
  st = rdx_dist_index_insert(comm_, a, k64, rdx_host_array(rank_ == last ? miss_rows : rows, 8, RDX_U64), &uo);
  CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
  check_same(ctx, st, "insert: RDX_MISS on one rank");
  st = rdx_dist_index_insert(comm_, a, k64, rdx_host_array(rows, rank_ == last ? 7 : 8, RDX_U64), &uo);
  CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
  check_same(ctx, st, "insert: short row_ids on one rank");
  st = rdx_dist_index_erase(comm_, a, k64, rank_ == last ? &bad : &uo, &gone);
  CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gone, 0);
  check_same(ctx, st, "erase: unknown flags on one rank");
  st = rdx_dist_index_erase(comm_, rank_ == last ? (rdx_dist_index *)&gone : a, k64, &uo, NULL);
  CHECK_EQ(st, RDX_ERR_MISUSE);
  check_same(ctx, st, "erase: not an index on one rank");
  /* rx without RDX_UPDATE_REBUILD, on every rank */
  st = rdx_dist_index_insert(comm_, x, k64, rdx_no_array(), &uo);
  CHECK_EQ(st, RDX_ERR_UNSUPPORTED);
  check_same(ctx, st, "insert into rx without the rebuild flag");
  st = rdx_dist_index_erase(comm_, x, k64, NULL, NULL);
  CHECK_EQ(st, RDX_ERR_UNSUPPORTED);
  check_same(ctx, st, "erase from rx without the rebuild flag");
  if (size_ > 1) {
    /* ranks that disagree: row ids given on rank 0 only, the flags, the index, the call */
    st = rdx_dist_index_insert(comm_, a, k64, rank_ == 0 ? rdx_host_array(rows, 8, RDX_U64) : rdx_no_array(), &uo);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "insert: rows on rank 0 only");
    CHECK(strstr(rdx_context_message(ctx), "disagree") != NULL);
    st = rdx_dist_index_insert(comm_, a, k64, rdx_no_array(), rank_ == 0 ? &rebuild : &uo);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "insert: flags on rank 0 only");
    CHECK(strstr(rdx_context_message(ctx), "flags") != NULL);
    st = rdx_dist_index_erase(comm_, rank_ == 0 ? b : a, k64, &uo, NULL);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "erase: another index on rank 0");
    st = rank_ == 0 ? rdx_dist_index_insert(comm_, a, k64, rdx_no_array(), &uo) : rdx_dist_index_erase(comm_, a, k64, &uo, NULL);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "insert on rank 0, erase elsewhere");
    CHECK(strstr(rdx_context_message(ctx), "the call") != NULL);
    st = rank_ == 0 ? rdx_dist_index_lookup(comm_, a, k64, rdx_host_array(out, 8, RDX_U64))
                    : rdx_dist_index_insert(comm_, a, k64, rdx_no_array(), &uo);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "lookup on rank 0, insert elsewhere");
  }
  /* unchanged: every rank's 8 keys, rows 0 .. 8 size_ - 1; key 5's smallest row is rank 0's row 0 */
  CHECK_EQ(rdx_dist_index_count(a), 8 * size_);
  CHECK_EQ(rdx_dist_index_next_row(a), 8 * size_);
  CHECK_OK(ctx, rdx_dist_index_lookup(comm_, a, k64, rdx_host_array(out, 8, RDX_U64)));
  CHECK_EQ(out[0], 0);
  CHECK_EQ(out[2], 2);
  CHECK_OK(ctx, rdx_dist_index_lookup_count(comm_, a, k64, rdx_host_array(out, 8, RDX_U64)));
  CHECK_EQ(out[0], 3 * size_);
  CHECK_EQ(check_held(ctx), held);
  /* and an update after them all works: key 5 erased everywhere, on rank 0's word alone */
  st = rdx_dist_index_erase(comm_, a, rdx_host_array(keys64, rank_ == 0 ? 1 : 0, RDX_U64), NULL, &gone);
  CHECK_OK(ctx, st);
  CHECK_EQ(gone, 3 * size_);
  CHECK_EQ(rdx_dist_index_count(a), 5 * size_);
  rdx_dist_index_destroy(a);
  rdx_dist_index_destroy(b);
  rdx_dist_index_destroy(x);
}

/* rdx_comm_create_local's refusals (not collective: rank 0 alone, over contexts of its own). */
static void check_local_refusals(void) {
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  rdx_context *c[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++) CHECK_EQ(rdx_context_create(&co, &c[i]), RDX_OK);
  rdx_comm *comms[3] = {(rdx_comm *)&co, (rdx_comm *)&co, (rdx_comm *)&co};
  CHECK_EQ(rdx_comm_create_local(NULL, 2, comms), RDX_ERR_INVALID_ARGUMENT);
  CHECK_EQ(rdx_comm_create_local(c, 0, comms), RDX_ERR_INVALID_ARGUMENT);
  CHECK_EQ(rdx_comm_create_local(c, -1, comms), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(c[0], rdx_comm_create_local(c, 2, NULL), RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(c[0]), "comms is NULL") != NULL);
  rdx_context *twice[3] = {c[0], c[1], c[0]};
  CHECK_STATUS(c[0], rdx_comm_create_local(twice, 3, comms), RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(c[0]), "ctxs[0] and ctxs[2] are the same context") != NULL);
  CHECK(comms[0] == NULL && comms[1] == NULL && comms[2] == NULL);
  rdx_context *with_null[2] = {c[0], NULL};
  CHECK_STATUS(c[0], rdx_comm_create_local(with_null, 2, comms), RDX_ERR_INVALID_ARGUMENT);
  rdx_context *not_one[2] = {c[0], (rdx_context *)&co};
  CHECK_STATUS(c[0], rdx_comm_create_local(not_one, 2, comms), RDX_ERR_MISUSE);
  CHECK(comms[0] == NULL && comms[1] == NULL);
  /* a group made and destroyed without a call: each rank knows its place */
  CHECK_OK(c[0], rdx_comm_create_local(c, 3, comms));
  for (int i = 0; i < 3; i++) {
    CHECK_EQ(rdx_comm_rank(comms[i]), i);
    CHECK_EQ(rdx_comm_size(comms[i]), 3);
    CHECK(rdx_comm_context(comms[i]) == c[i]);
  }
  for (int i = 0; i < 3; i++) rdx_comm_destroy(comms[i]);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ(check_held(c[i]), 0);
    rdx_context_destroy(c[i]);
  }
}

static void body(rdx_context *ctx) {
  if (CASE_RUN(dist_comm_create)) {
    rdx_dist_info info;
    info.size = sizeof info;
    CHECK_OK(ctx, rdx_dist_info_get(&info));
    CHECK_EQ(info.nccl_built, RDX_TEST_NCCL);
    CHECK_EQ(info.nccl_version[0] != '\0', RDX_TEST_NCCL);
    /* the transport: NCCL's only between MPI ranks on GPUs (of their own: dist_check.h) */
    const char *t = rdx_dist_comm_transport(comm_);
    CHECK(t != NULL);
    if (t != NULL && dist_mpi())
      CHECK(strcmp(t, "mpi") == 0 ||
            (RDX_TEST_NCCL && rdx_context_backend(ctx) != RDX_BACKEND_CPU && strcmp(t, "mpi+nccl") == 0));
    else if (t != NULL)
      CHECK(strcmp(t, "local") == 0);
    CHECK(rdx_dist_comm_transport(NULL) == NULL);
    if (dist_mpi()) {
      CHECK(info.mpi_built);
      CHECK_EQ(info.mpi_rank, rank_);
      CHECK_EQ(info.mpi_size, size_);
    }
    rdx_comm *c = (rdx_comm *)&info;
    CHECK_STATUS(ctx, rdx_comm_create_mpi(ctx, NULL, &c), info.mpi_built ? RDX_ERR_INVALID_ARGUMENT : RDX_ERR_NO_BACKEND);
    CHECK(c == NULL);
    CHECK_EQ(rdx_comm_rank(comm_), rank_);
    CHECK_EQ(rdx_comm_size(comm_), size_);
    CHECK(rdx_comm_context(comm_) == ctx);
    CHECK_EQ(rdx_comm_rank(NULL), (uint64_t)(int64_t)-1);
    CHECK_EQ(rdx_comm_size(NULL), (uint64_t)(int64_t)-1);
    CHECK(rdx_comm_context(NULL) == NULL);
  }
  if (rank_ == 0 && CASE_RUN(dist_comm_create_local_refusals)) check_local_refusals();

  static const struct {
    const char *name;
    int64_t n;
    int domain_bits, split, rows;
  } plans[] = {
      {"uneven", 3000, 64, 0, 0},
      {"uneven_given_rows", 2000, 64, 0, 1},
      {"empty_shard", 1500, 64, 1, 0},
      {"all_on_rank0", 1000, 64, 2, 1},
      {"duplicates_across_ranks", 2500, 4, 3, 0},
      {"duplicates_random_cuts", 1200, 7, 0, 1},
      {"all_on_one_shard", 900, 0, 3, 1},
      {"no_keys", 0, 64, 0, 0},
      {"one_key", 1, 64, 0, 0},
  };
  for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++)
    for (int dt = 0; dt < 2; dt++) {
      const rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
      if (!CASE_PART(dist_keys_oracle, plans[p].name)) continue;
      scenario s;
      make_scenario(&s, plans[p].name, dtype, plans[p].n, plans[p].domain_bits, plans[p].split, plans[p].rows);
      check_scenario(ctx, &s);
      free_scenario(&s);
    }
  if (CASE_RUN(dist_keys_small_messages)) {
    /* MPI's path past its int counts (dist/mpi.c), forced: every all-to-all of the build and the
     * queries goes as messages of at most 7 items (the local transport has no such limit) */
    rdx_dist_force_message_items(ctx, 7);
    for (int dt = 0; dt < 2; dt++) {
      scenario s;
      make_scenario(&s, dt ? "small_messages_dups" : "small_messages", dt ? RDX_U32 : RDX_U64, 1100, dt ? 5 : 64,
                    dt ? 3 : 0, dt);
      check_scenario(ctx, &s);
      free_scenario(&s);
    }
    rdx_dist_force_message_items(ctx, 0);
  }
  if (CASE_RUN(dist_fault_walk)) {
    scenario s;
    make_scenario(&s, "fault", RDX_U64, 800, 64, 0, 0);
    fault_walk(ctx, &s);
    free_scenario(&s);
  }
  static const struct {
    const char *name;
    int64_t n;
    int domain_bits, split, rows;
  } updates[] = {
      {"uneven", 600, 64, 0, 0},
      {"duplicates_given_rows", 500, 4, 3, 1},
      {"empty_shard", 300, 64, 1, 1},
      {"no_keys", 0, 64, 0, 0},
  };
  for (size_t p = 0; p < sizeof updates / sizeof updates[0]; p++)
    for (int dt = 0; dt < 2; dt++) {
      if (!CASE_PART(dist_keys_updates, updates[p].name)) continue;
      scenario s;
      make_scenario(&s, updates[p].name, dt ? RDX_U64 : RDX_U32, updates[p].n, updates[p].domain_bits, updates[p].split,
                    updates[p].rows);
      check_updates(ctx, &s);
      free_scenario(&s);
    }
  if (CASE_RUN(dist_update_fault_walk)) {
    scenario s;
    make_scenario(&s, "update_fault", RDX_U64, 500, 64, 0, 0);
    update_fault_walk(ctx, &s, RDX_KIND_SORTED, size_ - 1);
    update_fault_walk(ctx, &s, RDX_KIND_HASH, 0);
    free_scenario(&s);
  }
  if (CASE_RUN(dist_update_refusals)) check_update_refusals(ctx);
  check_refusals(ctx);
}

int main(int argc, char **argv) { return dist_main(argc, argv, body); }
