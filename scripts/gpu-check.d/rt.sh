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
#   (c) rt_batch: point-lookup batches of 2^9 .. 2^22 (2^22 lookups in all), and 2^24, 2^27
#       (2^27 lookups in all)
#   (d) rt_hits_inside, rt_hits_outside: hit ratio 0, 0.5, 1, misses inside / outside the key range
#   (e) rt_zipf: Zipf-skewed lookups, coefficient 0, 1, 2, 5
#
# Trimmed to fit ~8 minutes of H200 time (RT_BUDGET: no experiment starts after it), ordered by
# what the targets need. Compared with the paper: 4 of its 12 bucket sizes (3 for the other
# uniformities); u64 at uniformity 0 and 100 %; 5 range widths (16x steps); 8 batch sizes; 3 hit
# ratios; 4 Zipf coefficients; 3 timed runs per row (--reps 3). Both backends for (a) at the
# targets' sizes, (b), (c), (d), (e) and the other uniformities; the baselines on the soft run. rt_bvh2.csv repeats the
# target rows on the binary BVH (bench keys --bvh 2) against the soft traversal's BVH4 default.
# Answers are checked against the oracle on a 65536-query sample in the target invocations
# (building the oracle of 2^26 keys takes ~15 s of CPU); the other rows say "skipped": the GPU
# tests (rt_identical, keys_rx, keys_cgrx) compare every answer with the CPU backend. Widen with
# RT_BUCKETS, RT_REPS, RT_CHECK_ALL=sample.
RT_N=${RT_N:-2^26}
RT_LOOKUPS=${RT_LOOKUPS:-2^27}
RT_REPS=${RT_REPS:-3}
RT_BUCKETS=${RT_BUCKETS:-4,16,32,256}
RT_CHECK_ALL=${RT_CHECK_ALL:-none}
RT_BUDGET=${RT_BUDGET:-480}   # seconds: no new experiment starts after this
RT_CALL_LIMIT=${RT_CALL_LIMIT:-150}
# RT_PARTS: which experiments run (default all), e.g. RT_PARTS="hits other" for a short top-up run
RT_PARTS=${RT_PARTS:-"memory range bvh2 hits other batch zipf"}
rt_part() { [[ " $RT_PARTS " == *" $1 "* ]]; }
RT_BACKENDS=${RT_BACKENDS:-"cuda optix"} # RT_BACKENDS=optix: only the OptiX rows
rt_t0=$(date +%s)
rt_log() { log "rt: $* ($(( $(date +%s) - rt_t0 )) s)"; }
rt_time_left() { [ $(( $(date +%s) - rt_t0 )) -lt "$RT_BUDGET" ]; }
# One backend per call, each under a time limit, so a failing or slow combination loses only
# its own rows (a call that fails is logged in the summary by bench()).
rt_run() { # rt_run <csv> <check> <backend> <bench args...>
  local csv=$1 chk=$2 be=$3
  shift 3
  [[ " $RT_BACKENDS " == *" $be "* ]] || return 0
  rt_time_left || { rt_log "skipped (budget): $csv $be $*"; return; }
  BENCH_TIMEOUT=$RT_CALL_LIMIT bench "$csv" bench keys --n "$RT_N" --reps "$RT_REPS" --check "$chk" --backend "$be" "$@"
}

# In order of what the issue's targets need, so a run cut short by RT_BUDGET loses the least.
# (a) throughput against memory at 2^26 and 2^24 keys, u32, uniform, both backends
if rt_part memory; then
rt_run rt_memory sample cuda --kind rx,cgrx,sorted,btree,hash --bucket-size "$RT_BUCKETS" --dtype u32 \
  --dist sparse --uniformity 100 --lookups "$RT_LOOKUPS"
rt_run rt_memory "$RT_CHECK_ALL" optix --kind rx,cgrx --bucket-size 32 --dtype u32 --dist sparse --uniformity 100 \
  --lookups "$RT_LOOKUPS"
for rt_be in cuda optix; do
  RT_N=2^24 rt_run rt_memory sample $rt_be --kind rx,cgrx --bucket-size 32 --dtype u32 --dist sparse --uniformity 100 \
    --lookups "$RT_LOOKUPS"
done
rt_log "(a) u32 uniform, 2^26 and 2^24"
fi

# (b) range lookups: 1 .. 2^16 hits per lookup over dense keys, 2^16 lookups, both backends
rt_widths=1,16,256,4096,65536
if rt_part range; then
rt_run rt_range sample cuda --kind rx,cgrx,sorted --bucket-size 32 --dtype u32 --dist dense --op range,range-count \
  --width $rt_widths --lookups 2^16 --max-results 2^26
rt_run rt_range "$RT_CHECK_ALL" optix --kind rx,cgrx --bucket-size 32 --dtype u32 --dist dense --op range,range-count \
  --width $rt_widths --lookups 2^16 --max-results 2^26
rt_log "(b) ranges"
fi

# the soft traversal's binary BVH (--bvh 2) against its BVH4 default, same settings
if rt_part bvh2; then
rt_run rt_bvh2 "$RT_CHECK_ALL" cuda --kind rx,cgrx --bucket-size 32 --dtype u32 --dist sparse \
  --uniformity 100 --lookups "$RT_LOOKUPS" --bvh 2
rt_run rt_bvh2 "$RT_CHECK_ALL" cuda --kind rx,cgrx --bucket-size 32 --dtype u32 --dist dense \
  --op range-count --width 1,256 --lookups 2^16 --bvh 2
rt_log "binary BVH rows"
fi

# (d) hit ratios, misses inside and outside the key range (the baselines on the soft run only)
if rt_part hits; then
for rt_miss in inside outside; do
  rt_run rt_hits_$rt_miss "$RT_CHECK_ALL" cuda --kind rx,cgrx,sorted,hash --dtype u32 --dist uniform \
    --lookups "$RT_LOOKUPS" --hit-ratio 0,0.5,1 --miss $rt_miss
  rt_run rt_hits_$rt_miss "$RT_CHECK_ALL" optix --kind rx,cgrx --dtype u32 --dist uniform \
    --lookups "$RT_LOOKUPS" --hit-ratio 0,0.5,1 --miss $rt_miss
done
rt_log "(d) hit ratio"
fi

# (a) the other uniformities and u64 (the baselines on the soft run only)
if rt_part other; then
for cfg in "u32 0" "u32 50" "u64 100" "u32 20" "u64 0"; do
  read -r rt_dt rt_u <<< "$cfg"
  rt_run rt_memory "$RT_CHECK_ALL" cuda --kind rx,cgrx,sorted,btree,hash --bucket-size 16,32,256 \
    --dtype "$rt_dt" --dist sparse --uniformity "$rt_u" --lookups "$RT_LOOKUPS"
  rt_run rt_memory "$RT_CHECK_ALL" optix --kind rx,cgrx --bucket-size 16,32,256 \
    --dtype "$rt_dt" --dist sparse --uniformity "$rt_u" --lookups "$RT_LOOKUPS"
  rt_log "(a) $rt_dt uniformity $rt_u %"
done
fi

# (c) batch sizes 2^9 .. 2^27 and (e) Zipf-skewed lookups
if rt_part batch; then
for rt_be in cuda optix; do
  rt_run rt_batch "$RT_CHECK_ALL" $rt_be --kind rx,cgrx --bucket-size 32 --dtype u32 --dist uniform --lookups 2^22 \
    --batch 2^9,2^12,2^15,2^18,2^21,2^22
  rt_run rt_batch "$RT_CHECK_ALL" $rt_be --kind rx,cgrx --bucket-size 32 --dtype u32 --dist uniform --lookups 2^27 \
    --batch 2^24,2^27
done
rt_log "(c) batches"
fi
if rt_part zipf; then
for rt_be in cuda optix; do
  rt_run rt_zipf "$RT_CHECK_ALL" $rt_be --kind rx,cgrx --bucket-size 32 --dtype u32 --dist uniform \
    --lookups "$RT_LOOKUPS" --zipf 0,1,2,5
done
rt_log "(e) zipf"
fi

python3 bench/plot_rt.py "$OUT/csv" "$OUT/csv" > "$OUT/logs/plot_rt.log" 2>&1 || log "rt: plot failed (logs/plot_rt.log)"
log "rt: $(grep -c . "$OUT/csv/rt_summary.txt" 2>/dev/null) summary lines in csv/rt_summary.txt"
