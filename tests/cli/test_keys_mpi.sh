#!/usr/bin/env bash
# `mpirun raydex keys`: under 1, 2 and 3 ranks each rank reads its share of the inputs, one sharded
# index is built over all of them, and rank 0 writes the same files, byte for byte, as one process
# does (lookups, lookups with --counts-out, ranges with given rows); what is not distributed is
# refused with exit 2. Skipped where MPI is not built or mpirun is missing. Usage:
# test_keys_mpi.sh RAYDEX BACKEND (the ranks run BACKEND; the GPU ones skip without a GPU).
set -u
rdx=$1 backend=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$rdx" info | grep -q '^mpi built: no' && { echo "skipped: no MPI in this build"; exit 77; }
command -v mpirun > /dev/null || { echo "skipped: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export RAYDEX_THREADS=1
# under LeakSanitizer (an ASan build) what Open MPI keeps past MPI_Finalize is not ours (as for the
# dist_* entries, tests/CMakeLists.txt)
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/.." && pwd)/lsan_mpi.supp:fast_unwind_on_malloc=0"
kinds="sorted btree hash"
[ "$backend" = optix ] && kinds="cgrx" # the kinds the optix backend builds
first=${kinds%% *}
"$rdx" gen keys --n 10 --dtype u32 --seed 3 --out "$tmp/probe.npy"
if ! "$rdx" keys --kind $first --backend "$backend" --keys "$tmp/probe.npy" --lookup "$tmp/probe.npy" --out "$tmp/x" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
fi
"$rdx" gen keys --n 5001 --dtype u64 --dist sparse --uniformity 30 --seed 5 --out "$tmp/k.npy" || bad "gen keys"
"$rdx" gen keys --n 5001 --dtype u64 --dist dense --seed 8 --out "$tmp/rows.npy" || bad "gen rows"
"$rdx" gen lookups --keys "$tmp/k.npy" --n 777 --hit-ratio 0.6 --miss inside --seed 6 --out "$tmp/q.npy" || bad "gen lookups"
"$rdx" gen ranges --keys "$tmp/k.npy" --n 301 --width 5000000 --seed 7 --out "$tmp/r.npy" || bad "gen ranges"
for k in $kinds; do
  one() { "$rdx" keys --kind $k --backend "$backend" --quiet "$@"; }
  one --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/l1.npy" || bad "$k: one process, lookups"
  one --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/a1.npy" --counts-out "$tmp/ac1.npy" || bad "$k: one process, all rows"
  [ $k != hash ] && { one --keys "$tmp/k.npy" --rows "$tmp/rows.npy" --range "$tmp/r.npy" --out "$tmp/r1.npy" \
                        --counts-out "$tmp/rc1.npy" || bad "$k: one process, ranges"; }
  for np in 1 2 3; do
    many() { mpirun -np $np --oversubscribe "$rdx" keys --kind $k --backend "$backend" --quiet "$@" 2> "$tmp/err"; }
    many --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/l.npy" && cmp -s "$tmp/l1.npy" "$tmp/l.npy" ||
      bad "$k on $np ranks: lookups differ from one process ($(head -3 "$tmp/err"))"
    many --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/a.npy" --counts-out "$tmp/ac.npy" &&
      cmp -s "$tmp/a1.npy" "$tmp/a.npy" && cmp -s "$tmp/ac1.npy" "$tmp/ac.npy" ||
      bad "$k on $np ranks: all rows differ from one process ($(head -3 "$tmp/err"))"
    if [ $k != hash ]; then
      many --keys "$tmp/k.npy" --rows "$tmp/rows.npy" --range "$tmp/r.npy" --out "$tmp/rr.npy" --counts-out "$tmp/rc.npy" &&
        cmp -s "$tmp/r1.npy" "$tmp/rr.npy" && cmp -s "$tmp/rc1.npy" "$tmp/rc.npy" ||
        bad "$k on $np ranks: ranges differ from one process ($(head -3 "$tmp/err"))"
    fi
  done
done
# updates: an insert (implied rows, then given rows) and an erase, then lookups of every row
"$rdx" gen keys --n 901 --dtype u64 --dist sparse --uniformity 30 --seed 9 --out "$tmp/ins.npy" || bad "gen insert"
"$rdx" gen keys --n 901 --dtype u64 --dist dense --seed 10 --out "$tmp/insr.npy" || bad "gen insert rows"
"$rdx" gen lookups --keys "$tmp/k.npy" --n 333 --hit-ratio 0.8 --miss inside --seed 11 --out "$tmp/e.npy" || bad "gen erase"
for k in $kinds; do
  one() { "$rdx" keys --kind $k --backend "$backend" --quiet "$@"; }
  one --keys "$tmp/k.npy" --insert "$tmp/ins.npy" --erase "$tmp/e.npy" --lookup "$tmp/q.npy" --out "$tmp/u1.npy" \
    --counts-out "$tmp/uc1.npy" || bad "$k: one process, updates"
  one --keys "$tmp/k.npy" --insert "$tmp/ins.npy" --insert-rows "$tmp/insr.npy" --lookup "$tmp/ins.npy" \
    --out "$tmp/v1.npy" || bad "$k: one process, given insert rows"
  for np in 1 2 3; do
    many() { mpirun -np $np --oversubscribe "$rdx" keys --kind $k --backend "$backend" --quiet "$@" 2> "$tmp/err"; }
    many --keys "$tmp/k.npy" --insert "$tmp/ins.npy" --erase "$tmp/e.npy" --lookup "$tmp/q.npy" --out "$tmp/u.npy" \
      --counts-out "$tmp/uc.npy" && cmp -s "$tmp/u1.npy" "$tmp/u.npy" && cmp -s "$tmp/uc1.npy" "$tmp/uc.npy" ||
      bad "$k on $np ranks: updates differ from one process ($(head -3 "$tmp/err"))"
    many --keys "$tmp/k.npy" --insert "$tmp/ins.npy" --insert-rows "$tmp/insr.npy" --lookup "$tmp/ins.npy" \
      --out "$tmp/v.npy" && cmp -s "$tmp/v1.npy" "$tmp/v.npy" ||
      bad "$k on $np ranks: given insert rows differ from one process ($(head -3 "$tmp/err"))"
  done
done
mpirun -np 2 --oversubscribe "$rdx" keys --kind $first --backend "$backend" --keys "$tmp/k.npy" --lookup "$tmp/q.npy" \
  --out "$tmp/x.npy" --save "$tmp/s.rdx" > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] && grep -q "not supported" "$tmp/err" || bad "--save under mpirun must exit 2 ($(head -2 "$tmp/err"))"
[ $fail -eq 0 ] && echo "mpirun raydex keys: $kinds on 1, 2 and 3 ranks answer as one process"
exit $fail
