#!/usr/bin/env bash
# bench/py_overhead.sh: issue 32's per-call overhead of the Python binding over the C API.
# Builds bench/py_overhead.c against BUILD_DIR's libraydex, then runs it and bench/py_overhead.py
# (the same lookups, sizes, seeds, blocks and reps; their headers say what is timed) and joins
# their CSVs into OUTDIR/py_overhead.csv:
#
#   bench/py_overhead.sh BUILD_DIR OUTDIR [PYTHON]
#
# PYTHON (default /usr/bin/python3) must import numpy and find raydex: PYTHONPATH=python is set,
# so the extension built in place (python/README.md) is the one measured; build it against
# BUILD_DIR first. The sizes are interleaved: for each batch size the C harness runs, then the
# Python script, each a fresh process over the same cases, so that a machine whose load changes
# (a shared one) moves both sides of one row alike.
#
# Environment:
#   CASES=cpu:host,cuda:host,cuda:device   the cases (GPU ones skip where there is no GPU/CuPy)
#   KEYS=2^24        u32 keys of the sorted index (distinct, generated from SEED)
#   SIZES=10,12,...  log2 of the lookup batches (default 10..24 by 2; with a GPU 10..26 by 2 and 27)
#   MAX_CPU_LOG2=24  the cpu case stops there
#   REPS=5 WARMUP=1 SEED=1 BLOCK=2^20 (queries per timed block: calls = max(1, BLOCK / m))
#   MACHINE          the machine column (default: the GPU's name, else "<CPU model> (<n> cores)")
#
# Output columns: date,machine,backend,where,n_keys,m,calls,reps, c_us (C API, answers allocated
# once), c_binding_us (the C calls the binding makes per lookup, answers allocated per call),
# py_us (raydex.KeyIndex.lookup), overhead_us = py_us - c_us (issue 32's target: <= 5),
# binding_overhead_us = py_us - c_binding_us (CPython and argument handling alone), check (both
# sides' answers right and their inputs' checksums equal: ok; else what differs), nocopy (device
# rows: the assertions bench/py_overhead.py made), py_out_us (lookup(q, out=) into one array made
# before timing, as c_us's answers are), out_overhead_us = py_out_us - c_us, py_export_us (device
# rows: cupy.from_dlpack(lookup(q)) dropped at once). Logs (stderr of both) go to OUTDIR/py_overhead.log.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) || exit 2
outdir=$2
py=${3:-/usr/bin/python3}
mkdir -p "$outdir" || exit 2
outdir=$(cd "$outdir" && pwd)
log=$outdir/py_overhead.log

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
MACHINE=${MACHINE:-${gpu:-${cpu:-unknown} ($(nproc) cores)}}
MACHINE=${MACHINE//,/;}
CASES=${CASES:-cpu:host,cuda:host,cuda:device}
KEYS=${KEYS:-2^24}
if [ -n "$gpu" ]; then SIZES=${SIZES:-10,12,14,16,18,20,22,24,26,27}; else SIZES=${SIZES:-10,12,14,16,18,20,22,24}; fi
MAX_CPU_LOG2=${MAX_CPU_LOG2:-24}
REPS=${REPS:-5} WARMUP=${WARMUP:-1} SEED=${SEED:-1} BLOCK=${BLOCK:-2^20}
date=$(date -u +%Y-%m-%d)

tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
exe=$tmp/py_overhead
cc -O2 -std=c11 -Wall -I"$root/include" "$root/bench/py_overhead.c" -L"$build" -lraydex \
  -Wl,-rpath,"$build" -o "$exe" || { echo "py_overhead.sh: the harness did not build" >&2; exit 1; }

c_csv=$outdir/py_overhead_c.csv py_csv=$outdir/py_overhead_py.csv
: > "$c_csv"; : > "$py_csv"; : > "$log"
args=(--cases "$CASES" --keys "$KEYS" --max-cpu-log2 "$MAX_CPU_LOG2" --reps "$REPS" --warmup "$WARMUP"
      --seed "$SEED" --block-queries "$BLOCK" --machine "$MACHINE" --date "$date")
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"
rc=0
hdr=--header
for s in ${SIZES//,/ }; do
  echo "\$ $exe ${args[*]} --sizes $s $hdr" >> "$log"
  "$exe" "${args[@]}" --sizes "$s" $hdr >> "$c_csv" 2>> "$log" || { echo "py_overhead.sh: C harness failed at 2^$s" >&2; rc=1; }
  echo "\$ PYTHONPATH=python $py bench/py_overhead.py ${args[*]} --sizes $s $hdr" >> "$log"
  (cd "$root" && PYTHONPATH=python "$py" bench/py_overhead.py "${args[@]}" --sizes "$s" $hdr) >> "$py_csv" 2>> "$log" ||
    { echo "py_overhead.sh: Python script failed at 2^$s (see $log)" >&2; rc=1; }
  hdr=
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"

# join on (backend, where, m)
awk -F, -v OFS=, '
  FNR == 1 { next }
  FILENAME == ARGV[1] { k = $3 FS $4 FS $6; c[k] = $0; next }
  {
    k = $3 FS $4 FS $6
    if (!(k in c)) { print "py_overhead.sh: no C row for " k > "/dev/stderr"; next }
    split(c[k], a, ",")
    check = (a[11] == "ok" && $10 == "ok") ? "ok" : "c:" a[11] ";py:" $10
    if (a[12] != $12) check = check ";inputs-differ"
    if (!hdr++) print "date,machine,backend,where,n_keys,m,calls,reps,c_us,c_binding_us,py_us,overhead_us,binding_overhead_us,check,nocopy,py_out_us,out_overhead_us,py_export_us"
    printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f,%.3f,%s,%s,%s,%.3f,%s\n", a[1], a[2], a[3], a[4], a[5], a[6], a[7],
           a[8], a[9], a[10], $9, $9 - a[9], $9 - a[10], check, $11, $13, $13 - a[9], $14
  }' "$c_csv" "$py_csv" > "$outdir/py_overhead.csv"
grep -q ',ok,' "$outdir/py_overhead.csv" || rc=1
grep -vq -e ',ok,' -e '^date,' "$outdir/py_overhead.csv" && { echo "py_overhead.sh: a row is not ok" >&2; rc=1; }
cat "$outdir/py_overhead.csv"
exit $rc
