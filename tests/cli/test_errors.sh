#!/usr/bin/env bash
# One rule for bad input, every command: a table of bad inputs (file kinds, dtypes and shapes,
# values out of range, options that do not apply, repeated options, output collisions, sizes
# that overflow, malformed integers), each of which must exit 2 with exactly one line on stderr
# naming the culprit option, and leave no file behind (no output, no temporary). Then: success
# prints one line on stderr and --quiet none, and a command that fails after writing its first
# output leaves neither output behind and an existing file at an output path untouched.
# Usage: test_errors.sh RAYDEX BACKEND
set -u
rdx=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") backend=$2
tmp=$(mktemp -d)
trap 'chmod -R u+rwx "$tmp"; rm -rf "$tmp"' EXIT
fail=0 rows=0
bad() { echo "FAIL: $*"; fail=1; }
work=$tmp/work
mkdir "$work" && cd "$work" || exit 1

# fixtures, all in the working directory (whose listing each row compares)
"$rdx" gen keys --n 100 --seed 1 --out k.npy --quiet
"$rdx" gen keys --n 100 --seed 2 --dtype u64 --out k64.npy --quiet
"$rdx" gen lookups --keys k.npy --n 50 --out q.npy --quiet
"$rdx" gen ranges --keys k.npy --n 20 --width 10 --out r.npy --quiet
"$rdx" gen points --n 100 --out p.npy --quiet
"$rdx" gen point-queries --points p.npy --type window --n 10 --out w.npy --quiet
mkdir dir
mkfifo fifo
: > empty.npy
printf 'not a numpy file' > text.npy
head -c 100 k.npy > trunc.npy
cp k.npy unreadable.npy && chmod 000 unreadable.npy
[ -s k.npy ] && [ -s w.npy ] || { echo "FAIL: fixtures"; exit 1; }

# a backend that cannot run here is skipped; optix runs the ray-tracing key kinds only, and
# points run on cuda there
kind=sorted pb=$backend
[ "$backend" = optix ] && kind=cgrx pb=cuda
if ! "$rdx" keys --kind $kind --backend "$backend" --keys k.npy --lookup q.npy --out "$tmp/o.npy" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
  bad "probe: $(cat "$tmp/err")"
fi

# row OPTION ARGS...: `raydex ARGS` exits 2 with one stderr line naming --OPTION, and the
# working directory is as it was
row() {
  local opt=$1; shift
  rows=$((rows + 1))
  local before after rc
  before=$(ls -A)
  "$rdx" "$@" > /dev/null 2> "$tmp/err" < /dev/null
  rc=$?
  after=$(ls -A)
  local what="raydex $*"
  [ $rc -eq 2 ] || bad "$what: exit $rc, wanted 2 ($(head -c 300 "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "$what: stderr has $(wc -l < "$tmp/err") lines: $(head -c 300 "$tmp/err")"
  grep -qE -- "--$opt([ :,']|$)" "$tmp/err" || bad "$what: the message does not name --$opt: $(cat "$tmp/err")"
  [ "$before" = "$after" ] || bad "$what: left files behind: $(diff <(echo "$before") <(echo "$after") | grep '^>' | tr '\n' ' ')"
}

K=(keys --kind $kind --backend "$backend")
KQ=("${K[@]}" --keys k.npy --lookup q.npy)
P=(points --index quadtree --backend "$pb")
PW=("${P[@]}" --points p.npy --window w.npy)

# ---- file kinds ----
row keys "${K[@]}" --keys dir --lookup q.npy --out o.npy
row keys "${K[@]}" --keys fifo --lookup q.npy --out o.npy
row keys "${K[@]}" --keys missing.npy --lookup q.npy --out o.npy
if [ "$(id -u)" -ne 0 ]; then
  row keys "${K[@]}" --keys unreadable.npy --lookup q.npy --out o.npy
else
  echo "note: running as root, where every file is readable: the unreadable-file row is skipped"
fi
row keys "${K[@]}" --keys empty.npy --lookup q.npy --out o.npy
row keys "${K[@]}" --keys text.npy --lookup q.npy --out o.npy
row keys "${K[@]}" --keys trunc.npy --lookup q.npy --out o.npy
row lookup "${K[@]}" --keys k.npy --lookup dir --out o.npy
row points "${P[@]}" --points dir --window w.npy --out o.npy --counts-out c.npy
row keys gen lookups --keys fifo --n 5 --out o.npy
row points gen point-queries --points missing.npy --type window --n 5 --out o.npy
row keys keys --kind $kind --backend "$backend" --keys '' --lookup q.npy --out o.npy

# ---- dtypes and shapes ----
row keys "${K[@]}" --keys p.npy --lookup q.npy --out o.npy
row lookup "${K[@]}" --keys k.npy --lookup k64.npy --out o.npy
row range "${K[@]}" --keys k.npy --range q.npy --out o.npy
row rows "${KQ[@]}" --rows q.npy --out o.npy
row points "${P[@]}" --points k.npy --window w.npy --out o.npy --counts-out c.npy
row window "${P[@]}" --points p.npy --window p.npy --out o.npy --counts-out c.npy
row keys gen lookups --keys p.npy --n 5 --out o.npy
row points gen point-queries --points k.npy --type knn --n 5 --out o.npy

# ---- values out of range, unknown names ----
row n gen keys --n -5 --out o.npy
row bucket-size keys --kind cgrx --backend "$backend" --keys k.npy --lookup q.npy --out o.npy --bucket-size 0
row width gen ranges --keys k.npy --n 5 --width 0 --out o.npy
row width demo --backend "$backend" --width 0
row k "${P[@]}" --points p.npy --knn q.npy --k 0 --out o.npy --counts-out c.npy
row k "${P[@]}" --points p.npy --knn q.npy --k 1025 --out o.npy --counts-out c.npy
row leaf-capacity "${PW[@]}" --leaf-capacity 0 --out o.npy --counts-out c.npy
row max-depth "${PW[@]}" --max-depth 32 --out o.npy --counts-out c.npy
row hit-ratio gen lookups --keys k.npy --n 5 --hit-ratio 1.5 --out o.npy
row uniformity gen keys --n 5 --dist sparse --uniformity 101 --out o.npy
row reps bench keys --kind sorted --backend "$backend" --reps 0
row dtype gen keys --n 5 --dtype u16 --out o.npy
row kind keys --kind nope --backend "$backend" --keys k.npy --lookup q.npy --out o.npy
row backend keys --kind sorted --backend gpu --keys k.npy --lookup q.npy --out o.npy
row box "${PW[@]}" --box 1,1,0,0 --out o.npy --counts-out c.npy
row size gen point-queries --points p.npy --type window --n 5 --size -1 --out o.npy

# ---- options that do not apply, operations a kind does not run ----
row uniformity gen keys --n 5 --uniformity 30 --out o.npy
row zipf gen lookups --keys k.npy --n 5 --hit-ratio 0 --zipf 1 --out o.npy
row miss gen lookups --keys k.npy --n 5 --miss outside --out o.npy
row bucket-size keys --kind sorted --backend "$pb" --keys k.npy --lookup q.npy --out o.npy --bucket-size 32
row k "${PW[@]}" --k 3 --out o.npy --counts-out c.npy
row size gen point-queries --points p.npy --type knn --n 5 --size 0.1 --out o.npy
row range keys --kind hash --backend "$pb" --keys k.npy --range r.npy --out o.npy
row op bench keys --kind sorted,hash --backend "$pb" --op point,range
row bucket-size bench keys --kind sorted --backend "$pb" --bucket-size 8
row k bench points --exp build --backend "$pb" --k 4
row dtype gen ranges --keys k.npy --n 5 --dtype u64 --out o.npy
row build points --index kdtree --backend "$pb" --build topdown --points p.npy --window w.npy --out o.npy --counts-out c.npy

# ---- repeated options ----
row n gen keys --n 5 --n 6 --out o.npy
row out "${KQ[@]}" --out a.npy --out b.npy
row quiet gen keys --n 5 --out o.npy --quiet --quiet

# ---- outputs: collisions, directories, devices ----
row out "${KQ[@]}" --out ./k.npy
row counts-out "${KQ[@]}" --out o.npy --counts-out ./o.npy
row out gen lookups --keys k.npy --n 5 --out k.npy
row counts-out "${PW[@]}" --out c.npy --counts-out "$work/c.npy"
row out "${KQ[@]}" --out dir
row out gen keys --n 5 --out missing/o.npy
row out gen keys --n 5 --out /dev/null
row out gen keys --n 5 --out dir/

# ---- sizes that overflow or exceed the machine ----
row n gen keys --n 2^61 --dtype u64 --out o.npy
row n gen keys --n 2^62 --out o.npy
row n gen keys --n 2^62 --dtype u64 --out o.npy
row n gen points --n 2^62 --out o.npy
row n gen lookups --keys k.npy --n 2^62 --out o.npy
row n demo --backend "$backend" --n 2^40 --dtype u64
row n bench points --exp build --backend "$pb" --n 2^50

# ---- integers parsed strictly ----
row k "${P[@]}" --points p.npy --knn q.npy --k '2^' --out o.npy --counts-out c.npy
row n gen keys --n '2^ 3' --out o.npy
row n gen keys --n ' 5' --out o.npy
row n gen keys --n 5x --out o.npy
row n gen keys --n 1e6.5 --out o.npy
row n gen keys --n 2^63 --dtype u64 --out o.npy
row n gen keys --n 99999999999999999999 --dtype u64 --out o.npy
row n gen keys --n '' --out o.npy
row seed gen keys --n 5 --seed -1 --out o.npy
row hit-ratio gen lookups --keys k.npy --n 5 --hit-ratio nan --out o.npy
row zipf gen lookups --keys k.npy --n 5 --zipf inf --out o.npy
row n gen keys --out o.npy --n
row bogus gen keys --n 5 --bogus 1 --out o.npy
# bytes a terminal would act on come back escaped, still on one line
row kind keys --kind $'sor\nted\e[2J' --keys k.npy --lookup q.npy --out o.npy
grep -q 'sor\\x0ated\\x1b\[2J' "$tmp/err" || bad "control bytes are not escaped: $(cat -v "$tmp/err")"

# the accepted forms of the same integers
"$rdx" gen keys --n 2^3 --out a.npy --quiet && "$rdx" gen keys --n 8 --out b.npy --quiet && cmp -s a.npy b.npy &&
  "$rdx" gen keys --n 0.8e1 --out b.npy --quiet && cmp -s a.npy b.npy || bad "2^3, 8 and 0.8e1 must give the same keys"
rm -f a.npy b.npy

# ---- success: one line on stderr; --quiet: none ----
ok() { # ok ARGS...: exit 0 and exactly one line on stderr, then the same with --quiet and none
  "$rdx" "$@" > /dev/null 2> "$tmp/err" || bad "raydex $*: exit $? ($(cat "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "raydex $*: success printed $(wc -l < "$tmp/err") lines on stderr"
  "$rdx" "$@" --quiet > /dev/null 2> "$tmp/err" || bad "raydex $* --quiet: exit $?"
  [ -s "$tmp/err" ] && bad "raydex $* --quiet printed on stderr: $(cat "$tmp/err")"
}
ok gen keys --n 50 --out s.npy
ok gen lookups --keys k.npy --n 50 --out s.npy
ok gen ranges --keys k.npy --n 5 --width 3 --out s.npy
ok gen points --n 50 --out s.npy
ok gen point-queries --points p.npy --type within --n 5 --out s.npy
ok "${KQ[@]}" --out s.npy
ok "${PW[@]}" --out s.npy --counts-out s2.npy
ok bench keys --kind sorted --backend "$pb" --n 2^10 --lookups 2^8 --reps 1
ok demo --backend "$backend" --n 2^10 --lookups 2^8 --ranges 2^4 --width 2^20
"$rdx" "${KQ[@]}" --out s.npy 2> "$tmp/err"
grep -qE "^raydex keys: $kind on [a-z]+ \(auto\)|^raydex keys: $kind on $backend," "$tmp/err" ||
  bad "the success line must name the kind and the backend: $(cat "$tmp/err")"
rm -f s.npy s2.npy

# ---- all or nothing: a failed second output removes the first; existing files stay ----
printf 'precious' > o.npy
cp o.npy keep.npy
before=$(ls -A)
# the counts' temporary (.c.npy.tmp.PID) is made a directory first, so that write fails after
# the rows were written: exec keeps the shell's PID for raydex
bash -c 'mkdir ".c.npy.tmp.$$" && exec "$0" "$@"' "$rdx" "${K[@]}" --keys k.npy --range r.npy --out o.npy \
  --counts-out c.npy 2> "$tmp/err"
rc=$?
[ $rc -ne 0 ] || bad "a failed --counts-out write must fail the command"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "--counts-out" "$tmp/err" || bad "the failed write: $(cat "$tmp/err")"
cmp -s o.npy keep.npy || bad "an existing --out file changed although the command failed"
rmdir .c.npy.tmp.* 2>/dev/null
[ "$before" = "$(ls -A)" ] || bad "a failed command left files: $(ls -A | tr '\n' ' ')"
# and a refusal after reading the inputs (the lookups' dtype) leaves it too
"$rdx" "${K[@]}" --keys k.npy --lookup k64.npy --out o.npy 2>/dev/null
cmp -s o.npy keep.npy || bad "an existing --out file changed on a refusal"
rm -f o.npy keep.npy

echo "errors: $rows bad inputs"
[ $rows -ge 40 ] || bad "the table has $rows rows, fewer than 40"
[ $fail -eq 0 ] && echo "errors: all checks passed"
exit $fail
