/*
 * scan.c: the scan kind on the CPU: no index at all, every query reads the whole column. It is
 * the baseline every other kind must beat, and it needs no build beyond a copy of the column in
 * ascending row order (so every query's rows come out ascending without a sort).
 *
 * Cost: O(n) per query; use it for small columns or as a reference.
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
    tmp[i].row = in->rows == NULL ? (uint64_t)i
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
    RDX_KIND_SCAN, RDX_BACKEND_CPU, scan_build, scan_destroy, scan_query, 1, 1, NULL, NULL, NULL,
};
