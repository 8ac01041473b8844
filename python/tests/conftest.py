"""Shared fixtures: the backends every test runs on (GPU ones skipped, with the reason, where
this machine has none) and a printed, replayable seed (RAYDEX_TEST_SEED)."""
import os

import numpy as np
import pytest

import raydex

BACKENDS = ["cpu", "cuda", "optix"]
KINDS = ["scan", "sorted", "btree", "hash", "rx", "cgrx", "cgrxu"]


def _no_backend_reason(backend):
    info = raydex.info()
    if backend == "cpu":
        return None
    if not info["cuda_built"]:
        return f"no GPU: raydex was built without CUDA, so the {backend} backend is absent"
    if info["n_gpus"] == 0:
        return f"no GPU: no CUDA device visible for the {backend} backend"
    if backend == "optix" and not (info["optix_built"] and info["optix_usable"]):
        return "no GPU: OptiX is not built or does not initialise here"
    return None


@pytest.fixture(params=BACKENDS)
def context(request):
    """A fresh raydex.Context for each backend, or a skip saying why there is none."""
    reason = _no_backend_reason(request.param)
    if reason is not None:
        pytest.skip(reason)
    try:
        return raydex.Context(backend=request.param)
    except raydex.NoBackendError as e:
        pytest.skip(f"no GPU: {e}")


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("RAYDEX_TEST_SEED", "0")) or (abs(hash(request.node.nodeid)) % (2**31))
    print(f"seed {seed} (replay with RAYDEX_TEST_SEED={seed})")
    return np.random.default_rng(seed)
