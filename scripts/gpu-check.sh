#!/usr/bin/env bash
# One GPU run: build with CUDA (and OptiX when .optix/include or $RAYDEX_OPTIX_DIR has the
# headers), run every GPU test entry, then the benchmarks named on the command line. Writes logs
# and CSV under $OUT (default ./gpu-out) and packs them into $OUT/results.tar.gz, since the device
# tool returns at most 8 files.
#
#   scripts/gpu-check.sh [tests] [ceiling] [segsort] [merge] [keys-point] [keys-range] [keys-cpu] [peers] [rt] [spatial]
#                        [knn] [sort] [profile] [sanitize] [update] [join] [host] [gpus]
#                        (rt .. gpus: scripts/gpu-check.d/<step>.sh)
#   (no argument = tests only)
#
# Every benchmark row carries a check column (answers compared with the oracle or a second
# backend in the same run). See bench/README.md for what each experiment reproduces.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT/logs" "$OUT/csv"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests)
has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
log() { echo "[gpu-check $(date +%H:%M:%S)] $*" | tee -a "$OUT/logs/summary.txt"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/logs/nvidia-smi.csv" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '-')
gpu=${gpu:-unknown-gpu}
log "GPU: $gpu; steps: ${steps[*]}"

optix_dir=${RAYDEX_OPTIX_DIR:-}
[ -z "$optix_dir" ] && [ -f "$root/.optix/include/optix.h" ] && optix_dir=$root/.optix
jobs=$(nproc)
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DRAYDEX_CUDA=ON ${optix_dir:+-DRAYDEX_OPTIX_DIR=$optix_dir} \
  > "$OUT/logs/configure.log" 2>&1 || { log "configure FAILED"; tail -30 "$OUT/logs/configure.log"; }
cmake --build build-gpu -j "$jobs" -- -k > "$OUT/logs/build.log" 2>&1 || { log "build FAILED"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60; }
log "build done in $(( $(date +%s) - t0 )) s"
RDX=$root/build-gpu/raydex
"$RDX" info | tee "$OUT/logs/info.txt"

if has ceiling; then
  # the physical limits: copy bandwidth and random reads of 8..128 bytes (bench/ceiling.cu)
  nvcc -O3 -arch=sm_90 bench/ceiling.cu -o build-gpu/ceiling && build-gpu/ceiling > "$OUT/csv/ceiling.csv"
  log "ceiling: $(tr '\n' ' ' < "$OUT/csv/ceiling.csv" | cut -c1-400)"
fi

if has segsort; then
  # how fast each query's rows can be sorted (the last step of a range fill): bench/segsort_probe.cu
  nvcc -O3 -arch=sm_90 bench/segsort_probe.cu -o build-gpu/segsort_probe && build-gpu/segsort_probe > "$OUT/csv/segsort.csv"
  log "segsort: $(tr '\n' ' ' < "$OUT/csv/segsort.csv" | cut -c1-600)"
fi

if has merge; then
  # the quadtree update's merge against the copy of its bytes (bench/merge_probe.cu)
  nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Isrc -Iinclude bench/merge_probe.cu build-gpu/libraydex.a \
    -o build-gpu/merge_probe && build-gpu/merge_probe > "$OUT/csv/merge.csv"
  log "merge: $(grep -v '^#' "$OUT/csv/merge.csv" | cut -d, -f4-8 | tr '\n' ' ' | cut -c1-600)"
fi

if has tests; then
  t0=$(date +%s)
  # TESTS_RE narrows the entries (a regex over test names, e.g. 'spatial|keys_cgrx') for a short run
  re='\.(cuda|optix)(\.bvh2|\.ring)?$'
  [ -n "${TESTS_RE:-}" ] && re="^(${TESTS_RE}).*$re"
  (cd build-gpu && ctest -R "$re" --output-on-failure -j 4 --timeout 600) > "$OUT/logs/ctest-gpu.log" 2>&1
  rc=$?
  log "GPU tests rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -E 'tests passed|tests failed' "$OUT/logs/ctest-gpu.log" | tail -1)"
  grep -E "Failed|\*\*\*|FAILED" "$OUT/logs/ctest-gpu.log" | head -20 | tee -a "$OUT/logs/summary.txt"
fi

bench() { # bench <csv-name> <args...>: append rows (header once) to $OUT/csv/<name>.csv
  local name=$1; shift
  local f=$OUT/csv/$name.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ raydex $* $hdr" >> "$OUT/logs/commands.txt"
  # BENCH_TIMEOUT (seconds), when set, bounds the call
  ${BENCH_TIMEOUT:+timeout $BENCH_TIMEOUT} "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" ||
    log "bench $name FAILED: raydex $*"
}

if has keys-point; then
  t0=$(date +%s)
  for dt in u32 u64; do
    bench keys_point bench keys --backend cuda --kind hash,sorted,btree --n 2^26 --dtype $dt --dist uniform --lookups 2^27
    bench keys_point bench keys --backend cuda --kind sorted --n 2^26 --dtype $dt --dist uniform --lookups 2^27 --sort-queries
  done
  log "keys-point done in $(( $(date +%s) - t0 )) s"
fi

if has keys-range; then
  # 2^0..2^16 hits per range over 2^26 dense keys; rows returned are capped near 2^30 per batch
  t0=$(date +%s)
  bench keys_range bench keys --backend cuda --kind sorted,btree --n 2^26 --dtype u32 --dist dense \
    --op range,range-count --width 1,4,16,64,256 --lookups 2^22 --reps 3
  bench keys_range bench keys --backend cuda --kind sorted,btree --n 2^26 --dtype u32 --dist dense \
    --op range,range-count --width 1024,4096,16384,65536 --lookups 2^14 --reps 3
  log "keys-range done in $(( $(date +%s) - t0 )) s"
fi

if has keys-cpu; then
  # the CPU backend on 2 threads, like CI's machines, and on all cores
  for th in 2 $jobs; do
    RAYDEX_THREADS=$th bench keys_cpu bench keys --backend cpu --kind hash,sorted,btree --n 2^22 --dtype u32 --lookups 2^22
  done
fi

if has peers && [ -x "$root/.peers/run.sh" ]; then
  # cuCollections static_map, built beside raydex from .peers/ (never committed)
  bash "$root/.peers/run.sh" "$OUT" >> "$OUT/logs/peers.log" 2>&1 || log "peers FAILED"
  log "peers: $(tail -1 "$OUT/logs/peers.log")"
fi

# Extra steps from other modules: scripts/gpu-check.d/<step>.sh, sourced with RDX, OUT, bench().
for s in "${steps[@]}"; do
  if [ -f "$root/scripts/gpu-check.d/$s.sh" ]; then
    t0=$(date +%s)
    source "$root/scripts/gpu-check.d/$s.sh"
    log "$s done in $(( $(date +%s) - t0 )) s"
  fi
done

# plots, when matplotlib is there
if ls "$OUT"/csv/*.csv >/dev/null 2>&1; then
  python3 bench/plot.py "$OUT/csv" "$OUT/csv" > "$OUT/logs/plot.log" 2>&1 || log "plot failed (see logs/plot.log)"
fi
echo "$gpu" > "$OUT/logs/gpu-name.txt"
tar -czf "$OUT/results.tar.gz" -C "$OUT" logs csv
log "results in \$OUT/results.tar.gz"
for f in "$OUT"/csv/*.csv; do [ -f "$f" ] && { echo "== $(basename "$f")"; head -40 "$f"; }; done
