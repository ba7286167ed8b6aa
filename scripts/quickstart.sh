#!/usr/bin/env bash
# The main job for a newcomer: installs what is missing, builds devtrace, and
# traces a bundled example (bug_labels_on_cpu: the labels never reach the GPU)
# on a simulated GPU, where it fails with the
# device-mismatch error devtrace exists to explain.
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
