#!/usr/bin/env bash
# Build the one-folder desktop app with PyInstaller: dist/fabric-designer/ (on macOS also
# "dist/Fabric Designer.app").  Works from a clean clone; needs only Python 3.11+ and
# the package registry.  Then: python3 packaging/smoke.py
#
# It makes its own virtual environment (packaging/.venv-build, git-ignored), installs the
# app from this checkout as a regular (non-editable) package plus a pinned PyInstaller,
# and freezes packaging/fabric-designer.spec.  Overrides:
#   PYTHON=python3.12            the interpreter to build with (and to bundle)
#   FABRIC_BUILD_VENV=DIR        where the build environment lives
#   FABRIC_DIST_DIR=DIR          where the app goes (default dist)
#   FABRIC_WORK_DIR=DIR          PyInstaller's scratch folder (default build/pyinstaller)
set -euo pipefail
cd "$(dirname "$0")/.."

# Verified with PySide6-Essentials 6.11.3, numpy 2.4, pyqtgraph 0.14, Python 3.11.
PYINSTALLER_VERSION=6.22.3

python=${PYTHON:-python3}
venv=${FABRIC_BUILD_VENV:-packaging/.venv-build}
dist=${FABRIC_DIST_DIR:-dist}
work=${FABRIC_WORK_DIR:-build/pyinstaller}
start=$SECONDS

if [ ! -d "$venv" ]; then
  echo "+ $python -m venv $venv"
  "$python" -m venv "$venv"
fi
bin="$venv/bin"
[ -d "$bin" ] || bin="$venv/Scripts"  # a Windows venv under Git Bash

echo "+ pip install . pyinstaller==$PYINSTALLER_VERSION"
"$bin/python" -m pip install --quiet --disable-pip-version-check . \
  "pyinstaller==$PYINSTALLER_VERSION"
# A kept venv would otherwise keep an older build of the same version.
"$bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --force-reinstall .

# The pyinstaller entry point, not `python -m PyInstaller`: the latter puts the current
# folder on sys.path, and the checkout's designer/ would be frozen instead of the
# package pip just installed, the way users get it.
echo "+ pyinstaller packaging/fabric-designer.spec"
"$bin/pyinstaller" --noconfirm --log-level WARN --distpath "$dist" --workpath "$work" \
  packaging/fabric-designer.spec

app="$dist/fabric-designer"
[ -d "$app" ] || { echo "build.sh: PyInstaller made no $app" >&2; exit 1; }

# Python's own libraries keep their debug symbols when Python was built from source
# (pyenv: ~24 MB).  Strip just those: the spec cannot strip everything, because
# stripping numpy's bundled OpenBLAS breaks it.
if [ "$(uname -s)" = Linux ] && command -v strip >/dev/null; then
  find "$app/_internal" -maxdepth 1 -name 'libpython3*.so*' -type f \
    -exec strip --strip-unneeded {} +
  find "$app/_internal" -path '*/lib-dynload/*.so' -type f -exec strip --strip-unneeded {} +
fi
echo "built $app: $(du -sh "$app" | cut -f1) in $((SECONDS - start)) s"
