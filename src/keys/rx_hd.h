/*
 * rx_hd.h: RX (Henneberg and Schuhknecht, "RTIndeX", PVLDB 16(13), 2023; seed 001) for the CPU,
 * CUDA and OptiX: the key mapping, the triangle of a key, the rays of point and range lookups and
 * the any-hit program, written once.
 *
 * Key mapping: the paper's final "3D mode" (Section 3.1): x = bits 21..0, y = bits 43..22,
 * z = bits 63..44 of the key (u32 keys are zero-extended), each converted to float on its own,
 * coordinate = float(value). Every coordinate is an integer below 2^22, so every value +-1/2 a
 * ray or a vertex uses is exact in float32 (24-bit significand).
 *
 * Triangle of a key at (x, y, z), the authors' artifact layout (the paper's illustrative vertices
 * contain (k - 1/4, 0, 0), not the key point; see the digest):
 *     (x - 1/2, y + 1/2, z - 1/2), (x - 1/2, y - 1/2, z - 1/2), (x + 1/2, y, z + 1/2)
 * It lies in the plane x - z = const and holds the key point strictly inside (barycentrics
 * 1/4, 1/2, 1/4), for rays along z and along x alike, and stays within +-1/2 of it on every axis,
 * so triangles of distinct keys never touch.
 *
 * Rays (Section 3.2, Table 2, winners):
 *   point q:      origin (x, y, z - 1/2), direction +z, t in (0, 1): crosses the key's plane at
 *                 t = 1/2 and no other key's triangle (the next key along z is at t = 3/2);
 *   range [l, u]: per populated row r = key >> 22 between l >> 22 and u >> 22, origin
 *                 (from, y(r), z(r)) with from = (r == l >> 22 ? x(l) : 0) - 1/2, direction +x,
 *                 t in (0, to - from), to = (r == u >> 22 ? x(u) : 2^22 - 1) + 1/2: the ray
 *                 crosses exactly the triangles of the keys of row r within the bounds, each at a
 *                 half-integer t, never at either exclusive end.
 * Every hit reports its primitive, the key's input position; the row id is rows[prim] (or prim).
 * Duplicates are triangles at the same place: point lookups on sets with duplicates collect every
 * hit (the revised artifact's keys_are_unique switch) and keep the smallest row.
 */
#ifndef RDX_RX_HD_H
#define RDX_RX_HD_H

#include "keys/keys.h"
#include "rt/rt_hd.h"

#define RDX_RX_XBITS 22
#define RDX_RX_XMASK ((1ull << RDX_RX_XBITS) - 1)

RDX_HD void rdx_rx_coords(uint64_t k, float *c) {
  c[0] = (float)(k & RDX_RX_XMASK);
  c[1] = (float)((k >> 22) & RDX_RX_XMASK);
  c[2] = (float)(k >> 44);
}

RDX_HD void rdx_rx_triangle(uint64_t k, float *v) {
  float c[3];
  rdx_rx_coords(k, c);
  float xm = c[0] - 0.5f, xp = c[0] + 0.5f, ym = c[1] - 0.5f, yp = c[1] + 0.5f, zm = c[2] - 0.5f, zp = c[2] + 0.5f;
  v[0] = xm, v[1] = yp, v[2] = zm;
  v[3] = xm, v[4] = ym, v[5] = zm;
  v[6] = xp, v[7] = c[1], v[8] = zp;
}

RDX_HD rdx_ray rdx_rx_point_ray(uint64_t q) {
  rdx_ray r;
  float c[3];
  rdx_rx_coords(q, c);
  r.o[0] = c[0];
  r.o[1] = c[1];
  r.o[2] = c[2] - 0.5f;
  r.d[0] = 0.0f;
  r.d[1] = 0.0f;
  r.d[2] = 1.0f;
  r.tmin = 0.0f;
  r.tmax = 1.0f;
  return r;
}

/* The ray of row `row` (key >> 22) for the range [lo, hi]. */
RDX_HD rdx_ray rdx_rx_row_ray(uint64_t row, uint64_t lo, uint64_t hi) {
  rdx_ray r;
  float from = (float)((row == lo >> 22) ? (lo & RDX_RX_XMASK) : 0) - 0.5f;
  float to = (float)((row == hi >> 22) ? (hi & RDX_RX_XMASK) : RDX_RX_XMASK) + 0.5f;
  r.o[0] = from;
  r.o[1] = (float)(row & RDX_RX_XMASK);
  r.o[2] = (float)(row >> 22);
  r.d[0] = 1.0f;
  r.d[1] = 0.0f;
  r.d[2] = 0.0f;
  r.tmin = 0.0f;
  r.tmax = to - from;
  return r;
}

/* Populated rows, for ranges: either a sorted list of distinct rows, or every row in
 * [min_row, max_row] (when that span is short, as it always is for u32 keys: 2^10 rows). */
typedef struct rdx_rx_rows {
  const uint64_t *list;   /* sorted distinct rows, or NULL */
  int64_t n_list;
  uint64_t min_row, max_row;
} rdx_rx_rows;

/* Hit program modes. */
enum { RDX_RX_FIRST = 0, RDX_RX_MIN = 1, RDX_RX_COUNT = 2, RDX_RX_FILL = 3 };

typedef struct rdx_rx_state {
  const void *rows;  /* prim -> row id, u32 or u64; NULL when implied */
  int row_width;     /* 32 or 64 */
  int mode;
  uint64_t best;     /* FIRST, MIN: the row found (RDX_MISS for none) */
  uint64_t count;    /* COUNT, FILL: hits so far */
  uint64_t *out;     /* FILL: where rows go */
} rdx_rx_state;

RDX_HD uint64_t rdx_rx_row_of(const void *rows, int width, uint32_t prim) {
  if (rows == NULL) return prim;
  return width == 32 ? ((const uint32_t *)rows)[prim] : ((const uint64_t *)rows)[prim];
}

/* The any-hit program (the paper's: record and terminate for unique keys, record and ignore to
 * visit every hit otherwise). */
RDX_HD int rdx_rx_anyhit(rdx_rx_state *s, uint32_t prim, float t, int front, float *tmax) {
  (void)t, (void)front, (void)tmax;
  if (s->mode == RDX_RX_FIRST) {
    s->best = rdx_rx_row_of(s->rows, s->row_width, prim);
    return RDX_RT_STOP;
  }
  if (s->mode == RDX_RX_MIN) {
    uint64_t r = rdx_rx_row_of(s->rows, s->row_width, prim);
    if (r < s->best) s->best = r;
  } else if (s->mode == RDX_RX_FILL) {
    s->out[s->count] = rdx_rx_row_of(s->rows, s->row_width, prim);
  }
  s->count++;
  return RDX_RT_CONTINUE;
}

RDX_RT_DEFINE_TRACE(rdx_rx_trace, rdx_rx_state, rdx_rx_anyhit)

/* First populated row >= r as an index into the list, or the row itself without a list; returns
 * UINT64_MAX when none is left. */
RDX_HD uint64_t rdx_rx_first_row(const rdx_rx_rows *R, uint64_t r, int64_t *pos) {
  if (R->list) {
    int64_t a = 0, b = R->n_list;
    while (a < b) {
      int64_t m = a + (b - a) / 2;
      if (R->list[m] < r) a = m + 1;
      else b = m;
    }
    *pos = a;
    return a < R->n_list ? R->list[a] : UINT64_MAX;
  }
  if (r < R->min_row) r = R->min_row;
  return r <= R->max_row ? r : UINT64_MAX;
}
RDX_HD uint64_t rdx_rx_next_row(const rdx_rx_rows *R, uint64_t r, int64_t *pos) {
  if (R->list) {
    ++*pos;
    return *pos < R->n_list ? R->list[*pos] : UINT64_MAX;
  }
  return r < R->max_row ? r + 1 : UINT64_MAX;
}

/* Soft lookups: one query through the tree. */
RDX_HD void rdx_rx_soft_point(const rdx_bvh_view *v, uint64_t q, rdx_rx_state *s) {
  rdx_ray r = rdx_rx_point_ray(q);
  rdx_rx_trace(v, &r, s);
}
RDX_HD void rdx_rx_soft_range(const rdx_bvh_view *v, const rdx_rx_rows *R, uint64_t lo, uint64_t hi, rdx_rx_state *s) {
  if (lo > hi) return;
  int64_t pos = 0;
  uint64_t last = hi >> 22;
  for (uint64_t row = rdx_rx_first_row(R, lo >> 22, &pos); row <= last && row != UINT64_MAX;
       row = rdx_rx_next_row(R, row, &pos)) {
    rdx_ray r = rdx_rx_row_ray(row, lo, hi);
    rdx_rx_trace(v, &r, s);
  }
}

#endif /* RDX_RX_HD_H */
