# scripts/gpu-check.d/join.sh: the polygon joins' measurements of issues 28 (RayJoin's LSI and PIP)
# and 29 (RayJoin's overlay, and the predicates). Sourced by scripts/gpu-check.sh (step "join") with
# RDX, OUT, log and bench. Every row runs the CPU backend (all cores), the soft-BVH CUDA backend and
# OptiX in one call, and its check column compares their answers (bench/README.md); RayJoin's
# adaptive grouping at s = 3.5 and off (s = 1).
#   join_lsi  LSI: every edge of S against R's index (feature pairs, rows count them)
#   join_pip  PIP: S's vertices located in R, general rule and RayJoin's planar rule
#   join_pip_rate  PIP throughput: 2^27 points uniform in R's box, points and answers in GPU memory
#   join_naive  each pair's LSI and PIP once more with plain float32 boxes (rdx_join_force_naive:
#             RayJoin without its conservative representation), the wrong answers in the check column
#   join_overlay, join_predicates  overlay with areas; intersects, contains, within (issue 29)
#   join_overlay_synth  overlay with areas of the synthetic grid pairs, time against segments
# Maps: .cache/maps/xz/*.rdxp.xz, made here by `scripts/fetch-maps.sh --xz` and carried to the
# GPU machine (no network, no GDAL there), where fetch-maps.sh unpacks them into .cache/maps/.
# JOIN_PARTS (default "small big synth polygons osynth") picks the pairs:
#   small     US states/counties and world countries 10m/50m
#   big       countries-maritime-10m with countries-land-10m, and PIP's rate on the latter
#   rate      that rate alone (ordered and in input order, and checked on 2^22 points)
#   synth     two perturbed grids of quads (raydex gen polygons --kind grid, seeds 1 and 2) of 10^6,
#             10^7 and 5 10^7 segments each, LSI and PIP, the CPU backend on the smallest only
#   polygons  the polygon joins of issue 29 (overlay with areas, intersects, contains, within) on
#             the three real pairs and countries-maritime-10m with @geo-maps/earth-seas-10m (R the
#             countries with their waters, S the seas). The two big pairs (R countries-maritime-10m)
#             time each row once (the CPU rows take seconds) and run overlay with grouping on and
#             off (s = 3.5,1); the small pairs, and the predicates everywhere, at s = 3.5
#   osynth    overlay with areas on synth's grid pairs, CUDA and OptiX at s = 3.5 and 1, 3
#             repetitions, the CPU backend on the smallest only (RayJoin's overlay experiment on
#             synthetic planar subdivisions)
#   streams   the two directions' side PIP side by side on two streams (the default) against one
#             stream (--one-stream), alternated, on the two big pairs: overlay with and without
#             areas and contains, CUDA and OptiX at s = 3.5, 5 repetitions (join_streams)
# The polygon rows (overlay, predicates) carry per-stage times after check (index_ms ... result_ms,
# tools/cmd_bench_join.c); bench/plot_join.py stacks them.

jparts=" ${JOIN_PARTS:-small big synth polygons osynth} "
jb() { # jb <csv> <limit s> <args...>: bench() with a time limit
  local name=$1 limit=$2; shift 2
  local f=$OUT/csv/$name.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ timeout $limit raydex $* $hdr" >> "$OUT/logs/commands.txt"
  timeout "$limit" "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" || log "join bench $name FAILED (rc $?): raydex $*"
}
bash "$root/scripts/fetch-maps.sh" --raydex "$RDX" > "$OUT/logs/join-maps.log" 2>&1 || log "join: fetch-maps.sh could not make every layer"
maps=$root/.cache/maps

B=cpu,cuda,optix
pair() { # pair <R> <S> <limit>: LSI, then PIP of S's vertices in R (general and planar)
  local r=$maps/$1.rdxp s=$maps/$2.rdxp
  [ -f "$r" ] && [ -f "$s" ] || { log "join: $1 or $2 missing"; return; }
  jb join_lsi "$3" bench join --op lsi --r "$r" --s "$s" --backend $B --group 3.5,1 --reps 5
  jb join_pip "$3" bench join --op pip --r "$r" --s "$s" --backend $B --group 3.5,1 --reps 5
  jb join_pip "$3" bench join --op pip --r "$r" --s "$s" --backend $B --group 3.5 --reps 5 --planar
  # RayJoin's precision experiment: the same joins with plain float32 boxes, their wrong answers
  jb join_naive "$3" bench join --op lsi --r "$r" --s "$s" --backend cuda --group 3.5 --reps 1 --naive
  jb join_naive "$3" bench join --op pip --r "$r" --s "$s" --backend cuda --group 3.5 --reps 1 --naive
}
if [[ $jparts == *" small "* ]]; then
  pair us-states us-counties 120
  pair world-countries-10m world-countries-50m 180
fi
[[ $jparts == *" big "* ]] && pair countries-maritime-10m countries-land-10m 240
land=$maps/countries-land-10m.rdxp
if [[ $jparts == *" big "* || $jparts == *" rate "* ]] && [ -f "$land" ]; then
  # the GPU sorts the points by their Morton cell before tracing (pip.cu); --input-order rows do not
  for o in "" --input-order; do
    jb join_pip_rate 180 bench join --op pip --r "$land" --points 2^27 --backend cuda,optix --group 3.5,1 --reps 5 --planar $o
    jb join_pip_rate 240 bench join --op pip --r "$land" --points 2^27 --backend cuda,optix --group 3.5,1 --reps 5 $o
  done
  # the same random points checked against the CPU backend, at a size the CPU answers in seconds
  jb join_pip_rate_check 240 bench join --op pip --r "$land" --points 2^22 --backend cpu,cuda,optix --group 3.5 --reps 1
fi
grids() { # grids <n>: the pair of perturbed grids of n quads (4n segments), seeds 1 and 2, made once
  # into gr and gs (not r, s: gpu-check.sh's own loop variable is s), and the backends for that size
  # in gb (the CPU backend on the smallest only); returns 1 when a grid could not be made
  local seed f
  for seed in 1 2; do
    f=$maps/grid-$1-$seed.rdxp
    [ -f "$f" ] || timeout 300 "$RDX" gen polygons --kind grid --n "$1" --seed $seed --out "$f" --quiet ||
      log "join: gen polygons --n $1 --seed $seed FAILED"
  done
  gr=$maps/grid-$1-1.rdxp gs=$maps/grid-$1-2.rdxp gb=cuda,optix
  [ "$1" -le 250000 ] && gb=cpu,cuda,optix
  [ -f "$gr" ] && [ -f "$gs" ]
}
synth_n="250000 2500000 12500000"
if [[ $jparts == *" synth "* ]]; then
  for n in $synth_n; do
    grids "$n" || continue
    jb join_lsi_synth 300 bench join --op lsi --r "$gr" --s "$gs" --backend $gb --group 3.5,1 --reps 5
    jb join_pip_synth 300 bench join --op pip --r "$gr" --s "$gs" --backend $gb --group 3.5 --reps 5 --planar
  done
fi
if [[ $jparts == *" polygons "* ]]; then
  for pr in "us-states us-counties" "world-countries-10m world-countries-50m" \
    "countries-maritime-10m countries-land-10m" "countries-maritime-10m earth-seas-10m"; do
    read -r pa pb <<< "$pr"
    jr=$maps/$pa.rdxp js=$maps/$pb.rdxp
    [ -f "$jr" ] && [ -f "$js" ] || { log "join: $pa or $pb missing"; continue; }
    reps=3 og=3.5
    # the big pairs: the CPU rows take seconds each; overlay with grouping on and off
    [ "$pa" = countries-maritime-10m ] && reps=1 og=3.5,1
    jb join_overlay 300 bench join --op overlay --r "$jr" --s "$js" --backend $B --group $og --reps $reps --areas
    # the pairs alone (the issue's overlay figure): fewer side queries than with areas (overlay_hd.h)
    jb join_overlay 300 bench join --op overlay --r "$jr" --s "$js" --backend $B --group $og --reps $reps
    for op in intersects contains within; do
      jb join_predicates 300 bench join --op $op --r "$jr" --s "$js" --backend $B --group 3.5 --reps $reps
    done
  done
fi
if [[ $jparts == *" streams "* ]]; then
  for pb in countries-land-10m earth-seas-10m; do
    jr=$maps/countries-maritime-10m.rdxp js=$maps/$pb.rdxp
    [ -f "$jr" ] && [ -f "$js" ] || { log "join: countries-maritime-10m or $pb missing"; continue; }
    for round in 1 2; do
      for how in "" --one-stream; do
        jb join_streams 300 bench join --op overlay --r "$jr" --s "$js" --backend cuda,optix --reps 5 --areas $how
        jb join_streams 300 bench join --op overlay --r "$jr" --s "$js" --backend cuda,optix --reps 5 $how
        jb join_streams 300 bench join --op contains --r "$jr" --s "$js" --backend cuda,optix --reps 5 $how
      done
    done
  done
fi
if [[ $jparts == *" osynth "* ]]; then
  # RayJoin's overlay experiment on the synthetic planar subdivisions: synth's grid pairs
  for n in $synth_n; do
    grids "$n" || continue
    jb join_overlay_synth 300 bench join --op overlay --r "$gr" --s "$gs" --backend $gb --group 3.5,1 --reps 3 --areas
  done
fi
