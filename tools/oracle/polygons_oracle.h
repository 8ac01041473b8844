/*
 * polygons_oracle.h: the brute-force reference of the polygon joins (rdx_join_polygons: OVERLAY
 * with its areas, INTERSECTS, CONTAINS, WITHIN, BOXES), for `raydex demo` and
 * tests/test_join_oracle.c. It applies src/join/overlay_hd.h's rule directly, without raydex's
 * index, BVH, grouping, LSI or PIP engines:
 *  - every pair of features whose closed bounding boxes meet is a candidate (features whose boxes
 *    do not meet share no point); for a candidate (A of R, B of S):
 *  - every edge of A against every edge of B (edge boxes meeting) through rdx_jn_ov_classify: a
 *    proper crossing flips both sides of both edges (ODD_L | ODD_R); a vertex strictly inside the
 *    other edge is a flip of that edge's side, added per (edge, vertex) group (XOR), an odd group
 *    setting ODD bits; any common point of two closed edges (rdx_jn_seg_relation) makes the
 *    boundaries meet (INTERSECTS);
 *  - each edge's start, moved off the edge to its left (and right), in the other feature: a plain
 *    loop over that feature's edges with pip_hd.h's perturbed predicates (rdx_jn_pip_side_q,
 *    rdx_jn_pip_edge_q: the upward ray's crossing parity), START_L / START_R; skipped when the
 *    start lies outside the feature's closed box (then so does the moved point);
 *  - the feature pair by overlay_hd.h's "joins" paragraph from the bits per (edge, feature); the
 *    areas by its "areas" paragraph: each record's share (rdx_jn_ov_area_share over its events in
 *    order along the edge: proper crossings at their rounded points, vertex events) summed with
 *    compensation in the order (direction, edge), about a vertex of A.
 * So the answers are the library's by construction of the rule, not of its engines; areas agree
 * to the last bits when the library sums in the order overlay_hd.h states.
 *
 * It reads layers as raydex stores them (rdx_polygons_host_csr_of in src/bench_api.h: rings
 * oriented with their feature's interior on the left, no closing repeat, no two consecutive equal
 * vertices), since the rule reads sides from the edges' directions. Cost: candidate pairs times
 * the product of their edge counts, split over threads (us-counties x us-states, 64642 x 15278
 * edges: 0.2 to 0.6 s per predicate on the 2-core machine, 20 to 70 ms on an H200 host's 16
 * cores, November 2025).
 */
#ifndef RDX_POLYGONS_ORACLE_H
#define RDX_POLYGONS_ORACLE_H

#include <stdint.h>

typedef struct polygons_oracle_layer {
  const uint64_t *feature_offsets; /* n_features + 1: feature f's rings */
  const uint64_t *ring_offsets;    /* n_rings + 1: ring r's vertices */
  const double *coords;            /* x, y per vertex, as stored (see above) */
  int64_t n_features;
} polygons_oracle_layer;

/* The sorted unique (r, s) pairs of R x S satisfying predicate (rdx_join_predicate's values:
 * 1 overlay, 2 intersects, 3 contains, 4 within, 5 boxes): 2 per pair, malloc'd into *pairs (free
 * it); with areas not NULL (overlay only), the area of each pair's intersection malloc'd into
 * *areas in the same order. threads: how many to use, 0 for the processors online. Returns how
 * many pairs, or -1 when memory runs out or the predicate is unknown (then nothing is held). */
int64_t polygons_oracle_join(const polygons_oracle_layer *R, const polygons_oracle_layer *S, int predicate,
                             int threads, int64_t **pairs, double **areas);

#endif
