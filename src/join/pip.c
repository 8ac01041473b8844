/*
 * pip.c: point in polygon on the CPU: pip_hd.h's two passes on the thread pool, and the query
 * points' check and widening to f64.
 *
 * Each pass runs phase (A) of a point (pip_hd.h: the ring boxes holding it) just before its phase
 * (B), so nothing is kept between the two. Pass 1 answers each point with a set of
 * RDX_JN_PIP_SET_CPU events on the thread's stack (the planar rule needs none). Points whose
 * general-rule set outgrew it are listed with their event counts; pass 2 takes them in blocks of at
 * most EVENT_BLOCK events (or one point, however many it has), traces each again appending every
 * event at its offset in one buffer, sorts and reduces them. Both passes write a point's outputs
 * directly: counts[i], first[i], and the features at features[offsets[i] ..]. Chunks of
 * POINTS_PER_TASK points, taken dynamically by the threads. Side PIP (join.h) is the same two
 * passes over side queries (pip_hd.h), query i read with rdx_jn_pip_at_of.
 */
#include "join/join.h"
#include "join/pip_hd.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define POINTS_PER_TASK 1024
#define PASS2_PER_TASK 16
#define EVENT_BLOCK ((uint64_t)1 << 22) /* 32 MiB of events at a time */

typedef struct pip_job {
  rdx_jn_pip_bvhs v;
  rdx_jn_pip_geom g;
  rdx_jn_pip_query q;     /* the points, or side queries */
  int64_t n;
  int planar;
  rdx_jn_pip_out out;
  uint32_t *pending;      /* pass 1: 0, or the point's event count for pass 2 */
  /* pass 2: list[0 .. m) are the points, ev_off[k] where point list[k]'s events go in ev */
  const int64_t *list;
  const uint64_t *ev_off;
  uint64_t *ev;
  int64_t k0, k1;         /* the block: list[k0 .. k1) */
  atomic_int mismatch;    /* a point met another number of events in pass 2 (a bug) */
} pip_job;

static void emit(const pip_job *j, int64_t i, uint64_t count, int64_t first) {
  if (j->out.counts) j->out.counts[i] = count;
  if (j->out.first) j->out.first[i] = first;
}

static void pass1_task(void *arg, int64_t t, int thread) {
  (void)thread;
  pip_job *j = (pip_job *)arg;
  uint64_t set[RDX_JN_PIP_SET_CPU];
  int64_t end = (t + 1) * POINTS_PER_TASK < j->n ? (t + 1) * POINTS_PER_TASK : j->n;
  for (int64_t i = t * POINTS_PER_TASK; i < end; i++) {
    uint64_t count = 0;
    int64_t first = -1;
    uint32_t n_ev = 0;
    uint64_t *fill = j->out.features ? j->out.features + j->out.offsets[i] : NULL;
    const rdx_jn_pip_at at = rdx_jn_pip_at_of(&j->q, i);
    const float reach = rdx_jn_pip_reach(&j->v, at.a[0], at.a[1]);
    if (rdx_jn_pip_point(&j->v, &j->g, &at, reach, j->planar, set, RDX_JN_PIP_SET_CPU, &count, &first, fill,
                         &n_ev)) {
      emit(j, i, count, first);
      j->pending[i] = 0;
    } else {
      j->pending[i] = n_ev;
    }
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void pass2_task(void *arg, int64_t t, int thread) {
  (void)thread;
  pip_job *j = (pip_job *)arg;
  int64_t k_end = j->k0 + (t + 1) * PASS2_PER_TASK < j->k1 ? j->k0 + (t + 1) * PASS2_PER_TASK : j->k1;
  for (int64_t k = j->k0 + t * PASS2_PER_TASK; k < k_end; k++) {
    int64_t i = j->list[k];
    uint64_t *ev = j->ev + (j->ev_off[k] - j->ev_off[j->k0]);
    uint32_t want = (uint32_t)(j->ev_off[k + 1] - j->ev_off[k]);
    const rdx_jn_pip_at at = rdx_jn_pip_at_of(&j->q, i);
    uint32_t got = rdx_jn_pip_events(&j->v, &j->g, &at, rdx_jn_pip_reach(&j->v, at.a[0], at.a[1]), ev, want);
    if (got != want) {
      atomic_store(&j->mismatch, 1);
      continue;
    }
    qsort(ev, want, 8, cmp_u64);
    int64_t first = -1;
    uint64_t *fill = j->out.features ? j->out.features + j->out.offsets[i] : NULL;
    uint64_t count = rdx_jn_pip_reduce(ev, want, &first, fill);
    emit(j, i, count, first);
  }
}

/* Pass 2 over the points pass 1 left (pending[i] != 0). */
static rdx_status pass2(rdx_context *ctx, pip_job *j) {
  static const char what[] = "rdx_join_pip: pass 2 events";
  int64_t m = 0;
  for (int64_t i = 0; i < j->n; i++) m += j->pending[i] != 0;
  if (m == 0) return RDX_OK;
  rdx_status st = RDX_OK;
  int64_t *list = NULL;
  uint64_t *off = NULL, *ev = NULL;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&list, (size_t)m * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&off, (size_t)(m + 1) * 8, RDX_HOST), st, done);
  uint64_t biggest = 0;
  off[0] = 0;
  for (int64_t i = 0, k = 0; i < j->n; i++) {
    if (j->pending[i] == 0) continue;
    list[k] = i;
    off[k + 1] = off[k] + j->pending[i];
    if (j->pending[i] > biggest) biggest = j->pending[i];
    k++;
  }
  uint64_t room = off[m] < EVENT_BLOCK ? off[m] : (biggest > EVENT_BLOCK ? biggest : EVENT_BLOCK);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&ev, (size_t)room * 8, RDX_HOST), st, done);
  j->list = list;
  j->ev_off = off;
  j->ev = ev;
  for (int64_t k0 = 0; k0 < m;) {
    int64_t k1 = k0 + 1; /* a block: at least one point, at most `room` events */
    while (k1 < m && off[k1 + 1] - off[k0] <= room) k1++;
    j->k0 = k0;
    j->k1 = k1;
    RDX_CHECK_GOTO(rdx_parallel_for(ctx, (k1 - k0 + PASS2_PER_TASK - 1) / PASS2_PER_TASK, pass2_task, j), st, done);
    k0 = k1;
  }
  if (atomic_load(&j->mismatch))
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_join_pip: a point met another number of edges in its second pass");
done:
  rdx_mem_free(ctx, list);
  rdx_mem_free(ctx, off);
  rdx_mem_free(ctx, ev);
  return st;
}

void rdx_join_force_input_order(rdx_context *ctx, int on) { ctx->force.join_input_order = on != 0; }
void rdx_join_force_one_stream(rdx_context *ctx, int on) { ctx->force.join_one_stream = on != 0; }

/* PIP over the queries q (points or side queries; rdx_jn_pip_cpu's and rdx_jn_side_pip_cpu's
 * contracts). */
static rdx_status pip_queries(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                              int64_t n, int planar, const rdx_jn_pip_out *out) {
  pip_job j;
  memset(&j, 0, sizeof j);
  atomic_init(&j.mismatch, 0);
  j.v.groups = rdx_bvh_view_of(&ix->scene.bvh);
  j.v.rings = rdx_bvh_view_of(&ix->rings.bvh);
  j.g.xy = r->host.xy;
  j.g.edge_end = r->host.edge_end;
  j.g.edge_feat = r->host.edge_feat;
  j.g.group_first = ix->group_first;
  j.g.group_span = ix->group_span;
  j.q = *q;
  j.n = n;
  j.planar = planar;
  j.out = *out;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_pip: pending points", (void **)&j.pending, (size_t)n * 4, RDX_HOST));
  rdx_status st = rdx_parallel_for(ctx, (n + POINTS_PER_TASK - 1) / POINTS_PER_TASK, pass1_task, &j);
  if (st == RDX_OK) st = pass2(ctx, &j);
  rdx_mem_free(ctx, j.pending);
  return st;
}

rdx_status rdx_jn_pip_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy, int64_t n,
                          int planar, const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, NULL, 0};
  return pip_queries(ctx, r, ix, &q, n, planar, out);
}

rdx_status rdx_jn_side_pip_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                               const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, dir_end, side < 0 ? -1 : 1};
  return pip_queries(ctx, r, ix, &q, n, 0, out);
}

/* ---- query points ---- */

/* 1 when v may be a coordinate: finite, and 0 or of magnitude in exact_hd.h's range. */
static int good_coord(double v) {
  double a = fabs(v);
  return v == 0.0 || (a >= RDX_JN_COORD_MIN && a <= RDX_JN_COORD_MAX);
}

typedef struct points_job {
  const void *src;
  int f32;
  int64_t n;
  double *dst;
  int64_t *bad;           /* per task: the first bad row or -1 */
} points_job;

static void points_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const points_job *j = (const points_job *)arg;
  int64_t end = (t + 1) * 65536 < j->n ? (t + 1) * 65536 : j->n;
  j->bad[t] = -1;
  for (int64_t i = t * 65536; i < end; i++) {
    double x, y;
    if (j->f32) {
      x = ((const float *)j->src)[2 * i];
      y = ((const float *)j->src)[2 * i + 1];
    } else {
      x = ((const double *)j->src)[2 * i];
      y = ((const double *)j->src)[2 * i + 1];
    }
    if (!good_coord(x) || !good_coord(y)) {
      j->bad[t] = i;
      return;
    }
    if (j->dst) j->dst[2 * i] = x, j->dst[2 * i + 1] = y;
  }
}

rdx_status rdx_jn_points_cpu(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst, int64_t *bad) {
  int64_t tasks = (n + 65535) / 65536;
  points_job j = {src, f32, n, dst, NULL};
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_pip: checking points", (void **)&j.bad, (size_t)tasks * 8, RDX_HOST));
  rdx_status st = rdx_parallel_for(ctx, tasks, points_task, &j);
  *bad = -1;
  for (int64_t t = 0; t < tasks && *bad < 0; t++) *bad = j.bad[t];
  rdx_mem_free(ctx, j.bad);
  return st;
}

const rdx_jn_ops rdx_jn_pip_cpu_ops = {
    RDX_JN_OP_PIP, RDX_BACKEND_CPU, NULL, rdx_jn_points_cpu, rdx_jn_pip_cpu, rdx_jn_side_pip_cpu, NULL, NULL, NULL, NULL,
};
