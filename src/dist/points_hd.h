/*
 * points_hd.h: the routing test of a distributed point index (points.c), shared by the host
 * rounds and the device path (points_gpu.cu) so both send a query to the same ranks.
 */
#ifndef RDX_DIST_POINTS_HD_H
#define RDX_DIST_POINTS_HD_H

#include "spatial/geom_hd.h"

/* Does a query (q: its values as doubles, window x0 y0 x1 y1, within x y r, match x y) meet box b
 * (xmin, ymin, xmax, ymax) of a rank holding points? The shards' own tests, on the box: a point
 * inside the box is never nearer, as computed, than the box's computed nearest edge. */
RDX_HD int rdx_dist_touches(const double *b, int32_t type, const double *q) {
  if (type == RDX_POINTS_WINDOW) return q[0] <= b[2] && b[0] <= q[2] && q[1] <= b[3] && b[1] <= q[3];
  if (type == RDX_POINTS_MATCH) return b[0] <= q[0] && q[0] <= b[2] && b[1] <= q[1] && q[1] <= b[3];
  return rdx_sp_box_min_d2(b, q[0], q[1]) <= rdx_sp_mul(q[2], q[2]);
}

#endif /* RDX_DIST_POINTS_HD_H */
