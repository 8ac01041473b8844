#!/usr/bin/env bash
# Install raydex's Python package (python/: the C extension raydex._raydex and the raydex package)
# into Debian's /usr/bin/python3 with `pip install ./python`, offline, over the C library of a
# CMake build directory (default build/; python/setup.py links it with an rpath, so that
# directory must stay), then check that `import raydex` works from another directory.
# scripts/demo.sh and scripts/test.sh both install it through here, so CI runs the README's install.
# It never builds the C library: build it first (scripts/build.sh). The pip output goes to
# <build-dir>/python-install.log and is shown only when the install fails.
# Usage: scripts/install-python.sh [build-dir]     (RAYDEX_WERROR=1 compiles with -Werror)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/libraydex.so" ] || {
  echo "install-python.sh: no libraydex.so in $build/: build the C library first (bash scripts/build.sh $build)" >&2
  exit 1
}
build_abs=$(cd "$build" && pwd)
say() { echo "install-python.sh: $*" >&2; }
# pip's flags, each for a reason:
#   --no-build-isolation --no-index  build with Debian's setuptools, wheel and numpy already here and
#       never reach for PyPI: python/ has no pyproject.toml, so pip 23 takes setup.py's own path
#       without an isolated build environment anyway; these keep it so, offline or not.
#   --no-deps  numpy is Debian's python3-numpy (scripts/deps.sh); pip must neither fetch nor replace it.
#   --break-system-packages  Debian 12 marks its Python externally managed (PEP 668), and pip then
#       refuses every install into /usr/bin/python3, `--user` ones included. The marker guards apt's
#       files in /usr/lib/python3/dist-packages; pip puts raydex in /usr/local/lib/python3.11/
#       dist-packages as root (in ~/.local as another user), which apt never writes, and with
#       --no-deps it replaces nothing of Debian's. A venv would leave /usr/bin/python3, the
#       interpreter the README and the tests use, without raydex.
#   --root-user-action=ignore  CI runs as root; pip's warning about that is noise here.
say "pip install ./python over $build/libraydex.so into /usr/bin/python3 (log: $build/python-install.log)"
if ! RAYDEX_BUILD_DIR="$build_abs" /usr/bin/python3 -m pip install --no-build-isolation --no-index \
    --no-deps --break-system-packages --root-user-action=ignore ./python \
    > "$build/python-install.log" 2>&1; then
  cat "$build/python-install.log" >&2
  say "pip install ./python failed (log: $build/python-install.log)"
  exit 1
fi
# from / and without PYTHONPATH, so the import is the installed package's, not python/raydex
where=$(cd / && env -u PYTHONPATH /usr/bin/python3 -c 'import raydex; print(raydex.__file__)') || {
  say "installed, but \`import raydex\` fails from /"
  exit 1
}
say "installed: import raydex works from any directory ($(dirname "$where"))"
