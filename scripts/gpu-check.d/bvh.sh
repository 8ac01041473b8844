# scripts/gpu-check.d/bvh.sh: the soft traversal's two tree layouts on the GPU, binary LBVH
# (RAYDEX_BVH=2) against its BVH4 collapse (RAYDEX_BVH=4, the default), for rx and cgrx on the
# cuda backend; optix once as the reference. Sourced by scripts/gpu-check.sh with RDX, OUT and
# bench(); run it as
#     scripts/gpu-check.sh tests bvh
# (the tests step runs rt_layouts.cuda, which checks that both layouts answer the same and that
# the GPU builds equal the CPU's, and the .bvh2 entries of rt_bvh, rt_identical, keys_rx, keys_cgrx).
#
# Rows: $OUT/csv/rt_bvh2.csv and rt_bvh4.csv (raydex bench keys rows), merged into rt_bvh.csv with
# a `layout` column for bench/plot_bvh.py. 2^26 u32 keys (sparse, uniformity 100, as rt.sh (a)),
# cgrx bucket 32; 2^27 lookups (throughput) and 2^16 lookups (one small, latency-bound batch).
# bytes_per_key shows each layout's memory. About 3 minutes of GPU time.
BVH_N=${BVH_N:-2^26}
BVH_REPS=${BVH_REPS:-3}
bvh_t0=$(date +%s)
for bvh_l in 2 4; do
  export RAYDEX_BVH=$bvh_l
  BENCH_TIMEOUT=200 bench rt_bvh$bvh_l bench keys --backend cuda --kind rx,cgrx --bucket-size 32 --n "$BVH_N" \
    --dtype u32 --dist sparse --uniformity 100 --lookups 2^27,2^16 --reps "$BVH_REPS" --check sample
  log "bvh: layout $bvh_l done ($(( $(date +%s) - bvh_t0 )) s)"
done
unset RAYDEX_BVH
BENCH_TIMEOUT=200 bench rt_bvh_optix bench keys --backend optix --kind rx,cgrx --bucket-size 32 --n "$BVH_N" \
  --dtype u32 --dist sparse --uniformity 100 --lookups 2^27,2^16 --reps "$BVH_REPS" --check none
# one CSV with the layout as a column (optix rows: layout "optix")
for bvh_l in 2 4 _optix; do
  f=$OUT/csv/rt_bvh$bvh_l.csv
  [ -s "$f" ] || continue
  tag=${bvh_l#_}
  if [ -s "$OUT/csv/rt_bvh.csv" ]; then
    awk -F, -v t="$tag" 'NR > 1 && $1 !~ /^date/ { print $0 "," t }' "$f" >> "$OUT/csv/rt_bvh.csv"
  else
    awk -F, -v t="$tag" 'NR == 1 { print $0 ",layout"; next } $1 !~ /^date/ { print $0 "," t }' "$f" > "$OUT/csv/rt_bvh.csv"
  fi
done
