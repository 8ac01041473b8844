/*
 * scan.c: the scan kind on the CPU: no index at all, every query reads the whole column. It is
 * the baseline every other kind must beat, and it needs no build beyond a copy of the column in
 * ascending row order (so every query's rows come out ascending without a sort).
 *
 * Cost: O(n) per query; use it for small columns or as a reference.
 *
 * Updates keep the column in ascending row order: an insert sorts its batch by (row, key) and
 * merges it in (implied rows come after every earlier one, so that merge is an append); an erase
 * keeps the pairs whose key is not in the sorted batch. Both write new arrays and swap them in.
 */
#include "keys/keys.h"

#include <stdlib.h>
#include <string.h>

typedef struct scan_impl {
  uint64_t *keys;   /* n keys, widened to u64, in ascending row order */
  uint64_t *rows;   /* n rows, ascending */
  int64_t n;
} scan_impl;

typedef struct pair_u64 {
  uint64_t row, key;
} pair_u64;

static int cmp_row(const void *a, const void *b) {
  const pair_u64 *x = (const pair_u64 *)a, *y = (const pair_u64 *)b;
  if (x->row != y->row) return (x->row > y->row) - (x->row < y->row);
  return (x->key > y->key) - (x->key < y->key);
}

static rdx_status scan_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  scan_impl *s = (scan_impl *)calloc(1, sizeof *s);
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: scan handle");
  rdx_status st;
  pair_u64 *tmp = NULL;
  s->n = in->n;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan keys", (void **)&s->keys, (size_t)in->n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan rows", (void **)&s->rows, (size_t)in->n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: scan scratch", (void **)&tmp, (size_t)in->n * sizeof *tmp, RDX_HOST), st, fail);
  int ascending = 1;
  for (int64_t i = 0; i < in->n; i++) {
    tmp[i].key = in->key_dtype == RDX_U32 ? ((const uint32_t *)in->keys)[i] : ((const uint64_t *)in->keys)[i];
    tmp[i].row = in->rows == NULL ? in->first_row + (uint64_t)i
                 : in->row_dtype == RDX_U32 ? ((const uint32_t *)in->rows)[i]
                                            : ((const uint64_t *)in->rows)[i];
    if (i > 0 && tmp[i].row < tmp[i - 1].row) ascending = 0;
  }
  if (!ascending) qsort(tmp, (size_t)in->n, sizeof *tmp, cmp_row);
  for (int64_t i = 0; i < in->n; i++) {
    s->keys[i] = tmp[i].key;
    s->rows[i] = tmp[i].row;
  }
  rdx_mem_free(ctx, tmp);
  idx->impl = s;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, tmp);
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  free(s);
  return st;
}

static void scan_destroy(rdx_context *ctx, rdx_index *idx) {
  scan_impl *s = (scan_impl *)idx->impl;
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  free(s);
}

/* ---- updates ---- */

static void set_arrays(rdx_context *ctx, scan_impl *s, uint64_t *keys, uint64_t *rows, int64_t n) {
  rdx_mem_free(ctx, s->keys);
  rdx_mem_free(ctx, s->rows);
  s->keys = keys;
  s->rows = rows;
  s->n = n;
}

static rdx_status scan_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  scan_impl *s = (scan_impl *)idx->impl;
  int64_t n = s->n + in->n;
  uint64_t *keys = NULL, *rows = NULL;
  pair_u64 *tmp = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_insert: scan keys", (void **)&keys, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_insert: scan rows", (void **)&rows, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_insert: scan scratch", (void **)&tmp, (size_t)in->n * sizeof *tmp, RDX_HOST),
                 st, fail);
  int ascending = 1;
  for (int64_t i = 0; i < in->n; i++) {
    tmp[i].key = in->key_dtype == RDX_U32 ? ((const uint32_t *)in->keys)[i] : ((const uint64_t *)in->keys)[i];
    tmp[i].row = in->rows == NULL ? in->first_row + (uint64_t)i
                 : in->row_dtype == RDX_U32 ? ((const uint32_t *)in->rows)[i]
                                            : ((const uint64_t *)in->rows)[i];
    if (i > 0 && tmp[i].row < tmp[i - 1].row) ascending = 0;
  }
  if (!ascending) qsort(tmp, (size_t)in->n, sizeof *tmp, cmp_row);
  int64_t a = 0, b = 0;
  for (int64_t o = 0; o < n; o++) { /* merge by (row, key); old pairs first on ties */
    int take_old = b == in->n || (a < s->n && (s->rows[a] < tmp[b].row ||
                                               (s->rows[a] == tmp[b].row && s->keys[a] <= tmp[b].key)));
    if (take_old) keys[o] = s->keys[a], rows[o] = s->rows[a++];
    else keys[o] = tmp[b].key, rows[o] = tmp[b++].row;
  }
  rdx_mem_free(ctx, tmp);
  set_arrays(ctx, s, keys, rows, n);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, tmp);
  return st;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int has_key(const uint64_t *sk, int64_t m, uint64_t k) {
  int64_t a = 0, z = m;
  while (a < z) {
    int64_t mid = a + (z - a) / 2;
    if (sk[mid] < k) a = mid + 1;
    else z = mid;
  }
  return a < m && sk[a] == k;
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
static rdx_status scan_erase(rdx_context *ctx, rdx_index *idx, const void *k, int64_t m, int64_t *n_erased) {
  scan_impl *s = (scan_impl *)idx->impl;
  uint64_t *sk = NULL, *keys = NULL, *rows = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_erase: scan keys", (void **)&sk, (size_t)m * 8, RDX_HOST), st, fail);
  for (int64_t i = 0; i < m; i++) sk[i] = idx->dtype == RDX_U32 ? ((const uint32_t *)k)[i] : ((const uint64_t *)k)[i];
  qsort(sk, (size_t)m, 8, cmp_u64);
  int64_t kept = 0;
  for (int64_t i = 0; i < s->n; i++) kept += !has_key(sk, m, s->keys[i]);
  *n_erased = s->n - kept;
  if (kept == 0 || kept == s->n) {
    rdx_mem_free(ctx, sk);
    return RDX_OK;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_erase: scan keys", (void **)&keys, (size_t)kept * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_erase: scan rows", (void **)&rows, (size_t)kept * 8, RDX_HOST), st, fail);
  for (int64_t i = 0, o = 0; i < s->n; i++)
    if (!has_key(sk, m, s->keys[i])) keys[o] = s->keys[i], rows[o++] = s->rows[i];
  rdx_mem_free(ctx, sk);
  set_arrays(ctx, s, keys, rows, kept);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, sk);
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  return st;
}

/* The column's pairs sorted by (key, row): the entries' own sort over it, as a build's input. */
static rdx_status scan_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const scan_impl *s = (const scan_impl *)idx->impl;
  rdx_key_input in;
  memset(&in, 0, sizeof in);
  in.keys = s->keys;
  in.rows = s->rows;
  in.n = s->n;
  in.key_dtype = RDX_U64;
  in.row_dtype = RDX_U64;
  in.opts = idx->opts;
  uint32_t *k32 = NULL;
  if (idx->dtype == RDX_U32) { /* u32 keys keep width 32 when every row fits */
    RDX_CHECK(rdx_mem_alloc(ctx, "scan: entries keys", (void **)&k32, (size_t)s->n * 4, RDX_HOST));
    for (int64_t i = 0; i < s->n; i++) k32[i] = (uint32_t)s->keys[i];
    in.keys = k32;
    in.key_dtype = RDX_U32;
  }
  rdx_status st = rdx_entries_build_cpu(ctx, &in, out);
  rdx_mem_free(ctx, k32);
  return st;
}

typedef enum { OP_LOOKUP, OP_COUNT, OP_FILL } op_t;

typedef struct scan_job {
  const scan_impl *s;
  const void *q;
  int u32;            /* queries are u32 */
  int range;          /* q holds (lo, hi) pairs */
  int64_t n;
  op_t op;
  uint64_t *out, *rows;
} scan_job;

#define SCAN_CHUNK 64

static void scan_task(void *arg, int64_t t, int thread) {
  const scan_job *j = (const scan_job *)arg;
  const scan_impl *s = j->s;
  int64_t b = t * SCAN_CHUNK, e = b + SCAN_CHUNK < j->n ? b + SCAN_CHUNK : j->n;
  for (int64_t i = b; i < e; i++) {
    int64_t a_i = j->range ? 2 * i : i, z_i = j->range ? 2 * i + 1 : i;
    uint64_t lo = j->u32 ? ((const uint32_t *)j->q)[a_i] : ((const uint64_t *)j->q)[a_i];
    uint64_t hi = j->u32 ? ((const uint32_t *)j->q)[z_i] : ((const uint64_t *)j->q)[z_i];
    uint64_t count = 0, first = RDX_MISS;
    uint64_t *dst = j->op == OP_FILL ? j->rows + j->out[i] : NULL;
    for (int64_t k = 0; k < s->n; k++) {
      uint64_t key = s->keys[k];
      if (key < lo || key > hi) continue;
      if (j->op == OP_LOOKUP) {
        first = s->rows[k]; /* rows ascend, so the first match is the smallest */
        break;
      }
      if (dst) *dst++ = s->rows[k];
      count++;
    }
    if (j->op == OP_LOOKUP) j->out[i] = first;
    if (j->op == OP_COUNT) j->out[i] = count;
  }
}

static rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int range,
                      op_t op, uint64_t *out, uint64_t *rows) {
  scan_job j = {(const scan_impl *)idx->impl, q, idx->dtype == RDX_U32, range, n, op, out, rows};
  return rdx_parallel_for(ctx, (n + SCAN_CHUNK - 1) / SCAN_CHUNK, scan_task, &j);
}

static rdx_status scan_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                             uint64_t *out, uint64_t *rows) {
  op_t o = op == RDX_KEY_LOOKUP ? OP_LOOKUP : op == RDX_KEY_LOOKUP_COUNT || op == RDX_KEY_RANGE_COUNT ? OP_COUNT : OP_FILL;
  return run(ctx, idx, q, n, op >= RDX_KEY_RANGE_COUNT, o, out, rows);
}

const rdx_key_ops rdx_scan_cpu_ops = {
    RDX_KIND_SCAN, RDX_BACKEND_CPU, scan_build, scan_destroy, scan_query, 1, 1, scan_insert, scan_erase, scan_entries,
};
