/*
 * bench.c: what `raydex bench join` reads of a layer and a join beyond raydex.h (the internal
 * calls of src/bench_api.h): the vertices to locate, the index's size and build times; and a
 * layer's host CSR for bench/geos_join.c (the LSI run's counters come from rdx_jn_lsi_run,
 * join_lsi.c). Nothing here changes a layer.
 */
#include <string.h>

#include "join/join.h"

const double *rdx_polygons_host_xy(const rdx_polygons *p, int64_t *n) {
  *n = p->host.n_vertices;
  return p->host.xy;
}

void rdx_polygons_host_csr_of(const rdx_polygons *p, rdx_polygons_host_csr *out) {
  out->n_features = p->host.n_features;
  out->n_rings = p->host.n_rings;
  out->n_vertices = p->host.n_vertices;
  out->feat_off = p->host.feat_off;
  out->ring_off = p->host.ring_off;
  out->xy = p->host.xy;
}

void rdx_polygons_index_stats(const rdx_polygons *p, rdx_join_index_stats *out) {
  memset(out, 0, sizeof *out);
  if (!p->index.built) return;
  out->n_groups = p->index.n_groups;
  out->bytes = rdx_jn_index_bytes(&p->index);
  out->group_ms = p->index.group_ms;
  out->build_ms = p->index.build_ms;
}
