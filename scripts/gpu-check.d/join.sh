# scripts/gpu-check.d/join.sh: the polygon joins' measurements of issue 28 (RayJoin's LSI and PIP).
# Sourced by scripts/gpu-check.sh (step "join") with RDX, OUT, log and bench. Every row runs the CPU
# backend (all cores), the soft-BVH CUDA backend and OptiX in one call, and its check column compares
# their answers (bench/README.md); RayJoin's adaptive grouping at s = 3.5 and off (s = 1).
#   join_lsi  LSI: every edge of S against R's index (feature pairs, rows count them)
#   join_pip  PIP: S's vertices located in R, general rule and RayJoin's planar rule
#   join_pip_rate  PIP throughput: 2^27 points uniform in R's box, points and answers in GPU memory
# Maps: $JOIN_MAPS (default .cache/gpu-maps) holds .rdxp files (scripts/fetch-maps.sh makes them)
# and npm tarballs of GeoJSON layers (@geo-maps/*), converted here: the GPU machine has no GDAL,
# so scripts/geojson2npy.py turns each map.geo.json into CSR arrays and `raydex convert` those.
# JOIN_PARTS (default "small big") picks the pairs: small = US counties/states and world
# 50m/10m, big = countries-land-10m and countries-maritime-10m.

maps=${JOIN_MAPS:-$root/.cache/gpu-maps}
jparts=" ${JOIN_PARTS:-small big} "
jb() { # jb <csv> <limit s> <args...>: bench() with a time limit
  local name=$1 limit=$2; shift 2
  local f=$OUT/csv/$name.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ timeout $limit raydex $* $hdr" >> "$OUT/logs/commands.txt"
  timeout "$limit" "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" || log "join bench $name FAILED (rc $?): raydex $*"
}
for tgz in "$maps"/*.tgz; do
  [ -f "$tgz" ] || continue
  name=$(basename "$tgz" .tgz)
  name=${name#geo-maps-}
  name=${name%-0.*}
  [ -f "$maps/$name.rdxp" ] && continue
  tmp=$(mktemp -d)
  tar -xzf "$tgz" -C "$tmp" package/map.geo.json &&
    python3 "$root/scripts/geojson2npy.py" "$tmp/package/map.geo.json" "$tmp/csr" >> "$OUT/logs/join-maps.log" 2>&1 &&
    "$RDX" convert --features "$tmp/csr.features.npy" --rings "$tmp/csr.rings.npy" --coords "$tmp/csr.coords.npy" \
      --out "$maps/$name.rdxp" >> "$OUT/logs/join-maps.log" 2>&1 || log "join: converting $tgz FAILED"
  rm -rf "$tmp"
done
ls -la "$maps" >> "$OUT/logs/join-maps.log"

B=cpu,cuda,optix
pair() { # pair <R> <S> <limit>: LSI, then PIP of S's vertices in R (general and planar)
  local r=$maps/$1.rdxp s=$maps/$2.rdxp
  [ -f "$r" ] && [ -f "$s" ] || { log "join: $1 or $2 missing"; return; }
  jb join_lsi "$3" bench join --op lsi --r "$r" --s "$s" --backend $B --group 3.5,1 --reps 5
  jb join_pip "$3" bench join --op pip --r "$r" --s "$s" --backend $B --group 3.5,1 --reps 5
  jb join_pip "$3" bench join --op pip --r "$r" --s "$s" --backend $B --group 3.5 --reps 5 --planar
}
if [[ $jparts == *" small "* ]]; then
  pair us-states us-counties 120
  pair countries-10m countries-50m 180
fi
if [[ $jparts == *" big "* ]]; then
  pair countries-maritime-10m countries-land-10m 400
  r=$maps/countries-land-10m.rdxp
  if [ -f "$r" ]; then
    jb join_pip_rate 200 bench join --op pip --r "$r" --points 2^27 --backend cuda,optix --group 3.5 --reps 5 --planar
    jb join_pip_rate 200 bench join --op pip --r "$r" --points 2^27 --backend cuda,optix --group 3.5 --reps 5
  fi
fi
