#!/usr/bin/env bash
# The main job on a fresh machine: install build dependencies, build raydex (with CUDA when nvcc
# is present, OptiX when its headers are in .optix/), install the Python package over that build
# (pip install ./python into Debian's /usr/bin/python3, scripts/install-python.sh), so that
# `import raydex` works from any directory afterwards, fetch the us-atlas maps when they are
# missing, then run `raydex demo` on the best backend found: every key index kind built over a
# generated key column, batched point and range lookups, every answer checked; then the polygon
# overlay of us-atlas counties x states (overlay with areas, intersects, contains, within), every
# pair checked against the brute-force oracle. Each stage says what it does on stderr; the demo
# ends with its tables. Without network the maps cannot be fetched: the demo then says so in one
# line instead of the overlay. The build goes to build/, which scripts/test.sh reuses.
# Usage: scripts/demo.sh [demo options]
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo.sh: [1/5] build dependencies" >&2
bash scripts/deps.sh
echo "demo.sh: [2/5] building raydex in build/" >&2
bash scripts/build.sh build
echo "demo.sh: [3/5] installing the Python package (pip install ./python, over build/)" >&2
bash scripts/install-python.sh build
if [ -f .cache/maps/us-counties.rdxp ] && [ -f .cache/maps/us-states.rdxp ]; then
  echo "demo.sh: [4/5] the us-atlas maps are in .cache/maps" >&2
else
  echo "demo.sh: [4/5] fetching the us-atlas maps into .cache/maps (scripts/fetch-maps.sh --only us)" >&2
  bash scripts/fetch-maps.sh --only us --raydex build/raydex >&2 ||
    echo "demo.sh: the us-atlas maps could not be made (no network?); the demo skips its overlay" >&2
fi
echo "demo.sh: [5/5] raydex demo" >&2
./build/raydex info
echo
./build/raydex demo "$@"
