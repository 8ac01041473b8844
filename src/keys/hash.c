/*
 * hash.c: the hash kind on the CPU: the open-addressing table of hash_hd.h, built concurrently
 * on the context's threads with C11 atomics (the same slot protocol as the GPU), plus the side
 * CSR for keys with several rows or rows too big for a slot. Point lookups only: the ops table
 * has no range calls, so index.c answers them with RDX_ERR_UNSUPPORTED.
 *
 * Build: clear the table to all ones (EMPTY), insert every (key, row) in parallel; if some key
 * went PENDING, collect the inputs whose slot is PENDING (two passes over chunks: count, then
 * copy at the chunk's offset), sort them by (key, row) (entries.c), write the directory and
 * point each such slot at it.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "keys/keys.h"

/* The slot protocol's atomics (hash_hd.h). The table is plain uint64_t memory from the account;
 * C11 atomics on it go through _Atomic views of the same 8-byte words. */
#define RDX_HASH_INSERT 1
#define RDX_HASH_AT(p) ((_Atomic uint64_t *)(p))
#define RDX_HASH_LOAD(p) atomic_load_explicit(RDX_HASH_AT(p), memory_order_relaxed)
#define RDX_HASH_LOAD_ACQ(p) atomic_load_explicit(RDX_HASH_AT(p), memory_order_acquire)
#define RDX_HASH_STORE(p, v) atomic_store_explicit(RDX_HASH_AT(p), (v), memory_order_relaxed)
#define RDX_HASH_STORE_REL(p, v) atomic_store_explicit(RDX_HASH_AT(p), (v), memory_order_release)
#define RDX_HASH_CAS(p, e, w) cas64((p), (e), (w))
#define RDX_HASH_MAX(p, v) max64((p), (v))
#define RDX_HASH_PAUSE() ((void)0)

static inline uint64_t cas64(uint64_t *p, uint64_t expect, uint64_t want) {
  atomic_compare_exchange_strong_explicit(RDX_HASH_AT(p), &expect, want, memory_order_acq_rel,
                                          memory_order_acquire);
  return expect; /* the old value either way */
}
static inline void max64(uint64_t *p, uint64_t v) {
  uint64_t cur = atomic_load_explicit(RDX_HASH_AT(p), memory_order_relaxed);
  while (cur < v && !atomic_compare_exchange_weak_explicit(RDX_HASH_AT(p), &cur, v, memory_order_acq_rel,
                                                           memory_order_relaxed)) {
  }
}

#include "keys/hash_hd.h"

typedef struct hash_impl {
  rdx_hash_layout L;
  uint64_t *table;    /* n_windows * 32 bytes */
  rdx_entries csr;    /* (key, row) of the keys in the side CSR, sorted; n = 0 when none */
  uint64_t *dir;      /* n_dir + 1 starts into csr; NULL when none */
  int64_t n_dir;
} hash_impl;

#define CHUNK 16384
#define QCHUNK 4096

static inline uint64_t in_key(const rdx_key_input *in, int64_t i) {
  return in->key_dtype == RDX_U32 ? ((const uint32_t *)in->keys)[i] : ((const uint64_t *)in->keys)[i];
}
static inline uint64_t in_row(const rdx_key_input *in, int64_t i) {
  if (in->rows == NULL) return (uint64_t)i;
  return in->row_dtype == RDX_U32 ? ((const uint32_t *)in->rows)[i] : ((const uint64_t *)in->rows)[i];
}

/* The value stored for key k in the built (or being-finished) table; found = 0 when absent. */
static inline uint64_t find_value(const hash_impl *h, uint64_t k, int64_t *slot) {
  if (h->L.key_bits == 32) {
    uint32_t v = 0;
    *slot = rdx_hash_find32(h->table, &h->L, (uint32_t)k, &v);
    return v;
  }
  uint64_t v = 0;
  *slot = rdx_hash_find64(h->table, &h->L, k, &v);
  return v;
}
static inline int is_pending(const hash_impl *h, uint64_t v) {
  return h->L.key_bits == 32 ? v == RDX_HASH32_V_PENDING : v == RDX_HASH64_PENDING;
}

typedef struct build_job {
  hash_impl *h;
  const rdx_key_input *in;
  int64_t n_chunks;
  int *pending;       /* per chunk: some key went PENDING */
  int *overflow;      /* per chunk: an insert found no room */
  int64_t *count;     /* per chunk: inputs whose slot is PENDING, then their offset */
  uint64_t *ck, *cr;  /* collected keys and rows */
  int64_t m;          /* CSR entries */
  int64_t *slot_of;   /* slot of each directory entry's key */
} build_job;

static void insert_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  hash_impl *h = j->h;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < j->in->n ? lo + CHUNK : j->in->n;
  int pending = 0, ok = 1;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t k = in_key(j->in, i), r = in_row(j->in, i);
    ok &= h->L.key_bits == 32 ? rdx_hash_insert32(h->table, &h->L, (uint32_t)k, r, &pending)
                              : rdx_hash_insert64(h->table, &h->L, k, r, &pending);
  }
  j->pending[t] = pending;
  j->overflow[t] = !ok;
}

/* Pass 0 counts the inputs whose key is PENDING per chunk; pass 1 copies them at the chunk's
 * offset, so the collected list is in input order whatever the thread timing. */
static void collect_task(void *arg, int64_t t, int thread, int pass) {
  build_job *j = (build_job *)arg;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < j->in->n ? lo + CHUNK : j->in->n;
  int64_t c = 0, at = pass ? j->count[t] : 0;
  for (int64_t i = lo; i < hi; i++) {
    int64_t slot;
    uint64_t k = in_key(j->in, i);
    if (!is_pending(j->h, find_value(j->h, k, &slot))) continue;
    if (pass) {
      j->ck[at] = k;
      j->cr[at++] = in_row(j->in, i);
    }
    c++;
  }
  if (!pass) j->count[t] = c;
}
static void count_task(void *arg, int64_t t, int thread) { collect_task(arg, t, thread, 0); }
static void copy_task(void *arg, int64_t t, int thread) { collect_task(arg, t, thread, 1); }

static inline uint64_t csr_key(const rdx_entries *e, int64_t i) {
  return e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].key : ((const rdx_pair64 *)e->pairs)[i].key;
}
static inline uint64_t csr_row(const rdx_entries *e, int64_t i) {
  return e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].row : ((const rdx_pair64 *)e->pairs)[i].row;
}

/* Pass 0 counts run heads (the first entry of each key) per chunk of the CSR; pass 1 writes
 * each head's directory entry. */
static void heads_task_(void *arg, int64_t t, int thread, int pass) {
  build_job *j = (build_job *)arg;
  hash_impl *h = j->h;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < j->m ? lo + CHUNK : j->m;
  int64_t d = pass ? j->count[t] : 0;
  for (int64_t i = lo; i < hi; i++) {
    if (i > 0 && csr_key(&h->csr, i - 1) == csr_key(&h->csr, i)) continue;
    if (pass) h->dir[d] = (uint64_t)i;
    d++;
  }
  if (!pass) j->count[t] = d;
}
static void heads_count_task(void *arg, int64_t t, int thread) { heads_task_(arg, t, thread, 0); }
static void heads_write_task(void *arg, int64_t t, int thread) { heads_task_(arg, t, thread, 1); }

/* Pass 0 finds the slot of each directory entry's key; pass 1 points the slot at the entry.
 * Separate passes, so no probe reads a slot word while another thread rewrites it. */
static void slots_task_(void *arg, int64_t t, int thread, int pass) {
  build_job *j = (build_job *)arg;
  hash_impl *h = j->h;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < h->n_dir ? lo + CHUNK : h->n_dir;
  for (int64_t d = lo; d < hi; d++) {
    uint64_t k = csr_key(&h->csr, (int64_t)h->dir[d]);
    if (!pass) {
      find_value(h, k, &j->slot_of[d]);
    } else if (h->L.key_bits == 32) {
      h->table[j->slot_of[d]] = k << 32 | (RDX_HASH32_FLAG | (uint32_t)d);
    } else {
      h->table[j->slot_of[d] * 2 + 1] = RDX_HASH64_FLAG | (uint64_t)d;
    }
  }
}
static void slots_find_task(void *arg, int64_t t, int thread) { slots_task_(arg, t, thread, 0); }
static void slots_write_task(void *arg, int64_t t, int thread) { slots_task_(arg, t, thread, 1); }

/* Exclusive prefix sum of the per-chunk counts; returns the total. */
static int64_t prefix(int64_t *c, int64_t n) {
  int64_t s = 0;
  for (int64_t t = 0; t < n; t++) {
    int64_t x = c[t];
    c[t] = s;
    s += x;
  }
  return s;
}

/* Move the keys whose slot is PENDING into the side CSR. */
static rdx_status build_csr(rdx_context *ctx, build_job *j) {
  static const char what[] = "rdx_index_build: hash overflow rows";
  hash_impl *h = j->h;
  rdx_status st = RDX_OK;
  RDX_CHECK(rdx_parallel_for(ctx, j->n_chunks, count_task, j));
  int64_t m = prefix(j->count, j->n_chunks);
  if (m == 0) return RDX_OK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j->ck, (size_t)m * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j->cr, (size_t)m * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j->n_chunks, copy_task, j), st, done);
  {
    rdx_key_input in2 = *j->in;
    uint32_t *k32 = (uint32_t *)j->ck; /* u32 keys are narrowed in place for the sort */
    if (h->L.key_bits == 32)
      for (int64_t i = 0; i < m; i++) k32[i] = (uint32_t)j->ck[i];
    in2.keys = j->ck;
    in2.rows = j->cr;
    in2.n = m;
    in2.row_dtype = RDX_U64;
    RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, &in2, &h->csr), st, done);
  }
  rdx_mem_free(ctx, j->ck);
  rdx_mem_free(ctx, j->cr);
  j->ck = j->cr = NULL;
  j->m = m;
  int64_t n_chunks = (m + CHUNK - 1) / CHUNK;
  /* j->count has n_chunks(input) >= n_chunks(csr) entries since m <= n */
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, heads_count_task, j), st, done);
  h->n_dir = prefix(j->count, n_chunks);
  if ((uint64_t)h->n_dir - 1 > (h->L.key_bits == 32 ? RDX_HASH32_DIR_MAX : RDX_HASH64_DIR_MAX)) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "rdx_index_build: %lld keys with several or large rows exceed the hash directory",
                  (long long)h->n_dir);
    goto done;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: hash directory", (void **)&h->dir,
                               (size_t)(h->n_dir + 1) * 8, RDX_HOST), st, done);
  h->dir[h->n_dir] = (uint64_t)m;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, heads_write_task, j), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: hash directory slots", (void **)&j->slot_of,
                               (size_t)h->n_dir * 8, RDX_HOST), st, done);
  n_chunks = (h->n_dir + CHUNK - 1) / CHUNK;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, slots_find_task, j), st, done);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, slots_write_task, j), st, done);
done:
  rdx_mem_free(ctx, j->slot_of);
  j->slot_of = NULL;
  rdx_mem_free(ctx, j->ck);
  rdx_mem_free(ctx, j->cr);
  j->ck = j->cr = NULL;
  return st;
}

static rdx_status hash_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  hash_impl *h = (hash_impl *)calloc(1, sizeof *h);
  if (h == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: hash handle");
  int key_bits = in->key_dtype == RDX_U32 ? 32 : 64;
  if (rdx_hash_plan(&h->L, in->n, key_bits, in->opts.load_factor) != 0) {
    free(h);
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "rdx_index_build: %lld keys at load factor %g need more than 2^32 hash windows",
                    (long long)in->n, in->opts.load_factor);
  }
  rdx_status st = RDX_OK;
  build_job j;
  memset(&j, 0, sizeof j);
  j.h = h;
  j.in = in;
  j.n_chunks = (in->n + CHUNK - 1) / CHUNK;
  void *meta = NULL;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: hash table", (void **)&h->table,
                               (size_t)h->L.n_windows * RDX_HASH_WINDOW_BYTES, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: hash scratch", &meta,
                               (size_t)j.n_chunks * (2 * sizeof(int) + sizeof(int64_t)), RDX_HOST), st, fail);
  j.count = (int64_t *)meta;
  j.pending = (int *)(j.count + j.n_chunks);
  j.overflow = j.pending + j.n_chunks;
  memset(h->table, 0xFF, (size_t)h->L.n_windows * RDX_HASH_WINDOW_BYTES);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j.n_chunks, insert_task, &j), st, fail);
  int pending = 0, overflow = 0;
  for (int64_t t = 0; t < j.n_chunks; t++) pending |= j.pending[t], overflow |= j.overflow[t];
  if (overflow) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_index_build: hash table of %llu windows overflowed with %lld keys",
                  (unsigned long long)h->L.n_windows, (long long)in->n);
    goto fail;
  }
  if (pending) RDX_CHECK_GOTO(build_csr(ctx, &j), st, fail);
  rdx_mem_free(ctx, meta);
  idx->impl = h;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, meta);
  rdx_mem_free(ctx, h->table);
  rdx_entries_free(ctx, &h->csr);
  rdx_mem_free(ctx, h->dir);
  free(h);
  return st;
}

static void hash_destroy(rdx_context *ctx, rdx_index *idx) {
  hash_impl *h = (hash_impl *)idx->impl;
  rdx_mem_free(ctx, h->table);
  rdx_entries_free(ctx, &h->csr);
  rdx_mem_free(ctx, h->dir);
  free(h);
}

/* ---- queries ---- */

typedef enum { OP_LOOKUP, OP_COUNT, OP_FILL } op_t;

typedef struct query_job {
  const hash_impl *h;
  const void *q;
  int64_t n;
  op_t op;
  uint64_t *out, *rows;
} query_job;

static void query_task(void *arg, int64_t t, int thread) {
  const query_job *j = (const query_job *)arg;
  const hash_impl *h = j->h;
  int64_t lo = t * QCHUNK, hi = lo + QCHUNK < j->n ? lo + QCHUNK : j->n;
  for (int64_t i = lo; i < hi; i++) {
    int64_t slot;
    uint64_t first = 0, end = 0; /* csr span, or the direct row in `first` */
    int direct = 0;
    if (h->L.key_bits == 32) {
      uint32_t v = 0;
      slot = rdx_hash_find32(h->table, &h->L, ((const uint32_t *)j->q)[i], &v);
      direct = rdx_hash_direct32(v);
      if (slot >= 0) first = direct ? v : h->dir[v & ~RDX_HASH32_FLAG], end = direct ? 0 : h->dir[(v & ~RDX_HASH32_FLAG) + 1];
    } else {
      uint64_t v = 0;
      slot = rdx_hash_find64(h->table, &h->L, ((const uint64_t *)j->q)[i], &v);
      direct = rdx_hash_direct64(v);
      if (slot >= 0) first = direct ? v : h->dir[v & ~RDX_HASH64_FLAG], end = direct ? 0 : h->dir[(v & ~RDX_HASH64_FLAG) + 1];
    }
    switch (j->op) {
      case OP_LOOKUP:
        j->out[i] = slot < 0 ? RDX_MISS : direct ? first : csr_row(&h->csr, (int64_t)first);
        break;
      case OP_COUNT:
        j->out[i] = slot < 0 ? 0 : direct ? 1 : end - first;
        break;
      case OP_FILL: {
        uint64_t *dst = j->rows + j->out[i], *stop = j->rows + j->out[i + 1];
        if (slot < 0 || dst >= stop) break;
        if (direct) {
          *dst = first;
          break;
        }
        for (uint64_t k = first; k < end && dst < stop; k++) *dst++ = csr_row(&h->csr, (int64_t)k);
        break;
      }
    }
  }
}

static rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, op_t op,
                      uint64_t *out, uint64_t *rows) {
  query_job j = {(const hash_impl *)idx->impl, q, n, op, out, rows};
  return rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j);
}

_Static_assert(OP_COUNT == (int)RDX_KEY_LOOKUP_COUNT && OP_FILL == (int)RDX_KEY_LOOKUP_FILL, "op_t follows rdx_key_op");
static rdx_status hash_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                             uint64_t *out, uint64_t *rows) {
  return run(ctx, idx, q, n, (op_t)op, out, rows); /* lookups only: index.c keeps ranges away */
}

/* No range calls: index.c answers them with RDX_ERR_UNSUPPORTED and a sentence. */
const rdx_key_ops rdx_hash_cpu_ops = {
    RDX_KIND_HASH, RDX_BACKEND_CPU, hash_build, hash_destroy, hash_query, 0, 1, NULL, NULL, NULL,
};
