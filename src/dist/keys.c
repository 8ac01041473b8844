/*
 * keys.c: sharded key indexes over a communicator (rdx_dist_index_*): one logical key index whose
 * (key, row) pairs are spread over the ranks, each rank's shard an ordinary rdx_index of its own
 * context, so every kind and backend serves as a shard unchanged.
 *
 * Partitioning (raydex.h): hash by a mix of the key, every other kind by splitters chosen from a
 * stratified sample (split.c, shared with points.c). Both put every copy of a key on one shard, so a shard's
 * answer for a key is the whole answer: lookups and counts need no merging, and a range's pieces
 * (one per shard its interval meets) hold disjoint rows, merged by sorting each query's rows.
 *
 * A call is a series of local phases, each ended by an agreement (rdx_comm_agree), and the
 * collectives between them; outputs are written only after the last agreement, so a failure on
 * any rank fails the call on every rank with one sentence and nothing built or written. Over GPU
 * ranks whose transport moves device memory, builds, point lookups, counts and range counts stay
 * on the GPUs (gpu.cu: a partition by shard on each GPU, device all-to-alls); everything else
 * (and all of it on CPU ranks, or forced by rdx_dist_force_host) exchanges host memory, device
 * inputs read to the host first and answers copied back. The path is chosen from the gathered
 * descriptors, so every rank takes the same one.
 * Tuned for: batches of 10^5..10^9 keys a rank, where the exchanges and the shards' own work
 * dominate and the O(ranks) bookkeeping does not.
 */
#include "dist/dist.h"
#include "dist/route_hd.h"
#include "keys/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rdx_dist_index {
  uint32_t magic;        /* RDX_DIST_INDEX_MAGIC while alive */
  rdx_comm *comm;        /* the group it was built over; borrowed */
  rdx_index *shard;      /* this rank's pairs, in comm->ctx; owned */
  rdx_kind kind;
  rdx_dtype dtype;       /* RDX_U32 or RDX_U64 */
  int hashed;            /* 1: shard by hash (RDX_KIND_HASH); 0: by splitters */
  int64_t n_total;       /* keys over every shard */
  int64_t id;            /* the communicator's serial of this build, equal on every rank */
  uint64_t next_row;     /* the first implied row of the next insert, equal on every rank: the
                            build's key count, grown by every insert's total (rdx_index_next_row) */
  rdx_build_options opts;/* the build's options, defaults applied: each rebuilt shard's */
  uint64_t *splitters;   /* size - 1 ascending keys, host memory through the account: shard p
                            holds the keys k with splitters[p-1] < k <= splitters[p] (the first
                            and last open-ended); NULL when hashed */
  int on_gpus;           /* 1: the build took the device path (gpu.cu); the same on every rank */
};

/* The calls, as the descriptor names them: ranks in different calls are told apart. */
typedef enum dist_op {
  OP_BUILD = 1,
  OP_LOOKUP,
  OP_LOOKUP_COUNT,
  OP_LOOKUP_ALLOC,
  OP_RANGE_COUNT,
  OP_RANGE_ALLOC,
  OP_INSERT,
  OP_ERASE
} dist_op;

static const char *op_name(dist_op op) {
  switch (op) {
    case OP_BUILD: return "rdx_dist_index_build";
    case OP_LOOKUP: return "rdx_dist_index_lookup";
    case OP_LOOKUP_COUNT: return "rdx_dist_index_lookup_count";
    case OP_LOOKUP_ALLOC: return "rdx_dist_index_lookup_alloc";
    case OP_RANGE_COUNT: return "rdx_dist_index_range_count";
    case OP_RANGE_ALLOC: return "rdx_dist_index_range_alloc";
    case OP_INSERT: return "rdx_dist_index_insert";
    case OP_ERASE: return "rdx_dist_index_erase";
  }
  return "?";
}

/* What a rank brings to a call, gathered from every rank and compared with rank 0's, so that
 * arguments that must agree are refused on every rank alike. Plain fixed-width fields, zeroed
 * first: ranks of one job share their ABI. */
typedef struct desc {
  int32_t op;          /* dist_op */
  int32_t dtype;       /* key or query dtype */
  int32_t kind;        /* build: the kind (defaults applied); queries: the index's */
  int32_t have_rows;   /* build, insert: row ids given */
  int32_t row_dtype;   /* build, insert: their dtype, 0 when implied */
  int32_t bucket_size, flags, node_bytes; /* build options; insert, erase: flags = the update's */
  int32_t gpu;         /* builds, point lookups, counts and range counts: this rank can work on
                          its GPU (not compared; the device path is taken when every rank can) */
  double load_factor;
  int64_t index_id;    /* queries: the index's serial */
  int64_t count;       /* this rank's keys or queries (not compared) */
} desc;

/* The first field any rank holds otherwise than rank 0, as one sentence every rank writes alike. */
static rdx_status compare(rdx_comm *comm, const char *fn, const desc *all) {
  const desc *a = &all[0];
  for (int r = 1; r < comm->size; r++) {
    const desc *b = &all[r];
    char what[160] = "";
    if (b->op != a->op)
      snprintf(what, sizeof what, "the call (rank 0 %s, rank %d %s)", op_name((dist_op)a->op), r, op_name((dist_op)b->op));
    else if (b->index_id != a->index_id)
      snprintf(what, sizeof what, "the index (rank 0 passed its index %lld, rank %d its index %lld)",
               (long long)a->index_id, r, (long long)b->index_id);
    else if (b->dtype != a->dtype)
      snprintf(what, sizeof what, "the %s dtype (rank 0 %s, rank %d %s)",
               a->op == OP_BUILD || a->op == OP_INSERT || a->op == OP_ERASE ? "key" : "queries'",
               rdx_dist_dtype_name(a->dtype), r, rdx_dist_dtype_name(b->dtype));
    else if (b->kind != a->kind)
      snprintf(what, sizeof what, "the kind (rank 0 %s, rank %d %s)", rdx_kind_name((rdx_kind)a->kind), r,
               rdx_kind_name((rdx_kind)b->kind) ? rdx_kind_name((rdx_kind)b->kind) : "?");
    else if (b->have_rows != a->have_rows)
      snprintf(what, sizeof what, "whether row ids are given (rank 0 %s, rank %d %s)", a->have_rows ? "yes" : "no", r,
               b->have_rows ? "yes" : "no");
    else if (b->row_dtype != a->row_dtype)
      snprintf(what, sizeof what, "the row ids' dtype (rank 0 %s, rank %d %s)", rdx_dist_dtype_name(a->row_dtype), r,
               rdx_dist_dtype_name(b->row_dtype));
    else if (a->op != OP_BUILD && b->flags != a->flags)
      snprintf(what, sizeof what, "the update options' flags (rank 0 0x%x, rank %d 0x%x)", (unsigned)a->flags, r,
               (unsigned)b->flags);
    else if (b->bucket_size != a->bucket_size || b->flags != a->flags || b->node_bytes != a->node_bytes ||
             b->load_factor != a->load_factor)
      snprintf(what, sizeof what,
               "the build options (rank 0 bucket_size %d, flags 0x%x, load_factor %g, node_bytes %d; rank %d %d, 0x%x, %g, %d)",
               a->bucket_size, (unsigned)a->flags, a->load_factor, a->node_bytes, r, b->bucket_size, (unsigned)b->flags,
               b->load_factor, b->node_bytes);
    if (what[0]) return rdx_fail(comm->ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the ranks disagree on %s", fn, what);
  }
  return RDX_OK;
}

/* Gather every rank's descriptor and compare them. */
static rdx_status gather_and_compare(rdx_comm *comm, const char *fn, const desc *mine, desc *all) {
  RDX_CHECK(comm->ops->allgather(comm, mine, all, sizeof *mine));
  return compare(comm, fn, all);
}

/* ---- helpers ---- */

static uint64_t get_key(const void *p, rdx_dtype dtype, int64_t i) {
  return dtype == RDX_U32 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}
static void put_key(void *p, rdx_dtype dtype, int64_t i, uint64_t v) {
  if (dtype == RDX_U32) ((uint32_t *)p)[i] = (uint32_t)v;
  else ((uint64_t *)p)[i] = v;
}

/* a's count x columns values (u32 or u64) as host u64, read from the device where they live
 * there; *out through the account. */
static rdx_status to_host_u64(rdx_context *ctx, const char *fn, rdx_array a, uint64_t **out) {
  const int64_t n = a.count * a.columns;
  const size_t es = rdx_dtype_size(a.dtype);
  *out = NULL;
  RDX_CHECK(rdx_dist_take(ctx, fn, out, n, 8));
  if (n == 0) return RDX_OK;
  const void *src = a.data;
  void *raw = NULL;
  rdx_status st = RDX_OK;
  if (a.where == RDX_DEVICE) {
    RDX_CHECK_GOTO(rdx_dist_take(ctx, fn, &raw, n, es), st, fail);
    RDX_CHECK_GOTO(rdx_copy(ctx, raw, RDX_HOST, a.data, RDX_DEVICE, (size_t)n * es), st, fail);
    src = raw;
  }
  for (int64_t i = 0; i < n; i++) (*out)[i] = get_key(src, a.dtype, i);
  rdx_mem_free(ctx, raw);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, raw);
  rdx_mem_free(ctx, *out);
  *out = NULL;
  return st;
}

/* The shard that holds key k (route_hd.h, which the device path shares). */
static int shard_of(const rdx_dist_index *d, int size, uint64_t k) {
  return rdx_dist_shard_of(d->hashed, size, d->splitters, k);
}

static rdx_status check_dist_index(rdx_comm *comm, const char *fn, const rdx_dist_index *d) {
  if (d == NULL) return rdx_fail(comm->ctx, RDX_ERR_INVALID_ARGUMENT, "%s: idx is NULL", fn);
  if (d->magic != RDX_DIST_INDEX_MAGIC)
    return rdx_fail(comm->ctx, RDX_ERR_MISUSE, "%s: idx %p is not a distributed index", fn, (const void *)d);
  if (d->comm != comm)
    return rdx_fail(comm->ctx, RDX_ERR_MISUSE, "%s: idx %p was built over another communicator", fn, (const void *)d);
  return RDX_OK;
}

/* ---- build ---- */

/* The checks rdx_index_build makes before any work, made here so that a bad argument on one rank
 * is found before anything moves, with the defaults applied so ranks compare like with like. */
static rdx_status check_build(rdx_context *ctx, const char *fn, rdx_array keys, rdx_array rows,
                              const rdx_build_options *opts, rdx_dist_index **out, rdx_build_options *o) {
  rdx_build_options dflt = RDX_BUILD_OPTIONS_INIT;
  *o = dflt;
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (opts != NULL) {
    if (opts->size < sizeof(size_t) + sizeof(rdx_kind) || opts->size > (1u << 16))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn, opts->size);
    memcpy(o, opts, opts->size < sizeof *o ? opts->size : sizeof *o);
    o->size = sizeof *o;
  }
  if (o->kind == 0) o->kind = RDX_KIND_SORTED;
  if (rdx_kind_name(o->kind) == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->kind 0x%x is not an rdx_kind", fn, (unsigned)o->kind);
  if (o->bucket_size == 0) o->bucket_size = 32;
  if (o->node_bytes == 0) o->node_bytes = 128;
  if (o->load_factor == 0.0) o->load_factor = 0.5;
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if ((keys.dtype != RDX_U32 && keys.dtype != RDX_U64) || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                    rdx_dist_dtype_name(keys.dtype), keys.columns);
  if (rows.data != NULL) {
    RDX_CHECK(rdx_array_check(ctx, fn, "row_ids", rows));
    if ((rows.dtype != RDX_U32 && rows.dtype != RDX_U64) || rows.columns != 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                      rdx_dist_dtype_name(rows.dtype), rows.columns);
    if (rows.count != keys.count)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids.count %lld != keys.count %lld", fn,
                      (long long)rows.count, (long long)keys.count);
  }
  return RDX_OK;
}

/* Collective: this rank's n pairs (host: k64 keys, r64 rows) to the shards that hold their keys,
 * as lookups route keys; *recv_keys (the index's key dtype) and *recv_rows (u64) receive this
 * rank's *m pairs, in rank order, through the account. counts: 3 x size scratch. Agreed, but for
 * a failed transport (returned as it is); on failure *recv_keys and *recv_rows are freed. */
static rdx_status route_pairs(rdx_comm *comm, const char *fn, const rdx_dist_index *d, const uint64_t *k64,
                              const uint64_t *r64, int64_t n, int64_t *counts, void **recv_keys, uint64_t **recv_rows,
                              int64_t *m) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  const size_t es = rdx_dtype_size(d->dtype);
  int64_t *send = counts, *recv = counts + size, *cursor = counts + 2 * size;
  uint64_t *send_rows = NULL;
  void *send_keys = NULL;
  *recv_keys = NULL;
  *recv_rows = NULL;
  *m = 0;
  for (int p = 0; p < size; p++) send[p] = 0;
  for (int64_t i = 0; i < n; i++) send[shard_of(d, size, k64[i])]++;
  rdx_dist_scan(send, size, cursor);
  rdx_status st = rdx_dist_take(ctx, fn, &send_keys, n, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send_rows, n, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) {
      int64_t at = cursor[shard_of(d, size, k64[i])]++;
      put_key(send_keys, d->dtype, at, k64[i]);
      send_rows[at] = r64[i];
    }
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
  for (int p = 0; p < size; p++) *m += recv[p];
  st = rdx_dist_take(ctx, fn, recv_keys, *m, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, recv_rows, *m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_keys, send, *recv_keys, recv, es), st, done);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_rows, send, *recv_rows, recv, 8), st, done);
done:
  rdx_mem_free(ctx, send_keys);
  rdx_mem_free(ctx, send_rows);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *recv_keys), *recv_keys = NULL;
    rdx_mem_free(ctx, *recv_rows), *recv_rows = NULL;
  }
  return st;
}

rdx_status rdx_dist_index_build(rdx_comm *comm, rdx_array keys, rdx_array row_ids, const rdx_build_options *opts,
                                rdx_dist_index **out) {
  static const char fn[] = "rdx_dist_index_build";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  if (out != NULL) *out = NULL;
  rdx_build_options o;
  desc me, *all = NULL;
  memset(&me, 0, sizeof me);
  int64_t *counts = NULL; /* send, receive, cursor: size each */
  uint64_t *k64 = NULL, *r64 = NULL, *recv_rows = NULL;
  void *recv_keys = NULL;
  rdx_dist_index *d = NULL;
  rdx_index *shard = NULL;
  const int64_t n = keys.count;

  /* 1. this rank's arguments */
  rdx_status st = check_build(ctx, fn, keys, row_ids, opts, out, &o);
  const int have_rows = row_ids.data != NULL;
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &counts, 3 * (int64_t)size, 8);
  if (st == RDX_OK && (d = (rdx_dist_index *)calloc(1, sizeof *d)) == NULL)
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the handle", fn);
  if (st == RDX_OK && o.kind != RDX_KIND_HASH) st = rdx_dist_take(ctx, fn, &d->splitters, size - 1, 8);
  RDX_DIST_AGREE(st);

  /* 2. every rank's call, dtype, kind and options, compared; the path */
  me.op = OP_BUILD;
  me.dtype = keys.dtype;
  me.kind = o.kind;
  me.have_rows = have_rows;
  me.row_dtype = have_rows ? row_ids.dtype : 0;
  me.bucket_size = o.bucket_size;
  me.flags = o.flags;
  me.node_bytes = o.node_bytes;
  me.load_factor = o.load_factor;
  me.count = n;
  me.gpu = rdx_dist_gpu_capable(comm, RDX_DIST_GPU_MAX_RANKS);
  RDX_CHECK_GOTO(gather_and_compare(comm, fn, &me, all), st, done);
  int gpu = 1;
  for (int r = 0; r < size; r++) gpu &= all[r].gpu != 0;
  d->comm = comm;
  d->kind = o.kind;
  d->dtype = keys.dtype;
  d->hashed = o.kind == RDX_KIND_HASH;
  d->on_gpus = gpu;
  int64_t *send = counts, *cursor = counts + 2 * size; /* route_pairs reuses all three */
  for (int r = 0; r < size; r++) send[r] = all[r].count; /* the ranks' keys, until step 5 */
  d->n_total = rdx_dist_scan(send, size, cursor);
  const int64_t offset = cursor[comm->rank];

  /* 3. no row may be the miss marker, wherever the rows are */
  if (have_rows && row_ids.dtype == RDX_U64) {
    int64_t first = -1;
    st = rdx_find_u64(ctx, (const uint64_t *)row_ids.data, n, row_ids.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST,
                      RDX_MISS, &first);
    if (st == RDX_OK && first >= 0)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: row_ids[%lld] is 2^64-1, the miss marker RDX_MISS, which no row may have", fn, (long long)first);
  }
  RDX_DIST_AGREE(st);

  if (gpu) {
    /* 4, 5 on the GPUs: splitters, the pairs to their shards, the shard (agreed within) */
    RDX_CHECK_GOTO(rdx_dist_gpu_build(comm, fn, keys, row_ids, send, d->hashed, d->splitters, &o, &shard), st, done);
  } else {
    /* 4. the arguments on the host; splitters (range kinds on several ranks) */
    ctx->dist_exchange_ms = 0;
    st = to_host_u64(ctx, fn, keys, &k64);
    if (st == RDX_OK) st = have_rows ? to_host_u64(ctx, fn, row_ids, &r64) : rdx_dist_take(ctx, fn, &r64, n, 8);
    /* implied rows: positions in the ranks' inputs concatenated in rank order */
    if (st == RDX_OK && !have_rows)
      for (int64_t i = 0; i < n; i++) r64[i] = (uint64_t)(offset + i);
    RDX_DIST_AGREE(st);
    if (!d->hashed && size > 1) RDX_CHECK_GOTO(rdx_dist_splitters(comm, fn, send, k64, n, d->splitters), st, done);

    /* 5. the pairs to their shards */
    int64_t m = 0;
    RDX_CHECK_GOTO(route_pairs(comm, fn, d, k64, r64, n, counts, &recv_keys, &recv_rows, &m), st, done);
    /* the inputs' copies go before the shard is built, so its peak is what it needs */
    rdx_mem_free(ctx, k64), k64 = NULL;
    rdx_mem_free(ctx, r64), r64 = NULL;

    /* 6. each rank's shard, an ordinary index of its context */
    st = rdx_index_build(ctx, rdx_host_array(recv_keys, m, keys.dtype), rdx_host_array(recv_rows, m, RDX_U64), &o, &shard);
    RDX_DIST_AGREE(st);
  }
  d->shard = shard;
  shard = NULL;
  d->id = comm->next_index_id++; /* every rank gets here, or none: the serials stay equal */
  d->next_row = (uint64_t)d->n_total;
  d->opts = o;
  d->magic = RDX_DIST_INDEX_MAGIC;
  comm->n_live_indexes++;
  *out = d;
  d = NULL;
done:
  rdx_index_destroy(shard);
  if (d != NULL) {
    rdx_mem_free(ctx, d->splitters);
    free(d);
  }
  rdx_mem_free(ctx, recv_keys);
  rdx_mem_free(ctx, recv_rows);
  rdx_mem_free(ctx, k64);
  rdx_mem_free(ctx, r64);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, counts);
  return st;
}

void rdx_dist_index_destroy(rdx_dist_index *idx) {
  if (idx == NULL || idx->magic != RDX_DIST_INDEX_MAGIC) return;
  rdx_context *ctx = idx->comm->ctx;
  rdx_index_destroy(idx->shard);
  rdx_mem_free(ctx, idx->splitters);
  idx->comm->n_live_indexes--;
  idx->magic = 0;
  free(idx);
}

int64_t rdx_dist_index_count(const rdx_dist_index *idx) {
  return idx != NULL && idx->magic == RDX_DIST_INDEX_MAGIC ? idx->n_total : 0;
}
const rdx_index *rdx_dist_index_shard(const rdx_dist_index *idx) {
  return idx != NULL && idx->magic == RDX_DIST_INDEX_MAGIC ? idx->shard : NULL;
}
int rdx_dist_index_built_on_gpus(const rdx_dist_index *idx) {
  return idx != NULL && idx->magic == RDX_DIST_INDEX_MAGIC ? idx->on_gpus : 0;
}

/* ---- queries ---- */

/* One body for the five query calls. Each query becomes one piece per shard it needs (lookups:
 * one; a range: shard_of(lo) .. shard_of(hi); an empty range: none), sent in shard order; each
 * shard answers its pieces with the rdx_index_* call of the same name; the answers come back in
 * the order the pieces went, and are put in the caller's order (counts summed, rows merged). */
static rdx_status run_query(rdx_comm *comm, const rdx_dist_index *d, dist_op op, rdx_array in, rdx_array out_a,
                            rdx_result **out_r) {
  const char *fn = op_name(op);
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  const int range = op == OP_RANGE_COUNT || op == OP_RANGE_ALLOC;
  const int alloc = op == OP_LOOKUP_ALLOC || op == OP_RANGE_ALLOC;
  const int cols = range ? 2 : 1;
  const char *in_name = range ? "bounds" : "queries";
  if (alloc && out_r != NULL) *out_r = NULL;
  desc me, *all = NULL;
  memset(&me, 0, sizeof me);
  int64_t *counts = NULL; /* send, receive, cursor, rows sent, rows received: size each */
  uint64_t *q64 = NULL, *answers = NULL, *back = NULL, *rows_back = NULL, *answer = NULL, *rows = NULL, *filled = NULL;
  int64_t *piece_query = NULL;
  void *send_q = NULL, *recv_q = NULL;
  rdx_result *shard_res = NULL, *res = NULL;
  const int64_t n = in.count;
  rdx_dtype dtype = RDX_U64;

  /* 1. this rank's arguments */
  rdx_status st = check_dist_index(comm, fn, d);
  if (st == RDX_OK && alloc && out_r == NULL) st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (st == RDX_OK) st = rdx_array_check(ctx, fn, in_name, in);
  if (st == RDX_OK && in.dtype != d->dtype)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.dtype %s != the index's key dtype %s", fn, in_name,
                  rdx_dist_dtype_name(in.dtype), rdx_dist_dtype_name(d->dtype));
  if (st == RDX_OK && in.columns != cols)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.columns %d != %d", fn, in_name, in.columns, cols);
  if (st == RDX_OK && !alloc)
    st = rdx_array_check_u64(ctx, fn, op == OP_LOOKUP ? "row_ids" : "counts", out_a, n);
  if (st == RDX_OK && range && d->hashed)
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind hash answers point lookups only; build a sorted or btree index for ranges",
                  fn);
  if (st == RDX_OK) {
    dtype = d->dtype;
    /* the host path reads the queries at step 3, once the path is agreed */
  }
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &counts, 5 * (int64_t)size, 8);
  RDX_DIST_AGREE(st);

  /* 2. the same call on the same index everywhere */
  me.op = op;
  me.dtype = in.dtype;
  me.kind = d->kind;
  me.index_id = d->id;
  me.count = n;
  /* point lookups, counts and range counts stay on the GPUs (gpu.cu) when every rank's context is
   * a GPU's and the transport moves device memory: the path is the minimum of the ranks' word */
  me.gpu = (op == OP_LOOKUP || op == OP_LOOKUP_COUNT || op == OP_RANGE_COUNT) &&
           rdx_dist_gpu_capable(comm, RDX_DIST_GPU_MAX_RANKS) && n < ((int64_t)1 << 32);
  RDX_CHECK_GOTO(gather_and_compare(comm, fn, &me, all), st, done);
  int gpu = 1;
  for (int r = 0; r < size; r++) gpu &= all[r].gpu != 0;
  if (gpu) {
    const int what = op == OP_LOOKUP ? RDX_DIST_GPU_LOOKUP : op == OP_LOOKUP_COUNT ? RDX_DIST_GPU_COUNT
                                                                                    : RDX_DIST_GPU_RANGE_COUNT;
    st = rdx_dist_gpu_query(comm, fn, d->shard, d->hashed, d->splitters, what, in, out_a);
    goto done;
  }
  ctx->dist_exchange_ms = 0;

  /* 3. pieces, grouped by shard */
  int64_t *send = counts, *recv = counts + size, *cursor = counts + 2 * size, *rsend = counts + 3 * size,
          *rrecv = counts + 4 * size;
  const size_t es = rdx_dtype_size(dtype);
  for (int p = 0; p < size; p++) send[p] = 0;
  st = to_host_u64(ctx, fn, in, &q64);
  for (int64_t i = 0; st == RDX_OK && i < n; i++) {
    uint64_t lo = q64[i * cols], hi = q64[i * cols + cols - 1];
    if (lo > hi) continue;
    for (int p = shard_of(d, size, lo), last = shard_of(d, size, hi); p <= last; p++) send[p]++;
  }
  const int64_t n_pieces = rdx_dist_scan(send, size, cursor);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send_q, n_pieces * cols, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &piece_query, n_pieces, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &back, n_pieces, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) {
      uint64_t lo = q64[i * cols], hi = q64[i * cols + cols - 1];
      if (lo > hi) continue;
      for (int p = shard_of(d, size, lo), last = shard_of(d, size, hi); p <= last; p++) {
        int64_t at = cursor[p]++;
        for (int c = 0; c < cols; c++) put_key(send_q, dtype, at * cols + c, q64[i * cols + c]);
        piece_query[at] = i;
      }
    }
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
  int64_t m = 0;
  for (int p = 0; p < size; p++) m += recv[p];
  st = rdx_dist_take(ctx, fn, &recv_q, m * cols, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &answers, m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_q, send, recv_q, recv, es * (size_t)cols), st, done);

  /* 4. each shard answers the pieces it got */
  rdx_array rq = range ? rdx_host_matrix(recv_q, m, 2, dtype) : rdx_host_array(recv_q, m, dtype);
  rdx_array ra = rdx_host_array(answers, m, RDX_U64);
  switch (op) {
    case OP_LOOKUP: st = rdx_index_lookup(ctx, d->shard, rq, ra); break;
    case OP_LOOKUP_COUNT: st = rdx_index_lookup_count(ctx, d->shard, rq, ra); break;
    case OP_RANGE_COUNT: st = rdx_index_range_count(ctx, d->shard, rq, ra); break;
    case OP_LOOKUP_ALLOC: st = rdx_index_lookup_alloc(ctx, d->shard, rq, &shard_res); break;
    case OP_RANGE_ALLOC: st = rdx_index_range_alloc(ctx, d->shard, rq, &shard_res); break;
    case OP_BUILD:
    case OP_INSERT:
    case OP_ERASE: st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a build or an update is not a query", fn); break;
  }
  if (st == RDX_OK && alloc)
    for (int64_t j = 0; j < m; j++) answers[j] = shard_res->offsets[j + 1] - shard_res->offsets[j];
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &answer, n, 8);
  RDX_DIST_AGREE(st);
  /* one answer a piece, back the way it came */
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, answers, recv, back, send, 8), st, done);
  uint64_t total = 0;
  if (alloc) {
    for (int p = 0, j = 0; p < size; p++) {
      rsend[p] = 0;
      for (int64_t k = 0; k < recv[p]; k++) rsend[p] += (int64_t)answers[j++];
    }
    for (int p = 0, j = 0; p < size; p++) {
      rrecv[p] = 0;
      for (int64_t k = 0; k < send[p]; k++) rrecv[p] += (int64_t)back[j++];
      total += (uint64_t)rrecv[p];
    }
    st = rdx_dist_take(ctx, fn, &rows_back, (int64_t)total, 8);
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &rows, (int64_t)total, 8);
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &filled, n, 8);
    RDX_DIST_AGREE(st);
    /* the shard's rows are in piece order, so grouped by the rank that asked */
    RDX_CHECK_GOTO(comm->ops->alltoallv(comm, shard_res->row_ids, rsend, rows_back, rrecv, 8), st, done);
  }

  /* 5. the caller's order */
  if (op == OP_LOOKUP) {
    for (int64_t j = 0; j < n_pieces; j++) answer[piece_query[j]] = back[j]; /* one piece a query */
  } else {
    for (int64_t i = 0; i < n; i++) answer[i] = 0;
    for (int64_t j = 0; j < n_pieces; j++) answer[piece_query[j]] += back[j];
  }
  if (alloc) {
    /* each query's rows at its offset: pieces in shard order, each ascending, so a query met by
     * several shards is sorted once its pieces are in */
    uint64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
      filled[i] = at;
      at += answer[i];
    }
    uint64_t from = 0;
    for (int64_t j = 0; j < n_pieces; j++) {
      int64_t i = piece_query[j];
      if (back[j]) memcpy(rows + filled[i], rows_back + from, (size_t)back[j] * 8);
      filled[i] += back[j];
      from += back[j];
    }
    if (range)
      for (int64_t i = 0, begin = 0; i < n; begin += (int64_t)answer[i], i++) {
        int sorted = 1;
        for (int64_t k = begin + 1; k < begin + (int64_t)answer[i] && sorted; k++) sorted = rows[k - 1] < rows[k];
        if (!sorted) qsort(rows + begin, (size_t)answer[i], 8, rdx_dist_cmp_u64);
      }
    st = rdx_dist_result(ctx, fn, n, in.where, answer, rows, &res);
  }
  RDX_DIST_AGREE(st);
  /* every rank has its answers: only now are the outputs written */
  if (alloc) {
    *out_r = res;
    res = NULL;
  } else if (n > 0) {
    st = rdx_copy(ctx, out_a.data, out_a.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, answer, RDX_HOST, (size_t)n * 8);
  }
done:
  rdx_result_free(ctx, res);
  rdx_result_free(ctx, shard_res);
  rdx_mem_free(ctx, q64);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, send_q);
  rdx_mem_free(ctx, recv_q);
  rdx_mem_free(ctx, piece_query);
  rdx_mem_free(ctx, answers);
  rdx_mem_free(ctx, back);
  rdx_mem_free(ctx, rows_back);
  rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, filled);
  rdx_mem_free(ctx, answer);
  return st;
}

rdx_status rdx_dist_index_lookup(rdx_comm *comm, const rdx_dist_index *idx, rdx_array queries, rdx_array row_ids) {
  return run_query(comm, idx, OP_LOOKUP, queries, row_ids, NULL);
}
rdx_status rdx_dist_index_lookup_count(rdx_comm *comm, const rdx_dist_index *idx, rdx_array queries, rdx_array counts) {
  return run_query(comm, idx, OP_LOOKUP_COUNT, queries, counts, NULL);
}
rdx_status rdx_dist_index_lookup_alloc(rdx_comm *comm, const rdx_dist_index *idx, rdx_array queries, rdx_result **out) {
  return run_query(comm, idx, OP_LOOKUP_ALLOC, queries, rdx_no_array(), out);
}
rdx_status rdx_dist_index_range_count(rdx_comm *comm, const rdx_dist_index *idx, rdx_array bounds, rdx_array counts) {
  return run_query(comm, idx, OP_RANGE_COUNT, bounds, counts, NULL);
}
rdx_status rdx_dist_index_range_alloc(rdx_comm *comm, const rdx_dist_index *idx, rdx_array bounds, rdx_result **out) {
  return run_query(comm, idx, OP_RANGE_ALLOC, bounds, rdx_no_array(), out);
}

/* ---- updates ----
 *
 * An insert or erase batch is routed as lookups are (the same hash or splitters, which stay
 * fixed), and each rank that receives part of it builds a fresh shard aside: its shard's pairs
 * (listed through the kind's entries op, read to the host) plus the pairs it received, or minus
 * the pairs of the keys it received, built with the index's options. Only after every rank has
 * agreed that its fresh shard is built does any rank swap it in (which cannot fail), so a failure
 * anywhere (memory past one rank's limit, say) leaves every shard exactly as it was. A rank that
 * receives nothing, or whose shard holds none of the erased keys, keeps its shard untouched.
 * The price is a rebuild of each touched shard per batch, and the host holding its pairs twice
 * for the while: simple and all-or-nothing on every kind and backend, where updating in place
 * and undoing on the ranks that succeeded could not be (rdx_index_erase removes every row of a
 * key, so it cannot take back an insert of a key already present, and the undo could itself
 * fail).
 */

static rdx_status check_update_keys(rdx_context *ctx, const char *fn, const rdx_dist_index *d, rdx_array keys) {
  RDX_CHECK(rdx_array_check(ctx, fn, "keys", keys));
  if (keys.dtype != d->dtype || keys.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: keys must be 1-D of the index's key dtype %s (dtype %s, columns %d)",
                    fn, rdx_dist_dtype_name(d->dtype), rdx_dist_dtype_name(keys.dtype), keys.columns);
  return RDX_OK;
}

/* The verdict of one rdx_index over every pair on a non-empty batch of `total` keys, reached alike
 * on every rank from what they all hold: rx and cgrx are not updated in place, so, as
 * rdx_index_insert and rdx_index_erase do, they take a batch only when asked to rebuild (an empty
 * index takes an insert as its build). */
static rdx_status check_rebuild(rdx_context *ctx, const char *fn, const rdx_dist_index *d, const rdx_update_options *uo) {
  if ((d->kind == RDX_KIND_RX || d->kind == RDX_KIND_CGRX) && d->n_total > 0 && !(uo->flags & RDX_UPDATE_REBUILD))
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "%s: kind %s is not updated in place (its BVH would have to be rebuilt): pass "
                    "RDX_UPDATE_REBUILD to rebuild it with the batch, or build a cgrxu index",
                    fn, rdx_kind_name(d->kind));
  return RDX_OK;
}

/* This rank's shard's pairs on the host, with room for `extra` more after them: *keys in the
 * index's key dtype, *rows u64, both through the account; *n their number. */
static rdx_status shard_pairs(rdx_context *ctx, const char *fn, const rdx_dist_index *d, int64_t extra, void **keys,
                              uint64_t **rows, int64_t *n) {
  const rdx_index *sh = d->shard;
  const int64_t n_old = sh->n;
  rdx_entries e = {NULL, 0, 0};
  void *host = NULL;
  rdx_status st = RDX_OK;
  *keys = NULL;
  *rows = NULL;
  *n = 0;
  RDX_CHECK_GOTO(rdx_dist_take(ctx, fn, keys, n_old + extra, rdx_dtype_size(d->dtype)), st, fail);
  RDX_CHECK_GOTO(rdx_dist_take(ctx, fn, rows, n_old + extra, 8), st, fail);
  if (n_old > 0) {
    if (sh->ops == NULL || sh->ops->entries == NULL) {
      st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind %s on backend %s cannot list its (key, row) pairs", fn,
                    rdx_kind_name(d->kind), rdx_backend_name(rdx_context_backend(ctx)));
      goto fail;
    }
    RDX_CHECK_GOTO(sh->ops->entries(ctx, sh, &e), st, fail);
    if (e.n != n_old || (e.width != 32 && e.width != 64)) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the shard listed %lld pairs of width %d for %lld keys", fn, (long long)e.n,
                    e.width, (long long)n_old);
      goto fail;
    }
    const void *pairs = e.pairs;
    if (rdx_is_gpu(ctx)) {
      const size_t bytes = (size_t)e.n * (size_t)(e.width / 4);
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &host, bytes, RDX_HOST), st, fail);
      RDX_CHECK_GOTO(rdx_copy(ctx, host, RDX_HOST, e.pairs, RDX_DEVICE, bytes), st, fail);
      pairs = host;
    }
    for (int64_t i = 0; i < n_old; i++) {
      const uint64_t k = e.width == 32 ? ((const rdx_pair32 *)pairs)[i].key : ((const rdx_pair64 *)pairs)[i].key;
      (*rows)[i] = e.width == 32 ? ((const rdx_pair32 *)pairs)[i].row : ((const rdx_pair64 *)pairs)[i].row;
      put_key(*keys, d->dtype, i, k);
    }
  }
  *n = n_old;
  rdx_mem_free(ctx, host);
  if (e.pairs) rdx_entries_free(ctx, &e);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, host);
  if (e.pairs) rdx_entries_free(ctx, &e);
  rdx_mem_free(ctx, *keys);
  rdx_mem_free(ctx, *rows);
  *keys = NULL;
  *rows = NULL;
  return st;
}

/* A shard of n pairs (host: keys of the index's dtype, rows u64) with the index's options. */
static rdx_status build_shard(rdx_context *ctx, const rdx_dist_index *d, const void *keys, const uint64_t *rows, int64_t n,
                              rdx_index **out) {
  return rdx_index_build(ctx, rdx_host_array(keys, n, d->dtype), rdx_host_array(rows, n, RDX_U64), &d->opts, out);
}

/* Steps 1 and 2 of both updates: this rank's arguments (keys, and rows for an insert) read to the
 * host and checked, after st (the status of the caller's own allocations), in one agreement (as
 * every call makes one before its descriptor is gathered, so ranks in different calls stay in
 * step), then every rank's descriptor gathered into all (size) and compared. */
static rdx_status update_args(rdx_comm *comm, const char *fn, rdx_status st, dist_op op, rdx_dist_index *d,
                              rdx_array keys, rdx_array row_ids, const rdx_update_options *opts, rdx_update_options *uo,
                              uint64_t **k64, uint64_t **r64, desc *all) {
  rdx_context *ctx = comm->ctx;
  const int64_t n = keys.count;
  const int have_rows = row_ids.data != NULL;
  desc me;
  memset(&me, 0, sizeof me);
  if (st == RDX_OK) st = check_dist_index(comm, fn, d);
  if (st == RDX_OK) st = rdx_update_options_get(ctx, fn, opts, uo);
  if (st == RDX_OK) st = check_update_keys(ctx, fn, d, keys);
  if (st == RDX_OK && have_rows) {
    st = rdx_array_check(ctx, fn, "row_ids", row_ids);
    if (st == RDX_OK && ((row_ids.dtype != RDX_U32 && row_ids.dtype != RDX_U64) || row_ids.columns != 1))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                    rdx_dist_dtype_name(row_ids.dtype), row_ids.columns);
    else if (st == RDX_OK && row_ids.count != n)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids.count %lld != keys.count %lld", fn, (long long)row_ids.count,
                    (long long)n);
  }
  if (st == RDX_OK) st = to_host_u64(ctx, fn, keys, k64);
  if (st == RDX_OK && op == OP_INSERT)
    st = have_rows ? to_host_u64(ctx, fn, row_ids, r64) : rdx_dist_take(ctx, fn, r64, n, 8);
  for (int64_t i = 0; st == RDX_OK && have_rows && i < n; i++)
    if ((*r64)[i] == RDX_MISS)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids[%lld] is 2^64-1, the miss marker RDX_MISS, which no row may have",
                    fn, (long long)i);
  st = rdx_comm_agree(comm, fn, st);
  if (st != RDX_OK) return st;
  me.op = op;
  me.dtype = keys.dtype;
  me.kind = d->kind;
  me.index_id = d->id;
  me.have_rows = have_rows;
  me.row_dtype = have_rows ? row_ids.dtype : 0;
  me.flags = uo->flags;
  me.count = n;
  return gather_and_compare(comm, fn, &me, all);
}

rdx_status rdx_dist_index_insert(rdx_comm *comm, rdx_dist_index *idx, rdx_array keys, rdx_array row_ids,
                                 const rdx_update_options *opts) {
  static const char fn[] = "rdx_dist_index_insert";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  rdx_dist_index *d = idx;
  rdx_update_options uo;
  desc *all = NULL;
  int64_t *counts = NULL; /* send, receive, cursor: size each */
  uint64_t *k64 = NULL, *r64 = NULL, *recv_rows = NULL, *pair_rows = NULL;
  void *recv_keys = NULL, *pair_keys = NULL;
  rdx_index *fresh = NULL;
  const int64_t n = keys.count;

  /* 1, 2. the arguments, and every rank's call, index and batch compared */
  rdx_status st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &counts, 3 * (int64_t)size, 8);
  RDX_CHECK_GOTO(update_args(comm, fn, st, OP_INSERT, d, keys, row_ids, opts, &uo, &k64, &r64, all), st, done);
  int64_t *send = counts, *cursor = counts + 2 * size; /* route_pairs reuses all three */
  for (int r = 0; r < size; r++) send[r] = all[r].count;
  const int64_t total = rdx_dist_scan(send, size, cursor), offset = cursor[comm->rank];
  /* what one rdx_index_insert of the ranks' batches concatenated would refuse: every rank alike */
  if (total == 0) goto done; /* an empty batch changes nothing */
  if (!all[0].have_rows && (uint64_t)total > RDX_MISS - d->next_row)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: implied row ids from %llu for %lld keys would reach 2^64-1, the miss marker",
                  fn, (unsigned long long)d->next_row, (long long)total);
  else if (d->n_total > INT64_MAX / 2 - total)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld keys more would pass 2^62", fn, (long long)total);
  else
    st = check_rebuild(ctx, fn, d, &uo);
  if (st != RDX_OK) goto done;
  /* implied rows: the index's counter on, over the ranks' batches concatenated in rank order */
  if (!all[0].have_rows)
    for (int64_t i = 0; i < n; i++) r64[i] = d->next_row + (uint64_t)(offset + i);

  /* 3. the pairs to their shards, routed as lookups are */
  const size_t es = rdx_dtype_size(d->dtype);
  int64_t m = 0;
  RDX_CHECK_GOTO(route_pairs(comm, fn, d, k64, r64, n, counts, &recv_keys, &recv_rows, &m), st, done);
  rdx_mem_free(ctx, k64), k64 = NULL;
  rdx_mem_free(ctx, r64), r64 = NULL;

  /* 4. a fresh shard aside where pairs arrived: the shard's pairs, then the received ones */
  if (m > 0) {
    int64_t n_old = 0;
    st = shard_pairs(ctx, fn, d, m, &pair_keys, &pair_rows, &n_old);
    if (st == RDX_OK) {
      memcpy((char *)pair_keys + (size_t)n_old * es, recv_keys, (size_t)m * es);
      memcpy(pair_rows + n_old, recv_rows, (size_t)m * 8);
      rdx_mem_free(ctx, recv_keys), recv_keys = NULL;
      rdx_mem_free(ctx, recv_rows), recv_rows = NULL;
      st = build_shard(ctx, d, pair_keys, pair_rows, n_old + m, &fresh);
    }
  }
  RDX_DIST_AGREE(st);

  /* 5. every rank has its fresh shard: swap them in (nothing here can fail) */
  if (fresh != NULL) {
    rdx_index_destroy(d->shard);
    d->shard = fresh;
    fresh = NULL;
  }
  d->n_total += total;
  d->next_row += (uint64_t)total;
done:
  rdx_index_destroy(fresh);
  rdx_mem_free(ctx, recv_keys);
  rdx_mem_free(ctx, recv_rows);
  rdx_mem_free(ctx, pair_keys);
  rdx_mem_free(ctx, pair_rows);
  rdx_mem_free(ctx, k64);
  rdx_mem_free(ctx, r64);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, counts);
  return st;
}

rdx_status rdx_dist_index_erase(rdx_comm *comm, rdx_dist_index *idx, rdx_array keys, const rdx_update_options *opts,
                                int64_t *n_erased) {
  static const char fn[] = "rdx_dist_index_erase";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  rdx_dist_index *d = idx;
  if (n_erased != NULL) *n_erased = 0;
  rdx_update_options uo;
  desc *all = NULL;
  int64_t *counts = NULL; /* send, receive, cursor: size each */
  uint64_t *k64 = NULL, *send_keys = NULL, *recv_keys = NULL, *pair_rows = NULL;
  void *pair_keys = NULL;
  rdx_index *fresh = NULL;
  const int64_t n = keys.count;

  /* 1, 2. the arguments, and every rank's call, index and batch compared */
  rdx_status st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &counts, 3 * (int64_t)size, 8);
  RDX_CHECK_GOTO(update_args(comm, fn, st, OP_ERASE, d, keys, rdx_no_array(), opts, &uo, &k64, NULL, all), st, done);
  int64_t *send = counts, *recv = counts + size, *cursor = counts + 2 * size;
  int64_t total = 0;
  for (int r = 0; r < size; r++) total += all[r].count;
  if (total == 0 || d->n_total == 0) goto done; /* nothing to erase, or nothing to erase from */
  RDX_CHECK_GOTO(check_rebuild(ctx, fn, d, &uo), st, done);

  /* 3. the keys to their shards (as u64), routed as lookups are */
  for (int p = 0; p < size; p++) send[p] = 0;
  for (int64_t i = 0; i < n; i++) send[shard_of(d, size, k64[i])]++;
  rdx_dist_scan(send, size, cursor);
  st = rdx_dist_take(ctx, fn, &send_keys, n, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) send_keys[cursor[shard_of(d, size, k64[i])]++] = k64[i];
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
  int64_t m = 0;
  for (int p = 0; p < size; p++) m += recv[p];
  st = rdx_dist_take(ctx, fn, &recv_keys, m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_keys, send, recv_keys, recv, 8), st, done);
  rdx_mem_free(ctx, send_keys), send_keys = NULL;
  rdx_mem_free(ctx, k64), k64 = NULL;

  /* 4. a fresh shard aside where pairs go: the shard's pairs but those of the received keys */
  int64_t removed = 0;
  if (m > 0 && d->shard->n > 0) {
    int64_t n_old = 0, kept = 0;
    qsort(recv_keys, (size_t)m, 8, rdx_dist_cmp_u64);
    st = shard_pairs(ctx, fn, d, 0, &pair_keys, &pair_rows, &n_old);
    for (int64_t i = 0; st == RDX_OK && i < n_old; i++) {
      const uint64_t k = get_key(pair_keys, d->dtype, i);
      if (bsearch(&k, recv_keys, (size_t)m, 8, rdx_dist_cmp_u64) != NULL) continue;
      put_key(pair_keys, d->dtype, kept, k);
      pair_rows[kept++] = pair_rows[i];
    }
    removed = n_old - kept;
    if (st == RDX_OK && removed > 0) st = build_shard(ctx, d, pair_keys, pair_rows, kept, &fresh);
  }
  RDX_DIST_AGREE(st);
  /* every rank's count, for the total (in the cursor's place, no longer needed) */
  RDX_CHECK_GOTO(comm->ops->allgather(comm, &removed, cursor, 8), st, done);

  /* 5. every rank has its fresh shard: swap them in (nothing here can fail) */
  if (fresh != NULL) {
    rdx_index_destroy(d->shard);
    d->shard = fresh;
    fresh = NULL;
  }
  int64_t gone = 0;
  for (int r = 0; r < size; r++) gone += cursor[r];
  d->n_total -= gone;
  if (n_erased != NULL) *n_erased = gone;
done:
  rdx_index_destroy(fresh);
  rdx_mem_free(ctx, send_keys);
  rdx_mem_free(ctx, recv_keys);
  rdx_mem_free(ctx, pair_keys);
  rdx_mem_free(ctx, pair_rows);
  rdx_mem_free(ctx, k64);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, counts);
  return st;
}

uint64_t rdx_dist_index_next_row(const rdx_dist_index *idx) {
  return idx != NULL && idx->magic == RDX_DIST_INDEX_MAGIC ? idx->next_row : 0;
}
