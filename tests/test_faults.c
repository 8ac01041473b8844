/*
 * test_faults.c: fault injection (SQLite's *fault.test, Lua's debug_realloc). The memory account
 * fails its Nth allocation for N = 1, 2, ... until a call succeeds; every failure must return an
 * out-of-memory status with a message, leak nothing, and leave an existing index answering
 * exactly as before.
 */
#include "core/core.h"
#include "keys_check.h"

static const rdx_kind kinds[] = {RDX_KIND_SCAN, RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH, RDX_KIND_RX,
                                 RDX_KIND_CGRX};

static int is_oom(rdx_status st) { return st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY; }

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  enum { N = 5000, M = 300, BIG = 3 * 8192 + 1234 };
  uint64_t *keys = (uint64_t *)malloc(N * 8), *q = (uint64_t *)malloc(M * 8), *b = (uint64_t *)malloc(2 * M * 8);
  for (int i = 0; i < N; i++) keys[i] = check_below(2000) * ((uint64_t)1 << 20); /* duplicates, keys above 2^32 */
  for (int i = 0; i < M; i++) {
    q[i] = i % 2 ? keys[check_below(N)] : check_rand_();
    b[2 * i] = keys[check_below(N)];
    b[2 * i + 1] = b[2 * i] + check_below((uint64_t)1 << 30);
  }
  rdx_array ka = rdx_host_array(keys, N, RDX_U64), qa = rdx_host_array(q, M, RDX_U64), ba = rdx_host_matrix(b, M, 2, RDX_U64);
  uint64_t *want = (uint64_t *)malloc(M * 8), *got = (uint64_t *)malloc(M * 8);
  /* the M queries over and over, BIG of them */
  uint64_t *big_keys = (uint64_t *)malloc(BIG * 8), *big_got = (uint64_t *)malloc(BIG * 8);
  for (int i = 0; i < BIG; i++) big_keys[i] = q[i % M];
  const rdx_array big_q = rdx_host_array(big_keys, BIG, RDX_U64);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    check_case_ = rdx_kind_name(kinds[k]);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    int64_t base = 0, now = 0;
    rdx_context_memory(ctx, &base, NULL);
    /* builds */
    rdx_index *idx = NULL;
    rdx_status st = RDX_OK;
    int n_fail = 0;
    for (int64_t nth = 1; nth < 1000; nth++) {
      rdx_mem_fail_after(ctx, nth);
      st = rdx_index_build(ctx, ka, rdx_no_array(), &bo, &idx);
      rdx_mem_fail_after(ctx, 0);
      rdx_context_memory(ctx, &now, NULL);
      if (st == RDX_OK || st == RDX_ERR_UNSUPPORTED) break;
      n_fail++;
      if (!is_oom(st)) CHECK_FAIL_("build with allocation %lld failing returned %s", (long long)nth, rdx_status_name(st));
      CHECK(idx == NULL);
      CHECK_EQ(now, base);
      CHECK(strstr(rdx_context_message(ctx), "fault injected") != NULL);
    }
    if (st == RDX_ERR_UNSUPPORTED) continue; /* the kind is not on this backend */
    CHECK_OK(ctx, st);
    CHECK(n_fail >= 1); /* every build allocates */
    /* queries: answers before, failures in between, the same answers after */
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, qa, rdx_host_array(want, M, RDX_U64)));
    rdx_context_memory(ctx, &base, NULL);
    for (int op = 0; op < 2; op++) {
      if (op == 1 && kinds[k] == RDX_KIND_HASH) break;
      for (int64_t nth = 1; nth < 1000; nth++) {
        rdx_result *r = NULL;
        rdx_mem_fail_after(ctx, nth);
        st = op == 0 ? rdx_index_lookup_alloc(ctx, idx, qa, &r) : rdx_index_range_alloc(ctx, idx, ba, &r);
        rdx_mem_fail_after(ctx, 0);
        rdx_result_free(ctx, r);
        rdx_context_memory(ctx, &now, NULL);
        CHECK_EQ(now, base);
        if (st == RDX_OK) break;
        if (!is_oom(st)) CHECK_FAIL_("query %d with allocation %lld failing returned %s", op, (long long)nth, rdx_status_name(st));
        CHECK(r == NULL);
        memset(got, 0, M * 8);
        CHECK_OK(ctx, rdx_index_lookup(ctx, idx, qa, rdx_host_array(got, M, RDX_U64)));
        CHECK(memcmp(got, want, M * 8) == 0);
      }
    }
    /* a batch of host queries to host answers, which a GPU answers in chunks through the staging
     * ring (four with --staging ring): a failure leaves nothing held and the next call answers */
    for (int64_t nth = 1; nth < 1000; nth++) {
      memset(big_got, 0, BIG * 8);
      rdx_mem_fail_after(ctx, nth);
      st = rdx_index_lookup(ctx, idx, big_q, rdx_host_array(big_got, BIG, RDX_U64));
      rdx_mem_fail_after(ctx, 0);
      rdx_context_memory(ctx, &now, NULL);
      CHECK_EQ(now, base);
      if (st == RDX_OK) break;
      if (!is_oom(st)) CHECK_FAIL_("big lookup with allocation %lld failing returned %s", (long long)nth, rdx_status_name(st));
    }
    CHECK_OK(ctx, st);
    for (int i = 0; i < BIG; i++)
      if (big_got[i] != want[i % M]) {
        CHECK_FAIL_("big lookup %d differs after the fault walk", i);
        break;
      }
    rdx_index_destroy(idx);
  }
  free(big_got);
  free(big_keys);
  free(keys);
  free(q);
  free(b);
  free(want);
  free(got);
  return check_end(ctx);
}
