/*
 * geos_join.c: issue 28's CPU comparison, "GEOS with its STRtree (the join a C or C++ user writes
 * today) and our CPU backend, in one run on the same files". A standalone program, never part of
 * the library or its CMake targets (GEOS is linked by the tests and this program only); built and
 * run by bench/geos_join.sh with cc against a static libraydex.a, -lgeos_c -lm -lpthread.
 *
 * usage: geos_join --r R.rdxp --s S.rdxp [--op lsi,pip] [--reps 3] [--warmup 1]
 *                  [--geos-threads 1] [--threads 0] [--planar] [--header]
 *        geos_join --r R.rdxp --s S.rdxp --op overlay,intersects,contains,within,areas [...]
 *                  [--engines geos,raydex] [--pairs-out DIR]
 *        geos_join --r R.rdxp --s S.rdxp [--dump-wkt-r FILE] [--dump-wkt-s FILE]
 *
 * Both engines read the same layers: R and S are loaded once with rdx_polygons_load, and the GEOS
 * geometries are made from the rings the layer stores (bench_api.h's rdx_polygons_host_csr_of:
 * merged duplicates, no closing repeat), so both join exactly the same coordinates.
 *
 * The joins (each engine's answers must be the same, the check column):
 *  lsi  the sorted unique (r, s) feature pairs whose boundaries share at least one point (our
 *       rdx_join_lsi). GEOS: an STRtree of R's boundaries (GEOSBoundary of each feature's
 *       polygon; the tree keeps their envelopes), each S feature's boundary queried, and every
 *       candidate r tested with GEOSPreparedIntersects(prepared boundary of r, boundary of s);
 *       the pairs are then sorted.
 *  pip  S's kept vertices (as rdx_polygons_host_xy gives them, the points `raydex bench join`
 *       locates) in R: the smallest containing feature, -1 if none, boundary included (our
 *       rdx_join_pip_first). GEOS: an STRtree of R's polygons, each point's candidates sorted
 *       ascending and tested with GEOSPreparedIntersects(prepared polygon, point) until the first
 *       hit (GEOSIntersects counts the boundary, as our rule does).
 *
 * Why GEOS's answers are our rule's even on the maps' invalid features (rings that cross, holes
 * that overlap: Russia's ring at the antimeridian in world-atlas, small holes in
 * countries-land-10m): PIP through a prepared polygon is GEOS's IndexedPointInAreaLocator (3.11),
 * a crossing count over every ring of the geometry, which is the even-odd rule raydex defines,
 * with points on a ring reported as boundary; LSI compares the boundaries' segments alone. So how
 * the rings are grouped into polygons (g_feature) changes the geometries' validity, never an
 * answer; the check column is "same" on every pair of bench/geos_join.sh.
 *
 * The polygon joins (issue 29; our rdx_join_polygons, CPU backend): the sorted unique (r, s) pairs
 * of R's and S's features that satisfy a predicate. GEOS: an STRtree of R's polygons, each S
 * feature's polygon queried, each candidate r tested as a GEOS user writes it:
 *  overlay     the interiors meet: GEOSPreparedIntersects(prepared r, s), then
 *              GEOSRelatePattern(r, s, "T********") (GEOS 3.11 has no prepared relate)
 *  intersects  GEOSPreparedIntersects(prepared r, s)
 *  contains    GEOSPreparedContains(prepared r, s)
 *  within      GEOSPreparedWithin(prepared r, s) (GEOS evaluates it as s.contains(r), exact)
 *  areas       overlay's pairs, each with GEOSArea(GEOSIntersection(r, s)); ours with want_areas;
 *              compared within 1e-9 relative (the row's max_rel_area_diff: the largest relative
 *              difference from GEOS's area, |a - g| / max(|a|, |g|), 0 when both are 0)
 * GEOS may throw on an invalid feature (TopologyException: its C API then returns 2, or NULL):
 * such a pair is "undecided", counted in the GEOS row's geos_undecided column and left out of
 * every comparison (an areas pair whose intersection threw keeps its place, with no area). The
 * check of our rows against the first GEOS row: "same", or "DIFF=N;valid=M" (N pairs differ, M of
 * them between features GEOS finds valid), with ";undecided=K" when GEOS left K pairs undecided;
 * the first differing pairs go to stderr with each engine's answer and GEOSisValidReason of both
 * features. Only OVERLAY, CONTAINS and WITHIN are defined by raydex.h for valid features alone
 * (they read the side of an edge on which its feature lies), so a difference on an invalid
 * feature is expected there; one between valid features is a bug of one engine. For these rows,
 * build_ms is GEOS's tree and prepared geometries, or our join index of both R and S (the join
 * locates the edges of each layer in the other); polygon rows also carry load1, the machine's
 * one-minute load average when the row was written (the machine has 2 cores).
 *
 * --pairs-out DIR writes the answers of the first GEOS and the first raydex row of each polygon
 * join as DIR/<op>.<geos|raydex>.tsv ("r<TAB>s", areas "r<TAB>s<TAB>area" with %.17g; GEOS's
 * undecided pairs in DIR/<op>.geos-undecided.tsv), for bench/postgis_join.sh's comparison.
 * --geos-limit-s N stops a GEOS polygon join that has run N seconds of query (checked before each
 * chunk of S features): its row says "timeout>Ns" with the partial results, is never the
 * reference, and no rep follows it.
 * --engines geos,raydex picks the engines (raydex alone: the rows' vs_geos is 0, check "ref").
 * --dump-wkt-r FILE / --dump-wkt-s FILE write the layer R / S, as the GEOS geometries above, as
 * "id<TAB>WKT" lines (id: the feature's position in the layer; features without rings skipped;
 * coordinates with %.17g, which strtod reads back to the same doubles), then exit: PostGIS loads
 * them, so it joins exactly the geometries GEOS joins.
 *
 * --planar adds a row of ours with the planar rule, which equals the general rule only on a layer
 * whose features do not overlap: world-atlas's countries and countries-land-10m do overlap
 * (world-countries-10m's features 108 and 175 both hold (32.877, -16.884)), so the script does not
 * pass it and such a row reads DIFF there.
 *
 * What a row times (milliseconds; the median of --reps runs after --warmup untimed ones; every run
 * starts cold: GEOS's tree and prepared geometries, our index, are made anew):
 *   input_ms  done once, excluded from total_ms, reported. GEOS: making its geometries from the
 *             loaded layers (polygons; boundaries for lsi; one Point per query for pip, so no
 *             point is made inside the join: GEOS 3.11 has no predicate taking x, y). Ours:
 *             rdx_polygons_load of R and S (GEOS's input_ms does not count that load).
 *   build_ms  GEOS: the STRtree (insert, and the build its first query forces, done here by a
 *             query of its own) and GEOSPrepare of every R feature (per thread: prepared
 *             geometries are not thread-safe); their indexes are made lazily inside the query,
 *             as in any GEOS program. Ours: rdx_polygons_build_index on R.
 *   query_ms  the join itself (lsi: up to the sorted pairs; pip: every point's answer).
 *   total_ms  build_ms + query_ms; vs_geos is the first GEOS row's total_ms over this row's.
 * GEOS runs on --geos-threads threads (1: the plain loop a user writes; more: S's features or the
 * points shared out dynamically, one GEOS context handle and one set of prepared geometries per
 * thread, one shared STRtree, read-only once built). Ours on --threads (0: the context's default,
 * RAYDEX_THREADS as set or one per core; the threads column shows the count).
 * candidates: the feature pairs GEOS's STRtree returned (lsi tests them all, pip until the
 * first hit); -1 for ours.
 *
 * check: the first row of each join is "ref"; every other row's answers are compared with it,
 * "same" or "DIFF" (then the first differences go to stderr and the exit status is 1).
 */
#define _POSIX_C_SOURCE 200809L

#include <geos_c.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_api.h"

#define MAX_LIST 8
#define STRTREE_NODE_CAPACITY 10 /* GEOS's own default (and test_join_geos.c's) */
#define LSI_CHUNK 8              /* S features a GEOS thread takes at once */
#define PIP_CHUNK 4096           /* points a GEOS thread takes at once */

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("geos_join: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}
static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) die("out of memory (%zu x %zu bytes)", n, size);
  return p;
}

/* a growing int64 vector */
typedef struct vec {
  int64_t *v;
  size_t n, cap;
} vec;
static void vpush(vec *a, int64_t x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 64;
    a->v = realloc(a->v, a->cap * sizeof *a->v);
    if (!a->v) die("out of memory (%zu int64s)", a->cap);
  }
  a->v[a->n++] = x;
}

/* GEOSSTRtree_query_r's callback: the items are feature (or ring) ids, collected into a vec */
static void cand_cb(void *item, void *user) { vpush((vec *)user, (int64_t)(intptr_t)item); }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* ---- options ---- */

enum { OP_LSI = 0, OP_PIP, OP_OVERLAY, OP_INTERSECTS, OP_CONTAINS, OP_WITHIN, OP_AREAS, N_OPS };
static const char *const op_names[N_OPS] = {"lsi", "pip", "overlay", "intersects", "contains", "within", "areas"};
static int is_poly_op(int op) { return op >= OP_OVERLAY; }

typedef struct cfg {
  const char *r_path, *s_path;
  int do_op[N_OPS], poly_ops;  /* poly_ops: the polygon joins were asked for (their own CSV) */
  int geos, ours;              /* --engines */
  const char *pairs_out, *dump_r, *dump_s;
  double geos_limit_s;         /* --geos-limit-s: a GEOS polygon join stops taking S features after
                                  this many seconds of query (0: no limit) */
  int reps, warmup, planar, header;
  int geos_threads[MAX_LIST], n_geos;
  int threads[MAX_LIST], n_threads;
} cfg;

static const char usage[] =
    "usage: geos_join --r R.rdxp --s S.rdxp [--op lsi,pip] [--reps 3] [--warmup 1]\n"
    "                 [--geos-threads 1[,2]] [--threads 0[,1]] [--planar] [--header]\n"
    "  lsi: (r, s) feature pairs whose boundaries meet; pip: S's vertices located in R.\n"
    "  --threads 0 is the CPU backend's default (RAYDEX_THREADS or one per core).\n"
    "  --planar adds a row of ours with the planar PIP rule (R must not overlap itself).\n"
    "  polygon joins (their own CSV columns, not mixed with lsi, pip in one run):\n"
    "  --op overlay,intersects,contains,within,areas [--engines geos,raydex] [--pairs-out DIR]\n"
    "  [--geos-limit-s N]: a GEOS polygon join stops after N s of query (row check \"timeout>Ns\")\n"
    "  --dump-wkt-r FILE, --dump-wkt-s FILE: the layer as id<TAB>WKT lines, then exit.\n";

/* a comma-separated list of integers in [lo, hi], at most cap of them */
static int int_list(const char *opt, const char *s, int lo, int hi, int *out, int cap) {
  int n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < lo || v > hi || n == cap || (*end && *end != ','))
      die("%s \"%s\": want %s integers in %d..%d", opt, s, cap > 1 ? "comma-separated" : "one of the", lo, hi);
    out[n++] = (int)v;
    if (!*end) break;
    p = end + 1;
  }
  return n;
}

static void parse(int argc, char **argv, cfg *c) {
  memset(c, 0, sizeof *c);
  c->do_op[OP_LSI] = c->do_op[OP_PIP] = 1;
  c->geos = c->ours = 1;
  c->reps = 3, c->warmup = 1;
  c->geos_threads[0] = 1, c->n_geos = 1;
  c->threads[0] = 0, c->n_threads = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--planar")) {
      c->planar = 1;
      continue;
    }
    if (!strcmp(a, "--header")) {
      c->header = 1;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      exit(0);
    }
    if (i + 1 >= argc) die("%s: unknown, or needs a value\n%s", a, usage);
    const char *v = argv[++i];
    if (!strcmp(a, "--r")) c->r_path = v;
    else if (!strcmp(a, "--s")) c->s_path = v;
    else if (!strcmp(a, "--op")) {
      int n_ops = 0, n_poly = 0;
      memset(c->do_op, 0, sizeof c->do_op);
      for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        int op = 0;
        while (op < N_OPS && !(strlen(op_names[op]) == n && !strncmp(p, op_names[op], n))) op++;
        if (op == N_OPS) die("--op \"%s\": want a list of lsi, pip, overlay, intersects, contains, within, areas", v);
        c->do_op[op] = 1, n_ops++, n_poly += is_poly_op(op);
        p += n + (p[n] == ',');
      }
      if (!n_ops) die("--op \"%s\": empty", v);
      if (n_poly && n_poly != n_ops) die("--op \"%s\": lsi and pip do not mix with the polygon joins (other columns)", v);
      c->poly_ops = n_poly > 0;
    } else if (!strcmp(a, "--engines")) {
      c->geos = strstr(v, "geos") != NULL, c->ours = strstr(v, "raydex") != NULL;
      if (!c->geos && !c->ours) die("--engines \"%s\": want geos, raydex or geos,raydex", v);
    } else if (!strcmp(a, "--pairs-out")) c->pairs_out = v;
    else if (!strcmp(a, "--geos-limit-s")) {
      int lim = 0;
      int_list(a, v, 0, 86400, &lim, 1);
      c->geos_limit_s = lim;
    }
    else if (!strcmp(a, "--dump-wkt-r")) c->dump_r = v;
    else if (!strcmp(a, "--dump-wkt-s")) c->dump_s = v; else if (!strcmp(a, "--reps")) int_list(a, v, 1, 99, &c->reps, 1);
    else if (!strcmp(a, "--warmup")) int_list(a, v, 0, 9, &c->warmup, 1);
    else if (!strcmp(a, "--geos-threads")) c->n_geos = int_list(a, v, 1, 256, c->geos_threads, MAX_LIST);
    else if (!strcmp(a, "--threads")) c->n_threads = int_list(a, v, 0, 4096, c->threads, MAX_LIST);
    else die("unknown option %s\n%s", a, usage);
  }
  if (!c->r_path || !c->s_path) die("--r and --s are required\n%s", usage);
}

/* ---- our layers ---- */

static rdx_context *ctx_make(int threads) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  o.n_threads = threads; /* 0: RAYDEX_THREADS as set, else one per core */
  rdx_context *ctx = NULL;
  rdx_status st = rdx_context_create(&o, &ctx);
  if (st != RDX_OK) die("rdx_context_create: %s", ctx ? rdx_context_message(ctx) : rdx_status_name(st));
  return ctx;
}

static void must(rdx_context *ctx, rdx_status st, const char *what) {
  if (st != RDX_OK) die("%s: %s (%s)", what, rdx_context_message(ctx), rdx_status_name(st));
}

static rdx_polygons *load(rdx_context *ctx, const char *path) {
  rdx_polygons *p = NULL;
  must(ctx, rdx_polygons_load(ctx, path, NULL, &p), path);
  return p;
}

/* ---- GEOS geometries of a layer ---- */

/* GEOS's messages: the first few go to stderr (an invalid map makes thousands in a polygon join) */
static atomic_llong n_geos_errors;
static void geos_error(const char *message, void *user) {
  (void)user;
  const long long k = atomic_fetch_add(&n_geos_errors, 1);
  if (k < 20) fprintf(stderr, "geos_join: GEOS: %s\n", message);
  else if (k == 20) fprintf(stderr, "geos_join: GEOS: (further messages not shown)\n");
}

static GEOSContextHandle_t geos_handle(void) {
  GEOSContextHandle_t h = GEOS_init_r();
  if (!h) die("GEOS_init_r failed");
  GEOSContext_setErrorMessageHandler_r(h, geos_error, NULL);
  return h;
}

/* A layer as GEOS geometries, feature by feature (feature f is poly[f], boundary bound[f]). */
typedef struct glayer {
  int64_t n;
  GEOSGeometry **poly;   /* Polygon, MultiPolygon, or an empty Polygon for a feature without rings */
  GEOSGeometry **bound;  /* GEOSBoundary(poly[f]); NULL until made (lsi only); NULL for empty */
  unsigned char *empty;  /* the feature has no ring: never in a tree, never queried */
  int64_t n_polygons, n_holes, n_unowned;
  double poly_ms, bound_ms;
} glayer;

/* Twice the signed area of ring [v0, v1) (a fan from its first vertex, in coordinates relative to
 * it): positive for the layer's shells (counter-clockwise), negative for its holes. Rounded, so a
 * sliver may come out with the wrong sign; that only moves a ring to another polygon of the same
 * feature, which changes no answer (the file's header says why). */
static double ring_area2(const double *xy, uint64_t v0, uint64_t v1) {
  const double x0 = xy[2 * v0], y0 = xy[2 * v0 + 1];
  double s = 0;
  for (uint64_t v = v0 + 1; v + 1 < v1; v++)
    s += (xy[2 * v] - x0) * (xy[2 * v + 3] - y0) - (xy[2 * v + 2] - x0) * (xy[2 * v + 1] - y0);
  return s;
}

/* Crossing parity of (px, py) against ring [v0, v1) (rounded; for grouping only). */
static int ring_contains(const double *xy, uint64_t v0, uint64_t v1, double px, double py) {
  int in = 0;
  for (uint64_t v = v0, w = v1 - 1; v < v1; w = v++) {
    const double xi = xy[2 * v], yi = xy[2 * v + 1], xj = xy[2 * w], yj = xy[2 * w + 1];
    if ((yi > py) != (yj > py) && px < (xj - xi) * (py - yi) / (yj - yi) + xi) in = !in;
  }
  return in;
}

/* Scratch for one feature's grouping, sized for the layer's largest feature and ring. */
typedef struct gscratch {
  double *area, *box;        /* per ring of the feature: 2 x signed area; lo x, lo y, hi x, hi y */
  int64_t *owner;            /* per ring: the shell (local ring index) a hole belongs to; a shell
                                or an unowned hole owns itself */
  int64_t *start, *list;     /* per ring: its holes' run in list, counting sort by owner */
  GEOSGeometry **ring;       /* per ring: its LinearRing, until a polygon takes it */
  GEOSGeometry **polys, **holes;
  vec cand;                  /* a hole's candidate shells */
  double *buf;               /* one ring, closed: 2 x (vertices + 1) */
} gscratch;

static GEOSGeometry *g_ring(GEOSContextHandle_t h, const rdx_polygons_host_csr *L, int64_t r, double *buf, int64_t f) {
  const uint64_t v0 = L->ring_off[r], v1 = L->ring_off[r + 1];
  const size_t n = (size_t)(v1 - v0);
  memcpy(buf, L->xy + 2 * v0, n * 2 * sizeof *buf);
  buf[2 * n] = buf[0], buf[2 * n + 1] = buf[1]; /* GEOS wants the closing repeat the layer drops */
  GEOSCoordSequence *cs = GEOSCoordSeq_copyFromBuffer_r(h, buf, (unsigned)(n + 1), 0, 0);
  GEOSGeometry *g = cs ? GEOSGeom_createLinearRing_r(h, cs) : NULL;
  if (!g) die("GEOS refused feature %lld ring %lld (%zu vertices)", (long long)f, (long long)(r - (int64_t)L->feat_off[f]), n);
  return g;
}

static const double *g_area; /* the feature's ring areas, for by_area (one thread makes geometries) */
static int by_area(const void *a, const void *b) {
  const double x = g_area[*(const int64_t *)a], y = g_area[*(const int64_t *)b];
  return (x > y) - (x < y);
}

/* The shell that holds local hole i, or -1: among the shells whose box holds the hole's box (an
 * STRtree of the shells' rings gives those whose box meets it), the smallest by area whose
 * crossing parity holds the hole's first vertex; the largest candidate is taken untested when no
 * smaller one holds it, so a lake in a continent costs no test against the continent's ring. */
static int64_t g_owner(GEOSContextHandle_t h, const rdx_polygons_host_csr *L, int64_t r0, int64_t i, GEOSSTRtree *tree,
                       gscratch *sc) {
  const double *hb = sc->box + 4 * i;
  sc->cand.n = 0;
  GEOSSTRtree_query_r(h, tree, sc->ring[i], cand_cb, &sc->cand);
  size_t k = 0;
  for (size_t c = 0; c < sc->cand.n; c++) {
    const double *sb = sc->box + 4 * sc->cand.v[c];
    if (sb[0] <= hb[0] && sb[1] <= hb[1] && sb[2] >= hb[2] && sb[3] >= hb[3]) sc->cand.v[k++] = sc->cand.v[c];
  }
  if (k == 0) return -1;
  g_area = sc->area;
  qsort(sc->cand.v, k, sizeof *sc->cand.v, by_area);
  const uint64_t hv = L->ring_off[r0 + i];
  for (size_t c = 0; c + 1 < k; c++) {
    const int64_t j = sc->cand.v[c];
    if (ring_contains(L->xy, L->ring_off[r0 + j], L->ring_off[r0 + j + 1], L->xy[2 * hv], L->xy[2 * hv + 1])) return j;
  }
  return sc->cand.v[k - 1];
}

/* Feature f as a GEOS Polygon or MultiPolygon: its shells (counter-clockwise rings), each with the
 * holes (clockwise rings) it holds (g_owner); a hole in no shell's box (an invalid feature)
 * becomes a polygon of its own. */
static GEOSGeometry *g_feature(GEOSContextHandle_t h, const rdx_polygons_host_csr *L, int64_t f, gscratch *sc,
                               glayer *G) {
  const int64_t r0 = (int64_t)L->feat_off[f], nr = (int64_t)L->feat_off[f + 1] - r0;
  if (nr == 0) return GEOSGeom_createEmptyPolygon_r(h);
  const double *xy = L->xy;
  int64_t n_shells = 0, last_shell = -1;
  for (int64_t i = 0; i < nr; i++) {
    const uint64_t v0 = L->ring_off[r0 + i], v1 = L->ring_off[r0 + i + 1];
    double *b = sc->box + 4 * i;
    b[0] = b[2] = xy[2 * v0], b[1] = b[3] = xy[2 * v0 + 1];
    for (uint64_t v = v0 + 1; v < v1; v++) {
      const double x = xy[2 * v], y = xy[2 * v + 1];
      b[0] = x < b[0] ? x : b[0], b[2] = x > b[2] ? x : b[2];
      b[1] = y < b[1] ? y : b[1], b[3] = y > b[3] ? y : b[3];
    }
    sc->area[i] = ring_area2(xy, v0, v1);
    sc->owner[i] = i;
    sc->ring[i] = g_ring(h, L, r0 + i, sc->buf, f);
    if (sc->area[i] >= 0) n_shells++, last_shell = i;
  }
  if (n_shells < nr) {
    GEOSSTRtree *tree = NULL;
    if (n_shells > 1) {
      tree = GEOSSTRtree_create_r(h, STRTREE_NODE_CAPACITY);
      if (!tree) die("GEOSSTRtree_create failed");
      for (int64_t i = 0; i < nr; i++)
        if (sc->area[i] >= 0) GEOSSTRtree_insert_r(h, tree, sc->ring[i], (void *)(intptr_t)i);
    }
    for (int64_t i = 0; i < nr; i++) {
      if (sc->area[i] >= 0) continue;
      G->n_holes++;
      int64_t best = -1;
      if (tree) best = g_owner(h, L, r0, i, tree, sc);
      else if (n_shells == 1) {
        const double *hb = sc->box + 4 * i, *sb = sc->box + 4 * last_shell;
        if (sb[0] <= hb[0] && sb[1] <= hb[1] && sb[2] >= hb[2] && sb[3] >= hb[3]) best = last_shell;
      }
      if (best < 0) G->n_unowned++;
      else sc->owner[i] = best;
    }
    if (tree) GEOSSTRtree_destroy_r(h, tree);
  }
  /* holes grouped by owner (a counting sort), then one polygon per ring that owns itself */
  for (int64_t i = 0; i <= nr; i++) sc->start[i] = 0;
  for (int64_t i = 0; i < nr; i++)
    if (sc->owner[i] != i) sc->start[sc->owner[i] + 1]++;
  for (int64_t i = 0; i < nr; i++) sc->start[i + 1] += sc->start[i];
  for (int64_t i = 0; i < nr; i++)
    if (sc->owner[i] != i) sc->list[sc->start[sc->owner[i]]++] = i;
  /* start[j] is now the end of j's run; its beginning is start[j - 1] (0 for j = 0) */
  int64_t np = 0;
  for (int64_t j = 0; j < nr; j++) {
    if (sc->owner[j] != j) continue;
    const int64_t b = j ? sc->start[j - 1] : 0, e = sc->start[j];
    for (int64_t k = b; k < e; k++) sc->holes[k - b] = sc->ring[sc->list[k]];
    GEOSGeometry *p = GEOSGeom_createPolygon_r(h, sc->ring[j], sc->holes, (unsigned)(e - b));
    if (!p) die("GEOS refused a polygon of feature %lld", (long long)f);
    sc->polys[np++] = p;
  }
  G->n_polygons += np;
  if (np == 1) return sc->polys[0];
  GEOSGeometry *g = GEOSGeom_createCollection_r(h, GEOS_MULTIPOLYGON, sc->polys, (unsigned)np);
  if (!g) die("GEOS refused the MultiPolygon of feature %lld", (long long)f);
  return g;
}

static void g_make(GEOSContextHandle_t h, const rdx_polygons *layer, glayer *G) {
  rdx_polygons_host_csr L;
  rdx_polygons_host_csr_of(layer, &L);
  memset(G, 0, sizeof *G);
  G->n = L.n_features;
  G->poly = xcalloc((size_t)L.n_features, sizeof *G->poly);
  G->bound = xcalloc((size_t)L.n_features, sizeof *G->bound);
  G->empty = xcalloc((size_t)L.n_features, 1);
  int64_t max_rings = 0, max_ring = 0;
  for (int64_t f = 0; f < L.n_features; f++) {
    const int64_t k = (int64_t)(L.feat_off[f + 1] - L.feat_off[f]);
    max_rings = k > max_rings ? k : max_rings;
  }
  for (int64_t r = 0; r < L.n_rings; r++) {
    const int64_t k = (int64_t)(L.ring_off[r + 1] - L.ring_off[r]);
    max_ring = k > max_ring ? k : max_ring;
  }
  gscratch sc;
  const size_t m = (size_t)max_rings + 1;
  sc.area = xmalloc(m * sizeof *sc.area), sc.box = xmalloc(4 * m * sizeof *sc.box);
  sc.owner = xmalloc(m * sizeof *sc.owner), sc.start = xmalloc((m + 1) * sizeof *sc.start);
  sc.list = xmalloc(m * sizeof *sc.list);
  sc.polys = xmalloc(m * sizeof *sc.polys), sc.holes = xmalloc(m * sizeof *sc.holes);
  sc.ring = xmalloc(m * sizeof *sc.ring);
  memset(&sc.cand, 0, sizeof sc.cand);
  sc.buf = xmalloc(2 * ((size_t)max_ring + 1) * sizeof *sc.buf);
  const double t0 = rdx_now_ms();
  for (int64_t f = 0; f < L.n_features; f++) {
    G->empty[f] = L.feat_off[f + 1] == L.feat_off[f];
    G->poly[f] = g_feature(h, &L, f, &sc, G);
  }
  G->poly_ms = rdx_now_ms() - t0;
  free(sc.area), free(sc.box), free(sc.owner), free(sc.start), free(sc.list), free(sc.polys), free(sc.holes), free(sc.buf);
  free(sc.ring), free(sc.cand.v);
}

/* The boundaries, as a GEOS user gets them: GEOSBoundary of each feature's polygon. */
static void g_bounds(GEOSContextHandle_t h, glayer *G) {
  const double t0 = rdx_now_ms();
  for (int64_t f = 0; f < G->n; f++) {
    if (G->empty[f] || G->bound[f]) continue;
    G->bound[f] = GEOSBoundary_r(h, G->poly[f]);
    if (!G->bound[f]) die("GEOSBoundary of feature %lld failed", (long long)f);
  }
  G->bound_ms += rdx_now_ms() - t0;
}

static void g_free(GEOSContextHandle_t h, glayer *G) {
  for (int64_t f = 0; f < G->n; f++) {
    GEOSGeom_destroy_r(h, G->poly[f]);
    if (G->bound[f]) GEOSGeom_destroy_r(h, G->bound[f]);
  }
  free(G->poly), free(G->bound), free(G->empty);
  memset(G, 0, sizeof *G);
}

/* ---- the GEOS joins ---- */


typedef struct gjob {
  int op;
  GEOSGeometry *const *items;  /* R's geometries in the tree (lsi: boundaries; else polygons) */
  const unsigned char *empty;  /* R's features without rings */
  int64_t n_items;
  GEOSGeometry *const *query;  /* lsi: S's boundaries, polygon joins: its polygons (NULL: an
                                  empty feature); pip: the points */
  int64_t n_query, chunk, stride; /* stride: 3 for areas (r, s, the area's bits), else 2 */
  GEOSSTRtree *tree;
  atomic_llong next;           /* the next query a thread takes */
  int64_t *first;              /* pip: the answers */
  double start_ms, limit_ms;   /* polygon joins: stop taking queries after limit_ms (0: never) */
  atomic_int timed_out;
} gjob;

typedef struct gthread {
  gjob *job;
  GEOSContextHandle_t h;
  const GEOSPreparedGeometry **prep; /* this thread's, per R feature (NULL for empty ones) */
  vec cand, pairs, undecided;
  int64_t n_cand, n_area_undecided;
  pthread_t tid;
} gthread;

static void noop_cb(void *item, void *user) { (void)item, (void)user; }

static void *g_work(void *arg) {
  gthread *t = arg;
  gjob *j = t->job;
  for (;;) {
    const int64_t b = (int64_t)atomic_fetch_add(&j->next, (long long)j->chunk);
    if (b >= j->n_query) break;
    if (j->limit_ms > 0 && rdx_now_ms() - j->start_ms > j->limit_ms) {
      atomic_store(&j->timed_out, 1);
      break;
    }
    const int64_t e = b + j->chunk < j->n_query ? b + j->chunk : j->n_query;
    for (int64_t i = b; i < e; i++) {
      GEOSGeometry *q = j->query[i];
      if (!q) continue; /* lsi: an S feature without rings meets nothing */
      t->cand.n = 0;
      GEOSSTRtree_query_r(t->h, j->tree, q, cand_cb, &t->cand);
      t->n_cand += (int64_t)t->cand.n;
      if (j->op == OP_PIP) {
        /* the smallest containing feature: candidates ascending, the first hit */
        if (t->cand.n > 1) qsort(t->cand.v, t->cand.n, sizeof *t->cand.v, cmp_i64);
        int64_t ans = -1;
        for (size_t k = 0; k < t->cand.n && ans < 0; k++) {
          const char rc = GEOSPreparedIntersects_r(t->h, t->prep[t->cand.v[k]], q);
          if (rc == 2) die("GEOSPreparedIntersects failed (point %lld, feature %lld)", (long long)i, (long long)t->cand.v[k]);
          if (rc == 1) ans = t->cand.v[k];
        }
        j->first[i] = ans;
      } else if (j->op == OP_LSI) {
        for (size_t k = 0; k < t->cand.n; k++) {
          const char rc = GEOSPreparedIntersects_r(t->h, t->prep[t->cand.v[k]], q);
          if (rc == 2) die("GEOSPreparedIntersects failed (R %lld, S %lld)", (long long)t->cand.v[k], (long long)i);
          if (rc == 1) vpush(&t->pairs, t->cand.v[k]), vpush(&t->pairs, i);
        }
      } else {
        for (size_t k = 0; k < t->cand.n; k++) {
          const int64_t r = t->cand.v[k];
          const GEOSPreparedGeometry *pr = t->prep[r];
          char rc;
          switch (j->op) {
            case OP_INTERSECTS: rc = GEOSPreparedIntersects_r(t->h, pr, q); break;
            case OP_CONTAINS: rc = GEOSPreparedContains_r(t->h, pr, q); break;
            case OP_WITHIN: rc = GEOSPreparedWithin_r(t->h, pr, q); break;
            default: /* overlay, areas: the interiors meet */
              rc = GEOSPreparedIntersects_r(t->h, pr, q);
              if (rc == 1) rc = GEOSRelatePattern_r(t->h, j->items[r], q, "T********");
          }
          if (rc == 2) {
            vpush(&t->undecided, r), vpush(&t->undecided, i);
            continue;
          }
          if (rc != 1) continue;
          vpush(&t->pairs, r), vpush(&t->pairs, i);
          if (j->op == OP_AREAS) {
            double a = NAN;
            GEOSGeometry *x = GEOSIntersection_r(t->h, j->items[r], q);
            if (!x || !GEOSArea_r(t->h, x, &a)) a = NAN, t->n_area_undecided++;
            if (x) GEOSGeom_destroy_r(t->h, x);
            int64_t bits;
            memcpy(&bits, &a, sizeof bits);
            vpush(&t->pairs, bits);
          }
        }
      }
    }
  }
  return NULL;
}

/* One cold GEOS join on T threads (handles made by the caller, one per thread). Answers: pip, the
 * first feature per point; lsi, the sorted pairs flattened. */
typedef struct timing {
  double build_ms, query_ms;
  int64_t candidates, undecided; /* undecided: GEOS's exceptions (pairs, and areas that threw) */
  int timed_out;                 /* GEOS stopped at --geos-limit-s: answers partial */
} timing;

static int cmp_triple(const void *a, const void *b) { return cmp_pair(a, b); }

/* polygon joins: the pairs (stride 2, areas stride 3) sorted; GEOS's undecided pairs into
 * *undecided, sorted */
static timing geos_join(int op, const glayer *R, GEOSGeometry *const *query, int64_t n_query, int T,
                        GEOSContextHandle_t *handles, vec *answers, vec *undecided, double limit_s) {
  timing tm = {0, 0, 0, 0, 0};
  gjob j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.items = op == OP_LSI ? R->bound : R->poly;
  j.stride = op == OP_AREAS ? 3 : 2;
  j.empty = R->empty;
  j.n_items = R->n;
  j.query = query;
  j.n_query = n_query;
  j.chunk = op == OP_PIP ? PIP_CHUNK : LSI_CHUNK;
  atomic_init(&j.next, 0);
  answers->n = 0;
  if (undecided) undecided->n = 0;
  if (op == OP_PIP) {
    while (answers->cap < (size_t)n_query) answers->cap = answers->cap ? 2 * answers->cap : 64;
    answers->v = realloc(answers->v, answers->cap * sizeof *answers->v);
    if (!answers->v && n_query) die("out of memory for %lld answers", (long long)n_query);
    answers->n = (size_t)n_query;
    j.first = answers->v;
    for (int64_t i = 0; i < n_query; i++) j.first[i] = -1;
  }
  gthread *th = xcalloc((size_t)T, sizeof *th);

  const double t0 = rdx_now_ms();
  j.tree = GEOSSTRtree_create_r(handles[0], STRTREE_NODE_CAPACITY);
  if (!j.tree) die("GEOSSTRtree_create failed");
  GEOSGeometry *any = NULL;
  for (int64_t r = 0; r < R->n; r++)
    if (!R->empty[r]) GEOSSTRtree_insert_r(handles[0], j.tree, j.items[r], (void *)(intptr_t)r), any = j.items[r];
  /* GEOS builds the tree at its first query; one here, so that the threads share a built tree
   * (a built STRtree is only read) and the build is timed as the build */
  if (any) GEOSSTRtree_query_r(handles[0], j.tree, any, noop_cb, NULL);
  for (int k = 0; k < T; k++) {
    th[k].job = &j;
    th[k].h = handles[k];
    th[k].prep = xcalloc((size_t)R->n, sizeof *th[k].prep);
    for (int64_t r = 0; r < R->n; r++)
      if (!R->empty[r]) {
        th[k].prep[r] = GEOSPrepare_r(handles[k], j.items[r]);
        if (!th[k].prep[r]) die("GEOSPrepare of feature %lld failed", (long long)r);
      }
  }
  const double t1 = rdx_now_ms();
  j.start_ms = t1, j.limit_ms = 1e3 * limit_s;
  atomic_init(&j.timed_out, 0);
  if (T == 1) g_work(&th[0]);
  else {
    for (int k = 0; k < T; k++)
      if (pthread_create(&th[k].tid, NULL, g_work, &th[k])) die("pthread_create failed");
    for (int k = 0; k < T; k++) pthread_join(th[k].tid, NULL);
  }
  if (op != OP_PIP) {
    for (int k = 0; k < T; k++)
      for (size_t i = 0; i < th[k].pairs.n; i++) vpush(answers, th[k].pairs.v[i]);
    qsort(answers->v, answers->n / (size_t)j.stride, (size_t)j.stride * sizeof *answers->v,
          j.stride == 3 ? cmp_triple : cmp_pair);
  }
  const double t2 = rdx_now_ms();
  tm.build_ms = t1 - t0, tm.query_ms = t2 - t1;
  tm.timed_out = atomic_load(&j.timed_out);

  for (int k = 0; k < T; k++) {
    tm.candidates += th[k].n_cand;
    tm.undecided += (int64_t)th[k].undecided.n / 2 + th[k].n_area_undecided;
    if (undecided)
      for (size_t i = 0; i < th[k].undecided.n; i++) vpush(undecided, th[k].undecided.v[i]);
    for (int64_t r = 0; r < R->n; r++)
      if (th[k].prep[r]) GEOSPreparedGeom_destroy_r(handles[k], th[k].prep[r]);
    free(th[k].prep), free(th[k].cand.v), free(th[k].pairs.v), free(th[k].undecided.v);
  }
  if (undecided) qsort(undecided->v, undecided->n / 2, 2 * sizeof *undecided->v, cmp_pair);
  GEOSSTRtree_destroy_r(handles[0], j.tree);
  free(th);
  return tm;
}

/* ---- our joins ---- */

/* One cold join of ours: R's index built anew, then the join. */
static timing ours_join(int op, rdx_context *ctx, rdx_polygons *r, rdx_polygons *s, const double *pts, int64_t n_pts,
                        int planar, vec *answers) {
  timing tm = {0, 0, -1, 0, 0};
  rdx_join_options jo = RDX_JOIN_OPTIONS_INIT;
  jo.planar = planar;
  const double t0 = rdx_now_ms();
  must(ctx, rdx_polygons_build_index(ctx, r, &jo), "rdx_polygons_build_index");
  /* the polygon joins locate each layer's edges in the other: S's index too */
  if (is_poly_op(op)) must(ctx, rdx_polygons_build_index(ctx, s, &jo), "rdx_polygons_build_index");
  const double t1 = rdx_now_ms();
  if (is_poly_op(op)) {
    static const rdx_join_predicate pred[N_OPS] = {0, 0, RDX_JOIN_OVERLAY, RDX_JOIN_INTERSECTS, RDX_JOIN_CONTAINS,
                                                   RDX_JOIN_WITHIN, RDX_JOIN_OVERLAY};
    rdx_join_pairs_result *res = NULL;
    must(ctx, rdx_join_polygons(ctx, r, s, pred[op], &jo, op == OP_AREAS, &res), "rdx_join_polygons");
    tm.query_ms = rdx_now_ms() - t1;
    answers->n = 0;
    for (int64_t i = 0; i < res->n_pairs; i++) {
      vpush(answers, res->pairs[2 * i]), vpush(answers, res->pairs[2 * i + 1]);
      if (op == OP_AREAS) {
        int64_t bits;
        memcpy(&bits, &res->areas[i], sizeof bits);
        vpush(answers, bits);
      }
    }
    rdx_join_pairs_free(ctx, res);
  } else if (op == OP_PIP) {
    while (answers->cap < (size_t)n_pts) answers->cap = answers->cap ? 2 * answers->cap : 64;
    answers->v = realloc(answers->v, answers->cap * sizeof *answers->v);
    if (!answers->v && n_pts) die("out of memory for %lld answers", (long long)n_pts);
    answers->n = (size_t)n_pts;
    must(ctx,
         rdx_join_pip_first(ctx, r, rdx_host_matrix(pts, n_pts, 2, RDX_F64), &jo,
                            rdx_host_array(answers->v, n_pts, RDX_I64)),
         "rdx_join_pip_first");
    tm.query_ms = rdx_now_ms() - t1;
  } else {
    rdx_join_lsi_result *res = NULL;
    must(ctx, rdx_join_lsi(ctx, r, s, &jo, false, &res), "rdx_join_lsi");
    tm.query_ms = rdx_now_ms() - t1;
    answers->n = 0;
    for (int64_t i = 0; i < 2 * res->n_pairs; i++) vpush(answers, res->pairs[i]);
    rdx_join_lsi_free(ctx, res);
  }
  tm.build_ms = t1 - t0;
  return tm;
}

/* ---- rows ---- */

typedef struct row_ctx {
  const cfg *c;
  char date[16], device[160];
  int64_t r_features, r_edges, s_features, s_edges;
  vec ref;             /* the first row's answers of the join being run */
  int have_ref;
  double ref_total;
  int diffs;
  /* polygon joins */
  vec ref_undecided;   /* the pairs the reference (GEOS) row could not decide */
  int ref_is_geos;
  GEOSContextHandle_t h;
  const glayer *R, *S;
  signed char *valid_r, *valid_s; /* GEOSisValid per feature: 0 not yet asked, 1 valid, 2 not */
  char check[96];
} row_ctx;

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* Compare with the reference, printing the first differences to stderr. */
static const char *check(row_ctx *rc, int op, const vec *now, const char *engine, const double *pts) {
  if (!rc->have_ref) {
    rc->ref.n = 0;
    for (size_t i = 0; i < now->n; i++) vpush(&rc->ref, now->v[i]);
    rc->have_ref = 1;
    return "ref";
  }
  const vec *ref = &rc->ref;
  if (ref->n == now->n && (ref->n == 0 || !memcmp(ref->v, now->v, ref->n * sizeof *ref->v))) return "same";
  rc->diffs++;
  int shown = 0;
  if (op == OP_PIP) {
    for (size_t i = 0; i < now->n && i < ref->n && shown < 8; i++)
      if (now->v[i] != ref->v[i])
        fprintf(stderr, "geos_join: DIFF %s pip point %zu (%a, %a): ref %lld, this %lld\n", engine, i, pts[2 * i],
                pts[2 * i + 1], (long long)ref->v[i], (long long)now->v[i]),
            shown++;
  } else {
    size_t a = 0, b = 0;
    while ((a < ref->n || b < now->n) && shown < 8) {
      int cmp = a >= ref->n ? 1 : b >= now->n ? -1 : cmp_pair(ref->v + a, now->v + b);
      if (cmp == 0) a += 2, b += 2;
      else if (cmp < 0) {
        fprintf(stderr, "geos_join: DIFF %s lsi: pair (%lld, %lld) of ref missing\n", engine, (long long)ref->v[a],
                (long long)ref->v[a + 1]);
        a += 2, shown++;
      } else {
        fprintf(stderr, "geos_join: DIFF %s lsi: extra pair (%lld, %lld)\n", engine, (long long)now->v[b],
                (long long)now->v[b + 1]);
        b += 2, shown++;
      }
    }
  }
  return "DIFF";
}

static void header(void) {
  printf("date,device,engine,threads,op,r,s,r_features,r_edges,s_features,s_edges,points,input_ms,build_ms,"
         "query_ms,total_ms,rate_per_s,results,candidates,vs_geos,check\n");
}

static void row(row_ctx *rc, const char *engine, int threads, int op, int64_t n_pts, double input_ms, double *build,
                double *query, int64_t candidates, const vec *ans, const double *pts) {
  const int reps = rc->c->reps;
  double total[99];
  for (int i = 0; i < reps; i++) total[i] = build[i] + query[i];
  const double b = median(build, reps), q = median(query, reps), t = median(total, reps);
  int64_t results = 0;
  if (op == OP_LSI) results = (int64_t)ans->n / 2;
  else
    for (size_t i = 0; i < ans->n; i++) results += ans->v[i] >= 0;
  if (!rc->have_ref) rc->ref_total = t;
  const char *ck = check(rc, op, ans, engine, pts);
  const double work = op == OP_PIP ? (double)n_pts : (double)rc->s_edges;
  printf("%s,%s,%s,%d,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%.1f,%.3f,%.3f,%.3f,%.4g,%lld,%lld,%.2f,%s\n", rc->date,
         rc->device, engine, threads, op_names[op], base_name(rc->c->r_path), base_name(rc->c->s_path),
         (long long)rc->r_features, (long long)rc->r_edges, (long long)rc->s_features, (long long)rc->s_edges,
         (long long)(op == OP_PIP ? n_pts : 0), input_ms, b, q, t, q > 0 ? work / (q / 1e3) : 0.0, (long long)results,
         (long long)candidates, t > 0 ? rc->ref_total / t : 0.0, ck);
  fflush(stdout);
}

/* ---- rows of the polygon joins ---- */

static int feature_valid(row_ctx *rc, int side, int64_t f) {
  signed char *v = side ? rc->valid_s : rc->valid_r;
  const glayer *G = side ? rc->S : rc->R;
  if (!v[f]) v[f] = GEOSisValid_r(rc->h, G->poly[f]) == 1 ? 1 : 2;
  return v[f] == 1;
}

static void print_validity(row_ctx *rc, int side, int64_t f) {
  const glayer *G = side ? rc->S : rc->R;
  char *why = GEOSisValidReason_r(rc->h, G->poly[f]);
  fprintf(stderr, "geos_join:   %s feature %lld: %s\n", side ? "S" : "R", (long long)f, why ? why : "(GEOSisValidReason failed)");
  if (why) GEOSFree_r(rc->h, why);
}

static int in_pairs(const vec *v, const int64_t *pair) {
  return v->n && bsearch(pair, v->v, v->n / 2, 2 * sizeof *v->v, cmp_pair) != NULL;
}

/* A polygon join's answers against the reference row's: rc->check gets the verdict (the file's
 * header says its form), *max_rel the largest relative difference of the areas; the first
 * differences go to stderr. */
static const char *check_poly(row_ctx *rc, int op, const vec *now, const vec *undecided, const char *engine,
                              double *max_rel) {
  const size_t st = op == OP_AREAS ? 3 : 2;
  *max_rel = 0;
  if (!rc->have_ref) {
    rc->ref.n = rc->ref_undecided.n = 0;
    for (size_t i = 0; i < now->n; i++) vpush(&rc->ref, now->v[i]);
    if (undecided)
      for (size_t i = 0; i < undecided->n; i++) vpush(&rc->ref_undecided, undecided->v[i]);
    rc->have_ref = 1;
    if (undecided && undecided->n) snprintf(rc->check, sizeof rc->check, "ref;undecided=%zu", undecided->n / 2);
    else snprintf(rc->check, sizeof rc->check, "ref");
    return rc->check;
  }
  const vec *ref = &rc->ref;
  size_t a = 0, b = 0;
  int64_t n_diff = 0, n_valid = 0, n_area = 0, n_undecided_hit = 0, shown = 0, shown_area = 0;
  while (a < ref->n || b < now->n) {
    const int cmp = a >= ref->n ? 1 : b >= now->n ? -1 : cmp_pair(ref->v + a, now->v + b);
    if (cmp == 0) {
      if (st == 3) {
        double g, x;
        memcpy(&g, &ref->v[a + 2], sizeof g), memcpy(&x, &now->v[b + 2], sizeof x);
        if (!isnan(g) && !isnan(x)) {
          const double m = fabs(g) > fabs(x) ? fabs(g) : fabs(x);
          const double rel = m > 0 ? fabs(g - x) / m : 0;
          *max_rel = rel > *max_rel ? rel : *max_rel;
          if (rel > 1e-9) {
            n_area++;
            if (shown_area++ < 8)
              fprintf(stderr, "geos_join: DIFF %s areas: pair (%lld, %lld): ref %.17g, this %.17g (relative %.3g)\n",
                      engine, (long long)ref->v[a], (long long)ref->v[a + 1], g, x, rel);
          }
        }
      }
      a += st, b += st;
      continue;
    }
    const int64_t *p = cmp < 0 ? ref->v + a : now->v + b;
    if (cmp < 0) a += st;
    else b += st;
    if (in_pairs(&rc->ref_undecided, p)) {
      n_undecided_hit++;
      continue;
    }
    n_diff++;
    const int both_valid = rc->R && feature_valid(rc, 0, p[0]) && feature_valid(rc, 1, p[1]);
    n_valid += both_valid;
    if (shown++ < 8) {
      fprintf(stderr, "geos_join: DIFF %s %s: pair (%lld, %lld): ref %s, this %s (%s)\n", engine, op_names[op],
              (long long)p[0], (long long)p[1], cmp < 0 ? "has it" : "has not", cmp < 0 ? "has not" : "has it",
              both_valid ? "both features valid" : "a feature invalid");
      if (rc->R) print_validity(rc, 0, p[0]), print_validity(rc, 1, p[1]);
    }
  }
  const int len = n_diff || n_area ? snprintf(rc->check, sizeof rc->check, "DIFF=%lld;valid=%lld", (long long)n_diff,
                                                (long long)n_valid)
                                   : snprintf(rc->check, sizeof rc->check, "same");
  if (n_area) snprintf(rc->check + len, sizeof rc->check - (size_t)len, ";areas=%lld", (long long)n_area);
  if (rc->ref_undecided.n) {
    const size_t l = strlen(rc->check);
    snprintf(rc->check + l, sizeof rc->check - l, ";undecided=%zu", rc->ref_undecided.n / 2);
  }
  if (n_undecided_hit)
    fprintf(stderr, "geos_join: %s %s: %lld of its pairs are among GEOS's undecided ones\n", engine, op_names[op],
            (long long)n_undecided_hit);
  if (n_diff || n_area) rc->diffs++;
  return rc->check;
}

static void header_poly(void) {
  printf("date,device,engine,threads,op,r,s,r_features,r_edges,s_features,s_edges,input_ms,build_ms,query_ms,"
         "total_ms,results,candidates,geos_undecided,max_rel_area_diff,vs_geos,check,load1\n");
}

static double load1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

static void row_poly(row_ctx *rc, const char *engine, int threads, int op, double input_ms, double *build, double *query,
                     const timing *tm, const vec *ans, const vec *undecided) {
  const int reps = rc->c->reps;
  double total[99];
  for (int i = 0; i < reps; i++) total[i] = build[i] + query[i];
  const double b = median(build, reps), q = median(query, reps), t = median(total, reps);
  const int64_t results = (int64_t)ans->n / (op == OP_AREAS ? 3 : 2);
  const int first = !rc->have_ref;
  if (first) rc->ref_total = t, rc->ref_is_geos = !strncmp(engine, "geos", 4);
  double max_rel = 0;
  const char *ck = check_poly(rc, op, ans, undecided, engine, &max_rel);
  char rel[32] = "";
  if (op == OP_AREAS && !first) snprintf(rel, sizeof rel, "%.3g", max_rel);
  printf("%s,%s,%s,%d,%s,%s,%s,%lld,%lld,%lld,%lld,%.1f,%.3f,%.3f,%.3f,%lld,%lld,%lld,%s,%.2f,%s,%.2f\n", rc->date,
         rc->device, engine, threads, op_names[op], base_name(rc->c->r_path), base_name(rc->c->s_path),
         (long long)rc->r_features, (long long)rc->r_edges, (long long)rc->s_features, (long long)rc->s_edges, input_ms,
         b, q, t, (long long)results, (long long)tm->candidates, (long long)tm->undecided, rel,
         rc->ref_is_geos && t > 0 ? rc->ref_total / t : 0.0, ck, load1());
  fflush(stdout);
}

/* DIR/<op>.<what>.tsv: r<TAB>s[<TAB>area] per line */
static void write_pairs(const char *dir, int op, const char *what, const vec *v, size_t st) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s.tsv", dir, op_names[op], what);
  FILE *f = fopen(path, "w");
  if (!f) die("cannot write %s", path);
  for (size_t i = 0; i + st <= v->n; i += st) {
    if (st == 3) {
      double x;
      memcpy(&x, &v->v[i + 2], sizeof x);
      fprintf(f, "%lld\t%lld\t%.17g\n", (long long)v->v[i], (long long)v->v[i + 1], x);
    } else fprintf(f, "%lld\t%lld\n", (long long)v->v[i], (long long)v->v[i + 1]);
  }
  if (fclose(f)) die("cannot write %s", path);
}

/* ---- WKT of a layer, for PostGIS ---- */

static void wkt_ring(FILE *f, GEOSContextHandle_t h, const GEOSGeometry *ring) {
  const GEOSCoordSequence *cs = GEOSGeom_getCoordSeq_r(h, ring);
  unsigned n = 0;
  if (!cs || !GEOSCoordSeq_getSize_r(h, cs, &n)) die("GEOS: a ring without coordinates");
  fputc('(', f);
  for (unsigned i = 0; i < n; i++) {
    double x, y;
    if (!GEOSCoordSeq_getXY_r(h, cs, i, &x, &y)) die("GEOSCoordSeq_getXY failed");
    fprintf(f, "%s%.17g %.17g", i ? "," : "", x, y);
  }
  fputc(')', f);
}

static void wkt_polygon(FILE *f, GEOSContextHandle_t h, const GEOSGeometry *p) {
  fputc('(', f);
  wkt_ring(f, h, GEOSGetExteriorRing_r(h, p));
  const int n = GEOSGetNumInteriorRings_r(h, p);
  for (int i = 0; i < n; i++) fputc(',', f), wkt_ring(f, h, GEOSGetInteriorRingN_r(h, p, i));
  fputc(')', f);
}

static void dump_wkt(GEOSContextHandle_t h, const glayer *G, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) die("cannot write %s", path);
  for (int64_t i = 0; i < G->n; i++) {
    if (G->empty[i]) continue;
    const GEOSGeometry *g = G->poly[i];
    fprintf(f, "%lld\t", (long long)i);
    if (GEOSGeomTypeId_r(h, g) == GEOS_POLYGON) fputs("POLYGON", f), wkt_polygon(f, h, g);
    else {
      fputs("MULTIPOLYGON(", f);
      const int n = GEOSGetNumGeometries_r(h, g);
      for (int k = 0; k < n; k++) {
        if (k) fputc(',', f);
        wkt_polygon(f, h, GEOSGetGeometryN_r(h, g, k));
      }
      fputc(')', f);
    }
    fputc('\n', f);
  }
  if (fclose(f)) die("cannot write %s", path);
}

int main(int argc, char **argv) {
  cfg c;
  parse(argc, argv, &c);
  rdx_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) die("rdx_info_get failed");

  row_ctx rc;
  memset(&rc, 0, sizeof rc);
  rc.c = &c;
  time_t now = time(NULL);
  strftime(rc.date, sizeof rc.date, "%Y-%m-%d", gmtime(&now));
  snprintf(rc.device, sizeof rc.device, "%s", info.cpu_name);
  for (char *p = rc.device; *p; p++)
    if (*p == ',') *p = ' ';

  /* the layers GEOS reads: loaded once, in a context of their own */
  rdx_context *gctx = ctx_make(0);
  rdx_polygons *gr = load(gctx, c.r_path), *gs = load(gctx, c.s_path);
  rdx_polygons_info ri, si;
  ri.size = si.size = sizeof ri;
  must(gctx, rdx_polygons_describe(gctx, gr, &ri), "rdx_polygons_describe");
  must(gctx, rdx_polygons_describe(gctx, gs, &si), "rdx_polygons_describe");
  rc.r_features = ri.n_features, rc.r_edges = ri.n_edges, rc.s_features = si.n_features, rc.s_edges = si.n_edges;
  int64_t n_pts = 0;
  const double *pts = rdx_polygons_host_xy(gs, &n_pts); /* pip's points: S's kept vertices */

  int max_geos = 1;
  for (int i = 0; i < c.n_geos; i++) max_geos = c.geos_threads[i] > max_geos ? c.geos_threads[i] : max_geos;
  GEOSContextHandle_t *handles = xmalloc((size_t)max_geos * sizeof *handles);
  for (int k = 0; k < max_geos; k++) handles[k] = geos_handle();
  GEOSContextHandle_t h = handles[0];
  fprintf(stderr, "geos_join: GEOS %s; R %s: %lld features, %lld rings, %lld edges; S %s: %lld features, %lld edges\n",
          GEOSversion(), base_name(c.r_path), (long long)ri.n_features, (long long)ri.n_rings, (long long)ri.n_edges,
          base_name(c.s_path), (long long)si.n_features, (long long)si.n_edges);

  glayer R, S;
  memset(&S, 0, sizeof S);
  g_make(h, gr, &R);
  fprintf(stderr, "geos_join: R as GEOS: %lld polygons, %lld holes (%lld in no shell) in %.1f ms\n",
          (long long)R.n_polygons, (long long)R.n_holes, (long long)R.n_unowned, R.poly_ms);
  const int need_s = c.do_op[OP_LSI] || c.poly_ops || c.dump_s;
  if (need_s) {
    g_make(h, gs, &S);
    fprintf(stderr, "geos_join: S as GEOS: %lld polygons, %lld holes (%lld in no shell) in %.1f ms\n",
            (long long)S.n_polygons, (long long)S.n_holes, (long long)S.n_unowned, S.poly_ms);
  }
  if (c.dump_r || c.dump_s) {
    if (c.dump_r) dump_wkt(h, &R, c.dump_r);
    if (c.dump_s) dump_wkt(h, &S, c.dump_s);
    g_free(h, &R);
    if (need_s) g_free(h, &S);
    for (int k = 0; k < max_geos; k++) GEOS_finish_r(handles[k]);
    free(handles);
    rdx_polygons_destroy(gr);
    rdx_polygons_destroy(gs);
    rdx_context_destroy(gctx);
    return 0;
  }
  rc.h = h, rc.R = &R, rc.S = &S;
  rc.valid_r = xcalloc((size_t)R.n, 1), rc.valid_s = xcalloc((size_t)(S.n ? S.n : 1), 1);

  if (c.header) c.poly_ops ? header_poly() : header();
  vec ans = {NULL, 0, 0}, undecided = {NULL, 0, 0};
  double build[99], query[99];
  for (int op = 0; op < N_OPS; op++) {
    if (!c.do_op[op]) continue;
    rc.have_ref = 0;
    if (is_poly_op(op)) {
      /* GEOS: R's polygons in the tree, S's polygons the queries (NULL: a feature without rings) */
      GEOSGeometry **q = xcalloc((size_t)(S.n ? S.n : 1), sizeof *q);
      for (int64_t i = 0; i < S.n; i++) q[i] = S.empty[i] ? NULL : S.poly[i];
      const int st = op == OP_AREAS ? 3 : 2;
      int wrote_geos = 0, wrote_ours = 0;
      for (int g = 0; g < c.n_geos && c.geos; g++) {
        const int T = c.geos_threads[g];
        timing tm = {0, 0, 0, 0, 0};
        for (int i = 0; i < c.warmup + c.reps; i++) {
          tm = geos_join(op, &R, q, S.n, T, handles, &ans, &undecided, c.geos_limit_s);
          if (i >= c.warmup) build[i - c.warmup] = tm.build_ms, query[i - c.warmup] = tm.query_ms;
          if (tm.timed_out) {
            for (int k = 0; k < c.reps; k++) build[k] = tm.build_ms, query[k] = tm.query_ms;
            break;
          }
        }
        if (tm.timed_out) {
          /* partial answers: a row that says so, never the reference */
          printf("%s,%s,geos-strtree,%d,%s,%s,%s,%lld,%lld,%lld,%lld,%.1f,%.3f,%.3f,%.3f,%lld,%lld,%lld,,0.00,"
                 "timeout>%gs,%.2f\n",
                 rc.date, rc.device, T, op_names[op], base_name(c.r_path), base_name(c.s_path), (long long)rc.r_features,
                 (long long)rc.r_edges, (long long)rc.s_features, (long long)rc.s_edges, R.poly_ms + S.poly_ms,
                 tm.build_ms, tm.query_ms, tm.build_ms + tm.query_ms, (long long)(ans.n / (size_t)st),
                 (long long)tm.candidates, (long long)tm.undecided, c.geos_limit_s, load1());
          fflush(stdout);
          fprintf(stderr, "geos_join: GEOS %s stopped at --geos-limit-s %g (%.0f ms of query)\n", op_names[op],
                  c.geos_limit_s, tm.query_ms);
          continue;
        }
        row_poly(&rc, "geos-strtree", T, op, R.poly_ms + S.poly_ms, build, query, &tm, &ans, &undecided);
        if (c.pairs_out && !wrote_geos) {
          write_pairs(c.pairs_out, op, "geos", &ans, (size_t)st);
          write_pairs(c.pairs_out, op, "geos-undecided", &undecided, 2);
          wrote_geos = 1;
        }
      }
      free(q);
      for (int t = 0; t < c.n_threads && c.ours; t++) {
        rdx_context *ctx = ctx_make(c.threads[t]);
        const double t0 = rdx_now_ms();
        rdx_polygons *r = load(ctx, c.r_path), *s = load(ctx, c.s_path);
        const double input_ms_ours = rdx_now_ms() - t0;
        timing tm = {0, 0, -1, 0, 0};
        for (int i = 0; i < c.warmup + c.reps; i++) {
          tm = ours_join(op, ctx, r, s, pts, n_pts, 0, &ans);
          if (i >= c.warmup) build[i - c.warmup] = tm.build_ms, query[i - c.warmup] = tm.query_ms;
        }
        tm.undecided = 0;
        row_poly(&rc, "raydex-cpu", c.threads[t] ? c.threads[t] : info.cpu_threads, op, input_ms_ours, build, query,
                 &tm, &ans, NULL);
        if (c.pairs_out && !wrote_ours) write_pairs(c.pairs_out, op, "raydex", &ans, (size_t)st), wrote_ours = 1;
        rdx_polygons_destroy(r);
        rdx_polygons_destroy(s);
        rdx_context_destroy(ctx);
      }
      continue;
    }
    /* GEOS's inputs: lsi the boundaries of R and S; pip one Point per query */
    GEOSGeometry **query_geoms = NULL;
    int64_t n_query = 0;
    double input_ms = R.poly_ms;
    if (op == OP_LSI) {
      g_bounds(h, &R);
      g_bounds(h, &S);
      query_geoms = S.bound, n_query = S.n;
      input_ms += R.bound_ms + S.poly_ms + S.bound_ms;
    } else {
      const double t0 = rdx_now_ms();
      query_geoms = xmalloc((size_t)(n_pts ? n_pts : 1) * sizeof *query_geoms);
      for (int64_t i = 0; i < n_pts; i++) {
        query_geoms[i] = GEOSGeom_createPointFromXY_r(h, pts[2 * i], pts[2 * i + 1]);
        if (!query_geoms[i]) die("GEOS refused point %lld", (long long)i);
      }
      n_query = n_pts;
      input_ms += rdx_now_ms() - t0;
    }
    for (int g = 0; g < c.n_geos && c.geos; g++) {
      const int T = c.geos_threads[g];
      timing tm = {0, 0, 0, 0, 0};
      for (int i = 0; i < c.warmup + c.reps; i++) {
        tm = geos_join(op, &R, query_geoms, n_query, T, handles, &ans, NULL, 0);
        if (i >= c.warmup) build[i - c.warmup] = tm.build_ms, query[i - c.warmup] = tm.query_ms;
      }
      row(&rc, "geos-strtree", T, op, n_pts, input_ms, build, query, tm.candidates, &ans, pts);
    }
    if (op == OP_PIP) {
      for (int64_t i = 0; i < n_pts; i++) GEOSGeom_destroy_r(h, query_geoms[i]);
      free(query_geoms);
    }
    for (int t = 0; t < c.n_threads && c.ours; t++)
      for (int planar = 0; planar <= (op == OP_PIP && c.planar); planar++) {
        rdx_context *ctx = ctx_make(c.threads[t]);
        const double t0 = rdx_now_ms();
        rdx_polygons *r = load(ctx, c.r_path), *s = load(ctx, c.s_path);
        const double input_ms_ours = rdx_now_ms() - t0;
        for (int i = 0; i < c.warmup + c.reps; i++) {
          timing tm = ours_join(op, ctx, r, s, pts, n_pts, planar, &ans);
          if (i >= c.warmup) build[i - c.warmup] = tm.build_ms, query[i - c.warmup] = tm.query_ms;
        }
        row(&rc, planar ? "raydex-cpu-planar" : "raydex-cpu", c.threads[t] ? c.threads[t] : info.cpu_threads, op,
            n_pts, input_ms_ours, build, query, -1, &ans, pts);
        rdx_polygons_destroy(r);
        rdx_polygons_destroy(s);
        rdx_context_destroy(ctx);
      }
  }

  free(ans.v), free(rc.ref.v), free(undecided.v), free(rc.ref_undecided.v), free(rc.valid_r), free(rc.valid_s);
  g_free(h, &R);
  if (need_s) g_free(h, &S);
  for (int k = 0; k < max_geos; k++) GEOS_finish_r(handles[k]);
  free(handles);
  rdx_polygons_destroy(gr);
  rdx_polygons_destroy(gs);
  rdx_context_destroy(gctx);
  if (rc.diffs) fprintf(stderr, "geos_join: %d rows differ from the reference\n", rc.diffs);
  return rc.diffs ? 1 : 0;
}
