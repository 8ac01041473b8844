# scripts/gpu-check.d/sanitize.sh: GPU code under compute-sanitizer's four tools: memcheck
# (out-of-bounds and misaligned accesses, leaks of device memory), racecheck (shared-memory
# hazards), synccheck (barriers in divergent code) and initcheck (reads of device memory never
# written). Sourced by scripts/gpu-check.sh (step "sanitize") with OUT, RDX and log.
#  - By default, small CLI workloads that reach the spatial kernels on every path (builds both
#    ways, the four query types checked against the brute-force scan and the CPU backend, paged,
#    merged and repaired updates checked against fresh builds), one after the other under each
#    tool, the tools side by side: about 7 minutes on an H200. SANITIZE_CLI=0 leaves them out.
#  - The GPU test binaries (the same cases as `tests`, backend cuda), when asked for:
#    SANITIZE_RE (a regex over binary names) runs the matching ones under every tool, or
#    SANITIZE_PAIRS lists the runs ("tool:regex tool:regex:cases ...", cases as RDX_TEST_CASES in
#    tests/check.h takes them, to split a slow binary into runs); SANITIZE_JOBS at once. On an H100
#    (session 12): memcheck and synccheck of the slowest binaries (the spatial three, keys_lookup,
#    keys_rx, rt_identical) 5-6 minutes, six at once; initcheck of eleven binaries 28 s; racecheck
#    is the slow one: CUB's shared-memory kernels keep most binaries past 9 minutes. In parts
#    (session 13, H200): 18 parts of spatial_update and spatial_query by case, generator and kind
#    (e.g. racecheck:spatial_update:points_update_sequences/grid/qt-td), 18 at once, in 169 s.
# SANITIZE_ARGS adds options to every run (e.g. "--kernel-name-exclude kns=cub" leaves CUB's
# kernels out, which racecheck otherwise spends most of its time in). SANITIZE_TOOLS narrows the
# tools; every run has a time limit (SANITIZE_LIMIT seconds, default
# 420). Logs under logs/sanitize/, the reports folded to one line per kind and place
# (sanitize-sum.awk); a verdict per run in logs/sanitize-cli.txt and logs/sanitize.txt: "clean"
# or "NOT CLEAN: why". Pools zero their spare room (pool_zero_from), so initcheck has nothing
# to report either.
san_bin=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
san_dir=$OUT/logs/sanitize
san_awk=$root/scripts/gpu-check.d/sanitize-sum.awk  # folds the reports: one line per kind and place
mkdir -p "$san_dir"
san_extra() { # the tool's own options, then SANITIZE_ARGS
  [ "$1" = memcheck ] && printf -- '--leak-check full '
  printf '%s' "${SANITIZE_ARGS:-}"
}
san_one() { # san_one <tool> <test binary> [cases]: cases as RDX_TEST_CASES (tests/check.h) takes them
  local tool=$1 bin=$2 cases=${3:-} name extra
  name=$(basename "$bin")${3:+.${3//[^A-Za-z0-9_]/_}}
  extra=$(san_extra "$tool")
  RDX_TEST_CASES=$cases RDX_TEST_WATCHDOG=0 RDX_TEST_PROGRESS=1 RAYDEX_THREADS=4 timeout "${SANITIZE_LIMIT:-420}" \
    "$san_bin" --tool "$tool" $extra --error-exitcode 99 --print-limit 100000000 "$bin" --backend cuda 2>&1 |
    awk -f "$san_awk" > "$san_dir/$name.$tool.log"
  local rc=${PIPESTATUS[0]}
  echo "$name $tool rc=$rc $(san_verdict "$san_dir/$name.$tool.log" $rc)"
}
san_verdict() { # san_verdict <log> <rc>: "clean", or what was not
  local total why=
  total=$(awk '/ERROR SUMMARY: [0-9]+ error/ && !/not printed/ {t += $4}
               /RACECHECK SUMMARY/ {gsub(/[(,]/, " "); t += $(NF-3) + $(NF-1)} END {print t + 0}' "$1")
  [ "$2" = 124 ] && why+="timeout$(grep '^case ' "$1" | tail -1 | sed 's/^/ in /'); "
  [ "$2" != 0 ] && [ "$2" != 99 ] && why+="rc $2; "
  [ "$2" = 99 ] && [ "$total" = 0 ] && why+="rc 99 without errors; "
  [ "$total" -gt 0 ] && why+="$total errors; "
  grep -q WRONG "$1" && why+="$(grep -c WRONG "$1") wrong rows; "
  grep -q 'SUMMARY' "$1" || why+="no summary; "
  if [ -n "$why" ]; then echo "NOT CLEAN: $why"; else echo clean; fi
}
export -f san_one san_extra
export san_bin san_dir san_awk SANITIZE_LIMIT SANITIZE_ARGS
san_cli() { # san_cli <tool>: the CLI workloads, one after the other, under one tool
  local tool=$1 extra f=$san_dir/cli.$1.log rc=0
  extra=$(san_extra "$tool")
  local common="--backend cuda --n 60000 --dist taxi --dtype f32 --reps 1 --header"
  : > "$f"
  for args in "--exp build --index quadtree --build bottomup,topdown --leaf-capacity 32" \
              "--exp build --index kdtree --leaf-capacity 32" \
              "--exp query --index quadtree,kdtree --type match,window,within,knn --queries 2^11 --leaf-capacity 64 --k 40 --engine index,brute,cpu" \
              "--exp update --index quadtree,kdtree --moved 1,3,10,50 --leaf-capacity 32" \
              "--exp update --index quadtree --moved 2,20 --leaf-capacity 32 --moves resample" \
              "--exp update --index kdtree --moved 2 --leaf-capacity 4 --max-depth 40"; do
    for lay in "" "--layout dense"; do # quadtrees in both layouts (each its own engine)
      [ -n "$lay" ] && [[ $args != *"--exp update --index quadtree"* ]] && continue
      echo "\$ raydex bench points $args $lay $common" >> "$f"
      timeout "${SANITIZE_LIMIT:-420}" "$san_bin" --tool "$tool" $extra --error-exitcode 99 \
        --print-limit 100000000 "$RDX" bench points $args $lay $common 2>&1 | awk -f "$san_awk" >> "$f"
      local r=${PIPESTATUS[0]}
      [ $r -ne 0 ] && [ $rc -ne 124 ] && rc=$r
    done
  done
  echo "cli $tool rc=$rc $(san_verdict "$f" $rc)"
}
export -f san_cli san_verdict
export RDX
san_cli_pid=
if [ "${SANITIZE_CLI:-1}" != 0 ]; then # beside the suite's runs
  for t in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do echo "$t"; done |
    xargs -r -P 4 -L 1 bash -c 'san_cli "$0"' > "$OUT/logs/sanitize-cli.txt" &
  san_cli_pid=$!
fi
san_pairs=${SANITIZE_PAIRS:-}
if [ -z "$san_pairs" ] && [ -n "${SANITIZE_RE:-}" ]; then
  for t in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do san_pairs+=" $t:$SANITIZE_RE"; done
fi
for p in $san_pairs; do # tool:regex or tool:regex:cases
  IFS=: read -r p_tool p_re p_cases <<< "$p"
  for b in "$root"/build-gpu/tests/test_*; do
    [ -x "$b" ] && [[ $(basename "$b") =~ $p_re ]] && echo "$p_tool $b ${p_cases:--}"  # "-": every case
  done
done | xargs -r -P "${SANITIZE_JOBS:-8}" -L 1 bash -c 'san_one "$0" "$1" "${2#-}"' | sort > "$OUT/logs/sanitize.txt"
log "sanitize: $(grep -c . "$OUT/logs/sanitize.txt") suite runs, $(grep -c 'NOT CLEAN' "$OUT/logs/sanitize.txt") not clean"
grep 'NOT CLEAN' "$OUT/logs/sanitize.txt" | tee -a "$OUT/logs/summary.txt"
if [ -n "$san_cli_pid" ]; then
  wait "$san_cli_pid"
  tee -a "$OUT/logs/summary.txt" < "$OUT/logs/sanitize-cli.txt"
fi
