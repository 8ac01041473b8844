# scripts/gpu-check.d/spatial.sh: the spatial point index measurements of issue 4. Sourced by
# scripts/gpu-check.sh (step "spatial") with RDX, OUT, log and bench; about 4 minutes on an H200,
# and never more than 15 (each run has a time limit):
#   spatial_build   quadtree builds, bottom-up vs top-down, 2^24 .. 1.7e8 taxi-like f32 points,
#                   16 levels, leaf capacity 200 (the paper's setting); points already in GPU memory
#                   ("device") and copied in by the call ("host", the paper's end-to-end);
#   spatial_query   2^10 .. 2^22 concurrent queries of each type over 16.5M uniform points, leaf
#                   capacity 1024 (G-PICS's setting): the index, a brute-force GPU scan (to 2^16
#                   queries; it is linear in the batch) and the CPU backend on every core (to 2^20);
#   spatial_update  1% .. 50% of 16.5M taxi-like points moved per batch, against a rebuild:
#                   quadtrees in the default (paged) layout, engine "update" (paging to a tenth of
#                   the points, a rebuild above), and in the dense layout, "update-dense" (the
#                   merge); k-d trees, "update" (the repair, a rebuild above half). The moved points
#                   go to places of another hot-spot layout (--moves relocate, the default);
#                   spatial_update_resample.csv: to fresh samples of the index's own layout;
#                   spatial_update_uniform.csv: uniformly in the box (G-PICS's "random new
#                   positions"); in both, "update-resample-dense" and "update-uniform-dense" at
#                   5-10%.
# SPATIAL_PARTS (default "build query update") picks the parts to run.
# Rows carry a check column (bench/README.md); bench/plot_spatial.py draws the PNGs.

sp_bench() { # like bench(), with a time limit so one stuck run cannot eat the GPU budget
  local name=$1 limit=$2; shift 2
  local f=$OUT/csv/$name.csv hdr=--header
  [ -s "$f" ] && hdr=
  echo "\$ timeout $limit raydex $* $hdr" >> "$OUT/logs/commands.txt"
  timeout "$limit" "$RDX" "$@" $hdr >> "$f" 2>> "$OUT/logs/bench-stderr.log" || log "spatial bench $name FAILED (rc $?): raydex $*"
}

parts=" ${SPATIAL_PARTS:-build query update} "
if [[ $parts == *" build "* ]]; then
t_sp=$(date +%s)
sp_bench spatial_build 100 bench points --exp build --backend cuda --index quadtree --build bottomup,topdown \
  --n 2^24,2^25,2^26,2^27,170000000 --dist taxi --dtype f32 --leaf-capacity 200 --max-depth 16 --where device,host --reps 3
log "spatial build: $(grep -c ',build,' "$OUT/csv/spatial_build.csv" 2>/dev/null) rows in $(( $(date +%s) - t_sp )) s"
fi

if [[ $parts == *" query "* ]]; then
t_sp=$(date +%s)
sp_bench spatial_query 110 bench points --exp query --backend cuda --index quadtree --n 16500000 --dist uniform --dtype f32 \
  --leaf-capacity 1024 --max-depth 16 --queries 2^10,2^12,2^14,2^16,2^18,2^20,2^22 --type window,within,match,knn --k 16 \
  --engine index,brute,cpu --brute-max 2^16 --cpu-max 2^20 --reps 3
sp_bench spatial_query 80 bench points --exp query --backend cuda --index kdtree --n 16500000 --dist uniform --dtype f32 \
  --leaf-capacity 1024 --queries 2^10,2^14,2^18,2^20,2^22 --type window,within,match,knn --k 16 --engine index,cpu \
  --cpu-max 2^20 --reps 3
# the brute force at 2^20 windows (the target's batch), once: it is linear in the batch
sp_bench spatial_query 60 bench points --exp query --backend cuda --index quadtree --n 16500000 --dist uniform --dtype f32 \
  --leaf-capacity 1024 --max-depth 16 --queries 2^20 --type window --engine brute --brute-max 2^20 --reps 1
log "spatial query: $(grep -c ',query,' "$OUT/csv/spatial_query.csv" 2>/dev/null) rows in $(( $(date +%s) - t_sp )) s"
fi

if [[ $parts == *" update "* ]]; then
t_sp=$(date +%s)
up=(bench points --exp update --backend cuda --n 16500000 --dist taxi --dtype f32 --leaf-capacity 1024 --max-depth 16)
for idx in quadtree kdtree; do
  sp_bench spatial_update 90 "${up[@]}" --index $idx --moved 1,2,3,4,5,10,20,50 --reps 18
done
sp_bench spatial_update 50 "${up[@]}" --index quadtree --moved 1,2,3,4,5,10,20,50 --reps 5 --layout dense
sp_bench spatial_update_resample 90 "${up[@]}" --index quadtree --moved 1,2,3,4,5,10,20,50 --reps 18 --moves resample
sp_bench spatial_update_uniform 90 "${up[@]}" --index quadtree --moved 1,2,3,4,5,10,20,50 --reps 18 --moves uniform
sp_bench spatial_update_resample 50 "${up[@]}" --index quadtree --moved 5,10 --reps 5 --moves resample --layout dense
sp_bench spatial_update_uniform 50 "${up[@]}" --index quadtree --moved 5,10 --reps 5 --moves uniform --layout dense
log "spatial update: $(grep -c ',update' "$OUT/csv/spatial_update.csv" 2>/dev/null) rows in $(( $(date +%s) - t_sp )) s"
fi

grep -h "WRONG" "$OUT"/csv/spatial_*.csv 2>/dev/null | head -5 | while read -r l; do log "spatial WRONG: $l"; done
