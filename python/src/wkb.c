/*
 * wkb.c: WKB Polygons and MultiPolygons to the arrays PolygonLayer.from_arrays takes, for
 * PolygonLayer.from_wkb, and shapely 1.8 geometries to the same arrays through GEOS's C API
 * (below; their WKB where the extension or GEOS lacks that path).
 * A layer of the world's coastlines has about a million rings, so this runs in C: two passes over
 * the blobs, the first checking every header and counting rings and points, the second copying
 * the coordinates, so a malformed blob is refused before anything is allocated.
 *
 * Accepted: both byte orders (each geometry, and each part of a MultiPolygon, says its own), ISO
 * types (1003, 2003, 3003) and EWKB flags (Z, M, SRID); Z and M are dropped. None, and an empty
 * geometry of any type, is a feature without rings.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL raydex_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stdint.h>
#include <string.h>

#include "wkb.h"

typedef struct blob {
  const unsigned char *b;
  size_t n;
  size_t off;
  const char *error; /* why the blob is malformed, or NULL */
} blob;

typedef struct sink {     /* the second pass's outputs; NULL in the first */
  double *xy;             /* 2 per point */
  uint64_t *ring_offsets; /* ring_offsets[r + 1] = points so far */
} sink;

typedef struct totals {
  uint64_t rings, points;
} totals;

static const char *type_name(uint32_t t) {
  static const char *names[] = {NULL, "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString",
                                "MultiPolygon", "GeometryCollection"};
  return t < 8 ? names[t] : NULL;
}

static int read_u32(blob *s, int big, uint32_t *out) {
  if (s->n - s->off < 4) {
    s->error = "it ends inside a count";
    return -1;
  }
  const unsigned char *p = s->b + s->off;
  *out = big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
  s->off += 4;
  return 0;
}

/* A geometry's header: byte order, base type, dimensions. */
static int read_header(blob *s, int *big, uint32_t *type, int *dims) {
  if (s->off >= s->n) {
    s->error = "it ends before a header";
    return -1;
  }
  if (s->b[s->off] > 1) {
    s->error = "a byte order that is neither 0 nor 1";
    return -1;
  }
  *big = s->b[s->off] == 0;
  s->off++;
  uint32_t t;
  if (read_u32(s, *big, &t) < 0) return -1;
  int z = (t & 0x80000000u) != 0, m = (t & 0x40000000u) != 0;
  if (t & 0x20000000u) { /* EWKB SRID */
    uint32_t srid;
    if (read_u32(s, *big, &srid) < 0) return -1;
  }
  t &= 0x0FFFFFFFu;
  if (t >= 1000) {
    uint32_t iso = t / 1000;
    if (iso > 3) {
      s->error = "an unknown ISO dimension";
      return -1;
    }
    z |= iso == 1 || iso == 3;
    m |= iso == 2 || iso == 3;
    t %= 1000;
  }
  *type = t;
  *dims = 2 + z + m;
  return 0;
}

/* A Polygon's body: its rings counted, and copied where out is given. */
static int read_polygon(blob *s, int big, int dims, totals *tot, sink *out) {
  uint32_t n_rings;
  if (read_u32(s, big, &n_rings) < 0) return -1;
  for (uint32_t r = 0; r < n_rings; r++) {
    uint32_t n_points;
    if (read_u32(s, big, &n_points) < 0) return -1;
    const size_t bytes = (size_t)n_points * (size_t)dims * 8;
    if (n_points > (s->n - s->off) / ((size_t)dims * 8)) {
      s->error = "it ends inside a ring";
      return -1;
    }
    if (out != NULL) {
      const unsigned char *p = s->b + s->off;
      double *xy = out->xy + 2 * tot->points;
      for (uint32_t i = 0; i < n_points; i++, p += (size_t)dims * 8) {
        for (int c = 0; c < 2; c++) {
          unsigned char v[8];
          if (big)
            for (int k = 0; k < 8; k++) v[k] = p[8 * c + 7 - k];
          else
            memcpy(v, p + 8 * c, 8);
          memcpy(&xy[2 * i + c], v, 8);
        }
      }
      out->ring_offsets[tot->rings + 1] = tot->points + n_points;
    }
    s->off += bytes;
    tot->rings++;
    tot->points += n_points;
  }
  return 0;
}

/* One feature: 0, or -1 with s->error set (malformed) or *wrong_type set (not a polygon). */
static int read_feature(blob *s, totals *tot, sink *out, uint32_t *wrong_type) {
  int big, dims;
  uint32_t t;
  if (read_header(s, &big, &t, &dims) < 0) return -1;
  if (t == 3) return read_polygon(s, big, dims, tot, out);
  if (t == 6) {
    uint32_t n_parts;
    if (read_u32(s, big, &n_parts) < 0) return -1;
    for (uint32_t k = 0; k < n_parts; k++) {
      int pbig, pdims;
      uint32_t pt;
      if (read_header(s, &pbig, &pt, &pdims) < 0) return -1;
      if (pt != 3) {
        s->error = "a MultiPolygon part that is not a Polygon";
        return -1;
      }
      if (read_polygon(s, pbig, pdims, tot, out) < 0) return -1;
    }
    return 0;
  }
  uint32_t count;
  if ((t == 2 || t == 4 || t == 5 || t == 7) && read_u32(s, big, &count) == 0 && count == 0)
    return 0; /* an empty geometry of another type (shapely 1.8 writes Polygon() so) */
  s->error = NULL;
  *wrong_type = t;
  return -1;
}

/* Every blob once: counted (out NULL) or copied. Raises and returns -1 on the first bad one. */
static int walk(const Py_buffer *views, Py_ssize_t n, totals *tot, sink *out, uint64_t *rings_per_feature) {
  tot->rings = tot->points = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (rings_per_feature != NULL) rings_per_feature[i] = 0;
    if (views[i].obj == NULL) continue; /* None */
    blob s = {(const unsigned char *)views[i].buf, (size_t)views[i].len, 0, NULL};
    uint32_t wrong = 0;
    const uint64_t before = tot->rings;
    if (read_feature(&s, tot, out, &wrong) < 0) {
      if (s.error == NULL) {
        const char *name = type_name(wrong);
        if (name != NULL)
          PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a %s, not a Polygon or MultiPolygon", i, name);
        else
          PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a WKB type %u, not a Polygon or MultiPolygon", i,
                       (unsigned)wrong);
      } else {
        PyErr_Format(PyExc_ValueError, "PolygonLayer: feature %zd: malformed WKB (%s)", i, s.error);
      }
      return -1;
    }
    if (rings_per_feature != NULL) rings_per_feature[i] = tot->rings - before;
  }
  return 0;
}

PyObject *rdx_py_wkb_polygon_arrays(PyObject *self, PyObject *arg) {
  (void)self;
  PyObject *seq = PySequence_Fast(arg, "PolygonLayer.from_wkb: wkbs must be a sequence of bytes or None");
  if (seq == NULL) return NULL;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  Py_buffer *views = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *views);
  PyObject *coords = NULL, *rings = NULL, *features = NULL, *result = NULL;
  Py_ssize_t held = 0;
  if (views == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (; held < n; held++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, held);
    if (o == Py_None) continue;
    if (PyObject_GetBuffer(o, &views[held], PyBUF_SIMPLE) < 0) {
      views[held].obj = NULL;
      PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a %s, not WKB bytes or None", held,
                   Py_TYPE(o)->tp_name);
      goto done;
    }
  }
  totals tot;
  if (walk(views, n, &tot, NULL, NULL) < 0) goto done;
  npy_intp cdims[2] = {(npy_intp)tot.points, 2}, rdim = (npy_intp)tot.rings + 1, fdim = (npy_intp)n + 1;
  coords = PyArray_EMPTY(2, cdims, NPY_FLOAT64, 0);
  rings = PyArray_EMPTY(1, &rdim, NPY_UINT64, 0);
  features = PyArray_EMPTY(1, &fdim, NPY_UINT64, 0);
  if (coords == NULL || rings == NULL || features == NULL) goto done;
  sink out = {(double *)PyArray_DATA((PyArrayObject *)coords), (uint64_t *)PyArray_DATA((PyArrayObject *)rings)};
  uint64_t *fo = (uint64_t *)PyArray_DATA((PyArrayObject *)features);
  out.ring_offsets[0] = 0;
  if (walk(views, n, &tot, &out, fo + 1) < 0) goto done;
  fo[0] = 0;
  for (Py_ssize_t i = 0; i < n; i++) fo[i + 1] += fo[i]; /* rings per feature to offsets */
  result = PyTuple_Pack(3, coords, rings, features);
done:
  for (Py_ssize_t i = 0; i < held; i++)
    if (views[i].obj != NULL) PyBuffer_Release(&views[i]);
  PyMem_Free(views);
  Py_XDECREF(coords);
  Py_XDECREF(rings);
  Py_XDECREF(features);
  Py_DECREF(seq);
  return result;
}

/* ---- shapely 1.8 geometries, read through the GEOS C API of shapely's own libgeos_c ----
 *
 * Exporting each geometry's WKB (GEOSWKBWriter_write through shapely) costs more than the rest of
 * the conversion: GEOS writes 8 bytes at a time into a stream, then copies the stream twice, and
 * the blob is then read again above. Here the geometries are walked instead, through the
 * functions whose addresses shapely's ctypes library resolved (python/raydex/_polygons.py), so the
 * GEOS that made the geometries reads them and the extension does not link GEOS. The walk checks
 * types and lists every ring's coordinate sequence and size; then each ring is copied by one
 * GEOSCoordSeq_copyToBuffer_r (GEOS >= 3.10) into the arrays, allocated once. */

typedef struct geos_api {
  void *handle; /* GEOSContextHandle_t */
  int (*type_id)(void *, const void *);
  char (*is_empty)(void *, const void *);
  int (*n_geometries)(void *, const void *);
  const void *(*geometry_n)(void *, const void *, int);
  const void *(*exterior_ring)(void *, const void *);
  int (*n_interior_rings)(void *, const void *);
  const void *(*interior_ring_n)(void *, const void *, int);
  const void *(*coord_seq)(void *, const void *);
  int (*coord_seq_size)(void *, const void *, unsigned int *);
  int (*coord_seq_copy)(void *, const void *, double *, int, int);
} geos_api;

enum { GEOS_API_ITEMS = 11 };

/* The tuple of addresses, in geos_api's order; none may be 0. */
static int geos_api_from(PyObject *t, geos_api *api) {
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != GEOS_API_ITEMS) {
    PyErr_Format(PyExc_TypeError, "_geos_polygon_arrays: api must be a tuple of %d addresses", GEOS_API_ITEMS);
    return -1;
  }
  uintptr_t a[GEOS_API_ITEMS];
  for (Py_ssize_t i = 0; i < GEOS_API_ITEMS; i++) {
    a[i] = (uintptr_t)PyLong_AsVoidPtr(PyTuple_GET_ITEM(t, i));
    if (PyErr_Occurred()) return -1;
    if (a[i] == 0) {
      PyErr_Format(PyExc_ValueError, "_geos_polygon_arrays: api item %zd is a null address", i);
      return -1;
    }
  }
  api->handle = (void *)a[0];
  api->type_id = (int (*)(void *, const void *))a[1];
  api->is_empty = (char (*)(void *, const void *))a[2];
  api->n_geometries = (int (*)(void *, const void *))a[3];
  api->geometry_n = (const void *(*)(void *, const void *, int))a[4];
  api->exterior_ring = (const void *(*)(void *, const void *))a[5];
  api->n_interior_rings = (int (*)(void *, const void *))a[6];
  api->interior_ring_n = (const void *(*)(void *, const void *, int))a[7];
  api->coord_seq = (const void *(*)(void *, const void *))a[8];
  api->coord_seq_size = (int (*)(void *, const void *, unsigned int *))a[9];
  api->coord_seq_copy = (int (*)(void *, const void *, double *, int, int))a[10];
  return 0;
}

/* GEOS type ids (GEOSGeomTypeId) named as the WKB reader names the same geometry's WKB type: a
 * LinearRing's WKB is a LineString's. */
static const char *geos_type_name(int t) {
  static const char *names[] = {"Point", "LineString", "LineString", "Polygon", "MultiPoint", "MultiLineString",
                                "MultiPolygon", "GeometryCollection"};
  return t >= 0 && t < 8 ? names[t] : NULL;
}

typedef struct ring_list { /* every ring's coordinate sequence and size, in layer order */
  const void **seq;
  unsigned int *size;
  size_t n, cap;
  uint64_t points;
  const char *failed; /* the GEOS call that failed, or NULL */
} ring_list;

static int geos_ring(const geos_api *a, const void *ring, ring_list *rl) {
  const void *seq = ring == NULL ? NULL : a->coord_seq(a->handle, ring);
  unsigned int n = 0;
  if (seq == NULL || a->coord_seq_size(a->handle, seq, &n) == 0) {
    rl->failed = ring == NULL ? "GEOSGetExteriorRing/GEOSGetInteriorRingN" : "GEOSGeom_getCoordSeq";
    return -1;
  }
  if (rl->n == rl->cap) {
    const size_t cap = rl->cap ? 2 * rl->cap : 1024;
    const void **s = PyMem_Realloc(rl->seq, cap * sizeof *s);
    if (s != NULL) rl->seq = s;
    unsigned int *z = s == NULL ? NULL : PyMem_Realloc(rl->size, cap * sizeof *z);
    if (z == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    rl->size = z;
    rl->cap = cap;
  }
  rl->seq[rl->n] = seq;
  rl->size[rl->n++] = n;
  rl->points += n;
  return 0;
}

/* A Polygon's rings; an empty Polygon has none (its WKB has none). */
static int geos_polygon(const geos_api *a, const void *g, ring_list *rl) {
  const char empty = a->is_empty(a->handle, g);
  if (empty == 2) {
    rl->failed = "GEOSisEmpty";
    return -1;
  }
  if (empty) return 0;
  if (geos_ring(a, a->exterior_ring(a->handle, g), rl) < 0) return -1;
  const int n = a->n_interior_rings(a->handle, g);
  if (n < 0) {
    rl->failed = "GEOSGetNumInteriorRings";
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (geos_ring(a, a->interior_ring_n(a->handle, g, k), rl) < 0) return -1;
  return 0;
}

/* One feature's rings: 0, or -1 with rl->failed set (GEOS failed), *wrong_type set (not a
 * polygon) or a Python error (no memory). */
static int geos_feature(const geos_api *a, const void *g, ring_list *rl, int *wrong_type) {
  const char empty = a->is_empty(a->handle, g);
  if (empty == 2) {
    rl->failed = "GEOSisEmpty";
    return -1;
  }
  if (empty) return 0; /* an empty geometry of any type, as the WKB reader takes it */
  const int t = a->type_id(a->handle, g);
  if (t == 3) return geos_polygon(a, g, rl);
  if (t == 6) {
    const int n = a->n_geometries(a->handle, g);
    if (n < 0) {
      rl->failed = "GEOSGetNumGeometries";
      return -1;
    }
    for (int k = 0; k < n; k++) {
      const void *part = a->geometry_n(a->handle, g, k);
      if (part == NULL) {
        rl->failed = "GEOSGetGeometryN";
        return -1;
      }
      if (geos_polygon(a, part, rl) < 0) return -1;
    }
    return 0;
  }
  if (t < 0) {
    rl->failed = "GEOSGeomTypeId";
    return -1;
  }
  *wrong_type = t;
  return -1;
}

PyObject *rdx_py_geos_polygon_arrays(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *geoms_obj, *api_obj;
  if (!PyArg_ParseTuple(args, "OO:_geos_polygon_arrays", &geoms_obj, &api_obj)) return NULL;
  geos_api api;
  if (geos_api_from(api_obj, &api) < 0) return NULL;
  PyObject *seq = PySequence_Fast(geoms_obj, "_geos_polygon_arrays: geoms must be a sequence of shapely geometries "
                                             "or None");
  if (seq == NULL) return NULL;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  const void **geoms = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *geoms);
  ring_list rl = {NULL, NULL, 0, 0, 0, NULL};
  PyObject *coords = NULL, *rings = NULL, *features = NULL, *result = NULL;
  const npy_intp fdim = (npy_intp)n + 1;
  features = PyArray_EMPTY(1, &fdim, NPY_UINT64, 0);
  if (geoms == NULL || features == NULL) {
    if (geoms == NULL) PyErr_NoMemory();
    goto done;
  }
  /* every GEOSGeometry pointer first, so that no Python code runs during the walk and the copy;
   * seq holds the geometries, and so their GEOS geometries, until the end */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    if (o == Py_None) continue;
    PyObject *ptr = PyObject_GetAttrString(o, "_geom");
    if (ptr == NULL) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a %s, not a shapely geometry or None", i,
                   Py_TYPE(o)->tp_name);
      goto done;
    }
    geoms[i] = ptr == Py_None ? NULL : PyLong_AsVoidPtr(ptr); /* None or 0: no GEOS geometry, no rings */
    Py_DECREF(ptr);
    if (PyErr_Occurred()) goto done;
  }
  uint64_t *fo = (uint64_t *)PyArray_DATA((PyArrayObject *)features);
  fo[0] = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    int wrong = -1;
    if (geoms[i] != NULL && geos_feature(&api, geoms[i], &rl, &wrong) < 0) {
      if (PyErr_Occurred()) goto done;
      const char *name = geos_type_name(wrong);
      if (rl.failed != NULL)
        PyErr_Format(PyExc_ValueError, "PolygonLayer: feature %zd: GEOS could not read it (%s failed)", i, rl.failed);
      else if (name != NULL)
        PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a %s, not a Polygon or MultiPolygon", i, name);
      else
        PyErr_Format(PyExc_TypeError, "PolygonLayer: feature %zd is a GEOS type %d, not a Polygon or MultiPolygon", i,
                     wrong);
      goto done;
    }
    fo[i + 1] = (uint64_t)rl.n;
  }
  const npy_intp cdims[2] = {(npy_intp)rl.points, 2}, rdim = (npy_intp)rl.n + 1;
  coords = PyArray_EMPTY(2, cdims, NPY_FLOAT64, 0);
  rings = PyArray_EMPTY(1, &rdim, NPY_UINT64, 0);
  if (coords == NULL || rings == NULL) goto done;
  double *xy = (double *)PyArray_DATA((PyArrayObject *)coords);
  uint64_t *ro = (uint64_t *)PyArray_DATA((PyArrayObject *)rings);
  ro[0] = 0;
  for (size_t r = 0; r < rl.n; r++) {
    if (rl.size[r] > 0 && api.coord_seq_copy(api.handle, rl.seq[r], xy + 2 * ro[r], 0, 0) == 0) {
      Py_ssize_t f = 0; /* the feature holding ring r, for the message */
      while (fo[f + 1] <= r) f++;
      PyErr_Format(PyExc_ValueError, "PolygonLayer: feature %zd: GEOS could not read it "
                   "(GEOSCoordSeq_copyToBuffer failed)", f);
      goto done;
    }
    ro[r + 1] = ro[r] + rl.size[r];
  }
  result = PyTuple_Pack(3, coords, rings, features);
done:
  PyMem_Free(geoms);
  PyMem_Free(rl.seq);
  PyMem_Free(rl.size);
  Py_XDECREF(coords);
  Py_XDECREF(rings);
  Py_XDECREF(features);
  Py_DECREF(seq);
  return result;
}
