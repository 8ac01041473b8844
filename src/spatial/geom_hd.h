/*
 * geom_hd.h: the arithmetic every spatial backend shares, written once for host and device
 * (RDX_HD): Morton codes, the grid that maps coordinates to cells, the query predicates, node
 * pruning tests and the kNN candidate heap.
 *
 * Exactness is the invariant. Every backend computes the same doubles with the same operations,
 * each rounded to nearest: on the device through __dadd_rn/__dsub_rn/__dmul_rn, which nvcc never
 * contracts into FMAs; on the host with plain C under -std=c11, where GCC does not contract either
 * (-ffp-contract=off is its ISO default). So a point passes a query on the CPU exactly when it
 * passes on the GPU and in the brute-force oracle (tools/oracle/points_oracle.c, same formulas).
 *
 * Pruning must never drop a point that passes. Two arguments make it safe:
 *  - Monotonicity: fl(a - b), fl(a * s) for s >= 0, floor and clamping are monotone, so the cell
 *    map x -> cell(x) is monotone, and so is the computed distance in each coordinate. Window
 *    queries are pruned in cell space with it (exact), and k-d regions, whose bounds are point
 *    coordinates, are pruned with computed distances (exact: a point inside a region is never
 *    nearer, as computed, than the region's computed nearest edge).
 *  - Slack: quadtree cells for distance queries are geometric boxes (x0 + i * cw, ...) whose
 *    computed corners can be a few ulps off the cell map's true boundaries; they are widened by
 *    grid.slack and compared with relative margins of 1e-12, 10^3 times the rounding error.
 */
#ifndef RDX_SPATIAL_GEOM_HD_H
#define RDX_SPATIAL_GEOM_HD_H

#include "core/core.h"

/* ---- rounded arithmetic, identical on host and device ---- */

RDX_HD double rdx_sp_sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
RDX_HD double rdx_sp_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
RDX_HD double rdx_sp_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/* Squared distance as the API defines it: (px - qx)^2 + (py - qy)^2, each step rounded. */
RDX_HD double rdx_sp_d2(double px, double py, double qx, double qy) {
  double dx = rdx_sp_sub(px, qx), dy = rdx_sp_sub(py, qy);
  return rdx_sp_add(rdx_sp_mul(dx, dx), rdx_sp_mul(dy, dy));
}

/* Coordinate i of a SoA array of f32 (f64 == 0) or f64 values, as a double (exact). */
RDX_HD double rdx_sp_at(const void *p, int64_t i, int f64) {
  return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* ---- Morton codes: x in the even bits, y in the odd bits ---- */

RDX_HD uint64_t rdx_sp_spread(uint32_t v) { /* bit i of v -> bit 2i */
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  x = (x | (x << 1)) & 0x5555555555555555ull;
  return x;
}
RDX_HD uint32_t rdx_sp_compact(uint64_t x) { /* inverse of spread on the even bits */
  x &= 0x5555555555555555ull;
  x = (x | (x >> 1)) & 0x3333333333333333ull;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFull;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFull;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFull;
  return (uint32_t)x;
}
RDX_HD uint64_t rdx_sp_morton(uint32_t ix, uint32_t iy) {
  return rdx_sp_spread(ix) | (rdx_sp_spread(iy) << 1);
}
RDX_HD uint32_t rdx_sp_morton_x(uint64_t key) { return rdx_sp_compact(key); }
RDX_HD uint32_t rdx_sp_morton_y(uint64_t key) { return rdx_sp_compact(key >> 1); }

/* ---- the grid: 2^D x 2^D cells over the index box ---- */

typedef struct rdx_sp_grid {
  double x0, y0, x1, y1;  /* the box; every indexed point lies in it */
  double sx, sy;          /* cells per unit, 2^D / width (0 for a zero width) */
  double cw, ch;          /* finest cell width and height, width / 2^D */
  double slack;           /* absolute widening of geometric cell boxes (see the file comment) */
  int depth;              /* D, finest level; the quadtree's max_depth */
  uint32_t max_cell;      /* 2^D - 1 */
} rdx_sp_grid;

/* Cell index of v along one axis: floor((v - lo) * s) clamped to [0, max_cell]. Monotone in v. */
RDX_HD uint32_t rdx_sp_cell(double v, double lo, double s, uint32_t max_cell) {
  double t = rdx_sp_mul(rdx_sp_sub(v, lo), s);
  if (!(t > 0.0)) return 0; /* also catches the NaN of inf * 0 */
  if (t >= (double)max_cell) return max_cell;
  return (uint32_t)t;
}
RDX_HD uint64_t rdx_sp_point_key(const rdx_sp_grid *g, double x, double y) {
  return rdx_sp_morton(rdx_sp_cell(x, g->x0, g->sx, g->max_cell), rdx_sp_cell(y, g->y0, g->sy, g->max_cell));
}

/* Finest-cell ranges [*xl, *xh] x [*yl, *yh] covered by the node (key, level). */
RDX_HD void rdx_sp_node_cells(const rdx_sp_grid *g, uint64_t key, int level, uint32_t *xl, uint32_t *xh, uint32_t *yl,
                              uint32_t *yh) {
  int sh = g->depth - level;
  uint64_t kx = rdx_sp_morton_x(key), ky = rdx_sp_morton_y(key);
  *xl = (uint32_t)(kx << sh);
  *xh = (uint32_t)(((kx + 1) << sh) - 1);
  *yl = (uint32_t)(ky << sh);
  *yh = (uint32_t)(((ky + 1) << sh) - 1);
}

/* Geometric box of a cell range, widened by the slack: b = xmin, ymin, xmax, ymax. */
RDX_HD void rdx_sp_cells_box(const rdx_sp_grid *g, uint32_t xl, uint32_t xh, uint32_t yl, uint32_t yh, double *b) {
  b[0] = rdx_sp_sub(rdx_sp_add(g->x0, rdx_sp_mul((double)xl, g->cw)), g->slack);
  b[1] = rdx_sp_sub(rdx_sp_add(g->y0, rdx_sp_mul((double)yl, g->ch)), g->slack);
  b[2] = rdx_sp_add(rdx_sp_add(g->x0, rdx_sp_mul((double)xh + 1.0, g->cw)), g->slack);
  b[3] = rdx_sp_add(rdx_sp_add(g->y0, rdx_sp_mul((double)yh + 1.0, g->ch)), g->slack);
}

/* Smallest and largest computed squared distance from (qx, qy) to box b. */
RDX_HD double rdx_sp_box_min_d2(const double *b, double qx, double qy) {
  double dx = qx < b[0] ? rdx_sp_sub(b[0], qx) : (qx > b[2] ? rdx_sp_sub(qx, b[2]) : 0.0);
  double dy = qy < b[1] ? rdx_sp_sub(b[1], qy) : (qy > b[3] ? rdx_sp_sub(qy, b[3]) : 0.0);
  return rdx_sp_add(rdx_sp_mul(dx, dx), rdx_sp_mul(dy, dy));
}
RDX_HD double rdx_sp_box_max_d2(const double *b, double qx, double qy) {
  double ax = rdx_sp_sub(qx, b[0]), bx = rdx_sp_sub(b[2], qx);
  double ay = rdx_sp_sub(qy, b[1]), by = rdx_sp_sub(b[3], qy);
  double dx = ax > bx ? ax : bx, dy = ay > by ? ay : by;
  return rdx_sp_add(rdx_sp_mul(dx, dx), rdx_sp_mul(dy, dy));
}

/* ---- queries ---- */

enum { RDX_SP_MATCH = 0, RDX_SP_WINDOW = 1, RDX_SP_WITHIN = 2, RDX_SP_KNN = 3 };

/* One query in doubles. match/knn: (a, b) = x, y. window: a, b, c, d = xmin, ymin, xmax, ymax.
 * within: (a, b) = centre, c = r, r2 = fl(r * r). */
typedef struct rdx_sp_q {
  double a, b, c, d, r2;
} rdx_sp_q;

/* Query i of a row-major (m, columns) array of f32 or f64. */
RDX_HD rdx_sp_q rdx_sp_load_query(const void *q, int64_t i, int type, int f64) {
  rdx_sp_q r;
  int cols = type == RDX_SP_WINDOW ? 4 : type == RDX_SP_WITHIN ? 3 : 2;
  r.a = rdx_sp_at(q, i * cols, f64);
  r.b = rdx_sp_at(q, i * cols + 1, f64);
  r.c = cols > 2 ? rdx_sp_at(q, i * cols + 2, f64) : 0.0;
  r.d = cols > 3 ? rdx_sp_at(q, i * cols + 3, f64) : 0.0;
  r.r2 = type == RDX_SP_WITHIN ? rdx_sp_mul(r.c, r.c) : 0.0;
  return r;
}

/* Does point (x, y) answer query q? (Not used for kNN.) */
RDX_HD int rdx_sp_hit(int type, const rdx_sp_q *q, double x, double y) {
  if (type == RDX_SP_MATCH) return x == q->a && y == q->b;
  if (type == RDX_SP_WINDOW) return q->a <= x && x <= q->c && q->b <= y && y <= q->d;
  return rdx_sp_d2(x, y, q->a, q->b) <= q->r2;
}

/* Relative margins of the geometric (slack) tests. */
#define RDX_SP_PRUNE_MARGIN 1e-12
#define RDX_SP_R2_FULL_MIN 1e-290 /* below this, r^2 may be subnormal: no containment shortcut */

/* ---- kNN candidates: a max-heap of (d2, id) pairs, ordered lexicographically ---- */

RDX_HD int rdx_sp_less(double da, uint64_t ia, double db, uint64_t ib) {
  return da < db || (da == db && ia < ib);
}

/* Offer (d, id) to a heap of at most k entries holding *size now. */
RDX_HD void rdx_sp_heap_offer(double *hd, uint64_t *hi, int *size, int k, double d, uint64_t id) {
  int n = *size, i;
  if (n < k) { /* sift up */
    i = n++;
    while (i > 0) {
      int p = (i - 1) >> 1;
      if (!rdx_sp_less(hd[p], hi[p], d, id)) break;
      hd[i] = hd[p];
      hi[i] = hi[p];
      i = p;
    }
    hd[i] = d;
    hi[i] = id;
    *size = n;
    return;
  }
  if (!rdx_sp_less(d, id, hd[0], hi[0])) return;
  i = 0; /* replace the root, sift down */
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && rdx_sp_less(hd[c], hi[c], hd[c + 1], hi[c + 1])) c++;
    if (!rdx_sp_less(d, id, hd[c], hi[c])) break;
    hd[i] = hd[c];
    hi[i] = hi[c];
    i = c;
  }
  hd[i] = d;
  hi[i] = id;
}

/* Sort the heap in place into ascending (d2, id) order. */
RDX_HD void rdx_sp_heap_sort(double *hd, uint64_t *hi, int n) {
  for (int end = n - 1; end > 0; end--) {
    double td = hd[0];
    uint64_t ti = hi[0];
    /* sift the last element down from the root over [0, end) */
    double d = hd[end];
    uint64_t id = hi[end];
    int i = 0;
    for (;;) {
      int c = 2 * i + 1;
      if (c >= end) break;
      if (c + 1 < end && rdx_sp_less(hd[c], hi[c], hd[c + 1], hi[c + 1])) c++;
      if (!rdx_sp_less(d, id, hd[c], hi[c])) break;
      hd[i] = hd[c];
      hi[i] = hi[c];
      i = c;
    }
    hd[i] = d;
    hi[i] = id;
    hd[end] = td;
    hi[end] = ti;
  }
}

#endif /* RDX_SPATIAL_GEOM_HD_H */
