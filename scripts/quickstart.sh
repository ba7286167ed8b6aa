#!/usr/bin/env bash
# The main job for a newcomer: installs what is missing, builds devtrace, and
# traces a bundled example (bug_labels_on_cpu: the labels never reach the GPU)
# on a simulated GPU, where it fails with the
# device-mismatch error devtrace exists to explain; then the same bug in a
# PyTorch training script (examples/pytorch/bug_labels_not_moved.py), when
# Debian's python3-torch and the PyTorch adapter are there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)"
echo
echo "== devtrace run -- examples/bug_labels_on_cpu, on a simulated GPU (DEVTRACE_SIM_CUDA=1)"
rm -f quickstart.db quickstart.db-wal quickstart.db-shm
set +e
DEVTRACE_SIM_CUDA=1 build/viewer/devtrace run -o quickstart.db build/examples/bug_labels_on_cpu
rc=$?
set -e
echo "== exit status $rc (the program's own: the bug ends it with a RuntimeError)"
if [ "$rc" -ne 1 ]; then
  echo "quickstart: expected the example to fail with a device mismatch (exit 1)" >&2
  exit 1
fi
echo
echo "== devtrace report quickstart.db"
set +e
build/viewer/devtrace report quickstart.db
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "quickstart: expected devtrace report to find the mismatch (exit 1), got $rc" >&2; exit 1; }
echo
echo "(the trace is plain SQLite too: sqlite3 quickstart.db 'SELECT * FROM v_errors')"

PY=/usr/bin/python3
if [ -x "$PY" ] && "$PY" -c "import torch" 2>/dev/null && [ -f build/adapters/pytorch/sitecustomize.py ]; then
  echo
  echo "== devtrace run -- python3 examples/pytorch/bug_labels_not_moved.py, on a simulated GPU (DEVTRACE_SIM_CUDA=1)"
  rm -f quickstart-pytorch.db quickstart-pytorch.db-wal quickstart-pytorch.db-shm
  set +e
  DEVTRACE_SIM_CUDA=1 build/viewer/devtrace run -o quickstart-pytorch.db -- "$PY" examples/pytorch/bug_labels_not_moved.py
  rc=$?
  set -e
  echo "== exit status $rc (the script's own: PyTorch raised the device mismatch)"
  [ "$rc" -eq 1 ] || { echo "quickstart: expected the PyTorch example to fail (exit 1), got $rc" >&2; exit 1; }
  echo
  echo "== devtrace report quickstart-pytorch.db"
  set +e
  build/viewer/devtrace report quickstart-pytorch.db
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || { echo "quickstart: expected devtrace report to find the mismatch (exit 1), got $rc" >&2; exit 1; }
else
  echo
  echo "(PyTorch example skipped: Debian's python3-torch or the PyTorch adapter is missing; scripts/install-deps.sh installs them)"
fi
