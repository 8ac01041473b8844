/*
 * overlay_hd.h: the polygon joins' exact rule (RayJoin's overlay, digest section 8, made exact on
 * degenerate inputs) and its one geometric step on an edge pair, for the CPU (overlay.c) and, as
 * they land, the GPU backends.
 *
 * Notation. R and S are the two layers; A is a feature of R, B one of S; e is an edge of A running
 * from a to b, f an edge of B from c to d. Rings keep their feature's interior on the left of every
 * edge (join.h). The rule holds for features whose rings do not cross one another (rings may touch
 * at points): then, near any point of an edge that is on no other edge of its feature, the
 * feature's interior lies on the edge's left and its exterior on its right.
 *
 * Pieces and sides. The points where the other layer's boundary meets e split e into pieces; along
 * the open piece, a point moved an infinitesimal step off e to its left (or right) lies in a fixed
 * set of the other layer's features. For a feature B, "e's left side is in B on a piece" is
 *   start    on e's first piece: q = a + delta (b - a) + eps n, n the left normal, 0 < eps << delta
 *            infinitesimal (the side PIP of pip_hd.h, never on any edge, so exact and unambiguous);
 *            for the right side, -eps n;
 *   toggles  at each point of e's open interior where B's boundary meets e, the status of the left
 *            side flips once for each edge of B that leaves that point strictly to the left of e
 *            (the left side's path, a line parallel to e at distance eps, crosses exactly those
 *            edges there), and likewise for the right. At a proper crossing (a common point inside
 *            both edges, not collinear) both sides flip once; at a vertex v of B strictly inside e
 *            the flips of every edge of B at v add up (one group per (e, B, v)); edges of B
 *            collinear with e flip nothing. The point of e's ends is its start's (above) or the
 *            next edge's.
 * So, per (e, B), with START_L / START_R the start's statuses and ODD_L / ODD_R "some group of B's
 * flips along e is odd" (groups commute: the order along e never matters):
 *   some piece of e has its left side in B  <=>  START_L or ODD_L     ("exists_L")
 *   every piece of e has its left side in B <=>  START_L and not ODD_L  ("all_L")
 * and the same for the right side.
 *
 * The joins (A of R, B of S; int = interior):
 *   OVERLAY     int A and int B meet  <=>  some e of A has exists_L(e, B), or some f of B has
 *               exists_L(f, A). (<=: the left side of e is in int A, so the point lies in both
 *               interiors. =>: if no boundary piece of either has its left side in the other,
 *               take a component C of int A n int B; a point of dA inside int B would have both
 *               sides in B; so dA and dB miss int B and int A, C is a component of int A and of
 *               int B whose boundary lies on both, and the pieces bounding C have C, in both
 *               features, on their left.)
 *   CONTAINS    B within A  <=>  every f of B has all_L(f, A), and no e of A has exists_R(e, B).
 *               (=>: int B lies in int A, and the right side of dA is outside A. <=: a point of
 *               int B outside A lies in a component C of int B \ A; if dA meets C, a piece of dA
 *               in C has its right side in B; else C is a component of int B and its boundary
 *               pieces, of dB, have their left side outside A.) OGC's "and the interiors meet"
 *               follows for features with area.
 *   WITHIN      the same with the layers' roles swapped.
 *   INTERSECTS  the boundaries meet (LSI) or the interiors do (OVERLAY): a feature meeting the
 *               other's interior but not its boundary lies inside it.
 *
 * Fewer side queries. The starts need not all be traced (overlay.c and overlay.cu skip these):
 *   both sides  where e's start a lies on no edge of the other layer, a lies in an open face of
 *               that layer's boundary, and so do the points infinitesimally beside it: START_R
 *               equals START_L for every B. Only the starts that lie on an edge of the other layer
 *               (seen from the edge pairs: such an e meets that edge at a) trace the right side.
 *   OVERLAY     (alone, no areas) reads only "some edge of A has exists_L(e, B)". A ring of A
 *               that meets no edge of the other layer is a closed curve at a positive distance
 *               from that boundary, so it and a band around it lie in one open face: every one
 *               of its edges has the same START_L and no toggles. Its first edge answers for it;
 *               the rings that meet the other boundary (seen from the edge pairs) trace every
 *               start. The pairs found are the same.
 *
 * This file holds the step on one intersecting edge pair (e of R, f of S) that yields the toggles:
 * rdx_jn_ov_classify. The starts come from the side PIP, the pairs from LSI, and overlay.c
 * reduces them into the feature pairs.
 */
#ifndef RDX_JOIN_OVERLAY_HD_H
#define RDX_JOIN_OVERLAY_HD_H

#include "join/exact_hd.h"

/* Bits of an (edge, other feature) record. */
enum {
  RDX_JN_OV_START_L = 1,     /* the edge's start, moved to its left, lies in the feature */
  RDX_JN_OV_START_R = 2,     /* ... moved to its right */
  RDX_JN_OV_ODD_L = 4,       /* some group of the feature's flips along the edge's left side is odd */
  RDX_JN_OV_ODD_R = 8
};

/* What an intersecting edge pair gives (rdx_jn_ov_classify). */
enum {
  RDX_JN_OV_NONE = 0,        /* no flip: the common point is an end of both edges, or they are
                                collinear */
  RDX_JN_OV_PROPER = 1,      /* a proper crossing: both sides of both edges flip once */
  RDX_JN_OV_VERTEX_S = 2,    /* an end v of f lies strictly inside e: a flip of e's side(s) by f
                                (bits), grouped with B's other edges at v */
  RDX_JN_OV_VERTEX_R = 3     /* an end v of e lies strictly inside f: a flip of f's side(s) */
};

/* The flip bits on the edge that the far end `o` (the sign of its orientation against the edge)
 * leaves to: strictly left flips the left side, strictly right the right side. */
RDX_HD uint32_t rdx_jn_ov_flip(int o) {
  return o > 0 ? (uint32_t)RDX_JN_OV_ODD_L : o < 0 ? (uint32_t)RDX_JN_OV_ODD_R : 0u;
}

/* For an edge pair that LSI found intersecting (closed segments a-b of R, c-d of S, neither of zero
 * length): its kind; for the VERTEX kinds the vertex (copied exactly into v) and the flip bits of
 * the edge it lies inside. Exact. (A pair that does not intersect gives NONE.) */
RDX_HD int rdx_jn_ov_classify(const double *a, const double *b, const double *c, const double *d, double *v,
                              uint32_t *bits) {
  *bits = 0;
  const int oc = rdx_jn_orient(a[0], a[1], b[0], b[1], c[0], c[1]);
  const int od = rdx_jn_orient(a[0], a[1], b[0], b[1], d[0], d[1]);
  if (oc == 0 && od == 0) return RDX_JN_OV_NONE; /* collinear: no side crosses the other edge */
  const int oa = rdx_jn_orient(c[0], c[1], d[0], d[1], a[0], a[1]);
  const int ob = rdx_jn_orient(c[0], c[1], d[0], d[1], b[0], b[1]);
  if (oc * od < 0 && oa * ob < 0) return RDX_JN_OV_PROPER;
  /* Not collinear, so the lines meet in one point, the common point. An end on the other edge's
   * line is that point; it flips the other edge's sides only when strictly inside it. */
  const double *p = NULL;
  int kind = RDX_JN_OV_NONE, o = 0;
  if (oc == 0) p = c, o = od, kind = RDX_JN_OV_VERTEX_S;
  else if (od == 0) p = d, o = oc, kind = RDX_JN_OV_VERTEX_S;
  else if (oa == 0) p = a, o = ob, kind = RDX_JN_OV_VERTEX_R;
  else if (ob == 0) p = b, o = oa, kind = RDX_JN_OV_VERTEX_R;
  else return RDX_JN_OV_NONE; /* strictly apart: not an intersecting pair */
  /* the point is an end of both edges when it equals an end of the edge it lies on */
  const double *e0 = kind == RDX_JN_OV_VERTEX_S ? a : c, *e1 = kind == RDX_JN_OV_VERTEX_S ? b : d;
  if ((p[0] == e0[0] && p[1] == e0[1]) || (p[0] == e1[0] && p[1] == e1[1])) return RDX_JN_OV_NONE;
  if (!rdx_jn_between(p[0], e0[0], e1[0]) || !rdx_jn_between(p[1], e0[1], e1[1])) return RDX_JN_OV_NONE;
  v[0] = p[0], v[1] = p[1];
  *bits = rdx_jn_ov_flip(o);
  return kind;
}

/* An event on an edge (of one layer, against a feature of the other): a vertex of that feature
 * strictly inside the edge, or, for areas, a proper crossing at its point rounded to doubles. */
typedef struct rdx_jn_ov_event {
  uint64_t key;              /* edge << 32 | feature */
  double v[2];               /* the point; -0 stored as +0, so equal points have equal bits */
  double t;                  /* areas: where along the edge, (v - a).(b - a) / |b - a|^2 (+0 for 0) */
  uint32_t bits;             /* the flips (ODD_L, ODD_R) */
  uint32_t proper;           /* 1 for a proper crossing (areas only) */
} rdx_jn_ov_event;

RDX_HD void rdx_jn_ov_put_event(rdx_jn_ov_event *w, uint64_t key, const double *v, const double *a, const double *b,
                                uint32_t bits, uint32_t proper) {
  const double ux = RDX_DSUB(b[0], a[0]), uy = RDX_DSUB(b[1], a[1]);
  w->key = key;
  w->v[0] = v[0] + 0.0, w->v[1] = v[1] + 0.0;
  w->t = RDX_DADD(RDX_DADD(RDX_DMUL(RDX_DSUB(v[0], a[0]), ux), RDX_DMUL(RDX_DSUB(v[1], a[1]), uy)) /
                    RDX_DADD(RDX_DMUL(ux, ux), RDX_DMUL(uy, uy)),
                  0.0); /* + 0: no -0, whose bits would order apart from +0 on the GPU */
  w->bits = bits;
  w->proper = proper;
}

/* The feature pair (R feature << 32 | S feature) of a record of direction d (0: key = R edge << 32
 * | S feature; 1: S edge << 32 | R feature). */
RDX_HD uint64_t rdx_jn_ov_pair(const uint32_t *r_edge_feat, const uint32_t *s_edge_feat, int d, uint64_t key) {
  const uint32_t edge = (uint32_t)(key >> 32), feat = (uint32_t)key;
  return d == 0 ? (uint64_t)r_edge_feat[edge] << 32 | feat : (uint64_t)feat << 32 | s_edge_feat[edge];
}

/* Index of key in the sorted keys[0 .. n), or -1. */
RDX_HD int64_t rdx_jn_ov_find(const uint64_t *keys, int64_t n, uint64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && keys[lo] == key ? lo : -1;
}

/* ---- areas ----
 * area(A n B) = 1/2 sum over the pieces of dA and of dB of w (p - o) x (q - o), (p, q) a piece's
 * ends and w the mean of its two sides' statuses in the other feature: 1 inside it, 1/2 on its
 * boundary (a boundary both share in one direction is counted from both, 1/2 + 1/2, and the two
 * copies of one shared in opposite directions cancel), 0 outside. This is Green's theorem over the
 * boundary of A n B, whatever the fixed point o; o is a vertex of A, so the products do not lose
 * digits to the coordinates' size. Pieces end at rounded intersection points. Every operation is
 * rounded once, in the same order on every backend (no contraction into FMAs), and the sums are
 * compensated (Neumaier) in a fixed order: a piece's terms along its edge; then the records of a
 * pair, in the order (direction, edge, feature), in chunks of RDX_JN_OV_CHUNK summed one after the
 * other, and the chunks' sums after them (so the GPU sums a pair's chunks in parallel); every
 * backend gives the same bits. */
RDX_HD double rdx_jn_ov_cross_about(const double *o, const double *p, const double *q) {
  return RDX_DSUB(RDX_DMUL(RDX_DSUB(p[0], o[0]), RDX_DSUB(q[1], o[1])),
                  RDX_DMUL(RDX_DSUB(p[1], o[1]), RDX_DSUB(q[0], o[0])));
}

#define RDX_JN_OV_CHUNK 256

/* A compensated sum: the value is s + c. */
typedef struct rdx_jn_ov_sum {
  double s, c;
} rdx_jn_ov_sum;
RDX_HD void rdx_jn_ov_sum_add(rdx_jn_ov_sum *a, double x) {
  const double t = RDX_DADD(a->s, x);
  a->c = RDX_DADD(a->c, fabs(a->s) >= fabs(x) ? RDX_DADD(RDX_DSUB(a->s, t), x) : RDX_DADD(RDX_DSUB(x, t), a->s));
  a->s = t;
}
RDX_HD double rdx_jn_ov_sum_value(const rdx_jn_ov_sum *a) { return RDX_DADD(a->s, a->c); }

/* One (edge, feature) record's share of its pair's area: the edge a -> b, its start statuses in
 * bits, and, when bits has an ODD bit, its n events in order along the edge, ev[perm[k0 + k]] (ev[k0
 * + k] when perm is NULL). */
RDX_HD double rdx_jn_ov_area_share(const double *a, const double *b, uint32_t bits, const rdx_jn_ov_event *ev,
                                   const uint32_t *perm, int64_t k0, int64_t n, const double *o) {
  int in_l = (bits & RDX_JN_OV_START_L) != 0, in_r = (bits & RDX_JN_OV_START_R) != 0;
  rdx_jn_ov_sum sum = {0.0, 0.0};
  const double *p = a;
  if (bits & (RDX_JN_OV_ODD_L | RDX_JN_OV_ODD_R))
    for (int64_t k = k0; k < k0 + n; k++) {
      const rdx_jn_ov_event *w = ev + (perm ? perm[k] : k);
      if (in_l + in_r) rdx_jn_ov_sum_add(&sum, RDX_DMUL(0.25 * (in_l + in_r), rdx_jn_ov_cross_about(o, p, w->v)));
      if (w->bits & RDX_JN_OV_ODD_L) in_l ^= 1;
      if (w->bits & RDX_JN_OV_ODD_R) in_r ^= 1;
      p = w->v;
    }
  if (in_l + in_r) rdx_jn_ov_sum_add(&sum, RDX_DMUL(0.25 * (in_l + in_r), rdx_jn_ov_cross_about(o, p, b)));
  return rdx_jn_ov_sum_value(&sum);
}

#endif /* RDX_JOIN_OVERLAY_HD_H */
