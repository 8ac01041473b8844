#!/usr/bin/env bash
# The main job on a fresh machine: install build dependencies, build raydex (with CUDA when nvcc
# is present, OptiX when its headers are in .optix/), then run `raydex demo` on the best backend
# found: every key index kind built over a generated key column, batched point and range lookups,
# every answer checked. Each stage says what it does on stderr; the demo ends with one table.
# The build goes to build/, which scripts/test.sh reuses.  Usage: scripts/demo.sh [demo options]
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo.sh: [1/3] build dependencies" >&2
bash scripts/deps.sh
echo "demo.sh: [2/3] building raydex in build/" >&2
bash scripts/build.sh build
echo "demo.sh: [3/3] raydex demo" >&2
./build/raydex info
echo
./build/raydex demo "$@"
