# scripts/gpu-check.d/profile.sh: Nsight Compute profiles of the kernels behind the open targets
# (step "profile" of scripts/gpu-check.sh; ~3 minutes on an H200). ncu reads the hardware counters
# on the lent Firecracker machines; --clock-control none leaves the clocks as the benchmarks see
# them. Text reports go to $OUT/logs/ncu-<name>.txt, and the kernel durations to summary.txt, to
# set beside the call times of the benchmark rows (the difference is host and launch overhead).
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
prof() { # prof <name> <kernel regex> <count> <sections...> -- <raydex args...>
  local name=$1 kre=$2 cnt=$3; shift 3
  local secs=()
  while [ "$1" != "--" ]; do secs+=(--section "$1"); shift; done
  shift
  echo "\$ ncu --clock-control none -k regex:$kre -c $cnt ${secs[*]} raydex $*" >> "$OUT/logs/commands.txt"
  timeout 240 "$NCU" --clock-control none -k "regex:$kre" -c "$cnt" "${secs[@]}" "$RDX" "$@" \
    > "$OUT/logs/ncu-$name.txt" 2>&1 || log "profile $name FAILED (rc $?; logs/ncu-$name.txt)"
  log "profile $name: $(grep -E '^ +Duration' "$OUT/logs/ncu-$name.txt" | awk '{print $2 $3}' | tr '\n' ' ' | cut -c1-300)"
}
full=(SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis
  SourceCounters)
# kNN, k = 16, 2^20 queries over 16.5M uniform f32 points, leaf capacity 1024 (issue 4's target)
prof knn_qt knn_warp_kernel 1 "${full[@]}" -- bench points --exp query --backend cuda --index quadtree --n 16500000 \
  --dist uniform --dtype f32 --leaf-capacity 1024 --max-depth 16 --queries 2^20 --type knn --k 16 --engine index --reps 1
# range counts, 2^16 lookups of 256 rows over 2^26 dense u32 keys (issue 3's range target): each
# kernel of one warm-up and one timed pass
for kind in rx cgrx; do
  prof range_$kind soft_query_kernel 2 SpeedOfLight Occupancy LaunchStats -- bench keys --backend cuda --kind $kind \
    --n 2^26 --dtype u32 --dist dense --op range-count --width 256 --lookups 2^16 --reps 1 --check none
done
# point lookups at 2^24 keys (issue 3's per-byte target at 2^24), one batch of 2^24 each
for kind in rx cgrx; do
  prof point24_$kind soft_query_kernel 2 SpeedOfLight Occupancy LaunchStats WarpStateStats -- bench keys --backend cuda \
    --kind $kind --n 2^24 --dtype u32 --dist sparse --uniformity 100 --lookups 2^24 --reps 1 --check none
done
