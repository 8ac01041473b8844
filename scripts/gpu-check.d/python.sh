# scripts/gpu-check.d/python.sh: the Python extension's pytest suite on the GPU (issue 32): its GPU
# entries (CuPy and PyTorch arrays in and out, results staying on the device, pyarrow) skip on
# machines without a GPU. The interpreter is the first on PATH that imports numpy and CuPy or
# PyTorch (the GPU machine's environment), else Debian's /usr/bin/python3. The extension is built
# in place against build-gpu's library. Sourced by scripts/gpu-check.sh (step "python").
py=/usr/bin/python3
for cand in python3 python /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
     "$cand" -c 'import numpy; import importlib.util as u; import sys; sys.exit(not (u.find_spec("cupy") or u.find_spec("torch")))' 2>/dev/null; then
    py=$(command -v "$cand"); break
  fi
done
"$py" -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)
for m in ("cupy", "torch", "pyarrow", "shapely", "geopandas", "pytest"):
    try:
        mod = __import__(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "missing:", type(e).__name__)' > "$OUT/logs/python-env.txt" 2>&1
log "python: $py; $(tr '\n' ' ' < "$OUT/logs/python-env.txt")"
if (cd python && RAYDEX_BUILD_DIR="$root/build-gpu" "$py" setup.py -q build_ext --inplace --force \
      --build-temp "$root/build-gpu/python-temp") > "$OUT/logs/python-build.log" 2>&1; then
  PYTHONPATH=python ${BENCH_TIMEOUT:+timeout $BENCH_TIMEOUT} "$py" -m pytest -q -rs -p no:cacheprovider python/tests \
    > "$OUT/logs/python-tests.log" 2>&1
  log "python tests rc=$?: $(tail -1 "$OUT/logs/python-tests.log")"
  grep -E "FAILED|Error" "$OUT/logs/python-tests.log" | head -20 | tee -a "$OUT/logs/summary.txt"
else
  log "python build FAILED"; tail -20 "$OUT/logs/python-build.log"
fi
