#!/usr/bin/env bash
# `--help` on every command: exit 0, the usage on stdout and nothing on stderr, and every option
# the command's parser takes (its cli_*(&a, "name") calls in tools/, and --quiet, which every
# command takes) named in that usage. The text does not depend on the backend, so tests/CMakeLists.txt runs it once.
# Usage: test_help.sh RAYDEX [BACKEND]
set -u
rdx=$1
src=$(cd "$(dirname "$0")/../../tools" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# help words, the source file whose parser they cover
checks=("info|cmd_info.c" "keys|cmd_keys.c" "points|cmd_points.c" "demo|cmd_demo.c" "gen keys|cmd_gen.c"
        "gen points|cmd_gen_points.c" "gen polygons|cmd_gen_polygons.c" "bench keys|cmd_bench.c"
        "bench points|cmd_bench_points.c" "bench join|cmd_bench_join.c" "bench update|cmd_bench_update.c"
        "bench host|cmd_bench_host.c" "join|cmd_join.c" "convert|cmd_convert.c")
for c in "${checks[@]}"; do
  words=${c%%|*} file=${c##*|}
  for h in --help -h; do
    # shellcheck disable=SC2086
    "$rdx" $words $h > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc -eq 0 ] || bad "raydex $words $h exits $rc"
    [ -s "$tmp/err" ] && bad "raydex $words $h writes on stderr: $(head -1 "$tmp/err")"
    head -1 "$tmp/out" | grep -q "^usage: raydex $words" || bad "raydex $words $h: no usage line: $(head -1 "$tmp/out")"
  done
  # --help wins over other arguments, even bad ones, and runs nothing
  # shellcheck disable=SC2086
  "$rdx" $words --no-such-option 1 --help > "$tmp/out2" 2>&1 && cmp -s "$tmp/out" "$tmp/out2" ||
    bad "raydex $words: --help after a bad option must print the same usage"
  opts=$(grep -oE 'cli_[a-z_]+\(&a, "[a-z0-9-]+"' "$src/$file" | sed -E 's/.*"([a-z0-9-]+)"/\1/' | sort -u)
  [ -n "$opts" ] || [ "$file" = cmd_info.c ] || bad "$file: no options found (has the parser changed?)"
  for o in $opts quiet; do
    grep -q -- "--$o\b" "$tmp/out" || bad "raydex $words --help does not name --$o, which $file parses"
  done
done

# the dispatching commands list all of theirs; the program lists its commands
"$rdx" gen --help > "$tmp/out" && grep -q "raydex gen keys" "$tmp/out" && grep -q "raydex gen point-queries" "$tmp/out" ||
  bad "raydex gen --help must show gen keys .. point-queries"
"$rdx" bench --help > "$tmp/out" && grep -q "raydex bench keys" "$tmp/out" && grep -q "raydex bench points" "$tmp/out" &&
  grep -q "raydex bench join" "$tmp/out" || bad "raydex bench --help must show bench keys, points and join"
"$rdx" --help > "$tmp/out" && for c in info gen keys points join convert bench demo; do grep -q "^  $c " "$tmp/out" || bad "raydex --help lacks $c"; done
# the defaults the points usage states are the library's (src/spatial/spatial.h)
def() { sed -n "s/^#define RDX_SP_DEFAULT_$1 \([0-9]*\).*/\1/p" "$src/../src/spatial/spatial.h"; }
"$rdx" points --help > "$tmp/out"
grep -q "leaf capacity $(def CAPACITY)" "$tmp/out" && grep -q "depth $(def QT_DEPTH) (quadtree" "$tmp/out" &&
  grep -q "or $(def KD_DEPTH)" "$tmp/out" || bad "raydex points --help must give the library's defaults"
# no arguments: the usage on stderr, exit 2
"$rdx" > /dev/null 2> "$tmp/err"
[ $? -eq 2 ] && grep -q "^usage: raydex" "$tmp/err" || bad "raydex without a command must exit 2 with the usage on stderr"
[ $fail -eq 0 ] && echo "help: all commands ok"
exit $fail
