/*
 * points_oracle.h: brute-force answers to spatial point queries, the reference for every spatial
 * test and the `bench points` check column. Obviously right and slow: every query looks at every
 * point.
 *
 * The arithmetic is the API's definition (raydex.h, "Spatial point indexes"): coordinates as
 * doubles, d2 = (x - qx)^2 + (y - qy)^2 with each operation rounded to nearest, within iff
 * d2 <= r * r, windows inclusive, matches by ==, kNN by ascending (d2, id).
 */
#ifndef RDX_POINTS_ORACLE_H
#define RDX_POINTS_ORACLE_H

#include <stdint.h>

typedef struct points_oracle {
  int64_t n;
  double *x, *y;
  uint64_t *id;
  double *d2;      /* scratch for kNN */
  int64_t *order;  /* scratch for kNN */
} points_oracle;

enum { PO_MATCH = 0, PO_WINDOW = 1, PO_WITHIN = 2, PO_KNN = 3 };

/* Copy n points (x, y, id). Returns 0 on out of memory. */
int points_oracle_init(points_oracle *o, int64_t n, const double *x, const double *y, const uint64_t *id);
void points_oracle_free(points_oracle *o);
/* The answer to one query (q: 2, 4, 3 or 2 values by type; k for kNN): its ids, in the API's
 * order, into out (may be NULL); returns how many. */
int64_t points_oracle_query(points_oracle *o, int type, const double *q, int k, uint64_t *out);

#endif
