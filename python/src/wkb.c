/*
 * wkb.c: WKB Polygons and MultiPolygons to the arrays PolygonLayer.from_arrays takes, for
 * PolygonLayer.from_wkb and for shapely 1.8 geometries (whose WKB is the fast way out of GEOS).
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
