/*
 * lsi_oracle.h: the brute-force reference of segment intersection (tests/test_join_lsi.c): every
 * edge of R against every edge of S with the exact predicates of src/join/exact_hd.h. Obviously
 * right and slow (R edges x S edges).
 *
 * It reads layers as given to rdx_polygons_create (CSR feature -> ring -> vertex, f64), not as
 * raydex stores them: a ring's edges run from each vertex to the next and from the last back to
 * the first, and zero-length edges (a closing repeat, consecutive duplicates) are left out, since
 * their one point is a vertex of the ring's other edges. Two features are a pair when an edge of
 * one shares a point with an edge of the other (closed segments: crossing, touching, collinear
 * overlap). An intersecting edge pair gives rdx_jn_seg_point's point, or for a collinear overlap
 * the two ends of the common piece (rdx_jn_overlap_ends), -0 written as +0.
 */
#ifndef RDX_LSI_ORACLE_H
#define RDX_LSI_ORACLE_H

#include <stdint.h>

typedef struct lsi_oracle_layer {
  const uint64_t *feature_offsets; /* n_features + 1 */
  const uint64_t *ring_offsets;    /* n_rings + 1 */
  const double *coords;            /* x, y per vertex */
  int64_t n_features;
} lsi_oracle_layer;

/* The sorted unique (r, s) feature pairs whose boundaries share a point: 2 per pair, malloc'd
 * into *pairs (free it); returns how many pairs, or -1 when memory runs out. */
int64_t lsi_oracle_pairs(const lsi_oracle_layer *R, const lsi_oracle_layer *S, int64_t **pairs);
/* The intersection points with their (r, s) feature pairs, sorted by (r, s, x, y) and unique:
 * 2 per point in *point_pairs and *points (malloc'd, free them); returns how many, or -1. */
int64_t lsi_oracle_points(const lsi_oracle_layer *R, const lsi_oracle_layer *S, int64_t **point_pairs,
                          double **points);

#endif
