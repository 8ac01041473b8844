#!/bin/sh
# bench/geos_join.sh: issue 28's CPU comparison, GEOS with its STRtree against our CPU backend, in
# one run on the same files (bench/geos_join.c says what each row times and checks).
#
#   bench/geos_join.sh build          configure BUILD (CPU only, Release, no GDAL: the maps are
#                                     .rdxp) and build libraydex.a there, then BUILD/geos_join
#   bench/geos_join.sh smoke          build, then the smallest pair (us-states R, us-counties S),
#                                     CSV on stdout
#   bench/geos_join.sh all            build, then every pair of the issue, into
#                                     bench/results/<cpu>/join_geos.csv, and the exact commands
#                                     into that folder's COMMANDS.md (its "join_geos" section)
#   bench/geos_join.sh polygons       build, then issue 29's polygon joins (overlay, intersects,
#                                     contains, within, overlay with areas) on the pairs of the
#                                     issue, into bench/results/<cpu>/join_polygons_geos.csv, and
#                                     the commands into COMMANDS.md's "join_polygons_geos" section
#   bench/geos_join.sh polygons-smoke build, then the polygon joins of the smallest pair on stdout
#   bench/geos_join.sh run ARGS...    build, then BUILD/geos_join ARGS (see its --help)
#
# Environment (read by this script and the program, never by the library):
#   BUILD=build-geosbench  the build folder (configured here; an existing one is reused)
#   MAPS=.cache/maps       the .rdxp maps of scripts/fetch-maps.sh (/tmp/jbnpm when that has all
#                          six and .cache/maps does not yet)
#   REPS=3 WARMUP=1        runs per row (the median is reported) and untimed runs before them;
#                          the largest pair (countries-land-10m) takes BIG_REPS=1 BIG_WARMUP=0
#   GEOS_THREADS=1,2       GEOS's threads, one row each (1 is the plain loop a user writes and
#                          the reference of vs_geos; 2 shows what threads alone would give GEOS)
#   THREADS=0,1            our CPU backend's threads, one row each (0: RAYDEX_THREADS as set, or
#                          one per core; 1: the same work on one core, for a ratio per core)
#   RAYDEX_THREADS         as set; the library reads it when THREADS is 0
#   RESULTS                the folder `all` writes (default bench/results/cpu-<model>-<cores>-cores)
#   POLY_OPS=overlay,intersects,contains,within,areas   the polygon joins `polygons` runs
#   POLY_PAIRS="us-states:us-counties world-countries-10m:world-countries-50m
#               countries-maritime-10m:countries-land-10m"   their R:S pairs (a pair with
#                                     countries-land-10m takes BIG_REPS and BIG_WARMUP);
#   POLY_GEOS_THREADS=1 POLY_THREADS=0  GEOS's and our threads there, one row each
# The machine must be quiet for the figures to mean anything: GEOS and our backend run one after
# the other, and a compile beside them moves either by tens of percent.
set -eu
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build-geosbench}
REPS=${REPS:-3}
WARMUP=${WARMUP:-1}
BIG_REPS=${BIG_REPS:-1}
BIG_WARMUP=${BIG_WARMUP:-0}
GEOS_THREADS=${GEOS_THREADS:-1,2}
THREADS=${THREADS:-0,1}
# The maps by scripts/fetch-maps.sh's names; an older copy may name world-atlas's layers without
# "world-" (countries-10m.rdxp), which map() also takes.
ALL_MAPS="us-states us-counties world-countries-10m world-countries-50m countries-maritime-10m countries-land-10m"
map() { # the file of map $1 under $2 (default $MAPS), or nothing
  for n in "$1" "${1#world-}"; do
    [ -f "${2:-$MAPS}/$n.rdxp" ] && { echo "${2:-$MAPS}/$n.rdxp"; return 0; }
  done
  return 1
}
has_all() { for m in $ALL_MAPS; do map "$m" "$1" >/dev/null || return 1; done; }
if [ -z "${MAPS:-}" ]; then
  MAPS=.cache/maps
  has_all "$MAPS" || ! has_all /tmp/jbnpm || MAPS=/tmp/jbnpm
fi
BIN=$BUILD/geos_join

build() {
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    mkdir -p "$BUILD"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRAYDEX_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_GDAL=ON \
      -DRAYDEX_BUILD_TESTS=OFF -DRAYDEX_BUILD_BENCH=OFF >"$BUILD/cmake.log" 2>&1 ||
      { cat "$BUILD/cmake.log" >&2; exit 1; }
  fi
  cmake --build "$BUILD" --target raydex_static -j "$(nproc)" >"$BUILD/lib.log" 2>&1 ||
    { tail -40 "$BUILD/lib.log" >&2; exit 1; }
  # the library's own Release flags (-O3, no asserts); GEOS through its C API alone
  cc -std=c11 -O3 -DNDEBUG -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -Iinclude -Isrc \
    bench/geos_join.c "$BUILD/libraydex.a" -lgeos_c -lm -lpthread -o "$BIN"
}

need() {
  for m in "$@"; do
    map "$m" >/dev/null || { echo "geos_join.sh: no $m.rdxp in $MAPS (scripts/fetch-maps.sh makes it)" >&2; exit 1; }
  done
}

# "Intel(R) Xeon(R) Processor" on 2 cores -> cpu-Intel-Xeon-2-cores, the folder bench/results has
cpu_dir() {
  name=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 |
    sed 's/([RrTtMm]*)//g; s/ Processor.*//; s/ CPU .*//; s/[^A-Za-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
  echo "bench/results/cpu-${name:-unknown}-$(nproc)-cores"
}

# One program run: the pair's rows appended to $CSV (the header with the first).
pair() { # op r s reps warmup
  hdr=
  [ -s "$CSV" ] || hdr=--header
  cmd="$BIN --op $1 --r $(map "$2") --s $(map "$3") --reps $4 --warmup $5 --geos-threads $GEOS_THREADS --threads $THREADS${hdr:+ $hdr}"
  echo "$cmd" >>"$CMDS"
  echo "geos_join.sh: $cmd" >&2
  # shellcheck disable=SC2086
  $cmd >>"$CSV" 2>>"$LOG" || { tail -20 "$LOG" >&2; FAILED=1; }
}

# The note: section $2 of $1/COMMANDS.md replaced by stdin (the markers around it kept).
note() {
  [ -f "$1/COMMANDS.md" ] || echo "# Commands behind this folder's figures" >"$1/COMMANDS.md"
  awk -v b="<!-- $2 begin -->" -v e="<!-- $2 end -->" '$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' \
    "$1/COMMANDS.md" >"$1/COMMANDS.md.tmp"
  { echo "<!-- $2 begin -->"; cat; echo "<!-- $2 end -->"; } >>"$1/COMMANDS.md.tmp"
  mv "$1/COMMANDS.md.tmp" "$1/COMMANDS.md"
}

POLY_OPS=${POLY_OPS:-overlay,intersects,contains,within,areas}
POLY_PAIRS=${POLY_PAIRS:-us-states:us-counties world-countries-10m:world-countries-50m countries-maritime-10m:countries-land-10m}
POLY_GEOS_THREADS=${POLY_GEOS_THREADS:-1}
POLY_THREADS=${POLY_THREADS:-0}

case "${1:-all}" in
  polygons-smoke)
    build
    need us-states us-counties
    "$BIN" --op "$POLY_OPS" --r "$(map us-states)" --s "$(map us-counties)" --reps 1 --warmup 0 \
      --geos-threads "$POLY_GEOS_THREADS" --threads "$POLY_THREADS" --header
    ;;
  polygons)
    build
    DIR=${RESULTS:-$(cpu_dir)}
    mkdir -p "$DIR"
    CSV=$DIR/join_polygons_geos.csv
    CMDS=$BUILD/join_polygons_geos.commands
    LOG=$BUILD/join_polygons_geos.log
    : >"$CSV"
    : >"$CMDS"
    : >"$LOG"
    FAILED=0
    START=$(date -u '+%Y-%m-%d %H:%M UTC')
    for p in $POLY_PAIRS; do
      r=${p%%:*} s=${p#*:}
      need "$r" "$s"
      reps=$REPS warmup=$WARMUP
      if [ "$s" = countries-land-10m ] || [ "$r" = countries-land-10m ]; then reps=$BIG_REPS warmup=$BIG_WARMUP; fi
      hdr=
      [ -s "$CSV" ] || hdr=--header
      cmd="$BIN --op $POLY_OPS --r $(map "$r") --s $(map "$s") --reps $reps --warmup $warmup --geos-threads $POLY_GEOS_THREADS --threads $POLY_THREADS${hdr:+ $hdr}"
      echo "$cmd    # load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$CMDS"
      echo "geos_join.sh: $cmd" >&2
      rc=0
      # shellcheck disable=SC2086
      $cmd >>"$CSV" 2>>"$LOG" || rc=$?
      [ "$rc" -le 1 ] || { tail -20 "$LOG" >&2; FAILED=1; }
    done
    DIRTY=$(git status --porcelain --untracked-files=no | wc -l)
    SRC_DIRTY=$(git status --porcelain --untracked-files=no -- src include | wc -l)
    note "$DIR" join_polygons_geos <<NOTE_END
## join_polygons_geos.csv: polygon joins, GEOS STRtree against our CPU backend (issue 29)

Written by \`bench/geos_join.sh polygons\` ($START). Machine: $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1),
$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); GEOS $(sed -n 's/.*GEOS \([^;]*\);.*/\1/p' "$LOG" | head -1);
RAYDEX_THREADS=${RAYDEX_THREADS:-unset}; commit $(git rev-parse --short HEAD) "$(git log -1 --format=%s)"
with $DIRTY tracked files changed in the working tree ($SRC_DIRTY of them under src/ or include/).
Library: \`$BUILD/libraydex.a\` (Release, CPU only); program: \`cc -O3 bench/geos_join.c\`. Each row's
load1 column is the one-minute load average when it was written (others compile on this machine).
check: "DIFF=N;valid=M" (M of the N differing pairs are between features GEOS finds valid),
";undecided=K" (GEOS threw on K pairs, left out of the comparison); the differing pairs are
listed in \`$LOG\` when the script runs.

\`\`\`
$(cat "$CMDS")
\`\`\`
NOTE_END
    echo "geos_join.sh: wrote $CSV and $DIR/COMMANDS.md (log: $LOG)" >&2
    [ "$FAILED" = 0 ] || exit 1
    ;;
  build) build ;;
  smoke)
    build
    need us-states us-counties
    "$BIN" --op lsi,pip --r "$(map us-states)" --s "$(map us-counties)" --reps 1 --warmup 0 \
      --geos-threads "$GEOS_THREADS" --threads "$THREADS" --header
    ;;
  run)
    build
    shift
    "$BIN" "$@"
    ;;
  all)
    build
    # shellcheck disable=SC2086
    need $ALL_MAPS
    DIR=${RESULTS:-$(cpu_dir)}
    mkdir -p "$DIR"
    CSV=$DIR/join_geos.csv
    CMDS=$BUILD/join_geos.commands
    LOG=$BUILD/join_geos.log
    : >"$CSV"
    : >"$CMDS"
    : >"$LOG"
    FAILED=0
    START=$(date -u '+%Y-%m-%d %H:%M UTC')
    LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    # lsi and pip of the same files in one process where the direction is the same; the issue's
    # PIP "against countries-land-10m" locates countries-maritime-10m's vertices in it
    pair lsi,pip us-states us-counties "$REPS" "$WARMUP"
    pair lsi,pip world-countries-10m world-countries-50m "$REPS" "$WARMUP"
    pair lsi countries-maritime-10m countries-land-10m "$BIG_REPS" "$BIG_WARMUP"
    pair pip countries-land-10m countries-maritime-10m "$BIG_REPS" "$BIG_WARMUP"
    LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
    # the note: this script's section of the folder's COMMANDS.md, replaced on every run
    NOTE=$DIR/COMMANDS.md
    [ -f "$NOTE" ] || echo "# Commands behind this folder's figures" >"$NOTE"
    awk '/^<!-- join_geos begin -->$/ {skip = 1} !skip {print} /^<!-- join_geos end -->$/ {skip = 0}' "$NOTE" \
      >"$NOTE.tmp"
    DIRTY=$(git status --porcelain --untracked-files=no | wc -l)
    {
      echo "<!-- join_geos begin -->"
      echo "## join_geos.csv: GEOS STRtree against our CPU backend (issue 28)"
      echo
      echo "Written by \`bench/geos_join.sh all\` ($START). Machine: $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1),"
      echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); GEOS $(sed -n 's/.*GEOS \([^;]*\);.*/\1/p' "$LOG" | head -1);"
      echo "RAYDEX_THREADS=${RAYDEX_THREADS:-unset}; commit $(git rev-parse --short HEAD) \"$(git log -1 --format=%s)\""
      echo "with $DIRTY tracked files changed in the working tree; load average $LOAD0 before, $LOAD1 after."
      echo "Library: \`$BUILD/libraydex.a\` (Release, CPU only); program: \`cc -O3 bench/geos_join.c\`."
      echo
      echo '```'
      cat "$CMDS"
      echo '```'
      echo "<!-- join_geos end -->"
    } >>"$NOTE.tmp"
    mv "$NOTE.tmp" "$NOTE"
    echo "geos_join.sh: wrote $CSV and $NOTE (log: $LOG)" >&2
    if grep -q ',DIFF$' "$CSV" || [ "$FAILED" != 0 ]; then
      echo "geos_join.sh: answers differ or a run failed (see $LOG)" >&2
      exit 1
    fi
    ;;
  *)
    sed -n '2,25p' "$0" >&2
    exit 2
    ;;
esac
