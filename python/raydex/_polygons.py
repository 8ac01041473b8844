"""Polygon layers from shapely, GeoPandas and WKB, and raydex.sjoin, a drop-in for geopandas.sjoin.

Written in Python over the extension's PolygonLayer.from_arrays, join and pip. shapely and
geopandas are imported only when a function here needs them. Shapely 2's vectorized functions
(get_parts, get_rings, get_coordinates) are used where present; shapely 1.8's (Debian
bookworm's) geometries are read by the extension through the GEOS C API of shapely's own libgeos_c
(python/src/wkb.c), or where it cannot, their WKB parsed there as from_wkb's input is (no shapely).
"""
import warnings

import numpy as np

from . import _raydex

__all__ = ["PolygonLayer", "sjoin"]


def _shapely():
    try:
        import shapely
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("raydex: this needs shapely (Debian: python3-shapely; pip: shapely)") from e
    return shapely


def _shapely2(shapely):
    return int(shapely.__version__.split(".")[0]) >= 2


def _geometry_array(geoms):
    """A 1-D object array of shapely geometries (None allowed) from a list, an array, a GeoSeries
    or a GeometryArray."""
    if hasattr(geoms, "geometry") and hasattr(geoms, "columns"):  # a GeoDataFrame
        geoms = geoms.geometry
    if hasattr(geoms, "values") and hasattr(geoms, "crs"):  # a GeoSeries
        geoms = geoms.values
    from shapely.geometry.base import BaseGeometry

    if isinstance(geoms, BaseGeometry):  # one geometry
        geoms = [geoms]
    geoms = list(geoms)
    out = np.empty(len(geoms), dtype=object)
    for i, g in enumerate(geoms):  # element by element: shapely 1.8 multi-geometries are sequences
        out[i] = g
    return out


def _is_missing(g):
    return g is None or (isinstance(g, float) and np.isnan(g)) or g.is_empty


def _polygon_arrays(geoms):
    """(coords (n, 2) float64, ring_offsets uint64, feature_offsets uint64) of Polygon and
    MultiPolygon geometries; None and empty geometries become features without rings."""
    shapely = _shapely()
    geoms = _geometry_array(geoms)
    n = len(geoms)
    if _shapely2(shapely) and n > 0:
        missing = shapely.is_missing(geoms)
        types = shapely.get_type_id(geoms)
        ok = missing | shapely.is_empty(geoms) | (types == 3) | (types == 6)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise TypeError(f"PolygonLayer: feature {i} is a {geoms[i].geom_type}, not a Polygon or "
                            "MultiPolygon")
        parts, part_feature = shapely.get_parts(geoms, return_index=True)
        keep = ~shapely.is_empty(parts)
        parts, part_feature = parts[keep], part_feature[keep]
        rings, ring_part = shapely.get_rings(parts, return_index=True)
        coords, vertex_ring = shapely.get_coordinates(rings, return_index=True)
        ring_sizes = np.bincount(vertex_ring, minlength=len(rings)).astype(np.uint64)
        rings_per_feature = np.bincount(part_feature[ring_part], minlength=n).astype(np.uint64)
        ring_offsets = np.zeros(len(rings) + 1, dtype=np.uint64)
        np.cumsum(ring_sizes, out=ring_offsets[1:])
        feature_offsets = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(rings_per_feature, out=feature_offsets[1:])
        return np.ascontiguousarray(coords, dtype=np.float64), ring_offsets, feature_offsets
    # shapely 1.8: the geometries walked in C through GEOS's C API (python/src/wkb.c), one GEOS
    # call per ring, rather than a shapely object per ring and its coordinate sequence; where the
    # extension or GEOS (< 3.10) lacks that, each geometry's WKB parsed in C
    api = _geos_api()
    if api is not None:
        from shapely import wkb as shapely_wkb

        try:
            from shapely.geometry.proxy import CachingGeometryProxy
        except ImportError:  # pragma: no cover - another shapely layout
            CachingGeometryProxy = ()
        present = []
        for g in geoms:
            if g is None or (isinstance(g, float) and np.isnan(g)):
                g = None
            elif isinstance(g, CachingGeometryProxy):
                # an adapter (asPolygon, asShape) remakes its GEOS geometry on each access: a copy
                g = None if g.is_empty else shapely_wkb.loads(g.wkb)
            present.append(g)
        return _raydex._geos_polygon_arrays(present, api)
    return _wkb_arrays([None if _is_missing(g) else g.wkb for g in geoms])


_GEOS_FUNCTIONS = ("GEOSGeomTypeId_r", "GEOSisEmpty_r", "GEOSGetNumGeometries_r", "GEOSGetGeometryN_r",
                   "GEOSGetExteriorRing_r", "GEOSGetNumInteriorRings_r", "GEOSGetInteriorRingN_r",
                   "GEOSGeom_getCoordSeq_r", "GEOSCoordSeq_getSize_r", "GEOSCoordSeq_copyToBuffer_r")
_geos_api_found = []


def _geos_api():
    """The api tuple of _raydex._geos_polygon_arrays (python/src/wkb.h): shapely 1.8's GEOS
    context handle and the addresses of the functions its ctypes library resolved, so the GEOS
    that made the geometries reads them; None where the extension lacks the function or that
    GEOS lacks one (GEOSCoordSeq_copyToBuffer_r came in GEOS 3.10). Looked up once."""
    if not _geos_api_found:
        api = None
        if hasattr(_raydex, "_geos_polygon_arrays"):
            try:
                import ctypes

                from shapely.geos import lgeos

                api = (int(lgeos.geos_handle),) + tuple(
                    ctypes.cast(getattr(lgeos._lgeos, name), ctypes.c_void_p).value for name in _GEOS_FUNCTIONS)
                if not all(api):
                    api = None
            except (ImportError, AttributeError, TypeError):  # another shapely layout, an older GEOS
                api = None
        _geos_api_found.append(api)
    return _geos_api_found[0]


def _wkb_arrays(blobs):
    """(coords, ring_offsets, feature_offsets) of WKB Polygons and MultiPolygons (None: a feature
    without rings), parsed in C (src/wkb.c) without shapely."""
    return _raydex._wkb_polygon_arrays(blobs)


class PolygonLayer(_raydex.PolygonLayer):
    """A layer of polygon features (Polygon or MultiPolygon, holes allowed); feature i is the i-th
    input geometry, and None or empty geometries are features that hold no point.

    >>> import numpy as np, raydex
    >>> coords = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1], [3, 1], [3, 3], [1, 3]], float)
    >>> layer = raydex.PolygonLayer.from_arrays(coords, np.array([0, 4, 8], np.uint64),
    ...                                         np.array([0, 1, 2], np.uint64))
    >>> len(layer), layer.describe()["n_rings"]
    (2, 2)
    """

    __slots__ = ()

    @classmethod
    def from_shapely(cls, geoms, backend="auto", *, context=None):
        """A layer from shapely Polygons/MultiPolygons (a list, an object array or a GeoSeries);
        None and empty geometries keep their ids and hold no point. Coordinates are float64."""
        coords, rings, features = _polygon_arrays(geoms)
        return cls.from_arrays(coords, rings, features, backend, context=context)

    @classmethod
    def from_geopandas(cls, gdf, backend="auto", *, context=None):
        """A layer from a GeoDataFrame's (or GeoSeries's) active geometry column, row i being
        feature i (the frame's index is not used)."""
        return cls.from_shapely(_geometry_array(gdf), backend, context=context)

    @classmethod
    def from_wkb(cls, wkbs, backend="auto", *, context=None):
        """A layer from a sequence of WKB bytes (None allowed) of Polygons/MultiPolygons (ISO or
        EWKB; Z and M dropped), parsed in C: shapely is not needed."""
        coords, rings, features = _wkb_arrays(list(wkbs))
        return cls.from_arrays(coords, rings, features, backend, context=context)


# ------------------------------------------------------------------------------------------------
# sjoin
# ------------------------------------------------------------------------------------------------

_GEOPANDAS_PREDICATES = ("intersects", "contains", "within", "touches", "crosses", "overlaps",
                         "covers", "covered_by", "contains_properly")


def _kind(geoms, side):
    """'polygons' or 'points' for a column whose present geometries are all of that family (an
    all-missing column is 'polygons'); anything else is NotImplementedError."""
    shapely = _shapely()
    if _shapely2(shapely):
        present = geoms[~(shapely.is_missing(geoms) | shapely.is_empty(geoms))]
        _, first = np.unique(shapely.get_type_id(present), return_index=True)
        types = {present[i].geom_type for i in first}
    else:
        types = {g.geom_type for g in geoms if not _is_missing(g)}
    if types <= {"Polygon", "MultiPolygon"}:
        return "polygons"
    if types == {"Point"}:
        return "points"
    raise NotImplementedError(
        f"raydex.sjoin: the {side} frame holds {', '.join(sorted(types))} geometries; raydex joins "
        "Polygon/MultiPolygon layers with each other or with Point layers (use geopandas.sjoin for "
        "other geometry types)")


def _points_xy(geoms):
    """(positions of the present points, their (n, 2) float64 coordinates)."""
    shapely = _shapely()
    if _shapely2(shapely):
        present = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
        xy = shapely.get_coordinates(geoms[present])  # one coordinate per point
        return np.flatnonzero(present).astype(np.int64), np.ascontiguousarray(xy, dtype=np.float64)
    pos = np.array([i for i, g in enumerate(geoms) if not _is_missing(g)], dtype=np.int64)
    xy = np.array([(geoms[i].x, geoms[i].y) for i in pos], dtype=np.float64).reshape(-1, 2)
    return pos, xy


def _pip_pairs(poly_geoms, point_geoms, backend, context):
    """(point position, polygon position) pairs with the point in the closed polygon, sorted by
    point then polygon."""
    layer = PolygonLayer.from_shapely(poly_geoms, backend, context=context)
    pos, xy = _points_xy(point_geoms)
    with layer:
        offsets, features = _raydex.pip(layer, xy)
    counts = np.diff(offsets.astype(np.int64))
    return np.repeat(pos, counts), features.astype(np.int64)


def _interior_only(polys, points, poly_idx, point_idx):
    """Keep the candidate pairs whose point lies in the polygon's interior, off its boundary (the
    OGC contains/within of a polygon and a point), decided by shapely (GEOS) on the candidates
    only."""
    if len(poly_idx) == 0:
        return np.ones(0, dtype=bool)
    shapely = _shapely()
    if _shapely2(shapely):
        return shapely.contains(polys[poly_idx], points[point_idx])
    return np.fromiter((polys[a].contains(points[b]) for a, b in zip(poly_idx, point_idx)), dtype=bool,
                       count=len(poly_idx))


def _sort_pairs(left, right):
    order = np.lexsort((right, left))
    return left[order], right[order]


def _indices(left_geoms, right_geoms, predicate, backend, context):
    """(l, r) positions of the pairs satisfying predicate(left, right), sorted by (l, r)."""
    lk, rk = _kind(left_geoms, "left"), _kind(right_geoms, "right")
    if lk == "polygons" and rk == "polygons":
        lay_l = PolygonLayer.from_shapely(left_geoms, backend, context=context)
        lay_r = PolygonLayer.from_shapely(right_geoms, context=lay_l.context)
        with lay_l, lay_r:
            left, right = _raydex.join(lay_l, lay_r, predicate)
        return np.array(left), np.array(right)  # contiguous copies, sorted by (l, r)
    if lk == "points" and rk == "points":  # a point intersects, contains or is within an equal point
        lpos, lxy = _points_xy(left_geoms)
        rpos, rxy = _points_xy(right_geoms)
        if len(lpos) == 0 or len(rpos) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        with _raydex.PointIndex(rxy, backend=backend, context=context) as pts:
            offsets, ids = pts.match(lxy)
        left = np.repeat(lpos, np.diff(offsets.astype(np.int64)))
        return _sort_pairs(left, rpos[ids.astype(np.int64)])
    if lk == "points":  # points on the left, polygons on the right
        if predicate == "contains":  # a point contains no polygon
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        left, right = _pip_pairs(right_geoms, left_geoms, backend, context)
        if predicate == "within":
            keep = _interior_only(right_geoms, left_geoms, right, left)
            left, right = left[keep], right[keep]
        return left, right
    # polygons on the left, points on the right
    if predicate == "within":  # no polygon lies within a point
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    right, left = _pip_pairs(left_geoms, right_geoms, backend, context)
    if predicate == "contains":
        keep = _interior_only(left_geoms, right_geoms, left, right)
        left, right = left[keep], right[keep]
    return _sort_pairs(left, right)


def _basic_checks(left_df, right_df, how, lsuffix, rsuffix):
    """geopandas 0.12's checks, with its messages."""
    from geopandas import GeoDataFrame

    if not isinstance(left_df, GeoDataFrame):
        raise ValueError("'left_df' should be GeoDataFrame, got {}".format(type(left_df)))
    if not isinstance(right_df, GeoDataFrame):
        raise ValueError("'right_df' should be GeoDataFrame, got {}".format(type(right_df)))
    allowed_hows = ["left", "right", "inner"]
    if how not in allowed_hows:
        raise ValueError('`how` was "{}" but is expected to be in {}'.format(how, allowed_hows))
    try:
        from geopandas.array import _check_crs, _crs_mismatch_warn

        if not _check_crs(left_df, right_df):
            _crs_mismatch_warn(left_df, right_df, stacklevel=5)
    except ImportError:  # pragma: no cover - another geopandas layout
        if left_df.crs != right_df.crs:
            warnings.warn("CRS mismatch between the CRS of left geometries and the CRS of right "
                          "geometries.", UserWarning, stacklevel=4)
    index_left, index_right = "index_{}".format(lsuffix), "index_{}".format(rsuffix)
    if any(left_df.columns.isin([index_left, index_right])) or any(
            right_df.columns.isin([index_left, index_right])):
        raise ValueError("'{0}' and '{1}' cannot be names in the frames being joined".format(
            index_left, index_right))


def _frame_join(join_df, left_df, right_df, how, lsuffix, rsuffix):
    """The frame-level join of geopandas 0.12 (geopandas/tools/sjoin.py, _frame_join), so that the
    columns, their names and dtypes, the index and the row order are geopandas's."""
    def rename_index(df, suffix):
        name = "index_{}".format(suffix)
        df = df.copy(deep=True)
        try:
            old = df.index.name
            df.index = df.index.rename(name)
        except TypeError:  # a MultiIndex
            name = ["index_{}".format(suffix + str(pos)) for pos, _ in enumerate(df.index.names)]
            old = df.index.names
            df.index = df.index.rename(name)
        return df.reset_index(), name, old

    left_df, index_left, left_index_name = rename_index(left_df, lsuffix)
    right_df, index_right, right_index_name = rename_index(right_df, rsuffix)
    suffixes = ("_{}".format(lsuffix), "_{}".format(rsuffix))
    if how in ("inner", "left"):
        join_df = join_df.set_index("_key_left")
        joined = (
            left_df.merge(join_df, left_index=True, right_index=True, how=how)
            .merge(right_df.drop(right_df.geometry.name, axis=1), how=how, left_on="_key_right",
                   right_index=True, suffixes=suffixes)
            .set_index(index_left)
            .drop(["_key_right"], axis=1)
        )
        if isinstance(index_left, list):
            joined.index.names = left_index_name
        else:
            joined.index.name = left_index_name
    else:
        joined = (
            left_df.drop(left_df.geometry.name, axis=1)
            .merge(join_df.merge(right_df, left_on="_key_right", right_index=True, how="right"),
                   left_index=True, right_on="_key_left", how="right", suffixes=suffixes)
            .set_index(index_right)
            .drop(["_key_left", "_key_right"], axis=1)
            .set_geometry(right_df.geometry.name)
        )
        if isinstance(index_right, list):
            joined.index.names = right_index_name
        else:
            joined.index.name = right_index_name
    return joined


def sjoin(left_df, right_df, how="inner", predicate="intersects", lsuffix="left", rsuffix="right", *,
          backend="auto", context=None):
    """A drop-in for geopandas.sjoin (as of GeoPandas 0.12) whose geometric part runs in raydex.

    predicate: 'intersects', 'contains' or 'within' (left <predicate> right), exact (closed
    boundaries as GEOS takes them). The frames' active geometry columns hold Polygons and
    MultiPolygons (joined by raydex.join), or one side Points (point in polygon by raydex.pip;
    for contains/within, whose OGC meaning leaves out points on the polygon's boundary, shapely
    decides the candidate pairs raydex found), or both sides Points (equal points, by
    PointIndex.match). None and empty geometries match nothing. how: 'inner', 'left', 'right'.

    Returns the GeoDataFrame geopandas.sjoin returns: the left rows (how='right': the right rows)
    repeated per match, with the other frame's index in 'index_right' ('index_left') and its
    columns, overlapping names suffixed. Rows come ordered by the left row (how='right': the right
    row), then by the other row; geopandas leaves the order within one row to its spatial
    index, so equal frames may differ only there.

    >>> joined = raydex.sjoin(counties, states, predicate="within")  # doctest: +SKIP
    """
    import pandas as pd

    if predicate not in _GEOPANDAS_PREDICATES and predicate is not None:
        raise ValueError(f"raydex.sjoin: predicate must be one of 'intersects', 'contains', "
                         f"'within' (got {predicate!r})")
    if predicate not in ("intersects", "contains", "within"):
        raise NotImplementedError(f"raydex.sjoin: predicate {predicate!r} is not offered by raydex "
                                  "(it joins by 'intersects', 'contains' and 'within'); use "
                                  "geopandas.sjoin for it")
    _basic_checks(left_df, right_df, how, lsuffix, rsuffix)
    left_geoms = _geometry_array(left_df.geometry)
    right_geoms = _geometry_array(right_df.geometry)
    # geopandas builds its spatial index on the right frame (the left one for 'within') and
    # returns float keys when that index holds no geometry; mirror that so dtypes agree.
    indexed = left_geoms if predicate == "within" else right_geoms
    if not any(not _is_missing(g) for g in indexed):
        indices = pd.DataFrame(columns=["_key_left", "_key_right"], dtype=float)
    else:
        left, right = _indices(left_geoms, right_geoms, predicate, backend, context)
        indices = pd.DataFrame({"_key_left": np.asarray(left, dtype=np.intp),
                                "_key_right": np.asarray(right, dtype=np.intp)})
    return _frame_join(indices, left_df, right_df, how, lsuffix, rsuffix)
