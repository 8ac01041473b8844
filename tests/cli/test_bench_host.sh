#!/usr/bin/env bash
# `raydex bench host` (issue 31; tools/cmd_bench_host.c) at tiny sizes: its --help names every
# option its parser reads; bad input exits 2 with one line; a run exits 0 with the header and one
# row per measurement, every call's host rows checked "same" against its device row. On GPU
# backends the link rows (pinned, and pageable through the ring and the driver) come first and
# the host rows run on both paths; on cpu there are no link rows and one host row per call.
# Sizes pass the ring's 256 KiB threshold so the ring is used. Usage: test_bench_host.sh RAYDEX BACKEND
set -u
rdx_bin=$1 backend=$2
# every run under a time limit, so a stuck run cannot hold a lent GPU until CTest's timeout
rdx() { if command -v timeout >/dev/null; then timeout 300 "$rdx_bin" "$@"; else "$rdx_bin" "$@"; fi; }
src=$(cd "$(dirname "$0")/../../tools" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# ---- help: exit 0, usage on stdout, every parsed option named (test_help.sh's rule) ----
rdx bench host --help > "$tmp/help" 2> "$tmp/err" || bad "bench host --help exits $?"
[ -s "$tmp/err" ] && bad "bench host --help writes on stderr"
head -1 "$tmp/help" | grep -q "^usage: raydex bench host" || bad "bench host --help: no usage line"
for o in $(grep -oE 'cli_[a-z_]+\(&a, "[a-z0-9-]+"' "$src/cmd_bench_host.c" | sed -E 's/.*"([a-z0-9-]+)"/\1/' | sort -u) quiet; do
  grep -q -- "--$o\b" "$tmp/help" || bad "bench host --help does not name --$o"
done
rdx bench --help | grep -q "raydex bench host" || bad "raydex bench --help must show bench host"

# ---- bad input: exit 2, one line ----
refuse() { # refuse WORD ARGS...: exit 2, one stderr line naming WORD
  local word=$1; shift
  rdx bench host "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "$word" "$tmp/err" ||
    bad "bench host $*: want exit 2 and one line naming $word, got $rc: $(cat "$tmp/err")"
}
refuse optix --backend optix
refuse reps --backend cpu --reps 0
refuse op --backend cpu --op nope
refuse lookups --backend cpu --op points_build --lookups 5
refuse queries --backend cpu --op keys_lookup --queries 5
refuse points --backend cpu --points 2^40
[ "$backend" = optix ] && { [ $fail -eq 0 ] && echo "bench host: optix refused, parsing ok"; exit $fail; }

# ---- a run ----
sizes=(--link-bytes 2^22 --n 2^18 --lookups 2^18 --points 2^18 --queries 2^12 --reps 1)
if ! rdx bench host --backend "$backend" "${sizes[@]}" --header > "$tmp/out" 2> "$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
  bad "bench host --backend $backend exits non-zero: $(cat "$tmp/err")"
fi
[ "$(head -1 "$tmp/out")" = "date,device,backend,op,where,path,n,bytes_moved,ms,device_ms,link_gbps,ratio,check" ] ||
  bad "header: $(head -1 "$tmp/out")"
awk -F, 'NR > 1 && NF != 13 { print "row " NR " has " NF " fields: " $0; bad = 1 } END { exit bad }' "$tmp/out" ||
  bad "rows must have 13 fields"
grep -q DIFFERS "$tmp/out" && bad "rows differ: $(grep DIFFERS "$tmp/out")"
gpu=1
[ "$backend" = cpu ] && gpu=0
for op in keys_build_sorted keys_build_hash keys_lookup points_build points_window; do
  [ "$(awk -F, -v op=$op '$4 == op && $5 == "device" && $13 == "ref"' "$tmp/out" | wc -l)" -eq 1 ] || bad "$op: one device row"
  want=$((gpu ? 3 : 1)) # a GPU: ring, direct and pinned
  [ "$(awk -F, -v op=$op '$4 == op && $5 == "host" && $13 == "same" && $8 > 0 && $9 > 0' "$tmp/out" | wc -l)" -eq $want ] ||
    bad "$op: $want host rows checked same"
done
links=$(awk -F, 'NR > 1 && $4 ~ /^link_/' "$tmp/out" | wc -l)
if [ $gpu -eq 1 ]; then
  [ "$links" -eq 6 ] || bad "want 6 link rows on $backend, got $links"
  for path in ring direct pinned; do
    grep -q ",keys_lookup,host,$path," "$tmp/out" || bad "no keys_lookup host row through $path"
  done
  awk -F, '$5 == "pinned" && ($11 <= 0 || $13 != "same") { exit 1 }' "$tmp/out" || bad "pinned link rows: speed and check"
else
  [ "$links" -eq 0 ] || bad "the cpu backend has no link rows, got $links"
fi
# one --op alone gives its rows alone (and the link's on a GPU, the ratio's denominator, only when asked)
rdx bench host --backend "$backend" --link-bytes 2^22 --n 2^18 --lookups 2^18 --reps 1 --op keys_lookup > "$tmp/one" 2> /dev/null || bad "--op keys_lookup exits $?"
[ "$(cut -d, -f4 "$tmp/one" | sort -u)" = keys_lookup ] || bad "--op keys_lookup printed $(cut -d, -f4 "$tmp/one" | sort -u | tr '\n' ' ')"
[ $fail -eq 0 ] && echo "bench host: $(($(wc -l < "$tmp/out") - 1)) rows on $backend, all same"
exit $fail
