#!/usr/bin/env bash
# Install what building and testing raydex needs from Debian's packages, when it is missing
# (clang and its libFuzzer runtime for the fuzz targets; Open MPI for the distributed indexes;
# python3-dev, numpy, setuptools, wheel and pip to build and install the Python package offline;
# pytest, shapely, geopandas and rtree for its tests).
# Run as root (CI and the README do). CUDA (nvcc) is used when present and never required.
set -euo pipefail
apt_install() {
  echo "deps.sh: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@"
}
need=()
for tool in cmake:cmake gcc:gcc g++:g++ make:make nm:binutils pkg-config:pkg-config clang:clang; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
# GDAL (rdx_polygons_load reads its vector formats; the library builds without it) and GEOS (the
# exact reference the join tests compare with; linked by tests only), as Debian packages them
libs=()
for pc in gdal:libgdal-dev geos:libgeos-dev; do
  pkg-config --exists "${pc%%:*}" 2>/dev/null || libs+=("${pc#*:}")
done
if [ ${#libs[@]} -gt 0 ]; then apt_install "${libs[@]}"; fi
# Open MPI (distributed indexes over MPI ranks, src/dist/; the library builds without it) and its
# mpirun for the dist_keys tests
if ! pkg-config --exists ompi-c 2>/dev/null || ! command -v mpirun >/dev/null 2>&1; then
  apt_install libopenmpi-dev openmpi-bin
fi
# libFuzzer's runtime, for the fuzz targets (RAYDEX_FUZZ=ON in scripts/test.sh), matching clang's version
if [ ! -f "$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a")" ]; then
  apt_install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
fi
# the Python package (python/, installed by scripts/install-python.sh with `pip install ./python`
# and tested by scripts/test.sh): Debian's own interpreter /usr/bin/python3 (not a pyenv or venv
# python on PATH) with its headers, numpy, setuptools, wheel and pip (pip builds it with these,
# offline, no build isolation), pytest, and shapely, geopandas and rtree (the references the polygon
# tests and raydex.sjoin's tests compare with; geopandas 0.12's sjoin needs rtree's spatial index,
# only a Recommends of python3-geopandas)
py=()
/usr/bin/python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  2>/dev/null || py+=(python3-dev)
for mod in numpy:python3-numpy setuptools:python3-setuptools wheel:python3-wheel pip:python3-pip pytest:python3-pytest \
           shapely:python3-shapely geopandas:python3-geopandas rtree:python3-rtree; do
  /usr/bin/python3 -c "import ${mod%%:*}" 2>/dev/null || py+=("${mod#*:}")
done
if [ ${#py[@]} -gt 0 ]; then apt_install "${py[@]}"; fi
echo "deps.sh: build dependencies present ($(cmake --version | head -1); gdal $(pkg-config --modversion gdal); geos $(pkg-config --modversion geos); python $(/usr/bin/python3 -c 'import platform, numpy; print(platform.python_version(), "numpy", numpy.__version__)'); nvcc: $(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || echo none))"
