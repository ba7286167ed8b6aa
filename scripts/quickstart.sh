#!/usr/bin/env bash
# The main job for a newcomer: installs what building devtrace needs (not
# the test suite's packages: scripts/test.sh installs those) and, when no
# python3 here imports torch, PyTorch 2.13 (CPU) into a venv of its own
# (.venv-torch2/: scripts/torch2-venv.sh --minimal); builds the command, the
# tracer, the PyTorch adapter and one C example (no tests, no libtorch
# observer; the build's own output goes to a log); then traces a PyTorch
# training script whose labels never reach the GPU
# (examples/pytorch/bug_labels_not_moved.py) on a simulated GPU, where it
# fails with the device-mismatch error devtrace exists to explain: `devtrace
# run` prints the answer at the end of the run. Then the same bug in C
# (bug_labels_on_cpu, on devtrace's own tensor runtime). DEVTRACE_BUILD_DIR:
# the build directory (build).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
scripts/install-deps.sh

# The PyTorch example's interpreter: the python3 on PATH when it imports torch, else Debian's,
# else the venv's (made here when missing: torch 2.13 CPU and numpy, with pip).
py=""
pyfail=0
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c "import torch" 2>/dev/null; then
    py=$(command -v "$cand")
    break
  fi
done
if [ -z "$py" ]; then
  echo "== no python3 here imports torch: PyTorch 2.13 (CPU) into .venv-torch2/ (scripts/torch2-venv.sh --minimal)"
  if ! py=$(scripts/torch2-venv.sh --minimal); then
    echo "quickstart: could not install PyTorch into a venv (above); the C example only" >&2
    py=""
    pyfail=1
  fi
fi

build=${DEVTRACE_BUILD_DIR:-build}
log="$build/quickstart-build.log"
mkdir -p "$build"
echo "== building devtrace in $build/ (the compiler's output: $log)"
# The real CUDA backend of the C runtime only when asked for (-DDEVTRACE_CUDA=AUTO or ON
# in DEVTRACE_CMAKE_ARGS): compiling its kernels takes longer than all the rest, and
# neither the examples on a simulated GPU nor PyTorch need it.
# shellcheck disable=SC2086
if ! cmake -S . -B "$build" -DDEVTRACE_TESTS=OFF -DDEVTRACE_LIBTORCH=OFF -DDEVTRACE_CUDA=OFF \
    ${DEVTRACE_CMAKE_ARGS:-} >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "quickstart: cmake could not configure the build (the whole output: $log)" >&2
  exit 1
fi
targets=(devtrace-cli devtrace bug_labels_on_cpu)
if grep -q "PyTorch adapter: built" "$log"; then
  targets+=(devtrace_torch_probes devtrace_torch_py)
else
  grep "PyTorch adapter:" "$log" || true
fi
if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >>"$log" 2>&1; then
  grep -E "error|Error" "$log" | head -n 20 >&2
  echo "quickstart: the build failed (the whole output: $log)" >&2
  exit 1
fi
echo "   built ${targets[*]} in $(($(date +%s) - start)) s"
devtrace="$build/viewer/devtrace"

# The PyTorch example, the main job.
if [ -n "$py" ] && [ -f "$build/adapters/pytorch/sitecustomize.py" ]; then
  echo
  echo "== $devtrace run -o quickstart-pytorch.db -- $py examples/pytorch/bug_labels_not_moved.py   (DEVTRACE_SIM_CUDA=1)"
  rm -f quickstart-pytorch.db quickstart-pytorch.db-wal quickstart-pytorch.db-shm
  set +e
  DEVTRACE_SIM_CUDA=1 "$devtrace" run -o quickstart-pytorch.db -- "$py" examples/pytorch/bug_labels_not_moved.py
  rc=$?
  set -e
  echo "== exit status $rc (the script's own: PyTorch raised the device mismatch)"
  [ "$rc" -eq 1 ] || { echo "quickstart: expected the PyTorch example to fail (exit 1), got $rc" >&2; exit 1; }
  set +e
  "$devtrace" report quickstart-pytorch.db >/dev/null
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || { echo "quickstart: expected devtrace report to find the mismatch (exit 1), got $rc" >&2; exit 1; }
  echo "   the whole report: $devtrace report quickstart-pytorch.db"
elif [ -z "$py" ]; then
  echo
  echo "(PyTorch example skipped: no python3 here imports torch, and installing it failed: see above)"
else
  echo
  echo "(PyTorch example skipped: the PyTorch adapter was not built: install python3-dev and rerun this script)"
fi
echo
echo "== the same bug in C, on devtrace's own tensor runtime"
echo "== $devtrace run -o quickstart.db -- $build/examples/bug_labels_on_cpu   (on a simulated GPU: DEVTRACE_SIM_CUDA=1)"
rm -f quickstart.db quickstart.db-wal quickstart.db-shm
set +e
DEVTRACE_SIM_CUDA=1 "$devtrace" run -o quickstart.db -- "$build/examples/bug_labels_on_cpu"
rc=$?
set -e
echo "== exit status $rc (the program's own: the bug ends it with a RuntimeError, and devtrace run explains it)"
if [ "$rc" -ne 1 ]; then
  echo "quickstart: expected the example to fail with a device mismatch (exit 1)" >&2
  exit 1
fi
set +e
"$devtrace" report quickstart.db >/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "quickstart: expected devtrace report to find the mismatch (exit 1), got $rc" >&2; exit 1; }
echo "   the whole report, with the source lines: $devtrace report quickstart.db"
echo "   (the trace is plain SQLite too: sqlite3 quickstart.db 'SELECT * FROM v_errors')"

echo
echo "quickstart: done in $(($(date +%s) - start)) s"
[ "$pyfail" = 0 ] || { echo "quickstart: the PyTorch example did not run: PyTorch could not be installed" >&2; exit 1; }
