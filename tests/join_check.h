/*
 * join_check.h: shared pieces of the polygon-join tests (test_join_lsi.c, test_join_pip.c,
 * test_join_geos.c, test_join_layer.c): checks of a context's message, of the memory it holds and
 * of the OptiX launches a join made; and a layer built from ring lists in the test (CSR arrays of
 * f64 coordinates, the input rdx_polygons_create takes), with per ring whether it opens a polygon
 * (a shell) or is a hole of the last shell; and, with GEOS, that layer as GEOS's OGC Polygons and
 * MultiPolygons, which test_join_geos.c and test_join_polygons.c compare with.
 */
#ifndef RDX_JOIN_CHECK_H
#define RDX_JOIN_CHECK_H

#include "check.h"

#include <math.h>

/* Internal (src/join/join.h): launches of the join's OptiX programs since the process began. */
int64_t rdx_jn_optix_launches(void);

/* The context's last message holds part. */
static inline void expect_message(rdx_context *c, const char *part) {
  if (strstr(rdx_context_message(c), part) == NULL)
    CHECK_FAIL_("message '%s' lacks '%s'", rdx_context_message(c), part);
}

/* The bytes the context's memory account holds. */
static inline int64_t held(rdx_context *c) {
  int64_t b = 0;
  rdx_context_memory(c, &b, NULL);
  return b;
}

/* On OptiX contexts the join's OptiX programs answer, not the soft kernels: a join that reached
 * the backend adds at least `calls` launches of them to `before`, rdx_jn_optix_launches() read
 * before the join. */
static inline void expect_optix(rdx_context *c, const char *what, int64_t before, int64_t calls) {
  if (rdx_context_backend(c) != RDX_BACKEND_OPTIX) return;
  int64_t now = rdx_jn_optix_launches();
  if (now < before + calls)
    CHECK_FAIL_("%s: %lld launches of the join's OptiX programs, expected at least %lld", what,
                (long long)(now - before), (long long)calls);
}

/* p grown to hold `need` elements of `elem` bytes (capacity *cap, doubled); exits when out of
 * memory. */
static inline void *jc_grow(void *p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return p;
  while (*cap < need) *cap = *cap ? 2 * *cap : 16;
  p = realloc(p, (size_t)*cap * elem);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

/* ---- a layer under construction (CSR, f64) ---- */

typedef struct lb_layer {
  uint64_t *fo, *ro;    /* feature -> first ring, ring -> first vertex (n + 1 entries each) */
  double *xy;           /* vertex v at xy[2v], xy[2v + 1] */
  unsigned char *shell; /* per ring: 1 opens a polygon, 0 is a hole of the last shell */
  int64_t nf, nr, nv, cap_f, cap_r, cap_v, cap_s;
} lb_layer;

static inline void lb_init(lb_layer *L) {
  memset(L, 0, sizeof *L);
  L->fo = (uint64_t *)jc_grow(NULL, &L->cap_f, 1, 8);
  L->ro = (uint64_t *)jc_grow(NULL, &L->cap_r, 1, 8);
  L->fo[0] = L->ro[0] = 0;
}
static inline void lb_free(lb_layer *L) {
  free(L->fo), free(L->ro), free(L->xy), free(L->shell);
  memset(L, 0, sizeof *L);
}
/* A new feature; rings follow with lb_ring. */
static inline void lb_feature(lb_layer *L) {
  L->fo = (uint64_t *)jc_grow(L->fo, &L->cap_f, L->nf + 2, 8);
  L->nf++;
  L->fo[L->nf] = (uint64_t)L->nr;
}
/* A ring of n points (x, y pairs) for the last feature: a shell, or a hole of the last shell. */
static inline void lb_ring_as(lb_layer *L, const double *p, int64_t n, int shell) {
  L->ro = (uint64_t *)jc_grow(L->ro, &L->cap_r, L->nr + 2, 8);
  L->shell = (unsigned char *)jc_grow(L->shell, &L->cap_s, L->nr + 1, 1);
  L->xy = (double *)jc_grow(L->xy, &L->cap_v, 2 * (L->nv + n), 8);
  memcpy(L->xy + 2 * L->nv, p, (size_t)n * 16);
  L->nv += n;
  L->shell[L->nr] = (unsigned char)shell;
  L->nr++;
  L->ro[L->nr] = (uint64_t)L->nv;
  L->fo[L->nf] = (uint64_t)L->nr;
}
/* A ring recorded as a shell; raydex's even-odd rule does not ask which rings are holes. */
static inline void lb_ring(lb_layer *L, const double *p, int64_t n) { lb_ring_as(L, p, n, 1); }
/* The rectangle (x0, y0) (x1, y0) (x1, y1) (x0, y1) as a ring. */
static inline void lb_quad_as(lb_layer *L, double x0, double y0, double x1, double y1, int shell) {
  double q[8] = {x0, y0, x1, y0, x1, y1, x0, y1};
  lb_ring_as(L, q, 4, shell);
}
static inline void lb_quad(lb_layer *L, double x0, double y0, double x1, double y1) { lb_quad_as(L, x0, y0, x1, y1, 1); }
static inline void lb_tri(lb_layer *L, double ax, double ay, double bx, double by, double cx, double cy) {
  double t[6] = {ax, ay, bx, by, cx, cy};
  lb_ring(L, t, 3);
}
/* n x n squares of side h from (x0, y0), one feature each */
static inline void lb_grid(lb_layer *L, int n, double x0, double y0, double h) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) lb_feature(L), lb_quad(L, x0 + i * h, y0 + j * h, x0 + (i + 1) * h, y0 + (j + 1) * h);
}
/* every coordinate times 2^e (exact) */
static inline void lb_scale(lb_layer *L, int e) {
  for (int64_t i = 0; i < 2 * L->nv; i++) L->xy[i] = ldexp(L->xy[i], e);
}
/* a star of k spikes (2k points at p) around (cx, cy) between radii r0 and r1 */
static inline void lb_star_points(double *p, int k, double cx, double cy, double r0, double r1, double phase) {
  for (int i = 0; i < 2 * k; i++) {
    double a = phase + 3.14159265358979323846 * i / k, r = (i & 1) ? r0 : r1;
    p[2 * i] = cx + r * cos(a), p[2 * i + 1] = cy + r * sin(a);
  }
}
/* uniform in [lo, hi) from the test's seeded generator */
static inline double lb_urand(double lo, double hi) {
  return lo + (hi - lo) * ((double)(check_rand_() >> 11) * 0x1p-53);
}

/* The layer as rdx_polygons of context c (NULL after a failed check). */
static inline rdx_polygons *lb_create(rdx_context *c, const lb_layer *L) {
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = rdx_host_array(L->fo, L->nf + 1, RDX_U64);
  in.ring_offsets = rdx_host_array(L->ro, L->nr + 1, RDX_U64);
  in.coords = rdx_host_matrix(L->xy, L->nv, 2, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(c, rdx_polygons_create(c, &in, &p));
  return p;
}

#ifdef RDX_HAVE_GEOS
#include <geos_c.h>

/* ---- GEOS geometries of a layer (test_join_geos.c, test_join_polygons.c) ----
 * GEOS is the exact reference of the joins, and its region of a valid OGC Polygon or MultiPolygon
 * is the even-odd region raydex defines; so every test that compares with GEOS must turn a layer
 * into GEOS features the same way, and does it here, once. The GEOS context is the caller's, the
 * first argument as in GEOS's own _r calls. */

/* Ring r of L as a LinearRing, closed as GEOS wants it (its first vertex again at the end; the
 * layer stores each vertex once). */
static inline GEOSGeometry *lb_geos_ring(GEOSContextHandle_t handle, const lb_layer *L, int64_t r) {
  uint64_t v0 = L->ro[r], v1 = L->ro[r + 1];
  GEOSCoordSequence *cs = GEOSCoordSeq_create_r(handle, (unsigned)(v1 - v0 + 1), 2);
  for (uint64_t v = v0; v <= v1; v++) {
    uint64_t u = v < v1 ? v : v0;
    GEOSCoordSeq_setXY_r(handle, cs, (unsigned)(v - v0), L->xy[2 * u], L->xy[2 * u + 1]);
  }
  return GEOSGeom_createLinearRing_r(handle, cs);
}

/* Feature f of L as a Polygon, or a MultiPolygon when more than one of its rings is a shell (an
 * empty Polygon when it has no rings): L->shell opens a polygon per shell, and the holes after it
 * are that polygon's. */
static inline GEOSGeometry *lb_geos_feature(GEOSContextHandle_t handle, const lb_layer *L, int64_t f) {
  int64_t r0 = (int64_t)L->fo[f], r1 = (int64_t)L->fo[f + 1];
  if (r0 == r1) return GEOSGeom_createEmptyPolygon_r(handle);
  GEOSGeometry **polys = (GEOSGeometry **)malloc((size_t)(r1 - r0) * 2 * sizeof *polys), **holes = polys + (r1 - r0);
  unsigned np = 0;
  for (int64_t r = r0; r < r1;) {
    GEOSGeometry *shell = lb_geos_ring(handle, L, r++);
    unsigned nh = 0;
    while (r < r1 && !L->shell[r]) holes[nh++] = lb_geos_ring(handle, L, r++);
    polys[np++] = GEOSGeom_createPolygon_r(handle, shell, holes, nh);
  }
  GEOSGeometry *g = np == 1 ? polys[0] : GEOSGeom_createCollection_r(handle, GEOS_MULTIPOLYGON, polys, np);
  free(polys);
  return g;
}

/* A layer's features for GEOS, each prepared: GEOS answers many pairs about the same feature. */
typedef struct lb_geos {
  int64_t n;                         /* features: the layer's nf */
  GEOSGeometry **geom;               /* feature f (or its boundary), n + 1 entries, owned */
  const GEOSPreparedGeometry **prep; /* geom[f] prepared, n + 1 entries, owned */
} lb_geos;

/* G from L's features, each checked valid first (a failed check otherwise: the premise of every
 * comparison with GEOS), then, with `boundary`, replaced by its boundary (the LSI joins' rule is
 * about boundaries). Freed by lb_geos_free. */
static inline void lb_geos_make(GEOSContextHandle_t handle, const lb_layer *L, int boundary, lb_geos *G) {
  G->n = L->nf;
  G->geom = (GEOSGeometry **)calloc((size_t)L->nf + 1, sizeof *G->geom);
  G->prep = (const GEOSPreparedGeometry **)calloc((size_t)L->nf + 1, sizeof *G->prep);
  for (int64_t f = 0; f < L->nf; f++) {
    GEOSGeometry *g = lb_geos_feature(handle, L, f);
    if (GEOSisValid_r(handle, g) != 1) {
      char *why = GEOSisValidReason_r(handle, g);
      CHECK_FAIL_("feature %lld is not a valid polygon: %s", (long long)f, why);
      GEOSFree_r(handle, why);
    }
    if (boundary) {
      GEOSGeometry *b = GEOSBoundary_r(handle, g);
      GEOSGeom_destroy_r(handle, g);
      g = b;
    }
    G->geom[f] = g;
    G->prep[f] = GEOSPrepare_r(handle, g);
  }
}
static inline void lb_geos_free(GEOSContextHandle_t handle, lb_geos *G) {
  for (int64_t f = 0; f < G->n; f++) {
    GEOSPreparedGeom_destroy_r(handle, G->prep[f]);
    GEOSGeom_destroy_r(handle, G->geom[f]);
  }
  free(G->geom), free((void *)G->prep);
  memset(G, 0, sizeof *G);
}
#endif /* RDX_HAVE_GEOS */

#endif /* RDX_JOIN_CHECK_H */
