/*
 * join.c: the public join-index and point-in-polygon calls (rdx_polygons_build_index,
 * rdx_join_pip_first / _count / _fill / _alloc). Validation, staging and the empty cases live here
 * once, so the PIP ops tables (pip.c, pip.cu) only see valid, non-empty batches in their backend's
 * memory, with f64 points and a built index.
 *
 * The index a join uses: R's own when rdx_polygons_build_index has run (its pad_ulps and
 * group_threshold apply, opts' are not read for it), else a temporary one made with opts' and
 * freed before the call returns.
 *
 * All-or-nothing: build_index replaces the layer's index only once the new one is complete. PIP
 * never changes the layer; outputs are written in place, or, for outputs the backend cannot
 * write directly (host outputs of a GPU context), copied once the whole batch succeeded. A fill
 * checks its caller's offsets against this batch's counts before writing any feature.
 */
#include "join/join.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { PIP_FIRST = 0, PIP_COUNT = 1, PIP_FILL = 2 };

static const char *dtype_name(rdx_dtype d) {
  switch (d) {
    case RDX_U32: return "u32";
    case RDX_U64: return "u64";
    case RDX_I64: return "i64";
    case RDX_F32: return "f32";
    case RDX_F64: return "f64";
  }
  return "non-dtype";
}

rdx_status rdx_jn_get_options(rdx_context *ctx, const char *fn, const rdx_join_options *opts, rdx_join_options *o) {
  rdx_join_options d = RDX_JOIN_OPTIONS_INIT;
  *o = d;
  if (opts != NULL) {
    if (opts->size < sizeof(size_t) || opts->size > (1u << 16))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn, opts->size);
    memcpy(o, opts, opts->size < sizeof *o ? opts->size : sizeof *o);
    o->size = sizeof *o;
  }
  if (o->pad_ulps == 0) o->pad_ulps = RDX_JN_DEFAULT_PAD_ULPS;
  if (o->pad_ulps < 1 || o->pad_ulps > 64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->pad_ulps %d is not in [1, 64]", fn, (int)o->pad_ulps);
  if (o->group_threshold == 0.0) o->group_threshold = RDX_JN_DEFAULT_GROUP;
  if (!(o->group_threshold >= 1.0 && o->group_threshold <= 64.0))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->group_threshold %g is not in [1, 64]", fn,
                    o->group_threshold);
  return RDX_OK;
}

rdx_status rdx_polygons_build_index(rdx_context *ctx, rdx_polygons *layer, const rdx_join_options *opts) {
  static const char fn[] = "rdx_polygons_build_index";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(rdx_jn_check_layer(ctx, fn, layer));
  rdx_join_options o;
  RDX_CHECK(rdx_jn_get_options(ctx, fn, opts, &o));
  return rdx_jn_index_build(ctx, layer, o.pad_ulps, o.group_threshold);
}

/* ---- point in polygon ---- */

static rdx_status check_points(rdx_context *ctx, const char *fn, rdx_array pts) {
  RDX_CHECK(rdx_array_check(ctx, fn, "points", pts));
  if ((pts.dtype != RDX_F32 && pts.dtype != RDX_F64) || pts.columns != 2)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be (n, 2) f32 or f64 (dtype %s, columns %d)", fn,
                    dtype_name(pts.dtype), pts.columns);
  return RDX_OK;
}

/* The outputs of a mode: FIRST a = first (i64, n); COUNT a = counts (u64, n); FILL a = offsets
 * (u64, n + 1) and b = features (i64, or u64 for the alloc call's own rows, >= offsets[n]).
 * *total: a fill's offsets[n]. */
static rdx_status check_outputs(rdx_context *ctx, const char *fn, int mode, int64_t n, rdx_array a, rdx_array b,
                                int internal, uint64_t *total) {
  *total = 0;
  if (mode == PIP_COUNT) return rdx_array_check_u64(ctx, fn, "counts", a, n);
  if (mode == PIP_FIRST) {
    RDX_CHECK(rdx_array_check(ctx, fn, "first", a));
    if (a.dtype != RDX_I64 || a.columns != 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: first must be 1-D i64 (dtype %s, columns %d)", fn,
                      dtype_name(a.dtype), a.columns);
    if (a.count != n)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: first.count %lld != points.count %lld", fn,
                      (long long)a.count, (long long)n);
    return RDX_OK;
  }
  RDX_CHECK(rdx_array_check_u64(ctx, fn, "offsets", a, n + 1));
  RDX_CHECK(rdx_array_check(ctx, fn, "features", b));
  if (!(b.dtype == RDX_I64 || (internal && b.dtype == RDX_U64)) || b.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: features must be 1-D i64 (dtype %s, columns %d)", fn,
                    dtype_name(b.dtype), b.columns);
  RDX_CHECK(rdx_read_u64(ctx, (const uint64_t *)a.data, a.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, n, total));
  if (n == 0 && *total != 0) /* offsets is {0}: its one entry is offsets[n] */
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets[0] is %llu, not 0", fn, (unsigned long long)*total);
  if ((uint64_t)b.count < *total)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: features.count %lld < offsets[%lld] = %llu", fn,
                    (long long)b.count, (long long)n, (unsigned long long)*total);
  return RDX_OK;
}

/* The points as f64 in the compute location: the staged array itself when it is f64 (checked), else
 * a widened copy in *owned. A bad row is RDX_ERR_INVALID_ARGUMENT naming it and its values. */
static rdx_status prepare_points(rdx_context *ctx, const char *fn, const rdx_jn_ops *ops, rdx_array pts,
                                 const void *staged, const double **xy, double **owned) {
  int f32 = pts.dtype == RDX_F32;
  *owned = NULL;
  if (f32)
    RDX_CHECK(rdx_mem_alloc(ctx, fn, (void **)owned, (size_t)pts.count * 16, rdx_compute_location(ctx)));
  int64_t bad = -1;
  rdx_status st = ops->points(ctx, staged, f32, pts.count, *owned, &bad);
  if (st == RDX_OK && bad >= 0) {
    double v[2] = {0.0, 0.0};
    size_t es = f32 ? 4 : 8;
    unsigned char row[16];
    memset(row, 0, sizeof row);
    rdx_location where = pts.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST;
    if (rdx_copy(ctx, row, RDX_HOST, (const unsigned char *)pts.data + (size_t)bad * 2 * es, where, 2 * es) == RDX_OK) {
      for (int k = 0; k < 2; k++) {
        if (f32) {
          float f;
          memcpy(&f, row + 4 * k, 4);
          v[k] = f;
        } else {
          memcpy(&v[k], row + 8 * k, 8);
        }
      }
    }
    if (!isfinite(v[0]) || !isfinite(v[1]))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points row %lld has a non-finite value (%.17g, %.17g)", fn,
                    (long long)bad, v[0], v[1]);
    else
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: points row %lld (%.17g, %.17g) has a coordinate that is neither 0 nor of magnitude in "
                    "[2^-256, 2^256]", fn, (long long)bad, v[0], v[1]);
  }
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *owned);
    *owned = NULL;
    return st;
  }
  *xy = *owned ? *owned : (const double *)staged;
  return RDX_OK;
}

/* Everything after the handle and option checks: the body of the four PIP calls. ix: the index to
 * use, or NULL for R's (or a temporary one). internal: the alloc call's own fill (u64 features and
 * offsets made from this batch's counts). */
static rdx_status pip_run(rdx_context *ctx, const char *fn, const rdx_polygons *r, const rdx_jn_index *ix,
                          rdx_array points, const rdx_join_options *o, int mode, rdx_array a, rdx_array b,
                          int internal) {
  RDX_CHECK(check_points(ctx, fn, points));
  int64_t n = points.count;
  uint64_t total = 0;
  RDX_CHECK(check_outputs(ctx, fn, mode, n, a, b, internal, &total));
  if (n == 0) return RDX_OK;
  const rdx_jn_ops *ops = rdx_jn_find_ops(RDX_JN_OP_PIP, ctx->backend);
  if (ops == NULL)
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "%s: no point in polygon on backend %s", fn, rdx_backend_name(ctx->backend));

  rdx_status st = RDX_OK;
  rdx_staged sp = {0}, sa = {0}, sb = {0};
  double *widened = NULL;
  uint64_t *counts = NULL;
  rdx_jn_index temp;
  memset(&temp, 0, sizeof temp);
  const double *xy = NULL;
  int empty = r->host.n_vertices == 0;
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, points, 1, &sp), st, done);
  RDX_CHECK_GOTO(prepare_points(ctx, fn, ops, points, sp.data, &xy, &widened), st, done);
  if (ix == NULL && !empty) {
    ix = &r->index;
    if (!r->index.built) {
      RDX_CHECK_GOTO(rdx_jn_index_make(ctx, r, o->pad_ulps, o->group_threshold, 0.0, &temp), st, done);
      ix = &temp;
    }
  }
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, a, mode == PIP_FILL, &sa), st, done); /* offsets are inputs */
  rdx_jn_pip_out out;
  memset(&out, 0, sizeof out);
  if (mode == PIP_FILL) {
    out.offsets = (const uint64_t *)sa.data;
    if (!internal) { /* the caller's offsets must be this batch's: count it again */
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, fn, (void **)&counts, (size_t)n * 8, rdx_compute_location(ctx)), st, done);
      rdx_jn_pip_out c;
      memset(&c, 0, sizeof c);
      c.counts = counts;
      RDX_CHECK_GOTO(empty ? rdx_fill_u64(ctx, counts, n, 0) : ops->pip(ctx, r, ix, xy, n, o->planar, &c), st, done);
      RDX_CHECK_GOTO(rdx_csr_check_offsets(ctx, fn, out.offsets, counts, n, "features"), st, done);
    }
    if (total == 0 || empty) goto done; /* nothing to write */
    rdx_array rows = b;
    rows.count = (int64_t)total;
    RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, rows, 0, &sb), st, done);
    out.features = (uint64_t *)sb.data;
    RDX_CHECK_GOTO(ops->pip(ctx, r, ix, xy, n, o->planar, &out), st, done);
    RDX_CHECK_GOTO(rdx_array_unstage(ctx, rows, &sb), st, done);
  } else {
    if (mode == PIP_COUNT) out.counts = (uint64_t *)sa.data;
    else out.first = (int64_t *)sa.data;
    if (empty) RDX_CHECK_GOTO(rdx_fill_u64(ctx, (uint64_t *)sa.data, n, mode == PIP_FIRST), st, done);
    else RDX_CHECK_GOTO(ops->pip(ctx, r, ix, xy, n, o->planar, &out), st, done);
    RDX_CHECK_GOTO(rdx_array_unstage(ctx, a, &sa), st, done);
  }
  if (rdx_is_gpu(ctx)) st = rdx_cuda_sync(ctx, fn);
done:
  rdx_jn_index_free(ctx, &temp);
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, widened);
  rdx_array_release(ctx, &sp);
  rdx_array_release(ctx, &sa);
  rdx_array_release(ctx, &sb);
  return st;
}

static rdx_status pip_public(rdx_context *ctx, const char *fn, const rdx_polygons *r, rdx_array points,
                             const rdx_join_options *opts, int mode, rdx_array a, rdx_array b) {
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(rdx_jn_check_layer(ctx, fn, r));
  rdx_join_options o;
  RDX_CHECK(rdx_jn_get_options(ctx, fn, opts, &o));
  return pip_run(ctx, fn, r, NULL, points, &o, mode, a, b, 0);
}

rdx_status rdx_join_pip_first(rdx_context *ctx, const rdx_polygons *r, rdx_array points, const rdx_join_options *opts,
                              rdx_array first) {
  return pip_public(ctx, "rdx_join_pip_first", r, points, opts, PIP_FIRST, first, rdx_no_array());
}
rdx_status rdx_join_pip_count(rdx_context *ctx, const rdx_polygons *r, rdx_array points, const rdx_join_options *opts,
                              rdx_array counts) {
  return pip_public(ctx, "rdx_join_pip_count", r, points, opts, PIP_COUNT, counts, rdx_no_array());
}
rdx_status rdx_join_pip_fill(rdx_context *ctx, const rdx_polygons *r, rdx_array points, const rdx_join_options *opts,
                             rdx_array offsets, rdx_array features) {
  return pip_public(ctx, "rdx_join_pip_fill", r, points, opts, PIP_FILL, offsets, features);
}

/* ---- convenience: count, scan, allocate, fill (core/result.c), with one index ---- */

typedef struct alloc_arg {
  rdx_context *ctx;
  const rdx_polygons *r;
  const rdx_jn_index *ix;
  rdx_array points;
  const rdx_join_options *o;
} alloc_arg;

static rdx_status alloc_count(void *arg, rdx_array counts) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return pip_run(a->ctx, "rdx_join_pip_alloc", a->r, a->ix, a->points, a->o, PIP_COUNT, counts, rdx_no_array(), 1);
}
static rdx_status alloc_fill(void *arg, rdx_array offsets, rdx_array rows) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return pip_run(a->ctx, "rdx_join_pip_alloc", a->r, a->ix, a->points, a->o, PIP_FILL, offsets, rows, 1);
}

rdx_status rdx_join_pip_alloc(rdx_context *ctx, const rdx_polygons *r, rdx_array points, const rdx_join_options *opts,
                              rdx_result **out) {
  static const char fn[] = "rdx_join_pip_alloc";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  RDX_CHECK(rdx_jn_check_layer(ctx, fn, r));
  rdx_join_options o;
  RDX_CHECK(rdx_jn_get_options(ctx, fn, opts, &o));
  RDX_CHECK(check_points(ctx, fn, points));
  /* one index for the count and the fill: R's, or one temporary index for both */
  rdx_jn_index temp;
  memset(&temp, 0, sizeof temp);
  const rdx_jn_index *ix = &r->index;
  if (!r->index.built && r->host.n_vertices > 0 && points.count > 0) {
    RDX_CHECK(rdx_jn_index_make(ctx, r, o.pad_ulps, o.group_threshold, 0.0, &temp));
    ix = &temp;
  }
  alloc_arg a = {ctx, r, ix, points, &o};
  rdx_status st = rdx_result_make(ctx, fn, points.count, points.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, alloc_count,
                                  alloc_fill, &a, out);
  rdx_jn_index_free(ctx, &temp);
  return st;
}
