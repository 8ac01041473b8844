/*
 * pip_oracle.h: the brute-force reference of point in polygon (tests/test_join_pip.c): every
 * point against every edge of every feature, with the exact predicates of src/join/exact_hd.h.
 * Obviously right and slow (points x edges).
 *
 * It reads a layer as given to rdx_polygons_create (CSR feature -> ring -> vertex, f64), not as
 * raydex stores it: rings may repeat their first vertex or hold consecutive duplicates (a
 * zero-length edge only counts as a point of the boundary), and orientation is never used. A
 * feature contains p when p lies on one of its edges (boundaries are closed) or an upward ray from
 * p crosses its edges an odd number of times, an edge (a, b) crossing when (a.x <= p.x) !=
 * (b.x <= p.x) and it passes strictly above p at p.x (the even-odd rule over all of the
 * feature's rings, raydex.h's definition of a feature).
 */
#ifndef RDX_PIP_ORACLE_H
#define RDX_PIP_ORACLE_H

#include <stdint.h>

typedef struct pip_oracle_layer {
  const uint64_t *feature_offsets; /* n_features + 1 */
  const uint64_t *ring_offsets;    /* n_rings + 1 */
  const double *coords;            /* x, y per vertex */
  int64_t n_features;
} pip_oracle_layer;

/* 1 when feature f contains (px, py); *on_boundary (may be NULL) gets 1 when the point lies on
 * one of f's edges. */
int pip_oracle_feature(const pip_oracle_layer *L, int64_t f, double px, double py, int *on_boundary);
/* The features containing (px, py), ascending, into out (room for n_features); returns how many.
 * *on_boundary (may be NULL) gets 1 when the point lies on the boundary of any feature. */
int64_t pip_oracle_point(const pip_oracle_layer *L, double px, double py, int64_t *out, int *on_boundary);

#endif
