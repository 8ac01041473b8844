/*
 * bench.c: what `raydex bench join` reads of a layer and a join beyond raydex.h (the internal
 * calls of src/bench_api.h): the vertices to locate, the index's size and build times, and the
 * LSI run's counters; and a layer's host CSR for bench/geos_join.c. Nothing here changes a layer.
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

rdx_status rdx_join_lsi_bench_run(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                                  const rdx_join_options *opts, rdx_join_lsi_result **out, rdx_join_lsi_bench *b) {
  rdx_jn_lsi_stats st;
  memset(&st, 0, sizeof st);
  rdx_status rc = rdx_jn_lsi_run(ctx, r, s, opts, 0, out, &st);
  memset(b, 0, sizeof *b);
  b->candidates = st.candidates;
  b->edge_pairs = st.edge_pairs;
  b->count_ms = st.count_ms, b->fill_ms = st.fill_ms, b->pairs_ms = st.pairs_ms, b->total_ms = st.total_ms;
  return rc;
}
