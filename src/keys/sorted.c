/*
 * sorted.c: the sorted kind on the CPU: sorted (key, row) entries plus the k-ary separator
 * tree of sorted_hd.h. Point lookups descend the tree (the upper levels stay in L1/L2), ranges
 * find both ends and copy the rows between them.
 *
 * Query batches are split into chunks of 4096 over the context's threads.
 *
 * Updates merge the batch into the entries, or filter the erased keys out of them (entries.c),
 * and rebuild the separators over the result, aside; the old arrays go only once that worked.
 */
#include "keys/sorted_hd.h"

#include <stdlib.h>
#include <string.h>

typedef struct sorted_impl {
  rdx_entries e;
  rdx_sorted_layout L;
  void *seps;         /* L.total separators of the entry key width */
} sorted_impl;

#define QCHUNK 4096

typedef struct build_job {
  const rdx_entries *e;
  const rdx_sorted_layout *L;
  void *seps;
  int level;
  int64_t chunk;
} build_job;

static void build_level_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  const rdx_sorted_layout *L = j->L;
  int l = j->level;
  int64_t lo = t * j->chunk, hi = lo + j->chunk;
  if (hi > L->len[l]) hi = L->len[l];
  for (int64_t i = lo; i < hi; i++) {
    if (j->e->width == 32)
      ((uint32_t *)j->seps)[L->off[l] + i] =
          rdx_sorted_sep_source32((const rdx_pair32 *)j->e->pairs, (const uint32_t *)j->seps, L, l, i);
    else
      ((uint64_t *)j->seps)[L->off[l] + i] =
          rdx_sorted_sep_source64((const rdx_pair64 *)j->e->pairs, (const uint64_t *)j->seps, L, l, i);
  }
}

/* The separator tree over entries e (n >= 1): *L planned, *seps allocated and filled. */
static rdx_status make_seps(rdx_context *ctx, const rdx_entries *e, rdx_sorted_layout *L, void **seps) {
  rdx_sorted_plan(L, e->n, e->width);
  RDX_CHECK(rdx_mem_alloc(ctx, "sorted: separators", seps, (size_t)L->total * (e->width / 8), RDX_HOST));
  for (int l = 0; l < L->n_levels; l++) {
    build_job j = {e, L, *seps, l, 16384};
    rdx_parallel_for(ctx, (L->len[l] + j.chunk - 1) / j.chunk, build_level_task, &j);
  }
  return RDX_OK;
}

static rdx_status sorted_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  sorted_impl *s = (sorted_impl *)calloc(1, sizeof *s);
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: sorted handle");
  rdx_status st;
  RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, in, &s->e), st, fail);
  RDX_CHECK_GOTO(make_seps(ctx, &s->e, &s->L, &s->seps), st, fail);
  idx->impl = s;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &s->e);
  free(s);
  return st;
}

/* Swap new entries in (all or nothing): their separators are built aside first, and only then
 * are the old entries and separators freed. On failure ne is freed and s is untouched. */
static rdx_status swap_in(rdx_context *ctx, sorted_impl *s, rdx_entries *ne) {
  rdx_sorted_layout L;
  void *seps = NULL;
  rdx_status st = make_seps(ctx, ne, &L, &seps);
  if (st != RDX_OK) {
    rdx_entries_free(ctx, ne);
    return st;
  }
  rdx_mem_free(ctx, s->seps);
  rdx_entries_free(ctx, &s->e);
  s->e = *ne;
  s->L = L;
  s->seps = seps;
  return RDX_OK;
}

static rdx_status sorted_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_entries ne = {0};
  RDX_CHECK(rdx_entries_merge_cpu(ctx, &((sorted_impl *)idx->impl)->e, in, &ne));
  return swap_in(ctx, (sorted_impl *)idx->impl, &ne);
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
static rdx_status sorted_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  rdx_entries ne = {0};
  RDX_CHECK(rdx_entries_erase_cpu(ctx, &((sorted_impl *)idx->impl)->e, keys, idx->dtype, m, &ne, n_erased));
  if (ne.n == 0 || *n_erased == 0) {
    rdx_entries_free(ctx, &ne);
    return RDX_OK;
  }
  return swap_in(ctx, (sorted_impl *)idx->impl, &ne);
}

static rdx_status sorted_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  return rdx_entries_copy_cpu(ctx, &((const sorted_impl *)idx->impl)->e, out);
}

static void sorted_destroy(rdx_context *ctx, rdx_index *idx) {
  sorted_impl *s = (sorted_impl *)idx->impl;
  rdx_mem_free(ctx, s->seps);
  rdx_entries_free(ctx, &s->e);
  free(s);
}

/* ---- queries ---- */

typedef enum { OP_LOOKUP, OP_COUNT, OP_FILL, OP_RCOUNT, OP_RFILL } op_t;

typedef struct query_job {
  const sorted_impl *s;
  const rdx_index *idx;
  const void *q;      /* queries or (lo, hi) bounds of the index's key dtype */
  int64_t n;
  op_t op;
  uint64_t *out;      /* rows / counts / offsets */
  uint64_t *rows;     /* fill target */
} query_job;

static inline uint64_t qval(const query_job *j, int64_t i) {
  return j->idx->dtype == RDX_U32 ? ((const uint32_t *)j->q)[i] : ((const uint64_t *)j->q)[i];
}

/* [first, end) of the entries with lo <= key <= hi; the max key is handled by upper(). */
static void span(const sorted_impl *s, uint64_t lo, uint64_t hi, int64_t *b, int64_t *e) {
  if (lo > hi) {
    *b = *e = 0;
    return;
  }
  if (s->e.width == 32) {
    /* A u32 index at width 32 only ever sees u32 bounds. */
    *b = rdx_sorted_lower32((const rdx_pair32 *)s->e.pairs, (const uint32_t *)s->seps, &s->L, (uint32_t)lo);
    *e = rdx_sorted_upper32((const rdx_pair32 *)s->e.pairs, (const uint32_t *)s->seps, &s->L, (uint32_t)hi);
  } else {
    *b = rdx_sorted_lower64((const rdx_pair64 *)s->e.pairs, (const uint64_t *)s->seps, &s->L, lo);
    *e = rdx_sorted_upper64((const rdx_pair64 *)s->e.pairs, (const uint64_t *)s->seps, &s->L, hi);
  }
}

static inline uint64_t row_at(const sorted_impl *s, int64_t i) {
  return s->e.width == 32 ? ((const rdx_pair32 *)s->e.pairs)[i].row : ((const rdx_pair64 *)s->e.pairs)[i].row;
}

/* Group prefetching (Chen, Ailamaki et al.): GROUP searches advance level by level together, and
 * each level's nodes are prefetched for the whole group before any is read, so the cache misses
 * of GROUP independent searches overlap instead of queueing one after another (bench/README.md,
 * "Measurements behind the library's choices"). */
#define GROUP 16
#define LOOKUP_GROUP(W, PAIR, KEY)                                                              \
  static void lookup_group##W(const sorted_impl *s, const query_job *j, int64_t first, int g) { \
    const rdx_sorted_layout *L = &s->L;                                                         \
    const KEY *seps = (const KEY *)s->seps;                                                     \
    const PAIR *e = (const PAIR *)s->e.pairs;                                                   \
    KEY q[GROUP];                                                                               \
    int64_t c[GROUP];                                                                           \
    for (int k = 0; k < g; k++) q[k] = (KEY)qval(j, first + k), c[k] = 0;                       \
    for (int l = L->n_levels - 1; l >= 0; l--) {                                                \
      const KEY *lev = seps + L->off[l];                                                        \
      int top = l == L->n_levels - 1;                                                           \
      for (int k = 0; k < g; k++)                                                               \
        if (c[k] >= 0) __builtin_prefetch(lev + (top ? 0 : c[k] * RDX_SORTED_FANOUT));          \
      for (int k = 0; k < g; k++) {                                                             \
        if (c[k] < 0) continue; /* already past every key */                                    \
        int64_t b = top ? 0 : c[k] * RDX_SORTED_FANOUT, end = top ? L->len[l] : b + RDX_SORTED_FANOUT; \
        if (end > L->len[l]) end = L->len[l];                                                   \
        int64_t cnt = 0;                                                                        \
        for (int64_t i = b; i < end; i++) cnt += lev[i] < q[k];                                 \
        c[k] = b + cnt == L->len[l] ? -1 : b + cnt;                                             \
      }                                                                                         \
    }                                                                                           \
    for (int k = 0; k < g; k++)                                                                 \
      if (c[k] >= 0) __builtin_prefetch(e + c[k] * L->block);                                   \
    for (int k = 0; k < g; k++) {                                                               \
      uint64_t row = RDX_MISS;                                                                  \
      if (c[k] >= 0) {                                                                          \
        int64_t b = c[k] * L->block, end = b + L->block < L->n ? b + L->block : L->n, i = b;    \
        while (i < end && e[i].key < q[k]) i++;                                                 \
        if (i < end && e[i].key == q[k]) row = e[i].row;                                        \
      }                                                                                         \
      j->out[first + k] = row;                                                                  \
    }                                                                                           \
  }
LOOKUP_GROUP(32, rdx_pair32, uint32_t)
LOOKUP_GROUP(64, rdx_pair64, uint64_t)

static void query_task(void *arg, int64_t t, int thread) {
  const query_job *j = (const query_job *)arg;
  const sorted_impl *s = j->s;
  int64_t lo = t * QCHUNK, hi = lo + QCHUNK < j->n ? lo + QCHUNK : j->n;
  if (j->op == OP_LOOKUP) { /* fast path: grouped lower bounds */
    for (int64_t i = lo; i < hi; i += GROUP) {
      int g = hi - i < GROUP ? (int)(hi - i) : GROUP;
      if (s->e.width == 32) lookup_group32(s, j, i, g);
      else lookup_group64(s, j, i, g);
    }
    return;
  }
  int range = j->op == OP_RCOUNT || j->op == OP_RFILL;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t a = range ? qval(j, 2 * i) : qval(j, i);
    uint64_t z = range ? qval(j, 2 * i + 1) : a;
    int64_t b, e;
    span(s, a, z, &b, &e);
    if (j->op == OP_COUNT || j->op == OP_RCOUNT) {
      j->out[i] = (uint64_t)(e - b);
    } else {
      uint64_t *dst = j->rows + j->out[i];
      for (int64_t k = b; k < e; k++) *dst++ = row_at(s, k);
    }
  }
}

static rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, op_t op,
                      uint64_t *out, uint64_t *rows) {
  query_job j = {(const sorted_impl *)idx->impl, idx, q, n, op, out, rows};
  return rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j);
}

_Static_assert(OP_FILL == (int)RDX_KEY_LOOKUP_FILL && OP_RFILL == (int)RDX_KEY_RANGE_FILL, "op_t follows rdx_key_op");
static rdx_status sorted_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                               uint64_t *out, uint64_t *rows) {
  return run(ctx, idx, q, n, (op_t)op, out, rows);
}

const rdx_key_ops rdx_sorted_cpu_ops = {
    RDX_KIND_SORTED, RDX_BACKEND_CPU, sorted_build, sorted_destroy, sorted_query, 1, 0, sorted_insert, sorted_erase, sorted_entries,
};
