#!/usr/bin/env bash
# The install end to end: `cmake --install` into a temporary prefix, the
# prefix moved elsewhere, then from there: devtrace run + report on a program
# built against the installed libdtrt with pkg-config, a CMake project using
# find_package(devtrace), the PyTorch bootstrap found by the installed
# devtrace, and every environment variable the code reads documented in
# `devtrace run --help` and the man page.
#   check_install.sh BUILD_DIR SOURCE_DIR HAVE_PYTORCH_ADAPTER HAVE_LIBTORCH_OBSERVER
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) have_py=$3 have_torch=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/devtrace-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/first" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/first" "$work/moved" # everything must find everything relative to itself
P=$work/moved

for f in bin/devtrace lib/libdtrt.so lib/devtrace/libdevtrace.so include/devtrace/probe.h include/devtrace/dt.h \
  include/devtrace/dt_nn.h lib/pkgconfig/libdtrt.pc lib/pkgconfig/devtrace-probe.pc \
  lib/cmake/devtrace/devtraceConfig.cmake lib/cmake/devtrace/devtraceTargets.cmake share/man/man1/devtrace.1 \
  share/bash-completion/completions/devtrace share/zsh/site-functions/_devtrace share/doc/devtrace/architecture.md; do
  [ -e "$P/$f" ] || fail "$f not installed"
done
if [ "$have_py" = 1 ]; then
  for f in sitecustomize.py devtrace_torch/__init__.py devtrace_torch/recorder.py devtrace_torch/sim.py devtrace_torch/source.py \
    devtrace_torch/_probes.abi3.so; do
    [ -e "$P/lib/devtrace/python/$f" ] || fail "lib/devtrace/python/$f not installed"
  done
fi
if [ "$have_torch" = 1 ]; then
  [ -e "$P/lib/devtrace/libdevtrace_libtorch.so" ] || fail "the libtorch observer not installed beside libdevtrace.so"
fi
bash -n "$P/share/bash-completion/completions/devtrace" || fail "bash completion does not parse"
got=$(bash -c 'source "$1"; COMP_WORDS=(devtrace tr); COMP_CWORD=1; _devtrace; echo "${COMPREPLY[*]}"
  COMP_WORDS=(devtrace export --format ""); COMP_CWORD=3; _devtrace; echo "${COMPREPLY[*]}"' _ \
  "$P/share/bash-completion/completions/devtrace")
[ "$got" = $'transfers\nchrome html' ] || fail "bash completion: got '$got'"
# the man page names every command devtrace --help lists
for c in $("$P/bin/devtrace" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
  grep -q "^\.B devtrace $c" "$P/share/man/man1/devtrace.1" || fail "devtrace $c is not in devtrace.1's synopsis"
done
if command -v groff >/dev/null; then
  warn=$(groff -man -ww -z "$P/share/man/man1/devtrace.1" 2>&1) || true
  [ -z "$warn" ] || fail "man page: $warn"
fi

# ---- a C program built with pkg-config against the moved prefix
export PKG_CONFIG_PATH=$P/lib/pkgconfig
pkg-config --exists libdtrt devtrace-probe || fail "pkg-config does not find libdtrt / devtrace-probe"
case $(pkg-config --cflags libdtrt) in *"$P"*|*moved*) ;; *) fail "libdtrt.pc's -I does not point into the prefix" ;; esac
cc -c "$src/tests/packaging/install/probe_user.c" $(pkg-config --cflags devtrace-probe) -o "$work/probe_user.o" || fail "probe.h alone"
cc -g "$src/tests/packaging/install/consumer.c" $(pkg-config --cflags --libs libdtrt) -o "$work/consumer" || fail "compile with libdtrt.pc"
DEVTRACE_SIM_CUDA=1 "$work/consumer" --fixed | grep -q "sum: 12" || fail "the consumer does not run (rpath?)"

cd "$work"
rc=0
env -u DEVTRACE_LIB -u DEVTRACE_PYTHON_BOOTSTRAP DEVTRACE_SIM_CUDA=1 "$P/bin/devtrace" run -o "$work/bug.db" -- \
  "$work/consumer" >"$work/run.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$work/run.out"; fail "devtrace run: exit $rc, not the program's 1"; }
grep -q "trace written to $work/bug.db" "$work/run.out" || { cat "$work/run.out"; fail "no trace"; }
rc=0
"$P/bin/devtrace" report "$work/bug.db" >"$work/report.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$work/report.out"; fail "report: exit $rc, not 1 (mismatch)"; }
grep -q "device mismatch in add at .*consumer.c:" "$work/report.out" || { cat "$work/report.out"; fail "report: no mismatch at the user's line"; }
grep -q '"bias"' "$work/report.out" || { cat "$work/report.out"; fail "report: the cpu bias is not named"; }

# ---- plain LD_PRELOAD of the installed tracer
DEVTRACE_SIM_CUDA=1 DEVTRACE_OUTPUT=$work/preload.db LD_PRELOAD=$P/lib/devtrace/libdevtrace.so "$work/consumer" --fixed \
  >/dev/null 2>&1 || fail "LD_PRELOAD run"
"$P/bin/devtrace" report "$work/preload.db" >/dev/null || fail "report of the LD_PRELOAD trace"

# ---- a CMake project with find_package(devtrace)
cmake -S "$src/tests/packaging/install/cmake_consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$P" >"$work/cm.log" 2>&1 ||
  { cat "$work/cm.log"; fail "find_package(devtrace)"; }
cmake --build "$work/cm" >>"$work/cm.log" 2>&1 || { cat "$work/cm.log"; fail "building against devtrace::dtrt"; }
DEVTRACE_SIM_CUDA=1 "$work/cm/consumer" --fixed | grep -q "sum: 12" || fail "the CMake consumer does not run"

# ---- the PyTorch bootstrap, found by the installed devtrace: the adapter
# records a tiny torch program's tensors on a simulated GPU
if [ "$have_py" = 1 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  env -u DEVTRACE_PYTHON_BOOTSTRAP DEVTRACE_QUIET=1 DEVTRACE_SIM_CUDA=1 "$P/bin/devtrace" run -o "$work/py.db" -- \
    /usr/bin/python3 -c 'import os, torch; print(os.environ["PYTHONPATH"].split(":")[0]); x = torch.ones(3).to("cuda:0"); print(x.device)' \
    >"$work/py.out" 2>&1 || { cat "$work/py.out"; fail "devtrace run python3"; }
  grep -qx "$P/lib/devtrace/python" "$work/py.out" || { cat "$work/py.out"; fail "bootstrap not the installed one"; }
  grep -qx "cuda:0" "$work/py.out" || { cat "$work/py.out"; fail "no simulated GPU in the installed adapter"; }
  "$P/bin/devtrace" tensors --device cuda:0 "$work/py.db" | grep -q "cuda:0" || fail "the installed adapter recorded no tensor"
fi

# ---- every environment variable read is documented (run --help, man page)
help=$("$P/bin/devtrace" run --help)
vars=$( (grep -ohE 'getenv\("[A-Z_]+"\)|env_long\("[A-Z_]+"' "$src"/tracer/*/*.c "$src"/viewer/*.c "$src"/runtime/*.c
  grep -ohE 'os\.environ\.get\("[A-Z_]+"' "$src"/adapters/pytorch/*.py "$src"/adapters/pytorch/devtrace_torch/*.py) |
  grep -oE '"[A-Z_]+"' | tr -d '"' | sort -u | grep -vx PATH)
for v in $vars; do
  grep -q "$v" <<<"$help" || fail "$v is read but not in devtrace run --help"
  grep -q "$v" "$P/share/man/man1/devtrace.1" || fail "$v is read but not in devtrace.1"
done
echo "install: ok ($(wc -w <<<"$vars") environment variables documented)"
