/*
 * lsi_oracle.c: see lsi_oracle.h. All R edges against all S edges; rows collected, sorted with
 * qsort and made unique.
 */
#include "lsi_oracle.h"

#include "join/exact_hd.h"

#include <stdlib.h>
#include <string.h>

typedef struct edge {
  int64_t feature;
  const double *a, *b;
} edge;

/* The layer's edges of positive length, malloc'd; *n gets their number (-1 on no memory). */
static edge *edges_of(const lsi_oracle_layer *L, int64_t *n) {
  int64_t nv = 0;
  if (L->n_features > 0) nv = (int64_t)L->ring_offsets[L->feature_offsets[L->n_features]];
  edge *e = (edge *)malloc((size_t)(nv + 1) * sizeof *e);
  *n = -1;
  if (e == NULL) return NULL;
  int64_t k = 0;
  for (int64_t f = 0; f < L->n_features; f++)
    for (uint64_t r = L->feature_offsets[f]; r < L->feature_offsets[f + 1]; r++) {
      uint64_t v0 = L->ring_offsets[r], v1 = L->ring_offsets[r + 1];
      for (uint64_t v = v0; v < v1; v++) {
        const double *a = L->coords + 2 * v, *b = L->coords + 2 * (v + 1 < v1 ? v + 1 : v0);
        if (a[0] == b[0] && a[1] == b[1]) continue;
        e[k].feature = f, e[k].a = a, e[k].b = b;
        k++;
      }
    }
  *n = k;
  return e;
}

typedef struct row {
  int64_t r, s;
  double x, y;
} row;

static int cmp_row(const void *pa, const void *pb) {
  const row *a = (const row *)pa, *b = (const row *)pb;
  if (a->r != b->r) return a->r < b->r ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  if (a->x != b->x) return a->x < b->x ? -1 : 1;
  if (a->y != b->y) return a->y < b->y ? -1 : 1;
  return 0;
}

/* Every row (points: one per point; else one per intersecting edge pair with x = y = 0), sorted
 * and unique into *out; returns how many, or -1. */
static int64_t rows(const lsi_oracle_layer *R, const lsi_oracle_layer *S, int points, row **out) {
  int64_t nr, ns, n = 0, cap = 64;
  edge *er = edges_of(R, &nr), *es = edges_of(S, &ns);
  row *w = (row *)malloc((size_t)cap * sizeof *w);
  *out = NULL;
  if (er == NULL || es == NULL || w == NULL) {
    free(er), free(es), free(w);
    return -1;
  }
  for (int64_t i = 0; i < nr; i++)
    for (int64_t j = 0; j < ns; j++) {
      int rel = rdx_jn_seg_relation(er[i].a, er[i].b, es[j].a, es[j].b);
      if (rel == RDX_JN_DISJOINT) continue;
      double p[4] = {0.0, 0.0, 0.0, 0.0};
      int k = 1;
      if (points && rel == RDX_JN_OVERLAP) {
        rdx_jn_overlap_ends(er[i].a, er[i].b, es[j].a, es[j].b, p, p + 2);
        k = 2;
      } else if (points) {
        rdx_jn_seg_point(er[i].a, er[i].b, es[j].a, es[j].b, &p[0], &p[1]);
      }
      for (int q = 0; q < k; q++) {
        if (n == cap) {
          row *g = (row *)realloc(w, (size_t)(cap *= 2) * sizeof *w);
          if (g == NULL) {
            free(er), free(es), free(w);
            return -1;
          }
          w = g;
        }
        w[n].r = er[i].feature, w[n].s = es[j].feature;
        w[n].x = p[2 * q] == 0.0 ? 0.0 : p[2 * q]; /* -0 as +0 */
        w[n].y = p[2 * q + 1] == 0.0 ? 0.0 : p[2 * q + 1];
        n++;
      }
    }
  free(er), free(es);
  qsort(w, (size_t)n, sizeof *w, cmp_row);
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (m == 0 || cmp_row(&w[m - 1], &w[i]) != 0) w[m++] = w[i];
  *out = w;
  return m;
}

int64_t lsi_oracle_pairs(const lsi_oracle_layer *R, const lsi_oracle_layer *S, int64_t **pairs) {
  row *w;
  int64_t n = rows(R, S, 0, &w);
  *pairs = NULL;
  if (n < 0) return -1;
  *pairs = (int64_t *)malloc((size_t)(2 * n + 1) * sizeof **pairs);
  if (*pairs == NULL) {
    free(w);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) (*pairs)[2 * i] = w[i].r, (*pairs)[2 * i + 1] = w[i].s;
  free(w);
  return n;
}

int64_t lsi_oracle_points(const lsi_oracle_layer *R, const lsi_oracle_layer *S, int64_t **point_pairs,
                          double **points) {
  row *w;
  int64_t n = rows(R, S, 1, &w);
  *point_pairs = NULL;
  *points = NULL;
  if (n < 0) return -1;
  *point_pairs = (int64_t *)malloc((size_t)(2 * n + 1) * sizeof **point_pairs);
  *points = (double *)malloc((size_t)(2 * n + 1) * sizeof **points);
  if (*point_pairs == NULL || *points == NULL) {
    free(*point_pairs), free(*points), free(w);
    *point_pairs = NULL, *points = NULL;
    return -1;
  }
  for (int64_t i = 0; i < n; i++) {
    (*point_pairs)[2 * i] = w[i].r, (*point_pairs)[2 * i + 1] = w[i].s;
    (*points)[2 * i] = w[i].x, (*points)[2 * i + 1] = w[i].y;
  }
  free(w);
  return n;
}
