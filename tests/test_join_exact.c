/*
 * test_join_exact.c: the exact predicates of src/join/exact_hd.h against an exact reference.
 *
 * The predicates are RDX_HD host code here, so every backend entry runs the same cases on the
 * host (a GPU entry still needs its backend, like every test; the device compiles the same
 * header, and the join tests check device answers against these through the engines).
 *
 * 1. The reference: exact dyadic arithmetic on 32-bit limbs written for this test (every double
 *    is m 2^e with integer m; values are signed integers times a power of two), with each
 *    predicate written from another formulation than the header's (parameters t and u of the
 *    two segments instead of four orientations; the heights as rationals with the segments'
 *    own direction; the intersection point from segment b's parameter).
 * 2. Every function against it on: random doubles over the whole range [2^-256, 2^256] and 0;
 *    Shewchuk's near-collinear grid (0.5 + k 2^-53, 0.5 + l 2^-53) against (12, 12), (24, 24)
 *    at three scales; points a few ulps off a line through two random points; segments on
 *    small integer grids scaled by powers of two (collinear overlaps, touches at endpoints,
 *    T-junctions, vertical and horizontal edges, identical and reversed segments) with the two
 *    axes at different scales, the extremes 2^-256 and 2^255 and mixes of both; rounding ties
 *    of the intersection point, and tiny intersection points.
 * 3. GEOS (when built with it): GEOSOrientationIndex against rdx_jn_orient and GEOSRelate of two
 *    LINESTRINGs against rdx_jn_seg_relation on a subset. Disagreements of GEOS with the exact
 *    reference are counted and printed, not failed: the reference is the judge.
 * 4. The float32 bound helpers on 10^6 doubles (negatives, exact floats, ties halfway between
 *    floats, values near 0 and among the subnormal floats, beyond FLT_MAX): each bound contains
 *    the value and is exactly `ulps` floats beyond the tightest bound found with nextafterf.
 * Coverage counters assert that the exact fallbacks ran (the filters cannot decide
 * everything), so a filter that decided every case by itself would be noticed.
 */
#include <float.h>
#include <math.h>

#include "check.h"

/* how often each exact evaluation ran (exact_hd.h's hook) */
static long exact_hits[3];
enum { hit_orient, hit_cmp_y_at_x, hit_seg_point };
#define RDX_JN_EXACT_HIT(what) (exact_hits[hit_##what]++)
#include "join/exact_hd.h"

#ifdef RDX_HAVE_GEOS
#include <geos_c.h>
#endif

/* ---- 1. exact dyadic numbers: (-1)^neg * sum d[i] 2^(32 i) * 2^e ---- */

#define BX_LIMBS 128
typedef struct bx {
  int neg;
  int n; /* limbs in use; d[n - 1] != 0, or n == 0 for zero */
  int e;
  uint32_t d[BX_LIMBS];
} bx;

static int bx_overflow;

static void bx_trim(bx *a) {
  while (a->n > 0 && a->d[a->n - 1] == 0) a->n--;
  if (a->n == 0) a->neg = 0;
}

static bx bx_of(double v) {
  bx r;
  memset(&r, 0, sizeof r);
  if (v == 0) return r;
  int ex;
  double f = frexp(fabs(v), &ex);
  uint64_t m = (uint64_t)ldexp(f, 53);
  r.neg = v < 0;
  r.e = ex - 53;
  r.d[0] = (uint32_t)m;
  r.d[1] = (uint32_t)(m >> 32);
  r.n = 2;
  bx_trim(&r);
  return r;
}

/* the magnitude of a shifted left by k >= 0 bits (e lowered by k) */
static bx bx_shl(const bx *a, int k) {
  bx r;
  memset(&r, 0, sizeof r);
  r.neg = a->neg;
  r.e = a->e - k;
  int w = k / 32, b = k % 32;
  if (a->n + w + 1 > BX_LIMBS) {
    bx_overflow = 1;
    return r;
  }
  for (int i = 0; i < a->n; i++) {
    uint64_t v = (uint64_t)a->d[i] << b;
    r.d[i + w] |= (uint32_t)v;
    r.d[i + w + 1] |= (uint32_t)(v >> 32);
  }
  r.n = a->n + w + 1;
  bx_trim(&r);
  return r;
}

static int bx_mag_cmp(const bx *a, const bx *b) {
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = a->n - 1; i >= 0; i--)
    if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
  return 0;
}

static bx bx_add(bx a, bx b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  int e = a.e < b.e ? a.e : b.e;
  a = bx_shl(&a, a.e - e);
  b = bx_shl(&b, b.e - e);
  bx r;
  memset(&r, 0, sizeof r);
  r.e = e;
  if (a.neg == b.neg) {
    int n = a.n > b.n ? a.n : b.n;
    uint64_t c = 0;
    for (int i = 0; i < n; i++) {
      c += (uint64_t)a.d[i] + b.d[i];
      r.d[i] = (uint32_t)c;
      c >>= 32;
    }
    if (n >= BX_LIMBS) bx_overflow = 1;
    else r.d[n] = (uint32_t)c;
    r.n = n + 1 < BX_LIMBS ? n + 1 : BX_LIMBS;
    r.neg = a.neg;
  } else {
    if (bx_mag_cmp(&a, &b) < 0) {
      bx t = a;
      a = b;
      b = t;
    }
    int64_t c = 0;
    for (int i = 0; i < a.n; i++) {
      c += (int64_t)a.d[i] - (int64_t)b.d[i];
      r.d[i] = (uint32_t)c;
      c = c < 0 ? -1 : 0;
      /* borrow: c was negative exactly when the limb wrapped */
    }
    r.n = a.n;
    r.neg = a.neg;
  }
  bx_trim(&r);
  return r;
}

static bx bx_neg(bx a) {
  if (a.n) a.neg = !a.neg;
  return a;
}
static bx bx_sub(bx a, bx b) { return bx_add(a, bx_neg(b)); }

static bx bx_mul(const bx *a, const bx *b) {
  bx r;
  memset(&r, 0, sizeof r);
  if (a->n == 0 || b->n == 0) return r;
  if (a->n + b->n > BX_LIMBS) {
    bx_overflow = 1;
    return r;
  }
  for (int i = 0; i < a->n; i++) {
    uint64_t c = 0;
    for (int j = 0; j < b->n; j++) {
      c += (uint64_t)a->d[i] * b->d[j] + r.d[i + j];
      r.d[i + j] = (uint32_t)c;
      c >>= 32;
    }
    r.d[i + b->n] = (uint32_t)c;
  }
  r.n = a->n + b->n;
  r.e = a->e + b->e;
  r.neg = a->neg != b->neg;
  bx_trim(&r);
  return r;
}
static bx bx_mul3(bx a, bx b, bx c) {
  bx t = bx_mul(&a, &b);
  return bx_mul(&t, &c);
}

static int bx_sign(const bx *a) { return a->n == 0 ? 0 : a->neg ? -1 : 1; }
static int bx_cmp(bx a, bx b) {
  bx d = bx_sub(a, b);
  return bx_sign(&d);
}
static bx bx_abs(bx a) {
  a.neg = 0;
  return a;
}
static bx bd(double a, double b) { return bx_sub(bx_of(a), bx_of(b)); }

/* the reference's own checks: a few values whose answers are known */
static void bx_selftest(void) {
  CASE(reference_selftest);
  bx a = bx_of(0x1p255), b = bx_of(0x1p-256), c = bx_add(a, b);
  CHECK_EQ(bx_cmp(c, a), 1);
  CHECK_EQ(bx_cmp(bx_sub(c, a), b), 0);
  bx p = bx_mul3(bx_of(3.0), bx_of(-0.5), bx_of(0x1p-1000));
  CHECK_EQ(bx_cmp(p, bx_of(-1.5 * 0x1p-1000)), 0);
  CHECK_EQ(bx_sign(&p), -1);
  bx q = bx_mul3(bx_of(0x1.fffffffffffffp255), bx_of(0x1.fffffffffffffp255), bx_of(-0x1p-308));
  bx qq = bx_mul(&q, &q);
  CHECK_EQ(bx_sign(&qq), 1);
  CHECK_EQ(bx_cmp(bx_sub(bx_of(1.0), bx_of(0x1p-60)), bx_of(1.0)), -1);
  CHECK(!bx_overflow);
}

/* ---- reference predicates, each from its own formulation ---- */

static int ref_orient(const double *a, const double *b, const double *c) {
  bx l = bx_mul3(bd(b[0], a[0]), bd(c[1], a[1]), bx_of(1.0));
  bx r = bx_mul3(bd(b[1], a[1]), bd(c[0], a[0]), bx_of(1.0));
  return bx_cmp(l, r);
}

/* cross(p, q) of two difference vectors */
static bx ref_cross(bx px, bx py, bx qx, bx qy) {
  bx l = bx_mul(&px, &qy), r = bx_mul(&py, &qx);
  return bx_sub(l, r);
}

/* Segments a0 + t da and b0 + u db meet where t = cross(b0 - a0, db) / den and
 * u = cross(b0 - a0, da) / den, den = cross(da, db); parallel ones are compared along a. */
static int ref_relation(const double *a0, const double *a1, const double *b0, const double *b1) {
  bx dax = bd(a1[0], a0[0]), day = bd(a1[1], a0[1]), dbx = bd(b1[0], b0[0]), dby = bd(b1[1], b0[1]);
  bx wx = bd(b0[0], a0[0]), wy = bd(b0[1], a0[1]);
  bx den = ref_cross(dax, day, dbx, dby);
  if (bx_sign(&den) != 0) {
    bx tn = ref_cross(wx, wy, dbx, dby), un = ref_cross(wx, wy, dax, day);
    if (den.neg) tn = bx_neg(tn), un = bx_neg(un), den = bx_neg(den);
    /* 0 <= t <= 1 and 0 <= u <= 1 */
    int t0 = bx_sign(&tn), t1 = bx_cmp(tn, den), u0 = bx_sign(&un), u1 = bx_cmp(un, den);
    if (t0 < 0 || t1 > 0 || u0 < 0 || u1 > 0) return RDX_JN_DISJOINT;
    return (t0 > 0 && t1 < 0 && u0 > 0 && u1 < 0) ? RDX_JN_CROSS : RDX_JN_TOUCH;
  }
  bx side = ref_cross(wx, wy, dax, day);
  if (bx_sign(&side) != 0) return RDX_JN_DISJOINT; /* parallel, apart */
  /* b's ends along a: s = dot(b - a0, da), a spans [0, dot(da, da)] */
  bx aa = bx_add(bx_mul(&dax, &dax), bx_mul(&day, &day));
  bx w1x = bd(b1[0], a0[0]), w1y = bd(b1[1], a0[1]);
  bx s0 = bx_add(bx_mul(&wx, &dax), bx_mul(&wy, &day));
  bx s1 = bx_add(bx_mul(&w1x, &dax), bx_mul(&w1y, &day));
  bx lo = bx_cmp(s0, s1) < 0 ? s0 : s1, hi = bx_cmp(s0, s1) < 0 ? s1 : s0;
  bx zero = bx_of(0.0);
  if (bx_cmp(lo, zero) < 0) lo = zero;
  if (bx_cmp(hi, aa) > 0) hi = aa;
  int c = bx_cmp(lo, hi);
  return c < 0 ? RDX_JN_OVERLAP : c == 0 ? RDX_JN_TOUCH : RDX_JN_DISJOINT;
}

static int ref_on_segment(const double *p, const double *a, const double *b) {
  bx dx = bd(b[0], a[0]), dy = bd(b[1], a[1]), px = bd(p[0], a[0]), py = bd(p[1], a[1]);
  bx c = ref_cross(dx, dy, px, py);
  if (bx_sign(&c) != 0) return 0;
  bx dot = bx_add(bx_mul(&px, &dx), bx_mul(&py, &dy)), len = bx_add(bx_mul(&dx, &dx), bx_mul(&dy, &dy));
  return bx_sign(&dot) >= 0 && bx_cmp(dot, len) <= 0;
}

/* y_a(x) = n / d with d = a1.x - a0.x, n = a0.y d + (x - a0.x)(a1.y - a0.y), a as given */
static void ref_height(double x, const double *a0, const double *a1, bx *n, bx *d) {
  *d = bd(a1[0], a0[0]);
  bx ay = bx_of(a0[1]);
  bx t = bx_mul(&ay, d);
  *n = bx_add(t, bx_mul3(bd(x, a0[0]), bd(a1[1], a0[1]), bx_of(1.0)));
}
static int ref_cmp_y_at_x(double x, const double *a0, const double *a1, const double *b0, const double *b1) {
  bx na, da, nb, db;
  ref_height(x, a0, a1, &na, &da);
  ref_height(x, b0, b1, &nb, &db);
  bx v = bx_sub(bx_mul(&na, &db), bx_mul(&nb, &da)), dd = bx_mul(&da, &db);
  return bx_sign(&v) * bx_sign(&dd);
}
static int ref_cmp_y_at_x_pt(double x, double y, const double *a0, const double *a1) {
  bx n, d;
  ref_height(x, a0, a1, &n, &d);
  bx yd = bx_mul3(bx_of(y), d, bx_of(1.0));
  bx v = bx_sub(n, yd);
  return bx_sign(&v) * bx_sign(&d);
}

/* The common point of crossing or touching segments as X_k = N_k / D per axis, from b's
 * parameter u = cross(b0 - a0, da) / cross(da, db): X = b0 + u db. Returns 0 for parallel. */
static int ref_point(const double *a0, const double *a1, const double *b0, const double *b1, bx *nk, bx *d) {
  bx dax = bd(a1[0], a0[0]), day = bd(a1[1], a0[1]), dbx = bd(b1[0], b0[0]), dby = bd(b1[1], b0[1]);
  bx wx = bd(b0[0], a0[0]), wy = bd(b0[1], a0[1]);
  *d = ref_cross(dax, day, dbx, dby);
  if (bx_sign(d) == 0) return 0;
  bx un = ref_cross(wx, wy, dax, day);
  for (int k = 0; k < 2; k++) {
    bx b0k = bx_of(b0[k]), dbk = k ? dby : dbx;
    nk[k] = bx_add(bx_mul(&b0k, d), bx_mul(&un, &dbk));
  }
  return 1;
}

static double next_up(double v) { return nextafter(v, INFINITY); }
static double next_down(double v) { return nextafter(v, -INFINITY); }

/* 1 when v is the double nearest to n / d, ties to even */
static int ref_is_nearest(double v, bx n, bx d) {
  bx e0 = bx_abs(bx_sub(n, bx_mul3(bx_of(v), d, bx_of(1.0))));
  bx eu = bx_abs(bx_sub(n, bx_mul3(bx_of(next_up(v)), d, bx_of(1.0))));
  bx ed = bx_abs(bx_sub(n, bx_mul3(bx_of(next_down(v)), d, bx_of(1.0))));
  int cu = bx_cmp(e0, eu), cd = bx_cmp(e0, ed);
  if (cu > 0 || cd > 0) return 0;
  if (cu == 0 || cd == 0) { /* a tie: v must be the even one */
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (bits & 1) == 0;
  }
  return 1;
}

/* ---- 2. the predicates against the reference ---- */

/* 1 when every coordinate is 0 or of magnitude in [2^-256, 2^256], the predicates' domain;
 * generated cases outside it are skipped (and counted) */
static long skipped;
static int in_range(int n, const double *const *p) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) {
      double a = fabs(p[i][k]);
      if (a != 0 && (a < RDX_JN_COORD_MIN || a > RDX_JN_COORD_MAX)) return skipped++, 0;
    }
  return 1;
}

static struct {
  long orient, relation[4], on_segment, cmp_pt, cmp, point, point_tiny, point_ties;
} counts;

static void check_orient(const double *a, const double *b, const double *c) {
  if (!in_range(3, (const double *const[]){a, b, c})) return;
  int got = rdx_jn_orient(a[0], a[1], b[0], b[1], c[0], c[1]), want = ref_orient(a, b, c);
  if (got != want)
    CHECK_FAIL_("orient(%a %a, %a %a, %a %a) = %d, exact %d", a[0], a[1], b[0], b[1], c[0], c[1], got, want);
  counts.orient++;
}

static void check_point(const double *a0, const double *a1, const double *b0, const double *b1, int rel) {
  double x, y;
  rdx_jn_seg_point(a0, a1, b0, b1, &x, &y);
  bx n[2], d;
  if (!ref_point(a0, a1, b0, b1, n, &d)) { /* collinear touch: the shared endpoint */
    double p[2], q[2];
    rdx_jn_overlap_ends(a0, a1, b0, b1, p, q);
    if (rel == RDX_JN_TOUCH && !(p[0] == q[0] && p[1] == q[1]))
      CHECK_FAIL_("collinear touch: overlap ends (%a %a), (%a %a) differ", p[0], p[1], q[0], q[1]);
    int shared = (x == a0[0] && y == a0[1]) || (x == a1[0] && y == a1[1]);
    shared = shared && ((x == b0[0] && y == b0[1]) || (x == b1[0] && y == b1[1]));
    if (rel == RDX_JN_TOUCH && !shared) CHECK_FAIL_("collinear touch at (%a %a): not a shared endpoint", x, y);
    counts.point++;
    return;
  }
  double v[2] = {x, y};
  for (int k = 0; k < 2; k++) {
    if (!ref_is_nearest(v[k], n[k], d))
      CHECK_FAIL_("seg_point((%a %a)-(%a %a), (%a %a)-(%a %a)) axis %d = %a: not the nearest double", a0[0], a0[1],
                  a1[0], a1[1], b0[0], b0[1], b1[0], b1[1], k, v[k]);
    if (v[k] != 0 && fabs(v[k]) < 0x1p-900) counts.point_tiny++;
  }
  counts.point++;
}

/* every function on the segments a and b (and the points involved) */
static void check_pair(const double *a0, const double *a1, const double *b0, const double *b1) {
  if ((a0[0] == a1[0] && a0[1] == a1[1]) || (b0[0] == b1[0] && b0[1] == b1[1])) return;
  if (!in_range(4, (const double *const[]){a0, a1, b0, b1})) return;
  check_orient(a0, a1, b0);
  check_orient(a0, a1, b1);
  check_orient(b0, b1, a0);
  int got = rdx_jn_seg_relation(a0, a1, b0, b1), want = ref_relation(a0, a1, b0, b1);
  if (got != want)
    CHECK_FAIL_("seg_relation((%a %a)-(%a %a), (%a %a)-(%a %a)) = %d, exact %d", a0[0], a0[1], a1[0], a1[1], b0[0],
                b0[1], b1[0], b1[1], got, want);
  counts.relation[want]++;
  int sym = rdx_jn_seg_relation(b1, b0, a0, a1);
  if (sym != got) CHECK_FAIL_("seg_relation not symmetric: %d, swapped and reversed %d", got, sym);
  const double *ps[2] = {b0, b1};
  for (int i = 0; i < 2; i++) {
    int g = rdx_jn_on_segment(ps[i], a0, a1), w = ref_on_segment(ps[i], a0, a1);
    if (g != w) CHECK_FAIL_("on_segment((%a %a), (%a %a)-(%a %a)) = %d, exact %d", ps[i][0], ps[i][1], a0[0], a0[1], a1[0], a1[1], g, w);
    counts.on_segment++;
  }
  if (a0[0] != a1[0]) {
    int g = rdx_jn_cmp_y_at_x_pt(b0[0], b0[1], a0, a1), w = ref_cmp_y_at_x_pt(b0[0], b0[1], a0, a1);
    if (g != w) CHECK_FAIL_("cmp_y_at_x_pt(%a, %a, (%a %a)-(%a %a)) = %d, exact %d", b0[0], b0[1], a0[0], a0[1], a1[0], a1[1], g, w);
    counts.cmp_pt++;
  }
  if (a0[0] != a1[0] && b0[0] != b1[0]) {
    /* x in both ranges: an endpoint's x if one lies in the other range */
    double lo = fmax(fmin(a0[0], a1[0]), fmin(b0[0], b1[0])), hi = fmin(fmax(a0[0], a1[0]), fmax(b0[0], b1[0]));
    if (lo <= hi) {
      double xs[3] = {lo, hi, lo + (hi - lo) * 0.5};
      for (int i = 0; i < 3; i++) {
        if (!(xs[i] >= lo && xs[i] <= hi) || !in_range(1, (const double *const[]){(double[]){xs[i], 0}})) continue;
        int g = rdx_jn_cmp_y_at_x(xs[i], a0, a1, b0, b1), w = ref_cmp_y_at_x(xs[i], a0, a1, b0, b1);
        if (g != w)
          CHECK_FAIL_("cmp_y_at_x(%a, (%a %a)-(%a %a), (%a %a)-(%a %a)) = %d, exact %d", xs[i], a0[0], a0[1], a1[0],
                      a1[1], b0[0], b0[1], b1[0], b1[1], g, w);
        counts.cmp++;
      }
    }
  }
  if (want == RDX_JN_CROSS || want == RDX_JN_TOUCH) check_point(a0, a1, b0, b1, want);
}

/* a random double in [2^lo, 2^hi) in magnitude, random sign, random mantissa */
static double rnd_mag(int lo, int hi) {
  double m = 1.0 + (double)(check_rand_() >> 12) * 0x1p-52;
  return (check_below(2) ? -1 : 1) * ldexp(m, lo + (int)check_below((uint64_t)(hi - lo)));
}
/* a random coordinate of the whole range, 0 now and then */
static double rnd_coord(void) { return check_below(16) == 0 ? 0.0 : rnd_mag(-256, 256); }
static double step_ulps(double v, int k) {
  for (; k > 0; k--) v = next_up(v);
  for (; k < 0; k++) v = next_down(v);
  return v;
}

static void case_random_wide(void) {
  CASE(exact_random_wide);
  for (int i = 0; i < 20000; i++) {
    double p[4][2];
    int mode = (int)check_below(3);
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 2; k++)
        /* whole range; or one random scale shared by all points, so segments meet often */
        p[j][k] = mode == 0 ? rnd_coord() : mode == 1 ? rnd_mag(i % 500 - 250, i % 500 - 248) : rnd_mag(-3, 3);
    check_pair(p[0], p[1], p[2], p[3]);
  }
}

static void case_shewchuk(void) {
  CASE(exact_shewchuk_near_collinear);
  const int scales[3] = {-250, 0, 200};
  for (int s = 0; s < 3; s++) {
    double f = ldexp(1.0, scales[s]);
    double a[2] = {12 * f, 12 * f}, b[2] = {24 * f, 24 * f};
    int zero = 0;
    for (int k = 0; k < 256; k++)
      for (int l = 0; l < 256; l++) {
        double c[2] = {(0.5 + k * 0x1p-53) * f, (0.5 + l * 0x1p-53) * f};
        check_orient(a, b, c);
        check_orient(c, a, b);
        zero += ref_orient(a, b, c) == 0;
        if ((k & 15) == 0 && (l & 15) == 0) {
          double d[2] = {c[0] + 0.25 * f, c[1]};
          check_pair(a, b, c, d); /* near-collinear segments */
        }
      }
    CHECK(zero > 0); /* the diagonal k = l is exactly collinear */
  }
  CASE(exact_near_line);
  for (int i = 0; i < 20000; i++) {
    int lo = (int)check_below(480) - 250;
    double a[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)}, b[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)};
    if (a[0] == b[0] && a[1] == b[1]) continue;
    double t = (double)check_below(1u << 20) * 0x1p-20 * (check_below(4) ? 1.0 : 3.0) - (check_below(4) ? 0.0 : 1.0);
    double c[2] = {a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])};
    c[0] = step_ulps(c[0], (int)check_below(5) - 2);
    c[1] = step_ulps(c[1], (int)check_below(5) - 2);
    check_orient(a, b, c);
    double d[2] = {step_ulps(a[0], (int)check_below(3) - 1), a[1]};
    check_pair(a, b, c, d);
    check_pair(c, d, a, b);
  }
}

/* Segments with integer coordinates in [-r, r] times 2^sx (x) and 2^sy (y): every degenerate
 * configuration appears often; an affine scaling keeps incidences, so the answers are those of
 * the integer grid at every scale. */
static void grid_pairs(int r, int sx, int sy, int n) {
  for (int i = 0; i < n; i++) {
    double p[4][2];
    for (int j = 0; j < 4; j++) {
      p[j][0] = ldexp((double)((int)check_below((uint64_t)(2 * r + 1)) - r), sx);
      p[j][1] = ldexp((double)((int)check_below((uint64_t)(2 * r + 1)) - r), sy);
    }
    int form = (int)check_below(8);
    if (form == 0) memcpy(p[2], p[0], sizeof p[0]), memcpy(p[3], p[1], sizeof p[0]);       /* identical */
    if (form == 1) memcpy(p[2], p[1], sizeof p[0]), memcpy(p[3], p[0], sizeof p[0]);       /* reversed */
    if (form == 2) memcpy(p[2], p[1], sizeof p[0]);                                        /* chained */
    if (form == 3) p[1][0] = p[0][0];                                                      /* vertical */
    if (form == 4) p[1][1] = p[0][1], p[3][1] = p[2][1];                                   /* horizontal */
    if (form == 5) { /* a T-junction or a point on a: b0 at a grid point of a */
      int64_t dx = (int64_t)ldexp(p[1][0] - p[0][0], -sx), dy = (int64_t)ldexp(p[1][1] - p[0][1], -sy);
      p[2][0] = p[0][0] + ldexp((double)dx, sx - 1), p[2][1] = p[0][1] + ldexp((double)dy, sy - 1);
    }
    check_pair(p[0], p[1], p[2], p[3]);
  }
}

static void case_grids(void) {
  CASE(exact_grid_degenerate);
  const int sc[][2] = {{0, 0}, {-256, -256}, {250, 250}, {-256, 250}, {250, -256}, {-100, 37}};
  for (size_t s = 0; s < sizeof sc / sizeof sc[0]; s++) {
    grid_pairs(2, sc[s][0], sc[s][1], 6000);
    grid_pairs(6, sc[s][0], sc[s][1], 4000);
  }
  CASE(exact_extremes);
  /* coordinates from {0, +-k 2^-256, +-k 2^255 (1 - 2^-52 j)}: both ends of the range at once */
  for (int i = 0; i < 20000; i++) {
    double p[4][2];
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 2; k++) {
        uint64_t w = check_below(5);
        double m = (double)(1 + check_below(3));
        p[j][k] = w == 0 ? 0.0 : w < 3 ? ldexp(m, -256) * (w == 1 ? 1 : -1) : ldexp(1.0 - 0x1p-52 * (double)check_below(3), 255) * (w == 3 ? m / 4 : -m / 4);
      }
    check_pair(p[0], p[1], p[2], p[3]);
  }
}

static void case_points(void) {
  CASE(exact_point_ties);
  /* the crossing of a horizontal and a steep segment lies at x = x0 + (x1 - x0) / 2, a midpoint
   * between adjacent doubles: ties go to the even one */
  for (int e = -250; e <= 250; e += 10) {
    for (int odd = 0; odd < 2; odd++) {
      double x0 = ldexp(1.0 + odd * 0x1p-52, e), x1 = next_up(x0);
      double a0[2] = {x0, -1}, a1[2] = {x1, 1}, b0[2] = {-ldexp(1.0, e + 1), 0}, b1[2] = {ldexp(1.0, e + 1), 0};
      double x, y;
      rdx_jn_seg_point(a0, a1, b0, b1, &x, &y);
      double want = odd ? x1 : x0; /* 1 + 2^-52 is odd, so x1 = 1 + 2^-51 wins */
      if (x != want || y != 0) CHECK_FAIL_("tie at 2^%d: got %a, want %a", e, x, want);
      check_pair(a0, a1, b0, b1);
      counts.point_ties++;
    }
  }
  CASE(exact_point_near_ties);
  /* the same crossings moved off the midpoint by 2^-k of the gap: the fast path decides the
   * far ones and must leave the near ones (k >= ~45) to the exact division; all must round right */
  long fell_back = exact_hits[hit_seg_point];
  for (int e = -250; e <= 250; e += 25)
    for (int k = 20; k <= 52; k++)
      for (int side = 0; side < 2; side++) {
        double x0 = ldexp(1.0 + (double)(k & 3) * 0x1p-52, e), x1 = next_up(x0);
        double a0[2] = {x0, side ? -1.0 - ldexp(1.0, -k) : -1.0}, a1[2] = {x1, side ? 1.0 : 1.0 + ldexp(1.0, -k)};
        double b0[2] = {-ldexp(1.0, e + 1), 0}, b1[2] = {ldexp(1.0, e + 1), 0};
        double x, y;
        rdx_jn_seg_point(a0, a1, b0, b1, &x, &y);
        double want = side ? x1 : x0; /* just above the midpoint, or just below */
        if (x != want || y != 0) CHECK_FAIL_("near tie 2^-%d at 2^%d side %d: got %a, want %a", k, e, side, x, want);
        check_point(a0, a1, b0, b1, RDX_JN_CROSS);
      }
  fell_back = exact_hits[hit_seg_point] - fell_back;
  printf("near ties: %ld of %d crossings (2 each) went to the exact division\n", fell_back / 2, 21 * 33 * 2);
  CHECK(fell_back > 0 && fell_back < 2 * 21 * 33 * 2);
  CASE(exact_point_tiny);
  /* crossings near the origin of segments spanning many binades: the quotient is tiny */
  for (int i = 0; i < 20000; i++) {
    int e = (int)check_below(200) + 50;
    double s = ldexp(1.0, -256), L = ldexp(1.0, e);
    double a0[2] = {-s * (double)(1 + check_below(4)), -s * (double)(1 + check_below(4))};
    double a1[2] = {s * (double)(1 + check_below(4)), L * (double)(1 + check_below(4))};
    double b0[2] = {-L, step_ulps(0x1p-256, (int)check_below(3))}, b1[2] = {L, -s * (double)check_below(3)};
    check_pair(a0, a1, b0, b1);
    double c0[2] = {a0[1], a0[0]}, c1[2] = {a1[1], a1[0]}, d0[2] = {b0[1], b0[0]}, d1[2] = {b1[1], b1[0]};
    check_pair(c0, c1, d0, d1);
  }
}

/* rdx_jn_div_round directly, on quotients of a degree-3 by a degree-2 expansion (sums of
 * products of in-range doubles) from 2^250 down to below the subnormals, where geometry
 * rarely takes them. */
static int prod_exp(int k, const double *f, double *e) {
  double t[8];
  int n = 1;
  e[0] = f[0];
  for (int i = 1; i < k; i++) {
    n = rdx_jn_exp_scale(n, e, f[i], t);
    memcpy(e, t, (size_t)n * sizeof *e);
  }
  return n;
}
static void case_div_round(void) {
  CASE(exact_div_round);
  long sub = 0, zero = 0;
  for (int i = 0; i < 30000; i++) {
    int en = (int)check_below(500) - 256, ed = (int)check_below(500) - 256; /* factor scales */
    double n[3 * RDX_JN_E3], d[2 * RDX_JN_E2], t[3 * RDX_JN_E3], w[RDX_JN_DIV_SCRATCH], f[3];
    bx nb = bx_of(0.0), db = bx_of(0.0);
    int nn = 1, nd = 1;
    n[0] = d[0] = 0.0;
    for (int term = 0; term < 3; term++) {
      /* the first terms set the quotient's scale; later ones may come from anywhere, so that
       * an expansion can hold huge and tiny components at once */
      if (term > 0 && check_below(4) == 0) en = (int)check_below(500) - 256, ed = (int)check_below(500) - 256;
      for (int j = 0; j < 3; j++) f[j] = rnd_mag(en, en + 4);
      double p[4];
      int np = prod_exp(3, f, p);
      nn = rdx_jn_exp_sum(nn, n, np, p, t);
      memcpy(n, t, (size_t)nn * sizeof *n);
      nb = bx_add(nb, bx_mul3(bx_of(f[0]), bx_of(f[1]), bx_of(f[2])));
      if (term == 2) continue;
      for (int j = 0; j < 2; j++) f[j] = rnd_mag(ed, ed + 4);
      np = prod_exp(2, f, p);
      nd = rdx_jn_exp_sum(nd, d, np, p, t);
      memcpy(d, t, (size_t)nd * sizeof *d);
      db = bx_add(db, bx_mul3(bx_of(f[0]), bx_of(f[1]), bx_of(1.0)));
    }
    /* the quotient's magnitude at most 2^250 (rdx_jn_div_round's domain) */
    bx big = bx_mul3(db, bx_of(0x1p250), bx_of(1.0));
    if (bx_sign(&db) == 0 || bx_cmp(bx_abs(nb), bx_abs(big)) > 0) continue;
    double q = rdx_jn_div_round(nn, n, nd, d, w);
    if (!ref_is_nearest(q, nb, db)) CHECK_FAIL_("div_round: %a is not the nearest double (scales %d, %d)", q, en, ed);
    sub += q != 0 && fabs(q) < DBL_MIN;
    zero += q == 0 && bx_sign(&nb) != 0;
  }
  printf("div_round: %ld subnormal quotients, %ld nonzero ones rounded to 0\n", sub, zero);
  CHECK(sub > 100 && zero > 100);
  /* n / d just off a midpoint m between adjacent doubles lo < hi: n = m 2^e and d = 2^e +- 2^-600,
   * so only d's tiny component decides; at the subnormals its product with the quotient is far
   * below 2^-1074 unless the division scales first */
  for (int e = 160; e <= 510; e += 50)
    for (int j = 0; j < 8; j++) {
      double lo = j < 4 ? ldexp((double)(1 + 2 * j), -1074) : ldexp(1.0 + (double)j * 0x1p-52, -1022 + 40 * j);
      double hi = next_up(lo);
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        /* n = (lo + hi) / 2 * 2^e, two components: the half ulp needs a bit below lo's */
        double n[2] = {ldexp(hi - lo, e - 1), ldexp(lo, e)}, d[2] = {sgn * 0x1p-600, ldexp(1.0, e)};
        double w[RDX_JN_DIV_SCRATCH], nc[2] = {n[0], n[1]};
        double q = rdx_jn_div_round(2, nc, 2, d, w), want = sgn > 0 ? lo : hi;
        if (q != want) CHECK_FAIL_("div_round((%a + %a) / (2^%d %+d 2^-600)) = %a, want %a", n[1], n[0], e, sgn, q, want);
        bx db = bx_add(bx_of(d[1]), bx_of(d[0]));
        CHECK(ref_is_nearest(want, bx_add(bx_of(n[0]), bx_of(n[1])), db));
      }
    }
}

/* ---- 3. GEOS ---- */

#ifdef RDX_HAVE_GEOS
static GEOSContextHandle_t g_geos;

static GEOSGeometry *geos_line(const double *p, const double *q) {
  GEOSCoordSequence *s = GEOSCoordSeq_create_r(g_geos, 2, 2);
  GEOSCoordSeq_setXY_r(g_geos, s, 0, p[0], p[1]);
  GEOSCoordSeq_setXY_r(g_geos, s, 1, q[0], q[1]);
  return GEOSGeom_createLineString_r(g_geos, s);
}

/* the relation GEOS sees: II of the DE-9IM tells overlap (1) and crossing (0), else touch or
 * disjoint by GEOSIntersects */
static int geos_relation(const double *a0, const double *a1, const double *b0, const double *b1) {
  GEOSGeometry *a = geos_line(a0, a1), *b = geos_line(b0, b1);
  char *m = GEOSRelate_r(g_geos, a, b);
  int r = m[0] == '1' ? RDX_JN_OVERLAP : m[0] == '0' ? RDX_JN_CROSS : GEOSIntersects_r(g_geos, a, b) == 1 ? RDX_JN_TOUCH : RDX_JN_DISJOINT;
  GEOSFree_r(g_geos, m);
  GEOSGeom_destroy_r(g_geos, a);
  GEOSGeom_destroy_r(g_geos, b);
  return r;
}

static struct {
  long orient, orient_wrong, rel, rel_wrong, ours_wrong, intersects_wrong, confusion[4][4];
} gcounts;

static void geos_pair(const double *a0, const double *a1, const double *b0, const double *b1, int print) {
  if ((a0[0] == a1[0] && a0[1] == a1[1]) || (b0[0] == b1[0] && b0[1] == b1[1])) return;
  if (!in_range(4, (const double *const[]){a0, a1, b0, b1})) return;
  int want = ref_relation(a0, a1, b0, b1), g = geos_relation(a0, a1, b0, b1);
  gcounts.rel++;
  gcounts.confusion[g][want]++;
  gcounts.intersects_wrong += (g == RDX_JN_DISJOINT) != (want == RDX_JN_DISJOINT);
  if (g != want && gcounts.rel_wrong++ < print)
    printf("  GEOS relation %d, exact %d: (%a %a)-(%a %a), (%a %a)-(%a %a)\n", g, want, a0[0], a0[1], a1[0], a1[1],
           b0[0], b0[1], b1[0], b1[1]);
  if (rdx_jn_seg_relation(a0, a1, b0, b1) != want) gcounts.ours_wrong++;
}
static void geos_orient(const double *a, const double *b, const double *c, int print) {
  if (!in_range(3, (const double *const[]){a, b, c})) return;
  int want = ref_orient(a, b, c), g = GEOSOrientationIndex_r(g_geos, a[0], a[1], b[0], b[1], c[0], c[1]);
  gcounts.orient++;
  if (g != want && gcounts.orient_wrong++ < print)
    printf("  GEOS orientation %d, exact %d: (%a %a), (%a %a), (%a %a)\n", g, want, a[0], a[1], b[0], b[1], c[0], c[1]);
  if (rdx_jn_orient(a[0], a[1], b[0], b[1], c[0], c[1]) != want) gcounts.ours_wrong++;
}

static void case_geos(void) {
  CASE(exact_geos);
  g_geos = GEOS_init_r();
  printf("GEOS %s\n", GEOSversion());
  /* orientation: Shewchuk's grid at scale 1, near-line points, the whole range */
  double a[2] = {12, 12}, b[2] = {24, 24};
  for (int k = 0; k < 256; k += 3)
    for (int l = 0; l < 256; l += 3) {
      double c[2] = {0.5 + k * 0x1p-53, 0.5 + l * 0x1p-53};
      geos_orient(a, b, c, 5);
    }
  for (int i = 0; i < 20000; i++) {
    int lo = (int)check_below(480) - 250;
    double p[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)}, q[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)};
    double t = (double)check_below(1u << 20) * 0x1p-20;
    double c[2] = {step_ulps(p[0] + t * (q[0] - p[0]), (int)check_below(3) - 1), step_ulps(p[1] + t * (q[1] - p[1]), (int)check_below(3) - 1)};
    geos_orient(p, q, c, 5);
    double r[3][2];
    for (int j = 0; j < 3; j++) r[j][0] = rnd_coord(), r[j][1] = rnd_coord();
    geos_orient(r[0], r[1], r[2], 5);
  }
  long ow = gcounts.orient_wrong;
  printf("GEOSOrientationIndex: %ld of %ld differ from the exact orientation\n", ow, gcounts.orient);
  /* relations: integer grids (several scales), near-collinear pairs, the whole range */
  for (int s = 0; s < 3; s++) {
    int sx = (int[]){0, -256, 250}[s], sy = (int[]){0, -256, -256}[s];
    for (int i = 0; i < 4000; i++) {
      double p[4][2];
      for (int j = 0; j < 4; j++)
        p[j][0] = ldexp((double)((int)check_below(5) - 2), sx), p[j][1] = ldexp((double)((int)check_below(5) - 2), sy);
      geos_pair(p[0], p[1], p[2], p[3], 5);
    }
  }
  long grid_wrong = gcounts.rel_wrong;
  for (int i = 0; i < 8000; i++) {
    int lo = (int)check_below(480) - 250;
    double p[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)}, q[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)};
    double t = (double)check_below(1u << 20) * 0x1p-20;
    double c[2] = {step_ulps(p[0] + t * (q[0] - p[0]), (int)check_below(3) - 1), step_ulps(p[1] + t * (q[1] - p[1]), (int)check_below(3) - 1)};
    double d[2] = {rnd_mag(lo, lo + 20), rnd_mag(lo, lo + 20)};
    geos_pair(p, q, c, d, 5);
    double r[4][2];
    for (int j = 0; j < 4; j++) r[j][0] = rnd_mag(-3, 3), r[j][1] = rnd_mag(-3, 3);
    geos_pair(r[0], r[1], r[2], r[3], 5);
  }
  printf("GEOSRelate of two LINESTRINGs: %ld of %ld relations differ from the exact one (%ld on integer grids)\n",
         gcounts.rel_wrong, gcounts.rel, grid_wrong);
  printf("  of them %ld on whether the segments meet at all (GEOSIntersects); GEOS x exact:\n", gcounts.intersects_wrong);
  for (int g = 0; g < 4; g++)
    printf("    GEOS %d: %8ld %8ld %8ld %8ld\n", g, gcounts.confusion[g][0], gcounts.confusion[g][1], gcounts.confusion[g][2],
           gcounts.confusion[g][3]);
  CHECK_EQ(gcounts.ours_wrong, 0);
  GEOS_finish_r(g_geos);
}
#endif

/* ---- 4. float32 bounds ---- */

static int32_t f32_bits(float f) {
  int32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}
/* same float, with -0 and +0 the same */
static int f32_same(float a, float b) { return a == b ? 1 : f32_bits(a) == f32_bits(b); }

static double rnd_f32_case(void) {
  switch (check_below(8)) {
  case 0: return (double)(float)rnd_mag(-160, 140);                       /* an exact float (or inf) */
  case 1: {                                                             /* halfway between floats */
    float f = (float)rnd_mag(-149, 127);
    if (isinf(f)) return 0x1p127;
    return ((double)f + (double)nextafterf(f, INFINITY)) * 0.5;
  }
  case 2: return rnd_mag(-1074, -140);                                  /* rounds to 0 or tiny */
  case 3: return rnd_mag(-150, -126);                                   /* among the subnormals */
  case 4: return rnd_mag(126, 135);                                     /* around FLT_MAX */
  case 5: return check_below(2) ? 0.0 : -0.0;
  default: return rnd_mag(-40, 40);
  }
}

static void case_f32(void) {
  CASE(exact_f32_bounds);
  long wrong = 0;
  for (int i = 0; i < 1000000; i++) {
    double v = rnd_f32_case();
    int ulps = (int)check_below(5);
    /* the tightest bounds, by rounding and nextafterf */
    float d = (float)v, u = (float)v;
    if ((double)d > v) d = nextafterf(d, -INFINITY);
    if ((double)u < v) u = nextafterf(u, INFINITY);
    float dw = d, uw = u;
    for (int k = 0; k < ulps; k++) dw = nextafterf(dw, -INFINITY), uw = nextafterf(uw, INFINITY);
    float gd = rdx_jn_f32_down(v, ulps), gu = rdx_jn_f32_up(v, ulps);
    if (!((double)gd <= v && v <= (double)gu) || !f32_same(gd, dw) || !f32_same(gu, uw)) {
      if (wrong++ < 10)
        CHECK_FAIL_("f32 bounds of %a, %d ulps: [%a, %a], want [%a, %a]", v, ulps, (double)gd, (double)gu, (double)dw,
                    (double)uw);
    }
    /* the gap above the smallest float >= |v| */
    float au = (float)fabs(v);
    if ((double)au < fabs(v)) au = nextafterf(au, INFINITY);
    float ul = rdx_jn_ulp_f32(v), want = isinf(au) || au == FLT_MAX ? INFINITY : nextafterf(au, INFINITY) - au;
    if (!f32_same(ul, want) && wrong++ < 10) CHECK_FAIL_("ulp_f32(%a) = %a, want %a", v, (double)ul, (double)want);
  }
  /* a tiny positive value gets 0 and then -2^-149 below it; a tiny negative one the mirror */
  CHECK(rdx_jn_f32_down(1e-300, 0) == 0.0f && rdx_jn_f32_up(1e-300, 0) == 0x1p-149f);
  CHECK(rdx_jn_f32_down(1e-300, 2) == -0x1p-148f && rdx_jn_f32_up(-1e-300, 1) == 0x1p-149f);
  CHECK(rdx_jn_f32_up(0x1p200, 0) == INFINITY && rdx_jn_f32_down(0x1p200, 1) == nextafterf(FLT_MAX, 0));
  CHECK(rdx_jn_f32_down(-0x1p200, 0) == -INFINITY && rdx_jn_f32_up(-0x1p200, 0) == -FLT_MAX);
  CHECK_EQ(wrong, 0);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  bx_selftest();
  case_shewchuk();
  case_grids();
  case_random_wide();
  case_points();
  case_div_round();
  CHECK(!bx_overflow);
  printf("exact evaluations: %ld orient, %ld cmp_y_at_x, %ld seg_point\n", exact_hits[hit_orient],
         exact_hits[hit_cmp_y_at_x], exact_hits[hit_seg_point]);
  CHECK(exact_hits[hit_orient] > 1000 && exact_hits[hit_cmp_y_at_x] > 100 && exact_hits[hit_seg_point] > 1000);
  printf("checked %ld orientations, relations %ld/%ld/%ld/%ld (disjoint/cross/touch/overlap), %ld on_segment, "
         "%ld cmp_y_at_x_pt, %ld cmp_y_at_x, %ld points (%ld below 2^-900, %ld ties)\n",
         counts.orient, counts.relation[0], counts.relation[1], counts.relation[2], counts.relation[3],
         counts.on_segment, counts.cmp_pt, counts.cmp, counts.point, counts.point_tiny, counts.point_ties);
  printf("skipped %ld generated cases with a coordinate outside the domain\n", skipped);
  for (int r = 0; r < 4; r++) CHECK(counts.relation[r] > 1000);
#ifdef RDX_HAVE_GEOS
  case_geos();
#else
  printf("skipped: no GEOS (the cross-check against GEOS)\n");
#endif
  case_f32();
  return check_end(ctx);
}
