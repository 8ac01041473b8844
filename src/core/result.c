/*
 * result.c: the `_alloc` calls' shared sequence (rdx_index_lookup_alloc, rdx_index_range_alloc,
 * rdx_points_query_alloc): count, scan the counts into offsets, allocate the rows, fill. The
 * caller's count and fill are the public two-phase calls, so every check they make applies.
 */
#include "core.h"

#include <stdlib.h>

rdx_status rdx_result_make(rdx_context *ctx, const char *fn, int64_t n_queries, rdx_location where,
                           rdx_status (*count)(void *arg, rdx_array counts),
                           rdx_status (*fill)(void *arg, rdx_array offsets, rdx_array rows), void *arg,
                           rdx_result **out) {
  rdx_result *r = (rdx_result *)calloc(1, sizeof *r);
  if (r == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the result", fn);
  r->n_queries = n_queries;
  r->where = where;
  rdx_status st;
  void *counts = NULL;
  size_t count_bytes = 0, offset_bytes = 0, row_bytes = 0;
  if (!rdx_size_rows(n_queries, 1, 8, &count_bytes) || !rdx_size_add(count_bytes, 8, &offset_bytes)) {
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld queries overflow size_t", fn, (long long)n_queries);
    goto fail;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, &counts, count_bytes, where), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&r->offsets, offset_bytes, where), st, fail);
  rdx_array ca = rdx_host_array(counts, n_queries, RDX_U64);
  rdx_array oa = rdx_host_array(r->offsets, n_queries + 1, RDX_U64);
  ca.where = oa.where = where;
  RDX_CHECK_GOTO(count(arg, ca), st, fail);
  RDX_CHECK_GOTO(rdx_counts_to_offsets(ctx, ca, oa, &r->total), st, fail);
  rdx_mem_free(ctx, counts);
  counts = NULL;
  /* the total is a sum of counts, bounded by no array: checked, not assumed */
  if (r->total > (uint64_t)INT64_MAX || !rdx_size_rows((int64_t)r->total, 1, 8, &row_bytes)) {
    st = rdx_fail(ctx, where == RDX_DEVICE ? RDX_ERR_DEVICE_OUT_OF_MEMORY : RDX_ERR_HOST_OUT_OF_MEMORY,
                  "%s: %llu result rows overflow size_t", fn, (unsigned long long)r->total);
    goto fail;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&r->row_ids, row_bytes, where), st, fail);
  rdx_array ra = rdx_host_array(r->row_ids, (int64_t)r->total, RDX_U64);
  ra.where = where;
  RDX_CHECK_GOTO(fill(arg, oa, ra), st, fail);
  *out = r;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, counts);
  rdx_result_free(ctx, r);
  return st;
}

void rdx_result_free(rdx_context *ctx, rdx_result *r) {
  if (r == NULL) return;
  if (ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC) {
    rdx_mem_release_to_caller(ctx, r->offsets);
    rdx_mem_free(ctx, r->row_ids);
  }
  free(r);
}
