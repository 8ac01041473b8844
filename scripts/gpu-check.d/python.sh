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

# Benchmarks of issue 32's "Measure" (bench/README.md, "Python binding"), after the tests, each
# bounded to about two minutes here. py_overhead: raydex.KeyIndex.lookup against rdx_index_lookup
# on the same 2^24-key sorted index, 1 to 2^27 lookups (the cpu backend up to 2^24), host arrays on
# the cpu and cuda backends and CuPy arrays on cuda (the device rows assert that nothing is copied
# to the host); py_sjoin: raydex.join (and, where geopandas is importable, raydex.sjoin against
# geopandas.sjoin) on counties ⋈ states and countries-land-10m ⋈ countries-maritime-10m, cpu and
# cuda, from the .rdxp files carried in .cache/maps (a pair whose files are missing is skipped).
if ls python/raydex/_raydex*.so >/dev/null 2>&1; then
  t0=$(date +%s)
  PY_OVH_OUT=$OUT/logs/py_overhead
  REPS=${PY_OVERHEAD_REPS:-5} SIZES=${PY_OVERHEAD_SIZES:-0,4,10,12,14,16,18,20,22,24,26,27} MAX_CPU_LOG2=24 \
    timeout ${PY_BENCH_TIMEOUT:-300} bash bench/py_overhead.sh "$root/build-gpu" "$PY_OVH_OUT" "$py" \
    > "$OUT/logs/py_overhead.txt" 2>&1
  rc=$?
  cp "$PY_OVH_OUT/py_overhead.csv" "$OUT/csv/py_overhead.csv" 2>/dev/null
  echo "\$ bash bench/py_overhead.sh $root/build-gpu $PY_OVH_OUT $py  # rc=$rc" >> "$OUT/logs/commands.txt"
  log "py_overhead rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -c ',ok,' "$OUT/csv/py_overhead.csv" 2>/dev/null || echo 0) ok rows; $(grep -E ',(cuda|cpu),[a-z]+,[0-9]+,1,' "$OUT/csv/py_overhead.csv" 2>/dev/null | cut -d, -f3,4,11,12 | tr '\n' ' ')"
  grep -v -e ',ok,' -e '^date,' "$OUT/csv/py_overhead.csv" 2>/dev/null | head -5 | tee -a "$OUT/logs/summary.txt"

  [ "${PY_SJOIN:-1}" = 0 ] && return 0 # PY_SJOIN=0: the overhead benchmark alone
  t0=$(date +%s)
  for m in us-counties us-states countries-land-10m countries-maritime-10m; do
    # the four .rdxp files (155 MB) pass the carry limit; their .xz (36 MB, scripts/fetch-maps.sh
    # --xz) do not, and are unpacked here when the join step has not done so already
    f=$root/.cache/maps/$m.rdxp
    [ -f "$f" ] || [ ! -f "$root/.cache/maps/xz/$m.rdxp.xz" ] || { xz -dc "$root/.cache/maps/xz/$m.rdxp.xz" > "$f.tmp" && mv "$f.tmp" "$f"; }
    [ -f "$f" ] || log "py_sjoin: $f missing: its pair is skipped"
  done
  echo "\$ PYTHONPATH=python $py bench/py_sjoin.py --maps $root/.cache/maps --gpd-timeout 60 --header" >> "$OUT/logs/commands.txt"
  PYTHONPATH=python timeout ${PY_BENCH_TIMEOUT:-300} "$py" bench/py_sjoin.py --maps "$root/.cache/maps" --gpd-timeout 60 --header \
    > "$OUT/csv/py_sjoin.csv" 2> "$OUT/logs/py_sjoin.log"
  rc=$?
  log "py_sjoin rc=$rc in $(( $(date +%s) - t0 )) s: $(awk -F, 'NR > 1 { printf "%s/%s/%s/%s %ss %s; ", $3, $8, $9, $10, $13, $18 }' "$OUT/csv/py_sjoin.csv")"
fi
