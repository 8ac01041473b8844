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

static int less(double da, uint64_t ia, double db, uint64_t ib) { return da < db || (da == db && ia < ib); }

static int cmp_u64(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return (a > b) - (a < b);
}

/* The k smallest (d2, id) by a textbook binary max-heap, then sorted by repeated extraction. */
static int64_t knn(points_oracle *o, double qx, double qy, int k, uint64_t *out) {
  double *hd = o->d2;
  int64_t *hi = o->order; /* index into the points */
  int64_t size = 0;
  for (int64_t i = 0; i < o->n; i++) {
    double d = dist2(o->x[i], o->y[i], qx, qy);
    int64_t at;
    if (size < k) {
      at = size++;
      while (at > 0 && less(hd[(at - 1) / 2], o->id[hi[(at - 1) / 2]], d, o->id[i])) {
        hd[at] = hd[(at - 1) / 2], hi[at] = hi[(at - 1) / 2];
        at = (at - 1) / 2;
      }
    } else if (less(d, o->id[i], hd[0], o->id[hi[0]])) {
      at = 0;
      for (;;) {
        int64_t c = 2 * at + 1;
        if (c >= size) break;
        if (c + 1 < size && less(hd[c], o->id[hi[c]], hd[c + 1], o->id[hi[c + 1]])) c++;
        if (!less(d, o->id[i], hd[c], o->id[hi[c]])) break;
        hd[at] = hd[c], hi[at] = hi[c];
        at = c;
      }
    } else {
      continue;
    }
    hd[at] = d, hi[at] = i;
  }
  int64_t c = size;
  /* extract the maximum repeatedly, filling from the back */
  while (size > 0) {
    int64_t top = hi[0];
    if (out) out[size - 1] = o->id[top];
    size--;
    double d = hd[size];
    int64_t ii = hi[size], at = 0;
    for (;;) {
      int64_t ch = 2 * at + 1;
      if (ch >= size) break;
      if (ch + 1 < size && less(hd[ch], o->id[hi[ch]], hd[ch + 1], o->id[hi[ch + 1]])) ch++;
      if (!less(d, o->id[ii], hd[ch], o->id[hi[ch]])) break;
      hd[at] = hd[ch], hi[at] = hi[ch];
      at = ch;
    }
    hd[at] = d, hi[at] = ii;
  }
  return c;
}

int64_t points_oracle_query(points_oracle *o, int type, const double *q, int k, uint64_t *out) {
  int64_t c = 0;
  if (type == PO_KNN) return knn(o, q[0], q[1], k, out);
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
  int sorted = 1; /* points are usually kept in id order: skip the sort then */
  for (int64_t i = 1; out && i < c && sorted; i++) sorted = out[i] > out[i - 1];
  if (out && !sorted) qsort(out, (size_t)c, 8, cmp_u64);
  return c;
}
