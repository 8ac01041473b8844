#!/usr/bin/env bash
# The main job on a fresh machine: install build dependencies, build raydex (with CUDA when nvcc
# is present), then run `raydex demo` on the best backend found: every key index kind built over
# a generated key column, batched point and range lookups, every answer checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
optix=()
[ -f .optix/include/optix.h ] && optix=(-DRAYDEX_OPTIX_DIR="$(pwd)/.optix")
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${optix[@]}" > /dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" > /dev/null
./build/raydex info
echo
./build/raydex demo "$@"
