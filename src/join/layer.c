/*
 * layer.c: polygon layers, the public rdx_polygons_* calls: validation of the CSR input
 * (feature -> ring -> vertex), the layer's storage (join.h draws it), ring orientation
 * normalization, describe, and load/save dispatch to the file readers in src/io/.
 *
 * Invariants of a made layer (every engine relies on them; a reload of a saved layer makes the
 * identical layer, since each step below is idempotent):
 *  - rings hold no closing repeat and no two consecutive equal vertices, and at least 3 distinct
 *    vertices; every coordinate is finite and 0 or of magnitude in [2^-256, 2^256];
 *  - each ring is stored with its feature's interior on its left: a ring contained (even-odd)
 *    in an even number of its feature's other rings is a shell and runs counter-clockwise, in an
 *    odd number a hole and runs clockwise. Orientation and containment are decided exactly
 *    (rdx_jn_orient), so a layer's storage does not depend on rounding;
 *  - features and rings keep their input positions; only a ring's vertex order may be reversed.
 *
 * Validation runs in three passes over the input on the context's thread pool: (1) check
 * coordinates and count each ring's kept vertices, (2) write the kept vertices and edges into the
 * layer's block, both in chunks of about CHUNK_VERTICES input vertices; (3) orient the rings
 * (layer_orient.c). A failure names the smallest failing ring, so the message does not depend on
 * the thread count.
 */
#include "join/join.h"
#include "join/exact_hd.h"
#include "core/handle.h"

#include "io/layers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_VERTICES ((int64_t)1 << 16)
#define MAX_CHUNKS ((int64_t)1 << 14)

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

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

rdx_status rdx_jn_check_layer(rdx_context *ctx, const char *fn, const rdx_polygons *p) {
  return RDX_HANDLE_CHECK(ctx, fn, p, RDX_POLYGONS_MAGIC, "layer", "a polygon layer");
}

/* ---- storage ---- */

/* Byte offsets of the arrays in a layer's block (host and device blocks share the layout). */
typedef struct block_layout {
  size_t xy, ring_off, feat_off, edge_feat, edge_end, total;
} block_layout;

static block_layout layout_of(int64_t n_features, int64_t n_rings, int64_t n_vertices) {
  block_layout b;
  size_t nv = (size_t)n_vertices;
  b.xy = 0;
  b.ring_off = align_up(b.xy + 16 * nv);
  b.feat_off = align_up(b.ring_off + 8 * ((size_t)n_rings + 1));
  b.edge_feat = align_up(b.feat_off + 8 * ((size_t)n_features + 1));
  b.edge_end = align_up(b.edge_feat + 4 * nv);
  b.total = align_up(b.edge_end + 4 * nv);
  return b;
}

static rdx_jn_arrays arrays_in(void *block, const block_layout *b, int64_t n_features, int64_t n_rings,
                               int64_t n_vertices) {
  rdx_jn_arrays a;
  char *c = (char *)block;
  a.xy = (const double *)(c + b->xy);
  a.ring_off = (const uint64_t *)(c + b->ring_off);
  a.feat_off = (const uint64_t *)(c + b->feat_off);
  a.edge_feat = (const uint32_t *)(c + b->edge_feat);
  a.edge_end = (const uint32_t *)(c + b->edge_end);
  a.n_features = n_features, a.n_rings = n_rings, a.n_vertices = n_vertices;
  return a;
}

static void layer_free_storage(rdx_context *ctx, rdx_polygons *p) {
  if (p->host_block) rdx_mem_free(ctx, p->host_block);
  if (p->dev_block) rdx_mem_free(ctx, p->dev_block);
  p->host_block = p->dev_block = NULL;
}

/* ---- the input, on the host ---- */

typedef struct src_layer {
  const uint64_t *fo, *ro; /* feature_offsets, ring_offsets */
  const float *xy32;       /* exactly one of xy32, xy64 */
  const double *xy64;
  int64_t n_features, n_rings, n_in; /* n_in: input vertices */
} src_layer;

static inline void src_vertex(const src_layer *s, uint64_t i, double *x, double *y) {
  if (s->xy64) *x = s->xy64[2 * i], *y = s->xy64[2 * i + 1];
  else *x = (double)s->xy32[2 * i], *y = (double)s->xy32[2 * i + 1];
}

/* What is wrong with a ring (pass 1). */
enum { FAULT_NONE = 0, FAULT_NAN, FAULT_INF, FAULT_RANGE, FAULT_FEW };
typedef struct ring_fault {
  int64_t ring;     /* the ring, -1 when the chunk has none */
  int what;         /* FAULT_* */
  int64_t vertex;   /* position within the ring as given */
  int axis;         /* 0 x, 1 y */
  double value;
  int distinct;     /* FAULT_FEW: distinct vertices found (0, 1 or 2) */
} ring_fault;

/* 0 for a coordinate a layer may hold, else FAULT_NAN, FAULT_INF or FAULT_RANGE. Inside
 * [RDX_JN_COORD_MIN, RDX_JN_COORD_MAX] = [2^-256, 2^256] the exact predicates' expansions neither
 * overflow nor underflow (exact_hd.h says why, for products of up to three differences). */
static int coord_fault(double v) {
  if (v != v) return FAULT_NAN;
  double a = fabs(v);
  if (a == INFINITY) return FAULT_INF;
  if (a != 0.0 && (a < RDX_JN_COORD_MIN || a > RDX_JN_COORD_MAX)) return FAULT_RANGE;
  return FAULT_NONE;
}

/* The kept vertices of input vertices [a, b): consecutive equal vertices merged (the first
 * kept), then a closing repeat of the first vertex dropped. Writes the first `cap` of them to out
 * (2 doubles each; cap is the count pass 1 returned, so a closing repeat, found only at the end,
 * is never written past the ring's room); returns how many. Coordinates compare with ==, so -0.0
 * equals 0.0. */
static int64_t ring_kept(const src_layer *s, uint64_t a, uint64_t b, double *out, int64_t cap) {
  int64_t kept = 0;
  double fx = 0, fy = 0, lx = 0, ly = 0;
  for (uint64_t i = a; i < b; i++) {
    double x, y;
    src_vertex(s, i, &x, &y);
    if (kept > 0 && x == lx && y == ly) continue;
    if (kept == 0) fx = x, fy = y;
    if (kept < cap) out[2 * kept] = x, out[2 * kept + 1] = y;
    kept++;
    lx = x, ly = y;
  }
  if (kept >= 2 && lx == fx && ly == fy) kept--;
  return kept;
}

/* Up to 3: how many distinct points the input vertices [a, b) hold. */
static int ring_distinct(const src_layer *s, uint64_t a, uint64_t b) {
  double px[2] = {0, 0}, py[2] = {0, 0};
  int n = 0;
  for (uint64_t i = a; i < b && n < 3; i++) {
    double x, y;
    src_vertex(s, i, &x, &y);
    int seen = 0;
    for (int k = 0; k < n; k++) seen |= px[k] == x && py[k] == y;
    if (seen) continue;
    if (n < 2) px[n] = x, py[n] = y;
    n++;
  }
  return n;
}

/* The feature owning ring r: the largest f with fo[f] <= r (fo[n_features] = n_rings > r). */
static int64_t feature_of_ring(const src_layer *s, int64_t r) {
  int64_t lo = 0, hi = s->n_features; /* fo[lo] <= r < fo[hi] */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (s->fo[mid] <= (uint64_t)r) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* The first i in [0, n] with off[i] >= target (off non-decreasing, n + 1 entries). */
static int64_t first_at_least(const uint64_t *off, int64_t n, uint64_t target) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (off[mid] >= target) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* ---- passes 1 and 2: rings ---- */

typedef struct make_job {
  src_layer s;
  int64_t n_chunks;
  int64_t *chunk_ring;   /* n_chunks + 1: chunk c holds rings [chunk_ring[c], chunk_ring[c + 1]) */
  ring_fault *fault;     /* per chunk: its first bad ring */
  uint64_t *kept;        /* n_rings + 1: pass 1 counts, then exclusive offsets */
  double *chunk_box;     /* 4 per chunk: lo x, lo y, hi x, hi y of its kept vertices */
  /* the layer being made */
  double *xy;
  uint64_t *ring_off;
  uint32_t *edge_feat, *edge_end;
} make_job;

static void scan_task(void *arg, int64_t c, int thread) {
  (void)thread;
  make_job *j = (make_job *)arg;
  const src_layer *s = &j->s;
  ring_fault *f = &j->fault[c];
  f->ring = -1;
  for (int64_t r = j->chunk_ring[c]; r < j->chunk_ring[c + 1]; r++) {
    uint64_t a = s->ro[r], b = s->ro[r + 1];
    for (uint64_t i = a; i < b; i++) {
      double v[2];
      src_vertex(s, i, &v[0], &v[1]);
      for (int axis = 0; axis < 2; axis++) {
        int w = coord_fault(v[axis]);
        if (w != FAULT_NONE) {
          f->ring = r, f->what = w, f->vertex = (int64_t)(i - a), f->axis = axis, f->value = v[axis];
          return;
        }
      }
    }
    int64_t k = ring_kept(s, a, b, NULL, 0);
    int d = k < 3 ? (int)k : ring_distinct(s, a, b);
    if (d < 3) {
      f->ring = r, f->what = FAULT_FEW, f->distinct = d;
      return;
    }
    j->kept[r] = (uint64_t)k;
  }
}

static void write_task(void *arg, int64_t c, int thread) {
  (void)thread;
  make_job *j = (make_job *)arg;
  const src_layer *s = &j->s;
  double *cb = &j->chunk_box[4 * c];
  cb[0] = cb[1] = INFINITY, cb[2] = cb[3] = -INFINITY;
  int64_t r0 = j->chunk_ring[c], r1 = j->chunk_ring[c + 1];
  if (r0 >= r1) return;
  int64_t f = feature_of_ring(s, r0);
  for (int64_t r = r0; r < r1; r++) {
    while (s->fo[f + 1] <= (uint64_t)r) f++;
    uint64_t v0 = j->ring_off[r], v1 = j->ring_off[r + 1];
    ring_kept(s, s->ro[r], s->ro[r + 1], j->xy + 2 * v0, (int64_t)(v1 - v0)); /* returns v1 - v0 again */
    for (uint64_t e = v0; e < v1; e++) {
      double x = j->xy[2 * e], y = j->xy[2 * e + 1];
      /* comparisons, not fmin/fmax calls: the coordinates are finite (scan_task checked) */
      cb[0] = x < cb[0] ? x : cb[0], cb[1] = y < cb[1] ? y : cb[1];
      cb[2] = x > cb[2] ? x : cb[2], cb[3] = y > cb[3] ? y : cb[3];
      j->edge_feat[e] = (uint32_t)f;
      j->edge_end[e] = (uint32_t)(e + 1 < v1 ? e + 1 : v0);
    }
  }
}

/* ---- create ---- */

static rdx_status check_offsets(rdx_context *ctx, const char *fn, const char *name, const uint64_t *off, int64_t n,
                                uint64_t last, const char *next) {
  if (off[0] != 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s[0] is %llu, not 0", fn, name, (unsigned long long)off[0]);
  for (int64_t i = 0; i < n; i++)
    if (off[i + 1] < off[i])
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s[%lld] %llu < %s[%lld] %llu (offsets never descend)", fn,
                      name, (long long)(i + 1), (unsigned long long)off[i + 1], name, (long long)i,
                      (unsigned long long)off[i]);
  if (off[n] != last)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s[%lld] is %llu, but there are %llu %s", fn, name,
                    (long long)n, (unsigned long long)off[n], (unsigned long long)last, next);
  return RDX_OK;
}

static rdx_status check_input(rdx_context *ctx, const char *fn, const rdx_polygons_input *in) {
  if (in == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: in is NULL", fn);
  if (in->size < sizeof *in || in->size > (1u << 16))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: in->size %zu is not sizeof(rdx_polygons_input) %zu", fn,
                    in->size, sizeof *in);
  static const char *names[3] = {"feature_offsets", "ring_offsets", "coords"};
  const rdx_array *a[3] = {&in->feature_offsets, &in->ring_offsets, &in->coords};
  for (int i = 0; i < 3; i++) RDX_CHECK(rdx_array_check(ctx, fn, names[i], *a[i]));
  for (int i = 0; i < 2; i++) {
    if (a[i]->dtype != RDX_U64 || a[i]->columns != 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s must be 1-D u64 (dtype %s, columns %d)", fn, names[i],
                      dtype_name(a[i]->dtype), a[i]->columns);
    if (a[i]->count < 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s has no entries (at least the leading 0 is needed)", fn,
                      names[i]);
  }
  if ((in->coords.dtype != RDX_F32 && in->coords.dtype != RDX_F64) || in->coords.columns != 2)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: coords must be (n, 2) f32 or f64 (dtype %s, columns %d)", fn,
                    dtype_name(in->coords.dtype), in->coords.columns);
  int dev = in->feature_offsets.where == RDX_DEVICE;
  for (int i = 1; i < 3; i++)
    if ((a[i]->where == RDX_DEVICE) != dev)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s is in %s memory but feature_offsets in %s memory", fn,
                      names[i], a[i]->where == RDX_DEVICE ? "device" : "host", dev ? "device" : "host");
  if ((uint64_t)in->feature_offsets.count - 1 > RDX_JN_MAX_VERTICES)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld features; a layer holds at most %llu", fn,
                    (long long)in->feature_offsets.count - 1, (unsigned long long)RDX_JN_MAX_VERTICES);
  return RDX_OK;
}

/* The input on the host: the caller's arrays, or copies of device ones in *stage (freed by the
 * caller with rdx_mem_free). */
static rdx_status stage_input(rdx_context *ctx, const char *fn, const rdx_polygons_input *in, src_layer *s,
                              void **stage) {
  memset(s, 0, sizeof *s);
  *stage = NULL;
  s->n_features = in->feature_offsets.count - 1;
  s->n_rings = in->ring_offsets.count - 1;
  s->n_in = in->coords.count;
  size_t es = rdx_dtype_size(in->coords.dtype);
  const void *fo = in->feature_offsets.data, *ro = in->ring_offsets.data, *xy = in->coords.data;
  if (in->feature_offsets.where == RDX_DEVICE) {
    size_t bf = 8 * (size_t)in->feature_offsets.count, br = 8 * (size_t)in->ring_offsets.count;
    size_t bx = 2 * es * (size_t)s->n_in, o_r = align_up(bf), o_x = align_up(o_r + br);
    char *b = NULL;
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_create: the input copied to the host", (void **)&b, o_x + bx,
                            RDX_HOST));
    *stage = b;
    RDX_CHECK(rdx_copy(ctx, b, RDX_HOST, fo, RDX_DEVICE, bf));
    RDX_CHECK(rdx_copy(ctx, b + o_r, RDX_HOST, ro, RDX_DEVICE, br));
    if (bx) RDX_CHECK(rdx_copy(ctx, b + o_x, RDX_HOST, xy, RDX_DEVICE, bx));
    fo = b, ro = b + o_r, xy = b + o_x;
  }
  s->fo = (const uint64_t *)fo;
  s->ro = (const uint64_t *)ro;
  if (in->coords.dtype == RDX_F64) s->xy64 = (const double *)xy;
  else s->xy32 = (const float *)xy;
  RDX_CHECK(check_offsets(ctx, fn, "feature_offsets", s->fo, s->n_features, (uint64_t)s->n_rings, "rings"));
  return check_offsets(ctx, fn, "ring_offsets", s->ro, s->n_rings, (uint64_t)s->n_in, "coords rows");
}

static rdx_status fault_message(rdx_context *ctx, const char *fn, const src_layer *s, const ring_fault *f) {
  int64_t feat = feature_of_ring(s, f->ring), k = f->ring - (int64_t)s->fo[feat];
  if (f->what == FAULT_FEW)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: feature %lld ring %lld has %d distinct vertices (at least 3 needed)",
                    fn, (long long)feat, (long long)k, f->distinct);
  const char *axis = f->axis ? "y" : "x";
  long long row = (long long)(s->ro[f->ring] + (uint64_t)f->vertex);
  if (f->what == FAULT_NAN)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: feature %lld ring %lld vertex %lld (coords row %lld) %s is NaN",
                    fn, (long long)feat, (long long)k, (long long)f->vertex, row, axis);
  if (f->what == FAULT_INF)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: feature %lld ring %lld vertex %lld (coords row %lld) %s is %s",
                    fn, (long long)feat, (long long)k, (long long)f->vertex, row, axis, f->value > 0 ? "inf" : "-inf");
  return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                  "%s: feature %lld ring %lld vertex %lld (coords row %lld) %s %.17g is neither 0 nor of magnitude in "
                  "[2^-256, 2^256]",
                  fn, (long long)feat, (long long)k, (long long)f->vertex, row, axis, f->value);
}

/* Split rings [0, n) into at most max_chunks chunks of about CHUNK_VERTICES input vertices each
 * (off: the rings' n + 1 vertex offsets), in ring order; a chunk may be empty. */
static int64_t split_chunks(const uint64_t *off, int64_t n, uint64_t total, int64_t *bounds, int64_t max_chunks) {
  int64_t nc = (int64_t)(total / (uint64_t)CHUNK_VERTICES) + 1;
  if (nc > max_chunks) nc = max_chunks;
  if (nc > n) nc = n > 0 ? n : 1;
  for (int64_t c = 0; c <= nc; c++) {
    uint64_t target = (uint64_t)((double)total * (double)c / (double)nc);
    bounds[c] = c == nc ? n : c == 0 ? 0 : first_at_least(off, n, target);
  }
  return nc;
}

rdx_status rdx_jn_layer_make(rdx_context *ctx, const char *fn, const rdx_polygons_input *in, int normalized,
                             rdx_polygons **out) {
  RDX_CHECK(check_input(ctx, fn, in));
  rdx_polygons *p = (rdx_polygons *)calloc(1, sizeof *p);
  if (p == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the handle", fn);
  p->magic = RDX_POLYGONS_MAGIC;
  p->ctx = ctx;
  p->dtype = in->coords.dtype;
  make_job j;
  memset(&j, 0, sizeof j);
  void *stage = NULL, *scratch = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(stage_input(ctx, fn, in, &j.s, &stage), st, fail);

  /* pass 1: coordinates, and each ring's kept vertices */
  int64_t nr = j.s.n_rings, nf = j.s.n_features;
  size_t o_chunks = align_up(8 * ((size_t)nr + 1)), o_fault = align_up(o_chunks + 8 * (size_t)(MAX_CHUNKS + 1));
  size_t o_cbox = align_up(o_fault + sizeof(ring_fault) * (size_t)MAX_CHUNKS);
  size_t scratch_bytes = align_up(o_cbox + 32 * (size_t)MAX_CHUNKS);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_polygons_create: scratch", &scratch, scratch_bytes, RDX_HOST), st, fail);
  char *sc = (char *)scratch;
  j.kept = (uint64_t *)sc;
  j.chunk_ring = (int64_t *)(sc + o_chunks);
  j.fault = (ring_fault *)(sc + o_fault);
  j.chunk_box = (double *)(sc + o_cbox);
  j.n_chunks = split_chunks(j.s.ro, nr, (uint64_t)j.s.n_in, j.chunk_ring, MAX_CHUNKS);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j.n_chunks, scan_task, &j), st, fail);
  for (int64_t c = 0; c < j.n_chunks; c++)
    if (j.fault[c].ring >= 0) { /* chunks are in ring order: the first is the smallest */
      st = fault_message(ctx, fn, &j.s, &j.fault[c]);
      goto fail;
    }
  uint64_t nv = 0;
  for (int64_t r = 0; r < nr; r++) {
    uint64_t k = j.kept[r];
    j.kept[r] = nv;
    nv += k;
  }
  j.kept[nr] = nv;
  if (nv > RDX_JN_MAX_VERTICES) {
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the layer has %llu vertices; a layer holds at most %llu", fn,
                  (unsigned long long)nv, (unsigned long long)RDX_JN_MAX_VERTICES);
    goto fail;
  }

  /* pass 2: the layer's block */
  block_layout L = layout_of(nf, nr, (int64_t)nv);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_polygons_create: the layer", &p->host_block, L.total, RDX_HOST), st, fail);
  p->host_bytes = (int64_t)L.total;
  char *hb = (char *)p->host_block;
  j.xy = (double *)(hb + L.xy);
  j.ring_off = (uint64_t *)(hb + L.ring_off);
  j.edge_feat = (uint32_t *)(hb + L.edge_feat);
  j.edge_end = (uint32_t *)(hb + L.edge_end);
  memcpy(j.ring_off, j.kept, 8 * ((size_t)nr + 1));
  memcpy(hb + L.feat_off, j.s.fo, 8 * ((size_t)nf + 1));
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j.n_chunks, write_task, &j), st, fail);
  p->lo[0] = p->lo[1] = INFINITY, p->hi[0] = p->hi[1] = -INFINITY;
  for (int64_t c = 0; c < j.n_chunks; c++) {
    const double *cb = &j.chunk_box[4 * c];
    p->lo[0] = fmin(p->lo[0], cb[0]), p->lo[1] = fmin(p->lo[1], cb[1]);
    p->hi[0] = fmax(p->hi[0], cb[2]), p->hi[1] = fmax(p->hi[1], cb[3]);
  }

  /* pass 3: orientation (layer_orient.c), unless the input says it is done (rdxp.c) */
  if (!normalized)
    RDX_CHECK_GOTO(rdx_jn_orient_rings(ctx, j.xy, j.ring_off, (const uint64_t *)(hb + L.feat_off), j.edge_end, nf, nr),
                   st, fail);

  p->host = arrays_in(p->host_block, &L, nf, nr, (int64_t)nv);
  if (rdx_is_gpu(ctx)) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_polygons_create: the layer on the device", &p->dev_block, L.total,
                                 RDX_DEVICE),
                   st, fail);
    p->dev_bytes = (int64_t)L.total;
    RDX_CHECK_GOTO(rdx_copy(ctx, p->dev_block, RDX_DEVICE, p->host_block, RDX_HOST, L.total), st, fail);
    p->dev = arrays_in(p->dev_block, &L, nf, nr, (int64_t)nv);
  }
  rdx_mem_free(ctx, scratch);
  if (stage) rdx_mem_free(ctx, stage);
  *out = p;
  return RDX_OK;
fail:
  if (scratch) rdx_mem_free(ctx, scratch);
  if (stage) rdx_mem_free(ctx, stage);
  layer_free_storage(ctx, p);
  p->magic = 0;
  free(p);
  return st;
}

rdx_status rdx_polygons_create(rdx_context *ctx, const rdx_polygons_input *in, rdx_polygons **out) {
  static const char fn[] = "rdx_polygons_create";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  return rdx_jn_layer_make(ctx, fn, in, 0, out);
}

void rdx_polygons_destroy(rdx_polygons *layer) {
  if (layer == NULL || layer->magic != RDX_POLYGONS_MAGIC) return;
  rdx_context *ctx = layer->ctx;
  if (ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC) {
    rdx_jn_index_free(ctx, &layer->index);
    layer_free_storage(ctx, layer);
  }
  layer->magic = 0;
  free(layer);
}

int64_t rdx_jn_layer_bytes(const rdx_polygons *p) {
  return p->host_bytes + p->dev_bytes + rdx_jn_index_bytes(&p->index);
}

rdx_status rdx_polygons_describe(rdx_context *ctx, const rdx_polygons *layer, rdx_polygons_info *info) {
  static const char fn[] = "rdx_polygons_describe";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(rdx_jn_check_layer(ctx, fn, layer));
  if (info == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  if (info->size < sizeof *info)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: info->size %zu < %zu", fn, info->size, sizeof *info);
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  info->n_features = layer->host.n_features;
  info->n_rings = layer->host.n_rings;
  info->n_vertices = layer->host.n_vertices;
  info->n_edges = layer->host.n_vertices;
  info->dtype = layer->dtype;
  info->lo[0] = layer->lo[0], info->lo[1] = layer->lo[1], info->hi[0] = layer->hi[0], info->hi[1] = layer->hi[1];
  info->bytes = rdx_jn_layer_bytes(layer);
  info->indexed = layer->index.built != 0;
  for (int64_t f = 0; f < layer->host.n_features; f++)
    info->n_empty += layer->host.feat_off[f] == layer->host.feat_off[f + 1];
  return RDX_OK;
}

/* ---- files ---- */

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

/* The rings of lf with at least 3 distinct vertices, in a block of their own (*block, through
 * the account) that lf's arrays then point into; *n_dropped counts the others and `first` names
 * the first of them. lf's offsets are checked first, as create checks them. */
static rdx_status drop_degenerate(rdx_context *ctx, const char *fn, rdx_layer_file *lf, int64_t *n_dropped,
                                  char *first, size_t cap, void **block) {
  rdx_polygons_input *in = &lf->in;
  src_layer s;
  memset(&s, 0, sizeof s);
  s.n_features = in->feature_offsets.count - 1, s.n_rings = in->ring_offsets.count - 1, s.n_in = in->coords.count;
  s.fo = (const uint64_t *)in->feature_offsets.data, s.ro = (const uint64_t *)in->ring_offsets.data;
  if (in->coords.dtype == RDX_F64) s.xy64 = (const double *)in->coords.data;
  else s.xy32 = (const float *)in->coords.data;
  RDX_CHECK(check_offsets(ctx, fn, "feature offsets", s.fo, s.n_features, (uint64_t)s.n_rings, "rings"));
  RDX_CHECK(check_offsets(ctx, fn, "ring offsets", s.ro, s.n_rings, (uint64_t)s.n_in, "vertices"));
  int64_t dropped = 0, kept_rings = 0;
  uint64_t kept_vertices = 0;
  for (int64_t r = 0; r < s.n_rings; r++) {
    int d = ring_distinct(&s, s.ro[r], s.ro[r + 1]);
    if (d >= 3) {
      kept_rings++, kept_vertices += s.ro[r + 1] - s.ro[r];
      continue;
    }
    if (dropped++ == 0 && cap > 0) {
      int64_t f = feature_of_ring(&s, r);
      snprintf(first, cap, "feature %lld ring %lld, %d distinct vertices", (long long)f, (long long)(r - (int64_t)s.fo[f]),
               d);
    }
  }
  *n_dropped = dropped;
  if (dropped == 0) return RDX_OK;
  size_t es = rdx_dtype_size(in->coords.dtype), bf = 8 * ((size_t)s.n_features + 1), br = 8 * ((size_t)kept_rings + 1);
  char *b = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_load: the rings kept", (void **)&b, align_up(bf) + align_up(br) +
                                                                                       2 * es * kept_vertices,
                          RDX_HOST));
  *block = b;
  uint64_t *fo = (uint64_t *)b, *ro = (uint64_t *)(b + align_up(bf));
  char *xy = b + align_up(bf) + align_up(br);
  const char *src = (const char *)in->coords.data;
  int64_t w = 0;
  fo[0] = 0, ro[0] = 0;
  for (int64_t f = 0; f < s.n_features; f++) {
    for (uint64_t r = s.fo[f]; r < s.fo[f + 1]; r++) {
      if (ring_distinct(&s, s.ro[r], s.ro[r + 1]) < 3) continue;
      size_t n = (size_t)(s.ro[r + 1] - s.ro[r]);
      memcpy(xy + 2 * es * ro[w], src + 2 * es * s.ro[r], 2 * es * n);
      ro[w + 1] = ro[w] + n;
      w++;
    }
    fo[f + 1] = (uint64_t)w;
  }
  in->feature_offsets = rdx_host_array(fo, s.n_features + 1, RDX_U64);
  in->ring_offsets = rdx_host_array(ro, kept_rings + 1, RDX_U64);
  in->coords = rdx_host_matrix(xy, (int64_t)kept_vertices, 2, in->coords.dtype);
  return RDX_OK;
}

static rdx_status load(rdx_context *ctx, const char *path, const char *layer, int drop, int64_t *n_dropped,
                       char *first, size_t cap, rdx_polygons **out) {
  static const char fn[] = "rdx_polygons_load";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  char file[256], name[320];
  rdx_escape(file, sizeof file, path, strlen(path));
  snprintf(name, sizeof name, "%s: %s", fn, file);
  int sniff = rdx_rdxp_sniff(path);
  if (sniff < 0 && strncmp(path, "/vsi", 4) != 0) { /* GDAL's virtual files are not on the disk */
    int e = errno;
    return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot open %s (%s)", fn, file, strerror(e));
  }
  rdx_layer_file lf;
  memset(&lf, 0, sizeof lf);
  rdx_status st;
  if (sniff == 1 || ends_with(path, ".rdxp")) {
    if (layer != NULL)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: layer names select a layer of a GDAL dataset; a .rdxp file "
                      "holds one layer", name);
    st = rdx_rdxp_read(ctx, fn, path, &lf);
  } else {
#ifdef RDX_HAVE_GDAL
    st = rdx_gdal_read(ctx, fn, path, layer, &lf);
#else
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED,
                    "%s: %s is not a .rdxp layer, and this build has no GDAL to read other formats", fn, file);
#endif
  }
  if (st != RDX_OK) return st;
  void *kept = NULL;
  if (drop) st = drop_degenerate(ctx, name, &lf, n_dropped, first, cap, &kept);
  if (st == RDX_OK) st = rdx_jn_layer_make(ctx, name, &lf.in, lf.normalized, out);
  if (kept) rdx_mem_free(ctx, kept);
  rdx_layer_file_free(ctx, &lf);
  /* the file's geometry is bad: a malformed file, whatever the array checks call it */
  if (st == RDX_ERR_INVALID_ARGUMENT) st = RDX_ERR_PARSE;
  return st;
}

rdx_status rdx_polygons_load(rdx_context *ctx, const char *path, const char *layer, rdx_polygons **out) {
  return load(ctx, path, layer, 0, NULL, NULL, 0, out);
}

rdx_status rdx_polygons_load_dropping(rdx_context *ctx, const char *path, const char *layer, rdx_polygons **out,
                                      int64_t *n_dropped, char *first, size_t cap) {
  int64_t n = 0;
  if (cap > 0) first[0] = 0;
  rdx_status st = load(ctx, path, layer, 1, &n, first, cap, out);
  if (n_dropped) *n_dropped = st == RDX_OK ? n : 0;
  return st;
}

rdx_status rdx_polygons_save(rdx_context *ctx, const rdx_polygons *layer, const char *path) {
  static const char fn[] = "rdx_polygons_save";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(rdx_jn_check_layer(ctx, fn, layer));
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  if (path[0] == 0) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is empty", fn);
  rdx_rdxp_layer L;
  L.dtype = layer->dtype;
  L.n_features = layer->host.n_features;
  L.n_rings = layer->host.n_rings;
  L.n_vertices = layer->host.n_vertices;
  L.feat_off = layer->host.feat_off;
  L.ring_off = layer->host.ring_off;
  L.xy = layer->host.xy;
  L.lo[0] = layer->lo[0], L.lo[1] = layer->lo[1], L.hi[0] = layer->hi[0], L.hi[1] = layer->hi[1];
  L.normalized = 1;
  return rdx_rdxp_write(ctx, fn, path, &L);
}

#ifndef RDX_HAVE_GDAL
const char *rdx_gdal_version(void) { return NULL; } /* gdal.c has the real one */
#endif
