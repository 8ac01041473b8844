/*
 * entries.c: sorted (key, row) entries on the CPU, the common first step of the sorted, btree
 * and cgRX builds (the CSR helpers of lookups and fills are core's, src/core/csr.c).
 *
 * The sort is a parallel LSD radix sort over 8-bit digits, least significant first: the row
 * digits (only when the given rows are not already ascending, so that equal keys end in row
 * order), then the key digits. A pass whose digit is the same for every entry is skipped, so
 * small keys and small row ids cost fewer passes. Tuned for 2^20..2^26 entries on 2..16 cores.
 *
 * Batch updates (keys.h): a merge sorts the batch alone, then merges it with the entries in
 * chunks of the output, each chunk's start in both inputs found by a merge-path binary search
 * (Odeh et al. 2012), so the threads write disjoint slices. An erase sorts and dedups its keys,
 * then counts and copies the surviving pairs chunk by chunk, walking the keys beside the pairs.
 */
#include "keys/sorted_hd.h"

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
  if (in->rows == NULL) return in->first_row + (uint64_t)i;
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

/* ---- batch updates ---- */

#define MERGE_CHUNK 65536

static inline void pair_at(const void *pairs, int width, int64_t i, uint64_t *k, uint64_t *r) {
  if (width == 32) {
    const rdx_pair32 *p = (const rdx_pair32 *)pairs + i;
    *k = p->key, *r = p->row;
  } else {
    const rdx_pair64 *p = (const rdx_pair64 *)pairs + i;
    *k = p->key, *r = p->row;
  }
}
static inline void pair_put(void *pairs, int width, int64_t i, uint64_t k, uint64_t r) {
  if (width == 32) {
    rdx_pair32 *p = (rdx_pair32 *)pairs + i;
    p->key = (uint32_t)k, p->row = (uint32_t)r;
  } else {
    rdx_pair64 *p = (rdx_pair64 *)pairs + i;
    p->key = k, p->row = r;
  }
}
/* a[i] <= b[j] in (key, row) order: ties go to a, so the merge is stable */
static inline int le_at(const rdx_entries *a, int64_t i, const rdx_entries *b, int64_t j) {
  uint64_t ka, ra, kb, rb;
  pair_at(a->pairs, a->width, i, &ka, &ra);
  pair_at(b->pairs, b->width, j, &kb, &rb);
  return ka < kb || (ka == kb && ra <= rb);
}

/* Merge path: how many of the first d outputs come from a. */
static int64_t co_rank(const rdx_entries *a, const rdx_entries *b, int64_t d) {
  int64_t lo = d > b->n ? d - b->n : 0, hi = d < a->n ? d : a->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (le_at(a, mid, b, d - mid - 1)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

typedef struct merge_job {
  const rdx_entries *a, *b;
  void *out;
  int width;
  int64_t n;
} merge_job;

static void merge_task(void *arg, int64_t t, int thread) {
  const merge_job *j = (const merge_job *)arg;
  int64_t d0 = t * MERGE_CHUNK, d1 = d0 + MERGE_CHUNK < j->n ? d0 + MERGE_CHUNK : j->n;
  int64_t i = co_rank(j->a, j->b, d0), k = d0 - i;
  int64_t i1 = co_rank(j->a, j->b, d1), k1 = d1 - i1;
  if (j->a->width == j->width && j->b->width == j->width) { /* same width: plain copies */
    size_t sz = j->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
    char *o = (char *)j->out + d0 * sz;
    while (i < i1 && k < k1) {
      if (le_at(j->a, i, j->b, k)) memcpy(o, (const char *)j->a->pairs + i++ * sz, sz);
      else memcpy(o, (const char *)j->b->pairs + k++ * sz, sz);
      o += sz;
    }
    memcpy(o, (const char *)j->a->pairs + i * sz, (size_t)(i1 - i) * sz);
    o += (i1 - i) * sz;
    memcpy(o, (const char *)j->b->pairs + k * sz, (size_t)(k1 - k) * sz);
    return;
  }
  for (int64_t d = d0; d < d1; d++) { /* a narrow side widens on the way */
    uint64_t key, row;
    if (k >= k1 || (i < i1 && le_at(j->a, i, j->b, k))) pair_at(j->a->pairs, j->a->width, i++, &key, &row);
    else pair_at(j->b->pairs, j->b->width, k++, &key, &row);
    pair_put(j->out, j->width, d, key, row);
  }
}

rdx_status rdx_entries_merge_cpu(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out) {
  rdx_entries b = {0};
  void *pairs = NULL;
  rdx_status st;
  RDX_CHECK(rdx_entries_build_cpu(ctx, in, &b));
  int width = e->width == 64 || b.width == 64 ? 64 : 32;
  int64_t n = e->n + b.n;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_insert: merged entries", &pairs,
                               (size_t)n * (width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64)), RDX_HOST),
                 st, fail);
  merge_job j = {e, &b, pairs, width, n};
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n + MERGE_CHUNK - 1) / MERGE_CHUNK, merge_task, &j), st, fail);
  rdx_entries_free(ctx, &b);
  out->pairs = pairs;
  out->n = n;
  out->width = width;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, pairs);
  rdx_entries_free(ctx, &b);
  return st;
}

typedef struct erase_job {
  const rdx_entries *e;
  const uint64_t *keys;   /* sorted, distinct */
  int64_t m;
  int64_t *kept;          /* per chunk: pairs kept, then (second pass) the chunk's output start */
  void *out;              /* NULL in the counting pass */
} erase_job;

static void erase_task(void *arg, int64_t t, int thread) {
  const erase_job *j = (const erase_job *)arg;
  int64_t lo = t * MERGE_CHUNK, hi = lo + MERGE_CHUNK < j->e->n ? lo + MERGE_CHUNK : j->e->n;
  uint64_t k0, r;
  pair_at(j->e->pairs, j->e->width, lo, &k0, &r);
  int64_t a = 0, z = j->m; /* first erase key >= the chunk's first key */
  while (a < z) {
    int64_t mid = a + (z - a) / 2;
    if (j->keys[mid] < k0) a = mid + 1;
    else z = mid;
  }
  size_t sz = j->e->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  int64_t kept = 0, at = j->out ? j->kept[t] : 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t k;
    pair_at(j->e->pairs, j->e->width, i, &k, &r);
    while (a < j->m && j->keys[a] < k) a++; /* pairs ascend, so the key cursor only advances */
    if (a < j->m && j->keys[a] == k) continue;
    if (j->out) memcpy((char *)j->out + (size_t)(at + kept) * sz, (const char *)j->e->pairs + (size_t)i * sz, sz);
    kept++;
  }
  if (!j->out) j->kept[t] = kept;
}

/* keys[0, m) of dtype as a sorted array of distinct u64 (*n_keys of them), host memory through
 * the account; the caller frees *sorted. */
static rdx_status sorted_distinct(rdx_context *ctx, const void *keys, rdx_dtype dt, int64_t m, uint64_t **sorted,
                                  int64_t *n_keys) {
  static const char what[] = "rdx_index_erase: sorting keys";
  uint64_t *a = NULL, *b = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&a, (size_t)m * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&b, (size_t)m * 8, RDX_HOST), st, fail);
  for (int64_t i = 0; i < m; i++) a[i] = dt == RDX_U32 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
  RDX_CHECK_GOTO(rdx_radix_sort_u64(ctx, &a, &b, NULL, NULL, m), st, fail);
  int64_t u = 0;
  for (int64_t i = 0; i < m; i++)
    if (u == 0 || a[i] != a[u - 1]) a[u++] = a[i];
  rdx_mem_free(ctx, b);
  *sorted = a;
  *n_keys = u;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  return st;
}

rdx_status rdx_entries_erase_cpu(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype,
                                 int64_t m, rdx_entries *out, int64_t *n_erased) {
  uint64_t *sk = NULL;
  int64_t *kept = NULL;
  void *pairs = NULL;
  int64_t u = 0;
  rdx_status st;
  int64_t n_chunks = (e->n + MERGE_CHUNK - 1) / MERGE_CHUNK;
  size_t sz = e->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  RDX_CHECK(sorted_distinct(ctx, keys, key_dtype, m, &sk, &u));
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_erase: chunk counts", (void **)&kept,
                               (size_t)(n_chunks + 1) * sizeof *kept, RDX_HOST),
                 st, fail);
  erase_job j = {e, sk, u, kept, NULL};
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, erase_task, &j), st, fail);
  int64_t total = 0;
  for (int64_t t = 0; t < n_chunks; t++) {
    int64_t c = kept[t];
    kept[t] = total;
    total += c;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_erase: entries", &pairs, (size_t)total * sz, RDX_HOST), st, fail);
  j.out = pairs;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, erase_task, &j), st, fail);
  rdx_mem_free(ctx, sk);
  rdx_mem_free(ctx, kept);
  out->pairs = pairs;
  out->n = total;
  out->width = e->width;
  *n_erased = e->n - total;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, pairs);
  rdx_mem_free(ctx, sk);
  rdx_mem_free(ctx, kept);
  return st;
}

rdx_status rdx_entries_copy_cpu(rdx_context *ctx, const rdx_entries *e, rdx_entries *out) {
  size_t bytes = (size_t)e->n * (e->width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64));
  void *p = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "entries: copy", &p, bytes, RDX_HOST));
  memcpy(p, e->pairs, bytes);
  out->pairs = p;
  out->n = e->n;
  out->width = e->width;
  return RDX_OK;
}

rdx_status rdx_entries_split_cpu(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                                 rdx_dtype *row_dtype) {
  size_t ks = key_dtype == RDX_U32 ? 4 : 8, rs = e->width == 32 ? 4 : 8;
  void *k = NULL, *r = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "entries: keys", &k, (size_t)e->n * ks, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "entries: rows", &r, (size_t)e->n * rs, RDX_HOST), st, fail);
  for (int64_t i = 0; i < e->n; i++) {
    uint64_t key, row;
    pair_at(e->pairs, e->width, i, &key, &row);
    if (ks == 4) ((uint32_t *)k)[i] = (uint32_t)key;
    else ((uint64_t *)k)[i] = key;
    if (rs == 4) ((uint32_t *)r)[i] = (uint32_t)row;
    else ((uint64_t *)r)[i] = row;
  }
  *keys = k;
  *rows = r;
  *row_dtype = rs == 4 ? RDX_U32 : RDX_U64;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, k);
  rdx_mem_free(ctx, r);
  return st;
}

/* The dispatchers: GPU contexts keep their entries in device memory. */
rdx_status rdx_entries_merge(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out) {
#ifdef RDX_HAVE_CUDA
  if (rdx_is_gpu(ctx)) return rdx_entries_merge_cuda(ctx, e, in, out);
#endif
  return rdx_entries_merge_cpu(ctx, e, in, out);
}
rdx_status rdx_entries_erase(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype, int64_t m,
                             rdx_entries *out, int64_t *n_erased) {
#ifdef RDX_HAVE_CUDA
  if (rdx_is_gpu(ctx)) return rdx_entries_erase_cuda(ctx, e, keys, key_dtype, m, out, n_erased);
#endif
  return rdx_entries_erase_cpu(ctx, e, keys, key_dtype, m, out, n_erased);
}
rdx_status rdx_entries_split(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                             rdx_dtype *row_dtype) {
#ifdef RDX_HAVE_CUDA
  if (rdx_is_gpu(ctx)) return rdx_entries_split_cuda(ctx, e, key_dtype, keys, rows, row_dtype);
#endif
  return rdx_entries_split_cpu(ctx, e, key_dtype, keys, rows, row_dtype);
}
