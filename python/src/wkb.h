/* wkb.h: WKB polygons to PolygonLayer.from_arrays's arrays (wkb.c). */
#ifndef RAYDEX_PY_WKB_H
#define RAYDEX_PY_WKB_H

#include <Python.h>

/* _wkb_polygon_arrays(wkbs) -> (coords (n, 2) float64, ring_offsets uint64, feature_offsets
 * uint64) of a sequence of WKB bytes-likes or None; raises ValueError (malformed) or TypeError
 * (not a Polygon or MultiPolygon) naming the feature. */
PyObject *rdx_py_wkb_polygon_arrays(PyObject *self, PyObject *arg);

#endif
