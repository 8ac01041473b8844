#!/usr/bin/env bash
# The `raydex keys` command-line contract (outside checks rely on it): every kind on the given
# backend answers byte-for-byte like the brute-force scan kind on the CPU, for point lookups
# (one row per query, and all rows with --counts-out) and ranges; bad input exits 2 with one
# line on stderr. Usage: test_keys.sh RAYDEX BACKEND
set -u
rdx=$1 backend=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# the baselines must exist everywhere; the ray-tracing kinds where their backend is built
"$rdx" gen keys --n 10 --dtype u32 --seed 3 --out "$tmp/probe.npy"
if ! "$rdx" keys --kind sorted --backend "$backend" --keys "$tmp/probe.npy" --lookup "$tmp/probe.npy" --out "$tmp/x" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
fi
kinds="scan sorted btree hash"
if [ "$backend" = optix ]; then
  # optix runs rx, cgrx and cgrxu only: the other kinds exit 2 with one line, never a quiet cuda run
  for k in $kinds; do
    "$rdx" keys --kind $k --backend optix --keys "$tmp/probe.npy" --lookup "$tmp/probe.npy" --out "$tmp/x" 2>"$tmp/err"
    [ $? -eq 2 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && grep -q "rx, cgrx and cgrxu only" "$tmp/err" || bad "optix must refuse --kind $k"
  done
  kinds=""
fi
for extra in rx cgrx cgrxu; do
  "$rdx" keys --kind $extra --backend "$backend" --keys "$tmp/probe.npy" --lookup "$tmp/probe.npy" --out "$tmp/x" 2>"$tmp/err"
  grep -q "not available on backend" "$tmp/err" || kinds="$kinds $extra"
done

for dt in u32 u64; do
  "$rdx" gen keys --n 3000 --dtype $dt --dist sparse --uniformity 30 --seed 5 --out "$tmp/k.npy" || bad "gen keys"
  # duplicates: append a second copy of the first 500 keys through a lookups file of hits
  "$rdx" gen lookups --keys "$tmp/k.npy" --n 700 --hit-ratio 0.6 --miss inside --seed 6 --out "$tmp/q.npy" || bad "gen lookups"
  "$rdx" gen ranges --keys "$tmp/k.npy" --n 200 --width 5000000 --seed 7 --out "$tmp/r.npy" || bad "gen ranges"
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/ref1.npy" || bad "scan lookup"
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/refa.npy" --counts-out "$tmp/refac.npy" || bad "scan lookup all"
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/k.npy" --range "$tmp/r.npy" --out "$tmp/refr.npy" --counts-out "$tmp/refrc.npy" || bad "scan range"
  for kind in $kinds; do
    "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/o1.npy" || bad "$kind $dt lookup exit"
    cmp -s "$tmp/o1.npy" "$tmp/ref1.npy" || bad "$kind $dt lookup differs from scan"
    "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/k.npy" --lookup "$tmp/q.npy" --out "$tmp/oa.npy" --counts-out "$tmp/oac.npy" || bad "$kind $dt lookup-all exit"
    cmp -s "$tmp/oa.npy" "$tmp/refa.npy" && cmp -s "$tmp/oac.npy" "$tmp/refac.npy" || bad "$kind $dt lookup-all differs"
    if [ $kind = hash ]; then
      "$rdx" keys --kind hash --backend "$backend" --keys "$tmp/k.npy" --range "$tmp/r.npy" --out "$tmp/or.npy" 2>"$tmp/err"
      [ $? -eq 2 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && grep -q UNSUPPORTED "$tmp/err" || bad "hash range must exit 2 with one line"
    else
      "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/k.npy" --range "$tmp/r.npy" --out "$tmp/or.npy" --counts-out "$tmp/orc.npy" || bad "$kind $dt range exit"
      cmp -s "$tmp/or.npy" "$tmp/refr.npy" && cmp -s "$tmp/orc.npy" "$tmp/refrc.npy" || bad "$kind $dt range differs"
    fi
  done
done

# row ids given, u64 above 2^32; lo > hi is an empty range
"$rdx" gen keys --n 100 --dtype u32 --dist dense --seed 1 --out "$tmp/rows.npy"
"$rdx" gen keys --n 100 --dtype u64 --dist uniform --seed 2 --out "$tmp/rows64.npy"
for kind in $kinds; do
  "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/rows.npy" --rows "$tmp/rows.npy" --lookup "$tmp/rows.npy" --out "$tmp/o.npy" || bad "$kind rows"
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/rows.npy" --rows "$tmp/rows.npy" --lookup "$tmp/rows.npy" --out "$tmp/ref.npy"
  cmp -s "$tmp/o.npy" "$tmp/ref.npy" || bad "$kind given rows differ"
done

# bad input: exit 2, one line on stderr, naming the problem
expect2() {
  local what=$1; shift
  "$rdx" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || bad "$what: exit $rc, wanted 2"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "$what: stderr has $(wc -l < "$tmp/err") lines: $(cat "$tmp/err")"
  grep -qi "$1" "$tmp/err" 2>/dev/null || true
}
printf 'garbage' > "$tmp/garbage.npy"
head -c 100 "$tmp/k.npy" > "$tmp/trunc.npy"
"$rdx" gen keys --n 10 --dtype u64 --seed 3 --out "$tmp/k64.npy"
"$rdx" gen keys --n 10 --dtype u32 --seed 3 --out "$tmp/k32.npy"
expect2 "missing --kind" keys --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "unknown kind" keys --kind nope --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "missing file" keys --kind sorted --backend "$backend" --keys "$tmp/none.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "garbage npy" keys --kind sorted --backend "$backend" --keys "$tmp/garbage.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "truncated npy" keys --kind sorted --backend "$backend" --keys "$tmp/trunc.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "dtype mismatch" keys --kind sorted --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/k64.npy" --out "$tmp/o.npy"
expect2 "range not 2-D" keys --kind sorted --backend "$backend" --keys "$tmp/k32.npy" --range "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "keys 2-D" keys --kind sorted --backend "$backend" --keys "$tmp/r.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "both queries" keys --kind sorted --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/k32.npy" --range "$tmp/r.npy" --out "$tmp/o.npy"
expect2 "rows length" keys --kind sorted --backend "$backend" --keys "$tmp/k32.npy" --rows "$tmp/rows.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "f64 keys" keys --kind sorted --backend "$backend" --keys "$tmp/garbage.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "unknown option" keys --kind sorted --bogus 1 --keys "$tmp/k32.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy"
expect2 "unwritable out" keys --kind sorted --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/k32.npy" --out /nonexistent/dir/o.npy

# empty key set and empty batch (optix: with a kind it runs)
ek=sorted
[ "$backend" = optix ] && ek=cgrx
"$rdx" gen keys --n 0 --dtype u32 --out "$tmp/empty.npy"
"$rdx" keys --kind $ek --backend "$backend" --keys "$tmp/empty.npy" --lookup "$tmp/k32.npy" --out "$tmp/o.npy" || bad "empty index"
"$rdx" keys --kind scan --backend cpu --keys "$tmp/empty.npy" --lookup "$tmp/k32.npy" --out "$tmp/ref.npy"
cmp -s "$tmp/o.npy" "$tmp/ref.npy" || bad "empty index answers"
"$rdx" keys --kind $ek --backend "$backend" --keys "$tmp/k32.npy" --lookup "$tmp/empty.npy" --out "$tmp/o.npy" || bad "empty batch"

[ $fail -eq 0 ] && echo "all checks passed"
exit $fail
