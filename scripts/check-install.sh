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
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer/build/consumer"
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" cc -std=c11 "$tmp/consumer/consumer.c" -o "$tmp/consumer/pc" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs raydex)
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer/pc"
echo "check-install.sh: find_package and pkg-config consumers built and ran"
