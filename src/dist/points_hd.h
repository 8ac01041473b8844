/*
 * points_hd.h: the partition and routing arithmetic of a distributed point index, shared by
 * points.c's host rounds and the device path (points_gpu.cu), so both send a query to the same
 * ranks and ask the same radii.
 */
#ifndef RDX_DIST_POINTS_HD_H
#define RDX_DIST_POINTS_HD_H

#include "spatial/geom_hd.h"

#include <float.h>
#include <math.h>

/* Does a query (q: its values as doubles, window x0 y0 x1 y1, within x y r, match x y) meet box b
 * (xmin, ymin, xmax, ymax) of a rank holding points? The shards' own tests, on the box: a point
 * inside the box is never nearer, as computed, than the box's computed nearest edge. */
RDX_HD int rdx_dist_touches(const double *b, int32_t type, const double *q) {
  if (type == RDX_POINTS_WINDOW) return q[0] <= b[2] && b[0] <= q[2] && q[1] <= b[3] && b[1] <= q[3];
  if (type == RDX_POINTS_MATCH) return b[0] <= q[0] && q[0] <= b[2] && b[1] <= q[1] && q[1] <= b[3];
  return rdx_sp_box_min_d2(b, q[0], q[1]) <= rdx_sp_mul(q[2], q[2]);
}

/* ---- the partition: a 2^31 x 2^31 Morton grid of the index's box; rank r owns the codes in
 * (splitters[r - 1], splitters[r]] ---- */

/* The cell of v along one axis of [lo, hi]: 2^31 cells, clamped (a query may lie outside). */
RDX_HD uint32_t rdx_dist_cell_of(double v, double lo, double hi) {
  const double cells = 2147483648.0; /* 2^31 */
  double w = rdx_sp_sub(hi, lo);
  double t = w > 0 ? rdx_sp_mul(rdx_sp_sub(v, lo) / w, cells) : 0.0;
  if (!(t >= 0)) t = 0;
  if (t >= cells) t = cells - 1;
  return (uint32_t)t;
}
RDX_HD uint64_t rdx_dist_code_of(const double *box, double x, double y) {
  return rdx_sp_spread(rdx_dist_cell_of(x, box[0], box[2])) | (rdx_sp_spread(rdx_dist_cell_of(y, box[1], box[3])) << 1);
}
/* The rank owning a code: the first p with code <= splitters[p], else the last. */
RDX_HD int rdx_dist_owner_of_code(const uint64_t *splitters, int size, uint64_t c) {
  int lo = 0, hi = size - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (c <= splitters[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* The smallest radius r of the dtype (f64, else f32) whose computed square fl(r * r) (the shards'
 * own, geom_hd.h) is at least d2, so a within query of r finds every point at computed distance
 * <= d2. */
RDX_HD double rdx_dist_radius_for(double d2, int f64) {
  if (f64) {
    double r = sqrt(d2);
    while (rdx_sp_mul(r, r) < d2 && r < DBL_MAX) r = nextafter(r, INFINITY);
    return r;
  }
  /* an f32 index's squared distances can pass FLT_MAX^2; FLT_MAX is the widest radius there is */
  float r = sqrtf((float)fmin(d2, (double)FLT_MAX));
  if (!(r <= FLT_MAX)) r = FLT_MAX;
  while (rdx_sp_mul((double)r, (double)r) < d2 && r < FLT_MAX) r = nextafterf(r, INFINITY);
  return r;
}

#endif /* RDX_DIST_POINTS_HD_H */
