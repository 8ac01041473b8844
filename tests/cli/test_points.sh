#!/usr/bin/env bash
# The `raydex points` command-line contract (outside checks rely on it): every index (quadtree
# built bottom-up and top-down, k-d tree) on the given backend answers match, window, within and
# kNN queries exactly as a brute-force reference, OUT holding row numbers of P grouped by query
# (ascending, kNN by distance then row) and CNT the count per query; bad input exits 2 with one
# line on stderr. The reference is a few lines of Python (standard library only) when python3 is
# present, and the CPU backend's k-d tree otherwise. Usage: test_points.sh RAYDEX BACKEND
set -u
rdx_bin=$1 backend=$2
# every run under a time limit, so a stuck run cannot hold a lent GPU until CTest's timeout
rdx() { if command -v timeout >/dev/null; then timeout 120 "$rdx_bin" "$@"; else "$rdx_bin" "$@"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

rdx gen points --n 10 --seed 1 --out "$tmp/probe.npy" || { echo "FAIL: gen points"; exit 1; }
rdx gen point-queries --points "$tmp/probe.npy" --type window --n 3 --out "$tmp/probe_w.npy"
if ! rdx points --index quadtree --backend "$backend" --points "$tmp/probe.npy" --window "$tmp/probe_w.npy" \
     --out "$tmp/o.npy" --counts-out "$tmp/c.npy" 2>"$tmp/err"; then
  if grep -q "cannot run here" "$tmp/err"; then echo "skipped: no GPU ($(cat "$tmp/err"))"; exit 77; fi
  bad "probe: $(cat "$tmp/err")"
fi

py=$(command -v python3 || true)
cat > "$tmp/ref.py" <<'EOF'
# Brute-force reference and .npy helpers (standard library only). Distances as the API defines
# them: doubles, (x - qx)^2 + (y - qy)^2, each operation rounded; f32 values widen exactly.
import ast, struct, sys

def read(path):
    b = open(path, 'rb').read()
    assert b[:6] == b'\x93NUMPY'
    hl = struct.unpack('<H', b[8:10])[0] if b[6] == 1 else struct.unpack('<I', b[8:12])[0]
    off = 10 if b[6] == 1 else 12
    h = ast.literal_eval(b[off:off + hl].decode('latin1'))
    shape, d = h['shape'], h['descr']
    n = 1
    for s in shape: n *= s
    fmt = {'<f8': 'd', '<f4': 'f', '<u8': 'Q'}[d]
    vals = struct.unpack('<%d%s' % (n, fmt), b[off + hl:off + hl + n * struct.calcsize(fmt)])
    return d, shape, list(vals)

def write(path, descr, shape, vals):
    fmt = {'<f8': 'd', '<f4': 'f', '<u8': 'Q'}[descr]
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, '(%s)' % ''.join('%d,' % s for s in shape) if len(shape) == 1 else str(tuple(shape)))
    h += ' ' * (64 - (10 + len(h) + 1) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode('latin1'))
        f.write(struct.pack('<%d%s' % (len(vals), fmt), *vals))

def brute(pfile, qtype, qfile, k, outfile, cntfile):
    _, ps, p = read(pfile)
    _, qs, q = read(qfile)
    n, m, cols = ps[0], qs[0], qs[1]
    out, cnt = [], []
    for i in range(m):
        a = q[i * cols:(i + 1) * cols]
        if qtype == 'knn':
            d = sorted(((p[2*j] - a[0]) * (p[2*j] - a[0]) + (p[2*j+1] - a[1]) * (p[2*j+1] - a[1]), j) for j in range(n))
            ids = [j for _, j in d[:k]]
        elif qtype == 'match':
            ids = [j for j in range(n) if p[2*j] == a[0] and p[2*j+1] == a[1]]
        elif qtype == 'window':
            ids = [j for j in range(n) if a[0] <= p[2*j] <= a[2] and a[1] <= p[2*j+1] <= a[3]]
        else:
            r2 = a[2] * a[2]
            ids = [j for j in range(n) if (p[2*j] - a[0]) * (p[2*j] - a[0]) + (p[2*j+1] - a[1]) * (p[2*j+1] - a[1]) <= r2]
        out += ids
        cnt.append(len(ids))
    write(outfile, '<u8', [len(out)], out)
    write(cntfile, '<u8', [m], cnt)

if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'brute':
        brute(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7])
    elif cmd == 'write':  # write PATH DESCR ROWS COLS v1 v2 ... (values as Python literals, e.g. nan, -0.0)
        rows, cols = int(sys.argv[4]), int(sys.argv[5])
        vals = [float(v) for v in sys.argv[6:]]
        write(sys.argv[2], sys.argv[3], [rows] if cols == 0 else [rows, cols], vals)
EOF
reference() { # reference TYPE P Q K OUT CNT
  if [ -n "$py" ]; then
    "$py" "$tmp/ref.py" brute "$2" "$1" "$3" "$4" "$5" "$6"
  else
    local qopt="--$1 $3"; [ "$1" = knn ] && qopt="$qopt --k $4"
    rdx points --index kdtree --backend cpu --points "$2" $qopt --out "$5" --counts-out "$6"
  fi
}
[ -n "$py" ] || echo "note: no python3; the reference is the CPU backend's k-d tree"

# ---- answers: three distributions, f32 and f64, every index and query type ----
for dist in uniform clustered taxi; do
  for dt in f64 f32; do
    rdx gen points --n 1500 --dist $dist --dtype $dt --seed 11 --out "$tmp/p.npy" || bad "gen points $dist"
    for qt in match window within knn; do
      rdx gen point-queries --points "$tmp/p.npy" --type $qt --n 60 --seed 12 --out "$tmp/q.npy" || bad "gen queries"
      k=0; kopt=""; [ $qt = knn ] && { k=7; kopt="--k 7"; }
      reference $qt "$tmp/p.npy" "$tmp/q.npy" $k "$tmp/ref.npy" "$tmp/refc.npy" || bad "reference $qt"
      for idx in "quadtree --build bottomup" "quadtree --build topdown" "kdtree"; do
        rdx points --index $idx --backend "$backend" --points "$tmp/p.npy" --$qt "$tmp/q.npy" $kopt \
          --out "$tmp/o.npy" --counts-out "$tmp/c.npy" --leaf-capacity 8 2>"$tmp/err" || bad "$dist $dt $idx $qt: $(cat "$tmp/err")"
        cmp -s "$tmp/o.npy" "$tmp/ref.npy" && cmp -s "$tmp/c.npy" "$tmp/refc.npy" || bad "$dist $dt $idx $qt differs from the reference"
      done
    done
  done
done

# ---- edge cases (need crafted files) ----
if [ -n "$py" ]; then
  w() { "$py" "$tmp/ref.py" write "$@"; }
  run() { # run NAME INDEX QTYPE P Q [K]: compare with the reference
    local name=$1 idx=$2 qt=$3 p=$4 q=$5 k=${6:-0} kopt=""
    [ $qt = knn ] && kopt="--k $k"
    reference $qt "$p" "$q" $k "$tmp/ref.npy" "$tmp/refc.npy"
    rdx points --index $idx --backend "$backend" --points "$p" --$qt "$q" $kopt --out "$tmp/o.npy" \
      --counts-out "$tmp/c.npy" --leaf-capacity 2 2>"$tmp/err" || bad "$name ($idx): $(cat "$tmp/err")"
    cmp -s "$tmp/o.npy" "$tmp/ref.npy" && cmp -s "$tmp/c.npy" "$tmp/refc.npy" || bad "$name ($idx) differs from the reference"
  }
  # a lattice: points on cell boundaries and the box edge; windows and circles touching them
  vals=""; for i in 0 1 2 3 4 5 6 7; do for j in 0 1 2 3 4 5 6 7; do vals="$vals $i $j"; done; done
  w "$tmp/grid.npy" '<f8' 64 2 $vals
  w "$tmp/gw.npy" '<f8' 6 4  0 0 7 7  1 1 1 1  2 3 4 5  7 7 9 9  3 0 2 7  -1 -1 -0.0 -0.0
  w "$tmp/gc.npy" '<f8' 5 3  0 0 5  3 4 0  3.5 3.5 0.5  7 7 1  -3 -4 5
  w "$tmp/gq.npy" '<f8' 4 2  0 0  7 7  3.5 3.5  -0.0 0.0
  for idx in quadtree kdtree; do
    run "lattice windows" $idx window "$tmp/grid.npy" "$tmp/gw.npy"
    run "lattice circles" $idx within "$tmp/grid.npy" "$tmp/gc.npy"
    run "lattice match" $idx match "$tmp/grid.npy" "$tmp/gq.npy"
    run "lattice knn ties" $idx knn "$tmp/grid.npy" "$tmp/gq.npy" 5
    run "k > n" $idx knn "$tmp/grid.npy" "$tmp/gq.npy" 100
  done
  w "$tmp/one.npy" '<f4' 1 2  2.5 -1.5
  w "$tmp/same.npy" '<f4' 40 2 $(for i in $(seq 40); do echo 1.25 2.5; done)
  w "$tmp/q1.npy" '<f4' 3 2  2.5 -1.5  1.25 2.5  0 0
  w "$tmp/w1.npy" '<f4' 2 4  0 -2 3 0  1.25 2.5 1.25 2.5
  w "$tmp/empty.npy" '<f8' 0 2
  w "$tmp/emptyw.npy" '<f8' 0 4
  w "$tmp/w8.npy" '<f8' 1 4  0 0 1 1
  for idx in quadtree kdtree; do
    run "a single point" $idx knn "$tmp/one.npy" "$tmp/q1.npy" 3
    run "a single point window" $idx window "$tmp/one.npy" "$tmp/w1.npy"
    run "identical points" $idx match "$tmp/same.npy" "$tmp/q1.npy"
    run "identical points knn" $idx knn "$tmp/same.npy" "$tmp/q1.npy" 16
    run "identical points window" $idx window "$tmp/same.npy" "$tmp/w1.npy"
    run "empty index" $idx window "$tmp/empty.npy" "$tmp/w8.npy"
    run "empty batch" $idx window "$tmp/grid.npy" "$tmp/emptyw.npy"
  done

  # ---- bad input: exit 2 and one line on stderr ----
  expect2() {
    local what=$1; shift
    rdx "$@" >/dev/null 2>"$tmp/err"
    local rc=$?
    [ $rc -eq 2 ] || bad "$what: exit $rc, wanted 2 ($(cat "$tmp/err"))"
    [ "$(wc -l < "$tmp/err")" -eq 1 ] || bad "$what: stderr has $(wc -l < "$tmp/err") lines: $(cat "$tmp/err")"
  }
  w "$tmp/nanp.npy" '<f8' 3 2  0 0  nan 1  2 2
  w "$tmp/infq.npy" '<f8' 2 4  0 0 1 1  0 0 inf 1
  w "$tmp/negr.npy" '<f8' 2 3  0 0 1  1 1 -0.5
  w "$tmp/p1d.npy" '<f8' 4 0  0 1 2 3
  w "$tmp/p3.npy" '<f8' 2 3  0 1 2 3 4 5
  w "$tmp/q32.npy" '<f4' 1 4  0 0 1 1
  printf 'garbage' > "$tmp/garbage.npy"
  P="$tmp/grid.npy" W="$tmp/gw.npy"
  base=(points --backend "$backend" --out "$tmp/o.npy" --counts-out "$tmp/c.npy")
  expect2 "NaN point" "${base[@]}" --index quadtree --points "$tmp/nanp.npy" --window "$W"
  expect2 "NaN point (k-d)" "${base[@]}" --index kdtree --points "$tmp/nanp.npy" --window "$W"
  expect2 "infinite query" "${base[@]}" --index quadtree --points "$P" --window "$tmp/infq.npy"
  expect2 "negative radius" "${base[@]}" --index kdtree --points "$P" --within "$tmp/negr.npy"
  expect2 "k = 0" "${base[@]}" --index quadtree --points "$P" --knn "$tmp/gq.npy" --k 0
  expect2 "k = 1025" "${base[@]}" --index quadtree --points "$P" --knn "$tmp/gq.npy" --k 1025
  expect2 "knn without k" "${base[@]}" --index quadtree --points "$P" --knn "$tmp/gq.npy"
  expect2 "k without knn" "${base[@]}" --index quadtree --points "$P" --window "$W" --k 3
  expect2 "two query files" "${base[@]}" --index quadtree --points "$P" --window "$W" --match "$tmp/gq.npy"
  expect2 "no query file" "${base[@]}" --index quadtree --points "$P"
  expect2 "points 1-D" "${base[@]}" --index quadtree --points "$tmp/p1d.npy" --window "$W"
  expect2 "points 3 columns" "${base[@]}" --index quadtree --points "$tmp/p3.npy" --window "$W"
  expect2 "window 3 columns" "${base[@]}" --index quadtree --points "$P" --window "$tmp/gc.npy"
  expect2 "circle 4 columns" "${base[@]}" --index quadtree --points "$P" --within "$W"
  expect2 "dtype mismatch" "${base[@]}" --index quadtree --points "$P" --window "$tmp/q32.npy"
  expect2 "outside the box" "${base[@]}" --index quadtree --points "$P" --window "$W" --box 0,0,6,7
  expect2 "bad box" "${base[@]}" --index quadtree --points "$P" --window "$W" --box 0,0,6
  expect2 "unknown index" "${base[@]}" --index rtree --points "$P" --window "$W"
  expect2 "k-d top-down" "${base[@]}" --index kdtree --build topdown --points "$P" --window "$W"
  expect2 "leaf capacity 0" "${base[@]}" --index quadtree --points "$P" --window "$W" --leaf-capacity 0
  expect2 "depth 32" "${base[@]}" --index quadtree --points "$P" --window "$W" --max-depth 32
  expect2 "missing file" "${base[@]}" --index quadtree --points "$tmp/none.npy" --window "$W"
  expect2 "garbage file" "${base[@]}" --index quadtree --points "$tmp/garbage.npy" --window "$W"
  expect2 "missing --out" points --backend "$backend" --counts-out "$tmp/c.npy" --index quadtree --points "$P" --window "$W"
  # the box's edge is inside
  rdx "${base[@]}" --index quadtree --points "$P" --window "$W" --box 0,0,7,7 || bad "a point on the box edge was refused"
else
  echo "note: no python3; crafted edge cases and bad-input files skipped"
fi

[ $fail -eq 0 ] && echo "points CLI contract: all checks passed"
exit $fail
