#!/usr/bin/env bash
# The wheel end to end, as a PyTorch user gets it: `python3 -m build --wheel
# --no-isolation` (offline, Debian's python3-build) from a copy of the source
# tree, `pip install` of the wheel into a fresh venv that sees Debian's torch,
# then, from a directory away from the source and with nothing else of
# devtrace on PATH: `devtrace run -- python EXAMPLE`, `python -m devtrace run
# EXAMPLE` and `with devtrace.trace()`, each trace reported with the facts
# that matter; the in-process API and the IPython/Jupyter magics
# (check_inprocess.py); bad input.
#   check_wheel.sh SOURCE_DIR [WHEEL_OUT]
# WHEEL_OUT: a directory the built wheel is also copied into (emptied first), for the pytest plugin's test
# (ctest: this test is the fixture that test requires), so that one ctest run builds the wheel once.
set -euo pipefail
src=$(cd "$1" && pwd)
py=/usr/bin/python3 # Debian's, the one its python3-torch serves
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for m in build venv setuptools wheel torch; do
  "$py" -c "import $m" 2>/dev/null || fail "$py cannot import $m (scripts/install-deps.sh installs python3-build, python3-venv, python3-torch)"
done

# a copy of the sources without build trees: the build writes nothing into the checkout
mkdir "$work/src"
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./dist --exclude='*.egg-info' --exclude='./.venv*' -cf - . | tar -C "$work/src" -xf -
(cd "$work/src" && CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$py" -m build --wheel --no-isolation --outdir "$work/dist" >"$work/build.log" 2>&1) \
  || { tail -30 "$work/build.log"; fail "python3 -m build --wheel"; }
whl=$(ls "$work"/dist/devtrace-*-py3-none-linux_*.whl) || fail "no platform wheel in dist/: $(ls "$work/dist")"
if [ -n "${2:-}" ]; then
  rm -rf "$2" && mkdir -p "$2" && cp "$whl" "$2/" || fail "cannot copy the wheel into $2"
fi
for f in devtrace/__init__.py devtrace/__main__.py devtrace/_ipython.py devtrace/_native/devtrace \
  devtrace/_native/libdevtrace.so devtrace/_native/python/sitecustomize.py \
  devtrace/_native/python/devtrace_torch/recorder.py devtrace/_native/python/devtrace_torch/_probes.abi3.so; do
  "$py" -c "import sys, zipfile; sys.exit('$f' not in zipfile.ZipFile('$whl').namelist())" || fail "$f not in the wheel"
done
for f in "$src"/adapters/pytorch/devtrace_torch/*.py; do # every file of the adapter
  n=devtrace/_native/python/devtrace_torch/$(basename "$f")
  "$py" -c "import sys, zipfile; sys.exit('$n' not in zipfile.ZipFile('$whl').namelist())" || fail "$n not in the wheel"
done
rm -rf "$work/src" # what follows must not need the sources

"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-index --no-build-isolation "$whl" >"$work/pip.log" 2>&1 \
  || { cat "$work/pip.log"; fail "pip install the wheel"; }
native=$("$work/venv/bin/python" -c "import devtrace; print(devtrace.native().command)")
case "$native" in "$work/venv/"*) ;; *) fail "devtrace.native() is $native, not the wheel's" ;; esac
# the shared libraries it needs are Debian's (declared in docs/python.md), none from a build tree
for so in "$native" "$(dirname "$native")/libdevtrace.so"; do
  ! ldd "$so" | grep -q "not found" || fail "$so: $(ldd "$so" | grep 'not found')"
  ! readelf -d "$so" | grep -qE "RPATH|RUNPATH" || fail "$so has an rpath: $(readelf -d "$so" | grep -E 'RPATH|RUNPATH')"
done

# A user's directory and PATH: the venv first, no build tree's devtrace
mkdir "$work/user" && cd "$work/user"
cp "$src/examples/pytorch/bug_batch_not_moved.py" train.py
export PATH="$work/venv/bin:/usr/bin:/bin" DEVTRACE_SIM_CUDA=2
unset DEVTRACE_LIB DEVTRACE_PYTHON_BOOTSTRAP PYTHONPATH
[ "$(command -v devtrace)" = "$work/venv/bin/devtrace" ] || fail "devtrace on PATH is $(command -v devtrace)"

# the facts of this bug: the batch x left on the cpu, made by the loader's loop (line 17), used at 19
check_report() { # check_report TRACE WHAT
  local rc=0
  devtrace report "$1" >"$1.txt" 2>&1 || rc=$?
  [ $rc -eq 1 ] || { cat "$1.txt"; fail "$2: devtrace report $1: exit $rc, not 1 (a mismatch found)"; }
  grep -q "device mismatch in linear at train.py:19" "$1.txt" || { cat "$1.txt"; fail "$2: not the mismatch at train.py:19"; }
  grep -qE '"x" .*<- the odd one out' "$1.txt" || { cat "$1.txt"; fail "$2: x not named the odd operand"; }
  grep -q "^fix: .*train.py:17" "$1.txt" || { cat "$1.txt"; fail "$2: no fix line at train.py:17"; }
}
set +e
devtrace run -o run.db -- python train.py >run.out 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat run.out; fail "devtrace run -- python train.py: exit $rc, not the program's 1"; }
check_report run.db "devtrace run -- python"

set +e
python -m devtrace run -o module.db train.py >module.out 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat module.out; fail "python -m devtrace run train.py: exit $rc, not 1"; }
check_report module.db "python -m devtrace run"

# in-process, no LD_PRELOAD: the short report printed when the block ends on the mismatch
cat >inproc.py <<'PY'
import os, runpy, devtrace
assert "libdevtrace" not in os.environ.get("LD_PRELOAD", "")
with devtrace.trace("inproc.db"):
    runpy.run_path("train.py", run_name="__main__")
PY
set +e
python inproc.py >inproc.out 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat inproc.out; fail "devtrace.trace(): exit $rc, not the uncaught RuntimeError's 1"; }
grep -q "the odd one out: 'input' \"x\" on cpu" inproc.out || { cat inproc.out; fail "devtrace.trace(): no short report printed"; }
grep -q "devtrace report .*inproc.db" inproc.out || { cat inproc.out; fail "devtrace.trace(): the short report does not name the full one"; }
grep -q "RuntimeError: Expected all tensors" inproc.out || { cat inproc.out; fail "devtrace.trace(): the exception was not the program's"; }
check_report inproc.db "devtrace.trace()"

# bad input: one clear line, a non-zero status
set +e
python -m devtrace run >bad.out 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || { cat bad.out; fail "python -m devtrace run with no program: exit $rc, not 2"; }
python -c "
import devtrace
try:
    devtrace.start('$work/no/such/dir/t.db')
except FileNotFoundError as e:
    assert 'no directory' in str(e), e
else:
    raise SystemExit('start() into a missing directory did not raise')
" || fail "devtrace.start() into a missing directory"

python "$src/tests/packaging/python/check_inprocess.py" "$work/user" || fail "check_inprocess.py"
echo "wheel: built, installed in a fresh venv, 3 ways of tracing train.py reported"
