#!/usr/bin/env bash
# The GPU run, offline. The lent GPU machine has Python 3.12 with CuPy, PyTorch, JAX, SciPy and
# pluggy, but not array-api-compat, and no internet.
#
#   bash bench/gpu_wheels.sh        # here, online: the arraygrad wheel and the wheels it needs,
#                                   # for CPython 3.12, into .gpu-wheels/ (git ignores it)
#   bash bench/gpu_wheels.sh --run  # there, from the repository root (carry .gpu-wheels):
#                                   # install them into .gpu-site/, then run
#                                   # python -m bench.gpu --write-results --with-tests
#
# Then copy docs/gpu-results.md to the run's $OUT, to bring it back.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=.gpu-wheels

if [ "${1:-}" = "--run" ]; then
  # Into a folder, not a virtual environment, and every wheel without its dependencies: the
  # machine's own NumPy, CuPy and PyTorch stay the ones in use (no NumPy wheel is carried).
  rm -rf .gpu-site
  python -m pip install --quiet --no-index --no-deps --target .gpu-site "$WHEELS"/*.whl
  # The installed arraygrad, not the source tree's: arraygrad.conformance is the tree's
  # conformance/ only in an installed copy. PYTHONSAFEPATH keeps the current directory from
  # going first on sys.path, in this process and in the test runs it starts; the tree comes
  # after .gpu-site for bench/ and tests/.
  PYTHONSAFEPATH=1 PYTHONPATH=".gpu-site:$PWD" python -m bench.gpu --write-results --with-tests
  exit 0
fi

rm -rf "$WHEELS"
python -m pip wheel --quiet --no-deps --wheel-dir "$WHEELS" .
# arraygrad's dependencies and its test extra, as wheels for CPython 3.12 on Linux x86-64, less
# NumPy (the machine has its own, which its CuPy was built against).
python -m pip download --quiet --dest "$WHEELS" --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 "$(ls "$WHEELS"/arraygrad-*.whl)[test]"
rm -f "$WHEELS"/numpy-*.whl
du -sh "$WHEELS"
