/*
 * snapshot.c: rdx_points_save and rdx_points_load, point indexes in raydex's snapshot container
 * (src/io/snapshot.h: header, checksummed sections, crash-safe write).
 *
 * Content kind RDX_SNAP_POINTS. Header fields (u64 each; ints as their 32-bit two's complement,
 * doubles as their IEEE-754 bits):
 *
 *   field  meaning
 *   0      points kind (rdx_points_kind)
 *   1      build method (rdx_points_method)
 *   2      layout (rdx_points_layout)
 *   3      coordinate dtype (RDX_F32 or RDX_F64)
 *   4      count: the points
 *   5      id_end: the id the next inserted point gets (>= count)
 *   6      leaf_capacity
 *   7      max_depth
 *   8..11  the box: xmin, ymin, xmax, ymax (fixed at the build; the load builds with use_box)
 *   12..15 0
 *
 * Sections: 0 "coordinates", count (x, y) pairs in the dtype, by ascending id; 1 "ids", count
 * u64 ids, strictly ascending, each below id_end.
 *
 * The load rebuilds with rdx_points_build and the saved options. Ids are the build's positions,
 * so an index whose ids are 0 .. count - 1 with id_end == count (no erase, no insert left a gap)
 * is built from the points as they are; any other is built from id_end points, the missing ids
 * taken by filler points (copies of a saved point, or the box's corner), which are then erased (rdx_points_erase), so every
 * id and id_end come back and the index answers as the saved one did (raydex.h: after updates an
 * index answers as a fresh build of its points). That costs id_end, not count, points of work.
 * A layout the loading backend lacks (a GPU's dense k-d tree on a CPU) becomes that backend's
 * default: layouts change how updates run, never an answer.
 */
#include "spatial/spatial.h"
#include "core/handle.h"
#include "io/snapshot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { F_KIND, F_METHOD, F_LAYOUT, F_DTYPE, F_COUNT, F_ID_END, F_CAP, F_DEPTH, F_BOX };
#define MAX_POINTS ((uint64_t)1 << 54)
#define MAX_GAP_FACTOR 4
static const char *const NAMES[2] = {"coordinates", "ids"};

static uint64_t int_field(int v) { return (uint64_t)(uint32_t)v; }

rdx_status rdx_points_save(rdx_context *ctx, const rdx_points *pts, const char *path) {
  static const char fn[] = "rdx_points_save";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(RDX_HANDLE_CHECK(ctx, fn, pts, RDX_POINTS_MAGIC, "pts", "a point index"));
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  /* the host copy of the nodes is a cache of the index (points.c), made current here */
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, (rdx_points *)pts));
  const rdx_sp_nodes *H = &pts->host;
  int64_t n = pts->n, cap = pts->pool.cap;
  size_t es = pts->f64 ? 8 : 4;
  rdx_status st = RDX_OK;
  void *px = NULL, *py = NULL, *pid = NULL; /* the pool on the host (copies on GPUs) */
  uint64_t *ids = NULL, *slots = NULL;
  unsigned char *xy = NULL;
  const char *what = "rdx_points_save: the points on the host";
  if (rdx_is_gpu(ctx) && cap > 0) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &px, (size_t)cap * es, RDX_HOST), st, done);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &py, (size_t)cap * es, RDX_HOST), st, done);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, &pid, (size_t)cap * 8, RDX_HOST), st, done);
    RDX_CHECK_GOTO(rdx_copy(ctx, px, RDX_HOST, pts->pool.x, RDX_DEVICE, (size_t)cap * es), st, done);
    RDX_CHECK_GOTO(rdx_copy(ctx, py, RDX_HOST, pts->pool.y, RDX_DEVICE, (size_t)cap * es), st, done);
    RDX_CHECK_GOTO(rdx_copy(ctx, pid, RDX_HOST, pts->pool.id, RDX_DEVICE, (size_t)cap * 8), st, done);
  }
  const unsigned char *X = (const unsigned char *)(px ? px : pts->pool.x);
  const unsigned char *Y = (const unsigned char *)(py ? py : pts->pool.y);
  const uint64_t *ID = (const uint64_t *)(pid ? pid : pts->pool.id);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&ids, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&slots, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&xy, (size_t)n * 2 * es, RDX_HOST), st, done);
  /* every live point is in exactly one leaf's slots [fpos, fpos + len) (spatial.h) */
  int64_t k = 0;
  for (int64_t i = 0; i < H->n; i++) {
    if (!H->leaf[i]) continue;
    if (H->len[i] < 0 || H->fpos[i] < 0 || H->fpos[i] + H->len[i] > cap || k + H->len[i] > n) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: leaf %lld's slots [%lld, +%lld) do not fit the pool (%lld slots, %lld "
                    "points)", fn, (long long)i, (long long)H->fpos[i], (long long)H->len[i], (long long)cap, (long long)n);
      goto done;
    }
    for (int64_t s = H->fpos[i]; s < H->fpos[i] + H->len[i]; s++) ids[k] = ID[s], slots[k++] = (uint64_t)s;
  }
  if (k != n) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the leaves hold %lld points, the index %lld", fn, (long long)k, (long long)n);
    goto done;
  }
  int bits = 0;
  while (bits < 64 && (pts->id_end >> bits) != 0) bits++;
  RDX_CHECK_GOTO(rdx_sp_radix_sort_cpu(ctx, ids, slots, n, 0, bits), st, done);
  for (int64_t i = 0; i < n; i++) {
    memcpy(xy + (2 * i) * es, X + slots[i] * es, es);
    memcpy(xy + (2 * i + 1) * es, Y + slots[i] * es, es);
  }
  rdx_snap_header h;
  memset(&h, 0, sizeof h);
  h.content = RDX_SNAP_POINTS;
  h.n_sections = 2;
  h.field[F_KIND] = (uint64_t)pts->kind;
  h.field[F_METHOD] = (uint64_t)pts->method;
  h.field[F_LAYOUT] = (uint64_t)pts->layout;
  h.field[F_DTYPE] = (uint64_t)pts->dtype;
  h.field[F_COUNT] = (uint64_t)n;
  h.field[F_ID_END] = pts->id_end;
  h.field[F_CAP] = int_field(pts->cap);
  h.field[F_DEPTH] = int_field(pts->depth);
  h.field[F_BOX + 0] = rdx_snap_f64_bits(pts->grid.x0);
  h.field[F_BOX + 1] = rdx_snap_f64_bits(pts->grid.y0);
  h.field[F_BOX + 2] = rdx_snap_f64_bits(pts->grid.x1);
  h.field[F_BOX + 3] = rdx_snap_f64_bits(pts->grid.y1);
  rdx_snap_out s[2] = {{xy, 2 * (uint64_t)n, (int)es}, {ids, (uint64_t)n, 8}};
  st = rdx_snap_write(ctx, fn, path, &h, s);
done:
  rdx_mem_free(ctx, px);
  rdx_mem_free(ctx, py);
  rdx_mem_free(ctx, pid);
  rdx_mem_free(ctx, ids);
  rdx_mem_free(ctx, slots);
  rdx_mem_free(ctx, xy);
  return st;
}

/* ---- load ---- */

static rdx_status parse_fail(rdx_context *ctx, const rdx_snap_file *f, const char *what, int field, uint64_t v) {
  return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: %s (header field %d) is 0x%llx, which is not one", f->name,
                  what, field, (unsigned long long)v);
}

/* Build with o; a layout this backend lacks gives way to its default (see the file comment). */
static rdx_status build(rdx_context *ctx, rdx_array points, rdx_points_options *o, rdx_points **out) {
  rdx_status st = rdx_points_build(ctx, points, o, out);
  if (st == RDX_ERR_UNSUPPORTED && o->layout != 0) {
    o->layout = (rdx_points_layout)0;
    st = rdx_points_build(ctx, points, o, out);
  }
  return st;
}

rdx_status rdx_points_load(rdx_context *ctx, const char *path, rdx_points **out) {
  static const char fn[] = "rdx_points_load";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  rdx_snap_file f;
  RDX_CHECK(rdx_snap_open(ctx, fn, path, RDX_SNAP_POINTS, 2, &f));
  rdx_status st = RDX_OK;
  unsigned char *xy = NULL;
  uint64_t *fill_ids = NULL;
  rdx_points *pts = NULL;
  const uint64_t *F = f.h.field;
  if (F[F_KIND] != RDX_POINTS_QUADTREE && F[F_KIND] != RDX_POINTS_KDTREE) {
    st = parse_fail(ctx, &f, "the points kind", F_KIND, F[F_KIND]);
    goto done;
  }
  if (F[F_METHOD] != RDX_POINTS_BOTTOM_UP && F[F_METHOD] != RDX_POINTS_TOP_DOWN) {
    st = parse_fail(ctx, &f, "the build method", F_METHOD, F[F_METHOD]);
    goto done;
  }
  if (F[F_LAYOUT] != RDX_POINTS_PAGED && F[F_LAYOUT] != RDX_POINTS_DENSE) {
    st = parse_fail(ctx, &f, "the layout", F_LAYOUT, F[F_LAYOUT]);
    goto done;
  }
  if (F[F_DTYPE] != RDX_F32 && F[F_DTYPE] != RDX_F64) {
    st = parse_fail(ctx, &f, "the coordinate dtype (f32 or f64)", F_DTYPE, F[F_DTYPE]);
    goto done;
  }
  if (F[F_CAP] > INT32_MAX || F[F_DEPTH] > INT32_MAX) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: leaf capacity %llu or max depth %llu is no int", f.name,
                  (unsigned long long)F[F_CAP], (unsigned long long)F[F_DEPTH]);
    goto done;
  }
  if (F[F_COUNT] > MAX_POINTS || F[F_ID_END] > MAX_POINTS || F[F_COUNT] > F[F_ID_END]) {
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: count %llu and id_end %llu (expected count <= id_end "
                  "<= 2^54)", f.name, (unsigned long long)F[F_COUNT], (unsigned long long)F[F_ID_END]);
    goto done;
  }
  for (int i = F_BOX + 4; i < RDX_SNAP_FIELDS; i++)
    if (F[i] != 0) {
      st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: header field %d is %llu, expected 0", f.name, i,
                    (unsigned long long)F[i]);
      goto done;
    }
  rdx_dtype dtype = (rdx_dtype)F[F_DTYPE];
  size_t es = dtype == RDX_F64 ? 8 : 4;
  int64_t n = (int64_t)F[F_COUNT];
  uint64_t id_end = F[F_ID_END];
  uint64_t bytes[2] = {F[F_COUNT] * 2 * es, F[F_COUNT] * 8};
  RDX_CHECK_GOTO(rdx_snap_sections(ctx, &f, bytes, NAMES), st, done);
  const unsigned char *ids = (const unsigned char *)f.data[1];
  for (int64_t i = 0; i < n; i++) {
    uint64_t id = rdx_snap_le64(ids + 8 * i);
    if (id >= id_end || (i > 0 && id <= rdx_snap_le64(ids + 8 * (i - 1)))) {
      st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: ids[%lld] = %llu is not above the id before it and "
                    "below id_end %llu", f.name, (long long)i, (unsigned long long)id, (unsigned long long)id_end);
      goto done;
    }
  }
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = (rdx_points_kind)F[F_KIND];
  o.method = (rdx_points_method)F[F_METHOD];
  o.layout = (rdx_points_layout)F[F_LAYOUT];
  o.leaf_capacity = (int)F[F_CAP];
  o.max_depth = (int)F[F_DEPTH];
  o.use_box = true;
  for (int i = 0; i < 4; i++) o.box[i] = rdx_snap_bits_f64(F[F_BOX + i]);

  /* Fillers at the missing ids cost id_end points of work and memory: a file whose gaps pass
   * MAX_GAP_FACTOR times its points (and 2^16) is refused rather than sized from a header field
   * alone (a build that takes the ids themselves would lift this). */
  if (id_end - (uint64_t)n > MAX_GAP_FACTOR * (uint64_t)n + ((uint64_t)1 << 16)) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %s holds %lld points whose ids reach %llu: gaps of more than %d times "
                  "the points (and 2^16) cannot be restored yet", fn, f.name, (long long)n, (unsigned long long)id_end,
                  MAX_GAP_FACTOR);
    goto done;
  }
  /* The points to build from: the section in place where ids are 0 .. n - 1 on a little-endian
   * host, else id_end points in our memory, fillers at the missing ids. */
  int dense = id_end == (uint64_t)n;
  const void *pts_in = f.data[0];
  uint64_t m = dense ? (uint64_t)n : id_end;
  if (!dense || !rdx_snap_host_le()) {
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_load: the points", (void **)&xy, (size_t)m * 2 * es, RDX_HOST), st,
                   done);
    const unsigned char *src = (const unsigned char *)f.data[0];
    /* The filler: a saved point (inside the box), else the box's low corner, as an f32 inside it */
    unsigned char fill[2][8];
    for (int c = 0; c < 2 && !dense; c++) {
      if (n > 0) {
        memcpy(fill[c], src + c * es, es);
        if (!rdx_snap_host_le() && es == 8) {
          uint64_t v = rdx_snap_le64(src + c * 8);
          memcpy(fill[c], &v, 8);
        } else if (!rdx_snap_host_le()) {
          uint32_t v = rdx_snap_le32(src + c * 4);
          memcpy(fill[c], &v, 4);
        }
      } else if (es == 8) {
        memcpy(fill[c], &o.box[c], 8);
      } else {
        float v = (float)o.box[c];
        if ((double)v < o.box[c]) v = nextafterf(v, INFINITY);
        if (!((double)v <= o.box[c + 2])) {
          st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %s: an empty f32 index with id_end %llu over a box no f32 value "
                        "lies in cannot be restored", fn, f.name, (unsigned long long)id_end);
          goto done;
        }
        memcpy(fill[c], &v, 4);
      }
    }
    int64_t next = 0; /* the next saved point, by id */
    for (uint64_t id = 0; id < m; id++) {
      unsigned char *d = xy + id * 2 * es;
      int have = next < n && rdx_snap_le64(ids + 8 * next) == id;
      for (int c = 0; c < 2; c++, d += es) {
        if (!have) { /* a filler, erased below */
          memcpy(d, fill[c], es);
        } else if (es == 8) {
          uint64_t v = rdx_snap_le64(src + (2 * next + c) * 8);
          memcpy(d, &v, 8);
        } else {
          uint32_t v = rdx_snap_le32(src + (2 * next + c) * 4);
          memcpy(d, &v, 4);
        }
      }
      next += have;
    }
    pts_in = xy;
  }
  st = build(ctx, rdx_host_matrix(pts_in, (int64_t)m, 2, dtype), &o, &pts);
  if (st == RDX_OK && !dense) {
    int64_t n_fill = (int64_t)(id_end - (uint64_t)n), k = 0, next = 0;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_load: the missing ids", (void **)&fill_ids, (size_t)n_fill * 8,
                                 RDX_HOST), st, done);
    for (uint64_t id = 0; id < id_end; id++) {
      if (next < n && rdx_snap_le64(ids + 8 * next) == id) next++;
      else fill_ids[k++] = id;
    }
    st = rdx_points_erase(ctx, pts, rdx_host_array(fill_ids, n_fill, RDX_U64));
  }
  if (st == RDX_ERR_INVALID_ARGUMENT) { /* options or points that no saved index has */
    char why[sizeof ctx->message], file[256];
    snprintf(why, sizeof why, "%s", rdx_context_message(ctx));
    rdx_escape(file, sizeof file, path, strlen(path));
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: %s: corrupted snapshot: its points are refused by the build (%s)", fn, file,
                  why);
  }
done:
  if (st != RDX_OK) rdx_points_destroy(pts);
  else *out = pts;
  if (f.bytes) rdx_snap_close(ctx, &f);
  rdx_mem_free(ctx, xy);
  rdx_mem_free(ctx, fill_ids);
  return st;
}
