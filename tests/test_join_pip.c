/*
 * test_join_pip.c: point in polygon (rdx_join_pip_first, _count, _fill, _alloc) and the join index
 * (rdx_polygons_build_index) on the backend given by --backend, every answer against the brute
 * force of tools/oracle/pip_oracle.c.
 *
 * Every layer is made by rdx_polygons_create from CSR arrays built here, and answered four ways
 * (first, count, fill at the oracle's offsets, alloc), with host f64 points, the same points as
 * f32 where they are f32 values, and device points and outputs on GPU backends; on planar layers
 * once more with the planar rule, which must answer as the general one. Cases:
 *  - pip_triangle: one triangle, points inside, outside, on each edge and vertex;
 *  - pip_grid: a jittered grid of quadrilateral features (every inner boundary stored twice, in
 *    opposite directions), some cells with a hole holding an island (of the same feature or a
 *    feature of its own), one MultiPolygon of two cells; dyadic coordinates so that points on
 *    edges, at vertices and a float step beside them are exact; and an axis-aligned grid
 *    (vertical and horizontal edges, points on the grid lines);
 *  - pip_float_precision: the grid with cells far below a float32 ulp of their coordinates, so
 *    that every box and ray rounds (RayJoin's conservative representation carries the answers),
 *    and grids beyond float32's range, below its normal numbers and across the boxes' clamp;
 *  - pip_overlapping: random star polygons that overlap, some features of two overlapping rings
 *    (even-odd), with points in several features at once;
 *  - pip_big_feature: one feature of 10^5 vertices;
 *  - pip_many_features: 300 overlapping squares, points inside more features than the first
 *    pass's event set holds (its second pass answers them);
 *  - pip_index_options: group_threshold 1, 3.5 and 64 and pad_ulps 1, 2 and 8, through
 *    rdx_polygons_build_index and through a join's temporary index, answer alike; what describe
 *    says about the index; a failed build keeps the old index;
 *  - pip_index_identical (GPU backends): the index's groups and float32 boxes, ring boxes and
 *    ring spans equal the CPU build's bit for bit, at s = 1, 3.5 and 64;
 *  - pip_rings: the general rule's phase (A) (pip_hd.h): each ring's box and y-span are those of
 *    its edges taken at once (the union of its groups', index_hd.h), the ring scene keeps the
 *    rings the dominance rule keeps (some are left out), and on CPU contexts rdx_jn_pip_reach
 *    equals a brute force over every ring's box, some points meeting none and both ways (up,
 *    down) taken;
 *  - pip_naive: RayJoin's plain float32 version (bench_api.h's rdx_join_force_naive) misses
 *    answers the conservative index finds: a triangle whose lowest vertex lies between two
 *    float32 values, inside a tall square of another feature, and points just above that vertex
 *    (and on it) below its float32 rounding;
 *  - pip_empty: an empty layer, an empty batch;
 *  - pip_bad_input: each refused argument with its status and sentence, outputs untouched;
 *  - pip_fill_offsets: a fill with offsets that do not match the counts is refused and writes
 *    nothing;
 *  - pip_faults: the memory account fails the 1st, 2nd, ... allocation of an alloc call: out of
 *    memory and nothing held, until the call goes through.
 */
#include "join_check.h"
#include "join/pip_hd.h"
#include "pip_oracle.h"

#include <float.h>
#include <math.h>

/* Internal (src/core/core.h): fault injection of the memory account. */
void rdx_mem_fail_after(rdx_context *ctx, int64_t n);

static rdx_context *ctx;
static int gpu;

/* A layer built with join_check.h, on the test's context. */
static rdx_polygons *make(const lb_layer *L) { return lb_create(ctx, L); }

/* ---- points ---- */

typedef struct pts {
  double *xy;
  int64_t n, cap;
} pts;
static void pt_add(pts *P, double x, double y) {
  P->xy = (double *)jc_grow(P->xy, &P->cap, 2 * (P->n + 1), 8);
  P->xy[2 * P->n] = x;
  P->xy[2 * P->n + 1] = y;
  P->n++;
}

/* Points that test a layer: random ones over its box (and beyond), its vertices, points a
 * fraction along its edges (exact for dyadic layers), and float steps beside each of them. */
static void points_for(const lb_layer *L, pts *P, int64_t n_random, int64_t n_special) {
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int64_t v = 0; v < L->nv; v++)
    for (int a = 0; a < 2; a++) {
      if (L->xy[2 * v + a] < lo[a]) lo[a] = L->xy[2 * v + a];
      if (L->xy[2 * v + a] > hi[a]) hi[a] = L->xy[2 * v + a];
    }
  if (L->nv == 0) lo[0] = lo[1] = 0, hi[0] = hi[1] = 1;
  double w = hi[0] - lo[0], h = hi[1] - lo[1];
  for (int64_t i = 0; i < n_random; i++) pt_add(P, lb_urand(lo[0] - 0.1 * w, hi[0] + 0.1 * w), lb_urand(lo[1] - 0.1 * h, hi[1] + 0.1 * h));
  for (int64_t i = 0; i < n_special && L->nv > 0; i++) {
    int64_t r = (int64_t)check_below((uint64_t)L->nr);
    uint64_t v0 = L->ro[r], v1 = L->ro[r + 1];
    uint64_t v = v0 + check_below(v1 - v0), u = v + 1 < v1 ? v + 1 : v0;
    double ax = L->xy[2 * v], ay = L->xy[2 * v + 1], bx = L->xy[2 * u], by = L->xy[2 * u + 1];
    double x, y;
    switch (check_below(4)) {
      case 0: x = ax, y = ay; break; /* a vertex */
      case 1: {                      /* k/8 of the way along the edge */
        double k = (double)check_below(9) / 8.0;
        x = ax + (bx - ax) * k, y = ay + (by - ay) * k;
        break;
      }
      case 2: x = ax + (bx - ax) * 0.5, y = ay + (by - ay) * 0.5; break;
      default: x = ax, y = ay + (by - ay) * 0.25; break; /* beside or on (vertical) edges */
    }
    switch (check_below(6)) { /* a float step away, half the time (not from 0: a subnormal is refused) */
      case 0: y = y != 0 ? nextafter(y, INFINITY) : y; break;
      case 1: y = y != 0 ? nextafter(y, -INFINITY) : y; break;
      case 2: x = x != 0 ? nextafter(x, INFINITY) : x; break;
      default: break;
    }
    pt_add(P, x, y);
  }
}

/* ---- answers against the oracle ---- */

typedef struct truth {
  uint64_t *counts, *offsets;
  int64_t *first, *features;
  int64_t n_boundary, n_multi; /* coverage: points on a boundary, points in two features or more */
} truth;

static void truth_of(const lb_layer *L, const double *xy, int64_t n, truth *T) {
  pip_oracle_layer O = {L->fo, L->ro, L->xy, L->nf};
  T->counts = (uint64_t *)malloc((size_t)(n + 1) * 8);
  T->offsets = (uint64_t *)malloc((size_t)(n + 1) * 8);
  T->first = (int64_t *)malloc((size_t)(n + 1) * 8);
  int64_t *buf = (int64_t *)malloc((size_t)(L->nf + 1) * 8);
  int64_t cap = 16, total = 0;
  T->features = (int64_t *)malloc((size_t)cap * 8);
  T->n_boundary = T->n_multi = 0;
  T->offsets[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int on = 0;
    int64_t c = pip_oracle_point(&O, xy[2 * i], xy[2 * i + 1], buf, &on);
    T->counts[i] = (uint64_t)c;
    T->first[i] = c ? buf[0] : -1;
    T->features = (int64_t *)jc_grow(T->features, &cap, total + c, 8);
    memcpy(T->features + total, buf, (size_t)c * 8);
    total += c;
    T->offsets[i + 1] = (uint64_t)total;
    T->n_boundary += on;
    T->n_multi += c >= 2;
  }
  free(buf);
}
static void truth_free(truth *T) {
  free(T->counts), free(T->offsets), free(T->first), free(T->features);
  memset(T, 0, sizeof *T);
}

/* The four calls on points (f64 or f32 host values in `hpts`, placed on the device for `dev`),
 * compared with T. */
static void compare(const char *what, rdx_polygons *layer, const void *hpts, rdx_dtype dt, int64_t n,
                    const rdx_join_options *o, const truth *T, int dev) {
  size_t pb = (size_t)n * 2 * (dt == RDX_F32 ? 4 : 8);
  uint64_t total = T->offsets[n];
  void *ppts = dev ? check_place(ctx, hpts, pb) : (void *)hpts;
  rdx_array pa = dev ? rdx_device_matrix(ppts, n, 2, dt) : rdx_host_matrix(ppts, n, 2, dt);
  int64_t *first = (int64_t *)calloc((size_t)n + 1, 8);
  uint64_t *counts = (uint64_t *)calloc((size_t)n + 1, 8);
  int64_t *feats = (int64_t *)calloc((size_t)total + 1, 8);
  void *dfirst = dev ? check_place(ctx, first, (size_t)n * 8) : first;
  void *dcounts = dev ? check_place(ctx, counts, (size_t)n * 8) : counts;
  void *doff = dev ? check_place(ctx, T->offsets, (size_t)(n + 1) * 8) : T->offsets;
  void *dfeats = dev ? check_place(ctx, feats, (size_t)total * 8) : feats;
#define ARR(p, cnt, d) (dev ? rdx_device_array((p), (cnt), (d)) : rdx_host_array((p), (cnt), (d)))
  int64_t launched = rdx_jn_optix_launches();
  CHECK_OK(ctx, rdx_join_pip_first(ctx, layer, pa, o, ARR(dfirst, n, RDX_I64)));
  CHECK_OK(ctx, rdx_join_pip_count(ctx, layer, pa, o, ARR(dcounts, n, RDX_U64)));
  CHECK_OK(ctx, rdx_join_pip_fill(ctx, layer, pa, o, ARR(doff, n + 1, RDX_U64), ARR(dfeats, (int64_t)total, RDX_I64)));
#undef ARR
  rdx_result *res = NULL;
  CHECK_OK(ctx, rdx_join_pip_alloc(ctx, layer, pa, o, &res));
  if (n > 0 && layer->host.n_vertices > 0) expect_optix(ctx, what, launched, 4); /* each call counts at least once */
  if (dev) {
    check_fetch(ctx, first, dfirst, (size_t)n * 8);
    check_fetch(ctx, counts, dcounts, (size_t)n * 8);
    check_fetch(ctx, feats, dfeats, (size_t)total * 8);
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < n && bad < 5; i++) {
    const double *hp = (const double *)hpts;
    const float *hf = (const float *)hpts;
    double x = dt == RDX_F32 ? hf[2 * i] : hp[2 * i], y = dt == RDX_F32 ? hf[2 * i + 1] : hp[2 * i + 1];
    int ok = first[i] == T->first[i] && counts[i] == T->counts[i];
    for (uint64_t k = T->offsets[i]; ok && k < T->offsets[i + 1]; k++) ok = feats[k] == T->features[k];
    if (!ok) {
      bad++;
      CHECK_FAIL_("%s: point %lld (%.17g, %.17g): first %lld count %llu, oracle first %lld count %llu", what,
                  (long long)i, x, y, (long long)first[i], (unsigned long long)counts[i], (long long)T->first[i],
                  (unsigned long long)T->counts[i]);
    }
  }
  if (res) {
    uint64_t *ho, *hr;
    check_result_host(ctx, res, &ho, &hr);
    CHECK_EQ(res->n_queries, n);
    CHECK_EQ(res->total, total);
    int same = 1;
    for (int64_t i = 0; i <= n; i++) same &= ho[i] == T->offsets[i];
    for (uint64_t k = 0; same && k < total; k++) same &= hr[k] == (uint64_t)T->features[k];
    if (!same) CHECK_FAIL_("%s: rdx_join_pip_alloc differs from the oracle", what);
    check_result_host_free(res, ho, hr);
    rdx_result_free(ctx, res);
  }
  if (dev) {
    check_unplace(ctx, ppts);
    check_unplace(ctx, dfirst);
    check_unplace(ctx, dcounts);
    check_unplace(ctx, doff);
    check_unplace(ctx, dfeats);
  }
  free(first), free(counts), free(feats);
}

/* Every way of asking, for one layer and its points: the general rule (and the planar one when
 * the layer is planar), f64 host points, f32 points when they are f32 values, device points. */
static void check_layer(const char *what, const lb_layer *L, rdx_polygons *layer, const pts *P, int planar) {
  truth T;
  memset(&T, 0, sizeof T);
  truth_of(L, P->xy, P->n, &T);
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
  for (int rule = 0; rule <= planar; rule++) {
    o.planar = rule == 1;
    compare(what, layer, P->xy, RDX_F64, P->n, &o, &T, 0);
    if (gpu) compare(what, layer, P->xy, RDX_F64, P->n, &o, &T, 1);
  }
  /* f32: the points that are floats already, so the oracle's answers stay the same */
  float *f = (float *)malloc((size_t)P->n * 8 + 8);
  int64_t nf = 0;
  pts Q = {NULL, 0, 0};
  for (int64_t i = 0; i < P->n; i++) {
    float x = (float)P->xy[2 * i], y = (float)P->xy[2 * i + 1];
    if ((double)x != P->xy[2 * i] || (double)y != P->xy[2 * i + 1]) continue;
    f[2 * nf] = x, f[2 * nf + 1] = y, nf++;
    pt_add(&Q, x, y);
  }
  if (nf > 0) {
    truth TF;
    truth_of(L, Q.xy, Q.n, &TF);
    o.planar = false;
    compare(what, layer, f, RDX_F32, nf, &o, &TF, 0);
    if (gpu) compare(what, layer, f, RDX_F32, nf, &o, &TF, 1);
    truth_free(&TF);
  }
  printf("  %s: %lld points (%lld f32), %lld on a boundary, %lld in several features\n", what, (long long)P->n,
         (long long)nf, (long long)T.n_boundary, (long long)T.n_multi);
  free(f);
  free(Q.xy);
  truth_free(&T);
}

/* ---- cases ---- */

static void triangle(void) {
  lb_layer L;
  lb_init(&L);
  lb_feature(&L);
  double t[6] = {0, 0, 4, 0, 0, 3};
  lb_ring(&L, t, 3);
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  static const double q[][2] = {{1, 1}, {0, 0}, {4, 0}, {0, 3}, {2, 0}, {0, 1.5}, {2, 1.5}, {-1, 0}, {5, 0}, {2, 2},
                                {3, 0.75}, {4, 3}, {0, -1}, {1, 2.25}, {-0.0, 1}, {2, -0.0}};
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) pt_add(&P, q[i][0], q[i][1]);
  points_for(&L, &P, 200, 200);
  check_layer("triangle", &L, p, &P, 1);
  /* spot checks that do not need the oracle */
  int64_t first[4] = {7, 7, 7, 7};
  double four[8] = {1, 1, 2, 1.5, 2, 1.5000000000000002, 10, 10};
  CHECK_OK(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(four, 4, 2, RDX_F64), NULL, rdx_host_array(first, 4, RDX_I64)));
  CHECK_EQ(first[0], 0);
  CHECK_EQ(first[1], 0);
  CHECK_EQ(first[2], -1);
  CHECK_EQ(first[3], -1);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

/* A G x G grid of cells of side h (a power of two) from (x0, y0), all coordinates dyadic:
 * jittered inner vertices unless axis, holes with islands in some cells, a MultiPolygon of two
 * cells. */
static void grid_layer_at(lb_layer *L, int G, int axis, double x0, double y0, double h) {
  lb_init(L);
  double *vx = (double *)malloc((size_t)(G + 1) * (G + 1) * 16);
#define V(i, j) (vx + 2 * ((size_t)(j) * (G + 1) + (i)))
  for (int j = 0; j <= G; j++)
    for (int i = 0; i <= G; i++) {
      double jx = (axis || i == 0 || i == G) ? 0 : (double)((int64_t)check_below(513) - 256) / 1024.0;
      double jy = (axis || j == 0 || j == G) ? 0 : (double)((int64_t)check_below(513) - 256) / 1024.0;
      V(i, j)[0] = x0 + h * (i + jx);
      V(i, j)[1] = y0 + h * (j + jy);
    }
  for (int pass = 0; pass < 2; pass++) /* the cells, then the islands that are features of their own */
    for (int j = 0; j < G; j++)
      for (int i = 0; i < G; i++) {
        if (i == 1 && j == 0 && G > 2) continue; /* part of cell (0, 0)'s MultiPolygon below */
        int holed = (i + 2 * j) % 5 == 3, own_island = (i + j) % 2 == 0;
        double cx = x0 + h * (i + 0.5), cy = y0 + h * (j + 0.5);
        if (pass == 1) {
          if (holed && own_island) {
            lb_feature(L);
            double d[8] = {cx, cy - h / 8, cx + h / 8, cy, cx, cy + h / 8, cx - h / 8, cy}; /* a diamond */
            lb_ring(L, d, 4);
          }
          continue;
        }
        lb_feature(L);
        double q[8] = {V(i, j)[0], V(i, j)[1], V(i + 1, j)[0], V(i + 1, j)[1], V(i + 1, j + 1)[0], V(i + 1, j + 1)[1],
                       V(i, j + 1)[0], V(i, j + 1)[1]};
        lb_ring(L, q, 4);
        if (i == 0 && j == 0 && G > 2) { /* a MultiPolygon: cell (1, 0) as a second shell */
          double r[8] = {V(2, 0)[0], V(2, 0)[1], V(2, 1)[0], V(2, 1)[1], V(1, 1)[0], V(1, 1)[1], V(1, 0)[0], V(1, 0)[1]};
          lb_ring(L, r, 4); /* given clockwise: the layer orients it */
        }
        if (holed) { /* a hole, and an island in it */
          lb_quad(L, cx - h / 4, cy - h / 4, cx + h / 4, cy + h / 4);
          if (!own_island) lb_quad(L, cx - h / 8, cy - h / 8, cx + h / 8, cy + h / 8); /* the same feature's */
        }
      }
#undef V
  free(vx);
}
static void grid_layer(lb_layer *L, int G, int axis) { grid_layer_at(L, G, axis, 100.0, -48.0, 4.0); }

static void grid(void) {
  for (int axis = 0; axis <= 1; axis++) {
    lb_layer L;
    grid_layer(&L, 9, axis);
    rdx_polygons *p = make(&L);
    pts P = {NULL, 0, 0};
    points_for(&L, &P, 1500, 1500);
    /* points on the grid lines and at crossings */
    for (int k = 0; k < 200; k++) pt_add(&P, 100.0 + 4.0 * (double)check_below(10), -48.0 + (double)check_below(145) / 4.0);
    check_layer(axis ? "axis-aligned grid" : "jittered grid", &L, p, &P, 1);
    rdx_polygons_destroy(p);
    free(P.xy);
    lb_free(&L);
  }
}

/* Cells far smaller than a float32 ulp of their coordinates (side 2^-16 at 1000, where floats
 * step by 2^-14): every box and ray coordinate rounds, so only the outward rounding keeps each
 * edge inside its box. */
static void float_precision(void) {
  /* and maps beyond float32's range (boxes clamp at 2^125) and below its normal numbers */
  static const double at[4][3] = {{1000.0, -1000.0, 0x1p-16}, {0x1p130, -0x1p140, 0x1p110}, {-0x1p-200, 0x1p-190, 0x1p-210},
                                  {-0x1p124, 0x1p124, 0x1p120}};
  static const char *const names[4] = {"sub-ulp grid", "grid beyond float32", "grid below float32", "grid across 2^125"};
  for (int k = 0; k < 8; k++) {
    int axis = k & 1, w = k >> 1;
    lb_layer L;
    grid_layer_at(&L, 6 + 2 * (w == 0), axis, at[w][0], at[w][1], at[w][2]);
    rdx_polygons *p = make(&L);
    pts P = {NULL, 0, 0};
    points_for(&L, &P, 600, 1200);
    char what[64];
    snprintf(what, sizeof what, "%s%s", names[w], axis ? ", axis-aligned" : "");
    check_layer(what, &L, p, &P, 1);
    rdx_polygons_destroy(p);
    free(P.xy);
    lb_free(&L);
  }
}

/* A random star polygon around (cx, cy): n vertices at increasing angles. */
static void star(lb_layer *L, double cx, double cy, double r, int n) {
  double *v = (double *)malloc((size_t)n * 16);
  for (int k = 0; k < n; k++) {
    double a = 2.0 * 3.14159265358979323846 * ((double)k + lb_urand(0.0, 0.8)) / (double)n;
    double rr = r * lb_urand(0.3, 1.0);
    v[2 * k] = cx + rr * cos(a);
    v[2 * k + 1] = cy + rr * sin(a);
  }
  lb_ring(L, v, n);
  free(v);
}

static void overlapping(void) {
  lb_layer L;
  lb_init(&L);
  for (int f = 0; f < 40; f++) {
    lb_feature(&L);
    star(&L, lb_urand(0, 10), lb_urand(0, 10), lb_urand(1, 4), 3 + (int)check_below(12));
    if (f % 4 == 0) star(&L, lb_urand(0, 10), lb_urand(0, 10), lb_urand(1, 3), 3 + (int)check_below(6)); /* even-odd */
  }
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 1500, 800);
  truth T;
  truth_of(&L, P.xy, P.n, &T);
  CHECK(T.n_multi > 0);
  truth_free(&T);
  check_layer("overlapping stars", &L, p, &P, 0);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

static void big_feature(void) {
  lb_layer L;
  lb_init(&L);
  lb_feature(&L);
  star(&L, 0.5, -0.25, 3.0, 100000);
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 100, 100);
  check_layer("a feature of 10^5 vertices", &L, p, &P, 1);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

/* Hundreds of features around one place: points inside more of them than pass 1's set holds,
 * so their answers come from pass 2. */
static void many_features(void) {
  lb_layer L;
  lb_init(&L);
  for (int f = 0; f < 300; f++) {
    lb_feature(&L);
    double r = 1.0 + (double)f / 64.0;
    lb_quad(&L, -r + lb_urand(-0.5, 0.5), -r + lb_urand(-0.5, 0.5), r, r + lb_urand(0, 1));
  }
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 150, 150);
  for (int k = 0; k < 50; k++) pt_add(&P, lb_urand(-0.4, 0.4), lb_urand(-0.4, 0.4));
  truth T;
  truth_of(&L, P.xy, P.n, &T);
  int64_t deep = 0;
  for (int64_t i = 0; i < P.n; i++) deep += T.counts[i] > RDX_JN_PIP_SET_CPU;
  CHECK(deep >= 50);
  truth_free(&T);
  check_layer("300 nested squares", &L, p, &P, 0);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

static void index_options(void) {
  lb_layer L;
  grid_layer(&L, 7, 0);
  lb_feature(&L); /* and an overlapping feature, so the general rule has work */
  star(&L, 110, -40, 9, 40);
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 600, 600);
  truth T;
  truth_of(&L, P.xy, P.n, &T);
  static const double s[3] = {1.0, 3.5, 64.0};
  static const int pad[3] = {1, 2, 8};
  int64_t groups_s1 = -1, groups_s64 = -1;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
      o.group_threshold = s[a];
      o.pad_ulps = pad[b];
      compare("temporary index", p, P.xy, RDX_F64, P.n, &o, &T, 0); /* no index yet: a temporary one */
      CHECK_OK(ctx, rdx_polygons_build_index(ctx, p, &o));
      rdx_polygons_info info;
      memset(&info, 0, sizeof info);
      info.size = sizeof info;
      CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
      CHECK(info.indexed);
      rdx_join_options plain = RDX_JOIN_OPTIONS_INIT;
      compare("built index", p, P.xy, RDX_F64, P.n, &plain, &T, 0);
      if (b == 0 && a == 0) groups_s1 = p->index.n_groups;
      if (b == 0 && a == 2) groups_s64 = p->index.n_groups;
      /* a failed rebuild keeps the index */
      rdx_join_options bad = RDX_JOIN_OPTIONS_INIT;
      bad.pad_ulps = 65;
      CHECK_STATUS(ctx, rdx_polygons_build_index(ctx, p, &bad), RDX_ERR_INVALID_ARGUMENT);
      CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
      CHECK(info.indexed);
      compare("kept index", p, P.xy, RDX_F64, P.n, &plain, &T, 0);
      /* the next round starts from an unindexed layer again */
      rdx_polygons_destroy(p);
      p = make(&L);
    }
  CHECK_EQ(groups_s1, L.nv); /* s = 1: one edge per group */
  CHECK(groups_s64 < groups_s1);
  printf("  groups: %lld at s = 1, %lld at s = 64\n", (long long)groups_s1, (long long)groups_s64);
  truth_free(&T);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

/* The index's groups and boxes, in the order of their ids, on the host. OptiX contexts keep the
 * boxes inside rt's GAS: *boxes is NULL there (index.cu's kernel made them as on CUDA contexts,
 * whose entry compares them). */
static void index_host(rdx_context *c, const rdx_polygons *p, uint32_t **first, float **boxes) {
  const rdx_jn_index *ix = &p->index;
  int dev = rdx_context_backend(c) != RDX_BACKEND_CPU;
  int64_t n = ix->n_groups;
  *first = (uint32_t *)malloc((size_t)(n + 1) * 4);
  if (rdx_context_backend(c) == RDX_BACKEND_OPTIX) {
    CHECK(ix->scene.gas != NULL);
    CHECK_OK(c, rdx_copy(c, *first, RDX_HOST, ix->group_first, RDX_DEVICE, (size_t)(n + 1) * 4));
    *boxes = NULL;
    return;
  }
  *boxes = (float *)malloc((size_t)n * 24 + 1);
  float *leaf = (float *)malloc((size_t)n * 24 + 1);
  uint32_t *ids = (uint32_t *)malloc((size_t)n * 4 + 1);
  rdx_location w = dev ? RDX_DEVICE : RDX_HOST;
  CHECK_EQ(ix->scene.bvh.n_prims, n);
  CHECK_OK(c, rdx_copy(c, *first, RDX_HOST, ix->group_first, w, (size_t)(n + 1) * 4));
  CHECK_OK(c, rdx_copy(c, leaf, RDX_HOST, ix->scene.bvh.prims, w, (size_t)n * 24));
  CHECK_OK(c, rdx_copy(c, ids, RDX_HOST, ix->scene.bvh.ids, w, (size_t)n * 4));
  for (int64_t k = 0; k < n; k++)
    if (ids[k] < (uint64_t)n) memcpy(*boxes + 6 * (size_t)ids[k], leaf + 6 * k, 24);
  free(leaf);
  free(ids);
}

/* The index's ring boxes in ring order (NULL on OptiX contexts, whose boxes live in the GAS) and
 * its per-group ring spans, on the host. */
static void rings_host(rdx_context *c, const rdx_polygons *p, float **boxes, float **spans) {
  const rdx_jn_index *ix = &p->index;
  rdx_location w = rdx_context_backend(c) != RDX_BACKEND_CPU ? RDX_DEVICE : RDX_HOST;
  int64_t n = ix->n_ring_boxes, ng = ix->n_groups;
  CHECK_EQ(ix->n_rings, p->host.n_rings);
  CHECK(n >= 1 && n <= ix->n_rings);
  *spans = (float *)malloc((size_t)ng * 8 + 4);
  CHECK_OK(c, rdx_copy(c, *spans, RDX_HOST, ix->group_span, w, (size_t)ng * 8));
  *boxes = NULL;
  if (rdx_context_backend(c) == RDX_BACKEND_OPTIX) {
    CHECK(ix->rings.gas != NULL);
    return;
  }
  *boxes = (float *)malloc((size_t)n * 24 + 4);
  float *leaf = (float *)malloc((size_t)n * 24 + 4);
  uint32_t *ids = (uint32_t *)malloc((size_t)n * 4 + 4);
  CHECK_EQ(ix->rings.bvh.n_prims, n);
  CHECK_OK(c, rdx_copy(c, leaf, RDX_HOST, ix->rings.bvh.prims, w, (size_t)n * 24));
  CHECK_OK(c, rdx_copy(c, ids, RDX_HOST, ix->rings.bvh.ids, w, (size_t)n * 4));
  for (int64_t k = 0; k < n; k++)
    if (ids[k] < (uint64_t)n) memcpy(*boxes + 6 * (size_t)ids[k], leaf + 6 * k, 24);
  free(leaf);
  free(ids);
}

/* The GPU build makes the CPU build's groups and boxes, bit for bit (index_hd.h). */
static void index_identical(void) {
  if (!gpu) return;
  rdx_context *cpu = NULL;
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  CHECK_OK(cpu, rdx_context_create(&co, &cpu));
  lb_layer L;
  grid_layer_at(&L, 12, 0, 1000.0, -1000.0, 0x1p-16);
  for (int f = 0; f < 20; f++) {
    lb_feature(&L);
    star(&L, lb_urand(1000, 1000.0001), lb_urand(-1000, -999.9999), 0x1p-14, 3 + (int)check_below(60));
  }
  rdx_polygons *pg = make(&L), *pc = lb_create(cpu, &L);
  static const double s[3] = {1.0, 3.5, 64.0};
  for (int a = 0; a < 3; a++) {
    rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
    o.group_threshold = s[a];
    o.pad_ulps = 1 + a;
    CHECK_OK(ctx, rdx_polygons_build_index(ctx, pg, &o));
    CHECK_OK(cpu, rdx_polygons_build_index(cpu, pc, &o));
    CHECK_EQ(pg->index.n_groups, pc->index.n_groups);
    if (pg->index.n_groups != pc->index.n_groups) continue;
    uint32_t *fg, *fc;
    float *bg, *bc;
    index_host(ctx, pg, &fg, &bg);
    index_host(cpu, pc, &fc, &bc);
    int64_t n = pc->index.n_groups;
    if (memcmp(fg, fc, (size_t)(n + 1) * 4) != 0) CHECK_FAIL_("s = %g: the groups differ between backends", s[a]);
    if (bg && memcmp(bg, bc, (size_t)n * 24) != 0) CHECK_FAIL_("s = %g: the group boxes differ between backends", s[a]);
    free(fg), free(fc), free(bg), free(bc);
    float *rg, *rc, *flg, *flc;
    rings_host(ctx, pg, &rg, &flg);
    rings_host(cpu, pc, &rc, &flc);
    CHECK_EQ(pg->index.n_ring_boxes, pc->index.n_ring_boxes);
    if (rg && pg->index.n_ring_boxes == pc->index.n_ring_boxes &&
        memcmp(rg, rc, (size_t)pc->index.n_ring_boxes * 24) != 0)
      CHECK_FAIL_("s = %g: the ring boxes differ between backends", s[a]);
    if (memcmp(flg, flc, (size_t)n * 8) != 0) CHECK_FAIL_("s = %g: the ring spans differ between backends", s[a]);
    free(rg), free(rc), free(flg), free(flc);
  }
  printf("  identical groups, boxes, ring boxes and spans on cpu and %s\n", rdx_backend_name(rdx_context_backend(ctx)));
  rdx_polygons_destroy(pg);
  rdx_polygons_destroy(pc);
  rdx_context_destroy(cpu);
  lb_free(&L);
}

/* Phase (A)'s data and traversal (the file comment's pip_rings). */
static void rings(void) {
  lb_layer L;
  grid_layer_at(&L, 4, 0, 1000.0, -1000.0, 0x1p-16); /* sub-ulp cells: every bound rounds */
  for (int f = 0; f < 30; f++) { /* rings of up to 300 edges: many groups each at s = 3.5 */
    lb_feature(&L);
    double cx = lb_urand(0, 10), cy = lb_urand(0, 10), r = lb_urand(0.5, 3);
    star(&L, cx, cy, r, 3 + (int)check_below(300));
    if (f % 3 == 0) star(&L, lb_urand(0, 10), lb_urand(0, 10), lb_urand(0.5, 2), 3 + (int)check_below(20));
    if (f % 2 == 0) star(&L, cx, cy, 0.2 * r, 3 + (int)check_below(20)); /* a hole the scene leaves out */
  }
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 1500, 1500);
  const rdx_jn_arrays *a = &p->host;
  static const double s[3] = {1.0, 3.5, 64.0};
  int64_t none = 0, up = 0, down = 0, kept = 0;
  float *all = (float *)malloc((size_t)a->n_rings * 24), span_all[2];
  int64_t *big = (int64_t *)malloc((size_t)a->n_rings * 8); /* the dominance rule, by brute force */
  for (int k = 0; k < 3; k++) {
    rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
    o.group_threshold = s[k];
    o.pad_ulps = 1 + 3 * k;
    CHECK_OK(ctx, rdx_polygons_build_index(ctx, p, &o));
    const rdx_jn_index *ix = &p->index;
    float *rb, *fl;
    rings_host(ctx, p, &rb, &fl);
    uint32_t *gf = (uint32_t *)malloc((size_t)(ix->n_groups + 1) * 4);
    CHECK_OK(ctx, rdx_copy(ctx, gf, RDX_HOST, ix->group_first, gpu ? RDX_DEVICE : RDX_HOST, (size_t)(ix->n_groups + 1) * 4));
    int64_t bad = 0;
    for (int64_t r = 0; r < a->n_rings; r++)
      rdx_jn_group_box(a->xy, a->edge_end, (uint32_t)a->ring_off[r], (uint32_t)a->ring_off[r + 1], ix->pad_ulps,
                       ix->abs_pad, all + 6 * r, span_all);
    kept = 0;
    for (int64_t f = 0; f < a->n_features; f++)
      for (uint64_t r = a->feat_off[f]; r < a->feat_off[f + 1]; r++) {
        big[r] = -1;
        double best = -1.0;
        for (uint64_t q = a->feat_off[f]; q < r; q++) {
          const float *b = all + 6 * q;
          double area = ((double)b[3] - (double)b[0]) * ((double)b[4] - (double)b[1]);
          if (area > best) best = area, big[r] = (int64_t)q;
        }
        const float *b = all + 6 * r, *bo = big[r] >= 0 ? all + 6 * big[r] : NULL;
        if (bo && b[0] >= bo[0] && b[1] >= bo[1] && b[3] <= bo[3] && b[4] <= bo[4]) continue; /* left out */
        if (kept < ix->n_ring_boxes && rb && memcmp(rb + 6 * kept, b, 24) != 0 && bad++ < 5)
          CHECK_FAIL_("s = %g: ring scene box %lld is not ring %llu's", s[k], (long long)kept, (unsigned long long)r);
        kept++;
      }
    CHECK_EQ(ix->n_ring_boxes, kept);
    for (int64_t g = 0; g < ix->n_groups && bad < 5; g++) { /* each group's span is its ring's */
      uint32_t r = rdx_jn_run_of(a->ring_off, a->n_rings, gf[g]);
      float want[6], span[2];
      rdx_jn_group_box(a->xy, a->edge_end, (uint32_t)a->ring_off[r], (uint32_t)a->ring_off[r + 1], ix->pad_ulps,
                       ix->abs_pad, want, span);
      if (fl[2 * g] != span[0] || fl[2 * g + 1] != span[1]) {
        bad++;
        CHECK_FAIL_("s = %g: group %lld, ring %u: span [%.9g, %.9g]; its edges give [%.9g, %.9g]", s[k], (long long)g,
                    r, fl[2 * g], fl[2 * g + 1], span[0], span[1]);
      }
    }
    if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) { /* phase (A) against every ring box */
      rdx_jn_pip_bvhs v;
      v.groups = rdx_bvh_view_of(&ix->scene.bvh);
      v.rings = rdx_bvh_view_of(&ix->rings.bvh);
      for (int64_t i = 0; i < P.n && bad < 10; i++) {
        float ox = rdx_jn_ray_coord(P.xy[2 * i]), oy = rdx_jn_ray_coord(P.xy[2 * i + 1]), want = -INFINITY;
        float top = -INFINITY, bottom = INFINITY;
        for (int64_t r = 0; r < a->n_rings; r++) { /* every ring, those left out included */
          const float *b = all + 6 * r;
          if (!(b[0] <= ox && ox <= b[3] && b[1] <= oy && oy <= b[4])) continue;
          top = b[4] > top ? b[4] : top;
          bottom = b[1] < bottom ? b[1] : bottom;
        }
        if (top != -INFINITY) /* the shorter way out, up on a tie, past the float distance */
          want = top - oy <= oy - bottom ? nextafterf(top - oy, INFINITY) : -nextafterf(oy - bottom, INFINITY);
        float reach = rdx_jn_pip_reach(&v, P.xy[2 * i], P.xy[2 * i + 1]);
        none += reach == -INFINITY;
        up += reach > 0.0f;
        down += reach < 0.0f && reach != -INFINITY;
        if (reach != want) {
          bad++;
          CHECK_FAIL_("s = %g: point (%.17g, %.17g): reach %.9g, the ring boxes give %.9g", s[k], P.xy[2 * i],
                      P.xy[2 * i + 1], reach, want);
        }
      }
    }
    free(rb), free(fl), free(gf);
  }
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    CHECK(none > 0);
    CHECK(up > 0);
    CHECK(down > 0);
    printf("  rings: %lld rings; phase (A): %lld points in no ring box, %lld rays up, %lld down\n",
           (long long)a->n_rings, (long long)none, (long long)up, (long long)down);
  }
  CHECK(kept < a->n_rings); /* some rings were left out of the scene */
  printf("  rings: the ring scene keeps %lld of %lld rings\n", (long long)kept, (long long)a->n_rings);
  free(all), free(big);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

/* The file comment's pip_naive. The square makes the upward ray the shorter way out (pip_hd.h's
 * phase (A)); the naive floor of the triangle's ring rounds up past the points, so that ray skips
 * the triangle's edges, where the conservative floor (rounded down) keeps them. */
static void naive(void) {
  lb_layer L;
  lb_init(&L);
  const double y0 = 1.0 + 3.0 * 0x1p-25; /* 3/4 of the way from 1 to the next float32 */
  lb_feature(&L);
  double t[6] = {0.0, y0, 1.0, y0 + 1.0, -1.0, y0 + 1.0};
  lb_ring(&L, t, 3);
  lb_feature(&L);
  lb_quad(&L, -5.0, -100.0, 5.0, y0 + 1.5);
  pts P = {NULL, 0, 0};
  pt_add(&P, 0.0, y0); /* the vertex: on the triangle's boundary */
  for (int k = 13; k <= 15; k++) /* above it by up to 3 * 2^-27, below 1 + 2^-23 */
    for (int i = -1; i <= 1; i++) pt_add(&P, i * 0x1p-30, 1.0 + k * 0x1p-27);
  truth T;
  truth_of(&L, P.xy, P.n, &T);
  for (int64_t i = 0; i < P.n; i++) CHECK_EQ(T.counts[i], 2); /* the oracle: in both features */
  rdx_polygons *p = make(&L);
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
  compare("naive case, conservative boxes", p, P.xy, RDX_F64, P.n, &o, &T, 0);
  rdx_join_force_naive(ctx, 1); /* the join's temporary index: naive boxes */
  uint64_t *counts = (uint64_t *)calloc((size_t)P.n, 8);
  void *dc = gpu ? check_place(ctx, counts, (size_t)P.n * 8) : counts;
  void *dp = gpu ? check_place(ctx, P.xy, (size_t)P.n * 16) : P.xy;
  rdx_array pa = gpu ? rdx_device_matrix(dp, P.n, 2, RDX_F64) : rdx_host_matrix(dp, P.n, 2, RDX_F64);
  CHECK_OK(ctx, rdx_join_pip_count(ctx, p, pa, &o, gpu ? rdx_device_array(dc, P.n, RDX_U64)
                                                       : rdx_host_array(dc, P.n, RDX_U64)));
  rdx_join_force_naive(ctx, 0);
  if (gpu) {
    check_fetch(ctx, counts, dc, (size_t)P.n * 8);
    check_unplace(ctx, dc);
    check_unplace(ctx, dp);
  }
  int64_t wrong = 0;
  for (int64_t i = 0; i < P.n; i++) wrong += counts[i] != T.counts[i];
  CHECK_EQ(wrong, P.n); /* every point misses the triangle */
  printf("  naive boxes: %lld of %lld points answered wrong (conservative: none)\n", (long long)wrong,
         (long long)P.n);
  compare("naive case, conservative boxes again", p, P.xy, RDX_F64, P.n, &o, &T, 0); /* the flag is off */
  free(counts);
  truth_free(&T);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

static void empty(void) {
  lb_layer L;
  lb_init(&L);
  rdx_polygons *p = make(&L); /* no features */
  pts P = {NULL, 0, 0};
  pt_add(&P, 0, 0);
  pt_add(&P, 1e10, -3);
  check_layer("empty layer", &L, p, &P, 1);
  CHECK_OK(ctx, rdx_polygons_build_index(ctx, p, NULL));
  check_layer("empty layer, indexed", &L, p, &P, 1);
  rdx_polygons_destroy(p);
  lb_feature(&L);
  double t[6] = {0, 0, 1, 0, 0, 1};
  lb_ring(&L, t, 3);
  p = make(&L);
  /* an empty batch: nothing written, nothing refused */
  int64_t first[1] = {7};
  uint64_t off[1] = {0};
  CHECK_OK(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(NULL, 0, 2, RDX_F64), NULL, rdx_host_array(first, 0, RDX_I64)));
  CHECK_OK(ctx, rdx_join_pip_count(ctx, p, rdx_host_matrix(NULL, 0, 2, RDX_F32), NULL, rdx_host_array(NULL, 0, RDX_U64)));
  CHECK_OK(ctx, rdx_join_pip_fill(ctx, p, rdx_host_matrix(NULL, 0, 2, RDX_F64), NULL, rdx_host_array(off, 1, RDX_U64),
                                  rdx_host_array(NULL, 0, RDX_I64)));
  rdx_result *r = NULL;
  CHECK_OK(ctx, rdx_join_pip_alloc(ctx, p, rdx_host_matrix(NULL, 0, 2, RDX_F64), NULL, &r));
  CHECK(r != NULL && r->n_queries == 0 && r->total == 0);
  rdx_result_free(ctx, r);
  CHECK_EQ(first[0], 7);
  rdx_polygons_destroy(p);
  free(P.xy);
  lb_free(&L);
}

static void bad_input(void) {
  lb_layer L;
  lb_init(&L);
  lb_feature(&L);
  lb_quad(&L, 0, 0, 1, 1);
  rdx_polygons *p = make(&L);
  int64_t held0 = held(ctx);
  double xy[6] = {0.5, 0.5, 2, 2, 0.25, 0.75};
  rdx_array pa = rdx_host_matrix(xy, 3, 2, RDX_F64);
  int64_t first[3] = {7, 7, 7};
  uint64_t counts[3] = {7, 7, 7};
  rdx_array fa = rdx_host_array(first, 3, RDX_I64), ca = rdx_host_array(counts, 3, RDX_U64);
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;

  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, NULL, pa, NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_pip_first: layer is NULL");
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, (const rdx_polygons *)(void *)xy, pa, NULL, fa), RDX_ERR_MISUSE);
  expect_message(ctx, "is not a polygon layer");
  CHECK_STATUS(ctx, rdx_join_pip_first(NULL, p, pa, NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  {
    rdx_context *other = NULL;
    rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
    co.backend = RDX_BACKEND_CPU;
    CHECK_OK(other, rdx_context_create(&co, &other));
    CHECK_STATUS(other, rdx_join_pip_count(other, p, pa, NULL, ca), RDX_ERR_MISUSE);
    if (strstr(rdx_context_message(other), "belongs to another context") == NULL)
      CHECK_FAIL_("message '%s'", rdx_context_message(other));
    rdx_context_destroy(other);
  }
  /* points */
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(xy, 3, 2, RDX_U64), NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_pip_first: points must be (n, 2) f32 or f64 (dtype u64, columns 2)");
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(xy, 2, 3, RDX_F64), NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "columns 3");
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(NULL, 3, 2, RDX_F64), NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  static const double bad_vals[4] = {NAN, INFINITY, 1e-300, -1e300};
  static const char *const bad_words[4] = {"non-finite", "non-finite", "neither 0 nor of magnitude", "neither 0 nor of magnitude"};
  for (int k = 0; k < 4; k++) {
    double b[6] = {0.5, 0.5, 0.25, 0.25, 0.75, 0.75};
    b[2 * 2 + (k & 1)] = bad_vals[k];
    CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(b, 3, 2, RDX_F64), NULL, fa), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "points row 2");
    expect_message(ctx, bad_words[k]);
    CHECK_STATUS(ctx, rdx_join_pip_count(ctx, p, rdx_host_matrix(b, 3, 2, RDX_F64), NULL, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "rdx_join_pip_count: points row 2");
  }
  {
    float bf[4] = {0.5f, 0.5f, NAN, 0.5f};
    CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_host_matrix(bf, 2, 2, RDX_F32), NULL, rdx_host_array(first, 2, RDX_I64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "points row 1 has a non-finite value");
  }
  for (int k = 0; k < 3; k++) { /* untouched */
    CHECK_EQ(first[k], 7);
    CHECK_EQ(counts[k], 7);
  }
  /* outputs */
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, pa, NULL, rdx_host_array(first, 3, RDX_U64)), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "first must be 1-D i64 (dtype u64");
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, pa, NULL, rdx_host_array(first, 2, RDX_I64)), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "first.count 2 != points.count 3");
  CHECK_STATUS(ctx, rdx_join_pip_count(ctx, p, pa, NULL, rdx_host_array(counts, 3, RDX_I64)), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "counts must be 1-D u64");
  CHECK_STATUS(ctx, rdx_join_pip_count(ctx, p, pa, NULL, rdx_host_array(counts, 4, RDX_U64)), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "counts.count 4 != 3");
  if (!gpu) {
    CHECK_STATUS(ctx, rdx_join_pip_count(ctx, p, pa, NULL, rdx_device_array(counts, 3, RDX_U64)), RDX_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, rdx_device_matrix(xy, 3, 2, RDX_F64), NULL, fa), RDX_ERR_INVALID_ARGUMENT);
  }
  {
    uint64_t off[4] = {0, 1, 1, 2};
    int64_t feats[2] = {7, 7};
    CHECK_STATUS(ctx, rdx_join_pip_fill(ctx, p, pa, NULL, rdx_host_array(off, 3, RDX_U64), rdx_host_array(feats, 2, RDX_I64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "offsets.count 3 != 4");
    CHECK_STATUS(ctx, rdx_join_pip_fill(ctx, p, pa, NULL, rdx_host_array(off, 4, RDX_U64), rdx_host_array(feats, 2, RDX_F64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "features must be 1-D i64 (dtype f64");
    CHECK_STATUS(ctx, rdx_join_pip_fill(ctx, p, pa, NULL, rdx_host_array(off, 4, RDX_U64), rdx_host_array(feats, 1, RDX_I64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "features.count 1 < offsets[3] = 2");
    CHECK_EQ(feats[0], 7);
  }
  /* options */
  o.size = 0;
  CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, pa, &o, fa), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->size 0 is not a valid size");
  o.size = sizeof o;
  static const int pads[3] = {-1, 65, 1000};
  for (int k = 0; k < 3; k++) {
    o.pad_ulps = pads[k];
    CHECK_STATUS(ctx, rdx_join_pip_first(ctx, p, pa, &o, fa), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "opts->pad_ulps");
    CHECK_STATUS(ctx, rdx_polygons_build_index(ctx, p, &o), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "rdx_polygons_build_index: opts->pad_ulps");
  }
  o.pad_ulps = 0;
  static const double groups[4] = {0.5, 64.5, -1.0, NAN};
  for (int k = 0; k < 4; k++) {
    o.group_threshold = groups[k];
    CHECK_STATUS(ctx, rdx_join_pip_count(ctx, p, pa, &o, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "opts->group_threshold");
  }
  /* the smallest option struct (size only) means the defaults */
  rdx_join_options tiny = RDX_JOIN_OPTIONS_INIT;
  tiny.size = sizeof(size_t);
  tiny.pad_ulps = 99; /* beyond size: not read */
  CHECK_OK(ctx, rdx_join_pip_first(ctx, p, pa, &tiny, fa));
  CHECK_EQ(first[0], 0);
  CHECK_EQ(first[1], -1);
  CHECK_STATUS(ctx, rdx_join_pip_alloc(ctx, p, pa, NULL, NULL), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_pip_alloc: out is NULL");
  CHECK_STATUS(ctx, rdx_polygons_build_index(ctx, NULL, NULL), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_polygons_build_index: layer is NULL");
  CHECK_EQ(held(ctx), held0);
  rdx_polygons_destroy(p);
  lb_free(&L);
}

static void fill_offsets(void) {
  lb_layer L;
  lb_init(&L);
  lb_feature(&L);
  lb_quad(&L, 0, 0, 2, 2);
  lb_feature(&L);
  lb_quad(&L, 1, 1, 3, 3);
  rdx_polygons *p = make(&L);
  double xy[8] = {0.5, 0.5, 1.5, 1.5, 5, 5, 2.5, 2.5}; /* counts 1, 2, 0, 1 */
  rdx_array pa = rdx_host_matrix(xy, 4, 2, RDX_F64);
  static const uint64_t wrong[3][5] = {{0, 1, 3, 3, 5}, {0, 2, 3, 3, 4}, {1, 2, 4, 4, 5}};
  static const char *const words[3] = {"query 3", "query 0", "offsets[0] is 1"};
  for (int k = 0; k < 3; k++) {
    int64_t feats[6] = {7, 7, 7, 7, 7, 7};
    CHECK_STATUS(ctx, rdx_join_pip_fill(ctx, p, pa, NULL, rdx_host_array(wrong[k], 5, RDX_U64), rdx_host_array(feats, 6, RDX_I64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, words[k]);
    for (int i = 0; i < 6; i++) CHECK_EQ(feats[i], 7);
  }
  uint64_t good[5] = {0, 1, 3, 3, 4};
  int64_t feats[4] = {7, 7, 7, 7};
  CHECK_OK(ctx, rdx_join_pip_fill(ctx, p, pa, NULL, rdx_host_array(good, 5, RDX_U64), rdx_host_array(feats, 4, RDX_I64)));
  CHECK_EQ(feats[0], 0);
  CHECK_EQ(feats[1], 0);
  CHECK_EQ(feats[2], 1);
  CHECK_EQ(feats[3], 1);
  rdx_polygons_destroy(p);
  lb_free(&L);
}

static void faults(void) {
  lb_layer L;
  grid_layer(&L, 4, 0);
  rdx_polygons *p = make(&L);
  pts P = {NULL, 0, 0};
  points_for(&L, &P, 200, 200);
  float *f = (float *)malloc((size_t)P.n * 8);
  for (int64_t i = 0; i < 2 * P.n; i++) f[i] = (float)P.xy[i];
  int64_t held0 = held(ctx);
  int ok = 0;
  for (int64_t k = 1; k < 200 && !ok; k++) {
    rdx_result *r = NULL;
    rdx_mem_fail_after(ctx, k);
    rdx_status st = rdx_join_pip_alloc(ctx, p, rdx_host_matrix(f, P.n, 2, RDX_F32), NULL, &r);
    rdx_mem_fail_after(ctx, 0);
    if (st == RDX_OK) {
      ok = 1;
      rdx_result_free(ctx, r);
    } else {
      CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY);
      CHECK(r == NULL);
    }
    CHECK_EQ(held(ctx), held0);
  }
  CHECK(ok);
  free(f);
  free(P.xy);
  rdx_polygons_destroy(p);
  lb_free(&L);
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
  if (CASE_RUN(pip_triangle)) triangle();
  if (CASE_RUN(pip_grid)) grid();
  if (CASE_RUN(pip_float_precision)) float_precision();
  if (CASE_RUN(pip_overlapping)) overlapping();
  if (CASE_RUN(pip_big_feature)) big_feature();
  if (CASE_RUN(pip_many_features)) many_features();
  if (CASE_RUN(pip_index_options)) index_options();
  if (CASE_RUN(pip_index_identical)) index_identical();
  if (CASE_RUN(pip_rings)) rings();
  if (CASE_RUN(pip_naive)) naive();
  if (CASE_RUN(pip_empty)) empty();
  if (CASE_RUN(pip_bad_input)) bad_input();
  if (CASE_RUN(pip_fill_offsets)) fill_offsets();
  if (CASE_RUN(pip_faults)) faults();
  return check_end(ctx);
}
