/*
 * exact_hd.h: the exact geometric predicates of the joins, written once for the CPU and for CUDA
 * (and OptiX) device code: orientation, segment relation, point on segment, height comparison at
 * an abscissa, the correctly rounded intersection point, and the conservative float32 bounds of
 * the ray-tracing boxes (RayJoin digest, section 5).
 *
 * Exactness. Every predicate answers what real-number geometry says about the coordinates as
 * given (f64; f32 input is widened exactly), so answers equal an exact reference such as GEOS's
 * orientation index. A floating-point filter with a proven error bound (below each filter)
 * decides almost every call; when it cannot, an exact evaluation in floating-point expansion
 * arithmetic decides (Shewchuk, "Adaptive Precision Floating-Point Arithmetic and Fast Robust
 * Geometric Predicates", DCG 18, 1997: Two-Sum, Two-Product, Scale-Expansion and
 * Fast-Expansion-Sum with zero elimination). The exact parts use fixed-size local arrays, no
 * recursion and no allocation, and are RDX_HD_NOINLINE so the filters stay small where they are
 * inlined (a kernel that calls them all reserves about 4.4 KB of local memory per thread for
 * their frames, sm_90).
 *
 * Coordinate range. Every coordinate (layer vertex or query point) is finite and either 0 or of
 * magnitude in [RDX_JN_COORD_MIN, RDX_JN_COORD_MAX] = [2^-256, 2^256]. Why that keeps every
 * expansion below free of overflow and underflow, for every function:
 *  - Granularity. Let G = 2^-308, the unit in the last place of 2^-256. Every coordinate is an
 *    integer multiple of G, and so is every sum or difference of coordinates; a product of k such
 *    quantities is a multiple of G^k. Rounding a multiple of G^k to double keeps it a multiple of
 *    G^k (a double that must round has an ulp above G^k). Two-Sum and Two-Product keep the
 *    property, so every component of an expansion of degree k (k = 1, 2, 3 factors of
 *    coordinate differences; 3 is the most any function here forms) is a multiple of G^k >=
 *    2^-924. Nonzero components are therefore normal doubles (>= 2^-1022), every product's
 *    roundoff is representable (Two-Product is exact when the product's exponent sum is >=
 *    2^-1074), and sums of normal multiples of G^k are exact as Two-Sum requires.
 *  - Magnitude. A difference of coordinates is at most 2^257 in magnitude, a product of three at
 *    most 2^771, and the few-term sums formed here stay below 2^776. Dekker's split multiplies by
 *    2^27 + 1 (< 2^804 < 2^996, its overflow threshold). The filters' bounds multiply by 2^-50,
 *    which keeps them >= 2^-974, normal.
 *  - The intersection point (rdx_jn_seg_point) divides a degree-3 expansion by a degree-2 one and
 *    scales the numerator by a power of two first when the quotient is below 1, so the
 *    candidates it tests have magnitude about 1 and granularity >= 2^-53; see that function.
 * The range [2^-400, 2^400] is not enough: a product of three differences reaches 2^1203
 * (overflow) and granularity 2^-1356 (underflow) there. Every f32 value and every real map (in
 * degrees, metres or any projection) lies far inside 2^+-256.
 *
 * Contraction. Error-free transformations break if the compiler fuses a*b + c into an FMA. Every
 * floating-point operation here goes through RDX_DADD, RDX_DSUB and RDX_DMUL (src/rt/rt_hd.h):
 * __dadd_rn-style intrinsics on the device, which nvcc never contracts; on the host, plain
 * operators in statements of one operation each, which neither GCC in ISO C mode (-std=c11
 * implies -ffp-contract=off) nor Clang's default (-ffp-contract=on, within one expression only)
 * contracts. A GNU-dialect GCC build for a target with hardware FMA could contract across
 * statements: that combination is refused below. The host rounds in double (FLT_EVAL_METHOD 0),
 * to nearest, ties to even (the mode Fast-Expansion-Sum requires).
 */
#ifndef RDX_JOIN_EXACT_HD_H
#define RDX_JOIN_EXACT_HD_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "rt/rt_hd.h"

#if !defined(__CUDA_ARCH__)
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "exact_hd.h needs double arithmetic evaluated in double (FLT_EVAL_METHOD 0, e.g. SSE2)"
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__FP_FAST_FMA) && !defined(__STRICT_ANSI__)
#error "exact_hd.h: GNU-dialect GCC with hardware FMA may contract a*b+c; build with -ffp-contract=off and -std=c11"
#endif
#endif

/* A hook for tests, which count the exact evaluations (the filters must not decide everything
 * in a test that means to exercise the exact paths): defined before this header is included,
 * it is called with orient, cmp_y_at_x or seg_point as each exact evaluation starts. */
#ifndef RDX_JN_EXACT_HIT
#define RDX_JN_EXACT_HIT(what) ((void)0)
#endif
/* The same for rdx_jn_det_diff, a hook of its own so that tests defining the one above need no
 * new counter. */
#ifndef RDX_JN_EXACT_HIT_DET_DIFF
#define RDX_JN_EXACT_HIT_DET_DIFF() ((void)0)
#endif

/* Coordinates are 0 or of magnitude in [RDX_JN_COORD_MIN, RDX_JN_COORD_MAX] (file comment). */
#define RDX_JN_COORD_MIN 0x1p-256
#define RDX_JN_COORD_MAX 0x1p+256

/* Relations of two closed segments (rdx_jn_seg_relation). */
#define RDX_JN_DISJOINT 0 /* no common point */
#define RDX_JN_CROSS 1    /* one common point, interior to both */
#define RDX_JN_TOUCH 2    /* one common point, an endpoint of at least one of them */
#define RDX_JN_OVERLAP 3  /* collinear, sharing a piece of positive length */

/* Expansion lengths, worst case with zero elimination (Shewchuk: Scale-Expansion doubles the
 * length, Fast-Expansion-Sum adds lengths). */
#define RDX_JN_E1 2  /* a difference of two doubles */
#define RDX_JN_E2 8  /* a product of two differences */
#define RDX_JN_E3 32 /* a product of three differences */

/* Division, rounded to nearest like RDX_DMUL (only candidates are divided: see rdx_jn_div_round). */
#if defined(__CUDA_ARCH__)
#define RDX_JN_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define RDX_JN_DDIV(a, b) ((a) / (b))
#endif

/* ---- error-free transformations (Shewchuk section 2) ---- */

/* x + y = a + b exactly with x = fl(a + b) (Knuth's Two-Sum; Shewchuk Theorem 7). */
RDX_HD void rdx_jn_two_sum(double a, double b, double *x, double *y) {
  double s = RDX_DADD(a, b);
  double bv = RDX_DSUB(s, a);
  double av = RDX_DSUB(s, bv);
  double br = RDX_DSUB(b, bv);
  double ar = RDX_DSUB(a, av);
  *x = s;
  *y = RDX_DADD(ar, br);
}

/* x + y = a - b exactly with x = fl(a - b). */
RDX_HD void rdx_jn_two_diff(double a, double b, double *x, double *y) {
  double s = RDX_DSUB(a, b);
  double bv = RDX_DSUB(a, s);
  double av = RDX_DADD(s, bv);
  double br = RDX_DSUB(bv, b);
  double ar = RDX_DSUB(a, av);
  *x = s;
  *y = RDX_DADD(ar, br);
}

/* x + y = a + b exactly, for |a| >= |b| or a = 0 (Dekker's Fast-Two-Sum; Shewchuk Theorem 6). */
RDX_HD void rdx_jn_fast_two_sum(double a, double b, double *x, double *y) {
  double s = RDX_DADD(a, b);
  double bv = RDX_DSUB(s, a);
  *x = s;
  *y = RDX_DSUB(b, bv);
}

/* x + y = a * b exactly with x = fl(a * b): an FMA where the hardware has one (device, or a host
 * with FP_FAST_FMA), else Dekker's split into 26-bit halves (Shewchuk Theorems 17, 18). */
RDX_HD void rdx_jn_two_product(double a, double b, double *x, double *y) {
  double p = RDX_DMUL(a, b);
  *x = p;
#if defined(__CUDA_ARCH__)
  *y = __fma_rn(a, b, -p);
#elif defined(FP_FAST_FMA)
  *y = fma(a, b, -p);
#else
  double c = RDX_DMUL(134217729.0, a); /* 2^27 + 1 */
  double big = RDX_DSUB(c, a);
  double ahi = RDX_DSUB(c, big);
  double alo = RDX_DSUB(a, ahi);
  c = RDX_DMUL(134217729.0, b);
  big = RDX_DSUB(c, b);
  double bhi = RDX_DSUB(c, big);
  double blo = RDX_DSUB(b, bhi);
  double t = RDX_DMUL(ahi, bhi);
  double err = RDX_DSUB(p, t);
  t = RDX_DMUL(alo, bhi);
  err = RDX_DSUB(err, t);
  t = RDX_DMUL(ahi, blo);
  err = RDX_DSUB(err, t);
  t = RDX_DMUL(alo, blo);
  *y = RDX_DSUB(t, err);
#endif
}

/* ---- expansions: arrays of nonoverlapping doubles, increasing magnitude, length >= 1 (zero is
 * the single component 0), value = the exact sum (Shewchuk section 2.3) ---- */

/* e = a - b as a 2-expansion. */
RDX_HD void rdx_jn_exp_diff(double a, double b, double *e) { rdx_jn_two_diff(a, b, &e[1], &e[0]); }

/* h = e + f (Fast-Expansion-Sum with zero elimination, Shewchuk Theorem 13; needs round to even).
 * h has room for elen + flen and aliases neither. Returns h's length. */
RDX_HD int rdx_jn_exp_sum(int elen, const double *e, int flen, const double *f, double *h) {
  int i = 0, j = 0, n = 0;
  double en = e[0], fn = f[0], q, qn, hh;
  if ((fn > en) == (fn > -en)) {
    q = en;
    en = ++i < elen ? e[i] : 0.0;
  } else {
    q = fn;
    fn = ++j < flen ? f[j] : 0.0;
  }
  if (i < elen && j < flen) {
    if ((fn > en) == (fn > -en)) {
      rdx_jn_fast_two_sum(en, q, &qn, &hh);
      en = ++i < elen ? e[i] : 0.0;
    } else {
      rdx_jn_fast_two_sum(fn, q, &qn, &hh);
      fn = ++j < flen ? f[j] : 0.0;
    }
    q = qn;
    if (hh != 0.0) h[n++] = hh;
    while (i < elen && j < flen) {
      if ((fn > en) == (fn > -en)) {
        rdx_jn_two_sum(q, en, &qn, &hh);
        en = ++i < elen ? e[i] : 0.0;
      } else {
        rdx_jn_two_sum(q, fn, &qn, &hh);
        fn = ++j < flen ? f[j] : 0.0;
      }
      q = qn;
      if (hh != 0.0) h[n++] = hh;
    }
  }
  for (; i < elen; en = ++i < elen ? e[i] : 0.0) {
    rdx_jn_two_sum(q, en, &qn, &hh);
    q = qn;
    if (hh != 0.0) h[n++] = hh;
  }
  for (; j < flen; fn = ++j < flen ? f[j] : 0.0) {
    rdx_jn_two_sum(q, fn, &qn, &hh);
    q = qn;
    if (hh != 0.0) h[n++] = hh;
  }
  if (q != 0.0 || n == 0) h[n++] = q;
  return n;
}

/* h = e * b (Scale-Expansion with zero elimination, Shewchuk Theorem 19). h has room for
 * 2 * elen and does not alias e. Returns h's length. */
RDX_HD int rdx_jn_exp_scale(int elen, const double *e, double b, double *h) {
  int n = 0;
  double q, hh, p1, p0, sum;
  rdx_jn_two_product(e[0], b, &q, &hh);
  if (hh != 0.0) h[n++] = hh;
  for (int i = 1; i < elen; i++) {
    rdx_jn_two_product(e[i], b, &p1, &p0);
    rdx_jn_two_sum(q, p0, &sum, &hh);
    if (hh != 0.0) h[n++] = hh;
    rdx_jn_fast_two_sum(p1, sum, &q, &hh);
    if (hh != 0.0) h[n++] = hh;
  }
  if (q != 0.0 || n == 0) h[n++] = q;
  return n;
}

/* h = e * f for a 2-expansion f; h has room for 4 * elen; t is scratch for 4 * elen. */
RDX_HD int rdx_jn_exp_mul2(int elen, const double *e, const double *f, double *h, double *t) {
  int n0 = rdx_jn_exp_scale(elen, e, f[0], t);
  int n1 = rdx_jn_exp_scale(elen, e, f[1], t + 2 * elen);
  return rdx_jn_exp_sum(n0, t, n1, t + 2 * elen, h);
}

/* e = -e */
RDX_HD void rdx_jn_exp_negate(int elen, double *e) {
  for (int i = 0; i < elen; i++) e[i] = -e[i];
}

/* The sign of an expansion: that of its largest component (zero elimination leaves no zeros
 * above the value). */
RDX_HD int rdx_jn_exp_sign(int elen, const double *e) {
  return (e[elen - 1] > 0.0) - (e[elen - 1] < 0.0);
}

/* An approximation of the value: the components summed from the smallest up. For a
 * nonoverlapping expansion each partial sum is far below the next component, so the relative
 * error is at most about 2 ulps. */
RDX_HD double rdx_jn_exp_estimate(int elen, const double *e) {
  double s = e[0];
  for (int i = 1; i < elen; i++) s = RDX_DADD(s, e[i]);
  return s;
}

/* ---- orientation ---- */

/* The sign of det[b - a, c - a] in expansions: exact for coordinates in range. */
RDX_HD_NOINLINE int rdx_jn_orient_exact(double ax, double ay, double bx, double by, double cx, double cy) {
  double acx[2], bcy[2], acy[2], bcx[2], l[RDX_JN_E2], r[RDX_JN_E2], t[RDX_JN_E2], d[2 * RDX_JN_E2];
  rdx_jn_exp_diff(ax, cx, acx);
  rdx_jn_exp_diff(by, cy, bcy);
  rdx_jn_exp_diff(ay, cy, acy);
  rdx_jn_exp_diff(bx, cx, bcx);
  int nl = rdx_jn_exp_mul2(2, acx, bcy, l, t);
  int nr = rdx_jn_exp_mul2(2, acy, bcx, r, t);
  rdx_jn_exp_negate(nr, r);
  int n = rdx_jn_exp_sum(nl, l, nr, r, d);
  return rdx_jn_exp_sign(n, d);
}

/* The sign of det[b - a, c - a] = (ax - cx)(by - cy) - (ay - cy)(bx - cx): +1 when c lies left of
 * the directed line a -> b (a, b, c counter-clockwise), -1 right, 0 collinear. Exact.
 * Filter: Shewchuk's orient2d stage A. The two products are of rounded differences; when their
 * signs differ (or one is 0) the sign of the difference is exact, and otherwise the error of det
 * is below (3 + 16u) u (|l| + |r|) with u = 2^-53 (Shewchuk section 4.2), all quantities normal
 * in range. */
RDX_HD int rdx_jn_orient(double ax, double ay, double bx, double by, double cx, double cy) {
  double acx = RDX_DSUB(ax, cx), bcy = RDX_DSUB(by, cy);
  double acy = RDX_DSUB(ay, cy), bcx = RDX_DSUB(bx, cx);
  double l = RDX_DMUL(acx, bcy);
  double r = RDX_DMUL(acy, bcx);
  double det = RDX_DSUB(l, r), sum;
  if (l > 0.0) {
    if (r <= 0.0) return 1;
    sum = RDX_DADD(l, r);
  } else if (l < 0.0) {
    if (r >= 0.0) return -1;
    sum = RDX_DSUB(-l, r);
  } else {
    return (r < 0.0) - (r > 0.0);
  }
  double bound = RDX_DMUL(0x1.8000000000004p-52, sum); /* (3 + 16u) u, exactly */
  if (det > bound) return 1;
  if (-det > bound) return -1;
  RDX_JN_EXACT_HIT(orient);
  return rdx_jn_orient_exact(ax, ay, bx, by, cx, cy);
}

/* ---- products of differences (side PIP, pip_hd.h) ---- */

/* The sign of (a1 - a0)(b1 - b0) - (c1 - c0)(d1 - d0) in expansions: exact for coordinates in
 * range (degree 2, like rdx_jn_orient_exact, whose special case it is). */
RDX_HD_NOINLINE int rdx_jn_det_diff_exact(double a1, double a0, double b1, double b0, double c1, double c0, double d1,
                                          double d0) {
  double a[2], b[2], c[2], d[2], l[RDX_JN_E2], r[RDX_JN_E2], t[RDX_JN_E2], h[2 * RDX_JN_E2];
  rdx_jn_exp_diff(a1, a0, a);
  rdx_jn_exp_diff(b1, b0, b);
  rdx_jn_exp_diff(c1, c0, c);
  rdx_jn_exp_diff(d1, d0, d);
  int nl = rdx_jn_exp_mul2(2, a, b, l, t);
  int nr = rdx_jn_exp_mul2(2, c, d, r, t);
  rdx_jn_exp_negate(nr, r);
  int n = rdx_jn_exp_sum(nl, l, nr, r, h);
  return rdx_jn_exp_sign(n, h);
}

/* The sign of D = (a1 - a0)(b1 - b0) - (c1 - c0)(d1 - d0), four independent differences of
 * coordinates: -1, 0 or +1. Exact. rdx_jn_orient is the case a = (a, c), b = (b, c), ...; side PIP
 * needs the general one for cross(r - l, b - a) and dot(r - l, b - a) of two segments.
 * Filter: the same as rdx_jn_orient's (Shewchuk's orient2d stage A). Its error analysis never uses
 * that orient2d's differences share an operand: each of the four is one rounded difference
 * (relative error <= u = 2^-53, and of the exact sign, 0 only when exact: coordinates are
 * multiples of G, the file comment), each product one more rounding (a nonzero product of two
 * such differences is at least G^2 = 2^-616, normal, so no underflow), and the subtraction one
 * more. So: when the two computed products differ in sign or one is 0, the computed D has the
 * exact sign; otherwise |fl(D) - D| <= (3 + 16u) u (|l| + |r|) (Shewchuk section 4.2, with
 * |l| + |r| computed, its own rounding included in the constant), and fl(D) beyond the bound
 * decides. Else the expansions decide. */
RDX_HD int rdx_jn_det_diff(double a1, double a0, double b1, double b0, double c1, double c0, double d1, double d0) {
  double l = RDX_DMUL(RDX_DSUB(a1, a0), RDX_DSUB(b1, b0));
  double r = RDX_DMUL(RDX_DSUB(c1, c0), RDX_DSUB(d1, d0));
  double det = RDX_DSUB(l, r), sum;
  if (l > 0.0) {
    if (r <= 0.0) return 1;
    sum = RDX_DADD(l, r);
  } else if (l < 0.0) {
    if (r >= 0.0) return -1;
    sum = RDX_DSUB(-l, r);
  } else {
    return (r < 0.0) - (r > 0.0);
  }
  double bound = RDX_DMUL(0x1.8000000000004p-52, sum); /* (3 + 16u) u, exactly */
  if (det > bound) return 1;
  if (-det > bound) return -1;
  RDX_JN_EXACT_HIT_DET_DIFF();
  return rdx_jn_det_diff_exact(a1, a0, b1, b0, c1, c0, d1, d0);
}

/* The sign of cross(r - l, b - a) = (r - l).x (b - a).y - (r - l).y (b - a).x. Exact. */
RDX_HD int rdx_jn_cross_segs(const double *l, const double *r, const double *a, const double *b) {
  return rdx_jn_det_diff(r[0], l[0], b[1], a[1], r[1], l[1], b[0], a[0]);
}
/* The sign of dot(r - l, b - a) = (r - l).x (b - a).x + (r - l).y (b - a).y: the second product
 * enters negated as (r - l).y (a - b).y, a swap of operands, exact. Exact. */
RDX_HD int rdx_jn_dot_segs(const double *l, const double *r, const double *a, const double *b) {
  return rdx_jn_det_diff(r[0], l[0], b[0], a[0], r[1], l[1], a[1], b[1]);
}

/* ---- segments ---- */

/* lo <= v <= hi for the interval spanned by a and b (in either order). */
RDX_HD int rdx_jn_between(double v, double a, double b) {
  return a <= b ? (a <= v && v <= b) : (b <= v && v <= a);
}

/* 1 when p lies on the closed segment a-b (a != b): collinear and inside its box. Exact. */
RDX_HD int rdx_jn_on_segment(const double *p, const double *a, const double *b) {
  if (!rdx_jn_between(p[0], a[0], b[0]) || !rdx_jn_between(p[1], a[1], b[1])) return 0;
  return rdx_jn_orient(a[0], a[1], b[0], b[1], p[0], p[1]) == 0;
}

/* How the closed segments a0-a1 and b0-b1 (neither of zero length) meet: RDX_JN_DISJOINT,
 * RDX_JN_CROSS (one common point interior to both), RDX_JN_TOUCH (one common point, an endpoint
 * of at least one) or RDX_JN_OVERLAP (collinear with a common piece of positive length). Exact.
 * With o1, o2 the sides of b0, b1 against a and o3, o4 those of a0, a1 against b: the segments
 * meet iff neither pair lies strictly on one side; all four are 0 exactly when they are collinear
 * (b0, b1 on line a makes a's points lie on line b); otherwise they meet in one point, interior to
 * both iff no endpoint lies on the other segment's line. */
RDX_HD int rdx_jn_seg_relation(const double *a0, const double *a1, const double *b0, const double *b1) {
  /* boxes first: disjoint boxes decide most pairs with four comparisons */
  if ((a0[0] < b0[0] && a0[0] < b1[0] && a1[0] < b0[0] && a1[0] < b1[0]) ||
      (a0[0] > b0[0] && a0[0] > b1[0] && a1[0] > b0[0] && a1[0] > b1[0]) ||
      (a0[1] < b0[1] && a0[1] < b1[1] && a1[1] < b0[1] && a1[1] < b1[1]) ||
      (a0[1] > b0[1] && a0[1] > b1[1] && a1[1] > b0[1] && a1[1] > b1[1]))
    return RDX_JN_DISJOINT;
  int o1 = rdx_jn_orient(a0[0], a0[1], a1[0], a1[1], b0[0], b0[1]);
  int o2 = rdx_jn_orient(a0[0], a0[1], a1[0], a1[1], b1[0], b1[1]);
  if (o1 * o2 > 0) return RDX_JN_DISJOINT;
  if (o1 == 0 && o2 == 0) {
    /* collinear: compare along x, or along y when the common line is vertical */
    int k = a0[0] != a1[0] ? 0 : 1;
    double alo = a0[k] < a1[k] ? a0[k] : a1[k], ahi = a0[k] < a1[k] ? a1[k] : a0[k];
    double blo = b0[k] < b1[k] ? b0[k] : b1[k], bhi = b0[k] < b1[k] ? b1[k] : b0[k];
    double lo = alo > blo ? alo : blo, hi = ahi < bhi ? ahi : bhi;
    return lo < hi ? RDX_JN_OVERLAP : lo == hi ? RDX_JN_TOUCH : RDX_JN_DISJOINT;
  }
  int o3 = rdx_jn_orient(b0[0], b0[1], b1[0], b1[1], a0[0], a0[1]);
  int o4 = rdx_jn_orient(b0[0], b0[1], b1[0], b1[1], a1[0], a1[1]);
  if (o3 * o4 > 0) return RDX_JN_DISJOINT;
  return (o1 != 0 && o2 != 0 && o3 != 0 && o4 != 0) ? RDX_JN_CROSS : RDX_JN_TOUCH;
}

/* For collinear segments that overlap (RDX_JN_OVERLAP) or touch end to end: the two ends of
 * their common piece, each an input endpoint copied exactly, ordered along the line as a0 -> a1
 * runs (for a touch both ends are the shared point). */
RDX_HD void rdx_jn_overlap_ends(const double *a0, const double *a1, const double *b0, const double *b1,
                                double *p, double *q) {
  int k = a0[0] != a1[0] ? 0 : 1;
  int up = a0[k] < a1[k];
  /* along the direction of a: the later start and the earlier end */
  const double *bs = (b0[k] < b1[k]) == up ? b0 : b1, *be = bs == b0 ? b1 : b0;
  const double *s = up ? (bs[k] > a0[k] ? bs : a0) : (bs[k] < a0[k] ? bs : a0);
  const double *e = up ? (be[k] < a1[k] ? be : a1) : (be[k] > a1[k] ? be : a1);
  p[0] = s[0], p[1] = s[1], q[0] = e[0], q[1] = e[1];
}

/* The sign of y_a(x) - y, the height of the non-vertical segment (or line) a0-a1 at x against y:
 * +1 when the segment passes above (x, y). Exact: the orientation of (x, y) against the segment
 * directed left to right, negated. */
RDX_HD int rdx_jn_cmp_y_at_x_pt(double x, double y, const double *a0, const double *a1) {
  const double *l = a0[0] < a1[0] ? a0 : a1, *r = l == a0 ? a1 : a0;
  return -rdx_jn_orient(l[0], l[1], r[0], r[1], x, y);
}

/* rdx_jn_cmp_y_at_x's exact evaluation: V (see there) in expansions, each term a product of
 * three 2-expansions. */
RDX_HD_NOINLINE int rdx_jn_cmp_y_at_x_exact(double x, const double *la, const double *ra, const double *lb,
                                            const double *rb) {
  double p[2], q[2], da[2], s[2], w[2], db[2], h[2];
  double t2[RDX_JN_E2], t3[3][RDX_JN_E3], sc[4 * RDX_JN_E2], v12[2 * RDX_JN_E3], v[3 * RDX_JN_E3];
  rdx_jn_exp_diff(x, la[0], p);
  rdx_jn_exp_diff(ra[1], la[1], q);
  rdx_jn_exp_diff(ra[0], la[0], da);
  rdx_jn_exp_diff(x, lb[0], s);
  rdx_jn_exp_diff(rb[1], lb[1], w);
  rdx_jn_exp_diff(rb[0], lb[0], db);
  rdx_jn_exp_diff(lb[1], la[1], h);
  int n = rdx_jn_exp_mul2(2, p, q, t2, sc);
  int n1 = rdx_jn_exp_mul2(n, t2, db, t3[0], sc);
  n = rdx_jn_exp_mul2(2, h, da, t2, sc);
  int n2 = rdx_jn_exp_mul2(n, t2, db, t3[1], sc);
  n = rdx_jn_exp_mul2(2, s, w, t2, sc);
  int n3 = rdx_jn_exp_mul2(n, t2, da, t3[2], sc);
  rdx_jn_exp_negate(n2, t3[1]);
  rdx_jn_exp_negate(n3, t3[2]);
  n = rdx_jn_exp_sum(n1, t3[0], n2, t3[1], v12);
  n = rdx_jn_exp_sum(n, v12, n3, t3[2], v);
  return rdx_jn_exp_sign(n, v);
}

/* For two non-vertical segments a0-a1 and b0-b1 whose x-ranges contain x: the sign of
 * y_a(x) - y_b(x), their heights at x. Exact (only the lines matter: outside a range the sign
 * is that of the extended lines).
 * With each segment ordered left (l) to right (r), da = r_a.x - l_a.x > 0, db likewise:
 *   V = (y_a(x) - y_b(x)) da db
 *     = (x - l_a.x)(r_a.y - l_a.y) db - (l_b.y - l_a.y) da db - (x - l_b.x)(r_b.y - l_b.y) da,
 * three products of three coordinate differences, sign(V) = the answer.
 * Filter: each computed term t_i is the product of three rounded differences, two roundings
 * more, so |t_i - T_i| <= gamma_5 |T_i|; summing three terms adds gamma_2 sum |t_i| (Higham,
 * Accuracy and Stability, 2nd ed., section 3.1). With P = fl(|t1| + |t2| + |t3|) >= (1 - u)^2
 * (1 - gamma_5) sum |T_i|, the error of V is below 7u (1 + 30u) sum |T_i| <= 8u P = 2^-50 P
 * (u = 2^-53; every quantity normal in range, and the scaling by 2^-50 exact). */
RDX_HD int rdx_jn_cmp_y_at_x(double x, const double *a0, const double *a1, const double *b0, const double *b1) {
  const double *la = a0[0] < a1[0] ? a0 : a1, *ra = la == a0 ? a1 : a0;
  const double *lb = b0[0] < b1[0] ? b0 : b1, *rb = lb == b0 ? b1 : b0;
  double p = RDX_DSUB(x, la[0]), q = RDX_DSUB(ra[1], la[1]), da = RDX_DSUB(ra[0], la[0]);
  double s = RDX_DSUB(x, lb[0]), w = RDX_DSUB(rb[1], lb[1]), db = RDX_DSUB(rb[0], lb[0]);
  double h = RDX_DSUB(lb[1], la[1]);
  double t1 = RDX_DMUL(p, q);
  t1 = RDX_DMUL(t1, db);
  double t2 = RDX_DMUL(h, da);
  t2 = RDX_DMUL(t2, db);
  double t3 = RDX_DMUL(s, w);
  t3 = RDX_DMUL(t3, da);
  double v = RDX_DSUB(t1, t2);
  v = RDX_DSUB(v, t3);
  double m = RDX_DADD(fabs(t1), fabs(t2));
  m = RDX_DADD(m, fabs(t3));
  double bound = RDX_DMUL(0x1p-50, m);
  if (v > bound) return 1;
  if (-v > bound) return -1;
  if (m == 0.0) return 0; /* every term has a zero factor (a rounded difference is 0 iff exact) */
  RDX_JN_EXACT_HIT(cmp_y_at_x);
  return rdx_jn_cmp_y_at_x_exact(x, la, ra, lb, rb);
}

/* ---- the intersection point, rounded to nearest ---- */

/* A double's bits as an integer ordered like the values (-0 and +0 both map to 0). */
RDX_HD int64_t rdx_jn_f64_ord(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return (b >> 63) ? -(int64_t)(b & 0x7FFFFFFFFFFFFFFFull) : (int64_t)b;
}
RDX_HD double rdx_jn_f64_from_ord(int64_t o) {
  uint64_t b = o >= 0 ? (uint64_t)o : (0x8000000000000000ull | (uint64_t)(-o));
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}
/* 2^k for -1022 <= k <= 1023. */
RDX_HD double rdx_jn_pow2(int k) {
  uint64_t b = (uint64_t)(k + 1023) << 52;
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}
/* floor(log2 |v|) of a normal double. */
RDX_HD int rdx_jn_exponent(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return (int)((b >> 52) & 0x7FF) - 1023;
}
/* v 2^k for 0 <= k <= 2046, exact when the result is a double (two steps: 2^k may overflow). */
RDX_HD double rdx_jn_scale_up(double v, int k) {
  v = RDX_DMUL(v, rdx_jn_pow2(k / 2));
  return RDX_DMUL(v, rdx_jn_pow2(k - k / 2));
}
RDX_HD double rdx_jn_scale_down(double v, int k) {
  v = RDX_DMUL(v, rdx_jn_pow2(-(k / 2)));
  return RDX_DMUL(v, rdx_jn_pow2(-(k - k / 2)));
}

/* sign(n' - c' d) for the expansions n' (nn) and d (nd), where c' = c 2^k. t: 6 * nd + nn. */
RDX_HD int rdx_jn_quot_cmp(int nn, const double *n, int nd, const double *d, double c, int k, double *t) {
  int m = rdx_jn_exp_scale(nd, d, -rdx_jn_scale_up(c, k), t);
  int r = rdx_jn_exp_sum(nn, n, m, t, t + 2 * nd);
  return rdx_jn_exp_sign(r, t + 2 * nd);
}

/* The double nearest to n / d (ties to even) for an expansion n of degree 3 and d != 0 of degree
 * 2 (in the sense of the file comment) whose quotient is at most 2^256 in magnitude. n is
 * overwritten. t: scratch for 2 nn + 11 nd doubles (RDX_JN_DIV_SCRATCH for the largest).
 * Method: with d > 0 (signs moved to n), scale n by 2^k (k >= 0, exact) so that n' / d has
 * magnitude about 1 when the quotient is below 1; take a candidate c from the leading estimates
 * (relative error a few ulps, so a few steps of one ulp bracket the quotient); decide each step
 * by the exact sign of n' - (c 2^k) d, then the rounding by the sign of 2 n' - (lo + hi) 2^k d.
 * Every c 2^k tested has magnitude about 1 or more and 53 bits, so its products with d are
 * multiples of 2^-55 G^2, normal, and n' stays below 2^520: no expansion under- or overflows. */
#define RDX_JN_DIV_SCRATCH (2 * 3 * RDX_JN_E3 + 11 * 2 * RDX_JN_E2)
RDX_HD int rdx_jn_div_steps_(int nn, const double *n, int nd, const double *d, int k, double *c, double *t) {
  /* returns 0 when c is the quotient exactly, else leaves c = lo with lo < n/d < next_up(lo) */
  int s = rdx_jn_quot_cmp(nn, n, nd, d, *c, k, t);
  if (s == 0) return 0;
  int64_t o = rdx_jn_f64_ord(*c);
  for (int it = 0; it < 64; it++) {
    int64_t o2 = s > 0 ? o + 1 : o - 1;
    int s2 = rdx_jn_quot_cmp(nn, n, nd, d, rdx_jn_f64_from_ord(o2), k, t);
    if (s2 == 0) {
      *c = rdx_jn_f64_from_ord(o2);
      return 0;
    }
    if (s2 != s) {
      *c = rdx_jn_f64_from_ord(s > 0 ? o : o2);
      return 1;
    }
    o = o2;
  }
  *c = rdx_jn_f64_from_ord(o); /* not reached: the candidate is within a few ulps */
  return 0;
}
RDX_HD double rdx_jn_div_round(int nn, double *n, int nd, const double *d, double *t) {
  double *dp = t, *w = t + nd;
  int dneg = d[nd - 1] < 0.0;
  for (int i = 0; i < nd; i++) dp[i] = dneg ? -d[i] : d[i];
  if (dneg) rdx_jn_exp_negate(nn, n);
  if (n[nn - 1] == 0.0) return 0.0;
  double en = rdx_jn_exp_estimate(nn, n), ed = rdx_jn_exp_estimate(nd, dp);
  int k = rdx_jn_exponent(ed) - rdx_jn_exponent(en);
  if (k < 0) k = 0;
  for (int i = 0; i < nn; i++) n[i] = rdx_jn_scale_up(n[i], k);
  double c = rdx_jn_scale_down(RDX_JN_DDIV(rdx_jn_exp_estimate(nn, n), ed), k);
  if (!rdx_jn_div_steps_(nn, n, nd, dp, k, &c, w)) return c;
  /* lo = c < n/d < hi: the nearer, ties to the even one */
  int64_t o = rdx_jn_f64_ord(c);
  double hi = rdx_jn_f64_from_ord(o + 1);
  for (int i = 0; i < nn; i++) n[i] = RDX_DMUL(n[i], 2.0);
  double *a = w, *b = w + 2 * nd, *s1 = b + 2 * nd, *s2 = s1 + nn + 2 * nd;
  int na = rdx_jn_exp_scale(nd, dp, -rdx_jn_scale_up(c, k), a);
  int n1 = rdx_jn_exp_sum(nn, n, na, a, s1);
  int nb = rdx_jn_exp_scale(nd, dp, -rdx_jn_scale_up(hi, k), b);
  int n2 = rdx_jn_exp_sum(n1, s1, nb, b, s2);
  int m = rdx_jn_exp_sign(n2, s2);
  if (m == 0) {
    uint64_t bits;
    memcpy(&bits, &c, sizeof bits);
    return (bits & 1) ? hi : c;
  }
  return m < 0 ? c : hi;
}

/* The exact intersection of two lines as n / d per axis, each rounded to nearest. */
RDX_HD_NOINLINE void rdx_jn_seg_point_exact(const double *a0, const double *a1, const double *b0, const double *b1,
                                            double *x, double *y) {
  double da[2][2], db[2][2], ba[2][2], t2[RDX_JN_E2], u2[RDX_JN_E2], sc[4 * RDX_JN_E2];
  double den[2 * RDX_JN_E2], num[2 * RDX_JN_E2], n[3 * RDX_JN_E3], w[RDX_JN_DIV_SCRATCH];
  for (int k = 0; k < 2; k++) {
    rdx_jn_exp_diff(a1[k], a0[k], da[k]);
    rdx_jn_exp_diff(b1[k], b0[k], db[k]);
    rdx_jn_exp_diff(b0[k], a0[k], ba[k]);
  }
  /* den = da x db, num = (b0 - a0) x db; the point is a0 + (num / den) da */
  int m1 = rdx_jn_exp_mul2(2, da[0], db[1], t2, sc);
  int m2 = rdx_jn_exp_mul2(2, da[1], db[0], u2, sc);
  rdx_jn_exp_negate(m2, u2);
  int nden = rdx_jn_exp_sum(m1, t2, m2, u2, den);
  m1 = rdx_jn_exp_mul2(2, ba[0], db[1], t2, sc);
  m2 = rdx_jn_exp_mul2(2, ba[1], db[0], u2, sc);
  rdx_jn_exp_negate(m2, u2);
  int nnum = rdx_jn_exp_sum(m1, t2, m2, u2, num);
  for (int k = 0; k < 2; k++) {
    /* n = a0[k] den + num da[k] */
    int p = rdx_jn_exp_scale(nden, den, a0[k], w);
    int q = rdx_jn_exp_mul2(nnum, num, da[k], w + 2 * nden, w + 2 * nden + 4 * nnum);
    int nn = rdx_jn_exp_sum(p, w, q, w + 2 * nden, n);
    double v = rdx_jn_div_round(nn, n, nden, den, w);
    if (k == 0) *x = v;
    else *y = v;
  }
}

/* ---- the intersection point's fast path: double-double with a running error bound ----
 *
 * u = 2^-53, eta = 2^-1075 (the absolute error of an operation whose result is subnormal). Every
 * coordinate difference is an exact pair (head, tail), |tail| <= u |head|.
 *  - dd_mul: (xh + xl)(yh + yl) ~ ph + pl with ph + pe = xh yh exactly and pl = pe + (xh yl +
 *    xl yh); the error, xl yl plus four roundings, is at most 9 u^2 |ph| + 4 eta (24 u^2 when one
 *    tail is up to 5 u of its head, as t's is).
 *  - dd_cross: P1 - P2 with the heads subtracted exactly and the tails summed: at most
 *    21 u^2 (|P1| + |P2|) + 10 eta; bounded by 2^-100 (|p1h| + |p2h|) + 2^-1060.
 *  - t' = N' / D' of the pairs: q1 = fl(nh / dh), the remainder R = N' - q1 D' from an exact
 *    product (nh - ph is exact by Sterbenz), q2 = fl(r / dh): |q1 + q2 - t'| <= 21 u^2 |q1| +
 *    7 eta / |dh| + eta. The exact t = num / den differs from t' by at most |t'| (en / |nh| +
 *    ed / |dh|) (1 + 2^-40) when both relative bounds are below 2^-42.
 *  - the coordinate a0 + t d: m = (q1 + q2) d by dd_mul, then a0 + m by Two-Sum, one rounding
 *    of the tails (u (|xe| + |ml|)) and an exact renormalization to xh + xl.
 * Every bound below is that sum with its constant at least doubled (256 u^2 = 2^-98, 64 u^2 =
 * 2^-100, 2^-1060 for the eta terms), which also covers the roundings of computing the bound.
 * The true coordinate lies within E of xh + xl; it rounds to xh when xl + E and E - xl stay
 * below half the gaps to xh's neighbours, strictly (so no tie is decided here). Heads below
 * 2^-800 (2^-900 for quotients and coordinates) go to the exact path, which keeps every eta
 * term negligible. */

/* (xh + xl)(yh + yl) as ph + pl (see above); x, y are 2-expansions (tail, head). */
RDX_HD void rdx_jn_dd_mul(const double *x, const double *y, double *ph, double *pl) {
  double e, c1, c2, c;
  rdx_jn_two_product(x[1], y[1], ph, &e);
  c1 = RDX_DMUL(x[1], y[0]);
  c2 = RDX_DMUL(x[0], y[1]);
  c = RDX_DADD(c1, c2);
  *pl = RDX_DADD(e, c);
}

/* a d - b c of 2-expansions as h + l (normalized); returns the bound on its error. */
RDX_HD double rdx_jn_dd_cross(const double *a, const double *d, const double *b, const double *c, double *h, double *l) {
  double p1h, p1l, p2h, p2l, sh, sl, t;
  rdx_jn_dd_mul(a, d, &p1h, &p1l);
  rdx_jn_dd_mul(b, c, &p2h, &p2l);
  rdx_jn_two_diff(p1h, p2h, &sh, &sl);
  t = RDX_DADD(sl, p1l);
  t = RDX_DSUB(t, p2l);
  rdx_jn_two_sum(sh, t, h, l);
  double m = RDX_DADD(fabs(p1h), fabs(p2h));
  m = RDX_DMUL(0x1p-100, m);
  return RDX_DADD(m, 0x1p-1060);
}

/* One coordinate a0k + t dk with t ~ q1 + q2 within et: 1 and *v when the rounding is decided. */
RDX_HD int rdx_jn_seg_point_fast_axis(double a0k, const double *dk, double q1, double q2, double et, double *v) {
  if (dk[1] == 0.0) { /* the segment is parallel to the other axis: the coordinate is a0k */
    *v = a0k;
    return 1;
  }
  double mh, me, c1, c2, c, ml, xh, xe, xl;
  rdx_jn_two_product(q1, dk[1], &mh, &me);
  c1 = RDX_DMUL(q1, dk[0]);
  c2 = RDX_DMUL(q2, dk[1]);
  c = RDX_DADD(c1, c2);
  ml = RDX_DADD(me, c);
  if (!(fabs(mh) >= 0x1p-900)) return 0;
  rdx_jn_two_sum(a0k, mh, &xh, &xe);
  xl = RDX_DADD(xe, ml);
  rdx_jn_two_sum(xh, xl, &xh, &xl);
  if (!(fabs(xh) >= 0x1p-900)) return 0;
  double e1 = RDX_DMUL(1.01, fabs(dk[1]));
  e1 = RDX_DMUL(e1, et);
  double e2 = RDX_DMUL(0x1p-100, fabs(mh));
  double e3 = RDX_DADD(fabs(xe), fabs(ml));
  e3 = RDX_DMUL(0x1p-52, e3);
  double e = RDX_DADD(e1, e2);
  e = RDX_DADD(e, e3);
  e = RDX_DADD(e, 0x1p-1060);
  int64_t o = rdx_jn_f64_ord(xh);
  double up = RDX_DSUB(rdx_jn_f64_from_ord(o + 1), xh), dn = RDX_DSUB(xh, rdx_jn_f64_from_ord(o - 1));
  double hu = RDX_DMUL(up, 0.5 - 0x1p-52), hd = RDX_DMUL(dn, 0.5 - 0x1p-52); /* exact */
  if (!(RDX_DADD(xl, e) < hu && RDX_DSUB(e, xl) < hd)) return 0;
  *v = xh;
  return 1;
}

/* The crossing point of a and b by the fast path: 1 when both coordinates are decided. */
RDX_HD int rdx_jn_seg_point_fast(const double *a0, const double *a1, const double *b0, const double *b1, double *x,
                                 double *y) {
  double da[2][2], db[2][2], w[2][2], dh, dl, nh, nl;
  for (int k = 0; k < 2; k++) {
    rdx_jn_exp_diff(a1[k], a0[k], da[k]);
    rdx_jn_exp_diff(b1[k], b0[k], db[k]);
    rdx_jn_exp_diff(b0[k], a0[k], w[k]);
  }
  double ed = rdx_jn_dd_cross(da[0], db[1], da[1], db[0], &dh, &dl); /* den = da x db */
  double en = rdx_jn_dd_cross(w[0], db[1], w[1], db[0], &nh, &nl);   /* num = (b0 - a0) x db */
  double adh = fabs(dh), anh = fabs(nh);
  if (!(adh >= 0x1p-800 && anh >= 0x1p-800)) return 0;
  if (!(ed <= RDX_DMUL(0x1p-42, adh) && en <= RDX_DMUL(0x1p-42, anh))) return 0;
  double q1 = RDX_JN_DDIV(nh, dh);
  if (!(fabs(q1) >= 0x1p-900)) return 0;
  double ph, pe, r, c;
  rdx_jn_two_product(q1, dh, &ph, &pe);
  r = RDX_DSUB(nh, ph);
  r = RDX_DSUB(r, pe);
  r = RDX_DADD(r, nl);
  c = RDX_DMUL(q1, dl);
  r = RDX_DSUB(r, c);
  double q2 = RDX_JN_DDIV(r, dh);
  double rho = RDX_DADD(RDX_JN_DDIV(en, anh), RDX_JN_DDIV(ed, adh));
  double aq = fabs(q1);
  double et = RDX_DMUL(0x1p-98, aq);
  double t = RDX_JN_DDIV(0x1p-1070, adh);
  et = RDX_DADD(et, t);
  et = RDX_DADD(et, 0x1p-1070);
  t = RDX_DMUL(1.02, aq);
  t = RDX_DMUL(t, rho);
  et = RDX_DADD(et, t);
  /* a coordinate in which b does not move is b's, exactly */
  int ok = db[0][1] == 0.0 ? (*x = b0[0], 1) : rdx_jn_seg_point_fast_axis(a0[0], da[0], q1, q2, et, x);
  return ok && (db[1][1] == 0.0 ? (*y = b0[1], 1) : rdx_jn_seg_point_fast_axis(a0[1], da[1], q1, q2, et, y));
}

/* The common point of two segments that cross or touch (rdx_jn_seg_relation 1 or 2): for a touch
 * the shared endpoint, copied exactly; for a crossing, each coordinate of the exact rational point
 * a0 + t (a1 - a0), t = ((b0 - a0) x (b1 - b0)) / ((a1 - a0) x (b1 - b0)), rounded to the nearest
 * double (ties to even), so every backend writes the same bits. The double-double fast path
 * decides all but crossings within about 2^-90 of a rounding boundary (relative to the
 * coordinate) or of ill-conditioned pairs; the exact division decides those. For collinear segments that
 * touch end to end, the shared endpoint; for an overlap, the first end of the common piece (see
 * rdx_jn_overlap_ends); for disjoint segments the result means nothing. */
RDX_HD void rdx_jn_seg_point(const double *a0, const double *a1, const double *b0, const double *b1, double *x,
                             double *y) {
  int o1 = rdx_jn_orient(a0[0], a0[1], a1[0], a1[1], b0[0], b0[1]);
  int o2 = rdx_jn_orient(a0[0], a0[1], a1[0], a1[1], b1[0], b1[1]);
  const double *e = NULL;
  if (o1 == 0 && o2 == 0) {
    double p[2], q[2];
    rdx_jn_overlap_ends(a0, a1, b0, b1, p, q);
    *x = p[0], *y = p[1];
    return;
  }
  if (o1 == 0) e = b0;
  else if (o2 == 0) e = b1;
  else if (rdx_jn_orient(b0[0], b0[1], b1[0], b1[1], a0[0], a0[1]) == 0) e = a0;
  else if (rdx_jn_orient(b0[0], b0[1], b1[0], b1[1], a1[0], a1[1]) == 0) e = a1;
  if (e != NULL) {
    *x = e[0], *y = e[1];
    return;
  }
  if (rdx_jn_seg_point_fast(a0, a1, b0, b1, x, y)) return;
  RDX_JN_EXACT_HIT(seg_point);
  rdx_jn_seg_point_exact(a0, a1, b0, b1, x, y);
}

/* ---- conservative float32 bounds (RayJoin digest, section 5) ---- */

/* A float's bits as an integer ordered like the values (-0 and +0 both 0; +-inf at the ends). */
RDX_HD int32_t rdx_jn_f32_ord(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return (b >> 31) ? -(int32_t)(b & 0x7FFFFFFFu) : (int32_t)b;
}
RDX_HD float rdx_jn_f32_from_ord(int32_t o) {
  uint32_t b = o >= 0 ? (uint32_t)o : (0x80000000u | (uint32_t)(-o));
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
#define RDX_JN_F32_ORD_INF 0x7F800000 /* rdx_jn_f32_ord(+inf); -inf is its negation */

/* The largest float <= v (v finite or infinite), then `ulps` (>= 0) floats further down: the low
 * bound of a conservative box. Works through 0 and the subnormals (a positive v that rounds to
 * 0 gets 0 and then -2^-149, ...); below -FLT_MAX it is -inf, and a v above FLT_MAX gets FLT_MAX
 * first. */
RDX_HD float rdx_jn_f32_down(double v, int ulps) {
  float f = (float)v; /* round to nearest */
  int32_t o = rdx_jn_f32_ord(f);
  if ((double)f > v) o--;
  o -= ulps;
  return rdx_jn_f32_from_ord(o < -RDX_JN_F32_ORD_INF ? -RDX_JN_F32_ORD_INF : o);
}
/* The smallest float >= v, then `ulps` floats further up: the high bound. */
RDX_HD float rdx_jn_f32_up(double v, int ulps) {
  float f = (float)v;
  int32_t o = rdx_jn_f32_ord(f);
  if ((double)f < v) o++;
  o += ulps;
  return rdx_jn_f32_from_ord(o > RDX_JN_F32_ORD_INF ? RDX_JN_F32_ORD_INF : o);
}
/* The float ulp at magnitude m: the gap above the smallest float >= |m| (so at a power of two the
 * larger of its two gaps; 2^-149 for |m| at or below the subnormals, +inf beyond FLT_MAX). An
 * absolute pad of k of these covers k ulps of every float of magnitude <= |m|. */
RDX_HD float rdx_jn_ulp_f32(double m) {
  float f = rdx_jn_f32_up(fabs(m), 0);
  if (rdx_jn_f32_ord(f) >= RDX_JN_F32_ORD_INF - 1) return rdx_jn_f32_from_ord(RDX_JN_F32_ORD_INF);
  return RDX_FSUB(rdx_jn_f32_from_ord(rdx_jn_f32_ord(f) + 1), f);
}

#endif /* RDX_JOIN_EXACT_HD_H */
