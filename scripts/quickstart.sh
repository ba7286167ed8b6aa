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
echo "== devtrace run -- examples/mismatch_minimal, on a simulated GPU (DEVTRACE_SIM_CUDA=1)"
rm -f quickstart.db quickstart.db-wal quickstart.db-shm
set +e
DEVTRACE_SIM_CUDA=1 build/viewer/devtrace run -o quickstart.db build/examples/mismatch_minimal
rc=$?
set -e
echo "== exit status $rc (the program's own: the bug ends it with a RuntimeError)"
if [ "$rc" -ne 1 ]; then
  echo "quickstart: expected the example to fail with a device mismatch (exit 1)" >&2
  exit 1
fi
echo
echo "== what the trace recorded about the error (devtrace report comes next; the trace is plain SQLite)"
sqlite3 -header -column quickstart.db "
  SELECT a.pos, s.text AS arg, d.name AS device, 't' || a.tensor AS tensor, t.dtype, t.shape, t.origin, t.what AS made_by, t.name
  FROM errors e JOIN events v ON v.seq = e.seq JOIN op_args a ON a.op = v.op JOIN strings s ON s.id = a.name
  JOIN v_tensors t ON t.id = a.tensor LEFT JOIN device_names d ON d.device = a.device
  WHERE e.first_arg IS NOT NULL ORDER BY a.pos;"
echo
sqlite3 -header -column quickstart.db "SELECT src, dst, src_device, dst_device, bytes, via FROM v_transfers;"
