#!/usr/bin/env python3
"""bench/py_overhead.py: the Python side of issue 32's per-call overhead measurement.

raydex.KeyIndex(keys, kind="sorted").lookup(queries) with the keys, queries, sizes, blocks, warm-up
and reps of bench/py_overhead.c (whose header says how they are generated and timed); the two
CSVs are joined by bench/py_overhead.sh. Cases:
  cpu:host     CPU backend, numpy queries, numpy answers
  cuda:host    GPU backend, numpy queries (copied in by the call), numpy answers
  cuda:device  GPU backend, CuPy queries through DLPack, answers a raydex.DeviceArray
A GPU case skips (a line on stderr) when raydex has no CUDA backend or GPU here, or CuPy is absent.

py_us: the median over reps of (block time / calls) for a block of `calls` calls of
`idx.lookup(q)` (the answer dropped at once, as the C harness frees it), the garbage collector
off while timing (as timeit does). py_out_us: the same with `idx.lookup(q, out=into)`, answers
written into one array made before timing (numpy, or CuPy on the device), as c_us's are.
py_export_us (device rows): `cupy.from_dlpack(idx.lookup(q))` dropped at once, the answers handed
to CuPy as a user would, so each call also frees its answers (rdx_free waits for the device). check: every answer of one more call compared with the
expected rows (ok / WRONG). inputs: the C harness's checksum of the keys and the batch, so the
join can tell that both programs looked up the same things. nocopy (device rows): what proves the device path copies nothing to
the host: the queries' __dlpack_device__ is (2, dev); the answer is a DeviceArray with
__dlpack_device__ (2, dev), its data_ptr is device memory (cudaPointerGetAttributes type 2) and
cupy.from_dlpack of it views that same pointer; and the call succeeds with the context's memory
limit set to what it holds plus the answers plus 1 MiB, so it cannot have made a device copy of
queries larger than that slack (m >= 2^20; "limit-oom" where it needed more, which proves
nothing either way). The library does not report the query pointer it
reads, so that one is not observable from Python; the device rows' times beside the host rows'
show no transfer either. Any failed assertion stops the script with exit status 1.
"""
import argparse
import datetime
import gc
import sys
import time

import numpy as np

import raydex

M64 = np.uint64


def fmix32(h):
    h = h.astype(np.uint32, copy=True)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def splitmix64(z):
    z = z + M64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> M64(30))) * M64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> M64(27))) * M64(0x94D049BB133111EB)
    return z ^ (z >> M64(31))


def inputs(n_keys, max_m, seed):
    """The C harness's keys, queries and expected rows (bench/py_overhead.c)."""
    with np.errstate(over="ignore"):
        i = np.arange(n_keys, dtype=np.uint64)
        keys = fmix32((i + M64(seed) * M64(0x9E3779B9)) & M64(0xFFFFFFFF))
        want = splitmix64((M64(seed) << M64(40)) | np.arange(max_m, dtype=np.uint64)) % M64(n_keys)
    return keys, keys[want], want


def parse_count(s):
    return 1 << int(s[2:]) if s.startswith("2^") else int(s)


def time_block(call, calls, warmup, reps):
    t = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(warmup):
            for _ in range(calls):
                call()
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            t.append((time.perf_counter() - t0) * 1e6 / calls)
    finally:
        if gc_was:
            gc.enable()
    return float(np.median(t))


def skip(case, why):
    print(f"py_overhead.py: skip {case}: {why}", file=sys.stderr)


def gpu_reason():
    info = raydex.info()
    if not info.get("cuda_built"):
        return "raydex was built without CUDA"
    if not info.get("n_gpus"):
        return "no CUDA device visible"
    return None


def prove_no_copy(idx, ctx, q, m, cp):
    """The device-path assertions (module docstring); returns the nocopy column's text."""
    dev = q.__dlpack_device__()
    assert dev[0] == 2, f"queries not CUDA memory: {dev}"
    out = idx.lookup(q)
    assert isinstance(out, raydex.DeviceArray), type(out)
    assert out.__dlpack_device__() == (2, dev[1]), out.__dlpack_device__()
    attrs = cp.cuda.runtime.pointerGetAttributes(out.data_ptr)
    kind = getattr(attrs, "type", getattr(attrs, "memoryType", None))  # cudaMemoryTypeDevice = 2
    assert kind == 2, f"answers at {out.data_ptr:#x} are not device memory (type {kind})"
    view = cp.from_dlpack(out)
    assert view.data.ptr == out.data_ptr and view.size == m
    del view, out
    text = "dlpack;devptr"
    if m >= 1 << 20:
        held = ctx.memory()[0]
        ctx.set_memory_limit(held + 8 * m + (1 << 20))
        try:
            out = idx.lookup(q)
            del out
            text += ";limit"
        except raydex.OutOfMemoryError as e:  # scratch past the 1 MiB slack: says so, proves nothing
            text += ";limit-oom"
            print(f"py_overhead.py: m={m}: the call needs more than the answers + 1 MiB: {e}", file=sys.stderr)
        finally:
            ctx.set_memory_limit(0)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="cpu:host,cuda:host,cuda:device")
    ap.add_argument("--keys", default="2^24")
    ap.add_argument("--sizes", default="10,12,14,16,18,20,22,24", help="log2 of the batch sizes")
    ap.add_argument("--max-cpu-log2", type=int, default=24)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--block-queries", default="2^20")
    ap.add_argument("--machine", default="unknown")
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    n_keys, block = parse_count(a.keys), parse_count(a.block_queries)
    log2s = [int(s) for s in a.sizes.split(",")]
    keys, queries, want = inputs(n_keys, 1 << max(log2s), a.seed)
    keys = keys.astype(np.uint32)
    queries = np.ascontiguousarray(queries, dtype=np.uint32)
    key_sum = int(keys.astype(np.uint64).sum())

    if a.header:
        print("date,machine,backend,where,n_keys,m,calls,reps,py_us,check,nocopy,inputs,py_out_us,py_export_us")
    for case in a.cases.split(","):
        backend, where = case.split(":")
        cp = None
        if backend != "cpu":
            why = gpu_reason()
            if why:
                skip(case, why)
                continue
        if where == "device":
            if backend == "cpu":
                skip(case, "no device on cpu")
                continue
            try:
                import cupy as cp
            except Exception as e:  # noqa: BLE001 - any import failure means no CuPy here
                skip(case, f"no CuPy ({type(e).__name__}: {e})")
                continue
        try:
            ctx = raydex.Context(backend=backend)
        except raydex.NoBackendError as e:
            skip(case, str(e))
            continue
        idx = raydex.KeyIndex(keys, kind="sorted", context=ctx)
        case_max = min(max(log2s), a.max_cpu_log2) if backend == "cpu" else max(log2s)
        q_all = queries[: 1 << case_max]
        if cp is not None:
            q_all = cp.asarray(q_all)
        for lg in log2s:
            if lg > case_max:
                continue
            m = 1 << lg
            calls = max(1, block // m)
            q = q_all[:m]
            nocopy = ""
            if cp is not None:
                nocopy = prove_no_copy(idx, ctx, q, m, cp)
            py_us = time_block(lambda: idx.lookup(q), calls, a.warmup, a.reps)
            into = cp.empty(m, dtype=cp.uint64) if cp is not None else np.empty(m, dtype=np.uint64)
            py_out_us = time_block(lambda: idx.lookup(q, out=into), calls, a.warmup, a.reps)
            ok_out = np.array_equal(cp.asnumpy(into) if cp is not None else into, want[:m])
            py_export_us = ""
            if cp is not None:
                py_export_us = f"{time_block(lambda: cp.from_dlpack(idx.lookup(q)), calls, a.warmup, a.reps):.3f}"
            out = idx.lookup(q)
            got = cp.asnumpy(cp.from_dlpack(out)) if cp is not None else out
            ok = np.array_equal(got, want[:m]) and ok_out
            in_sum = (key_sum + (int(queries[:m].astype(np.uint64).sum()) << 32)) % (1 << 64)
            print(f"{a.date},{a.machine},{backend},{where},{n_keys},{m},{calls},{a.reps},{py_us:.3f},"
                  f"{'ok' if ok else 'WRONG'},{nocopy},{in_sum},{py_out_us:.3f},{py_export_us}", flush=True)
            del out, got, into
        idx.close()
        del ctx
    return 0


if __name__ == "__main__":
    sys.exit(main())
