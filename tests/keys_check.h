/*
 * keys_check.h: one routine that checks a key index of any kind against the oracle on given
 * keys, rows, queries and bounds, through every public query call: the fast path, the
 * two-phase lookup and range calls, the allocating calls, and (on GPU contexts) with the same
 * batch handed over in device memory. Used by every key-index test file.
 */
#ifndef RDX_KEYS_CHECK_H
#define RDX_KEYS_CHECK_H

#include "check.h"
#include "keys_oracle.h"

static inline uint64_t kc_at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

static inline int kc_gpu(rdx_context *ctx) { return rdx_context_backend(ctx) != RDX_BACKEND_CPU; }

/* A device copy of a host array (GPU contexts), or the array itself. */
static inline rdx_array kc_to_device(rdx_context *ctx, rdx_array h) {
  if (!kc_gpu(ctx) || h.data == NULL) return h;
  size_t bytes = (size_t)h.count * (size_t)h.columns * rdx_dtype_size(h.dtype);
  void *d = NULL;
  CHECK_OK(ctx, rdx_malloc(ctx, &d, bytes, RDX_DEVICE));
  CHECK_OK(ctx, rdx_copy(ctx, d, RDX_DEVICE, h.data, RDX_HOST, bytes));
  rdx_array a = h;
  a.data = d;
  a.where = RDX_DEVICE;
  return a;
}
static inline void kc_free_device(rdx_context *ctx, rdx_array a) {
  if (a.where == RDX_DEVICE) rdx_free(ctx, a.data, RDX_DEVICE);
}

/* Check the CSR result (offsets n+1, rows) of queries or bounds against the oracle. */
static inline void kc_check_csr(const keys_oracle *o, rdx_array q, int range, const uint64_t *offsets,
                                const uint64_t *rows) {
  uint64_t *want = NULL;
  size_t cap = 0;
  CHECK_EQ(offsets[0], 0);
  for (int64_t i = 0; i < q.count; i++) {
    uint64_t lo = range ? kc_at(q, 2 * i) : kc_at(q, i), hi = range ? kc_at(q, 2 * i + 1) : lo;
    uint64_t c = keys_oracle_count(o, lo, hi);
    if (offsets[i + 1] - offsets[i] != c) {
      CHECK_FAIL_("query %lld [%llu, %llu]: %llu rows, oracle %llu", (long long)i, (unsigned long long)lo,
                  (unsigned long long)hi, (unsigned long long)(offsets[i + 1] - offsets[i]), (unsigned long long)c);
      return;
    }
    if (c > cap) {
      free(want);
      cap = c * 2;
      want = (uint64_t *)malloc(cap * 8);
    }
    keys_oracle_rows(o, lo, hi, want);
    if (c && memcmp(want, rows + offsets[i], c * 8) != 0) {
      CHECK_FAIL_("query %lld [%llu, %llu]: rows differ from the oracle", (long long)i, (unsigned long long)lo,
                  (unsigned long long)hi);
      free(want);
      return;
    }
  }
  free(want);
}

/* rdx_index_range_alloc of host bounds (and, on a GPU, of a device copy) against the oracle.
 * Returns the passes that failed: bit 0 host bounds, bit 1 device bounds. */
static inline int kc_check_range_alloc(rdx_context *ctx, const rdx_index *idx, const keys_oracle *o, rdx_array bounds) {
  int failed = 0;
  for (int pass = 0; pass < (kc_gpu(ctx) ? 2 : 1); pass++) {
    int before = check_failures_;
    rdx_array b = pass ? kc_to_device(ctx, bounds) : bounds;
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_index_range_alloc(ctx, idx, b, &r));
    if (r) {
      uint64_t *ho, *hr;
      check_result_host(ctx, r, &ho, &hr);
      kc_check_csr(o, bounds, 1, ho, hr);
      check_result_host_free(r, ho, hr);
      rdx_result_free(ctx, r);
    }
    kc_free_device(ctx, b);
    if (check_failures_ != before) failed |= 1 << pass;
  }
  return failed;
}

static inline void kc_check_index(rdx_context *ctx, const rdx_index *idx, const keys_oracle *o, rdx_array queries,
                                  rdx_array bounds);

/* Build an index with the options `opts` over keys/rows (host arrays) and check every query
 * call. Returns 0 when the kind is not available on this backend (RDX_ERR_UNSUPPORTED at build). */
static inline int kc_check_build(rdx_context *ctx, const rdx_build_options *opts, rdx_array keys, rdx_array rows,
                                 rdx_array queries, rdx_array bounds) {
  keys_oracle o;
  CHECK(keys_oracle_build(&o, keys, rows));
  rdx_build_options bo = *opts;
  /* On GPU contexts build from device memory half the time, to cover both paths. */
  int dev = kc_gpu(ctx) && (check_rand_() & 1);
  rdx_array kd = dev ? kc_to_device(ctx, keys) : keys, rd = dev ? kc_to_device(ctx, rows) : rows;
  rdx_index *idx = NULL;
  rdx_status st = rdx_index_build(ctx, kd, rd, &bo, &idx);
  kc_free_device(ctx, kd);
  kc_free_device(ctx, rd);
  if (st == RDX_ERR_UNSUPPORTED) {
    keys_oracle_free(&o);
    return 0;
  }
  CHECK_OK(ctx, st);
  if (idx == NULL) {
    keys_oracle_free(&o);
    return 1;
  }
  CHECK_EQ(rdx_index_count(idx), keys.count);
  kc_check_index(ctx, idx, &o, queries, bounds);
  rdx_index_destroy(idx);
  keys_oracle_free(&o);
  return 1;
}

/* Check every query call of an index against the oracle o of its pairs (queries and bounds: host
 * arrays; on GPU contexts the point calls run once more from device memory). */
static inline void kc_check_index(rdx_context *ctx, const rdx_index *idx, const keys_oracle *o_, rdx_array queries,
                                  rdx_array bounds) {
  const keys_oracle o = *o_;
  const rdx_kind kind = rdx_index_kind(idx);
  int64_t m = queries.count;
  uint64_t *out = (uint64_t *)malloc((size_t)(m + 1) * 8), *counts = (uint64_t *)malloc((size_t)(m + 1) * 8);
  uint64_t *offsets = (uint64_t *)malloc((size_t)(m + 2) * 8);
  for (int pass = 0; pass < (kc_gpu(ctx) ? 2 : 1); pass++) {
    rdx_array q = pass ? kc_to_device(ctx, queries) : queries;
    /* fast path into poisoned output (host) */
    memset(out, 0xA5, (size_t)(m + 1) * 8);
    if (pass == 0) {
      CHECK_OK(ctx, rdx_index_lookup(ctx, idx, q, rdx_host_array(out, m, RDX_U64)));
    } else {
      void *d = NULL;
      CHECK_OK(ctx, rdx_malloc(ctx, &d, (size_t)(m ? m : 1) * 8, RDX_DEVICE));
      CHECK_OK(ctx, rdx_index_lookup(ctx, idx, q, rdx_device_array(d, m, RDX_U64)));
      CHECK_OK(ctx, rdx_copy(ctx, out, RDX_HOST, d, RDX_DEVICE, (size_t)m * 8));
      rdx_free(ctx, d, RDX_DEVICE);
    }
    for (int64_t i = 0; i < m; i++) {
      uint64_t want = keys_oracle_lookup(&o, kc_at(queries, i));
      if (out[i] != want) {
        CHECK_FAIL_("%s lookup of key %llu (query %lld): row %llu, oracle %llu", rdx_kind_name(kind),
                    (unsigned long long)kc_at(queries, i), (long long)i, (unsigned long long)out[i],
                    (unsigned long long)want);
        break;
      }
    }
    CHECK_EQ(out[m], 0xA5A5A5A5A5A5A5A5ull); /* nothing written past the end */
    /* all matches through the allocating call */
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_index_lookup_alloc(ctx, idx, q, &r));
    if (r) {
      uint64_t *ho, *hr;
      check_result_host(ctx, r, &ho, &hr);
      kc_check_csr(&o, queries, 0, ho, hr);
      check_result_host_free(r, ho, hr);
      rdx_result_free(ctx, r);
    }
    kc_free_device(ctx, q);
  }
  /* two-phase lookups by hand on the host */
  CHECK_OK(ctx, rdx_index_lookup_count(ctx, idx, queries, rdx_host_array(counts, m, RDX_U64)));
  uint64_t total = 0;
  CHECK_OK(ctx, rdx_counts_to_offsets(ctx, rdx_host_array(counts, m, RDX_U64), rdx_host_array(offsets, m + 1, RDX_U64), &total));
  uint64_t *rows_out = (uint64_t *)malloc((size_t)(total + 1) * 8);
  CHECK_OK(ctx, rdx_index_lookup_fill(ctx, idx, queries, rdx_host_array(offsets, m + 1, RDX_U64),
                                      rdx_host_array(rows_out, (int64_t)total, RDX_U64)));
  kc_check_csr(&o, queries, 0, offsets, rows_out);
  free(rows_out);

  /* ranges */
  int64_t mb = bounds.count;
  if (kind == RDX_KIND_HASH) {
    rdx_result *r = NULL;
    if (mb > 0) CHECK_STATUS(ctx, rdx_index_range_alloc(ctx, idx, bounds, &r), RDX_ERR_UNSUPPORTED);
    CHECK(r == NULL);
  } else if (mb > 0) {
    kc_check_range_alloc(ctx, idx, &o, bounds);
    uint64_t *rc = (uint64_t *)malloc((size_t)mb * 8);
    CHECK_OK(ctx, rdx_index_range_count(ctx, idx, bounds, rdx_host_array(rc, mb, RDX_U64)));
    for (int64_t i = 0; i < mb; i++)
      if (rc[i] != keys_oracle_count(&o, kc_at(bounds, 2 * i), kc_at(bounds, 2 * i + 1))) {
        CHECK_FAIL_("%s range_count of query %lld differs from the oracle", rdx_kind_name(kind), (long long)i);
        break;
      }
    free(rc);
  }
  free(out);
  free(counts);
  free(offsets);
}

/* kc_check_build with default options for `kind` and `bucket`. */
static inline int kc_check_kind(rdx_context *ctx, rdx_kind kind, int bucket, rdx_array keys, rdx_array rows,
                                rdx_array queries, rdx_array bounds) {
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = kind;
  bo.bucket_size = bucket;
  return kc_check_build(ctx, &bo, keys, rows, queries, bounds);
}

#endif /* RDX_KEYS_CHECK_H */
