/*
 * test_join_lsi.c: segment intersection of two layers' boundaries (rdx_join_lsi,
 * rdx_join_lsi_free, and the benchmarks' rdx_jn_lsi_run) on the backend given by --backend, every
 * answer against the brute force of tools/oracle/lsi_oracle.c (and, where the build has GEOS,
 * the oracle's feature pairs against GEOS's GEOSIntersects of the features' boundaries).
 *
 * Every join runs with and without points, and R x S as well as S x R. Cases:
 *  - lsi_oracle_known: the oracle against hand-computed answers (two squares sharing an edge, a
 *    triangle touching a corner, a crossing), so a corrupted reference shows;
 *  - lsi_triangle: a single triangle against itself, a crossing triangle, a far one;
 *  - lsi_degenerate: collinear overlapping edges, edges touching at vertices, T-junctions, a
 *    vertical and a horizontal edge, an S edge through an R vertex and passing 1 ulp beside it
 *    on either side, at the origin, at 1e6 offsets and at 1e-6 scale;
 *  - lsi_shared: a jittered grid against itself, an axis-aligned grid of squares against a
 *    coarser aligned grid and against itself shifted by half a cell;
 *  - lsi_random: random star polygons (R and S overlapping, multipolygons, holes) on random
 *    seeds, at the origin, at 1e6 offsets and at 1e-6 scale (features far below a float32 ulp of
 *    their coordinates at the offset, so every box and ray rounds);
 *  - lsi_options: group_threshold 1, 3.5 and 64 and pad_ulps 1, 2 and 8, through a temporary
 *    index and through rdx_polygons_build_index, all answer alike; the layers are unchanged;
 *  - lsi_paths: the statistics of rdx_jn_lsi_run show each kind of S edge ran: whole rays,
 *    rays clipped to R's box (S much larger than R), and the exact brute force (S edges reaching
 *    2^40 times beyond R), all answering as the oracle;
 *  - lsi_big_feature: one feature of 10^5 vertices against a zigzag crossing it;
 *  - lsi_naive: RayJoin's plain float32 version (bench_api.h's rdx_join_force_naive) misses
 *    pairs that the conservative boxes find: S edges through the top-right corner of R triangles,
 *    diagonally, at coordinates near 1000 between float32 values;
 *  - lsi_empty: empty layers on either side, a layer with an empty feature;
 *  - lsi_bad_input: each refused argument with its status and sentence, *out NULL;
 *  - lsi_faults: the memory account fails the 1st, 2nd, ... allocation of a join: out of memory,
 *    *out NULL and nothing held, until the join goes through with the oracle's answer.
 */
#include "join_check.h"
#include "join/join.h"
#include "lsi_oracle.h"

#include <float.h>
#include <math.h>

#ifdef RDX_HAVE_GEOS
#include <geos_c.h>
#endif

/* Internal (src/core/core.h): fault injection of the memory account. */
void rdx_mem_fail_after(rdx_context *ctx, int64_t n);

static rdx_context *ctx;
static int gpu;

/* ---- more of a layer under construction (join_check.h) ---- */

/* x -> x * scale + dx, y -> y * scale + dy, for every vertex */
static void lb_map(lb_layer *L, double scale, double dx, double dy) {
  for (int64_t v = 0; v < L->nv; v++) {
    L->xy[2 * v] = L->xy[2 * v] * scale + dx;
    L->xy[2 * v + 1] = L->xy[2 * v + 1] * scale + dy;
  }
}

/* A layer built with join_check.h, on the test's context. */
static rdx_polygons *make(const lb_layer *L) { return lb_create(ctx, L); }

static lsi_oracle_layer oracle_of(const lb_layer *L) {
  lsi_oracle_layer O = {L->fo, L->ro, L->xy, L->nf};
  return O;
}

/* ---- a result on the host ---- */

typedef struct host_result {
  int64_t n_pairs, n_points;
  int64_t *pairs, *point_pairs;
  double *points;
} host_result;

static void host_of(const rdx_join_lsi_result *res, host_result *h) {
  h->n_pairs = res->n_pairs, h->n_points = res->n_points;
  size_t pb = (size_t)res->n_pairs * 16, qb = (size_t)res->n_points * 16;
  h->pairs = (int64_t *)malloc(pb + 16);
  h->point_pairs = (int64_t *)malloc(qb + 16);
  h->points = (double *)malloc(qb + 16);
  CHECK_EQ(res->where, gpu ? RDX_DEVICE : RDX_HOST);
  rdx_location w = res->where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST;
  CHECK_OK(ctx, rdx_copy(ctx, h->pairs, RDX_HOST, res->pairs, w, pb));
  CHECK_OK(ctx, rdx_copy(ctx, h->point_pairs, RDX_HOST, res->point_pairs, w, qb));
  CHECK_OK(ctx, rdx_copy(ctx, h->points, RDX_HOST, res->points, w, qb));
}
static void host_free(host_result *h) {
  free(h->pairs), free(h->point_pairs), free(h->points);
  memset(h, 0, sizeof *h);
}

/* ---- GEOS: the features' boundaries intersect (the oracle's pairs, checked once more) ---- */

#ifdef RDX_HAVE_GEOS
static GEOSContextHandle_t geos;

/* Feature f's rings as one MultiLineString (NULL for a feature without rings). */
static GEOSGeometry *geos_boundary(const lb_layer *L, int64_t f) {
  int64_t n = (int64_t)(L->fo[f + 1] - L->fo[f]);
  if (n == 0) return NULL;
  GEOSGeometry **lines = (GEOSGeometry **)malloc((size_t)n * sizeof *lines);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = L->fo[f] + (uint64_t)i, v0 = L->ro[r], v1 = L->ro[r + 1];
    GEOSCoordSequence *cs = GEOSCoordSeq_create_r(geos, (unsigned)(v1 - v0 + 1), 2);
    for (uint64_t v = v0; v <= v1; v++) {
      uint64_t u = v < v1 ? v : v0;
      GEOSCoordSeq_setXY_r(geos, cs, (unsigned)(v - v0), L->xy[2 * u], L->xy[2 * u + 1]);
    }
    lines[i] = GEOSGeom_createLineString_r(geos, cs);
  }
  GEOSGeometry *m = GEOSGeom_createCollection_r(geos, GEOS_MULTILINESTRING, lines, (unsigned)n);
  free(lines);
  return m;
}

static void geos_check(const char *what, const lb_layer *R, const lb_layer *S, const int64_t *pairs, int64_t n) {
  if (R->nf * S->nf > 40000) return;
  GEOSGeometry **gr = (GEOSGeometry **)calloc((size_t)R->nf + 1, sizeof *gr);
  GEOSGeometry **gs = (GEOSGeometry **)calloc((size_t)S->nf + 1, sizeof *gs);
  for (int64_t f = 0; f < R->nf; f++) gr[f] = geos_boundary(R, f);
  for (int64_t f = 0; f < S->nf; f++) gs[f] = geos_boundary(S, f);
  int64_t k = 0, bad = 0;
  for (int64_t a = 0; a < R->nf; a++)
    for (int64_t b = 0; b < S->nf; b++) {
      int g = gr[a] && gs[b] && GEOSIntersects_r(geos, gr[a], gs[b]) == 1;
      int o = k < n && pairs[2 * k] == a && pairs[2 * k + 1] == b;
      k += o;
      if (g != o && bad++ < 5) CHECK_FAIL_("%s: GEOS says %d, the oracle %d for features (%lld, %lld)", what, g, o, (long long)a, (long long)b);
    }
  CHECK_EQ(k, n);
  for (int64_t f = 0; f < R->nf; f++) GEOSGeom_destroy_r(geos, gr[f]);
  for (int64_t f = 0; f < S->nf; f++) GEOSGeom_destroy_r(geos, gs[f]);
  free(gr), free(gs);
}
#endif

/* ---- one join against the oracle ---- */

typedef struct truth {
  int64_t n_pairs, n_points;
  int64_t *pairs, *point_pairs;
  double *points;
} truth;

static void truth_of(const lb_layer *R, const lb_layer *S, truth *T) {
  lsi_oracle_layer OR = oracle_of(R), OS = oracle_of(S);
  T->n_pairs = lsi_oracle_pairs(&OR, &OS, &T->pairs);
  T->n_points = lsi_oracle_points(&OR, &OS, &T->point_pairs, &T->points);
  if (T->n_pairs < 0 || T->n_points < 0) {
    fprintf(stderr, "oracle: out of memory\n");
    exit(1);
  }
}
static void truth_free(truth *T) {
  free(T->pairs), free(T->point_pairs), free(T->points);
  memset(T, 0, sizeof *T);
}

/* rdx_join_lsi (want_points or not, opts may be NULL) against T; returns the result's pair count. */
static int64_t compare(const char *what, rdx_polygons *r, rdx_polygons *s, const rdx_join_options *o, int want_points,
                       const truth *T) {
  rdx_join_lsi_result *res = NULL;
  int64_t launched = rdx_jn_optix_launches();
  CHECK_OK(ctx, rdx_join_lsi(ctx, r, s, o, want_points, &res));
  if (r->host.n_vertices > 0 && s->host.n_vertices > 0) expect_optix(ctx, what, launched, 2); /* count, fill */
  if (res == NULL) return -1;
  host_result h;
  host_of(res, &h);
  if (h.n_pairs != T->n_pairs) CHECK_FAIL_("%s: %lld pairs, oracle %lld", what, (long long)h.n_pairs, (long long)T->n_pairs);
  int64_t bad = 0;
  for (int64_t i = 0; i < h.n_pairs && i < T->n_pairs && bad < 5; i++)
    if (h.pairs[2 * i] != T->pairs[2 * i] || h.pairs[2 * i + 1] != T->pairs[2 * i + 1]) {
      bad++;
      CHECK_FAIL_("%s: pair %lld is (%lld, %lld), oracle (%lld, %lld)", what, (long long)i, (long long)h.pairs[2 * i],
                  (long long)h.pairs[2 * i + 1], (long long)T->pairs[2 * i], (long long)T->pairs[2 * i + 1]);
    }
  if (!want_points) {
    CHECK_EQ(h.n_points, 0);
  } else {
    if (h.n_points != T->n_points)
      CHECK_FAIL_("%s: %lld points, oracle %lld", what, (long long)h.n_points, (long long)T->n_points);
    for (int64_t i = 0; i < h.n_points && i < T->n_points && bad < 5; i++)
      if (h.point_pairs[2 * i] != T->point_pairs[2 * i] || h.point_pairs[2 * i + 1] != T->point_pairs[2 * i + 1] ||
          memcmp(h.points + 2 * i, T->points + 2 * i, 16) != 0) {
        bad++;
        CHECK_FAIL_("%s: point %lld is (%lld, %lld) (%.17g, %.17g), oracle (%lld, %lld) (%.17g, %.17g)", what,
                           (long long)i, (long long)h.point_pairs[2 * i], (long long)h.point_pairs[2 * i + 1],
                           h.points[2 * i], h.points[2 * i + 1], (long long)T->point_pairs[2 * i],
                    (long long)T->point_pairs[2 * i + 1], T->points[2 * i], T->points[2 * i + 1]);
      }
  }
  host_free(&h);
  int64_t n = res->n_pairs;
  rdx_join_lsi_free(ctx, res);
  return n;
}

/* R x S and S x R, with and without points, against the oracle (and GEOS). */
static void check_join(const char *what, const lb_layer *R, const lb_layer *S, const rdx_join_options *o) {
  rdx_polygons *r = make(R), *s = make(S);
  truth T, TT;
  truth_of(R, S, &T);
  truth_of(S, R, &TT);
#ifdef RDX_HAVE_GEOS
  geos_check(what, R, S, T.pairs, T.n_pairs);
#endif
  char w[160];
  snprintf(w, sizeof w, "%s (R x S)", what);
  compare(w, r, s, o, 0, &T);
  compare(w, r, s, o, 1, &T);
  snprintf(w, sizeof w, "%s (S x R)", what);
  compare(w, s, r, o, 0, &TT);
  compare(w, s, r, o, 1, &TT);
  printf("  %s: %lld x %lld edges, %lld pairs, %lld points\n", what, (long long)R->nv, (long long)S->nv,
         (long long)T.n_pairs, (long long)T.n_points);
  truth_free(&T);
  truth_free(&TT);
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
}

/* ---- cases ---- */

/* The oracle once against answers worked out by hand. */
static void oracle_known(void) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  lb_feature(&R), lb_quad(&R, 0, 0, 1, 1);           /* R0: unit square */
  lb_feature(&R), lb_quad(&R, 5, 5, 6, 6);           /* R1: far away */
  lb_feature(&S), lb_quad(&S, 1, 0, 2, 1);           /* S0: shares R0's edge x = 1 */
  lb_feature(&S), lb_tri(&S, 1, 1, 2, 2, 1, 3);      /* S1: touches R0's corner (1, 1) */
  lb_feature(&S), lb_tri(&S, -1, 0.5, 0.5, 0.5, 0.5, 0.75); /* S2: crosses R0's left edge twice */
  lsi_oracle_layer OR = oracle_of(&R), OS = oracle_of(&S);
  int64_t *pairs, *pp;
  double *pts;
  int64_t n = lsi_oracle_pairs(&OR, &OS, &pairs);
  static const int64_t want[] = {0, 0, 0, 1, 0, 2};
  CHECK_EQ(n, 3);
  for (int i = 0; i < 6 && n == 3; i++) CHECK_EQ(pairs[i], want[i]);
  int64_t m = lsi_oracle_points(&OR, &OS, &pp, &pts);
  /* (0,0): the overlap's ends (1, 0), (1, 1); (0,1): the corner (1, 1); (0,2): (0, 0.5) and
   * (0, 2/3) rounded to nearest (the edge from (0.5, 0.75) to (-1, 0.5) at x = 0) */
  const double want_pts[] = {1, 0, 1, 1, 1, 1, 0, 0.5, 0, 2.0 / 3.0};
  static const int64_t want_pp[] = {0, 0, 0, 0, 0, 1, 0, 2, 0, 2};
  CHECK_EQ(m, 5);
  for (int i = 0; i < 10 && m == 5; i++) {
    CHECK(pts[i] == want_pts[i]);
    CHECK_EQ(pp[i], want_pp[i]);
  }
  free(pairs), free(pp), free(pts);
  check_join("known", &R, &S, NULL);
  lb_free(&R), lb_free(&S);
}

static void triangle(void) {
  lb_layer R, S, F;
  lb_init(&R), lb_init(&S), lb_init(&F);
  lb_feature(&R), lb_tri(&R, 0, 0, 4, 0, 0, 3);
  lb_feature(&S), lb_tri(&S, 1, -1, 3, 2, -1, 2);
  lb_feature(&F), lb_tri(&F, 10, 10, 11, 10, 10, 11);
  check_join("triangle x itself", &R, &R, NULL);
  check_join("triangle x crossing triangle", &R, &S, NULL);
  check_join("triangle x far triangle", &R, &F, NULL);
  lb_free(&R), lb_free(&S), lb_free(&F);
}

/* Degenerate contacts around an R square, at scale `sc` and offset `off`. */
static void degenerate_at(double sc, double off) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  lb_feature(&R), lb_quad(&R, 0, 0, 4, 4);
  lb_feature(&R), lb_tri(&R, 6, 0, 9, 0, 7.5, 3); /* a triangle with an apex to pass beside */
  lb_feature(&S), lb_quad(&S, 1, 4, 3, 6);       /* overlaps R0's top edge: collinear */
  lb_feature(&S), lb_quad(&S, 4, 4, 5, 5);       /* touches R0 at a corner */
  lb_feature(&S), lb_tri(&S, 2, 0, 3, -2, 1, -2); /* T-junction: a vertex on R0's bottom edge */
  lb_feature(&S), lb_quad(&S, -2, 1, 0, 3);      /* shares a piece of R0's left edge */
  lb_feature(&S), lb_quad(&S, 0, 0, 4, 4);       /* identical to R0 */
  lb_feature(&S), lb_quad(&S, 4, -3, 6, -1);     /* far corner: disjoint */
  lb_map(&R, sc, off, off);
  lb_map(&S, sc, off, off);
  /* S edges through the triangle's apex, and one double ulp above and below it */
  double ax = R.xy[2 * 6 + 0], ay = R.xy[2 * 6 + 1]; /* apex: vertex 6 (quad 0..3, tri 4..6) */
  double left = 6.5 * sc + off, right = 8.5 * sc + off;
  double ys[3] = {ay, nextafter(ay, INFINITY), nextafter(ay, -INFINITY)};
  for (int i = 0; i < 3; i++) {
    double t[6] = {left, ys[i], right, ys[i], ax, ys[i] + 2 * sc};
    lb_feature(&S), lb_ring(&S, t, 3);
  }
  /* a vertical S edge one double ulp right of the apex, and a diagonal one through it */
  double xr = nextafter(ax, INFINITY);
  double v[6] = {xr, ay - sc, xr, ay + sc, xr + sc, ay + 2 * sc};
  lb_feature(&S), lb_ring(&S, v, 3);
  double dg[6] = {ax - sc, ay - sc, ax + sc, ay + sc, ax - sc, ay + 2 * sc};
  lb_feature(&S), lb_ring(&S, dg, 3);
  char what[80];
  snprintf(what, sizeof what, "degenerate contacts, scale %g, offset %g", sc, off);
  check_join(what, &R, &S, NULL);
  lb_free(&R), lb_free(&S);
}

static void degenerate(void) {
  degenerate_at(1.0, 0.0);
  degenerate_at(1.0, 1e6);
  degenerate_at(1e-6, 0.0);
  degenerate_at(1e-6, 1e6 + 0.1);
  degenerate_at(0.1, -3e3);
}

/* An n x n grid of cells of size h from (x0, y0); jitter moves inner vertices (shared exactly). */
static void grid(lb_layer *L, int n, double x0, double y0, double h, double jitter) {
  double *vx = (double *)malloc((size_t)(n + 1) * (n + 1) * 16);
  for (int i = 0; i <= n; i++)
    for (int j = 0; j <= n; j++) {
      double jx = (i > 0 && i < n) ? lb_urand(-jitter, jitter) * h : 0, jy = (j > 0 && j < n) ? lb_urand(-jitter, jitter) * h : 0;
      vx[2 * (i * (n + 1) + j)] = x0 + i * h + jx;
      vx[2 * (i * (n + 1) + j) + 1] = y0 + j * h + jy;
    }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double q[8];
      int c[4][2] = {{i, j}, {i + 1, j}, {i + 1, j + 1}, {i, j + 1}};
      for (int k = 0; k < 4; k++) {
        q[2 * k] = vx[2 * (c[k][0] * (n + 1) + c[k][1])];
        q[2 * k + 1] = vx[2 * (c[k][0] * (n + 1) + c[k][1]) + 1];
      }
      lb_feature(L), lb_ring(L, q, 4);
    }
  free(vx);
}

static void shared(void) {
  lb_layer A, B, C, D;
  lb_init(&A), lb_init(&B), lb_init(&C), lb_init(&D);
  grid(&A, 12, 0, 0, 1.0, 0.3);
  check_join("jittered grid x itself", &A, &A, NULL);
  grid(&B, 16, 0, 0, 0.25, 0.0);
  grid(&C, 4, 0, 0, 1.0, 0.0);
  check_join("grid of squares x coarser aligned grid", &B, &C, NULL);
  grid(&D, 16, 0.125, 0.125, 0.25, 0.0);
  check_join("grid x itself shifted half a cell", &B, &D, NULL);
  lb_map(&B, 1.0, 1e6, 1e6);
  lb_map(&C, 1.0, 1e6, 1e6);
  check_join("grids at 1e6", &B, &C, NULL);
  lb_free(&A), lb_free(&B), lb_free(&C), lb_free(&D);
}

/* A star polygon around (cx, cy): k vertices at sorted angles, radii in [r/3, r]. */
static void star(lb_layer *L, double cx, double cy, double r, int k, int clockwise) {
  double *p = (double *)malloc((size_t)k * 16);
  double a = lb_urand(0, 6.283185307179586);
  for (int i = 0; i < k; i++) {
    double ang = a + 6.283185307179586 * (i + lb_urand(0.05, 0.95)) / k * (clockwise ? -1 : 1);
    double rad = lb_urand(r / 3, r);
    p[2 * i] = cx + rad * cos(ang);
    p[2 * i + 1] = cy + rad * sin(ang);
  }
  lb_ring(L, p, k);
  free(p);
}

/* n random features in the unit square: stars, some with a hole, some of two parts. */
static void random_layer(lb_layer *L, int n, double size) {
  for (int f = 0; f < n; f++) {
    double cx = lb_urand(0, 1), cy = lb_urand(0, 1), r = lb_urand(size / 4, size);
    lb_feature(L);
    star(L, cx, cy, r, 3 + (int)check_below(12), (int)check_below(2));
    uint64_t kind = check_below(6);
    if (kind == 0) { /* a hole: a small quad around the centre */
      double h = r / 8;
      double q[8] = {cx - h, cy - h, cx - h, cy + h, cx + h, cy + h, cx + h, cy - h};
      lb_ring(L, q, 4);
    } else if (kind == 1) { /* a second part nearby */
      star(L, cx + lb_urand(-size, size), cy + lb_urand(-size, size), r / 2, 3 + (int)check_below(6), 0);
    }
  }
}

static void random_case(void) {
  for (int round = 0; round < 6; round++) {
    lb_layer R, S;
    lb_init(&R), lb_init(&S);
    int nr = 20 + (int)check_below(80), ns = 20 + (int)check_below(80);
    random_layer(&R, nr, lb_urand(0.02, 0.2));
    random_layer(&S, ns, lb_urand(0.02, 0.2));
    double sc = 1.0, off = 0.0;
    if (round == 2) off = 1e6;               /* features of ~0.1 at 1e6: float ulp 0.0625 */
    if (round == 3) sc = 1e-6;               /* tiny */
    if (round == 4) sc = 1e-3, off = 1e6;    /* features far below a float ulp of 1e6 */
    if (round == 5) sc = 1e-9, off = -2.0;   /* far below a float ulp of 2 */
    lb_map(&R, sc, off, off);
    lb_map(&S, sc, off, off);
    char what[80];
    snprintf(what, sizeof what, "random round %d (scale %g, offset %g)", round, sc, off);
    check_join(what, &R, &S, NULL);
    lb_free(&R), lb_free(&S);
  }
}

/* The same pairs for every grouping and padding, with a temporary index and with R's own. */
static void options(void) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  random_layer(&R, 60, 0.15);
  grid(&S, 8, 0.01, 0.02, 0.125, 0.2);
  lb_map(&R, 1e-3, 1e6, 1e6);
  lb_map(&S, 1e-3, 1e6, 1e6);
  rdx_polygons *r = make(&R), *s = make(&S);
  truth T;
  truth_of(&R, &S, &T);
  rdx_polygons_info before, after;
  memset(&before, 0, sizeof before), memset(&after, 0, sizeof after);
  before.size = after.size = sizeof before;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, r, &before));
  static const double groups[3] = {1.0, 3.5, 64.0};
  static const int pads[3] = {1, 2, 8};
  for (int g = 0; g < 3; g++)
    for (int p = 0; p < 3; p++) {
      rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
      o.group_threshold = groups[g], o.pad_ulps = pads[p];
      char what[80];
      snprintf(what, sizeof what, "options s %g pad %d (temporary index)", groups[g], pads[p]);
      compare(what, r, s, &o, 1, &T);
      CHECK_OK(ctx, rdx_polygons_describe(ctx, r, &after));
      CHECK(!after.indexed);
      CHECK_EQ(after.bytes, before.bytes);
      CHECK_OK(ctx, rdx_polygons_build_index(ctx, r, &o));
      snprintf(what, sizeof what, "options s %g pad %d (R's index)", groups[g], pads[p]);
      compare(what, r, s, NULL, 1, &T);
      rdx_jn_lsi_stats st;
      rdx_join_lsi_result *res = NULL;
      CHECK_OK(ctx, rdx_jn_lsi_run(ctx, r, s, NULL, 0, &res, &st));
      CHECK_EQ(st.temp_index, 0);
      CHECK_EQ(st.groups, r->index.n_groups);
      if (g == 0) CHECK_EQ(st.groups, r->host.n_vertices); /* s = 1: one edge per group */
      if (g == 2) CHECK(st.groups < r->host.n_vertices);
      rdx_join_lsi_free(ctx, res);
      /* the layer's index stays as it was */
      CHECK_EQ(r->index.pad_ulps, pads[p]);
      rdx_polygons_destroy(r);
      r = make(&R);
    }
  truth_free(&T);
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  lb_free(&R), lb_free(&S);
}

/* The statistics of one join, checked against the oracle too. */
static rdx_jn_lsi_stats run_stats(const char *what, const lb_layer *R, const lb_layer *S) {
  rdx_polygons *r = make(R), *s = make(S);
  truth T;
  truth_of(R, S, &T);
  rdx_jn_lsi_stats st;
  memset(&st, 0, sizeof st);
  rdx_join_lsi_result *res = NULL;
  CHECK_OK(ctx, rdx_jn_lsi_run(ctx, r, s, NULL, 1, &res, &st));
  if (res) {
    CHECK_EQ(res->n_pairs, T.n_pairs);
    CHECK_EQ(res->n_points, T.n_points);
    rdx_join_lsi_free(ctx, res);
  }
  compare(what, r, s, NULL, 1, &T);
  CHECK_EQ(st.s_edges, S->nv);
  CHECK_EQ(st.n_pairs, T.n_pairs);
  CHECK_EQ(st.n_points, T.n_points);
  CHECK_EQ(st.temp_index, 1);
  CHECK(st.edge_pairs >= st.n_pairs);
  CHECK(st.candidates >= st.edge_pairs);
  CHECK(st.rays + st.clipped + st.brute <= st.s_edges);
  printf("  %s: %lld rays, %lld clipped, %lld brute, %lld candidates, %lld edge pairs, %lld pairs\n", what,
         (long long)st.rays, (long long)st.clipped, (long long)st.brute, (long long)st.candidates,
         (long long)st.edge_pairs, (long long)st.n_pairs);
  truth_free(&T);
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  return st;
}

static void paths(void) {
  lb_layer R, S, B, H;
  lb_init(&R), lb_init(&S), lb_init(&B), lb_init(&H);
  random_layer(&R, 40, 0.1);
  random_layer(&S, 40, 0.1);
  rdx_jn_lsi_stats st = run_stats("same extent", &R, &S);
  CHECK(st.rays > 0);
  CHECK_EQ(st.brute, 0);
  /* S spans 1000 times R's extent: its long edges through R are clipped */
  for (int i = 0; i < 30; i++) {
    double a = lb_urand(0, 6.283185307179586), c = cos(a), sn = sin(a);
    double cx = lb_urand(0.2, 0.8), cy = lb_urand(0.2, 0.8);
    double t[6] = {cx - 1000 * c, cy - 1000 * sn, cx + 1000 * c, cy + 1000 * sn, cx - 1000 * sn, cy + 1000 * c};
    lb_feature(&B), lb_ring(&B, t, 3);
  }
  st = run_stats("S 1000 times larger", &R, &B);
  CHECK(st.clipped > 0);
  CHECK_EQ(st.brute, 0);
  /* S edges reaching 2^40 times beyond R, aimed at R's features of size 10^-4: the clip's
   * rounding (about 2^-12 here) exceeds the pad, and a ray cast anyway would pass beside some of
   * them; those edges take the exact brute force */
  lb_free(&R);
  lb_init(&R);
  random_layer(&R, 40, 1e-4);
  for (int64_t f = 0; f < R.nf; f++) {
    uint64_t v0 = R.ro[R.fo[f]], v1 = R.ro[R.fo[f] + 1];
    double cx = 0, cy = 0;
    for (uint64_t v = v0; v < v1; v++) cx += R.xy[2 * v] / (double)(v1 - v0), cy += R.xy[2 * v + 1] / (double)(v1 - v0);
    double a = lb_urand(0, 6.283185307179586), c = cos(a), sn = sin(a), far = 0x1p40;
    double t[6] = {cx - far * c, cy - far * sn, cx + far * c, cy + far * sn, cx - far * sn, cy + far * c};
    lb_feature(&H), lb_ring(&H, t, 3);
  }
  st = run_stats("S 2^40 times larger", &R, &H);
  CHECK(st.brute > 0);
  CHECK(st.n_pairs >= R.nf / 2); /* most lines meet the feature they aim at */
  lb_free(&R), lb_free(&S), lb_free(&B), lb_free(&H);
}

static void big_feature(void) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  int n = 100000;
  double *p = (double *)malloc((size_t)n * 16);
  for (int i = 0; i < n; i++) { /* a wavy circle */
    double a = 6.283185307179586 * i / n, rad = 1.0 + 0.01 * sin(50 * a);
    p[2 * i] = rad * cos(a), p[2 * i + 1] = rad * sin(a);
  }
  lb_feature(&R), lb_ring(&R, p, n);
  free(p);
  int k = 40; /* a zigzag band crossing the circle's rim many times */
  double *z = (double *)malloc((size_t)(2 * k) * 16);
  for (int i = 0; i < k; i++) {
    z[2 * i] = -1.2 + 2.4 * i / (k - 1), z[2 * i + 1] = (i % 2) ? 1.05 : 0.95;
    z[2 * (2 * k - 1 - i)] = z[2 * i], z[2 * (2 * k - 1 - i) + 1] = z[2 * i + 1] - 0.02;
  }
  lb_feature(&S), lb_ring(&S, z, 2 * k);
  free(z);
  check_join("feature of 10^5 vertices x zigzag", &R, &S, NULL);
  lb_free(&R), lb_free(&S);
}

static void naive(void) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  const int n = 64;
  for (int k = 0; k < n; k++) {
    /* V: multiples of 2^-40 near 1000, where floats step by 2^-14; V -+ (d, -d) stay exact */
    double vx = 1000.0 + 8.0 * k + ldexp((double)check_below((uint64_t)1 << 40), -40);
    double vy = 1000.0 + ldexp((double)check_below((uint64_t)1 << 40), -40);
    double d = 0.25 + ldexp((double)check_below((uint64_t)1 << 30), -31);
    lb_feature(&R);
    lb_tri(&R, vx, vy, vx - 1.0, vy - 2.0, vx - 2.0, vy - 1.0); /* V is the top-right corner of its box */
    lb_feature(&S);
    lb_tri(&S, vx - d, vy + d, vx + d, vy - d, vx + 0.5, vy + 0.5); /* its first edge passes V, slope -1 */
  }
  truth T;
  truth_of(&R, &S, &T);
  CHECK_EQ(T.n_pairs, n); /* (k, k): each pair touches at V alone */
  rdx_polygons *r = make(&R), *s = make(&S);
  compare("touching corners, conservative boxes", r, s, NULL, 1, &T);
  rdx_join_force_naive(ctx, 1); /* the join's temporary index: naive boxes */
  rdx_join_lsi_result *res = NULL;
  CHECK_OK(ctx, rdx_join_lsi(ctx, r, s, NULL, 0, &res));
  rdx_join_force_naive(ctx, 0);
  int64_t found = -1;
  if (res) {
    host_result h;
    host_of(res, &h);
    found = h.n_pairs;
    for (int64_t i = 0; i < h.n_pairs; i++) CHECK_EQ(h.pairs[2 * i], h.pairs[2 * i + 1]); /* no false pair */
    host_free(&h);
    rdx_join_lsi_free(ctx, res);
  }
  /* the soft traversals (CPU, CUDA) compute the same float rays and boxes; OptiX's hardware box
   * test may take more boxes, so there the count is only shown */
  if (rdx_context_backend(ctx) != RDX_BACKEND_OPTIX) CHECK(found >= 0 && found < n);
  printf("  naive boxes: %lld of %lld touching pairs found (conservative: all)\n", (long long)found, (long long)n);
  compare("touching corners, conservative boxes again", r, s, NULL, 0, &T); /* the flag is off again */
  truth_free(&T);
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  lb_free(&R), lb_free(&S);
}

static void empty(void) {
  lb_layer E, T, N;
  lb_init(&E), lb_init(&T), lb_init(&N);
  lb_feature(&T), lb_tri(&T, 0, 0, 1, 0, 0, 1);
  lb_feature(&N);                                 /* a feature without rings */
  lb_feature(&N), lb_tri(&N, 0, 0, 1, 1, 0, 1);
  check_join("empty x triangle", &E, &T, NULL);
  check_join("triangle x empty", &T, &E, NULL);
  check_join("empty x empty", &E, &E, NULL);
  check_join("empty feature", &N, &T, NULL);
  lb_free(&E), lb_free(&T), lb_free(&N);
}

static void bad_input(void) {
  lb_layer L;
  lb_init(&L);
  lb_feature(&L), lb_tri(&L, 0, 0, 1, 0, 0, 1);
  rdx_polygons *r = make(&L);
  rdx_join_lsi_result *res = (rdx_join_lsi_result *)(uintptr_t)1; /* must become NULL */
  int64_t before = held(ctx);
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, NULL, false, NULL), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: out is NULL");
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, NULL, r, NULL, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: r is NULL");
  CHECK(res == NULL);
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, NULL, NULL, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: s is NULL");
  CHECK_STATUS(NULL, rdx_join_lsi(NULL, r, r, NULL, false, &res), RDX_ERR_INVALID_ARGUMENT);
  /* not a layer */
  uint64_t junk[64];
  memset(junk, 0x5A, sizeof junk);
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, (const rdx_polygons *)junk, NULL, false, &res), RDX_ERR_MISUSE);
  expect_message(ctx, "rdx_join_lsi (s)");
  expect_message(ctx, "is not a polygon layer");
  /* a layer of another context */
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  rdx_context *other = NULL;
  CHECK_OK(other, rdx_context_create(&co, &other));
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = rdx_host_array(L.fo, L.nf + 1, RDX_U64);
  in.ring_offsets = rdx_host_array(L.ro, L.nr + 1, RDX_U64);
  in.coords = rdx_host_matrix(L.xy, L.nv, 2, RDX_F64);
  rdx_polygons *foreign = NULL;
  CHECK_OK(other, rdx_polygons_create(other, &in, &foreign));
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, foreign, r, NULL, false, &res), RDX_ERR_MISUSE);
  expect_message(ctx, "rdx_join_lsi (r)");
  expect_message(ctx, "another context");
  rdx_polygons_destroy(foreign);
  rdx_context_destroy(other);
  /* options */
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
  o.pad_ulps = 65;
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: opts->pad_ulps 65 is not in [1, 64]");
  o.pad_ulps = -1;
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->pad_ulps -1");
  o.pad_ulps = 0;
  o.group_threshold = 0.5;
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: opts->group_threshold 0.5 is not in [1, 64]");
  o.group_threshold = NAN;
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->group_threshold nan");
  o.group_threshold = 0.0;
  o.size = 3;
  CHECK_STATUS(ctx, rdx_join_lsi(ctx, r, r, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_lsi: opts->size 3 is not a valid size");
  CHECK(res == NULL);
  CHECK_EQ(held(ctx), before);
  /* a short options struct (an older caller's) takes defaults for the rest */
  o.size = offsetof(rdx_join_options, group_threshold);
  o.pad_ulps = 3;
  CHECK_OK(ctx, rdx_join_lsi(ctx, r, r, &o, true, &res));
  if (res) CHECK_EQ(res->n_pairs, 1);
  rdx_join_lsi_free(ctx, res);
  rdx_join_lsi_free(ctx, NULL); /* accepted */
  rdx_polygons_destroy(r);
  lb_free(&L);
}

static void faults(void) {
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  random_layer(&R, 15, 0.2);
  random_layer(&S, 15, 0.2);
  rdx_polygons *r = make(&R), *s = make(&S);
  truth T;
  truth_of(&R, &S, &T);
  int64_t before = held(ctx);
  int ok = 0;
  for (int64_t n = 1; n < 200 && !ok; n++) {
    rdx_join_lsi_result *res = (rdx_join_lsi_result *)(uintptr_t)1;
    rdx_mem_fail_after(ctx, n);
    rdx_status st = rdx_join_lsi(ctx, r, s, NULL, true, &res);
    rdx_mem_fail_after(ctx, 0);
    if (st == RDX_OK) {
      ok = 1;
      CHECK_EQ(res->n_pairs, T.n_pairs);
      CHECK_EQ(res->n_points, T.n_points);
      rdx_join_lsi_free(ctx, res);
      printf("  faults: the join went through at allocation %lld\n", (long long)n);
    } else {
      CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY);
      CHECK(res == NULL);
    }
    CHECK_EQ(held(ctx), before);
  }
  CHECK(ok);
  truth_free(&T);
  rdx_polygons_destroy(r);
  rdx_polygons_destroy(s);
  lb_free(&R), lb_free(&S);
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
#ifdef RDX_HAVE_GEOS
  geos = GEOS_init_r();
#else
  printf("skipped: no GEOS (the oracle's pairs are not compared with GEOS)\n");
#endif
  if (CASE_RUN(lsi_oracle_known)) oracle_known();
  if (CASE_RUN(lsi_triangle)) triangle();
  if (CASE_RUN(lsi_degenerate)) degenerate();
  if (CASE_RUN(lsi_shared)) shared();
  if (CASE_RUN(lsi_random)) random_case();
  if (CASE_RUN(lsi_options)) options();
  if (CASE_RUN(lsi_paths)) paths();
  if (CASE_RUN(lsi_big_feature)) big_feature();
  if (CASE_RUN(lsi_naive)) naive();
  if (CASE_RUN(lsi_empty)) empty();
  if (CASE_RUN(lsi_bad_input)) bad_input();
  if (CASE_RUN(lsi_faults)) faults();
#ifdef RDX_HAVE_GEOS
  GEOS_finish_r(geos);
#endif
  return check_end(ctx);
}
