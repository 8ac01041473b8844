/*
 * radix.c: the CPU's parallel LSD radix sort of u64 keys, with an optional u32 payload, shared
 * by the soft BVH build (Morton codes and primitive indices) and the lookup generator (keys).
 * Stable, 8-bit digits, one histogram per chunk of the input so the scatter runs on every
 * thread; digits that are equal in every key need no pass (Morton codes of a small scene, or
 * keys below 2^32, skip most of them).
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

#define RADIX_CHUNK ((int64_t)1 << 16)

typedef struct radix_job {
  uint64_t *keys, *keys2;
  uint32_t *vals, *vals2; /* NULL: keys only */
  int64_t n;
  int shift;
  uint64_t (*hist)[256];  /* per chunk */
  uint64_t *chunk_or, *chunk_and;
} radix_job;

static int64_t chunk_end(int64_t t, int64_t n) { return (t + 1) * RADIX_CHUNK < n ? (t + 1) * RADIX_CHUNK : n; }

static void bits_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  uint64_t o = 0, a = ~(uint64_t)0;
  (void)thread;
  for (int64_t i = t * RADIX_CHUNK; i < chunk_end(t, j->n); i++) o |= j->keys[i], a &= j->keys[i];
  j->chunk_or[t] = o;
  j->chunk_and[t] = a;
}

static void hist_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  uint64_t *h = j->hist[t];
  (void)thread;
  memset(h, 0, 256 * sizeof *h);
  for (int64_t i = t * RADIX_CHUNK; i < chunk_end(t, j->n); i++) h[(j->keys[i] >> j->shift) & 255]++;
}

static void scatter_task(void *arg, int64_t t, int thread) {
  radix_job *j = (radix_job *)arg;
  uint64_t *pos = j->hist[t];
  (void)thread;
  for (int64_t i = t * RADIX_CHUNK; i < chunk_end(t, j->n); i++) {
    uint64_t d = pos[(j->keys[i] >> j->shift) & 255]++;
    j->keys2[d] = j->keys[i];
    if (j->vals) j->vals2[d] = j->vals[i];
  }
}

rdx_status rdx_radix_sort_u64(rdx_context *ctx, uint64_t **keys, uint64_t **keys_tmp, uint32_t **vals,
                              uint32_t **vals_tmp, int64_t n) {
  radix_job j;
  memset(&j, 0, sizeof j);
  j.keys = *keys, j.keys2 = *keys_tmp, j.n = n;
  if (vals) j.vals = *vals, j.vals2 = *vals_tmp;
  if (n < 2) return RDX_OK;
  int64_t n_chunks = (n + RADIX_CHUNK - 1) / RADIX_CHUNK;
  void *meta = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_radix_sort_u64: histograms", &meta, (size_t)n_chunks * (256 + 2) * 8, RDX_HOST));
  j.hist = (uint64_t(*)[256])meta;
  j.chunk_or = (uint64_t *)meta + (size_t)n_chunks * 256;
  j.chunk_and = j.chunk_or + n_chunks;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, bits_task, &j), st, done);
  uint64_t o = 0, a = ~(uint64_t)0;
  for (int64_t t = 0; t < n_chunks; t++) o |= j.chunk_or[t], a &= j.chunk_and[t];
  for (j.shift = 0; j.shift < 64; j.shift += 8) {
    if ((((o ^ a) >> j.shift) & 255) == 0) continue; /* the same digit everywhere */
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, hist_task, &j), st, done);
    uint64_t sum = 0;
    for (int d = 0; d < 256; d++)
      for (int64_t t = 0; t < n_chunks; t++) {
        uint64_t c = j.hist[t][d];
        j.hist[t][d] = sum;
        sum += c;
      }
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, scatter_task, &j), st, done);
    uint64_t *tk = j.keys;
    j.keys = j.keys2, j.keys2 = tk;
    uint32_t *tv = j.vals;
    j.vals = j.vals2, j.vals2 = tv;
  }
  st = RDX_OK;
done:
  *keys = j.keys, *keys_tmp = j.keys2;
  if (vals) *vals = j.vals, *vals_tmp = j.vals2;
  rdx_mem_free(ctx, meta);
  return st;
}
