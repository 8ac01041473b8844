/*
 * lsi.c: segment intersection (LSI) on the CPU: lsi_hd.h's rays on the thread pool, then the edge
 * pairs turned into sorted unique feature pairs and, on request, points.
 *
 * Stages (rdx_jn_lsi_stats names their times):
 *   count   per S edge (chunks of EDGES_PER_TASK, taken dynamically), its intersecting R edges;
 *   fill    a serial scan of the counts, then the same pass writing (r edge << 32 | s edge) at
 *           each S edge's offset;
 *   points  (want_points) per chunk of PAIRS_PER_TASK edge pairs, their points counted, scanned,
 *           written with the (r feature << 32 | s feature) key; sorted by (key, x, y) with three
 *           stable radix sorts (y, then x, then the key) carrying a u32 permutation; unique;
 *   pairs   the edge pairs mapped in place to feature keys, radix sorted (src/core/radix.c) and
 *           made unique on the pool: per chunk its count of firsts, a scan, then the writes.
 * Tuned for joins of 10^4 to 10^8 edges per layer with output a small fraction of the input.
 */
#include "join/join.h"
#include "join/lsi_hd.h"

#include <stdatomic.h>
#include <string.h>

#define EDGES_PER_TASK 1024
#define PAIRS_PER_TASK ((int64_t)1 << 16)
#define TALLY 4 /* per task: candidates, rays, clipped, brute */

typedef struct lsi_job {
  rdx_jn_lsi_r r;
  const double *sxy;
  const uint32_t *send;
  int64_t n_s;
  uint64_t *counts;          /* count pass: intersecting R edges per S edge */
  const uint64_t *offsets;   /* fill pass: n_s + 1 */
  uint64_t *pairs;           /* fill pass: edge pairs */
  int64_t *tally;            /* count pass: TALLY per task */
  atomic_int mismatch;       /* the fill met another count (a bug) */
} lsi_job;

static int64_t task_end(int64_t t, int64_t per, int64_t n) { return (t + 1) * per < n ? (t + 1) * per : n; }

static void edges_task(void *arg, int64_t t, int thread) {
  (void)thread;
  lsi_job *j = (lsi_job *)arg;
  int64_t tally[TALLY] = {0, 0, 0, 0};
  for (int64_t e = t * EDGES_PER_TASK; e < task_end(t, EDGES_PER_TASK, j->n_s); e++) {
    rdx_jn_lsi_state st;
    const double *s0 = j->sxy + 2 * e, *s1 = j->sxy + 2 * (uint64_t)j->send[e];
    uint64_t *out = j->pairs ? j->pairs + j->offsets[e] : NULL;
    uint64_t cap = j->pairs ? j->offsets[e + 1] - j->offsets[e] : 0;
    rdx_jn_lsi_begin(&j->r, s0, s1, (uint32_t)e, out, cap, &st);
    int how = rdx_jn_lsi_edge(&j->r, &st);
    if (j->pairs) {
      if (st.hits != cap) atomic_store(&j->mismatch, 1);
      continue;
    }
    j->counts[e] = st.hits;
    tally[0] += (int64_t)st.candidates;
    tally[1] += how == RDX_JN_LSI_RAY;
    tally[2] += how == RDX_JN_LSI_CLIPPED;
    tally[3] += how == RDX_JN_LSI_BRUTE;
  }
  if (!j->pairs) memcpy(j->tally + TALLY * t, tally, sizeof tally);
}

/* R's side of the join from the layer and the index, host memory. */
static rdx_jn_lsi_r lsi_r_of(const rdx_polygons *r, const rdx_jn_index *ix) {
  rdx_jn_lsi_r R;
  R.v = rdx_bvh_view_of(&ix->scene.bvh);
  R.xy = r->host.xy;
  R.edge_end = r->host.edge_end;
  R.group_first = ix->group_first;
  R.n_edges = r->host.n_vertices;
  for (int k = 0; k < 2; k++) R.lo[k] = r->lo[k], R.hi[k] = r->hi[k];
  R.tol = rdx_jn_lsi_index_tol(ix->pad_ulps, ix->abs_pad);
  return R;
}

/* Count and fill: *pairs (n = *n_pairs) gets every intersecting edge pair. */
rdx_status rdx_jn_lsi_edge_pairs_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                     const rdx_polygons *s, uint64_t **pairs, int64_t *n_pairs,
                                     rdx_jn_lsi_stats *stats) {
  static const char what[] = "rdx_join_lsi: edge pairs";
  lsi_job j;
  memset(&j, 0, sizeof j);
  j.r = lsi_r_of(r, ix);
  j.sxy = s->host.xy;
  j.send = s->host.edge_end;
  j.n_s = s->host.n_vertices;
  atomic_init(&j.mismatch, 0);
  int64_t n_tasks = (j.n_s + EDGES_PER_TASK - 1) / EDGES_PER_TASK;
  uint64_t *offsets = NULL;
  rdx_status st = RDX_OK;
  *pairs = NULL;
  double t0 = rdx_now_ms();
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&offsets, (size_t)(j.n_s + 1) * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.tally, (size_t)n_tasks * TALLY * 8, RDX_HOST), st, fail);
  j.counts = offsets; /* counts in place, scanned below */
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, edges_task, &j), st, fail);
  for (int64_t t = 0; t < n_tasks; t++) {
    stats->candidates += j.tally[TALLY * t];
    stats->rays += j.tally[TALLY * t + 1];
    stats->clipped += j.tally[TALLY * t + 2];
    stats->brute += j.tally[TALLY * t + 3];
  }
  double t1 = rdx_now_ms();
  stats->count_ms = t1 - t0;
  uint64_t total = 0;
  for (int64_t e = 0; e < j.n_s; e++) {
    uint64_t c = offsets[e];
    offsets[e] = total;
    total += c;
  }
  offsets[j.n_s] = total;
  if (total > (uint64_t)INT64_MAX / 16) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %llu intersecting edge pairs overflow the address space", what,
                  (unsigned long long)total);
    goto fail;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)pairs, (size_t)total * 8, RDX_HOST), st, fail);
  j.offsets = offsets;
  j.pairs = *pairs;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, edges_task, &j), st, fail);
  if (atomic_load(&j.mismatch)) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the filling pass met other counts than the counting pass", what);
    goto fail;
  }
  stats->fill_ms = rdx_now_ms() - t1;
  stats->edge_pairs = (int64_t)total;
  *n_pairs = (int64_t)total;
  rdx_mem_free(ctx, offsets);
  rdx_mem_free(ctx, j.tally);
  return RDX_OK;
fail:
  rdx_mem_free(ctx, offsets);
  rdx_mem_free(ctx, j.tally);
  rdx_mem_free(ctx, *pairs);
  *pairs = NULL;
  return st;
}

/* ---- points ---- */

typedef struct points_job {
  const double *rxy, *sxy;
  const uint32_t *rend, *send, *rfeat, *sfeat;
  const uint64_t *pairs;
  int64_t n;
  uint64_t *chunk;           /* per task: its points' count, then their first slot */
  int fill;
  double *x, *y;             /* fill */
  uint64_t *key;             /* fill: (r feature << 32 | s feature) */
} points_job;

static void points_task(void *arg, int64_t t, int thread) {
  (void)thread;
  points_job *j = (points_job *)arg;
  uint64_t k = j->fill ? j->chunk[t] : 0;
  for (int64_t i = t * PAIRS_PER_TASK; i < task_end(t, PAIRS_PER_TASK, j->n); i++) {
    uint32_t re = (uint32_t)(j->pairs[i] >> 32), se = (uint32_t)j->pairs[i];
    const double *r0 = j->rxy + 2 * (uint64_t)re, *r1 = j->rxy + 2 * (uint64_t)j->rend[re];
    const double *s0 = j->sxy + 2 * (uint64_t)se, *s1 = j->sxy + 2 * (uint64_t)j->send[se];
    if (!j->fill) {
      k += (uint64_t)rdx_jn_lsi_point_count(r0, r1, s0, s1);
      continue;
    }
    double p[4];
    int n = rdx_jn_lsi_points(r0, r1, s0, s1, p);
    for (int q = 0; q < n; q++, k++) {
      j->x[k] = p[2 * q];
      j->y[k] = p[2 * q + 1];
      j->key[k] = (uint64_t)j->rfeat[re] << 32 | j->sfeat[se];
    }
  }
  if (!j->fill) j->chunk[t] = k;
}

/* A sort key gathered through the permutation: pass 0 y, 1 x, 2 the feature key. */
typedef struct gather_job {
  const double *x, *y;
  const uint64_t *key;
  const uint32_t *perm;
  uint64_t *out;
  int64_t n;
  int pass;
} gather_job;

static void gather_task(void *arg, int64_t t, int thread) {
  (void)thread;
  gather_job *j = (gather_job *)arg;
  for (int64_t i = t * PAIRS_PER_TASK; i < task_end(t, PAIRS_PER_TASK, j->n); i++) {
    uint32_t p = j->perm[i];
    j->out[i] = j->pass == 0 ? rdx_jn_lsi_f64_key(j->y[p]) : j->pass == 1 ? rdx_jn_lsi_f64_key(j->x[p]) : j->key[p];
  }
}

/* The points' order by (key, x, y): perm (n entries) with three stable radix sorts. */
static rdx_status points_order(rdx_context *ctx, const double *x, const double *y, const uint64_t *key, int64_t n,
                               uint32_t **perm) {
  static const char what[] = "rdx_join_lsi: sorting points";
  uint64_t *kb = NULL, *kb2 = NULL;
  uint32_t *pb = NULL, *pb2 = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&kb, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&kb2, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&pb, (size_t)n * 4, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&pb2, (size_t)n * 4, RDX_HOST), st, done);
  for (int64_t i = 0; i < n; i++) pb[i] = (uint32_t)i;
  for (int pass = 0; pass < 3; pass++) {
    gather_job g = {x, y, key, pb, kb, n, pass};
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK, gather_task, &g), st, done);
    RDX_CHECK_GOTO(rdx_radix_sort_u64(ctx, &kb, &kb2, &pb, &pb2, n), st, done);
  }
  *perm = pb;
  pb = NULL;
done:
  rdx_mem_free(ctx, kb);
  rdx_mem_free(ctx, kb2);
  rdx_mem_free(ctx, pb);
  rdx_mem_free(ctx, pb2);
  return st;
}

/* Whether sorted point i differs from point i - 1 (through perm). */
static int point_first(const double *x, const double *y, const uint64_t *key, const uint32_t *perm, int64_t i) {
  if (i == 0) return 1;
  uint32_t a = perm[i - 1], b = perm[i];
  return key[a] != key[b] || x[a] != x[b] || y[a] != y[b];
}

/* The sorted points before they are written: x, y, key per point, perm their order, m distinct. */
typedef struct sorted_points {
  double *xy;                /* x[n], then y[n] */
  uint64_t *key;
  uint32_t *perm;
  int64_t n, m;
} sorted_points;

static void sorted_points_free(rdx_context *ctx, sorted_points *sp) {
  rdx_mem_free(ctx, sp->xy);
  rdx_mem_free(ctx, sp->key);
  rdx_mem_free(ctx, sp->perm);
  memset(sp, 0, sizeof *sp);
}

static rdx_status points_prepare(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const uint64_t *pairs,
                                 int64_t n_pairs, sorted_points *sp) {
  static const char what[] = "rdx_join_lsi: points";
  points_job j;
  memset(&j, 0, sizeof j);
  memset(sp, 0, sizeof *sp);
  j.rxy = r->host.xy, j.sxy = s->host.xy;
  j.rend = r->host.edge_end, j.send = s->host.edge_end;
  j.rfeat = r->host.edge_feat, j.sfeat = s->host.edge_feat;
  j.pairs = pairs;
  j.n = n_pairs;
  int64_t n_tasks = (n_pairs + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK;
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.chunk, (size_t)(n_tasks + 1) * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, points_task, &j), st, done);
  uint64_t total = 0;
  for (int64_t t = 0; t < n_tasks; t++) {
    uint64_t c = j.chunk[t];
    j.chunk[t] = total;
    total += c;
  }
  if (total > UINT32_MAX) {
    st = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %llu intersection points; at most 2^32 - 1 are sorted", what,
                  (unsigned long long)total);
    goto done;
  }
  int64_t n = (int64_t)total;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&sp->xy, (size_t)n * 16, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&sp->key, (size_t)n * 8, RDX_HOST), st, done);
  j.x = sp->xy, j.y = sp->xy + n, j.key = sp->key, j.fill = 1;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, points_task, &j), st, done);
  RDX_CHECK_GOTO(points_order(ctx, j.x, j.y, sp->key, n, &sp->perm), st, done);
  sp->n = n;
  for (int64_t i = 0; i < n; i++) sp->m += point_first(j.x, j.y, sp->key, sp->perm, i);
done:
  rdx_mem_free(ctx, j.chunk);
  if (st != RDX_OK) sorted_points_free(ctx, sp);
  return st;
}

/* The distinct points into the result (room for sp->m). */
static void points_write(const sorted_points *sp, rdx_join_lsi_result *out) {
  const double *x = sp->xy, *y = sp->xy + sp->n;
  for (int64_t i = 0, k = 0; i < sp->n; i++) {
    if (!point_first(x, y, sp->key, sp->perm, i)) continue;
    uint32_t p = sp->perm[i];
    out->point_pairs[2 * k] = (int64_t)(sp->key[p] >> 32);
    out->point_pairs[2 * k + 1] = (int64_t)(uint32_t)sp->key[p];
    out->points[2 * k] = x[p];
    out->points[2 * k + 1] = y[p];
    k++;
  }
}

/* ---- feature pairs ---- */

typedef struct pairs_job {
  uint64_t *keys;            /* edge pairs in, feature keys out (in place); then sorted */
  const uint32_t *rfeat, *sfeat;
  int64_t n;
  uint64_t *chunk;           /* per task: its unique count, then its first output row */
  int64_t *out;              /* the result's pairs */
  int phase;                 /* 0 map, 1 count firsts, 2 write */
} pairs_job;

static void pairs_task(void *arg, int64_t t, int thread) {
  (void)thread;
  pairs_job *j = (pairs_job *)arg;
  uint64_t k = j->phase == 2 ? j->chunk[t] : 0;
  for (int64_t i = t * PAIRS_PER_TASK; i < task_end(t, PAIRS_PER_TASK, j->n); i++) {
    uint64_t v = j->keys[i];
    if (j->phase == 0) {
      j->keys[i] = (uint64_t)j->rfeat[v >> 32] << 32 | j->sfeat[(uint32_t)v];
      continue;
    }
    if (i > 0 && j->keys[i - 1] == v) continue;
    if (j->phase == 2) {
      j->out[2 * k] = (int64_t)(v >> 32);
      j->out[2 * k + 1] = (int64_t)(uint32_t)v;
    }
    k++;
  }
  if (j->phase == 1) j->chunk[t] = k;
}

/* The distinct feature pairs of the edge pairs (overwritten in place, *keys may move), ascending;
 * j's chunks then hold each chunk's count of distinct pairs (scan_chunks makes them offsets). */
static rdx_status feature_pairs(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, uint64_t **keys,
                                int64_t n, pairs_job *j) {
  static const char what[] = "rdx_join_lsi: feature pairs";
  int64_t n_tasks = (n + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK;
  uint64_t *tmp = NULL;
  rdx_status st = RDX_OK;
  memset(j, 0, sizeof *j);
  j->rfeat = r->host.edge_feat, j->sfeat = s->host.edge_feat;
  j->n = n;
  j->keys = *keys;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, pairs_task, j), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&tmp, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_radix_sort_u64(ctx, keys, &tmp, NULL, NULL, n), st, done);
  j->keys = *keys;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j->chunk, (size_t)(n_tasks + 1) * 8, RDX_HOST), st, done);
  j->phase = 1;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, n_tasks, pairs_task, j), st, done);
done:
  rdx_mem_free(ctx, tmp);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, j->chunk);
    j->chunk = NULL;
  }
  return st;
}

/* The number of distinct pairs counted by feature_pairs, its chunks turned into offsets. */
static int64_t scan_chunks(pairs_job *j) {
  int64_t n_tasks = (j->n + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK;
  uint64_t total = 0;
  for (int64_t t = 0; t < n_tasks; t++) {
    uint64_t c = j->chunk[t];
    j->chunk[t] = total;
    total += c;
  }
  return (int64_t)total;
}

rdx_status rdx_jn_lsi_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                          int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats) {
  uint64_t *pairs = NULL;
  int64_t n_edge_pairs = 0;
  pairs_job pj;
  sorted_points sp;
  memset(&pj, 0, sizeof pj);
  memset(&sp, 0, sizeof sp);
  rdx_status st = RDX_OK;
  RDX_CHECK_GOTO(rdx_jn_lsi_edge_pairs_cpu(ctx, r, ix, s, &pairs, &n_edge_pairs, stats), st, done);
  double t0 = rdx_now_ms();
  /* the points read the edge pairs before they become feature keys in place */
  if (want_points) RDX_CHECK_GOTO(points_prepare(ctx, r, s, pairs, n_edge_pairs, &sp), st, done);
  double t1 = rdx_now_ms();
  RDX_CHECK_GOTO(feature_pairs(ctx, r, s, &pairs, n_edge_pairs, &pj), st, done);
  int64_t n_fp = scan_chunks(&pj);
  RDX_CHECK_GOTO(rdx_jn_lsi_result_arrays(ctx, out, n_fp, sp.m), st, done);
  pj.out = out->pairs;
  pj.phase = 2;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (n_edge_pairs + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK, pairs_task, &pj), st, done);
  double t2 = rdx_now_ms();
  if (want_points) points_write(&sp, out);
  stats->pairs_ms = t2 - t1;
  stats->points_ms = want_points ? (t1 - t0) + (rdx_now_ms() - t2) : 0.0;
done:
  rdx_mem_free(ctx, pairs);
  rdx_mem_free(ctx, pj.chunk);
  sorted_points_free(ctx, &sp);
  return st; /* on failure the caller frees what out holds */
}

const rdx_jn_ops rdx_jn_lsi_cpu_ops = {
    RDX_JN_OP_LSI, RDX_BACKEND_CPU, NULL, NULL, NULL, NULL, rdx_jn_lsi_cpu, rdx_jn_lsi_edge_pairs_cpu, NULL, NULL,
};
