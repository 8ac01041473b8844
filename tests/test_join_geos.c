/*
 * test_join_geos.c: the public joins (rdx_polygons_create, rdx_join_pip_first, rdx_join_pip_alloc,
 * rdx_join_lsi) against GEOS, the exact reference, on the backend given by --backend.
 *
 * Rules, as GEOS states them:
 *  - PIP: point p is in feature f when GEOSIntersects(p, f) (boundary included); the full set of
 *    containing features of every point must be GEOS's, and pip_first its smallest (-1 if none);
 *    planar layers are answered once more with the planar rule, which must agree.
 *  - LSI: (r, s) is a pair when GEOSIntersects(boundary(r), boundary(s)); the sorted pairs must be
 *    GEOS's, with and without points, and every point row must carry one of the pairs.
 * GEOS answers through prepared geometries found by an STRtree of the features' envelopes, so
 * the reference stays fast on large layers.
 *
 * Layers (each feature a valid OGC Polygon or MultiPolygon, so that GEOS's region is the even-odd
 * region raydex defines):
 *  - geos_triangle: a single triangle; points at its vertices, on its edges, inside, outside;
 *  - geos_grid: a grid of unit squares against a coarser aligned grid of 2 x 2 squares, against
 *    itself and against itself shifted by half a cell (shared boundaries, collinear overlapping
 *    vertical and horizontal edges, edges touching at vertices), at scale 1, 2^-200 and 2^100
 *    (below and beyond the float32 range, where every box rounds); points on grid lines and
 *    vertices;
 *  - geos_holes: a shell with a hole holding an island of the same feature (a MultiPolygon), an
 *    island of another feature in the hole, a neighbour sharing the shell's edge, multipolygons of
 *    interleaved squares and diamonds touching at vertices; points on a half-unit lattice;
 *  - geos_big_feature: one star-shaped feature of 10^5 vertices against random and vertex points
 *    and a zigzag layer crossing it;
 *  - geos_empty: an empty layer on either side, and a feature without rings;
 *  - geos_random: the property test: random star polygons (overlapping, some with holes, some
 *    multipolygons) at random scales and offsets (up to 2^40 times their size, so boxes round),
 *    with random points, their vertices, points rounded onto their edges and vertices of the other
 *    layer.
 * Without GEOS the test prints "skipped: no GEOS" and exits 77.
 */
#include "join_check.h"

#include <float.h>
#include <math.h>

#ifdef RDX_HAVE_GEOS
#include <geos_c.h>

static rdx_context *ctx;
static int gpu;
static GEOSContextHandle_t geos;

/* ---- a layer (join_check.h: CSR plus, per ring, whether it opens a polygon) ---- */

/* every coordinate times 2^e (exact) */

static rdx_polygons *make(const lb_layer *L) { return lb_create(ctx, L); }

/* ---- GEOS geometries of a layer (join_check.h) and an STRtree of them ---- */

/* A layer's features (or boundaries, with `boundary`), valid and prepared, and an STRtree of
 * their envelopes. */
typedef struct glayer {
  lb_geos g;
  GEOSSTRtree *tree; /* item: the feature's number; features without rings left out */
} glayer;

static void g_make(const lb_layer *L, int boundary, glayer *G) {
  lb_geos_make(geos, L, boundary, &G->g);
  G->tree = GEOSSTRtree_create_r(geos, 10);
  for (int64_t f = 0; f < L->nf; f++)
    if (!GEOSisEmpty_r(geos, G->g.geom[f])) GEOSSTRtree_insert_r(geos, G->tree, G->g.geom[f], (void *)(intptr_t)f);
}
static void g_free(glayer *G) {
  lb_geos_free(geos, &G->g);
  GEOSSTRtree_destroy_r(geos, G->tree);
}

typedef struct hits {
  int64_t n, cap, *f;
} hits;
static void hit_cb(void *item, void *user) {
  hits *h = (hits *)user;
  h->f = (int64_t *)jc_grow(h->f, &h->cap, h->n + 1, 8);
  h->f[h->n++] = (int64_t)(intptr_t)item;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = (const int64_t *)a, *y = (const int64_t *)b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The features of G that GEOSIntersects g, ascending, into h. */
static void g_query(const glayer *G, const GEOSGeometry *g, hits *h) {
  hits cand = {0, 0, NULL};
  h->n = 0;
  GEOSSTRtree_query_r(geos, G->tree, g, hit_cb, &cand);
  if (cand.n > 0) qsort(cand.f, (size_t)cand.n, 8, cmp_i64); /* cand.f is NULL when nothing was hit */
  for (int64_t i = 0; i < cand.n; i++)
    if (GEOSPreparedIntersects_r(geos, G->g.prep[cand.f[i]], g) == 1) {
      h->f = (int64_t *)jc_grow(h->f, &h->cap, h->n + 1, 8);
      h->f[h->n++] = cand.f[i];
    }
  free(cand.f);
}

/* ---- points ---- */

typedef struct pts {
  double *xy;
  int64_t n, cap;
} pts;
static void pt(pts *P, double x, double y) {
  P->xy = (double *)jc_grow(P->xy, &P->cap, 2 * (P->n + 1), 8);
  P->xy[2 * P->n] = x, P->xy[2 * P->n + 1] = y;
  P->n++;
}
static int in_domain(double v) {
  double a = fabs(v);
  return a == 0 || (a >= 0x1p-256 && a <= 0x1p256);
}
/* the layer's vertices, edge midpoints (rounded: on, or an ulp beside, the edge) and random
 * points of its box widened by a tenth */
static void points_of(const lb_layer *L, pts *P, int64_t n_random, int64_t every) {
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int64_t v = 0; v < L->nv; v++)
    for (int k = 0; k < 2; k++) lo[k] = fmin(lo[k], L->xy[2 * v + k]), hi[k] = fmax(hi[k], L->xy[2 * v + k]);
  for (int64_t r = 0; r < L->nr; r++)
    for (uint64_t v = L->ro[r]; v < L->ro[r + 1]; v += (uint64_t)every) {
      uint64_t w = v + 1 < L->ro[r + 1] ? v + 1 : L->ro[r];
      pt(P, L->xy[2 * v], L->xy[2 * v + 1]);
      double mx = L->xy[2 * v] + (L->xy[2 * w] - L->xy[2 * v]) * 0.5, my = L->xy[2 * v + 1] + (L->xy[2 * w + 1] - L->xy[2 * v + 1]) * 0.5;
      if (in_domain(mx) && in_domain(my)) pt(P, mx, my);
    }
  if (L->nv == 0) lo[0] = lo[1] = -1, hi[0] = hi[1] = 1;
  for (int64_t i = 0; i < n_random; i++) {
    double x = lb_urand(lo[0] - (hi[0] - lo[0]) * 0.1, hi[0] + (hi[0] - lo[0]) * 0.1);
    double y = lb_urand(lo[1] - (hi[1] - lo[1]) * 0.1, hi[1] + (hi[1] - lo[1]) * 0.1);
    if (in_domain(x) && in_domain(y)) pt(P, x, y);
  }
}

/* ---- PIP against GEOS ---- */

static void check_pip(const char *what, const lb_layer *L, const pts *P, int planar) {
  rdx_polygons *r = make(L);
  if (!r) return;
  glayer G;
  g_make(L, 0, &G);
  size_t bytes = (size_t)P->n * 16;
  void *dpts = check_place(ctx, P->xy, bytes);
  rdx_array a = gpu ? rdx_device_matrix(dpts, P->n, 2, RDX_F64) : rdx_host_matrix(dpts, P->n, 2, RDX_F64);
  int64_t *first = (int64_t *)malloc((size_t)P->n * 8 + 8);
  long bad = 0, inside = 0, multi = 0;
  for (int pl = 0; pl <= planar; pl++) {
    rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
    o.planar = pl != 0;
    rdx_result *res = NULL;
    int64_t launched = rdx_jn_optix_launches();
    CHECK_OK(ctx, rdx_join_pip_alloc(ctx, r, a, &o, &res));
    CHECK_OK(ctx, rdx_join_pip_first(ctx, r, a, &o, rdx_host_array(first, P->n, RDX_I64)));
    if (P->n > 0 && L->nv > 0) expect_optix(ctx, what, launched, 2); /* alloc counts at least once; first */
    if (!res) break;
    uint64_t *off, *rows;
    check_result_host(ctx, res, &off, &rows);
    hits h = {0, 0, NULL};
    for (int64_t i = 0; i < P->n; i++) {
      GEOSGeometry *p = GEOSGeom_createPointFromXY_r(geos, P->xy[2 * i], P->xy[2 * i + 1]);
      g_query(&G, p, &h);
      GEOSGeom_destroy_r(geos, p);
      int64_t got = (int64_t)(off[i + 1] - off[i]);
      int same = got == h.n;
      for (int64_t k = 0; same && k < got; k++) same = (int64_t)rows[off[i] + (uint64_t)k] == h.f[k];
      if (!same && bad++ < 8) {
        char gs[128] = "", ws[128] = "";
        for (int64_t k = 0; k < got && k < 6; k++) snprintf(gs + strlen(gs), sizeof gs - strlen(gs), " %llu", (unsigned long long)rows[off[i] + (uint64_t)k]);
        for (int64_t k = 0; k < h.n && k < 6; k++) snprintf(ws + strlen(ws), sizeof ws - strlen(ws), " %lld", (long long)h.f[k]);
        CHECK_FAIL_("%s%s: point %lld (%a, %a) in {%s }, GEOS {%s }", what, pl ? " (planar)" : "", (long long)i,
                    P->xy[2 * i], P->xy[2 * i + 1], gs, ws);
      }
      int64_t want_first = h.n ? h.f[0] : -1;
      if (first[i] != want_first && bad++ < 8)
        CHECK_FAIL_("%s%s: pip_first of point %lld is %lld, GEOS %lld", what, pl ? " (planar)" : "", (long long)i,
                    (long long)first[i], (long long)want_first);
      inside += h.n > 0, multi += h.n > 1;
    }
    free(h.f);
    check_result_host_free(res, off, rows);
    rdx_result_free(ctx, res);
  }
  printf("  %s: %lld features, %lld vertices, %lld points (%ld inside, %ld in several)%s\n", what, (long long)L->nf,
         (long long)L->nv, (long long)P->n, inside / (planar + 1), multi / (planar + 1), planar ? ", planar too" : "");
  free(first);
  check_unplace(ctx, dpts);
  g_free(&G);
  rdx_polygons_destroy(r);
}

/* ---- LSI against GEOS ---- */

static void check_lsi_one(const char *what, const lb_layer *R, const lb_layer *S) {
  rdx_polygons *r = make(R), *s = make(S);
  if (!r || !s) {
    rdx_polygons_destroy(r), rdx_polygons_destroy(s);
    return;
  }
  glayer GR, GS;
  g_make(R, 1, &GR);
  g_make(S, 1, &GS);
  /* GEOS's pairs, sorted by (r, s) */
  int64_t n = 0, cap = 0, *want = NULL;
  hits h = {0, 0, NULL};
  for (int64_t j = 0; j < S->nf; j++) {
    if (GEOSisEmpty_r(geos, GS.g.geom[j])) continue;
    g_query(&GR, GS.g.geom[j], &h);
    for (int64_t k = 0; k < h.n; k++) {
      want = (int64_t *)jc_grow(want, &cap, 2 * (n + 1), 8);
      want[2 * n] = h.f[k], want[2 * n + 1] = j;
      n++;
    }
  }
  free(h.f);
  if (n > 0) qsort(want, (size_t)n, 16, cmp_pair); /* want is NULL when GEOS found no pair */
  for (int wp = 0; wp < 2; wp++) {
    rdx_join_lsi_result *res = NULL;
    int64_t launched = rdx_jn_optix_launches();
    CHECK_OK(ctx, rdx_join_lsi(ctx, r, s, NULL, wp != 0, &res));
    if (R->nv > 0 && S->nv > 0) expect_optix(ctx, what, launched, 2); /* count, fill */
    if (!res) continue;
    CHECK_EQ(res->where, gpu ? RDX_DEVICE : RDX_HOST);
    size_t pb = (size_t)res->n_pairs * 16, qb = (size_t)res->n_points * 16;
    int64_t *pairs = (int64_t *)malloc(pb + 16), *pp = (int64_t *)malloc(qb + 16);
    CHECK_OK(ctx, rdx_copy(ctx, pairs, RDX_HOST, res->pairs, res->where, pb));
    CHECK_OK(ctx, rdx_copy(ctx, pp, RDX_HOST, res->point_pairs, res->where, qb));
    if (res->n_pairs != n) CHECK_FAIL_("%s: %lld pairs, GEOS %lld", what, (long long)res->n_pairs, (long long)n);
    long bad = 0;
    for (int64_t i = 0, j = 0; (i < res->n_pairs || j < n) && bad < 8;) {
      int c = i >= res->n_pairs ? 1 : j >= n ? -1 : pairs[2 * i] != want[2 * j] ? (pairs[2 * i] < want[2 * j] ? -1 : 1)
                                                    : (pairs[2 * i + 1] > want[2 * j + 1]) - (pairs[2 * i + 1] < want[2 * j + 1]);
      if (c == 0) {
        i++, j++;
        continue;
      }
      bad++;
      if (c < 0) {
        CHECK_FAIL_("%s: pair (%lld, %lld) GEOS does not have", what, (long long)pairs[2 * i], (long long)pairs[2 * i + 1]);
        i++;
      } else {
        CHECK_FAIL_("%s: GEOS's pair (%lld, %lld) missing", what, (long long)want[2 * j], (long long)want[2 * j + 1]);
        j++;
      }
    }
    if (wp) {
      /* every point row carries a pair, and every pair has a point */
      int64_t k = 0;
      for (int64_t i = 0; i < res->n_points; i++) {
        while (k < res->n_pairs && (pairs[2 * k] < pp[2 * i] || (pairs[2 * k] == pp[2 * i] && pairs[2 * k + 1] < pp[2 * i + 1]))) k++;
        if (k == res->n_pairs || pairs[2 * k] != pp[2 * i] || pairs[2 * k + 1] != pp[2 * i + 1]) {
          CHECK_FAIL_("%s: point %lld's pair (%lld, %lld) is not a pair", what, (long long)i, (long long)pp[2 * i], (long long)pp[2 * i + 1]);
          break;
        }
      }
      CHECK(res->n_points >= res->n_pairs);
    } else {
      CHECK_EQ(res->n_points, 0);
    }
    free(pairs), free(pp);
    rdx_join_lsi_free(ctx, res);
  }
  printf("  %s: %lld x %lld edges, %lld pairs\n", what, (long long)R->nv, (long long)S->nv, (long long)n);
  free(want);
  g_free(&GR), g_free(&GS);
  rdx_polygons_destroy(r), rdx_polygons_destroy(s);
}
/* R x S and S x R */
static void check_lsi(const char *what, const lb_layer *R, const lb_layer *S) {
  char w[160];
  snprintf(w, sizeof w, "%s (R x S)", what);
  check_lsi_one(w, R, S);
  snprintf(w, sizeof w, "%s (S x R)", what);
  check_lsi_one(w, S, R);
}

/* ---- layers and cases ---- */

static void triangle(void) {
  CASE(geos_triangle);
  lb_layer T, U, V;
  lb_init(&T), lb_init(&U), lb_init(&V);
  double t[6] = {0, 0, 8, 0, 0, 8};
  lb_feature(&T), lb_ring_as(&T, t, 3, 1);
  pts P = {0};
  const double special[][2] = {{0, 0}, {8, 0}, {0, 8}, {4, 0}, {0, 4}, {4, 4}, {2, 6}, {1, 1}, {4, 3.999999999},
                               {4, 4.000000001}, {-1, 0}, {9, 0}, {5, 5}, {8, -0.0}, {0.5, 7.5}, {7.5, 0.5}};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) pt(&P, special[i][0], special[i][1]);
  points_of(&T, &P, 500, 1);
  check_pip("triangle", &T, &P, 1);
  double u[6] = {8, 0, 12, 0, 10, 4};     /* touches T at the vertex (8, 0) */
  double v[6] = {-2, 2, 10, 2, 4, -3};    /* crosses T twice */
  lb_feature(&U), lb_ring_as(&U, u, 3, 1);
  lb_feature(&V), lb_ring_as(&V, v, 3, 1);
  check_lsi("triangle x itself", &T, &T);
  check_lsi("triangle x vertex touch", &T, &U);
  check_lsi("triangle x crossing", &T, &V);
  free(P.xy);
  lb_free(&T), lb_free(&U), lb_free(&V);
}

static void grids(void) {
  CASE(geos_grid);
  const int scales[3] = {0, -200, 100};
  for (int s = 0; s < 3; s++) {
    int n = s == 0 ? 24 : 8;
    lb_layer F, C, H;
    lb_init(&F), lb_init(&C), lb_init(&H);
    lb_grid(&F, n, -8, -4, 1);         /* fine */
    lb_grid(&C, n / 2, -8, -4, 2);     /* coarse, aligned */
    lb_grid(&H, n, -7.5, -4, 1);       /* fine, shifted by half a cell in x */
    lb_scale(&F, scales[s]), lb_scale(&C, scales[s]), lb_scale(&H, scales[s]);
    pts P = {0};
    for (int i = 0; i <= 2 * n + 2; i++)
      for (int j = 0; j <= 2 * n + 2; j++) pt(&P, ldexp(-9 + 0.5 * i, scales[s]), ldexp(-5 + 0.5 * j, scales[s]));
    points_of(&F, &P, 2000, 1);
    char w[64];
    snprintf(w, sizeof w, "grid at 2^%d", scales[s]);
    check_pip(w, &F, &P, 1);
    snprintf(w, sizeof w, "coarse grid at 2^%d", scales[s]);
    check_pip(w, &C, &P, 1);
    snprintf(w, sizeof w, "grid x coarse grid at 2^%d", scales[s]);
    check_lsi(w, &F, &C);
    snprintf(w, sizeof w, "grid x itself at 2^%d", scales[s]);
    check_lsi(w, &F, &F);
    snprintf(w, sizeof w, "grid x half-shifted grid at 2^%d", scales[s]);
    check_lsi(w, &F, &H);
    free(P.xy);
    lb_free(&F), lb_free(&C), lb_free(&H);
  }
}

static void holes(void) {
  CASE(geos_holes);
  lb_layer L, D;
  lb_init(&L), lb_init(&D);
  lb_feature(&L); /* 0: shell, hole, island of its own inside the hole (a MultiPolygon) */
  lb_quad_as(&L, 0, 0, 10, 10, 1), lb_quad_as(&L, 2, 2, 8, 8, 0), lb_quad_as(&L, 4, 4, 6, 6, 1);
  lb_feature(&L), lb_quad_as(&L, 2.5, 2.5, 3.5, 3.5, 1);           /* 1: an island of another feature */
  lb_feature(&L), lb_quad_as(&L, 10, 0, 12, 10, 1);                 /* 2: shares the edge x = 10 */
  lb_feature(&L), lb_quad_as(&L, 6, 6, 8, 8, 1);                    /* 3: fills a corner of the hole */
  lb_feature(&L); /* 4: a multipolygon of three squares, one touching feature 2 at a vertex */
  lb_quad_as(&L, 12, 10, 13, 11, 1), lb_quad_as(&L, 14, 0, 15, 1, 1), lb_quad_as(&L, 14, 4, 15, 5, 1);
  double dia[8] = {13, -1, 14, 0, 13, 1, 12, 0};                /* 5: a diamond touching 2 and 4 */
  lb_feature(&L), lb_ring_as(&L, dia, 4, 1);
  lb_feature(&L); /* 6: a shell with two holes, one touching the shell at a vertex */
  double sh[8] = {-10, -10, -2, -10, -2, -2, -10, -2}, h1[6] = {-10, -6, -8, -7, -8, -5}, h2[8] = {-5, -5, -4, -6, -3, -5, -4, -4};
  lb_ring_as(&L, sh, 4, 1), lb_ring_as(&L, h1, 3, 0), lb_ring_as(&L, h2, 4, 0);
  pts P = {0};
  for (int i = 0; i <= 56; i++)
    for (int j = 0; j <= 48; j++) pt(&P, -12 + 0.5 * i, -12 + 0.5 * j);
  points_of(&L, &P, 3000, 1);
  check_pip("holes, islands, multipolygons", &L, &P, 0);
  lb_grid(&D, 8, -11, -11, 3);
  check_lsi("holes x itself", &L, &L);
  check_lsi("holes x grid", &L, &D);
  free(P.xy);
  lb_free(&L), lb_free(&D);
}

static void big_feature(void) {
  CASE(geos_big_feature);
  lb_layer L, Z;
  lb_init(&L), lb_init(&Z);
  int k = 50000;
  double *p = (double *)malloc((size_t)4 * k * sizeof *p);
  lb_star_points(p, k, 3, -2, 0.9, 1.0, 0.1);
  lb_feature(&L), lb_ring_as(&L, p, 2 * k, 1);
  pts P = {0};
  points_of(&L, &P, 20000, 37);
  check_pip("one feature of 10^5 vertices", &L, &P, 1);
  for (int i = 0; i < 20; i++) { /* thin triangles zigzagging across the star's rim */
    double t[6] = {2 + 0.1 * i, -3.2, 2.05 + 0.1 * i, -0.8, 2.1 + 0.1 * i, -3.2};
    lb_feature(&Z), lb_ring_as(&Z, t, 3, 1);
  }
  check_lsi("10^5 vertices x zigzag", &L, &Z);
  free(p), free(P.xy);
  lb_free(&L), lb_free(&Z);
}

static void empty(void) {
  CASE(geos_empty);
  lb_layer E, T, N;
  lb_init(&E), lb_init(&T), lb_init(&N);
  lb_grid(&T, 3, 0, 0, 1);
  lb_feature(&N), lb_quad_as(&N, 0, 0, 1, 1, 1);
  lb_feature(&N); /* a feature without rings */
  lb_feature(&N), lb_quad_as(&N, 1, 0, 2, 1, 1);
  pts P = {0};
  points_of(&T, &P, 200, 1);
  check_pip("empty layer", &E, &P, 1);
  check_pip("a feature without rings", &N, &P, 1);
  check_lsi("empty x grid", &E, &T);
  check_lsi("empty x empty", &E, &E);
  check_lsi("feature without rings x grid", &N, &T);
  free(P.xy);
  lb_free(&E), lb_free(&T), lb_free(&N);
}

/* n random features near (0, 0) of size ~1: stars (some with a hole), some multipolygons of two
 * stars; then every coordinate times 2^e plus an offset */
static void random_layer(lb_layer *L, int n, int e, double off) {
  double p[2 * 2 * 24];
  for (int f = 0; f < n; f++) {
    lb_feature(L);
    int parts = check_below(5) == 0 ? 2 : 1;
    for (int q = 0; q < parts; q++) {
      double cx = lb_urand(-4, 4) + 20.0 * q, cy = lb_urand(-4, 4), r1 = lb_urand(0.5, 2);
      int k = 3 + (int)check_below(20);
      lb_star_points(p, k, cx, cy, r1 * lb_urand(0.3, 1), r1, lb_urand(0, 1));
      lb_ring_as(L, p, 2 * k, 1);
      if (check_below(3) == 0) { /* a hole inside the star's inner radius */
        lb_star_points(p, k, cx, cy, r1 * 0.05, r1 * 0.25, lb_urand(0, 1));
        lb_ring_as(L, p, 2 * k, 0);
      }
    }
  }
  for (int64_t i = 0; i < 2 * L->nv; i++) L->xy[i] = ldexp(L->xy[i], e) + off;
}

static void random_case(void) {
  CASE(geos_random);
  for (int it = 0; it < 24; it++) {
    int e = (int)check_below(60) - 30;
    double off = it % 3 == 0 ? 0.0 : ldexp(lb_urand(1, 2), e + 10 + (int)check_below(30));
    lb_layer R, S;
    lb_init(&R), lb_init(&S);
    random_layer(&R, 5 + (int)check_below(30), e, off);
    random_layer(&S, 5 + (int)check_below(30), e, off);
    pts P = {0};
    points_of(&R, &P, 1500, 1);
    for (int64_t v = 0; v < S.nv; v += 3) pt(&P, S.xy[2 * v], S.xy[2 * v + 1]);
    char w[96];
    snprintf(w, sizeof w, "random %d (2^%d, offset %g)", it, e, off);
    check_pip(w, &R, &P, 0);
    check_lsi(w, &R, &S);
    free(P.xy);
    lb_free(&R), lb_free(&S);
  }
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
  geos = GEOS_init_r();
  printf("GEOS %s\n", GEOSversion());
  triangle();
  grids();
  holes();
  big_feature();
  empty();
  random_case();
  GEOS_finish_r(geos);
  return check_end(ctx);
}

#else
int main(void) {
  printf("skipped: no GEOS\n");
  return RDX_SKIP_CODE;
}
#endif
