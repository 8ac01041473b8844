#!/usr/bin/env bash
# `raydex keys` with updates and snapshots: --insert [--insert-rows], --erase, --save, --load.
# Every kind on the given backend, updated and saved, answers byte-for-byte like the scan kind on
# the CPU with the same updates, and so does the index loaded back from its snapshot (also saved
# over the file it was loaded from). Refused snapshots (truncated, corrupted, foreign, another
# kind) and bad option combinations exit 2 with one line on stderr and leave no output.
# Usage: test_keys_snapshot.sh RAYDEX BACKEND
set -u
rdx=$1 backend=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$rdx" gen keys --n 10 --dtype u32 --seed 3 --out "$tmp/probe.npy" --quiet
if ! "$rdx" keys --kind sorted --backend "$backend" --keys "$tmp/probe.npy" --lookup "$tmp/probe.npy" --out "$tmp/x" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
fi
kinds=""
candidates="scan sorted btree hash rx cgrx cgrxu"
[ "$backend" = optix ] && candidates="rx cgrx"
for k in $candidates; do
  "$rdx" keys --kind $k --backend "$backend" --keys "$tmp/probe.npy" --save "$tmp/probe.snap" 2>"$tmp/err" && kinds="$kinds $k"
done
echo "kinds that save here:$kinds"

for dt in u32 u64; do
  "$rdx" gen keys --n 3000 --dtype $dt --dist sparse --uniformity 30 --seed 5 --out "$tmp/k.npy" --quiet
  "$rdx" gen lookups --keys "$tmp/k.npy" --n 700 --hit-ratio 0.6 --seed 6 --out "$tmp/q.npy" --quiet
  "$rdx" gen lookups --keys "$tmp/k.npy" --n 300 --hit-ratio 0.9 --seed 8 --out "$tmp/ins.npy" --quiet
  "$rdx" gen lookups --keys "$tmp/k.npy" --n 100 --hit-ratio 0.8 --seed 9 --out "$tmp/er.npy" --quiet
  "$rdx" gen ranges --keys "$tmp/k.npy" --n 200 --width 5000000 --seed 7 --out "$tmp/r.npy" --quiet
  upd=(--insert "$tmp/ins.npy" --erase "$tmp/er.npy")
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/k.npy" "${upd[@]}" --lookup "$tmp/q.npy" --out "$tmp/ref.npy" --counts-out "$tmp/refc.npy" --quiet || bad "scan $dt updated lookups"
  "$rdx" keys --kind scan --backend cpu --keys "$tmp/k.npy" "${upd[@]}" --range "$tmp/r.npy" --out "$tmp/refr.npy" --counts-out "$tmp/refrc.npy" --quiet || bad "scan $dt updated ranges"
  for kind in $kinds; do
    s="$tmp/$kind.snap"
    rm -f "$s"
    "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/k.npy" "${upd[@]}" --lookup "$tmp/q.npy" --out "$tmp/o.npy" --counts-out "$tmp/oc.npy" --save "$s" --quiet || bad "$kind $dt update+save exit"
    cmp -s "$tmp/o.npy" "$tmp/ref.npy" && cmp -s "$tmp/oc.npy" "$tmp/refc.npy" || bad "$kind $dt updated lookups differ from scan"
    "$rdx" keys --kind $kind --backend "$backend" --load "$s" --lookup "$tmp/q.npy" --out "$tmp/o.npy" --counts-out "$tmp/oc.npy" --quiet || bad "$kind $dt load exit"
    cmp -s "$tmp/o.npy" "$tmp/ref.npy" && cmp -s "$tmp/oc.npy" "$tmp/refc.npy" || bad "$kind $dt loaded lookups differ from scan"
    if [ $kind != hash ]; then
      "$rdx" keys --kind $kind --backend "$backend" --load "$s" --range "$tmp/r.npy" --out "$tmp/o.npy" --counts-out "$tmp/oc.npy" --quiet || bad "$kind $dt loaded range exit"
      cmp -s "$tmp/o.npy" "$tmp/refr.npy" && cmp -s "$tmp/oc.npy" "$tmp/refrc.npy" || bad "$kind $dt loaded ranges differ from scan"
    fi
    # load, update, save over the same file; the erased keys are then gone
    "$rdx" keys --kind $kind --backend "$backend" --load "$s" --erase "$tmp/q.npy" --save "$s" --quiet || bad "$kind $dt save over load"
    "$rdx" keys --kind $kind --backend "$backend" --load "$s" --lookup "$tmp/q.npy" --out "$tmp/o.npy" --counts-out "$tmp/oc.npy" --quiet || bad "$kind $dt reload"
    python3 - "$tmp/oc.npy" <<'EOF' || bad "$kind $dt erased keys still answer"
import sys
b = open(sys.argv[1], 'rb').read()
hl = int.from_bytes(b[8:10], 'little')
sys.exit(0 if set(b[10 + hl:]) <= {0} else 1)
EOF
  done
done

# implied rows continue after the build's (and after a load): 3000 keys, the inserted key's row is 3000
"$rdx" gen keys --n 3000 --dtype u64 --dist dense --seed 1 --out "$tmp/d.npy" --quiet
python3 - "$tmp/one.npy" <<'EOF'
import sys
hdr = "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }"
hdr = hdr + ' ' * (118 - len(hdr)) + '\n'
open(sys.argv[1], 'wb').write(b'\x93NUMPY\x01\x00' + len(hdr).to_bytes(2, 'little') + hdr.encode() + (2**40).to_bytes(8, 'little'))
EOF
for kind in $kinds; do
  "$rdx" keys --kind $kind --backend "$backend" --keys "$tmp/d.npy" --save "$tmp/d.snap" --quiet || bad "$kind dense save"
  "$rdx" keys --kind $kind --backend "$backend" --load "$tmp/d.snap" --insert "$tmp/one.npy" --lookup "$tmp/one.npy" --out "$tmp/o.npy" --quiet || bad "$kind insert after load"
  [ "$(od -An -tu8 -j128 "$tmp/o.npy" | tr -d ' ')" = 3000 ] || bad "$kind: the implied row after a load is not 3000"
  "$rdx" keys --kind $kind --backend "$backend" --load "$tmp/d.snap" --insert "$tmp/one.npy" --insert-rows "$tmp/one.npy" --lookup "$tmp/one.npy" --out "$tmp/o.npy" --quiet || bad "$kind insert-rows"
  [ "$(od -An -tu8 -j128 "$tmp/o.npy" | tr -d ' ')" = $((2**40)) ] || bad "$kind: --insert-rows not used"
done

# refusals: exit 2, one line on stderr, no output left behind
expect2() {
  local what=$1 want=$2; shift 2
  rm -f "$tmp/out.npy"
  "$rdx" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || bad "$what: exit $rc, wanted 2 ($(cat "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "$what: stderr has $(wc -l < "$tmp/err") lines: $(cat "$tmp/err")"
  grep -q -- "$want" "$tmp/err" || bad "$what: stderr does not say '$want': $(cat "$tmp/err")"
  [ ! -e "$tmp/out.npy" ] || bad "$what: left an output behind"
}
if [ -n "$kinds" ]; then
  k1=$(echo $kinds | cut -d' ' -f1)
  k2=$(echo $kinds | cut -d' ' -f2)
  "$rdx" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy" --save "$tmp/good.snap" --quiet
  size=$(stat -c %s "$tmp/good.snap")
  q=(--lookup "$tmp/d.npy" --out "$tmp/out.npy")
  head -c $((size / 2)) "$tmp/good.snap" > "$tmp/trunc.snap"
  expect2 "truncated snapshot" "truncated" keys --kind $k1 --backend "$backend" --load "$tmp/trunc.snap" "${q[@]}"
  head -c 100 "$tmp/good.snap" > "$tmp/trunc.snap"
  expect2 "truncated header" "truncated" keys --kind $k1 --backend "$backend" --load "$tmp/trunc.snap" "${q[@]}"
  cp "$tmp/good.snap" "$tmp/bad.snap"
  printf '\x5a' | dd of="$tmp/bad.snap" bs=1 seek=$((size - 20)) conv=notrunc status=none
  expect2 "corrupted section" "checksum" keys --kind $k1 --backend "$backend" --load "$tmp/bad.snap" "${q[@]}"
  cp "$tmp/good.snap" "$tmp/bad.snap"
  printf '\x5a' | dd of="$tmp/bad.snap" bs=1 seek=40 conv=notrunc status=none
  expect2 "corrupted header" "header" keys --kind $k1 --backend "$backend" --load "$tmp/bad.snap" "${q[@]}"
  expect2 "a .npy as snapshot" "not a raydex snapshot" keys --kind $k1 --backend "$backend" --load "$tmp/d.npy" "${q[@]}"
  [ -n "$k2" ] && [ "$k2" != "$k1" ] &&
    expect2 "another kind" "holds a $k1 index" keys --kind $k2 --backend "$backend" --load "$tmp/good.snap" "${q[@]}"
  expect2 "missing snapshot" "none.snap" keys --kind $k1 --backend "$backend" --load "$tmp/none.snap" "${q[@]}"
  expect2 "keys and load" "exactly one of --keys and --load" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy" --load "$tmp/good.snap" "${q[@]}"
  expect2 "rows with load" "--rows goes with --keys" keys --kind $k1 --backend "$backend" --load "$tmp/good.snap" --rows "$tmp/d.npy" "${q[@]}"
  expect2 "save into a missing directory" "does not exist" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy" "${q[@]}" --save "$tmp/no/dir/s.snap"
  expect2 "insert dtype" "like the keys" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy" --insert "$tmp/probe.npy" "${q[@]}"
  expect2 "insert-rows alone" "--insert-rows goes with --insert" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy" --insert-rows "$tmp/d.npy" "${q[@]}"
  expect2 "nothing to do" "or --save" keys --kind $k1 --backend "$backend" --keys "$tmp/d.npy"
fi
expect2 "bucket-size with load" "bucket-size" keys --kind cgrx --backend "$backend" --load "$tmp/d.npy" --bucket-size 8 --lookup "$tmp/d.npy" --out "$tmp/out.npy"
expect2 "node-bytes not cgrxu" "node-bytes" keys --kind cgrx --backend "$backend" --keys "$tmp/d.npy" --node-bytes 64 --lookup "$tmp/d.npy" --out "$tmp/out.npy"
expect2 "node-bytes not a power of two" "power of two" keys --kind cgrxu --backend "$backend" --keys "$tmp/d.npy" --node-bytes 100 --lookup "$tmp/d.npy" --out "$tmp/out.npy"
expect2 "unknown kind lists cgrxu" "cgrxu" keys --kind nope --backend "$backend" --keys "$tmp/d.npy" --lookup "$tmp/d.npy" --out "$tmp/out.npy"

[ $fail -eq 0 ] && echo "all checks passed"
exit $fail
