/*
 * test_join_polygons.c: rdx_join_polygons (and rdx_join_pairs_free) against GEOS, the exact
 * reference, for every predicate, on the backend given by --backend.
 *
 * The reference is a brute force over every (r, s) feature pair of R x S, each decided by GEOS on
 * its own (no index, so no reference shortcut can hide a miss):
 *  - OVERLAY:    GEOSRelatePattern(r, s, "T********") (the interiors meet; asked only where GEOS
 *                finds them intersecting but neither containing the other, which decide it);
 *  - INTERSECTS: GEOSIntersects(r, s) (prepared r);
 *  - CONTAINS:   GEOSContains(r, s) (prepared r);
 *  - WITHIN:     GEOSWithin(r, s), asked as GEOSContains(s, r) of prepared s (GEOS defines them so);
 *  - BOXES:      the features' closed bounding boxes meet, from the coordinates directly.
 * A pair whose boxes do not meet satisfies none of the others (each implies a common point), so
 * GEOS is asked only about pairs whose boxes meet. Each join runs R x S and S x R, with temporary
 * indexes and again with both layers indexed under other options (answers never depend on them);
 * on GPU contexts the first run locates the two directions side by side on two streams (the
 * default), the second one after the other (rdx_join_force_one_stream).
 * The result must be GEOS's pairs exactly, sorted ascending by (r, s) and unique, in host memory
 * on the CPU and device memory on a GPU; a failure prints the first differing pair with both
 * answers and the two features as WKT. With want_areas (OVERLAY), the areas must be GEOS's
 * GEOSArea(GEOSIntersection(r, s)) to 1e-9 of the larger feature's area.
 *
 * Layers (every feature a valid OGC Polygon or MultiPolygon, GEOSisValid checked, so that GEOS's
 * region is the even-odd region raydex defines):
 *  - polygons_triangle: a single triangle against itself, one touching it at a vertex, one
 *    crossing it;
 *  - polygons_explicit: hand-made pairs, each with its expected answers stated: a feature inside a
 *    hole, one filling a hole exactly (shared boundary, no overlay), features sharing one edge or
 *    part of one (collinear overlap) or one vertex, or touching an edge's middle with a vertex,
 *    identical features (contains and within both), a multipolygon's island, a square spanning
 *    the gap between a multipolygon's parts, a feature without rings;
 *  - polygons_grid: unit squares against a coarser aligned grid, against themselves and against a
 *    half-shifted copy, at scales 1, 2^-200 and 2^100;
 *  - polygons_holes: shells with holes, islands in holes, multipolygons touching at vertices,
 *    against themselves and a grid;
 *  - polygons_big_feature: one feature of 10^5 vertices against a zigzag of thin triangles, a
 *    triangle inside it and a square around it; one of 4 x 10^3 vertices against itself;
 *  - polygons_empty: an empty layer on either side, a feature without rings;
 *  - polygons_random: the property test: random integer rectangles with holes, islands and
 *    diamond holes touching their shell, perturbed integer grids (quads, triangles, merged
 *    cells), and random star polygons at random scales and offsets; a feature GEOS finds invalid
 *    is left out;
 *  - polygons_bad_input (also without GEOS): NULL out, r, s, context, an unknown predicate,
 *    want_areas with another predicate, options out of range, foreign and junk layers: the
 *    status, the message, *out NULL and nothing held.
 */
#include "bench_api.h" /* rdx_join_force_one_stream */
#include "join_check.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

static rdx_context *ctx;
static int gpu;

static rdx_polygons *make(const lb_layer *L) { return lb_create(ctx, L); }

/* ---- refused arguments (no GEOS needed) ---- */

static void bad_input(void) {
  CASE(polygons_bad_input);
  lb_layer L;
  lb_init(&L);
  lb_feature(&L), lb_tri(&L, 0, 0, 1, 0, 0, 1);
  rdx_polygons *r = make(&L);
  if (!r) return;
  int64_t before = held(ctx);
  rdx_join_pairs_result *res = (rdx_join_pairs_result *)(uintptr_t)1; /* must become NULL */
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, RDX_JOIN_OVERLAY, NULL, false, NULL), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_polygons: out is NULL");
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, NULL, r, RDX_JOIN_INTERSECTS, NULL, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_polygons: r is NULL");
  CHECK(res == NULL);
  res = (rdx_join_pairs_result *)(uintptr_t)1;
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, NULL, RDX_JOIN_BOXES, NULL, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_join_polygons: s is NULL");
  CHECK(res == NULL);
  res = (rdx_join_pairs_result *)(uintptr_t)1;
  CHECK(rdx_join_polygons(NULL, r, r, RDX_JOIN_OVERLAY, NULL, false, &res) != RDX_OK);
  CHECK(res == NULL);
  /* unknown predicates: 0, one past the last, another enum's range, negative */
  const int unknown[4] = {0, 6, 0x100, -1};
  for (int k = 0; k < 4; k++) {
    char want[64];
    res = (rdx_join_pairs_result *)(uintptr_t)1;
    CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, (rdx_join_predicate)unknown[k], NULL, false, &res),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "rdx_join_polygons: unknown predicate");
    snprintf(want, sizeof want, "predicate %d", unknown[k]);
    expect_message(ctx, want);
    CHECK(res == NULL);
  }
  /* want_areas: OVERLAY only */
  const rdx_join_predicate others[4] = {RDX_JOIN_INTERSECTS, RDX_JOIN_CONTAINS, RDX_JOIN_WITHIN, RDX_JOIN_BOXES};
  for (int k = 0; k < 4; k++) {
    res = (rdx_join_pairs_result *)(uintptr_t)1;
    CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, others[k], NULL, true, &res), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "rdx_join_polygons");
    expect_message(ctx, "RDX_JOIN_OVERLAY");
    CHECK(res == NULL);
  }
  /* not a layer; a layer of another context */
  uint64_t junk[64];
  memset(junk, 0x5A, sizeof junk);
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, (const rdx_polygons *)junk, RDX_JOIN_OVERLAY, NULL, false, &res),
               RDX_ERR_MISUSE);
  expect_message(ctx, "is not a polygon layer");
  CHECK(res == NULL);
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  rdx_context *other = NULL;
  CHECK_OK(other, rdx_context_create(&co, &other));
  rdx_polygons *foreign = other ? lb_create(other, &L) : NULL;
  if (foreign) {
    res = (rdx_join_pairs_result *)(uintptr_t)1;
    CHECK_STATUS(ctx, rdx_join_polygons(ctx, foreign, r, RDX_JOIN_INTERSECTS, NULL, false, &res), RDX_ERR_MISUSE);
    expect_message(ctx, "another context");
    CHECK(res == NULL);
  }
  rdx_polygons_destroy(foreign);
  rdx_context_destroy(other);
  /* options out of range */
  rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
  o.pad_ulps = 65;
  res = (rdx_join_pairs_result *)(uintptr_t)1;
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, RDX_JOIN_CONTAINS, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->pad_ulps 65");
  CHECK(res == NULL);
  o.pad_ulps = 0;
  o.group_threshold = 0.5;
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, RDX_JOIN_WITHIN, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->group_threshold 0.5");
  o.group_threshold = 0.0;
  o.size = 3;
  CHECK_STATUS(ctx, rdx_join_polygons(ctx, r, r, RDX_JOIN_BOXES, &o, false, &res), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "opts->size 3");
  CHECK(res == NULL);
  CHECK_EQ(held(ctx), before);
  /* the layer joined with itself goes through (the triangle contains itself) */
  res = NULL;
  CHECK_OK(ctx, rdx_join_polygons(ctx, r, r, RDX_JOIN_BOXES, NULL, false, &res));
  if (res) {
    int64_t p[2] = {-1, -1};
    CHECK_EQ(res->n_pairs, 1);
    CHECK(res->areas == NULL);
    if (res->n_pairs == 1) CHECK_OK(ctx, rdx_copy(ctx, p, RDX_HOST, res->pairs, res->where, 16));
    CHECK(p[0] == 0 && p[1] == 0);
  }
  rdx_join_pairs_free(ctx, res);
  rdx_join_pairs_free(ctx, NULL); /* accepted */
  CHECK_EQ(held(ctx), before);
  rdx_polygons_destroy(r);
  lb_free(&L);
}

/* ---- progress ---- */

typedef struct seen_stages {
  int n;
  char names[32][16];
  double done[32];
} seen_stages;

static void on_stage(void *user, const char *stage, double done) {
  seen_stages *s = (seen_stages *)user;
  if (s->n < 32) snprintf(s->names[s->n], sizeof s->names[0], "%s", stage), s->done[s->n] = done;
  s->n++;
}

/* rdx_join_options.progress: told each stage on the calling thread, in the stages' order with a
 * growing fraction below 1, for every predicate; the answers are those of a join without it; a
 * caller whose options end before the field (an older size) is told nothing. */
static void progress(void) {
  CASE(polygons_progress);
  static const char *const known[] = {"index", "pairs", "classify", "groups", "pip", "merge", "select", "areas", "result"};
  lb_layer A, B;
  lb_init(&A), lb_init(&B);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) lb_feature(&A), lb_quad(&A, i, j, i + 1, j + 1);
  lb_feature(&B), lb_quad(&B, 0.5, 0.5, 2.5, 3.5);
  lb_feature(&B), lb_quad(&B, 3, 0, 4, 1);
  rdx_polygons *a = make(&A), *b = make(&B);
  for (int pred = RDX_JOIN_OVERLAY; pred <= RDX_JOIN_BOXES; pred++) {
    const bool areas = pred == RDX_JOIN_OVERLAY;
    rdx_join_pairs_result *plain = NULL, *told = NULL;
    CHECK_OK(ctx, rdx_join_polygons(ctx, a, b, (rdx_join_predicate)pred, NULL, areas, &plain));
    seen_stages seen;
    memset(&seen, 0, sizeof seen);
    rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
    o.progress = on_stage, o.progress_user = &seen;
    CHECK_OK(ctx, rdx_join_polygons(ctx, a, b, (rdx_join_predicate)pred, &o, areas, &told));
    CHECK(seen.n >= 2 && seen.n <= 32);
    for (int k = 0; k < seen.n && k < 32; k++) {
      int idx = -1;
      for (int q = 0; q < 9; q++)
        if (strcmp(seen.names[k], known[q]) == 0) idx = q;
      CHECK(idx >= 0);
      CHECK(seen.done[k] >= 0.0 && seen.done[k] < 1.0);
      if (k > 0) CHECK(seen.done[k] >= seen.done[k - 1]);
    }
    CHECK(seen.n >= 1 && strcmp(seen.names[seen.n - 1 < 32 ? seen.n - 1 : 31], "result") == 0);
    if (pred != RDX_JOIN_BOXES) CHECK(strcmp(seen.names[0], "index") == 0 && strcmp(seen.names[1], "pairs") == 0);
    if (areas) {
      int has_areas = 0;
      for (int k = 0; k < seen.n && k < 32; k++) has_areas |= strcmp(seen.names[k], "areas") == 0;
      CHECK(has_areas);
    }
    if (plain && told) {
      CHECK_EQ(plain->n_pairs, told->n_pairs);
      int64_t *hp = (int64_t *)malloc((size_t)(2 * plain->n_pairs + 1) * 8);
      int64_t *ht = (int64_t *)malloc((size_t)(2 * told->n_pairs + 1) * 8);
      CHECK_OK(ctx, rdx_copy(ctx, hp, RDX_HOST, plain->pairs, plain->where, (size_t)(2 * plain->n_pairs) * 8));
      CHECK_OK(ctx, rdx_copy(ctx, ht, RDX_HOST, told->pairs, told->where, (size_t)(2 * told->n_pairs) * 8));
      if (plain->n_pairs == told->n_pairs) CHECK(memcmp(hp, ht, (size_t)(2 * plain->n_pairs) * 8) == 0);
      free(hp), free(ht);
    }
    rdx_join_pairs_free(ctx, plain), rdx_join_pairs_free(ctx, told);
    /* an older caller's options end before the field: nothing is told */
    memset(&seen, 0, sizeof seen);
    o.size = offsetof(rdx_join_options, progress);
    CHECK_OK(ctx, rdx_join_polygons(ctx, a, b, (rdx_join_predicate)pred, &o, areas, &told));
    CHECK_EQ(seen.n, 0);
    rdx_join_pairs_free(ctx, told);
  }
  rdx_polygons_destroy(a), rdx_polygons_destroy(b);
  lb_free(&A), lb_free(&B);
}

#ifdef RDX_HAVE_GEOS
#include <geos_c.h>

static GEOSContextHandle_t geos;

static const char *const pred_name[6] = {"?", "overlay", "intersects", "contains", "within", "boxes"};

/* ---- GEOS geometries of a layer (join_check.h) and their boxes ---- */

/* A layer's features for GEOS (valid, prepared) and closed boxes from the coordinates. */
typedef struct glayer {
  lb_geos g;
  double (*box)[4]; /* lo x, lo y, hi x, hi y; lo > hi for a feature without rings */
} glayer;

static void g_make(const lb_layer *L, glayer *G) {
  lb_geos_make(geos, L, 0, &G->g);
  G->box = (double(*)[4])calloc((size_t)L->nf + 1, sizeof *G->box);
  for (int64_t f = 0; f < L->nf; f++) {
    double *b = G->box[f];
    b[0] = b[1] = INFINITY, b[2] = b[3] = -INFINITY;
    for (uint64_t v = L->ro[L->fo[f]]; v < L->ro[L->fo[f + 1]]; v++)
      for (int k = 0; k < 2; k++) b[k] = fmin(b[k], L->xy[2 * v + k]), b[2 + k] = fmax(b[2 + k], L->xy[2 * v + k]);
  }
}
static void g_free(glayer *G) {
  lb_geos_free(geos, &G->g);
  free(G->box);
}

/* WKT of a geometry, cut to fit buf */
static const char *wkt(const GEOSGeometry *g, char *buf, size_t n) {
  GEOSWKTWriter *w = GEOSWKTWriter_create_r(geos);
  GEOSWKTWriter_setTrim_r(geos, w, 1);
  char *s = GEOSWKTWriter_write_r(geos, w, g);
  snprintf(buf, n, "%s", s ? s : "?");
  if (s && strlen(s) >= n && n > 4) strcpy(buf + n - 4, "...");
  GEOSFree_r(geos, s);
  GEOSWKTWriter_destroy_r(geos, w);
  return buf;
}

/* ---- the reference: per pair whose boxes meet, a bit per predicate (1 << predicate) ---- */

typedef struct tpair {
  int64_t r, s;
  unsigned bits;
  int64_t k; /* the pair's place in R x S's list (for the areas, computed once for both ways) */
} tpair;
typedef struct truth {
  tpair *p;
  int64_t n, cap;
  int64_t count[6]; /* pairs per predicate */
} truth;

static unsigned geos_bit(char c, const char *what, int64_t i, int64_t j) {
  if (c != 0 && c != 1) CHECK_FAIL_("GEOS %s failed on pair (%lld, %lld)", what, (long long)i, (long long)j);
  return c == 1;
}

static void truth_make(const glayer *GR, const glayer *GS, truth *T) {
  memset(T, 0, sizeof *T);
  for (int64_t i = 0; i < GR->g.n; i++)
    for (int64_t j = 0; j < GS->g.n; j++) {
      const double *a = GR->box[i], *b = GS->box[j];
      if (!(a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3])) continue;
      unsigned bits = 1u << RDX_JOIN_BOXES;
      unsigned in = geos_bit(GEOSPreparedIntersects_r(geos, GR->g.prep[i], GS->g.geom[j]), "intersects", i, j);
      unsigned co = geos_bit(GEOSPreparedContains_r(geos, GR->g.prep[i], GS->g.geom[j]), "contains", i, j);
      unsigned wi = geos_bit(GEOSPreparedContains_r(geos, GS->g.prep[j], GR->g.geom[i]), "within", i, j);
      /* GEOS's contains and within (T*****FF*, T*F**F***) imply that the interiors meet, and
       * disjoint features have no common interior point: the relate, slow on a feature of 10^5
       * vertices, decides the rest */
      unsigned ov = co || wi ? 1 : !in ? 0
                  : geos_bit(GEOSRelatePattern_r(geos, GR->g.geom[i], GS->g.geom[j], "T********"), "relate", i, j);
      bits |= ov << RDX_JOIN_OVERLAY | in << RDX_JOIN_INTERSECTS | co << RDX_JOIN_CONTAINS | wi << RDX_JOIN_WITHIN;
      T->p = (tpair *)jc_grow(T->p, &T->cap, T->n + 1, sizeof *T->p);
      T->p[T->n] = (tpair){i, j, bits, T->n};
      T->n++;
      for (int k = 1; k <= 5; k++) T->count[k] += (bits >> k) & 1;
    }
}

static int cmp_tpair(const void *a, const void *b) {
  const tpair *x = (const tpair *)a, *y = (const tpair *)b;
  return x->r != y->r ? (x->r > y->r) - (x->r < y->r) : (x->s > y->s) - (x->s < y->s);
}

/* S x R from R x S: overlay, intersects and boxes are symmetric; contains and within swap */
static void truth_swap(const truth *T, truth *U) {
  *U = *T;
  U->p = (tpair *)malloc((size_t)(T->n + 1) * sizeof *U->p);
  U->cap = T->n + 1;
  for (int64_t k = 0; k < T->n; k++) {
    unsigned b = T->p[k].bits, c = (b >> RDX_JOIN_CONTAINS) & 1, w = (b >> RDX_JOIN_WITHIN) & 1;
    b &= ~((1u << RDX_JOIN_CONTAINS) | (1u << RDX_JOIN_WITHIN));
    U->p[k] = (tpair){T->p[k].s, T->p[k].r, b | w << RDX_JOIN_CONTAINS | c << RDX_JOIN_WITHIN, T->p[k].k};
  }
  if (U->n > 1) qsort(U->p, (size_t)U->n, sizeof *U->p, cmp_tpair);
  U->count[RDX_JOIN_CONTAINS] = T->count[RDX_JOIN_WITHIN], U->count[RDX_JOIN_WITHIN] = T->count[RDX_JOIN_CONTAINS];
}

/* ---- one join against the reference ---- */

static double slowest_ms; /* the slowest join of the current check_join, and which */
static char slowest[96];

static double now_ms(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
static int64_t areas_compared;

/* The pairs of a result on the host (NULL when there are none), or NULL after a failed copy. */
static int64_t *pairs_host(const rdx_join_pairs_result *res) {
  if (res->n_pairs == 0) return NULL;
  int64_t *h = (int64_t *)malloc((size_t)res->n_pairs * 16);
  CHECK_OK(ctx, rdx_copy(ctx, h, RDX_HOST, res->pairs, res->where, (size_t)res->n_pairs * 16));
  return h;
}

static void report_pair(const char *what, rdx_join_predicate p, const glayer *GR, const glayer *GS, int swapped,
                        int64_t r, int64_t s, int got, int want) {
  char wr[240], ws[240];
  /* GR / GS are the R x S layers; a swapped join's r is a feature of GS */
  const GEOSGeometry *gr = swapped ? GS->g.geom[r] : GR->g.geom[r], *gs = swapped ? GR->g.geom[s] : GS->g.geom[s];
  CHECK_FAIL_("%s, %s: pair (%lld, %lld): raydex %s, GEOS %s; r = %s; s = %s", what, pred_name[p], (long long)r,
              (long long)s, got ? "yes" : "no", want ? "yes" : "no", wkt(gr, wr, sizeof wr), wkt(gs, ws, sizeof ws));
}

/* rdx_join_polygons(r, s, p) against T */
static void compare(const char *what, rdx_polygons *r, rdx_polygons *s, rdx_join_predicate p, const rdx_join_options *o,
                   const truth *T, const glayer *GR, const glayer *GS, int swapped) {
  int64_t before = held(ctx);
  rdx_join_pairs_result *res = (rdx_join_pairs_result *)(uintptr_t)1;
  double t0 = now_ms();
  rdx_status st = rdx_join_polygons(ctx, r, s, p, o, false, &res);
  if (now_ms() - t0 > slowest_ms)
    slowest_ms = now_ms() - t0, snprintf(slowest, sizeof slowest, "%s%s", pred_name[p], swapped ? " S x R" : "");
  if (st != RDX_OK) {
    CHECK_FAIL_("%s, %s: rdx_join_polygons returned %s: %s", what, pred_name[p], rdx_status_name(st),
                rdx_context_message(ctx));
    CHECK(res == NULL);
    return;
  }
  if (res == NULL) {
    CHECK_FAIL_("%s, %s: RDX_OK and no result", what, pred_name[p]);
    return;
  }
  CHECK_EQ(res->where, gpu ? RDX_DEVICE : RDX_HOST);
  CHECK(res->areas == NULL);
  int64_t *got = pairs_host(res), n = res->n_pairs;
  /* sorted ascending by (r, s), unique */
  for (int64_t k = 1; got && k < n; k++)
    if (got[2 * k - 2] > got[2 * k] || (got[2 * k - 2] == got[2 * k] && got[2 * k - 1] >= got[2 * k + 1])) {
      CHECK_FAIL_("%s, %s: pairs %lld (%lld, %lld) and %lld (%lld, %lld) are not ascending and unique", what,
                  pred_name[p], (long long)(k - 1), (long long)got[2 * k - 2], (long long)got[2 * k - 1], (long long)k,
                  (long long)got[2 * k], (long long)got[2 * k + 1]);
      break;
    }
  /* merge with the reference's pairs of this predicate */
  int64_t extra = 0, missing = 0, i = 0, j = 0;
  const unsigned bit = 1u << p;
  for (;;) {
    while (j < T->n && !(T->p[j].bits & bit)) j++;
    if (i >= n && j >= T->n) break;
    int c = i >= n ? 1 : j >= T->n ? -1 : got[2 * i] != T->p[j].r ? (got[2 * i] < T->p[j].r ? -1 : 1)
                                          : (got[2 * i + 1] > T->p[j].s) - (got[2 * i + 1] < T->p[j].s);
    if (c == 0) {
      i++, j++;
    } else if (c < 0) {
      if (extra + missing < 3) report_pair(what, p, GR, GS, swapped, got[2 * i], got[2 * i + 1], 1, 0);
      extra++, i++;
    } else {
      if (extra + missing < 3) report_pair(what, p, GR, GS, swapped, T->p[j].r, T->p[j].s, 0, 1);
      missing++, j++;
    }
  }
  if (extra + missing > 0)
    CHECK_FAIL_("%s, %s: %lld pairs, GEOS %lld: %lld not GEOS's, %lld of GEOS's missing", what, pred_name[p],
                (long long)n, (long long)T->count[p], (long long)extra, (long long)missing);
  free(got);
  rdx_join_pairs_free(ctx, res);
  CHECK_EQ(held(ctx), before);
}

/* GEOS's area of the intersection of a and b. OverlayNG nodes both whole, so a feature of many
 * vertices is first clipped to the other's box (which changes the area by rounding only). */
static double geos_area(const GEOSGeometry *a, const GEOSGeometry *b) {
  if (GEOSGetNumCoordinates_r(geos, a) < GEOSGetNumCoordinates_r(geos, b)) {
    const GEOSGeometry *t = a;
    a = b, b = t;
  }
  GEOSGeometry *clip = NULL, *x;
  if (GEOSGetNumCoordinates_r(geos, a) > 1000) {
    double x0, y0, x1, y1;
    GEOSGeom_getXMin_r(geos, b, &x0), GEOSGeom_getYMin_r(geos, b, &y0);
    GEOSGeom_getXMax_r(geos, b, &x1), GEOSGeom_getYMax_r(geos, b, &y1);
    clip = GEOSClipByRect_r(geos, a, x0, y0, x1, y1);
  }
  x = GEOSIntersection_r(geos, clip ? clip : a, b);
  double area = NAN;
  if (x) GEOSArea_r(geos, x, &area), GEOSGeom_destroy_r(geos, x);
  if (clip) GEOSGeom_destroy_r(geos, clip);
  return area;
}

/* want_areas: the overlay pairs again, each with GEOS's area of the intersection (cache: per pair
 * of R x S's list, NAN until computed) */
static void compare_areas(const char *what, rdx_polygons *r, rdx_polygons *s, const truth *T, const glayer *GR,
                          const glayer *GS, int swapped, double *cache) {
  int64_t before = held(ctx);
  rdx_join_pairs_result *res = (rdx_join_pairs_result *)(uintptr_t)1;
  rdx_status st = rdx_join_polygons(ctx, r, s, RDX_JOIN_OVERLAY, NULL, true, &res);
  if (st != RDX_OK || res == NULL) {
    CHECK_FAIL_("%s, overlay with areas: rdx_join_polygons returned %s: %s", what, rdx_status_name(st),
                rdx_context_message(ctx));
    return;
  }
  int64_t *got = pairs_host(res), n = res->n_pairs;
  double *area = n ? (double *)malloc((size_t)n * 8) : NULL;
  if (n && res->areas == NULL) CHECK_FAIL_("%s, overlay with areas: areas NULL", what);
  else if (n) CHECK_OK(ctx, rdx_copy(ctx, area, RDX_HOST, res->areas, res->where, (size_t)n * 8));
  CHECK_EQ(n, T->count[RDX_JOIN_OVERLAY]);
  int64_t bad = 0;
  for (int64_t i = 0, j = 0; i < n && area && res->areas; i++, j++) {
    while (j < T->n && !(T->p[j].bits & (1u << RDX_JOIN_OVERLAY))) j++;
    if (j >= T->n || T->p[j].r != got[2 * i] || T->p[j].s != got[2 * i + 1]) {
      CHECK_FAIL_("%s, overlay with areas: pair %lld (%lld, %lld) is not GEOS's overlay pair", what, (long long)i,
                  (long long)got[2 * i], (long long)got[2 * i + 1]);
      break;
    }
    const GEOSGeometry *gr = swapped ? GS->g.geom[got[2 * i]] : GR->g.geom[got[2 * i]];
    const GEOSGeometry *gs = swapped ? GR->g.geom[got[2 * i + 1]] : GS->g.geom[got[2 * i + 1]];
    if (isnan(cache[T->p[j].k])) cache[T->p[j].k] = geos_area(gr, gs);
    double want = cache[T->p[j].k], ar = 0, as = 0;
    GEOSArea_r(geos, gr, &ar), GEOSArea_r(geos, gs, &as);
    areas_compared++;
    if (!(fabs(area[i] - want) <= 1e-9 * fmax(ar, as)) && bad++ < 3)
      CHECK_FAIL_("%s, overlay with areas: pair (%lld, %lld) area %.17g, GEOS %.17g", what, (long long)got[2 * i],
                  (long long)got[2 * i + 1], area[i], want);
  }
  free(got), free(area);
  rdx_join_pairs_free(ctx, res);
  CHECK_EQ(held(ctx), before);
}

enum { NO_REINDEX = 1, NO_AREAS = 2 };

/* Every predicate on R x S and S x R against GEOS. */
static void check_join(const char *what, const lb_layer *R, const lb_layer *S, int flags) {
  rdx_polygons *r = make(R), *s = R == S ? NULL : make(S);
  if (R == S) s = r;
  if (!r || !s) {
    rdx_polygons_destroy(r);
    if (s != r) rdx_polygons_destroy(s);
    return;
  }
  glayer GR, GS;
  g_make(R, &GR);
  g_make(S, &GS);
  truth T, U;
  double t0 = now_ms();
  truth_make(&GR, &GS, &T);
  truth_swap(&T, &U);
  double geos_ms = now_ms() - t0;
  double *cache = (double *)malloc((size_t)(T.n + 1) * sizeof *cache);
  for (int64_t k = 0; k <= T.n; k++) cache[k] = NAN;
  slowest_ms = 0, slowest[0] = 0;
  for (int pass = 0; pass < ((flags & NO_REINDEX) ? 1 : 2); pass++) {
    rdx_join_options o = RDX_JOIN_OPTIONS_INIT;
    /* pass 1: GPU contexts locate the two directions one after the other, not side by side */
    rdx_join_force_one_stream(ctx, pass == 1);
    if (pass == 1) { /* both layers indexed, with other options than the defaults */
      o.pad_ulps = 9, o.group_threshold = 1.0;
      CHECK_OK(ctx, rdx_polygons_build_index(ctx, r, &o));
      if (s != r) CHECK_OK(ctx, rdx_polygons_build_index(ctx, s, &o));
      o = (rdx_join_options)RDX_JOIN_OPTIONS_INIT;
    }
    for (int sw = 0; sw < 2; sw++) {
      char w[200];
      snprintf(w, sizeof w, "%s (%s%s)", what, sw ? "S x R" : "R x S", pass ? ", indexed" : "");
      for (int p = RDX_JOIN_OVERLAY; p <= RDX_JOIN_BOXES; p++)
        compare(w, sw ? s : r, sw ? r : s, (rdx_join_predicate)p, &o, sw ? &U : &T, &GR, &GS, sw);
      if (pass == 0 && !(flags & NO_AREAS)) compare_areas(w, sw ? s : r, sw ? r : s, sw ? &U : &T, &GR, &GS, sw, cache);
    }
  }
  rdx_join_force_one_stream(ctx, 0);
  printf("  %s: %lld x %lld features, %lld x %lld vertices; pairs: overlay %lld, intersects %lld, contains %lld, "
         "within %lld, boxes %lld\n",
         what, (long long)R->nf, (long long)S->nf, (long long)R->nv, (long long)S->nv, (long long)T.count[1],
         (long long)T.count[2], (long long)T.count[3], (long long)T.count[4], (long long)T.count[5]);
  if (slowest_ms > 1000 || geos_ms > 1000)
    printf("    GEOS took %.0f ms; the slowest join %.0f ms (%s)\n", geos_ms, slowest_ms, slowest);
  free(T.p), free(U.p), free(cache);
  g_free(&GR), g_free(&GS);
  rdx_polygons_destroy(r);
  if (s != r) rdx_polygons_destroy(s);
}

/* Expected answers of a hand-made pair, as GEOS gives them too (a check of the reference). */
static void expect_geos(const lb_layer *R, int64_t i, const lb_layer *S, int64_t j, const char *answers) {
  GEOSGeometry *a = lb_geos_feature(geos, R, i), *b = lb_geos_feature(geos, S, j);
  char got[6];
  got[0] = GEOSRelatePattern_r(geos, a, b, "T********") == 1 ? 'O' : '-';
  got[1] = GEOSIntersects_r(geos, a, b) == 1 ? 'I' : '-';
  got[2] = GEOSContains_r(geos, a, b) == 1 ? 'C' : '-';
  got[3] = GEOSWithin_r(geos, a, b) == 1 ? 'W' : '-';
  got[4] = 0;
  if (strncmp(got, answers, 4) != 0)
    CHECK_FAIL_("the reference: GEOS answers %s for pair (%lld, %lld), the test expects %s", got, (long long)i,
                (long long)j, answers);
  GEOSGeom_destroy_r(geos, a), GEOSGeom_destroy_r(geos, b);
}

/* ---- layers and cases ---- */

static void triangle(void) {
  CASE(polygons_triangle);
  lb_layer T, U, V;
  lb_init(&T), lb_init(&U), lb_init(&V);
  lb_feature(&T), lb_tri(&T, 0, 0, 8, 0, 0, 8);
  lb_feature(&U), lb_tri(&U, 8, 0, 12, 0, 10, 4);  /* touches T at the vertex (8, 0) */
  lb_feature(&V), lb_tri(&V, -2, 2, 10, 2, 4, -3); /* crosses T */
  expect_geos(&T, 0, &T, 0, "OICW");
  expect_geos(&T, 0, &U, 0, "-I--");
  expect_geos(&T, 0, &V, 0, "OI--");
  check_join("single triangle x itself", &T, &T, 0);
  check_join("triangle x vertex touch", &T, &U, 0);
  check_join("triangle x crossing triangle", &T, &V, 0);
  lb_free(&T), lb_free(&U), lb_free(&V);
}

static void explicit_pairs(void) {
  CASE(polygons_explicit);
  lb_layer R, S;
  lb_init(&R), lb_init(&S);
  lb_feature(&R); /* R0: shell, hole, its own island in the hole (a MultiPolygon) */
  lb_quad_as(&R, 0, 0, 10, 10, 1), lb_quad_as(&R, 2, 2, 8, 8, 0), lb_quad_as(&R, 4, 4, 6, 6, 1);
  lb_feature(&R), lb_quad(&R, 20, 0, 22, 2);                       /* R1 */
  lb_feature(&R), lb_quad(&R, 30, 0, 32, 2);                       /* R2 */
  lb_feature(&R), lb_tri(&R, 40, 0, 44, 0, 42, 3);                 /* R3 */
  lb_feature(&R), lb_quad(&R, 50, 0, 52, 2), lb_quad(&R, 54, 0, 56, 2); /* R4: two squares */
  lb_feature(&R), lb_quad(&R, 60, 0, 64, 4);                       /* R5 */
  lb_feature(&R);                                                  /* R6: no rings */
  lb_feature(&R), lb_quad(&R, 70, 0, 72, 2);                       /* R7 */

  /* S, each with its expected answers against the R feature named: O(verlay) I(ntersects)
   * C(ontains: r contains s) W(ithin: r within s) */
  struct {
    int64_t r;
    const char *answers;
  } e[32];
  int ne = 0;
#define EXPECT(rr, a) (e[ne].r = (rr), e[ne].answers = (a), ne++)
  lb_feature(&S), lb_quad(&S, 2.5, 2.5, 3.5, 3.5), EXPECT(0, "----");        /* S0: in R0's hole */
  lb_feature(&S), lb_quad_as(&S, 2, 2, 8, 8, 1), lb_quad_as(&S, 4, 4, 6, 6, 0);
  EXPECT(0, "-I--");                                                         /* S1: fills R0's hole exactly */
  lb_feature(&S), lb_quad(&S, 22, 0, 24, 2), EXPECT(1, "-I--");              /* S2: shares R1's edge */
  lb_feature(&S), lb_quad(&S, 22, 2, 24, 4), EXPECT(1, "-I--");              /* S3: one vertex of R1 */
  lb_feature(&S), lb_quad(&S, 30, 0, 32, 2), EXPECT(2, "OICW");              /* S4: identical to R2 */
  lb_feature(&S), lb_tri(&S, 41, 0, 43, 0, 42, 1), EXPECT(3, "OIC-");        /* S5: in R3, on its edge */
  lb_feature(&S), lb_quad(&S, 52, 0, 54, 2), EXPECT(4, "-I--");              /* S6: between R4's parts */
  lb_feature(&S), lb_quad(&S, 50, 0, 51, 1), EXPECT(4, "OIC-");              /* S7: in one part of R4 */
  lb_feature(&S), lb_quad(&S, 50, 0, 56, 2), EXPECT(4, "OI-W");              /* S8: covers R4 */
  lb_feature(&S), lb_quad(&S, 64, 1, 66, 2), EXPECT(5, "-I--");              /* S9: collinear, part of an edge */
  lb_feature(&S), lb_quad(&S, 62, 1, 66, 3), EXPECT(5, "OI--");              /* S10: crosses R5's edge */
  lb_feature(&S), lb_quad(&S, 4, 4, 6, 6), EXPECT(0, "OIC-");                /* S11: R0's island */
  lb_feature(&S), lb_quad(&S, 0, 0, 10, 10), EXPECT(0, "OI-W");              /* S12: R0's shell, filled */
  lb_feature(&S), lb_quad(&S, 8, 8, 9, 9), EXPECT(0, "OIC-");                /* S13: in R0, hole corner */
  {
    double d[8] = {2, 5, 3, 4.5, 3.5, 5, 3, 5.5};                          /* S14: in the hole, one vertex */
    lb_feature(&S), lb_ring_as(&S, d, 4, 1), EXPECT(0, "-I--");            /*      on the hole's edge */
  }
  lb_feature(&S), lb_tri(&S, 42, 0, 43, -1, 41, -1), EXPECT(3, "-I--");      /* S15: vertex mid-edge of R3 */
  lb_feature(&S), EXPECT(1, "----");                                         /* S16: no rings */
  lb_feature(&S), lb_quad(&S, 70, 0, 72, 2), lb_quad(&S, 73, 0, 74, 1);      /* S17: R7 and another part */
  EXPECT(7, "OI-W");
  lb_feature(&S), lb_quad(&S, 71, 1, 73, 3), lb_quad(&S, 70, 0, 71, 1);      /* S18: crosses R7, and a */
  EXPECT(7, "OI--");                                                         /*      part inside it */
  lb_feature(&S), lb_quad(&S, 61, 1, 63, 3), lb_quad_as(&S, 61.5, 1.5, 62.5, 2.5, 0);
  EXPECT(5, "OIC-");                                                         /* S19: in R5, with a hole */
#undef EXPECT
  for (int k = 0; k < ne; k++) expect_geos(&R, e[k].r, &S, k, e[k].answers);
  check_join("explicit pairs", &R, &S, 0);
  check_join("explicit R x itself", &R, &R, 0);
  check_join("explicit S x itself", &S, &S, 0);
  lb_free(&R), lb_free(&S);
}

static void grids(void) {
  CASE(polygons_grid);
  const int scales[3] = {0, -200, 100};
  for (int k = 0; k < 3; k++) {
    int n = k == 0 ? 16 : 8;
    lb_layer F, C, H;
    lb_init(&F), lb_init(&C), lb_init(&H);
    lb_grid(&F, n, -8, -4, 1);     /* fine */
    lb_grid(&C, n / 2, -8, -4, 2); /* coarse, aligned */
    lb_grid(&H, n, -7.5, -4, 1);   /* fine, shifted by half a cell in x */
    lb_scale(&F, scales[k]), lb_scale(&C, scales[k]), lb_scale(&H, scales[k]);
    char w[80];
    snprintf(w, sizeof w, "grid x coarse grid at 2^%d", scales[k]);
    check_join(w, &F, &C, 0);
    snprintf(w, sizeof w, "grid x itself at 2^%d", scales[k]);
    check_join(w, &F, &F, k ? NO_AREAS : 0);
    snprintf(w, sizeof w, "grid x half-shifted grid at 2^%d", scales[k]);
    check_join(w, &F, &H, k ? NO_AREAS : 0);
    lb_free(&F), lb_free(&C), lb_free(&H);
  }
}

static void holes(void) {
  CASE(polygons_holes);
  lb_layer L, D;
  lb_init(&L), lb_init(&D);
  lb_feature(&L); /* 0: shell, hole, island of its own inside the hole (a MultiPolygon) */
  lb_quad_as(&L, 0, 0, 10, 10, 1), lb_quad_as(&L, 2, 2, 8, 8, 0), lb_quad_as(&L, 4, 4, 6, 6, 1);
  lb_feature(&L), lb_quad(&L, 2.5, 2.5, 3.5, 3.5); /* 1: an island of another feature */
  lb_feature(&L), lb_quad(&L, 10, 0, 12, 10);      /* 2: shares the edge x = 10 */
  lb_feature(&L), lb_quad(&L, 6, 6, 8, 8);         /* 3: fills a corner of the hole */
  lb_feature(&L); /* 4: a multipolygon of three squares, one touching feature 2 at a vertex */
  lb_quad(&L, 12, 10, 13, 11), lb_quad(&L, 14, 0, 15, 1), lb_quad(&L, 14, 4, 15, 5);
  double dia[8] = {13, -1, 14, 0, 13, 1, 12, 0}; /* 5: a diamond touching 2 and 4 */
  lb_feature(&L), lb_ring_as(&L, dia, 4, 1);
  lb_feature(&L); /* 6: a shell with two holes, one touching the shell at a vertex */
  double sh[8] = {-10, -10, -2, -10, -2, -2, -10, -2}, h1[6] = {-10, -6, -8, -7, -8, -5},
         h2[8] = {-5, -5, -4, -6, -3, -5, -4, -4};
  lb_ring_as(&L, sh, 4, 1), lb_ring_as(&L, h1, 3, 0), lb_ring_as(&L, h2, 4, 0);
  lb_feature(&L), lb_ring_as(&L, h2, 4, 1); /* 7: feature 6's second hole, filled */
  lb_grid(&D, 8, -11, -11, 3);
  check_join("holes x itself", &L, &L, 0);
  check_join("holes x grid", &L, &D, 0);
  lb_free(&L), lb_free(&D);
}

static void big_feature(void) {
  CASE(polygons_big_feature);
  lb_layer L, Z;
  lb_init(&L), lb_init(&Z);
  int k = 50000;
  double *p = (double *)malloc((size_t)4 * k * sizeof *p);
  lb_star_points(p, k, 3, -2, 0.9, 1.0, 0.1);
  lb_feature(&L), lb_ring_as(&L, p, 2 * k, 1);
  for (int i = 0; i < 3; i++) /* thin triangles zigzagging across the star's rim */
    lb_feature(&Z), lb_tri(&Z, 2 + 0.1 * i, -3.2, 2.05 + 0.1 * i, -0.8, 2.1 + 0.1 * i, -3.2);
  lb_feature(&Z), lb_tri(&Z, 2.8, -2.2, 3.2, -2.2, 3, -1.8); /* inside */
  lb_feature(&Z), lb_quad(&Z, 1, -4, 5, 0);                  /* around */
  lb_feature(&Z), lb_tri(&Z, 4.5, -2, 5, -2, 5, -1.5);       /* outside, boxes apart */
  check_join("10^5 vertices x zigzag", &L, &Z, NO_REINDEX);
  /* identical many-vertex features: GEOS's relate of two 10^5-vertex stars takes minutes, and
   * every side point of a star sees most of its edges, so 4 x 10^3 */
  lb_layer M;
  lb_init(&M);
  lb_star_points(p, 2000, 3, -2, 0.9, 1.0, 0.1);
  lb_feature(&M), lb_ring_as(&M, p, 4000, 1);
  check_join("4 x 10^3 vertices x itself", &M, &M, NO_REINDEX | NO_AREAS);
  lb_free(&M);
  free(p);
  lb_free(&L), lb_free(&Z);
}

static void empty(void) {
  CASE(polygons_empty);
  lb_layer E, T, N;
  lb_init(&E), lb_init(&T), lb_init(&N);
  lb_grid(&T, 3, 0, 0, 1);
  lb_feature(&N), lb_quad(&N, 0, 0, 1, 1);
  lb_feature(&N); /* a feature without rings */
  lb_feature(&N), lb_quad(&N, 1, 0, 2, 1);
  check_join("empty x grid", &E, &T, 0);
  check_join("empty x empty", &E, &E, 0);
  check_join("feature without rings x grid", &N, &T, 0);
  lb_layer O;
  lb_init(&O);
  lb_feature(&O); /* a layer of one feature without rings */
  check_join("only a feature without rings x grid", &O, &T, 0);
  lb_free(&E), lb_free(&T), lb_free(&N), lb_free(&O);
}

/* ---- random valid layers ---- */

/* Append the one feature of F to L when GEOS finds it valid; F is emptied. */
static int64_t n_invalid;
static void add_valid(lb_layer *L, lb_layer *F) {
  GEOSGeometry *g = lb_geos_feature(geos, F, 0);
  if (GEOSisValid_r(geos, g) == 1) {
    lb_feature(L);
    for (int64_t r = 0; r < F->nr; r++)
      lb_ring_as(L, F->xy + 2 * F->ro[r], (int64_t)(F->ro[r + 1] - F->ro[r]), F->shell[r]);
  } else {
    n_invalid++;
  }
  GEOSGeom_destroy_r(geos, g);
  lb_free(F);
  lb_init(F);
}

static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)check_below((uint64_t)(hi - lo + 1)); }

/* n random integer rectangles in [0, range]^2: some with a rectangular hole (and an island in it)
 * or a diamond hole that may touch the shell at a vertex, some multipolygons of two */
static void rect_layer(lb_layer *L, int n, int range) {
  lb_layer F;
  lb_init(&F);
  for (int f = 0; f < n; f++) {
    lb_feature(&F);
    int parts = check_below(4) == 0 ? 2 : 1;
    for (int q = 0; q < parts; q++) {
      int64_t x0 = irand(0, range - 1), y0 = irand(0, range - 1);
      int64_t x1 = irand(x0 + 1, range), y1 = irand(y0 + 1, range);
      lb_quad_as(&F, (double)x0, (double)y0, (double)x1, (double)y1, 1);
      int hole = (int)check_below(3);
      if (hole == 1 && x1 - x0 >= 3 && y1 - y0 >= 3) {
        int64_t hx0 = irand(x0 + 1, x1 - 2), hy0 = irand(y0 + 1, y1 - 2);
        int64_t hx1 = irand(hx0 + 1, x1 - 1), hy1 = irand(hy0 + 1, y1 - 1);
        lb_quad_as(&F, (double)hx0, (double)hy0, (double)hx1, (double)hy1, 0);
        if (hx1 - hx0 >= 3 && hy1 - hy0 >= 3 && check_below(2))
          lb_quad_as(&F, (double)hx0 + 1, (double)hy0 + 1, (double)hx1 - 1, (double)hy1 - 1, 1);
      } else if (hole == 2 && x1 - x0 >= 2 && y1 - y0 >= 2) { /* a diamond, its corners on or inside */
        int64_t d = irand(1, ((x1 - x0 < y1 - y0 ? x1 - x0 : y1 - y0)) / 2);
        int64_t cx = irand(x0 + d, x1 - d), cy = irand(y0 + d, y1 - d);
        double dm[8] = {(double)(cx - d), (double)cy, (double)cx, (double)(cy - d), (double)(cx + d), (double)cy,
                        (double)cx, (double)(cy + d)};
        lb_ring_as(&F, dm, 4, 0);
      }
    }
    add_valid(L, &F);
  }
  lb_free(&F);
}

/* an n x n grid of cells of side h from (x0, y0), its inner vertices moved by up to `jitter`
 * (integers): each cell a quad, or two triangles, or merged with its right neighbour */
static void perturbed_grid(lb_layer *L, int n, int64_t x0, int64_t y0, int64_t h, int64_t jitter) {
  double *v = (double *)malloc((size_t)(n + 1) * (n + 1) * 2 * sizeof *v);
#define V(i, j) (v + 2 * ((i) * (n + 1) + (j)))
  for (int i = 0; i <= n; i++)
    for (int j = 0; j <= n; j++) {
      int inner = i > 0 && i < n && j > 0 && j < n;
      V(i, j)[0] = (double)(x0 + i * h + (inner ? irand(-jitter, jitter) : 0));
      V(i, j)[1] = (double)(y0 + j * h + (inner ? irand(-jitter, jitter) : 0));
    }
  lb_layer F;
  lb_init(&F);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      int kind = (int)check_below(6);
      double q[12];
      if (kind == 0 && i + 1 < n) { /* this cell and the next as one hexagon */
        const double *c[6] = {V(i, j), V(i + 1, j), V(i + 2, j), V(i + 2, j + 1), V(i + 1, j + 1), V(i, j + 1)};
        for (int k = 0; k < 6; k++) q[2 * k] = c[k][0], q[2 * k + 1] = c[k][1];
        lb_feature(&F), lb_ring_as(&F, q, 6, 1), add_valid(L, &F);
        i++;
      } else if (kind == 1) { /* two triangles */
        const double *c[4] = {V(i, j), V(i + 1, j), V(i + 1, j + 1), V(i, j + 1)};
        for (int t = 0; t < 2; t++) {
          const double *a = c[0], *b = t ? c[2] : c[1], *d = t ? c[3] : c[2];
          lb_feature(&F), lb_tri(&F, a[0], a[1], b[0], b[1], d[0], d[1]), add_valid(L, &F);
        }
      } else {
        const double *c[4] = {V(i, j), V(i + 1, j), V(i + 1, j + 1), V(i, j + 1)};
        for (int k = 0; k < 4; k++) q[2 * k] = c[k][0], q[2 * k + 1] = c[k][1];
        lb_feature(&F), lb_ring_as(&F, q, 4, 1), add_valid(L, &F);
      }
    }
#undef V
  lb_free(&F);
  free(v);
}

/* n random stars near (0, 0) (some with a hole, some multipolygons of two), then every
 * coordinate times 2^e plus an offset */
static void star_layer(lb_layer *L, int n, int e, double off) {
  double p[2 * 2 * 24];
  lb_layer F;
  lb_init(&F);
  for (int f = 0; f < n; f++) {
    lb_feature(&F);
    int parts = check_below(5) == 0 ? 2 : 1;
    for (int q = 0; q < parts; q++) {
      double cx = lb_urand(-4, 4) + 20.0 * q, cy = lb_urand(-4, 4), r1 = lb_urand(0.5, 2);
      int k = 3 + (int)check_below(20);
      lb_star_points(p, k, cx, cy, r1 * lb_urand(0.3, 1), r1, lb_urand(0, 1));
      for (int i = 0; i < 4 * k; i++) p[i] = ldexp(p[i], e) + off;
      lb_ring_as(&F, p, 2 * k, 1);
      if (check_below(3) == 0) { /* a hole inside the star's inner radius */
        lb_star_points(p, k, cx, cy, r1 * 0.05, r1 * 0.25, lb_urand(0, 1));
        for (int i = 0; i < 4 * k; i++) p[i] = ldexp(p[i], e) + off;
        lb_ring_as(&F, p, 2 * k, 0);
      }
    }
    add_valid(L, &F);
  }
  lb_free(&F);
}

static void random_case(void) {
  CASE(polygons_random);
  for (int it = 0; it < 16; it++) {
    lb_layer R, S;
    lb_init(&R), lb_init(&S);
    char w[120];
    int kind = it % 4, self = 0;
    if (kind == 0) { /* rectangles against rectangles on a small integer range: many shared edges */
      int range = 6 + (int)check_below(20);
      rect_layer(&R, 5 + (int)check_below(40), range);
      rect_layer(&S, 5 + (int)check_below(40), range);
      self = check_below(3) == 0;
      snprintf(w, sizeof w, "random %d: rectangles in [0, %d]^2", it, range);
    } else if (kind == 1) { /* perturbed grids, aligned or not */
      int n = 3 + (int)check_below(8);
      int64_t h = 4 + irand(0, 2), j = irand(0, 1);
      perturbed_grid(&R, n, 0, 0, h, j);
      if (check_below(2)) perturbed_grid(&S, n, 0, 0, h, j);
      else perturbed_grid(&S, n - 1, irand(0, 3), irand(0, 3), h + irand(0, 2), irand(0, 1));
      self = check_below(3) == 0;
      snprintf(w, sizeof w, "random %d: perturbed grids of %d cells of %lld", it, n, (long long)h);
    } else if (kind == 2) { /* rectangles against a perturbed grid */
      int n = 3 + (int)check_below(6);
      perturbed_grid(&R, n, 0, 0, 4, 1);
      rect_layer(&S, 5 + (int)check_below(30), 4 * n);
      snprintf(w, sizeof w, "random %d: perturbed grid x rectangles", it);
    } else { /* stars at random scales and offsets */
      int e = (int)check_below(60) - 30;
      double off = it % 3 == 0 ? 0.0 : ldexp(lb_urand(1, 2), e + 10 + (int)check_below(30));
      star_layer(&R, 5 + (int)check_below(30), e, off);
      star_layer(&S, 5 + (int)check_below(30), e, off);
      snprintf(w, sizeof w, "random %d: stars (2^%d, offset %g)", it, e, off);
    }
    if (kind != 3 && check_below(2)) { /* scaled by a power of two (exact) */
      int e = check_below(2) ? -150 : 150;
      lb_scale(&R, e), lb_scale(&S, e);
      snprintf(w + strlen(w), sizeof w - strlen(w), " at 2^%d", e);
    }
    check_join(w, &R, &S, 0);
    if (self) {
      snprintf(w + strlen(w), sizeof w - strlen(w), ", R x itself");
      check_join(w, &R, &R, NO_AREAS);
    }
    lb_free(&R), lb_free(&S);
  }
  printf("  random: %lld generated features were invalid and left out\n", (long long)n_invalid);
}

int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
  bad_input();
  progress();
  geos = GEOS_init_r();
  printf("GEOS %s\n", GEOSversion());
  triangle();
  explicit_pairs();
  grids();
  holes();
  big_feature();
  empty();
  random_case();
  GEOS_finish_r(geos);
  printf("%lld overlay areas compared with GEOS's\n", (long long)areas_compared);
  return check_end(ctx);
}

#else
int main(int argc, char **argv) {
  ctx = check_begin(argc, argv);
  gpu = rdx_context_backend(ctx) != RDX_BACKEND_CPU;
  bad_input();
  progress();
  printf("skipped: no GEOS (the comparisons; the refused arguments ran)\n");
  int rc = check_end(ctx);
  return rc ? rc : RDX_SKIP_CODE;
}
#endif
