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

/* ---- each rank's codes as blocks of the grid: a range of codes that ends inside a block reaches
 * into it with a sliver, and the box of the rank's points then spans the whole block (on uniform
 * points, 4 ranks' boxes overlap by half the space), so routing asks both the box and the blocks.
 * Blocks are no finer than 2^(31 - RDX_DIST_COVER_LEVELS) cells a side (the range rounded outward
 * to them), so a rank has at most 6 per level and 3 more: RDX_DIST_COVER_MAX. ---- */
#define RDX_DIST_COVER_LEVELS 8
#define RDX_DIST_COVER_MAX 64

/* Does a query (as rdx_dist_touches) meet a rank of box bbox and n_cover blocks (4 doubles each)?
 * Its points lie in the box and in the blocks, so the query must meet both. */
RDX_HD int rdx_dist_rank_touches(const double *bbox, const double *cover, int64_t n_cover, int32_t type, const double *q) {
  if (!rdx_dist_touches(bbox, type, q)) return 0;
  for (int64_t i = 0; i < n_cover; i++)
    if (rdx_dist_touches(cover + 4 * i, type, q)) return 1;
  return 0;
}

/* No point of such a rank is nearer (x, y), as computed, than this squared distance. */
RDX_HD double rdx_dist_rank_min_d2(const double *bbox, const double *cover, int64_t n_cover, double x, double y) {
  double best = INFINITY;
  for (int64_t i = 0; i < n_cover; i++) {
    double b = rdx_sp_box_min_d2(cover + 4 * i, x, y);
    best = b < best ? b : best;
  }
  double b = rdx_sp_box_min_d2(bbox, x, y);
  return b > best ? b : best;
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
