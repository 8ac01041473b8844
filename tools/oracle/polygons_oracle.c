/*
 * polygons_oracle.c: the polygon joins by brute force (polygons_oracle.h). Threads take chunks of
 * R's features in turn; each feature A is tried against every feature B of S whose box meets its
 * own, and each chunk's pairs, found in (A, B) order, are concatenated in chunk order, so the
 * result is sorted without a sort.
 */
#include "polygons_oracle.h"

#include "join/overlay_hd.h"
#include "join/pip_hd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FEATURES_PER_CHUNK 8
#define MAX_THREADS 64

/* A layer with what the loops read: each feature's box and each edge's end. */
typedef struct layer {
  const polygons_oracle_layer *in;
  const double *xy;
  double *box;               /* 4 per feature: lo.x, lo.y, hi.x, hi.y; lo > hi when no rings */
  uint64_t *edge_end;        /* per vertex: the vertex its edge ends at */
  int64_t max_edges;         /* the most edges of one feature */
} layer;

static int64_t first_edge(const layer *L, int64_t f) { return (int64_t)L->in->ring_offsets[L->in->feature_offsets[f]]; }
static int64_t end_edge(const layer *L, int64_t f) { return (int64_t)L->in->ring_offsets[L->in->feature_offsets[f + 1]]; }

static int layer_make(layer *L, const polygons_oracle_layer *in) {
  memset(L, 0, sizeof *L);
  L->in = in;
  L->xy = in->coords;
  const int64_t nf = in->n_features, nv = nf > 0 ? (int64_t)in->ring_offsets[in->feature_offsets[nf]] : 0;
  L->box = (double *)malloc((size_t)(nf + 1) * 4 * sizeof(double));
  L->edge_end = (uint64_t *)malloc((size_t)(nv + 1) * sizeof(uint64_t));
  if (!L->box || !L->edge_end) return 0;
  for (int64_t f = 0; f < nf; f++) {
    double *b = L->box + 4 * f;
    b[0] = b[1] = INFINITY, b[2] = b[3] = -INFINITY;
    for (uint64_t r = in->feature_offsets[f]; r < in->feature_offsets[f + 1]; r++) {
      const uint64_t v0 = in->ring_offsets[r], v1 = in->ring_offsets[r + 1];
      for (uint64_t v = v0; v < v1; v++) {
        const double *p = in->coords + 2 * v;
        b[0] = p[0] < b[0] ? p[0] : b[0], b[1] = p[1] < b[1] ? p[1] : b[1];
        b[2] = p[0] > b[2] ? p[0] : b[2], b[3] = p[1] > b[3] ? p[1] : b[3];
        L->edge_end[v] = v + 1 < v1 ? v + 1 : v0;
      }
    }
    const int64_t ne = end_edge(L, f) - first_edge(L, f);
    if (ne > L->max_edges) L->max_edges = ne;
  }
  return 1;
}

static void layer_free(layer *L) { free(L->box), free(L->edge_end); }

/* Closed boxes meet (an empty box, lo > hi, meets nothing). */
static int boxes_meet(const double *p, const double *q) {
  return p[0] <= q[2] && q[0] <= p[2] && p[1] <= q[3] && q[1] <= p[3];
}

/* ---- per thread ---- */

/* A vertex event for the groups: direction << 32 | the edge's index within its feature. */
typedef struct vertex_event {
  uint64_t key;
  double v[2];
  uint32_t bits;
} vertex_event;

typedef struct chunk_out {
  int64_t *pairs;            /* 2 per pair */
  double *areas;
  int64_t n, cap_pairs, cap_areas; /* pairs; room in pairs (int64_t) and areas */
} chunk_out;

typedef struct job {
  layer r, s;
  int predicate, want_areas;
  int64_t n_chunks;
  int64_t next;              /* the next chunk to take (atomic) */
  chunk_out *out;
  int failed;                /* some allocation failed (atomic) */
} job;

typedef struct worker {
  job *j;
  uint32_t *bits[2];         /* per edge of A (direction 0) and of B (direction 1) */
  vertex_event *vev;
  int64_t n_vev, cap_vev;
  rdx_jn_ov_event *aev;      /* areas: every event, to be ordered along its edge */
  int64_t n_aev, cap_aev;
} worker;

static int grow(void **p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return 1;
  int64_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return 0;
  *p = q, *cap = c;
  return 1;
}

static int cmp_vertex(const void *pa, const void *pb) {
  const vertex_event *a = (const vertex_event *)pa, *b = (const vertex_event *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->v[0] != b->v[0]) return a->v[0] < b->v[0] ? -1 : 1;
  if (a->v[1] != b->v[1]) return a->v[1] < b->v[1] ? -1 : 1;
  return 0;
}

/* overlay.c's order along an edge: key, then t, then the point. */
static int cmp_along(const void *pa, const void *pb) {
  const rdx_jn_ov_event *a = (const rdx_jn_ov_event *)pa, *b = (const rdx_jn_ov_event *)pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  if (a->v[0] != b->v[0]) return a->v[0] < b->v[0] ? -1 : 1;
  return a->v[1] < b->v[1] ? -1 : a->v[1] > b->v[1];
}

/* 1 when the start of edge a -> b, moved off it to the given side (+1 left, -1 right), lies in
 * feature f of Y: the parity of the upward ray's crossings of f's edges (pip_hd.h's side query). */
static int side_in(const layer *Y, int64_t f, const double *a, const double *b, int side) {
  rdx_jn_pip_at at;
  at.a[0] = a[0], at.a[1] = a[1], at.b[0] = b[0], at.b[1] = b[1], at.side = side;
  rdx_jn_pip_state st;
  rdx_jn_pip_state_init(&st, NULL, &at, NULL, 0, 0);
  int odd = 0;
  const polygons_oracle_layer *in = Y->in;
  for (uint64_t r = in->feature_offsets[f]; r < in->feature_offsets[f + 1]; r++) {
    const uint64_t v0 = in->ring_offsets[r], v1 = in->ring_offsets[r + 1];
    const uint32_t f0 = rdx_jn_pip_side_q(Y->xy + 2 * v0, st.q, st.pert);
    uint32_t fv = f0;
    for (uint64_t v = v0; v < v1; v++) {
      const uint64_t w = v + 1 < v1 ? v + 1 : v0;
      const uint32_t fw = w == v0 ? f0 : rdx_jn_pip_side_q(Y->xy + 2 * w, st.q, st.pert);
      if ((fv & fw) == 0 && rdx_jn_pip_edge_q(&st, Y->xy + 2 * v, Y->xy + 2 * w, fv, fw)) odd ^= 1;
      fv = fw;
    }
  }
  return odd;
}

/* The START bits of every edge of feature fx of X in feature fy of Y into bits (per edge of fx). */
static void starts(const layer *X, int64_t fx, const layer *Y, int64_t fy, int both_sides, uint32_t *bits) {
  const double *box = Y->box + 4 * fy;
  const int64_t e0 = first_edge(X, fx), e1 = end_edge(X, fx);
  for (int64_t e = e0; e < e1; e++) {
    const double *a = X->xy + 2 * e, *b = X->xy + 2 * X->edge_end[e];
    if (a[0] < box[0] || a[0] > box[2] || a[1] < box[1] || a[1] > box[3]) continue; /* outside fy's box */
    if (side_in(Y, fy, a, b, +1)) bits[e - e0] |= RDX_JN_OV_START_L;
    if (both_sides && side_in(Y, fy, a, b, -1)) bits[e - e0] |= RDX_JN_OV_START_R;
  }
}

/* The pair (A, B): whether it satisfies the predicate, and its area into *area for overlay with
 * areas. 0 on no memory (with *ok untouched). */
static int pair(worker *w, int64_t A, int64_t B, int *ok, double *area) {
  const job *j = w->j;
  const layer *R = &j->r, *S = &j->s;
  const int pred = j->predicate, areas = j->want_areas;
  *ok = 0;
  if (pred == 5) { /* boxes */
    *ok = 1;
    return 1;
  }
  const int64_t a0 = first_edge(R, A), a1 = end_edge(R, A), b0 = first_edge(S, B), b1 = end_edge(S, B);
  uint32_t *ba = w->bits[0], *bb = w->bits[1];
  memset(ba, 0, (size_t)(a1 - a0) * 4);
  memset(bb, 0, (size_t)(b1 - b0) * 4);
  w->n_vev = w->n_aev = 0;
  int touch = 0;
  const double *boxB = S->box + 4 * B;
  /* every edge pair: flips and, for INTERSECTS, a common point */
  for (int64_t e = a0; e < a1; e++) {
    const double *a = R->xy + 2 * e, *b = R->xy + 2 * R->edge_end[e];
    const double ex0 = a[0] < b[0] ? a[0] : b[0], ex1 = a[0] < b[0] ? b[0] : a[0];
    const double ey0 = a[1] < b[1] ? a[1] : b[1], ey1 = a[1] < b[1] ? b[1] : a[1];
    if (ex1 < boxB[0] || ex0 > boxB[2] || ey1 < boxB[1] || ey0 > boxB[3]) continue;
    for (int64_t f = b0; f < b1; f++) {
      const double *c = S->xy + 2 * f, *d = S->xy + 2 * S->edge_end[f];
      if ((c[0] < ex0 && d[0] < ex0) || (c[0] > ex1 && d[0] > ex1) || (c[1] < ey0 && d[1] < ey0) ||
          (c[1] > ey1 && d[1] > ey1))
        continue;
      if (pred == 2 && !touch) touch = rdx_jn_seg_relation(a, b, c, d) != RDX_JN_DISJOINT;
      double v[2];
      uint32_t bits;
      const int kind = rdx_jn_ov_classify(a, b, c, d, v, &bits);
      if (kind == RDX_JN_OV_NONE || (kind != RDX_JN_OV_PROPER && bits == 0)) continue;
      const uint64_t k0 = (uint64_t)(e - a0), k1 = (uint64_t)1 << 32 | (uint64_t)(f - b0);
      if (kind == RDX_JN_OV_PROPER) {
        const uint32_t both = RDX_JN_OV_ODD_L | RDX_JN_OV_ODD_R;
        ba[e - a0] |= both, bb[f - b0] |= both;
        if (!areas) continue;
        if (!grow((void **)&w->aev, &w->cap_aev, w->n_aev + 2, sizeof *w->aev)) return 0;
        rdx_jn_seg_point(a, b, c, d, &v[0], &v[1]);
        rdx_jn_ov_put_event(w->aev + w->n_aev++, k0, v, a, b, both, 1);
        rdx_jn_ov_put_event(w->aev + w->n_aev++, k1, v, c, d, both, 1);
        continue;
      }
      const int on_e = kind == RDX_JN_OV_VERTEX_S; /* the vertex is strictly inside e, else inside f */
      if (!grow((void **)&w->vev, &w->cap_vev, w->n_vev + 1, sizeof *w->vev)) return 0;
      vertex_event *x = w->vev + w->n_vev++;
      x->key = on_e ? k0 : k1, x->v[0] = v[0], x->v[1] = v[1], x->bits = bits;
      if (!areas) continue;
      if (!grow((void **)&w->aev, &w->cap_aev, w->n_aev + 1, sizeof *w->aev)) return 0;
      rdx_jn_ov_put_event(w->aev + w->n_aev++, x->key, v, on_e ? a : c, on_e ? b : d, bits, 0);
    }
  }
  /* vertex groups: the flips of one (edge, vertex) added; an odd group sets its bits */
  if (w->n_vev > 1) qsort(w->vev, (size_t)w->n_vev, sizeof *w->vev, cmp_vertex);
  for (int64_t i = 0; i < w->n_vev;) {
    uint32_t x = 0;
    int64_t k = i;
    for (; k < w->n_vev && cmp_vertex(w->vev + i, w->vev + k) == 0; k++) x ^= w->vev[k].bits;
    const uint64_t key = w->vev[i].key;
    if (x) (key >> 32 ? bb : ba)[(uint32_t)key] |= x;
    i = k;
  }
  if (pred == 2 && touch) {
    *ok = 1;
    return 1;
  }
  /* the starts: left always, right for CONTAINS, WITHIN and areas */
  const int both_sides = pred == 3 || pred == 4 || areas;
  starts(R, A, S, B, both_sides, ba);
  starts(S, B, R, A, both_sides, bb);
  const uint32_t exists_l = RDX_JN_OV_START_L | RDX_JN_OV_ODD_L, exists_r = RDX_JN_OV_START_R | RDX_JN_OV_ODD_R;
  if (pred == 1 || pred == 2) {
    for (int64_t i = 0; i < a1 - a0 && !*ok; i++) *ok = (ba[i] & exists_l) != 0;
    for (int64_t i = 0; i < b1 - b0 && !*ok; i++) *ok = (bb[i] & exists_l) != 0;
  } else { /* CONTAINS: every f of B all_L in A and no e of A exists_R in B; WITHIN swapped */
    const uint32_t *all = pred == 3 ? bb : ba, *none = pred == 3 ? ba : bb;
    const int64_t n_all = pred == 3 ? b1 - b0 : a1 - a0, n_none = pred == 3 ? a1 - a0 : b1 - b0;
    *ok = 1;
    for (int64_t i = 0; i < n_all && *ok; i++) *ok = (all[i] & RDX_JN_OV_START_L) && !(all[i] & RDX_JN_OV_ODD_L);
    for (int64_t i = 0; i < n_none && *ok; i++) *ok = (none[i] & exists_r) == 0;
  }
  if (!*ok || !areas) return 1;
  /* the area: each record's share, in the order (direction, edge), about A's first vertex */
  if (w->n_aev > 1) qsort(w->aev, (size_t)w->n_aev, sizeof *w->aev, cmp_along);
  const double *o = R->xy + 2 * a0;
  rdx_jn_ov_sum sum = {0.0, 0.0};
  int64_t k = 0;
  for (int d = 0; d < 2; d++) {
    const layer *X = d == 0 ? R : S;
    const int64_t x0 = d == 0 ? a0 : b0, x1 = d == 0 ? a1 : b1;
    const uint32_t *bits = d == 0 ? ba : bb;
    for (int64_t e = x0; e < x1; e++) {
      const uint64_t key = (uint64_t)d << 32 | (uint64_t)(e - x0);
      while (k < w->n_aev && w->aev[k].key < key) k++;
      const int64_t k0 = k;
      while (k < w->n_aev && w->aev[k].key == key) k++;
      if (bits[e - x0] == 0) continue; /* no record: nothing of the edge lies in the other feature */
      const double *a = X->xy + 2 * e, *b = X->xy + 2 * X->edge_end[e];
      rdx_jn_ov_sum_add(&sum, rdx_jn_ov_area_share(a, b, bits[e - x0], w->aev, NULL, k0, k - k0, o));
    }
  }
  *area = rdx_jn_ov_sum_value(&sum);
  return 1;
}

static void *work(void *arg) {
  worker *w = (worker *)arg;
  job *j = w->j;
  const int64_t nr = j->r.in->n_features, ns = j->s.in->n_features;
  for (;;) {
    if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) break;
    const int64_t c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    if (c >= j->n_chunks) break;
    chunk_out *out = j->out + c;
    const int64_t f1 = (c + 1) * FEATURES_PER_CHUNK < nr ? (c + 1) * FEATURES_PER_CHUNK : nr;
    for (int64_t A = c * FEATURES_PER_CHUNK; A < f1; A++) {
      const double *boxA = j->r.box + 4 * A;
      for (int64_t B = 0; B < ns; B++) {
        if (!boxes_meet(boxA, j->s.box + 4 * B)) continue;
        int ok = 0;
        double area = 0.0;
        if (!pair(w, A, B, &ok, &area)) goto no_memory;
        if (!ok) continue;
        if (!grow((void **)&out->pairs, &out->cap_pairs, 2 * (out->n + 1), 8)) goto no_memory;
        if (j->want_areas && !grow((void **)&out->areas, &out->cap_areas, out->n + 1, 8)) goto no_memory;
        out->pairs[2 * out->n] = A, out->pairs[2 * out->n + 1] = B;
        if (j->want_areas) out->areas[out->n] = area;
        out->n++;
      }
    }
  }
  return NULL;
no_memory:
  __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
  return NULL;
}

int64_t polygons_oracle_join(const polygons_oracle_layer *R, const polygons_oracle_layer *S, int predicate,
                             int threads, int64_t **pairs, double **areas) {
  *pairs = NULL;
  if (areas) *areas = NULL;
  if (predicate < 1 || predicate > 5 || (areas && predicate != 1)) return -1;
  job j;
  memset(&j, 0, sizeof j);
  j.predicate = predicate;
  j.want_areas = areas != NULL;
  int64_t total = -1;
  worker w[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  int n_workers = 0, n_started = 0;
  memset(w, 0, sizeof w);
  if (!layer_make(&j.r, R) || !layer_make(&j.s, S)) goto done;
  j.n_chunks = (R->n_features + FEATURES_PER_CHUNK - 1) / FEATURES_PER_CHUNK;
  j.out = (chunk_out *)calloc((size_t)j.n_chunks + 1, sizeof *j.out);
  if (!j.out) goto done;
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  if (threads > j.n_chunks) threads = j.n_chunks > 0 ? (int)j.n_chunks : 1;
  for (n_workers = 0; n_workers < threads; n_workers++) {
    worker *x = w + n_workers;
    x->j = &j;
    x->bits[0] = (uint32_t *)malloc((size_t)(j.r.max_edges + 1) * 4);
    x->bits[1] = (uint32_t *)malloc((size_t)(j.s.max_edges + 1) * 4);
    if (!x->bits[0] || !x->bits[1]) {
      n_workers++;
      goto done;
    }
  }
  for (int t = 1; t < n_workers; t++) {
    if (pthread_create(tid + t, NULL, work, w + t) != 0) break;
    n_started = t;
  }
  work(w); /* this thread is worker 0 */
  for (int t = 1; t <= n_started; t++) pthread_join(tid[t], NULL);
  if (j.failed) goto done;
  int64_t n = 0;
  for (int64_t c = 0; c < j.n_chunks; c++) n += j.out[c].n;
  *pairs = (int64_t *)malloc((size_t)(2 * n + 1) * 8);
  if (areas) *areas = (double *)malloc((size_t)(n + 1) * 8);
  if (!*pairs || (areas && !*areas)) {
    free(*pairs), *pairs = NULL;
    if (areas) free(*areas), *areas = NULL;
    goto done;
  }
  int64_t k = 0;
  for (int64_t c = 0; c < j.n_chunks; c++) {
    if (j.out[c].n) memcpy(*pairs + 2 * k, j.out[c].pairs, (size_t)j.out[c].n * 16);
    if (areas && j.out[c].n) memcpy(*areas + k, j.out[c].areas, (size_t)j.out[c].n * 8);
    k += j.out[c].n;
  }
  total = n;
done:
  for (int t = 0; t < n_workers; t++) free(w[t].bits[0]), free(w[t].bits[1]), free(w[t].vev), free(w[t].aev);
  if (j.out)
    for (int64_t c = 0; c < j.n_chunks; c++) free(j.out[c].pairs), free(j.out[c].areas);
  free(j.out);
  layer_free(&j.r);
  layer_free(&j.s);
  return total;
}
