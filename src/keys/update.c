/*
 * update.c: rdx_keys_rebuild, the update of the kinds without one in place (rx and cgrx, whose
 * BVH would have to be rebuilt anyway; with RDX_UPDATE_REBUILD).
 *
 * The index's entries (ops->entries, sorted by (key, row)) get the batch merged in or the erased
 * keys filtered out (entries.c / entries.cu), and a fresh state is built from them with the
 * index's options into a scratch copy of the handle. Only once that build has succeeded is the
 * old state destroyed and the new one swapped in, so a failure at any step leaves the index as it
 * was (all or nothing). The rows are given explicitly to the build, so a rebuilt rx index keeps
 * each pair's row whatever its input position.
 */
#include "keys/keys.h"

rdx_status rdx_keys_rebuild(rdx_context *ctx, rdx_index *idx, const rdx_key_input *ins, const void *erase,
                            int64_t m_erase, int64_t *n_erased) {
  const rdx_key_ops *ops = idx->ops;
  if (ops->entries == NULL)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "rdx_keys_rebuild: kind %s on backend %s cannot list its pairs",
                    rdx_kind_name(idx->kind), rdx_backend_name(ctx->backend));
  rdx_entries e = {0}, ne = {0};
  void *keys = NULL, *rows = NULL;
  int64_t gone = 0;
  rdx_status st;
  RDX_CHECK(ops->entries(ctx, idx, &e));
  if (ins != NULL) RDX_CHECK_GOTO(rdx_entries_merge(ctx, &e, ins, &ne), st, done);
  else RDX_CHECK_GOTO(rdx_entries_erase(ctx, &e, erase, idx->dtype, m_erase, &ne, &gone), st, done);
  rdx_entries_free(ctx, &e);
  if (ins == NULL && (gone == 0 || ne.n == 0)) { /* nothing erased, or everything: index.c destroys */
    st = RDX_OK;
    goto done;
  }
  rdx_key_input in;
  in.n = ne.n;
  in.key_dtype = idx->dtype;
  in.opts = idx->opts;
  in.first_row = 0;
  RDX_CHECK_GOTO(rdx_entries_split(ctx, &ne, idx->dtype, &keys, &rows, &in.row_dtype), st, done);
  rdx_entries_free(ctx, &ne);
  in.keys = keys;
  in.rows = rows;
  {
    rdx_index fresh = *idx; /* the handle's fields for the build; only its impl is kept */
    fresh.impl = NULL;
    RDX_CHECK_GOTO(ops->build(ctx, &fresh, &in), st, done);
    ops->destroy(ctx, idx);
    idx->impl = fresh.impl;
  }
  st = RDX_OK;
done:
  if (st == RDX_OK && n_erased != NULL) *n_erased = gone;
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  rdx_entries_free(ctx, &e);
  rdx_entries_free(ctx, &ne);
  return st;
}
