/*
 * join_lsi.c: the public segment intersection calls (rdx_join_lsi, rdx_join_lsi_free) and the
 * benchmarks' entry rdx_jn_lsi_run: validation, the empty cases, the index (R's own, else a
 * temporary one), and dispatch to the LSI ops table of the context's backend (lsi.c, lsi.cu).
 *
 * The index the join uses follows join.c's rule for PIP: R's own when rdx_polygons_build_index has
 * run (its pad_ulps and group_threshold apply; opts' are validated but not read for it), else a
 * temporary one made with opts' and freed before the call returns. Layers are only read. The
 * result is all or nothing: on failure *out is NULL and nothing is held.
 */
#include "join/join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A layer argument: NULL named by its role, then join.h's handle check. */
static rdx_status check_layer(rdx_context *ctx, const char *fn, const char *role, const rdx_polygons *p) {
  if (p == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, role);
  char where[64];
  snprintf(where, sizeof where, "%s (%s)", fn, role);
  return rdx_jn_check_layer(ctx, where, p);
}

rdx_status rdx_jn_lsi_result_arrays(rdx_context *ctx, rdx_join_lsi_result *res, int64_t n_pairs, int64_t n_points) {
  static const char what[] = "rdx_join_lsi: result";
  rdx_location where = rdx_compute_location(ctx);
  size_t pb = 0, qb = 0;
  if (!rdx_size_rows(n_pairs, 2, 8, &pb) || !rdx_size_rows(n_points, 2, 8, &qb))
    return rdx_fail(ctx, where == RDX_DEVICE ? RDX_ERR_DEVICE_OUT_OF_MEMORY : RDX_ERR_HOST_OUT_OF_MEMORY,
                    "%s: %lld pairs and %lld points overflow size_t", what, (long long)n_pairs, (long long)n_points);
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&res->pairs, pb, where), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&res->point_pairs, qb, where), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&res->points, qb, where), st, fail);
  res->n_pairs = n_pairs;
  res->n_points = n_points;
  res->where = where;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, res->pairs);
  rdx_mem_free(ctx, res->point_pairs);
  res->pairs = NULL;
  res->point_pairs = NULL;
  return st;
}

rdx_status rdx_jn_lsi_run(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const rdx_join_options *opts,
                          int want_points, rdx_join_lsi_result **out, rdx_jn_lsi_stats *stats) {
  static const char fn[] = "rdx_join_lsi";
  double t0 = rdx_now_ms();
  if (out != NULL) *out = NULL;
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  RDX_CHECK(check_layer(ctx, fn, "r", r));
  RDX_CHECK(check_layer(ctx, fn, "s", s));
  rdx_join_options o;
  RDX_CHECK(rdx_jn_get_options(ctx, fn, opts, &o));
  const rdx_jn_ops *ops = rdx_jn_find_ops(RDX_JN_OP_LSI, ctx->backend);
  if (ops == NULL || ops->lsi == NULL)
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: no segment intersection on backend %s", fn,
                    rdx_backend_name(ctx->backend));
  rdx_jn_lsi_stats local;
  if (stats == NULL) stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->s_edges = s->host.n_vertices;
  rdx_join_lsi_result *res = (rdx_join_lsi_result *)calloc(1, sizeof *res);
  if (res == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the result", fn);
  rdx_jn_index temp;
  memset(&temp, 0, sizeof temp);
  rdx_status st = RDX_OK;
  if (r->host.n_vertices == 0 || s->host.n_vertices == 0) { /* nothing can meet */
    RDX_CHECK_GOTO(rdx_jn_lsi_result_arrays(ctx, res, 0, 0), st, fail);
  } else {
    const rdx_jn_index *ix = &r->index;
    if (!r->index.built) {
      double ti = rdx_now_ms();
      RDX_CHECK_GOTO(rdx_jn_index_make(ctx, r, o.pad_ulps, o.group_threshold, 0.0, &temp), st, fail);
      stats->index_ms = rdx_now_ms() - ti;
      stats->temp_index = 1;
      ix = &temp;
    }
    stats->groups = ix->n_groups;
    RDX_CHECK_GOTO(ops->lsi(ctx, r, ix, s, want_points, res, stats), st, fail);
  }
  if (rdx_is_gpu(ctx)) RDX_CHECK_GOTO(rdx_cuda_sync(ctx, fn), st, fail);
  rdx_jn_index_free(ctx, &temp);
  stats->n_pairs = res->n_pairs;
  stats->n_points = res->n_points;
  stats->total_ms = rdx_now_ms() - t0;
  *out = res;
  return RDX_OK;
fail:
  rdx_jn_index_free(ctx, &temp);
  rdx_join_lsi_free(ctx, res);
  return st;
}

rdx_status rdx_join_lsi(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const rdx_join_options *opts,
                        bool want_points, rdx_join_lsi_result **out) {
  return rdx_jn_lsi_run(ctx, r, s, opts, want_points, out, NULL);
}

void rdx_join_lsi_free(rdx_context *ctx, rdx_join_lsi_result *result) {
  if (result == NULL) return;
  if (ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC) {
    /* the caller may have used device results on its own streams: the first free waits */
    if (result->where == RDX_DEVICE) rdx_mem_release_to_caller(ctx, result->pairs);
    else rdx_mem_free(ctx, result->pairs);
    rdx_mem_free(ctx, result->point_pairs);
    rdx_mem_free(ctx, result->points);
  }
  free(result);
}
