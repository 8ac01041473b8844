#!/usr/bin/env bash
# Install a build into a temporary prefix and build a consumer with find_package(raydex) and
# with pkg-config; run both consumers.
set -euo pipefail
build=${1:?build dir}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/raydex" && "$tmp/prefix/bin/raydex" --version
mkdir -p "$tmp/consumer"
cp "$root/tests/examples/consumer.c" "$tmp/consumer/"
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(raydex REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE raydex::raydex)
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libraydex.so' | head -1)")
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/build/consumer"
pcdir=$(dirname "$(find "$tmp/prefix" -name raydex.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs raydex)
cc -std=c11 "$tmp/consumer/consumer.c" -o "$tmp/consumer/pc" $flags
LD_LIBRARY_PATH="$(dirname "$pcdir")" "$tmp/consumer/pc"
echo "check-install.sh: find_package and pkg-config consumers built and ran"
