"""raydex: batched key lookups, range scans, spatial point queries and exact polygon joins over
numpy arrays (and shapely/GeoPandas geometries), on the CPU or an NVIDIA GPU, through raydex's C
library (include/raydex.h).

    >>> import numpy as np, raydex
    >>> idx = raydex.KeyIndex(np.array([42, 7, 42, 1000, 0], dtype=np.uint32))
    >>> idx.lookup(np.array([42, 5, 0], dtype=np.uint32))
    array([                   0, 18446744073709551615,                    4], dtype=uint64)
    >>> offsets, rows = idx.range(np.array([7], dtype=np.uint32), np.array([42], dtype=np.uint32))
    >>> rows
    array([0, 1, 2], dtype=uint64)
"""
from ._raydex import (
    MISS,
    Context,
    DeviceArray,
    DeviceError,
    Error,
    FileError,
    InternalError,
    InvalidArgumentError,
    KeyIndex,
    ListArray,
    MisuseError,
    NoBackendError,
    OutOfMemoryError,
    ParseError,
    PointIndex,
    UnsupportedError,
    __version__,
    info,
    join,
    load,
    load_points,
    pip,
)
from ._polygons import PolygonLayer, sjoin

__all__ = [
    "MISS", "Context", "KeyIndex", "PointIndex", "PolygonLayer", "DeviceArray", "ListArray", "info",
    "load", "load_points",
    "join", "pip", "sjoin",
    "Error", "InvalidArgumentError", "UnsupportedError", "NoBackendError", "OutOfMemoryError",
    "DeviceError", "FileError", "ParseError", "MisuseError", "InternalError", "__version__",
]
