/*
 * points.c: the public calls of the spatial point indexes. Validation, staging into the
 * backend's memory, the empty cases and the memory bookkeeping live here once; then each call
 * runs the index's ops table (spatial.h, registry.c), whose functions see only valid, non-empty
 * input in their own memory.
 *
 * All-or-nothing: a build makes a new object and frees everything on failure; queries never
 * change an index; updates validate the whole batch and take every allocation before the first
 * write (update.c and its engines).
 */
#include "spatial/spatial.h"
#include "core/handle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- node and pool storage ---- */

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

rdx_status rdx_sp_nodes_alloc(rdx_context *ctx, int64_t n, rdx_location where, rdx_sp_nodes *out) {
  memset(out, 0, sizeof *out);
  size_t un = (size_t)(n > 0 ? n : 0);
  size_t o_key = 0, o_fpos = align_up(o_key + 8 * un), o_len = align_up(o_fpos + 8 * un),
         o_count = align_up(o_len + 8 * un), o_room = align_up(o_count + 8 * un), o_split = align_up(o_room + 8 * un),
         o_level = align_up(o_split + 8 * un), o_leaf = align_up(o_level + un), total = align_up(o_leaf + un);
  char *b = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: tree nodes", (void **)&b, total, where));
  out->n = out->cap = n;
  out->block = b;
  out->where = where;
  out->key = (uint64_t *)(b + o_key);
  out->fpos = (int64_t *)(b + o_fpos);
  out->len = (int64_t *)(b + o_len);
  out->count = (int64_t *)(b + o_count);
  out->room = (int64_t *)(b + o_room);
  out->split = (double *)(b + o_split);
  out->level = (uint8_t *)(b + o_level);
  out->leaf = (uint8_t *)(b + o_leaf);
  return RDX_OK;
}

static size_t nodes_bytes(int64_t n) {
  size_t un = (size_t)(n > 0 ? n : 0);
  size_t o = 0;
  for (int i = 0; i < 6; i++) o = align_up(o + 8 * un);
  o = align_up(o + un);
  return align_up(o + un);
}

void rdx_sp_nodes_free(rdx_context *ctx, rdx_sp_nodes *nodes) {
  if (nodes->block) rdx_mem_free(ctx, nodes->block);
  memset(nodes, 0, sizeof *nodes);
}

rdx_status rdx_sp_nodes_empty(rdx_context *ctx, rdx_location where, rdx_sp_nodes *out) {
  rdx_sp_nodes h;
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, 1, RDX_HOST, &h));
  h.key[0] = 0, h.fpos[0] = 0, h.len[0] = 0, h.count[0] = 0, h.room[0] = 0, h.split[0] = 0;
  h.level[0] = 0, h.leaf[0] = 1;
  if (where == RDX_HOST) {
    *out = h;
    return RDX_OK;
  }
  rdx_status st = rdx_sp_nodes_alloc(ctx, 1, where, out);
  if (st == RDX_OK) st = rdx_sp_nodes_copy(ctx, out, &h);
  if (st != RDX_OK) rdx_sp_nodes_free(ctx, out);
  rdx_sp_nodes_free(ctx, &h);
  return st;
}

rdx_status rdx_sp_nodes_copy(rdx_context *ctx, rdx_sp_nodes *dst, const rdx_sp_nodes *src) {
  if (dst->n != src->n)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points: node copy of %lld into %lld nodes", (long long)src->n,
                    (long long)dst->n);
  if (src->n == 0) return RDX_OK;
  /* Same layout: one copy, padding included, except from the device to the host: there the
   * padding was never written, and compute-sanitizer's initcheck would flag the copy. */
  if (dst->block && src->block && dst->cap == src->n && src->cap == src->n &&
      !(src->where == RDX_DEVICE && dst->where == RDX_HOST))
    return rdx_copy(ctx, dst->block, dst->where, src->block, src->where, nodes_bytes(src->n));
  size_t n = (size_t)src->n; /* field by field */
  void *d[8] = {dst->key, dst->fpos, dst->len, dst->count, dst->room, dst->split, dst->level, dst->leaf};
  const void *sp[8] = {src->key, src->fpos, src->len, src->count, src->room, src->split, src->level, src->leaf};
  for (int i = 0; i < 8; i++) RDX_CHECK(rdx_copy(ctx, d[i], dst->where, sp[i], src->where, i < 6 ? 8 * n : n));
  return RDX_OK;
}

rdx_status rdx_sp_pool_alloc(rdx_context *ctx, int64_t cap, int f64, int key_bytes, rdx_sp_pool *out) {
  memset(out, 0, sizeof *out);
  rdx_location loc = rdx_compute_location(ctx);
  size_t c = (size_t)(cap > 0 ? cap : 0), es = f64 ? 8 : 4;
  size_t o_y = align_up(c * es), o_id = align_up(o_y + c * es), total = align_up(o_id + 8 * c);
  char *b = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: point pool", (void **)&b, total, loc));
  if (key_bytes > 0) {
    rdx_status st = rdx_mem_alloc(ctx, "rdx_points: point keys", &out->key, c * (size_t)key_bytes, loc);
    if (st != RDX_OK) {
      rdx_mem_free(ctx, b);
      return st;
    }
  }
  out->block = b;
  out->x = b;
  out->y = b + o_y;
  out->id = (uint64_t *)(b + o_id);
  out->cap = cap;
  out->used = 0;
  out->key_bytes = out->key ? key_bytes : 0;
  return RDX_OK;
}

void rdx_sp_pool_free(rdx_context *ctx, rdx_sp_pool *pool) {
  if (pool->block) rdx_mem_free(ctx, pool->block);
  if (pool->key) rdx_mem_free(ctx, pool->key);
  memset(pool, 0, sizeof *pool);
}

static int64_t pool_bytes(const rdx_points *pts) {
  size_t c = (size_t)pts->pool.cap, es = pts->f64 ? 8 : 4;
  int64_t b = (int64_t)align_up(align_up(align_up(c * es) + c * es) + 8 * c);
  b += (int64_t)(c * (size_t)pts->pool.key_bytes);
  return b;
}

void rdx_sp_storage_free(rdx_context *ctx, rdx_points *pts) {
  rdx_sp_pool_free(ctx, &pts->pool);
  rdx_sp_nodes_free(ctx, &pts->nodes);
  rdx_sp_nodes_free(ctx, &pts->host);
  if (pts->slot) rdx_mem_free(ctx, pts->slot);
  rdx_sp_drop_pages(ctx, pts);
  if (pts->live) rdx_mem_free(ctx, pts->live);
  if (pts->arena) rdx_mem_free(ctx, pts->arena);
  pts->slot = NULL, pts->live = NULL, pts->arena = NULL, pts->arena_bytes = 0;
}

int64_t rdx_sp_resident(const rdx_points *pts) {
  int64_t b = pool_bytes(pts) + (int64_t)nodes_bytes(pts->nodes.cap > pts->nodes.n ? pts->nodes.cap : pts->nodes.n);
  if (pts->host.block) b += (int64_t)nodes_bytes(pts->host.n);
  if (pts->slot) b += pts->slot_cap * 8;
  b += pts->pfree_bytes;
  if (pts->live) b += (pts->live_bits / 32 + 1) * 4;
  return b + (int64_t)pts->arena_bytes;
}

static rdx_sp_view view_with(const rdx_points *pts, const rdx_sp_nodes *nd) {
  rdx_sp_view v;
  memset(&v, 0, sizeof v);
  v.key = nd->key;
  v.fpos = nd->fpos;
  v.len = nd->len;
  v.split = nd->split;
  v.level = nd->level;
  v.leaf = nd->leaf;
  v.n_nodes = nd->n;
  v.x = pts->pool.x;
  v.y = pts->pool.y;
  v.id = pts->pool.id;
  v.f64 = pts->f64;
  v.kd = pts->kind == RDX_POINTS_KDTREE;
  v.pkey = v.kd ? NULL : pts->pool.key; /* k-d pool keys are leaf codes */
  v.key64 = pts->key64;
  v.g = pts->grid;
  return v;
}
rdx_sp_view rdx_sp_view_of(const rdx_points *pts) { return view_with(pts, &pts->nodes); }
rdx_sp_view rdx_sp_host_view_of(const rdx_points *pts) { return view_with(pts, &pts->host); }

rdx_status rdx_sp_sync_host_nodes(rdx_context *ctx, rdx_points *pts) {
  if (pts->nodes.where == RDX_HOST) {
    pts->host = pts->nodes;
    pts->host.block = NULL; /* an alias: never freed through host */
    return RDX_OK;
  }
  if (!pts->host_stale && pts->host.block) return RDX_OK;
  if (pts->host.block && pts->host.n != pts->nodes.n) rdx_sp_nodes_free(ctx, &pts->host);
  if (pts->host.block == NULL) RDX_CHECK(rdx_sp_nodes_alloc(ctx, pts->nodes.n, RDX_HOST, &pts->host));
  RDX_CHECK(rdx_sp_nodes_copy(ctx, &pts->host, &pts->nodes));
  pts->host_stale = 0;
  return RDX_OK;
}

/* ---- grid ---- */

static rdx_sp_grid make_grid(const double *box, int depth) {
  rdx_sp_grid g;
  memset(&g, 0, sizeof g);
  g.x0 = box[0], g.y0 = box[1], g.x1 = box[2], g.y1 = box[3];
  g.depth = depth;
  double cells = ldexp(1.0, depth);
  g.max_cell = (uint32_t)(cells - 1.0);
  double w = g.x1 - g.x0, h = g.y1 - g.y0;
  g.sx = w > 0 ? cells / w : 0.0;
  g.sy = h > 0 ? cells / h : 0.0;
  g.cw = w / cells;
  g.ch = h / cells;
  /* a few ulps of the box's magnitude cover the rounding of cell corners (geom_hd.h) */
  g.slack = 1e-13 * (fabs(g.x0) + fabs(g.x1) + fabs(g.y0) + fabs(g.y1) + w + h) + 1e-300;
  return g;
}

/* ---- handles ---- */

static rdx_status check_points(rdx_context *ctx, const char *fn, const rdx_points *pts) {
  return RDX_HANDLE_CHECK(ctx, fn, pts, RDX_POINTS_MAGIC, "pts", "a point index");
}

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

/* Read row `row` (cols values) of a staged array to the host for a message. */
static void read_row(rdx_context *ctx, const void *data, int f64, int64_t row, int cols, double *v) {
  size_t es = f64 ? 8 : 4;
  unsigned char buf[64];
  memset(buf, 0, sizeof buf);
  const unsigned char *src = (const unsigned char *)data + (size_t)row * (size_t)cols * es;
  rdx_location loc = rdx_compute_location(ctx);
  if (rdx_copy(ctx, buf, RDX_HOST, src, loc, (size_t)cols * es) != RDX_OK) memset(buf, 0, sizeof buf);
  for (int i = 0; i < cols; i++) {
    if (f64) {
      double d;
      memcpy(&d, buf + 8 * i, 8);
      v[i] = d;
    } else {
      float f;
      memcpy(&f, buf + 4 * i, 4);
      v[i] = f;
    }
  }
}

/* Scan staged rows and turn the first violation into the sentence. */
static rdx_status scan_rows(rdx_context *ctx, const rdx_sp_ops *ops, const char *fn, const char *name, const void *data,
                            int f64, int64_t rows, int cols, const double *box, int radius_col, rdx_sp_scan *out) {
  rdx_status st = ops->scan(ctx, data, f64, rows, cols, box, radius_col, out);
  if (st != RDX_OK || out->bad_row < 0) return st;
  double v[4] = {0, 0, 0, 0};
  read_row(ctx, data, f64, out->bad_row, cols, v);
  char vals[160];
  if (cols == 2) snprintf(vals, sizeof vals, "%.17g, %.17g", v[0], v[1]);
  else if (cols == 3) snprintf(vals, sizeof vals, "%.17g, %.17g, %.17g", v[0], v[1], v[2]);
  else snprintf(vals, sizeof vals, "%.17g, %.17g, %.17g, %.17g", v[0], v[1], v[2], v[3]);
  if (out->bad_what == 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s row %lld has a non-finite value (%s)", fn, name,
                    (long long)out->bad_row, vals);
  if (out->bad_what == 3)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s row %lld has a negative radius (%s)", fn, name,
                    (long long)out->bad_row, vals);
  return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s row %lld (%s) lies outside the index box [%.17g, %.17g] x [%.17g, %.17g]",
                  fn, name, (long long)out->bad_row, vals, box[0], box[2], box[1], box[3]);
}

static rdx_status check_point_array(rdx_context *ctx, const char *fn, const char *name, rdx_array a, int want_dtype) {
  RDX_CHECK(rdx_array_check(ctx, fn, name, a));
  if ((a.dtype != RDX_F32 && a.dtype != RDX_F64) || a.columns != 2)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s must be (n, 2) f32 or f64 (dtype %s, columns %d)", fn, name,
                    dtype_name(a.dtype), a.columns);
  if (want_dtype && a.dtype != (rdx_dtype)want_dtype)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.dtype %s != the index's dtype %s", fn, name, dtype_name(a.dtype),
                    dtype_name((rdx_dtype)want_dtype));
  return RDX_OK;
}

rdx_status rdx_points_build_ex(rdx_context *ctx, rdx_array points, const rdx_points_options *opts, int debug,
                               rdx_points **out) {
  static const char fn[] = "rdx_points_build";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  if (opts != NULL) {
    if (opts->size < sizeof(size_t) + sizeof(rdx_points_kind) || opts->size > (1u << 16))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn, opts->size);
    memset(&o, 0, sizeof o);
    memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    o.size = sizeof o;
  }
  if (o.kind == 0) o.kind = RDX_POINTS_QUADTREE;
  if (o.kind != RDX_POINTS_QUADTREE && o.kind != RDX_POINTS_KDTREE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->kind 0x%x is not an rdx_points_kind", fn, (unsigned)o.kind);
  if (o.method == 0) o.method = RDX_POINTS_BOTTOM_UP;
  if (o.method != RDX_POINTS_BOTTOM_UP && o.method != RDX_POINTS_TOP_DOWN)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->method 0x%x is not an rdx_points_method", fn,
                    (unsigned)o.method);
  const rdx_sp_ops *ops = rdx_sp_find_ops(o.kind, ctx->backend);
  if (ops == NULL)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: kind 0x%x is not available on backend %s", fn, (unsigned)o.kind,
                    rdx_backend_name(ctx->backend));
  if (o.method == RDX_POINTS_TOP_DOWN && !ops->top_down)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: opts->method top-down applies to quadtrees; the %s has one build method", fn, ops->name);
  if (o.leaf_capacity == 0) o.leaf_capacity = RDX_SP_DEFAULT_CAPACITY;
  if (o.leaf_capacity < 1 || o.leaf_capacity > (1 << 30))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->leaf_capacity %d is not in [1, 2^30]", fn, o.leaf_capacity);
  if (o.max_depth == 0) o.max_depth = ops->default_depth;
  if (o.max_depth < 1 || o.max_depth > ops->max_depth)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->max_depth %d is not in [1, %d] for a %s", fn, o.max_depth,
                    ops->max_depth, ops->name);
  if (o.layout == 0) o.layout = ops->default_layout;
  if (o.layout != RDX_POINTS_PAGED && o.layout != RDX_POINTS_DENSE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->layout 0x%x is not an rdx_points_layout", fn,
                    (unsigned)o.layout);
  if (rdx_sp_engine_of(ops, o.layout)->update == NULL)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %s", fn, ops->one_layout);
  if (o.use_box) {
    for (int i = 0; i < 4; i++)
      if (!isfinite(o.box[i]))
        return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->box[%d] %g is not finite", fn, i, o.box[i]);
    if (!(o.box[0] <= o.box[2] && o.box[1] <= o.box[3]))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->box [%g, %g] x [%g, %g] has min > max", fn, o.box[0],
                      o.box[2], o.box[1], o.box[3]);
  }
  RDX_CHECK(check_point_array(ctx, fn, "points", points, 0));

  rdx_points *pts = (rdx_points *)calloc(1, sizeof *pts);
  if (pts == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the handle", fn);
  pts->magic = RDX_POINTS_MAGIC;
  pts->ctx = ctx;
  pts->ops = ops;
  pts->kind = o.kind;
  pts->method = o.method;
  pts->layout = o.layout;
  pts->dtype = points.dtype;
  pts->f64 = points.dtype == RDX_F64;
  pts->cap = o.leaf_capacity;
  pts->depth = o.max_depth;
  pts->key64 = ops->morton && o.max_depth > 16;
  pts->n = points.count;
  pts->id_end = (uint64_t)points.count;

  int64_t base = ctx->in_use, saved_peak = ctx->peak;
  ctx->peak = ctx->in_use;
  rdx_status st = RDX_OK;
  rdx_staged sp = {0};
  double box[4] = {0, 0, 0, 0};
  if (o.use_box) memcpy(box, o.box, sizeof box);
  if (points.count > 0) {
    RDX_CHECK_GOTO(rdx_array_stage(ctx, "rdx_points_build: staging points", points, 1, &sp), st, fail);
    rdx_sp_scan sc;
    RDX_CHECK_GOTO(
        scan_rows(ctx, ops, fn, "points", sp.data, pts->f64, points.count, 2, o.use_box ? o.box : NULL, -1, &sc), st,
        fail);
    if (!o.use_box) memcpy(box, sc.box, sizeof box);
  }
  pts->grid = make_grid(box, ops->morton ? o.max_depth : 16);
  if (points.count == 0) {
    /* the empty index: a root leaf holding nothing */
    RDX_CHECK_GOTO(rdx_sp_pool_alloc(ctx, 0, pts->f64, ops->morton ? (pts->key64 ? 8 : 4) : 0, &pts->pool), st, fail);
    RDX_CHECK_GOTO(rdx_sp_nodes_empty(ctx, rdx_compute_location(ctx), &pts->nodes), st, fail);
    RDX_CHECK_GOTO(rdx_sp_sync_host_nodes(ctx, pts), st, fail);
  } else {
    rdx_sp_build_in in;
    in.xy = sp.data;
    in.n = points.count;
    in.debug = debug;
    RDX_CHECK_GOTO(ops->build(ctx, pts, &in), st, fail);
    /* the host copy: an alias of host nodes, made now; a copy of device ones, when first needed */
    pts->host_stale = 1;
    if (pts->nodes.where == RDX_HOST) RDX_CHECK_GOTO(rdx_sp_sync_host_nodes(ctx, pts), st, fail);
  }
  rdx_array_release(ctx, &sp);
  pts->peak = ctx->peak - base;
  if (saved_peak > ctx->peak) ctx->peak = saved_peak;
  *out = pts;
  return RDX_OK;
fail:
  rdx_array_release(ctx, &sp);
  ops->destroy(ctx, pts);
  if (saved_peak > ctx->peak) ctx->peak = saved_peak;
  free(pts);
  return st;
}

rdx_status rdx_points_build(rdx_context *ctx, rdx_array points, const rdx_points_options *opts, rdx_points **out) {
  return rdx_points_build_ex(ctx, points, opts, 0, out);
}

void rdx_points_destroy(rdx_points *pts) {
  if (pts == NULL || pts->magic != RDX_POINTS_MAGIC) return;
  rdx_context *ctx = pts->ctx;
  if (ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC) pts->ops->destroy(ctx, pts);
  free(pts);
}

int64_t rdx_points_count(const rdx_points *pts) {
  return pts != NULL && pts->magic == RDX_POINTS_MAGIC ? pts->n : 0;
}

rdx_status rdx_points_bytes(rdx_context *ctx, const rdx_points *pts, int64_t *resident, int64_t *peak) {
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_points(ctx, "rdx_points_bytes", pts));
  if (resident) *resident = pts->ops->bytes(pts);
  if (peak) *peak = pts->peak;
  return RDX_OK;
}

rdx_status rdx_points_describe(rdx_context *ctx, const rdx_points *pts, rdx_points_info *info) {
  static const char fn[] = "rdx_points_describe";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_points(ctx, fn, pts));
  if (info == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  if (info->size < sizeof *info)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: info->size %zu < %zu", fn, info->size, sizeof *info);
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  info->kind = pts->kind;
  info->method = pts->method;
  info->dtype = pts->dtype;
  info->count = pts->n;
  info->id_end = pts->id_end;
  info->leaf_capacity = pts->cap;
  info->max_depth = pts->depth;
  info->box[0] = pts->grid.x0, info->box[1] = pts->grid.y0, info->box[2] = pts->grid.x1, info->box[3] = pts->grid.y1;
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, (rdx_points *)pts)); /* a cache: refreshing it is no change */
  info->n_nodes = pts->host.n;
  for (int64_t i = 0; i < pts->host.n; i++) {
    info->n_leaves += pts->host.leaf[i];
    if (pts->host.level[i] > info->depth) info->depth = pts->host.level[i];
  }
  return RDX_OK;
}

rdx_sp_stats rdx_sp_stats_of(const rdx_points *pts) { return pts->stats; }

rdx_status rdx_sp_tree_of(rdx_context *ctx, const rdx_points *pts, rdx_sp_tree *out) {
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, (rdx_points *)pts)); /* a cache: refreshing it is no change */
  const rdx_sp_nodes *h = &pts->host;
  out->n_nodes = h->n;
  out->key = h->key, out->fpos = h->fpos, out->len = h->len, out->count = h->count;
  out->level = h->level, out->leaf = h->leaf;
  return RDX_OK;
}

rdx_status rdx_sp_export_points(rdx_context *ctx, const rdx_points *pts, double *x, double *y, uint64_t *id) {
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, (rdx_points *)pts));
  int64_t used = pts->pool.used; /* the slots leaves may hold */
  size_t es = pts->f64 ? 8 : 4;
  void *hx = malloc((size_t)(used ? used : 1) * es), *hy = malloc((size_t)(used ? used : 1) * es);
  uint64_t *hid = (uint64_t *)malloc((size_t)(used ? used : 1) * 8);
  rdx_status st = RDX_OK;
  if (!hx || !hy || !hid) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_sp_export_points: %lld slots", (long long)used);
    goto done;
  }
  rdx_location loc = rdx_compute_location(ctx);
  if (used > 0) {
    RDX_CHECK_GOTO(rdx_copy(ctx, hx, RDX_HOST, pts->pool.x, loc, (size_t)used * es), st, done);
    RDX_CHECK_GOTO(rdx_copy(ctx, hy, RDX_HOST, pts->pool.y, loc, (size_t)used * es), st, done);
    RDX_CHECK_GOTO(rdx_copy(ctx, hid, RDX_HOST, pts->pool.id, loc, (size_t)used * 8), st, done);
  }
  int64_t w = 0;
  for (int64_t i = 0; i < pts->host.n; i++) {
    if (!pts->host.leaf[i]) continue;
    if (pts->host.fpos[i] < 0 || pts->host.len[i] < 0 || pts->host.fpos[i] + pts->host.len[i] > used) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_sp_export_points: leaf %lld holds slots [%lld, +%lld), past the %lld used",
                    (long long)i, (long long)pts->host.fpos[i], (long long)pts->host.len[i], (long long)used);
      goto done;
    }
    for (int64_t s = pts->host.fpos[i]; s < pts->host.fpos[i] + pts->host.len[i]; s++) {
      if (w >= pts->n) {
        st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_sp_export_points: leaves hold more than %lld points", (long long)pts->n);
        goto done;
      }
      x[w] = rdx_sp_at(hx, s, pts->f64);
      y[w] = rdx_sp_at(hy, s, pts->f64);
      id[w] = hid[s];
      w++;
    }
  }
  if (w != pts->n)
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_sp_export_points: leaves hold %lld points, index has %lld", (long long)w,
                  (long long)pts->n);
done:
  free(hx);
  free(hy);
  free(hid);
  return st;
}

/* ---- queries ---- */

typedef enum { Q_COUNT, Q_FILL } qop;

static int query_columns(rdx_points_query_type t) {
  return t == RDX_POINTS_WINDOW ? 4 : t == RDX_POINTS_WITHIN ? 3 : 2;
}

static rdx_status check_query(rdx_context *ctx, const char *fn, const rdx_points *pts, rdx_array queries,
                              const rdx_points_query *query, rdx_sp_qin *in) {
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_points(ctx, fn, pts));
  if (query == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query is NULL", fn);
  rdx_points_query q = RDX_POINTS_QUERY_INIT;
  if (query->size < sizeof(size_t) + sizeof(rdx_points_query_type) || query->size > (1u << 16))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->size %zu is not a valid size", fn, query->size);
  memset(&q, 0, sizeof q);
  memcpy(&q, query, query->size < sizeof q ? query->size : sizeof q);
  int type;
  switch (q.type) {
    case RDX_POINTS_MATCH: type = RDX_SP_MATCH; break;
    case RDX_POINTS_WINDOW: type = RDX_SP_WINDOW; break;
    case RDX_POINTS_WITHIN: type = RDX_SP_WITHIN; break;
    case RDX_POINTS_KNN: type = RDX_SP_KNN; break;
    default:
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->type 0x%x is not an rdx_points_query_type", fn,
                      (unsigned)q.type);
  }
  if (type == RDX_SP_KNN && (q.k < 1 || q.k > RDX_SP_MAX_K))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->k %d is not in [1, %d]", fn, q.k, RDX_SP_MAX_K);
  RDX_CHECK(rdx_array_check(ctx, fn, "queries", queries));
  int cols = query_columns(q.type);
  if (queries.dtype != pts->dtype || queries.columns != cols)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries must be (m, %d) %s for this query type and index (dtype %s, columns %d)",
                    fn, cols, dtype_name(pts->dtype), dtype_name(queries.dtype), queries.columns);
  in->type = type;
  in->k = type == RDX_SP_KNN ? q.k : 0;
  in->q = NULL;
  in->m = queries.count;
  return RDX_OK;
}

static rdx_status run_query(rdx_context *ctx, const rdx_points *pts, qop op, rdx_array queries,
                            const rdx_points_query *query, rdx_array a, rdx_array b) {
  const char *fn = op == Q_COUNT ? "rdx_points_query_count" : "rdx_points_query_fill";
  rdx_sp_qin in;
  RDX_CHECK(check_query(ctx, fn, pts, queries, query, &in));
  int64_t m = queries.count;
  uint64_t total = 0;
  if (op == Q_FILL) RDX_CHECK(rdx_csr_fill_begin(ctx, fn, m, a, b, &total)); /* core/csr.c, as the key fills */
  else RDX_CHECK(rdx_array_check_u64(ctx, fn, "counts", a, m));
  if (m == 0) return RDX_OK;

  rdx_status st = RDX_OK;
  rdx_staged sq = {0}, sa = {0}, sb = {0};
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, queries, 1, &sq), st, done);
  rdx_sp_scan sc;
  RDX_CHECK_GOTO(scan_rows(ctx, pts->ops, fn, "queries", sq.data, pts->f64, m, query_columns(query->type), NULL,
                           in.type == RDX_SP_WITHIN ? 2 : -1, &sc),
                 st, done);
  RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, a, op == Q_FILL, &sa), st, done); /* offsets are an input */
  in.q = sq.data;
  if (op == Q_COUNT) {
    if (pts->n == 0)
      st = rdx_fill_u64(ctx, (uint64_t *)sa.data, m, 0);
    else
      st = pts->ops->query(ctx, pts, &in, (uint64_t *)sa.data, NULL, NULL);
    if (st == RDX_OK) st = rdx_array_unstage(ctx, a, &sa);
  } else {
    if (pts->n == 0) {
      if (total != 0)
        st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets[%lld] = %llu but the index is empty", fn, (long long)m,
                      (unsigned long long)total);
      goto done;
    }
    rdx_array rows_out = b;
    rows_out.count = (int64_t)total;
    RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, rows_out, 0, &sb), st, done);
    st = pts->ops->query(ctx, pts, &in, NULL, (const uint64_t *)sa.data, (uint64_t *)sb.data);
    if (st == RDX_OK) st = rdx_array_unstage(ctx, rows_out, &sb);
  }
  if (st == RDX_OK && pts->ops->sync) st = pts->ops->sync(ctx, fn);
done:
  rdx_array_release(ctx, &sq);
  rdx_array_release(ctx, &sa);
  rdx_array_release(ctx, &sb);
  return st;
}

rdx_status rdx_points_query_count(rdx_context *ctx, const rdx_points *pts, rdx_array queries,
                                  const rdx_points_query *query, rdx_array counts) {
  return run_query(ctx, pts, Q_COUNT, queries, query, counts, rdx_no_array());
}

rdx_status rdx_points_query_fill(rdx_context *ctx, const rdx_points *pts, rdx_array queries,
                                 const rdx_points_query *query, rdx_array offsets, rdx_array row_ids) {
  return run_query(ctx, pts, Q_FILL, queries, query, offsets, row_ids);
}

typedef struct alloc_arg {
  rdx_context *ctx;
  const rdx_points *pts;
  rdx_array queries;
  const rdx_points_query *query;
} alloc_arg;

static rdx_status alloc_count(void *arg, rdx_array counts) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return rdx_points_query_count(a->ctx, a->pts, a->queries, a->query, counts);
}
static rdx_status alloc_fill(void *arg, rdx_array offsets, rdx_array rows) {
  const alloc_arg *a = (const alloc_arg *)arg;
  return rdx_points_query_fill(a->ctx, a->pts, a->queries, a->query, offsets, rows);
}

rdx_status rdx_points_query_alloc(rdx_context *ctx, const rdx_points *pts, rdx_array queries,
                                  const rdx_points_query *query, rdx_result **out) {
  static const char fn[] = "rdx_points_query_alloc";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  rdx_sp_qin in;
  RDX_CHECK(check_query(ctx, fn, pts, queries, query, &in));
  alloc_arg a = {ctx, pts, queries, query};
  return rdx_result_make(ctx, fn, queries.count, queries.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, alloc_count,
                         alloc_fill, &a, out);
}

/* ---- updates ---- */

static rdx_status check_ids(rdx_context *ctx, const char *fn, rdx_array ids) {
  RDX_CHECK(rdx_array_check(ctx, fn, "ids", ids));
  if ((ids.dtype != RDX_U32 && ids.dtype != RDX_U64) || ids.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                    dtype_name(ids.dtype), ids.columns);
  return RDX_OK;
}

static rdx_status run_update(rdx_context *ctx, rdx_points *pts, int op, rdx_array ids, rdx_array points,
                             uint64_t *first_id) {
  const char *fn = op == RDX_SP_MOVE ? "rdx_points_move" : op == RDX_SP_INSERT ? "rdx_points_insert" : "rdx_points_erase";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(check_points(ctx, fn, pts));
  if (op == RDX_SP_INSERT && first_id) *first_id = pts->id_end;
  int64_t m;
  if (op != RDX_SP_INSERT) RDX_CHECK(check_ids(ctx, fn, ids));
  if (op != RDX_SP_ERASE) RDX_CHECK(check_point_array(ctx, fn, "points", points, pts->dtype));
  if (op == RDX_SP_MOVE && ids.count != points.count)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids.count %lld != points.count %lld", fn, (long long)ids.count,
                    (long long)points.count);
  m = op == RDX_SP_INSERT ? points.count : ids.count;
  if (m == 0) return RDX_OK;
  if (op == RDX_SP_INSERT && pts->id_end > (uint64_t)INT64_MAX - (uint64_t)m)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids would pass 2^63", fn);

  rdx_status st = RDX_OK;
  rdx_staged si = {0}, sp = {0};
  if (op != RDX_SP_INSERT) RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, ids, 1, &si), st, done);
  rdx_sp_batch b;
  memset(&b, 0, sizeof b);
  double box[4] = {pts->grid.x0, pts->grid.y0, pts->grid.x1, pts->grid.y1};
  rdx_sp_scan sc;
  if (op != RDX_SP_ERASE) {
    RDX_CHECK_GOTO(rdx_array_stage(ctx, fn, points, 1, &sp), st, done);
    b.check_xy = pts->ops->checks_xy; /* in the update's first kernel, not a pass of its own */
    if (!b.check_xy) RDX_CHECK_GOTO(scan_rows(ctx, pts->ops, fn, "points", sp.data, pts->f64, m, 2, box, -1, &sc), st, done);
  }
  b.op = op;
  b.m = m;
  b.ids = si.data;
  b.ids64 = ids.dtype == RDX_U64;
  b.xy = sp.data;
  b.first_id = pts->id_end;
  st = rdx_sp_update(ctx, pts, &b);
  if (b.bad_xy) { /* the update saw a bad point and changed nothing: the scan says which */
    rdx_clear_message(ctx);
    st = scan_rows(ctx, pts->ops, fn, "points", sp.data, pts->f64, m, 2, box, -1, &sc);
    if (st == RDX_OK) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the update and the scan disagree on the points", fn);
    goto done;
  }
  if (st == RDX_OK && pts->ops->sync) st = pts->ops->sync(ctx, fn);
done:
  rdx_array_release(ctx, &si);
  rdx_array_release(ctx, &sp);
  return st;
}

rdx_status rdx_points_move(rdx_context *ctx, rdx_points *pts, rdx_array ids, rdx_array points) {
  return run_update(ctx, pts, RDX_SP_MOVE, ids, points, NULL);
}
rdx_status rdx_points_insert(rdx_context *ctx, rdx_points *pts, rdx_array points, uint64_t *first_id) {
  return run_update(ctx, pts, RDX_SP_INSERT, rdx_no_array(), points, first_id);
}
rdx_status rdx_points_erase(rdx_context *ctx, rdx_points *pts, rdx_array ids) {
  return run_update(ctx, pts, RDX_SP_ERASE, ids, rdx_no_array(), NULL);
}
