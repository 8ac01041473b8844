#!/usr/bin/env bash
# The `raydex convert` command-line contract: a polygon layer (GeoJSON, TopoJSON, WKT in CSV
# through GDAL when the build has it, or .rdxp) becomes a .rdxp that reloads identical; the
# committed samples under data/sample/ reproduce byte for byte (from their GeoJSON with GDAL, and
# from themselves without); bad input exits 2 with one line on stderr naming the option, leaving
# no file behind and an existing output untouched. Usage: test_convert.sh RAYDEX BACKEND
set -u
rdx=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") backend=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 rows=0
bad() { echo "FAIL: $*"; fail=1; }
work=$tmp/work
mkdir "$work" && cd "$work" || exit 1
sample=$root/data/sample

# a backend that cannot run here is skipped
if ! "$rdx" convert --backend "$backend" --in "$sample/tiles.rdxp" --out probe.rdxp --quiet 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
  bad "probe: $(cat "$tmp/err")"
fi
rm -f probe.rdxp
gdal=1
"$rdx" info | grep -q '^gdal: not built' && gdal=0
C=(convert --backend "$backend")

# ---- the samples reproduce: .rdxp to .rdxp always, GeoJSON to .rdxp with GDAL ----
for s in tiles us-counties-ri-de; do
  "$rdx" "${C[@]}" --in "$sample/$s.rdxp" --out "$s.rdxp" 2>"$tmp/err" || bad "$s.rdxp: $(cat "$tmp/err")"
  cmp -s "$s.rdxp" "$sample/$s.rdxp" || bad "$s.rdxp does not reconvert to itself"
  [ $s = tiles ] && ! grep -q "^raydex convert: .*tiles.rdxp: 4 features, 8 rings, 29 vertices (f64) to tiles.rdxp$" "$tmp/err" &&
    bad "the success line: $(cat "$tmp/err")"
  if [ $gdal = 1 ]; then
    "$rdx" "${C[@]}" --in "$sample/$s.geojson" --out "$s.g.rdxp" --quiet || bad "$s.geojson did not convert"
    cmp -s "$s.g.rdxp" "$sample/$s.rdxp" || bad "$s.geojson converts to other bytes than data/sample/$s.rdxp"
  fi
done
"$rdx" "${C[@]}" --in "$sample/tiles.rdxp" --out q.rdxp --quiet 2>"$tmp/err"
[ -s "$tmp/err" ] && bad "--quiet printed: $(cat "$tmp/err")"
rm -f ./*.rdxp

# fixtures, in the working directory (whose listing each row compares)
cp "$sample/tiles.rdxp" good.rdxp
head -c 100 good.rdxp > trunc.rdxp
cp good.rdxp corrupt.rdxp && printf '\x7f' | dd of=corrupt.rdxp bs=1 seek=200 conv=notrunc status=none
printf 'RDXPOLY\0' > short.rdxp
printf '{"type": "FeatureCollection", "features": []}' > notours.rdxp
mkdir dir emptydir
cat > line.geojson <<'EOF'
{"type": "FeatureCollection", "features": [
 {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[0,1],[0,0]]]}},
 {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[0,0],[1,1]]}}]}
EOF
cat > flat.geojson <<'EOF'
{"type": "FeatureCollection", "features": [
 {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[0,1],[0,0]]]}},
 {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,1],[0,0],[1,1]]]}}]}
EOF
cat > two.json <<'EOF'
{"type":"Topology","objects":{
 "big":{"type":"GeometryCollection","geometries":[{"type":"Polygon","arcs":[[0]]},{"type":"Polygon","arcs":[[1]]}]},
 "small":{"type":"GeometryCollection","geometries":[{"type":"Polygon","arcs":[[1]]}]}},
 "arcs":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[20,20],[21,20],[21,21],[20,20]]]}
EOF
cat > collapsed.csv <<'EOF'
id,WKT
1,"MULTIPOLYGON (((3 3,3 3,3 3,3 3)),((0 0,1 0,0 1,0 0)))"
2,"POLYGON ((5 5,6 5,5 6,5 5))"
EOF

# ---- TopoJSON layers, empty geometries, collapsed rings (GDAL) ----
if [ $gdal = 1 ]; then
  "$rdx" "${C[@]}" --in two.json --layer small --out s.rdxp 2>"$tmp/err" || bad "--layer small: $(cat "$tmp/err")"
  grep -q ": 1 features, 1 rings, 3 vertices" "$tmp/err" || bad "--layer small read: $(cat "$tmp/err")"
  "$rdx" "${C[@]}" --in two.json --out b.rdxp 2>"$tmp/err" || bad "two.json: $(cat "$tmp/err")"
  grep -q ": 2 features, 2 rings, 7 vertices" "$tmp/err" || bad "two.json's first layer: $(cat "$tmp/err")"
  "$rdx" "${C[@]}" --in collapsed.csv --out d.rdxp --drop-degenerate 2>"$tmp/err" || bad "--drop-degenerate: $(cat "$tmp/err")"
  grep -q ": 2 features, 2 rings, 6 vertices (f64) to d.rdxp; dropped 1 degenerate ring (the first: feature 0 ring 0, 1 distinct vertices)$" "$tmp/err" ||
    bad "--drop-degenerate's line: $(cat "$tmp/err")"
  "$rdx" "${C[@]}" --in d.rdxp --out e.rdxp --quiet && cmp -s d.rdxp e.rdxp || bad "a dropped layer does not reload identical"
  rm -f s.rdxp b.rdxp d.rdxp e.rdxp
else
  echo "skipped: no GDAL (the GeoJSON, TopoJSON and CSV parts; .rdxp inputs only)"
fi

# ---- gen polygons: the same seed gives the same file, a layer that converts to itself ----
"$rdx" gen polygons --kind grid --n 1000 --seed 5 --out g1.rdxp 2>"$tmp/err" || bad "gen polygons grid: $(cat "$tmp/err")"
grep -q "wrote g1.rdxp: 1000 grid polygons, 4000 segments (a planar subdivision)" "$tmp/err" || bad "gen's line: $(cat "$tmp/err")"
"$rdx" gen polygons --kind grid --n 1000 --seed 5 --out g2.rdxp --quiet
cmp -s g1.rdxp g2.rdxp || bad "gen polygons: one seed, two files"
"$rdx" gen polygons --kind random --n 500 --vertices 12 --out r.rdxp --quiet || bad "gen polygons random"
for f in g1 r; do
  "$rdx" "${C[@]}" --in $f.rdxp --out $f.c.rdxp --quiet && cmp -s $f.rdxp $f.c.rdxp || bad "gen polygons' $f.rdxp does not convert to itself"
done
rm -f g1.rdxp g2.rdxp r.rdxp g1.c.rdxp r.c.rdxp

# row OPTION ARGS...: `raydex ARGS` exits 2 with one stderr line naming --OPTION, and the
# working directory is as it was
row() {
  local opt=$1; shift
  rows=$((rows + 1))
  local before after rc
  before=$(ls -A)
  "$rdx" "$@" > /dev/null 2> "$tmp/err" < /dev/null
  rc=$?
  after=$(ls -A)
  local what="raydex $*"
  [ $rc -eq 2 ] || bad "$what: exit $rc, wanted 2 ($(head -c 300 "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "$what: stderr has $(wc -l < "$tmp/err") lines: $(head -c 300 "$tmp/err")"
  grep -qE -- "--$opt([ :,']|$)" "$tmp/err" || bad "$what: the message does not name --$opt: $(cat "$tmp/err")"
  [ "$before" = "$after" ] || bad "$what: left files behind: $(diff <(echo "$before") <(echo "$after") | grep '^>' | tr '\n' ' ')"
}

row in "${C[@]}" --out o.rdxp
row out "${C[@]}" --in good.rdxp
row in "${C[@]}" --in missing.rdxp --out o.rdxp
row in "${C[@]}" --in '' --out o.rdxp
row in "${C[@]}" --in trunc.rdxp --out o.rdxp
row in "${C[@]}" --in corrupt.rdxp --out o.rdxp
row in "${C[@]}" --in short.rdxp --out o.rdxp
row in "${C[@]}" --in notours.rdxp --out o.rdxp
row in "${C[@]}" --in emptydir --out o.rdxp
row out "${C[@]}" --in good.rdxp --out o.geojson
row out "${C[@]}" --in good.rdxp --out missing/o.rdxp
row out "${C[@]}" --in good.rdxp --out dir
row out "${C[@]}" --in good.rdxp --out ./good.rdxp
row layer "${C[@]}" --in good.rdxp --layer counties --out o.rdxp
row layer "${C[@]}" --in good.rdxp --layer '' --out o.rdxp
row backend convert --backend gpu --in good.rdxp --out o.rdxp
row in "${C[@]}" --in good.rdxp --in good.rdxp --out o.rdxp
row quiet "${C[@]}" --in good.rdxp --out o.rdxp --quiet --quiet
row kind gen polygons --n 10 --out o.rdxp
row kind gen polygons --kind hex --n 10 --out o.rdxp
row vertices gen polygons --kind grid --n 10 --vertices 5 --out o.rdxp
row vertices gen polygons --kind random --n 10 --vertices 2 --out o.rdxp
row n gen polygons --kind random --n 2^40 --out o.rdxp
row out gen polygons --kind grid --n 10 --out o.npy
if [ $gdal = 1 ]; then
  row in "${C[@]}" --in line.geojson --out o.rdxp
  row in "${C[@]}" --in flat.geojson --out o.rdxp
  row in "${C[@]}" --in collapsed.csv --out o.rdxp
  row layer "${C[@]}" --in two.json --layer states --out o.rdxp
  grep -q 'no layer named "states" (layers: big, small)' "$tmp/err" || bad "an unknown layer's message: $(cat "$tmp/err")"
else
  row in "${C[@]}" --in line.geojson --out o.rdxp
  grep -q "built without GDAL" "$tmp/err" || bad "a GeoJSON input without GDAL: $(cat "$tmp/err")"
fi
grep -q "rdx_polygons_load" "$tmp/err" || grep -q "without GDAL" "$tmp/err" || bad "the last row's message: $(cat "$tmp/err")"

# a failed run leaves an existing output untouched
cp good.rdxp keep.rdxp
"$rdx" "${C[@]}" --in corrupt.rdxp --out keep.rdxp 2>/dev/null && bad "a corrupted input converted"
cmp -s keep.rdxp good.rdxp || bad "a failed run changed the existing output"
ls -A | grep -q tmp && bad "temporaries left behind: $(ls -A | grep tmp)"

echo "$rows bad-input rows checked"
[ $fail -eq 0 ] && echo "all convert checks passed"
exit $fail
