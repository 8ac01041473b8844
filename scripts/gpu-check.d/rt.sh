# scripts/gpu-check.d/rt.sh: the ray-tracing key indexes (rx, cgrx) on the GPU, reproducing the
# cgRX paper's evaluation (Section VI) on raydex's two GPU backends: optix (OptiX; on GPUs without
# RT cores, like the H200, its traversal runs in software on the SMs) and cuda (raydex's own soft
# BVH in CUDA). Sourced by scripts/gpu-check.sh with RDX, OUT and bench(); run it as
#     scripts/gpu-check.sh tests rt
#
# Experiments (CSV in $OUT/csv/rt_<x>.csv; plots and rt_summary.txt by bench/plot_rt.py):
#   (a) rt_memory: throughput vs memory: rx, cgrx (bucket 4, 16, 32, 256), sorted, btree, hash;
#       2^26 keys, 2^27 uniform lookups, all hits; u32 at uniformity 0/20/50/100 %, u64 at 0/100 %;
#       build_ms includes the sort of the keys (cgrx, sorted, btree; rx sorts to find duplicates)
#   (b) rt_range, rt_range_count: 1 .. 2^20 rows per range lookup over 2^26 dense u32 keys, 2^16
#       lookups (fewer for the widest: at most 2^26 rows per batch); `range` returns every row id
#       (count, scan, fill and the API's ascending row order per lookup, a segmented sort that
#       every kind pays), `range-count` only counts (rx still visits every hit with a ray, cgrx and
#       sorted find both ends by search); the paper's aggregating scan lies between the two
#   (c) rt_batch: point-lookup batches of 2^9 .. 2^22 (2^22 lookups in all; the 2^27 batch is (a))
#   (d) rt_hits_inside, rt_hits_outside: hit ratio 0, 0.5, 1, misses inside / outside the key range
#   (e) rt_zipf: Zipf-skewed lookups, coefficient 0, 1, 2, 5
#
# Trimmed to fit ~8 minutes of GPU time (an estimate: no H200 run of this step yet). Compared with
# the paper: 4 of its 12 bucket sizes; u64 only at uniformity 0 and 100 %; 6 range widths (4^k
# steps of 16); 6 batch sizes; 3 hit ratios; 4 Zipf coefficients; 3 timed runs per row (--reps 3).
# Answers are checked against the oracle on a 65536-query sample in one invocation per experiment
# (building the oracle of 2^26 keys takes ~15 s of CPU); the other rows say "skipped": the GPU
# tests (rt_identical, keys_rx, keys_cgrx) compare every answer with the CPU backend. Widen with
# RT_BUCKETS, RT_REPS, RT_CHECK_ALL=sample.
RT_N=${RT_N:-2^26}
RT_LOOKUPS=${RT_LOOKUPS:-2^27}
RT_REPS=${RT_REPS:-3}
RT_BUCKETS=${RT_BUCKETS:-4,16,32,256}
RT_CHECK_ALL=${RT_CHECK_ALL:-none}
rt_t0=$(date +%s)
rt_log() { log "rt: $* ($(( $(date +%s) - rt_t0 )) s)"; }
rt_run() { # rt_run <csv> <check> <bench args...>
  local csv=$1 chk=$2
  shift 2
  bench "$csv" bench keys --n "$RT_N" --reps "$RT_REPS" --check "$chk" "$@"
}

# (a) throughput against memory
for cfg in "u32 100 sample" "u32 0 $RT_CHECK_ALL" "u32 20 $RT_CHECK_ALL" "u32 50 $RT_CHECK_ALL" \
           "u64 100 sample" "u64 0 $RT_CHECK_ALL"; do
  read -r rt_dt rt_u rt_chk <<< "$cfg"
  rt_run rt_memory "$rt_chk" --backend cuda,optix --kind rx,cgrx,sorted,btree,hash --bucket-size "$RT_BUCKETS" \
    --dtype "$rt_dt" --dist sparse --uniformity "$rt_u" --lookups "$RT_LOOKUPS"
  rt_log "(a) $rt_dt uniformity $rt_u %"
done

# (b) range lookups
rt_widths=1,16,256,4096,65536,1048576
rt_run rt_range sample --backend cuda,optix --kind rx,cgrx,sorted,btree --bucket-size 32,256 --dtype u32 \
  --dist dense --op range --width $rt_widths --lookups 2^16 --max-results 2^26
rt_run rt_range_count "$RT_CHECK_ALL" --backend cuda,optix --kind rx,cgrx,sorted --bucket-size 32 --dtype u32 \
  --dist dense --op range-count --width $rt_widths --lookups 2^16 --max-results 2^26
rt_log "(b) ranges"

# (c) batch sizes
rt_run rt_batch "$RT_CHECK_ALL" --backend cuda,optix --kind rx,cgrx,sorted --dtype u32 --dist uniform --lookups 2^22 \
  --batch 2^9,2^12,2^15,2^18,2^21,2^22
rt_log "(c) batches"

# (d) hit ratio, misses inside and outside the key range (one CSV each: rows carry no miss column)
rt_run rt_hits_inside sample --backend cuda,optix --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
  --lookups "$RT_LOOKUPS" --hit-ratio 0,0.5,1 --miss inside
rt_run rt_hits_outside "$RT_CHECK_ALL" --backend cuda,optix --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
  --lookups "$RT_LOOKUPS" --hit-ratio 0,0.5,1 --miss outside
rt_log "(d) hit ratio"

# (e) Zipf-skewed lookups
rt_run rt_zipf sample --backend cuda,optix --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
  --lookups "$RT_LOOKUPS" --zipf 0,1,2,5
rt_log "(e) zipf"

python3 bench/plot_rt.py "$OUT/csv" "$OUT/csv" > "$OUT/logs/plot_rt.log" 2>&1 || log "rt: plot failed (logs/plot_rt.log)"
log "rt: $(grep -c . "$OUT/csv/rt_summary.txt" 2>/dev/null) summary lines in csv/rt_summary.txt"
