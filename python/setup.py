"""Build raydex's Python extension (raydex._raydex) against the in-tree library.

The C library is built by CMake first; RAYDEX_BUILD_DIR names that build directory (default
../build, the one scripts/test.sh and scripts/demo.sh make), whose libraydex.so the extension
links with an rpath, so nothing needs installing:

    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build
    cd python && /usr/bin/python3 setup.py build_ext --inplace

RAYDEX_WERROR=1 adds -Werror (scripts/test.sh sets it).
"""
import os

import numpy
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
build_dir = os.path.abspath(os.environ.get("RAYDEX_BUILD_DIR", os.path.join(root, "build")))
if not os.path.exists(os.path.join(build_dir, "libraydex.so")):
    raise SystemExit(f"setup.py: no libraydex.so in {build_dir}; build the library with CMake "
                     "first or set RAYDEX_BUILD_DIR to its build directory")

flags = ["-std=c11", "-Wall", "-Wextra"]
if os.environ.get("RAYDEX_WERROR"):
    flags.append("-Werror")

setup(
    name="raydex",
    version="0.1.0",
    description="GPU/CPU key and spatial indexes over numpy arrays (raydex's C library)",
    packages=["raydex"],
    package_data={"raydex": ["py.typed", "*.pyi"]},
    ext_modules=[Extension(
        "raydex._raydex",
        sources=[os.path.join("src", "raydex_module.c")],
        include_dirs=[os.path.join(root, "include"), numpy.get_include()],
        library_dirs=[build_dir],
        runtime_library_dirs=[build_dir],
        libraries=["raydex"],
        extra_compile_args=flags,
    )],
)
