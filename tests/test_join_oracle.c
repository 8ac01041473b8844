/*
 * test_join_oracle.c: the polygon-join oracle (tools/oracle/polygons_oracle.h, which `raydex demo`
 * checks the us-atlas overlay with) against rdx_join_polygons on the backend given by --backend,
 * every predicate, overlay's areas to 1e-9 relative.
 *
 * The oracle is shown once on a hand-made case whose answers are stated here (STYLE rule 26: a
 * corrupted reference fails there, not only in comparisons), then sizes 0 and 1, then random
 * layers with the seed printed (RDX_TEST_SEED replays):
 *  - oracle_explicit: a square against an overlapping square, one sharing an edge, one inside it,
 *    one inside its hole, one touching it at a vertex; every predicate and area stated;
 *  - oracle_empty: an empty layer and a layer of one feature on either side;
 *  - oracle_random: integer rectangles (shared edges, collinear overlaps, vertices on edges:
 *    most events degenerate), some with a hole, against each other and themselves; raydex's
 *    generated grids (a planar subdivision against a shifted copy) and star polygons.
 * Each join runs R x S and S x R; the totals of each predicate's pairs are asserted non-zero so
 * the comparison cannot pass vacuously.
 */
#include "join_check.h"

#include <math.h>

#include "bench_api.h"

static rdx_context *ctx;
static const char *const pred_name[6] = {"?", "overlay", "intersects", "contains", "within", "boxes"};
static int64_t total_pairs[6];
static int64_t areas_identical, areas_compared;

static polygons_oracle_layer oracle_layer(const rdx_polygons *p) {
  rdx_polygons_host_csr csr;
  rdx_polygons_host_csr_of(p, &csr);
  polygons_oracle_layer o = {csr.feat_off, csr.ring_off, csr.xy, csr.n_features};
  return o;
}

/* The oracle's answer, exiting on no memory. */
static int64_t oracle(const rdx_polygons *r, const rdx_polygons *s, int pred, int64_t **pairs, double **areas) {
  const polygons_oracle_layer R = oracle_layer(r), S = oracle_layer(s);
  int64_t n = polygons_oracle_join(&R, &S, pred, 2, pairs, areas);
  if (n < 0) {
    fprintf(stderr, "the oracle ran out of memory\n");
    exit(1);
  }
  return n;
}

/* rdx_join_polygons against the oracle for one predicate. */
static void compare(const char *what, const rdx_polygons *r, const rdx_polygons *s, int pred) {
  const int areas = pred == RDX_JOIN_OVERLAY;
  rdx_join_pairs_result *res = NULL;
  rdx_join_options jo = RDX_JOIN_OPTIONS_INIT;
  rdx_status st = rdx_join_polygons(ctx, r, s, (rdx_join_predicate)pred, &jo, areas, &res);
  if (st != RDX_OK) {
    CHECK_FAIL_("%s, %s: rdx_join_polygons returned %s: %s", what, pred_name[pred], rdx_status_name(st),
                rdx_context_message(ctx));
    return;
  }
  const int64_t n = res->n_pairs;
  int64_t *got = (int64_t *)malloc((size_t)(2 * n + 1) * 8);
  double *got_area = (double *)malloc((size_t)(n + 1) * 8);
  if (!got || !got_area) exit(1);
  CHECK_OK(ctx, rdx_copy(ctx, got, RDX_HOST, res->pairs, res->where, (size_t)n * 16));
  if (areas) CHECK_OK(ctx, rdx_copy(ctx, got_area, RDX_HOST, res->areas, res->where, (size_t)n * 8));
  rdx_join_pairs_free(ctx, res);
  int64_t *want = NULL;
  double *want_area = NULL;
  const int64_t m = oracle(r, s, pred, &want, areas ? &want_area : NULL);
  total_pairs[pred] += m;
  int64_t i = 0;
  for (; i < n && i < m; i++)
    if (got[2 * i] != want[2 * i] || got[2 * i + 1] != want[2 * i + 1]) break;
  if (i < n || i < m) {
    CHECK_FAIL_("%s, %s: %lld pairs, the oracle %lld; first difference at row %lld: raydex (%lld, %lld), the oracle "
                "(%lld, %lld)",
                what, pred_name[pred], (long long)n, (long long)m, (long long)i, i < n ? (long long)got[2 * i] : -1LL,
                i < n ? (long long)got[2 * i + 1] : -1LL, i < m ? (long long)want[2 * i] : -1LL,
                i < m ? (long long)want[2 * i + 1] : -1LL);
  } else if (areas) {
    for (int64_t k = 0; k < n; k++) {
      const double a = got_area[k], b = want_area[k], big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
      areas_compared++;
      areas_identical += memcmp(&a, &b, 8) == 0;
      if (!(fabs(a - b) <= 1e-9 * big)) {
        CHECK_FAIL_("%s, overlay: pair (%lld, %lld): area %.17g, the oracle %.17g", what, (long long)got[2 * k],
                    (long long)got[2 * k + 1], a, b);
        break;
      }
    }
  }
  free(got), free(got_area), free(want), free(want_area);
}

/* Every predicate, R x S and S x R. */
static void compare_all(const char *what, const rdx_polygons *r, const rdx_polygons *s) {
  char w[160];
  for (int p = 1; p <= 5; p++) {
    compare(what, r, s, p);
    snprintf(w, sizeof w, "%s, swapped", what);
    compare(w, s, r, p);
  }
}

/* The oracle's pairs for pred equal want (n pairs, then areas when want_area is not NULL). */
static void expect(const rdx_polygons *r, const rdx_polygons *s, int pred, const int64_t *want, int64_t n,
                   const double *want_area) {
  int64_t *got = NULL;
  double *area = NULL;
  const int64_t m = oracle(r, s, pred, &got, want_area ? &area : NULL);
  CHECK_EQ(m, n);
  for (int64_t i = 0; i < n && i < m; i++) {
    if (got[2 * i] != want[2 * i] || got[2 * i + 1] != want[2 * i + 1])
      CHECK_FAIL_("%s row %lld: the oracle (%lld, %lld), stated (%lld, %lld)", pred_name[pred], (long long)i,
                  (long long)got[2 * i], (long long)got[2 * i + 1], (long long)want[2 * i], (long long)want[2 * i + 1]);
    if (want_area && area[i] != want_area[i])
      CHECK_FAIL_("%s row %lld: the oracle's area %.17g, stated %.17g", pred_name[pred], (long long)i, area[i],
                  want_area[i]);
  }
  free(got), free(area);
}

static void oracle_explicit(void) {
  check_case_ = "oracle_explicit";
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  lb_feature(&R); /* R0: [0, 4]^2 with the hole [1, 2]^2 */
  lb_quad(&R, 0, 0, 4, 4);
  lb_quad_as(&R, 1, 1, 2, 2, 0);
  lb_feature(&S), lb_quad(&S, 3, 3, 6, 6);          /* S0: overlaps R0 in [3, 4]^2, area 1 */
  lb_feature(&S), lb_quad(&S, 4, 0, 5, 4);          /* S1: shares R0's edge x = 4: intersects only */
  lb_feature(&S), lb_quad(&S, 2.5, 2.5, 3.5, 3.5);  /* S2: inside R0: contains, area 1 */
  lb_feature(&S), lb_quad(&S, 1.25, 1.25, 1.75, 1.75); /* S3: inside R0's hole: nothing (boxes) */
  lb_feature(&S), lb_quad(&S, -1, -1, 0, 0);        /* S4: touches R0 at (0, 0): intersects */
  lb_feature(&S), lb_quad(&S, 1, 1, 2, 2);          /* S5: fills the hole exactly: intersects */
  lb_feature(&S), lb_quad(&S, -1, -1, 5, 5);        /* S6: holds R0: within (r in s), area 15 */
  rdx_polygons *r = lb_create(ctx, &R), *s = lb_create(ctx, &S);
  if (r && s) {
    const int64_t ov[] = {0, 0, 0, 2, 0, 6}, in[] = {0, 0, 0, 1, 0, 2, 0, 4, 0, 5, 0, 6}, co[] = {0, 2},
                  wi[] = {0, 6}, bx[] = {0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6};
    const double ov_area[] = {1, 1, 15};
    expect(r, s, RDX_JOIN_OVERLAY, ov, 3, ov_area);
    expect(r, s, RDX_JOIN_INTERSECTS, in, 6, NULL);
    expect(r, s, RDX_JOIN_CONTAINS, co, 1, NULL);
    expect(r, s, RDX_JOIN_WITHIN, wi, 1, NULL);
    expect(r, s, RDX_JOIN_BOXES, bx, 7, NULL);
    compare_all("explicit", r, s);
    compare_all("explicit, S x itself", s, s);
  }
  rdx_polygons_destroy(r), rdx_polygons_destroy(s);
  lb_free(&R), lb_free(&S);
}

static void oracle_empty(void) {
  check_case_ = "oracle_empty";
  lb_layer E, One;
  lb_init(&E), lb_init(&One);
  lb_feature(&One), lb_quad(&One, 0, 0, 1, 1);
  rdx_polygons *e = lb_create(ctx, &E), *one = lb_create(ctx, &One);
  if (e && one) {
    compare_all("empty x one", e, one);
    compare_all("empty x empty", e, e);
    compare_all("one x itself", one, one);
    const int64_t self[] = {0, 0};
    const double unit[] = {1};
    expect(one, one, RDX_JOIN_OVERLAY, self, 1, unit);
    expect(one, one, RDX_JOIN_CONTAINS, self, 1, NULL);
  }
  rdx_polygons_destroy(e), rdx_polygons_destroy(one);
  lb_free(&E), lb_free(&One);
}

static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)check_below((uint64_t)(hi - lo + 1)); }

/* n integer rectangles in [0, range]^2, a third of the larger ones with a hole strictly inside. */
static void rect_layer(lb_layer *L, int n, int range) {
  lb_init(L);
  for (int i = 0; i < n; i++) {
    int64_t x0 = irand(0, range - 1), y0 = irand(0, range - 1);
    int64_t x1 = irand(x0 + 1, range), y1 = irand(y0 + 1, range);
    lb_feature(L);
    lb_quad(L, (double)x0, (double)y0, (double)x1, (double)y1);
    if (x1 - x0 >= 3 && y1 - y0 >= 3 && check_below(3) == 0) {
      int64_t hx = irand(x0 + 1, x1 - 2), hy = irand(y0 + 1, y1 - 2);
      lb_quad_as(L, (double)hx, (double)hy, (double)irand(hx + 1, x1 - 1), (double)irand(hy + 1, y1 - 1), 0);
    }
  }
}

/* A layer of rdx_gen_polygons, moved by (dx, dy). */
static rdx_polygons *generated(rdx_polygon_kind kind, int64_t n, int vertices, uint64_t seed, double dx, double dy) {
  rdx_array fo, ro, xy;
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_gen_polygons(ctx, kind, n, vertices, seed, &fo, &ro, &xy));
  double *c = (double *)xy.data;
  for (int64_t i = 0; i < xy.count; i++) c[2 * i] += dx, c[2 * i + 1] += dy;
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = fo, in.ring_offsets = ro, in.coords = xy;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  rdx_npy_free(&fo), rdx_npy_free(&ro), rdx_npy_free(&xy);
  return p;
}

static void oracle_random(void) {
  check_case_ = "oracle_random";
  char w[96];
  for (int round = 0; round < 6; round++) {
    lb_layer R, S;
    const int range = round < 3 ? 8 : 40;
    rect_layer(&R, 10 + 20 * round, range);
    rect_layer(&S, 10 + 15 * round, range);
    rdx_polygons *r = lb_create(ctx, &R), *s = lb_create(ctx, &S);
    if (r && s) {
      snprintf(w, sizeof w, "rectangles round %d", round);
      compare_all(w, r, s);
      snprintf(w, sizeof w, "rectangles round %d, R x itself", round);
      compare_all(w, r, r);
    }
    rdx_polygons_destroy(r), rdx_polygons_destroy(s);
    lb_free(&R), lb_free(&S);
  }
  const uint64_t seed = check_rand_();
  /* a planar subdivision against a copy shifted by half a cell, and against itself */
  rdx_polygons *g = generated(RDX_PGEN_GRID, 400, 4, seed, 0, 0), *h = generated(RDX_PGEN_GRID, 400, 4, seed, 0.5, 0.5);
  if (g && h) compare_all("grid x shifted grid", g, h), compare_all("grid x itself", g, g);
  rdx_polygons_destroy(g), rdx_polygons_destroy(h);
  /* star polygons overlapping freely */
  rdx_polygons *a = generated(RDX_PGEN_RANDOM, 300, 12, seed + 1, 0, 0);
  rdx_polygons *b = generated(RDX_PGEN_RANDOM, 200, 30, seed + 2, 0.25, 0);
  if (a && b) compare_all("stars", a, b);
  rdx_polygons_destroy(a), rdx_polygons_destroy(b);
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  oracle_explicit();
  oracle_empty();
  oracle_random();
  check_case_ = "coverage";
  for (int p = 1; p <= 5; p++) {
    printf("  %-10s %lld pairs compared\n", pred_name[p], (long long)total_pairs[p]);
    CHECK(total_pairs[p] > 0);
  }
  printf("  areas: %lld compared, %lld with the same bits\n", (long long)areas_compared, (long long)areas_identical);
  return check_end(ctx);
}
