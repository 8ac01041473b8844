"""DLPack in and out: host tensors through the protocol (numpy behind a wrapper that hides its
buffer protocol, and hand-made capsules built with ctypes for the versioned protocol, strides,
byte_offset and the refusals), capsule consumption and deleters, and the GPU entries (CuPy,
PyTorch), which check that results stay on the device and are never copied."""
import ctypes
import gc

import numpy as np
import pytest

import raydex

from conftest import _no_backend_reason

# ---- a host producer that only speaks DLPack -------------------------------------------------


class DLOnly:
    """A numpy array seen only through __dlpack__ / __dlpack_device__ (numpy itself has the
    buffer protocol, which raydex reads first). Records what the consumer asked for."""

    def __init__(self, a):
        self.a = a
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        try:
            return self.a.__dlpack__(**kwargs)
        except TypeError:
            if "max_version" not in kwargs:
                raise
            raise TypeError("this numpy predates max_version") from None

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def cpu():
    return raydex.Context(backend="cpu")


def test_dlpack_host_keys_equal_numpy_path(rng):
    keys = rng.integers(0, 50, 500, dtype=np.uint64)
    q = rng.integers(0, 60, 300, dtype=np.uint64)
    bounds = np.sort(rng.integers(0, 60, (40, 2), dtype=np.uint64), axis=1)
    ctx = cpu()
    by_np = raydex.KeyIndex(keys, context=ctx)
    by_dl = raydex.KeyIndex(DLOnly(keys), rows=DLOnly(np.arange(500, dtype=np.uint64)), context=ctx)
    assert np.array_equal(by_dl.lookup(DLOnly(q)), by_np.lookup(q))
    for got, want in zip(by_dl.lookup_all(DLOnly(q)), by_np.lookup_all(q)):
        assert np.array_equal(got, want)
    for got, want in zip(by_dl.range(DLOnly(bounds)), by_np.range(bounds)):
        assert np.array_equal(got, want)
    lo, hi = np.ascontiguousarray(bounds[:, 0]), np.ascontiguousarray(bounds[:, 1])
    for got, want in zip(by_dl.range(DLOnly(lo), DLOnly(hi)), by_np.range(bounds)):
        assert np.array_equal(got, want)
    by_dl.insert(DLOnly(np.array([1000], np.uint64)), DLOnly(np.array([7], np.uint64)))
    assert by_dl.lookup(np.array([1000], np.uint64)).tolist() == [7]
    assert by_dl.erase(DLOnly(np.array([1000], np.uint64))) == 1


def test_dlpack_host_points_and_polygons_equal_numpy_path(rng):
    xy = rng.random((300, 2))
    boxes = np.sort(rng.random((20, 4)).reshape(20, 2, 2), axis=1).transpose(0, 2, 1).reshape(20, 4)
    boxes = np.ascontiguousarray(boxes[:, [0, 2, 1, 3]])
    ctx = cpu()
    by_np = raydex.PointIndex(xy, context=ctx)
    by_dl = raydex.PointIndex(DLOnly(xy), context=ctx)
    for got, want in zip(by_dl.window(DLOnly(boxes)), by_np.window(boxes)):
        assert np.array_equal(got, want)
    for got, want in zip(by_dl.knn(DLOnly(xy[:5].copy()), 3), by_np.knn(xy[:5].copy(), 3)):
        assert np.array_equal(got, want)
    assert by_dl.insert(DLOnly(np.array([[0.5, 0.5]]))) == 300
    by_dl.move(DLOnly(np.array([300], np.uint64)), DLOnly(np.array([[0.25, 0.25]])))
    by_dl.erase(DLOnly(np.array([0], np.uint64)))
    assert len(by_dl) == 300

    coords = np.array([[0, 0], [4, 0], [4, 4], [0, 4]], np.float64)
    layer = raydex.PolygonLayer.from_arrays(DLOnly(coords), DLOnly(np.array([0, 4], np.uint64)),
                                            DLOnly(np.array([0, 1], np.uint64)), context=ctx)
    pts = np.array([[1.0, 1.0], [5.0, 5.0]])
    offsets, features = raydex.pip(layer, DLOnly(pts))
    assert offsets.tolist() == [0, 1, 1] and features.tolist() == [0]
    assert raydex.pip(layer, DLOnly(pts), first=True).tolist() == [0, -1]


def test_dlpack_protocol_arguments():
    """CPU tensors are asked for with stream=None and max_version=(1, 0), then without
    max_version when the producer predates it (numpy < 2.1 raises TypeError)."""
    q = DLOnly(np.array([1, 2], np.uint32))
    raydex.KeyIndex(np.array([2, 1], np.uint32), context=cpu()).lookup(q)
    assert q.calls[0] == {"stream": None, "max_version": (1, 0)}
    if len(q.calls) == 2:
        assert q.calls[1] == {"stream": None}


def test_dlpack_round_trip_without_copies():
    keys = np.array([42, 7, 42], np.uint64)
    idx = raydex.KeyIndex(DLOnly(keys), context=cpu())
    rows = idx.lookup(DLOnly(np.array([42, 7], np.uint64)))
    back = np.from_dlpack(rows)  # host results are numpy arrays, DLPack producers themselves
    assert np.shares_memory(back, rows) and back.tolist() == [0, 1]
    offsets, ids = idx.lookup_all(np.from_dlpack(np.array([42], np.uint64)))
    assert np.shares_memory(np.from_dlpack(ids), ids) and ids.tolist() == [0, 2]


# ---- hand-made capsules (ctypes) -------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
PyCapsule_GetName.restype = ctypes.c_char_p
PyCapsule_GetName.argtypes = [ctypes.py_object]
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Handmade:
    """A DLPack producer whose capsule is built by hand: any device, dtype, shape, strides,
    byte_offset and version, over `data` (a numpy array kept alive here, or a fake address for
    device tensors raydex must refuse before reading). Counts deleter calls; the capsules have
    no destructor, so a capsule raydex did not consume would never be deleted."""

    def __init__(self, data, shape, dtype=(1, 64, 1), strides=None, byte_offset=0, device=(1, 0),
                 versioned=True, major=1, reuse=False):
        self.data = data
        self.deleted = 0
        self.capsules = []
        self.device = device
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
        self._deleter = DELETER(self._delete)
        ptr = data.ctypes.data if isinstance(data, np.ndarray) else data
        t = DLTensor(ptr, DLDevice(*device), len(shape), DLDataType(*dtype), self._shape,
                     self._strides if strides is not None else None, byte_offset)
        if versioned:
            self.managed = DLManagedTensorVersioned(DLPackVersion(major, 0), None, self._deleter, 0, t)
        else:
            self.managed = DLManagedTensor(t, None, self._deleter)
        self.name = b"dltensor_versioned" if versioned else b"dltensor"
        self.reuse = reuse

    def _delete(self, ptr):
        assert ptr == ctypes.addressof(self.managed)
        self.deleted += 1

    def __dlpack__(self, stream=None, max_version=None):
        self.stream = stream
        if self.reuse and self.capsules:
            return self.capsules[0]
        cap = PyCapsule_New(ctypes.addressof(self.managed), self.name, None)
        self.capsules.append(cap)
        return cap

    def __dlpack_device__(self):
        return self.device


def test_dlpack_versioned_capsule_consumed_and_deleted_once():
    keys = np.array([5, 3, 9], np.uint64)
    h = Handmade(keys, (3,))
    idx = raydex.KeyIndex(np.array([3, 5], np.uint64), context=cpu())
    assert idx.lookup(h).tolist() == [1, 0, raydex.MISS]
    assert h.deleted == 1
    assert PyCapsule_GetName(h.capsules[0]) == b"used_dltensor_versioned"


def test_dlpack_unversioned_capsule_renamed():
    h = Handmade(np.array([3, 5], np.uint64), (2,), versioned=False)
    idx = raydex.KeyIndex(np.array([3, 5], np.uint64), context=cpu())
    assert idx.lookup(h).tolist() == [0, 1]
    assert h.deleted == 1 and PyCapsule_GetName(h.capsules[0]) == b"used_dltensor"


def test_dlpack_capsule_consumed_only_once():
    h = Handmade(np.array([3], np.uint64), (1,), reuse=True)
    idx = raydex.KeyIndex(np.array([3], np.uint64), context=cpu())
    assert idx.lookup(h).tolist() == [0]
    with pytest.raises(TypeError, match="not an unused 'dltensor' capsule"):
        idx.lookup(h)  # the same, already used capsule again
    assert h.deleted == 1


def test_dlpack_byte_offset_and_compact_strides():
    base = np.array([0, 0, 7, 42], np.uint64)
    idx = raydex.KeyIndex(np.array([42, 7], np.uint64), context=cpu())
    assert idx.lookup(Handmade(base, (2,), byte_offset=16)).tolist() == [1, 0]
    assert idx.lookup(Handmade(base, (2,), strides=(1,), byte_offset=16)).tolist() == [1, 0]
    # extent-1 dimensions may carry any stride
    xy = np.array([[0.5, 0.5]])
    pts = raydex.PointIndex(np.array([[0.5, 0.5], [1.0, 1.0]]), context=cpu())
    h = Handmade(xy, (1, 2), dtype=(2, 64, 1), strides=(99, 1))
    assert pts.match(h)[1].tolist() == [0]


def test_dlpack_refusals_delete_the_tensor():
    idx = raydex.KeyIndex(np.array([3, 5], np.uint64), context=cpu())
    base = np.arange(8, dtype=np.uint64)
    cases = [
        (Handmade(base, (4,), strides=(2,)), ValueError, r"C-contiguous; got shape \(4,\) with strides \(2,\)"),
        (Handmade(base, (2, 2), strides=(1, 2)), ValueError, "C-contiguous"),
        (Handmade(base.view(np.int32), (4,), dtype=(0, 32, 1)), ValueError, "got int32 with shape"),
        (Handmade(base, (4,), dtype=(1, 32, 2)), ValueError, "x2 lanes"),
        (Handmade(base.view(np.float64), (8,), dtype=(2, 64, 1)), ValueError, "got float64"),
        (Handmade(base, (2, 4)), ValueError, r"1-D array .* shape \(2, 4\)"),
        (Handmade(base, (2,), byte_offset=3), ValueError, "not aligned"),
    ]
    for h, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            idx.lookup(h)
        assert h.deleted == 1, pattern
    # a version raydex cannot read is left unconsumed, for the capsule's own destructor to delete
    h = Handmade(base, (2,), major=2)
    with pytest.raises(BufferError, match="DLPack 2.0"):
        idx.lookup(h)
    assert h.deleted == 0 and PyCapsule_GetName(h.capsules[0]) == b"dltensor_versioned"


def test_dlpack_device_memory_needs_a_gpu_context():
    """A CUDA tensor (a fake address: raydex refuses it before anything reads it) on a CPU
    context is refused naming the argument, and the tensor is still deleted."""
    idx = raydex.KeyIndex(np.array([3, 5], np.uint64), context=cpu())
    h = Handmade(0xDEAD000, (4,), device=(2, 0))
    with pytest.raises(raydex.InvalidArgumentError, match=r"queries is CUDA device memory .* backend is cpu") as e:
        idx.lookup(h)
    assert isinstance(e.value, ValueError) and isinstance(e.value, raydex.Error)
    assert h.deleted == 1 and h.stream == 1  # CUDA tensors are asked for on the legacy default stream
    with pytest.raises(raydex.InvalidArgumentError, match="keys is CUDA device memory"):
        raydex.KeyIndex(Handmade(0xDEAD000, (4,), device=(2, 0)), context=cpu())
    with pytest.raises(raydex.InvalidArgumentError, match="xy is CUDA device memory"):
        raydex.PointIndex(Handmade(0xDEAD000, (4, 2), dtype=(2, 64, 1), device=(2, 0)), context=cpu())
    h = Handmade(0xDEAD000, (4,), device=(10, 0))  # ROCm
    with pytest.raises(raydex.InvalidArgumentError, match="DLPack device type 10"):
        idx.lookup(h)
    assert h.deleted == 0  # refused from __dlpack_device__, before any capsule was asked for


def test_dlpack_not_an_array():
    idx = raydex.KeyIndex(np.array([3, 5], np.uint64), context=cpu())
    with pytest.raises(TypeError, match="DLPack tensor"):
        idx.lookup([3, 5])


# ---- GPU entries: CuPy and PyTorch; results stay on the device ---------------------------------


def gpu_context():
    reason = _no_backend_reason("cuda")
    if reason is not None:
        pytest.skip(reason)
    return raydex.Context(backend="cuda")


def on_device(result):
    assert isinstance(result, raydex.DeviceArray), type(result)
    assert result.__dlpack_device__()[0] == 2  # kDLCUDA: never copied to the host


def test_cupy_keys_in_device_results_out(rng):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    ctx = gpu_context()
    keys = rng.integers(0, 1000, 5000, dtype=np.uint64)
    q = rng.integers(0, 1100, 2000, dtype=np.uint64)
    bounds = np.sort(rng.integers(0, 1100, (50, 2), dtype=np.uint64), axis=1)
    host = raydex.KeyIndex(keys, context=cpu())
    idx = raydex.KeyIndex(cp.asarray(keys), context=ctx)
    rows = idx.lookup(cp.asarray(q))
    on_device(rows)
    c = cp.from_dlpack(rows)
    assert c.data.ptr == rows.data_ptr  # a view of raydex's memory, not a copy
    assert np.array_equal(cp.asnumpy(c), host.lookup(q))
    into = cp.zeros(len(q), dtype=cp.uint64)  # out=: written on the device, returned as given
    assert idx.lookup(cp.asarray(q), out=into) is into
    assert np.array_equal(cp.asnumpy(into), host.lookup(q))
    with pytest.raises(ValueError, match="in device memory, as the queries are"):
        idx.lookup(cp.asarray(q), out=np.zeros(len(q), np.uint64))
    offsets, ids = idx.range(cp.asarray(bounds))
    on_device(offsets), on_device(ids)
    want = host.range(bounds)
    assert np.array_equal(cp.asnumpy(cp.from_dlpack(offsets)), want[0])
    assert np.array_equal(cp.asnumpy(cp.from_dlpack(ids)), want[1])
    offsets, ids = idx.lookup_all(cp.asarray(q))
    on_device(ids)
    assert np.array_equal(cp.asnumpy(cp.from_dlpack(ids)), host.lookup_all(q)[1])
    with pytest.raises(ValueError, match=r"one \(m, 2\) bounds array"):
        idx.range(cp.asarray(bounds[:, 0].copy()), cp.asarray(bounds[:, 1].copy()))
    with pytest.raises(raydex.InvalidArgumentError, match="backend is cpu"):
        host.lookup(cp.asarray(q))
    with pytest.raises(ValueError, match="C-contiguous"):
        idx.lookup(cp.asarray(q)[::2])


def test_cupy_result_outlives_index_and_context(rng):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    ctx = gpu_context()
    idx = raydex.KeyIndex(cp.asarray(np.array([7, 3, 7], np.uint64)), context=ctx)
    rows = idx.lookup(cp.asarray(np.array([3, 7, 4], np.uint64)))
    c = cp.from_dlpack(rows)
    del idx, ctx, rows
    gc.collect()
    assert cp.asnumpy(c).tolist() == [1, 0, raydex.MISS]


def test_cupy_spare_blocks_only_for_results_that_never_left(rng):
    # a small device result nobody exported is kept for the next call; an exported one is freed
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    ctx = gpu_context()
    keys = rng.integers(0, 1000, 5000, dtype=np.uint64)
    q = rng.integers(0, 1100, 2000, dtype=np.uint64)
    want = raydex.KeyIndex(keys, context=cpu()).lookup(q)
    idx = raydex.KeyIndex(cp.asarray(keys), context=ctx)
    cq = cp.asarray(q)
    base = ctx.memory()[0]
    rows = idx.lookup(cq)
    del rows  # never exported: a spare
    spare = ctx.memory()[0]
    assert spare >= base + 8 * len(q)
    for _ in range(3):  # each call writes into the spare, exported or not
        rows = idx.lookup(cq)
        assert ctx.memory()[0] == spare
        c = cp.from_dlpack(rows)
        assert np.array_equal(cp.asnumpy(c), want)
        del rows, c  # exported: freed, not kept
        gc.collect()
        assert ctx.memory()[0] == base
    rows = idx.lookup(cq)
    assert rows.data_ptr != 0  # reading the address counts as exporting it
    del rows
    assert ctx.memory()[0] == base
    big = cp.asarray(rng.integers(0, 1100, 1 << 18, dtype=np.uint64))  # 2 MiB of answers: never kept
    rows = idx.lookup(big)
    del rows
    assert ctx.memory()[0] == base


def test_cupy_points_pip_and_arrow_device(rng):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    ctx = gpu_context()
    xy = rng.random((400, 2))
    boxes = np.array([[0.1, 0.1, 0.5, 0.5], [0.0, 0.0, 1.0, 1.0]])
    host = raydex.PointIndex(xy, context=cpu())
    pts = raydex.PointIndex(cp.asarray(xy), context=ctx)
    lists = pts.window(cp.asarray(boxes), as_arrow=True)
    on_device(lists.offsets), on_device(lists.values)
    assert np.array_equal(cp.asnumpy(cp.from_dlpack(lists.values)), host.window(boxes)[1])
    with pytest.raises(ValueError, match="__arrow_c_device_array__"):
        lists.__arrow_c_array__()
    schema, array = lists.__arrow_c_device_array__()
    assert PyCapsule_GetName(array) == b"arrow_device_array"
    # ArrowDeviceArray: the 80-byte ArrowArray, then int64 device_id and int32 device_type
    device = ctypes.cast(PyCapsule_GetPointer(array, b"arrow_device_array") + 80,
                         ctypes.POINTER(ctypes.c_int64 * 2))[0]
    assert device[0] == 0 and (device[1] & 0xFFFFFFFF) == 2  # CUDA device 0, kDLCUDA
    layer = raydex.PolygonLayer.from_arrays(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float64),
                                            np.array([0, 4], np.uint64), np.array([0, 1], np.uint64),
                                            context=ctx)
    first = raydex.pip(layer, cp.asarray(xy), first=True)
    on_device(first)
    assert cp.asnumpy(cp.from_dlpack(first)).tolist() == [0] * 400


def torch_cuda():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    ctx = gpu_context()
    if not torch.cuda.is_available():
        pytest.skip("no GPU: PyTorch sees no CUDA device")
    return torch, ctx


def test_torch_points_in_device_results_out():
    torch, ctx = torch_cuda()
    xy = torch.rand((300, 2), dtype=torch.float64, device="cuda")
    pts = raydex.PointIndex(xy, context=ctx)
    offsets, ids = pts.knn(xy[:10].contiguous(), 4)
    on_device(offsets), on_device(ids)
    t = torch.from_dlpack(ids)
    assert t.is_cuda and t.data_ptr() == ids.data_ptr  # a view of raydex's memory, not a copy
    want = raydex.PointIndex(xy.cpu().numpy(), context=cpu()).knn(xy[:10].cpu().numpy(), 4)
    assert np.array_equal(torch.from_dlpack(offsets).cpu().numpy(), want[0])
    assert np.array_equal(t.cpu().numpy(), want[1])
    del pts, ctx, ids, offsets
    gc.collect()
    assert np.array_equal(t.cpu().numpy(), want[1])  # the tensor outlived its index and context
    with pytest.raises(ValueError, match="C-contiguous"):
        raydex.PointIndex(xy.t().contiguous().t(), context=raydex.Context(backend="cuda"))


def test_torch_keys_in_device_results_out(rng):
    torch, ctx = torch_cuda()
    if not hasattr(torch, "uint64"):
        pytest.skip("PyTorch < 2.3 has no uint64 tensors")
    keys = rng.integers(0, 2**62, 3000, dtype=np.int64).astype(np.uint64)
    q = np.concatenate([keys[:500], rng.integers(0, 2**62, 500, dtype=np.int64).astype(np.uint64)])
    host = raydex.KeyIndex(keys, context=cpu())
    idx = raydex.KeyIndex(torch.from_numpy(keys).cuda(), context=ctx)
    rows = idx.lookup(torch.from_numpy(q).cuda())
    on_device(rows)
    t = torch.from_dlpack(rows)
    assert t.is_cuda and t.data_ptr() == rows.data_ptr
    assert np.array_equal(t.cpu().numpy(), host.lookup(q))
