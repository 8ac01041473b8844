/*
 * index_hd.h: the join index's per-ring and per-group logic for the CPU (index.c) and CUDA
 * (index.cu) builds, written once so both make the same groups and the same float32 boxes, bit
 * for bit: RayJoin's adaptive grouping (digest section 6) and its conservative representation
 * (digest section 5), plus the one rule for the rays' float32 coordinates that makes the index
 * provably miss no candidate.
 *
 * Groups (RayJoin's AG, sequential form). The edges are cut into blocks of RDX_JN_GROUP_BLOCK
 * consecutive edges (RayJoin's thread-block partitions: groups never cross a block), and each
 * block is walked in storage order; the current group takes the next edge while
 *      area(G u E) / max(area(G), area(E)) < s      and      |G| < RDX_JN_MAX_GROUP_EDGES,
 * where G is the group's f64 box so far and E the edge's, and the edge continues G's ring;
 * otherwise the edge starts a new group. Blocks, not rings, are the unit of work, so a ring of
 * 10^5 edges takes as long as any other 10^5 edges, on one thread per block.
 * The ratio is computed in double from the f64 boxes, with no fused operation, so both backends
 * take the same branch. Two zero-area boxes never merge (max area 0), and s = 1 never merges
 * (the union's area is never below either area, in floating point too: the differences and
 * products are monotone). Groups never cross rings, and are numbered in edge order, so group g
 * covers the edges [group_first[g], group_first[g + 1]) of one ring. The paper merges pairwise
 * within its blocks on the GPU; a greedy walk per block gives the same kind of contiguous ranges
 * and is identical on both backends by construction.
 *
 * Boxes (RayJoin's CR, with the absolute pad). For a group whose f64 box is [min, max]:
 *      lo = clamp(f32_down(min - abs_pad, pad_ulps)),   hi = clamp(f32_up(max + abs_pad, pad_ulps))
 * on x and y, and z in [-1, 1]. f32_down(v, k) is at most v (exact_hd.h), and min - abs_pad
 * rounded in double is at most min, so lo <= min exactly, whatever the rounding; likewise
 * hi >= max. clamp() limits bounds to [-RDX_JN_F32_CLAMP, RDX_JN_F32_CLAMP] so that no box is
 * infinite (the BVH treats a non-finite box as inactive) and box sums stay finite; rays use the
 * same clamp (rdx_jn_ray_coord). The absolute pad is rdx_jn_abs_pad(M), M the largest |coordinate|
 * of the layer (and, for a caller that asks for it, of the other input): a few float32 ulps at M.
 *
 * Why no candidate is missed. Rays are cast from float32 coordinates c(x) = clamp(fl32(x)), with
 * fl32 rounding to nearest. Rounding to nearest, clamping and the float32 subtraction are all
 * monotone (x <= y implies f(x) <= f(y)), and f32_down(v) <= fl32(v) <= f32_up(v).
 *  - PIP fires from p straight up: origin (c(p.x), c(p.y)), direction +y (rt_hd.h's axis path).
 *    An edge that matters (p on it, or p.x in its closed x-range and the edge above p there) has
 *    min.x <= p.x <= max.x and min.y <= (its y at p.x) and p.y <= max.y. Monotonicity gives
 *    lo.x <= c(min.x) <= c(p.x) <= c(max.x) <= hi.x, and hi.y >= c(max.y) >= c(p.y), so the axis
 *    path's tests (lo.x <= o.x <= hi.x, fl32(hi.y - o.y) >= 0) pass for the box and for every
 *    BVH ancestor (ancestors' boxes are exact unions). No pad is needed for this argument: PIP
 *    relies on the outward rounding alone, and the pads are extra margin.
 *  - A closest-hit PIP ray shrinks tmax to fl32(Y - o.y), Y a float32 at or above the best edge's
 *    y at p.x (pip_hd.h): any box holding an edge as low or lower at p.x has lo.y <= Y, so its
 *    entry fl32(lo.y - o.y) <= tmax and it is still visited.
 *  - Segment rays (LSI) leave a float32 origin along a float32 direction, and the points they
 *    reach deviate from the exact segment by rounding errors of a few float32 ulps of the
 *    segment's coordinates, at most a few ulps at M; abs_pad (RDX_JN_ABS_PAD_ULPS ulps at M)
 *    exists for them, and lsi_hd.h states how its rays stay within it.
 *
 * Rings (for PIP's general rule, pip_hd.h). Ring r's box is the union of its groups' boxes (every
 * ring starts a group and groups never cross rings, so its groups are a run of consecutive ones);
 * the union of float32 bounds is exact and the bounds are monotone in the f64 ones, so it equals
 * the box the rule above gives the ring's f64 box: conservative like every group box, and the same
 * bit for bit on both backends whatever order the union is taken in. The ring scene, the index's
 * second, holds the boxes of the rings no earlier ring of their feature dominates: ring i is left
 * out when its box lies within the box of big(i), the ring of largest box area among the rings of
 * i's feature before i (ties: the first). PIP reads only the top and bottom of the ring boxes
 * holding a point, and a box within another holding box changes neither (containment is
 * transitive, so a left-out ring always lies within a kept one); maps store a polygon's holes
 * after its shell, and countries-land-10m keeps 40,372 of its 920,808 rings. big(i) is a prefix
 * maximum, so both backends find it with a scan (segmented by feature on the GPU) and keep the
 * same rings in the same order. Per group, its ring's y-span: floor = f32_down(lowest y of the ring, 0)
 * (the largest float at or below it) and ceiling = f32_up(highest y, 0): floor > p.y proves that p
 * lies below the whole ring, ceiling < p.y that it lies above. As the ring's box has
 * lo.y = clamp(f32_down(miny - abs_pad, pad_ulps)) with pad_ulps >= 1, lo.y < floor unless
 * clamped, so p.y >= floor puts c(p.y) strictly above the box's bottom (and p.y <= ceiling below
 * its top), as the pads put c(p.x) strictly inside its x-range when p.x is inside the ring's.
 *
 * Naive boxes (benchmarks only: rdx_join_force_naive, RayJoin's plain float32 version, digest
 * section 5): pad_ulps = RDX_JN_PAD_NAIVE and abs_pad = 0 round every bound, spans included, to
 * the nearest float32 with no pad. Nothing above is claimed for them: they exist to count the
 * answers the conservative representation saves.
 */
#ifndef RDX_JOIN_INDEX_HD_H
#define RDX_JOIN_INDEX_HD_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "join/exact_hd.h"
#include "join/join.h"
#include "rt/rt_hd.h"

/* Bounds of boxes and ray coordinates, in float32: 2^125, so that a box's centre and extent
 * (sums of two bounds) stay finite. Coordinates beyond it (allowed up to 2^256) still answer
 * exactly, only with boxes that cover more. */
#define RDX_JN_F32_CLAMP 4.2535295865117308e37 /* 2^125 */
/* The absolute pad, in float32 ulps of the largest |coordinate| M. */
#define RDX_JN_ABS_PAD_ULPS 4
/* pad_ulps of an index of naive boxes (the file comment); public pad_ulps are 1..64. */
#define RDX_JN_PAD_NAIVE 0

/* The absolute pad for inputs whose coordinates are at most m in magnitude: RDX_JN_ABS_PAD_ULPS
 * float32 ulps at m (a power of two; 0 for m = 0). */
RDX_HD double rdx_jn_abs_pad(double m) { return RDX_JN_ABS_PAD_ULPS * (double)rdx_jn_ulp_f32(m); }

RDX_HD float rdx_jn_clamp_f32(float v) {
  const float c = (float)RDX_JN_F32_CLAMP;
  return v < -c ? -c : v > c ? c : v;
}
/* A ray's float32 coordinate for the f64 coordinate x: clamp(fl32(x)) (see the file comment). */
RDX_HD float rdx_jn_ray_coord(double x) { return rdx_jn_clamp_f32((float)x); }

/* Edge e's f64 box: lo[0..1], hi[0..1]. */
RDX_HD void rdx_jn_edge_box(const double *xy, const uint32_t *edge_end, uint32_t e, double *lo, double *hi) {
  uint32_t w = edge_end[e];
  for (int a = 0; a < 2; a++) {
    double u = xy[2 * (uint64_t)e + a], v = xy[2 * (uint64_t)w + a];
    lo[a] = u < v ? u : v;
    hi[a] = u < v ? v : u;
  }
}

RDX_HD double rdx_jn_box_area(const double *lo, const double *hi) {
  return RDX_DMUL(RDX_DSUB(hi[0], lo[0]), RDX_DSUB(hi[1], lo[1]));
}

/* Whether a group with box (glo, ghi) takes an edge with box (elo, ehi) under threshold s. */
RDX_HD int rdx_jn_group_takes(const double *glo, const double *ghi, const double *elo, const double *ehi,
                              double s) {
  double ulo[2], uhi[2];
  for (int a = 0; a < 2; a++) {
    ulo[a] = glo[a] < elo[a] ? glo[a] : elo[a];
    uhi[a] = ghi[a] > ehi[a] ? ghi[a] : ehi[a];
  }
  double ga = rdx_jn_box_area(glo, ghi), ea = rdx_jn_box_area(elo, ehi);
  double m = ga > ea ? ga : ea;
  if (!(m > 0.0)) return 0; /* both boxes flat: never merge (RayJoin's NaN ratio) */
  return rdx_jn_box_area(ulo, uhi) / m < s;
}

/* Edges per grouping block: a multiple of RDX_JN_MAX_GROUP_EDGES, so a block cut ends no group
 * early that the size cap would not end. */
#define RDX_JN_GROUP_BLOCK 64

/* The greedy grouping of block k (edges [k B, min((k + 1) B, n_edges))): returns its number of
 * groups and, when starts is not NULL, writes the first edge of each group to starts[0 ..]. A
 * ring's last edge is the one whose end is not the next vertex (rings have at least 3). */
RDX_HD uint32_t rdx_jn_group_block(const double *xy, const uint32_t *edge_end, int64_t n_edges, int64_t k, double s,
                                   uint32_t *starts) {
  const int64_t e0 = k * RDX_JN_GROUP_BLOCK;
  const int64_t e1 = e0 + RDX_JN_GROUP_BLOCK < n_edges ? e0 + RDX_JN_GROUP_BLOCK : n_edges;
  uint32_t n = 0, size = 0;
  double glo[2] = {0.0, 0.0}, ghi[2] = {0.0, 0.0};
  for (int64_t e = e0; e < e1; e++) {
    double elo[2], ehi[2];
    rdx_jn_edge_box(xy, edge_end, (uint32_t)e, elo, ehi);
    const int same_ring = e > e0 && edge_end[e - 1] == (uint32_t)e;
    if (size > 0 && same_ring && size < RDX_JN_MAX_GROUP_EDGES && rdx_jn_group_takes(glo, ghi, elo, ehi, s)) {
      for (int a = 0; a < 2; a++) {
        glo[a] = glo[a] < elo[a] ? glo[a] : elo[a];
        ghi[a] = ghi[a] > ehi[a] ? ghi[a] : ehi[a];
      }
      size++;
      continue;
    }
    if (starts) starts[n] = (uint32_t)e;
    n++;
    size = 1;
    for (int a = 0; a < 2; a++) glo[a] = elo[a], ghi[a] = ehi[a];
  }
  return n;
}

/* The float32 y-span of a y-range [miny, maxy] (the file comment): the largest float at or below
 * miny and the smallest at or above maxy, or for naive boxes the nearest floats. */
RDX_HD void rdx_jn_span_y(double miny, double maxy, int pad_ulps, float *span) {
  span[0] = pad_ulps == RDX_JN_PAD_NAIVE ? (float)miny : rdx_jn_f32_down(miny, 0);
  span[1] = pad_ulps == RDX_JN_PAD_NAIVE ? (float)maxy : rdx_jn_f32_up(maxy, 0);
}

/* The conservative float32 box (lo x, y, z, hi x, y, z) of the edges [first, end), and the y-span
 * of their y-range into span[0..1] (naive box and span when pad_ulps is RDX_JN_PAD_NAIVE). */
RDX_HD void rdx_jn_group_box(const double *xy, const uint32_t *edge_end, uint32_t first, uint32_t end, int pad_ulps,
                             double abs_pad, float *box, float *span) {
  double lo[2], hi[2];
  rdx_jn_edge_box(xy, edge_end, first, lo, hi);
  for (uint32_t e = first + 1; e < end; e++) {
    double elo[2], ehi[2];
    rdx_jn_edge_box(xy, edge_end, e, elo, ehi);
    for (int a = 0; a < 2; a++) {
      lo[a] = lo[a] < elo[a] ? lo[a] : elo[a];
      hi[a] = hi[a] > ehi[a] ? hi[a] : ehi[a];
    }
  }
  for (int a = 0; a < 2; a++) {
    if (pad_ulps == RDX_JN_PAD_NAIVE) {
      box[a] = rdx_jn_clamp_f32((float)lo[a]);
      box[3 + a] = rdx_jn_clamp_f32((float)hi[a]);
      continue;
    }
    box[a] = rdx_jn_clamp_f32(rdx_jn_f32_down(RDX_DSUB(lo[a], abs_pad), pad_ulps));
    box[3 + a] = rdx_jn_clamp_f32(rdx_jn_f32_up(RDX_DADD(hi[a], abs_pad), pad_ulps));
  }
  box[2] = -1.0f;
  box[5] = 1.0f;
  rdx_jn_span_y(lo[1], hi[1], pad_ulps, span);
}

/* A ring's box and y-span, as the union over its groups (the file comment). */
typedef struct rdx_jn_ring_acc {
  float lo[2], hi[2];
  float span[2];
} rdx_jn_ring_acc;

RDX_HD rdx_jn_ring_acc rdx_jn_ring_of_group(const float *box, const float *span) {
  rdx_jn_ring_acc a;
  a.lo[0] = box[0], a.lo[1] = box[1], a.hi[0] = box[3], a.hi[1] = box[4];
  a.span[0] = span[0], a.span[1] = span[1];
  return a;
}
RDX_HD rdx_jn_ring_acc rdx_jn_ring_union(rdx_jn_ring_acc a, rdx_jn_ring_acc b) {
  for (int k = 0; k < 2; k++) {
    a.lo[k] = b.lo[k] < a.lo[k] ? b.lo[k] : a.lo[k];
    a.hi[k] = b.hi[k] > a.hi[k] ? b.hi[k] : a.hi[k];
  }
  a.span[0] = b.span[0] < a.span[0] ? b.span[0] : a.span[0];
  a.span[1] = b.span[1] > a.span[1] ? b.span[1] : a.span[1];
  return a;
}
/* The ring's primitive in the ring scene (lo x, y, z, hi x, y, z). */
RDX_HD void rdx_jn_ring_box(const rdx_jn_ring_acc *a, float *box) {
  box[0] = a->lo[0], box[1] = a->lo[1], box[2] = -1.0f;
  box[3] = a->hi[0], box[4] = a->hi[1], box[5] = 1.0f;
}

/* The dominance rule of the ring scene (the file comment): a ring's box area, in double from the
 * float32 bounds, paired with the ring; the larger of two (ties: the earlier ring), an associative
 * and commutative maximum for scans; and whether box `in` lies within box `out`. */
typedef struct rdx_jn_ring_big {
  double area;
  uint32_t ring;
} rdx_jn_ring_big;
RDX_HD rdx_jn_ring_big rdx_jn_ring_big_of(const float *box, uint32_t ring) {
  rdx_jn_ring_big b;
  b.area = RDX_DMUL(RDX_DSUB((double)box[3], (double)box[0]), RDX_DSUB((double)box[4], (double)box[1]));
  b.ring = ring;
  return b;
}
RDX_HD rdx_jn_ring_big rdx_jn_ring_bigger(rdx_jn_ring_big a, rdx_jn_ring_big b) {
  return b.area > a.area || (b.area == a.area && b.ring < a.ring) ? b : a;
}
RDX_HD int rdx_jn_box_within(const float *in, const float *out) {
  return in[0] >= out[0] && in[1] >= out[1] && in[3] <= out[3] && in[4] <= out[4];
}

/* The run of CSR offsets holding v: the largest r with off[r] <= v, for nondecreasing off of n + 1
 * entries and v < off[n] (the ring of a vertex through ring_off, the feature of a ring through
 * feat_off, whose empty features it passes over). */
RDX_HD uint32_t rdx_jn_run_of(const uint64_t *off, int64_t n, uint64_t v) {
  int64_t lo = 0, hi = n - 1; /* the answer is in [lo, hi] */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (off[mid] <= v) lo = mid;
    else hi = mid - 1;
  }
  return (uint32_t)lo;
}

#endif /* RDX_JOIN_INDEX_HD_H */
