/*
 * index.c: the public key-index calls. Validation, staging and the empty cases live here once,
 * so each (kind, backend) ops table only answers valid, non-empty batches in its own memory.
 *
 * All-or-nothing: builds make a new object and free everything on failure; lookups never
 * mutate an index, and write caller outputs only after the whole batch succeeded on the staged
 * copies (for host outputs of GPU contexts) or in place (a failed batch's output is undefined,
 * the index is untouched).
 */
#include "keys/keys.h"
#include "keys/hash_hd.h"

#include <stdlib.h>
#include <string.h>

static rdx_status check_index(rdx_context *ctx, const char *fn, const rdx_index *idx) {
  if (idx == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: idx is NULL", fn);
  if (idx->magic != RDX_INDEX_MAGIC)
    return rdx_fail(ctx, RDX_ERR_MISUSE, "%s: idx %p is not an index", fn, (const void *)idx);
  if (idx->ctx != ctx)
    return rdx_fail(ctx, RDX_ERR_MISUSE, "%s: idx %p belongs to another context", fn,
                    (const void *)idx);
  return RDX_OK;
}

static int is_key_dtype(rdx_dtype d) { return d == RDX_U32 || d == RDX_U64; }

/* Row id 2^64-1 is RDX_MISS, what rdx_index_lookup answers for a miss: a row with that id could
 * not be told from one, so every kind refuses it here (u32 row ids cannot hold it). */
static rdx_status check_row_ids(rdx_context *ctx, const char *fn, rdx_array rows) {
  if (rows.dtype != RDX_U64 || rows.count == 0) return RDX_OK;
  int64_t at = -1;
  RDX_CHECK(rdx_find_u64(ctx, (const uint64_t *)rows.data, rows.count, rows.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST,
                         RDX_MISS, &at));
  if (at >= 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: row_ids[%lld] is 2^64-1, the miss marker RDX_MISS, which no row may have", fn,
                    (long long)at);
  return RDX_OK;
}

rdx_status rdx_index_build(rdx_context *ctx, rdx_array keys, rdx_array row_ids,
                           const rdx_build_options *opts, rdx_index **out) {
  static const char fn[] = "rdx_index_build";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  rdx_build_options o = RDX_BUILD_OPTIONS_INIT;
  if (opts != NULL) {
    if (opts->size < sizeof(size_t) + sizeof(rdx_kind) || opts->size > (1u << 16))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn,
                      opts->size);
    memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    o.size = sizeof o;
  }
  if (o.kind == 0) o.kind = RDX_KIND_SORTED;
  if (rdx_kind_name(o.kind) == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->kind 0x%x is not an rdx_kind", fn,
                    (unsigned)o.kind);
  if (o.bucket_size == 0) o.bucket_size = 32;
  if (o.bucket_size < 1 || o.bucket_size > 65536)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->bucket_size %d is not in [1, 65536]",
                    fn, o.bucket_size);
  if (o.node_bytes == 0) o.node_bytes = 128;
  if (o.node_bytes < 32 || o.node_bytes > 4096 || (o.node_bytes & (o.node_bytes - 1)))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->node_bytes %d is not a power of two in [32, 4096]", fn,
                    o.node_bytes);
  if (o.kind == RDX_KIND_RX || o.kind == RDX_KIND_CGRX || o.kind == RDX_KIND_CGRXU) {
    int known = RDX_BUILD_SORT_QUERIES | RDX_BUILD_RT_MORTON; /* queries are not sorted: ignored */
    if (o.kind != RDX_KIND_RX) known |= RDX_BUILD_CGRX_NAIVE | RDX_BUILD_CGRX_DEFAULT_MAPPING;
    if (o.flags & ~known)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->flags 0x%x has bits kind %s does not know (0x%x)", fn,
                      (unsigned)o.flags, rdx_kind_name(o.kind), (unsigned)(o.flags & ~known));
  }
  if (o.load_factor == 0.0) o.load_factor = 0.5;
  if (!(o.load_factor > 0.0 && o.load_factor <= 0.95))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->load_factor %g is not in (0, 0.95]",
                    fn, o.load_factor);
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if (!is_key_dtype(keys.dtype) || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: keys must be 1-D u32 or u64 (dtype 0x%x, columns %d)", fn,
                    (unsigned)keys.dtype, keys.columns);
  int have_rows = row_ids.data != NULL;
  if (have_rows) {
    RDX_CHECK(rdx_array_check(ctx, fn, "row_ids", row_ids));
    if (!is_key_dtype(row_ids.dtype) || row_ids.columns != 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                      "%s: row_ids must be 1-D u32 or u64 (dtype 0x%x, columns %d)", fn,
                      (unsigned)row_ids.dtype, row_ids.columns);
    if (row_ids.count != keys.count)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids.count %lld != keys.count %lld",
                      fn, (long long)row_ids.count, (long long)keys.count);
    RDX_CHECK(check_row_ids(ctx, fn, row_ids));
  }
  /* The table's size comes from n / load_factor: a tiny factor asks for more windows than a
   * table may have (2^32, 128 GiB), refused before anything is sized from it. */
  rdx_hash_layout hl;
  if (o.kind == RDX_KIND_HASH && keys.count > 0 &&
      rdx_hash_plan(&hl, keys.count, keys.dtype == RDX_U32 ? 32 : 64, o.load_factor) != 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: opts->load_factor %g needs a hash table of more than 2^32 windows (128 GiB) for "
                    "%lld keys", fn, o.load_factor, (long long)keys.count);
  const rdx_key_ops *ops = rdx_keys_find_ops(o.kind, ctx->backend);
  if (ops == NULL)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind %s is not available on backend %s", fn,
                    rdx_kind_name(o.kind), rdx_backend_name(ctx->backend));

  rdx_index *idx = (rdx_index *)calloc(1, sizeof *idx);
  if (idx == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the handle", fn);
  idx->magic = RDX_INDEX_MAGIC;
  idx->ctx = ctx;
  idx->kind = o.kind;
  idx->dtype = keys.dtype;
  idx->n = keys.count;
  idx->next_row = (uint64_t)keys.count;
  idx->opts = o;
  if (keys.count == 0) { /* an empty index: every lookup misses, no ops needed */
    ctx->n_live_indexes++;
    *out = idx;
    return RDX_OK;
  }

  rdx_status st;
  rdx_staged sk = {0}, sr = {0};
  RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_index_build: staging keys", keys, 1, &sk), st, fail);
  if (have_rows)
    RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_index_build: staging row_ids", row_ids, 1, &sr), st,
                   fail);
  rdx_key_input in;
  in.keys = sk.data;
  in.rows = have_rows ? sr.data : NULL;
  in.n = keys.count;
  in.key_dtype = keys.dtype;
  in.row_dtype = have_rows ? row_ids.dtype : RDX_U64;
  in.opts = o;
  in.first_row = 0;
  /* Measure this build's own peak: staging copies of caller arrays are not the index's. */
  int64_t base = ctx->in_use, saved_peak = ctx->peak;
  ctx->peak = ctx->in_use;
  idx->ops = ops;
  st = ops->build(ctx, idx, &in);
  idx->peak = ctx->peak - base;
  idx->resident = ctx->in_use - base;
  if (saved_peak > ctx->peak) ctx->peak = saved_peak;
  if (st != RDX_OK) goto fail;
  rdx_array_release(ctx, &sk);
  rdx_array_release(ctx, &sr);
  ctx->n_live_indexes++;
  *out = idx;
  return RDX_OK;
fail:
  rdx_array_release(ctx, &sk);
  rdx_array_release(ctx, &sr);
  free(idx);
  return st;
}

void rdx_index_destroy(rdx_index *idx) {
  if (idx == NULL || idx->magic != RDX_INDEX_MAGIC) return;
  if (idx->ops != NULL) idx->ops->destroy(idx->ctx, idx);
  idx->ctx->n_live_indexes--;
  free(idx); /* the handle is gone: using it after this is undefined (raydex.h) */
}

int64_t rdx_index_count(const rdx_index *idx) {
  return idx != NULL && idx->magic == RDX_INDEX_MAGIC ? idx->n : 0;
}
rdx_dtype rdx_index_dtype(const rdx_index *idx) {
  return idx != NULL && idx->magic == RDX_INDEX_MAGIC ? idx->dtype : (rdx_dtype)0;
}
rdx_kind rdx_index_kind(const rdx_index *idx) {
  return idx != NULL && idx->magic == RDX_INDEX_MAGIC ? idx->kind : (rdx_kind)0;
}

rdx_status rdx_index_bytes(rdx_context *ctx, const rdx_index *idx, int64_t *resident,
                           int64_t *peak) {
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_index(ctx, "rdx_index_bytes", idx));
  if (resident) *resident = idx->resident;
  if (peak) *peak = idx->peak;
  return RDX_OK;
}

/* ---- batched queries ---- */

typedef rdx_key_op rdx_key_op;

static const char *op_name(rdx_key_op op) {
  switch (op) {
    case RDX_KEY_LOOKUP: return "rdx_index_lookup";
    case RDX_KEY_LOOKUP_COUNT: return "rdx_index_lookup_count";
    case RDX_KEY_LOOKUP_FILL: return "rdx_index_lookup_fill";
    case RDX_KEY_RANGE_COUNT: return "rdx_index_range_count";
    case RDX_KEY_RANGE_FILL: return "rdx_index_range_fill";
  }
  return "?";
}

/* A fill's offsets come from the caller, so before anything is written they must be exactly the
 * exclusive scan of this batch's counts (rdx_csr_check_offsets); then no fill can write outside
 * row_ids[0, offsets[n]). The batch is counted again for it, as the points fill does
 * (spatial/query.c). offsets and queries are in the compute location. */
static rdx_status check_offsets(rdx_context *ctx, const char *fn, const rdx_index *idx, rdx_key_op op,
                                const void *queries, int64_t n, const uint64_t *offsets) {
  uint64_t *counts = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK(rdx_mem_alloc(ctx, fn, (void **)&counts, (size_t)n * 8, rdx_compute_location(ctx)));
  rdx_key_op count_op = op == RDX_KEY_LOOKUP_FILL ? RDX_KEY_LOOKUP_COUNT : RDX_KEY_RANGE_COUNT;
  RDX_CHECK_GOTO(idx->ops == NULL ? rdx_fill_u64(ctx, counts, n, 0)
                                  : idx->ops->query(ctx, idx, count_op, queries, n, counts, NULL),
                 st, done);
  st = rdx_csr_check_offsets(ctx, fn, offsets, counts, n, "rows");
done:
  rdx_mem_free(ctx, counts);
  return st;
}

/* One chunk of a pipelined host batch (rdx_staged_map): a lookup or count per query. */
typedef struct query_chunk_arg {
  rdx_context *ctx;
  const rdx_index *idx;
  rdx_key_op op;
} query_chunk_arg;

static rdx_status query_chunk(void *arg, const void *in, void *out, int64_t count) {
  const query_chunk_arg *q = (const query_chunk_arg *)arg;
  return q->idx->ops->query(q->ctx, q->idx, q->op, in, count, (uint64_t *)out, NULL);
}

/* One body for the five query calls: `in` is the queries or bounds; `a` the counts / row ids;
 * `b` the filled row ids (fills only, with a = offsets). `own_offsets`: a fill's offsets were
 * made by rdx_result_make from this batch's counts, so they need no check. */
static rdx_status run_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, rdx_array in,
                            rdx_array a, rdx_array b, int own_offsets) {
  const char *fn = op_name(op);
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_index(ctx, fn, idx));
  int range = op == RDX_KEY_RANGE_COUNT || op == RDX_KEY_RANGE_FILL;
  int fill = op == RDX_KEY_LOOKUP_FILL || op == RDX_KEY_RANGE_FILL;
  const char *in_name = range ? "bounds" : "queries";
  RDX_CHECK(rdx_array_check(ctx, fn, in_name, in));
  if (in.dtype != idx->dtype)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.dtype %s != the index's key dtype %s",
                    fn, in_name, in.dtype == RDX_U32 ? "u32" : in.dtype == RDX_U64 ? "u64" : "non-key",
                    idx->dtype == RDX_U32 ? "u32" : "u64");
  if (in.columns != (range ? 2 : 1))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.columns %d != %d", fn, in_name,
                    in.columns, range ? 2 : 1);
  if (range && idx->ops != NULL && !idx->ops->ranges)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "%s: kind %s answers point lookups only; build a sorted or btree index for ranges",
                    fn, rdx_kind_name(idx->kind));
  if (range && idx->ops == NULL && idx->kind == RDX_KIND_HASH)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "%s: kind hash answers point lookups only; build a sorted or btree index for ranges",
                    fn);
  int64_t n = in.count;
  uint64_t total = 0;
  rdx_array rows_out = b; /* a fill's written part, row_ids[0, offsets[n]) */
  if (fill) {
    RDX_CHECK(rdx_csr_fill_begin(ctx, fn, n, a, b, &total));
    rows_out.count = (int64_t)total;
  } else {
    RDX_CHECK(rdx_array_check_u64(ctx, fn, op == RDX_KEY_LOOKUP ? "row_ids" : "counts", a, n));
  }
  if (n == 0) return RDX_OK;
  /* a GPU answering host arrays with one answer a query: in chunks, copies beside the work */
  if (!fill && idx->ops != NULL && rdx_is_gpu(ctx) && in.where != RDX_DEVICE && a.where != RDX_DEVICE) {
    const size_t in_item = rdx_dtype_size(in.dtype) * (size_t)in.columns;
    if (rdx_staged_map_chunk(ctx, n, in_item, 8) > 0) {
      query_chunk_arg qa = {ctx, idx, op};
      return rdx_staged_map(ctx, fn, in.data, in_item, a.data, 8, n, query_chunk, &qa);
    }
  }

  rdx_status st = RDX_OK;
  rdx_staged sq = {0}, sa = {0}, sb = {0};
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, in, 1, &sq), st, done);
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, a, fill, &sa), st, done); /* offsets are inputs */
  uint64_t *out = (uint64_t *)sa.data;
  if (fill && !own_offsets) RDX_CHECK_GOTO(check_offsets(ctx, fn, idx, op, sq.data, n, out), st, done);
  if (fill && total == 0) goto done; /* nothing to write */
  if (fill) RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, rows_out, 0, &sb), st, done);
  if (idx->ops == NULL) { /* empty index */
    if (!fill) st = rdx_fill_u64(ctx, out, n, op == RDX_KEY_LOOKUP);
  } else {
    const rdx_key_ops *ops = idx->ops;
    st = ops->query(ctx, idx, op, sq.data, n, out, fill ? (uint64_t *)sb.data : NULL);
    if (st == RDX_OK && op == RDX_KEY_RANGE_FILL && !ops->range_fill_sorted)
      st = rdx_csr_sort(ctx, out, n, (uint64_t *)sb.data);
  }
  if (st != RDX_OK) goto done;
  if (fill) {
    st = rdx_array_unstage(ctx, rows_out, &sb);
  } else {
    st = rdx_array_unstage(ctx, a, &sa);
  }
  if (st == RDX_OK && rdx_is_gpu(ctx)) st = rdx_cuda_sync(ctx, fn);
done:
  rdx_array_release(ctx, &sq);
  rdx_array_release(ctx, &sa);
  rdx_array_release(ctx, &sb);
  return st;
}

rdx_status rdx_index_lookup(rdx_context *ctx, const rdx_index *idx, rdx_array queries,
                            rdx_array row_ids) {
  return run_query(ctx, idx, RDX_KEY_LOOKUP, queries, row_ids, rdx_no_array(), 0);
}
rdx_status rdx_index_lookup_count(rdx_context *ctx, const rdx_index *idx, rdx_array queries,
                                  rdx_array counts) {
  return run_query(ctx, idx, RDX_KEY_LOOKUP_COUNT, queries, counts, rdx_no_array(), 0);
}
rdx_status rdx_index_lookup_fill(rdx_context *ctx, const rdx_index *idx, rdx_array queries,
                                 rdx_array offsets, rdx_array row_ids) {
  return run_query(ctx, idx, RDX_KEY_LOOKUP_FILL, queries, offsets, row_ids, 0);
}
rdx_status rdx_index_range_count(rdx_context *ctx, const rdx_index *idx, rdx_array bounds,
                                 rdx_array counts) {
  return run_query(ctx, idx, RDX_KEY_RANGE_COUNT, bounds, counts, rdx_no_array(), 0);
}
rdx_status rdx_index_range_fill(rdx_context *ctx, const rdx_index *idx, rdx_array bounds,
                                rdx_array offsets, rdx_array row_ids) {
  return run_query(ctx, idx, RDX_KEY_RANGE_FILL, bounds, offsets, row_ids, 0);
}

/* ---- convenience: count, scan, allocate, fill (core/result.c) ---- */

typedef struct alloc_arg {
  rdx_context *ctx;
  const rdx_index *idx;
  rdx_array in;
  int range;
} alloc_arg;

static rdx_status alloc_count(void *arg, rdx_array counts) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return a->range ? rdx_index_range_count(a->ctx, a->idx, a->in, counts)
                  : rdx_index_lookup_count(a->ctx, a->idx, a->in, counts);
}
static rdx_status alloc_fill(void *arg, rdx_array offsets, rdx_array rows) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return run_query(a->ctx, a->idx, a->range ? RDX_KEY_RANGE_FILL : RDX_KEY_LOOKUP_FILL, a->in, offsets, rows, 1);
}

static rdx_status run_alloc(rdx_context *ctx, const rdx_index *idx, rdx_array in, int range,
                            rdx_result **out) {
  const char *fn = range ? "rdx_index_range_alloc" : "rdx_index_lookup_alloc";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  RDX_CHECK(check_index(ctx, fn, idx));
  RDX_CHECK(rdx_array_check(ctx, fn, range ? "bounds" : "queries", in));
  alloc_arg a = {ctx, idx, in, range};
  return rdx_result_make(ctx, fn, in.count, in.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, alloc_count,
                         alloc_fill, &a, out);
}

rdx_status rdx_index_lookup_alloc(rdx_context *ctx, const rdx_index *idx, rdx_array queries,
                                  rdx_result **out) {
  return run_alloc(ctx, idx, queries, 0, out);
}
rdx_status rdx_index_range_alloc(rdx_context *ctx, const rdx_index *idx, rdx_array bounds,
                                 rdx_result **out) {
  return run_alloc(ctx, idx, bounds, 1, out);
}

/* ---- batch updates ---- */

uint64_t rdx_index_next_row(const rdx_index *idx) {
  return idx != NULL && idx->magic == RDX_INDEX_MAGIC ? idx->next_row : 0;
}

rdx_status rdx_update_options_get(rdx_context *ctx, const char *fn, const rdx_update_options *opts,
                                  rdx_update_options *o) {
  rdx_update_options d = RDX_UPDATE_OPTIONS_INIT;
  *o = d;
  if (opts == NULL) return RDX_OK;
  if (opts->size < sizeof(size_t) || opts->size > (1u << 16))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn, opts->size);
  memcpy(o, opts, opts->size < sizeof *o ? opts->size : sizeof *o);
  o->size = sizeof *o;
  if (o->flags & ~RDX_UPDATE_REBUILD)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->flags 0x%x has unknown bits (0x%x)", fn,
                    (unsigned)o->flags, (unsigned)(o->flags & ~RDX_UPDATE_REBUILD));
  return RDX_OK;
}

static rdx_status check_update_keys(rdx_context *ctx, const char *fn, const rdx_index *idx, rdx_array keys) {
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if (keys.dtype != idx->dtype || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: keys must be 1-D of the index's key dtype %s (dtype 0x%x, columns %d)", fn,
                    idx->dtype == RDX_U32 ? "u32" : "u64", (unsigned)keys.dtype, keys.columns);
  return RDX_OK;
}

/* The batch goes in place through the kind's ops, or through a rebuild (rx and cgrx, asked for
 * with RDX_UPDATE_REBUILD). The byte counts follow what the update holds afterwards. */
static rdx_status apply(rdx_context *ctx, const char *fn, rdx_index *idx, const rdx_update_options *o,
                        const rdx_key_input *ins, const void *erase, int64_t m_erase, int64_t *n_erased) {
  const rdx_key_ops *ops = idx->ops;
  const int in_place = ins ? ops->insert != NULL : ops->erase != NULL;
  if (!in_place && !(o->flags & RDX_UPDATE_REBUILD))
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "%s: kind %s is not updated in place (its BVH would have to be rebuilt): pass "
                    "RDX_UPDATE_REBUILD to rebuild it with the batch, or build a cgrxu index",
                    fn, rdx_kind_name(idx->kind));
  int64_t base = ctx->in_use;
  rdx_status st;
  if (!in_place) st = rdx_keys_rebuild(ctx, idx, ins, erase, m_erase, n_erased);
  else if (ins) st = ops->insert(ctx, idx, ins);
  else st = ops->erase(ctx, idx, erase, m_erase, n_erased);
  if (st == RDX_OK) {
    idx->resident += ctx->in_use - base;
    if (idx->resident > idx->peak) idx->peak = idx->resident;
  }
  return st;
}

rdx_status rdx_index_insert(rdx_context *ctx, rdx_index *idx, rdx_array keys, rdx_array row_ids,
                            const rdx_update_options *opts) {
  static const char fn[] = "rdx_index_insert";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_index(ctx, fn, idx));
  rdx_update_options o;
  RDX_CHECK(rdx_update_options_get(ctx, fn, opts, &o));
  RDX_CHECK(check_update_keys(ctx, fn, idx, keys));
  const int have_rows = row_ids.data != NULL;
  if (have_rows) {
    RDX_CHECK(rdx_array_check(ctx, fn, "row_ids", row_ids));
    if (!is_key_dtype(row_ids.dtype) || row_ids.columns != 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids must be 1-D u32 or u64 (dtype 0x%x, columns %d)", fn,
                      (unsigned)row_ids.dtype, row_ids.columns);
    if (row_ids.count != keys.count)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids.count %lld != keys.count %lld", fn,
                      (long long)row_ids.count, (long long)keys.count);
    RDX_CHECK(check_row_ids(ctx, fn, row_ids));
  } else if (keys.count > 0 && (uint64_t)keys.count > RDX_MISS - idx->next_row) {
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: implied row ids from %llu for %lld keys would reach 2^64-1, the miss marker", fn,
                    (unsigned long long)idx->next_row, (long long)keys.count);
  }
  if (keys.count == 0) return RDX_OK;
  if (idx->n > INT64_MAX / 2 - keys.count)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld keys more would pass 2^62", fn, (long long)keys.count);
  rdx_status st;
  rdx_staged sk = {0}, sr = {0};
  RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_index_insert: staging keys", keys, 1, &sk), st, done);
  if (have_rows) RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_index_insert: staging row_ids", row_ids, 1, &sr), st, done);
  rdx_key_input in;
  in.keys = sk.data;
  in.rows = have_rows ? sr.data : NULL;
  in.n = keys.count;
  in.key_dtype = keys.dtype;
  in.row_dtype = have_rows ? row_ids.dtype : RDX_U64;
  in.opts = idx->opts;
  in.first_row = idx->next_row;
  if (idx->ops == NULL) { /* an empty index: the batch is its build */
    const rdx_key_ops *ops = rdx_keys_find_ops(idx->kind, ctx->backend);
    if (ops == NULL) {
      st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind %s is not available on backend %s", fn, rdx_kind_name(idx->kind),
                    rdx_backend_name(ctx->backend));
      goto done;
    }
    int64_t base = ctx->in_use;
    idx->ops = ops;
    st = ops->build(ctx, idx, &in);
    if (st != RDX_OK) {
      idx->ops = NULL;
      goto done;
    }
    idx->resident = ctx->in_use - base;
    if (idx->resident > idx->peak) idx->peak = idx->resident;
  } else {
    RDX_CHECK_GOTO(apply(ctx, fn, idx, &o, &in, NULL, 0, NULL), st, done);
  }
  idx->n += keys.count;
  idx->next_row += (uint64_t)keys.count;
  if (rdx_is_gpu(ctx)) st = rdx_cuda_sync(ctx, fn);
done:
  rdx_array_release(ctx, &sk);
  rdx_array_release(ctx, &sr);
  return st;
}

rdx_status rdx_index_erase(rdx_context *ctx, rdx_index *idx, rdx_array keys, const rdx_update_options *opts,
                           int64_t *n_erased) {
  static const char fn[] = "rdx_index_erase";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_index(ctx, fn, idx));
  rdx_update_options o;
  RDX_CHECK(rdx_update_options_get(ctx, fn, opts, &o));
  RDX_CHECK(check_update_keys(ctx, fn, idx, keys));
  if (n_erased) *n_erased = 0;
  if (keys.count == 0 || idx->ops == NULL) return RDX_OK;
  rdx_status st;
  rdx_staged sk = {0};
  int64_t gone = 0;
  RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_index_erase: staging keys", keys, 1, &sk), st, done);
  RDX_CHECK_GOTO(apply(ctx, fn, idx, &o, NULL, sk.data, keys.count, &gone), st, done);
  idx->n -= gone;
  if (idx->n == 0) { /* empty: an index without state answers every lookup with a miss */
    idx->ops->destroy(ctx, idx);
    idx->ops = NULL;
    idx->impl = NULL;
    idx->resident = 0;
  }
  if (n_erased) *n_erased = gone;
  if (rdx_is_gpu(ctx)) st = rdx_cuda_sync(ctx, fn);
done:
  rdx_array_release(ctx, &sk);
  return st;
}
