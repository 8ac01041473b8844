/* wkb.h: WKB polygons, and shapely 1.8 polygons, to PolygonLayer.from_arrays's arrays (wkb.c). */
#ifndef RAYDEX_PY_WKB_H
#define RAYDEX_PY_WKB_H

#include <Python.h>

/* _wkb_polygon_arrays(wkbs) -> (coords (n, 2) float64, ring_offsets uint64, feature_offsets
 * uint64) of a sequence of WKB bytes-likes or None; raises ValueError (malformed) or TypeError
 * (not a Polygon or MultiPolygon) naming the feature. */
PyObject *rdx_py_wkb_polygon_arrays(PyObject *self, PyObject *arg);

/* _geos_polygon_arrays(geoms, api) -> the same arrays of a sequence of shapely 1.8 geometries
 * (their `_geom`, a GEOSGeometry *) or None, read through the GEOS C API whose addresses api holds:
 * (context handle, GEOSGeomTypeId_r, GEOSisEmpty_r, GEOSGetNumGeometries_r, GEOSGetGeometryN_r,
 * GEOSGetExteriorRing_r, GEOSGetNumInteriorRings_r, GEOSGetInteriorRingN_r, GEOSGeom_getCoordSeq_r,
 * GEOSCoordSeq_getSize_r, GEOSCoordSeq_copyToBuffer_r), all from the libgeos_c that made the
 * geometries; Z and M dropped; raises TypeError (not a Polygon or MultiPolygon) or ValueError (a
 * GEOS call failed) naming the feature. METH_VARARGS. */
PyObject *rdx_py_geos_polygon_arrays(PyObject *self, PyObject *args);

#endif
