/*
 * points.c: distributed point indexes over a communicator (rdx_dist_points_*): G-PICS's point
 * index on several ranks (issue 33 item 3). Each rank's shard is an ordinary rdx_points of its own
 * context over the index's whole box, so every kind, layout and backend serves as a shard
 * unchanged; this file is plain C over the public calls and the transport table of dist.h.
 *
 * Partitioning: a 2^31 x 2^31 Morton grid of the box; each rank owns the codes in
 * (splitters[r-1], splitters[r]], splitters chosen from a stratified sample (split.c, as keys.c
 * chooses them). The partition table (splitters, each rank's point count and a box holding its points) is
 * replicated on every rank, with each rank's code range as a few blocks of the grid (cover_of).
 * Queries are routed by the boxes and the blocks together (each tighter than the other where the
 * range cuts a block, and exact with the same rounded arithmetic as the shards,
 * spatial/geom_hd.h); kNN starts at the rank owning the query's code and widens to the ranks
 * within the k-th distance found there.
 *
 * Ids: the shard numbers its points itself (build order, then insert order, never reused), so
 * each rank keeps the map both ways (l2g: shard id -> index id, and a hash map back) and a copy of
 * its points' coordinates (for kNN distances and for undoing a migration). Results are mapped to
 * index ids and sorted as one index would sort them.
 *
 * A call is a series of local phases, each ended by an agreement (rdx_comm_agree), and the
 * collectives between them; outputs are written only after the last agreement. All exchanged
 * data is host memory: device inputs are read to the host first.
 */
#include "dist/dist.h"
#include "keys/hash_hd.h"
#include "dist/points_hd.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RDX_DIST_POINTS_MAGIC 0x52444450u /* "RDDP" */

/* gid -> shard id: open addressing, linear probing, backward-shift deletion; capacity a power of
 * two kept at least twice the entries. RDX_MISS (never an index id) marks an empty slot. */
typedef struct idmap {
  uint64_t *keys;
  int64_t *vals;
  int64_t cap, n;
} idmap;

struct rdx_dist_points {
  uint32_t magic;          /* RDX_DIST_POINTS_MAGIC while alive */
  rdx_comm *comm;          /* borrowed */
  rdx_points *shard;       /* owned, in comm->ctx */
  rdx_dtype dtype;         /* RDX_F32 or RDX_F64 */
  int32_t kind;            /* rdx_points_kind, defaults applied */
  int64_t id;              /* the communicator's serial of this build */
  int64_t n_total;         /* points over every rank */
  uint64_t id_end;         /* the id the next inserted point gets (equal on every rank) */
  double box[4];           /* the index space */
  uint64_t *splitters;     /* size - 1 ascending codes (account) */
  double *boxes;           /* size x 4: a box holding each rank's points (account) */
  double *cover;           /* size x RDX_DIST_COVER_MAX x 4: each rank's codes as blocks of the grid
                              (cover_of; account) */
  int64_t *n_cover;        /* size: how many blocks each rank has (account) */
  int64_t *counts;         /* size: each rank's points now (account) */
  /* this rank's shard ids 0 .. n_slots - 1 */
  int64_t n_slots, cap_slots;
  uint64_t *l2g;           /* cap_slots: index id, RDX_MISS when gone (account) */
  double *xy;              /* 2 x cap_slots: coordinates, exact doubles of the dtype (account) */
  idmap map;               /* index id -> shard id, for the ids this rank holds; made by the first
                              update (map_ready): queries never need it */
  int map_made;
  uint64_t *l2g_dev;       /* l2g[0 .. n_slots) and xy[0 .. 2 n_slots) on a GPU context's device,
                              for the device path: caches made by the first device query after a
                              change (account) */
  double *xy_dev;
  int l2g_ascending;       /* with l2g_dev: l2g ascends over the ids still held */
  int damaged;             /* an undo failed: refuse every later call */
};

typedef enum dp_op { OP_BUILD = 1, OP_QUERY, OP_MOVE, OP_INSERT, OP_ERASE } dp_op;
static const char *op_name(dp_op op) {
  switch (op) {
    case OP_BUILD: return "rdx_dist_points_build";
    case OP_QUERY: return "rdx_dist_points_query_alloc";
    case OP_MOVE: return "rdx_dist_points_move";
    case OP_INSERT: return "rdx_dist_points_insert";
    case OP_ERASE: return "rdx_dist_points_erase";
  }
  return "?";
}

/* What a rank brings to a call, gathered and compared with rank 0's. */
typedef struct desc {
  int32_t op, dtype, kind, method, leaf_capacity, max_depth, use_box, layout;
  int32_t have_ids, id_dtype, qtype, k;
  double box[4];           /* build: the given box (0 unless use_box) */
  int64_t index_id;
  /* not compared */
  int32_t gpu;             /* query: this rank can answer on its GPU (points_gpu.cu) */
  int64_t count;
  double mybox[4];         /* build: the tight box of this rank's points */
  uint64_t max_id;         /* build: the largest id given (0 when none) */
} desc;

static const char *qtype_name(int32_t t) {
  return t == RDX_POINTS_MATCH ? "match" : t == RDX_POINTS_WINDOW ? "window" : t == RDX_POINTS_WITHIN ? "within" : t == RDX_POINTS_KNN ? "knn" : "?";
}

static rdx_status compare(rdx_comm *comm, const char *fn, const desc *all) {
  const desc *a = &all[0];
  for (int r = 1; r < comm->size; r++) {
    const desc *b = &all[r];
    char what[200] = "";
    if (b->op != a->op)
      snprintf(what, sizeof what, "the call (rank 0 %s, rank %d %s)", op_name((dp_op)a->op), r, op_name((dp_op)b->op));
    else if (b->index_id != a->index_id)
      snprintf(what, sizeof what, "the index (rank 0 passed its index %lld, rank %d its index %lld)", (long long)a->index_id, r,
               (long long)b->index_id);
    else if (b->dtype != a->dtype)
      snprintf(what, sizeof what, "the dtype (rank 0 %s, rank %d %s)", rdx_dist_dtype_name(a->dtype), r, rdx_dist_dtype_name(b->dtype));
    else if (b->kind != a->kind || b->method != a->method || b->leaf_capacity != a->leaf_capacity ||
             b->max_depth != a->max_depth || b->layout != a->layout)
      snprintf(what, sizeof what,
               "the options (rank 0 kind 0x%x, method 0x%x, leaf_capacity %d, max_depth %d, layout 0x%x; rank %d 0x%x, 0x%x, %d, %d, 0x%x)",
               (unsigned)a->kind, (unsigned)a->method, a->leaf_capacity, a->max_depth, (unsigned)a->layout, r,
               (unsigned)b->kind, (unsigned)b->method, b->leaf_capacity, b->max_depth, (unsigned)b->layout);
    else if (b->use_box != a->use_box || memcmp(a->box, b->box, sizeof a->box) != 0)
      snprintf(what, sizeof what, "the box (rank 0 %s [%g, %g, %g, %g], rank %d %s [%g, %g, %g, %g])",
               a->use_box ? "given" : "computed", a->box[0], a->box[1], a->box[2], a->box[3], r,
               b->use_box ? "given" : "computed", b->box[0], b->box[1], b->box[2], b->box[3]);
    else if (b->have_ids != a->have_ids)
      snprintf(what, sizeof what, "whether ids are given (rank 0 %s, rank %d %s)", a->have_ids ? "yes" : "no", r,
               b->have_ids ? "yes" : "no");
    else if (b->id_dtype != a->id_dtype)
      snprintf(what, sizeof what, "the ids' dtype (rank 0 %s, rank %d %s)", rdx_dist_dtype_name(a->id_dtype), r, rdx_dist_dtype_name(b->id_dtype));
    else if (b->qtype != a->qtype || b->k != a->k)
      snprintf(what, sizeof what, "the query (rank 0 %s k %d, rank %d %s k %d)", qtype_name(a->qtype), a->k, r,
               qtype_name(b->qtype), b->k);
    if (what[0]) return rdx_fail(comm->ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the ranks disagree on %s", fn, what);
  }
  return RDX_OK;
}

/* ---- helpers ---- */

/* A host copy of a's bytes (count x columns elements), read from the device where it lives. */
static rdx_status host_copy(rdx_context *ctx, const char *fn, rdx_array a, void **out) {
  const size_t es = rdx_dtype_size(a.dtype);
  const int64_t n = a.count * a.columns;
  *out = NULL;
  RDX_CHECK(rdx_dist_take(ctx, fn, out, n, es));
  if (n == 0) return RDX_OK;
  rdx_status st = rdx_copy(ctx, *out, RDX_HOST, a.data, a.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, (size_t)n * es);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *out);
    *out = NULL;
  }
  return st;
}

static double at_d(const void *p, rdx_dtype dt, int64_t i) { return rdx_sp_at(p, i, dt == RDX_F64); }
static void put_d(void *p, rdx_dtype dt, int64_t i, double v) {
  if (dt == RDX_F64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v; /* exact: v is a float's value */
}
static uint64_t at_id(const void *p, rdx_dtype dt, int64_t i) {
  return dt == RDX_U32 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}

/* A kNN candidate: ordered by distance, then id, as rdx_points orders kNN answers. */
typedef struct cand {
  double d2;
  uint64_t gid;
} cand;
static int cmp_cand(const void *a, const void *b) {
  const cand *x = (const cand *)a, *y = (const cand *)b;
  if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

/* ---- the id map ---- */

static int64_t map_slot(const idmap *m, uint64_t gid) {
  return (int64_t)(rdx_hash_mix64(gid) & (uint64_t)(m->cap - 1));
}
static int64_t map_find(const idmap *m, uint64_t gid) {
  if (m->cap == 0) return -1;
  for (int64_t s = map_slot(m, gid);; s = (s + 1) & (m->cap - 1)) {
    if (m->keys[s] == RDX_MISS) return -1;
    if (m->keys[s] == gid) return m->vals[s];
  }
}
/* Insert or overwrite; the capacity must already hold it (map_reserve). */
static void map_put(idmap *m, uint64_t gid, int64_t lid) {
  int64_t s = map_slot(m, gid);
  while (m->keys[s] != RDX_MISS && m->keys[s] != gid) s = (s + 1) & (m->cap - 1);
  if (m->keys[s] == RDX_MISS) m->n++;
  m->keys[s] = gid;
  m->vals[s] = lid;
}
static void map_del(idmap *m, uint64_t gid) {
  if (m->cap == 0) return;
  int64_t s = map_slot(m, gid);
  while (m->keys[s] != gid) {
    if (m->keys[s] == RDX_MISS) return;
    s = (s + 1) & (m->cap - 1);
  }
  /* backward shift: pull later entries of the run into the hole when their home allows it */
  for (int64_t j = (s + 1) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
    if (m->keys[j] == RDX_MISS) break;
    int64_t home = map_slot(m, m->keys[j]);
    /* j's entry may move to s when s lies cyclically in [home, j) */
    int movable = s <= j ? (home <= s || home > j) : (home <= s && home > j);
    if (movable) {
      m->keys[s] = m->keys[j];
      m->vals[s] = m->vals[j];
      s = j;
    }
  }
  m->keys[s] = RDX_MISS;
  m->n--;
}
static void map_free(rdx_context *ctx, idmap *m) {
  rdx_mem_free(ctx, m->keys);
  rdx_mem_free(ctx, m->vals);
  memset(m, 0, sizeof *m);
}
/* Room for n entries (rehashing into a larger table when needed); on failure m is unchanged. */
static rdx_status map_reserve(rdx_context *ctx, const char *fn, idmap *m, int64_t n) {
  int64_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= m->cap) return RDX_OK;
  idmap t = {NULL, NULL, cap, 0};
  rdx_status st = rdx_dist_take(ctx, fn, &t.keys, cap, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &t.vals, cap, 8);
  if (st != RDX_OK) {
    map_free(ctx, &t);
    return st;
  }
  for (int64_t s = 0; s < cap; s++) t.keys[s] = RDX_MISS;
  for (int64_t s = 0; s < m->cap; s++)
    if (m->keys[s] != RDX_MISS) map_put(&t, m->keys[s], m->vals[s]);
  map_free(ctx, m);
  *m = t;
  return RDX_OK;
}

/* The id map of d's live shard ids, made from l2g the first time an update needs it (a build
 * makes none: an index only queried never pays for it); on failure d is unchanged. */
static rdx_status map_ready(rdx_context *ctx, const char *fn, rdx_dist_points *d) {
  if (d->map_made) return RDX_OK;
  int64_t live = 0;
  for (int64_t j = 0; j < d->n_slots; j++) live += d->l2g[j] != RDX_MISS;
  RDX_CHECK(map_reserve(ctx, fn, &d->map, live));
  for (int64_t j = 0; j < d->n_slots; j++)
    if (d->l2g[j] != RDX_MISS) map_put(&d->map, d->l2g[j], j);
  d->map_made = 1;
  return RDX_OK;
}

/* Room for cap shard ids in l2g and xy; on failure d is unchanged. */
static rdx_status slots_reserve(rdx_context *ctx, const char *fn, rdx_dist_points *d, int64_t cap) {
  if (cap <= d->cap_slots) return RDX_OK;
  if (cap < 2 * d->cap_slots) cap = 2 * d->cap_slots;
  uint64_t *l2g = NULL;
  double *xy = NULL;
  rdx_status st = rdx_dist_take(ctx, fn, &l2g, cap, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &xy, 2 * cap, 8);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, l2g);
    rdx_mem_free(ctx, xy);
    return st;
  }
  if (d->n_slots) {
    memcpy(l2g, d->l2g, (size_t)d->n_slots * 8);
    memcpy(xy, d->xy, (size_t)d->n_slots * 16);
  }
  rdx_mem_free(ctx, d->l2g);
  rdx_mem_free(ctx, d->xy);
  d->l2g = l2g;
  d->xy = xy;
  d->cap_slots = cap;
  return RDX_OK;
}

/* ---- the partition ---- */

static int owner_of(const rdx_dist_points *d, double x, double y) {
  return d->comm->size == 1 ? 0 : rdx_dist_owner_of_code(d->splitters, d->comm->size, rdx_dist_code_of(d->box, x, y));
}

/* Given ids must be unique over all ranks: each id goes to the rank its hash picks, which sorts
 * what it got and reports the smallest repeated id; agreed, so every rank refuses alike. */
static rdx_status check_unique(rdx_comm *comm, const char *fn, const uint64_t *ids, int64_t n) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  int64_t *cnt = NULL;
  uint64_t *send = NULL, *recv = NULL;
  rdx_status st = rdx_dist_take(ctx, fn, &cnt, 3 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send, n, 8);
  int64_t *sc = cnt, *rc = cnt + size, *cur = cnt + 2 * size;
  if (st == RDX_OK) {
    for (int p = 0; p < size; p++) sc[p] = 0;
    for (int64_t i = 0; i < n; i++) sc[(rdx_hash_mix64(ids[i]) & 0xFFFFFFFFull) * (uint64_t)size >> 32]++;
    for (int64_t p = 0, at = 0; p < size; at += sc[p], p++) cur[p] = at;
    for (int64_t i = 0; i < n; i++) send[cur[(rdx_hash_mix64(ids[i]) & 0xFFFFFFFFull) * (uint64_t)size >> 32]++] = ids[i];
  }
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, sc, rc), st, done);
  int64_t m = 0;
  for (int p = 0; p < size; p++) m += rc[p];
  st = rdx_dist_take(ctx, fn, &recv, m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send, sc, recv, rc, 8), st, done);
  qsort(recv, (size_t)m, 8, rdx_dist_cmp_u64);
  for (int64_t i = 1; i < m && st == RDX_OK; i++)
    if (recv[i] == recv[i - 1])
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: id %llu is given twice (ids must be unique over all ranks)", fn,
                    (unsigned long long)recv[i]);
  RDX_DIST_AGREE(st);
done:
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, send);
  rdx_mem_free(ctx, recv);
  return st;
}

static rdx_status check_dp(rdx_comm *comm, const char *fn, const rdx_dist_points *d) {
  if (d == NULL) return rdx_fail(comm->ctx, RDX_ERR_INVALID_ARGUMENT, "%s: dp is NULL", fn);
  if (d->magic != RDX_DIST_POINTS_MAGIC)
    return rdx_fail(comm->ctx, RDX_ERR_MISUSE, "%s: dp %p is not a distributed point index", fn, (const void *)d);
  if (d->comm != comm)
    return rdx_fail(comm->ctx, RDX_ERR_MISUSE, "%s: dp %p was built over another communicator", fn, (const void *)d);
  if (d->damaged)
    return rdx_fail(comm->ctx, RDX_ERR_INTERNAL,
                    "%s: this rank's part of the index is damaged (undoing a failed move failed); destroy the index", fn);
  return RDX_OK;
}

/* Every update calls this once its index passed check_dp: the l2g and xy it changes go stale on
 * the GPU, and the next device query copies them again. */
static void drop_l2g_dev(rdx_dist_points *d) {
  rdx_mem_free(d->comm->ctx, d->l2g_dev);
  rdx_mem_free(d->comm->ctx, d->xy_dev);
  d->l2g_dev = NULL;
  d->xy_dev = NULL;
}

/* The points (n, 2) of a dtype: finite, and inside box when box is not NULL; the first offending
 * row named as rdx_points_* name it. */
static rdx_status check_coords(rdx_context *ctx, const char *fn, const char *name, const void *p, rdx_dtype dt, int64_t n,
                               const double *box) {
  for (int64_t i = 0; i < n; i++) {
    double x = at_d(p, dt, 2 * i), y = at_d(p, dt, 2 * i + 1);
    if (!isfinite(x) || !isfinite(y))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s row %lld (%g, %g) is not finite", fn, name, (long long)i, x, y);
    if (box != NULL && !(box[0] <= x && x <= box[2] && box[1] <= y && y <= box[3]))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s row %lld (%g, %g) is outside the index's box [%g, %g, %g, %g]", fn,
                      name, (long long)i, x, y, box[0], box[1], box[2], box[3]);
  }
  return RDX_OK;
}

/* The codes first..last (inclusive, first <= last) as blocks of the grid of box (points_hd.h), into
 * out (4 doubles a block), returning how many: the range rounded outward to blocks of
 * 2^(31 - RDX_DIST_COVER_LEVELS) cells a side, then cut greedily into the largest aligned blocks.
 * Each block's box is padded beyond its cells' edges by far more than rdx_dist_cell_of's rounding
 * can move a point (a few units in the last place of the box's coordinates), so every point whose
 * code lies in the block lies in its box. */
static int64_t cover_of(const double *box, uint64_t first, uint64_t last, double *out) {
  const int fine = 2 * (31 - RDX_DIST_COVER_LEVELS); /* code bits below a block of the finest size */
  first = first >> fine << fine;
  last |= ((uint64_t)1 << fine) - 1;
  const double cell[2] = {(box[2] - box[0]) / 2147483648.0, (box[3] - box[1]) / 2147483648.0};
  const double pad[2] = {(fabs(box[0]) + fabs(box[2])) * 0x1p-44 + (box[2] - box[0]) * 0x1p-28,
                         (fabs(box[1]) + fabs(box[3])) * 0x1p-44 + (box[3] - box[1]) * 0x1p-28};
  int64_t n = 0;
  for (uint64_t x = first;;) {
    int k = 31; /* the largest block (4^k codes) that starts at x and ends by last */
    while (k > 0 && ((x & (((uint64_t)1 << 2 * k) - 1)) != 0 || x + (((uint64_t)1 << 2 * k) - 1) > last)) k--;
    if (n == RDX_DIST_COVER_MAX) { /* never, by the bound above; the whole box would still be right */
      memcpy(out, box, 4 * sizeof(double));
      return 1;
    }
    const uint32_t cx = rdx_sp_morton_x(x), cy = rdx_sp_morton_y(x);
    const double side = (double)((uint64_t)1 << k);
    double *b = out + 4 * n++;
    b[0] = box[0] + cx * cell[0] - pad[0];
    b[1] = box[1] + cy * cell[1] - pad[1];
    b[2] = box[0] + (cx + side) * cell[0] + pad[0];
    b[3] = box[1] + (cy + side) * cell[1] + pad[1];
    const uint64_t end = x + (((uint64_t)1 << 2 * k) - 1);
    if (end >= last) break;
    x = end + 1;
  }
  return n;
}

static void free_dp(rdx_context *ctx, rdx_dist_points *d) {
  if (d == NULL) return;
  rdx_points_destroy(d->shard);
  rdx_mem_free(ctx, d->splitters);
  rdx_mem_free(ctx, d->boxes);
  rdx_mem_free(ctx, d->cover);
  rdx_mem_free(ctx, d->n_cover);
  rdx_mem_free(ctx, d->counts);
  rdx_mem_free(ctx, d->l2g);
  rdx_mem_free(ctx, d->l2g_dev);
  rdx_mem_free(ctx, d->xy_dev);
  rdx_mem_free(ctx, d->xy);
  map_free(ctx, &d->map);
  free(d);
}

/* ---- build ---- */

/* The received points (ids g, rows of `row` bytes in p) in ascending id order, unless they are
 * already (implied ids arrive so). Shard ids then follow the index's ids, so one shard's answer to
 * a query is ascending in both and the device path merges the shards' answers instead of sorting
 * them (points_gpu.cu); later inserts and migrations may break the order, which only costs that. */
static rdx_status order_by_id(rdx_context *ctx, const char *fn, uint64_t *g, void *p, int64_t m, size_t row) {
  int64_t i = 1;
  while (i < m && g[i - 1] < g[i]) i++;
  if (i >= m || m >= ((int64_t)1 << 32)) return RDX_OK;
  uint64_t *keys = NULL, *keys_tmp = NULL;
  uint32_t *vals = NULL, *vals_tmp = NULL;
  void *moved = NULL;
  rdx_status st = rdx_dist_take(ctx, fn, &keys, m, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &keys_tmp, m, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &vals, m, 4);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &vals_tmp, m, 4);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &moved, m, row);
  if (st == RDX_OK) {
    memcpy(keys, g, (size_t)m * 8);
    for (int64_t j = 0; j < m; j++) vals[j] = (uint32_t)j;
    st = rdx_radix_sort_u64(ctx, &keys, &keys_tmp, &vals, &vals_tmp, m);
  }
  if (st == RDX_OK) {
    for (int64_t j = 0; j < m; j++) memcpy((char *)moved + (size_t)j * row, (const char *)p + (size_t)vals[j] * row, row);
    memcpy(p, moved, (size_t)m * row);
    memcpy(g, keys, (size_t)m * 8);
  }
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, keys_tmp);
  rdx_mem_free(ctx, vals);
  rdx_mem_free(ctx, vals_tmp);
  rdx_mem_free(ctx, moved);
  return st;
}

rdx_status rdx_dist_points_build(rdx_comm *comm, rdx_array points, rdx_array ids, const rdx_points_options *opts,
                                 rdx_dist_points **out) {
  static const char fn[] = "rdx_dist_points_build";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  if (out != NULL) *out = NULL;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  desc me, *all = NULL;
  memset(&me, 0, sizeof me);
  void *raw = NULL, *send_p = NULL, *recv_p = NULL, *idraw = NULL;
  uint64_t *gid = NULL, *codes = NULL, *send_g = NULL, *recv_g = NULL;
  int64_t *cnt = NULL;
  double *every = NULL; /* step 6: every rank's box and count */
  rdx_dist_points *d = NULL;
  const int64_t n = points.count;
  const int have_ids = ids.data != NULL;
  size_t es = 8;

  /* 1. this rank's arguments, read to the host and checked as rdx_points_build checks them */
  rdx_status st = out == NULL ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn) : RDX_OK;
  if (st == RDX_OK && opts != NULL) {
    if (opts->size < sizeof(size_t) + sizeof(rdx_points_kind) || opts->size > (1u << 16))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->size %zu is not a valid size", fn, opts->size);
    else {
      memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
      o.size = sizeof o;
    }
  }
  if (st == RDX_OK) {
    /* the documented defaults, so that ranks passing 0 and ranks passing the default agree */
    if (o.kind == 0) o.kind = RDX_POINTS_QUADTREE;
    if (o.method == 0) o.method = RDX_POINTS_BOTTOM_UP;
    if (o.leaf_capacity == 0) o.leaf_capacity = 256;
    if (o.max_depth == 0) o.max_depth = o.kind == RDX_POINTS_KDTREE ? 48 : 16;
    if (o.kind != RDX_POINTS_QUADTREE && o.kind != RDX_POINTS_KDTREE)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->kind 0x%x is not an rdx_points_kind", fn, (unsigned)o.kind);
    else if (o.use_box && !(isfinite(o.box[0]) && isfinite(o.box[1]) && isfinite(o.box[2]) && isfinite(o.box[3]) &&
                            o.box[0] <= o.box[2] && o.box[1] <= o.box[3]))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: opts->box [%g, %g, %g, %g] is not finite with min <= max", fn, o.box[0],
                    o.box[1], o.box[2], o.box[3]);
  }
  if (st == RDX_OK) st = rdx_array_check(ctx, fn, "points", points);
  if (st == RDX_OK && ((points.dtype != RDX_F32 && points.dtype != RDX_F64) || points.columns != 2))
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be (n, 2) f32 or f64 (dtype %s, columns %d)", fn,
                  rdx_dist_dtype_name(points.dtype), points.columns);
  if (st == RDX_OK && have_ids) {
    st = rdx_array_check(ctx, fn, "ids", ids);
    if (st == RDX_OK && ((ids.dtype != RDX_U32 && ids.dtype != RDX_U64) || ids.columns != 1))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                    rdx_dist_dtype_name(ids.dtype), ids.columns);
    else if (st == RDX_OK && ids.count != n)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids.count %lld != points.count %lld", fn, (long long)ids.count,
                    (long long)n);
  }
  if (st == RDX_OK) {
    es = rdx_dtype_size(points.dtype);
    st = host_copy(ctx, fn, points, &raw);
  }
  if (st == RDX_OK) st = check_coords(ctx, fn, "points", raw, points.dtype, n, o.use_box ? o.box : NULL);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &gid, n, 8);
  if (st == RDX_OK && have_ids) st = host_copy(ctx, fn, ids, &idraw);
  for (int64_t i = 0; st == RDX_OK && have_ids && i < n; i++) {
    gid[i] = at_id(idraw, ids.dtype, i);
    if (gid[i] == RDX_MISS)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids[%lld] is 2^64-1, the miss marker RDX_MISS, which no point may have", fn,
                    (long long)i);
    else if (gid[i] > me.max_id)
      me.max_id = gid[i];
  }
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &cnt, 3 * (int64_t)size, 8);
  if (st == RDX_OK && (d = (rdx_dist_points *)calloc(1, sizeof *d)) == NULL)
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the handle", fn);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &d->splitters, size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &d->boxes, 4 * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &d->cover, 4 * RDX_DIST_COVER_MAX * (int64_t)size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &d->n_cover, size, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &d->counts, size, 8);
  RDX_DIST_AGREE(st);

  /* 2. every rank's call, dtype and options, compared */
  me.op = OP_BUILD;
  me.dtype = points.dtype;
  me.kind = o.kind;
  me.method = o.method;
  me.leaf_capacity = o.leaf_capacity;
  me.max_depth = o.max_depth;
  me.layout = o.layout;
  me.use_box = o.use_box;
  if (o.use_box) memcpy(me.box, o.box, sizeof me.box);
  me.have_ids = have_ids;
  me.id_dtype = have_ids ? ids.dtype : 0;
  me.count = n;
  me.mybox[0] = me.mybox[1] = INFINITY;
  me.mybox[2] = me.mybox[3] = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double x = at_d(raw, points.dtype, 2 * i), y = at_d(raw, points.dtype, 2 * i + 1);
    if (x < me.mybox[0]) me.mybox[0] = x;
    if (y < me.mybox[1]) me.mybox[1] = y;
    if (x > me.mybox[2]) me.mybox[2] = x;
    if (y > me.mybox[3]) me.mybox[3] = y;
  }
  RDX_CHECK_GOTO(comm->ops->allgather(comm, &me, all, sizeof me), st, done);
  RDX_CHECK_GOTO(compare(comm, fn, all), st, done);
  d->comm = comm;
  d->dtype = points.dtype;
  d->kind = o.kind;
  int64_t *send = cnt, *recv = cnt + size, *cursor = cnt + 2 * size;
  for (int r = 0; r < size; r++) send[r] = all[r].count; /* the ranks' points, until step 4 */
  d->n_total = rdx_dist_scan(send, size, cursor);
  const int64_t offset = cursor[comm->rank];
  /* the index's box: given, or the union of the ranks' tight boxes (one index's computed box) */
  if (o.use_box) {
    memcpy(d->box, o.box, sizeof d->box);
  } else {
    d->box[0] = d->box[1] = INFINITY;
    d->box[2] = d->box[3] = -INFINITY;
    for (int r = 0; r < size; r++)
      if (all[r].count > 0) {
        d->box[0] = fmin(d->box[0], all[r].mybox[0]);
        d->box[1] = fmin(d->box[1], all[r].mybox[1]);
        d->box[2] = fmax(d->box[2], all[r].mybox[2]);
        d->box[3] = fmax(d->box[3], all[r].mybox[3]);
      }
    if (d->n_total == 0) d->box[0] = d->box[1] = d->box[2] = d->box[3] = 0.0;
  }
  d->id_end = have_ids ? 0 : (uint64_t)d->n_total;
  for (int r = 0; have_ids && r < size; r++)
    if (all[r].count > 0 && all[r].max_id + 1 > d->id_end) d->id_end = all[r].max_id + 1;
  if (!have_ids)
    for (int64_t i = 0; i < n; i++) gid[i] = (uint64_t)(offset + i);
  else if (size > 1 || n > 1)
    RDX_CHECK_GOTO(check_unique(comm, fn, gid, n), st, done);

  /* 3. splitters over the points' codes */
  st = rdx_dist_take(ctx, fn, &codes, n, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) codes[i] = rdx_dist_code_of(d->box, at_d(raw, points.dtype, 2 * i), at_d(raw, points.dtype, 2 * i + 1));
  RDX_DIST_AGREE(st);
  if (size > 1) RDX_CHECK_GOTO(rdx_dist_splitters(comm, fn, send, codes, n, d->splitters), st, done);
  for (int p = 0; p < size; p++) {
    const uint64_t last_code = ((uint64_t)1 << 62) - 1;
    uint64_t first = p == 0 ? 0 : d->splitters[p - 1] + 1, last = p == size - 1 ? last_code : d->splitters[p];
    if (p > 0 && d->splitters[p - 1] >= last_code) first = last + 1; /* nothing past the last code */
    d->n_cover[p] = first <= last ? cover_of(d->box, first, last, d->cover + 4 * RDX_DIST_COVER_MAX * p) : 0;
  }

  /* 4. the points to their owners */
  for (int p = 0; p < size; p++) send[p] = 0;
  for (int64_t i = 0; i < n; i++) send[size == 1 ? 0 : rdx_dist_owner_of_code(d->splitters, size, codes[i])]++;
  rdx_dist_scan(send, size, cursor);
  st = rdx_dist_take(ctx, fn, &send_p, 2 * n, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send_g, n, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) {
      int64_t at = cursor[size == 1 ? 0 : rdx_dist_owner_of_code(d->splitters, size, codes[i])]++;
      memcpy((char *)send_p + (size_t)at * 2 * es, (const char *)raw + (size_t)i * 2 * es, 2 * es);
      send_g[at] = gid[i];
    }
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
  int64_t m = 0;
  for (int p = 0; p < size; p++) m += recv[p];
  st = rdx_dist_take(ctx, fn, &recv_p, 2 * m, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &recv_g, m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_p, send, recv_p, recv, 2 * es), st, done);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_g, send, recv_g, recv, 8), st, done);
  rdx_mem_free(ctx, send_p), send_p = NULL;
  rdx_mem_free(ctx, send_g), send_g = NULL;
  rdx_mem_free(ctx, raw), raw = NULL;
  rdx_mem_free(ctx, codes), codes = NULL;

  /* 5. the shard over the index's whole box (so a point may later move anywhere in it), and this
   * rank's maps: shard id j is received point j, after they are put in id order */
  st = order_by_id(ctx, fn, recv_g, recv_p, m, 2 * es);
  RDX_DIST_AGREE(st);
  rdx_points_options so = o;
  so.use_box = true;
  memcpy(so.box, d->box, sizeof so.box);
  st = rdx_points_build(ctx, rdx_host_matrix(recv_p, m, 2, points.dtype), &so, &d->shard);
  if (st == RDX_OK) st = slots_reserve(ctx, fn, d, m > 0 ? m : 1);
  if (st == RDX_OK) {
    for (int64_t j = 0; j < m; j++) {
      d->l2g[j] = recv_g[j];
      d->xy[2 * j] = at_d(recv_p, points.dtype, 2 * j);
      d->xy[2 * j + 1] = at_d(recv_p, points.dtype, 2 * j + 1);
    }
    d->n_slots = m;
  }
  RDX_DIST_AGREE(st);

  /* 6. the partition table: every rank's count and tight box */
  {
    double mine[5] = {INFINITY, INFINITY, -INFINITY, -INFINITY, (double)m};
    for (int64_t j = 0; j < m; j++) {
      mine[0] = fmin(mine[0], d->xy[2 * j]);
      mine[1] = fmin(mine[1], d->xy[2 * j + 1]);
      mine[2] = fmax(mine[2], d->xy[2 * j]);
      mine[3] = fmax(mine[3], d->xy[2 * j + 1]);
    }
    st = rdx_dist_take(ctx, fn, &every, 5 * (int64_t)size, 8);
    RDX_DIST_AGREE(st);
    st = comm->ops->allgather(comm, mine, every, sizeof mine);
    if (st == RDX_OK)
      for (int r = 0; r < size; r++) {
        memcpy(d->boxes + 4 * r, every + 5 * r, 4 * sizeof(double));
        d->counts[r] = (int64_t)every[5 * r + 4];
      }
    if (st != RDX_OK) goto done;
  }
  d->id = comm->next_index_id++;
  d->magic = RDX_DIST_POINTS_MAGIC;
  comm->n_live_indexes++;
  *out = d;
  d = NULL;
done:
  free_dp(ctx, d);
  rdx_mem_free(ctx, raw);
  rdx_mem_free(ctx, idraw);
  rdx_mem_free(ctx, gid);
  rdx_mem_free(ctx, codes);
  rdx_mem_free(ctx, send_p);
  rdx_mem_free(ctx, send_g);
  rdx_mem_free(ctx, recv_p);
  rdx_mem_free(ctx, recv_g);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, every);
  return st;
}

void rdx_dist_points_destroy(rdx_dist_points *dp) {
  if (dp == NULL || dp->magic != RDX_DIST_POINTS_MAGIC) return;
  dp->comm->n_live_indexes--;
  dp->magic = 0;
  free_dp(dp->comm->ctx, dp);
}
int64_t rdx_dist_points_count(const rdx_dist_points *dp) {
  return dp != NULL && dp->magic == RDX_DIST_POINTS_MAGIC ? dp->n_total : 0;
}
const rdx_points *rdx_dist_points_shard(const rdx_dist_points *dp) {
  return dp != NULL && dp->magic == RDX_DIST_POINTS_MAGIC ? dp->shard : NULL;
}
const uint64_t *rdx_dist_points_shard_ids(const rdx_dist_points *dp, int64_t *n) {
  if (dp == NULL || dp->magic != RDX_DIST_POINTS_MAGIC) return NULL;
  if (n != NULL) *n = dp->n_slots;
  return dp->l2g;
}
rdx_status rdx_dist_points_rank_info(const rdx_dist_points *dp, int rank, int64_t *count, double box[4]) {
  if (dp == NULL) return RDX_ERR_INVALID_ARGUMENT;
  if (dp->magic != RDX_DIST_POINTS_MAGIC) return RDX_ERR_MISUSE;
  if (rank < 0 || rank >= dp->comm->size)
    return rdx_fail(dp->comm->ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_dist_points_rank_info: rank %d is outside [0, %d)", rank,
                    dp->comm->size);
  if (count != NULL) *count = dp->counts[rank];
  if (box != NULL) memcpy(box, dp->boxes + 4 * rank, 4 * sizeof(double));
  return RDX_OK;
}

/* ---- queries ---- */

/* A shard's answer to m pieces (query rows in the index's dtype, one bound each): counts[j] items
 * for piece j, packed in piece order into *items (through the account). */
typedef rdx_status (*answer_fn)(const rdx_dist_points *d, const char *fn, const rdx_points_query *q, const void *rows,
                                const double *bounds, int64_t m, uint64_t *counts, void **items);

static int query_cols(int32_t type) { return type == RDX_POINTS_WINDOW ? 4 : type == RDX_POINTS_WITHIN ? 3 : 2; }

/* Window, within, match: the shard's ids, mapped to the index's ids. */
static rdx_status answer_plain(const rdx_dist_points *d, const char *fn, const rdx_points_query *q, const void *rows,
                               const double *bounds, int64_t m, uint64_t *counts, void **items) {
  rdx_context *ctx = d->comm->ctx;
  rdx_result *res = NULL;
  (void)bounds;
  *items = NULL;
  RDX_CHECK(rdx_points_query_alloc(ctx, d->shard, rdx_host_matrix(rows, m, query_cols(q->type), d->dtype), q, &res));
  rdx_status st = rdx_dist_take(ctx, fn, items, (int64_t)res->total, 8);
  if (st == RDX_OK) {
    uint64_t *g = (uint64_t *)*items;
    for (int64_t j = 0; j < m; j++) counts[j] = res->offsets[j + 1] - res->offsets[j];
    for (uint64_t t = 0; t < res->total; t++) g[t] = d->l2g[res->row_ids[t]];
  }
  rdx_result_free(ctx, res);
  return st;
}

/* kNN: this shard's candidates at computed distance <= bound, a superset of its share of the
 * global answer. The shard's own kNN breaks ties at the k-th distance by its shard ids, which
 * are not the index's ids, so when its k-th distance is within the bound and it holds more than k
 * points, a within query at that distance brings every point tied there (filtered back to it). */
static rdx_status answer_knn(const rdx_dist_points *d, const char *fn, const rdx_points_query *q, const void *rows,
                             const double *bounds, int64_t m, uint64_t *counts, void **items) {
  rdx_context *ctx = d->comm->ctx;
  const int k = q->k;
  const int64_t here = rdx_points_count(d->shard);
  rdx_result *res = NULL, *ext = NULL;
  void *wq = NULL;
  int64_t *ext_of = NULL, n_ext = 0;
  double *kth = NULL;
  *items = NULL;
  RDX_CHECK(rdx_points_query_alloc(ctx, d->shard, rdx_host_matrix(rows, m, 2, d->dtype), q, &res));
  const size_t es = rdx_dtype_size(d->dtype);
  rdx_status st = rdx_dist_take(ctx, fn, &ext_of, m, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &kth, m, 8);
  if (st == RDX_OK) {
    for (int64_t j = 0; j < m; j++) {
      ext_of[j] = -1;
      uint64_t c = res->offsets[j + 1] - res->offsets[j];
      if (c == (uint64_t)k && here > k) {
        uint64_t lid = res->row_ids[res->offsets[j + 1] - 1];
        kth[j] = rdx_sp_d2(d->xy[2 * lid], d->xy[2 * lid + 1], at_d(rows, d->dtype, 2 * j), at_d(rows, d->dtype, 2 * j + 1));
        if (kth[j] <= bounds[j]) ext_of[j] = n_ext++;
      }
    }
    st = rdx_dist_take(ctx, fn, &wq, 3 * n_ext, es);
  }
  if (st == RDX_OK && n_ext > 0) {
    for (int64_t j = 0; j < m; j++)
      if (ext_of[j] >= 0) {
        int64_t e = ext_of[j];
        memcpy((char *)wq + (size_t)(3 * e) * es, (const char *)rows + (size_t)(2 * j) * es, 2 * es);
        put_d(wq, d->dtype, 3 * e + 2, rdx_dist_radius_for(kth[j], d->dtype == RDX_F64));
      }
    rdx_points_query wi = RDX_POINTS_QUERY_INIT;
    wi.type = RDX_POINTS_WITHIN;
    st = rdx_points_query_alloc(ctx, d->shard, rdx_host_matrix(wq, n_ext, 3, d->dtype), &wi, &ext);
  }
  /* two passes over the same candidates: count, then write */
  for (int pass = 0; st == RDX_OK && pass < 2; pass++) {
    cand *out = pass ? (cand *)*items : NULL;
    int64_t total = 0;
    for (int64_t j = 0; j < m; j++) {
      const rdx_result *r = ext_of[j] >= 0 ? ext : res;
      const int64_t row = ext_of[j] >= 0 ? ext_of[j] : j;
      const double lim = ext_of[j] >= 0 ? kth[j] : bounds[j];
      const double qx = at_d(rows, d->dtype, 2 * j), qy = at_d(rows, d->dtype, 2 * j + 1);
      uint64_t c = 0;
      for (uint64_t t = r->offsets[row]; t < r->offsets[row + 1]; t++) {
        uint64_t lid = r->row_ids[t];
        double d2 = rdx_sp_d2(d->xy[2 * lid], d->xy[2 * lid + 1], qx, qy);
        if (d2 <= lim) {
          if (out) out[total + (int64_t)c] = (cand){d2, d->l2g[lid]};
          c++;
        }
      }
      counts[j] = c;
      total += (int64_t)c;
    }
    if (!pass) st = rdx_dist_take(ctx, fn, items, total, sizeof(cand));
  }
  rdx_result_free(ctx, res);
  rdx_result_free(ctx, ext);
  rdx_mem_free(ctx, wq);
  rdx_mem_free(ctx, ext_of);
  rdx_mem_free(ctx, kth);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *items);
    *items = NULL;
  }
  return st;
}

/* What came back from one round: the pieces in the order they went (grouped by rank), the query
 * each asks for, how many items each brought back, and the items packed in that order. */
typedef struct trip {
  int64_t n_pieces;
  int64_t *piece_query;
  uint64_t *back;
  void *items;
} trip;
static void trip_free(rdx_context *ctx, trip *t) {
  rdx_mem_free(ctx, t->piece_query);
  rdx_mem_free(ctx, t->back);
  rdx_mem_free(ctx, t->items);
  memset(t, 0, sizeof *t);
}

/* One round: piece j (query piece_q[j] with bound piece_bound[j]) goes to rank piece_rank[j],
 * whose shard answers it with `answer`; the items come back to the rank that asked. */
static rdx_status round_trip(rdx_comm *comm, const char *fn, const rdx_dist_points *d, const rdx_points_query *q,
                             const void *qraw, int64_t n_pieces, const int *piece_rank, const int64_t *piece_q,
                             const double *piece_bound, size_t item, answer_fn answer, trip *t) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  const size_t row = (size_t)query_cols(q->type) * rdx_dtype_size(d->dtype);
  int64_t *cnt = NULL;
  void *send_q = NULL, *recv_q = NULL, *aitems = NULL;
  double *send_b = NULL, *recv_b = NULL;
  uint64_t *acounts = NULL;
  memset(t, 0, sizeof *t);
  t->n_pieces = n_pieces;
  rdx_status st = rdx_dist_take(ctx, fn, &cnt, 5 * (int64_t)size, 8);
  int64_t *send = cnt, *recv = cnt + size, *cursor = cnt + 2 * size, *rsend = cnt + 3 * size, *rrecv = cnt + 4 * size;
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send_q, n_pieces, row);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &send_b, n_pieces, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &t->piece_query, n_pieces, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &t->back, n_pieces, 8);
  if (st == RDX_OK) {
    for (int p = 0; p < size; p++) send[p] = 0;
    for (int64_t j = 0; j < n_pieces; j++) send[piece_rank[j]]++;
    rdx_dist_scan(send, size, cursor);
    for (int64_t j = 0; j < n_pieces; j++) {
      int64_t at = cursor[piece_rank[j]]++;
      memcpy((char *)send_q + (size_t)at * row, (const char *)qraw + (size_t)piece_q[j] * row, row);
      send_b[at] = piece_bound[j];
      t->piece_query[at] = piece_q[j];
    }
  }
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoall_i64(comm, send, recv), st, done);
  int64_t m = 0;
  for (int p = 0; p < size; p++) m += recv[p];
  st = rdx_dist_take(ctx, fn, &recv_q, m, row);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &recv_b, m, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &acounts, m, 8);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_q, send, recv_q, recv, row), st, done);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, send_b, send, recv_b, recv, 8), st, done);
  st = answer(d, fn, q, recv_q, recv_b, m, acounts, &aitems);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, acounts, recv, t->back, send, 8), st, done);
  uint64_t total = 0;
  for (int p = 0, j = 0; p < size; p++) {
    rsend[p] = 0;
    for (int64_t c = 0; c < recv[p]; c++) rsend[p] += (int64_t)acounts[j++];
  }
  for (int p = 0, j = 0; p < size; p++) {
    rrecv[p] = 0;
    for (int64_t c = 0; c < send[p]; c++) rrecv[p] += (int64_t)t->back[j++];
    total += (uint64_t)rrecv[p];
  }
  st = rdx_dist_take(ctx, fn, &t->items, (int64_t)total, item);
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, aitems, rsend, t->items, rrecv, item), st, done);
done:
  if (st != RDX_OK) trip_free(ctx, t);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, send_q);
  rdx_mem_free(ctx, recv_q);
  rdx_mem_free(ctx, send_b);
  rdx_mem_free(ctx, recv_b);
  rdx_mem_free(ctx, acounts);
  rdx_mem_free(ctx, aitems);
  return st;
}

/* The items of one or two rounds grouped by query: query i's at offs[i] .. offs[i + 1] of *out,
 * each round's in piece order. */
static rdx_status group(rdx_context *ctx, const char *fn, int64_t n, const trip *a, const trip *b, size_t item,
                        uint64_t **offs, void **out) {
  const trip *ts[2] = {a, b};
  uint64_t *o = NULL, *fill = NULL;
  void *g = NULL;
  rdx_status st = rdx_dist_take(ctx, fn, &o, n + 1, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &fill, n, 8);
  if (st == RDX_OK) {
    for (int64_t i = 0; i <= n; i++) o[i] = 0;
    for (int w = 0; w < 2; w++)
      for (int64_t j = 0; ts[w] && j < ts[w]->n_pieces; j++) o[ts[w]->piece_query[j] + 1] += ts[w]->back[j];
    for (int64_t i = 0; i < n; i++) o[i + 1] += o[i];
    st = rdx_dist_take(ctx, fn, &g, (int64_t)o[n], item);
  }
  if (st == RDX_OK) {
    for (int64_t i = 0; i < n; i++) fill[i] = o[i];
    for (int w = 0; w < 2; w++) {
      uint64_t from = 0;
      for (int64_t j = 0; ts[w] && j < ts[w]->n_pieces; j++) {
        int64_t i = ts[w]->piece_query[j];
        if (ts[w]->back[j])
          memcpy((char *)g + fill[i] * item, (const char *)ts[w]->items + from * item, ts[w]->back[j] * item);
        fill[i] += ts[w]->back[j];
        from += ts[w]->back[j];
      }
    }
  }
  rdx_mem_free(ctx, fill);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, o);
    rdx_mem_free(ctx, g);
    return st;
  }
  *offs = o;
  *out = g;
  return RDX_OK;
}

/* Does query i (doubles qd, row i) meet rank p's points? (points_hd.h, as the device path asks) */
static int touches(const rdx_dist_points *d, int p, int32_t type, const double *q) {
  return d->counts[p] > 0 &&
         rdx_dist_rank_touches(d->boxes + 4 * p, d->cover + 4 * RDX_DIST_COVER_MAX * p, d->n_cover[p], type, q);
}

/* This rank's queries on the host (*raw) and as doubles, four a row (*qd), each row checked. */
static rdx_status read_queries(rdx_context *ctx, const char *fn, const rdx_points_query *q, rdx_array queries,
                               void **raw, double **qd) {
  const int cols = queries.columns;
  const int64_t n = queries.count;
  rdx_status st = host_copy(ctx, fn, queries, raw);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, qd, n * 4, 8);
  for (int64_t i = 0; st == RDX_OK && i < n; i++)
    for (int c = 0; c < cols && st == RDX_OK; c++) {
      double v = (*qd)[4 * i + c] = at_d(*raw, queries.dtype, i * cols + c);
      if (!isfinite(v))
        st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a coordinate that is not finite", fn, (long long)i);
      else if (q->type == RDX_POINTS_WITHIN && c == 2 && v < 0)
        st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries row %lld has a negative radius %g", fn, (long long)i, v);
    }
  return st;
}

rdx_status rdx_dist_points_query_alloc(rdx_comm *comm, const rdx_dist_points *dp, rdx_array queries,
                                       const rdx_points_query *query, rdx_result **out) {
  static const char fn[] = "rdx_dist_points_query_alloc";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  if (out != NULL) *out = NULL;
  desc me, *all = NULL;
  memset(&me, 0, sizeof me);
  rdx_points_query q = RDX_POINTS_QUERY_INIT;
  void *qraw = NULL, *grouped = NULL;
  double *qd = NULL, *bound = NULL;
  int *prank = NULL, *first = NULL;
  int64_t *pq = NULL;
  uint64_t *answer = NULL, *rows = NULL, *offs = NULL;
  trip t1, t2;
  memset(&t1, 0, sizeof t1);
  memset(&t2, 0, sizeof t2);
  rdx_result *res = NULL;
  const int64_t n = queries.count;
  int cols = 2;

  /* 1. this rank's arguments */
  rdx_status st = check_dp(comm, fn, dp);
  if (st == RDX_OK && out == NULL) st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (st == RDX_OK && query == NULL) st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query is NULL", fn);
  if (st == RDX_OK) {
    if (query->size < sizeof(size_t) + sizeof(rdx_points_query_type) || query->size > (1u << 16))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->size %zu is not a valid size", fn, query->size);
    else
      memcpy(&q, query, query->size < sizeof q ? query->size : sizeof q);
  }
  if (st == RDX_OK && q.type != RDX_POINTS_MATCH && q.type != RDX_POINTS_WINDOW && q.type != RDX_POINTS_WITHIN &&
      q.type != RDX_POINTS_KNN)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->type 0x%x is not an rdx_points_query_type", fn, (unsigned)q.type);
  if (st == RDX_OK && q.type == RDX_POINTS_KNN && (q.k < 1 || q.k > 1024))
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query->k %d is outside 1..1024", fn, q.k);
  if (st == RDX_OK) {
    q.size = sizeof q;
    if (q.type != RDX_POINTS_KNN) q.k = 0;
    cols = query_cols(q.type);
    st = rdx_array_check(ctx, fn, "queries", queries);
  }
  if (st == RDX_OK && (queries.dtype != dp->dtype || queries.columns != cols))
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: queries must be (m, %d) %s for a %s query (dtype %s, columns %d)", fn, cols,
                  rdx_dist_dtype_name(dp->dtype), qtype_name(q.type), rdx_dist_dtype_name(queries.dtype), queries.columns);
  /* the query stays on the GPUs (points_gpu.cu, which checks the rows there) when every rank's
   * context is a GPU's and the transport moves device memory: the ranks' words decide */
  me.gpu = st == RDX_OK && rdx_dist_gpu_capable(comm, RDX_DIST_GPU_POINTS_MAX_RANKS) && n < ((int64_t)1 << 31);
  if (st == RDX_OK && !me.gpu) st = read_queries(ctx, fn, &q, queries, &qraw, &qd);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &answer, n, 8);
  RDX_DIST_AGREE(st);

  /* 2. the same call, index, dtype and query everywhere */
  me.op = OP_QUERY;
  me.dtype = queries.dtype;
  me.kind = dp->kind;
  me.qtype = q.type;
  me.k = q.k;
  me.index_id = dp->id;
  me.count = n;
  RDX_CHECK_GOTO(comm->ops->allgather(comm, &me, all, sizeof me), st, done);
  RDX_CHECK_GOTO(compare(comm, fn, all), st, done);
  int gpu = 1;
  for (int r = 0; r < size; r++) gpu &= all[r].gpu != 0;
  if (gpu) {
    rdx_dist_points *d = (rdx_dist_points *)dp; /* l2g_dev and xy_dev are caches, not the index */
    if (d->l2g_dev == NULL) {
      st = rdx_dist_gpu_upload(ctx, fn, d->l2g, d->n_slots, (void **)&d->l2g_dev);
      d->l2g_ascending = 1;
      for (int64_t j = 0, last = -1; j < d->n_slots && d->l2g_ascending; j++)
        if (d->l2g[j] != RDX_MISS) d->l2g_ascending = last < 0 || d->l2g[last] < d->l2g[j], last = j;
    }
    if (st == RDX_OK && d->xy_dev == NULL) st = rdx_dist_gpu_upload(ctx, fn, d->xy, 2 * d->n_slots, (void **)&d->xy_dev);
    RDX_DIST_AGREE(st);
    const rdx_dist_gpu_points gp = {dp->shard, dp->boxes, dp->box, dp->cover, dp->counts, dp->n_cover, dp->splitters,
                                    dp->l2g_dev, dp->xy_dev, rdx_points_count(dp->shard), dp->l2g_ascending};
    st = rdx_dist_gpu_points_query(comm, fn, &gp, &q, queries, &res);
    if (st == RDX_OK) *out = res, res = NULL;
    goto done;
  }
  if (qraw == NULL) {
    st = read_queries(ctx, fn, &q, queries, &qraw, &qd);
    RDX_DIST_AGREE(st);
  }

  /* 3. pieces: to every rank whose box the query meets; kNN: first to one rank, then the rest */
  int64_t n_pieces = 0;
  if (q.type != RDX_POINTS_KNN) {
    for (int pass = 0; pass < 2; pass++) {
      int64_t j = 0;
      for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < size; p++)
          if (touches(dp, p, q.type, qd + 4 * i)) {
            if (pass) prank[j] = p, pq[j] = i;
            j++;
          }
      if (!pass) {
        n_pieces = j;
        st = rdx_dist_take(ctx, fn, &prank, n_pieces, sizeof(int));
        if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &pq, n_pieces, 8);
        if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &bound, n_pieces, 8);
        RDX_DIST_AGREE(st);
      }
    }
    for (int64_t j = 0; j < n_pieces; j++) bound[j] = INFINITY;
    RDX_CHECK_GOTO(round_trip(comm, fn, dp, &q, qraw, n_pieces, prank, pq, bound, 8, answer_plain, &t1), st, done);
    st = group(ctx, fn, n, &t1, NULL, 8, &offs, &grouped);
    RDX_DIST_AGREE(st);
    /* ranks' ids interleave: each query's ids sorted, as one index gives them */
    rows = (uint64_t *)grouped;
    for (int64_t i = 0; i < n; i++) {
      answer[i] = offs[i + 1] - offs[i];
      qsort(rows + offs[i], (size_t)answer[i], 8, rdx_dist_cmp_u64);
    }
  } else {
    /* round 1: the rank owning the query's code, or the nearest non-empty box when it holds none */
    const int64_t n1 = dp->n_total > 0 ? n : 0;
    st = rdx_dist_take(ctx, fn, &prank, n * (int64_t)size, sizeof(int));
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &pq, n * (int64_t)size, 8);
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &bound, n * (int64_t)size, 8);
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &first, n, sizeof(int));
    RDX_DIST_AGREE(st);
    for (int64_t i = 0; i < n1; i++) {
      int p = owner_of(dp, qd[4 * i], qd[4 * i + 1]);
      if (dp->counts[p] == 0) {
        double best = INFINITY;
        p = -1;
        for (int r = 0; r < size; r++)
          if (dp->counts[r] > 0) {
            double b = rdx_sp_box_min_d2(dp->boxes + 4 * r, qd[4 * i], qd[4 * i + 1]);
            if (p < 0 || b < best) best = b, p = r;
          }
      }
      first[i] = p;
      prank[i] = p;
      pq[i] = i;
      bound[i] = INFINITY;
    }
    RDX_CHECK_GOTO(round_trip(comm, fn, dp, &q, qraw, n1, prank, pq, bound, sizeof(cand), answer_knn, &t1), st, done);
    st = group(ctx, fn, n, &t1, NULL, sizeof(cand), &offs, &grouped);
    RDX_DIST_AGREE(st);
    /* round 2: every other rank whose points may lie within the k-th distance found so far */
    int64_t n2 = 0;
    for (int64_t i = 0; i < n1; i++) {
      cand *c = (cand *)grouped + offs[i];
      const uint64_t got = offs[i + 1] - offs[i];
      qsort(c, (size_t)got, sizeof(cand), cmp_cand);
      const double kth = got >= (uint64_t)q.k ? c[q.k - 1].d2 : INFINITY;
      for (int p = 0; p < size; p++)
        if (p != first[i] && dp->counts[p] > 0 &&
            rdx_dist_rank_min_d2(dp->boxes + 4 * p, dp->cover + 4 * RDX_DIST_COVER_MAX * p, dp->n_cover[p], qd[4 * i],
                                 qd[4 * i + 1]) <= kth) {
          prank[n2] = p;
          pq[n2] = i;
          bound[n2] = kth;
          n2++;
        }
    }
    RDX_CHECK_GOTO(round_trip(comm, fn, dp, &q, qraw, n2, prank, pq, bound, sizeof(cand), answer_knn, &t2), st, done);
    rdx_mem_free(ctx, offs), offs = NULL;
    rdx_mem_free(ctx, grouped), grouped = NULL;
    st = group(ctx, fn, n, &t1, &t2, sizeof(cand), &offs, &grouped);
    int64_t kept = 0;
    for (int64_t i = 0; st == RDX_OK && i < n; i++) {
      const uint64_t got = offs[i + 1] - offs[i];
      kept += (int64_t)(got < (uint64_t)q.k ? got : (uint64_t)q.k);
    }
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &rows, kept, 8);
    RDX_DIST_AGREE(st);
    /* merged: the k smallest by (distance, id); candidates are distinct points (each rank's
     * points once, and each rank asked once per query) */
    for (int64_t i = 0, at = 0; i < n; i++) {
      cand *c = (cand *)grouped + offs[i];
      const uint64_t got = offs[i + 1] - offs[i];
      qsort(c, (size_t)got, sizeof(cand), cmp_cand);
      answer[i] = got < (uint64_t)q.k ? got : (uint64_t)q.k;
      for (uint64_t t = 0; t < answer[i]; t++) rows[at++] = c[t].gid;
    }
  }
  st = rdx_dist_result(ctx, fn, n, queries.where, answer, rows, &res);
  RDX_DIST_AGREE(st);
  *out = res;
  res = NULL;
done:
  rdx_result_free(ctx, res);
  trip_free(ctx, &t1);
  trip_free(ctx, &t2);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, qraw);
  rdx_mem_free(ctx, qd);
  rdx_mem_free(ctx, bound);
  rdx_mem_free(ctx, prank);
  rdx_mem_free(ctx, first);
  rdx_mem_free(ctx, pq);
  rdx_mem_free(ctx, answer);
  if (rows != (uint64_t *)grouped) rdx_mem_free(ctx, rows);
  rdx_mem_free(ctx, grouped);
  rdx_mem_free(ctx, offs);
  return st;
}

/* ---- updates ---- */

/* An update's batch gathered on every rank: every rank's rows in rank order (the concatenation is
 * the batch), with their ids (moves, erases) and places (moves, inserts), and, for ids, which rank
 * holds each row (each rank marks the rows whose ids it holds; the marks are gathered). */
typedef struct batch {
  int64_t total;
  int64_t *cnt;          /* size: rows per rank */
  uint64_t *g;           /* total ids, or NULL */
  void *p;               /* total x 2 places in the index's dtype, or NULL */
  unsigned char *marks;  /* size x mark_bytes: bit t of rank r's = rank r holds row t's id */
  size_t mark_bytes;
  int64_t *row_of;       /* total: the row's shard id on this rank, -1 when another rank's */
} batch;
static void batch_free(rdx_context *ctx, batch *b) {
  rdx_mem_free(ctx, b->cnt);
  rdx_mem_free(ctx, b->g);
  rdx_mem_free(ctx, b->p);
  rdx_mem_free(ctx, b->marks);
  rdx_mem_free(ctx, b->row_of);
  memset(b, 0, sizeof *b);
}
/* The rank holding row t's id (the lowest, though ids are held once), -1 for none. */
static int holder(const batch *b, int size, int64_t t) {
  for (int p = 0; p < size; p++)
    if ((b->marks[(size_t)p * b->mark_bytes + (size_t)(t / 8)] >> (t % 8)) & 1) return p;
  return -1;
}
/* Gather (all: every rank's descriptor, count = its rows). With ids, the verdict every rank
 * reaches alike: an id repeated anywhere in the batch, an id no rank holds. */
static rdx_status gather_batch(rdx_comm *comm, const char *fn, const rdx_dist_points *dp, const desc *all,
                               const uint64_t *gids, const void *praw, batch *b) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  const size_t es = rdx_dtype_size(dp->dtype);
  uint64_t *sorted = NULL;
  unsigned char *mine = NULL;
  memset(b, 0, sizeof *b);
  rdx_status st = rdx_dist_take(ctx, fn, &b->cnt, size, 8);
  if (st == RDX_OK) {
    for (int r = 0; r < size; r++) b->total += (b->cnt[r] = all[r].count);
    b->mark_bytes = (size_t)(b->total + 7) / 8;
  }
  if (st == RDX_OK && gids) st = rdx_dist_take(ctx, fn, &b->g, b->total, 8);
  if (st == RDX_OK && praw) st = rdx_dist_take(ctx, fn, &b->p, 2 * b->total, es);
  if (st == RDX_OK && gids) st = rdx_dist_take(ctx, fn, &b->marks, (int64_t)size * (int64_t)b->mark_bytes, 1);
  if (st == RDX_OK && gids) st = rdx_dist_take(ctx, fn, &mine, (int64_t)b->mark_bytes, 1);
  if (st == RDX_OK && gids) st = rdx_dist_take(ctx, fn, &sorted, b->total, 8);
  if (st == RDX_OK && gids) st = rdx_dist_take(ctx, fn, &b->row_of, b->total, 8);
  RDX_DIST_AGREE(st);
  if (gids) RDX_CHECK_GOTO(comm->ops->allgatherv(comm, gids, b->cnt, b->g, 8), st, done);
  if (praw) RDX_CHECK_GOTO(comm->ops->allgatherv(comm, praw, b->cnt, b->p, 2 * es), st, done);
  if (gids == NULL) goto done;
  memset(mine, 0, b->mark_bytes);
  for (int64_t t = 0; t < b->total; t++) {
    b->row_of[t] = map_find(&dp->map, b->g[t]);
    if (b->row_of[t] >= 0) mine[t / 8] |= (unsigned char)(1u << (t % 8));
  }
  if (b->mark_bytes > 0) RDX_CHECK_GOTO(comm->ops->allgather(comm, mine, b->marks, b->mark_bytes), st, done);
  memcpy(sorted, b->g, (size_t)b->total * 8);
  qsort(sorted, (size_t)b->total, 8, rdx_dist_cmp_u64);
  for (int64_t t = 1; t < b->total && st == RDX_OK; t++)
    if (sorted[t] == sorted[t - 1])
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: id %llu is repeated in the batch", fn, (unsigned long long)sorted[t]);
  for (int64_t t = 0, r = 0, at = 0; t < b->total && st == RDX_OK; t++) {
    while (t >= at + b->cnt[r]) at += b->cnt[r++];
    if (holder(b, size, t) < 0)
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: rank %lld's ids[%lld] = %llu is not in the index (unknown or erased)", fn,
                    (long long)r, (long long)(t - at), (unsigned long long)b->g[t]);
  }
done:
  rdx_mem_free(ctx, sorted);
  rdx_mem_free(ctx, mine);
  if (st != RDX_OK) batch_free(ctx, b);
  return st;
}

/* Rank r gains a point at (x, y): its count, and its box grown to hold it (reset to the point when
 * the rank held none: a box may be looser than its points after erases, never tighter). */
static void grow_box(rdx_dist_points *dp, int r, double x, double y) {
  double *bx = dp->boxes + 4 * r;
  if (dp->counts[r] == 0) {
    bx[0] = bx[2] = x;
    bx[1] = bx[3] = y;
  } else {
    bx[0] = fmin(bx[0], x);
    bx[1] = fmin(bx[1], y);
    bx[2] = fmax(bx[2], x);
    bx[3] = fmax(bx[3], y);
  }
  dp->counts[r]++;
}

/* Undo an erase of the shard ids out_l (their old places in out_old): insert the points again;
 * they get fresh shard ids (the shard never reuses one), mapped to the same index ids, so the
 * index's ids and answers are as before. Room in l2g, xy and the map must be reserved. */
static rdx_status reinsert(rdx_context *ctx, rdx_dist_points *dp, const uint64_t *out_l, const void *out_old, int64_t n_out) {
  uint64_t first = 0;
  if (n_out == 0) return RDX_OK;
  RDX_CHECK(rdx_points_insert(ctx, dp->shard, rdx_host_matrix(out_old, n_out, 2, dp->dtype), &first));
  for (int64_t c = 0; c < n_out; c++) {
    uint64_t g = dp->l2g[out_l[c]], l = first + (uint64_t)c;
    dp->l2g[l] = g;
    dp->xy[2 * l] = dp->xy[2 * out_l[c]];
    dp->xy[2 * l + 1] = dp->xy[2 * out_l[c] + 1];
    dp->l2g[out_l[c]] = RDX_MISS;
    map_put(&dp->map, g, (int64_t)l);
  }
  dp->n_slots = (int64_t)first + n_out;
  return RDX_OK;
}

/* An undo failed on this rank: mark its part damaged, and say so after the agreed sentence. */
static rdx_status damaged(rdx_context *ctx, const char *fn, rdx_dist_points *dp, const char *agreed) {
  char why[512];
  snprintf(why, sizeof why, "%s", rdx_context_message(ctx));
  dp->damaged = 1;
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: undoing a failed update failed on this rank (%s); the index is damaged: destroy it (%s)",
                  fn, why, agreed);
}

/* ---- moves ---- */

/* The rows that came in, at local slots first_in .. first_in + n_in - 1 of the shard: their index
 * ids, coordinates and id map (after a move's migration or an insert). */
static void record_in(rdx_dist_points *dp, uint64_t first_in, int64_t n_in, const uint64_t *in_g, const void *in_p) {
  for (int64_t b = 0; b < n_in; b++) {
    uint64_t l = first_in + (uint64_t)b;
    dp->l2g[l] = in_g[b];
    dp->xy[2 * l] = at_d(in_p, dp->dtype, 2 * b);
    dp->xy[2 * l + 1] = at_d(in_p, dp->dtype, 2 * b + 1);
    map_put(&dp->map, in_g[b], (int64_t)l);
  }
  if (n_in > 0) dp->n_slots = (int64_t)first_in + n_in;
}

/* Move, with migration. The batch is gathered on every rank (the concatenation of the ranks'
 * batches is the batch), so each rank knows every row's id, new place and new owner; each rank
 * marks the rows whose ids it holds and the marks are gathered too, so every rank also knows each
 * row's old owner, and every rank can update the partition table itself (counts; boxes grown by
 * the new places) without another exchange.
 *
 * Validation first, on every rank, agreed: the local arguments; then, on the gathered batch
 * (every rank the same verdict): an id repeated, an id no rank holds. Then the shard updates, each
 * one all-or-nothing (rdx_points_move/insert/erase), each followed by an agreement:
 *   1. move the rows that stay on this rank;
 *   2. insert the rows migrating in (they get fresh shard ids);
 *   3. erase the rows migrating out.
 * When a step fails on any rank, every rank undoes the steps that succeeded on it, newest first:
 * 3 by inserting the erased points again at their old places (fresh shard ids, mapped to the same
 * index ids: shard ids are this file's business, the index's ids and answers are as before), 2 by
 * erasing the inserted shard ids, 1 by moving the rows back to their old places (the coordinate
 * copy holds them exactly). The maps grow before step 1, so the bookkeeping after the last
 * agreement cannot fail. The remaining window: an undo is itself an update and can fail (memory);
 * that rank's index is then marked damaged and refuses every later call (so every rank does). */
rdx_status rdx_dist_points_move(rdx_comm *comm, rdx_dist_points *dp, rdx_array ids, rdx_array points) {
  static const char fn[] = "rdx_dist_points_move";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  desc me, *all = NULL;
  memset(&me, 0, sizeof me);
  void *idraw = NULL, *praw = NULL;
  uint64_t *gids = NULL, *in_g = NULL;
  batch bt;
  memset(&bt, 0, sizeof bt);
  void *stay_new = NULL, *stay_old = NULL, *in_p = NULL, *out_old = NULL;
  uint64_t *stay_l = NULL, *out_l = NULL, *undo_l = NULL;
  int64_t n_stay = 0, n_in = 0, n_out = 0;
  uint64_t first_in = 0;
  int did_move = 0, did_insert = 0, did_erase = 0;
  const int64_t n = ids.count;
  size_t es = 8;

  /* 1. this rank's arguments */
  rdx_status st = check_dp(comm, fn, dp);
  if (st == RDX_OK) drop_l2g_dev(dp);
  if (st == RDX_OK) st = map_ready(ctx, fn, dp);
  if (st == RDX_OK) st = rdx_array_check(ctx, fn, "ids", ids);
  if (st == RDX_OK && ((ids.dtype != RDX_U32 && ids.dtype != RDX_U64) || ids.columns != 1))
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                  rdx_dist_dtype_name(ids.dtype), ids.columns);
  if (st == RDX_OK) st = rdx_array_check(ctx, fn, "points", points);
  if (st == RDX_OK && (points.dtype != dp->dtype || points.columns != 2))
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be (m, 2) %s, the index's dtype (dtype %s, columns %d)", fn,
                  rdx_dist_dtype_name(dp->dtype), rdx_dist_dtype_name(points.dtype), points.columns);
  if (st == RDX_OK && points.count != n)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids.count %lld != points.count %lld", fn, (long long)n,
                  (long long)points.count);
  if (st == RDX_OK) {
    es = rdx_dtype_size(dp->dtype);
    st = host_copy(ctx, fn, points, &praw);
  }
  if (st == RDX_OK) st = check_coords(ctx, fn, "points", praw, dp->dtype, n, dp->box);
  if (st == RDX_OK) st = host_copy(ctx, fn, ids, &idraw);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &gids, n, 8);
  if (st == RDX_OK)
    for (int64_t i = 0; i < n; i++) gids[i] = at_id(idraw, ids.dtype, i);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  RDX_DIST_AGREE(st);
  me.op = OP_MOVE;
  me.dtype = points.dtype;
  me.kind = dp->kind;
  me.index_id = dp->id;
  me.count = n;
  RDX_CHECK_GOTO(comm->ops->allgather(comm, &me, all, sizeof me), st, done);
  RDX_CHECK_GOTO(compare(comm, fn, all), st, done);

  /* 2. the whole batch on every rank, and who holds each row */
  RDX_CHECK_GOTO(gather_batch(comm, fn, dp, all, gids, praw, &bt), st, done);
  const int64_t total = bt.total;
  const void *every_p = bt.p;
  const uint64_t *every_g = bt.g;
  const int64_t *row_of = bt.row_of;

  /* 3. this rank's three batches, and room for the bookkeeping */
  for (int64_t t = 0; t < total; t++) {
    int dest = owner_of(dp, at_d(every_p, dp->dtype, 2 * t), at_d(every_p, dp->dtype, 2 * t + 1));
    if (row_of[t] >= 0) {
      if (dest == comm->rank) n_stay++;
      else n_out++;
    } else if (dest == comm->rank) {
      n_in++;
    }
  }
  st = rdx_dist_take(ctx, fn, &stay_l, n_stay, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &stay_new, 2 * n_stay, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &stay_old, 2 * n_stay, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &in_p, 2 * n_in, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &out_l, n_out, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &out_old, 2 * n_out, es);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &undo_l, n_in > n_out ? n_in : n_out, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &in_g, n_in, 8); /* the index ids of the rows migrating in */
  /* shard ids to come: the inserts, and (when undoing step 3) the erased points once more */
  if (st == RDX_OK) st = slots_reserve(ctx, fn, dp, dp->n_slots + n_in + n_out);
  if (st == RDX_OK) st = map_reserve(ctx, fn, &dp->map, dp->map.n + n_in);
  if (st == RDX_OK) {
    int64_t a = 0, b = 0, c = 0;
    for (int64_t t = 0; t < total; t++) {
      double x = at_d(every_p, dp->dtype, 2 * t), y = at_d(every_p, dp->dtype, 2 * t + 1);
      int dest = owner_of(dp, x, y);
      if (row_of[t] >= 0) {
        int64_t l = row_of[t];
        if (dest == comm->rank) {
          stay_l[a] = (uint64_t)l;
          put_d(stay_new, dp->dtype, 2 * a, x);
          put_d(stay_new, dp->dtype, 2 * a + 1, y);
          put_d(stay_old, dp->dtype, 2 * a, dp->xy[2 * l]);
          put_d(stay_old, dp->dtype, 2 * a + 1, dp->xy[2 * l + 1]);
          a++;
        } else {
          out_l[c] = (uint64_t)l;
          put_d(out_old, dp->dtype, 2 * c, dp->xy[2 * l]);
          put_d(out_old, dp->dtype, 2 * c + 1, dp->xy[2 * l + 1]);
          c++;
        }
      } else if (dest == comm->rank) {
        put_d(in_p, dp->dtype, 2 * b, x);
        put_d(in_p, dp->dtype, 2 * b + 1, y);
        in_g[b] = every_g[t];
        b++;
      }
    }
  }
  RDX_DIST_AGREE(st);

  /* 4. the shard updates, each agreed; a failure undoes what succeeded (see above) */
  st = rdx_points_move(ctx, dp->shard, rdx_host_array(stay_l, n_stay, RDX_U64), rdx_host_matrix(stay_new, n_stay, 2, dp->dtype));
  did_move = st == RDX_OK;
  st = rdx_comm_agree(comm, fn, st);
  if (st == RDX_OK) {
    st = rdx_points_insert(ctx, dp->shard, rdx_host_matrix(in_p, n_in, 2, dp->dtype), &first_in);
    did_insert = st == RDX_OK;
    st = rdx_comm_agree(comm, fn, st);
  }
  if (st == RDX_OK) {
    st = rdx_points_erase(ctx, dp->shard, rdx_host_array(out_l, n_out, RDX_U64));
    did_erase = st == RDX_OK;
    st = rdx_comm_agree(comm, fn, st);
  }
  if (st != RDX_OK) {
    /* undo, newest first; the agreed sentence stays the context's unless an undo fails */
    char keep[512];
    snprintf(keep, sizeof keep, "%s", rdx_context_message(ctx));
    rdx_status u = RDX_OK;
    if (did_erase) u = reinsert(ctx, dp, out_l, out_old, n_out);
    if (u == RDX_OK && did_insert && n_in > 0) {
      for (int64_t b = 0; b < n_in; b++) undo_l[b] = first_in + (uint64_t)b;
      u = rdx_points_erase(ctx, dp->shard, rdx_host_array(undo_l, n_in, RDX_U64));
      /* the erased shard ids stay unused: the shard never reuses ids */
      if (u == RDX_OK)
        for (int64_t b = 0; b < n_in; b++) dp->l2g[first_in + (uint64_t)b] = RDX_MISS;
      if (u == RDX_OK && (int64_t)(first_in + (uint64_t)n_in) > dp->n_slots) dp->n_slots = (int64_t)first_in + n_in;
    }
    if (u == RDX_OK && did_move && n_stay > 0)
      u = rdx_points_move(ctx, dp->shard, rdx_host_array(stay_l, n_stay, RDX_U64), rdx_host_matrix(stay_old, n_stay, 2, dp->dtype));
    if (u != RDX_OK) {
      st = damaged(ctx, fn, dp, keep);
    } else {
      (void)rdx_fail(ctx, st, "%s", keep);
    }
    goto done;
  }

  /* 5. every rank updated: the bookkeeping (room reserved above), then the partition table */
  for (int64_t a = 0; a < n_stay; a++) {
    dp->xy[2 * stay_l[a]] = at_d(stay_new, dp->dtype, 2 * a);
    dp->xy[2 * stay_l[a] + 1] = at_d(stay_new, dp->dtype, 2 * a + 1);
  }
  for (int64_t c = 0; c < n_out; c++) {
    map_del(&dp->map, dp->l2g[out_l[c]]);
    dp->l2g[out_l[c]] = RDX_MISS;
  }
  record_in(dp, first_in, n_in, in_g, in_p);
  for (int64_t t = 0; t < total; t++) {
    const int from = holder(&bt, size, t);
    double x = at_d(every_p, dp->dtype, 2 * t), y = at_d(every_p, dp->dtype, 2 * t + 1);
    int dest = owner_of(dp, x, y);
    dp->counts[from]--;
    grow_box(dp, dest, x, y);
  }
done:
  batch_free(ctx, &bt);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, idraw);
  rdx_mem_free(ctx, praw);
  rdx_mem_free(ctx, gids);
  rdx_mem_free(ctx, in_g);
  rdx_mem_free(ctx, stay_l);
  rdx_mem_free(ctx, stay_new);
  rdx_mem_free(ctx, stay_old);
  rdx_mem_free(ctx, in_p);
  rdx_mem_free(ctx, out_l);
  rdx_mem_free(ctx, out_old);
  rdx_mem_free(ctx, undo_l);
  return st;
}

/* ---- inserts and erases ---- */

/* The checks every update makes on its own rank, then the descriptors compared. */
static rdx_status update_args(rdx_comm *comm, const char *fn, dp_op op, rdx_dist_points *dp, rdx_array ids,
                              rdx_array points, int64_t n, uint64_t **gids, void **praw, desc *all) {
  rdx_context *ctx = comm->ctx;
  void *idraw = NULL;
  desc me;
  memset(&me, 0, sizeof me);
  rdx_status st = check_dp(comm, fn, dp);
  if (st == RDX_OK) st = map_ready(ctx, fn, dp);
  if (st == RDX_OK && op != OP_INSERT) {
    st = rdx_array_check(ctx, fn, "ids", ids);
    if (st == RDX_OK && ((ids.dtype != RDX_U32 && ids.dtype != RDX_U64) || ids.columns != 1))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids must be 1-D u32 or u64 (dtype %s, columns %d)", fn,
                    rdx_dist_dtype_name(ids.dtype), ids.columns);
    if (st == RDX_OK) st = host_copy(ctx, fn, ids, &idraw);
    if (st == RDX_OK) st = rdx_dist_take(ctx, fn, gids, n, 8);
    if (st == RDX_OK)
      for (int64_t i = 0; i < n; i++) (*gids)[i] = at_id(idraw, ids.dtype, i);
  }
  if (st == RDX_OK && op != OP_ERASE) {
    st = rdx_array_check(ctx, fn, "points", points);
    if (st == RDX_OK && (points.dtype != dp->dtype || points.columns != 2))
      st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be (m, 2) %s, the index's dtype (dtype %s, columns %d)", fn,
                    rdx_dist_dtype_name(dp->dtype), rdx_dist_dtype_name(points.dtype), points.columns);
    if (st == RDX_OK) st = host_copy(ctx, fn, points, praw);
    if (st == RDX_OK) st = check_coords(ctx, fn, "points", *praw, dp->dtype, n, dp->box);
  }
  rdx_mem_free(ctx, idraw);
  st = rdx_comm_agree(comm, fn, st);
  if (st != RDX_OK) return st;
  me.op = op;
  me.dtype = op == OP_ERASE ? dp->dtype : points.dtype;
  me.kind = dp->kind;
  me.index_id = dp->id;
  me.count = n;
  RDX_CHECK(comm->ops->allgather(comm, &me, all, sizeof me));
  return compare(comm, fn, all);
}

rdx_status rdx_dist_points_insert(rdx_comm *comm, rdx_dist_points *dp, rdx_array points, uint64_t *first_id) {
  static const char fn[] = "rdx_dist_points_insert";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  desc *all = NULL;
  void *praw = NULL, *in_p = NULL;
  uint64_t *in_g = NULL, *undo_l = NULL, first_in = 0;
  int64_t n_in = 0, offset = 0;
  batch bt;
  memset(&bt, 0, sizeof bt);
  const int64_t n = points.count;

  rdx_status st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(update_args(comm, fn, OP_INSERT, dp, rdx_no_array(), points, n, NULL, &praw, all), st, done);
  drop_l2g_dev(dp);
  RDX_CHECK_GOTO(gather_batch(comm, fn, dp, all, NULL, praw, &bt), st, done);
  for (int r = 0; r < comm->rank; r++) offset += bt.cnt[r];
  /* the batch's ids: id_end, id_end + 1, ... over the concatenation (the same verdict everywhere) */
  if (dp->id_end > ((uint64_t)1 << 63) - (uint64_t)bt.total) {
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: the ids would pass 2^63 (id_end %llu, %lld points)", fn,
                  (unsigned long long)dp->id_end, (long long)bt.total);
    goto done;
  }
  const int es2 = (int)(2 * rdx_dtype_size(dp->dtype));
  for (int64_t t = 0; t < bt.total; t++)
    if (owner_of(dp, at_d(bt.p, dp->dtype, 2 * t), at_d(bt.p, dp->dtype, 2 * t + 1)) == comm->rank) n_in++;
  st = rdx_dist_take(ctx, fn, &in_p, n_in, (size_t)es2);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &in_g, n_in, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &undo_l, n_in, 8);
  if (st == RDX_OK) st = slots_reserve(ctx, fn, dp, dp->n_slots + n_in);
  if (st == RDX_OK) st = map_reserve(ctx, fn, &dp->map, dp->map.n + n_in);
  if (st == RDX_OK)
    for (int64_t t = 0, b = 0; t < bt.total; t++)
      if (owner_of(dp, at_d(bt.p, dp->dtype, 2 * t), at_d(bt.p, dp->dtype, 2 * t + 1)) == comm->rank) {
        memcpy((char *)in_p + (size_t)b * (size_t)es2, (const char *)bt.p + (size_t)t * (size_t)es2, (size_t)es2);
        in_g[b++] = dp->id_end + (uint64_t)t;
      }
  RDX_DIST_AGREE(st);
  /* one shard update; undone by erasing what it inserted when another rank failed */
  st = rdx_points_insert(ctx, dp->shard, rdx_host_matrix(in_p, n_in, 2, dp->dtype), &first_in);
  const int did = st == RDX_OK;
  st = rdx_comm_agree(comm, fn, st);
  if (st != RDX_OK) {
    char keep[512];
    snprintf(keep, sizeof keep, "%s", rdx_context_message(ctx));
    if (did && n_in > 0) {
      for (int64_t b = 0; b < n_in; b++) undo_l[b] = first_in + (uint64_t)b;
      rdx_status u = rdx_points_erase(ctx, dp->shard, rdx_host_array(undo_l, n_in, RDX_U64));
      if (u != RDX_OK) {
        st = damaged(ctx, fn, dp, keep);
        goto done;
      }
      for (int64_t b = 0; b < n_in; b++) dp->l2g[first_in + (uint64_t)b] = RDX_MISS;
      dp->n_slots = (int64_t)first_in + n_in;
    }
    (void)rdx_fail(ctx, st, "%s", keep);
    goto done;
  }
  record_in(dp, first_in, n_in, in_g, in_p);
  for (int64_t t = 0; t < bt.total; t++) {
    double x = at_d(bt.p, dp->dtype, 2 * t), y = at_d(bt.p, dp->dtype, 2 * t + 1);
    grow_box(dp, owner_of(dp, x, y), x, y);
  }
  if (first_id != NULL) *first_id = dp->id_end + (uint64_t)offset;
  dp->id_end += (uint64_t)bt.total;
  dp->n_total += bt.total;
done:
  batch_free(ctx, &bt);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, praw);
  rdx_mem_free(ctx, in_p);
  rdx_mem_free(ctx, in_g);
  rdx_mem_free(ctx, undo_l);
  return st;
}

rdx_status rdx_dist_points_erase(rdx_comm *comm, rdx_dist_points *dp, rdx_array ids) {
  static const char fn[] = "rdx_dist_points_erase";
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  desc *all = NULL;
  uint64_t *gids = NULL, *out_l = NULL;
  void *out_old = NULL;
  int64_t n_out = 0;
  batch bt;
  memset(&bt, 0, sizeof bt);
  const int64_t n = ids.count;

  rdx_status st = rdx_dist_take(ctx, fn, &all, size, sizeof(desc));
  RDX_DIST_AGREE(st);
  RDX_CHECK_GOTO(update_args(comm, fn, OP_ERASE, dp, ids, rdx_no_array(), n, &gids, NULL, all), st, done);
  drop_l2g_dev(dp);
  RDX_CHECK_GOTO(gather_batch(comm, fn, dp, all, gids, NULL, &bt), st, done);
  for (int64_t t = 0; t < bt.total; t++) n_out += bt.row_of[t] >= 0;
  st = rdx_dist_take(ctx, fn, &out_l, n_out, 8);
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &out_old, 2 * n_out, rdx_dtype_size(dp->dtype));
  if (st == RDX_OK) st = slots_reserve(ctx, fn, dp, dp->n_slots + n_out); /* for an undo */
  if (st == RDX_OK)
    for (int64_t t = 0, c = 0; t < bt.total; t++)
      if (bt.row_of[t] >= 0) {
        const int64_t l = bt.row_of[t];
        out_l[c] = (uint64_t)l;
        put_d(out_old, dp->dtype, 2 * c, dp->xy[2 * l]);
        put_d(out_old, dp->dtype, 2 * c + 1, dp->xy[2 * l + 1]);
        c++;
      }
  RDX_DIST_AGREE(st);
  /* one shard update; undone by inserting the points again when another rank failed */
  st = rdx_points_erase(ctx, dp->shard, rdx_host_array(out_l, n_out, RDX_U64));
  const int did = st == RDX_OK;
  st = rdx_comm_agree(comm, fn, st);
  if (st != RDX_OK) {
    char keep[512];
    snprintf(keep, sizeof keep, "%s", rdx_context_message(ctx));
    if (did && reinsert(ctx, dp, out_l, out_old, n_out) != RDX_OK) st = damaged(ctx, fn, dp, keep);
    else (void)rdx_fail(ctx, st, "%s", keep);
    goto done;
  }
  for (int64_t c = 0; c < n_out; c++) {
    map_del(&dp->map, dp->l2g[out_l[c]]);
    dp->l2g[out_l[c]] = RDX_MISS;
  }
  for (int64_t t = 0; t < bt.total; t++) dp->counts[holder(&bt, size, t)]--;
  dp->n_total -= bt.total;
done:
  batch_free(ctx, &bt);
  rdx_mem_free(ctx, all);
  rdx_mem_free(ctx, gids);
  rdx_mem_free(ctx, out_l);
  rdx_mem_free(ctx, out_old);
  return st;
}
