#!/usr/bin/env bash
# Build raydex and run the whole test suite: a Release build (with CUDA when nvcc is present), the
# Python package installed over it (scripts/install-python.sh, as scripts/demo.sh installs it) with
# its pytest suite on the installed package, then an ASan+UBSan build of the CPU path, then
# the fuzz targets (clang, libFuzzer). GPU test entries print "skipped: no GPU" on machines without
# one. The Release build is build/, the directory scripts/demo.sh builds, so after the demo it
# compiles nothing.
# Usage: scripts/test.sh [build-dir-prefix]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
prefix=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
release=$prefix
echo "test.sh: [1/5] Release build and its tests ($release)" >&2
bash scripts/build.sh "$release"
(cd "$release" && ctest --output-on-failure -j "$jobs")
# make the GPU half's fate visible: each GPU entry says "skipped: no GPU" on machines without one
(cd "$release" && ctest -R '\.(cuda|optix)$' -V 2>&1 | grep -E "skipped: no GPU" | sed 's/^[0-9]*: //' | sort | uniq -c) || true
# the Python package installed as the README installs it (pip install ./python into Debian's
# /usr/bin/python3, over this Release library, compiled afresh with -Werror), then its pytest suite
# on the installed package: run from the repository root with -P (no current directory on
# sys.path) and no PYTHONPATH, so `import raydex` is the installed one, not python/raydex (the GPU
# entries say "no GPU" on machines without one)
echo "test.sh: [2/5] Python package: pip install ./python over $release, then its tests on the installed package" >&2
rm -rf "$release/python-build"
RAYDEX_WERROR=1 bash scripts/install-python.sh "$release"
env -u PYTHONPATH /usr/bin/python3 -P -m pytest -q -rs -p no:cacheprovider python/tests
# sanitizers on the CPU path (CUDA off: the CUDA runtime and ASan do not mix)
echo "test.sh: [3/5] ASan+UBSan build of the CPU path and its tests ($prefix-asan)" >&2
bash scripts/build.sh "$prefix-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAYDEX_CUDA=OFF -DRAYDEX_SANITIZE="address;undefined"
(cd "$prefix-asan" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
# the parsers fuzzed: libFuzzer programs (clang, CPU path) over their seed corpora plus a bounded
# number of fresh inputs each (tests/CMakeLists.txt); only the fuzz targets are built
fuzz=$prefix-fuzz
echo "test.sh: [4/5] fuzz targets over their corpora ($fuzz)" >&2
mkdir -p "$fuzz"
CC=clang cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAYDEX_CUDA=OFF -DRAYDEX_FUZZ=ON \
  > "$fuzz/configure.log" 2>&1 || { cat "$fuzz/configure.log" >&2; exit 1; }
cmake --build "$fuzz" -j "$jobs" --target raydex_fuzzers > "$fuzz/build.log" 2>&1 || { tail -40 "$fuzz/build.log" >&2; exit 1; }
(cd "$fuzz" && ctest -R '^fuzz_' --output-on-failure)
# the install works and a consumer finds the package both ways
echo "test.sh: [5/5] install check" >&2
bash scripts/check-install.sh "$release"
echo "test.sh: all passed"
