/*
 * join_polygons.c: the public polygon joins (rdx_join_polygons, rdx_join_pairs_free): validation,
 * the empty cases, the bounding-box join, the indexes of both layers (their own, else temporary
 * ones made with the options and freed before the call returns, as join_lsi.c does for R) and the
 * engine of the context's backend (overlay.c). The result is all or nothing: on failure *out is
 * NULL and nothing is held.
 */
#include "join/join.h"

#include <stdlib.h>
#include <string.h>

static rdx_status check_layer(rdx_context *ctx, const char *fn, const char *role, const rdx_polygons *p) {
  if (p == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, role);
  return rdx_jn_check_layer(ctx, fn, p);
}

/* ---- RDX_JOIN_BOXES: a sweep over the features' boxes sorted by their left side ---- */

typedef struct fbox {
  double lo[2], hi[2];
  uint32_t id;
} fbox;

static int fbox_cmp(const void *pa, const void *pb) {
  const fbox *a = (const fbox *)pa, *b = (const fbox *)pb;
  if (a->lo[0] != b->lo[0]) return a->lo[0] < b->lo[0] ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* The boxes of p's features that have rings, sorted by lo.x; *n of them. */
static rdx_status feature_boxes(rdx_context *ctx, const rdx_polygons *p, fbox **out, int64_t *n) {
  const rdx_jn_arrays *h = &p->host;
  *n = 0;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_polygons: boxes", (void **)out, (size_t)(h->n_features + 1) * sizeof(fbox),
                          RDX_HOST));
  for (int64_t f = 0; f < h->n_features; f++) {
    uint64_t v0 = h->ring_off[h->feat_off[f]], v1 = h->ring_off[h->feat_off[f + 1]];
    if (v0 == v1) continue;
    fbox *b = *out + (*n)++;
    b->id = (uint32_t)f;
    b->lo[0] = b->hi[0] = h->xy[2 * v0], b->lo[1] = b->hi[1] = h->xy[2 * v0 + 1];
    for (uint64_t v = v0 + 1; v < v1; v++)
      for (int k = 0; k < 2; k++) {
        double c = h->xy[2 * v + k];
        if (c < b->lo[k]) b->lo[k] = c;
        if (c > b->hi[k]) b->hi[k] = c;
      }
  }
  qsort(*out, (size_t)*n, sizeof(fbox), fbox_cmp);
  return RDX_OK;
}

/* Pairs (r << 32 | s) whose closed boxes meet, sorted unique. Each pair is found once: by the box
 * of the two that starts later (or R's on a tie), while sweeping over the other's started boxes. */
static rdx_status box_pairs(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, uint64_t **out,
                            int64_t *m) {
  fbox *br = NULL, *bs = NULL;
  int64_t nr = 0, ns = 0, cap = 1024, n = 0;
  uint64_t *p = NULL;
  rdx_status st = RDX_OK;
  *out = NULL;
  *m = 0;
  RDX_CHECK_GOTO(feature_boxes(ctx, r, &br, &nr), st, done);
  RDX_CHECK_GOTO(feature_boxes(ctx, s, &bs, &ns), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&p, (size_t)cap * 8, RDX_HOST), st, done);
  for (int side = 0; side < 2; side++) {
    const fbox *a = side ? bs : br, *b = side ? br : bs;
    int64_t na = side ? ns : nr, nb = side ? nr : ns;
    /* for each box of a, the boxes of b that start in [a.lo.x, a.hi.x] (strictly after on side 1,
     * so a pair whose boxes start together is found on side 0 only) */
    int64_t j0 = 0;
    for (int64_t i = 0; i < na; i++) {
      while (j0 < nb && (side ? b[j0].lo[0] <= a[i].lo[0] : b[j0].lo[0] < a[i].lo[0])) j0++;
      for (int64_t j = j0; j < nb && b[j].lo[0] <= a[i].hi[0]; j++) {
        if (b[j].lo[1] > a[i].hi[1] || b[j].hi[1] < a[i].lo[1]) continue;
        if (n == cap) {
          uint64_t *q = NULL;
          RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&q, (size_t)cap * 16, RDX_HOST), st,
                         done);
          memcpy(q, p, (size_t)n * 8);
          rdx_mem_free(ctx, p);
          p = q, cap *= 2;
        }
        uint32_t ri = side ? b[j].id : a[i].id, si = side ? a[i].id : b[j].id;
        p[n++] = (uint64_t)ri << 32 | si;
      }
    }
  }
  {
    uint64_t *kt = NULL;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&kt, (size_t)(n + 1) * 8, RDX_HOST), st,
                   done);
    st = rdx_radix_sort_u64(ctx, &p, &kt, NULL, NULL, n);
    rdx_mem_free(ctx, kt);
    if (st != RDX_OK) goto done;
  }
  *out = p;
  *m = n;
  p = NULL;
done:
  rdx_mem_free(ctx, br);
  rdx_mem_free(ctx, bs);
  rdx_mem_free(ctx, p);
  return st;
}

/* ---- stages ---- */

const char *const rdx_jn_stage_names[RDX_JN_N_STAGES] = {"index", "pairs",  "classify", "groups", "pip",
                                                         "merge", "select", "areas",    "result"};

rdx_status rdx_jn_track_stage(rdx_context *ctx, rdx_jn_track *t, rdx_jn_stage next) {
  if (t->stats) {
    if (rdx_is_gpu(ctx)) RDX_CHECK(rdx_cuda_sync(ctx, "rdx_join_polygons"));
    const double now = rdx_now_ms();
    t->stats->ms[t->stage] += now - t->t;
    t->t = now;
  }
  t->stage = (int)next;
  if (t->progress) t->progress(t->user, rdx_jn_stage_names[next], (double)next / RDX_JN_N_STAGES);
  return RDX_OK;
}

/* ---- the public calls ---- */

/* The result of m pairs r << 32 | s (*keys) and, with want_areas, their m areas (*areas), both in
 * the context's compute location (the engines' output, rdx_mem_alloc's): the pairs are split into
 * the result's (r, s) rows there, and the areas array becomes the result's (*areas is taken). */
static rdx_status make_result(rdx_context *ctx, const uint64_t *keys, int want_areas, double **areas, int64_t m,
                              rdx_join_pairs_result **out) {
  static const char what[] = "rdx_join_polygons: result";
  rdx_join_pairs_result *res = (rdx_join_pairs_result *)calloc(1, sizeof *res);
  if (res == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory", what);
  const rdx_location where = rdx_compute_location(ctx);
  res->where = where;
  rdx_status st = rdx_mem_alloc(ctx, what, (void **)&res->pairs, (size_t)(2 * m + 1) * 8, where);
  if (st == RDX_OK && where == RDX_HOST)
    for (int64_t i = 0; i < m; i++)
      res->pairs[2 * i] = (int64_t)(keys[i] >> 32), res->pairs[2 * i + 1] = (int64_t)(uint32_t)keys[i];
  else if (st == RDX_OK)
    st = rdx_jn_split_pairs_gpu(ctx, keys, m, res->pairs);
  if (st == RDX_OK && want_areas && *areas == NULL) /* no engine ran: nothing meets */
    st = rdx_mem_alloc(ctx, what, (void **)areas, 8, where);
  if (st != RDX_OK) {
    rdx_join_pairs_free(ctx, res);
    return st;
  }
  if (want_areas) res->areas = *areas, *areas = NULL;
  res->n_pairs = m;
  *out = res;
  return RDX_OK;
}

rdx_status rdx_join_polygons(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                             rdx_join_predicate predicate, const rdx_join_options *opts, bool want_areas,
                             rdx_join_pairs_result **out) {
  return rdx_jn_polygons_run(ctx, r, s, predicate, opts, want_areas, out, NULL);
}

rdx_status rdx_jn_polygons_run(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                               rdx_join_predicate predicate, const rdx_join_options *opts, int want_areas,
                               rdx_join_pairs_result **out, rdx_jn_polygons_stats *stats) {
  static const char fn[] = "rdx_join_polygons";
  if (out != NULL) *out = NULL;
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  RDX_CHECK(check_layer(ctx, fn, "r", r));
  RDX_CHECK(check_layer(ctx, fn, "s", s));
  if (predicate < RDX_JOIN_OVERLAY || predicate > RDX_JOIN_BOXES)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown predicate %d", fn, (int)predicate);
  if (want_areas && predicate != RDX_JOIN_OVERLAY)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: areas are given for RDX_JOIN_OVERLAY only", fn);
  rdx_join_options o;
  RDX_CHECK(rdx_jn_get_options(ctx, fn, opts, &o));
  const double t0 = rdx_now_ms();
  rdx_jn_track track = {stats, o.progress, o.progress_user, RDX_JN_ST_INDEX, t0};
  if (stats) memset(stats, 0, sizeof *stats);
  uint64_t *keys = NULL;
  double *areas = NULL;
  int64_t m = 0;
  rdx_jn_index temp[2];
  memset(temp, 0, sizeof temp);
  rdx_status st = RDX_OK;
  if (r->host.n_vertices == 0 || s->host.n_vertices == 0) {
    /* nothing meets an empty layer */
  } else if (predicate == RDX_JOIN_BOXES) {
    RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, &track, RDX_JN_ST_PAIRS), st, done);
    RDX_CHECK_GOTO(box_pairs(ctx, r, s, &keys, &m), st, done);
    if (rdx_compute_location(ctx) == RDX_DEVICE) { /* the sweep ran on the host */
      uint64_t *dk = NULL;
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&dk, (size_t)(m + 1) * 8, RDX_DEVICE), st,
                     done);
      if (m > 0) st = rdx_cuda_memcpy(ctx, dk, keys, (size_t)m * 8);
      rdx_mem_free(ctx, keys);
      keys = dk;
      if (st != RDX_OK) goto done;
    }
  } else {
    const rdx_jn_ops *ops = rdx_jn_find_ops(RDX_JN_OP_POLYGONS, ctx->backend);
    if (ops == NULL || ops->polygons == NULL) {
      st = rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: no polygon join on backend %s", fn, rdx_backend_name(ctx->backend));
      goto done;
    }
    const rdx_polygons *layer[2] = {r, s};
    const rdx_jn_index *ix[2];
    if (o.progress) o.progress(o.progress_user, rdx_jn_stage_names[RDX_JN_ST_INDEX], 0.0);
    for (int k = 0; k < 2; k++) {
      ix[k] = &layer[k]->index;
      if (!layer[k]->index.built) {
        RDX_CHECK_GOTO(rdx_jn_index_make(ctx, layer[k], o.pad_ulps, o.group_threshold, 0.0, &temp[k]), st, done);
        ix[k] = &temp[k];
      }
    }
    RDX_CHECK_GOTO(ops->polygons(ctx, r, ix[0], s, ix[1], predicate, &track, &keys, &m, want_areas ? &areas : NULL),
                   st, done);
  }
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, &track, RDX_JN_ST_RESULT), st, done);
  st = make_result(ctx, keys, want_areas, &areas, m, out);
  if (st == RDX_OK && stats) {
    const double now = rdx_now_ms();
    stats->ms[RDX_JN_ST_RESULT] += now - track.t;
    stats->total_ms = now - t0;
  }
done:
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, areas);
  rdx_jn_index_free(ctx, &temp[0]);
  rdx_jn_index_free(ctx, &temp[1]);
  return st;
}

void rdx_join_pairs_free(rdx_context *ctx, rdx_join_pairs_result *result) {
  if (result == NULL) return;
  if (ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC) {
    if (result->where == RDX_DEVICE) rdx_mem_release_to_caller(ctx, result->pairs);
    else rdx_mem_free(ctx, result->pairs);
    rdx_mem_free(ctx, result->areas);
  }
  free(result);
}
