"""Build raydex's Python extension (raydex._raydex) over raydex's C library, in-tree or installed.

Install it (from the repository root, offline, with Debian's python3-setuptools, python3-wheel,
python3-dev and python3-numpy; scripts/install-python.sh says why each flag is there):

    bash scripts/build.sh build          # the C library, if it is not built yet
    /usr/bin/python3 -m pip install --no-build-isolation --no-index --break-system-packages ./python

There is deliberately no pyproject.toml: without one, Debian 12's pip 23 builds this with the
setuptools, wheel and numpy already installed (the legacy setup.py path), where a pyproject.toml
would make it build in an isolated environment and download setuptools, wheel and numpy first.
--no-build-isolation keeps that true if one is ever added.

Which library it links, first found:
  1. RAYDEX_BUILD_DIR, a CMake build directory holding libraydex.so (the headers are ../include);
  2. ../build/libraydex.so, the build scripts/demo.sh and scripts/test.sh make;
  3. an installed raydex found by `pkg-config raydex` (for another prefix,
     PKG_CONFIG_PATH=<prefix>/lib/pkgconfig, as `cmake --install build --prefix <prefix>` lays it out).
The extension finds the library at run time through an rpath to that directory, so the build
directory (or the prefix) must stay where it is. setup.py never builds the C library itself: it
says how when there is none.

For development, `RAYDEX_BUILD_DIR=$PWD/../build /usr/bin/python3 setup.py build_ext --inplace`
puts the extension beside raydex/ for PYTHONPATH=python. RAYDEX_WERROR=1 adds -Werror
(scripts/test.sh sets it).
"""
import glob
import os
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
in_tree_header = os.path.join(root, "include", "raydex.h")

HOW_TO_BUILD = """setup.py: no raydex C library to build the extension against{why}.
Build it first, from the repository root:
    bash scripts/build.sh build                     # CUDA when nvcc is present (a first CUDA build
                                                    # takes many minutes on two cores)
    bash scripts/build.sh build -DRAYDEX_CUDA=OFF   # CPU only, a few minutes
then run pip again. Or set RAYDEX_BUILD_DIR to another CMake build directory holding libraydex.so,
or install the library (cmake --install <build-dir> --prefix <prefix>) and set
PKG_CONFIG_PATH=<prefix>/lib/pkgconfig so that `pkg-config raydex` finds it."""


def say(msg):
    print(f"setup.py: {msg}", file=sys.stderr)


def in_tree(build_dir):
    """The library of a CMake build directory of this repository, headers from ../include."""
    return {"include_dirs": [os.path.join(root, "include")], "library_dirs": [build_dir],
            "build_base": os.path.join(build_dir, "python-build"),
            "header": in_tree_header, "what": f"the CMake build {build_dir}"}


def pkg_config():
    """The installed library `pkg-config raydex` names, or None."""
    if shutil.which("pkg-config") is None:
        return None
    try:
        def var(name):
            return subprocess.run(["pkg-config", f"--variable={name}", "raydex"], check=True,
                                  capture_output=True, text=True).stdout.strip()
        libdir, includedir = var("libdir"), var("includedir")
    except subprocess.CalledProcessError:
        return None
    libdir, includedir = os.path.realpath(libdir), os.path.realpath(includedir)
    header = os.path.join(includedir, "raydex.h")
    if not (os.path.exists(header) and os.path.exists(os.path.join(libdir, "libraydex.so"))):
        return None
    return {"include_dirs": [includedir], "library_dirs": [libdir], "build_base": None,
            "header": header, "what": f"the installed raydex in {libdir} (pkg-config)"}


def find_library():
    env = os.environ.get("RAYDEX_BUILD_DIR")
    if env:
        build_dir = os.path.abspath(env)
        if not os.path.exists(os.path.join(build_dir, "libraydex.so")):
            raise SystemExit(HOW_TO_BUILD.format(why=f": RAYDEX_BUILD_DIR={env} holds no libraydex.so"))
        return in_tree(build_dir)
    default = os.path.join(root, "build")
    if os.path.exists(in_tree_header) and os.path.exists(os.path.join(default, "libraydex.so")):
        return in_tree(default)
    found = pkg_config()
    if found is None:
        raise SystemExit(HOW_TO_BUILD.format(
            why=f" (none in {default}, RAYDEX_BUILD_DIR unset, `pkg-config raydex` finds none)"))
    return found


lib = find_library()
say(f"linking {lib['what']}")
flags = ["-std=c11", "-Wall", "-Wextra"]
if os.environ.get("RAYDEX_WERROR"):
    flags.append("-Werror")
# objects and the linked extension of an in-tree build live in that build directory, so builds
# against two library directories (Release, ASan) never reuse each other's objects or rpath
options = {"build": {"build_base": lib["build_base"]}} if lib["build_base"] else {}

setup(
    name="raydex",
    version="0.1.0",
    description="GPU/CPU key and spatial indexes over numpy arrays (raydex's C library)",
    python_requires=">=3.8",
    packages=["raydex"],
    package_data={"raydex": ["py.typed", "*.pyi"]},
    ext_modules=[Extension(
        "raydex._raydex",
        sources=sorted(glob.glob(os.path.join("src", "*.c"))),  # raydex_module.c, arrays.c, keys.c, ...
        # a changed raydex.h or private header recompiles the extension on the next install
        depends=[lib["header"]] + sorted(glob.glob(os.path.join("src", "*.h"))),
        include_dirs=lib["include_dirs"] + [numpy.get_include()],
        library_dirs=lib["library_dirs"],
        runtime_library_dirs=lib["library_dirs"],
        libraries=["raydex"],
        extra_compile_args=flags,
    )],
    options=options,
    zip_safe=False,
)
