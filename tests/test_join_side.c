/*
 * test_join_side.c: side PIP (join.h's rdx_jn_side_pip_* through the PIP ops table,
 * its side_pip member): for each edge a -> b of a layer X and a side s, the features of a layer Y
 * containing q = a + delta (b - a) + s eps n, n the left normal, 0 < eps << delta infinitesimal
 * (pip_hd.h), on the backend given by --backend, counts and first, then a fill at the scanned
 * offsets, in backend memory.
 *
 * The oracle. On layers of integer coordinates of magnitude <= 64 (checked), the infinitesimal
 * query equals the finite point a + 2^-20 u + s 2^-40 n, u = b - a, exactly representable in f64
 * (bits from 2^6 down to 2^-40): every quantity a comparison with q expands into is an integer
 * (coordinate differences, orient(c, d, a), cross and dot products with u, all below 2^15 in
 * magnitude), so the finite offsets, 2^-20 and 2^-40 times them, never outweigh the term before:
 * the finite point decides every comparison as the lexicographic rule does, and lies on no edge.
 * It is located by the brute force of tools/oracle/pip_oracle.c (which must find it on no
 * boundary) and by the public rdx_join_pip_fill; the three answers must agree exactly.
 *
 * Cases:
 *  - side_det_diff: exact_hd.h's rdx_jn_det_diff (and cross / dot of segments) against 128-bit
 *    integer arithmetic, on products near cancellation where the filter cannot decide (the exact
 *    expansions must run) and exact zeros;
 *  - side_random: random star polygons on the lattice [-64, 64]^2 and on a coarse one (many
 *    shared vertices, query edges starting at Y vertices and on Y edges, collinear overlapping
 *    edges), X against Y, Y against X, X against itself, both sides;
 *  - side_grids: a grid of unit squares against a coarser aligned grid and a shifted one (shared
 *    boundaries, vertical and horizontal edges, every start on a Y edge or vertex), cells with
 *    holes holding islands; and X = Y on these valid layers: the left side of each edge lies in
 *    its own feature and the right side does not;
 *  - side_frames: tall thin rings, so that phase (A) sends some queries down (the turned frame)
 *    and some up (checked with rdx_jn_pip_reach on CPU contexts);
 *  - side_many: queries inside more features than pass 1's set holds (pass 2 answers them);
 *  - side_scaled: every layer pair above scaled by 2^-30 and moved by (1e6, -1e6), exactly: the
 *    answers must be identical to the unscaled pair's, although every float32 box of the moved
 *    layers covers the whole layer.
 * The tie levels of the rule (orient(l, r, a) = 0 decided by cross, then by dot) are counted from
 * the data and must occur.
 */
#include <math.h>

static long det_diff_exact_hits;
#define RDX_JN_EXACT_HIT_DET_DIFF() (det_diff_exact_hits++)

#include "join_check.h"
#include "join/pip_hd.h"
#include "pip_oracle.h"

static rdx_context *ctx;
static int gpu;

/* ---- side PIP through the ops table ---- */

typedef struct answers {
  int64_t n;
  uint64_t *counts, *offsets;
  int64_t *first, *features;
} answers;
static void answers_free(answers *A) {
  free(A->counts), free(A->offsets), free(A->first), free(A->features);
  memset(A, 0, sizeof *A);
}

/* Side PIP of X's edges in Y (Y's index built here when missing): counts and first, then the
 * features at the scanned offsets, every buffer in backend memory. */
static void side_run(rdx_polygons *X, rdx_polygons *Y, int side, answers *A) {
  const rdx_jn_ops *ops = rdx_jn_find_ops(RDX_JN_OP_PIP, rdx_context_backend(ctx));
  rdx_jn_side_pip_fn fn = ops ? ops->side_pip : NULL;
  memset(A, 0, sizeof *A);
  if (fn == NULL) {
    CHECK_FAIL_("%s", "no side PIP in the PIP ops table");
    return;
  }
  if (!Y->index.built) CHECK_OK(ctx, rdx_polygons_build_index(ctx, Y, NULL));
  const rdx_jn_arrays *xa = rdx_jn_backend_arrays(X, gpu);
  const int64_t n = xa->n_vertices;
  A->n = n;
  A->counts = (uint64_t *)calloc((size_t)n + 1, 8);
  A->first = (int64_t *)calloc((size_t)n + 1, 8);
  A->offsets = (uint64_t *)calloc((size_t)n + 1, 8);
  void *dc = check_place(ctx, A->counts, (size_t)n * 8), *df = check_place(ctx, A->first, (size_t)n * 8);
  rdx_jn_pip_out out = {(uint64_t *)dc, (int64_t *)df, NULL, NULL};
  int64_t launched = rdx_jn_optix_launches();
  CHECK_OK(ctx, fn(ctx, Y, &Y->index, xa->xy, xa->edge_end, n, side, &out));
  check_fetch(ctx, A->counts, dc, (size_t)n * 8);
  check_fetch(ctx, A->first, df, (size_t)n * 8);
  check_unplace(ctx, dc), check_unplace(ctx, df);
  for (int64_t i = 0; i < n; i++) A->offsets[i + 1] = A->offsets[i] + A->counts[i];
  const uint64_t total = A->offsets[n];
  A->features = (int64_t *)calloc((size_t)total + 1, 8);
  void *doff = check_place(ctx, A->offsets, (size_t)(n + 1) * 8), *dfe = check_place(ctx, A->features, (size_t)total * 8);
  rdx_jn_pip_out fill = {NULL, NULL, (const uint64_t *)doff, (uint64_t *)dfe};
  CHECK_OK(ctx, fn(ctx, Y, &Y->index, xa->xy, xa->edge_end, n, side, &fill));
  check_fetch(ctx, A->features, dfe, (size_t)total * 8);
  check_unplace(ctx, doff), check_unplace(ctx, dfe);
  expect_optix(ctx, "side PIP", launched, 2);
}

/* ---- the oracle ---- */

/* 1 when every coordinate of the layer is an integer of magnitude <= 64 (the oracle's premise). */
static int small_integers(const rdx_polygons *p) {
  for (int64_t k = 0; k < 2 * p->host.n_vertices; k++) {
    double v = p->host.xy[k];
    if (!(fabs(v) <= 64.0 && v == floor(v))) return 0;
  }
  return 1;
}

/* The finite stand-in of X's edge i's side query (the file comment). */
static void finite_query(const rdx_polygons *X, int64_t i, int side, double *q) {
  const double *a = X->host.xy + 2 * i, *b = X->host.xy + 2 * (uint64_t)X->host.edge_end[i];
  double ux = b[0] - a[0], uy = b[1] - a[1];
  q[0] = a[0] + 0x1p-20 * ux - side * 0x1p-40 * uy; /* n = (-u.y, u.x) */
  q[1] = a[1] + 0x1p-20 * uy + side * 0x1p-40 * ux;
}

/* Coverage counters over every check (the file comment). */
static int64_t n_queries, n_at_vertex, n_on_edge, n_level_cross, n_level_dot, n_multi;

static int64_t isgn(int64_t v) { return (v > 0) - (v < 0); }

/* Count, for X's edge i, where its start lies on Y and at which level Y's edges spanning q.x are
 * decided (integers: small layers only). */
static void coverage(const rdx_polygons *X, const rdx_polygons *Y, int64_t i, int side) {
  const double *a = X->host.xy + 2 * i, *b = X->host.xy + 2 * (uint64_t)X->host.edge_end[i];
  int64_t ax = (int64_t)a[0], ay = (int64_t)a[1], ux = (int64_t)b[0] - ax, uy = (int64_t)b[1] - ay;
  int64_t px = ux != 0 ? isgn(ux) : -side * isgn(uy);
  int at_vertex = 0, on_edge = 0;
  for (int64_t e = 0; e < Y->host.n_vertices; e++) {
    const double *c = Y->host.xy + 2 * e, *d = Y->host.xy + 2 * (uint64_t)Y->host.edge_end[e];
    int64_t cx = (int64_t)c[0], cy = (int64_t)c[1], dx = (int64_t)d[0], dy = (int64_t)d[1];
    at_vertex |= cx == ax && cy == ay;
    int64_t o = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx);
    if (o == 0 && ax >= (cx < dx ? cx : dx) && ax <= (cx < dx ? dx : cx) && ay >= (cy < dy ? cy : dy) &&
        ay <= (cy < dy ? dy : cy) && !(cx == ax && cy == ay) && !(dx == ax && dy == ay))
      on_edge = 1;
    /* spanning q.x lexicographically */
    int lc = cx < ax || (cx == ax && px > 0), ld = dx < ax || (dx == ax && px > 0);
    if (lc == ld || o != 0) continue;
    int64_t lx = lc ? cx : dx, ly = lc ? cy : dy, rx = lc ? dx : cx, ry = lc ? dy : cy;
    int64_t cr = (rx - lx) * uy - (ry - ly) * ux;
    if (cr != 0) n_level_cross++;
    else n_level_dot++;
  }
  n_at_vertex += at_vertex;
  n_on_edge += on_edge;
}

/* Side PIP of X's edges in Y on both sides against the oracle (and the public PIP of the finite
 * points); Ya is Y as built (its CSR input), for the brute force. */
static void check_pair(const char *what, rdx_polygons *X, rdx_polygons *Y, const lb_layer *Ya) {
  if (!small_integers(X) || !small_integers(Y)) {
    CHECK_FAIL_("%s: the layers are not small integers; the oracle does not apply", what);
    return;
  }
  pip_oracle_layer O = {Ya->fo, Ya->ro, Ya->xy, Ya->nf};
  int64_t *buf = (int64_t *)malloc((size_t)(Ya->nf + 1) * 8);
  const int64_t n = X->host.n_vertices;
  double *qs = (double *)malloc((size_t)n * 16);
  for (int side = -1; side <= 1; side += 2) {
    answers A;
    side_run(X, Y, side, &A);
    if (A.n != n) break;
    for (int64_t i = 0; i < n; i++) finite_query(X, i, side, qs + 2 * i);
    /* the public PIP of the finite points, as a second reference */
    uint64_t *pc = (uint64_t *)calloc((size_t)n + 1, 8), *po = (uint64_t *)calloc((size_t)n + 1, 8);
    rdx_array pa = rdx_host_matrix(qs, n, 2, RDX_F64);
    CHECK_OK(ctx, rdx_join_pip_count(ctx, Y, pa, NULL, rdx_host_array(pc, n, RDX_U64)));
    for (int64_t i = 0; i < n; i++) po[i + 1] = po[i] + pc[i];
    int64_t *pf = (int64_t *)calloc((size_t)po[n] + 1, 8);
    CHECK_OK(ctx, rdx_join_pip_fill(ctx, Y, pa, NULL, rdx_host_array(po, n + 1, RDX_U64),
                                    rdx_host_array(pf, (int64_t)po[n], RDX_I64)));
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
      int on = 0;
      int64_t c = pip_oracle_point(&O, qs[2 * i], qs[2 * i + 1], buf, &on);
      int ok = !on && A.counts[i] == (uint64_t)c && A.first[i] == (c ? buf[0] : -1) && pc[i] == (uint64_t)c;
      for (int64_t k = 0; ok && k < c; k++) ok = A.features[A.offsets[i] + k] == buf[k] && pf[po[i] + k] == buf[k];
      if (!ok) {
        bad++;
        const double *a = X->host.xy + 2 * i, *b = X->host.xy + 2 * (uint64_t)X->host.edge_end[i];
        CHECK_FAIL_("%s: edge %lld (%g, %g) -> (%g, %g) side %d: side PIP count %llu first %lld, oracle count %lld "
                    "first %lld (on a boundary: %d), public PIP count %llu",
                    what, (long long)i, a[0], a[1], b[0], b[1], side, (unsigned long long)A.counts[i],
                    (long long)A.first[i], (long long)c, (long long)(c ? buf[0] : -1), on, (unsigned long long)pc[i]);
      }
      n_multi += c >= 2;
      coverage(X, Y, i, side);
    }
    n_queries += n;
    free(pc), free(po), free(pf);
    answers_free(&A);
  }
  printf("  %s: %lld edges of X in %lld features of Y, both sides\n", what, (long long)n, (long long)Ya->nf);
  free(qs);
  free(buf);
}

/* X = Y, a valid layer (features do not overlap, rings do not cross): the left side of each edge
 * lies in its own feature, the right side does not. */
static void check_self(const char *what, rdx_polygons *X) {
  const int64_t n = X->host.n_vertices;
  int bad = 0;
  for (int side = -1; side <= 1; side += 2) {
    answers A;
    side_run(X, X, side, &A);
    if (A.n != n) break;
    for (int64_t i = 0; i < n && bad < 5; i++) {
      int64_t own = X->host.edge_feat[i], found = 0;
      for (uint64_t k = A.offsets[i]; k < A.offsets[i + 1]; k++) found |= A.features[k] == own;
      if (found != (side > 0)) {
        bad++;
        CHECK_FAIL_("%s: edge %lld of feature %lld: its %s side %s in its own feature", what, (long long)i,
                    (long long)own, side > 0 ? "left" : "right", found ? "lies" : "does not lie");
      }
    }
    answers_free(&A);
  }
}

/* ---- layers ---- */

/* A star polygon of n vertices around (cx, cy) on the lattice of step `step`, within [-64, 64]. */
static void lattice_star(lb_layer *L, int64_t cx, int64_t cy, int64_t r, int n, int64_t step) {
  double *v = (double *)malloc((size_t)n * 16);
  int m = 0;
  for (int k = 0; k < n; k++) {
    double ang = 2.0 * 3.14159265358979323846 * ((double)k + 0.8 * (double)check_below(1000) / 1000.0) / n;
    double rr = (double)r * (0.3 + 0.7 * (double)check_below(1000) / 1000.0);
    int64_t x = cx + (int64_t)llround(rr * cos(ang) / (double)step) * step;
    int64_t y = cy + (int64_t)llround(rr * sin(ang) / (double)step) * step;
    x = x < -64 ? -64 : x > 64 ? 64 : x;
    y = y < -64 ? -64 : y > 64 ? 64 : y;
    if (m > 0 && v[2 * m - 2] == (double)x && v[2 * m - 1] == (double)y) continue;
    v[2 * m] = (double)x, v[2 * m + 1] = (double)y, m++;
  }
  while (m > 1 && v[0] == v[2 * m - 2] && v[1] == v[2 * m - 1]) m--;
  /* at least 3 distinct vertices; else a small triangle */
  int distinct = m >= 3;
  for (int k = 2; distinct && k < m; k++) distinct = !(v[2 * k] == v[0] && v[2 * k + 1] == v[1]);
  if (m < 3 || !distinct) {
    int64_t x0 = cx < 60 ? cx : 60, y0 = cy < 60 ? cy : 60;
    double t[6] = {(double)x0, (double)y0, (double)(x0 + step), (double)y0, (double)x0, (double)(y0 + step)};
    lb_ring(L, t, 3);
  } else {
    lb_ring(L, v, m);
  }
  free(v);
}

static void random_layer(lb_layer *L, int n_features, int64_t step) {
  lb_init(L);
  for (int f = 0; f < n_features; f++) {
    lb_feature(L);
    int64_t cx = ((int64_t)check_below(97) - 48) / step * step, cy = ((int64_t)check_below(97) - 48) / step * step;
    lattice_star(L, cx, cy, 8 + (int64_t)check_below(24), 3 + (int)check_below(10), step);
    if (f % 3 == 0) lattice_star(L, cx, cy, 4 + (int64_t)check_below(8), 3 + (int)check_below(6), step); /* even-odd */
  }
}

/* A g x g grid of square cells of side h from (x0, y0); holes with islands (the same feature's
 * or their own) in some cells when holes is set and h >= 8. */
static void grid_layer(lb_layer *L, int g, int64_t h, int64_t x0, int64_t y0, int holes) {
  lb_init(L);
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < g; j++)
      for (int i = 0; i < g; i++) {
        double x = (double)(x0 + i * h), y = (double)(y0 + j * h), hh = (double)h;
        int holed = holes && h >= 8 && (i + 2 * j) % 3 == 1, own = (i + j) % 2 == 0;
        if (pass == 1) {
          if (holed && own) {
            lb_feature(L);
            lb_quad(L, x + hh / 4 + 1, y + hh / 4 + 1, x + 3 * hh / 4 - 1, y + 3 * hh / 4 - 1);
          }
          continue;
        }
        lb_feature(L);
        lb_quad(L, x, y, x + hh, y + hh);
        if (holed) {
          lb_quad(L, x + hh / 4, y + hh / 4, x + 3 * hh / 4, y + 3 * hh / 4);
          if (!own) lb_quad(L, x + hh / 4 + 1, y + hh / 4 + 1, x + 3 * hh / 4 - 1, y + 3 * hh / 4 - 1);
        }
      }
}

/* ---- scaling ---- */

/* L moved to (1e6 + 2^-30 x, -1e6 + 2^-30 y): exact (|x| <= 64: 2^20 down to 2^-30 fits 53 bits). */
static void scaled_copy(const lb_layer *L, lb_layer *S) {
  *S = *L;
  S->fo = (uint64_t *)malloc((size_t)(L->nf + 1) * 8);
  S->ro = (uint64_t *)malloc((size_t)(L->nr + 1) * 8);
  S->xy = (double *)malloc((size_t)L->nv * 16 + 16);
  S->shell = (unsigned char *)malloc((size_t)L->nr + 1);
  memcpy(S->fo, L->fo, (size_t)(L->nf + 1) * 8);
  memcpy(S->ro, L->ro, (size_t)(L->nr + 1) * 8);
  memcpy(S->shell, L->shell, (size_t)L->nr);
  for (int64_t v = 0; v < L->nv; v++) {
    S->xy[2 * v] = 1e6 + 0x1p-30 * L->xy[2 * v];
    S->xy[2 * v + 1] = -1e6 + 0x1p-30 * L->xy[2 * v + 1];
    CHECK((S->xy[2 * v] - 1e6) * 0x1p30 == L->xy[2 * v] && (S->xy[2 * v + 1] + 1e6) * 0x1p30 == L->xy[2 * v + 1]);
  }
  S->cap_f = L->nf + 1, S->cap_r = L->nr + 1, S->cap_v = 2 * L->nv + 2, S->cap_s = L->nr + 1;
}

/* The pair scaled and moved answers as the pair itself, query for query. */
static void check_scaled(const char *what, const lb_layer *XL, const lb_layer *YL) {
  lb_layer XS, YS;
  scaled_copy(XL, &XS);
  scaled_copy(YL, &YS);
  rdx_polygons *X = lb_create(ctx, XL), *Y = lb_create(ctx, YL), *XM = lb_create(ctx, &XS), *YM = lb_create(ctx, &YS);
  if (X && Y && XM && YM) {
    CHECK_EQ(X->host.n_vertices, XM->host.n_vertices);
    for (int side = -1; side <= 1; side += 2) {
      answers A, B;
      side_run(X, Y, side, &A);
      side_run(XM, YM, side, &B);
      int same = A.n == B.n && A.n == X->host.n_vertices;
      for (int64_t i = 0; same && i < A.n; i++) same = A.counts[i] == B.counts[i] && A.first[i] == B.first[i];
      for (uint64_t k = 0; same && k < A.offsets[A.n]; k++) same = A.features[k] == B.features[k];
      if (!same) CHECK_FAIL_("%s: the scaled and moved pair answers differently (side %d)", what, side);
      answers_free(&A), answers_free(&B);
    }
    printf("  %s, scaled by 2^-30 and moved by (1e6, -1e6): identical answers\n", what);
  }
  rdx_polygons_destroy(X), rdx_polygons_destroy(Y), rdx_polygons_destroy(XM), rdx_polygons_destroy(YM);
  lb_free(&XS), lb_free(&YS);
}

/* One pair: X against Y, Y against X, each against itself, and the scaled copies. */
static void check_layers(const char *what, lb_layer *XL, lb_layer *YL, int valid) {
  rdx_polygons *X = lb_create(ctx, XL), *Y = lb_create(ctx, YL);
  if (X && Y) {
    char w[128];
    check_pair(what, X, Y, YL);
    snprintf(w, sizeof w, "%s, reversed", what);
    check_pair(w, Y, X, XL);
    snprintf(w, sizeof w, "%s, X in itself", what);
    check_pair(w, X, X, XL);
    if (valid) {
      check_self(what, X);
      check_self(what, Y);
    }
  }
  rdx_polygons_destroy(X), rdx_polygons_destroy(Y);
  check_scaled(what, XL, YL);
}

/* ---- cases ---- */

typedef __int128 i128;
static int sgn128(i128 v) { return (v > 0) - (v < 0); }

static void det_diff(void) {
  long before = det_diff_exact_hits;
  int64_t zeros = 0, naive_wrong = 0; /* cases where double arithmetic gets a wrong nonzero sign */
  for (int k = 0; k < 200000; k++) {
    double c[8];
    int kind = (int)check_below(5);
    if (kind == 0) { /* random, up to 2^50 */
      for (int t = 0; t < 8; t++) c[t] = (double)((int64_t)check_below(1ull << 51) - (1ll << 50));
    } else if (kind == 4) { /* roundings of opposite directions: plain double arithmetic errs in sign */
      int64_t s1 = (int64_t)check_below(4096), s2 = (int64_t)check_below(8192), sg = check_below(2) ? 1 : -1;
      c[0] = (double)sg * 0x1p60, c[1] = (double)(sg * s1), c[2] = 3, c[3] = 0;
      c[4] = (double)(sg * (3ll << 60)), c[5] = (double)(sg * s2), c[6] = 1, c[7] = 0;
    } else if (kind == 3) { /* Cassini: F(m+1) F(m-1) - F(m)^2 = +-1 beside products up to 2^100 */
      int m = 40 + (int)check_below(33);
      int64_t f0 = 0, f1 = 1;
      for (int t = 0; t < m - 1; t++) {
        int64_t f2 = f0 + f1;
        f0 = f1, f1 = f2;
      } /* f0 = F(m - 1), f1 = F(m) */
      int64_t fm1 = f0, fm = f1, fp1 = f0 + f1;
      int64_t base[4];
      for (int t = 0; t < 4; t++) base[t] = (int64_t)check_below(1ull << 48) - (1ll << 47);
      int flip = (int)check_below(2);
      c[0] = (double)(base[0] + (flip ? fm : fp1)), c[1] = (double)base[0];
      c[2] = (double)(base[1] + (flip ? fm : fm1)), c[3] = (double)base[1];
      c[4] = (double)(base[2] + (flip ? fp1 : fm)), c[5] = (double)base[2];
      c[6] = (double)(base[3] + (flip ? fm1 : fm)), c[7] = (double)base[3];
    } else { /* near cancellation: A B = C D (+ a nudge), factors of products around 2^48 .. 2^100 */
      int bits = 10 + (int)check_below(16);
      int64_t p = (int64_t)check_below(1ull << bits) + 1, q = (int64_t)check_below(1ull << bits) + 1;
      int64_t r = (int64_t)check_below(1ull << bits) + 1, s = (int64_t)check_below(1ull << bits) + 1;
      int64_t A = p * q, B = r * s, C = p * r, D = q * s; /* A B = C D */
      int64_t base[4];
      for (int t = 0; t < 4; t++) base[t] = (int64_t)check_below(1ull << 49) - (1ll << 48);
      int64_t nudge = kind == 2 ? (int64_t)check_below(3) - 1 : 0;
      c[0] = (double)(base[0] + A), c[1] = (double)base[0];
      c[2] = (double)(base[1] + B + nudge), c[3] = (double)base[1];
      c[4] = (double)(base[2] + C), c[5] = (double)base[2];
      c[6] = (double)(base[3] + D), c[7] = (double)base[3];
    }
    i128 want = (i128)((int64_t)c[0] - (int64_t)c[1]) * ((int64_t)c[2] - (int64_t)c[3]) -
                (i128)((int64_t)c[4] - (int64_t)c[5]) * ((int64_t)c[6] - (int64_t)c[7]);
    int got = rdx_jn_det_diff(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    zeros += want == 0;
    double naive = (c[0] - c[1]) * (c[2] - c[3]) - (c[4] - c[5]) * (c[6] - c[7]);
    naive_wrong += naive != 0.0 && (naive > 0.0) != (want > 0);
    if (got != sgn128(want)) {
      CHECK_FAIL_("det_diff(%.17g, %.17g, %.17g, %.17g, %.17g, %.17g, %.17g, %.17g) = %d, exactly %d", c[0], c[1],
                  c[2], c[3], c[4], c[5], c[6], c[7], got, sgn128(want));
      break;
    }
    /* cross and dot of segments are det_diff's two arrangements */
    double l[2] = {c[1], c[5]}, r[2] = {c[0], c[4]}, a[2] = {c[7], c[3]}, b[2] = {c[6], c[2]};
    i128 rlx = (i128)((int64_t)r[0] - (int64_t)l[0]), rly = (i128)((int64_t)r[1] - (int64_t)l[1]);
    i128 ux = (i128)((int64_t)b[0] - (int64_t)a[0]), uy = (i128)((int64_t)b[1] - (int64_t)a[1]);
    CHECK_EQ(rdx_jn_cross_segs(l, r, a, b), sgn128(rlx * uy - rly * ux));
    CHECK_EQ(rdx_jn_dot_segs(l, r, a, b), sgn128(rlx * ux + rly * uy));
  }
  long hits = det_diff_exact_hits - before;
  printf("  det_diff: 200000 cases, %lld exact zeros, %lld of wrong sign in plain doubles, %ld decided by the "
         "expansions\n", (long long)zeros, (long long)naive_wrong, hits);
  CHECK(zeros > 1000);
  CHECK(naive_wrong > 20);
  CHECK(hits > 1000);
}

static void random_pairs(void) {
  for (int k = 0; k < 6; k++) {
    int64_t step = k < 3 ? 1 : 8; /* a coarse lattice: many coincidences */
    lb_layer XL, YL;
    random_layer(&XL, 12 + (int)check_below(12), step);
    random_layer(&YL, 12 + (int)check_below(12), step);
    char what[64];
    snprintf(what, sizeof what, "random stars %d (lattice step %lld)", k, (long long)step);
    check_layers(what, &XL, &YL, 0);
    lb_free(&XL), lb_free(&YL);
  }
}

static void grids(void) {
  /* unit cells of [-16, 16]^2 against cells of 8 (aligned) and of 8 shifted by (3, 4) and 4 */
  static const int64_t coarse[3][4] = {{4, 8, -16, -16}, {4, 8, -13, -12}, {9, 4, -18, -18}};
  for (int k = 0; k < 3; k++) {
    lb_layer XL, YL;
    grid_layer(&XL, 32, 1, -16, -16, 0);
    grid_layer(&YL, (int)coarse[k][0], coarse[k][1], coarse[k][2], coarse[k][3], 1);
    char what[64];
    snprintf(what, sizeof what, "unit grid against a grid of %lld at (%lld, %lld)", (long long)coarse[k][1],
             (long long)coarse[k][2], (long long)coarse[k][3]);
    check_layers(what, &XL, &YL, 1);
    lb_free(&XL), lb_free(&YL);
  }
  /* holes with islands against holes with islands */
  lb_layer XL, YL;
  grid_layer(&XL, 6, 16, -48, -48, 1);
  grid_layer(&YL, 5, 16, -40, -44, 1);
  check_layers("holed grids", &XL, &YL, 1);
  lb_free(&XL), lb_free(&YL);
}

/* Tall thin rings: near their bottom the way down is shorter (the turned frame), near their top
 * the way up. */
static void frames(void) {
  lb_layer YL, XL;
  lb_init(&YL);
  for (int f = 0; f < 8; f++) {
    lb_feature(&YL);
    double x = -40 + 10 * f;
    double r[10] = {x, -60, x + 2, -60, x + 2, 60, x + 1, 61, x, 60}; /* a pentagon, tall and thin */
    lb_ring(&YL, r, 5);
    if (f % 2 == 0) lb_quad(&YL, x + 0.0, -20, x + 2, 20); /* a hole across it, the same feature's */
  }
  lb_init(&XL); /* small diamonds and squares across the rings, at every height */
  for (int k = 0; k < 40; k++) {
    lb_feature(&XL);
    double x = -41 + 10 * (double)check_below(8) + (double)check_below(4), y = -62 + (double)check_below(124);
    if (k % 2) lb_quad(&XL, x, y, x + 1, y + 1);
    else {
      double d[8] = {x, y - 1, x + 1, y, x, y + 1, x - 1, y};
      lb_ring(&XL, d, 4);
    }
  }
  for (int64_t v = 0; v < XL.nv; v++) /* keep the oracle's lattice */
    for (int a = 0; a < 2; a++) XL.xy[2 * v + a] = fmin(64, fmax(-64, XL.xy[2 * v + a]));
  check_layers("tall thin rings", &XL, &YL, 0);
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) { /* both frames taken */
    rdx_polygons *X = lb_create(ctx, &XL), *Y = lb_create(ctx, &YL);
    CHECK_OK(ctx, rdx_polygons_build_index(ctx, Y, NULL));
    rdx_jn_pip_bvhs v;
    v.groups = rdx_bvh_view_of(&Y->index.scene.bvh);
    v.rings = rdx_bvh_view_of(&Y->index.rings.bvh);
    int64_t up = 0, down = 0;
    for (int64_t i = 0; i < X->host.n_vertices; i++) {
      float reach = rdx_jn_pip_reach(&v, X->host.xy[2 * i], X->host.xy[2 * i + 1]);
      up += reach > 0.0f;
      down += reach < 0.0f && reach != -INFINITY;
    }
    printf("  tall thin rings: %lld queries traced up, %lld down\n", (long long)up, (long long)down);
    CHECK(up > 0);
    CHECK(down > 0);
    rdx_polygons_destroy(X), rdx_polygons_destroy(Y);
  }
  lb_free(&XL), lb_free(&YL);
}

/* Queries in 150 features at once: more than pass 1's set holds on every backend. */
static void many(void) {
  lb_layer YL, XL;
  lb_init(&YL);
  for (int f = 0; f < 150; f++) {
    lb_feature(&YL);
    double x0 = -60 + (double)check_below(40), y0 = -60 + (double)check_below(40); /* all hold [-21, 25]^2 */
    lb_quad(&YL, x0, y0, 64 - (double)check_below(40), 64 - (double)check_below(40));
  }
  grid_layer(&XL, 4, 4, -8, -8, 0);
  rdx_polygons *X = lb_create(ctx, &XL), *Y = lb_create(ctx, &YL);
  if (X && Y) check_pair("150 overlapping squares", X, Y, &YL);
  rdx_polygons_destroy(X), rdx_polygons_destroy(Y);
  check_scaled("150 overlapping squares", &XL, &YL);
  lb_free(&XL), lb_free(&YL);
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
  if (CASE_RUN(side_det_diff)) det_diff();
  if (CASE_RUN(side_random)) random_pairs();
  if (CASE_RUN(side_grids)) grids();
  if (CASE_RUN(side_frames)) frames();
  if (CASE_RUN(side_many)) many();
  printf("  %lld queries: %lld start at a vertex of Y, %lld inside an edge of Y; spanning edges through a decided "
         "by cross %lld, by dot %lld; %lld queries in several features\n",
         (long long)n_queries, (long long)n_at_vertex, (long long)n_on_edge, (long long)n_level_cross,
         (long long)n_level_dot, (long long)n_multi);
  if (!check_filtered()) {
    CHECK(n_at_vertex > 100);
    CHECK(n_on_edge > 100);
    CHECK(n_level_cross > 100);
    CHECK(n_level_dot > 100);
    CHECK(n_multi > 100);
  }
  return check_end(ctx);
}
