# scripts/gpu-check.d/rt.sh: the ray-tracing key indexes (rx, cgrx) on the GPU, reproducing the
# cgRX paper's evaluation (Section VI) on raydex's two GPU backends: optix (OptiX; on GPUs without
# RT cores its traversal runs in software on the SMs) and cuda (raydex's soft BVH in CUDA).
# Sourced by scripts/gpu-check.sh with RDX, OUT and bench(); run as `scripts/gpu-check.sh tests rt`.
#
# Experiments (CSV in $OUT/csv/rt_<x>.csv, plots by bench/plot_rt.py):
#   (a) rt_memory: throughput vs memory, rx, cgrx (bucket 4, 16, 32, 256), sorted, btree, hash;
#       2^26 keys, 2^27 uniform lookups (all hits); u32 at uniformity 0/20/50/100 %, u64 at 0/100 %
#   (b) rt_range, rt_range_count: range lookups of 2^0 .. 2^20 hits (dense u32 keys, 2^16 lookups,
#       capped at 2^28 returned rows per batch: fewer lookups for the widest ranges), rx, cgrx, sorted,
#       btree; rows returned (range) and counted only (range-count)
#   (c) rt_batch:  point-lookup batches of 2^9 .. 2^22 (2^22 lookups in all; 2^27 is (a))
#   (d) rt_hits_inside, rt_hits_outside: hit ratio 0, 0.5, 1 with misses inside and outside the key range (u32, u = 100 %)
#   (e) rt_zipf:   Zipf-skewed lookups, coefficient 0, 1, 2, 5
# Trimmed to fit ~8 minutes of GPU time (estimates; see RT_* below to widen): the paper's bucket
# sweep has 12 sizes (here 4), u64 runs only at 0 and 100 %, ranges step by 4x, batches by 8x,
# hit ratios and Zipf coefficients are 3 and 4 points, 3 timed runs per row (--reps 3) and answers
# checked against the oracle on a 65536-query sample (--check sample; the GPU tests compare every
# answer with the CPU backend).
RT_N=${RT_N:-2^26}
RT_LOOKUPS=${RT_LOOKUPS:-2^27}
RT_REPS=${RT_REPS:-3}
RT_CHECK=${RT_CHECK:-sample}
RT_BUCKETS=${RT_BUCKETS:-4,16,32,256}
rt_common="--n $RT_N --reps $RT_REPS --check $RT_CHECK"
rt_t0=$(date +%s)
rt_log() { log "rt: $* ($(( $(date +%s) - rt_t0 )) s)"; }

# (a) throughput against memory
for cfg in "u32 0" "u32 20" "u32 50" "u32 100" "u64 0" "u64 100"; do
  read -r rt_dt rt_u <<< "$cfg"
  bench rt_memory bench keys --backend cuda,optix --kind rx,cgrx,sorted,btree,hash --bucket-size $RT_BUCKETS \
    --dtype $rt_dt --dist sparse --uniformity $rt_u --lookups $RT_LOOKUPS $rt_common
  rt_log "(a) $rt_dt uniformity $rt_u %"
done

# (b) ranges: 2^0 .. 2^20 rows per lookup. `range` returns every row id (count, scan, fill, and the
# API's ascending row order per lookup: a segmented sort every kind pays); `range-count` only counts
# (rx still visits every hit with a ray; cgrx and sorted find both ends by search). The paper's
# aggregating scan lies between the two.
rt_widths=1,4,16,64,256,1024,4096,16384,65536,262144,1048576
bench rt_range bench keys --backend cuda,optix --kind rx,cgrx,sorted,btree --bucket-size 32,256 --dtype u32 \
  --dist dense --op range --width $rt_widths --lookups 2^16 --max-results 2^28 $rt_common
bench rt_range_count bench keys --backend cuda,optix --kind rx,cgrx,sorted,btree --bucket-size 32 --dtype u32 \
  --dist dense --op range-count --width $rt_widths --lookups 2^16 --max-results 2^30 $rt_common
rt_log "(b) ranges"

# (c) batch sizes
bench rt_batch bench keys --backend cuda,optix --kind rx,cgrx,sorted --dtype u32 --dist uniform --lookups 2^22 \
  --batch 2^9,2^12,2^15,2^18,2^21,2^22 $rt_common
rt_log "(c) batches"

# (d) hit ratio, misses inside and outside the key range
for miss in inside outside; do
  bench rt_hits_$miss bench keys --backend cuda,optix --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
    --lookups $RT_LOOKUPS --hit-ratio 0,0.5,1 --miss $miss $rt_common
done
rt_log "(d) hit ratio"

# (e) Zipf-skewed lookups
bench rt_zipf bench keys --backend cuda,optix --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
  --lookups $RT_LOOKUPS --zipf 0,1,2,5 $rt_common
rt_log "(e) zipf"

python3 bench/plot_rt.py "$OUT/csv" "$OUT/csv" > "$OUT/logs/plot_rt.log" 2>&1 || log "rt: plot failed (logs/plot_rt.log)"
