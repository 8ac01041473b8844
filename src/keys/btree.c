/*
 * btree.c: the btree kind on the CPU: a bulk-loaded B+-tree of 128-byte nodes (btree_hd.h)
 * over the sorted (key, row) entries.
 *
 * Build: sort the entries (entries.c), then write every leaf and inner node in parallel (each
 * separator comes straight from the entries, see btree_hd.h), then drop the entries: the leaves
 * hold the pairs. Queries descend from the root (the upper levels stay in L1/L2); a point
 * lookup reads one leaf, counts are the difference of two descents, and fills walk the leaves
 * through their next links.
 *
 * Query batches are split into chunks of 4096 over the context's threads.
 *
 * Updates take the pairs out of the leaves, merge the batch in or filter the erased keys out
 * (entries.c), and bulk-load a new tree from the result, aside: the old nodes go only once the
 * new ones are complete. A bulk load keeps every leaf full, which in-place leaf splits would not.
 */
#include "keys/btree_hd.h"

#include <stdlib.h>
#include <string.h>

typedef struct btree_impl {
  rdx_btree_layout L;
  void *inner;        /* L.n_inner nodes of 128 bytes, root first (host memory) */
  void *leaves;       /* L.n_leaves leaves of 128 bytes */
} btree_impl;

#define QCHUNK 4096
#define BUILD_CHUNK 16384 /* nodes per build task */

typedef struct build_job {
  btree_impl *b;
  const void *pairs;
  int inner;          /* 1: inner nodes, 0: leaves */
  int64_t count;
} build_job;

static void build_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  const rdx_btree_layout *L = &j->b->L;
  int64_t lo = t * BUILD_CHUNK, hi = lo + BUILD_CHUNK < j->count ? lo + BUILD_CHUNK : j->count;
  uint32_t *out = (uint32_t *)(j->inner ? j->b->inner : j->b->leaves);
  for (int64_t node = lo; node < hi; node++)
    for (int lane = 0; lane < RDX_BTREE_LANES; lane++) {
      uint32_t *w = out + (node * RDX_BTREE_LANES + lane) * 4;
      if (L->width == 32) {
        if (j->inner) rdx_btree_inner_lane32((const rdx_pair32 *)j->pairs, L, node, lane, w);
        else rdx_btree_leaf_lane32((const rdx_pair32 *)j->pairs, L, node, lane, w);
      } else {
        if (j->inner) rdx_btree_inner_lane64((const rdx_pair64 *)j->pairs, L, node, lane, w);
        else rdx_btree_leaf_lane64((const rdx_pair64 *)j->pairs, L, node, lane, w);
      }
    }
}

/* Bulk-load the leaves and inner nodes of b from entries e (n >= 1); on failure b holds nothing. */
static rdx_status load(rdx_context *ctx, const rdx_entries *e, btree_impl *b) {
  rdx_status st;
  b->leaves = b->inner = NULL;
  if (rdx_btree_plan(&b->L, e->n, e->width) != 0)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "btree: %lld keys need more than 2^32 btree nodes", (long long)e->n);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "btree: leaves", &b->leaves, (size_t)b->L.n_leaves * RDX_BTREE_NODE_BYTES, RDX_HOST),
                 st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "btree: inner nodes", &b->inner, (size_t)b->L.n_inner * RDX_BTREE_NODE_BYTES,
                               RDX_HOST),
                 st, fail);
  for (int inner = 0; inner < 2; inner++) {
    build_job j = {b, e->pairs, inner, inner ? b->L.n_inner : b->L.n_leaves};
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (j.count + BUILD_CHUNK - 1) / BUILD_CHUNK, build_task, &j), st, fail);
  }
  return RDX_OK;
fail:
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  b->leaves = b->inner = NULL;
  return st;
}

static rdx_status btree_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  btree_impl *b = (btree_impl *)calloc(1, sizeof *b);
  if (b == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: btree handle");
  rdx_status st;
  rdx_entries e = {0};
  RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, in, &e), st, fail);
  RDX_CHECK_GOTO(load(ctx, &e, b), st, fail);
  rdx_entries_free(ctx, &e); /* the leaves hold the pairs now */
  idx->impl = b;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &e);
  free(b);
  return st;
}

/* ---- updates: the leaves' pairs out, the batch applied (entries.c), a fresh bulk load aside ---- */

typedef struct extract_job {
  const btree_impl *b;
  void *out;
} extract_job;

static void extract_task(void *arg, int64_t t, int thread) {
  const extract_job *j = (const extract_job *)arg;
  const rdx_btree_layout *L = &j->b->L;
  int64_t hi = (t + 1) * BUILD_CHUNK < L->n_leaves ? (t + 1) * BUILD_CHUNK : L->n_leaves;
  for (int64_t leaf = t * BUILD_CHUNK; leaf < hi; leaf++) {
    int64_t base = leaf * L->leaf_cap, count = L->n - base < L->leaf_cap ? L->n - base : L->leaf_cap;
    if (L->width == 32)
      memcpy((rdx_pair32 *)j->out + base, ((const rdx_btree_leaf32 *)j->b->leaves)[leaf].pairs,
             (size_t)count * sizeof(rdx_pair32));
    else
      memcpy((rdx_pair64 *)j->out + base, ((const rdx_btree_leaf64 *)j->b->leaves)[leaf].pairs,
             (size_t)count * sizeof(rdx_pair64));
  }
}

/* Every leaf is full but the last, so entry g is slot g % leaf_cap of leaf g / leaf_cap. */
static rdx_status btree_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const btree_impl *b = (const btree_impl *)idx->impl;
  size_t sz = b->L.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  void *p = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "btree: entries", &p, (size_t)b->L.n * sz, RDX_HOST));
  extract_job j = {b, p};
  rdx_status st = rdx_parallel_for(ctx, (b->L.n_leaves + BUILD_CHUNK - 1) / BUILD_CHUNK, extract_task, &j);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, p);
    return st;
  }
  out->pairs = p;
  out->n = b->L.n;
  out->width = b->L.width;
  return RDX_OK;
}

/* Load ne (freed here either way) into a new tree and swap it in; on failure b is untouched. */
static rdx_status swap_in(rdx_context *ctx, btree_impl *b, rdx_entries *ne) {
  btree_impl nb;
  rdx_status st = load(ctx, ne, &nb);
  rdx_entries_free(ctx, ne);
  if (st != RDX_OK) return st;
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  *b = nb;
  return RDX_OK;
}

static rdx_status btree_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_entries e = {0}, ne = {0};
  RDX_CHECK(btree_entries(ctx, idx, &e));
  rdx_status st = rdx_entries_merge_cpu(ctx, &e, in, &ne);
  rdx_entries_free(ctx, &e);
  RDX_CHECK(st);
  return swap_in(ctx, (btree_impl *)idx->impl, &ne);
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
static rdx_status btree_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  rdx_entries e = {0}, ne = {0};
  RDX_CHECK(btree_entries(ctx, idx, &e));
  rdx_status st = rdx_entries_erase_cpu(ctx, &e, keys, idx->dtype, m, &ne, n_erased);
  rdx_entries_free(ctx, &e);
  RDX_CHECK(st);
  if (ne.n == 0 || *n_erased == 0) {
    rdx_entries_free(ctx, &ne);
    return RDX_OK;
  }
  return swap_in(ctx, (btree_impl *)idx->impl, &ne);
}

static void btree_destroy(rdx_context *ctx, rdx_index *idx) {
  btree_impl *b = (btree_impl *)idx->impl;
  rdx_mem_free(ctx, b->leaves);
  rdx_mem_free(ctx, b->inner);
  free(b);
}

/* ---- queries ---- */

typedef enum { OP_LOOKUP, OP_COUNT, OP_FILL, OP_RCOUNT, OP_RFILL } op_t;

typedef struct query_job {
  const btree_impl *b;
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

/* lower_bound(q) as a global entry position (>= n: none). A u32 index at width 64 (rows
 * >= 2^32) compares its u32 queries as u64, which orders them the same. */
static inline int64_t lower(const btree_impl *b, uint64_t q) {
  if (b->L.width == 32)
    return rdx_btree_lower32((const rdx_btree_inner32 *)b->inner, (const rdx_btree_leaf32 *)b->leaves, &b->L,
                             (uint32_t)q);
  return rdx_btree_lower64((const rdx_btree_inner64 *)b->inner, (const rdx_btree_leaf64 *)b->leaves, &b->L, q);
}

/* upper_bound(q): the first entry with key > q. */
static inline int64_t upper(const btree_impl *b, uint64_t q) {
  uint64_t max = b->L.width == 32 ? UINT32_MAX : UINT64_MAX;
  return q >= max ? b->L.n : lower(b, q + 1);
}

/* Key and row of the entry at global position g (< n). */
static inline void entry_at(const btree_impl *b, int64_t g, uint64_t *key, uint64_t *row) {
  int64_t leaf = g / b->L.leaf_cap, slot = g % b->L.leaf_cap;
  if (b->L.width == 32) {
    const rdx_pair32 *p = &((const rdx_btree_leaf32 *)b->leaves)[leaf].pairs[slot];
    *key = p->key, *row = p->row;
  } else {
    const rdx_pair64 *p = &((const rdx_btree_leaf64 *)b->leaves)[leaf].pairs[slot];
    *key = p->key, *row = p->row;
  }
}

/* Rows of the entries from position g with key <= hi into [dst, end), walking the leaves
 * through their next links. */
static void fill_from(const btree_impl *b, int64_t g, uint64_t hi, uint64_t *dst, uint64_t *end) {
  if (g >= b->L.n) return;
  uint32_t leaf = (uint32_t)(g / b->L.leaf_cap);
  uint32_t slot = (uint32_t)(g % b->L.leaf_cap);
  while (dst < end && leaf != RDX_BTREE_NONE) {
    uint32_t count, next;
    if (b->L.width == 32) {
      const rdx_btree_leaf32 *lf = (const rdx_btree_leaf32 *)b->leaves + leaf;
      count = lf->count, next = lf->next;
      for (; slot < count && dst < end && lf->pairs[slot].key <= hi; slot++) *dst++ = lf->pairs[slot].row;
    } else {
      const rdx_btree_leaf64 *lf = (const rdx_btree_leaf64 *)b->leaves + leaf;
      count = lf->count, next = lf->next;
      for (; slot < count && dst < end && lf->pairs[slot].key <= hi; slot++) *dst++ = lf->pairs[slot].row;
    }
    if (slot < count) return; /* stopped inside the leaf: a key > hi or the output is full */
    leaf = next;
    slot = 0;
  }
}

static void query_task(void *arg, int64_t t, int thread) {
  const query_job *j = (const query_job *)arg;
  const btree_impl *b = j->b;
  int64_t lo = t * QCHUNK, hi = lo + QCHUNK < j->n ? lo + QCHUNK : j->n;
  int range = j->op == OP_RCOUNT || j->op == OP_RFILL;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t a = range ? qval(j, 2 * i) : qval(j, i);
    uint64_t z = range ? qval(j, 2 * i + 1) : a;
    switch (j->op) {
      case OP_LOOKUP: {
        /* one descent: the first entry >= a holds the smallest row of key a, if any */
        int64_t g = lower(b, a);
        uint64_t key = 0, row = RDX_MISS;
        if (g < b->L.n) entry_at(b, g, &key, &row);
        j->out[i] = g < b->L.n && key == a ? row : RDX_MISS;
        break;
      }
      case OP_COUNT:
      case OP_RCOUNT:
        j->out[i] = a > z ? 0 : (uint64_t)(upper(b, z) - lower(b, a));
        break;
      case OP_FILL:
      case OP_RFILL:
        if (a <= z && j->out[i + 1] > j->out[i])
          fill_from(b, lower(b, a), z, j->rows + j->out[i], j->rows + j->out[i + 1]);
        break;
    }
  }
}

static rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, op_t op,
                      uint64_t *out, uint64_t *rows) {
  query_job j = {(const btree_impl *)idx->impl, idx, q, n, op, out, rows};
  return rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j);
}

_Static_assert(OP_FILL == (int)RDX_KEY_LOOKUP_FILL && OP_RFILL == (int)RDX_KEY_RANGE_FILL, "op_t follows rdx_key_op");
static rdx_status btree_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                              uint64_t *out, uint64_t *rows) {
  return run(ctx, idx, q, n, (op_t)op, out, rows);
}

/* Range fills come out in key order; index.c sorts each query's rows (range_fill_sorted = 0).
 * Point fills are already ascending: equal keys are stored in row order. */
const rdx_key_ops rdx_btree_cpu_ops = {
    RDX_KIND_BTREE, RDX_BACKEND_CPU, btree_build, btree_destroy, btree_query, 1, 0, btree_insert, btree_erase, btree_entries,
};
