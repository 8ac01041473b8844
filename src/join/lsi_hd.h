/*
 * lsi_hd.h: segment intersection (LSI) of two layers' boundaries, the per-edge logic written once
 * for the CPU (lsi.c) and CUDA (lsi.cu): RayJoin's LSI (digest section 3 and checklist item 8).
 * Every edge of S becomes one ray through the BVH of R's edge groups (index_hd.h); the custom
 * intersection program scans the group's R edges and decides each (R edge, S edge) pair exactly
 * with rdx_jn_seg_relation on the f64 coordinates (closed segments: a crossing, a touch and a
 * collinear overlap all count, identical edges too). The program never reports a hit to the
 * traversal, so the ray never stops and never shrinks: every box it meets is scanned (all hits).
 *
 * The ray of an S edge s0 -> s1. Intersections with R can only lie in R's exact bounding box B,
 * so the edge is first clipped to B: a parameter interval [ua, ub] within [0, 1] that contains
 * every u with s(u) = s0 + u (s1 - s0) in B (an edge whose box misses B, or whose interval is
 * empty, casts nothing). Its ends A = s(ua) and B' = s(ub) are computed in double (exact when
 * ua = 0 or ub = 1), the ray's origin is o = fl32(A) and its direction d = fl32(fl64(B' - o)),
 * over t in [0, 1]. Clipping keeps every ray's coordinates at R's magnitude whatever S's are, so
 * R's own index (built before S was known) bounds the error below.
 *
 * Proof that no intersecting pair is missed. Let X be a common point of an R edge e and the S
 * edge. X = s(u*) with u* in [ua, ub], so X = (1 - tau) s(ua) + tau s(ub) with tau in [0, 1].
 * The ray's point at tau is Q = o + tau d = (1 - tau) o + tau (o + d), so on each axis
 *      |Q - X| <= max(|o - s(ua)|, |o + d - s(ub)|) <= max(e_o, e_d) + max(eps_A, eps_B) = err
 * where e_o = |o - A| (exact in double: o is A rounded, Sterbenz), e_d = |d - (B' - o)| (bounded
 * by |d - fl64(B' - o)| plus Two-Diff's exact remainder), and eps_A, eps_B bound |A - s(ua)| and
 * |B' - s(ub)|: with three roundings, |A - s(ua)| <= 2^-51 (|ua (s1 - s0)| + |A|)
 * (rdx_jn_lsi_end). err is computed per ray, rounded up, and the ray is cast only when
 * err <= tol on both axes, with
 *      tol = abs_pad (1 - 2^-29) / 2,
 * abs_pad = the index's rdx_jn_abs_pad(m), m its magnitude (R's largest |coordinate|, capped at
 * RDX_JN_F32_CLAMP). The group box of e (index_hd.h) has lo = clamp(f32_down(fl64(min - abs_pad)))
 * with f32_down(v) <= v and fl64(min - abs_pad) <= min - abs_pad + 2^-53 (|min| + abs_pad); as
 * abs_pad >= 4 * 2^-24 m and |min| <= m (below), that is <= min - P' with P' = abs_pad (1 - 2^-30),
 * and likewise hi >= max + P'. So the box holds [min - P', max + P'] on x and y, z in [-1, 1],
 * unless clamped at -+2^125. Since X lies in e's box [min, max] and |Q - X| <= tol = P' / 2 (less,
 * in fact), the L-inf ball of radius P' / 2 around Q lies in the group's box, and so in each of its
 * BVH ancestors' boxes (exact unions).
 * Clamping: a ray is cast only when |o| + |d| <= RDX_JN_LSI_LIMIT = 2^124 on both axes, so all of
 * its points lie inside the clamp and |X| <= 2^124 + tol < 2^125; a bound clamped at -+2^125 then
 * still lies beyond Q, and an unclamped min (max) of a group holding X is at most 2^125 and R's
 * magnitude in size, so |min| <= m (likewise |max|) as used above.
 * Box tests: rt_hd.h's ray/box test never rejects a box that the exact ray o + t d, t in [0, 1],
 * meets, for normal arithmetic (Ize 2013: rounding is bounded by its gamma(3) widening). The two
 * things it does not cover are ruled out per ray: a nonzero |d| below 2^-126 (1 / d overflows)
 * makes the ray's check fail; and underflow of a slab distance, an absolute error of at most
 * 2^-149 in t, cannot close the window of parameters around tau whose points stay in the box:
 * Q's ball of radius P' / 2 = tol holds o + t d for |t - tau| <= tol / |d|_inf, and the check
 * also asks |d| <= 2^26 tol per axis, so that window is at least 2^-26 wide (and, tau being in
 * [0, 1], it meets [0, 1] over at least that much). A ray that runs inside B has |d| <= 2 m,
 * while tol >= 2^-23 m: the condition holds with room to spare.
 * Hence the traversal reaches the group of e, the program tests (e, S edge) exactly, and the pair
 * is found. On the error budget: e_o <= half a float ulp at |A| <= m (1 + 2^-45), e_d <= one ulp at
 * m (|d| <= 2 m), and eps is below 2^-48 max(|s0|, |s1|); abs_pad is RDX_JN_ABS_PAD_ULPS = 4 ulps
 * at m, so tol is 2 ulps and the check passes unless S reaches about 2^20 times beyond R's
 * magnitude, or coordinates leave float32's normal range (|coordinate| above 2^124, or R's and
 * S's coordinates so small that directions fall below 2^-126).
 * An S edge whose check fails is not dropped: it is tested against every R edge (RDX_JN_LSI_BRUTE,
 * counted in the join's statistics), exact like the rest and slow only for such edges.
 * Naive indexes (index_hd.h, benchmarks only) have no pad, so tol would be 0 and every edge would
 * take that path: they cast every ray instead (tol = +inf), which is RayJoin's plain float32 LSI.
 *
 * Results. A pass over S counts each edge's intersecting R edges, a scan sizes the output, and a
 * second identical pass writes (r edge << 32 | s edge); the same traversal visits the same
 * groups in the same order, and a fill that meets another count is reported as an internal error,
 * never written past. Points: each intersecting edge pair gives rdx_jn_seg_point's correctly
 * rounded point, or for a collinear overlap both ends of the common piece (rdx_jn_overlap_ends),
 * with -0 written as +0 so that equal points have equal bits.
 */
#ifndef RDX_JOIN_LSI_HD_H
#define RDX_JOIN_LSI_HD_H

#include <math.h>
#include <stdint.h>

#include "join/exact_hd.h"
#include "join/index_hd.h"
#include "rt/rt_hd.h"

/* What happens to an S edge (rdx_jn_lsi_edge). */
#define RDX_JN_LSI_SKIP 0    /* it cannot meet R: its box misses R's box, or its clip is empty */
#define RDX_JN_LSI_RAY 1     /* one ray over the whole edge */
#define RDX_JN_LSI_CLIPPED 2 /* one ray over the edge's piece in R's box */
#define RDX_JN_LSI_BRUTE 3   /* the ray's check failed: every R edge is tested */

/* Bound of |o| + |d| per axis of a cast ray: below the boxes' clamp (index_hd.h). */
#define RDX_JN_LSI_LIMIT 0x1p124
/* Smallest nonzero |d| per axis of a cast ray: 1 / d stays finite in float32. */
#define RDX_JN_LSI_DIR_MIN 0x1p-126f

/* R's side of the join, in the memory of the code that runs it. */
typedef struct rdx_jn_lsi_r {
  rdx_bvh_view v;             /* the BVH of R's groups */
  const double *xy;           /* R's vertices */
  const uint32_t *edge_end;   /* R's edge ends */
  const uint32_t *group_first; /* n_groups + 1 */
  int64_t n_edges;            /* R's edges (= vertices) */
  double lo[2], hi[2];        /* R's exact bounding box */
  double tol;                 /* largest error a cast ray may carry (rdx_jn_lsi_tol) */
} rdx_jn_lsi_r;

/* A ray's state while it runs: the S edge, and the R edges found so far. */
typedef struct rdx_jn_lsi_state {
  const double *xy;           /* R, as in rdx_jn_lsi_r */
  const uint32_t *edge_end;
  const uint32_t *group_first;
  const double *s0, *s1;      /* the S edge's ends */
  uint32_t s_edge;
  uint64_t hits;              /* intersecting R edges found */
  uint64_t candidates;        /* R edges tested exactly */
  uint64_t cap;               /* fill: room at out (the count pass's count); 0 when counting */
  uint64_t *out;              /* fill: (r edge << 32 | s edge) per hit, at most cap of them */
} rdx_jn_lsi_state;

/* tol for an index whose absolute pad is abs_pad (the file comment's proof). */
RDX_HD double rdx_jn_lsi_tol(double abs_pad) { return RDX_DMUL(RDX_DMUL(abs_pad, 1.0 - 0x1p-29), 0.5); }
/* tol for an index with these pads: rdx_jn_lsi_tol, or +inf for naive boxes (the file comment). */
RDX_HD double rdx_jn_lsi_index_tol(int pad_ulps, double abs_pad) {
  return pad_ulps == RDX_JN_PAD_NAIVE ? (double)INFINITY : rdx_jn_lsi_tol(abs_pad);
}

/* One candidate: R edge e against the state's S edge, exactly. */
RDX_HD void rdx_jn_lsi_test(rdx_jn_lsi_state *st, uint32_t e) {
  st->candidates++;
  const double *r0 = st->xy + 2 * (uint64_t)e, *r1 = st->xy + 2 * (uint64_t)st->edge_end[e];
  if (rdx_jn_seg_relation(r0, r1, st->s0, st->s1) == RDX_JN_DISJOINT) return;
  if (st->hits < st->cap) st->out[st->hits] = (uint64_t)e << 32 | st->s_edge;
  st->hits++;
}

/* The custom intersection: scan group g's edges; never report a hit (all hits, no t). */
RDX_HD int rdx_jn_lsi_isect(rdx_jn_lsi_state *st, uint32_t g, const float *box, const rdx_ray *ray,
                            const rdx_ray_pre *pre, float tmin, float tmax, float *t) {
  uint32_t end = st->group_first[g + 1];
  for (uint32_t e = st->group_first[g]; e < end; e++) rdx_jn_lsi_test(st, e);
  return 0;
}
RDX_HD int rdx_jn_lsi_hit(rdx_jn_lsi_state *st, uint32_t g, float t, int front, float *tmax) {
  return RDX_RT_CONTINUE; /* not reached: rdx_jn_lsi_isect reports nothing */
}
RDX_RT_DEFINE_TRACE_AABB(rdx_jn_lsi_trace, rdx_jn_lsi_state, rdx_jn_lsi_isect, rdx_jn_lsi_hit)

/* u lowered (raised) past the three roundings of a computed (L - s0) / (s1 - s0): the computed
 * value is u (1 + theta) with |theta| < 3.01 2^-53, and moving it by 2^-50 |u| (then rounding
 * once more) covers that. Nonzero computed u are at least about 2^-565 in magnitude (coordinates
 * are multiples of 2^-308 below 2^256, exact_hd.h), so nothing underflows. */
RDX_HD double rdx_jn_lsi_lower(double u) { return RDX_DSUB(u, RDX_DMUL(fabs(u), 0x1p-50)); }
RDX_HD double rdx_jn_lsi_raise(double u) { return RDX_DADD(u, RDX_DMUL(fabs(u), 0x1p-50)); }

/* The clip of s0 -> s1 to the box [lo, hi]: 0 when the edge cannot meet the box; else 1 with
 * [*ua, *ub] within [0, 1] containing every u whose point lies in the box. Exact comparisons
 * decide the axes where the edge lies inside or outside; the others are cut at the box. */
RDX_HD int rdx_jn_lsi_clip(const double *s0, const double *s1, const double *lo, const double *hi, double *ua,
                           double *ub) {
  double a = 0.0, b = 1.0;
  for (int k = 0; k < 2; k++) {
    double smin = s0[k] < s1[k] ? s0[k] : s1[k], smax = s0[k] < s1[k] ? s1[k] : s0[k];
    if (smax < lo[k] || smin > hi[k]) return 0;
    if (lo[k] <= smin && smax <= hi[k]) continue; /* inside on this axis */
    double dk = RDX_DSUB(s1[k], s0[k]);           /* nonzero: smin < smax here */
    double t0 = RDX_JN_DDIV(RDX_DSUB(lo[k], s0[k]), dk), t1 = RDX_JN_DDIV(RDX_DSUB(hi[k], s0[k]), dk);
    if (t0 > t1) {
      double w = t0;
      t0 = t1;
      t1 = w;
    }
    t0 = rdx_jn_lsi_lower(t0);
    t1 = rdx_jn_lsi_raise(t1);
    if (t0 > a) a = t0;
    if (t1 < b) b = t1;
  }
  if (a > b) return 0;
  *ua = a;
  *ub = b;
  return 1;
}

/* p = s(u) in double and eps[k] >= |p[k] - s(u)[k]| (exact for u = 0 and u = 1). */
RDX_HD void rdx_jn_lsi_end(const double *s0, const double *s1, double u, double *p, double *eps) {
  for (int k = 0; k < 2; k++) {
    if (u == 0.0 || u == 1.0) {
      p[k] = u == 0.0 ? s0[k] : s1[k];
      eps[k] = 0.0;
      continue;
    }
    double q = RDX_DMUL(u, RDX_DSUB(s1[k], s0[k]));
    p[k] = RDX_DADD(s0[k], q);
    eps[k] = RDX_DADD(RDX_DMUL(0x1p-51, RDX_DADD(fabs(q), fabs(p[k]))), 0x1p-1000);
  }
}

/* The ray from A to B (each within eps of the exact ends): 1 with *ray set when it is safe to
 * cast (the file comment's conditions), else 0. */
RDX_HD int rdx_jn_lsi_ray(const double *A, const double *B, const double *epsA, const double *epsB, double tol,
                          rdx_ray *ray) {
  for (int k = 0; k < 2; k++) {
    if (!(fabs(A[k]) <= RDX_JN_LSI_LIMIT && fabs(B[k]) <= RDX_JN_LSI_LIMIT)) return 0; /* no float overflow */
    float o = (float)A[k];
    double e_o = fabs(RDX_DSUB((double)o, A[k]));
    double s, rem;
    rdx_jn_two_diff(B[k], (double)o, &s, &rem); /* B - o = s + rem exactly */
    float d = (float)s;
    double e_d = RDX_DADD(fabs(RDX_DSUB((double)d, s)), fabs(rem));
    double err = RDX_DADD(e_o > e_d ? e_o : e_d, epsA[k] > epsB[k] ? epsA[k] : epsB[k]);
    err = RDX_DMUL(err, 1.0 + 0x1p-40); /* the few roundings above, upward */
    if (!(err <= tol)) return 0;
    if (!(RDX_DADD(fabs((double)o), fabs((double)d)) <= RDX_JN_LSI_LIMIT)) return 0;
    if (d != 0.0f && fabsf(d) < RDX_JN_LSI_DIR_MIN) return 0;
    if (!((double)fabsf(d) <= RDX_DMUL(0x1p26, tol))) return 0; /* the window of the proof */
    ray->o[k] = o;
    ray->d[k] = d;
  }
  ray->o[2] = 0.0f;
  ray->d[2] = 0.0f;
  ray->tmin = 0.0f;
  ray->tmax = 1.0f;
  return 1;
}

/* Every R edge against the state's S edge (RDX_JN_LSI_BRUTE). */
RDX_HD void rdx_jn_lsi_brute(const rdx_jn_lsi_r *r, rdx_jn_lsi_state *st) {
  for (int64_t e = 0; e < r->n_edges; e++) rdx_jn_lsi_test(st, (uint32_t)e);
}

/* Prepare st for S edge se (s0 -> s1): counting when out is NULL, else filling up to cap. */
RDX_HD void rdx_jn_lsi_begin(const rdx_jn_lsi_r *r, const double *s0, const double *s1, uint32_t se, uint64_t *out,
                             uint64_t cap, rdx_jn_lsi_state *st) {
  st->xy = r->xy;
  st->edge_end = r->edge_end;
  st->group_first = r->group_first;
  st->s0 = s0;
  st->s1 = s1;
  st->s_edge = se;
  st->hits = 0;
  st->candidates = 0;
  st->cap = out ? cap : 0;
  st->out = out;
}

/*
 * RDX_JN_LSI_DEFINE_EDGE(QUAL, NAME, TRACE) defines
 *     QUAL int NAME(const rdx_jn_lsi_r *r, rdx_jn_lsi_state *st)
 * one S edge through R: its intersecting R edges into st (begun by rdx_jn_lsi_begin); returns
 * RDX_JN_LSI_SKIP, _RAY, _CLIPPED or _BRUTE. The ray is cast by void TRACE(const rdx_jn_lsi_r *r,
 * const rdx_ray *ray, rdx_jn_lsi_state *st), which runs rdx_jn_lsi_isect on every group the ray
 * meets: the soft BVH's traversal below (rdx_jn_lsi_edge), or OptiX's in the join's OptiX programs
 * (src/join/optix/programs.cu), so both decide the same S edges the same way. QUAL is RDX_HD for
 * the soft backends and a device-only qualifier in OptiX programs.
 */
#define RDX_JN_LSI_DEFINE_EDGE(QUAL, NAME, TRACE)                                                  \
  QUAL int NAME(const rdx_jn_lsi_r *r, rdx_jn_lsi_state *st) {                                    \
    double ua, ub;                                                                                \
    if (!rdx_jn_lsi_clip(st->s0, st->s1, r->lo, r->hi, &ua, &ub)) return RDX_JN_LSI_SKIP;        \
    double A[2], B[2], epsA[2], epsB[2];                                                          \
    rdx_jn_lsi_end(st->s0, st->s1, ua, A, epsA);                                                  \
    rdx_jn_lsi_end(st->s0, st->s1, ub, B, epsB);                                                  \
    rdx_ray ray;                                                                                  \
    if (!rdx_jn_lsi_ray(A, B, epsA, epsB, r->tol, &ray)) {                                        \
      rdx_jn_lsi_brute(r, st);                                                                    \
      return RDX_JN_LSI_BRUTE;                                                                    \
    }                                                                                             \
    TRACE(r, &ray, st);                                                                           \
    return ua == 0.0 && ub == 1.0 ? RDX_JN_LSI_RAY : RDX_JN_LSI_CLIPPED;                          \
  }

/* The soft BVH's cast of an LSI ray. */
RDX_HD void rdx_jn_lsi_trace_soft(const rdx_jn_lsi_r *r, const rdx_ray *ray, rdx_jn_lsi_state *st) {
  rdx_jn_lsi_trace(&r->v, ray, st);
}
RDX_JN_LSI_DEFINE_EDGE(RDX_HD, rdx_jn_lsi_edge, rdx_jn_lsi_trace_soft)

/* ---- points ---- */

/* The common points of an intersecting pair (R edge r0 -> r1, S edge s0 -> s1) into p (x, y,
 * then x, y for an overlap's other end): returns 1, or 2 for a collinear overlap, 0 when the
 * edges are disjoint. -0 becomes +0. */
RDX_HD int rdx_jn_lsi_points(const double *r0, const double *r1, const double *s0, const double *s1, double *p) {
  int rel = rdx_jn_seg_relation(r0, r1, s0, s1);
  int n = 0;
  if (rel == RDX_JN_OVERLAP) {
    rdx_jn_overlap_ends(r0, r1, s0, s1, p, p + 2);
    n = 2;
  } else if (rel != RDX_JN_DISJOINT) {
    rdx_jn_seg_point(r0, r1, s0, s1, &p[0], &p[1]);
    n = 1;
  }
  for (int i = 0; i < 2 * n; i++)
    if (p[i] == 0.0) p[i] = 0.0;
  return n;
}

/* How many points rdx_jn_lsi_points gives for the pair. */
RDX_HD int rdx_jn_lsi_point_count(const double *r0, const double *r1, const double *s0, const double *s1) {
  int rel = rdx_jn_seg_relation(r0, r1, s0, s1);
  return rel == RDX_JN_OVERLAP ? 2 : rel != RDX_JN_DISJOINT;
}

/* A double as a u64 sort key ordered like the values (no NaN here; -0 was made +0). */
RDX_HD uint64_t rdx_jn_lsi_f64_key(double v) { return (uint64_t)rdx_jn_f64_ord(v) ^ 0x8000000000000000ull; }

#endif /* RDX_JOIN_LSI_HD_H */
