# scripts/gpu-check.d/host.sh: issue 31's end-to-end measurement from host memory. `raydex bench host`
# (tools/cmd_bench_host.c) measures the link first (rdx_copy of 1 GiB each way: pinned, and pageable
# through the context's staging ring and through the driver), then each call with inputs and outputs
# in device memory and from host memory (through the ring and through the driver): sorted and hash
# builds of 2^26 u32 keys, 2^27 lookups on the sorted index, a bottom-up quadtree build of 1.7e8 f32
# points (leaf capacity 200, 16 levels) and 2^20 window queries of about 64 points each with their
# CSR result. Rows carry ratio = ms / (bytes moved / pinned link speed + device ms), issue 31's
# target being <= 1.3, and a check (host answers = device answers). Sourced by scripts/gpu-check.sh
# (step "host") with RDX, OUT, log and bench; about a minute on an H200. HOST_N, HOST_LOOKUPS,
# HOST_POINTS and HOST_QUERIES shrink it; BENCH_TIMEOUT bounds it as for every bench call.
hn=${HOST_N:-67108864}
hl=${HOST_LOOKUPS:-134217728}
hp=${HOST_POINTS:-170000000}
hq=${HOST_QUERIES:-1048576}
bench host bench host --backend cuda --link-bytes 2^30 --n "$hn" --lookups "$hl" --points "$hp" --queries "$hq" \
  --dist uniform --dtype f32 --reps 5
log "host: $(awk -F, 'NR > 1 && $5 == "host" { printf "%s/%s %.2f  ", $4, $6, $12 }' "$OUT/csv/host.csv" 2>/dev/null)"
# the floor under results written to fresh host memory: 552 MiB (the window batch's rows) written
# by 16 threads fresh and warm, with 4 KiB pages, MADV_HUGEPAGE and after MADV_POPULATE_WRITE
if cc -O2 -pthread bench/touch_probe.c -o "$OUT/touch_probe" 2>> "$OUT/logs/host-touch.log"; then
  "$OUT/touch_probe" 552 16 > "$OUT/csv/touch.csv" 2>> "$OUT/logs/host-touch.log" || true
  rm -f "$OUT/touch_probe"
  log "touch: $(grep -v '^#' "$OUT/csv/touch.csv" | tr '\n' ' ')"
fi
