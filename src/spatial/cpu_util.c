/*
 * cpu_util.c: host-side helpers of the spatial module: the input scan (finite values, points
 * inside the box, radii >= 0, bounding box), a parallel stable LSD radix sort of (key, value)
 * pairs, and the growable host node lists the builds and the update planner assemble trees in.
 *
 * The radix sort takes 11-bit digits (3 passes for 32-bit Morton codes), per-chunk histograms
 * on the context's threads and a chunk-ordered scatter, so it is stable, which the bottom-up and
 * top-down builds rely on (equal codes keep input order, i.e. ascending id).
 */
#include "spatial/spatial.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- input scan ---- */

#define SCAN_CHUNK 16384

typedef struct scan_job {
  const void *data;
  int f64, cols, radius_col;
  int64_t rows;
  const double *box;
  double *part;        /* per task: xmin, ymin, xmax, ymax */
  int64_t *bad;        /* per task: row * 4 + what, or INT64_MAX */
} scan_job;

static void scan_task(void *arg, int64_t t, int thread) {
  scan_job *j = (scan_job *)arg;
  int64_t lo = t * SCAN_CHUNK, hi = lo + SCAN_CHUNK < j->rows ? lo + SCAN_CHUNK : j->rows;
  double b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  int64_t bad = INT64_MAX;
  for (int64_t r = lo; r < hi && bad == INT64_MAX; r++) {
    int what = 0;
    for (int c = 0; c < j->cols; c++) {
      double v = rdx_sp_at(j->data, r * j->cols + c, j->f64);
      if (!isfinite(v)) what = 1;
      else if (c == j->radius_col && v < 0 && what == 0) what = 3;
    }
    double x = rdx_sp_at(j->data, r * j->cols, j->f64), y = rdx_sp_at(j->data, r * j->cols + 1, j->f64);
    if (what == 0 && j->box && !(j->box[0] <= x && x <= j->box[2] && j->box[1] <= y && y <= j->box[3])) what = 2;
    if (what) {
      bad = r * 4 + what;
      break;
    }
    if (x < b[0]) b[0] = x;
    if (y < b[1]) b[1] = y;
    if (x > b[2]) b[2] = x;
    if (y > b[3]) b[3] = y;
  }
  memcpy(j->part + 4 * t, b, sizeof b);
  j->bad[t] = bad;
}

rdx_status rdx_sp_scan_cpu(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols, const double *box,
                           int radius_col, rdx_sp_scan *out) {
  int64_t tasks = (rows + SCAN_CHUNK - 1) / SCAN_CHUNK;
  scan_job j = {data, f64, cols, radius_col, rows, box, NULL, NULL};
  out->bad_row = -1;
  out->bad_what = 0;
  out->box[0] = out->box[1] = out->box[2] = out->box[3] = 0;
  if (rows == 0) return RDX_OK;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: scan", (void **)&j.part, (size_t)tasks * 4 * sizeof(double), RDX_HOST));
  rdx_status st = rdx_mem_alloc(ctx, "rdx_points: scan", (void **)&j.bad, (size_t)tasks * 8, RDX_HOST);
  if (st == RDX_OK) st = rdx_parallel_for(ctx, tasks, scan_task, &j);
  if (st == RDX_OK) {
    double b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (int64_t t = 0; t < tasks; t++) {
      if (j.bad[t] != INT64_MAX) { /* tasks are in row order: the first bad task has the first bad row */
        out->bad_row = j.bad[t] / 4;
        out->bad_what = (int)(j.bad[t] % 4);
        break;
      }
      for (int c = 0; c < 2; c++) {
        if (j.part[4 * t + c] < b[c]) b[c] = j.part[4 * t + c];
        if (j.part[4 * t + 2 + c] > b[2 + c]) b[2 + c] = j.part[4 * t + 2 + c];
      }
    }
    if (out->bad_row < 0) {
      /* -0.0 and 0.0 are one coordinate: keep the box's corners positive zero */
      for (int c = 0; c < 4; c++) out->box[c] = b[c] == 0.0 ? 0.0 : b[c];
    }
  }
  rdx_mem_free(ctx, j.part);
  rdx_mem_free(ctx, j.bad);
  return st;
}

/* ---- radix sort ---- */

#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)
#define SORT_MIN_CHUNK 65536

typedef struct sort_job {
  const uint64_t *ks, *vs;
  uint64_t *kd, *vd;
  int64_t n, chunk;
  int shift;
  uint64_t mask;       /* digit = (key >> shift) & mask */
  int64_t *hist;       /* tasks x RADIX_SIZE counts, then scatter offsets */
} sort_job;

static void hist_task(void *arg, int64_t t, int thread) {
  sort_job *j = (sort_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  int64_t *h = j->hist + t * RADIX_SIZE;
  memset(h, 0, RADIX_SIZE * sizeof *h);
  for (int64_t i = lo; i < hi; i++) h[(j->ks[i] >> j->shift) & j->mask]++;
}

static void scatter_task(void *arg, int64_t t, int thread) {
  sort_job *j = (sort_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  int64_t *h = j->hist + t * RADIX_SIZE;
  for (int64_t i = lo; i < hi; i++) {
    int64_t p = h[(j->ks[i] >> j->shift) & j->mask]++;
    j->kd[p] = j->ks[i];
    j->vd[p] = j->vs[i];
  }
}

rdx_status rdx_sp_radix_sort_cpu(rdx_context *ctx, uint64_t *keys, uint64_t *vals, int64_t n, int begin_bit,
                                 int end_bit) {
  if (n < 2 || begin_bit >= end_bit) return RDX_OK;
  int64_t tasks = (int64_t)ctx->n_threads * 4;
  int64_t chunk = (n + tasks - 1) / tasks;
  if (chunk < SORT_MIN_CHUNK) chunk = SORT_MIN_CHUNK;
  tasks = (n + chunk - 1) / chunk;
  uint64_t *tk = NULL, *tv = NULL;
  int64_t *hist = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: sort buffer", (void **)&tk, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: sort buffer", (void **)&tv, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: sort histograms", (void **)&hist,
                               (size_t)tasks * RADIX_SIZE * sizeof *hist, RDX_HOST),
                 st, done);
  {
    uint64_t *sk = keys, *sv = vals, *dk = tk, *dv = tv;
    for (int shift = begin_bit; shift < end_bit; shift += RADIX_BITS) {
      int width = end_bit - shift < RADIX_BITS ? end_bit - shift : RADIX_BITS;
      sort_job j = {sk, sv, dk, dv, n, chunk, shift, ((uint64_t)1 << width) - 1, hist};
      RDX_CHECK_GOTO(rdx_parallel_for(ctx, tasks, hist_task, &j), st, done);
      int64_t sum = 0;
      int constant = 0;
      for (int d = 0; d < RADIX_SIZE; d++) {
        int64_t tot = 0;
        for (int64_t t = 0; t < tasks; t++) {
          int64_t c = hist[t * RADIX_SIZE + d];
          hist[t * RADIX_SIZE + d] = sum;
          sum += c;
          tot += c;
        }
        if (tot == n) constant = 1; /* every key has this digit: the pass would change nothing */
      }
      if (constant) continue;
      RDX_CHECK_GOTO(rdx_parallel_for(ctx, tasks, scatter_task, &j), st, done);
      uint64_t *t1 = sk, *t2 = sv;
      sk = dk, sv = dv, dk = t1, dv = t2;
    }
    if (sk != keys) {
      memcpy(keys, sk, (size_t)n * 8);
      memcpy(vals, sv, (size_t)n * 8);
    }
  }
  st = RDX_OK;
done:
  rdx_mem_free(ctx, tk);
  rdx_mem_free(ctx, tv);
  rdx_mem_free(ctx, hist);
  return st;
}

/* ---- host node lists ---- */

rdx_status rdx_sp_hlist_push(rdx_context *ctx, rdx_sp_hlist *l, rdx_sp_hnode node) {
  if (l->n == l->cap) RDX_CHECK(rdx_sp_hlist_reserve(ctx, l, l->cap ? 2 * l->cap : 64));
  l->v[l->n++] = node;
  return RDX_OK;
}

rdx_status rdx_sp_hlist_reserve(rdx_context *ctx, rdx_sp_hlist *l, int64_t cap) {
  if (cap <= l->cap) return RDX_OK;
  rdx_sp_hnode *v = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: node list", (void **)&v, (size_t)cap * sizeof *v, RDX_HOST));
  if (l->n) memcpy(v, l->v, (size_t)l->n * sizeof *v);
  rdx_mem_free(ctx, l->v);
  l->v = v;
  l->cap = cap;
  return RDX_OK;
}

void rdx_sp_hlist_free(rdx_context *ctx, rdx_sp_hlist *l) {
  rdx_mem_free(ctx, l->v);
  memset(l, 0, sizeof *l);
}

/* BFS order: by level, then key. A stable LSD radix sort of node positions (11-bit digits of
 * the key, then the level), O(n): builds sort every node once, and a comparison sort of them
 * was several times slower (bench/results/NVIDIA-H200/UPDATES.md). */
static rdx_status sort_bfs(rdx_context *ctx, rdx_sp_hlist *l) {
  int64_t n = l->n;
  if (n < 2) return RDX_OK;
  uint64_t or_key = 0;
  for (int64_t i = 0; i < n; i++) or_key |= l->v[i].key;
  int bits = 0;
  while (bits < 64 && (or_key >> bits) != 0) bits++;
  int64_t *a = NULL, *b = NULL, *cnt = NULL;
  rdx_sp_hnode *out = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: node sort", (void **)&a, (size_t)n * 16, RDX_HOST), st, done);
  b = a + n;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: node sort", (void **)&cnt, 2049 * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: node sort", (void **)&out, (size_t)n * sizeof *out, RDX_HOST), st, done);
  for (int64_t i = 0; i < n; i++) a[i] = i;
  /* 11-bit digits of the key, then the level (< 2048) */
  for (int shift = 0;; shift += 11) {
    int lev = shift >= bits;
    memset(cnt, 0, 2049 * 8);
    for (int64_t i = 0; i < n; i++) {
      const rdx_sp_hnode *h = &l->v[a[i]];
      cnt[(lev ? (uint64_t)h->level : (h->key >> shift) & 2047) + 1]++;
    }
    for (int d = 0; d < 2048; d++) cnt[d + 1] += cnt[d];
    for (int64_t i = 0; i < n; i++) {
      const rdx_sp_hnode *h = &l->v[a[i]];
      b[cnt[lev ? (uint64_t)h->level : (h->key >> shift) & 2047]++] = a[i];
    }
    int64_t *t = a;
    a = b, b = t;
    if (lev) break;
  }
  for (int64_t i = 0; i < n; i++) out[i] = l->v[a[i]];
  memcpy(l->v, out, (size_t)n * sizeof *out);
  st = RDX_OK;
done:
  rdx_mem_free(ctx, a < b ? a : b);
  rdx_mem_free(ctx, cnt);
  rdx_mem_free(ctx, out);
  return st;
}

rdx_status rdx_sp_hlist_link(rdx_context *ctx, rdx_sp_hlist *l, int kd) {
  RDX_CHECK(sort_bfs(ctx, l));
  int sh = kd ? 1 : 2;
  /* one sweep: the children of a level's internal nodes are the next level's nodes, in order */
  int64_t c = 0;
  for (int64_t i = 0; i < l->n; i++) {
    rdx_sp_hnode *p = &l->v[i];
    if (i > 0 && (p->level < l->v[i - 1].level || (p->level == l->v[i - 1].level && p->key <= l->v[i - 1].key)))
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points: node (level %d, key %llu) appears twice or out of order",
                      p->level, (unsigned long long)p->key);
    if (p->leaf) continue;
    if (c <= i) c = i + 1;
    while (c < l->n && (l->v[c].level <= p->level || (l->v[c].level == p->level + 1 && (l->v[c].key >> sh) < p->key))) c++;
    int64_t first = c;
    while (c < l->n && l->v[c].level == p->level + 1 && (l->v[c].key >> sh) == p->key) c++;
    if (c == first || (kd && c - first != 2))
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points: internal node (level %d, key %llu) has %lld children",
                      p->level, (unsigned long long)p->key, (long long)(c - first));
    p->fpos = first;
    p->len = c - first;
    p->room = 0;
  }
  return RDX_OK;
}

rdx_status rdx_sp_hlist_to_nodes(rdx_context *ctx, const rdx_sp_hlist *l, rdx_sp_nodes *out) {
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, l->n, RDX_HOST, out));
  for (int64_t i = 0; i < l->n; i++) rdx_sp_node_put(out, i, &l->v[i]);
  return RDX_OK;
}
