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
  int64_t n_keys;     /* occupied slots: distinct keys, <= rdx_hash_limit after an insert */
} hash_impl;

#define CHUNK 16384
#define QCHUNK 4096

static inline uint64_t in_key(const rdx_key_input *in, int64_t i) {
  return in->key_dtype == RDX_U32 ? ((const uint32_t *)in->keys)[i] : ((const uint64_t *)in->keys)[i];
}
static inline uint64_t in_row(const rdx_key_input *in, int64_t i) {
  if (in->rows == NULL) return in->first_row + (uint64_t)i;
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
  h->n_keys = in->n - h->csr.n + h->n_dir; /* direct keys hold one entry each */
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

/* ---- updates ----
 *
 * Insert is one pass like the build: every pair is put into an empty slot with an atomic CAS; a
 * pair whose key holds a slot already -- present before the batch, or put by this same pass for an
 * earlier copy of the key in the batch -- changes nothing (state ST_NONE) and is counted. Then:
 *  - no such pair: the batch is in (new unique keys whose rows fit a slot, the common case);
 *  - some: those pairs alone, gathered with explicit rows (in any order: sort_insert sorts them),
 *    go through sort_insert, and the pass's puts stay. Every key of that sub-batch is in the table
 *    now, so sort_insert adds no key: each key's old rows (its direct row, which for a key put by
 *    this pass is that pass's row, or its CSR list) and the sub-batch's are merged into a new CSR
 *    and directory and its slot pointed there. The index gains in->n rows and the keys the pass
 *    put. Should the sub-batch's allocation or sort_insert fail (it allocates everything before
 *    its first change), the pass is undone as below and the index is as before the call;
 *  - a row too big for a slot (its key was put with the mark value, which no slot may keep) or a
 *    put without room: the pass is undone and the whole batch goes through sort_insert (or the
 *    insert fails, on overflow). Both are rare: rows below 2^31 (u32 keys) or 2^63 fit, and the
 *    table has room for the batch's new keys before the pass (growth, below).
 * Undoing the pass marks the keys it put and removes them as an erase removes keys, which leaves
 * every key that was there before in its slot and needs no memory beyond the pass's own state, so
 * it cannot fail.
 *
 * Growth: after an insert the table holds at most rdx_hash_limit keys (the load factor's share of
 * its slots), so lookups after any inserts are as fast as after a build. A batch that could pass
 * it (its keys absent from the table counted first, repeats included: an upper bound) rehashes the
 * table into a new one planned for twice the keys it will hold, at the load factor, and goes into
 * that; each growth at least doubles the table, so n inserts cost O(n) rehashing in all, and the
 * table stays between half and all of its target load. The new table is built aside and swapped
 * in only when the batch is in. Erases never shrink the table (index.c destroys an index erased
 * to nothing).
 *
 * Erase: each listed key's slot is marked (its value exchanged for PENDING: the thread that changes
 * it counts the key's rows, so repeated keys count once), the marks are removed cluster by cluster
 * (hash_hd.h: no tombstones), and the erased keys' lists leave the CSR: a compacted CSR and
 * directory, allocated before the first change, with every CSR key's slot pointed at its new entry.
 */

enum { ST_NONE = 0, ST_PUT = 1, ST_MARKED = 2, ST_OWNER = 3 };

static void noop_task(void *arg, int64_t t, int thread) { (void)arg, (void)t, (void)thread; }

/* The phases after an update's first change: rdx_parallel_for fails only when it first starts the
 * context's threads, which every update does before its first change (start_threads); should it
 * fail anyway, the phase runs inline. */
static void run_all(rdx_context *ctx, int64_t n_tasks, rdx_task_fn fn, void *arg) {
  if (rdx_parallel_for(ctx, n_tasks, fn, arg) == RDX_OK) return;
  for (int64_t t = 0; t < n_tasks; t++) fn(arg, t, 0);
}
static rdx_status start_threads(rdx_context *ctx) { return rdx_parallel_for(ctx, 2, noop_task, NULL); }

static inline uint64_t key_at(const void *keys, int key_bits, int64_t i) {
  return key_bits == 32 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
}
static inline int is_direct(const hash_impl *h, uint64_t v) {
  return h->L.key_bits == 32 ? rdx_hash_direct32((uint32_t)v) : rdx_hash_direct64(v);
}
static inline uint64_t dir_index(const hash_impl *h, uint64_t v) {
  return h->L.key_bits == 32 ? v & ~(uint64_t)RDX_HASH32_FLAG : v & ~RDX_HASH64_FLAG;
}
static inline uint64_t rows_of(const hash_impl *h, uint64_t v) {
  return is_direct(h, v) ? 1 : h->dir[dir_index(h, v) + 1] - h->dir[dir_index(h, v)];
}
static inline uint64_t row_max(const hash_impl *h) {
  return h->L.key_bits == 32 ? RDX_HASH32_ROW_MAX : RDX_HASH64_ROW_MAX;
}
static inline int put(hash_impl *h, uint64_t k, uint64_t val) {
  return h->L.key_bits == 32 ? rdx_hash_put32(h->table, &h->L, (uint32_t)k, (uint32_t)val, 0)
                             : rdx_hash_put64(h->table, &h->L, k, val, 0);
}

/* Mark key k for removal: its value becomes PENDING, atomically. Returns 1 with the old value when
 * this call changed it, 0 when k is absent or marked already. Probes with atomic loads: other
 * threads mark other slots meanwhile. */
static int mark_key(hash_impl *h, uint64_t k, uint64_t *old) {
  const rdx_hash_layout *L = &h->L;
  uint64_t w = rdx_hash_home(L, k);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    for (int i = 0; i < L->slots; i++) {
      uint64_t s = w * (uint64_t)L->slots + (uint64_t)i;
      if (L->key_bits == 32) {
        uint64_t cur = RDX_HASH_LOAD(h->table + s);
        if ((uint32_t)cur == RDX_HASH32_V_EMPTY) return 0;
        if ((cur >> 32) != k) continue;
        uint64_t was = atomic_exchange_explicit(RDX_HASH_AT(h->table + s), k << 32 | RDX_HASH32_V_PENDING,
                                                memory_order_relaxed);
        *old = (uint32_t)was;
        return *old != RDX_HASH32_V_PENDING;
      }
      uint64_t cur = RDX_HASH_LOAD(h->table + 2 * s + 1);
      if (cur == RDX_HASH64_EMPTY) return 0;
      if (RDX_HASH_LOAD(h->table + 2 * s) != k) continue;
      *old = atomic_exchange_explicit(RDX_HASH_AT(h->table + 2 * s + 1), RDX_HASH64_PENDING, memory_order_relaxed);
      return *old != RDX_HASH64_PENDING;
    }
  }
  return 0;
}

typedef struct update_job {
  hash_impl *h;
  const rdx_key_input *in;  /* insert: the batch */
  const void *keys;         /* erase: the keys */
  int64_t n;                /* pairs or keys */
  uint8_t *state;           /* per pair or key: ST_* */
  int64_t *sum_a, *sum_b;   /* per chunk */
  int *whole, *overflow;    /* per chunk (insert): a row too big for a slot; a put found no room */
  uint8_t *dead;            /* erase: per directory entry, 1 when its key goes */
  hash_impl *to;            /* growth: the new table */
  void *sub_keys;           /* insert: the pairs whose key was present, keys of key_dtype ... */
  uint64_t *sub_rows;       /* ... and their rows, at sum_b's offsets */
} update_job;

static inline uint64_t job_key(const update_job *j, int64_t i) {
  return j->in ? in_key(j->in, i) : key_at(j->keys, j->h->L.key_bits, i);
}
#define CHUNK_RANGE(j, t) \
  int64_t lo = (t) * CHUNK, hi = lo + CHUNK < (j)->n ? lo + CHUNK : (j)->n

/* Insert pass: put each pair; ST_PUT when it took an empty slot, ST_NONE when its key held a slot
 * already (or there was no room). Per chunk: the keys put (sum_a), the pairs whose key was present
 * (sum_b), whether a row was too big for a slot (whole) and whether a put found no room. */
static void put_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  hash_impl *h = j->h;
  CHUNK_RANGE(j, t);
  int64_t placed = 0, present = 0;
  int whole = 0, overflow = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t k = in_key(j->in, i), r = in_row(j->in, i);
    uint64_t val = h->L.key_bits == 32 ? rdx_hash_value32(r) : rdx_hash_value64(r);
    int got = put(h, k, val);
    j->state[i] = got == 1 ? ST_PUT : ST_NONE;
    placed += got == 1;
    present += got == 2;
    whole |= rdx_hash_is_mark(&h->L, val);
    overflow |= got == 0;
  }
  j->sum_a[t] = placed;
  j->sum_b[t] = present;
  j->whole[t] = whole;
  j->overflow[t] = overflow;
}

/* After a put pass without overflow: copy the pairs whose key was present (ST_NONE) to sub_keys
 * and sub_rows at the chunk's offset (sum_b, prefix-summed), rows made explicit. */
static void present_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  int64_t at = j->sum_b[t];
  for (int64_t i = lo; i < hi; i++) {
    if (j->state[i] != ST_NONE) continue;
    if (j->in->key_dtype == RDX_U32) ((uint32_t *)j->sub_keys)[at] = (uint32_t)in_key(j->in, i);
    else ((uint64_t *)j->sub_keys)[at] = in_key(j->in, i);
    j->sub_rows[at++] = in_row(j->in, i);
  }
}

/* Undo of the insert pass: mark every key it put (a key put with a row too big for a slot is
 * marked already). */
static void unput_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  for (int64_t i = lo; i < hi; i++) {
    uint64_t old;
    if (j->state[i] != ST_PUT) continue;
    (void)mark_key(j->h, in_key(j->in, i), &old);
    j->state[i] = ST_MARKED;
  }
}

/* Erase: mark each key; the thread that marks it counts its rows (sum_a) and the key (sum_b). */
static void erase_mark_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  int64_t rows = 0, keys = 0;
  for (int64_t i = lo; i < hi; i++) {
    uint64_t old;
    j->state[i] = ST_NONE;
    if (!mark_key(j->h, job_key(j, i), &old)) continue;
    j->state[i] = ST_MARKED;
    rows += (int64_t)rows_of(j->h, old);
    keys++;
  }
  j->sum_a[t] = rows;
  j->sum_b[t] = keys;
}

/* Read-only: the marked keys that own their cluster (the first mark in it). */
static void owner_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  for (int64_t i = lo; i < hi; i++) {
    int64_t slot;
    if (j->state[i] != ST_MARKED) continue;
    find_value(j->h, job_key(j, i), &slot);
    if (slot >= 0 && rdx_hash_owns_cluster(j->h->table, &j->h->L, (uint64_t)slot)) j->state[i] = ST_OWNER;
  }
}

/* Each owner rewrites its cluster without the marked keys. Clusters are disjoint, and an owner
 * reads outside its own only the end window of the one before, whose last slot nobody writes. */
static void compact_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  const rdx_hash_layout *L = &j->h->L;
  CHUNK_RANGE(j, t);
  for (int64_t i = lo; i < hi; i++) {
    if (j->state[i] != ST_OWNER) continue;
    uint64_t c = rdx_hash_cluster_start(j->h->table, L, rdx_hash_home(L, job_key(j, i)));
    rdx_hash_compact_cluster(j->h->table, L, c);
  }
}

/* Remove the marked keys (state ST_MARKED), n_chunks chunks of the job's pairs or keys. */
static void remove_marked(rdx_context *ctx, update_job *j, int64_t n_chunks) {
  run_all(ctx, n_chunks, owner_task, j);
  run_all(ctx, n_chunks, compact_task, j);
}

/* Read-only: the keys absent from the table (sum_a). */
static void absent_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  int64_t c = 0;
  for (int64_t i = lo; i < hi; i++) {
    int64_t slot;
    find_value(j->h, in_key(j->in, i), &slot);
    c += slot < 0;
  }
  j->sum_a[t] = c;
}

/* Growth: put every key of the old table, value word and all, into the new one. */
static void rehash_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  const rdx_hash_layout *L = &j->h->L;
  uint64_t lo = (uint64_t)t * QCHUNK, hi = lo + QCHUNK < L->n_windows ? lo + QCHUNK : L->n_windows;
  for (uint64_t s = lo * (uint64_t)L->slots; s < hi * (uint64_t)L->slots; s++) {
    uint64_t k, v;
    rdx_hash_get(j->h->table, L, s, &k, &v);
    if (!rdx_hash_is_empty(L, v)) put(j->to, k, v);
  }
}

/* Read-only: flag the directory entries of the keys listed (erase). */
static void dead_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  CHUNK_RANGE(j, t);
  for (int64_t i = lo; i < hi; i++) {
    int64_t slot;
    uint64_t v = find_value(j->h, job_key(j, i), &slot);
    if (slot >= 0 && !is_direct(j->h, v))
      atomic_store_explicit((_Atomic uint8_t *)&j->dead[dir_index(j->h, v)], 1, memory_order_relaxed);
  }
}

static int64_t sum(const int64_t *a, int64_t n) {
  int64_t s = 0;
  for (int64_t t = 0; t < n; t++) s += a[t];
  return s;
}

/* The per-pair state and per-chunk sums of an update of n pairs or keys. */
static rdx_status job_alloc(rdx_context *ctx, const char *what, update_job *j, int64_t n, void **mem) {
  int64_t n_chunks = (n + CHUNK - 1) / CHUNK;
  size_t bytes = (size_t)n_chunks * (2 * sizeof(int64_t) + 2 * sizeof(int)) + (size_t)n;
  RDX_CHECK(rdx_mem_alloc(ctx, what, mem, bytes, RDX_HOST));
  j->n = n;
  j->sum_a = (int64_t *)*mem;
  j->sum_b = j->sum_a + n_chunks;
  j->whole = (int *)(j->sum_b + n_chunks);
  j->overflow = j->whole + n_chunks;
  j->state = (uint8_t *)(j->overflow + n_chunks);
  return RDX_OK;
}

/* A directory for the sorted CSR entries nh->csr (n >= 1): nh->dir and nh->n_dir, and the slot
 * array the pointing needs. Allocates, changes no table. */
static rdx_status dir_prepare(rdx_context *ctx, const char *fn, hash_impl *nh, build_job *b) {
  rdx_status st = RDX_OK;
  int64_t m = nh->csr.n, n_chunks = (m + CHUNK - 1) / CHUNK;
  memset(b, 0, sizeof *b);
  b->h = nh;
  b->m = m;
  nh->dir = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, fn, (void **)&b->count, (size_t)n_chunks * sizeof(int64_t), RDX_HOST));
  run_all(ctx, n_chunks, heads_count_task, b);
  nh->n_dir = prefix(b->count, n_chunks);
  if ((uint64_t)nh->n_dir - 1 > (nh->L.key_bits == 32 ? RDX_HASH32_DIR_MAX : RDX_HASH64_DIR_MAX)) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld keys with several or large rows exceed the hash directory", fn,
                  (long long)nh->n_dir);
    goto fail;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&nh->dir, (size_t)(nh->n_dir + 1) * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&b->slot_of, (size_t)nh->n_dir * 8, RDX_HOST), st, fail);
  nh->dir[nh->n_dir] = (uint64_t)m;
  run_all(ctx, n_chunks, heads_write_task, b);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, b->count);
  rdx_mem_free(ctx, nh->dir);
  nh->dir = NULL;
  b->count = NULL;
  return st;
}
/* Point every CSR key's slot at its directory entry (the keys are all in the table), and free
 * the preparation's scratch. */
static void dir_point(rdx_context *ctx, build_job *b) {
  int64_t n_chunks = (b->h->n_dir + CHUNK - 1) / CHUNK;
  run_all(ctx, n_chunks, slots_find_task, b);
  run_all(ctx, n_chunks, slots_write_task, b);
}
static void dir_scratch_free(rdx_context *ctx, build_job *b) {
  rdx_mem_free(ctx, b->count);
  rdx_mem_free(ctx, b->slot_of);
  b->count = NULL;
  b->slot_of = NULL;
}

/* The pairs `in` sorted and merged into the CSR (see "updates" above): the whole batch, or the
 * pairs of a put pass whose key was present. All or nothing: every allocation comes before the
 * first change. Adds in->n rows to h->L.n and the keys that were absent to h->n_keys (none when
 * every key of `in` is in the table, as after a put pass: then only the CSR and directory change,
 * and the slots of the keys that had a direct row are pointed at the directory). */
static rdx_status sort_insert(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  static const char fn[] = "rdx_index_insert: hash rows";
  const int kb = h->L.key_bits;
  const size_t ksz = kb == 32 ? 4 : 8;
  rdx_status st = RDX_OK;
  rdx_entries E = {0};
  hash_impl nh = *h;
  build_job b;
  memset(&b, 0, sizeof b);
  void *ck = NULL;
  uint64_t *cr = NULL;
  nh.csr.pairs = NULL;
  nh.csr.n = 0;
  nh.dir = NULL;
  nh.n_dir = 0;
  RDX_CHECK(rdx_entries_build_cpu(ctx, in, &E));
  /* Each group of equal keys: a new key with one row that fits a slot goes in directly; any
   * other key's rows (its old direct row, its old CSR list, the batch's) go to the CSR. */
  int64_t extra = 0, new_keys = 0;
  for (int64_t a = 0, e; a < E.n; a = e) {
    uint64_t k = csr_key(&E, a);
    for (e = a + 1; e < E.n && csr_key(&E, e) == k;) e++;
    int64_t slot;
    uint64_t v = find_value(h, k, &slot);
    new_keys += slot < 0;
    if (slot < 0 && e - a == 1 && csr_row(&E, a) <= row_max(h)) continue;
    extra += (e - a) + (slot >= 0 && is_direct(h, v));
  }
  int64_t m = h->csr.n + extra;
  if (m > 0) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &ck, (size_t)m * ksz, RDX_HOST), st, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&cr, (size_t)m * 8, RDX_HOST), st, fail);
    int64_t at = 0;
#define PUT_PAIR(k, r)                                          \
  do {                                                          \
    if (kb == 32) ((uint32_t *)ck)[at] = (uint32_t)(k);         \
    else ((uint64_t *)ck)[at] = (k);                            \
    cr[at++] = (r);                                             \
  } while (0)
    for (int64_t i = 0; i < h->csr.n; i++) PUT_PAIR(csr_key(&h->csr, i), csr_row(&h->csr, i));
    for (int64_t a = 0, e; a < E.n; a = e) {
      uint64_t k = csr_key(&E, a);
      for (e = a + 1; e < E.n && csr_key(&E, e) == k;) e++;
      int64_t slot;
      uint64_t v = find_value(h, k, &slot);
      if (slot < 0 && e - a == 1 && csr_row(&E, a) <= row_max(h)) continue;
      if (slot >= 0 && is_direct(h, v)) PUT_PAIR(k, v);
      for (int64_t i = a; i < e; i++) PUT_PAIR(k, csr_row(&E, i));
    }
#undef PUT_PAIR
    rdx_key_input in2 = *in;
    in2.keys = ck;
    in2.rows = cr;
    in2.n = m;
    in2.row_dtype = RDX_U64;
    in2.first_row = 0;
    RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, &in2, &nh.csr), st, fail);
    rdx_mem_free(ctx, ck);
    rdx_mem_free(ctx, cr);
    ck = NULL;
    cr = NULL;
    RDX_CHECK_GOTO(dir_prepare(ctx, fn, &nh, &b), st, fail);
  }
  /* commit: nothing below fails */
  for (int64_t a = 0, e; a < E.n; a = e) {
    uint64_t k = csr_key(&E, a);
    for (e = a + 1; e < E.n && csr_key(&E, e) == k;) e++;
    int64_t slot;
    find_value(h, k, &slot);
    if (slot >= 0) continue;
    uint64_t r = csr_row(&E, a);
    int direct = e - a == 1 && r <= row_max(h);
    put(h, k, direct ? r : rdx_hash_mark_value(&h->L)); /* CSR keys are pointed below */
  }
  if (m > 0) dir_point(ctx, &b);
  dir_scratch_free(ctx, &b);
  rdx_entries_free(ctx, &E);
  rdx_entries_free(ctx, &h->csr);
  rdx_mem_free(ctx, h->dir);
  h->csr = nh.csr;
  h->dir = nh.dir;
  h->n_dir = nh.n_dir;
  h->n_keys += new_keys;
  h->L.n += in->n;
  return RDX_OK;
fail:
  dir_scratch_free(ctx, &b);
  rdx_mem_free(ctx, nh.dir);
  rdx_entries_free(ctx, &nh.csr);
  rdx_mem_free(ctx, ck);
  rdx_mem_free(ctx, cr);
  rdx_entries_free(ctx, &E);
  return st;
}

/* The batch into table h, which has room for all of it (rdx_hash_limit). */
static rdx_status insert_into(rdx_context *ctx, hash_impl *h, const rdx_key_input *in) {
  static const char fn[] = "rdx_index_insert: hash rows of keys present";
  rdx_status st = RDX_OK;
  update_job j;
  memset(&j, 0, sizeof j);
  void *mem = NULL, *sub = NULL;
  j.h = h;
  j.in = in;
  RDX_CHECK(job_alloc(ctx, "rdx_index_insert: hash scratch", &j, in->n, &mem));
  int64_t n_chunks = (in->n + CHUNK - 1) / CHUNK;
  run_all(ctx, n_chunks, put_task, &j);
  int whole = 0, overflow = 0;
  for (int64_t t = 0; t < n_chunks; t++) whole |= j.whole[t], overflow |= j.overflow[t];
  if (!whole && !overflow) {
    int64_t placed = sum(j.sum_a, n_chunks), m = prefix(j.sum_b, n_chunks);
    if (m > 0) { /* the pairs whose key was present, through sort_insert */
      size_t ksz = in->key_dtype == RDX_U32 ? 4 : 8;
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &sub, (size_t)m * (8 + ksz), RDX_HOST), st, undo);
      j.sub_rows = (uint64_t *)sub;
      j.sub_keys = j.sub_rows + m;
      run_all(ctx, n_chunks, present_task, &j);
      rdx_key_input in2 = *in;
      in2.keys = j.sub_keys;
      in2.rows = j.sub_rows;
      in2.n = m;
      in2.row_dtype = RDX_U64;
      in2.first_row = 0;
      RDX_CHECK_GOTO(sort_insert(ctx, h, &in2), st, undo); /* counts its m rows, adds no key */
      rdx_mem_free(ctx, sub);
    }
    h->n_keys += placed;
    h->L.n += in->n - m;
    rdx_mem_free(ctx, mem);
    return RDX_OK;
  }
undo: /* the pass's puts come out: the table is as before */
  run_all(ctx, n_chunks, unput_task, &j);
  remove_marked(ctx, &j, n_chunks);
  rdx_mem_free(ctx, sub);
  rdx_mem_free(ctx, mem);
  if (st != RDX_OK) return st;
  if (overflow)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_index_insert: hash table of %llu windows overflowed with %lld keys",
                    (unsigned long long)h->L.n_windows, (long long)h->n_keys);
  return sort_insert(ctx, h, in);
}

static rdx_status hash_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  hash_impl *h = (hash_impl *)idx->impl;
  const double lf = in->opts.load_factor;
  RDX_CHECK(start_threads(ctx));
  int64_t limit = rdx_hash_limit(&h->L, lf), add = in->n;
  if (h->n_keys + add > limit) { /* count the keys that are new, at most */
    update_job j;
    memset(&j, 0, sizeof j);
    void *mem = NULL;
    j.h = h;
    j.in = in;
    RDX_CHECK(job_alloc(ctx, "rdx_index_insert: hash scratch", &j, in->n, &mem));
    int64_t n_chunks = (in->n + CHUNK - 1) / CHUNK;
    run_all(ctx, n_chunks, absent_task, &j);
    add = sum(j.sum_a, n_chunks);
    rdx_mem_free(ctx, mem);
  }
  if (h->n_keys + add <= limit) return insert_into(ctx, h, in);
  /* grow: a table for twice the keys, aside */
  hash_impl g = *h;
  int64_t want = h->n_keys + add;
  if (rdx_hash_plan(&g.L, 2 * want, h->L.key_bits, lf) != 0 && rdx_hash_plan(&g.L, want, h->L.key_bits, lf) != 0)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "rdx_index_insert: %lld keys at load factor %g need more than 2^32 hash windows", (long long)want, lf);
  g.L.n = h->L.n;
  size_t bytes = (size_t)g.L.n_windows * RDX_HASH_WINDOW_BYTES;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_insert: grown hash table", (void **)&g.table, bytes, RDX_HOST));
  memset(g.table, 0xFF, bytes);
  update_job j;
  memset(&j, 0, sizeof j);
  j.h = h;
  j.to = &g;
  run_all(ctx, (int64_t)((h->L.n_windows + QCHUNK - 1) / QCHUNK), rehash_task, &j);
  rdx_status st = insert_into(ctx, &g, in);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, g.table);
    return st;
  }
  rdx_mem_free(ctx, h->table);
  *h = g; /* the CSR and directory are g's: the old ones, or what sort_insert made */
  return RDX_OK;
}

static rdx_status hash_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  static const char fn[] = "rdx_index_erase: hash";
  hash_impl *h = (hash_impl *)idx->impl;
  rdx_status st = RDX_OK;
  update_job j;
  memset(&j, 0, sizeof j);
  void *mem = NULL;
  hash_impl nh = *h; /* the compacted CSR, when erased keys leave it */
  nh.csr.pairs = NULL;
  nh.csr.n = 0;
  nh.dir = NULL;
  nh.n_dir = 0;
  build_job b;
  memset(&b, 0, sizeof b);
  j.h = h;
  j.keys = keys;
  RDX_CHECK(start_threads(ctx));
  RDX_CHECK(job_alloc(ctx, fn, &j, m, &mem));
  int64_t n_chunks = (m + CHUNK - 1) / CHUNK, dead_rows = 0, n_dead = 0;
  if (h->n_dir > 0) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&j.dead, (size_t)h->n_dir, RDX_HOST), st, done);
    memset(j.dead, 0, (size_t)h->n_dir);
    run_all(ctx, n_chunks, dead_task, &j);
    for (int64_t d = 0; d < h->n_dir; d++)
      if (j.dead[d]) n_dead++, dead_rows += (int64_t)(h->dir[d + 1] - h->dir[d]);
  }
  if (n_dead > 0 && n_dead < h->n_dir) { /* the surviving lists, copied in order: still sorted */
    size_t psz = h->csr.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
    nh.csr.width = h->csr.width;
    nh.csr.n = h->csr.n - dead_rows;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &nh.csr.pairs, (size_t)nh.csr.n * psz, RDX_HOST), st, done);
    int64_t at = 0;
    for (int64_t d = 0; d < h->n_dir; d++) {
      if (j.dead[d]) continue;
      int64_t len = (int64_t)(h->dir[d + 1] - h->dir[d]);
      memcpy((char *)nh.csr.pairs + (size_t)at * psz, (const char *)h->csr.pairs + h->dir[d] * psz, (size_t)len * psz);
      at += len;
    }
    RDX_CHECK_GOTO(dir_prepare(ctx, fn, &nh, &b), st, done);
  }
  /* commit: nothing below fails */
  run_all(ctx, n_chunks, erase_mark_task, &j);
  remove_marked(ctx, &j, n_chunks);
  int64_t rows = sum(j.sum_a, n_chunks), gone = sum(j.sum_b, n_chunks);
  if (n_dead > 0) {
    if (nh.csr.n > 0) dir_point(ctx, &b);
    rdx_entries_free(ctx, &h->csr);
    rdx_mem_free(ctx, h->dir);
    h->csr = nh.csr;
    h->dir = nh.dir;
    h->n_dir = nh.n_dir;
    nh.csr.pairs = NULL;
    nh.dir = NULL;
  }
  h->n_keys -= gone;
  h->L.n -= rows;
  *n_erased = rows;
done:
  dir_scratch_free(ctx, &b);
  rdx_entries_free(ctx, &nh.csr);
  rdx_mem_free(ctx, nh.dir);
  rdx_mem_free(ctx, j.dead);
  rdx_mem_free(ctx, mem);
  return st;
}

/* ---- entries: the direct keys from the table, the CSR as it is, sorted together ---- */

typedef struct gather_job {
  const hash_impl *h;
  int64_t *count;    /* per chunk of windows: direct keys, then their offset */
  void *keys;
  uint64_t *rows;
} gather_job;

static void gather_task_(void *arg, int64_t t, int pass) {
  gather_job *j = (gather_job *)arg;
  const rdx_hash_layout *L = &j->h->L;
  uint64_t lo = (uint64_t)t * QCHUNK, hi = lo + QCHUNK < L->n_windows ? lo + QCHUNK : L->n_windows;
  int64_t c = 0, at = pass ? j->count[t] : 0;
  for (uint64_t s = lo * (uint64_t)L->slots; s < hi * (uint64_t)L->slots; s++) {
    uint64_t k, v;
    rdx_hash_get(j->h->table, L, s, &k, &v);
    if (rdx_hash_is_empty(L, v) || !is_direct(j->h, v)) continue;
    if (pass) {
      if (L->key_bits == 32) ((uint32_t *)j->keys)[at] = (uint32_t)k;
      else ((uint64_t *)j->keys)[at] = k;
      j->rows[at++] = v;
    }
    c++;
  }
  if (!pass) j->count[t] = c;
}
static void gather_count_task(void *arg, int64_t t, int thread) { gather_task_(arg, t, 0); }
static void gather_copy_task(void *arg, int64_t t, int thread) { gather_task_(arg, t, 1); }

static rdx_status hash_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  static const char fn[] = "rdx_index entries: hash";
  const hash_impl *h = (const hash_impl *)idx->impl;
  const int kb = h->L.key_bits;
  rdx_status st = RDX_OK;
  gather_job j = {h, NULL, NULL, NULL};
  int64_t n_chunks = (int64_t)((h->L.n_windows + QCHUNK - 1) / QCHUNK), n = h->L.n;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&j.count, (size_t)n_chunks * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &j.keys, (size_t)n * (kb == 32 ? 4 : 8), RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&j.rows, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, gather_count_task, &j), st, done);
  int64_t direct = prefix(j.count, n_chunks);
  if (direct + h->csr.n != n) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %lld direct and %lld CSR entries for %lld", fn, (long long)direct,
                  (long long)h->csr.n, (long long)n);
    goto done;
  }
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_chunks, gather_copy_task, &j), st, done);
  for (int64_t i = 0; i < h->csr.n; i++) {
    if (kb == 32) ((uint32_t *)j.keys)[direct + i] = (uint32_t)csr_key(&h->csr, i);
    else ((uint64_t *)j.keys)[direct + i] = csr_key(&h->csr, i);
    j.rows[direct + i] = csr_row(&h->csr, i);
  }
  {
    rdx_key_input in;
    memset(&in, 0, sizeof in);
    in.keys = j.keys;
    in.rows = j.rows;
    in.n = n;
    in.key_dtype = kb == 32 ? RDX_U32 : RDX_U64;
    in.row_dtype = RDX_U64;
    in.opts = idx->opts;
    RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, &in, out), st, done);
  }
done:
  rdx_mem_free(ctx, j.count);
  rdx_mem_free(ctx, j.keys);
  rdx_mem_free(ctx, j.rows);
  return st;
}

/* No range calls: index.c answers them with RDX_ERR_UNSUPPORTED and a sentence. */
const rdx_key_ops rdx_hash_cpu_ops = {
    RDX_KIND_HASH, RDX_BACKEND_CPU, hash_build, hash_destroy, hash_query, 0, 1, hash_insert, hash_erase, hash_entries,
};
