/*
 * entries.c: sorted (key, row) entries on the CPU, the common first step of the sorted, btree
 * and cgRX builds (the CSR helpers of lookups and fills are core's, src/core/csr.c).
 *
 * The sort is a parallel LSD radix sort over 8-bit digits, least significant first: the row
 * digits (only when the given rows are not already ascending, so that equal keys end in row
 * order), then the key digits. A pass whose digit is the same for every entry is skipped, so
 * small keys and small row ids cost fewer passes. Tuned for 2^20..2^26 entries on 2..16 cores.
 */
#include "keys/keys.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN 65536

typedef struct radix_job {
  const rdx_key_input *in;
  void *src, *dst;        /* pair arrays */
  int64_t n;
  int width;              /* 32 or 64 */
  int field;              /* 0 = key, 1 = row */
  int shift;              /* bit offset of the digit */
  int n_chunks;
  int64_t chunk;
  uint64_t (*hist)[256];  /* per chunk */
  uint64_t row_or, key_or, row_desc; /* for the setup pass */
  uint64_t *chunk_or_key, *chunk_or_row, *chunk_desc;
} radix_job;

static inline uint64_t field_of(const void *pairs, int width, int64_t i, int field) {
  if (width == 32) {
    const rdx_pair32 *p = (const rdx_pair32 *)pairs + i;
    return field ? p->row : p->key;
  }
  const rdx_pair64 *p = (const rdx_pair64 *)pairs + i;
  return field ? p->row : p->key;
}

static inline uint64_t in_key(const rdx_key_input *in, int64_t i) {
  return in->key_dtype == RDX_U32 ? ((const uint32_t *)in->keys)[i] : ((const uint64_t *)in->keys)[i];
}
static inline uint64_t in_row(const rdx_key_input *in, int64_t i) {
  if (in->rows == NULL) return (uint64_t)i;
  return in->row_dtype == RDX_U32 ? ((const uint32_t *)in->rows)[i] : ((const uint64_t *)in->rows)[i];
}

/* Setup: per chunk, OR of keys and rows (to skip constant digits) and whether rows descend. */
static void scan_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  uint64_t kor = 0, ror = 0, desc = 0;
  uint64_t prev = lo > 0 ? in_row(j->in, lo - 1) : 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t k = in_key(j->in, i), r = in_row(j->in, i);
    kor |= k;
    ror |= r;
    if (i > 0 && r < prev) desc = 1;
    prev = r;
  }
  j->chunk_or_key[t] = kor;
  j->chunk_or_row[t] = ror;
  j->chunk_desc[t] = desc;
}

static void fill_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  for (int64_t i = lo; i < hi; i++) {
    if (j->width == 32) {
      rdx_pair32 *p = (rdx_pair32 *)j->src + i;
      p->key = (uint32_t)in_key(j->in, i);
      p->row = (uint32_t)in_row(j->in, i);
    } else {
      rdx_pair64 *p = (rdx_pair64 *)j->src + i;
      p->key = in_key(j->in, i);
      p->row = in_row(j->in, i);
    }
  }
}

static void hist_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  uint64_t *h = j->hist[t];
  memset(h, 0, 256 * sizeof *h);
  for (int64_t i = lo; i < hi; i++) h[(field_of(j->src, j->width, i, j->field) >> j->shift) & 255]++;
}

static void scatter_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  uint64_t *pos = j->hist[t]; /* turned into write positions by the caller */
  size_t sz = j->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  for (int64_t i = lo; i < hi; i++) {
    unsigned d = (unsigned)((field_of(j->src, j->width, i, j->field) >> j->shift) & 255);
    memcpy((char *)j->dst + pos[d]++ * sz, (const char *)j->src + i * sz, sz);
  }
}

static void radix_pass(rdx_context *ctx, radix_job *j) {
  rdx_parallel_for(ctx, j->n_chunks, hist_task, j);
  uint64_t sum = 0;
  for (int d = 0; d < 256; d++)
    for (int t = 0; t < j->n_chunks; t++) {
      uint64_t c = j->hist[t][d];
      j->hist[t][d] = sum;
      sum += c;
    }
  rdx_parallel_for(ctx, j->n_chunks, scatter_task, j);
  void *tmp = j->src;
  j->src = j->dst;
  j->dst = tmp;
}

rdx_status rdx_entries_build_cpu(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out) {
  static const char what[] = "rdx_index_build: sorting entries";
  radix_job j;
  memset(&j, 0, sizeof j);
  j.in = in;
  j.n = in->n;
  int64_t per = (in->n + ctx->n_threads * 4 - 1) / (ctx->n_threads * 4);
  j.chunk = per < CHUNK_MIN ? CHUNK_MIN : per;
  j.n_chunks = (int)((in->n + j.chunk - 1) / j.chunk);
  rdx_status st = RDX_OK;
  void *scratch = NULL, *a = NULL, *b = NULL;
  size_t meta = (size_t)j.n_chunks * (256 * 8 + 24);
  RDX_CHECK(rdx_mem_alloc(ctx, what, &scratch, meta, RDX_HOST));
  j.hist = (uint64_t(*)[256])scratch;
  j.chunk_or_key = (uint64_t *)((char *)scratch + (size_t)j.n_chunks * 256 * 8);
  j.chunk_or_row = j.chunk_or_key + j.n_chunks;
  j.chunk_desc = j.chunk_or_row + j.n_chunks;
  rdx_parallel_for(ctx, j.n_chunks, scan_task, &j);
  uint64_t kor = 0, ror = 0, desc = 0;
  for (int t = 0; t < j.n_chunks; t++) {
    kor |= j.chunk_or_key[t];
    ror |= j.chunk_or_row[t];
    desc |= j.chunk_desc[t];
  }
  j.width = (in->key_dtype == RDX_U32 && ror <= UINT32_MAX) ? 32 : 64;
  size_t sz = j.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &a, (size_t)in->n * sz, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &b, (size_t)in->n * sz, RDX_HOST), st, fail);
  j.src = a;
  j.dst = b;
  rdx_parallel_for(ctx, j.n_chunks, fill_task, &j);
  /* Rows first (only if some row is smaller than its predecessor), then keys: LSD order. */
  for (int field = desc ? 1 : 0; field >= 0; field--) {
    uint64_t used = field ? ror : kor;
    for (int shift = 0; shift < 64; shift += 8) {
      if (((used >> shift) & 255) == 0) continue; /* every entry has digit 0 here */
      j.field = field;
      j.shift = shift;
      radix_pass(ctx, &j);
    }
  }
  /* the sorted data is in j.src; free the other buffer */
  rdx_mem_free(ctx, j.src == a ? b : a);
  rdx_mem_free(ctx, scratch);
  out->pairs = j.src;
  out->n = in->n;
  out->width = j.width;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, scratch);
  return st;
}

void rdx_entries_free(rdx_context *ctx, rdx_entries *e) {
  rdx_mem_free(ctx, e->pairs);
  e->pairs = NULL;
  e->n = 0;
}
