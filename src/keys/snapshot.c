/*
 * snapshot.c: rdx_index_save and rdx_index_load, key indexes in raydex's snapshot container
 * (src/io/snapshot.h: header, checksummed sections, crash-safe write).
 *
 * Content kind RDX_SNAP_KEYS. Header fields (u64 each; int options as their 32-bit two's
 * complement, load_factor as its IEEE-754 bits):
 *
 *   field  meaning
 *   0      index kind (rdx_kind)
 *   1      key dtype (RDX_U32 or RDX_U64)
 *   2      pair width: 32 (u32 keys, every row < 2^32) or 64 (u64 keys, or a row >= 2^32)
 *   3      count: the (key, row) pairs
 *   4      next_row (rdx_index_next_row)
 *   5..9   the build options as the build normalised them: kind, bucket_size, flags,
 *          load_factor, node_bytes
 *   10..15 0
 *
 * One section, "pairs": count (key, row) pairs sorted by (key, row), each two little-endian
 * integers of the pair width: the entries op's layout (keys.h), so a little-endian host writes
 * the entries as they are.
 *
 * The load rebuilds the index through rdx_index_build with the saved options (a backend with the
 * kind; a GPU context stages the host arrays there), then restores next_row: it answers every
 * query as the saved index did. Saved options that the build refuses make the file corrupted
 * (RDX_ERR_PARSE), as any other field that is wrong.
 */
#include "keys/keys.h"
#include "io/snapshot.h"

#include <stdio.h>
#include <string.h>

enum { F_KIND, F_DTYPE, F_WIDTH, F_COUNT, F_NEXT_ROW, F_OPT_KIND, F_BUCKET, F_FLAGS, F_LOAD, F_NODE };
/* Counts past this are refused before any size is computed from them: 2^54 pairs of 16 bytes
 * is past RDX_MAX_ARRAY_BYTES, so no real file has more. */
#define MAX_PAIRS ((uint64_t)1 << 54)

static rdx_status check_index(rdx_context *ctx, const char *fn, const rdx_index *idx) {
  if (idx == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: idx is NULL", fn);
  if (idx->magic != RDX_INDEX_MAGIC)
    return rdx_fail(ctx, RDX_ERR_MISUSE, "%s: idx %p is not an index", fn, (const void *)idx);
  if (idx->ctx != ctx)
    return rdx_fail(ctx, RDX_ERR_MISUSE, "%s: idx %p belongs to another context", fn, (const void *)idx);
  return RDX_OK;
}

static uint64_t int_field(int v) { return (uint64_t)(uint32_t)v; }

rdx_status rdx_index_save(rdx_context *ctx, const rdx_index *idx, const char *path) {
  static const char fn[] = "rdx_index_save";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_index(ctx, fn, idx));
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  rdx_entries e = {NULL, 0, idx->dtype == RDX_U64 ? 64 : 32};
  void *host = NULL; /* the pairs copied off a GPU */
  const void *pairs = NULL;
  rdx_status st = RDX_OK;
  if (idx->n > 0) {
    if (idx->ops == NULL)
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: index of %lld keys without ops", fn, (long long)idx->n);
    if (idx->ops->entries == NULL)
      return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind %s on backend %s cannot list its (key, row) pairs yet, so it "
                      "cannot be saved", fn, rdx_kind_name(idx->kind), rdx_backend_name(ctx->backend));
    rdx_trace(ctx, "save: start");
    RDX_CHECK(idx->ops->entries(ctx, idx, &e));
    rdx_trace(ctx, "save: the index's pairs listed");
    if (e.n != idx->n || (e.width != 32 && e.width != 64) || (idx->dtype == RDX_U64 && e.width != 64)) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: kind %s listed %lld pairs of width %d for %lld %s keys", fn,
                    rdx_kind_name(idx->kind), (long long)e.n, e.width, (long long)idx->n,
                    idx->dtype == RDX_U64 ? "u64" : "u32");
      goto done;
    }
    size_t bytes = (size_t)e.n * (size_t)(e.width / 4);
    pairs = e.pairs;
    if (rdx_is_gpu(ctx)) {
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_save: the pairs on the host", &host, bytes, RDX_HOST), st, done);
      RDX_CHECK_GOTO(rdx_copy(ctx, host, RDX_HOST, e.pairs, RDX_DEVICE, bytes), st, done);
      rdx_entries_free(ctx, &e); /* the device copy is no longer needed */
      pairs = host;
      rdx_trace(ctx, "save: pairs copied to the host");
    }
  }
  rdx_snap_header h;
  memset(&h, 0, sizeof h);
  h.content = RDX_SNAP_KEYS;
  h.n_sections = 1;
  h.field[F_KIND] = (uint64_t)idx->kind;
  h.field[F_DTYPE] = (uint64_t)idx->dtype;
  h.field[F_WIDTH] = (uint64_t)e.width;
  h.field[F_COUNT] = (uint64_t)idx->n;
  h.field[F_NEXT_ROW] = idx->next_row;
  h.field[F_OPT_KIND] = (uint64_t)idx->opts.kind;
  h.field[F_BUCKET] = int_field(idx->opts.bucket_size);
  h.field[F_FLAGS] = int_field(idx->opts.flags);
  h.field[F_LOAD] = rdx_snap_f64_bits(idx->opts.load_factor);
  h.field[F_NODE] = int_field(idx->opts.node_bytes);
  rdx_snap_out s = {pairs, 2 * (uint64_t)idx->n, e.width / 8};
  st = rdx_snap_write(ctx, fn, path, &h, &s);
  rdx_trace(ctx, "save: written, flushed and renamed");
done:
  if (host) rdx_mem_free(ctx, host);
  if (e.pairs) rdx_entries_free(ctx, &e);
  return st;
}

/* ---- load ---- */

/* The pairs split into keys and rows, in parallel chunks. */
typedef struct split_job {
  const unsigned char *pairs;
  void *keys, *rows;
  int64_t n, chunk;
  int width, key64, row64;
} split_job;

static void split_task(void *arg, int64_t task, int thread) {
  (void)thread;
  const split_job *j = (const split_job *)arg;
  int64_t lo = task * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  if (j->width == 32) {
    const unsigned char *p = j->pairs + 8 * lo;
    uint32_t *k = (uint32_t *)j->keys, *r = (uint32_t *)j->rows;
    for (int64_t i = lo; i < hi; i++, p += 8) k[i] = rdx_snap_le32(p), r[i] = rdx_snap_le32(p + 4);
  } else {
    const unsigned char *p = j->pairs + 16 * lo;
    uint64_t *r = (uint64_t *)j->rows;
    for (int64_t i = lo; i < hi; i++, p += 16) {
      uint64_t key = rdx_snap_le64(p);
      if (j->key64) ((uint64_t *)j->keys)[i] = key;
      else ((uint32_t *)j->keys)[i] = (uint32_t)key; /* checked below: a u32 index's keys fit */
      r[i] = rdx_snap_le64(p + 8);
    }
  }
}

/* The first pair of a u32 index stored at width 64 whose key does not fit 32 bits, or -1. */
static int64_t wide_key(const unsigned char *pairs, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (rdx_snap_le64(pairs + 16 * i) > UINT32_MAX) return i;
  return -1;
}

static rdx_status int_option(rdx_context *ctx, const rdx_snap_file *f, int field, const char *what, int *out) {
  uint64_t v = f->h.field[field];
  if (v > UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: header field %d (%s) is %llu, not a 32-bit value",
                    f->name, field, what, (unsigned long long)v);
  *out = (int)(int32_t)(uint32_t)v;
  return RDX_OK;
}

rdx_status rdx_index_load(rdx_context *ctx, const char *path, rdx_index **out) {
  static const char fn[] = "rdx_index_load";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  rdx_snap_file f;
  RDX_CHECK(rdx_snap_open(ctx, fn, path, RDX_SNAP_KEYS, 1, &f));
  rdx_status st = RDX_OK;
  void *keys = NULL, *rows = NULL;
  const uint64_t *F = f.h.field;
  rdx_kind kind = (rdx_kind)F[F_KIND];
  if (F[F_KIND] > UINT32_MAX || rdx_kind_name(kind) == NULL) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: index kind 0x%llx is not a kind this library knows",
                  f.name, (unsigned long long)F[F_KIND]);
    goto done;
  }
  if (F[F_DTYPE] != RDX_U32 && F[F_DTYPE] != RDX_U64) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: key dtype 0x%llx is not u32 (0x%x) or u64 (0x%x)", f.name,
                  (unsigned long long)F[F_DTYPE], (unsigned)RDX_U32, (unsigned)RDX_U64);
    goto done;
  }
  rdx_dtype dtype = (rdx_dtype)F[F_DTYPE];
  if (F[F_WIDTH] != 32 && F[F_WIDTH] != 64) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: pair width %llu is not 32 or 64", f.name,
                  (unsigned long long)F[F_WIDTH]);
    goto done;
  }
  int width = (int)F[F_WIDTH];
  if (dtype == RDX_U64 && width != 64) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: pair width 32 for u64 keys (expected 64)", f.name);
    goto done;
  }
  if (F[F_COUNT] > MAX_PAIRS) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: count %llu is more than an index holds (2^54)", f.name,
                  (unsigned long long)F[F_COUNT]);
    goto done;
  }
  if (F[F_OPT_KIND] != F[F_KIND]) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: the options' kind 0x%llx differs from the index kind %s",
                  f.name, (unsigned long long)F[F_OPT_KIND], rdx_kind_name(kind));
    goto done;
  }
  rdx_build_options o = RDX_BUILD_OPTIONS_INIT;
  o.kind = kind;
  RDX_CHECK_GOTO(int_option(ctx, &f, F_BUCKET, "bucket_size", &o.bucket_size), st, done);
  RDX_CHECK_GOTO(int_option(ctx, &f, F_FLAGS, "flags", &o.flags), st, done);
  RDX_CHECK_GOTO(int_option(ctx, &f, F_NODE, "node_bytes", &o.node_bytes), st, done);
  o.load_factor = rdx_snap_bits_f64(F[F_LOAD]);
  for (int i = F_NODE + 1; i < RDX_SNAP_FIELDS; i++)
    if (F[i] != 0) {
      st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: header field %d is %llu, expected 0", f.name, i,
                    (unsigned long long)F[i]);
      goto done;
    }
  int64_t n = (int64_t)F[F_COUNT];
  uint64_t bytes = F[F_COUNT] * (uint64_t)(width / 4);
  static const char *const names[1] = {"pairs"};
  RDX_CHECK_GOTO(rdx_snap_sections(ctx, &f, &bytes, names), st, done);
  if (dtype == RDX_U32 && width == 64 && n > 0) {
    int64_t at = wide_key((const unsigned char *)f.data[0], n);
    if (at >= 0) {
      st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: pair %lld's key %llu does not fit the u32 keys",
                    f.name, (long long)at, (unsigned long long)rdx_snap_le64((const unsigned char *)f.data[0] + 16 * at));
      goto done;
    }
  }

  size_t kb = dtype == RDX_U64 ? 8 : 4, rb = width == 64 ? 8 : 4;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_load: keys", &keys, (size_t)n * kb, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_load: rows", &rows, (size_t)n * rb, RDX_HOST), st, done);
  if (n > 0) {
    split_job j = {(const unsigned char *)f.data[0], keys, rows, n, (int64_t)1 << 20, width, dtype == RDX_U64, width == 64};
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n + j.chunk - 1) / j.chunk, split_task, &j), st, done);
  }
  uint64_t next_row = F[F_NEXT_ROW];
  rdx_snap_close(ctx, &f); /* the file's pages are not needed by the build */
  rdx_index *idx = NULL;
  st = rdx_index_build(ctx, rdx_host_array(keys, n, dtype), rdx_host_array(rows, n, width == 64 ? RDX_U64 : RDX_U32),
                       &o, &idx);
  if (st == RDX_ERR_INVALID_ARGUMENT) { /* options or rows that no saved index has */
    char why[sizeof ctx->message];
    snprintf(why, sizeof why, "%s", rdx_context_message(ctx));
    char file[256];
    rdx_escape(file, sizeof file, path, strlen(path));
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: %s: corrupted snapshot: its index is refused by the build (%s)", fn, file, why);
  }
  if (st == RDX_OK) {
    idx->next_row = next_row;
    *out = idx;
  }
done:
  if (f.bytes) rdx_snap_close(ctx, &f);
  if (keys) rdx_mem_free(ctx, keys);
  if (rows) rdx_mem_free(ctx, rows);
  return st;
}
