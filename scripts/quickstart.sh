#!/usr/bin/env bash
# The main job for a newcomer: installs what is missing, builds devtrace, and
# runs the bundled example on a simulated GPU, where it fails with the
# device-mismatch error devtrace exists to explain.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)"
echo
echo "== examples/mismatch_minimal on a simulated GPU (DEVTRACE_SIM_CUDA=1)"
set +e
DEVTRACE_SIM_CUDA=1 build/examples/mismatch_minimal
rc=$?
set -e
echo "== exit status $rc"
if [ "$rc" -ne 1 ]; then
  echo "quickstart: expected the example to fail with a device mismatch (exit 1)" >&2
  exit 1
fi
echo "That is the bug: the targets were built on the cpu. The fixed program:"
DEVTRACE_SIM_CUDA=1 build/examples/mismatch_minimal --fixed
