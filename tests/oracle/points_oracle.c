/*
 * points_oracle.c: brute-force spatial queries (see points_oracle.h).
 */
#include "points_oracle.h"

#include <stdlib.h>
#include <string.h>

int points_oracle_init(points_oracle *o, int64_t n, const double *x, const double *y, const uint64_t *id) {
  memset(o, 0, sizeof *o);
  size_t b = (size_t)(n ? n : 1) * 8;
  o->x = (double *)malloc(b);
  o->y = (double *)malloc(b);
  o->id = (uint64_t *)malloc(b);
  o->d2 = (double *)malloc(b);
  o->order = (int64_t *)malloc(b);
  if (!o->x || !o->y || !o->id || !o->d2 || !o->order) {
    points_oracle_free(o);
    return 0;
  }
  o->n = n;
  if (n) {
    memcpy(o->x, x, (size_t)n * 8);
    memcpy(o->y, y, (size_t)n * 8);
    memcpy(o->id, id, (size_t)n * 8);
  }
  return 1;
}

void points_oracle_free(points_oracle *o) {
  free(o->x);
  free(o->y);
  free(o->id);
  free(o->d2);
  free(o->order);
  memset(o, 0, sizeof *o);
}

/* volatile stores force each operation to be rounded on its own */
static double dist2(double px, double py, double qx, double qy) {
  volatile double dx = px - qx, dy = py - qy;
  volatile double a = dx * dx, b = dy * dy;
  volatile double s = a + b;
  return s;
}

static const points_oracle *sort_ctx;
static int cmp_knn(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  double da = sort_ctx->d2[a], db = sort_ctx->d2[b];
  if (da != db) return da < db ? -1 : 1;
  return (sort_ctx->id[a] > sort_ctx->id[b]) - (sort_ctx->id[a] < sort_ctx->id[b]);
}
static int cmp_u64(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return (a > b) - (a < b);
}

int64_t points_oracle_query(points_oracle *o, int type, const double *q, int k, uint64_t *out) {
  int64_t c = 0;
  if (type == PO_KNN) {
    for (int64_t i = 0; i < o->n; i++) {
      o->d2[i] = dist2(o->x[i], o->y[i], q[0], q[1]);
      o->order[i] = i;
    }
    sort_ctx = o;
    qsort(o->order, (size_t)o->n, sizeof *o->order, cmp_knn);
    c = o->n < k ? o->n : k;
    if (out)
      for (int64_t i = 0; i < c; i++) out[i] = o->id[o->order[i]];
    return c;
  }
  volatile double r2 = type == PO_WITHIN ? q[2] * q[2] : 0.0;
  for (int64_t i = 0; i < o->n; i++) {
    double x = o->x[i], y = o->y[i];
    int hit;
    if (type == PO_MATCH) hit = x == q[0] && y == q[1];
    else if (type == PO_WINDOW) hit = q[0] <= x && x <= q[2] && q[1] <= y && y <= q[3];
    else hit = dist2(x, y, q[0], q[1]) <= r2;
    if (hit) {
      if (out) out[c] = o->id[i];
      c++;
    }
  }
  if (out && c > 1) qsort(out, (size_t)c, 8, cmp_u64);
  return c;
}
