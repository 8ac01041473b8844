# scripts/gpu-check.d/sort.sh: the per-query sort of range fills (src/core/csr_sort.cu) and the
# lookup generator's misses inside the key range (src/io/gen.c). Sourced by scripts/gpu-check.sh
# with RDX, OUT and bench(); run it as
#     scripts/gpu-check.sh tests segsort sort
#
# (a) keys_sort.csv: range fills (count, scan, fill, per-query sort) over 2^26 dense u32 keys in
#     random order (so each range's rows come unsorted), 16 .. 65536 rows per range, with the
#     sort path chosen by the library (auto) and forced (--csr-sort segmented|packed); the
#     last column says which. Widths 64/128/256 straddle CUB's in-register limit (64 rows of u64).
#     Compare the auto rows with bench/results/NVIDIA-H200/keys_range.csv (width 256: 362 ms).
# The generator of misses inside the key range is measured by rt.sh (d), rt_hits_inside.csv.
SORT_REPS=${SORT_REPS:-3}
sort_bench() { # sort_bench <mode> <bench args...>: rows to keys_sort.csv with a `sort` column
  local mode=$1; shift
  local f=$OUT/csv/keys_sort.csv tmp=$OUT/csv/.keys_sort.tmp
  echo "\$ raydex $* --csr-sort $mode --header" >> "$OUT/logs/commands.txt"
  if ${BENCH_TIMEOUT:+timeout $BENCH_TIMEOUT} "$RDX" "$@" --csr-sort "$mode" --header > "$tmp" 2>> "$OUT/logs/bench-stderr.log"; then
    [ -s "$f" ] || head -1 "$tmp" | sed 's/$/,sort/' > "$f"
    tail -n +2 "$tmp" | sed "s/\$/,$mode/" >> "$f"
  else
    log "sort bench FAILED: raydex $* --csr-sort $mode"
  fi
  rm -f "$tmp"
}
sort_t0=$(date +%s)
for mode in auto packed segmented; do
  sort_bench $mode bench keys --backend cuda --kind sorted --n 2^26 --dtype u32 --dist dense --op range \
    --width 16,64,128,256,1024 --lookups 2^22 --reps "$SORT_REPS" --check sample
  sort_bench $mode bench keys --backend cuda --kind sorted --n 2^26 --dtype u32 --dist dense --op range \
    --width 4096,16384,65536 --lookups 2^14 --reps "$SORT_REPS" --check sample
done
log "sort: range fills done in $(( $(date +%s) - sort_t0 )) s: $(awk -F, 'NR>1 && $NF=="auto" {printf "w%s %s ms; ", $11, $17}' "$OUT/csv/keys_sort.csv")"
