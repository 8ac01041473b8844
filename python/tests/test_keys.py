"""raydex.KeyIndex against numpy references: every kind on every backend present, u32 and u64
keys, random and adversarial inputs (empty, duplicates, 0 and the maximum key), updates,
snapshots, errors carrying the library's message, and lifetimes."""
import gc
import threading

import numpy as np
import pytest

import oracle
import raydex
from conftest import KINDS

DTYPES = [np.uint32, np.uint64]
RANGE_KINDS = [k for k in KINDS if k != "hash"]


def make_keys(rng, dtype, n, adversarial=True):
    """n keys with many duplicates; the adversarial set adds 0, max - 1 and max, twice each."""
    top = np.iinfo(dtype).max
    keys = rng.integers(0, max(n // 3, 1), size=n, dtype=np.uint64).astype(dtype)
    keys = keys * dtype(7919)  # spread out, still with duplicates
    if adversarial and n >= 6:
        keys[:6] = np.array([0, top, top - 1, 0, top, top - 1], dtype=dtype)
        rng.shuffle(keys)
    return keys


def make_queries(rng, keys, dtype, m):
    top = np.iinfo(dtype).max
    hits = rng.choice(keys, size=m // 2) if len(keys) else np.zeros(0, dtype)
    misses = rng.integers(0, top, size=m - len(hits), dtype=np.uint64, endpoint=True).astype(dtype)
    q = np.concatenate([hits, misses, np.array([0, top, top - 1], dtype=dtype)]).astype(dtype)
    rng.shuffle(q)
    return q


def check_csr(got, want):
    assert got[0].dtype == np.uint64 and got[1].dtype == np.uint64
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("row_dtype", [None, np.uint32, np.uint64], ids=["implied", "u32rows", "u64rows"])
def test_queries_match_numpy(context, rng, kind, dtype, row_dtype):
    n = 1500
    keys = make_keys(rng, dtype, n)
    rows = np.arange(n, dtype=np.uint64)
    given = None
    if row_dtype is not None:
        rows = rng.permutation(n).astype(np.uint64) * np.uint64(3)
        rows[rows == 0] = np.iinfo(row_dtype).max - (1 if row_dtype == np.uint64 else 0)  # 2^64-2: the largest row id
        given = rows.astype(row_dtype)
    idx = raydex.KeyIndex(keys, given, kind=kind, context=context)
    assert (idx.kind, idx.dtype, idx.backend, len(idx)) == (kind, np.dtype(dtype), context.backend, n)
    q = make_queries(rng, keys, dtype, 400)
    np.testing.assert_array_equal(idx.lookup(q), oracle.lookup(keys, rows, q))
    out = np.full(len(q), 7, dtype=np.uint64)  # the caller's array, written and returned
    assert idx.lookup(q, out=out) is out
    np.testing.assert_array_equal(out, oracle.lookup(keys, rows, q))
    check_csr(idx.lookup_all(q), oracle.lookup_all(keys, rows, q))
    if kind == "hash":
        with pytest.raises(raydex.UnsupportedError, match="rdx_index_range"):
            idx.range(q[:2], q[:2])
        return
    top = np.iinfo(dtype).max
    lo = rng.integers(0, top, size=100, dtype=np.uint64, endpoint=True).astype(dtype)
    hi = (lo.astype(np.uint64) + rng.integers(0, 2**20, size=100, dtype=np.uint64)).clip(0, top).astype(dtype)
    # adversarial ranges: whole domain, single points at the ends, lo > hi (empty)
    lo = np.concatenate([lo, np.array([0, 0, top, top, 5], dtype=dtype)])
    hi = np.concatenate([hi, np.array([top, 0, top, top - 1, 4], dtype=dtype)])
    want = oracle.key_range(keys, rows, lo, hi)
    check_csr(idx.range(lo, hi), want)
    check_csr(idx.range(np.stack([lo, hi], axis=1)), want)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_index_and_batches(context, kind, dtype):
    empty = np.zeros(0, dtype=dtype)
    idx = raydex.KeyIndex(empty, kind=kind, context=context)
    assert len(idx) == 0
    q = np.array([0, 1, np.iinfo(dtype).max], dtype=dtype)
    np.testing.assert_array_equal(idx.lookup(q), np.full(3, raydex.MISS, dtype=np.uint64))
    check_csr(idx.lookup_all(q), (np.zeros(4, np.uint64), np.zeros(0, np.uint64)))
    assert idx.lookup(empty).shape == (0,)
    check_csr(idx.lookup_all(empty), (np.zeros(1, np.uint64), np.zeros(0, np.uint64)))
    if kind != "hash":
        check_csr(idx.range(q, q), (np.zeros(4, np.uint64), np.zeros(0, np.uint64)))
        check_csr(idx.range(empty, empty), (np.zeros(1, np.uint64), np.zeros(0, np.uint64)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_insert_erase_match_a_model(context, rng, kind, dtype):
    rebuild = kind in ("rx", "cgrx")
    keys = make_keys(rng, dtype, 600)
    rows = np.arange(600, dtype=np.uint64)
    idx = raydex.KeyIndex(keys, kind=kind, context=context)
    if rebuild:
        with pytest.raises(raydex.UnsupportedError, match="rdx_index_insert"):
            idx.insert(keys[:3])
    # implied rows continue from next_row
    add = make_keys(rng, dtype, 200)
    first = idx.next_row
    assert first == 600
    idx.insert(add, rebuild=rebuild)
    keys = np.concatenate([keys, add])
    rows = np.concatenate([rows, np.arange(first, first + 200, dtype=np.uint64)])
    # given rows, u32
    add2 = make_keys(rng, dtype, 50)
    rows2 = rng.integers(0, 2**31, size=50, dtype=np.uint64).astype(np.uint32)
    idx.insert(add2, rows2, rebuild=rebuild)
    keys = np.concatenate([keys, add2])
    rows = np.concatenate([rows, rows2.astype(np.uint64)])
    assert len(idx) == len(keys)
    gone = np.concatenate([rng.choice(keys, 40), np.array([1, 2, 3], dtype=dtype)]).astype(dtype)
    n_erased = idx.erase(gone, rebuild=rebuild)
    keep = ~np.isin(keys, gone)
    assert n_erased == int((~keep).sum())
    keys, rows = keys[keep], rows[keep]
    assert len(idx) == len(keys)
    q = make_queries(rng, keys, dtype, 300)
    q = np.concatenate([q, gone]).astype(dtype)
    np.testing.assert_array_equal(idx.lookup(q), oracle.lookup(keys, rows, q))
    check_csr(idx.lookup_all(q), oracle.lookup_all(keys, rows, q))
    assert idx.erase(np.zeros(0, dtype=dtype), rebuild=rebuild) == 0
    idx.insert(np.zeros(0, dtype=dtype), rebuild=rebuild)
    assert len(idx) == len(keys)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_save_load_round_trip(context, rng, tmp_path, kind, dtype):
    keys = make_keys(rng, dtype, 500)
    idx = raydex.KeyIndex(keys, kind=kind, context=context)
    path = tmp_path / f"{kind}.rdx"
    idx.save(path)            # os.PathLike
    again = raydex.load(str(path), context=context)
    assert (again.kind, again.dtype, len(again)) == (kind, np.dtype(dtype), 500)
    q = make_queries(rng, keys, dtype, 200)
    np.testing.assert_array_equal(again.lookup(q), idx.lookup(q))
    check_csr(again.lookup_all(q), idx.lookup_all(q))


def test_load_refuses_bad_files(tmp_path):
    with pytest.raises(raydex.FileError, match="rdx_index_load: cannot open") as e:
        raydex.load(tmp_path / "missing.rdx")
    assert isinstance(e.value, OSError) and e.value.status == "RDX_ERR_IO"
    with pytest.raises(raydex.FileError, match=r"cannot open .*\\xff"):
        raydex.load(bytes(tmp_path) + b"/\xff-not-utf8.rdx")  # the message keeps the bytes, escaped
    bad = tmp_path / "bad.rdx"
    bad.write_bytes(b"not a raydex snapshot at all, just some bytes" * 4)
    with pytest.raises(raydex.ParseError, match="rdx_index_load") as e:
        raydex.load(bad)
    assert e.value.status == "RDX_ERR_PARSE"
    # a truncated real snapshot
    good = tmp_path / "good.rdx"
    raydex.KeyIndex(np.arange(100, dtype=np.uint64)).save(good)
    bad.write_bytes(good.read_bytes()[:-9])
    with pytest.raises(raydex.ParseError):
        raydex.load(bad)


# ---- errors ----

def test_bad_arrays_are_refused_with_what_is_wanted():
    idx = raydex.KeyIndex(np.arange(10, dtype=np.uint64))
    with pytest.raises(ValueError, match=r"queries must be a 1-D array of uint64 .*got int64 with shape \(3,\)"):
        idx.lookup(np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"got float32"):
        idx.lookup(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match=r"got uint32"):
        idx.lookup(np.zeros(3, dtype=np.uint32))
    with pytest.raises(ValueError, match=r"got >uint64"):
        idx.lookup(np.zeros(3, dtype=">u8"))
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        idx.lookup(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="C-contiguous"):
        idx.lookup(np.arange(10, dtype=np.uint64)[::2])
    with pytest.raises(TypeError, match="numpy array"):
        idx.lookup([1, 2, 3])
    with pytest.raises(ValueError, match=r"bounds must be a \(n, 2\) array"):
        idx.range(np.zeros((3, 3), dtype=np.uint64))
    with pytest.raises(ValueError, match="same length"):
        idx.range(np.zeros(3, dtype=np.uint64), np.zeros(2, dtype=np.uint64))
    with pytest.raises(ValueError, match="keys must be a 1-D array of uint32 or uint64; got int64"):
        raydex.KeyIndex(np.arange(10))
    with pytest.raises(ValueError, match="kind must be one of"):
        raydex.KeyIndex(np.arange(10, dtype=np.uint64), kind="trie")
    with pytest.raises(ValueError, match="backend must be"):
        raydex.KeyIndex(np.arange(10, dtype=np.uint64), backend="tpu")
    # read-only and non-owning inputs are fine
    ro = np.arange(10, dtype=np.uint64)
    ro.flags.writeable = False
    assert idx.lookup(ro)[3] == 3


def test_lookup_out_is_refused_unless_it_fits():
    idx = raydex.KeyIndex(np.array([5, 1, 5], dtype=np.uint64), context=raydex.Context(backend="cpu"))
    q = np.array([5, 2], dtype=np.uint64)
    bad = [np.zeros(3, np.uint64), np.zeros(2, np.int64), np.zeros((2, 1), np.uint64), np.zeros(4, np.uint64)[::2],
           [0, 0]]
    ro = np.zeros(2, np.uint64)
    ro.flags.writeable = False
    for out in bad + [ro]:
        with pytest.raises(ValueError, match="out must be a writable C-contiguous 1-D numpy uint64 array of 2"):
            idx.lookup(q, out=out)
    assert idx.lookup(q, out=None).tolist() == [0, raydex.MISS]


def test_library_messages_are_carried():
    keys = np.arange(4, dtype=np.uint64)
    with pytest.raises(raydex.InvalidArgumentError,
                       match=r"rdx_index_build: row_ids\[2\] is 2\^64-1, the miss marker") as e:
        raydex.KeyIndex(keys, np.array([0, 1, 2**64 - 1, 3], dtype=np.uint64))
    assert isinstance(e.value, ValueError) and isinstance(e.value, raydex.Error)
    assert e.value.status == "RDX_ERR_INVALID_ARGUMENT"
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_index_build: .*row_ids"):
        raydex.KeyIndex(keys, np.arange(3, dtype=np.uint64))
    with pytest.raises(raydex.InvalidArgumentError, match="load_factor"):
        raydex.KeyIndex(keys, kind="hash", load_factor=2.0)
    with pytest.raises(raydex.InvalidArgumentError, match="bucket_size"):
        raydex.KeyIndex(keys, kind="cgrx", bucket_size=10**6)
    with pytest.raises(raydex.InvalidArgumentError, match="node_bytes"):
        raydex.KeyIndex(keys, kind="cgrxu", node_bytes=100)
    idx = raydex.KeyIndex(keys, kind="rx")
    with pytest.raises(raydex.UnsupportedError, match="rdx_index_erase") as e:
        idx.erase(keys[:1])
    assert e.value.status == "RDX_ERR_UNSUPPORTED"
    assert len(idx) == 4  # all or nothing
    idx = raydex.KeyIndex(keys)
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_index_insert"):
        idx.insert(keys, np.full(4, 2**64 - 1, dtype=np.uint64))
    assert len(idx) == 4


def test_context_options_and_errors():
    ctx = raydex.Context(backend="cpu", threads=1, memory_limit=0)
    assert ctx.backend == "cpu" and repr(ctx) == "<raydex.Context backend=cpu>"
    with pytest.raises(ValueError):
        raydex.Context(threads=-1)
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_context_set_memory_limit"):
        ctx.set_memory_limit(-1)
    with pytest.raises(TypeError, match="raydex.Context"):
        raydex.KeyIndex(np.arange(3, dtype=np.uint64), context=object())
    with pytest.raises(ValueError, match="differs from the context's backend"):
        raydex.KeyIndex(np.arange(3, dtype=np.uint64), context=ctx, backend="cuda")
    if not raydex.info()["cuda_built"]:
        with pytest.raises(raydex.NoBackendError, match="rdx_context_create") as e:
            raydex.Context(backend="cuda")
        assert isinstance(e.value, raydex.UnsupportedError) and e.value.status == "RDX_ERR_NO_BACKEND"


def test_memory_limit_raises_memory_error():
    ctx = raydex.Context(backend="cpu", memory_limit=1 << 16)
    with pytest.raises(raydex.OutOfMemoryError) as e:
        raydex.KeyIndex(np.arange(1 << 16, dtype=np.uint64), context=ctx)
    assert isinstance(e.value, MemoryError) and e.value.status == "RDX_ERR_HOST_OUT_OF_MEMORY"
    assert str(e.value)  # the library's sentence


# ---- lifetimes ----

def test_index_outlives_its_context_object():
    ctx = raydex.Context(backend="cpu")
    idx = raydex.KeyIndex(np.arange(100, dtype=np.uint32), context=ctx)
    del ctx
    gc.collect()
    assert idx.context.backend == "cpu"
    assert idx.lookup(np.array([5], dtype=np.uint32))[0] == 5


def test_results_outlive_their_index_and_free_their_memory():
    ctx = raydex.Context(backend="cpu")
    idx = raydex.KeyIndex(np.arange(1000, dtype=np.uint64), context=ctx)
    held = ctx.memory()[0]
    offsets, rows = idx.range(np.array([0], dtype=np.uint64), np.array([999], dtype=np.uint64))
    assert ctx.memory()[0] > held  # the result lives in the context's memory account
    idx.close()
    del idx
    gc.collect()
    np.testing.assert_array_equal(rows, np.arange(1000, dtype=np.uint64))
    del offsets
    np.testing.assert_array_equal(rows, np.arange(1000, dtype=np.uint64))
    base = ctx.memory()[0]
    del rows
    assert ctx.memory()[0] < base  # freed once both arrays are gone
    assert ctx.memory()[0] == 0


def test_use_after_close_raises():
    idx = raydex.KeyIndex(np.arange(10, dtype=np.uint64))
    q = np.arange(3, dtype=np.uint64)
    with idx as same:
        assert same is idx and not idx.closed
    assert idx.closed and "closed" in repr(idx)
    idx.close()  # twice is fine
    for call in (lambda: idx.lookup(q), lambda: idx.lookup_all(q), lambda: idx.range(q, q),
                 lambda: idx.insert(q), lambda: idx.erase(q), lambda: idx.save("/tmp/never.rdx"),
                 lambda: len(idx), lambda: idx.memory(), lambda: idx.next_row):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert idx.kind == "sorted" and idx.dtype == np.uint64  # metadata stays readable


def test_input_buffers_are_released():
    import sys
    idx = raydex.KeyIndex(np.arange(10, dtype=np.uint64))
    q = np.arange(5, dtype=np.uint64)
    before = sys.getrefcount(q)
    for _ in range(1000):
        idx.lookup(q)
        idx.lookup_all(q)
        idx.range(q, q)
    with pytest.raises(ValueError):
        idx.lookup(q.astype(np.uint32))
    assert sys.getrefcount(q) == before
    q.resize(7, refcheck=False)  # no buffer export is left behind


def test_threads_share_an_index():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 1 << 20, size=20000, dtype=np.uint64)
    idx = raydex.KeyIndex(keys, kind="sorted")
    want = idx.lookup(keys)
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_array_equal(idx.lookup(keys), want)
                idx.lookup_all(keys[:100])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_module_constants():
    assert raydex.MISS == 2**64 - 1
    assert raydex.__version__ == raydex.info()["version"]
    assert raydex.info()["auto_backend"] in ("cpu", "cuda", "optix")
    assert issubclass(raydex.ParseError, raydex.Error)
    assert issubclass(raydex.OutOfMemoryError, MemoryError)


def test_close_while_other_threads_query():
    """close() from one thread while others query: each call answers or raises ValueError."""
    for _ in range(20):
        idx = raydex.KeyIndex(np.arange(50000, dtype=np.uint64), kind="btree")
        q = np.arange(50000, dtype=np.uint64)
        outcomes = []

        def work():
            try:
                while True:
                    np.testing.assert_array_equal(idx.lookup(q), q)
                    idx.range(q[:10], q[:10] + np.uint64(5))
            except ValueError as e:
                outcomes.append(str(e))

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        idx.close()
        for t in threads:
            t.join()
        assert len(outcomes) == 3 and all("closed" in o for o in outcomes)


def test_no_leaks_over_many_calls():
    """10^4 calls of each kind of query: the context's memory account returns to where it was and
    the process does not grow (results are freed when their arrays go)."""
    ctx = raydex.Context(backend="cpu")
    idx = raydex.KeyIndex(np.arange(1000, dtype=np.uint32), context=ctx)
    q = np.arange(0, 2000, 7, dtype=np.uint32)

    def rss_pages():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    def burst(n):
        for _ in range(n):
            idx.lookup(q)
            idx.lookup_all(q)
            idx.range(q, q + np.uint32(3))

    burst(1000)
    held, rss = ctx.memory()[0], rss_pages()
    burst(10000)
    assert ctx.memory()[0] == held
    assert rss_pages() - rss < 2560  # 10 MiB of 4 KiB pages; a leak of one result per call is far more


def test_calls_release_the_gil():
    """A long scan lookup on another thread leaves this thread running Python meanwhile: the
    longest pause this thread sees is far shorter than the call (holding the GIL, it would be
    about the whole call)."""
    import time
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**63, size=10000, dtype=np.uint64)
    idx = raydex.KeyIndex(keys, kind="scan", context=raydex.Context(backend="cpu", threads=1))
    q = rng.integers(0, 2**63, size=5000, dtype=np.uint64)  # about 0.2 s of scanning
    go, done = threading.Event(), threading.Event()
    took = []

    def work():
        go.wait()  # start once this thread is in its loop below
        t0 = time.perf_counter()
        idx.lookup(q)
        took.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    last = time.perf_counter()
    longest = 0.0
    go.set()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    t.join()
    assert longest < took[0] / 2, (longest, took[0])


def test_memory_reports_bytes():
    idx = raydex.KeyIndex(np.arange(10000, dtype=np.uint64), kind="btree")
    resident, peak = idx.memory()
    assert 0 < resident <= peak
