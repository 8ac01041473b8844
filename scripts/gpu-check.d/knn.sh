# scripts/gpu-check.d/knn.sh: exact kNN over 16.5M uniform f32 points, leaf capacity 1024 (the
# spatial_query setting), for k = 1, 16, 32 (one warp per query on the GPU) and 33 (one thread
# per query), quadtree and k-d tree, 2^16 .. 2^22 queries. The index rows are checked against the
# CPU backend (to 2^20 queries) in the same run. Sourced by scripts/gpu-check.sh (step "knn")
# with RDX, OUT and log; about 2-4 minutes on an H200, each run under a time limit.
# Results: $OUT/csv/spatial_knn.csv (queries_per_s of the engine=index rows is the figure).

knn_bench() { # like bench(), with a time limit so one stuck run cannot eat the GPU budget
  local limit=$1; shift
  local f=$OUT/csv/spatial_knn.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ timeout $limit raydex $* $hdr" >> "$OUT/logs/commands.txt"
  timeout "$limit" "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" || log "knn bench FAILED (rc $?): raydex $*"
}

t_knn=$(date +%s)
for idx in quadtree kdtree; do
  for k in 16 1 32 33; do
    knn_bench 90 bench points --exp query --backend cuda --index $idx --n 16500000 --dist uniform --dtype f32 \
      --leaf-capacity 1024 --max-depth 16 --queries 2^16,2^18,2^20,2^22 --type knn --k $k --engine index,cpu \
      --cpu-max 2^20 --reps 3
  done
done
log "knn: $(grep -c ',query,' "$OUT/csv/spatial_knn.csv" 2>/dev/null) rows in $(( $(date +%s) - t_knn )) s"
grep -h "WRONG" "$OUT"/csv/spatial_knn.csv 2>/dev/null | head -5 | while read -r l; do log "knn WRONG: $l"; done
