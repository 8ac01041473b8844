/*
 * points_check.h: shared pieces of the spatial tests: point set generators (uniform, clustered,
 * duplicate-heavy, on cell boundaries and the box edge, identical), query generators that hit
 * boundaries on purpose, the check of one query batch against the brute-force oracle through
 * every public route (count + fill by hand, the allocating call, host and device arrays), and
 * tree invariant checks that read the index's nodes (internal, spatial.h).
 */
#ifndef RDX_POINTS_CHECK_H
#define RDX_POINTS_CHECK_H

#include <math.h>
#include <signal.h>
#include <unistd.h>

#include "check.h"
#include "points_oracle.h"
#include "spatial/spatial.h"

/* A watchdog: a test that hangs (a stuck kernel would) dies after `seconds` instead of holding a
 * lent GPU until CTest's timeout; the last case and seed say where. RDX_TEST_WATCHDOG sets other
 * seconds, 0 none (runs under compute-sanitizer take many times longer and have their own limit). */
static void pc_alarm(int sig) {
  (void)sig;
  static const char msg[] = "watchdog: the test ran out of time (stuck in a call?)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}
static inline void pc_watchdog(unsigned seconds) {
  const char *e = getenv("RDX_TEST_WATCHDOG");
  if (e && *e) seconds = (unsigned)strtoul(e, NULL, 10);
  if (seconds == 0) return;
  signal(SIGALRM, pc_alarm);
  alarm(seconds);
}

/* What is being checked (index kind, shape), printed with every mismatch. */
static char pc_label[160] = "";

/* ---- point sets ---- */

typedef struct pset {
  int64_t n;
  rdx_dtype dt;
  double *x, *y;   /* the coordinates as the index sees them (rounded to f32 for RDX_F32) */
  uint64_t *id;    /* 0..n-1 */
  void *xy;        /* interleaved in dt */
} pset;

static inline double pc_unit(void) { return (double)(check_rand_() >> 11) * 0x1.0p-53; }

/* v as the dtype stores it. The volatile matters: GCC 12.2's -O2 SLP vectorizer drops the
 * double -> float -> double round trip when it vectorizes qset_make's stores. */
static inline double pc_round(rdx_dtype dt, double v) {
  if (dt != RDX_F32) return v;
  volatile float f = (float)v;
  return (double)f;
}

static inline void pset_alloc(pset *p, int64_t n, rdx_dtype dt) {
  memset(p, 0, sizeof *p);
  p->n = n;
  p->dt = dt;
  size_t b = (size_t)(n ? n : 1) * 8;
  p->x = (double *)malloc(b);
  p->y = (double *)malloc(b);
  p->id = (uint64_t *)malloc(b);
  p->xy = malloc(2 * b);
}

static inline void pset_set(pset *p, int64_t i, double x, double y) {
  x = pc_round(p->dt, x);
  y = pc_round(p->dt, y);
  p->x[i] = x;
  p->y[i] = y;
  p->id[i] = (uint64_t)i;
  if (p->dt == RDX_F32) {
    ((float *)p->xy)[2 * i] = (float)x;
    ((float *)p->xy)[2 * i + 1] = (float)y;
  } else {
    ((double *)p->xy)[2 * i] = x;
    ((double *)p->xy)[2 * i + 1] = y;
  }
}

static inline void pset_free(pset *p) {
  free(p->x);
  free(p->y);
  free(p->id);
  free(p->xy);
  memset(p, 0, sizeof *p);
}

static inline rdx_array pset_array(const pset *p) { return rdx_host_matrix(p->xy, p->n, 2, p->dt); }

enum { GEN_UNIFORM, GEN_CLUSTERED, GEN_DUPLICATES, GEN_GRID, GEN_IDENTICAL, GEN_EDGE, GEN_NEGZERO, GEN_COUNT };
static const char *const gen_names[] = {"uniform", "clustered", "duplicates", "grid", "identical", "edge", "negzero"};

/* The tests' index kinds by number: 0 a quadtree built bottom-up, 1 top-down, 2 a k-d tree. */
static inline const char *pc_kind_name(int kind) { return kind == 2 ? "kd" : kind ? "qt-td" : "qt-bu"; }

/* n points of a kind in roughly [-50, 150] x [10, 70] (off-centre, negative coordinates too). */
static inline pset pset_make(int gen, int64_t n, rdx_dtype dt) {
  pset p;
  pset_alloc(&p, n, dt);
  double cx[8], cy[8];
  for (int c = 0; c < 8; c++) cx[c] = -50 + 200 * pc_unit(), cy[c] = 10 + 60 * pc_unit();
  for (int64_t i = 0; i < n; i++) {
    double x, y;
    switch (gen) {
      case GEN_CLUSTERED: { /* tight Gaussian-ish clusters plus background */
        int c = (int)check_below(8);
        if (check_below(10) == 0) {
          x = -50 + 200 * pc_unit(), y = 10 + 60 * pc_unit();
        } else {
          double s = c < 2 ? 0.001 : 0.5;
          x = cx[c] + s * (pc_unit() + pc_unit() + pc_unit() - 1.5);
          y = cy[c] + s * (pc_unit() + pc_unit() + pc_unit() - 1.5);
        }
        break;
      }
      case GEN_DUPLICATES: /* few distinct places, each repeated many times */
        if (i > 0 && check_below(4) != 0) {
          int64_t j = (int64_t)check_below((uint64_t)i);
          x = p.x[j], y = p.y[j];
        } else {
          x = -50 + 200 * pc_unit(), y = 10 + 60 * pc_unit();
        }
        break;
      case GEN_GRID: /* coordinates on a 1/16 lattice: many points on cell boundaries */
        x = -50 + (double)check_below(200 * 16 + 1) / 16.0;
        y = 10 + (double)check_below(60 * 16 + 1) / 16.0;
        break;
      case GEN_IDENTICAL:
        x = 3.25, y = 17.5;
        break;
      case GEN_EDGE: /* many points exactly on the bounding box's edges and corners */
        x = check_below(3) == 0 ? (check_below(2) ? -50.0 : 150.0) : -50 + 200 * pc_unit();
        y = check_below(3) == 0 ? (check_below(2) ? 10.0 : 70.0) : 10 + 60 * pc_unit();
        if (i < 4) x = i & 1 ? 150.0 : -50.0, y = i & 2 ? 70.0 : 10.0;
        break;
      case GEN_NEGZERO: /* -0.0 and 0.0 mixed, near the origin */
        x = check_below(3) == 0 ? (check_below(2) ? -0.0 : 0.0) : pc_unit() - 0.5;
        y = check_below(3) == 0 ? (check_below(2) ? -0.0 : 0.0) : pc_unit() - 0.5;
        break;
      default:
        x = -50 + 200 * pc_unit(), y = 10 + 60 * pc_unit();
    }
    pset_set(&p, i, x, y);
  }
  return p;
}

/* ---- queries ---- */

static inline int pc_cols(int type) { return type == PO_WINDOW ? 4 : type == PO_WITHIN ? 3 : 2; }

typedef struct qset {
  int type, k;
  int64_t m;
  rdx_dtype dt;
  double *q;       /* m x cols doubles (as rounded to dt) */
  void *data;      /* m x cols in dt */
} qset;

static inline void qset_put(qset *s, int64_t i, int c, double v) {
  v = pc_round(s->dt, v);
  int cols = pc_cols(s->type);
  s->q[i * cols + c] = v;
  if (s->dt == RDX_F32) ((float *)s->data)[i * cols + c] = (float)v;
  else ((double *)s->data)[i * cols + c] = v;
}

/* m queries of a type over point set p: centred on points, exactly on their coordinates and at
 * exact distances (boundaries), far away, empty windows, zero radii. */
static inline qset qset_make(const pset *p, int type, int k, int64_t m) {
  qset s;
  memset(&s, 0, sizeof s);
  s.type = type, s.k = k, s.m = m, s.dt = p->dt;
  int cols = pc_cols(type);
  s.q = (double *)malloc((size_t)(m ? m : 1) * (size_t)cols * 8);
  s.data = malloc((size_t)(m ? m : 1) * (size_t)cols * 8);
  for (int64_t i = 0; i < m; i++) {
    int64_t a = p->n ? (int64_t)check_below((uint64_t)p->n) : 0, b = p->n ? (int64_t)check_below((uint64_t)p->n) : 0;
    double ax = p->n ? p->x[a] : 0, ay = p->n ? p->y[a] : 0, bx = p->n ? p->x[b] : 1, by = p->n ? p->y[b] : 1;
    int r = (int)check_below(8);
    double rx = -60 + 220 * pc_unit(), ry = 0 + 80 * pc_unit();
    if (type == PO_MATCH || type == PO_KNN) {
      if (r < 4) qset_put(&s, i, 0, ax), qset_put(&s, i, 1, ay);      /* an existing point */
      else if (r == 4) qset_put(&s, i, 0, ax), qset_put(&s, i, 1, by); /* shares one coordinate */
      else if (r == 5) qset_put(&s, i, 0, 1e6), qset_put(&s, i, 1, -1e6); /* far outside */
      else qset_put(&s, i, 0, rx), qset_put(&s, i, 1, ry);
    } else if (type == PO_WINDOW) {
      double x0 = ax < bx ? ax : bx, x1 = ax < bx ? bx : ax, y0 = ay < by ? ay : by, y1 = ay < by ? by : ay;
      if (r == 0) x0 = x1 = ax, y0 = y1 = ay;                    /* a point */
      else if (r == 1) x0 = -1e9, y0 = -1e9, x1 = 1e9, y1 = 1e9; /* everything */
      else if (r == 2) { double t = x0; x0 = x1 + 1; x1 = t; }  /* xmin > xmax: empty */
      else if (r == 3) x1 = x0 + 0.5 * pc_unit(), y1 = y0 + 0.5 * pc_unit();
      else if (r == 4) x0 = rx, y0 = ry, x1 = rx + 3 * pc_unit(), y1 = ry + 3 * pc_unit();
      else if (r == 5) x0 = 1000, x1 = 2000;                     /* outside the box */
      qset_put(&s, i, 0, x0), qset_put(&s, i, 1, y0), qset_put(&s, i, 2, x1), qset_put(&s, i, 3, y1);
    } else { /* within */
      double rad;
      if (r < 3) rad = sqrt((ax - bx) * (ax - bx) + (ay - by) * (ay - by)); /* through point b, about */
      else if (r == 3) rad = 0;
      else if (r == 4) rad = 1e9;
      else if (r == 5) rad = 5; /* exact 3-4-5 triangles on lattices */
      else rad = 2 * pc_unit();
      if (r == 5) ax = ax - 3, ay = ay - 4;
      qset_put(&s, i, 0, r == 6 ? rx : ax), qset_put(&s, i, 1, r == 6 ? ry : ay), qset_put(&s, i, 2, rad);
    }
  }
  return s;
}

static inline void qset_free(qset *s) {
  free(s->q);
  free(s->data);
  memset(s, 0, sizeof *s);
}

static inline rdx_points_query_type pc_api_type(int type) {
  return type == PO_MATCH ? RDX_POINTS_MATCH : type == PO_WINDOW ? RDX_POINTS_WINDOW
         : type == PO_WITHIN ? RDX_POINTS_WITHIN : RDX_POINTS_KNN;
}
static const char *const type_names[] = {"match", "window", "within", "knn"};

static inline int pc_gpu(rdx_context *ctx) { return rdx_context_backend(ctx) != RDX_BACKEND_CPU; }

static inline rdx_array pc_to_device(rdx_context *ctx, rdx_array h) {
  if (!pc_gpu(ctx) || h.data == NULL) return h;
  size_t bytes = (size_t)h.count * (size_t)h.columns * rdx_dtype_size(h.dtype);
  void *d = NULL;
  CHECK_OK(ctx, rdx_malloc(ctx, &d, bytes ? bytes : 1, RDX_DEVICE));
  CHECK_OK(ctx, rdx_copy(ctx, d, RDX_DEVICE, h.data, RDX_HOST, bytes));
  rdx_array a = h;
  a.data = d;
  a.where = RDX_DEVICE;
  return a;
}
static inline void pc_free_device(rdx_context *ctx, rdx_array a) {
  if (a.where == RDX_DEVICE) rdx_free(ctx, a.data, RDX_DEVICE);
}

/* Compare one batch's CSR answer with the oracle; print the first mismatch. Returns 1 if equal. */
static inline int pc_compare(points_oracle *o, const qset *s, const uint64_t *offsets, const uint64_t *rows, const char *route) {
  int cols = pc_cols(s->type);
  uint64_t *want = (uint64_t *)malloc((size_t)(o->n + 1) * 8);
  int ok = 1;
  if (offsets[0] != 0) {
    CHECK_FAIL_("%s %s: offsets[0] = %llu", type_names[s->type], route, (unsigned long long)offsets[0]);
    ok = 0;
  }
  for (int64_t i = 0; i < s->m && ok; i++) {
    int64_t c = points_oracle_query(o, s->type, s->q + i * cols, s->k, want);
    uint64_t got = offsets[i + 1] - offsets[i];
    const double *q = s->q + i * cols;
    if (got != (uint64_t)c || (c && memcmp(want, rows + offsets[i], (size_t)c * 8) != 0)) {
      int64_t j = 0;
      while (j < c && j < (int64_t)got && want[j] == rows[offsets[i] + j]) j++;
      CHECK_FAIL_("[%s] %s %s: query %lld (%.17g, %.17g, %.17g, %.17g; k %d): %llu ids, oracle %lld; first difference at %lld "
                  "(got %llu, want %llu)",
                  pc_label, type_names[s->type], route, (long long)i, q[0], q[1], cols > 2 ? q[2] : 0.0, cols > 3 ? q[3] : 0.0,
                  s->k, (unsigned long long)got, (long long)c, (long long)j,
                  j < (int64_t)got ? (unsigned long long)rows[offsets[i] + j] : 0ull,
                  j < c ? (unsigned long long)want[j] : 0ull);
      ok = 0;
    }
  }
  free(want);
  return ok;
}

/* Run one batch through count + fill (host arrays), the allocating call (host, and device on
 * GPUs) and check all against the oracle. */
static inline void pc_check_batch(rdx_context *ctx, rdx_points *pts, points_oracle *o, const qset *s) {
  rdx_points_query q = RDX_POINTS_QUERY_INIT;
  q.type = pc_api_type(s->type);
  q.k = s->k;
  rdx_array qa = rdx_host_matrix(s->data, s->m, pc_cols(s->type), s->dt);
  int64_t m = s->m;
  uint64_t *counts = (uint64_t *)malloc((size_t)(m + 1) * 8), *offsets = (uint64_t *)malloc((size_t)(m + 2) * 8);
  CHECK_OK(ctx, rdx_points_query_count(ctx, pts, qa, &q, rdx_host_array(counts, m, RDX_U64)));
  uint64_t total = 0;
  CHECK_OK(ctx, rdx_counts_to_offsets(ctx, rdx_host_array(counts, m, RDX_U64), rdx_host_array(offsets, m + 1, RDX_U64),
                                      &total));
  uint64_t *rows = (uint64_t *)malloc((size_t)(total + 1) * 8);
  rows[total] = 0xA5A5A5A5A5A5A5A5ull;
  CHECK_OK(ctx, rdx_points_query_fill(ctx, pts, qa, &q, rdx_host_array(offsets, m + 1, RDX_U64),
                                      rdx_host_array(rows, (int64_t)total, RDX_U64)));
  pc_compare(o, s, offsets, rows, "count+fill");
  CHECK_EQ(rows[total], 0xA5A5A5A5A5A5A5A5ull);
  free(rows);
  for (int pass = 0; pass < (pc_gpu(ctx) ? 2 : 1); pass++) {
    rdx_array qd = pass ? pc_to_device(ctx, qa) : qa;
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_points_query_alloc(ctx, pts, qd, &q, &r));
    if (r) {
      uint64_t *ho, *hr;
      check_result_host(ctx, r, &ho, &hr);
      pc_compare(o, s, ho, hr, pass ? "alloc (device)" : "alloc");
      check_result_host_free(r, ho, hr);
      rdx_result_free(ctx, r);
    }
    pc_free_device(ctx, qd);
  }
  free(counts);
  free(offsets);
}

/* Every query type against the oracle of the points now in the index (o). */
static inline void pc_check_all(rdx_context *ctx, rdx_points *pts, points_oracle *o, const pset *p, int64_t m) {
  static const int ks[] = {1, 3, 16, 100};
  for (int type = 0; type < 4; type++) {
    int k = type == PO_KNN ? ks[check_below(4)] : 0;
    if (type == PO_KNN && check_below(8) == 0) k = (int)(o->n + 5 < 1024 ? o->n + 5 : 1024); /* k > n */
    qset s = qset_make(p, type, k, m);
    pc_check_batch(ctx, pts, o, &s);
    qset_free(&s);
  }
}

/* ---- trees ---- */

/* Pool arrays of an index on the host (x, y as doubles, id, key as u64). */
typedef struct pc_pool {
  int64_t cap;
  double *x, *y;
  uint64_t *id, *key;
} pc_pool;

static inline pc_pool pc_pool_get(rdx_context *ctx, const rdx_points *pts) {
  pc_pool p;
  p.cap = pts->pool.cap;
  size_t c = (size_t)(p.cap ? p.cap : 1), es = pts->f64 ? 8 : 4;
  p.x = (double *)malloc(c * 8), p.y = (double *)malloc(c * 8);
  p.id = (uint64_t *)malloc(c * 8), p.key = (uint64_t *)malloc(c * 8);
  void *tx = malloc(c * es), *ty = malloc(c * es), *tk = malloc(c * 8);
  rdx_location loc = pc_gpu(ctx) ? RDX_DEVICE : RDX_HOST;
  int kb = pts->pool.key_bytes;
  if (p.cap) {
    CHECK_OK(ctx, rdx_copy(ctx, tx, RDX_HOST, pts->pool.x, loc, (size_t)p.cap * es));
    CHECK_OK(ctx, rdx_copy(ctx, ty, RDX_HOST, pts->pool.y, loc, (size_t)p.cap * es));
    CHECK_OK(ctx, rdx_copy(ctx, p.id, RDX_HOST, pts->pool.id, loc, (size_t)p.cap * 8));
    if (pts->pool.key) CHECK_OK(ctx, rdx_copy(ctx, tk, RDX_HOST, pts->pool.key, loc, (size_t)p.cap * (size_t)kb));
  }
  for (int64_t i = 0; i < p.cap; i++) {
    p.x[i] = pts->f64 ? ((double *)tx)[i] : ((float *)tx)[i];
    p.y[i] = pts->f64 ? ((double *)ty)[i] : ((float *)ty)[i];
    p.key[i] = !pts->pool.key ? 0 : kb == 4 ? ((uint32_t *)tk)[i] : ((uint64_t *)tk)[i];
  }
  free(tx);
  free(ty);
  free(tk);
  return p;
}
static inline void pc_pool_free(pc_pool *p) {
  free(p->x);
  free(p->y);
  free(p->id);
  free(p->key);
}

/* Structural invariants of an index's tree; returns 1 when they hold (failures are printed only
 * when `report`). Checks: BFS order, children links, counts, capacity, leaves' points inside
 * their cells (quadtree) or on the right side of every split (k-d), every id exactly once. */
static inline int pc_tree_ok(rdx_context *ctx, const rdx_points *pts, int report) {
  if (rdx_sp_sync_host_nodes(ctx, (rdx_points *)pts) != RDX_OK) {
    if (report) CHECK_FAIL_("host copy of the nodes: %s", rdx_context_message(ctx));
    return 0;
  }
  const rdx_sp_nodes *H = &pts->host;
  pc_pool pool = pc_pool_get(ctx, pts);
  int ok = 1, kd = pts->kind == RDX_POINTS_KDTREE;
  int D = pts->grid.depth;
#define TREE_FAIL(...)                     \
  do {                                     \
    if (report) CHECK_FAIL_(__VA_ARGS__);  \
    ok = 0;                                \
    goto out;                              \
  } while (0)
  int64_t total = 0;
  uint64_t *seen = (uint64_t *)calloc((size_t)(pts->id_end / 64 + 1), 8);
  /* per node region bounds for the k-d check: lo/hi on both axes */
  double *reg = (double *)malloc((size_t)(H->n ? H->n : 1) * 4 * sizeof(double));
  if (H->n < 1) TREE_FAIL("tree has %lld nodes", (long long)H->n);
  reg[0] = -INFINITY, reg[1] = -INFINITY, reg[2] = INFINITY, reg[3] = INFINITY;
  for (int64_t i = 0; i < H->n; i++) {
    if (i > 0 && !(H->level[i] > H->level[i - 1] || (H->level[i] == H->level[i - 1] && H->key[i] > H->key[i - 1])))
      TREE_FAIL("node %lld is out of BFS order", (long long)i);
    if (H->leaf[i]) {
      if (H->len[i] != H->count[i]) TREE_FAIL("leaf %lld: len %lld != count %lld", (long long)i, (long long)H->len[i], (long long)H->count[i]);
      if (H->len[i] > pts->cap && H->level[i] < pts->depth)
        TREE_FAIL("leaf %lld at level %d holds %lld > capacity %d", (long long)i, H->level[i], (long long)H->len[i], pts->cap);
      if (H->len[i] == 0 && i != 0 && !kd) TREE_FAIL("empty quadtree leaf %lld", (long long)i);
      if (H->room[i] < H->len[i] || H->fpos[i] < 0 || H->fpos[i] + H->room[i] > pool.cap)
        TREE_FAIL("leaf %lld extent [%lld, +%lld) room %lld outside the pool of %lld", (long long)i, (long long)H->fpos[i],
                  (long long)H->len[i], (long long)H->room[i], (long long)pool.cap);
      for (int64_t s = H->fpos[i]; s < H->fpos[i] + H->len[i]; s++) {
        uint64_t id = pool.id[s];
        if (id >= pts->id_end || (seen[id / 64] >> (id % 64)) & 1) TREE_FAIL("id %llu in leaf %lld is unknown or twice", (unsigned long long)id, (long long)i);
        seen[id / 64] |= 1ull << (id % 64);
        total++;
        if (kd) {
          const double *r = reg + 4 * i;
          if (!(r[0] <= pool.x[s] && pool.x[s] <= r[2] && r[1] <= pool.y[s] && pool.y[s] <= r[3]))
            TREE_FAIL("point %llu (%g, %g) of k-d leaf %lld is outside its region", (unsigned long long)id, pool.x[s], pool.y[s], (long long)i);
          /* a dense pool (the GPU repair's): slots in leaf order, each with a code in its leaf's
           * range (the leaf's path left-aligned; a merged leaf's points keep their old leaves' codes) */
          const int al = pts->pool.key_bytes == 4 && pts->depth > 32 ? 32 : pts->depth; /* u32 codes: 32 bits */
          const uint64_t lo = H->key[i] << (al - H->level[i]), hi = (H->key[i] + 1) << (al - H->level[i]);
          if (pts->layout == RDX_POINTS_DENSE && pts->pool.key && !(lo <= pool.key[s] && pool.key[s] < hi))
            TREE_FAIL("slot %lld stores code %llu, outside its k-d leaf %lld's [%llu, %llu)", (long long)s,
                      (unsigned long long)pool.key[s], (long long)i, (unsigned long long)lo, (unsigned long long)hi);
        } else {
          uint64_t k = rdx_sp_point_key(&pts->grid, pool.x[s], pool.y[s]);
          if ((k >> (2 * (D - H->level[i]))) != H->key[i])
            TREE_FAIL("point %llu (code %llu) of leaf %lld (level %d, key %llu) lies outside the leaf's cell", (unsigned long long)id,
                      (unsigned long long)k, (long long)i, H->level[i], (unsigned long long)H->key[i]);
          if (pts->pool.key && pool.key[s] != k) TREE_FAIL("slot %lld stores code %llu, point has %llu", (long long)s, (unsigned long long)pool.key[s], (unsigned long long)k);
        }
      }
    } else {
      if (H->count[i] <= pts->cap && i != 0) TREE_FAIL("internal node %lld holds only %lld points", (long long)i, (long long)H->count[i]);
      if (H->fpos[i] <= i || H->fpos[i] + H->len[i] > H->n || H->len[i] < 1 || H->len[i] > (kd ? 2 : 4))
        TREE_FAIL("internal node %lld links children [%lld, +%lld)", (long long)i, (long long)H->fpos[i], (long long)H->len[i]);
      int64_t sum = 0;
      for (int64_t c = H->fpos[i]; c < H->fpos[i] + H->len[i]; c++) {
        if (H->level[c] != H->level[i] + 1 || (H->key[c] >> (kd ? 1 : 2)) != H->key[i])
          TREE_FAIL("node %lld is no child of %lld", (long long)c, (long long)i);
        sum += H->count[c];
        if (kd) {
          double *r = reg + 4 * c;
          memcpy(r, reg + 4 * i, 4 * sizeof(double));
          int axis = H->level[i] & 1;
          if (c == H->fpos[i]) r[2 + axis] = H->split[i];
          else r[axis] = H->split[i];
        }
      }
      if (sum != H->count[i]) TREE_FAIL("node %lld counts %lld, children %lld", (long long)i, (long long)H->count[i], (long long)sum);
    }
  }
  if (total != pts->n) TREE_FAIL("leaves hold %lld points, index has %lld", (long long)total, (long long)pts->n);
  if (H->count[0] != pts->n) TREE_FAIL("root counts %lld, index has %lld", (long long)H->count[0], (long long)pts->n);
out:
#undef TREE_FAIL
  free(seen);
  free(reg);
  pc_pool_free(&pool);
  return ok;
}

#endif /* RDX_POINTS_CHECK_H */
