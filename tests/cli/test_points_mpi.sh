#!/usr/bin/env bash
# `mpirun raydex points`: under 1, 2 and 3 ranks each rank reads its share of P and of the queries,
# one distributed point index is built over all of them, and rank 0 writes the same OUT and CNT
# files, byte for byte, as one process does (match, window, within and kNN, whose ties by row
# number must come out in the same order; quadtrees bottom-up and top-down, k-d trees; f64 and
# f32; fewer points than ranks; a --box). Skipped where MPI is not built or mpirun is missing;
# before that, `raydex bench points --gpus 1,3` over local groups of BACKEND's contexts must find
# every sharded answer equal to the plain index's.
# Usage: test_points_mpi.sh RAYDEX BACKEND (the ranks run BACKEND; the GPU ones skip without a GPU).
set -u
rdx=$1 backend=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# `raydex bench points --gpus` (local groups, no MPI needed): on BACKEND's contexts every sharded
# answer equals the plain index's, strong and weak, for every query type
bench() {
  local th=""
  [ "$backend" = cpu ] && th="--threads 1"
  "$rdx" bench points --gpus 1,3 --backend "$backend" $th --reps 1 --quiet "$@" > "$tmp/bench.csv" 2> "$tmp/err"
  local rc=$?
  if [ $rc -ne 0 ] && grep -q "cannot run here" "$tmp/err"; then return 0; fi
  [ $rc -eq 0 ] || { bad "bench points --gpus $*: $(head -2 "$tmp/err")"; return; }
  local rows ok
  rows=$(grep -c ',sharded,' "$tmp/bench.csv") ok=$(grep -cE ',sharded,.*,ok;same-as-index(,|$)' "$tmp/bench.csv")
  [ "$rows" -eq 8 ] && [ "$ok" -eq 8 ] || bad "bench points --gpus $*: $ok of $rows rows match the plain index: $(cat "$tmp/bench.csv")"
}
bench --n 2^15 --queries 2^11 --dist taxi
bench --n 2^13 --queries 2^9 --weak --index kdtree --dtype f32 --dist clustered --k 7

"$rdx" info | grep -q '^mpi built: no' && { echo "skipped: no MPI in this build"; exit 77; }
command -v mpirun > /dev/null || { echo "skipped: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export RAYDEX_THREADS=1
# under LeakSanitizer (an ASan build) what Open MPI keeps past MPI_Finalize is not ours (as for the
# dist_* entries, tests/CMakeLists.txt)
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/.." && pwd)/lsan_mpi.supp:fast_unwind_on_malloc=0"
"$rdx" gen points --quiet --n 10 --seed 1 --out "$tmp/probe.npy"
"$rdx" gen point-queries --quiet --points "$tmp/probe.npy" --type window --n 3 --out "$tmp/probe_w.npy"
if ! "$rdx" points --index quadtree --backend "$backend" --points "$tmp/probe.npy" --window "$tmp/probe_w.npy" \
     --out "$tmp/x.npy" --counts-out "$tmp/xc.npy" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
fi

# compare NAME P QTYPE Q K OPTIONS...: one process, then 1, 2 and 3 ranks
compare() {
  local name=$1 p=$2 qt=$3 q=$4 k=$5
  shift 5
  local kopt=""
  [ $qt = knn ] && kopt="--k $k"
  "$rdx" points --backend "$backend" --quiet "$@" --points "$p" --$qt "$q" $kopt --out "$tmp/o1.npy" \
    --counts-out "$tmp/c1.npy" 2> "$tmp/err" || { bad "$name: one process: $(head -2 "$tmp/err")"; return; }
  for np in 1 2 3; do
    mpirun -np $np --oversubscribe "$rdx" points --backend "$backend" --quiet "$@" --points "$p" --$qt "$q" $kopt \
      --out "$tmp/o.npy" --counts-out "$tmp/c.npy" 2> "$tmp/err" &&
      cmp -s "$tmp/o1.npy" "$tmp/o.npy" && cmp -s "$tmp/c1.npy" "$tmp/c.npy" ||
      bad "$name on $np ranks differs from one process ($(head -3 "$tmp/err"))"
    rm -f "$tmp/o.npy" "$tmp/c.npy"
  done
}

# taxi points repeat exactly at taxi stands: kNN ties by row number across ranks
set -- "taxi f64 quadtree --index quadtree --build bottomup" "clustered f32 kdtree --index kdtree" \
       "uniform f64 topdown --index quadtree --build topdown --max-depth 12"
for cfg in "$@"; do
  read -r dist dt label opts <<< "$cfg"
  "$rdx" gen points --quiet --n 3001 --dist $dist --dtype $dt --seed 21 --out "$tmp/p.npy" || bad "gen points $dist"
  for qt in match window within knn; do
    "$rdx" gen point-queries --quiet --points "$tmp/p.npy" --type $qt --n 201 --seed 22 --out "$tmp/q.npy" || bad "gen queries"
    compare "$dist $dt $label $qt" "$tmp/p.npy" $qt "$tmp/q.npy" 9 $opts --leaf-capacity 16
  done
done
# fewer points than ranks; a fixed --box; k beyond the points
"$rdx" gen points --quiet --n 2 --dist uniform --seed 5 --out "$tmp/p2.npy" || bad "gen 2 points"
"$rdx" gen point-queries --quiet --points "$tmp/p2.npy" --type knn --n 7 --seed 6 --out "$tmp/q2.npy" || bad "gen queries"
compare "2 points, k 5" "$tmp/p2.npy" knn "$tmp/q2.npy" 5 --index kdtree
"$rdx" gen point-queries --quiet --points "$tmp/p2.npy" --type window --n 4 --seed 6 --size 0.5 --out "$tmp/w2.npy" || bad "gen queries"
compare "2 points, --box" "$tmp/p2.npy" window "$tmp/w2.npy" 0 --index quadtree --box -1,-1,2,2
# exact ties: points on a lattice, every one repeated, kNN from lattice points and cell centres
py=$(command -v python3 || true)
if [ -n "$py" ]; then
  "$py" - "$tmp/grid.npy" "$tmp/gq.npy" <<'PY'
import struct, sys
def write(path, rows, cols, vals):
    h = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    h += ' ' * (64 - (10 + len(h) + 1) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode('latin1'))
        f.write(struct.pack('<%dd' % len(vals), *vals))
pts = [v for r in range(2) for i in range(8) for j in range(8) for v in (i, j)]
write(sys.argv[1], len(pts) // 2, 2, pts)
q = [0, 0, 7, 7, 3.5, 3.5, 2, 5, -0.0, 0.0, 6.5, 1]
write(sys.argv[2], len(q) // 2, 2, q)
PY
  compare "lattice knn ties (quadtree)" "$tmp/grid.npy" knn "$tmp/gq.npy" 11 --index quadtree --leaf-capacity 2
  compare "lattice knn ties (kdtree)" "$tmp/grid.npy" knn "$tmp/gq.npy" 11 --index kdtree --leaf-capacity 2
fi
# bad input under mpirun: exit 2, the outputs not written
mpirun -np 2 --oversubscribe "$rdx" points --index quadtree --backend "$backend" --points "$tmp/p.npy" \
  --knn "$tmp/w2.npy" --k 3 --out "$tmp/bad.npy" --counts-out "$tmp/badc.npy" > /dev/null 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/bad.npy" ] || bad "a window file given to --knn under mpirun must exit 2 (rc $rc: $(head -2 "$tmp/err"))"
[ $fail -eq 0 ] && echo "mpirun raydex points: match, window, within and knn on 1, 2 and 3 ranks answer as one process"
exit $fail
