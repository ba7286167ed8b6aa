#!/usr/bin/env bash
# The pytest plugin as a user gets it (ctest pytest-plugin): the wheel built from a copy of the source
# tree (`python3 -m build --wheel --no-isolation`, Debian's python3-build), installed into a fresh venv
# of the torch-2 interpreter that does not see the system's packages, with torch==2.13.0 and pytest
# from the package index; then, on a copy of examples/pytest_project (a bug and its fixed twin):
#   - plain `pytest` on this CPU-only machine: both pass (the bug hides without a GPU);
#   - `pytest --devtrace --devtrace-sim-cuda 2`: the bug's test fails with the "devtrace: device
#     mismatch" section naming the odd operand, the line that made it and the fix line, in the
#     project's file; the twin passes; the session's trace is written and reports the same mismatch;
#   - `pytest -p no:devtrace` and a session without --devtrace load nothing of devtrace's tracer.
#   check_pytest_plugin.sh SOURCE_DIR TORCH2_PYTHON [WHEEL_DIR]
# WHEEL_DIR: where check_wheel.sh left the wheel it built from the same sources in this ctest run (its
# fixture); without it, or when it holds no wheel, the wheel is built here.
# Exits 77 (ctest: skipped) with the reason when TORCH2_PYTHON is empty.
set -euo pipefail
src=$(cd "$1" && pwd)
py2=${2:-}
if [ -z "$py2" ]; then
  echo "SKIP: no torch 2.x interpreter (configure with -DDEVTRACE_TORCH2_PYTHON=/path/to/python)"
  exit 77
fi
py=/usr/bin/python3 # builds the wheel, as check_wheel.sh does
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-pytest.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for m in build setuptools wheel; do
  "$py" -c "import $m" 2>/dev/null || fail "$py cannot import $m (scripts/install-deps.sh installs python3-build)"
done

whl=$(ls "${3:-/nonexistent}"/devtrace-*-py3-none-linux_*.whl 2>/dev/null | head -n 1) || true
if [ -n "$whl" ]; then
  echo "the wheel check_wheel.sh built: $whl"
else
  mkdir "$work/src"
  tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./dist --exclude='*.egg-info' --exclude='./.venv*' \
    -cf - . | tar -C "$work/src" -xf -
  (cd "$work/src" && CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    "$py" -m build --wheel --no-isolation --outdir "$work/dist" >"$work/build.log" 2>&1) \
    || { tail -30 "$work/build.log"; fail "python3 -m build --wheel"; }
  whl=$(ls "$work"/dist/devtrace-*-py3-none-linux_*.whl) || fail "no platform wheel in dist/"
  rm -rf "$work/src"
fi
"$py" -c "
import sys, zipfile
z = zipfile.ZipFile('$whl')
assert 'devtrace/pytest_plugin.py' in z.namelist(), 'no devtrace/pytest_plugin.py in the wheel'
ep = [n for n in z.namelist() if n.endswith('.dist-info/entry_points.txt')]
text = z.read(ep[0]).decode() if ep else ''
assert '[pytest11]' in text and 'devtrace = devtrace.pytest_plugin' in text, 'no pytest11 entry point: ' + text
" || fail "the wheel's plugin and entry point"

# a venv of the torch-2 interpreter's base Python, without the system's packages
"$py2" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$whl" torch==2.13.0 pytest >"$work/pip.log" 2>&1 \
  || { tail -20 "$work/pip.log"; fail "pip install the wheel, torch==2.13.0 and pytest"; }
"$work/venv/bin/python" -c "import sys; assert not any('dist-packages' in p for p in sys.path), sys.path" \
  || fail "the venv sees the system's packages"

cp -r "$src/examples/pytest_project" "$work/project"
cd "$work/project"
export PATH="$work/venv/bin:/usr/bin:/bin"
unset DEVTRACE_LIB DEVTRACE_PYTHON_BOOTSTRAP PYTHONPATH DEVTRACE_SIM_CUDA

set +e
pytest -p no:cacheprovider tests >plain.out 2>&1
rc=$?
set -e
[ $rc -eq 0 ] && grep -q "2 passed" plain.out || { cat plain.out; fail "plain pytest on the cpu: exit $rc, not 2 passed"; }
! grep -q "devtrace: the session's trace" plain.out || fail "plain pytest started devtrace"
pytest --help >help.out 2>&1 || true
grep -q -- "--devtrace-sim-cuda" help.out || { cat help.out; fail "pytest --help does not list --devtrace-sim-cuda"; }

set +e
pytest -p no:cacheprovider --devtrace --devtrace-sim-cuda 2 tests >traced.out 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat traced.out; fail "pytest --devtrace --devtrace-sim-cuda 2: exit $rc, not 1 (one test failed)"; }
grep -q "1 failed, 1 passed" traced.out || { cat traced.out; fail "not 1 failed, 1 passed"; }
grep -q "FAILED tests/test_shapes.py::test_train_step" traced.out || { cat traced.out; fail "the bug's test did not fail"; }
section=$(sed -n '/devtrace: device mismatch -/,/^devtrace: the session/p' traced.out)
[ -n "$section" ] || { cat traced.out; fail "no 'devtrace: device mismatch' section in the failure report"; }
origin=$(grep -n "devtrace: origin" shapes.py | cut -d: -f1)
fixl=$(grep -n "devtrace: fix" shapes.py | cut -d: -f1)
echo "$section" | grep -q "^error: device mismatch in cross_entropy at shapes.py:17 (train_step)" \
  || { echo "$section"; fail "the section does not name the failing line shapes.py:17"; }
echo "$section" | grep -q "the odd one out: 'target' \"y\" on cpu, made at shapes.py:$origin (make_batch)" \
  || { echo "$section"; fail "the section does not name y, made at shapes.py:$origin"; }
echo "$section" | grep -q "^fix: .*shapes.py:$fixl (make_batch)" \
  || { echo "$section"; fail "the section's fix is not at shapes.py:$fixl"; }
[ "$(echo "$section" | grep -c '^error: ')" -eq 1 ] || { echo "$section"; fail "more than the test's own mismatch"; }
[ -s devtrace-pytest.db ] || fail "no devtrace-pytest.db"
set +e
devtrace report devtrace-pytest.db >report.out 2>&1
rc=$?
set -e
[ $rc -eq 1 ] && grep -q '"y" int64\[12\]   <- the odd one out' report.out || { cat report.out; fail "the session's trace: report exit $rc"; }

# -p no:devtrace: the plugin is not loaded, its options are unknown
set +e
pytest -p no:cacheprovider -p no:devtrace --devtrace tests >off.out 2>&1
rc=$?
set -e
[ $rc -eq 4 ] || { cat off.out; fail "-p no:devtrace --devtrace: exit $rc, not 4 (usage error)"; }
echo "pytest-plugin: wheel installed in a fresh venv with torch 2.13; the bug's test failed with devtrace's answer, its twin passed"
