#!/usr/bin/env bash
# Configure and build raydex in one build directory, saying what it does: a line per stage and the
# build's progress every tenth, so a first build (minutes on two cores, most of it CUDA) is never
# silent. The compiler's output goes to <dir>/build.log and is shown only when the build fails.
# Both README commands build through here, so the second one finds the first one's directory
# configured alike and rebuilds nothing.
#
#   scripts/build.sh <dir> [extra cmake arguments]
# OptiX is used when .optix/include/optix.h is there (see README); CUDA when nvcc is found.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?build dir}
shift
args=(-DCMAKE_BUILD_TYPE=Release)
[ -f .optix/include/optix.h ] && args+=(-DRAYDEX_OPTIX_DIR="$(pwd)/.optix")
args+=("$@")
jobs=$(nproc 2>/dev/null || echo 2)
t0=$(date +%s)
say() { echo "build.sh: $*" >&2; }
say "configuring $dir (${args[*]})"
mkdir -p "$dir"
if ! cmake -S . -B "$dir" "${args[@]}" > "$dir/configure.log" 2>&1; then
  cat "$dir/configure.log" >&2
  say "configure failed (log: $dir/configure.log)"
  exit 1
fi
grep -E "^-- raydex" "$dir/configure.log" | sed 's/^-- /build.sh: /' >&2 || true
say "compiling with $jobs jobs (log: $dir/build.log)"
# Makefile generators print "[ 42%] ..." lines: report each tenth once.
set +e
cmake --build "$dir" -j "$jobs" 2>&1 | tee "$dir/build.log" |
  awk '/^\[ *[0-9]+%\]/ { p = substr($0, 2, 3) + 0; t = int(p / 10) * 10;
                         if (t > last) { last = t; printf "build.sh: %3d%%\n", t > "/dev/stderr"; fflush() } }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  grep -E "error|Error" -A3 "$dir/build.log" | head -60 >&2
  say "build failed (log: $dir/build.log)"
  exit "$rc"
fi
say "built $dir in $(( $(date +%s) - t0 )) s"
