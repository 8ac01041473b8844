#!/usr/bin/env bash
# `raydex demo`'s polygon overlay on the given backend, on the small layers of data/sample/ (no
# network, no GDAL): --r and --s name the layers; the key part runs small. Its table must have one
# row per predicate (overlay, intersects, contains, within) whose check column says ok, the
# overlay's with its areas; a self-join of the Rhode Island and Delaware counties must find every
# county overlaying and containing itself. Without the maps (--maps naming an empty folder) the
# demo says so in one line and exits 0; --r without --s, or --r with --maps, exit 2 with one line.
# Usage: test_demo_polygons.sh RAYDEX BACKEND
set -u
rdx=$1 backend=$2
sample=$(cd "$(dirname "$0")/../../data/sample" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--backend "$backend" --n 2^12 --lookups 2^12 --ranges 2^8 --width 2^20 --quiet)

# demo R S: runs the demo on the pair; its stdout in $tmp/out
demo() {
  "$rdx" demo "${small[@]}" --r "$1" --s "$2" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ $rc -ne 0 ] && grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
  [ $rc -eq 0 ] || { bad "demo --r $1 --s $2 exited $rc: $(cat "$tmp/err")"; return 1; }
  for p in overlay intersects contains within; do
    local row
    row=$(grep -E "^$p +[0-9.]+ +[0-9]+ +[0-9.]+  " "$tmp/out")
    [ -n "$row" ] || { bad "$(basename "$1") x $(basename "$2"): no $p row in: $(cat "$tmp/out")"; continue; }
    echo "$row" | grep -qE '  ok(,|$)' || bad "$(basename "$1") x $(basename "$2"): $p row not ok: $row"
  done
  grep -E "^overlay " "$tmp/out" | grep -q "ok, and [0-9]* areas" || bad "the overlay row does not check areas"
  return 0
}
pairs_of() { grep -E "^$1 " "$tmp/out" | awk '{print $3}'; }

demo "$sample/us-counties-ri-de.rdxp" "$sample/us-counties-ri-de.rdxp"
# 8 counties: each overlays and contains itself, and nothing else (they only share boundaries)
[ "$(pairs_of overlay)" = 8 ] || bad "RI/DE counties x themselves: $(pairs_of overlay) overlay pairs, expected 8"
[ "$(pairs_of contains)" = 8 ] || bad "RI/DE counties x themselves: $(pairs_of contains) contains pairs, expected 8"
[ "$(pairs_of intersects)" -gt 8 ] 2>/dev/null || bad "RI/DE counties x themselves: neighbours must intersect"
grep -q "R = us-counties-ri-de.rdxp (8 features" "$tmp/out" || bad "the header names the layers: $(cat "$tmp/out")"
demo "$sample/tiles.rdxp" "$sample/tiles.rdxp"
demo "$sample/tiles.rdxp" "$sample/us-counties-ri-de.rdxp"

# without the maps: one line, exit 0
mkdir -p "$tmp/nomaps"
if "$rdx" demo "${small[@]}" --maps "$tmp/nomaps" > "$tmp/out" 2> "$tmp/err"; then
  [ "$(grep -c "Polygon overlay skipped" "$tmp/out")" = 1 ] || bad "no maps: expected one 'skipped' line: $(cat "$tmp/out")"
  grep -q "fetch-maps.sh --only us" "$tmp/out" || bad "no maps: the line must say how to get them"
  grep -qE "^overlay " "$tmp/out" && bad "no maps: no overlay row expected"
else
  bad "no maps: the demo must still exit 0: $(cat "$tmp/err")"
fi

# bad input: exit 2, one line
for args in "--r $sample/tiles.rdxp" "--r $sample/tiles.rdxp --s $sample/tiles.rdxp --maps $tmp" "--r $tmp/none.rdxp --s $sample/tiles.rdxp"; do
  # shellcheck disable=SC2086
  "$rdx" demo "${small[@]}" $args > /dev/null 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "demo $args: exit $rc (want 2), stderr: $(cat "$tmp/err")"
done

[ $fail = 0 ] && echo "ok"
exit $fail
