# scripts/gpu-check.d/knn.sh: exact kNN over 16.5M uniform f32 points, leaf capacity 1024 (the
# spatial_query setting), for k = 1, 32 (one warp per query on the GPU) and 33 (one thread per
# query), quadtree, 2^18 and 2^20 queries. The index rows are checked against the
# CPU backend (to 2^18 queries) in the same run. Sourced by scripts/gpu-check.sh (step "knn")
# with RDX, OUT and log; about a minute on an H200, each run under a time limit.
# Results: $OUT/csv/spatial_knn.csv (queries_per_s of the engine=index rows is the figure).

knn_bench() { # like bench(), with a time limit so one stuck run cannot eat the GPU budget
  local limit=$1; shift
  local f=$OUT/csv/spatial_knn.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ timeout $limit raydex $* $hdr" >> "$OUT/logs/commands.txt"
  timeout "$limit" "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" || log "knn bench FAILED (rc $?): raydex $*"
}

t_knn=$(date +%s)
# k = 16 for both kinds is in spatial_query (spatial.sh); here the other list sizes on the
# quadtree: 1 and 32 (one warp per query, the list's ends) and 33 (one thread per query)
for k in 1 32 33; do
  knn_bench 90 bench points --exp query --backend cuda --index quadtree --n 16500000 --dist uniform --dtype f32 \
    --leaf-capacity 1024 --max-depth 16 --queries 2^18,2^20 --type knn --k $k --engine index,cpu --cpu-max 2^18 --reps 3
done
log "knn: $(grep -c ',query,' "$OUT/csv/spatial_knn.csv" 2>/dev/null) rows in $(( $(date +%s) - t_knn )) s"
grep -h "WRONG" "$OUT"/csv/spatial_knn.csv 2>/dev/null | head -5 | while read -r l; do log "knn WRONG: $l"; done
