/*
 * keys.h: internals of the 1-D key indexes: the index handle, the per-(kind, backend) ops table
 * and the registry, and the sorted (key, row) entry arrays that most kinds build on.
 *
 * The public calls in index.c validate every argument, stage host arrays onto the device (and
 * back) for GPU contexts, handle empty batches and empty indexes, and then call one ops table.
 * So an ops function sees only valid, non-empty batches in its backend's memory.
 */
#ifndef RDX_KEYS_H
#define RDX_KEYS_H

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Build input, already in the backend's memory. */
typedef struct rdx_key_input {
  const void *keys;          /* n keys of key_dtype */
  const void *rows;          /* n row ids of row_dtype, or NULL for implied 0..n-1; never
                                RDX_MISS (index.c refuses it) */
  int64_t n;                 /* >= 1 (empty key sets never reach an ops table), < 2^54
                                (RDX_MAX_ARRAY_BYTES), so n times a per-key size fits size_t */
  rdx_dtype key_dtype;       /* RDX_U32 or RDX_U64 */
  rdx_dtype row_dtype;       /* RDX_U32 or RDX_U64; meaningless when rows == NULL */
  rdx_build_options opts;    /* normalised: every field set */
  uint64_t first_row;        /* implied rows (rows == NULL) are first_row .. first_row + n - 1:
                                0 for a build, the index's row counter for an insert */
} rdx_key_input;

typedef struct rdx_key_ops rdx_key_ops;
struct rdx_entries;

struct rdx_index {
  uint32_t magic;            /* RDX_INDEX_MAGIC while alive */
  rdx_context *ctx;          /* the context that built it */
  const rdx_key_ops *ops;    /* NULL for an empty index */
  rdx_kind kind;
  rdx_dtype dtype;           /* key dtype */
  int64_t n;                 /* keys */
  int64_t resident;          /* bytes held, measured through the account */
  int64_t peak;              /* most bytes held during the build */
  rdx_build_options opts;
  uint64_t next_row;         /* the first implied row id of the next insert (rdx_index_next_row) */
  void *impl;                /* the kind's own state, owned */
};

/* What one query call asks (index.c maps the public calls onto these; the rx and cgrx device
 * code keeps the same numbers as RDX_RX_OP_* and RDX_CGRX_OP_*). */
typedef enum rdx_key_op {
  RDX_KEY_LOOKUP = 0,       /* out[i]: the smallest row of query i, or RDX_MISS */
  RDX_KEY_LOOKUP_COUNT = 1, /* out[i]: how many rows query i has */
  RDX_KEY_LOOKUP_FILL = 2,  /* out: n + 1 offsets (input); rows: each query's rows, ascending */
  RDX_KEY_RANGE_COUNT = 3,  /* queries are n (lo, hi) pairs; out[i]: rows with lo <= key <= hi */
  RDX_KEY_RANGE_FILL = 4    /* out: offsets; rows: each range's rows in any order (see below) */
} rdx_key_op;

/* Every ops function gets a valid, non-empty batch in the backend's memory. Queries and bounds
 * have the index's key dtype. Outputs are u64. */
struct rdx_key_ops {
  rdx_kind kind;
  rdx_backend backend;       /* CPU or CUDA (OPTIX contexts use CUDA ops for non-RT kinds) */
  rdx_status (*build)(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in);
  void (*destroy)(rdx_context *ctx, rdx_index *idx);
  rdx_status (*query)(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *queries, int64_t n,
                      uint64_t *out, uint64_t *rows);
  int ranges;                /* 0: range ops are not offered (hash); index.c says so */
  int range_fill_sorted;     /* 0: index.c sorts each range's rows after RANGE_FILL */
  /* Batch updates in place, all or nothing: on failure the index is exactly as before (allocate
   * and check everything that can fail before the first change, or build the new state aside
   * and swap it in). NULL: the kind has none, and index.c refuses the batch or, with
   * RDX_UPDATE_REBUILD, rebuilds the index through rdx_keys_rebuild.
   * insert: in->n >= 1 pairs in the backend's memory (keys of the index's dtype; rows as a
   * build's, implied ones from in->first_row; never RDX_MISS); in->opts is the index's.
   * erase: m >= 1 keys of the index's dtype in the backend's memory, in any order, duplicates
   * and absent keys allowed; every row of each is removed; *n_erased = the pairs removed.
   * index.c keeps idx->n, next_row and the byte counts; it never calls erase on a batch that
   * would leave the index empty of ops (it destroys the state when n reaches 0 instead, and an
   * insert into an empty index is a build). */
  rdx_status (*insert)(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in);
  rdx_status (*erase)(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased);
  /* Every (key, row) pair of the index sorted by (key, row), as new entries in the backend's
   * memory (the caller frees them with rdx_entries_free): snapshots and rebuilds read them. */
  rdx_status (*entries)(rdx_context *ctx, const rdx_index *idx, struct rdx_entries *out);
};

/* The rebuild of a kind without in-place updates (src/keys/update.c): the index's entries with the
 * batch applied (ins: inserted pairs, or NULL; erase: m_erase keys whose rows go, or NULL), built
 * anew with the index's options and swapped in; on failure the index is as before. *n_erased may
 * be NULL. The index has ops (is not empty). */
rdx_status rdx_keys_rebuild(rdx_context *ctx, rdx_index *idx, const rdx_key_input *ins, const void *erase,
                            int64_t m_erase, int64_t *n_erased);

/* *o = opts with the defaults past opts->size (RDX_UPDATE_OPTIONS_INIT when opts is NULL);
 * RDX_ERR_INVALID_ARGUMENT naming fn for a size that is not one or unknown flag bits. Shared by
 * rdx_index_insert/_erase and the sharded updates (dist/keys.c). */
rdx_status rdx_update_options_get(rdx_context *ctx, const char *fn, const rdx_update_options *opts,
                                  rdx_update_options *o);

/* The registry: ops for (kind, backend), or NULL when that pair does not exist. */
const rdx_key_ops *rdx_keys_find_ops(rdx_kind kind, rdx_backend backend);

/* ---- sorted entries: (key, row) pairs sorted by key, then row ----
 *
 * Layout (interleaved "row layout", one cache line holds whole pairs):
 *   width 32: struct { uint32_t key; uint32_t row; }   8 bytes  (u32 keys, every row < 2^32)
 *   width 64: struct { uint64_t key; uint64_t row; }  16 bytes  (u64 keys, or rows >= 2^32)
 * A u32 index with a row id >= 2^32 is stored at width 64; its queries are widened on the fly.
 */
typedef struct rdx_pair32 {
  uint32_t key;
  uint32_t row;
} rdx_pair32;
typedef struct rdx_pair64 {
  uint64_t key;
  uint64_t row;
} rdx_pair64;

typedef struct rdx_entries {
  void *pairs;               /* n pairs in the backend's memory, sorted by (key, row) */
  int64_t n;
  int width;                 /* 32 or 64 */
} rdx_entries;

/* Sort the input into entries (backend memory, through the account). */
rdx_status rdx_entries_build_cpu(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out);
rdx_status rdx_entries_build_cuda(rdx_context *ctx, const rdx_key_input *in, rdx_entries *out);
void rdx_entries_free(rdx_context *ctx, rdx_entries *e);

/* ---- batch updates of sorted entries (entries.c, entries.cu) ----
 * Each makes new entries in the backend's memory and leaves its inputs untouched, so a caller
 * builds the new state aside and swaps it in only once everything has succeeded (all or nothing).
 *
 * merge: *out = e's pairs plus the batch `in` (implied rows from in->first_row), sorted by
 *   (key, row); width 64 when either side needs it (a u32 index whose rows reach 2^32 widens).
 *   The batch is sorted on its own, then merged: each old pair is read once and written once.
 * erase: *out = e without every pair whose key is one of keys[0, m) (dtype RDX_U32 or RDX_U64,
 *   any order, duplicates and absent keys allowed), same width; *n_erased = pairs removed.
 *   out->n may be 0 (its pairs a 0-byte allocation).
 * copy: *out = a copy of e.
 * split: the pairs as two new arrays (keys of key_dtype, rows u32 at width 32 else u64, *row_dtype
 *   says which), the input of a fresh build.
 * The unsuffixed forms dispatch on the context's backend. */
rdx_status rdx_entries_merge_cpu(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out);
rdx_status rdx_entries_merge_cuda(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out);
rdx_status rdx_entries_erase_cpu(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype,
                                 int64_t m, rdx_entries *out, int64_t *n_erased);
rdx_status rdx_entries_erase_cuda(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype,
                                  int64_t m, rdx_entries *out, int64_t *n_erased);
rdx_status rdx_entries_copy_cpu(rdx_context *ctx, const rdx_entries *e, rdx_entries *out);
rdx_status rdx_entries_copy_cuda(rdx_context *ctx, const rdx_entries *e, rdx_entries *out);
rdx_status rdx_entries_split_cpu(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                                 rdx_dtype *row_dtype);
rdx_status rdx_entries_split_cuda(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                                  rdx_dtype *row_dtype);
rdx_status rdx_entries_merge(rdx_context *ctx, const rdx_entries *e, const rdx_key_input *in, rdx_entries *out);
rdx_status rdx_entries_erase(rdx_context *ctx, const rdx_entries *e, const void *keys, rdx_dtype key_dtype, int64_t m,
                             rdx_entries *out, int64_t *n_erased);
rdx_status rdx_entries_split(rdx_context *ctx, const rdx_entries *e, rdx_dtype key_dtype, void **keys, void **rows,
                             rdx_dtype *row_dtype);

/* Ops tables, one per (kind, backend), listed in registry.c. */
extern const rdx_key_ops rdx_scan_cpu_ops, rdx_sorted_cpu_ops, rdx_btree_cpu_ops, rdx_hash_cpu_ops;
extern const rdx_key_ops rdx_rx_cpu_ops, rdx_cgrx_cpu_ops;
extern const rdx_key_ops rdx_rx_cuda_ops, rdx_cgrx_cuda_ops, rdx_rx_optix_ops, rdx_cgrx_optix_ops;
extern const rdx_key_ops rdx_scan_cuda_ops, rdx_sorted_cuda_ops, rdx_btree_cuda_ops,
    rdx_hash_cuda_ops;
extern const rdx_key_ops rdx_cgrxu_cpu_ops, rdx_cgrxu_cuda_ops, rdx_cgrxu_optix_ops;

#ifdef __cplusplus
}
#endif
#endif /* RDX_KEYS_H */
