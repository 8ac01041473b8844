/*
 * pip_oracle.c: point in polygon by brute force (pip_oracle.h).
 */
#include "pip_oracle.h"

#include "join/exact_hd.h"

int pip_oracle_feature(const pip_oracle_layer *L, int64_t f, double px, double py, int *on_boundary) {
  const double p[2] = {px, py};
  int odd = 0, on = 0;
  for (uint64_t r = L->feature_offsets[f]; r < L->feature_offsets[f + 1]; r++) {
    uint64_t v0 = L->ring_offsets[r], v1 = L->ring_offsets[r + 1];
    for (uint64_t v = v0; v < v1; v++) {
      const double *a = L->coords + 2 * v, *b = L->coords + 2 * (v + 1 < v1 ? v + 1 : v0);
      if (a[0] == b[0] && a[1] == b[1]) { /* a zero-length edge: a point of the boundary */
        if (px == a[0] && py == a[1]) on = 1;
        continue;
      }
      if (rdx_jn_on_segment(p, a, b)) {
        on = 1;
        continue;
      }
      if ((a[0] <= px) != (b[0] <= px) && rdx_jn_cmp_y_at_x_pt(px, py, a, b) > 0) odd ^= 1;
    }
  }
  if (on_boundary) *on_boundary = on;
  return on || odd;
}

int64_t pip_oracle_point(const pip_oracle_layer *L, double px, double py, int64_t *out, int *on_boundary) {
  int64_t n = 0;
  int any = 0;
  for (int64_t f = 0; f < L->n_features; f++) {
    int on = 0;
    if (pip_oracle_feature(L, f, px, py, &on)) out[n++] = f;
    any |= on;
  }
  if (on_boundary) *on_boundary = any;
  return n;
}
