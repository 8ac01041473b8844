# scripts/gpu-check.d/gpus.sh: issue 33's measurements on the GPUs of one machine. `raydex bench
# keys --gpus` (tools/cmd_bench_gpus.c): a sharded sorted index over 1, 2 and 4 GPUs (those there
# are) against one GPU's plain index on the same keys and lookups; strong scaling (2^27 u32 keys,
# 2^28 lookups in all), weak scaling (2^27 keys and 2^28 lookups per GPU), the path that stages
# through the host beside the device path, and the device all-to-all alone (2^30 bytes a rank,
# nccl-tests' bus bandwidth; on 2+ GPUs also between MPI processes, through NCCL where built); on
# 4+ GPUs a hash index larger than one GPU. Then `raydex bench points --gpus` (G-PICS over the
# GPUs: 1.7e8 taxi points, 2^18 queries of each type). Sourced by scripts/gpu-check.sh (step
# "gpus") with RDX, OUT, log and bench. GPUS_LIST, GPUS_N, GPUS_M, GPUS_X, GPUS_POINTS,
# GPUS_QUERIES, GPUS_SIZE shrink it (a one-GPU machine runs ranks that share it); GPUS_BIG sizes
# the index larger than one GPU (a list of factors: one row each); GPUS_PARTS ("keys points" by
# default) picks the halves, so that a device call of 10 minutes can take each; GPUS_HOST=1 adds the
# host path's rows (hundreds of times slower than the device path, seconds a lookup batch).
ng=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
nvidia-smi topo -m > "$OUT/logs/topo.txt" 2>&1 # which GPUs NVLink joins (NV<n>) and which PCIe
list=1
[ "$ng" -ge 2 ] && list=1,2
[ "$ng" -ge 4 ] && list=1,2,4
list=${GPUS_LIST:-$list}
gn=${GPUS_N:-2^27}
gm=${GPUS_M:-2^28}
gx=${GPUS_X:-2^30}
parts=" ${GPUS_PARTS:-keys points} "
if [[ $parts == *" keys "* ]]; then
bench keys_gpus bench keys --gpus "$list" --kind sorted --dtype u32 --n "$gn" --lookups "$gm" --reps 3 --exchange "$gx"
bench keys_gpus bench keys --gpus "$list" --kind sorted --dtype u32 --n "$gn" --lookups "$gm" --reps 3 --weak
[ "${GPUS_HOST:-0}" = 1 ] &&
  bench keys_gpus bench keys --gpus "$list" --kind sorted --dtype u32 --n "$gn" --lookups "$gm" --reps 3 --host-path
if [ "$ng" -ge 2 ]; then
  # the same exchange between MPI processes, one GPU each (NCCL where the build has it), in this run
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$ng" "$RDX" bench keys --gpus "$ng" \
    --exchange "$gx" --reps 5 >> "$OUT/csv/keys_gpus.csv" 2>> "$OUT/logs/bench-stderr.log" ||
    log "bench keys --gpus under mpirun FAILED"
fi
if [ "$ng" -ge 4 ]; then
  # an index larger than one GPU: a hash index (u64 keys and rows, load 0.8, about 20 B a key) of
  # GPUS_BIG (default 1.4) times one GPU's memory, its keys made on the GPUs (peak about 0.8 of
  # each GPU's memory during the shard builds)
  mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1) # MiB
  for f in ${GPUS_BIG:-1.4}; do
    big=$(awk -v m="$mem" -v f="$f" 'BEGIN { printf "%.0f", f * m * 1048576 / 20 }')
    bench keys_gpus bench keys --gpus "$ng" --kind hash --load-factor 0.8 --dtype u64 --n "$big" --lookups 2^28 \
      --reps 3 --device-input
  done
fi
log "gpus keys: $(awk -F, 'NR > 1 { printf "%s/%s/%s %s ms x%s %s; ", $4, $5, $6, $13, $18, $19 }' "$OUT/csv/keys_gpus.csv" 2>/dev/null)"
fi
[[ $parts == *" points "* ]] || return 0
# G-PICS over the GPUs (rdx_dist_points, tools/cmd_bench_points_gpus.c): 1.7e8 taxi points, each
# query type. The taxi generator piles points on its stands (a match query finds about 500 at 2^25
# points, more as n grows), so any query near a stand returns thousands: 2^18 queries of --size 5
# (window side 5, within radius 2.5) keep a batch near 10^9 results (the issue's 2^22 would ask for
# 10^10). GPUS_WEAK=1 adds the weak rows (1.7e8 points and 2^14 queries per GPU): the results of
# a batch grow with the square of the GPUs there (N times the queries over N times as dense
# points), so their windows are half as wide (side 2.5, radius 1.25; 1e9 results on 4 GPUs).
# GPUS_STRONG=0 leaves the strong rows out.
gp=${GPUS_POINTS:-1.7e8}
gq=${GPUS_QUERIES:-2^18}
gs=${GPUS_SIZE:-5}
[ "${GPUS_STRONG:-1}" = 1 ] && bench points_gpus bench points --gpus "$list" --n "$gp" --queries "$gq" --size "$gs" --reps 3
[ "${GPUS_WEAK:-0}" = 1 ] && bench points_gpus bench points --gpus "$list" --n "$gp" --queries "${GPUS_WEAK_QUERIES:-2^14}" \
  --size "${GPUS_WEAK_SIZE:-2.5}" --reps 3 --weak
true
