/*
 * overlay.c: the polygon joins (rdx_join_polygons: overlay, contains, within, intersects) on the
 * CPU, by overlay_hd.h's rule. Stages:
 *   pairs    every intersecting edge pair (e of R, f of S), LSI's count and fill through R's index;
 *   classify per pair (chunks on the pool, counted then written): a proper crossing gives the
 *            records (e, B: ODD_L | ODD_R) and (f, A: ODD_L | ODD_R); a vertex strictly inside the
 *            other edge a vertex event (edge, feature, vertex, flip bits); for areas, every proper
 *            crossing also an event at its rounded point;
 *   groups   vertex events sorted by (edge, feature, vertex) and their flips added per group (XOR):
 *            an odd group is a record (edge, feature: ODD_L and/or ODD_R);
 *   starts   the side PIP of every edge's start in the other layer (pip_hd.h), left and, for
 *            CONTAINS, WITHIN and areas, right: records (edge, feature: START_L or START_R);
 *   (INTERSECTS stops after the edge pairs: their feature pairs, and each ring's first vertex
 *            located in the other layer; see below)
 *   reduce   per direction (R's edges against S's features, S's against R's) the records sorted by
 *            (edge << 32 | feature) and their bits ORed; then the feature pairs of the predicate,
 *            sorted and unique;
 *   areas    each record's share (overlay_hd.h), its events walked along the edge, summed per pair.
 * Records of direction 0 are keyed (R edge << 32 | S feature), of direction 1 (S edge << 32 | R
 * feature).
 */
#include "join/join.h"
#include "join/index_hd.h"
#include "join/overlay_hd.h"

#include <stdlib.h>
#include <string.h>

#define PAIRS_PER_TASK ((int64_t)1 << 14)

/* A growing array of records: keys and bits (the radix sort's payload). */
typedef struct recs {
  uint64_t *key;
  uint32_t *bits;
  int64_t n, cap;
} recs;

typedef rdx_jn_ov_event vev;

typedef struct ov_job {
  const rdx_polygons *r, *s;
  const uint64_t *pairs;     /* r edge << 32 | s edge */
  int64_t n_pairs;
  int64_t n_tasks;
  int64_t *count;            /* per task and direction: [4 t + 2 d] proper, [4 t + 2 d + 1] vertex */
  recs *rec;                 /* [2]: fill targets */
  vev *ev[2];
  int areas;                 /* proper crossings are events too, with their points */
} ov_job;

static rdx_status recs_reserve(rdx_context *ctx, recs *r, int64_t more) {
  static const char what[] = "rdx_join_polygons: records";
  if (r->n + more <= r->cap) return RDX_OK;
  int64_t cap = r->cap * 2 > r->n + more ? r->cap * 2 : r->n + more;
  uint64_t *k = NULL;
  uint32_t *b = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&k, (size_t)cap * 8, RDX_HOST));
  rdx_status st = rdx_mem_alloc(ctx, what, (void **)&b, (size_t)cap * 4, RDX_HOST);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, k);
    return st;
  }
  if (r->n) memcpy(k, r->key, (size_t)r->n * 8), memcpy(b, r->bits, (size_t)r->n * 4);
  rdx_mem_free(ctx, r->key), rdx_mem_free(ctx, r->bits);
  r->key = k, r->bits = b, r->cap = cap;
  return RDX_OK;
}

static void recs_free(rdx_context *ctx, recs *r) {
  rdx_mem_free(ctx, r->key), rdx_mem_free(ctx, r->bits);
  memset(r, 0, sizeof *r);
}

/* ---- classify ---- */

static void classify_task(void *arg, int64_t t, int thread) {
  (void)thread;
  ov_job *j = (ov_job *)arg;
  const rdx_jn_arrays *R = &j->r->host, *S = &j->s->host;
  int64_t end = (t + 1) * PAIRS_PER_TASK < j->n_pairs ? (t + 1) * PAIRS_PER_TASK : j->n_pairs;
  int64_t c[4] = {0, 0, 0, 0}; /* proper and vertex per direction, counted or written so far */
  int fill = j->rec != NULL;
  if (fill) memcpy(c, j->count + 4 * t, sizeof c);
  for (int64_t i = t * PAIRS_PER_TASK; i < end; i++) {
    uint32_t e = (uint32_t)(j->pairs[i] >> 32), f = (uint32_t)j->pairs[i];
    const double *a = R->xy + 2 * (uint64_t)e, *b = R->xy + 2 * (uint64_t)R->edge_end[e];
    const double *cc = S->xy + 2 * (uint64_t)f, *d = S->xy + 2 * (uint64_t)S->edge_end[f];
    double v[2];
    uint32_t bits;
    int kind = rdx_jn_ov_classify(a, b, cc, d, v, &bits);
    if (kind == RDX_JN_OV_NONE || (kind != RDX_JN_OV_PROPER && bits == 0)) continue;
    const uint64_t k0 = (uint64_t)e << 32 | S->edge_feat[f], k1 = (uint64_t)f << 32 | R->edge_feat[e];
    if (kind == RDX_JN_OV_PROPER) {
      const uint32_t both = RDX_JN_OV_ODD_L | RDX_JN_OV_ODD_R;
      if (fill) {
        j->rec[0].key[c[0]] = k0, j->rec[0].bits[c[0]] = both;
        j->rec[1].key[c[2]] = k1, j->rec[1].bits[c[2]] = both;
      }
      c[0]++, c[2]++;
      if (!j->areas) continue;
      if (fill) {
        rdx_jn_seg_point(a, b, cc, d, &v[0], &v[1]);
        rdx_jn_ov_put_event(j->ev[0] + c[1], k0, v, a, b, both, 1);
        rdx_jn_ov_put_event(j->ev[1] + c[3], k1, v, cc, d, both, 1);
      }
      c[1]++, c[3]++;
      continue;
    }
    const int d_ = kind == RDX_JN_OV_VERTEX_S ? 0 : 1;
    if (fill) rdx_jn_ov_put_event(j->ev[d_] + c[2 * d_ + 1], d_ == 0 ? k0 : k1, v, d_ == 0 ? a : cc, d_ == 0 ? b : d, bits, 0);
    c[2 * d_ + 1]++;
  }
  if (!fill) memcpy(j->count + 4 * t, c, sizeof c);
}

static int vev_cmp(const void *pa, const void *pb) {
  const vev *a = (const vev *)pa, *b = (const vev *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->v[0] != b->v[0]) return a->v[0] < b->v[0] ? -1 : 1;
  if (a->v[1] != b->v[1]) return a->v[1] < b->v[1] ? -1 : 1;
  return 0;
}

static int vev_along(const void *pa, const void *pb) {
  const vev *a = (const vev *)pa, *b = (const vev *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  if (a->v[0] != b->v[0]) return a->v[0] < b->v[0] ? -1 : 1; /* ties as the GPU orders them */
  return a->v[1] < b->v[1] ? -1 : a->v[1] > b->v[1];
}

/* The proper crossings into rec[d] and the odd vertex groups appended after them; with keep (for
 * areas), every event of direction d, sorted by (edge, feature, t), into keep[d] (n_keep[d]). */
static rdx_status classify(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const uint64_t *pairs,
                           int64_t n_pairs, recs rec[2], vev *keep[2], int64_t n_keep[2]) {
  static const char what[] = "rdx_join_polygons: classifying edge pairs";
  ov_job j;
  memset(&j, 0, sizeof j);
  j.r = r, j.s = s, j.pairs = pairs, j.n_pairs = n_pairs;
  j.areas = keep != NULL;
  j.n_tasks = (n_pairs + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK;
  if (j.n_tasks == 0) return RDX_OK;
  rdx_status st = RDX_OK;
  int64_t tot[4] = {0, 0, 0, 0};
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&j.count, (size_t)j.n_tasks * 4 * 8, RDX_HOST));
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j.n_tasks, classify_task, &j), st, done);
  for (int64_t t = 0; t < j.n_tasks; t++) /* each task's first slot */
    for (int k = 0; k < 4; k++) {
      int64_t c = j.count[4 * t + k];
      j.count[4 * t + k] = tot[k] + (k % 2 == 0 ? rec[k / 2].n : 0);
      tot[k] += c;
    }
  for (int d = 0; d < 2; d++) {
    RDX_CHECK_GOTO(recs_reserve(ctx, &rec[d], tot[2 * d]), st, done);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.ev[d], (size_t)(tot[2 * d + 1] + 1) * sizeof(vev), RDX_HOST),
                   st, done);
  }
  j.rec = rec;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, j.n_tasks, classify_task, &j), st, done);
  for (int d = 0; d < 2; d++) {
    rec[d].n += tot[2 * d];
    /* vertex groups: the flips of one (edge, feature, vertex) added */
    int64_t m = tot[2 * d + 1];
    qsort(j.ev[d], (size_t)m, sizeof(vev), vev_cmp);
    int64_t n_odd = 0;
    for (int64_t i = 0; i < m;) {
      uint32_t x = 0;
      int64_t k = i;
      for (; k < m && vev_cmp(j.ev[d] + i, j.ev[d] + k) == 0; k++) x ^= j.ev[d][k].proper ? 0u : j.ev[d][k].bits;
      n_odd += x != 0;
      i = k;
    }
    RDX_CHECK_GOTO(recs_reserve(ctx, &rec[d], n_odd), st, done);
    for (int64_t i = 0; i < m;) {
      uint32_t x = 0;
      int64_t k = i;
      for (; k < m && vev_cmp(j.ev[d] + i, j.ev[d] + k) == 0; k++) x ^= j.ev[d][k].proper ? 0u : j.ev[d][k].bits;
      if (x) rec[d].key[rec[d].n] = j.ev[d][i].key, rec[d].bits[rec[d].n++] = x;
      i = k;
    }
    if (keep) { /* areas: the events along each edge in order */
      qsort(j.ev[d], (size_t)m, sizeof(vev), vev_along);
      keep[d] = j.ev[d], n_keep[d] = m;
      j.ev[d] = NULL;
    }
  }
done:
  rdx_mem_free(ctx, j.count);
  rdx_mem_free(ctx, j.ev[0]), rdx_mem_free(ctx, j.ev[1]);
  return st;
}

/* ---- starts: the side PIP of x's edges in y ---- */

/* The PIP of n queries in y (index iy): the points xy, or with dir_end the side queries of edges
 * (xy, dir_end: their arrays) to `side`. */
static rdx_status trace(rdx_context *ctx, const rdx_polygons *y, const rdx_jn_index *iy, const double *xy,
                        const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *o) {
  return dir_end ? rdx_jn_side_pip_cpu(ctx, y, iy, xy, dir_end, n, side, o) : rdx_jn_pip_cpu(ctx, y, iy, xy, n, 0, o);
}

/* Queries list[0 .. m) of xy (with dir_end: side queries) as a batch of their own, laid out as
 * overlay.cu's gather_queries_kernel does: the points at *sub[0 .. m), and with dir_end their
 * edges' ends at *sub[m + k] (*sub_end[k] = m + k). */
static rdx_status batch_of(rdx_context *ctx, const double *xy, const uint32_t *dir_end, const int64_t *list, int64_t m,
                           double **sub, uint32_t **sub_end) {
  static const char what[] = "rdx_join_polygons: a batch of queries";
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)sub, (size_t)(m + 1) * 32, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)sub_end, (size_t)(m + 1) * 4, RDX_HOST));
  for (int64_t k = 0; k < m; k++) {
    const int64_t i = list[k];
    (*sub)[2 * k] = xy[2 * i], (*sub)[2 * k + 1] = xy[2 * i + 1];
    if (dir_end) {
      const uint64_t j = dir_end[i];
      (*sub)[2 * (m + k)] = xy[2 * j], (*sub)[2 * (m + k) + 1] = xy[2 * j + 1];
      (*sub_end)[k] = (uint32_t)(m + k);
    }
  }
  return RDX_OK;
}

/* The features of y (index iy) holding each of n queries, as CSR (*off: n + 1, *feat): the points
 * xy, or with dir_end the side points of x's edges (xy, dir_end: x's arrays) to `side`. One
 * traversal gives every query's count and first feature, all of its answer when it has at most one
 * (nearly every query: features of a map rarely overlap); only the queries in several features are
 * traced again, as a batch of their own, to fill their lists. */
static rdx_status locate(rdx_context *ctx, const rdx_polygons *y, const rdx_jn_index *iy, const double *xy,
                         const uint32_t *dir_end, int64_t n, int side, uint64_t **off, uint64_t **feat) {
  static const char what[] = "rdx_join_polygons: locating";
  uint64_t total = 0;
  int64_t *first = NULL, *list = NULL, m = 0;
  double *sub = NULL;
  uint32_t *sub_end = NULL;
  uint64_t *sub_off = NULL;
  rdx_jn_pip_out o;
  *off = *feat = NULL;
  rdx_status st = rdx_mem_alloc(ctx, what, (void **)off, (size_t)(n + 1) * 8, RDX_HOST);
  if (st == RDX_OK) st = rdx_mem_alloc(ctx, what, (void **)&first, (size_t)(n + 1) * 8, RDX_HOST);
  memset(&o, 0, sizeof o);
  o.counts = *off;
  o.first = first;
  if (st == RDX_OK) st = trace(ctx, y, iy, xy, dir_end, n, side, &o);
  for (int64_t i = 0; st == RDX_OK && i <= n; i++) { /* the counts scanned in place */
    uint64_t c = i < n ? (*off)[i] : 0;
    (*off)[i] = total;
    total += c;
    m += c > 1;
  }
  if (st == RDX_OK) st = rdx_mem_alloc(ctx, what, (void **)feat, (size_t)(total + 1) * 8, RDX_HOST);
  for (int64_t i = 0; st == RDX_OK && i < n; i++)
    if ((*off)[i + 1] - (*off)[i] == 1) (*feat)[(*off)[i]] = (uint64_t)first[i];
  if (st == RDX_OK && m > 0) {
    st = rdx_mem_alloc(ctx, what, (void **)&list, (size_t)m * 8, RDX_HOST);
    if (st == RDX_OK) st = rdx_mem_alloc(ctx, what, (void **)&sub_off, (size_t)m * 8, RDX_HOST);
    for (int64_t i = 0, k = 0; st == RDX_OK && i < n; i++)
      if ((*off)[i + 1] - (*off)[i] > 1) list[k] = i, sub_off[k++] = (*off)[i];
    if (st == RDX_OK) st = batch_of(ctx, xy, dir_end, list, m, &sub, &sub_end);
    memset(&o, 0, sizeof o);
    o.offsets = sub_off;
    o.features = *feat;
    if (st == RDX_OK) st = trace(ctx, y, iy, sub, dir_end ? sub_end : NULL, m, side, &o);
  }
  rdx_mem_free(ctx, first), rdx_mem_free(ctx, list), rdx_mem_free(ctx, sub), rdx_mem_free(ctx, sub_end);
  rdx_mem_free(ctx, sub_off);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *off), rdx_mem_free(ctx, *feat);
    *off = *feat = NULL;
  }
  return st;
}

/* The side PIP to `side` of x's edges in y (index iy), appended to rec as records of `bit`: of
 * every edge (keep NULL), or of the edges keep flags, traced as a batch of their own. With touch,
 * `also` is ORed into the bits of the edges it does not flag. */
static rdx_status starts(rdx_context *ctx, const rdx_polygons *x, const rdx_polygons *y, const rdx_jn_index *iy,
                         const uint8_t *keep, int side, uint32_t bit, const uint8_t *touch, uint32_t also, recs *rec) {
  static const char what[] = "rdx_join_polygons: side PIP";
  const rdx_jn_arrays *X = &x->host;
  const double *xy = X->xy;
  const uint32_t *dir_end = X->edge_end;
  int64_t n = X->n_vertices, *list = NULL;
  double *sub = NULL;
  uint32_t *sub_end = NULL;
  uint64_t *off = NULL, *feat = NULL;
  rdx_status st = RDX_OK;
  if (keep) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m += keep[i] != 0;
    if (m == 0) return RDX_OK;
    st = rdx_mem_alloc(ctx, what, (void **)&list, (size_t)m * 8, RDX_HOST);
    for (int64_t i = 0, k = 0; st == RDX_OK && i < n; i++)
      if (keep[i]) list[k++] = i;
    if (st == RDX_OK) st = batch_of(ctx, xy, dir_end, list, m, &sub, &sub_end);
    xy = sub, dir_end = sub_end, n = m;
  }
  if (st == RDX_OK) st = locate(ctx, y, iy, xy, dir_end, n, side, &off, &feat);
  if (st == RDX_OK) st = recs_reserve(ctx, rec, (int64_t)off[n]);
  for (int64_t k = 0; st == RDX_OK && k < n; k++) {
    const uint64_t i = list ? (uint64_t)list[k] : (uint64_t)k;
    const uint32_t bits = bit | (touch && !touch[i] ? also : 0u);
    for (uint64_t j = off[k]; j < off[k + 1]; j++) {
      rec->key[rec->n] = i << 32 | (uint32_t)feat[j];
      rec->bits[rec->n++] = bits;
    }
  }
  rdx_mem_free(ctx, off), rdx_mem_free(ctx, feat);
  rdx_mem_free(ctx, list), rdx_mem_free(ctx, sub), rdx_mem_free(ctx, sub_end);
  return st;
}

/* Which vertices of each layer lie on an edge of the other (t[0]: R's, t[1]: S's), and which rings
 * meet the other layer's boundary (m[0], m[1]); either may be NULL, the others zeroed by the caller.
 * From the edge pairs: a vertex on an edge f starts an edge that meets f, so its pair is among
 * them. */
static void meets_of(const rdx_polygons *r, const rdx_polygons *s, const uint64_t *pairs, int64_t n, uint8_t *t[2],
                     uint8_t *m[2]) {
  const rdx_jn_arrays *R = &r->host, *S = &s->host;
  for (int64_t i = 0; i < n; i++) {
    const uint32_t e = (uint32_t)(pairs[i] >> 32), f = (uint32_t)pairs[i];
    if (t[0]) {
      const double *a = R->xy + 2 * (uint64_t)e, *b = R->xy + 2 * (uint64_t)R->edge_end[e];
      const double *c = S->xy + 2 * (uint64_t)f, *d = S->xy + 2 * (uint64_t)S->edge_end[f];
      if (rdx_jn_on_segment(a, c, d)) t[0][e] = 1;
      if (rdx_jn_on_segment(c, a, b)) t[1][f] = 1;
    }
    if (m[0]) {
      m[0][rdx_jn_run_of(R->ring_off, R->n_rings, e)] = 1;
      m[1][rdx_jn_run_of(S->ring_off, S->n_rings, f)] = 1;
    }
  }
}

/* ---- reduce ---- */

/* Sort rec by key and OR the bits of equal keys into one record. */
static rdx_status merge_records(rdx_context *ctx, recs *rec) {
  static const char what[] = "rdx_join_polygons: sorting records";
  if (rec->n == 0) return RDX_OK;
  uint64_t *kt = NULL;
  uint32_t *bt = NULL;
  rdx_status st = RDX_OK;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&kt, (size_t)rec->n * 8, RDX_HOST));
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&bt, (size_t)rec->n * 4, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_radix_sort_u64(ctx, &rec->key, &kt, &rec->bits, &bt, rec->n), st, done);
  int64_t m = 0;
  for (int64_t i = 0; i < rec->n; i++) {
    if (m > 0 && rec->key[m - 1] == rec->key[i]) rec->bits[m - 1] |= rec->bits[i];
    else rec->key[m] = rec->key[i], rec->bits[m++] = rec->bits[i];
  }
  rec->n = m;
done:
  rdx_mem_free(ctx, kt);
  rdx_mem_free(ctx, bt);
  return st;
}

/* Sort keys[0 .. n) and drop repeats; *m = how many remain. */
static rdx_status sort_unique(rdx_context *ctx, uint64_t **keys, int64_t n, int64_t *m) {
  *m = 0;
  if (n == 0) return RDX_OK;
  uint64_t *kt = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_polygons: sorting pairs", (void **)&kt, (size_t)n * 8, RDX_HOST));
  rdx_status st = rdx_radix_sort_u64(ctx, keys, &kt, NULL, NULL, n);
  rdx_mem_free(ctx, kt);
  if (st != RDX_OK) return st;
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (k == 0 || (*keys)[k - 1] != (*keys)[i]) (*keys)[k++] = (*keys)[i];
  *m = k;
  return RDX_OK;
}

static uint64_t pair_of(const rdx_polygons *r, const rdx_polygons *s, int d, uint64_t key) {
  return rdx_jn_ov_pair(r->host.edge_feat, s->host.edge_feat, d, key);
}

/* Edges of feature f of layer p. */
static uint64_t feature_edges(const rdx_polygons *p, uint32_t f) {
  const rdx_jn_arrays *h = &p->host;
  return h->ring_off[h->feat_off[f + 1]] - h->ring_off[h->feat_off[f]];
}

/* The pairs whose records of direction d match: with bits & any != 0 (or all of `need` set and
 * none of `none`), sorted and unique; counted per pair when count_dir >= 0: then only the pairs
 * whose count equals the edges of the feature the edges belong to (all its edges qualified). */
static rdx_status select_pairs(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const recs *rec, int d,
                               uint32_t any, uint32_t need, uint32_t none, int all_edges, uint64_t **out, int64_t *m) {
  *out = NULL;
  *m = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < rec->n; i++) {
    uint32_t b = rec->bits[i];
    n += any ? (b & any) != 0 : ((b & need) == need && (b & none) == 0);
  }
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)out, (size_t)(n + 1) * 8, RDX_HOST));
  int64_t k = 0;
  for (int64_t i = 0; i < rec->n; i++) {
    uint32_t b = rec->bits[i];
    if (any ? (b & any) != 0 : ((b & need) == need && (b & none) == 0)) (*out)[k++] = pair_of(r, s, d, rec->key[i]);
  }
  if (!all_edges) return sort_unique(ctx, out, k, m);
  /* every edge of the edge's feature must qualify: count the (distinct) edges per pair */
  uint64_t *kt = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&kt, (size_t)(k + 1) * 8, RDX_HOST));
  rdx_status st = rdx_radix_sort_u64(ctx, out, &kt, NULL, NULL, k);
  rdx_mem_free(ctx, kt);
  if (st != RDX_OK) return st;
  int64_t w = 0;
  for (int64_t i = 0; i < k;) {
    int64_t j = i;
    while (j < k && (*out)[j] == (*out)[i]) j++;
    uint64_t p = (*out)[i];
    uint64_t need_n = d == 0 ? feature_edges(r, (uint32_t)(p >> 32)) : feature_edges(s, (uint32_t)p);
    if ((uint64_t)(j - i) == need_n) (*out)[w++] = p;
    i = j;
  }
  *m = w;
  return RDX_OK;
}

/* a \ b and a u b of sorted unique arrays, into a (room for na + nb when union). */
static int64_t set_minus(uint64_t *a, int64_t na, const uint64_t *b, int64_t nb) {
  int64_t w = 0, j = 0;
  for (int64_t i = 0; i < na; i++) {
    while (j < nb && b[j] < a[i]) j++;
    if (j < nb && b[j] == a[i]) continue;
    a[w++] = a[i];
  }
  return w;
}

/* ---- areas (overlay_hd.h) ---- */


/* The areas of the m pairs keys (sorted): the records' shares summed per pair (overlay_hd.h). */
static rdx_status add_areas(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const recs rec[2],
                            vev *const ev[2], const int64_t n_ev[2], const uint64_t *keys, int64_t m, double *area) {
  /* per pair: the sum of its current chunk, how many shares that chunk holds, the chunks' sum */
  struct pair_sum {
    rdx_jn_ov_sum chunk, total;
    int64_t in_chunk;
  } *acc = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_join_polygons: areas", (void **)&acc, (size_t)(m + 1) * sizeof *acc, RDX_HOST));
  memset(acc, 0, (size_t)(m + 1) * sizeof *acc);
  for (int d = 0; d < 2; d++) {
    const rdx_jn_arrays *X = d == 0 ? &r->host : &s->host;
    int64_t k = 0; /* the events, merged along by key */
    for (int64_t i = 0; i < rec[d].n; i++) {
      const uint64_t key = rec[d].key[i];
      while (k < n_ev[d] && ev[d][k].key < key) k++;
      const int64_t k0 = k;
      while (k < n_ev[d] && ev[d][k].key == key) k++;
      int64_t at = rdx_jn_ov_find(keys, m, pair_of(r, s, d, key));
      if (at < 0) continue; /* not an overlay pair: its pieces add up to 0 */
      uint32_t edge = (uint32_t)(key >> 32);
      const double *a = X->xy + 2 * (uint64_t)edge, *b = X->xy + 2 * (uint64_t)X->edge_end[edge];
      const uint32_t fa = (uint32_t)(keys[at] >> 32);
      const double *o = r->host.xy + 2 * r->host.ring_off[r->host.feat_off[fa]];
      struct pair_sum *ps = acc + at;
      rdx_jn_ov_sum_add(&ps->chunk, rdx_jn_ov_area_share(a, b, rec[d].bits[i], ev[d], NULL, k0, k - k0, o));
      if (++ps->in_chunk == RDX_JN_OV_CHUNK) {
        rdx_jn_ov_sum_add(&ps->total, rdx_jn_ov_sum_value(&ps->chunk));
        ps->chunk.s = ps->chunk.c = 0.0, ps->in_chunk = 0;
      }
    }
  }
  for (int64_t i = 0; i < m; i++) {
    if (acc[i].in_chunk > 0) rdx_jn_ov_sum_add(&acc[i].total, rdx_jn_ov_sum_value(&acc[i].chunk));
    area[i] = rdx_jn_ov_sum_value(&acc[i].total);
  }
  rdx_mem_free(ctx, acc);
  return RDX_OK;
}

/* ---- INTERSECTS ----
 * Features meet when their boundaries do (an edge pair), or when one holds a ring of the other
 * without their boundaries meeting: a ring that misses the other's boundary lies wholly inside
 * or outside it, so its first vertex tells (plain PIP, boundaries included); and if no ring of
 * either lies in the other, the interiors cannot meet either (a component of their intersection
 * would have its boundary on both boundaries). No side PIP is needed. */

/* The pairs (direction d's order: R feature << 32 | S feature) of each ring of x whose first
 * vertex lies in a feature of y. */
static rdx_status ring_pairs(rdx_context *ctx, const rdx_polygons *x, const rdx_polygons *y, const rdx_jn_index *iy,
                             int d, uint64_t **out, int64_t *m) {
  const rdx_jn_arrays *X = &x->host;
  const int64_t n = X->n_rings;
  double *pts = NULL;
  uint64_t *off = NULL, *feat = NULL;
  rdx_status st = RDX_OK;
  *out = NULL;
  *m = 0;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: rings", (void **)&pts, (size_t)(n + 1) * 16, RDX_HOST), st,
                 done);
  for (int64_t k = 0; k < n; k++) pts[2 * k] = X->xy[2 * X->ring_off[k]], pts[2 * k + 1] = X->xy[2 * X->ring_off[k] + 1];
  RDX_CHECK_GOTO(locate(ctx, y, iy, pts, NULL, n, 0, &off, &feat), st, done);
  for (int64_t f = 0; f < X->n_features; f++) /* each ring's pairs, keyed by its feature */
    for (uint64_t k = X->feat_off[f]; k < X->feat_off[f + 1]; k++)
      for (uint64_t i = off[k]; i < off[k + 1]; i++)
        feat[i] = d == 0 ? (uint64_t)f << 32 | (uint32_t)feat[i] : feat[i] << 32 | (uint64_t)f;
  RDX_CHECK_GOTO(sort_unique(ctx, &feat, (int64_t)off[n], m), st, done);
  *out = feat;
  feat = NULL;
done:
  rdx_mem_free(ctx, pts);
  rdx_mem_free(ctx, off);
  rdx_mem_free(ctx, feat);
  return st;
}

/* ---- the engine ---- */

rdx_status rdx_jn_polygons_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ixr, const rdx_polygons *s,
                               const rdx_jn_index *ixs, rdx_join_predicate pred, rdx_jn_track *track, uint64_t **out,
                               int64_t *n_out, double **areas) {
  recs rec[2];
  memset(rec, 0, sizeof rec);
  vev *ev[2] = {NULL, NULL};
  uint8_t *flags[2] = {NULL, NULL};
  int64_t n_ev[2] = {0, 0};
  if (areas) *areas = NULL;
  uint64_t *pairs = NULL, *a = NULL, *b = NULL;
  int64_t n_pairs = 0, na = 0, nb = 0;
  rdx_status st = RDX_OK;
  rdx_jn_lsi_stats stats;
  memset(&stats, 0, sizeof stats);
  *out = NULL;
  *n_out = 0;
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PAIRS), st, done);
  RDX_CHECK_GOTO(rdx_jn_lsi_cpu_ops.edge_pairs(ctx, r, ixr, s, &pairs, &n_pairs, &stats), st, done);
  if (track->stats) track->stats->edge_pairs = n_pairs;
  if (pred == RDX_JOIN_INTERSECTS) { /* the boundaries' pairs, kept for the union below */
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&b, (size_t)(n_pairs + 1) * 8, RDX_HOST),
                   st, done);
    for (int64_t i = 0; i < n_pairs; i++) {
      uint32_t e = (uint32_t)(pairs[i] >> 32), f = (uint32_t)pairs[i];
      b[i] = (uint64_t)r->host.edge_feat[e] << 32 | s->host.edge_feat[f];
    }
    RDX_CHECK_GOTO(sort_unique(ctx, &b, n_pairs, &nb), st, done);
    RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PIP), st, done);
    uint64_t *c[2] = {NULL, NULL};
    int64_t nc[2] = {0, 0};
    st = ring_pairs(ctx, r, s, ixs, 0, &c[0], &nc[0]);
    if (st == RDX_OK) st = ring_pairs(ctx, s, r, ixr, 1, &c[1], &nc[1]);
    if (st == RDX_OK) st = rdx_jn_track_stage(ctx, track, RDX_JN_ST_SELECT);
    if (st == RDX_OK) st = rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&a, (size_t)(nb + nc[0] + nc[1] + 1) * 8,
                                         RDX_HOST);
    if (st == RDX_OK) {
      memcpy(a, b, (size_t)nb * 8);
      memcpy(a + nb, c[0], (size_t)nc[0] * 8);
      memcpy(a + nb + nc[0], c[1], (size_t)nc[1] * 8);
    }
    rdx_mem_free(ctx, c[0]);
    rdx_mem_free(ctx, c[1]);
    if (st != RDX_OK) goto done;
    RDX_CHECK_GOTO(sort_unique(ctx, &a, nb + nc[0] + nc[1], &na), st, done);
    *out = a;
    *n_out = na;
    a = NULL;
    goto done;
  }
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_CLASSIFY), st, done);
  RDX_CHECK_GOTO(classify(ctx, r, s, pairs, n_pairs, rec, areas ? ev : NULL, n_ev), st, done);
  const int sides = pred == RDX_JOIN_CONTAINS || pred == RDX_JOIN_WITHIN || areas != NULL;
  /* What the side PIP needs of the edge pairs (overlay_hd.h's "Fewer side queries"): with both
   * sides, the vertices that lie on the other layer's edges; for OVERLAY alone, the rings that
   * meet the other layer's boundary, and so the edges to locate */
  const rdx_polygons *lay[2] = {r, s};
  uint8_t *touch[2] = {NULL, NULL}, *meets[2] = {NULL, NULL}, *keep[2] = {NULL, NULL};
  for (int d = 0; d < 2; d++) {
    const size_t nv = (size_t)lay[d]->host.n_vertices, nr = (size_t)lay[d]->host.n_rings;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: flags", (void **)&flags[d], nv + nr + 1, RDX_HOST), st, done);
    memset(flags[d], 0, nv + nr + 1);
    if (sides) touch[d] = flags[d];
    else keep[d] = flags[d], meets[d] = flags[d] + nv;
  }
  meets_of(r, s, pairs, n_pairs, touch, meets);
  for (int d = 0; d < 2 && !sides; d++) {
    const rdx_jn_arrays *X = &lay[d]->host;
    for (int64_t k = 0; k < X->n_rings; k++)
      for (uint64_t v = X->ring_off[k]; v < X->ring_off[k + 1]; v++) keep[d][v] = meets[d][k] || v == X->ring_off[k];
  }
  rdx_mem_free(ctx, pairs);
  pairs = NULL;
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_PIP), st, done);
  const rdx_jn_index *into[2] = {ixs, ixr};
  for (int d = 0; d < 2; d++) {
    const rdx_polygons *x = lay[d], *y = lay[1 - d];
    if (sides) { /* left everywhere (and right where untouched), right where touched */
      RDX_CHECK_GOTO(starts(ctx, x, y, into[d], NULL, +1, RDX_JN_OV_START_L, touch[d], RDX_JN_OV_START_R, &rec[d]), st,
                     done);
      RDX_CHECK_GOTO(starts(ctx, x, y, into[d], touch[d], -1, RDX_JN_OV_START_R, NULL, 0, &rec[d]), st, done);
    } else {
      RDX_CHECK_GOTO(starts(ctx, x, y, into[d], keep[d], +1, RDX_JN_OV_START_L, NULL, 0, &rec[d]), st, done);
    }
  }
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_MERGE), st, done);
  RDX_CHECK_GOTO(merge_records(ctx, &rec[0]), st, done);
  RDX_CHECK_GOTO(merge_records(ctx, &rec[1]), st, done);
  RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_SELECT), st, done);
  const uint32_t exists_l = RDX_JN_OV_START_L | RDX_JN_OV_ODD_L, exists_r = RDX_JN_OV_START_R | RDX_JN_OV_ODD_R;
  if (pred == RDX_JOIN_OVERLAY) {
    uint64_t *c = NULL;
    int64_t nc = 0;
    RDX_CHECK_GOTO(select_pairs(ctx, r, s, &rec[0], 0, exists_l, 0, 0, 0, &a, &na), st, done);
    RDX_CHECK_GOTO(select_pairs(ctx, r, s, &rec[1], 1, exists_l, 0, 0, 0, &c, &nc), st, done);
    /* the union of a and c */
    uint64_t *u = NULL;
    st = rdx_mem_alloc(ctx, "rdx_join_polygons: pairs", (void **)&u, (size_t)(na + nc + 1) * 8, RDX_HOST);
    if (st == RDX_OK) {
      memcpy(u, a, (size_t)na * 8);
      memcpy(u + na, c, (size_t)nc * 8);
    }
    rdx_mem_free(ctx, c);
    rdx_mem_free(ctx, a);
    a = u;
    if (st != RDX_OK) goto done;
    RDX_CHECK_GOTO(sort_unique(ctx, &a, na + nc, &na), st, done);
  } else {
    /* CONTAINS (B within A): all_L of every f of B in A (direction 1), no exists_R of an e of A in
     * B (direction 0); WITHIN the same with the directions swapped */
    const int d_all = pred == RDX_JOIN_CONTAINS ? 1 : 0;
    RDX_CHECK_GOTO(select_pairs(ctx, r, s, &rec[d_all], d_all, 0, RDX_JN_OV_START_L, RDX_JN_OV_ODD_L, 1, &a, &na), st,
                   done);
    RDX_CHECK_GOTO(select_pairs(ctx, r, s, &rec[1 - d_all], 1 - d_all, exists_r, 0, 0, 0, &b, &nb), st, done);
    na = set_minus(a, na, b, nb);
  }
  if (areas) {
    RDX_CHECK_GOTO(rdx_jn_track_stage(ctx, track, RDX_JN_ST_AREAS), st, done);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_join_polygons: areas", (void **)areas, (size_t)(na + 1) * 8, RDX_HOST),
                   st, done);
    memset(*areas, 0, (size_t)(na + 1) * 8);
    RDX_CHECK_GOTO(add_areas(ctx, r, s, rec, ev, n_ev, a, na, *areas), st, done);
  }
  *out = a;
  *n_out = na;
  a = NULL;
done:
  rdx_mem_free(ctx, ev[0]);
  rdx_mem_free(ctx, ev[1]);
  rdx_mem_free(ctx, flags[0]);
  rdx_mem_free(ctx, flags[1]);
  rdx_mem_free(ctx, pairs);
  rdx_mem_free(ctx, a);
  rdx_mem_free(ctx, b);
  recs_free(ctx, &rec[0]);
  recs_free(ctx, &rec[1]);
  return st;
}

const rdx_jn_ops rdx_jn_polygons_cpu_ops = {
    RDX_JN_OP_POLYGONS, RDX_BACKEND_CPU, NULL, NULL, NULL, NULL, NULL, NULL, rdx_jn_polygons_cpu, NULL,
};
