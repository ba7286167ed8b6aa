#!/usr/bin/env bash
# Runs devtrace's whole test suite: installs what is missing (Debian's
# packages, and PyTorch 2 with what its tests need in .venv-torch2/:
# scripts/torch2-venv.sh), builds with warnings as errors and runs every
# test (ctest; the PyTorch tests twice: on Debian's torch 1.13 and, named
# NAME-torch2, on the venv's torch 2.13); then builds again with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs every test there;
# then fuzzes the viewer for DEVTRACE_FUZZ_SECONDS (60; 0 skips) with
# libFuzzer (scripts/fuzz.sh: the regression inputs first).
# DEVTRACE_SKIP_SANITIZE=1 skips the second build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
jobs=$(nproc)
echo "== PyTorch 2 for the tests (scripts/requirements-torch2.txt)"
torch2=$(scripts/torch2-venv.sh)

# Every option the suite needs is given, not taken from a build/ that
# scripts/quickstart.sh configured (without tests, libtorch or CUDA);
# ctest fails when it finds no test.
echo "== build (warnings are errors)"
cmake -S . -B build -DDEVTRACE_TESTS=ON -DDEVTRACE_WERROR=ON -DDEVTRACE_SANITIZE=OFF -DDEVTRACE_LIBTORCH=ON \
  -DDEVTRACE_CUDA=AUTO "-DDEVTRACE_TORCH_PYTHONS=/usr/bin/python3;$torch2" >/dev/null
cmake --build build -j "$jobs"
echo "== tests"
(cd build && ctest --output-on-failure --no-tests=error -j "$jobs")

# A user's build has no tests: it must configure and build without them
# (CUDA off keeps it fast; nothing here depends on tests/).
echo "== build without the tests (-DDEVTRACE_TESTS=OFF)"
cmake -S . -B build-notests -DDEVTRACE_TESTS=OFF -DDEVTRACE_WERROR=ON -DDEVTRACE_CUDA=OFF -DDEVTRACE_LIBTORCH=OFF >/dev/null
cmake --build build-notests -j "$jobs"

if [ "${DEVTRACE_SKIP_SANITIZE:-0}" != 1 ]; then
  # The real CUDA backend cannot run without a GPU; the sanitized build
  # covers the cpu and simulated backends (CUDA off keeps it fast).
  echo "== build with ASan + UBSan"
  cmake -S . -B build-asan -DDEVTRACE_TESTS=ON -DDEVTRACE_SANITIZE=ON -DDEVTRACE_WERROR=ON -DDEVTRACE_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-asan -j "$jobs"
  echo "== tests under ASan + UBSan"
  (cd build-asan && ctest --output-on-failure --no-tests=error -j "$jobs")
fi

fuzz_secs=${DEVTRACE_FUZZ_SECONDS:-60}
if [ "$fuzz_secs" != 0 ]; then
  echo "== fuzzing the viewer ($fuzz_secs s)"
  scripts/fuzz.sh "$fuzz_secs" build
fi
