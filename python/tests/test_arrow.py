"""The Arrow PyCapsule interface: arrays and streams in (1-D primitive, no nulls), CSR results
out as large_list<uint64> (raydex.ListArray). The capsules are built and read with ctypes, so
nothing here needs pyarrow; the pyarrow entries at the end skip when it is absent."""
import ctypes
import gc

import numpy as np
import pytest

import raydex


class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


class ArrowArrayStream(ctypes.Structure):
    pass


SCHEMA_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))
ARRAY_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))
ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))), ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", SCHEMA_RELEASE), ("private_data", ctypes.c_void_p)]
ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64), ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))), ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ARRAY_RELEASE), ("private_data", ctypes.c_void_p)]
GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowArrayStream), ctypes.POINTER(ArrowSchema))
GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowArrayStream), ctypes.POINTER(ArrowArray))
GET_ERROR = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.POINTER(ArrowArrayStream))
STREAM_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArrayStream))
ArrowArrayStream._fields_ = [("get_schema", GET_SCHEMA), ("get_next", GET_NEXT), ("get_last_error", GET_ERROR),
                             ("release", STREAM_RELEASE), ("private_data", ctypes.c_void_p)]
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
PyCapsule_GetName.restype = ctypes.c_char_p
PyCapsule_GetName.argtypes = [ctypes.py_object]

FORMATS = {np.dtype(np.uint32): b"I", np.dtype(np.uint64): b"L", np.dtype(np.int32): b"i",
           np.dtype(np.int64): b"l", np.dtype(np.float32): b"f", np.dtype(np.float64): b"g"}


class Releases:
    """Counts release callbacks; a released struct gets release = NULL, as the spec asks."""

    def __init__(self):
        self.count = 0
        self.schema = SCHEMA_RELEASE(self._schema)
        self.array = ARRAY_RELEASE(self._array)

    def _schema(self, p):
        self.count += 1
        p.contents.release = SCHEMA_RELEASE()

    def _array(self, p):
        self.count += 1
        p.contents.release = ARRAY_RELEASE()


def primitive(values, releases, validity=None, null_count=0, offset=0, length=None, fmt=None):
    """An ArrowSchema and ArrowArray (ctypes) over a numpy array, kept alive by the returned dict."""
    keep = {"values": values, "validity": validity}
    keep["buffers"] = (ctypes.c_void_p * 2)(validity.ctypes.data if validity is not None else None,
                                            values.ctypes.data if len(values) else None)
    keep["schema"] = ArrowSchema(fmt or FORMATS[values.dtype], b"", None, 2, 0, None, None, releases.schema, None)
    keep["array"] = ArrowArray(len(values) - offset if length is None else length, null_count, offset, 2, 0,
                               keep["buffers"], None, None, releases.array, None)
    return keep


def capsule(struct, name, destructors):
    """A capsule over a ctypes struct whose destructor releases it when still live, as a producer's
    does: raydex consumes the capsules and leaves the release to them."""
    def destroy(_):
        if struct.release:
            struct.release(ctypes.pointer(struct))
    d = CAPSULE_DESTRUCTOR(destroy)
    destructors.append(d)
    return PyCapsule_New(ctypes.addressof(struct), name, ctypes.cast(d, ctypes.c_void_p))


class ArrowProducer:
    """An object with __arrow_c_array__ only (no buffer protocol, no DLPack)."""

    def __init__(self, values, **kwargs):
        self.releases = Releases()
        self.keep = primitive(values, self.releases, **kwargs)
        self.destructors = []

    def __arrow_c_array__(self, requested_schema=None):
        assert requested_schema is None
        return (capsule(self.keep["schema"], b"arrow_schema", self.destructors),
                capsule(self.keep["array"], b"arrow_array", self.destructors))


class StreamProducer:
    """An object with __arrow_c_stream__ only, over numpy chunks."""

    def __init__(self, chunks, fmt=None):
        self.releases = Releases()
        self.chunks = [primitive(c, self.releases) for c in chunks]
        self.fmt = fmt or FORMATS[chunks[0].dtype]
        self.destructors = []
        self.next = 0

    def _get_schema(self, stream, out):
        s = ArrowSchema(self.fmt, b"", None, 2, 0, None, None, self.releases.schema, None)
        ctypes.memmove(out, ctypes.addressof(s), ctypes.sizeof(s))
        return 0

    def _get_next(self, stream, out):
        if self.next == len(self.chunks):
            ctypes.memset(out, 0, ctypes.sizeof(ArrowArray))  # release NULL: the end
        else:
            a = self.chunks[self.next]["array"]
            ctypes.memmove(out, ctypes.addressof(a), ctypes.sizeof(a))  # moved: ours is spent
            a.release = ARRAY_RELEASE()
            self.next += 1
        return 0

    def _release(self, stream):
        self.stream_released = True
        stream.contents.release = STREAM_RELEASE()

    def __arrow_c_stream__(self, requested_schema=None):
        self.callbacks = (GET_SCHEMA(self._get_schema), GET_NEXT(self._get_next),
                          GET_ERROR(lambda s: b"no error"), STREAM_RELEASE(self._release))
        self.stream = ArrowArrayStream(*self.callbacks, None)
        return capsule(self.stream, b"arrow_array_stream", self.destructors)


def cpu():
    return raydex.Context(backend="cpu")


# ---- in ----------------------------------------------------------------------------------------


def test_arrow_array_in_equals_numpy_path(rng):
    keys = rng.integers(0, 100, 400, dtype=np.uint64)
    q = rng.integers(0, 120, 200, dtype=np.uint64)
    ctx = cpu()
    by_np = raydex.KeyIndex(keys, context=ctx)
    src = ArrowProducer(keys)
    by_arrow = raydex.KeyIndex(src, rows=ArrowProducer(np.arange(400, dtype=np.uint32)), context=ctx)
    assert src.releases.count == 2  # the schema and the array, released once raydex let go
    qa = ArrowProducer(q)
    assert np.array_equal(by_arrow.lookup(qa), by_np.lookup(q))
    assert qa.releases.count == 2
    for got, want in zip(by_arrow.lookup_all(ArrowProducer(q)), by_np.lookup_all(q)):
        assert np.array_equal(got, want)
    assert by_arrow.erase(ArrowProducer(keys[:1].copy())) == by_np.erase(keys[:1].copy())
    pts = raydex.PointIndex(rng.random((10, 2)), context=ctx)
    pts.erase(ArrowProducer(np.array([1, 2], np.uint64)))
    assert len(pts) == 8


def test_arrow_offset_and_unknown_null_count():
    values = np.array([99, 99, 42, 7], np.uint64)
    idx = raydex.KeyIndex(np.array([42, 7], np.uint64), context=cpu())
    assert idx.lookup(ArrowProducer(values, offset=2)).tolist() == [0, 1]
    all_valid = np.array([0xFF], np.uint8)
    assert idx.lookup(ArrowProducer(values, validity=all_valid, null_count=-1, offset=2)).tolist() == [0, 1]
    assert idx.lookup(ArrowProducer(np.array([], np.uint64))).tolist() == []


def test_arrow_refusals():
    idx = raydex.KeyIndex(np.array([42, 7], np.uint64), context=cpu())
    values = np.array([42, 7, 5, 6], np.uint64)
    cases = [
        (ArrowProducer(values, validity=np.array([0b1101], np.uint8), null_count=1), "1 null values"),
        (ArrowProducer(values, validity=np.array([0b1011], np.uint8), null_count=-1), "1 null values"),
        (ArrowProducer(values.astype(np.int32)), "got int32 with shape"),
        (ArrowProducer(values.astype(np.uint32)), r"uint64 \(the index's key dtype\); got uint32"),
        (ArrowProducer(values, fmt=b"u"), "got Arrow format 'u'"),
    ]
    for producer, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            idx.lookup(producer)
        assert producer.releases.count == 2, pattern
    # (n, 2) arguments cannot come as 1-D Arrow arrays
    with pytest.raises(ValueError, match=r"xy must be a \(n, 2\) array"):
        raydex.PointIndex(ArrowProducer(np.arange(4.0)), context=cpu())


def test_arrow_stream_in():
    idx = raydex.KeyIndex(np.arange(10, dtype=np.uint64)[::-1].copy(), context=cpu())
    one = StreamProducer([np.array([9, 0], np.uint64)])
    assert idx.lookup(one).tolist() == [0, 9]
    assert one.releases.count == 2 and one.stream_released  # the chunk, the schema; then the stream
    several = StreamProducer([np.array([9], np.uint64), np.array([], np.uint64), np.array([1, 2], np.uint64)])
    assert idx.lookup(several).tolist() == [0, 8, 7]  # concatenated, empty chunks skipped
    assert several.releases.count == 4
    empty = StreamProducer([np.array([], np.uint64)])
    assert idx.lookup(empty).tolist() == []
    with pytest.raises(ValueError, match="null values"):
        bad = StreamProducer([np.array([1], np.uint64)])
        bad.chunks[0]["array"].null_count = 1
        idx.lookup(bad)


# ---- out ---------------------------------------------------------------------------------------


def read_list(schema_cap, array_cap):
    """(format, child format, child name, offsets, values) read from the exported capsules."""
    s = ctypes.cast(PyCapsule_GetPointer(schema_cap, b"arrow_schema"), ctypes.POINTER(ArrowSchema)).contents
    a = ctypes.cast(PyCapsule_GetPointer(array_cap, b"arrow_array"), ctypes.POINTER(ArrowArray)).contents
    assert s.n_children == 1 and a.n_children == 1 and a.n_buffers == 2 and a.null_count == 0
    assert not a.buffers[0] and a.offset == 0
    child = a.children[0].contents
    assert child.n_buffers == 2 and child.null_count == 0 and not child.buffers[0]
    offsets = np.ctypeslib.as_array(ctypes.cast(a.buffers[1], ctypes.POINTER(ctypes.c_int64)),
                                    shape=(a.length + 1,)).copy()
    values = np.ctypeslib.as_array(ctypes.cast(child.buffers[1], ctypes.POINTER(ctypes.c_uint64)),
                                   shape=(child.length,)).copy() if child.length else np.array([], np.uint64)
    return s.format, s.children[0].contents.format, s.children[0].contents.name, offsets, values


def test_csr_as_arrow_is_the_tuple_without_copies(rng):
    keys = rng.integers(0, 30, 200, dtype=np.uint64)
    bounds = np.sort(rng.integers(0, 40, (25, 2), dtype=np.uint64), axis=1)
    idx = raydex.KeyIndex(keys, context=cpu())
    offsets, rows = idx.range(bounds)
    lists = idx.range(bounds, as_arrow=True)
    assert isinstance(lists, raydex.ListArray) and len(lists) == 25
    assert np.array_equal(lists.offsets, offsets) and np.array_equal(lists.values, rows)
    schema, array = lists.__arrow_c_array__()
    fmt, child_fmt, child_name, got_offsets, got_values = read_list(schema, array)
    assert (fmt, child_fmt, child_name) == (b"+L", b"L", b"item")
    assert np.array_equal(got_offsets, offsets.astype(np.int64)) and np.array_equal(got_values, rows)
    a = ctypes.cast(PyCapsule_GetPointer(array, b"arrow_array"), ctypes.POINTER(ArrowArray)).contents
    assert a.buffers[1] == lists.offsets.ctypes.data  # raydex's buffer, not a copy
    assert a.children[0].contents.buffers[1] == lists.values.ctypes.data
    assert lists.__arrow_c_array__(requested_schema=None)  # the request may be declined; None is fine


def test_every_csr_method_takes_as_arrow():
    ctx = cpu()
    idx = raydex.KeyIndex(np.array([1, 2, 1], np.uint32), context=ctx)
    q = np.array([1, 5], np.uint32)
    assert read_list(*idx.lookup_all(q, as_arrow=True).__arrow_c_array__())[4].tolist() == [0, 2]
    assert read_list(*idx.range(q, q, as_arrow=True).__arrow_c_array__())[3].tolist() == [0, 2, 2]
    pts = raydex.PointIndex(np.array([[0.0, 0.0], [1.0, 1.0]]), context=ctx)
    xy = np.array([[1.0, 1.0]])
    for lists in (pts.window(np.array([[0.5, 0.5, 2.0, 2.0]]), as_arrow=True),
                  pts.within(np.array([[1.0, 1.0, 0.1]]), as_arrow=True), pts.match(xy, as_arrow=True),
                  pts.knn(xy, 1, as_arrow=True)):
        assert read_list(*lists.__arrow_c_array__())[4].tolist() == [1]
    layer = raydex.PolygonLayer.from_arrays(np.array([[0, 0], [2, 0], [2, 2], [0, 2]], np.float64),
                                            np.array([0, 4], np.uint64), np.array([0, 1], np.uint64), context=ctx)
    assert read_list(*raydex.pip(layer, xy, as_arrow=True).__arrow_c_array__())[4].tolist() == [0]
    with pytest.raises(ValueError, match="first=False"):
        raydex.pip(layer, xy, first=True, as_arrow=True)


def test_empty_results_export_valid_buffers():
    idx = raydex.KeyIndex(np.array([1], np.uint64), context=cpu())
    fmt, _, _, offsets, values = read_list(*idx.lookup_all(np.array([], np.uint64), as_arrow=True)
                                           .__arrow_c_array__())
    assert offsets.tolist() == [0] and values.tolist() == []
    schema, array = idx.lookup_all(np.array([5], np.uint64), as_arrow=True).__arrow_c_array__()
    a = ctypes.cast(PyCapsule_GetPointer(array, b"arrow_array"), ctypes.POINTER(ArrowArray)).contents
    assert a.children[0].contents.length == 0 and a.children[0].contents.buffers[1]  # not NULL


def test_exported_capsules_outlive_index_and_context():
    ctx = cpu()
    idx = raydex.KeyIndex(np.array([3, 1, 3], np.uint64), context=ctx)
    schema, array = idx.lookup_all(np.array([3, 1], np.uint64), as_arrow=True).__arrow_c_array__()
    del idx, ctx
    gc.collect()
    assert read_list(schema, array)[3:5][1].tolist() == [0, 2, 1]


def test_release_callbacks_free_the_result_once_everything_lets_go():
    ctx = cpu()
    idx = raydex.KeyIndex(np.arange(1000, dtype=np.uint64), context=ctx)
    base = ctx.memory()[0]
    lists = idx.range(np.array([[0, 999]], np.uint64), as_arrow=True)
    held = ctx.memory()[0]
    assert held > base
    schema, array = lists.__arrow_c_array__()
    # a consumer moves the array and its child out of the capsule (the spec allows both) ...
    a = ctypes.cast(PyCapsule_GetPointer(array, b"arrow_array"), ctypes.POINTER(ArrowArray)).contents
    moved = ArrowArray()
    ctypes.memmove(ctypes.addressof(moved), ctypes.addressof(a), ctypes.sizeof(a))
    a.release = ARRAY_RELEASE()
    child = ArrowArray()
    ctypes.memmove(ctypes.addressof(child), ctypes.addressof(moved.children[0].contents), ctypes.sizeof(child))
    moved.children[0].contents.release = ARRAY_RELEASE()
    del lists, schema, array, idx
    gc.collect()
    result_bytes = held - base
    assert ctx.memory()[0] == result_bytes  # the index is gone; the moved structs keep the result
    moved.release(ctypes.pointer(moved))  # ... releases the parent first ...
    assert not moved.release
    values = np.ctypeslib.as_array(ctypes.cast(child.buffers[1], ctypes.POINTER(ctypes.c_uint64)), shape=(1000,))
    assert values[999] == 999 and ctx.memory()[0] == result_bytes  # the child alone still keeps it
    child.release(ctypes.pointer(child))  # ... and the child last
    assert not child.release
    assert ctx.memory()[0] == 0


def test_unconsumed_capsules_release_on_their_own():
    ctx = cpu()
    idx = raydex.KeyIndex(np.arange(100, dtype=np.uint64), context=ctx)
    base = ctx.memory()[0]
    pair = idx.range(np.array([[0, 99]], np.uint64), as_arrow=True).__arrow_c_array__()
    assert ctx.memory()[0] > base
    del pair
    gc.collect()
    assert ctx.memory()[0] == base


def test_host_device_array_capsule():
    idx = raydex.KeyIndex(np.array([4, 4], np.uint64), context=cpu())
    schema, array = idx.lookup_all(np.array([4], np.uint64), as_arrow=True).__arrow_c_device_array__()
    assert PyCapsule_GetName(array) == b"arrow_device_array"
    device = ctypes.cast(PyCapsule_GetPointer(array, b"arrow_device_array") + ctypes.sizeof(ArrowArray),
                         ctypes.POINTER(ctypes.c_int64 * 2))[0]
    assert (device[1] & 0xFFFFFFFF) == 1  # kDLCPU
    with pytest.raises(NotImplementedError):
        idx.lookup_all(np.array([4], np.uint64), as_arrow=True).__arrow_c_device_array__(future_option=1)


# ---- pyarrow (skipped where it is not installed) -------------------------------------------------


def test_pyarrow_reads_the_list_without_copies(rng):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    keys = rng.integers(0, 20, 100, dtype=np.uint64)
    idx = raydex.KeyIndex(keys, context=cpu())
    q = np.array([3, 50, 7], np.uint64)
    lists = idx.lookup_all(q, as_arrow=True)
    arr = pa.array(lists)
    assert arr.type == pa.large_list(pa.uint64())
    offsets, rows = idx.lookup_all(q)
    assert arr.to_pylist() == [rows[offsets[i]:offsets[i + 1]].tolist() for i in range(3)]
    assert arr.offsets.buffers()[1].address == lists.offsets.ctypes.data
    assert arr.values.buffers()[1].address == lists.values.ctypes.data or len(rows) == 0
    del lists, idx
    gc.collect()
    assert arr.to_pylist() == [rows[offsets[i]:offsets[i + 1]].tolist() for i in range(3)]


def test_pyarrow_arrays_in(rng):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    keys = rng.integers(0, 100, 300, dtype=np.uint64)
    q = rng.integers(0, 120, 50, dtype=np.uint64)
    ctx = cpu()
    want = raydex.KeyIndex(keys, context=ctx).lookup(q)
    idx = raydex.KeyIndex(pa.array(keys), context=ctx)
    assert np.array_equal(idx.lookup(pa.array(q)), want)
    assert np.array_equal(idx.lookup(pa.array(np.concatenate([np.zeros(1, q.dtype), q]))[1:]), want)  # a slice: offset 1
    chunked = pa.chunked_array([q[:20], q[20:]])
    if hasattr(chunked, "__arrow_c_stream__"):
        assert np.array_equal(idx.lookup(chunked), want)
    with pytest.raises(ValueError, match="1 null values"):
        idx.lookup(pa.array([1, None, 3], pa.uint64()))
    with pytest.raises(ValueError, match="got int32"):
        idx.lookup(pa.array([1, 2], pa.int32()))
